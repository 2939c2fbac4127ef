//! age, justify_*, make_*, to_timestamp(float8), date_bin, timezone (AT TIME
//! ZONE) and overlaps, as timestamp.c and date.c (datefn rules 1-6).

use super::arith::{
    date_to_timestamptz, justify_days, justify_hours, justify_interval, timestamp_pl_interval,
    timestamptz_pl_interval,
};
use super::{
    err, finite, float, fmt_g, int, interval, iv_range, jd, mdays, text, tm2ts, ts2tm, ts2tm_zone,
    ts_range, tstamp, valid_ts, west_of, DateFn, EPOCH_DIFF_SECS,
};
use crate::datetime::decode::{decode_timezone, valid_julian, DtErr, POSTGRES_EPOCH_JDATE};
use crate::datetime::tables::{abbrev, Abbrev};
use crate::datetime::{format_interval, Settings, Tm, Zone, USECS_PER_DAY, USECS_PER_SEC};
use crate::{Datum, SqlResult, SqlType};
use strata_types::Interval;

/// The functions [`super::eval`] does not take itself.
pub(crate) fn eval(f: DateFn, t: SqlType, vals: &[Datum], st: &Settings) -> SqlResult<Datum> {
    use DateFn as D;
    let iv = |r: SqlResult<Interval>| r.map(Datum::Interval);
    match f {
        D::Age | D::AgeTz => {
            let zone = tz_zone(&vals[0], st);
            iv(age(tstamp(&vals[0]), tstamp(&vals[1]), zone))
        }
        D::AgeNow => {
            let zone = tz_zone(&vals[0], st);
            let today = today(st)?;
            let start = match zone {
                Some(_) => date_to_timestamptz(today, st)?,
                None => super::date_to_timestamp(today)?,
            };
            iv(age(start, tstamp(&vals[0]), zone))
        }
        D::JustifyDays => iv(justify_days(interval(&vals[0]))),
        D::JustifyHours => iv(justify_hours(interval(&vals[0]))),
        D::JustifyInterval => iv(justify_interval(interval(&vals[0]))),
        D::MakeDate => make_date(int(&vals[0]), int(&vals[1]), int(&vals[2])).map(Datum::Date),
        D::MakeTime => make_time(int(&vals[0]), int(&vals[1]), float(&vals[2])).map(Datum::Time),
        D::MakeTimestamp => make_timestamp(vals).map(Datum::Timestamp),
        D::MakeTimestampTz => make_timestamptz(vals, st).map(Datum::TimestampTz),
        D::MakeInterval => iv(make_interval(vals)),
        D::ToTimestamp => to_timestamp(float(&vals[0])).map(Datum::TimestampTz),
        D::DateBin => {
            let r = date_bin(interval(&vals[0]), tstamp(&vals[1]), tstamp(&vals[2]))?;
            Ok(if t == SqlType::Timestamp {
                Datum::Timestamp(r)
            } else {
                Datum::TimestampTz(r)
            })
        }
        D::Timezone => timezone(&vals[0], &vals[1], st),
        _ => Ok(Datum::Null),
    }
}

/// The session zone if `d` is a timestamptz.
fn tz_zone<'a>(d: &Datum, st: &'a Settings) -> Option<&'a Zone> {
    matches!(d, Datum::TimestampTz(_) | Datum::Date(_)).then_some(&st.zone)
}

/// current_date: the session zone's date of the transaction's start.
fn today(st: &Settings) -> SqlResult<i32> {
    super::timestamptz_to_date(st.now_us, st)
}

/// timestamp_age / timestamptz_age (`zone` Some): the symbolic difference
/// a - b in years, months, days and time.
pub fn age(a: i64, b: i64, zone: Option<&Zone>) -> SqlResult<Interval> {
    let fields = |ts: i64| match zone {
        Some(z) => ts2tm_zone(ts, z).map(|(tm, fsec, _)| (tm, fsec)),
        None => ts2tm(ts),
    };
    let (tm1, fsec1) = fields(a)?;
    let (tm2, fsec2) = fields(b)?;
    let neg = a < b;
    let s = |v: i64| if neg { -v } else { v };
    let mut fsec = s(fsec1 - fsec2);
    let mut sec = s(i64::from(tm1.sec - tm2.sec));
    let mut min = s(i64::from(tm1.min - tm2.min));
    let mut hour = s(i64::from(tm1.hour - tm2.hour));
    let mut mday = s(i64::from(tm1.mday - tm2.mday));
    let mut mon = s(i64::from(tm1.mon - tm2.mon));
    let mut year = s(i64::from(tm1.year) - i64::from(tm2.year));
    carry(&mut fsec, &mut sec, USECS_PER_SEC);
    carry(&mut sec, &mut min, 60);
    carry(&mut min, &mut hour, 60);
    carry(&mut hour, &mut mday, 24);
    let basis = if neg { &tm1 } else { &tm2 };
    while mday < 0 {
        mday += i64::from(mdays(basis.year, basis.mon));
        mon -= 1;
    }
    carry(&mut mon, &mut year, 12);
    let months = s(year) * 12 + s(mon);
    let months = i32::try_from(months).map_err(|_| iv_range())?;
    let micros = (s(hour) * 60 + s(min)) * 60 * USECS_PER_SEC + s(sec) * USECS_PER_SEC + s(fsec);
    Ok(Interval {
        months,
        days: s(mday) as i32,
        micros,
    })
}

/// Moves negative amounts of `low` into `high`, `per` at a time.
fn carry(low: &mut i64, high: &mut i64, per: i64) {
    if *low < 0 {
        let n = (-*low + per - 1) / per;
        *low += n * per;
        *high -= n;
    }
}

/// make_date: a negative year is BC.
pub fn make_date(year: i32, mon: i32, mday: i32) -> SqlResult<i32> {
    let (bc, y) = if year < 0 {
        (true, year.wrapping_neg())
    } else {
        (false, year)
    };
    let range = |y: i32| {
        err(
            "22008",
            format!("date field value out of range: {y}-{mon:02}-{mday:02}"),
        )
    };
    if y <= 0 {
        return Err(range(y));
    }
    let y = if bc { -(y - 1) } else { y };
    if !(1..=12).contains(&mon) || !(1..=31).contains(&mday) || mday > mdays(y, mon) {
        return Err(range(y));
    }
    let out = || {
        err(
            "22008",
            format!("date out of range: {y}-{mon:02}-{mday:02}"),
        )
    };
    if !valid_julian(y, mon, mday) {
        return Err(out());
    }
    let tm = Tm {
        year: y,
        mon,
        mday,
        ..Tm::default()
    };
    let d = jd(&tm) - POSTGRES_EPOCH_JDATE;
    if !(-POSTGRES_EPOCH_JDATE..2_147_483_494 - POSTGRES_EPOCH_JDATE).contains(&d) {
        return Err(out());
    }
    Ok(d as i32)
}

/// float_time_overflows.
fn float_time_overflows(hour: i32, min: i32, sec: f64) -> bool {
    if !(0..=24).contains(&hour) || !(0..60).contains(&min) {
        return true;
    }
    let us = (sec * 1e6).round_ties_even();
    if us.is_nan() || !(0.0..=60e6).contains(&us) {
        return true;
    }
    ((i64::from(hour) * 60 + i64::from(min)) * 60 * USECS_PER_SEC) as f64 + us
        > USECS_PER_DAY as f64
}

fn time_range(hour: i32, min: i32, sec: f64) -> crate::SqlError {
    err(
        "22008",
        format!(
            "time field value out of range: {hour}:{min:02}:{}",
            fmt_g(sec, 2)
        ),
    )
}

/// make_time.
pub fn make_time(hour: i32, min: i32, sec: f64) -> SqlResult<i64> {
    if float_time_overflows(hour, min, sec) {
        return Err(time_range(hour, min, sec));
    }
    Ok((i64::from(hour) * 60 + i64::from(min)) * 60 * USECS_PER_SEC
        + (sec * 1e6).round_ties_even() as i64)
}

/// make_timestamp_internal: a negative year is BC; errors show the fields
/// as given.
fn make_ts(year: i32, mon: i32, mday: i32, hour: i32, min: i32, sec: f64) -> SqlResult<i64> {
    // ValidateDate with BC: -INT_MIN stays negative and is refused.
    let positive = if year < 0 { year.wrapping_neg() } else { year };
    let y = if year < 0 {
        1i32.wrapping_sub(positive)
    } else {
        year
    };
    if positive <= 0
        || !(1..=12).contains(&mon)
        || !(1..=31).contains(&mday)
        || mday > mdays(y, mon)
    {
        return Err(err(
            "22008",
            format!("date field value out of range: {year}-{mon:02}-{mday:02}"),
        ));
    }
    if !valid_julian(y, mon, mday) {
        return Err(err(
            "22008",
            format!("date out of range: {year}-{mon:02}-{mday:02}"),
        ));
    }
    let tm = Tm {
        year: y,
        mon,
        mday,
        ..Tm::default()
    };
    let date = jd(&tm) - POSTGRES_EPOCH_JDATE;
    if float_time_overflows(hour, min, sec) {
        return Err(time_range(hour, min, sec));
    }
    let time = (i64::from(hour) * 60 + i64::from(min)) * 60 * USECS_PER_SEC
        + (sec * 1e6).round_ties_even() as i64;
    let r = date
        .checked_mul(USECS_PER_DAY)
        .and_then(|v| v.checked_add(time));
    let range = || {
        err(
            "22008",
            format!(
                "timestamp out of range: {year}-{mon:02}-{mday:02} {hour}:{min:02}:{}",
                fmt_g(sec, 2)
            ),
        )
    };
    match r {
        Some(r) if !((r < 0 && date > 0) || (r > 0 && date < -1)) && valid_ts(r) => Ok(r),
        _ => Err(range()),
    }
}

fn make_timestamp(v: &[Datum]) -> SqlResult<i64> {
    make_ts(
        int(&v[0]),
        int(&v[1]),
        int(&v[2]),
        int(&v[3]),
        int(&v[4]),
        float(&v[5]),
    )
}

/// make_timestamptz, in the session zone or the zone given (parse_sane_timezone).
fn make_timestamptz(v: &[Datum], st: &Settings) -> SqlResult<i64> {
    let ts = make_timestamp(v)?;
    let Some(zone) = v.get(6) else {
        return super::timestamp_to_timestamptz(ts, st);
    };
    let (tm, _) = ts2tm(ts)?;
    let west = sane_zone(&tm, text(zone))?;
    let r = ts + i64::from(west) * USECS_PER_SEC;
    if !valid_ts(r) {
        return Err(ts_range());
    }
    Ok(r)
}

/// parse_sane_timezone: a numeric zone, an abbreviation or a zone name; the
/// offset (seconds west) at local fields `tm`.
fn sane_zone(tm: &Tm, name: &str) -> SqlResult<i32> {
    if name.starts_with(|c: char| c.is_ascii_digit()) {
        let mut e = err(
            "22023",
            format!("invalid input syntax for type numeric time zone: \"{name}\""),
        );
        e.hint = Some("Numeric time zones must have \"-\" or \"+\" as first character.".into());
        return Err(e);
    }
    match decode_timezone(name) {
        Ok(west) => Ok(west),
        Err(DtErr::TzDispOverflow) => Err(err(
            "22023",
            format!("numeric time zone \"{name}\" out of range"),
        )),
        Err(DtErr::BadFormat) => Ok(match lookup_zone(name)? {
            ZoneSpec::Fixed(east) => -east,
            ZoneSpec::Dynamic(z, ab) => abbrev_west(tm, &z, &ab),
            ZoneSpec::Named(z) => west_of(tm, &z),
        }),
        Err(_) => Err(not_recognized(name)),
    }
}

/// DetermineTimeZoneAbbrevOffset: the abbreviation's offset (seconds west)
/// in `zone` at local fields `tm`, else the zone's.
fn abbrev_west(tm: &Tm, zone: &Zone, ab: &str) -> i32 {
    let west = west_of(tm, zone);
    let days = jd(tm) - 2_440_588;
    let local =
        days * 86_400 + (i64::from(tm.hour) * 60 + i64::from(tm.min)) * 60 + i64::from(tm.sec);
    zone.abbrev_west(ab, local + i64::from(west))
        .unwrap_or(west)
}

fn not_recognized(name: &str) -> crate::SqlError {
    err("22023", format!("time zone \"{name}\" not recognized"))
}

/// A zone named in a function's argument (datefn rule 5).
pub enum ZoneSpec {
    /// A fixed abbreviation: seconds east.
    Fixed(i32),
    /// A dynamic abbreviation: its zone and the abbreviation.
    Dynamic(Zone, String),
    Named(Zone),
}

impl ZoneSpec {
    /// The zone itself (pg_tzset_offset for a fixed abbreviation).
    pub fn zone(self) -> Zone {
        match self {
            ZoneSpec::Fixed(east) => Zone::fixed(east).unwrap_or_else(Zone::utc),
            ZoneSpec::Dynamic(z, _) | ZoneSpec::Named(z) => z,
        }
    }
}

/// DecodeTimezoneAbbrev, then pg_tzset.
pub fn lookup_zone(name: &str) -> SqlResult<ZoneSpec> {
    let low = name.to_ascii_lowercase();
    match abbrev(&low) {
        Some(Abbrev::Fixed(east, _)) => Ok(ZoneSpec::Fixed(east)),
        Some(Abbrev::Dynamic(z)) => Zone::named(z)
            .map(|z| ZoneSpec::Dynamic(z, name.to_string()))
            .ok_or_else(|| not_recognized(name)),
        None => Zone::named(name)
            .map(ZoneSpec::Named)
            .ok_or_else(|| not_recognized(name)),
    }
}

/// make_interval(years, months, weeks, days, hours, mins, secs), missing
/// arguments 0.
fn make_interval(v: &[Datum]) -> SqlResult<Interval> {
    let i = |n: usize| v.get(n).map_or(0, int);
    let secs = v.get(6).map_or(0.0, float);
    if !secs.is_finite() {
        return Err(iv_range());
    }
    // PostgreSQL 15 lets the months, days and time wrap.
    let months = i(0).wrapping_mul(12).wrapping_add(i(1));
    let days = i(2).wrapping_mul(7).wrapping_add(i(3));
    let secs = super::c_i64((secs * 1e6).round_ties_even());
    let micros = i64::from(i(4))
        .wrapping_mul(3_600 * USECS_PER_SEC)
        .wrapping_add(i64::from(i(5)) * 60 * USECS_PER_SEC)
        .wrapping_add(secs);
    Ok(Interval {
        months,
        days,
        micros,
    })
}

/// to_timestamp(double precision): Unix seconds.
pub fn to_timestamp(secs: f64) -> SqlResult<i64> {
    if secs.is_nan() {
        return Err(err("22008", "timestamp cannot be NaN"));
    }
    if secs.is_infinite() {
        return Ok(if secs < 0.0 { i64::MIN } else { i64::MAX });
    }
    let range = || {
        err(
            "22008",
            format!("timestamp out of range: \"{}\"", fmt_g(secs, 0)),
        )
    };
    let lo = 86_400.0 * (0.0 - 2_440_588.0);
    let hi = 86_400.0 * (109_203_528.0 - 2_440_588.0);
    if secs < lo || secs >= hi {
        return Err(range());
    }
    let us = ((secs - EPOCH_DIFF_SECS as f64) * 1e6).round_ties_even() as i64;
    if !valid_ts(us) {
        return Err(range());
    }
    Ok(us)
}

/// date_bin(stride, source, origin), for timestamps and timestamptzs alike.
pub fn date_bin(stride: Interval, ts: i64, origin: i64) -> SqlResult<i64> {
    if !finite(ts) {
        return Ok(ts);
    }
    if !finite(origin) {
        return Err(err("22008", "origin out of range"));
    }
    if stride.months != 0 {
        return Err(err(
            "0A000",
            "timestamps cannot be binned into intervals containing months or years",
        ));
    }
    let stride_us = i64::from(stride.days)
        .checked_mul(USECS_PER_DAY)
        .and_then(|s| s.checked_add(stride.micros))
        .ok_or_else(iv_range)?;
    if stride_us <= 0 {
        return Err(err("22008", "stride must be greater than zero"));
    }
    let diff = ts.checked_sub(origin).ok_or_else(iv_range)?;
    let modulo = diff % stride_us;
    let mut r = origin + (diff - modulo);
    if modulo < 0 {
        r = r.checked_sub(stride_us).ok_or_else(ts_range)?;
    }
    if !valid_ts(r) {
        return Err(ts_range());
    }
    Ok(r)
}

/// timezone(zone, x): `x AT TIME ZONE zone`. A timestamptz becomes the local
/// timestamp in the zone; a timestamp, taken as local time there, a
/// timestamptz.
pub fn timezone(zone: &Datum, x: &Datum, st: &Settings) -> SqlResult<Datum> {
    let (ts, to_local) = match x {
        Datum::Timestamp(ts) => (*ts, false),
        Datum::Date(d) => (date_to_timestamptz(*d, st)?, true),
        other => (tstamp(other), true),
    };
    let wrap = |v: i64| {
        if to_local {
            Datum::Timestamp(v)
        } else {
            Datum::TimestampTz(v)
        }
    };
    if !finite(ts) {
        return Ok(wrap(ts));
    }
    let r = match zone {
        Datum::Interval(iv) => {
            if iv.months != 0 || iv.days != 0 {
                return Err(err(
                    "22023",
                    format!(
                        "interval time zone \"{}\" must not include months or days",
                        format_interval(iv, st)
                    ),
                ));
            }
            // PostgreSQL keeps the seconds in an int: they wrap.
            let east = i64::from((iv.micros / USECS_PER_SEC) as i32);
            let sign = if to_local { 1 } else { -1 };
            ts.checked_add(sign * east * USECS_PER_SEC)
                .ok_or_else(ts_range)?
        }
        z if to_local => tz_to_local(ts, text(z))?,
        z => local_to_tz(ts, text(z))?,
    };
    if !valid_ts(r) {
        return Err(ts_range());
    }
    Ok(wrap(r))
}

/// timestamptz_zone.
fn tz_to_local(ts: i64, name: &str) -> SqlResult<i64> {
    Ok(match lookup_zone(name)? {
        ZoneSpec::Fixed(east) => ts + i64::from(east) * USECS_PER_SEC,
        ZoneSpec::Dynamic(z, ab) => {
            let unix = ts.div_euclid(USECS_PER_SEC) + EPOCH_DIFF_SECS;
            let west = z
                .abbrev_west(&ab, unix)
                .unwrap_or_else(|| -z.at_utc(unix).0);
            ts - i64::from(west) * USECS_PER_SEC
        }
        ZoneSpec::Named(z) => {
            let (tm, fsec, _) = ts2tm_zone(ts, &z)?;
            tm2ts(&tm, fsec, None)?
        }
    })
}

/// timestamp_zone.
fn local_to_tz(ts: i64, name: &str) -> SqlResult<i64> {
    Ok(match lookup_zone(name)? {
        ZoneSpec::Fixed(east) => ts - i64::from(east) * USECS_PER_SEC,
        ZoneSpec::Dynamic(z, ab) => {
            let (tm, _) = ts2tm(ts)?;
            ts + i64::from(abbrev_west(&tm, &z, &ab)) * USECS_PER_SEC
        }
        ZoneSpec::Named(z) => {
            let (tm, fsec) = ts2tm(ts)?;
            tm2ts(&tm, fsec, Some(west_of(&tm, &z)))?
        }
    })
}

/// overlaps_timestamp (and overlaps_time): `vals` are start, end-or-interval,
/// start, end-or-interval, any of them NULL.
pub(crate) fn overlaps(vals: &[Datum], st: &Settings) -> SqlResult<Datum> {
    let end = |s: &Datum, e: &Datum| -> SqlResult<Option<i64>> {
        Ok(match (s, e) {
            (_, Datum::Null) => None,
            (Datum::Null, Datum::Interval(_)) => None,
            (Datum::Time(t), Datum::Interval(iv)) => Some(super::time_pl_interval(*t, *iv)),
            (Datum::Timestamp(t), Datum::Interval(iv)) => Some(timestamp_pl_interval(*t, *iv)?),
            (s, Datum::Interval(iv)) => Some(timestamptz_pl_interval(tstamp(s), *iv, st)?),
            (_, e) => Some(tstamp(e)),
        })
    };
    let start = |s: &Datum| (!matches!(s, Datum::Null)).then(|| tstamp(s));
    let (e1, e2) = (end(&vals[0], &vals[1])?, end(&vals[2], &vals[3])?);
    let r = overlaps_values(start(&vals[0]), e1, start(&vals[2]), e2);
    Ok(r.map_or(Datum::Null, Datum::Bool))
}

/// Orders a period's bounds, a NULL start taking the end's place.
fn period(s: Option<i64>, e: Option<i64>) -> Option<(i64, Option<i64>)> {
    match (s, e) {
        (None, None) => None,
        (None, Some(e)) => Some((e, None)),
        (Some(s), Some(e)) if s > e => Some((e, Some(s))),
        (Some(s), e) => Some((s, e)),
    }
}

/// The SQL standard's OVERLAPS with its NULL rules (overlaps_timestamp).
fn overlaps_values(
    s1: Option<i64>,
    e1: Option<i64>,
    s2: Option<i64>,
    e2: Option<i64>,
) -> Option<bool> {
    let (ts1, te1) = period(s1, e1)?;
    let (ts2, te2) = period(s2, e2)?;
    use std::cmp::Ordering::*;
    match ts1.cmp(&ts2) {
        Greater => {
            if ts1 < te2? {
                return Some(true);
            }
            te1.map(|_| false)
        }
        Less => {
            if ts2 < te1? {
                return Some(true);
            }
            te2.map(|_| false)
        }
        Equal => (te1.is_some() && te2.is_some()).then_some(true),
    }
}
