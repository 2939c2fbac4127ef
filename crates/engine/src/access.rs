//! Heap, free-space map and visibility map, through the buffer pool; the WAL-logged
//! page change (engine rule 2).
//!
//! Entry points: [`log_block`], [`insert`], [`scan`], [`delete_where`], [`vacuum_rel`],
//! [`truncate_apply`]; the redo of the records written here, [`heap_redo`] (Heap) and
//! [`smgr_redo`] (Storage).
//!
//! Map forks (not PostgreSQL's tree-shaped FSM: one level is enough here):
//!
//! | fork | page content (after the 24-byte header) | per heap block |
//! |------|------------------------------------------|----------------|
//! | FSM | one byte per heap block: free bytes / 32 | [`FSM_PER_PAGE`] per page |
//! | VM  | one bit per heap block: all-visible | [`VM_PER_PAGE`] per page |
//!
//! Rules:
//! 1. The FSM is a hint: it is not WAL-logged, and a page of it that fails its checksum
//!    reads as zeros. An insert re-checks the page's real free space.
//! 2. The VM is WAL-logged through the heap records that set (prune) or clear (insert,
//!    delete) a bit; a VM page's LSN is that of the last such record, so it is never
//!    written before the record. A VM page that fails its checksum reads as zeros:
//!    a lost bit only means "not known all-visible", which is always safe. A bit is
//!    cleared inside the heap change that clears it: the VM page is pinned before the
//!    change, locked with the heap page across the record, and gets the record's LSN
//!    before either lock is released (PostgreSQL's visibilitymap_clear in heap_insert).
//!    Cleared after the record instead, a checkpoint could take its redo point past
//!    the record and a crash lose the clear (tests/vm_clear.rs pins this).
//! 3. Extension writes a zero page through the storage manager first (PostgreSQL's
//!    smgrextend), so the file's length always covers every page in the pool.
//! 4. Several rows inserted together ([`insert_many`]) go into each page as many as
//!    fit, with one Heap/MULTI_INSERT record per page (PostgreSQL's heap_multi_insert,
//!    which PostgreSQL uses for COPY only; here every multi-row INSERT too).

use crate::heap::{self, page_tuples, PD_ALL_VISIBLE};
use crate::records::{
    BlockRef, HeapBody, HeapDelete, HeapInsert, HeapMultiInsert, HeapPrune, PendingCreate,
    SmgrCreate, SmgrTruncate, HEAP_INSERT, HEAP_MULTI_INSERT, RM_HEAP, RM_SMGR, SMGR_CREATE,
    SMGR_TRUNCATE,
};
use crate::redo::{unknown_record, RedoContext};
use crate::{corrupt, EngineError, Result, Shared};
use strata_buffer::{PinnedBuffer, ReadMode};
use strata_page::{PageBuf, HEADER_BYTES};
use strata_types::{BlockNumber, BufferTag, ForkNumber, Lsn, RelKey, Xid, BLCKSZ};
use strata_wal::{Record, RmgrId};

pub const MAP_BYTES: usize = BLCKSZ - HEADER_BYTES;
pub const FSM_PER_PAGE: u32 = MAP_BYTES as u32;
pub const VM_PER_PAGE: u32 = MAP_BYTES as u32 * 8;

pub static ZERO_PAGE: PageBuf = [0u8; BLCKSZ];

pub fn fsm_len(heap_blocks: u32) -> u32 {
    heap_blocks.div_ceil(FSM_PER_PAGE)
}
pub fn vm_len(heap_blocks: u32) -> u32 {
    heap_blocks.div_ceil(VM_PER_PAGE)
}

fn tag(rel: RelKey, fork: ForkNumber, block: u32) -> BufferTag {
    BufferTag::new(rel, fork, BlockNumber(block))
}

/// Step 5 of the WAL-logged change (engine rule 2): decides the full-page image under
/// the redo-pointer lock, inserts the record, sets the page LSN to its end. The caller
/// holds the page's content lock exclusively and has applied the change and marked the
/// page dirty. A failed insert here would leave a change without its record, so it is
/// a PANIC (PostgreSQL's critical section, engine rule 7): the engine latches and no
/// page is written again; every fallible check comes before.
#[allow(clippy::too_many_arguments)]
pub fn log_block(
    sh: &Shared,
    t: BufferTag,
    page: &mut PageBuf,
    will_init: bool,
    rmgr: RmgrId,
    info: u8,
    xid: Xid,
    encode: impl FnOnce(&BlockRef) -> Vec<u8>,
) -> Result<Lsn> {
    if t.rel.is_temp() {
        return Ok(Lsn(0)); // a temporary table's pages are never logged (smgr rule 8)
    }
    let redo = sh.redo_ptr.read();
    let image = (sh.settings.full_page_writes && !will_init && strata_page::lsn(page) <= *redo)
        .then(|| Box::new(*page));
    let bref = BlockRef {
        tag: t,
        will_init,
        image,
    };
    let payload = encode(&bref);
    let (_, end) = sh.wal_insert(rmgr, info, xid.0, &payload)?;
    strata_page::set_lsn(page, end);
    Ok(end)
}

/// A visitor of tuples: (block, item index, tuple bytes).
pub type TupleVisitor<'a> = dyn FnMut(BlockNumber, u16, &[u8]) -> Result<()> + 'a;

/// Which transactions a scan counts as committed: those committed when it began
/// (engine rule 9). With one writer at a time, that is every xid below `xmax` but the
/// one running then. Registered while it lives, so VACUUM keeps what it may still see.
pub struct Snapshot<'a> {
    sh: &'a Shared,
    xmax: Xid,
    running: Option<Xid>,
}

impl<'a> Snapshot<'a> {
    /// Taken under the counters lock, which `Txn::xid` holds while it assigns an xid
    /// and marks it running: no xid can be assigned but not yet running here.
    pub(crate) fn take(sh: &'a Shared) -> Snapshot<'a> {
        let c = sh.counters.lock();
        let running = sh.running.lock().as_ref().map(|(x, _)| *x);
        let snap = Snapshot {
            sh,
            xmax: c.next_xid,
            running,
        };
        *sh.snapshots.lock().entry(snap.horizon()).or_default() += 1;
        snap
    }

    /// Standby rule 9: replay has cancelled this snapshot (it must remove rows the
    /// snapshot may see). One atomic load; never true on a primary.
    pub fn cancelled_by_recovery(&self) -> bool {
        let w = self
            .sh
            .recovery
            .conflict_horizon
            .load(std::sync::atomic::Ordering::Acquire);
        w != 0 && self.horizon().0 <= w
    }

    /// Every xid below this is, for this snapshot, as committed or aborted as it is now.
    fn horizon(&self) -> Xid {
        self.running.unwrap_or(self.xmax)
    }

    fn committed(&self, x: Xid) -> bool {
        x < self.xmax && Some(x) != self.running && self.sh.clog.is_committed(x)
    }
}

/// A second hold of the same snapshot (a REPEATABLE READ transaction's, lent to
/// each statement and to its writes), registered as the first is.
impl Clone for Snapshot<'_> {
    fn clone(&self) -> Self {
        *self.sh.snapshots.lock().entry(self.horizon()).or_default() += 1;
        Snapshot {
            sh: self.sh,
            xmax: self.xmax,
            running: self.running,
        }
    }
}

impl Drop for Snapshot<'_> {
    fn drop(&mut self) {
        let mut m = self.sh.snapshots.lock();
        let h = self.horizon();
        if let Some(n) = m.get_mut(&h) {
            *n -= 1;
            if *n == 0 {
                m.remove(&h);
            }
        }
    }
}

/// The oldest horizon of any live snapshot (or the next xid), and of what standbys
/// said their snapshots need (`hot_standby_feedback`): a tuple whose deleter
/// committed below it is invisible to every scan, now and later. O(log snapshots +
/// standbys).
pub(crate) fn removal_horizon(sh: &Shared) -> Xid {
    let next = sh.counters.lock().next_xid;
    let oldest = sh.snapshots.lock().keys().next().copied();
    let held = sh.horizon_hold.get().and_then(|f| f());
    [oldest, held].into_iter().flatten().fold(next, Xid::min)
}

/// Visibility for a reader (`my` = None) or for the writer `my`, as of `snap`.
pub fn visible(snap: &Snapshot<'_>, t: &[u8], my: Option<Xid>) -> bool {
    visible_memo(snap, t, my, &mut XidMemo::default())
}

/// The last transaction a scan asked the commit log about, and the answer for
/// its snapshot. A page's tuples mostly share their inserter, so a page costs one
/// commit-log read per run of them rather than one or two per tuple. The answer
/// cannot change while the snapshot lives: every transaction below its xmax but
/// the one it saw running has ended.
#[derive(Default)]
pub struct XidMemo {
    last: Option<(Xid, bool)>,
}

impl XidMemo {
    fn committed(&mut self, snap: &Snapshot<'_>, x: Xid) -> bool {
        match self.last {
            Some((l, c)) if l == x => c,
            _ => {
                let c = snap.committed(x);
                self.last = Some((x, c));
                c
            }
        }
    }
}

/// [`visible`] with a memo kept across a scan's tuples.
pub fn visible_memo(snap: &Snapshot<'_>, t: &[u8], my: Option<Xid>, memo: &mut XidMemo) -> bool {
    let xmin = heap::tuple_xmin(t);
    let xmax = heap::tuple_xmax(t);
    let mine = |x: Xid| Some(x) == my;
    if !(mine(xmin) || memo.committed(snap, xmin)) {
        return false;
    }
    xmax == Xid::INVALID || !(mine(xmax) || memo.committed(snap, xmax))
}

/// Calls `f(block, item, tuple)` for each tuple visible to `my` as of the scan's start
/// (engine rule 9). O(pages of `rel`).
pub fn scan(sh: &Shared, rel: RelKey, my: Option<Xid>, f: &mut TupleVisitor<'_>) -> Result<()> {
    let snap = Snapshot::take(sh);
    let n = sh.smgr.nblocks(rel, ForkNumber::Main)?;
    for b in 0..n {
        scan_page(sh, rel, b, &snap, my, f)?;
    }
    Ok(())
}

/// Calls `f` for each tuple of block `b` visible to `my` as of `snap`, under the
/// page's shared content lock. The caller holds the drop lock (engine rule 8) and
/// knows `b` is below the relation's length. O(tuples of the page).
pub fn scan_page(
    sh: &Shared,
    rel: RelKey,
    b: u32,
    snap: &Snapshot<'_>,
    my: Option<Xid>,
    f: &mut TupleVisitor<'_>,
) -> Result<()> {
    let buf = sh
        .pool
        .read_buffer(tag(rel, ForkNumber::Main, b), ReadMode::Normal)?;
    let g = buf.read();
    if snap.cancelled_by_recovery() {
        // Standby rule 9: checked under the page lock, which replay's prune needs.
        return Err(EngineError::RecoveryConflict);
    }
    let mut memo = XidMemo::default();
    let tuples = page_tuples(&g).map_err(corrupt)?;
    for (k, (off, t)) in tuples.iter().enumerate() {
        if let Some((_, ahead)) = tuples.get(k + PREFETCH_AHEAD) {
            prefetch(ahead);
        }
        if visible_memo(snap, t, my, &mut memo) {
            f(BlockNumber(b), *off, t)?;
        }
    }
    Ok(())
}

/// How many tuples ahead of the one visited a page scan asks the CPU to load.
const PREFETCH_AHEAD: usize = 4;

/// Asks the CPU to bring `t`'s cache lines in: a page's tuples are read one after
/// another, and without it each tuple's first read waits for memory
/// (`select count(*)` of TPC-H's 6 million lineitems, one process: 555 ms without,
/// 303 ms with, PostgreSQL 15 347 ms; docs/BENCHMARKS.md).
#[inline]
#[allow(unsafe_code)]
fn prefetch(t: &[u8]) {
    #[cfg(target_arch = "x86_64")]
    {
        use std::arch::x86_64::{_mm_prefetch, _MM_HINT_T0};
        for line in t.chunks(64) {
            // SAFETY: a prefetch is a hint that never faults, whatever the
            // address; SSE, its instruction's feature, is part of every x86_64 CPU.
            unsafe { _mm_prefetch::<_MM_HINT_T0>(line.as_ptr().cast()) };
        }
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = t;
}

/// Inserts a tuple: into the relation's target block, else a block the FSM says has
/// room, else a new block (rule 3). Returns where it went.
pub fn insert(sh: &Shared, rel: RelKey, xid: Xid, tuple: &[u8]) -> Result<crate::catalog::Tid> {
    if tuple.len() > heap::TUPLE_MAX_BYTES {
        return Err(EngineError::RowTooBig(tuple.len()));
    }
    let (block, offsets) = insert_batch(sh, rel, xid, &[tuple])?;
    Ok(crate::catalog::Tid {
        block: BlockNumber(block),
        offset: offsets[0],
    })
}

/// Inserts tuples, as many into each page as fit, with one record per page (rule 4:
/// PostgreSQL's heap_multi_insert). Returns where each went. O(tuples + pages).
pub fn insert_many(
    sh: &Shared,
    rel: RelKey,
    xid: Xid,
    tuples: &[&[u8]],
) -> Result<Vec<crate::catalog::Tid>> {
    if let Some(t) = tuples.iter().find(|t| t.len() > heap::TUPLE_MAX_BYTES) {
        return Err(EngineError::RowTooBig(t.len()));
    }
    let mut rest = tuples;
    let mut tids = Vec::with_capacity(tuples.len());
    while !rest.is_empty() {
        let (block, offsets) = insert_batch(sh, rel, xid, rest)?;
        rest = &rest[offsets.len()..];
        tids.extend(offsets.into_iter().map(|offset| crate::catalog::Tid {
            block: BlockNumber(block),
            offset,
        }));
    }
    Ok(tids)
}

/// Inserts the first of `tuples` and as many after it as fit into one page: the
/// target block, else one the free-space map names, else a new one. Returns the
/// block and the item indexes.
fn insert_batch(sh: &Shared, rel: RelKey, xid: Xid, tuples: &[&[u8]]) -> Result<(u32, Vec<u16>)> {
    let first = tuples[0]; // sizes checked by the callers
    let nblocks = sh.smgr.nblocks(rel, ForkNumber::Main)?;
    let cand_was_target = sh.targblock.lock().get(&rel).copied();
    let mut cand = cand_was_target
        .filter(|b| *b < nblocks)
        .or(nblocks.checked_sub(1));
    let mut tries = 0;
    while let Some(b) = cand {
        let buf = sh
            .pool
            .read_buffer(tag(rel, ForkNumber::Main, b), ReadMode::Normal)?;
        let g = buf.write();
        if strata_page::free_space(&g) >= first.len() {
            let offs = insert_on(sh, &buf, g, false, xid, tuples)?;
            if cand_was_target != Some(b) {
                sh.targblock.lock().insert(rel, b);
            }
            return Ok((b, offs));
        }
        let free = strata_page::free_space(&g);
        drop(g);
        drop(buf);
        fsm_set(sh, rel, b, free)?;
        tries += 1;
        cand = if tries < 4 {
            fsm_search(sh, rel, first.len() + strata_page::ITEM_ID_BYTES, nblocks)?
        } else {
            None
        };
    }
    let b = sh.smgr.nblocks(rel, ForkNumber::Main)?;
    sh.smgr
        .extend(rel, ForkNumber::Main, BlockNumber(b), &ZERO_PAGE)?;
    let buf = sh
        .pool
        .read_buffer(tag(rel, ForkNumber::Main, b), ReadMode::Zero)?;
    let mut g = buf.write();
    strata_page::init(&mut g, 0);
    let offs = insert_on(sh, &buf, g, true, xid, tuples)?;
    sh.targblock.lock().insert(rel, b);
    Ok((b, offs))
}

/// Inserts the first tuple (which fits) and those after it while they fit, then logs
/// them: a Heap/INSERT for one, a Heap/MULTI_INSERT for several.
fn insert_on(
    sh: &Shared,
    buf: &PinnedBuffer<'_>,
    mut g: parking_lot::MappedRwLockWriteGuard<'_, PageBuf>,
    will_init: bool,
    xid: Xid,
    tuples: &[&[u8]],
) -> Result<Vec<u16>> {
    let t = buf.tag();
    let vm = vm_pin_if_visible(sh, t.rel, t.block.0, &g)?; // fallible: before the change
    let mut vm_g = vm.as_ref().map(|b| b.write());
    let mut offs = Vec::new();
    let mut vm_cleared = false;
    for tuple in tuples {
        if strata_page::free_space(&g) < tuple.len() {
            break;
        }
        let (off, cleared) = heap::page_insert(&mut g, tuple).expect("free space checked");
        vm_cleared |= cleared;
        offs.push(off);
    }
    buf.mark_dirty(&g);
    if let (Some(vb), Some(vg)) = (&vm, &mut vm_g) {
        vm_clear_bit(vg, t.block.0);
        vb.mark_dirty(vg);
    }
    let items: Vec<(u16, &[u8])> = offs.iter().copied().zip(tuples.iter().copied()).collect();
    let info = if items.len() == 1 {
        HEAP_INSERT
    } else {
        HEAP_MULTI_INSERT
    };
    let end = log_block(sh, t, &mut g, will_init, RM_HEAP, info, xid, |b| {
        crate::records::encode_inserts(b, vm_cleared, &items)
    })?;
    if let Some(vg) = &mut vm_g {
        raise_lsn(vg, end);
    }
    Ok(offs)
}

/// The VM page of a heap block, pinned (not locked) if the heap page is all-visible:
/// a change to the page will clear the block's bit (rule 2). Pinned before the
/// change, since pinning may read from disk and fail.
fn vm_pin_if_visible<'a>(
    sh: &'a Shared,
    rel: RelKey,
    block: u32,
    heap_page: &PageBuf,
) -> Result<Option<PinnedBuffer<'a>>> {
    if strata_page::flags(heap_page) & PD_ALL_VISIBLE == 0 {
        return Ok(None);
    }
    map_page(sh, rel, ForkNumber::Vm, block / VM_PER_PAGE, false)
}

/// Clears a heap block's bit on its (locked) VM page.
fn vm_clear_bit(g: &mut PageBuf, block: u32) {
    let bit = block % VM_PER_PAGE;
    if !strata_page::is_new(g) {
        g[HEADER_BYTES + (bit / 8) as usize] &= !(1u8 << (bit % 8));
    }
}

fn raise_lsn(g: &mut PageBuf, lsn: Lsn) {
    if strata_page::lsn(g) < lsn {
        strata_page::set_lsn(g, lsn);
    }
}

/// Sets `xmax` on items of one page, as one record. If the page was all-visible, its
/// VM bit is cleared inside the same change (rule 2).
pub fn delete_on_page(
    sh: &Shared,
    rel: RelKey,
    block: u32,
    offsets: &[u16],
    xid: Xid,
) -> Result<()> {
    let buf = sh
        .pool
        .read_buffer(tag(rel, ForkNumber::Main, block), ReadMode::Normal)?;
    let mut g = buf.write();
    let vm = vm_pin_if_visible(sh, rel, block, &g)?;
    let mut vm_g = vm.as_ref().map(|b| b.write());
    let vm_cleared = heap::page_delete(&mut g, offsets, xid).map_err(corrupt)?;
    buf.mark_dirty(&g);
    if let (Some(vb), Some(vg)) = (&vm, &mut vm_g) {
        vm_clear_bit(vg, block);
        vb.mark_dirty(vg);
    }
    let body = HeapBody::Delete(HeapDelete {
        xmax: xid,
        vm_cleared,
        offsets: offsets.to_vec(),
    });
    let end = log_block(
        sh,
        buf.tag(),
        &mut g,
        false,
        RM_HEAP,
        body.info(),
        xid,
        |b| body.encode(b),
    )?;
    if let Some(vg) = &mut vm_g {
        raise_lsn(vg, end);
    }
    Ok(())
}

/// Deletes rows of a table (items `offsets` of block `b`) and the chunks they
/// point at (toast rule 3), reading them again for their pointers (one row of an
/// upsert; the scans' deletes note the chunks as they match).
pub fn delete_rows_on_page(
    sh: &Shared,
    (rel, b): (RelKey, u32),
    cols: &[heap::Column],
    offsets: &[u16],
    xid: Xid,
) -> Result<()> {
    if crate::toast::may_point(cols) {
        let buf = sh
            .pool
            .read_buffer(tag(rel, ForkNumber::Main, b), ReadMode::Normal)?;
        let g = buf.read();
        let tuples: Vec<&[u8]> = offsets
            .iter()
            .filter_map(|o| strata_page::item(&g, *o as usize))
            .collect();
        crate::toast::delete_rows(sh, rel, cols, &tuples, xid)?;
    }
    delete_on_page(sh, rel, b, offsets, xid)
}

/// Deletes every tuple visible to `xid` for which `pred` holds: one record per page
/// changed. O(pages of `rel`).
pub fn delete_where(
    sh: &Shared,
    rel: RelKey,
    cols: &[heap::Column],
    (snap, xid): (&Snapshot<'_>, Xid),
    pred: &mut dyn FnMut(&[heap::Datum]) -> bool,
    interrupt: crate::Interrupt<'_>,
) -> Result<u64> {
    let n = sh.smgr.nblocks(rel, ForkNumber::Main)?;
    let mut deleted = 0;
    for b in 0..n {
        interrupt()?;
        let (offsets, chunks) = matching(sh, (rel, b), (snap, xid), cols, pred, None)?;
        if !offsets.is_empty() {
            deleted += offsets.len() as u64;
            crate::toast::delete_chunks(sh, rel, chunks, xid)?;
            delete_on_page(sh, rel, b, &offsets, xid)?;
        }
    }
    Ok(deleted)
}

/// TIDs (block, item) of TOAST chunks.
type ChunkTids = Vec<(u32, u16)>;

/// The items of block `b` that the writer `xid` sees as of `snap` and `pred` holds
/// for: every item, or those of `only` (TIDs of this block), and the TOAST chunks
/// those rows point at (toast rule 3). Under a shared lock.
fn matching(
    sh: &Shared,
    (rel, b): (RelKey, u32),
    (snap, xid): (&Snapshot<'_>, Xid),
    cols: &[heap::Column],
    pred: &mut dyn FnMut(&[heap::Datum]) -> bool,
    only: Option<&[crate::catalog::Tid]>,
) -> Result<(Vec<u16>, ChunkTids)> {
    let buf = sh
        .pool
        .read_buffer(tag(rel, ForkNumber::Main, b), ReadMode::Normal)?;
    let g = buf.read();
    let items: Vec<(u16, &[u8])> = match only {
        None => page_tuples(&g).map_err(corrupt)?,
        Some(tids) => tids
            .iter()
            .filter_map(|t| strata_page::item(&g, t.offset as usize).map(|i| (t.offset, i)))
            .collect(),
    };
    let (mut v, mut chunks, mut row_chunks) = (Vec::new(), Vec::new(), Vec::new());
    for (off, t) in items {
        if t.len() < heap::TUPLE_HEADER_BYTES || !visible(snap, t, Some(xid)) {
            continue;
        }
        row_chunks.clear();
        let row = crate::toast::decode_row_noting(sh, rel, cols, t, Some(&mut row_chunks))?;
        if pred(&row) {
            updated_since(sh, t, xid)?;
            v.push(off);
            chunks.extend_from_slice(&row_chunks);
        }
    }
    Ok((v, chunks))
}

/// Engine rule 10: a row the writer `xid` sees in its snapshot and is about to
/// change, whose deleter has committed since (the snapshot is a REPEATABLE READ
/// transaction's, taken before): 40001, PostgreSQL's "could not serialize access
/// due to concurrent update". With one writer (engine rule 1) no other deleter is
/// in progress; at READ COMMITTED the statement's snapshot is taken after every
/// other writer has ended, so this never fires there.
fn updated_since(sh: &Shared, t: &[u8], xid: Xid) -> Result<()> {
    let xmax = heap::tuple_xmax(t);
    if xmax == Xid::INVALID || xmax == xid || !sh.clog.is_committed(xmax) {
        return Ok(());
    }
    Err(EngineError::SerializationFailure(
        "could not serialize access due to concurrent update".into(),
    ))
}

/// [`delete_where`] over the rows at `tids` only (sorted by block: an index scan's
/// candidates), each checked for visibility and `pred`. O(pages of `tids`).
pub fn delete_tids(
    sh: &Shared,
    rel: RelKey,
    cols: &[heap::Column],
    (snap, xid): (&Snapshot<'_>, Xid),
    tids: &[crate::catalog::Tid],
    pred: &mut dyn FnMut(&[heap::Datum]) -> bool,
    interrupt: crate::Interrupt<'_>,
) -> Result<u64> {
    let n = sh.smgr.nblocks(rel, ForkNumber::Main)?;
    let mut deleted = 0;
    for same in tids.chunk_by(|a, b| a.block == b.block) {
        let b = same[0].block.0;
        if b >= n {
            continue;
        }
        interrupt()?;
        let (offsets, chunks) = matching(sh, (rel, b), (snap, xid), cols, pred, Some(same))?;
        if !offsets.is_empty() {
            deleted += offsets.len() as u64;
            crate::toast::delete_chunks(sh, rel, chunks, xid)?;
            delete_on_page(sh, rel, b, &offsets, xid)?;
        }
    }
    Ok(deleted)
}

/// Creates a map fork of an existing relation if missing (logged, not transactional).
fn ensure_fork(sh: &Shared, rel: RelKey, fork: ForkNumber) -> Result<()> {
    if sh.smgr.exists(rel, fork) {
        return Ok(());
    }
    if rel.is_temp() {
        return Ok(sh.smgr.create(rel, fork, false)?);
    }
    let rec = SmgrCreate {
        rel,
        fork,
        transactional: false,
    };
    {
        let _r = sh.redo_ptr.read();
        sh.wal_insert(RM_SMGR, SMGR_CREATE, 0, &rec.encode())?;
    }
    sh.wal_write_through()?; // engine rule 4
    sh.smgr.create(rel, fork, false)?;
    Ok(())
}

/// Pins map page `page_no` of `fork`, extending the fork with zero pages if `create`.
/// `None` if the fork or page does not exist and `create` is false.
fn map_page<'a>(
    sh: &'a Shared,
    rel: RelKey,
    fork: ForkNumber,
    page_no: u32,
    create: bool,
) -> Result<Option<PinnedBuffer<'a>>> {
    if !sh.smgr.exists(rel, fork) {
        return Ok(None);
    }
    let n = sh.smgr.nblocks(rel, fork)?;
    if page_no >= n {
        if !create {
            return Ok(None);
        }
        for p in n..=page_no {
            sh.smgr.extend(rel, fork, BlockNumber(p), &ZERO_PAGE)?;
        }
    }
    Ok(Some(sh.pool.read_buffer(
        tag(rel, fork, page_no),
        ReadMode::ZeroOnError,
    )?))
}

fn init_map_page(p: &mut PageBuf) {
    if strata_page::is_new(p) {
        strata_page::init(p, MAP_BYTES);
    }
}

/// Records a heap page's free space in the FSM (rule 1: not logged).
pub fn fsm_set(sh: &Shared, rel: RelKey, block: u32, free: usize) -> Result<()> {
    let Some(buf) = map_page(sh, rel, ForkNumber::Fsm, block / FSM_PER_PAGE, true)? else {
        return Ok(());
    };
    let cat = (free / 32).min(255) as u8;
    let mut g = buf.write();
    let i = HEADER_BYTES + (block % FSM_PER_PAGE) as usize;
    if g[i] != cat {
        init_map_page(&mut g);
        g[i] = cat;
        buf.mark_dirty(&g);
    }
    Ok(())
}

/// A heap block below `nblocks` with at least `need` bytes free, by the FSM.
/// O(FSM pages).
fn fsm_search(sh: &Shared, rel: RelKey, need: usize, nblocks: u32) -> Result<Option<u32>> {
    let want = need.div_ceil(32).min(255) as u8;
    let pages = if sh.smgr.exists(rel, ForkNumber::Fsm) {
        sh.smgr.nblocks(rel, ForkNumber::Fsm)?
    } else {
        0
    };
    for p in 0..pages {
        let Some(buf) = map_page(sh, rel, ForkNumber::Fsm, p, false)? else {
            break;
        };
        let g = buf.read();
        if let Some(i) = g[HEADER_BYTES..].iter().position(|c| *c >= want) {
            let b = p * FSM_PER_PAGE + i as u32;
            if b < nblocks {
                return Ok(Some(b));
            }
        }
    }
    Ok(None)
}

/// Sets (`set`) or clears a heap block's VM bit and raises the VM page's LSN to `lsn`
/// (rule 2). In replay (`redo`), a VM page already at or past `lsn` is left alone.
pub fn vm_change(
    sh: &Shared,
    rel: RelKey,
    block: u32,
    set: bool,
    lsn: Lsn,
    redo: bool,
) -> Result<()> {
    let Some(buf) = map_page(sh, rel, ForkNumber::Vm, block / VM_PER_PAGE, set)? else {
        return Ok(());
    };
    let mut g = buf.write();
    if redo && strata_page::lsn(&g) >= lsn {
        return Ok(());
    }
    let bit = block % VM_PER_PAGE;
    let i = HEADER_BYTES + (bit / 8) as usize;
    let mask = 1u8 << (bit % 8);
    let was = g[i] & mask != 0;
    if was == set && !redo {
        return Ok(());
    }
    init_map_page(&mut g);
    if set {
        g[i] |= mask;
    } else {
        g[i] &= !mask;
    }
    if strata_page::lsn(&g) < lsn {
        strata_page::set_lsn(&mut g, lsn);
    }
    buf.mark_dirty(&g);
    Ok(())
}

fn vm_is_set(sh: &Shared, rel: RelKey, block: u32) -> Result<bool> {
    let Some(buf) = map_page(sh, rel, ForkNumber::Vm, block / VM_PER_PAGE, false)? else {
        return Ok(false);
    };
    let g = buf.read();
    let bit = block % VM_PER_PAGE;
    Ok(g[HEADER_BYTES + (bit / 8) as usize] & (1 << (bit % 8)) != 0)
}

/// The visibility map's bits of the 64 heap blocks from `block` rounded down to a
/// multiple of 64: (that first block, its bit lowest). All clear where the map
/// has no page for them. One map page read for a run of 64 blocks.
pub(crate) fn vm_word(sh: &Shared, rel: RelKey, block: u32) -> Result<(u32, u64)> {
    const _: () = assert!(
        VM_PER_PAGE.is_multiple_of(64),
        "a word never straddles map pages"
    );
    let base = block & !63;
    let Some(buf) = map_page(sh, rel, ForkNumber::Vm, base / VM_PER_PAGE, false)? else {
        return Ok((base, 0));
    };
    let g = buf.read();
    let at = HEADER_BYTES + ((base % VM_PER_PAGE) / 8) as usize;
    let bytes: [u8; 8] = g[at..at + 8].try_into().expect("8 bytes");
    Ok((base, u64::from_le_bytes(bytes)))
}

/// The heap blocks of `rel` below `heap_len` that the visibility map marks all
/// visible (PostgreSQL's visibilitymap_count). O(map pages): one per
/// [`VM_PER_PAGE`] heap blocks.
pub(crate) fn vm_count(sh: &Shared, rel: RelKey, heap_len: u32) -> Result<u32> {
    let mut n = 0;
    for page_no in 0..heap_len.div_ceil(VM_PER_PAGE) {
        let Some(buf) = map_page(sh, rel, ForkNumber::Vm, page_no, false)? else {
            break;
        };
        let g = buf.read();
        let bits = (heap_len - page_no * VM_PER_PAGE).min(VM_PER_PAGE) as usize;
        let map = &g[HEADER_BYTES..HEADER_BYTES + bits.div_ceil(8)];
        for (i, byte) in map.iter().enumerate() {
            let keep = match bits - i * 8 {
                k if k >= 8 => 0xFF,
                k => (1u8 << k) - 1,
            };
            n += (byte & keep).count_ones();
        }
    }
    Ok(n)
}

/// Clears the map entries of heap blocks at or past `heap_len` on the last map page
/// that survives a truncation (pages past it are cut). Replay does the same.
fn clear_map_tails(sh: &Shared, rel: RelKey, heap_len: u32, lsn: Lsn) -> Result<()> {
    if !heap_len.is_multiple_of(FSM_PER_PAGE) {
        if let Some(buf) = map_page(sh, rel, ForkNumber::Fsm, heap_len / FSM_PER_PAGE, false)? {
            let mut g = buf.write();
            if !strata_page::is_new(&g) {
                g[HEADER_BYTES + (heap_len % FSM_PER_PAGE) as usize..].fill(0);
                buf.mark_dirty(&g);
            }
        }
    }
    if !heap_len.is_multiple_of(VM_PER_PAGE) {
        if let Some(buf) = map_page(sh, rel, ForkNumber::Vm, heap_len / VM_PER_PAGE, false)? {
            let mut g = buf.write();
            if !strata_page::is_new(&g) {
                let bit = heap_len % VM_PER_PAGE;
                let byte = HEADER_BYTES + (bit / 8) as usize;
                g[byte] &= (1u8 << (bit % 8)) - 1;
                g[byte + 1..].fill(0);
                if strata_page::lsn(&g) < lsn {
                    strata_page::set_lsn(&mut g, lsn);
                }
                buf.mark_dirty(&g);
            }
        }
    }
    Ok(())
}

/// Cuts every fork of `rel` as `rec` says: buffers first, then files (engine rule 3),
/// then the surviving map pages' tails. The primary and replay both call this.
pub fn truncate_apply(sh: &Shared, rec: &SmgrTruncate, lsn: Lsn) -> Result<()> {
    sh.pool.truncate(rec.rel, &rec.forks);
    sh.smgr.truncate(rec.rel, &rec.forks)?;
    if let Some((_, n)) = rec.forks.iter().find(|(f, _)| *f == ForkNumber::Main) {
        clear_map_tails(sh, rec.rel, n.0, lsn)?;
    }
    sh.targblock.lock().remove(&rec.rel);
    Ok(())
}

/// What a vacuum of one relation did.
#[derive(Debug, Default, Clone, Copy)]
pub struct VacuumStats {
    pub tuples_removed: u64,
    pub pages_truncated: u64,
    /// The heap's pages after the pass, those it read (the others were all
    /// visible) and the live tuples on them: PostgreSQL's reltuples estimate.
    pub pages: u64,
    pub pages_scanned: u64,
    pub live_tuples: u64,
    /// The heap's pages the visibility map marks all visible after the pass
    /// (PostgreSQL's relallvisible).
    pub all_visible: u64,
}

/// Dead rows one VACUUM pass collects before it removes their index entries (index
/// rule 2): 8 bytes each, so at most 32 MiB (PostgreSQL's maintenance_work_mem bound).
const VACUUM_DEAD_PER_PASS: usize = 4 << 20;

/// VACUUM of one relation with indexes `indexes`, by the writer (so no transaction is
/// in progress: a tuple whose inserter is not committed is dead). In passes: the dead
/// rows of a range of blocks are collected, their entries removed from every index,
/// then the blocks pruned (index rule 2). O(pages not all-visible + log + index
/// leaves per pass).
pub fn vacuum_rel(sh: &Shared, rel: RelKey, indexes: &[RelKey]) -> Result<VacuumStats> {
    let mut stats = VacuumStats::default();
    let n = sh.smgr.nblocks(rel, ForkNumber::Main)?;
    if n == 0 {
        return Ok(stats);
    }
    ensure_fork(sh, rel, ForkNumber::Fsm)?;
    ensure_fork(sh, rel, ForkNumber::Vm)?;
    let mut nonempty_end = 0u32;
    let horizon = removal_horizon(sh);
    let mut b = 0;
    while b < n {
        let (mut dead, mut conflict) = (Vec::new(), Xid::INVALID);
        let end = if indexes.is_empty() {
            n
        } else {
            let end = collect_dead(sh, rel, b, n, horizon, (&mut dead, &mut conflict))?;
            for ix in indexes.iter().filter(|_| !dead.is_empty()) {
                crate::index::bulk_delete(sh, *ix, &dead, conflict)?;
            }
            if !dead.is_empty() {
                // Index rule 5: every index batch that may hold an entry just
                // removed ends before its row's page can be marked all visible.
                drop(sh.drop_lock.write());
            }
            end
        };
        let only = (!indexes.is_empty()).then_some(dead.as_slice());
        for blk in b..end {
            if vm_is_set(sh, rel, blk)? {
                nonempty_end = blk + 1; // all-visible pages hold tuples (empty ones never get the bit)
                stats.all_visible += 1;
                continue;
            }
            let (live, removed, visible) = vacuum_page(sh, rel, blk, horizon, only)?;
            stats.all_visible += u64::from(visible);
            stats.tuples_removed += removed;
            stats.pages_scanned += 1;
            stats.live_tuples += live as u64;
            if live > 0 {
                nonempty_end = blk + 1;
            }
        }
        b = end;
    }
    stats.pages = n as u64;
    if nonempty_end < n {
        truncate_tail(sh, rel, nonempty_end)?;
        stats.pages_truncated = (n - nonempty_end) as u64;
        stats.pages = nonempty_end as u64;
        // The pages cut were all read (an all-visible page holds tuples, so
        // none is past `nonempty_end`) and held no live tuple.
        stats.pages_scanned = stats.pages_scanned.saturating_sub(stats.pages_truncated);
    }
    Ok(stats)
}

/// The dead rows (block, item) of blocks from `from` on, until
/// [`VACUUM_DEAD_PER_PASS`] or the end `n`, and the newest deleter among them;
/// returns the block after the last read.
fn collect_dead(
    sh: &Shared,
    rel: RelKey,
    from: u32,
    n: u32,
    horizon: Xid,
    (dead, conflict): (&mut Vec<(u32, u16)>, &mut Xid),
) -> Result<u32> {
    let mut b = from;
    while b < n && dead.len() < VACUUM_DEAD_PER_PASS {
        if !vm_is_set(sh, rel, b)? {
            let buf = sh
                .pool
                .read_buffer(tag(rel, ForkNumber::Main, b), ReadMode::Normal)?;
            let g = buf.read();
            let (removed, _, _) = dead_items(sh, &g, buf.tag(), horizon)?;
            *conflict = (*conflict).max(newest_deleter(sh, &g, &removed)?);
            dead.extend(removed.into_iter().map(|i| (b, i)));
        }
        b += 1;
    }
    Ok(b)
}

/// Which items of a heap page VACUUM removes (dead to every snapshot, engine rule 9),
/// how many live tuples stay, and whether they are all visible to everyone.
fn dead_items(
    sh: &Shared,
    g: &PageBuf,
    t: BufferTag,
    horizon: Xid,
) -> Result<(Vec<u16>, usize, bool)> {
    let mut removed = Vec::new();
    let mut live = 0usize;
    let mut all_visible = true;
    for i in 0..strata_page::item_count(g) {
        let Some(tuple) = strata_page::item(g, i) else {
            if strata_page::item_state(g, i) != Some(strata_page::ItemState::Unused) {
                removed.push(i as u16); // dead or redirected: its slot is freed
            }
            continue;
        };
        if tuple.len() < heap::TUPLE_HEADER_BYTES {
            return Err(corrupt(format!("short tuple in {t}")));
        }
        let (xmin, xmax) = (heap::tuple_xmin(tuple), heap::tuple_xmax(tuple));
        // A deleted tuple goes only once no snapshot can still see it.
        let dead = !sh.clog.is_committed(xmin)
            || (xmax != Xid::INVALID && xmax < horizon && sh.clog.is_committed(xmax));
        if dead {
            removed.push(i as u16);
        } else {
            live += 1;
            // Heap rule 2: visible to every snapshot, the oldest included.
            all_visible &= xmax == Xid::INVALID && xmin < horizon;
        }
    }
    Ok((removed, live, all_visible && live > 0))
}

/// Prunes one heap page (one record), sets or clears its VM bit and records its free
/// space. With `only` (an indexed table), removes only the rows named there, whose
/// index entries are gone (index rule 2); any other dead row stays and counts as a
/// live one, so no truncation cuts it. Returns (live tuples left, tuples removed,
/// whether the page is now all visible).
fn vacuum_page(
    sh: &Shared,
    rel: RelKey,
    b: u32,
    horizon: Xid,
    only: Option<&[(u32, u16)]>,
) -> Result<(usize, u64, bool)> {
    let buf = sh
        .pool
        .read_buffer(tag(rel, ForkNumber::Main, b), ReadMode::Normal)?;
    let mut g = buf.write();
    let (mut removed, mut live, mut all_visible) = dead_items(sh, &g, buf.tag(), horizon)?;
    if let Some(only) = only {
        let before = removed.len();
        removed.retain(|i| only.binary_search(&(b, *i)).is_ok());
        if removed.len() != before {
            live += before - removed.len();
            all_visible = false;
        }
    }
    let was_visible = strata_page::flags(&g) & PD_ALL_VISIBLE != 0;
    let mut vm = None;
    if !removed.is_empty() || all_visible || was_visible {
        heap::page_prune(&mut g, &removed, all_visible);
        buf.mark_dirty(&g);
        let body = HeapBody::Prune(HeapPrune {
            all_visible,
            removed: removed.clone(),
        });
        let end = log_block(
            sh,
            buf.tag(),
            &mut g,
            false,
            RM_HEAP,
            body.info(),
            Xid::INVALID,
            |r| body.encode(r),
        )?;
        if all_visible || was_visible {
            vm = Some(end);
        }
    }
    let free = strata_page::free_space(&g);
    drop(g);
    drop(buf);
    if let Some(end) = vm {
        vm_change(sh, rel, b, all_visible, end, false)?;
    }
    fsm_set(sh, rel, b, free)?;
    Ok((live, removed.len() as u64, all_visible))
}

/// Cuts every fork of `rel` after the heap's first `nonempty_end` blocks, with one
/// record.
fn truncate_tail(sh: &Shared, rel: RelKey, nonempty_end: u32) -> Result<()> {
    let mut forks = vec![(ForkNumber::Main, BlockNumber(nonempty_end))];
    for (fork, len) in [
        (ForkNumber::Fsm, fsm_len(nonempty_end)),
        (ForkNumber::Vm, vm_len(nonempty_end)),
    ] {
        if sh.smgr.exists(rel, fork) && sh.smgr.nblocks(rel, fork)? > len {
            forks.push((fork, BlockNumber(len)));
        }
    }
    let rec = SmgrTruncate { rel, forks };
    if rel.is_temp() {
        let _d = sh.drop_lock.write();
        return truncate_apply(sh, &rec, Lsn(0));
    }
    // Engine rules 3 and 5: the record is durable before the files shrink, and no
    // checkpoint starts in between. Engine rule 8: no scan runs while buffers are
    // dropped and files shrink (the drop lock, taken as commit's file removal takes it).
    let _r = sh.redo_ptr.read();
    let _d = sh.drop_lock.write();
    let (_, end) = sh.wal_insert(RM_SMGR, SMGR_TRUNCATE, 0, &rec.encode())?;
    sh.wal_flush(end)?;
    truncate_apply(sh, &rec, end)
}

/// Redo of the Heap resource manager (INSERT, DELETE, PRUNE), through recovery rule 2's
/// block redo; then the VM bit the record carries, if the heap change was applied
/// (rule 2: the record that clears or sets a bit is the VM page's LSN).
pub(crate) fn heap_redo(rx: &mut dyn RedoContext, r: &Record) -> Result<()> {
    let (b, body) = HeapBody::decode(r.info, &r.payload).map_err(corrupt)?;
    let rel = b.tag.rel;
    let block = b.tag.block.0;
    if let (HeapBody::Prune(pr), true) = (&body, rx.hot_standby()) {
        let xid = removed_xmax(rx.shared(), b.tag, &pr.removed)?;
        crate::standby::resolve_snapshot_conflict(rx.shared(), xid); // standby rule 9
    }
    let applied = rx.redo_block(r, &b, &mut |p| match &body {
        HeapBody::Insert(i) => match heap::page_insert(p, &i.tuple) {
            Some((off, _)) if off == i.offset => Ok(()),
            Some((off, _)) => Err(format!(
                "insert went to item {off}, record says {}",
                i.offset
            )),
            None => Err("no room for the tuple".into()),
        },
        HeapBody::Delete(d) => heap::page_delete(p, &d.offsets, d.xmax)
            .map(|_| ())
            .map_err(|e| e.to_string()),
        HeapBody::Prune(pr) => {
            heap::page_prune(p, &pr.removed, pr.all_visible);
            Ok(())
        }
        HeapBody::MultiInsert(m) => {
            for (want, t) in &m.items {
                match heap::page_insert(p, t) {
                    Some((off, _)) if off == *want => {}
                    Some((off, _)) => {
                        return Err(format!("insert went to item {off}, record says {want}"))
                    }
                    None => return Err("no room for the tuples".into()),
                }
            }
            Ok(())
        }
    })?;
    if applied.is_none() {
        return Ok(());
    }
    if crate::standby::is_catalog(rel) {
        note_catalog_rows(rx, r, b.tag, &body)?;
    }
    let sh = rx.shared();
    match &body {
        HeapBody::Insert(HeapInsert {
            vm_cleared: true, ..
        })
        | HeapBody::MultiInsert(HeapMultiInsert {
            vm_cleared: true, ..
        })
        | HeapBody::Delete(HeapDelete {
            vm_cleared: true, ..
        }) => vm_change(sh, rel, block, false, r.end, true),
        HeapBody::Prune(pr) => vm_change(sh, rel, block, pr.all_visible, r.end, true),
        _ => Ok(()),
    }
}

/// Standby rule 9: the newest committed deleter among the tuples a prune removes (as
/// the page holds them before it); `Xid::INVALID` if none (aborted inserts conflict
/// with nobody). O(tuples of the page).
fn removed_xmax(sh: &Shared, tag: BufferTag, removed: &[u16]) -> Result<Xid> {
    if !sh.smgr.exists(tag.rel, tag.fork) || tag.block.0 >= sh.smgr.nblocks(tag.rel, tag.fork)? {
        return Ok(Xid::INVALID);
    }
    let buf = sh.pool.read_buffer(tag, ReadMode::Normal)?;
    let g = buf.read();
    newest_deleter(sh, &g, removed)
}

/// The newest committed deleter among items `removed` (sorted) of a heap page.
fn newest_deleter(sh: &Shared, g: &PageBuf, removed: &[u16]) -> Result<Xid> {
    let mut newest = Xid::INVALID;
    for (off, t) in page_tuples(g).map_err(corrupt)? {
        let xmax = heap::tuple_xmax(t);
        if removed.binary_search(&off).is_ok() && xmax != Xid::INVALID && sh.clog.is_committed(xmax)
        {
            newest = newest.max(xmax);
        }
    }
    Ok(newest)
}

/// Standby rule 5: the catalog rows a heap record inserts or deletes, for the cache
/// at commit. A deleted row's bytes are read from its page (catalog heaps are never
/// pruned, catalog rule 3). O(rows of the record).
fn note_catalog_rows(
    rx: &mut dyn RedoContext,
    r: &Record,
    tag: strata_types::BufferTag,
    body: &HeapBody,
) -> Result<()> {
    let xid = Xid(r.xid);
    let tid = |offset| crate::catalog::Tid {
        block: tag.block,
        offset,
    };
    match body {
        HeapBody::Insert(i) => rx.catalog_row(
            xid,
            crate::standby::CatalogRow {
                rel: tag.rel,
                tid: tid(i.offset),
                inserted: true,
                tuple: i.tuple.clone(),
            },
        ),
        HeapBody::Delete(d) => {
            let rows: Vec<_> = {
                let buf = rx.shared().pool.read_buffer(tag, ReadMode::Normal)?;
                let g = buf.read();
                let tuples = page_tuples(&g).map_err(corrupt)?;
                d.offsets
                    .iter()
                    .filter_map(|o| tuples.iter().find(|(off, _)| off == o))
                    .map(|(off, t)| (*off, t.to_vec()))
                    .collect()
            };
            for (off, tuple) in rows {
                rx.catalog_row(
                    xid,
                    crate::standby::CatalogRow {
                        rel: tag.rel,
                        tid: tid(off),
                        inserted: false,
                        tuple,
                    },
                );
            }
        }
        HeapBody::MultiInsert(m) => {
            for (off, t) in &m.items {
                rx.catalog_row(
                    xid,
                    crate::standby::CatalogRow {
                        rel: tag.rel,
                        tid: tid(*off),
                        inserted: true,
                        tuple: t.clone(),
                    },
                );
            }
        }
        HeapBody::Prune(_) => {}
    }
    Ok(())
}

/// Redo of the Storage resource manager: CREATE (a fork; tracked if transactional, so
/// an unfinished creator's files go at the end of recovery) and TRUNCATE (every fork
/// it names, with the pool's bulk truncate: recovery rule 3).
pub(crate) fn smgr_redo(rx: &mut dyn RedoContext, r: &Record) -> Result<()> {
    match r.info {
        SMGR_CREATE => {
            let c = SmgrCreate::decode(&r.payload).map_err(corrupt)?;
            rx.saw_relfilenumber(c.rel.rel);
            if c.transactional {
                rx.created(Xid(r.xid), PendingCreate::Rel(c.rel));
            }
            if rx.spc_available(c.rel.spc) {
                let sh = rx.shared();
                sh.smgr.create_database_dir(c.rel.spc, c.rel.db)?;
                sh.smgr.create(c.rel, c.fork, true)?;
            }
            Ok(())
        }
        SMGR_TRUNCATE => {
            let t = SmgrTruncate::decode(&r.payload).map_err(corrupt)?;
            for (fork, len) in &t.forks {
                rx.truncated(t.rel, *fork, *len);
            }
            let sh = rx.shared();
            if rx.spc_available(t.rel.spc) && sh.smgr.exists(t.rel, ForkNumber::Main) {
                truncate_apply(sh, &t, r.end)?;
            }
            Ok(())
        }
        _ => Err(unknown_record(r)),
    }
}
