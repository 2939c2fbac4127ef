//! DecodeDateTime and DecodeTimeOnly: the fields of ParseDateTime read as a
//! date and time, as PostgreSQL 15's datetime.c.

use super::decode::{
    date2j, decode_timezone, j2date, parse_fraction, parse_fractional_second, strtoint,
    time_overflows, Dec, DtErr, DtResult, Field,
};
use super::tables::*;
use super::{Zone, USECS_PER_DAY, USECS_PER_SEC};
use crate::SqlError;

fn zone_not_recognized(name: &str) -> DtErr {
    DtErr::Raw(SqlError::new(
        "22023",
        format!("time zone \"{name}\" not recognized"),
    ))
}

impl Dec<'_> {
    /// DecodeDateTime.
    pub(crate) fn decode_datetime(&mut self, fields: &[Field]) -> DtResult<()> {
        for (i, f) in fields.iter().enumerate() {
            let tmask = match f.ftype {
                DTK_DATE => self.dt_date(f)?,
                DTK_TIME => {
                    self.take_iso_time()?;
                    let t = self.decode_time(&f.text)?;
                    if time_overflows(self.tm.hour, self.tm.min, self.tm.sec, self.fsec) {
                        return Err(DtErr::FieldOverflow);
                    }
                    t
                }
                DTK_TZ => {
                    self.tz = decode_timezone(&f.text)?;
                    m(TZ)
                }
                DTK_NUMBER if self.ptype != 0 => self.prefixed_number(&f.text)?,
                DTK_NUMBER => self.dt_number(&f.text)?,
                DTK_STRING | DTK_SPECIAL => match self.dt_string(fields, i, false)? {
                    Some(t) => t,
                    None => continue,
                },
                _ => return Err(DtErr::BadFormat),
            };
            if tmask & self.fmask != 0 {
                return Err(DtErr::BadFormat);
            }
            self.fmask |= tmask;
        }
        self.validate_date()?;
        self.apply_meridian()?;
        if self.dtype == DTK_DATE {
            if self.fmask & DTK_DATE_M != DTK_DATE_M {
                return Err(DtErr::BadFormat);
            }
            self.resolve_zone()?;
        }
        Ok(())
    }

    /// A "t" before an ISO time: it must be followed by a time.
    fn take_iso_time(&mut self) -> DtResult<()> {
        if self.ptype != 0 {
            if self.ptype != DTK_TIME {
                return Err(DtErr::BadFormat);
            }
            self.ptype = 0;
        }
        Ok(())
    }

    /// Named zone, dynamic abbreviation, or the session zone, at the decoded
    /// date (the end of DecodeDateTime).
    fn resolve_zone(&mut self) -> DtResult<()> {
        if let Some(z) = self.named_tz.clone() {
            if self.fmask & m(DTZMOD) != 0 {
                return Err(DtErr::BadFormat);
            }
            self.tz = self.zone_offset(&z);
        }
        if let Some((z, abbrev)) = self.abbrev_tz.clone() {
            if self.fmask & m(DTZMOD) != 0 {
                return Err(DtErr::BadFormat);
            }
            self.tz = self.abbrev_offset(&z, &abbrev);
        }
        if self.fmask & m(TZ) == 0 {
            if self.fmask & m(DTZMOD) != 0 {
                return Err(DtErr::BadFormat);
            }
            let zone = self.st.zone.clone();
            self.tz = self.zone_offset(&zone);
        }
        Ok(())
    }

    /// DecodeDateTime's DTK_DATE field.
    fn dt_date(&mut self, f: &Field) -> DtResult<i32> {
        let s = f.text.as_str();
        if self.ptype == DTK_JULIAN {
            let (val, n, over) = strtoint(s);
            if over || val < 0 {
                return Err(DtErr::FieldOverflow);
            }
            (self.tm.year, self.tm.mon, self.tm.mday) = j2date(i64::from(val));
            self.isjulian = true;
            self.tz = decode_timezone(&s[n..])?;
            self.ptype = 0;
            return Ok(DTK_DATE_M | DTK_TIME_M | m(TZ));
        }
        if self.ptype != 0 || self.fmask & (m(MONTH) | m(DAY)) == m(MONTH) | m(DAY) {
            if s.as_bytes()[0].is_ascii_digit() || self.ptype != 0 {
                if self.ptype != 0 {
                    self.take_iso_time()?;
                }
                return self.time_with_zone(s, self.fmask);
            }
            self.named_tz = Some(Zone::named(s).ok_or_else(|| zone_not_recognized(s))?);
            return Ok(m(TZ));
        }
        self.decode_date(s, self.fmask)
    }

    /// "hhmmss-zz": a run-together time with a trailing zone.
    fn time_with_zone(&mut self, s: &str, fmask: i32) -> DtResult<i32> {
        if self.fmask & DTK_TIME_M == DTK_TIME_M {
            return Err(DtErr::BadFormat);
        }
        let Some(dash) = s.find('-') else {
            return Err(DtErr::BadFormat);
        };
        self.tz = decode_timezone(&s[dash..])?;
        let (tmask, _) = self.decode_number_field(&s[..dash], fmask)?;
        Ok(tmask | m(TZ))
    }

    /// A number after a unit prefix ("y2001m02d04", "j2451187", "t040506").
    fn prefixed_number(&mut self, s: &str) -> DtResult<i32> {
        let (val, n, over) = strtoint(s);
        if over {
            return Err(DtErr::FieldOverflow);
        }
        let rest = &s[n..];
        if rest.starts_with('.') {
            if !matches!(self.ptype, DTK_JULIAN | DTK_TIME | DTK_SECOND) {
                return Err(DtErr::BadFormat);
            }
        } else if !rest.is_empty() {
            return Err(DtErr::BadFormat);
        }
        let tm = &mut self.tm;
        let tmask = match self.ptype {
            DTK_YEAR => {
                tm.year = val;
                m(YEAR)
            }
            DTK_MONTH if self.fmask & m(MONTH) != 0 && self.fmask & m(HOUR) != 0 => {
                tm.min = val;
                m(MINUTE)
            }
            DTK_MONTH => {
                tm.mon = val;
                m(MONTH)
            }
            DTK_DAY => {
                tm.mday = val;
                m(DAY)
            }
            DTK_HOUR => {
                tm.hour = val;
                m(HOUR)
            }
            DTK_MINUTE => {
                tm.min = val;
                m(MINUTE)
            }
            DTK_SECOND => {
                tm.sec = val;
                if rest.starts_with('.') {
                    self.fsec = parse_fractional_second(rest)?;
                    DTK_ALL_SECS_M
                } else {
                    m(SECOND)
                }
            }
            DTK_TZ => {
                self.tz = decode_timezone(s)?;
                m(TZ)
            }
            DTK_JULIAN => self.julian_number(val, rest)?,
            DTK_TIME => {
                let (tmask, _) = self.decode_number_field(s, self.fmask | DTK_DATE_M)?;
                if tmask != DTK_TIME_M {
                    return Err(DtErr::BadFormat);
                }
                tmask
            }
            _ => return Err(DtErr::BadFormat),
        };
        self.ptype = 0;
        self.dtype = DTK_DATE;
        Ok(tmask)
    }

    /// "J2451187[.5]": a Julian day, maybe with a fraction of a day.
    fn julian_number(&mut self, val: i32, rest: &str) -> DtResult<i32> {
        if val < 0 {
            return Err(DtErr::FieldOverflow);
        }
        (self.tm.year, self.tm.mon, self.tm.mday) = j2date(i64::from(val));
        self.isjulian = true;
        let mut tmask = DTK_DATE_M;
        if rest.starts_with('.') {
            let time = (parse_fraction(rest)? * USECS_PER_DAY as f64) as i64;
            let secs = time / USECS_PER_SEC;
            self.tm.hour = (secs / 3600) as i32;
            self.tm.min = (secs / 60 % 60) as i32;
            self.tm.sec = (secs % 60) as i32;
            self.fsec = time % USECS_PER_SEC;
            tmask |= DTK_TIME_M;
        }
        Ok(tmask)
    }

    /// DecodeDateTime's plain DTK_NUMBER field.
    fn dt_number(&mut self, s: &str) -> DtResult<i32> {
        let flen = s.len();
        let dot = s.find('.');
        if dot.is_some() && self.fmask & DTK_DATE_M == 0 {
            self.decode_date(s, self.fmask)
        } else if dot.is_some_and(|d| d > 2)
            || (flen >= 6 && (self.fmask & DTK_DATE_M == 0 || self.fmask & DTK_TIME_M == 0))
        {
            Ok(self.decode_number_field(s, self.fmask)?.0)
        } else {
            let htm = self.have_text_month;
            self.decode_number(s, htm, self.fmask)
        }
    }

    /// A word: zone abbreviation, keyword, unit prefix or zone name. None for
    /// a word to skip.
    fn dt_string(&mut self, fields: &[Field], i: usize, time_only: bool) -> DtResult<Option<i32>> {
        let s = fields[i].text.as_str();
        let (ty, val) = match abbrev(s) {
            Some(Abbrev::Fixed(off, true)) => (DTZ, off),
            Some(Abbrev::Fixed(off, false)) => (TZ, off),
            Some(Abbrev::Dynamic(zone)) => {
                let z = Zone::named(zone).ok_or_else(|| zone_not_recognized(zone))?;
                self.abbrev_tz = Some((z, s.to_string()));
                (DYNTZ, 0)
            }
            None => datetk(s).unwrap_or((UNKNOWN_FIELD, 0)),
        };
        let mut tmask = m(ty);
        match ty {
            IGNORE_DTF => return Ok(None),
            RESERV if time_only => tmask = self.time_reserved(val)?,
            RESERV => tmask = self.reserved(val),
            MONTH | DOW if time_only => return Err(DtErr::BadFormat),
            MONTH => {
                let f = self.fmask;
                if f & m(MONTH) != 0
                    && !self.have_text_month
                    && f & m(DAY) == 0
                    && (1..=31).contains(&self.tm.mon)
                {
                    self.tm.mday = self.tm.mon;
                    tmask = m(DAY);
                }
                self.have_text_month = true;
                self.tm.mon = val;
            }
            DTZMOD => {
                tmask |= m(DTZ);
                self.tm.isdst = 1;
                self.tz -= val;
            }
            DTZ => {
                tmask |= m(TZ);
                self.tm.isdst = 1;
                self.tz = -val;
            }
            TZ => {
                self.tm.isdst = 0;
                self.tz = -val;
            }
            DYNTZ => tmask |= m(TZ),
            AMPM => self.mer = val,
            ADBC => self.bc = val == BC,
            DOW => self.tm.wday = val,
            UNITS => {
                tmask = 0;
                self.ptype = val;
            }
            ISOTIME => {
                tmask = 0;
                if !time_only && self.fmask & DTK_DATE_M != DTK_DATE_M {
                    return Err(DtErr::BadFormat);
                }
                let next = fields.get(i + 1).map(|f| f.ftype);
                if !matches!(next, Some(DTK_NUMBER | DTK_TIME | DTK_DATE)) {
                    return Err(DtErr::BadFormat);
                }
                self.ptype = val;
            }
            UNKNOWN_FIELD => {
                self.named_tz = Some(Zone::named(s).ok_or(DtErr::BadFormat)?);
                tmask = m(TZ);
            }
            _ => return Err(DtErr::BadFormat),
        }
        Ok(Some(tmask))
    }

    /// A reserved word in a date/time: now, today, epoch, infinity, ...
    fn reserved(&mut self, val: i32) -> i32 {
        self.dtype = DTK_DATE;
        match val {
            DTK_NOW => {
                let (tm, fsec, west) = self.current();
                self.tm = tm;
                self.fsec = fsec;
                self.tz = west;
                DTK_DATE_M | DTK_TIME_M | m(TZ)
            }
            DTK_YESTERDAY | DTK_TODAY | DTK_TOMORROW => {
                let (tm, _, _) = self.current();
                let delta = i64::from(val - DTK_TODAY);
                let jd = date2j(i64::from(tm.year), i64::from(tm.mon), i64::from(tm.mday)) + delta;
                (self.tm.year, self.tm.mon, self.tm.mday) = j2date(jd);
                DTK_DATE_M
            }
            DTK_ZULU => {
                (self.tm.hour, self.tm.min, self.tm.sec) = (0, 0, 0);
                self.tz = 0;
                DTK_TIME_M | m(TZ)
            }
            _ => {
                self.dtype = val;
                m(RESERV)
            }
        }
    }

    /// A reserved word in a time: only now and allballs.
    fn time_reserved(&mut self, val: i32) -> DtResult<i32> {
        self.dtype = DTK_TIME;
        match val {
            DTK_NOW => {
                let (tm, fsec, _) = self.current();
                (self.tm.hour, self.tm.min, self.tm.sec) = (tm.hour, tm.min, tm.sec);
                self.fsec = fsec;
                Ok(DTK_TIME_M)
            }
            DTK_ZULU => {
                (self.tm.hour, self.tm.min, self.tm.sec) = (0, 0, 0);
                self.tm.isdst = 0;
                Ok(DTK_TIME_M | m(TZ))
            }
            _ => Err(DtErr::BadFormat),
        }
    }

    /// DecodeTimeOnly.
    pub(crate) fn decode_time_only(&mut self, mut fields: Vec<Field>) -> DtResult<()> {
        let nf = fields.len();
        for i in 0..nf {
            let tmask = match fields[i].ftype {
                DTK_DATE => {
                    let s = fields[i].text.clone();
                    if i == 0
                        && nf >= 2
                        && (fields[nf - 1].ftype == DTK_DATE || fields[1].ftype == DTK_TIME)
                    {
                        self.decode_date(&s, self.fmask)?
                    } else if s.as_bytes()[0].is_ascii_digit() {
                        let t = self.time_with_zone(&s, self.fmask | DTK_DATE_M)?;
                        fields[i].ftype = DTK_TIME;
                        t
                    } else {
                        self.named_tz =
                            Some(Zone::named(&s).ok_or_else(|| zone_not_recognized(&s))?);
                        fields[i].ftype = DTK_TZ;
                        m(TZ)
                    }
                }
                DTK_TIME => self.decode_time(&fields[i].text)?,
                DTK_TZ => {
                    self.tz = decode_timezone(&fields[i].text)?;
                    m(TZ)
                }
                DTK_NUMBER if self.ptype != 0 => {
                    let s = fields[i].text.clone();
                    self.prefixed_number(&s)?
                }
                DTK_NUMBER => {
                    let s = fields[i].text.clone();
                    self.time_number(&s, i, &fields)?
                }
                DTK_STRING | DTK_SPECIAL => match self.dt_string(&fields, i, true)? {
                    Some(t) => t,
                    None => continue,
                },
                _ => return Err(DtErr::BadFormat),
            };
            if tmask & self.fmask != 0 {
                return Err(DtErr::BadFormat);
            }
            self.fmask |= tmask;
        }
        self.validate_date()?;
        self.apply_meridian()?;
        if time_overflows(self.tm.hour, self.tm.min, self.tm.sec, self.fsec) {
            return Err(DtErr::FieldOverflow);
        }
        if self.fmask & DTK_TIME_M != DTK_TIME_M {
            return Err(DtErr::BadFormat);
        }
        self.resolve_time_zone()
    }

    /// DecodeTimeOnly's plain DTK_NUMBER field.
    fn time_number(&mut self, s: &str, i: usize, fields: &[Field]) -> DtResult<i32> {
        let nf = fields.len();
        if let Some(dot) = s.find('.') {
            if i == 0 && nf >= 2 && fields[nf - 1].ftype == DTK_DATE {
                self.decode_date(s, self.fmask)
            } else if dot > 2 {
                Ok(self.decode_number_field(s, self.fmask | DTK_DATE_M)?.0)
            } else {
                Err(DtErr::BadFormat)
            }
        } else if s.len() > 4 {
            Ok(self.decode_number_field(s, self.fmask | DTK_DATE_M)?.0)
        } else {
            self.decode_number(s, false, self.fmask | DTK_DATE_M)
        }
    }

    /// The end of DecodeTimeOnly: a named zone, a dynamic abbreviation or the
    /// session zone need a full date unless the zone's offset never changes.
    fn resolve_time_zone(&mut self) -> DtResult<()> {
        let full = self.fmask & DTK_DATE_M == DTK_DATE_M;
        let none = self.fmask & DTK_DATE_M == 0;
        if let Some(z) = self.named_tz.clone() {
            if self.fmask & m(DTZMOD) != 0 {
                return Err(DtErr::BadFormat);
            }
            match z.fixed_west() {
                Some(w) => self.tz = w,
                None if full => self.tz = self.zone_offset(&z),
                None => return Err(DtErr::BadFormat),
            }
        }
        let needs_date = self.abbrev_tz.is_some() || self.fmask & m(TZ) == 0;
        if needs_date {
            if self.fmask & m(DTZMOD) != 0 {
                return Err(DtErr::BadFormat);
            }
            if !none && !full {
                return Err(DtErr::BadFormat);
            }
        }
        Ok(())
    }
}
