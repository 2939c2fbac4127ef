//! Standby mode: a cluster that replays its primary's WAL continuously and serves
//! read-only queries meanwhile (hot standby).
//!
//! Entry points: [`RecoveryState`] (in `Shared`: what the WAL receiver, the sessions
//! and the startup thread share), [`spawn`] (the startup thread, from `Engine::open`
//! when `standby.signal` exists), and the `Engine` methods at the end of this file
//! (`in_recovery`, `receive_wal`, `flush_received_wal`, `replayed_lsn`, ...).
//!
//! The startup thread runs the same redo as crash recovery (`recovery::Redo`), record by
//! record, forever:
//!
//! ```text
//!  local WAL ──► replay to its end ──► consistent? ──► catalog loaded, hot
//!                                          │
//!  WAL receiver ─► ReceivedWal (write, fsync) ─► flushed end ─► limit of the reader
//!                                                               └─► replay, wait, ...
//! ```
//!
//! Rules (cited as "standby rule N"):
//! 1. Only WAL the standby has made durable is replayed (wal rule 8): the reader is
//!    limited to the received-and-fsynced end, so a page never reaches disk ahead of
//!    WAL the standby could lose, and replay never reads a half-written record.
//! 2. The standby is consistent once its local WAL is replayed and, when it started
//!    from a base backup, the backup's BACKUP_END record is too (recovery rule 10).
//!    Before that no session is admitted (57P03); from then on every page on disk is
//!    at or behind the replay position, since a page is written only after the WAL of
//!    its changes was replayed.
//! 3. Sessions are read-only (25006): no transaction begins, no WAL is inserted, no
//!    checkpoint runs; `CHECKPOINT` asks the startup thread for a restartpoint.
//! 4. Snapshots on a standby are the primary's: one writer, so the xid being replayed
//!    is the one running transaction; a scan started before its commit was replayed
//!    never sees it (engine rule 9), and replay sets the running xid and the next xid
//!    under the counters lock, as `Txn::xid` does on a primary.
//! 5. The catalog cache follows replay: a transaction's catalog rows (its inserts and
//!    deletes in `pg_tablespace`, `pg_database`, `pg_authid` and each `pg_class`
//!    and `pg_statistic`) are gathered as
//!    they replay and applied to the cache when its commit replays, before its dropped
//!    files go — O(rows it changed), and a new database's relations and statistics
//!    are read from its `pg_class` and `pg_statistic`. A transaction already running at the checkpoint replay started from
//!    may have catalog rows before it: its commit reloads the whole cache (once per
//!    start).
//! 6. A dropped or truncated relation's pages are never read by a standby query: drops
//!    take the drop lock exclusively (engine rule 8), and a scan whose relation went
//!    between two of its batches fails with 40001, as on a primary.
//! 7. A restartpoint (PostgreSQL's checkpoint during recovery) runs in the startup
//!    thread between records, at a replayed checkpoint record once
//!    `checkpoint_timeout` has passed or on request: dirty pages written, the commit
//!    log and changed files synced, then the control file names that checkpoint record
//!    (state "in archive recovery") and WAL before its redo point is removed. A restart
//!    replays from there. Any failure is a PANIC (engine rule 7).
//! 8. A replay error stops the standby with a PANIC: replay never skips a record.
//! 9. Conflicts with standby queries (PostgreSQL's recovery conflicts): before a
//!    prune removes tuples whose deleter is `x`, replay waits up to
//!    `max_standby_streaming_delay` for every snapshot that may still see them
//!    (horizon at or below `x`) to end, then cancels those left: the conflict horizon
//!    rises to `x`, and a scan checks it under each page's lock — the lock the prune
//!    needs — so it fails (40001) before it could read a pruned page. Before a commit's
//!    drops, replay waits the same way for scans of the dropped relations and
//!    databases; then the drop takes the drop lock and a scan still running fails at
//!    its next batch (rule 6). WAL restored from the archive waits
//!    `max_standby_archive_delay` instead, as PostgreSQL's does.
//! 10. Promotion (`Engine::promote`, or a `promote` file): the received WAL is closed
//!     (no write or flush after), everything durable is replayed, then recovery ends
//!     as crash recovery does (`Redo::finish`), the next timeline's history file is
//!     made durable before any WAL of it, the WAL opens for appending at the end of
//!     replay, an end-of-recovery checkpoint names the new timeline, `standby.signal`
//!     goes, and only then are writes admitted.
//! 11. Archived WAL (`restore_command`): with `recovery.signal` (archive recovery),
//!     once the local WAL is replayed each next segment is fetched with
//!     `restore_command` into `pg_wal` (through `RECOVERYXLOG`, fsynced, renamed) and
//!     replayed; when the archive has no more, or at `recovery_target_lsn` (replay
//!     stops before the first record at or after it), recovery ends as a promotion
//!     does, on a new timeline. A standby uses it when its stream has been silent for
//!     a second, e.g. when the primary no longer has the WAL it needs.

use crate::catalog::{self, DbEntry, Overlay, RelEntry, SpcEntry, Tid};
use crate::records::{CheckpointRecord, RM_XLOG, XLOG_CHECKPOINT};
use crate::recovery::{load_catalog, Redo};
use crate::{corrupt, heap, EngineError, RecoveryInfo, Result, Shared};
use parking_lot::{Condvar, Mutex};
use rustc_hash::FxHashMap;
use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, OnceLock};
use std::time::{Duration, Instant};
use strata_types::{Lsn, RelKey, Xid};
use strata_wal::control::{ClusterState, ControlFile};
use strata_wal::{ReceivedWal, Record, WalReader};

/// Per record type (rmgr, info): records replayed and seconds spent in their redo.
pub type ReplayStats = BTreeMap<(u8, u8), (u64, Duration)>;

/// What the startup thread, the WAL receiver and the sessions share (in `Shared`).
#[derive(Default)]
pub(crate) struct RecoveryState {
    /// The cluster is a standby still in recovery.
    pub in_recovery: AtomicBool,
    /// Standby rule 2: sessions may read.
    pub consistent: AtomicBool,
    /// End of the last record replayed.
    pub replayed: AtomicU64,
    /// The standby's copy of the primary's WAL, once the local WAL is replayed.
    pub received: OnceLock<ReceivedWal>,
    /// Bumped by the receiver's flushes and by requests; the startup thread waits on it.
    pub wake: Mutex<u64>,
    pub wake_cv: Condvar,
    /// Replay progress, for waiters on the replay position (`wait_for_replay`).
    pub progress: Mutex<()>,
    pub progress_cv: Condvar,
    /// Told the replay position with every `progress_cv` notification.
    pub on_replay: OnceLock<strata_wal::LsnListener>,
    pub stop: AtomicBool,
    pub restartpoint_requested: AtomicBool,
    /// Standby rule 10: promotion asked for (`strata promote`, `pg_promote()`).
    pub promote_requested: AtomicBool,
    /// Promotion has begun: no more WAL is received.
    pub receiving_closed: AtomicBool,
    /// The checkpointer a promotion starts (the engine joins it at close).
    pub checkpointer: Mutex<Option<std::thread::JoinHandle<()>>>,
    pub stats: Mutex<ReplayStats>,
    /// Standby rule 9: snapshots with a horizon at or below this xid are cancelled
    /// (0: none).
    pub conflict_horizon: std::sync::atomic::AtomicU32,
    /// The commit time of the last commit replayed (Unix microseconds; 0: none).
    pub last_commit_unix_us: AtomicU64,
    /// Archive recovery (rule 11), not a streaming standby.
    pub archive_only: AtomicBool,
    /// Segments restored from the archive at or after the one replay is in (rule 9:
    /// their conflicts wait `max_standby_archive_delay`).
    pub restored_segments: Mutex<std::collections::BTreeSet<u64>>,
    /// Replay stopped before this record (its LSN and its predecessor's) because
    /// `recovery_target_lsn` was reached: recovery ends there.
    pub target_reached: Mutex<Option<(Lsn, Lsn)>>,
    /// Standby rule 9: the relations standby scans are reading, with counts.
    pub scanning: Mutex<FxHashMap<RelKey, usize>>,
}

/// A standby scan of a relation, registered while it runs (standby rule 9).
pub(crate) struct ScanGuard<'a> {
    sh: &'a Shared,
    rel: RelKey,
}

impl<'a> ScanGuard<'a> {
    /// Registers a scan of `rel` if the cluster is a standby.
    pub fn new(sh: &'a Shared, rel: RelKey) -> Option<ScanGuard<'a>> {
        if !sh.recovery.in_recovery.load(Ordering::Acquire) {
            return None;
        }
        *sh.recovery.scanning.lock().entry(rel).or_default() += 1;
        Some(ScanGuard { sh, rel })
    }
}

impl Drop for ScanGuard<'_> {
    fn drop(&mut self) {
        let mut m = self.sh.recovery.scanning.lock();
        if let Some(n) = m.get_mut(&self.rel) {
            *n -= 1;
            if *n == 0 {
                m.remove(&self.rel);
            }
        }
    }
}

/// Whether the record replay is at came from the archive: archive recovery, or a
/// segment the standby restored (rule 11).
fn replaying_archived(sh: &Shared) -> bool {
    if sh.recovery.archive_only.load(Ordering::Acquire) {
        return true;
    }
    let segno = sh.recovery.replayed.load(Ordering::Acquire) / sh.wal_segment_bytes;
    let mut restored = sh.recovery.restored_segments.lock();
    while restored.first().is_some_and(|&s| s < segno) {
        restored.pop_first(); // replay is past it
    }
    restored.contains(&segno)
}

/// Waits while `busy` holds, up to `max_standby_streaming_delay` (or
/// `max_standby_archive_delay` for archived WAL); whether it still holds (the
/// conflict must be resolved by cancelling). Polls every 5 ms.
fn wait_out(sh: &Shared, busy: &dyn Fn() -> bool) -> bool {
    let started = Instant::now();
    let delay = if replaying_archived(sh) {
        sh.settings.max_standby_archive_delay
    } else {
        sh.settings.max_standby_delay
    };
    while busy() {
        if delay.is_some_and(|d| started.elapsed() >= d) || sh.recovery.stop.load(Ordering::Acquire)
        {
            return true;
        }
        std::thread::sleep(Duration::from_millis(5));
    }
    false
}

/// Standby rule 9: before a prune removes tuples deleted by `xid` (or older).
pub(crate) fn resolve_snapshot_conflict(sh: &Shared, xid: Xid) {
    if xid == Xid::INVALID {
        return;
    }
    // Snapshots already cancelled (at or below the horizon) are not waited for again.
    let conflicting = || {
        let w = sh.recovery.conflict_horizon.load(Ordering::Acquire);
        w < xid.0 && sh.snapshots.lock().range(Xid(w + 1)..=xid).next().is_some()
    };
    if wait_out(sh, &conflicting) {
        sh.recovery
            .conflict_horizon
            .fetch_max(xid.0, Ordering::AcqRel);
        sh.log(&format!(
            "canceling queries on the standby: replay must remove row versions deleted by transaction {} that they may still see",
            xid.0
        ));
    }
}

/// Standby rule 9: before a commit's drops, waits for standby scans of what it drops.
pub(crate) fn wait_for_scans(sh: &Shared, c: &crate::records::CommitRecord) {
    if c.dropped_rels.is_empty() && c.dropped_dbs.is_empty() {
        return;
    }
    let busy = || {
        let m = sh.recovery.scanning.lock();
        m.keys()
            .any(|r| c.dropped_rels.contains(r) || c.dropped_dbs.iter().any(|(db, _)| *db == r.db))
    };
    if wait_out(sh, &busy) {
        sh.log("canceling queries on the standby: replay must drop the relations they read");
    }
}

impl RecoveryState {
    fn wake(&self) {
        *self.wake.lock() += 1;
        self.wake_cv.notify_all();
    }
}

/// Where the standby's replay starts (from `recovery::startup`).
pub(crate) struct StandbyStart {
    /// `recovery.signal` without `standby.signal`: archive recovery (rule 11), which
    /// ends, rather than waits, when the archive has no more WAL.
    pub archive_only: bool,
    pub seg_bytes: u64,
    pub ckpt_lsn: Lsn,
    pub ckpt: CheckpointRecord,
    pub ckpt_end: Lsn,
    /// The base backup being recovered (recovery rule 10), if any.
    pub backup_start: Option<Lsn>,
}

/// A catalog row a transaction inserted (`Some(tuple)`) or deleted (standby rule 5).
pub(crate) struct CatalogRow {
    pub rel: RelKey,
    pub tid: Tid,
    pub inserted: bool,
    pub tuple: Vec<u8>,
}

/// Starts the startup thread; returns once the local WAL is replayed (or replay
/// failed), with what that first pass did.
pub(crate) fn spawn(
    sh: Arc<Shared>,
    start: StandbyStart,
) -> Result<(std::thread::JoinHandle<()>, RecoveryInfo)> {
    sh.recovery.in_recovery.store(true, Ordering::Release);
    sh.recovery
        .archive_only
        .store(start.archive_only, Ordering::Release);
    let (tx, rx) = std::sync::mpsc::channel();
    let handle = std::thread::Builder::new()
        .name("startup".into())
        .spawn(move || run(&sh, start, tx))
        .map_err(|e| EngineError::Io {
            op: "spawn the startup thread for",
            path: "standby".into(),
            source: e,
        })?;
    match rx.recv() {
        Ok(Ok(info)) => Ok((handle, info)),
        Ok(Err(e)) => {
            let _ = handle.join();
            Err(e)
        }
        Err(_) => {
            let _ = handle.join();
            Err(corrupt("the startup process ended during recovery"))
        }
    }
}

/// The startup thread: the local WAL, then the received WAL as it becomes durable.
fn run(
    sh_arc: &Arc<Shared>,
    start: StandbyStart,
    ready: std::sync::mpsc::Sender<Result<RecoveryInfo>>,
) {
    let sh: &Shared = sh_arc;
    let mut ctx = Redo::new(sh, start.backup_start, true);
    if let Some((xid, creates)) = &start.ckpt.running {
        ctx.unfinished.insert(*xid, creates.clone());
        ctx.reload_at_commit = Some(*xid);
    }
    let began = Instant::now();
    let first = local_pass(&mut ctx, &start);
    let mut reader = match first {
        Ok((reader, records)) => {
            let info = RecoveryInfo {
                records,
                redo_seconds: began.elapsed().as_secs_f64(),
                start: start.ckpt.redo,
                end: reader.end(),
                aborted_unfinished: 0,
            };
            let _ = ready.send(Ok(info));
            reader
        }
        Err(e) => {
            let _ = ready.send(Err(e));
            return;
        }
    };
    let mut last_ckpt = (start.ckpt_lsn, start.ckpt);
    let mut last_restartpoint = Instant::now();
    let streamed = stream_pass(
        &mut ctx,
        &mut reader,
        &mut last_ckpt,
        &mut last_restartpoint,
    );
    match streamed {
        Ok(true) => {
            let at = sh.recovery.target_reached.lock().take();
            let (end, last) = at.unwrap_or((reader.end(), reader.last_lsn()));
            if let Err(e) = promote(ctx, (end, last), sh_arc) {
                sh.fatal()
                    .raise(format!("could not promote the standby: {e}"));
            }
        }
        Ok(false) => sh.log("startup process: standby replay stopped"),
        Err(e) => {
            sh.fatal()
                .raise(format!("could not replay WAL on the standby: {e}"));
        }
    }
}

/// Standby rule 10: ends recovery at the end of the WAL replayed and starts a new
/// timeline there, as a primary.
fn promote(ctx: Redo<'_>, (end, last): (Lsn, Lsn), sh_arc: &Arc<Shared>) -> Result<()> {
    let sh: &Shared = sh_arc;
    if ctx.backup.is_some() && !ctx.backup_end_seen {
        return Err(corrupt(
            "WAL ends before end of online backup: a standby cannot be promoted before it is consistent",
        ));
    }
    let label = ctx.backup.is_some();
    let hot = ctx.hot;
    let aborted = ctx.finish()?;
    *sh.running.lock() = None;
    let vfs = &sh.settings.vfs;
    let old = sh.timeline.load(Ordering::Acquire);
    let new = strata_wal::timeline::newest(&**vfs, &sh.dir, old) + 1;
    let io = |op, e| EngineError::Io {
        op,
        path: sh.dir.join("pg_wal"),
        source: e,
    };
    strata_wal::timeline::write_history(&**vfs, &sh.dir, new, old, end)
        .map_err(|e| io("write the timeline history in", e))?;
    sh.log(&format!("selected new timeline ID: {new}"));
    if sh.settings.archive_mode {
        let name = strata_wal::timeline::history_file_name(new);
        strata_wal::archive::mark_ready(&**vfs, &sh.dir, &name)
            .map_err(|e| io("mark ready for archiving in", e))?;
    }
    let wal = strata_wal::Wal::open(vfs, &sh.dir, sh.wal_segment_bytes, (end, last), new)?;
    if sh.settings.archive_mode {
        wal.enable_archiving();
    }
    sh.late_wal.install(Arc::new(wal));
    sh.timeline.store(new, Ordering::Release);
    if !hot {
        load_catalog(sh)?;
    }
    crate::checkpoint::checkpoint(sh, false, true, true)?; // end of recovery
    if label {
        crate::recovery::retire_backup_label(sh)?;
    }
    for f in ["standby.signal", "recovery.signal", "promote"] {
        let p = sh.dir.join(f);
        if vfs.exists(&p) {
            vfs.remove_file(&p).map_err(|e| io("remove", e))?;
        }
    }
    vfs.sync_dir(&sh.dir).map_err(|e| io("sync", e))?;
    sh.recovery.in_recovery.store(false, Ordering::Release);
    *sh.recovery.checkpointer.lock() = Some(crate::checkpoint::spawn_checkpointer(sh_arc.clone()));
    sh.log(&format!(
        "archive recovery complete: promoted at {end} on timeline {new} ({aborted} unfinished transaction(s) aborted)"
    ));
    sh.log("database system is ready to accept connections");
    sh.recovery.progress_cv.notify_all();
    Ok(())
}

/// Replays the local WAL to its end; creates the received WAL after it and becomes
/// consistent if it may (standby rule 2). Returns the reader and records replayed.
fn local_pass(ctx: &mut Redo<'_>, start: &StandbyStart) -> Result<(WalReader, u64)> {
    let sh = ctx.sh;
    sh.log(if start.archive_only {
        "starting archive recovery"
    } else {
        "entering standby mode"
    });
    let vfs = &sh.settings.vfs;
    let mut reader = WalReader::new(vfs, &sh.dir, start.seg_bytes, start.ckpt.redo, Lsn::INVALID)?;
    let mut stats = ReplayStats::new();
    let records = replay_available(ctx, &mut reader, &mut stats, &mut |_, _| Ok(()))?;
    if records > 0 {
        sh.log(&format!("redo starts at {}", start.ckpt.redo));
    }
    if reader.end() < start.ckpt_end {
        return Err(corrupt(format!(
            "WAL ends at {} ({}), before the end of the checkpoint record at {} that recovery started from",
            reader.end(),
            reader.stop_reason().map(|r| r.to_string()).unwrap_or_default(),
            start.ckpt_lsn
        )));
    }
    let tli = sh.timeline.load(Ordering::Acquire);
    let received = ReceivedWal::new(vfs, &sh.dir, start.seg_bytes, reader.end(), tli)?;
    reader.set_limit(received.flushed_lsn());
    if sh.recovery.received.set(received).is_err() {
        unreachable!("the received WAL is set once");
    }
    publish_stats(sh, &mut stats);
    maybe_consistent(ctx, reader.end())?;
    Ok((reader, records))
}

/// Standby rule 2: once consistent, the catalog is loaded and sessions are admitted.
fn maybe_consistent(ctx: &mut Redo<'_>, at: Lsn) -> Result<()> {
    let sh = ctx.sh;
    if sh.recovery.consistent.load(Ordering::Acquire) {
        return Ok(());
    }
    if ctx.backup.is_some() && !ctx.backup_end_seen {
        return Ok(());
    }
    load_catalog(sh)?;
    ctx.hot = true;
    ctx.consistent_at = Some(at);
    // A transaction unfinished now may have catalog rows from before the checkpoint
    // replay started at; one that already ended needs no reload (standby rule 5).
    if let Some(x) = ctx.reload_at_commit {
        if !ctx.unfinished.contains_key(&x) {
            ctx.reload_at_commit = None;
        }
    }
    sh.recovery.consistent.store(true, Ordering::Release);
    sh.log(&format!("consistent recovery state reached at {at}"));
    sh.log("database system is ready to accept read-only connections");
    Ok(())
}

/// Replays every record the reader yields now; returns how many. `each` sees every
/// checkpoint record replayed.
fn replay_available(
    ctx: &mut Redo<'_>,
    reader: &mut WalReader,
    stats: &mut ReplayStats,
    each: &mut dyn FnMut(&mut Redo<'_>, &Record) -> Result<()>,
) -> Result<u64> {
    let sh = ctx.sh;
    let mut n = 0;
    while let Some(r) = reader.next_record()? {
        if let Some(target) = sh.settings.recovery_target_lsn.filter(|t| r.lsn >= *t) {
            // Rule 11: recovery stops before this record.
            *sh.recovery.target_reached.lock() = Some((r.lsn, r.prev));
            sh.log(&format!(
                "recovery stopping before WAL location (LSN) \"{target}\": next record at {}",
                r.lsn
            ));
            break;
        }
        let t = Instant::now();
        ctx.apply(&r).map_err(|e| {
            corrupt(format!(
                "could not replay record at {} ({}): {e}",
                r.lsn,
                crate::records::record_name(r.rmgr, r.info)
            ))
        })?;
        let s = stats.entry((r.rmgr.0, r.info)).or_default();
        s.0 += 1;
        s.1 += t.elapsed();
        sh.recovery.replayed.store(r.end.0, Ordering::Release);
        if r.rmgr == RM_XLOG && r.info == XLOG_CHECKPOINT {
            each(ctx, &r)?;
        }
        n += 1;
        if n % 64 == 0 {
            replay_progressed(sh);
        }
    }
    replay_progressed(sh);
    Ok(n)
}

/// Wakes whoever waits on the replay position: sessions and the WAL receiver.
fn replay_progressed(sh: &Shared) {
    sh.recovery.progress_cv.notify_all();
    if let Some(f) = sh.recovery.on_replay.get() {
        f(Lsn(sh.recovery.replayed.load(Ordering::Acquire)));
    }
}

fn publish_stats(sh: &Shared, stats: &mut ReplayStats) {
    if stats.is_empty() {
        return;
    }
    let mut all = sh.recovery.stats.lock();
    for (k, (n, d)) in std::mem::take(stats) {
        let e = all.entry(k).or_default();
        e.0 += n;
        e.1 += d;
    }
}

/// Rule 11: fetches the segment holding `need` (the first byte replay lacks) with `restore_command`
/// (archive recovery, or a standby whose stream has nothing for it), installs it in
/// `pg_wal` durably, and lets replay read through its end. Whether one was restored.
/// A standby tries only once its stream has been silent for a second, so a restored
/// segment never races the receiver's writes into the same file.
fn restore_next(sh: &Shared, received: &ReceivedWal, need: Lsn) -> Result<bool> {
    let Some(cmd) = &sh.settings.restore_command else {
        return Ok(false);
    };
    let archive_only = sh.recovery.archive_only.load(Ordering::Acquire);
    if !archive_only && !received.quiet_for(Duration::from_secs(1)) {
        return Ok(false);
    }
    let seg = sh.wal_segment_bytes;
    let segno = need.0 / seg;
    let tli = sh.timeline.load(Ordering::Acquire);
    let history =
        strata_wal::timeline::read_history(&*sh.settings.vfs, &sh.dir, tli).map_err(|e| {
            EngineError::Io {
                op: "read the timeline history in",
                path: sh.dir.join("pg_wal"),
                source: e,
            }
        })?;
    let owner = strata_wal::timeline::segment_timeline(&history, tli, segno, seg);
    let name = strata_wal::segment_file_name(owner, segno, seg);
    let restored = restore_file(sh, cmd, &name)?;
    if restored {
        sh.recovery.restored_segments.lock().insert(segno);
        received.restored_through(Lsn((segno + 1) * seg));
        sh.log(&format!("restored log file \"{name}\" from archive"));
    }
    Ok(restored)
}

/// Runs `restore_command` for WAL file `name` into `pg_wal/RECOVERYXLOG`, then renames
/// it into place and makes it durable. False if the command fails (not archived).
fn restore_file(sh: &Shared, cmd: &str, name: &str) -> Result<bool> {
    let tmp = sh.dir.join("pg_wal").join("RECOVERYXLOG");
    let line = cmd
        .replace("%%", "\u{0}")
        .replace("%f", name)
        .replace("%p", "pg_wal/RECOVERYXLOG")
        .replace("%r", "000000010000000000000000")
        .replace('\u{0}', "%");
    let io = |op, source| EngineError::Io {
        op,
        path: tmp.clone(),
        source,
    };
    let _ = std::fs::remove_file(&tmp);
    let status = std::process::Command::new("sh")
        .arg("-c")
        .arg(&line)
        .current_dir(&sh.dir)
        .status()
        .map_err(|e| io("run restore_command for", e))?;
    if !status.success() || !tmp.exists() {
        return Ok(false);
    }
    let vfs = &sh.settings.vfs;
    let dest = sh.dir.join("pg_wal").join(name);
    let f = vfs.open(&tmp, false).map_err(|e| io("open", e))?;
    f.sync().map_err(|e| io("fsync", e))?;
    drop(f);
    vfs.rename(&tmp, &dest).map_err(|e| io("rename", e))?;
    vfs.sync_dir(&sh.dir.join("pg_wal"))
        .map_err(|e| io("fsync the directory of", e))?;
    Ok(true)
}

/// Standby rule 10: promotion was asked for, by `Engine::promote` or a `promote`
/// file in the data directory (what `strata promote` writes).
fn promotion_asked(sh: &Shared) -> bool {
    sh.recovery.promote_requested.load(Ordering::Acquire) || sh.dir.join("promote").exists()
}

/// The received WAL, replayed as it becomes durable, until the engine stops (false)
/// or a promotion is asked for (true: everything received has been replayed).
fn stream_pass(
    ctx: &mut Redo<'_>,
    reader: &mut WalReader,
    last_ckpt: &mut (Lsn, CheckpointRecord),
    last_restartpoint: &mut Instant,
) -> Result<bool> {
    let sh = ctx.sh;
    let rs = &sh.recovery;
    let received = rs.received.get().expect("set by the local pass");
    let mut stats = ReplayStats::new();
    loop {
        let seen = *rs.wake.lock();
        if rs.stop.load(Ordering::Acquire) {
            return Ok(false);
        }
        let target = rs.target_reached.lock().is_some();
        let closed = rs.receiving_closed.load(Ordering::Acquire);
        let flushed = received.flushed_lsn();
        let before = reader.end();
        if !target && flushed > before {
            reader.set_limit(flushed);
            reader.resume();
            let timeout = sh.settings.checkpoint_timeout;
            replay_available(ctx, reader, &mut stats, &mut |ctx, r| {
                let c = CheckpointRecord::decode(&r.payload).map_err(corrupt)?;
                *last_ckpt = (r.lsn, c);
                if last_restartpoint.elapsed() >= timeout {
                    restartpoint(ctx, last_ckpt)?;
                    *last_restartpoint = Instant::now();
                }
                Ok(())
            })?;
            publish_stats(sh, &mut stats);
            maybe_consistent(ctx, reader.end())?;
            if reader.end() != before {
                continue;
            }
            // No progress: the next record reaches into WAL not here yet.
        }
        let archive_done = !closed && !target && rs.archive_only.load(Ordering::Acquire);
        if !closed && !target && restore_next(sh, received, reader.end().max(flushed))? {
            continue; // rule 11: an archived segment is in pg_wal now
        }
        if target || archive_done || closed {
            received.close(); // rules 10, 11: recovery ends here
            rs.receiving_closed.store(true, Ordering::Release);
            if archive_done {
                sh.log(&format!(
                    "archive recovery: no more WAL in the archive after {}",
                    reader.end()
                ));
            }
            return Ok(true);
        }
        if !closed && promotion_asked(sh) {
            // Rule 10: nothing more is received; what is durable is replayed (the
            // next pass), then the standby is promoted.
            received.close();
            rs.receiving_closed.store(true, Ordering::Release);
            sh.log("received promote request");
            continue;
        }
        if rs.restartpoint_requested.swap(false, Ordering::AcqRel) {
            restartpoint(ctx, last_ckpt)?;
            *last_restartpoint = Instant::now();
        }
        let mut w = rs.wake.lock();
        if *w == seen && !rs.stop.load(Ordering::Acquire) {
            rs.wake_cv.wait_for(&mut w, Duration::from_millis(100));
        }
    }
}

/// Standby rule 7: a restartpoint at the last checkpoint record replayed.
fn restartpoint(ctx: &mut Redo<'_>, (lsn, ckpt): &(Lsn, CheckpointRecord)) -> Result<()> {
    let sh = ctx.sh;
    let started = Instant::now();
    let r = (|| -> Result<(usize, usize)> {
        sh.unlinks.settle(&sh.smgr)?; // unlink rule 1
        let written = sh.pool.flush_all_dirty()?;
        sh.clog.write_dirty(&*sh.settings.vfs)?;
        let synced = sh.smgr.sync_pending()?;
        let system_identifier = sh.ckpt.lock().system_identifier;
        ControlFile {
            state: ClusterState::InArchiveRecovery,
            system_identifier,
            checkpoint: *lsn,
            redo: ckpt.redo,
            next_xid: ckpt.next_xid.0,
            next_oid: ckpt.next_oid.0,
            next_relfilenumber: ckpt.next_relfilenumber,
            wal_segment_bytes: sh.wal_segment_bytes,
            checkpoint_time_unix_s: crate::checkpoint::unix_now(),
            timeline: sh.timeline.load(Ordering::Acquire),
        }
        .write(&*sh.settings.vfs, &sh.dir)?;
        Ok((written, synced))
    })();
    let (written, synced) = r.map_err(|e| sh.fatal().raise(format!("restartpoint failed: {e}")))?;
    let past_backup_end = ctx.consistent_at.is_some_and(|at| ckpt.redo >= at);
    if ctx.backup.is_some() && past_backup_end {
        crate::recovery::retire_backup_label(sh)?;
        ctx.backup = None;
    }
    let removed = if ctx.backup.is_none() {
        strata_wal::remove_segments_before(
            &sh.settings.vfs,
            &sh.dir,
            sh.wal_segment_bytes,
            ckpt.redo,
        )?
    } else {
        0
    };
    sh.ckpt.lock().count += 1;
    sh.log(&format!(
        "restartpoint complete: wrote {written} buffers; {removed} WAL file(s) removed; sync files={synced}; total={:.3} s; redo lsn={}",
        started.elapsed().as_secs_f64(),
        ckpt.redo
    ));
    sh.log(&format!("recovery restart point at {}", ckpt.redo));
    Ok(())
}

/// Standby rule 5: the catalog rows `xid` changed, applied to the cache at its commit.
/// O(rows), plus the relations of each database it created.
pub(crate) fn apply_catalog_rows(sh: &Shared, rows: Vec<CatalogRow>) -> Result<()> {
    end_sessions_of_dropped_databases(sh, &rows)?;
    let mut ov = Overlay::default();
    let mut new_dbs = Vec::new();
    for row in rows {
        let tid = row.tid;
        if row.rel == catalog::pg_tablespace() {
            let v = heap::decode_catalog_values(&catalog::tablespace_columns(), &row.tuple)
                .map_err(corrupt)?;
            let e = SpcEntry::from_values(&v, tid).map_err(corrupt)?;
            let name = e.name.clone();
            ov.spcs.insert(name, row.inserted.then(|| Arc::new(e)));
        } else if row.rel == catalog::pg_authid() {
            let v = heap::decode_catalog_values(&catalog::authid_columns(), &row.tuple)
                .map_err(corrupt)?;
            let e = catalog::RoleEntry::from_values(&v, tid).map_err(corrupt)?;
            let name = e.name.clone();
            ov.roles.insert(name, row.inserted.then(|| Arc::new(e)));
        } else if row.rel == catalog::pg_database() {
            let v = heap::decode_catalog_values(&catalog::database_columns(), &row.tuple)
                .map_err(corrupt)?;
            let e = DbEntry::from_values(&v, tid).map_err(corrupt)?;
            let name = e.name.clone();
            if row.inserted {
                new_dbs.push(e.clone());
            }
            ov.dbs.insert(name, row.inserted.then(|| Arc::new(e)));
        } else if row.rel.rel == catalog::PG_STATISTIC_REL {
            let v = heap::decode_catalog_values(&catalog::statistic_columns(), &row.tuple)
                .map_err(corrupt)?;
            let e = catalog::StatEntry::from_values(&v, tid).map_err(corrupt)?;
            let key = (row.rel.db, e.relid);
            ov.stats.insert(key, row.inserted.then(|| Arc::new(e)));
        } else {
            let v = heap::decode_catalog_values(&catalog::class_columns(), &row.tuple)
                .map_err(corrupt)?;
            let e = RelEntry::from_values(&v, tid).map_err(corrupt)?;
            let key = (row.rel.db, e.name.clone());
            ov.rels.insert(key, row.inserted.then(|| Arc::new(e)));
        }
    }
    let mut rels_of_new = Vec::new();
    for d in &new_dbs {
        let mut rels = FxHashMap::default();
        crate::recovery::scan_class(sh, d, &mut rels)?;
        let stats = crate::recovery::scan_statistic(sh, d)?;
        rels_of_new.push((d.oid, rels, stats));
    }
    let mut cache = sh.catalog.write();
    ov.apply(&mut cache);
    for (db, rels, stats) in rels_of_new {
        if cache.dbs.values().any(|d| d.oid == db) {
            cache.set_rels(db, rels);
            cache.set_stats(db, stats);
        }
    }
    Ok(())
}

/// Standby rule 9: before replay drops a database, the sessions connected to it end
/// (PostgreSQL's 57P04): its name is in the row the transaction deleted from
/// `pg_database`. O(rows).
fn end_sessions_of_dropped_databases(sh: &Shared, rows: &[CatalogRow]) -> Result<()> {
    let Some(hook) = &sh.settings.on_drop_database else {
        return Ok(());
    };
    for row in rows
        .iter()
        .filter(|r| !r.inserted && r.rel == catalog::pg_database())
    {
        let v = heap::decode_catalog_values(&catalog::database_columns(), &row.tuple)
            .map_err(corrupt)?;
        let e = DbEntry::from_values(&v, row.tid).map_err(corrupt)?;
        hook(&e.name);
    }
    Ok(())
}

/// Whether `rel` is one of the catalog heaps (standby rule 5).
pub(crate) fn is_catalog(rel: RelKey) -> bool {
    rel == catalog::pg_tablespace()
        || rel == catalog::pg_database()
        || rel == catalog::pg_authid()
        || rel.rel == catalog::PG_CLASS_REL
        || rel.rel == catalog::PG_STATISTIC_REL
}

/// Standby rule 4: replay of a record of `xid` makes it the running transaction.
pub(crate) fn note_running(sh: &Shared, xid: Xid) {
    let mut c = sh.counters.lock();
    if xid >= c.next_xid {
        c.next_xid = Xid(xid.0 + 1);
        *sh.running.lock() = Some((xid, Vec::new()));
    }
}

/// Standby rule 4: `xid` committed or aborted in replay.
pub(crate) fn note_ended(sh: &Shared, xid: Xid) {
    let _c = sh.counters.lock();
    let mut r = sh.running.lock();
    if r.as_ref().is_some_and(|(x, _)| *x == xid) {
        *r = None;
    }
}

impl crate::Engine {
    /// The cluster is a standby in recovery: read-only (standby rule 3).
    pub fn in_recovery(&self) -> bool {
        self.sh.recovery.in_recovery.load(Ordering::Acquire)
    }

    /// The cluster is in archive recovery (`recovery.signal`, standby rule 11), which
    /// streams from nobody.
    pub fn archive_recovery(&self) -> bool {
        self.in_recovery() && self.sh.recovery.archive_only.load(Ordering::Acquire)
    }

    /// A standby has reached a consistent state: sessions may read (standby rule 2).
    pub fn consistent(&self) -> bool {
        self.sh.recovery.consistent.load(Ordering::Acquire)
    }

    /// Where a WAL receiver should ask its primary to start: the end of the WAL the
    /// standby has made durable (unflushed bytes of a broken connection are forgotten).
    pub fn receive_start(&self) -> Option<Lsn> {
        self.sh.recovery.received.get().map(|r| r.restart_at())
    }

    /// WAL bytes from the primary at `lsn`; durable only after
    /// [`Engine::flush_received_wal`].
    pub fn receive_wal(&self, lsn: Lsn, bytes: &[u8]) -> Result<()> {
        let r = self.received()?;
        if self.sh.recovery.receiving_closed.load(Ordering::Acquire) {
            return Err(EngineError::NotSupported(
                "the standby is being promoted".into(),
            ));
        }
        r.write(lsn, bytes).map_err(|e| {
            self.sh
                .fatal()
                .raise(format!("could not write received WAL: {e}"))
        })
    }

    /// Fsyncs the received WAL and wakes replay; returns the durable end. A failure is
    /// a PANIC (engine rule 7).
    pub fn flush_received_wal(&self) -> Result<Lsn> {
        let r = self.received()?;
        let end = r.flush().map_err(|e| {
            self.sh
                .fatal()
                .raise(format!("could not fsync received WAL: {e}"))
        })?;
        self.sh.recovery.wake();
        Ok(end)
    }

    fn received(&self) -> Result<&ReceivedWal> {
        self.sh
            .recovery
            .received
            .get()
            .ok_or_else(|| EngineError::NotSupported("the cluster is not a standby".into()))
    }

    /// End of the WAL received and made durable (`pg_last_wal_receive_lsn()`).
    pub fn received_lsn(&self) -> Option<Lsn> {
        self.sh.recovery.received.get().map(|r| r.flushed_lsn())
    }

    /// When the last transaction replayed committed on the primary, Unix
    /// microseconds (`pg_last_xact_replay_timestamp()`); `None` before any.
    pub fn last_replayed_commit_unix_us(&self) -> Option<u64> {
        Some(self.sh.recovery.last_commit_unix_us.load(Ordering::Acquire)).filter(|t| *t > 0)
    }

    /// End of the last record replayed (`pg_last_wal_replay_lsn()`).
    pub fn replayed_lsn(&self) -> Lsn {
        Lsn(self.sh.recovery.replayed.load(Ordering::Acquire))
    }

    /// Waits until replay has reached `lsn` or `timeout` passes; true if reached.
    pub fn wait_for_replay(&self, lsn: Lsn, timeout: Duration) -> bool {
        let deadline = Instant::now() + timeout;
        let rs = &self.sh.recovery;
        let mut g = rs.progress.lock();
        while self.replayed_lsn() < lsn {
            if rs.progress_cv.wait_until(&mut g, deadline).timed_out() {
                return self.replayed_lsn() >= lsn;
            }
        }
        true
    }

    /// Replay's count and time per record type since start (rmgr, info) → (records,
    /// time): what the standby spends its time on.
    pub fn replay_stats(&self) -> ReplayStats {
        self.sh.recovery.stats.lock().clone()
    }

    /// Promotes the standby (standby rule 10) and, if `wait`, waits up to `timeout`
    /// for it to be done; whether it is (`pg_promote`). Err if not a standby.
    pub fn promote(&self, wait: bool, timeout: Duration) -> Result<bool> {
        if !self.in_recovery() {
            return Err(EngineError::NotInRecovery);
        }
        self.sh
            .recovery
            .promote_requested
            .store(true, Ordering::Release);
        self.sh.recovery.wake();
        if !wait {
            return Ok(true);
        }
        let deadline = Instant::now() + timeout;
        let rs = &self.sh.recovery;
        let mut g = rs.progress.lock();
        while self.in_recovery() {
            if rs.progress_cv.wait_until(&mut g, deadline).timed_out() {
                return Ok(!self.in_recovery());
            }
        }
        Ok(true)
    }

    /// The standby follows its primary onto timeline `tli` (timeline rule 3): the
    /// history file is stored durably first, then the timeline changes; the next
    /// restartpoint writes it into `pg_control`.
    pub fn adopt_timeline(&self, tli: u32, history: &str) -> Result<()> {
        if !self.in_recovery() {
            return Err(EngineError::NotInRecovery);
        }
        strata_wal::timeline::write_history_text(
            &*self.sh.settings.vfs,
            &self.sh.dir,
            tli,
            history,
        )
        .map_err(|source| EngineError::Io {
            op: "write the timeline history in",
            path: self.sh.dir.join("pg_wal"),
            source,
        })?;
        self.sh.timeline.store(tli, Ordering::Release);
        if let Some(received) = self.sh.recovery.received.get() {
            received.set_timeline(tli)?; // WAL rule 11: its own files from now on
        }
        Ok(())
    }

    /// Asks the startup thread for a restartpoint (`CHECKPOINT` on a standby).
    pub fn request_restartpoint(&self) {
        self.sh
            .recovery
            .restartpoint_requested
            .store(true, Ordering::Release);
        self.sh.recovery.wake();
    }

    /// Stops replay (shutdown of a standby).
    pub(crate) fn stop_standby(&self) {
        self.sh.recovery.stop.store(true, Ordering::Release);
        self.sh.recovery.wake();
    }
}
