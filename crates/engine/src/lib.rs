//! The engine: transactions, catalog, heap with free-space and visibility maps,
//! checkpoints and crash recovery, over the buffer pool and the WAL.
//!
//! Entry points: [`Engine::init`] (a new cluster, like initdb), [`Engine::open`]
//! (recovers, then serves), [`Engine::begin`] → [`Txn`] (DDL and DML, then
//! [`Txn::commit`] or [`Txn::abort`]), [`Engine::scan`], [`Engine::vacuum`],
//! [`Engine::checkpoint`], [`Engine::start_backup`] (a base backup), [`Engine::close`].
//!
//! Module map, in dependency order: `codec` (byte encoding), `records` (WAL record
//! formats), `redo` (what a resource manager's redo may ask of the redo loop), `heap`
//! (tuples and page operations), `clog` (commit log), `acl` (privileges and ACL items
//! in their catalog text form), `stats` (planner statistics and their byte form),
//! `catalog` (incl. `pg_authid` and `pg_statistic`), `roles` (the role
//! catalog's rows, predefined roles, membership, owners and ACLs set on objects),
//! `access` (heap/FSM/VM
//! through the pool, the WAL-logged change; Heap and Storage redo), `btree` (B-tree
//! pages through the pool; Btree redo), `index` (a table's indexes: keys, builds,
//! upkeep, VACUUM's entry removal, index scans, the check), `toast` (values stored
//! out of line in a table's TOAST heap), `sequence` (sequences' one-page state, nextval
//! and setval outside transactions; Sequence redo), `xact` (transactions
//! and DDL; Transaction, Database and Tablespace redo), `checkpoint` (XLOG redo),
//! `recovery` (start-up, the redo loop dispatching on the resource manager, and its
//! bookkeeping), `standby` (a standby's continuous replay, read-only sessions, the
//! received WAL, restartpoints), `temp` (each session's temporary relations: names looked up ahead of permanent ones, no pg_class row, no WAL), `waldump` (records described for `strata waldump`). Each resource
//! manager's redo lives beside the code that writes its records (the table in `redo`).
//!
//! Rules (cited as "engine rule N"):
//! 1. One writer at a time: a [`Txn`] holds the writer lock from begin to end. Readers
//!    run concurrently and see committed data only (clog rule 1).
//! 2. A WAL-logged page change follows PostgreSQL's steps: pin, lock exclusively, apply,
//!    mark dirty, insert the record (with a full-page image if the page's LSN is at or
//!    before the redo point), set the page LSN to the record's end, unlock. The FPI
//!    decision and the insert happen under the redo-pointer lock, so a checkpoint
//!    cannot start between them.
//! 3. Files go after the record that makes it so is durable: a commit's drops after its
//!    commit record is flushed, a truncation after its record is flushed. Buffers are
//!    dropped before files, so no write-back can recreate a removed file.
//! 4. A file a transaction creates is created only after its create record is durable
//!    (flushed, not merely written: a power loss can take unsynced WAL yet keep the new
//!    directory entry). So every file recovery does not know about is one it finds in
//!    the WAL, and removes if its transaction never committed. Forks and copies that
//!    a durable create covers (a map fork of an existing relation, files inside a new
//!    database's directory) need only reach the kernel (`Wal::write_through`), and so
//!    does a database directory, which crash recovery sweeps (recovery rule 9). Creates
//!    made before a checkpoint's redo point by the transaction then running travel in
//!    the checkpoint record.
//! 5. Between a commit or truncate record and its file removal, no checkpoint can
//!    complete: a truncation removes under the redo-pointer lock (shared), and a
//!    commit queues its dropped relations' files under it for the unlinker thread,
//!    which every checkpoint and restartpoint waits for (unlink rule 1). A crash
//!    never leaves a durable drop whose files survive because replay started after
//!    its record; the commit does not wait for the removals.
//! 6. Every operation's cost is proportional to the pages and objects it touches:
//!    nothing here visits every buffer, every relation or every file.
//! 7. A failure after which durability is unknown is a PANIC, never an ERROR: a failed
//!    insert, write or flush of WAL (a change may already be in a page; a commit may or
//!    may not be durable), any failure of a checkpoint (data writes, the commit log,
//!    fsyncs, the control file), and a failed fsync anywhere (PostgreSQL's
//!    data_sync_retry = off: the kernel may have dropped the dirty pages and will not
//!    say so twice). It is logged, latched (`Fatal`), and the settings' `on_fatal`
//!    ends the process; restart recovers from WAL. Nothing retries.
//! 8. Scans hold the drop lock shared from the relation's lookup to their last page;
//!    dropping files and truncating a relation (VACUUM) hold it exclusively, taken
//!    after the redo-pointer lock. A scan therefore never reads a page past a cut, nor
//!    a stale on-disk version of a page whose buffer a truncation dropped.
//! 9. A scan sees the database as of its start (a snapshot): the transactions
//!    committed then, never part of one that commits while it runs. With one writer,
//!    the snapshot is two numbers: the next xid and the running xid (`Snapshot`).
//!    Live snapshots are registered; VACUUM removes a deleted tuple only when its
//!    deleter committed below the oldest of them.
//! 10. A REPEATABLE READ transaction reads and writes as of one snapshot, taken at
//!     its first statement ([`Txn::fix_snapshot`]); it changes only rows that
//!     snapshot sees, and one whose deleter committed since fails with 40001 ("could
//!     not serialize access due to concurrent update"), never silently skips it.

mod access;
pub mod acl;
mod btree;
mod catalog;
mod checkpoint;
mod clog;
mod codec;
mod cursor;
mod heap;
mod index;
mod records;
mod recovery;
mod redo;
mod roles;
mod sequence;
mod standby;
pub mod stats;
mod stream;
pub mod temp;
mod toast;
mod unlink;
pub mod waldump;
mod xact;

pub use access::Snapshot;
pub use access::VacuumStats;
pub use catalog::RoleDep;
pub use catalog::{
    Acl, DbEntry, FkAction, ForeignKey, IndexDef, Membership, RelEntry, RoleEntry, SeqDef,
    SpcEntry, ViewDef, BOOTSTRAP_SUPERUSER, BOOTSTRAP_SUPERUSER_OID, POSTGRES_OID, TEMPLATE0_OID,
    TEMPLATE1_OID,
};
pub use checkpoint::{CheckpointStats, OnlineBackup};
pub use cursor::{IndexCursor, SeqCursor};
pub use heap::{fit_numeric, round_micros, ColType, Column, Datum, Numeric};
pub use index::{key_kinds, IndexRange};
pub use records::record_name;
pub use recovery::utc_timestamp;
pub use roles::{is_system_role, RelAccess, RoleDependent, PREDEFINED_ROLES};
pub use sequence::SeqOptions;
pub use standby::ReplayStats;
pub use stats::{ColumnStats, TableStats};
pub use strata_buffer::usage::{
    absorb as absorb_buffer_usage, usage as buffer_usage, Usage as BufferUsage,
};
pub use stream::{RowVisitor, SCAN_BATCH_ROWS};
pub use xact::{Access, CreateDbStrategy, NewIndex, Txn, Upsert, UpsertState};
/// On-page layouts a test may check through [`Engine::pool`]: the heap page flag
/// "every tuple visible to all" and the heap blocks one VM page maps (one bit each,
/// after the page header; access.rs's map table).
pub use {access::VM_PER_PAGE, heap::PD_ALL_VISIBLE};

use catalog::CatalogCache;
use clog::Clog;
use parking_lot::{Condvar, Mutex, RecursiveRwLock, RwLock};
use records::PendingCreate;
use rustc_hash::FxHashMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, OnceLock};
use std::thread::JoinHandle;
use std::time::Duration;
use strata_buffer::{BufferError, BufferPool, WalFlusher};
use strata_smgr::{Smgr, SmgrError};
use strata_types::{Lsn, Oid, RelFileNumber, RelKey, Xid};
use strata_vfs::{StdVfs, Vfs};
use strata_wal::control::ControlError;
use strata_wal::redo::RedoError;
use strata_wal::{RmgrId, Wal, WalError};
use thiserror::Error;

/// Where log lines go (the server sends them to stderr or `log_directory`).
pub type LogSink = Arc<dyn Fn(&str) + Send + Sync>;

/// Called after a PANIC has been logged (engine rule 7). The server's ends the process;
/// the default aborts it. A test's may return: the engine then stays latched failed.
pub type FatalHook = Arc<dyn Fn(&str) + Send + Sync>;

/// Called on a hot standby when replay is about to drop database `name` (standby
/// rule 9): the server ends the sessions connected to it (57P04).
pub type DropDatabaseHook = Arc<dyn Fn(&str) + Send + Sync>;

/// How crash recovery first makes the data directory durable (PostgreSQL's
/// `recovery_init_sync_method`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RecoverySyncMethod {
    /// fsync every file, one by one.
    Fsync,
    /// syncfs() each file system the data directory and its tablespaces live on.
    Syncfs,
}

/// Settings, with PostgreSQL's names (units in the field names).
#[derive(Clone)]
pub struct Settings {
    pub shared_buffers_bytes: u64,
    pub full_page_writes: bool,
    pub checkpoint_timeout: Duration,
    pub max_wal_size_bytes: u64,
    /// WAL kept behind the insert position for consumers without a slot
    /// (PostgreSQL's `wal_keep_size`).
    pub wal_keep_size_bytes: u64,
    /// `archive_mode = on`: completed segments are marked for the archiver and kept
    /// until archived (archive rules 1-2 in `strata_wal::archive`).
    pub archive_mode: bool,
    /// With archiving on, a segment holding WAL is switched off (and so archived) at
    /// most this long after it began (`archive_timeout`; zero: never).
    pub archive_timeout: Duration,
    /// Used by `init` only; an existing cluster keeps the size it was made with.
    pub wal_segment_bytes: u64,
    pub max_files_per_process: usize,
    pub recovery_init_sync_method: RecoverySyncMethod,
    /// How long a standby's replay waits for queries that conflict with it before
    /// cancelling them (`max_standby_streaming_delay`; `None`: forever).
    pub max_standby_delay: Option<Duration>,
    /// The same, while replaying WAL restored from the archive
    /// (`max_standby_archive_delay`; `None`: forever).
    pub max_standby_archive_delay: Option<Duration>,
    /// Fetches an archived WAL segment during recovery (`%f` its name, `%p` where to
    /// put it, relative to the data directory): standby rule 11.
    pub restore_command: Option<String>,
    /// Recovery stops before the first record at or after it, then promotes.
    pub recovery_target_lsn: Option<Lsn>,
    pub log: LogSink,
    pub on_fatal: FatalHook,
    /// Standby rule 9: sessions on a database replay drops are ended through it.
    pub on_drop_database: Option<DropDatabaseHook>,
    /// The file system under every durable file (engine rule 7's seam for tests).
    pub vfs: Arc<dyn Vfs>,
}

impl Default for Settings {
    fn default() -> Settings {
        Settings {
            shared_buffers_bytes: 128 << 20,
            full_page_writes: true,
            checkpoint_timeout: Duration::from_secs(300),
            max_wal_size_bytes: 1 << 30,
            wal_keep_size_bytes: 0,
            archive_mode: false,
            archive_timeout: Duration::ZERO,
            wal_segment_bytes: strata_wal::WAL_SEGMENT_BYTES_DEFAULT,
            max_files_per_process: 1000,
            recovery_init_sync_method: RecoverySyncMethod::Fsync,
            max_standby_delay: Some(Duration::from_secs(30)),
            max_standby_archive_delay: Some(Duration::from_secs(30)),
            restore_command: None,
            recovery_target_lsn: None,
            log: Arc::new(|line: &str| eprintln!("LOG:  {line}")),
            on_fatal: Arc::new(|_: &str| std::process::abort()),
            on_drop_database: None,
            vfs: StdVfs::arc(),
        }
    }
}

impl std::fmt::Debug for Settings {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Settings")
            .field("shared_buffers_bytes", &self.shared_buffers_bytes)
            .field("full_page_writes", &self.full_page_writes)
            .field("checkpoint_timeout", &self.checkpoint_timeout)
            .field("max_wal_size_bytes", &self.max_wal_size_bytes)
            .field("recovery_init_sync_method", &self.recovery_init_sync_method)
            .finish()
    }
}

#[derive(Debug, Error)]
pub enum EngineError {
    #[error(transparent)]
    Smgr(#[from] SmgrError),
    #[error(transparent)]
    Buffer(#[from] BufferError),
    #[error(transparent)]
    Wal(#[from] WalError),
    #[error(transparent)]
    Control(#[from] ControlError),
    #[error(transparent)]
    Redo(#[from] RedoError),
    #[error(transparent)]
    Slot(#[from] strata_wal::slots::SlotError),
    #[error("could not {op} \"{path}\": {source}")]
    Io {
        op: &'static str,
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("corrupt data: {0}")]
    Corrupt(String),
    #[error("\"{0}\" is not a Strata data directory (no global/pg_control); create one with: strata init -D {0}")]
    NotACluster(PathBuf),
    #[error("directory \"{0}\" exists but is not empty")]
    NotEmpty(PathBuf),
    #[error("relation \"{0}\" does not exist")]
    UndefinedTable(String),
    #[error("relation \"{0}\" already exists")]
    DuplicateTable(String),
    #[error("column \"{0}\" does not exist")]
    UndefinedColumn(String),
    #[error("column \"{column}\" of relation \"{table}\" already exists")]
    DuplicateColumn { column: String, table: String },
    #[error("database \"{0}\" does not exist")]
    UndefinedDatabase(String),
    #[error("database \"{0}\" already exists")]
    DuplicateDatabase(String),
    #[error("tablespace \"{0}\" does not exist")]
    UndefinedTablespace(String),
    #[error("tablespace \"{0}\" already exists")]
    DuplicateTablespace(String),
    /// A role (or another object of that kind) of that name exists (42710).
    #[error("{0}")]
    DuplicateObject(String),
    #[error("tablespace \"{0}\" is not empty")]
    TablespaceNotEmpty(String),
    #[error("{0}")]
    InvalidTablespaceLocation(String),
    #[error("{0}")]
    ObjectInUse(String),
    #[error("{0}")]
    DatatypeMismatch(String),
    #[error(
        "null value in column \"{column}\" of relation \"{table}\" violates not-null constraint"
    )]
    NotNullViolation { column: String, table: String },
    /// A unique index refused a key (index rule 3): the index and the key's columns.
    #[error("duplicate key value violates unique constraint \"{constraint}\"")]
    UniqueViolation {
        constraint: String,
        key: Vec<(String, Datum)>,
    },
    /// An ON CONFLICT DO UPDATE meeting a row twice.
    #[error("{0}")]
    CardinalityViolation(String),
    /// A REPEATABLE READ transaction changing a row changed since its snapshot
    /// (engine rule 10).
    #[error("{0}")]
    SerializationFailure(String),
    /// A second PRIMARY KEY, or a constraint naming a column twice.
    #[error("{0}")]
    InvalidTableDefinition(String),
    /// DROP INDEX of an index a constraint owns.
    #[error("{0}")]
    DependentObjects(String),
    /// An index or constraint that does not exist (the whole message).
    #[error("{0}")]
    UndefinedObject(String),
    /// A relation of the wrong kind: a sequence where a table is needed, or the
    /// reverse (the whole message).
    #[error("{0}")]
    WrongObjectType(String),
    /// nextval at the bound of a sequence that does not cycle.
    #[error("{0}")]
    SequenceLimit(String),
    #[error("{0}")]
    NumericOutOfRange(String),
    /// A value past one of Strata's limits (PostgreSQL's program_limit_exceeded).
    #[error("{0}")]
    ProgramLimit(String),
    /// An index entry past btree page rule 6's limit: PostgreSQL's words, with the
    /// row's place (`tid`, 1-based item as PostgreSQL counts) for the DETAIL.
    #[error("index row size {size} exceeds btree version 4 maximum {max} for index \"{index}\"", max = strata_btree::page::MAX_ENTRY_BYTES)]
    IndexRowTooBig {
        size: usize,
        index: String,
        table: String,
        tid: (u32, u16),
    },
    /// A value too large for its `numeric(precision, scale)` column.
    #[error("numeric field overflow")]
    NumericFieldOverflow { detail: String },
    #[error("value too long for type {0}")]
    StringTooLong(String),
    #[error("{0}")]
    InvalidParameter(String),
    #[error("{0}")]
    NotSupported(String),
    /// A write on a standby (standby rule 3).
    #[error("cannot execute {0} in a read-only transaction")]
    ReadOnly(String),
    /// A WAL function on a standby.
    #[error("recovery is in progress")]
    RecoveryInProgress,
    #[error("recovery is not in progress")]
    NotInRecovery,
    /// A standby query cancelled because replay must remove rows it may see
    /// (standby rule 9).
    #[error("canceling statement due to conflict with recovery: the query might have needed to see row versions that replay had to remove")]
    RecoveryConflict,
    /// A streaming scan's relation was dropped or truncated between two of its
    /// batches (`stream` rule 3).
    #[error("could not serialize access due to concurrent DROP or TRUNCATE of relation \"{0}\"")]
    ConcurrentDrop(String),
    #[error("row is too big: size {0}, maximum size {max}", max = heap::TUPLE_MAX_BYTES)]
    RowTooBig(usize),
    /// A failure that leaves durability unknown (engine rule 7): logged as PANIC; the
    /// engine refuses all further work until restarted.
    #[error("PANIC: {0}")]
    Fatal(String),
    /// The caller's interrupt check stopped an operation (cancel, timeout): its
    /// SQLSTATE and message are the caller's.
    #[error("{message}")]
    Interrupted { code: &'static str, message: String },
}

impl EngineError {
    /// The SQLSTATE PostgreSQL reports for this error.
    pub fn sqlstate(&self) -> &'static str {
        match self {
            EngineError::UndefinedTable(_) => "42P01",
            EngineError::WrongObjectType(_) => "42809",
            EngineError::ProgramLimit(_) | EngineError::IndexRowTooBig { .. } => "54000",
            EngineError::SequenceLimit(_) => "2200H",
            EngineError::NumericOutOfRange(_) | EngineError::NumericFieldOverflow { .. } => "22003",
            EngineError::DuplicateTable(_) => "42P07",
            EngineError::UndefinedColumn(_) => "42703",
            EngineError::DuplicateColumn { .. } => "42701",
            EngineError::UndefinedDatabase(_) => "3D000",
            EngineError::DuplicateDatabase(_) => "42P04",
            EngineError::UndefinedTablespace(_) => "42704",
            EngineError::DuplicateTablespace(_) | EngineError::DuplicateObject(_) => "42710",
            EngineError::TablespaceNotEmpty(_) => "55000",
            EngineError::InvalidTablespaceLocation(_) => "42P17",
            EngineError::ObjectInUse(_) => "55006",
            EngineError::DatatypeMismatch(_) => "42804",
            EngineError::NotNullViolation { .. } => "23502",
            EngineError::UniqueViolation { .. } => "23505",
            EngineError::CardinalityViolation(_) => "21000",
            EngineError::SerializationFailure(_) => "40001",
            EngineError::InvalidTableDefinition(_) => "42P16",
            EngineError::DependentObjects(_) => "2BP01",
            EngineError::UndefinedObject(_) => "42704",
            EngineError::StringTooLong(_) => "22001",
            EngineError::InvalidParameter(_) => "22023",
            EngineError::NotSupported(_) => "0A000",
            EngineError::ReadOnly(_) => "25006",
            EngineError::RecoveryInProgress | EngineError::NotInRecovery => "55000",
            EngineError::RecoveryConflict => "40001",
            EngineError::RowTooBig(_) => "54000",
            EngineError::ConcurrentDrop(_) => "40001",
            EngineError::Corrupt(_) => "XX001",
            EngineError::Fatal(_) => "XX000",
            EngineError::Interrupted { code, .. } => code,
            EngineError::Slot(e) => e.code,
            EngineError::Smgr(SmgrError::Location { .. }) => "42P17",
            _ => "58030", // io_error
        }
    }
}

pub type Result<T> = std::result::Result<T, EngineError>;

/// An interrupt check: called between pages or rows of a long operation and while
/// waiting for the writer lock; an `Err` (usually [`EngineError::Interrupted`]) stops
/// the operation, which then returns it.
pub type Interrupt<'a> = &'a dyn Fn() -> Result<()>;

/// The check that never interrupts.
pub fn no_interrupt() -> Result<()> {
    Ok(())
}

/// How often a waiter for the writer lock runs its interrupt check.
const WRITER_WAIT_SLICE: std::time::Duration = std::time::Duration::from_millis(10);

pub(crate) fn corrupt(e: impl std::fmt::Display) -> EngineError {
    EngineError::Corrupt(e.to_string())
}

/// The PANIC latch (engine rule 7): set by the first failure after which durability
/// is unknown; from then on the engine refuses work.
pub(crate) struct Fatal {
    failed: AtomicBool,
    log: LogSink,
    hook: FatalHook,
    smgr: Arc<Smgr>,
}

impl Fatal {
    pub fn new(settings: &Settings, smgr: Arc<Smgr>) -> Fatal {
        Fatal {
            failed: AtomicBool::new(false),
            log: settings.log.clone(),
            hook: settings.on_fatal.clone(),
            smgr,
        }
    }

    /// Logs `PANIC:  what`, latches, and calls the hook (which normally ends the
    /// process). Returns the error for callers whose hook returned.
    pub fn raise(&self, what: impl std::fmt::Display) -> EngineError {
        let msg = what.to_string();
        self.smgr.latch_failed(); // no page is written from now on
        let first = !self.failed.swap(true, Ordering::SeqCst);
        if first {
            (self.log)(&format!("PANIC:  {msg}"));
            (self.hook)(&msg);
        }
        EngineError::Fatal(msg)
    }

    /// Err once a PANIC has been raised.
    pub fn check(&self) -> Result<()> {
        if self.failed.load(Ordering::SeqCst) {
            return Err(EngineError::Fatal(
                "the engine stopped after an earlier PANIC; restart the server to recover".into(),
            ));
        }
        Ok(())
    }
}

/// The pool's WAL hook before and after the log is open: during replay every page LSN
/// points into WAL already on disk, so there is nothing to flush. A failed flush is a
/// PANIC (engine rule 7).
/// The oldest xid some other holder (a standby, through its WAL sender) still needs.
pub type HorizonHold = Arc<dyn Fn() -> Option<Xid> + Send + Sync>;

pub(crate) struct LateWal {
    pub wal: OnceLock<Arc<Wal>>,
    pub fatal: Arc<Fatal>,
    /// Given to the WAL when it opens ([`Engine::on_wal_flushed`]); the mutex orders
    /// opening against registering.
    pub on_flush: Mutex<Option<strata_wal::LsnListener>>,
}

impl LateWal {
    /// Opens the WAL for appending, once, with the flush listener if one is set.
    pub fn install(&self, wal: Arc<Wal>) {
        let listener = self.on_flush.lock();
        if let Some(f) = listener.as_ref() {
            wal.set_flush_listener(f.clone());
        }
        if self.wal.set(wal).is_err() {
            unreachable!("the WAL is opened for appending once");
        }
    }
}

impl WalFlusher for LateWal {
    fn flush_wal(&self, lsn: Lsn) -> std::result::Result<(), String> {
        match self.wal.get() {
            Some(w) => w.flush(lsn).map_err(|e| {
                self.fatal
                    .raise(format!("could not flush WAL: {e}"))
                    .to_string()
            }),
            None => Ok(()),
        }
    }
}

/// Counters handed out by the writer and saved in checkpoints.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Counters {
    pub next_xid: Xid,
    pub next_oid: Oid,
    pub next_relfilenumber: RelFileNumber,
    /// OIDs below this are covered by a NEXTOID record (PostgreSQL's way: OIDs appear
    /// in no other record, so recovery learns how far they went from it).
    pub oid_logged_upto: Oid,
}

#[derive(Default)]
pub(crate) struct CkptState {
    pub requested: bool,
    pub shutdown: bool,
    /// End of the last checkpoint record: if the log has not moved since, a
    /// checkpoint has nothing to do.
    pub last_end: Lsn,
    pub last_redo: Lsn,
    pub system_identifier: u64,
    pub count: u64,
    /// Start points of the online backups running: WAL from the oldest is kept.
    pub backup_holds: Vec<Lsn>,
}

/// `Shared::txn_seqs`: by (database, name), `None` for dropped.
pub(crate) type TxnSequences = FxHashMap<(Oid, String), Option<Arc<RelEntry>>>;

/// A change of a sequence's page: its value and the end of the record it wrote.
type SeqChange<'a> = dyn FnMut(&Shared, RelKey, &SeqDef) -> Result<(i64, Option<Lsn>)> + 'a;

pub(crate) struct Shared {
    pub dir: PathBuf,
    /// Fixed at init (pg_control).
    pub wal_segment_bytes: u64,
    /// The timeline written (primary) or replayed (standby); a promotion raises it.
    pub timeline: std::sync::atomic::AtomicU32,
    /// A standby's replay, receiver and read-only state (standby rules).
    pub recovery: standby::RecoveryState,
    pub settings: Settings,
    pub smgr: Arc<Smgr>,
    pub pool: BufferPool,
    /// Set once replay is over; the pool's WAL hook reads the same cell.
    pub late_wal: Arc<LateWal>,
    pub clog: Clog,
    pub catalog: RwLock<CatalogCache>,
    /// Engine rule 1.
    pub writer: Mutex<()>,
    /// The redo point of the checkpoint in progress or last done (engine rules 2, 5).
    /// Recursive: a thread holding it shared may take it shared again even while the
    /// checkpointer waits for it.
    pub redo_ptr: RecursiveRwLock<Lsn>,
    pub counters: Mutex<Counters>,
    /// The running writer's xid and creates (for the checkpoint record, rule 4).
    pub running: Mutex<Option<(Xid, Vec<PendingCreate>)>>,
    /// Scans hold it shared; removing files takes it exclusively.
    pub drop_lock: RecursiveRwLock<()>,
    /// Live scan snapshots by horizon, with counts (engine rule 9).
    pub snapshots: Mutex<std::collections::BTreeMap<Xid, usize>>,
    /// What standbys' queries still need (`hot_standby_feedback`): VACUUM removes no
    /// row version a standby's snapshot may see ([`Engine::hold_horizon`]).
    pub horizon_hold: OnceLock<HorizonHold>,
    /// Per relation, the block inserts go to first (PostgreSQL's rd_targblock).
    pub targblock: Mutex<FxHashMap<RelKey, u32>>,
    /// Sequences the running writer created or dropped, by (database, name), as it
    /// sees them (`None`: dropped); emptied when it ends. Its nextval finds them
    /// here, other sessions never look (`Engine::nextval`).
    pub txn_seqs: Mutex<TxnSequences>,
    /// The end of the last sequence record whose flush a writer's commit was to
    /// make (sequence rule 4); an abort flushes it too.
    pub seq_lsn: std::sync::atomic::AtomicU64,
    pub ckpt: Mutex<CkptState>,
    pub ckpt_lock: Mutex<()>,
    pub ckpt_cv: Condvar,
    /// Replication slots: the checkpointer keeps WAL from their oldest position.
    pub slots: strata_wal::slots::Slots,
    /// Dropped relations whose files are still to go (engine rule 5).
    pub unlinks: unlink::Unlinks,
}

impl Shared {
    pub fn log(&self, line: &str) {
        (self.settings.log)(line)
    }

    /// The log, open for appending. Replay never inserts, so it never calls this.
    pub fn wal(&self) -> &Wal {
        self.late_wal
            .wal
            .get()
            .expect("WAL is opened when replay ends")
    }

    pub fn fatal(&self) -> &Fatal {
        &self.late_wal.fatal
    }

    /// Inserts a WAL record; a failure is a PANIC (engine rule 7: the change it logs
    /// may already be in a page, and the log refuses writes from now on).
    pub fn wal_insert(
        &self,
        rmgr: RmgrId,
        info: u8,
        xid: u32,
        payload: &[u8],
    ) -> Result<(Lsn, Lsn)> {
        self.fatal().check()?;
        self.wal().insert(rmgr, info, xid, payload).map_err(|e| {
            self.fatal()
                .raise(format!("could not insert WAL record: {e}"))
        })
    }

    /// Flushes the WAL up to `lsn`; a failure is a PANIC (engine rule 7).
    pub fn wal_flush(&self, lsn: Lsn) -> Result<()> {
        self.wal()
            .flush(lsn)
            .map_err(|e| self.fatal().raise(format!("could not flush WAL: {e}")))
    }

    /// Hands the WAL to the kernel (engine rule 4); a failure is a PANIC.
    pub fn wal_write_through(&self) -> Result<()> {
        self.wal()
            .write_through()
            .map_err(|e| self.fatal().raise(format!("could not write WAL: {e}")))
    }
}

/// An open cluster. See the module doc.
pub struct Engine {
    sh: Arc<Shared>,
    checkpointer: Mutex<Option<JoinHandle<()>>>,
    /// A standby's startup thread (standby rules).
    startup: Mutex<Option<JoinHandle<()>>>,
    /// Removes dropped relations' files ([`unlink`]).
    unlinker: Mutex<Option<JoinHandle<()>>>,
}

/// What recovery did at open.
#[derive(Debug, Clone, Default)]
pub struct RecoveryInfo {
    pub records: u64,
    pub redo_seconds: f64,
    pub start: Lsn,
    pub end: Lsn,
    pub aborted_unfinished: usize,
}

impl Engine {
    /// Creates a cluster in `dir` (which must not exist or be empty), with the
    /// tablespaces `pg_default` and `pg_global` and the databases `template1`,
    /// `template0` and `postgres`, as initdb does.
    pub fn init(dir: &Path, settings: Settings) -> Result<()> {
        checkpoint::init_cluster(dir, &settings)?;
        let engine = Engine::open(dir, settings)?;
        xact::bootstrap(&engine)?;
        engine.close()
    }

    /// Opens a cluster: reads the control file, replays the WAL from the last
    /// checkpoint's redo point (crash recovery), removes what unfinished transactions
    /// created, writes an end-of-recovery checkpoint and starts the checkpointer.
    pub fn open(dir: &Path, settings: Settings) -> Result<Engine> {
        Engine::open_with_info(dir, settings).map(|(e, _)| e)
    }

    /// The committed catalog's change count (catalog rule 12). O(1).
    pub fn catalog_version(&self) -> u64 {
        self.sh.catalog.read().version
    }

    pub fn open_with_info(dir: &Path, settings: Settings) -> Result<(Engine, RecoveryInfo)> {
        let smgr = Arc::new(Smgr::open(
            dir,
            settings.vfs.clone(),
            settings.max_files_per_process,
        )?);
        let (sh, info, standby) = recovery::startup(dir, settings, smgr)?;
        let sh = Arc::new(sh);
        if let Some(start) = standby {
            let (thread, info) = standby::spawn(sh.clone(), start)?;
            let engine = Engine {
                checkpointer: Mutex::new(None),
                startup: Mutex::new(Some(thread)),
                unlinker: Mutex::new(Some(unlink::spawn_unlinker(sh.clone()))),
                sh,
            };
            return Ok((engine, info));
        }
        let engine = Engine {
            checkpointer: Mutex::new(Some(checkpoint::spawn_checkpointer(sh.clone()))),
            startup: Mutex::new(None),
            unlinker: Mutex::new(Some(unlink::spawn_unlinker(sh.clone()))),
            sh,
        };
        if !engine.sh.catalog.read().dbs.is_empty() {
            roles::upgrade(&engine)?; // a cluster from before the role catalog
        }
        Ok((engine, info))
    }

    /// Begins a transaction: waits for the writer lock (engine rule 1).
    pub fn begin(&self) -> Txn<'_> {
        Txn::new(&self.sh)
    }

    /// Begins a transaction, waiting for the writer lock (engine rule 1) until
    /// `deadline` at most: `Ok(None)` if it passed first. `interrupt` runs every
    /// 10 ms of waiting; its error ends the wait and is returned.
    pub fn try_begin(
        &self,
        deadline: Option<std::time::Instant>,
        interrupt: Interrupt<'_>,
    ) -> Result<Option<Txn<'_>>> {
        if self.in_recovery() {
            return Err(EngineError::ReadOnly("this statement".into())); // standby rule 3
        }
        loop {
            interrupt()?;
            let slice = match deadline {
                None => WRITER_WAIT_SLICE,
                Some(d) => {
                    let left = d.saturating_duration_since(std::time::Instant::now());
                    if left.is_zero() {
                        return Ok(self
                            .sh
                            .writer
                            .try_lock()
                            .map(|g| Txn::with_writer(&self.sh, g)));
                    }
                    left.min(WRITER_WAIT_SLICE)
                }
            };
            if let Some(g) = self.sh.writer.try_lock_for(slice) {
                return Ok(Some(Txn::with_writer(&self.sh, g)));
            }
        }
    }

    /// Ends the current WAL segment (`pg_switch_wal()`, wal rule 9) and flushes, so it
    /// is complete and can be archived. Returns the switch record's end (or the insert
    /// position if the segment had nothing). 55000 on a standby.
    pub fn switch_wal(&self) -> Result<Lsn> {
        if self.in_recovery() {
            return Err(EngineError::RecoveryInProgress);
        }
        checkpoint::switch_wal(&self.sh)
    }

    /// Runs a checkpoint now, as the CHECKPOINT command does (even if idle).
    /// O(dirty pages + files changed since the last one).
    pub fn checkpoint(&self) -> Result<CheckpointStats> {
        if self.in_recovery() {
            self.request_restartpoint(); // standby rule 3
            return Ok(CheckpointStats {
                skipped: true,
                ..Default::default()
            });
        }
        checkpoint::checkpoint(&self.sh, false, true, true)
    }

    /// The committed rows of a table. O(pages of the table); memory O(the table):
    /// for tests and tools; queries use [`Engine::scan_each`].
    pub fn scan(&self, db: &str, table: &str) -> Result<Vec<Vec<Datum>>> {
        self.scan_checked(db, table, &no_interrupt)
    }

    /// [`Engine::scan`], running `interrupt` before each page.
    pub fn scan_checked(
        &self,
        db: &str,
        table: &str,
        interrupt: Interrupt<'_>,
    ) -> Result<Vec<Vec<Datum>>> {
        let mut rows = Vec::new();
        self.scan_each(db, table, interrupt, &mut |r| {
            rows.push(r);
            Ok(true)
        })?;
        Ok(rows)
    }

    /// A snapshot for one statement's reads (engine rule 9): every cursor of the
    /// statement reads through it, so all see the same committed transactions.
    pub fn snapshot(&self) -> Snapshot<'_> {
        Snapshot::take(&self.sh)
    }

    /// A pull scan of the committed rows of `table` (`cursor` rules); the table is
    /// looked up at the first batch (42P01 then).
    pub fn seq_cursor<'a>(&'a self, db: &'a str, table: &'a str) -> SeqCursor<'a> {
        let sh = &self.sh;
        let resolve = move || {
            let cat = sh.catalog.read();
            let (dbe, rel) = cat.committed_table(db, table)?;
            rel.has_storage()?;
            Ok((rel.key(dbe), rel.clone()))
        };
        SeqCursor::new(sh, Box::new(resolve), None)
    }

    /// A pull scan of the committed rows index `index`'s `range` points at, in
    /// index order (index rule 4: the caller rechecks its WHERE).
    pub fn index_cursor<'a>(
        &'a self,
        db: &'a str,
        table: &'a str,
        index: &'a str,
        range: IndexRange,
    ) -> IndexCursor<'a> {
        let sh = &self.sh;
        let resolve = move || {
            let cat = sh.catalog.read();
            let (dbe, rel) = cat.committed_table(db, table)?;
            rel.has_storage()?;
            let ix = xact::index_of(rel, index)?;
            Ok((rel.key(dbe), rel.clone(), rel.index_key(dbe, ix)))
        };
        IndexCursor::new(sh, Box::new(resolve), range, None)
    }

    /// Visits the committed rows of a table as of the scan's start, in bounded
    /// batches (`stream` rules 1-4); `f` returning `false` stops it. `interrupt`
    /// runs before each page. O(pages read); memory O(one batch).
    pub fn scan_each(
        &self,
        db: &str,
        table: &str,
        interrupt: Interrupt<'_>,
        f: &mut RowVisitor<'_>,
    ) -> Result<()> {
        self.scan_each_as(&self.snapshot(), (db, table), interrupt, f)
    }

    /// [`Engine::scan_each`] as of `snap` (a REPEATABLE READ block's: rule 10).
    pub fn scan_each_as(
        &self,
        snap: &Snapshot<'_>,
        (db, table): (&str, &str),
        interrupt: Interrupt<'_>,
        f: &mut RowVisitor<'_>,
    ) -> Result<()> {
        let resolve = || {
            let cat = self.sh.catalog.read();
            let (dbe, rel) = cat.committed_table(db, table)?;
            rel.has_storage()?;
            Ok((rel.key(dbe), rel.clone()))
        };
        stream::scan_batches(&self.sh, &resolve, (snap, None), interrupt, f)
    }

    /// [`Engine::scan_each`] through index `index`'s `range` (index rule 4: the caller
    /// rechecks its WHERE on each row), as of the scan's start.
    pub fn scan_index_each(
        &self,
        db: &str,
        table: &str,
        index: &str,
        range: &IndexRange,
        interrupt: Interrupt<'_>,
        f: &mut RowVisitor<'_>,
    ) -> Result<()> {
        let at = (db, table, index);
        self.scan_index_each_as(&self.snapshot(), at, range, interrupt, f)
    }

    /// [`Engine::scan_index_each`] as of `snap` (a REPEATABLE READ block's: rule
    /// 10).
    pub fn scan_index_each_as(
        &self,
        snap: &Snapshot<'_>,
        (db, table, index): (&str, &str, &str),
        range: &IndexRange,
        interrupt: Interrupt<'_>,
        f: &mut RowVisitor<'_>,
    ) -> Result<()> {
        let resolve = || {
            let cat = self.sh.catalog.read();
            let (dbe, rel) = cat.committed_table(db, table)?;
            rel.has_storage()?;
            let ix = xact::index_of(rel, index)?;
            Ok((rel.key(dbe), rel.clone(), rel.index_key(dbe, ix)))
        };
        index::scan_batches(&self.sh, &resolve, range, (snap, None), interrupt, f)
    }

    /// PostgreSQL's `bt_index_check(index, heapallindexed => true)`: index `index`'s
    /// tree checks, and it holds exactly one entry per row of its table with storage
    /// (index rules 1 and 2). Takes the writer lock (nothing changes meanwhile).
    /// Returns the number of entries. O(the table + the index).
    pub fn check_index(&self, db: &str, index: &str) -> Result<usize> {
        let txn = self.begin();
        let dbe = txn.database(db)?;
        let table = txn.index_table(db, index)?.ok_or_else(|| {
            EngineError::UndefinedObject(format!("index \"{index}\" does not exist"))
        })?;
        let rel = txn.relation(&dbe, &table)?;
        let ix = xact::index_of(&rel, index)?;
        let n = index::check(&self.sh, &rel, rel.key(&dbe), ix)?;
        txn.abort()?;
        Ok(n)
    }

    /// `nextval(name)`: the sequence's next value (sequence rules 1, 2 and 4) and its
    /// OID (for the session's `currval`). `writer`: the caller is the running writer,
    /// so it sees the sequences its transaction created or dropped, and its commit
    /// makes the value's record durable if it has an xid. 42P01, 42809, 2200H;
    /// 25006 on a standby.
    pub fn nextval(&self, db: &str, name: &str, writer: bool) -> Result<(Oid, i64)> {
        self.with_sequence(db, name, writer, "nextval()", &mut |sh, key, def| {
            sequence::nextval(sh, key, def, name)
        })
    }

    /// `setval(name, value, is_called)`: the sequence's state becomes `value`, logged
    /// (22003 outside its bounds). As [`Engine::nextval`].
    pub fn setval(
        &self,
        db: &str,
        name: &str,
        (value, is_called): (i64, bool),
        writer: bool,
    ) -> Result<(Oid, i64)> {
        self.with_sequence(db, name, writer, "setval()", &mut |sh, key, def| {
            let end = sequence::setval(sh, key, def, name, (value, is_called))?;
            Ok((value, Some(end)))
        })
    }

    /// The OID of sequence `name` as the caller sees it (as [`Engine::nextval`]).
    pub fn sequence_oid(&self, db: &str, name: &str, writer: bool) -> Result<Oid> {
        let (_, rel) = self.sequence_entry(db, name, writer)?;
        Ok(rel.oid)
    }

    /// Runs `f` on sequence `name`'s storage under the drop lock (engine rule 8),
    /// then flushes the record it wrote unless the caller's commit will (sequence
    /// rule 4).
    fn with_sequence(
        &self,
        db: &str,
        name: &str,
        writer: bool,
        what: &str,
        f: &mut SeqChange<'_>,
    ) -> Result<(Oid, i64)> {
        if self.in_recovery() {
            return Err(EngineError::ReadOnly(what.into())); // standby rule 3
        }
        let _d = self.sh.drop_lock.read();
        let (key, rel) = self.sequence_entry(db, name, writer)?;
        let def = rel.sequence.as_ref().expect("sequence_entry checks");
        let (v, logged) = f(&self.sh, key, def)?;
        if let Some(end) = logged {
            if writer && self.sh.running.lock().is_some() {
                self.sh.seq_lsn.fetch_max(end.0, Ordering::AcqRel);
            } else {
                self.sh.wal_flush(end)?;
            }
        }
        Ok((rel.oid, v))
    }

    /// Sequence `name` of database `db` as the caller sees it: the running writer
    /// sees its own creates and drops first (`Shared::txn_seqs`), everyone the
    /// committed catalog. 42P01, 42809 for a table.
    fn sequence_entry(
        &self,
        db: &str,
        name: &str,
        writer: bool,
    ) -> Result<(RelKey, Arc<RelEntry>)> {
        let cat = self.sh.catalog.read();
        let dbe = cat
            .dbs
            .get(db)
            .ok_or_else(|| EngineError::UndefinedDatabase(db.into()))?;
        let rel = temp::resolve(name, |n| {
            let own = writer
                .then(|| {
                    self.sh
                        .txn_seqs
                        .lock()
                        .get(&(dbe.oid, n.to_string()))
                        .cloned()
                })
                .flatten();
            match own {
                Some(e) => e,
                None => cat.rels.get(&dbe.oid).and_then(|m| m.get(n)).cloned(),
            }
        })
        .ok_or_else(|| EngineError::UndefinedTable(name.into()))?;
        if rel.sequence.is_none() {
            return Err(EngineError::WrongObjectType(format!(
                "\"{name}\" is not a sequence"
            )));
        }
        Ok((rel.key(dbe), rel))
    }

    /// VACUUM: removes dead tuples, sets visibility-map bits, records free space, and
    /// truncates empty tail pages of every fork with one WAL record. With `table`
    /// `None`, every table of the database. Returns pages truncated away.
    pub fn vacuum(&self, db: &str, table: Option<&str>) -> Result<u64> {
        if self.in_recovery() {
            return Err(EngineError::ReadOnly("VACUUM".into()));
        }
        let txn = self.begin();
        txn.vacuum(db, table)
    }

    /// The committed databases.
    pub fn databases(&self) -> Vec<DbEntry> {
        let mut v: Vec<DbEntry> = self
            .sh
            .catalog
            .read()
            .dbs
            .values()
            .map(|d| (**d).clone())
            .collect();
        v.sort_by_key(|d| d.oid);
        v
    }

    /// The committed tablespaces.
    pub fn tablespaces(&self) -> Vec<SpcEntry> {
        let mut v: Vec<SpcEntry> = self
            .sh
            .catalog
            .read()
            .spcs
            .values()
            .map(|d| (**d).clone())
            .collect();
        v.sort_by_key(|d| d.oid);
        v
    }

    /// The committed table that owns index `index` of database `db`, if any. O(1).
    pub fn index_table(&self, db: &str, index: &str) -> Option<String> {
        let cat = self.sh.catalog.read();
        let d = cat.dbs.get(db)?;
        let owners = cat.index_owner.get(&d.oid)?;
        temp::resolve(index, |n| owners.get(n).cloned())
    }

    /// One committed tablespace, if it exists. O(1).
    pub fn tablespace(&self, name: &str) -> Option<SpcEntry> {
        self.sh.catalog.read().spcs.get(name).map(|d| (**d).clone())
    }

    /// One committed database, if it exists. O(1).
    pub fn database(&self, name: &str) -> Option<DbEntry> {
        self.sh.catalog.read().dbs.get(name).map(|d| (**d).clone())
    }

    /// One committed table of a database. O(1) in the number of tables.
    pub fn table(&self, db: &str, table: &str) -> Result<RelEntry> {
        let cat = self.sh.catalog.read();
        Ok((**cat.committed_table(db, table)?.1).clone())
    }

    /// One committed relation of a database, shared (no copy). O(1).
    pub fn relation(&self, db: &str, name: &str) -> Result<Arc<RelEntry>> {
        let cat = self.sh.catalog.read();
        Ok(Arc::clone(cat.committed_table(db, name)?.1))
    }

    /// The committed planner statistics of table `table` of database `db` (catalog
    /// rule 10), shared; None if there is no such table or it has none. O(1): two
    /// hash lookups, nothing decoded.
    pub fn table_stats(&self, db: &str, table: &str) -> Option<Arc<TableStats>> {
        let cat = self.sh.catalog.read();
        let (dbe, rel) = cat.committed_table(db, table).ok()?;
        cat.stat_entry(dbe.oid, rel.oid)
            .map(|e| Arc::clone(&e.stats))
    }

    /// The committed tables of a database, sorted by name.
    pub fn tables(&self, db: &str) -> Result<Vec<RelEntry>> {
        let cat = self.sh.catalog.read();
        let dbe = cat
            .dbs
            .get(db)
            .ok_or_else(|| EngineError::UndefinedDatabase(db.into()))?;
        let mut v: Vec<RelEntry> = cat
            .rels
            .get(&dbe.oid)
            .map(|m| {
                m.values()
                    .filter(|r| !temp::is_foreign(&r.name))
                    .map(|r| (**r).clone())
                    .collect()
            })
            .unwrap_or_default();
        v.sort_by(|a, b| a.name.cmp(&b.name));
        Ok(v)
    }

    /// Storage key of a committed table (tests, tools).
    pub fn table_key(&self, db: &str, table: &str) -> Result<RelKey> {
        let cat = self.sh.catalog.read();
        let (dbe, rel) = cat.committed_table(db, table)?;
        Ok(rel.key(dbe))
    }

    /// Checkpoints completed since open (not counting skipped ones).
    pub fn checkpoints_done(&self) -> u64 {
        self.sh.ckpt.lock().count
    }

    /// Whether transaction `xid` committed (after recovery: whether its commit record
    /// reached the WAL). For state kept outside the engine that commits with a
    /// transaction (the server's password file).
    pub fn xid_committed(&self, xid: Xid) -> bool {
        self.sh.clog.is_committed(xid)
    }

    /// The WAL insert position (`pg_current_wal_lsn()`).
    /// On a standby, the replay position.
    pub fn current_wal_lsn(&self) -> Lsn {
        match self.sh.late_wal.wal.get() {
            Some(w) => w.insert_lsn(),
            None => self.replayed_lsn(),
        }
    }

    /// `f` is told the new durable end after every WAL flush, now or once a standby
    /// is promoted (wal rule 10): WAL senders wait on it rather than poll.
    pub fn on_wal_flushed(&self, f: strata_wal::LsnListener) {
        let mut slot = self.sh.late_wal.on_flush.lock();
        if let Some(w) = self.sh.late_wal.wal.get() {
            w.set_flush_listener(f.clone());
        }
        *slot = Some(f);
    }

    /// Standbys' feedback (`hot_standby_feedback`): `f` says the oldest xid a
    /// standby's snapshot still needs, and VACUUM keeps every row version deleted at
    /// or after it. Set once.
    pub fn hold_horizon(&self, f: HorizonHold) {
        let _ = self.sh.horizon_hold.set(f);
    }

    /// The oldest xid this server's snapshots still need (the next xid when none is
    /// live): what a standby sends its primary as `hot_standby_feedback`.
    pub fn oldest_needed_xid(&self) -> Xid {
        access::removal_horizon(&self.sh)
    }

    /// `f` is told the replay position as a standby's replay advances (at least
    /// every 64 records and whenever it stops for more WAL).
    pub fn on_replayed(&self, f: strata_wal::LsnListener) {
        let _ = self.sh.recovery.on_replay.set(f);
    }

    /// Everything before this LSN is durable (what a WAL sender may send). On a
    /// standby, the received WAL's durable end.
    pub fn flushed_wal_lsn(&self) -> Lsn {
        match self.sh.late_wal.wal.get() {
            Some(w) => w.flushed_lsn(),
            None => self.received_lsn().unwrap_or_default(),
        }
    }

    /// The cluster's replication slots.
    pub fn slots(&self) -> &strata_wal::slots::Slots {
        &self.sh.slots
    }

    /// The cluster's system identifier (pg_control; IDENTIFY_SYSTEM).
    pub fn system_identifier(&self) -> u64 {
        self.sh.ckpt.lock().system_identifier
    }

    /// The cluster's timeline (IDENTIFY_SYSTEM): 1 until a promotion.
    pub fn timeline(&self) -> u32 {
        self.sh.timeline.load(Ordering::Acquire)
    }

    /// The WAL segment size fixed at `init`.
    pub fn wal_segment_bytes(&self) -> u64 {
        self.sh.wal_segment_bytes
    }

    /// The WAL's bytes from `start`, flushed ones only, at most to the end of
    /// `start`'s segment; `None` if that segment was removed (`strata_wal::read_bytes`).
    pub fn read_wal(&self, start: Lsn) -> Result<Option<Vec<u8>>> {
        let end = self.flushed_wal_lsn();
        Ok(strata_wal::read_bytes(
            &*self.sh.settings.vfs,
            &self.sh.dir,
            self.wal_segment_bytes(),
            (start, end),
            self.sh.timeline.load(std::sync::atomic::Ordering::Acquire),
        )?)
    }

    pub fn data_dir(&self) -> &Path {
        &self.sh.dir
    }

    pub fn settings(&self) -> &Settings {
        &self.sh.settings
    }

    pub fn pool(&self) -> &BufferPool {
        &self.sh.pool
    }

    pub fn smgr(&self) -> &Smgr {
        &self.sh.smgr
    }

    /// The heap pages of relation `rel` (of `heap_len` pages) that the visibility
    /// map marks all visible: ANALYZE's relallvisible. O(map pages).
    pub fn all_visible_pages(&self, rel: RelKey, heap_len: u32) -> Result<u32> {
        access::vm_count(&self.sh, rel, heap_len)
    }

    /// Removes now the files of every relation dropped so far (which the unlinker
    /// thread does soon after each commit): unlink rule 2. Returns how many
    /// relations' files it removed.
    pub fn settle_unlinks(&self) -> Result<usize> {
        Ok(self.sh.unlinks.settle(&self.sh.smgr)?)
    }

    /// Checks a B-tree page by page and link by link (as PostgreSQL's amcheck) and
    /// returns its leaf entries in order; an error names the block that fails.
    #[doc(hidden)]
    pub fn btree_check(&self, index: RelKey) -> Result<Vec<Vec<u8>>> {
        btree::check(&self.sh, index)
    }

    /// The leaf entries of a B-tree at or above `from`, in order, while `f` says so.
    #[doc(hidden)]
    pub fn btree_scan_from(
        &self,
        index: RelKey,
        from: &[u8],
        f: &mut dyn FnMut(&[u8]) -> Result<bool>,
    ) -> Result<()> {
        btree::scan_from(&self.sh, index, from, f)
    }

    /// Pauses the unlinker thread (`true`) or lets it go on: for tests that need
    /// dropped files to wait for a checkpoint.
    #[doc(hidden)]
    pub fn pause_unlinker(&self, on: bool) {
        self.sh.unlinks.pause(on);
    }

    fn stop_checkpointer(&self) {
        self.stop_standby();
        if let Some(h) = self.startup.lock().take() {
            let _ = h.join();
        }
        {
            let mut st = self.sh.ckpt.lock();
            st.shutdown = true;
            self.sh.ckpt_cv.notify_all();
        }
        if let Some(h) = self.checkpointer.lock().take() {
            let _ = h.join();
        }
        if let Some(h) = self.sh.recovery.checkpointer.lock().take() {
            let _ = h.join(); // a promoted standby's
        }
        self.sh.unlinks.stop();
        if let Some(h) = self.unlinker.lock().take() {
            let _ = h.join();
        }
    }

    /// Shuts down cleanly: stops the checkpointer and writes a shutdown checkpoint.
    /// A standby stops replay and writes nothing: a restart replays from its last
    /// restartpoint.
    pub fn close(self) -> Result<()> {
        self.stop_checkpointer();
        if self.in_recovery() {
            return Ok(());
        }
        checkpoint::checkpoint(&self.sh, true, true, true)?;
        Ok(())
    }

    /// Stops without a checkpoint and without flushing anything: what is not yet
    /// durable is lost, as in a crash (tests of recovery in one process).
    pub fn abandon(self) {
        self.stop_checkpointer();
    }
}

impl Drop for Engine {
    fn drop(&mut self) {
        self.stop_checkpointer();
    }
}
