//! The file-system boundary beneath the storage manager.
//!
//! Owns: the handful of file operations the storage manager needs, as a trait, so
//! tests can run the real storage manager against a backend that fails, tears or loses
//! writes. [`StdVfs`] is the real one (positioned reads and writes, no seeking, so one
//! open file serves concurrent readers and writers).
//!
//! Invariant: every operation reports errors as `std::io::Error`; a `NotFound` kind
//! means the file or directory does not exist, and callers rely on that kind.

use std::fs;
use std::io;
use std::os::unix::fs::FileExt;
use std::path::Path;
use std::sync::Arc;

/// An open file: positioned I/O only.
pub trait VfsFile: Send + Sync {
    fn read_at(&self, buf: &mut [u8], offset: u64) -> io::Result<usize>;
    fn write_all_at(&self, buf: &[u8], offset: u64) -> io::Result<()>;
    fn size_bytes(&self) -> io::Result<u64>;
    fn set_len(&self, len_bytes: u64) -> io::Result<()>;
    fn sync(&self) -> io::Result<()>;
}

/// A file system.
pub trait Vfs: Send + Sync {
    /// Opens a file for reading and writing; creates it if `create` (never truncates).
    fn open(&self, path: &Path, create: bool) -> io::Result<Arc<dyn VfsFile>>;
    fn remove_file(&self, path: &Path) -> io::Result<()>;
    fn create_dir(&self, path: &Path) -> io::Result<()>;
    fn create_dir_all(&self, path: &Path) -> io::Result<()>;
    fn remove_dir_all(&self, path: &Path) -> io::Result<()>;
    fn symlink(&self, target: &Path, link: &Path) -> io::Result<()>;
    fn read_link(&self, link: &Path) -> io::Result<std::path::PathBuf>;
    fn exists(&self, path: &Path) -> bool;
    /// True if `path` is a directory with no entries.
    fn dir_is_empty(&self, path: &Path) -> io::Result<bool>;
    /// Makes a directory's entries (creations, removals) durable.
    fn sync_dir(&self, path: &Path) -> io::Result<()>;
}

/// The real file system.
#[derive(Default, Debug)]
pub struct StdVfs;

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
}

impl Vfs for StdVfs {
    fn open(&self, path: &Path, create: bool) -> io::Result<Arc<dyn VfsFile>> {
        let f = fs::OpenOptions::new()
            .read(true)
            .write(true)
            .create(create)
            .truncate(false)
            .open(path)?;
        Ok(Arc::new(StdFile(f)))
    }
    fn remove_file(&self, path: &Path) -> io::Result<()> {
        fs::remove_file(path)
    }
    fn create_dir(&self, path: &Path) -> io::Result<()> {
        fs::create_dir(path)
    }
    fn create_dir_all(&self, path: &Path) -> io::Result<()> {
        fs::create_dir_all(path)
    }
    fn remove_dir_all(&self, path: &Path) -> io::Result<()> {
        fs::remove_dir_all(path)
    }
    fn symlink(&self, target: &Path, link: &Path) -> io::Result<()> {
        std::os::unix::fs::symlink(target, link)
    }
    fn read_link(&self, link: &Path) -> io::Result<std::path::PathBuf> {
        fs::read_link(link)
    }
    fn exists(&self, path: &Path) -> bool {
        path.exists()
    }
    fn dir_is_empty(&self, path: &Path) -> io::Result<bool> {
        Ok(fs::read_dir(path)?.next().is_none())
    }
    fn sync_dir(&self, path: &Path) -> io::Result<()> {
        fs::File::open(path)?.sync_all()
    }
}
