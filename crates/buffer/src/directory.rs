//! The relation directory: which pages of each relation and database are cached, and
//! which are dirty. See the crate README for the rules; this module owns rule 3's
//! "directory" half and the dirty sets of rule 8.
//!
//! Invariants (under each partition's lock):
//! 1. A `RelEntry` exists iff it has at least one cached block.
//! 2. `dirty[f]` ⊆ keys of `blocks[f]`, and `ndirty` is the sum of their sizes.
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

#[derive(Default)]
struct RelEntry {
    blocks: [BTreeMap<BlockNumber, BufId>; ForkNumber::COUNT],
    dirty: [BTreeSet<BlockNumber>; ForkNumber::COUNT],
    ndirty: usize,
}

impl RelEntry {
    fn is_empty(&self) -> bool {
        self.blocks.iter().all(|b| b.is_empty())
    }
}

#[derive(Default)]
struct DirPartition {
    rels: FxHashMap<RelKey, RelEntry>,
    dirty_rels: FxHashSet<RelKey>,
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

    /// Records that buffer `id` now holds `tag` (a miss). O(log cached pages of rel).
    pub fn insert(&self, tag: BufferTag, id: BufId) {
        let mut part = self.part(&tag.rel).lock();
        let new_entry = !part.rels.contains_key(&tag.rel);
        let entry = part.rels.entry(tag.rel).or_default();
        let old = entry.blocks[tag.fork.index()].insert(tag.block, id);
        debug_assert!(old.is_none(), "{tag} was already in the directory");
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
        let blocks = &mut entry.blocks[tag.fork.index()];
        if blocks.get(&tag.block) != Some(&id) {
            return;
        }
        blocks.remove(&tag.block);
        if entry.dirty[tag.fork.index()].remove(&tag.block) {
            entry.ndirty -= 1;
            if entry.ndirty == 0 {
                part.dirty_rels.remove(&tag.rel);
            }
        }
        if entry.is_empty() {
            part.rels.remove(&tag.rel);
            self.db_remove(tag.rel);
        }
    }

    /// Records `tag` as dirty (a clean → dirty transition). O(log).
    pub fn mark_dirty(&self, tag: BufferTag) {
        let mut guard = self.part(&tag.rel).lock();
        let part = &mut *guard;
        let Some(entry) = part.rels.get_mut(&tag.rel) else {
            return;
        };
        if entry.dirty[tag.fork.index()].insert(tag.block) {
            entry.ndirty += 1;
            if entry.ndirty == 1 {
                part.dirty_rels.insert(tag.rel);
            }
        }
    }

    /// Records `tag` as clean (written). O(log).
    pub fn clear_dirty(&self, tag: BufferTag) {
        let mut guard = self.part(&tag.rel).lock();
        let part = &mut *guard;
        let Some(entry) = part.rels.get_mut(&tag.rel) else {
            return;
        };
        if entry.dirty[tag.fork.index()].remove(&tag.block) {
            entry.ndirty -= 1;
            if entry.ndirty == 0 {
                part.dirty_rels.remove(&tag.rel);
            }
        }
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
        for (i, blocks) in entry.blocks.into_iter().enumerate() {
            let fork = ForkNumber::from_index(i).expect("fork index");
            out.extend(
                blocks
                    .into_iter()
                    .map(|(b, id)| (BufferTag::new(rel, fork, b), id)),
            );
        }
    }

    /// Detaches the cached pages of each fork at or beyond its cut.
    /// O(pages beyond the cuts + log(cached pages of rel)).
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
            let tail = entry.blocks[fork.index()].split_off(&cut);
            let dirty_tail = entry.dirty[fork.index()].split_off(&cut);
            entry.ndirty -= dirty_tail.len();
            out.extend(
                tail.into_iter()
                    .map(|(b, id)| (BufferTag::new(rel, fork, b), id)),
            );
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
        let id = *entry.blocks[tag.fork.index()].get(&tag.block)?;
        Some((id, entry.dirty[tag.fork.index()].contains(&tag.block)))
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
                    for b in &entry.dirty[f] {
                        assert!(entry.blocks[f].contains_key(b), "invariant 2");
                    }
                    n += entry.dirty[f].len();
                    cached += entry.blocks[f].len();
                }
                assert_eq!(n, entry.ndirty, "invariant 2 for {rel}");
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

fn collect_dirty(rel: RelKey, entry: &RelEntry, out: &mut Vec<(BufferTag, BufId)>) {
    for (i, set) in entry.dirty.iter().enumerate() {
        let fork = ForkNumber::from_index(i).expect("fork index");
        for b in set {
            out.push((BufferTag::new(rel, fork, *b), entry.blocks[i][b]));
        }
    }
}
