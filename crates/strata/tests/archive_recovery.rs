//! Property: a base backup with `recovery.signal` and a `restore_command` recovers from
//! a directory of archived segments: it replays every archived segment in order and
//! ends on a new timeline with every batch committed in them, whole (`pg_switch_wal()`
//! completes the last segment, so all are archived; `archive_timeout` does it alone); with
//! `recovery_target_lsn` it stops exactly before the first record at the target, so it
//! holds the batches committed before it and none after.

mod common;
use common::*;
use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

const BASEBACKUP: &str = "/usr/lib/postgresql/15/bin/pg_basebackup";

fn one(s: &Server, sql: &str) -> String {
    s.psql_ok("postgres", &["-XAtc", sql]).trim().to_string()
}

fn lsn(s: &str) -> u64 {
    let (hi, lo) = s.split_once('/').unwrap();
    (u64::from_str_radix(hi, 16).unwrap() << 32) | u64::from_str_radix(lo, 16).unwrap()
}

fn copy_dir(from: &Path, to: &Path) {
    let st = Command::new("cp")
        .arg("-a")
        .arg(from)
        .arg(to)
        .status()
        .unwrap();
    assert!(st.success());
}

/// Batch `b`: 500 rows tagged b, one transaction; returns the insert position after
/// its commit.
fn batch(s: &Server, b: i64) -> u64 {
    s.psql_ok(
        "postgres",
        &[
            "-c",
            &format!("insert into t select {b}, g from generate_series(1, 500) g"),
        ],
    );
    lsn(&one(s, "select pg_current_wal_lsn()"))
}

/// Starts a recovery from `copy` and waits until it has ended (not in recovery).
fn recover(copy: &Path, extra: &[&str]) -> Server {
    std::fs::write(copy.join("recovery.signal"), b"").unwrap();
    let s = Server::start(copy, extra);
    let t0 = Instant::now();
    while one(&s, "select pg_is_in_recovery()") != "f" {
        assert!(t0.elapsed() < Duration::from_secs(60), "{}", s.log_text());
        std::thread::sleep(Duration::from_millis(50));
    }
    s
}

/// (batches present, whether each is whole).
fn batches(s: &Server) -> (Vec<i64>, bool) {
    let mut got = Vec::new();
    let mut whole = true;
    for b in 1..=60 {
        let n: i64 = one(s, &format!("select count(*) from t where a = {b}"))
            .parse()
            .unwrap();
        if n > 0 {
            got.push(b);
            whole &= n == 500;
        }
    }
    (got, whole)
}

#[test]
fn archive_recovery_replays_archived_segments_to_the_end_or_a_target() {
    if !Path::new(BASEBACKUP).exists() {
        eprintln!("skipped: {BASEBACKUP} is not installed (apt-get install -y postgresql-15)");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let (data, arch, base) = (
        dir.path().join("p"),
        dir.path().join("arch"),
        dir.path().join("base"),
    );
    std::fs::create_dir(&arch).unwrap();
    init_small_segments(&data);
    let cmd = format!("archive_command=cp %p {}/%f", arch.display());
    let primary = Server::start(&data, &["archive_mode=on", &cmd]);
    primary.psql_ok("postgres", &["-c", "create table t (a bigint, b int)"]);
    let out = Command::new(BASEBACKUP)
        .args([
            "-h",
            "127.0.0.1",
            "-U",
            "strata",
            "-X",
            "stream",
            "-c",
            "fast",
            "--no-manifest",
        ])
        .args(["-p", &primary.port.to_string(), "-D"])
        .arg(&base)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let mut ends = vec![0u64];
    for b in 1..=60 {
        ends.push(batch(&primary, b));
    }
    // pg_switch_wal() completes the last segment: then all of it is archived.
    let switched = lsn(&one(&primary, "select pg_switch_wal()"));
    assert!(switched > ends[60]);
    let seg = 1u64 << 20;
    let last_complete = switched.div_ceil(seg);
    let t0 = Instant::now();
    let last_name = format!(
        "00000001{:08X}{:08X}",
        (last_complete - 1) / 4096,
        (last_complete - 1) % 4096
    );
    while !arch.join(&last_name).exists() {
        assert!(
            t0.elapsed() < Duration::from_secs(30),
            "{}",
            primary.log_text()
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    let restore = format!("restore_command=cp {}/%f %p", arch.display());
    // To the end of the archive: every batch committed in an archived segment, whole.
    let full = dir.path().join("full");
    copy_dir(&base, &full);
    let s = recover(&full, &[&restore]);
    let (got, whole) = batches(&s);
    assert!(whole, "a batch was torn");
    assert_eq!(got, (1..=60).collect::<Vec<i64>>(), "{}", s.log_text());
    assert!(
        s.log_text().contains("restored log file"),
        "{}",
        s.log_text()
    );
    assert!(full.join("pg_wal/00000002.history").exists());
    assert!(!full.join("recovery.signal").exists());
    s.psql_ok("postgres", &["-c", "insert into t values (0, 0)"]);
    drop(s);
    // To a target: exactly the batches committed before it.
    let target = ends[20];
    let to = dir.path().join("target");
    copy_dir(&base, &to);
    let target_s = format!("{:X}/{:X}", target >> 32, target & 0xFFFF_FFFF);
    let s = recover(&to, &[&restore, &format!("recovery_target_lsn={target_s}")]);
    let (got, whole) = batches(&s);
    assert!(whole);
    assert_eq!(got, (1..=20).collect::<Vec<i64>>(), "{}", s.log_text());
    assert!(
        s.log_text().contains("recovery stopping before"),
        "{}",
        s.log_text()
    );
}

#[test]
fn archive_timeout_completes_a_quiet_segment() {
    let dir = tempfile::tempdir().unwrap();
    let (data, arch) = (dir.path().join("p"), dir.path().join("arch"));
    std::fs::create_dir(&arch).unwrap();
    init_small_segments(&data);
    let cmd = format!("archive_command=cp %p {}/%f", arch.display());
    let primary = Server::start(&data, &["archive_mode=on", &cmd, "archive_timeout=1s"]);
    primary.psql_ok(
        "postgres",
        &["-c", "create table q (a int); insert into q values (1)"],
    );
    let at = lsn(&one(&primary, "select pg_current_wal_lsn()"));
    let segno = at / (1 << 20);
    let name = format!("00000001{:08X}{:08X}", segno / 4096, segno % 4096);
    let t0 = Instant::now();
    while !arch.join(&name).exists() {
        assert!(
            t0.elapsed() < Duration::from_secs(15),
            "segment {name} not archived:\n{}",
            primary.log_text()
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    // The switch moved the insert position to the next segment's start.
    let now = lsn(&one(&primary, "select pg_current_wal_lsn()"));
    assert!(now >= (segno + 1) * (1 << 20), "{now:X}");
}
