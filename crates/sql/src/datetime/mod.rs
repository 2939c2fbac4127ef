//! PostgreSQL 15's date/time text input and output: `date`, `timestamp`,
//! `timestamptz`, `time` and `interval`, in every DateStyle, DateOrder and
//! IntervalStyle, ported from PostgreSQL's datetime.c (ParseDateTime,
//! DecodeDateTime, DecodeTimeOnly, DecodeInterval, DecodeISO8601Interval,
//! EncodeDateOnly, EncodeDateTime, EncodeInterval) and the input functions of
//! date.c and timestamp.c.
//!
//! Values are PostgreSQL's own representations: a date is days since
//! 2000-01-01 (`i32::MIN` / `i32::MAX` are -infinity / infinity), a timestamp
//! microseconds since 2000-01-01 00:00:00 (UTC for timestamptz; `i64::MIN` /
//! `i64::MAX` are the infinities), a time microseconds since midnight.
//!
//! The session's settings are a [`Settings`]: DateStyle, DateOrder,
//! IntervalStyle, TimeZone (a [`Zone`], from the IANA database bundled in
//! `jiff`) and `now_us`, the current transaction's start (a timestamptz), which
//! `now`, `today`, `tomorrow` and `yesterday` read.

pub(crate) mod decode;
mod encode;
mod fields;
mod interval;
pub(crate) mod tables;
#[cfg(test)]
mod tests;
mod typmod;
#[cfg(test)]
mod typmod_tests;

use crate::{SqlError, SqlResult};
use jiff::tz::{AmbiguousOffset, Offset, TimeZone};
use jiff::Timestamp;
use strata_types::Interval;

pub(crate) use decode::{timestamp2tm, tm2timestamp, valid_julian, POSTGRES_EPOCH_JDATE};
pub use encode::{format_date, format_interval, format_time, format_timestamp, format_timestamptz};
pub use typmod::{
    adjust_interval, parse_interval_typmod, IntervalRange, IntervalTypmod, MAX_INTERVAL_PRECISION,
};

/// DateStyle's output format.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DateStyle {
    Iso,
    Postgres,
    Sql,
    German,
}

/// DateStyle's field order, for input (and SQL/Postgres output).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DateOrder {
    Mdy,
    Dmy,
    Ymd,
}

/// IntervalStyle.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum IntervalStyle {
    Postgres,
    PostgresVerbose,
    SqlStandard,
    Iso8601,
}

/// A session time zone: an IANA zone, a POSIX TZ string, or a fixed offset
/// (`SET TIME ZONE '+05'`, `INTERVAL '...'`), named as PostgreSQL shows it.
#[derive(Clone, Debug)]
pub struct Zone {
    name: String,
    tz: TimeZone,
    /// A fixed zone's abbreviation, as PostgreSQL's `pg_tzset_offset` names it
    /// ("+05", "-03:30").
    fixed: Option<(i32, String)>,
}

/// Broken-down date and time fields (PostgreSQL's `struct pg_tm`, with the
/// year as is: 1 BC is year 0).
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct Tm {
    pub year: i32,
    pub mon: i32,
    pub mday: i32,
    pub hour: i32,
    pub min: i32,
    pub sec: i32,
    pub yday: i32,
    pub wday: i32,
    pub isdst: i32,
}

/// Microseconds per day / second.
pub(crate) const USECS_PER_DAY: i64 = 86_400_000_000;
pub(crate) const USECS_PER_SEC: i64 = 1_000_000;
/// Seconds from 1970-01-01 to 2000-01-01.
pub(crate) const EPOCH_DIFF_SECS: i64 = 946_684_800;
/// Seconds in 400 Gregorian years: a zone's rules repeat after it.
const CYCLE_SECS: i64 = 146_097 * 86_400;
/// Unix seconds within which jiff is asked directly (years about -9000..9000).
const JIFF_LO: i64 = -346_000_000_000;
const JIFF_HI: i64 = 221_000_000_000;

impl Zone {
    /// UTC.
    pub fn utc() -> Zone {
        Zone {
            name: "UTC".into(),
            tz: TimeZone::UTC,
            fixed: None,
        }
    }

    /// A zone from the database (case-insensitive name) or a POSIX TZ string,
    /// as PostgreSQL's `pg_tzset`.
    pub fn named(name: &str) -> Option<Zone> {
        if name.is_empty() {
            return None;
        }
        let Ok(tz) = TimeZone::get(name) else {
            return posix_zone(&name.to_ascii_uppercase());
        };
        let name = tz
            .iana_name()
            .map(str::to_string)
            .unwrap_or_else(|| name.to_string());
        Some(Zone {
            name,
            tz,
            fixed: None,
        })
    }

    /// A fixed zone `east` seconds east of UTC, as `pg_tzset_offset`.
    pub fn fixed(east: i32) -> Option<Zone> {
        // PostgreSQL allows offsets up to 167 hours; jiff's zone is then only
        // a placeholder, as a fixed zone is answered from `fixed`.
        let tz = Offset::from_seconds(east)
            .map(TimeZone::fixed)
            .unwrap_or(TimeZone::UTC);
        let abs = east.unsigned_abs();
        let mut text = format!("{:02}", abs / 3600);
        if !abs.is_multiple_of(3600) {
            text.push_str(&format!(":{:02}", abs % 3600 / 60));
            if !abs.is_multiple_of(60) {
                text.push_str(&format!(":{:02}", abs % 60));
            }
        }
        let (abbrev, name) = if east < 0 {
            (format!("-{text}"), format!("<-{text}>+{text}"))
        } else {
            (format!("+{text}"), format!("<+{text}>-{text}"))
        };
        Some(Zone {
            name,
            tz,
            fixed: Some((east, abbrev)),
        })
    }

    /// The zone's name, as `SHOW TimeZone` gives it.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The zone's offset (seconds east of UTC) and abbreviation at a moment
    /// (Unix seconds); beyond jiff's range the rules of 400 years earlier or
    /// later are used, as they repeat (PostgreSQL extends a zone the same way).
    pub(crate) fn at_utc(&self, unix: i64) -> (i32, String) {
        if let Some((east, abbrev)) = &self.fixed {
            return (*east, abbrev.clone());
        }
        let ts = Timestamp::from_second(clamp_cycle(unix)).unwrap_or(Timestamp::UNIX_EPOCH);
        let info = self.tz.to_offset_info(ts);
        (info.offset().seconds(), info.abbreviation().to_string())
    }

    /// PostgreSQL's DetermineTimeZoneOffset: the offset, seconds *west* of UTC,
    /// of a local time (Unix seconds as if it were UTC). In a spring-forward gap
    /// the offset before the change is used, in a fall-back fold the one after.
    pub(crate) fn local_to_west(&self, local: i64) -> i32 {
        if let Some((east, _)) = &self.fixed {
            return -*east;
        }
        let shifted = clamp_cycle(local);
        let Ok(ts) = Timestamp::from_second(shifted) else {
            return 0;
        };
        let dt = Offset::UTC.to_datetime(ts);
        let off = match self.tz.to_ambiguous_timestamp(dt).offset() {
            AmbiguousOffset::Unambiguous { offset } => offset,
            AmbiguousOffset::Gap { before, .. } => before,
            AmbiguousOffset::Fold { after, .. } => after,
        };
        -off.seconds()
    }

    /// Whether the zone never changes its offset (PostgreSQL's
    /// `pg_get_timezone_offset` succeeds).
    pub(crate) fn fixed_west(&self) -> Option<i32> {
        if let Some((east, _)) = &self.fixed {
            // (A zone with daylight time jiff could not build keeps a zone
            // with daylight time here.)
            return self.tz.to_fixed_offset().ok().map(|_| -*east);
        }
        self.tz.to_fixed_offset().ok().map(|o| -o.seconds())
    }

    /// The offset (seconds west) the zone gives abbreviation `abbrev` nearest
    /// the moment `unix`, if it uses that abbreviation at all.
    pub(crate) fn abbrev_west(&self, abbrev: &str, unix: i64) -> Option<i32> {
        let ts = Timestamp::from_second(clamp_cycle(unix)).ok()?;
        let info = self.tz.to_offset_info(ts);
        if info.abbreviation().eq_ignore_ascii_case(abbrev) {
            return Some(-info.offset().seconds());
        }
        for t in self.tz.preceding(ts).take(400) {
            if t.abbreviation().eq_ignore_ascii_case(abbrev) {
                return Some(-t.offset().seconds());
            }
        }
        for t in self.tz.following(ts).take(400) {
            if t.abbreviation().eq_ignore_ascii_case(abbrev) {
                return Some(-t.offset().seconds());
            }
        }
        None
    }
}

/// A POSIX TZ string as PostgreSQL's tzparse takes it ("abc-5", "vv2a",
/// "XYZ0001:30"), for what jiff does not parse itself. Without a rule, a
/// daylight-time name gets the default US rule, as PostgreSQL's.
fn posix_zone(name: &str) -> Option<Zone> {
    if name.starts_with(':') {
        return None;
    }
    // PostgreSQL allows an empty standard-time name ("-03:30").
    let (std, rest) = posix_name(name)?;
    if rest.is_empty() {
        return None;
    }
    let (east, rest) = posix_offset(rest)?;
    if rest.is_empty() {
        let mut zone = Zone::fixed(east)?;
        zone.name = name.to_string();
        zone.fixed = Some((east, std.to_string()));
        return Some(zone);
    }
    let (dst, rest) = posix_name(rest).filter(|(d, _)| !d.is_empty())?;
    let (dst_east, rest) = if rest.is_empty() || rest.starts_with(',') {
        (east + 3600, rest)
    } else {
        posix_offset(rest)?
    };
    if !rest.is_empty() && !rest.starts_with(',') {
        return None;
    }
    let rule = if rest.is_empty() {
        ",M3.2.0,M11.1.0"
    } else {
        rest
    };
    // jiff takes names of 3 or more letters, digits and signs only.
    let usable = |n: &str, alt: &'static str| {
        let ok = n.len() >= 3
            && n.bytes()
                .all(|b| b.is_ascii_alphanumeric() || b == b'+' || b == b'-');
        if ok {
            n.to_string()
        } else {
            alt.to_string()
        }
    };
    let (std_name, dst_name) = (usable(std, "STD"), usable(dst, "DST"));
    let text = format!(
        "<{std_name}>{}<{dst_name}>{}{rule}",
        posix_hms(-east),
        posix_hms(-dst_east)
    );
    let Ok(tz) = TimeZone::posix(&text) else {
        if !rest.is_empty() {
            return None;
        }
        // Beyond what jiff takes (a one-letter name, a long offset): the
        // standard time only, but known to have daylight time.
        let mut zone = Zone::fixed(east)?;
        zone.name = name.to_string();
        zone.fixed = Some((east, std.to_string()));
        zone.tz = TimeZone::posix("XXX0YYY,M3.2.0,M11.1.0").ok()?;
        return Some(zone);
    };
    Some(Zone {
        name: name.to_string(),
        tz,
        fixed: None,
    })
}

/// getzname: a zone name, quoted in <> or up to a digit, ',', '-' or '+'.
fn posix_name(s: &str) -> Option<(&str, &str)> {
    if let Some(q) = s.strip_prefix('<') {
        let end = q.find('>')?;
        return Some((&q[..end], &q[end + 1..]));
    }
    let n = s
        .find(|c: char| c.is_ascii_digit() || matches!(c, ',' | '-' | '+'))
        .unwrap_or(s.len());
    Some((&s[..n], &s[n..]))
}

/// getoffset: [+-]hh[:mm[:ss]], positive west; returned as seconds east.
fn posix_offset(s: &str) -> Option<(i32, &str)> {
    let (neg, mut rest) = match s.as_bytes().first() {
        Some(b'-') => (true, &s[1..]),
        Some(b'+') => (false, &s[1..]),
        _ => (false, s),
    };
    let mut secs = 0i64;
    for (i, limit) in [(0, 167), (1, 59), (2, 60)] {
        if i > 0 {
            match rest.strip_prefix(':') {
                Some(r) => rest = r,
                None => break,
            }
        }
        let n = rest.bytes().take_while(u8::is_ascii_digit).count();
        if n == 0 || n > 9 {
            return None;
        }
        let v: i64 = rest[..n].parse().ok()?;
        if v > limit {
            return None;
        }
        secs += v * [3600, 60, 1][i];
        rest = &rest[n..];
    }
    let east = i32::try_from(if neg { secs } else { -secs }).ok()?;
    Some((east, rest))
}

/// An offset (seconds, positive west) in POSIX form.
fn posix_hms(west: i32) -> String {
    let a = west.unsigned_abs();
    let sign = if west < 0 { "-" } else { "" };
    format!("{sign}{}:{:02}:{:02}", a / 3600, a / 60 % 60, a % 60)
}

/// `unix` moved by whole 400-year cycles into jiff's range.
fn clamp_cycle(unix: i64) -> i64 {
    if unix > JIFF_HI {
        let n = (unix - JIFF_HI) / CYCLE_SECS + 1;
        unix - n * CYCLE_SECS
    } else if unix < JIFF_LO {
        JIFF_LO
    } else {
        unix
    }
}

/// A session's date/time settings.
#[derive(Clone, Debug)]
pub struct Settings {
    pub style: DateStyle,
    pub order: DateOrder,
    pub interval: IntervalStyle,
    pub zone: Zone,
    /// The current transaction's start, a timestamptz (microseconds since
    /// 2000-01-01 UTC): what `now`, `today`, `tomorrow` and `yesterday` mean.
    pub now_us: i64,
    /// extra_float_digits (-15 ..= 3): float output's precision (not a date/time
    /// setting, but one of the session's output settings carried with them).
    pub extra_float_digits: i32,
}

impl Default for Settings {
    /// PostgreSQL's defaults: DateStyle ISO, MDY; IntervalStyle postgres; UTC.
    fn default() -> Settings {
        Settings {
            style: DateStyle::Iso,
            order: DateOrder::Mdy,
            interval: IntervalStyle::Postgres,
            zone: Zone::utc(),
            now_us: 0,
            extra_float_digits: 1,
        }
    }
}

impl Settings {
    /// `SET DateStyle = '...'`: a comma-separated list of a style (ISO, SQL,
    /// Postgres, German) and an order (YMD, DMY/Euro, MDY/US/NonEuro), or
    /// DEFAULT; what is not given is kept (German sets DMY unless an order is
    /// given). Errors as PostgreSQL's check_datestyle.
    pub fn parse_datestyle(&mut self, text: &str) -> SqlResult<()> {
        let bad = |detail: String| {
            let mut e = SqlError::new(
                "22023",
                format!("invalid value for parameter \"DateStyle\": \"{text}\""),
            );
            e.detail = Some(detail);
            e
        };
        let (mut style, mut order) = (None::<DateStyle>, None::<DateOrder>);
        let mut implied = None::<DateOrder>;
        let mut ok = true;
        for raw in text.split(',') {
            let tok = raw.trim();
            if tok.is_empty() || tok.contains(char::is_whitespace) {
                return Err(bad("List syntax is invalid.".into()));
            }
            let tok = match tok.strip_prefix('"').and_then(|t| t.strip_suffix('"')) {
                Some(quoted) => quoted.to_string(),
                None => tok.to_ascii_lowercase(),
            };
            let lower = tok.to_ascii_lowercase();
            let (s, o) = match lower.as_str() {
                "iso" => (Some(DateStyle::Iso), None),
                "sql" => (Some(DateStyle::Sql), None),
                "german" => (Some(DateStyle::German), None),
                t if t.starts_with("postgres") => (Some(DateStyle::Postgres), None),
                "ymd" => (None, Some(DateOrder::Ymd)),
                t if t == "dmy" || t.starts_with("euro") => (None, Some(DateOrder::Dmy)),
                t if t == "mdy" || t == "us" || t.starts_with("noneuro") => {
                    (None, Some(DateOrder::Mdy))
                }
                "default" => {
                    style = style.or(Some(DateStyle::Iso));
                    order = order.or(Some(DateOrder::Mdy));
                    continue;
                }
                _ => return Err(bad(format!("Unrecognized key word: \"{tok}\"."))),
            };
            if let Some(s) = s {
                ok &= !matches!(style, Some(x) if x != s);
                style = Some(s);
                if s == DateStyle::German && order.is_none() {
                    implied = Some(DateOrder::Dmy);
                }
            }
            if let Some(o) = o {
                ok &= !matches!(order, Some(x) if x != o);
                order = Some(o);
            }
        }
        if !ok {
            return Err(bad("Conflicting \"datestyle\" specifications.".into()));
        }
        let order = order.or(implied);
        if let Some(s) = style {
            self.style = s;
        }
        if let Some(o) = order {
            self.order = o;
        }
        Ok(())
    }

    /// `SET TIME ZONE`: `INTERVAL '...'` text, a number of hours east of UTC
    /// (`'+05'`, `-7.5`), or a zone name or POSIX TZ string.
    pub fn set_timezone(&mut self, name: &str) -> SqlResult<()> {
        self.zone = timezone_setting(name, self)?;
        Ok(())
    }
}

/// PostgreSQL's check_timezone.
fn timezone_setting(name: &str, st: &Settings) -> SqlResult<Zone> {
    let invalid = |detail: Option<&str>| {
        let mut e = SqlError::new(
            "22023",
            format!("invalid value for parameter \"TimeZone\": \"{name}\""),
        );
        e.detail = detail.map(str::to_string);
        e
    };
    let offset_zone = |east: f64| {
        if east.abs() >= 168.0 * 3600.0 || east.is_nan() {
            return Err(invalid(Some("UTC timezone offset is out of range.")));
        }
        Zone::fixed(east as i32).ok_or_else(|| invalid(None))
    };
    if name.len() >= 8 && name.is_char_boundary(8) && name[..8].eq_ignore_ascii_case("interval") {
        let body = name[8..].trim_start();
        let body = body.strip_prefix('\'').ok_or_else(|| invalid(None))?;
        let body = match body.find('\'') {
            Some(q) if q + 1 == body.len() => &body[..q],
            _ => return Err(invalid(None)),
        };
        let iv = parse_interval(body, st)?;
        if iv.months != 0 {
            return Err(invalid(Some(
                "Cannot specify months in time zone interval.",
            )));
        }
        if iv.days != 0 {
            return Err(invalid(Some("Cannot specify days in time zone interval.")));
        }
        return offset_zone((iv.micros / USECS_PER_SEC) as f64);
    }
    if let Some((hours, used)) = decode::strtod(name) {
        if used == name.len() {
            return offset_zone(hours * 3600.0);
        }
    }
    Zone::named(name).ok_or_else(|| invalid(None))
}

/// `date` input (date_in).
pub fn parse_date(s: &str, st: &Settings) -> SqlResult<i32> {
    decode::date_in(s, st)
}

/// `timestamp without time zone` input (timestamp_in): a zone in the text is
/// ignored.
pub fn parse_timestamp(s: &str, st: &Settings) -> SqlResult<i64> {
    decode::timestamp_in(s, st, false)
}

/// `timestamp with time zone` input (timestamptz_in): the zone in the text,
/// else the session's at that local time.
pub fn parse_timestamptz(s: &str, st: &Settings) -> SqlResult<i64> {
    decode::timestamp_in(s, st, true)
}

/// `time without time zone` input (time_in).
pub fn parse_time(s: &str, st: &Settings) -> SqlResult<i64> {
    decode::time_in(s, st)
}

/// `interval` input (interval_in, no typmod).
pub fn parse_interval(s: &str, st: &Settings) -> SqlResult<Interval> {
    interval::interval_in(s, st)
}

thread_local! {
    /// This thread's session settings (datetime rule: a backend is a thread, and
    /// PostgreSQL's DateStyle, TimeZone and IntervalStyle are its backend's
    /// globals). The session installs its own before each statement
    /// ([`install`]); input and output functions read them ([`with_session`]).
    static SESSION: std::cell::RefCell<Settings> = std::cell::RefCell::new(Settings::default());
}

/// Runs `f` with this thread's session settings.
pub fn with_session<R>(f: impl FnOnce(&Settings) -> R) -> R {
    SESSION.with(|s| f(&s.borrow()))
}

/// Makes `st` this thread's session settings.
pub fn install(st: &Settings) {
    SESSION.with(|s| s.borrow_mut().clone_from(st));
}

/// The current transaction began at `now_us` (what `now`, `today` read).
pub fn set_now(now_us: i64) {
    SESSION.with(|s| s.borrow_mut().now_us = now_us);
}

/// A timestamptz as its local time in the session's zone (a timestamp); the
/// infinities stay.
pub fn to_local(us: i64, st: &Settings) -> i64 {
    if us == i64::MIN || us == i64::MAX {
        return us;
    }
    let unix = us.div_euclid(USECS_PER_SEC) + EPOCH_DIFF_SECS;
    let (east, _) = st.zone.at_utc(unix);
    us.saturating_add(i64::from(east) * USECS_PER_SEC)
}

/// A local time in the session's zone as a timestamptz (PostgreSQL's
/// timestamp2timestamptz: DetermineTimeZoneOffset); 22008 out of range.
pub fn from_local(local: i64, st: &Settings) -> SqlResult<i64> {
    if local == i64::MIN || local == i64::MAX {
        return Ok(local);
    }
    let west = st
        .zone
        .local_to_west(local.div_euclid(USECS_PER_SEC) + EPOCH_DIFF_SECS);
    local
        .checked_add(i64::from(west) * USECS_PER_SEC)
        .filter(|t| (decode::MIN_TIMESTAMP..decode::END_TIMESTAMP).contains(t))
        .ok_or_else(|| SqlError::new("22008", "timestamp out of range"))
}
