//! Property: `strata basebackup` (BASE_BACKUP with the WAL streamed beside it, no
//! PostgreSQL tools) of a running Strata under a write load makes a directory that
//! `strata start` recovers holding every batch committed before the backup's end,
//! whole; with `-R` the copy is a streaming standby; `-T` puts a tablespace where it is
//! mapped (and an unmapped one whose location is in use is refused); a non-empty target
//! is refused before connecting, and a failed backup leaves no directory behind.

mod common;
use common::*;
use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::process::{Command, Output};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

const ROWS_PER_BATCH: i64 = 200;

fn strata_basebackup(port: u16, dir: &Path, extra: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_strata"))
        .args(["basebackup", "-h", "127.0.0.1", "-U", "strata", "-p"])
        .arg(port.to_string())
        .arg("-D")
        .arg(dir)
        .args(extra)
        .output()
        .expect("run strata basebackup")
}

/// Its stdout, after checking it succeeded.
fn ok(out: &Output) -> String {
    assert!(
        out.status.success(),
        "strata basebackup failed:\n{}\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

fn lsn(s: &str) -> u64 {
    let (hi, lo) = s
        .split_once('/')
        .unwrap_or_else(|| panic!("not an LSN: {s:?}"));
    (u64::from_str_radix(hi, 16).unwrap() << 32) | u64::from_str_radix(lo, 16).unwrap()
}

/// The end LSN of the final line: "... WAL <start> to <end> on timeline ...".
fn end_point(stdout: &str) -> u64 {
    let at = stdout
        .split(" to ")
        .nth(1)
        .and_then(|t| t.split_whitespace().next())
        .unwrap_or_else(|| panic!("no end point in: {stdout}"));
    lsn(at)
}

fn one(s: &Server, sql: &str) -> String {
    s.psql_ok("postgres", &["-c", sql]).trim().to_string()
}

/// Inserts batches until told to stop; records each committed batch with the WAL
/// insert position read after its commit returned.
fn writer(port: u16, stop: Arc<AtomicBool>, done: Arc<Mutex<Vec<(i64, u64)>>>) {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async {
        let c = connect_to(port, "strata", "postgres", None).await.unwrap();
        let mut batch = 0i64;
        while !stop.load(Ordering::Relaxed) {
            batch += 1;
            let sql = format!(
                "insert into load select {batch}, g from generate_series(1, {ROWS_PER_BATCH}) g"
            );
            c.batch_execute(&sql).await.unwrap();
            let rows = c.simple_query("select pg_current_wal_lsn()").await.unwrap();
            let after = rows
                .iter()
                .find_map(|m| match m {
                    tokio_postgres::SimpleQueryMessage::Row(r) => r.get(0).map(lsn),
                    _ => None,
                })
                .unwrap();
            done.lock().unwrap().push((batch, after));
        }
    });
}

/// The batches in `s`'s `load` table, each checked whole.
fn whole_batches(s: &Server) -> Vec<i64> {
    let mut per_batch = std::collections::BTreeMap::<i64, i64>::new();
    for l in s
        .psql_ok("postgres", &["-c", "select batch from load"])
        .lines()
    {
        *per_batch.entry(l.trim().parse().unwrap()).or_default() += 1;
    }
    for (b, n) in &per_batch {
        assert_eq!(*n, ROWS_PER_BATCH, "batch {b} is torn");
    }
    per_batch.into_keys().collect()
}

fn mode(p: &Path) -> u32 {
    std::fs::metadata(p).unwrap().permissions().mode() & 0o777
}

#[test]
fn backup_under_load_recovers_every_commit_before_its_end() {
    let dir = tempfile::tempdir().unwrap();
    let (data, copy) = (dir.path().join("d"), dir.path().join("copy"));
    init_small_segments(&data);
    // Small max_wal_size: checkpoints (and segment removal) go on during the backup.
    let primary = Server::start(&data, &["max_wal_size=2MB"]);
    // Some megabytes to copy, so the copy takes a while under the load.
    primary.psql_ok(
        "postgres",
        &[
            "-c",
            "create table load (batch int, i int)",
            "-c",
            "create table bulk (a int, b text)",
            "-c",
            "insert into bulk select g, 'some text to fill pages ' || g from generate_series(1, 100000) g",
        ],
    );
    let stop = Arc::new(AtomicBool::new(false));
    let done = Arc::new(Mutex::new(Vec::new()));
    let w = {
        let (stop, done, port) = (stop.clone(), done.clone(), primary.port);
        std::thread::spawn(move || writer(port, stop, done))
    };
    while done.lock().unwrap().len() < 20 {
        std::thread::sleep(Duration::from_millis(20));
    }
    let at_start = done.lock().unwrap().len();
    let stdout = ok(&strata_basebackup(primary.port, &copy, &["-c", "fast"]));
    let returned: Vec<(i64, u64)> = done.lock().unwrap().clone();
    std::thread::sleep(Duration::from_millis(200)); // the load goes on a little
    stop.store(true, Ordering::Relaxed);
    w.join().unwrap();
    let end = end_point(&stdout);
    let before_end = returned.iter().filter(|(_, after)| *after <= end).count();
    assert!(before_end > 0, "no batch committed before the end");
    for f in ["backup_label", "backup_manifest", "global/pg_control"] {
        assert_eq!(mode(&copy.join(f)), 0o600, "{f}");
    }
    assert_eq!(mode(&copy), 0o700);
    assert_eq!(mode(&copy.join("base")), 0o700);
    let wal: Vec<_> = std::fs::read_dir(copy.join("pg_wal"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.is_file())
        .collect();
    assert!(!wal.is_empty(), "no WAL streamed: {stdout}");
    for p in &wal {
        let len = std::fs::metadata(p).unwrap().len();
        assert_eq!(len, 1 << 20, "{} is not whole", p.display());
    }

    let restored = Server::start(&copy, &[]);
    let log = restored.log_text();
    assert!(log.contains("completed backup recovery"), "{log}");
    let batches = whole_batches(&restored);
    assert_eq!(batches, (1..=batches.len() as i64).collect::<Vec<_>>());
    assert!(
        batches.len() >= before_end,
        "copy has {} batches, {before_end} committed before the backup ended at {end:X}",
        batches.len()
    );
    assert!(batches.len() <= returned.len() + 1);
    assert_eq!(one(&restored, "select count(*) from bulk"), "100000");
    eprintln!(
        "batches: {at_start} when the backup began, {before_end} before its end, {} when it returned, {} in the copy; {} WAL segment file(s)",
        returned.len(),
        batches.len(),
        wal.len()
    );
}

#[test]
fn basebackup_r_makes_a_streaming_standby() {
    let dir = tempfile::tempdir().unwrap();
    let (data, copy) = (dir.path().join("d"), dir.path().join("standby"));
    init_small_segments(&data);
    let primary = Server::start(&data, &[]);
    primary.psql_ok(
        "postgres",
        &[
            "-c",
            "create table t (a int)",
            "-c",
            "insert into t select g from generate_series(1, 1000) g",
        ],
    );
    ok(&strata_basebackup(
        primary.port,
        &copy,
        &["-c", "fast", "-R", "--no-manifest", "-P"],
    ));
    assert!(copy.join("standby.signal").exists());
    assert!(!copy.join("backup_manifest").exists());
    let auto = std::fs::read_to_string(copy.join("postgresql.auto.conf")).unwrap();
    let want = format!(
        "primary_conninfo = 'user=strata host=127.0.0.1 port={}'",
        primary.port
    );
    assert!(auto.contains(&want), "{auto}");
    let standby = Server::start(
        &copy,
        &[
            "wal_receiver_status_interval=1s",
            "wal_retrieve_retry_interval=100ms",
        ],
    );
    assert_eq!(one(&standby, "select pg_is_in_recovery()"), "t");
    primary.psql_ok(
        "postgres",
        &[
            "-c",
            "insert into t select g from generate_series(1001, 1500) g",
        ],
    );
    let t0 = Instant::now();
    loop {
        let n = one(&standby, "select count(*) from t");
        if n == "1500" {
            break;
        }
        assert!(
            t0.elapsed() < Duration::from_secs(30),
            "standby has {n} rows:\n{}",
            standby.log_text()
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    assert_eq!(one(&standby, "select pg_is_in_recovery()"), "t");
}

#[test]
fn tablespace_goes_where_it_is_mapped() {
    let dir = tempfile::tempdir().unwrap();
    let (data, copy) = (dir.path().join("d"), dir.path().join("copy"));
    let (spc_old, spc_new) = (dir.path().join("ts"), dir.path().join("ts_copy"));
    std::fs::create_dir(&spc_old).unwrap();
    init_small_segments(&data);
    let primary = Server::start(&data, &[]);
    primary.psql_ok(
        "postgres",
        &[
            "-c",
            &format!("create tablespace ts location '{}'", spc_old.display()),
            "-c",
            "create table in_ts (a int, b text) tablespace ts",
            "-c",
            "insert into in_ts select g, 'row ' || g from generate_series(1, 500) g",
        ],
    );
    // Unmapped, the tablespace would go to its own location, which is in use.
    let out = strata_basebackup(primary.port, &copy, &["-c", "fast"]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success());
    assert!(stderr.contains("exists but is not empty"), "{stderr}");
    assert!(!copy.exists(), "the failed backup left {}", copy.display());

    let mapping = format!("{}={}", spc_old.display(), spc_new.display());
    ok(&strata_basebackup(
        primary.port,
        &copy,
        &["-c", "fast", "-T", &mapping],
    ));
    assert!(
        spc_new.join("STRATA_1").is_dir(),
        "the tablespace was not mapped"
    );
    assert_eq!(mode(&spc_new), 0o700);
    let links: Vec<_> = std::fs::read_dir(copy.join("pg_tblspc"))
        .unwrap()
        .map(|e| std::fs::read_link(e.unwrap().path()).unwrap())
        .collect();
    assert_eq!(links, vec![spc_new.clone()]);
    drop(primary);
    let restored = Server::start(&copy, &[]);
    assert_eq!(
        one(&restored, "select count(*), sum(a) from in_ts"),
        "500|125250"
    );
}

#[test]
fn refusals_and_failures_leave_nothing_behind() {
    let dir = tempfile::tempdir().unwrap();
    // Non-empty: refused before connecting (nothing listens on this port).
    let full = dir.path().join("full");
    std::fs::create_dir(&full).unwrap();
    std::fs::write(full.join("keep"), "x").unwrap();
    let out = strata_basebackup(free_port(), &full, &[]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1));
    assert!(
        stderr.starts_with("strata: error: directory \"")
            && stderr.contains("exists but is not empty"),
        "{stderr}"
    );
    assert!(full.join("keep").exists());
    // No server: the directory it created is gone.
    let absent = dir.path().join("absent");
    let out = strata_basebackup(free_port(), &absent, &[]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1));
    assert!(stderr.contains("Connection refused"), "{stderr}");
    assert!(!absent.exists());
    // A server's ErrorResponse (no such role with replication privilege): an empty
    // directory given is left empty.
    let data = dir.path().join("d");
    init_small_segments(&data);
    let primary = Server::start(&data, &[]);
    primary.psql_ok("postgres", &["-c", "create role nobody login"]);
    let empty = dir.path().join("empty");
    std::fs::create_dir(&empty).unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_strata"))
        .args(["basebackup", "-D"])
        .arg(&empty)
        .arg("-d")
        .arg(format!("host=127.0.0.1 port={} user=nobody", primary.port))
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1));
    assert!(stderr.contains("replication"), "{stderr}");
    assert_eq!(std::fs::read_dir(&empty).unwrap().count(), 0);
}
