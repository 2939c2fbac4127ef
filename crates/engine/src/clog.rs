//! The commit log: two bits of status per transaction id, in `pg_xact/0000`.
//!
//! Entry points: [`Clog::load`], [`Clog::status`], [`Clog::set`],
//! [`Clog::write_dirty`].
//!
//! Rules:
//! 1. A transaction's status becomes `Committed` only after its commit record is
//!    durable; readers treat every status but `Committed` as "not visible".
//! 2. The file is written at checkpoints, only the 8 KiB pages changed since the
//!    previous one, then fsynced, before the control file names the checkpoint: statuses
//!    from before the redo point are on disk; later ones are rebuilt by replaying
//!    commit and abort records.
//! 3. Xids below [`Xid::FIRST_NORMAL`] (bootstrap) are always committed.

use parking_lot::RwLock;
use std::collections::BTreeSet;
use std::fs::{self, File, OpenOptions};
use std::io;
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};
use strata_types::{Xid, BLCKSZ};

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum XidStatus {
    InProgress = 0,
    Committed = 1,
    Aborted = 2,
}

struct Inner {
    bytes: Vec<u8>,
    dirty_pages: BTreeSet<usize>,
}

pub struct Clog {
    path: PathBuf,
    inner: RwLock<Inner>,
}

impl Clog {
    /// Reads `pg_xact/0000` (creating the directory if missing).
    pub fn load(data_dir: &Path) -> io::Result<Clog> {
        let dir = data_dir.join("pg_xact");
        fs::create_dir_all(&dir)?;
        let path = dir.join("0000");
        let bytes = match fs::read(&path) {
            Ok(b) => b,
            Err(e) if e.kind() == io::ErrorKind::NotFound => Vec::new(),
            Err(e) => return Err(e),
        };
        Ok(Clog {
            path,
            inner: RwLock::new(Inner {
                bytes,
                dirty_pages: BTreeSet::new(),
            }),
        })
    }

    pub fn status(&self, xid: Xid) -> XidStatus {
        if xid < Xid::FIRST_NORMAL {
            return if xid == Xid::INVALID {
                XidStatus::Aborted
            } else {
                XidStatus::Committed // rule 3
            };
        }
        let (byte, shift) = ((xid.0 / 4) as usize, (xid.0 % 4) * 2);
        let inner = self.inner.read();
        match inner.bytes.get(byte).map(|b| (b >> shift) & 3) {
            Some(1) => XidStatus::Committed,
            Some(2) => XidStatus::Aborted,
            _ => XidStatus::InProgress,
        }
    }

    pub fn is_committed(&self, xid: Xid) -> bool {
        self.status(xid) == XidStatus::Committed
    }

    pub fn set(&self, xid: Xid, status: XidStatus) {
        if xid < Xid::FIRST_NORMAL {
            return;
        }
        let (byte, shift) = ((xid.0 / 4) as usize, (xid.0 % 4) * 2);
        let mut inner = self.inner.write();
        if inner.bytes.len() <= byte {
            let len = (byte / BLCKSZ + 1) * BLCKSZ;
            inner.bytes.resize(len, 0);
        }
        let b = &mut inner.bytes[byte];
        *b = (*b & !(3 << shift)) | (status as u8) << shift;
        inner.dirty_pages.insert(byte / BLCKSZ);
    }

    /// Writes the pages changed since the last call and fsyncs (rule 2).
    /// O(pages changed).
    pub fn write_dirty(&self) -> io::Result<usize> {
        let (pages, data): (Vec<usize>, Vec<Vec<u8>>) = {
            let mut inner = self.inner.write();
            let pages: Vec<usize> = std::mem::take(&mut inner.dirty_pages).into_iter().collect();
            let data = pages
                .iter()
                .map(|p| inner.bytes[p * BLCKSZ..(p + 1) * BLCKSZ].to_vec())
                .collect();
            (pages, data)
        };
        if pages.is_empty() {
            return Ok(0);
        }
        let f = OpenOptions::new()
            .create(true)
            .truncate(false)
            .write(true)
            .open(&self.path)?;
        for (p, d) in pages.iter().zip(&data) {
            f.write_all_at(d, (p * BLCKSZ) as u64)?;
        }
        f.sync_all()?;
        if let Some(dir) = self.path.parent() {
            File::open(dir)?.sync_all()?;
        }
        Ok(pages.len())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn statuses_survive_write_and_reload() {
        let dir = tempfile::tempdir().unwrap();
        let c = Clog::load(dir.path()).unwrap();
        c.set(Xid(3), XidStatus::Committed);
        c.set(Xid(4), XidStatus::Aborted);
        c.set(Xid(100_000), XidStatus::Committed);
        assert_eq!(c.write_dirty().unwrap(), 2);
        assert_eq!(c.write_dirty().unwrap(), 0, "nothing changed since");
        let c = Clog::load(dir.path()).unwrap();
        assert_eq!(c.status(Xid(3)), XidStatus::Committed);
        assert_eq!(c.status(Xid(4)), XidStatus::Aborted);
        assert_eq!(c.status(Xid(5)), XidStatus::InProgress);
        assert_eq!(c.status(Xid(100_000)), XidStatus::Committed);
        assert_eq!(c.status(Xid::BOOTSTRAP), XidStatus::Committed);
        assert_eq!(c.status(Xid(1 << 30)), XidStatus::InProgress);
    }
}
