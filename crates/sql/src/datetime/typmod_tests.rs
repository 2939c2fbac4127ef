//! Interval typmod tests: expected strings are PostgreSQL 15's own output
//! (IntervalStyle postgres), the first of them from its regression test
//! interval.sql.

use super::*;

/// The typmod written after `interval` in a test case: "day to second(2)",
/// "second", "(3)" (`interval(3)`), "" (none).
fn typmod(spec: &str) -> IntervalTypmod {
    let (fields, precision) = match spec.find('(') {
        Some(i) => (&spec[..i], spec[i + 1..spec.len() - 1].parse().ok()),
        None => (spec, None),
    };
    let words: Vec<&str> = fields.split_whitespace().collect();
    IntervalTypmod::from_fields(words.first().copied(), words.get(2).copied(), precision)
        .expect(spec)
}

/// (input, typmod, whether a cast (`'input'::interval::interval <typmod>`)
/// rather than a literal (`interval 'input' <typmod>`), PostgreSQL's output).
const CASES: &[(&str, &str, bool, &str)] = &[
    ("999", "second", false, "00:16:39"),
    ("999", "minute", false, "16:39:00"),
    ("999", "hour", false, "999:00:00"),
    ("999", "day", false, "999 days"),
    ("999", "month", false, "83 years 3 mons"),
    ("1", "year", false, "1 year"),
    ("2", "month", false, "2 mons"),
    ("3", "day", false, "3 days"),
    ("4", "hour", false, "04:00:00"),
    ("5", "minute", false, "00:05:00"),
    ("6", "second", false, "00:00:06"),
    ("1", "year to month", false, "1 mon"),
    ("1-2", "year to month", false, "1 year 2 mons"),
    ("1 2", "day to hour", false, "1 day 02:00:00"),
    ("1 2:03", "day to hour", false, "1 day 02:00:00"),
    ("1 2:03:04", "day to hour", false, "1 day 02:00:00"),
    (
        "1 2",
        "day to minute",
        false,
        "ERROR: invalid input syntax for type interval: \"1 2\"",
    ),
    ("1 2:03", "day to minute", false, "1 day 02:03:00"),
    ("1 2:03:04", "day to minute", false, "1 day 02:03:00"),
    (
        "1 2",
        "day to second",
        false,
        "ERROR: invalid input syntax for type interval: \"1 2\"",
    ),
    ("1 2:03", "day to second", false, "1 day 02:03:00"),
    ("1 2:03:04", "day to second", false, "1 day 02:03:04"),
    (
        "1 2",
        "hour to minute",
        false,
        "ERROR: invalid input syntax for type interval: \"1 2\"",
    ),
    ("1 2:03", "hour to minute", false, "1 day 02:03:00"),
    ("1 2:03:04", "hour to minute", false, "1 day 02:03:00"),
    (
        "1 2",
        "hour to second",
        false,
        "ERROR: invalid input syntax for type interval: \"1 2\"",
    ),
    ("1 2:03", "hour to second", false, "1 day 02:03:00"),
    ("1 2:03:04", "hour to second", false, "1 day 02:03:04"),
    (
        "1 2",
        "minute to second",
        false,
        "ERROR: invalid input syntax for type interval: \"1 2\"",
    ),
    ("1 2:03", "minute to second", false, "1 day 00:02:03"),
    ("1 2:03:04", "minute to second", false, "1 day 02:03:04"),
    ("1 +2:03", "minute to second", false, "1 day 00:02:03"),
    ("1 +2:03:04", "minute to second", false, "1 day 02:03:04"),
    ("1 -2:03", "minute to second", false, "1 day -00:02:03"),
    ("1 -2:03:04", "minute to second", false, "1 day -02:03:04"),
    ("123 11", "day to hour", false, "123 days 11:00:00"),
    (
        "123 11",
        "day",
        false,
        "ERROR: invalid input syntax for type interval: \"123 11\"",
    ),
    (
        "123 11",
        "",
        false,
        "ERROR: invalid input syntax for type interval: \"123 11\"",
    ),
    (
        "123 2:03 -2:04",
        "",
        false,
        "ERROR: invalid input syntax for type interval: \"123 2:03 -2:04\"",
    ),
    ("1 day 01:23:45.6789", "(0)", false, "1 day 01:23:46"),
    ("1 day 01:23:45.6789", "(2)", false, "1 day 01:23:45.68"),
    ("12:34.5678", "minute to second(2)", false, "00:12:34.57"),
    ("1.234", "second", false, "00:00:01.234"),
    ("1.234", "second(2)", false, "00:00:01.23"),
    (
        "1 2.345",
        "day to second(2)",
        false,
        "ERROR: invalid input syntax for type interval: \"1 2.345\"",
    ),
    ("1 2:03", "day to second(2)", false, "1 day 02:03:00"),
    (
        "1 2:03.4567",
        "day to second(2)",
        false,
        "1 day 00:02:03.46",
    ),
    (
        "1 2:03:04.5678",
        "day to second(2)",
        false,
        "1 day 02:03:04.57",
    ),
    (
        "1 2.345",
        "hour to second(2)",
        false,
        "ERROR: invalid input syntax for type interval: \"1 2.345\"",
    ),
    (
        "1 2:03.45678",
        "hour to second(2)",
        false,
        "1 day 00:02:03.46",
    ),
    (
        "1 2:03:04.5678",
        "hour to second(2)",
        false,
        "1 day 02:03:04.57",
    ),
    (
        "1 2.3456",
        "minute to second(2)",
        false,
        "ERROR: invalid input syntax for type interval: \"1 2.3456\"",
    ),
    (
        "1 2:03.5678",
        "minute to second(2)",
        false,
        "1 day 00:02:03.57",
    ),
    (
        "1 2:03:04.5678",
        "minute to second(2)",
        false,
        "1 day 02:03:04.57",
    ),
    (
        "9223372036854775807 microseconds",
        "second(0)",
        false,
        "-2562047788:00:54",
    ),
    (
        "9223372036854775807 microseconds",
        "second(5)",
        false,
        "-2562047788:00:54.7758",
    ),
    (
        "-9223372036854775807 microseconds",
        "second(0)",
        false,
        "2562047788:00:54",
    ),
    (
        "-9223372036854775808 microseconds",
        "second(0)",
        false,
        "2562047788:00:54",
    ),
    (
        "-9223372036854775808 microseconds",
        "second",
        false,
        "-2562047788:00:54.775808",
    ),
    ("-1.5 years", "year", false, "-1 years"),
    ("-100:59:59.99", "hour to minute", false, "-100:59:00"),
    ("-1 day -100:59:59.99", "day", false, "-1 days"),
    (
        "1-2 3 4:05:06.789",
        "",
        false,
        "1 year 2 mons 3 days 04:05:06.789",
    ),
    ("-1 -2:03:04.5", "", false, "-1 days -02:03:04.5"),
    ("2 hours 30", "", false, "02:00:30"),
    ("999", "year", false, "999 years"),
    ("P0001-02-03T04:05:06.789", "year", false, "1 year"),
    ("1 2:03:04", "year", false, "00:00:00"),
    ("1.23456789", "month", false, "1 mon"),
    ("PT36H", "month", false, "00:00:00"),
    ("12:34.5678", "month", false, "00:00:00"),
    (
        "1:2:3:4",
        "month",
        false,
        "ERROR: invalid input syntax for type interval: \"1:2:3:4\"",
    ),
    ("1:2", "day", false, "00:00:00"),
    ("-12:34", "day", false, "00:00:00"),
    (
        "1:2:3:4",
        "day",
        false,
        "ERROR: invalid input syntax for type interval: \"1:2:3:4\"",
    ),
    ("1.23456789", "hour", false, "01:00:00"),
    ("1 day -00:00:00.5", "hour", false, "1 day"),
    ("PT36H", "hour", false, "36:00:00"),
    (
        "1 2 3",
        "hour",
        false,
        "ERROR: invalid input syntax for type interval: \"1 2 3\"",
    ),
    ("1.999999 minutes", "minute", false, "00:01:00"),
    ("P1W", "minute", false, "7 days"),
    ("1.23456789", "minute", false, "00:01:00"),
    ("2 hours 30", "second", false, "02:00:30"),
    ("1.23456789", "second", false, "00:00:01.234568"),
    ("12:34:56.789", "second", false, "12:34:56.789"),
    (
        "-1 2.3456",
        "second",
        false,
        "ERROR: invalid input syntax for type interval: \"-1 2.3456\"",
    ),
    ("-1-2", "year to month", false, "-1 years -2 mons"),
    ("1:2", "year to month", false, "00:00:00"),
    ("-1 -2:03:04.5", "year to month", false, "00:00:00"),
    ("PT36H", "day to hour", false, "36:00:00"),
    ("-12:34.5678", "day to hour", false, "00:00:00"),
    ("P1.5Y", "day to hour", false, "1 year 6 mons"),
    ("1 -2:03", "day to minute", false, "1 day -02:03:00"),
    ("P1W", "day to minute", false, "7 days"),
    ("12:34", "day to second", false, "12:34:00"),
    (
        "1 day 01:23:45.6789",
        "day to second",
        false,
        "1 day 01:23:45.6789",
    ),
    ("999", "hour to minute", false, "16:39:00"),
    ("PT1.5M", "hour to minute", false, "00:01:00"),
    ("1.23456789", "hour to minute", false, "00:01:00"),
    (
        "P1Y2M3DT4H5M6.789S",
        "hour to second",
        false,
        "1 year 2 mons 3 days 04:05:06.789",
    ),
    (".5", "hour to second", false, "00:00:00.5"),
    (
        "P0001-02-03T04:05:06.789",
        "hour to second",
        false,
        "1 year 2 mons 3 days 04:05:06.789",
    ),
    (
        "1-2 3 4:05:06.789",
        "minute to second",
        false,
        "1 year 2 mons 3 days 04:05:06.789",
    ),
    ("-0.000001", "minute to second", false, "-00:00:00.000001"),
    ("P1W", "minute to second", false, "7 days"),
    ("1-2 3", "(0)", false, "1 year 2 mons 00:00:03"),
    ("-12:34", "(0)", false, "-12:34:00"),
    ("1 2:03.45678", "(1)", false, "1 day 00:02:03.5"),
    ("-12:34", "(1)", false, "-12:34:00"),
    ("1 2:03", "(1)", false, "1 day 02:03:00"),
    ("PT36H", "(2)", false, "36:00:00"),
    (
        "P1Y2M3DT4H5M6.789S",
        "(2)",
        false,
        "1 year 2 mons 3 days 04:05:06.79",
    ),
    ("@ 1 year 2 mons", "(2)", false, "1 year 2 mons"),
    ("-1-2", "(3)", false, "-1 years -2 mons"),
    ("1 week 1.5 days", "(3)", false, "8 days 12:00:00"),
    ("999", "(3)", false, "00:16:39"),
    (
        "1 2:03:04:05",
        "(3)",
        false,
        "ERROR: invalid input syntax for type interval: \"1 2:03:04:05\"",
    ),
    ("1 +2:03:04", "(4)", false, "1 day 02:03:04"),
    ("0:0.0000005", "(4)", false, "00:00:00"),
    ("@ 1 year 2 mons", "(4)", false, "1 year 2 mons"),
    (
        "1.5 2",
        "(4)",
        false,
        "ERROR: invalid input syntax for type interval: \"1.5 2\"",
    ),
    ("1 day 2", "(5)", false, "1 day 00:00:02"),
    ("1.5", "(5)", false, "00:00:01.5"),
    ("23:59:59.999999", "(5)", false, "24:00:00"),
    (
        "+1 -2",
        "(5)",
        false,
        "ERROR: invalid input syntax for type interval: \"+1 -2\"",
    ),
    ("PT1.5M", "(6)", false, "00:01:30"),
    (
        "1-2 3 4:05:06.789",
        "(6)",
        false,
        "1 year 2 mons 3 days 04:05:06.789",
    ),
    ("@ 1 year 2 mons", "(6)", false, "1 year 2 mons"),
    ("1 week 1.5 days", "second(0)", false, "8 days 12:00:00"),
    (
        "P1Y2M3DT4H5M6.789S",
        "second(0)",
        false,
        "1 year 2 mons 3 days 04:05:07",
    ),
    ("P1W", "second(0)", false, "7 days"),
    ("999", "second(1)", false, "00:16:39"),
    ("1 2:03", "second(1)", false, "1 day 02:03:00"),
    ("1-2", "second(1)", false, "1 year 2 mons"),
    ("23:59:59.999999", "second(2)", false, "24:00:00"),
    ("999", "second(2)", false, "00:16:39"),
    ("1.23456789", "second(2)", false, "00:00:01.23"),
    ("1-2 3", "second(3)", false, "1 year 2 mons 00:00:03"),
    ("59.9999999", "second(3)", false, "00:01:00"),
    ("PT1.5M", "second(3)", false, "00:01:30"),
    ("100:59:59.9999995", "second(4)", false, "101:00:00"),
    ("-1-2", "second(4)", false, "-1 years -2 mons"),
    ("1 day -00:00:00.5", "second(4)", false, "1 day -00:00:00.5"),
    ("23:59:59.999999", "second(5)", false, "24:00:00"),
    (
        "@ 1 year 2 mons 3 days 4 hours 5 mins 6.789 secs ago",
        "second(5)",
        false,
        "-1 years -2 mons -3 days -04:05:06.789",
    ),
    ("-1", "second(5)", false, "-00:00:01"),
    (
        "@ 1 year 2 mons 3 days 4 hours 5 mins 6.789 secs ago",
        "second(6)",
        false,
        "-1 years -2 mons -3 days -04:05:06.789",
    ),
    ("1 +2:03:04", "second(6)", false, "1 day 02:03:04"),
    ("-1.5 hours", "second(6)", false, "-01:30:00"),
    (
        "1 2",
        "second(6)",
        false,
        "ERROR: invalid input syntax for type interval: \"1 2\"",
    ),
    ("12:34.5678", "day to second(0)", false, "00:12:35"),
    ("-1-2", "day to second(0)", false, "-1 years -2 mons"),
    ("-1 +2:03", "day to second(0)", false, "-1 days +02:03:00"),
    ("2 hours 30", "day to second(1)", false, "02:00:30"),
    (
        "P1Y2M3DT4H5M6.789S",
        "day to second(1)",
        false,
        "1 year 2 mons 3 days 04:05:06.8",
    ),
    ("1 2:03", "day to second(1)", false, "1 day 02:03:00"),
    (
        "1 2:03:04:05",
        "day to second(1)",
        false,
        "ERROR: invalid input syntax for type interval: \"1 2:03:04:05\"",
    ),
    (
        "P00010203T040506.7",
        "day to second(2)",
        false,
        "1 year 2 mons 3 days 04:05:06",
    ),
    ("1-2", "day to second(2)", false, "1 year 2 mons"),
    ("-1 +2:03", "day to second(2)", false, "-1 days +02:03:00"),
    (
        "P00010203T040506.7",
        "day to second(3)",
        false,
        "1 year 2 mons 3 days 04:05:06",
    ),
    ("1-2", "day to second(3)", false, "1 year 2 mons"),
    (
        "1 day -00:00:00.5",
        "day to second(3)",
        false,
        "1 day -00:00:00.5",
    ),
    (
        "@ 1 year 2 mons 3 days 4 hours 5 mins 6.789 secs ago",
        "day to second(4)",
        false,
        "-1 years -2 mons -3 days -04:05:06.789",
    ),
    (".5", "day to second(4)", false, "00:00:00.5"),
    (
        "1 year 2 months 3 days 4 hours 5 minutes 6.7 seconds",
        "day to second(4)",
        false,
        "1 year 2 mons 3 days 04:05:06.7",
    ),
    (
        "-1 -2:03:04.5",
        "day to second(5)",
        false,
        "-1 days -02:03:04.5",
    ),
    ("1 2:03", "day to second(5)", false, "1 day 02:03:00"),
    ("1 -2:03", "day to second(5)", false, "1 day -02:03:00"),
    (
        "1 2.3456",
        "day to second(5)",
        false,
        "ERROR: invalid input syntax for type interval: \"1 2.3456\"",
    ),
    ("12:34:56.789", "day to second(6)", false, "12:34:56.789"),
    ("1", "day to second(6)", false, "00:00:01"),
    (
        "P1Y2M3DT4H5M6.789S",
        "day to second(6)",
        false,
        "1 year 2 mons 3 days 04:05:06.789",
    ),
    ("1 -2:03", "hour to second(0)", false, "1 day -02:03:00"),
    ("-12:34.5678", "hour to second(0)", false, "-00:12:35"),
    ("-1-2", "hour to second(0)", false, "-1 years -2 mons"),
    (
        "1 2:03:04:05",
        "hour to second(0)",
        false,
        "ERROR: invalid input syntax for type interval: \"1 2:03:04:05\"",
    ),
    (
        "P0001-02-03T04:05:06.789",
        "hour to second(1)",
        false,
        "1 year 2 mons 3 days 04:05:06.8",
    ),
    (
        "1 day 01:23:45.6789",
        "hour to second(1)",
        false,
        "1 day 01:23:45.7",
    ),
    ("-1.5 hours", "hour to second(1)", false, "-01:30:00"),
    ("-1 +2:03", "hour to second(2)", false, "-1 days +02:03:00"),
    ("P1.5Y", "hour to second(2)", false, "1 year 6 mons"),
    ("59.9999999", "hour to second(3)", false, "00:01:00"),
    (".5", "hour to second(3)", false, "00:00:00.5"),
    (
        "10000000 12:00",
        "hour to second(3)",
        false,
        "10000000 days 12:00:00",
    ),
    (
        "1 2.3456",
        "hour to second(3)",
        false,
        "ERROR: invalid input syntax for type interval: \"1 2.3456\"",
    ),
    (
        "P00010203T040506.7",
        "hour to second(4)",
        false,
        "1 year 2 mons 3 days 04:05:06",
    ),
    ("2 hours 30", "hour to second(4)", false, "02:00:30"),
    ("1 2:03:04", "hour to second(4)", false, "1 day 02:03:04"),
    ("2 hours 30", "hour to second(5)", false, "02:00:30"),
    ("1.23456789", "hour to second(5)", false, "00:00:01.23457"),
    ("12:34", "hour to second(5)", false, "12:34:00"),
    (
        "3 4",
        "hour to second(5)",
        false,
        "ERROR: invalid input syntax for type interval: \"3 4\"",
    ),
    ("100:59:59.9999995", "hour to second(6)", false, "101:00:00"),
    ("1 +2:03:04", "hour to second(6)", false, "1 day 02:03:04"),
    (
        "1 2:03:04.5678",
        "hour to second(6)",
        false,
        "1 day 02:03:04.5678",
    ),
    ("1.23456789", "minute to second(0)", false, "00:00:01"),
    ("1 2:03:04", "minute to second(0)", false, "1 day 02:03:04"),
    ("1", "minute to second(0)", false, "00:00:01"),
    (
        "P0001-02-03T04:05:06.789",
        "minute to second(1)",
        false,
        "1 year 2 mons 3 days 04:05:06.8",
    ),
    ("1 2:03:04", "minute to second(1)", false, "1 day 02:03:04"),
    (
        "1 day 01:23:45.6789",
        "minute to second(1)",
        false,
        "1 day 01:23:45.7",
    ),
    ("999", "minute to second(2)", false, "00:16:39"),
    ("-1.5 hours", "minute to second(2)", false, "-01:30:00"),
    ("1.999999 minutes", "minute to second(3)", false, "00:02:00"),
    ("-12:34.5678", "minute to second(3)", false, "-00:12:34.568"),
    (
        "@ 1 year 2 mons 3 days 4 hours 5 mins 6.789 secs ago",
        "minute to second(3)",
        false,
        "-1 years -2 mons -3 days -04:05:06.789",
    ),
    ("0.5", "minute to second(4)", false, "00:00:00.5"),
    (
        "1 2:03:04.5678",
        "minute to second(4)",
        false,
        "1 day 02:03:04.5678",
    ),
    (
        "P1Y2M3DT4H5M6.789S",
        "minute to second(4)",
        false,
        "1 year 2 mons 3 days 04:05:06.789",
    ),
    ("-0.000001", "minute to second(5)", false, "00:00:00"),
    ("0.5", "minute to second(5)", false, "00:00:00.5"),
    (
        "1-2 3",
        "minute to second(5)",
        false,
        "1 year 2 mons 00:00:03",
    ),
    (
        "1 2.345",
        "minute to second(5)",
        false,
        "ERROR: invalid input syntax for type interval: \"1 2.345\"",
    ),
    (
        "10000000 12:00",
        "minute to second(6)",
        false,
        "10000000 days 00:12:00",
    ),
    (
        "@ 1 year 2 mons",
        "minute to second(6)",
        false,
        "1 year 2 mons",
    ),
    (
        "-12:34.5678",
        "minute to second(6)",
        false,
        "-00:12:34.5678",
    ),
    ("1 2:03.45678", "", true, "1 day 00:02:03.45678"),
    ("1 +2:03:04", "year", true, "00:00:00"),
    ("PT36H", "month", true, "00:00:00"),
    ("-1", "day", true, "00:00:00"),
    ("12:34.5678", "hour", true, "00:00:00"),
    ("PT36H", "minute", true, "36:00:00"),
    ("1 day 01:23:45.6789", "second", true, "1 day 01:23:45.6789"),
    ("-1 -2:03:04.5", "year to month", true, "00:00:00"),
    ("1 2:03.45678", "day to hour", true, "1 day"),
    (
        "P0001-02-03T04:05:06.789",
        "day to minute",
        true,
        "1 year 2 mons 3 days 04:05:00",
    ),
    ("-1", "day to second", true, "-00:00:01"),
    ("0:0.0000005", "hour to minute", true, "00:00:00"),
    ("PT36H", "hour to second", true, "36:00:00"),
    ("1-2 3", "minute to second", true, "1 year 2 mons 00:00:03"),
    ("59.9999999", "(0)", true, "00:01:00"),
    ("1 2:03", "(1)", true, "1 day 02:03:00"),
    ("1 2:03.45678", "(2)", true, "1 day 00:02:03.46"),
    ("-12:34.5678", "(3)", true, "-00:12:34.568"),
    ("PT36H", "(4)", true, "36:00:00"),
    ("1 day 01:23:45.6789", "(5)", true, "1 day 01:23:45.6789"),
    ("1 +2:03:04", "(6)", true, "1 day 02:03:04"),
    (
        "@ 1 year 2 mons 3 days 4 hours 5 mins 6.789 secs ago",
        "second(0)",
        true,
        "-1 years -2 mons -3 days -04:05:07",
    ),
    ("12:34:56.789", "second(1)", true, "12:34:56.8"),
    (
        "P0001-02-03T04:05:06.789",
        "second(2)",
        true,
        "1 year 2 mons 3 days 04:05:06.79",
    ),
    (
        "P0001-02-03T04:05:06.789",
        "second(3)",
        true,
        "1 year 2 mons 3 days 04:05:06.789",
    ),
    ("P1.5Y", "second(4)", true, "1 year 6 mons"),
    ("@ 1 year 2 mons", "second(5)", true, "1 year 2 mons"),
    ("1.999999 minutes", "second(6)", true, "00:01:59.99994"),
    ("12:34:56.789", "day to second(0)", true, "12:34:57"),
    ("-1.5 hours", "day to second(1)", true, "-01:30:00"),
    ("0:0.0000005", "day to second(2)", true, "00:00:00"),
    ("12:34", "day to second(3)", true, "12:34:00"),
    ("-12:34", "day to second(4)", true, "-12:34:00"),
    ("2 hours 30", "day to second(5)", true, "02:00:30"),
    (
        "10000000 12:00",
        "day to second(6)",
        true,
        "10000000 days 12:00:00",
    ),
    ("12:34:56.789", "hour to second(0)", true, "12:34:57"),
    ("12:34", "hour to second(1)", true, "12:34:00"),
    ("PT36H", "hour to second(2)", true, "36:00:00"),
    (
        "P1Y2M3DT4H5M6.789S",
        "hour to second(3)",
        true,
        "1 year 2 mons 3 days 04:05:06.789",
    ),
    (
        "@ 1 year 2 mons 3 days 4 hours 5 mins 6.789 secs ago",
        "hour to second(4)",
        true,
        "-1 years -2 mons -3 days -04:05:06.789",
    ),
    ("-2:03:04.5", "hour to second(5)", true, "-02:03:04.5"),
    ("-1", "hour to second(6)", true, "-00:00:01"),
    ("-1", "minute to second(0)", true, "-00:00:01"),
    ("1-2", "minute to second(1)", true, "1 year 2 mons"),
    ("0.5", "minute to second(2)", true, "00:00:00.5"),
    ("-12:34.5678", "minute to second(3)", true, "-00:12:34.568"),
    ("12:34", "minute to second(4)", true, "12:34:00"),
    (
        "1 2:03.45678",
        "minute to second(5)",
        true,
        "1 day 00:02:03.45678",
    ),
    (
        "1 week 1.5 days",
        "minute to second(6)",
        true,
        "8 days 12:00:00",
    ),
];

#[test]
fn literals_and_casts() {
    let st = Settings::default();
    for &(input, spec, cast, want) in CASES {
        let tm = typmod(spec);
        let got = if cast {
            parse_interval(input, &st).map(|iv| adjust_interval(iv, &tm))
        } else {
            parse_interval_typmod(input, &st, &tm)
        };
        let got = match got {
            Ok(iv) => format_interval(&iv, &st),
            Err(e) => format!("ERROR: {}", e.message),
        };
        assert_eq!(got, want, "interval {input:?} {spec} (cast: {cast})");
    }
}

#[test]
fn sql_standard_input() {
    // IntervalStyle sql_standard: a leading sign applies to every field.
    let st = Settings {
        interval: IntervalStyle::SqlStandard,
        ..Settings::default()
    };
    let tm = typmod("day to minute");
    let iv = parse_interval_typmod("-1 2:03:04", &st, &tm).unwrap();
    assert_eq!(format_interval(&iv, &st), "-1 2:03:00");
    let iv = parse_interval_typmod("-1 2", &st, &typmod("day to hour")).unwrap();
    assert_eq!(format_interval(&iv, &st), "-1 2:00:00");
}

#[test]
fn stored_typmods() {
    // atttypmod and format_type of columns of each typmod.
    let cases = [
        ("", -1, ""),
        ("year", 327679, " year"),
        ("month", 196607, " month"),
        ("day", 589823, " day"),
        ("hour", 67174399, " hour"),
        ("minute", 134283263, " minute"),
        ("second", 268500991, " second"),
        ("year to month", 458751, " year to month"),
        ("day to hour", 67698687, " day to hour"),
        ("day to minute", 201916415, " day to minute"),
        ("day to second", 470351871, " day to second"),
        ("hour to minute", 201392127, " hour to minute"),
        ("hour to second", 469827583, " hour to second"),
        ("minute to second", 402718719, " minute to second"),
        ("(3)", 2147418115, "(3)"),
        ("second(0)", 268435456, " second(0)"),
        ("day to second(6)", 470286342, " day to second(6)"),
        ("minute to second(2)", 402653186, " minute to second(2)"),
        ("hour to second(4)", 469762052, " hour to second(4)"),
    ];
    for (spec, n, text) in cases {
        let tm = typmod(spec);
        assert_eq!(tm.typmod(), n, "{spec}");
        assert_eq!(tm.text(), text, "{spec}");
        assert_eq!(IntervalTypmod::from_typmod(n), Some(tm), "{spec}");
    }
    assert_eq!(IntervalTypmod::from_typmod(7), None);
}

#[test]
fn field_errors() {
    let err = |l: Option<&str>, t: Option<&str>, p: Option<u64>| {
        IntervalTypmod::from_fields(l, t, p)
            .unwrap_err()
            .message
            .clone()
    };
    // Syntax errors as PostgreSQL's grammar gives them.
    assert_eq!(
        err(Some("month"), Some("day"), None),
        "syntax error at or near \"to\""
    );
    assert_eq!(
        err(Some("second"), Some("second"), None),
        "syntax error at or near \"to\""
    );
    assert_eq!(
        err(Some("year"), Some("year"), None),
        "syntax error at or near \"year\""
    );
    assert_eq!(
        err(Some("day"), None, Some(2)),
        "syntax error at or near \"(\""
    );
    assert_eq!(
        err(Some("day"), Some("hour"), Some(2)),
        "syntax error at or near \"(\""
    );
    // INTERVAL(7): PostgreSQL's WARNING, reduced to 6.
    let tm = IntervalTypmod::from_fields(None, None, Some(7)).unwrap();
    assert_eq!(tm.precision, Some(6));
    let tm = IntervalTypmod::from_fields(Some("Second"), None, Some(9)).unwrap();
    assert_eq!((tm.range, tm.precision), (IntervalRange::Second, Some(6)));
    let st = Settings::default();
    let iv = parse_interval_typmod("1.2345678", &st, &tm).unwrap();
    assert_eq!(format_interval(&iv, &st), "00:00:01.234568");
}
