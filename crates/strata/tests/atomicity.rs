//! Transaction blocks are atomic, as in PostgreSQL, through psql and tokio-postgres:
//! any error in a block (parse, unsupported, bind, protocol, runtime) fails it, then
//! 25P02 until its end and COMMIT answers ROLLBACK; a multi-statement query is one
//! implicit transaction; savepoints are refused, never ignored; a password change
//! commits or rolls back with its block; an INSERT ... VALUES parsed row by row is
//! as atomic as one parsed whole (an error in a late row inserts nothing).

mod common;
use common::*;
use std::path::Path;

/// Runs `sql` as a psql script that goes on after errors and prints command tags;
/// returns (stdout, stderr).
fn script(s: &Server, dir: &Path, sql: &str) -> (String, String) {
    let f = dir.join(format!("script{}.sql", rand_suffix()));
    std::fs::write(&f, sql).unwrap();
    let out = psql_db(
        s.port,
        "postgres",
        &[
            "-v",
            "ON_ERROR_STOP=0",
            "-v",
            "QUIET=off",
            "-f",
            f.to_str().unwrap(),
        ],
        None,
    );
    (
        String::from_utf8_lossy(&out.stdout).to_string(),
        String::from_utf8_lossy(&out.stderr).to_string(),
    )
}

fn rand_suffix() -> u64 {
    use std::sync::atomic::{AtomicU64, Ordering};
    static N: AtomicU64 = AtomicU64::new(0);
    N.fetch_add(1, Ordering::Relaxed)
}

fn values(s: &Server, sql: &str) -> Vec<String> {
    s.psql_ok("postgres", &["-c", sql])
        .lines()
        .map(str::to_string)
        .collect()
}

#[test]
fn psql_every_kind_of_error_fails_the_block() {
    let dir = tempfile::tempdir().unwrap();
    let s = Server::start(&dir.path().join("d"), &[]);
    s.psql_ok("postgres", &["-c", "create table t (a int)"]);
    // The script, with a statement refused while parsing (0A000): UPDATE
    // ... SET (a, b) = ... (plain UPDATE runs now).
    let (out, err) = script(
        &s,
        dir.path(),
        "BEGIN;\nINSERT INTO t VALUES (50);\nUPDATE t SET (a, a) = (1, 1);\nSELECT 1;\nCOMMIT;\n",
    );
    assert_eq!(
        out.lines().collect::<Vec<_>>(),
        ["BEGIN", "INSERT 0 1", "ROLLBACK"],
        "{out}\n{err}"
    );
    assert!(
        err.contains("UPDATE ... SET (a, b) = ... is not supported"),
        "{err}"
    );
    assert!(
        err.contains(
            "current transaction is aborted, commands ignored until end of transaction block"
        ),
        "{err}"
    );
    // A syntax error (42601) and a runtime error (22012) alike.
    for bad in ["SELEC 1;", "SELECT 1/0;", "INSERT INTO t VALUES ('x');"] {
        let (out, err) = script(
            &s,
            dir.path(),
            &format!("BEGIN;\nINSERT INTO t VALUES (51);\n{bad}\nCOMMIT;\n"),
        );
        assert_eq!(out.lines().last(), Some("ROLLBACK"), "{bad}: {out}\n{err}");
    }
    assert_eq!(values(&s, "select count(*) from t"), ["0"]);
    // A block without errors commits.
    let (out, _) = script(
        &s,
        dir.path(),
        "BEGIN;\nINSERT INTO t VALUES (52);\nCOMMIT;\n",
    );
    assert_eq!(out.lines().last(), Some("COMMIT"));
    assert_eq!(values(&s, "select a from t"), ["52"]);
}

#[test]
fn driver_every_kind_of_error_fails_the_block() {
    let dir = tempfile::tempdir().unwrap();
    let s = Server::start(&dir.path().join("d"), &[]);
    let rt = tokio::runtime::Runtime::new().unwrap();
    rt.block_on(async {
        let c = s.client("postgres").await;
        c.batch_execute("create table t (a int)").await.unwrap();
        let aborted = |e: tokio_postgres::Error| assert_eq!(code_of(&e), "25P02", "{e}");
        // Simple protocol: a statement refused at parse time.
        c.batch_execute("begin; insert into t values (50)")
            .await
            .unwrap();
        let e = c
            .batch_execute("update t set (a, a) = (1, 1)")
            .await
            .unwrap_err();
        assert_eq!(code_of(&e), "0A000");
        aborted(c.simple_query("select 1").await.unwrap_err());
        c.batch_execute("commit").await.unwrap();
        // Extended protocol: an error at Parse.
        c.batch_execute("begin").await.unwrap();
        c.execute("insert into t values (51)", &[]).await.unwrap();
        let e = c.prepare("selec 1").await.unwrap_err();
        assert_eq!(code_of(&e), "42601");
        aborted(c.query("select 1", &[]).await.unwrap_err());
        c.batch_execute("commit").await.unwrap();
        // An error pgwire reports itself (a parameter type Strata lacks, at Parse).
        c.batch_execute("begin").await.unwrap();
        c.execute("insert into t values (52)", &[]).await.unwrap();
        let e = c
            .prepare_typed("select $1", &[tokio_postgres::types::Type::JSONB])
            .await
            .unwrap_err();
        assert_eq!(code_of(&e), "0A000");
        aborted(c.query("select 1", &[]).await.unwrap_err());
        c.batch_execute("commit").await.unwrap();
        // An error at Execute.
        c.batch_execute("begin").await.unwrap();
        c.execute("insert into t values (53)", &[]).await.unwrap();
        let e = c.query("select 1 / $1", &[&0i32]).await.unwrap_err();
        assert_eq!(code_of(&e), "22012");
        aborted(
            c.execute("insert into t values (54)", &[])
                .await
                .unwrap_err(),
        );
        c.batch_execute("commit").await.unwrap();
        let n: i64 = c
            .query_one("select count(*) from t", &[])
            .await
            .unwrap()
            .get(0);
        assert_eq!(n, 0, "no row of a failed block survives");
        // A transaction through the driver's API commits when nothing fails.
        let mut c = c;
        let tx = c.transaction().await.unwrap();
        tx.execute("insert into t values (55)", &[]).await.unwrap();
        tx.commit().await.unwrap();
        let n: i64 = c
            .query_one("select count(*) from t", &[])
            .await
            .unwrap()
            .get(0);
        assert_eq!(n, 1);
    });
}

#[test]
fn psql_a_multi_statement_query_is_one_transaction() {
    let dir = tempfile::tempdir().unwrap();
    let s = Server::start(&dir.path().join("d"), &[]);
    s.psql_ok("postgres", &["-c", "create table t (a int)"]);
    let run = |sql: &str| psql_db(s.port, "postgres", &["-c", sql], None);
    let out = run("INSERT INTO t VALUES (43); SELECT 1/0; INSERT INTO t VALUES (44); CREATE TABLE after_error (a int)");
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("division by zero"));
    assert_eq!(values(&s, "select count(*) from t"), ["0"]);
    assert!(
        !run("select * from after_error").status.success(),
        "not run"
    );
    // COMMIT in the string ends the implicit block (with a warning); what follows
    // is a new one.
    let out = run("INSERT INTO t VALUES (45); COMMIT; INSERT INTO t VALUES (46); SELECT 1/0");
    assert!(String::from_utf8_lossy(&out.stderr).contains("there is no transaction in progress"));
    assert_eq!(values(&s, "select a from t"), ["45"]);
    // BEGIN makes it explicit: COMMIT ends it, the rest commits at the end.
    s.psql_ok(
        "postgres",
        &["-c", "INSERT INTO t VALUES (47); BEGIN; INSERT INTO t VALUES (48); COMMIT; INSERT INTO t VALUES (49)"],
    );
    assert_eq!(
        values(&s, "select a from t order by a"),
        ["45", "47", "48", "49"]
    );
    // Statements that never run in a block are refused in a multi-statement query.
    for (sql, msg) in [
        (
            "SELECT 1; VACUUM",
            "VACUUM cannot run inside a transaction block",
        ),
        (
            "CREATE DATABASE x; SELECT 1",
            "CREATE DATABASE cannot run inside a transaction block",
        ),
        (
            "SELECT 1; DROP DATABASE postgres",
            "DROP DATABASE cannot run inside a transaction block",
        ),
    ] {
        let err = String::from_utf8_lossy(&run(sql).stderr).to_string();
        assert!(err.contains(msg), "{sql}: {err}");
    }
    // Each statement on its own still works.
    s.psql_ok("postgres", &["-c", "VACUUM", "-c", "CREATE DATABASE x"]);
}

#[test]
fn driver_a_multi_statement_query_is_one_transaction() {
    let dir = tempfile::tempdir().unwrap();
    let s = Server::start(&dir.path().join("d"), &[]);
    let rt = tokio::runtime::Runtime::new().unwrap();
    rt.block_on(async {
        let c = s.client("postgres").await;
        c.batch_execute("create table t (a int)").await.unwrap();
        let e = c
            .batch_execute("insert into t values (43); select 1/0; insert into t values (44)")
            .await
            .unwrap_err();
        assert_eq!(code_of(&e), "22012");
        let e = c
            .simple_query("insert into t values (45); vacuum")
            .await
            .unwrap_err();
        assert_eq!(code_of(&e), "25001");
        let n: i64 = c
            .query_one("select count(*) from t", &[])
            .await
            .unwrap()
            .get(0);
        assert_eq!(n, 0);
        // The session is idle again (not in a failed block) and goes on.
        c.batch_execute("insert into t values (1); insert into t values (2)")
            .await
            .unwrap();
        let n: i64 = c
            .query_one("select count(*) from t", &[])
            .await
            .unwrap()
            .get(0);
        assert_eq!(n, 2);
        // An explicit block begun in a multi-statement query and failing in it stays
        // failed after it.
        let e = c
            .batch_execute("begin; insert into t values (3); select 1/0")
            .await
            .unwrap_err();
        assert_eq!(code_of(&e), "22012");
        let e = c.simple_query("select 1").await.unwrap_err();
        assert_eq!(code_of(&e), "25P02");
        c.batch_execute("rollback").await.unwrap();
    });
}

#[test]
fn psql_savepoints_are_refused_never_ignored() {
    let dir = tempfile::tempdir().unwrap();
    let s = Server::start(&dir.path().join("d"), &[]);
    s.psql_ok("postgres", &["-c", "create table t (a int)"]);
    for (sql, msg) in [
        (
            "SAVEPOINT a",
            "SAVEPOINT can only be used in transaction blocks",
        ),
        (
            "ROLLBACK TO SAVEPOINT a",
            "ROLLBACK TO SAVEPOINT can only be used in transaction blocks",
        ),
        (
            "RELEASE a",
            "RELEASE SAVEPOINT can only be used in transaction blocks",
        ),
        (
            "SELECT 1; SAVEPOINT a",
            "SAVEPOINT can only be used in transaction blocks",
        ),
    ] {
        let out = psql_db(s.port, "postgres", &["-c", sql], None);
        let err = String::from_utf8_lossy(&out.stderr).to_string();
        assert!(err.contains(msg), "{sql}: {err}");
    }
    let (out, err) = script(
        &s,
        dir.path(),
        "BEGIN;\nINSERT INTO t VALUES (70);\nSAVEPOINT a;\nINSERT INTO t VALUES (71);\nROLLBACK TO SAVEPOINT a;\nCOMMIT;\n",
    );
    assert_eq!(
        out.lines().collect::<Vec<_>>(),
        ["BEGIN", "INSERT 0 1", "ROLLBACK"],
        "{out}\n{err}"
    );
    assert!(
        err.contains("SAVEPOINT is not supported by Strata"),
        "{err}"
    );
    assert_eq!(values(&s, "select count(*) from t"), ["0"]);
}

#[test]
fn driver_savepoints_are_refused_never_ignored() {
    let dir = tempfile::tempdir().unwrap();
    let s = Server::start(&dir.path().join("d"), &[]);
    let rt = tokio::runtime::Runtime::new().unwrap();
    rt.block_on(async {
        let mut c = s.client("postgres").await;
        c.batch_execute("create table t (a int)").await.unwrap();
        let e = c.batch_execute("savepoint a").await.unwrap_err();
        assert_eq!(code_of(&e), "25P01");
        let mut tx = c.transaction().await.unwrap();
        tx.execute("insert into t values (70)", &[]).await.unwrap();
        let e = tx.savepoint("sp").await.err().expect("savepoint refused");
        assert_eq!(code_of(&e), "0A000");
        let e = tx
            .execute("insert into t values (71)", &[])
            .await
            .unwrap_err();
        assert_eq!(code_of(&e), "25P02");
        tx.commit().await.unwrap(); // answered ROLLBACK
        let n: i64 = c
            .query_one("select count(*) from t", &[])
            .await
            .unwrap()
            .get(0);
        assert_eq!(n, 0);
    });
}

/// Whether `password` opens database template1, where pg_hba.conf requires SCRAM
/// (`HBA_TRUST_POSTGRES_ONLY`: passwords are set in database postgres, trusted).
fn can_connect(port: u16, password: Option<&str>) -> bool {
    psql_db(port, "template1", &["-w", "-c", "select 1"], password)
        .status
        .success()
}

/// A new cluster in `data` with `HBA_TRUST_POSTGRES_ONLY`, started.
fn start_with_password_rules(data: &std::path::Path) -> Server {
    init(data, None);
    write_hba(data, HBA_TRUST_POSTGRES_ONLY);
    Server::start(data, &[])
}

#[test]
fn psql_a_password_change_commits_with_its_block() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("d");
    let s = start_with_password_rules(&data);
    for sql in [
        "BEGIN; ALTER ROLE strata PASSWORD 'q'; ROLLBACK",
        "BEGIN; ALTER ROLE strata PASSWORD 'q'; SELECT 1/0; COMMIT",
        "ALTER ROLE strata PASSWORD 'q'; SELECT 1/0",
    ] {
        psql_db(s.port, "postgres", &["-c", sql], None);
        assert!(!can_connect(s.port, Some("q")), "{sql}: no password yet");
    }
    s.psql_ok(
        "postgres",
        &["-c", "BEGIN; ALTER ROLE strata PASSWORD 'q'; COMMIT"],
    );
    assert!(!can_connect(s.port, None));
    assert!(can_connect(s.port, Some("q")));
    // Rolled back, the change leaves the password as it was.
    let out = psql_db(
        s.port,
        "template1",
        &[
            "-c",
            "BEGIN",
            "-c",
            "ALTER ROLE strata PASSWORD 'other'",
            "-c",
            "ROLLBACK",
        ],
        Some("q"),
    );
    assert!(out.status.success());
    assert!(can_connect(s.port, Some("q")));
    assert!(!can_connect(s.port, Some("other")));
    // It survives a restart (the file was replaced durably at commit).
    drop(s);
    let s = Server::start(&data, &[]);
    assert!(can_connect(s.port, Some("q")));
}

#[test]
fn driver_a_password_change_commits_with_its_block() {
    let dir = tempfile::tempdir().unwrap();
    let s = start_with_password_rules(&dir.path().join("d"));
    let rt = tokio::runtime::Runtime::new().unwrap();
    rt.block_on(async {
        let mut c = s.client("postgres").await;
        let tx = c.transaction().await.unwrap();
        tx.batch_execute("alter role strata password 'q'")
            .await
            .unwrap();
        tx.rollback().await.unwrap();
        assert!(!can_connect(s.port, Some("q")));
        let tx = c.transaction().await.unwrap();
        tx.batch_execute("alter role strata password 'q'")
            .await
            .unwrap();
        assert!(!can_connect(s.port, Some("q")), "not before COMMIT");
        tx.commit().await.unwrap();
        assert!(!can_connect(s.port, None));
        assert!(can_connect(s.port, Some("q")));
    });
}

/// A raw protocol connection, for what drivers do not let a test send.
struct Raw(std::net::TcpStream);

impl Raw {
    fn connect(port: u16) -> Raw {
        use std::io::Write;
        let mut raw = std::net::TcpStream::connect(("127.0.0.1", port)).unwrap();
        raw.set_read_timeout(Some(std::time::Duration::from_secs(10)))
            .unwrap();
        let params = b"user\0strata\0database\0postgres\0\0";
        let mut startup = Vec::new();
        startup.extend_from_slice(&((8 + params.len()) as i32).to_be_bytes());
        startup.extend_from_slice(&196608i32.to_be_bytes());
        startup.extend_from_slice(params);
        raw.write_all(&startup).unwrap();
        let mut r = Raw(raw);
        r.until_ready();
        r
    }

    /// One backend message: (type, body).
    fn read(&mut self) -> (u8, Vec<u8>) {
        use std::io::Read;
        let mut head = [0u8; 5];
        self.0.read_exact(&mut head).unwrap();
        let len = i32::from_be_bytes([head[1], head[2], head[3], head[4]]) as usize;
        let mut body = vec![0u8; len - 4];
        self.0.read_exact(&mut body).unwrap();
        (head[0], body)
    }

    /// Messages up to ReadyForQuery: their types, and the transaction status.
    fn until_ready(&mut self) -> (Vec<(u8, Vec<u8>)>, u8) {
        let mut seen = Vec::new();
        loop {
            let (t, body) = self.read();
            if t == b'Z' {
                return (seen, body[0]);
            }
            seen.push((t, body));
        }
    }

    fn send(&mut self, t: u8, body: &[u8]) {
        use std::io::Write;
        let mut m = vec![t];
        m.extend_from_slice(&((body.len() + 4) as i32).to_be_bytes());
        m.extend_from_slice(body);
        self.0.write_all(&m).unwrap();
    }

    fn query(&mut self, sql: &str) -> (Vec<(u8, Vec<u8>)>, u8) {
        self.send(b'Q', format!("{sql}\0").as_bytes());
        self.until_ready()
    }

    /// Parse, Bind and Execute of `sql` (unnamed statement and portal, no Sync).
    fn extended(&mut self, sql: &str) {
        self.send(b'P', format!("\0{sql}\0\0\0").as_bytes());
        self.send(b'B', b"\0\0\0\0\0\0\0\0");
        self.send(b'E', b"\0\0\0\0\0");
    }
}

#[test]
fn extended_protocol_error_skips_to_sync_and_fails_the_block() {
    let dir = tempfile::tempdir().unwrap();
    let s = Server::start(&dir.path().join("d"), &[]);
    s.psql_ok("postgres", &["-c", "create table t (a int)"]);
    let mut raw = Raw::connect(s.port);
    let (_, status) = raw.query("BEGIN");
    assert_eq!(status, b'T');
    raw.extended("insert into t values (1)");
    raw.extended("selec 1");
    raw.extended("insert into t values (2)");
    raw.send(b'S', b"");
    let (seen, status) = raw.until_ready();
    let types: Vec<u8> = seen.iter().map(|(t, _)| *t).collect();
    // Parse, Bind, Execute of the first; the error; nothing of the third.
    assert_eq!(types, b"12CE", "{:?}", String::from_utf8_lossy(&types));
    let err = String::from_utf8_lossy(&seen[3].1).to_string();
    assert!(err.contains("42601"), "{err}");
    assert_eq!(status, b'E', "the block has failed");
    let (seen, status) = raw.query("select 1");
    assert!(String::from_utf8_lossy(&seen[0].1).contains("25P02"));
    assert_eq!(status, b'E');
    let (seen, status) = raw.query("COMMIT");
    assert_eq!(seen[0].0, b'C');
    assert_eq!(seen[0].1, b"ROLLBACK\0");
    assert_eq!(status, b'I');
    assert_eq!(values(&s, "select count(*) from t"), ["0"]);
}

#[test]
fn a_password_change_in_flight_at_a_crash_does_not_survive() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("d");
    let mut s = start_with_password_rules(&data);
    let rt = tokio::runtime::Runtime::new().unwrap();
    rt.block_on(async {
        let c = s.client("postgres").await;
        // The role catalog's row is written (and WAL-logged) by the statement;
        // only the commit record makes it count.
        c.batch_execute("begin; alter role strata password 'q'")
            .await
            .unwrap();
        s.kill9();
    });
    let s = Server::start(&data, &[]);
    assert!(
        !can_connect(s.port, Some("q")),
        "the change never committed"
    );
}

#[test]
fn a_pipeline_up_to_sync_is_one_transaction() {
    let dir = tempfile::tempdir().unwrap();
    let s = Server::start(&dir.path().join("d"), &[]);
    s.psql_ok("postgres", &["-c", "create table t (a int)"]);
    let mut raw = Raw::connect(s.port);
    // An error rolls back the Executes before it in the pipeline.
    raw.extended("insert into t values (1)");
    raw.extended("select 1/0");
    raw.extended("insert into t values (2)");
    raw.send(b'S', b"");
    let (seen, status) = raw.until_ready();
    let types: Vec<u8> = seen.iter().map(|(t, _)| *t).collect();
    // The error at the second Execute; nothing of the third.
    assert_eq!(types, b"12C12E", "{:?}", String::from_utf8_lossy(&types));
    assert_eq!(status, b'I');
    assert_eq!(values(&s, "select count(*) from t"), ["0"]);
    // Without an error, Sync commits them all.
    raw.extended("insert into t values (3)");
    raw.extended("insert into t values (4)");
    raw.send(b'S', b"");
    let (_, status) = raw.until_ready();
    assert_eq!(status, b'I');
    assert_eq!(values(&s, "select a from t order by a"), ["3", "4"]);
    // A statement that never runs in a block: alone it runs, after others 25001.
    raw.extended("insert into t values (5)");
    raw.extended("vacuum");
    raw.send(b'S', b"");
    let (seen, _) = raw.until_ready();
    let err = String::from_utf8_lossy(&seen.last().unwrap().1).to_string();
    assert!(
        err.contains("VACUUM cannot be executed within a pipeline"),
        "{err}"
    );
    raw.extended("vacuum");
    raw.send(b'S', b"");
    let (seen, _) = raw.until_ready();
    assert_eq!(seen.last().unwrap().0, b'C');
    assert_eq!(values(&s, "select a from t order by a"), ["3", "4"]);
}

/// A VALUES list of `n` rows, row `bad` replaced by `with`. Each row's strings
/// hold a backslash before their closing quote (not an escape in a standard
/// string), a comma, a parenthesis, a doubled quote and a semicolon.
fn values_list(n: usize, bad: usize, with: &str) -> String {
    let mut sql = String::from("insert into v values ");
    for i in 0..n {
        if i > 0 {
            sql.push_str(", ");
        }
        if i == bad {
            sql.push_str(with);
        } else {
            sql.push_str(&format!("({i}, 'row, (\\' || {i} || ''';')"));
        }
    }
    sql
}

#[test]
fn an_error_in_a_late_values_row_inserts_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let s = Server::start(&dir.path().join("d"), &[]);
    let rt = tokio::runtime::Runtime::new().unwrap();
    rt.block_on(async {
        let c = s.client("postgres").await;
        c.batch_execute("create table v (a int4, b text)")
            .await
            .unwrap();
        let count = || async {
            let n: i64 = c
                .query_one("select count(*) from v", &[])
                .await
                .unwrap()
                .get(0);
            n
        };
        // Rows are parsed, bound and inserted one at a time; an error at row 40,000
        // of 50,000 (runtime, type, syntax, width) still inserts nothing.
        for (bad, code) in [
            ("(1/0, 'x')", "22012"),
            ("('abc', 'x')", "22P02"),
            ("(1 +, 'x')", "42601"),
            ("(1)", "42601"),
            ("(1, 'x', 2)", "42601"),
        ] {
            let e = c
                .batch_execute(&values_list(50_000, 40_000, bad))
                .await
                .unwrap_err();
            assert_eq!(code_of(&e), code, "{bad}: {e:?}");
            assert_eq!(count().await, 0, "{bad}");
        }
        let e = c
            .batch_execute(&values_list(3, 2, "(1)"))
            .await
            .unwrap_err();
        let db = e.as_db_error().unwrap();
        assert_eq!(db.message(), "VALUES lists must all be the same length");
        c.batch_execute(&values_list(3, 9, "")).await.unwrap();
        let b: String = c
            .query_one("select b from v where a = 2", &[])
            .await
            .unwrap()
            .get(0);
        assert_eq!(b, "row, (\\2';");
        c.batch_execute("truncate v").await.unwrap();
        // Quotes, parentheses, commas and semicolons in strings and comments do
        // not end a row or the statement; the next statement runs after it.
        let r = c
            .simple_query(
                "insert into v values (1, 'a;b'), (2, E'it\\'s);'), /* ; ), ( */ (3, $$;$$), \
                 (4, $q$'$q$) -- ;\n; select count(*), max(b) from v",
            )
            .await
            .unwrap();
        let row = r
            .iter()
            .find_map(|m| match m {
                tokio_postgres::SimpleQueryMessage::Row(r) => Some(r),
                _ => None,
            })
            .expect("a row");
        assert_eq!((row.get(0), row.get(1)), (Some("4"), Some("it's);")));
        // A syntax error in any row of a multi-statement query stops it before
        // anything runs, even a COMMIT before it (PostgreSQL parses it whole).
        let e = c
            .batch_execute(
                "insert into v values (5, 'x'); commit; insert into v values (6, 'y'), (7 +, 'z')",
            )
            .await
            .unwrap_err();
        assert_eq!(code_of(&e), "42601");
        assert_eq!(count().await, 4);
        // Parameters in any row (extended protocol), and PostgreSQL's width checks.
        let n = c
            .execute(
                "insert into v values ($1, 'p'), ($2, $3)",
                &[&10i32, &11i32, &"q"],
            )
            .await
            .unwrap();
        assert_eq!(n, 2);
        let e = c
            .execute("insert into v (a, b) values ($1)", &[&1i32])
            .await
            .unwrap_err();
        assert_eq!(
            e.as_db_error().unwrap().message(),
            "INSERT has more target columns than expressions"
        );
        assert_eq!(count().await, 6);
    });
}
