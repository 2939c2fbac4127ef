//! Interval input: DecodeInterval and DecodeISO8601Interval from PostgreSQL
//! 15's datetime.c, and interval_in. A typmod's field range (`INTERVAL DAY TO
//! HOUR`) decides how a bare number or an ambiguous `a:b` is read.

use super::decode::{
    parse_error, parse_fields, parse_fraction, strtod, strtoint, strtol, DtErr, DtResult, Field,
};
use super::tables::*;
use super::typmod::IntervalRange;
use super::{IntervalStyle, Settings, USECS_PER_DAY, USECS_PER_SEC};
use crate::{SqlError, SqlResult};
use strata_types::Interval;

const USECS_PER_HOUR: i64 = 3_600_000_000;
const USECS_PER_MINUTE: i64 = 60_000_000;

/// PostgreSQL's `struct pg_itm_in`.
#[derive(Default, Debug)]
struct ItmIn {
    usec: i64,
    mday: i32,
    mon: i32,
    year: i32,
}

type Adj = Result<(), DtErr>;

impl ItmIn {
    /// AdjustFractMicroseconds.
    fn fract_usec(&mut self, frac: f64, scale: i64) -> Adj {
        if frac == 0.0 {
            return Ok(());
        }
        let f = frac * scale as f64;
        let mut usec = f as i64;
        let rest = f - usec as f64;
        if rest > 0.5 {
            usec += 1;
        } else if rest < -0.5 {
            usec -= 1;
        }
        self.usec = self.usec.checked_add(usec).ok_or(DtErr::FieldOverflow)?;
        Ok(())
    }
    /// AdjustFractDays.
    fn fract_days(&mut self, frac: f64, scale: i32) -> Adj {
        if frac == 0.0 {
            return Ok(());
        }
        let f = frac * f64::from(scale);
        let extra = f as i32;
        self.mday = self.mday.checked_add(extra).ok_or(DtErr::FieldOverflow)?;
        self.fract_usec(f - f64::from(extra), USECS_PER_DAY)
    }
    /// AdjustFractYears.
    fn fract_years(&mut self, frac: f64, scale: i32) -> Adj {
        let extra = (frac * f64::from(scale) * 12.0).round_ties_even() as i32;
        self.mon = self.mon.checked_add(extra).ok_or(DtErr::FieldOverflow)?;
        Ok(())
    }
    /// AdjustMicroseconds.
    fn micros(&mut self, val: i64, fval: f64, scale: i64) -> Adj {
        let usec = val.checked_mul(scale).ok_or(DtErr::FieldOverflow)?;
        self.usec = self.usec.checked_add(usec).ok_or(DtErr::FieldOverflow)?;
        self.fract_usec(fval, scale)
    }
    /// AdjustDays.
    fn days(&mut self, val: i64, scale: i32) -> Adj {
        let v = i32::try_from(val).map_err(|_| DtErr::FieldOverflow)?;
        let d = v.checked_mul(scale).ok_or(DtErr::FieldOverflow)?;
        self.mday = self.mday.checked_add(d).ok_or(DtErr::FieldOverflow)?;
        Ok(())
    }
    /// AdjustMonths.
    fn months(&mut self, val: i64) -> Adj {
        let v = i32::try_from(val).map_err(|_| DtErr::FieldOverflow)?;
        self.mon = self.mon.checked_add(v).ok_or(DtErr::FieldOverflow)?;
        Ok(())
    }
    /// AdjustYears.
    fn years(&mut self, val: i64, scale: i32) -> Adj {
        let v = i32::try_from(val).map_err(|_| DtErr::FieldOverflow)?;
        let y = v.checked_mul(scale).ok_or(DtErr::FieldOverflow)?;
        self.year = self.year.checked_add(y).ok_or(DtErr::FieldOverflow)?;
        Ok(())
    }
}

/// interval_in (no typmod): the full range.
pub(crate) fn interval_in(s: &str, st: &Settings) -> SqlResult<Interval> {
    interval_in_range(s, st, IntervalRange::Full)
}

/// interval_in's decoding with a typmod's field range (before
/// AdjustIntervalForTypmod): DecodeInterval, else DecodeISO8601Interval.
pub(crate) fn interval_in_range(
    s: &str,
    st: &Settings,
    range: IntervalRange,
) -> SqlResult<Interval> {
    let mut itm = ItmIn::default();
    let mut r = parse_fields(s).and_then(|f| decode_interval(&f, st, range, &mut itm));
    if matches!(r, Err(DtErr::BadFormat)) {
        itm = ItmIn::default();
        r = decode_iso8601(s, &mut itm);
    }
    match r {
        Ok(()) => {}
        Err(DtErr::FieldOverflow) => {
            return Err(parse_error(DtErr::IntervalOverflow, s, "interval"))
        }
        Err(e) => return Err(parse_error(e, s, "interval")),
    }
    let months = i64::from(itm.year) * 12 + i64::from(itm.mon);
    let months =
        i32::try_from(months).map_err(|_| SqlError::new("22008", "interval out of range"))?;
    Ok(Interval {
        months,
        days: itm.mday,
        micros: itm.usec,
    })
}

/// DecodeTimeForInterval: [-]hh:mm[:ss[.fff]] (or mm:ss.fff, and mm:ss in a
/// MINUTE TO SECOND range) as microseconds.
fn time_for_interval(s: &str, range: IntervalRange) -> DtResult<(i64, i32)> {
    let (hour, n, over) = strtol(s);
    if over {
        return Err(DtErr::FieldOverflow);
    }
    let Some(rest) = s[n..].strip_prefix(':') else {
        return Err(DtErr::BadFormat);
    };
    let (min, n, over) = strtoint(rest);
    if over {
        return Err(DtErr::FieldOverflow);
    }
    let rest = &rest[n..];
    let (mut h, mut mi, mut sec, mut fsec) = (hour, min, 0, 0i64);
    if rest.is_empty() {
        if range == IntervalRange::MinuteToSecond {
            if i32::try_from(hour).is_err() {
                return Err(DtErr::FieldOverflow);
            }
            (h, mi, sec) = (0, hour as i32, min);
        }
    } else if rest.starts_with('.') {
        fsec = super::decode::parse_fractional_second(rest)?;
        if i32::try_from(hour).is_err() {
            return Err(DtErr::FieldOverflow);
        }
        (h, mi, sec) = (0, hour as i32, min);
    } else if let Some(r) = rest.strip_prefix(':') {
        let (v, n, over) = strtoint(r);
        if over {
            return Err(DtErr::FieldOverflow);
        }
        sec = v;
        let r = &r[n..];
        if r.starts_with('.') {
            fsec = super::decode::parse_fractional_second(r)?;
        } else if !r.is_empty() {
            return Err(DtErr::BadFormat);
        }
    } else {
        return Err(DtErr::BadFormat);
    }
    if h < 0
        || !(0..60).contains(&mi)
        || !(0..=60).contains(&sec)
        || !(0..=USECS_PER_SEC).contains(&fsec)
    {
        return Err(DtErr::FieldOverflow);
    }
    let usec = h
        .checked_mul(USECS_PER_HOUR)
        .and_then(|u| u.checked_add(fsec))
        .and_then(|u| u.checked_add(i64::from(mi) * USECS_PER_MINUTE))
        .and_then(|u| u.checked_add(i64::from(sec) * USECS_PER_SEC))
        .ok_or(DtErr::FieldOverflow)?;
    Ok((usec, DTK_TIME_M))
}

/// DecodeInterval's state.
struct IvDec {
    range: IntervalRange,
    force_negative: bool,
    ty: i32,
    fmask: i32,
}

/// DecodeInterval, with the typmod's field range (`range`).
fn decode_interval(
    fields: &[Field],
    st: &Settings,
    range: IntervalRange,
    itm: &mut ItmIn,
) -> DtResult<()> {
    let mut d = IvDec {
        range,
        force_negative: false,
        ty: IGNORE_DTF,
        fmask: 0,
    };
    if st.interval == IntervalStyle::SqlStandard
        && fields.first().is_some_and(|f| f.text.starts_with('-'))
    {
        d.force_negative = !fields[1..].iter().any(|f| f.text.starts_with(['-', '+']));
    }
    let mut is_before = false;
    for f in fields.iter().rev() {
        let s = f.text.as_str();
        let tmask = match f.ftype {
            DTK_TIME => {
                let (usec, t) = time_for_interval(s, range)?;
                itm.usec = usec;
                if d.force_negative && itm.usec > 0 {
                    itm.usec = -itm.usec;
                }
                d.ty = DTK_DAY;
                t
            }
            DTK_TZ if s[1..].contains(':') && time_for_interval(&s[1..], range).is_ok() => {
                let (usec, t) = time_for_interval(&s[1..], range)?;
                itm.usec = if s.starts_with('-') { -usec } else { usec };
                if d.force_negative && itm.usec > 0 {
                    itm.usec = -itm.usec;
                }
                d.ty = DTK_DAY;
                t
            }
            DTK_TZ | DTK_DATE | DTK_NUMBER => d.number(s, itm)?,
            DTK_STRING | DTK_SPECIAL => match deltatk(s) {
                Some((IGNORE_DTF, _)) => continue,
                Some((UNITS, v)) => {
                    d.ty = v;
                    0
                }
                Some((AGO, _)) => {
                    is_before = true;
                    d.ty = 0;
                    0
                }
                _ => return Err(DtErr::BadFormat),
            },
            _ => return Err(DtErr::BadFormat),
        };
        if tmask & d.fmask != 0 {
            return Err(DtErr::BadFormat);
        }
        d.fmask |= tmask;
    }
    if d.fmask == 0 {
        return Err(DtErr::BadFormat);
    }
    if is_before {
        if itm.usec == i64::MIN
            || itm.mday == i32::MIN
            || itm.mon == i32::MIN
            || itm.year == i32::MIN
        {
            return Err(DtErr::FieldOverflow);
        }
        (itm.usec, itm.mday, itm.mon, itm.year) = (-itm.usec, -itm.mday, -itm.mon, -itm.year);
    }
    Ok(())
}

impl IvDec {
    /// A number, with the unit that followed it (or the one implied).
    fn number(&mut self, s: &str, itm: &mut ItmIn) -> DtResult<i32> {
        if self.ty == IGNORE_DTF {
            // The typmod decides what the rightmost field is.
            self.ty = self.range.rightmost_unit();
        }
        let (mut val, n, over) = strtol(s);
        if over {
            return Err(DtErr::FieldOverflow);
        }
        let rest = &s[n..];
        let mut fval;
        if let Some(r) = rest.strip_prefix('-') {
            let (mut val2, n2, over2) = strtoint(r);
            if over2 || !(0..12).contains(&val2) {
                return Err(DtErr::FieldOverflow);
            }
            if n2 != r.len() {
                return Err(DtErr::BadFormat);
            }
            self.ty = DTK_MONTH;
            if s.starts_with('-') {
                val2 = -val2;
            }
            val = val
                .checked_mul(12)
                .and_then(|v| v.checked_add(i64::from(val2)))
                .ok_or(DtErr::FieldOverflow)?;
            fval = 0.0;
        } else if rest.starts_with('.') {
            fval = parse_fraction(rest)?;
            if s.starts_with('-') {
                fval = -fval;
            }
        } else if rest.is_empty() {
            fval = 0.0;
        } else {
            return Err(DtErr::BadFormat);
        }
        if self.force_negative {
            if val > 0 {
                val = -val;
            }
            if fval > 0.0 {
                fval = -fval;
            }
        }
        let tmask = match self.ty {
            DTK_MICROSEC => {
                itm.micros(val, fval, 1)?;
                m(MICROSECOND)
            }
            DTK_MILLISEC => {
                itm.micros(val, fval, 1000)?;
                m(MILLISECOND)
            }
            DTK_SECOND => {
                itm.micros(val, fval, USECS_PER_SEC)?;
                if fval == 0.0 {
                    m(SECOND)
                } else {
                    DTK_ALL_SECS_M
                }
            }
            DTK_MINUTE => {
                itm.micros(val, fval, USECS_PER_MINUTE)?;
                m(MINUTE)
            }
            DTK_HOUR => {
                itm.micros(val, fval, USECS_PER_HOUR)?;
                self.ty = DTK_DAY;
                m(HOUR)
            }
            DTK_DAY => {
                itm.days(val, 1)?;
                itm.fract_usec(fval, USECS_PER_DAY)?;
                m(DAY)
            }
            DTK_WEEK => {
                itm.days(val, 7)?;
                itm.fract_days(fval, 7)?;
                m(WEEK)
            }
            DTK_MONTH => {
                itm.months(val)?;
                itm.fract_days(fval, 30)?;
                m(MONTH)
            }
            DTK_YEAR => self.years(itm, val, fval, 1, YEAR)?,
            DTK_DECADE => self.years(itm, val, fval, 10, DECADE)?,
            DTK_CENTURY => self.years(itm, val, fval, 100, CENTURY)?,
            DTK_MILLENNIUM => self.years(itm, val, fval, 1000, MILLENNIUM)?,
            _ => return Err(DtErr::BadFormat),
        };
        Ok(tmask)
    }

    fn years(&self, itm: &mut ItmIn, val: i64, fval: f64, scale: i32, bit: i32) -> DtResult<i32> {
        itm.years(val, scale)?;
        itm.fract_years(fval, scale)?;
        Ok(m(bit))
    }
}

/// ParseISO8601Number: (integer part, fraction, bytes used).
fn iso_number(s: &str) -> DtResult<(i64, f64, usize)> {
    let first = s.as_bytes().first().copied().unwrap_or(0);
    if !(first.is_ascii_digit() || first == b'-' || first == b'.') {
        return Err(DtErr::BadFormat);
    }
    let Some((val, n)) = strtod(s) else {
        return Err(DtErr::BadFormat);
    };
    if val.is_nan() {
        return Err(DtErr::BadFormat);
    }
    if !(-1.0e15..=1.0e15).contains(&val) {
        return Err(DtErr::FieldOverflow);
    }
    let ipart = val as i64;
    Ok((ipart, val - ipart as f64, n))
}

/// ISO8601IntegerWidth.
fn int_width(s: &str) -> usize {
    let s = s.strip_prefix('-').unwrap_or(s);
    s.bytes().take_while(u8::is_ascii_digit).count()
}

/// DecodeISO8601Interval: "P1Y2M3DT4H5M6S" and the alternative formats
/// "P0001-02-03T04:05:06" / "P00010203T040506".
fn decode_iso8601(s: &str, itm: &mut ItmIn) -> DtResult<()> {
    if s.len() < 2 || !s.starts_with('P') {
        return Err(DtErr::BadFormat);
    }
    let mut pos = 1;
    let mut datepart = true;
    let mut havefield = false;
    while pos < s.len() {
        if s.as_bytes()[pos] == b'T' {
            datepart = false;
            havefield = false;
            pos += 1;
            continue;
        }
        let fieldstart = &s[pos..];
        let (val, fval, n) = iso_number(fieldstart)?;
        pos += n;
        let unit = s.as_bytes().get(pos).copied().unwrap_or(0);
        pos += 1;
        let done = if datepart {
            iso_date_unit(s, &mut pos, unit, (val, fval), fieldstart, havefield, itm)?
        } else {
            iso_time_unit(s, &mut pos, unit, (val, fval), fieldstart, havefield, itm)?
        };
        match done {
            IsoNext::Done => return Ok(()),
            IsoNext::TimePart => {
                datepart = false;
                havefield = false;
            }
            IsoNext::Field => havefield = true,
        }
    }
    Ok(())
}

enum IsoNext {
    Done,
    TimePart,
    Field,
}

/// A unit before the ISO interval's "T".
fn iso_date_unit(
    s: &str,
    pos: &mut usize,
    unit: u8,
    (val, fval): (i64, f64),
    fieldstart: &str,
    havefield: bool,
    itm: &mut ItmIn,
) -> DtResult<IsoNext> {
    match unit {
        b'Y' => {
            itm.years(val, 1)?;
            itm.fract_years(fval, 1)?;
        }
        b'M' => {
            itm.months(val)?;
            itm.fract_days(fval, 30)?;
        }
        b'W' => {
            itm.days(val, 7)?;
            itm.fract_days(fval, 7)?;
        }
        b'D' => {
            itm.days(val, 1)?;
            itm.fract_usec(fval, USECS_PER_DAY)?;
        }
        b'T' | 0 if int_width(fieldstart) == 8 && !havefield => {
            itm.years(val / 10000, 1)?;
            itm.months((val / 100) % 100)?;
            itm.days(val % 100, 1)?;
            itm.fract_usec(fval, USECS_PER_DAY)?;
            return Ok(if unit == 0 {
                IsoNext::Done
            } else {
                IsoNext::TimePart
            });
        }
        b'T' | 0 | b'-' => {
            if havefield {
                return Err(DtErr::BadFormat);
            }
            itm.years(val, 1)?;
            itm.fract_years(fval, 1)?;
            if unit == 0 {
                return Ok(IsoNext::Done);
            }
            if unit == b'T' {
                return Ok(IsoNext::TimePart);
            }
            let (v, f, n) = iso_number(&s[*pos..])?;
            *pos += n;
            itm.months(v)?;
            itm.fract_days(f, 30)?;
            match s.as_bytes().get(*pos) {
                None => return Ok(IsoNext::Done),
                Some(b'T') => {
                    *pos += 1;
                    return Ok(IsoNext::TimePart);
                }
                Some(b'-') => *pos += 1,
                Some(_) => return Err(DtErr::BadFormat),
            }
            let (v, f, n) = iso_number(&s[*pos..])?;
            *pos += n;
            itm.days(v, 1)?;
            itm.fract_usec(f, USECS_PER_DAY)?;
            return match s.as_bytes().get(*pos) {
                None => Ok(IsoNext::Done),
                Some(b'T') => {
                    *pos += 1;
                    Ok(IsoNext::TimePart)
                }
                Some(_) => Err(DtErr::BadFormat),
            };
        }
        _ => return Err(DtErr::BadFormat),
    }
    Ok(IsoNext::Field)
}

/// A unit after the ISO interval's "T".
fn iso_time_unit(
    s: &str,
    pos: &mut usize,
    unit: u8,
    (val, fval): (i64, f64),
    fieldstart: &str,
    havefield: bool,
    itm: &mut ItmIn,
) -> DtResult<IsoNext> {
    match unit {
        b'H' => itm.micros(val, fval, USECS_PER_HOUR)?,
        b'M' => itm.micros(val, fval, USECS_PER_MINUTE)?,
        b'S' => itm.micros(val, fval, USECS_PER_SEC)?,
        0 if int_width(fieldstart) == 6 && !havefield => {
            itm.micros(val / 10000, 0.0, USECS_PER_HOUR)?;
            itm.micros((val / 100) % 100, 0.0, USECS_PER_MINUTE)?;
            itm.micros(val % 100, 0.0, USECS_PER_SEC)?;
            itm.fract_usec(fval, 1)?;
            return Ok(IsoNext::Done);
        }
        0 | b':' => {
            if havefield {
                return Err(DtErr::BadFormat);
            }
            itm.micros(val, fval, USECS_PER_HOUR)?;
            if unit == 0 {
                return Ok(IsoNext::Done);
            }
            let (v, f, n) = iso_number(&s[*pos..])?;
            *pos += n;
            itm.micros(v, f, USECS_PER_MINUTE)?;
            match s.as_bytes().get(*pos) {
                None => return Ok(IsoNext::Done),
                Some(b':') => *pos += 1,
                Some(_) => return Err(DtErr::BadFormat),
            }
            let (v, f, n) = iso_number(&s[*pos..])?;
            *pos += n;
            itm.micros(v, f, USECS_PER_SEC)?;
            return match s.as_bytes().get(*pos) {
                None => Ok(IsoNext::Done),
                Some(_) => Err(DtErr::BadFormat),
            };
        }
        _ => return Err(DtErr::BadFormat),
    }
    Ok(IsoNext::Field)
}
