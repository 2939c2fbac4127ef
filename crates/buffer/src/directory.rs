//! The relation directory: which pages of each relation and database are cached, and
//! which are dirty. See the crate README for the rules; this module owns rule 3's
//! "directory" half and the dirty sets of rule 8.
//!
//! A relation's cached blocks are kept per fork as an ordered map of *runs*: the 16
//! blocks of an aligned range (`BufferTag::LOCALITY_RUN_BLOCKS`) share one entry with a
//! slot per block and a dirty bitmap. Tables are read and written in ranges, so a run
//! usually holds many cached pages: bulk operations walk, split and free one tree entry
//! per 16 pages, and marking a page dirty flips a bit.
//!
//! Invariants (under each partition's lock):
//! 1. A `RelEntry` exists iff it has at least one cached block, and a `Run` exists iff it
//!    has at least one (its `count` is the number of occupied slots).
//! 2. A run's dirty bits are a subset of its occupied slots; `dirty_runs[f]` holds
//!    exactly the runs of fork `f` with a dirty bit; `ndirty` is the number of dirty bits.
//! 3. `dirty_rels` holds exactly the relations of the partition with `ndirty > 0`.
//! 4. A database's relation set (in the database index) holds exactly its relations
//!    that have an entry.

use crate::{hash_of, BufId};
use parking_lot::Mutex;
use rustc_hash::{FxHashMap, FxHashSet};
use std::collections::{BTreeMap, BTreeSet};
use strata_types::{BlockNumber, BufferTag, ForkNumber, Oid, RelKey};

pub(crate) const DIR_PARTITIONS: usize = 128;
const DB_PARTITIONS: usize = 16;
const RUN_BLOCKS: u32 = BufferTag::LOCALITY_RUN_BLOCKS;
const NO_BUFFER: BufId = BufId::MAX;
const _: () = assert!(RUN_BLOCKS == 16, "a run's dirty bitmap is a u16");

/// Up to 16 cached blocks of one aligned range of a fork.
#[derive(Clone, Copy)]
struct Run {
    ids: [BufId; RUN_BLOCKS as usize],
    dirty: u16,
    count: u8,
}

impl Run {
    const EMPTY: Run = Run {
        ids: [NO_BUFFER; RUN_BLOCKS as usize],
        dirty: 0,
        count: 0,
    };

    /// Occupied slots in `from..RUN_BLOCKS`, with their dirty bit.
    fn slots(&self, from: u32) -> impl Iterator<Item = (u32, BufId)> + '_ {
        (from..RUN_BLOCKS)
            .map(|s| (s, self.ids[s as usize]))
            .filter(|(_, id)| *id != NO_BUFFER)
    }
}

fn split(block: BlockNumber) -> (u32, usize) {
    (block.0 / RUN_BLOCKS, (block.0 % RUN_BLOCKS) as usize)
}

fn block_of(run: u32, slot: u32) -> BlockNumber {
    BlockNumber(run * RUN_BLOCKS + slot)
}

#[derive(Default)]
struct RelEntry {
    runs: [BTreeMap<u32, Run>; ForkNumber::COUNT],
    dirty_runs: [BTreeSet<u32>; ForkNumber::COUNT],
    ndirty: usize,
}

impl RelEntry {
    fn is_empty(&self) -> bool {
        self.runs.iter().all(|r| r.is_empty())
    }

    /// Sets or clears a page's dirty bit; returns the change in `ndirty` (-1, 0, 1).
    fn set_dirty(&mut self, tag: BufferTag, dirty: bool) -> isize {
        let f = tag.fork.index();
        let (r, slot) = split(tag.block);
        let Some(run) = self.runs[f].get_mut(&r) else {
            return 0;
        };
        if run.ids[slot] == NO_BUFFER {
            return 0;
        }
        let bit = 1u16 << slot;
        let was = run.dirty & bit != 0;
        if was == dirty {
            return 0;
        }
        run.dirty ^= bit;
        if run.dirty == 0 {
            self.dirty_runs[f].remove(&r);
        } else if dirty && run.dirty == bit {
            self.dirty_runs[f].insert(r);
        }
        if dirty {
            self.ndirty += 1;
            1
        } else {
            self.ndirty -= 1;
            -1
        }
    }
}

#[derive(Default)]
struct DirPartition {
    rels: FxHashMap<RelKey, RelEntry>,
    dirty_rels: FxHashSet<RelKey>,
}

impl DirPartition {
    /// Keeps invariant 3 after `rel`'s dirty count changed by `delta`.
    fn note_dirty(&mut self, rel: RelKey, ndirty: usize, delta: isize) {
        if delta > 0 && ndirty == 1 {
            self.dirty_rels.insert(rel);
        } else if delta < 0 && ndirty == 0 {
            self.dirty_rels.remove(&rel);
        }
    }
}

/// Cache-line aligned, so neighbouring partition locks do not share a line.
#[repr(align(128))]
#[derive(Default)]
pub(crate) struct Padded<T>(pub T);

/// One partition of the database index: database → its relations with cached pages.
type DbIndex = FxHashMap<Oid, FxHashSet<RelKey>>;

pub(crate) struct Directory {
    parts: Box<[Padded<Mutex<DirPartition>>]>,
    dbs: Box<[Padded<Mutex<DbIndex>>]>,
}

impl Directory {
    pub fn new() -> Directory {
        Directory {
            parts: (0..DIR_PARTITIONS).map(|_| Padded::default()).collect(),
            dbs: (0..DB_PARTITIONS).map(|_| Padded::default()).collect(),
        }
    }

    fn part(&self, rel: &RelKey) -> &Mutex<DirPartition> {
        &self.parts[hash_of(rel) as usize % DIR_PARTITIONS].0
    }

    fn db_part(&self, db: Oid) -> &Mutex<DbIndex> {
        &self.dbs[db.0 as usize % DB_PARTITIONS].0
    }

    fn db_add(&self, rel: RelKey) {
        self.db_part(rel.db)
            .lock()
            .entry(rel.db)
            .or_default()
            .insert(rel);
    }

    fn db_remove(&self, rel: RelKey) {
        let mut dbs = self.db_part(rel.db).lock();
        if let Some(set) = dbs.get_mut(&rel.db) {
            set.remove(&rel);
            if set.is_empty() {
                dbs.remove(&rel.db);
            }
        }
    }

    /// Records that buffer `id` now holds `tag` (a miss). O(log cached runs of rel).
    pub fn insert(&self, tag: BufferTag, id: BufId) {
        let mut part = self.part(&tag.rel).lock();
        let new_entry = !part.rels.contains_key(&tag.rel);
        let entry = part.rels.entry(tag.rel).or_default();
        let (r, slot) = split(tag.block);
        let run = entry.runs[tag.fork.index()].entry(r).or_insert(Run::EMPTY);
        debug_assert_eq!(
            run.ids[slot], NO_BUFFER,
            "{tag} was already in the directory"
        );
        run.ids[slot] = id;
        run.count += 1;
        if new_entry {
            self.db_add(tag.rel); // rule 1: directory partition → database index
        }
    }

    /// Forgets `tag` if it is held by buffer `id` (eviction). Its dirty bit goes too.
    pub fn remove(&self, tag: BufferTag, id: BufId) {
        let mut guard = self.part(&tag.rel).lock();
        let part = &mut *guard;
        let Some(entry) = part.rels.get_mut(&tag.rel) else {
            return; // detached by a bulk operation (README rule 7)
        };
        let f = tag.fork.index();
        let (r, slot) = split(tag.block);
        match entry.runs[f].get(&r) {
            Some(run) if run.ids[slot] == id => {}
            _ => return,
        }
        let delta = entry.set_dirty(tag, false);
        let ndirty = entry.ndirty;
        let run = entry.runs[f].get_mut(&r).expect("checked above");
        run.ids[slot] = NO_BUFFER;
        run.count -= 1;
        if run.count == 0 {
            entry.runs[f].remove(&r);
        }
        let empty = entry.is_empty();
        part.note_dirty(tag.rel, ndirty, delta);
        if empty {
            part.rels.remove(&tag.rel);
            self.db_remove(tag.rel);
        }
    }

    /// Records `tag` as dirty (a clean → dirty transition). O(log).
    pub fn mark_dirty(&self, tag: BufferTag) {
        self.set_dirty(tag, true)
    }

    /// Records `tag` as clean (written). O(log).
    pub fn clear_dirty(&self, tag: BufferTag) {
        self.set_dirty(tag, false)
    }

    fn set_dirty(&self, tag: BufferTag, dirty: bool) {
        let mut guard = self.part(&tag.rel).lock();
        let part = &mut *guard;
        let Some(entry) = part.rels.get_mut(&tag.rel) else {
            return;
        };
        let delta = entry.set_dirty(tag, dirty);
        let ndirty = entry.ndirty;
        part.note_dirty(tag.rel, ndirty, delta);
    }

    /// Detaches every cached page of `rel`, returning them. O(cached pages of rel).
    pub fn take_relation(&self, rel: RelKey, out: &mut Vec<(BufferTag, BufId)>) {
        let entry = {
            let mut part = self.part(&rel).lock();
            let Some(entry) = part.rels.remove(&rel) else {
                return;
            };
            part.dirty_rels.remove(&rel);
            self.db_remove(rel);
            entry
        };
        for (i, runs) in entry.runs.iter().enumerate() {
            let fork = ForkNumber::from_index(i).expect("fork index");
            for (r, run) in runs {
                out.extend(
                    run.slots(0)
                        .map(|(s, id)| (BufferTag::new(rel, fork, block_of(*r, s)), id)),
                );
            }
        }
    }

    /// Detaches the cached pages of each fork at or beyond its cut.
    /// O(pages beyond the cuts + log(cached runs of rel)).
    pub fn take_tail(
        &self,
        rel: RelKey,
        cuts: &[(ForkNumber, BlockNumber)],
        out: &mut Vec<(BufferTag, BufId)>,
    ) {
        let mut guard = self.part(&rel).lock();
        let part = &mut *guard;
        let Some(entry) = part.rels.get_mut(&rel) else {
            return;
        };
        for &(fork, cut) in cuts {
            let f = fork.index();
            let (first, keep) = split(cut);
            let tail = entry.runs[f].split_off(&first);
            entry.dirty_runs[f].split_off(&first);
            for (r, run) in tail {
                let from = if r == first { keep as u32 } else { 0 };
                if from > 0 {
                    // The run straddling the cut: its head stays.
                    let head_mask = (1u16 << from) - 1;
                    let mut head = run;
                    for s in from as usize..RUN_BLOCKS as usize {
                        head.ids[s] = NO_BUFFER;
                    }
                    head.dirty &= head_mask;
                    head.count = run.slots(0).filter(|(s, _)| *s < from).count() as u8;
                    if head.count > 0 {
                        if head.dirty != 0 {
                            entry.dirty_runs[f].insert(r);
                        }
                        entry.runs[f].insert(r, head);
                    }
                }
                let cut_bits = run.dirty & !((1u16 << from) - 1);
                entry.ndirty -= cut_bits.count_ones() as usize;
                out.extend(
                    run.slots(from)
                        .map(|(s, id)| (BufferTag::new(rel, fork, block_of(r, s)), id)),
                );
            }
        }
        if entry.ndirty == 0 {
            part.dirty_rels.remove(&rel);
        }
        if entry.is_empty() {
            part.rels.remove(&rel);
            self.db_remove(rel);
        }
    }

    /// The relations of `db` that have cached pages. O(those relations).
    pub fn relations_of(&self, db: Oid) -> Vec<RelKey> {
        self.db_part(db)
            .lock()
            .get(&db)
            .map(|s| s.iter().copied().collect())
            .unwrap_or_default()
    }

    /// Appends the dirty pages of `rel`. O(dirty pages of rel).
    pub fn dirty_of(&self, rel: RelKey, out: &mut Vec<(BufferTag, BufId)>) {
        let part = self.part(&rel).lock();
        if let Some(entry) = part.rels.get(&rel) {
            collect_dirty(rel, entry, out);
        }
    }

    /// Appends every dirty page. O(partitions + dirty pages).
    pub fn all_dirty(&self, out: &mut Vec<(BufferTag, BufId)>) {
        for p in self.parts.iter() {
            let part = p.0.lock();
            for rel in &part.dirty_rels {
                collect_dirty(*rel, &part.rels[rel], out);
            }
        }
    }

    /// Looks a page up in the directory (tests and `verify_invariants`). O(log).
    pub fn get(&self, tag: BufferTag) -> Option<(BufId, bool)> {
        let part = self.part(&tag.rel).lock();
        let entry = part.rels.get(&tag.rel)?;
        let (r, slot) = split(tag.block);
        let run = entry.runs[tag.fork.index()].get(&r)?;
        let id = run.ids[slot];
        (id != NO_BUFFER).then_some((id, run.dirty & (1 << slot) != 0))
    }

    /// Checks invariants 1–4 and returns (cached pages, dirty pages). O(directory).
    pub fn verify(&self) -> (usize, usize) {
        let (mut cached, mut dirty) = (0, 0);
        let mut rels_seen = FxHashSet::default();
        for p in self.parts.iter() {
            let part = p.0.lock();
            for (rel, entry) in &part.rels {
                assert!(!entry.is_empty(), "empty entry for {rel} (invariant 1)");
                let mut n = 0;
                for f in 0..ForkNumber::COUNT {
                    for (r, run) in &entry.runs[f] {
                        let occupied = run.slots(0).count();
                        assert!(occupied > 0, "empty run {r} of {rel} (invariant 1)");
                        assert_eq!(occupied, run.count as usize, "run count (invariant 1)");
                        let mut present = 0u16;
                        for (s, _) in run.slots(0) {
                            present |= 1 << s;
                        }
                        assert_eq!(
                            run.dirty & !present,
                            0,
                            "dirty bit of an empty slot (invariant 2)"
                        );
                        assert_eq!(
                            entry.dirty_runs[f].contains(r),
                            run.dirty != 0,
                            "dirty_runs (invariant 2)"
                        );
                        n += run.dirty.count_ones() as usize;
                        cached += occupied;
                    }
                    for r in &entry.dirty_runs[f] {
                        assert!(entry.runs[f].contains_key(r), "dirty_runs (invariant 2)");
                    }
                }
                assert_eq!(n, entry.ndirty, "ndirty (invariant 2) for {rel}");
                assert_eq!(part.dirty_rels.contains(rel), n > 0, "invariant 3");
                dirty += n;
                rels_seen.insert(*rel);
            }
            for rel in &part.dirty_rels {
                assert!(part.rels.contains_key(rel), "invariant 3");
            }
        }
        let mut in_db_index = 0;
        for d in self.dbs.iter() {
            for (db, rels) in d.0.lock().iter() {
                for rel in rels {
                    assert_eq!(rel.db, *db);
                    assert!(rels_seen.contains(rel), "invariant 4: {rel} has no entry");
                    in_db_index += 1;
                }
            }
        }
        assert_eq!(in_db_index, rels_seen.len(), "invariant 4");
        (cached, dirty)
    }
}

/// Appends the dirty pages of one relation, in file order. O(its dirty runs and pages).
fn collect_dirty(rel: RelKey, entry: &RelEntry, out: &mut Vec<(BufferTag, BufId)>) {
    for (i, dirty_runs) in entry.dirty_runs.iter().enumerate() {
        let fork = ForkNumber::from_index(i).expect("fork index");
        for r in dirty_runs {
            let run = &entry.runs[i][r];
            let mut bits = run.dirty;
            while bits != 0 {
                let s = bits.trailing_zeros();
                bits &= bits - 1;
                out.push((
                    BufferTag::new(rel, fork, block_of(*r, s)),
                    run.ids[s as usize],
                ));
            }
        }
    }
}
