//! The WAL records of the engine's resource managers, and block references with
//! full-page images.
//!
//! Entry points: the record structs' `encode`/`decode`, [`BlockRef`].
//!
//! | rmgr | id | info | record | replay |
//! |------|----|------|--------|--------|
//! | XLOG | 0 | 0x00 | [`CheckpointRecord`] | seeds counters and unfinished creates |
//! | XLOG | 0 | 0x20 | NEXTOID: u32, OIDs below are handed out | raise the OID counter |
//! | XLOG | 0 | 0x30 | full-page image ([`BlockRef`] only) | restore the page |
//! | XLOG | 0 | 0x40 | SWITCH: empty; the rest of the segment is unused (wal rule 9) | nothing |
//! | XLOG | 0 | 0x50 | BACKUP_END: u64, the backup's start LSN | ends a backup's recovery |
//! | XACT | 1 | 0x00 | [`CommitRecord`] | clog; drop buffers, then files |
//! | XACT | 1 | 0x20 | [`AbortRecord`] | clog; remove what the xact created |
//! | SMGR | 2 | 0x10 | [`SmgrCreate`] | create the fork's file |
//! | SMGR | 2 | 0x20 | [`SmgrTruncate`] | cut buffers, then files, every fork at once |
//! | DBASE | 4 | 0x00 | [`DbCreateDir`] | create the database directory |
//! | DBASE | 4 | 0x10 | [`DbFileCopy`] | nothing in crash recovery (see `xact.rs`) |
//! | TBLSPC | 5 | 0x00 | [`TblspcCreate`] | create the location's directory and link |
//! | HEAP | 10 | 0x00 | insert: [`BlockRef`] + [`HeapInsert`] | add the tuple |
//! | HEAP | 10 | 0x10 | delete: [`BlockRef`] + [`HeapDelete`] | set xmax |
//! | HEAP | 10 | 0x20 | prune: [`BlockRef`] + [`HeapPrune`] | remove tuples, compact, VM |
//! | SEQ | 15 | 0x00 | LOG: [`BlockRef`] with the page's image (`sequence` rule 3) | restore the page |
//!
//! A [`BlockRef`] names one page. With `image`, the record carries the whole page as it
//! is after the change (its free "hole" between `pd_lower` and `pd_upper` left out):
//! replay restores it and does not apply the change. With `will_init`, replay starts
//! from an empty page.

use crate::codec::{Dec, DecResult, DecodeError, Enc};
use strata_page::PageBuf;
use strata_types::{BlockNumber, BufferTag, Lsn, Oid, RelFileNumber, RelKey, Xid, BLCKSZ};
use strata_wal::RmgrId;

pub const RM_XLOG: RmgrId = RmgrId(0);
pub const RM_XACT: RmgrId = RmgrId(1);
pub const RM_SMGR: RmgrId = RmgrId(2);
pub const RM_DBASE: RmgrId = RmgrId(4);
pub const RM_TBLSPC: RmgrId = RmgrId(5);
pub const RM_HEAP: RmgrId = RmgrId(10);
pub const RM_BTREE: RmgrId = RmgrId(11);
/// PostgreSQL's id for its Sequence resource manager.
pub const RM_SEQ: RmgrId = RmgrId(15);

pub const XLOG_CHECKPOINT: u8 = 0x00;
pub const XLOG_NEXTOID: u8 = 0x20;
pub const XLOG_FPI: u8 = 0x30;
/// The end of an online base backup (PostgreSQL's XLOG_BACKUP_END): its payload is the
/// backup's start LSN, little-endian; recovery from that backup may end only past it.
pub const XLOG_BACKUP_END: u8 = 0x50;
/// A segment switch (wal rule 9): the rest of the segment is unused.
pub const XLOG_SWITCH: u8 = strata_wal::XLOG_SWITCH_INFO;
pub const XACT_COMMIT: u8 = 0x00;
pub const XACT_ABORT: u8 = 0x20;
pub const SMGR_CREATE: u8 = 0x10;
pub const SMGR_TRUNCATE: u8 = 0x20;
pub const DBASE_CREATE_DIR: u8 = 0x00;
pub const DBASE_FILE_COPY: u8 = 0x10;
pub const TBLSPC_CREATE: u8 = 0x00;
pub const HEAP_INSERT: u8 = 0x00;
pub const HEAP_DELETE: u8 = 0x10;
pub const HEAP_PRUNE: u8 = 0x20;
pub const HEAP_MULTI_INSERT: u8 = 0x30;

/// Name of a record type for the redo statistics table.
pub fn record_name(rmgr: RmgrId, info: u8) -> &'static str {
    match (rmgr, info) {
        (RM_XLOG, XLOG_CHECKPOINT) => "XLOG/CHECKPOINT",
        (RM_XLOG, XLOG_NEXTOID) => "XLOG/NEXTOID",
        (RM_XLOG, XLOG_FPI) => "XLOG/FPI",
        (RM_XLOG, XLOG_BACKUP_END) => "XLOG/BACKUP_END",
        (RM_XLOG, XLOG_SWITCH) => "XLOG/SWITCH",
        (RM_XACT, XACT_COMMIT) => "Transaction/COMMIT",
        (RM_XACT, XACT_ABORT) => "Transaction/ABORT",
        (RM_SMGR, SMGR_CREATE) => "Storage/CREATE",
        (RM_SMGR, SMGR_TRUNCATE) => "Storage/TRUNCATE",
        (RM_DBASE, DBASE_CREATE_DIR) => "Database/CREATE_WAL_LOG",
        (RM_DBASE, DBASE_FILE_COPY) => "Database/CREATE_FILE_COPY",
        (RM_TBLSPC, TBLSPC_CREATE) => "Tablespace/CREATE",
        (RM_HEAP, HEAP_INSERT) => "Heap/INSERT",
        (RM_HEAP, HEAP_DELETE) => "Heap/DELETE",
        (RM_HEAP, HEAP_PRUNE) => "Heap/PRUNE",
        (RM_HEAP, HEAP_MULTI_INSERT) => "Heap/MULTI_INSERT",
        (RM_BTREE, crate::btree::BTREE_INSERT) => "Btree/INSERT",
        (RM_BTREE, crate::btree::BTREE_PAGES) => "Btree/PAGES",
        (RM_BTREE, crate::btree::BTREE_DELETE) => "Btree/DELETE",
        (RM_BTREE, crate::btree::BTREE_INSERT_MANY) => "Btree/INSERT_MANY",
        (RM_SEQ, crate::sequence::SEQ_LOG) => "Sequence/LOG",
        _ => "unknown",
    }
}

/// Something a transaction created, removed again if it does not commit.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum PendingCreate {
    Rel(RelKey),
    DbDir { spc: Oid, db: Oid },
    Tablespace(Oid),
}

impl PendingCreate {
    fn encode(&self, e: &mut Enc) {
        match *self {
            PendingCreate::Rel(r) => {
                e.u8(0).rel(r);
            }
            PendingCreate::DbDir { spc, db } => {
                e.u8(1).u32(spc.0).u32(db.0);
            }
            PendingCreate::Tablespace(spc) => {
                e.u8(2).u32(spc.0);
            }
        }
    }
    fn decode(d: &mut Dec<'_>) -> DecResult<PendingCreate> {
        Ok(match d.u8()? {
            0 => PendingCreate::Rel(d.rel()?),
            1 => PendingCreate::DbDir {
                spc: Oid(d.u32()?),
                db: Oid(d.u32()?),
            },
            2 => PendingCreate::Tablespace(Oid(d.u32()?)),
            t => return Err(DecodeError(format!("bad pending-create tag {t}"))),
        })
    }
}

fn encode_creates(e: &mut Enc, v: &[PendingCreate]) {
    e.u32(v.len() as u32);
    for c in v {
        c.encode(e);
    }
}

fn decode_creates(d: &mut Dec<'_>) -> DecResult<Vec<PendingCreate>> {
    let n = d.count(5)?;
    (0..n).map(|_| PendingCreate::decode(d)).collect()
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CheckpointRecord {
    pub redo: Lsn,
    pub next_xid: Xid,
    pub next_oid: Oid,
    pub next_relfilenumber: RelFileNumber,
    pub shutdown: bool,
    /// The transaction running when the redo point was taken and what it had created
    /// before it: recovery removes them if that transaction never finishes, although
    /// their create records lie before the redo point and are not replayed.
    pub running: Option<(Xid, Vec<PendingCreate>)>,
}

impl CheckpointRecord {
    pub fn encode(&self) -> Vec<u8> {
        let mut e = Enc::new();
        e.u64(self.redo.0)
            .u32(self.next_xid.0)
            .u32(self.next_oid.0)
            .u64(self.next_relfilenumber.0)
            .u8(self.shutdown as u8);
        match &self.running {
            None => {
                e.u32(0);
            }
            Some((xid, creates)) => {
                e.u32(xid.0);
                encode_creates(&mut e, creates);
            }
        }
        e.0
    }
    pub fn decode(b: &[u8]) -> DecResult<CheckpointRecord> {
        let mut d = Dec::new(b, "checkpoint record");
        let redo = Lsn(d.u64()?);
        let next_xid = Xid(d.u32()?);
        let next_oid = Oid(d.u32()?);
        let next_relfilenumber = RelFileNumber(d.u64()?);
        let shutdown = d.u8()? != 0;
        let xid = d.u32()?;
        let running = if xid == 0 {
            None
        } else {
            Some((Xid(xid), decode_creates(&mut d)?))
        };
        d.finish()?;
        Ok(CheckpointRecord {
            redo,
            next_xid,
            next_oid,
            next_relfilenumber,
            shutdown,
            running,
        })
    }
}

/// A commit: everything the transaction dropped goes once this record is durable.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct CommitRecord {
    pub dropped_rels: Vec<RelKey>,
    /// Databases dropped, each with every tablespace holding a directory of it.
    pub dropped_dbs: Vec<(Oid, Vec<Oid>)>,
    pub dropped_spcs: Vec<Oid>,
    /// When it committed, Unix microseconds (0 in records written before it was
    /// kept): `pg_last_xact_replay_timestamp()` on a standby.
    pub commit_time_unix_us: u64,
}

impl CommitRecord {
    pub fn encode(&self) -> Vec<u8> {
        let mut e = Enc::new();
        e.u32(self.dropped_rels.len() as u32);
        for r in &self.dropped_rels {
            e.rel(*r);
        }
        e.u32(self.dropped_dbs.len() as u32);
        for (db, spcs) in &self.dropped_dbs {
            e.u32(db.0).oids(spcs);
        }
        e.oids(&self.dropped_spcs);
        e.u64(self.commit_time_unix_us);
        e.0
    }
    pub fn decode(b: &[u8]) -> DecResult<CommitRecord> {
        let mut d = Dec::new(b, "commit record");
        let n = d.count(16)?;
        let dropped_rels = (0..n).map(|_| d.rel()).collect::<DecResult<_>>()?;
        let n = d.count(8)?;
        let mut dropped_dbs = Vec::with_capacity(n);
        for _ in 0..n {
            dropped_dbs.push((Oid(d.u32()?), d.oids()?));
        }
        let dropped_spcs = d.oids()?;
        // A trailing time: absent in WAL written before it existed.
        let commit_time_unix_us = if d.remaining() >= 8 { d.u64()? } else { 0 };
        d.finish()?;
        Ok(CommitRecord {
            dropped_rels,
            dropped_dbs,
            dropped_spcs,
            commit_time_unix_us,
        })
    }
}

/// An abort: everything the transaction created is removed.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct AbortRecord {
    pub created: Vec<PendingCreate>,
}

impl AbortRecord {
    pub fn encode(&self) -> Vec<u8> {
        let mut e = Enc::new();
        encode_creates(&mut e, &self.created);
        e.0
    }
    pub fn decode(b: &[u8]) -> DecResult<AbortRecord> {
        let mut d = Dec::new(b, "abort record");
        let created = decode_creates(&mut d)?;
        d.finish()?;
        Ok(AbortRecord { created })
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SmgrCreate {
    pub rel: RelKey,
    pub fork: strata_types::ForkNumber,
    /// Created by the record's transaction along with the relation: removed if it
    /// aborts. (A map fork added to an existing relation is not.)
    pub transactional: bool,
}

impl SmgrCreate {
    pub fn encode(&self) -> Vec<u8> {
        let mut e = Enc::new();
        e.rel(self.rel)
            .u8(self.fork.index() as u8)
            .u8(self.transactional as u8);
        e.0
    }
    pub fn decode(b: &[u8]) -> DecResult<SmgrCreate> {
        let mut d = Dec::new(b, "smgr create record");
        let r = SmgrCreate {
            rel: d.rel()?,
            fork: d.fork()?,
            transactional: d.u8()? != 0,
        };
        d.finish()?;
        Ok(r)
    }
}

/// Truncation of several forks of one relation: one record (PostgreSQL's VACUUM
/// truncation used to cost a pass per fork).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SmgrTruncate {
    pub rel: RelKey,
    pub forks: Vec<(strata_types::ForkNumber, BlockNumber)>,
}

impl SmgrTruncate {
    pub fn encode(&self) -> Vec<u8> {
        let mut e = Enc::new();
        e.rel(self.rel).u32(self.forks.len() as u32);
        for (f, n) in &self.forks {
            e.u8(f.index() as u8).u32(n.0);
        }
        e.0
    }
    pub fn decode(b: &[u8]) -> DecResult<SmgrTruncate> {
        let mut d = Dec::new(b, "smgr truncate record");
        let rel = d.rel()?;
        let n = d.count(5)?;
        let forks = (0..n)
            .map(|_| Ok((d.fork()?, d.block()?)))
            .collect::<DecResult<_>>()?;
        d.finish()?;
        Ok(SmgrTruncate { rel, forks })
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DbCreateDir {
    pub spc: Oid,
    pub db: Oid,
}

impl DbCreateDir {
    pub fn encode(&self) -> Vec<u8> {
        let mut e = Enc::new();
        e.u32(self.spc.0).u32(self.db.0);
        e.0
    }
    pub fn decode(b: &[u8]) -> DecResult<DbCreateDir> {
        let mut d = Dec::new(b, "database create record");
        let r = DbCreateDir {
            spc: Oid(d.u32()?),
            db: Oid(d.u32()?),
        };
        d.finish()?;
        Ok(r)
    }
}

/// CREATE DATABASE ... STRATEGY = FILE_COPY: the template's directories were copied.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DbFileCopy {
    pub src_db: Oid,
    pub dst_db: Oid,
    /// (template's tablespace, copy's tablespace) per directory copied.
    pub dirs: Vec<(Oid, Oid)>,
}

impl DbFileCopy {
    pub fn encode(&self) -> Vec<u8> {
        let mut e = Enc::new();
        e.u32(self.src_db.0)
            .u32(self.dst_db.0)
            .u32(self.dirs.len() as u32);
        for (a, b) in &self.dirs {
            e.u32(a.0).u32(b.0);
        }
        e.0
    }
    pub fn decode(b: &[u8]) -> DecResult<DbFileCopy> {
        let mut d = Dec::new(b, "database file copy record");
        let src_db = Oid(d.u32()?);
        let dst_db = Oid(d.u32()?);
        let n = d.count(8)?;
        let dirs = (0..n)
            .map(|_| Ok((Oid(d.u32()?), Oid(d.u32()?))))
            .collect::<DecResult<_>>()?;
        d.finish()?;
        Ok(DbFileCopy {
            src_db,
            dst_db,
            dirs,
        })
    }
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TblspcCreate {
    pub spc: Oid,
    pub location: String,
}

impl TblspcCreate {
    pub fn encode(&self) -> Vec<u8> {
        let mut e = Enc::new();
        e.u32(self.spc.0).str(&self.location);
        e.0
    }
    pub fn decode(b: &[u8]) -> DecResult<TblspcCreate> {
        let mut d = Dec::new(b, "tablespace create record");
        let r = TblspcCreate {
            spc: Oid(d.u32()?),
            location: d.str()?,
        };
        d.finish()?;
        Ok(r)
    }
}

const BKP_IMAGE: u8 = 1;
const BKP_WILL_INIT: u8 = 2;

/// One page a record changes, with its full-page image if it carries one.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BlockRef {
    pub tag: BufferTag,
    pub will_init: bool,
    pub image: Option<Box<PageBuf>>,
}

impl BlockRef {
    pub fn encode(&self, e: &mut Enc) {
        let flags = if self.image.is_some() { BKP_IMAGE } else { 0 }
            | if self.will_init { BKP_WILL_INIT } else { 0 };
        e.rel(self.tag.rel)
            .u8(self.tag.fork.index() as u8)
            .u32(self.tag.block.0)
            .u8(flags);
        if let Some(img) = &self.image {
            let (lower, upper) = hole(img);
            e.u16(lower as u16).u16(upper as u16);
            e.raw(&img[..lower]).raw(&img[upper..]);
        }
    }

    pub fn decode(d: &mut Dec<'_>) -> DecResult<BlockRef> {
        let rel = d.rel()?;
        let fork = d.fork()?;
        let block = d.block()?;
        let flags = d.u8()?;
        let image = if flags & BKP_IMAGE != 0 {
            let lower = d.u16()? as usize;
            let upper = d.u16()? as usize;
            if lower > upper || upper > BLCKSZ {
                return Err(DecodeError(format!("bad image hole {lower}..{upper}")));
            }
            let mut img: Box<PageBuf> = vec![0u8; BLCKSZ]
                .into_boxed_slice()
                .try_into()
                .expect("BLCKSZ");
            img[..lower].copy_from_slice(d.take(lower)?);
            img[upper..].copy_from_slice(d.take(BLCKSZ - upper)?);
            Some(img)
        } else {
            None
        };
        Ok(BlockRef {
            tag: BufferTag::new(rel, fork, block),
            will_init: flags & BKP_WILL_INIT != 0,
            image,
        })
    }
}

/// The free hole of a page: `pd_lower..pd_upper` if the header is sane, else empty.
fn hole(p: &PageBuf) -> (usize, usize) {
    if strata_page::is_new(p) {
        return (0, 0);
    }
    let (lower, upper) = (strata_page::lower(p), strata_page::upper(p));
    if strata_page::HEADER_BYTES <= lower && lower <= upper && upper <= BLCKSZ {
        (lower, upper)
    } else {
        (0, 0)
    }
}

/// Several tuples into one page, in one record (PostgreSQL's heap_multi_insert):
/// `(item index, tuple)` in the order they went in.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct HeapMultiInsert {
    pub vm_cleared: bool,
    pub items: Vec<(u16, Vec<u8>)>,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct HeapInsert {
    pub offset: u16,
    pub vm_cleared: bool,
    pub tuple: Vec<u8>,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct HeapDelete {
    pub xmax: Xid,
    pub vm_cleared: bool,
    pub offsets: Vec<u16>,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct HeapPrune {
    /// Every tuple left is visible to all: set the page's flag and its VM bit.
    pub all_visible: bool,
    pub removed: Vec<u16>,
}

/// The heap record bodies, after their block reference.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum HeapBody {
    Insert(HeapInsert),
    Delete(HeapDelete),
    Prune(HeapPrune),
    MultiInsert(HeapMultiInsert),
}

fn encode_u16s(e: &mut Enc, v: &[u16]) {
    e.u32(v.len() as u32);
    for x in v {
        e.u16(*x);
    }
}

fn decode_u16s(d: &mut Dec<'_>) -> DecResult<Vec<u16>> {
    let n = d.count(2)?;
    (0..n).map(|_| d.u16()).collect()
}

/// The body of a Heap/INSERT (one item) or Heap/MULTI_INSERT (several) record from
/// tuples the caller holds: the insert path encodes the page's tuples straight into
/// the record, with no owned copy of each in between (the decoded form is
/// [`HeapBody`]).
pub fn encode_inserts(block: &BlockRef, vm_cleared: bool, items: &[(u16, &[u8])]) -> Vec<u8> {
    let bytes: usize = items.iter().map(|(_, t)| 6 + t.len()).sum();
    let image = block.image.as_ref().map_or(0, |_| BLCKSZ);
    let mut e = Enc(Vec::with_capacity(64 + image + 5 + bytes));
    block.encode(&mut e);
    if let [(off, t)] = items {
        e.u16(*off).u8(vm_cleared as u8).raw(t);
        return e.0;
    }
    e.u8(vm_cleared as u8).u32(items.len() as u32);
    for (off, t) in items {
        e.u16(*off).bytes(t);
    }
    e.0
}

impl HeapBody {
    pub fn info(&self) -> u8 {
        match self {
            HeapBody::Insert(_) => HEAP_INSERT,
            HeapBody::Delete(_) => HEAP_DELETE,
            HeapBody::Prune(_) => HEAP_PRUNE,
            HeapBody::MultiInsert(_) => HEAP_MULTI_INSERT,
        }
    }

    pub fn encode(&self, block: &BlockRef) -> Vec<u8> {
        let (r_delete, r_prune) = match self {
            HeapBody::Insert(r) => {
                return encode_inserts(block, r.vm_cleared, &[(r.offset, &r.tuple[..])])
            }
            HeapBody::MultiInsert(r) => {
                let xs: Vec<(u16, &[u8])> = r.items.iter().map(|(o, t)| (*o, &t[..])).collect();
                return encode_inserts(block, r.vm_cleared, &xs);
            }
            HeapBody::Delete(r) => (Some(r), None),
            HeapBody::Prune(r) => (None, Some(r)),
        };
        let mut e = Enc(Vec::with_capacity(
            64 + block.image.as_ref().map_or(0, |_| BLCKSZ),
        ));
        block.encode(&mut e);
        if let Some(r) = r_delete {
            e.u32(r.xmax.0).u8(r.vm_cleared as u8);
            encode_u16s(&mut e, &r.offsets);
        }
        if let Some(r) = r_prune {
            e.u8(r.all_visible as u8);
            encode_u16s(&mut e, &r.removed);
        }
        e.0
    }

    pub fn decode(info: u8, b: &[u8]) -> DecResult<(BlockRef, HeapBody)> {
        let mut d = Dec::new(b, "heap record");
        let block = BlockRef::decode(&mut d)?;
        let body = match info {
            HEAP_INSERT => HeapBody::Insert(HeapInsert {
                offset: d.u16()?,
                vm_cleared: d.u8()? != 0,
                tuple: d.rest().to_vec(),
            }),
            HEAP_DELETE => HeapBody::Delete(HeapDelete {
                xmax: Xid(d.u32()?),
                vm_cleared: d.u8()? != 0,
                offsets: decode_u16s(&mut d)?,
            }),
            HEAP_PRUNE => HeapBody::Prune(HeapPrune {
                all_visible: d.u8()? != 0,
                removed: decode_u16s(&mut d)?,
            }),
            HEAP_MULTI_INSERT => {
                let vm_cleared = d.u8()? != 0;
                let n = d.u32()? as usize;
                let mut items = Vec::with_capacity(n.min(BLCKSZ));
                for _ in 0..n {
                    items.push((d.u16()?, d.bytes()?.to_vec()));
                }
                HeapBody::MultiInsert(HeapMultiInsert { vm_cleared, items })
            }
            other => {
                return Err(DecodeError(format!(
                    "unknown heap record info {other:#04x}"
                )))
            }
        };
        d.finish()?;
        Ok((block, body))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use strata_types::ForkNumber;

    #[test]
    fn records_round_trip() {
        let rel = RelKey::new(Oid(1663), Oid(5), RelFileNumber(16384));
        let c = CommitRecord {
            dropped_rels: vec![rel],
            dropped_dbs: vec![(Oid(7), vec![Oid(1663), Oid(16500)])],
            dropped_spcs: vec![Oid(16500)],
            commit_time_unix_us: 1_795_000_000_000_000,
        };
        assert_eq!(CommitRecord::decode(&c.encode()).unwrap(), c);
        // A commit record written before the time was kept still decodes.
        let old = &c.encode()[..c.encode().len() - 8];
        assert_eq!(CommitRecord::decode(old).unwrap().commit_time_unix_us, 0);
        let k = CheckpointRecord {
            redo: Lsn(0x100_0028),
            next_xid: Xid(9),
            next_oid: Oid(16390),
            next_relfilenumber: RelFileNumber(16400),
            shutdown: false,
            running: Some((
                Xid(8),
                vec![PendingCreate::Rel(rel), PendingCreate::Tablespace(Oid(3))],
            )),
        };
        assert_eq!(CheckpointRecord::decode(&k.encode()).unwrap(), k);
        let t = SmgrTruncate {
            rel,
            forks: vec![
                (ForkNumber::Main, BlockNumber(3)),
                (ForkNumber::Vm, BlockNumber(1)),
            ],
        };
        assert_eq!(SmgrTruncate::decode(&t.encode()).unwrap(), t);
        // A truncated payload is an error, never a panic.
        let bytes = c.encode();
        assert!(CommitRecord::decode(&bytes[..bytes.len() - 1]).is_err());
    }

    #[test]
    fn image_leaves_out_the_hole_and_restores_exactly() {
        let mut p: Box<PageBuf> = vec![0u8; BLCKSZ].into_boxed_slice().try_into().unwrap();
        strata_page::init(&mut p, 0);
        strata_page::add_item(&mut p, b"hello tuple").unwrap();
        let tag = BufferTag::new(
            RelKey::new(Oid(1663), Oid(5), RelFileNumber(1)),
            ForkNumber::Main,
            BlockNumber(4),
        );
        let b = BlockRef {
            tag,
            will_init: false,
            image: Some(p.clone()),
        };
        let body = HeapBody::Delete(HeapDelete {
            xmax: Xid(5),
            vm_cleared: true,
            offsets: vec![0],
        });
        let bytes = body.encode(&b);
        assert!(bytes.len() < 200, "hole left out: {} bytes", bytes.len());
        let (b2, body2) = HeapBody::decode(HEAP_DELETE, &bytes).unwrap();
        assert_eq!(b2, b);
        assert_eq!(body2, body);
    }
}
