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

use crate::access::{self, Snapshot};
use crate::catalog::RelEntry;
use crate::{Datum, EngineError, Interrupt, Result, Shared};
use std::sync::Arc;
use strata_types::{ForkNumber, RelKey, Xid};

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
    my: Option<Xid>,
    interrupt: Interrupt<'_>,
    f: &mut RowVisitor<'_>,
) -> Result<()> {
    let snap = Snapshot::take(sh);
    // The storage and length at the start (rule 3).
    let mut start: Option<(RelKey, u32)> = None;
    let mut next = 0u32;
    let mut batch: Vec<Vec<Datum>> = Vec::new();
    let mut _registered = None;
    loop {
        let done = read_batch(
            sh, resolve, &snap, my, interrupt, &mut start, &mut next, &mut batch,
        )?;
        if _registered.is_none() {
            // Standby rule 9: replay of a drop waits for this scan, up to a limit.
            _registered = start.and_then(|(key, _)| crate::standby::ScanGuard::new(sh, key));
        }
        for row in batch.drain(..) {
            if !f(row)? {
                return Ok(());
            }
        }
        if done {
            return Ok(());
        }
    }
}

/// Reads the next batch into `batch` under the drop lock (rule 1). Whether the
/// scan has reached its last page.
#[allow(clippy::too_many_arguments)]
fn read_batch(
    sh: &Shared,
    resolve: Resolve<'_>,
    snap: &Snapshot<'_>,
    my: Option<Xid>,
    interrupt: Interrupt<'_>,
    start: &mut Option<(RelKey, u32)>,
    next: &mut u32,
    batch: &mut Vec<Vec<Datum>>,
) -> Result<bool> {
    let _d = sh.drop_lock.read();
    let (key, rel) = match (resolve(), &start) {
        (Ok(r), _) => r,
        (Err(EngineError::UndefinedTable(name)), Some(_)) => {
            return Err(EngineError::ConcurrentDrop(name))
        }
        (Err(e), _) => return Err(e),
    };
    let n = sh.smgr.nblocks(key, ForkNumber::Main)?;
    let (key0, n0) = *start.get_or_insert((key, n));
    if key != key0 {
        return Err(EngineError::ConcurrentDrop(rel.name.clone()));
    }
    let end = n.min(n0);
    while *next < end && batch.len() < SCAN_BATCH_ROWS {
        interrupt()?;
        access::scan_page(sh, key, *next, snap, my, &mut |_, _, t| {
            batch.push(crate::toast::decode_row(sh, key, &rel.columns, t)?);
            Ok(())
        })?;
        *next += 1;
    }
    Ok(*next >= end)
}
