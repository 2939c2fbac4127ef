//! Date/time input: ParseDateTime, DecodeDateTime, DecodeTimeOnly and their
//! helpers from PostgreSQL's datetime.c, and the input functions of date.c and
//! timestamp.c.

use super::tables::*;
use super::{DateOrder, Tm};
use super::{Settings, Zone, EPOCH_DIFF_SECS, USECS_PER_DAY, USECS_PER_SEC};
use crate::{SqlError, SqlResult};

/// The reasons decoding fails (DTERR_*), or an error raised directly.
#[derive(Debug)]
pub(crate) enum DtErr {
    BadFormat,
    FieldOverflow,
    MdFieldOverflow,
    IntervalOverflow,
    TzDispOverflow,
    Raw(SqlError),
}

pub(crate) type DtResult<T> = Result<T, DtErr>;

/// DateTimeParseError.
pub(crate) fn parse_error(e: DtErr, s: &str, datatype: &str) -> SqlError {
    match e {
        DtErr::FieldOverflow => SqlError::new(
            "22008",
            format!("date/time field value out of range: \"{s}\""),
        ),
        DtErr::MdFieldOverflow => {
            let mut err = SqlError::new(
                "22008",
                format!("date/time field value out of range: \"{s}\""),
            );
            err.hint = Some("Perhaps you need a different \"datestyle\" setting.".into());
            err
        }
        DtErr::IntervalOverflow => SqlError::new(
            "22015",
            format!("interval field value out of range: \"{s}\""),
        ),
        DtErr::TzDispOverflow => SqlError::new(
            "22009",
            format!("time zone displacement out of range: \"{s}\""),
        ),
        DtErr::BadFormat => SqlError::new(
            "22007",
            format!("invalid input syntax for type {datatype}: \"{s}\""),
        ),
        DtErr::Raw(e) => e,
    }
}

/// One field of ParseDateTime's output.
#[derive(Clone, Debug)]
pub(crate) struct Field {
    pub text: String,
    pub ftype: i32,
}

const MAXDATEFIELDS: usize = 25;

/// C's isspace / ispunct in the C locale.
fn is_space(c: u8) -> bool {
    matches!(c, b' ' | b'\t' | b'\n' | b'\r' | 0x0b | 0x0c)
}

/// ParseDateTime: break the string into fields, lower-casing letters.
pub(crate) fn parse_fields(s: &str) -> DtResult<Vec<Field>> {
    let b = s.as_bytes();
    let at = |i: usize| b.get(i).copied().unwrap_or(0);
    let mut fields = Vec::new();
    let mut i = 0;
    while i < b.len() {
        let c = b[i];
        if is_space(c) {
            i += 1;
            continue;
        }
        let mut f = String::new();
        let push = |f: &mut String, c: u8| f.push(c.to_ascii_lowercase() as char);
        let ftype;
        if c.is_ascii_digit() {
            ftype = parse_digits(b, &mut i, &mut f);
        } else if c == b'.' {
            push(&mut f, c);
            i += 1;
            while at(i).is_ascii_digit() {
                push(&mut f, at(i));
                i += 1;
            }
            ftype = DTK_NUMBER;
        } else if c.is_ascii_alphabetic() {
            ftype = parse_alpha(b, &mut i, &mut f);
        } else if c == b'+' || c == b'-' {
            push(&mut f, c);
            i += 1;
            while is_space(at(i)) {
                i += 1;
            }
            if at(i).is_ascii_digit() {
                ftype = DTK_TZ;
                push(&mut f, at(i));
                i += 1;
                while at(i).is_ascii_digit() || matches!(at(i), b':' | b'.' | b'-') {
                    push(&mut f, at(i));
                    i += 1;
                }
            } else if at(i).is_ascii_alphabetic() {
                ftype = DTK_SPECIAL;
                while at(i).is_ascii_alphabetic() {
                    push(&mut f, at(i));
                    i += 1;
                }
            } else {
                return Err(DtErr::BadFormat);
            }
        } else if c.is_ascii_punctuation() {
            i += 1;
            continue;
        } else {
            return Err(DtErr::BadFormat);
        }
        fields.push(Field { text: f, ftype });
        if fields.len() > MAXDATEFIELDS {
            return Err(DtErr::BadFormat);
        }
    }
    Ok(fields)
}

/// ParseDateTime's field that starts with a digit: a number, a time, or a
/// date with embedded separators (maybe with a month name).
fn parse_digits(b: &[u8], i: &mut usize, f: &mut String) -> i32 {
    let at = |i: usize| b.get(i).copied().unwrap_or(0);
    let push = |f: &mut String, c: u8| f.push(c.to_ascii_lowercase() as char);
    let ftype;
    while at(*i).is_ascii_digit() {
        push(f, at(*i));
        *i += 1;
    }
    if at(*i) == b':' {
        ftype = DTK_TIME;
        push(f, b':');
        *i += 1;
        while at(*i).is_ascii_digit() || at(*i) == b':' || at(*i) == b'.' {
            push(f, at(*i));
            *i += 1;
        }
    } else if matches!(at(*i), b'-' | b'/' | b'.') {
        let delim = at(*i);
        push(f, delim);
        *i += 1;
        if at(*i).is_ascii_digit() {
            let mut t = if delim == b'.' { DTK_NUMBER } else { DTK_DATE };
            while at(*i).is_ascii_digit() {
                push(f, at(*i));
                *i += 1;
            }
            if at(*i) == delim {
                t = DTK_DATE;
                push(f, delim);
                *i += 1;
                while at(*i).is_ascii_digit() || at(*i) == delim {
                    push(f, at(*i));
                    *i += 1;
                }
            }
            ftype = t;
        } else {
            ftype = DTK_DATE;
            while at(*i).is_ascii_alphanumeric() || at(*i) == delim {
                push(f, at(*i));
                *i += 1;
            }
        }
    } else {
        ftype = DTK_NUMBER;
    }
    ftype
}

/// ParseDateTime's alphabetic field: a word, or a date or zone name with
/// embedded punctuation.
fn parse_alpha(b: &[u8], i: &mut usize, f: &mut String) -> i32 {
    let at = |i: usize| b.get(i).copied().unwrap_or(0);
    while at(*i).is_ascii_alphabetic() {
        f.push(at(*i).to_ascii_lowercase() as char);
        *i += 1;
    }
    let c = at(*i);
    let is_date = if matches!(c, b'-' | b'/' | b'.') {
        true
    } else if c == b'+' || c.is_ascii_digit() {
        datetk(f).is_none()
    } else {
        false
    };
    if !is_date {
        return DTK_STRING;
    }
    loop {
        f.push(at(*i).to_ascii_lowercase() as char);
        *i += 1;
        let c = at(*i);
        if !(matches!(c, b'+' | b'-' | b'/' | b'_' | b'.' | b':') || c.is_ascii_alphanumeric()) {
            break;
        }
    }
    DTK_DATE
}

/// C's strtol in base 10 over the start of `s`: (value, bytes used, overflow).
/// No digits: (0, 0, false).
pub(crate) fn strtol(s: &str) -> (i64, usize, bool) {
    let b = s.as_bytes();
    let mut i = 0;
    while i < b.len() && is_space(b[i]) {
        i += 1;
    }
    let neg = match b.get(i) {
        Some(b'-') => {
            i += 1;
            true
        }
        Some(b'+') => {
            i += 1;
            false
        }
        _ => false,
    };
    let start = i;
    let mut v: i128 = 0;
    while i < b.len() && b[i].is_ascii_digit() {
        if v < 1 << 80 {
            v = v * 10 + i128::from(b[i] - b'0');
        }
        i += 1;
    }
    if i == start {
        return (0, 0, false);
    }
    let v = if neg { -v } else { v };
    match i64::try_from(v) {
        Ok(x) => (x, i, false),
        Err(_) => (if neg { i64::MIN } else { i64::MAX }, i, true),
    }
}

/// strtoint: strtol limited to int.
pub(crate) fn strtoint(s: &str) -> (i32, usize, bool) {
    let (v, n, over) = strtol(s);
    match i32::try_from(v) {
        Ok(x) if !over => (x, n, false),
        _ => (if v < 0 { i32::MIN } else { i32::MAX }, n, true),
    }
}

/// C's atoi (strtol, wrapped to int).
fn atoi(s: &str) -> i32 {
    strtol(s).0 as i32
}

/// C's strtod over the start of `s`: (value, bytes used), None when nothing
/// parses. Decimal forms and inf/nan.
pub(crate) fn strtod(s: &str) -> Option<(f64, usize)> {
    let b = s.as_bytes();
    let mut i = 0;
    while i < b.len() && is_space(b[i]) {
        i += 1;
    }
    let start = i;
    if matches!(b.get(i), Some(b'+' | b'-')) {
        i += 1;
    }
    let rest = s[i..].to_ascii_lowercase();
    for word in ["infinity", "inf", "nan"] {
        if rest.starts_with(word) {
            let end = i + word.len();
            let neg = b[start] == b'-';
            let v = if word == "nan" {
                f64::NAN
            } else {
                f64::INFINITY
            };
            return Some((if neg { -v } else { v }, end));
        }
    }
    let mut digits = 0;
    while i < b.len() && b[i].is_ascii_digit() {
        i += 1;
        digits += 1;
    }
    if b.get(i) == Some(&b'.') {
        i += 1;
        while i < b.len() && b[i].is_ascii_digit() {
            i += 1;
            digits += 1;
        }
    }
    if digits == 0 {
        return None;
    }
    if matches!(b.get(i), Some(b'e' | b'E')) {
        let mut j = i + 1;
        if matches!(b.get(j), Some(b'+' | b'-')) {
            j += 1;
        }
        if b.get(j).is_some_and(u8::is_ascii_digit) {
            while j < b.len() && b[j].is_ascii_digit() {
                j += 1;
            }
            i = j;
        }
    }
    let text = &s[start..i];
    let text = text.strip_prefix('+').unwrap_or(text);
    let v: f64 = if text.starts_with('.') || text.starts_with("-.") {
        text.replacen('.', "0.", 1).parse().ok()?
    } else {
        text.parse().ok()?
    };
    Some((v, i))
}

/// ParseFraction: `s` starts with '.', and all of it must be the fraction.
pub(crate) fn parse_fraction(s: &str) -> DtResult<f64> {
    if s.len() == 1 {
        return Ok(0.0);
    }
    match strtod(s) {
        Some((v, n)) if n == s.len() && v.is_finite() => Ok(v),
        _ => Err(DtErr::BadFormat),
    }
}

/// ParseFractionalSecond.
pub(crate) fn parse_fractional_second(s: &str) -> DtResult<i64> {
    Ok((parse_fraction(s)? * 1_000_000.0).round_ties_even() as i64)
}

/// date2j: the Julian day of a (proleptic Gregorian) date.
pub(crate) fn date2j(year: i64, month: i64, day: i64) -> i64 {
    let (mut y, mut m) = (year, month);
    if m > 2 {
        m += 1;
        y += 4800;
    } else {
        m += 13;
        y += 4799;
    }
    let century = y / 100;
    let mut julian = y * 365 - 32167;
    julian += y / 4 - century + century / 4;
    julian + 7834 * m / 256 + day
}

/// j2date for any Julian day (floor arithmetic, so days before 4714 BC work).
pub(crate) fn j2date(jd: i64) -> (i32, i32, i32) {
    // Days since 0000-03-01 (proleptic Gregorian).
    let z = jd - 1_721_120;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + i64::from(m <= 2);
    (y as i32, m as i32, d as i32)
}

/// j2day: day of week, Sunday 0.
pub(crate) fn j2day(jd: i64) -> i32 {
    (jd + 1).rem_euclid(7) as i32
}

pub(crate) const POSTGRES_EPOCH_JDATE: i64 = 2_451_545;

/// A local timestamp (microseconds) as date/time fields and microseconds.
pub(crate) fn timestamp2tm(us: i64) -> (Tm, i64) {
    let date = us.div_euclid(USECS_PER_DAY);
    let time = us.rem_euclid(USECS_PER_DAY);
    let (year, mon, mday) = j2date(date + POSTGRES_EPOCH_JDATE);
    let secs = time / USECS_PER_SEC;
    let tm = Tm {
        year,
        mon,
        mday,
        hour: (secs / 3600) as i32,
        min: (secs / 60 % 60) as i32,
        sec: (secs % 60) as i32,
        ..Tm::default()
    };
    (tm, time % USECS_PER_SEC)
}

/// The session zone's local fields of `now`, and its offset (seconds west).
fn current_tm(st: &Settings) -> (Tm, i64, i32) {
    let unix = st.now_us.div_euclid(USECS_PER_SEC) + EPOCH_DIFF_SECS;
    let (east, _) = st.zone.at_utc(unix);
    let local = st.now_us.saturating_add(i64::from(east) * USECS_PER_SEC);
    let (tm, fsec) = timestamp2tm(local);
    (tm, fsec, -east)
}

/// time_overflows.
pub(crate) fn time_overflows(hour: i32, min: i32, sec: i32, fsec: i64) -> bool {
    if !(0..=24).contains(&hour)
        || !(0..60).contains(&min)
        || !(0..=60).contains(&sec)
        || !(0..=USECS_PER_SEC).contains(&fsec)
    {
        return true;
    }
    ((i64::from(hour) * 60 + i64::from(min)) * 60 + i64::from(sec)) * USECS_PER_SEC + fsec
        > USECS_PER_DAY
}

/// DecodeTimezone: "+hh[:mm[:ss]]" or "+hhmm"; seconds west of UTC.
pub(crate) fn decode_timezone(s: &str) -> DtResult<i32> {
    let neg = match s.as_bytes().first() {
        Some(b'+') => false,
        Some(b'-') => true,
        _ => return Err(DtErr::BadFormat),
    };
    let body = &s[1..];
    let (mut hr, n, over) = strtoint(body);
    if over {
        return Err(DtErr::TzDispOverflow);
    }
    let mut rest = &body[n..];
    let (mut min, mut sec) = (0, 0);
    if let Some(r) = rest.strip_prefix(':') {
        let (v, n, over) = strtoint(r);
        if over {
            return Err(DtErr::TzDispOverflow);
        }
        min = v;
        rest = &r[n..];
        if let Some(r) = rest.strip_prefix(':') {
            let (v, n, over) = strtoint(r);
            if over {
                return Err(DtErr::TzDispOverflow);
            }
            sec = v;
            rest = &r[n..];
        }
    } else if rest.is_empty() && s.len() > 3 {
        min = hr % 100;
        hr /= 100;
    }
    if !(0..=15).contains(&hr) || !(0..60).contains(&min) || !(0..60).contains(&sec) {
        return Err(DtErr::TzDispOverflow);
    }
    let tz = (hr * 60 + min) * 60 + sec;
    let west = if neg { tz } else { -tz };
    if !rest.is_empty() {
        return Err(DtErr::BadFormat);
    }
    Ok(west)
}

/// The date/time decoder's state (DecodeDateTime's and DecodeTimeOnly's locals).
pub(crate) struct Dec<'a> {
    pub st: &'a Settings,
    pub fmask: i32,
    pub ptype: i32,
    pub tm: Tm,
    pub fsec: i64,
    /// Seconds west of UTC (PostgreSQL's *tzp).
    pub tz: i32,
    pub dtype: i32,
    pub mer: i32,
    pub have_text_month: bool,
    pub isjulian: bool,
    pub is2digits: bool,
    pub bc: bool,
    pub named_tz: Option<Zone>,
    pub abbrev_tz: Option<(Zone, String)>,
}

impl<'a> Dec<'a> {
    pub(crate) fn new(st: &'a Settings, dtype: i32) -> Dec<'a> {
        Dec {
            st,
            fmask: 0,
            ptype: 0,
            tm: Tm {
                isdst: -1,
                ..Tm::default()
            },
            fsec: 0,
            tz: 0,
            dtype,
            mer: HR24,
            have_text_month: false,
            isjulian: false,
            is2digits: false,
            bc: false,
            named_tz: None,
            abbrev_tz: None,
        }
    }

    fn order(&self) -> DateOrder {
        self.st.order
    }

    /// DecodeNumber: a single numeric date/time field.
    pub(crate) fn decode_number(&mut self, s: &str, text_month: bool, fmask: i32) -> DtResult<i32> {
        let flen = s.len();
        let (val, n, over) = strtoint(s);
        if over {
            return Err(DtErr::FieldOverflow);
        }
        if n == 0 {
            return Err(DtErr::BadFormat);
        }
        let rest = &s[n..];
        if rest.starts_with('.') {
            if n > 2 {
                return self
                    .decode_number_field(s, fmask | DTK_DATE_M)
                    .map(|(m, _)| m);
            }
            self.fsec = parse_fractional_second(rest)?;
        } else if !rest.is_empty() {
            return Err(DtErr::BadFormat);
        }
        if flen == 3 && fmask & DTK_DATE_M == m(YEAR) && (1..=366).contains(&val) {
            self.tm.yday = val;
            return Ok(m(DOY) | m(MONTH) | m(DAY));
        }
        let ymd = self.order() == DateOrder::Ymd;
        let tmask = match fmask & DTK_DATE_M {
            0 if flen >= 3 || ymd => self.set(YEAR, val),
            0 if self.order() == DateOrder::Dmy => self.set(DAY, val),
            0 => self.set(MONTH, val),
            x if x == m(YEAR) => self.set(MONTH, val),
            x if x == m(MONTH) && text_month && (flen >= 3 || ymd) => self.set(YEAR, val),
            x if x == m(MONTH) => self.set(DAY, val),
            x if x == m(YEAR) | m(MONTH) => {
                if text_month && flen >= 3 && self.is2digits {
                    self.tm.mday = self.tm.year;
                    self.tm.year = val;
                    self.is2digits = false;
                    m(DAY)
                } else {
                    self.set(DAY, val)
                }
            }
            x if x == m(DAY) => self.set(MONTH, val),
            x if x == m(MONTH) | m(DAY) => self.set(YEAR, val),
            DTK_DATE_M => return self.decode_number_field(s, fmask).map(|(m, _)| m),
            _ => return Err(DtErr::BadFormat),
        };
        if tmask == m(YEAR) {
            self.is2digits = flen <= 2;
        }
        Ok(tmask)
    }

    fn set(&mut self, what: i32, val: i32) -> i32 {
        match what {
            YEAR => self.tm.year = val,
            MONTH => self.tm.mon = val,
            _ => self.tm.mday = val,
        }
        m(what)
    }

    /// DecodeNumberField: run-together date (yyyymmdd, yymmdd) or time
    /// (hhmmss[.fff], hhmm). Returns the mask and DTK_DATE or DTK_TIME.
    pub(crate) fn decode_number_field(&mut self, s: &str, fmask: i32) -> DtResult<(i32, i32)> {
        let mut s = s;
        if let Some(dot) = s.find('.') {
            let frac = &s[dot..];
            self.fsec = if frac.len() == 1 {
                0
            } else {
                match strtod(frac) {
                    Some((v, _)) if v.is_finite() => (v * 1e6).round_ties_even() as i64,
                    _ => return Err(DtErr::BadFormat),
                }
            };
            s = &s[..dot];
        } else if fmask & DTK_DATE_M != DTK_DATE_M && s.len() >= 6 {
            let len = s.len();
            self.tm.mday = atoi(&s[len - 2..]);
            self.tm.mon = atoi(&s[len - 4..len - 2]);
            self.tm.year = atoi(&s[..len - 4]);
            if len - 4 == 2 {
                self.is2digits = true;
            }
            return Ok((DTK_DATE_M, DTK_DATE));
        }
        if fmask & DTK_TIME_M != DTK_TIME_M {
            if s.len() == 6 {
                self.tm.sec = atoi(&s[4..]);
                self.tm.min = atoi(&s[2..4]);
                self.tm.hour = atoi(&s[..2]);
                return Ok((DTK_TIME_M, DTK_TIME));
            } else if s.len() == 4 {
                self.tm.sec = 0;
                self.tm.min = atoi(&s[2..]);
                self.tm.hour = atoi(&s[..2]);
                return Ok((DTK_TIME_M, DTK_TIME));
            }
        }
        Err(DtErr::BadFormat)
    }

    /// DecodeDate: a date with embedded separators (and maybe a month name).
    pub(crate) fn decode_date(&mut self, s: &str, fmask: i32) -> DtResult<i32> {
        let b = s.as_bytes();
        let mut parts: Vec<&str> = Vec::new();
        let mut i = 0;
        while i < b.len() && parts.len() < MAXDATEFIELDS {
            while i < b.len() && !b[i].is_ascii_alphanumeric() {
                i += 1;
            }
            if i >= b.len() {
                return Err(DtErr::BadFormat);
            }
            let start = i;
            if b[i].is_ascii_digit() {
                while i < b.len() && b[i].is_ascii_digit() {
                    i += 1;
                }
            } else {
                while i < b.len() && b[i].is_ascii_alphabetic() {
                    i += 1;
                }
            }
            parts.push(&s[start..i]);
            if i < b.len() {
                i += 1;
            }
        }
        let (mut fmask, mut tmask) = (fmask, 0);
        let mut text_month = false;
        let mut numeric = Vec::new();
        for p in parts {
            if !p.as_bytes()[0].is_ascii_alphabetic() {
                numeric.push(p);
                continue;
            }
            match datetk(&p.to_ascii_lowercase()) {
                // PostgreSQL leaves an ignored word for the numeric pass,
                // which rejects it.
                Some((IGNORE_DTF, _)) => {
                    numeric.push(p);
                    continue;
                }
                Some((MONTH, v)) => {
                    self.tm.mon = v;
                    text_month = true;
                }
                _ => return Err(DtErr::BadFormat),
            }
            if fmask & m(MONTH) != 0 {
                return Err(DtErr::BadFormat);
            }
            fmask |= m(MONTH);
            tmask |= m(MONTH);
        }
        for p in numeric {
            let dmask = self.decode_number(p, text_month, fmask)?;
            if fmask & dmask != 0 {
                return Err(DtErr::BadFormat);
            }
            fmask |= dmask;
            tmask |= dmask;
        }
        if fmask & !(m(DOY) | m(TZ)) != DTK_DATE_M {
            return Err(DtErr::BadFormat);
        }
        Ok(tmask)
    }

    /// DecodeTime (and DecodeTimeCommon): hh:mm[:ss[.fff]] or mm:ss.fff.
    pub(crate) fn decode_time(&mut self, s: &str) -> DtResult<i32> {
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
        let (mut h, mut mi, mut sec, mut fsec) = (hour, min, 0, 0);
        if rest.is_empty() {
        } else if rest.starts_with('.') {
            fsec = parse_fractional_second(rest)?;
            let hh = i32::try_from(hour).map_err(|_| DtErr::FieldOverflow)?;
            (h, mi, sec) = (0, hh, min);
        } else if let Some(r) = rest.strip_prefix(':') {
            let (v, n, over) = strtoint(r);
            if over {
                return Err(DtErr::FieldOverflow);
            }
            sec = v;
            let r = &r[n..];
            if r.starts_with('.') {
                fsec = parse_fractional_second(r)?;
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
        let h = i32::try_from(h).map_err(|_| DtErr::FieldOverflow)?;
        (self.tm.hour, self.tm.min, self.tm.sec, self.fsec) = (h, mi, sec, fsec);
        Ok(DTK_TIME_M)
    }

    /// ValidateDate.
    pub(crate) fn validate_date(&mut self) -> DtResult<()> {
        let fmask = self.fmask;
        let tm = &mut self.tm;
        if fmask & m(YEAR) != 0 {
            if self.isjulian {
            } else if self.bc {
                if tm.year <= 0 {
                    return Err(DtErr::FieldOverflow);
                }
                tm.year = -(tm.year - 1);
            } else if self.is2digits {
                if tm.year < 0 {
                    return Err(DtErr::FieldOverflow);
                }
                if tm.year < 70 {
                    tm.year += 2000;
                } else if tm.year < 100 {
                    tm.year += 1900;
                }
            } else if tm.year <= 0 {
                return Err(DtErr::FieldOverflow);
            }
        }
        if fmask & m(DOY) != 0 {
            let jd = date2j(i64::from(tm.year), 1, 1) + i64::from(tm.yday) - 1;
            (tm.year, tm.mon, tm.mday) = j2date(jd);
        }
        if fmask & m(MONTH) != 0 && !(1..=12).contains(&tm.mon) {
            return Err(DtErr::MdFieldOverflow);
        }
        if fmask & m(DAY) != 0 && !(1..=31).contains(&tm.mday) {
            return Err(DtErr::MdFieldOverflow);
        }
        if fmask & DTK_DATE_M == DTK_DATE_M && tm.mday > days_in_month(tm.year, tm.mon) {
            return Err(DtErr::FieldOverflow);
        }
        Ok(())
    }

    /// AM/PM adjustment.
    pub(crate) fn apply_meridian(&mut self) -> DtResult<()> {
        if self.mer != HR24 && self.tm.hour > 12 {
            return Err(DtErr::FieldOverflow);
        }
        if self.mer == AM && self.tm.hour == 12 {
            self.tm.hour = 0;
        } else if self.mer == PM && self.tm.hour != 12 {
            self.tm.hour += 12;
        }
        Ok(())
    }

    /// DetermineTimeZoneOffset of the decoded local time in `zone`.
    pub(crate) fn zone_offset(&self, zone: &Zone) -> i32 {
        match self.local_secs() {
            Some(local) => zone.local_to_west(local),
            None => 0,
        }
    }

    /// The decoded local time as Unix seconds (as if UTC); None when the date is
    /// not a valid Julian date.
    pub(crate) fn local_secs(&self) -> Option<i64> {
        let tm = &self.tm;
        if !valid_julian(tm.year, tm.mon, tm.mday) {
            return None;
        }
        let days = date2j(i64::from(tm.year), i64::from(tm.mon), i64::from(tm.mday)) - 2_440_588;
        Some(days * 86_400 + i64::from(tm.sec) + (i64::from(tm.min) + i64::from(tm.hour) * 60) * 60)
    }

    /// DetermineTimeZoneAbbrevOffset.
    pub(crate) fn abbrev_offset(&self, zone: &Zone, abbrev: &str) -> i32 {
        let west = self.zone_offset(zone);
        let Some(local) = self.local_secs() else {
            return west;
        };
        zone.abbrev_west(abbrev, local + i64::from(west))
            .unwrap_or(west)
    }

    /// GetCurrentTimeUsec / GetCurrentDateTime: now's local fields.
    pub(crate) fn current(&self) -> (Tm, i64, i32) {
        current_tm(self.st)
    }
}

/// The number of days in a month.
pub(crate) fn days_in_month(year: i32, mon: i32) -> i32 {
    let leap = year % 4 == 0 && (year % 100 != 0 || year % 400 == 0);
    match mon {
        2 if leap => 29,
        2 => 28,
        4 | 6 | 9 | 11 => 30,
        _ => 31,
    }
}

/// IS_VALID_JULIAN.
pub(crate) fn valid_julian(y: i32, m: i32, _d: i32) -> bool {
    (y > -4713 || (y == -4713 && m >= 11)) && (y < 5_874_898 || (y == 5_874_898 && m < 6))
}

/// MIN_TIMESTAMP and END_TIMESTAMP.
pub(crate) const MIN_TIMESTAMP: i64 = -211_813_488_000_000_000;
pub(crate) const END_TIMESTAMP: i64 = 9_223_371_331_200_000_000;

/// tm2timestamp: None when out of range. `west` is the zone's offset, if any.
pub(crate) fn tm2timestamp(tm: &Tm, fsec: i64, west: Option<i32>) -> Option<i64> {
    if !valid_julian(tm.year, tm.mon, tm.mday) {
        return None;
    }
    let date =
        date2j(i64::from(tm.year), i64::from(tm.mon), i64::from(tm.mday)) - POSTGRES_EPOCH_JDATE;
    let time = ((i64::from(tm.hour) * 60 + i64::from(tm.min)) * 60 + i64::from(tm.sec))
        * USECS_PER_SEC
        + fsec;
    let result = date.checked_mul(USECS_PER_DAY)?.checked_add(time)?;
    if (result < 0 && date > 0) || (result > 0 && date < -1) {
        return None;
    }
    let result = match west {
        Some(w) => result.checked_add(i64::from(w) * USECS_PER_SEC)?,
        None => result,
    };
    (MIN_TIMESTAMP..END_TIMESTAMP)
        .contains(&result)
        .then_some(result)
}

/// date_in.
pub(crate) fn date_in(s: &str, st: &Settings) -> SqlResult<i32> {
    let err = |e| parse_error(e, s, "date");
    let fields = parse_fields(s).map_err(err)?;
    let mut d = Dec::new(st, DTK_DATE);
    d.decode_datetime(&fields).map_err(err)?;
    let mut tm = d.tm;
    match d.dtype {
        DTK_DATE => {}
        DTK_EPOCH => (tm.year, tm.mon, tm.mday) = (1970, 1, 1),
        DTK_LATE => return Ok(i32::MAX),
        DTK_EARLY => return Ok(i32::MIN),
        _ => return Err(err(DtErr::BadFormat)),
    }
    let range = || SqlError::new("22008", format!("date out of range: \"{s}\""));
    if !valid_julian(tm.year, tm.mon, tm.mday) {
        return Err(range());
    }
    let date =
        date2j(i64::from(tm.year), i64::from(tm.mon), i64::from(tm.mday)) - POSTGRES_EPOCH_JDATE;
    // IS_VALID_DATE: from Julian day 0 to before DATE_END_JULIAN.
    if !(-POSTGRES_EPOCH_JDATE..2_147_483_494 - POSTGRES_EPOCH_JDATE).contains(&date) {
        return Err(range());
    }
    Ok(date as i32)
}

/// timestamp_in and timestamptz_in.
pub(crate) fn timestamp_in(s: &str, st: &Settings, with_tz: bool) -> SqlResult<i64> {
    let name = if with_tz {
        "timestamp with time zone"
    } else {
        "timestamp"
    };
    let err = |e| parse_error(e, s, name);
    let fields = parse_fields(s).map_err(err)?;
    let mut d = Dec::new(st, DTK_DATE);
    d.decode_datetime(&fields).map_err(err)?;
    match d.dtype {
        DTK_DATE => tm2timestamp(&d.tm, d.fsec, with_tz.then_some(d.tz))
            .ok_or_else(|| SqlError::new("22008", format!("timestamp out of range: \"{s}\""))),
        DTK_EPOCH => Ok(-EPOCH_DIFF_SECS * USECS_PER_SEC),
        DTK_LATE => Ok(i64::MAX),
        DTK_EARLY => Ok(i64::MIN),
        _ => Err(err(DtErr::BadFormat)),
    }
}

/// time_in.
pub(crate) fn time_in(s: &str, st: &Settings) -> SqlResult<i64> {
    let err = |e| parse_error(e, s, "time");
    let fields = parse_fields(s).map_err(err)?;
    let mut d = Dec::new(st, DTK_TIME);
    d.decode_time_only(fields).map_err(err)?;
    let tm = &d.tm;
    Ok(
        ((i64::from(tm.hour) * 60 + i64::from(tm.min)) * 60 + i64::from(tm.sec)) * USECS_PER_SEC
            + d.fsec,
    )
}
