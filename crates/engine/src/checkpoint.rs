//! Checkpoints: the cluster's creation, the checkpoint itself, and the checkpointer
//! thread.
//!
//! Entry points: [`init_cluster`], [`checkpoint`], [`spawn_checkpointer`]; [`xlog_redo`],
//! the redo of the XLOG records (CHECKPOINT and BACKUP_END here, NEXTOID and FPI from
//! `xact`); `Engine::start_backup` → [`OnlineBackup`] (a base backup's start and end).
//!
//! A checkpoint, in order (each step's cost in brackets):
//! 1. Take the redo point — the WAL insert position — and the running transaction's
//!    creates, under the redo-pointer lock held exclusively (engine rules 2, 4, 5). [O(1)]
//! 2. Flush the WAL to the redo point, then write every dirty page in file order; the
//!    pool finds them in its dirty index. [O(dirty pages · log)]
//! 3. Write the commit log's changed pages; fsync every file changed since the last
//!    checkpoint (smgr rule 6). [O(changes)]
//! 4. Insert the checkpoint record and flush it; write the control file naming it
//!    (atomically); write the replication slots' positions that moved; remove WAL
//!    segments wholly before the redo point, or before the oldest slot's restart LSN,
//!    `wal_keep_size` behind the insert position, or a running backup's start if
//!    earlier. [O(segments + slots + backups)]
//!
//! Rules:
//! 1. A crash at any step leaves the previous checkpoint in the control file, and all
//!    WAL from its redo point still there: segments go only after the new control
//!    file is durable.
//! 2. A timed or size-triggered checkpoint with no WAL inserted since the previous one
//!    has nothing to do and returns at once, as PostgreSQL skips it; a requested one
//!    (the CHECKPOINT command) always runs.
//! 3. Triggers: `checkpoint_timeout` since the last one, `max_wal_size` of WAL since
//!    its redo point, a request (`Engine::checkpoint`), shutdown.
//! 4. Any failure of a step is a PANIC (engine rule 7), and a PANIC latches: after a
//!    failed write or sync no later checkpoint can run, so none can move the redo
//!    point past changes that never reached the disk, or remove the WAL that holds
//!    them. Restart recovers them from WAL.
//! 6. With archiving on and `archive_timeout` set, the checkpointer switches a
//!    segment that has held WAL for longer than the timeout (wal rule 9), so it is
//!    archived within about that time even when little WAL is written.
//! 5. The checkpointer thread is also the WAL writer: every 100 ms it flushes WAL
//!    inserted but not yet flushed (`wal_writer`), so no record waits for the next
//!    commit to reach the disk and the standbys.

use crate::codec::Dec;
use crate::records::{
    BlockRef, CheckpointRecord, RM_XLOG, XLOG_BACKUP_END, XLOG_CHECKPOINT, XLOG_FPI, XLOG_NEXTOID,
    XLOG_SWITCH,
};
use crate::redo::{unknown_record, RedoContext};
use crate::{corrupt, EngineError, Result, Settings, Shared};
use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};
use strata_types::{Lsn, Oid, RelFileNumber, Xid};
use strata_wal::control::{ClusterState, ControlFile};
use strata_wal::{Record, Wal};

/// What one checkpoint did.
#[derive(Debug, Clone, Copy, Default)]
pub struct CheckpointStats {
    pub skipped: bool,
    pub redo: Lsn,
    /// Where the checkpoint record begins (what the control file names).
    pub lsn: Lsn,
    pub buffers_written: usize,
    pub files_synced: usize,
    pub segments_removed: usize,
    pub seconds: f64,
}

pub(crate) fn unix_now() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0)
}

/// Lays out a new data directory with an empty WAL holding one shutdown checkpoint
/// record, and a control file naming it. The directory is made 0700, as initdb makes
/// it (files are 0600: vfs rule 4).
pub fn init_cluster(dir: &Path, settings: &Settings) -> Result<()> {
    let io = |op, path: &Path, source| EngineError::Io {
        op,
        path: path.to_path_buf(),
        source,
    };
    if let Ok(mut it) = std::fs::read_dir(dir) {
        if it.next().is_some() {
            return Err(EngineError::NotEmpty(dir.to_path_buf()));
        }
    }
    let vfs = &settings.vfs;
    vfs.create_dir_all(dir)
        .map_err(|e| io("create directory", dir, e))?;
    std::fs::set_permissions(dir, std::fs::Permissions::from_mode(strata_vfs::DIR_MODE))
        .map_err(|e| io("set permissions of", dir, e))?;
    for sub in ["global", "base", "pg_tblspc", "pg_wal", "pg_xact"] {
        let p = dir.join(sub);
        vfs.create_dir_all(&p)
            .map_err(|e| io("create directory", &p, e))?;
    }
    let seg = settings.wal_segment_bytes;
    let wal = Wal::open(vfs, dir, seg, (Lsn(seg), Lsn::INVALID), 1)?;
    let first = Lsn(seg);
    let rec = CheckpointRecord {
        redo: first,
        next_xid: Xid::FIRST_NORMAL,
        next_oid: Oid(crate::catalog::FIRST_NORMAL_OID),
        next_relfilenumber: RelFileNumber(crate::catalog::FIRST_NORMAL_OID as u64),
        shutdown: true,
        running: None,
    };
    let (lsn, end) = wal.insert(RM_XLOG, XLOG_CHECKPOINT, 0, &rec.encode())?;
    wal.flush(end)?;
    let nanos = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_nanos() as u64)
        .unwrap_or(0);
    ControlFile {
        state: ClusterState::ShutDown,
        system_identifier: nanos ^ (std::process::id() as u64) << 12,
        checkpoint: lsn,
        redo: first,
        next_xid: rec.next_xid.0,
        next_oid: rec.next_oid.0,
        next_relfilenumber: rec.next_relfilenumber,
        wal_segment_bytes: seg,
        checkpoint_time_unix_s: unix_now(),
        timeline: 1,
    }
    .write(&**vfs, dir)?;
    Ok(())
}

/// Runs one checkpoint (module doc). `shutdown` marks the cluster shut down; `force`
/// runs it even with no WAL since the last one (the CHECKPOINT command, rule 2);
/// `log` writes PostgreSQL's "checkpoint complete" line. Any failure is a PANIC
/// (rule 4, engine rule 7).
pub fn checkpoint(sh: &Shared, shutdown: bool, force: bool, log: bool) -> Result<CheckpointStats> {
    sh.fatal().check()?;
    let _one = sh.ckpt_lock.lock();
    checkpoint_locked(sh, shutdown, force, log).map_err(|e| match e {
        EngineError::Fatal(_) => e,
        other => sh.fatal().raise(format!("checkpoint failed: {other}")),
    })
}

fn checkpoint_locked(
    sh: &Shared,
    shutdown: bool,
    force: bool,
    log: bool,
) -> Result<CheckpointStats> {
    let started = Instant::now();
    let (last_end, sysid) = {
        let st = sh.ckpt.lock();
        (st.last_end, st.system_identifier)
    };
    if !shutdown && !force && sh.wal().insert_lsn() == last_end {
        return Ok(CheckpointStats {
            skipped: true,
            ..Default::default()
        }); // rule 2
    }
    // Step 1.
    let (redo, running) = {
        let mut r = sh.redo_ptr.write();
        let redo = sh.wal().insert_lsn();
        *r = redo;
        (redo, sh.running.lock().clone())
    };
    // Step 2.
    sh.wal_flush(redo)?;
    sh.unlinks.settle(&sh.smgr)?; // unlink rule 1
    let buffers_written = sh.pool.flush_all_dirty()?;
    // Step 3.
    sh.clog.write_dirty(&*sh.settings.vfs)?;
    let files_synced = sh.smgr.sync_pending()?;
    // Step 4.
    let c = *sh.counters.lock();
    // OIDs up to the last NEXTOID record may have been handed out after the redo
    // point without another record: recovery must start beyond them (as PostgreSQL's
    // online checkpoints add oidCount).
    let next_oid = Oid(c.next_oid.0.max(c.oid_logged_upto.0));
    let rec = CheckpointRecord {
        redo,
        next_xid: c.next_xid,
        next_oid,
        next_relfilenumber: c.next_relfilenumber,
        shutdown,
        running,
    };
    let (lsn, end) = sh.wal_insert(RM_XLOG, XLOG_CHECKPOINT, 0, &rec.encode())?;
    sh.wal_flush(end)?;
    ControlFile {
        state: if shutdown {
            ClusterState::ShutDown
        } else {
            ClusterState::InProduction
        },
        system_identifier: sysid,
        checkpoint: lsn,
        redo,
        next_xid: c.next_xid.0,
        next_oid: next_oid.0,
        next_relfilenumber: c.next_relfilenumber,
        wal_segment_bytes: sh.wal().segment_bytes(),
        timeline: sh.timeline.load(std::sync::atomic::Ordering::Acquire),
        checkpoint_time_unix_s: unix_now(),
    }
    .write(&*sh.settings.vfs, &sh.dir)?;
    let segments_removed = sh.wal().remove_segments_before(keep_from(sh, redo)?)?; // rule 1
    {
        let mut st = sh.ckpt.lock();
        st.last_end = end;
        st.last_redo = redo;
        st.count += 1;
    }
    let stats = CheckpointStats {
        skipped: false,
        redo,
        lsn,
        buffers_written,
        files_synced,
        segments_removed,
        seconds: started.elapsed().as_secs_f64(),
    };
    if log {
        sh.log(&format!(
            "checkpoint complete: wrote {} buffers; {} WAL file(s) removed; sync files={}; total={:.3} s; redo lsn={}",
            stats.buffers_written, stats.segments_removed, stats.files_synced, stats.seconds, redo
        ));
    }
    Ok(stats)
}

/// Wal rule 9: a switch record, under the redo-pointer lock as every insert, then a
/// flush through the segment's end. A failure is a PANIC (engine rule 7).
pub(crate) fn switch_wal(sh: &Shared) -> Result<Lsn> {
    sh.fatal().check()?;
    let end = {
        let _r = sh.redo_ptr.read();
        sh.wal().switch_segment().map_err(|e| {
            sh.fatal()
                .raise(format!("could not insert WAL record: {e}"))
        })?
    };
    let upto = sh.wal().insert_lsn();
    sh.wal_flush(upto)?;
    Ok(end.unwrap_or(upto))
}

/// Rule 6 (`archive_timeout`): with archiving on, switches the segment when it has
/// held WAL for longer than the timeout. `since` is when the current segment began
/// receiving WAL (as this thread saw it).
fn archive_timeout(sh: &Shared, since: &mut Option<(u64, Instant)>) {
    let timeout = sh.settings.archive_timeout;
    let Some(wal) = sh.late_wal.wal.get() else {
        return;
    };
    if !sh.settings.archive_mode || timeout.is_zero() {
        return;
    }
    let insert = wal.insert_lsn().0;
    let seg = wal.segment_bytes();
    if insert.is_multiple_of(seg) {
        *since = None; // nothing in the current segment yet
        return;
    }
    let segno = insert / seg;
    match since {
        Some((s, t)) if *s == segno => {
            if t.elapsed() >= timeout {
                if let Err(e) = switch_wal(sh) {
                    sh.log(&format!("ERROR:  could not switch WAL segment: {e}"));
                }
                *since = None;
            }
        }
        _ => *since = Some((segno, Instant::now())),
    }
}

/// Rule 5 (PostgreSQL's WAL writer): WAL inserted but not flushed by a commit (VACUUM's
/// records, an abort's) is flushed within a tick, so WAL senders, which send only
/// flushed WAL, never leave it unsent. A failure is a PANIC (engine rule 7).
fn wal_writer(sh: &Shared) {
    let Some(wal) = sh.late_wal.wal.get() else {
        return;
    };
    let inserted = wal.insert_lsn();
    if inserted > wal.flushed_lsn() && sh.fatal().check().is_ok() {
        let _ = sh.wal_flush(inserted);
    }
}

/// The checkpointer thread (rule 3), which is also the WAL writer (rule 5). Polls every
/// 100 ms for the WAL distance; stops when `CkptState::shutdown` is set.
pub fn spawn_checkpointer(sh: Arc<Shared>) -> JoinHandle<()> {
    std::thread::Builder::new()
        .name("checkpointer".into())
        .spawn(move || {
            let mut last = Instant::now();
            let mut segment_since = None;
            loop {
                let (due, reason) = {
                    let mut st = sh.ckpt.lock();
                    if st.shutdown {
                        return;
                    }
                    sh.ckpt_cv.wait_for(&mut st, Duration::from_millis(100));
                    if st.shutdown {
                        return;
                    }
                    let distance = sh.wal().insert_lsn().checked_sub(st.last_redo).unwrap_or(0);
                    if std::mem::take(&mut st.requested) {
                        (true, "requested")
                    } else if last.elapsed() >= sh.settings.checkpoint_timeout {
                        (true, "time")
                    } else if distance >= sh.settings.max_wal_size_bytes {
                        (true, "wal")
                    } else {
                        (false, "")
                    }
                };
                wal_writer(&sh);
                archive_timeout(&sh, &mut segment_since);
                if due {
                    last = Instant::now();
                    match checkpoint(&sh, false, false, false) {
                        Ok(s) if !s.skipped => sh.log(&format!(
                            "checkpoint complete ({reason}): wrote {} buffers; total={:.3} s",
                            s.buffers_written, s.seconds
                        )),
                        Ok(_) => {}
                        Err(e) => sh.log(&format!("ERROR:  checkpoint failed: {e}")),
                    }
                }
            }
        })
        .expect("spawn checkpointer thread")
}

/// Redo of the XLOG resource manager. CHECKPOINT and NEXTOID: the counters they carry
/// (replay's next xid, OID and relfilenumber end past them). FPI: a full-page image,
/// restored through recovery rule 2. BACKUP_END: nothing to a page; recovery from the
/// backup it ends may stop from here on (recovery rule 10).
pub(crate) fn xlog_redo(rx: &mut dyn RedoContext, r: &Record) -> Result<()> {
    match r.info {
        XLOG_CHECKPOINT => {
            let c = CheckpointRecord::decode(&r.payload).map_err(corrupt)?;
            rx.saw_xid(Xid(c.next_xid.0.saturating_sub(1)));
            rx.saw_oid(Oid(c.next_oid.0.saturating_sub(1)));
            rx.saw_relfilenumber(RelFileNumber(c.next_relfilenumber.0.saturating_sub(1)));
        }
        XLOG_NEXTOID => {
            let b: [u8; 4] = r.payload[..]
                .try_into()
                .map_err(|_| corrupt("NEXTOID record of wrong length"))?;
            rx.saw_oid(Oid(u32::from_le_bytes(b).saturating_sub(1)));
        }
        XLOG_BACKUP_END => {
            let b: [u8; 8] = r.payload[..]
                .try_into()
                .map_err(|_| corrupt("BACKUP_END record of wrong length"))?;
            rx.backup_end(Lsn(u64::from_le_bytes(b)));
        }
        XLOG_SWITCH => {}
        XLOG_FPI => {
            let mut d = Dec::new(&r.payload, "FPI record");
            let b = BlockRef::decode(&mut d).map_err(corrupt)?;
            rx.redo_block(r, &b, &mut |_| Ok(()))?;
        }
        _ => return Err(unknown_record(r)),
    }
    Ok(())
}

/// Where the WAL that must stay begins: the redo point, or earlier for a replication
/// slot's restart LSN or `wal_keep_size` behind the insert position. Writes the slots'
/// positions that moved first (slots rule 2).
fn keep_from(sh: &Shared, redo: Lsn) -> Result<Lsn> {
    sh.slots.persist()?;
    let kept = Lsn(sh
        .wal()
        .insert_lsn()
        .0
        .saturating_sub(sh.settings.wal_keep_size_bytes));
    let backups = sh.ckpt.lock().backup_holds.iter().copied().min();
    Ok(redo
        .min(kept)
        .min(sh.slots.min_restart_lsn().unwrap_or(redo))
        .min(backups.unwrap_or(redo)))
}

/// An online base backup in progress (PostgreSQL's do_pg_backup_start/stop). It
/// starts with a checkpoint whose redo point is the backup's start; while it lives,
/// checkpoints keep the WAL from that start (step 4), so the WAL the backup needs is
/// never removed under it. Dropped without [`OnlineBackup::stop`], it is abandoned.
///
/// Torn copies are harmless without PostgreSQL's forced full-page writes: Strata
/// always writes them (engine rule 2), so every page changed after the start gets a
/// full image in its first record after it, and replay from the start restores it
/// whatever the copy holds (recovery rule 2).
pub struct OnlineBackup {
    sh: Arc<Shared>,
    /// START WAL LOCATION: the redo point of the backup's checkpoint.
    pub start: Lsn,
    /// CHECKPOINT LOCATION: where that checkpoint's record begins.
    pub checkpoint: Lsn,
    /// START TIME, Unix seconds.
    pub start_time_unix_s: u64,
}

impl crate::Engine {
    /// Starts an online backup: holds the WAL from the insert position, runs a
    /// checkpoint (always immediate: Strata does not spread checkpoints), then holds
    /// the WAL from its redo point. O(a checkpoint).
    pub fn start_backup(&self) -> Result<OnlineBackup> {
        let sh = self.sh.clone();
        let before = sh.wal().insert_lsn();
        sh.ckpt.lock().backup_holds.push(before);
        let mut b = OnlineBackup {
            sh,
            start: before,
            checkpoint: Lsn::INVALID,
            start_time_unix_s: unix_now(),
        };
        let stats = checkpoint(&b.sh, false, true, true)?;
        assert!(
            stats.redo >= before,
            "a checkpoint's redo point only moves on"
        );
        {
            let mut st = b.sh.ckpt.lock();
            if let Some(h) = st.backup_holds.iter_mut().find(|h| **h == before) {
                *h = stats.redo;
            }
        }
        b.start = stats.redo;
        b.checkpoint = stats.lsn;
        Ok(b)
    }
}

impl OnlineBackup {
    /// Ends the backup: inserts and flushes a BACKUP_END record naming its start, and
    /// returns the record's end (STOP WAL LOCATION): recovery from the copy must
    /// replay to here before it may end (recovery rule 10). O(1) plus a WAL flush.
    pub fn stop(self) -> Result<Lsn> {
        let payload = self.start.0.to_le_bytes();
        let (_, end) = self.sh.wal_insert(RM_XLOG, XLOG_BACKUP_END, 0, &payload)?;
        self.sh.wal_flush(end)?;
        Ok(end)
    }
}

impl Drop for OnlineBackup {
    fn drop(&mut self) {
        let mut st = self.sh.ckpt.lock();
        if let Some(i) = st.backup_holds.iter().position(|h| *h == self.start) {
            st.backup_holds.swap_remove(i);
        }
    }
}
