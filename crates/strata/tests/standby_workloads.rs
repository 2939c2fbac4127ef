//! Property: after each of the reports' workloads (A, B, C, D, E, G at 1/100 scale)
//! runs on a primary with a streaming standby, the standby holds the same relations
//! with the same bytes: once both are checkpointed (a restartpoint on the standby),
//! every main fork in `base/` and in every tablespace is byte-identical on the two,
//! and neither holds a relation the other lacks.

mod common;
use common::*;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};
use strata_bench::seeds;
use strata_bench::workloads::Workload;

const BASEBACKUP: &str = "/usr/lib/postgresql/15/bin/pg_basebackup";

fn one(s: &Server, sql: &str) -> String {
    s.psql_ok("postgres", &["-XAtc", sql]).trim().to_string()
}

fn lsn(s: &str) -> u64 {
    let (hi, lo) = s.split_once('/').unwrap();
    (u64::from_str_radix(hi, 16).unwrap() << 32) | u64::from_str_radix(lo, 16).unwrap()
}

fn catch_up(primary: &Server, standby: &Server) {
    let target = lsn(&one(primary, "select pg_current_wal_lsn()"));
    let t0 = Instant::now();
    while lsn(&one(standby, "select pg_last_wal_replay_lsn()")) < target {
        assert!(
            t0.elapsed() < Duration::from_secs(60),
            "{}",
            standby.log_text()
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Main forks of user relations: (tablespace or "base") / database / file → bytes.
fn main_forks(data: &Path) -> BTreeMap<String, Vec<u8>> {
    let mut out = BTreeMap::new();
    let mut roots: Vec<(String, PathBuf)> = vec![("base".into(), data.join("base"))];
    if let Ok(links) = std::fs::read_dir(data.join("pg_tblspc")) {
        for l in links.flatten() {
            let spc = l.file_name().to_string_lossy().into_owned();
            roots.push((spc, l.path().join("STRATA_1")));
        }
    }
    for (name, root) in roots {
        let Ok(dbs) = std::fs::read_dir(&root) else {
            continue;
        };
        for db in dbs.flatten() {
            for f in std::fs::read_dir(db.path()).unwrap().flatten() {
                let file = f.file_name().to_string_lossy().into_owned();
                if file.parse::<u64>().is_ok_and(|n| n >= 16384) {
                    let key = format!("{name}/{}/{file}", db.file_name().to_string_lossy());
                    out.insert(key, std::fs::read(f.path()).unwrap());
                }
            }
        }
    }
    out
}

fn run_sql(port: u16, db: &str, sql: &str) {
    let out = psql_command(port, "strata", db, None)
        .args(["-X", "-v", "ON_ERROR_STOP=1", "-c", sql])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{sql}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

fn workload_on_a_pair(id: &str) {
    let dir = tempfile::tempdir().unwrap();
    let (pdata, sdata) = (dir.path().join("primary"), dir.path().join("standby"));
    let w = Workload::new(id, 0.01).unwrap();
    let q = seeds::sql(&w, &dir.path().join("spc"));
    for d in &q.spc_dirs {
        std::fs::create_dir_all(d).unwrap();
    }
    init_small_segments(&pdata);
    let primary = Server::start(&pdata, &[]);
    for (db, sql) in &q.setup {
        run_sql(primary.port, db, sql);
    }
    let mut backup = Command::new(BASEBACKUP);
    backup.args([
        "-h",
        "127.0.0.1",
        "-U",
        "strata",
        "-X",
        "stream",
        "-c",
        "fast",
        "-R",
    ]);
    backup
        .args(["--no-manifest", "-p", &primary.port.to_string(), "-D"])
        .arg(&sdata);
    for d in &q.spc_dirs {
        let mapped = dir.path().join("spc_standby").join(d.file_name().unwrap());
        backup.arg(format!("-T{}={}", d.display(), mapped.display()));
    }
    let out = backup.output().unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let standby = Server::start(&sdata, &[]);
    for sql in &q.work {
        run_sql(primary.port, "postgres", sql);
    }
    run_sql(primary.port, "postgres", "checkpoint");
    catch_up(&primary, &standby);
    let before = standby.log_text().matches("restartpoint complete").count();
    run_sql(standby.port, "postgres", "checkpoint");
    let t0 = Instant::now();
    while standby.log_text().matches("restartpoint complete").count() == before {
        assert!(
            t0.elapsed() < Duration::from_secs(30),
            "{}",
            standby.log_text()
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    let (p, s) = (main_forks(&pdata), main_forks(&sdata));
    let names = |m: &BTreeMap<String, Vec<u8>>| m.keys().cloned().collect::<Vec<_>>();
    assert_eq!(names(&s), names(&p), "{id}: the standby's relations differ");
    for (name, bytes) in &p {
        assert!(
            s[name] == *bytes,
            "{id}: {name} differs between primary and standby"
        );
    }
}

#[test]
fn every_workload_leaves_the_standby_with_the_primary_s_files() {
    if !Path::new(BASEBACKUP).exists() {
        eprintln!("skipped: {BASEBACKUP} is not installed (apt-get install -y postgresql-15)");
        return;
    }
    for id in ["A", "B", "C", "D", "E", "G"] {
        workload_on_a_pair(id);
    }
}
