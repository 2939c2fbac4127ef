//! The storage manager: relation files in PostgreSQL's directory layout.
//!
//! Entry points: [`Smgr::open`], [`Smgr::create`], [`Smgr::extend`], [`Smgr::read`],
//! [`Smgr::write`], [`Smgr::nblocks`], [`Smgr::truncate`], [`Smgr::unlink`],
//! [`Smgr::remove_database`], [`Smgr::close`].
//!
//! Layout under the data directory (as PostgreSQL's):
//!
//! | tablespace            | directory of database `d`                     |
//! |-----------------------|-----------------------------------------------|
//! | `pg_global` (1664)    | `global/`                                     |
//! | `pg_default` (1663)   | `base/<d>/`                                   |
//! | any other `s`         | `pg_tblspc/<s>/STRATA_1/<d>/` (`pg_tblspc/<s>` is a symlink to the location) |
//! | temporary (1665)      | `base/pgsql_tmp/rels/<d>/` (rule 8)           |
//!
//! A fork's file is `<relnumber><suffix>` (`""`, `_fsm`, `_vm`, `_init`); segment `n > 0`
//! of it is `<file>.<n>`; every segment but the last is exactly 1 GiB.
//!
//! Rules (cited in the code as "smgr rule N"):
//! 1. The handle cache is a hash map keyed by relation: opening and closing a handle is
//!    O(1) and a closed handle holds no memory. Nothing here visits every handle.
//! 2. At most `max_open_files` segment files are kept open (LRU); I/O in flight holds
//!    its own reference, so the bound can be exceeded by the number of I/Os in flight.
//! 3. `nblocks` is cached per fork and kept exact by every extend and truncate done
//!    through this manager (it is the only writer of relation files).
//! 4. After a failed write, truncate, unlink or fsync the manager refuses every further
//!    change until restart (PostgreSQL's fsync lesson: the kernel may have dropped the
//!    dirty data, so a retry could report success for data that is gone).
//! 5. Concurrency: the handle cache is behind one short mutex; no I/O happens under it.
//!    Callers serialise extension and truncation of one relation (PostgreSQL's
//!    relation extension lock / AccessExclusiveLock).
//! 6. Every change to a fork (write, extend, create, truncate) and to a directory's
//!    entries is remembered until [`Smgr::sync_pending`] fsyncs it: a checkpoint makes
//!    durable exactly what changed since the previous one, found in O(changes).
//! 7. What is known of a fork (absent, or its size) is used rather than asked of the
//!    disk again: removing a relation removes the segments its forks are known to
//!    have and probes only forks it knows nothing of. A name that is not there costs a
//!    directory search in a directory of many relations; dropping a table created in
//!    this run costs one `unlink`, not five.
//! 8. Temporary tables' files ([`TEMP_TABLESPACE`]) live under `base/pgsql_tmp/rels`
//!    and are never fsynced (a crash loses temporary tables by definition). The
//!    directory is removed whole when the manager opens, so what a crashed server's
//!    sessions left costs one directory removal, never a pass over the cluster's
//!    files; base backups skip `pgsql_tmp` as PostgreSQL's do.

use lru::LruCache;
use parking_lot::Mutex;
use rustc_hash::{FxHashMap, FxHashSet};
use std::io;
use std::num::NonZeroUsize;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use strata_page::PageBuf;
use strata_types::{
    BlockNumber, ForkNumber, Oid, RelKey, BLCKSZ, DEFAULT_TABLESPACE, GLOBAL_TABLESPACE,
    RELSEG_BLOCKS, RELSEG_BYTES, TEMP_TABLESPACE,
};
pub use strata_vfs as vfs;
pub use strata_vfs::{StdVfs, Vfs, VfsFile};
use thiserror::Error;

/// Name of the per-version directory inside a tablespace location.
pub const TABLESPACE_VERSION_DIR: &str = "STRATA_1";

#[derive(Debug, Error)]
pub enum SmgrError {
    #[error("could not {op} file \"{path}\": {source}")]
    Io {
        op: &'static str,
        path: PathBuf,
        #[source]
        source: io::Error,
    },
    #[error("could not read block {block} in file \"{path}\": read only {got} of {BLCKSZ} bytes")]
    ShortRead {
        path: PathBuf,
        block: BlockNumber,
        got: usize,
    },
    #[error("cannot extend file \"{path}\" at block {block}: it already has {nblocks} blocks")]
    ExtendInside {
        path: PathBuf,
        block: BlockNumber,
        nblocks: u32,
    },
    #[error("storage manager refuses writes after an earlier write or fsync failure; restart the server")]
    Failed,
    #[error("tablespace location \"{path}\": {reason}")]
    Location { path: PathBuf, reason: String },
}

pub type Result<T> = std::result::Result<T, SmgrError>;

fn io_err(op: &'static str, path: &Path, source: io::Error) -> SmgrError {
    SmgrError::Io {
        op,
        path: path.to_path_buf(),
        source,
    }
}

#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
struct SegKey {
    rel: RelKey,
    fork: ForkNumber,
    seg: u32,
}

/// What the manager knows of one fork (smgr rule 3).
#[derive(Clone, Copy, Default, PartialEq, Eq, Debug)]
enum ForkState {
    /// Not looked at since the handle opened: the disk says.
    #[default]
    Unknown,
    /// No first segment: nothing to read, sync or remove.
    Absent,
    /// Exists with this many blocks; its segments are exactly those they fill.
    Blocks(u32),
}

impl ForkState {
    fn blocks(self) -> Option<u32> {
        match self {
            ForkState::Blocks(n) => Some(n),
            _ => None,
        }
    }
}

#[derive(Default)]
struct RelHandle {
    forks: [ForkState; ForkNumber::COUNT],
    /// Segments of this relation currently in the LRU (smgr rule 1: close is O(own files)).
    open_segs: Vec<SegKey>,
}

struct Inner {
    handles: FxHashMap<RelKey, RelHandle>,
    /// Relations with an open handle, per database: lets `remove_database` close them
    /// without visiting other databases' handles.
    db_handles: FxHashMap<Oid, FxHashSet<RelKey>>,
    files: LruCache<SegKey, Arc<dyn VfsFile>>,
}

impl Inner {
    fn handle(&mut self, rel: RelKey) -> &mut RelHandle {
        if !self.handles.contains_key(&rel) {
            self.db_handles.entry(rel.db).or_default().insert(rel);
        }
        self.handles.entry(rel).or_default()
    }

    fn close(&mut self, rel: RelKey) {
        if let Some(h) = self.handles.remove(&rel) {
            for seg in h.open_segs {
                self.files.pop(&seg);
            }
            if let Some(set) = self.db_handles.get_mut(&rel.db) {
                set.remove(&rel);
                if set.is_empty() {
                    self.db_handles.remove(&rel.db);
                }
            }
        }
    }

    fn forget_segments_from(&mut self, rel: RelKey, fork: ForkNumber, first_seg: u32) {
        if let Some(h) = self.handles.get_mut(&rel) {
            let files = &mut self.files;
            h.open_segs.retain(|k| {
                let gone = k.fork == fork && k.seg >= first_seg;
                if gone {
                    files.pop(k);
                }
                !gone
            });
        }
    }
}

/// Statistics for tests and benchmarks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SmgrStats {
    pub open_handles: usize,
    pub open_files: usize,
}

/// The storage manager. See the module doc for its rules.
pub struct Smgr {
    data_dir: PathBuf,
    vfs: Arc<dyn Vfs>,
    inner: Mutex<Inner>,
    failed: AtomicBool,
    /// Forks written, extended, created or truncated since the last `sync_pending`, and
    /// directories whose entries changed (smgr rule 6).
    pending: Mutex<Pending>,
}

/// Where temporary tables' files live, under the data directory (rule 8).
pub const TEMP_RELS_DIR: &str = "base/pgsql_tmp/rels";

/// Where queries' temporary files live (`pgsql_tmp<pid>.<n>`: sorts and hash
/// aggregates past work_mem); start-up removes what a crash left (rule 8).
pub const TEMP_FILES_DIR: &str = "base/pgsql_tmp";

/// Removes the `pgsql_tmp*` files of `dir`, if it exists.
fn remove_temp_files(vfs: &dyn Vfs, dir: &Path) -> Result<()> {
    let entries = match vfs.list_dir(dir) {
        Ok(e) => e,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(()),
        Err(e) => return Err(io_err("read directory", dir, e)),
    };
    for e in entries {
        if e.name.starts_with("pgsql_tmp") && matches!(e.kind, strata_vfs::EntryKind::File) {
            let p = dir.join(&e.name);
            vfs.remove_file(&p)
                .map_err(|err| io_err("remove file", &p, err))?;
        }
    }
    Ok(())
}

#[derive(Default)]
struct Pending {
    forks: FxHashSet<(RelKey, ForkNumber)>,
    dirs: FxHashSet<PathBuf>,
}

impl Smgr {
    /// Opens the storage manager over an existing or new data directory, creating the
    /// top-level directories (`global`, `base`, `pg_tblspc`) if missing.
    pub fn open(data_dir: &Path, vfs: Arc<dyn Vfs>, max_open_files: usize) -> Result<Smgr> {
        for d in ["global", "base", "pg_tblspc"] {
            let p = data_dir.join(d);
            vfs.create_dir_all(&p)
                .map_err(|e| io_err("create directory", &p, e))?;
        }
        let temp = data_dir.join(TEMP_RELS_DIR);
        match vfs.remove_dir_all(&temp) {
            Ok(()) => {}
            Err(e) if e.kind() == io::ErrorKind::NotFound => {}
            Err(e) => return Err(io_err("remove directory", &temp, e)),
        }
        remove_temp_files(&*vfs, &data_dir.join(TEMP_FILES_DIR))?;
        let cap = NonZeroUsize::new(max_open_files.max(1)).expect("max(1) is non-zero");
        Ok(Smgr {
            data_dir: data_dir.to_path_buf(),
            vfs,
            inner: Mutex::new(Inner {
                handles: FxHashMap::default(),
                db_handles: FxHashMap::default(),
                files: LruCache::new(cap),
            }),
            failed: AtomicBool::new(false),
            pending: Mutex::new(Pending::default()),
        })
    }

    fn note_fork(&self, rel: RelKey, fork: ForkNumber) {
        if rel.is_temp() {
            return; // rule 8
        }
        self.pending.lock().forks.insert((rel, fork));
    }

    fn note_dir(&self, dir: PathBuf) {
        if dir.starts_with(self.data_dir.join(TEMP_RELS_DIR)) {
            return; // rule 8
        }
        self.pending.lock().dirs.insert(dir);
    }

    /// fsyncs every fork changed and every directory whose entries changed since the
    /// last call (a checkpoint's sync phase, smgr rule 6). O(forks changed): never a
    /// walk of the data directory. Forks removed meanwhile are skipped. On a failure
    /// nothing is forgotten: what was not synced stays pending (and the manager is
    /// latched failed, smgr rule 4), so no later call can report it durable.
    pub fn sync_pending(&self) -> Result<usize> {
        let pending = std::mem::take(&mut *self.pending.lock());
        let mut forks: Vec<_> = pending.forks.iter().copied().collect();
        forks.sort_unstable();
        let mut dirs: Vec<_> = pending.dirs.iter().cloned().collect();
        dirs.sort_unstable();
        let result = self.sync_all_of(&forks, &dirs);
        if result.is_err() {
            let mut p = self.pending.lock();
            p.forks.extend(pending.forks);
            p.dirs.extend(pending.dirs);
        }
        result
    }

    fn sync_all_of(&self, forks: &[(RelKey, ForkNumber)], dirs: &[PathBuf]) -> Result<usize> {
        self.check_writable()?;
        let mut synced = 0;
        for &(rel, fork) in forks {
            if !self.exists(rel, fork) {
                continue;
            }
            self.sync(rel, fork)?;
            synced += 1;
        }
        for dir in dirs {
            match self.vfs.sync_dir(dir) {
                Ok(()) => synced += 1,
                Err(e) if e.kind() == io::ErrorKind::NotFound => {}
                Err(e) => return Err(self.fail(io_err("fsync", dir, e))),
            }
        }
        Ok(synced)
    }

    /// The file system beneath (for the layers that share it).
    pub fn vfs(&self) -> &Arc<dyn Vfs> {
        &self.vfs
    }

    pub fn data_dir(&self) -> &Path {
        &self.data_dir
    }

    /// The directory holding database `db`'s files in tablespace `spc`.
    pub fn database_dir(&self, spc: Oid, db: Oid) -> PathBuf {
        if spc == GLOBAL_TABLESPACE {
            self.data_dir.join("global")
        } else if spc == DEFAULT_TABLESPACE {
            self.data_dir.join("base").join(db.to_string())
        } else if spc == TEMP_TABLESPACE {
            self.data_dir.join(TEMP_RELS_DIR).join(db.to_string())
        } else {
            self.tablespace_dir(spc).join(db.to_string())
        }
    }

    /// `pg_tblspc/<spc>/STRATA_1`, through the tablespace's symlink.
    pub fn tablespace_dir(&self, spc: Oid) -> PathBuf {
        self.data_dir
            .join("pg_tblspc")
            .join(spc.to_string())
            .join(TABLESPACE_VERSION_DIR)
    }

    /// Path of one segment of one fork.
    pub fn segment_path(&self, rel: RelKey, fork: ForkNumber, seg: u32) -> PathBuf {
        let mut name = format!("{}{}", rel.rel, fork.suffix());
        if seg > 0 {
            name.push_str(&format!(".{seg}"));
        }
        self.database_dir(rel.spc, rel.db).join(name)
    }

    fn check_writable(&self) -> Result<()> {
        if self.failed.load(Ordering::Acquire) {
            return Err(SmgrError::Failed);
        }
        Ok(())
    }

    /// Latches the failed state (smgr rule 4) and passes the error on.
    fn fail(&self, e: SmgrError) -> SmgrError {
        self.failed.store(true, Ordering::Release);
        e
    }

    /// Refuses every further change from now on (smgr rule 4), as after a failure: the
    /// engine's PANIC latch, so that no page is written after durability became unknown.
    pub fn latch_failed(&self) {
        self.failed.store(true, Ordering::Release);
    }

    pub fn is_failed(&self) -> bool {
        self.failed.load(Ordering::Acquire)
    }

    /// Returns the open file of a segment, opening (and if asked, creating) it.
    /// `Ok(None)` if it does not exist and `create` is false.
    fn file(
        &self,
        rel: RelKey,
        fork: ForkNumber,
        seg: u32,
        create: bool,
    ) -> Result<Option<Arc<dyn VfsFile>>> {
        let key = SegKey { rel, fork, seg };
        if let Some(f) = self.inner.lock().files.get(&key) {
            return Ok(Some(f.clone()));
        }
        let path = self.segment_path(rel, fork, seg);
        let f = match self.vfs.open(&path, create) {
            Ok(f) => f,
            Err(e) if e.kind() == io::ErrorKind::NotFound && !create => return Ok(None),
            Err(e) => return Err(io_err("open", &path, e)),
        };
        let mut inner = self.inner.lock();
        if let Some(existing) = inner.files.get(&key) {
            return Ok(Some(existing.clone())); // another thread opened it meanwhile
        }
        inner.handle(rel).open_segs.push(key);
        if let Some((old, _)) = inner.files.push(key, f.clone()) {
            if old != key {
                if let Some(h) = inner.handles.get_mut(&old.rel) {
                    h.open_segs.retain(|k| *k != old);
                }
            }
        }
        Ok(Some(f))
    }

    /// Creates database `db`'s directory in tablespace `spc` (no-op if it exists).
    pub fn create_database_dir(&self, spc: Oid, db: Oid) -> Result<()> {
        let dir = self.database_dir(spc, db);
        self.vfs
            .create_dir_all(&dir)
            .map_err(|e| io_err("create directory", &dir, e))?;
        if let Some(parent) = dir.parent() {
            self.note_dir(parent.to_path_buf());
        }
        self.note_dir(dir);
        Ok(())
    }

    /// Makes database `db`'s directory in `spc` and its entries durable now.
    pub fn sync_database_dir(&self, spc: Oid, db: Oid) -> Result<()> {
        let dir = self.database_dir(spc, db);
        self.vfs
            .sync_dir(&dir)
            .map_err(|e| self.fail(io_err("fsync", &dir, e)))
    }

    /// Sets up a tablespace: `location` must be absolute, an existing empty directory,
    /// and outside the data directory. Creates `location/STRATA_1` and the symlink
    /// `pg_tblspc/<spc>` → `location`.
    pub fn create_tablespace(&self, spc: Oid, location: &Path) -> Result<()> {
        self.check_writable()?;
        let bad = |reason: &str| SmgrError::Location {
            path: location.to_path_buf(),
            reason: reason.to_string(),
        };
        if !location.is_absolute() {
            return Err(bad("tablespace location must be an absolute path"));
        }
        // Checked on the resolved path: `..` and symbolic links cannot lead back
        // into the data directory.
        let resolved = std::fs::canonicalize(location).unwrap_or_else(|_| location.to_path_buf());
        let data_dir =
            std::fs::canonicalize(&self.data_dir).unwrap_or_else(|_| self.data_dir.clone());
        if resolved.starts_with(&data_dir) || location.starts_with(&self.data_dir) {
            return Err(bad(
                "tablespace location should not be inside the data directory",
            ));
        }
        match self.vfs.dir_is_empty(location) {
            Ok(true) => {}
            Ok(false) => return Err(bad("directory is not empty")),
            Err(e) => return Err(io_err("open directory", location, e)),
        }
        let version = location.join(TABLESPACE_VERSION_DIR);
        self.vfs
            .create_dir(&version)
            .map_err(|e| io_err("create directory", &version, e))?;
        let link = self.data_dir.join("pg_tblspc").join(spc.to_string());
        self.vfs
            .symlink(location, &link)
            .map_err(|e| io_err("create symbolic link", &link, e))
    }

    /// Removes a tablespace's version directory and symlink (its databases must be gone).
    pub fn drop_tablespace(&self, spc: Oid) -> Result<()> {
        self.check_writable()?;
        let dir = self.tablespace_dir(spc);
        match self.vfs.remove_dir_all(&dir) {
            Ok(()) => {}
            Err(e) if e.kind() == io::ErrorKind::NotFound => {}
            Err(e) => return Err(self.fail(io_err("remove directory", &dir, e))),
        }
        let link = self.data_dir.join("pg_tblspc").join(spc.to_string());
        match self.vfs.remove_file(&link) {
            Ok(()) => Ok(()),
            Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(()),
            Err(e) => Err(self.fail(io_err("remove symbolic link", &link, e))),
        }
    }

    /// Creates a fork's first segment. With `is_redo`, an existing file is fine
    /// (replay may create what already exists); otherwise it is an error.
    pub fn create(&self, rel: RelKey, fork: ForkNumber, is_redo: bool) -> Result<()> {
        self.check_writable()?;
        let path = self.segment_path(rel, fork, 0);
        if !is_redo && self.vfs.exists(&path) {
            return Err(io_err(
                "create",
                &path,
                io::Error::new(io::ErrorKind::AlreadyExists, "file already exists"),
            ));
        }
        self.file(rel, fork, 0, true)?;
        self.note_fork(rel, fork);
        self.note_dir(self.database_dir(rel.spc, rel.db));
        let mut inner = self.inner.lock();
        let state = &mut inner.handle(rel).forks[fork.index()];
        *state = match *state {
            // Replay may create what has content: recompute.
            _ if is_redo => ForkState::Unknown,
            ForkState::Blocks(n) => ForkState::Blocks(n),
            _ => ForkState::Blocks(0),
        };
        Ok(())
    }

    /// Creates a new relation's main fork and records that it has no other fork, so
    /// that dropping it removes one file and probes for none (smgr rule 7).
    pub fn create_relation(&self, rel: RelKey) -> Result<()> {
        self.create(rel, ForkNumber::Main, false)?;
        let mut inner = self.inner.lock();
        let h = inner.handle(rel);
        for fork in ForkNumber::ALL {
            if h.forks[fork.index()] == ForkState::Unknown {
                h.forks[fork.index()] = ForkState::Absent;
            }
        }
        Ok(())
    }

    /// True if the fork's first segment exists.
    pub fn exists(&self, rel: RelKey, fork: ForkNumber) -> bool {
        match self.state(rel, fork) {
            ForkState::Blocks(_) => true,
            ForkState::Absent => false,
            ForkState::Unknown => {
                let there = self.vfs.exists(&self.segment_path(rel, fork, 0));
                if !there {
                    // Kept as `nblocks` keeps it: a fork is created through
                    // `create`, which records it (a never-vacuumed table's
                    // visibility map was probed with a stat per index-only fetch).
                    let mut inner = self.inner.lock();
                    let state = &mut inner.handle(rel).forks[fork.index()];
                    if *state == ForkState::Unknown {
                        *state = ForkState::Absent;
                    }
                }
                there
            }
        }
    }

    fn state(&self, rel: RelKey, fork: ForkNumber) -> ForkState {
        self.inner
            .lock()
            .handles
            .get(&rel)
            .map_or(ForkState::Unknown, |h| h.forks[fork.index()])
    }

    /// Number of blocks in a fork: cached (smgr rule 3); computed from segment sizes on
    /// first use. A fork that does not exist has 0 blocks.
    pub fn nblocks(&self, rel: RelKey, fork: ForkNumber) -> Result<u32> {
        match self.state(rel, fork) {
            ForkState::Blocks(n) => return Ok(n),
            ForkState::Absent => return Ok(0),
            ForkState::Unknown => {}
        }
        let mut seg = 0u32;
        let n = loop {
            let Some(f) = self.file(rel, fork, seg, false)? else {
                if seg == 0 {
                    self.inner.lock().handle(rel).forks[fork.index()] = ForkState::Absent;
                    return Ok(0);
                }
                break seg * RELSEG_BLOCKS;
            };
            let len = f
                .size_bytes()
                .map_err(|e| io_err("stat", &self.segment_path(rel, fork, seg), e))?;
            if len < RELSEG_BYTES {
                break seg * RELSEG_BLOCKS + (len / BLCKSZ as u64) as u32;
            }
            seg += 1;
        };
        self.inner.lock().handle(rel).forks[fork.index()] = ForkState::Blocks(n);
        Ok(n)
    }

    /// Reads one block. Reading past the end is an error (`ShortRead`).
    pub fn read(
        &self,
        rel: RelKey,
        fork: ForkNumber,
        block: BlockNumber,
        buf: &mut PageBuf,
    ) -> Result<()> {
        let seg = block.segment();
        let path = || self.segment_path(rel, fork, seg);
        let Some(f) = self.file(rel, fork, seg, false)? else {
            return Err(SmgrError::ShortRead {
                path: path(),
                block,
                got: 0,
            });
        };
        let got = f
            .read_at(buf, block.offset_in_segment())
            .map_err(|e| io_err("read", &path(), e))?;
        if got != BLCKSZ {
            return Err(SmgrError::ShortRead {
                path: path(),
                block,
                got,
            });
        }
        Ok(())
    }

    /// Writes one block. A block at or past the end grows the fork (the buffer pool
    /// writes back pages that were extended in memory); concurrent write-backs past the
    /// end of one fork are fine: the cached size only grows (smgr rule 3).
    pub fn write(
        &self,
        rel: RelKey,
        fork: ForkNumber,
        block: BlockNumber,
        buf: &PageBuf,
    ) -> Result<()> {
        self.check_writable()?;
        let nblocks = self.nblocks(rel, fork)?;
        self.write_block(rel, fork, block, buf, nblocks)
    }

    /// Writes a new block at or past the end of the fork, growing it. Earlier segments
    /// are padded to their full 1 GiB if the new block starts a later segment. Writing
    /// inside the fork is an error: the caller's idea of the size is wrong.
    pub fn extend(
        &self,
        rel: RelKey,
        fork: ForkNumber,
        block: BlockNumber,
        buf: &PageBuf,
    ) -> Result<()> {
        self.check_writable()?;
        let nblocks = self.nblocks(rel, fork)?;
        if block.0 < nblocks {
            return Err(SmgrError::ExtendInside {
                path: self.segment_path(rel, fork, block.segment()),
                block,
                nblocks,
            });
        }
        self.write_block(rel, fork, block, buf, nblocks)
    }

    fn write_block(
        &self,
        rel: RelKey,
        fork: ForkNumber,
        block: BlockNumber,
        buf: &PageBuf,
        nblocks: u32,
    ) -> Result<()> {
        let seg = block.segment();
        let growing = block.0 >= nblocks;
        if growing {
            let last_seg = if nblocks == 0 {
                0
            } else {
                BlockNumber(nblocks - 1).segment()
            };
            for s in last_seg..seg {
                let path = self.segment_path(rel, fork, s);
                let f = self.file(rel, fork, s, true)?.expect("created");
                let len = f.size_bytes().map_err(|e| io_err("stat", &path, e))?;
                if len < RELSEG_BYTES {
                    f.set_len(RELSEG_BYTES)
                        .map_err(|e| self.fail(io_err("extend", &path, e)))?;
                }
            }
        }
        let path = self.segment_path(rel, fork, seg);
        let Some(f) = self.file(rel, fork, seg, growing)? else {
            return Err(io_err("write", &path, io::ErrorKind::NotFound.into()));
        };
        f.write_all_at(buf, block.offset_in_segment())
            .map_err(|e| self.fail(io_err("write", &path, e)))?;
        self.note_fork(rel, fork);
        if growing {
            let mut inner = self.inner.lock();
            let slot = &mut inner.handle(rel).forks[fork.index()];
            *slot = ForkState::Blocks(slot.blocks().unwrap_or(0).max(block.0 + 1));
        }
        Ok(())
    }

    /// Truncates several forks of one relation in one call: each `(fork, nblocks)` cuts
    /// that fork to `nblocks` blocks (a fork already shorter, or missing, is left alone).
    /// Visits only the segments at or beyond each cut.
    pub fn truncate(&self, rel: RelKey, forks: &[(ForkNumber, BlockNumber)]) -> Result<()> {
        self.check_writable()?;
        for &(fork, new_len) in forks {
            let old = self.nblocks(rel, fork)?;
            if new_len.0 >= old {
                continue;
            }
            let keep_segs = new_len.0.div_ceil(RELSEG_BLOCKS).max(1);
            let old_segs = old.div_ceil(RELSEG_BLOCKS).max(1);
            self.inner.lock().forget_segments_from(rel, fork, keep_segs);
            for seg in (keep_segs..old_segs).rev() {
                let path = self.segment_path(rel, fork, seg);
                match self.vfs.remove_file(&path) {
                    Ok(()) => {}
                    Err(e) if e.kind() == io::ErrorKind::NotFound => {}
                    Err(e) => return Err(self.fail(io_err("truncate", &path, e))),
                }
            }
            let last = keep_segs - 1;
            let len = (new_len.0 - last * RELSEG_BLOCKS) as u64 * BLCKSZ as u64;
            let path = self.segment_path(rel, fork, last);
            if let Some(f) = self.file(rel, fork, last, false)? {
                f.set_len(len)
                    .map_err(|e| self.fail(io_err("truncate", &path, e)))?;
            }
            self.inner.lock().handle(rel).forks[fork.index()] = ForkState::Blocks(new_len.0);
            self.note_fork(rel, fork);
            self.note_dir(self.database_dir(rel.spc, rel.db));
        }
        Ok(())
    }

    /// Removes every fork and segment of each relation, and closes their handles.
    /// O(files of the relations); missing files are fine (replay may repeat an unlink).
    pub fn unlink(&self, rels: &[RelKey]) -> Result<()> {
        self.check_writable()?;
        for &rel in rels {
            let forks = {
                let mut inner = self.inner.lock();
                let forks = inner
                    .handles
                    .get(&rel)
                    .map_or([ForkState::Unknown; ForkNumber::COUNT], |h| h.forks);
                inner.close(rel);
                forks
            };
            {
                let mut pending = self.pending.lock();
                for fork in ForkNumber::ALL {
                    pending.forks.remove(&(rel, fork));
                }
            }
            for fork in ForkNumber::ALL {
                self.unlink_fork(rel, fork, forks[fork.index()])?;
            }
        }
        Ok(())
    }

    /// Removes one fork's segments: those its known size fills, or, when the size is
    /// unknown, each in turn until one is missing (smgr rule 7).
    fn unlink_fork(&self, rel: RelKey, fork: ForkNumber, state: ForkState) -> Result<()> {
        let known = match state {
            ForkState::Absent => return Ok(()),
            ForkState::Blocks(n) => Some(n.div_ceil(RELSEG_BLOCKS).max(1)),
            ForkState::Unknown => None,
        };
        let mut seg = 0;
        while known.is_none_or(|segs| seg < segs) {
            let path = self.segment_path(rel, fork, seg);
            match self.vfs.remove_file(&path) {
                Ok(()) => self.note_dir(self.database_dir(rel.spc, rel.db)),
                Err(e) if e.kind() == io::ErrorKind::NotFound && known.is_none() => break,
                Err(e) if e.kind() == io::ErrorKind::NotFound => {}
                Err(e) => return Err(self.fail(io_err("remove", &path, e))),
            }
            seg += 1;
        }
        Ok(())
    }

    /// Removes database `db`'s directory from each of `spcs` in one call and closes its
    /// handles. O(files of the database + its open handles).
    pub fn remove_database(&self, db: Oid, spcs: &[Oid]) -> Result<()> {
        self.check_writable()?;
        {
            let mut inner = self.inner.lock();
            let rels: Vec<RelKey> = inner
                .db_handles
                .get(&db)
                .map(|s| s.iter().copied().collect())
                .unwrap_or_default();
            for rel in rels {
                inner.close(rel);
            }
        }
        for &spc in spcs {
            let dir = self.database_dir(spc, db);
            match self.vfs.remove_dir_all(&dir) {
                Ok(()) => {
                    if let Some(parent) = dir.parent() {
                        self.note_dir(parent.to_path_buf());
                    }
                }
                Err(e) if e.kind() == io::ErrorKind::NotFound => {}
                Err(e) => return Err(self.fail(io_err("remove directory", &dir, e))),
            }
        }
        Ok(())
    }

    /// fsyncs every segment of a fork (checkpoints and unlogged-to-logged copies).
    pub fn sync(&self, rel: RelKey, fork: ForkNumber) -> Result<()> {
        let n = self.nblocks(rel, fork)?;
        for seg in 0..n.div_ceil(RELSEG_BLOCKS).max(1) {
            if let Some(f) = self.file(rel, fork, seg, false)? {
                f.sync().map_err(|e| {
                    self.fail(io_err("fsync", &self.segment_path(rel, fork, seg), e))
                })?;
            }
        }
        Ok(())
    }

    /// Closes a relation's handle and its files: O(its open files); releases its memory.
    pub fn close(&self, rel: RelKey) {
        self.inner.lock().close(rel);
    }

    pub fn stats(&self) -> SmgrStats {
        let inner = self.inner.lock();
        SmgrStats {
            open_handles: inner.handles.len(),
            open_files: inner.files.len(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use strata_types::RelFileNumber;

    fn rel(db: u32, n: u64) -> RelKey {
        RelKey::new(DEFAULT_TABLESPACE, Oid(db), RelFileNumber(n))
    }

    fn setup(max_files: usize) -> (tempfile::TempDir, Smgr) {
        let dir = tempfile::tempdir().unwrap();
        let smgr = Smgr::open(dir.path(), Arc::new(StdVfs), max_files).unwrap();
        smgr.create_database_dir(DEFAULT_TABLESPACE, Oid(5))
            .unwrap();
        (dir, smgr)
    }

    fn page(byte: u8) -> Box<PageBuf> {
        Box::new([byte; BLCKSZ])
    }

    #[test]
    fn layout_matches_postgres() {
        let (dir, s) = setup(10);
        let r = rel(5, 16384);
        assert_eq!(
            s.segment_path(r, ForkNumber::Main, 0),
            dir.path().join("base/5/16384")
        );
        assert_eq!(
            s.segment_path(r, ForkNumber::Fsm, 2),
            dir.path().join("base/5/16384_fsm.2")
        );
        let g = RelKey::new(GLOBAL_TABLESPACE, Oid(0), RelFileNumber(1262));
        assert_eq!(
            s.segment_path(g, ForkNumber::Vm, 0),
            dir.path().join("global/1262_vm")
        );
        let t = RelKey::new(Oid(20000), Oid(5), RelFileNumber(7));
        assert_eq!(
            s.segment_path(t, ForkNumber::Init, 0),
            dir.path().join("pg_tblspc/20000/STRATA_1/5/7_init")
        );
    }

    #[test]
    fn extend_read_write_nblocks() {
        let (_d, s) = setup(10);
        let r = rel(5, 1);
        s.create(r, ForkNumber::Main, false).unwrap();
        assert!(s.create(r, ForkNumber::Main, false).is_err());
        assert_eq!(s.nblocks(r, ForkNumber::Main).unwrap(), 0);
        for b in 0..5 {
            s.extend(r, ForkNumber::Main, BlockNumber(b), &page(b as u8))
                .unwrap();
        }
        assert!(s
            .extend(r, ForkNumber::Main, BlockNumber(2), &page(0))
            .is_err());
        s.write(r, ForkNumber::Main, BlockNumber(3), &page(33))
            .unwrap();
        let mut buf = page(0);
        s.read(r, ForkNumber::Main, BlockNumber(3), &mut buf)
            .unwrap();
        assert_eq!(buf[100], 33);
        assert!(matches!(
            s.read(r, ForkNumber::Main, BlockNumber(5), &mut buf),
            Err(SmgrError::ShortRead { got: 0, .. })
        ));
        // nblocks survives a fresh manager (computed from the file sizes)
        s.close(r);
        assert_eq!(s.nblocks(r, ForkNumber::Main).unwrap(), 5);
    }

    #[test]
    fn segments_and_multi_fork_truncate() {
        let (dir, s) = setup(10);
        let r = rel(5, 2);
        // block in the third segment: the first two are padded to 1 GiB (sparse)
        let far = BlockNumber(2 * RELSEG_BLOCKS + 3);
        s.extend(r, ForkNumber::Main, far, &page(9)).unwrap();
        s.extend(r, ForkNumber::Fsm, BlockNumber(0), &page(1))
            .unwrap();
        s.extend(r, ForkNumber::Fsm, BlockNumber(1), &page(1))
            .unwrap();
        assert_eq!(s.nblocks(r, ForkNumber::Main).unwrap(), far.0 + 1);
        assert!(dir.path().join("base/5/2.2").exists());
        s.truncate(
            r,
            &[
                (ForkNumber::Main, BlockNumber(10)),
                (ForkNumber::Fsm, BlockNumber(1)),
                (ForkNumber::Vm, BlockNumber(0)),
            ],
        )
        .unwrap();
        assert!(!dir.path().join("base/5/2.1").exists());
        assert!(!dir.path().join("base/5/2.2").exists());
        assert_eq!(s.nblocks(r, ForkNumber::Main).unwrap(), 10);
        assert_eq!(s.nblocks(r, ForkNumber::Fsm).unwrap(), 1);
        s.close(r);
        assert_eq!(s.nblocks(r, ForkNumber::Main).unwrap(), 10);
        assert_eq!(
            std::fs::metadata(dir.path().join("base/5/2"))
                .unwrap()
                .len(),
            10 * BLCKSZ as u64
        );
    }

    /// StdVfs, counting `remove_file` calls that found nothing.
    struct CountingVfs(std::sync::atomic::AtomicUsize);

    impl Vfs for CountingVfs {
        fn open(&self, path: &Path, create: bool) -> io::Result<Arc<dyn VfsFile>> {
            StdVfs.open(path, create)
        }
        fn remove_file(&self, path: &Path) -> io::Result<()> {
            let r = StdVfs.remove_file(path);
            if r.as_ref()
                .is_err_and(|e| e.kind() == io::ErrorKind::NotFound)
            {
                self.0.fetch_add(1, Ordering::SeqCst);
            }
            r
        }
        fn rename(&self, from: &Path, to: &Path) -> io::Result<()> {
            StdVfs.rename(from, to)
        }
        fn create_dir(&self, path: &Path) -> io::Result<()> {
            StdVfs.create_dir(path)
        }
        fn create_dir_all(&self, path: &Path) -> io::Result<()> {
            StdVfs.create_dir_all(path)
        }
        fn remove_dir_all(&self, path: &Path) -> io::Result<()> {
            StdVfs.remove_dir_all(path)
        }
        fn symlink(&self, target: &Path, link: &Path) -> io::Result<()> {
            StdVfs.symlink(target, link)
        }
        fn read_link(&self, link: &Path) -> io::Result<PathBuf> {
            StdVfs.read_link(link)
        }
        fn exists(&self, path: &Path) -> bool {
            StdVfs.exists(path)
        }
        fn dir_is_empty(&self, path: &Path) -> io::Result<bool> {
            StdVfs.dir_is_empty(path)
        }
        fn list_dir(&self, path: &Path) -> io::Result<Vec<vfs::DirEntry>> {
            StdVfs.list_dir(path)
        }
        fn sync_dir(&self, path: &Path) -> io::Result<()> {
            StdVfs.sync_dir(path)
        }
        fn syncfs(&self, path: &Path) -> io::Result<()> {
            StdVfs.syncfs(path)
        }
    }

    #[test]
    fn unlink_probes_only_forks_it_knows_nothing_of() {
        let dir = tempfile::tempdir().unwrap();
        let vfs = Arc::new(CountingVfs(Default::default()));
        let s = Smgr::open(dir.path(), vfs.clone(), 10).unwrap();
        s.create_database_dir(DEFAULT_TABLESPACE, Oid(5)).unwrap();
        let (a, b) = (rel(5, 1), rel(5, 2));
        for r in [a, b] {
            s.create_relation(r).unwrap();
            s.extend(r, ForkNumber::Main, BlockNumber(0), &page(1))
                .unwrap();
        }
        s.create(a, ForkNumber::Vm, false).unwrap();
        assert!(!s.exists(a, ForkNumber::Fsm) && s.exists(a, ForkNumber::Vm));
        s.unlink(&[a]).unwrap();
        assert_eq!(vfs.0.load(Ordering::SeqCst), 0, "known forks: no probe");
        assert!(!s.segment_path(a, ForkNumber::Vm, 0).exists());
        assert!(!s.segment_path(a, ForkNumber::Main, 0).exists());
        // A fresh manager knows nothing: segment 1 and the three other forks probed.
        let s = Smgr::open(dir.path(), vfs.clone(), 10).unwrap();
        s.unlink(&[b]).unwrap();
        assert_eq!(vfs.0.load(Ordering::SeqCst), 4);
        assert!(!s.segment_path(b, ForkNumber::Main, 0).exists());
    }

    /// An absent fork found absent once is remembered (a never-vacuumed table's
    /// visibility map was looked for with a stat per index-only fetch); `create`
    /// records the fork it makes.
    #[test]
    fn a_fork_found_absent_is_remembered_until_created() {
        let (dir, s) = setup(4);
        let r = rel(5, 7);
        s.create_relation(r).unwrap();
        let s = Smgr::open(dir.path(), Arc::new(StdVfs), 4).unwrap();
        assert!(!s.exists(r, ForkNumber::Vm));
        // Made behind the manager's back: not looked for again.
        std::fs::write(s.segment_path(r, ForkNumber::Vm, 0), b"").unwrap();
        assert!(!s.exists(r, ForkNumber::Vm));
        std::fs::remove_file(s.segment_path(r, ForkNumber::Vm, 0)).unwrap();
        s.create(r, ForkNumber::Vm, false).unwrap();
        assert!(s.exists(r, ForkNumber::Vm));
        assert_eq!(s.nblocks(r, ForkNumber::Vm).unwrap(), 0);
    }

    #[test]
    fn unlink_many_and_remove_database_everywhere() {
        let (dir, s) = setup(4);
        let spc_loc = tempfile::tempdir().unwrap();
        s.create_tablespace(Oid(30000), spc_loc.path()).unwrap();
        s.create_database_dir(Oid(30000), Oid(5)).unwrap();
        let rels: Vec<_> = (0..20).map(|i| rel(5, 100 + i)).collect();
        for r in &rels {
            for f in [ForkNumber::Main, ForkNumber::Fsm] {
                s.extend(*r, f, BlockNumber(0), &page(1)).unwrap();
            }
        }
        // smgr rule 2: 40 files written, never more than 4 held open
        assert!(s.stats().open_files <= 4);
        s.unlink(&rels[..10]).unwrap();
        assert!(!dir.path().join("base/5/100").exists());
        assert!(!dir.path().join("base/5/100_fsm").exists());
        assert!(dir.path().join("base/5/110").exists());
        s.unlink(&rels[..10]).unwrap(); // repeating an unlink (as replay does) is fine
        let t = RelKey::new(Oid(30000), Oid(5), RelFileNumber(1));
        s.extend(t, ForkNumber::Main, BlockNumber(0), &page(3))
            .unwrap();
        s.remove_database(Oid(5), &[DEFAULT_TABLESPACE, Oid(30000)])
            .unwrap();
        assert!(!dir.path().join("base/5").exists());
        assert!(!spc_loc.path().join("STRATA_1/5").exists());
        assert_eq!(s.stats().open_handles, 0, "handles of the database closed");
    }

    #[test]
    fn bad_tablespace_locations() {
        let (dir, s) = setup(4);
        assert!(s.create_tablespace(Oid(1), Path::new("relative")).is_err());
        assert!(s
            .create_tablespace(Oid(1), &dir.path().join("base"))
            .is_err());
        let full = tempfile::tempdir().unwrap();
        std::fs::write(full.path().join("x"), b"x").unwrap();
        assert!(s.create_tablespace(Oid(1), full.path()).is_err());
        assert!(s
            .create_tablespace(Oid(1), Path::new("/nonexistent/strata"))
            .is_err());
    }

    #[test]
    fn handles_are_released_on_close() {
        let (_d, s) = setup(8);
        for i in 0..2_000 {
            let r = rel(5, 1000 + i);
            s.extend(r, ForkNumber::Main, BlockNumber(0), &page(1))
                .unwrap();
            s.close(r);
        }
        assert_eq!(
            s.stats(),
            SmgrStats {
                open_handles: 0,
                open_files: 0
            }
        );
    }

    #[test]
    fn failed_write_latches() {
        use strata_vfs::sim::{Fault, SimVfs};
        let dir = tempfile::tempdir().unwrap();
        let vfs = SimVfs::new(None, false).unwrap();
        let s = Smgr::open(dir.path(), Arc::new(vfs.clone()), 8).unwrap();
        s.create_database_dir(DEFAULT_TABLESPACE, Oid(5)).unwrap();
        let r = rel(5, 1);
        s.extend(r, ForkNumber::Main, BlockNumber(0), &page(1))
            .unwrap();
        vfs.arm(Fault::parse("data:write:eio:0").unwrap());
        assert!(matches!(
            s.write(r, ForkNumber::Main, BlockNumber(0), &page(2)),
            Err(SmgrError::Io { .. })
        ));
        // the disk works again, but the manager must not believe it (smgr rule 4)
        assert!(matches!(
            s.write(r, ForkNumber::Main, BlockNumber(0), &page(2)),
            Err(SmgrError::Failed)
        ));
        let mut buf = page(0);
        s.read(r, ForkNumber::Main, BlockNumber(0), &mut buf)
            .unwrap();
        assert_eq!(buf[0], 1, "reads still work");
    }

    #[test]
    fn failed_sync_is_never_forgotten() {
        use strata_vfs::sim::{Fault, SimVfs};
        let dir = tempfile::tempdir().unwrap();
        let vfs = SimVfs::new(None, false).unwrap();
        let s = Smgr::open(dir.path(), Arc::new(vfs.clone()), 8).unwrap();
        s.create_database_dir(DEFAULT_TABLESPACE, Oid(5)).unwrap();
        for n in 1..=3 {
            s.extend(rel(5, n), ForkNumber::Main, BlockNumber(0), &page(1))
                .unwrap();
        }
        vfs.arm(Fault::parse("data:sync:eio:1").unwrap());
        assert!(s.sync_pending().is_err());
        // The kernel dropped a fork's pages and will not say so again: the next
        // checkpoint's sync must not succeed as if everything were durable.
        assert!(s.sync_pending().is_err());
        assert!(s.is_failed());
    }
}
