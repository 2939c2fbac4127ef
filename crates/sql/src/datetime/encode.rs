//! Date/time output: EncodeDateOnly, EncodeDateTime, EncodeTimeOnly and
//! EncodeInterval from PostgreSQL's datetime.c.

use super::decode::{date2j, j2date, j2day, timestamp2tm, POSTGRES_EPOCH_JDATE};
use super::{DateOrder, DateStyle, IntervalStyle, Settings, Tm};
use super::{EPOCH_DIFF_SECS, USECS_PER_SEC};
use std::fmt::Write;
use strata_types::Interval;

const DAYS: [&str; 7] = ["Sun", "Mon", "Tue", "Wed", "Thu", "Fri", "Sat"];
const MONTHS: [&str; 12] = [
    "Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec",
];

/// The year as printed: 1 BC is year 0 inside.
fn shown_year(year: i32) -> i64 {
    if year > 0 {
        i64::from(year)
    } else {
        -(i64::from(year) - 1)
    }
}

/// AppendSeconds: seconds, then the fraction without trailing zeros.
fn append_seconds(out: &mut String, sec: i32, fsec: i64, fillzeros: bool) {
    if fillzeros {
        let _ = write!(out, "{:02}", sec.unsigned_abs());
    } else {
        let _ = write!(out, "{}", sec.unsigned_abs());
    }
    if fsec != 0 {
        let v = fsec.unsigned_abs();
        if v >= 1_000_000 {
            let _ = write!(out, ".{v}");
            return;
        }
        let digits = format!("{v:06}");
        let _ = write!(out, ".{}", digits.trim_end_matches('0'));
    }
}

/// EncodeTimezone: +hh[:mm[:ss]] of an offset given in seconds west.
fn encode_timezone(out: &mut String, west: i32) {
    let mut sec = west.unsigned_abs();
    let mut min = sec / 60;
    sec -= min * 60;
    let hour = min / 60;
    min -= hour * 60;
    out.push(if west <= 0 { '+' } else { '-' });
    if sec != 0 {
        let _ = write!(out, "{hour:02}:{min:02}:{sec:02}");
    } else if min != 0 {
        let _ = write!(out, "{hour:02}:{min:02}");
    } else {
        let _ = write!(out, "{hour:02}");
    }
}

/// `date` output (date_out / EncodeDateOnly).
pub fn format_date(d: i32, st: &Settings) -> String {
    match d {
        i32::MIN => return "-infinity".into(),
        i32::MAX => return "infinity".into(),
        _ => {}
    }
    let (year, mon, mday) = j2date(i64::from(d) + POSTGRES_EPOCH_JDATE);
    let y = shown_year(year);
    let mut out = match st.style {
        DateStyle::Iso => format!("{y:04}-{mon:02}-{mday:02}"),
        DateStyle::Sql if st.order == DateOrder::Dmy => format!("{mday:02}/{mon:02}/{y:04}"),
        DateStyle::Sql => format!("{mon:02}/{mday:02}/{y:04}"),
        DateStyle::German => format!("{mday:02}.{mon:02}.{y:04}"),
        DateStyle::Postgres if st.order == DateOrder::Dmy => format!("{mday:02}-{mon:02}-{y:04}"),
        DateStyle::Postgres => format!("{mon:02}-{mday:02}-{y:04}"),
    };
    if year <= 0 {
        out.push_str(" BC");
    }
    out
}

/// `time` output (time_out / EncodeTimeOnly).
pub fn format_time(us: i64) -> String {
    let secs = us / USECS_PER_SEC;
    let mut out = format!("{:02}:{:02}:", secs / 3600, secs / 60 % 60);
    append_seconds(&mut out, (secs % 60) as i32, us % USECS_PER_SEC, true);
    out
}

/// `timestamp` output (timestamp_out).
pub fn format_timestamp(us: i64, st: &Settings) -> String {
    match us {
        i64::MIN => return "-infinity".into(),
        i64::MAX => return "infinity".into(),
        _ => {}
    }
    let (tm, fsec) = timestamp2tm(us);
    encode_datetime(&tm, fsec, None, st)
}

/// `timestamptz` output (timestamptz_out): in the session zone, with its
/// offset (ISO) or abbreviation (the other styles).
pub fn format_timestamptz(us: i64, st: &Settings) -> String {
    match us {
        i64::MIN => return "-infinity".into(),
        i64::MAX => return "infinity".into(),
        _ => {}
    }
    let unix = us.div_euclid(USECS_PER_SEC) + EPOCH_DIFF_SECS;
    let (east, abbrev) = st.zone.at_utc(unix);
    let (tm, fsec) = timestamp2tm(us.saturating_add(i64::from(east) * USECS_PER_SEC));
    encode_datetime(&tm, fsec, Some((-east, abbrev)), st)
}

/// EncodeDateTime; `zone` is the offset (seconds west) and abbreviation.
fn encode_datetime(tm: &Tm, fsec: i64, zone: Option<(i32, String)>, st: &Settings) -> String {
    let y = shown_year(tm.year);
    let (mon, mday) = (tm.mon, tm.mday);
    let mut out = String::with_capacity(40);
    let dmy = st.order == DateOrder::Dmy;
    match st.style {
        DateStyle::Iso => {
            let _ = write!(out, "{y:04}-{mon:02}-{mday:02} ");
        }
        DateStyle::Sql if dmy => {
            let _ = write!(out, "{mday:02}/{mon:02}/{y:04} ");
        }
        DateStyle::Sql => {
            let _ = write!(out, "{mon:02}/{mday:02}/{y:04} ");
        }
        DateStyle::German => {
            let _ = write!(out, "{mday:02}.{mon:02}.{y:04} ");
        }
        DateStyle::Postgres => {
            let wday = j2day(date2j(i64::from(tm.year), i64::from(mon), i64::from(mday)));
            let mname = MONTHS[(mon - 1).clamp(0, 11) as usize];
            out.push_str(DAYS[wday as usize]);
            if dmy {
                let _ = write!(out, " {mday:02} {mname} ");
            } else {
                let _ = write!(out, " {mname} {mday:02} ");
            }
        }
    }
    let _ = write!(out, "{:02}:{:02}:", tm.hour, tm.min);
    append_seconds(&mut out, tm.sec, fsec, true);
    if st.style == DateStyle::Postgres {
        let _ = write!(out, " {y:04}");
    }
    if let Some((west, abbrev)) = zone {
        if st.style == DateStyle::Iso {
            encode_timezone(&mut out, west);
        } else {
            out.push(' ');
            out.push_str(&abbrev.chars().take(10).collect::<String>());
        }
    }
    if tm.year <= 0 {
        out.push_str(" BC");
    }
    out
}

/// An interval's fields (PostgreSQL's `struct pg_itm`).
#[derive(Clone, Copy)]
struct Itm {
    year: i64,
    mon: i64,
    mday: i64,
    hour: i64,
    min: i64,
    sec: i32,
    usec: i64,
}

fn interval2itm(iv: &Interval) -> Itm {
    let mut time = iv.micros;
    let hour = time / 3_600_000_000;
    time -= hour * 3_600_000_000;
    let min = time / 60_000_000;
    time -= min * 60_000_000;
    let sec = time / USECS_PER_SEC;
    time -= sec * USECS_PER_SEC;
    Itm {
        year: i64::from(iv.months / 12),
        mon: i64::from(iv.months % 12),
        mday: i64::from(iv.days),
        hour,
        min,
        sec: sec as i32,
        usec: time,
    }
}

/// `interval` output (interval_out / EncodeInterval) in the IntervalStyle.
pub fn format_interval(iv: &Interval, st: &Settings) -> String {
    let t = interval2itm(iv);
    match st.interval {
        IntervalStyle::SqlStandard => interval_sql(&t),
        IntervalStyle::Iso8601 => interval_iso(&t),
        IntervalStyle::Postgres => interval_postgres(&t),
        IntervalStyle::PostgresVerbose => interval_verbose(&t),
    }
}

fn interval_sql(t: &Itm) -> String {
    let Itm {
        mut year,
        mut mon,
        mut mday,
        mut hour,
        mut min,
        mut sec,
        mut usec,
    } = *t;
    let neg = year < 0 || mon < 0 || mday < 0 || hour < 0 || min < 0 || sec < 0 || usec < 0;
    let pos = year > 0 || mon > 0 || mday > 0 || hour > 0 || min > 0 || sec > 0 || usec > 0;
    let has_ym = year != 0 || mon != 0;
    let has_dt = mday != 0 || hour != 0 || min != 0 || sec != 0 || usec != 0;
    let standard = !(neg && pos || has_ym && has_dt);
    let mut out = String::new();
    if neg && standard {
        out.push('-');
        (year, mon, mday, hour, min, sec, usec) = (-year, -mon, -mday, -hour, -min, -sec, -usec);
    }
    if !neg && !pos {
        out.push('0');
    } else if !standard {
        let ys = if year < 0 || mon < 0 { '-' } else { '+' };
        let ds = if mday < 0 { '-' } else { '+' };
        let ss = if hour < 0 || min < 0 || sec < 0 || usec < 0 {
            '-'
        } else {
            '+'
        };
        let _ = write!(
            out,
            "{ys}{}-{} {ds}{} {ss}{}:{:02}:",
            year.abs(),
            mon.abs(),
            mday.abs(),
            hour.abs(),
            min.abs()
        );
        append_seconds(&mut out, sec, usec, true);
    } else if has_ym {
        let _ = write!(out, "{year}-{mon}");
    } else if mday != 0 {
        let _ = write!(out, "{mday} {hour}:{min:02}:");
        append_seconds(&mut out, sec, usec, true);
    } else {
        let _ = write!(out, "{hour}:{min:02}:");
        append_seconds(&mut out, sec, usec, true);
    }
    out
}

fn interval_iso(t: &Itm) -> String {
    if t.year == 0
        && t.mon == 0
        && t.mday == 0
        && t.hour == 0
        && t.min == 0
        && t.sec == 0
        && t.usec == 0
    {
        return "PT0S".into();
    }
    let mut out = String::from("P");
    let part = |out: &mut String, v: i64, unit: char| {
        if v != 0 {
            let _ = write!(out, "{v}{unit}");
        }
    };
    part(&mut out, t.year, 'Y');
    part(&mut out, t.mon, 'M');
    part(&mut out, t.mday, 'D');
    if t.hour != 0 || t.min != 0 || t.sec != 0 || t.usec != 0 {
        out.push('T');
    }
    part(&mut out, t.hour, 'H');
    part(&mut out, t.min, 'M');
    if t.sec != 0 || t.usec != 0 {
        if t.sec < 0 || t.usec < 0 {
            out.push('-');
        }
        append_seconds(&mut out, t.sec, t.usec, false);
        out.push('S');
    }
    out
}

fn interval_postgres(t: &Itm) -> String {
    let mut out = String::new();
    let (mut is_zero, mut is_before) = (true, false);
    for (v, unit) in [(t.year, "year"), (t.mon, "mon"), (t.mday, "day")] {
        if v == 0 {
            continue;
        }
        let _ = write!(
            out,
            "{}{}{v} {unit}{}",
            if is_zero { "" } else { " " },
            if is_before && v > 0 { "+" } else { "" },
            if v != 1 { "s" } else { "" }
        );
        is_before = v < 0;
        is_zero = false;
    }
    if is_zero || t.hour != 0 || t.min != 0 || t.sec != 0 || t.usec != 0 {
        let minus = t.hour < 0 || t.min < 0 || t.sec < 0 || t.usec < 0;
        let sign = if minus {
            "-"
        } else if is_before {
            "+"
        } else {
            ""
        };
        let _ = write!(
            out,
            "{}{sign}{:02}:{:02}:",
            if is_zero { "" } else { " " },
            t.hour.unsigned_abs(),
            t.min.unsigned_abs()
        );
        append_seconds(&mut out, t.sec, t.usec, true);
    }
    out
}

fn interval_verbose(t: &Itm) -> String {
    let mut out = String::from("@");
    let (mut is_zero, mut is_before) = (true, false);
    let units = [
        (t.year, "year"),
        (t.mon, "mon"),
        (t.mday, "day"),
        (t.hour, "hour"),
        (t.min, "min"),
    ];
    for (v, unit) in units {
        if v == 0 {
            continue;
        }
        let mut v = v;
        if is_zero {
            is_before = v < 0;
            v = v.abs();
        } else if is_before {
            v = -v;
        }
        let _ = write!(out, " {v} {unit}{}", if v == 1 { "" } else { "s" });
        is_zero = false;
    }
    if t.sec != 0 || t.usec != 0 {
        out.push(' ');
        if t.sec < 0 || (t.sec == 0 && t.usec < 0) {
            if is_zero {
                is_before = true;
            } else if !is_before {
                out.push('-');
            }
        } else if is_before {
            out.push('-');
        }
        append_seconds(&mut out, t.sec, t.usec, false);
        let plural = t.sec.abs() != 1 || t.usec != 0;
        let _ = write!(out, " sec{}", if plural { "s" } else { "" });
        is_zero = false;
    }
    if is_zero {
        out.push_str(" 0");
    }
    if is_before {
        out.push_str(" ago");
    }
    out
}
