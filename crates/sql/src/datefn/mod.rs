//! PostgreSQL 15's date/time functions and operators, as pure functions on
//! PostgreSQL's representations (a date is days since 2000-01-01, a timestamp
//! microseconds since 2000-01-01 00:00:00, UTC for timestamptz; a time
//! microseconds since midnight; an interval months, days and microseconds),
//! ported from timestamp.c, date.c and datetime.c.
//!
//! This module owns: the operators of dates, times, timestamps and intervals
//! ([`arith`]: `timestamp + interval`, `timestamp - timestamp`, `interval * float8`,
//! ...), the casts between those types that depend on the session's zone,
//! `date_part` / `extract` and `date_trunc` ([`part`]), and age, justify_*,
//! isfinite, make_*, to_timestamp(float8), date_bin, timezone (AT TIME ZONE) and
//! overlaps ([`misc`]). It supersedes [`crate::extract`] (which knows neither
//! the session zone, nor time, nor interval).
//!
//! Rules (cited as "datefn rule N"):
//! 1. Results, SQLSTATEs and messages are PostgreSQL 15's (15.18 checked),
//!    including where PostgreSQL 15 lets C arithmetic wrap instead of raising
//!    an error (`timestamp - timestamp` beyond int64, make_interval's fields,
//!    `AT TIME ZONE interval` beyond int32 seconds) and C's conversion of a
//!    double out of an integer's range to its minimum (x86's cvttsd2si).
//! 2. A timestamptz is taken apart in the session zone ([`Settings::zone`]),
//!    or the zone given; a local time is made a timestamptz again with
//!    DetermineTimeZoneOffset ([`crate::datetime::Zone::local_to_west`]): in a
//!    spring-forward gap the offset before the change, in a fall-back fold the
//!    one after. So `timestamptz + interval` adds months and days in local time,
//!    then the microseconds.
//! 3. Infinite values stay infinite where PostgreSQL 15 keeps them (`infinity +
//!    interval`, date_trunc, casts), and are errors where it refuses them
//!    (`timestamp - timestamp`, `date - date`, age). PostgreSQL 15 has no
//!    infinite interval.
//! 4. Units of date_part, extract and date_trunc are read as PostgreSQL's
//!    DecodeUnits then DecodeSpecial: lower-cased, compared on their first 10
//!    characters; an unknown unit is 22023 "unit \"x\" not recognized for type
//!    T", a known one the type lacks 0A000 "unit \"x\" not supported for type T".
//!    EXTRACT gives numeric (seconds with scale 6, milliseconds 3, epoch 6 but
//!    for a date), date_part double precision; date_part of a date is the
//!    date_part of its midnight timestamp, as PostgreSQL's SQL-language
//!    date_part(text, date).
//! 5. Zone names (timezone(), date_trunc's zone, make_timestamptz's zone) are
//!    looked up as PostgreSQL 15: an abbreviation of the Default set (fixed, or
//!    dynamic: the abbreviation's offset in its zone at that time), else a zone
//!    of the IANA database or a POSIX TZ string; else 22023 "time zone \"x\" not
//!    recognized". make_timestamptz first tries a numeric zone ("+05:30").
//! 6. Functions are strict except overlaps, which sees NULLs as the SQL standard
//!    says ([`DateFn::strict`]); those that read the session's zone or clock
//!    (PostgreSQL's stable ones: the `...Tz` variants, age(x),
//!    make_timestamptz) are not immutable ([`DateFn::immutable`]).
//! 7. Overloads resolve as PostgreSQL's: a date or untyped argument where a
//!    timestamp is wanted becomes timestamptz (the preferred type), but
//!    `f(timestamp, date)` takes timestamp (more exact matches); where
//!    PostgreSQL finds a call ambiguous (`date_trunc(text, unknown)`,
//!    `date_part(text, unknown)`) [`signature`] gives `None`.
//!
//! Tests: `tests.rs` runs the cases of `cases.tsv` (zone, operator, cast or
//! function, typed arguments, PostgreSQL 15.18's text result or
//! `ERROR:sqlstate:message`), comparing through [`crate::datetime`]'s output
//! in DateStyle ISO.

pub mod arith;
pub mod misc;
pub mod part;
#[cfg(test)]
mod tests;

use crate::bind::Func;
use crate::datetime::decode::{date2j, j2date, timestamp2tm, POSTGRES_EPOCH_JDATE};
use crate::datetime::{Settings, Tm, Zone, USECS_PER_DAY, USECS_PER_SEC};
use crate::{Datum, SqlError, SqlResult, SqlType};
use strata_types::Interval;

pub use arith::*;

/// A date/time function (see the module's rules); evaluated by [`eval`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DateFn {
    /// date_part(text, x): double precision.
    DatePart,
    /// date_part(text, timestamptz), in the session zone.
    DatePartTz,
    /// extract(text, x) (EXTRACT(field FROM x)): numeric.
    Extract,
    /// extract(text, timestamptz), in the session zone.
    ExtractTz,
    /// date_trunc(text, timestamp | interval).
    DateTrunc,
    /// date_trunc(text, timestamptz), in the session zone.
    DateTruncTz,
    /// date_trunc(text, timestamptz, zone).
    DateTruncZone,
    /// age(timestamp, timestamp).
    Age,
    /// age(timestamptz, timestamptz), in the session zone.
    AgeTz,
    /// age(x): age(current_date, x).
    AgeNow,
    JustifyDays,
    JustifyHours,
    JustifyInterval,
    IsFinite,
    MakeDate,
    MakeTime,
    MakeTimestamp,
    MakeTimestampTz,
    MakeInterval,
    /// to_timestamp(double precision).
    ToTimestamp,
    DateBin,
    /// timezone(zone, x): AT TIME ZONE.
    Timezone,
    /// (a, b) OVERLAPS (c, d); b and d may be intervals.
    Overlaps,
    /// to_char(timestamp | timestamptz | interval, text) ([`crate::dtfmt`]).
    ToChar,
    /// to_timestamp(text, text) ([`crate::dtfmt`]).
    ToTimestampFmt,
    /// to_date(text, text) ([`crate::dtfmt`]).
    ToDate,
}

impl DateFn {
    /// Rule 6: overlaps sees NULLs.
    pub fn strict(self) -> bool {
        self != DateFn::Overlaps
    }

    /// The function's name in SQL.
    pub fn name(self) -> &'static str {
        use DateFn as D;
        match self {
            D::DatePart | D::DatePartTz => "date_part",
            D::Extract | D::ExtractTz => "extract",
            D::DateTrunc | D::DateTruncTz | D::DateTruncZone => "date_trunc",
            D::Age | D::AgeTz | D::AgeNow => "age",
            D::JustifyDays => "justify_days",
            D::JustifyHours => "justify_hours",
            D::JustifyInterval => "justify_interval",
            D::IsFinite => "isfinite",
            D::MakeDate => "make_date",
            D::MakeTime => "make_time",
            D::MakeTimestamp => "make_timestamp",
            D::MakeTimestampTz => "make_timestamptz",
            D::MakeInterval => "make_interval",
            D::ToTimestamp => "to_timestamp",
            D::DateBin => "date_bin",
            D::Timezone => "timezone",
            D::Overlaps => "overlaps",
            D::ToChar => "to_char",
            D::ToTimestampFmt => "to_timestamp",
            D::ToDate => "to_date",
        }
    }

    /// Rule 6: false for what depends on the session's zone or clock
    /// (PostgreSQL's stable ones).
    pub fn immutable(self) -> bool {
        use DateFn as D;
        !matches!(
            self,
            D::DatePartTz
                | D::ExtractTz
                | D::DateTruncTz
                | D::AgeTz
                | D::AgeNow
                | D::MakeTimestampTz
                | D::ToChar
                | D::ToTimestampFmt
        )
    }
}

type Sig = (Func, &'static [SqlType], SqlType);

const T: SqlType = SqlType::Text;
const I4: SqlType = SqlType::Int4;
const F8: SqlType = SqlType::Float8;
const D: SqlType = SqlType::Date;
const TS: SqlType = SqlType::Timestamp;
const TZ: SqlType = SqlType::TimestampTz;
const TM: SqlType = SqlType::Time;
const IV: SqlType = SqlType::Interval;

/// A timestamp-like parameter for an argument: timestamp stays, anything else
/// (date, an untyped literal) becomes timestamptz, PostgreSQL's preferred type
/// of the category.
fn ts_like(t: SqlType) -> Option<SqlType> {
    match t {
        TS => Some(TS),
        TZ | D | SqlType::Unknown => Some(TZ),
        _ => None,
    }
}

/// The one timestamp type for several arguments, as PostgreSQL resolves
/// `f(timestamp, timestamp)` against `f(timestamptz, timestamptz)`: the one
/// with more exact matches, timestamptz (the preferred type) on a tie.
fn ts_pair(args: &[SqlType]) -> Option<SqlType> {
    for t in args {
        ts_like(*t)?;
    }
    let count = |x: SqlType| args.iter().filter(|t| **t == x).count();
    Some(if count(TS) > count(TZ) { TS } else { TZ })
}

/// The function `name` for arguments of types `args`, or `None` if `name` is
/// none of these.
pub fn signature(name: &str, args: &[SqlType]) -> Option<Sig> {
    let s = |f: DateFn, ps: &'static [SqlType], ret: SqlType| Some((Func::Date(f, ret), ps, ret));
    match (name, args.len()) {
        ("date_part" | "extract", 2) => {
            let (f, ret) = match (name, args[1]) {
                ("extract", TZ) => (DateFn::ExtractTz, SqlType::Numeric),
                ("extract", _) => (DateFn::Extract, SqlType::Numeric),
                (_, TZ) => (DateFn::DatePartTz, F8),
                _ => (DateFn::DatePart, F8),
            };
            let ps: &'static [SqlType] = match args[1] {
                D => &[T, D],
                TS => &[T, TS],
                TZ => &[T, TZ],
                TM => &[T, TM],
                IV => &[T, IV],
                _ => return None,
            };
            s(f, ps, ret)
        }
        ("date_trunc", 2) => match args[1] {
            IV => s(DateFn::DateTrunc, &[T, IV], IV),
            // date_trunc(text, unknown) is ambiguous in PostgreSQL.
            SqlType::Unknown => None,
            t => match ts_like(t)? {
                TS => s(DateFn::DateTrunc, &[T, TS], TS),
                _ => s(DateFn::DateTruncTz, &[T, TZ], TZ),
            },
        },
        ("date_trunc", 3) => s(DateFn::DateTruncZone, &[T, TZ, T], TZ),
        ("age", 1) => match ts_like(args[0])? {
            TS => s(DateFn::AgeNow, &[TS], IV),
            _ => s(DateFn::AgeNow, &[TZ], IV),
        },
        ("age", 2) => match ts_pair(args)? {
            TS => s(DateFn::Age, &[TS, TS], IV),
            _ => s(DateFn::AgeTz, &[TZ, TZ], IV),
        },
        ("justify_days", 1) => s(DateFn::JustifyDays, &[IV], IV),
        ("justify_hours", 1) => s(DateFn::JustifyHours, &[IV], IV),
        ("justify_interval", 1) => s(DateFn::JustifyInterval, &[IV], IV),
        ("isfinite", 1) => {
            let ps: &'static [SqlType] = match args[0] {
                D => &[D],
                TS => &[TS],
                TZ => &[TZ],
                IV => &[IV],
                _ => return None,
            };
            s(DateFn::IsFinite, ps, SqlType::Bool)
        }
        ("make_date", 3) => s(DateFn::MakeDate, &[I4, I4, I4], D),
        ("make_time", 3) => s(DateFn::MakeTime, &[I4, I4, F8], TM),
        ("make_timestamp", 6) => s(DateFn::MakeTimestamp, &[I4, I4, I4, I4, I4, F8], TS),
        ("make_timestamptz", 6) => s(DateFn::MakeTimestampTz, &[I4, I4, I4, I4, I4, F8], TZ),
        ("make_timestamptz", 7) => s(DateFn::MakeTimestampTz, &[I4, I4, I4, I4, I4, F8, T], TZ),
        ("make_interval", n @ 0..=7) => {
            const PS: [SqlType; 7] = [I4, I4, I4, I4, I4, I4, F8];
            s(DateFn::MakeInterval, &PS[..n], IV)
        }
        ("to_timestamp", 1) => s(DateFn::ToTimestamp, &[F8], TZ),
        ("date_bin", 3) => match ts_pair(&args[1..])? {
            TS => s(DateFn::DateBin, &[IV, TS, TS], TS),
            _ => s(DateFn::DateBin, &[IV, TZ, TZ], TZ),
        },
        ("timezone", 2) => {
            let z = if args[0] == IV { IV } else { T };
            match (z, ts_like(args[1])?) {
                (IV, TS) => s(DateFn::Timezone, &[IV, TS], TZ),
                (IV, _) => s(DateFn::Timezone, &[IV, TZ], TS),
                (_, TS) => s(DateFn::Timezone, &[T, TS], TZ),
                _ => s(DateFn::Timezone, &[T, TZ], TS),
            }
        }
        ("overlaps", 4) => overlaps_signature(args),
        ("to_char", 2) => match args[0] {
            TS => s(DateFn::ToChar, &[TS, T], T),
            TZ | D => s(DateFn::ToChar, &[TZ, T], T),
            IV => s(DateFn::ToChar, &[IV, T], T),
            _ => None,
        },
        ("to_timestamp", 2) => s(DateFn::ToTimestampFmt, &[T, T], TZ),
        ("to_date", 2) => s(DateFn::ToDate, &[T, T], D),
        _ => None,
    }
}

/// overlaps(a, b, c, d): of timestamps, timestamptzs or times, b and d either
/// the same type or intervals.
fn overlaps_signature(args: &[SqlType]) -> Option<Sig> {
    let base = if args.contains(&TM) {
        TM
    } else {
        let points: Vec<SqlType> = args.iter().copied().filter(|t| *t != IV).collect();
        ts_pair(&points)?
    };
    let end = |t: SqlType| if t == IV { IV } else { base };
    let ps: &'static [SqlType] = match (base, end(args[1]), end(args[3])) {
        (TM, TM, TM) => &[TM, TM, TM, TM],
        (TM, IV, TM) => &[TM, IV, TM, TM],
        (TM, TM, IV) => &[TM, TM, TM, IV],
        (TM, _, _) => &[TM, IV, TM, IV],
        (TS, TS, TS) => &[TS, TS, TS, TS],
        (TS, IV, TS) => &[TS, IV, TS, TS],
        (TS, TS, IV) => &[TS, TS, TS, IV],
        (TS, _, _) => &[TS, IV, TS, IV],
        (_, IV, IV) => &[TZ, IV, TZ, IV],
        (_, IV, _) => &[TZ, IV, TZ, TZ],
        (_, _, IV) => &[TZ, TZ, TZ, IV],
        _ => &[TZ, TZ, TZ, TZ],
    };
    Some((
        Func::Date(DateFn::Overlaps, SqlType::Bool),
        ps,
        SqlType::Bool,
    ))
}

/// Evaluates `f` of result type `t` on its arguments (non-NULL unless `f` is
/// not strict), in the session's settings `st`.
pub fn eval(f: DateFn, t: SqlType, vals: &[Datum], st: &Settings) -> SqlResult<Datum> {
    use DateFn as D;
    match f {
        D::DatePart | D::DatePartTz | D::Extract | D::ExtractTz => {
            let numeric = matches!(f, D::Extract | D::ExtractTz);
            part::date_part(text(&vals[0]), &vals[1], numeric, st)
        }
        D::DateTrunc | D::DateTruncTz => part::date_trunc(text(&vals[0]), &vals[1], st),
        D::DateTruncZone if !finite(tstamp(&vals[1])) => Ok(vals[1].clone()),
        D::DateTruncZone => {
            let zone = misc::lookup_zone(text(&vals[2]))?.zone();
            let ts = part::timestamptz_trunc(text(&vals[0]), tstamp(&vals[1]), &zone)?;
            Ok(Datum::TimestampTz(ts))
        }
        D::Overlaps => misc::overlaps(vals, st),
        D::ToChar => {
            let fmt = text(&vals[1]);
            let out = match &vals[0] {
                Datum::Interval(iv) => crate::dtfmt::to_char_interval(iv, fmt)?,
                Datum::Timestamp(ts) => crate::dtfmt::to_char_timestamp(*ts, false, fmt, st)?,
                v => crate::dtfmt::to_char_timestamp(tstamp(v), true, fmt, st)?,
            };
            Ok(out.map_or(Datum::Null, Datum::Text))
        }
        D::ToTimestampFmt => Ok(Datum::TimestampTz(crate::dtfmt::to_timestamp(
            text(&vals[0]),
            text(&vals[1]),
            st,
        )?)),
        D::ToDate => Ok(Datum::Date(crate::dtfmt::to_date(
            text(&vals[0]),
            text(&vals[1]),
            st,
        )?)),
        D::IsFinite => Ok(Datum::Bool(match &vals[0] {
            Datum::Date(d) => *d != i32::MIN && *d != i32::MAX,
            Datum::Interval(_) => true,
            v => finite(tstamp(v)),
        })),
        _ => misc::eval(f, t, vals, st),
    }
}

/// A text argument.
pub(crate) fn text(d: &Datum) -> &str {
    match d {
        Datum::Text(s) => s,
        _ => "",
    }
}

/// A timestamp or timestamptz argument (a date as its midnight).
pub(crate) fn tstamp(d: &Datum) -> i64 {
    match d {
        Datum::Timestamp(v) | Datum::TimestampTz(v) | Datum::Time(v) => *v,
        Datum::Date(d) => i64::from(*d) * USECS_PER_DAY,
        _ => 0,
    }
}

/// An interval argument.
pub(crate) fn interval(d: &Datum) -> Interval {
    match d {
        Datum::Interval(i) => *i,
        _ => Interval::default(),
    }
}

/// An integer argument.
pub(crate) fn int(d: &Datum) -> i32 {
    match d {
        Datum::Int2(v) => i32::from(*v),
        Datum::Int4(v) => *v,
        Datum::Int8(v) => *v as i32,
        _ => 0,
    }
}

/// A float8 argument.
pub(crate) fn float(d: &Datum) -> f64 {
    match d {
        Datum::Float8(v) => v.get(),
        Datum::Float4(v) => v.get(),
        Datum::Int4(v) => f64::from(*v),
        Datum::Int2(v) => f64::from(*v),
        Datum::Int8(v) => *v as f64,
        _ => 0.0,
    }
}

/// TIMESTAMP_NOT_FINITE's negation.
pub(crate) fn finite(ts: i64) -> bool {
    ts != i64::MIN && ts != i64::MAX
}

pub(crate) fn err(code: &'static str, msg: impl Into<String>) -> SqlError {
    SqlError::new(code, msg)
}

pub(crate) fn ts_range() -> SqlError {
    err("22008", "timestamp out of range")
}

pub(crate) fn iv_range() -> SqlError {
    err("22008", "interval out of range")
}

/// timestamp2tm without a zone: fields and microseconds, or "timestamp out of
/// range" when the Julian day is outside 0..=INT_MAX (so for the infinities).
pub(crate) fn ts2tm(ts: i64) -> SqlResult<(Tm, i64)> {
    let jd = ts.div_euclid(USECS_PER_DAY) + POSTGRES_EPOCH_JDATE;
    if !(0..=i64::from(i32::MAX)).contains(&jd) {
        return Err(ts_range());
    }
    Ok(timestamp2tm(ts))
}

/// timestamp2tm in `zone` (rule 2): local fields, microseconds and the offset
/// (seconds east of UTC).
pub(crate) fn ts2tm_zone(ts: i64, zone: &Zone) -> SqlResult<(Tm, i64, i32)> {
    ts2tm(ts)?;
    let unix = ts.div_euclid(USECS_PER_SEC) + EPOCH_DIFF_SECS;
    let (east, _) = zone.at_utc(unix);
    let (tm, fsec) = timestamp2tm(ts + i64::from(east) * USECS_PER_SEC);
    Ok((tm, fsec, east))
}

/// Seconds from 1970-01-01 to 2000-01-01.
pub(crate) const EPOCH_DIFF_SECS: i64 = 946_684_800;

/// DetermineTimeZoneOffset: the offset (seconds west) of local fields in
/// `zone`; 0 when the date is beyond the Julian range.
pub(crate) fn west_of(tm: &Tm, zone: &Zone) -> i32 {
    if !crate::datetime::decode::valid_julian(tm.year, tm.mon, tm.mday) {
        return 0;
    }
    let days = date2j(i64::from(tm.year), i64::from(tm.mon), i64::from(tm.mday)) - 2_440_588;
    let secs = (i64::from(tm.hour) * 60 + i64::from(tm.min)) * 60 + i64::from(tm.sec);
    zone.local_to_west(days * 86_400 + secs)
}

/// tm2timestamp, "timestamp out of range" when it fails.
pub(crate) fn tm2ts(tm: &Tm, fsec: i64, west: Option<i32>) -> SqlResult<i64> {
    crate::datetime::decode::tm2timestamp(tm, fsec, west).ok_or_else(ts_range)
}

/// IS_VALID_TIMESTAMP.
pub(crate) fn valid_ts(ts: i64) -> bool {
    (crate::datetime::decode::MIN_TIMESTAMP..crate::datetime::decode::END_TIMESTAMP).contains(&ts)
}

/// The days of a month (day_tab).
pub(crate) fn mdays(year: i32, mon: i32) -> i32 {
    crate::datetime::decode::days_in_month(year, mon)
}

/// Julian day of fields.
pub(crate) fn jd(tm: &Tm) -> i64 {
    date2j(i64::from(tm.year), i64::from(tm.mon), i64::from(tm.mday))
}

/// Fields of a Julian day, into `tm`.
pub(crate) fn set_jd(tm: &mut Tm, jd: i64) {
    (tm.year, tm.mon, tm.mday) = j2date(jd);
}

/// A double converted to int32 as C on x86 (rule 1): out of range or NaN is
/// INT_MIN.
pub(crate) fn c_i32(v: f64) -> i32 {
    if v.is_nan() || v >= 2_147_483_648.0 || v <= -2_147_483_649.0 {
        i32::MIN
    } else {
        v as i32
    }
}

/// A double converted to int64 as C on x86 (rule 1).
pub(crate) fn c_i64(v: f64) -> i64 {
    if v.is_nan() || !(-9_223_372_036_854_775_808.0..9_223_372_036_854_775_808.0).contains(&v) {
        i64::MIN
    } else {
        v as i64
    }
}

/// C's `%g` (6 significant digits, trailing zeros removed), zero-padded to
/// `width`.
pub(crate) fn fmt_g(v: f64, width: usize) -> String {
    let s = if v.is_nan() {
        "NaN".to_string()
    } else if v.is_infinite() {
        if v > 0.0 { "Infinity" } else { "-Infinity" }.to_string()
    } else if v == 0.0 {
        if v.is_sign_negative() { "-0" } else { "0" }.to_string()
    } else {
        let e = format!("{v:.5e}");
        let (mant, exp) = e.split_once('e').unwrap_or((&e, "0"));
        let exp: i32 = exp.parse().unwrap_or(0);
        if !(-4..6).contains(&exp) {
            let m = trim_zeros(mant);
            let sign = if exp < 0 { '-' } else { '+' };
            format!("{m}e{sign}{:02}", exp.abs())
        } else {
            let prec = (5 - exp).max(0) as usize;
            trim_zeros(&format!("{v:.prec$}")).to_string()
        }
    };
    if s.len() >= width || !v.is_finite() {
        return s;
    }
    let (sign, digits) = match s.strip_prefix('-') {
        Some(d) => ("-", d),
        None => ("", s.as_str()),
    };
    format!("{sign}{}{digits}", "0".repeat(width - s.len()))
}

fn trim_zeros(s: &str) -> &str {
    if s.contains('.') {
        s.trim_end_matches('0').trim_end_matches('.')
    } else {
        s
    }
}
