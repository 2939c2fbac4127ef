//! A failure after which durability is unknown ends the server process — a failed WAL
//! fsync (PANIC), a panic while engine state is held — and the next start recovers
//! every acknowledged commit. Faults are injected with the test-only setting
//! `debug_io_fault` (the simulated disk of `strata_vfs::sim` over the real files).

mod common;
use common::*;
use std::path::{Path, PathBuf};
use std::process::Output;

/// psql as `strata` in database postgres, running `sql`.
fn run(s: &Server, sql: &str) -> Output {
    s.psql("strata", &["-c", sql], None)
}

/// `strata init` of `dir`/data, without a password.
fn init_data(dir: &Path) -> PathBuf {
    let data = dir.join("data");
    init(&data, None);
    data
}

#[test]
fn a_failed_wal_fsync_stops_the_server_and_restart_keeps_acknowledged_commits() {
    let dir = tempfile::tempdir().unwrap();
    let data = init_data(dir.path());
    // The sixth WAL fsync fails: start-up's checkpoint and a few commits go first.
    let mut s = Server::start(&data, &["debug_io_fault=wal:sync:eio:5"]);
    assert!(run(&s, "create table t (a int)").status.success());
    let mut acked = Vec::new();
    for i in 0..20 {
        if run(&s, &format!("insert into t values ({i})"))
            .status
            .success()
        {
            acked.push(i);
        } else {
            break;
        }
    }
    assert!(acked.len() < 20, "the fault never hit:\n{}", s.log_text());
    let st = s.wait_exit();
    assert!(!st.success(), "{st}");
    let log = s.log_text();
    assert!(
        log.contains("PANIC:") && log.contains("could not flush WAL"),
        "{log}"
    );
    drop(s);
    let s = Server::start(&data, &[]);
    let out = run(&s, "select a from t order by a");
    let got: Vec<i32> = String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(|l| l.parse().unwrap())
        .collect();
    assert_eq!(got, acked, "every acknowledged insert, nothing else");
}

#[test]
fn a_panic_while_engine_state_is_held_ends_the_process_and_restart_recovers() {
    let dir = tempfile::tempdir().unwrap();
    let data = init_data(dir.path());
    // A panic inside the checkpoint's first data-file fsync: pages written, the
    // checkpoint half done, its lock held.
    let mut s = Server::start(&data, &["debug_io_fault=data:sync:panic:0"]);
    let out = run(
        &s,
        "create table t (a int); insert into t select g from generate_series(1, 1000) g",
    );
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let out = run(&s, "checkpoint");
    assert!(!out.status.success(), "the checkpoint cannot complete");
    let st = s.wait_exit();
    assert!(!st.success(), "{st}");
    assert!(s.log_text().contains("PANIC:"), "{}", s.log_text());
    drop(s);
    let s = Server::start(&data, &[]);
    let out = run(&s, "select count(*), sum(a) from t");
    assert_eq!(String::from_utf8_lossy(&out.stdout).trim(), "1000|500500");
}
