//! date_part / extract and date_trunc (datefn rule 4), as timestamp.c's
//! timestamp_part_common, timestamptz_part_common, extract_date,
//! time_part_common, interval_part_common and the *_trunc functions.

use super::{err, finite, jd, set_jd, tm2ts, ts2tm, ts2tm_zone, west_of, EPOCH_DIFF_SECS};
use crate::datetime::decode::{date2j, j2date, j2day, POSTGRES_EPOCH_JDATE};
use crate::datetime::tables::*;
use crate::datetime::{Settings, Tm, Zone, USECS_PER_DAY};
use crate::{Datum, SqlError, SqlResult};
use strata_types::{Float, Interval, Numeric};

const TS_NAME: &str = "timestamp without time zone";
const TZ_NAME: &str = "timestamp with time zone";
const TIME_NAME: &str = "time without time zone";

/// downcase_truncate_identifier: ASCII lower case, at most 63 bytes.
fn lower_units(s: &str) -> String {
    let mut s = s.to_ascii_lowercase();
    if s.len() > 63 {
        let mut n = 63;
        while !s.is_char_boundary(n) {
            n -= 1;
        }
        s.truncate(n);
    }
    s
}

/// DecodeUnits, then DecodeSpecial: (type, value).
fn decode_units(low: &str, special: bool) -> (i32, i32) {
    if let Some(tv) = deltatk(low) {
        return tv;
    }
    if special {
        if let Some(tv) = datetk(low) {
            return tv;
        }
    }
    (UNKNOWN_FIELD, 0)
}

pub(crate) fn not_supported(low: &str, ty: &str) -> SqlError {
    err(
        "0A000",
        format!("unit \"{low}\" not supported for type {ty}"),
    )
}

pub(crate) fn not_recognized(low: &str, ty: &str) -> SqlError {
    err(
        "22023",
        format!("unit \"{low}\" not recognized for type {ty}"),
    )
}

/// A part's value: an integer; an exact value over 10^scale with the double
/// date_part computes; a Julian day and the microseconds into it (with
/// date_part's double); an infinity (negative if true).
enum Part {
    Int(i64),
    Exact(i128, u16, f64),
    Julian(i64, i64, f64),
    Inf(bool),
    /// Microseconds to divide by 10^6 as numeric_div does, and the double.
    Div(i128, f64),
    Null,
}

/// An exact value whose double is the value over 10^scale.
fn scaled(v: i128, s: u16) -> Part {
    Part::Exact(v, s, v as f64 / 10f64.powi(i32::from(s)))
}

fn to_datum(p: Part, numeric: bool) -> SqlResult<Datum> {
    let num_err = crate::numeric::num_err;
    Ok(match (p, numeric) {
        (Part::Null, _) => Datum::Null,
        (Part::Int(v), true) => Datum::Numeric(Numeric::from_i64(v)),
        (Part::Int(v), false) => Datum::Float8(Float::new(v as f64)),
        (Part::Exact(v, s, _), true) => Datum::Numeric(Numeric::from_i128_scaled(v, s)),
        (Part::Div(v, _), true) => Datum::Numeric(
            Numeric::from_i128(v)
                .div(&Numeric::from_i64(1_000_000))
                .map_err(num_err)?
                .round(6),
        ),
        (Part::Exact(_, _, f) | Part::Julian(_, _, f) | Part::Div(_, f), false) => {
            Datum::Float8(Float::new(f))
        }
        (Part::Inf(neg), true) => Datum::Numeric(if neg {
            Numeric::NEG_INFINITY
        } else {
            Numeric::INFINITY
        }),
        (Part::Inf(neg), false) => Datum::Float8(Float::new(if neg {
            f64::NEG_INFINITY
        } else {
            f64::INFINITY
        })),
        (Part::Julian(day, us, _), true) => {
            let frac = Numeric::from_i64(us)
                .div(&Numeric::from_i64(USECS_PER_DAY))
                .map_err(num_err)?;
            Datum::Numeric(Numeric::from_i64(day).add(&frac).map_err(num_err)?)
        }
    })
}

/// date_part(units, x) (`numeric`: false) and extract(units, x) (true).
pub fn date_part(units: &str, x: &Datum, numeric: bool, st: &Settings) -> SqlResult<Datum> {
    let low = lower_units(units);
    let p = match x {
        Datum::Date(d) if numeric => date_part_date(&low, *d)?,
        Datum::Date(d) => ts_part(&low, super::date_to_timestamp(*d)?, None)?,
        Datum::Timestamp(ts) => ts_part(&low, *ts, None)?,
        Datum::TimestampTz(ts) => ts_part(&low, *ts, Some(&st.zone))?,
        Datum::Time(t) => time_part(&low, *t)?,
        Datum::Interval(iv) => interval_part(&low, iv)?,
        _ => Part::Null,
    };
    to_datum(p, numeric)
}

/// NonFiniteTimestampTzPart.
fn non_finite_part(t: i32, v: i32, low: &str, neg: bool, ty: &str) -> SqlResult<Part> {
    if t != UNITS && t != RESERV {
        return Err(not_recognized(low, ty));
    }
    match v {
        DTK_MICROSEC | DTK_MILLISEC | DTK_SECOND | DTK_MINUTE | DTK_HOUR | DTK_DAY | DTK_MONTH
        | DTK_QUARTER | DTK_WEEK | DTK_DOW | DTK_ISODOW | DTK_DOY | DTK_TZ | DTK_TZ_MINUTE
        | DTK_TZ_HOUR => Ok(Part::Null),
        DTK_YEAR | DTK_DECADE | DTK_CENTURY | DTK_MILLENNIUM | DTK_JULIAN | DTK_ISOYEAR
        | DTK_EPOCH => Ok(Part::Inf(neg)),
        _ => Err(not_supported(low, ty)),
    }
}

/// timestamp_part_common / timestamptz_part_common (`zone` Some).
fn ts_part(low: &str, ts: i64, zone: Option<&Zone>) -> SqlResult<Part> {
    let ty = if zone.is_some() { TZ_NAME } else { TS_NAME };
    let (t, v) = decode_units(low, true);
    if !finite(ts) {
        return non_finite_part(t, v, low, ts == i64::MIN, ty);
    }
    if t == RESERV {
        if v != DTK_EPOCH {
            return Err(not_supported(low, ty));
        }
        let e = i128::from(ts) + i128::from(EPOCH_DIFF_SECS) * 1_000_000;
        return Ok(match i64::try_from(e) {
            Ok(_) => scaled(e, 6),
            // Beyond int64, numeric division (and date_part's double).
            Err(_) => Part::Div(e, (ts as f64 + (EPOCH_DIFF_SECS * 1_000_000) as f64) / 1e6),
        });
    }
    if t != UNITS {
        return Err(not_recognized(low, ty));
    }
    let (tm, fsec, east) = match zone {
        Some(z) => ts2tm_zone(ts, z)?,
        None => {
            let (tm, fsec) = ts2tm(ts)?;
            (tm, fsec, 0)
        }
    };
    if let Some(p) = common_part(v, &tm, fsec) {
        return Ok(p);
    }
    let east = i64::from(east);
    Ok(Part::Int(match v {
        DTK_TZ if zone.is_some() => east,
        DTK_TZ_MINUTE if zone.is_some() => east / 60 % 60,
        DTK_TZ_HOUR if zone.is_some() => east / 3600,
        DTK_JULIAN => {
            let day = jd(&tm);
            let secs = (i64::from(tm.hour) * 60 + i64::from(tm.min)) * 60 + i64::from(tm.sec);
            let f = day as f64 + (secs as f64 + fsec as f64 / 1e6) / 86_400.0;
            return Ok(Part::Julian(day, secs * 1_000_000 + fsec, f));
        }
        _ => return Err(not_supported(low, ty)),
    }))
}

/// A year shown with BC as negative (no year 0).
fn bc(year: i64) -> i64 {
    if year > 0 {
        year
    } else {
        year - 1
    }
}

fn decade(y: i64) -> i64 {
    if y >= 0 {
        y / 10
    } else {
        -((8 - (y - 1)) / 10)
    }
}

fn century(y: i64) -> i64 {
    if y > 0 {
        (y + 99) / 100
    } else {
        -((99 - (y - 1)) / 100)
    }
}

fn millennium(y: i64) -> i64 {
    if y > 0 {
        (y + 999) / 1000
    } else {
        -((999 - (y - 1)) / 1000)
    }
}

/// The fields timestamps and timestamptzs share.
fn common_part(v: i32, tm: &Tm, fsec: i64) -> Option<Part> {
    let y = i64::from(tm.year);
    let secs_us = i64::from(tm.sec) * 1_000_000 + fsec;
    Some(Part::Int(match v {
        DTK_MICROSEC => secs_us,
        DTK_MILLISEC | DTK_SECOND => return Some(seconds(v, tm.sec, fsec)),
        DTK_MINUTE => i64::from(tm.min),
        DTK_HOUR => i64::from(tm.hour),
        _ => {
            return date_fields(v, tm.year, tm.mon, tm.mday)
                .map(Part::Int)
                .or(match v {
                    DTK_DECADE => Some(Part::Int(decade(y))),
                    _ => None,
                })
        }
    }))
}

/// Seconds (scale 6) or milliseconds (scale 3), with date_part's doubles.
fn seconds(v: i32, sec: i32, fsec: i64) -> Part {
    let exact = i128::from(sec) * 1_000_000 + i128::from(fsec);
    if v == DTK_MILLISEC {
        Part::Exact(exact, 3, f64::from(sec) * 1000.0 + fsec as f64 / 1000.0)
    } else {
        Part::Exact(exact, 6, f64::from(sec) + fsec as f64 / 1_000_000.0)
    }
}

/// The date fields of a date or timestamp.
fn date_fields(v: i32, year: i32, mon: i32, mday: i32) -> Option<i64> {
    let y = i64::from(year);
    let j = date2j(y, i64::from(mon), i64::from(mday));
    Some(match v {
        DTK_DAY => i64::from(mday),
        DTK_MONTH => i64::from(mon),
        DTK_QUARTER => i64::from((mon - 1) / 3 + 1),
        DTK_WEEK => i64::from(date2isoweek(year, mon, mday)),
        DTK_YEAR => bc(y),
        DTK_DECADE => decade(y),
        DTK_CENTURY => century(y),
        DTK_MILLENNIUM => millennium(y),
        DTK_ISOYEAR => {
            let iy = i64::from(date2isoyear(year, mon, mday));
            if iy <= 0 {
                iy - 1
            } else {
                iy
            }
        }
        DTK_DOW => i64::from(j2day(j)),
        DTK_ISODOW => i64::from(match j2day(j) {
            0 => 7,
            d => d,
        }),
        DTK_DOY => j - date2j(y, 1, 1) + 1,
        _ => return None,
    })
}

/// extract_date: numeric fields of a date.
fn date_part_date(low: &str, d: i32) -> SqlResult<Part> {
    let (t, v) = decode_units(low, true);
    if (d == i32::MIN || d == i32::MAX) && (t == UNITS || t == RESERV) {
        return match v {
            DTK_DAY | DTK_MONTH | DTK_QUARTER | DTK_WEEK | DTK_DOW | DTK_ISODOW | DTK_DOY => {
                Ok(Part::Null)
            }
            DTK_YEAR | DTK_DECADE | DTK_CENTURY | DTK_MILLENNIUM | DTK_JULIAN | DTK_ISOYEAR
            | DTK_EPOCH => Ok(Part::Inf(d == i32::MIN)),
            _ => Err(not_supported(low, "date")),
        };
    }
    let jday = i64::from(d) + POSTGRES_EPOCH_JDATE;
    if t == UNITS {
        if v == DTK_JULIAN {
            return Ok(Part::Int(jday));
        }
        let (y, m, dd) = j2date(jday);
        return date_fields(v, y, m, dd)
            .map(Part::Int)
            .ok_or_else(|| not_supported(low, "date"));
    }
    if t == RESERV {
        if v == DTK_EPOCH {
            return Ok(Part::Int((jday - 2_440_588) * 86_400));
        }
        return Err(not_supported(low, "date"));
    }
    Err(not_recognized(low, "date"))
}

/// time_part_common.
fn time_part(low: &str, t: i64) -> SqlResult<Part> {
    let (ty, v) = decode_units(low, true);
    if ty == UNITS {
        let secs_us = t % 60_000_000;
        let (sec, fsec) = ((secs_us / 1_000_000) as i32, secs_us % 1_000_000);
        return Ok(match v {
            DTK_MICROSEC => Part::Int(secs_us),
            DTK_MILLISEC | DTK_SECOND => seconds(v, sec, fsec),
            DTK_MINUTE => Part::Int(t / 60_000_000 % 60),
            DTK_HOUR => Part::Int(t / 3_600_000_000),
            _ => return Err(not_supported(low, TIME_NAME)),
        });
    }
    if ty == RESERV && v == DTK_EPOCH {
        return Ok(scaled(i128::from(t), 6));
    }
    Err(not_recognized(low, TIME_NAME))
}

/// interval_part_common.
fn interval_part(low: &str, iv: &Interval) -> SqlResult<Part> {
    let (ty, v) = decode_units(low, true);
    if ty == UNITS {
        let year = i64::from(iv.months / 12);
        let mon = i64::from(iv.months % 12);
        let secs_us = iv.micros % 60_000_000;
        let (sec, fsec) = ((secs_us / 1_000_000) as i32, secs_us % 1_000_000);
        return Ok(match v {
            DTK_MICROSEC => Part::Int(secs_us),
            DTK_MILLISEC | DTK_SECOND => seconds(v, sec, fsec),
            DTK_MINUTE => Part::Int(iv.micros / 60_000_000 % 60),
            DTK_HOUR => Part::Int(iv.micros / 3_600_000_000),
            DTK_DAY => Part::Int(i64::from(iv.days)),
            DTK_MONTH => Part::Int(mon),
            DTK_QUARTER => Part::Int(mon / 3 + 1),
            DTK_YEAR => Part::Int(year),
            DTK_DECADE => Part::Int(year / 10),
            DTK_CENTURY => Part::Int(year / 100),
            DTK_MILLENNIUM => Part::Int(year / 1000),
            _ => return Err(not_supported(low, "interval")),
        });
    }
    if ty == RESERV && v == DTK_EPOCH {
        return Ok(interval_epoch(iv));
    }
    Err(not_recognized(low, "interval"))
}

/// An interval's epoch: a year as 365.25 days, a month as 30 (date_part's
/// double summed as PostgreSQL sums it).
fn interval_epoch(iv: &Interval) -> Part {
    let secs = 31_557_600 * i128::from(iv.months / 12)
        + 2_592_000 * i128::from(iv.months % 12)
        + 86_400 * i128::from(iv.days);
    let mut f = iv.micros as f64 / 1e6;
    f += 365.25 * 86_400.0 * f64::from(iv.months / 12);
    f += 30.0 * 86_400.0 * f64::from(iv.months % 12);
    f += 86_400.0 * f64::from(iv.days);
    Part::Exact(secs * 1_000_000 + i128::from(iv.micros), 6, f)
}

/// date2isoweek.
pub(crate) fn date2isoweek(year: i32, mon: i32, mday: i32) -> i32 {
    let y = i64::from(year);
    let dayn = date2j(y, i64::from(mon), i64::from(mday));
    let mut day4 = date2j(y, 1, 4);
    let mut day0 = i64::from(j2day(day4 - 1));
    if dayn < day4 - day0 {
        day4 = date2j(y - 1, 1, 4);
        day0 = i64::from(j2day(day4 - 1));
    }
    let mut result = (dayn - (day4 - day0)) as f64 / 7.0 + 1.0;
    if result >= 52.0 {
        day4 = date2j(y + 1, 1, 4);
        day0 = i64::from(j2day(day4 - 1));
        if dayn >= day4 - day0 {
            result = (dayn - (day4 - day0)) as f64 / 7.0 + 1.0;
        }
    }
    result as i32
}

/// date2isoyear.
pub(crate) fn date2isoyear(year: i32, mon: i32, mday: i32) -> i32 {
    let mut y = i64::from(year);
    let dayn = date2j(y, i64::from(mon), i64::from(mday));
    let mut day4 = date2j(y, 1, 4);
    let mut day0 = i64::from(j2day(day4 - 1));
    if dayn < day4 - day0 {
        day4 = date2j(y - 1, 1, 4);
        day0 = i64::from(j2day(day4 - 1));
        y -= 1;
    }
    let result = (dayn - (day4 - day0)) as f64 / 7.0 + 1.0;
    if result >= 52.0 {
        day4 = date2j(y + 1, 1, 4);
        day0 = i64::from(j2day(day4 - 1));
        if dayn >= day4 - day0 {
            y += 1;
        }
    }
    y as i32
}

/// isoweek2j: the Julian day of an ISO week's Monday.
fn isoweek2j(year: i32, week: i32) -> i64 {
    let day4 = date2j(i64::from(year), 1, 4);
    let day0 = i64::from(j2day(day4 - 1));
    (i64::from(week) - 1) * 7 + (day4 - day0)
}

/// date_trunc(units, x) for a timestamp, timestamptz (session zone) or
/// interval.
pub fn date_trunc(units: &str, x: &Datum, st: &Settings) -> SqlResult<Datum> {
    Ok(match x {
        Datum::Timestamp(ts) => Datum::Timestamp(timestamp_trunc(units, *ts)?),
        Datum::TimestampTz(ts) => Datum::TimestampTz(timestamptz_trunc(units, *ts, &st.zone)?),
        Datum::Date(d) => {
            let ts = super::date_to_timestamptz(*d, st)?;
            Datum::TimestampTz(timestamptz_trunc(units, ts, &st.zone)?)
        }
        Datum::Interval(iv) => Datum::Interval(interval_trunc(units, iv)?),
        _ => Datum::Null,
    })
}

/// Truncates fields to `v`'s unit; false if the unit is not one date_trunc
/// takes. Day and longer units clear the hour.
fn trunc_fields(v: i32, tm: &mut Tm, fsec: &mut i64) -> bool {
    let y = tm.year;
    match v {
        DTK_WEEK => {
            let woy = date2isoweek(tm.year, tm.mon, tm.mday);
            let mut year = tm.year;
            if woy >= 52 && tm.mon == 1 {
                year -= 1;
            }
            if woy <= 1 && tm.mon == 12 {
                year += 1;
            }
            set_jd(tm, isoweek2j(year, woy));
            (tm.hour, tm.min, tm.sec, *fsec) = (0, 0, 0, 0);
            return true;
        }
        DTK_MILLENNIUM => {
            tm.year = if y > 0 {
                (y + 999) / 1000 * 1000 - 999
            } else {
                -((999 - (y - 1)) / 1000) * 1000 + 1
            };
        }
        DTK_CENTURY => {
            tm.year = if y > 0 {
                (y + 99) / 100 * 100 - 99
            } else {
                -((99 - (y - 1)) / 100) * 100 + 1
            };
        }
        DTK_DECADE => {
            tm.year = if y > 0 {
                y / 10 * 10
            } else {
                -((8 - (y - 1)) / 10) * 10
            };
        }
        DTK_MILLISEC => {
            *fsec = *fsec / 1000 * 1000;
            return true;
        }
        DTK_MICROSEC => return true,
        DTK_YEAR | DTK_QUARTER | DTK_MONTH | DTK_DAY | DTK_HOUR | DTK_MINUTE | DTK_SECOND => {}
        _ => return false,
    }
    let rank = |u: i32| match u {
        DTK_MILLENNIUM | DTK_CENTURY | DTK_DECADE | DTK_YEAR => 7,
        DTK_QUARTER => 6,
        DTK_MONTH => 5,
        DTK_DAY => 4,
        DTK_HOUR => 3,
        DTK_MINUTE => 2,
        _ => 1,
    };
    let r = rank(v);
    if r >= 7 {
        tm.mon = 1;
    }
    if r >= 6 {
        tm.mon = 3 * ((tm.mon - 1) / 3) + 1;
    }
    if r >= 5 {
        tm.mday = 1;
    }
    if r >= 4 {
        tm.hour = 0;
    }
    if r >= 3 {
        tm.min = 0;
    }
    if r >= 2 {
        tm.sec = 0;
    }
    *fsec = 0;
    true
}

/// timestamp_trunc.
pub fn timestamp_trunc(units: &str, ts: i64) -> SqlResult<i64> {
    if !finite(ts) {
        return Ok(ts);
    }
    let low = lower_units(units);
    let (t, v) = decode_units(&low, false);
    if t != UNITS {
        return Err(not_recognized(&low, TS_NAME));
    }
    let (mut tm, mut fsec) = ts2tm(ts)?;
    if !trunc_fields(v, &mut tm, &mut fsec) {
        return Err(not_supported(&low, TS_NAME));
    }
    tm2ts(&tm, fsec, None)
}

/// timestamptz_trunc_internal: truncated in `zone`; a unit of a day or more
/// takes the zone's offset at the truncated local time.
pub fn timestamptz_trunc(units: &str, ts: i64, zone: &Zone) -> SqlResult<i64> {
    if !finite(ts) {
        return Ok(ts);
    }
    let low = lower_units(units);
    let (t, v) = decode_units(&low, false);
    if t != UNITS {
        return Err(not_recognized(&low, TZ_NAME));
    }
    let (mut tm, mut fsec, east) = ts2tm_zone(ts, zone)?;
    if !trunc_fields(v, &mut tm, &mut fsec) {
        return Err(not_supported(&low, TZ_NAME));
    }
    let redo = matches!(
        v,
        DTK_WEEK
            | DTK_MILLENNIUM
            | DTK_CENTURY
            | DTK_DECADE
            | DTK_YEAR
            | DTK_QUARTER
            | DTK_MONTH
            | DTK_DAY
    );
    let west = if redo { west_of(&tm, zone) } else { -east };
    tm2ts(&tm, fsec, Some(west))
}

/// interval_trunc.
fn interval_trunc(units: &str, iv: &Interval) -> SqlResult<Interval> {
    let low = lower_units(units);
    let (t, v) = decode_units(&low, false);
    if t != UNITS {
        return Err(not_recognized(&low, "interval"));
    }
    let (mut year, mut mon) = (iv.months / 12, iv.months % 12);
    let mut day = iv.days;
    let mut us = iv.micros;
    let (h, m, s) = (
        us / 3_600_000_000,
        us / 60_000_000 % 60,
        us / 1_000_000 % 60,
    );
    let frac = us % 1_000_000;
    let rank = match v {
        DTK_MILLENNIUM => 10,
        DTK_CENTURY => 9,
        DTK_DECADE => 8,
        DTK_YEAR => 7,
        DTK_QUARTER => 6,
        DTK_MONTH => 5,
        DTK_DAY => 4,
        DTK_HOUR => 3,
        DTK_MINUTE => 2,
        DTK_SECOND => 1,
        DTK_MILLISEC => 0,
        DTK_MICROSEC => -1,
        DTK_WEEK => return Err(interval_week(&low)),
        _ => return Err(not_supported(&low, "interval")),
    };
    match rank {
        10 => year = year / 1000 * 1000,
        9 => year = year / 100 * 100,
        8 => year = year / 10 * 10,
        6 => mon = 3 * (mon / 3),
        _ => {}
    }
    if rank >= 7 {
        mon = 0;
    }
    if rank >= 5 {
        day = 0;
    }
    us = match rank {
        r if r >= 4 => 0,
        3 => h * 3_600_000_000,
        2 => h * 3_600_000_000 + m * 60_000_000,
        1 => h * 3_600_000_000 + m * 60_000_000 + s * 1_000_000,
        0 => us - frac + frac / 1000 * 1000,
        _ => us,
    };
    Ok(Interval {
        months: year * 12 + mon,
        days: day,
        micros: us,
    })
}

/// date_trunc('week', interval): PostgreSQL 15 refuses it with a hint.
fn interval_week(low: &str) -> SqlError {
    let mut e = not_supported(low, "interval");
    e.detail = Some("Months usually have fractional weeks.".into());
    e
}
