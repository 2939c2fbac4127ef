//! DCH_to_char: laying a timestamp's or interval's fields into the format
//! (dtfmt rules 2 to 4).

use super::{Kw, Node, S_FM, S_TH_LOWER, S_TH_UPPER, S_TM};
use crate::datetime::{timestamp2tm, Settings, EPOCH_DIFF_SECS, USECS_PER_SEC};
use crate::{SqlError, SqlResult};
use strata_types::Interval;

pub(super) const MONTHS_FULL: [&str; 12] = [
    "January",
    "February",
    "March",
    "April",
    "May",
    "June",
    "July",
    "August",
    "September",
    "October",
    "November",
    "December",
];
pub(super) const MONTHS_SHORT: [&str; 12] = [
    "Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec",
];
pub(super) const DAYS_FULL: [&str; 7] = [
    "Sunday",
    "Monday",
    "Tuesday",
    "Wednesday",
    "Thursday",
    "Friday",
    "Saturday",
];
pub(super) const DAYS_SHORT: [&str; 7] = ["Sun", "Mon", "Tue", "Wed", "Thu", "Fri", "Sat"];
/// Roman-numeral months, December first (rm_months_upper).
pub(super) const RM_MONTHS: [&str; 12] = [
    "XII", "XI", "X", "IX", "VIII", "VII", "VI", "V", "IV", "III", "II", "I",
];

/// TmToChar: the fields to format (PostgreSQL's `struct fmt_tm`, fsec, tzn).
#[derive(Clone, Debug, Default)]
pub(super) struct Fields {
    pub year: i32,
    pub mon: i32,
    pub mday: i32,
    pub hour: i64,
    pub min: i32,
    pub sec: i32,
    pub wday: i32,
    pub yday: i32,
    /// Seconds east of UTC.
    pub gmtoff: i32,
    pub fsec: i64,
    pub tzn: Option<String>,
}

/// date2j in PostgreSQL's 32-bit arithmetic (it wraps for interval fields).
pub(super) fn date2j(year: i32, month: i32, day: i32) -> i32 {
    let (y, m) = if month > 2 {
        (year.wrapping_add(4800), month + 1)
    } else {
        (year.wrapping_add(4799), month.wrapping_add(13))
    };
    let century = y / 100;
    let mut julian = y.wrapping_mul(365).wrapping_sub(32167);
    julian = julian.wrapping_add(y / 4 - century + century / 4);
    julian
        .wrapping_add(7834i32.wrapping_mul(m) / 256)
        .wrapping_add(day)
}

/// j2day: day of the week, Sunday 0.
fn j2day(date: i32) -> i32 {
    date.wrapping_add(1).rem_euclid(7)
}

/// isoweek2j: the Julian day of the Monday of ISO week `week` of `year`.
pub(super) fn isoweek2j(year: i32, week: i32) -> i32 {
    let day4 = date2j(year, 1, 4);
    let day0 = j2day(day4.wrapping_sub(1));
    (week.wrapping_sub(1))
        .wrapping_mul(7)
        .wrapping_add(day4.wrapping_sub(day0))
}

/// date2isoweek and date2isoyear: the ISO week and ISO year of a date.
fn iso_week_year(year: i32, mon: i32, mday: i32) -> (i32, i32) {
    let dayn = date2j(year, mon, mday);
    let mut year = year;
    let mut day4 = date2j(year, 1, 4);
    let mut day0 = j2day(day4.wrapping_sub(1));
    if dayn < day4.wrapping_sub(day0) {
        year = year.wrapping_sub(1);
        day4 = date2j(year, 1, 4);
        day0 = j2day(day4.wrapping_sub(1));
    }
    let mut week = dayn.wrapping_sub(day4.wrapping_sub(day0)) / 7 + 1;
    if week >= 52 {
        let day4 = date2j(year.wrapping_add(1), 1, 4);
        let day0 = j2day(day4.wrapping_sub(1));
        if dayn >= day4.wrapping_sub(day0) {
            week = dayn.wrapping_sub(day4.wrapping_sub(day0)) / 7 + 1;
            year = year.wrapping_add(1);
        }
    }
    (week, year)
}

/// date2isoyearday.
fn iso_yearday(year: i32, mon: i32, mday: i32) -> i32 {
    let iso_year = iso_week_year(year, mon, mday).1;
    date2j(year, mon, mday)
        .wrapping_sub(isoweek2j(iso_year, 1))
        .wrapping_add(1)
}

/// The fields of a timestamp; of a timestamptz in the session zone when
/// `zone` is given (timestamp_to_char / timestamptz_to_char).
pub(super) fn timestamp_fields(us: i64, zone: Option<&Settings>) -> Fields {
    let (local, gmtoff, tzn) = match zone {
        Some(st) => {
            let unix = us.div_euclid(USECS_PER_SEC) + EPOCH_DIFF_SECS;
            let (east, abbrev) = st.zone.at_utc(unix);
            let local = us.saturating_add(i64::from(east) * USECS_PER_SEC);
            (local, east, Some(abbrev))
        }
        None => (us, 0, None),
    };
    let (tm, fsec) = timestamp2tm(local);
    let thisdate = date2j(tm.year, tm.mon, tm.mday);
    Fields {
        year: tm.year,
        mon: tm.mon,
        mday: tm.mday,
        hour: i64::from(tm.hour),
        min: tm.min,
        sec: tm.sec,
        wday: (thisdate + 1) % 7,
        yday: thisdate - date2j(tm.year, 1, 1) + 1,
        gmtoff,
        fsec,
        tzn,
    }
}

/// The fields of an interval (interval_to_char over interval2itm).
pub(super) fn interval_fields(iv: &Interval) -> Fields {
    let mut time = iv.micros;
    let hour = time / 3_600_000_000;
    time -= hour * 3_600_000_000;
    let min = time / 60_000_000;
    time -= min * 60_000_000;
    let sec = time / USECS_PER_SEC;
    let year = iv.months / 12;
    let mon = iv.months % 12;
    Fields {
        year,
        mon,
        mday: iv.days,
        hour,
        min: min as i32,
        sec: sec as i32,
        fsec: time - sec * USECS_PER_SEC,
        yday: year
            .wrapping_mul(12)
            .wrapping_add(mon)
            .wrapping_mul(30)
            .wrapping_add(iv.days),
        ..Fields::default()
    }
}

/// INVALID_FOR_INTERVAL.
fn interval_error() -> SqlError {
    SqlError::new(
        "22007",
        "invalid format specification for an interval value",
    )
    .with_hint("Intervals are not tied to specific calendar dates.")
}

/// get_th: the ordinal suffix of a number's text.
fn ordinal(num: &str, upper: bool) -> SqlResult<&'static str> {
    let b = num.as_bytes();
    let last = *b.last().unwrap_or(&0);
    if !last.is_ascii_digit() {
        return Err(SqlError::new("22P02", format!("\"{num}\" is not a number")));
    }
    let teen = b.len() > 1 && b[b.len() - 2] == b'1';
    let th = match last {
        b'1' if !teen => "st",
        b'2' if !teen => "nd",
        b'3' if !teen => "rd",
        _ => "th",
    };
    Ok(if upper {
        match th {
            "st" => "ST",
            "nd" => "ND",
            "rd" => "RD",
            _ => "TH",
        }
    } else {
        th
    })
}

/// Appends a number's text and, with TH/th, its ordinal suffix.
fn push_num(out: &mut String, text: String, suffix: u8) -> SqlResult<()> {
    let th = if suffix & S_TH_UPPER != 0 {
        Some(ordinal(&text, true)?)
    } else if suffix & S_TH_LOWER != 0 {
        Some(ordinal(&text, false)?)
    } else {
        None
    };
    out.push_str(&text);
    if let Some(th) = th {
        out.push_str(th);
    }
    Ok(())
}

/// `%0*d`: zero-padded to `width` (sign included), 0 meaning no padding.
fn padded(v: i64, width: usize) -> String {
    format!("{v:0width$}")
}

/// The width of a field: `plain` (one more when negative), or none with FM.
fn width(suffix: u8, v: i64, plain: usize) -> usize {
    if suffix & S_FM != 0 {
        0
    } else if v >= 0 {
        plain
    } else {
        plain + 1
    }
}

/// ADJUST_YEAR: BC years shown positive, for timestamps only.
fn adjust_year(year: i32, is_interval: bool) -> i32 {
    if is_interval || year > 0 {
        year
    } else {
        (year.wrapping_sub(1)).wrapping_neg()
    }
}

/// DCH_to_char over the parsed format (dtfmt rule 2).
pub(super) fn format(nodes: &[Node], tm: &Fields, is_interval: bool) -> SqlResult<String> {
    let mut out = String::new();
    for node in nodes {
        let (key, suffix) = match node {
            Node::Literal { text, .. } => {
                out.push_str(text);
                continue;
            }
            Node::Action { key, suffix } => (key, *suffix),
        };
        let id = key.id;
        if !time_field(&mut out, id, suffix, tm)?
            && !zone_field(&mut out, id, suffix, tm, is_interval)?
            && !name_field(&mut out, id, suffix, tm, is_interval)?
            && !date_field(&mut out, id, suffix, tm, is_interval)?
        {
            year_field(&mut out, id, suffix, tm, is_interval)?;
        }
    }
    Ok(out)
}

/// The time-of-day keywords; false if `id` is not one.
fn time_field(out: &mut String, id: Kw, suffix: u8, tm: &Fields) -> SqlResult<bool> {
    let pm = tm.hour % 24 >= 12;
    let fixed = match id {
        Kw::AMDot | Kw::PDot => Some(if pm { "P.M." } else { "A.M." }),
        Kw::AM | Kw::PM => Some(if pm { "PM" } else { "AM" }),
        Kw::LowAMDot | Kw::LowPDot => Some(if pm { "p.m." } else { "a.m." }),
        Kw::LowAM | Kw::LowPM => Some(if pm { "pm" } else { "am" }),
        _ => None,
    };
    if let Some(text) = fixed {
        out.push_str(text);
        return Ok(true);
    }
    let text = match id {
        Kw::HH | Kw::HH12 => {
            let h = match tm.hour % 12 {
                0 => 12,
                h => h,
            };
            padded(h, width(suffix, tm.hour, 2))
        }
        Kw::HH24 => padded(tm.hour, width(suffix, tm.hour, 2)),
        Kw::MI => padded(tm.min.into(), width(suffix, tm.min.into(), 2)),
        Kw::SS => padded(tm.sec.into(), width(suffix, tm.sec.into(), 2)),
        Kw::FF(n) => {
            let digits = usize::from(n);
            let scale = 10i64.pow(6 - u32::from(n));
            padded(tm.fsec / scale, digits)
        }
        Kw::MS => padded(tm.fsec / 1000, 3),
        Kw::US => padded(tm.fsec, 6),
        Kw::SSSS => (tm.hour * 3600 + i64::from(tm.min) * 60 + i64::from(tm.sec)).to_string(),
        _ => return Ok(false),
    };
    push_num(out, text, suffix)?;
    Ok(true)
}

/// TZ, tz, TZH, TZM, OF (dtfmt rule 3); false if `id` is not one.
fn zone_field(
    out: &mut String,
    id: Kw,
    suffix: u8,
    tm: &Fields,
    is_interval: bool,
) -> SqlResult<bool> {
    if !matches!(id, Kw::TZ | Kw::LowTZ | Kw::TZH | Kw::TZM | Kw::OF) {
        return Ok(false);
    }
    if is_interval {
        return Err(interval_error());
    }
    let off = tm.gmtoff.unsigned_abs();
    let sign = if tm.gmtoff >= 0 { '+' } else { '-' };
    match id {
        Kw::TZ => out.push_str(tm.tzn.as_deref().unwrap_or("")),
        Kw::LowTZ => out.push_str(&tm.tzn.as_deref().unwrap_or("").to_ascii_lowercase()),
        Kw::TZH => out.push_str(&format!("{sign}{:02}", off / 3600)),
        Kw::TZM => out.push_str(&format!("{:02}", off % 3600 / 60)),
        _ => {
            let w = if suffix & S_FM != 0 { 0 } else { 2 };
            out.push_str(&format!("{sign}{:0w$}", off / 3600));
            if !off.is_multiple_of(3600) {
                out.push_str(&format!(":{:02}", off % 3600 / 60));
            }
        }
    }
    Ok(true)
}

/// A name: TM gives it unpadded, else it is blank-padded to 9 unless FM.
fn push_name(out: &mut String, name: &str, suffix: u8, pad: bool) {
    if pad && suffix & (S_FM | S_TM) == 0 {
        out.push_str(&format!("{name:<9}"));
    } else {
        out.push_str(name);
    }
}

/// Era, month and day names and RM; false if `id` is not one.
fn name_field(
    out: &mut String,
    id: Kw,
    suffix: u8,
    tm: &Fields,
    is_interval: bool,
) -> SqlResult<bool> {
    let bc = tm.year <= 0;
    let era = match id {
        Kw::ADot | Kw::BDot => Some(if bc { "B.C." } else { "A.D." }),
        Kw::AD | Kw::BC => Some(if bc { "BC" } else { "AD" }),
        Kw::LowADot | Kw::LowBDot => Some(if bc { "b.c." } else { "a.d." }),
        Kw::LowAD | Kw::LowBC => Some(if bc { "bc" } else { "ad" }),
        _ => None,
    };
    if let Some(era) = era {
        if is_interval {
            return Err(interval_error());
        }
        out.push_str(era);
        return Ok(true);
    }
    if matches!(id, Kw::RM | Kw::LowRM) {
        roman_month(out, id, suffix, tm);
        return Ok(true);
    }
    let month = matches!(
        id,
        Kw::MONTH | Kw::Month | Kw::LowMonth | Kw::MON | Kw::Mon | Kw::LowMon
    );
    let day = matches!(
        id,
        Kw::DAY | Kw::Day | Kw::LowDay | Kw::DY | Kw::Dy | Kw::LowDy
    );
    if !month && !day {
        return Ok(false);
    }
    if is_interval {
        return Err(interval_error());
    }
    if month && tm.mon == 0 {
        return Ok(true);
    }
    let wday = tm.wday.rem_euclid(7) as usize;
    let mon = (tm.mon - 1).clamp(0, 11) as usize;
    let (name, pad) = match id {
        Kw::MONTH | Kw::Month | Kw::LowMonth => (MONTHS_FULL[mon], true),
        Kw::MON | Kw::Mon | Kw::LowMon => (MONTHS_SHORT[mon], false),
        Kw::DAY | Kw::Day | Kw::LowDay => (DAYS_FULL[wday], true),
        _ => (DAYS_SHORT[wday], false),
    };
    let name = match id {
        Kw::MONTH | Kw::MON | Kw::DAY | Kw::DY => name.to_ascii_uppercase(),
        Kw::LowMonth | Kw::LowMon | Kw::LowDay | Kw::LowDy => name.to_ascii_lowercase(),
        _ => name.to_string(),
    };
    push_name(out, &name, suffix, pad);
    Ok(true)
}

/// RM / rm: the month in Roman numerals, blank-padded to 4 unless FM.
fn roman_month(out: &mut String, id: Kw, suffix: u8, tm: &Fields) {
    if tm.mon == 0 && tm.year == 0 {
        return;
    }
    let idx = if tm.mon == 0 {
        if tm.year >= 0 {
            0
        } else {
            11
        }
    } else if tm.mon < 0 {
        -(tm.mon + 1)
    } else {
        12 - tm.mon
    };
    let name = RM_MONTHS[idx.clamp(0, 11) as usize];
    let name = if id == Kw::LowRM {
        name.to_ascii_lowercase()
    } else {
        name.to_string()
    };
    if suffix & S_FM != 0 {
        out.push_str(&name);
    } else {
        out.push_str(&format!("{name:<4}"));
    }
}

/// Numeric date fields other than years; false if `id` is not one.
fn date_field(
    out: &mut String,
    id: Kw,
    suffix: u8,
    tm: &Fields,
    is_interval: bool,
) -> SqlResult<bool> {
    let fm = suffix & S_FM != 0;
    let text = match id {
        Kw::MM => padded(tm.mon.into(), width(suffix, tm.mon.into(), 2)),
        Kw::DDD => padded(tm.yday.into(), if fm { 0 } else { 3 }),
        Kw::IDDD => {
            let v = iso_yearday(tm.year, tm.mon, tm.mday);
            padded(v.into(), if fm { 0 } else { 3 })
        }
        Kw::DD => padded(tm.mday.into(), if fm { 0 } else { 2 }),
        Kw::D | Kw::ID if is_interval => return Err(interval_error()),
        Kw::D => (tm.wday + 1).to_string(),
        Kw::ID => (if tm.wday == 0 { 7 } else { tm.wday }).to_string(),
        Kw::WW => padded(
            (tm.yday.wrapping_sub(1) / 7 + 1).into(),
            if fm { 0 } else { 2 },
        ),
        Kw::IW => {
            let v = iso_week_year(tm.year, tm.mon, tm.mday).0;
            padded(v.into(), if fm { 0 } else { 2 })
        }
        Kw::Q if tm.mon == 0 => return Ok(true),
        Kw::Q => ((tm.mon - 1) / 3 + 1).to_string(),
        Kw::W => (tm.mday.wrapping_sub(1) / 7 + 1).to_string(),
        Kw::J => date2j(tm.year, tm.mon, tm.mday).to_string(),
        Kw::CC => {
            let i = if is_interval {
                tm.year / 100
            } else if tm.year > 0 {
                (tm.year - 1) / 100 + 1
            } else {
                tm.year / 100 - 1
            };
            if (-99..=99).contains(&i) {
                padded(i.into(), width(suffix, i.into(), 2))
            } else {
                i.to_string()
            }
        }
        _ => return Ok(false),
    };
    push_num(out, text, suffix)?;
    Ok(true)
}

/// The year keywords (Y,YYY YYYY YYY YY Y and the ISO forms).
fn year_field(
    out: &mut String,
    id: Kw,
    suffix: u8,
    tm: &Fields,
    is_interval: bool,
) -> SqlResult<()> {
    let year = adjust_year(tm.year, is_interval);
    let iso = matches!(id, Kw::IYYY | Kw::IYY | Kw::IY | Kw::I);
    let value = if iso {
        adjust_year(iso_week_year(tm.year, tm.mon, tm.mday).1, is_interval)
    } else {
        year
    };
    let w = |plain: usize| width(suffix, year.into(), plain);
    let text = match id {
        Kw::YComma => {
            let i = year / 1000;
            format!("{i},{:03}", year - i * 1000)
        }
        Kw::YYYY | Kw::IYYY => padded(value.into(), w(4)),
        Kw::YYY | Kw::IYY => padded((value % 1000).into(), w(3)),
        Kw::YY | Kw::IY => padded((value % 100).into(), w(2)),
        Kw::Y | Kw::I => (value % 10).to_string(),
        // FX, and the keywords of to_timestamp only.
        _ => return Ok(()),
    };
    push_num(out, text, suffix)
}
