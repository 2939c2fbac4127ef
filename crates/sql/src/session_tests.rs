//! The transaction-block state machine (session rules 1-6 and the module diagram),
//! driven in-process on a real engine in a temporary directory: BEGIN, an error
//! failing the block (25P02 until its end), COMMIT of a failed block answering
//! ROLLBACK, the implicit block of a multi-statement query and of a pipeline,
//! savepoints refused (25P01 outside a block, 0A000 inside), statements that never
//! run in a block (25001), settings restored by a rollback, and Describe.

use super::fuzz_tests::with_session;
use super::session::{Collect, Executed, Output, Session};
use super::{parse, Datum, SqlResult, SqlType};
use crate::TextOut;

/// Runs a simple-protocol query string; its results and rows.
fn q(s: &mut Session<'_>, sql: &str) -> Collect {
    let mut c = Collect::default();
    s.run_simple(sql.to_string(), &mut c);
    c
}

/// The SQLSTATE of each statement's result ("" for success).
fn codes(c: &Collect) -> Vec<&'static str> {
    c.results
        .iter()
        .map(|r| match r {
            Ok(_) => "",
            Err(e) => e.code,
        })
        .collect()
}

fn ok(r: &SqlResult<Executed>) -> &Executed {
    r.as_ref().unwrap_or_else(|e| panic!("{e}"))
}

fn count(s: &mut Session<'_>) -> i64 {
    let c = q(s, "SELECT count(*) FROM t");
    assert_eq!(codes(&c), [""]);
    match c.rows[..] {
        [ref r] => match r[..] {
            [Datum::Int8(n)] => n,
            _ => panic!("{r:?}"),
        },
        _ => panic!("{:?}", c.rows),
    }
}

fn notices(r: &SqlResult<Executed>) -> Vec<String> {
    ok(r).notices.iter().map(|(_, m)| m.clone()).collect()
}

#[test]
fn an_error_fails_the_block_until_its_end_and_commit_answers_rollback() {
    with_session(8 << 20, |s| {
        let c = q(s, "BEGIN");
        assert!(matches!(&ok(&c.results[0]).output, Output::TxnStart(t) if t == "BEGIN"));
        assert!(s.in_block());
        assert_eq!(codes(&q(s, "INSERT INTO t VALUES (1, 'a')")), [""]);
        assert_eq!(codes(&q(s, "SELECT * FROM nosuch")), ["42P01"]);
        assert!(
            s.in_block(),
            "a failed block stays until COMMIT or ROLLBACK"
        );
        for sql in [
            "SELECT 1",
            "INSERT INTO t VALUES (2, 'b')",
            "BEGIN",
            "SHOW work_mem",
        ] {
            assert_eq!(codes(&q(s, sql)), ["25P02"], "{sql}");
        }
        let c = q(s, "COMMIT");
        assert!(matches!(&ok(&c.results[0]).output, Output::TxnEnd(t) if t == "ROLLBACK"));
        assert!(!s.in_block());
        assert_eq!(count(s), 0, "the failed block's insert was rolled back");
    });
}

#[test]
fn commit_keeps_and_rollback_discards_a_blocks_writes() {
    with_session(8 << 20, |s| {
        q(s, "BEGIN");
        q(s, "INSERT INTO t VALUES (1, 'a'), (2, 'b')");
        assert_eq!(count(s), 2, "the block sees its own writes");
        let c = q(s, "COMMIT");
        assert!(matches!(&ok(&c.results[0]).output, Output::TxnEnd(t) if t == "COMMIT"));
        q(s, "BEGIN");
        q(s, "DELETE FROM t WHERE a = 1");
        q(s, "CREATE TABLE u (x int)");
        q(s, "ROLLBACK");
        assert_eq!(count(s), 2);
        assert_eq!(codes(&q(s, "SELECT * FROM u")), ["42P01"]);
    });
}

#[test]
fn begin_and_commit_out_of_place_warn_as_postgres_does() {
    with_session(8 << 20, |s| {
        let c = q(s, "COMMIT");
        assert_eq!(
            notices(&c.results[0]),
            ["there is no transaction in progress"]
        );
        let c = q(s, "ROLLBACK");
        assert_eq!(
            notices(&c.results[0]),
            ["there is no transaction in progress"]
        );
        q(s, "BEGIN");
        let c = q(s, "BEGIN");
        assert_eq!(
            notices(&c.results[0]),
            ["there is already a transaction in progress"]
        );
        assert!(s.in_block());
        q(s, "ROLLBACK");
        assert!(!s.in_block());
    });
}

#[test]
fn a_multi_statement_query_is_one_implicit_block() {
    with_session(8 << 20, |s| {
        let c = q(
            s,
            "INSERT INTO t VALUES (1, 'a'); INSERT INTO t VALUES (2, 'b')",
        );
        assert_eq!(codes(&c), ["", ""]);
        assert!(!s.in_block(), "committed at its end");
        assert_eq!(count(s), 2);
        // The first error rolls back the whole string; the rest does not run.
        let c = q(
            s,
            "INSERT INTO t VALUES (3, 'c'); SELECT 1 / 0; INSERT INTO t VALUES (4, 'd')",
        );
        assert_eq!(codes(&c), ["", "22012"]);
        assert!(!s.in_block());
        assert_eq!(count(s), 2);
        // COMMIT in it ends the block (with a warning); later statements start another.
        let c = q(
            s,
            "INSERT INTO t VALUES (5, 'e'); COMMIT; INSERT INTO t VALUES (6, 'f'); SELECT 1 / 0",
        );
        assert_eq!(codes(&c), ["", "", "", "22012"]);
        assert_eq!(
            notices(&c.results[1]),
            ["there is no transaction in progress"]
        );
        assert_eq!(
            count(s),
            3,
            "committed before the COMMIT, rolled back after"
        );
        // BEGIN in it makes the block explicit: it stays open after the string.
        let c = q(
            s,
            "INSERT INTO t VALUES (7, 'g'); BEGIN; INSERT INTO t VALUES (8, 'h')",
        );
        assert_eq!(codes(&c), ["", "", ""]);
        assert!(s.in_block());
        q(s, "ROLLBACK");
        assert_eq!(
            count(s),
            3,
            "the explicit block, first insert included, rolled back"
        );
    });
}

#[test]
fn savepoints_are_refused_never_ignored() {
    with_session(8 << 20, |s| {
        for sql in [
            "SAVEPOINT a",
            "RELEASE SAVEPOINT a",
            "ROLLBACK TO SAVEPOINT a",
        ] {
            assert_eq!(codes(&q(s, sql)), ["25P01"], "{sql} outside a block");
        }
        // In a multi-statement query's implicit block, as PostgreSQL: 25P01.
        assert_eq!(codes(&q(s, "SELECT 1; SAVEPOINT a")), ["", "25P01"]);
        assert!(!s.in_block());
        q(s, "BEGIN");
        let c = q(s, "SAVEPOINT a");
        assert_eq!(codes(&c), ["0A000"]);
        assert!(s.in_block());
        assert_eq!(
            codes(&q(s, "SELECT 1")),
            ["25P02"],
            "the 0A000 failed the block"
        );
        q(s, "ROLLBACK");
    });
}

#[test]
fn some_statements_never_run_in_a_block() {
    with_session(8 << 20, |s| {
        for sql in [
            "VACUUM t",
            "CREATE DATABASE d2",
            "DROP DATABASE IF EXISTS d2",
            "CREATE TABLESPACE ts LOCATION '/nonexistent'",
            "DROP TABLESPACE IF EXISTS ts",
        ] {
            q(s, "BEGIN");
            let c = q(s, sql);
            assert_eq!(codes(&c), ["25001"], "{sql}");
            assert!(
                c.results[0]
                    .as_ref()
                    .unwrap_err()
                    .message
                    .ends_with("cannot run inside a transaction block"),
                "{sql}"
            );
            assert_eq!(
                codes(&q(s, "SELECT 1")),
                ["25P02"],
                "{sql} failed the block"
            );
            q(s, "ROLLBACK");
            // Nor in the implicit block of a multi-statement query.
            assert_eq!(codes(&q(s, &format!("SELECT 1; {sql}"))), ["", "25001"]);
        }
        assert_eq!(codes(&q(s, "VACUUM t")), [""], "alone, it runs");
    });
}

#[test]
fn a_rollback_restores_the_settings_set_in_the_block() {
    with_session(8 << 20, |s| {
        let show = |s: &mut Session<'_>| q(s, "SHOW work_mem").rows[0][0].clone();
        q(s, "SET work_mem = '8MB'");
        q(s, "BEGIN; SET work_mem = '16MB'");
        assert_eq!(show(s), Datum::Text("16MB".into()));
        q(s, "ROLLBACK");
        assert_eq!(show(s), Datum::Text("8MB".into()));
        q(s, "BEGIN; SET work_mem = '32MB'");
        q(s, "SELECT * FROM nosuch");
        q(s, "COMMIT");
        assert_eq!(
            show(s),
            Datum::Text("8MB".into()),
            "a failed block's SET is undone"
        );
        q(s, "BEGIN; SET work_mem = '16MB'; COMMIT");
        assert_eq!(show(s), Datum::Text("16MB".into()));
        q(s, "RESET ALL");
        assert_eq!(show(s), Datum::Text("4MB".into()));
        assert_eq!(codes(&q(s, "SET nosuch = 1")), ["42704"]);
        assert_eq!(codes(&q(s, "SET server_version = '1'")), ["55P02"]);
    });
}

#[test]
fn the_executes_up_to_a_sync_are_one_implicit_block() {
    with_session(8 << 20, |s| {
        let ins = parse("INSERT INTO t VALUES ($1, 'p')").unwrap().remove(0);
        let vacuum = parse("VACUUM").unwrap().remove(0);
        let mut c = Collect::default();
        ok(&s.execute_extended(&ins, None, &[Datum::Int4(1)], &mut c));
        assert!(s.in_block(), "an Execute opens the pipeline's block");
        ok(&s.execute_extended(&ins, None, &[Datum::Int4(2)], &mut c));
        s.sync().unwrap();
        assert!(!s.in_block());
        assert_eq!(count(s), 2, "Sync committed them");
        ok(&s.execute_extended(&ins, None, &[Datum::Int4(3)], &mut c));
        let e = s.execute_extended(&vacuum, None, &[], &mut c).unwrap_err();
        assert_eq!(e.code, "25001");
        assert_eq!(e.message, "VACUUM cannot be executed within a pipeline");
        s.sync().unwrap();
        assert_eq!(count(s), 2, "the error rolled the pipeline back");
        // First in a pipeline, it runs on its own.
        ok(&s.execute_extended(&vacuum, None, &[], &mut c));
        s.sync().unwrap();
        // Too few parameters: 08P01, and the block is rolled back.
        let e = s.execute_extended(&ins, None, &[], &mut c).unwrap_err();
        assert_eq!(e.code, "08P01");
        assert!(!s.in_block());
    });
}

#[test]
fn describe_gives_parameter_types_and_columns_and_a_failed_block_prepares_only_its_end() {
    with_session(8 << 20, |s| {
        let one = |sql: &str| parse(sql).unwrap().remove(0);
        let d = s
            .describe(&one("SELECT a + $1, b, $2 FROM t WHERE b = $3"))
            .unwrap();
        assert_eq!(d.params, [SqlType::Int4, SqlType::Text, SqlType::Text]);
        assert_eq!(
            d.columns,
            [
                ("?column?".to_string(), SqlType::Int4),
                ("b".to_string(), SqlType::Text),
                ("?column?".to_string(), SqlType::Text)
            ]
        );
        let d = s.describe(&one("SHOW work_mem")).unwrap();
        assert_eq!(d.columns, [("work_mem".to_string(), SqlType::Text)]);
        let d = s.describe(&one("SHOW ALL")).unwrap();
        assert_eq!(d.columns.len(), 3, "SHOW ALL: name, setting, description");
        let d = s.describe(&one("INSERT INTO t VALUES ($1, $2)")).unwrap();
        assert_eq!(d.params, [SqlType::Int4, SqlType::Text]);
        assert!(d.columns.is_empty());
        q(s, "BEGIN");
        q(s, "SELECT * FROM nosuch");
        assert_eq!(s.prepare(&one("SELECT 1")).unwrap_err().code, "25P02");
        assert!(s.prepare(&one("COMMIT")).is_ok());
        assert!(s.prepare(&one("ROLLBACK")).is_ok());
        q(s, "ROLLBACK");
        assert!(s.prepare(&one("SELECT 1")).is_ok());
    });
}

/// The command tag of a successful statement.
fn tag(r: &SqlResult<Executed>) -> String {
    match &ok(r).output {
        Output::Command(t) | Output::TxnStart(t) | Output::TxnEnd(t) => t.clone(),
        Output::Rows(n) => format!("SELECT {n}"),
    }
}

#[test]
fn ddl_and_utility_statements_answer_as_postgres() {
    with_session(8 << 20, |s| {
        q(s, "INSERT INTO t VALUES (1, 'a')");
        let c = q(s, "CREATE TABLE IF NOT EXISTS t (a int)");
        assert_eq!(tag(&c.results[0]), "CREATE TABLE");
        assert_eq!(
            notices(&c.results[0]),
            ["relation \"t\" already exists, skipping"]
        );
        // Every name of a DROP TABLE is checked before any is dropped.
        assert_eq!(codes(&q(s, "DROP TABLE t, nosuch")), ["42P01"]);
        assert_eq!(codes(&q(s, "DROP TABLE t, t")), ["42P01"]);
        assert_eq!(count(s), 1, "t was not dropped");
        q(s, "CREATE TABLE u (x int)");
        let c = q(s, "DROP TABLE IF EXISTS nosuch, u");
        assert_eq!(tag(&c.results[0]), "DROP TABLE");
        assert_eq!(
            notices(&c.results[0]),
            ["table \"nosuch\" does not exist, skipping"]
        );
        assert_eq!(codes(&q(s, "SELECT * FROM u")), ["42P01"]);
        assert_eq!(tag(&q(s, "TRUNCATE t").results[0]), "TRUNCATE TABLE");
        assert_eq!(count(s), 0);
        assert_eq!(tag(&q(s, "CHECKPOINT").results[0]), "CHECKPOINT");
        assert_eq!(tag(&q(s, "VACUUM").results[0]), "VACUUM");
        // Databases.
        assert_eq!(codes(&q(s, "DROP DATABASE postgres")), ["55006"]);
        assert_eq!(codes(&q(s, "DROP DATABASE nosuch")), ["3D000"]);
        let c = q(s, "DROP DATABASE IF EXISTS nosuch");
        assert_eq!(
            notices(&c.results[0]),
            ["database \"nosuch\" does not exist, skipping"]
        );
        let c = q(s, "CREATE DATABASE d2 TEMPLATE postgres");
        assert_eq!(codes(&c), ["55006"], "this session is on the template");
        assert_eq!(
            tag(&q(s, "CREATE DATABASE d2").results[0]),
            "CREATE DATABASE"
        );
        assert_eq!(tag(&q(s, "DROP DATABASE d2").results[0]), "DROP DATABASE");
        assert_eq!(codes(&q(s, "DROP DATABASE d2")), ["3D000"]);
        // SHOW.
        let c = q(s, "SHOW statement_timeout");
        assert_eq!(
            c.columns,
            [("statement_timeout".to_string(), SqlType::Text)]
        );
        assert_eq!(c.rows, [[Datum::Text("0".into())]]);
        assert_eq!(codes(&q(s, "SHOW nosuch")), ["42704"]);
        q(s, "SET application_name = 'x'");
        let c = q(s, "SHOW ALL");
        assert_eq!(c.columns.len(), 3);
        assert!(c.rows.contains(&vec![
            Datum::Text("application_name".into()),
            Datum::Text("x".into()),
            Datum::Text("session setting".into()),
        ]));
    });
}

/// The rows of a query, each as text (NULL as "NULL").
fn rows_text(s: &mut Session<'_>, sql: &str) -> Vec<String> {
    let c = q(s, sql);
    assert_eq!(codes(&c), [""], "{sql}");
    c.rows
        .iter()
        .map(|r| {
            r.iter()
                .map(|d| d.to_text().unwrap_or_else(|| "NULL".into()))
                .collect::<Vec<_>>()
                .join("|")
        })
        .collect()
}

#[test]
fn update_makes_new_versions_of_the_rows_its_where_holds_for() {
    with_session(8 << 20, |s| {
        let c = q(
            s,
            "INSERT INTO t SELECT g, 'row ' || g FROM generate_series(1, 500) g",
        );
        assert_eq!(codes(&c), [""]);
        let c = q(s, "UPDATE t SET a = a + 1000, b = b || '!' WHERE a <= 10");
        assert_eq!(tag(&c.results[0]), "UPDATE 10");
        assert_eq!(count(s), 500, "an update adds no visible row");
        assert_eq!(
            rows_text(s, "SELECT a, b FROM t WHERE a > 1000 ORDER BY a LIMIT 2"),
            ["1001|row 1!", "1002|row 2!"]
        );
        assert_eq!(rows_text(s, "SELECT count(*) FROM t WHERE a <= 10"), ["0"]);
        // Every row once, even the ones whose new version lands after the scan.
        assert_eq!(
            tag(&q(s, "UPDATE t SET a = a + 1").results[0]),
            "UPDATE 500"
        );
        assert_eq!(rows_text(s, "SELECT sum(a) FROM t"), ["135750"]);
        // A rolled-back update leaves the old versions; a block sees its own.
        let c = q(
            s,
            "BEGIN; UPDATE t SET b = NULL; SELECT count(b) FROM t; ROLLBACK",
        );
        assert_eq!(codes(&c), ["", "", "", ""]);
        assert_eq!(c.rows, [vec![Datum::Int8(0)]]);
        assert_eq!(rows_text(s, "SELECT count(b) FROM t"), ["500"]);
        // Errors, with PostgreSQL's SQLSTATEs; none changes a row.
        for (sql, code) in [
            ("UPDATE t SET nope = 1", "42703"),
            ("UPDATE t SET a = 1, a = 2", "42601"),
            ("UPDATE t SET a = 'x'", "22P02"),
            ("UPDATE t SET a = 1 WHERE nope = 1", "42703"),
            ("UPDATE nosuch SET a = 1", "42P01"),
            ("UPDATE t SET a = a / 0", "22012"),
        ] {
            assert_eq!(codes(&q(s, sql)), [code], "{sql}");
        }
        assert_eq!(rows_text(s, "SELECT sum(a) FROM t"), ["135750"]);
        assert_eq!(
            tag(&q(s, "UPDATE t SET b = 'x' WHERE a = 1011").results[0]),
            "UPDATE 1"
        );
        assert_eq!(rows_text(s, "SELECT b FROM t WHERE a = 1011"), ["x"]);
    });
}

#[test]
fn clauses_that_change_a_calls_meaning_are_refused_not_ignored() {
    with_session(8 << 20, |s| {
        q(s, "INSERT INTO t VALUES (1, 'a'), (2, 'b')");
        let sql = "SELECT string_agg(b, ',' ORDER BY b USING >) FROM t";
        assert_eq!(codes(&q(s, sql)), ["0A000"], "{sql}");
        // ORDER BY inside the call is carried out (aggorder rule 1).
        assert_eq!(
            rows_text(s, "SELECT string_agg(b, ',' ORDER BY b DESC) FROM t"),
            ["b,a"]
        );
        // FILTER is carried out, not dropped.
        assert_eq!(
            rows_text(s, "SELECT count(*) FILTER (WHERE a > 1) FROM t"),
            ["1"]
        );
    });
}

#[test]
fn returning_gives_the_rows_inserted_updated_and_deleted() {
    with_session(8 << 20, |s| {
        let c = q(
            s,
            "INSERT INTO t VALUES (1, 'a'), (2, 'b') RETURNING a, b || '!' AS x",
        );
        assert_eq!(tag(&c.results[0]), "INSERT 0 2");
        assert_eq!(
            c.rows,
            [
                vec![Datum::Int4(1), Datum::Text("a!".into())],
                vec![Datum::Int4(2), Datum::Text("b!".into())]
            ]
        );
        let c = q(
            s,
            "INSERT INTO t SELECT g, 'g' FROM generate_series(3, 5) g RETURNING a",
        );
        assert_eq!(tag(&c.results[0]), "INSERT 0 3");
        assert_eq!(c.rows.len(), 3);
        let c = q(s, "UPDATE t SET a = a * 10 WHERE a <= 2 RETURNING *");
        assert_eq!(tag(&c.results[0]), "UPDATE 2");
        let mut got = c.rows.clone();
        got.sort_by_key(|r| r[0].to_text());
        assert_eq!(
            got,
            [
                vec![Datum::Int4(10), Datum::Text("a".into())],
                vec![Datum::Int4(20), Datum::Text("b".into())]
            ]
        );
        let c = q(s, "DELETE FROM t WHERE a = 10 RETURNING a + 1, b");
        assert_eq!(tag(&c.results[0]), "DELETE 1");
        assert_eq!(c.rows, [vec![Datum::Int4(11), Datum::Text("a".into())]]);
        assert_eq!(count(s), 4);
        for (sql, code) in [
            ("INSERT INTO t VALUES (9, 'z') RETURNING count(*)", "42803"),
            ("UPDATE t SET a = 1 RETURNING nope", "42703"),
            ("DELETE FROM t RETURNING a / 0", "22012"),
        ] {
            assert_eq!(codes(&q(s, sql)), [code], "{sql}");
        }
        assert_eq!(count(s), 4, "a failed RETURNING changes nothing");
    });
}

/// Runs `sql` with `chunks` as the client's COPY data.
fn q_copy(s: &mut Session<'_>, sql: &str, chunks: &[&[u8]]) -> Collect {
    let mut c = Collect {
        copy_input: chunks.iter().map(|c| c.to_vec()).collect(),
        ..Default::default()
    };
    s.run_simple(sql.to_string(), &mut c);
    c
}

#[test]
fn copy_from_stdin_inserts_and_copy_to_stdout_gives_it_back() {
    with_session(8 << 20, |s| {
        let c = q_copy(
            s,
            "COPY t FROM STDIN",
            &[b"1\tone\n2\t\\N\n3\tthr", b"ee\n\\.\n"],
        );
        assert_eq!(tag(&c.results[0]), "COPY 3");
        assert_eq!(
            rows_text(s, "SELECT a, b FROM t ORDER BY a"),
            ["1|one", "2|NULL", "3|three"]
        );
        let c = q_copy(
            s,
            "COPY t (b, a) FROM STDIN WITH (FORMAT csv, HEADER)",
            &[b"b,a\n\"x,y\",4\n,5\n"],
        );
        assert_eq!(tag(&c.results[0]), "COPY 2");
        assert_eq!(
            rows_text(s, "SELECT b FROM t WHERE a >= 4 ORDER BY a"),
            ["x,y", "NULL"]
        );
        let c = q_copy(s, "COPY t TO STDOUT WITH (FORMAT csv, HEADER)", &[]);
        assert_eq!(tag(&c.results[0]), "COPY 5");
        let mut lines: Vec<&str> = std::str::from_utf8(&c.copied).unwrap().lines().collect();
        assert_eq!(lines.remove(0), "a,b", "the header first");
        lines.sort();
        assert_eq!(lines, ["1,one", "2,", "3,three", "4,\"x,y\"", "5,"]);
        // Errors: nothing of a failed COPY stays.
        for (data, code) in [
            (&b"6\tsix\textra\n"[..], "22P04"),
            (b"7\n", "22P04"),
            (b"x\ty\n", "22P02"),
        ] {
            let c = q_copy(s, "COPY t FROM STDIN", &[b"9\tnine\n", data]);
            assert_eq!(codes(&c), [code]);
        }
        assert_eq!(count(s), 5);
        for (sql, code) in [
            ("COPY nosuch FROM STDIN", "42P01"),
            ("COPY t (nope) FROM STDIN", "42703"),
            ("COPY t FROM '/nonexistent/strata/copy.data'", "58P01"),
            ("COPY t TO 'relative.data'", "42602"),
            ("COPY t FROM STDIN WITH (FORMAT binary)", "0A000"),
        ] {
            assert_eq!(codes(&q_copy(s, sql, &[])), [code], "{sql}");
        }
    });
}

#[test]
fn copy_to_and_from_a_server_file_round_trips() {
    with_session(8 << 20, |s| {
        q(
            s,
            "INSERT INTO t VALUES (1, 'one'), (2, NULL), (3, 'tab\there')",
        );
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("t.data");
        let path = path.to_str().unwrap();
        let c = q(s, &format!("COPY t TO '{path}'"));
        assert_eq!(tag(&c.results[0]), "COPY 3");
        assert_eq!(
            std::fs::read_to_string(path).unwrap(),
            "1\tone\n2\t\\N\n3\ttab\\there\n"
        );
        q(s, "DELETE FROM t");
        let c = q(s, &format!("COPY t FROM '{path}'"));
        assert_eq!(tag(&c.results[0]), "COPY 3");
        assert_eq!(
            rows_text(s, "SELECT coalesce(b, 'null') FROM t ORDER BY a"),
            ["one", "null", "tab\there"]
        );
    });
}

#[test]
fn not_null_and_default_hold_for_insert_update_and_copy() {
    with_session(8 << 20, |s| {
        let c = q(
            s,
            "CREATE TABLE k (id int NOT NULL, n bigint DEFAULT 7 * 6, note text NOT NULL DEFAULT 'none', f bool NULL)",
        );
        assert_eq!(codes(&c), [""]);
        assert_eq!(codes(&q(s, "INSERT INTO k (id) VALUES (1)")), [""]);
        assert_eq!(codes(&q(s, "INSERT INTO k (id, n) VALUES (2, NULL)")), [""]);
        let c = q_copy(s, "COPY k (id, f) FROM STDIN", &[b"3\tt\n"]);
        assert_eq!(codes(&c), [""]);
        assert_eq!(
            rows_text(s, "SELECT id, n, note, f FROM k ORDER BY id"),
            ["1|42|none|NULL", "2|NULL|none|NULL", "3|42|none|t"]
        );
        for (sql, code) in [
            ("INSERT INTO k (n) VALUES (1)", "23502"),
            ("INSERT INTO k VALUES (NULL, 1, 'x', true)", "23502"),
            ("INSERT INTO k (id, note) VALUES (4, NULL)", "23502"),
            ("UPDATE k SET note = NULL WHERE id = 1", "23502"),
            ("CREATE TABLE bad1 (a int DEFAULT 'x')", "22P02"),
            ("CREATE TABLE bad2 (a int DEFAULT true)", "42804"),
            ("CREATE TABLE bad3 (a int, b int DEFAULT a)", "0A000"),
            ("CREATE TABLE bad4 (a int NULL NOT NULL)", "42601"),
        ] {
            assert_eq!(codes(&q(s, sql)), [code], "{sql}");
        }
        let c = q_copy(s, "COPY k (n) FROM STDIN", &[b"5\n"]);
        assert_eq!(codes(&c), ["23502"]);
        assert_eq!(rows_text(s, "SELECT count(*) FROM k"), ["3"]);
    });
}

#[test]
fn varchar_and_char_lengths_are_enforced_as_postgres_does() {
    with_session(8 << 20, |s| {
        let c = q(
            s,
            "CREATE TABLE v (a varchar(3), b char(4), c character, d varchar)",
        );
        assert_eq!(codes(&c), [""]);
        let ok = q(
            s,
            "INSERT INTO v VALUES ('abc', 'xy', 'z', repeat('long', 100))",
        );
        assert_eq!(codes(&ok), [""], "{:?}", ok.results);
        // Trailing spaces beyond the length are cut, not an error.
        assert_eq!(
            codes(&q(s, "INSERT INTO v VALUES ('ab   ', 'w     ', NULL, '')")),
            [""]
        );
        assert_eq!(
            rows_text(s, "SELECT a, b, length(d) FROM v ORDER BY a DESC"),
            ["abc|xy  |400", "ab |w   |0"]
        );
        for (sql, code) in [
            ("INSERT INTO v (a) VALUES ('abcd')", "22001"),
            ("INSERT INTO v (b) VALUES ('12345')", "22001"),
            ("INSERT INTO v (c) VALUES ('zz')", "22001"),
            ("UPDATE v SET a = a || 'x'", "22001"),
            ("CREATE TABLE v0 (a varchar(0))", "22023"),
            ("SELECT repeat('long', 1000000000)", "54000"),
        ] {
            assert_eq!(codes(&q(s, sql)), [code], "{sql}");
        }
        let c = q_copy(s, "COPY v (a) FROM STDIN", &[b"toolong\n"]);
        assert_eq!(codes(&c), ["22001"]);
        assert_eq!(rows_text(s, "SELECT count(*) FROM v"), ["2"]);
    });
}

#[test]
fn timestamps_store_compare_print_and_default_to_the_transaction_start() {
    with_session(8 << 20, |s| {
        let c = q(
            s,
            "CREATE TABLE h (id int, at timestamp DEFAULT now(), tz timestamptz DEFAULT current_timestamp)",
        );
        assert_eq!(codes(&c), [""]);
        let c = q(
            s,
            "INSERT INTO h VALUES (1, '2026-01-02 03:04:05.5', '2026-01-02 03:04:05+02'), (2, '1999-12-31T23:59:59', '2000-01-01 00:00:00 UTC')",
        );
        assert_eq!(codes(&c), [""]);
        assert_eq!(
            rows_text(s, "SELECT at, tz FROM h ORDER BY at"),
            [
                "1999-12-31 23:59:59|2000-01-01 00:00:00+00",
                "2026-01-02 03:04:05.5|2026-01-02 01:04:05+00"
            ]
        );
        assert_eq!(
            rows_text(s, "SELECT id FROM h WHERE at > '2000-01-01' AND tz < now()"),
            ["1"]
        );
        // One transaction, one now(): both defaults and both rows agree.
        let c = q(
            s,
            "BEGIN; INSERT INTO h (id) VALUES (3); INSERT INTO h (id) VALUES (4); COMMIT",
        );
        assert_eq!(codes(&c), ["", "", "", ""]);
        assert_eq!(
            rows_text(s, "SELECT min(at) = max(at) FROM h WHERE id >= 3"),
            ["t"]
        );
        assert_eq!(
            rows_text(s, "SELECT count(*) FROM h WHERE id >= 3 AND at = tz"),
            ["2"]
        );
        for (sql, code) in [
            ("INSERT INTO h (at) VALUES ('yesterday-ish')", "22007"),
            ("INSERT INTO h (at) VALUES ('2023-02-30')", "22008"),
            ("INSERT INTO h (at) VALUES (5)", "42804"),
        ] {
            assert_eq!(codes(&q(s, sql)), [code], "{sql}");
        }
    });
}

#[test]
fn smallint_is_an_integer_of_its_own_width() {
    with_session(8 << 20, |s| {
        assert_eq!(codes(&q(s, "CREATE TABLE sm (a smallint, b int2)")), [""]);
        assert_eq!(
            codes(&q(s, "INSERT INTO sm VALUES (32767, -32768), (1, '7')")),
            [""]
        );
        assert_eq!(
            rows_text(s, "SELECT sum(a), min(b), max(a) + 1 FROM sm"),
            ["32768|-32768|32768"]
        );
        assert_eq!(rows_text(s, "SELECT b FROM sm WHERE a = 1"), ["7"]);
        for (sql, code) in [
            ("INSERT INTO sm (a) VALUES (32768)", "22003"),
            ("INSERT INTO sm (a) VALUES ('40000')", "22003"),
            ("UPDATE sm SET a = a + a", "22003"),
        ] {
            assert_eq!(codes(&q(s, sql)), [code], "{sql}");
        }
    });
}

#[test]
fn vacuum_options_run_or_are_refused_never_skipped() {
    with_session(8 << 20, |s| {
        for (sql, code) in [
            ("VACUUM (FULL) t", "0A000"),
            ("VACUUM (VERBOSE, FREEZE) t", "0A000"),
            ("VACUUM FULL t", "0A000"),
            ("VACUUM (VERBOSE, ANALYZE false) t", ""),
            ("VACUUM ANALYZE t", ""),
            ("VACUUM (VERBOSE", "42601"),
        ] {
            assert_eq!(codes(&q(s, sql)), [code], "{sql}");
        }
    });
}

#[test]
fn check_constraints_hold_for_insert_update_and_copy() {
    with_session(8 << 20, |s| {
        let c = q(
            s,
            "CREATE TABLE ck (a int CHECK (a > 0), b int, CONSTRAINT b_le_a CHECK (b <= a), CHECK (b <> 13))",
        );
        assert_eq!(codes(&c), [""]);
        assert_eq!(
            codes(&q(s, "INSERT INTO ck VALUES (5, 3), (7, NULL)")),
            [""]
        );
        let c = q(s, "INSERT INTO ck VALUES (0, 0)");
        assert_eq!(codes(&c), ["23514"]);
        let Err(e) = &c.results[0] else { panic!() };
        assert_eq!(
            e.message,
            "new row for relation \"ck\" violates check constraint \"ck_a_check\""
        );
        for (sql, code) in [
            ("INSERT INTO ck VALUES (5, 6)", "23514"),
            ("INSERT INTO ck VALUES (20, 13)", "23514"),
            ("UPDATE ck SET b = a + 1", "23514"),
            ("CREATE TABLE ck2 (a int CHECK (a + 1))", "42804"),
            ("CREATE TABLE ck3 (a int CHECK (nope > 0))", "42703"),
            ("CREATE TABLE ck4 (a int REFERENCES ck (a))", "42830"),
            (
                "CREATE TABLE ck5 (a int, FOREIGN KEY (a) REFERENCES ck (a) DEFERRABLE)",
                "0A000",
            ),
        ] {
            assert_eq!(codes(&q(s, sql)), [code], "{sql}");
        }
        let c = q_copy(s, "COPY ck FROM STDIN", &[b"9\t1\n-1\t-5\n"]);
        assert_eq!(codes(&c), ["23514"]);
        assert_eq!(codes(&q(s, "UPDATE ck SET b = b - 1")), [""]);
        assert_eq!(
            rows_text(s, "SELECT a, b FROM ck ORDER BY a"),
            ["5|2", "7|NULL"]
        );
    });
}

#[test]
fn date_uuid_and_bytea_read_write_and_compare() {
    with_session(8 << 20, |s| {
        let c = q(s, "CREATE TABLE d (day date, id uuid, raw bytea)");
        assert_eq!(codes(&c), [""]);
        let c = q(
            s,
            "INSERT INTO d VALUES ('2026-11-24', 'A0EEBC99-9C0B-4EF8-BB6D-6BB9BD380A11', '\\x00ff10'), ('1999-12-31', '{a0eebc999c0b4ef8bb6d6bb9bd380a12}', 'a\\\\b\\001')",
        );
        assert_eq!(codes(&c), [""], "{:?}", c.results);
        assert_eq!(
            rows_text(s, "SELECT day, id, raw FROM d ORDER BY day"),
            [
                "1999-12-31|a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a12|\\x615c6201",
                "2026-11-24|a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11|\\x00ff10"
            ]
        );
        assert_eq!(
            rows_text(s, "SELECT count(*) FROM d WHERE day <= current_date AND day >= '2000-01-01'::timestamp"),
            ["1"]
        );
        assert_eq!(
            rows_text(
                s,
                "SELECT day FROM d WHERE id = 'a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a12'"
            ),
            ["1999-12-31"]
        );
        for (sql, code) in [
            ("INSERT INTO d (day) VALUES ('2026-02-30')", "22008"),
            ("INSERT INTO d (id) VALUES ('not-a-uuid')", "22P02"),
            ("INSERT INTO d (raw) VALUES ('\\xabc')", "22P02"),
        ] {
            assert_eq!(codes(&q(s, sql)), [code], "{sql}");
        }
    });
}

#[test]
fn alter_table_renames_tables_and_columns_in_the_transaction() {
    with_session(8 << 20, |s| {
        assert_eq!(
            codes(&q(s, "INSERT INTO t VALUES (1, 'a'), (2, 'b')")),
            [""]
        );
        let c = q(
            s,
            "BEGIN; ALTER TABLE t RENAME TO u; SELECT count(*) FROM u; ROLLBACK",
        );
        assert_eq!(codes(&c), ["", "", "", ""]);
        assert_eq!(count(s), 2, "rolled back: t is t again");
        assert_eq!(codes(&q(s, "ALTER TABLE t RENAME COLUMN a TO id")), [""]);
        let c = q(s, "SELECT id FROM t WHERE id = 2");
        assert_eq!((codes(&c), c.rows.len()), (vec![""], 1));
        assert_eq!(codes(&q(s, "SELECT a FROM t")), ["42703"]);
        assert_eq!(
            codes(&q(s, "ALTER TABLE t RENAME COLUMN nosuch TO x")),
            ["42703"]
        );
        assert_eq!(
            codes(&q(s, "ALTER TABLE t RENAME COLUMN id TO b")),
            ["42701"]
        );
        assert_eq!(codes(&q(s, "CREATE TABLE other (x int)")), [""]);
        assert_eq!(codes(&q(s, "ALTER TABLE t RENAME TO other")), ["42P07"]);
        let c = q(s, "ALTER TABLE t RENAME TO renamed");
        assert!(matches!(&ok(&c.results[0]).output, Output::Command(t) if t == "ALTER TABLE"));
        assert_eq!(codes(&q(s, "SELECT * FROM t")), ["42P01"]);
        let c = q(s, "SELECT count(*) FROM renamed");
        assert_eq!(c.rows, vec![vec![Datum::Int8(2)]]);
        assert_eq!(codes(&q(s, "ALTER TABLE nosuch RENAME TO x")), ["42P01"]);
        let c = q(s, "ALTER TABLE IF EXISTS nosuch RENAME TO x");
        assert_eq!(
            notices(&c.results[0]),
            ["relation \"nosuch\" does not exist, skipping"]
        );
        assert_eq!(
            codes(&q(s, "ALTER TABLE renamed ALTER COLUMN b TYPE text")),
            ["0A000"]
        );
        // A CHECK keeps its SQL text: renaming a column it names is refused.
        assert_eq!(codes(&q(s, "CREATE TABLE k (v int CHECK (v > 0))")), [""]);
        assert_eq!(
            codes(&q(s, "ALTER TABLE k RENAME COLUMN v TO w")),
            ["0A000"]
        );
        assert_eq!(codes(&q(s, "INSERT INTO k VALUES (0)")), ["23514"]);
    });
}

#[test]
fn alter_table_adds_and_drops_columns_by_rewriting_the_table() {
    with_session(8 << 20, |s| {
        let c = q(
            s,
            "INSERT INTO t SELECT g, 'r' || g FROM generate_series(1, 300) g",
        );
        assert_eq!(codes(&c), [""]);
        let c = q(s, "ALTER TABLE t ADD COLUMN c int DEFAULT 7");
        assert!(matches!(&ok(&c.results[0]).output, Output::Command(t) if t == "ALTER TABLE"));
        let c = q(s, "SELECT count(*) FROM t WHERE c = 7");
        assert_eq!(c.rows, vec![vec![Datum::Int8(300)]]);
        // New rows get the DEFAULT too; a column without one is NULL in old rows.
        assert_eq!(codes(&q(s, "INSERT INTO t (a, b) VALUES (301, 'x')")), [""]);
        assert_eq!(codes(&q(s, "ALTER TABLE t ADD d text")), [""]);
        let c = q(s, "SELECT count(*) FROM t WHERE c = 7 AND d IS NULL");
        assert_eq!(c.rows, vec![vec![Datum::Int8(301)]]);
        // NOT NULL without a default cannot fill rows that exist (23502); rolled back.
        assert_eq!(codes(&q(s, "ALTER TABLE t ADD e int NOT NULL")), ["23502"]);
        assert_eq!(codes(&q(s, "ALTER TABLE t ADD c int")), ["42701"]);
        let c = q(s, "ALTER TABLE t ADD COLUMN IF NOT EXISTS c int");
        assert_eq!(
            notices(&c.results[0]),
            ["column \"c\" of relation \"t\" already exists, skipping"]
        );
        assert_eq!(
            codes(&q(s, "ALTER TABLE t ADD f varchar(2) DEFAULT 'abc'")),
            ["22001"]
        );
        assert_eq!(
            codes(&q(s, "ALTER TABLE t ADD g int CHECK (g > 0)")),
            ["0A000"]
        );
        // DROP COLUMN: the values go with it; the rest stay, in a rollback too.
        let c = q(s, "BEGIN; ALTER TABLE t DROP COLUMN b; SELECT b FROM t");
        assert_eq!(codes(&c), ["", "", "42703"]);
        assert_eq!(codes(&q(s, "ROLLBACK")), [""]);
        assert_eq!(codes(&q(s, "SELECT b FROM t WHERE a = 1")), [""]);
        assert_eq!(codes(&q(s, "ALTER TABLE t DROP COLUMN b")), [""]);
        let c = q(s, "SELECT sum(a), sum(c) FROM t");
        assert_eq!(c.rows, vec![vec![Datum::Int8(45_451), Datum::Int8(2_107)]]);
        assert_eq!(codes(&q(s, "SELECT b FROM t")), ["42703"]);
        assert_eq!(codes(&q(s, "ALTER TABLE t DROP COLUMN nosuch")), ["42703"]);
        let c = q(s, "ALTER TABLE t DROP COLUMN IF EXISTS nosuch");
        assert_eq!(
            notices(&c.results[0]),
            ["column \"nosuch\" of relation \"t\" does not exist, skipping"]
        );
        assert_eq!(count(s), 301);
    });
}

#[test]
fn insert_default_values_gives_every_column_its_default() {
    with_session(8 << 20, |s| {
        let c = q(
            s,
            "CREATE TABLE d (a int DEFAULT 7, b text, c bool DEFAULT true)",
        );
        assert_eq!(codes(&c), [""]);
        assert_eq!(codes(&q(s, "INSERT INTO d DEFAULT VALUES")), [""]);
        let c = q(s, "INSERT INTO d DEFAULT VALUES RETURNING a, b, c");
        assert_eq!(
            c.rows,
            vec![vec![Datum::Int4(7), Datum::Null, Datum::Bool(true)]]
        );
        let c = q(s, "SELECT count(*) FROM d WHERE a = 7 AND b IS NULL AND c");
        assert_eq!(c.rows, vec![vec![Datum::Int8(2)]]);
        assert_eq!(codes(&q(s, "CREATE TABLE n (a int NOT NULL)")), [""]);
        assert_eq!(codes(&q(s, "INSERT INTO n DEFAULT VALUES")), ["23502"]);
    });
}

#[test]
fn create_table_as_makes_and_fills_a_table_in_one_transaction() {
    with_session(8 << 20, |s| {
        let c = q(
            s,
            "INSERT INTO t SELECT g, 'r' || g FROM generate_series(1, 50) g",
        );
        assert_eq!(codes(&c), [""]);
        let c = q(
            s,
            "CREATE TABLE u AS SELECT a, b, a * 2 AS twice, 'x' AS tag FROM t WHERE a <= 20",
        );
        assert!(matches!(&ok(&c.results[0]).output, Output::Command(t) if t == "SELECT 20"));
        let c = q(s, "SELECT sum(twice), count(*) FROM u WHERE tag = 'x'");
        assert_eq!(c.rows, vec![vec![Datum::Int8(420), Datum::Int8(20)]]);
        assert_eq!(codes(&q(s, "CREATE TABLE u AS SELECT 1 AS a")), ["42P07"]);
        let c = q(s, "CREATE TABLE IF NOT EXISTS u AS SELECT 1 AS a");
        assert_eq!(
            notices(&c.results[0]),
            ["relation \"u\" already exists, skipping"]
        );
        assert_eq!(
            codes(&q(s, "CREATE TABLE w AS SELECT a, a FROM t")),
            ["42701"]
        );
        // All or nothing: a failing query leaves no table behind.
        assert_eq!(
            codes(&q(s, "CREATE TABLE v AS SELECT 1 / (a - 10) AS z FROM t")),
            ["22012"]
        );
        assert_eq!(codes(&q(s, "SELECT * FROM v")), ["42P01"]);
        // In a block, it is the block's.
        let c = q(s, "BEGIN; CREATE TABLE v AS SELECT a FROM t; ROLLBACK");
        assert_eq!(codes(&c), ["", "", ""]);
        assert_eq!(codes(&q(s, "SELECT * FROM v")), ["42P01"]);
    });
}

/// The error of a one-statement query, with its detail and hint.
fn error_of(s: &mut Session<'_>, sql: &str) -> crate::SqlError {
    let c = q(s, sql);
    match &c.results[..] {
        [Err(e)] => e.clone(),
        other => panic!("{sql}: {other:?}"),
    }
}

#[test]
fn primary_keys_unique_constraints_and_indexes_hold_and_serve_lookups() {
    with_session(8 << 20, |s| {
        let setup = "CREATE TABLE k (id int PRIMARY KEY, e text UNIQUE, n int); \
                     INSERT INTO k SELECT g, 'e' || g, g % 10 FROM generate_series(1, 500) g";
        assert_eq!(codes(&q(s, setup)), ["", ""]);
        let e = error_of(s, "INSERT INTO k VALUES (7, 'x', 1)");
        assert_eq!(e.code, "23505");
        assert_eq!(
            e.message,
            "duplicate key value violates unique constraint \"k_pkey\""
        );
        assert_eq!(e.detail.as_deref(), Some("Key (id)=(7) already exists."));
        let e = error_of(s, "UPDATE k SET e = 'e9' WHERE id = 8");
        assert_eq!(e.detail.as_deref(), Some("Key (e)=(e9) already exists."));
        assert_eq!(
            error_of(s, "INSERT INTO k VALUES (NULL, 'y', 1)").code,
            "23502"
        );
        // Duplicates inside one multi-row INSERT, and NULLs that never are.
        let e = error_of(
            s,
            "INSERT INTO k VALUES (900, 'p', 1), (901, 'q', 1), (900, 'r', 1)",
        );
        assert_eq!(
            (e.code, e.detail.as_deref()),
            ("23505", Some("Key (id)=(900) already exists."))
        );
        let c = q(
            s,
            "INSERT INTO k VALUES (902, NULL, 1), (903, NULL, 1); DELETE FROM k WHERE id > 901",
        );
        assert_eq!(codes(&c), ["", ""]);
        // Lookups through the index give what a scan of every page gives.
        for (indexed, scanned) in [
            (
                "SELECT * FROM k WHERE id = 42",
                "SELECT * FROM k WHERE id + 0 = 42",
            ),
            (
                "SELECT id FROM k WHERE id >= 10 AND id < 20 AND n <> 3",
                "SELECT id FROM k WHERE id + 0 >= 10 AND id + 0 < 20 AND n <> 3 ORDER BY id",
            ),
            (
                "SELECT id FROM k WHERE 495 < id",
                "SELECT id FROM k WHERE 495 < id + 0 ORDER BY id",
            ),
            (
                "SELECT n FROM k WHERE e = 'e77'",
                "SELECT n FROM k WHERE e || '' = 'e77'",
            ),
            (
                "SELECT * FROM k WHERE id = NULL",
                "SELECT * FROM k WHERE false",
            ),
        ] {
            assert_eq!(rows_text(s, indexed), rows_text(s, scanned), "{indexed}");
        }
        let c = q(
            s,
            "UPDATE k SET n = n + 100 WHERE id BETWEEN 1 AND 3; DELETE FROM k WHERE id = 4",
        );
        assert_eq!(codes(&c), ["", ""]);
        assert_eq!(tag(&c.results[0]), "UPDATE 3");
        assert_eq!(tag(&c.results[1]), "DELETE 1");
        assert_eq!(
            rows_text(s, "SELECT n FROM k WHERE id <= 4"),
            ["101", "102", "103"]
        );
    });
}

#[test]
fn indexes_and_constraints_are_named_added_and_dropped_as_postgres_does() {
    with_session(8 << 20, |s| {
        let setup = "CREATE TABLE k (id int PRIMARY KEY, e text UNIQUE, n int); \
                     INSERT INTO k SELECT g, 'e' || g, g % 10 FROM generate_series(1, 500) g";
        assert_eq!(codes(&q(s, setup)), ["", ""]);
        // CREATE INDEX names itself as PostgreSQL does; a constraint's index is the
        // constraint's to drop.
        let c = q(s, "CREATE INDEX ON k (n, id); CREATE INDEX ON k (n, id); CREATE UNIQUE INDEX IF NOT EXISTS k_n_id_idx ON k (n)");
        assert_eq!(codes(&c), ["", "", ""]);
        assert_eq!(
            notices(&c.results[2]),
            ["relation \"k_n_id_idx\" already exists, skipping"]
        );
        assert_eq!(rows_text(s, "SELECT count(*) FROM k WHERE n = 5"), ["50"]);
        let e = error_of(s, "DROP INDEX k_pkey");
        assert_eq!(
            (e.code, e.hint.as_deref()),
            (
                "2BP01",
                Some("You can drop constraint k_pkey on table k instead.")
            )
        );
        let c = q(s, "DROP INDEX k_n_id_idx1, nope");
        assert_eq!(codes(&c), ["42704"]);
        let c = q(s, "DROP INDEX IF EXISTS k_n_id_idx1, nope; ALTER TABLE k DROP CONSTRAINT k_pkey; INSERT INTO k VALUES (7, 'z', 0)");
        assert_eq!(codes(&c), ["", "", ""]);
        // Adding a primary key checks the rows already there.
        let e = error_of(s, "ALTER TABLE k ADD PRIMARY KEY (id)");
        assert_eq!(
            (e.code, e.detail.as_deref()),
            ("23505", Some("Key (id)=(7) already exists."))
        );
        let c = q(s, "DELETE FROM k WHERE e = 'z'; ALTER TABLE k ADD CONSTRAINT k_pk PRIMARY KEY (id); ALTER TABLE k ADD UNIQUE (n, e)");
        assert_eq!(codes(&c), ["", "", ""]);
        assert_eq!(codes(&q(s, "CREATE TABLE k_pk (a int)")), ["42P07"]);
        assert_eq!(
            error_of(s, "ALTER TABLE k ADD PRIMARY KEY (e)").code,
            "42P16"
        );
        let c = q(
            s,
            "BEGIN; INSERT INTO k VALUES (1000, 'q', 1); SELECT e FROM k WHERE id = 1000; ROLLBACK",
        );
        assert_eq!(c.rows, [vec![Datum::Text("q".into())]]);
        assert_eq!(
            rows_text(s, "SELECT e FROM k WHERE id = 1000"),
            Vec::<String>::new()
        );
        assert_eq!(rows_text(s, "SELECT bt_index_check('k_pk', true)"), [""]);
        assert_eq!(error_of(s, "SELECT bt_index_check('nope')").code, "42704");
        let c = q(
            s,
            "BEGIN; INSERT INTO k VALUES (2000, 'w', 1); SELECT bt_index_check('k_pk')",
        );
        assert_eq!(codes(&c), ["", "", "0A000"]);
        assert_eq!(codes(&q(s, "ROLLBACK")), [""]);
    });
}

#[test]
fn insert_on_conflict_does_nothing_or_updates_the_existing_row() {
    with_session(8 << 20, |s| {
        let setup = "CREATE TABLE u (id int PRIMARY KEY, n int, e text UNIQUE); \
                     INSERT INTO u VALUES (1, 10, 'a'), (2, 20, 'b')";
        assert_eq!(codes(&q(s, setup)), ["", ""]);
        let c = q(
            s,
            "INSERT INTO u VALUES (1, 99, 'z'), (3, 30, 'c') ON CONFLICT DO NOTHING",
        );
        assert_eq!(tag(&c.results[0]), "INSERT 0 1");
        let c = q(
            s,
            "INSERT INTO u VALUES (2, 5, 'q') ON CONFLICT (id) \
             DO UPDATE SET n = u.n + excluded.n, e = excluded.e RETURNING *",
        );
        assert_eq!(tag(&c.results[0]), "INSERT 0 1");
        let text: Vec<Option<String>> = c.rows[0].iter().map(TextOut::to_text).collect();
        assert_eq!(
            text,
            [Some("2".into()), Some("25".into()), Some("q".into())]
        );
        let c = q(
            s,
            "INSERT INTO u VALUES (2, 1, 'r') ON CONFLICT (id) DO UPDATE SET n = 0 WHERE u.n > 100",
        );
        assert_eq!(tag(&c.results[0]), "INSERT 0 0");
        let c = q(s, "INSERT INTO u VALUES (6, 1, 'a') ON CONFLICT ON CONSTRAINT u_e_key DO UPDATE SET n = 7");
        assert_eq!(tag(&c.results[0]), "INSERT 0 1");
        for (sql, code) in [
            ("INSERT INTO u VALUES (4, 1, 'x'), (4, 2, 'y') ON CONFLICT (id) DO UPDATE SET n = excluded.n", "21000"),
            ("INSERT INTO u VALUES (5, 1, 'a') ON CONFLICT (id) DO NOTHING", "23505"),
            ("INSERT INTO u VALUES (5, 1, 'w') ON CONFLICT (n) DO NOTHING", "42P10"),
            ("INSERT INTO u VALUES (5, 1, 'w') ON CONFLICT DO UPDATE SET n = 1", "42601"),
            ("INSERT INTO u VALUES (5, 1, 'w') ON CONFLICT (id) DO UPDATE SET nope = 1", "42703"),
        ] {
            assert_eq!(codes(&q(s, sql)), [code], "{sql}");
        }
        assert_eq!(
            rows_text(s, "SELECT * FROM u ORDER BY id"),
            ["1|7|a", "2|25|q", "3|30|c"]
        );
        assert_eq!(
            rows_text(
                s,
                "SELECT bt_index_check('u_pkey'), bt_index_check('u_e_key')"
            ),
            ["|"]
        );
    });
}

#[test]
fn sequences_give_values_outside_transactions_as_postgres_does() {
    with_session(8 << 20, |s| {
        let c = q(s, "CREATE SEQUENCE s; CREATE SEQUENCE IF NOT EXISTS s");
        assert_eq!(codes(&c), ["", ""]);
        assert_eq!(tag(&c.results[0]), "CREATE SEQUENCE");
        assert_eq!(
            notices(&c.results[1]),
            ["relation \"s\" already exists, skipping"]
        );
        assert_eq!(error_of(s, "SELECT currval('s')").code, "55000");
        assert_eq!(error_of(s, "SELECT lastval()").code, "55000");
        assert_eq!(rows_text(s, "SELECT nextval('s'), nextval('S')"), ["1|2"]);
        assert_eq!(
            rows_text(s, "SELECT currval('public.s'), lastval()"),
            ["2|2"]
        );
        // Sequence rule 1: a rollback does not give values back.
        assert_eq!(
            codes(&q(s, "BEGIN; SELECT nextval('s'); ROLLBACK")),
            ["", "", ""]
        );
        assert_eq!(rows_text(s, "SELECT nextval('s')"), ["4"]);
        assert_eq!(rows_text(s, "SELECT setval('s', 10)"), ["10"]);
        assert_eq!(rows_text(s, "SELECT nextval('s'), currval('s')"), ["11|11"]);
        assert_eq!(
            rows_text(s, "SELECT setval('s', 20, false), currval('s')"),
            ["20|11"]
        );
        assert_eq!(rows_text(s, "SELECT nextval('s')"), ["20"]);
        assert_eq!(
            rows_text(s, "SELECT last_value, is_called FROM s"),
            ["20|t"]
        );
        // Options in any order (pg_dump's), AS anywhere.
        let c = q(
            s,
            "CREATE SEQUENCE d START 0 CYCLE AS smallint MAXVALUE 0 INCREMENT BY -5 MINVALUE -12 CACHE 1",
        );
        assert_eq!(codes(&c), [""]);
        assert_eq!(
            rows_text(
                s,
                "SELECT nextval('d'), nextval('d'), nextval('d'), nextval('d')"
            ),
            ["0|-5|-10|0"]
        );
        for (sql, code) in [
            ("CREATE SEQUENCE e INCREMENT 0", "22023"),
            ("CREATE SEQUENCE e MINVALUE 5 MAXVALUE 3", "22023"),
            ("CREATE SEQUENCE e AS text", "22023"),
            ("CREATE SEQUENCE e START 1 START 2", "42601"),
            ("CREATE SEQUENCE s", "42P07"),
            (
                "CREATE SEQUENCE m MAXVALUE 2; SELECT nextval('m'), nextval('m'), nextval('m')",
                "2200H",
            ),
            ("SELECT setval('s', 0)", "22003"),
            ("SELECT nextval('nosuch')", "42P01"),
            ("SELECT nextval('a b')", "42602"),
            ("INSERT INTO s VALUES (1, 1, true)", "42809"),
            ("DROP TABLE s", "42809"),
            ("DROP SEQUENCE t", "42809"),
            ("DROP SEQUENCE nosuch", "42P01"),
        ] {
            let c = q(s, sql);
            assert_eq!(codes(&c).last(), Some(&code), "{sql}");
        }
        assert_eq!(rows_text(s, "SELECT nextval(NULL)"), ["NULL"]);
        let c = q(s, "DROP SEQUENCE IF EXISTS s, nosuch");
        assert_eq!(codes(&c), [""]);
        assert_eq!(
            notices(&c.results[0]),
            ["sequence \"nosuch\" does not exist, skipping"]
        );
        assert_eq!(error_of(s, "SELECT nextval('s')").code, "42P01");
        // Created and used in one block; gone with its rollback.
        let c = q(s, "BEGIN; CREATE SEQUENCE b; SELECT nextval('b'); ROLLBACK");
        assert_eq!(codes(&c), ["", "", "", ""]);
        assert_eq!(c.rows.len(), 1);
        assert_eq!(error_of(s, "SELECT nextval('b')").code, "42P01");
    });
}

#[test]
fn serial_and_identity_columns_own_their_sequences() {
    with_session(8 << 20, |s| {
        let c = q(
            s,
            "CREATE TABLE p (id serial PRIMARY KEY, big bigserial, v text); \
             INSERT INTO p (v) VALUES ('a'), ('b'); \
             INSERT INTO p (id, v) VALUES (100, 'c'); \
             INSERT INTO p (v) VALUES ('d') RETURNING id, big",
        );
        assert_eq!(codes(&c), ["", "", "", ""]);
        assert_eq!(c.rows.len(), 1);
        let got: Vec<Option<String>> = c.rows[0].iter().map(TextOut::to_text).collect();
        assert_eq!(got, [Some("3".into()), Some("4".into())]);
        assert_eq!(
            rows_text(s, "SELECT id, big, v FROM p ORDER BY v"),
            ["1|1|a", "2|2|b", "100|3|c", "3|4|d"]
        );
        assert_eq!(rows_text(s, "SELECT currval('p_id_seq')"), ["3"]);
        assert_eq!(
            error_of(s, "INSERT INTO p (id, v) VALUES (NULL, 'x')").code,
            "23502"
        );
        assert_eq!(error_of(s, "DROP SEQUENCE p_id_seq").code, "2BP01");
        // A taken name is numbered, as PostgreSQL numbers it.
        let c = q(
            s,
            "CREATE SEQUENCE q_id_seq; \
             CREATE TABLE q (id int GENERATED ALWAYS AS IDENTITY (INCREMENT BY 10 START WITH 10), \
                             n smallint GENERATED BY DEFAULT AS IDENTITY, v text); \
             INSERT INTO q (v) VALUES ('a'), ('b'); INSERT INTO q (n, v) VALUES (7, 'c')",
        );
        assert_eq!(codes(&c), ["", "", "", ""]);
        assert_eq!(
            rows_text(s, "SELECT id, n, v FROM q ORDER BY id"),
            ["10|1|a", "20|2|b", "30|7|c"]
        );
        assert_eq!(
            rows_text(s, "SELECT nextval('q_id_seq1'), nextval('q_n_seq')"),
            ["40|3"]
        );
        let e = error_of(s, "INSERT INTO q (id, v) VALUES (1, 'x')");
        assert_eq!(e.code, "428C9");
        assert_eq!(
            e.message,
            "cannot insert a non-DEFAULT value into column \"id\""
        );
        assert_eq!(
            error_of(s, "INSERT INTO q VALUES (1, 1, 'x')").code,
            "428C9"
        );
        assert_eq!(error_of(s, "UPDATE q SET id = 5").code, "428C9");
        assert_eq!(codes(&q(s, "UPDATE q SET n = 0 WHERE id = 10")), [""]);
        for (sql, code) in [
            ("CREATE TABLE r (id serial DEFAULT 1)", "42601"),
            (
                "CREATE TABLE r (id int GENERATED ALWAYS AS IDENTITY DEFAULT 1)",
                "42601",
            ),
            (
                "CREATE TABLE r (id text GENERATED ALWAYS AS IDENTITY)",
                "22023",
            ),
            (
                "CREATE TABLE r (id int GENERATED ALWAYS AS IDENTITY NULL)",
                "42601",
            ),
            ("ALTER TABLE q ADD COLUMN s serial", "0A000"),
        ] {
            assert_eq!(codes(&q(s, sql)), [code], "{sql}");
        }
        // Owned sequences go with their column and their table.
        let c = q(s, "ALTER TABLE q DROP COLUMN n; SELECT nextval('q_n_seq')");
        assert_eq!(codes(&c), ["", "42P01"]);
        let c = q(s, "DROP TABLE p, q; SELECT nextval('p_id_seq')");
        assert_eq!(codes(&c), ["", "42P01"]);
        assert_eq!(rows_text(s, "SELECT nextval('q_id_seq')"), ["1"]);
        // In one block: the table's sequence serves its inserts before the commit.
        let c = q(
            s,
            "BEGIN; CREATE TABLE w (id bigserial, v text); INSERT INTO w (v) VALUES ('x'), ('y'); COMMIT",
        );
        assert_eq!(codes(&c), ["", "", "", ""]);
        assert_eq!(
            rows_text(s, "SELECT id, v FROM w ORDER BY id"),
            ["1|x", "2|y"]
        );
    });
}

/// `sql` fails as PostgreSQL fails a value too large for `numeric(p, s)`.
fn assert_numeric_overflow(s: &mut Session<'_>, sql: &str, (p, sc): (u32, u32)) {
    let e = error_of(s, sql);
    assert_eq!(
        (e.code, e.message.as_str()),
        ("22003", "numeric field overflow")
    );
    let detail = format!(
        "A field with precision {p}, scale {sc} must round to an absolute value less than 10^{}.",
        p - sc
    );
    assert_eq!(e.detail.as_deref(), Some(detail.as_str()));
}

#[test]
fn casts_apply_their_type_modifiers_as_postgres_explicit_casts_do() {
    with_session(8 << 20, |s| {
        // Text is cut without error, char(n) padded; numeric rounds to its scale
        // (half away from zero) and shows it.
        assert_eq!(
            rows_text(
                s,
                "SELECT 'abcdef'::varchar(3), 'ab'::char(4), 'xyz'::char, \
                 CAST('abcdef' AS character varying(2)), 1.235::numeric(5,2), \
                 '-1.235'::numeric(5,2), 7::numeric(4,1), numeric(3,1) '2.25'"
            ),
            ["abc|ab  |x|ab|1.24|-1.24|7.0|2.3"]
        );
        // Named by the type's typname, without its modifier, as PostgreSQL names them.
        let c = q(
            s,
            "SELECT 'a'::varchar(3), 'a'::char(2), 1::numeric(5,2), 1::int, 2::bigint, 1::float",
        );
        let names: Vec<&str> = c.columns.iter().map(|(n, _)| n.as_str()).collect();
        assert_eq!(
            names,
            ["varchar", "bpchar", "numeric", "int4", "int8", "float8"]
        );
        assert_numeric_overflow(s, "SELECT 12345.6::numeric(5,2)", (5, 2));
        // In a table's expression, and NULL stays NULL.
        let setup = "CREATE TABLE m (t text, n numeric); \
                     INSERT INTO m VALUES ('hello', 3.14159), (NULL, NULL)";
        assert_eq!(codes(&q(s, setup)), ["", ""]);
        assert_eq!(
            rows_text(
                s,
                "SELECT t::varchar(4), n::numeric(4,2) FROM m ORDER BY t NULLS LAST"
            ),
            ["hell|3.14", "NULL|NULL"]
        );
    });
}

#[test]
fn real_double_and_numeric_compute_compare_and_store_as_postgres_does() {
    with_session(8 << 20, |s| {
        assert_eq!(
            rows_text(
                s,
                "SELECT 1.5, 1/3::numeric, 10.0/3, 2::numeric/1, 1.50 * 2"
            ),
            ["1.5|0.33333333333333333333|3.3333333333333333|2.0000000000000000|3.00"]
        );
        assert_eq!(
            rows_text(
                s,
                "SELECT 0.1::float8, 0.1::real, 1e15::float8, 1e-5::float8, 'NaN'::float8, \
                 '-inf'::float8, 1000000::real, 2.5::float8 * 2, 1/4::real"
            ),
            ["0.1|0.1|1e+15|1e-05|NaN|-Infinity|1e+06|5|0.25"]
        );
        let setup = "CREATE TABLE n (id int PRIMARY KEY, a numeric(6,2), f real, d double precision, x numeric); \
                     INSERT INTO n VALUES (1, 1.005, 1.5, 2.25, 123.456), (2, -9999.994, 0.1, 1e-10, 1e20), \
                     (3, NULL, 'NaN', '-Infinity', 0)";
        assert_eq!(codes(&q(s, setup)), ["", ""]);
        assert_eq!(
            rows_text(s, "SELECT * FROM n ORDER BY id"),
            [
                "1|1.01|1.5|2.25|123.456",
                "2|-9999.99|0.1|1e-10|100000000000000000000",
                "3|NULL|NaN|-Infinity|0"
            ]
        );
        assert_numeric_overflow(s, "INSERT INTO n VALUES (4, 10000, 1, 1, 1)", (6, 2));
        // NaN equals NaN and sorts above every number, as PostgreSQL's floats.
        assert_eq!(rows_text(s, "SELECT id FROM n WHERE f = 'NaN'"), ["3"]);
        assert_eq!(
            rows_text(s, "SELECT id FROM n ORDER BY f DESC"),
            ["3", "1", "2"]
        );
        assert_eq!(
            rows_text(s, "SELECT sum(a), sum(x), min(a), max(d) FROM n"),
            ["-9998.98|100000000000000000123.456|-9999.99|2.25"]
        );
        assert_eq!(
            rows_text(
                s,
                "SELECT id, a::int, f::int, d::numeric FROM n WHERE id < 3 ORDER BY id"
            ),
            ["1|1|2|2.25", "2|-10000|0|0.0000000001"]
        );
        // Indexes over both kinds serve equality and ranges across types.
        assert_eq!(
            codes(&q(
                s,
                "CREATE INDEX n_a ON n (a); CREATE INDEX n_d ON n (d)"
            )),
            ["", ""]
        );
        assert_eq!(rows_text(s, "SELECT id FROM n WHERE a = 1.01"), ["1"]);
        assert_eq!(rows_text(s, "SELECT id FROM n WHERE a = 1.010"), ["1"]);
        assert_eq!(rows_text(s, "SELECT id FROM n WHERE d < 0"), ["3"]);
        assert_eq!(
            rows_text(s, "SELECT id FROM n WHERE d > 1 AND d < 3"),
            ["1"]
        );
        assert_eq!(
            rows_text(s, "SELECT bt_index_check('n_a'), bt_index_check('n_d')"),
            ["|"]
        );
        for (sql, code) in [
            ("SELECT 5 / 0.0", "22012"),
            ("SELECT 1e308::float8 * 10", "22003"),
            ("SELECT 'x'::real", "22P02"),
            ("SELECT 1e39::real", "22003"),
            ("SELECT 1e200000::numeric", "22003"),
            ("CREATE TABLE bad (a numeric(3,4))", "22023"),
            ("SELECT 'NaN'::numeric::int", "0A000"),
            ("SELECT 'Infinity'::numeric(10,2)", "22003"),
            ("SELECT 3e9::float8::int", "22003"),
        ] {
            assert_eq!(codes(&q(s, sql)), [code], "{sql}");
        }
        assert_eq!(
            rows_text(
                s,
                "SELECT 2.5::float8::int, 3.5::float8::int, 2.5::int, -2.5::int"
            ),
            ["2|4|3|-3"]
        );
    });
}

#[test]
fn time_and_interval_store_compare_and_do_date_arithmetic() {
    with_session(8 << 20, |s| {
        assert_eq!(
            rows_text(
                s,
                "SELECT interval '1 day' + interval '2 hours', '2024-01-31'::date + interval '1 month', \
                 timestamp '2024-03-10 10:00' - timestamp '2024-03-01 08:30', interval '3' hour"
            ),
            ["1 day 02:00:00|2024-02-29 00:00:00|9 days 01:30:00|03:00:00"]
        );
        assert_eq!(
            rows_text(
                s,
                "SELECT time '10:00' + interval '15 hours', date '2024-03-01' - date '2024-02-01', \
                 date '2024-03-01' + 7, interval '1 hour' * 2.5, interval '1 day' / 4, \
                 interval '1 day' = interval '24 hours', now() - '1 day' < now()"
            ),
            ["01:00:00|29|2024-03-08|02:30:00|06:00:00|t|t"]
        );
        let c = q(
            s,
            "CREATE TABLE ev (id int PRIMARY KEY, dur interval, t time); \
             INSERT INTO ev VALUES (1, '90 minutes', '08:30'), (2, '2 days', '23:59:59.5'), (3, '-1 day +2 hours', '00:00'); \
             CREATE INDEX ev_dur ON ev (dur); CREATE INDEX ev_t ON ev (t)",
        );
        assert_eq!(codes(&c), ["", "", "", ""]);
        assert_eq!(
            rows_text(s, "SELECT id, dur, t FROM ev ORDER BY dur"),
            [
                "3|-1 days +02:00:00|00:00:00",
                "1|01:30:00|08:30:00",
                "2|2 days|23:59:59.5"
            ]
        );
        assert_eq!(
            rows_text(s, "SELECT id FROM ev WHERE dur > '1 hour' ORDER BY id"),
            ["1", "2"]
        );
        assert_eq!(
            rows_text(s, "SELECT id FROM ev WHERE dur = '48:00:00'"),
            ["2"]
        );
        assert_eq!(
            rows_text(s, "SELECT id FROM ev WHERE t < '09:00' ORDER BY id"),
            ["1", "3"]
        );
        assert_eq!(
            rows_text(s, "SELECT bt_index_check('ev_dur'), bt_index_check('ev_t')"),
            ["|"]
        );
        for (sql, code) in [
            ("SELECT interval '1 fortnight'", "22007"),
            ("SELECT time '25:00'", "22008"),
            ("SELECT interval '1 day' / 0", "22012"),
            (
                "SELECT date '2024-01-01' + interval '1 day' * 1e15",
                "22008",
            ),
        ] {
            assert_eq!(codes(&q(s, sql)), [code], "{sql}");
        }
    });
}

/// The session's DateStyle, TimeZone, IntervalStyle and extra_float_digits shape
/// input, output and timestamptz arithmetic (settings rule 6), are checked as
/// PostgreSQL checks them, and a rollback restores them (PostgreSQL 15's answers).
#[test]
fn date_time_settings_shape_input_output_and_arithmetic() {
    with_session(8 << 20, |s| {
        assert_eq!(rows_text(s, "SHOW DateStyle"), ["ISO, MDY"]);
        assert_eq!(codes(&q(s, "SET DateStyle = 'Postgres, DMY'")), [""]);
        assert_eq!(rows_text(s, "SHOW DateStyle"), ["Postgres, DMY"]);
        assert_eq!(codes(&q(s, "SET DateStyle = ISO")), [""]);
        assert_eq!(rows_text(s, "SHOW DateStyle"), ["ISO, DMY"]);
        assert_eq!(rows_text(s, "SELECT date '01/02/2003'"), ["2003-02-01"]);
        assert_eq!(codes(&q(s, "SET TimeZone = 'America/Los_Angeles'")), [""]);
        // Across the spring-forward gap: an hour, and a day in local time.
        assert_eq!(
            rows_text(
                s,
                "SELECT timestamptz '2024-03-10 01:30:00' + interval '1 hour', \
                 timestamptz '2024-03-09 12:00:00' + interval '1 day', \
                 (timestamptz '2024-01-01 00:00:00+00')::date, \
                 timestamptz '2024-07-01 12:00:00+00' AT TIME ZONE 'UTC'"
            ),
            ["2024-03-10 03:30:00-07|2024-03-10 12:00:00-07|2023-12-31|2024-07-01 12:00:00"]
        );
        assert_eq!(
            rows_text(
                s,
                "SELECT date_trunc('day', timestamptz '2024-03-10 12:00:00')"
            ),
            ["2024-03-10 00:00:00-08"]
        );
        q(s, "BEGIN");
        q(s, "SET TimeZone = 'UTC'");
        q(s, "ROLLBACK");
        assert_eq!(rows_text(s, "SHOW TimeZone"), ["America/Los_Angeles"]);
        assert_eq!(codes(&q(s, "SET IntervalStyle = iso_8601")), [""]);
        assert_eq!(rows_text(s, "SELECT interval '1 day 2 hours'"), ["P1DT2H"]);
        assert_eq!(
            rows_text(s, "SELECT 0.1::float8 + 0.2::float8"),
            ["0.30000000000000004"]
        );
        assert_eq!(codes(&q(s, "SET extra_float_digits = 0")), [""]);
        assert_eq!(rows_text(s, "SELECT 0.1::float8 + 0.2::float8"), ["0.3"]);
        for (sql, code) in [
            ("SET TimeZone = 'Mars/Olympus'", "22023"),
            ("SET DateStyle = 'nonsense'", "22023"),
            ("SET IntervalStyle = 'roman'", "22023"),
            ("SET extra_float_digits = 4", "22023"),
        ] {
            assert_eq!(codes(&q(s, sql)), [code], "{sql}");
        }
        assert_eq!(codes(&q(s, "RESET ALL")), [""]);
        assert_eq!(
            rows_text(s, "SELECT timestamptz '2024-01-01 00:00:00+00'"),
            ["2024-01-01 00:00:00+00"]
        );
    });
}
