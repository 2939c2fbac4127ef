//! Isolation levels between two sessions of one cluster (session rule 11, engine
//! rule 10): what a REPEATABLE READ block sees and may change while another
//! session commits, against READ COMMITTED's statement snapshots.

use super::defect_tests::{codes, error, one, q};
use super::fuzz_tests::with_sessions;

/// A REPEATABLE READ block reads as of its first statement's snapshot (its own
/// writes too), and changing a row another session changed since fails with
/// 40001 — by index and by a scan, UPDATE, DELETE and ON CONFLICT alike — where
/// READ COMMITTED reads each statement's snapshot and changes the newest row.
/// (Session `b` never writes while `a` holds the writer lock: one thread.)
#[test]
fn repeatable_read_reads_one_snapshot_and_refuses_lost_updates() {
    with_sessions(8 << 20, |a, b| {
        q(a, "CREATE TABLE rr (id int PRIMARY KEY, v int)");
        q(
            a,
            "INSERT INTO rr VALUES (1, 10), (2, 20), (5, 50), (6, 60)",
        );
        let sum = "SELECT sum(v) FROM rr WHERE id < 5";
        assert_eq!(codes(a, "BEGIN ISOLATION LEVEL REPEATABLE READ"), [""]);
        assert_eq!(one(a, "SHOW transaction_isolation"), "repeatable read");
        assert_eq!(one(a, sum), "30");
        assert_eq!(codes(b, "UPDATE rr SET v = 11 WHERE id = 1"), [""]);
        assert_eq!(codes(b, "INSERT INTO rr VALUES (3, 30)"), [""]);
        assert_eq!(one(a, sum), "30", "the block's snapshot");
        assert_eq!(one(a, "SELECT count(*) FROM rr"), "4");
        // COPY TO reads as of it too (pg_dump's COPY in its REPEATABLE READ block).
        let copied = q(a, "COPY rr TO STDOUT").copied;
        assert_eq!(
            String::from_utf8_lossy(&copied),
            "1\t10\n2\t20\n5\t50\n6\t60\n"
        );
        assert_eq!(codes(a, "UPDATE rr SET v = v + 1 WHERE id = 2"), [""]);
        assert_eq!(one(a, sum), "31", "its own write, as of its snapshot");
        let e = error(a, "UPDATE rr SET v = 0 WHERE id = 1");
        assert_eq!(
            (e.code, e.message.as_str()),
            (
                "40001",
                "could not serialize access due to concurrent update"
            )
        );
        assert_eq!(codes(a, "SELECT 1"), ["25P02"]);
        q(a, "ROLLBACK");
        assert_eq!(one(a, sum), "61", "b's commits; a's rolled back");
        // A row the snapshot sees that nothing changed is no conflict; one deleted
        // since is, found by a scan (no index condition) or through the index.
        for (change, write) in [
            ("DELETE FROM rr WHERE id = 5", "DELETE FROM rr WHERE v = 50"),
            (
                "UPDATE rr SET v = 61 WHERE id = 6",
                "UPDATE rr SET v = 0 WHERE id = 6",
            ),
        ] {
            q(a, "BEGIN; SET TRANSACTION ISOLATION LEVEL REPEATABLE READ");
            assert_eq!(
                one(a, "SELECT count(*) FROM rr"),
                match change.starts_with("DELETE") {
                    true => "5",
                    false => "4",
                }
            );
            assert_eq!(codes(b, change), [""]);
            assert_eq!(codes(a, write), ["40001"], "{write}");
            q(a, "ROLLBACK");
        }
        // ON CONFLICT meeting a row the snapshot does not see (PostgreSQL's
        // ExecCheckTIDVisible): 40001, DO NOTHING as DO UPDATE.
        for action in ["DO NOTHING", "DO UPDATE SET v = 0"] {
            q(a, "BEGIN ISOLATION LEVEL REPEATABLE READ");
            assert_eq!(one(a, "SELECT count(*) FROM rr WHERE id = 9"), "0");
            assert_eq!(codes(b, "INSERT INTO rr VALUES (9, 90)"), [""]);
            let sql = format!("INSERT INTO rr VALUES (9, 0) ON CONFLICT (id) {action}");
            assert_eq!(codes(a, &sql), ["40001"], "{sql}");
            q(a, "ROLLBACK");
            q(b, "DELETE FROM rr WHERE id = 9");
        }
        // READ COMMITTED: each statement its own snapshot; the newest row changes.
        q(a, "BEGIN");
        assert_eq!(one(a, "SHOW transaction_isolation"), "read committed");
        assert_eq!(one(a, sum), "61");
        assert_eq!(codes(b, "UPDATE rr SET v = 12 WHERE id = 1"), [""]);
        assert_eq!(one(a, sum), "62");
        assert_eq!(codes(a, "UPDATE rr SET v = v + 1 WHERE id = 1"), [""]);
        q(a, "COMMIT");
        assert_eq!(one(b, "SELECT v FROM rr WHERE id = 1"), "13");
    });
}

/// The level is the block's, settable until its first query (25001 after, as
/// PostgreSQL's), by BEGIN, SET TRANSACTION, `transaction_isolation` and the
/// session's default; SERIALIZABLE is refused, never run as another level.
#[test]
fn isolation_level_is_set_before_the_first_query() {
    with_sessions(8 << 20, |a, _| {
        q(a, "BEGIN");
        assert_eq!(codes(a, "SELECT 1"), [""]);
        let e = error(a, "SET TRANSACTION ISOLATION LEVEL REPEATABLE READ");
        assert_eq!(
            (e.code, e.message.as_str()),
            (
                "25001",
                "SET TRANSACTION ISOLATION LEVEL must be called before any query"
            )
        );
        q(a, "ROLLBACK");
        q(a, "BEGIN; SET transaction_isolation = 'repeatable read'");
        assert_eq!(one(a, "SHOW transaction_isolation"), "repeatable read");
        q(a, "COMMIT");
        assert_eq!(one(a, "SHOW transaction_isolation"), "read committed");
        q(a, "SET default_transaction_isolation = 'repeatable read'");
        assert_eq!(one(a, "SHOW transaction_isolation"), "repeatable read");
        q(a, "BEGIN");
        assert_eq!(one(a, "SHOW transaction_isolation"), "repeatable read");
        q(a, "COMMIT");
        q(
            a,
            "SET SESSION CHARACTERISTICS AS TRANSACTION ISOLATION LEVEL READ COMMITTED",
        );
        assert_eq!(
            one(a, "SHOW default_transaction_isolation"),
            "read committed"
        );
        for sql in [
            "BEGIN ISOLATION LEVEL SERIALIZABLE",
            "SET default_transaction_isolation = 'serializable'",
        ] {
            assert_eq!(codes(a, sql), ["0A000"], "{sql}");
        }
        assert_eq!(
            codes(
                a,
                "BEGIN ISOLATION LEVEL REPEATABLE READ, READ ONLY; SELECT 1; COMMIT"
            ),
            ["", "", ""]
        );
    });
}

/// Referential integrity reads the newest rows whatever the level: a REPEATABLE
/// READ block cannot insert a child of a parent deleted since its snapshot (23503,
/// where PostgreSQL's row lock says 40001: no orphan either way), and its ON
/// DELETE CASCADE reaches children committed since its snapshot. COPY TO after the
/// block's own write still reads its snapshot and its own rows.
#[test]
fn repeatable_read_keeps_foreign_keys_whole() {
    with_sessions(8 << 20, |a, b| {
        q(
            a,
            "CREATE TABLE p (id int PRIMARY KEY);
             CREATE TABLE c (id int PRIMARY KEY, pid int REFERENCES p ON DELETE CASCADE);
             INSERT INTO p VALUES (1), (2)",
        );
        q(a, "BEGIN ISOLATION LEVEL REPEATABLE READ");
        assert_eq!(one(a, "SELECT count(*) FROM p"), "2");
        assert_eq!(codes(b, "DELETE FROM p WHERE id = 2"), [""]);
        assert_eq!(codes(b, "INSERT INTO c VALUES (10, 1)"), [""]);
        assert_eq!(
            one(a, "SELECT count(*) FROM p"),
            "2",
            "the snapshot's parents"
        );
        assert_eq!(codes(a, "INSERT INTO c VALUES (20, 2)"), ["23503"]);
        q(a, "ROLLBACK");
        q(a, "BEGIN ISOLATION LEVEL REPEATABLE READ");
        assert_eq!(one(a, "SELECT count(*) FROM c"), "1");
        assert_eq!(codes(b, "INSERT INTO c VALUES (11, 1)"), [""]);
        assert_eq!(codes(a, "INSERT INTO p VALUES (3)"), [""]);
        let copied = q(a, "COPY p TO STDOUT").copied;
        assert_eq!(String::from_utf8_lossy(&copied), "1\n3\n");
        assert_eq!(codes(a, "DELETE FROM p WHERE id = 1"), [""]);
        q(a, "COMMIT");
        assert_eq!(
            one(b, "SELECT count(*) FROM c"),
            "0",
            "no child left behind"
        );
    });
}
