//! The archiver: runs `archive_command` for each completed WAL segment, oldest first,
//! as PostgreSQL's archiver process does.
//!
//! Rules (cited as "archiver rule N"; the status files' rules are in
//! `strata_wal::archive`):
//! 1. A segment is marked `.done` only after `archive_command` exits 0; any other
//!    outcome is logged (`archive command failed with exit code N` and the command)
//!    and the same segment is tried again a second later: segments are archived in
//!    order, none skipped.
//! 2. The command runs through `sh -c` in the data directory, with `%p` the segment's
//!    path relative to it (`pg_wal/<name>`), `%f` its file name and `%%` a `%`.
//! 3. The archiver never blocks the server: it is a thread of its own, and a slow or
//!    failing command only keeps segments in `pg_wal` longer.
//! 4. `archive_command` is read at each pass, so a reload changes it; while it is
//!    empty segments wait in `pg_wal` (PostgreSQL's behaviour).

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;
use strata_engine::LogSink;
use strata_vfs::Vfs;

/// `archive_command` with `%p`, `%f` and `%%` replaced (rule 2).
pub fn expand(command: &str, segment: &str) -> String {
    let mut out = String::new();
    let mut chars = command.chars();
    while let Some(c) = chars.next() {
        if c != '%' {
            out.push(c);
            continue;
        }
        match chars.next() {
            Some('p') => out.push_str(&format!("pg_wal/{segment}")),
            Some('f') => out.push_str(segment),
            Some('%') => out.push('%'),
            Some(other) => {
                out.push('%');
                out.push(other);
            }
            None => out.push('%'),
        }
    }
    out
}

/// Runs the command for one segment; `Err` is the log line of its failure.
fn archive_one(data: &Path, command: &str, segment: &str) -> Result<(), String> {
    let cmd = expand(command, segment);
    let status = std::process::Command::new("sh")
        .arg("-c")
        .arg(&cmd)
        .current_dir(data)
        .status()
        .map_err(|e| format!("LOG:  could not run archive command: {e}"))?;
    if status.success() {
        return Ok(());
    }
    let how = match status.code() {
        Some(code) => format!("archive command failed with exit code {code}"),
        None => "archive command was terminated by a signal".to_string(),
    };
    Err(format!(
        "LOG:  {how}\nDETAIL:  The failed archive command was: {cmd}"
    ))
}

/// One pass: archives every ready segment in order, stopping at the first failure.
fn pass(vfs: &dyn Vfs, data: &Path, command: &str, log: &LogSink) {
    let ready = match strata_wal::archive::ready(vfs, data) {
        Ok(r) => r,
        Err(e) => {
            log(&format!("LOG:  could not read archive status: {e}"));
            return;
        }
    };
    for segment in ready {
        if let Err(line) = archive_one(data, command, &segment) {
            log(&line);
            return; // rule 1: the same segment again next time
        }
        if let Err(e) = strata_wal::archive::mark_done(vfs, data, &segment) {
            log(&format!("LOG:  could not mark \"{segment}\" archived: {e}"));
            return;
        }
    }
}

/// `archive_command` as the settings in force give it (a reload may change it).
pub type Command = Arc<dyn Fn() -> String + Send + Sync>;

/// Starts the archiver thread; it stops once `stop` is set. Each pass runs the
/// command in force (rule 4).
pub fn start(
    vfs: Arc<dyn Vfs>,
    data: PathBuf,
    command: Command,
    log: LogSink,
    stop: Arc<AtomicBool>,
) -> std::io::Result<std::thread::JoinHandle<()>> {
    std::thread::Builder::new()
        .name("archiver".into())
        .spawn(move || {
            while !stop.load(Ordering::Acquire) {
                let command = command();
                if !command.is_empty() {
                    pass(&*vfs, &data, &command, &log);
                }
                std::thread::sleep(Duration::from_secs(1));
            }
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn placeholders_expand_as_postgres_does() {
        let seg = "000000010000000000000003";
        assert_eq!(
            expand("cp %p /arch/%f && echo 100%% %x%", seg),
            format!("cp pg_wal/{seg} /arch/{seg} && echo 100% %x%")
        );
    }
}
