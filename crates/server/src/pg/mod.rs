//! The PostgreSQL wire protocol (with `pgwire`): connections, their backend threads,
//! and the encoding of results.
//!
//! Owns, per connection: a [`Conn`] (created when the socket is accepted), its
//! backend thread (created when the startup message names a database), and the
//! pgwire handlers for the simple and extended query protocols.
//!
//! Invariants:
//! 1. Each session runs on its own OS thread; the async side only forwards requests
//!    and awaits replies, so a statement that waits for the writer lock (engine rule
//!    1) or does disk I/O never blocks another connection.
//! 2. When a connection ends, for whatever reason, its backend aborts any open
//!    transaction and leaves the registry (`Conn`'s `Drop`).
//! 3. A malformed message ends that connection only; a panic anywhere ends the server
//!    (it may hold engine state: pages locked, a change half applied), and the next
//!    start recovers from WAL (engine rule 7).
//! 4. Every error reported on a connection reaches its session, which fails its
//!    transaction block (session invariant 3): the session's own errors directly,
//!    pgwire's (Parse, Bind, protocol) through the error handler
//!    (`Request::Failed`). After an error in the extended protocol, pgwire skips
//!    messages until Sync, as PostgreSQL does.
//! 5. A statement never outlives its client: while a backend works, its connection
//!    peeks at the client's socket every 100 ms, and a closed socket sets the
//!    session's `gone` flag, which stops the statement at its next row, page, or
//!    writer-lock poll (the session then ends and leaves its slot).
//! 7. Sync asks the session to end the pipeline (its implicit block commits) before
//!    ReadyForQuery goes out. Where that has nothing to commit (no engine
//!    transaction: a pipeline of reads), the backend said so before its last reply
//!    (`Conn::sync_idle`), and Sync is sent without awaiting its answer: it cannot
//!    fail, the requests stay in order, and a prepared read costs one round trip
//!    to the backend, not two.
//! 6. BackendKeyData carries the session's id as its pid and a random secret; a
//!    CancelRequest with both sets the session's cancel flag (57014).
//! 8. Results stream (session rule 9): the backend sends each statement's rows in
//!    batches ([`Feed`]) through a queue of [`EVENT_QUEUE_BATCHES`], and the
//!    connection turns them into DataRow messages as they come, in the simple
//!    protocol (`on_query`) and the extended one (Execute with no row limit). A
//!    client that reads slowly fills its socket, then the queue, and the backend
//!    waits: memory per connection is bounded by the queue, whatever the result's
//!    size. An Execute with a row limit (a suspended portal) collects its rows,
//!    because the client may send other messages before fetching the rest and the
//!    backend must be free to answer them. A statement's end (CommandComplete) is
//!    held by the backend until it sends anything else, the request ends or
//!    [`HELD_ENDS`] are held, and then goes in one event: a query of many statements
//!    wakes its connection once, not once per statement (PostgreSQL too buffers
//!    CommandCompletes until its output fills or ReadyForQuery).
//! 9. COPY FROM STDIN: the backend announces it (`Event::CopyIn`) with a bounded
//!    channel for the data; the connection sends CopyInResponse and keeps the
//!    query's events aside (`Conn::copy`) while pgwire hands each CopyData to the
//!    [`CopyHandler`], which forwards it (backpressure: [`COPY_QUEUE_CHUNKS`]).
//!    CopyDone resumes the query's events (simple protocol: the rest of the query
//!    string; extended: the CommandComplete, then Sync); CopyFail fails the COPY
//!    with 57014 and reports that one error. A COPY that failed early stops
//!    listening, and the rest of the data is discarded until CopyDone. COPY TO
//!    STDOUT sends one CopyData per row, as PostgreSQL does.

pub mod auth;
pub mod frames;
pub mod serve;
pub mod walsender;

use async_trait::async_trait;
use bytes::{BufMut, BytesMut};
use futures::sink::Sink;
use futures::SinkExt;
use pgwire::api::copy::CopyHandler;
use pgwire::api::portal::{Format, Portal};
use pgwire::api::query::{ExtendedQueryHandler, SimpleQueryHandler};
use pgwire::api::results::{CopyResponse, FieldFormat, FieldInfo, QueryResponse, Response, Tag};
use pgwire::api::stmt::QueryParser;
use pgwire::api::store::PortalStore;
use pgwire::api::PgWireConnectionState;
use pgwire::api::{ClientInfo, ClientPortalStore, PgWireServerHandlers, Type};
use pgwire::error::{ErrorInfo, PgWireError, PgWireResult};
use pgwire::messages::copy::{CopyData, CopyDone, CopyFail, CopyInResponse, CopyOutResponse};
use pgwire::messages::data::RowDescription;
use pgwire::messages::extendedquery::Sync as PgSync;
use pgwire::messages::response::NoticeResponse;
use pgwire::messages::response::{EmptyQueryResponse, ReadyForQuery};
use pgwire::messages::simplequery::Query as PgQuery;
use pgwire::messages::startup::SecretKey;
use pgwire::messages::PgWireBackendMessage;
use pgwire::types::format::FormatOptions;
use pgwire::types::ToSqlText;
use postgres_types::{IsNull, ToSql};
use std::fmt::Debug;
use std::sync::atomic::{AtomicBool, AtomicU8, AtomicUsize, Ordering};
use std::sync::mpsc;
use std::sync::{Arc, OnceLock};
use std::time::Duration;
use strata_engine::Engine;
use strata_engine::Numeric;
use strata_sql as sql;
use strata_sql::session::{
    Described, Executed, Interrupts, Member, Output, Refused, ResultSink, ServerState, Session,
    Slots,
};
use strata_sql::{Datum, SqlError, SqlResult, SqlType, Stmt};
use tokio::sync::oneshot;

/// A request to a backend thread.
enum Request {
    /// A query string; its results come back as [`Event`]s (invariant 8).
    Simple(String, EventTx),
    /// Parse: the text and the parameter types the client declared (Unknown
    /// where it left one to be inferred).
    Prepare(String, Vec<SqlType>, oneshot::Sender<SqlResult<Prepared>>),
    /// Execute of a portal; its result comes back as [`Event`]s (invariant 8).
    Execute(Arc<Prepared>, Params, EventTx),
    /// Sync: the end of a pipeline (its implicit block commits).
    Sync(oneshot::Sender<SqlResult<()>>),
    /// An error was reported outside the session (pgwire's own, at Bind or Parse):
    /// it fails the session's block all the same (invariant 4).
    Failed,
    /// Abort any transaction and end (the connection closed, or was terminated).
    End,
}

/// What a backend sends back while it runs a query (invariant 8), in order: per
/// statement, `Columns` and `Rows` if it returns rows, then `End`. The channel closes
/// when the request is done.
enum Event {
    /// A statement's columns, and the session's date/time settings its rows'
    /// text follows.
    Columns(Vec<(String, SqlType)>, Arc<sql::datetime::Settings>),
    /// A batch of at most [`FEED_BATCH_ROWS`] rows or about [`FEED_BATCH_BYTES`].
    Rows(Vec<Vec<Datum>>),
    End(SqlResult<Executed>),
    /// Several statements' ends at once (invariant 8: held while nothing else is
    /// sent, as PostgreSQL buffers its CommandCompletes until the output fills).
    Ends(Vec<SqlResult<Executed>>),
    /// COPY FROM STDIN (invariant 9): the client's data goes to `data`.
    CopyIn {
        columns: usize,
        data: tokio::sync::mpsc::Sender<CopyChunk>,
    },
    /// COPY TO STDOUT: CopyData events follow, then the statement's End.
    CopyOut {
        columns: usize,
    },
    /// Rows of COPY TO's data, a CopyData message each.
    CopyData(Vec<Vec<u8>>),
}

/// What the client sends during COPY FROM STDIN.
enum CopyChunk {
    Data(bytes::Bytes),
    Done,
    Fail(String),
}

/// COPY data chunks in flight from a connection to its backend.
const COPY_QUEUE_CHUNKS: usize = 8;
/// A backend takes the queued chunks together up to this many bytes: the
/// connection's task, waiting for room in a full queue, is then woken once per
/// drain rather than once per CopyData message (each wake is a thread switch).
const COPY_DRAIN_BYTES: usize = 1 << 20;

/// A COPY FROM STDIN in progress: the query's events and where its data goes, kept
/// between the Query message and the client's CopyDone or CopyFail.
struct PendingCopy {
    rx: EventRx,
    status: pgwire::messages::response::TransactionStatus,
    data: tokio::sync::mpsc::Sender<CopyChunk>,
    /// Started by an Execute: its end is a CommandComplete, then the client's Sync.
    extended: bool,
}

type EventTx = tokio::sync::mpsc::Sender<Event>;
type EventRx = tokio::sync::mpsc::Receiver<Event>;

/// Batches in flight between a backend and its connection (invariant 8).
const EVENT_QUEUE_BATCHES: usize = 4;
/// Rows per batch, at most.
const FEED_BATCH_ROWS: usize = 256;
/// Estimated bytes per batch, at most (plus one row).
const FEED_BATCH_BYTES: usize = 64 << 10;

/// How often a backend waiting for room in its queue checks its interrupt flags.
const FEED_WAIT_SLICE: Duration = Duration::from_millis(100);

/// The backend's [`ResultSink`]: rows go to the connection in bounded batches, and
/// the backend waits while the queue is full (the client reads slowly) — a wait
/// that cancel, termination and the client's going end.
struct Feed {
    tx: EventTx,
    interrupts: Arc<Interrupts>,
    /// The server's runtime, whose timers bound each wait (None: wait unbounded).
    runtime: Option<tokio::runtime::Handle>,
    batch: Vec<Vec<Datum>>,
    batch_bytes: usize,
    /// COPY FROM STDIN's data, while one runs.
    copy_rx: Option<tokio::sync::mpsc::Receiver<CopyChunk>>,
    /// The data's end (Done or Fail), met while draining chunks: the next call's.
    copy_end: Option<CopyChunk>,
    /// Statements' results not sent yet: they go before the next event, at
    /// [`HELD_ENDS`], or when the feed is dropped (the request's end).
    held: Vec<SqlResult<Executed>>,
    /// The session's date/time settings (`ResultSink::style`).
    style: Arc<sql::datetime::Settings>,
}

/// Statement results a feed holds at most before sending them.
const HELD_ENDS: usize = 64;

/// A COPY's data ended: CopyDone (no more data), CopyFail (57014), or the
/// connection gone (`None`).
fn copy_ended(end: Option<CopyChunk>) -> SqlResult<Option<Vec<u8>>> {
    match end {
        Some(CopyChunk::Data(b)) => Ok(Some(b.to_vec())),
        Some(CopyChunk::Done) => Ok(None),
        Some(CopyChunk::Fail(m)) => Err(SqlError::new(
            "57014",
            format!("COPY from stdin failed: {m}"),
        )),
        None => Err(client_lost()),
    }
}

fn client_lost() -> SqlError {
    SqlError::new("08006", "connection to client lost").fatal()
}

impl Feed {
    fn new(tx: EventTx, cx: &FeedContext) -> Feed {
        Feed {
            tx,
            interrupts: cx.interrupts.clone(),
            runtime: cx.runtime.clone(),
            batch: Vec::new(),
            batch_bytes: 0,
            copy_rx: None,
            copy_end: None,
            held: Vec::new(),
            style: Arc::default(),
        }
    }

    /// Sends the held results. Only termination or the client's going ends this
    /// wait, not a cancel: a result must arrive (it may be the error that stopped
    /// the rows).
    fn release(&mut self) -> SqlResult<()> {
        if self.held.is_empty() {
            return Ok(());
        }
        let mut held = std::mem::take(&mut self.held);
        let ev = if held.len() == 1 {
            Event::End(held.pop().expect("one"))
        } else {
            Event::Ends(held)
        };
        self.send_until(ev, &|i| {
            if i.terminate.load(Ordering::Relaxed) || i.gone.load(Ordering::Relaxed) {
                return Err(client_lost());
            }
            Ok(())
        })
    }

    /// Sends an event, waiting for room until `give_up` says otherwise (checked
    /// every [`FEED_WAIT_SLICE`]); Err when it does, or when the connection has
    /// stopped listening (the client has gone).
    fn send_until(
        &mut self,
        ev: Event,
        give_up: &dyn Fn(&Interrupts) -> SqlResult<()>,
    ) -> SqlResult<()> {
        // Room now (the usual case): no runtime entered, no timer made.
        let ev = match self.tx.try_send(ev) {
            Ok(()) => return Ok(()),
            Err(tokio::sync::mpsc::error::TrySendError::Closed(_)) => return Err(client_lost()),
            Err(tokio::sync::mpsc::error::TrySendError::Full(ev)) => ev,
        };
        let Some(rt) = &self.runtime else {
            return self.tx.blocking_send(ev).map_err(|_| client_lost());
        };
        loop {
            // The timer is made inside block_on, in the runtime's context.
            let tx = &self.tx;
            match rt.block_on(async { tokio::time::timeout(FEED_WAIT_SLICE, tx.reserve()).await }) {
                Ok(Ok(permit)) => {
                    permit.send(ev);
                    return Ok(());
                }
                Ok(Err(_)) => return Err(client_lost()),
                Err(_) => give_up(&self.interrupts)?,
            }
        }
    }

    /// Sends rows or columns: a wait for room ends at any interrupt (cancel,
    /// termination, the client gone), as PostgreSQL's does while it writes.
    fn send(&mut self, ev: Event) -> SqlResult<()> {
        self.release()?;
        self.send_until(ev, &strata_sql::session::flagged)
    }

    fn flush(&mut self) -> SqlResult<()> {
        if self.batch.is_empty() {
            return Ok(());
        }
        self.batch_bytes = 0;
        let rows = std::mem::take(&mut self.batch);
        self.send(Event::Rows(rows))
    }
}

impl ResultSink for Feed {
    fn columns(&mut self, columns: &[(String, SqlType)]) -> SqlResult<()> {
        self.flush()?;
        self.send(Event::Columns(columns.to_vec(), self.style.clone()))
    }
    fn style(&mut self, settings: &Arc<sql::datetime::Settings>) {
        self.style = settings.clone();
    }
    fn row(&mut self, row: Vec<Datum>) -> SqlResult<()> {
        // A value whose text would pass PostgreSQL's 1 GB is refused here, before
        // the connection builds its message (sql's MAX_ALLOC_BYTES).
        for d in &row {
            sql::alloc_request(d.text_bytes() + 4)?;
        }
        self.batch_bytes += sql::sort::row_bytes(&row, &[]);
        self.batch.push(row);
        if self.batch.len() >= FEED_BATCH_ROWS || self.batch_bytes >= FEED_BATCH_BYTES {
            self.flush()?;
        }
        Ok(())
    }
    fn copy_in(&mut self, columns: usize, _csv: bool) -> SqlResult<()> {
        self.flush()?;
        let (data, rx) = tokio::sync::mpsc::channel(COPY_QUEUE_CHUNKS);
        self.copy_rx = Some(rx);
        self.copy_end = None;
        self.send(Event::CopyIn { columns, data })
    }
    fn copy_chunk(&mut self) -> SqlResult<Option<Vec<u8>>> {
        if let Some(end) = self.copy_end.take() {
            return copy_ended(Some(end));
        }
        let Some(rx) = self.copy_rx.as_mut() else {
            return Ok(None);
        };
        // A chunk already queued is taken without a wait (no timer, no park): a
        // client streaming small CopyData messages keeps the queue full.
        let queued = match rx.try_recv() {
            Ok(c) => Some(Some(c)),
            Err(tokio::sync::mpsc::error::TryRecvError::Disconnected) => Some(None),
            Err(tokio::sync::mpsc::error::TryRecvError::Empty) => None,
        };
        let got = match (&self.runtime, queued) {
            (_, Some(got)) => got,
            (None, None) => rx.blocking_recv(),
            (Some(rt), None) => loop {
                let wait =
                    rt.block_on(async { tokio::time::timeout(FEED_WAIT_SLICE, rx.recv()).await });
                match wait {
                    Ok(got) => break got,
                    Err(_) => strata_sql::session::flagged(&self.interrupts)?,
                }
            },
        };
        let mut data = match got {
            Some(CopyChunk::Data(b)) => b.to_vec(),
            other => return copy_ended(other),
        };
        while data.len() < COPY_DRAIN_BYTES {
            match rx.try_recv() {
                Ok(CopyChunk::Data(b)) => data.extend_from_slice(&b),
                Ok(end) => {
                    self.copy_end = Some(end);
                    break;
                }
                Err(_) => break,
            }
        }
        Ok(Some(data))
    }
    fn copy_out(&mut self, columns: usize, _csv: bool) -> SqlResult<()> {
        self.flush()?;
        self.send(Event::CopyOut { columns })
    }
    fn copy_data(&mut self, rows: Vec<Vec<u8>>) -> SqlResult<()> {
        self.send(Event::CopyData(rows))
    }
    fn end(&mut self, result: SqlResult<Executed>) {
        // A COPY that ended early: the rest of the client's data is discarded.
        self.copy_rx = None;
        self.copy_end = None;
        let _ = self.flush();
        self.held.push(result);
        if self.held.len() >= HELD_ENDS {
            let _ = self.release();
        }
    }
}

impl Drop for Feed {
    /// The request is done: what is held goes now.
    fn drop(&mut self) {
        let _ = self.release();
    }
}

/// Bound parameter values as they came in Bind: decoded by the backend, so that a
/// bad value fails the block like any other error.
struct Params {
    values: Vec<Option<bytes::Bytes>>,
    binary: Vec<bool>,
}

/// Why a connection's backend ended on its own.
const ENDED_TERMINATED: u8 = 1;
const ENDED_IDLE_TIMEOUT: u8 = 2;
const ENDED_IDLE_SESSION_TIMEOUT: u8 = 3;
/// A standby's replay drops the session's database (57P04).
const ENDED_DB_DROPPED: u8 = 4;

/// How often a connection waiting for its backend checks that its client is there.
const PEER_CHECK_INTERVAL: Duration = Duration::from_millis(100);

/// A parsed, described statement of the extended protocol.
#[derive(Debug)]
pub struct Prepared {
    stmt: Option<Stmt>,
    described: Described,
    /// Its plans, kept by the session between executions (sql plancache rules).
    plans: sql::session::PlanCache,
}

/// One connection.
pub struct Conn {
    engine: Arc<Engine>,
    server: Arc<ServerState>,
    max_connections: usize,
    tx: OnceLock<mpsc::Sender<Request>>,
    /// Set when the backend ended on its own (`ENDED_*`); 0 while it serves.
    ended: Arc<AtomicU8>,
    /// Set by the backend before each reply: a Sync now would commit nothing
    /// (invariant 7).
    sync_idle: Arc<AtomicBool>,
    interrupts: Arc<Interrupts>,
    /// The session's pid and cancel secret (BackendKeyData), once registered.
    key: OnceLock<(i32, i32)>,
    /// A second handle on the client's socket, to notice a client that has gone
    /// while its statement runs or waits (invariant 5).
    peer: Option<std::net::TcpStream>,
    /// What every connection of the server shares beyond the SQL layer's state.
    shared: Arc<Shared>,
    /// Set when the connection is a WAL sender (walsender rule 3).
    walsender: OnceLock<walsender::Slot>,
    /// A COPY FROM STDIN waiting for the client's data (invariant 9).
    copy: parking_lot::Mutex<Option<PendingCopy>>,
    /// Results of an `Event::Ends` not handed out yet (one request at a time).
    unpacked: parking_lot::Mutex<std::collections::VecDeque<Event>>,
    /// Set when the connection runs over TLS (serve rule 6).
    tls: OnceLock<TlsPeer>,
    /// Set when the startup handler asks for a cleartext password: the frame
    /// checks then expect a PasswordMessage (frames rule 3).
    pub(crate) cleartext: Arc<std::sync::atomic::AtomicBool>,
}

/// What the TLS handshake established about the client (for `pg_hba.conf`).
#[derive(Clone, Debug)]
pub struct TlsPeer {
    /// The CN of the client's certificate, if it sent one (verified: tls rule 3).
    pub common_name: Option<String>,
    pub has_certificate: bool,
    /// The server verifies client certificates (`ssl_ca_file` is set).
    pub verifies_clients: bool,
    /// The certificate the server presented (SCRAM channel binding).
    pub server_cert_pem: Arc<Vec<u8>>,
}

/// Server-wide state of the protocol layer.
pub struct Shared {
    /// The server secret behind mock SCRAM salts (auth invariant 3).
    pub mock_nonce: Arc<[u8]>,
    pub senders: Arc<walsender::WalSenders>,
    /// `pg_hba.conf`, TLS and the other settings a reload changes (reload rule 1).
    pub live: Arc<crate::reload::Live>,
}

impl Drop for Conn {
    fn drop(&mut self) {
        self.interrupts.gone.store(true, Ordering::SeqCst);
        if let Some(tx) = self.tx.get() {
            let _ = tx.send(Request::End);
        }
    }
}

fn error_info(e: &SqlError) -> ErrorInfo {
    let mut info = ErrorInfo::new(
        if e.fatal { "FATAL" } else { "ERROR" }.to_string(),
        e.code.to_string(),
        e.message.clone(),
    );
    info.hint = e.hint.clone();
    info.detail = e.detail.clone();
    info.position = e.position.map(|p| p.to_string());
    info
}

fn user_error(e: SqlError) -> PgWireError {
    PgWireError::UserError(Box::new(error_info(&e)))
}

pub(crate) fn fatal(e: SqlError) -> PgWireError {
    user_error(e.fatal())
}

fn terminated(why: u8) -> SqlError {
    let e = match why {
        ENDED_IDLE_TIMEOUT => SqlError::new(
            "25P03",
            "terminating connection due to idle-in-transaction timeout",
        ),
        ENDED_IDLE_SESSION_TIMEOUT => SqlError::new(
            "57P05",
            "terminating connection due to idle-session timeout",
        ),
        ENDED_DB_DROPPED => SqlError::new(
            "57P04",
            "terminating connection due to conflict with recovery",
        )
        .with_detail("User was connected to a database that must be dropped."),
        _ => SqlError::new(
            "57P01",
            "terminating connection due to administrator command",
        ),
    };
    e.fatal()
}

impl Conn {
    /// Registers the session and starts its backend thread (after authentication:
    /// auth rule 3).
    /// Makes this connection a WAL sender (walsender rule 3) instead of a session.
    fn start_walsender(&self, user: &str, application_name: &str) -> SqlResult<()> {
        let role = self.login_role(user)?;
        if !role.superuser && !role.replication {
            return Err(SqlError::new(
                "42501",
                "must be superuser or replication role to start walsender",
            ));
        }
        let who = walsender::Who {
            user: user.to_string(),
            application_name: application_name.to_string(),
            client_addr: self.peer.as_ref().and_then(|p| p.peer_addr().ok()),
        };
        let slot = self.shared.senders.take(role.superuser, who)?;
        let id = walsender::pid_of(slot.id);
        let _ = self.key.set((id, rand::random()));
        let _ = self.walsender.set(slot);
        Ok(())
    }

    /// The WAL sender's context, if this connection is one.
    pub(crate) fn walsender_context(&self) -> Option<walsender::Context> {
        let slot = self.walsender.get()?;
        Some(walsender::Context {
            engine: self.engine.clone(),
            senders: self.shared.senders.clone(),
            slot: slot.id,
            settings: self
                .server
                .settings
                .iter()
                .map(|(n, v, _)| (n.clone(), v.clone()))
                .collect(),
            timeout: self.shared.live.wal_sender_timeout(),
            log: self.server.log.clone(),
            syncrep: self.server.syncrep.clone(),
        })
    }

    /// What the registry keeps of this session: how to end it (the reason, 57P01 or
    /// 57P04, read from its interrupt flags), its flags and its cancel secret.
    /// The role a connection logs in as: it must exist and may log in (PostgreSQL's
    /// FATAL 28000 otherwise).
    fn login_role(&self, user: &str) -> SqlResult<Arc<strata_engine::RoleEntry>> {
        let role = self
            .engine
            .role(user)
            .ok_or_else(|| SqlError::new("28000", format!("role \"{user}\" does not exist")))?;
        if !role.login {
            return Err(SqlError::new(
                "28000",
                format!("role \"{user}\" is not permitted to log in"),
            ));
        }
        Ok(role)
    }

    /// CONNECT on the database (PostgreSQL's FATAL 42501 and its DETAIL).
    fn may_connect(&self, db: &str, role: &strata_engine::RoleEntry) -> SqlResult<()> {
        let Some(d) = self.engine.database(db) else {
            return Ok(()); // the registry says 3D000
        };
        let w = sql::privileges::who(&*self.engine, role, d.owner);
        sql::privileges::require_database(&w, &d, strata_engine::acl::Priv::CONNECT)
            .map_err(|e| e.with_detail("User does not have CONNECT privilege."))
    }

    fn member(&self, term_tx: mpsc::Sender<Request>, secret: i32, role: &str) -> Member {
        let ended = self.ended.clone();
        let term_interrupts = self.interrupts.clone();
        Member {
            terminate: Box::new(move || {
                let why = if term_interrupts.db_dropped.load(Ordering::SeqCst) {
                    ENDED_DB_DROPPED
                } else {
                    ENDED_TERMINATED
                };
                let _ = ended.compare_exchange(0, why, Ordering::SeqCst, Ordering::SeqCst);
                term_interrupts.terminate.store(true, Ordering::SeqCst);
                let _ = term_tx.send(Request::End);
            }),
            interrupts: self.interrupts.clone(),
            secret: secret.to_be_bytes().to_vec(),
            role: role.to_string(),
        }
    }

    fn start_session(&self, db: &str, user: &str, params: &[(String, String)]) -> SqlResult<()> {
        if self.engine.in_recovery() && !self.engine.consistent() {
            // Standby rule 2: no session before the standby is consistent.
            return Err(SqlError::new(
                "57P03",
                "the database system is not yet accepting connections",
            )
            .with_detail("Consistent recovery state has not been yet reached."));
        }
        let role = self.login_role(user)?;
        self.may_connect(db, &role)?;
        let server_names: Vec<&str> = self
            .server
            .settings
            .iter()
            .map(|(n, _, _)| n.as_str())
            .collect();
        let startup = sql::settings::check_startup(params, &server_names, role.superuser)?;
        let (tx, rx) = mpsc::channel::<Request>();
        let secret: i32 = rand::random();
        let member = self.member(tx.clone(), secret, user);
        let id = self
            .server
            .registry
            .register(
                &self.engine,
                db,
                Slots {
                    max: self.max_connections,
                    reserved: self.server.reserved_connections,
                    superuser: role.superuser,
                    role_limit: role.connlimit,
                },
                member,
            )
            .map_err(|r| match r {
                Refused::TooMany => SqlError::new("53300", "sorry, too many clients already"),
                Refused::Reserved => SqlError::new(
                    "53300",
                    "remaining connection slots are reserved for non-replication superuser connections",
                ),
                Refused::NoDatabase => {
                    SqlError::new("3D000", format!("database \"{db}\" does not exist"))
                }
                Refused::NotAccepting => SqlError::new(
                    "55000",
                    format!("database \"{db}\" is not currently accepting connections"),
                ),
                Refused::RoleLimit => SqlError::new(
                    "53300",
                    format!("too many connections for role \"{user}\""),
                ),
            })?;
        let _ = self
            .key
            .set((i32::try_from(id).unwrap_or(i32::MAX), secret));
        let engine = self.engine.clone();
        let server = self.server.clone();
        let interrupts = self.interrupts.clone();
        let feed = self.feed_context();
        let ended = self.ended.clone();
        let db = db.to_string();
        let user = user.to_string();
        let spawned = std::thread::Builder::new()
            .name(format!("backend {id}"))
            .stack_size(sql::BACKEND_STACK_BYTES)
            .spawn(move || {
                // Leaves the registry however the thread ends, panics included.
                struct Leave(Arc<ServerState>, u64);
                impl Drop for Leave {
                    fn drop(&mut self) {
                        self.0.registry.unregister(self.1);
                    }
                }
                let _leave = Leave(server.clone(), id);
                let mut s = Session::new(&engine, &server, &db, &user, id, interrupts);
                s.startup_settings(startup);
                let why = match backend_loop(&mut s, rx, &feed) {
                    Ended::Asked => 0,
                    Ended::IdleInTransaction => ENDED_IDLE_TIMEOUT,
                    Ended::IdleSession => ENDED_IDLE_SESSION_TIMEOUT,
                };
                if why != 0 {
                    let _ = ended.compare_exchange(0, why, Ordering::SeqCst, Ordering::SeqCst);
                }
                s.close();
            });
        if let Err(e) = spawned {
            self.server.registry.unregister(id);
            return Err(SqlError::new(
                "53000",
                format!("could not start a backend: {e}"),
            ));
        }
        let _ = self.tx.set(tx);
        Ok(())
    }

    /// What the backend's [`Feed`]s need of this connection.
    fn feed_context(&self) -> FeedContext {
        FeedContext {
            interrupts: self.interrupts.clone(),
            runtime: tokio::runtime::Handle::try_current().ok(),
            sync_idle: self.sync_idle.clone(),
        }
    }

    /// The pid and secret of BackendKeyData (zeros before startup).
    fn key(&self) -> (i32, SecretKey) {
        let (pid, secret) = self.key.get().copied().unwrap_or((0, 0));
        (pid, SecretKey::I32(secret))
    }

    /// Records the TLS handshake's result (serve rule 6).
    pub(crate) fn set_tls(&self, peer: TlsPeer) {
        let _ = self.tls.set(peer);
    }

    /// The TLS handshake's result, if the connection runs over TLS.
    pub(crate) fn tls_peer(&self) -> Option<&TlsPeer> {
        self.tls.get()
    }

    /// Whether the client has closed its end (or sent Terminate while a statement
    /// runs): a peek at the socket, without consuming anything. Over TLS the bytes
    /// are encrypted, so only the end of the client's stream counts (poll's
    /// POLLRDHUP, which pending bytes such as a TLS close_notify do not hide).
    fn peer_gone(&self) -> bool {
        let Some(p) = &self.peer else {
            return false;
        };
        if self.tls.get().is_some() {
            use rustix::event::{poll, PollFd, PollFlags};
            let mut fds = [PollFd::new(p, PollFlags::RDHUP)];
            let zero = rustix::event::Timespec {
                tv_sec: 0,
                tv_nsec: 0,
            };
            return match poll(&mut fds, Some(&zero)) {
                Ok(n) => {
                    n > 0
                        && fds[0]
                            .revents()
                            .intersects(PollFlags::RDHUP | PollFlags::HUP | PollFlags::ERR)
                }
                Err(_) => false,
            };
        }
        let mut buf = [0u8; 5];
        match p.peek(&mut buf) {
            Ok(0) => true,
            Ok(n) => n == 5 && buf == [b'X', 0, 0, 0, 4],
            Err(e) => !matches!(
                e.kind(),
                std::io::ErrorKind::WouldBlock | std::io::ErrorKind::Interrupted
            ),
        }
    }

    /// Sends a request without awaiting its answer (invariant 7).
    fn tell<T>(&self, make: impl FnOnce(oneshot::Sender<T>) -> Request) -> SqlResult<()> {
        let ended = || self.ended.load(Ordering::SeqCst);
        match self.tx.get() {
            Some(tx) if ended() == 0 => {
                let (rtx, _) = oneshot::channel();
                tx.send(make(rtx)).map_err(|_| terminated(ended()))
            }
            Some(_) => Err(terminated(ended())),
            None => Err(SqlError::new("08P01", "no session (startup not complete)")),
        }
    }

    /// Tells the backend that a statement failed outside it (invariant 4).
    fn note_failure(&self) {
        if let Some(tx) = self.tx.get() {
            let _ = tx.send(Request::Failed);
        }
    }

    /// Sends a request whose results come back as [`Event`]s (invariant 8).
    fn start(&self, make: impl FnOnce(EventTx) -> Request) -> SqlResult<EventRx> {
        let ended = || self.ended.load(Ordering::SeqCst);
        if ended() != 0 {
            return Err(terminated(ended()));
        }
        let Some(tx) = self.tx.get() else {
            return Err(SqlError::new("08P01", "no session (startup not complete)"));
        };
        let (etx, erx) = tokio::sync::mpsc::channel(EVENT_QUEUE_BATCHES);
        if tx.send(make(etx)).is_err() {
            return Err(terminated(ended()));
        }
        Ok(erx)
    }

    /// The next event of a running request (`None`: the request is done), checking
    /// while it waits that the client is still there (invariant 5).
    async fn next_event(&self, rx: &mut EventRx) -> Option<Event> {
        if let Some(ev) = self.unpacked.lock().pop_front() {
            return Some(ev);
        }
        loop {
            tokio::select! {
                ev = rx.recv() => return match ev {
                    // Held results arrive together; they are handed out one by one.
                    Some(Event::Ends(v)) => {
                        let mut q = self.unpacked.lock();
                        q.extend(v.into_iter().map(Event::End));
                        q.pop_front()
                    }
                    ev => ev,
                },
                () = tokio::time::sleep(PEER_CHECK_INTERVAL) => {
                    if self.peer_gone() {
                        self.interrupts.gone.store(true, Ordering::SeqCst);
                    }
                }
            }
        }
    }

    /// The error of a request whose backend stopped before its end.
    fn lost(&self) -> SqlError {
        match self.ended.load(Ordering::SeqCst) {
            0 => SqlError::new("XX000", "the backend of this connection failed").fatal(),
            why => terminated(why),
        }
    }

    /// Sends a request to the backend and awaits its reply.
    async fn ask<T>(&self, make: impl FnOnce(oneshot::Sender<T>) -> Request) -> SqlResult<T> {
        let ended = || self.ended.load(Ordering::SeqCst);
        if ended() != 0 {
            return Err(terminated(ended()));
        }
        let Some(tx) = self.tx.get() else {
            return Err(SqlError::new("08P01", "no session (startup not complete)"));
        };
        let (rtx, mut rrx) = oneshot::channel();
        if tx.send(make(rtx)).is_err() {
            return Err(terminated(ended()));
        }
        let reply = loop {
            tokio::select! {
                r = &mut rrx => break r,
                () = tokio::time::sleep(PEER_CHECK_INTERVAL) => {
                    if self.peer_gone() {
                        self.interrupts.gone.store(true, Ordering::SeqCst);
                    }
                }
            }
        };
        match reply {
            Ok(v) => Ok(v),
            Err(_) if ended() != 0 => Err(terminated(ended())),
            Err(_) => Err(SqlError::new("XX000", "the backend of this connection failed").fatal()),
        }
    }
}

/// How a backend loop ended.
#[derive(PartialEq, Eq)]
enum Ended {
    Asked,
    IdleInTransaction,
    IdleSession,
}

/// How long a backend spins for its next request before it blocks, when other
/// backends are busy too.
const NEXT_REQUEST_SPIN: Duration = Duration::from_micros(50);
/// ... and when it is the only busy backend.
const NEXT_REQUEST_SPIN_ALONE: Duration = Duration::from_micros(200);

/// The next request, waiting at most `idle_in_transaction_session_timeout` in a
/// block and `idle_session_timeout` outside one (0: forever).
fn next_request(s: &Session<'_>, rx: &mpsc::Receiver<Request>) -> Result<Request, Ended> {
    let (idle_ms, why) = if s.in_block() {
        (
            s.setting_ms("idle_in_transaction_session_timeout"),
            Ended::IdleInTransaction,
        )
    } else {
        (s.setting_ms("idle_session_timeout"), Ended::IdleSession)
    };
    // A client's next message usually follows within microseconds (a pipeline's
    // Sync after its Execute, the next statement of a transaction): a short spin
    // picks it up without the sleep and wake-up of a blocking receive.
    // A backend alone on the CPUs spins longer: nothing waits for the core it
    // holds (the client and the protocol thread have the others), and a prepared
    // statement's Bind/Execute/Sync hops through the protocol thread twice.
    let alone = BUSY.load(Ordering::Relaxed) <= 1;
    let limit = match alone {
        true => NEXT_REQUEST_SPIN_ALONE,
        false => NEXT_REQUEST_SPIN,
    };
    let spin = std::time::Instant::now();
    while spin.elapsed() < limit {
        match rx.try_recv() {
            Ok(r) => return Ok(r),
            Err(mpsc::TryRecvError::Disconnected) => return Err(Ended::Asked),
            Err(mpsc::TryRecvError::Empty) => std::hint::spin_loop(),
        }
    }
    let _idle = Idle::enter();
    if idle_ms == 0 {
        return rx.recv().map_err(|_| Ended::Asked);
    }
    match rx.recv_timeout(Duration::from_millis(idle_ms)) {
        Ok(r) => Ok(r),
        Err(mpsc::RecvTimeoutError::Timeout) => Err(why),
        Err(mpsc::RecvTimeoutError::Disconnected) => Err(Ended::Asked),
    }
}

/// Backends running or spinning (not blocked waiting for a request): whether a
/// spinning backend holds a core another backend needs.
static BUSY: AtomicUsize = AtomicUsize::new(0);

/// A backend blocked for its next request, not counted in [`BUSY`] while it lives.
struct Idle;

impl Idle {
    fn enter() -> Idle {
        BUSY.fetch_sub(1, Ordering::Relaxed);
        Idle
    }
}

impl Drop for Idle {
    fn drop(&mut self) {
        BUSY.fetch_add(1, Ordering::Relaxed);
    }
}

/// A backend thread's share of [`BUSY`], from its start to its end.
struct Busy;

impl Busy {
    fn enter() -> Busy {
        BUSY.fetch_add(1, Ordering::Relaxed);
        Busy
    }
}

impl Drop for Busy {
    fn drop(&mut self) {
        BUSY.fetch_sub(1, Ordering::Relaxed);
    }
}

/// What a backend's [`Feed`]s need: its interrupt flags and the server's runtime.
struct FeedContext {
    interrupts: Arc<Interrupts>,
    runtime: Option<tokio::runtime::Handle>,
    /// [`Conn::sync_idle`], kept by the backend.
    sync_idle: Arc<AtomicBool>,
}

fn backend_loop(s: &mut Session<'_>, rx: mpsc::Receiver<Request>, feed: &FeedContext) -> Ended {
    let _busy = Busy::enter();
    let idle = |s: &Session<'_>| {
        feed.sync_idle
            .store(s.sync_commits_nothing(), Ordering::SeqCst)
    };
    loop {
        let req = match next_request(s, &rx) {
            Ok(r) => r,
            Err(e) => return e,
        };
        match req {
            Request::Simple(sql, tx) => {
                let mut out = Feed::new(tx, feed);
                s.run_simple(sql, &mut out);
                idle(s);
                drop(out);
            }
            Request::Prepare(sql, declared, reply) => {
                let r = prepare(s, sql, &declared);
                idle(s);
                let _ = reply.send(r);
            }
            Request::Execute(p, params, tx) => {
                let mut feed = Feed::new(tx, feed);
                let r = match &p.stmt {
                    Some(st) => match decode_params(&p, &params) {
                        Ok(values) => s.execute_extended(st, Some(&p.plans), &values, &mut feed),
                        Err(e) => {
                            s.fail();
                            Err(e)
                        }
                    },
                    None => Ok(Executed {
                        output: Output::Command(String::new()),
                        notices: vec![],
                    }),
                };
                idle(s);
                feed.end(r);
            }
            Request::Sync(reply) => {
                let _ = reply.send(s.sync());
            }
            Request::Failed => s.fail(),
            Request::End => return Ended::Asked,
        }
    }
}

/// Parse: one statement, described; any error fails the session's block. The
/// text is pgwire's copied once (sql rule 5).
fn prepare(s: &mut Session<'_>, sql: String, declared: &[SqlType]) -> SqlResult<Prepared> {
    let mut v = match sql::parse_shared(Arc::new(sql)) {
        Ok(v) => v,
        Err(e) => {
            s.fail();
            return Err(e);
        }
    };
    match v.len() {
        0 => Ok(Prepared {
            stmt: None,
            described: Described {
                params: vec![],
                columns: vec![],
            },
            plans: Default::default(),
        }),
        1 => {
            let st = v.remove(0);
            let described = s.prepare_typed(&st, declared)?;
            Ok(Prepared {
                stmt: Some(st),
                plans: sql::session::PlanCache::new(&described),
                described,
            })
        }
        _ => {
            s.fail();
            Err(SqlError::syntax(
                "cannot insert multiple commands into a prepared statement",
            ))
        }
    }
}

fn decode_params(p: &Prepared, params: &Params) -> SqlResult<Vec<Datum>> {
    let mut out = Vec::with_capacity(params.values.len());
    for (i, b) in params.values.iter().enumerate() {
        let t = p.described.params.get(i).copied().unwrap_or(SqlType::Text);
        let binary = params.binary.get(i).copied().unwrap_or(false);
        out.push(decode_param(b.as_deref(), binary, t)?);
    }
    Ok(out)
}

// ---- encoding ----

fn pg_type(t: SqlType) -> Type {
    match t {
        SqlType::Int2 => Type::INT2,
        SqlType::Int4 => Type::INT4,
        SqlType::Int8 => Type::INT8,
        SqlType::Text | SqlType::Unknown => Type::TEXT,
        SqlType::Bpchar => Type::BPCHAR,
        SqlType::Bool => Type::BOOL,
        SqlType::Lsn => Type::PG_LSN,
        SqlType::Numeric => Type::NUMERIC,
        SqlType::Timestamp => Type::TIMESTAMP,
        SqlType::TimestampTz => Type::TIMESTAMPTZ,
        SqlType::Date => Type::DATE,
        SqlType::Uuid => Type::UUID,
        SqlType::Bytea => Type::BYTEA,
        SqlType::Float4 => Type::FLOAT4,
        SqlType::Float8 => Type::FLOAT8,
        SqlType::Time => Type::TIME,
        SqlType::Interval => Type::INTERVAL,
    }
}

/// A value on the wire, in text or binary format.
#[derive(Debug)]
struct Wire<'a>(&'a Datum, &'a sql::datetime::Settings);

impl ToSql for Wire<'_> {
    fn to_sql(
        &self,
        _ty: &Type,
        out: &mut BytesMut,
    ) -> Result<IsNull, Box<dyn std::error::Error + Sync + Send>> {
        match self.0 {
            Datum::Null => return Ok(IsNull::Yes),
            Datum::Int2(v) => out.put_i16(*v),
            Datum::Int4(v) => out.put_i32(*v),
            Datum::Int8(v) => out.put_i64(*v),
            Datum::Text(s) => out.put_slice(s.as_bytes()),
            Datum::Bool(b) => out.put_u8(u8::from(*b)),
            Datum::Lsn(l) => out.put_u64(l.0),
            Datum::Numeric(n) => encode_numeric(n, out),
            Datum::Float4(f) => out.put_f32(f.get() as f32),
            Datum::Float8(f) => out.put_f64(f.get()),
            // PostgreSQL's binary time: microseconds; interval: microseconds,
            // days, months.
            Datum::Time(t) => out.put_i64(*t),
            Datum::Interval(i) => {
                out.put_i64(i.micros);
                out.put_i32(i.days);
                out.put_i32(i.months);
            }
            // PostgreSQL's binary timestamps: microseconds since 2000-01-01.
            Datum::Timestamp(t) | Datum::TimestampTz(t) => out.put_i64(*t),
            Datum::Date(d) => out.put_i32(*d),
            Datum::Uuid(u) => out.put_slice(u),
            Datum::Bytea(b) => out.put_slice(b),
        }
        Ok(IsNull::No)
    }

    fn accepts(_ty: &Type) -> bool {
        true
    }

    postgres_types::to_sql_checked!();
}

impl ToSqlText for Wire<'_> {
    fn to_sql_text(
        &self,
        _ty: &Type,
        out: &mut BytesMut,
        _opts: &FormatOptions,
    ) -> Result<IsNull, Box<dyn std::error::Error + Sync + Send>> {
        // Text and bytea straight into the message (no copy of the value first).
        match self.0 {
            Datum::Text(s) => out.put_slice(s.as_bytes()),
            Datum::Bytea(b) => {
                out.reserve(2 + 2 * b.len());
                out.put_slice(b"\\x");
                const HEX: &[u8; 16] = b"0123456789abcdef";
                for x in b {
                    out.put_u8(HEX[usize::from(x >> 4)]);
                    out.put_u8(HEX[usize::from(x & 15)]);
                }
            }
            d => match strata_sql::TextOut::to_text_in(d, self.1) {
                None => return Ok(IsNull::Yes),
                Some(s) => out.put_slice(s.as_bytes()),
            },
        }
        Ok(IsNull::No)
    }
}

/// PostgreSQL's binary numeric: digit count, weight, sign (0x4000 negative,
/// 0xC000 NaN, 0xD000 Infinity, 0xF000 -Infinity), display scale, then base-10000
/// digits (the first of weight `weight`, each next one lower).
fn encode_numeric(n: &Numeric, out: &mut BytesMut) {
    let special = if n.is_nan() {
        Some(0xC000)
    } else if n.is_infinite() {
        Some(if n.signum() > 0 { 0xD000 } else { 0xF000 })
    } else {
        None
    };
    if let Some(sign) = special {
        out.put_i16(0);
        out.put_i16(0);
        out.put_u16(sign);
        out.put_i16(0);
        return;
    }
    let scale = n.scale() as usize;
    let text = n.abs().to_string();
    let (int, frac) = text.split_once('.').unwrap_or((&text, ""));
    let int = int.trim_start_matches('0');
    let int = format!("{int:0>width$}", width = int.len().div_ceil(4) * 4);
    let frac = format!("{frac:0<width$}", width = frac.len().div_ceil(4) * 4);
    let group = |s: &str| -> Vec<i16> {
        s.as_bytes()
            .chunks(4)
            .map(|c| std::str::from_utf8(c).unwrap_or("0").parse().unwrap_or(0))
            .collect()
    };
    let mut digits = group(&int);
    let mut weight = digits.len() as i16 - 1;
    digits.extend(group(&frac));
    while digits.first() == Some(&0) {
        digits.remove(0);
        weight -= 1;
    }
    while digits.last() == Some(&0) {
        digits.pop();
    }
    out.put_i16(digits.len() as i16);
    out.put_i16(if digits.is_empty() { 0 } else { weight });
    out.put_u16(if n.signum() < 0 { 0x4000 } else { 0 });
    out.put_i16(scale as i16);
    for d in digits {
        out.put_i16(d);
    }
}

fn decode_numeric(b: &[u8]) -> Option<Numeric> {
    let rd = |i: usize| -> Option<i16> { Some(i16::from_be_bytes([*b.get(i)?, *b.get(i + 1)?])) };
    let n = rd(0)? as usize;
    let weight = i32::from(rd(2)?);
    let sign = rd(4)? as u16;
    let dscale = u32::try_from(rd(6)?).ok()?;
    match sign {
        0xC000 => return Some(Numeric::NAN),
        0xD000 => return Some(Numeric::INFINITY),
        0xF000 => return Some(Numeric::NEG_INFINITY),
        0 | 0x4000 => {}
        _ => return None,
    }
    let mut text = String::new();
    for k in 0..n {
        let d = rd(8 + 2 * k)?;
        if !(0..10_000).contains(&d) {
            return None;
        }
        text.push_str(&format!("{d:04}"));
    }
    // The point sits after weight + 1 groups.
    let point = (weight + 1) * 4;
    let text = if point <= 0 {
        format!("0.{}{text}", "0".repeat((-point) as usize))
    } else if point as usize >= text.len() {
        format!("{text}{}", "0".repeat(point as usize - text.len()))
    } else {
        format!("{}.{}", &text[..point as usize], &text[point as usize..])
    };
    let v = Numeric::parse(if text.is_empty() { "0" } else { &text }).ok()?;
    if v.min_scale() > dscale {
        return None;
    }
    let v = v.with_scale(dscale);
    Some(if sign == 0x4000 { v.neg() } else { v })
}

/// The format of result column `i` (pgwire's `format_for` indexes without a check).
fn format_at(format: &Format, i: usize) -> FieldFormat {
    match format {
        Format::Individual(v) => FieldFormat::from(v.get(i).copied().unwrap_or(0)),
        f => f.format_for(i),
    }
}

/// PostgreSQL's rule: no result format (all text), one for all columns, or one per
/// column; anything else is 08P01.
fn check_result_formats(format: &Format, columns: usize) -> PgWireResult<()> {
    match format {
        Format::Individual(v) if v.len() != columns => Err(user_error(SqlError::new(
            "08P01",
            format!(
                "bind message has {} result formats but query has {columns} columns",
                v.len()
            ),
        ))),
        _ => Ok(()),
    }
}

fn fields(cols: &[(String, SqlType)], format: &Format) -> Vec<FieldInfo> {
    cols.iter()
        .enumerate()
        .map(|(i, (n, t))| FieldInfo::new(n.clone(), None, None, pg_type(*t), format_at(format, i)))
        .collect()
}

/// Rows kept for a portal that may be suspended (invariant 8).
fn rows_response(
    schema: &Arc<Vec<FieldInfo>>,
    style: &sql::datetime::Settings,
    rows: Vec<Vec<Datum>>,
) -> Response {
    let mut enc = pgwire::api::results::DataRowEncoder::new(schema.clone());
    let mut out = Vec::with_capacity(rows.len());
    for r in &rows {
        let mut ok = Ok(());
        for d in r {
            if let Err(e) = enc.encode_field(&Wire(d, style)) {
                ok = Err(e);
                break;
            }
        }
        out.push(ok.map(|()| enc.take_row()));
    }
    Response::Query(QueryResponse::new(
        schema.clone(),
        futures::stream::iter(out),
    ))
}

/// The response of a statement that returned no rows.
fn response(ex: Executed) -> Response {
    match ex.output {
        Output::Rows(n) => Response::Execution(Tag::new("SELECT").with_rows(n as usize)),
        Output::Command(tag) if tag.is_empty() => Response::EmptyQuery,
        Output::Command(tag) => Response::Execution(Tag::new(&tag)),
        Output::TxnStart(tag) => Response::TransactionStart(Tag::new(&tag)),
        Output::TxnEnd(tag) => Response::TransactionEnd(Tag::new(&tag)),
    }
}

async fn send_notices<C>(client: &mut C, notices: &[(&'static str, String)]) -> PgWireResult<()>
where
    C: Sink<PgWireBackendMessage> + Unpin + Send,
    PgWireError: From<<C as Sink<PgWireBackendMessage>>::Error>,
{
    for (sev, msg) in notices {
        // A notice's DETAIL rides after "\nDETAIL:  " in its text.
        let (msg, detail) = match msg.split_once("\nDETAIL:  ") {
            Some((m, d)) => (m, Some(d.to_string())),
            None => (msg.as_str(), None),
        };
        let code = match *sev {
            "WARNING" if msg.starts_with("canceling") => "01000",
            "WARNING" => "25P01",
            _ => "00000",
        };
        let mut info = ErrorInfo::new(sev.to_string(), code.to_string(), msg.to_string());
        info.detail = detail;
        client
            .feed(PgWireBackendMessage::NoticeResponse(NoticeResponse::from(
                info,
            )))
            .await?;
    }
    Ok(())
}

/// Decodes one bound parameter of type `t`.
fn decode_param(bytes: Option<&[u8]>, binary: bool, t: SqlType) -> SqlResult<Datum> {
    let Some(b) = bytes else {
        return Ok(Datum::Null);
    };
    let bad = || {
        SqlError::new(
            "22P03",
            format!(
                "incorrect binary data format in bind parameter of type {}",
                t.name()
            ),
        )
    };
    if !binary {
        let s = std::str::from_utf8(b)
            .map_err(|_| SqlError::new("22021", "invalid byte sequence for encoding \"UTF8\""))?;
        return sql::bind::text_to(s, t);
    }
    Ok(match t {
        SqlType::Int2 => Datum::Int2(i16::from_be_bytes(b.try_into().map_err(|_| bad())?)),
        SqlType::Int4 => Datum::Int4(i32::from_be_bytes(b.try_into().map_err(|_| bad())?)),
        SqlType::Int8 => Datum::Int8(i64::from_be_bytes(b.try_into().map_err(|_| bad())?)),
        SqlType::Bool => match b {
            [v] => Datum::Bool(*v != 0),
            _ => return Err(bad()),
        },
        SqlType::Lsn => Datum::Lsn(strata_types::Lsn(u64::from_be_bytes(
            b.try_into().map_err(|_| bad())?,
        ))),
        SqlType::Numeric => Datum::Numeric(decode_numeric(b).ok_or_else(bad)?),
        SqlType::Timestamp => {
            Datum::Timestamp(i64::from_be_bytes(b.try_into().map_err(|_| bad())?))
        }
        SqlType::TimestampTz => {
            Datum::TimestampTz(i64::from_be_bytes(b.try_into().map_err(|_| bad())?))
        }
        SqlType::Date => Datum::Date(i32::from_be_bytes(b.try_into().map_err(|_| bad())?)),
        SqlType::Uuid => Datum::Uuid(b.try_into().map_err(|_| bad())?),
        SqlType::Bytea => Datum::Bytea(b.to_vec()),
        SqlType::Float4 => Datum::Float4(strata_types::Float::new(f64::from(f32::from_be_bytes(
            b.try_into().map_err(|_| bad())?,
        )))),
        SqlType::Float8 => Datum::Float8(strata_types::Float::new(f64::from_be_bytes(
            b.try_into().map_err(|_| bad())?,
        ))),
        SqlType::Time => Datum::Time(i64::from_be_bytes(b.try_into().map_err(|_| bad())?)),
        SqlType::Interval => {
            let b: [u8; 16] = b.try_into().map_err(|_| bad())?;
            Datum::Interval(strata_types::Interval {
                micros: i64::from_be_bytes(b[..8].try_into().expect("8 bytes")),
                days: i32::from_be_bytes(b[8..12].try_into().expect("4 bytes")),
                months: i32::from_be_bytes(b[12..].try_into().expect("4 bytes")),
            })
        }
        SqlType::Text | SqlType::Bpchar | SqlType::Unknown => {
            Datum::Text(String::from_utf8(b.to_vec()).map_err(|_| {
                SqlError::new("22021", "invalid byte sequence for encoding \"UTF8\"")
            })?)
        }
    })
}

/// The type a client declared for a parameter, in Strata's terms.
fn client_type(t: &Type) -> Option<SqlType> {
    Some(match *t {
        Type::INT2 => SqlType::Int2,
        Type::INT4 => SqlType::Int4,
        Type::INT8 => SqlType::Int8,
        Type::TEXT | Type::VARCHAR | Type::NAME => SqlType::Text,
        Type::BPCHAR => SqlType::Bpchar,
        Type::BOOL => SqlType::Bool,
        Type::PG_LSN => SqlType::Lsn,
        Type::NUMERIC => SqlType::Numeric,
        Type::TIMESTAMP => SqlType::Timestamp,
        Type::TIMESTAMPTZ => SqlType::TimestampTz,
        Type::DATE => SqlType::Date,
        Type::UUID => SqlType::Uuid,
        Type::BYTEA => SqlType::Bytea,
        Type::FLOAT4 => SqlType::Float4,
        Type::FLOAT8 => SqlType::Float8,
        Type::TIME => SqlType::Time,
        Type::INTERVAL => SqlType::Interval,
        _ => return None,
    })
}

// ---- pgwire handlers ----

/// The handlers of one connection.
pub struct Handlers {
    startup: Arc<auth::Startup>,
    query: Arc<Query>,
}

pub struct Query {
    conn: Arc<Conn>,
}

impl Handlers {
    /// `peer`: a second handle on the client's socket (invariant 5).
    pub fn new(
        engine: Arc<Engine>,
        server: Arc<ServerState>,
        max_connections: usize,
        shared: Arc<Shared>,
        peer: Option<std::net::TcpStream>,
    ) -> Handlers {
        let conn = Arc::new(Conn {
            engine,
            server,
            max_connections,
            tx: OnceLock::new(),
            ended: Arc::new(AtomicU8::new(0)),
            sync_idle: Arc::new(AtomicBool::new(false)),
            interrupts: Arc::new(Interrupts::default()),
            key: OnceLock::new(),
            peer,
            shared,
            walsender: OnceLock::new(),
            copy: parking_lot::Mutex::new(None),
            unpacked: parking_lot::Mutex::new(std::collections::VecDeque::new()),
            tls: OnceLock::new(),
            cleartext: Arc::default(),
        });
        Handlers {
            startup: Arc::new(auth::Startup::new(conn.clone())),
            query: Arc::new(Query { conn }),
        }
    }
}

impl PgWireServerHandlers for Handlers {
    fn simple_query_handler(&self) -> Arc<impl SimpleQueryHandler> {
        self.query.clone()
    }
    fn extended_query_handler(&self) -> Arc<impl ExtendedQueryHandler> {
        self.query.clone()
    }
    fn startup_handler(&self) -> Arc<impl pgwire::api::auth::StartupHandler> {
        self.startup.clone()
    }
    fn error_handler(&self) -> Arc<impl pgwire::api::ErrorHandler> {
        Arc::new(Errors(self.query.conn.clone()))
    }
}

/// CancelRequest: sets the cancel flag of the session whose pid and secret it names.
pub(crate) fn cancel_request(server: &ServerState, req: &pgwire::messages::cancel::CancelRequest) {
    let secret = match &req.secret_key {
        SecretKey::I32(v) => v.to_be_bytes().to_vec(),
        SecretKey::Bytes(b) => b.to_vec(),
    };
    server.registry.cancel(req.pid, Some(&secret));
}

/// Tells the session of every error reported on its connection (invariant 4), and
/// rewrites pgwire's own errors into PostgreSQL's words.
struct Errors(Arc<Conn>);

impl pgwire::api::ErrorHandler for Errors {
    fn on_error<C>(&self, client: &C, error: &mut PgWireError)
    where
        C: ClientInfo,
    {
        self.0.note_failure();
        if let PgWireError::InvalidPassword(_) = error {
            let user = client
                .metadata()
                .get(pgwire::api::METADATA_USER)
                .cloned()
                .unwrap_or_default();
            *error = fatal(SqlError::new(
                "28P01",
                format!("password authentication failed for user \"{user}\""),
            ));
        }
    }
}

/// Whether a query string holds no statement (pgwire's rule: only `;` and spaces).
fn is_empty_query(q: &str) -> bool {
    q.chars().all(|c| c == ';' || c.is_whitespace())
}

/// Encodes and feeds a batch of rows as DataRow messages.
async fn feed_rows<C>(
    client: &mut C,
    schema: &Arc<Vec<FieldInfo>>,
    style: &sql::datetime::Settings,
    rows: Vec<Vec<Datum>>,
) -> PgWireResult<usize>
where
    C: Sink<PgWireBackendMessage> + Unpin + Send,
    PgWireError: From<<C as Sink<PgWireBackendMessage>>::Error>,
{
    let n = rows.len();
    let mut enc = pgwire::api::results::DataRowEncoder::new(schema.clone());
    for r in rows {
        for d in &r {
            enc.encode_field(&Wire(d, style))?;
        }
        client
            .feed(PgWireBackendMessage::DataRow(enc.take_row()))
            .await?;
    }
    Ok(n)
}

impl Query {
    /// Runs a simple-protocol query, sending each statement's messages as its
    /// results stream in (invariant 8). Returns the transaction status after it.
    async fn stream_simple<C>(
        &self,
        client: &mut C,
        sql: String,
        status: pgwire::messages::response::TransactionStatus,
    ) -> PgWireResult<Pumped>
    where
        C: ClientInfo + Sink<PgWireBackendMessage> + Unpin + Send,
        PgWireError: From<<C as Sink<PgWireBackendMessage>>::Error>,
    {
        let rx = self
            .conn
            .start(|tx| Request::Simple(sql, tx))
            .map_err(user_error)?;
        self.pump(client, rx, status, true).await
    }

    /// Turns a simple query's events into messages until the query is done or a
    /// COPY FROM STDIN needs the client's data (invariant 9; only the first of a
    /// query string may: `copy_allowed`).
    async fn pump<C>(
        &self,
        client: &mut C,
        mut rx: EventRx,
        mut status: pgwire::messages::response::TransactionStatus,
        copy_allowed: bool,
    ) -> PgWireResult<Pumped>
    where
        C: ClientInfo + Sink<PgWireBackendMessage> + Unpin + Send,
        PgWireError: From<<C as Sink<PgWireBackendMessage>>::Error>,
    {
        let conn = &self.conn;
        let mut schema = Arc::new(Vec::new());
        let mut style = Arc::<sql::datetime::Settings>::default();
        let (mut count, mut ended, mut copying_out) = (0, false, false);
        while let Some(ev) = conn.next_event(&mut rx).await {
            ended |= matches!(ev, Event::End(_));
            let msg = match ev {
                Event::Columns(cols, st) => {
                    style = st;
                    schema = Arc::new(fields(&cols, &Format::UnifiedText));
                    count = 0;
                    PgWireBackendMessage::RowDescription(RowDescription::new(
                        schema.iter().map(Into::into).collect(),
                    ))
                }
                Event::Rows(rows) => {
                    count += feed_rows(client, &schema, &style, rows).await?;
                    continue;
                }
                Event::CopyIn { columns, data } if copy_allowed => {
                    let formats = vec![0; columns];
                    let resp = CopyInResponse::new(0, columns as i16, formats);
                    client
                        .send(PgWireBackendMessage::CopyInResponse(resp))
                        .await?;
                    let extended = false;
                    return Ok(Pumped::CopyIn(PendingCopy {
                        rx,
                        status,
                        data,
                        extended,
                    }));
                }
                Event::CopyIn { data, .. } => {
                    let why = "only the first COPY FROM STDIN of a query string can run";
                    let _ = data.send(CopyChunk::Fail(why.into())).await;
                    continue;
                }
                Event::CopyOut { columns } => {
                    copying_out = true;
                    let resp = CopyOutResponse::new(0, columns as i16, vec![0; columns]);
                    PgWireBackendMessage::CopyOutResponse(resp)
                }
                Event::Ends(_) => unreachable!("next_event hands out held results one by one"),
                Event::CopyData(rows) => {
                    for r in rows {
                        client
                            .feed(PgWireBackendMessage::CopyData(CopyData::new(r.into())))
                            .await?;
                    }
                    continue;
                }
                Event::End(Err(e)) if e.fatal => return Err(user_error(e)),
                Event::End(Err(e)) => {
                    copying_out = false;
                    status = status.to_error_state();
                    PgWireBackendMessage::ErrorResponse(error_info(&e).into())
                }
                Event::End(Ok(ex)) => {
                    if std::mem::take(&mut copying_out) {
                        client
                            .feed(PgWireBackendMessage::CopyDone(CopyDone::new()))
                            .await?;
                    }
                    send_notices(client, &ex.notices).await?;
                    match end_tag(ex.output, count, &mut status) {
                        Some(tag) => PgWireBackendMessage::CommandComplete(tag.into()),
                        None => PgWireBackendMessage::EmptyQueryResponse(EmptyQueryResponse::new()),
                    }
                }
            };
            client.feed(msg).await?;
        }
        if !ended {
            // The backend stopped before answering anything.
            return Err(user_error(conn.lost()));
        }
        Ok(Pumped::Done(status))
    }
}

/// A statement's CommandComplete tag (None: an empty query), moving the
/// transaction status on BEGIN, COMMIT and ROLLBACK.
fn end_tag(
    output: Output,
    rows: usize,
    status: &mut pgwire::messages::response::TransactionStatus,
) -> Option<Tag> {
    Some(match output {
        Output::Rows(_) => Tag::new("SELECT").with_rows(rows),
        Output::Command(tag) if tag.is_empty() => return None,
        Output::Command(tag) => Tag::new(&tag),
        Output::TxnStart(tag) => {
            *status = status.to_in_transaction_state();
            Tag::new(&tag)
        }
        Output::TxnEnd(tag) => {
            *status = status.to_idle_state();
            Tag::new(&tag)
        }
    })
}

/// COPY TO's rows in the extended protocol, as pgwire's CopyOut stream: each row
/// a CopyData; an error ends the stream.
fn copy_out_stream(
    rx: EventRx,
) -> impl futures::Stream<Item = PgWireResult<CopyData>> + Send + 'static {
    use futures::StreamExt;
    futures::stream::unfold(rx, |mut rx| async move {
        loop {
            match rx.recv().await? {
                Event::CopyData(rows) => {
                    let items: Vec<PgWireResult<CopyData>> = rows
                        .into_iter()
                        .map(|r| Ok(CopyData::new(r.into())))
                        .collect();
                    return Some((futures::stream::iter(items), rx));
                }
                Event::End(Err(e)) => {
                    return Some((futures::stream::iter(vec![Err(user_error(e))]), rx))
                }
                Event::End(Ok(_)) => return None,
                _ => {}
            }
        }
    })
    .flatten()
}

impl Query {
    /// CopyDone of a COPY an Execute started: its CommandComplete (or error); the
    /// client's Sync follows.
    async fn finish_extended_copy<C>(&self, client: &mut C, mut rx: EventRx) -> PgWireResult<()>
    where
        C: ClientInfo + Sink<PgWireBackendMessage> + Unpin + Send + Sync,
        C::Error: Debug,
        PgWireError: From<<C as Sink<PgWireBackendMessage>>::Error>,
    {
        while let Some(ev) = self.conn.next_event(&mut rx).await {
            match ev {
                Event::End(Ok(ex)) => {
                    send_notices(client, &ex.notices).await?;
                    let mut status = client.transaction_status();
                    if let Some(tag) = end_tag(ex.output, 0, &mut status) {
                        client
                            .send(PgWireBackendMessage::CommandComplete(tag.into()))
                            .await?;
                    }
                }
                Event::End(Err(e)) => return Err(user_error(e)),
                _ => {}
            }
        }
        Ok(())
    }
}

/// What a simple query's events came to.
enum Pumped {
    Done(pgwire::messages::response::TransactionStatus),
    /// A COPY FROM STDIN waits for the client's data.
    CopyIn(PendingCopy),
}

#[async_trait]
impl CopyHandler for Query {
    /// Forwards the data; once the COPY has failed its backend no longer listens,
    /// and the rest is discarded until CopyDone, as PostgreSQL does.
    async fn on_copy_data<C>(&self, _client: &mut C, d: CopyData) -> PgWireResult<()>
    where
        C: ClientInfo + Sink<PgWireBackendMessage> + Unpin + Send + Sync,
        C::Error: Debug,
        PgWireError: From<<C as Sink<PgWireBackendMessage>>::Error>,
    {
        let data = self.conn.copy.lock().as_ref().map(|p| p.data.clone());
        if let Some(tx) = data {
            let _ = tx.send(CopyChunk::Data(d.data)).await;
        }
        Ok(())
    }

    /// The data's end: the COPY completes, then the rest of the query string runs.
    async fn on_copy_done<C>(&self, client: &mut C, _d: CopyDone) -> PgWireResult<()>
    where
        C: ClientInfo + Sink<PgWireBackendMessage> + Unpin + Send + Sync,
        C::Error: Debug,
        PgWireError: From<<C as Sink<PgWireBackendMessage>>::Error>,
    {
        let Some(p) = self.conn.copy.lock().take() else {
            return Err(user_error(SqlError::new("08P01", "unexpected CopyDone")));
        };
        let _ = p.data.send(CopyChunk::Done).await;
        if p.extended {
            return self.finish_extended_copy(client, p.rx).await;
        }
        match self.pump(client, p.rx, p.status, false).await? {
            Pumped::Done(status) => client.set_transaction_status(status),
            Pumped::CopyIn(_) => unreachable!("a second COPY is failed in pump"),
        }
        Ok(())
    }

    /// CopyFail: the COPY fails with the client's message (57014) and the rest of
    /// the query string is skipped; the error goes out once, through pgwire.
    async fn on_copy_fail<C>(&self, _client: &mut C, fail: CopyFail) -> PgWireError
    where
        C: ClientInfo + Sink<PgWireBackendMessage> + Unpin + Send + Sync,
        C::Error: Debug,
        PgWireError: From<<C as Sink<PgWireBackendMessage>>::Error>,
    {
        let Some(mut p) = self.conn.copy.lock().take() else {
            return user_error(SqlError::new("08P01", "unexpected CopyFail"));
        };
        let _ = p.data.send(CopyChunk::Fail(fail.message)).await;
        let mut first = None;
        while let Some(ev) = self.conn.next_event(&mut p.rx).await {
            if let Event::End(Err(e)) = ev {
                first.get_or_insert(e);
            }
        }
        user_error(first.unwrap_or_else(|| SqlError::new("57014", "COPY from stdin failed")))
    }
}

#[async_trait]
impl SimpleQueryHandler for Query {
    /// pgwire's `on_query`, but results stream to the client as the backend
    /// produces them (invariant 8) instead of being gathered first.
    async fn on_query<C>(&self, client: &mut C, query: PgQuery) -> PgWireResult<()>
    where
        C: ClientInfo + ClientPortalStore + Sink<PgWireBackendMessage> + Unpin + Send + Sync,
        C::PortalStore: PortalStore,
        C::Error: Debug,
        PgWireError: From<<C as Sink<PgWireBackendMessage>>::Error>,
    {
        if !matches!(client.state(), PgWireConnectionState::ReadyForQuery) {
            return Err(PgWireError::NotReadyForQuery);
        }
        let mut status = client.transaction_status();
        client.set_state(PgWireConnectionState::QueryInProgress);
        if is_empty_query(&query.query) {
            client
                .feed(PgWireBackendMessage::EmptyQueryResponse(
                    EmptyQueryResponse::new(),
                ))
                .await?;
        } else {
            match self.stream_simple(client, query.query, status).await? {
                Pumped::Done(st) => status = st,
                Pumped::CopyIn(p) => {
                    // The data comes as CopyData messages (the CopyHandler below).
                    *self.conn.copy.lock() = Some(p);
                    client.set_state(PgWireConnectionState::CopyInProgress(false));
                    return Ok(());
                }
            }
        }
        client.set_state(PgWireConnectionState::ReadyForQuery);
        client.set_transaction_status(status);
        client
            .send(PgWireBackendMessage::ReadyForQuery(ReadyForQuery::new(
                status,
            )))
            .await?;
        Ok(())
    }

    async fn do_query<C>(&self, _client: &mut C, _query: &str) -> PgWireResult<Vec<Response>>
    where
        C: ClientInfo + ClientPortalStore + Sink<PgWireBackendMessage> + Unpin + Send + Sync,
        C::PortalStore: PortalStore,
        C::Error: Debug,
        PgWireError: From<<C as Sink<PgWireBackendMessage>>::Error>,
    {
        unreachable!("on_query streams simple queries itself")
    }
}

#[async_trait]
impl QueryParser for Query {
    type Statement = Arc<Prepared>;

    async fn parse_sql<C>(
        &self,
        _client: &C,
        sql: &str,
        types: &[Option<Type>],
    ) -> PgWireResult<Option<Self::Statement>>
    where
        C: ClientInfo + Unpin + Send + Sync,
    {
        let declared = types
            .iter()
            .map(|t| match t {
                Some(t) if *t != Type::UNKNOWN => client_type(t).ok_or_else(|| {
                    user_error(SqlError::unsupported(format!("parameters of type {t}")))
                }),
                _ => Ok(SqlType::Unknown),
            })
            .collect::<PgWireResult<Vec<SqlType>>>()?;
        let mut p = self
            .conn
            .ask(|r| Request::Prepare(sql.to_string(), declared, r))
            .await
            .map_err(user_error)?
            .map_err(user_error)?;
        // Parse may declare more parameters than the text uses (PostgreSQL keeps them).
        if p.described.params.len() < types.len() {
            p.described.params.resize(types.len(), SqlType::Text);
        }
        for (i, t) in types.iter().enumerate() {
            if let Some(t) = t {
                if *t == Type::UNKNOWN {
                    continue;
                }
                let st = client_type(t).ok_or_else(|| {
                    user_error(SqlError::unsupported(format!("parameters of type {t}")))
                })?;
                if let Some(slot) = p.described.params.get_mut(i) {
                    *slot = st;
                }
            }
        }
        Ok(Some(Arc::new(p)))
    }

    fn get_parameter_types(&self, stmt: &Self::Statement) -> PgWireResult<Vec<Type>> {
        Ok(stmt.described.params.iter().map(|t| pg_type(*t)).collect())
    }

    fn get_result_schema(
        &self,
        stmt: &Self::Statement,
        column_format: Option<&Format>,
    ) -> PgWireResult<Vec<FieldInfo>> {
        let format = column_format.unwrap_or(&Format::UnifiedText);
        check_result_formats(format, stmt.described.columns.len())?;
        Ok(fields(&stmt.described.columns, format))
    }
}

#[async_trait]
impl ExtendedQueryHandler for Query {
    type Statement = Arc<Prepared>;
    type QueryParser = Query;

    fn query_parser(&self) -> Arc<Self::QueryParser> {
        Arc::new(Query {
            conn: self.conn.clone(),
        })
    }

    async fn do_query<C>(
        &self,
        client: &mut C,
        portal: &Portal<Self::Statement>,
        max_rows: usize,
    ) -> PgWireResult<Response>
    where
        C: ClientInfo + ClientPortalStore + Sink<PgWireBackendMessage> + Unpin + Send + Sync,
        C::PortalStore: PortalStore<Statement = Self::Statement>,
        C::Error: Debug,
        PgWireError: From<<C as Sink<PgWireBackendMessage>>::Error>,
    {
        let p = portal.statement.statement.clone();
        check_result_formats(&portal.result_column_format, p.described.columns.len())?;
        if portal.parameters.len() != p.described.params.len() {
            return Err(user_error(SqlError::new(
                "08P01",
                format!(
                    "bind message supplies {} parameters, but prepared statement \"{}\" requires {}",
                    portal.parameters.len(),
                    portal.statement.id,
                    p.described.params.len()
                ),
            )));
        }
        let params = Params {
            values: portal.parameters.clone(),
            binary: (0..portal.parameters.len())
                .map(|i| portal.parameter_format.is_binary(i))
                .collect(),
        };
        let conn = &self.conn;
        let mut rx = conn
            .start(|tx| Request::Execute(p, params, tx))
            .map_err(user_error)?;
        let format = &portal.result_column_format;
        let mut schema = Arc::new(Vec::new());
        let mut style = Arc::<sql::datetime::Settings>::default();
        let mut collected: Vec<Vec<Datum>> = Vec::new();
        let mut count = 0;
        while let Some(ev) = conn.next_event(&mut rx).await {
            match ev {
                Event::Columns(cols, st) => {
                    schema = Arc::new(fields(&cols, format));
                    style = st;
                }
                // A row limit: the portal may be suspended, so its rows are kept
                // (invariant 8); otherwise they stream now, and the CommandComplete
                // pgwire sends for the Execution response counts them.
                Event::Rows(mut rows) if max_rows > 0 => collected.append(&mut rows),
                Event::Rows(rows) => count += feed_rows(client, &schema, &style, rows).await?,
                // COPY (invariant 9): pgwire sends CopyInResponse and takes the
                // data to the CopyHandler; COPY TO's rows stream from the events.
                Event::CopyIn { columns, data } => {
                    let status = pgwire::messages::response::TransactionStatus::Idle;
                    *conn.copy.lock() = Some(PendingCopy {
                        rx,
                        status,
                        data,
                        extended: true,
                    });
                    let none = futures::stream::empty();
                    return Ok(Response::CopyIn(CopyResponse::new(0, columns, none)));
                }
                Event::CopyOut { columns } => {
                    let rows = copy_out_stream(rx);
                    return Ok(Response::CopyOut(CopyResponse::new(0, columns, rows)));
                }
                Event::CopyData(_) => {}
                Event::Ends(_) => unreachable!("next_event hands out held results one by one"),
                Event::End(Err(e)) => return Err(user_error(e)),
                Event::End(Ok(ex)) => {
                    send_notices(client, &ex.notices).await?;
                    return Ok(match ex.output {
                        Output::Rows(_) if max_rows > 0 => {
                            rows_response(&schema, &style, collected)
                        }
                        Output::Rows(_) => Response::Execution(Tag::new("SELECT").with_rows(count)),
                        // DML with RETURNING under a row limit: its rows, kept.
                        Output::Command(_) if !collected.is_empty() => {
                            rows_response(&schema, &style, collected)
                        }
                        _ => response(ex),
                    });
                }
            }
        }
        Err(user_error(conn.lost()))
    }

    async fn on_sync<C>(&self, client: &mut C, _message: PgSync) -> PgWireResult<()>
    where
        C: ClientInfo + ClientPortalStore + Sink<PgWireBackendMessage> + Unpin + Send + Sync,
        C::PortalStore: PortalStore<Statement = Self::Statement>,
        C::Error: Debug,
        PgWireError: From<<C as Sink<PgWireBackendMessage>>::Error>,
    {
        // The pipeline's implicit block commits first (invariant 7).
        let committed = if self.conn.sync_idle.load(Ordering::SeqCst) {
            self.conn.tell(Request::Sync)
        } else {
            self.conn.ask(Request::Sync).await.and_then(|r| r)
        };
        if let Err(e) = committed {
            if e.fatal {
                return Err(user_error(e));
            }
            client
                .feed(PgWireBackendMessage::ErrorResponse(error_info(&e).into()))
                .await?;
        }
        client.portal_store().rm_portal(pgwire::api::DEFAULT_NAME);
        client
            .send(PgWireBackendMessage::ReadyForQuery(ReadyForQuery::new(
                client.transaction_status(),
            )))
            .await?;
        client.flush().await?;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numeric_binary_round_trips() {
        for text in [
            "0",
            "1",
            "-1",
            "9999",
            "10000",
            "123456789",
            "-10000000000",
            "64563604257983430649",
            "0.5",
            "1.50",
            "-0.0001",
            "0.00012",
            "12345.6789",
            "100.000",
            "-9999.99",
            "0.0000000000000000000000000001",
        ] {
            let n = Numeric::parse(text).unwrap();
            let mut b = BytesMut::new();
            encode_numeric(&n, &mut b);
            let back = decode_numeric(&b).unwrap();
            assert_eq!(back.to_string(), text, "{text}");
        }
        // PostgreSQL's own bytes for 12345.6789: 3 digits, weight 1, dscale 4.
        let mut b = BytesMut::new();
        encode_numeric(&Numeric::parse("12345.6789").unwrap(), &mut b);
        let words: Vec<i16> = b
            .chunks(2)
            .map(|c| i16::from_be_bytes([c[0], c[1]]))
            .collect();
        assert_eq!(words, [3, 1, 0, 4, 1, 2345, 6789]);
    }

    #[test]
    fn params_decode_in_text_and_binary() {
        assert_eq!(
            decode_param(Some(b"42"), false, SqlType::Int4).unwrap(),
            Datum::Int4(42)
        );
        assert_eq!(
            decode_param(Some(&7i64.to_be_bytes()), true, SqlType::Int8).unwrap(),
            Datum::Int8(7)
        );
        assert_eq!(
            decode_param(None, true, SqlType::Int8).unwrap(),
            Datum::Null
        );
        assert_eq!(
            decode_param(Some(b"x"), false, SqlType::Int4)
                .unwrap_err()
                .code,
            "22P02"
        );
        assert_eq!(
            decode_param(Some(&[1, 2]), true, SqlType::Int4)
                .unwrap_err()
                .code,
            "22P03"
        );
    }
}
