//! The WAL sender: PostgreSQL's streaming replication protocol on a connection whose
//! startup packet says `replication=true`, so that PostgreSQL 15's `pg_receivewal`
//! (and later standbys) stream Strata's WAL.
//!
//! Entry points: [`mode`] (the startup parameter), [`WalSenders`] (the
//! `max_wal_senders` slots), [`serve`] (the command loop after authentication).
//!
//! Commands: IDENTIFY_SYSTEM, SHOW, TIMELINE_HISTORY, CREATE_REPLICATION_SLOT s
//! [TEMPORARY] PHYSICAL [RESERVE_WAL], DROP_REPLICATION_SLOT s [WAIT],
//! READ_REPLICATION_SLOT s, START_REPLICATION [SLOT s] [PHYSICAL] X/X [TIMELINE t],
//! BASE_BACKUP [( option, ... )] (the `basebackup` module: what pg_basebackup needs).
//! SQL is refused with 0A000, as on PostgreSQL's physical WAL senders.
//!
//! Rules (cited as "walsender rule N"):
//! 1. Only flushed WAL is sent (`Engine::read_wal`): a standby never holds a record
//!    the primary could lose in a crash.
//! 2. Streaming reads and writes concurrently: status updates and CopyDone are read
//!    while WAL is being sent, so a client that stops reading is noticed by
//!    `wal_sender_timeout`, not by a blocked send, and one that says CopyDone is
//!    answered at once.
//! 3. A sender takes one of `max_wal_senders` slots, not a connection slot, and only
//!    a role with the REPLICATION attribute (or a superuser) may start one.
//! 4. Timelines (timeline rules): IDENTIFY_SYSTEM says the server's; TIMELINE_HISTORY
//!    sends a history file; START_REPLICATION on the current timeline streams on, and
//!    on an earlier one of this server's history streams up to that timeline's switch
//!    point, then ends the COPY and answers with the next timeline and where it
//!    begins (PostgreSQL's protocol); a timeline not in the history is an error.
//! 5. A slot streamed through advances to what the client reports flushed
//!    (slots rule 2); the checkpointer keeps WAL from the oldest slot on. A slot
//!    created with RESERVE_WAL holds WAL from the current flush position at once.
//! 6. `pg_stat_replication`'s lags are PostgreSQL's: the time from the primary having
//!    flushed and sent WAL up to a position until the standby reports that position
//!    written, flushed or applied (a bounded ring of send samples per sender).
//!    `state` is `catchup` from START_REPLICATION until the standby has applied all
//!    sent so far, then `streaming`; `backup` during BASE_BACKUP.
//! 7. Every status update goes to synchronous replication (`strata_sql::syncrep`),
//!    under the sender's `application_name`; a sender that ends leaves it.
//! 8. A streaming sender wakes at every WAL flush (wal rule 10, through
//!    [`WalSenders::flushed`]), so WAL leaves the moment it is durable; the
//!    `POLL` timer is only a fallback for timeouts and keepalives.
//! 9. Hot-standby feedback ('h': the oldest xid the standby's queries need) is kept
//!    per sender until the next one or the sender's end; VACUUM on this server
//!    removes no row version deleted at or after the oldest of them
//!    ([`WalSenders::feedback_horizon`], given to `Engine::hold_horizon`). An
//!    invalid xid (feedback turned off) holds nothing.
//! 10. An idle pair stays connected (PostgreSQL's keepalives): the sender asks for
//!     a reply once half of `wal_sender_timeout` passes without one, and answers a
//!     status update that asks for a reply (the standby's ping at half of its
//!     `wal_receiver_timeout`) with a keepalive at once, so each side hears from
//!     the other well within its timeout even when no WAL is written.

mod basebackup;

use super::frames::Guarded;
use futures::{SinkExt, StreamExt};
use parking_lot::Mutex;
use pgwire::messages::copy::{CopyBothResponse, CopyData, CopyDone};
use pgwire::messages::data::{DataRow, FieldDescription, RowDescription};
use pgwire::messages::response::{CommandComplete, ReadyForQuery, TransactionStatus};
use pgwire::messages::{PgWireBackendMessage, PgWireFrontendMessage};
use pgwire::tokio::server::PgWireMessageServerCodec;
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};
use strata_engine::{Engine, LogSink};
use strata_sql::SqlError;
use strata_types::{Lsn, Xid};
use tokio_util::codec::Framed;

type Socket = Framed<Guarded<crate::tls::Stream>, PgWireMessageServerCodec<Arc<super::Prepared>>>;

/// The largest XLogData payload sent at once.
const MAX_SEND_BYTES: usize = 128 << 10;
/// How often an idle sender looks for newly flushed WAL without being woken (rule 8).
const POLL: Duration = Duration::from_millis(20);

/// Whether the startup parameter `replication` asks for a physical WAL sender.
pub fn mode(value: Option<&str>) -> Result<bool, SqlError> {
    let Some(v) = value else { return Ok(false) };
    match v.to_ascii_lowercase().as_str() {
        "true" | "on" | "yes" | "1" => Ok(true),
        "false" | "off" | "no" | "0" => Ok(false),
        "database" => Err(SqlError::new(
            "0A000",
            "logical replication is not supported by Strata",
        )),
        _ => Err(SqlError::new(
            "22023",
            format!("invalid value for parameter \"replication\": \"{v}\""),
        )),
    }
}

/// What a standby last reported (a status update), for `pg_stat_replication`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Progress {
    pub sent: Lsn,
    pub write: Lsn,
    pub flush: Lsn,
    pub apply: Lsn,
}

/// Who a WAL sender serves.
#[derive(Clone, Debug, Default)]
pub struct Who {
    pub user: String,
    pub application_name: String,
    pub client_addr: Option<std::net::SocketAddr>,
}

/// One WAL sender as `pg_stat_replication` shows it (rule 6).
#[derive(Clone, Debug, Default)]
pub struct SenderInfo {
    pub id: u64,
    pub who: Who,
    pub backend_start_unix_us: i64,
    /// startup, catchup, streaming, backup.
    pub state: &'static str,
    pub progress: Progress,
    pub write_lag: Option<Duration>,
    pub flush_lag: Option<Duration>,
    pub replay_lag: Option<Duration>,
    pub reply_time_unix_us: Option<i64>,
    /// The oldest xid the standby's queries need, from its hot-standby feedback
    /// (rule 9); `backend_xmin`.
    pub xmin: Option<Xid>,
    /// (flushed position, when it was sent): the lag tracker's samples.
    samples: std::collections::VecDeque<(Lsn, Instant)>,
}

/// Samples the lag tracker keeps per sender (older ones are dropped).
const LAG_SAMPLES: usize = 1024;

impl SenderInfo {
    /// Rule 6: each lag is the time since the primary had flushed and sent the WAL
    /// the standby now reports written, flushed or applied.
    fn track_reply(&mut self, write: Lsn, flush: Lsn, apply: Lsn) {
        let now = Instant::now();
        let lag_of = |pos: Lsn, samples: &std::collections::VecDeque<(Lsn, Instant)>| {
            samples
                .iter()
                .rev()
                .find(|(l, _)| *l <= pos)
                .map(|(_, t)| now.duration_since(*t))
        };
        if let Some(l) = lag_of(write, &self.samples) {
            self.write_lag = Some(l);
        }
        if let Some(l) = lag_of(flush, &self.samples) {
            self.flush_lag = Some(l);
        }
        if let Some(l) = lag_of(apply, &self.samples) {
            self.replay_lag = Some(l);
        }
        while self.samples.len() > 1 && self.samples[1].0 <= apply {
            self.samples.pop_front();
        }
        self.progress.write = write;
        self.progress.flush = flush;
        self.progress.apply = apply;
        self.reply_time_unix_us = Some(unix_us());
        if self.state == "catchup" && apply >= self.progress.sent {
            self.state = "streaming";
        }
    }
}

fn unix_us() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_micros() as i64)
}

/// The pid `pg_stat_replication` shows for sender `id` (BackendKeyData's too).
pub fn pid_of(id: u64) -> i32 {
    i32::try_from(id).unwrap_or(i32::MAX).saturating_neg()
}

/// The `max_wal_senders` slots (rule 3).
pub struct WalSenders {
    max: usize,
    /// The primary's durable WAL end, sent at every flush (rule 8): the
    /// senders wait on it instead of polling.
    pub flushed: tokio::sync::watch::Sender<Lsn>,
    active: Mutex<Vec<SenderInfo>>,
    next_id: Mutex<u64>,
}

/// A taken slot; dropping it frees the slot.
pub struct Slot {
    senders: Arc<WalSenders>,
    pub id: u64,
}

impl Drop for Slot {
    fn drop(&mut self) {
        self.senders.active.lock().retain(|s| s.id != self.id);
    }
}

impl WalSenders {
    pub fn new(max: usize) -> Arc<WalSenders> {
        Arc::new(WalSenders {
            max,
            flushed: tokio::sync::watch::Sender::new(Lsn::INVALID),
            active: Mutex::new(Vec::new()),
            next_id: Mutex::new(1),
        })
    }

    /// Takes a slot for a superuser, or says why not (PostgreSQL's errors).
    pub fn take(self: &Arc<Self>, superuser: bool, who: Who) -> Result<Slot, SqlError> {
        if !superuser {
            return Err(SqlError::new(
                "42501",
                "must be superuser or replication role to start walsender",
            ));
        }
        let mut active = self.active.lock();
        if active.len() >= self.max {
            return Err(SqlError::new(
                "53300",
                format!(
                    "number of requested standby connections exceeds max_wal_senders (currently {})",
                    self.max
                ),
            ));
        }
        let id = {
            let mut n = self.next_id.lock();
            *n += 1;
            *n - 1
        };
        active.push(SenderInfo {
            id,
            who,
            backend_start_unix_us: unix_us(),
            state: "startup",
            ..Default::default()
        });
        Ok(Slot {
            senders: self.clone(),
            id,
        })
    }

    /// Rule 9: the oldest xid any standby said its queries need (VACUUM keeps what
    /// it may see).
    pub fn feedback_horizon(&self) -> Option<Xid> {
        self.active.lock().iter().filter_map(|s| s.xmin).min()
    }

    fn report(&self, id: u64, f: impl FnOnce(&mut SenderInfo)) {
        if let Some(s) = self.active.lock().iter_mut().find(|s| s.id == id) {
            f(s);
        }
    }

    /// Every active sender, for `pg_stat_replication`.
    pub fn list(&self) -> Vec<SenderInfo> {
        self.active.lock().clone()
    }
}

/// What the command loop needs of the server.
pub struct Context {
    pub engine: Arc<Engine>,
    pub senders: Arc<WalSenders>,
    pub slot: u64,
    /// SHOW's values (name, value).
    pub settings: Vec<(String, String)>,
    pub timeout: Duration,
    pub log: LogSink,
    /// Synchronous replication: every status update is reported to it (rule 7).
    pub syncrep: Arc<strata_sql::syncrep::SyncRep>,
}

/// PostgreSQL's timestamps: microseconds since 2000-01-01 UTC.
fn pg_now() -> i64 {
    let unix = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_micros() as i64);
    unix - 946_684_800_000_000
}

fn text_field(name: &str, type_id: u32) -> FieldDescription {
    FieldDescription::new(
        name.into(),
        0,
        0,
        type_id,
        if type_id == 23 { 4 } else { -1 },
        -1,
        0,
    )
}

/// One result set of text values (`None`: NULL), then CommandComplete.
async fn send_rows(
    socket: &mut Socket,
    fields: Vec<FieldDescription>,
    rows: Vec<Vec<Option<String>>>,
    tag: &str,
) -> std::io::Result<()> {
    let mut out = vec![PgWireBackendMessage::RowDescription(RowDescription::new(
        fields,
    ))];
    for row in rows {
        let mut data = bytes::BytesMut::new();
        for v in &row {
            match v {
                Some(s) => {
                    data.extend_from_slice(&(s.len() as i32).to_be_bytes());
                    data.extend_from_slice(s.as_bytes());
                }
                None => data.extend_from_slice(&(-1i32).to_be_bytes()),
            }
        }
        out.push(PgWireBackendMessage::DataRow(DataRow::new(
            data,
            row.len() as i16,
        )));
    }
    out.push(complete(tag));
    for m in out {
        feed(socket, m).await?;
    }
    Ok(())
}

fn complete(tag: &str) -> PgWireBackendMessage {
    PgWireBackendMessage::CommandComplete(CommandComplete::new(tag.into()))
}

async fn feed(socket: &mut Socket, m: PgWireBackendMessage) -> std::io::Result<()> {
    socket
        .feed(m)
        .await
        .map_err(|e| std::io::Error::other(e.to_string()))
}

async fn send_error(socket: &mut Socket, e: &SqlError) -> std::io::Result<()> {
    let info = super::error_info(e);
    feed(socket, PgWireBackendMessage::ErrorResponse(info.into())).await
}

async fn ready(socket: &mut Socket) -> std::io::Result<()> {
    feed(
        socket,
        PgWireBackendMessage::ReadyForQuery(ReadyForQuery::new(TransactionStatus::Idle)),
    )
    .await?;
    socket
        .flush()
        .await
        .map_err(|e| std::io::Error::other(e.to_string()))
}

/// Serves replication commands until the client leaves; then gives back its slots.
pub async fn serve(socket: &mut Socket, cx: Context) {
    serve_commands(socket, &cx).await;
    cx.syncrep.remove(cx.slot);
    cx.engine.slots().release_all(cx.slot, true);
}

async fn serve_commands(socket: &mut Socket, cx: &Context) {
    while let Some(Ok(msg)) = socket.next().await {
        let r = match msg {
            PgWireFrontendMessage::Query(q) => match command(socket, cx, &q.query).await {
                Ok(Flow::Continue) => ready(socket).await,
                Ok(Flow::Close) => return,
                Err(e) => match send_error(socket, &e).await {
                    Ok(()) => ready(socket).await,
                    Err(e) => Err(e),
                },
            },
            PgWireFrontendMessage::Terminate(_) => return,
            PgWireFrontendMessage::Sync(_) => ready(socket).await,
            _ => {
                let e = SqlError::new(
                    "08P01",
                    "extended query protocol not supported in a replication connection",
                );
                send_error(socket, &e).await
            }
        };
        if r.is_err() {
            return;
        }
    }
}

/// What the command loop does after a command.
enum Flow {
    Continue,
    Close,
}

fn io(e: std::io::Error) -> SqlError {
    SqlError::new("08006", e.to_string())
}

async fn command(socket: &mut Socket, cx: &Context, text: &str) -> Result<Flow, SqlError> {
    let text = text.trim().trim_end_matches(';').trim();
    let words: Vec<&str> = text.split_whitespace().collect();
    let upper: Vec<String> = words.iter().map(|w| w.to_ascii_uppercase()).collect();
    let first = upper.first().map(String::as_str);
    if cx.engine.in_recovery()
        && matches!(
            first,
            Some("START_REPLICATION" | "BASE_BACKUP" | "CREATE_REPLICATION_SLOT")
        )
    {
        return Err(SqlError::new(
            "0A000",
            "cascading replication is not supported by Strata: this server is a standby; stream from its primary",
        ));
    }
    match first {
        Some("IDENTIFY_SYSTEM") if words.len() == 1 => identify_system(socket, cx).await,
        Some("SHOW") if words.len() == 2 => show(socket, cx, words[1]).await,
        Some("TIMELINE_HISTORY") => timeline_history(socket, cx, words.get(1).copied()).await,
        Some("START_REPLICATION") => {
            let (slot, start, tli) = parse_start(&words, &upper)?;
            let end_at = timeline_end(cx, tli)?;
            if let Some(name) = &slot {
                let slots = cx.engine.slots();
                slots.acquire(name, cx.slot).map_err(slot_error)?;
                slots.advance(name, start); // a slot never used holds WAL from here
            }
            let r = stream(socket, cx, slot.as_deref(), start, end_at).await;
            cx.engine.slots().release_all(cx.slot, false);
            r
        }
        Some("CREATE_REPLICATION_SLOT") => create_slot(socket, cx, &words, &upper).await,
        Some("DROP_REPLICATION_SLOT") if (2..=3).contains(&words.len()) => {
            let name = unquote(words[1]);
            cx.engine.slots().drop_slot(&name).map_err(slot_error)?;
            feed(socket, complete("DROP_REPLICATION_SLOT"))
                .await
                .map_err(io)?;
            Ok(Flow::Continue)
        }
        Some("READ_REPLICATION_SLOT") if words.len() == 2 => read_slot(socket, cx, words[1]).await,
        Some("BASE_BACKUP") => basebackup::base_backup(socket, cx, text).await,
        _ => Err(SqlError::new(
            "0A000",
            "cannot execute SQL commands in WAL sender for physical replication",
        )),
    }
}

async fn identify_system(socket: &mut Socket, cx: &Context) -> Result<Flow, SqlError> {
    let fields = vec![
        text_field("systemid", 25),
        text_field("timeline", 23),
        text_field("xlogpos", 25),
        text_field("dbname", 25),
    ];
    let row = vec![
        Some(cx.engine.system_identifier().to_string()),
        Some(cx.engine.timeline().to_string()),
        Some(cx.engine.flushed_wal_lsn().to_string()),
        None,
    ];
    send_rows(socket, fields, vec![row], "IDENTIFY_SYSTEM")
        .await
        .map_err(io)?;
    Ok(Flow::Continue)
}

async fn show(socket: &mut Socket, cx: &Context, name: &str) -> Result<Flow, SqlError> {
    let name = name.trim_matches('"').to_ascii_lowercase();
    let value = match name.as_str() {
        "data_directory_mode" => Some("0700".to_string()),
        "wal_segment_size" => Some(strata_types::units::format_memory(
            cx.engine.wal_segment_bytes(),
        )),
        "server_version" => Some("15.0".to_string()),
        "server_version_num" => Some("150000".to_string()),
        _ => cx
            .settings
            .iter()
            .find(|(n, _)| *n == name)
            .map(|(_, v)| v.clone()),
    };
    let Some(value) = value else {
        return Err(SqlError::new(
            "42704",
            format!("unrecognized configuration parameter \"{name}\""),
        ));
    };
    send_rows(
        socket,
        vec![text_field(&name, 25)],
        vec![vec![Some(value)]],
        "SHOW",
    )
    .await
    .map_err(io)?;
    Ok(Flow::Continue)
}

fn slot_error(e: strata_wal::slots::SlotError) -> SqlError {
    SqlError::new(e.code, e.message)
}

/// A slot name as written, `"quoted"` or bare.
fn unquote(w: &str) -> String {
    w.trim_matches('"').to_string()
}

/// `CREATE_REPLICATION_SLOT s [TEMPORARY] PHYSICAL [RESERVE_WAL]`, or PostgreSQL 15's
/// `... PHYSICAL (RESERVE_WAL [true|false])`.
async fn create_slot(
    socket: &mut Socket,
    cx: &Context,
    words: &[&str],
    upper: &[String],
) -> Result<Flow, SqlError> {
    let syntax = || SqlError::new("42601", "syntax error in CREATE_REPLICATION_SLOT");
    let name = unquote(words.get(1).ok_or_else(syntax)?);
    let rest: Vec<String> = upper[2..]
        .iter()
        .flat_map(|w| w.split(['(', ')', ',']))
        .filter(|w| !w.is_empty())
        .map(str::to_string)
        .collect();
    let temporary = rest.first().map(String::as_str) == Some("TEMPORARY");
    let opts = &rest[usize::from(temporary)..];
    match opts.first().map(String::as_str) {
        Some("PHYSICAL") => {}
        Some("LOGICAL") => {
            return Err(SqlError::new(
                "0A000",
                "logical replication is not supported by Strata",
            ))
        }
        _ => return Err(syntax()),
    }
    let reserve = match opts[1..].iter().map(String::as_str).collect::<Vec<_>>()[..] {
        [] => false,
        ["RESERVE_WAL"] | ["RESERVE_WAL", "TRUE" | "ON" | "1"] => true,
        ["RESERVE_WAL", "FALSE" | "OFF" | "0"] => false,
        _ => return Err(syntax()),
    };
    let at = if reserve {
        cx.engine.flushed_wal_lsn()
    } else {
        Lsn::INVALID
    };
    let slots = cx.engine.slots();
    slots.create(&name, at, temporary).map_err(slot_error)?;
    if temporary {
        // Rule 3 of slots: it goes with this connection.
        slots.acquire(&name, cx.slot).map_err(slot_error)?;
    }
    let fields = [
        "slot_name",
        "consistent_point",
        "snapshot_name",
        "output_plugin",
    ]
    .iter()
    .map(|n| text_field(n, 25))
    .collect();
    let row = vec![Some(name), Some(Lsn::INVALID.to_string()), None, None];
    send_rows(socket, fields, vec![row], "CREATE_REPLICATION_SLOT")
        .await
        .map_err(io)?;
    Ok(Flow::Continue)
}

/// `READ_REPLICATION_SLOT s`: type, restart LSN and timeline; NULLs if there is none.
async fn read_slot(socket: &mut Socket, cx: &Context, name: &str) -> Result<Flow, SqlError> {
    let name = unquote(name);
    strata_wal::slots::check_name(&name).map_err(slot_error)?;
    let row = match cx.engine.slots().get(&name) {
        Some(s) if s.restart_lsn != Lsn::INVALID => vec![
            Some("physical".to_string()),
            Some(s.restart_lsn.to_string()),
            Some("1".to_string()),
        ],
        Some(_) => vec![Some("physical".to_string()), None, None],
        None => vec![None, None, None],
    };
    let fields = vec![
        text_field("slot_type", 25),
        text_field("restart_lsn", 25),
        text_field("restart_tli", 20),
    ];
    send_rows(socket, fields, vec![row], "READ_REPLICATION_SLOT")
        .await
        .map_err(io)?;
    Ok(Flow::Continue)
}

/// `TIMELINE_HISTORY t`: the history file of timeline `t` (rule 4), as PostgreSQL
/// sends it: its name and its bytes.
async fn timeline_history(
    socket: &mut Socket,
    cx: &Context,
    tli: Option<&str>,
) -> Result<Flow, SqlError> {
    let tli: u32 = tli
        .and_then(|t| t.parse().ok())
        .ok_or_else(|| SqlError::new("42601", "syntax error in TIMELINE_HISTORY"))?;
    let name = strata_wal::timeline::history_file_name(tli);
    let path = cx.engine.data_dir().join("pg_wal").join(&name);
    let bytes = strata_vfs::read_file(&*cx.engine.settings().vfs, &path).map_err(|e| {
        SqlError::new(
            "58P01",
            format!("could not open file \"pg_wal/{name}\": {e}"),
        )
    })?;
    let text = String::from_utf8_lossy(&bytes).into_owned();
    send_rows(
        socket,
        vec![text_field("filename", 25), text_field("content", 17)],
        vec![vec![Some(name), Some(text)]],
        "TIMELINE_HISTORY",
    )
    .await
    .map_err(io)?;
    Ok(Flow::Continue)
}

/// Rule 4: where streaming on `tli` must end — `None` on the current timeline, the
/// switch point and the next timeline on an earlier one.
fn timeline_end(cx: &Context, tli: Option<u32>) -> Result<Option<(Lsn, u32)>, SqlError> {
    let current = cx.engine.timeline();
    let Some(tli) = tli.filter(|t| *t != current) else {
        return Ok(None);
    };
    let missing = || {
        SqlError::new(
            "22023",
            format!("requested timeline {tli} is not in this server's history"),
        )
    };
    if tli > current {
        return Err(missing());
    }
    let history = strata_wal::timeline::read_history(
        &*cx.engine.settings().vfs,
        cx.engine.data_dir(),
        current,
    )
    .map_err(|e| SqlError::new("58P01", e.to_string()))?;
    let at = history
        .iter()
        .position(|e| e.tli == tli)
        .ok_or_else(missing)?;
    let next = history.get(at + 1).map_or(current, |e| e.tli);
    Ok(Some((history[at].switch, next)))
}

/// `START_REPLICATION [SLOT s] [PHYSICAL] X/X [TIMELINE t]`.
fn parse_start(
    words: &[&str],
    upper: &[String],
) -> Result<(Option<String>, Lsn, Option<u32>), SqlError> {
    let syntax = || SqlError::new("42601", "syntax error in START_REPLICATION");
    let mut i = 1;
    let mut slot = None;
    if upper.get(i).map(String::as_str) == Some("SLOT") {
        slot = Some(unquote(words.get(i + 1).ok_or_else(syntax)?));
        i += 2;
    }
    match upper.get(i).map(String::as_str) {
        Some("PHYSICAL") => i += 1,
        Some("LOGICAL") => {
            return Err(SqlError::new(
                "0A000",
                "logical replication is not supported by Strata",
            ))
        }
        _ => {}
    }
    let start: Lsn = words
        .get(i)
        .ok_or_else(syntax)?
        .parse()
        .map_err(|_| syntax())?;
    i += 1;
    let tli = match upper.get(i).map(String::as_str) {
        None => None,
        Some("TIMELINE") if words.len() == i + 2 => {
            let tl: u32 = words[i + 1].parse().map_err(|_| syntax())?;
            Some(tl)
        }
        Some(_) => return Err(syntax()),
    };
    Ok((slot, start, tli))
}

/// The state of one streaming exchange.
struct Streaming {
    sent: Lsn,
    /// The switch point of an earlier timeline being streamed (rule 4).
    end_at: Option<Lsn>,
    last_reply: Instant,
    last_send: Instant,
    keepalive_pending: bool,
}

async fn stream(
    socket: &mut Socket,
    cx: &Context,
    slot: Option<&str>,
    start: Lsn,
    end_at: Option<(Lsn, u32)>,
) -> Result<Flow, SqlError> {
    if let Some((switch, _)) = end_at.filter(|(switch, _)| start > *switch) {
        return Err(SqlError::new(
            "XX000",
            format!("requested starting point {start} is not in this server's history"),
        )
        .with_detail(format!(
            "This server's history forked from the requested timeline at {switch}."
        )));
    }
    let flushed = cx.engine.flushed_wal_lsn();
    if start > flushed {
        return Err(SqlError::new(
            "XX000",
            format!(
                "requested starting point {start} is ahead of the WAL flush position of this server {flushed}"
            ),
        ));
    }
    check_segment(cx, start)?;
    let both = CopyBothResponse::new(0, 0, vec![]);
    feed(socket, PgWireBackendMessage::CopyBothResponse(both))
        .await
        .map_err(io)?;
    tokio_flush(socket, cx.timeout).await.map_err(io)?;
    cx.senders.report(cx.slot, |s| s.state = "catchup");
    let mut st = Streaming {
        sent: start,
        last_reply: Instant::now(),
        last_send: Instant::now(),
        keepalive_pending: false,
        end_at: end_at.map(|(l, _)| l),
    };
    let mut flushed = cx.senders.flushed.subscribe();
    loop {
        tokio::select! {
            m = socket.next() => match on_client_message(socket, cx, slot, m, &mut st).await? {
                Some(flow) => return Ok(flow),
                None => continue,
            },
            _ = flushed.changed() => {}
            _ = tokio::time::sleep(POLL) => {}
        }
        send_pending(socket, cx, &mut st).await?;
        if let Some((switch, next)) = end_at.filter(|(switch, _)| st.sent >= *switch) {
            return end_of_timeline(socket, cx, slot, &mut st, (switch, next)).await;
        }
        if let Some(flow) = keepalive(socket, cx, &mut st).await? {
            return Ok(flow);
        }
    }
}

/// Rule 4: the requested timeline ends at `switch`: CopyDone, the client's CopyDone,
/// then the next timeline and where it begins, as PostgreSQL answers.
async fn end_of_timeline(
    socket: &mut Socket,
    cx: &Context,
    slot: Option<&str>,
    st: &mut Streaming,
    (switch, next): (Lsn, u32),
) -> Result<Flow, SqlError> {
    feed(socket, PgWireBackendMessage::CopyDone(CopyDone::new()))
        .await
        .map_err(io)?;
    tokio_flush(socket, cx.timeout).await.map_err(io)?;
    loop {
        let m = match tokio::time::timeout(cx.timeout.max(POLL), socket.next()).await {
            Ok(m) => m,
            Err(_) => return Ok(Flow::Close),
        };
        match m {
            Some(Ok(PgWireFrontendMessage::CopyDone(_))) => break,
            Some(Ok(PgWireFrontendMessage::CopyData(_))) => {
                on_client_message(socket, cx, slot, m, st).await?;
            }
            _ => return Ok(Flow::Close),
        }
    }
    send_rows(
        socket,
        vec![
            text_field("next_tli", 20),
            text_field("next_tli_startpos", 25),
        ],
        vec![vec![Some(next.to_string()), Some(switch.to_string())]],
        "START_STREAMING",
    )
    .await
    .map_err(io)?;
    Ok(Flow::Continue)
}

/// The segment holding `lsn` is still in pg_wal.
fn check_segment(cx: &Context, lsn: Lsn) -> Result<(), SqlError> {
    match cx.engine.read_wal(lsn) {
        Ok(Some(_)) => Ok(()),
        Ok(None) => Err(SqlError::new(
            "58P01",
            format!(
                "requested WAL segment {} has already been removed",
                strata_wal::segment_file_name(
                    cx.engine.timeline(),
                    lsn.0 / cx.engine.wal_segment_bytes(),
                    cx.engine.wal_segment_bytes()
                )
            ),
        )),
        Err(e) => Err(SqlError::from(e)),
    }
}

/// Handles what the client sent while streaming: `Some(flow)` ends the streaming.
async fn on_client_message(
    socket: &mut Socket,
    cx: &Context,
    slot: Option<&str>,
    m: Option<Result<PgWireFrontendMessage, pgwire::error::PgWireError>>,
    st: &mut Streaming,
) -> Result<Option<Flow>, SqlError> {
    match m {
        Some(Ok(PgWireFrontendMessage::CopyData(d))) => {
            st.last_reply = Instant::now();
            st.keepalive_pending = false;
            if d.data.first() == Some(&b'r') && d.data.len() >= 34 {
                let at = |i: usize| {
                    let mut b = [0u8; 8];
                    b.copy_from_slice(&d.data[i..i + 8]);
                    Lsn(u64::from_be_bytes(b))
                };
                let (write, flush, apply) = (at(1), at(9), at(17));
                let mut name = String::new();
                cx.senders.report(cx.slot, |s| {
                    s.track_reply(write, flush, apply);
                    name.clone_from(&s.who.application_name);
                });
                cx.syncrep.update(cx.slot, &name, write, flush, apply); // rule 7
                if let Some(name) = slot {
                    cx.engine.slots().advance(name, flush); // rule 5
                }
                if d.data[33] != 0 {
                    send_keepalive(socket, cx, st, false).await?; // rule 10
                }
            } else if d.data.first() == Some(&b'h') && d.data.len() >= 25 {
                // Rule 9: timestamp, xmin, epoch, catalog xmin, catalog epoch.
                let xmin = u32::from_be_bytes([d.data[9], d.data[10], d.data[11], d.data[12]]);
                let xmin = Some(Xid(xmin)).filter(|x| *x >= Xid::FIRST_NORMAL);
                cx.senders.report(cx.slot, |s| s.xmin = xmin);
            }
            Ok(None)
        }
        Some(Ok(PgWireFrontendMessage::CopyDone(_))) => {
            feed(socket, PgWireBackendMessage::CopyDone(CopyDone::new()))
                .await
                .map_err(io)?;
            feed(socket, complete("START_STREAMING"))
                .await
                .map_err(io)?;
            Ok(Some(Flow::Continue))
        }
        Some(Ok(PgWireFrontendMessage::Terminate(_))) | None | Some(Err(_)) => {
            Ok(Some(Flow::Close))
        }
        Some(Ok(_)) => Err(SqlError::new(
            "08P01",
            "unexpected message type during streaming replication",
        )),
    }
}

/// Sends the flushed WAL the client does not have yet (rule 1).
async fn send_pending(
    socket: &mut Socket,
    cx: &Context,
    st: &mut Streaming,
) -> Result<(), SqlError> {
    let mut wrote = false;
    loop {
        let mut flushed = cx.engine.flushed_wal_lsn();
        if let Some(end) = st.end_at {
            flushed = flushed.min(end);
        }
        if st.sent >= flushed {
            break;
        }
        let Some(mut bytes) = cx.engine.read_wal(st.sent)? else {
            check_segment(cx, st.sent)?;
            break;
        };
        bytes.truncate(MAX_SEND_BYTES);
        if bytes.is_empty() {
            break;
        }
        let mut msg = Vec::with_capacity(25 + bytes.len());
        msg.push(b'w');
        msg.extend_from_slice(&st.sent.0.to_be_bytes());
        msg.extend_from_slice(&flushed.0.to_be_bytes());
        msg.extend_from_slice(&pg_now().to_be_bytes());
        msg.extend_from_slice(&bytes);
        feed(
            socket,
            PgWireBackendMessage::CopyData(CopyData::new(msg.into())),
        )
        .await
        .map_err(io)?;
        st.sent += bytes.len() as u64;
        wrote = true;
        tokio_flush(socket, cx.timeout).await.map_err(io)?;
    }
    if wrote {
        st.last_send = Instant::now();
        let sent = st.sent;
        cx.senders.report(cx.slot, |s| {
            s.progress.sent = sent;
            if s.samples.len() >= LAG_SAMPLES {
                s.samples.pop_front();
            }
            s.samples.push_back((sent, st.last_send));
        });
    }
    Ok(())
}

/// Flushes, giving up after `timeout` (rule 2: a client that does not read).
async fn tokio_flush(socket: &mut Socket, timeout: Duration) -> std::io::Result<()> {
    let limit = if timeout.is_zero() {
        Duration::MAX
    } else {
        timeout
    };
    match tokio::time::timeout(limit, socket.flush()).await {
        Ok(r) => r.map_err(|e| std::io::Error::other(e.to_string())),
        Err(_) => Err(std::io::Error::other(
            "terminating walsender process due to replication timeout",
        )),
    }
}

/// Keepalives at half of `wal_sender_timeout`; the connection ends when a whole
/// timeout passes without a reply (PostgreSQL's replication timeout).
async fn keepalive(
    socket: &mut Socket,
    cx: &Context,
    st: &mut Streaming,
) -> Result<Option<Flow>, SqlError> {
    if cx.timeout.is_zero() {
        return Ok(None);
    }
    if st.last_reply.elapsed() >= cx.timeout {
        (cx.log)("LOG:  terminating walsender process due to replication timeout");
        return Ok(Some(Flow::Close));
    }
    // Rule 10: PostgreSQL pings half a timeout after the last reply, whatever was
    // sent since (WAL sent is no sign the standby is there).
    if !st.keepalive_pending && st.last_reply.elapsed() >= cx.timeout / 2 {
        send_keepalive(socket, cx, st, true).await?;
        st.keepalive_pending = true;
    }
    Ok(None)
}

/// A keepalive ('k'): the flushed WAL end, now, and whether a reply is asked for.
async fn send_keepalive(
    socket: &mut Socket,
    cx: &Context,
    st: &mut Streaming,
    reply: bool,
) -> Result<(), SqlError> {
    let mut msg = Vec::with_capacity(18);
    msg.push(b'k');
    msg.extend_from_slice(&cx.engine.flushed_wal_lsn().0.to_be_bytes());
    msg.extend_from_slice(&pg_now().to_be_bytes());
    msg.push(u8::from(reply));
    feed(
        socket,
        PgWireBackendMessage::CopyData(CopyData::new(msg.into())),
    )
    .await
    .map_err(io)?;
    tokio_flush(socket, cx.timeout).await.map_err(io)?;
    st.last_send = Instant::now();
    Ok(())
}
