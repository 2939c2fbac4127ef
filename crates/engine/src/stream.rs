//! Streaming scans: a table's rows handed to a visitor in bounded batches, never
//! collected whole.
//!
//! Entry points: [`crate::Engine::scan_each`] and [`crate::Txn::scan_each`], both over
//! [`scan_batches`].
//!
//! Rules (engine rules 8 and 9 for a scan whose consumer may wait, e.g. on a client
//! that reads slowly):
//! 1. A batch — whole pages, until at least [`SCAN_BATCH_ROWS`] rows — is read with
//!    the drop lock held shared; the lock is released before the batch's rows go to
//!    the visitor. A consumer that waits therefore never holds back DROP, TRUNCATE or
//!    VACUUM's truncation, whose file removal cannot wait on a client: its commit
//!    record is already durable. (PostgreSQL holds AccessShareLock for the statement
//!    instead; here that would stall the committed dropper, and the writer lock with
//!    it, for as long as the slowest client.)
//! 2. The snapshot is taken once, before the first batch, and lives until the scan
//!    ends (engine rule 9). VACUUM keeps every tuple it can see, so a page not yet
//!    reached still holds them all, and a page cut off by a truncation held none.
//! 3. Each batch resolves the relation again under the lock. If its storage is gone
//!    (dropped, or given new storage by TRUNCATE) the scan fails with
//!    [`EngineError::ConcurrentDrop`] (40001) rather than read removed files; it never
//!    reads past the relation's current length (a VACUUM cut) nor past its length at
//!    the start (pages added since hold nothing the snapshot sees, rule 2).
//! 4. A visitor that returns `false` ends the scan at once: no page beyond the
//!    current batch is read (LIMIT).
//!
//! Memory: one batch, O([`SCAN_BATCH_ROWS`] + rows of one page), whatever the table.

use crate::access::Snapshot;
use crate::catalog::RelEntry;
use crate::cursor::SeqCursor;
use crate::{Datum, Interrupt, Result, Shared};
use std::sync::Arc;
use strata_types::{RelKey, Xid};

/// Rows a streaming scan reads under one hold of the drop lock (rule 1): whole
/// pages until at least this many.
pub const SCAN_BATCH_ROWS: usize = 1024;

/// A visitor of rows: `Ok(false)` stops the scan (rule 4).
pub type RowVisitor<'a> = dyn FnMut(Vec<Datum>) -> Result<bool> + 'a;

/// Resolves the relation a scan reads: its storage key and entry, as of now.
pub(crate) type Resolve<'a> = &'a dyn Fn() -> Result<(RelKey, Arc<RelEntry>)>;

/// Visits the rows of a relation visible to `my` (None: a reader) as of the scan's
/// start, in batches (rules 1-4). `interrupt` runs before each page.
/// O(pages of the relation read so far); memory O(one batch).
pub(crate) fn scan_batches(
    sh: &Shared,
    resolve: Resolve<'_>,
    (snap, my): (&Snapshot<'_>, Option<Xid>),
    interrupt: Interrupt<'_>,
    f: &mut RowVisitor<'_>,
) -> Result<()> {
    let mut cursor = SeqCursor::new(sh, Box::new(resolve), my);
    let mut batch: Vec<Vec<Datum>> = Vec::new();
    loop {
        let more = cursor.next_batch(snap, interrupt, &mut batch)?;
        for row in batch.drain(..) {
            if !f(row)? {
                return Ok(());
            }
        }
        if !more {
            return Ok(());
        }
    }
}
