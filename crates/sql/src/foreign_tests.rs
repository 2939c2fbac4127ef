//! FOREIGN KEYs (foreign module) in-process on a real engine: the checks at the end
//! of each statement, the actions, the DDL around them, with PostgreSQL 15's
//! answers and words (each checked against PostgreSQL 15 by hand).

use super::defect_tests::{codes, error, q, rows};
use super::fuzz_tests::with_session;
use super::session::Session;

fn run_all(s: &mut Session<'_>, sql: &str) {
    let c = q(s, sql);
    assert!(
        c.results.iter().all(|r| r.is_ok()),
        "{sql}: {:?}",
        c.results
    );
}

#[test]
fn references_are_checked_at_the_end_of_each_statement() {
    with_session(8 << 20, |s| {
        run_all(
            s,
            "CREATE TABLE p (id int PRIMARY KEY, name text UNIQUE);
             CREATE TABLE c (id int PRIMARY KEY, pid int REFERENCES p, pn text REFERENCES p (name));
             INSERT INTO p VALUES (1, 'a'), (2, 'b');
             INSERT INTO c VALUES (10, 1, 'a'), (11, NULL, NULL)",
        );
        let e = error(s, "INSERT INTO c VALUES (12, 3, NULL)");
        assert_eq!(e.code, "23503");
        assert_eq!(
            e.message,
            "insert or update on table \"c\" violates foreign key constraint \"c_pid_fkey\""
        );
        assert_eq!(
            e.detail.as_deref(),
            Some("Key (pid)=(3) is not present in table \"p\".")
        );
        assert_eq!(
            error(s, "UPDATE c SET pn = 'zz' WHERE id = 10").code,
            "23503"
        );
        let e = error(s, "DELETE FROM p WHERE id = 1");
        assert_eq!(
            e.message,
            "update or delete on table \"p\" violates foreign key constraint \"c_pid_fkey\" on table \"c\""
        );
        assert_eq!(
            e.detail.as_deref(),
            Some("Key (id)=(1) is still referenced from table \"c\".")
        );
        assert_eq!(codes(s, "UPDATE p SET id = 5 WHERE id = 1"), ["23503"]);
        // A key nobody references goes; a failed statement left nothing behind.
        assert_eq!(codes(s, "DELETE FROM p WHERE id = 2"), [""]);
        assert_eq!(
            rows(s, "SELECT id, pid FROM c ORDER BY id"),
            ["10|1", "11|"]
        );
        // COPY and ON CONFLICT are checked too.
        assert_eq!(
            codes(
                s,
                "INSERT INTO c VALUES (10, 7, NULL) ON CONFLICT (id) DO UPDATE SET pid = 7"
            ),
            ["23503"]
        );
        assert_eq!(
            codes(
                s,
                "INSERT INTO c VALUES (13, 9, NULL) ON CONFLICT DO NOTHING"
            ),
            ["23503"]
        );
        // A self-reference: rows may come in any order within one statement, and a
        // whole tree may go at once, but not a node with children (foreign rule 1).
        run_all(
            s,
            "CREATE TABLE tree (id int PRIMARY KEY, parent int REFERENCES tree);
             INSERT INTO tree VALUES (3, 2), (2, 1), (1, NULL), (4, 1)",
        );
        assert_eq!(codes(s, "DELETE FROM tree WHERE id = 2"), ["23503"]);
        assert_eq!(codes(s, "DELETE FROM tree WHERE id IN (2, 3)"), [""]);
        assert_eq!(codes(s, "DELETE FROM tree"), [""]);
        // MATCH FULL: all NULL or none (foreign rule 2), over a two-column key in
        // another order than the index's.
        run_all(
            s,
            "CREATE TABLE m (a int, b int, PRIMARY KEY (a, b));
             CREATE TABLE mc (x int, y int, FOREIGN KEY (y, x) REFERENCES m (b, a) MATCH FULL);
             INSERT INTO m VALUES (1, 2); INSERT INTO mc VALUES (1, 2), (NULL, NULL)",
        );
        let e = error(s, "INSERT INTO mc VALUES (1, NULL)");
        assert_eq!(
            e.detail.as_deref(),
            Some("MATCH FULL does not allow mixing of null and nonnull key values.")
        );
        let e = error(s, "INSERT INTO mc VALUES (2, 1)");
        assert_eq!(
            e.detail.as_deref(),
            Some("Key (y, x)=(1, 2) is not present in table \"m\".")
        );
    });
}

#[test]
fn cascade_and_set_null_change_the_referencing_rows() {
    with_session(8 << 20, |s| {
        run_all(
            s,
            "CREATE TABLE a (x int PRIMARY KEY);
             CREATE TABLE b (y bigint PRIMARY KEY, ax int REFERENCES a ON DELETE CASCADE ON UPDATE CASCADE);
             CREATE TABLE c (z int, by_ bigint REFERENCES b ON DELETE SET NULL);
             CREATE TABLE d (w int REFERENCES a ON DELETE RESTRICT);
             INSERT INTO a VALUES (1), (2), (3);
             INSERT INTO b VALUES (10, 1), (11, 1), (20, 2);
             INSERT INTO c VALUES (100, 10), (101, 20)",
        );
        assert_eq!(codes(s, "UPDATE a SET x = x + 100 WHERE x < 3"), [""]);
        assert_eq!(
            rows(s, "SELECT y, ax FROM b ORDER BY y"),
            ["10|101", "11|101", "20|102"]
        );
        // Deleting a cascades to b, whose deleted rows set c's keys to NULL.
        assert_eq!(codes(s, "DELETE FROM a WHERE x = 101"), [""]);
        assert_eq!(rows(s, "SELECT y FROM b ORDER BY y"), ["20"]);
        assert_eq!(
            rows(s, "SELECT z, by_ FROM c ORDER BY z"),
            ["100|", "101|20"]
        );
        // RESTRICT refuses even when the key is not the last of its kind.
        run_all(s, "INSERT INTO d VALUES (3)");
        assert_eq!(codes(s, "DELETE FROM a WHERE x = 3"), ["23503"]);
        assert_eq!(rows(s, "SELECT count(*) FROM a"), ["2"]);
    });
}

#[test]
fn foreign_key_ddl_answers_as_postgres() {
    with_session(8 << 20, |s| {
        run_all(
            s,
            "CREATE TABLE p (id int PRIMARY KEY, t text, u int);
             CREATE TABLE c (pid int REFERENCES p);
             INSERT INTO p VALUES (1, 'x', 0); INSERT INTO c VALUES (1)",
        );
        for (sql, code) in [
            ("CREATE TABLE c2 (x int REFERENCES p (u))", "42830"),
            ("CREATE TABLE c2 (x text REFERENCES p)", "42804"),
            ("CREATE TABLE c2 (x int REFERENCES nope)", "42P01"),
            ("CREATE TABLE c2 (x int REFERENCES p (nope))", "42703"),
            (
                "CREATE TABLE c2 (x int, FOREIGN KEY (x) REFERENCES p (id, u))",
                "42830",
            ),
            ("CREATE TEMP TABLE c2 (x int REFERENCES p)", "42P16"),
            (
                "CREATE TABLE c2 (x int REFERENCES p DEFERRABLE INITIALLY DEFERRED)",
                "0A000",
            ),
            (
                "CREATE TABLE c2 (x int REFERENCES p MATCH PARTIAL)",
                "0A000",
            ),
            (
                "ALTER TABLE c ADD CONSTRAINT c_pid_fkey FOREIGN KEY (pid) REFERENCES p",
                "42710",
            ),
            ("TRUNCATE p", "0A000"),
            ("ALTER TABLE p DROP CONSTRAINT p_pkey", "2BP01"),
            ("ALTER TABLE p DROP COLUMN id", "2BP01"),
        ] {
            assert_eq!(codes(s, sql), [code], "{sql}");
        }
        let e = error(s, "DROP TABLE p");
        assert_eq!(
            (e.code, e.detail.as_deref()),
            (
                "2BP01",
                Some("constraint c_pid_fkey on table c depends on table p")
            )
        );
        // ADD checks the rows there are, unless NOT VALID.
        run_all(s, "CREATE TABLE c3 (x int); INSERT INTO c3 VALUES (1), (5)");
        let add = "ALTER TABLE c3 ADD CONSTRAINT c3x FOREIGN KEY (x) REFERENCES p";
        assert_eq!(codes(s, add), ["23503"]);
        assert_eq!(codes(s, &format!("{add} NOT VALID")), [""]);
        assert_eq!(codes(s, "INSERT INTO c3 VALUES (6)"), ["23503"]);
        assert_eq!(codes(s, "ALTER TABLE c3 DROP CONSTRAINT c3x"), [""]);
        assert_eq!(codes(s, "INSERT INTO c3 VALUES (6)"), [""]);
        // Renaming the referenced table and dropping other columns keep the key.
        run_all(s, "ALTER TABLE p RENAME TO q; ALTER TABLE q DROP COLUMN t");
        let e = error(s, "INSERT INTO c VALUES (2)");
        assert_eq!(
            e.detail.as_deref(),
            Some("Key (pid)=(2) is not present in table \"q\".")
        );
        assert_eq!(codes(s, "TRUNCATE q, c"), [""]);
        // Dropping the referencing table, or both, or with CASCADE.
        run_all(s, "CREATE TABLE c4 (x int REFERENCES q)");
        let c = q(s, "DROP TABLE q CASCADE");
        let Some(Ok(done)) = c.results.first() else {
            panic!("{:?}", c.results)
        };
        let said: Vec<&str> = done.notices.iter().map(|(_, m)| m.as_str()).collect();
        assert_eq!(said, ["drop cascades to 2 other objects"]);
        assert_eq!(codes(s, "INSERT INTO c VALUES (42)"), [""]);
    });
}
