//! The operators of dates, times, timestamps and intervals, and the casts
//! among them (datefn rules 1-3), as timestamp.c and date.c.

use super::{
    c_i32, err, finite, iv_range, jd, mdays, set_jd, tm2ts, ts2tm, ts2tm_zone, ts_range, valid_ts,
    west_of,
};
use crate::datetime::decode::{j2date, POSTGRES_EPOCH_JDATE};
use crate::datetime::{Settings, Tm, Zone, USECS_PER_DAY, USECS_PER_SEC};
use crate::SqlResult;
use strata_types::Interval;

/// Days per month in interval arithmetic (DAYS_PER_MONTH).
const DAYS_PER_MONTH: i32 = 30;
/// TIMESTAMP_END_JULIAN.
const TIMESTAMP_END_JULIAN: i64 = 109_203_528;
/// DATE_END_JULIAN.
const DATE_END_JULIAN: i64 = 2_147_483_494;

/// Adds `months` to fields, the day clamped to the month's end.
fn add_months(tm: &mut Tm, months: i32) {
    tm.mon = tm.mon.wrapping_add(months);
    if tm.mon > 12 {
        tm.year = tm.year.wrapping_add((tm.mon - 1) / 12);
        tm.mon = (tm.mon - 1) % 12 + 1;
    } else if tm.mon < 1 {
        tm.year = tm.year.wrapping_add(tm.mon / 12 - 1);
        tm.mon = tm.mon % 12 + 12;
    }
    tm.mday = tm.mday.min(mdays(tm.year, tm.mon));
}

/// Adds the months, then the days, of `span` to a timestamp's fields in
/// `zone` (None: no zone), then its microseconds (datefn rule 2).
fn pl_interval(ts: i64, span: Interval, zone: Option<&Zone>) -> SqlResult<i64> {
    if !finite(ts) {
        return Ok(ts);
    }
    let fields = |ts: i64| match zone {
        Some(z) => ts2tm_zone(ts, z).map(|(tm, fsec, _)| (tm, fsec)),
        None => ts2tm(ts),
    };
    let rebuild = |tm: &Tm, fsec: i64| tm2ts(tm, fsec, zone.map(|z| west_of(tm, z)));
    let mut ts = ts;
    if span.months != 0 {
        let (mut tm, fsec) = fields(ts)?;
        add_months(&mut tm, span.months);
        ts = rebuild(&tm, fsec)?;
    }
    if span.days != 0 {
        let (mut tm, fsec) = fields(ts)?;
        let j = jd(&tm) + i64::from(span.days);
        set_jd(&mut tm, j);
        ts = rebuild(&tm, fsec)?;
    }
    let ts = ts.checked_add(span.micros).ok_or_else(ts_range)?;
    if !valid_ts(ts) {
        return Err(ts_range());
    }
    Ok(ts)
}

/// timestamp + interval.
pub fn timestamp_pl_interval(ts: i64, span: Interval) -> SqlResult<i64> {
    pl_interval(ts, span, None)
}

/// timestamp - interval.
pub fn timestamp_mi_interval(ts: i64, span: Interval) -> SqlResult<i64> {
    pl_interval(ts, interval_um_raw(span), None)
}

/// timestamptz + interval, in the session zone.
pub fn timestamptz_pl_interval(ts: i64, span: Interval, st: &Settings) -> SqlResult<i64> {
    pl_interval(ts, span, Some(&st.zone))
}

/// timestamptz - interval, in the session zone.
pub fn timestamptz_mi_interval(ts: i64, span: Interval, st: &Settings) -> SqlResult<i64> {
    pl_interval(ts, interval_um_raw(span), Some(&st.zone))
}

/// `-span` as timestamp_mi_interval builds it (no overflow check: PostgreSQL
/// negates each field in C).
fn interval_um_raw(span: Interval) -> Interval {
    Interval {
        months: span.months.wrapping_neg(),
        days: span.days.wrapping_neg(),
        micros: span.micros.wrapping_neg(),
    }
}

/// date + interval: a timestamp.
pub fn date_pl_interval(d: i32, span: Interval) -> SqlResult<i64> {
    timestamp_pl_interval(date_to_timestamp(d)?, span)
}

/// date - interval: a timestamp.
pub fn date_mi_interval(d: i32, span: Interval) -> SqlResult<i64> {
    timestamp_mi_interval(date_to_timestamp(d)?, span)
}

/// timestamp - timestamp (also timestamptz - timestamptz): the microseconds
/// between, justify_hours'd.
pub fn timestamp_mi(a: i64, b: i64) -> SqlResult<Interval> {
    if !finite(a) || !finite(b) {
        return Err(err("22008", "cannot subtract infinite timestamps"));
    }
    // (PostgreSQL 15 does not check this subtraction: it wraps.)
    let micros = a.wrapping_sub(b);
    justify_hours(Interval {
        months: 0,
        days: 0,
        micros,
    })
}

/// interval + interval.
pub fn interval_pl(a: Interval, b: Interval) -> SqlResult<Interval> {
    Ok(Interval {
        months: a.months.checked_add(b.months).ok_or_else(iv_range)?,
        days: a.days.checked_add(b.days).ok_or_else(iv_range)?,
        micros: a.micros.checked_add(b.micros).ok_or_else(iv_range)?,
    })
}

/// interval - interval.
pub fn interval_mi(a: Interval, b: Interval) -> SqlResult<Interval> {
    Ok(Interval {
        months: a.months.checked_sub(b.months).ok_or_else(iv_range)?,
        days: a.days.checked_sub(b.days).ok_or_else(iv_range)?,
        micros: a.micros.checked_sub(b.micros).ok_or_else(iv_range)?,
    })
}

/// - interval.
pub fn interval_um(a: Interval) -> SqlResult<Interval> {
    Ok(Interval {
        months: a.months.checked_neg().ok_or_else(iv_range)?,
        days: a.days.checked_neg().ok_or_else(iv_range)?,
        micros: a.micros.checked_neg().ok_or_else(iv_range)?,
    })
}

/// TSROUND: to microsecond precision.
fn tsround(v: f64) -> f64 {
    (v * 1e6).round_ties_even() / 1e6
}

/// The fractions of months and days that interval_mul and interval_div spill
/// down: (days to add, seconds remainder), after PostgreSQL's cascade; the
/// additions to the days checked ("interval out of range"), as 15.18's.
fn spill(months_exact: f64, months: i32, days_exact: f64, days: &mut i32) -> SqlResult<(i32, f64)> {
    let month_remainder_days = tsround((months_exact - f64::from(months)) * 30.0);
    let mut sec_remainder = tsround(
        (days_exact - f64::from(*days) + month_remainder_days
            - f64::from(c_i32(month_remainder_days.trunc())))
            * 86_400.0,
    );
    if sec_remainder.abs() >= 86_400.0 {
        let whole = c_i32(sec_remainder / 86_400.0);
        *days = days.checked_add(whole).ok_or_else(iv_range)?;
        sec_remainder -= f64::from(whole) * 86_400.0;
    }
    Ok((c_i32(month_remainder_days), sec_remainder))
}

/// interval * float8 (and float8 * interval).
pub fn interval_mul(span: Interval, factor: f64) -> SqlResult<Interval> {
    scale(span, |v| v * factor)
}

/// interval / float8.
pub fn interval_div(span: Interval, factor: f64) -> SqlResult<Interval> {
    if factor == 0.0 {
        return Err(err("22012", "division by zero"));
    }
    scale(span, |v| v / factor)
}

/// interval_mul and interval_div: each field scaled by `op`, the fractions
/// of months and days spilt down, "interval out of range" when a field
/// leaves its type's range.
fn scale(span: Interval, op: impl Fn(f64) -> f64) -> SqlResult<Interval> {
    let fits = |v: f64| !v.is_nan() && v <= f64::from(i32::MAX) && v >= f64::from(i32::MIN);
    let m = op(f64::from(span.months));
    if !fits(m) {
        return Err(iv_range());
    }
    let d = op(f64::from(span.days));
    if !fits(d) {
        return Err(iv_range());
    }
    let (months, mut days) = (m as i32, d as i32);
    let (extra, sec) = spill(m, months, d, &mut days)?;
    let days = days.checked_add(extra).ok_or_else(iv_range)?;
    let t = (op(span.micros as f64) + sec * 1e6).round_ties_even();
    if t.is_nan() || !(-9_223_372_036_854_775_808.0..9_223_372_036_854_775_808.0).contains(&t) {
        return Err(iv_range());
    }
    Ok(Interval {
        months,
        days,
        micros: t as i64,
    })
}

/// interval_cmp_value: the interval as microseconds, a month as 30 days and a
/// day as 24 hours; what interval comparison and hashing use.
pub fn interval_cmp_key(iv: Interval) -> i128 {
    let days = i128::from(iv.months) * 30 + i128::from(iv.days);
    days * i128::from(USECS_PER_DAY) + i128::from(iv.micros)
}

/// justify_hours.
pub fn justify_hours(span: Interval) -> SqlResult<Interval> {
    let whole = span.micros / USECS_PER_DAY;
    let mut micros = span.micros - whole * USECS_PER_DAY;
    let mut days = i32::try_from(i64::from(span.days) + whole).map_err(|_| iv_range())?;
    if days > 0 && micros < 0 {
        micros += USECS_PER_DAY;
        days -= 1;
    } else if days < 0 && micros > 0 {
        micros -= USECS_PER_DAY;
        days += 1;
    }
    Ok(Interval {
        months: span.months,
        days,
        micros,
    })
}

/// justify_days.
pub fn justify_days(span: Interval) -> SqlResult<Interval> {
    let whole = span.days / DAYS_PER_MONTH;
    let mut days = span.days - whole * DAYS_PER_MONTH;
    let mut months = span.months.checked_add(whole).ok_or_else(iv_range)?;
    if months > 0 && days < 0 {
        days += DAYS_PER_MONTH;
        months -= 1;
    } else if months < 0 && days > 0 {
        days -= DAYS_PER_MONTH;
        months += 1;
    }
    Ok(Interval {
        months,
        days,
        micros: span.micros,
    })
}

/// justify_interval.
pub fn justify_interval(span: Interval) -> SqlResult<Interval> {
    let Interval {
        mut months,
        mut days,
        mut micros,
    } = span;
    if (days > 0 && micros > 0) || (days < 0 && micros < 0) {
        let whole = days / DAYS_PER_MONTH;
        days -= whole * DAYS_PER_MONTH;
        months = months.checked_add(whole).ok_or_else(iv_range)?;
    }
    let whole = micros / USECS_PER_DAY;
    micros -= whole * USECS_PER_DAY;
    days = i32::try_from(i64::from(days) + whole).map_err(|_| iv_range())?;
    let whole = days / DAYS_PER_MONTH;
    days -= whole * DAYS_PER_MONTH;
    months = months.checked_add(whole).ok_or_else(iv_range)?;
    if months > 0 && (days < 0 || (days == 0 && micros < 0)) {
        days += DAYS_PER_MONTH;
        months -= 1;
    } else if months < 0 && (days > 0 || (days == 0 && micros > 0)) {
        days -= DAYS_PER_MONTH;
        months += 1;
    }
    if days > 0 && micros < 0 {
        micros += USECS_PER_DAY;
        days -= 1;
    } else if days < 0 && micros > 0 {
        micros -= USECS_PER_DAY;
        days += 1;
    }
    Ok(Interval {
        months,
        days,
        micros,
    })
}

/// time + interval: wraps around midnight.
pub fn time_pl_interval(t: i64, span: Interval) -> i64 {
    wrap_time(t.wrapping_add(span.micros))
}

/// time - interval.
pub fn time_mi_interval(t: i64, span: Interval) -> i64 {
    wrap_time(t.wrapping_sub(span.micros))
}

fn wrap_time(t: i64) -> i64 {
    let r = t - t / USECS_PER_DAY * USECS_PER_DAY;
    if r < 0 {
        r + USECS_PER_DAY
    } else {
        r
    }
}

/// time - time: an interval of microseconds.
pub fn time_mi_time(a: i64, b: i64) -> Interval {
    Interval {
        months: 0,
        days: 0,
        micros: a - b,
    }
}

/// date - date: days.
pub fn date_mi(a: i32, b: i32) -> SqlResult<i32> {
    if !date_finite(a) || !date_finite(b) {
        return Err(err("22008", "cannot subtract infinite dates"));
    }
    Ok(a - b)
}

fn date_finite(d: i32) -> bool {
    d != i32::MIN && d != i32::MAX
}

/// IS_VALID_DATE.
fn valid_date(d: i64) -> bool {
    (-POSTGRES_EPOCH_JDATE..DATE_END_JULIAN - POSTGRES_EPOCH_JDATE).contains(&d)
}

/// date + int4 (and int4 + date).
pub fn date_pli(d: i32, days: i32) -> SqlResult<i32> {
    if !date_finite(d) {
        return Ok(d);
    }
    let r = i64::from(d) + i64::from(days);
    if !valid_date(r) {
        return Err(err("22008", "date out of range"));
    }
    Ok(r as i32)
}

/// date - int4.
pub fn date_mii(d: i32, days: i32) -> SqlResult<i32> {
    if !date_finite(d) {
        return Ok(d);
    }
    let r = i64::from(d) - i64::from(days);
    if !valid_date(r) {
        return Err(err("22008", "date out of range"));
    }
    Ok(r as i32)
}

/// date + time (and time + date): a timestamp.
pub fn date_pl_time(d: i32, t: i64) -> SqlResult<i64> {
    let ts = date_to_timestamp(d)?;
    if !finite(ts) {
        return Ok(ts);
    }
    let r = ts + t;
    if !valid_ts(r) {
        return Err(ts_range());
    }
    Ok(r)
}

/// date::timestamp (date2timestamp).
pub fn date_to_timestamp(d: i32) -> SqlResult<i64> {
    match d {
        i32::MIN => Ok(i64::MIN),
        i32::MAX => Ok(i64::MAX),
        _ if i64::from(d) >= TIMESTAMP_END_JULIAN - POSTGRES_EPOCH_JDATE => {
            Err(err("22008", "date out of range for timestamp"))
        }
        _ => Ok(i64::from(d) * USECS_PER_DAY),
    }
}

/// date::timestamptz (date2timestamptz): the date's midnight in the session
/// zone.
pub fn date_to_timestamptz(d: i32, st: &Settings) -> SqlResult<i64> {
    let ts = date_to_timestamp(d)?;
    if !finite(ts) {
        return Ok(ts);
    }
    let (year, mon, mday) = j2date(i64::from(d) + POSTGRES_EPOCH_JDATE);
    let tm = Tm {
        year,
        mon,
        mday,
        ..Tm::default()
    };
    let r = ts + i64::from(west_of(&tm, &st.zone)) * USECS_PER_SEC;
    if !valid_ts(r) {
        return Err(err("22008", "date out of range for timestamp"));
    }
    Ok(r)
}

/// timestamp::timestamptz: the local time in the session zone.
pub fn timestamp_to_timestamptz(ts: i64, st: &Settings) -> SqlResult<i64> {
    timestamp_to_timestamptz_in(ts, &st.zone)
}

/// timestamp::timestamptz in `zone`.
pub(crate) fn timestamp_to_timestamptz_in(ts: i64, zone: &Zone) -> SqlResult<i64> {
    if !finite(ts) {
        return Ok(ts);
    }
    let (tm, _) = ts2tm(ts)?;
    let r = ts + i64::from(west_of(&tm, zone)) * USECS_PER_SEC;
    if !valid_ts(r) {
        return Err(ts_range());
    }
    Ok(r)
}

/// timestamptz::timestamp: the local time in the session zone.
pub fn timestamptz_to_timestamp(ts: i64, st: &Settings) -> SqlResult<i64> {
    if !finite(ts) {
        return Ok(ts);
    }
    let (tm, fsec, _) = ts2tm_zone(ts, &st.zone)?;
    tm2ts(&tm, fsec, None)
}

/// timestamp::date.
pub fn timestamp_to_date(ts: i64) -> SqlResult<i32> {
    match ts {
        i64::MIN => Ok(i32::MIN),
        i64::MAX => Ok(i32::MAX),
        _ => Ok((jd(&ts2tm(ts)?.0) - POSTGRES_EPOCH_JDATE) as i32),
    }
}

/// timestamptz::date, in the session zone.
pub fn timestamptz_to_date(ts: i64, st: &Settings) -> SqlResult<i32> {
    match ts {
        i64::MIN => Ok(i32::MIN),
        i64::MAX => Ok(i32::MAX),
        _ => Ok((jd(&ts2tm_zone(ts, &st.zone)?.0) - POSTGRES_EPOCH_JDATE) as i32),
    }
}

/// timestamp::time: None (NULL) for an infinity.
pub fn timestamp_to_time(ts: i64) -> SqlResult<Option<i64>> {
    if !finite(ts) {
        return Ok(None);
    }
    let (tm, fsec) = ts2tm(ts)?;
    Ok(Some(tm_time(&tm, fsec)))
}

/// timestamptz::time, in the session zone: None (NULL) for an infinity.
pub fn timestamptz_to_time(ts: i64, st: &Settings) -> SqlResult<Option<i64>> {
    if !finite(ts) {
        return Ok(None);
    }
    let (tm, fsec, _) = ts2tm_zone(ts, &st.zone)?;
    Ok(Some(tm_time(&tm, fsec)))
}

fn tm_time(tm: &Tm, fsec: i64) -> i64 {
    ((i64::from(tm.hour) * 60 + i64::from(tm.min)) * 60 + i64::from(tm.sec)) * USECS_PER_SEC + fsec
}

/// time::interval.
pub fn time_to_interval(t: i64) -> Interval {
    Interval {
        months: 0,
        days: 0,
        micros: t,
    }
}

/// interval::time: the microseconds modulo a day.
pub fn interval_to_time(iv: Interval) -> i64 {
    let r = iv.micros % USECS_PER_DAY;
    if r < 0 {
        r + USECS_PER_DAY
    } else {
        r
    }
}
