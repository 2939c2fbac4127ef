//! The interface between the redo loop and the resource managers' redo functions.
//!
//! Each resource manager's redo lives beside the code that writes its records:
//!
//! | rmgr | records | redo function |
//! |------|---------|---------------|
//! | XLOG | CHECKPOINT, NEXTOID, FPI, BACKUP_END | `checkpoint::xlog_redo` |
//! | Transaction | COMMIT, ABORT | `xact::xact_redo` |
//! | Storage | CREATE, TRUNCATE | `access::smgr_redo` |
//! | Database | CREATE_WAL_LOG, CREATE_FILE_COPY | `xact::dbase_redo` |
//! | Tablespace | CREATE | `xact::tblspc_redo` |
//! | Heap | INSERT, DELETE, PRUNE (and the VM bits they carry) | `access::heap_redo` |
//! | Btree | INSERT, INSERT_MANY, PAGES, DELETE | `btree::btree_redo` |
//! | Sequence | LOG | `sequence::seq_redo` |
//!
//! `recovery` dispatches on the record's rmgr and owns the bookkeeping that spans
//! records — skipped (invalid) pages, transactions without commit or abort, the highest
//! xid, OID and relfilenumber seen — behind [`RedoContext`], the only thing a redo
//! function may ask of it. The catalog writes no records of its own: its rows are heap
//! records, and DDL is the Storage, Database, Tablespace and Transaction records.
//!
//! Rules:
//! 1. A redo function changes pages only through [`RedoContext::redo_block`] (recovery
//!    rule 2: full-page images, `will_init`, the page-LSN test, invalid pages).
//! 2. Whatever a record creates is reported with [`RedoContext::created`] before the
//!    files appear, and a commit or abort ends its transaction with
//!    [`RedoContext::ended`] after its files are removed (recovery rule 4).
//! 3. A record of an info a resource manager does not know is [`unknown_record`]:
//!    corruption, which stops recovery.

use crate::records::{BlockRef, PendingCreate};
use crate::standby::CatalogRow;
use crate::{corrupt, EngineError, Result, Shared};
use strata_page::PageBuf;
use strata_types::{BlockNumber, ForkNumber, Lsn, Oid, RelFileNumber, RelKey, Xid};
use strata_wal::Record;

/// A change applied to a page in redo; an error says why the page cannot take it.
pub(crate) type PageRedo<'a> = &'a mut dyn FnMut(&mut PageBuf) -> std::result::Result<(), String>;

/// What a resource manager's redo may ask of the redo loop (implemented in `recovery`).
pub(crate) trait RedoContext {
    /// The engine's shared state (pool, storage manager, commit log, settings).
    fn shared(&self) -> &Shared;

    /// Recovery rule 2 for one block reference of `r`: restores its image, or
    /// initializes it and applies `apply`, or applies `apply` if the page's LSN is
    /// before the record's end; sets the page LSN. Returns `None` if the relation or
    /// block is gone (skipped and remembered), `Some(applied)` otherwise.
    fn redo_block(&mut self, r: &Record, b: &BlockRef, apply: PageRedo<'_>)
        -> Result<Option<bool>>;

    /// An xid in use: after replay, the next xid is past it.
    fn saw_xid(&mut self, xid: Xid);
    /// An OID in use (a database, a tablespace, the last of a NEXTOID range): after
    /// replay, the next OID is past it.
    fn saw_oid(&mut self, oid: Oid);
    /// A relfilenumber in use: after replay, the next one is past it.
    fn saw_relfilenumber(&mut self, rel: RelFileNumber);

    /// `xid` created `what`: removed at the end unless `xid` commits or aborts first.
    fn created(&mut self, xid: Xid, what: PendingCreate);
    /// `xid` committed or aborted: what it created is no longer pending.
    fn ended(&mut self, xid: Xid);

    /// The relations are dropped: their skipped pages are explained. O(rels).
    fn forget_rels(&mut self, rels: &[RelKey]);
    /// The database is dropped: its skipped pages are explained. O(its entries).
    fn forget_db(&mut self, db: Oid);
    /// The creates are undone: their skipped pages are explained.
    fn forget_created(&mut self, created: &[PendingCreate]);
    /// A fork truncated to `len` blocks explains skipped blocks at or past `len`.
    fn truncated(&mut self, rel: RelKey, fork: ForkNumber, len: BlockNumber);

    /// False for a tablespace dropped later in the WAL (its link is gone): records for
    /// it are skipped.
    fn spc_available(&self, spc: Oid) -> bool;

    /// The end of the online base backup that started at `start` (a BACKUP_END
    /// record): recovery from that backup may end from here on (recovery rule 10).
    fn backup_end(&mut self, start: Lsn);

    /// Replay runs from a base backup (recovery rule 10) or on a standby, whose copied
    /// files may predate or half-hold what a record says was already on disk.
    fn replaying_backup(&self) -> bool;

    /// `xid` inserted or deleted a catalog row: a standby's cache learns it when `xid`
    /// commits (standby rule 5).
    fn catalog_row(&mut self, xid: Xid, row: CatalogRow);

    /// `xid` committed: called before its dropped files are removed (standby rule 5).
    fn committed(&mut self, xid: Xid) -> Result<()>;

    /// Replay runs on a hot standby (sessions may be reading): conflicts with their
    /// queries must be resolved first (standby rule 9).
    fn hot_standby(&self) -> bool;
}

/// Rule 3: the error for a record no resource manager knows.
pub(crate) fn unknown_record(r: &Record) -> EngineError {
    corrupt(format!(
        "unknown record type rmgr {} info {:#04x}",
        r.rmgr.0, r.info
    ))
}
