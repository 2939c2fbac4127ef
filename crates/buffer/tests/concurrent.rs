//! Property: readers pinning and reading pages of some relations see exactly what was
//! written, while other threads concurrently create, dirty, truncate, flush and drop
//! other relations and databases through the same small pool (constant eviction); and
//! afterwards the mapping table, the directory and the dirty sets agree.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread;
use strata_buffer::{BufferPool, NoWal, ReadMode};
use strata_smgr::{Smgr, StdVfs};
use strata_types::{
    BlockNumber, BufferTag, ForkNumber, Oid, RelFileNumber, RelKey, BLCKSZ, DEFAULT_TABLESPACE,
};

const STABLE_PAGES: u32 = 60;

fn write_page(pool: &BufferPool, tag: BufferTag, value: u64) {
    let buf = pool.read_buffer(tag, ReadMode::Zero).unwrap();
    let mut page = buf.write();
    strata_page::init(&mut page, 0);
    strata_page::add_item(&mut page, &value.to_le_bytes()).unwrap();
    strata_page::add_item(&mut page, &tag.block.0.to_le_bytes()).unwrap();
    buf.mark_dirty(&page);
}

fn stable_value(rel: RelKey, block: u32) -> u64 {
    rel.rel.0 * 1_000_000 + block as u64
}

/// A pool of 64 buffers over a fresh cluster directory with databases 5 and 7, and the
/// stable relations' pages written.
fn setup(dir: &std::path::Path) -> (Arc<Smgr>, Arc<BufferPool>, Vec<RelKey>) {
    let smgr = Arc::new(Smgr::open(dir, Arc::new(StdVfs), 16).unwrap());
    for db in [5, 7] {
        smgr.create_database_dir(DEFAULT_TABLESPACE, Oid(db))
            .unwrap();
    }
    // 64 buffers for a working set of 120 stable pages plus the churn: eviction of
    // dirty and clean pages happens all the time.
    let pool = Arc::new(BufferPool::new(
        64 * BLCKSZ as u64,
        smgr.clone(),
        Arc::new(NoWal),
    ));
    let stable: Vec<RelKey> = (1..=2)
        .map(|n| RelKey::new(DEFAULT_TABLESPACE, Oid(5), RelFileNumber(n)))
        .collect();
    for rel in &stable {
        for b in 0..STABLE_PAGES {
            write_page(
                &pool,
                BufferTag::new(*rel, ForkNumber::Main, BlockNumber(b)),
                stable_value(*rel, b),
            );
        }
    }
    (smgr, pool, stable)
}

/// Reads random stable pages until stopped (and at least 2,000), checking each; returns
/// how many it read.
fn reader(pool: &BufferPool, stable: &[RelKey], stop: &AtomicBool, seed: u64) -> u64 {
    let mut x = 0x9E37_79B9_7F4A_7C15u64 ^ seed;
    let mut reads = 0u64;
    while !stop.load(Ordering::Relaxed) || reads < 2_000 {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        let rel = stable[(x % 2) as usize];
        let block = ((x >> 8) % STABLE_PAGES as u64) as u32;
        let tag = BufferTag::new(rel, ForkNumber::Main, BlockNumber(block));
        let buf = pool.read_buffer(tag, ReadMode::Normal).unwrap();
        let page = buf.read();
        let v = u64::from_le_bytes(strata_page::item(&page, 0).unwrap().try_into().unwrap());
        assert_eq!(v, stable_value(rel, block), "{tag} read wrong");
        reads += 1;
    }
    reads
}

/// One round of mutator `t`: three relations written, the first truncated, the second
/// sometimes flushed, then all dropped (every tenth round of mutator 1: its whole
/// database); none of their pages may stay cached.
fn mutate_round(pool: &BufferPool, smgr: &Smgr, t: u64, round: u64) {
    let db = if t == 0 { Oid(5) } else { Oid(7) };
    let rels: Vec<RelKey> = (0..3)
        .map(|i| {
            RelKey::new(
                DEFAULT_TABLESPACE,
                db,
                RelFileNumber(1_000 + t * 100_000 + round * 10 + i),
            )
        })
        .collect();
    for rel in &rels {
        for b in 0..12 {
            write_page(
                pool,
                BufferTag::new(*rel, ForkNumber::Main, BlockNumber(b)),
                1,
            );
        }
        write_page(
            pool,
            BufferTag::new(*rel, ForkNumber::Fsm, BlockNumber(0)),
            1,
        );
    }
    let cuts = [
        (ForkNumber::Main, BlockNumber(5)),
        (ForkNumber::Fsm, BlockNumber(0)),
    ];
    pool.truncate(rels[0], &cuts);
    smgr.truncate(rels[0], &cuts).unwrap();
    if round.is_multiple_of(3) {
        pool.flush_relations(&rels[1..2]).unwrap();
    }
    if t == 1 && round % 10 == 9 {
        pool.drop_database(db);
        smgr.remove_database(db, &[DEFAULT_TABLESPACE]).unwrap();
        smgr.create_database_dir(DEFAULT_TABLESPACE, db).unwrap();
    } else {
        pool.drop_relations(&rels);
        smgr.unlink(&rels).unwrap();
    }
    for rel in &rels {
        for b in 0..12 {
            let tag = BufferTag::new(*rel, ForkNumber::Main, BlockNumber(b));
            assert!(!pool.is_cached(tag), "{tag} survived its drop");
        }
    }
}

/// Flushes every dirty page until stopped; returns how many times.
fn checkpointer(pool: &BufferPool, stop: &AtomicBool) -> u64 {
    let mut n = 0;
    while !stop.load(Ordering::Relaxed) {
        pool.flush_all_dirty().unwrap();
        n += 1;
        thread::yield_now();
    }
    n
}

/// After the run: the stable relations' pages on disk hold what was written.
fn check_stable_on_disk(pool: &BufferPool, smgr: &Smgr, stable: &[RelKey]) {
    pool.flush_all_dirty().unwrap();
    for rel in stable {
        for b in 0..STABLE_PAGES {
            let mut buf = Box::new([0u8; BLCKSZ]);
            smgr.read(*rel, ForkNumber::Main, BlockNumber(b), &mut buf)
                .unwrap();
            let v = u64::from_le_bytes(strata_page::item(&buf, 0).unwrap().try_into().unwrap());
            assert_eq!(v, stable_value(*rel, b));
        }
    }
}

#[test]
fn readers_are_undisturbed_by_concurrent_drops_and_truncates() {
    let dir = tempfile::tempdir().unwrap();
    let (smgr, pool, stable) = setup(dir.path());
    let stop = Arc::new(AtomicBool::new(false));
    let readers: Vec<_> = (0..2u64)
        .map(|t| {
            let (pool, stable, stop) = (pool.clone(), stable.clone(), stop.clone());
            thread::spawn(move || reader(&pool, &stable, &stop, t))
        })
        .collect();
    let mutators: Vec<_> = (0..2u64)
        .map(|t| {
            let (pool, smgr) = (pool.clone(), smgr.clone());
            thread::spawn(move || {
                for round in 0..150u64 {
                    mutate_round(&pool, &smgr, t, round);
                }
            })
        })
        .collect();
    let checkpointer = {
        let (pool, stop) = (pool.clone(), stop.clone());
        thread::spawn(move || checkpointer(&pool, &stop))
    };
    for m in mutators {
        m.join().unwrap();
    }
    stop.store(true, Ordering::Relaxed);
    let reads: u64 = readers.into_iter().map(|r| r.join().unwrap()).sum();
    let checkpoints = checkpointer.join().unwrap();
    assert!(reads >= 4_000 && checkpoints > 0);
    pool.verify_invariants();
    // Only the stable relations may be left in the pool.
    check_stable_on_disk(&pool, &smgr, &stable);
}
