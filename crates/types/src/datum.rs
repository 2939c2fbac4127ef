//! [`Datum`]: one SQL value, the one type the engine stores and the SQL layer
//! computes on (no per-row conversion between layers).
//!
//! Rules:
//! 1. A variant per SQL type the engine can store, plus `Lsn` (`pg_lsn`), which
//!    only the SQL layer makes: the engine refuses to store it (no column has that
//!    type), so a value of it is cast to its column's type first.
//! 2. The derived order is the storage order the engine keys on only within one
//!    variant; SQL comparison across types lives in the SQL layer.

use crate::Numeric;
use crate::{Float, Interval, Lsn};

/// A SQL value.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Datum {
    Null,
    Int2(i16),
    Int4(i32),
    Int8(i64),
    Text(String),
    Bool(bool),
    /// `timestamp`: microseconds since 2000-01-01.
    Timestamp(i64),
    /// `timestamptz`: microseconds since 2000-01-01 UTC.
    TimestampTz(i64),
    /// `date`: days since 2000-01-01.
    Date(i32),
    Uuid([u8; 16]),
    Bytea(Vec<u8>),
    Float4(Float),
    Float8(Float),
    Numeric(Numeric),
    /// `time`: microseconds since midnight.
    Time(i64),
    Interval(Interval),
    /// `pg_lsn` (rule 1).
    Lsn(Lsn),
}

impl Datum {
    pub fn is_null(&self) -> bool {
        matches!(self, Datum::Null)
    }

    /// The bytes of a bytea (empty for any other value).
    pub fn into_bytea(self) -> Vec<u8> {
        match self {
            Datum::Bytea(b) => b,
            _ => Vec::new(),
        }
    }

    /// About the bytes of the value's text form, without making it: a value's text
    /// is checked against the allocation limit before it is built.
    pub fn text_bytes(&self) -> usize {
        match self {
            Datum::Text(s) => s.len(),
            Datum::Bytea(b) => 2 + 2 * b.len(),
            Datum::Null => 0,
            // Every other type's text is short.
            _ => 64,
        }
    }
}

/// A debugging form (the SQL layer formats values as PostgreSQL does).
impl std::fmt::Display for Datum {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Datum::Null => Ok(()),
            Datum::Int2(v) => write!(f, "{v}"),
            Datum::Int4(v) => write!(f, "{v}"),
            Datum::Int8(v) => write!(f, "{v}"),
            Datum::Text(v) => f.write_str(v),
            Datum::Bool(v) => f.write_str(if *v { "t" } else { "f" }),
            Datum::Timestamp(v) | Datum::TimestampTz(v) => write!(f, "{v}"),
            Datum::Date(v) => write!(f, "{v}"),
            Datum::Uuid(v) => write!(f, "{v:02x?}"),
            Datum::Bytea(v) => write!(f, "{v:02x?}"),
            Datum::Float4(v) | Datum::Float8(v) => write!(f, "{}", v.get()),
            Datum::Numeric(v) => write!(f, "{v}"),
            Datum::Time(v) => write!(f, "{v}"),
            Datum::Interval(v) => write!(f, "{v:?}"),
            Datum::Lsn(v) => write!(f, "{v}"),
        }
    }
}
