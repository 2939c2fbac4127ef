//! Issue 27's defects, each pinned in-process on a real engine: what PostgreSQL 15
//! answers (its value or its SQLSTATE), and that the session goes on afterwards.
//! Each test here failed before its fix.

use super::fuzz_tests::with_session;
use super::session::{Collect, Output, Session};
use crate::TextOut;

/// Runs a simple-protocol query string.
pub(super) fn q(s: &mut Session<'_>, sql: &str) -> Collect {
    q_copy(s, sql, &[])
}

/// Runs `sql` with `chunks` as the client's COPY data.
pub(super) fn q_copy(s: &mut Session<'_>, sql: &str, chunks: &[&[u8]]) -> Collect {
    let mut c = Collect {
        copy_input: chunks.iter().map(|c| c.to_vec()).collect(),
        ..Default::default()
    };
    s.run_simple(sql.to_string(), &mut c);
    c
}

/// The SQLSTATE of each statement ("" for success).
pub(super) fn codes(s: &mut Session<'_>, sql: &str) -> Vec<&'static str> {
    q(s, sql)
        .results
        .iter()
        .map(|r| r.as_ref().map_or_else(|e| e.code, |_| ""))
        .collect()
}

/// The one error of a one-statement query.
pub(super) fn error(s: &mut Session<'_>, sql: &str) -> crate::SqlError {
    match q(s, sql).results.remove(0) {
        Err(e) => e,
        Ok(_) => panic!("{sql}: no error"),
    }
}

/// Every row of a query, each as its columns' text joined with `|` (NULL empty).
pub(super) fn rows(s: &mut Session<'_>, sql: &str) -> Vec<String> {
    let c = q(s, sql);
    if let Some(Err(e)) = c.results.first() {
        panic!("{sql}: {e}");
    }
    c.rows
        .iter()
        .map(|r| {
            r.iter()
                .map(|d| d.to_text().unwrap_or_default())
                .collect::<Vec<_>>()
                .join("|")
        })
        .collect()
}

/// The command tag of a one-statement query.
pub(super) fn tag(s: &mut Session<'_>, sql: &str) -> String {
    match q(s, sql).results.remove(0) {
        Ok(e) => match e.output {
            Output::Command(t) | Output::TxnStart(t) | Output::TxnEnd(t) => t,
            Output::Rows(n) => format!("SELECT {n}"),
        },
        Err(e) => panic!("{sql}: {e}"),
    }
}

pub(super) fn one(s: &mut Session<'_>, sql: &str) -> String {
    let r = rows(s, sql);
    assert_eq!(r.len(), 1, "{sql}: {r:?}");
    r[0].clone()
}

/// Defect 1: a B-tree key too large for a page is 54000 with PostgreSQL's words on
/// INSERT, UPDATE, COPY and CREATE INDEX (a TOASTed value included), never a panic;
/// keys up to the limit go in, split pages and stay found.
#[test]
fn index_entries_past_the_limit_are_refused_before_they_reach_a_page() {
    with_session(8 << 20, |s| {
        q(s, "CREATE TABLE sm (k text); CREATE INDEX ON sm (k)");
        // The sequence: Strata does not compress index values, so the
        // 2700-byte keys (2712 bytes as PostgreSQL's row) are refused.
        for (v, code) in [
            ("repeat('b', 2700)", "54000"),
            ("repeat('d', 2700)", "54000"),
            ("repeat('c', 10)", ""),
            ("repeat('c', 2700)", "54000"),
            ("repeat('e', 2690)", ""),
            ("repeat('f', 2690)", ""),
            ("repeat('c', 2690)", ""),
            ("repeat('a', 2690)", ""),
        ] {
            assert_eq!(
                codes(s, &format!("INSERT INTO sm VALUES ({v})")),
                [code],
                "{v}"
            );
        }
        let e = error(s, "INSERT INTO sm VALUES (repeat('x', 2800))");
        assert_eq!(
            e.message,
            "index row size 2816 exceeds btree version 4 maximum 2704 for index \"sm_k_idx\""
        );
        assert!(e
            .hint
            .clone()
            .unwrap()
            .starts_with("Values larger than 1/3 of a buffer page"));
        // Keys at the limit, in an order that splits pages everywhere.
        for i in 0..60 {
            let (c, n) = ((b'a' + (i * 7 % 26) as u8) as char, 2600 + (i * 13 % 92));
            let sql = format!("INSERT INTO sm VALUES (repeat('{c}', {n}))");
            assert_eq!(codes(s, &sql), [""], "{sql}");
        }
        assert_eq!(one(s, "SELECT count(*) FROM sm"), "65");
        assert_eq!(
            one(s, "SELECT count(*) FROM sm WHERE k = repeat('c', 2690)"),
            "1"
        );
        assert_eq!(one(s, "SELECT bt_index_check('sm_k_idx', true)"), "");
        // UPDATE and COPY check too.
        assert_eq!(
            codes(
                s,
                "UPDATE sm SET k = repeat('z', 3000) WHERE k = repeat('c', 10)"
            ),
            ["54000"]
        );
        let big = format!("small\n{}\n", "y".repeat(2800));
        let c = q_copy(s, "COPY sm FROM STDIN", &[big.as_bytes()]);
        assert_eq!(c.results[0].as_ref().unwrap_err().code, "54000");
        assert_eq!(
            one(s, "SELECT count(*) FROM sm"),
            "65",
            "a failed COPY adds nothing"
        );
        // CREATE INDEX over a value stored out of line (TOAST).
        q(
            s,
            "CREATE TABLE t9 (k text); INSERT INTO t9 VALUES (repeat('z', 9000))",
        );
        let e = error(s, "CREATE INDEX ON t9 (k)");
        assert_eq!(e.code, "54000");
        assert!(
            e.message.contains("for index \"t9_k_idx\""),
            "{}",
            e.message
        );
        assert_eq!(codes(s, "CREATE UNIQUE INDEX u ON t9 (k)"), ["54000"]);
        // The session goes on, and the failed index left no name behind.
        assert_eq!(one(s, "SELECT count(*) FROM t9"), "1");
        assert_eq!(
            codes(s, "TRUNCATE t9; CREATE INDEX t9_k_idx ON t9 (k)"),
            ["", ""]
        );
    });
}

/// Found with defect 1: an index build (and the index check) decoded the rows of
/// aborted inserters, whose TOAST heap the abort removed; a later transaction's
/// chunks at the same TIDs made the build fail with XX002 (toast rule 4).
#[test]
fn index_builds_skip_the_rows_of_aborted_inserters() {
    with_session(8 << 20, |s| {
        q(s, "CREATE TABLE ab (a int, k text)");
        q(
            s,
            "BEGIN; INSERT INTO ab VALUES (1, repeat('q', 5000)); ROLLBACK",
        );
        q(s, "INSERT INTO ab VALUES (2, repeat('r', 4000))");
        assert_eq!(codes(s, "CREATE INDEX ab_a ON ab (a)"), [""]);
        assert_eq!(codes(s, "CREATE INDEX ab_k ON ab (k)"), ["54000"]);
        assert_eq!(one(s, "SELECT bt_index_check('ab_a', true)"), "");
        assert_eq!(one(s, "SELECT a, length(k) FROM ab WHERE a = 2"), "2|4000");
    });
}

/// Defect 5: `char(n)` is PostgreSQL's bpchar: its trailing spaces count neither in
/// comparisons (so WHERE, UPDATE, DELETE, IN and the index find the row) nor when it
/// becomes text (`||`, functions, casts); it prints padded.
#[test]
fn char_n_compares_and_converts_without_its_trailing_spaces() {
    with_session(8 << 20, |s| {
        q(s, "CREATE TABLE chr (code char(3) PRIMARY KEY, n int)");
        q(
            s,
            "INSERT INTO chr VALUES ('ab', 1), ('x', 2), ('zz', 3), ('a', 4)",
        );
        assert_eq!(
            rows(s, "SELECT code, n FROM chr WHERE code = 'ab'"),
            ["ab |1"]
        );
        assert_eq!(rows(s, "SELECT n FROM chr WHERE 'ab ' = code"), ["1"]);
        assert_eq!(
            rows(s, "SELECT n FROM chr WHERE code IN ('ab', 'x') ORDER BY n"),
            ["1", "2"]
        );
        assert_eq!(
            rows(
                s,
                "SELECT n FROM chr WHERE code > 'a' AND code < 'x' ORDER BY n"
            ),
            ["1"]
        );
        assert_eq!(rows(s, "SELECT code || '|' FROM chr WHERE n = 2"), ["x|"]);
        assert_eq!(
            tag(s, "UPDATE chr SET n = 10 WHERE code = 'ab'"),
            "UPDATE 1"
        );
        assert_eq!(tag(s, "DELETE FROM chr WHERE code = 'x'"), "DELETE 1");
        // The key ignores trailing spaces: 'zz ' and 'zz' are one value.
        assert_eq!(codes(s, "INSERT INTO chr VALUES ('zz ', 5)"), ["23505"]);
        assert_eq!(
            tag(
                s,
                "INSERT INTO chr VALUES ('a', 6) ON CONFLICT (code) DO UPDATE SET n = 7"
            ),
            "INSERT 0 1"
        );
        assert_eq!(one(s, "SELECT n FROM chr WHERE code = 'a  '"), "7");
        assert_eq!(one(s, "SELECT bt_index_check('chr_pkey', true)"), "");
        // Conversions, as PostgreSQL 15 gives them.
        for (sql, want) in [
            ("SELECT 'ab'::char(4) || 'c'", "abc"),
            ("SELECT 'ab'::char(4) = 'ab   '", "t"),
            ("SELECT 'ab'::char(4) = 'ab   '::text", "f"),
            ("SELECT 'ab '::text = 'ab'::char(3)", "f"),
            ("SELECT length('ab'::char(4))", "2"),
            ("SELECT upper('ab'::char(4)) || '|'", "AB|"),
            ("SELECT 'ab'::char(4)::text || '|'", "ab|"),
            ("SELECT ('ab'::char(4))::varchar || '|'", "ab|"),
            ("SELECT 'a'::char(3) > 'a'::char(3)", "f"),
            ("SELECT 'ab'::char(4)", "ab  "),
            ("SELECT 'abc'::char", "a"),
        ] {
            assert_eq!(one(s, sql), want, "{sql}");
        }
        // Into text columns without the padding, into char columns padded.
        q(s, "CREATE TABLE tx (t text, c char(4))");
        q(s, "INSERT INTO tx SELECT code, code FROM chr WHERE n = 10");
        q(s, "INSERT INTO tx VALUES ('q'::text, 'q'::text)");
        assert_eq!(
            rows(s, "SELECT t || '/', c || '/', c FROM tx ORDER BY t"),
            ["ab/|ab/|ab  ", "q/|q/|q   "]
        );
        q(s, "UPDATE tx SET t = c");
        assert_eq!(rows(s, "SELECT t || '/' FROM tx ORDER BY t"), ["ab/", "q/"]);
    });
}

/// Defect 6: each of these gave a wrong answer without an error; now PostgreSQL
/// 15's answer or its error (checked against it).
#[test]
fn wrong_results_give_postgres_answers_or_errors() {
    with_session(8 << 20, |s| {
        let cases: &[(&str, Result<&str, &str>)] = &[
            (
                "SELECT '2000-01-01'::timestamp + interval '106751991 days'",
                Err("22008"),
            ),
            (
                "SELECT '2000-01-01'::timestamp - interval '106751991 days'",
                Err("22008"),
            ),
            ("SELECT '2000-01-01'::date + 2147483647", Err("22008")),
            ("SELECT '2000-01-01'::date - 2147483647", Err("22008")),
            ("SELECT 2147483647 + '2000-01-01'::date", Err("22008")),
            (
                "SELECT ('2000-01-01'::date + 2000000000)::timestamp",
                Err("22008"),
            ),
            ("SELECT '2000-01-01'::date + 1000000", Ok("4737-11-28")),
            ("SELECT '\\x01'::bytea || '\\x02'::bytea", Ok("\\x0102")),
            ("SELECT abs((-32768)::smallint)", Err("22003")),
            ("SELECT abs((-32767)::smallint)", Ok("32767")),
            (
                "SELECT '1 day 2147483647 hours 2147483647 minutes'::interval",
                Ok("1 day 2183275041:07:00"),
            ),
            (
                "SELECT '1.5 hours 2147483647 minutes'::interval",
                Ok("35791395:37:00"),
            ),
            ("SELECT 0.1::real = 0.1", Ok("f")),
            ("SELECT 0.5::real = 0.5", Ok("t")),
            ("SELECT 0.1::real = 0.1::real", Ok("t")),
            ("SELECT '2000-01-01 00:00+99'::timestamptz", Err("22009")),
            ("SELECT '2000-01-01 00:00+16'::timestamptz", Err("22009")),
            (
                "SELECT '2000-01-01 00:00+15:59'::timestamptz",
                Ok("1999-12-31 08:01:00+00"),
            ),
            (
                "SELECT '2000-01-01 00:00-15:59:59'::timestamptz",
                Ok("2000-01-01 15:59:59+00"),
            ),
        ];
        for (sql, want) in cases {
            let c = q(s, sql);
            let got = match &c.results[0] {
                Ok(_) => Ok(c.rows[0][0].to_text().unwrap_or_default()),
                Err(e) => Err(e.code),
            };
            assert_eq!(got.as_deref().map_err(|e| *e), *want, "{sql}");
        }
        // A real column against a numeric literal compares as double precision.
        q(s, "CREATE TABLE r (x real); INSERT INTO r VALUES (0.1)");
        assert_eq!(one(s, "SELECT count(*) FROM r WHERE x = 0.1"), "0");
        assert_eq!(one(s, "SELECT count(*) FROM r WHERE x = 0.1::real"), "1");
        // bytea || bytea is a bytea, and stores back.
        q(s, "CREATE TABLE b (v bytea)");
        assert_eq!(
            tag(s, "INSERT INTO b SELECT '\\x01'::bytea || '\\x02'::bytea"),
            "INSERT 0 1"
        );
        assert_eq!(one(s, "SELECT v FROM b"), "\\x0102");
        // sum(smallint) is a bigint past every smaller type.
        q(s, "CREATE TABLE s2 (a int2)");
        q(
            s,
            "INSERT INTO s2 SELECT 32767 FROM generate_series(1, 70000)",
        );
        assert_eq!(one(s, "SELECT sum(a) FROM s2"), "2293690000");
        // COPY: a NUL in text is 22021; a delimiter equal to the quote is 22023.
        q(s, "CREATE TABLE ct (t text)");
        for data in [&b"a\\000b\n"[..], b"a\x00b\n"] {
            let c = q_copy(s, "COPY ct FROM STDIN", &[data]);
            assert_eq!(c.results[0].as_ref().unwrap_err().code, "22021", "{data:?}");
        }
        let sql = "COPY ct FROM STDIN WITH (FORMAT csv, DELIMITER '\"')";
        assert_eq!(codes(s, sql), ["22023"]);
        assert_eq!(one(s, "SELECT count(*) FROM ct"), "0");
    });
}

/// Defect 7: transaction settings were accepted and ignored (an INSERT committed
/// under default_transaction_read_only, SERIALIZABLE ran as READ COMMITTED). Now a
/// READ ONLY transaction refuses writes as PostgreSQL's does (25006, its words), and
/// isolation levels Strata lacks are refused (0A000).
#[test]
fn read_only_transactions_refuse_writes() {
    with_session(8 << 20, |s| {
        q(s, "CREATE TABLE rt (a int); CREATE SEQUENCE rs");
        assert_eq!(codes(s, "SET default_transaction_read_only = on"), [""]);
        for (sql, verb) in [
            ("INSERT INTO rt VALUES (1)", "INSERT"),
            ("UPDATE rt SET a = 2", "UPDATE"),
            ("DELETE FROM rt", "DELETE"),
            ("CREATE TABLE rt2 (a int)", "CREATE TABLE"),
            ("DROP TABLE rt", "DROP TABLE"),
            ("TRUNCATE rt", "TRUNCATE TABLE"),
            ("CREATE INDEX ON rt (a)", "CREATE INDEX"),
            ("COPY rt FROM STDIN", "COPY FROM"),
            ("SELECT nextval('rs')", "nextval()"),
            ("SELECT setval('rs', 5)", "setval()"),
            ("ALTER ROLE strata PASSWORD NULL", "ALTER ROLE"),
        ] {
            let e = error(s, sql);
            assert_eq!(
                (e.code, e.message.as_str()),
                (
                    "25006",
                    format!("cannot execute {verb} in a read-only transaction").as_str()
                ),
                "{sql}"
            );
        }
        // Reads, COPY TO, CHECKPOINT and VACUUM are allowed.
        for sql in ["SELECT count(*) FROM rt", "CHECKPOINT", "VACUUM rt"] {
            assert_eq!(codes(s, sql), [""], "{sql}");
        }
        assert_eq!(one(s, "SHOW transaction_read_only"), "on");
        // BEGIN READ WRITE overrides the default for its block.
        assert_eq!(
            codes(s, "BEGIN READ WRITE; INSERT INTO rt VALUES (1); COMMIT"),
            ["", "", ""]
        );
        assert_eq!(codes(s, "SET default_transaction_read_only = off"), [""]);
        assert_eq!(one(s, "SHOW transaction_read_only"), "off");
        assert_eq!(
            codes(s, "BEGIN READ ONLY; INSERT INTO rt VALUES (2)"),
            ["", "25006"]
        );
        q(s, "ROLLBACK");
        assert_eq!(
            codes(
                s,
                "BEGIN; SET TRANSACTION READ ONLY; INSERT INTO rt VALUES (3)"
            ),
            ["", "", "25006"]
        );
        q(s, "ROLLBACK");
        assert_eq!(
            codes(s, "BEGIN; SET transaction_read_only = on; DELETE FROM rt"),
            ["", "", "25006"]
        );
        q(s, "ROLLBACK");
        // Outside a block SET TRANSACTION warns and does nothing, as PostgreSQL's.
        let c = q(s, "SET TRANSACTION READ ONLY");
        let warned = c.results[0].as_ref().unwrap().notices.clone();
        assert_eq!(
            warned,
            [(
                "WARNING",
                "SET TRANSACTION can only be used in transaction blocks".to_string()
            )]
        );
        q(s, "SET SESSION CHARACTERISTICS AS TRANSACTION READ ONLY");
        assert_eq!(codes(s, "INSERT INTO rt VALUES (4)"), ["25006"]);
        q(s, "SET SESSION CHARACTERISTICS AS TRANSACTION READ WRITE");
        assert_eq!(one(s, "SELECT count(*) FROM rt"), "1");
    });
}

/// Defect 7, isolation: what Strata runs is taken (REPEATABLE READ since session
/// 48: isolation_tests), the rest refused (0A000), nonsense 22023.
#[test]
fn isolation_levels_strata_lacks_are_refused() {
    with_session(8 << 20, |s| {
        for (sql, code) in [
            ("SET default_transaction_isolation = 'repeatable read'", ""),
            ("SET default_transaction_isolation = 'read committed'", ""),
            ("SET default_transaction_isolation = 'read uncommitted'", ""),
            (
                "SET default_transaction_isolation = 'serializable'",
                "0A000",
            ),
            ("SET default_transaction_isolation = 'foo'", "22023"),
            ("SET default_transaction_read_only = 'maybe'", "22023"),
            ("BEGIN ISOLATION LEVEL SERIALIZABLE", "0A000"),
        ] {
            assert_eq!(codes(s, sql), [code], "{sql}");
        }
        assert_eq!(
            one(s, "SHOW default_transaction_isolation"),
            "read uncommitted"
        );
        assert_eq!(
            codes(
                s,
                "BEGIN ISOLATION LEVEL READ COMMITTED, READ WRITE, NOT DEFERRABLE; COMMIT"
            ),
            ["", ""]
        );
    });
}

/// SET LOCAL lasts until its transaction ends, as PostgreSQL's: COMMIT and ROLLBACK
/// both restore the value before it, a plain SET after it in the same block
/// outlives it, and outside a block it warns and does nothing.
#[test]
fn set_local_lasts_until_the_transaction_ends() {
    with_session(8 << 20, |s| {
        let c = q(s, "SET LOCAL work_mem = '8MB'");
        let warned = c.results[0].as_ref().unwrap().notices.clone();
        assert_eq!(
            warned,
            [(
                "WARNING",
                "SET LOCAL can only be used in transaction blocks".to_string()
            )]
        );
        assert_eq!(one(s, "SHOW work_mem"), "4MB");
        q(s, "BEGIN; SET LOCAL work_mem = '16MB'");
        assert_eq!(one(s, "SHOW work_mem"), "16MB");
        q(s, "COMMIT");
        assert_eq!(one(s, "SHOW work_mem"), "4MB");
        q(
            s,
            "BEGIN; SET work_mem = '32MB'; SET LOCAL work_mem = '16MB'; COMMIT",
        );
        assert_eq!(one(s, "SHOW work_mem"), "32MB");
        q(
            s,
            "BEGIN; SET LOCAL work_mem = '16MB'; SET work_mem = '12MB'; COMMIT",
        );
        assert_eq!(one(s, "SHOW work_mem"), "12MB");
        q(s, "BEGIN; SET LOCAL statement_timeout = '5s'; ROLLBACK");
        assert_eq!(one(s, "SHOW statement_timeout"), "0");
        assert_eq!(codes(s, "BEGIN; SET LOCAL no_such = 1"), ["", "42704"]);
        q(s, "ROLLBACK");
    });
}

/// A set-returning function alone in the select list of a SELECT without FROM runs
/// as PostgreSQL's ProjectSet gives it (analyze rule 9); with a second one it is
/// still refused.
#[test]
fn a_series_in_the_select_list_without_from() {
    with_session(8 << 20, |s| {
        q(s, "CREATE TABLE sr (a int)");
        assert_eq!(
            codes(s, "INSERT INTO sr SELECT generate_series(1, 5)"),
            [""]
        );
        assert_eq!(one(s, "SELECT sum(a) FROM sr"), "15");
        assert_eq!(
            one(
                s,
                "SELECT count(*) FROM (SELECT generate_series(1, 10, 4) AS x, 'a' AS b) t"
            ),
            "3"
        );
        assert_eq!(
            one(
                s,
                "SELECT max(generate_series) FROM (SELECT generate_series(5, 1, -2)) t"
            ),
            "5"
        );
        assert_eq!(
            one(
                s,
                "SELECT count(*) FROM (SELECT generate_series(1, 3) WHERE false) t"
            ),
            "0"
        );
        assert_eq!(
            codes(s, "SELECT generate_series(1, 2), generate_series(1, 3)"),
            ["0A000"]
        );
    });
}

/// `WITH ... INSERT / UPDATE / DELETE` (sql rule 8): the CTEs are read by the
/// INSERT's query and the UPDATE's FROM or DELETE's USING, never taken for the
/// target; a data-modifying CTE runs first (cte rule 4).
#[test]
fn with_before_insert_update_and_delete() {
    with_session(8 << 20, |s| {
        q(
            s,
            "CREATE TABLE wy (a int); INSERT INTO wy SELECT generate_series(1, 4)",
        );
        q(
            s,
            "WITH t AS (SELECT a FROM wy) INSERT INTO wy SELECT a + 10 FROM t",
        );
        assert_eq!(one(s, "SELECT sum(a) FROM wy"), "60");
        q(
            s,
            "WITH t AS (SELECT 11 AS a) UPDATE wy SET a = 0 FROM t WHERE t.a = wy.a",
        );
        assert_eq!(one(s, "SELECT count(*) FROM wy WHERE a = 0"), "1");
        q(s, "WITH RECURSIVE t(a) AS (SELECT 12 UNION ALL SELECT a + 1 FROM t WHERE a < 20) DELETE FROM wy USING t WHERE t.a = wy.a");
        assert_eq!(one(s, "SELECT count(*) FROM wy"), "5");
        // A CTE named as the target: the table is still the target.
        q(s, "WITH wy AS (SELECT 42) INSERT INTO wy SELECT * FROM wy");
        assert_eq!(one(s, "SELECT max(a) FROM wy"), "42");
        assert_eq!(
            codes(
                s,
                "WITH t AS (DELETE FROM wy RETURNING *) INSERT INTO wy SELECT * FROM t"
            ),
            [""]
        );
        assert_eq!(one(s, "SELECT count(*) FROM wy"), "6");
    });
}

/// A CTE of a WITH RECURSIVE list whose UNION does not read itself is a plain
/// CTE, as in PostgreSQL.
#[test]
fn with_recursive_takes_plain_ctes_too() {
    with_session(8 << 20, |s| {
        assert_eq!(
            one(s, "WITH RECURSIVE q(a) AS (SELECT 1 UNION SELECT 2 UNION SELECT 1) SELECT count(*) FROM q"),
            "2"
        );
        let sql = "WITH RECURSIVE x(id) AS (VALUES (1) UNION ALL SELECT id + 1 FROM x WHERE id < 5), \
                   y(id) AS (VALUES (1) UNION ALL SELECT id + 1 FROM x WHERE id < 3) SELECT sum(id) FROM y";
        assert_eq!(one(s, sql), "6");
    });
}
