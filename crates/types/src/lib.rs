//! Domain newtypes and constants shared by every Strata layer.
//!
//! Owns: the identity of everything stored — `Oid`, `RelFileNumber`, `BlockNumber`,
//! `ForkNumber`, `RelKey`, `BufferTag`, `Lsn` — and the sizes everything is built on
//! (`BLCKSZ`, `RELSEG_BLOCKS`), plus parsing of PostgreSQL-style memory settings.
//! `Lsn` carries its own arithmetic (`+ u64`, `- Lsn`) and PostgreSQL's `X/X` text form
//! both ways (`Display`, `FromStr`), so no layer computes on or formats its raw `u64`.
//! [`Float`] is a stored `real`/`double precision` value with PostgreSQL's total order;
//! [`Datum`] is one SQL value, the type the engine stores and the SQL layer computes on.
//!
//! Invariants:
//! 1. No bare integers for domain values: every layer passes these types.
//! 2. `RelFileNumber` is 64-bit and never reused within a cluster, so a stale cached
//!    page can never be mistaken for a page of a newer relation.
//! 3. The ordering of `BufferTag` is file order: (tablespace, database, relation, fork,
//!    block). Checkpoints sort by it to write each file sequentially.

mod datum;
mod float;
pub mod numeric;
pub mod units;

pub use datum::Datum;
pub use float::{Float, Interval};
pub use numeric::{NumError, Numeric};

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
/// Where temporary tables live (a pseudo-tablespace, never in the catalog): files
/// under `base/pgsql_tmp/rels/<db>/`, never WAL-logged, never fsynced, removed
/// whole at start-up (smgr rule 8).
pub const TEMP_TABLESPACE: Oid = Oid(1665);

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

    /// A temporary table's storage ([`TEMP_TABLESPACE`]): no WAL, no fsync.
    pub fn is_temp(&self) -> bool {
        self.spc == TEMP_TABLESPACE
    }
}

impl fmt::Display for RelKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/{}/{}", self.spc, self.db, self.rel)
    }
}

/// Identifies one page: the key of the buffer pool. Ordered in file order.
///
/// Its `Hash` feeds one `u64`, [`BufferTag::locality_hash`], to the hasher.
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Debug)]
pub struct BufferTag {
    pub rel: RelKey,
    pub fork: ForkNumber,
    pub block: BlockNumber,
}

/// 64-bit finalizer of splitmix64: every input bit affects every output bit.
const fn mix64(mut x: u64) -> u64 {
    x = (x ^ (x >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    x = (x ^ (x >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    x ^ (x >> 31)
}

impl BufferTag {
    /// Blocks of one fork that share a locality run (see `locality_hash`).
    pub const LOCALITY_RUN_BLOCKS: u32 = 16;

    pub fn new(rel: RelKey, fork: ForkNumber, block: BlockNumber) -> BufferTag {
        BufferTag { rel, fork, block }
    }

    /// A hash that keeps a relation's neighbouring blocks together: the 16 blocks of an
    /// aligned run of one fork share every bit but the low four, which are the block's
    /// position in the run. A table that places entries by the low bits (hashbrown does)
    /// then holds a run in adjacent buckets, so an operation over a range of blocks
    /// touches a few cache lines per 16 pages instead of one random line per page. The
    /// other bits are fully mixed; the top 7 differ between the blocks of a run.
    pub fn locality_hash(&self) -> u64 {
        let run = self.block.0 / Self::LOCALITY_RUN_BLOCKS;
        let x = mix64(((self.rel.spc.0 as u64) << 32) | self.rel.db.0 as u64);
        let x = mix64(x ^ self.rel.rel.0);
        let x = mix64(x ^ (((self.fork as u64) << 32) | run as u64));
        // The run's 16 blocks fill one aligned window of 16 values, starting at an
        // offset taken from the mixed bits, so runs with only their first block cached
        // do not all share a home position.
        let run_blocks = Self::LOCALITY_RUN_BLOCKS as u64;
        let in_run = (self.block.0 % Self::LOCALITY_RUN_BLOCKS) as u64;
        let low = (x + in_run) % run_blocks;
        // hashbrown compares the top 7 bits 16 slots at a time: give each block of a run
        // its own top bits (a Weyl sequence, distinct for 0..16), or a probe of a run's
        // window would match every slot and fall back to full key compares.
        let top = in_run.wrapping_mul(0x9E37_79B9_7F4A_7C15) & (0x7F << 57);
        ((x & !(run_blocks - 1)) | low) ^ top
    }
}

impl std::hash::Hash for BufferTag {
    fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
        state.write_u64(self.locality_hash());
    }
}

impl fmt::Display for BufferTag {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} {} block {}", self.rel, self.fork, self.block)
    }
}

/// A transaction id. 0 is invalid, 1 the bootstrap transaction (always committed),
/// 2 reserved; normal transactions start at [`Xid::FIRST_NORMAL`], as PostgreSQL's.
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Debug, Default)]
pub struct Xid(pub u32);

impl Xid {
    pub const INVALID: Xid = Xid(0);
    pub const BOOTSTRAP: Xid = Xid(1);
    pub const FIRST_NORMAL: Xid = Xid(3);
}

impl fmt::Display for Xid {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.0)
    }
}

/// A position in the write-ahead log. Prints and parses as PostgreSQL's `pg_lsn`: `X/X`,
/// the high and low 32 bits in hexadecimal (`0/16B3748`).
///
/// Arithmetic: `lsn + bytes` and `lsn += bytes` move forward (overflow panics: 2^64 bytes
/// of WAL is a bug, not a workload); `later - earlier` is the distance in bytes and panics
/// if `earlier` is later, so where the order is not known use [`Lsn::checked_sub`].
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Debug, Default)]
pub struct Lsn(pub u64);

impl Lsn {
    pub const INVALID: Lsn = Lsn(0);

    /// Bytes from `earlier` to `self`, or `None` if `earlier` is after `self`.
    pub fn checked_sub(self, earlier: Lsn) -> Option<u64> {
        self.0.checked_sub(earlier.0)
    }

    /// `self + bytes`, or `None` past the last representable position.
    pub fn checked_add(self, bytes: u64) -> Option<Lsn> {
        self.0.checked_add(bytes).map(Lsn)
    }
}

impl fmt::Display for Lsn {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{:X}/{:X}", self.0 >> 32, self.0 & 0xFFFF_FFFF)
    }
}

impl std::ops::Add<u64> for Lsn {
    type Output = Lsn;
    fn add(self, bytes: u64) -> Lsn {
        match self.checked_add(bytes) {
            Some(lsn) => lsn,
            None => panic!("LSN overflow: {self} + {bytes}"),
        }
    }
}

impl std::ops::AddAssign<u64> for Lsn {
    fn add_assign(&mut self, bytes: u64) {
        *self = *self + bytes;
    }
}

impl std::ops::Sub<Lsn> for Lsn {
    type Output = u64;
    /// The distance in bytes from `earlier` to `self`. Panics if `earlier` is later.
    fn sub(self, earlier: Lsn) -> u64 {
        match self.checked_sub(earlier) {
            Some(bytes) => bytes,
            None => panic!("LSN underflow: {self} - {earlier}"),
        }
    }
}

/// Text that is not an LSN. Displays as PostgreSQL's error for `pg_lsn` input
/// (SQLSTATE 22P02, invalid_text_representation).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("invalid input syntax for type pg_lsn: \"{0}\"")]
pub struct ParseLsnError(pub String);

impl std::str::FromStr for Lsn {
    type Err = ParseLsnError;

    /// Parses `X/X` as PostgreSQL's `pg_lsn_in` does: each half is 1 to 8 hexadecimal
    /// digits (either case), nothing before, between or after.
    fn from_str(s: &str) -> Result<Lsn, ParseLsnError> {
        let half = |h: &str| -> Option<u64> {
            let ok = (1..=8).contains(&h.len()) && h.bytes().all(|b| b.is_ascii_hexdigit());
            ok.then(|| u64::from_str_radix(h, 16).ok()).flatten()
        };
        let parsed = s
            .split_once('/')
            .and_then(|(hi, lo)| Some((half(hi)?, half(lo)?)));
        match parsed {
            Some((hi, lo)) => Ok(Lsn(hi << 32 | lo)),
            None => Err(ParseLsnError(s.to_string())),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lsn_prints_like_postgres() {
        assert_eq!(Lsn(0x1_0000_00A0).to_string(), "1/A0");
        assert_eq!(Lsn(0x16B3748).to_string(), "0/16B3748");
        assert_eq!(Lsn(0).to_string(), "0/0");
        assert_eq!(Lsn(u64::MAX).to_string(), "FFFFFFFF/FFFFFFFF");
    }

    #[test]
    fn lsn_parses_like_postgres_and_round_trips() {
        assert_eq!("0/16B3748".parse(), Ok(Lsn(0x16B3748)));
        assert_eq!("1/a0".parse(), Ok(Lsn(0x1_0000_00A0)), "either case");
        assert_eq!("00000001/000000A0".parse(), Ok(Lsn(0x1_0000_00A0)));
        for v in [
            0,
            1,
            0xA0,
            0x16B3748,
            0x1_0000_0000,
            0xDEAD_BEEF_0BAD_F00D,
            u64::MAX,
        ] {
            assert_eq!(Lsn(v).to_string().parse(), Ok(Lsn(v)), "{v:#x}");
        }
    }

    #[test]
    fn lsn_rejects_bad_input_with_postgres_wording() {
        for bad in [
            "",
            "/",
            "0/",
            "/0",
            "16B3748",
            "0/16B3748/",
            " 0/1",
            "0/1 ",
            "0 /1",
            "-1/0",
            "+1/0",
            "G/0",
            "0/0x1",
            "123456789/0",
            "0/123456789",
            "0//1",
            "０/1",
        ] {
            let err = bad.parse::<Lsn>().expect_err(bad);
            assert_eq!(err, ParseLsnError(bad.to_string()));
            assert_eq!(
                err.to_string(),
                format!("invalid input syntax for type pg_lsn: \"{bad}\"")
            );
        }
    }

    #[test]
    fn lsn_arithmetic() {
        let a = Lsn(0xFFFF_FFF0);
        let b = a + 0x20;
        assert_eq!(b, Lsn(0x1_0000_0010));
        assert_eq!(b.to_string(), "1/10", "crosses the 32-bit halves");
        assert_eq!(b - a, 0x20);
        assert_eq!(a - a, 0);
        let mut c = a;
        c += 0x20;
        assert_eq!(c, b);
        assert_eq!(b.checked_sub(a), Some(0x20));
        assert_eq!(a.checked_sub(b), None);
        assert_eq!(Lsn(u64::MAX).checked_add(1), None);
        assert_eq!(Lsn(1).checked_add(2), Some(Lsn(3)));
    }

    #[test]
    #[should_panic(expected = "LSN underflow: 0/10 - 0/20")]
    fn lsn_sub_panics_when_earlier_is_later() {
        let _ = Lsn(0x10) - Lsn(0x20);
    }

    #[test]
    #[should_panic(expected = "LSN overflow")]
    fn lsn_add_panics_on_overflow() {
        let _ = Lsn(u64::MAX) + 1;
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
        let mut tags = [
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
    fn locality_hash_keeps_runs_together_and_spreads_the_rest() {
        let rel = RelKey::new(Oid(1663), Oid(5), RelFileNumber(42));
        let h = |b| BufferTag::new(rel, ForkNumber::Main, BlockNumber(b)).locality_hash();
        let window: std::collections::BTreeSet<u64> = (0..16).map(|b| h(b) & 15).collect();
        assert_eq!(window.len(), 16, "a run fills its aligned window of 16");
        for b in 0..16 {
            let window_of = |h: u64| (h & ((1 << 57) - 1)) >> 4;
            assert_eq!(window_of(h(b)), window_of(h(0)), "one window per run");
            assert_eq!(
                h(b).wrapping_sub(h(0)) & 15,
                b as u64,
                "in block order, wrapping"
            );
        }
        let tops: std::collections::BTreeSet<u64> = (0..16).map(|b| h(b) >> 57).collect();
        assert_eq!(tops.len(), 16, "each block of a run has its own top 7 bits");
        assert_ne!(
            h(15) & ((1 << 57) - 1) >> 4,
            h(16) & ((1 << 57) - 1) >> 4,
            "the next run lands elsewhere"
        );
        let other = BufferTag::new(rel, ForkNumber::Fsm, BlockNumber(0)).locality_hash();
        assert_ne!(other >> 4, h(0) >> 4);
        // high bits well spread over many relations: 128 partitions all used
        let mut seen = std::collections::HashSet::new();
        for n in 0..4096u64 {
            let r = RelKey::new(Oid(1663), Oid(5), RelFileNumber(n));
            seen.insert(
                BufferTag::new(r, ForkNumber::Main, BlockNumber(0)).locality_hash() >> 32 & 127,
            );
        }
        assert_eq!(seen.len(), 128);
    }

    #[test]
    fn fork_suffixes() {
        let s: Vec<_> = ForkNumber::ALL.iter().map(|f| f.suffix()).collect();
        assert_eq!(s, ["", "_fsm", "_vm", "_init"]);
    }
}
