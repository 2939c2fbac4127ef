//! Unit tests of the pool against a real storage manager on a temporary directory.

use super::*;
use std::sync::atomic::AtomicU64;
use strata_smgr::StdVfs;
use strata_types::{RelFileNumber, DEFAULT_TABLESPACE};

struct Env {
    _dir: tempfile::TempDir,
    smgr: Arc<Smgr>,
}

fn env() -> Env {
    let dir = tempfile::tempdir().unwrap();
    let smgr = Arc::new(Smgr::open(dir.path(), Arc::new(StdVfs), 64).unwrap());
    smgr.create_database_dir(DEFAULT_TABLESPACE, Oid(5))
        .unwrap();
    smgr.create_database_dir(DEFAULT_TABLESPACE, Oid(6))
        .unwrap();
    Env { _dir: dir, smgr }
}

fn rel(db: u32, n: u64) -> RelKey {
    RelKey::new(DEFAULT_TABLESPACE, Oid(db), RelFileNumber(n))
}

fn tag(r: RelKey, f: ForkNumber, b: u32) -> BufferTag {
    BufferTag::new(r, f, BlockNumber(b))
}

/// Extends `r`'s fork through the pool with pages holding `value` in their first item.
fn fill(pool: &BufferPool, r: RelKey, f: ForkNumber, blocks: u32, value: u64) {
    for b in 0..blocks {
        let buf = pool.read_buffer(tag(r, f, b), ReadMode::Zero).unwrap();
        let mut page = buf.write();
        strata_page::init(&mut page, 0);
        strata_page::add_item(&mut page, &value.to_le_bytes()).unwrap();
        buf.mark_dirty(&page);
    }
}

fn value_of(pool: &BufferPool, t: BufferTag) -> u64 {
    let buf = pool.read_buffer(t, ReadMode::Normal).unwrap();
    let page = buf.read();
    u64::from_le_bytes(strata_page::item(&page, 0).unwrap().try_into().unwrap())
}

#[test]
fn shared_buffers_setting() {
    assert_eq!(parse_shared_buffers("128MB").unwrap(), 128 << 20);
    assert_eq!(parse_shared_buffers("16GB").unwrap(), 16 << 30);
    assert!(parse_shared_buffers("64kB").is_err());
    assert!(parse_shared_buffers("2TB").is_err());
    assert!(parse_shared_buffers("lots").is_err());
}

#[test]
fn write_evict_and_read_back_through_disk() {
    let e = env();
    let pool = BufferPool::new(16 * 8192, e.smgr.clone(), Arc::new(NoWal));
    let r = rel(5, 1);
    fill(&pool, r, ForkNumber::Main, 100, 7); // 100 pages through 16 buffers
    pool.verify_invariants();
    for b in 0..100 {
        assert_eq!(value_of(&pool, tag(r, ForkNumber::Main, b)), 7);
    }
    assert_eq!(e.smgr.nblocks(r, ForkNumber::Main).unwrap(), 100);
    assert!(pool.stats().frames_allocated <= 16);
    pool.verify_invariants();
}

#[test]
fn frames_are_allocated_lazily() {
    let e = env();
    let pool = BufferPool::new(1 << 30, e.smgr.clone(), Arc::new(NoWal));
    assert_eq!(pool.stats().frames_allocated, 0);
    fill(&pool, rel(5, 1), ForkNumber::Main, 10, 1);
    assert_eq!(pool.stats().frames_allocated, 10);
}

#[test]
fn drop_forgets_pages_without_writing_them() {
    let e = env();
    let pool = BufferPool::new(64 * 8192, e.smgr.clone(), Arc::new(NoWal));
    let (a, b) = (rel(5, 1), rel(5, 2));
    fill(&pool, a, ForkNumber::Main, 5, 1);
    fill(&pool, a, ForkNumber::Fsm, 2, 1);
    fill(&pool, b, ForkNumber::Main, 5, 2);
    assert_eq!(pool.drop_relations(&[a]), 7);
    for blk in 0..5 {
        assert!(!pool.is_cached(tag(a, ForkNumber::Main, blk)));
        assert!(pool.is_cached(tag(b, ForkNumber::Main, blk)));
    }
    assert!(
        !e.smgr.exists(a, ForkNumber::Main),
        "dropped dirty pages never written"
    );
    assert_eq!(
        pool.flush_all_dirty().unwrap(),
        5,
        "only b's pages remain dirty"
    );
    pool.verify_invariants();
}

#[test]
fn truncate_cuts_every_fork_in_one_call() {
    let e = env();
    let pool = BufferPool::new(64 * 8192, e.smgr.clone(), Arc::new(NoWal));
    let r = rel(5, 3);
    fill(&pool, r, ForkNumber::Main, 10, 1);
    fill(&pool, r, ForkNumber::Fsm, 3, 1);
    fill(&pool, r, ForkNumber::Vm, 2, 1);
    let n = pool.truncate(
        r,
        &[
            (ForkNumber::Main, BlockNumber(4)),
            (ForkNumber::Fsm, BlockNumber(1)),
            (ForkNumber::Vm, BlockNumber(0)),
        ],
    );
    assert_eq!(n, 6 + 2 + 2);
    assert!(pool.is_cached(tag(r, ForkNumber::Main, 3)));
    assert!(!pool.is_cached(tag(r, ForkNumber::Main, 4)));
    assert!(pool.is_cached(tag(r, ForkNumber::Fsm, 0)));
    assert!(!pool.is_cached(tag(r, ForkNumber::Vm, 0)));
    assert_eq!(pool.dirty_pages().len(), 5);
    pool.verify_invariants();
}

#[test]
fn drop_database_spans_tablespaces() {
    let e = env();
    let loc = tempfile::tempdir().unwrap();
    e.smgr.create_tablespace(Oid(40000), loc.path()).unwrap();
    e.smgr.create_database_dir(Oid(40000), Oid(5)).unwrap();
    let pool = BufferPool::new(64 * 8192, e.smgr.clone(), Arc::new(NoWal));
    let in_spc = RelKey::new(Oid(40000), Oid(5), RelFileNumber(9));
    fill(&pool, rel(5, 1), ForkNumber::Main, 3, 1);
    fill(&pool, in_spc, ForkNumber::Main, 3, 1);
    fill(&pool, rel(6, 1), ForkNumber::Main, 3, 1);
    assert_eq!(pool.drop_database(Oid(5)), 6);
    assert!(!pool.is_cached(tag(in_spc, ForkNumber::Main, 0)));
    assert!(pool.is_cached(tag(rel(6, 1), ForkNumber::Main, 0)));
    assert_eq!(pool.drop_database(Oid(5)), 0);
    pool.verify_invariants();
}

#[test]
fn dirty_pages_come_sorted_and_flush_clears_them() {
    let e = env();
    let pool = BufferPool::new(64 * 8192, e.smgr.clone(), Arc::new(NoWal));
    for n in [9, 3, 6] {
        fill(&pool, rel(5, n), ForkNumber::Main, 3, n);
    }
    let dirty = pool.dirty_pages();
    assert_eq!(dirty.len(), 9);
    assert!(dirty.windows(2).all(|w| w[0].0 < w[1].0));
    assert_eq!(pool.flush_relations(&[rel(5, 3)]).unwrap(), 3);
    assert_eq!(pool.dirty_pages().len(), 6);
    assert_eq!(pool.flush_database(Oid(5)).unwrap(), 6);
    assert!(pool.dirty_pages().is_empty());
    assert_eq!(reference::dirty_pages(&pool).len(), 0);
    pool.verify_invariants();
    // what was written reads back from disk with a valid checksum
    let fresh = BufferPool::new(64 * 8192, e.smgr.clone(), Arc::new(NoWal));
    assert_eq!(value_of(&fresh, tag(rel(5, 6), ForkNumber::Main, 2)), 6);
}

#[test]
fn corrupt_page_is_an_error_naming_file_and_block() {
    let e = env();
    let pool = BufferPool::new(64 * 8192, e.smgr.clone(), Arc::new(NoWal));
    let r = rel(5, 4);
    fill(&pool, r, ForkNumber::Main, 2, 1);
    pool.flush_all_dirty().unwrap();
    pool.drop_relations(&[r]);
    let path = e.smgr.segment_path(r, ForkNumber::Main, 0);
    let mut bytes = std::fs::read(&path).unwrap();
    bytes[8192 + 4000] ^= 0xFF;
    std::fs::write(&path, bytes).unwrap();
    assert_eq!(value_of(&pool, tag(r, ForkNumber::Main, 0)), 1);
    let err = pool
        .read_buffer(tag(r, ForkNumber::Main, 1), ReadMode::Normal)
        .err()
        .expect("corruption detected");
    let msg = err.to_string();
    assert!(msg.contains("block 1") && msg.contains("base/5/4"), "{msg}");
    // the failed buffer is not left valid: a second read fails the same way
    assert!(pool
        .read_buffer(tag(r, ForkNumber::Main, 1), ReadMode::Normal)
        .is_err());
    pool.verify_invariants();
}

#[test]
fn all_pinned_means_no_victim() {
    let e = env();
    let pool = BufferPool::new(16 * 8192, e.smgr.clone(), Arc::new(NoWal));
    let r = rel(5, 5);
    let pins: Vec<_> = (0..16)
        .map(|b| {
            pool.read_buffer(tag(r, ForkNumber::Main, b), ReadMode::Zero)
                .unwrap()
        })
        .collect();
    assert!(matches!(
        pool.read_buffer(tag(r, ForkNumber::Main, 16), ReadMode::Zero),
        Err(BufferError::NoUnpinnedBuffers)
    ));
    drop(pins);
    assert!(pool
        .read_buffer(tag(r, ForkNumber::Main, 16), ReadMode::Zero)
        .is_ok());
}

/// Records the highest LSN flushed and checks each page written is covered by it.
struct RecordingWal {
    flushed: AtomicU64,
}

impl WalFlusher for RecordingWal {
    fn flush_wal(&self, lsn: Lsn) -> std::result::Result<(), String> {
        self.flushed.fetch_max(lsn.0, Ordering::SeqCst);
        Ok(())
    }
}

struct FailingWal;

impl WalFlusher for FailingWal {
    fn flush_wal(&self, _: Lsn) -> std::result::Result<(), String> {
        Err("disk full".into())
    }
}

#[test]
fn wal_is_flushed_before_data() {
    let e = env();
    let wal = Arc::new(RecordingWal {
        flushed: AtomicU64::new(0),
    });
    let pool = BufferPool::new(16 * 8192, e.smgr.clone(), wal.clone());
    let t = tag(rel(5, 6), ForkNumber::Main, 0);
    {
        let buf = pool.read_buffer(t, ReadMode::Zero).unwrap();
        let mut page = buf.write();
        strata_page::init(&mut page, 0);
        strata_page::set_lsn(&mut page, Lsn(0x1234));
        buf.mark_dirty(&page);
    }
    pool.flush_all_dirty().unwrap();
    assert_eq!(wal.flushed.load(Ordering::SeqCst), 0x1234);

    let failing = BufferPool::new(16 * 8192, e.smgr.clone(), Arc::new(FailingWal));
    let t2 = tag(rel(5, 7), ForkNumber::Main, 0);
    {
        let buf = failing.read_buffer(t2, ReadMode::Zero).unwrap();
        let mut page = buf.write();
        strata_page::init(&mut page, 0);
        buf.mark_dirty(&page);
    }
    assert!(matches!(
        failing.flush_all_dirty(),
        Err(BufferError::Wal { .. })
    ));
    assert!(
        !e.smgr.exists(t2.rel, ForkNumber::Main),
        "no data before its WAL"
    );
    assert_eq!(
        failing.dirty_pages().len(),
        1,
        "still dirty after the failure"
    );
}

#[test]
fn reference_scans_agree_with_the_directory() {
    let e = env();
    let pool = BufferPool::new(256 * 8192, e.smgr.clone(), Arc::new(NoWal));
    for n in 1..=6 {
        fill(&pool, rel(5 + (n as u32 % 2), n), ForkNumber::Main, 10, n);
    }
    assert_eq!(reference::dirty_pages(&pool), pool.dirty_pages());
    assert_eq!(reference::drop_relations(&pool, &[rel(6, 1)]), 10);
    assert_eq!(
        reference::truncate(&pool, rel(5, 2), &[(ForkNumber::Main, BlockNumber(3))]),
        7
    );
    assert_eq!(reference::drop_database(&pool, Oid(6)), 20);
    pool.verify_invariants();
    assert_eq!(pool.dirty_pages().len(), 3 + 10 + 10);
}
