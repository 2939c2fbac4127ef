//! A simulated disk over the real one: what a power loss would keep, and injected I/O
//! errors — SQLite's crash VFS (`src/test6.c`) and redb's crash-consistency tests, done
//! our way.
//!
//! Entry points: [`SimVfs::new`], [`SimVfs::arm`], [`SimVfs::power_loss`],
//! [`SimVfs::power_loss_and_exit`].
//!
//! Writes go through to the real files (so reads, other processes and recovery see what
//! a kernel's page cache would show), and each write or size change not yet covered by
//! an `fsync` of its file is remembered with the bytes it replaced. A power loss undoes
//! them all, newest first, back to what was last synced, then re-applies a random
//! subset of them in their order, some torn at 512-byte sector granularity: any state a
//! real disk could be left in after losing power with those writes in flight.
//!
//! Rules (cited as "sim rule N"):
//! 1. The model is per file, as the kernel's: `sync` of a file makes all of its writes
//!    durable, whoever wrote them. With a journal path, the unsynced writes are also
//!    appended to a journal file, so the next process over the same directory inherits
//!    them (a process crash keeps the page cache; only a power loss loses it), and its
//!    power loss can undo what an earlier, crashed process never synced.
//! 2. An injected `sync` failure behaves as Linux does after a write-back error: the
//!    file's unsynced writes are lost (undone) and the error is reported once; the next
//!    `sync` succeeds. An injected write failure writes nothing.
//! 3. After a power loss every operation fails: the process is expected to end (or, in a
//!    test, to drop what it holds and open the directory afresh).
//! 4. Not modelled: directory entries. A created, renamed or removed name is taken as
//!    durable at once (`sync_dir` is a no-op here, except for injected failures).

use crate::{DirEntry, FileKind, Vfs, VfsFile};
use parking_lot::Mutex;
use rand::{RngExt, SeedableRng};
use rand_xorshift::XorShiftRng;
use std::collections::HashMap;
use std::io::{self, Read, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

/// Sector size for torn writes.
const SECTOR_BYTES: usize = 512;

/// Which operation a fault hits.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FaultOp {
    Write,
    Sync,
}

/// The error a fault returns (or, for `Panic`, a panic in the middle of the I/O: a
/// bug while engine state is held).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FaultErrno {
    Eio,
    Enospc,
    Panic,
}

impl FaultErrno {
    fn error(self) -> io::Error {
        match self {
            FaultErrno::Eio => io::Error::from_raw_os_error(5),
            FaultErrno::Enospc => io::Error::from_raw_os_error(28),
            FaultErrno::Panic => panic!("injected panic in the middle of an I/O"),
        }
    }
}

/// One injected failure: the `after`-th (0-based) matching operation on a file of
/// `kind` fails, once.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Fault {
    pub kind: FileKind,
    pub op: FaultOp,
    pub errno: FaultErrno,
    pub after: u64,
}

impl Fault {
    /// Parses `kind:op:errno:after`, e.g. `wal:sync:eio:3` (errno: `eio`, `enospc`,
    /// `panic`).
    pub fn parse(s: &str) -> Option<Fault> {
        let p: Vec<&str> = s.split(':').collect();
        let [kind, op, errno, after] = p.as_slice() else {
            return None;
        };
        Some(Fault {
            kind: FileKind::parse(kind)?,
            op: match *op {
                "write" => FaultOp::Write,
                "sync" => FaultOp::Sync,
                _ => return None,
            },
            errno: match *errno {
                "eio" => FaultErrno::Eio,
                "enospc" => FaultErrno::Enospc,
                "panic" => FaultErrno::Panic,
                _ => return None,
            },
            after: after.parse().ok()?,
        })
    }
}

/// New bytes of a write; runs of zeros (WAL segments are zero-filled) cost nothing.
#[derive(Clone, Debug)]
enum Bytes {
    Data(Vec<u8>),
    Zeros(usize),
}

impl Bytes {
    fn of(b: &[u8]) -> Bytes {
        if b.iter().all(|x| *x == 0) {
            Bytes::Zeros(b.len())
        } else {
            Bytes::Data(b.to_vec())
        }
    }
    fn len(&self) -> usize {
        match self {
            Bytes::Data(d) => d.len(),
            Bytes::Zeros(n) => *n,
        }
    }
    fn to_vec(&self) -> Vec<u8> {
        match self {
            Bytes::Data(d) => d.clone(),
            Bytes::Zeros(n) => vec![0; *n],
        }
    }
}

/// One change not yet covered by a sync, with what it replaced.
#[derive(Clone, Debug)]
enum Change {
    Write {
        offset: u64,
        old_len: u64,
        old: Vec<u8>,
        new: Bytes,
    },
    SetLen {
        old_len: u64,
        new_len: u64,
        /// Bytes cut off by a shrink.
        old_tail: Vec<u8>,
    },
}

#[derive(Default)]
struct State {
    unsynced: HashMap<PathBuf, Vec<Change>>,
    faults: Vec<(Fault, u64)>,
    injected: Vec<String>,
    journal: Option<std::fs::File>,
}

struct Shared {
    state: Mutex<State>,
    dead: AtomicBool,
    real_sync: bool,
}

/// The simulated disk. See the module doc.
#[derive(Clone)]
pub struct SimVfs {
    sh: Arc<Shared>,
}

fn dead_err() -> io::Error {
    io::Error::other("simulated power loss: the disk is gone")
}

impl SimVfs {
    /// A simulated disk over the real files. With `journal`, unsynced changes recorded
    /// there by an earlier process are inherited (sim rule 1) and new ones appended.
    /// `real_sync` also calls the real fsync (off in tests: nothing real is lost).
    pub fn new(journal: Option<&Path>, real_sync: bool) -> io::Result<SimVfs> {
        let mut state = State::default();
        if let Some(path) = journal {
            let old = match std::fs::read(path) {
                Ok(b) => b,
                Err(e) if e.kind() == io::ErrorKind::NotFound => Vec::new(),
                Err(e) => return Err(e),
            };
            journal::replay(&old, &mut state.unsynced)?;
            let mut f = std::fs::File::create(path)?;
            for (p, changes) in &state.unsynced {
                for c in changes {
                    f.write_all(&journal::change(p, c))?;
                }
            }
            state.journal = Some(f);
        }
        Ok(SimVfs {
            sh: Arc::new(Shared {
                state: Mutex::new(state),
                dead: AtomicBool::new(false),
                real_sync,
            }),
        })
    }

    /// Adds an injected failure (sim rule 2).
    pub fn arm(&self, fault: Fault) {
        self.sh.state.lock().faults.push((fault, 0));
    }

    /// What was injected so far, one line each.
    pub fn injected(&self) -> Vec<String> {
        self.sh.state.lock().injected.clone()
    }

    /// Bytes of changes not yet synced, over all files.
    pub fn unsynced_changes(&self) -> usize {
        self.sh.state.lock().unsynced.values().map(Vec::len).sum()
    }

    /// Loses power: every unsynced change is undone, then a random subset of them
    /// re-applied in order, some torn (module doc). Every later operation fails (sim
    /// rule 3). Returns how many changes were kept, of how many.
    pub fn power_loss(&self, seed: u64) -> io::Result<(usize, usize)> {
        self.sh.dead.store(true, Ordering::SeqCst);
        let mut st = self.sh.state.lock();
        let mut rng = XorShiftRng::seed_from_u64(seed);
        let mut paths: Vec<PathBuf> = st.unsynced.keys().cloned().collect();
        paths.sort();
        let (mut kept, mut total) = (0, 0);
        for path in paths {
            let changes = st.unsynced.remove(&path).unwrap_or_default();
            let f = match std::fs::OpenOptions::new().write(true).open(&path) {
                Ok(f) => f,
                Err(e) if e.kind() == io::ErrorKind::NotFound => continue,
                Err(e) => return Err(e),
            };
            for c in changes.iter().rev() {
                undo(&f, c)?;
            }
            // Per file: keep none, all, or each with even odds.
            let keep_p = [0.0, 1.0, 0.5][rng.random_range(0..3)];
            for c in &changes {
                total += 1;
                if rng.random_bool(keep_p) {
                    kept += 1;
                    redo(&f, c, &mut rng)?;
                }
            }
        }
        if let Some(j) = &mut st.journal {
            j.set_len(0)?;
        }
        Ok((kept, total))
    }

    /// [`SimVfs::power_loss`], then ends the process at once (no destructor, no flush
    /// of anything else: what is not on the simulated disk is gone).
    pub fn power_loss_and_exit(&self, seed: u64) -> ! {
        let code = match self.power_loss(seed) {
            Ok(_) => 0,
            Err(e) => {
                eprintln!("power loss simulation failed: {e}");
                3
            }
        };
        std::process::exit(code)
    }

    fn check(&self) -> io::Result<()> {
        if self.sh.dead.load(Ordering::SeqCst) {
            Err(dead_err())
        } else {
            Ok(())
        }
    }

    /// Consumes a matching fault, if one is due.
    fn fault(st: &mut State, path: &Path, op: FaultOp) -> Option<io::Error> {
        let kind = FileKind::of(path);
        let mut hit = None;
        for (f, seen) in st.faults.iter_mut() {
            if f.kind == kind && f.op == op {
                if *seen == f.after {
                    hit = Some(*f);
                }
                *seen += 1;
            }
        }
        let f = hit?;
        st.faults.retain(|(g, _)| *g != f);
        st.injected
            .push(format!("{:?} on {:?} of {}", f.errno, op, path.display()));
        Some(f.errno.error())
    }

    fn record(st: &mut State, path: &Path, c: Change) {
        if let Some(j) = &mut st.journal {
            // The journal is a test artifact on the real disk: a failed append only
            // weakens the model, so it is reported, never hidden.
            if let Err(e) = j.write_all(&journal::change(path, &c)) {
                st.injected.push(format!("journal append failed: {e}"));
            }
        }
        st.unsynced.entry(path.to_path_buf()).or_default().push(c);
    }

    fn forget(st: &mut State, path: &Path, tag: u8) {
        st.unsynced.remove(path);
        if let Some(j) = &mut st.journal {
            let _ = j.write_all(&journal::path_only(tag, path));
        }
    }
}

fn undo(f: &std::fs::File, c: &Change) -> io::Result<()> {
    use std::os::unix::fs::FileExt;
    match c {
        Change::Write {
            offset,
            old_len,
            old,
            new,
        } => {
            f.write_all_at(old, *offset)?;
            if *old_len < offset + new.len() as u64 {
                f.set_len(*old_len)?;
            }
        }
        Change::SetLen {
            old_len,
            new_len,
            old_tail,
        } => {
            f.set_len(*old_len)?;
            if !old_tail.is_empty() {
                f.write_all_at(old_tail, *new_len)?;
            }
        }
    }
    Ok(())
}

fn redo(f: &std::fs::File, c: &Change, rng: &mut XorShiftRng) -> io::Result<()> {
    use std::os::unix::fs::FileExt;
    match c {
        Change::Write { offset, new, .. } => {
            let bytes = new.to_vec();
            if bytes.len() > SECTOR_BYTES && rng.random_bool(0.25) {
                // Torn: a random subset of its sectors reached the platter.
                for (i, sector) in bytes.chunks(SECTOR_BYTES).enumerate() {
                    if rng.random_bool(0.5) {
                        f.write_all_at(sector, offset + (i * SECTOR_BYTES) as u64)?;
                    }
                }
            } else {
                f.write_all_at(&bytes, *offset)?;
            }
        }
        Change::SetLen { new_len, .. } => f.set_len(*new_len)?,
    }
    Ok(())
}

struct SimFile {
    path: PathBuf,
    inner: Arc<dyn VfsFile>,
    vfs: SimVfs,
}

impl SimFile {
    /// A write or size change: under the state lock, unless a fault is due, `apply`
    /// does it on the real file (given its old length) and describes what it replaced,
    /// which is remembered until the file is synced.
    fn change(
        &self,
        apply: impl FnOnce(&dyn VfsFile, u64) -> io::Result<Change>,
    ) -> io::Result<()> {
        let mut st = self.vfs.sh.state.lock();
        self.vfs.check()?;
        if let Some(e) = SimVfs::fault(&mut st, &self.path, FaultOp::Write) {
            return Err(e);
        }
        let old_len = self.inner.size_bytes()?;
        let change = apply(&*self.inner, old_len)?;
        SimVfs::record(&mut st, &self.path, change);
        Ok(())
    }
}

/// The bytes of `f` in `[from, to)` (empty if `to <= from`).
fn read_range(f: &dyn VfsFile, from: u64, to: u64) -> io::Result<Vec<u8>> {
    if to <= from {
        return Ok(Vec::new());
    }
    let mut b = vec![0u8; (to - from) as usize];
    let got = f.read_at(&mut b, from)?;
    b.truncate(got);
    Ok(b)
}

impl VfsFile for SimFile {
    fn read_at(&self, buf: &mut [u8], offset: u64) -> io::Result<usize> {
        self.vfs.check()?;
        self.inner.read_at(buf, offset)
    }

    fn write_all_at(&self, buf: &[u8], offset: u64) -> io::Result<()> {
        self.change(|f, old_len| {
            let end = old_len.min(offset + buf.len() as u64);
            let old = read_range(f, offset, end)?;
            f.write_all_at(buf, offset)?;
            Ok(Change::Write {
                offset,
                old_len,
                old,
                new: Bytes::of(buf),
            })
        })
    }

    fn size_bytes(&self) -> io::Result<u64> {
        self.vfs.check()?;
        self.inner.size_bytes()
    }

    fn set_len(&self, len: u64) -> io::Result<()> {
        self.change(|f, old_len| {
            let old_tail = read_range(f, len, old_len)?;
            f.set_len(len)?;
            Ok(Change::SetLen {
                old_len,
                new_len: len,
                old_tail,
            })
        })
    }

    fn sync(&self) -> io::Result<()> {
        let mut st = self.vfs.sh.state.lock();
        self.vfs.check()?;
        if let Some(e) = SimVfs::fault(&mut st, &self.path, FaultOp::Sync) {
            // Sim rule 2: the kernel dropped the dirty pages; the error is reported once.
            if let Some(changes) = st.unsynced.get(&self.path) {
                let f = std::fs::OpenOptions::new().write(true).open(&self.path)?;
                for c in changes.iter().rev() {
                    undo(&f, c)?;
                }
            }
            SimVfs::forget(&mut st, &self.path, b'S');
            return Err(e);
        }
        if self.vfs.sh.real_sync {
            self.inner.sync()?;
        }
        SimVfs::forget(&mut st, &self.path, b'S');
        Ok(())
    }
}

impl Vfs for SimVfs {
    fn open(&self, path: &Path, create: bool) -> io::Result<Arc<dyn VfsFile>> {
        self.check()?;
        let inner = crate::StdVfs.open(path, create)?;
        Ok(Arc::new(SimFile {
            path: path.to_path_buf(),
            inner,
            vfs: self.clone(),
        }))
    }
    fn remove_file(&self, path: &Path) -> io::Result<()> {
        let mut st = self.sh.state.lock();
        self.check()?;
        crate::StdVfs.remove_file(path)?;
        SimVfs::forget(&mut st, path, b'D');
        Ok(())
    }
    fn rename(&self, from: &Path, to: &Path) -> io::Result<()> {
        let mut st = self.sh.state.lock();
        self.check()?;
        crate::StdVfs.rename(from, to)?;
        let moved = st.unsynced.remove(from);
        SimVfs::forget(&mut st, to, b'D');
        SimVfs::forget(&mut st, from, b'D');
        for c in moved.unwrap_or_default() {
            SimVfs::record(&mut st, to, c);
        }
        Ok(())
    }
    fn create_dir(&self, path: &Path) -> io::Result<()> {
        self.check()?;
        crate::StdVfs.create_dir(path)
    }
    fn create_dir_all(&self, path: &Path) -> io::Result<()> {
        self.check()?;
        crate::StdVfs.create_dir_all(path)
    }
    fn remove_dir_all(&self, path: &Path) -> io::Result<()> {
        let mut st = self.sh.state.lock();
        self.check()?;
        crate::StdVfs.remove_dir_all(path)?;
        let gone: Vec<PathBuf> = st
            .unsynced
            .keys()
            .filter(|p| p.starts_with(path))
            .cloned()
            .collect();
        for p in gone {
            SimVfs::forget(&mut st, &p, b'D');
        }
        Ok(())
    }
    fn symlink(&self, target: &Path, link: &Path) -> io::Result<()> {
        self.check()?;
        crate::StdVfs.symlink(target, link)
    }
    fn read_link(&self, link: &Path) -> io::Result<PathBuf> {
        self.check()?;
        crate::StdVfs.read_link(link)
    }
    fn exists(&self, path: &Path) -> bool {
        crate::StdVfs.exists(path)
    }
    fn dir_is_empty(&self, path: &Path) -> io::Result<bool> {
        self.check()?;
        crate::StdVfs.dir_is_empty(path)
    }
    fn list_dir(&self, path: &Path) -> io::Result<Vec<DirEntry>> {
        self.check()?;
        crate::StdVfs.list_dir(path)
    }
    fn sync_dir(&self, path: &Path) -> io::Result<()> {
        let mut st = self.sh.state.lock();
        self.check()?;
        if let Some(e) = SimVfs::fault(&mut st, path, FaultOp::Sync) {
            return Err(e);
        }
        if self.sh.real_sync {
            crate::StdVfs.sync_dir(path)?;
        }
        Ok(())
    }
    fn syncfs(&self, path: &Path) -> io::Result<()> {
        let mut st = self.sh.state.lock();
        self.check()?;
        if let Some(e) = SimVfs::fault(&mut st, path, FaultOp::Sync) {
            return Err(e);
        }
        if self.sh.real_sync {
            crate::StdVfs.syncfs(path)?;
        }
        // One simulated disk: every file's changes become durable.
        let all: Vec<PathBuf> = st.unsynced.keys().cloned().collect();
        for p in all {
            SimVfs::forget(&mut st, &p, b'S');
        }
        Ok(())
    }
}

/// The journal's byte format (little-endian), one entry after another:
///
/// | tag | fields |
/// |-----|--------|
/// | `W` | path, offset u64, old_len u64, old bytes, new: zeros flag u8 + (len u64 or bytes) |
/// | `L` | path, old_len u64, new_len u64, old tail bytes |
/// | `S` | path: synced, its changes are durable |
/// | `D` | path: removed or replaced, its changes are moot |
///
/// A path or bytes field is a u64 length and the bytes. A torn last entry (the process
/// died mid-append) is ignored.
mod journal {
    use super::{Bytes, Change};
    use std::collections::HashMap;
    use std::io;
    use std::path::{Path, PathBuf};

    fn put_bytes(out: &mut Vec<u8>, b: &[u8]) {
        out.extend_from_slice(&(b.len() as u64).to_le_bytes());
        out.extend_from_slice(b);
    }

    pub fn path_only(tag: u8, path: &Path) -> Vec<u8> {
        let mut out = vec![tag];
        put_bytes(&mut out, path.as_os_str().as_encoded_bytes());
        out
    }

    pub fn change(path: &Path, c: &Change) -> Vec<u8> {
        match c {
            Change::Write {
                offset,
                old_len,
                old,
                new,
            } => {
                let mut out = path_only(b'W', path);
                out.extend_from_slice(&offset.to_le_bytes());
                out.extend_from_slice(&old_len.to_le_bytes());
                put_bytes(&mut out, old);
                match new {
                    Bytes::Zeros(n) => {
                        out.push(1);
                        out.extend_from_slice(&(*n as u64).to_le_bytes());
                    }
                    Bytes::Data(d) => {
                        out.push(0);
                        put_bytes(&mut out, d);
                    }
                }
                out
            }
            Change::SetLen {
                old_len,
                new_len,
                old_tail,
            } => {
                let mut out = path_only(b'L', path);
                out.extend_from_slice(&old_len.to_le_bytes());
                out.extend_from_slice(&new_len.to_le_bytes());
                put_bytes(&mut out, old_tail);
                out
            }
        }
    }

    struct Cursor<'a>(&'a [u8]);

    impl Cursor<'_> {
        fn u64(&mut self) -> Option<u64> {
            let (h, t) = self.0.split_at_checked(8)?;
            self.0 = t;
            Some(u64::from_le_bytes(h.try_into().ok()?))
        }
        fn u8(&mut self) -> Option<u8> {
            let (h, t) = self.0.split_first()?;
            self.0 = t;
            Some(*h)
        }
        fn bytes(&mut self) -> Option<Vec<u8>> {
            let n = usize::try_from(self.u64()?).ok()?;
            let (h, t) = self.0.split_at_checked(n)?;
            self.0 = t;
            Some(h.to_vec())
        }
        fn path(&mut self) -> Option<PathBuf> {
            Some(PathBuf::from(String::from_utf8(self.bytes()?).ok()?))
        }
    }

    fn entry(c: &mut Cursor<'_>, map: &mut HashMap<PathBuf, Vec<Change>>) -> Option<()> {
        let tag = c.u8()?;
        let path = c.path()?;
        match tag {
            b'W' => {
                let offset = c.u64()?;
                let old_len = c.u64()?;
                let old = c.bytes()?;
                let new = if c.u8()? == 1 {
                    Bytes::Zeros(usize::try_from(c.u64()?).ok()?)
                } else {
                    Bytes::Data(c.bytes()?)
                };
                let w = Change::Write {
                    offset,
                    old_len,
                    old,
                    new,
                };
                map.entry(path).or_default().push(w);
            }
            b'L' => {
                let old_len = c.u64()?;
                let new_len = c.u64()?;
                let old_tail = c.bytes()?;
                let l = Change::SetLen {
                    old_len,
                    new_len,
                    old_tail,
                };
                map.entry(path).or_default().push(l);
            }
            b'S' | b'D' => {
                map.remove(&path);
            }
            _ => return None,
        }
        Some(())
    }

    /// Rebuilds the unsynced changes from a journal.
    pub fn replay(bytes: &[u8], map: &mut HashMap<PathBuf, Vec<Change>>) -> io::Result<()> {
        let mut c = Cursor(bytes);
        while !c.0.is_empty() {
            if entry(&mut c, map).is_none() {
                break; // torn last entry
            }
        }
        Ok(())
    }
}

/// Reads a whole real file (tests).
pub fn read_real(path: &Path) -> io::Result<Vec<u8>> {
    let mut v = Vec::new();
    std::fs::File::open(path)?.read_to_end(&mut v)?;
    Ok(v)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn setup() -> (tempfile::TempDir, SimVfs) {
        (
            tempfile::tempdir().unwrap(),
            SimVfs::new(None, false).unwrap(),
        )
    }

    #[test]
    fn synced_writes_survive_unsynced_may_not() {
        let (dir, vfs) = setup();
        let p = dir.path().join("f");
        let f = vfs.open(&p, true).unwrap();
        f.write_all_at(&[1u8; 4096], 0).unwrap();
        f.sync().unwrap();
        f.write_all_at(&[2u8; 4096], 0).unwrap();
        f.write_all_at(&[3u8; 100], 8192).unwrap();
        assert_eq!(vfs.unsynced_changes(), 2);
        // Over many seeds, every outcome is the synced content plus some of the later
        // writes: never anything else, and the file never shrinks below what was synced.
        let mut outcomes = std::collections::BTreeSet::new();
        for seed in 0..40 {
            let (d2, v2) = setup();
            let q = d2.path().join("f");
            let g = v2.open(&q, true).unwrap();
            g.write_all_at(&[1u8; 4096], 0).unwrap();
            g.sync().unwrap();
            g.write_all_at(&[2u8; 4096], 0).unwrap();
            g.write_all_at(&[3u8; 100], 8192).unwrap();
            v2.power_loss(seed).unwrap();
            let got = read_real(&q).unwrap();
            assert!(got.len() == 4096 || got.len() == 8292, "len {}", got.len());
            for sector in got[..4096].chunks(SECTOR_BYTES) {
                assert!(sector.iter().all(|b| *b == 1) || sector.iter().all(|b| *b == 2));
            }
            if got.len() == 8292 {
                assert!(got[4096..8192].iter().all(|b| *b == 0));
                assert!(got[8192..].iter().all(|b| *b == 3));
            }
            outcomes.insert((got[0], got[4095], got.len()));
            assert!(
                v2.open(&q, false).is_err(),
                "sim rule 3: dead after power loss"
            );
        }
        assert!(outcomes.len() >= 3, "the subsets vary: {outcomes:?}");
    }

    #[test]
    fn failed_sync_loses_the_dirty_pages_once() {
        let (dir, vfs) = setup();
        let p = dir.path().join("pg_xact").join("0000");
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        let f = vfs.open(&p, true).unwrap();
        f.write_all_at(b"durable", 0).unwrap();
        f.sync().unwrap();
        vfs.arm(Fault::parse("xact:sync:eio:0").unwrap());
        f.write_all_at(b"lost!!!", 0).unwrap();
        let e = f.sync().unwrap_err();
        assert_eq!(e.raw_os_error(), Some(5));
        assert_eq!(read_real(&p).unwrap(), b"durable", "sim rule 2");
        f.sync().unwrap(); // reported once: the retry "succeeds", the data is gone
        assert_eq!(vfs.injected().len(), 1);
        vfs.arm(Fault::parse("xact:write:enospc:1").unwrap());
        f.write_all_at(b"a", 0).unwrap();
        assert_eq!(
            f.write_all_at(b"b", 0).unwrap_err().raw_os_error(),
            Some(28)
        );
    }

    #[test]
    fn journal_carries_unsynced_writes_to_the_next_process() {
        let dir = tempfile::tempdir().unwrap();
        let j = dir.path().join("journal");
        let p = dir.path().join("f");
        let p2 = dir.path().join("g");
        {
            let vfs = SimVfs::new(Some(&j), false).unwrap();
            let f = vfs.open(&p, true).unwrap();
            f.write_all_at(&[7u8; 600], 0).unwrap();
            let g = vfs.open(&p2, true).unwrap();
            g.write_all_at(&[8u8; 10], 0).unwrap();
            g.sync().unwrap();
            g.set_len(4).unwrap();
        } // "crashed": no sync of f, g's shrink unsynced
        let vfs = SimVfs::new(Some(&j), false).unwrap();
        assert_eq!(vfs.unsynced_changes(), 2);
        // Seeds differ in what they keep; undo always restores the synced state first.
        vfs.power_loss(7).unwrap();
        let f = read_real(&p).unwrap();
        assert!(f.is_empty() || f.len() == 600);
        let g = read_real(&p2).unwrap();
        assert!(g == [8u8; 10] || g == [8u8; 4]);
        let again = SimVfs::new(Some(&j), false).unwrap();
        assert_eq!(
            again.unsynced_changes(),
            0,
            "a power loss empties the journal"
        );
    }
}
