//! Start-up and crash recovery: the one redo loop (`strata_wal::redo`) dispatching each
//! record to its resource manager's redo (beside the code that writes it: the table in
//! `redo`), the bookkeeping that spans records (skipped pages, unfinished transactions,
//! the highest ids seen) behind `redo::RedoContext`, then the catalog loaded from its
//! heaps.
//!
//! Entry point: [`startup`].
//!
//! Rules:
//! 1. Replay starts at the redo point of the checkpoint the control file names, and
//!    runs to the end of valid WAL; what lies beyond (a torn or corrupt tail) is cut
//!    when the log is reopened (wal rule 2).
//! 2. Block redo: a full-page image is restored whatever the page holds; a `will_init`
//!    record starts from an empty page; otherwise the change is applied only if the
//!    page's LSN is before the record's end. A record for a relation whose file no
//!    longer exists, or a block past the file's end, must belong to a relation dropped
//!    or truncated later in the WAL: it is skipped and remembered, the later drop or
//!    truncation forgets it, and anything still remembered at the end stops recovery
//!    ("WAL contains references to invalid pages", as PostgreSQL).
//! 3. Drops and truncations replay with the buffer pool's bulk operations, in time
//!    proportional to the pages they touch: nothing visits every buffer.
//! 4. Creates are tracked per transaction (seeded from the checkpoint record's running
//!    transaction); at the end, whatever a transaction without commit or abort created
//!    is removed, and the transaction is marked aborted.
//! 5. Replay keeps no per-object state once a transaction ends, so memory returns to
//!    its baseline after any number of drops.
//! 6. Bookkeeping costs what it touches: forgetting the skipped pages of dropped
//!    relations visits only their entries (indexed by relation, database, tablespace).
//! 7. After a crash (the control file does not say "shut down"), the data directory is
//!    made durable before replay (PostgreSQL's SyncDataDirectory): replay must not
//!    trust bytes that only the page cache holds.
//! 8. The WAL must reach past the checkpoint record recovery starts from; if it ends
//!    before, that is corruption, reported with both LSNs — never a cut.
//! 9. After a crash, database directories that no committed database owns are removed
//!    (a power loss can keep a directory whose create record, only written, was lost).
//! 10. A data directory holding `backup_label` is a base backup: replay starts from the
//!     checkpoint the label names (the copied control file may name a later one, whose
//!     redo point is past pages copied before it), and must replay the BACKUP_END record
//!     naming the label's start before it may end ("WAL ends before end of online
//!     backup" otherwise: pages copied late may hold changes whose WAL is missing).
//!     Once the end-of-recovery checkpoint is durable, the label becomes
//!     `backup_label.old`; a crash before that recovers from the label again. A
//!     `tablespace_map` beside it (a tar-format backup) makes the `pg_tblspc` links
//!     first, then becomes `tablespace_map.old`.
//! 11. A directory with `standby.signal` is a standby: it is never started as a
//!     primary (that would fork its history from the primary it copies). Its replay
//!     runs on in the startup thread (`standby`, standby rules 1-8) over the same
//!     [`Redo`], which then also keeps the catalog cache and the running xid current.

use crate::catalog::{self, CatalogCache, DbEntry, RelEntry, SpcEntry, Tid};
use crate::clog::{Clog, XidStatus};
use crate::records::*;
use crate::redo::{unknown_record, PageRedo, RedoContext};
use crate::standby::{self, CatalogRow, StandbyStart};
use crate::xact::remove_created;
use crate::{access, heap, xact};
use crate::{
    checkpoint, corrupt, CkptState, Counters, EngineError, Fatal, LateWal, RecoveryInfo,
    RecoverySyncMethod, Result, Settings, Shared,
};
use parking_lot::{Condvar, Mutex, RecursiveRwLock, RwLock};
use rustc_hash::{FxHashMap, FxHashSet};
use std::path::Path;
use std::sync::{Arc, OnceLock};
use strata_buffer::{BufferPool, ReadMode};
use strata_smgr::Smgr;
use strata_types::{
    BlockNumber, ForkNumber, Lsn, Oid, RelFileNumber, RelKey, Xid, DEFAULT_TABLESPACE,
    GLOBAL_TABLESPACE,
};
use strata_wal::control::{ClusterState, ControlFile};
use strata_wal::{Record, Wal, WalReader};

/// Opens the cluster's pieces, replays, loads the catalog, and checkpoints. For a
/// standby (rule 11) it stops before replay and returns where replay must start.
pub fn startup(
    dir: &Path,
    settings: Settings,
    smgr: Arc<Smgr>,
) -> Result<(Shared, RecoveryInfo, Option<StandbyStart>)> {
    if !dir.join("global").join("pg_control").exists() {
        return Err(EngineError::NotACluster(dir.to_path_buf()));
    }
    let standby = dir.join("standby.signal").exists(); // rule 11
    let archive = !standby && dir.join("recovery.signal").exists();
    let vfs = settings.vfs.clone();
    let control = ControlFile::read(&*vfs, dir)?;
    let when = utc_timestamp(control.checkpoint_time_unix_s);
    match control.state {
        ClusterState::ShutDown => {
            (settings.log)(&format!("database system was shut down at {when}"))
        }
        _ => {
            (settings.log)(&format!(
                "database system was interrupted; last known up at {when}"
            ));
        }
    }
    let label = read_backup_label(&*vfs, dir)?; // rule 10
    if label.is_some() {
        apply_tablespace_map(&*vfs, dir, &settings)?;
    }
    let ckpt_lsn = label.as_ref().map_or(control.checkpoint, |l| l.checkpoint);
    let (ckpt, ckpt_end) = read_checkpoint(&vfs, dir, control.wal_segment_bytes, ckpt_lsn)?;
    if let Some(l) = &label {
        if ckpt.redo != l.start {
            return Err(corrupt(format!(
                "invalid data in file \"backup_label\": checkpoint at {} has redo point {}, not the START WAL LOCATION {}",
                l.checkpoint, ckpt.redo, l.start
            )));
        }
        (settings.log)(&format!(
            "starting backup recovery from backup_label with redo LSN {}, checkpoint LSN {}, on timeline ID 1",
            l.start, l.checkpoint
        ));
    }
    let sh = shared_for_replay(dir, settings, smgr, &control, &ckpt)?;
    // Rule 7, after the pool is made: the sync's freed memory is then what the redo's
    // allocations reuse at every pool size. Before, a large pool's mapping tables took
    // it and a short redo faulted on fresh memory at 8GB only (10-12 faults against
    // 2-4 at 128MB; BENCHMARKS.md, "C at the noise floor").
    if control.state != ClusterState::ShutDown {
        sync_data_directory(&sh.settings, dir)?;
    }
    let backup_start = label.as_ref().map(|l| l.start);
    if standby || archive {
        let start = StandbyStart {
            archive_only: archive,
            seg_bytes: control.wal_segment_bytes,
            ckpt_lsn,
            ckpt,
            ckpt_end,
            backup_start,
        };
        return Ok((sh, RecoveryInfo::default(), Some(start)));
    }
    let (summary, aborted_unfinished) = replay(
        &sh,
        control.wal_segment_bytes,
        (ckpt_lsn, &ckpt),
        ckpt_end,
        backup_start,
    )?;
    let seg = control.wal_segment_bytes;
    let tli = sh.timeline.load(std::sync::atomic::Ordering::Acquire);
    let wal = Arc::new(Wal::open(
        &vfs,
        dir,
        seg,
        (summary.end, summary.last_record),
        tli,
    )?);
    if sh.settings.archive_mode {
        wal.enable_archiving();
    }
    sh.late_wal.install(wal);
    load_catalog(&sh)?;
    if control.state != ClusterState::ShutDown {
        remove_orphan_database_dirs(&sh)?; // rule 9
    }
    checkpoint::checkpoint(&sh, false, true, true)?; // end-of-recovery checkpoint
    if label.is_some() {
        retire_backup_label(&sh)?; // rule 10
    }
    sh.log("database system is ready to accept connections");
    let info = RecoveryInfo {
        records: summary.records,
        redo_seconds: summary.elapsed.as_secs_f64(),
        start: summary.start,
        end: summary.end,
        aborted_unfinished,
    };
    Ok((sh, info, None))
}

/// The checkpoint record at `at` (the control file's, or the backup label's), and
/// where it ends.
fn read_checkpoint(
    vfs: &Arc<dyn strata_vfs::Vfs>,
    dir: &Path,
    seg: u64,
    at: Lsn,
) -> Result<(CheckpointRecord, Lsn)> {
    let mut r = WalReader::new(vfs, dir, seg, at, Lsn::INVALID)?;
    let rec = r.next_record()?.ok_or_else(|| {
        corrupt(format!(
            "could not locate a valid checkpoint record at {at}"
        ))
    })?;
    if rec.rmgr != RM_XLOG || rec.info != XLOG_CHECKPOINT {
        return Err(corrupt(format!(
            "record at {at} is not a checkpoint record"
        )));
    }
    Ok((
        CheckpointRecord::decode(&rec.payload).map_err(corrupt)?,
        rec.end,
    ))
}

/// What recovery needs of a base backup's `backup_label` (rule 10): its START WAL
/// LOCATION and CHECKPOINT LOCATION. `None` when there is no label.
struct BackupLabel {
    start: Lsn,
    checkpoint: Lsn,
}

fn read_backup_label(vfs: &dyn strata_vfs::Vfs, dir: &Path) -> Result<Option<BackupLabel>> {
    let path = dir.join("backup_label");
    let text = match strata_vfs::read_file(vfs, &path) {
        Ok(b) => String::from_utf8_lossy(&b).into_owned(),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(source) => {
            return Err(EngineError::Io {
                op: "read",
                path,
                source,
            })
        }
    };
    let field = |name: &str| -> Option<Lsn> {
        let line = text.lines().find_map(|l| l.strip_prefix(name))?;
        line.split_whitespace().next()?.parse().ok()
    };
    match (
        field("START WAL LOCATION: "),
        field("CHECKPOINT LOCATION: "),
    ) {
        (Some(start), Some(checkpoint)) => Ok(Some(BackupLabel { start, checkpoint })),
        _ => Err(corrupt(format!(
            "invalid data in file \"{}\"",
            path.display()
        ))),
    }
}

/// Rule 10: a backup taken with TABLESPACE_MAP holds no `pg_tblspc` links but a
/// `tablespace_map` of `<oid> <location>` lines; the links are made from it (an
/// existing one replaced, as PostgreSQL does), durably, and the map is kept as
/// `tablespace_map.old`. O(tablespaces).
fn apply_tablespace_map(vfs: &dyn strata_vfs::Vfs, dir: &Path, settings: &Settings) -> Result<()> {
    let path = dir.join("tablespace_map");
    let io = |op, path: &Path, source| EngineError::Io {
        op,
        path: path.to_path_buf(),
        source,
    };
    let text = match strata_vfs::read_file(vfs, &path) {
        Ok(b) => String::from_utf8_lossy(&b).into_owned(),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(()),
        Err(e) => return Err(io("read", &path, e)),
    };
    let links = dir.join("pg_tblspc");
    vfs.create_dir_all(&links)
        .map_err(|e| io("create directory", &links, e))?;
    for line in text.lines().filter(|l| !l.trim().is_empty()) {
        let (oid, location) = line
            .split_once(' ')
            .filter(|(oid, loc)| oid.parse::<u32>().is_ok() && !loc.is_empty())
            .ok_or_else(|| corrupt(format!("invalid data in file \"{}\"", path.display())))?;
        let link = links.join(oid);
        if vfs.read_link(&link).is_ok() {
            vfs.remove_file(&link).map_err(|e| io("remove", &link, e))?;
        }
        vfs.symlink(Path::new(location), &link)
            .map_err(|e| io("create symbolic link", &link, e))?;
        (settings.log)(&format!(
            "tablespace_map: linked \"pg_tblspc/{oid}\" to \"{location}\""
        ));
    }
    vfs.sync_dir(&links).map_err(|e| io("sync", &links, e))?;
    vfs.rename(&path, &dir.join("tablespace_map.old"))
        .and_then(|()| vfs.sync_dir(dir))
        .map_err(|e| io("rename", &path, e))
}

/// Rule 10: recovery from the backup is over and checkpointed; the label goes (kept
/// as `backup_label.old`, as PostgreSQL keeps it), durably.
pub(crate) fn retire_backup_label(sh: &Shared) -> Result<()> {
    let (from, to) = (sh.dir.join("backup_label"), sh.dir.join("backup_label.old"));
    let vfs = &sh.settings.vfs;
    vfs.rename(&from, &to)
        .and_then(|()| vfs.sync_dir(&sh.dir))
        .map_err(|source| EngineError::Io {
            op: "rename",
            path: from,
            source,
        })?;
    sh.log("backup recovery complete: \"backup_label\" renamed to \"backup_label.old\"");
    Ok(())
}

/// The engine's shared state as replay starts: the pool, the commit log, counters from
/// the checkpoint; no WAL open for appending yet.
fn shared_for_replay(
    dir: &Path,
    settings: Settings,
    smgr: Arc<Smgr>,
    control: &ControlFile,
    ckpt: &CheckpointRecord,
) -> Result<Shared> {
    let clog = Clog::load(&*settings.vfs, dir)?;
    let slots = strata_wal::slots::Slots::load(settings.vfs.clone(), dir)?;
    let late = Arc::new(LateWal {
        wal: OnceLock::new(),
        fatal: Arc::new(Fatal::new(&settings, smgr.clone())),
        on_flush: Mutex::new(None),
    });
    let pool = BufferPool::new(settings.shared_buffers_bytes, smgr.clone(), late.clone());
    Ok(Shared {
        dir: dir.to_path_buf(),
        wal_segment_bytes: control.wal_segment_bytes,
        timeline: control.timeline.into(),
        recovery: Default::default(),
        settings,
        smgr,
        pool,
        late_wal: late,
        clog,
        catalog: RwLock::new(CatalogCache::default()),
        writer: Mutex::new(()),
        redo_ptr: RecursiveRwLock::new(ckpt.redo),
        counters: Mutex::new(Counters {
            next_xid: Xid(ckpt.next_xid.0.max(control.next_xid)),
            next_oid: Oid(ckpt.next_oid.0.max(control.next_oid)),
            next_relfilenumber: RelFileNumber(
                ckpt.next_relfilenumber.0.max(control.next_relfilenumber.0),
            ),
            oid_logged_upto: Oid(0),
        }),
        running: Mutex::new(None),
        drop_lock: RecursiveRwLock::new(()),
        snapshots: Mutex::new(Default::default()),
        horizon_hold: OnceLock::new(),
        targblock: Mutex::new(FxHashMap::default()),
        txn_seqs: Mutex::new(FxHashMap::default()),
        seq_lsn: Default::default(),
        ckpt: Mutex::new(CkptState {
            system_identifier: control.system_identifier,
            last_redo: ckpt.redo,
            ..Default::default()
        }),
        ckpt_lock: Mutex::new(()),
        ckpt_cv: Condvar::new(),
        slots,
        unlinks: Default::default(),
    })
}

/// The redo loop from the checkpoint's redo point (rules 1–4, 8, 10), then what
/// unfinished transactions created removed and the counters advanced past everything
/// replayed. `backup`: the start of the base backup being recovered, whose BACKUP_END
/// must be replayed. Returns the loop's summary and how many transactions were
/// unfinished.
fn replay(
    sh: &Shared,
    seg: u64,
    (ckpt_lsn, ckpt): (Lsn, &CheckpointRecord),
    ckpt_end: Lsn,
    backup: Option<Lsn>,
) -> Result<(strata_wal::redo::RedoSummary, usize)> {
    let mut ctx = Redo::new(sh, backup, false);
    if let Some((xid, creates)) = &ckpt.running {
        ctx.unfinished.insert(*xid, creates.clone());
    }
    let log = sh.settings.log.clone();
    let mut log_line = |l: &str| log(l);
    let summary = strata_wal::redo::redo_named(
        WalReader::new(&sh.settings.vfs, &sh.dir, seg, ckpt.redo, Lsn::INVALID)?,
        |r| ctx.apply(r).map_err(|e| e.to_string()),
        &mut log_line,
        &record_name,
    )?;
    if summary.end < ckpt_end {
        // Rule 8: the log must reach past the checkpoint recovery started from; cutting
        // it there would throw the checkpoint away with everything after it.
        return Err(corrupt(format!(
            "WAL ends at {} ({}), before the end of the checkpoint record at {} that recovery started from",
            summary.end, summary.stop, ckpt_lsn
        )));
    }
    if let Some(start) = backup {
        if !ctx.backup_end_seen {
            // Rule 10: pages copied late may hold changes whose WAL is not here.
            return Err(corrupt(format!(
                "WAL ends before end of online backup: WAL ends at {} ({}), but the BACKUP_END record of the backup started at {start} was not found. All WAL generated while online backup was taken must be available at recovery.",
                summary.end, summary.stop
            )));
        }
        sh.log(&format!(
            "completed backup recovery with redo LSN {start} and end LSN {}",
            summary.end
        ));
    }
    let aborted_unfinished = ctx.finish()?;
    Ok((summary, aborted_unfinished))
}

/// Rule 9: after a crash, removes every database directory (in `base/` and in each
/// tablespace) that no committed database owns: a CREATE DATABASE whose directory a
/// power loss kept but whose create record it took. O(databases × tablespaces), at
/// crash recovery only.
fn remove_orphan_database_dirs(sh: &Shared) -> Result<()> {
    let (known, spcs): (FxHashSet<Oid>, Vec<Oid>) = {
        let cat = sh.catalog.read();
        let spcs = cat
            .spcs
            .values()
            .map(|s| s.oid)
            .filter(|s| *s != GLOBAL_TABLESPACE)
            .collect();
        (cat.dbs.values().map(|d| d.oid).collect(), spcs)
    };
    for spc in spcs {
        let dir = if spc == DEFAULT_TABLESPACE {
            sh.dir.join("base")
        } else {
            sh.smgr.tablespace_dir(spc)
        };
        let entries = match sh.settings.vfs.list_dir(&dir) {
            Ok(e) => e,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => continue,
            Err(source) => {
                return Err(EngineError::Io {
                    op: "read directory",
                    path: dir,
                    source,
                })
            }
        };
        for e in entries {
            let Ok(db) = e.name.parse::<u32>() else {
                continue;
            };
            if !known.contains(&Oid(db)) {
                sh.smgr.remove_database(Oid(db), &[spc])?;
                sh.log(&format!(
                    "removed directory \"{}\" of a database that never committed",
                    dir.join(&e.name).display()
                ));
            }
        }
    }
    Ok(())
}

/// Rule 7 (PostgreSQL's SyncDataDirectory): before replaying after a crash, make
/// durable what the crashed process wrote but never fsynced — it is still in the
/// kernel's page cache, so replay would read it, trust it, and never write it again;
/// a power loss later would take it. O(files in the cluster), or one syncfs per file
/// system with `recovery_init_sync_method = syncfs`.
fn sync_data_directory(settings: &Settings, dir: &Path) -> Result<()> {
    let started = std::time::Instant::now();
    let err = |source| EngineError::Io {
        op: "sync the data directory",
        path: dir.to_path_buf(),
        source,
    };
    let files = match settings.recovery_init_sync_method {
        RecoverySyncMethod::Fsync => strata_vfs::sync_tree(&*settings.vfs, dir).map_err(err)?,
        RecoverySyncMethod::Syncfs => {
            strata_vfs::sync_filesystems(&*settings.vfs, dir).map_err(err)?;
            0
        }
    };
    (settings.log)(&format!(
        "syncing data directory ({:?}), elapsed time: {:.3} s, {files} files",
        settings.recovery_init_sync_method,
        started.elapsed().as_secs_f64()
    ));
    Ok(())
}

/// `YYYY-MM-DD HH:MM:SS UTC` of a Unix time (the civil-from-days algorithm).
pub fn utc_timestamp(unix_s: u64) -> String {
    let days = (unix_s / 86_400) as i64;
    let secs = unix_s % 86_400;
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    format!(
        "{year:04}-{month:02}-{day:02} {:02}:{:02}:{:02} UTC",
        secs / 3600,
        secs / 60 % 60,
        secs % 60
    )
}

/// The entries of catalog heap `rel` with columns `cols`, decoded by `from`.
fn scan_catalog<T>(
    sh: &Shared,
    rel: strata_types::RelKey,
    cols: &[heap::Column],
    from: fn(&[heap::Datum], Tid) -> crate::codec::DecResult<T>,
) -> Result<Vec<T>> {
    let mut out = Vec::new();
    access::scan(sh, rel, None, &mut |b, o, t| {
        let v = heap::decode_catalog_values(cols, t).map_err(corrupt)?;
        let tid = Tid {
            block: b,
            offset: o,
        };
        out.push(from(&v, tid).map_err(corrupt)?);
        Ok(())
    })?;
    Ok(out)
}

/// Reads the catalog heaps into the cache. O(catalog rows): start-up only (and once
/// per standby start, standby rule 5).
pub(crate) fn load_catalog(sh: &Shared) -> Result<()> {
    let mut cache = CatalogCache::default();
    let roles = scan_catalog(
        sh,
        catalog::pg_authid(),
        &catalog::authid_columns(),
        catalog::RoleEntry::from_values,
    )?;
    for r in roles {
        cache.add_role(Arc::new(r));
    }
    let spcs = scan_catalog(
        sh,
        catalog::pg_tablespace(),
        &catalog::tablespace_columns(),
        SpcEntry::from_values,
    )?;
    for s in spcs {
        cache.add_spc(Arc::new(s));
    }
    let dbs = scan_catalog(
        sh,
        catalog::pg_database(),
        &catalog::database_columns(),
        DbEntry::from_values,
    )?;
    for d in dbs {
        let mut rels = FxHashMap::default();
        scan_class(sh, &d, &mut rels)?;
        cache.set_rels(d.oid, rels);
        cache.set_stats(d.oid, scan_statistic(sh, &d)?);
        cache.add_db(Arc::new(d));
    }
    let mut current = sh.catalog.write();
    cache.version = current.version + 1;
    *current = cache;
    Ok(())
}

/// The committed relations of database `d`, from its `pg_class`. O(its rows).
pub(crate) fn scan_class(
    sh: &Shared,
    d: &DbEntry,
    rels: &mut FxHashMap<String, Arc<RelEntry>>,
) -> Result<()> {
    let cols = catalog::class_columns();
    access::scan(sh, d.pg_class(), None, &mut |b, o, t| {
        let v = heap::decode_catalog_values(&cols, t).map_err(corrupt)?;
        let r = RelEntry::from_values(
            &v,
            Tid {
                block: b,
                offset: o,
            },
        )
        .map_err(corrupt)?;
        rels.insert(r.name.clone(), Arc::new(r));
        Ok(())
    })
}

/// The committed statistics of database `d`, from its `pg_statistic`; none if it
/// has no such file (a database made before it: catalog rule 10). O(its rows).
pub(crate) fn scan_statistic(
    sh: &Shared,
    d: &DbEntry,
) -> Result<FxHashMap<Oid, Arc<catalog::StatEntry>>> {
    if !sh.smgr.exists(d.pg_statistic(), ForkNumber::Main) {
        return Ok(FxHashMap::default());
    }
    let rows = scan_catalog(
        sh,
        d.pg_statistic(),
        &catalog::statistic_columns(),
        catalog::StatEntry::from_values,
    )?;
    Ok(rows.into_iter().map(|e| (e.relid, Arc::new(e))).collect())
}

pub(crate) struct Redo<'a> {
    pub sh: &'a Shared,
    /// The start of the base backup being recovered (rule 10).
    pub backup: Option<Lsn>,
    /// Its BACKUP_END has been replayed.
    pub backup_end_seen: bool,
    pub unfinished: FxHashMap<Xid, Vec<PendingCreate>>,
    /// A standby's replay (rule 11): file copies are replayed as from a backup, and
    /// the running xid and catalog rows are tracked (standby rules 4, 5).
    pub standby: bool,
    /// The catalog cache is loaded: commits apply their catalog rows to it.
    pub hot: bool,
    /// Where the standby became consistent (standby rule 7's label retirement).
    pub consistent_at: Option<Lsn>,
    /// The transaction whose commit reloads the whole catalog (standby rule 5).
    pub reload_at_commit: Option<Xid>,
    /// Per transaction, the catalog rows it changed (standby rule 5).
    pub catalog_rows: FxHashMap<Xid, Vec<CatalogRow>>,
    max_xid: Xid,
    max_rel: RelFileNumber,
    max_oid: Oid,
    skipped_blocks: u64,
    /// Pages skipped because their file or block did not exist (rule 2).
    invalid: InvalidPages,
}

/// Pages replay skipped because their file or block did not exist: per relation and
/// fork, the lowest block skipped, indexed by database and tablespace too. Each must be
/// explained by a later drop or truncation (rule 2), which forgets it in time
/// proportional to the entries it forgets (rule 6); what remains at the end is
/// corruption.
#[derive(Default)]
struct InvalidPages {
    by_rel: FxHashMap<RelKey, [Option<BlockNumber>; ForkNumber::COUNT]>,
    by_db: FxHashMap<Oid, FxHashSet<RelKey>>,
    by_spc: FxHashMap<Oid, FxHashSet<RelKey>>,
    /// Entries forgotten so far: what the forgetting cost (tests hold it to rule 6).
    forgotten: u64,
}

impl InvalidPages {
    fn is_empty(&self) -> bool {
        self.by_rel.is_empty()
    }

    fn note(&mut self, rel: RelKey, fork: ForkNumber, block: BlockNumber) {
        let forks = self.by_rel.entry(rel).or_insert_with(|| {
            self.by_db.entry(rel.db).or_default().insert(rel);
            self.by_spc.entry(rel.spc).or_default().insert(rel);
            [None; ForkNumber::COUNT]
        });
        let e = &mut forks[fork.index()];
        *e = Some(e.map_or(block, |b| b.min(block)));
    }

    /// O(1).
    fn forget_rel(&mut self, rel: RelKey) {
        if self.by_rel.remove(&rel).is_some() {
            self.forgotten += 1;
            for (index, key) in [(&mut self.by_db, rel.db), (&mut self.by_spc, rel.spc)] {
                if let Some(set) = index.get_mut(&key) {
                    set.remove(&rel);
                    if set.is_empty() {
                        index.remove(&key);
                    }
                }
            }
        }
    }

    /// O(entries of the database).
    fn forget_db(&mut self, db: Oid) {
        for rel in self.by_db.remove(&db).unwrap_or_default() {
            self.forget_rel(rel);
        }
    }

    /// O(entries of the tablespace).
    fn forget_spc(&mut self, spc: Oid) {
        for rel in self.by_spc.remove(&spc).unwrap_or_default() {
            self.forget_rel(rel);
        }
    }

    /// A fork truncated to `len` blocks explains skipped blocks at or past `len`.
    fn truncated(&mut self, rel: RelKey, fork: ForkNumber, len: BlockNumber) {
        let Some(forks) = self.by_rel.get_mut(&rel) else {
            return;
        };
        if forks[fork.index()].is_some_and(|b| b >= len) {
            forks[fork.index()] = None;
        }
        if forks.iter().all(Option::is_none) {
            self.forget_rel(rel);
        }
    }

    fn describe(&self) -> Vec<String> {
        let mut list: Vec<String> = self
            .by_rel
            .iter()
            .flat_map(|(rel, forks)| {
                ForkNumber::ALL.into_iter().filter_map(move |f| {
                    forks[f.index()].map(|b| format!("{rel} {f} block {}", b.0))
                })
            })
            .collect();
        list.sort();
        list
    }
}

impl<'a> Redo<'a> {
    pub(crate) fn new(sh: &'a Shared, backup: Option<Lsn>, standby: bool) -> Redo<'a> {
        Redo {
            backup,
            backup_end_seen: false,
            sh,
            unfinished: FxHashMap::default(),
            standby,
            hot: false,
            consistent_at: None,
            reload_at_commit: None,
            catalog_rows: FxHashMap::default(),
            max_xid: Xid::INVALID,
            max_rel: RelFileNumber(0),
            max_oid: Oid(0),
            skipped_blocks: 0,
            invalid: InvalidPages::default(),
        }
    }

    /// After the loop: rule 4 for transactions that never finished, rule 2's check of
    /// the skipped pages, and the counters past everything replayed. Returns how many
    /// transactions were unfinished.
    pub(crate) fn finish(mut self) -> Result<usize> {
        let sh = self.sh;
        let unfinished = std::mem::take(&mut self.unfinished);
        let aborted_unfinished = unfinished.len();
        for (xid, creates) in unfinished {
            self.forget_created(&creates);
            remove_created(sh, &creates)?;
            sh.clog.set(xid, XidStatus::Aborted);
        }
        if !self.invalid.is_empty() {
            // Rule 2's promise broken: a skipped page whose relation was never dropped
            // or truncated below it (PostgreSQL PANICs with the same words).
            return Err(corrupt(format!(
                "WAL contains references to invalid pages: {}",
                self.invalid.describe().join(", ")
            )));
        }
        {
            let mut c = sh.counters.lock();
            c.next_xid = Xid(c
                .next_xid
                .0
                .max(self.max_xid.0 + 1)
                .max(Xid::FIRST_NORMAL.0));
            c.next_relfilenumber = RelFileNumber(c.next_relfilenumber.0.max(self.max_rel.0 + 1));
            c.next_oid = Oid(c.next_oid.0.max(self.max_oid.0 + 1));
        }
        if self.skipped_blocks > 0 {
            sh.log(&format!(
                "{} block references skipped: their relations are dropped or truncated later in the WAL",
                self.skipped_blocks
            ));
        }
        Ok(aborted_unfinished)
    }

    fn note_invalid(&mut self, rel: RelKey, fork: ForkNumber, block: BlockNumber) {
        self.skipped_blocks += 1;
        self.invalid.note(rel, fork, block);
    }

    /// Dispatches one record to its resource manager's redo (the table in `redo`).
    pub(crate) fn apply(&mut self, r: &Record) -> Result<()> {
        if self.standby && r.xid != 0 && Xid(r.xid) > self.max_xid {
            standby::note_running(self.sh, Xid(r.xid)); // standby rule 4
        }
        self.saw_xid(Xid(r.xid));
        match r.rmgr {
            RM_XLOG => checkpoint::xlog_redo(self, r),
            RM_XACT => xact::xact_redo(self, r),
            RM_SMGR => access::smgr_redo(self, r),
            RM_DBASE => xact::dbase_redo(self, r),
            RM_TBLSPC => xact::tblspc_redo(self, r),
            RM_HEAP => access::heap_redo(self, r),
            RM_BTREE => crate::btree::btree_redo(self, r),
            crate::records::RM_SEQ => crate::sequence::seq_redo(self, r),
            _ => Err(unknown_record(r)),
        }
    }
}

impl RedoContext for Redo<'_> {
    fn shared(&self) -> &Shared {
        self.sh
    }

    /// Rule 2.
    fn redo_block(
        &mut self,
        r: &Record,
        b: &BlockRef,
        apply: PageRedo<'_>,
    ) -> Result<Option<bool>> {
        let sh = self.sh;
        let t = b.tag;
        if !self.spc_available(t.rel.spc) || !sh.smgr.exists(t.rel, t.fork) {
            self.note_invalid(t.rel, t.fork, BlockNumber(0));
            return Ok(None);
        }
        if b.image.is_some() || b.will_init {
            let n = sh.smgr.nblocks(t.rel, t.fork)?;
            for blk in n..=t.block.0 {
                sh.smgr
                    .extend(t.rel, t.fork, BlockNumber(blk), &access::ZERO_PAGE)?;
            }
            // A hot standby's readers may be on an existing page: it is read before
            // it is overwritten, never shown to them zeroed (btree rule 8).
            let mode = match self.hot && t.block.0 < n {
                true => ReadMode::ZeroOnError,
                false => ReadMode::Zero,
            };
            let buf = sh.pool.read_buffer(t, mode)?;
            let mut g = buf.write();
            if let Some(img) = &b.image {
                g.copy_from_slice(&img[..]);
            } else {
                strata_page::init(&mut g, 0);
                apply(&mut g).map_err(|e| corrupt(format!("{t}: {e}")))?;
            }
            strata_page::set_lsn(&mut g, r.end);
            buf.mark_dirty(&g);
            return Ok(Some(true));
        }
        if t.block.0 >= sh.smgr.nblocks(t.rel, t.fork)? {
            self.note_invalid(t.rel, t.fork, t.block);
            return Ok(None);
        }
        let buf = sh.pool.read_buffer(t, ReadMode::Normal)?;
        let mut g = buf.write();
        if strata_page::lsn(&g) >= r.end {
            return Ok(Some(false));
        }
        apply(&mut g).map_err(|e| corrupt(format!("{t}: {e}")))?;
        strata_page::set_lsn(&mut g, r.end);
        buf.mark_dirty(&g);
        Ok(Some(true))
    }

    fn saw_xid(&mut self, xid: Xid) {
        self.max_xid = self.max_xid.max(xid);
    }

    fn saw_oid(&mut self, oid: Oid) {
        self.max_oid = self.max_oid.max(oid);
    }

    fn saw_relfilenumber(&mut self, rel: RelFileNumber) {
        // A TOAST heap's number is its table's with a flag (toast rule 1).
        let rel = RelFileNumber(rel.0 & !crate::toast::TOAST_BIT);
        self.max_rel = self.max_rel.max(rel);
    }

    fn created(&mut self, xid: Xid, what: PendingCreate) {
        self.unfinished.entry(xid).or_default().push(what);
    }

    fn ended(&mut self, xid: Xid) {
        self.unfinished.remove(&xid);
        if self.standby {
            self.catalog_rows.remove(&xid);
            standby::note_ended(self.sh, xid);
        }
    }

    fn catalog_row(&mut self, xid: Xid, row: CatalogRow) {
        if self.standby {
            self.catalog_rows.entry(xid).or_default().push(row);
        }
    }

    /// Standby rule 5.
    fn committed(&mut self, xid: Xid) -> Result<()> {
        let rows = self.catalog_rows.remove(&xid);
        if !self.hot {
            return Ok(());
        }
        if self.reload_at_commit == Some(xid) {
            self.reload_at_commit = None;
            return load_catalog(self.sh);
        }
        match rows {
            Some(rows) => standby::apply_catalog_rows(self.sh, rows),
            None => Ok(()),
        }
    }

    /// O(rels).
    fn forget_rels(&mut self, rels: &[RelKey]) {
        if self.invalid.is_empty() {
            return;
        }
        for &r in rels {
            self.invalid.forget_rel(r);
        }
    }

    fn forget_db(&mut self, db: Oid) {
        self.invalid.forget_db(db);
    }

    fn forget_created(&mut self, created: &[PendingCreate]) {
        if self.invalid.is_empty() {
            return;
        }
        for c in created {
            match *c {
                PendingCreate::Rel(r) => self.invalid.forget_rel(r),
                PendingCreate::DbDir { db, .. } => self.invalid.forget_db(db),
                PendingCreate::Tablespace(spc) => self.invalid.forget_spc(spc),
            }
        }
    }

    fn truncated(&mut self, rel: RelKey, fork: ForkNumber, len: BlockNumber) {
        self.invalid.truncated(rel, fork, len);
    }

    fn backup_end(&mut self, start: Lsn) {
        if self.backup == Some(start) {
            self.backup_end_seen = true;
        }
    }

    fn replaying_backup(&self) -> bool {
        self.backup.is_some() || self.standby
    }

    fn hot_standby(&self) -> bool {
        self.hot
    }

    fn spc_available(&self, spc: Oid) -> bool {
        spc == DEFAULT_TABLESPACE
            || spc == GLOBAL_TABLESPACE
            || self
                .sh
                .dir
                .join("pg_tblspc")
                .join(spc.to_string())
                .symlink_metadata()
                .is_ok()
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn timestamps_print_as_utc_dates() {
        assert_eq!(super::utc_timestamp(0), "1970-01-01 00:00:00 UTC");
        assert_eq!(super::utc_timestamp(951_782_400), "2000-02-29 00:00:00 UTC");
        assert_eq!(
            super::utc_timestamp(1_795_374_007),
            "2026-11-22 19:00:07 UTC"
        );
    }

    #[test]
    fn forgetting_skipped_pages_costs_the_entries_forgotten() {
        use strata_types::{BlockNumber, ForkNumber, Oid, RelFileNumber, RelKey};
        let mut inv = super::InvalidPages::default();
        let rel = |db: u32, n: u64| RelKey::new(Oid(1663), Oid(db), RelFileNumber(n));
        for n in 0..100_000 {
            inv.note(rel(5, n), ForkNumber::Main, BlockNumber(0));
        }
        for n in 0..10 {
            inv.note(rel(7, n), ForkNumber::Fsm, BlockNumber(3));
        }
        // 100,000 commits each dropping one relation: each forgets one entry (a pass
        // over all entries per commit would be quadratic).
        for n in 0..100_000 {
            inv.forget_rel(rel(5, n));
            assert_eq!(inv.forgotten, n + 1);
        }
        inv.truncated(rel(7, 0), ForkNumber::Fsm, BlockNumber(5)); // below the cut: kept
        inv.truncated(rel(7, 1), ForkNumber::Fsm, BlockNumber(2)); // explained
        assert_eq!(inv.describe().len(), 9);
        inv.forget_db(Oid(7));
        assert!(inv.is_empty());
        assert_eq!(inv.forgotten, 100_010);
        assert!(inv.by_db.is_empty() && inv.by_spc.is_empty());
    }
}
