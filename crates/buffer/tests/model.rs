//! Property: under any sequence of reads, writes, evictions, drops, truncations,
//! database drops and flushes, the pool agrees with a simple model — no dropped or
//! truncated page can be read back, no dirty page is lost without being written, and
//! every cached page is findable through both the mapping table and the directory.
//!
//! Runs against a real storage manager on a temporary directory, with a 16-buffer pool
//! so that eviction (and write-back of dirty victims) happens constantly.

use proptest::prelude::*;
use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;
use strata_buffer::{BufferPool, NoWal, ReadMode};
use strata_smgr::{Smgr, StdVfs};
use strata_types::{
    BlockNumber, BufferTag, ForkNumber, Oid, RelFileNumber, RelKey, BLCKSZ, DEFAULT_TABLESPACE,
};

const SPC: Oid = Oid(50000);
const DBS: [Oid; 2] = [Oid(5), Oid(6)];
const SLOTS: usize = 4; // relation slots; slot i lives in DBS[i % 2], odd slots in SPC
const FORKS: [ForkNumber; 2] = [ForkNumber::Main, ForkNumber::Fsm];
/// Several directory runs (16 blocks each) per fork, so cuts straddle runs.
const MAX_BLOCKS: u32 = 40;

#[derive(Debug, Clone)]
enum Op {
    Write {
        slot: usize,
        fork: usize,
        block: u32,
        value: u64,
    },
    Read {
        slot: usize,
        fork: usize,
        block: u32,
    },
    Extend {
        slot: usize,
        fork: usize,
        pages: u32,
        value: u64,
    },
    Churn {
        pages: u32,
    },
    Drop {
        slot: usize,
    },
    DropTwo {
        a: usize,
        b: usize,
    },
    Truncate {
        slot: usize,
        main: u32,
        fsm: u32,
    },
    DropDatabase {
        db: usize,
    },
    FlushRelation {
        slot: usize,
    },
    FlushDatabase {
        db: usize,
    },
    Checkpoint,
}

fn op() -> impl Strategy<Value = Op> {
    let slot = 0..SLOTS;
    prop_oneof![
        6 => (slot.clone(), 0..2usize, 0..MAX_BLOCKS, any::<u64>())
            .prop_map(|(slot, fork, block, value)| Op::Write { slot, fork, block, value }),
        4 => (slot.clone(), 0..2usize, 0..MAX_BLOCKS)
            .prop_map(|(slot, fork, block)| Op::Read { slot, fork, block }),
        2 => (slot.clone(), 0..2usize, 1..24u32, any::<u64>())
            .prop_map(|(slot, fork, pages, value)| Op::Extend { slot, fork, pages, value }),
        2 => (1..20u32).prop_map(|pages| Op::Churn { pages }),
        1 => slot.clone().prop_map(|slot| Op::Drop { slot }),
        1 => (slot.clone(), slot.clone()).prop_map(|(a, b)| Op::DropTwo { a, b }),
        2 => (slot.clone(), 0..MAX_BLOCKS, 0..20u32)
            .prop_map(|(slot, main, fsm)| Op::Truncate { slot, main, fsm }),
        1 => (0..2usize).prop_map(|db| Op::DropDatabase { db }),
        1 => slot.prop_map(|slot| Op::FlushRelation { slot }),
        1 => (0..2usize).prop_map(|db| Op::FlushDatabase { db }),
        1 => Just(Op::Checkpoint),
    ]
}

struct World {
    _dir: tempfile::TempDir,
    _spc_dir: tempfile::TempDir,
    smgr: Arc<Smgr>,
    pool: BufferPool,
    /// Current relation of each slot (a drop moves the slot to a fresh file number).
    rels: [RelKey; SLOTS],
    next_rel: u64,
    /// The model: the value in every live page.
    pages: BTreeMap<BufferTag, u64>,
    /// Pages that must not be found in the pool (dropped, or cut off and not re-made).
    gone: BTreeSet<BufferTag>,
    churn_block: u32,
}

fn slot_key(slot: usize, n: u64) -> RelKey {
    let spc = if slot % 2 == 1 {
        SPC
    } else {
        DEFAULT_TABLESPACE
    };
    RelKey::new(spc, DBS[slot % 2], RelFileNumber(n))
}

impl World {
    fn new() -> World {
        let dir = tempfile::tempdir().unwrap();
        let spc_dir = tempfile::tempdir().unwrap();
        let smgr = Arc::new(Smgr::open(dir.path(), Arc::new(StdVfs), 8).unwrap());
        smgr.create_tablespace(SPC, spc_dir.path()).unwrap();
        let pool = BufferPool::new(16 * BLCKSZ as u64, smgr.clone(), Arc::new(NoWal));
        let mut w = World {
            _dir: dir,
            _spc_dir: spc_dir,
            smgr,
            pool,
            rels: [slot_key(0, 0); SLOTS],
            next_rel: 100,
            pages: BTreeMap::new(),
            gone: BTreeSet::new(),
            churn_block: 0,
        };
        for db in DBS {
            w.create_db_dirs(db);
        }
        w.smgr
            .create_database_dir(DEFAULT_TABLESPACE, Oid(9))
            .unwrap();
        for s in 0..SLOTS {
            w.renew(s);
        }
        w
    }

    fn create_db_dirs(&self, db: Oid) {
        self.smgr
            .create_database_dir(DEFAULT_TABLESPACE, db)
            .unwrap();
        self.smgr.create_database_dir(SPC, db).unwrap();
    }

    /// Points a slot at a never-used relation file number (invariant 2 of types).
    fn renew(&mut self, slot: usize) {
        self.next_rel += 1;
        self.rels[slot] = slot_key(slot, self.next_rel);
    }

    fn len(&self, rel: RelKey, fork: ForkNumber) -> u32 {
        self.pages
            .range(
                BufferTag::new(rel, fork, BlockNumber(0))
                    ..=BufferTag::new(rel, fork, BlockNumber(u32::MAX)),
            )
            .count() as u32
    }

    fn forget_relation(&mut self, rel: RelKey) {
        let tags: Vec<_> = self
            .pages
            .keys()
            .filter(|t| t.rel == rel)
            .copied()
            .collect();
        for t in tags {
            self.pages.remove(&t);
            self.gone.insert(t);
        }
    }

    fn read_value(&self, tag: BufferTag) -> u64 {
        let buf = self.pool.read_buffer(tag, ReadMode::Normal).unwrap();
        let page = buf.read();
        u64::from_le_bytes(strata_page::item(&page, 0).unwrap().try_into().unwrap())
    }

    /// Every page of `rels` (or all) reads back from disk as the model says.
    fn check_disk(&self, filter: impl Fn(&RelKey) -> bool) {
        for (tag, value) in self.pages.iter().filter(|(t, _)| filter(&t.rel)) {
            let mut buf = Box::new([0u8; BLCKSZ]);
            self.smgr
                .read(tag.rel, tag.fork, tag.block, &mut buf)
                .unwrap_or_else(|e| panic!("{tag} not on disk after flush: {e}"));
            strata_page::verify(&buf, tag.block).unwrap();
            let on_disk =
                u64::from_le_bytes(strata_page::item(&buf, 0).unwrap().try_into().unwrap());
            assert_eq!(on_disk, *value, "{tag}: flushed value differs");
        }
    }

    fn apply(&mut self, op: &Op) {
        match *op {
            Op::Write {
                slot,
                fork,
                block,
                value,
            } => self.write(slot, fork, block, value),
            Op::Extend {
                slot,
                fork,
                pages,
                value,
            } => {
                let rel = self.rels[slot];
                let len = self.len(rel, FORKS[fork]);
                for b in len..(len + pages).min(MAX_BLOCKS) {
                    self.write(slot, fork, b, value ^ b as u64);
                }
            }
            Op::Read { slot, fork, block } => {
                let tag = BufferTag::new(self.rels[slot], FORKS[fork], BlockNumber(block));
                if let Some(v) = self.pages.get(&tag) {
                    assert_eq!(self.read_value(tag), *v, "{tag} read back wrong");
                }
            }
            Op::Churn { pages } => {
                let scratch = RelKey::new(DEFAULT_TABLESPACE, Oid(9), RelFileNumber(1));
                for _ in 0..pages {
                    let t =
                        BufferTag::new(scratch, ForkNumber::Main, BlockNumber(self.churn_block));
                    self.churn_block += 1;
                    drop(self.pool.read_buffer(t, ReadMode::Zero).unwrap());
                }
            }
            Op::Drop { slot } => self.drop_slots(&[slot]),
            Op::DropTwo { a, b } => {
                let slots: Vec<usize> = if a == b { vec![a] } else { vec![a, b] };
                self.drop_slots(&slots)
            }
            Op::Truncate { slot, main, fsm } => self.truncate(slot, main, fsm),
            Op::DropDatabase { db } => self.drop_database(DBS[db]),
            Op::FlushRelation { slot } => {
                let rel = self.rels[slot];
                self.pool.flush_relations(&[rel]).unwrap();
                self.check_disk(|r| *r == rel);
            }
            Op::FlushDatabase { db } => {
                let db = DBS[db];
                self.pool.flush_database(db).unwrap();
                self.check_disk(|r| r.db == db);
            }
            Op::Checkpoint => {
                self.pool.flush_all_dirty().unwrap();
                assert!(self.pool.dirty_pages().is_empty());
                self.check_disk(|_| true);
            }
        }
    }

    /// Writes `value` into a block of a slot's fork (extending the fork by one page at
    /// most: a block past the end becomes the next block).
    fn write(&mut self, slot: usize, fork: usize, block: u32, value: u64) {
        let rel = self.rels[slot];
        let fork = FORKS[fork];
        let len = self.len(rel, fork);
        let block = block.min(len); // extend by one at most
        let tag = BufferTag::new(rel, fork, BlockNumber(block));
        let mode = if block == len {
            ReadMode::Zero
        } else {
            ReadMode::Normal
        };
        let buf = self.pool.read_buffer(tag, mode).unwrap();
        let mut page = buf.write();
        if block == len {
            strata_page::init(&mut page, 0);
            strata_page::add_item(&mut page, &value.to_le_bytes()).unwrap();
        } else {
            strata_page::item_mut(&mut page, 0)
                .unwrap()
                .copy_from_slice(&value.to_le_bytes());
        }
        buf.mark_dirty(&page);
        self.pages.insert(tag, value);
        self.gone.remove(&tag);
    }

    /// Cuts a slot's main and FSM forks in the pool and on disk; the model forgets the
    /// pages past each cut (they must never read back).
    fn truncate(&mut self, slot: usize, main: u32, fsm: u32) {
        let rel = self.rels[slot];
        let cuts = [
            (ForkNumber::Main, BlockNumber(main)),
            (ForkNumber::Fsm, BlockNumber(fsm)),
        ];
        self.pool.truncate(rel, &cuts);
        self.smgr.truncate(rel, &cuts).unwrap();
        for (fork, cut) in cuts {
            let tags: Vec<_> = self
                .pages
                .range(
                    BufferTag::new(rel, fork, cut)
                        ..=BufferTag::new(rel, fork, BlockNumber(u32::MAX)),
                )
                .map(|(t, _)| *t)
                .collect();
            for t in tags {
                self.pages.remove(&t);
                self.gone.insert(t);
            }
        }
    }

    /// Drops a database in the pool and on disk (every tablespace); its slots get new
    /// relations.
    fn drop_database(&mut self, db: Oid) {
        self.pool.drop_database(db);
        self.smgr
            .remove_database(db, &[DEFAULT_TABLESPACE, SPC])
            .unwrap();
        self.create_db_dirs(db);
        for slot in (0..SLOTS).filter(|s| DBS[s % 2] == db) {
            self.forget_relation(self.rels[slot]);
            self.renew(slot);
        }
    }

    fn drop_slots(&mut self, slots: &[usize]) {
        let rels: Vec<_> = slots.iter().map(|s| self.rels[*s]).collect();
        self.pool.drop_relations(&rels);
        self.smgr.unlink(&rels).unwrap();
        for (slot, rel) in slots.iter().zip(rels) {
            self.forget_relation(rel);
            self.renew(*slot);
        }
    }

    fn check(&self) {
        self.pool.verify_invariants();
        for tag in &self.gone {
            assert!(
                !self.pool.is_cached(*tag),
                "{tag} was dropped or cut off but is cached"
            );
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 96, ..ProptestConfig::default() })]

    #[test]
    fn pool_agrees_with_model(ops in proptest::collection::vec(op(), 1..120)) {
        let mut w = World::new();
        for op in &ops {
            w.apply(op);
            w.check();
        }
        // Finally everything dirty goes to disk and a fresh pool reads it all back.
        w.apply(&Op::Checkpoint);
        let fresh = BufferPool::new(16 * BLCKSZ as u64, w.smgr.clone(), Arc::new(NoWal));
        for (tag, v) in &w.pages {
            let buf = fresh.read_buffer(*tag, ReadMode::Normal).unwrap();
            let page = buf.read();
            let got = u64::from_le_bytes(strata_page::item(&page, 0).unwrap().try_into().unwrap());
            prop_assert_eq!(got, *v);
        }
    }
}
