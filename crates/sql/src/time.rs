//! `timestamp` and `timestamptz`: microseconds since 2000-01-01 00:00:00 (UTC for
//! `timestamptz`; the server's TimeZone is UTC), as PostgreSQL keeps them, read and
//! written in PostgreSQL's ISO format.
//!
//! Rules (cited as "time rule N"):
//! 1. Output is `YYYY-MM-DD HH:MM:SS[.ffffff]` with the fraction's trailing zeros
//!    dropped, and `+00` after a `timestamptz`, as PostgreSQL prints with DateStyle
//!    ISO and TimeZone UTC.
//! 2. Input takes a date, optionally ` ` or `T` and a time `HH:MM[:SS[.f]]`, and
//!    optionally a zone (`Z`, `UTC`, `±HH[:MM]`), which a `timestamptz` applies and
//!    a `timestamp` ignores (as PostgreSQL); and `epoch`. Anything else is None.
//! 3. Years 1 to 9999 only (PostgreSQL goes further, and BC): others are None.

/// 2000-01-01 in Unix microseconds.
pub const PG_EPOCH_UNIX_US: i64 = 946_684_800_000_000;
const US_PER_DAY: i64 = 86_400_000_000;

/// Now, in microseconds since 2000-01-01.
pub fn now_us() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_micros() as i64)
        - PG_EPOCH_UNIX_US
}

/// Days since 1970-01-01 of a civil date (Howard Hinnant's algorithm).
pub(crate) fn days_from_civil(y: i64, m: i64, d: i64) -> i64 {
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let mp = (m + 9) % 12;
    let doy = (153 * mp + 2) / 5 + d - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

/// The civil date of days since 1970-01-01.
pub(crate) fn civil_from_days(z: i64) -> (i64, i64, i64) {
    let z = z + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    (yoe + era * 400 + i64::from(m <= 2), m, d)
}

/// A `date` (days since 2000-01-01) as `YYYY-MM-DD`.
pub fn format_date(days: i32) -> String {
    let (y, m, d) = civil_from_days(i64::from(days) + PG_EPOCH_UNIX_US / US_PER_DAY);
    format!("{y:04}-{m:02}-{d:02}")
}

/// A `date` from `YYYY-MM-DD` (or a timestamp's text: its day), or None.
pub fn parse_date(s: &str) -> Option<i32> {
    let us = parse(s, false)?;
    i32::try_from(us.div_euclid(US_PER_DAY)).ok()
}

/// The day of a timestamp, as a `date`.
pub fn date_of(us: i64) -> i32 {
    us.div_euclid(US_PER_DAY) as i32
}

/// Midnight of a `date`, as a timestamp.
pub fn midnight(days: i32) -> crate::SqlResult<i64> {
    let us = i64::from(days).checked_mul(US_PER_DAY).unwrap_or(i64::MAX);
    crate::interval::valid_timestamp(us)
}

/// `us` (since 2000-01-01) plus `months` calendar months, the day clamped to the
/// last of its month (Jan 31 + 1 month = Feb 28 or 29); None past year 1..9999.
pub fn add_months(us: i64, months: i32) -> Option<i64> {
    let unix = us + PG_EPOCH_UNIX_US;
    let (days, rest) = (unix.div_euclid(US_PER_DAY), unix.rem_euclid(US_PER_DAY));
    let (y, m, d) = civil_from_days(days);
    let total = y * 12 + (m - 1) + i64::from(months);
    let (ny, nm) = (total.div_euclid(12), total.rem_euclid(12) + 1);
    if !(1..=9999).contains(&ny) {
        return None;
    }
    let next_first = if nm == 12 {
        days_from_civil(ny + 1, 1, 1)
    } else {
        days_from_civil(ny, nm + 1, 1)
    };
    let last = next_first - days_from_civil(ny, nm, 1);
    let nd = days_from_civil(ny, nm, d.min(last));
    Some(nd * US_PER_DAY + rest - PG_EPOCH_UNIX_US)
}

/// Time rule 1.
pub fn format(us: i64, tz: bool) -> String {
    let unix = us + PG_EPOCH_UNIX_US;
    let (days, rest) = (unix.div_euclid(US_PER_DAY), unix.rem_euclid(US_PER_DAY));
    let (y, mo, d) = civil_from_days(days);
    let secs = rest / 1_000_000;
    let frac = rest % 1_000_000;
    let mut s = format!(
        "{y:04}-{mo:02}-{d:02} {:02}:{:02}:{:02}",
        secs / 3600,
        secs / 60 % 60,
        secs % 60
    );
    if frac != 0 {
        let f = format!("{frac:06}");
        s.push('.');
        s.push_str(f.trim_end_matches('0'));
    }
    if tz {
        s.push_str("+00");
    }
    s
}

fn num(s: &str, digits: std::ops::RangeInclusive<usize>) -> Option<i64> {
    if !digits.contains(&s.len()) || !s.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    s.parse().ok()
}

/// A zone suffix's offset east of UTC in seconds, and the text before it.
fn split_zone(s: &str) -> Option<(&str, i64)> {
    let t = s.trim_end();
    for z in ["UTC", "Z", "GMT"] {
        if let Some(rest) = t.strip_suffix(z) {
            return Some((rest.trim_end(), 0));
        }
    }
    let at = t.rfind(['+', '-'])?;
    // A '-' inside the date is not a zone.
    if t[..at].len() < 10 || !t[..at].contains(':') {
        return None;
    }
    let (sign, z) = (if &t[at..at + 1] == "-" { -1 } else { 1 }, &t[at + 1..]);
    let mut parts = z.split(':');
    let first = parts.next()?;
    let (h, m) = match parts.next() {
        Some(m) => (num(first, 1..=2)?, num(m, 2..=2)?),
        None if first.len() == 4 => (num(&first[..2], 2..=2)?, num(&first[2..], 2..=2)?),
        None => (num(first, 1..=2)?, 0),
    };
    let sec = parts.next().map_or(Some(0), |x| num(x, 2..=2))?;
    if parts.next().is_some() || m > 59 || sec > 59 {
        return None;
    }
    Some((&t[..at], sign * (h * 3600 + m * 60 + sec)))
}

/// The largest time-zone displacement PostgreSQL takes: 15:59:59.
const MAX_ZONE_SECONDS: i64 = 15 * 3600 + 59 * 60 + 59;

/// Whether `input` ends in a zone displacement past [`MAX_ZONE_SECONDS`] (22009
/// "time zone displacement out of range" in PostgreSQL, not a syntax error).
pub fn zone_out_of_range(input: &str) -> bool {
    split_zone(input.trim()).is_some_and(|(_, off)| off.abs() > MAX_ZONE_SECONDS)
}

/// Time rule 2: microseconds since 2000-01-01, or None.
pub fn parse(input: &str, tz: bool) -> Option<i64> {
    let s = input.trim();
    if s.eq_ignore_ascii_case("epoch") {
        return Some(-PG_EPOCH_UNIX_US);
    }
    let (body, offset) = split_zone(s).unwrap_or((s, 0));
    if offset.abs() > MAX_ZONE_SECONDS {
        return None;
    }
    let (date, time) = match body.split_once([' ', 'T']) {
        Some((d, t)) => (d, Some(t.trim())),
        None => (body, None),
    };
    let mut dp = date.split('-');
    let (y, mo, d) = (
        num(dp.next()?, 4..=4)?,
        num(dp.next()?, 1..=2)?,
        num(dp.next()?, 1..=2)?,
    );
    if dp.next().is_some() || !(1..=9999).contains(&y) || !(1..=12).contains(&mo) {
        return None;
    }
    let days = days_from_civil(y, mo, d);
    if civil_from_days(days) != (y, mo, d) {
        return None; // 2023-02-30
    }
    let mut us = 0;
    if let Some(t) = time {
        let (hms, frac) = t.split_once('.').unwrap_or((t, ""));
        let mut tp = hms.split(':');
        let h = num(tp.next()?, 1..=2)?;
        let mi = num(tp.next()?, 2..=2)?;
        let sec = tp.next().map_or(Some(0), |x| num(x, 2..=2))?;
        if tp.next().is_some() || h > 24 || mi > 59 || sec > 60 {
            return None;
        }
        let f = if frac.is_empty() {
            0
        } else {
            let digits: String = frac.chars().chain("000000".chars()).take(6).collect();
            num(&digits, 6..=6)?
        };
        us = ((h * 60 + mi) * 60 + sec) * 1_000_000 + f;
    }
    let local = (days * US_PER_DAY + us) - PG_EPOCH_UNIX_US;
    Some(if tz {
        local - offset * 1_000_000
    } else {
        local
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn prints_and_reads_as_postgres() {
        assert_eq!(format(0, false), "2000-01-01 00:00:00");
        assert_eq!(format(0, true), "2000-01-01 00:00:00+00");
        assert_eq!(format(-1, false), "1999-12-31 23:59:59.999999");
        assert_eq!(format(1_500_000, false), "2000-01-01 00:00:01.5");
        for s in [
            "2026-11-24 18:07:34.123456",
            "1970-01-01 00:00:00",
            "2024-02-29 23:59:59.5",
            "0001-01-01 00:00:00",
            "9999-12-31 23:59:59.999999",
        ] {
            assert_eq!(format(parse(s, false).unwrap(), false), s);
        }
        assert_eq!(parse("epoch", true), Some(-PG_EPOCH_UNIX_US));
        assert_eq!(format_date(0), "2000-01-01");
        assert_eq!(parse_date("1999-12-31"), Some(-1));
        assert_eq!(format_date(parse_date("2026-11-24").unwrap()), "2026-11-24");
        assert_eq!(date_of(-1), -1);
        assert_eq!(midnight(1), Ok(86_400_000_000));
        assert_eq!(parse("2000-01-01", false), Some(0));
        assert_eq!(parse("2000-01-01T01:02", false), Some(3_720_000_000));
        assert_eq!(parse("2000-01-01 02:00:00+02", true), Some(0));
        assert_eq!(parse("2000-01-01 02:00:00+02", false), Some(7_200_000_000));
        assert_eq!(parse("2000-01-01 00:00:00 UTC", true), Some(0));
        assert_eq!(parse("1999-12-31 19:00:00-05:00", true), Some(0));
        let jan31 = parse("2024-01-31 10:00:00", false).unwrap();
        assert_eq!(
            format(add_months(jan31, 1).unwrap(), false),
            "2024-02-29 10:00:00"
        );
        assert_eq!(
            format(add_months(jan31, -2).unwrap(), false),
            "2023-11-30 10:00:00"
        );
        assert_eq!(
            format(add_months(jan31, 13).unwrap(), false),
            "2025-02-28 10:00:00"
        );
        for bad in [
            "",
            "x",
            "2023-02-30",
            "2023-13-01",
            "2023-01-01 25:00",
            "10000-01-01",
        ] {
            assert_eq!(parse(bad, false), None, "{bad}");
        }
    }
}
