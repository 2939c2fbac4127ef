//! Heap tuples and the page-level heap operations shared by the primary and replay.
//!
//! Entry points: [`encode_tuple`], [`decode_values`], [`page_insert`],
//! [`page_delete`], [`page_prune`], [`tuple_xmin`] / [`tuple_xmax`].
//!
//! Tuple layout (little-endian):
//!
//! | offset | size | field |
//! |--------|------|-------|
//! | 0 | 4 | `xmin`: inserting transaction |
//! | 4 | 4 | `xmax`: deleting transaction, 0 if none |
//! | 8 | ⌈n/8⌉ | null bitmap, bit i set = column i is NULL |
//! | … | … | values of the non-null columns in order: int4 4 bytes, int8 8, bool 1, text u32 length + UTF-8 |
//!
//! Rules:
//! 1. Every function here is deterministic in the page it is given: replay applies
//!    the same function to the same page state and gets the same bytes (the primary and
//!    the standby's pages never diverge).
//! 2. A page flagged [`PD_ALL_VISIBLE`] has only tuples visible to every transaction;
//!    any insert or delete clears the flag and the page's visibility-map bit.
//! 3. Tuples are addressed by (block, item index), and the address is stable: pruning
//!    marks the removed items' slots unused and compacts only the tuple bytes, so
//!    every other tuple keeps its index (an index entry, a cached catalog row's
//!    address stays right). An insert takes the first unused slot, else a new one.
//!    (With B-tree indexes on a table, a pruned slot must wait for VACUUM to remove
//!    the index entries pointing at it before it is reused: PostgreSQL's LP_DEAD,
//!    then LP_UNUSED. Indexes are not in the catalog yet; see issue 14.)

use crate::codec::{Dec, DecResult, DecodeError};
use strata_page::PageBuf;
pub use strata_types::Numeric;
use strata_types::{Float, Interval, Xid};

/// Page flag: every tuple on the page is visible to all (PostgreSQL's PD_ALL_VISIBLE).
pub const PD_ALL_VISIBLE: u16 = 0x0004;

/// Tuple header bytes (xmin, xmax).
pub const TUPLE_HEADER_BYTES: usize = 8;

/// Largest tuple accepted: it must fit an empty page with its item id.
pub const TUPLE_MAX_BYTES: usize =
    strata_types::BLCKSZ - strata_page::HEADER_BYTES - strata_page::ITEM_ID_BYTES;

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ColType {
    /// `smallint`.
    Int2,
    Int4,
    Int8,
    Text,
    Bool,
    /// `timestamp`: microseconds since 2000-01-01 00:00:00, as PostgreSQL's.
    Timestamp,
    /// `timestamptz`: the same count, in UTC.
    TimestampTz,
    /// `date`: days since 2000-01-01.
    Date,
    /// `uuid`: 16 bytes.
    Uuid,
    /// `bytea`: bytes.
    Bytea,
    /// `real`: 4 bytes.
    Float4,
    /// `double precision`: 8 bytes.
    Float8,
    /// `numeric`: an exact decimal of up to 28 significant digits (16 bytes); a
    /// column's precision and scale are [`Column::numeric`].
    Numeric,
    /// `time` (without time zone): microseconds since midnight.
    Time,
    /// `interval`: months, days, microseconds (16 bytes).
    Interval,
}

impl ColType {
    pub fn name(self) -> &'static str {
        match self {
            ColType::Int2 => "int2",
            ColType::Int4 => "int4",
            ColType::Int8 => "int8",
            ColType::Text => "text",
            ColType::Bool => "bool",
            ColType::Timestamp => "timestamp",
            ColType::TimestampTz => "timestamptz",
            ColType::Date => "date",
            ColType::Uuid => "uuid",
            ColType::Bytea => "bytea",
            ColType::Float4 => "float4",
            ColType::Float8 => "float8",
            ColType::Numeric => "numeric",
            ColType::Time => "time",
            ColType::Interval => "interval",
        }
    }
    pub fn from_name(s: &str) -> Option<ColType> {
        Some(match s {
            "int2" | "smallint" => ColType::Int2,
            "int4" | "int" | "integer" => ColType::Int4,
            "int8" | "bigint" => ColType::Int8,
            "text" | "varchar" => ColType::Text,
            "bool" | "boolean" => ColType::Bool,
            "timestamp" => ColType::Timestamp,
            "timestamptz" => ColType::TimestampTz,
            "date" => ColType::Date,
            "uuid" => ColType::Uuid,
            "bytea" => ColType::Bytea,
            "float4" | "real" => ColType::Float4,
            "float8" | "double precision" => ColType::Float8,
            "numeric" | "decimal" => ColType::Numeric,
            "time" => ColType::Time,
            "interval" => ColType::Interval,
            _ => return None,
        })
    }
    fn code(self) -> u8 {
        match self {
            ColType::Int4 => 1,
            ColType::Int8 => 2,
            ColType::Text => 3,
            ColType::Bool => 4,
            ColType::Timestamp => 5,
            ColType::TimestampTz => 6,
            ColType::Int2 => 7,
            ColType::Date => 8,
            ColType::Uuid => 9,
            // Past '9': the catalog writes the code as one character from '0'.
            ColType::Bytea => 10,
            ColType::Float4 => 11,
            ColType::Float8 => 12,
            ColType::Numeric => 13,
            ColType::Time => 14,
            ColType::Interval => 15,
        }
    }
    pub fn from_code(c: u8) -> Option<ColType> {
        Some(match c {
            1 => ColType::Int4,
            2 => ColType::Int8,
            3 => ColType::Text,
            4 => ColType::Bool,
            5 => ColType::Timestamp,
            6 => ColType::TimestampTz,
            7 => ColType::Int2,
            8 => ColType::Date,
            9 => ColType::Uuid,
            10 => ColType::Bytea,
            11 => ColType::Float4,
            12 => ColType::Float8,
            13 => ColType::Numeric,
            14 => ColType::Time,
            15 => ColType::Interval,
            _ => return None,
        })
    }
    pub fn code_of(self) -> u8 {
        self.code()
    }
}

#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Column {
    pub name: String,
    pub ty: ColType,
    /// NOT NULL: the insert path refuses a NULL (23502).
    pub not_null: bool,
    /// DEFAULT, as SQL text: the SQL layer parses and evaluates it for a column an
    /// INSERT or COPY does not give.
    pub default: Option<String>,
    /// `varchar(n)` / `char(n)`: at most n characters (22001), trailing spaces
    /// beyond n cut as PostgreSQL does.
    pub max_chars: Option<u32>,
    /// `char(n)`: blank-padded to n characters.
    pub padded: bool,
    /// CHECK constraints kept with this column, (name, SQL text): the SQL layer
    /// evaluates them over the whole row (a table's CHECKs sit on its first column).
    pub checks: Vec<(String, String)>,
    /// `numeric(precision, scale)`: values are rounded to the scale and must fit the
    /// precision (22003).
    pub numeric: Option<(u32, u32)>,
    /// An identity column: `Some(true)` GENERATED ALWAYS, `Some(false)` BY DEFAULT;
    /// its values come from [`Column::owned_seq`].
    pub identity: Option<bool>,
    /// The sequence this column owns (`serial`, identity): dropped with the column
    /// or its table (catalog rule 6).
    pub owned_seq: Option<String>,
    /// Column privileges (PostgreSQL's attacl), None if none.
    pub acl: Option<Vec<crate::acl::AclItem>>,
    /// `timestamp(p)`, `timestamptz(p)`, `time(p)`, `interval(p)`: fractional
    /// seconds rounded to p digits (0 ..= 6).
    pub precision: Option<u32>,
}

impl Column {
    pub fn new(name: &str, ty: ColType) -> Column {
        Column {
            name: name.to_string(),
            ty,
            not_null: false,
            default: None,
            max_chars: None,
            padded: false,
            checks: Vec::new(),
            numeric: None,
            identity: None,
            owned_seq: None,
            acl: None,
            precision: None,
        }
    }

    /// The column's type as PostgreSQL names it in errors.
    pub fn type_name(&self) -> String {
        match (self.max_chars, self.padded, self.numeric, self.precision) {
            (Some(n), true, _, _) => format!("character({n})"),
            (Some(n), false, _, _) => format!("character varying({n})"),
            (_, _, Some((p, s)), _) => format!("numeric({p},{s})"),
            (_, _, _, Some(p)) => match self.ty {
                ColType::Timestamp => format!("timestamp({p}) without time zone"),
                ColType::TimestampTz => format!("timestamp({p}) with time zone"),
                ColType::Time => format!("time({p}) without time zone"),
                _ => format!("{}({p})", self.ty.name()),
            },
            _ => self.ty.name().to_string(),
        }
    }

    /// A time value rounded to the column's precision (Some if it changed).
    pub fn fit_time(&self, v: &Datum) -> Option<Datum> {
        let p = self.precision?;
        let out = match v {
            Datum::Timestamp(t) => Datum::Timestamp(round_micros(*t, p)),
            Datum::TimestampTz(t) => Datum::TimestampTz(round_micros(*t, p)),
            Datum::Time(t) => Datum::Time(round_micros(*t, p)),
            Datum::Interval(i) => Datum::Interval(Interval {
                micros: round_micros(i.micros, p),
                ..*i
            }),
            _ => return None,
        };
        (out != *v).then_some(out)
    }

    /// A numeric value made to fit `numeric(p, s)`: rounded to the scale (half away
    /// from zero), then Err((p, s)) if its integral digits exceed p - s.
    pub fn fit_numeric(&self, v: &Numeric) -> std::result::Result<Numeric, String> {
        match self.numeric {
            Some((p, s)) => fit_numeric(v, p, s),
            None => Ok(v.clone()),
        }
    }

    /// A text value made to fit `varchar(n)` / `char(n)`: Ok(None) if it fits as
    /// it is, Ok(Some(fitted)) if cut (only trailing spaces) or padded, Err(type
    /// name) if too long.
    pub fn fit_text(&self, s: &str) -> std::result::Result<Option<String>, String> {
        let Some(n) = self.max_chars.map(|n| n as usize) else {
            return Ok(None);
        };
        let len = s.chars().count();
        if len > n {
            if !s.chars().skip(n).all(|c| c == ' ') {
                return Err(self.type_name());
            }
            return Ok(Some(s.chars().take(n).collect()));
        }
        if self.padded && len < n {
            let mut out = s.to_string();
            out.extend(std::iter::repeat_n(' ', n - len));
            return Ok(Some(out));
        }
        Ok(None)
    }
}

/// Microseconds rounded to `p` fractional digits of a second, half away from zero,
/// as PostgreSQL's AdjustTimestampForTypmod rounds (p at least 6: unchanged).
/// The infinite timestamps (`i64::MIN`, `i64::MAX`) stay as they are.
pub fn round_micros(us: i64, p: u32) -> i64 {
    if p >= 6 || us == i64::MIN || us == i64::MAX {
        return us;
    }
    let scale = 10i64.pow(6 - p);
    let half = scale / 2;
    let r = |x: i64| x.saturating_add(half) / scale * scale;
    if us >= 0 {
        r(us)
    } else {
        -r(us.saturating_neg())
    }
}

/// `v` made to fit `numeric(p, s)`: rounded to the scale (half away from zero), then
/// Err(PostgreSQL's detail) if its integral digits exceed p - s or it is infinite.
/// A column's values and a cast's.
pub fn fit_numeric(v: &Numeric, p: u32, s: u32) -> std::result::Result<Numeric, String> {
    v.fit(p as i32, s as i32)
}

pub use strata_types::Datum;

/// Whether `v` may be stored in a column of type `ty` (NULL fits any).
pub fn type_matches(v: &Datum, ty: ColType) -> bool {
    matches!(
        (v, ty),
        (Datum::Null, _)
            | (Datum::Int2(_), ColType::Int2)
            | (Datum::Int4(_), ColType::Int4)
            | (Datum::Int8(_), ColType::Int8)
            | (Datum::Text(_), ColType::Text)
            | (Datum::Bool(_), ColType::Bool)
            | (Datum::Timestamp(_), ColType::Timestamp)
            | (Datum::TimestampTz(_), ColType::TimestampTz)
            | (Datum::Date(_), ColType::Date)
            | (Datum::Uuid(_), ColType::Uuid)
            | (Datum::Bytea(_), ColType::Bytea)
            | (Datum::Float4(_), ColType::Float4)
            | (Datum::Float8(_), ColType::Float8)
            | (Datum::Numeric(_), ColType::Numeric)
            | (Datum::Time(_), ColType::Time)
            | (Datum::Interval(_), ColType::Interval)
    )
}

/// The top bit of a text or bytea length word: the value is stored out of line and
/// what follows is its TOAST pointer (`toast` module): chunk count u32, then per
/// chunk its TID (block u32, item u16); the word's other bits are the length.
pub const TOASTED: u32 = 0x8000_0000;

/// Encodes a tuple; the caller has checked the values' types against `cols`.
pub fn encode_tuple(xmin: Xid, cols: &[Column], values: &[Datum]) -> Vec<u8> {
    encode_tuple_with(xmin, cols, values, &[])
}

/// [`encode_tuple`], writing `toasted[i]`'s bytes (a length word with [`TOASTED`]
/// and a TOAST pointer) in place of value i where it is `Some`.
pub fn encode_tuple_with(
    xmin: Xid,
    cols: &[Column],
    values: &[Datum],
    toasted: &[Option<Vec<u8>>],
) -> Vec<u8> {
    let mut out = Vec::with_capacity(16 + values.len() * 8);
    encode_tuple_into(xmin, cols, values, toasted, &mut out);
    out
}

/// [`encode_tuple_with`], appending the tuple to `out` (many tuples in one buffer:
/// no allocation per row on a bulk insert's path).
pub fn encode_tuple_into(
    xmin: Xid,
    cols: &[Column],
    values: &[Datum],
    toasted: &[Option<Vec<u8>>],
    out: &mut Vec<u8>,
) {
    debug_assert_eq!(cols.len(), values.len());
    out.extend_from_slice(&xmin.0.to_le_bytes());
    out.extend_from_slice(&0u32.to_le_bytes());
    // The null bitmap, in place (no allocation of its own: a row's encoding is on
    // every insert's path).
    let bitmap_at = out.len();
    out.resize(bitmap_at + values.len().div_ceil(8), 0);
    for (i, v) in values.iter().enumerate() {
        if *v == Datum::Null {
            out[bitmap_at + i / 8] |= 1 << (i % 8);
        }
    }
    for (i, v) in values.iter().enumerate() {
        if let Some(Some(ptr)) = toasted.get(i) {
            out.extend_from_slice(ptr);
            continue;
        }
        match v {
            Datum::Null => {}
            Datum::Int2(x) => out.extend_from_slice(&x.to_le_bytes()),
            Datum::Int4(x) => out.extend_from_slice(&x.to_le_bytes()),
            Datum::Int8(x) => out.extend_from_slice(&x.to_le_bytes()),
            Datum::Bool(x) => out.push(*x as u8),
            Datum::Timestamp(x) | Datum::TimestampTz(x) => out.extend_from_slice(&x.to_le_bytes()),
            Datum::Text(s) => {
                out.extend_from_slice(&(s.len() as u32).to_le_bytes());
                out.extend_from_slice(s.as_bytes());
            }
            Datum::Date(x) => out.extend_from_slice(&x.to_le_bytes()),
            Datum::Uuid(u) => out.extend_from_slice(u),
            Datum::Bytea(b) => {
                out.extend_from_slice(&(b.len() as u32).to_le_bytes());
                out.extend_from_slice(b);
            }
            Datum::Float4(x) => out.extend_from_slice(&(x.get() as f32).to_le_bytes()),
            Datum::Float8(x) => out.extend_from_slice(&x.get().to_le_bytes()),
            Datum::Numeric(x) => {
                let at = out.len();
                out.extend_from_slice(&[0; 4]);
                x.encode(out);
                let len = (out.len() - at - 4) as u32;
                out[at..at + 4].copy_from_slice(&len.to_le_bytes());
            }
            Datum::Time(x) => out.extend_from_slice(&x.to_le_bytes()),
            // Never stored (type_matches refuses it: datum rule 1); kept total.
            Datum::Lsn(l) => out.extend_from_slice(&l.0.to_le_bytes()),
            Datum::Interval(i) => {
                out.extend_from_slice(&i.months.to_le_bytes());
                out.extend_from_slice(&i.days.to_le_bytes());
                out.extend_from_slice(&i.micros.to_le_bytes());
            }
        }
    }
}

/// Decodes a tuple's values by the relation's columns (a relation without stored
/// out-of-line values: the catalogs, a sequence).
pub fn decode_values(cols: &[Column], tuple: &[u8]) -> DecResult<Vec<Datum>> {
    decode_values_with(cols, tuple, &mut |_, _| {
        Err(DecodeError("an out-of-line value where none can be".into()))
    })
}

/// Fetches an out-of-line value's bytes (its length, and its TOAST pointer: the
/// bytes after the length word).
pub type Detoast<'a> = dyn FnMut(usize, &[u8]) -> DecResult<Vec<u8>> + 'a;

/// A text or bytea value's bytes: borrowed from the tuple when inline, or fetched
/// through `detoast`.
fn varlena<'t>(
    d: &mut Dec<'t>,
    detoast: &mut Detoast<'_>,
) -> DecResult<std::borrow::Cow<'t, [u8]>> {
    let word = d.u32()?;
    if word & TOASTED == 0 {
        return Ok(std::borrow::Cow::Borrowed(d.take(word as usize)?));
    }
    let chunks = d.u32()? as usize;
    let mut ptr = Vec::with_capacity(4 + chunks * 6);
    ptr.extend_from_slice(&(chunks as u32).to_le_bytes());
    let n = chunks
        .checked_mul(6)
        .ok_or_else(|| DecodeError("bad TOAST pointer".into()))?;
    ptr.extend_from_slice(d.take(n)?);
    let len = (word & !TOASTED) as usize;
    let bytes = detoast(len, &ptr)?;
    if bytes.len() != len {
        return Err(DecodeError(format!(
            "out-of-line value of {} bytes where {} were stored",
            bytes.len(),
            word & !TOASTED
        )));
    }
    Ok(std::borrow::Cow::Owned(bytes))
}

/// A text value into `slot`, reusing the string `slot` holds (a scan's row buffer:
/// cursor rule 6).
/// `slot` made NULL, with no drop call where it is already.
fn set_null(slot: &mut Datum) {
    if !slot.is_null() {
        *slot = Datum::Null;
    }
}

fn text_into(slot: &mut Datum, bytes: std::borrow::Cow<'_, [u8]>) -> DecResult<()> {
    let bad = || DecodeError("heap tuple: bad UTF-8".into());
    match (slot, bytes) {
        (Datum::Text(s), std::borrow::Cow::Borrowed(b)) => {
            s.clear();
            s.push_str(std::str::from_utf8(b).map_err(|_| bad())?);
        }
        (slot, b) => *slot = Datum::Text(String::from_utf8(b.into_owned()).map_err(|_| bad())?),
    }
    Ok(())
}

/// [`decode_values`], fetching out-of-line values through `detoast`.
pub fn decode_values_with(
    cols: &[Column],
    tuple: &[u8],
    detoast: &mut Detoast<'_>,
) -> DecResult<Vec<Datum>> {
    decode_values_inner(cols, tuple, detoast, false)
}

/// A catalog row's values: columns a row written before they existed are missing
/// from its end and read as NULL (PostgreSQL's missing attributes), so a catalog
/// that gains columns reads the rows of an older cluster. Catalog rows only: a
/// table's rows always have all their columns (ADD COLUMN rewrites the table).
pub fn decode_catalog_values(cols: &[Column], tuple: &[u8]) -> DecResult<Vec<Datum>> {
    decode_values_inner(
        cols,
        tuple,
        &mut |_, _| Err(DecodeError("an out-of-line value in a catalog row".into())),
        true,
    )
}

/// [`decode_values_with`] into `out`, reusing its slots and their strings (a
/// scan's row buffer: cursor rule 6), of the columns `mask` marks only (None: all):
/// the others read as NULL, skipped without copying or fetching their bytes (a scan
/// that needs a few columns of a wide row).
pub fn decode_values_into(
    cols: &[Column],
    tuple: &[u8],
    detoast: &mut Detoast<'_>,
    mask: Option<&[bool]>,
    out: &mut Vec<Datum>,
) -> DecResult<()> {
    decode_columns(cols, tuple, detoast, (false, mask, false), out)
}

/// Decodes the columns `more` marks into `out`, a row [`decode_values_into`] gave
/// with fewer columns; the others are left as they are.
pub fn decode_more_into(
    cols: &[Column],
    tuple: &[u8],
    detoast: &mut Detoast<'_>,
    more: &[bool],
    out: &mut Vec<Datum>,
) -> DecResult<()> {
    decode_columns(cols, tuple, detoast, (false, Some(more), true), out)
}

fn decode_values_inner(
    cols: &[Column],
    tuple: &[u8],
    detoast: &mut Detoast<'_>,
    missing_as_null: bool,
) -> DecResult<Vec<Datum>> {
    let mut out = Vec::with_capacity(cols.len());
    decode_columns(
        cols,
        tuple,
        detoast,
        (missing_as_null, None, false),
        &mut out,
    )?;
    Ok(out)
}

/// Steps over one stored value of type `ty` (a TOAST pointer, not its chunks).
fn skip_value(d: &mut Dec<'_>, ty: ColType) -> DecResult<()> {
    let n = match ty {
        ColType::Bool => 1,
        ColType::Int2 => 2,
        ColType::Int4 | ColType::Date | ColType::Float4 => 4,
        ColType::Int8
        | ColType::Timestamp
        | ColType::TimestampTz
        | ColType::Float8
        | ColType::Time => 8,
        ColType::Uuid | ColType::Interval => 16,
        ColType::Text | ColType::Bytea | ColType::Numeric => {
            let word = d.u32()?;
            if word & TOASTED == 0 {
                word as usize
            } else {
                (d.u32()? as usize)
                    .checked_mul(6)
                    .ok_or_else(|| DecodeError("bad TOAST pointer".into()))?
            }
        }
    };
    d.take(n)?;
    Ok(())
}

fn decode_columns(
    cols: &[Column],
    tuple: &[u8],
    detoast: &mut Detoast<'_>,
    (missing_as_null, mask, keep): (bool, Option<&[bool]>, bool),
    out: &mut Vec<Datum>,
) -> DecResult<()> {
    let mut d = Dec::new(tuple, "heap tuple");
    d.take(TUPLE_HEADER_BYTES)?;
    let nb = cols.len().div_ceil(8);
    d.take(nb)?;
    // Checked by the take above; borrowed from the tuple, not copied per row.
    let bitmap = &tuple[TUPLE_HEADER_BYTES..TUPLE_HEADER_BYTES + nb];
    out.truncate(cols.len());
    out.resize(cols.len(), Datum::Null);
    // Past the last column the mask marks, nothing is read: the row's end is
    // neither stepped over nor checked.
    let upto = match mask {
        Some(m) if m.len() >= cols.len() => m[..cols.len()]
            .iter()
            .rposition(|&b| b)
            .map_or(0, |i| i + 1),
        _ => cols.len(),
    };
    if upto < cols.len() && !keep {
        // A slot already NULL is left alone: no drop call per column per row.
        for slot in out[upto..].iter_mut().filter(|s| !s.is_null()) {
            *slot = Datum::Null;
        }
    }
    for ((i, c), slot) in cols[..upto].iter().enumerate().zip(out.iter_mut()) {
        if bitmap[i / 8] & (1 << (i % 8)) != 0 || (missing_as_null && d.remaining() == 0) {
            set_null(slot);
            continue;
        }
        if mask.is_some_and(|m| !m.get(i).copied().unwrap_or(true)) {
            skip_value(&mut d, c.ty)?;
            if !keep {
                set_null(slot);
            }
            continue;
        }
        *slot = match c.ty {
            ColType::Int2 => Datum::Int2(d.u16()? as i16),
            ColType::Int4 => Datum::Int4(d.u32()? as i32),
            ColType::Int8 => Datum::Int8(d.u64()? as i64),
            ColType::Bool => Datum::Bool(d.u8()? != 0),
            ColType::Timestamp => Datum::Timestamp(d.u64()? as i64),
            ColType::TimestampTz => Datum::TimestampTz(d.u64()? as i64),
            ColType::Text => {
                text_into(slot, varlena(&mut d, detoast)?)?;
                continue;
            }
            ColType::Date => Datum::Date(d.u32()? as i32),
            ColType::Uuid => Datum::Uuid(d.take(16)?.try_into().expect("16 bytes")),
            ColType::Bytea => Datum::Bytea(varlena(&mut d, detoast)?.into_owned()),
            ColType::Float4 => Datum::Float4(Float::new(f32::from_bits(d.u32()?) as f64)),
            ColType::Float8 => Datum::Float8(Float::new(f64::from_bits(d.u64()?))),
            ColType::Numeric => Datum::Numeric(
                Numeric::decode(&varlena(&mut d, detoast)?)
                    .ok_or_else(|| DecodeError("bad numeric value".into()))?,
            ),
            ColType::Time => Datum::Time(d.u64()? as i64),
            ColType::Interval => Datum::Interval(Interval {
                months: d.u32()? as i32,
                days: d.u32()? as i32,
                micros: d.u64()? as i64,
            }),
        };
    }
    if upto < cols.len() {
        return Ok(());
    }
    d.finish()
}

pub fn tuple_xmin(t: &[u8]) -> Xid {
    Xid(u32::from_le_bytes(t[0..4].try_into().expect("4 bytes")))
}

pub fn tuple_xmax(t: &[u8]) -> Xid {
    Xid(u32::from_le_bytes(t[4..8].try_into().expect("4 bytes")))
}

fn check_tuple(t: &[u8]) -> DecResult<()> {
    if t.len() < TUPLE_HEADER_BYTES {
        return Err(DecodeError(format!("heap tuple of {} bytes", t.len())));
    }
    Ok(())
}

/// The live tuples of a page: (item index, bytes). Items that are too short to be
/// tuples are an error (corruption), not a panic.
pub fn page_tuples(p: &PageBuf) -> DecResult<Vec<(u16, &[u8])>> {
    let n = strata_page::item_count(p);
    let mut out = Vec::with_capacity(n);
    for i in 0..n {
        if let Some(t) = strata_page::item(p, i) {
            check_tuple(t)?;
            out.push((i as u16, t));
        }
    }
    Ok(out)
}

/// Adds a tuple (rule 2: clears the all-visible flag). Returns its item index and
/// whether the flag was set, or `None` if it does not fit.
pub fn page_insert(p: &mut PageBuf, tuple: &[u8]) -> Option<(u16, bool)> {
    let idx = strata_page::add_item_reusing(p, tuple)?;
    Some((idx as u16, clear_all_visible(p)))
}

fn clear_all_visible(p: &mut PageBuf) -> bool {
    let flags = strata_page::flags(p);
    strata_page::set_flags(p, flags & !PD_ALL_VISIBLE);
    flags & PD_ALL_VISIBLE != 0
}

/// Sets `xmax` on each item (rule 2). Returns whether the all-visible flag was set.
pub fn page_delete(p: &mut PageBuf, offsets: &[u16], xmax: Xid) -> Result<bool, DecodeError> {
    for &o in offsets {
        let t = strata_page::item_mut(p, o as usize)
            .ok_or_else(|| DecodeError(format!("delete of missing item {o}")))?;
        check_tuple(t)?;
        t[4..8].copy_from_slice(&xmax.0.to_le_bytes());
    }
    Ok(clear_all_visible(p))
}

/// Removes the items `removed` (their slots become unused) and compacts the page's
/// tuple bytes: every other tuple keeps its index (rule 3). Sets or clears the
/// all-visible flag.
pub fn page_prune(p: &mut PageBuf, removed: &[u16], all_visible: bool) {
    let n = strata_page::item_count(p);
    for &r in removed {
        if (r as usize) < n {
            strata_page::set_unused(p, r as usize);
        }
    }
    strata_page::compact(p);
    let flags = strata_page::flags(p);
    let flags = if all_visible {
        flags | PD_ALL_VISIBLE
    } else {
        flags & !PD_ALL_VISIBLE
    };
    strata_page::set_flags(p, flags);
}

#[cfg(test)]
mod tests {
    use super::*;
    use strata_types::BLCKSZ;

    #[test]
    fn tuples_round_trip_with_nulls() {
        let cols = vec![
            Column::new("a", ColType::Int4),
            Column::new("b", ColType::Text),
            Column::new("c", ColType::Int8),
            Column::new("d", ColType::Bool),
        ];
        let vals = vec![
            Datum::Int4(-7),
            Datum::Null,
            Datum::Int8(1 << 40),
            Datum::Bool(true),
        ];
        let t = encode_tuple(Xid(42), &cols, &vals);
        assert_eq!(tuple_xmin(&t), Xid(42));
        assert_eq!(tuple_xmax(&t), Xid(0));
        assert_eq!(decode_values(&cols, &t).unwrap(), vals);
        assert!(decode_values(&cols, &t[..t.len() - 1]).is_err());
    }

    #[test]
    fn prune_keeps_every_other_tuple_where_it_was() {
        let mut p = [0u8; BLCKSZ];
        strata_page::init(&mut p, 0);
        let cols = vec![Column::new("a", ColType::Int4)];
        for i in 0..10 {
            page_insert(&mut p, &encode_tuple(Xid(3), &cols, &[Datum::Int4(i)])).unwrap();
        }
        let before = strata_page::free_space(&p);
        page_prune(&mut p, &[0, 3, 9], true);
        let left: Vec<Datum> = page_tuples(&p)
            .unwrap()
            .iter()
            .map(|(_, t)| decode_values(&cols, t).unwrap()[0].clone())
            .collect();
        assert_eq!(left, [1, 2, 4, 5, 6, 7, 8].map(Datum::Int4).to_vec());
        let at: Vec<u16> = page_tuples(&p).unwrap().iter().map(|(i, _)| *i).collect();
        assert_eq!(at, [1, 2, 4, 5, 6, 7, 8], "rule 3: addresses are stable");
        assert!(strata_page::free_space(&p) > before);
        assert_ne!(strata_page::flags(&p) & PD_ALL_VISIBLE, 0);
        let (at, was) =
            page_insert(&mut p, &encode_tuple(Xid(4), &cols, &[Datum::Int4(0)])).unwrap();
        assert_eq!(at, 0, "the first unused slot");
        assert!(was, "insert clears the all-visible flag (rule 2)");
        assert_eq!(strata_page::flags(&p) & PD_ALL_VISIBLE, 0);
    }
}
