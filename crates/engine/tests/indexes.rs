//! Indexes of tables (issue 14): built over filled tables, kept by INSERT, UPDATE
//! and DELETE, cleaned by VACUUM before its prune (index rule 2), used by scans, and
//! after a power loss each still holds exactly one entry per row of its table
//! (`Engine::check_index`, PostgreSQL's bt_index_check with heapallindexed).

mod common;
use common::Cluster;
use std::collections::BTreeMap;
use std::sync::Arc;
use strata_engine::*;
use strata_vfs::sim::SimVfs;

const DB: &str = "postgres";

fn columns() -> Vec<Column> {
    vec![
        Column::new("id", ColType::Int8),
        Column::new("v", ColType::Text),
        Column::new("n", ColType::Int4),
    ]
}

fn row(id: i64, n: i32) -> Vec<Datum> {
    let v = format!("v{:03}{}", id % 97, "x".repeat((id % 7) as usize * 40));
    vec![Datum::Int8(id), Datum::Text(v), Datum::Int4(n)]
}

fn create(e: &Engine) {
    let mut t = e.begin();
    t.create_table(DB, "t", &columns(), None).unwrap();
    let cols = |c: &[&str]| c.iter().map(|s| s.to_string()).collect::<Vec<_>>();
    let (pk, vn) = (cols(&["id"]), cols(&["v", "n"]));
    let spec = |name, columns, unique| NewIndex {
        name,
        columns,
        unique,
        primary: unique,
        constraint: unique,
    };
    t.create_index(DB, "t", &spec("t_pkey", &pk, true)).unwrap();
    t.create_index(DB, "t", &spec("t_v_n", &vn, false)).unwrap();
    t.commit().unwrap();
}

fn range(lo: i64, hi: i64) -> IndexRange {
    IndexRange {
        lo: Some((Datum::Int8(lo), true)),
        hi: Some((Datum::Int8(hi), false)),
        ..IndexRange::default()
    }
}

/// The ids a pull cursor over `index`'s `r` gives, in its order.
fn cursor_ids(e: &Engine, index: &str, r: IndexRange) -> Vec<i64> {
    let snap = e.snapshot();
    let mut c = e.index_cursor(DB, "t", index, r);
    let mut rows = Vec::new();
    while c.next_batch(&snap, &no_interrupt, &mut rows).unwrap() {}
    rows.iter().map(|r| id_of(r)).collect()
}

/// Backward cursors (btree rule 7) give the forward order reversed, over every
/// kind of range and across the leaves' left links.
fn verify_backward(e: &Engine, model: &BTreeMap<i64, i32>, what: &str) {
    let back = |r: IndexRange| IndexRange {
        backward: true,
        ..r
    };
    let all: Vec<i64> = model.keys().rev().copied().collect();
    assert_eq!(
        cursor_ids(e, "t_pkey", back(IndexRange::default())),
        all,
        "{what}: all, backward"
    );
    let want: Vec<i64> = model.range(500..1500).rev().map(|(k, _)| *k).collect();
    assert_eq!(
        cursor_ids(e, "t_pkey", back(range(500, 1500))),
        want,
        "{what}: range, backward"
    );
    let open = IndexRange {
        lo: Some((Datum::Int8(2990), false)),
        ..IndexRange::default()
    };
    let want: Vec<i64> = model.range(2991..).rev().map(|(k, _)| *k).collect();
    assert_eq!(
        cursor_ids(e, "t_pkey", back(open)),
        want,
        "{what}: id > 2990, backward"
    );
    let upto = IndexRange {
        hi: Some((Datum::Int8(40), true)),
        ..IndexRange::default()
    };
    let want: Vec<i64> = model.range(..=40).rev().map(|(k, _)| *k).collect();
    assert_eq!(
        cursor_ids(e, "t_pkey", back(upto)),
        want,
        "{what}: id <= 40, backward"
    );
    // The two-column index, whose long keys span many leaves: reversed exactly.
    let mut fwd = cursor_ids(e, "t_v_n", IndexRange::default());
    fwd.reverse();
    assert_eq!(
        cursor_ids(e, "t_v_n", back(IndexRange::default())),
        fwd,
        "{what}: v, n backward"
    );
    let v3 = row(3, 0)[1].clone();
    let prefix = IndexRange {
        eq: vec![v3],
        ..IndexRange::default()
    };
    let mut fwd = cursor_ids(e, "t_v_n", prefix.clone());
    fwd.reverse();
    assert!(!fwd.is_empty());
    assert_eq!(
        cursor_ids(e, "t_v_n", back(prefix)),
        fwd,
        "{what}: v = prefix, backward"
    );
}

/// Both indexes check against the table, and scans through them return what the
/// model says: equality on the key, a range, and a prefix of the two-column index.
fn verify(e: &Engine, model: &BTreeMap<i64, i32>, what: &str) {
    for ix in ["t_pkey", "t_v_n"] {
        e.check_index(DB, ix)
            .unwrap_or_else(|err| panic!("{what}: {ix}: {err}"));
    }
    let scan = |index: &str, r: &IndexRange| {
        let mut got = Vec::new();
        e.scan_index_each(DB, "t", index, r, &no_interrupt, &mut |row| {
            got.push(row);
            Ok(true)
        })
        .unwrap();
        got
    };
    let got: Vec<i64> = scan("t_pkey", &range(500, 1500))
        .iter()
        .map(|r| match r[0] {
            Datum::Int8(i) => i,
            _ => unreachable!(),
        })
        .collect();
    let want: Vec<i64> = model.range(500..1500).map(|(k, _)| *k).collect();
    assert_eq!(got, want, "{what}: range scan in key order");
    for id in [0, 7, 999, 2999, 5000] {
        let eq = IndexRange {
            eq: vec![Datum::Int8(id)],
            ..IndexRange::default()
        };
        let want: Vec<Vec<Datum>> = model.get(&id).map(|n| row(id, *n)).into_iter().collect();
        assert_eq!(scan("t_pkey", &eq), want, "{what}: id = {id}");
    }
    let v3 = row(3, 0)[1].clone();
    let prefix = IndexRange {
        eq: vec![v3],
        ..IndexRange::default()
    };
    let mut got: Vec<i64> = scan("t_v_n", &prefix)
        .iter()
        .map(|r| match r[0] {
            Datum::Int8(i) => i,
            _ => unreachable!(),
        })
        .collect();
    got.sort();
    let want: Vec<i64> = model
        .keys()
        .copied()
        .filter(|i| i % 97 == 3 && i % 7 == 3)
        .collect();
    assert_eq!(got, want, "{what}: v = prefix");
    verify_backward(e, model, what);
}

fn id_of(r: &[Datum]) -> i64 {
    match r[0] {
        Datum::Int8(i) => i,
        _ => unreachable!(),
    }
}

/// Updates `n` of ids in [lo, hi) through the primary key's range, as the model does.
fn bump(t: &mut Txn<'_>, model: &mut BTreeMap<i64, i32>, lo: i64, hi: i64) {
    let r = range(lo, hi);
    let access = Access::Index {
        index: "t_pkey",
        range: &r,
    };
    let n = t
        .update_using(
            DB,
            "t",
            access,
            &mut |v| {
                let mut new = v.to_vec();
                new[2] = match v[2] {
                    Datum::Int4(n) => Datum::Int4(n + 1),
                    _ => unreachable!(),
                };
                Some(new)
            },
            &no_interrupt,
        )
        .unwrap();
    let mut changed = 0;
    for (_, n) in model.range_mut(lo..hi) {
        *n += 1;
        changed += 1;
    }
    assert_eq!(n, changed);
}

#[test]
fn indexes_follow_their_table_through_dml_vacuum_and_power_loss() {
    let c = Cluster::new();
    let sim = Arc::new(SimVfs::new(None, false).unwrap());
    let e = c.open(sim.clone());
    create(&e);
    let mut model = BTreeMap::new();
    let mut t = e.begin();
    let rows: Vec<Vec<Datum>> = (0..3000).map(|i| row(i, 0)).collect();
    t.insert(DB, "t", &rows).unwrap();
    t.commit().unwrap();
    model.extend((0..3000).map(|i| (i, 0)));
    verify(&e, &model, "after the inserts");

    // Index rule 3: a duplicate key is refused, with the key.
    let mut t = e.begin();
    let err = t.insert(DB, "t", &[row(42, 9)]).unwrap_err();
    assert_eq!(err.sqlstate(), "23505");
    match &err {
        EngineError::UniqueViolation { constraint, key } => {
            assert_eq!(constraint, "t_pkey");
            assert_eq!(key, &vec![("id".to_string(), Datum::Int8(42))]);
        }
        other => panic!("{other:?}"),
    }
    t.abort().unwrap();

    let mut t = e.begin();
    bump(&mut t, &mut model, 100, 900);
    let r = range(2000, 2500);
    let access = Access::Index {
        index: "t_pkey",
        range: &r,
    };
    let gone = t
        .delete_using(DB, "t", access, &mut |v| id_of(v) % 2 == 0, &no_interrupt)
        .unwrap();
    assert_eq!(gone, 250);
    model.retain(|k, _| !((2000..2500).contains(k) && k % 2 == 0));
    // An updated row keeps its key: no conflict with its own old version.
    bump(&mut t, &mut model, 100, 200);
    t.commit().unwrap();
    verify(&e, &model, "after updates and deletes");

    e.vacuum(DB, Some("t")).unwrap();
    assert_eq!(
        e.check_index(DB, "t_pkey").unwrap(),
        model.len(),
        "VACUUM left dead entries"
    );
    verify(&e, &model, "after VACUUM");
    // Index rule 2's early removal: a row updated again and again through its key
    // keeps at most two entries (the live version's and the one just deleted).
    let before = e.check_index(DB, "t_pkey").unwrap();
    for _ in 0..200 {
        let mut t = e.begin();
        bump(&mut t, &mut model, 5, 6);
        t.commit().unwrap();
    }
    let after = e.check_index(DB, "t_pkey").unwrap();
    assert!(after <= before + 1, "{before} entries became {after}");
    e.checkpoint().unwrap();
    // Freed slots are reused by new rows, whose entries must not meet stale ones.
    let mut t = e.begin();
    let fresh: Vec<Vec<Datum>> = (3000..3400).map(|i| row(i, 5)).collect();
    t.insert(DB, "t", &fresh).unwrap();
    t.commit().unwrap();
    model.extend((3000..3400).map(|i| (i, 5)));
    let mut t = e.begin();
    bump(&mut t, &mut model, 0, 3400);
    t.commit().unwrap();
    // In flight at the crash.
    let mut t = e.begin();
    t.insert(DB, "t", &[row(10_000, 1)]).unwrap();
    t.delete_where(DB, "t", &|v| id_of(v) < 50).unwrap();
    std::mem::forget(t);
    e.abandon();
    let (kept, total) = sim.power_loss(3).unwrap();
    assert!(kept < total, "the crash lost unsynced writes");
    let e = c.open(strata_vfs::StdVfs::arc());
    verify(&e, &model, "after power loss");
    e.vacuum(DB, None).unwrap();
    verify(&e, &model, "after VACUUM of the crashed transaction's rows");
    e.close().unwrap();
}

#[test]
fn index_ddl_builds_refuses_and_drops() {
    let c = Cluster::new();
    let e = c.open(strata_vfs::StdVfs::arc());
    let mut t = e.begin();
    t.create_table(DB, "u", &columns(), None).unwrap();
    let mut rows: Vec<Vec<Datum>> = (0..2000).map(|i| row(i, (i % 10) as i32)).collect();
    rows.push(row(1999, 0)); // a duplicate id
    rows.push(vec![Datum::Null, Datum::Null, Datum::Int4(1)]);
    t.insert(DB, "u", &rows).unwrap();
    t.commit().unwrap();
    let cols = |c: &[&str]| c.iter().map(|s| s.to_string()).collect::<Vec<_>>();
    let id = cols(&["id"]);
    let spec = |name, unique, primary| NewIndex {
        name,
        columns: &id,
        unique,
        primary,
        constraint: primary,
    };
    let err = |r: Result<()>| r.unwrap_err().sqlstate();
    let mut t = e.begin();
    assert_eq!(
        err(t.create_index(DB, "u", &spec("u_id", true, false))),
        "23505"
    );
    t.abort().unwrap();
    let mut t = e.begin();
    t.delete_where(DB, "u", &|v| v[0] == Datum::Int8(1999))
        .unwrap();
    // Unique with a NULL id: NULLs are distinct.
    t.create_index(DB, "u", &spec("u_id", true, false)).unwrap();
    assert_eq!(
        err(t.create_index(DB, "u", &spec("u", false, false))),
        "42P07"
    );
    t.commit().unwrap();
    let mut t = e.begin();
    assert_eq!(
        err(t.create_index(DB, "u", &spec("u_pkey", false, true))),
        "23502"
    );
    t.abort().unwrap();
    // Every row with storage has its entry, the deleted duplicate's too.
    assert_eq!(e.check_index(DB, "u_id").unwrap(), 2002);
    // A table may not take an index's name; renaming keeps the index.
    let mut t = e.begin();
    assert_eq!(
        t.create_table(DB, "u_id", &columns(), None)
            .unwrap_err()
            .sqlstate(),
        "42P07"
    );
    t.abort().unwrap();
    let mut t = e.begin();
    t.rename_table(DB, "u", "w").unwrap();
    t.add_column(DB, "w", Column::new("z", ColType::Bool), Datum::Null)
        .unwrap();
    t.commit().unwrap();
    // Rebuilt from the live rows: both 1999s are gone, the NULL id stays.
    assert_eq!(e.check_index(DB, "u_id").unwrap(), 2000);
    let key = e.table_key(DB, "w").unwrap();
    let mut t = e.begin();
    t.drop_column(DB, "w", "id").unwrap(); // its index goes with it
    assert_eq!(t.index_table(DB, "u_id").unwrap(), None);
    t.commit().unwrap();
    assert_eq!(e.check_index(DB, "u_id").unwrap_err().sqlstate(), "42704");
    truncate_and_drop_cover_indexes(&c, &e);
    assert!(key.rel.0 > 0);
    e.close().unwrap();
}

/// TRUNCATE and DROP TABLE cover the table's indexes.
fn truncate_and_drop_cover_indexes(c: &Cluster, e: &Engine) {
    let cols = |c: &[&str]| c.iter().map(|s| s.to_string()).collect::<Vec<_>>();
    let mut t = e.begin();
    t.create_index(
        DB,
        "w",
        &NewIndex {
            name: "w_n",
            columns: &cols(&["n"]),
            unique: false,
            primary: false,
            constraint: false,
        },
    )
    .unwrap();
    t.truncate_table(DB, "w").unwrap();
    t.insert(
        DB,
        "w",
        &[vec![Datum::Text("a".into()), Datum::Int4(1), Datum::Null]],
    )
    .unwrap();
    t.commit().unwrap();
    assert_eq!(e.check_index(DB, "w_n").unwrap(), 1);
    let ikey = {
        let w = e.table(DB, "w").unwrap();
        let db = e.database(DB).unwrap();
        w.index_key(&db, &w.indexes[0])
    };
    let mut t = e.begin();
    assert_eq!(t.drop_index(DB, "w_n").unwrap(), "w");
    t.abort().unwrap();
    let mut t = e.begin();
    t.drop_table(DB, "w").unwrap();
    t.commit().unwrap();
    e.checkpoint().unwrap();
    let path = |k: strata_types::RelKey| c.dir.join(format!("base/{}/{}", k.db.0, k.rel.0));
    assert!(!path(ikey).exists(), "the index's file outlived DROP TABLE");
}
