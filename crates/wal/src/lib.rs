//! The write-ahead log: an append-only stream of records addressed by LSN (byte
//! position), stored in fixed-size segment files under `pg_wal/`.
//!
//! Entry points: [`Wal::open`] (append after a known end), [`Wal::insert`],
//! [`Wal::flush`] (group flush; also the buffer pool's [`WalFlusher`]),
//! [`WalReader`] (replay; stops cleanly at the end of valid WAL and says why),
//! [`find_end`], [`control::ControlFile`] (`global/pg_control`: where recovery
//! starts), [`redo::redo`] (the redo loop, with PostgreSQL's log lines),
//! [`slots::Slots`] (replication slots: WAL kept for consumers) and [`read_bytes`]
//! (the stored bytes, for a WAL sender).
//!
//! Record layout (little-endian, every record starts 8-byte aligned; padding is zeros):
//!
//! | offset | size | field      | meaning                                            |
//! |--------|------|------------|----------------------------------------------------|
//! | 0      | 4    | `len`      | header + payload bytes (unpadded)                  |
//! | 4      | 4    | `crc`      | CRC32C of every other byte of the record           |
//! | 8      | 8    | `prev`     | LSN of the previous record                         |
//! | 16     | 8    | `lsn`      | this record's own LSN                              |
//! | 24     | 4    | `xid`      | transaction id, 0 if none                          |
//! | 28     | 1    | `rmgr`     | resource manager id                                |
//! | 29     | 1    | `info`     | record type within the resource manager            |
//! | 30     | 2    | reserved   | 0                                                  |
//! | 32     | len−32 | payload  |                                                    |
//!
//! Segment `n` holds LSNs `[n·S, (n+1)·S)` for segment size `S` (16 MiB by default) and
//! is named as PostgreSQL names it, after the timeline that wrote it
//! (`000000010000000000000001` is segment 1 of timeline 1). A record may cross a
//! segment boundary.
//!
//! Rules:
//! 1. A record is valid only if its length is sane, its CRC matches, its own `lsn` field
//!    equals where it was read, and its `prev` equals the previous record's LSN. The
//!    last two reject stale bytes of an older incarnation of the same position, so the
//!    reader never runs past the real end.
//! 2. [`Wal::open`] zeroes the segment holding the end from the end on and removes later
//!    segments: nothing beyond the end of valid WAL survives to be misread later.
//! 3. `flush(lsn)` returns only when every record ending at or before `lsn` is on disk
//!    (written and fsynced). Concurrent callers share one write+fsync (group flush).
//! 4. After a failed write or fsync the log refuses every further insert and flush
//!    (latched, never retried), like the storage manager.
//! 5. A segment is created whole, zero-filled and fsynced under a temporary name, then
//!    renamed (as PostgreSQL's `wal_init_zero`): commits then write into allocated
//!    blocks, so their fsync flushes data only, never the file's size or block map.
//! 6. Every byte counted flushed has been fsynced by this process: [`Wal::open`] fsyncs
//!    the segments it keeps, since a crashed predecessor may have left written but
//!    unsynced WAL in the page cache, which a power loss would still take.
//! 7. Every WAL file goes through the [`Vfs`] (`strata_vfs`), so tests can fail or lose
//!    its writes and syncs.
//! 9. A segment switch ([`Wal::switch_segment`]) is a record of resource manager 0,
//!    info [`XLOG_SWITCH_INFO`], after which the rest of its segment is unused: the
//!    next record starts at the next segment's first byte, and the reader skips there.
//!    So a segment can be completed (and archived) early (`archive_timeout`,
//!    `pg_switch_wal()`).
//! 8. A standby's WAL arrives from its primary ([`ReceivedWal`]): bytes are written at
//!    their own LSNs into zero-filled segments and count only once fsynced; replay
//!    reads with a [`WalReader`] limited to that fsynced end, so it never applies a
//!    record the standby could lose in a crash, nor reads a half-written one.
//! 11. A segment's file carries the timeline whose writer (a primary's [`Wal`], a
//!     standby's [`ReceivedWal`]) created it. A timeline that begins inside a segment
//!     starts its own file of that segment with the older file's bytes up to where it
//!     begins (PostgreSQL's copy at a timeline switch), so the segment of the highest
//!     timeline holds the whole history up to that timeline's end: readers take that
//!     one ([`locate_segment`]). The older file stays, for the archive.
//! 10. Whoever waits for WAL to become durable (a WAL sender) is told at the flush
//!     ([`Wal::set_flush_listener`]), under the writer lock, so it never has to poll;
//!     the listener must not block.

pub mod archive;
pub mod control;
pub mod redo;
pub mod slots;
pub mod timeline;

use parking_lot::Mutex;
use std::io;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, OnceLock};
use strata_buffer::WalFlusher;
use strata_types::Lsn;
use strata_vfs::{Vfs, VfsFile};
use thiserror::Error;

/// Default segment size, as PostgreSQL's.
pub const WAL_SEGMENT_BYTES_DEFAULT: u64 = 16 << 20;
pub const RECORD_HEADER_BYTES: usize = 32;
const RECORD_ALIGN: u64 = 8;
/// Largest record accepted (a sanity bound for the reader).
pub const RECORD_MAX_BYTES: u32 = 1 << 30;
/// Inserted bytes buffered before they are written out without waiting for a flush.
const WAL_BUFFERS_BYTES: usize = 4 << 20;

/// Rule 9: the segment switch record's resource manager and info (PostgreSQL's
/// XLOG_SWITCH).
pub const XLOG_SWITCH_RMGR: RmgrId = RmgrId(0);
pub const XLOG_SWITCH_INFO: u8 = 0x40;

/// Identifies the resource manager (heap, xact, smgr, ...) that replays a record.
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Debug)]
pub struct RmgrId(pub u8);

#[derive(Debug, Error)]
pub enum WalError {
    #[error("could not {op} WAL file \"{path}\": {source}")]
    Io {
        op: &'static str,
        path: PathBuf,
        #[source]
        source: io::Error,
    },
    #[error("WAL refuses writes after an earlier write or fsync failure; restart the server")]
    Failed,
    #[error("WAL flush request {request} is not satisfied: the log ends at {end}")]
    FlushBeyondEnd { request: Lsn, end: Lsn },
    #[error("WAL record too long: {0} bytes")]
    TooLong(usize),
    #[error("invalid wal_segment_size {0}: must be a power of two from 64kB to 1GB")]
    SegmentSize(u64),
}

pub type Result<T> = std::result::Result<T, WalError>;

fn io_err(op: &'static str, path: &Path, source: io::Error) -> WalError {
    WalError::Io {
        op,
        path: path.to_path_buf(),
        source,
    }
}

fn check_segment_bytes(seg: u64) -> Result<()> {
    if seg.is_power_of_two() && (64 << 10..=1 << 30).contains(&seg) {
        Ok(())
    } else {
        Err(WalError::SegmentSize(seg))
    }
}

/// File name of segment `segno` of timeline `tli`, PostgreSQL style.
pub fn segment_file_name(tli: u32, segno: u64, seg_bytes: u64) -> String {
    let per_log = 0x1_0000_0000 / seg_bytes;
    format!("{:08X}{:08X}{:08X}", tli, segno / per_log, segno % per_log)
}

/// The file of segment `segno` in `dir` (a `pg_wal`) to read: the highest timeline's
/// (rule 11), with that timeline. `hint` is the timeline the caller expects: when its
/// file exists and the next timeline's does not, two lookups by name answer; otherwise
/// the directory is listed. None if no timeline has the segment.
pub fn locate_segment(
    vfs: &dyn Vfs,
    dir: &Path,
    segno: u64,
    seg_bytes: u64,
    hint: u32,
) -> io::Result<Option<(u32, PathBuf)>> {
    let at = |t: u32| dir.join(segment_file_name(t, segno, seg_bytes));
    if hint > 0 && vfs.exists(&at(hint)) && !vfs.exists(&at(hint + 1)) {
        return Ok(Some((hint, at(hint))));
    }
    let best = vfs
        .list_dir(dir)?
        .into_iter()
        .filter_map(|e| parse_segment_name(&e.name, seg_bytes))
        .filter(|&(_, s)| s == segno)
        .map(|(t, _)| t)
        .max();
    Ok(best.map(|t| (t, at(t))))
}

fn align(n: u64) -> u64 {
    n.div_ceil(RECORD_ALIGN) * RECORD_ALIGN
}

/// CRC of a record: every byte but the CRC field itself.
fn record_crc(bytes: &[u8]) -> u32 {
    let c = crc32c::crc32c(&bytes[..4]);
    crc32c::crc32c_append(c, &bytes[8..])
}

/// One decoded record.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Record {
    pub lsn: Lsn,
    /// Where the next record starts.
    pub end: Lsn,
    pub prev: Lsn,
    pub xid: u32,
    pub rmgr: RmgrId,
    pub info: u8,
    pub payload: Vec<u8>,
}

struct InsertState {
    /// Bytes inserted but not yet written; `buf[0]` is at LSN `buf_start`.
    buf: Vec<u8>,
    buf_start: Lsn,
    next: Lsn,
    prev: Lsn,
}

/// Writes byte ranges of the stream into segment files (under the flush lock).
struct SegmentWriter {
    vfs: Arc<dyn Vfs>,
    dir: PathBuf,
    seg_bytes: u64,
    /// The timeline whose files it writes (rule 11).
    tli: u32,
    open: Option<(u64, Arc<dyn VfsFile>)>,
    /// Segments written since the last fsync.
    dirty: Vec<u64>,
    /// The insert buffer written last, emptied: swapped in for the next one, so the
    /// insert buffer keeps its capacity instead of growing again from nothing (and
    /// faulting in fresh memory) after every write.
    spare: Vec<u8>,
}

impl SegmentWriter {
    fn path(&self, segno: u64) -> PathBuf {
        self.dir
            .join(segment_file_name(self.tli, segno, self.seg_bytes))
    }

    /// The open file of `segno`, created if missing (rule 5) with an older timeline's
    /// bytes before `offset`, where this write starts (rule 11).
    fn file(&mut self, segno: u64, offset: u64) -> Result<&Arc<dyn VfsFile>> {
        if self.open.as_ref().map(|(s, _)| *s) != Some(segno) {
            let path = self.path(segno);
            if !self.vfs.exists(&path) {
                let prefix = self.older_prefix(segno, offset)?;
                create_zeroed(&*self.vfs, &self.dir, &path, self.seg_bytes, &prefix)?;
            }
            let f = self
                .vfs
                .open(&path, false)
                .map_err(|e| io_err("open", &path, e))?;
            self.open = Some((segno, f));
        }
        Ok(&self.open.as_ref().expect("just opened").1)
    }

    /// Bytes `[0, upto)` of the segment's file of an older timeline (rule 11); empty
    /// if there is none or nothing comes before.
    fn older_prefix(&self, segno: u64, upto: u64) -> Result<Vec<u8>> {
        if upto == 0 || self.tli <= 1 {
            return Ok(Vec::new());
        }
        let found = locate_segment(&*self.vfs, &self.dir, segno, self.seg_bytes, self.tli - 1)
            .map_err(|e| io_err("read directory", &self.dir, e))?;
        let Some((_, path)) = found.filter(|(t, _)| *t < self.tli) else {
            return Ok(Vec::new());
        };
        let f = self
            .vfs
            .open(&path, false)
            .map_err(|e| io_err("open", &path, e))?;
        let mut buf = vec![0u8; upto as usize];
        let got = read_full(&*f, &mut buf, 0).map_err(|e| io_err("read", &path, e))?;
        buf.truncate(got);
        Ok(buf)
    }

    fn write(&mut self, mut lsn: Lsn, mut bytes: &[u8]) -> Result<()> {
        while !bytes.is_empty() {
            let segno = lsn.0 / self.seg_bytes;
            let offset = lsn.0 % self.seg_bytes;
            let n = ((self.seg_bytes - offset) as usize).min(bytes.len());
            let path = self.path(segno);
            self.file(segno, offset)?
                .write_all_at(&bytes[..n], offset)
                .map_err(|e| io_err("write", &path, e))?;
            if self.dirty.last() != Some(&segno) {
                self.dirty.push(segno);
            }
            bytes = &bytes[n..];
            lsn += n as u64;
        }
        Ok(())
    }

    fn sync(&mut self) -> Result<()> {
        for segno in std::mem::take(&mut self.dirty) {
            let path = self.path(segno);
            self.file(segno, 0)?
                .sync_data()
                .map_err(|e| io_err("fsync", &path, e))?;
        }
        Ok(())
    }
}

/// The log, open for appending. See the module doc for its rules.
pub struct Wal {
    seg_bytes: u64,
    insert: Mutex<InsertState>,
    writer: Mutex<SegmentWriter>,
    flushed: AtomicU64,
    failed: AtomicBool,
    /// Archiving is on: completed segments get `.ready` (archive rule 1).
    archiving: AtomicBool,
    /// The next segment to mark ready.
    notified: AtomicU64,
    /// Told the new flushed end after every fsync that advanced it (rule 10).
    on_flush: OnceLock<LsnListener>,
}

/// Told of an LSN that advanced (a flush, a replay): wakes WAL senders and receivers
/// at once instead of at their next poll.
pub type LsnListener = Arc<dyn Fn(Lsn) + Send + Sync>;

impl Wal {
    /// Opens `data_dir/pg_wal` for appending at `end` (the end of valid WAL, as found by
    /// [`find_end`] or recovery), `prev` being the LSN of the last valid record (or
    /// `Lsn::INVALID` for an empty log). Cuts everything beyond `end` (rule 2), and
    /// fsyncs every segment it keeps before counting them flushed (rule 6). New
    /// segments are timeline `tli`'s (rule 11). O(segments in pg_wal).
    pub fn open(
        vfs: &Arc<dyn Vfs>,
        data_dir: &Path,
        seg_bytes: u64,
        (end, prev): (Lsn, Lsn),
        tli: u32,
    ) -> Result<Wal> {
        check_segment_bytes(seg_bytes)?;
        assert_eq!(end.0 % RECORD_ALIGN, 0, "WAL end {end} not aligned");
        let dir = data_dir.join("pg_wal");
        vfs.create_dir_all(&dir)
            .map_err(|e| io_err("create directory", &dir, e))?;
        let end_seg = end.0 / seg_bytes;
        let entries = vfs
            .list_dir(&dir)
            .map_err(|e| io_err("read directory", &dir, e))?;
        for entry in entries {
            let path = dir.join(&entry.name);
            if entry.name.ends_with(".tmp") {
                // A segment whose creation a crash interrupted (rule 5).
                vfs.remove_file(&path)
                    .map_err(|e| io_err("remove", &path, e))?;
                continue;
            }
            let Some((_, segno)) = parse_segment_name(&entry.name, seg_bytes) else {
                continue;
            };
            if segno > end_seg {
                vfs.remove_file(&path)
                    .map_err(|e| io_err("remove", &path, e))?;
                continue;
            }
            let f = vfs
                .open(&path, false)
                .map_err(|e| io_err("open", &path, e))?;
            if segno == end_seg {
                zero_from(&*f, end.0 % seg_bytes, seg_bytes)
                    .map_err(|e| io_err("zero the tail of", &path, e))?;
            }
            // Rule 6: bytes a crashed process left in the page cache are not durable
            // until this returns.
            f.sync().map_err(|e| io_err("fsync", &path, e))?;
        }
        vfs.sync_dir(&dir).map_err(|e| io_err("fsync", &dir, e))?;
        Ok(Wal {
            seg_bytes,
            insert: Mutex::new(InsertState {
                buf: Vec::with_capacity(64 << 10),
                buf_start: end,
                next: end,
                prev,
            }),
            writer: Mutex::new(SegmentWriter {
                vfs: vfs.clone(),
                dir,
                seg_bytes,
                tli,
                open: None,
                dirty: Vec::new(),
                spare: Vec::new(),
            }),
            flushed: AtomicU64::new(end.0),
            failed: AtomicBool::new(false),
            archiving: AtomicBool::new(false),
            notified: AtomicU64::new(0),
            on_flush: OnceLock::new(),
        })
    }

    pub fn segment_bytes(&self) -> u64 {
        self.seg_bytes
    }

    /// Turns archiving on (`archive_mode`): from now on each segment the flushes
    /// complete gets `.ready`; older ones without a status get theirs from the
    /// checkpointer (archive rule 2).
    pub fn enable_archiving(&self) {
        let _writer = self.writer.lock();
        self.notified
            .store(self.flushed_lsn().0 / self.seg_bytes, Ordering::Release);
        self.archiving.store(true, Ordering::Release);
    }

    /// Marks the segments that the flush up to `end` completed (archive rule 1). A
    /// failure to create a status file is left to the checkpointer (rule 2).
    fn notify_archiver(&self, writer: &SegmentWriter, end: Lsn) {
        if !self.archiving.load(Ordering::Acquire) {
            return;
        }
        let complete = end.0 / self.seg_bytes;
        let from = self.notified.load(Ordering::Acquire);
        let data_dir = writer.dir.parent().unwrap_or(&writer.dir);
        for segno in from..complete {
            let name = segment_file_name(writer.tli, segno, self.seg_bytes);
            let _ = archive::mark_ready(&*writer.vfs, data_dir, &name);
        }
        self.notified.fetch_max(complete, Ordering::AcqRel);
    }

    fn check(&self) -> Result<()> {
        if self.failed.load(Ordering::Acquire) {
            return Err(WalError::Failed);
        }
        Ok(())
    }

    /// Appends a record; returns `(its LSN, where the next record starts)`. The record
    /// is durable only after `flush` of its end.
    pub fn insert(&self, rmgr: RmgrId, info: u8, xid: u32, payload: &[u8]) -> Result<(Lsn, Lsn)> {
        assert!(
            !(rmgr == XLOG_SWITCH_RMGR && info == XLOG_SWITCH_INFO),
            "a segment switch is inserted by switch_segment (rule 9)"
        );
        self.check()?;
        let len = RECORD_HEADER_BYTES + payload.len();
        if len > RECORD_MAX_BYTES as usize {
            return Err(WalError::TooLong(len));
        }
        let (lsn, end, spill) = {
            let mut guard = self.insert.lock();
            let (lsn, end) = encode_record(&mut guard, rmgr, info, xid, payload);
            (lsn, end, guard.buf.len() > WAL_BUFFERS_BYTES)
        };
        if spill {
            self.write_out(false)?;
        }
        Ok((lsn, end))
    }

    /// Rule 9: ends the current segment with a switch record; the next record starts
    /// in the next segment. Returns the switch record's end, or `None` if the insert
    /// position is at a segment's first byte already (nothing to switch). Not durable
    /// until flushed.
    pub fn switch_segment(&self) -> Result<Option<Lsn>> {
        self.check()?;
        let spill = {
            let mut ins = self.insert.lock();
            if ins.next.0.is_multiple_of(self.seg_bytes) {
                return Ok(None);
            }
            let (lsn, end) = encode_record(&mut ins, XLOG_SWITCH_RMGR, XLOG_SWITCH_INFO, 0, &[]);
            let boundary = end.0.div_ceil(self.seg_bytes) * self.seg_bytes;
            let pad = (boundary - end.0) as usize;
            let len = ins.buf.len();
            ins.buf.resize(len + pad, 0);
            ins.next = Lsn(boundary);
            ins.prev = lsn;
            (end, ins.buf.len() > WAL_BUFFERS_BYTES)
        };
        if spill.1 {
            self.write_out(false)?;
        }
        Ok(Some(spill.0))
    }

    /// Rule 10: `f` is called with the flushed end after every flush that advances
    /// it. Set once; a second listener is ignored.
    pub fn set_flush_listener(&self, f: LsnListener) {
        let _ = self.on_flush.set(f);
    }

    /// LSN where the next record will start.
    pub fn insert_lsn(&self) -> Lsn {
        self.insert.lock().next
    }

    /// Everything before this LSN is durable.
    pub fn flushed_lsn(&self) -> Lsn {
        Lsn(self.flushed.load(Ordering::Acquire))
    }

    /// Makes every record ending at or before `upto` durable (rule 3).
    pub fn flush(&self, upto: Lsn) -> Result<()> {
        if self.flushed.load(Ordering::Acquire) >= upto.0 {
            return Ok(());
        }
        self.check()?;
        let mut writer = self.writer.lock();
        if self.flushed.load(Ordering::Acquire) >= upto.0 {
            return Ok(()); // another caller's write+fsync covered us: group flush
        }
        self.write_locked(&mut writer, true)?;
        let end = self.flushed_lsn();
        if end < upto {
            // A page LSN or request past anything inserted: a bug or corruption above.
            return Err(WalError::FlushBeyondEnd { request: upto, end });
        }
        Ok(())
    }

    /// Hands every record inserted so far to the operating system without fsync. Used
    /// before creating a file whose WAL record must outlive a process crash (SIGKILL):
    /// the kernel keeps written bytes; only a power loss could lose them (then the
    /// file's directory entry, not yet fsynced either, is at risk too).
    pub fn write_through(&self) -> Result<()> {
        self.check()?;
        self.write_out(false)
    }

    /// Removes every segment wholly before `lsn` (a checkpoint's redo point: recovery
    /// never reads before it), with archiving on only those archived (archive rule 2)
    /// of its own timeline (rule 11).
    /// Returns how many were removed. O(files in pg_wal).
    pub fn remove_segments_before(&self, lsn: Lsn) -> Result<usize> {
        self.check()?;
        let keep_from = lsn.0 / self.seg_bytes;
        let writer = self.writer.lock();
        let entries = writer
            .vfs
            .list_dir(&writer.dir)
            .map_err(|e| io_err("read directory", &writer.dir, e))?;
        let mut removed = 0;
        for entry in entries {
            let Some((tli, segno)) = parse_segment_name(&entry.name, self.seg_bytes) else {
                continue;
            };
            if segno >= keep_from {
                continue;
            }
            let data_dir = writer.dir.parent().unwrap_or(&writer.dir);
            // An older timeline's segments came from a primary while this server was its
            // standby: they are the primary's to archive (PostgreSQL marks them done
            // as they arrive).
            let archiving = self.archiving.load(Ordering::Acquire) && tli >= writer.tli;
            if archiving
                && !archive::removable(&*writer.vfs, data_dir, &entry.name).map_err(|e| {
                    io_err("check archive status of", &writer.dir.join(&entry.name), e)
                })?
            {
                continue;
            }
            let path = writer.dir.join(&entry.name);
            writer
                .vfs
                .remove_file(&path)
                .map_err(|e| io_err("remove", &path, e))?;
            if archiving {
                archive::forget(&*writer.vfs, data_dir, &entry.name);
            }
            removed += 1;
        }
        Ok(removed)
    }

    fn write_out(&self, sync: bool) -> Result<()> {
        let mut writer = self.writer.lock();
        self.write_locked(&mut writer, sync)
    }

    /// Writes every buffered byte (and fsyncs if asked). Caller holds the writer lock,
    /// so byte ranges reach the files in LSN order.
    fn write_locked(&self, writer: &mut SegmentWriter, sync: bool) -> Result<()> {
        let mut spare = std::mem::take(&mut writer.spare);
        spare.clear();
        let (start, bytes) = {
            let mut ins = self.insert.lock();
            let start = ins.buf_start;
            ins.buf_start = ins.next;
            (start, std::mem::replace(&mut ins.buf, spare))
        };
        let end = start + bytes.len() as u64;
        let result =
            writer
                .write(start, &bytes)
                .and_then(|()| if sync { writer.sync() } else { Ok(()) });
        // Kept for the next swap unless a huge record grew it past twice the usual.
        if bytes.capacity() <= 2 * WAL_BUFFERS_BYTES {
            writer.spare = bytes;
        }
        if let Err(e) = result {
            self.failed.store(true, Ordering::Release); // rule 4
            return Err(e);
        }
        if sync {
            self.flushed.fetch_max(end.0, Ordering::AcqRel);
            self.notify_archiver(writer, end);
            if let Some(f) = self.on_flush.get() {
                f(self.flushed_lsn());
            }
        }
        Ok(())
    }
}

/// A standby's copy of its primary's WAL (rule 8): bytes written at their LSNs, as the
/// primary stored them, into segments created whole and zero-filled (rule 5).
/// [`ReceivedWal::flush`] fsyncs them; only then do they count, and only up to the end
/// of the contiguous bytes written.
pub struct ReceivedWal {
    writer: Mutex<SegmentWriter>,
    /// End of the contiguous bytes written (where the next write must start).
    written: AtomicU64,
    flushed: AtomicU64,
    failed: AtomicBool,
    /// Closed for good (a promotion): writes and flushes are refused.
    closed: AtomicBool,
    /// When bytes were last written (a standby's archive fallback waits for silence).
    last_write: Mutex<std::time::Instant>,
}

impl ReceivedWal {
    /// Refuses every later write and flush; returns once none is in progress.
    pub fn close(&self) {
        let _w = self.writer.lock();
        self.closed.store(true, Ordering::Release);
    }

    fn check_open(&self) -> Result<()> {
        if self.closed.load(Ordering::Acquire) || self.failed.load(Ordering::Acquire) {
            return Err(WalError::Failed);
        }
        Ok(())
    }

    /// Receives into `data_dir/pg_wal` from `start` on (the end of the valid WAL the
    /// standby has: bytes before it are already durable), into timeline `tli`'s files.
    pub fn new(
        vfs: &Arc<dyn Vfs>,
        data_dir: &Path,
        seg_bytes: u64,
        start: Lsn,
        tli: u32,
    ) -> Result<Self> {
        check_segment_bytes(seg_bytes)?;
        Ok(ReceivedWal {
            writer: Mutex::new(SegmentWriter {
                vfs: vfs.clone(),
                dir: data_dir.join("pg_wal"),
                seg_bytes,
                tli,
                open: None,
                dirty: Vec::new(),
                spare: Vec::new(),
            }),
            written: AtomicU64::new(start.0),
            flushed: AtomicU64::new(start.0),
            failed: AtomicBool::new(false),
            closed: AtomicBool::new(false),
            last_write: Mutex::new(std::time::Instant::now()),
        })
    }

    /// Writes `bytes` at `lsn`, which must be the end of what was written so far (a
    /// reconnect starts again at [`ReceivedWal::flushed_lsn`]: call
    /// [`ReceivedWal::restart_at`] first). Not durable until `flush`.
    pub fn write(&self, lsn: Lsn, bytes: &[u8]) -> Result<()> {
        let mut w = self.writer.lock();
        self.check_open()?;
        let expected = Lsn(self.written.load(Ordering::Acquire));
        if lsn != expected {
            return Err(WalError::Io {
                op: "receive",
                path: w.dir.clone(),
                source: io::Error::other(format!(
                    "WAL data at {lsn} does not continue the received WAL, which ends at {expected}"
                )),
            });
        }
        if let Err(e) = w.write(lsn, bytes) {
            self.failed.store(true, Ordering::Release); // rule 4
            return Err(e);
        }
        self.written
            .store(lsn.0 + bytes.len() as u64, Ordering::Release);
        *self.last_write.lock() = std::time::Instant::now();
        Ok(())
    }

    /// A complete archived segment ending at `end` was installed in `pg_wal` (standby
    /// rule 11): replay may read through it, and streaming resumes after it.
    pub fn restored_through(&self, end: Lsn) {
        let mut w = self.writer.lock();
        w.open = None; // the file was replaced
        w.dirty.clear();
        let e = end.0.max(self.flushed.load(Ordering::Acquire));
        self.written.store(e, Ordering::Release);
        self.flushed.store(e, Ordering::Release);
        // Not a write of the stream: a silent stream stays silent, and the next
        // segment is restored at once (the receiver, if it reconnects, starts after
        // this one).
    }

    /// Nothing was written for `d` (the stream is silent).
    pub fn quiet_for(&self, d: std::time::Duration) -> bool {
        self.last_write.lock().elapsed() >= d
    }

    /// From now on, what arrives is timeline `tli`'s (the primary's, after a
    /// promotion): written to its files (rule 11). Unflushed bytes are flushed first.
    pub fn set_timeline(&self, tli: u32) -> Result<()> {
        let mut w = self.writer.lock();
        self.check_open()?;
        if w.tli == tli {
            return Ok(());
        }
        if let Err(e) = w.sync() {
            self.failed.store(true, Ordering::Release);
            return Err(e);
        }
        w.tli = tli;
        w.open = None;
        Ok(())
    }

    /// Forgets written but unflushed bytes: the next write starts at the flushed end.
    pub fn restart_at(&self) -> Lsn {
        let _w = self.writer.lock();
        let f = self.flushed.load(Ordering::Acquire);
        self.written.store(f, Ordering::Release);
        Lsn(f)
    }

    /// Fsyncs everything written; returns the durable end. A failure latches (rule 4).
    pub fn flush(&self) -> Result<Lsn> {
        let mut w = self.writer.lock();
        self.check_open()?;
        let end = self.written.load(Ordering::Acquire);
        if let Err(e) = w.sync() {
            self.failed.store(true, Ordering::Release);
            return Err(e);
        }
        self.flushed.fetch_max(end, Ordering::AcqRel);
        Ok(Lsn(end))
    }

    /// Everything before this LSN is durable on the standby.
    pub fn flushed_lsn(&self) -> Lsn {
        Lsn(self.flushed.load(Ordering::Acquire))
    }

    /// End of what was written (durable or not).
    pub fn written_lsn(&self) -> Lsn {
        Lsn(self.written.load(Ordering::Acquire))
    }
}

impl WalFlusher for Wal {
    fn flush_wal(&self, lsn: Lsn) -> std::result::Result<(), String> {
        self.flush(lsn).map_err(|e| e.to_string())
    }
}

/// Appends one record at the insert position; returns (its LSN, its end).
fn encode_record(
    ins: &mut InsertState,
    rmgr: RmgrId,
    info: u8,
    xid: u32,
    payload: &[u8],
) -> (Lsn, Lsn) {
    let len = RECORD_HEADER_BYTES + payload.len();
    let lsn = ins.next;
    let start = ins.buf.len();
    ins.buf.extend_from_slice(&(len as u32).to_le_bytes());
    ins.buf.extend_from_slice(&[0; 4]);
    ins.buf.extend_from_slice(&ins.prev.0.to_le_bytes());
    ins.buf.extend_from_slice(&lsn.0.to_le_bytes());
    ins.buf.extend_from_slice(&xid.to_le_bytes());
    ins.buf.extend_from_slice(&[rmgr.0, info, 0, 0]);
    ins.buf.extend_from_slice(payload);
    let crc = record_crc(&ins.buf[start..]);
    ins.buf[start + 4..start + 8].copy_from_slice(&crc.to_le_bytes());
    let padded = align(len as u64);
    ins.buf.resize(start + padded as usize, 0);
    let end = lsn + padded;
    ins.next = end;
    ins.prev = lsn;
    (lsn, end)
}

/// Writes zeros over `[from, len)` of `f` (real writes, not a hole: rule 5).
fn zero_from(f: &dyn VfsFile, from: u64, len: u64) -> io::Result<()> {
    let zeros = vec![0u8; 1 << 20];
    let mut off = from;
    while off < len {
        let n = ((len - off) as usize).min(zeros.len());
        f.write_all_at(&zeros[..n], off)?;
        off += n as u64;
    }
    if f.size_bytes()? != len {
        f.set_len(len)?;
    }
    Ok(())
}

/// Reads into `buf` from `offset` until it is full or the file ends; how much was read.
fn read_full(f: &dyn VfsFile, buf: &mut [u8], offset: u64) -> io::Result<usize> {
    let mut got = 0;
    while got < buf.len() {
        match f.read_at(&mut buf[got..], offset + got as u64) {
            Ok(0) => break,
            Ok(k) => got += k,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(got)
}

/// Creates a whole, fsynced segment at `path` (rule 5): `prefix` (an older timeline's
/// bytes, rule 11), then zeros.
fn create_zeroed(
    vfs: &dyn Vfs,
    dir: &Path,
    path: &Path,
    seg_bytes: u64,
    prefix: &[u8],
) -> Result<()> {
    let tmp = path.with_extension("tmp");
    let f = vfs
        .open(&tmp, true)
        .map_err(|e| io_err("create", &tmp, e))?;
    f.set_len(0)
        .and_then(|()| f.write_all_at(prefix, 0))
        .and_then(|()| zero_from(&*f, prefix.len() as u64, seg_bytes))
        .and_then(|()| f.sync())
        .map_err(|e| io_err("zero-fill", &tmp, e))?;
    drop(f);
    vfs.rename(&tmp, path)
        .map_err(|e| io_err("rename", &tmp, e))?;
    vfs.sync_dir(dir)
        .map_err(|e| io_err("fsync directory of", path, e))
}

/// `(timeline, segment number)` of a segment file's name.
pub fn parse_segment_name(name: &str, seg_bytes: u64) -> Option<(u32, u64)> {
    if name.len() != 24 || !name.bytes().all(|b| b.is_ascii_hexdigit()) {
        return None;
    }
    let tli = u32::from_str_radix(&name[0..8], 16).ok()?;
    let log = u64::from_str_radix(&name[8..16], 16).ok()?;
    let seg = u64::from_str_radix(&name[16..24], 16).ok()?;
    Some((tli, log * (0x1_0000_0000 / seg_bytes) + seg))
}

/// Removes every segment of `data_dir/pg_wal` wholly before `lsn` (a standby's
/// restartpoint: it has no [`Wal`] open for appending). Returns how many went.
/// O(files in pg_wal).
pub fn remove_segments_before(
    vfs: &Arc<dyn Vfs>,
    data_dir: &Path,
    seg_bytes: u64,
    lsn: Lsn,
) -> Result<usize> {
    let dir = data_dir.join("pg_wal");
    let keep_from = lsn.0 / seg_bytes;
    let entries = vfs
        .list_dir(&dir)
        .map_err(|e| io_err("read directory", &dir, e))?;
    let mut removed = 0;
    for entry in entries {
        if parse_segment_name(&entry.name, seg_bytes).is_some_and(|(_, s)| s < keep_from) {
            let path = dir.join(&entry.name);
            vfs.remove_file(&path)
                .map_err(|e| io_err("remove", &path, e))?;
            removed += 1;
        }
    }
    Ok(removed)
}

/// Why a reader stopped: the end of valid WAL, and what lies there.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum StopReason {
    /// Zeros, or the end of the last segment file: a clean end.
    End,
    /// The segment file holding the next record does not exist.
    MissingSegment(u64),
    /// A record header or payload runs past the end of the written WAL (torn write).
    Torn,
    /// The length field is impossible.
    BadLength(u32),
    /// The CRC does not match (corruption, or a torn write within a record).
    BadCrc,
    /// A well-formed record written at another position (a stale incarnation).
    WrongLsn(Lsn),
    /// A well-formed record whose back link does not match the previous record.
    BadPrev(Lsn),
}

impl std::fmt::Display for StopReason {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            StopReason::End => write!(f, "end of WAL"),
            StopReason::MissingSegment(s) => write!(f, "segment {s} missing"),
            StopReason::Torn => write!(f, "record torn at the end of WAL"),
            StopReason::BadLength(n) => write!(f, "invalid record length {n}"),
            StopReason::BadCrc => write!(f, "incorrect record checksum"),
            StopReason::WrongLsn(l) => write!(f, "record claims LSN {l}"),
            StopReason::BadPrev(l) => write!(f, "record with incorrect prev-link {l}"),
        }
    }
}

/// The log's bytes from `start` up to `end` (exclusive) or the end of `start`'s
/// segment, whichever comes first, as stored: for a WAL sender, which streams only what
/// is flushed (`end` = [`Wal::flushed_lsn`]). `Ok(None)` if the segment no longer
/// exists (a checkpoint removed it). `tli`: the timeline expected to hold it
/// ([`locate_segment`]). O(bytes read).
pub fn read_bytes(
    vfs: &dyn Vfs,
    data_dir: &Path,
    seg_bytes: u64,
    (start, end): (Lsn, Lsn),
    tli: u32,
) -> Result<Option<Vec<u8>>> {
    check_segment_bytes(seg_bytes)?;
    let segno = start.0 / seg_bytes;
    let offset = start.0 % seg_bytes;
    let want = end.0.saturating_sub(start.0).min(seg_bytes - offset) as usize;
    let dir = data_dir.join("pg_wal");
    let Some((_, path)) = locate_segment(vfs, &dir, segno, seg_bytes, tli)
        .map_err(|e| io_err("read directory", &dir, e))?
    else {
        return Ok(None);
    };
    let f = match vfs.open(&path, false) {
        Ok(f) => f,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(io_err("open", &path, e)),
    };
    let mut buf = vec![0u8; want];
    let got = read_full(&*f, &mut buf, offset).map_err(|e| io_err("read", &path, e))?;
    buf.truncate(got);
    Ok(Some(buf))
}

/// Reads records from an LSN onwards; stops at the first invalid one (rule 1).
pub struct WalReader {
    vfs: Arc<dyn Vfs>,
    dir: PathBuf,
    seg_bytes: u64,
    next: Lsn,
    prev: Lsn,
    file: Option<(u64, Arc<dyn VfsFile>)>,
    /// The timeline of the last file opened: the first guess for the next one.
    tli: u32,
    stop: Option<StopReason>,
    /// Read-ahead: bytes of the log from `cache_start`, as read from the file (only
    /// what was there: a log that grows later is read again past the cached end).
    cache: Vec<u8>,
    cache_start: Lsn,
    /// Bytes at or past this LSN are not read (a standby's received-and-flushed end):
    /// the reader stops there as at a clean end, and [`WalReader::resume`] goes on
    /// once it moves (rule 8).
    limit: Option<Lsn>,
    /// The next read-ahead's size: it starts small and doubles up to
    /// [`READ_AHEAD_BYTES`], so a short replay reads (and zeroes) what it needs, not
    /// a megabyte.
    ahead: usize,
}

/// Bytes read ahead at once, at most (one `pread` serves many records).
const READ_AHEAD_BYTES: usize = 1 << 20;
/// The first read-ahead: one WAL page. A short replay reads what it needs and zeroes
/// no more fresh memory than that (stop 22 traced 16 page faults to a 64 KiB start).
const FIRST_READ_AHEAD_BYTES: usize = 8 << 10;

enum ReadFail {
    Missing(u64),
    Short,
    Io(WalError),
}

impl WalReader {
    /// A reader starting at `start`, expecting the record there to link back to `prev`
    /// (`Lsn::INVALID` to skip that check for the first record).
    pub fn new(
        vfs: &Arc<dyn Vfs>,
        data_dir: &Path,
        seg_bytes: u64,
        start: Lsn,
        prev: Lsn,
    ) -> Result<WalReader> {
        check_segment_bytes(seg_bytes)?;
        Ok(WalReader {
            vfs: vfs.clone(),
            dir: data_dir.join("pg_wal"),
            seg_bytes,
            next: start,
            prev,
            file: None,
            tli: 1,
            stop: None,
            cache: Vec::new(),
            cache_start: Lsn::INVALID,
            limit: None,
            ahead: FIRST_READ_AHEAD_BYTES,
        })
    }

    /// Reads nothing at or past `limit` from now on (rule 8). A cached read-ahead that
    /// reaches past a lower limit is dropped.
    pub fn set_limit(&mut self, limit: Lsn) {
        if self.cache_start + self.cache.len() as u64 > limit {
            self.cache.clear();
        }
        self.limit = Some(limit);
    }

    /// After a stop at the limit or at the end of what is on disk (a standby waiting
    /// for more WAL), tries again from the same record: the read-ahead is dropped, so
    /// bytes written since are read. Stale or corrupt bytes still stop it (rule 1).
    pub fn resume(&mut self) {
        self.stop = None;
        self.cache.clear();
        self.file = None;
    }

    /// Where the next record would start: after the reader stops, the end of valid WAL.
    pub fn end(&self) -> Lsn {
        self.next
    }

    /// LSN of the last valid record read (or the `prev` given at the start).
    pub fn last_lsn(&self) -> Lsn {
        self.prev
    }

    /// Why the reader stopped, once it has.
    pub fn stop_reason(&self) -> Option<&StopReason> {
        self.stop.as_ref()
    }

    /// Opens the file of `segno` (the highest timeline's, rule 11).
    fn open_segment(&mut self, segno: u64) -> std::result::Result<(), ReadFail> {
        let found = locate_segment(&*self.vfs, &self.dir, segno, self.seg_bytes, self.tli)
            .map_err(|e| ReadFail::Io(io_err("read directory", &self.dir, e)))?;
        let Some((tli, path)) = found else {
            return Err(ReadFail::Missing(segno));
        };
        match self.vfs.open(&path, false) {
            Ok(f) => {
                self.file = Some((segno, f));
                self.tli = tli;
                Ok(())
            }
            Err(e) if e.kind() == io::ErrorKind::NotFound => Err(ReadFail::Missing(segno)),
            Err(e) => Err(ReadFail::Io(io_err("open", &path, e))),
        }
    }

    /// Fills the read-ahead cache from `lsn` to at most the end of its segment.
    fn refill(&mut self, lsn: Lsn) -> std::result::Result<(), ReadFail> {
        let segno = lsn.0 / self.seg_bytes;
        let offset = lsn.0 % self.seg_bytes;
        if self.file.as_ref().map(|(s, _)| *s) != Some(segno) {
            self.open_segment(segno)?;
        }
        let f = &self.file.as_ref().expect("opened").1;
        let mut want = ((self.seg_bytes - offset) as usize).min(self.ahead);
        self.ahead = (self.ahead * 2).min(READ_AHEAD_BYTES);
        if let Some(limit) = self.limit {
            want = want.min(limit.0.saturating_sub(lsn.0) as usize);
            if want == 0 {
                self.cache.clear();
                self.cache_start = lsn;
                return Err(ReadFail::Short);
            }
        }
        self.cache.resize(want, 0);
        let mut got = 0;
        while got < want {
            match f.read_at(&mut self.cache[got..want], offset + got as u64) {
                Ok(0) => break,
                Ok(k) => got += k,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => {
                    let path = self
                        .dir
                        .join(segment_file_name(self.tli, segno, self.seg_bytes));
                    self.cache.clear();
                    return Err(ReadFail::Io(io_err("read", &path, e)));
                }
            }
        }
        self.cache.truncate(got);
        self.cache_start = lsn;
        if got == 0 {
            return Err(ReadFail::Short);
        }
        Ok(())
    }

    /// Reads `buf.len()` bytes of the log at `lsn`, through the read-ahead cache.
    fn read_at(&mut self, mut lsn: Lsn, mut buf: &mut [u8]) -> std::result::Result<(), ReadFail> {
        while !buf.is_empty() {
            let cached_end = self.cache_start + self.cache.len() as u64;
            if lsn < self.cache_start || lsn >= cached_end {
                self.refill(lsn)?;
                continue;
            }
            let from = (lsn - self.cache_start) as usize;
            let n = (self.cache.len() - from).min(buf.len());
            buf[..n].copy_from_slice(&self.cache[from..from + n]);
            buf = &mut buf[n..];
            lsn += n as u64;
        }
        Ok(())
    }

    fn stop(&mut self, reason: StopReason) -> Result<Option<Record>> {
        self.stop = Some(reason);
        Ok(None)
    }

    /// The next valid record, or `None` at the end of valid WAL (see `stop_reason`).
    /// I/O errors other than a missing or short file are errors, not an end.
    pub fn next_record(&mut self) -> Result<Option<Record>> {
        if self.stop.is_some() {
            return Ok(None);
        }
        let lsn = self.next;
        let mut header = [0u8; RECORD_HEADER_BYTES];
        match self.read_at(lsn, &mut header) {
            Ok(()) => {}
            Err(ReadFail::Missing(s)) => return self.stop(StopReason::MissingSegment(s)),
            Err(ReadFail::Short) => {
                // A clean end if nothing at all was written at `lsn`.
                let mut first = [0u8; 1];
                return match self.read_at(lsn, &mut first) {
                    Err(ReadFail::Short) => self.stop(StopReason::End),
                    _ => self.stop(StopReason::Torn),
                };
            }
            Err(ReadFail::Io(e)) => return Err(e),
        }
        let len = u32::from_le_bytes(header[0..4].try_into().expect("4"));
        if len == 0 && header.iter().all(|b| *b == 0) {
            return self.stop(StopReason::End);
        }
        if (len as usize) < RECORD_HEADER_BYTES || len > RECORD_MAX_BYTES {
            return self.stop(StopReason::BadLength(len));
        }
        let mut payload = vec![0u8; len as usize - RECORD_HEADER_BYTES];
        match self.read_at(lsn + RECORD_HEADER_BYTES as u64, &mut payload) {
            Ok(()) => {}
            Err(ReadFail::Missing(_)) | Err(ReadFail::Short) => return self.stop(StopReason::Torn),
            Err(ReadFail::Io(e)) => return Err(e),
        }
        let crc = u32::from_le_bytes(header[4..8].try_into().expect("4"));
        let computed = crc32c::crc32c_append(record_crc(&header), &payload);
        if crc != computed {
            return self.stop(StopReason::BadCrc);
        }
        let prev = Lsn(u64::from_le_bytes(header[8..16].try_into().expect("8")));
        let own = Lsn(u64::from_le_bytes(header[16..24].try_into().expect("8")));
        if own != lsn {
            return self.stop(StopReason::WrongLsn(own));
        }
        if self.prev != Lsn::INVALID && prev != self.prev {
            return self.stop(StopReason::BadPrev(prev));
        }
        let mut end = lsn + align(len as u64);
        if header[28] == XLOG_SWITCH_RMGR.0 && header[29] == XLOG_SWITCH_INFO {
            end = Lsn(end.0.div_ceil(self.seg_bytes) * self.seg_bytes); // rule 9
        }
        let record = Record {
            lsn,
            end,
            prev,
            xid: u32::from_le_bytes(header[24..28].try_into().expect("4")),
            rmgr: RmgrId(header[28]),
            info: header[29],
            payload,
        };
        self.next = record.end;
        self.prev = lsn;
        Ok(Some(record))
    }
}

/// Reads from `start` to the end of valid WAL: returns (end, last record's LSN, reason).
/// O(WAL from `start`).
pub fn find_end(
    vfs: &Arc<dyn Vfs>,
    data_dir: &Path,
    seg_bytes: u64,
    start: Lsn,
    prev: Lsn,
) -> Result<(Lsn, Lsn, StopReason)> {
    let mut r = WalReader::new(vfs, data_dir, seg_bytes, start, prev)?;
    while r.next_record()?.is_some() {}
    let reason = r.stop_reason().cloned().unwrap_or(StopReason::End);
    Ok((r.end(), r.last_lsn(), reason))
}

#[cfg(test)]
mod tests;
