//! Cases checked against PostgreSQL 15.18 (expected values copied from psql).

use super::*;
use crate::datetime::{
    format_date, format_interval, format_time, format_timestamp, format_timestamptz, parse_date,
    parse_interval, parse_time, parse_timestamp, parse_timestamptz,
};
use crate::TextOut;

fn settings(zone: &str) -> Settings {
    let mut st = Settings::default();
    st.set_timezone(zone).unwrap();
    st.now_us = 690_000_000_000_000; // 2021-11-13 ...
    st
}

fn sql_type(t: &str) -> SqlType {
    match t {
        "timestamp" => TS,
        "timestamptz" => TZ,
        "date" => D,
        "time" => TM,
        "interval" => IV,
        "float8" => F8,
        "int4" => I4,
        _ => T,
    }
}

fn datum(t: &str, v: &str, st: &Settings) -> SqlResult<Datum> {
    if v == "\\N" {
        return Ok(Datum::Null);
    }
    Ok(match t {
        "timestamp" => Datum::Timestamp(parse_timestamp(v, st)?),
        "timestamptz" => Datum::TimestampTz(parse_timestamptz(v, st)?),
        "date" => Datum::Date(parse_date(v, st)?),
        "time" => Datum::Time(parse_time(v, st)?),
        "interval" => Datum::Interval(parse_interval(v, st)?),
        "float8" => Datum::Float8(strata_types::Float::new(match v {
            "NaN" => f64::NAN,
            "Infinity" => f64::INFINITY,
            "-Infinity" => f64::NEG_INFINITY,
            _ => v.parse().unwrap(),
        })),
        "int4" => Datum::Int4(v.parse().map_err(|_| {
            SqlError::new(
                "22003",
                format!("value \"{v}\" is out of range for type integer"),
            )
        })?),
        _ => Datum::Text(v.to_string()),
    })
}

fn show(d: &Datum, st: &Settings) -> String {
    match d {
        Datum::Date(v) => format_date(*v, st),
        Datum::Timestamp(v) => format_timestamp(*v, st),
        Datum::TimestampTz(v) => format_timestamptz(*v, st),
        Datum::Time(v) => format_time(*v),
        Datum::Interval(v) => format_interval(v, st),
        Datum::Bool(b) => if *b { "true" } else { "false" }.into(),
        other => other.to_text().unwrap_or_else(|| "NULL".into()),
    }
}

fn binop(op: &str, a: &Datum, b: &Datum, st: &Settings) -> SqlResult<Datum> {
    use Datum::*;
    Ok(match (op, a, b) {
        ("+", Timestamp(t), Interval(i)) => Timestamp(timestamp_pl_interval(*t, *i)?),
        ("-", Timestamp(t), Interval(i)) => Timestamp(timestamp_mi_interval(*t, *i)?),
        ("+", TimestampTz(t), Interval(i)) => TimestampTz(timestamptz_pl_interval(*t, *i, st)?),
        ("-", TimestampTz(t), Interval(i)) => TimestampTz(timestamptz_mi_interval(*t, *i, st)?),
        ("+", Date(d), Interval(i)) => Timestamp(date_pl_interval(*d, *i)?),
        ("-", Date(d), Interval(i)) => Timestamp(date_mi_interval(*d, *i)?),
        ("-", Timestamp(x), Timestamp(y)) | ("-", TimestampTz(x), TimestampTz(y)) => {
            Interval(timestamp_mi(*x, *y)?)
        }
        ("+", Interval(x), Interval(y)) => Interval(interval_pl(*x, *y)?),
        ("-", Interval(x), Interval(y)) => Interval(interval_mi(*x, *y)?),
        ("*", Interval(x), Float8(f)) => Interval(interval_mul(*x, f.get())?),
        ("/", Interval(x), Float8(f)) => Interval(interval_div(*x, f.get())?),
        ("+", Time(t), Interval(i)) => Time(time_pl_interval(*t, *i)),
        ("-", Time(t), Interval(i)) => Time(time_mi_interval(*t, *i)),
        ("-", Time(x), Time(y)) => Interval(time_mi_time(*x, *y)),
        ("-", Date(x), Date(y)) => Int4(date_mi(*x, *y)?),
        ("+", Date(x), Int4(n)) => Date(date_pli(*x, *n)?),
        ("-", Date(x), Int4(n)) => Date(date_mii(*x, *n)?),
        ("+", Date(x), Time(t)) => Timestamp(date_pl_time(*x, *t)?),
        _ => panic!("no operator {op} {a:?} {b:?}"),
    })
}

fn cast(to: &str, a: &Datum, st: &Settings) -> SqlResult<Datum> {
    use Datum::*;
    let opt = |o: Option<i64>| o.map_or(Null, Time);
    Ok(match (a, to) {
        (TimestampTz(t), "timestamp") => Timestamp(timestamptz_to_timestamp(*t, st)?),
        (TimestampTz(t), "date") => Date(timestamptz_to_date(*t, st)?),
        (TimestampTz(t), "time") => opt(timestamptz_to_time(*t, st)?),
        (Timestamp(t), "timestamptz") => TimestampTz(timestamp_to_timestamptz(*t, st)?),
        (Timestamp(t), "date") => Date(timestamp_to_date(*t)?),
        (Timestamp(t), "time") => opt(timestamp_to_time(*t)?),
        (Date(d), "timestamptz") => TimestampTz(date_to_timestamptz(*d, st)?),
        (Date(d), "timestamp") => Timestamp(date_to_timestamp(*d)?),
        (Time(t), "interval") => Interval(time_to_interval(*t)),
        (Interval(i), "time") => Time(interval_to_time(*i)),
        _ => panic!("no cast {a:?} {to}"),
    })
}

/// One case: zone, kind (op, cast, fn), name, then typed arguments.
fn run(fields: &[&str], now: Option<i64>) -> String {
    let mut st = settings(fields[0]);
    if let Some(now) = now {
        st.now_us = now;
    }
    let n: usize = fields[3].parse().unwrap();
    let mut vals = Vec::new();
    let mut types = Vec::new();
    for k in 0..n {
        let (t, v) = (fields[4 + 2 * k], fields[5 + 2 * k]);
        types.push(sql_type(t));
        match datum(t, v, &st) {
            Ok(d) => vals.push(d),
            Err(e) => return format!("ERROR:{}:{}", e.code, e.message),
        }
    }
    let r = match fields[1] {
        "op" if n == 1 => interval_um(interval(&vals[0])).map(Datum::Interval),
        "op" => binop(fields[2], &vals[0], &vals[1], &st),
        "cast" => cast(fields[2], &vals[0], &st),
        _ => {
            let (func, ps, ret) = signature(fields[2], &types).expect("signature");
            let Func::Date(f, _) = func else { panic!() };
            assert_eq!(ps.len(), n);
            if f.strict() && vals.contains(&Datum::Null) {
                Ok(Datum::Null)
            } else {
                eval(f, ret, &vals, &st)
            }
        }
    };
    match r {
        Ok(d) => show(&d, &st),
        Err(e) => format!("ERROR:{}:{}", e.code, e.message),
    }
}

/// The big comparison: `DATEFN_CASES=/tmp/df/cases.tsv cargo test -p
/// strata-sql datefn::tests::pg_cases -- --ignored`.
#[test]
#[ignore]
fn pg_cases() {
    let path = std::env::var("DATEFN_CASES").unwrap();
    let text = std::fs::read_to_string(path).unwrap();
    let (mut bad, mut total) = (0, 0);
    std::panic::set_hook(Box::new(|_| {}));
    for line in text.lines() {
        let fields: Vec<&str> = line.split('\t').collect();
        let want = fields[fields.len() - 1];
        let got = std::panic::catch_unwind(|| run(&fields, Some(crate::time::now_us())))
            .unwrap_or_else(|_| "PANIC".into());
        total += 1;
        if got != want {
            bad += 1;
            println!(
                "DIFF {}\n  want {want}\n  got  {got}",
                fields[..fields.len() - 1].join(" | ")
            );
        }
    }
    println!("{bad} of {total} differ");
    assert_eq!(bad, 0);
}

/// Compact cases: zone, kind, name, typed arguments and PostgreSQL's result.
const CASES: &str = include_str!("cases.tsv");

#[test]
fn matches_postgresql() {
    let mut bad = Vec::new();
    for line in CASES.lines().filter(|l| !l.is_empty()) {
        let fields: Vec<&str> = line.split('\t').collect();
        let want = fields[fields.len() - 1];
        let got = run(&fields, None);
        if got != want {
            bad.push(format!("{line}\n  got {got}"));
        }
    }
    assert!(bad.is_empty(), "{}", bad.join("\n"));
}

#[test]
fn c_conversions_and_g_format() {
    assert_eq!(c_i32(f64::NAN), i32::MIN);
    assert_eq!(c_i32(3e9), i32::MIN);
    assert_eq!(c_i32(-2.9), -2);
    assert_eq!(fmt_g(60.5, 2), "60.5");
    assert_eq!(fmt_g(5.0, 2), "05");
    assert_eq!(fmt_g(1e-7, 2), "1e-07");
    assert_eq!(fmt_g(1e11, 0), "1e+11");
    assert_eq!(fmt_g(123456.0, 0), "123456");
    assert_eq!(fmt_g(1234567.0, 0), "1.23457e+06");
}

#[test]
fn interval_keys_order_as_postgresql() {
    let st = settings("UTC");
    let key = |s: &str| interval_cmp_key(parse_interval(s, &st).unwrap());
    assert_eq!(key("1 mon"), key("30 days"));
    assert_eq!(key("1 day"), key("24 hours"));
    assert_eq!(key("1 year"), key("360 days"));
    assert!(key("-1 mon") < key("-29 days"));
    assert!(key("1 mon 1 sec") > key("30 days"));
    assert!(key("-178956970 years -8 mons") < key("-2147483648 days"));
}

#[test]
fn infinities_stay_or_refuse_as_postgresql() {
    let st = settings("America/Los_Angeles");
    let day = Interval {
        months: 1,
        days: 1,
        micros: 1,
    };
    assert_eq!(timestamp_pl_interval(i64::MAX, day).unwrap(), i64::MAX);
    assert_eq!(
        timestamptz_mi_interval(i64::MIN, day, &st).unwrap(),
        i64::MIN
    );
    let e = timestamp_mi(i64::MAX, 0).unwrap_err();
    assert_eq!(
        (e.code, e.message.as_str()),
        ("22008", "cannot subtract infinite timestamps")
    );
    let e = date_mi(i32::MAX, 0).unwrap_err();
    assert_eq!(e.message, "cannot subtract infinite dates");
    assert_eq!(date_pli(i32::MIN, 5).unwrap(), i32::MIN);
    assert_eq!(timestamp_to_time(i64::MAX).unwrap(), None);
    assert_eq!(timestamptz_to_date(i64::MIN, &st).unwrap(), i32::MIN);
}

#[test]
fn signatures_resolve_as_postgresql() {
    let ret = |name: &str, args: &[SqlType]| signature(name, args).map(|s| (s.1.to_vec(), s.2));
    assert_eq!(ret("age", &[TS, D]), Some((vec![TS, TS], IV)));
    assert_eq!(ret("age", &[TS, TZ]), Some((vec![TZ, TZ], IV)));
    assert_eq!(ret("age", &[D]), Some((vec![TZ], IV)));
    assert_eq!(ret("date_trunc", &[T, D]), Some((vec![T, TZ], TZ)));
    assert_eq!(ret("date_trunc", &[T, SqlType::Unknown]), None);
    assert_eq!(ret("date_part", &[T, SqlType::Unknown]), None);
    assert_eq!(
        ret("extract", &[T, D]),
        Some((vec![T, D], SqlType::Numeric))
    );
    assert_eq!(ret("timezone", &[T, TS]), Some((vec![T, TS], TZ)));
    assert_eq!(ret("timezone", &[IV, TZ]), Some((vec![IV, TZ], TS)));
    assert_eq!(
        ret("overlaps", &[TS, IV, TS, TS]),
        Some((vec![TS, IV, TS, TS], SqlType::Bool))
    );
    assert_eq!(ret("make_interval", &[I4, I4]), Some((vec![I4, I4], IV)));
    assert!(!DateFn::DatePartTz.immutable() && DateFn::DatePart.immutable());
    assert!(!DateFn::Overlaps.strict() && DateFn::Age.strict());
}
