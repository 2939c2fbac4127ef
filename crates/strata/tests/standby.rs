//! Property: a copy made by PostgreSQL 15's `pg_basebackup -R -X stream` of a running
//! Strata starts as a streaming hot standby: it replays everything the primary commits
//! (rows, CREATE/DROP TABLE, CREATE DATABASE) until its tables and relation files equal
//! the primary's, serves read-only sessions meanwhile (25006 for writes, 55000 for WAL
//! functions, `pg_is_in_recovery()` true), keeps streaming across a SIGKILL of the
//! standby and of the primary with no committed row lost, and takes restartpoints from
//! which it restarts.

mod common;
use common::*;
use std::collections::BTreeSet;
use std::path::Path;
use std::process::{Command, Output};
use std::time::{Duration, Instant};

const BASEBACKUP: &str = "/usr/lib/postgresql/15/bin/pg_basebackup";

fn pg_basebackup_r(port: u16, dir: &Path) -> Output {
    pg_basebackup_r_as(port, dir, None)
}

/// `pg_basebackup -R` with PGPASSWORD `password`: -R writes it into primary_conninfo.
fn pg_basebackup_r_as(port: u16, dir: &Path, password: Option<&str>) -> Output {
    let mut cmd = Command::new(BASEBACKUP);
    cmd.env_remove("PGPASSWORD");
    if let Some(p) = password {
        cmd.env("PGPASSWORD", p);
    }
    cmd.args([
        "-h",
        "127.0.0.1",
        "-U",
        "strata",
        "-X",
        "stream",
        "-c",
        "fast",
        "-R",
    ])
    .args(["--no-manifest", "-p", &port.to_string(), "-D"])
    .arg(dir)
    .output()
    .expect("pg_basebackup (apt-get install -y postgresql-15)")
}

fn have_basebackup() -> bool {
    if Path::new(BASEBACKUP).exists() {
        return true;
    }
    eprintln!("skipped: {BASEBACKUP} is not installed (apt-get install -y postgresql-15)");
    false
}

fn one(s: &Server, db: &str, sql: &str) -> String {
    s.psql_ok(db, &["-XAtc", sql]).trim().to_string()
}

/// Runs `sql` in postgres as `user` with `password`; its trimmed stdout, or on failure
/// `ERR: ` and psql's stderr.
fn as_user(s: &Server, user: &str, password: &str, sql: &str) -> String {
    let out = s.psql(user, &["-c", sql], Some(password));
    if out.status.success() {
        String::from_utf8_lossy(&out.stdout).trim().to_string()
    } else {
        format!("ERR: {}", String::from_utf8_lossy(&out.stderr).trim())
    }
}

fn lsn(s: &str) -> u64 {
    let (hi, lo) = s
        .split_once('/')
        .unwrap_or_else(|| panic!("not an LSN: {s:?}"));
    (u64::from_str_radix(hi, 16).unwrap() << 32) | u64::from_str_radix(lo, 16).unwrap()
}

/// Waits until the standby has replayed everything the primary has written so far.
fn catch_up(primary: &Server, standby: &Server) {
    catch_up_as(primary, standby, |s, sql| one(s, "postgres", sql))
}

/// catch_up, asking each server through `ask`.
fn catch_up_as(primary: &Server, standby: &Server, ask: impl Fn(&Server, &str) -> String) {
    let target = lsn(&ask(primary, "select pg_current_wal_lsn()"));
    let t0 = Instant::now();
    loop {
        let at = lsn(&ask(standby, "select pg_last_wal_replay_lsn()"));
        if at >= target {
            return;
        }
        assert!(
            t0.elapsed() < Duration::from_secs(60),
            "standby stuck at {at:X}, primary at {target:X}:\n{}",
            standby.log_text()
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Relation files (name relative to base/) of the cluster, user relations only.
fn relation_files(data: &Path) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    for db in std::fs::read_dir(data.join("base")).unwrap().flatten() {
        for f in std::fs::read_dir(db.path()).unwrap().flatten() {
            let name = f.file_name().to_string_lossy().into_owned();
            let num: String = name.chars().take_while(|c| c.is_ascii_digit()).collect();
            if num.parse::<u64>().is_ok_and(|n| n >= 16384) {
                out.insert(format!("{}/{name}", db.file_name().to_string_lossy()));
            }
        }
    }
    out
}

/// `strata stop -D data`, which waits for the server to end.
fn stop(data: &Path) {
    let out = Command::new(env!("CARGO_BIN_EXE_strata"))
        .args(["stop", "-D"])
        .arg(data)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// A sequence: its Sequence/LOG records are replayed (the standby shows the value
/// logged ahead, as PostgreSQL's does), and it refuses nextval (25006).
fn sequence_replays(primary: &Server, standby: &Server) {
    primary.psql_ok(
        "postgres",
        &[
            "-c",
            "create sequence sq",
            "-c",
            "select nextval('sq'), nextval('sq')",
        ],
    );
    catch_up(primary, standby);
    let q = "select last_value, is_called from sq";
    assert_eq!(one(standby, "postgres", q), "33|t");
    let out = standby.psql_db("postgres", &["-c", "select nextval('sq')"]);
    assert!(
        sqlstate_of(&out).contains("read-only"),
        "{}",
        sqlstate_of(&out)
    );
}

fn sqlstate_of(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

/// A primary and a standby made from it by `pg_basebackup -R`.
fn pair(dir: &Path) -> (Server, Server) {
    let data = dir.join("primary");
    let copy = dir.join("standby");
    init_small_segments(&data);
    let primary = Server::start(&data, &[]);
    primary.psql_ok(
        "postgres",
        &["-c", "create table t (a int, b text); insert into t select g, 'row ' || g from generate_series(1, 1000) g; create table gone (a int); insert into gone values (1)"],
    );
    let out = pg_basebackup_r(primary.port, &copy);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(copy.join("standby.signal").exists());
    let auto = std::fs::read_to_string(copy.join("postgresql.auto.conf")).unwrap();
    assert!(auto.contains("primary_conninfo"), "{auto}");
    let standby = Server::start(
        &copy,
        &[
            "wal_receiver_status_interval=1s",
            "wal_retrieve_retry_interval=100ms",
        ],
    );
    (primary, standby)
}

#[test]
fn basebackup_r_makes_a_streaming_hot_standby() {
    if !have_basebackup() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let (primary, standby) = pair(dir.path());
    primary.psql_ok(
        "postgres",
        &["-c", "insert into t select g, 'more' from generate_series(1001, 3000) g; create table u (x bigint); insert into u values (7), (8); drop table gone; delete from t where a <= 10"],
    );
    primary.psql_ok("postgres", &["-c", "create database db2"]);
    primary.psql_ok(
        "db2",
        &[
            "-c",
            "create table w (a int); insert into w select g from generate_series(1, 500) g",
        ],
    );
    catch_up(&primary, &standby);
    let q = "select count(*), sum(a), min(a), max(a) from t";
    assert_eq!(one(&standby, "postgres", q), one(&primary, "postgres", q));
    assert_eq!(one(&standby, "postgres", q), "2990|4501445|11|3000");
    assert_eq!(one(&standby, "postgres", "select sum(x) from u"), "15");
    assert_eq!(
        one(&standby, "db2", "select count(*), sum(a) from w"),
        "500|125250"
    );
    let gone = standby.psql_db("postgres", &["-c", "select * from gone"]);
    assert!(
        sqlstate_of(&gone).contains("does not exist"),
        "{}",
        sqlstate_of(&gone)
    );
    assert_eq!(one(&standby, "postgres", "select pg_is_in_recovery()"), "t");
    assert_eq!(one(&primary, "postgres", "select pg_is_in_recovery()"), "f");
    let ts = one(
        &standby,
        "postgres",
        "select pg_last_xact_replay_timestamp()",
    );
    assert!(ts.starts_with("20") && ts.ends_with("+00"), "{ts}");
    // A timestamptz, as PostgreSQL's: it compares with now() and its own text.
    let q = format!(
        "select pg_last_xact_replay_timestamp() <= now(), pg_last_xact_replay_timestamp() = '{ts}'::timestamptz"
    );
    assert_eq!(one(&standby, "postgres", &q), "t|t");
    assert_eq!(
        one(
            &primary,
            "postgres",
            "select pg_last_xact_replay_timestamp() is null"
        ),
        "t"
    );
    let recv = lsn(&one(
        &standby,
        "postgres",
        "select pg_last_wal_receive_lsn()",
    ));
    let replay = lsn(&one(
        &standby,
        "postgres",
        "select pg_last_wal_replay_lsn()",
    ));
    assert!(recv >= replay, "received {recv:X} < replayed {replay:X}");
    check_read_only(&standby);
    // The files: the standby holds exactly the primary's relations.
    primary.psql_ok("postgres", &["-c", "checkpoint"]);
    catch_up(&primary, &standby);
    // Dropped relations' files go by the next checkpoint (restartpoint) at the latest.
    primary.psql_ok("postgres", &["-c", "checkpoint"]);
    standby.psql_ok("postgres", &["-c", "checkpoint"]);
    let t0 = Instant::now();
    while !standby.log_text().contains("restartpoint complete") {
        assert!(
            t0.elapsed() < Duration::from_secs(30),
            "{}",
            standby.log_text()
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    assert_eq!(
        relation_files(&dir.path().join("standby")),
        relation_files(&dir.path().join("primary"))
    );
    let log = standby.log_text();
    assert!(log.contains("entering standby mode"), "{log}");
    assert!(log.contains("started streaming WAL from primary"), "{log}");
    assert!(log.contains("consistent recovery state reached"), "{log}");
}

/// Inserts `batches` committed batches of 100 rows tagged `from..from+batches`.
fn insert_batches(s: &Server, from: i64, batches: i64) {
    for b in from..from + batches {
        s.psql_ok(
            "postgres",
            &[
                "-c",
                &format!(
                    "insert into t select {b} * 100000 + g, 'b' from generate_series(1, 100) g"
                ),
            ],
        );
    }
}

#[test]
fn streaming_survives_sigkill_of_standby_and_primary() {
    if !have_basebackup() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let (primary, mut standby) = pair(dir.path());
    let copy = dir.path().join("standby");
    insert_batches(&primary, 1, 20);
    standby.kill9();
    insert_batches(&primary, 21, 20);
    let standby = Server::start(&copy, &["wal_receiver_status_interval=1s"]);
    catch_up(&primary, &standby);
    let q = "select count(*), sum(a) from t";
    assert_eq!(one(&standby, "postgres", q), one(&primary, "postgres", q));
    // The primary dies mid-stream and comes back on the same port: the standby
    // reconnects and goes on.
    let port = primary.port;
    let pdata = dir.path().join("primary");
    std::fs::write(
        pdata.join("strata.conf"),
        format!("port = {port}\nlisten_addresses = '127.0.0.1'\n"),
    )
    .unwrap();
    let mut primary = primary;
    primary.kill9();
    let primary = Server::start_from_conf(&pdata, port);
    insert_batches(&primary, 41, 10);
    catch_up(&primary, &standby);
    assert_eq!(one(&standby, "postgres", q), one(&primary, "postgres", q));
    assert_eq!(one(&standby, "postgres", "select count(*) from t"), "6000");
    let log = standby.log_text();
    assert!(log.contains("started streaming WAL from primary"), "{log}");
    // ALTER TABLE ... RENAME is a catalog change like any other: replayed, and the
    // standby's sessions see the new names.
    primary.psql_ok(
        "postgres",
        &[
            "-c",
            "alter table t rename to t2",
            "-c",
            "alter table t2 rename column b to label",
        ],
    );
    catch_up(&primary, &standby);
    let q2 = "select count(*) from t2 where label = 'b'";
    assert_eq!(one(&standby, "postgres", q2), one(&primary, "postgres", q2));
    let gone = standby.psql_db("postgres", &["-c", "select * from t"]);
    assert!(String::from_utf8_lossy(&gone.stderr).contains("does not exist"));
    // ADD and DROP COLUMN rewrite the table in their transaction: replayed, and after
    // a SIGKILL of the primary the committed schema and rows are there.
    primary.psql_ok(
        "postgres",
        &[
            "-c",
            "alter table t2 add column n int not null default 5",
            "-c",
            "alter table t2 drop column label",
        ],
    );
    catch_up(&primary, &standby);
    let q3 = "select count(*), sum(a), sum(n) from t2";
    assert_eq!(one(&standby, "postgres", q3), one(&primary, "postgres", q3));
    assert!(one(&standby, "postgres", q3).ends_with("|30000"));
    // An index: its build, its entries, VACUUM's and the writer's removals are
    // replayed; the standby reads through it and its copy checks against the table.
    primary.psql_ok(
        "postgres",
        &[
            "-c",
            "create index t2_a on t2 (a)",
            "-c",
            "update t2 set n = n + 1 where a < 100",
            "-c",
            "update t2 set n = n + 1 where a < 100",
            "-c",
            "vacuum t2",
        ],
    );
    catch_up(&primary, &standby);
    let q4 = "select count(*), sum(n) from t2 where a >= 10 and a < 90";
    assert_eq!(one(&standby, "postgres", q4), one(&primary, "postgres", q4));
    standby.psql_ok("postgres", &["-c", "select bt_index_check('t2_a', true)"]);
    sequence_replays(&primary, &standby);
    views_replay(&primary, &standby);
    foreign_keys_replay(&primary, &standby);
    let mut primary = primary;
    primary.kill9();
    let primary = Server::start_from_conf(&pdata, port);
    assert_eq!(one(&primary, "postgres", q3), one(&standby, "postgres", q3));
    assert_eq!(one(&primary, "postgres", "select nextval('sq')"), "34");
    // The views' catalog rows survived the SIGKILL: the committed ones read, the
    // dropped one is gone, and their dependencies still hold.
    let qv = "select count(*), sum(a) from big";
    assert_eq!(one(&primary, "postgres", qv), one(&standby, "postgres", qv));
    let kept = primary.psql_db("postgres", &["-c", "drop table t2"]);
    assert!(sqlstate_of(&kept).contains("other objects depend on it"));
    let gone = primary.psql_db("postgres", &["-c", "select * from small"]);
    assert!(sqlstate_of(&gone).contains("does not exist"));
    foreign_keys_survive(&primary);
}

/// The FOREIGN KEY's catalog row survived the SIGKILL too (catalog rule 11):
/// still checked, still cascading.
fn foreign_keys_survive(primary: &Server) {
    let bad = primary.psql_db("postgres", &["-c", "insert into fc values (3)"]);
    assert!(sqlstate_of(&bad).contains("violates foreign key constraint \"fc_pid_fkey\""));
    primary.psql_ok("postgres", &["-c", "delete from fp where id = 2"]);
    assert_eq!(one(primary, "postgres", FC_SUM), "1|1");
}

const FC_SUM: &str = "select count(*), sum(pid) from fc";

/// A FOREIGN KEY (catalog rule 11) is a catalog row: replayed, and its cascade's
/// changes are ordinary row changes.
fn foreign_keys_replay(primary: &Server, standby: &Server) {
    primary.psql_ok(
        "postgres",
        &[
            "-c",
            "create table fp (id int primary key); create table fc (pid int references fp on delete cascade)",
            "-c",
            "insert into fp values (1), (2), (3); insert into fc values (1), (2), (2), (3)",
            "-c",
            "delete from fp where id = 3",
        ],
    );
    catch_up(primary, standby);
    assert_eq!(one(standby, "postgres", FC_SUM), "3|5");
}

/// Views (issue 28 item 8) are catalog rows: CREATE, OR REPLACE and DROP are
/// replayed, and the standby reads through them.
fn views_replay(primary: &Server, standby: &Server) {
    primary.psql_ok(
        "postgres",
        &[
            "-c",
            "create view big as select a from t2 where a > 100",
            "-c",
            "create view small as select a, n from t2 where a < 50",
            "-c",
            "create or replace view big as select a, n from t2 where a > 2900",
            "-c",
            "drop view small",
        ],
    );
    catch_up(primary, standby);
    let qv = "select count(*), sum(a) from big";
    assert_eq!(one(standby, "postgres", qv), one(primary, "postgres", qv));
    let qn = "select count(*), min(a) from big where n > 0";
    assert_eq!(one(standby, "postgres", qn), one(primary, "postgres", qn));
    let n = one(standby, "postgres", qn);
    assert!(!n.starts_with("0|") && n.contains('|'), "{n}");
    let gone = standby.psql_db("postgres", &["-c", "select * from small"]);
    assert!(sqlstate_of(&gone).contains("does not exist"));
}

#[test]
fn a_standby_restarts_from_its_restartpoint() {
    if !have_basebackup() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let (primary, standby) = pair(dir.path());
    let copy = dir.path().join("standby");
    insert_batches(&primary, 1, 5);
    primary.psql_ok("postgres", &["-c", "checkpoint"]);
    insert_batches(&primary, 6, 5);
    catch_up(&primary, &standby);
    // Dropped relations' files go by the next checkpoint (restartpoint) at the latest.
    primary.psql_ok("postgres", &["-c", "checkpoint"]);
    standby.psql_ok("postgres", &["-c", "checkpoint"]);
    let t0 = Instant::now();
    while !standby.log_text().contains("restartpoint complete") {
        assert!(
            t0.elapsed() < Duration::from_secs(30),
            "{}",
            standby.log_text()
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    // The backup is over: its label is retired once a restartpoint passes its end.
    assert!(copy.join("backup_label.old").exists());
    assert!(!copy.join("backup_label").exists());
    stop(&copy);
    drop(standby);
    insert_batches(&primary, 11, 5);
    let standby = Server::start(&copy, &[]);
    catch_up(&primary, &standby);
    assert_eq!(one(&standby, "postgres", "select count(*) from t"), "2500");
    let log = standby.log_text();
    let second = log.rsplit("entering standby mode").next().unwrap();
    assert!(
        second.contains("consistent recovery state reached"),
        "{log}"
    );
    assert!(!second.contains("starting backup recovery"), "{log}");
}

#[test]
fn remote_apply_commits_are_visible_on_the_standby_at_once() {
    if !have_basebackup() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let (primary, standby) = pair(dir.path());
    // The primary comes back on its port with every standby synchronous (set before
    // a standby exists, it would make every commit wait, as in PostgreSQL).
    let (port, pdata) = (primary.port, dir.path().join("primary"));
    std::fs::write(
        pdata.join("strata.conf"),
        format!("port = {port}\nlisten_addresses = '127.0.0.1'\nsynchronous_standby_names = '*'\n"),
    )
    .unwrap();
    stop(&pdata);
    drop(primary);
    let primary = Server::start_from_conf(&pdata, port);
    let t0 = Instant::now();
    while one(
        &primary,
        "postgres",
        "select count(*) from pg_stat_replication",
    ) != "1"
    {
        assert!(
            t0.elapsed() < Duration::from_secs(30),
            "{}",
            standby.log_text()
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    let rt = tokio::runtime::Runtime::new().unwrap();
    rt.block_on(async {
        let p = connect_to(primary.port, "strata", "postgres", None)
            .await
            .unwrap();
        let s = connect_to(standby.port, "strata", "postgres", None)
            .await
            .unwrap();
        p.batch_execute("set synchronous_commit = remote_apply")
            .await
            .unwrap();
        for i in 0..30 {
            p.batch_execute(&format!("insert into t values ({}, 'sync')", 100_000 + i))
                .await
                .unwrap();
            // remote_apply: the commit returned only once the standby replayed it.
            let rows = s
                .query_one("select count(*) from t where b = 'sync'", &[])
                .await
                .unwrap();
            assert_eq!(
                rows.get::<_, i64>(0),
                i64::from(i + 1),
                "commit {i} not applied"
            );
        }
    });
    check_replication_views(&primary, &standby, port);
    assert_eq!(
        one(&primary, "postgres", "show synchronous_standby_names"),
        "*"
    );
    let conninfo = one(&standby, "postgres", "show primary_conninfo");
    assert!(conninfo.contains(&format!("port={port}")), "{conninfo}");
    let mut standby = standby;
    standby.kill9();
    commit_without_its_standby_warns(&primary);
}

/// pg_stat_replication on the primary, pg_stat_wal_receiver and strata_stat_replay
/// on the standby.
fn check_replication_views(primary: &Server, standby: &Server, port: u16) {
    let q = "select application_name, state, sync_state, sync_priority, replay_lsn is not null, replay_lag is not null from pg_stat_replication";
    assert_eq!(
        one(primary, "postgres", q),
        "walreceiver|streaming|sync|1|t|t"
    );
    let q =
        "select status, sender_port > 0, receive_start_lsn is not null from pg_stat_wal_receiver";
    assert_eq!(one(standby, "postgres", q), "streaming|t|t");
    let conninfo = one(
        standby,
        "postgres",
        "select conninfo from pg_stat_wal_receiver",
    );
    assert!(conninfo.contains(&format!("port={port}")), "{conninfo}");
    let q = "select records > 0 from strata_stat_replay where resource_manager = 'Heap' and record_type = 'INSERT'";
    assert_eq!(one(standby, "postgres", q), "t");
    assert_eq!(
        one(
            standby,
            "postgres",
            "select count(*) from pg_stat_replication"
        ),
        "0"
    );
}

/// With the standby gone, a commit waits; a timeout cancels the wait with
/// PostgreSQL's warning, and the transaction stays committed.
fn commit_without_its_standby_warns(primary: &Server) {
    // With the standby gone, a commit waits; a timeout cancels the wait with
    // PostgreSQL's warning, and the transaction stays committed.
    let out = psql_command(primary.port, "strata", "postgres", None)
        .args([
            "-X",
            "-c",
            "set statement_timeout = '300ms'",
            "-c",
            "set synchronous_commit = remote_apply",
        ])
        .args(["-c", "insert into t values (-1, 'local')"])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{err}");
    assert!(
        err.contains("canceling wait for synchronous replication"),
        "{err}"
    );
    assert!(err.contains("already committed locally"), "{err}");
    assert_eq!(
        one(primary, "postgres", "select count(*) from t where a = -1"),
        "1"
    );
    // synchronous_commit = local does not wait.
    primary.psql_ok(
        "postgres",
        &[
            "-c",
            "set synchronous_commit = local",
            "-c",
            "insert into t values (-2, 'local')",
        ],
    );
}

/// Starts `select * from <table>` on `c` and reads one row, then stops reading: the
/// standby's scan stays open, its snapshot held, while the client does not read.
async fn stalled_scan(
    c: &tokio_postgres::Client,
    table: &str,
) -> std::pin::Pin<Box<tokio_postgres::RowStream>> {
    let rows = c
        .query_raw(&format!("select * from {table}"), std::iter::empty::<i64>())
        .await
        .unwrap();
    let mut rows = Box::pin(rows);
    futures::StreamExt::next(&mut rows).await.unwrap().unwrap();
    rows
}

/// Reads the rest of a stalled scan: its error's SQLSTATE, if it failed.
async fn finish(mut rows: std::pin::Pin<Box<tokio_postgres::RowStream>>) -> Option<String> {
    while let Some(r) = futures::StreamExt::next(&mut rows).await {
        if let Err(e) = r {
            return Some(code_of(&e));
        }
    }
    None
}

/// [`pair`], the standby restarted with `settings`, then a 300,000-row table `big`
/// on the primary that the standby has replayed.
fn pair_with_big_table(dir: &Path, settings: &[&str]) -> (Server, Server) {
    let (primary, standby) = pair(dir);
    let copy = dir.join("standby");
    stop(&copy);
    drop(standby);
    let standby = Server::start(&copy, settings);
    primary.psql_ok(
        "postgres",
        &["-c", "create table big (a int, b text); insert into big select g, 'some padding text for the row' from generate_series(1, 300000) g"],
    );
    catch_up(&primary, &standby);
    (primary, standby)
}

#[test]
fn replay_waits_for_conflicting_standby_queries_then_cancels_them() {
    if !have_basebackup() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let (primary, standby) = pair_with_big_table(dir.path(), &["max_standby_streaming_delay=1s"]);
    primary.psql_ok(
        "postgres",
        &[
            "-c",
            "create table big2 (a int, b text); insert into big2 select a, b from big",
        ],
    );
    catch_up(&primary, &standby);
    let rt = tokio::runtime::Runtime::new().unwrap();
    rt.block_on(async {
        // A scan whose snapshot predates a DELETE: VACUUM's prune of those rows
        // conflicts with it.
        let s = connect_to(standby.port, "strata", "postgres", None)
            .await
            .unwrap();
        let rows = stalled_scan(&s, "big").await;
        primary.psql_ok(
            "postgres",
            &[
                "-c",
                "delete from big where a <= 100000",
                "-c",
                "vacuum big",
            ],
        );
        let t0 = Instant::now();
        catch_up(&primary, &standby);
        let waited = t0.elapsed();
        assert!(
            waited >= Duration::from_millis(900),
            "replay did not wait: {waited:?}"
        );
        assert!(
            waited < Duration::from_secs(20),
            "replay stalled: {waited:?}"
        );
        assert_eq!(finish(rows).await.as_deref(), Some("40001"));
        // A scan of a table the primary drops: the drop waits, then the scan fails.
        let s2 = connect_to(standby.port, "strata", "postgres", None)
            .await
            .unwrap();
        let rows = stalled_scan(&s2, "big2").await;
        primary.psql_ok("postgres", &["-c", "drop table big2"]);
        let t0 = Instant::now();
        catch_up(&primary, &standby);
        let waited = t0.elapsed();
        let end = finish(rows).await;
        assert!(
            waited >= Duration::from_millis(900),
            "replay did not wait: {waited:?} {end:?}\n{}",
            standby.log_text()
        );
        assert_eq!(end.as_deref(), Some("40001"));
    });
    // Queries that start after the replay see the new state.
    assert_eq!(
        one(&standby, "postgres", "select count(*) from big"),
        "200000"
    );
    let log = standby.log_text();
    assert!(log.contains("canceling queries on the standby"), "{log}");
}

/// Standby rule 9 with WAL from the archive: a standby whose primary cannot be reached
/// restores every segment, and its conflicts wait `max_standby_archive_delay` (0 here:
/// cancel at once), not `max_standby_streaming_delay` (-1 here: forever).
#[test]
fn archived_wal_conflicts_wait_max_standby_archive_delay() {
    if !have_basebackup() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let arch = dir.path().join("arch");
    std::fs::create_dir(&arch).unwrap();
    let (dp, ds) = (dir.path().join("primary"), dir.path().join("standby"));
    let (primary, standby) = pair_with_big_table(dir.path(), &[]);
    stop(&dp);
    drop(primary);
    stop(&ds);
    drop(standby);
    let cmd = format!("archive_command=cp %p {}/%f", arch.display());
    let primary = Server::start(&dp, &["archive_mode=on", &cmd]);
    primary.psql_ok(
        "postgres",
        &[
            "-c",
            "create table big2 (a int, b text); insert into big2 select a, b from big",
        ],
    );
    one(&primary, "postgres", "select pg_switch_wal()");
    repoint(&ds, free_port()); // nothing listens there: every segment is restored
    let restore = format!("restore_command=cp {}/%f %p", arch.display());
    let standby = Server::start(
        &ds,
        &[
            &restore,
            "max_standby_archive_delay=0",
            "max_standby_streaming_delay=-1",
        ],
    );
    let count = "select count(*) from big2";
    let t0 = Instant::now();
    while !standby
        .psql_db("postgres", &["-Atc", count])
        .status
        .success()
    {
        assert!(
            t0.elapsed() < Duration::from_secs(30),
            "big2 not restored on the standby:\n{}",
            standby.log_text()
        );
        std::thread::sleep(Duration::from_millis(100));
    }
    let rt = tokio::runtime::Runtime::new().unwrap();
    rt.block_on(async {
        let s = connect_to(standby.port, "strata", "postgres", None)
            .await
            .unwrap();
        let rows = stalled_scan(&s, "big2").await;
        primary.psql_ok("postgres", &["-c", "drop table big2"]);
        one(&primary, "postgres", "select pg_switch_wal()");
        // Replay does not wait for the open scan (it would forever with the
        // streaming delay) ...
        wait_for("the drop replayed", || {
            !standby
                .psql_db("postgres", &["-Atc", count])
                .status
                .success()
        });
        // ... and the scan fails at its next batch.
        assert_eq!(finish(rows).await.as_deref(), Some("40001"));
    });
    let log = standby.log_text();
    assert!(log.contains("restored log file"), "{log}");
    assert!(
        log.contains("canceling queries on the standby: replay must drop the relations they read"),
        "{log}"
    );
}

/// Points a stopped standby at the primary on `port` (its postgresql.auto.conf).
fn repoint(standby: &Path, port: u16) {
    let conf = standby.join("postgresql.auto.conf");
    let text = std::fs::read_to_string(&conf).unwrap();
    let kept: Vec<&str> = text
        .lines()
        .filter(|l| !l.starts_with("primary_conninfo"))
        .collect();
    let line = format!("primary_conninfo = 'host=127.0.0.1 port={port} user=strata'");
    std::fs::write(&conf, format!("{}\n{line}\n", kept.join("\n"))).unwrap();
}

fn identify_system(port: u16) -> String {
    let out = Command::new(PSQL)
        .arg(format!(
            "host=127.0.0.1 port={port} user=strata dbname=replication replication=true"
        ))
        .args(["-XAtc", "IDENTIFY_SYSTEM"])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).trim().to_string()
}

#[test]
fn promotion_starts_a_timeline_that_another_standby_follows() {
    if !have_basebackup() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let (primary, s1) = pair(dir.path());
    let (d1, d2) = (dir.path().join("standby"), dir.path().join("standby2"));
    let out = pg_basebackup_r(primary.port, &d2);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let s2 = Server::start(&d2, &["wal_retrieve_retry_interval=100ms"]);
    insert_batches(&primary, 1, 5);
    catch_up(&primary, &s1);
    catch_up(&primary, &s2);
    let err = primary.psql_db("postgres", &["-c", "select pg_promote()"]);
    assert!(
        sqlstate_of(&err).contains("recovery is not in progress"),
        "{}",
        sqlstate_of(&err)
    );
    stop(&dir.path().join("primary"));
    drop(primary);
    // strata promote: S1 leaves recovery on timeline 2.
    let out = Command::new(env!("CARGO_BIN_EXE_strata"))
        .args(["promote", "-D"])
        .arg(&d1)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(one(&s1, "postgres", "select pg_is_in_recovery()"), "f");
    assert!(!d1.join("standby.signal").exists());
    let history = std::fs::read_to_string(d1.join("pg_wal/00000002.history")).unwrap();
    assert!(history.starts_with("1\t0/"), "{history}");
    assert!(
        identify_system(s1.port).contains("|2|"),
        "{}",
        identify_system(s1.port)
    );
    s1.psql_ok(
        "postgres",
        &[
            "-c",
            "insert into t select g, 'after' from generate_series(1, 300) g",
        ],
    );
    // S2 follows S1 onto timeline 2.
    stop(&d2);
    drop(s2);
    repoint(&d2, s1.port);
    let s2 = Server::start(&d2, &["wal_retrieve_retry_interval=100ms"]);
    catch_up(&s1, &s2);
    let q = "select count(*), sum(a) from t";
    assert_eq!(one(&s2, "postgres", q), one(&s1, "postgres", q));
    assert_eq!(
        one(&s2, "postgres", "select count(*) from t where b = 'after'"),
        "300"
    );
    assert!(
        s2.log_text().contains("new target timeline is 2"),
        "{}",
        s2.log_text()
    );
    // The new primary survives a SIGKILL on its timeline.
    let mut s1 = s1;
    s1.kill9();
    drop(s1);
    let s1 = Server::start(&d1, &[]);
    assert!(identify_system(s1.port).contains("|2|"));
    assert_eq!(
        one(&s1, "postgres", "select count(*) from t where b = 'after'"),
        "300"
    );
    // pg_promote() on S2: timeline 3, whose history holds both switches.
    assert_eq!(one(&s2, "postgres", "select pg_promote()"), "t");
    s2.psql_ok("postgres", &["-c", "insert into t values (0, 'on 3')"]);
    let h3 = std::fs::read_to_string(d2.join("pg_wal/00000003.history")).unwrap();
    assert_eq!(h3.lines().count(), 2, "{h3}");
    assert!(h3.lines().nth(1).unwrap().starts_with("2\t"), "{h3}");
}

/// The names in a directory that start with `prefix`, sorted.
fn names_with(dir: &Path, prefix: &str) -> Vec<String> {
    let mut v: Vec<String> = std::fs::read_dir(dir)
        .map(|d| {
            d.map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
                .filter(|n| n.starts_with(prefix))
                .collect()
        })
        .unwrap_or_default();
    v.sort();
    v
}

fn wait_for(what: &str, mut f: impl FnMut() -> bool) {
    let t0 = Instant::now();
    while !f() {
        assert!(t0.elapsed() < Duration::from_secs(30), "timed out: {what}");
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// WAL rule 11: a promoted standby writes its timeline's own segment files and, with
/// `archive_mode = on`, archives them and its history into the archive its old primary
/// used, beside the old timeline's segments and without touching them.
#[test]
fn a_promoted_standby_archives_its_own_timeline_beside_the_old_one() {
    if !have_basebackup() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let arch = dir.path().join("arch");
    std::fs::create_dir(&arch).unwrap();
    let cmd = format!(
        "archive_command=test ! -f {0}/%f && cp %p {0}/%f",
        arch.display()
    );
    let (primary, standby) = pair(dir.path());
    let (dp, ds) = (dir.path().join("primary"), dir.path().join("standby"));
    stop(&dp);
    drop(primary);
    let primary = Server::start(&dp, &["archive_mode=on", &cmd]);
    insert_batches(&primary, 1, 3);
    one(&primary, "postgres", "select pg_switch_wal()");
    wait_for("the old timeline archived", || {
        !names_with(&arch, "00000001").is_empty()
    });
    stop(&ds);
    drop(standby);
    repoint(&ds, primary.port);
    let standby = Server::start(&ds, &["archive_mode=on", &cmd]);
    catch_up(&primary, &standby);
    let old: Vec<(String, Vec<u8>)> = names_with(&arch, "00000001")
        .into_iter()
        .map(|n| (n.clone(), std::fs::read(arch.join(&n)).unwrap()))
        .collect();
    stop(&dp);
    drop(primary);
    assert_eq!(one(&standby, "postgres", "select pg_promote()"), "t");
    insert_batches(&standby, 4, 2);
    one(&standby, "postgres", "select pg_switch_wal()");
    wait_for("timeline 2's history and a segment archived", || {
        names_with(&arch, "00000002").len() >= 2
    });
    let tl2 = names_with(&arch, "00000002");
    assert_eq!(tl2[0], "00000002.history", "{tl2:?}");
    assert!(tl2[1].len() == 24, "{tl2:?}");
    assert!(!names_with(&ds.join("pg_wal"), "00000002").is_empty());
    // The old timeline's archive is as its primary left it: no name reused.
    for (n, bytes) in &old {
        assert_eq!(&std::fs::read(arch.join(n)).unwrap(), bytes, "{n} changed");
    }
    assert!(
        !standby.log_text().contains("archive command failed"),
        "{}",
        standby.log_text()
    );
    // The promoted server restarts from its own timeline's files.
    let mut standby = standby;
    standby.kill9();
    drop(standby);
    let s = Server::start(&ds, &[]);
    let q = "select count(*) from t where a > 100000";
    assert_eq!(
        one(&s, "postgres", q),
        "500",
        "three batches on 1, two on 2"
    );
}

/// Read-only: 25006 for every write, 55000 for the WAL position.
fn check_read_only(standby: &Server) {
    for sql in [
        "insert into t values (1, 'x')",
        "create table nope (a int)",
        "delete from t",
        "update t set a = 1",
        "vacuum t",
    ] {
        let out = psql_command(standby.port, "strata", "postgres", None)
            .args(["-X", "-v", "VERBOSITY=verbose", "-c", sql])
            .output()
            .unwrap();
        let err = sqlstate_of(&out);
        assert!(err.contains("25006"), "{sql}: {err}");
    }
    let out = psql_command(standby.port, "strata", "postgres", None)
        .args([
            "-X",
            "-v",
            "VERBOSITY=verbose",
            "-c",
            "select pg_current_wal_lsn()",
        ])
        .output()
        .unwrap();
    assert!(sqlstate_of(&out).contains("55000"), "{}", sqlstate_of(&out));
}

#[test]
fn replaying_drop_database_ends_the_standby_sessions_on_it() {
    if !have_basebackup() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let (primary, standby) = pair(dir.path());
    primary.psql_ok("postgres", &["-c", "create database gone_db"]);
    primary.psql_ok(
        "gone_db",
        &["-c", "create table x (a int); insert into x values (1)"],
    );
    catch_up(&primary, &standby);
    let rt = tokio::runtime::Runtime::new().unwrap();
    rt.block_on(async {
        let s = connect_to(standby.port, "strata", "gone_db", None)
            .await
            .unwrap();
        let other = connect_to(standby.port, "strata", "postgres", None)
            .await
            .unwrap();
        assert_eq!(
            s.query_one("select count(*) from x", &[])
                .await
                .unwrap()
                .get::<_, i64>(0),
            1
        );
        primary.psql_ok("postgres", &["-c", "drop database gone_db"]);
        catch_up(&primary, &standby);
        let e = s
            .query_one("select count(*) from x", &[])
            .await
            .unwrap_err();
        assert_eq!(code_of(&e), "57P04", "{e}");
        // Sessions on other databases go on.
        other.query_one("select 1", &[]).await.unwrap();
    });
    let e = standby.psql_db("gone_db", &["-c", "select 1"]);
    assert!(
        sqlstate_of(&e).contains("does not exist"),
        "{}",
        sqlstate_of(&e)
    );
}

/// Waits until the primary's `pg_stat_replication.backend_xmin` satisfies `ok`.
fn wait_backend_xmin(primary: &Server, ok: impl Fn(i64) -> bool) -> i64 {
    let t0 = Instant::now();
    loop {
        let x = one(
            primary,
            "postgres",
            "select backend_xmin from pg_stat_replication",
        );
        if let Ok(x) = x.parse::<i64>() {
            if ok(x) {
                return x;
            }
        }
        assert!(
            t0.elapsed() < Duration::from_secs(20),
            "backend_xmin {x:?}\n{}",
            primary.log_text()
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[test]
fn hot_standby_feedback_keeps_the_rows_a_standby_query_reads() {
    if !have_basebackup() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let (primary, standby) = pair_with_big_table(
        dir.path(),
        &[
            "max_standby_streaming_delay=1s",
            "hot_standby_feedback=on",
            "wal_receiver_status_interval=100ms",
        ],
    );
    assert_eq!(one(&standby, "postgres", "show hot_standby_feedback"), "on");
    let rt = tokio::runtime::Runtime::new().unwrap();
    rt.block_on(async {
        let s = connect_to(standby.port, "strata", "postgres", None)
            .await
            .unwrap();
        let rows = stalled_scan(&s, "big").await;
        // The scan's horizon reaches the primary; it holds there while the scan runs.
        let held = wait_backend_xmin(&primary, |_| true);
        std::thread::sleep(Duration::from_millis(300));
        assert_eq!(wait_backend_xmin(&primary, |_| true), held);
        primary.psql_ok(
            "postgres",
            &[
                "-c",
                "delete from big where a <= 100000",
                "-c",
                "vacuum big",
            ],
        );
        // VACUUM kept the deleted rows the scan may see: replay has nothing to
        // cancel, so it neither waits out max_standby_streaming_delay nor cancels.
        let t0 = Instant::now();
        catch_up(&primary, &standby);
        let waited = t0.elapsed();
        assert!(
            waited < Duration::from_millis(900),
            "replay waited {waited:?}: VACUUM removed rows the standby needs"
        );
        assert_eq!(finish(rows).await, None, "{}", standby.log_text());
        // The scan is over: the standby's horizon moves on past the DELETE.
        wait_backend_xmin(&primary, |x| x > held);
    });
    assert!(!standby.log_text().contains("canceling queries"));
}

/// Issue 27, A2: roles, passwords and grants are catalog rows written through the WAL.
/// A standby made by `pg_basebackup -R` authenticates with the primary's passwords,
/// follows a rotated password, a new role, a dropped role and GRANT/REVOKE as they
/// replay, and keeps them all after promotion and a SIGKILL of the promoted server.
#[test]
fn roles_passwords_and_grants_replay_and_survive_promotion() {
    if !have_basebackup() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let (data, copy) = (dir.path().join("primary"), dir.path().join("standby"));
    init_small_segments(&data);
    // Every connection authenticates; the standby's copy of the file says the same.
    write_hba(
        &data,
        "host postgres strata 127.0.0.1/32 trust\nhost all all 127.0.0.1/32 scram-sha-256\nhost replication all 127.0.0.1/32 scram-sha-256\n",
    );
    let primary = Server::start(&data, &[]);
    primary.psql_ok("postgres", &["-c", "alter role strata password 'root-pw'"]);
    write_hba(
        &data,
        "host all all 127.0.0.1/32 scram-sha-256\nhost replication all 127.0.0.1/32 scram-sha-256\n",
    );
    primary.psql(
        "strata",
        &["-c", "select pg_reload_conf()"],
        Some("root-pw"),
    );
    let root = |s: &Server, sql: &str| as_user(s, "strata", "root-pw", sql);
    for sql in [
        "create role alice login password 'a1'",
        "create role bob login password 'b1'",
        "create table t (a int); insert into t values (1), (2)",
        "create table secret (x int); insert into secret values (42)",
        "grant select on t to alice",
        "grant select (x) on secret to bob",
    ] {
        assert_eq!(root(&primary, sql).find("ERR"), None, "{sql}");
    }
    let out = pg_basebackup_r_as(primary.port, &copy, Some("root-pw"));
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let standby = Server::start(&copy, &["wal_retrieve_retry_interval=100ms"]);
    catch_up_as(&primary, &standby, root);
    assert_eq!(
        as_user(&standby, "alice", "a1", "select count(*) from t"),
        "2"
    );
    let denied = as_user(&standby, "alice", "a1", "select * from secret");
    assert!(
        denied.contains("permission denied for table secret"),
        "{denied}"
    );
    assert_eq!(as_user(&standby, "bob", "b1", "select x from secret"), "42");
    for sql in [
        "alter role alice password 'a2'",
        "revoke select on t from alice",
        "grant select on secret to alice",
        "create role carol login password 'c1'",
        "revoke select (x) on secret from bob",
        "drop role bob",
    ] {
        assert_eq!(root(&primary, sql).find("ERR"), None, "{sql}");
    }
    catch_up_as(&primary, &standby, root);
    check_rotated_roles(&standby);
    // Promotion keeps them; the promoted server writes under the replayed grants.
    stop(&data);
    drop(primary);
    assert_eq!(root(&standby, "select pg_promote()"), "t");
    check_rotated_roles(&standby);
    root(&standby, "grant insert on secret to alice");
    assert_eq!(
        as_user(&standby, "alice", "a2", "insert into secret values (7)"),
        ""
    );
    let mut standby = standby;
    standby.kill9();
    drop(standby);
    let promoted = Server::start(&copy, &[]);
    check_rotated_roles(&promoted);
    assert_eq!(
        as_user(&promoted, "alice", "a2", "select sum(x) from secret"),
        "49"
    );
}

/// What the second round of role changes leaves on a server.
fn check_rotated_roles(s: &Server) {
    let old = as_user(s, "alice", "a1", "select 1");
    assert!(
        old.contains("password authentication failed for user \"alice\""),
        "{old}"
    );
    assert_eq!(as_user(s, "alice", "a2", "select max(x) from secret"), "42");
    let t = as_user(s, "alice", "a2", "select * from t");
    assert!(t.contains("permission denied for table t"), "{t}");
    assert_eq!(as_user(s, "carol", "c1", "select current_user"), "carol");
    let bob = as_user(s, "bob", "b1", "select 1");
    assert!(bob.contains("password authentication failed"), "{bob}");
}

/// Issue 32, item 1 (walsender rule 10): an idle pair stays connected. With both
/// timeouts shortened to 2 s and the standby reporting every second (so the
/// primary always has a recent reply and never pings on its own), nothing is
/// written for 8 s: the standby's pings are answered, `pg_stat_replication` keeps
/// the same sender streaming throughout, and neither log has a timeout. Before the
/// fix the standby dropped the connection at every `wal_receiver_timeout`.
#[test]
fn an_idle_pair_stays_connected_past_both_timeouts() {
    if !have_basebackup() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let (data, copy) = (dir.path().join("primary"), dir.path().join("standby"));
    init_small_segments(&data);
    let primary = Server::start(&data, &["wal_sender_timeout=2s"]);
    let out = pg_basebackup_r(primary.port, &copy);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let standby = Server::start(
        &copy,
        &[
            "wal_receiver_timeout=2s",
            "wal_receiver_status_interval=1s",
            "wal_retrieve_retry_interval=100ms",
        ],
    );
    catch_up(&primary, &standby);
    let row = "select pid || ':' || state from pg_stat_replication";
    let t0 = Instant::now();
    let mut first = String::new();
    while first.is_empty() || !first.ends_with(":streaming") {
        assert!(t0.elapsed() < Duration::from_secs(30), "no sender: {first}");
        first = one(&primary, "postgres", row);
        std::thread::sleep(Duration::from_millis(50));
    }
    let t0 = Instant::now();
    while t0.elapsed() < Duration::from_secs(8) {
        assert_eq!(one(&primary, "postgres", row), first, "the sender changed");
        std::thread::sleep(Duration::from_millis(200));
    }
    for (who, log) in [
        ("standby", standby.log_text()),
        ("primary", primary.log_text()),
    ] {
        assert!(!log.contains("FATAL"), "{who}:\n{log}");
        assert!(!log.contains("due to timeout"), "{who}:\n{log}");
        assert!(!log.contains("replication timeout"), "{who}:\n{log}");
    }
    // Still a working pair: a row written now reaches the standby.
    primary.psql_ok(
        "postgres",
        &[
            "-c",
            "create table idle (a int); insert into idle values (1)",
        ],
    );
    catch_up(&primary, &standby);
    assert_eq!(one(&standby, "postgres", "select count(*) from idle"), "1");
}
