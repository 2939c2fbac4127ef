//! The file-system boundary: the one file abstraction under every durable file of a
//! cluster — relation forks (the role catalog's among them), WAL segments, `pg_xact`,
//! `pg_control`.
//!
//! Owns: the handful of file operations the layers above need, as a trait, so tests can
//! run the real storage manager, WAL, commit log and control file against a backend that
//! fails, tears or loses writes ([`sim::SimVfs`]). [`StdVfs`] is the real one
//! (positioned reads and writes, no seeking, so one open file serves concurrent readers
//! and writers).
//!
//! Entry points: [`Vfs`], [`VfsFile`], [`StdVfs`], [`write_atomic`], [`sync_tree`],
//! [`FileKind::of`], [`sim::SimVfs`].
//!
//! Rules (cited as "vfs rule N"):
//! 1. Every operation reports errors as `std::io::Error`; a `NotFound` kind means the
//!    file or directory does not exist, and callers rely on that kind.
//! 2. A write is durable only after `sync` of its file returns Ok; a created, renamed or
//!    removed name only after `sync_dir` of its directory. Nothing else promises it.
//! 3. After `sync` fails, the file's unsynced writes may be gone while the next `sync`
//!    succeeds (Linux drops the dirty pages and clears the error): callers never retry
//!    a failed sync as if it could recover them (PostgreSQL's data_sync_retry = off).
//! 4. Directories are created 0700 and files 0600, as PostgreSQL's data directory.

pub mod sim;

use std::fs;
use std::io;
use std::os::unix::fs::{DirBuilderExt, FileExt, OpenOptionsExt};
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// Mode of every file created (vfs rule 4).
pub const FILE_MODE: u32 = 0o600;
/// Mode of every directory created (vfs rule 4).
pub const DIR_MODE: u32 = 0o700;

/// An open file: positioned I/O only.
pub trait VfsFile: Send + Sync {
    fn read_at(&self, buf: &mut [u8], offset: u64) -> io::Result<usize>;
    fn write_all_at(&self, buf: &[u8], offset: u64) -> io::Result<()>;
    fn size_bytes(&self) -> io::Result<u64>;
    fn set_len(&self, len_bytes: u64) -> io::Result<()>;
    /// Makes every write to this file durable, with its size (`fsync`).
    fn sync(&self) -> io::Result<()>;
    /// Makes the data written durable, not the file's times (`fdatasync`): enough for a
    /// file whose size does not change (a preallocated WAL segment).
    fn sync_data(&self) -> io::Result<()> {
        self.sync()
    }
}

/// What kind of entry a directory listing names.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum EntryKind {
    File,
    Dir,
    Symlink,
}

/// One entry of a directory listing.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DirEntry {
    pub name: String,
    pub kind: EntryKind,
}

/// A file system.
pub trait Vfs: Send + Sync {
    /// Opens a file for reading and writing; creates it if `create` (never truncates).
    fn open(&self, path: &Path, create: bool) -> io::Result<Arc<dyn VfsFile>>;
    fn remove_file(&self, path: &Path) -> io::Result<()>;
    /// Renames `from` to `to`, replacing `to` if it exists (durable after `sync_dir`).
    fn rename(&self, from: &Path, to: &Path) -> io::Result<()>;
    fn create_dir(&self, path: &Path) -> io::Result<()>;
    fn create_dir_all(&self, path: &Path) -> io::Result<()>;
    fn remove_dir_all(&self, path: &Path) -> io::Result<()>;
    fn symlink(&self, target: &Path, link: &Path) -> io::Result<()>;
    fn read_link(&self, link: &Path) -> io::Result<PathBuf>;
    fn exists(&self, path: &Path) -> bool;
    /// True if `path` is a directory with no entries.
    fn dir_is_empty(&self, path: &Path) -> io::Result<bool>;
    /// The entries of a directory (no `.`/`..`), in no particular order.
    fn list_dir(&self, path: &Path) -> io::Result<Vec<DirEntry>>;
    /// Makes a directory's entries (creations, removals) durable.
    fn sync_dir(&self, path: &Path) -> io::Result<()>;
    /// Makes everything written to the file system holding `path` durable (syncfs).
    fn syncfs(&self, path: &Path) -> io::Result<()>;
}

/// Reads a whole file.
pub fn read_file(vfs: &dyn Vfs, path: &Path) -> io::Result<Vec<u8>> {
    let f = vfs.open(path, false)?;
    let len = f.size_bytes()? as usize;
    let mut buf = vec![0u8; len];
    let got = f.read_at(&mut buf, 0)?;
    buf.truncate(got);
    Ok(buf)
}

/// Replaces `path` with `bytes` atomically and durably: a temporary file beside it is
/// written and fsynced, renamed over `path`, and the directory fsynced. A crash leaves
/// the old or the new content whole, never a mix (the control file's way;
/// PostgreSQL's durable_rename).
pub fn write_atomic(vfs: &dyn Vfs, path: &Path, bytes: &[u8]) -> io::Result<()> {
    let mut tmp = path.as_os_str().to_owned();
    tmp.push(".tmp");
    let tmp = PathBuf::from(tmp);
    let f = vfs.open(&tmp, true)?;
    f.set_len(0)?;
    f.write_all_at(bytes, 0)?;
    f.sync()?;
    drop(f);
    vfs.rename(&tmp, path)?;
    let dir = path.parent().unwrap_or(Path::new("."));
    vfs.sync_dir(dir)
}

/// fsyncs every file and directory under `root`, following symbolic links to
/// directories (tablespaces). PostgreSQL's SyncDataDirectory with
/// `recovery_init_sync_method = fsync`: crash recovery starts by making durable what the
/// crashed process left in the kernel's page cache. O(files under `root`). Returns the
/// number of files synced.
pub fn sync_tree(vfs: &dyn Vfs, root: &Path) -> io::Result<u64> {
    let mut synced = 0;
    let mut stack = vec![root.to_path_buf()];
    while let Some(dir) = stack.pop() {
        let entries = match vfs.list_dir(&dir) {
            Ok(e) => e,
            Err(e) if e.kind() == io::ErrorKind::NotFound => continue,
            Err(e) => return Err(e),
        };
        for e in entries {
            let path = dir.join(&e.name);
            match e.kind {
                EntryKind::Dir => stack.push(path),
                EntryKind::Symlink => {
                    if fs::metadata(&path).is_ok_and(|m| m.is_dir()) {
                        stack.push(path);
                    }
                }
                EntryKind::File => match vfs.open(&path, false) {
                    Ok(f) => {
                        f.sync()?;
                        synced += 1;
                    }
                    // Removed meanwhile, or not ours to write (skip as PostgreSQL does).
                    Err(e) if e.kind() == io::ErrorKind::NotFound => {}
                    Err(e) if e.kind() == io::ErrorKind::PermissionDenied => {}
                    Err(e) => return Err(e),
                },
            }
        }
        vfs.sync_dir(&dir)?;
    }
    Ok(synced)
}

/// syncfs() of the file system of `root` and of each tablespace linked from
/// `root/pg_tblspc` (`recovery_init_sync_method = syncfs`). O(tablespaces).
pub fn sync_filesystems(vfs: &dyn Vfs, root: &Path) -> io::Result<()> {
    vfs.syncfs(root)?;
    let tblspc = root.join("pg_tblspc");
    match vfs.list_dir(&tblspc) {
        Ok(entries) => {
            for e in entries {
                vfs.syncfs(&tblspc.join(e.name))?;
            }
            Ok(())
        }
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(()),
        Err(e) => Err(e),
    }
}

/// The kinds of durable file, for fault injection and for deciding which failures are
/// fatal. Classified by path, the way PostgreSQL's layout names them.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum FileKind {
    /// A relation fork (`base/`, `global/<n>`, tablespaces).
    Data,
    /// A WAL segment (`pg_wal/`).
    Wal,
    /// The commit log (`pg_xact/`).
    Xact,
    /// `global/pg_control`.
    Control,
    /// Anything else (lock file, configuration, logs).
    Other,
}

impl FileKind {
    pub const ALL: [FileKind; 5] = [
        FileKind::Data,
        FileKind::Wal,
        FileKind::Xact,
        FileKind::Control,
        FileKind::Other,
    ];

    /// The kind of the file at `path` (a temporary `.tmp` beside a file is its kind).
    pub fn of(path: &Path) -> FileKind {
        let name = path
            .file_name()
            .map(|n| n.to_string_lossy())
            .unwrap_or_default();
        let name = name.strip_suffix(".tmp").unwrap_or(&name);
        let under = |dir: &str| path.components().any(|c| c.as_os_str() == dir);
        if name == "pg_control" {
            FileKind::Control
        } else if under("pg_wal") {
            FileKind::Wal
        } else if under("pg_xact") {
            FileKind::Xact
        } else if name.starts_with(|c: char| c.is_ascii_digit())
            && (under("base") || under("global") || under("pg_tblspc") || under("STRATA_1"))
        {
            FileKind::Data
        } else {
            FileKind::Other
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            FileKind::Data => "data",
            FileKind::Wal => "wal",
            FileKind::Xact => "xact",
            FileKind::Control => "control",
            FileKind::Other => "other",
        }
    }

    pub fn parse(s: &str) -> Option<FileKind> {
        FileKind::ALL.into_iter().find(|k| k.name() == s)
    }
}

/// The real file system.
#[derive(Default, Debug)]
pub struct StdVfs;

impl StdVfs {
    /// The real file system, shared.
    pub fn arc() -> Arc<dyn Vfs> {
        Arc::new(StdVfs)
    }
}

struct StdFile(fs::File);

impl VfsFile for StdFile {
    fn read_at(&self, buf: &mut [u8], offset: u64) -> io::Result<usize> {
        let mut done = 0;
        while done < buf.len() {
            match self.0.read_at(&mut buf[done..], offset + done as u64) {
                Ok(0) => break,
                Ok(n) => done += n,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) => return Err(e),
            }
        }
        Ok(done)
    }
    fn write_all_at(&self, buf: &[u8], offset: u64) -> io::Result<()> {
        self.0.write_all_at(buf, offset)
    }
    fn size_bytes(&self) -> io::Result<u64> {
        Ok(self.0.metadata()?.len())
    }
    fn set_len(&self, len: u64) -> io::Result<()> {
        self.0.set_len(len)
    }
    fn sync(&self) -> io::Result<()> {
        self.0.sync_all()
    }
    fn sync_data(&self) -> io::Result<()> {
        self.0.sync_data()
    }
}

impl Vfs for StdVfs {
    fn open(&self, path: &Path, create: bool) -> io::Result<Arc<dyn VfsFile>> {
        let f = fs::OpenOptions::new()
            .read(true)
            .write(true)
            .create(create)
            .truncate(false)
            .mode(FILE_MODE)
            .open(path)?;
        Ok(Arc::new(StdFile(f)))
    }
    fn remove_file(&self, path: &Path) -> io::Result<()> {
        fs::remove_file(path)
    }
    fn rename(&self, from: &Path, to: &Path) -> io::Result<()> {
        fs::rename(from, to)
    }
    fn create_dir(&self, path: &Path) -> io::Result<()> {
        fs::DirBuilder::new().mode(DIR_MODE).create(path)
    }
    fn create_dir_all(&self, path: &Path) -> io::Result<()> {
        fs::DirBuilder::new()
            .recursive(true)
            .mode(DIR_MODE)
            .create(path)
    }
    fn remove_dir_all(&self, path: &Path) -> io::Result<()> {
        fs::remove_dir_all(path)
    }
    fn symlink(&self, target: &Path, link: &Path) -> io::Result<()> {
        std::os::unix::fs::symlink(target, link)
    }
    fn read_link(&self, link: &Path) -> io::Result<PathBuf> {
        fs::read_link(link)
    }
    fn exists(&self, path: &Path) -> bool {
        path.exists()
    }
    fn dir_is_empty(&self, path: &Path) -> io::Result<bool> {
        Ok(fs::read_dir(path)?.next().is_none())
    }
    fn list_dir(&self, path: &Path) -> io::Result<Vec<DirEntry>> {
        let mut out = Vec::new();
        for e in fs::read_dir(path)? {
            let e = e?;
            let t = e.file_type()?;
            let kind = if t.is_symlink() {
                EntryKind::Symlink
            } else if t.is_dir() {
                EntryKind::Dir
            } else {
                EntryKind::File
            };
            out.push(DirEntry {
                name: e.file_name().to_string_lossy().into_owned(),
                kind,
            });
        }
        Ok(out)
    }
    fn sync_dir(&self, path: &Path) -> io::Result<()> {
        fs::File::open(path)?.sync_all()
    }
    fn syncfs(&self, path: &Path) -> io::Result<()> {
        // coreutils' `sync -f` is syncfs(2) on the file system of its argument: no
        // unsafe FFI here for a once-per-recovery call.
        let out = std::process::Command::new("sync")
            .arg("-f")
            .arg(path)
            .output()?;
        if out.status.success() {
            Ok(())
        } else {
            Err(io::Error::other(format!(
                "sync -f {} failed: {}",
                path.display(),
                String::from_utf8_lossy(&out.stderr).trim()
            )))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    #[test]
    fn kinds_by_path() {
        let k = |p: &str| FileKind::of(Path::new(p));
        assert_eq!(k("/d/base/5/16384"), FileKind::Data);
        assert_eq!(k("/d/base/5/16384_fsm.1"), FileKind::Data);
        assert_eq!(k("/d/global/1262"), FileKind::Data);
        assert_eq!(k("/d/pg_tblspc/9/STRATA_1/5/7_vm"), FileKind::Data);
        assert_eq!(k("/d/pg_wal/000000010000000000000001"), FileKind::Wal);
        assert_eq!(k("/d/pg_wal/000000010000000000000001.tmp"), FileKind::Wal);
        assert_eq!(k("/d/pg_xact/0000"), FileKind::Xact);
        assert_eq!(k("/d/global/pg_control"), FileKind::Control);
        assert_eq!(k("/d/global/pg_control.tmp"), FileKind::Control);
        assert_eq!(k("/d/global/1260"), FileKind::Data);
        assert_eq!(k("/d/postmaster.pid"), FileKind::Other);
        for kind in FileKind::ALL {
            assert_eq!(FileKind::parse(kind.name()), Some(kind));
        }
    }

    #[test]
    fn atomic_replace_modes_and_tree_sync() {
        let dir = tempfile::tempdir().unwrap();
        let vfs = StdVfs;
        let sub = dir.path().join("a/b");
        vfs.create_dir_all(&sub).unwrap();
        let p = sub.join("f");
        write_atomic(&vfs, &p, b"first").unwrap();
        write_atomic(&vfs, &p, b"2nd").unwrap();
        assert_eq!(read_file(&vfs, &p).unwrap(), b"2nd");
        assert!(!sub.join("f.tmp").exists());
        let mode = |p: &Path| fs::metadata(p).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode(&p), FILE_MODE);
        assert_eq!(mode(&sub), DIR_MODE);
        assert_eq!(sync_tree(&vfs, dir.path()).unwrap(), 1);
        let mut names: Vec<_> = vfs
            .list_dir(&sub)
            .unwrap()
            .into_iter()
            .map(|e| e.name)
            .collect();
        names.sort();
        assert_eq!(names, ["f"]);
    }
}
