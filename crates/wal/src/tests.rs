//! Unit tests of the log on real files: round trips across segments, every way the
//! tail can end (clean, torn, corrupt, zeroed, stale), concurrency, and the pool hook.

use super::*;
use std::fs::{self, OpenOptions};
use std::sync::Arc;

const SEG: u64 = 64 << 10; // small segments: records cross boundaries often

fn vfs() -> Arc<dyn Vfs> {
    strata_vfs::StdVfs::arc()
}

fn payload(i: u64) -> Vec<u8> {
    let n = (i * 7919 % 3000) as usize;
    (0..n).map(|k| (i as usize + k) as u8).collect()
}

fn fill(dir: &Path, n: u64) -> (Wal, Vec<(Lsn, Lsn)>) {
    let wal = Wal::open(&vfs(), dir, SEG, (Lsn(SEG), Lsn::INVALID), 1).unwrap();
    let mut pos = Vec::new();
    for i in 0..n {
        pos.push(
            // Resource managers 1-5: rmgr 0 with info 0x40 is the switch (rule 9).
            wal.insert(RmgrId((i % 5) as u8 + 1), i as u8, i as u32, &payload(i))
                .unwrap(),
        );
    }
    wal.flush(pos.last().unwrap().1).unwrap();
    (wal, pos)
}

fn read_all(dir: &Path, start: Lsn) -> (Vec<Record>, WalReader) {
    let mut r = WalReader::new(&vfs(), dir, SEG, start, Lsn::INVALID).unwrap();
    let mut out = Vec::new();
    while let Some(rec) = r.next_record().unwrap() {
        out.push(rec);
    }
    (out, r)
}

fn segment_path(dir: &Path, lsn: Lsn) -> PathBuf {
    dir.join("pg_wal")
        .join(segment_file_name(1, lsn.0 / SEG, SEG))
}

#[test]
fn names_match_postgres() {
    let s = WAL_SEGMENT_BYTES_DEFAULT;
    assert_eq!(segment_file_name(1, 1, s), "000000010000000000000001");
    assert_eq!(segment_file_name(10, 1, s), "0000000A0000000000000001");
    assert_eq!(segment_file_name(1, 256, s), "000000010000000100000000");
    assert_eq!(
        parse_segment_name("000000010000000100000003", s),
        Some((1, 259))
    );
    assert_eq!(
        parse_segment_name("0000000B0000000100000003", s),
        Some((11, 259))
    );
    assert_eq!(parse_segment_name("00000001000000010000000G", s), None);
    assert!(Wal::open(&vfs(), Path::new("/nonexistent"), 3000, (Lsn(0), Lsn(0)), 1).is_err());
}

#[test]
fn records_round_trip_across_segments() {
    let dir = tempfile::tempdir().unwrap();
    let (wal, pos) = fill(dir.path(), 500);
    assert!(wal.insert_lsn().0 / SEG > 5, "spans several segments");
    let (recs, r) = read_all(dir.path(), Lsn(SEG));
    assert_eq!(recs.len(), 500);
    for (i, rec) in recs.iter().enumerate() {
        assert_eq!((rec.lsn, rec.end), pos[i]);
        assert_eq!(rec.payload, payload(i as u64));
        assert_eq!(
            (rec.rmgr, rec.info, rec.xid),
            (RmgrId((i % 5) as u8 + 1), i as u8, i as u32)
        );
        if i > 0 {
            assert_eq!(rec.prev, pos[i - 1].0);
        }
    }
    assert_eq!(r.stop_reason(), Some(&StopReason::End));
    assert_eq!(r.end(), wal.insert_lsn());
    assert!(matches!(
        wal.flush(wal.insert_lsn() + 8),
        Err(WalError::FlushBeyondEnd { .. })
    ));
}

#[test]
fn reopen_at_the_end_continues_the_chain() {
    let dir = tempfile::tempdir().unwrap();
    let (wal, pos) = fill(dir.path(), 100);
    drop(wal);
    let (end, last, reason) = find_end(&vfs(), dir.path(), SEG, Lsn(SEG), Lsn::INVALID).unwrap();
    assert_eq!((end, last, reason), (pos[99].1, pos[99].0, StopReason::End));
    let wal = Wal::open(&vfs(), dir.path(), SEG, (end, last), 1).unwrap();
    let (l, e) = wal.insert(RmgrId(9), 0, 0, b"after restart").unwrap();
    wal.flush(e).unwrap();
    let (recs, _) = read_all(dir.path(), Lsn(SEG));
    assert_eq!(recs.len(), 101);
    assert_eq!((recs[100].lsn, recs[100].prev), (l, pos[99].0));
}

#[test]
fn torn_tail_ends_at_the_last_whole_record_and_is_cut_on_open() {
    let dir = tempfile::tempdir().unwrap();
    let (wal, pos) = fill(dir.path(), 200);
    drop(wal);
    // Tear the last record: keep its first 20 bytes only.
    let (last, _) = pos[199];
    let f = OpenOptions::new()
        .write(true)
        .open(segment_path(dir.path(), last))
        .unwrap();
    f.set_len(last.0 % SEG + 20).unwrap();
    let (end, prev, reason) = find_end(&vfs(), dir.path(), SEG, Lsn(SEG), Lsn::INVALID).unwrap();
    assert_eq!((end, prev, reason), (last, pos[198].0, StopReason::Torn));
    // Reopen there, append: the torn bytes are gone, the chain is whole.
    let wal = Wal::open(&vfs(), dir.path(), SEG, (end, prev), 1).unwrap();
    let (_, e) = wal.insert(RmgrId(1), 0, 0, b"x").unwrap();
    wal.flush(e).unwrap();
    let (recs, r) = read_all(dir.path(), Lsn(SEG));
    assert_eq!(recs.len(), 200);
    assert_eq!(recs[199].payload, b"x");
    assert_eq!(r.stop_reason(), Some(&StopReason::End));
}

#[test]
fn corruption_stops_the_reader_before_the_bad_record() {
    let dir = tempfile::tempdir().unwrap();
    let (wal, pos) = fill(dir.path(), 200);
    drop(wal);
    let (bad, _) = pos[120];
    let path = segment_path(dir.path(), bad + (RECORD_HEADER_BYTES as u64 - 1));
    let mut bytes = fs::read(&path).unwrap();
    let off = ((bad.0 + RECORD_HEADER_BYTES as u64 - 1) % SEG) as usize; // last header byte
    bytes[off] ^= 0x40;
    fs::write(&path, bytes).unwrap();
    let (recs, r) = read_all(dir.path(), Lsn(SEG));
    assert_eq!(recs.len(), 120, "everything before the corruption is kept");
    assert_eq!(r.end(), bad);
    assert_eq!(r.stop_reason(), Some(&StopReason::BadCrc));
}

#[test]
fn zeroed_tail_is_a_clean_end() {
    let dir = tempfile::tempdir().unwrap();
    let (wal, pos) = fill(dir.path(), 50);
    drop(wal);
    let end = pos[49].1;
    let f = OpenOptions::new()
        .write(true)
        .open(segment_path(dir.path(), end))
        .unwrap();
    f.set_len(end.0 % SEG + 8192).unwrap(); // preallocated zeros after the end
    let (e, _, reason) = find_end(&vfs(), dir.path(), SEG, Lsn(SEG), Lsn::INVALID).unwrap();
    assert_eq!((e, reason), (end, StopReason::End));
}

#[test]
fn stale_record_at_the_wrong_position_is_not_replayed() {
    let dir = tempfile::tempdir().unwrap();
    let wal = Wal::open(&vfs(), dir.path(), SEG, (Lsn(SEG), Lsn::INVALID), 1).unwrap();
    let mut pos = Vec::new();
    for i in 0..10u8 {
        pos.push(wal.insert(RmgrId(1), i, 0, &[i; 40]).unwrap());
    }
    wal.flush(pos[9].1).unwrap();
    drop(wal);
    // Copy record 3's bytes over record 8 (same size): well-formed, CRC valid, but
    // written for another position.
    let path = segment_path(dir.path(), pos[0].0);
    let mut bytes = fs::read(&path).unwrap();
    let (a, b) = ((pos[3].0 .0 % SEG) as usize, (pos[8].0 .0 % SEG) as usize);
    let len = (pos[3].1 - pos[3].0) as usize;
    let rec3 = bytes[a..a + len].to_vec();
    bytes[b..b + len].copy_from_slice(&rec3);
    fs::write(&path, bytes).unwrap();
    let (recs, r) = read_all(dir.path(), Lsn(SEG));
    assert_eq!(recs.len(), 8);
    assert_eq!(r.stop_reason(), Some(&StopReason::WrongLsn(pos[3].0)));
}

#[test]
fn missing_segment_ends_the_log() {
    let dir = tempfile::tempdir().unwrap();
    let (wal, pos) = fill(dir.path(), 300);
    drop(wal);
    let mid = pos[150].0;
    fs::remove_file(segment_path(dir.path(), mid)).unwrap();
    let (recs, r) = read_all(dir.path(), Lsn(SEG));
    assert!(recs.len() < 151);
    assert!(matches!(
        r.stop_reason(),
        Some(StopReason::MissingSegment(_)) | Some(StopReason::Torn)
    ));
}

#[test]
fn concurrent_inserts_form_one_chain() {
    let dir = tempfile::tempdir().unwrap();
    let wal = Arc::new(Wal::open(&vfs(), dir.path(), SEG, (Lsn(SEG), Lsn::INVALID), 1).unwrap());
    let threads: Vec<_> = (0..2u32)
        .map(|t| {
            let wal = wal.clone();
            std::thread::spawn(move || {
                for i in 0..500u32 {
                    let (_, end) = wal
                        .insert(RmgrId(t as u8), 0, t * 1000 + i, &i.to_le_bytes())
                        .unwrap();
                    if i % 7 == 0 {
                        wal.flush(end).unwrap();
                        assert!(wal.flushed_lsn() >= end);
                    }
                }
            })
        })
        .collect();
    for t in threads {
        t.join().unwrap();
    }
    wal.flush(wal.insert_lsn()).unwrap();
    let (recs, r) = read_all(dir.path(), Lsn(SEG));
    assert_eq!(recs.len(), 1000);
    assert_eq!(r.stop_reason(), Some(&StopReason::End));
    let mut xids: Vec<u32> = recs.iter().map(|r| r.xid).collect();
    for t in 0..2u32 {
        let mine: Vec<u32> = xids.iter().copied().filter(|x| x / 1000 == t).collect();
        assert!(
            mine.windows(2).all(|w| w[0] < w[1]),
            "per-thread order kept"
        );
    }
    xids.sort_unstable();
    xids.dedup();
    assert_eq!(xids.len(), 1000);
}

#[test]
fn buffer_pool_flushes_wal_before_writing_a_page() {
    use strata_buffer::{BufferPool, ReadMode};
    use strata_smgr::{Smgr, StdVfs};
    use strata_types::{
        BlockNumber, BufferTag, ForkNumber, Oid, RelFileNumber, RelKey, DEFAULT_TABLESPACE,
    };
    let dir = tempfile::tempdir().unwrap();
    let wal = Arc::new(Wal::open(&vfs(), dir.path(), SEG, (Lsn(SEG), Lsn::INVALID), 1).unwrap());
    let smgr = Arc::new(Smgr::open(dir.path(), Arc::new(StdVfs), 16).unwrap());
    smgr.create_database_dir(DEFAULT_TABLESPACE, Oid(5))
        .unwrap();
    let pool = BufferPool::new(16 * 8192, smgr, wal.clone());
    let (_, end) = wal.insert(RmgrId(10), 0, 1, b"heap insert").unwrap();
    assert!(wal.flushed_lsn() < end);
    let tag = BufferTag::new(
        RelKey::new(DEFAULT_TABLESPACE, Oid(5), RelFileNumber(1)),
        ForkNumber::Main,
        BlockNumber(0),
    );
    {
        let buf = pool.read_buffer(tag, ReadMode::Zero).unwrap();
        let mut page = buf.write();
        strata_page::init(&mut page, 0);
        strata_page::set_lsn(&mut page, end);
        buf.mark_dirty(&page);
    }
    pool.flush_all_dirty().unwrap();
    assert!(wal.flushed_lsn() >= end, "WAL before data");
}

#[test]
fn a_segment_switch_ends_its_segment_and_the_reader_goes_on_in_the_next() {
    let dir = tempfile::tempdir().unwrap();
    let wal = Wal::open(&vfs(), dir.path(), SEG, (Lsn(SEG), Lsn::INVALID), 1).unwrap();
    assert_eq!(
        wal.switch_segment().unwrap(),
        None,
        "nothing to switch at a segment start"
    );
    let (a, _) = wal.insert(RmgrId(10), 0, 1, b"before").unwrap();
    let switch_end = wal.switch_segment().unwrap().unwrap();
    assert_eq!(
        wal.insert_lsn(),
        Lsn(2 * SEG),
        "the next record starts the next segment"
    );
    let (b, end) = wal.insert(RmgrId(10), 0, 2, b"after").unwrap();
    assert_eq!(b, Lsn(2 * SEG));
    wal.flush(end).unwrap();
    assert!(switch_end > a && switch_end < Lsn(2 * SEG));
    let (recs, r) = read_all(dir.path(), Lsn(SEG));
    let lsns: Vec<Lsn> = recs.iter().map(|r| r.lsn).collect();
    assert_eq!(lsns.len(), 3);
    assert_eq!((lsns[0], lsns[2]), (a, b));
    assert_eq!(
        recs[1].end,
        Lsn(2 * SEG),
        "a switch record ends at the boundary"
    );
    assert_eq!(recs[2].prev, recs[1].lsn);
    assert_eq!(r.end(), end);
    // Reopened after the switch, the log appends where it ended.
    drop(wal);
    let wal = Wal::open(&vfs(), dir.path(), SEG, (end, b), 1).unwrap();
    let (c, _) = wal.insert(RmgrId(10), 0, 3, b"later").unwrap();
    assert_eq!(c, end);
}
