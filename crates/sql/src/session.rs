//! A session: one client connection's state and the execution of its statements
//! against the engine.
//!
//! Owns the transaction-block state machine (idle, in a block, failed), the
//! session's settings, the binding of each [`Stmt`] into a `Bound` statement and
//! its dispatch to one executor per kind, and the DML executors (SELECT, INSERT,
//! DELETE). Data definition runs in `ddl`, the other utility statements in
//! `utility`; both reach the session only through its `pub(crate)` methods, so the
//! block state is changed here alone.
//! A session lives on its own thread (a "backend", as in PostgreSQL), because an
//! engine transaction holds the writer lock for its whole life (engine rule 1).
//!
//! Entry points: [`Session::run_simple`] (a simple-protocol query string),
//! [`Session::prepare`], [`Session::execute_extended`] and [`Session::sync`] (the
//! extended protocol), [`Session::fail`] (an error outside execution).
//!
//! The transaction-block state machine (PostgreSQL's TBLOCK_*, reduced):
//!
//! ```text
//!            BEGIN                     error
//!   Idle ──────────────► Open ──────────────────► Failed
//!    ▲ ▲  (multi-statement │ (implicit: the error     │
//!    │ │   query: implicit)│  rolls back to Idle)     │
//!    │ └──COMMIT/ROLLBACK──┘                          │
//!    └──────────────COMMIT/ROLLBACK (ROLLBACK)────────┘
//! ```
//!
//! | transition | function |
//! |------------|----------|
//! | Idle → Open | `Session::open_block` (BEGIN, or a multi-statement query or pipeline) |
//! | Open (implicit) → Open (explicit) | BEGIN, in `Session::begin` |
//! | Open → Idle | `Session::end_block` (COMMIT, ROLLBACK, end of an implicit block, Sync) |
//! | Open → Failed, Open (implicit) → Idle | [`Session::fail`] |
//! | Failed → Idle | `Session::end_block` (COMMIT and ROLLBACK both roll back) |
//!
//! In Failed only COMMIT and ROLLBACK run; everything else is 25P02, checked in
//! `Session::execute_inner` before anything is bound.
//!
//! Invariants:
//! 1. Outside a block every statement is its own transaction: committed when it
//!    succeeds, aborted (its creations removed) when it fails.
//! 2. In a block, the engine transaction is begun at the first statement that writes;
//!    a block of reads never holds the writer lock.
//! 3. Any error in a block — parse, bind, protocol or execution, reported here by
//!    [`Session::fail`] — aborts the engine transaction at once (releasing the writer
//!    lock); then every statement but COMMIT/ROLLBACK gets 25P02, and COMMIT answers
//!    ROLLBACK. Settings SET in the block are restored; its password changes dropped.
//! 4. CREATE/DROP DATABASE and TABLESPACE and VACUUM never run in a block (25001),
//!    the implicit block of a multi-statement query included.
//! 5. A simple-protocol query of several statements runs as one implicit block, as in
//!    PostgreSQL: committed at its end, rolled back at its first error (the rest does
//!    not run); BEGIN in it makes the block explicit, COMMIT/ROLLBACK in it end it
//!    (with a warning) and later statements start another. Likewise the Executes of
//!    the extended protocol up to a Sync (a pipeline): Sync commits them.
//! 6. SAVEPOINT, ROLLBACK TO and RELEASE are refused: outside an explicit block
//!    25P01, inside one 0A000, which fails the block. Strata has one xid per
//!    transaction and no subtransactions, so they are never accepted and ignored.
//! 7. Waiting is bounded: the writer lock is awaited until `lock_timeout` (55P03)
//!    or `statement_timeout` (57014); scans, inserts and deletes check the session's
//!    [`Interrupts`] and the statement deadline between rows or pages.
//! 8. ALTER ROLE ... PASSWORD commits with its transaction: staged under the
//!    transaction's xid (taking the writer lock), installed after the commit record
//!    is durable, dropped when it aborts; a crash in between is settled at start-up
//!    by the commit log (auth invariant 3).
//! 9. Memory is bounded by what a statement needs, not by the tables it reads: a
//!    SELECT's rows go to the [`ResultSink`] as they are produced (the protocol layer
//!    streams them to the client in bounded batches); table scans stream (engine
//!    `stream` rules) and stop once LIMIT is met; WHERE and aggregates fold rows as
//!    they pass; only ORDER BY holds rows, within `work_mem` (`sort` rules); INSERT
//!    inserts in batches as its source produces rows; a VALUES list kept as text
//!    is parsed, bound and evaluated a row at a time (sql rule 5).
//! 10. A READ ONLY transaction (BEGIN READ ONLY, SET TRANSACTION READ ONLY,
//!     `default_transaction_read_only` for blocks and statements to come) refuses
//!     every statement that writes ([`Stmt::write_verb`]) and nextval/setval with
//!     PostgreSQL's 25006 "cannot execute X in a read-only transaction"; isolation
//!     levels Strata does not have are refused (0A000), never run as another.
//! 11. A REPEATABLE READ block (BEGIN ISOLATION LEVEL REPEATABLE READ, SET
//!     TRANSACTION, `default_transaction_isolation` for blocks to come) takes one
//!     snapshot at its first statement ([`Session::statement_snapshot`]) and every
//!     statement reads as of it; its engine transaction writes as of it too
//!     (engine rule 10: a row changed since fails with 40001). Its level can change
//!     only before that first statement (25001). A statement outside a block is its
//!     own transaction: its one snapshot serves either level. SERIALIZABLE is
//!     refused (0A000).

use super::bind::{self, Binder, Env, Expr, Row, Scope, SeqCall};
use super::values::Rows;
use super::{ast, ddl, settings, utility, Control, Datum, Ddl, InsertSource, SqlError, SqlResult};
use super::{SqlType, Stmt, Utility};
use crate::analyze::Query;
use crate::plan::IndexPath;
use crate::TextOut;
use parking_lot::Mutex;
use std::collections::{BTreeMap, HashMap};
use std::path::Path;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

mod plancache;
mod with_stmt;
pub use plancache::PlanCache;
use strata_engine::{Access, Engine, IndexRange, Txn};
use strata_types::{ForkNumber, Lsn};

/// What one statement returned.
#[derive(Debug)]
pub enum Output {
    /// Rows, given to the [`ResultSink`] as they were produced: how many.
    Rows(u64),
    Command(String),
    TxnStart(String),
    TxnEnd(String),
}

/// NOTICE and WARNING messages, as (severity, message).
pub type Notices = Vec<(&'static str, String)>;

#[derive(Debug)]
pub struct Executed {
    pub output: Output,
    pub notices: Notices,
}

/// Where a statement's results go as they are produced (session rule 9). The
/// protocol layer's sink streams rows to the client in bounded batches and blocks
/// while the client is slow; [`Collect`] keeps them.
pub trait ResultSink {
    /// The statement returns rows of these columns: called once, before any row.
    fn columns(&mut self, columns: &[(String, SqlType)]) -> SqlResult<()>;
    /// One result row. An error (the client has gone) stops the statement.
    fn row(&mut self, row: Vec<Datum>) -> SqlResult<()>;
    /// A statement of a query string ended, with its result (its rows all given).
    fn end(&mut self, result: SqlResult<Executed>);
    /// COPY FROM STDIN: asks the client for data, `columns` fields a row.
    fn copy_in(&mut self, _columns: usize, _csv: bool) -> SqlResult<()> {
        Err(SqlError::unsupported("COPY FROM STDIN here"))
    }
    /// The client's next chunk of COPY data; None at its end (CopyDone), an error
    /// when it failed the copy (CopyFail) or went away.
    fn copy_chunk(&mut self) -> SqlResult<Option<Vec<u8>>> {
        Ok(None)
    }
    /// COPY TO STDOUT: data of `columns` fields a row follows.
    fn copy_out(&mut self, _columns: usize, _csv: bool) -> SqlResult<()> {
        Err(SqlError::unsupported("COPY TO STDOUT here"))
    }
    /// COPY TO's rows, each a line of the format (one CopyData message each, as
    /// PostgreSQL sends them and clients read them).
    fn copy_data(&mut self, _rows: Vec<Vec<u8>>) -> SqlResult<()> {
        Ok(())
    }
    /// The session's date/time settings, given before each statement: the text
    /// of its dates, times and intervals follows them.
    fn style(&mut self, _settings: &Arc<crate::datetime::Settings>) {}
}

/// A [`ResultSink`] for a statement run inside another that returns no rows
/// (CREATE TABLE AS's INSERT).
struct NoRows;

impl ResultSink for NoRows {
    fn columns(&mut self, _: &[(String, SqlType)]) -> SqlResult<()> {
        Ok(())
    }
    fn row(&mut self, _: Vec<Datum>) -> SqlResult<()> {
        Ok(())
    }
    fn end(&mut self, _: SqlResult<Executed>) {}
}

/// A [`ResultSink`] that keeps everything (in-process tests).
#[cfg(test)]
#[derive(Default)]
pub struct Collect {
    pub columns: Vec<(String, SqlType)>,
    pub rows: Vec<Vec<Datum>>,
    pub results: Vec<SqlResult<Executed>>,
    /// COPY FROM STDIN's chunks, given in order.
    pub copy_input: std::collections::VecDeque<Vec<u8>>,
    /// COPY TO STDOUT's data.
    pub copied: Vec<u8>,
}

#[cfg(test)]
impl ResultSink for Collect {
    fn columns(&mut self, columns: &[(String, SqlType)]) -> SqlResult<()> {
        self.columns = columns.to_vec();
        Ok(())
    }
    fn row(&mut self, row: Vec<Datum>) -> SqlResult<()> {
        self.rows.push(row);
        Ok(())
    }
    fn end(&mut self, result: SqlResult<Executed>) {
        self.results.push(result);
    }
    fn copy_in(&mut self, _columns: usize, _csv: bool) -> SqlResult<()> {
        Ok(())
    }
    fn copy_chunk(&mut self) -> SqlResult<Option<Vec<u8>>> {
        Ok(self.copy_input.pop_front())
    }
    fn copy_out(&mut self, _columns: usize, _csv: bool) -> SqlResult<()> {
        Ok(())
    }
    fn copy_data(&mut self, rows: Vec<Vec<u8>>) -> SqlResult<()> {
        rows.iter().for_each(|r| self.copied.extend_from_slice(r));
        Ok(())
    }
}

/// A statement's parameter types and result columns (extended protocol Describe).
#[derive(Clone, Debug)]
pub struct Described {
    pub params: Vec<SqlType>,
    pub columns: Vec<(String, SqlType)>,
}

/// Sessions by id (their pid): by database for DROP DATABASE (55006 while others
/// are connected; WITH (FORCE) terminates them), `max_connections`, and cancellation
/// (CancelRequest, `pg_cancel_backend`).
#[derive(Default)]
pub struct Registry {
    inner: Mutex<RegistryInner>,
    next_id: AtomicU64,
}

/// Asks one session to end.
pub type Terminate = Box<dyn Fn() + Send>;

/// The planner's view of the catalog through a session (its transaction's): a
/// relation's entry, pages and statistics looked up once for all the plans a
/// statement makes (its subqueries' at their first run too), not at every
/// costing of every path.
struct PlannerCatalog<'s, 'e> {
    session: &'s Session<'e>,
    looked: std::cell::RefCell<HashMap<String, Looked>>,
}

/// What a [`PlannerCatalog`] has looked up of one relation.
#[derive(Default)]
struct Looked {
    entry: Option<Option<Arc<strata_engine::RelEntry>>>,
    pages: Option<u32>,
    stats: Option<Option<Arc<strata_engine::TableStats>>>,
}

impl<'s, 'e> PlannerCatalog<'s, 'e> {
    fn new(session: &'s Session<'e>) -> Self {
        PlannerCatalog {
            session,
            looked: Default::default(),
        }
    }

    /// The `part` of `name` looked up, by `make` the first time.
    fn memo<T: Clone>(
        &self,
        name: &str,
        part: fn(&mut Looked) -> &mut Option<T>,
        make: impl FnOnce() -> SqlResult<T>,
    ) -> SqlResult<T> {
        if let Some(v) = self
            .looked
            .borrow_mut()
            .get_mut(name)
            .and_then(|l| part(l).clone())
        {
            return Ok(v);
        }
        let v = make()?;
        let mut looked = self.looked.borrow_mut();
        *part(looked.entry(name.to_string()).or_default()) = Some(v.clone());
        Ok(v)
    }
}

impl crate::planner::RelSource for PlannerCatalog<'_, '_> {
    fn entry(&self, name: &str) -> SqlResult<Option<Arc<strata_engine::RelEntry>>> {
        self.memo(name, |l| &mut l.entry, || self.session.planned_shared(name))
    }
    fn pages(&self, name: &str) -> u32 {
        let s = self.session;
        let pages = self.memo(name, |l| &mut l.pages, || Ok(s.relation_pages(name)));
        pages.unwrap_or(0)
    }
    fn stats(&self, name: &str) -> Option<std::sync::Arc<strata_engine::TableStats>> {
        let s = self.session;
        let stats = || {
            Ok(match &s.block {
                Block::Open { txn: Some(t), .. } => t.table_stats(&s.db, name),
                _ => s.engine.table_stats(&s.db, name),
            })
        };
        self.memo(name, |l| &mut l.stats, stats).ok().flatten()
    }
    fn switches(&self) -> crate::planner::Switches {
        self.session.switches()
    }
    fn units(&self) -> crate::cost::Units {
        let vars = &self.session.vars;
        crate::cost::Units::from_settings(|n| vars.get(n).and_then(|v| v.parse().ok()))
    }
}

/// A session's interrupt flags, set by other threads (CancelRequest,
/// `pg_cancel_backend`, the connection closing, DROP DATABASE ... FORCE) and read by
/// its backend between rows and while it waits for the writer lock.
#[derive(Default)]
pub struct Interrupts {
    /// Cancel the running statement (57014 "due to user request").
    pub cancel: AtomicBool,
    /// The client has gone: stop what runs (08006).
    pub gone: AtomicBool,
    /// The session is being terminated (DROP DATABASE ... FORCE, shutdown): 57P01.
    pub terminate: AtomicBool,
    /// A standby's replay drops the session's database: 57P04.
    pub db_dropped: AtomicBool,
}

/// What the registry keeps of a session.
pub struct Member {
    pub terminate: Terminate,
    pub interrupts: Arc<Interrupts>,
    /// The cancel key's secret (BackendKeyData), big-endian bytes.
    pub secret: Vec<u8>,
    /// The role it logged in as (connection limits, who may signal it).
    pub role: String,
}

#[derive(Default)]
struct RegistryInner {
    sessions: HashMap<u64, (String, Member)>,
    /// Databases being dropped: new connections to them are refused.
    dropping: Vec<String>,
}

/// The connection slots a new session may take.
#[derive(Clone, Copy, Debug)]
pub struct Slots {
    /// `max_connections`.
    pub max: usize,
    /// `superuser_reserved_connections`.
    pub reserved: usize,
    /// Whether the connecting role is a superuser (may take a reserved slot).
    pub superuser: bool,
    /// The role's CONNECTION LIMIT (-1: none; a superuser has none).
    pub role_limit: i32,
}

/// Why a connection was refused at startup.
#[derive(Debug, PartialEq, Eq)]
pub enum Refused {
    TooMany,
    /// Only the reserved (superuser) slots are left.
    Reserved,
    NoDatabase,
    NotAccepting,
    /// The role's CONNECTION LIMIT is reached.
    RoleLimit,
}

impl Registry {
    /// Registers a session on `db` unless the server is full or `db` cannot be
    /// connected to. Returns its id, which is also its pid.
    ///
    ///
    /// Slots: `max` in all, of which the last `reserved` are for superusers only
    /// (PostgreSQL's `superuser_reserved_connections` rule).
    pub fn register(
        &self,
        engine: &Engine,
        db: &str,
        slots: Slots,
        member: Member,
    ) -> Result<u64, Refused> {
        let mut g = self.inner.lock();
        if g.sessions.len() >= slots.max {
            return Err(Refused::TooMany);
        }
        if !slots.superuser && g.sessions.len() + slots.reserved >= slots.max {
            return Err(Refused::Reserved);
        }
        if g.dropping.iter().any(|d| d == db) {
            return Err(Refused::NoDatabase);
        }
        if !slots.superuser && slots.role_limit >= 0 {
            let role = &member.role;
            let n = g.sessions.values().filter(|(_, m)| m.role == *role).count();
            if n >= slots.role_limit as usize {
                return Err(Refused::RoleLimit);
            }
        }
        match engine.database(db) {
            None => return Err(Refused::NoDatabase),
            Some(d) if !d.allow_conn => return Err(Refused::NotAccepting),
            Some(_) => {}
        }
        let id = self.next_id.fetch_add(1, Ordering::Relaxed) + 1;
        g.sessions.insert(id, (db.to_string(), member));
        Ok(id)
    }

    pub fn unregister(&self, id: u64) {
        self.inner.lock().sessions.remove(&id);
    }

    pub fn count(&self) -> usize {
        self.inner.lock().sessions.len()
    }

    /// Asks session `pid` to cancel its statement, if `secret` (when given, as in a
    /// CancelRequest) is its cancel key. Whether a session was asked.
    /// The role session `pid` logged in as, if there is such a session.
    pub fn role_of(&self, pid: i32) -> Option<String> {
        let id = u64::try_from(pid).ok()?;
        self.inner
            .lock()
            .sessions
            .get(&id)
            .map(|(_, m)| m.role.clone())
    }

    pub fn cancel(&self, pid: i32, secret: Option<&[u8]>) -> bool {
        let Ok(id) = u64::try_from(pid) else {
            return false;
        };
        match self.inner.lock().sessions.get(&id) {
            Some((_, m)) if secret.is_none_or(|s| s == m.secret.as_slice()) => {
                m.interrupts.cancel.store(true, Ordering::SeqCst);
                true
            }
            _ => false,
        }
    }

    /// How many sessions other than `me` are connected to `db`.
    pub(crate) fn others_on(&self, db: &str, me: u64) -> usize {
        self.inner
            .lock()
            .sessions
            .iter()
            .filter(|(id, (d, _))| **id != me && d == db)
            .count()
    }

    /// Asks every session to end (server shutdown).
    pub fn terminate_all(&self) {
        for (_, m) in self.inner.lock().sessions.values() {
            (m.terminate)();
        }
    }

    /// Marks `db` as being dropped (new connections to it are refused), or no
    /// longer.
    pub(crate) fn set_dropping(&self, db: &str, dropping: bool) {
        let mut g = self.inner.lock();
        g.dropping.retain(|d| d != db);
        if dropping {
            g.dropping.push(db.to_string());
        }
    }

    /// A standby's replay drops `db`: every session on it ends with 57P04.
    pub fn terminate_dropped_database(&self, db: &str) {
        for (_, (d, m)) in self.inner.lock().sessions.iter() {
            if d == db {
                m.interrupts.db_dropped.store(true, Ordering::SeqCst);
                (m.terminate)();
            }
        }
    }

    /// Asks every session other than `me` connected to `db` to end.
    pub(crate) fn terminate_others(&self, db: &str, me: u64) {
        for (id, (d, m)) in self.inner.lock().sessions.iter() {
            if *id != me && d == db {
                (m.terminate)();
            }
        }
    }
}

/// Server-wide state a session reads: settings to SHOW and the password store.
pub struct ServerState {
    pub registry: Registry,
    /// Server settings as SHOW prints them (name, value, description).
    pub settings: Vec<(String, String, String)>,
    /// Makes passwords' SCRAM verifiers (the protocol's, given by the server).
    pub derive: crate::roles::Derive,
    /// The server log.
    pub log: strata_engine::LogSink,
    /// `superuser_reserved_connections`.
    pub reserved_connections: usize,
    /// `synchronous_standby_names` and the standbys' positions (syncrep rules).
    pub syncrep: Arc<crate::syncrep::SyncRep>,
    /// The rows of the system views (`views`).
    pub views: Arc<dyn crate::views::SystemViews>,
}

/// The transaction-block state machine's states (diagram and transitions in the
/// module doc).
enum Block<'e> {
    Idle,
    /// In a block; the engine transaction once something wrote. `implicit`: the
    /// block of a multi-statement query (no BEGIN), committed at its end.
    Open {
        txn: Option<Box<Txn<'e>>>,
        implicit: bool,
    },
    Failed,
}

pub struct Session<'e> {
    engine: &'e Engine,
    server: &'e ServerState,
    db: String,
    /// The authenticated role.
    user: String,
    id: u64,
    block: Block<'e>,
    vars: BTreeMap<String, String>,
    /// SQL's prepared statements by name (plancache rule 8).
    prepared: std::collections::HashMap<String, Arc<plancache::SqlPrepared>>,
    /// The parameter types of the prepared statement running (plancache rule 9).
    declared: Vec<SqlType>,
    /// The date/time settings `vars` give, and the values of DateStyle, TimeZone
    /// and IntervalStyle they were made from ([`Session::sync_datetime`]).
    datetime: Arc<crate::datetime::Settings>,
    datetime_from: [Option<String>; 4],
    /// The startup packet's settings ([`Session::startup_settings`]).
    startup_vars: BTreeMap<String, String>,
    /// The settings as they were when the block began: a rollback restores them.
    vars_at_begin: Option<BTreeMap<String, String>>,
    /// SET LOCAL in this block: each name's value before its first SET LOCAL,
    /// restored when the block ends.
    local_prior: BTreeMap<String, Option<String>>,
    interrupts: Arc<Interrupts>,
    /// When the running statement times out (`statement_timeout`).
    deadline: Option<Instant>,
    /// The implicit block is the extended protocol's, ended by Sync (session rule 5).
    pipeline: bool,
    /// Warnings of a commit whose synchronous-replication wait was cancelled
    /// (syncrep rule 1), sent with the next statement's result.
    late_notices: Notices,
    /// When the current transaction began (`now()`): set as a block opens and as a
    /// statement starts outside one.
    xact_start_us: i64,
    /// The values `currval` and `lastval` return (sequence functions).
    seqs: Arc<parking_lot::Mutex<SeqMemory>>,
    /// The open block is READ ONLY (session rule 10); outside a block,
    /// `default_transaction_read_only` says.
    read_only: bool,
    /// The open block is REPEATABLE READ (session rule 11); outside a block,
    /// `default_transaction_isolation` says.
    repeatable: bool,
    /// The open block's first statement has taken its snapshot (its isolation
    /// level can no longer change, 25001), and a REPEATABLE READ block's
    /// snapshot, which every statement of the block then reads as of.
    first_snapshot: std::cell::Cell<bool>,
    fixed: std::cell::OnceCell<strata_engine::Snapshot<'e>>,
    /// Its temporary tables (temp module).
    temps: crate::temp::Temps,
}

/// The catalog as a session's statements bind against it: relations' columns,
/// views' definitions (rewrite module), privileges of a view's owner.
pub(crate) struct Lookup<'a, 'e>(pub(crate) &'a Session<'e>);

impl crate::bind::RelLookup for Lookup<'_, '_> {
    fn columns(&self, name: &str) -> SqlResult<bind::Columns> {
        self.0.columns(name)
    }

    fn view(&self, name: &str) -> SqlResult<Option<crate::rewrite::ViewRef>> {
        if crate::views::schema(name).is_some() {
            return Ok(None);
        }
        Ok(self
            .0
            .relation_arc(name)
            .and_then(|r| crate::rewrite::view_ref(&r)))
    }

    fn check_reads_as(&self, owner: u32, reads: &[(String, Vec<usize>)]) -> SqlResult<()> {
        let cat = self.0.catalog();
        let Some(role) = cat.role_by_oid(strata_types::Oid(owner)) else {
            return Ok(()); // an owner dropped meanwhile: the superuser's objects
        };
        let db_owner = cat.database_entry(&self.0.db)?.owner;
        let w = crate::privileges::who(cat, &role, db_owner);
        for (t, cols) in reads {
            if crate::views::schema(t).is_none() {
                let r = self.0.relation_entry(t)?;
                crate::privileges::require(&w, &r, strata_engine::acl::Priv::SELECT, cols)?;
            }
        }
        Ok(())
    }
}

/// What a session remembers of the sequences it used, as PostgreSQL's backend
/// does: the last value nextval (or setval with is_called) gave per sequence OID,
/// and the last nextval's value.
#[derive(Default)]
pub(crate) struct SeqMemory {
    values: std::collections::HashMap<u32, i64>,
    last: Option<i64>,
}

struct SessionEnv<'a> {
    engine: &'a Engine,
    db: &'a str,
    server: &'a ServerState,
    pid: u64,
    /// When the session's transaction began (`now()`).
    xact_start_us: i64,
    /// The session's transaction holds the writer lock (it has written, or the
    /// statement is evaluated inside its write).
    writing: bool,
    /// The transaction is READ ONLY: nextval and setval are 25006.
    read_only: bool,
    /// The current role, when sequence functions must check its privileges (None:
    /// a superuser).
    who: Option<&'a crate::privileges::Who>,
    /// `current_user` and `session_user`.
    users: &'a (String, String),
    seqs: &'a parking_lot::Mutex<SeqMemory>,
    /// The session's interrupt flags and its statement's deadline (pg_sleep's
    /// waits end at them).
    interrupts: &'a Interrupts,
    deadline: Option<Instant>,
}

/// What a [`SessionEnv`] needs of the session, copied out before a write borrows
/// the session (`write_checked`'s closure).
#[derive(Clone)]
struct EnvParts<'e> {
    engine: &'e Engine,
    server: &'e ServerState,
    pid: u64,
    xact_start_us: i64,
    writing: bool,
    read_only: bool,
    who: Option<Arc<crate::privileges::Who>>,
    users: (String, String),
    seqs: Arc<parking_lot::Mutex<SeqMemory>>,
    interrupts: Arc<Interrupts>,
    deadline: Option<Instant>,
}

impl<'e> EnvParts<'e> {
    fn env<'a>(&'a self, db: &'a str) -> SessionEnv<'a>
    where
        'e: 'a,
    {
        SessionEnv {
            engine: self.engine,
            db,
            server: self.server,
            pid: self.pid,
            xact_start_us: self.xact_start_us,
            writing: self.writing,
            read_only: self.read_only,
            who: self.who.as_deref(),
            users: &self.users,
            seqs: &self.seqs,
            interrupts: &self.interrupts,
            deadline: self.deadline,
        }
    }

    /// [`EnvParts::env`] for expressions evaluated inside the session's write (its
    /// transaction holds the writer lock).
    fn writer_env<'a>(&'a self, db: &'a str) -> SessionEnv<'a>
    where
        'e: 'a,
    {
        SessionEnv {
            writing: true,
            ..self.env(db)
        }
    }
}

impl SessionEnv<'_> {
    /// Privileges of the sequence functions, as PostgreSQL's: nextval needs USAGE
    /// or UPDATE, currval SELECT or USAGE, setval UPDATE (42501).
    fn check_sequence(&self, call: &SeqCall<'_>) -> SqlResult<()> {
        use strata_engine::acl::Priv;
        let Some(w) = self.who else { return Ok(()) };
        let (name, any_of): (&str, &[Priv]) = match call {
            SeqCall::Nextval(n) => (n, &[Priv::USAGE, Priv::UPDATE]),
            SeqCall::Currval(n) => (n, &[Priv::SELECT, Priv::USAGE]),
            SeqCall::Setval(n, ..) => (n, &[Priv::UPDATE]),
            SeqCall::Lastval => return Ok(()),
        };
        // A sequence made by this transaction is not committed yet: its maker owns it.
        let Ok(r) = self.engine.table(self.db, name) else {
            return Ok(());
        };
        if any_of
            .iter()
            .any(|p| crate::privileges::require(w, &r, *p, &[]).is_ok())
        {
            return Ok(());
        }
        Err(crate::privileges::no_privilege(
            crate::roles::ObjKind::Sequence,
            name,
        ))
    }
}

impl Env for SessionEnv<'_> {
    /// pg_sleep: waits in slices of at most 10 ms, ended by a cancel, a
    /// termination or the statement's timeout.
    fn sleep(&self, secs: f64) -> SqlResult<()> {
        let end = Instant::now() + Duration::from_secs_f64(secs.clamp(0.0, 1e9));
        loop {
            flagged(self.interrupts)?;
            let now = Instant::now();
            if self.deadline.is_some_and(|d| now >= d) {
                return Err(SqlError::new(
                    "57014",
                    "canceling statement due to statement timeout",
                ));
            }
            if now >= end {
                return Ok(());
            }
            std::thread::sleep((end - now).min(Duration::from_millis(10)));
        }
    }
    fn current_user(&self) -> String {
        self.users.0.clone()
    }
    fn session_user(&self) -> String {
        self.users.1.clone()
    }
    /// PostgreSQL 15 grants EXECUTE on pg_reload_conf to superusers only.
    fn reload_conf(&self) -> SqlResult<bool> {
        if self.who.is_some() {
            return Err(SqlError::new(
                "42501",
                "permission denied for function pg_reload_conf",
            ));
        }
        Ok(self.server.views.reload_conf())
    }
    fn sequence(&self, call: SeqCall<'_>) -> SqlResult<i64> {
        let (e, db, w) = (self.engine, self.db, self.writing);
        if self.read_only {
            let f = match call {
                SeqCall::Nextval(_) => Some("nextval()"),
                SeqCall::Setval(..) => Some("setval()"),
                _ => None,
            };
            if let Some(f) = f {
                return Err(read_only_refusal(f));
            }
        }
        self.check_sequence(&call)?;
        let (oid, v) = match call {
            SeqCall::Nextval(n) => e.nextval(db, n, w)?,
            SeqCall::Setval(n, v, called) => {
                let (oid, v) = e.setval(db, n, (v, called), w)?;
                if called {
                    self.seqs.lock().values.insert(oid.0, v);
                }
                return Ok(v);
            }
            SeqCall::Currval(n) => {
                let oid = e.sequence_oid(db, n, w)?;
                return self.seqs.lock().values.get(&oid.0).copied().ok_or_else(|| {
                    SqlError::new(
                        "55000",
                        format!("currval of sequence \"{n}\" is not yet defined in this session"),
                    )
                });
            }
            SeqCall::Lastval => {
                return self.seqs.lock().last.ok_or_else(|| {
                    SqlError::new("55000", "lastval is not yet defined in this session")
                })
            }
        };
        let mut m = self.seqs.lock();
        m.values.insert(oid.0, v);
        m.last = Some(v);
        Ok(v)
    }
    fn check_index(&self, index: &str) -> SqlResult<i64> {
        if self.writing {
            // The check takes the writer lock, which this session's transaction holds.
            return Err(SqlError::unsupported(
                "bt_index_check in a transaction that has written",
            ));
        }
        match self.engine.check_index(self.db, index) {
            Ok(n) => Ok(n as i64),
            Err(strata_engine::EngineError::Corrupt(m)) => Err(SqlError::new("XX002", m)),
            Err(e) => Err(e.into()),
        }
    }
    fn xact_start_us(&self) -> i64 {
        self.xact_start_us
    }
    fn current_database(&self) -> String {
        self.db.to_string()
    }
    fn current_wal_lsn(&self) -> Lsn {
        self.engine.current_wal_lsn()
    }
    fn relation_filepath(&self, table: &str) -> Option<String> {
        let key = self.engine.table_key(self.db, table).ok()?;
        let p = self.engine.smgr().segment_path(key, ForkNumber::Main, 0);
        let rel = p
            .strip_prefix(self.engine.data_dir())
            .map(Path::to_path_buf)
            .unwrap_or(p);
        Some(rel.display().to_string())
    }
    fn backend_pid(&self) -> i32 {
        i32::try_from(self.pid).unwrap_or(i32::MAX)
    }
    /// PostgreSQL's rules for signalling a backend: a superuser's only by a
    /// superuser; another's by a role with its privileges or pg_signal_backend's.
    fn cancel_backend(&self, pid: i32) -> SqlResult<bool> {
        let Some(target) = self.server.registry.role_of(pid) else {
            return Ok(false);
        };
        if let Some(w) = self.who {
            let t = self.engine.role(&target);
            if t.as_ref().is_some_and(|t| t.superuser) {
                return Err(SqlError::new(
                    "42501",
                    "must be a superuser to cancel superuser query",
                ));
            }
            let theirs = t.is_some_and(|t| w.has_privs_of(t.oid));
            if !theirs && !w.has_privs_of(crate::privileges::PG_SIGNAL_BACKEND) {
                return Err(SqlError::new("42501", "must be a member of the role whose query is being canceled or member of pg_signal_backend"));
            }
        }
        Ok(self.server.registry.cancel(pid, None))
    }
    fn in_recovery(&self) -> bool {
        self.engine.in_recovery()
    }
    fn recovery_lsns(&self) -> Option<(Option<Lsn>, Lsn)> {
        self.engine
            .in_recovery()
            .then(|| (self.engine.received_lsn(), self.engine.replayed_lsn()))
    }
    fn last_xact_replay_unix_us(&self) -> Option<i64> {
        self.engine
            .last_replayed_commit_unix_us()
            .and_then(|t| i64::try_from(t).ok())
    }
    fn switch_wal(&self) -> SqlResult<Lsn> {
        self.engine.switch_wal().map_err(|e| match e {
            strata_engine::EngineError::RecoveryInProgress => {
                SqlError::new("55000", "recovery is in progress")
                    .with_hint("WAL control functions cannot be executed during recovery.")
            }
            e => e.into(),
        })
    }
    fn promote(&self, wait: bool, wait_seconds: i32) -> SqlResult<bool> {
        if wait_seconds <= 0 && wait {
            return Err(SqlError::new(
                "22023",
                "\"wait_seconds\" must not be negative or zero",
            ));
        }
        let secs = u64::try_from(wait_seconds).unwrap_or(60);
        self.engine
            .promote(wait, Duration::from_secs(secs))
            .map_err(|e| match e {
                strata_engine::EngineError::NotInRecovery => {
                    SqlError::new("55000", "recovery is not in progress").with_hint(
                        "Recovery control functions can only be executed during recovery.",
                    )
                }
                e => e.into(),
            })
    }
}

/// The error an interrupt flag asks for, if one is set: termination (57P01), the
/// client gone (08006), cancel (57014).
pub fn flagged(interrupts: &Interrupts) -> SqlResult<()> {
    let fatal = |code, message| SqlError::new(code, message).fatal();
    if interrupts.db_dropped.load(Ordering::Relaxed) {
        return Err(fatal(
            "57P04",
            "terminating connection due to conflict with recovery",
        )
        .with_detail("User was connected to a database that must be dropped."));
    }
    if interrupts.terminate.load(Ordering::Relaxed) {
        return Err(fatal(
            "57P01",
            "terminating connection due to administrator command",
        ));
    }
    if interrupts.gone.load(Ordering::Relaxed) {
        return Err(fatal("08006", "connection to client lost"));
    }
    if interrupts.cancel.load(Ordering::Relaxed) {
        return Err(SqlError::new(
            "57014",
            "canceling statement due to user request",
        ));
    }
    Ok(())
}

fn no_block(verb: &str) -> SqlError {
    SqlError::new(
        "25001",
        format!("{verb} cannot run inside a transaction block"),
    )
}

/// Rows an INSERT hands the engine at a time (session rule 9).
const INSERT_BATCH_ROWS: usize = 1024;
/// COPY TO's rows go to the client in batches of about this many bytes.
const COPY_OUT_CHUNK: usize = 64 << 10;

fn statement_timeout() -> SqlError {
    SqlError::new("57014", "canceling statement due to statement timeout")
}

/// COMMIT or ROLLBACK: all a failed block runs (session rule 3).
fn ends_block(stmt: &Stmt) -> bool {
    matches!(stmt, Stmt::Control(Control::Commit | Control::Rollback))
}

/// Session rule 10's refusal of `what` (a command, or `nextval()`) in a READ ONLY
/// transaction, in PostgreSQL's words.
fn read_only_refusal(what: &str) -> SqlError {
    SqlError::new(
        "25006",
        format!("cannot execute {what} in a read-only transaction"),
    )
}

fn aborted() -> SqlError {
    SqlError::new(
        "25P02",
        "current transaction is aborted, commands ignored until end of transaction block",
    )
}

/// A statement bound and ready to run with parameter values: one variant per
/// executor, each holding what that executor needs. [`Session::dispatch`] matches it
/// once; DML is bound against the catalog, the other kinds need no binding and are
/// carried as parsed.
enum Bound<'s> {
    /// Nothing to run: PostgreSQL's EmptyQueryResponse.
    Empty,
    Control(&'s Control),
    Select(Box<Query>),
    /// EXPLAIN (COSTS OFF [, VERBOSE]) of a query ([`crate::explain`]).
    Explain(Box<Query>, crate::explain::Options),
    Insert(BoundInsert),
    Delete(BoundDelete),
    Update(BoundUpdate),
    Copy(BoundCopy),
    Ddl(&'s Ddl),
    Utility(&'s Utility),
    Access(&'s crate::roles::AccessStmt),
    Prepared(&'s crate::prepare::PreparedStmt),
}

/// A bound INSERT.
#[derive(Clone)]
struct BoundInsert {
    returning: Option<Returning>,
    /// The table's CHECK constraints over its row.
    checks: Vec<(String, Expr)>,
    /// Per table column, its DEFAULT when the INSERT does not give it.
    defaults: Vec<Option<Expr>>,
    table: String,
    /// For each table column, the index of the source value (None: NULL).
    map: Vec<Option<usize>>,
    col_types: Vec<SqlType>,
    source: BoundSource,
    conflict: Option<BoundConflict>,
}

/// A bound ON CONFLICT: the arbiter indexes, and DO UPDATE's new values and WHERE
/// over the existing row followed by the proposed one (`excluded`).
#[derive(Clone)]
struct BoundConflict {
    arbiters: Vec<String>,
    update: Option<(Vec<Option<Expr>>, Option<Expr>)>,
}

/// A bound DELETE.
#[derive(Clone)]
struct BoundDelete {
    returning: Option<Returning>,
    table: String,
    pred: Option<Expr>,
    ncols: usize,
    index: Option<IndexPath>,
    /// USING ([`DmlFrom`]).
    from: Option<DmlFrom>,
}

/// A bound UPDATE: per table column, its new value's expression over the old row
/// (None: kept).
#[derive(Clone)]
struct BoundUpdate {
    returning: Option<Returning>,
    checks: Vec<(String, Expr)>,
    table: String,
    sets: Vec<Option<Expr>>,
    col_types: Vec<SqlType>,
    pred: Option<Expr>,
    index: Option<IndexPath>,
    /// FROM ([`DmlFrom`]).
    from: Option<DmlFrom>,
}

/// [`Session::dml_scope`]'s result.
struct DmlScope<'c> {
    scope: Scope<'c>,
    from: Option<Query>,
}

/// UPDATE ... FROM / DELETE ... USING (session rule 9): the FROM items' query,
/// its rows (read before the write begins), and the equalities of the WHERE
/// between a table column and a FROM column that a hash of those rows serves.
#[derive(Clone)]
struct DmlFrom {
    query: Query,
    /// (table column, FROM column) pairs.
    keys: Vec<(usize, usize)>,
}

/// A bound COPY: the table's columns, the ones copied (their indexes, in the
/// data's order) and the options.
struct BoundCopy {
    checks: Vec<(String, Expr)>,
    /// Per table column, its DEFAULT when the COPY does not give it.
    defaults: Vec<Option<Expr>>,
    table: String,
    cols: Vec<(String, SqlType)>,
    targets: Vec<usize>,
    to: bool,
    file: Option<String>,
    options: crate::copy::CopyOptions,
}

/// A bound RETURNING list: result columns and their expressions over the row
/// inserted, the new version updated, or the row deleted.
#[derive(Clone)]
struct Returning {
    columns: Vec<(String, SqlType)>,
    exprs: Vec<Expr>,
}

impl Returning {
    /// The result row for the table row `vals`.
    fn row(&self, vals: &[Datum], params: &[Datum], env: &dyn Env) -> SqlResult<Vec<Datum>> {
        let cols: Vec<Datum> = vals.to_vec();
        let row = Row {
            cols: &cols,
            params,
            aggs: &[],
            env,
            sub: None,
        };
        self.exprs.iter().map(|e| bind::eval(e, &row)).collect()
    }
}

#[derive(Clone)]
enum BoundSource {
    Values(Vec<Vec<Expr>>),
    /// VALUES rows still as text, each bound as it is reached.
    Rows(Rows, Targets),
    /// A query, and the columns whose char(n) values lose their padding (the
    /// assignment cast to text).
    Query(Box<Query>, Vec<usize>),
}

/// Where an INSERT's source values go: bound one row at a time.
#[derive(Clone)]
struct Targets {
    /// The table's columns.
    cols: Vec<(String, SqlType)>,
    /// For each source value, the column it goes to.
    targets: Vec<usize>,
    /// The statement names its columns: then a row may not be shorter.
    explicit: bool,
    /// Each column's DEFAULT bound (None: NULL), for a VALUES row's `DEFAULT`.
    row_defaults: Vec<Option<Expr>>,
}

impl Targets {
    /// PostgreSQL's checks of a source row's width against the target columns.
    fn check_width(&self, n: usize) -> SqlResult<()> {
        if n > self.targets.len() {
            return Err(SqlError::syntax(
                "INSERT has more expressions than target columns",
            ));
        }
        if self.explicit && n < self.targets.len() {
            return Err(SqlError::syntax(
                "INSERT has more target columns than expressions",
            ));
        }
        Ok(())
    }

    /// Binds one VALUES row, assigned to its target columns; `width` is the first
    /// row's length, which every row must have.
    fn bind_row(
        &self,
        b: &mut Binder,
        row: &[ast::Expr],
        width: &mut Option<usize>,
    ) -> SqlResult<Vec<Expr>> {
        if *width.get_or_insert(row.len()) != row.len() {
            return Err(SqlError::syntax("VALUES lists must all be the same length"));
        }
        self.check_width(row.len())?;
        let mut out = Vec::with_capacity(row.len());
        for (e, ci) in row.iter().zip(&self.targets) {
            if crate::is_default_keyword(e) {
                // The column's DEFAULT, as if the statement had not named it.
                let d = self.row_defaults.get(*ci).cloned().flatten();
                out.push(d.unwrap_or(Expr::Const(Datum::Null)));
                continue;
            }
            let (x, t) = b.expr(&Scope::default(), e)?;
            let (name, ty) = &self.cols[*ci];
            let x = assign(b, x, t, *ty, name);
            // A literal's input error is placed at the literal (PostgreSQL's).
            out.push(match e {
                ast::Expr::Value(v) => x.map_err(|err| err.at(v.span))?,
                _ => x?,
            });
        }
        Ok(out)
    }
}

impl<'e> Session<'e> {
    pub fn new(
        engine: &'e Engine,
        server: &'e ServerState,
        db: &str,
        user: &str,
        id: u64,
        interrupts: Arc<Interrupts>,
    ) -> Session<'e> {
        Session {
            engine,
            server,
            db: db.to_string(),
            user: user.to_string(),
            id,
            block: Block::Idle,
            vars: BTreeMap::new(),
            prepared: Default::default(),
            declared: Vec::new(),
            datetime: Arc::default(),
            datetime_from: Default::default(),
            startup_vars: BTreeMap::new(),
            vars_at_begin: None,
            local_prior: BTreeMap::new(),
            interrupts,
            deadline: None,
            pipeline: false,
            late_notices: Vec::new(),
            xact_start_us: crate::time::now_us(),
            seqs: Arc::default(),
            read_only: false,
            repeatable: false,
            first_snapshot: std::cell::Cell::new(false),
            fixed: std::cell::OnceCell::new(),
            temps: Default::default(),
        }
    }

    /// Ends the session: an open transaction is aborted, its temporary tables are
    /// dropped (temp rule 3).
    pub fn close(&mut self) {
        let _ns = self.enter();
        let _ = self.end_block(false);
        if self.temps.is_empty() {
            return;
        }
        let mut t = self.engine.begin();
        let dropped = self.temps.drop_all(&mut t, &self.db);
        let r = dropped.and_then(|()| Ok(t.commit()?));
        if let Err(e) = r {
            (self.server.log)(&format!(
                "WARNING:  could not drop temporary tables: {}",
                e.message
            ));
        }
    }

    /// Serves this session on the calling thread until the guard drops (temp rule 1).
    fn enter(&self) -> strata_engine::temp::Entered {
        strata_engine::temp::enter(self.id)
    }

    /// The session's date/time settings made current on this thread (datetime
    /// rule 5), rebuilt when a SET, RESET or rollback has changed DateStyle,
    /// TimeZone or IntervalStyle; the sink learns them for its output.
    fn sync_datetime(&mut self, sink: &mut dyn ResultSink) {
        const NAMES: [&str; 4] = [
            "datestyle",
            "timezone",
            "intervalstyle",
            "extra_float_digits",
        ];
        let same = NAMES
            .iter()
            .zip(&self.datetime_from)
            .all(|(n, v)| self.vars.get(*n) == v.as_ref());
        if !same {
            self.datetime = Arc::new(settings::datetime_settings(&self.vars));
            self.datetime_from = NAMES.map(|n| self.vars.get(n).cloned());
        }
        crate::datetime::install(&self.datetime);
        crate::datetime::set_now(self.xact_start_us);
        sink.style(&self.datetime);
    }

    /// The startup packet's settings, checked ([`settings::check_startup`]): the
    /// session's values before any SET, and what RESET goes back to.
    pub fn startup_settings(&mut self, vars: Vec<(String, String)>) {
        self.startup_vars.extend(vars);
        self.vars.clone_from(&self.startup_vars);
    }

    /// The value RESET gives `name`: the startup packet's, if it gave one.
    pub(crate) fn startup_value(&self, name: &str) -> Option<&String> {
        self.startup_vars.get(name)
    }

    /// RESET ALL: the startup packet's settings only.
    pub(crate) fn reset_all(&mut self) {
        self.vars.clone_from(&self.startup_vars);
    }

    /// Notes a relation CREATE made: a temporary table's ON COMMIT (temp rule 2).
    pub(crate) fn note_temp(&mut self, name: &str, on_commit: Option<crate::temp::OnCommit>) {
        if crate::temp::is_temp(name) {
            self.temps.created(name, on_commit);
        }
    }

    pub(crate) fn temps_mut(&mut self) -> &mut crate::temp::Temps {
        &mut self.temps
    }

    /// Whether a block is open or failed (the session is "in transaction").
    pub fn in_block(&self) -> bool {
        !matches!(self.block, Block::Idle)
    }

    /// A stored time setting, in milliseconds (0 = off).
    pub fn setting_ms(&self, name: &str) -> u64 {
        settings::time_ms(self.vars.get(name))
    }

    /// The planner switches as the session has set them (planner rule 8).
    pub(crate) fn switches(&self) -> crate::planner::Switches {
        let on = |name: &str| self.vars.get(name).is_none_or(|v| v != "off");
        crate::planner::Switches {
            seqscan: on("enable_seqscan"),
            indexscan: on("enable_indexscan"),
            indexonlyscan: on("enable_indexonlyscan"),
            hashjoin: on("enable_hashjoin"),
            mergejoin: on("enable_mergejoin"),
            nestloop: on("enable_nestloop"),
            hashagg: on("enable_hashagg"),
            sort: on("enable_sort"),
            workers: settings::parallel_workers(self.vars.get("max_parallel_workers_per_gather")),
        }
    }

    pub(crate) fn engine(&self) -> &'e Engine {
        self.engine
    }

    pub(crate) fn server(&self) -> &'e ServerState {
        self.server
    }

    /// The database the session is connected to.
    pub(crate) fn db(&self) -> &str {
        &self.db
    }

    /// The session user: the authenticated role, or the one SET SESSION
    /// AUTHORIZATION chose.
    pub(crate) fn user(&self) -> &str {
        self.vars
            .get("session_authorization")
            .map_or(&self.user, |s| s.as_str())
    }

    /// The current role, the session user and the database, owned: what a write's
    /// closure needs to check privileges while the session is borrowed.
    pub(crate) fn names(&self) -> (String, String, String) {
        (
            self.current_role().to_string(),
            self.user().to_string(),
            self.db().to_string(),
        )
    }

    /// The current role (`current_user`): SET ROLE's, else the session user. Its
    /// privileges are what every statement is checked against.
    pub(crate) fn current_role(&self) -> &str {
        match self.vars.get("role") {
            Some(r) => r,
            None => self.user(),
        }
    }

    /// The catalog as this session's statements see it: its transaction's, else the
    /// committed one (privileges rule 6).
    pub(crate) fn catalog(&self) -> &dyn crate::privileges::Catalog {
        match &self.block {
            Block::Open { txn: Some(t), .. } => &**t,
            _ => self.engine,
        }
    }

    /// The current role as checks see it, in the session's database.
    pub(crate) fn who(&self) -> SqlResult<crate::privileges::Who> {
        let cat = self.catalog();
        let role = cat.role(self.current_role())?;
        let owner = cat.database_entry(&self.db)?.owner;
        Ok(crate::privileges::who(cat, &role, owner))
    }

    /// SET ROLE name (None: NONE, RESET ROLE): to a role the session user is a
    /// member of, or any as a superuser (42501 otherwise, PostgreSQL's words).
    pub(crate) fn set_role(&mut self, r: Option<&crate::roles::RoleSpec>) -> SqlResult<()> {
        use crate::roles::RoleSpec;
        let Some(r) = r else {
            self.vars.remove("role");
            return Ok(());
        };
        let name = match r {
            RoleSpec::Name(n) => n.clone(),
            RoleSpec::CurrentUser => self.current_role().to_string(),
            RoleSpec::SessionUser => self.user().to_string(),
            RoleSpec::Public => {
                return Err(SqlError::new("42704", "role \"public\" does not exist"))
            }
        };
        let cat = self.catalog();
        let target = cat.role(&name)?;
        let me = cat.role(self.user())?;
        let owner = cat.database_entry(&self.db)?.owner;
        let w = crate::privileges::who(cat, &me, owner);
        if !me.superuser && w.oid != target.oid && !w.member_of.contains(&target.oid) {
            return Err(SqlError::new(
                "42501",
                format!("permission denied to set role \"{name}\""),
            ));
        }
        self.vars.insert("role".into(), name);
        Ok(())
    }

    /// SET SESSION AUTHORIZATION name (None: DEFAULT): only an authenticated
    /// superuser may; the current role follows.
    pub(crate) fn set_session_authorization(
        &mut self,
        r: Option<&crate::roles::RoleSpec>,
    ) -> SqlResult<()> {
        use crate::roles::RoleSpec;
        let me = self.catalog().role(&self.user)?;
        if !me.superuser {
            return Err(SqlError::new(
                "42501",
                "permission denied to set session authorization",
            ));
        }
        self.vars.remove("role");
        let Some(r) = r else {
            self.vars.remove("session_authorization");
            return Ok(());
        };
        let name = match r {
            RoleSpec::Name(n) => n.clone(),
            RoleSpec::CurrentUser | RoleSpec::SessionUser => self.user().to_string(),
            RoleSpec::Public => {
                return Err(SqlError::new("42704", "role \"public\" does not exist"))
            }
        };
        self.catalog().role(&name)?;
        self.vars.insert("session_authorization".into(), name);
        Ok(())
    }

    /// The session's id, which is also its pid.
    pub(crate) fn id(&self) -> u64 {
        self.id
    }

    /// The settings SET in this session (a rollback restores them: session rule 3).
    pub(crate) fn vars(&self) -> &BTreeMap<String, String> {
        &self.vars
    }

    pub(crate) fn vars_mut(&mut self) -> &mut BTreeMap<String, String> {
        &mut self.vars
    }

    /// SET LOCAL `name`: its value now is restored when the block ends.
    pub(crate) fn remember_local(&mut self, name: &str) {
        if !self.local_prior.contains_key(name) {
            let prior = self.vars.get(name).cloned();
            self.local_prior.insert(name.to_string(), prior);
        }
    }

    /// A plain SET of `name` after SET LOCAL in the same block outlives it, as in
    /// PostgreSQL.
    pub(crate) fn forget_local(&mut self, name: &str) {
        self.local_prior.remove(name);
    }

    /// The block ended: SET LOCAL values give way to those before them.
    fn restore_locals(&mut self) {
        for (name, prior) in std::mem::take(&mut self.local_prior) {
            match prior {
                Some(v) => self.vars.insert(name, v),
                None => self.vars.remove(&name),
            };
        }
    }

    /// Session rule 10: whether the current transaction (the block's, or the
    /// statement's own outside one) is READ ONLY.
    pub(crate) fn read_only_now(&self) -> bool {
        match self.block {
            Block::Idle => self.default_read_only(),
            _ => self.read_only,
        }
    }

    fn default_read_only(&self) -> bool {
        self.vars
            .get("default_transaction_read_only")
            .is_some_and(|v| v == "on")
    }

    /// `default_transaction_isolation`, as SHOW gives it.
    pub(crate) fn default_isolation(&self) -> String {
        self.vars
            .get("default_transaction_isolation")
            .cloned()
            .unwrap_or_else(|| "read committed".into())
    }

    /// Session rule 11: the current transaction's isolation level, as SHOW
    /// transaction_isolation gives it.
    pub(crate) fn isolation_now(&self) -> String {
        match (&self.block, self.repeatable) {
            (Block::Idle, _) => self.default_isolation(),
            (_, true) => "repeatable read".into(),
            (_, false) => match self.default_isolation().as_str() {
                "read uncommitted" => "read uncommitted".into(),
                _ => "read committed".into(),
            },
        }
    }

    /// SET TRANSACTION ISOLATION LEVEL (and `transaction_isolation`) in a block:
    /// this block's level, before its first query only (25001, PostgreSQL's
    /// words). Outside one, no effect.
    pub(crate) fn set_block_isolation(&mut self, repeatable: bool) -> SqlResult<()> {
        if !self.in_block() || repeatable == self.repeatable {
            return Ok(());
        }
        if self.first_snapshot.get() {
            return Err(SqlError::new(
                "25001",
                "SET TRANSACTION ISOLATION LEVEL must be called before any query",
            ));
        }
        self.repeatable = repeatable;
        Ok(())
    }

    /// Session rule 11: the snapshot a statement reads as of — the REPEATABLE
    /// READ block's (taken at its first statement), or a new one.
    pub(crate) fn statement_snapshot(&self) -> strata_engine::Snapshot<'e> {
        let engine: &'e Engine = self.engine;
        let txn = match &self.block {
            Block::Open { txn, .. } => {
                self.first_snapshot.set(true);
                txn.as_deref()
            }
            _ => None,
        };
        let fresh = || match txn {
            Some(t) => t.snapshot(),
            None => engine.snapshot(),
        };
        match (&self.block, self.repeatable) {
            (Block::Open { .. }, true) => self.fixed.get_or_init(fresh).clone(),
            _ => fresh(),
        }
    }

    /// SET TRANSACTION READ ONLY / READ WRITE (and `transaction_read_only`) in a
    /// block: this block's mode (session rule 10). Outside one, no effect.
    pub(crate) fn set_block_read_only(&mut self, read_only: bool) {
        if self.in_block() {
            self.read_only = read_only;
        }
    }

    /// Idle → Open.
    fn open_block(&mut self, implicit: bool) {
        debug_assert!(matches!(self.block, Block::Idle));
        self.read_only = self.default_read_only();
        self.repeatable = self.default_isolation() == "repeatable read";
        self.first_snapshot.set(false);
        self.fixed = std::cell::OnceCell::new();
        self.xact_start_us = crate::time::now_us();
        self.block = Block::Open {
            txn: None,
            implicit,
        };
        self.vars_at_begin = Some(self.vars.clone());
    }

    /// Open or Failed → Idle: commits if `commit` and the block has not failed
    /// (then the block's password changes take effect, after the commit record is
    /// durable), else rolls back (the block's settings are restored). Whether it
    /// committed.
    fn end_block(&mut self, commit: bool) -> SqlResult<bool> {
        self.pipeline = false;
        self.fixed.take();
        match std::mem::replace(&mut self.block, Block::Idle) {
            Block::Open { txn, .. } if commit => {
                if let Some(mut t) = txn {
                    if let Err(e) = self.temps.before_commit(&mut t, &self.db) {
                        let _ = t.abort();
                        self.rolled_back();
                        return Err(e);
                    }
                    self.temps.after_end();
                    match t.commit_lsn() {
                        Ok(lsn) => self.wait_for_standbys(lsn)?,
                        Err(e) => {
                            self.rolled_back();
                            return Err(e.into());
                        }
                    }
                }
                self.vars_at_begin = None;
                self.restore_locals();
                Ok(true)
            }
            Block::Open { txn, .. } => {
                let r = txn.map_or(Ok(()), |t| t.abort());
                self.rolled_back();
                r?;
                Ok(false)
            }
            Block::Failed => {
                self.rolled_back();
                Ok(false)
            }
            Block::Idle => Ok(false),
        }
    }

    fn rolled_back(&mut self) {
        self.temps.after_end();
        if let Some(v) = self.vars_at_begin.take() {
            self.vars = v;
        }
        self.local_prior.clear();
    }

    /// A statement failed, whatever failed (parse, bind, protocol, execution):
    /// the block's engine transaction is aborted now (releasing the writer lock,
    /// session rule 3); an explicit block becomes Failed, an implicit one is rolled
    /// back. Outside a block there is nothing to do.
    pub fn fail(&mut self) {
        match std::mem::replace(&mut self.block, Block::Idle) {
            Block::Open { txn, implicit } => {
                self.fixed.take();
                if let Some(t) = txn {
                    let _ = t.abort();
                }
                if implicit {
                    self.pipeline = false;
                    self.rolled_back();
                } else {
                    self.block = Block::Failed;
                }
            }
            Block::Failed => self.block = Block::Failed,
            Block::Idle => {}
        }
    }

    /// Runs a simple-protocol query string: its statements in order, up to the
    /// first error, each result given to `sink` as it ends. Several statements form
    /// one implicit block (session rule 5). The text is kept, not copied, by the
    /// statements that need it (an INSERT's VALUES rows: sql rule 5).
    pub fn run_simple(&mut self, sql: String, sink: &mut dyn ResultSink) {
        let _ns = self.enter();
        let text = Arc::new(sql);
        let stmts = match super::parse_shared(text.clone()) {
            Ok(v) => v,
            Err(e) => {
                self.fail();
                return sink.end(Err(e.placed(&text)));
            }
        };
        if stmts.is_empty() {
            // Only comments: PostgreSQL's EmptyQueryResponse.
            return sink.end(Ok(Executed {
                output: Output::Command(String::new()),
                notices: vec![],
            }));
        }
        let implicit = stmts.len() > 1;
        for st in &stmts {
            if implicit && matches!(self.block, Block::Idle) {
                self.open_block(true);
            }
            let r = self.execute(st, &[], sink).map_err(|e| {
                // Locate rule 1: a one-statement string's DML names.
                let e = match implicit {
                    false => crate::locate::dml_name(&text, e),
                    true => e,
                };
                e.placed(&text)
            });
            let failed = r.is_err();
            sink.end(r);
            if failed {
                break;
            }
        }
        if matches!(self.block, Block::Open { implicit: true, .. }) {
            if let Err(e) = self.end_block(true) {
                sink.end(Err(e));
            }
        }
    }

    /// Execute of the extended protocol: the statements up to Sync form one implicit
    /// block, as in PostgreSQL (session rule 5); one that never runs in a block runs
    /// on its own if it comes first, and gets 25001 after others.
    pub fn execute_extended(
        &mut self,
        stmt: &Stmt,
        cache: Option<&PlanCache>,
        params: &[Datum],
        sink: &mut dyn ResultSink,
    ) -> SqlResult<Executed> {
        if matches!(self.block, Block::Idle) && !stmt.is_txn_control() && !stmt.never_in_block() {
            self.open_block(true);
            self.pipeline = true;
        }
        self.execute_cached(stmt, cache, params, sink)
    }

    /// Whether a [`Session::sync`] now would commit nothing (and so cannot fail):
    /// no engine transaction in a pipeline's implicit block.
    pub fn sync_commits_nothing(&self) -> bool {
        !(self.pipeline
            && matches!(
                self.block,
                Block::Open {
                    implicit: true,
                    txn: Some(_)
                }
            ))
    }

    /// Sync of the extended protocol: commits the pipeline's implicit block.
    pub fn sync(&mut self) -> SqlResult<()> {
        let _ns = self.enter();
        if self.pipeline && matches!(self.block, Block::Open { implicit: true, .. }) {
            self.end_block(true)?;
        }
        self.pipeline = false;
        Ok(())
    }

    /// Parse with the parameter types the client declared (Unknown: inferred), as
    /// [`Session::prepare`]; the statement is bound with them (plancache rule 9).
    pub fn prepare_typed(&mut self, stmt: &Stmt, declared: &[SqlType]) -> SqlResult<Described> {
        self.with_declared(declared.to_vec(), |s| s.prepare(stmt))
    }

    /// Parse of the extended protocol: describes `stmt`; in a failed block only
    /// COMMIT and ROLLBACK may be prepared (25P02), as in PostgreSQL. An error fails
    /// the block.
    pub fn prepare(&mut self, stmt: &Stmt) -> SqlResult<Described> {
        let _ns = self.enter();
        self.sync_datetime(&mut NoRows);
        let r = if matches!(self.block, Block::Failed) && !ends_block(stmt) {
            Err(aborted())
        } else {
            self.describe(stmt)
        };
        if r.is_err() {
            self.fail();
        }
        r
    }

    /// Columns of a table as this session sees it (its own uncommitted DDL included).
    fn columns(&self, table: &str) -> SqlResult<Vec<(String, SqlType)>> {
        if let Some(cols) = crate::views::schema(table) {
            return Ok(cols); // views rule 1
        }
        Ok(self
            .table_columns(table)?
            .into_iter()
            .map(|c| {
                let t = SqlType::of_column(&c);
                (c.name, t)
            })
            .collect())
    }

    fn env_parts(&self) -> EnvParts<'e> {
        EnvParts {
            engine: self.engine,
            server: self.server,
            pid: self.id,
            xact_start_us: self.xact_start_us,
            writing: matches!(self.block, Block::Open { txn: Some(_), .. }),
            read_only: self.read_only_now(),
            who: self.who().ok().filter(|w| !w.superuser).map(Arc::new),
            users: (self.current_role().to_string(), self.user().to_string()),
            seqs: Arc::clone(&self.seqs),
            interrupts: Arc::clone(&self.interrupts),
            deadline: self.deadline,
        }
    }

    /// CREATE TABLE ... AS query: the query bound as the SELECT it is gives the
    /// columns (an untyped literal makes a text column, as PostgreSQL's); the table is
    /// made and filled in one transaction (this statement's, if no block is open).
    /// Tag `SELECT n`, as PostgreSQL's.
    pub(crate) fn create_table_as(
        &mut self,
        name: &str,
        (if_not_exists, with_data): (bool, bool),
        query: &sqlparser::ast::Query,
        notices: &mut Notices,
    ) -> SqlResult<Output> {
        let mut b = Binder::default();
        let select = Stmt::Select(Box::new(query.clone()));
        let Bound::Select(q) = self.bind(&select, &mut b)? else {
            unreachable!("a query binds as a SELECT");
        };
        let mut cols: Vec<strata_engine::Column> = Vec::new();
        for (n, t) in &q.columns {
            let ty = if *t == SqlType::Unknown {
                SqlType::Text
            } else {
                *t
            };
            if cols.iter().any(|c| &c.name == n) {
                return Err(SqlError::new(
                    "42701",
                    format!("column \"{n}\" specified more than once"),
                ));
            }
            cols.push(strata_engine::Column::new(n, ty.to_col()?));
        }
        if if_not_exists && self.columns(name).is_ok() {
            notices.push(crate::ddl::exists_skipping(name));
            return Ok(Output::Command("CREATE TABLE AS".into()));
        }
        let opened = matches!(self.block, Block::Idle);
        if opened {
            self.open_block(true);
        }
        let r = if with_data {
            self.create_and_fill(name, &cols, query)
        } else {
            // WITH NO DATA: the query is bound (its columns make the table), not run.
            let db = self.db.clone();
            self.write(|t| Ok(t.create_table(&db, name, &cols, None)?))
                .map(|()| Output::Command("CREATE TABLE AS".into()))
        };
        if opened {
            self.end_block(r.is_ok())?;
        }
        r
    }

    fn create_and_fill(
        &mut self,
        name: &str,
        cols: &[strata_engine::Column],
        query: &sqlparser::ast::Query,
    ) -> SqlResult<Output> {
        let db = self.db.clone();
        self.write(|t| Ok(t.create_table(&db, name, cols, None)?))?;
        let insert = Stmt::Insert {
            table: name.to_string(),
            columns: None,
            source: crate::InsertSource::Query(Box::new(query.clone())),
            returning: None,
            on_conflict: None,
        };
        let mut b = Binder::default();
        let Bound::Insert(ins) = self.bind(&insert, &mut b)? else {
            unreachable!("an INSERT binds as an INSERT");
        };
        let out = self.insert(ins, &mut b, &[], &mut NoRows)?;
        let n = match &out {
            Output::Command(tag) => tag.rsplit(' ').next().unwrap_or("0").to_string(),
            _ => "0".into(),
        };
        Ok(Output::Command(format!("SELECT {n}")))
    }

    /// The value a column's DEFAULT gives now (NULL without one): ALTER TABLE ... ADD
    /// COLUMN's fill for the existing rows, bound and checked as CREATE TABLE's.
    pub(crate) fn default_value(&self, col: &strata_engine::Column) -> SqlResult<Datum> {
        let Some(text) = &col.default else {
            return Ok(Datum::Null);
        };
        let mut b = Binder::default();
        let e = bind_default(&mut b, col, text)?;
        let parts = self.env_parts();
        let env = parts.env(&self.db);
        let row = Row {
            cols: &[],
            params: &[],
            aggs: &[],
            env: &env,
            sub: None,
        };
        bind::eval(&e, &row)
    }

    /// A table's columns as the catalog keeps them (with NOT NULL and DEFAULT).
    /// The index `table` is best read through for `pred` (plan rule 2), if any.
    fn index_path(&self, table: &str, pred: Option<&Expr>) -> SqlResult<Option<IndexPath>> {
        if crate::views::schema(table).is_some() || pred.is_none() || !self.switches().indexscan {
            // Planner rule 8: enable_indexscan off reads no index.
            return Ok(None);
        }
        let rel = self.relation_entry(table)?;
        Ok(crate::plan::choose(pred, &rel.columns, &rel.indexes))
    }

    /// The table's catalog entry, as this session sees it.
    fn relation_entry(&self, table: &str) -> SqlResult<strata_engine::RelEntry> {
        Ok(match &self.block {
            Block::Open { txn: Some(t), .. } => {
                let dbe = t.database(&self.db)?;
                (*t.relation(&dbe, table)?).clone()
            }
            _ => self.engine.table(&self.db, table)?,
        })
    }

    /// Relation `name` as this session sees it, shared; None if there is none.
    pub(crate) fn relation_arc(&self, name: &str) -> Option<Arc<strata_engine::RelEntry>> {
        self.relation_shared(name).ok()
    }

    /// Relation `name` as this session sees it, shared; 42P01 if there is none.
    fn relation_shared(&self, name: &str) -> SqlResult<Arc<strata_engine::RelEntry>> {
        Ok(match &self.block {
            Block::Open { txn: Some(t), .. } => {
                let dbe = t.database(&self.db)?;
                t.relation(&dbe, name)?
            }
            _ => self.engine.relation(&self.db, name)?,
        })
    }

    /// Binds a query against the catalog as this session sees it (views expanded:
    /// rewrite module).
    pub(crate) fn bind_query(&self, q: &sqlparser::ast::Query) -> SqlResult<crate::analyze::Query> {
        Binder::default().query(q, &Lookup(self))
    }

    fn table_columns(&self, table: &str) -> SqlResult<Vec<strata_engine::Column>> {
        Ok(match &self.block {
            Block::Open { txn: Some(t), .. } => t.columns(&self.db, table)?,
            _ => self.engine.table(&self.db, table)?.columns,
        })
    }

    /// The table's CHECK constraints bound over its row (table rule: every CHECK
    /// holds, or is NULL, for every row written).
    fn bind_checks(&self, b: &mut Binder, table: &str) -> SqlResult<Vec<(String, Expr)>> {
        if crate::views::schema(table).is_some() {
            return Ok(Vec::new());
        }
        let cols = self.table_columns(table)?;
        let scope = check_scope(table, &cols);
        let mut out = Vec::new();
        for c in &cols {
            for (name, sql) in &c.checks {
                out.push((name.clone(), bind_check(b, &scope, sql)?));
            }
        }
        Ok(out)
    }

    /// Each column's DEFAULT bound (None: NULL), for the columns an INSERT or COPY
    /// does not give (`given`).
    fn bind_defaults(
        &self,
        b: &mut Binder,
        table: &str,
        given: &[usize],
    ) -> SqlResult<Vec<Option<Expr>>> {
        if crate::views::schema(table).is_some() {
            return Ok(Vec::new());
        }
        let cols = self.table_columns(table)?;
        let mut out = Vec::with_capacity(cols.len());
        for (i, c) in cols.iter().enumerate() {
            if given.contains(&i) {
                out.push(None);
                continue;
            }
            out.push(match (&c.default, c.identity, &c.owned_seq) {
                // Sequences rule 1: an identity column's values come from its sequence.
                (_, Some(_), Some(seq)) => {
                    let text = format!("nextval({})", crate::sequences::regclass_literal(seq));
                    Some(bind_default(b, c, &text)?)
                }
                (Some(text), _, _) => Some(bind_default(b, c, text)?),
                _ => None,
            });
        }
        Ok(out)
    }

    /// 428C9 if an INSERT gives (or an UPDATE sets, `update`) one of `targets` that
    /// is a GENERATED ALWAYS identity column (sequences rule 1).
    fn refuse_always_identity(
        &self,
        table: &str,
        targets: &[usize],
        update: bool,
    ) -> SqlResult<()> {
        if crate::views::schema(table).is_some() {
            return Ok(());
        }
        let cols = self.table_columns(table)?;
        let Some(c) = targets
            .iter()
            .filter_map(|i| cols.get(*i))
            .find(|c| c.identity == Some(true))
        else {
            return Ok(());
        };
        let n = &c.name;
        let message = if update {
            format!("column \"{n}\" can only be updated to DEFAULT")
        } else {
            format!("cannot insert a non-DEFAULT value into column \"{n}\"")
        };
        Err(SqlError::new("428C9", message)
            .with_detail(format!(
                "Column \"{n}\" is an identity column defined as GENERATED ALWAYS."
            ))
            .with_hint("Leave the column out: Strata does not take OVERRIDING SYSTEM VALUE."))
    }

    /// Binds a statement: DML against the catalog as this session sees it; the
    /// other kinds as they are.
    fn bind<'s>(&self, stmt: &'s Stmt, b: &mut Binder) -> SqlResult<Bound<'s>> {
        let scope_of = Lookup(self);
        Ok(match stmt {
            Stmt::Empty => Bound::Empty,
            Stmt::Control(c) => Bound::Control(c),
            Stmt::Ddl(d) => Bound::Ddl(d),
            Stmt::Utility(u) => Bound::Utility(u),
            Stmt::Access(a) => Bound::Access(a),
            Stmt::Prepared(p) => Bound::Prepared(p),
            Stmt::Select(q) => Bound::Select(Box::new(b.query(q, &scope_of)?)),
            Stmt::With(w) => return self.bind_with(w, b),
            Stmt::Explain(q, o) => Bound::Explain(Box::new(b.query(q, &scope_of)?), *o),
            Stmt::Delete {
                table,
                alias,
                using,
                with,
                selection,
                returning,
            } => {
                let from = (with.as_deref(), &using[..]);
                let target = self.dml_scope(b, table, alias.as_deref(), from, &scope_of)?;
                let mut d = self.bind_delete(table, &target.scope, selection.as_ref(), b)?;
                d.returning = bind_returning_in(b, &target.scope, returning)?;
                let types: Vec<SqlType> = self.columns(table)?.iter().map(|c| c.1).collect();
                d.from = target
                    .from
                    .map(|q| DmlFrom::new(q, d.pred.as_ref(), &types));
                Bound::Delete(d)
            }
            Stmt::Update {
                table,
                alias,
                from,
                with,
                assignments,
                selection,
                returning,
            } => {
                let from = (with.as_deref(), &from[..]);
                let target = self.dml_scope(b, table, alias.as_deref(), from, &scope_of)?;
                let mut u =
                    self.bind_update(table, &target.scope, assignments, selection.as_ref(), b)?;
                u.returning = bind_returning_in(b, &target.scope, returning)?;
                u.from = target
                    .from
                    .map(|q| DmlFrom::new(q, u.pred.as_ref(), &u.col_types));
                Bound::Update(u)
            }
            Stmt::Copy(c) => {
                let mut bc = self.bind_copy(c)?;
                if !bc.to {
                    bc.defaults = self.bind_defaults(b, &c.table, &bc.targets)?;
                    bc.checks = self.bind_checks(b, &c.table)?;
                }
                Bound::Copy(bc)
            }
            Stmt::Insert {
                table,
                columns,
                source,
                returning,
                on_conflict,
            } => {
                let mut i = self.bind_insert(b, table, columns.as_deref(), source)?;
                i.returning = self.bind_returning(b, table, returning)?;
                if let Some(oc) = on_conflict {
                    i.conflict = Some(self.bind_conflict(b, table, oc)?);
                }
                Bound::Insert(i)
            }
        })
    }

    /// COPY: the columns named must be the table's, each once (42703, 42701).
    fn bind_copy(&self, c: &crate::CopyStmt) -> SqlResult<BoundCopy> {
        if crate::views::schema(&c.table).is_some() && !c.to {
            return Err(SqlError::new(
                "42809",
                format!("cannot copy to view \"{}\"", c.table),
            ));
        }
        let cols = self.columns(&c.table)?;
        let targets = match &c.columns {
            None => (0..cols.len()).collect(),
            Some(names) => {
                let mut t = Vec::new();
                for n in names {
                    let i = cols.iter().position(|(c, _)| c == n).ok_or_else(|| {
                        SqlError::new(
                            "42703",
                            format!("column \"{n}\" of relation \"{}\" does not exist", c.table),
                        )
                    })?;
                    if t.contains(&i) {
                        return Err(SqlError::new(
                            "42701",
                            format!("column \"{n}\" specified more than once"),
                        ));
                    }
                    t.push(i);
                }
                t
            }
        };
        Ok(BoundCopy {
            checks: Vec::new(),
            defaults: Vec::new(),
            table: c.table.clone(),
            cols,
            targets,
            to: c.to,
            file: c.file.clone(),
            options: c.options.clone(),
        })
    }

    /// RETURNING over `table`'s columns, if the statement has one.
    fn bind_returning(
        &self,
        b: &mut Binder,
        table: &str,
        returning: &crate::Returning,
    ) -> SqlResult<Option<Returning>> {
        if returning.is_none() {
            return Ok(None);
        }
        let scope = Scope {
            qualifiers: vec![table.to_string()],
            cols: self.columns(table)?,
            excluded: false,
            ..Default::default()
        };
        bind_returning_in(b, &scope, returning)
    }

    /// An INSERT: its target columns, and its source bound (a VALUES list kept as
    /// text is bound a row at a time as it runs: [`Session::insert`]).
    fn bind_insert(
        &self,
        b: &mut Binder,
        table: &str,
        columns: Option<&[String]>,
        source: &InsertSource,
    ) -> SqlResult<BoundInsert> {
        let cols = self.columns(table)?;
        let query = match source {
            InsertSource::Query(q) => Some(b.query(q, &Lookup(self))?),
            _ => None,
        };
        let mut targets = Vec::new();
        match columns {
            None => targets.extend(0..implicit_width(source, query.as_ref(), cols.len())?),
            Some(names) => {
                for n in names {
                    let i = cols.iter().position(|(c, _)| c == n).ok_or_else(|| {
                        SqlError::new(
                            "42703",
                            format!("column \"{n}\" of relation \"{table}\" does not exist"),
                        )
                    })?;
                    if targets.contains(&i) {
                        return Err(SqlError::new(
                            "42701",
                            format!("column \"{n}\" specified more than once"),
                        ));
                    }
                    targets.push(i);
                }
            }
        }
        self.refuse_always_identity(table, &targets, false)?;
        let defaults = self.bind_defaults(b, table, &targets)?;
        let mut map = vec![None; cols.len()];
        for (k, ci) in targets.iter().enumerate() {
            map[*ci] = Some(k);
        }
        let col_types: Vec<SqlType> = cols.iter().map(|c| c.1).collect();
        let row_defaults = match source {
            InsertSource::Values(rows) if !rows.iter().flatten().any(crate::is_default_keyword) => {
                Vec::new()
            }
            _ => self.bind_defaults(b, table, &[])?,
        };
        let targets = Targets {
            cols,
            targets,
            explicit: columns.is_some(),
            row_defaults,
        };
        let source = match source {
            InsertSource::Values(rows) => {
                let mut width = None;
                let rows = rows
                    .iter()
                    .map(|r| targets.bind_row(b, r, &mut width))
                    .collect::<SqlResult<_>>()?;
                BoundSource::Values(rows)
            }
            InsertSource::Rows(rows) => BoundSource::Rows(rows.clone(), targets),
            InsertSource::Query(_) => {
                let q = query.expect("bound above");
                targets.check_width(q.columns.len())?;
                let mut trim = Vec::new();
                for (k, (_, t)) in q.columns.iter().enumerate() {
                    let (name, ty) = &targets.cols[targets.targets[k]];
                    assign(b, Expr::Const(Datum::Null), *t, *ty, name)?;
                    // char(n) into text loses its padding (the assignment cast).
                    if (*t, *ty) == (SqlType::Bpchar, SqlType::Text) {
                        trim.push(k);
                    }
                }
                BoundSource::Query(Box::new(q), trim)
            }
        };
        Ok(BoundInsert {
            returning: None,
            checks: self.bind_checks(b, table)?,
            defaults,
            table: table.to_string(),
            map,
            col_types,
            source,
            conflict: None,
        })
    }

    /// ON CONFLICT: the arbiters (the unique index on exactly the columns named, or
    /// the constraint named; 42P10 if none) and DO UPDATE bound over the existing row
    /// and `excluded`, the proposed one (42703, 42601, 42804 as UPDATE's).
    fn bind_conflict(
        &self,
        b: &mut Binder,
        table: &str,
        oc: &crate::OnConflict,
    ) -> SqlResult<BoundConflict> {
        let rel = self.relation_entry(table)?;
        let unique = rel.indexes.iter().filter(|ix| ix.unique);
        let arbiters: Vec<String> = match (&oc.constraint, oc.columns.is_empty()) {
            (Some(c), _) => unique
                .filter(|ix| ix.name == *c)
                .map(|ix| ix.name.clone())
                .collect(),
            (None, true) => unique.map(|ix| ix.name.clone()).collect(),
            (None, false) => {
                let mut want: Vec<&str> = oc.columns.iter().map(String::as_str).collect();
                want.sort_unstable();
                unique
                    .filter(|ix| {
                        let mut have: Vec<&str> = ix
                            .columns
                            .iter()
                            .map(|c| rel.columns[*c].name.as_str())
                            .collect();
                        have.sort_unstable();
                        have == want
                    })
                    .map(|ix| ix.name.clone())
                    .collect()
            }
        };
        if arbiters.is_empty() && (oc.constraint.is_some() || !oc.columns.is_empty()) {
            return Err(SqlError::new(
                "42P10",
                "there is no unique or exclusion constraint matching the ON CONFLICT specification",
            ));
        }
        let Some((assignments, selection)) = &oc.update else {
            return Ok(BoundConflict {
                arbiters,
                update: None,
            });
        };
        let (_, sets, pred) = self.bind_sets(b, (table, true), assignments, selection.as_ref())?;
        Ok(BoundConflict {
            arbiters,
            update: Some((sets, pred)),
        })
    }

    /// `SET col = expr, ...` and a WHERE over `table`'s row (followed by `excluded`,
    /// the proposed row, for ON CONFLICT): per column its new value's expression
    /// coerced to the column's type (None: kept), and the WHERE (42703 unknown column,
    /// 42601 a column set twice, 42804 a type that does not fit).
    fn bind_sets(
        &self,
        b: &mut Binder,
        (table, excluded): (&str, bool),
        assignments: &[(String, sqlparser::ast::Expr)],
        selection: Option<&sqlparser::ast::Expr>,
    ) -> SqlResult<BoundSets> {
        let cols = self.columns(table)?;
        let scope = Scope {
            qualifiers: vec![table.to_string()],
            cols: cols.clone(),
            excluded,
            ..Default::default()
        };
        bind_sets_in(b, table, &scope, cols, assignments, selection)
    }

    /// The target of an UPDATE or DELETE: the scope its SET, WHERE and RETURNING
    /// are bound in — the table's columns under its alias (else its name), then
    /// those of FROM / USING — and the query that reads FROM / USING.
    fn dml_scope<'c>(
        &self,
        b: &mut Binder,
        table: &str,
        alias: Option<&str>,
        (with, from): (
            Option<&sqlparser::ast::With>,
            &[sqlparser::ast::TableWithJoins],
        ),
        scope_of: &'c crate::bind::ScopeOf<'c>,
    ) -> SqlResult<DmlScope<'c>> {
        let name = alias.unwrap_or(table).to_string();
        let target = Scope {
            qualifiers: vec![name.clone()],
            cols: self.columns(table)?,
            ..Default::default()
        };
        if from.is_empty() {
            return Ok(DmlScope {
                scope: target,
                from: None,
            });
        }
        let (query, fs) = b.dml_from(with, from, scope_of)?;
        if fs.qualifiers.contains(&name) {
            return Err(SqlError::new(
                "42712",
                format!("table name \"{name}\" specified more than once"),
            ));
        }
        let mut scope = crate::analyze::side_by_side(&target, &fs);
        // Subqueries are not run inside the write (session rule 9): none here.
        scope.catalog = None;
        Ok(DmlScope {
            scope,
            from: Some(query),
        })
    }

    fn bind_delete(
        &self,
        table: &str,
        scope: &Scope,
        selection: Option<&sqlparser::ast::Expr>,
        b: &mut Binder,
    ) -> SqlResult<BoundDelete> {
        let ncols = self.columns(table)?.len();
        let pred = match selection {
            Some(w) => Some(b.condition(scope, w, "WHERE")?),
            None => None,
        };
        // With USING the WHERE reads more than the table: no index path.
        let index = match scope.cols.len() == ncols {
            true => self.index_path(table, pred.as_ref())?,
            false => None,
        };
        Ok(BoundDelete {
            returning: None,
            table: table.to_string(),
            index,
            pred,
            ncols,
            from: None,
        })
    }

    /// An UPDATE: each `SET col = expr` bound over the old row and coerced to the
    /// column's type (42703 unknown column, 42601 a column set twice, 42804 a type
    /// that does not fit).
    fn bind_update(
        &self,
        table: &str,
        scope: &Scope,
        assignments: &[(String, sqlparser::ast::Expr)],
        selection: Option<&sqlparser::ast::Expr>,
        b: &mut Binder,
    ) -> SqlResult<BoundUpdate> {
        let cols = self.columns(table)?;
        let plain = scope.cols.len() == cols.len();
        let (cols, sets, pred) = bind_sets_in(b, table, scope, cols, assignments, selection)?;
        let set: Vec<usize> = (0..sets.len()).filter(|i| sets[*i].is_some()).collect();
        self.refuse_always_identity(table, &set, true)?;
        // With FROM the WHERE reads more than the table: no index path.
        let index = match plain {
            true => self.index_path(table, pred.as_ref())?,
            false => None,
        };
        Ok(BoundUpdate {
            returning: None,
            checks: self.bind_checks(b, table)?,
            table: table.to_string(),
            sets,
            col_types: cols.iter().map(|c| c.1).collect(),
            index,
            pred,
            from: None,
        })
    }

    /// Parameter types and result columns of one statement, without running it.
    pub fn describe(&self, stmt: &Stmt) -> SqlResult<Described> {
        let _ns = self.enter();
        let rewritten = crate::updatable::dml_on_view(self, stmt)?;
        let stmt = rewritten.as_ref().unwrap_or(stmt);
        let mut b = self.binder();
        let bound = self.bind(stmt, &mut b)?;
        if let Bound::Insert(BoundInsert {
            source: BoundSource::Rows(rows, targets),
            ..
        }) = &bound
        {
            // Every row's parameters, typed as the rows will be when the insert runs.
            let mut width = None;
            for r in rows.iter() {
                targets.bind_row(&mut b, &r?, &mut width)?;
            }
        }
        let columns = match &bound {
            Bound::Select(q) => q.columns.clone(),
            Bound::Prepared(p) => self.prepared_columns(p),
            Bound::Explain(..) => vec![("QUERY PLAN".into(), SqlType::Text)],
            Bound::Utility(u) => utility::columns(u),
            Bound::Empty
            | Bound::Control(_)
            | Bound::Insert(BoundInsert {
                returning: None, ..
            })
            | Bound::Delete(BoundDelete {
                returning: None, ..
            })
            | Bound::Update(BoundUpdate {
                returning: None, ..
            })
            | Bound::Copy(_)
            | Bound::Access(_)
            | Bound::Ddl(_) => vec![],
            Bound::Insert(BoundInsert {
                returning: Some(r), ..
            })
            | Bound::Delete(BoundDelete {
                returning: Some(r), ..
            })
            | Bound::Update(BoundUpdate {
                returning: Some(r), ..
            }) => r.columns.clone(),
        };
        let params = b
            .params
            .iter()
            .map(|t| {
                if *t == SqlType::Unknown {
                    SqlType::Text
                } else {
                    *t
                }
            })
            .collect();
        Ok(Described { params, columns })
    }

    /// Runs one statement with parameter values, honouring the block state; any
    /// error fails the block ([`Session::fail`]).
    pub fn execute(
        &mut self,
        stmt: &Stmt,
        params: &[Datum],
        sink: &mut dyn ResultSink,
    ) -> SqlResult<Executed> {
        self.execute_cached(stmt, None, params, sink)
    }

    /// [`Session::execute`] of a prepared statement, its plans kept in `cache`.
    fn execute_cached(
        &mut self,
        stmt: &Stmt,
        cache: Option<&PlanCache>,
        params: &[Datum],
        sink: &mut dyn ResultSink,
    ) -> SqlResult<Executed> {
        let _ns = self.enter();
        self.interrupts.cancel.store(false, Ordering::SeqCst);
        if matches!(self.block, Block::Idle) {
            self.xact_start_us = crate::time::now_us();
        }
        self.sync_datetime(sink);
        let timeout_ms = self.setting_ms("statement_timeout");
        self.deadline =
            (timeout_ms > 0).then(|| Instant::now() + Duration::from_millis(timeout_ms));
        let mut notices = Vec::new();
        // Plancache rule 9: bound with the parameter types it was described with.
        let r = match cache {
            Some(c) => self.with_declared(c.declared(), |s| {
                s.execute_inner(stmt, cache, params, &mut notices, sink)
            }),
            None => self.execute_inner(stmt, cache, params, &mut notices, sink),
        };
        notices.append(&mut self.late_notices);
        self.deadline = None;
        match r {
            Ok(output) => Ok(Executed { output, notices }),
            Err(e) => {
                self.fail();
                Err(e)
            }
        }
    }

    /// Checks that the block state lets `stmt` run (session rules 3 and 4), binds
    /// it, checks its parameters and runs it.
    fn execute_inner(
        &mut self,
        stmt: &Stmt,
        cache: Option<&PlanCache>,
        params: &[Datum],
        notices: &mut Notices,
        sink: &mut dyn ResultSink,
    ) -> SqlResult<Output> {
        if matches!(self.block, Block::Failed) && !ends_block(stmt) {
            return Err(aborted());
        }
        if stmt.never_in_block() && self.pipeline {
            return Err(SqlError::new(
                "25001",
                format!("{} cannot be executed within a pipeline", stmt.verb()),
            ));
        }
        if stmt.never_in_block() && matches!(self.block, Block::Open { .. }) {
            return Err(no_block(stmt.verb()));
        }
        if let Some(verb) = stmt.write_verb().filter(|_| self.read_only_now()) {
            return Err(read_only_refusal(verb)); // session rule 10
        }
        if let Stmt::With(w) = stmt {
            return self.run_with(w, params, notices, sink);
        }
        if let Some(c) = cache {
            if let Some(out) = self.run_cached(stmt, c, params, notices, sink)? {
                return Ok(out);
            }
        }
        let rewritten = crate::updatable::dml_on_view(self, stmt)?;
        let stmt = rewritten.as_ref().unwrap_or(stmt);
        let mut b = self.binder();
        let bound = self.bind(stmt, &mut b)?;
        check_params(b.params.len(), params)?;
        self.check_privileges(&bound)?;
        self.dispatch(bound, &mut b, params, notices, sink)
    }

    /// Privileges rules 3, 4 and 6: what the bound statement needs of the current
    /// role, before anything runs.
    fn check_privileges(&self, bound: &Bound<'_>) -> SqlResult<()> {
        use crate::privileges::{expr_columns, require};
        use strata_engine::acl::Priv;
        let w = self.who()?;
        if w.superuser {
            return Ok(());
        }
        let rel = |t: &str| self.relation_entry(t);
        // The table's columns read: past its width, ON CONFLICT's `excluded` wraps
        // around; UPDATE ... FROM's columns (`own`) are FROM's, checked with its query.
        let read_cols = |exprs: &mut dyn Iterator<Item = &Expr>, n: usize, own: bool| {
            let mut cols = Vec::new();
            exprs.for_each(|e| expr_columns(e, &mut cols));
            match own {
                true => cols.retain(|c| *c < n),
                false => cols.iter_mut().for_each(|c| *c %= n.max(1)),
            }
            cols.sort_unstable();
            cols.dedup();
            cols
        };
        let read = |exprs: &mut dyn Iterator<Item = &Expr>, n: usize| read_cols(exprs, n, false);
        match bound {
            Bound::Select(p) | Bound::Explain(p, _) => self.check_select(&w, p)?,
            Bound::Insert(i) => {
                let r = rel(&i.table)?;
                let targets: Vec<usize> =
                    (0..i.map.len()).filter(|c| i.map[*c].is_some()).collect();
                require(&w, &r, Priv::INSERT, &targets)?;
                if let Some(ret) = &i.returning {
                    require(
                        &w,
                        &r,
                        Priv::SELECT,
                        &read(&mut ret.exprs.iter(), r.columns.len()),
                    )?;
                }
                if let Some((sets, pred)) = i.conflict.as_ref().and_then(|c| c.update.as_ref()) {
                    let set: Vec<usize> = (0..sets.len()).filter(|c| sets[*c].is_some()).collect();
                    require(&w, &r, Priv::UPDATE, &set)?;
                    let cols = read(
                        &mut sets.iter().flatten().chain(pred.iter()),
                        r.columns.len(),
                    );
                    if !cols.is_empty() {
                        require(&w, &r, Priv::SELECT, &cols)?;
                    }
                }
                if let BoundSource::Query(q, _) = &i.source {
                    self.check_select(&w, q)?;
                }
            }
            Bound::Update(u) => {
                let r = rel(&u.table)?;
                let set: Vec<usize> = (0..u.sets.len()).filter(|c| u.sets[*c].is_some()).collect();
                require(&w, &r, Priv::UPDATE, &set)?;
                let rets = u.returning.iter().flat_map(|r| r.exprs.iter());
                let mut exprs = u.sets.iter().flatten().chain(u.pred.iter()).chain(rets);
                if let Some(f) = &u.from {
                    self.check_select(&w, &f.query)?;
                }
                let cols = read_cols(&mut exprs, r.columns.len(), u.from.is_some());
                if !cols.is_empty() {
                    require(&w, &r, Priv::SELECT, &cols)?;
                }
            }
            Bound::Delete(d) => {
                let r = rel(&d.table)?;
                require(&w, &r, Priv::DELETE, &[])?;
                let rets = d.returning.iter().flat_map(|r| r.exprs.iter());
                let mut exprs = d.pred.iter().chain(rets);
                if let Some(f) = &d.from {
                    self.check_select(&w, &f.query)?;
                }
                let cols = read_cols(&mut exprs, r.columns.len(), d.from.is_some());
                if !cols.is_empty() {
                    require(&w, &r, Priv::SELECT, &cols)?;
                }
            }
            Bound::Copy(c) => {
                let need = if c.to { Priv::SELECT } else { Priv::INSERT };
                require(&w, &rel(&c.table)?, need, &c.targets)?;
                if c.file.is_some() {
                    crate::privileges::may_copy_file(&w, c.to)?;
                }
            }
            Bound::Ddl(d) => crate::privileges::check_ddl(self.catalog(), &self.db, &w, d)?,
            Bound::Utility(Utility::Checkpoint) => crate::privileges::may_checkpoint(&w)?,
            Bound::Utility(Utility::Show { name }) => crate::privileges::may_show(&w, name)?,
            Bound::Utility(Utility::Set { name, .. }) => crate::privileges::may_set(&w, name)?,
            _ => {}
        }
        Ok(())
    }

    /// SELECT on the columns a query reads of its table (a system view: anyone).
    fn check_select(&self, w: &crate::privileges::Who, q: &Query) -> SqlResult<()> {
        let need = strata_engine::acl::Priv::SELECT;
        for (t, cols) in &q.reads {
            if crate::views::schema(t).is_some() {
                continue;
            }
            let r = self.relation_entry(t)?;
            crate::privileges::require(w, &r, need, cols)?;
        }
        Ok(())
    }

    /// Runs a bound statement: one executor per kind.
    fn dispatch(
        &mut self,
        bound: Bound<'_>,
        b: &mut Binder,
        params: &[Datum],
        notices: &mut Notices,
        sink: &mut dyn ResultSink,
    ) -> SqlResult<Output> {
        match bound {
            Bound::Empty => Ok(Output::Command(String::new())),
            Bound::Control(c) => self.control(c, notices),
            Bound::Select(plan) => {
                sink.columns(&plan.columns)?;
                let n = self.run_query(&plan, params, &mut |r| sink.row(r))?;
                Ok(Output::Rows(n))
            }
            Bound::Explain(q, o) => {
                let lines = self.explain(&q, o, params)?;
                sink.columns(&[("QUERY PLAN".into(), SqlType::Text)])?;
                let n = lines.len() as u64;
                for l in lines {
                    sink.row(vec![Datum::Text(l)])?;
                }
                Ok(Output::Rows(n))
            }
            Bound::Insert(ins) => self.insert(ins, b, params, sink),
            Bound::Delete(del) => self.delete(del, params, sink),
            Bound::Update(up) => self.update(up, params, sink),
            Bound::Copy(c) if c.to => self.copy_to(c, sink),
            Bound::Copy(c) => self.copy_from(c, sink),
            Bound::Ddl(d) => ddl::run(self, d, notices),
            Bound::Utility(u) => utility::run(self, u, sink, notices),
            Bound::Access(a) => crate::roles::run(self, a, notices),
            Bound::Prepared(p) => self.prepared_stmt(p, notices, sink),
        }
    }

    /// BEGIN, COMMIT, ROLLBACK and the savepoint commands: the transitions of the
    /// block state machine that statements ask for (see the module diagram).
    fn control(&mut self, c: &Control, notices: &mut Notices) -> SqlResult<Output> {
        match c {
            Control::Begin { modes } => {
                self.begin(notices)?;
                if let Some(rr) = modes.repeatable {
                    self.set_block_isolation(rr)?;
                }
                if let Some(ro) = modes.read_only {
                    self.read_only = ro;
                }
                Ok(Output::TxnStart("BEGIN".into()))
            }
            Control::Commit | Control::Rollback => {
                if matches!(self.block, Block::Idle | Block::Open { implicit: true, .. }) {
                    notices.push(("WARNING", "there is no transaction in progress".into()));
                }
                // A failed block ends in a rollback whatever the client said.
                let commit = *c == Control::Commit && !matches!(self.block, Block::Failed);
                self.end_block(commit)?;
                Ok(Output::TxnEnd(
                    if commit { "COMMIT" } else { "ROLLBACK" }.into(),
                ))
            }
            // Strata has no subtransactions: refused, never ignored (session rule 6).
            Control::Savepoint { verb } => Err(
                if matches!(
                    self.block,
                    Block::Open {
                        implicit: false,
                        ..
                    }
                ) {
                    SqlError::unsupported(verb)
                } else {
                    SqlError::new(
                        "25P01",
                        format!("{verb} can only be used in transaction blocks"),
                    )
                },
            ),
        }
    }

    /// BEGIN: Idle → Open; in an implicit block, makes it explicit; in an explicit
    /// one, a warning; in a failed one, 25P02.
    fn begin(&mut self, notices: &mut Notices) -> SqlResult<()> {
        match &mut self.block {
            Block::Idle => self.open_block(false),
            // BEGIN in a multi-statement query makes its block explicit.
            Block::Open { implicit, .. } if *implicit => {
                *implicit = false;
                self.pipeline = false;
            }
            Block::Open { .. } => notices.push((
                "WARNING",
                "there is already a transaction in progress".into(),
            )),
            Block::Failed => return Err(aborted()),
        }
        Ok(())
    }

    /// INSERT, in one transaction, into the table in batches of
    /// [`INSERT_BATCH_ROWS`] (session rule 9): VALUES rows evaluated one at a time, a
    /// SELECT without a table (`generate_series`) streamed. A SELECT that reads a
    /// table is collected first: the scan would see the rows this statement inserts
    /// into the same table (Strata's tuples carry no command id).
    /// An INSERT ... SELECT from a table: its rows, read before the insert begins (a
    /// scan must not meet the rows it inserts); None for any other source.
    fn collect_table_source(
        &self,
        source: &BoundSource,
        params: &[Datum],
    ) -> SqlResult<Option<Vec<Vec<Datum>>>> {
        let BoundSource::Query(q, trim) = source else {
            return Ok(None);
        };
        if q.reads.is_empty() {
            return Ok(None); // no table: streamed as it is inserted
        }
        let mut rows = Vec::new();
        self.run_query(q, params, &mut |mut r| {
            trim_padding(&mut r, trim);
            rows.push(r);
            Ok(())
        })?;
        Ok(Some(rows))
    }

    /// UPDATE ... FROM / DELETE ... USING: the FROM rows, read before the write
    /// begins (as an INSERT ... SELECT's), hashed on the WHERE's equalities.
    fn read_from_rows(
        &self,
        from: Option<&DmlFrom>,
        params: &[Datum],
    ) -> SqlResult<Option<FromRows>> {
        let Some(f) = from else { return Ok(None) };
        let mut rows = Vec::new();
        self.run_query(&f.query, params, &mut |r| {
            rows.push(r);
            Ok(())
        })?;
        Ok(Some(FromRows::new(rows, &f.keys)))
    }

    fn insert(
        &mut self,
        bound: BoundInsert,
        b: &mut Binder,
        params: &[Datum],
        sink: &mut dyn ResultSink,
    ) -> SqlResult<Output> {
        let BoundInsert {
            returning,
            checks,
            defaults,
            table,
            map,
            col_types,
            source,
            conflict,
        } = bound;
        if let Some(r) = &returning {
            sink.columns(&r.columns)?;
        }
        let collected = self.collect_table_source(&source, params)?;
        let streamed = match (&source, &collected) {
            (BoundSource::Query(q, trim), None) => Some((self.plan_query(q)?, trim)),
            _ => None,
        };
        let stream = Streamer {
            engine: self.engine,
            server: self.server,
            work_mem: settings::work_mem_bytes(self.vars.get("work_mem")),
            temp_limit: settings::temp_file_limit_kb(self.vars.get("temp_file_limit")),
        };
        let db = self.db.clone();
        let env_of = self.env_parts();
        let n = self.write_checked(|t, check| {
            let env = env_of.writer_env(&db);
            let mut batch: Vec<Vec<Datum>> = Vec::with_capacity(INSERT_BATCH_ROWS);
            let mut n = 0u64;
            let mut upserts = strata_engine::UpsertState::default();
            let mut fk = crate::foreign::Guard::new(t, &db, &table)?;
            let (table, checks, env) = (&table, &checks, &env);
            let upsert = conflict.as_ref().map(|conflict| UpsertCx {
                conflict,
                table,
                col_types: &col_types,
                checks,
                params,
                env,
            });
            let mut emit = |src: Vec<Datum>| -> SqlResult<()> {
                let mut row = table_row(src, &map, &col_types)?;
                fill_defaults(&mut row, &defaults, params, env)?;
                check_row(table, &row, checks, params, env)?;
                if let Some(cx) = &upsert {
                    if let Some(done) = upsert_row(t, &db, cx, row, (&mut upserts, &mut fk))? {
                        n += 1;
                        if let Some(r) = &returning {
                            sink.row(r.row(&done, params, env)?)?;
                        }
                    }
                    return Ok(());
                }
                if let Some(r) = &returning {
                    sink.row(r.row(&row, params, env)?)?;
                }
                fk.inserted(&row)?;
                batch.push(row);
                if batch.len() >= INSERT_BATCH_ROWS {
                    n += t.insert_checked(&db, table, &batch, check)?;
                    batch.clear();
                }
                Ok(())
            };
            match (&source, collected) {
                (_, Some(rows)) => rows.into_iter().try_for_each(&mut emit)?,
                (BoundSource::Values(rows), None) => {
                    for r in rows {
                        emit(eval_row(r, params, env)?)?;
                    }
                }
                (BoundSource::Rows(rows, targets), None) => {
                    let mut width = None;
                    for r in rows.iter() {
                        let r = targets.bind_row(b, &r?, &mut width)?;
                        check_params(b.params.len(), params)?;
                        emit(eval_row(&r, params, env)?)?;
                    }
                }
                (BoundSource::Query(..), None) => {
                    let (plan, trim) = streamed.as_ref().expect("planned above");
                    stream.rows(plan, trim, (&db, params, env), check, &mut emit)?;
                }
            }
            if !batch.is_empty() {
                n += t.insert_checked(&db, table, &batch, check)?;
            }
            crate::foreign::finish(fk, t, &db, check)?;
            Ok(n)
        })?;
        Ok(Output::Command(format!("INSERT 0 {n}")))
    }

    fn delete(
        &mut self,
        bound: BoundDelete,
        params: &[Datum],
        sink: &mut dyn ResultSink,
    ) -> SqlResult<Output> {
        let BoundDelete {
            returning,
            table,
            pred,
            ncols,
            index,
            from,
        } = bound;
        if let Some(r) = &returning {
            sink.columns(&r.columns)?;
        }
        let from = self.read_from_rows(from.as_ref(), params)?;
        let db = self.db.clone();
        let env_of = self.env_parts();
        let mut err: Option<SqlError> = None;
        let n = self.write_checked(|t, check| {
            let env = env_of.writer_env(&db);
            let mut fk = crate::foreign::Guard::new(t, &db, &table)?;
            let mut hit = |vals: &[Datum]| -> SqlResult<bool> {
                debug_assert_eq!(vals.len(), ncols);
                // With USING: the first FROM row the WHERE holds for.
                let row = match &from {
                    None if where_holds(vals, pred.as_ref(), params, &env)? => vals.to_vec(),
                    None => return Ok(false),
                    Some(f) => match first_join(f, vals, pred.as_ref(), params, &env)? {
                        Some(row) => row,
                        None => return Ok(false),
                    },
                };
                if let Some(r) = &returning {
                    sink.row(r.row(&row, params, &env)?)?;
                }
                fk.deleted(vals);
                Ok(true)
            };
            let range = index_range(index.as_ref(), params, &env)?;
            let mut f = |vals: &[Datum]| catching(&mut err, false, || hit(vals));
            let n = t.delete_using(&db, &table, access(&index, &range), &mut f, check)?;
            if let Some(e) = err.take() {
                return Err(e);
            }
            crate::foreign::finish(fk, t, &db, check)?;
            Ok(n)
        })?;
        Ok(Output::Command(format!("DELETE {n}")))
    }

    /// UPDATE: each row the WHERE holds for gets a new version with the SET values,
    /// evaluated over the old row (session rule 9's write path).
    fn update(
        &mut self,
        bound: BoundUpdate,
        params: &[Datum],
        sink: &mut dyn ResultSink,
    ) -> SqlResult<Output> {
        let BoundUpdate {
            returning,
            checks,
            table,
            sets,
            col_types,
            pred,
            index,
            from,
        } = bound;
        if let Some(r) = &returning {
            sink.columns(&r.columns)?;
        }
        let from = self.read_from_rows(from.as_ref(), params)?;
        let db = self.db.clone();
        let env_of = self.env_parts();
        let mut err: Option<SqlError> = None;
        let n = self.write_checked(|t, check| {
            let env = env_of.writer_env(&db);
            let mut fk = crate::foreign::Guard::new(t, &db, &table)?;
            let mut version = |vals: &[Datum]| -> SqlResult<Option<Vec<Datum>>> {
                let up = |cols: &[Datum]| {
                    new_version(cols, &sets, &col_types, pred.as_ref(), params, &env)
                };
                // With FROM: the first FROM row the WHERE holds for (as PostgreSQL,
                // which row when several do is not defined).
                let (row, joined) = match &from {
                    None => match up(vals)? {
                        Some(row) => (row, None),
                        None => return Ok(None),
                    },
                    Some(f) => match f.candidates(vals).into_iter().find_map(|k| {
                        let j = f.joined(vals, k);
                        up(&j).map(|r| r.map(|r| (r, Some(k)))).transpose()
                    }) {
                        Some(found) => found?,
                        None => return Ok(None),
                    },
                };
                check_row(&table, &row, &checks, params, &env)?;
                fk.updated(vals, &row)?;
                if let Some(r) = &returning {
                    let out = match (&from, joined) {
                        (Some(f), Some(k)) => f.joined(&row, k),
                        _ => row.clone(),
                    };
                    sink.row(r.row(&out, params, &env)?)?;
                }
                Ok(Some(row))
            };
            let range = index_range(index.as_ref(), params, &env)?;
            let mut f = |vals: &[Datum]| catching(&mut err, None, || version(vals));
            let n = t.update_using(&db, &table, access(&index, &range), &mut f, check)?;
            if let Some(e) = err.take() {
                return Err(e);
            }
            crate::foreign::finish(fk, t, &db, check)?;
            Ok(n)
        })?;
        Ok(Output::Command(format!("UPDATE {n}")))
    }

    /// COPY FROM STDIN: the client's data read record by record as it arrives
    /// (copy rule 4), each row cast to its columns' types and inserted in batches
    /// of [`INSERT_BATCH_ROWS`] in the statement's transaction.
    fn copy_from(&mut self, c: BoundCopy, sink: &mut dyn ResultSink) -> SqlResult<Output> {
        let mut file = match &c.file {
            Some(path) => Some(self.open_copy_file(path, false)?),
            None => {
                sink.copy_in(c.targets.len(), c.options.csv)?;
                None
            }
        };
        let mut chunk = move |sink: &mut dyn ResultSink| -> SqlResult<Option<Vec<u8>>> {
            match &mut file {
                Some(f) => read_chunk(f),
                None => sink.copy_chunk(),
            }
        };
        let mut reader = crate::copy::Reader::new(c.options.clone());
        let db = self.db.clone();
        let env_of = self.env_parts();
        let n = self.write_checked(|t, check| {
            let env = env_of.writer_env(&db);
            let mut fk = crate::foreign::Guard::new(t, &db, &c.table)?;
            let (mut batch, mut n, mut eof) = (Vec::new(), 0u64, false);
            // Rows of the last batch, reused (no allocation per row).
            let mut spare: Vec<Vec<Datum>> = Vec::new();
            loop {
                while reader.next_record(eof)? {
                    let mut row = spare.pop().unwrap_or_default();
                    copy_row(&c, reader.record(), &mut row)
                        .and_then(|()| {
                            fill_defaults(&mut row, &c.defaults, &[], &env)?;
                            check_row(&c.table, &row, &c.checks, &[], &env)?;
                            fk.inserted(&row)
                        })
                        .map_err(|e| {
                            let at = format!("COPY {}, line {}", c.table, reader.line);
                            e.with_detail(at)
                        })?;
                    batch.push(row);
                    if batch.len() >= INSERT_BATCH_ROWS {
                        n += t.insert_checked(&db, &c.table, &batch, check)?;
                        spare.append(&mut batch);
                    }
                }
                if eof {
                    break;
                }
                check().map_err(SqlError::from)?;
                match chunk(sink)? {
                    Some(chunk) => reader.push_owned(chunk)?,
                    None => eof = true,
                }
            }
            if !batch.is_empty() {
                n += t.insert_checked(&db, &c.table, &batch, check)?;
            }
            crate::foreign::finish(fk, t, &db, check)?;
            Ok(n)
        })?;
        Ok(Output::Command(format!("COPY {n}")))
    }

    /// COPY TO STDOUT: the table's rows as this session sees them, in batches of
    /// about [`COPY_OUT_CHUNK`] bytes.
    fn copy_to(&mut self, c: BoundCopy, sink: &mut dyn ResultSink) -> SqlResult<Output> {
        if let Some(path) = &c.file {
            let mut out = CopyFile(self.open_copy_file(path, true)?, path.clone());
            return self.copy_rows_to(&c, &mut out);
        }
        sink.copy_out(c.targets.len(), c.options.csv)?;
        self.copy_rows_to(&c, sink)
    }

    /// COPY TO's rows (after its header, if asked for) into `sink`'s copy data.
    fn copy_rows_to(&mut self, c: &BoundCopy, sink: &mut dyn ResultSink) -> SqlResult<Output> {
        let (mut batch, mut bytes, mut n) = (Vec::new(), 0, 0u64);
        if c.options.header {
            let names: Vec<Option<String>> = c
                .targets
                .iter()
                .map(|&i| Some(c.cols[i].0.clone()))
                .collect();
            let mut line = Vec::new();
            crate::copy::write_row(&c.options, &names, &mut line);
            batch.push(line);
        }
        self.scan_table(&c.table, Access::Seq, &mut |row| {
            let fields: Vec<Option<String>> = c.targets.iter().map(|&i| row[i].to_text()).collect();
            let mut line = Vec::new();
            crate::copy::write_row(&c.options, &fields, &mut line);
            bytes += line.len();
            batch.push(line);
            n += 1;
            if bytes >= COPY_OUT_CHUNK {
                bytes = 0;
                sink.copy_data(std::mem::take(&mut batch))?;
            }
            Ok(true)
        })?;
        if !batch.is_empty() {
            sink.copy_data(batch)?;
        }
        Ok(Output::Command(format!("COPY {n}")))
    }

    /// Opens COPY's server file: absolute paths only for writing (42602, as
    /// PostgreSQL); a relative one to read is taken from the data directory.
    fn open_copy_file(&self, path: &str, write: bool) -> SqlResult<std::fs::File> {
        let p = std::path::Path::new(path);
        if write && !p.is_absolute() {
            return Err(SqlError::new(
                "42602",
                "relative path not allowed for COPY to file",
            ));
        }
        let full = if p.is_absolute() {
            p.to_path_buf()
        } else {
            self.engine.data_dir().join(p)
        };
        let r = if write {
            std::fs::File::create(&full)
        } else {
            std::fs::File::open(&full)
        };
        r.map_err(|e| {
            let how = if write { "writing" } else { "reading" };
            let code = if e.kind() == std::io::ErrorKind::NotFound {
                "58P01"
            } else {
                "58030"
            };
            SqlError::new(
                code,
                format!("could not open file \"{path}\" for {how}: {}", io_words(&e)),
            )
        })
    }

    /// Whether the running statement must stop: the client has gone or the session is
    /// being terminated, a cancel was asked for, or `statement_timeout` has passed.
    pub(crate) fn interrupted(&self) -> SqlResult<()> {
        flagged(&self.interrupts)?;
        if self.deadline.is_some_and(|d| Instant::now() >= d) {
            return Err(statement_timeout());
        }
        Ok(())
    }

    /// [`Session::interrupted`] as the engine's interrupt check.
    fn engine_check(&self) -> strata_engine::Result<()> {
        self.interrupted()
            .map_err(|e| strata_engine::EngineError::Interrupted {
                code: e.code,
                message: e.into_data().message,
            })
    }

    /// Begins an engine transaction: waits for the writer lock (engine rule 1) until
    /// `lock_timeout` (55P03) or `statement_timeout` (57014) passes, or the statement
    /// is interrupted.
    pub(crate) fn begin_txn(&self) -> SqlResult<Txn<'e>> {
        let engine: &'e Engine = self.engine;
        let lock_ms = self.setting_ms("lock_timeout");
        let lock_deadline = (lock_ms > 0).then(|| Instant::now() + Duration::from_millis(lock_ms));
        let deadline = match (lock_deadline, self.deadline) {
            (Some(l), Some(d)) => Some(l.min(d)),
            (l, d) => l.or(d),
        };
        match engine.try_begin(deadline, &|| self.engine_check())? {
            Some(mut t) => {
                if self.in_block() {
                    self.first_snapshot.set(true);
                }
                if self.repeatable && self.in_block() {
                    // Session rule 11: its writes, too, as of the block's snapshot.
                    t.fix_snapshot(self.statement_snapshot());
                }
                // What it creates is the current role's (ddl rule 1's owner).
                if let Ok(r) = crate::privileges::Catalog::role(&t, self.current_role()) {
                    t.act_as(r.oid);
                }
                Ok(t)
            }
            None if lock_deadline.is_some() && deadline == lock_deadline => Err(SqlError::new(
                "55P03",
                "canceling statement due to lock timeout",
            )),
            None => Err(statement_timeout()),
        }
    }

    /// After a durable commit ending at `lsn`: waits for the synchronous standbys as
    /// `synchronous_commit` says (syncrep rule 1). A cancel or timeout ends the wait
    /// with PostgreSQL's WARNING and the commit stands; termination or a lost client
    /// is then reported as the error it is.
    fn wait_for_standbys(&mut self, lsn: Option<strata_types::Lsn>) -> SqlResult<()> {
        let Some(lsn) = lsn else { return Ok(()) };
        let level = self
            .vars
            .get("synchronous_commit")
            .and_then(|v| crate::syncrep::Level::parse(v))
            .unwrap_or(crate::syncrep::Level::On);
        match self.server.syncrep.wait(lsn, level, &|| self.interrupted()) {
            Ok(()) => Ok(()),
            Err(c) => {
                self.interrupts.cancel.store(false, Ordering::SeqCst);
                self.late_notices.push(("WARNING", format!(
                    "{}\nDETAIL:  The transaction has already committed locally, but might not have been replicated to the standby.",
                    c.message
                )));
                if c.error.fatal {
                    return Err(c.error);
                }
                Ok(())
            }
        }
    }

    /// Runs `f` in the block's transaction (begun now if needed) or, outside a block,
    /// in a transaction of its own, committed on success and aborted on failure.
    pub(crate) fn write<T>(
        &mut self,
        f: impl FnOnce(&mut Txn<'e>) -> SqlResult<T>,
    ) -> SqlResult<T> {
        self.write_checked(|t, _| f(t))
    }

    /// [`Session::write`], with the interrupt check for `f` to pass to the engine.
    pub(crate) fn write_checked<T>(
        &mut self,
        f: impl FnOnce(&mut Txn<'e>, strata_engine::Interrupt<'_>) -> SqlResult<T>,
    ) -> SqlResult<T> {
        if matches!(self.block, Block::Open { txn: None, .. }) {
            let t = self.begin_txn()?;
            if let Block::Open { txn, .. } = &mut self.block {
                *txn = Some(Box::new(t));
            }
        }
        let mut block = std::mem::replace(&mut self.block, Block::Idle);
        let r = match &mut block {
            Block::Open { txn: Some(t), .. } => {
                // SET ROLE in the block since it began: the current role owns.
                if let Ok(r) = crate::privileges::Catalog::role(&**t, self.current_role()) {
                    t.act_as(r.oid);
                }
                f(t, &|| self.engine_check())
            }
            _ => match self.begin_txn() {
                Err(e) => Err(e),
                Ok(mut t) => match f(&mut t, &|| self.engine_check())
                    .and_then(|v| self.temps.before_commit(&mut t, &self.db).map(|()| v))
                {
                    Ok(v) => match t.commit_lsn() {
                        Ok(lsn) => self.wait_for_standbys(lsn).map(|()| v),
                        Err(e) => Err(e.into()),
                    },
                    Err(e) => {
                        let _ = t.abort();
                        Err(e)
                    }
                },
            },
        };
        self.block = block;
        if !self.in_block() {
            self.temps.after_end();
        }
        r
    }

    /// Runs an analyzed query: planned (`planner`), then executed (`executor`) with
    /// one snapshot, giving its result rows to `emit` as they are produced
    /// (session rule 9). Returns how many.
    /// A table's main-fork pages now (the planner's estimates).
    /// A table's main-fork pages now (0 when unknown), as the planner sees them.
    pub(crate) fn planner_pages(&self, t: &str) -> u32 {
        self.relation_pages(t)
    }

    /// The pages of `t` (of `pages`) the visibility map marks all visible: ANALYZE's
    /// relallvisible; 0 when unknown.
    pub(crate) fn planner_all_visible(&self, t: &str, pages: u32) -> u32 {
        let Some(entry) = self.planned_arc(t) else {
            return 0;
        };
        let Some(dbe) = self.engine.database(&self.db) else {
            return 0;
        };
        self.engine
            .all_visible_pages(entry.key(&dbe), pages)
            .unwrap_or(0)
    }

    fn relation_pages(&self, t: &str) -> u32 {
        let Some(entry) = self.planned_arc(t) else {
            return 0;
        };
        let Some(dbe) = self.engine.database(&self.db) else {
            return 0;
        };
        self.engine
            .smgr()
            .nblocks(entry.key(&dbe), ForkNumber::Main)
            .unwrap_or(0)
    }

    /// A relation's entry for the planner's counts, shared, not copied (None: a
    /// system view or no such relation).
    fn planned_arc(&self, t: &str) -> Option<Arc<strata_engine::RelEntry>> {
        self.planned_shared(t).ok().flatten()
    }

    /// A relation's entry for the planner, shared (None: a system view); the
    /// error of a name that is not there.
    fn planned_shared(&self, t: &str) -> SqlResult<Option<Arc<strata_engine::RelEntry>>> {
        if crate::views::schema(t).is_some() {
            return Ok(None);
        }
        self.relation_shared(t).map(Some)
    }

    /// A system view's rows: the server's, or this session's own.
    fn view_rows(&self, name: &str) -> Vec<Vec<Datum>> {
        match name {
            "pg_prepared_statements" => self.prepared_rows(),
            _ => self.server.views.rows(name),
        }
    }

    fn plan_query(&self, q: &Query) -> SqlResult<crate::planner::Plan> {
        crate::planner::plan(q, &PlannerCatalog::new(self))
    }

    /// A statement's plan, its aggregates over large tables made parallel
    /// (parallel rule 1).
    fn plan_statement(&self, q: &Query) -> SqlResult<crate::planner::Plan> {
        let rels = PlannerCatalog::new(self);
        let mut p = crate::planner::plan(q, &rels)?;
        crate::parallel::parallelize(&mut p, &rels);
        Ok(p)
    }

    fn run_query(
        &self,
        q: &Query,
        params: &[Datum],
        emit: &mut dyn FnMut(Vec<Datum>) -> SqlResult<()>,
    ) -> SqlResult<u64> {
        let plan = self.plan_statement(q)?;
        let subs = crate::executor::SubCache::default();
        self.run_plan(&plan, params, &subs, emit)
    }

    /// EXPLAIN's lines; with ANALYZE, after running the query with its operators
    /// counted (instrument rules), its rows thrown away as PostgreSQL's are.
    fn explain(
        &self,
        q: &Query,
        o: crate::explain::Options,
        params: &[Datum],
    ) -> SqlResult<Vec<String>> {
        let began = (std::time::Instant::now(), strata_engine::buffer_usage());
        let plan = self.plan_statement(q)?;
        self.explain_plan(&plan, o, params, began)
    }

    /// EXPLAIN's lines for a plan made since `began` (a time and the buffer
    /// counts then).
    fn explain_plan(
        &self,
        plan: &crate::planner::Plan,
        o: crate::explain::Options,
        params: &[Datum],
        (began, buffers): (std::time::Instant, strata_engine::BufferUsage),
    ) -> SqlResult<Vec<String>> {
        let rels = PlannerCatalog::new(self);
        if !o.analyze {
            return crate::explain::explain(plan, &rels, o, None);
        }
        let planned = began.elapsed();
        let planning_buffers = o
            .buffers
            .then(|| strata_engine::buffer_usage().since(buffers));
        let instr = crate::executor::instrument::Instr::new(o.timing.unwrap_or(true), o.buffers);
        let subs = crate::executor::SubCache::default();
        let ran = std::time::Instant::now();
        instr.run(|| self.run_plan(plan, params, &subs, &mut |_| Ok(())))?;
        let done = crate::explain::Analysis {
            instr: &instr,
            subs: &subs,
            planning: planned,
            execution: ran.elapsed(),
            planning_buffers,
        };
        crate::explain::explain(plan, &rels, o, Some(&done))
    }

    /// Runs a planned query; its subqueries' plans and results kept in `subs`.
    fn run_plan(
        &self,
        plan: &crate::planner::Plan,
        params: &[Datum],
        subs: &crate::executor::SubCache,
        emit: &mut dyn FnMut(Vec<Datum>) -> SqlResult<()>,
    ) -> SqlResult<u64> {
        let parts = self.env_parts();
        let env = parts.env(&self.db);
        let check = || self.interrupted();
        let views = |n: &str| self.view_rows(n);
        let txn = match &self.block {
            Block::Open { txn: Some(t), .. } => Some(&**t),
            _ => None,
        };
        let snap = self.statement_snapshot();
        let rels = PlannerCatalog::new(self);
        let temp = crate::spill::Temp::new(
            self.engine.data_dir(),
            settings::temp_file_limit_kb(self.vars.get("temp_file_limit")),
        );
        let cx = crate::executor::Ctx {
            engine: self.engine,
            txn,
            snap: &snap,
            rels: &rels,
            subs,
            outer: Vec::new(),
            db: &self.db,
            params,
            env: &env,
            check: &check,
            work_mem: settings::work_mem_bytes(self.vars.get("work_mem")),
            temp: &temp,
            views: &views,
            blocks: None,
            builds: None,
        };
        crate::executor::run(plan, &cx, &mut |r| {
            emit(r)?;
            Ok(true)
        })
    }

    /// Streams the rows of `table` as this session sees them into `f` (which may
    /// stop the scan): the block's transaction's view, or the committed one.
    fn scan_table(&self, table: &str, path: Access<'_>, f: &mut RowFn<'_>) -> SqlResult<()> {
        if crate::views::schema(table).is_some() {
            for row in self.server.views.rows(table) {
                if !f(row)? {
                    break;
                }
            }
            return Ok(());
        }
        let check = || self.engine_check();
        let mut failed: Option<SqlError> = None;
        let mut visit = |vals: Vec<Datum>| -> strata_engine::Result<bool> {
            match f(vals) {
                Ok(more) => Ok(more),
                Err(e) => {
                    failed = Some(e);
                    Ok(false)
                }
            }
        };
        let db = &self.db;
        let r = match (&self.block, path) {
            // Session rule 11: the statement's snapshot (a REPEATABLE READ block's).
            (Block::Open { txn: Some(txn), .. }, Access::Seq) => {
                let snap = self.statement_snapshot();
                txn.scan_each_as(&snap, (db, table), &check, &mut visit)
            }
            (Block::Open { txn: Some(txn), .. }, Access::Index { index, range }) => {
                txn.scan_index_each(db, table, index, range, &check, &mut visit)
            }
            // Session rule 11: a REPEATABLE READ block's snapshot (COPY TO in it).
            (_, Access::Seq) => {
                let snap = self.statement_snapshot();
                let e = self.engine;
                e.scan_each_as(&snap, (db, table), &check, &mut visit)
            }
            (_, Access::Index { index, range }) => {
                let snap = self.statement_snapshot();
                let e = self.engine;
                e.scan_index_each_as(&snap, (db, table, index), range, &check, &mut visit)
            }
        };
        match failed {
            Some(e) => Err(e),
            None => Ok(r?),
        }
    }
}

/// A consumer of rows: `Ok(false)` stops the producer.
type RowFn<'a> = dyn FnMut(Vec<Datum>) -> SqlResult<bool> + 'a;

/// What streaming a query's rows inside a write needs from the session.
struct Streamer<'e> {
    engine: &'e Engine,
    server: &'e ServerState,
    work_mem: usize,
    /// temp_file_limit, kB (-1: none).
    temp_limit: i64,
}

impl Streamer<'_> {
    /// The rows of a query that reads no table, each given to `emit` as it is
    /// made (an INSERT ... SELECT streams them: session rule 9).
    fn rows(
        &self,
        plan: &crate::planner::Plan,
        trim: &[usize],
        (db, params, env): (&str, &[Datum], &dyn Env),
        check: strata_engine::Interrupt<'_>,
        emit: &mut dyn FnMut(Vec<Datum>) -> SqlResult<()>,
    ) -> SqlResult<u64> {
        let chk = || check().map_err(SqlError::from);
        let views = |n: &str| self.server.views.rows(n);
        let snap = self.engine.snapshot();
        let subs = crate::executor::SubCache::default();
        let temp = crate::spill::Temp::new(self.engine.data_dir(), self.temp_limit);
        let cx = crate::executor::Ctx {
            engine: self.engine,
            txn: None,
            snap: &snap,
            rels: &|_: &str| Ok(None),
            subs: &subs,
            outer: Vec::new(),
            db,
            params,
            env,
            check: &chk,
            work_mem: self.work_mem,
            temp: &temp,
            views: &views,
            blocks: None,
            builds: None,
        };
        crate::executor::run(plan, &cx, &mut |mut r| {
            trim_padding(&mut r, trim);
            emit(r)?;
            Ok(true)
        })
    }
}

/// The next chunk of a COPY FROM file; None at its end.
fn read_chunk(f: &mut std::fs::File) -> SqlResult<Option<Vec<u8>>> {
    use std::io::Read;
    let mut buf = vec![0u8; 1 << 16];
    let n = f.read(&mut buf).map_err(|e| {
        SqlError::new(
            "58030",
            format!("could not read from COPY file: {}", io_words(&e)),
        )
    })?;
    if n == 0 {
        return Ok(None);
    }
    buf.truncate(n);
    Ok(Some(buf))
}

/// An I/O error as PostgreSQL words it (strerror's text, without Rust's suffix).
fn io_words(e: &std::io::Error) -> String {
    let s = e.to_string();
    match s.find(" (os error") {
        Some(i) => s[..i].to_string(),
        None => s,
    }
}

/// COPY TO a server file: copy data written to the file.
struct CopyFile(std::fs::File, String);

impl ResultSink for CopyFile {
    fn columns(&mut self, _: &[(String, SqlType)]) -> SqlResult<()> {
        Ok(())
    }
    fn row(&mut self, _: Vec<Datum>) -> SqlResult<()> {
        Ok(())
    }
    fn end(&mut self, _: SqlResult<Executed>) {}
    fn copy_data(&mut self, rows: Vec<Vec<u8>>) -> SqlResult<()> {
        use std::io::Write;
        for r in rows {
            self.0.write_all(&r).map_err(|e| {
                SqlError::new(
                    "58030",
                    format!("could not write to file \"{}\": {}", self.1, io_words(&e)),
                )
            })?;
        }
        Ok(())
    }
}

/// char(n) values as text: their trailing spaces removed (the assignment cast).
fn trim_padding(row: &mut [Datum], cols: &[usize]) {
    for c in cols {
        if let Some(Datum::Text(t)) = row.get_mut(*c) {
            let n = t.trim_end_matches(' ').len();
            t.truncate(n);
        }
    }
}

/// A source row as a table row: each column's value (cast to the column's type) or
/// NULL. Each source position feeds one column (42701 at bind), so it is taken.
fn table_row(
    mut src: Vec<Datum>,
    map: &[Option<usize>],
    col_types: &[SqlType],
) -> SqlResult<Vec<Datum>> {
    let mut row = Vec::with_capacity(map.len());
    for (ci, m) in map.iter().enumerate() {
        let d = match m.and_then(|k| src.get_mut(k)) {
            Some(v) => bind::cast_datum(std::mem::replace(v, Datum::Null), col_types[ci])?,
            None => Datum::Null,
        };
        row.push(d);
    }
    Ok(row)
}

/// A column's DEFAULT expression bound: no column references (0A000) or
/// parameters, its type assignable to the column's (42804).
pub(crate) fn bind_default(
    b: &mut Binder,
    col: &strata_engine::Column,
    text: &str,
) -> SqlResult<Expr> {
    let ast = crate::parse_default(text)?;
    let params = b.params.len();
    let (e, t) = b.expr(&Scope::default(), &ast).map_err(|e| {
        if e.code == "42703" {
            SqlError::unsupported("a column reference in a DEFAULT expression")
        } else {
            e
        }
    })?;
    if b.params.len() != params {
        return Err(SqlError::new(
            "42P02",
            "there is no parameter $1 in a DEFAULT expression",
        ));
    }
    assign(b, e, t, SqlType::of_column(col), &col.name)
}

/// The scope a table's CHECK constraints are bound in: its columns.
pub(crate) fn check_scope(table: &str, cols: &[strata_engine::Column]) -> Scope<'static> {
    Scope {
        qualifiers: vec![table.to_string()],
        cols: cols
            .iter()
            .map(|c| (c.name.clone(), SqlType::of_column(c)))
            .collect(),
        excluded: false,
        ..Default::default()
    }
}

/// A CHECK constraint's expression bound: boolean (42804), no parameters.
pub(crate) fn bind_check(b: &mut Binder, scope: &Scope, sql: &str) -> SqlResult<Expr> {
    let ast = crate::parse_default(sql)?;
    let params = b.params.len();
    let (e, t) = b.expr(scope, &ast)?;
    if b.params.len() != params {
        return Err(SqlError::new(
            "42P02",
            "there is no parameter $1 in a CHECK constraint",
        ));
    }
    if t != SqlType::Bool && t != SqlType::Unknown {
        return Err(SqlError::new(
            "42804",
            format!(
                "argument of CHECK constraint must be type boolean, not type {}",
                t.name()
            ),
        ));
    }
    Ok(e)
}

/// 23514 unless every CHECK is true or NULL for the row about to be written.
fn check_row(
    table: &str,
    row: &[Datum],
    checks: &[(String, Expr)],
    params: &[Datum],
    env: &dyn Env,
) -> SqlResult<()> {
    if checks.is_empty() {
        return Ok(());
    }
    let cols: Vec<Datum> = row.to_vec();
    let r = Row {
        cols: &cols,
        params,
        aggs: &[],
        env,
        sub: None,
    };
    for (name, e) in checks {
        if bind::eval(e, &r)? == Datum::Bool(false) {
            return Err(SqlError::new(
                "23514",
                format!("new row for relation \"{table}\" violates check constraint \"{name}\""),
            ));
        }
    }
    Ok(())
}

/// Sets each column with a bound DEFAULT (one not given) to its value.
fn fill_defaults(
    row: &mut [Datum],
    defaults: &[Option<Expr>],
    params: &[Datum],
    env: &dyn Env,
) -> SqlResult<()> {
    let none = Row {
        cols: &[],
        params,
        aggs: &[],
        env,
        sub: None,
    };
    for (v, d) in row.iter_mut().zip(defaults) {
        if let Some(e) = d {
            *v = bind::eval(e, &none)?;
        }
    }
    Ok(())
}

/// One COPY record as a table row: its fields in the columns copied (22P04 for too
/// few or too many), each cast from text to its column's type, the others NULL.
fn copy_row(c: &BoundCopy, rec: &crate::copy::Record, row: &mut Vec<Datum>) -> SqlResult<()> {
    if rec.len() > c.targets.len() {
        return Err(SqlError::new(
            "22P04",
            "extra data after last expected column",
        ));
    }
    if let Some(&missing) = c.targets.get(rec.len()) {
        return Err(SqlError::new(
            "22P04",
            format!("missing data for column \"{}\"", c.cols[missing].0),
        ));
    }
    row.clear();
    row.resize(c.cols.len(), Datum::Null);
    for (k, &i) in c.targets.iter().enumerate() {
        if let Some(text) = rec.get(k) {
            row[i] = bind::text_to(text, c.cols[i].1)?;
        }
    }
    Ok(())
}

/// Runs a fallible per-row step under an engine callback that cannot fail: the
/// first error is kept in `err` (returned once the engine is done) and every row
/// after it gets `miss` (not deleted, not updated).
fn catching<R>(err: &mut Option<SqlError>, miss: R, step: impl FnOnce() -> SqlResult<R>) -> R {
    if err.is_some() {
        return miss;
    }
    step().unwrap_or_else(|e| {
        *err = Some(e);
        miss
    })
}

/// This execution's range of an index path (plan rule 4: `None` reads every page).
fn index_range(
    path: Option<&IndexPath>,
    params: &[Datum],
    env: &dyn Env,
) -> SqlResult<Option<IndexRange>> {
    let Some(p) = path else { return Ok(None) };
    let row = Row {
        cols: &[],
        params,
        aggs: &[],
        env,
        sub: None,
    };
    p.range(&|e| bind::eval(e, &row))
}

/// The engine's access path for a path and its range.
fn access<'a>(path: &'a Option<IndexPath>, range: &'a Option<IndexRange>) -> Access<'a> {
    match (path, range) {
        (Some(p), Some(range)) => Access::Index {
            index: &p.index,
            range,
        },
        _ => Access::Seq,
    }
}

/// A table's columns, per column its SET expression (None: kept), and the WHERE.
type BoundSets = (Vec<(String, SqlType)>, Vec<Option<Expr>>, Option<Expr>);

/// What an INSERT ... ON CONFLICT's rows are resolved with.
struct UpsertCx<'a> {
    conflict: &'a BoundConflict,
    table: &'a str,
    col_types: &'a [SqlType],
    checks: &'a [(String, Expr)],
    params: &'a [Datum],
    env: &'a dyn Env,
}

/// One row of an INSERT ... ON CONFLICT: inserted, or the conflicting row's new
/// version (DO UPDATE's SET over the existing row and `excluded`, its WHERE, the
/// table's CHECKs), or nothing. The row written, if any.
fn upsert_row(
    t: &mut Txn<'_>,
    db: &str,
    cx: &UpsertCx<'_>,
    row: Vec<Datum>,
    (state, fk): (&mut strata_engine::UpsertState, &mut crate::foreign::Guard),
) -> SqlResult<Option<Vec<Datum>>> {
    let proposed: Vec<Datum> = row.to_vec();
    let mut err: Option<SqlError> = None;
    let mut version = |existing: &[Datum]| -> SqlResult<Option<Vec<Datum>>> {
        let Some((sets, pred)) = &cx.conflict.update else {
            return Ok(None);
        };
        let mut cols: Vec<Datum> = existing.to_vec();
        cols.extend(proposed.iter().cloned());
        let new = new_version(&cols, sets, cx.col_types, pred.as_ref(), cx.params, cx.env)?;
        if let Some(new) = &new {
            check_row(cx.table, new, cx.checks, cx.params, cx.env)?;
            fk.updated(existing, new)?;
        }
        Ok(new)
    };
    let mut resolve = |existing: &[Datum]| catching(&mut err, None, || version(existing));
    let arbiters = (
        cx.conflict.arbiters.as_slice(),
        cx.conflict.update.is_some(),
    );
    let done = t.upsert(db, cx.table, row, arbiters, state, &mut resolve)?;
    if let Some(e) = err {
        return Err(e);
    }
    Ok(match done {
        strata_engine::Upsert::Inserted(r) => {
            fk.inserted(&r)?;
            Some(r)
        }
        strata_engine::Upsert::Updated(r) => Some(r),
        strata_engine::Upsert::Skipped => None,
    })
}

/// Whether a WHERE (None: no WHERE) holds for the table row `vals`.
fn where_holds(
    vals: &[Datum],
    pred: Option<&Expr>,
    params: &[Datum],
    env: &dyn Env,
) -> SqlResult<bool> {
    let Some(p) = pred else { return Ok(true) };
    let cols: Vec<Datum> = vals.to_vec();
    let row = Row {
        cols: &cols,
        params,
        aggs: &[],
        env,
        sub: None,
    };
    Ok(bind::is_true(&bind::eval(p, &row)?))
}

/// UPDATE's new version of `cols`, or None when the WHERE does not hold for it.
fn new_version(
    cols: &[Datum],
    sets: &[Option<Expr>],
    col_types: &[SqlType],
    pred: Option<&Expr>,
    params: &[Datum],
    env: &dyn Env,
) -> SqlResult<Option<Vec<Datum>>> {
    let row = Row {
        cols,
        params,
        aggs: &[],
        env,
        sub: None,
    };
    if let Some(p) = pred {
        if !bind::is_true(&bind::eval(p, &row)?) {
            return Ok(None);
        }
    }
    let mut out = Vec::with_capacity(cols.len());
    for (i, set) in sets.iter().enumerate() {
        let d = match set {
            Some(e) => bind::cast_datum(bind::eval(e, &row)?, col_types[i])?,
            None => cols[i].clone(),
        };
        out.push(d);
    }
    Ok(Some(out))
}

/// One bound VALUES row evaluated.
fn eval_row(r: &[Expr], params: &[Datum], env: &dyn Env) -> SqlResult<Vec<Datum>> {
    let row = Row {
        cols: &[],
        params,
        aggs: &[],
        env,
        sub: None,
    };
    r.iter().map(|e| bind::eval(e, &row)).collect()
}

/// The statement's parameters bound so far have values.
fn check_params(needed: usize, params: &[Datum]) -> SqlResult<()> {
    if params.len() < needed {
        return Err(SqlError::new(
            "08P01",
            format!(
                "bind message supplies {} parameters, but prepared statement requires {}",
                params.len(),
                needed
            ),
        ));
    }
    Ok(())
}

/// INSERT without a column list (PostgreSQL's): its values go to the first
/// columns, as many as the source gives (at most all of them: more is 42601 at
/// the width check); the others take their DEFAULT.
fn implicit_width(source: &InsertSource, query: Option<&Query>, ncols: usize) -> SqlResult<usize> {
    let width = match (source, query) {
        (_, Some(q)) => Some(q.columns.len()),
        (InsertSource::Values(rows), _) => rows.first().map(Vec::len),
        (InsertSource::Rows(rows), _) => rows.iter().next().transpose()?.map(|r| r.len()),
        _ => None,
    };
    Ok(width.unwrap_or(ncols).min(ncols))
}

/// Assignment of a value of type `t` to a column of type `col`: untyped values take
/// the column's type; integers of another width are converted (with a range check).
fn assign(b: &mut Binder, e: Expr, t: SqlType, col: SqlType, cname: &str) -> SqlResult<Expr> {
    if t == col || t == SqlType::Unknown {
        return b.coerce(e, t, col);
    }
    // text into char(n) as is (the column pads it), char(n) into text without its
    // padding: PostgreSQL's assignment casts.
    match (t, col) {
        (SqlType::Text, SqlType::Bpchar) => return Ok(e),
        (SqlType::Bpchar, SqlType::Text) => return Ok(bind::bpchar_text(e)),
        _ => {}
    }
    if (t.is_number() && col.is_number()) || (bind::is_datetime(t) && bind::is_datetime(col)) {
        return Ok(Expr::Cast(Box::new(e), col));
    }
    Err(SqlError::new(
        "42804",
        format!(
            "column \"{cname}\" is of type {} but expression is of type {}",
            col.name(),
            t.name()
        ),
    )
    .with_hint("You will need to rewrite or cast the expression."))
}

/// [`Session::bind_sets`] over `scope` (the table's `cols` first).
fn bind_sets_in(
    b: &mut Binder,
    table: &str,
    scope: &Scope,
    cols: Vec<(String, SqlType)>,
    assignments: &[(String, sqlparser::ast::Expr)],
    selection: Option<&sqlparser::ast::Expr>,
) -> SqlResult<BoundSets> {
    let mut sets: Vec<Option<Expr>> = vec![None; cols.len()];
    for (name, value) in assignments {
        let i = cols.iter().position(|(c, _)| c == name).ok_or_else(|| {
            SqlError::new(
                "42703",
                format!("column \"{name}\" of relation \"{table}\" does not exist"),
            )
        })?;
        if sets[i].is_some() {
            return Err(SqlError::syntax(format!(
                "multiple assignments to same column \"{name}\""
            )));
        }
        let (e, t) = b.expr(scope, value)?;
        sets[i] = Some(assign(b, e, t, cols[i].1, name)?);
    }
    let pred = match selection {
        Some(w) => Some(b.condition(scope, w, "WHERE")?),
        None => None,
    };
    Ok((cols, sets, pred))
}

/// RETURNING bound over `scope` (the table's row, then FROM's).
fn bind_returning_in(
    b: &mut Binder,
    scope: &Scope,
    returning: &crate::Returning,
) -> SqlResult<Option<Returning>> {
    let Some(list) = returning else {
        return Ok(None);
    };
    let (exprs, columns) = b.returning(list, scope)?;
    Ok(Some(Returning { columns, exprs }))
}

impl DmlFrom {
    /// The FROM query and the hashable equalities of `pred` between table column
    /// `i` (of `target`'s types) and FROM column `j` of the same type, one whose
    /// equality is its values'.
    fn new(query: Query, pred: Option<&Expr>, target: &[SqlType]) -> DmlFrom {
        let ncols = target.len();
        let mut conjs = Vec::new();
        if let Some(p) = pred {
            crate::planner::split_and(p.clone(), &mut conjs);
        }
        let types = query.columns.iter().map(|(_, t)| *t).collect::<Vec<_>>();
        let hashable = |t: SqlType| {
            matches!(
                t,
                SqlType::Int2
                    | SqlType::Int4
                    | SqlType::Int8
                    | SqlType::Text
                    | SqlType::Date
                    | SqlType::Bool
                    | SqlType::Uuid
                    | SqlType::Timestamp
                    | SqlType::TimestampTz
            )
        };
        let mut keys = Vec::new();
        for c in &conjs {
            let Expr::Bin(l, bind::BinOp::Eq, r) = c else {
                continue;
            };
            let (Expr::Col(a), Expr::Col(b)) = (l.as_ref(), r.as_ref()) else {
                continue;
            };
            let (i, j) = match (*a < ncols, *b < ncols) {
                (true, false) => (*a, *b - ncols),
                (false, true) => (*b, *a - ncols),
                _ => continue,
            };
            if types
                .get(j)
                .is_some_and(|t| hashable(*t) && *t == target[i])
            {
                keys.push((i, j));
            }
        }
        DmlFrom { query, keys }
    }
}

/// The FROM rows of an UPDATE or DELETE, and their hash on the key columns.
struct FromRows {
    rows: Vec<Vec<Datum>>,
    keys: Vec<(usize, usize)>,
    hash: HashMap<Vec<Datum>, Vec<usize>>,
}

impl FromRows {
    fn new(rows: Vec<Vec<Datum>>, keys: &[(usize, usize)]) -> FromRows {
        let mut hash: HashMap<Vec<Datum>, Vec<usize>> = HashMap::new();
        if !keys.is_empty() {
            for (n, r) in rows.iter().enumerate() {
                let k: Vec<Datum> = keys.iter().map(|(_, j)| r[*j].clone()).collect();
                if k.iter().all(|d| !d.is_null()) {
                    hash.entry(k).or_default().push(n);
                }
            }
        }
        FromRows {
            rows,
            keys: keys.to_vec(),
            hash,
        }
    }

    /// The FROM rows that may join table row `vals`: those with its key, or all.
    fn candidates(&self, vals: &[Datum]) -> Vec<usize> {
        if self.keys.is_empty() {
            return (0..self.rows.len()).collect();
        }
        let k: Vec<Datum> = self.keys.iter().map(|(i, _)| vals[*i].clone()).collect();
        self.hash.get(&k).cloned().unwrap_or_default()
    }

    /// Table row `vals` followed by FROM row `n`.
    fn joined(&self, vals: &[Datum], n: usize) -> Vec<Datum> {
        let mut row = Vec::with_capacity(vals.len() + self.rows[n].len());
        row.extend_from_slice(vals);
        row.extend_from_slice(&self.rows[n]);
        row
    }
}

/// DELETE ... USING: table row `vals` joined with the first FROM row `pred` holds
/// for, if any.
fn first_join(
    f: &FromRows,
    vals: &[Datum],
    pred: Option<&Expr>,
    params: &[Datum],
    env: &dyn Env,
) -> SqlResult<Option<Vec<Datum>>> {
    for k in f.candidates(vals) {
        let row = f.joined(vals, k);
        if where_holds(&row, pred, params, env)? {
            return Ok(Some(row));
        }
    }
    Ok(None)
}
