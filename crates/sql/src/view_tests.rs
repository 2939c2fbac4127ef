//! Views (issue 28 item 8, rewrite module) in-process on a real engine: what they
//! read, how they change, what depends on them, with PostgreSQL 15's answers and
//! errors.

use super::defect_tests::{codes, error, q, rows};
use super::fuzz_tests::with_session;
use super::session::Session;

fn setup(s: &mut Session<'_>) {
    let c = q(
        s,
        "DROP TABLE t; CREATE TABLE t (a int PRIMARY KEY, b text, c int);
         INSERT INTO t VALUES (1, 'x', 10), (2, 'y', 20), (3, 'z', 30);
         CREATE VIEW v AS SELECT a, b FROM t WHERE a > 1;
         CREATE VIEW w (d) AS SELECT a * 2 FROM v",
    );
    assert!(c.results.iter().all(|r| r.is_ok()), "{:?}", c.results);
}

fn notices(s: &mut Session<'_>, sql: &str) -> Vec<String> {
    let c = q(s, sql);
    match c.results.into_iter().next() {
        Some(Ok(e)) => e.notices.into_iter().map(|(_, m)| m).collect(),
        other => panic!("{sql}: {other:?}"),
    }
}

#[test]
fn a_view_reads_its_query_wherever_it_is_named() {
    with_session(8 << 20, |s| {
        setup(s);
        assert_eq!(rows(s, "SELECT * FROM v ORDER BY a"), ["2|y", "3|z"]);
        assert_eq!(rows(s, "SELECT d FROM w ORDER BY d"), ["4", "6"]);
        let join = "SELECT v.a, t.c FROM v JOIN t USING (a) ORDER BY 1";
        assert_eq!(rows(s, join), ["2|20", "3|30"]);
        let aliased = "SELECT x.q FROM v AS x (q) WHERE x.b = 'z'";
        assert_eq!(rows(s, aliased), ["3"]);
        // The view's query sees none of the statement's CTEs (rewrite rule 1).
        let cte = "WITH t AS (SELECT 99 AS a, 'no' AS b, 0 AS c) SELECT count(*) FROM v";
        assert_eq!(rows(s, cte), ["2"]);
        let sub = "SELECT a FROM t WHERE a IN (SELECT a FROM v) AND a < 3";
        assert_eq!(rows(s, sub), ["2"]);
        q(s, "INSERT INTO t VALUES (4, 'w', 40)");
        assert_eq!(rows(s, "SELECT count(*) FROM w"), ["3"]);
        // A table that gains a column does not widen a view of `*` (rule 2).
        q(
            s,
            "CREATE VIEW star AS SELECT * FROM t; ALTER TABLE t ADD COLUMN e int",
        );
        assert_eq!(rows(s, "SELECT * FROM star WHERE a = 1"), ["1|x|10"]);
        // v is a simple view: the row goes into t (updatable rule 2).
        assert_eq!(codes(s, "INSERT INTO v VALUES (9, 'q')"), [""]);
        assert_eq!(rows(s, "SELECT a, b, c FROM t WHERE a = 9"), ["9|q|"]);
        assert_eq!(error(s, "CREATE VIEW v AS SELECT 1").code, "42P07");
        assert_eq!(error(s, "CREATE VIEW bad (x, y) AS SELECT 1").code, "42601");
        assert_eq!(
            error(s, "CREATE VIEW dup AS SELECT 1 AS a, 2 AS a").code,
            "42701"
        );
    });
}

#[test]
fn or_replace_keeps_the_columns_and_may_add_more() {
    with_session(8 << 20, |s| {
        setup(s);
        let e = error(s, "CREATE OR REPLACE VIEW v AS SELECT a FROM t");
        assert_eq!(
            (e.code, e.message.as_str()),
            ("42P16", "cannot drop columns from view")
        );
        let e = error(s, "CREATE OR REPLACE VIEW v AS SELECT b, a FROM t");
        assert_eq!(
            e.message,
            "cannot change name of view column \"a\" to \"b\""
        );
        let e = error(s, "CREATE OR REPLACE VIEW v AS SELECT a, c AS b FROM t");
        assert_eq!(
            e.message,
            "cannot change data type of view column \"b\" from text to integer"
        );
        q(
            s,
            "CREATE OR REPLACE VIEW v AS SELECT a, b, c FROM t WHERE a < 3",
        );
        assert_eq!(rows(s, "SELECT * FROM v ORDER BY a"), ["1|x|10", "2|y|20"]);
        assert_eq!(rows(s, "SELECT d FROM w ORDER BY d"), ["2", "4"]);
        assert_eq!(
            error(s, "CREATE OR REPLACE VIEW t AS SELECT 1").code,
            "42809"
        );
        // A view reached from itself is PostgreSQL's 42P17 when it is read.
        q(
            s,
            "CREATE VIEW r1 AS SELECT 1 AS x; CREATE VIEW r2 AS SELECT x FROM r1",
        );
        q(s, "CREATE OR REPLACE VIEW r1 AS SELECT x FROM r2");
        assert_eq!(error(s, "SELECT * FROM r2").code, "42P17");
    });
}

#[test]
fn what_a_view_reads_cannot_go_from_under_it() {
    with_session(8 << 20, |s| {
        setup(s);
        let e = error(s, "DROP TABLE t");
        assert_eq!(e.code, "2BP01");
        assert_eq!(
            e.message,
            "cannot drop table t because other objects depend on it"
        );
        assert_eq!(e.detail.as_deref(), Some("view v depends on table t"));
        assert_eq!(
            error(s, "DROP VIEW v").detail.as_deref(),
            Some("view w depends on view v")
        );
        assert_eq!(error(s, "ALTER TABLE t DROP COLUMN b").code, "2BP01");
        assert_eq!(
            codes(s, "ALTER TABLE t DROP COLUMN c"),
            [""],
            "v does not read c"
        );
        assert_eq!(error(s, "ALTER TABLE t RENAME TO t2").code, "0A000");
        assert_eq!(
            error(s, "ALTER TABLE t RENAME COLUMN a TO aa").code,
            "0A000"
        );
        assert_eq!(
            error(s, "DROP TABLE v").hint.as_deref(),
            Some("Use DROP VIEW to remove a view.")
        );
        assert_eq!(error(s, "DROP VIEW t").code, "42809");
        assert_eq!(error(s, "DROP VIEW nosuch").code, "42P01");
        assert_eq!(
            notices(s, "DROP VIEW IF EXISTS nosuch"),
            ["view \"nosuch\" does not exist, skipping"]
        );
        // Inside a rolled-back block the drop is undone with the views.
        q(s, "BEGIN; DROP TABLE t CASCADE; ROLLBACK");
        assert_eq!(rows(s, "SELECT count(*) FROM w"), ["2"]);
        assert_eq!(
            notices(s, "DROP VIEW v CASCADE"),
            ["drop cascades to view w"]
        );
        assert_eq!(error(s, "SELECT * FROM w").code, "42P01");
        q(
            s,
            "CREATE VIEW v AS SELECT a FROM t; CREATE VIEW w AS SELECT a FROM v",
        );
        assert_eq!(
            notices(s, "DROP TABLE t CASCADE"),
            ["drop cascades to 2 other objects"]
        );
        assert_eq!(codes(s, "SELECT * FROM v; SELECT * FROM t"), ["42P01"]);
    });
}

#[test]
fn a_view_of_a_temporary_table_is_temporary() {
    with_session(8 << 20, |s| {
        setup(s);
        q(s, "CREATE TEMP TABLE tt (x int); INSERT INTO tt VALUES (5)");
        assert_eq!(
            notices(s, "CREATE VIEW tv AS SELECT x FROM tt"),
            ["view \"tv\" will be a temporary view"]
        );
        q(s, "CREATE TEMP VIEW tv2 AS SELECT a FROM t");
        assert_eq!(rows(s, "SELECT x FROM tv"), ["5"]);
        assert_eq!(rows(s, "SELECT count(*) FROM tv2"), ["3"]);
        assert_eq!(
            error(s, "DROP TABLE t").detail.as_deref(),
            Some("view tv2 depends on table t\nview v depends on table t")
        );
        assert_eq!(
            notices(s, "DROP TABLE tt CASCADE"),
            ["drop cascades to view tv"]
        );
    });
}

#[test]
fn a_view_reads_with_its_owners_privileges() {
    with_session(8 << 20, |s| {
        setup(s);
        q(
            s,
            "CREATE ROLE bob; GRANT SELECT ON v TO bob; CREATE VIEW own AS SELECT c FROM t;
             GRANT SELECT ON own TO bob",
        );
        q(s, "SET ROLE bob");
        assert_eq!(rows(s, "SELECT count(*) FROM v"), ["2"]);
        assert_eq!(error(s, "SELECT * FROM t").code, "42501");
        assert_eq!(error(s, "SELECT * FROM w").code, "42501");
        // bob's own view of t reads t as bob: refused.
        q(
            s,
            "RESET ROLE; GRANT CREATE ON SCHEMA public TO bob; SET ROLE bob",
        );
        q(s, "CREATE VIEW mine AS SELECT a FROM t");
        assert_eq!(error(s, "SELECT * FROM mine").code, "42501");
        assert_eq!(error(s, "DROP VIEW v").code, "42501");
        q(s, "RESET ROLE");
    });
}

#[test]
fn simple_views_take_writes_through_to_their_table() {
    with_session(8 << 20, |s| {
        setup(s);
        q(
            s,
            "CREATE VIEW cheap AS SELECT a AS k, c, c * 2 AS dbl FROM t x WHERE x.c < 25;
             CREATE VIEW cheaper AS SELECT * FROM cheap WHERE c < 15",
        );
        let c = q(s, "INSERT INTO cheap (k, c) VALUES (7, 5) RETURNING *");
        assert!(c.results[0].is_ok(), "{:?}", c.results);
        assert_eq!(rows(s, "SELECT a, b, c FROM t WHERE a = 7"), ["7||5"]);
        // UPDATE and DELETE touch only the rows the view shows, through two views.
        assert_eq!(codes(s, "UPDATE cheaper SET c = c + 1"), [""]);
        assert_eq!(
            rows(s, "SELECT a, c FROM t ORDER BY a"),
            ["1|11", "2|20", "3|30", "7|6"]
        );
        assert_eq!(codes(s, "DELETE FROM cheap WHERE dbl > 30"), [""]);
        assert_eq!(rows(s, "SELECT a FROM t ORDER BY a"), ["1", "3", "7"]);
        let e = error(s, "UPDATE cheap SET dbl = 1");
        assert_eq!(
            (e.code, e.message.as_str()),
            ("0A000", "cannot update column \"dbl\" of view \"cheap\"")
        );
        let e = error(s, "INSERT INTO w VALUES (1)");
        assert_eq!(e.message, "cannot insert into column \"d\" of view \"w\"");
        q(
            s,
            "CREATE VIEW grouped AS SELECT c, count(*) FROM t GROUP BY c",
        );
        assert_eq!(
            error(s, "DELETE FROM grouped").detail.as_deref(),
            Some("Views containing GROUP BY are not automatically updatable.")
        );
        assert_eq!(
            error(s, "DELETE FROM cheap WHERE k IN (SELECT 1)").code,
            "0A000"
        );
    });
}

/// A WHERE over a plain view goes into the view's query (planner's subquery
/// pushdown): the table's index serves it, and the rows are the same.
#[test]
fn a_where_over_a_view_reaches_its_tables_index() {
    with_session(8 << 20, |s| {
        setup(s);
        let plan = rows(s, "EXPLAIN (COSTS OFF) SELECT b FROM v WHERE a = 3").join("\n");
        assert!(plan.contains("Index Scan using t_pkey on t"), "{plan}");
        assert_eq!(rows(s, "SELECT b FROM v WHERE a = 3"), ["z"]);
        assert_eq!(rows(s, "SELECT b FROM v WHERE a = 1"), Vec::<String>::new());
        assert_eq!(rows(s, "SELECT d FROM w WHERE d > 4"), ["6"]);
        // Not below a LIMIT: the filter stays above it.
        q(s, "CREATE VIEW lim AS SELECT a FROM t ORDER BY a LIMIT 2");
        assert_eq!(rows(s, "SELECT a FROM lim WHERE a > 1"), ["2"]);
        // Nor into a grouped view.
        q(
            s,
            "CREATE VIEW g AS SELECT c > 15 AS big, count(*) AS n FROM t GROUP BY 1",
        );
        assert_eq!(rows(s, "SELECT n FROM g WHERE big"), ["2"]);
    });
}
