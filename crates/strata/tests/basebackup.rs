//! Property: PostgreSQL 15's `pg_basebackup -X stream` against a running Strata under a
//! write load produces a directory that `strata start` recovers from its backup label
//! to a consistent state holding every transaction committed before the backup's end
//! (tablespaces included, by link or by tablespace_map, the manifest valid for
//! pg_verifybackup); a copy missing the WAL up to BACKUP_END is refused ("WAL ends
//! before end of online backup"). A copy made with `-R` is a standby: crates/strata/tests/standby.rs.

mod common;
use common::*;
use std::path::Path;
use std::process::{Command, Output};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

const BASEBACKUP: &str = "/usr/lib/postgresql/15/bin/pg_basebackup";
const VERIFYBACKUP: &str = "/usr/lib/postgresql/15/bin/pg_verifybackup";
const ROWS_PER_BATCH: i64 = 200;

fn pg_basebackup(port: u16, dir: &Path, extra: &[&str]) -> Output {
    Command::new(BASEBACKUP)
        .args([
            "-h",
            "127.0.0.1",
            "-U",
            "strata",
            "-X",
            "stream",
            "-c",
            "fast",
        ])
        .args(["-p", &port.to_string(), "-D"])
        .arg(dir)
        .args(extra)
        .output()
        .expect("pg_basebackup (apt-get install -y postgresql-15)")
}

fn ok(out: &Output, what: &str) -> String {
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(
        out.status.success(),
        "{what} failed:\n{}\n{stderr}",
        String::from_utf8_lossy(&out.stdout)
    );
    stderr
}

/// The LSN pg_basebackup -v reports as the write-ahead log end point.
fn end_point(verbose: &str) -> u64 {
    let at = verbose
        .lines()
        .find_map(|l| l.split("write-ahead log end point: ").nth(1))
        .unwrap_or_else(|| panic!("no end point in:\n{verbose}"));
    lsn(at.trim())
}

fn lsn(s: &str) -> u64 {
    let (hi, lo) = s.split_once('/').unwrap();
    (u64::from_str_radix(hi, 16).unwrap() << 32) | u64::from_str_radix(lo, 16).unwrap()
}

/// Inserts batches of rows until told to stop; records each committed batch with the
/// WAL insert position read after its commit returned.
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

/// A primary with a table in tablespace `ts` at `spc` and an empty `load` table.
fn primary_with_tablespace(data: &Path, spc: &Path) -> Server {
    // Small max_wal_size: checkpoints run while the backup copies, so the copied
    // pg_control names a later checkpoint than the backup label (recovery rule 10).
    let primary = Server::start(data, &["max_wal_size=2MB"]);
    primary.psql_ok(
        "postgres",
        &[
            "-c",
            &format!("create tablespace ts location '{}'", spc.display()),
            "-c",
            "create table in_ts (a int, b text) tablespace ts",
            "-c",
            "insert into in_ts select g, 'row ' || g from generate_series(1, 500) g",
            "-c",
            "create table load (batch int, i int)",
        ],
    );
    primary
}

#[test]
fn backup_under_load_recovers_every_commit_before_its_end() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("d");
    let copy = dir.path().join("copy");
    let (spc_old, spc_new) = (dir.path().join("ts"), dir.path().join("ts_copy"));
    std::fs::create_dir(&spc_old).unwrap();
    init_small_segments(&data);
    let primary = primary_with_tablespace(&data, &spc_old);
    let stop = Arc::new(AtomicBool::new(false));
    let done = Arc::new(Mutex::new(Vec::new()));
    let w = {
        let (stop, done, port) = (stop.clone(), done.clone(), primary.port);
        std::thread::spawn(move || writer(port, stop, done))
    };
    while done.lock().unwrap().len() < 5 {
        std::thread::sleep(Duration::from_millis(20));
    }
    let mapping = format!("{}={}", spc_old.display(), spc_new.display());
    // MAX_RATE (-r) stretches the copy over seconds of load.
    let out = pg_basebackup(
        primary.port,
        &copy,
        &["-P", "-v", "-r", "200k", "-T", &mapping],
    );
    let verbose = ok(&out, "pg_basebackup");
    let returned: Vec<(i64, u64)> = done.lock().unwrap().clone();
    let primary_rows: i64 = primary
        .psql_ok("postgres", &["-c", "select count(*) from load"])
        .trim()
        .parse()
        .unwrap();
    std::thread::sleep(Duration::from_millis(200)); // the load goes on a little
    stop.store(true, Ordering::Relaxed);
    w.join().unwrap();
    let end = end_point(&verbose);
    // Committed before the BACKUP_END record: the copy must hold these.
    let before_end: Vec<i64> = returned
        .iter()
        .filter(|(_, after)| *after <= end)
        .map(|(b, _)| *b)
        .collect();
    assert!(!before_end.is_empty(), "no batch committed before the end");
    assert!(
        copy.join("backup_label").exists() && copy.join("backup_manifest").exists(),
        "pg_basebackup wrote no backup_label or manifest"
    );
    let verify = Command::new(VERIFYBACKUP)
        .args(["-n"]) // Strata's WAL is not PostgreSQL's: no pg_waldump
        .arg(&copy)
        .output()
        .unwrap();
    ok(&verify, "pg_verifybackup");

    let restored = Server::start(&copy, &[]);
    let log = restored.log_text();
    assert!(
        log.contains("starting backup recovery from backup_label"),
        "{log}"
    );
    assert!(log.contains("completed backup recovery"), "{log}");
    assert!(!copy.join("backup_label").exists() && copy.join("backup_label.old").exists());
    let batches = whole_batches(&restored);
    // Whole batches, in commit order, with no hole; at least those before the end.
    assert_eq!(batches, (1..=batches.len() as i64).collect::<Vec<_>>());
    assert!(
        batches.len() >= before_end.len(),
        "copy has {} batches, {} committed before the backup ended at {end:X}",
        batches.len(),
        before_end.len()
    );
    let copy_rows = batches.len() as i64 * ROWS_PER_BATCH;
    // Nothing beyond what the primary held when pg_basebackup returned (one batch of
    // slack: a commit flushed but not yet visible to the count).
    assert!(copy_rows <= primary_rows + ROWS_PER_BATCH);
    eprintln!(
        "batches: {} before the backup's end, {} when pg_basebackup returned, {} in the copy; rows on the primary then {primary_rows}",
        before_end.len(),
        returned.len(),
        batches.len()
    );
    assert_eq!(
        restored
            .psql_ok("postgres", &["-c", "select count(*), sum(a) from in_ts"])
            .trim(),
        "500|125250"
    );
    assert!(
        spc_new.join("STRATA_1").exists(),
        "the tablespace was not mapped"
    );
    assert_checkpoint_during_backup(&primary);
    // The primary goes on, unaffected.
    assert_eq!(primary.psql_ok("postgres", &["-c", "select 1"]).trim(), "1");
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

/// Checkpoints ran during the copy: the copied pg_control names a later checkpoint
/// than the backup label, so recovery from pg_control's would lose changes.
fn assert_checkpoint_during_backup(primary: &Server) {
    let plog = primary.log_text();
    let during = plog
        .split("started: redo LSN")
        .nth(1)
        .and_then(|t| t.split("done: start").next())
        .unwrap_or("");
    assert!(
        during.matches("checkpoint complete").count() >= 1,
        "no checkpoint during the backup:\n{plog}"
    );
}

#[test]
fn copy_without_backup_end_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("d");
    let copy = dir.path().join("copy");
    init_small_segments(&data);
    let primary = Server::start(&data, &[]);
    primary.psql_ok(
        "postgres",
        &[
            "-c",
            "create table t (a int)",
            "-c",
            "insert into t select g from generate_series(1, 100) g",
        ],
    );
    ok(
        &pg_basebackup(primary.port, &copy, &["--no-manifest"]),
        "pg_basebackup",
    );
    // Cut the copy's WAL just before its BACKUP_END record: the start of the backup's
    // last segment file onwards is zeroed from the end LSN's record start.
    let label = std::fs::read_to_string(copy.join("backup_label")).unwrap();
    assert!(label.contains("BACKUP METHOD: streamed"), "{label}");
    let waldump = Command::new(env!("CARGO_BIN_EXE_strata"))
        .args(["waldump", "-D"])
        .arg(&copy)
        .output()
        .unwrap();
    let dump = String::from_utf8_lossy(&waldump.stdout).into_owned();
    let line = dump
        .lines()
        .find(|l| l.contains("BACKUP_END"))
        .unwrap_or_else(|| panic!("no BACKUP_END in the copy's WAL:\n{dump}"));
    let at = lsn(line
        .split("lsn: ")
        .nth(1)
        .unwrap()
        .split(',')
        .next()
        .unwrap()
        .trim());
    truncate_wal_at(&copy.join("pg_wal"), at, 1 << 20);
    let mut restored = start_expecting_failure(&copy);
    let status = restored.wait_exit();
    assert!(!status.success());
    let log = restored.log_text();
    assert!(
        log.contains("WAL ends before end of online backup"),
        "{log}"
    );
}

/// Zeroes the WAL from `at` on (in its segment file; later files removed).
fn truncate_wal_at(wal: &Path, at: u64, segment_bytes: u64) {
    let seg = at / segment_bytes;
    for e in std::fs::read_dir(wal).unwrap() {
        let e = e.unwrap();
        let name = e.file_name().to_string_lossy().into_owned();
        if name.len() != 24 {
            continue;
        }
        let n = u64::from_str_radix(&name[8..16], 16).unwrap() * (0x1_0000_0000 / segment_bytes)
            + u64::from_str_radix(&name[16..24], 16).unwrap();
        if n > seg {
            std::fs::remove_file(e.path()).unwrap();
        } else if n == seg {
            let mut bytes = std::fs::read(e.path()).unwrap();
            let off = (at % segment_bytes) as usize;
            bytes[off..].fill(0);
            std::fs::write(e.path(), bytes).unwrap();
        }
    }
}

/// `strata start` on `data`, not waiting for it to accept connections.
fn start_expecting_failure(data: &Path) -> Server {
    let port = free_port();
    let log = data.with_extension(format!("log{port}"));
    let logf = std::fs::File::create(&log).unwrap();
    let child = Command::new(env!("CARGO_BIN_EXE_strata"))
        .args(["start", "-D"])
        .arg(data)
        .args(["-c", &format!("port={port}")])
        .stderr(logf)
        .spawn()
        .unwrap();
    Server {
        child: Some(child),
        port,
        log,
    }
}

#[test]
fn tar_format_carries_tablespace_map() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("d");
    let (tars, copy) = (dir.path().join("tars"), dir.path().join("copy"));
    let (spc_old, spc_new) = (dir.path().join("ts"), dir.path().join("ts_copy"));
    for d in [&spc_old, &spc_new, &copy] {
        std::fs::create_dir(d).unwrap();
    }
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&copy, std::fs::Permissions::from_mode(0o700)).unwrap();
    init_small_segments(&data);
    let primary = primary_with_tablespace(&data, &spc_old);
    ok(
        &pg_basebackup(primary.port, &tars, &["-Ft"]),
        "pg_basebackup -Ft",
    );
    let spc_tar = std::fs::read_dir(&tars)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .find(|n| n.ends_with(".tar") && n != "base.tar" && n != "pg_wal.tar")
        .expect("a tablespace archive");
    let untar = |tar: &str, into: &Path| {
        let out = Command::new("tar")
            .arg("-xf")
            .arg(tars.join(tar))
            .arg("-C")
            .arg(into)
            .output()
            .unwrap();
        ok(&out, "tar -x");
    };
    untar("base.tar", &copy);
    untar("pg_wal.tar", &copy.join("pg_wal"));
    untar(&spc_tar, &spc_new);
    // The links travel in tablespace_map, not in pg_tblspc; point it at the copy.
    let map = std::fs::read_to_string(copy.join("tablespace_map")).unwrap();
    let oid = spc_tar.trim_end_matches(".tar");
    assert_eq!(map, format!("{oid} {}\n", spc_old.display()));
    assert_eq!(
        std::fs::read_dir(copy.join("pg_tblspc")).unwrap().count(),
        0
    );
    std::fs::write(
        copy.join("tablespace_map"),
        format!("{oid} {}\n", spc_new.display()),
    )
    .unwrap();
    let restored = Server::start(&copy, &[]);
    assert_eq!(
        restored
            .psql_ok("postgres", &["-c", "select count(*) from in_ts"])
            .trim(),
        "500"
    );
    let link = std::fs::read_link(copy.join("pg_tblspc").join(oid)).unwrap();
    assert_eq!(link, spc_new);
    assert!(copy.join("tablespace_map.old").exists());
}
