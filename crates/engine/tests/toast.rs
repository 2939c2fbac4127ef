//! TOAST (issue 14): values larger than a page are stored out of line, read back
//! whole through scans, index lookups and updates, deleted with their rows and
//! pruned by VACUUM after them, and survive a power loss with only what committed.

mod common;
use common::Cluster;
use std::sync::Arc;
use strata_engine::*;
use strata_vfs::sim::SimVfs;

const DB: &str = "postgres";

fn big(seed: u64, len: usize) -> String {
    let mut x = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
    (0..len)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            (b'a' + (x % 26) as u8) as char
        })
        .collect()
}

fn cols() -> Vec<Column> {
    vec![
        Column::new("id", ColType::Int4),
        Column::new("body", ColType::Text),
        Column::new("raw", ColType::Bytea),
    ]
}

fn row(id: i32, len: usize) -> Vec<Datum> {
    vec![
        Datum::Int4(id),
        Datum::Text(big(id as u64, len)),
        Datum::Bytea(big(id as u64 + 7, len / 2).into_bytes()),
    ]
}

fn rows_by_id(e: &Engine) -> Vec<Vec<Datum>> {
    let mut rows = e.scan(DB, "t").unwrap();
    rows.sort_by_key(|r| match r[0] {
        Datum::Int4(i) => i,
        _ => unreachable!(),
    });
    rows
}

#[test]
fn large_values_go_out_of_line_and_come_back_whole() {
    let c = Cluster::new();
    let sim = Arc::new(SimVfs::new(None, false).unwrap());
    let e = c.open(sim.clone());
    let mut t = e.begin();
    t.create_table(DB, "t", &cols(), None).unwrap();
    let spec = NewIndex {
        name: "t_pkey",
        columns: &["id".to_string()],
        unique: true,
        primary: true,
        constraint: true,
    };
    t.create_index(DB, "t", &spec).unwrap();
    // 100 KB, 1 MB, a row of two medium values, and small rows beside them.
    let mut want = vec![row(1, 100_000), row(2, 1 << 20), row(3, 3_000), row(4, 10)];
    t.insert(DB, "t", &want).unwrap();
    t.commit().unwrap();
    assert_eq!(rows_by_id(&e), want);
    let path = e.table_key(DB, "t").unwrap();
    assert!(
        e.smgr()
            .nblocks(path, strata_types::ForkNumber::Main)
            .unwrap()
            <= 2,
        "the values are out of line: the table stays small"
    );
    // Through the index.
    let mut got = Vec::new();
    let eq = IndexRange {
        eq: vec![Datum::Int4(2)],
        ..Default::default()
    };
    e.scan_index_each(DB, "t", "t_pkey", &eq, &no_interrupt, &mut |r| {
        got.push(r);
        Ok(true)
    })
    .unwrap();
    assert_eq!(got, vec![want[1].clone()]);
    // An update makes a new version with new chunks; a delete takes its chunks.
    let mut t = e.begin();
    t.update_where_checked(
        DB,
        "t",
        &mut |v| (v[0] == Datum::Int4(1)).then(|| row(1, 200_000)),
        &no_interrupt,
    )
    .unwrap();
    t.delete_where(DB, "t", &|v| v[0] == Datum::Int4(2))
        .unwrap();
    t.commit().unwrap();
    want[0] = row(1, 200_000);
    want.remove(1);
    assert_eq!(rows_by_id(&e), want);
    // VACUUM prunes the dead versions and their chunks; what is left reads whole,
    // and the chunks' space is used again (toast rule 3).
    e.vacuum(DB, Some("t")).unwrap();
    assert_eq!(rows_by_id(&e), want);
    let toast = strata_types::RelKey {
        rel: strata_types::RelFileNumber(path.rel.0 | 1 << 62),
        ..path
    };
    let main = strata_types::ForkNumber::Main;
    let before = e.smgr().nblocks(toast, main).unwrap();
    let mut t = e.begin();
    t.insert(DB, "t", &[row(6, 700_000)]).unwrap();
    t.commit().unwrap();
    want.insert(3, row(6, 700_000));
    assert_eq!(rows_by_id(&e), want);
    let after = e.smgr().nblocks(toast, main).unwrap();
    assert_eq!(
        after, before,
        "700 KB of new chunks fit where 1.1 MB of dead ones were"
    );
    e.check_index(DB, "t_pkey").unwrap();
    // A transaction in flight at a power loss leaves nothing behind.
    let mut t = e.begin();
    t.insert(DB, "t", &[row(9, 300_000)]).unwrap();
    std::mem::forget(t);
    e.abandon();
    sim.power_loss(2).unwrap();
    let e = c.open(strata_vfs::StdVfs::arc());
    assert_eq!(rows_by_id(&e), want);
    e.vacuum(DB, None).unwrap();
    assert_eq!(rows_by_id(&e), want);
    truncate_and_drop_take_the_toast_heap(&c, e);
}

/// TRUNCATE and DROP take the TOAST heap with the table.
fn truncate_and_drop_take_the_toast_heap(c: &Cluster, e: Engine) {
    let mut t = e.begin();
    t.truncate_table(DB, "t").unwrap();
    t.insert(DB, "t", &[row(5, 50_000)]).unwrap();
    t.commit().unwrap();
    assert_eq!(rows_by_id(&e), vec![row(5, 50_000)]);
    let mut t = e.begin();
    t.drop_table(DB, "t").unwrap();
    t.commit().unwrap();
    e.close().unwrap();
    let leftover: Vec<String> = walk(&c.dir.join("base"))
        .into_iter()
        .filter(|n| n.parse::<u64>().is_ok_and(|v| v >= 1 << 62))
        .collect();
    assert!(leftover.is_empty(), "TOAST files left: {leftover:?}");
}

#[test]
fn too_large_a_value_is_refused() {
    let c = Cluster::new();
    let e = c.open(strata_vfs::StdVfs::arc());
    let mut t = e.begin();
    t.create_table(DB, "t", &cols(), None).unwrap();
    let err = t
        .insert(
            DB,
            "t",
            &[vec![
                Datum::Int4(1),
                Datum::Text("x".repeat(11 << 20)),
                Datum::Null,
            ]],
        )
        .unwrap_err();
    assert_eq!(err.sqlstate(), "54000", "{err}");
}

fn walk(dir: &std::path::Path) -> Vec<String> {
    let mut out = Vec::new();
    for e in std::fs::read_dir(dir).into_iter().flatten().flatten() {
        let p = e.path();
        if p.is_dir() {
            out.extend(walk(&p));
        } else {
            out.push(p.file_name().unwrap().to_string_lossy().into_owned());
        }
    }
    out
}
