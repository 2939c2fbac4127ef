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

use crate::{EngineError, Result};
use parking_lot::RwLock;
use std::collections::BTreeSet;
use std::io;
use std::path::{Path, PathBuf};
use strata_types::{Xid, BLCKSZ};
use strata_vfs::Vfs;

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
    pub fn load(vfs: &dyn Vfs, data_dir: &Path) -> Result<Clog> {
        let dir = data_dir.join("pg_xact");
        let io = |op, path: &Path, source| EngineError::Io {
            op,
            path: path.to_path_buf(),
            source,
        };
        vfs.create_dir_all(&dir)
            .map_err(|e| io("create directory", &dir, e))?;
        let path = dir.join("0000");
        let bytes = match strata_vfs::read_file(vfs, &path) {
            Ok(b) => b,
            Err(e) if e.kind() == io::ErrorKind::NotFound => Vec::new(),
            Err(e) => return Err(io("read", &path, e)),
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
    /// O(pages changed). On a failure the pages stay dirty: nothing is forgotten (and
    /// the checkpoint that called this PANICs, engine rule 7).
    pub fn write_dirty(&self, vfs: &dyn Vfs) -> Result<usize> {
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
        let written = (|| -> io::Result<()> {
            let f = vfs.open(&self.path, true)?;
            for (p, d) in pages.iter().zip(&data) {
                f.write_all_at(d, (p * BLCKSZ) as u64)?;
            }
            f.sync()?;
            vfs.sync_dir(self.path.parent().unwrap_or(Path::new(".")))
        })();
        if let Err(e) = written {
            self.inner.write().dirty_pages.extend(pages);
            return Err(EngineError::Io {
                op: "write",
                path: self.path.clone(),
                source: e,
            });
        }
        Ok(pages.len())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use strata_vfs::StdVfs;

    #[test]
    fn statuses_survive_write_and_reload() {
        let dir = tempfile::tempdir().unwrap();
        let c = Clog::load(&StdVfs, dir.path()).unwrap();
        c.set(Xid(3), XidStatus::Committed);
        c.set(Xid(4), XidStatus::Aborted);
        c.set(Xid(100_000), XidStatus::Committed);
        assert_eq!(c.write_dirty(&StdVfs).unwrap(), 2);
        assert_eq!(c.write_dirty(&StdVfs).unwrap(), 0, "nothing changed since");
        let c = Clog::load(&StdVfs, dir.path()).unwrap();
        assert_eq!(c.status(Xid(3)), XidStatus::Committed);
        assert_eq!(c.status(Xid(4)), XidStatus::Aborted);
        assert_eq!(c.status(Xid(5)), XidStatus::InProgress);
        assert_eq!(c.status(Xid(100_000)), XidStatus::Committed);
        assert_eq!(c.status(Xid::BOOTSTRAP), XidStatus::Committed);
        assert_eq!(c.status(Xid(1 << 30)), XidStatus::InProgress);
    }
}
