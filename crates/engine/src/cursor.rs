//! Pull scans: a relation's rows read a batch at a time by a caller that holds one
//! snapshot for its whole statement (the SQL executor's scan nodes; a self-join's
//! two scans see the same rows).
//!
//! Entry points: [`crate::Engine::snapshot`], [`crate::Engine::seq_cursor`] /
//! [`crate::Engine::index_cursor`] and their [`crate::Txn`] twins; then
//! [`SeqCursor::next_batch`] / [`IndexCursor::next_batch`] until they say done.
//!
//! Rules (the `stream` rules, for a consumer that pulls):
//! 1. Each batch — whole pages until at least [`SCAN_BATCH_ROWS`] rows (index: up
//!    to that many entries, rule 7) — is read under the drop lock held shared,
//!    released before the caller sees the rows: a slow consumer never holds back
//!    DROP or TRUNCATE.
//! 2. The snapshot is the caller's, taken before the first batch and kept until the
//!    last (engine rule 9); VACUUM keeps every tuple a live snapshot can see.
//! 3. Each batch resolves the relation again. If its storage is gone (dropped, or
//!    given new storage by TRUNCATE) the cursor fails with
//!    [`EngineError::ConcurrentDrop`] (40001); it never reads past the relation's
//!    length at its start, nor past its current length.
//! 4. A cursor the caller stops pulling reads nothing more (LIMIT).
//! 5. A cursor told which columns its caller reads ([`SeqCursor::only`]) decodes
//!    only those: the others are NULL in its rows, their bytes skipped unread and
//!    their out-of-line values never fetched.
//! 6. A caller that visits rows ([`SeqCursor::next_batch_visit`]) is lent each
//!    visible row in one buffer the cursor reuses, strings and all, and takes what it
//!    keeps: a scan whose filter passes few rows allocates for those only. A batch
//!    visits at least [`SCAN_BATCH_ROWS`] rows (index: entries), whole pages, as in
//!    rule 1.
//!
//! 7. An index cursor's first batch reads [`FIRST_INDEX_BATCH`] entries (fewer
//!    if its caller wants fewer rows: [`IndexCursor::wanting`]), each next one
//!    twice the last, up to [`SCAN_BATCH_ROWS`]: a lookup or a LIMIT that wants
//!    a few rows fetches a few heap tuples, not a thousand.
//! 8. A parallel scan's participants share its blocks ([`SeqCursor::shared`]): each
//!    claims the next [`PARALLEL_CHUNK`] blocks from one counter, so each block is
//!    read by one participant and the participants together read the table once.
//!    Each still stops at the length it saw at its first batch (rule 3); a block
//!    past it holds no row its snapshot sees.
//!
//! 9. A cursor told to decode some columns first ([`SeqCursor::early`]) lends
//!    each row with only those to its caller's test
//!    ([`SeqCursor::next_batch_visit_early`]) and decodes the rest of the rows the
//!    test passes: a filter that rejects most rows on a date never pays for
//!    their numerics and strings.
//!
//! 10. An index cursor's batch fetches its heap tuples through one
//!     [`index::Fetcher`]: a heap page stays pinned while consecutive entries
//!     point into it (a range over a clustered key reads each page once), and the
//!     commit status of the last inserter is remembered across tuples.
//!
//! 11. An index-only cursor ([`IndexCursor::index_only`]) gives each entry's row
//!     from its key where its heap page is all visible (index rule 5), reading the
//!     visibility map once per run of entries on 64 heap pages, and counts the
//!     rows it fetched instead ([`IndexCursor::heap_fetches`]).
//!
//! Memory: one batch, O([`SCAN_BATCH_ROWS`] + rows of one page), whatever the table.

use crate::access::{self, Snapshot};
use crate::catalog::RelEntry;
use crate::index::{self, IndexRange};
use crate::stream::SCAN_BATCH_ROWS;
use crate::{Datum, EngineError, Interrupt, Result, Shared};
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::Arc;
use strata_types::{ForkNumber, RelKey, Xid};

/// What a visiting caller does with each row lent to it (rule 6); it takes the row
/// (`std::mem::take`) to keep it.
pub type Visit<'v> = dyn FnMut(&mut Vec<Datum>) + 'v;

/// A caller's test of a row with only its early columns decoded (rule 9): false
/// drops the row.
pub type Early<'v> = dyn FnMut(&[Datum]) -> bool + 'v;

/// Resolves a table as of now: its storage key and entry.
pub(crate) type ResolveTable<'e> = Box<dyn Fn() -> Result<(RelKey, Arc<RelEntry>)> + 'e>;
/// Resolves a table and one of its indexes as of now: heap key, entry, index key.
pub(crate) type ResolveIndex<'e> = Box<dyn Fn() -> Result<(RelKey, Arc<RelEntry>, RelKey)> + 'e>;

/// A relation resolved for a batch (rule 3): gone after the first batch is a
/// concurrent drop (40001), not an undefined table.
fn resolved_again<T>(r: Result<T>, started: bool) -> Result<T> {
    match r {
        Err(EngineError::UndefinedTable(name)) if started => Err(EngineError::ConcurrentDrop(name)),
        r => r,
    }
}

/// A sequential scan's position (rules 1-4).
pub struct SeqCursor<'e> {
    sh: &'e Shared,
    resolve: ResolveTable<'e>,
    my: Option<Xid>,
    /// The storage and length at the first batch (rule 3).
    start: Option<(RelKey, u32)>,
    next: u32,
    done: bool,
    /// The columns to decode (None: all; rule 5).
    mask: Option<Vec<bool>>,
    /// The columns decoded first (rule 9).
    early: Option<Vec<bool>>,
    /// The row lent to a visitor (rule 6).
    row: Vec<Datum>,
    /// A parallel scan's shared next block, and the end of this participant's
    /// chunk (rule 8).
    shared: Option<(Arc<AtomicU32>, u32)>,
    _registered: Option<crate::standby::ScanGuard<'e>>,
}

/// Rule 8: the blocks a parallel scan's participant claims at a time.
pub const PARALLEL_CHUNK: u32 = 8;

impl<'e> SeqCursor<'e> {
    pub(crate) fn new(sh: &'e Shared, resolve: ResolveTable<'e>, my: Option<Xid>) -> Self {
        SeqCursor {
            sh,
            resolve,
            my,
            start: None,
            next: 0,
            done: false,
            mask: None,
            early: None,
            row: Vec::new(),
            shared: None,
            _registered: None,
        }
    }

    /// Decodes only the columns `mask` marks; the rest read as NULL (rule 5).
    pub fn only(mut self, mask: Vec<bool>) -> Self {
        self.mask = Some(mask);
        self
    }

    /// Decodes the columns `first` marks before the others, for
    /// [`SeqCursor::next_batch_visit_early`]'s test (rule 9). Call after
    /// [`SeqCursor::only`]: the others are those it marks (all without it).
    pub fn early(mut self, first: Vec<bool>) -> Self {
        self.early = Some(first);
        self
    }

    /// The early columns of a table of `width` columns, and the rest to decode.
    fn early_masks(&self, width: usize) -> Option<(Vec<bool>, Vec<bool>)> {
        let first = self.early.as_ref()?;
        let marked = |m: &[bool], c: usize| m.get(c).copied().unwrap_or(false);
        let first: Vec<bool> = (0..width).map(|c| marked(first, c)).collect();
        let rest = (0..width)
            .map(|c| self.mask.as_deref().is_none_or(|m| marked(m, c)) && !first[c])
            .collect();
        Some((first, rest))
    }

    /// Reads only the blocks this participant claims from `next`, shared with the
    /// scan's other participants (rule 8); `next` starts at 0.
    pub fn shared(mut self, next: Arc<AtomicU32>) -> Self {
        self.shared = Some((next, 0));
        self
    }

    /// The next block to read, below `end`, if any: the cursor's own next block, or
    /// the next of its claimed chunk (rule 8).
    fn claim(&mut self, end: u32) -> Option<u32> {
        if let Some((next, chunk_end)) = &mut self.shared {
            if self.next >= *chunk_end {
                self.next = next.fetch_add(PARALLEL_CHUNK, Ordering::Relaxed);
                *chunk_end = self.next.saturating_add(PARALLEL_CHUNK);
            }
        }
        (self.next < end).then_some(self.next)
    }

    /// Appends the next batch of rows `snap` shows to `out`; false once the scan has
    /// read its last page (then `out` may still have got rows). `interrupt` runs
    /// before each page.
    pub fn next_batch(
        &mut self,
        snap: &Snapshot<'_>,
        interrupt: Interrupt<'_>,
        out: &mut Vec<Vec<Datum>>,
    ) -> Result<bool> {
        self.next_batch_visit(snap, interrupt, &mut |r| out.push(std::mem::take(r)))
    }

    /// Lends `visit` each row of the next batch `snap` shows (rule 6); false once
    /// the scan has read its last page. `interrupt` runs before each page.
    pub fn next_batch_visit(
        &mut self,
        snap: &Snapshot<'_>,
        interrupt: Interrupt<'_>,
        visit: &mut Visit<'_>,
    ) -> Result<bool> {
        self.next_batch_visit_early(snap, interrupt, &mut |_| true, visit)
    }

    /// [`SeqCursor::next_batch_visit`], each row first lent to `test` with only
    /// the early columns decoded, if the cursor has them (rule 9).
    pub fn next_batch_visit_early(
        &mut self,
        snap: &Snapshot<'_>,
        interrupt: Interrupt<'_>,
        test: &mut Early<'_>,
        visit: &mut Visit<'_>,
    ) -> Result<bool> {
        if self.done {
            return Ok(false);
        }
        let sh = self.sh;
        let _d = sh.drop_lock.read();
        let (key, rel) = resolved_again((self.resolve)(), self.start.is_some())?;
        let n = sh.smgr.nblocks(key, ForkNumber::Main)?;
        let (key0, n0) = *self.start.get_or_insert((key, n));
        if key != key0 {
            return Err(EngineError::ConcurrentDrop(rel.name.clone()));
        }
        if self._registered.is_none() {
            // Standby rule 9: replay of a drop waits for this scan, up to a limit.
            self._registered = crate::standby::ScanGuard::new(sh, key);
        }
        let end = n.min(n0);
        let early = self.early_masks(rel.columns.len());
        // Rule 5: a caller that reads no column (count(*)) is lent an all-NULL row;
        // no tuple is decoded.
        let none = early.is_none() && self.mask.as_ref().is_some_and(|m| !m.contains(&true));
        let mut seen = 0;
        while seen < SCAN_BATCH_ROWS {
            let Some(block) = self.claim(end) else {
                self.done = true;
                break;
            };
            interrupt()?;
            let (mask, early) = (self.mask.as_deref(), early.as_ref());
            let row = &mut self.row;
            let cols = &rel.columns;
            access::scan_page(sh, key, block, snap, self.my, &mut |_, _, t| {
                seen += 1;
                match early {
                    Some((first, rest)) => {
                        crate::toast::decode_row_into(sh, key, cols, t, Some(first), row)?;
                        if !test(row) {
                            return Ok(());
                        }
                        crate::toast::decode_more_into(sh, key, cols, t, rest, row)?;
                    }
                    None if none => all_null(row, cols.len()),
                    None => crate::toast::decode_row_into(sh, key, cols, t, mask, row)?,
                }
                visit(row);
                Ok(())
            })?;
            self.next = block + 1;
        }
        Ok(!self.done)
    }
}

/// An index range scan's position (rules 1-4): rows in index order, or in
/// reverse order for a backward range.
pub struct IndexCursor<'e> {
    sh: &'e Shared,
    resolve: ResolveIndex<'e>,
    range: IndexRange,
    my: Option<Xid>,
    start: Option<RelKey>,
    /// The last entry read: the next batch starts after it.
    after: Option<Vec<u8>>,
    done: bool,
    /// The columns to decode (None: all; rule 5).
    mask: Option<Vec<bool>>,
    /// The row lent to a visitor (rule 6).
    row: Vec<Datum>,
    /// Entries the next batch reads (rule 7).
    batch: usize,
    /// Rows from the keys where the heap page is all visible (rule 11).
    index_only: bool,
    /// Rows an index-only scan read from the heap (EXPLAIN's Heap Fetches).
    heap_fetches: u64,
    _registered: Option<crate::standby::ScanGuard<'e>>,
}

/// Rule 7: entries an index cursor's first batch reads.
const FIRST_INDEX_BATCH: usize = 8;

impl<'e> IndexCursor<'e> {
    pub(crate) fn new(
        sh: &'e Shared,
        resolve: ResolveIndex<'e>,
        range: IndexRange,
        my: Option<Xid>,
    ) -> Self {
        IndexCursor {
            sh,
            resolve,
            range,
            my,
            start: None,
            after: None,
            done: false,
            batch: FIRST_INDEX_BATCH,
            mask: None,
            row: Vec::new(),
            index_only: false,
            heap_fetches: 0,
            _registered: None,
        }
    }

    /// Gives each row from its entry's key where the visibility map allows (rule
    /// 11); the caller reads only the index's columns.
    pub fn index_only(mut self) -> Self {
        self.index_only = true;
        self
    }

    /// Rule 7: the caller will take at most `rows` rows; the first batch reads
    /// no more entries than that.
    pub fn wanting(mut self, rows: usize) -> Self {
        self.batch = rows.clamp(1, FIRST_INDEX_BATCH);
        self
    }

    /// Rows an index-only scan has read from the heap so far (rule 11).
    pub fn heap_fetches(&self) -> u64 {
        self.heap_fetches
    }

    /// Decodes only the columns `mask` marks; the rest read as NULL (rule 5).
    pub fn only(mut self, mask: Vec<bool>) -> Self {
        self.mask = Some(mask);
        self
    }

    /// Appends the rows of the next batch of entries that `snap` shows to `out`;
    /// false once the range is done.
    pub fn next_batch(
        &mut self,
        snap: &Snapshot<'_>,
        interrupt: Interrupt<'_>,
        out: &mut Vec<Vec<Datum>>,
    ) -> Result<bool> {
        self.next_batch_visit(snap, interrupt, &mut |r| out.push(std::mem::take(r)))
    }

    /// Lends `visit` the rows of the next batch of entries that `snap` shows (rule
    /// 6); false once the range is done.
    pub fn next_batch_visit(
        &mut self,
        snap: &Snapshot<'_>,
        interrupt: Interrupt<'_>,
        visit: &mut Visit<'_>,
    ) -> Result<bool> {
        if self.done {
            return Ok(false);
        }
        let Some(bounds) = self.range.bounds() else {
            self.done = true;
            return Ok(false);
        };
        interrupt()?;
        let sh = self.sh;
        let _d = sh.drop_lock.read();
        let (heap, rel, ikey) = resolved_again((self.resolve)(), self.start.is_some())?;
        if *self.start.get_or_insert(ikey) != ikey {
            return Err(EngineError::ConcurrentDrop(rel.name.clone()));
        }
        if self._registered.is_none() {
            self._registered = crate::standby::ScanGuard::new(sh, heap);
        }
        let mut tids = Vec::new();
        let after = self.after.as_deref();
        let n = self.batch;
        self.batch = (n * 2).min(SCAN_BATCH_ROWS);
        let mut last = Vec::new();
        // Rule 11: an index-only batch keeps every entry, its key to read.
        let keys = self.index_only_kinds(&rel, ikey);
        let mut arena = index::KeyArena::default();
        let keep = match keys {
            Some(_) => index::Keep::All(&mut arena),
            None => index::Keep::Last(&mut last),
        };
        let done = match self.range.backward {
            true => index::range_tids_backward(sh, ikey, &bounds, after, n, &mut tids, keep)?,
            false => index::range_tids(sh, ikey, &bounds, after, n, &mut tids, keep)?,
        };
        if snap.cancelled_by_recovery() {
            // Standby rule 9: replay may have removed entries this scan needed.
            return Err(EngineError::RecoveryConflict);
        }
        if let Some(l) = arena.last() {
            last = l.to_vec();
        }
        let keys = keys.map(|(pos, kinds)| (pos, kinds, &arena));
        self.visit_entries(snap, (heap, &rel), keys, &tids, visit)?;
        if !tids.is_empty() {
            self.after = Some(last);
        }
        self.done = done;
        Ok(!done)
    }

    /// Rule 11: the index and how its keys read back, for an index-only scan on a
    /// primary whose keys all do; None to fetch every row.
    fn index_only_kinds(
        &self,
        rel: &RelEntry,
        ikey: RelKey,
    ) -> Option<(usize, Vec<strata_btree::key::PartKind>)> {
        if !self.index_only || self.sh.recovery.in_recovery.load(Ordering::Acquire) {
            return None;
        }
        let pos = rel
            .indexes
            .iter()
            .position(|ix| ix.relfilenumber == ikey.rel)?;
        Some((pos, index::key_kinds(rel, &rel.indexes[pos])?))
    }

    /// Lends `visit` the row of each entry of `tids` that `snap` shows: from its
    /// key where `keys` is given and its heap page is all visible (rule 11), else
    /// fetched from the heap (rule 10).
    fn visit_entries(
        &mut self,
        snap: &Snapshot<'_>,
        (heap, rel): (RelKey, &RelEntry),
        keys: Option<(usize, Vec<strata_btree::key::PartKind>, &index::KeyArena)>,
        tids: &index::Entries,
        visit: &mut Visit<'_>,
    ) -> Result<()> {
        let sh = self.sh;
        let mut fetcher = index::Fetcher::new(sh, heap)?;
        // The map's bits, read after every entry of the batch was (index rule 5).
        let mut word: Option<(u32, u64)> = None;
        for (i, (_, tid)) in tids.iter().enumerate() {
            if let Some((pos, kinds, arena)) = &keys {
                let b = tid.block.0;
                let (base, bits) = match word {
                    Some((base, bits)) if b & !63 == base => (base, bits),
                    _ => access::vm_word(sh, heap, b)?,
                };
                word = Some((base, bits));
                if bits >> (b - base) & 1 == 1 {
                    let ix = (rel, &rel.indexes[*pos], kinds.as_slice());
                    index::key_row(ix, arena.get(i), self.mask.as_deref(), &mut self.row)?;
                    visit(&mut self.row);
                    continue;
                }
            }
            // Index-only or not (on a standby every row is fetched), counted.
            self.heap_fetches += u64::from(self.index_only);
            let mask = self.mask.as_deref();
            let row = &mut self.row;
            let got = fetcher.fetch(*tid, snap, self.my, |t| match mask {
                // Rule 5: no column read, none decoded.
                Some(m) if !m.contains(&true) => {
                    all_null(row, rel.columns.len());
                    Ok(())
                }
                _ => crate::toast::decode_row_into(sh, heap, &rel.columns, t, mask, row),
            })?;
            if got.is_some() {
                visit(row);
            }
        }
        Ok(())
    }
}

/// `row` made `width` NULLs (rule 5's row when no column is read); the visitor
/// may have taken or changed the last one.
fn all_null(row: &mut Vec<Datum>, width: usize) {
    if row.len() != width || row.iter().any(|d| !d.is_null()) {
        row.clear();
        row.resize(width, Datum::Null);
    }
}
