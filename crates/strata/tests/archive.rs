//! Property: with `archive_mode = on`, every completed WAL segment reaches
//! `archive_command` byte for byte, in order, and none leaves pg_wal before it is
//! archived — not when the command fails, not when its status file was lost in a crash.

mod common;
use common::*;
use std::path::Path;
use std::time::{Duration, Instant};

fn names(dir: &Path) -> Vec<String> {
    let mut v: Vec<String> = std::fs::read_dir(dir)
        .map(|d| {
            d.map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
                .filter(|n| n.len() == 24)
                .collect()
        })
        .unwrap_or_default();
    v.sort();
    v
}

/// About three 1MB segments of WAL (rows go in one record per page).
fn fill(s: &Server, table: &str) {
    s.psql_ok(
        "postgres",
        &[
            "-c",
            &format!("create table {table} (a int, b text)"),
            "-c",
            &format!("insert into {table} select g, 'some text to fill the log with ' || g from generate_series(1, 90000) g"),
        ],
    );
}

fn wait_until(what: &str, mut f: impl FnMut() -> bool) {
    let t0 = Instant::now();
    while !f() {
        assert!(t0.elapsed() < Duration::from_secs(30), "timed out: {what}");
        std::thread::sleep(Duration::from_millis(100));
    }
}

#[test]
fn completed_segments_are_archived_identically_then_removed() {
    let dir = tempfile::tempdir().unwrap();
    let (data, arch) = (dir.path().join("d"), dir.path().join("arch"));
    std::fs::create_dir(&arch).unwrap();
    init_small_segments(&data);
    let cmd = format!(
        "archive_command=test ! -f {0}/%f && cp %p {0}/%f",
        arch.display()
    );
    let s = Server::start(&data, &["archive_mode=on", &cmd]);
    fill(&s, "t");
    wait_until("three segments archived", || names(&arch).len() >= 3);
    let archived = names(&arch);
    // Archived in order from the first, each the segment as pg_wal holds it.
    assert_eq!(archived[0], "000000010000000000000001");
    for n in &archived {
        // The copy is whole once archive_command has exited 0 (archive rule 1):
        // a file listed while `cp` still writes it would differ.
        let done = data.join("pg_wal/archive_status").join(format!("{n}.done"));
        wait_until("the archive command's end", || done.exists());
        let ours = std::fs::read(data.join("pg_wal").join(n)).unwrap();
        assert!(std::fs::read(arch.join(n)).unwrap() == ours, "{n} differs");
    }
    s.psql_ok("postgres", &["-c", "checkpoint"]);
    let left = names(&data.join("pg_wal"));
    assert!(archived.iter().all(|n| !left.contains(n)), "{left:?}");
    assert!(names(&data.join("pg_wal/archive_status")).is_empty());
}

#[test]
fn no_segment_leaves_before_it_is_archived() {
    let dir = tempfile::tempdir().unwrap();
    let (data, arch) = (dir.path().join("d"), dir.path().join("arch"));
    std::fs::create_dir(&arch).unwrap();
    init_small_segments(&data);
    // The command fails: everything stays, and the log says why.
    let mut s = Server::start(&data, &["archive_mode=on", "archive_command=exit 1"]);
    fill(&s, "t1");
    s.psql_ok("postgres", &["-c", "checkpoint"]);
    wait_until("a failure logged", || {
        s.log_text()
            .contains("archive command failed with exit code 1")
    });
    assert!(s
        .log_text()
        .contains("The failed archive command was: exit 1"));
    let kept = names(&data.join("pg_wal"));
    assert!(
        kept.len() >= 3 && kept[0] == "000000010000000000000001",
        "{kept:?}"
    );
    // A crash that lost the status files: the checkpointer marks them again.
    s.kill9();
    for e in std::fs::read_dir(data.join("pg_wal/archive_status")).unwrap() {
        std::fs::remove_file(e.unwrap().path()).unwrap();
    }
    let cmd = format!("archive_command=cp %p {}/%f", arch.display());
    let s = Server::start(&data, &["archive_mode=on", &cmd]);
    wait_until("every kept segment archived", || {
        s.psql_ok("postgres", &["-c", "checkpoint"]);
        kept[..kept.len() - 1]
            .iter()
            .all(|n| names(&arch).contains(n))
    });
    s.psql_ok("postgres", &["-c", "checkpoint"]);
    assert!(!names(&data.join("pg_wal")).contains(&kept[0]));
    assert_eq!(
        s.psql_ok("postgres", &["-c", "select count(*) from t1"])
            .trim(),
        "90000"
    );
}
