//! WAL archiving's bookkeeping: `pg_wal/archive_status/<segment>.ready` and `.done`,
//! as PostgreSQL keeps them. The archiver that runs `archive_command` is the server's;
//! this module says which segments wait and records which are safe.
//!
//! Rules (cited as "archive rule N"):
//! 1. With archiving on, a segment gets `.ready` once it is complete and fsynced (the
//!    flush that passes its end, [`crate::Wal`]); the archiver renames `.ready` to
//!    `.done` only after `archive_command` exits 0.
//! 2. A segment is removed only with a `.done` ([`crate::Wal::remove_segments_before`]);
//!    one the checkpointer finds with neither status file (a crash between the flush
//!    and the `.ready`) gets its `.ready` then, and waits. So no segment goes before
//!    it is archived, crash or not.
//! 3. Status files are empty; creating or renaming one needs no fsync (PostgreSQL's
//!    choice): lost in a crash, rule 2 recreates `.ready`, and a lost `.done` means one
//!    more archiving of the same segment, which `archive_command` must tolerate (as
//!    PostgreSQL documents).

use std::path::{Path, PathBuf};
use strata_vfs::Vfs;

/// `pg_wal/archive_status` of a data directory.
pub fn status_dir(data_dir: &Path) -> PathBuf {
    data_dir.join("pg_wal").join("archive_status")
}

fn status(data_dir: &Path, segment: &str, ext: &str) -> PathBuf {
    status_dir(data_dir).join(format!("{segment}.{ext}"))
}

/// Marks a completed segment ready to archive (rule 1).
pub fn mark_ready(vfs: &dyn Vfs, data_dir: &Path, segment: &str) -> std::io::Result<()> {
    vfs.create_dir_all(&status_dir(data_dir))?;
    let f = vfs.open(&status(data_dir, segment, "ready"), true)?;
    drop(f);
    Ok(())
}

/// Records that `archive_command` archived a segment (rule 1).
pub fn mark_done(vfs: &dyn Vfs, data_dir: &Path, segment: &str) -> std::io::Result<()> {
    vfs.rename(
        &status(data_dir, segment, "ready"),
        &status(data_dir, segment, "done"),
    )
}

/// Whether a segment may be removed, marking it ready if it has no status (rule 2).
pub fn removable(vfs: &dyn Vfs, data_dir: &Path, segment: &str) -> std::io::Result<bool> {
    let exists = |ext| vfs.open(&status(data_dir, segment, ext), false).is_ok();
    if exists("done") {
        return Ok(true);
    }
    if !exists("ready") {
        mark_ready(vfs, data_dir, segment)?;
    }
    Ok(false)
}

/// Forgets a removed segment's `.done`.
pub fn forget(vfs: &dyn Vfs, data_dir: &Path, segment: &str) {
    let _ = vfs.remove_file(&status(data_dir, segment, "done"));
}

/// The segments waiting to be archived, oldest first. O(status files).
pub fn ready(vfs: &dyn Vfs, data_dir: &Path) -> std::io::Result<Vec<String>> {
    let dir = status_dir(data_dir);
    let mut v: Vec<String> = match vfs.list_dir(&dir) {
        Ok(entries) => entries
            .into_iter()
            .filter_map(|e| e.name.strip_suffix(".ready").map(str::to_string))
            .collect(),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Vec::new(),
        Err(e) => return Err(e),
    };
    v.sort();
    Ok(v)
}
