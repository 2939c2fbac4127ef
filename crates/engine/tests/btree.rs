//! B-tree storage (issue 14, step 2): entries inserted through the pool, split up to
//! new roots, WAL-logged, and after a crash with power loss (unsynced writes undone,
//! some torn) replayed into a tree that checks page by page and link by link and
//! holds every committed entry.

mod common;
use common::Cluster;
use std::collections::BTreeSet;
use std::sync::Arc;
use strata_btree::key::{encode_key, leaf_entry, KeyPart};
use strata_engine::*;
use strata_types::{BlockNumber, RelKey};
use strata_vfs::sim::SimVfs;

/// Entry `i`: a scrambled integer and, for one in five, a long text (deep trees).
fn entry(i: u32) -> Vec<u8> {
    let n = i64::from(i.wrapping_mul(2_654_435_761) % 1_000_003);
    let text = format!("{:0>1$}", i, if i.is_multiple_of(5) { 300 } else { 4 });
    let mut key = Vec::new();
    encode_key(
        &[KeyPart::Int(n), KeyPart::Bytes(text.as_bytes())],
        &mut key,
    );
    leaf_entry(&key, BlockNumber(i / 50), (i % 50) as u16)
}

fn insert_range(e: &Engine, index: RelKey, r: std::ops::Range<u32>, commit: bool) {
    let mut t = e.begin();
    for i in r {
        t.btree_insert(index, &entry(i)).unwrap();
    }
    if commit {
        t.commit().unwrap();
    } else {
        std::mem::forget(t); // in flight at the crash
    }
}

/// The index checks, holds every committed entry, and nothing but committed entries
/// and those of the transaction in flight at the crash.
fn check(
    e: &Engine,
    index: RelKey,
    committed: std::ops::Range<u32>,
    in_flight: std::ops::Range<u32>,
    what: &str,
) {
    let got = e
        .btree_check(index)
        .unwrap_or_else(|err| panic!("{what}: {err}"));
    let mut sorted = got.clone();
    sorted.sort();
    assert_eq!(got, sorted, "{what}: leaves out of order");
    let got: BTreeSet<Vec<u8>> = got.into_iter().collect();
    let committed: BTreeSet<Vec<u8>> = committed.map(entry).collect();
    let in_flight: BTreeSet<Vec<u8>> = in_flight.map(entry).collect();
    let lost = committed.difference(&got).count();
    assert_eq!(lost, 0, "{what}: {lost} committed entries lost");
    assert!(
        got.iter()
            .all(|g| committed.contains(g) || in_flight.contains(g)),
        "{what}: an entry nobody inserted"
    );
}

#[test]
fn committed_entries_survive_power_loss_and_every_split_replays() {
    let c = Cluster::new();
    let seed = 7;
    let sim = Arc::new(SimVfs::new(None, false).unwrap());
    let e = c.open(sim.clone());
    let mut t = e.begin();
    let index = t.create_btree_storage("postgres").unwrap();
    t.commit().unwrap();
    insert_range(&e, index, 0..6_000, true);
    e.checkpoint().unwrap(); // the redo point passes some splits, not others
    for b in 0..6 {
        insert_range(&e, index, 6_000 + b * 1_000..7_000 + b * 1_000, true);
    }
    insert_range(&e, index, 12_000..12_700, false);
    e.abandon();
    let (kept, total) = sim.power_loss(seed).unwrap();
    assert!(
        kept < total,
        "the crash lost unsynced writes ({kept} of {total} kept)"
    );
    let e = c.open(strata_vfs::StdVfs::arc());
    assert!(c.logs.lock().iter().any(|l| l.contains("redo done")));
    check(&e, index, 0..12_000, 12_000..12_700, "after power loss");
    // Found from any entry on: a scan from a key in the middle starts there.
    let mut from = Vec::new();
    e.btree_scan_from(index, &entry(77), &mut |x| {
        from.push(x.to_vec());
        Ok(from.len() < 3)
    })
    .unwrap();
    assert_eq!(from[0], entry(77));
    assert!(from[0] < from[1] && from[1] < from[2]);
    // The replayed tree takes more inserts, and a clean restart keeps them.
    insert_range(&e, index, 12_700..14_000, true);
    e.close().unwrap();
    let e = c.open(strata_vfs::StdVfs::arc());
    check(
        &e,
        index,
        12_700..14_000,
        0..12_700,
        "after a clean restart",
    );
    let all = e.btree_check(index).unwrap().len();
    assert!(all >= 13_300, "{all}");
}

/// A crash at any moment of a split: right after its commit (pages only in the WAL),
/// or with its record torn (never acknowledged). Each recovery checks.
#[test]
fn a_crash_in_the_middle_of_splits_leaves_a_tree_that_checks() {
    for seed in 1..5u64 {
        let c = Cluster::new();
        let sim = Arc::new(SimVfs::new(None, false).unwrap());
        let e = c.open(sim.clone());
        let mut t = e.begin();
        let index = t.create_btree_storage("postgres").unwrap();
        t.commit().unwrap();
        let n = 1_000 + 700 * seed as u32;
        insert_range(&e, index, 0..n, true);
        e.checkpoint().unwrap();
        // Splits whose commit is durable and whose pages were never written.
        insert_range(&e, index, n..n + 400, true);
        // Splits in flight: WAL written in part, maybe torn.
        let mut t = e.begin();
        for i in n + 400..n + 800 {
            t.btree_insert(index, &entry(i)).unwrap();
        }
        std::mem::forget(t);
        e.abandon();
        sim.power_loss(seed).unwrap();
        let e = c.open(strata_vfs::StdVfs::arc());
        check(
            &e,
            index,
            0..n + 400,
            n + 400..n + 800,
            &format!("seed {seed}"),
        );
        e.close().unwrap();
    }
}
