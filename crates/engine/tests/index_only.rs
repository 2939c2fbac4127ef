//! Index-only scans (index rule 5, cursor rule 11): rows from the keys where the
//! visibility map says the heap page is all visible, and only there. A snapshot
//! older than a row's insert never sees it through the map; VACUUM racing the
//! scans never lets one return a key whose row it removed.

mod common;
use common::Cluster;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use strata_engine::*;

const DB: &str = "postgres";

fn create(e: &Engine) {
    let cols = vec![
        Column::new("id", ColType::Int8),
        Column::new("pad", ColType::Text),
    ];
    let mut t = e.begin();
    t.create_table(DB, "t", &cols, None).unwrap();
    let spec = NewIndex {
        name: "t_pkey",
        columns: &["id".to_string()],
        unique: true,
        primary: true,
        constraint: true,
    };
    t.create_index(DB, "t", &spec).unwrap();
    t.commit().unwrap();
}

fn insert(e: &Engine, ids: std::ops::Range<i64>) {
    let rows: Vec<Vec<Datum>> = ids
        .map(|i| vec![Datum::Int8(i), Datum::Text(format!("{i:>120}"))])
        .collect();
    let mut t = e.begin();
    t.insert(DB, "t", &rows).unwrap();
    t.commit().unwrap();
}

fn delete_below(e: &Engine, below: i64) {
    let mut t = e.begin();
    t.delete_where(DB, "t", &|r| matches!(r[0], Datum::Int8(i) if i < below))
        .unwrap();
    t.commit().unwrap();
}

/// The ids an index-only scan of the whole primary key gives under `snap`, and
/// the rows it fetched from the heap. Every row it gives has its key column
/// only: the other is NULL (index rule 5).
fn ids_only(e: &Engine, snap: &Snapshot<'_>) -> (Vec<i64>, u64) {
    let mut c = e
        .index_cursor(DB, "t", "t_pkey", IndexRange::default())
        .only(vec![true, false])
        .index_only();
    let mut rows = Vec::new();
    while c.next_batch(snap, &no_interrupt, &mut rows).unwrap() {}
    let ids = rows
        .iter()
        .map(|r| match (&r[0], &r[1]) {
            (Datum::Int8(i), Datum::Null) => *i,
            other => panic!("an index-only row {other:?}"),
        })
        .collect();
    (ids, c.heap_fetches())
}

#[test]
fn index_only_scans_see_what_their_snapshot_sees() {
    let c = Cluster::new();
    let e = c.open(strata_vfs::StdVfs::arc());
    create(&e);
    insert(&e, 0..2000);
    let (ids, fetched) = ids_only(&e, &e.snapshot());
    assert_eq!(ids, (0..2000).collect::<Vec<_>>());
    assert_eq!(fetched, 2000, "no page is all visible before a VACUUM");
    e.vacuum(DB, Some("t")).unwrap();
    let (ids, fetched) = ids_only(&e, &e.snapshot());
    assert_eq!(ids, (0..2000).collect::<Vec<_>>());
    assert_eq!(fetched, 0, "every page all visible after it");

    // A snapshot older than later inserts and deletes, alive through a VACUUM:
    // the new rows' pages are not marked all visible (heap rule 2), and the
    // deleted rows' pages lost their marks.
    let old = e.snapshot();
    insert(&e, 2000..3000);
    delete_below(&e, 500);
    e.vacuum(DB, Some("t")).unwrap();
    let (ids, fetched) = ids_only(&e, &old);
    assert_eq!(
        ids,
        (0..2000).collect::<Vec<_>>(),
        "the old snapshot's rows"
    );
    assert!(fetched > 0);
    let (ids, _) = ids_only(&e, &e.snapshot());
    assert_eq!(ids, (500..3000).collect::<Vec<_>>());
    drop(old);
    e.vacuum(DB, Some("t")).unwrap();
    let (ids, fetched) = ids_only(&e, &e.snapshot());
    assert_eq!(ids, (500..3000).collect::<Vec<_>>());
    assert_eq!(fetched, 0, "all visible once no snapshot predates them");
    e.close().unwrap();
}

/// Scanners read the primary key index-only while a writer inserts a cycle's
/// rows, VACUUMs (marking pages all visible), deletes them and VACUUMs again
/// (removing their entries, then their rows): each scan sees the 300 rows that
/// stay and all or none of one cycle's 600, never a row removed under it.
#[test]
fn index_only_scans_racing_vacuum_see_one_committed_state() {
    let c = Cluster::new();
    let e = c.open(strata_vfs::StdVfs::arc());
    create(&e);
    insert(&e, 0..300);
    let stop = AtomicBool::new(false);
    let (scans, from_keys) = (AtomicU64::new(0), AtomicU64::new(0));
    std::thread::scope(|s| {
        for _ in 0..2 {
            s.spawn(|| {
                while !stop.load(Ordering::SeqCst) {
                    let (ids, fetched) = ids_only(&e, &e.snapshot());
                    let cycle: Vec<i64> = ids
                        .iter()
                        .filter(|i| **i >= 1000)
                        .map(|i| i / 1000)
                        .collect();
                    let mut cycles = cycle.clone();
                    cycles.dedup();
                    let ok = ids[..300.min(ids.len())] == (0..300).collect::<Vec<_>>()[..]
                        && (cycle.is_empty() || (cycles.len() == 1 && cycle.len() == 600))
                        && ids.len() == 300 + cycle.len();
                    if !ok {
                        stop.store(true, Ordering::SeqCst);
                        panic!("a scan saw {} rows of cycles {cycles:?}", ids.len());
                    }
                    // Fetches count the entries of rows it could not see too.
                    let keyed = (ids.len() as u64).saturating_sub(fetched);
                    from_keys.fetch_add(keyed, Ordering::Relaxed);
                    scans.fetch_add(1, Ordering::Relaxed);
                }
            });
        }
        let _stop = common::StopOnDrop(&stop);
        for cycle in 1..120 {
            if stop.load(Ordering::SeqCst) {
                break;
            }
            let base = cycle * 1000;
            insert(&e, base..base + 600);
            e.vacuum(DB, Some("t")).unwrap();
            delete_from(&e, base);
            e.vacuum(DB, Some("t")).unwrap();
        }
    });
    assert!(scans.load(Ordering::Relaxed) > 50);
    assert!(from_keys.load(Ordering::Relaxed) > 0, "rows came from keys");
    e.close().unwrap();
}

/// Deletes the rows of ids from `base` on (a cycle's).
fn delete_from(e: &Engine, base: i64) {
    let mut t = e.begin();
    t.delete_where(DB, "t", &|r| matches!(r[0], Datum::Int8(i) if i >= base))
        .unwrap();
    t.commit().unwrap();
}
