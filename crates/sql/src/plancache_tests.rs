//! Prepared statements' kept plans (session plancache rules), driven in-process
//! on a real engine: five custom plans then the generic one, `plan_cache_mode`,
//! a plan made stale by the catalog, a block's uncommitted DDL, the result type
//! that must not change, and privileges checked at each execution.

use super::fuzz_tests::with_session;
use super::session::{Collect, PlanCache, Session};
use super::{parse, Datum, SqlResult, Stmt};

fn run(s: &mut Session<'_>, sql: &str) {
    let mut c = Collect::default();
    s.run_simple(sql.to_string(), &mut c);
    for r in &c.results {
        if let Err(e) = r {
            panic!("{sql}: {e}");
        }
    }
}

/// Parse of the extended protocol: the statement and its cache.
fn prepare(s: &mut Session<'_>, sql: &str) -> (Stmt, PlanCache) {
    let st = parse(sql).unwrap().remove(0);
    let d = s.prepare(&st).unwrap();
    (st, PlanCache::new(&d))
}

/// Execute and Sync: the rows.
fn exec(
    s: &mut Session<'_>,
    p: &(Stmt, PlanCache),
    params: &[Datum],
) -> SqlResult<Vec<Vec<Datum>>> {
    let mut c = Collect::default();
    let r = s.execute_extended(&p.0, Some(&p.1), params, &mut c);
    s.sync()?;
    r.map(|_| c.rows)
}

fn fill(s: &mut Session<'_>) {
    run(s, "CREATE TABLE pc (a int, b text)");
    run(
        s,
        "INSERT INTO pc SELECT 1, 'one' FROM generate_series(1, 1000) UNION ALL SELECT 2, 'two'",
    );
    run(s, "CREATE INDEX pc_a ON pc (a)");
    run(s, "ANALYZE pc");
}

fn count_of(rows: &[Vec<Datum>]) -> i64 {
    match rows {
        [r] => match r[..] {
            [Datum::Int8(n)] => n,
            _ => panic!("{r:?}"),
        },
        _ => panic!("{rows:?}"),
    }
}

#[test]
fn five_custom_plans_then_the_generic_one_while_it_costs_no_more() {
    with_session(8 << 20, |s| {
        fill(s);
        let p = prepare(s, "SELECT count(*) FROM pc WHERE a = $1");
        for i in 1..=5 {
            assert_eq!(count_of(&exec(s, &p, &[Datum::Int4(1)]).unwrap()), 1000);
            assert_eq!(p.1.counts(), (0, i));
        }
        // The sixth: the generic plan is made and weighed against the custom
        // plans' average, their planning included. The common value's custom
        // plans read the whole table, as the generic plan (half the rows, by the
        // column's two distinct values) does: it costs less, and is taken.
        assert_eq!(count_of(&exec(s, &p, &[Datum::Int4(2)]).unwrap()), 1);
        assert_eq!(p.1.counts(), (1, 5));
        assert_eq!(count_of(&exec(s, &p, &[Datum::Int4(3)]).unwrap()), 0);
        assert_eq!(p.1.counts(), (2, 5));
        // The rare value's custom plans probe the index for one row: the generic
        // plan costs more, and custom plans go on.
        let rare = prepare(s, "SELECT count(*) FROM pc WHERE a = $1");
        for _ in 0..7 {
            assert_eq!(count_of(&exec(s, &rare, &[Datum::Int4(2)]).unwrap()), 1);
        }
        assert_eq!(rare.1.counts(), (0, 7));
        // A query without parameters is generic from the first.
        let all = prepare(s, "SELECT count(*) FROM pc");
        assert_eq!(count_of(&exec(s, &all, &[]).unwrap()), 1001);
        assert_eq!(all.1.counts(), (1, 0));
    });
}

#[test]
fn plan_cache_mode_forces_either_plan() {
    with_session(8 << 20, |s| {
        fill(s);
        run(s, "SET plan_cache_mode = force_generic_plan");
        let p = prepare(s, "SELECT count(*) FROM pc WHERE a = $1");
        assert_eq!(count_of(&exec(s, &p, &[Datum::Int4(1)]).unwrap()), 1000);
        assert_eq!(p.1.counts(), (1, 0));
        run(s, "SET plan_cache_mode = force_custom_plan");
        for _ in 0..7 {
            assert_eq!(count_of(&exec(s, &p, &[Datum::Int4(2)]).unwrap()), 1);
        }
        assert_eq!(p.1.counts(), (1, 7));
        let mut c = Collect::default();
        s.run_simple("SET plan_cache_mode = sometimes".into(), &mut c);
        assert_eq!(c.results[0].as_ref().unwrap_err().code, "22023");
    });
}

#[test]
fn a_catalog_change_makes_the_kept_plan_stale() {
    with_session(8 << 20, |s| {
        fill(s);
        let p = prepare(s, "SELECT b FROM pc WHERE a = $1");
        for _ in 0..7 {
            assert_eq!(exec(s, &p, &[Datum::Int4(2)]).unwrap().len(), 1);
        }
        // The generic plan reads the index; dropped, the plan is made again.
        run(s, "DROP INDEX pc_a");
        assert_eq!(exec(s, &p, &[Datum::Int4(2)]).unwrap().len(), 1);
        run(s, "INSERT INTO pc VALUES (2, 'again')");
        assert_eq!(exec(s, &p, &[Datum::Int4(2)]).unwrap().len(), 2);
        // Dropped: 42P01; made again with the same columns, it runs again.
        run(s, "DROP TABLE pc");
        let e = exec(s, &p, &[Datum::Int4(2)]).unwrap_err();
        assert_eq!(e.code, "42P01");
        run(s, "CREATE TABLE pc (b text, a int)");
        run(s, "INSERT INTO pc VALUES ('new', 2)");
        let rows = exec(s, &p, &[Datum::Int4(2)]).unwrap();
        assert_eq!(rows, vec![vec![Datum::Text("new".into())]]);
        // `*` with another column: the client was told the old row's shape.
        let star = prepare(s, "SELECT * FROM pc WHERE a = $1");
        assert_eq!(exec(s, &star, &[Datum::Int4(2)]).unwrap().len(), 1);
        run(s, "ALTER TABLE pc ADD COLUMN c int");
        let e = exec(s, &star, &[Datum::Int4(2)]).unwrap_err();
        assert_eq!(e.code, "0A000");
        assert_eq!(e.message, "cached plan must not change result type");
    });
}

#[test]
fn a_blocks_uncommitted_ddl_is_planned_for_but_not_kept() {
    with_session(8 << 20, |s| {
        fill(s);
        run(s, "SET plan_cache_mode = force_generic_plan");
        let p = prepare(s, "SELECT b FROM pc WHERE a = $1");
        assert_eq!(exec(s, &p, &[Datum::Int4(2)]).unwrap().len(), 1);
        run(s, "BEGIN");
        run(s, "DROP INDEX pc_a");
        run(s, "INSERT INTO pc VALUES (2, 'in the block')");
        let mut c = Collect::default();
        s.execute_extended(&p.0, Some(&p.1), &[Datum::Int4(2)], &mut c)
            .unwrap();
        assert_eq!(
            c.rows.len(),
            2,
            "the block's own row, read without the index"
        );
        run(s, "ROLLBACK");
        // The index is back; the plan kept before the block still serves.
        assert_eq!(exec(s, &p, &[Datum::Int4(2)]).unwrap().len(), 1);
        assert_eq!(p.1.counts(), (3, 0));
    });
}

#[test]
fn the_kept_querys_privileges_are_checked_at_each_execution() {
    with_session(8 << 20, |s| {
        fill(s);
        run(s, "CREATE ROLE reader");
        let p = prepare(s, "SELECT b FROM pc WHERE a = $1");
        assert_eq!(exec(s, &p, &[Datum::Int4(2)]).unwrap().len(), 1);
        run(s, "SET ROLE reader");
        let e = exec(s, &p, &[Datum::Int4(2)]).unwrap_err();
        assert_eq!(e.code, "42501");
        run(s, "RESET ROLE");
        run(s, "GRANT SELECT ON pc TO reader");
        run(s, "SET ROLE reader");
        assert_eq!(exec(s, &p, &[Datum::Int4(2)]).unwrap().len(), 1);
    });
}

/// Runs a query string; the SQLSTATE of each statement ("" for success) and the
/// rows.
fn sql(s: &mut Session<'_>, text: &str) -> (Vec<&'static str>, Vec<Vec<Datum>>) {
    let mut c = Collect::default();
    s.run_simple(text.to_string(), &mut c);
    let codes = c
        .results
        .iter()
        .map(|r| r.as_ref().map_or_else(|e| e.code, |_| ""))
        .collect();
    (codes, c.rows)
}

#[test]
fn sql_prepare_execute_and_deallocate_as_postgresql_has_them() {
    with_session(8 << 20, |s| {
        fill(s);
        let text = "PREPARE q (int) AS SELECT count(*) FROM pc WHERE a = $1";
        assert_eq!(sql(s, text).0, [""]);
        assert_eq!(sql(s, text).0, ["42P05"]);
        let (codes, rows) = sql(s, "EXECUTE q(1)");
        assert_eq!((codes, count_of(&rows)), (vec![""], 1000));
        // An untyped literal takes the parameter's type; a number of another
        // width is cast; a string value is not a number (42804).
        assert_eq!(count_of(&sql(s, "EXECUTE q('2')").1), 1);
        assert_eq!(count_of(&sql(s, "EXECUTE q(2::int8)").1), 1);
        assert_eq!(sql(s, "EXECUTE q('2'::text)").0, ["42804"]);
        assert_eq!(sql(s, "EXECUTE q").0, ["42601"]);
        assert_eq!(sql(s, "EXECUTE q(1, 2)").0, ["42601"]);
        assert_eq!(sql(s, "EXECUTE nosuch(1)").0, ["26000"]);
        // The view: its text, declared types, and the plans counted.
        let (codes, rows) = sql(
            s,
            "SELECT name, statement, parameter_types, from_sql, generic_plans, custom_plans \
             FROM pg_prepared_statements",
        );
        assert_eq!(codes, [""]);
        assert_eq!(
            rows,
            vec![vec![
                Datum::Text("q".into()),
                Datum::Text(text.into()),
                Datum::Text("{integer}".into()),
                Datum::Bool(true),
                Datum::Int8(0),
                Datum::Int8(3),
            ]]
        );
        // Errors found when preparing are PREPARE's; only DML and queries prepare.
        assert_eq!(sql(s, "PREPARE bad AS SELECT * FROM nosuch").0, ["42P01"]);
        assert_eq!(sql(s, "PREPARE bad AS CREATE TABLE x (a int)").0, ["42601"]);
        let ins = "PREPARE ins (int, text) AS INSERT INTO pc VALUES ($1, $2) RETURNING a";
        assert_eq!(sql(s, ins).0, [""]);
        assert_eq!(
            sql(s, "EXECUTE ins(3, 'three')").1,
            vec![vec![Datum::Int4(3)]]
        );
        assert_eq!(count_of(&sql(s, "EXECUTE q(3)").1), 1);
        assert_eq!(sql(s, "DEALLOCATE PREPARE q").0, [""]);
        assert_eq!(sql(s, "DEALLOCATE q").0, ["26000"]);
        assert_eq!(sql(s, "DEALLOCATE ALL").0, [""]);
        let n = sql(s, "SELECT count(*) FROM pg_prepared_statements").1;
        assert_eq!(count_of(&n), 0);
    });
}

#[test]
fn explain_execute_shows_the_custom_plans_values_and_the_generic_plans_parameters() {
    with_session(8 << 20, |s| {
        fill(s);
        sql(s, "PREPARE q (int) AS SELECT b FROM pc WHERE a = $1");
        let plan = |s: &mut Session<'_>| {
            let (codes, rows) = sql(s, "EXPLAIN (COSTS OFF) EXECUTE q(2)");
            assert_eq!(codes, [""]);
            rows.into_iter()
                .map(|r| match &r[..] {
                    [Datum::Text(l)] => l.trim().to_string(),
                    _ => panic!("{r:?}"),
                })
                .collect::<Vec<_>>()
        };
        assert!(
            plan(s).iter().any(|l| l.ends_with("(a = 2)")),
            "{:?}",
            plan(s)
        );
        sql(s, "SET plan_cache_mode = force_generic_plan");
        assert!(
            plan(s).iter().any(|l| l.ends_with("(a = $1)")),
            "{:?}",
            plan(s)
        );
        let (codes, rows) = sql(
            s,
            "SELECT generic_plans, custom_plans FROM pg_prepared_statements",
        );
        assert_eq!(codes, [""]);
        assert_eq!(rows, vec![vec![Datum::Int8(1), Datum::Int8(1)]]);
    });
}

#[test]
fn dml_keeps_its_binding_after_five_custom_plans_until_the_catalog_changes() {
    with_session(8 << 20, |s| {
        fill(s);
        let ins = prepare(s, "INSERT INTO pc VALUES ($1, $2)");
        let up = prepare(s, "UPDATE pc SET b = $2 WHERE a = $1");
        for i in 0..7 {
            exec(
                s,
                &ins,
                &[Datum::Int4(10 + i), Datum::Text(format!("v{i}"))],
            )
            .unwrap();
        }
        assert_eq!(ins.1.counts(), (2, 5));
        let n = sql(s, "SELECT count(*) FROM pc WHERE a >= 10").1;
        assert_eq!(count_of(&n), 7);
        for _ in 0..6 {
            exec(s, &up, &[Datum::Int4(12), Datum::Text("up".into())]).unwrap();
        }
        assert_eq!(up.1.counts(), (1, 5));
        // A column added: the kept binding is stale, and the new row takes the
        // column's default.
        run(s, "ALTER TABLE pc ADD COLUMN c int DEFAULT 9");
        exec(s, &ins, &[Datum::Int4(30), Datum::Text("late".into())]).unwrap();
        let rows = sql(s, "SELECT b, c FROM pc WHERE a = 30").1;
        assert_eq!(rows, vec![vec![Datum::Text("late".into()), Datum::Int4(9)]]);
        // The index the kept UPDATE read goes; the update still finds its row.
        run(s, "DROP INDEX pc_a");
        exec(s, &up, &[Datum::Int4(30), Datum::Text("updated".into())]).unwrap();
        let rows = sql(s, "SELECT b FROM pc WHERE a = 30").1;
        assert_eq!(rows, vec![vec![Datum::Text("updated".into())]]);
        assert_eq!(up.1.counts(), (2, 5));
        // Privileges are the role's at each execution.
        run(s, "CREATE ROLE writer");
        run(s, "GRANT SELECT ON pc TO writer");
        run(s, "SET ROLE writer");
        let e = exec(s, &ins, &[Datum::Int4(40), Datum::Text("no".into())]).unwrap_err();
        assert_eq!(e.code, "42501");
        run(s, "RESET ROLE");
        assert_eq!(
            count_of(&sql(s, "SELECT count(*) FROM pc WHERE a = 40").1),
            0
        );
    });
}
