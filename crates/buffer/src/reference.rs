//! The PostgreSQL way, kept as the benchmark's reference: each bulk operation as one
//! pass over every buffer descriptor (DropRelationsAllBuffers, DropDatabaseBuffers,
//! BufferSync's scan for BM_DIRTY). Not used by the engine.
//!
//! Each function does the same work as its `BufferPool` counterpart (the same buffers
//! end up invalidated, the directory stays consistent) but finds its targets by
//! visiting all `shared_buffers / 8kB` descriptors, taking each header lock once.
//! PostgreSQL reads the tag without the lock first, so its per-descriptor cost is
//! somewhat lower; the growth with the pool size is the same.

use crate::{BufId, BufferPool};
use rustc_hash::FxHashSet;
use strata_types::{BlockNumber, BufferTag, ForkNumber, Oid, RelKey};

/// Drops the pages of `rels` after one pass over every descriptor. O(shared_buffers).
pub fn drop_relations(pool: &BufferPool, rels: &[RelKey]) -> usize {
    let set: FxHashSet<RelKey> = rels.iter().copied().collect();
    let mut victims = Vec::new();
    pool.for_each_tagged(|id, tag, _| {
        if set.contains(&tag.rel) {
            victims.push((tag, id));
        }
    });
    pool.detach_and_invalidate(&victims)
}

/// Truncates all given forks of `rel` in one pass (PostgreSQL 13+). O(shared_buffers).
pub fn truncate(pool: &BufferPool, rel: RelKey, forks: &[(ForkNumber, BlockNumber)]) -> usize {
    let mut victims = Vec::new();
    pool.for_each_tagged(|id, tag, _| {
        if tag.rel == rel
            && forks
                .iter()
                .any(|(f, cut)| tag.fork == *f && tag.block >= *cut)
        {
            victims.push((tag, id));
        }
    });
    pool.detach_and_invalidate(&victims)
}

/// Drops every page of database `db` in one pass. O(shared_buffers).
pub fn drop_database(pool: &BufferPool, db: Oid) -> usize {
    let mut victims = Vec::new();
    pool.for_each_tagged(|id, tag, _| {
        if tag.rel.db == db {
            victims.push((tag, id));
        }
    });
    pool.detach_and_invalidate(&victims)
}

/// Finds the dirty pages for a checkpoint by scanning every header, then sorts them.
/// O(shared_buffers).
pub fn dirty_pages(pool: &BufferPool) -> Vec<(BufferTag, BufId)> {
    let mut list = Vec::new();
    pool.for_each_tagged(|id, tag, dirty| {
        if dirty {
            list.push((tag, id));
        }
    });
    list.sort_unstable();
    list
}

/// A plain partitioned hash map holding the same `tag → id` entries as a pool: the
/// reference for the hit path. It scrambles the tag with FxHash, so entries are placed
/// at random, as in PostgreSQL's buffer table. A hit here is what any PostgreSQL-style buffer manager
/// must do at least — one partition lookup, then pin and unpin the same descriptor the
/// pool would — so `BufferPool::read_buffer` on a hit can be compared with it.
pub struct PlainMap {
    parts: Vec<parking_lot::RwLock<rustc_hash::FxHashMap<BufferTag, BufId>>>,
}

impl PlainMap {
    /// Copies the pool's current mapping (O(pool), setup only), partitioned by its own
    /// hash.
    pub fn snapshot(pool: &BufferPool) -> PlainMap {
        let n = crate::MAPPING_PARTITIONS;
        // Sized like the pool's own partitions, so both run at the same load factor.
        let capacity = crate::mapping_partition_capacity(pool.nbuffers());
        let mut parts: Vec<rustc_hash::FxHashMap<BufferTag, BufId>> = (0..n)
            .map(|_| rustc_hash::FxHashMap::with_capacity_and_hasher(capacity, Default::default()))
            .collect();
        for p in pool.mapping.iter() {
            for (tag, id) in p.0.read().iter() {
                parts[crate::hash_of(tag) as usize % n].insert(*tag, *id);
            }
        }
        PlainMap {
            parts: parts.into_iter().map(parking_lot::RwLock::new).collect(),
        }
    }

    /// Looks `tag` up, pins and unpins its descriptor. Returns whether it was found.
    pub fn hit(&self, pool: &BufferPool, tag: &BufferTag) -> bool {
        let map = self.parts[crate::hash_of(tag) as usize % self.parts.len()].read();
        match map.get(tag) {
            Some(&id) => {
                let desc = pool.desc(id);
                desc.pin();
                drop(map);
                desc.unpin();
                true
            }
            None => false,
        }
    }
}
