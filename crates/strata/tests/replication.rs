//! Property: a `replication=true` connection speaks PostgreSQL's streaming replication
//! protocol well enough for PostgreSQL 15's own tools: psql's IDENTIFY_SYSTEM and SHOW,
//! and pg_receivewal streaming Strata's WAL into files byte-identical to pg_wal's;
//! what is not a replication command, or not allowed, gets PostgreSQL's error.

mod common;
use common::*;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

const RECEIVEWAL: &str = "/usr/lib/postgresql/15/bin/pg_receivewal";
const REPL: &str = "dbname=replication replication=true";

/// `pg_receivewal --no-loop -D dir` with `extra` options, its stderr piped.
fn receivewal(port: u16, dir: &Path, extra: &[&str]) -> Child {
    Command::new(RECEIVEWAL)
        .args(["-h", "127.0.0.1", "-U", "strata", "--no-loop", "-v", "-p"])
        .arg(port.to_string())
        .arg("-D")
        .arg(dir)
        .args(extra)
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("pg_receivewal (apt-get install -y postgresql-15)")
}

/// A table of 40,000 rows: about three 1MB segments of WAL.
fn write_three_segments(s: &Server) {
    s.psql_ok(
        "postgres",
        &[
            "-c",
            "create table t (a int, b text)",
            "-c",
            "insert into t select g, 'a value of some length, number ' || g from generate_series(1, 40000) g",
        ],
    );
}

/// Waits until `dir` holds `n` completed segment files.
fn wait_for_segments(dir: &Path, n: usize) {
    let t0 = Instant::now();
    loop {
        let done = std::fs::read_dir(dir)
            .unwrap()
            .filter(|e| {
                !e.as_ref()
                    .unwrap()
                    .file_name()
                    .to_string_lossy()
                    .contains('.')
            })
            .count();
        if done >= n {
            return;
        }
        assert!(
            t0.elapsed() < Duration::from_secs(60),
            "{done} segments received"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

#[test]
fn identify_system_show_and_refusals() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("d");
    init_small_segments(&data);
    let s = Server::start(&data, &[]);
    s.psql_ok("postgres", &["-c", "create role bob login"]);
    let out = s.psql_ok(REPL, &["-c", "IDENTIFY_SYSTEM"]);
    let f: Vec<&str> = out.trim().split('|').collect();
    assert_eq!(f.len(), 4, "{out}");
    assert!(f[0].parse::<u64>().unwrap() > 0, "{out}");
    assert_eq!(f[1], "1");
    assert!(f[2].starts_with("0/"), "{out}");
    assert_eq!(f[3], "", "dbname is NULL for a physical sender");
    // The system identifier is the cluster's: the same on every connection.
    assert_eq!(
        s.psql_ok(REPL, &["-c", "IDENTIFY_SYSTEM"])
            .split('|')
            .next(),
        Some(f[0])
    );
    assert_eq!(
        s.psql_ok(REPL, &["-c", "SHOW wal_segment_size"]).trim(),
        "1MB"
    );
    // SQL's SHOW says the same: the cluster's size, fixed at init.
    assert_eq!(
        s.psql_ok("postgres", &["-c", "SHOW wal_segment_size"])
            .trim(),
        "1MB"
    );
    assert_eq!(
        s.psql_ok(REPL, &["-c", "SHOW data_directory_mode"]).trim(),
        "0700"
    );
    let err = |conn: &str, user: &str, cmd: &str| {
        let out = psql_command(s.port, user, conn, None)
            .args(["-c", cmd])
            .output()
            .unwrap();
        assert!(!out.status.success(), "{cmd} succeeded");
        String::from_utf8_lossy(&out.stderr).into_owned()
    };
    let e = err(REPL, "strata", "select 1");
    assert!(
        e.contains("cannot execute SQL commands in WAL sender"),
        "{e}"
    );
    let e = err(REPL, "strata", "START_REPLICATION PHYSICAL 1/0");
    assert!(e.contains("ahead of the WAL flush position"), "{e}");
    let e = err(REPL, "strata", "START_REPLICATION 0/0 TIMELINE 2");
    assert!(e.contains("timeline 2"), "{e}");
    let e = err(REPL, "bob", "IDENTIFY_SYSTEM");
    assert!(e.contains("must be superuser or replication role"), "{e}");
    let e = err("dbname=x replication=database", "strata", "IDENTIFY_SYSTEM");
    assert!(e.contains("logical replication is not supported"), "{e}");
    // The server goes on serving SQL.
    assert_eq!(s.psql_ok("postgres", &["-c", "select 1"]).trim(), "1");
}

#[test]
fn pg_receivewal_streams_wal_identical_to_pg_wal() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("d");
    init_small_segments(&data);
    let s = Server::start(&data, &["max_wal_senders=1"]);
    let out = dir.path().join("received");
    std::fs::create_dir(&out).unwrap();
    let mut rx = receivewal(s.port, &out, &[]);
    write_three_segments(&s);
    wait_for_segments(&out, 2);
    // The one sender slot is taken.
    let e = psql_command(s.port, "strata", REPL, None)
        .args(["-c", "IDENTIFY_SYSTEM"])
        .output()
        .unwrap();
    let e = String::from_utf8_lossy(&e.stderr);
    assert!(e.contains("exceeds max_wal_senders (currently 1)"), "{e}");
    // pg_receivewal ends on SIGINT after writing what it has.
    let _ = Command::new("kill")
        .args(["-INT", &rx.id().to_string()])
        .status();
    let status = rx.wait().unwrap();
    let mut log = String::new();
    std::io::Read::read_to_string(rx.stderr.as_mut().unwrap(), &mut log).unwrap();
    assert!(status.success(), "{log}");
    assert!(
        log.contains("starting log streaming at 0/100000 (timeline 1)"),
        "{log}"
    );
    let mut compared = 0;
    for e in std::fs::read_dir(&out).unwrap() {
        let path = e.unwrap().path();
        let name = path.file_name().unwrap().to_string_lossy().into_owned();
        let got = std::fs::read(&path).unwrap();
        let ours =
            std::fs::read(data.join("pg_wal").join(name.trim_end_matches(".partial"))).unwrap();
        // A finished segment is whole; a partial one a prefix of ours (zero-padded).
        let upto = if name.ends_with(".partial") {
            got.iter().rposition(|b| *b != 0).map_or(0, |i| i + 1)
        } else {
            ours.len()
        };
        assert_eq!(got.len(), ours.len(), "{name}");
        assert!(got[..upto] == ours[..upto], "{name} differs from pg_wal's");
        compared += 1;
    }
    assert!(compared >= 3, "{compared} files");
    assert_eq!(
        s.psql_ok("postgres", &["-c", "select count(*) from t"])
            .trim(),
        "40000"
    );
}

fn segments(data: &Path) -> Vec<String> {
    let mut v: Vec<String> = std::fs::read_dir(data.join("pg_wal"))
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    v.sort();
    v
}

#[test]
fn a_slot_holds_wal_until_dropped_and_survives_a_restart() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("d");
    init_small_segments(&data);
    let mut s = Server::start(&data, &[]);
    let made = s.psql_ok(
        REPL,
        &["-c", "CREATE_REPLICATION_SLOT keep PHYSICAL RESERVE_WAL"],
    );
    assert!(made.starts_with("keep|"), "{made}");
    let first = segments(&data)[0].clone();
    let fill = |s: &Server, table: &str| {
        s.psql_ok(
            "postgres",
            &[
                "-c",
                &format!("create table {table} (a int, b text)"),
                "-c",
                &format!("insert into {table} select g, 'some text to fill the log ' || g from generate_series(1, 90000) g"),
                "-c",
                "checkpoint",
            ],
        );
    };
    fill(&s, "t1");
    assert!(segments(&data).len() >= 3, "{:?}", segments(&data));
    assert_eq!(
        segments(&data)[0],
        first,
        "the slot keeps the first segment"
    );
    // Across a restart (the slot's file), the same.
    s.kill9();
    let s = Server::start(&data, &[]);
    let row = s.psql_ok(REPL, &["-c", "READ_REPLICATION_SLOT keep"]);
    assert!(row.starts_with("physical|0/1"), "{row}");
    fill(&s, "t2");
    assert_eq!(segments(&data)[0], first);
    // Dropped, the next checkpoint removes what only the slot held.
    s.psql_ok(REPL, &["-c", "DROP_REPLICATION_SLOT keep"]);
    s.psql_ok("postgres", &["-c", "checkpoint"]);
    assert!(segments(&data)[0] > first, "{:?}", segments(&data));
    let row = s.psql_ok(REPL, &["-c", "READ_REPLICATION_SLOT keep"]);
    assert_eq!(row.trim(), "||");
}

#[test]
fn pg_receivewal_creates_and_streams_through_a_slot() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("d");
    init_small_segments(&data);
    let s = Server::start(&data, &[]);
    let create = |expect_ok: bool| {
        let out = Command::new(RECEIVEWAL)
            .args([
                "-h",
                "127.0.0.1",
                "-U",
                "strata",
                "--create-slot",
                "--slot=arch",
                "-p",
            ])
            .arg(s.port.to_string())
            .output()
            .unwrap();
        assert_eq!(
            out.status.success(),
            expect_ok,
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8_lossy(&out.stderr).into_owned()
    };
    create(true);
    assert!(create(false).contains("replication slot \"arch\" already exists"));
    assert_eq!(
        s.psql_ok(REPL, &["-c", "READ_REPLICATION_SLOT arch"])
            .trim(),
        "physical||"
    );
    let out = dir.path().join("received");
    std::fs::create_dir(&out).unwrap();
    let mut rx = receivewal(s.port, &out, &["--slot=arch", "--status-interval=1"]);
    write_three_segments(&s);
    wait_for_segments(&out, 2);
    let e = psql_command(s.port, "strata", REPL, None)
        .args(["-c", "DROP_REPLICATION_SLOT arch"])
        .output()
        .unwrap();
    assert!(
        String::from_utf8_lossy(&e.stderr).contains("is active"),
        "{e:?}"
    );
    // The slot follows what pg_receivewal reports flushed (every second).
    let t0 = Instant::now();
    loop {
        let row = s.psql_ok(REPL, &["-c", "READ_REPLICATION_SLOT arch"]);
        let lsn = row.split('|').nth(1).unwrap_or("").to_string();
        if lsn.as_str() >= "0/300000" && lsn.len() == "0/300000".len() {
            break;
        }
        assert!(t0.elapsed() < Duration::from_secs(30), "slot at {row}");
        std::thread::sleep(Duration::from_millis(200));
    }
    let _ = Command::new("kill")
        .args(["-INT", &rx.id().to_string()])
        .status();
    assert!(rx.wait().unwrap().success());
    // Released with its client: it can be dropped now.
    let t0 = Instant::now();
    while psql_command(s.port, "strata", REPL, None)
        .args(["-c", "DROP_REPLICATION_SLOT arch"])
        .output()
        .is_ok_and(|o| !o.status.success())
    {
        assert!(t0.elapsed() < Duration::from_secs(10), "slot still active");
        std::thread::sleep(Duration::from_millis(100));
    }
}
