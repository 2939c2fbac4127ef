//! The server end to end, through real clients: psql (PostgreSQL 15's, at /usr/bin/psql)
//! and tokio-postgres, against `strata start` on a free port in a temporary directory.
//! The reports' own scripts run through `psql -f`; crash tests SIGKILL the server
//! process and check every committed table, every dropped one and their files.

mod common;
use common::*;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::Command;

fn files_under(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    if let Ok(rd) = std::fs::read_dir(dir) {
        for e in rd.flatten() {
            let p = e.path();
            if p.is_dir() {
                out.extend(files_under(&p));
            } else {
                out.push(p);
            }
        }
    }
    out
}

#[test]
fn psql_answers_version_and_the_basic_statements() {
    let dir = tempfile::tempdir().unwrap();
    let s = Server::start(&dir.path().join("d"), &[]);
    let v = s.psql_ok("postgres", &["-c", "select version()"]);
    assert!(v.contains("Strata"), "{v}");
    let out = s.psql_ok(
        "postgres",
        &[
            "-c",
            "create table t (id int, name text, big bigint, ok boolean)",
            "-c",
            "insert into t values (1, 'one', 10000000000, true), (2, NULL, -1, false)",
            "-c",
            "insert into t select g, 'x' || g, g::bigint * 1000000000, g % 2 = 0 from generate_series(3, 6) g",
            "-c",
            "select id, name, big, ok from t where id <> 4 order by id desc limit 3",
            "-c",
            "select count(*), sum(id), min(name), max(big) from t",
            "-c",
            "delete from t where id >= 5 or name is null",
            "-c",
            "select count(*) from t",
            "-c",
            "select current_database()",
        ],
    );
    assert_eq!(
        out.lines().collect::<Vec<_>>(),
        vec![
            "6|x6|6000000000|t",
            "5|x5|5000000000|f",
            "3|x3|3000000000|f",
            "6|21|one|10000000000",
            "3",
            "postgres"
        ],
        "{out}"
    );
    // \c to another database, made from a template with FILE_COPY.
    let out = s.psql_ok(
        "postgres",
        &[
            "-c",
            "create database d2 with template = template1 strategy = file_copy",
            "-c",
            "\\c d2",
            "-c",
            "select current_database()",
        ],
    );
    assert_eq!(out.trim(), "d2", "{out}");
}

#[test]
fn reports_scripts_run_through_psql_f() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("d");
    let s = Server::start(&data, &[]);
    let base = data.join("base/5");
    let before = files_under(&base).len();
    let create: String = (1..=1000)
        .map(|i| format!("CREATE TABLE IF NOT EXISTS test{i} (id int);\n"))
        .collect();
    let drop: String = (1..=1000)
        .map(|i| format!("DROP TABLE IF EXISTS test{i};\n"))
        .collect();
    let (cf, df) = (dir.path().join("create.sql"), dir.path().join("drop.sql"));
    std::fs::write(&cf, &create).unwrap();
    std::fs::write(&df, &drop).unwrap();
    s.psql_ok("postgres", &["-f", cf.to_str().unwrap()]);
    assert_eq!(
        files_under(&base).len(),
        before + 1000,
        "one main fork per table"
    );
    // Running it twice is harmless (IF NOT EXISTS).
    let out = s.psql_db("postgres", &["-f", cf.to_str().unwrap()]);
    assert!(out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("already exists, skipping"));
    let path = s.psql_ok(
        "postgres",
        &["-c", "select pg_relation_filepath('test500')"],
    );
    assert!(data.join(path.trim()).exists(), "{path}");
    s.psql_ok("postgres", &["-f", df.to_str().unwrap()]);
    // Dropped files go after their commits, before the next checkpoint completes.
    s.psql_ok("postgres", &["-c", "checkpoint"]);
    assert_eq!(
        files_under(&base).len(),
        before,
        "every dropped table's files are gone"
    );
    assert!(!data.join(path.trim()).exists());
    let out = s.psql_db("postgres", &["-c", "select * from test1"]);
    assert!(String::from_utf8_lossy(&out.stderr).contains("relation \"test1\" does not exist"));
}

#[test]
fn one_transaction_drops_fifty_tables_or_none() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("d");
    let s = Server::start(&data, &[]);
    let mut setup = String::new();
    for i in 0..60 {
        setup.push_str(&format!(
            "create table t{i} (a int); insert into t{i} select g from generate_series(1, 100) g;\n"
        ));
    }
    let f = dir.path().join("setup.sql");
    std::fs::write(&f, setup).unwrap();
    s.psql_ok("postgres", &["-f", f.to_str().unwrap()]);
    let paths: Vec<PathBuf> = (0..60)
        .map(|i| {
            let p = s.psql_ok(
                "postgres",
                &["-c", &format!("select pg_relation_filepath('t{i}')")],
            );
            data.join(p.trim())
        })
        .collect();
    let drops: String = (0..50).map(|i| format!("drop table t{i};\n")).collect();
    // Rolled back: nothing goes.
    let rb = dir.path().join("rb.sql");
    std::fs::write(&rb, format!("begin;\n{drops}rollback;\n")).unwrap();
    s.psql_ok("postgres", &["-f", rb.to_str().unwrap()]);
    assert!(paths.iter().all(|p| p.exists()));
    assert_eq!(
        s.psql_ok("postgres", &["-c", "select count(*) from t7"])
            .trim(),
        "100"
    );
    // Committed: all fifty go, at commit; their files right after it (the unlinker),
    // and at the latest before the next checkpoint completes (engine rule 5).
    let cm = dir.path().join("cm.sql");
    std::fs::write(&cm, format!("begin;\n{drops}commit;\n")).unwrap();
    s.psql_ok("postgres", &["-f", cm.to_str().unwrap()]);
    let gone = s.psql_db("postgres", &["-c", "select count(*) from t7"]);
    assert!(String::from_utf8_lossy(&gone.stderr).contains("does not exist"));
    s.psql_ok("postgres", &["-c", "checkpoint"]);
    for (i, p) in paths.iter().enumerate() {
        assert_eq!(p.exists(), i >= 50, "t{i}: {}", p.display());
    }
    assert_eq!(
        s.psql_ok("postgres", &["-c", "select count(*) from t55"])
            .trim(),
        "100"
    );
}

/// Creates `n` tablespaces under `dir` and a database `many` with a 50-row table in
/// each, plus a table `kept` in postgres; returns the tablespaces' locations.
fn many_tablespaces(s: &Server, dir: &Path, n: usize) -> Vec<PathBuf> {
    let mut script = String::new();
    let mut locs = Vec::new();
    for i in 0..n {
        let loc = dir.join(format!("spc{i}"));
        std::fs::create_dir(&loc).unwrap();
        script.push_str(&format!(
            "create tablespace ts{i} location '{}';\n",
            loc.display()
        ));
        locs.push(loc);
    }
    script.push_str("create database many;\n\\c many\n");
    for i in 0..n {
        script.push_str(&format!(
            "create table m{i} (a int, b text) tablespace ts{i};\ninsert into m{i} select g, 'v' || g from generate_series(1, 50) g;\n"
        ));
    }
    script.push_str(
        "\\c postgres\ncreate table kept (a int);\ninsert into kept values (1), (2), (3);\n",
    );
    let f = dir.join("many.sql");
    std::fs::write(&f, script).unwrap();
    s.psql_ok("postgres", &["-f", f.to_str().unwrap()]);
    locs
}

/// Opens a transaction that creates table `uncommitted` and leaves it open (the
/// client is leaked); returns the files it created under `base5`.
fn open_uncommitted_create(s: &Server, base5: &Path) -> Vec<PathBuf> {
    let before = files_under(base5);
    let rt = tokio::runtime::Runtime::new().unwrap();
    rt.block_on(async {
        let c = s.client("postgres").await;
        c.batch_execute(
            "begin; create table uncommitted (a int); insert into uncommitted values (1);",
        )
        .await
        .unwrap();
        std::mem::forget(c); // keep the transaction open until the SIGKILL
    });
    files_under(base5)
        .into_iter()
        .filter(|p| !before.contains(p))
        .collect()
}

#[test]
fn database_over_many_tablespaces_survives_sigkill() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("d");
    let mut s = Server::start(&data, &[]);
    let locs = many_tablespaces(&s, dir.path(), 20);
    for l in &locs {
        assert!(!files_under(l).is_empty(), "{} holds a table", l.display());
    }
    assert_eq!(
        s.psql_ok("many", &["-c", "select count(*) from m7"]).trim(),
        "50"
    );
    s.psql_ok(
        "postgres",
        &[
            "-c",
            "drop database many",
            "-c",
            "create table after (a int)",
            "-c",
            "insert into after values (42)",
        ],
    );
    for l in &locs {
        assert!(
            files_under(l).is_empty(),
            "{}: {:?}",
            l.display(),
            files_under(l)
        );
    }
    // An open transaction at the moment of the crash: its table must not survive.
    let created = open_uncommitted_create(&s, &data.join("base/5"));
    assert!(
        !created.is_empty(),
        "the open transaction's table has a file"
    );
    s.kill9();
    let s = Server::start(&data, &[]);
    assert!(s.log_text().contains("redo done at"), "{}", s.log_text());
    assert_eq!(
        s.psql_ok("postgres", &["-c", "select a from kept order by a"])
            .trim(),
        "1\n2\n3"
    );
    assert_eq!(
        s.psql_ok("postgres", &["-c", "select a from after"]).trim(),
        "42"
    );
    let out = s.psql_db("many", &["-c", "select 1"]);
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("database \"many\" does not exist"));
    let out = s.psql_db("postgres", &["-c", "select * from uncommitted"]);
    assert!(String::from_utf8_lossy(&out.stderr).contains("does not exist"));
    for p in &created {
        assert!(
            !p.exists(),
            "{} of the uncommitted table survived",
            p.display()
        );
    }
    for l in &locs {
        assert!(files_under(l).is_empty(), "{} after recovery", l.display());
    }
}

#[test]
fn errors_carry_postgres_sqlstates_and_the_session_goes_on() {
    let dir = tempfile::tempdir().unwrap();
    let s = Server::start(&dir.path().join("d"), &[]);
    let rt = tokio::runtime::Runtime::new().unwrap();
    rt.block_on(async {
        let c = s.client("postgres").await;
        let err = |sql: &'static str| {
            let c = &c;
            async move { code_of(&c.batch_execute(sql).await.expect_err(sql)) }
        };
        assert_eq!(err("select * from missing").await, "42P01");
        c.batch_execute("create table t (a int)").await.unwrap();
        assert_eq!(err("create table t (a int)").await, "42P07");
        assert_eq!(err("create database postgres").await, "42P04");
        assert_eq!(err("selec 1").await, "42601");
        assert_eq!(err("create index i on t using hash (a)").await, "0A000");
        assert_eq!(err("update t set (a, a) = (1, 1)").await, "0A000");
        assert_eq!(err("drop database nosuch").await, "3D000");
        assert_eq!(err("insert into t values ('x')").await, "22P02");
        // 25P02: an error in a block, then every statement is refused until ROLLBACK.
        c.batch_execute("begin").await.unwrap();
        assert_eq!(err("select * from missing").await, "42P01");
        assert_eq!(err("select 1").await, "25P02");
        c.batch_execute("rollback").await.unwrap();
        assert_eq!(
            c.query_one("select 1", &[]).await.unwrap().get::<_, i32>(0),
            1
        );
        // 55006: another session is connected to the database being dropped.
        c.batch_execute("create database busy").await.unwrap();
        let other = s.client("busy").await;
        assert_eq!(err("drop database busy").await, "55006");
        assert_eq!(err("begin; drop database busy").await, "25001");
        c.batch_execute("rollback").await.unwrap();
        c.batch_execute("drop database busy with (force)")
            .await
            .unwrap();
        let e = other
            .simple_query("select 1")
            .await
            .expect_err("terminated");
        assert_eq!(code_of(&e), "57P01");
        // 3D000 at connection time.
        let e = connect_to(s.port, "strata", "busy", None)
            .await
            .expect_err("no such database");
        assert_eq!(code_of(&e), "3D000");
    });
}

#[test]
fn extended_protocol_binds_typed_parameters() {
    let dir = tempfile::tempdir().unwrap();
    let s = Server::start(&dir.path().join("d"), &[]);
    let rt = tokio::runtime::Runtime::new().unwrap();
    rt.block_on(async {
        let c = s.client("postgres").await;
        c.batch_execute("create table p (id int, name text, big bigint, ok bool)")
            .await
            .unwrap();
        let ins = c
            .prepare("insert into p (id, name, big, ok) values ($1, $2, $3, $4)")
            .await
            .unwrap();
        for i in 0..20i32 {
            let name = format!("n{i}");
            let n = c
                .execute(&ins, &[&i, &name, &(i64::from(i) << 33), &(i % 3 == 0)])
                .await
                .unwrap();
            assert_eq!(n, 1);
        }
        let rows = c
            .query(
                "select id, name, big, ok from p where id >= $1 and ok order by id",
                &[&10i32],
            )
            .await
            .unwrap();
        let got: Vec<(i32, String, i64, bool)> = rows
            .iter()
            .map(|r| (r.get(0), r.get(1), r.get(2), r.get(3)))
            .collect();
        assert_eq!(
            got,
            vec![
                (12, "n12".into(), 12i64 << 33, true),
                (15, "n15".into(), 15i64 << 33, true),
                (18, "n18".into(), 18i64 << 33, true)
            ]
        );
        let n: i64 = c
            .query_one("select count(*) from p", &[])
            .await
            .unwrap()
            .get(0);
        assert_eq!(n, 20);
        let wal: i64 = c
            .query_one(
                "select pg_wal_lsn_diff(pg_current_wal_lsn(), '0/0')::bigint",
                &[],
            )
            .await
            .unwrap()
            .get(0);
        assert!(wal > 0);
        let deleted = c
            .execute("delete from p where name = $1", &[&"n3"])
            .await
            .unwrap();
        assert_eq!(deleted, 1);
        // Transactions through the driver.
        let mut c = c;
        let tx = c.transaction().await.unwrap();
        tx.execute("insert into p (id) values (100)", &[])
            .await
            .unwrap();
        tx.rollback().await.unwrap();
        let n: i64 = c
            .query_one("select count(*) from p", &[])
            .await
            .unwrap()
            .get(0);
        assert_eq!(n, 19);
    });
}

/// A prepared read keeps its plan across executions and sees what other sessions
/// commit; the catalog changing under it makes it plan again (or fail with 0A000
/// where its row would change shape); a pipeline of a prepared write and reads
/// commits at its Sync, and a read's Sync, sent without awaiting the backend, keeps
/// the order of what follows.
#[test]
fn prepared_statements_keep_their_plans_until_the_catalog_changes() {
    let dir = tempfile::tempdir().unwrap();
    let s = Server::start(&dir.path().join("d"), &[]);
    let rt = tokio::runtime::Runtime::new().unwrap();
    rt.block_on(async {
        let c = s.client("postgres").await;
        let other = s.client("postgres").await;
        c.batch_execute(
            "create table k (id int primary key, v text); \
             insert into k select g, 'v' || g from generate_series(1, 500) g",
        )
        .await
        .unwrap();
        let read = c.prepare("select v from k where id = $1").await.unwrap();
        let star = c.prepare("select * from k where id = $1").await.unwrap();
        let count = c.prepare("select count(*) from k").await.unwrap();
        let ins = c.prepare("insert into k values ($1, $2)").await.unwrap();
        for i in 1..=10i32 {
            let v: String = c.query_one(&read, &[&i]).await.unwrap().get(0);
            assert_eq!(v, format!("v{i}"));
        }
        other
            .batch_execute("insert into k values (1000, 'other')")
            .await
            .unwrap();
        let v: String = c.query_one(&read, &[&1000i32]).await.unwrap().get(0);
        assert_eq!(v, "other", "a kept plan reads what was committed since");
        // Pipelined: the write and the reads go out before any answer comes back.
        let (a, b, n) = futures::join!(
            c.execute(&ins, &[&2000i32, &"mine"]),
            c.query_one(&read, &[&2000i32]),
            c.query_one(&count, &[])
        );
        assert_eq!(a.unwrap(), 1);
        assert_eq!(b.unwrap().get::<_, String>(0), "mine");
        assert_eq!(n.unwrap().get::<_, i64>(0), 502);
        let n: i64 = other
            .query_one("select count(*) from k", &[])
            .await
            .unwrap()
            .get(0);
        assert_eq!(n, 502, "the pipeline's Sync committed the write");
        // The index the kept plan reads goes; the plan is made again.
        other
            .batch_execute("alter table k drop constraint k_pkey")
            .await
            .unwrap();
        let v: String = c.query_one(&read, &[&7i32]).await.unwrap().get(0);
        assert_eq!(v, "v7");
        other
            .batch_execute("alter table k add column w int")
            .await
            .unwrap();
        let e = c.query(&star, &[&7i32]).await.unwrap_err();
        assert_eq!(e.code().unwrap().code(), "0A000", "{e}");
        let v: String = c.query_one(&read, &[&8i32]).await.unwrap().get(0);
        assert_eq!(v, "v8");
    });
}

/// Parameter types a client declares at Parse are the parameters' types, as
/// PostgreSQL takes them: a smallint given for a bigint column is stored as one,
/// `$1 + 1` over a declared bigint is a bigint, and binary values are read at the
/// declared width.
#[test]
fn declared_parameter_types_bind_as_declared() {
    use tokio_postgres::types::Type;
    let dir = tempfile::tempdir().unwrap();
    let s = Server::start(&dir.path().join("d"), &[]);
    let rt = tokio::runtime::Runtime::new().unwrap();
    rt.block_on(async {
        let c = s.client("postgres").await;
        c.batch_execute("create table dt (a bigint, b int)")
            .await
            .unwrap();
        let ins = c
            .prepare_typed("insert into dt values ($1, $2)", &[Type::INT2, Type::INT8])
            .await
            .unwrap();
        assert_eq!(ins.params(), &[Type::INT2, Type::INT8]);
        c.execute(&ins, &[&7i16, &9i64]).await.unwrap();
        let row = c.query_one("select a, b from dt", &[]).await.unwrap();
        assert_eq!((row.get::<_, i64>(0), row.get::<_, i32>(1)), (7, 9));
        let plus = c
            .prepare_typed("select $1 + 1", &[Type::INT8])
            .await
            .unwrap();
        assert_eq!(plus.columns()[0].type_(), &Type::INT8);
        let v: i64 = c.query_one(&plus, &[&(1i64 << 40)]).await.unwrap().get(0);
        assert_eq!(v, (1i64 << 40) + 1);
        let find = c
            .prepare_typed("select b from dt where a = $1", &[Type::INT4])
            .await
            .unwrap();
        let b: i32 = c.query_one(&find, &[&7i32]).await.unwrap().get(0);
        assert_eq!(b, 9);
    });
}

#[test]
fn updates_through_the_driver_survive_sigkill() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("d");
    let mut s = Server::start(&data, &[]);
    let rt = tokio::runtime::Runtime::new().unwrap();
    rt.block_on(async {
        let c = s.client("postgres").await;
        c.batch_execute(
            "create table acct (id int, balance bigint, note text); \
             insert into acct select g, 1000, 'open' from generate_series(1, 2000) g",
        )
        .await
        .unwrap();
        let up = c
            .prepare("update acct set balance = balance + $1, note = $2 where id = $3")
            .await
            .unwrap();
        for id in 1..=200i32 {
            let n = c
                .execute(&up, &[&i64::from(id), &format!("paid {id}"), &id])
                .await
                .unwrap();
            assert_eq!(n, 1);
        }
        assert_eq!(c.execute(&up, &[&1i64, &"none", &-1i32]).await.unwrap(), 0);
        // RETURNING through the extended protocol: described, then streamed.
        let rows = c
            .query(
                "update acct set note = note where id = $1 returning id, balance, note",
                &[&5i32],
            )
            .await
            .unwrap();
        let got: Vec<(i32, i64, String)> = rows
            .iter()
            .map(|r| (r.get(0), r.get(1), r.get(2)))
            .collect();
        assert_eq!(got, [(5, 1005, "paid 5".to_string())]);
        let ins = c
            .query_one(
                "insert into acct values ($1, 0, 'new') returning id * 2",
                &[&9000i32],
            )
            .await
            .unwrap();
        assert_eq!(ins.get::<_, i32>(0), 18000);
        let del = c
            .query("delete from acct where id = 9000 returning note", &[])
            .await
            .unwrap();
        assert_eq!(del.len(), 1);
        let mut c = c;
        let tx = c.transaction().await.unwrap();
        tx.execute("update acct set balance = 0", &[])
            .await
            .unwrap();
        tx.rollback().await.unwrap();
    });
    s.kill9();
    drop(s);
    let s = Server::start(&data, &[]);
    let out = s.psql_ok(
        "postgres",
        &[
            "-XAtc",
            "select count(*), sum(balance) from acct",
            "-c",
            "select count(*) from acct where note <> 'open'",
            "-c",
            "select note from acct where id = 77",
        ],
    );
    // 2000 rows of 1000, plus 1 + 2 + ... + 200 paid in.
    assert_eq!(out.trim(), "2000|2020100\n200\npaid 77");
}

#[test]
fn a_malformed_message_ends_only_its_connection() {
    let dir = tempfile::tempdir().unwrap();
    let s = Server::start(&dir.path().join("d"), &[]);
    let rt = tokio::runtime::Runtime::new().unwrap();
    rt.block_on(async {
        let good = s.client("postgres").await;
        // A startup packet, then a message of an unknown type with a bogus length.
        let mut raw = Raw::ready(s.port, "strata");
        raw.send(&[b'\x01', 0xff, 0xff, 0xff, 0xf0, 1, 2, 3]);
        let mut rest = Vec::new();
        raw.s
            .read_to_end(&mut rest)
            .expect("the server closes this connection (not a read timeout)");
        // The other connection, and new ones, carry on.
        assert_eq!(
            good.query_one("select 1", &[])
                .await
                .unwrap()
                .get::<_, i32>(0),
            1
        );
        let again = s.client("postgres").await;
        assert_eq!(
            again
                .query_one("select 2", &[])
                .await
                .unwrap()
                .get::<_, i32>(0),
            2
        );
    });
}

#[test]
fn stop_checkpoints_and_one_server_per_directory() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("d");
    // First start creates the cluster; strata.conf is read on the next.
    let mut s = Server::start(&data, &[]);
    s.psql_ok(
        "postgres",
        &[
            "-c",
            "create table t (a int)",
            "-c",
            "insert into t values (7)",
        ],
    );
    // A second server on the same directory is refused.
    let second = Command::new(env!("CARGO_BIN_EXE_strata"))
        .args(["start", "-D"])
        .arg(&data)
        .args(["-c", &format!("port={}", free_port())])
        .output()
        .unwrap();
    assert!(!second.status.success());
    assert!(String::from_utf8_lossy(&second.stderr).contains("lock file"));
    // strata stop: clean shutdown, lock file removed.
    let stop = Command::new(env!("CARGO_BIN_EXE_strata"))
        .args(["stop", "-D"])
        .arg(&data)
        .output()
        .unwrap();
    assert!(
        stop.status.success(),
        "{}",
        String::from_utf8_lossy(&stop.stderr)
    );
    let st = s.child.take().unwrap().wait().unwrap();
    assert!(st.success(), "server exit status {st}\n{}", s.log_text());
    assert!(!data.join("postmaster.pid").exists());
    assert!(s.log_text().contains("database system is shut down"));
    // Settings from strata.conf.
    let port2 = free_port();
    std::fs::write(
        data.join("strata.conf"),
        // superuser_reserved_connections (3) must be below max_connections, as in PostgreSQL.
        format!("# a comment\nport = {port2}\nshared_buffers = '16MB'\nmax_connections = 3\nsuperuser_reserved_connections = 1\n"),
    )
    .unwrap();
    let s2 = Server::start_from_conf(&data, port2);
    let out = s2.psql_db(
        "postgres",
        &["-c", "show shared_buffers", "-c", "select a from t"],
    );
    assert_eq!(String::from_utf8_lossy(&out.stdout).trim(), "16MB\n7");
    // max_connections = 3: the fourth is refused with 53300.
    let rt = tokio::runtime::Runtime::new().unwrap();
    rt.block_on(async {
        let mut held = Vec::new();
        for _ in 0..3 {
            // psql's session above leaves its slot when its backend has ended, which
            // may be a moment after psql exits: wait for the slot, not longer.
            let t0 = std::time::Instant::now();
            loop {
                match connect(port2, "strata", None).await {
                    Ok(c) => break held.push(c),
                    Err(e) if code_of(&e) == "53300" && t0.elapsed().as_secs() < 10 => {
                        tokio::time::sleep(std::time::Duration::from_millis(20)).await
                    }
                    Err(e) => panic!("{e}"),
                }
            }
        }
        let e = connect(port2, "strata", None).await.expect_err("refused");
        assert_eq!(code_of(&e), "53300");
    });
}

#[test]
fn scram_password_when_one_is_set() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("d");
    init(&data, Some("s3cret"));
    let s = Server::start(&data, &[]);
    let ok = psql_db(s.port, "postgres", &["-c", "select 1"], Some("s3cret"));
    assert!(
        ok.status.success(),
        "{}",
        String::from_utf8_lossy(&ok.stderr)
    );
    let bad = psql_db(s.port, "postgres", &["-w", "-c", "select 1"], Some("wrong"));
    assert!(!bad.status.success());
    assert!(
        String::from_utf8_lossy(&bad.stderr).contains("password authentication failed"),
        "{}",
        String::from_utf8_lossy(&bad.stderr)
    );
    // The driver negotiates SCRAM-SHA-256 too; ALTER ROLE changes the password.
    let rt = tokio::runtime::Runtime::new().unwrap();
    rt.block_on(async {
        let c = connect(s.port, "strata", Some("s3cret")).await.unwrap();
        c.batch_execute("alter role strata password 'n3w'")
            .await
            .unwrap();
    });
    assert!(!psql_db(
        s.port,
        "postgres",
        &["-w", "-c", "select 1"],
        Some("s3cret")
    )
    .status
    .success());
    assert!(
        psql_db(s.port, "postgres", &["-c", "select 1"], Some("n3w"))
            .status
            .success()
    );
}

#[test]
fn not_null_defaults_and_checks_survive_a_restart() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("d");
    let mut s = Server::start(&data, &[]);
    s.psql_ok(
        "postgres",
        &[
            "-c",
            "create table k (id int not null check (id > 0), n bigint default 40 + 2, note text not null default 'it''s')",
            "-c",
            "insert into k (id) values (1)",
        ],
    );
    s.kill9();
    drop(s);
    let s = Server::start(&data, &[]);
    assert_eq!(
        s.psql_ok(
            "postgres",
            &[
                "-c",
                "insert into k (id) values (2)",
                "-c",
                "select id, n, note from k order by id"
            ]
        )
        .trim(),
        "1|42|it's\n2|42|it's"
    );
    let out = s.psql_db("postgres", &["-c", "insert into k (n) values (1)"]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("null value in column \"id\" of relation \"k\" violates not-null constraint"),
        "{err}"
    );
    let out = s.psql_db("postgres", &["-c", "insert into k (id) values (-1)"]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("violates check constraint \"k_id_check\""),
        "{err}"
    );
}

#[test]
fn smallint_timestamps_and_bytea_cross_the_wire_in_binary() {
    let dir = tempfile::tempdir().unwrap();
    let s = Server::start(&dir.path().join("d"), &[]);
    let rt = tokio::runtime::Runtime::new().unwrap();
    rt.block_on(async {
        let c = s.client("postgres").await;
        c.batch_execute("create table w (a smallint, at timestamp, tz timestamptz)")
            .await
            .unwrap();
        let t = std::time::UNIX_EPOCH + std::time::Duration::from_micros(1_764_000_000_123_456);
        c.execute("insert into w values ($1, $2, $3)", &[&-12i16, &t, &t])
            .await
            .unwrap();
        let row = c
            .query_one("select a, at, tz, tz::text from w", &[])
            .await
            .unwrap();
        assert_eq!(row.get::<_, i16>(0), -12);
        assert_eq!(row.get::<_, std::time::SystemTime>(1), t);
        assert_eq!(row.get::<_, std::time::SystemTime>(2), t);
        assert_eq!(row.get::<_, String>(3), "2025-11-24 16:00:00.123456+00");
        // bytea in binary, date and uuid as text.
        c.batch_execute("create table bin (b bytea, d date, u uuid)")
            .await
            .unwrap();
        let bytes: Vec<u8> = (0..=255u8).collect();
        c.execute(
            "insert into bin values ($1, '2024-02-29', '0123456789abcdef0123456789ABCDEF')",
            &[&bytes],
        )
        .await
        .unwrap();
        let row = c
            .query_one("select b, d::text, u::text, length(b::text) from bin", &[])
            .await
            .unwrap();
        assert_eq!(row.get::<_, Vec<u8>>(0), bytes);
        assert_eq!(row.get::<_, String>(1), "2024-02-29");
        assert_eq!(
            row.get::<_, String>(2),
            "01234567-89ab-cdef-0123-456789abcdef"
        );
    });
}

/// real, double precision and numeric as a driver sends and reads them: binary
/// parameters and results (numeric's base-10000 digits with its display scale).
#[test]
fn floats_and_numeric_cross_the_wire_in_binary() {
    use rust_decimal::Decimal;
    let dir = tempfile::tempdir().unwrap();
    let s = Server::start(&dir.path().join("d"), &[]);
    let rt = tokio::runtime::Runtime::new().unwrap();
    rt.block_on(async {
        let c = s.client("postgres").await;
        c.batch_execute("create table m (f real, d double precision, n numeric(12,4), x numeric)")
            .await
            .unwrap();
        let n: Decimal = "-1234.5".parse().unwrap();
        let x: Decimal = "0.000000012345678901234567".parse().unwrap();
        c.execute(
            "insert into m values ($1, $2, $3, $4)",
            &[&0.25f32, &-1.0e-300f64, &n, &x],
        )
        .await
        .unwrap();
        let row = c
            .query_one("select f, d, n, x, n::text, n * 2 from m", &[])
            .await
            .unwrap();
        assert_eq!(row.get::<_, f32>(0), 0.25);
        assert_eq!(row.get::<_, f64>(1), -1.0e-300);
        let back: Decimal = row.get(2);
        assert_eq!(back.to_string(), "-1234.5000");
        assert_eq!(row.get::<_, Decimal>(3), x);
        assert_eq!(row.get::<_, String>(4), "-1234.5000");
        assert_eq!(row.get::<_, Decimal>(5).to_string(), "-2469.0000");
        let big: Decimal = "123456789.12345".parse().unwrap();
        let err = c
            .execute("insert into m (n) values ($1)", &[&big])
            .await
            .unwrap_err();
        assert_eq!(code_of(&err), "22003", "{err}");
    });
}

/// Through psql: CREATE TABLE AS, INSERT DEFAULT VALUES and ALTER TABLE, then a
/// SIGKILL: what was committed is there, with its new shape.
#[test]
fn create_table_as_default_values_and_alter_table_survive_sigkill() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("d");
    let mut s = Server::start(&data, &[]);
    s.psql_ok(
        "postgres",
        &[
            "-c",
            "create table src (a int, b text)",
            "-c",
            "insert into src select g, 'v' || g from generate_series(1, 1000) g",
            "-c",
            "create table dst as select a, b, a % 7 as m from src where a > 100",
            "-c",
            "alter table dst add column d int default 3",
            "-c",
            "alter table dst drop column b",
            "-c",
            "alter table dst rename column m to modulo",
            "-c",
            "insert into dst default values",
        ],
    );
    s.kill9();
    let s = Server::start(&data, &[]);
    let q = "select count(*), count(a), sum(modulo), sum(d) from dst";
    let got = s.psql_ok("postgres", &["-XAtc", q]);
    let m: i64 = (101..=1000).map(|a| a % 7).sum();
    assert_eq!(got.trim(), format!("901|900|{m}|2703"));
}

/// TOAST through real processes: a 100 KB text value and a 1 MB bytea value are
/// stored and read back whole (psql and a driver), survive a SIGKILL, are copied
/// by CREATE DATABASE (both strategies, with the table's index), and an UPDATE of
/// another column keeps them.
#[test]
fn values_larger_than_a_page_are_stored_and_read_back() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("d");
    let mut s = Server::start(&data, &[]);
    s.psql_ok(
        "template1",
        &[
            "-c",
            "create table docs (id int primary key, n int, body text, raw bytea)",
            "-c",
            "insert into docs values (1, 0, repeat('abcdefghij', 10000), null)",
        ],
    );
    let rt = tokio::runtime::Runtime::new().unwrap();
    let raw: Vec<u8> = (0..1 << 20).map(|i: u32| (i % 251) as u8).collect();
    rt.block_on(async {
        let c = s.client("template1").await;
        c.execute("update docs set raw = $1 where id = 1", &[&raw])
            .await
            .unwrap();
        c.execute("update docs set n = n + 1", &[]).await.unwrap();
    });
    s.kill9();
    let s = Server::start(&data, &[]);
    for strategy in ["wal_log", "file_copy"] {
        let create = format!("create database c_{strategy} template template1 strategy {strategy}");
        s.psql_ok("postgres", &["-c", &create]);
    }
    for db in ["template1", "c_wal_log", "c_file_copy"] {
        let out = s.psql_ok(
            db,
            &[
                "-XAtc",
                "select n, length(body), body = repeat('abcdefghij', 10000), raw is not null from docs where id = 1",
            ],
        );
        assert_eq!(out.trim(), "1|100000|t|t", "{db}");
        s.psql_ok(db, &["-c", "select bt_index_check('docs_pkey', true)"]);
        rt.block_on(async {
            let c = s.client(db).await;
            let row = c.query_one("select raw from docs", &[]).await.unwrap();
            assert_eq!(row.get::<_, Vec<u8>>(0), raw, "{db}");
        });
    }
}
