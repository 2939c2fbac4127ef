//! `strata waldump`: the engine's WAL records described one by one, and their
//! statistics per resource manager or per record type, in pg_waldump's layout.
//!
//! Entry points: [`describe`] (one record: resource manager, type, description,
//! block references), [`format_record`] (pg_waldump's line), [`Stats`] (`--stats`
//! and `--stats=record`).
//!
//! Rules (cited as "waldump rule N"):
//! 1. Describing never fails: a payload that does not decode is described as
//!    `undecodable: <why>`, so a dump of a damaged log still shows every record the
//!    reader returned.
//! 2. Sizes are pg_waldump's: a record's length is its total bytes in the log
//!    (header and payload), its FPI size the bytes of the full-page images it carries
//!    (the page less its hole), and "Record size" in the statistics the length less
//!    the images.

use crate::records::*;
use std::collections::BTreeMap;
use std::fmt::Write;
use strata_types::{BufferTag, ForkNumber, Lsn, RelKey, BLCKSZ};
use strata_wal::Record;

/// One record, described.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Described {
    /// pg_waldump's resource-manager name (`Heap`, `Transaction`, ...).
    pub rmgr: &'static str,
    /// The record type (`INSERT`, `COMMIT`, ...).
    pub kind: &'static str,
    pub desc: String,
    /// The pages the record changes, each with the bytes of its image if it has one.
    pub blocks: Vec<(BufferTag, Option<usize>)>,
}

impl Described {
    /// Bytes of full-page images in the record.
    pub fn fpi_bytes(&self) -> u64 {
        self.blocks.iter().filter_map(|b| b.1).sum::<usize>() as u64
    }
}

/// The resource manager's name and the record type's, as pg_waldump prints them.
fn names(r: &Record) -> (&'static str, &'static str) {
    let full = record_name(r.rmgr, r.info);
    match full.split_once('/') {
        Some((rm, kind)) => (rm, kind),
        None => ("unknown", "UNKNOWN"),
    }
}

fn rel(r: RelKey) -> String {
    format!("{}/{}/{}", r.spc, r.db, r.rel)
}

fn rels(v: &[RelKey]) -> String {
    v.iter().map(|r| rel(*r)).collect::<Vec<_>>().join(" ")
}

/// Describes a record (rule 1).
pub fn describe(r: &Record) -> Described {
    let (rmgr, kind) = names(r);
    let mut blocks = Vec::new();
    let desc = describe_payload(r, &mut blocks).unwrap_or_else(|e| format!("undecodable: {e}"));
    Described {
        rmgr,
        kind,
        desc,
        blocks,
    }
}

fn block_of(b: &BlockRef) -> (BufferTag, Option<usize>) {
    let image = b.image.as_ref().map(|img| {
        let lower = strata_page::lower(img);
        let upper = strata_page::upper(img);
        if strata_page::is_new(img) || lower > upper || upper > BLCKSZ {
            BLCKSZ
        } else {
            BLCKSZ - (upper - lower)
        }
    });
    (b.tag, image)
}

type Blocks = Vec<(BufferTag, Option<usize>)>;

fn describe_payload(r: &Record, blocks: &mut Blocks) -> Result<String, String> {
    let e = |e: crate::codec::DecodeError| e.0;
    Ok(match (r.rmgr, r.info) {
        (RM_XLOG, XLOG_CHECKPOINT) => {
            let c = CheckpointRecord::decode(&r.payload).map_err(e)?;
            format!(
                "redo {}; next xid {}; next oid {}; next relfilenumber {}; {}",
                c.redo,
                c.next_xid.0,
                c.next_oid.0,
                c.next_relfilenumber.0,
                if c.shutdown { "shutdown" } else { "online" }
            )
        }
        (RM_XLOG, XLOG_NEXTOID) => match <[u8; 4]>::try_from(&r.payload[..]) {
            Ok(b) => format!("{}", u32::from_le_bytes(b)),
            Err(_) => return Err("NEXTOID record of wrong length".into()),
        },
        (RM_XLOG, XLOG_BACKUP_END) => match <[u8; 8]>::try_from(&r.payload[..]) {
            Ok(b) => format!("{}", Lsn(u64::from_le_bytes(b))),
            Err(_) => return Err("BACKUP_END record of wrong length".into()),
        },
        (RM_XLOG, crate::records::XLOG_SWITCH) => String::new(),
        (RM_XLOG, XLOG_FPI) => {
            let mut d = crate::codec::Dec::new(&r.payload, "FPI record");
            blocks.push(block_of(&BlockRef::decode(&mut d).map_err(e)?));
            String::new()
        }
        (RM_HEAP, _) => {
            let (b, body) = HeapBody::decode(r.info, &r.payload).map_err(e)?;
            blocks.push(block_of(&b));
            describe_heap(&body)
        }
        (crate::records::RM_BTREE, _) => {
            crate::btree::describe(r, &mut |b| blocks.push(block_of(b))).map_err(e)?
        }
        (crate::records::RM_SEQ, _) => {
            crate::sequence::describe(r, &mut |b| blocks.push(block_of(b))).map_err(e)?
        }
        _ => describe_ddl(r).map_err(e)?,
    })
}

fn describe_heap(body: &HeapBody) -> String {
    match body {
        HeapBody::MultiInsert(m) => format!(
            "ntuples {} offs {:?}{}",
            m.items.len(),
            m.items.iter().map(|(o, _)| *o).collect::<Vec<_>>(),
            if m.vm_cleared {
                " all_visible_cleared"
            } else {
                ""
            }
        ),
        HeapBody::Insert(i) => format!(
            "off {}{}",
            i.offset,
            if i.vm_cleared {
                " all_visible_cleared"
            } else {
                ""
            }
        ),
        HeapBody::Delete(d) => format!(
            "xmax {} offs {:?}{}",
            d.xmax.0,
            d.offsets,
            if d.vm_cleared {
                " all_visible_cleared"
            } else {
                ""
            }
        ),
        HeapBody::Prune(p) => format!(
            "nremoved {}{}",
            p.removed.len(),
            if p.all_visible { " all_visible" } else { "" }
        ),
    }
}

fn describe_ddl(r: &Record) -> Result<String, crate::codec::DecodeError> {
    Ok(match (r.rmgr, r.info) {
        (RM_XACT, XACT_COMMIT) => {
            let c = CommitRecord::decode(&r.payload)?;
            let mut s = String::new();
            if !c.dropped_rels.is_empty() {
                let _ = write!(s, "rels: {}", rels(&c.dropped_rels));
            }
            for (db, spcs) in &c.dropped_dbs {
                let _ = write!(s, "{}dropped db {db} in {spcs:?}", sep(&s));
            }
            if !c.dropped_spcs.is_empty() {
                let _ = write!(s, "{}dropped tablespaces {:?}", sep(&s), c.dropped_spcs);
            }
            s
        }
        (RM_XACT, XACT_ABORT) => {
            let a = AbortRecord::decode(&r.payload)?;
            format!("created {}", a.created.len())
        }
        (RM_SMGR, SMGR_CREATE) => {
            let c = SmgrCreate::decode(&r.payload)?;
            format!("{}_{}", rel(c.rel), c.fork)
        }
        (RM_SMGR, SMGR_TRUNCATE) => {
            let t = SmgrTruncate::decode(&r.payload)?;
            let forks: Vec<String> = t.forks.iter().map(|(f, n)| format!("{f} {n}")).collect();
            format!("{} to {}", rel(t.rel), forks.join(", "))
        }
        (RM_DBASE, DBASE_CREATE_DIR) => {
            let c = DbCreateDir::decode(&r.payload)?;
            format!("create dir {}/{}", c.spc, c.db)
        }
        (RM_DBASE, DBASE_FILE_COPY) => {
            let c = DbFileCopy::decode(&r.payload)?;
            format!(
                "copy dir {} to {} ({} directories)",
                c.src_db,
                c.dst_db,
                c.dirs.len()
            )
        }
        (RM_TBLSPC, TBLSPC_CREATE) => {
            let c = TblspcCreate::decode(&r.payload)?;
            format!("{} \"{}\"", c.spc, c.location)
        }
        _ => format!("rmgr {} info 0x{:02X}", r.rmgr.0, r.info),
    })
}

fn sep(s: &str) -> &'static str {
    if s.is_empty() {
        ""
    } else {
        "; "
    }
}

/// pg_waldump's `%X/%08X`.
fn lsn(l: Lsn) -> String {
    format!("{:X}/{:08X}", l.0 >> 32, l.0 & 0xFFFF_FFFF)
}

/// One record in pg_waldump's layout.
pub fn format_record(r: &Record, d: &Described) -> String {
    let total = r.end.0 - r.lsn.0;
    let mut s = format!(
        "rmgr: {:<11} len (rec/tot): {:>6}/{:>6}, tx: {:>10}, lsn: {}, prev {}, desc: {}",
        d.rmgr,
        total - d.fpi_bytes(),
        total,
        r.xid,
        lsn(r.lsn),
        lsn(r.prev),
        d.kind
    );
    if !d.desc.is_empty() {
        let _ = write!(s, " {}", d.desc);
    }
    for (i, (tag, image)) in d.blocks.iter().enumerate() {
        let _ = write!(s, ", blkref #{i}: rel {}", rel(tag.rel));
        if tag.fork != ForkNumber::Main {
            let _ = write!(s, " fork {}", tag.fork);
        }
        let _ = write!(s, " blk {}", tag.block);
        if image.is_some() {
            s.push_str(" FPW");
        }
    }
    s
}

/// Counts and bytes of one group of records.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Counts {
    pub n: u64,
    /// Bytes less images (pg_waldump's "Record size").
    pub rec: u64,
    pub fpi: u64,
}

/// `--stats`: counts and sizes per resource manager and per record type.
#[derive(Debug, Default)]
pub struct Stats {
    pub by_rmgr: BTreeMap<&'static str, Counts>,
    pub by_type: BTreeMap<String, Counts>,
}

impl Stats {
    pub fn add(&mut self, r: &Record, d: &Described) {
        let fpi = d.fpi_bytes();
        let total = r.end.0 - r.lsn.0;
        for c in [
            self.by_rmgr.entry(d.rmgr).or_default(),
            self.by_type
                .entry(format!("{}/{}", d.rmgr, d.kind))
                .or_default(),
        ] {
            c.n += 1;
            c.rec += total - fpi;
            c.fpi += fpi;
        }
    }

    /// The table, per resource manager or (`per_record`) per record type.
    pub fn render(&self, per_record: bool) -> String {
        let rows: Vec<(String, Counts)> = if per_record {
            self.by_type.iter().map(|(k, v)| (k.clone(), *v)).collect()
        } else {
            self.by_rmgr
                .iter()
                .map(|(k, v)| (k.to_string(), *v))
                .collect()
        };
        let total = rows.iter().fold(Counts::default(), |a, (_, c)| Counts {
            n: a.n + c.n,
            rec: a.rec + c.rec,
            fpi: a.fpi + c.fpi,
        });
        let pct = |x: u64, of: u64| {
            if of == 0 {
                0.0
            } else {
                100.0 * x as f64 / of as f64
            }
        };
        let all = total.rec + total.fpi;
        let mut s = format!(
            "{:<27} {:>20} {:>8} {:>20} {:>8} {:>20} {:>8} {:>20} {:>8}\n",
            "Type", "N", "(%)", "Record size", "(%)", "FPI size", "(%)", "Combined size", "(%)"
        );
        let _ = writeln!(
            s,
            "{:<27} {:>20} {:>8} {:>20} {:>8} {:>20} {:>8} {:>20} {:>8}",
            "----", "-", "---", "-----------", "---", "--------", "---", "-------------", "---"
        );
        for (name, c) in &rows {
            let _ = writeln!(
                s,
                "{:<27} {:>20} ({:>6.2}) {:>20} ({:>6.2}) {:>20} ({:>6.2}) {:>20} ({:>6.2})",
                name,
                c.n,
                pct(c.n, total.n),
                c.rec,
                pct(c.rec, total.rec),
                c.fpi,
                pct(c.fpi, total.fpi),
                c.rec + c.fpi,
                pct(c.rec + c.fpi, all)
            );
        }
        let _ = writeln!(
            s,
            "{:<27} {:>20} {:<9}{:>20} {:<9}{:>20} {:<9}{:>20} {:<6}",
            "----", "", "", "", "", "", "", "", ""
        );
        let _ = writeln!(
            s,
            "{:<27} {:>20} {:<9}{:>20} {:<9}{:>20} {:<9}{:>20} {:<6}",
            "Total",
            total.n,
            "",
            total.rec,
            format!("[{:.2}%]", pct(total.rec, all)),
            total.fpi,
            format!("[{:.2}%]", pct(total.fpi, all)),
            all,
            "[100%]"
        );
        s
    }
}
