#![doc = include_str!("../README.md")]
//!
//! # Entry points
//!
//! [`BufferPool::new`], [`BufferPool::read_buffer`] (→ [`PinnedBuffer`]),
//! [`PinnedBuffer::read`] / [`PinnedBuffer::write`] / [`PinnedBuffer::mark_dirty`],
//! the bulk operations [`BufferPool::drop_relations`], [`BufferPool::truncate`],
//! [`BufferPool::drop_database`], [`BufferPool::flush_relations`],
//! [`BufferPool::flush_database`], [`BufferPool::dirty_pages`],
//! [`BufferPool::flush_all_dirty`], [`BufferPool::verify_invariants`] for tests, and
//! [`usage`] (each thread's hits, reads, dirtied and written pages).

mod directory;
/// The PostgreSQL-style full scans, for the benchmark and this crate's tests only: behind
/// the `reference` feature (off by default), so the production pool does not contain them.
#[cfg(any(test, feature = "reference"))]
pub mod reference;
pub mod usage;

use directory::{Directory, Padded};
use parking_lot::{
    MappedRwLockReadGuard, MappedRwLockWriteGuard, Mutex, RwLock, RwLockReadGuard, RwLockWriteGuard,
};
use std::hash::{BuildHasher, Hash};
use std::path::PathBuf;
use std::sync::atomic::{AtomicU32, AtomicU8, AtomicUsize, Ordering};
use std::sync::{Arc, OnceLock};
use strata_page::{PageBuf, PageError};
use strata_smgr::{Smgr, SmgrError};
use strata_types::units::{check_range, parse_memory, UnitError};
use strata_types::{BlockNumber, BufferTag, ForkNumber, Lsn, Oid, RelKey, BLCKSZ};
use thiserror::Error;

/// Index of a buffer descriptor.
pub type BufId = u32;

/// Partitions of the mapping table (PostgreSQL's NUM_BUFFER_PARTITIONS).
pub const MAPPING_PARTITIONS: usize = 128;
/// Descriptors are allocated in chunks of this many, on first use (the first with
/// the pool).
const CHUNK: usize = 4096;
/// Maximum clock-sweep usage count (PostgreSQL's BM_MAX_USAGE_COUNT).
const MAX_USAGE: u8 = 5;

const PIN_MASK: u32 = (1 << 20) - 1;
const VALID: u32 = 1 << 29;
const DIRTY: u32 = 1 << 30;
const IO_IN_PROGRESS: u32 = 1 << 31;
const _: () = assert!(PIN_MASK & (VALID | DIRTY | IO_IN_PROGRESS) == 0);
const _: () = assert!(
    std::mem::size_of::<BufferDesc>() == 64,
    "one cache line per descriptor"
);

/// Smallest and largest `shared_buffers` accepted.
pub const SHARED_BUFFERS_MIN_BYTES: u64 = 128 << 10;
pub const SHARED_BUFFERS_MAX_BYTES: u64 = 1 << 40;

/// Parses a `shared_buffers` value (`128MB`, `8GB`, or a count of 8kB buffers) and
/// checks its range.
pub fn parse_shared_buffers(value: &str) -> std::result::Result<u64, UnitError> {
    let bytes = parse_memory("shared_buffers", value, BLCKSZ as u64)?;
    check_range(
        "shared_buffers",
        bytes,
        SHARED_BUFFERS_MIN_BYTES,
        SHARED_BUFFERS_MAX_BYTES,
    )
}

#[derive(Debug, Error)]
pub enum BufferError {
    #[error(transparent)]
    Smgr(#[from] SmgrError),
    #[error("invalid page in block {block} of relation \"{path}\" (page LSN {lsn}): {source}")]
    Corrupt {
        path: PathBuf,
        block: BlockNumber,
        lsn: Lsn,
        #[source]
        source: PageError,
    },
    #[error("no unpinned buffers available")]
    NoUnpinnedBuffers,
    #[error("could not flush WAL to {lsn} before writing a data page: {reason}")]
    Wal { lsn: Lsn, reason: String },
}

pub type Result<T> = std::result::Result<T, BufferError>;

/// The write-ahead hook: the WAL layer implements it (README rule 6).
pub trait WalFlusher: Send + Sync {
    /// Makes WAL durable at least up to `lsn`.
    fn flush_wal(&self, lsn: Lsn) -> std::result::Result<(), String>;
}

/// A hook for a pool with no WAL (tests, benchmarks of the pool alone).
pub struct NoWal;

impl WalFlusher for NoWal {
    fn flush_wal(&self, _lsn: Lsn) -> std::result::Result<(), String> {
        Ok(())
    }
}

/// How `read_buffer` fills a page that is not cached.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum ReadMode {
    /// Read it from disk and verify its checksum.
    Normal,
    /// Do not read: the page is new (being extended) or about to be overwritten whole
    /// (a full-page image). A miss yields a zeroed page; a hit yields the cached page.
    Zero,
    /// Read it; a page that fails verification, or lies past the end of the file, is
    /// replaced by zeros. For forks whose content is a hint that may be lost (the
    /// free-space and visibility maps, PostgreSQL's RBM_ZERO_ON_ERROR).
    ZeroOnError,
}

/// One buffer's descriptor. Aligned to a cache line: an invalidation or a pin then
/// touches one line, not two (56 bytes unaligned straddle a line boundary most times).
#[repr(align(64))]
struct BufferDesc {
    state: AtomicU32,
    usage: AtomicU8,
    header: Mutex<Option<BufferTag>>,
    content: RwLock<Option<Box<PageBuf>>>,
}

impl BufferDesc {
    fn new() -> BufferDesc {
        BufferDesc {
            state: AtomicU32::new(0),
            usage: AtomicU8::new(0),
            header: Mutex::new(None),
            content: RwLock::new(None),
        }
    }

    #[inline]
    fn pins(&self) -> u32 {
        self.state.load(Ordering::Acquire) & PIN_MASK
    }

    #[inline]
    fn pin(&self) -> u32 {
        let old = self.state.fetch_add(1, Ordering::Acquire);
        assert!(old & PIN_MASK < PIN_MASK, "pin count overflow");
        old
    }

    #[inline]
    fn unpin(&self) {
        let old = self.state.fetch_sub(1, Ordering::Release);
        debug_assert!(old & PIN_MASK > 0, "unpin of an unpinned buffer");
    }

    #[inline]
    fn bump_usage(&self) {
        let u = self.usage.load(Ordering::Relaxed);
        if u < MAX_USAGE {
            self.usage.store(u + 1, Ordering::Relaxed);
        }
    }
}

#[inline]
pub(crate) fn hash_of<T: Hash>(t: &T) -> u64 {
    rustc_hash::FxBuildHasher.hash_one(t)
}

/// A hasher that passes through the one `u64` a `BufferTag` feeds it (its locality
/// hash), so the mapping table keeps a relation's neighbouring blocks in adjacent
/// buckets (see `BufferTag::locality_hash`).
#[derive(Default)]
pub(crate) struct PassThroughHasher(u64);

impl std::hash::Hasher for PassThroughHasher {
    fn write(&mut self, _: &[u8]) {
        unreachable!("only BufferTag (one write_u64) is hashed with PassThroughHasher");
    }
    #[inline]
    fn write_u64(&mut self, v: u64) {
        self.0 = v;
    }
    #[inline]
    fn finish(&self) -> u64 {
        self.0
    }
}

/// One partition of the mapping table.
pub(crate) type TagMap =
    std::collections::HashMap<BufferTag, BufId, std::hash::BuildHasherDefault<PassThroughHasher>>;
type MappingPartition = Padded<RwLock<TagMap>>;
type MappingGuard<'a> = RwLockWriteGuard<'a, TagMap>;

/// One or two mapping partitions write-locked together (README rule 1's order).
struct PartitionGuards<'a>((usize, MappingGuard<'a>), Option<(usize, MappingGuard<'a>)>);

impl PartitionGuards<'_> {
    fn map(&mut self, p: usize) -> &mut TagMap {
        if self.0 .0 == p {
            &mut self.0 .1
        } else {
            let second = self.1.as_mut().expect("partition was locked");
            assert_eq!(second.0, p);
            &mut second.1
        }
    }
}

/// Counters for tests, benchmarks and monitoring.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct PoolStats {
    /// Buffers ever given a frame.
    pub frames_allocated: usize,
    pub buffers: usize,
}

/// The shared buffer pool. See the crate README for its rules.
pub struct BufferPool {
    nbuffers: usize,
    chunks: Box<[OnceLock<Box<[BufferDesc]>>]>,
    mapping: Box<[MappingPartition]>,
    dir: Directory,
    free_list: Mutex<Vec<BufId>>,
    next_unused: AtomicUsize,
    clock_hand: AtomicUsize,
    frames_allocated: AtomicUsize,
    smgr: Arc<Smgr>,
    wal: Arc<dyn WalFlusher>,
}

/// A pinned buffer. Dropping it unpins.
pub struct PinnedBuffer<'a> {
    pool: &'a BufferPool,
    /// The descriptor, resolved once: unpinning must not look it up again.
    desc: &'a BufferDesc,
    id: BufId,
    tag: BufferTag,
}

impl BufferPool {
    /// Creates a pool of `shared_buffers_bytes / 8 KiB` buffers. Nothing per buffer is
    /// allocated until the buffer is first used, but for the first chunk of
    /// descriptors (256 KiB, the same at every size).
    pub fn new(shared_buffers_bytes: u64, smgr: Arc<Smgr>, wal: Arc<dyn WalFlusher>) -> Self {
        let nbuffers = (shared_buffers_bytes / BLCKSZ as u64) as usize;
        assert!(nbuffers >= 16, "shared_buffers must be at least 128kB");
        assert!(nbuffers <= u32::MAX as usize);
        let per_part = mapping_partition_capacity(nbuffers);
        let chunks: Box<[OnceLock<Box<[BufferDesc]>>]> = (0..nbuffers.div_ceil(CHUNK))
            .map(|_| OnceLock::new())
            .collect();
        // Every server uses its first buffers at once (recovery, the catalog): the
        // first chunk is made with the pool, so the first touches of its memory are
        // paid here at every size, not by whatever reads the first page (a short
        // replay measured them, BENCHMARKS.md "C's replay at 8GB").
        chunks[0].get_or_init(new_chunk);
        BufferPool {
            nbuffers,
            chunks,
            mapping: (0..MAPPING_PARTITIONS)
                .map(|_| {
                    let map = TagMap::with_capacity_and_hasher(per_part, Default::default());
                    Padded(RwLock::new(map))
                })
                .collect(),
            dir: Directory::new(),
            free_list: Mutex::new(Vec::new()),
            next_unused: AtomicUsize::new(0),
            clock_hand: AtomicUsize::new(0),
            frames_allocated: AtomicUsize::new(0),
            smgr,
            wal,
        }
    }

    pub fn nbuffers(&self) -> usize {
        self.nbuffers
    }

    pub fn smgr(&self) -> &Arc<Smgr> {
        &self.smgr
    }

    pub fn stats(&self) -> PoolStats {
        PoolStats {
            frames_allocated: self.frames_allocated.load(Ordering::Relaxed),
            buffers: self.nbuffers,
        }
    }

    /// The descriptor of a buffer whose chunk exists (every id handed out has one).
    #[inline]
    fn desc(&self, id: BufId) -> &BufferDesc {
        let id = id as usize;
        &self.chunks[id / CHUNK]
            .get()
            .expect("descriptor chunk of a used buffer")[id % CHUNK]
    }

    fn try_desc(&self, id: usize) -> Option<&BufferDesc> {
        self.chunks[id / CHUNK].get().map(|c| &c[id % CHUNK])
    }

    #[inline]
    fn partition_index(tag: &BufferTag) -> usize {
        // Bits 32.. of the locality hash: a whole run of 16 blocks shares a partition,
        // and the bits hashbrown uses for placement (low) and tags (top 7) are others.
        (tag.locality_hash() >> 32) as usize % MAPPING_PARTITIONS
    }

    #[inline]
    fn partition(&self, tag: &BufferTag) -> &RwLock<TagMap> {
        &self.mapping[Self::partition_index(tag)].0
    }

    /// Returns the page `tag`, pinned. A hit costs one partition lookup and one atomic
    /// pin; a miss finds a victim and reads the page (or zeroes it, see [`ReadMode`]).
    #[inline]
    pub fn read_buffer(&self, tag: BufferTag, mode: ReadMode) -> Result<PinnedBuffer<'_>> {
        {
            let map = self.partition(&tag).read();
            if let Some(&id) = map.get(&tag) {
                let desc = self.desc(id);
                let old = desc.pin(); // README rule 2: pinned under the partition lock
                drop(map);
                desc.bump_usage();
                usage::count(|u| u.hit += 1); // README rule 9
                let buf = PinnedBuffer {
                    pool: self,
                    desc,
                    id,
                    tag,
                };
                if old & VALID != 0 {
                    return Ok(buf);
                }
                self.complete_io(&buf, mode)?;
                return Ok(buf);
            }
        }
        self.load(tag, mode)
    }

    /// The miss path: claim a victim, give it the new identity, then fill it.
    /// Kept out of line so the hit path stays small.
    #[inline(never)]
    #[cold]
    fn load(&self, tag: BufferTag, mode: ReadMode) -> Result<PinnedBuffer<'_>> {
        loop {
            let (id, old_tag) = self.get_victim()?;
            let desc = self.desc(id);
            if desc.state.load(Ordering::Acquire) & DIRTY != 0 {
                // Write it out with our pin held, then try again from the top: it may
                // have been pinned or dirtied again meanwhile.
                let r = self.flush_pinned(id, old_tag.expect("a dirty buffer has a tag"));
                desc.unpin();
                r?;
                continue;
            }
            // README rule 3: both partitions in ascending order, then the header.
            let new_p = Self::partition_index(&tag);
            let old_p = old_tag.map(|t| Self::partition_index(&t));
            let mut maps = self.lock_partitions(new_p, old_p);
            if let Some(&existing) = maps.map(new_p).get(&tag) {
                // Someone else loaded the page meanwhile: use theirs.
                let edesc = self.desc(existing);
                let old = edesc.pin(); // rule 2: under the partition lock
                drop(maps);
                self.release_victim(id, old_tag);
                edesc.bump_usage();
                usage::count(|u| u.hit += 1);
                let buf = PinnedBuffer {
                    pool: self,
                    desc: edesc,
                    id: existing,
                    tag,
                };
                if old & VALID == 0 {
                    self.complete_io(&buf, mode)?;
                }
                return Ok(buf);
            }
            let mut header = desc.header.lock();
            let s = desc.state.load(Ordering::Acquire);
            if *header != old_tag || s & PIN_MASK != 1 || s & DIRTY != 0 {
                drop(header);
                drop(maps);
                desc.unpin();
                continue; // someone pinned, dirtied or re-tagged it meanwhile
            }
            if let (Some(old), Some(op)) = (old_tag, old_p) {
                let removed = maps.map(op).remove(&old);
                debug_assert_eq!(removed, Some(id));
                self.dir.remove(old, id);
            }
            maps.map(new_p).insert(tag, id);
            *header = Some(tag);
            desc.state.fetch_and(!(VALID | DIRTY), Ordering::AcqRel);
            desc.state.fetch_or(IO_IN_PROGRESS, Ordering::AcqRel);
            desc.usage.store(1, Ordering::Relaxed);
            self.dir.insert(tag, id);
            drop(header);
            drop(maps);
            let buf = PinnedBuffer {
                pool: self,
                desc,
                id,
                tag,
            };
            self.do_io(&buf, mode)?;
            return Ok(buf);
        }
    }

    /// Write-locks mapping partition `a` and, if different, `b`, in ascending order.
    fn lock_partitions(&self, a: usize, b: Option<usize>) -> PartitionGuards<'_> {
        let lock = |p: usize| (p, self.mapping[p].0.write());
        match b {
            Some(b) if b < a => {
                let first = lock(b);
                PartitionGuards(first, Some(lock(a)))
            }
            Some(b) if b > a => {
                let first = lock(a);
                PartitionGuards(first, Some(lock(b)))
            }
            _ => PartitionGuards(lock(a), None),
        }
    }

    /// Gives back a victim claimed by `load` but not used.
    fn release_victim(&self, id: BufId, old_tag: Option<BufferTag>) {
        let desc = self.desc(id);
        desc.unpin();
        if old_tag.is_none() {
            self.free_list.lock().push(id);
        }
    }

    /// README rule 5: waits for another reader's I/O, or takes it over.
    #[inline(never)]
    #[cold]
    fn complete_io(&self, buf: &PinnedBuffer<'_>, mode: ReadMode) -> Result<()> {
        let desc = self.desc(buf.id);
        loop {
            {
                let _header = desc.header.lock();
                let s = desc.state.load(Ordering::Acquire);
                if s & VALID != 0 {
                    return Ok(());
                }
                if s & IO_IN_PROGRESS == 0 {
                    desc.state.fetch_or(IO_IN_PROGRESS, Ordering::AcqRel);
                    break;
                }
            }
            std::thread::yield_now();
        }
        self.do_io(buf, mode)
    }

    /// Fills a buffer whose `IO_IN_PROGRESS` we set.
    fn do_io(&self, buf: &PinnedBuffer<'_>, mode: ReadMode) -> Result<()> {
        let desc = self.desc(buf.id);
        let tag = buf.tag;
        if mode != ReadMode::Zero {
            usage::count(|u| u.read += 1); // README rule 9
        }
        let result = {
            let mut content = desc.content.write();
            let frame = content.get_or_insert_with(|| {
                self.frames_allocated.fetch_add(1, Ordering::Relaxed);
                new_frame()
            });
            match mode {
                ReadMode::Zero => {
                    frame.fill(0);
                    Ok(())
                }
                ReadMode::ZeroOnError => {
                    let ok = self
                        .smgr
                        .read(tag.rel, tag.fork, tag.block, frame)
                        .is_ok_and(|()| strata_page::verify(frame, tag.block).is_ok());
                    if !ok {
                        frame.fill(0);
                    }
                    Ok(())
                }
                ReadMode::Normal => self
                    .smgr
                    .read(tag.rel, tag.fork, tag.block, frame)
                    .map_err(BufferError::from)
                    .and_then(|()| {
                        strata_page::verify(frame, tag.block).map_err(|source| {
                            BufferError::Corrupt {
                                path: self.smgr.segment_path(
                                    tag.rel,
                                    tag.fork,
                                    tag.block.segment(),
                                ),
                                block: tag.block,
                                lsn: strata_page::lsn(frame),
                                source,
                            }
                        })
                    }),
            }
        };
        let _header = desc.header.lock();
        match result {
            Ok(()) => {
                desc.state.fetch_or(VALID, Ordering::AcqRel);
                desc.state.fetch_and(!IO_IN_PROGRESS, Ordering::AcqRel);
                Ok(())
            }
            Err(e) => {
                desc.state.fetch_and(!IO_IN_PROGRESS, Ordering::AcqRel);
                Err(e)
            }
        }
    }

    /// Claims a buffer to reuse, pinned: from the free list, then never-used buffers,
    /// then the clock sweep. Returns its id and its tag at the time of claiming.
    fn get_victim(&self) -> Result<(BufId, Option<BufferTag>)> {
        loop {
            let Some(id) = self.free_list.lock().pop() else {
                break;
            };
            let desc = self.desc(id);
            let header = desc.header.lock();
            if header.is_none() && desc.pins() == 0 {
                desc.pin();
                return Ok((id, None));
            }
        }
        if self.next_unused.load(Ordering::Relaxed) < self.nbuffers {
            let id = self.next_unused.fetch_add(1, Ordering::Relaxed);
            if id < self.nbuffers {
                let chunk = self.chunks[id / CHUNK].get_or_init(new_chunk);
                let desc = &chunk[id % CHUNK];
                let _header = desc.header.lock();
                desc.pin();
                return Ok((id as BufId, None));
            }
        }
        // Clock sweep: each pass lowers every usage count by one, so after
        // MAX_USAGE + 1 passes any unpinned buffer has been offered.
        let limit = self.nbuffers * (MAX_USAGE as usize + 2);
        for _ in 0..limit {
            let id = self.clock_hand.fetch_add(1, Ordering::Relaxed) % self.nbuffers;
            let Some(desc) = self.try_desc(id) else {
                continue;
            };
            if desc.pins() > 0 {
                continue;
            }
            let u = desc.usage.load(Ordering::Relaxed);
            if u > 0 {
                desc.usage.store(u - 1, Ordering::Relaxed);
                continue;
            }
            let header = desc.header.lock();
            if desc.pins() == 0 {
                desc.pin(); // README rule 2: under the header lock
                return Ok((id as BufId, *header));
            }
        }
        Err(BufferError::NoUnpinnedBuffers)
    }

    /// Writes a dirty buffer that we hold pinned (README rule 6). Returns whether it
    /// wrote.
    fn flush_pinned(&self, id: BufId, tag: BufferTag) -> Result<bool> {
        let desc = self.desc(id);
        let content = desc.content.read();
        if desc.state.load(Ordering::Acquire) & DIRTY == 0 {
            return Ok(false);
        }
        let mut copy = new_frame();
        copy.copy_from_slice(content.as_deref().expect("a dirty buffer has a frame"));
        let lsn = strata_page::lsn(&copy);
        self.wal
            .flush_wal(lsn)
            .map_err(|reason| BufferError::Wal { lsn, reason })?;
        strata_page::set_checksum(&mut copy, tag.block);
        self.smgr.write(tag.rel, tag.fork, tag.block, &copy)?;
        usage::count(|u| u.written += 1);
        let _header = desc.header.lock();
        desc.state.fetch_and(!DIRTY, Ordering::AcqRel);
        self.dir.clear_dirty(tag);
        Ok(true)
    }

    /// Pins buffer `id` if it still holds `tag` and is dirty, and writes it.
    fn flush_if_dirty(&self, tag: BufferTag, id: BufId) -> Result<bool> {
        let desc = self.desc(id);
        {
            let header = desc.header.lock();
            if *header != Some(tag) || desc.state.load(Ordering::Acquire) & DIRTY == 0 {
                return Ok(false);
            }
            desc.pin(); // README rule 2
        }
        let r = self.flush_pinned(id, tag);
        desc.unpin();
        r
    }

    /// Removes buffer `id` from the pool if it still holds `tag`, without writing it
    /// (README rule 7). Waits for other pins to go.
    fn invalidate(&self, tag: BufferTag, id: BufId) -> bool {
        let desc = self.desc(id);
        loop {
            let mut map = self.partition(&tag).write();
            let mut header = desc.header.lock();
            if *header != Some(tag) {
                return false; // evicted or re-tagged meanwhile
            }
            if desc.pins() > 0 {
                drop(header);
                drop(map);
                std::thread::yield_now();
                continue;
            }
            map.remove(&tag);
            self.clear_identity(desc, &mut header, tag, id);
            drop(header);
            drop(map);
            self.free_list.lock().push(id);
            return true;
        }
    }

    /// Invalidates many buffers (README rule 7), O(victims + partitions touched).
    ///
    /// Victims are grouped by mapping partition, so each partition is write-locked once;
    /// within a group a first pass of plain loads (no atomic read-modify-write, so no
    /// fence) brings the hash buckets and descriptors into cache with their misses
    /// overlapping, then a second pass removes them. One page at a time, each miss would
    /// wait for the one before behind a lock: in an 8GB pool that doubles the cost.
    fn invalidate_all(&self, victims: &[(BufferTag, BufId)]) -> usize {
        if victims.len() < 16 {
            return victims
                .iter()
                .filter(|(tag, id)| self.invalidate(*tag, *id))
                .count();
        }
        // Counting sort by partition: O(victims + partitions).
        let mut starts = [0usize; MAPPING_PARTITIONS + 1];
        let parts: Vec<u8> = victims
            .iter()
            .map(|(tag, _)| Self::partition_index(tag) as u8)
            .collect();
        for p in &parts {
            starts[*p as usize + 1] += 1;
        }
        for p in 0..MAPPING_PARTITIONS {
            starts[p + 1] += starts[p];
        }
        let mut fill = starts;
        let mut sorted = vec![0u32; victims.len()];
        for (i, p) in parts.iter().enumerate() {
            sorted[fill[*p as usize]] = i as u32;
            fill[*p as usize] += 1;
        }
        let mut freed = Vec::with_capacity(victims.len());
        let mut pinned = Vec::new();
        for p in 0..MAPPING_PARTITIONS {
            let group = &sorted[starts[p]..starts[p + 1]];
            if group.is_empty() {
                continue;
            }
            let mut map = self.mapping[p].0.write();
            for &i in group {
                let (tag, id) = &victims[i as usize];
                std::hint::black_box(map.get(tag));
                std::hint::black_box(self.desc(*id).state.load(Ordering::Relaxed));
            }
            for &i in group {
                let (tag, id) = victims[i as usize];
                let desc = self.desc(id);
                let mut header = desc.header.lock();
                if *header != Some(tag) {
                    continue; // evicted or re-tagged meanwhile
                }
                if desc.pins() > 0 {
                    pinned.push((tag, id)); // wait for it below, with no lock held
                    continue;
                }
                map.remove(&tag);
                self.clear_identity(desc, &mut header, tag, id);
                freed.push(id);
            }
        }
        let n = freed.len();
        self.free_list.lock().extend(freed);
        n + pinned
            .iter()
            .filter(|(tag, id)| self.invalidate(*tag, *id))
            .count()
    }

    /// The common end of an invalidation: the caller holds the partition write lock
    /// (entry already removed) and the header lock, saw no pins, and has detached the
    /// page from the directory. With those locks nobody can pin or flag the buffer
    /// (README rule 2), so its state is written whole rather than read-modify-written.
    fn clear_identity(
        &self,
        desc: &BufferDesc,
        header: &mut Option<BufferTag>,
        tag: BufferTag,
        id: BufId,
    ) {
        debug_assert_ne!(self.dir.get(tag).map(|(i, _)| i), Some(id), "not detached");
        let _ = (tag, id);
        *header = None;
        desc.state.store(0, Ordering::Release);
        desc.usage.store(0, Ordering::Relaxed);
    }

    /// Forgets every cached page of every fork of `rels`, dirty or not, without writing
    /// them. O(sum of the cached pages of `rels`). Returns the buffers freed.
    pub fn drop_relations(&self, rels: &[RelKey]) -> usize {
        let mut victims = Vec::new();
        for rel in rels {
            self.dir.take_relation(*rel, &mut victims);
        }
        self.invalidate_all(&victims)
    }

    /// Forgets the cached pages of each fork at or beyond its new length, in one call.
    /// O(cached pages beyond the cuts + log(cached pages of `rel`)).
    pub fn truncate(&self, rel: RelKey, forks: &[(ForkNumber, BlockNumber)]) -> usize {
        let mut victims = Vec::new();
        self.dir.take_tail(rel, forks, &mut victims);
        self.invalidate_all(&victims)
    }

    /// Forgets every cached page of database `db`, in every tablespace.
    /// O(cached pages of `db`).
    pub fn drop_database(&self, db: Oid) -> usize {
        let rels = self.dir.relations_of(db);
        self.drop_relations(&rels)
    }

    fn flush_list(&self, mut list: Vec<(BufferTag, BufId)>) -> Result<usize> {
        list.sort_unstable();
        let mut written = 0;
        for (tag, id) in list {
            if self.flush_if_dirty(tag, id)? {
                written += 1;
            }
        }
        Ok(written)
    }

    /// Writes the dirty pages of `rels`, in file order. O(dirty pages of `rels`).
    pub fn flush_relations(&self, rels: &[RelKey]) -> Result<usize> {
        let mut list = Vec::new();
        for rel in rels {
            self.dir.dirty_of(*rel, &mut list);
        }
        self.flush_list(list)
    }

    /// Writes the dirty pages of database `db` (before copying it as a template).
    /// O(dirty pages of `db` + its relations with cached pages).
    pub fn flush_database(&self, db: Oid) -> Result<usize> {
        let rels = self.dir.relations_of(db);
        self.flush_relations(&rels)
    }

    /// The dirty pages, sorted in file order (tablespace, database, relation, fork,
    /// block). O(dirty pages · log) — never a pass over the descriptors.
    pub fn dirty_pages(&self) -> Vec<(BufferTag, BufId)> {
        let mut list = Vec::new();
        self.dir.all_dirty(&mut list);
        list.sort_unstable();
        list
    }

    /// Writes every dirty page in file order (a checkpoint's buffer pass).
    /// O(dirty pages · log).
    pub fn flush_all_dirty(&self) -> Result<usize> {
        let list = self.dirty_pages();
        self.flush_list(list)
    }

    /// True if `tag` is in the mapping table (tests, benchmarks).
    pub fn is_cached(&self, tag: BufferTag) -> bool {
        self.partition(&tag).read().contains_key(&tag)
    }

    /// Checks README rule 8 over every descriptor. O(pool): for tests only.
    /// Must run with no concurrent activity.
    pub fn verify_invariants(&self) {
        let (dir_cached, dir_dirty) = self.dir.verify();
        let mut tagged = 0;
        let mut dirty = 0;
        for id in 0..self.nbuffers {
            let Some(desc) = self.try_desc(id) else {
                continue;
            };
            let header = desc.header.lock();
            let s = desc.state.load(Ordering::Acquire);
            assert_eq!(s & PIN_MASK, 0, "buffer {id} still pinned");
            assert_eq!(s & IO_IN_PROGRESS, 0, "buffer {id} has I/O in progress");
            match *header {
                None => assert_eq!(s & (VALID | DIRTY), 0, "untagged buffer {id} valid/dirty"),
                Some(tag) => {
                    tagged += 1;
                    assert_eq!(
                        self.partition(&tag).read().get(&tag),
                        Some(&(id as BufId)),
                        "{tag} (buffer {id}) missing from the mapping table"
                    );
                    let (dir_id, dir_dirty) = self.dir.get(tag).unwrap_or_else(|| {
                        panic!("{tag} (buffer {id}) missing from the directory")
                    });
                    assert_eq!(dir_id, id as BufId);
                    assert_eq!(dir_dirty, s & DIRTY != 0, "dirty set disagrees for {tag}");
                    if s & DIRTY != 0 {
                        assert!(s & VALID != 0, "dirty but invalid {tag}");
                        dirty += 1;
                    }
                }
            }
        }
        let mapped: usize = self.mapping.iter().map(|p| p.0.read().len()).sum();
        assert_eq!(
            mapped, tagged,
            "mapping table has entries for untagged buffers"
        );
        assert_eq!(
            dir_cached, tagged,
            "directory has entries for untagged buffers"
        );
        assert_eq!(dir_dirty, dirty);
    }

    /// Iterates over the descriptors that exist, with their tags (for `reference`).
    #[cfg(any(test, feature = "reference"))]
    fn for_each_tagged(&self, mut f: impl FnMut(BufId, BufferTag, bool)) {
        for id in 0..self.nbuffers {
            let Some(desc) = self.try_desc(id) else {
                continue;
            };
            let header = desc.header.lock();
            if let Some(tag) = *header {
                let dirty = desc.state.load(Ordering::Acquire) & DIRTY != 0;
                f(id as BufId, tag, dirty);
            }
        }
    }

    /// Detaches a set of (tag, id) pairs from the directory and invalidates them (for
    /// `reference`, which found them by scanning).
    #[cfg(any(test, feature = "reference"))]
    fn detach_and_invalidate(&self, victims: &[(BufferTag, BufId)]) -> usize {
        victims
            .iter()
            .filter(|(tag, id)| {
                self.dir.remove(*tag, *id);
                self.invalidate(*tag, *id)
            })
            .count()
    }
}

/// Entries each mapping partition is sized for at start-up: its share of the buffers
/// plus a quarter for uneven hashing, so the tables never grow.
pub(crate) fn mapping_partition_capacity(nbuffers: usize) -> usize {
    nbuffers / MAPPING_PARTITIONS + nbuffers / MAPPING_PARTITIONS / 4 + 16
}

fn new_chunk() -> Box<[BufferDesc]> {
    (0..CHUNK).map(|_| BufferDesc::new()).collect()
}

fn new_frame() -> Box<PageBuf> {
    vec![0u8; BLCKSZ]
        .into_boxed_slice()
        .try_into()
        .expect("BLCKSZ bytes")
}

impl<'a> PinnedBuffer<'a> {
    #[inline]
    pub fn tag(&self) -> BufferTag {
        self.tag
    }

    #[inline]
    pub fn id(&self) -> BufId {
        self.id
    }

    #[inline]
    fn desc(&self) -> &'a BufferDesc {
        self.desc
    }

    /// Shares the content lock and returns the page.
    pub fn read(&self) -> MappedRwLockReadGuard<'a, PageBuf> {
        RwLockReadGuard::map(self.desc().content.read(), |f| {
            f.as_deref().expect("a valid buffer has a frame")
        })
    }

    /// Takes the content lock exclusively and returns the page for changing.
    pub fn write(&self) -> MappedRwLockWriteGuard<'a, PageBuf> {
        RwLockWriteGuard::map(self.desc().content.write(), |f| {
            f.as_deref_mut().expect("a valid buffer has a frame")
        })
    }

    /// Marks the page dirty. The `guard` proves the content lock is held exclusively
    /// (README rule 4). O(1) if already dirty, else O(log) in the directory.
    pub fn mark_dirty(&self, guard: &MappedRwLockWriteGuard<'a, PageBuf>) {
        let _ = guard;
        let desc = self.desc();
        if desc.state.load(Ordering::Acquire) & DIRTY != 0 {
            return; // only we (exclusive lock) or a flusher (not running) change it
        }
        let _header = desc.header.lock();
        debug_assert_eq!(*_header, Some(self.tag));
        let old = desc.state.fetch_or(DIRTY, Ordering::AcqRel);
        if old & DIRTY == 0 {
            self.pool.dir.mark_dirty(self.tag); // rule 1: header → directory
            usage::count(|u| u.dirtied += 1);
        }
    }

    /// True if the buffer is dirty (tests).
    pub fn is_dirty(&self) -> bool {
        self.desc().state.load(Ordering::Acquire) & DIRTY != 0
    }
}

impl Drop for PinnedBuffer<'_> {
    #[inline]
    fn drop(&mut self) {
        self.desc().unpin();
    }
}

#[cfg(test)]
mod tests;
