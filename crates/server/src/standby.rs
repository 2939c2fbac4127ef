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

/// The engine, as the WAL receiver sees it.
pub struct EngineSink {
    pub engine: Arc<Engine>,
    pub log: LogSink,
    /// For `pg_stat_wal_receiver`.
    pub state: Mutex<ReceiverState>,
}

impl ReceiverSink for EngineSink {
    fn system_identifier(&self) -> u64 {
        self.engine.system_identifier()
    }
    fn timeline(&self) -> u32 {
        1
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
    fn log(&self, line: &str) {
        (self.log)(line)
    }
    fn set_state(&self, state: ReceiverState) {
        *self.state.lock() = state;
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
    if !engine.in_recovery() {
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
    settings.timeout = cfg.wal_receiver_timeout;
    settings.retry_interval = cfg.wal_retrieve_retry_interval;
    let sink = Arc::new(EngineSink {
        engine: engine.clone(),
        log: log.clone(),
        state: Mutex::new(ReceiverState::default()),
    });
    tokio::spawn(walreceiver::run(settings, sink.clone(), stop));
    Ok(Some(sink))
}
