//! `interval` and `time`, and the arithmetic of dates and times: their text forms
//! as PostgreSQL writes them (IntervalStyle `postgres`), and the operators that
//! mix them with timestamps, dates and numbers.
//!
//! Entry points: [`parse_interval`], [`format_interval`], [`parse_time`],
//! [`format_time`], [`binop_type`] (binding), [`arith`] (evaluation).
//!
//! Rules (cited as "interval rule N"):
//! 1. An interval keeps months, days and microseconds apart; adding one to a
//!    timestamp adds the months to the calendar date (the day clamped to the
//!    month's end), then the days, then the microseconds, as PostgreSQL does.
//! 2. Fractions spill down: a fraction of a month becomes days (a month as 30
//!    days), a fraction of a day becomes microseconds — in input and in
//!    multiplication or division by a number.
//! 3. Output: `1 year 2 mons 3 days 04:05:06.5`, `-1 days +02:00:00`, `00:00:00`
//!    for zero; a positive field after a negative one carries `+`.
//! 4. `time` is microseconds since midnight, 00:00:00 to 24:00:00; time plus an
//!    interval wraps around midnight.

use crate::bind::BinOp;
use crate::{Datum, SqlError, SqlResult, SqlType};
use strata_types::Interval;

const US_PER_SEC: i64 = 1_000_000;
const US_PER_DAY: i64 = 86_400 * US_PER_SEC;

/// `time` rule 4: `HH:MM[:SS[.ffffff]]`, or None.
pub fn parse_time(s: &str) -> Option<i64> {
    let t = s.trim();
    let (hms, frac) = t.split_once('.').unwrap_or((t, ""));
    let mut parts = hms.split(':');
    let num = |x: &str| -> Option<i64> {
        (!x.is_empty() && x.len() <= 2 && x.bytes().all(|b| b.is_ascii_digit()))
            .then(|| x.parse().ok())
            .flatten()
    };
    let h = num(parts.next()?)?;
    let m = num(parts.next()?)?;
    let sec = parts.next().map_or(Some(0), num)?;
    if parts.next().is_some() || !frac.bytes().all(|b| b.is_ascii_digit()) || m > 59 || sec > 60 {
        return None;
    }
    let digits: String = frac.chars().chain("000000".chars()).take(6).collect();
    let us = ((h * 60 + m) * 60 + sec) * US_PER_SEC + digits.parse::<i64>().ok()?;
    (0..=US_PER_DAY).contains(&us).then_some(us)
}

/// `HH:MM:SS[.f]` of a count of microseconds (hours may pass 24 in an interval).
fn clock(us: i64) -> String {
    let (secs, frac) = (us / US_PER_SEC, us % US_PER_SEC);
    let mut s = format!("{:02}:{:02}:{:02}", secs / 3600, secs / 60 % 60, secs % 60);
    if frac != 0 {
        s.push('.');
        s.push_str(format!("{frac:06}").trim_end_matches('0'));
    }
    s
}

pub fn format_time(us: i64) -> String {
    clock(us)
}

/// Rule 3.
pub fn format_interval(i: Interval) -> String {
    let mut parts: Vec<String> = Vec::new();
    let mut negative_seen = false;
    let mut field = |v: i64, unit: &str, plural: &str, parts: &mut Vec<String>| {
        if v == 0 {
            return;
        }
        let sign = if v > 0 && negative_seen { "+" } else { "" };
        negative_seen |= v < 0;
        let name = if v == 1 { unit } else { plural }; // PostgreSQL: "-1 days"
        parts.push(format!("{sign}{v} {name}"));
    };
    let (years, months) = (i.months / 12, i.months % 12);
    field(i64::from(years), "year", "years", &mut parts);
    field(i64::from(months), "mon", "mons", &mut parts);
    field(i64::from(i.days), "day", "days", &mut parts);
    if i.micros != 0 || parts.is_empty() {
        let sign = if i.micros < 0 {
            "-"
        } else if negative_seen {
            "+"
        } else {
            ""
        };
        parts.push(format!("{sign}{}", clock(i.micros.abs())));
    }
    parts.join(" ")
}

/// A unit's size: (months, days, microseconds) per one.
fn unit(u: &str) -> Option<(f64, f64, f64)> {
    let s = US_PER_SEC as f64;
    Some(match u {
        "microsecond" | "microseconds" | "us" | "usec" | "usecs" => (0.0, 0.0, 1.0),
        "millisecond" | "milliseconds" | "ms" | "msec" | "msecs" => (0.0, 0.0, 1000.0),
        "second" | "seconds" | "sec" | "secs" | "s" => (0.0, 0.0, s),
        "minute" | "minutes" | "min" | "mins" | "m" => (0.0, 0.0, 60.0 * s),
        "hour" | "hours" | "hr" | "hrs" | "h" => (0.0, 0.0, 3600.0 * s),
        "day" | "days" | "d" => (0.0, 1.0, 0.0),
        "week" | "weeks" | "w" => (0.0, 7.0, 0.0),
        "month" | "months" | "mon" | "mons" => (1.0, 0.0, 0.0),
        "year" | "years" | "yr" | "yrs" | "y" => (12.0, 0.0, 0.0),
        "decade" | "decades" => (120.0, 0.0, 0.0),
        "century" | "centuries" => (1200.0, 0.0, 0.0),
        "millennium" | "millennia" => (12000.0, 0.0, 0.0),
        _ => return None,
    })
}

/// Rule 2: months, days and microseconds as fractions become whole fields.
fn spill(months: f64, days: f64, micros: f64) -> Option<Interval> {
    let whole_m = months.trunc();
    let days = days + (months - whole_m) * 30.0;
    let whole_d = days.trunc();
    let micros = micros + (days - whole_d) * US_PER_DAY as f64;
    let fits = |v: f64, max: f64| v.is_finite() && v.abs() <= max;
    if !fits(whole_m, i32::MAX as f64) || !fits(whole_d, i32::MAX as f64) || !fits(micros, 9.2e18) {
        return None;
    }
    Some(Interval {
        months: whole_m as i32,
        days: whole_d as i32,
        micros: micros.round() as i64,
    })
}

/// An interval's text: `number unit` pairs (`1 day`, `-2.5 hours`, `3 mons`), a
/// clock `[-]HH:MM[:SS[.f]]`, a bare number of seconds, `ago`; None otherwise.
pub fn parse_interval(s: &str) -> Option<Interval> {
    let lower = s.trim().to_ascii_lowercase();
    let text = lower.strip_prefix('@').unwrap_or(&lower).trim();
    let (text, ago) = match text.strip_suffix("ago") {
        Some(t) => (t.trim(), true),
        None => (text, false),
    };
    let toks: Vec<&str> = text.split_whitespace().collect();
    if toks.is_empty() {
        return None;
    }
    // Whole numbers of a unit add up exactly (as PostgreSQL's fields do); only
    // fractions go through floating point, and spill down at the end.
    let mut exact = [0i128; 3];
    let (mut m, mut d, mut us) = (0.0, 0.0, 0.0);
    let mut i = 0;
    while i < toks.len() {
        let t = toks[i];
        if t.contains(':') {
            let (neg, body) = match t.strip_prefix('-') {
                Some(b) => (true, b),
                None => (false, t.strip_prefix('+').unwrap_or(t)),
            };
            let v = i128::from(parse_clock(body)?);
            exact[2] += if neg { -v } else { v };
            i += 1;
            continue;
        }
        let (num_text, unit_text) = split_number(t);
        let n: f64 = num_text.parse().ok()?;
        let whole: Option<i128> = num_text.parse().ok();
        let u = if unit_text.is_empty() {
            match toks.get(i + 1) {
                Some(next) if unit(next).is_some() => {
                    i += 1;
                    *next
                }
                _ => "second",
            }
        } else {
            unit_text
        };
        let (um, ud, uu) = unit(u)?;
        match whole {
            Some(w) => {
                for (e, per) in exact.iter_mut().zip([um, ud, uu]) {
                    *e = e.checked_add(w.checked_mul(per as i128)?)?;
                }
            }
            None => (m, d, us) = (m + n * um, d + n * ud, us + n * uu),
        }
        i += 1;
    }
    let sign = if ago { -1 } else { 1 };
    let frac = spill(
        m * f64::from(sign),
        d * f64::from(sign),
        us * f64::from(sign),
    )?;
    let months = exact[0] * i128::from(sign) + i128::from(frac.months);
    let days = exact[1] * i128::from(sign) + i128::from(frac.days);
    let micros = exact[2] * i128::from(sign) + i128::from(frac.micros);
    Some(Interval {
        months: i32::try_from(months).ok()?,
        days: i32::try_from(days).ok()?,
        micros: i64::try_from(micros).ok()?,
    })
}

/// `10days` → ("10", "days"); `-1.5` → ("-1.5", "").
fn split_number(t: &str) -> (&str, &str) {
    let at = t
        .char_indices()
        .find(|(i, c)| !(c.is_ascii_digit() || *c == '.' || (*i == 0 && (*c == '-' || *c == '+'))))
        .map_or(t.len(), |(i, _)| i);
    t.split_at(at)
}

/// A clock in an interval: hours may pass 24.
fn parse_clock(t: &str) -> Option<i64> {
    let (hms, frac) = t.split_once('.').unwrap_or((t, ""));
    let mut p = hms.split(':');
    let h: i64 = p.next()?.parse().ok()?;
    let m: i64 = p.next()?.parse().ok()?;
    let sec: i64 = p.next().map_or(Some(0), |x| x.parse().ok())?;
    if p.next().is_some() || m > 59 || sec > 59 || !frac.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    let digits: String = frac.chars().chain("000000".chars()).take(6).collect();
    Some(((h * 60 + m) * 60 + sec) * US_PER_SEC + digits.parse::<i64>().ok()?)
}

/// The operand and result types of a date/time operator (binding), or None when
/// the operands are not of one: (left as, right as, result).
pub fn binop_type(lt: SqlType, op: BinOp, rt: SqlType) -> Option<(SqlType, SqlType, SqlType)> {
    use SqlType as T;
    let ts = |t: T| matches!(t, T::Timestamp | T::TimestampTz);
    let dt = |t: T| ts(t) || matches!(t, T::Date | T::Time);
    // An untyped literal beside a date or time is an interval.
    let (lt, rt) = match (lt, rt) {
        (T::Unknown, r) if dt(r) && op == BinOp::Add => (T::Interval, r),
        (l, T::Unknown) if dt(l) && matches!(op, BinOp::Add | BinOp::Sub) => (l, T::Interval),
        (T::Unknown, T::Interval) | (T::Interval, T::Unknown) => (T::Interval, T::Interval),
        other => other,
    };
    let add_sub = matches!(op, BinOp::Add | BinOp::Sub);
    let r = match (lt, op, rt) {
        (l, _, T::Interval) if ts(l) && add_sub => l,
        (T::Interval, BinOp::Add, r) if ts(r) => r,
        (T::Date, _, T::Interval) if add_sub => T::Timestamp,
        (T::Interval, BinOp::Add, T::Date) => T::Timestamp,
        (T::Time, _, T::Interval) if add_sub => T::Time,
        (T::Interval, BinOp::Add, T::Time) => T::Time,
        (T::Interval, _, T::Interval) if add_sub => T::Interval,
        (l, BinOp::Sub, r) if ts(l) && ts(r) => {
            let both = if l == r { l } else { T::TimestampTz };
            return Some((both, both, T::Interval));
        }
        (T::Time, BinOp::Sub, T::Time) => T::Interval,
        (T::Date, BinOp::Sub, T::Date) => T::Int4,
        (T::Date, _, r) if add_sub && r.is_int() && r != T::Numeric => {
            return Some((T::Date, T::Int4, T::Date))
        }
        (l, BinOp::Add, T::Date) if l.is_int() && l != T::Numeric => {
            return Some((T::Int4, T::Date, T::Date))
        }
        (T::Interval, BinOp::Mul | BinOp::Div, r) if r.is_number() || r == T::Unknown => {
            return Some((T::Interval, T::Float8, T::Interval))
        }
        (l, BinOp::Mul, T::Interval) if l.is_number() || l == T::Unknown => {
            return Some((T::Float8, T::Interval, T::Interval))
        }
        _ => return None,
    };
    Some((lt, rt, r))
}

fn out_of_range(what: &str) -> SqlError {
    SqlError::new("22008", format!("{what} out of range"))
}

/// PostgreSQL's timestamp range, in microseconds since 2000-01-01: 4714-11-24 BC
/// (MIN_TIMESTAMP) up to, not including, 294277-01-01 (END_TIMESTAMP).
pub const TIMESTAMP_MIN_US: i64 = -211_813_488_000_000_000;
pub const TIMESTAMP_END_US: i64 = 9_223_371_331_200_000_000;

/// PostgreSQL's date range, in days since 2000-01-01: Julian day 0 (4714-11-24 BC)
/// up to, not including, 5874898-01-01 (IS_VALID_DATE).
pub const DATE_MIN_DAYS: i64 = -2_451_545;
pub const DATE_END_DAYS: i64 = 2_147_483_494 - 2_451_545;

/// A timestamp in PostgreSQL's range, or 22008 "timestamp out of range".
pub fn valid_timestamp(t: i64) -> SqlResult<i64> {
    if (TIMESTAMP_MIN_US..TIMESTAMP_END_US).contains(&t) {
        Ok(t)
    } else {
        Err(out_of_range("timestamp"))
    }
}

/// A date in PostgreSQL's range, or 22008 "date out of range".
fn valid_date(d: i64) -> SqlResult<i32> {
    if (DATE_MIN_DAYS..DATE_END_DAYS).contains(&d) {
        Ok(d as i32)
    } else {
        Err(out_of_range("date"))
    }
}

/// Rule 1: `ts` (microseconds since 2000-01-01) plus `i`, in PostgreSQL's range.
fn add_to_timestamp(ts: i64, i: Interval) -> SqlResult<i64> {
    let mut t = ts;
    if i.months != 0 {
        t = crate::time::add_months(t, i.months).ok_or_else(|| out_of_range("timestamp"))?;
    }
    let t = t
        .checked_add(i64::from(i.days) * US_PER_DAY)
        .and_then(|t| t.checked_add(i.micros))
        .ok_or_else(|| out_of_range("timestamp"))?;
    valid_timestamp(t)
}

fn neg(i: Interval) -> Interval {
    Interval {
        months: -i.months,
        days: -i.days,
        micros: -i.micros,
    }
}

/// Evaluates a date/time operator on non-NULL values (`None` when they are not
/// of one: the caller's arithmetic).
pub fn arith(op: BinOp, a: &Datum, b: &Datum) -> Option<SqlResult<Datum>> {
    use Datum as D;
    let sub = op == BinOp::Sub;
    let signed = |i: &Interval| if sub { neg(*i) } else { *i };
    Some(match (a, op, b) {
        (D::Timestamp(t), BinOp::Add | BinOp::Sub, D::Interval(i)) => {
            add_to_timestamp(*t, signed(i)).map(D::Timestamp)
        }
        (D::TimestampTz(t), BinOp::Add | BinOp::Sub, D::Interval(i)) => {
            add_to_timestamp(*t, signed(i)).map(D::TimestampTz)
        }
        (D::Interval(i), BinOp::Add, D::Timestamp(t)) => add_to_timestamp(*t, *i).map(D::Timestamp),
        (D::Interval(i), BinOp::Add, D::TimestampTz(t)) => {
            add_to_timestamp(*t, *i).map(D::TimestampTz)
        }
        (D::Date(d), BinOp::Add | BinOp::Sub, D::Interval(i)) => crate::time::midnight(*d)
            .and_then(|t| add_to_timestamp(t, signed(i)))
            .map(D::Timestamp),
        (D::Interval(i), BinOp::Add, D::Date(d)) => crate::time::midnight(*d)
            .and_then(|t| add_to_timestamp(t, *i))
            .map(D::Timestamp),
        (D::Timestamp(x) | D::TimestampTz(x), BinOp::Sub, D::Timestamp(y) | D::TimestampTz(y)) => {
            let Some(diff) = x.checked_sub(*y) else {
                return Some(Err(out_of_range("interval")));
            };
            Ok(D::Interval(Interval {
                months: 0,
                days: (diff / US_PER_DAY) as i32,
                micros: diff % US_PER_DAY,
            }))
        }
        (D::Time(t), BinOp::Add | BinOp::Sub, D::Interval(i)) => {
            Ok(D::Time((t + signed(i).micros).rem_euclid(US_PER_DAY)))
        }
        (D::Interval(i), BinOp::Add, D::Time(t)) => {
            Ok(D::Time((t + i.micros).rem_euclid(US_PER_DAY)))
        }
        (D::Time(x), BinOp::Sub, D::Time(y)) => Ok(D::Interval(Interval {
            micros: x - y,
            ..Interval::default()
        })),
        (D::Interval(x), BinOp::Add | BinOp::Sub, D::Interval(y)) => {
            let y = signed(y);
            let m = x.months.checked_add(y.months);
            let d = x.days.checked_add(y.days);
            let u = x.micros.checked_add(y.micros);
            match (m, d, u) {
                (Some(months), Some(days), Some(micros)) => Ok(D::Interval(Interval {
                    months,
                    days,
                    micros,
                })),
                _ => Err(out_of_range("interval")),
            }
        }
        (D::Date(x), BinOp::Sub, D::Date(y)) => Ok(D::Int4(x - y)),
        (D::Date(d), BinOp::Add | BinOp::Sub, D::Int4(n)) => {
            let n = if sub { -i64::from(*n) } else { i64::from(*n) };
            valid_date(i64::from(*d) + n).map(D::Date)
        }
        (D::Int4(n), BinOp::Add, D::Date(d)) => {
            valid_date(i64::from(*d) + i64::from(*n)).map(D::Date)
        }
        (D::Interval(i), BinOp::Mul | BinOp::Div, D::Float8(f)) => scale(*i, f.get(), op),
        (D::Float8(f), BinOp::Mul, D::Interval(i)) => scale(*i, f.get(), op),
        _ => return None,
    })
}

/// Rule 2: an interval times or divided by a number.
fn scale(i: Interval, f: f64, op: BinOp) -> SqlResult<Datum> {
    let f = if op == BinOp::Div {
        if f == 0.0 {
            return Err(SqlError::new("22012", "division by zero"));
        }
        1.0 / f
    } else {
        f
    };
    spill(
        f64::from(i.months) * f,
        f64::from(i.days) * f,
        i.micros as f64 * f,
    )
    .map(Datum::Interval)
    .ok_or_else(|| out_of_range("interval"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn iv(s: &str) -> String {
        format_interval(parse_interval(s).unwrap_or_else(|| panic!("{s}")))
    }

    #[test]
    fn intervals_read_and_print_as_postgres() {
        for (input, want) in [
            ("1 day", "1 day"),
            ("2 days 3 hours", "2 days 03:00:00"),
            (
                "1 year 2 months 3 days 04:05:06.5",
                "1 year 2 mons 3 days 04:05:06.5",
            ),
            ("-1 day +2 hours", "-1 days +02:00:00"),
            ("1.5 days", "1 day 12:00:00"),
            ("0.5 months", "15 days"),
            ("90 minutes", "01:30:00"),
            ("36:00:00", "36:00:00"),
            ("1 week", "7 days"),
            ("3 days ago", "-3 days"),
            ("0", "00:00:00"),
            ("10", "00:00:10"),
            ("-01:02", "-01:02:00"),
            ("1 mon -1 days", "1 mon -1 days"),
            ("2 hours 30 min", "02:30:00"),
        ] {
            assert_eq!(iv(input), want, "{input}");
        }
        for bad in ["", "1 fortnight", "x days", "1:2:3:4"] {
            assert!(parse_interval(bad).is_none(), "{bad}");
        }
        assert_eq!(
            parse_interval("1 day"),
            parse_interval("24 hours"),
            "compared by span"
        );
    }

    #[test]
    fn times_read_and_print() {
        assert_eq!(
            parse_time("04:05:06.789").map(format_time).as_deref(),
            Some("04:05:06.789")
        );
        assert_eq!(
            parse_time("24:00").map(format_time).as_deref(),
            Some("24:00:00")
        );
        assert_eq!(parse_time("25:00"), None);
        assert_eq!(parse_time("12:60"), None);
    }
}
