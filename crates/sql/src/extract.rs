//! `EXTRACT(field FROM x)` and `date_part('field', x)` over dates and timestamps,
//! as PostgreSQL 15 computes them.
//!
//! Rules (cited as "extract rule N"):
//! 1. EXTRACT gives numeric, date_part double precision (PostgreSQL 14 onwards).
//!    Seconds carry six decimals from a timestamp (`40.000000`), milliseconds
//!    three; from a date, every field is whole.
//! 2. A date has no time of day: EXTRACT of hour, minute, second, milliseconds or
//!    microseconds from a date is 0A000 ("unit ... not supported for type date"),
//!    as PostgreSQL's; date_part takes the date as its midnight.
//! 3. Years before 1 are BC: year 0 is 1 BC, shown as -1; century and millennium
//!    count as PostgreSQL's (the 21st century begins in 2001).
//! 4. timestamptz fields are taken in UTC (Strata's sessions run in UTC).
//! 5. The week is ISO 8601's (weeks begin on Monday; week 1 holds January 4th);
//!    isoyear is the year that week belongs to; dow counts from Sunday as 0,
//!    isodow from Monday as 1.

use crate::time::{civil_from_days, days_from_civil, PG_EPOCH_UNIX_US};
use crate::{SqlError, SqlResult};
use strata_engine::{Datum, Numeric};

const US_PER_DAY: i64 = 86_400_000_000;
const UNIX_DAYS_AT_PG_EPOCH: i64 = PG_EPOCH_UNIX_US / US_PER_DAY;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Field {
    Year,
    Month,
    Day,
    Hour,
    Minute,
    Second,
    Milliseconds,
    Microseconds,
    Quarter,
    Dow,
    Isodow,
    Doy,
    Week,
    Isoyear,
    Decade,
    Century,
    Millennium,
    Epoch,
    Julian,
}

impl Field {
    /// A field by PostgreSQL's names for it (with its plurals and abbreviations).
    pub fn parse(name: &str) -> SqlResult<Field> {
        use Field as F;
        Ok(match name.to_ascii_lowercase().as_str() {
            "year" | "years" | "y" | "yr" | "yrs" => F::Year,
            "month" | "months" | "mon" | "mons" => F::Month,
            "day" | "days" | "d" => F::Day,
            "hour" | "hours" | "h" | "hr" | "hrs" => F::Hour,
            "minute" | "minutes" | "m" | "min" | "mins" => F::Minute,
            "second" | "seconds" | "s" | "sec" | "secs" => F::Second,
            "millisecond" | "milliseconds" | "ms" | "msec" | "msecs" => F::Milliseconds,
            "microsecond" | "microseconds" | "us" | "usec" | "usecs" => F::Microseconds,
            "quarter" | "qtr" => F::Quarter,
            "dow" => F::Dow,
            "isodow" => F::Isodow,
            "doy" => F::Doy,
            "week" | "weeks" | "w" => F::Week,
            "isoyear" => F::Isoyear,
            "decade" | "decades" | "dec" | "decs" => F::Decade,
            "century" | "centuries" | "c" | "cent" => F::Century,
            "millennium" | "millennia" | "mil" | "mils" => F::Millennium,
            "epoch" => F::Epoch,
            "julian" | "j" => F::Julian,
            other => {
                return Err(SqlError::new(
                    "22023",
                    format!("unit \"{other}\" not recognized for type timestamp without time zone"),
                ))
            }
        })
    }

    pub fn name(self) -> &'static str {
        use Field as F;
        match self {
            F::Year => "year",
            F::Month => "month",
            F::Day => "day",
            F::Hour => "hour",
            F::Minute => "minute",
            F::Second => "second",
            F::Milliseconds => "milliseconds",
            F::Microseconds => "microseconds",
            F::Quarter => "quarter",
            F::Dow => "dow",
            F::Isodow => "isodow",
            F::Doy => "doy",
            F::Week => "week",
            F::Isoyear => "isoyear",
            F::Decade => "decade",
            F::Century => "century",
            F::Millennium => "millennium",
            F::Epoch => "epoch",
            F::Julian => "julian",
        }
    }
}

/// The field of `d` (a date, timestamp or timestamptz): numeric for EXTRACT,
/// double precision for date_part (extract rule 1).
pub fn extract(field: Field, d: &Datum, numeric: bool) -> SqlResult<Datum> {
    let (us, date) = match d {
        Datum::Null => return Ok(Datum::Null),
        Datum::Date(days) => (i64::from(*days) * US_PER_DAY, true),
        Datum::Timestamp(us) | Datum::TimestampTz(us) => (*us, false),
        _ => return Err(SqlError::unsupported("EXTRACT from this type")),
    };
    let time_field = matches!(
        field,
        Field::Hour | Field::Minute | Field::Second | Field::Milliseconds | Field::Microseconds
    );
    if date && numeric && time_field {
        return Err(SqlError::new(
            "0A000",
            format!("unit \"{}\" not supported for type date", field.name()),
        ));
    }
    // (value, decimal places)
    let (v, scale) = value(field, us, date);
    Ok(if numeric {
        Datum::Numeric(Numeric::from_i64_scaled(v, scale as u16))
    } else {
        let f = v as f64 / 10f64.powi(scale as i32);
        Datum::Float8(strata_types::Float::new(f))
    })
}

/// The field as an integer scaled by 10^scale.
fn value(field: Field, us: i64, date: bool) -> (i64, u32) {
    let days = us.div_euclid(US_PER_DAY);
    let tod = us.rem_euclid(US_PER_DAY);
    let (y, m, d) = civil_from_days(days + UNIX_DAYS_AT_PG_EPOCH);
    let bc = |y: i64| if y <= 0 { y - 1 } else { y };
    match field {
        Field::Year => (bc(y), 0),
        Field::Month => (m, 0),
        Field::Day => (d, 0),
        Field::Hour => (tod / 3_600_000_000, 0),
        Field::Minute => (tod / 60_000_000 % 60, 0),
        Field::Second => (tod % 60_000_000, 6),
        Field::Milliseconds => (tod % 60_000_000, 3),
        Field::Microseconds => (tod % 60_000_000, 0),
        Field::Quarter => ((m - 1) / 3 + 1, 0),
        Field::Dow => ((days + 6).rem_euclid(7), 0),
        Field::Isodow => ((days + 5).rem_euclid(7) + 1, 0),
        Field::Doy => (
            days + UNIX_DAYS_AT_PG_EPOCH - days_from_civil(y, 1, 1) + 1,
            0,
        ),
        Field::Week => (iso_week(days).1, 0),
        Field::Isoyear => (bc(iso_week(days).0), 0),
        Field::Decade => (bc(y).div_euclid(10), 0),
        Field::Century => (century(bc(y), 100), 0),
        Field::Millennium => (century(bc(y), 1000), 0),
        Field::Epoch if date => ((us + PG_EPOCH_UNIX_US) / 1_000_000, 0),
        Field::Epoch => (us + PG_EPOCH_UNIX_US, 6),
        Field::Julian if date => (days + 2_451_545, 0),
        Field::Julian => ((days + 2_451_545) * US_PER_DAY + tod, 0),
    }
}

/// Century or millennium of a (BC-signed) year (extract rule 3).
fn century(y: i64, per: i64) -> i64 {
    if y > 0 {
        (y + per - 1) / per
    } else {
        -((per - 1 - (y + 1)) / per)
    }
}

/// (ISO year, ISO week) of a day (days since 2000-01-01; extract rule 5).
fn iso_week(days: i64) -> (i64, i64) {
    let unix = days + UNIX_DAYS_AT_PG_EPOCH;
    // Monday = 0; 1970-01-01 was a Thursday.
    let wd = (unix + 3).rem_euclid(7);
    let thursday = unix - wd + 3;
    let (y, _, _) = civil_from_days(thursday);
    let week = (thursday - days_from_civil(y, 1, 1)) / 7 + 1;
    (y, week)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn date(s: &str) -> Datum {
        Datum::Date(crate::time::parse_date(s).unwrap())
    }
    fn ts(s: &str) -> Datum {
        Datum::Timestamp(crate::time::parse(s, false).unwrap())
    }
    fn num(f: &str, d: &Datum) -> String {
        match extract(Field::parse(f).unwrap(), d, true).unwrap() {
            Datum::Numeric(n) => n.to_string(),
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn fields_of_dates_and_timestamps_are_postgresqls() {
        let t = ts("2001-02-16 20:38:40.5");
        assert_eq!(num("year", &t), "2001");
        assert_eq!(num("month", &t), "2");
        assert_eq!(num("day", &t), "16");
        assert_eq!(num("hour", &t), "20");
        assert_eq!(num("minute", &t), "38");
        assert_eq!(num("second", &t), "40.500000");
        assert_eq!(num("milliseconds", &t), "40500.000");
        assert_eq!(num("quarter", &t), "1");
        assert_eq!(num("dow", &t), "5");
        assert_eq!(num("isodow", &t), "5");
        assert_eq!(num("doy", &t), "47");
        assert_eq!(num("week", &t), "7");
        assert_eq!(num("decade", &t), "200");
        assert_eq!(num("century", &t), "21");
        assert_eq!(num("millennium", &t), "3");
        assert_eq!(num("epoch", &t), "982355920.500000");
        assert_eq!(num("year", &date("1995-03-15")), "1995");
        assert_eq!(num("epoch", &date("2001-02-16")), "982281600");
        assert_eq!(num("dow", &date("2000-01-02")), "0");
        assert_eq!(num("isodow", &date("2000-01-02")), "7");
        // 2005-01-01 is in ISO week 53 of 2004.
        assert_eq!(num("week", &date("2005-01-01")), "53");
        assert_eq!(num("isoyear", &date("2005-01-01")), "2004");
        assert_eq!(num("century", &date("2000-12-31")), "20");
        assert_eq!(num("julian", &date("2000-01-01")), "2451545");
    }

    #[test]
    fn dates_have_no_time_fields_and_date_part_is_double() {
        let e = extract(Field::Hour, &date("2001-02-16"), true).unwrap_err();
        assert_eq!(e.code, "0A000");
        assert_eq!(
            extract(Field::Hour, &date("2001-02-16"), false).unwrap(),
            Datum::Float8(strata_types::Float::new(0.0))
        );
        assert!(Field::parse("fortnight").is_err());
        assert_eq!(
            extract(Field::Year, &Datum::Null, true).unwrap(),
            Datum::Null
        );
    }
}
