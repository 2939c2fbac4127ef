//! Domain newtypes and constants shared by every Strata layer.
//!
//! Owns: the identity of everything stored — `Oid`, `RelFileNumber`, `BlockNumber`,
//! `ForkNumber`, `RelKey`, `BufferTag`, `Lsn` — and the sizes everything is built on
//! (`BLCKSZ`, `RELSEG_BLOCKS`), plus parsing of PostgreSQL-style memory settings.
//!
//! Invariants:
//! 1. No bare integers for domain values: every layer passes these types.
//! 2. `RelFileNumber` is 64-bit and never reused within a cluster, so a stale cached
//!    page can never be mistaken for a page of a newer relation.
//! 3. The ordering of `BufferTag` is file order: (tablespace, database, relation, fork,
//!    block). Checkpoints sort by it to write each file sequentially.

pub mod units;

use std::fmt;

/// Size of a page (PostgreSQL's BLCKSZ), in bytes.
pub const BLCKSZ: usize = 8192;
/// Blocks per segment file: 1 GiB segments, as PostgreSQL's RELSEG_SIZE.
pub const RELSEG_BLOCKS: u32 = 131_072;
/// Bytes per segment file.
pub const RELSEG_BYTES: u64 = RELSEG_BLOCKS as u64 * BLCKSZ as u64;

const _: () = assert!(BLCKSZ.is_power_of_two());
const _: () = assert!(RELSEG_BYTES == 1 << 30, "segments are 1 GiB");

/// An object identifier (database, tablespace, relation OID) as in PostgreSQL.
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Debug, Default)]
pub struct Oid(pub u32);

impl Oid {
    pub const INVALID: Oid = Oid(0);
}

impl fmt::Display for Oid {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.0)
    }
}

/// The tablespace PostgreSQL calls `pg_default`: files under `base/<db>/`.
pub const DEFAULT_TABLESPACE: Oid = Oid(1663);
/// The tablespace PostgreSQL calls `pg_global`: files under `global/`.
pub const GLOBAL_TABLESPACE: Oid = Oid(1664);

/// The file number of a relation. 64-bit and never reused (invariant 2).
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Debug, Default)]
pub struct RelFileNumber(pub u64);

impl fmt::Display for RelFileNumber {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.0)
    }
}

/// A block (page) number within one fork of a relation.
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Debug, Default)]
pub struct BlockNumber(pub u32);

impl BlockNumber {
    /// Segment file index holding this block.
    pub fn segment(self) -> u32 {
        self.0 / RELSEG_BLOCKS
    }
    /// Byte offset of this block within its segment file.
    pub fn offset_in_segment(self) -> u64 {
        (self.0 % RELSEG_BLOCKS) as u64 * BLCKSZ as u64
    }
}

impl fmt::Display for BlockNumber {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.0)
    }
}

/// The forks of a relation, each its own file chain.
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Debug)]
#[repr(u8)]
pub enum ForkNumber {
    Main = 0,
    Fsm = 1,
    Vm = 2,
    Init = 3,
}

impl ForkNumber {
    pub const ALL: [ForkNumber; 4] = [
        ForkNumber::Main,
        ForkNumber::Fsm,
        ForkNumber::Vm,
        ForkNumber::Init,
    ];
    pub const COUNT: usize = 4;

    /// File name suffix, as PostgreSQL names fork files.
    pub fn suffix(self) -> &'static str {
        match self {
            ForkNumber::Main => "",
            ForkNumber::Fsm => "_fsm",
            ForkNumber::Vm => "_vm",
            ForkNumber::Init => "_init",
        }
    }

    pub fn index(self) -> usize {
        self as usize
    }

    pub fn from_index(i: usize) -> Option<ForkNumber> {
        ForkNumber::ALL.get(i).copied()
    }
}

impl fmt::Display for ForkNumber {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let name = match self {
            ForkNumber::Main => "main",
            ForkNumber::Fsm => "fsm",
            ForkNumber::Vm => "vm",
            ForkNumber::Init => "init",
        };
        f.write_str(name)
    }
}

/// Identifies a relation's storage: PostgreSQL's RelFileLocator.
/// Field order is file order (invariant 3).
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Debug)]
pub struct RelKey {
    pub spc: Oid,
    pub db: Oid,
    pub rel: RelFileNumber,
}

impl RelKey {
    pub fn new(spc: Oid, db: Oid, rel: RelFileNumber) -> RelKey {
        RelKey { spc, db, rel }
    }
}

impl fmt::Display for RelKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/{}/{}", self.spc, self.db, self.rel)
    }
}

/// Identifies one page: the key of the buffer pool. Ordered in file order.
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Debug)]
pub struct BufferTag {
    pub rel: RelKey,
    pub fork: ForkNumber,
    pub block: BlockNumber,
}

impl BufferTag {
    pub fn new(rel: RelKey, fork: ForkNumber, block: BlockNumber) -> BufferTag {
        BufferTag { rel, fork, block }
    }
}

impl fmt::Display for BufferTag {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} {} block {}", self.rel, self.fork, self.block)
    }
}

/// A position in the write-ahead log. Prints as PostgreSQL's `X/X`.
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Debug, Default)]
pub struct Lsn(pub u64);

impl Lsn {
    pub const INVALID: Lsn = Lsn(0);
}

impl fmt::Display for Lsn {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{:X}/{:X}", self.0 >> 32, self.0 & 0xFFFF_FFFF)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lsn_prints_like_postgres() {
        assert_eq!(Lsn(0x1_0000_00A0).to_string(), "1/A0");
        assert_eq!(Lsn(0x16B3748).to_string(), "0/16B3748");
    }

    #[test]
    fn block_segment_math() {
        assert_eq!(BlockNumber(0).segment(), 0);
        assert_eq!(BlockNumber(RELSEG_BLOCKS - 1).segment(), 0);
        assert_eq!(BlockNumber(RELSEG_BLOCKS).segment(), 1);
        assert_eq!(BlockNumber(RELSEG_BLOCKS + 2).offset_in_segment(), 2 * 8192);
    }

    #[test]
    fn tags_sort_in_file_order() {
        let r = |spc, db, rel| RelKey::new(Oid(spc), Oid(db), RelFileNumber(rel));
        let mut tags = vec![
            BufferTag::new(r(1663, 5, 10), ForkNumber::Fsm, BlockNumber(0)),
            BufferTag::new(r(1663, 5, 10), ForkNumber::Main, BlockNumber(7)),
            BufferTag::new(r(1663, 4, 99), ForkNumber::Main, BlockNumber(0)),
            BufferTag::new(r(1663, 5, 10), ForkNumber::Main, BlockNumber(2)),
        ];
        tags.sort();
        assert_eq!(tags[0].rel.db, Oid(4));
        assert_eq!(tags[1].block, BlockNumber(2));
        assert_eq!(tags[2].block, BlockNumber(7));
        assert_eq!(tags[3].fork, ForkNumber::Fsm);
    }

    #[test]
    fn fork_suffixes() {
        let s: Vec<_> = ForkNumber::ALL.iter().map(|f| f.suffix()).collect();
        assert_eq!(s, ["", "_fsm", "_vm", "_init"]);
    }
}
