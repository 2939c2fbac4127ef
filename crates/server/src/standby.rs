//! The standby's side of the server: the engine as the WAL receiver's sink, and the
//! receiver's task, started when the cluster is a standby (`standby.signal`).
//!
//! Entry point: [`start_receiver`].
//!
//! Rules (cited as "server standby rule N"):
//! 1. The receiver writes what the primary sends into the standby's `pg_wal` through
//!    the engine (standby rule 1), which fsyncs before replay may read it; a failed
//!    write or fsync is the engine's PANIC.
//! 2. A standby with no `primary_conninfo` streams from nobody: it says so once and
//!    serves what it has replayed.

use crate::config::ServerConfig;
use crate::walreceiver::{self, Conninfo, ReceiverSettings, ReceiverSink, ReceiverState};
use parking_lot::Mutex;
use std::sync::Arc;
use strata_engine::{Engine, LogSink};
use strata_types::Lsn;

/// `strata promote -D DIR` (PostgreSQL's `pg_ctl promote`): writes the `promote`
/// file the standby's startup thread looks for (standby rule 10), then waits up to
/// `wait_secs` (0: not at all) for `standby.signal` to go, which the promotion's end
/// does.
pub fn promote(data: &std::path::Path, wait_secs: u64) -> Result<(), String> {
    let signal = data.join("standby.signal");
    if !signal.exists() {
        return Err(format!(
            "cannot promote server: server is not in standby mode (no \"{}\")",
            signal.display()
        ));
    }
    let pid = crate::server::read_pid(data)
        .filter(|p| crate::server::pid_alive(*p))
        .ok_or_else(|| format!("no server running in \"{}\"", data.display()))?;
    let file = data.join("promote");
    std::fs::write(&file, b"").map_err(|e| {
        format!(
            "could not write promote signal file \"{}\": {e}",
            file.display()
        )
    })?;
    if wait_secs == 0 {
        eprintln!("server promoting");
        return Ok(());
    }
    eprintln!("waiting for server to promote...");
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(wait_secs);
    while signal.exists() {
        if std::time::Instant::now() > deadline || !crate::server::pid_alive(pid) {
            return Err("server did not promote in time".into());
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    eprintln!("server promoted");
    Ok(())
}

/// The engine, as the WAL receiver sees it.
pub struct EngineSink {
    pub engine: Arc<Engine>,
    pub log: LogSink,
    /// For `pg_stat_wal_receiver`.
    pub state: Mutex<ReceiverState>,
    /// The replay position, sent by the startup thread as replay advances.
    pub replay: tokio::sync::watch::Sender<Lsn>,
}

impl ReceiverSink for EngineSink {
    fn system_identifier(&self) -> u64 {
        self.engine.system_identifier()
    }
    fn timeline(&self) -> u32 {
        self.engine.timeline()
    }
    fn start_lsn(&self) -> Lsn {
        self.engine.receive_start().unwrap_or_default()
    }
    fn write(&self, start: Lsn, data: &[u8]) -> Result<(), String> {
        self.engine
            .receive_wal(start, data)
            .map_err(|e| e.to_string())
    }
    fn flush(&self) -> Result<Lsn, String> {
        self.engine.flush_received_wal().map_err(|e| e.to_string())
    }
    fn replayed(&self) -> Lsn {
        self.engine.replayed_lsn()
    }
    fn oldest_needed_xid(&self) -> u32 {
        self.engine.oldest_needed_xid().0
    }
    fn replay_progress(&self) -> Option<tokio::sync::watch::Receiver<Lsn>> {
        Some(self.replay.subscribe())
    }
    fn log(&self, line: &str) {
        (self.log)(line)
    }
    fn set_state(&self, state: ReceiverState) {
        *self.state.lock() = state;
    }
    fn adopt_timeline(&self, tli: u32, history: &str) -> Result<(), String> {
        self.engine
            .adopt_timeline(tli, history)
            .map_err(|e| e.to_string())
    }
}

/// Starts the WAL receiver on the runtime if the engine is a standby with a
/// `primary_conninfo` (rule 2). Returns the sink (its state is the receiver's).
pub fn start_receiver(
    engine: &Arc<Engine>,
    cfg: &ServerConfig,
    log: &LogSink,
    stop: tokio::sync::watch::Receiver<bool>,
) -> Result<Option<Arc<EngineSink>>, String> {
    if !engine.in_recovery() || engine.archive_recovery() {
        return Ok(None);
    }
    if cfg.primary_conninfo.is_empty() {
        log("WARNING:  standby mode without primary_conninfo: no WAL will be streamed; the standby serves what it has replayed");
        return Ok(None);
    }
    let conninfo = Conninfo::parse(&cfg.primary_conninfo)
        .map_err(|e| format!("invalid primary_conninfo: {e}"))?;
    let mut settings = ReceiverSettings::new(conninfo);
    settings.slot_name = Some(cfg.primary_slot_name.clone()).filter(|s| !s.is_empty());
    settings.status_interval = cfg.wal_receiver_status_interval;
    settings.hot_standby_feedback = cfg.hot_standby_feedback;
    settings.timeout = cfg.wal_receiver_timeout;
    settings.retry_interval = cfg.wal_retrieve_retry_interval;
    let replay = tokio::sync::watch::Sender::new(engine.replayed_lsn());
    let tx = replay.clone();
    engine.on_replayed(Arc::new(move |lsn| {
        tx.send_replace(lsn);
    }));
    let sink = Arc::new(EngineSink {
        engine: engine.clone(),
        log: log.clone(),
        state: Mutex::new(ReceiverState::default()),
        replay,
    });
    // The receiver stops with the server, or once the standby is promoted.
    let (tx, rx) = tokio::sync::watch::channel(false);
    let (e, mut server_stop) = (engine.clone(), stop);
    tokio::spawn(async move {
        let mut tick = tokio::time::interval(std::time::Duration::from_millis(50));
        loop {
            tokio::select! {
                _ = server_stop.changed() => break,
                _ = tick.tick() => if !e.in_recovery() { break },
            }
        }
        let _ = tx.send(true);
    });
    tokio::spawn(walreceiver::run(settings, sink.clone(), rx));
    Ok(Some(sink))
}
