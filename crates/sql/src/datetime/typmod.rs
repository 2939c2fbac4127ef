//! The interval type's typmod: a field range (`YEAR TO MONTH`, `DAY TO
//! SECOND`, ...) and a fractional-seconds precision, from PostgreSQL 15's
//! timestamp.c (intervaltypmodin, intervaltypmodout, AdjustIntervalForTypmod,
//! interval_in with a typmod).

use super::tables::{DTK_DAY, DTK_HOUR, DTK_MINUTE, DTK_MONTH, DTK_SECOND, DTK_YEAR};
use super::Settings;
use crate::{SqlError, SqlResult};
use strata_types::Interval;

/// MAX_INTERVAL_PRECISION.
pub const MAX_INTERVAL_PRECISION: u32 = 6;
/// INTERVAL_FULL_PRECISION: a typmod's precision bits when none is given.
const INTERVAL_FULL_PRECISION: i32 = 0xFFFF;
/// INTERVAL_FULL_RANGE: a typmod's range bits when no fields are given.
const INTERVAL_FULL_RANGE: i32 = 0x7FFF;

const USECS_PER_HOUR: i64 = 3_600_000_000;
const USECS_PER_MINUTE: i64 = 60_000_000;

/// An interval typmod's field range: which fields `INTERVAL <fields>` keeps
/// (PostgreSQL's INTERVAL_RANGE, a bitmask of INTERVAL_MASK(field)s, as the
/// combinations its grammar allows).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum IntervalRange {
    /// No fields given (INTERVAL_FULL_RANGE).
    Full,
    Year,
    Month,
    Day,
    Hour,
    Minute,
    Second,
    YearToMonth,
    DayToHour,
    DayToMinute,
    DayToSecond,
    HourToMinute,
    HourToSecond,
    MinuteToSecond,
}

/// The datetime.h field numbers whose INTERVAL_MASK bits make a range.
const MONTH: i32 = 1;
const YEAR: i32 = 2;
const DAY: i32 = 3;
const HOUR: i32 = 10;
const MINUTE: i32 = 11;
const SECOND: i32 = 12;

/// INTERVAL_MASK.
const fn mask(field: i32) -> i32 {
    1 << field
}

/// Every range, with its INTERVAL_MASK bits and its intervaltypmodout text.
const RANGES: [(IntervalRange, i32, &str); 14] = [
    (IntervalRange::Full, INTERVAL_FULL_RANGE, ""),
    (IntervalRange::Year, mask(YEAR), " year"),
    (IntervalRange::Month, mask(MONTH), " month"),
    (IntervalRange::Day, mask(DAY), " day"),
    (IntervalRange::Hour, mask(HOUR), " hour"),
    (IntervalRange::Minute, mask(MINUTE), " minute"),
    (IntervalRange::Second, mask(SECOND), " second"),
    (
        IntervalRange::YearToMonth,
        mask(YEAR) | mask(MONTH),
        " year to month",
    ),
    (
        IntervalRange::DayToHour,
        mask(DAY) | mask(HOUR),
        " day to hour",
    ),
    (
        IntervalRange::DayToMinute,
        mask(DAY) | mask(HOUR) | mask(MINUTE),
        " day to minute",
    ),
    (
        IntervalRange::DayToSecond,
        mask(DAY) | mask(HOUR) | mask(MINUTE) | mask(SECOND),
        " day to second",
    ),
    (
        IntervalRange::HourToMinute,
        mask(HOUR) | mask(MINUTE),
        " hour to minute",
    ),
    (
        IntervalRange::HourToSecond,
        mask(HOUR) | mask(MINUTE) | mask(SECOND),
        " hour to second",
    ),
    (
        IntervalRange::MinuteToSecond,
        mask(MINUTE) | mask(SECOND),
        " minute to second",
    ),
];

impl IntervalRange {
    /// The range's INTERVAL_MASK bits (INTERVAL_RANGE of a typmod).
    pub fn mask(self) -> i32 {
        RANGES.iter().find(|r| r.0 == self).map_or(0, |r| r.1)
    }

    /// The range with INTERVAL_MASK bits `bits`, if PostgreSQL allows it.
    pub fn from_mask(bits: i32) -> Option<IntervalRange> {
        RANGES.iter().find(|r| r.1 == bits).map(|r| r.0)
    }

    /// The range's text in intervaltypmodout (" day to second"; "" if full).
    pub fn text(self) -> &'static str {
        RANGES.iter().find(|r| r.0 == self).map_or("", |r| r.2)
    }

    /// DecodeInterval's "use typmod to decide what rightmost field is": the
    /// unit of a number given without one as the interval's last field.
    pub(crate) fn rightmost_unit(self) -> i32 {
        use IntervalRange::*;
        match self {
            Year => DTK_YEAR,
            Month | YearToMonth => DTK_MONTH,
            Day => DTK_DAY,
            Hour | DayToHour => DTK_HOUR,
            Minute | HourToMinute | DayToMinute => DTK_MINUTE,
            Second | MinuteToSecond | HourToSecond | DayToSecond | Full => DTK_SECOND,
        }
    }

    /// Whether the range ends with SECOND (only then may a precision follow
    /// the fields in PostgreSQL's grammar).
    fn ends_in_second(self) -> bool {
        use IntervalRange::*;
        matches!(
            self,
            Second | MinuteToSecond | HourToSecond | DayToSecond | Full
        )
    }
}

/// An interval column's or cast's type modifier: the field range and the
/// fractional-seconds precision (PostgreSQL's interval typmod,
/// INTERVAL_TYPMOD(precision, range)).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct IntervalTypmod {
    pub range: IntervalRange,
    /// 0..=6, or None for full precision.
    pub precision: Option<u32>,
}

/// A syntax error "at or near" a token, as PostgreSQL's grammar gives for a
/// field combination it has no rule for.
fn syntax_error(near: &str) -> SqlError {
    SqlError::new("42601", format!("syntax error at or near \"{near}\""))
}

impl IntervalTypmod {
    /// No typmod (-1): the full range and precision.
    pub const NONE: IntervalTypmod = IntervalTypmod {
        range: IntervalRange::Full,
        precision: None,
    };

    /// The typmod of `INTERVAL [leading [TO last]] [(precision)]` (gram.y's
    /// opt_interval / interval_second, then intervaltypmodin). Field names are
    /// YEAR, MONTH, DAY, HOUR, MINUTE, SECOND in any case; `INTERVAL(p)` is
    /// (None, None, Some(p)) and `SECOND(p)` is (Some("SECOND"), None,
    /// Some(p)). A precision above 6 is reduced to 6 (PostgreSQL's WARNING
    /// "INTERVAL(7) precision reduced to maximum allowed, 6"); a combination
    /// the grammar has no rule for is a syntax error (42601).
    pub fn from_fields(
        leading: Option<&str>,
        last: Option<&str>,
        precision: Option<u64>,
    ) -> SqlResult<IntervalTypmod> {
        use IntervalRange::*;
        let field = |s: &str| s.to_ascii_uppercase();
        let range = match (leading.map(field), last.map(field)) {
            (None, None) => Full,
            (None, Some(_)) => return Err(syntax_error(last.unwrap_or(""))),
            (Some(l), None) => match l.as_str() {
                "YEAR" => Year,
                "MONTH" => Month,
                "DAY" => Day,
                "HOUR" => Hour,
                "MINUTE" => Minute,
                "SECOND" => Second,
                _ => return Err(syntax_error(leading.unwrap_or(""))),
            },
            // The grammar has no `MONTH TO` or `SECOND TO`.
            (Some(l), Some(_)) if matches!(l.as_str(), "MONTH" | "SECOND") => {
                return Err(syntax_error("to"))
            }
            (Some(l), Some(t)) => match (l.as_str(), t.as_str()) {
                ("YEAR", "MONTH") => YearToMonth,
                ("DAY", "HOUR") => DayToHour,
                ("DAY", "MINUTE") => DayToMinute,
                ("DAY", "SECOND") => DayToSecond,
                ("HOUR", "MINUTE") => HourToMinute,
                ("HOUR", "SECOND") => HourToSecond,
                ("MINUTE", "SECOND") => MinuteToSecond,
                _ => return Err(syntax_error(last.unwrap_or(""))),
            },
        };
        if precision.is_some() && !range.ends_in_second() {
            return Err(syntax_error("("));
        }
        let precision = precision.map(|p| p.min(u64::from(MAX_INTERVAL_PRECISION)) as u32);
        Ok(IntervalTypmod { range, precision })
    }

    /// The typmod as PostgreSQL stores it (atttypmod): -1 for none, else
    /// INTERVAL_TYPMOD(precision, range).
    pub fn typmod(&self) -> i32 {
        if *self == IntervalTypmod::NONE {
            return -1;
        }
        let p = self.precision.map_or(INTERVAL_FULL_PRECISION, |p| p as i32);
        ((self.range.mask() << 16) | (p & 0xFFFF)) & 0x7FFF_FFFF
    }

    /// A stored typmod (atttypmod) back as ranges and precision; -1 (or any
    /// negative) is none, an invalid one None.
    pub fn from_typmod(typmod: i32) -> Option<IntervalTypmod> {
        if typmod < 0 {
            return Some(IntervalTypmod::NONE);
        }
        let range = IntervalRange::from_mask((typmod >> 16) & 0x7FFF)?;
        let precision = match typmod & 0xFFFF {
            INTERVAL_FULL_PRECISION => None,
            p if p as u32 <= MAX_INTERVAL_PRECISION => Some(p as u32),
            _ => return None,
        };
        Some(IntervalTypmod { range, precision })
    }

    /// intervaltypmodout: the typmod as format_type shows it after
    /// "interval" (" day to second(2)", "(3)", "").
    pub fn text(&self) -> String {
        let fields = self.range.text();
        match self.precision {
            Some(p) => format!("{fields}({p})"),
            None => fields.to_string(),
        }
    }
}

/// interval_in with a typmod: DecodeInterval with the typmod's range (else
/// DecodeISO8601Interval), then AdjustIntervalForTypmod.
pub fn parse_interval_typmod(s: &str, st: &Settings, tm: &IntervalTypmod) -> SqlResult<Interval> {
    let iv = super::interval::interval_in_range(s, st, tm.range)?;
    Ok(adjust_interval(iv, tm))
}

/// AdjustIntervalForTypmod: fields to the right of the range's last one are
/// zeroed (truncated toward zero), and the seconds rounded (half away from
/// zero) to the precision. What a cast to `interval <typmod>`, or storing into
/// such a column, does.
pub fn adjust_interval(iv: Interval, tm: &IntervalTypmod) -> Interval {
    use IntervalRange::*;
    let mut iv = iv;
    match tm.range {
        Year => {
            iv.months = iv.months / 12 * 12;
            iv.days = 0;
            iv.micros = 0;
        }
        Month | YearToMonth => {
            iv.days = 0;
            iv.micros = 0;
        }
        Day => iv.micros = 0,
        Hour | DayToHour => iv.micros = iv.micros / USECS_PER_HOUR * USECS_PER_HOUR,
        Minute | DayToMinute | HourToMinute => {
            iv.micros = iv.micros / USECS_PER_MINUTE * USECS_PER_MINUTE
        }
        Full | Second | DayToSecond | HourToSecond | MinuteToSecond => {}
    }
    if let Some(p) = tm.precision {
        let p = p.min(MAX_INTERVAL_PRECISION);
        let scale = 10i64.pow(MAX_INTERVAL_PRECISION - p);
        let offset = scale / 2;
        // PostgreSQL 15 checks no overflow here, and is built with -fwrapv:
        // within a half-unit of the limits the time wraps, as there.
        let round = |t: i64| t.wrapping_add(offset) / scale * scale;
        iv.micros = if iv.micros >= 0 {
            round(iv.micros)
        } else {
            round(iv.micros.wrapping_neg()).wrapping_neg()
        };
    }
    iv
}
