//! Tests: expected strings are PostgreSQL 15's own output.

use super::*;

/// The sessions the expected strings were taken in (psql with SET timezone,
/// datestyle, intervalstyle). 'A' is PostgreSQL's regression tests' own.
fn session(combo: char) -> Settings {
    let (zone, style, interval) = match combo {
        'A' => (
            "America/Los_Angeles",
            "Postgres, MDY",
            IntervalStyle::PostgresVerbose,
        ),
        'B' => ("America/Los_Angeles", "ISO, MDY", IntervalStyle::Postgres),
        'C' => ("Europe/Helsinki", "SQL, DMY", IntervalStyle::SqlStandard),
        'D' => ("Asia/Kolkata", "German", IntervalStyle::Iso8601),
        'E' => ("UTC", "ISO, YMD", IntervalStyle::Postgres),
        'F' => ("EST5EDT", "SQL, MDY", IntervalStyle::SqlStandard),
        'G' => ("+05", "Postgres, DMY", IntervalStyle::Iso8601),
        'H' => ("Europe/London", "ISO, DMY", IntervalStyle::PostgresVerbose),
        'I' => ("Australia/Lord_Howe", "German", IntervalStyle::Postgres),
        'J' => ("Europe/Moscow", "Postgres, YMD", IntervalStyle::SqlStandard),
        _ => ("-03:30", "SQL, YMD", IntervalStyle::Postgres),
    };
    let mut st = Settings::default();
    st.set_timezone(zone).unwrap();
    st.parse_datestyle(style).unwrap();
    st.interval = interval;
    st
}

/// One test per case: (session, type, input, psql's output or error).
macro_rules! cases {
    ($($name:ident: $combo:literal, $ty:literal, $input:literal, $want:literal;)*) => {
        $(
            #[test]
            fn $name() {
                assert_eq!(round_trip($ty, $input, &session($combo)), $want, "{}", $input);
            }
        )*
    };
}

cases! {
    a_date_1957_04_09: 'A', "date", "1957-04-09", "04-09-1957";
    a_date_01_08_99: 'A', "date", "01 08 99", "01-08-1999";
    a_date_february_29_1752: 'A', "date", "February 29, 1752", "02-29-1752";
    a_date_1358_09_20_09_32_04_utc: 'A', "date", "1358-09-20 09:32:04 UTC", "09-20-1358";
    a_date_2100_10_06_03_30_america_los_angele: 'A', "date", "2100-10-06 03:30 America/Los_Angeles", "10-06-2100";
    a_date_2017_01_18_00_00: 'A', "date", "2017-01-18 00:00", "01-18-2017";
    a_date_1_1_294277: 'A', "date", "1.1.294277", "01-01-294277";
    a_date_wed_jul_11_10_51_14_gmt_4_2001: 'A', "date", "Wed Jul 11 10:51:14 GMT+4 2001", "07-11-2001";
    a_date_1900_12_31: 'A', "date", "1900-12-31", "12-31-1900";
    a_date_2000_11_03_02_30_australia_sydney: 'A', "date", "2000-11-03 02:30 Australia/Sydney", "11-03-2000";
    a_date_2020_02_11_15_44_17_71393: 'A', "date", "2020-02-11 15:44:17.71393", "02-11-2020";
    a_date_18_1_1999: 'A', "date", "18/1/1999", "ERR 22008 date/time field value out of range: \"18/1/1999\"";
    a_date_p00021015t103020: 'A', "date", "P00021015T103020", "ERR 22007 invalid input syntax for type date: \"P00021015T103020\"";
    a_date_99_jan_08: 'A', "date", "99-Jan-08", "ERR 22008 date/time field value out of range: \"99-Jan-08\"";
    a_timestamptz_2_28_45_23_59_59_999999: 'A', "timestamptz", "2/28/45 23:59:59.999999", "Tue Feb 28 23:59:59.999999 2045 PST";
    a_timestamptz_2050_11_05_01_30_america_los: 'A', "timestamptz", "2050-11-05 01:30 America/Los_Angeles", "Sat Nov 05 01:30:00 2050 PDT";
    a_timestamptz_2014_12_10_00_00_00_europe_p: 'A', "timestamptz", "2014-12-10 00:00:00 Europe/Prague", "Tue Dec 09 15:00:00 2014 PST";
    a_timestamptz_1901_01_01: 'A', "timestamptz", "1901-01-01", "Tue Jan 01 00:00:00 1901 PST";
    a_timestamptz_1900_12_31: 'A', "timestamptz", "1900-12-31", "Mon Dec 31 00:00:00 1900 PST";
    a_timestamptz_1000_12_31: 'A', "timestamptz", "1000-12-31", "Wed Dec 31 00:00:00 1000 LMT";
    a_timestamptz_2000_11_05_01_30_america_new: 'A', "timestamptz", "2000-11-05 01:30 America/New_York", "Sat Nov 04 22:30:00 2000 PST";
    a_timestamptz_0055_08_10_bc: 'A', "timestamptz", "0055-08-10 BC", "Sat Aug 10 00:00:00 0055 LMT BC";
    a_timestamptz_0010_01_01: 'A', "timestamptz", "0010-01-01", "Fri Jan 01 00:00:00 0010 LMT";
    a_timestamptz_jan_1_69: 'A', "timestamptz", "Jan 1, 69", "Tue Jan 01 00:00:00 2069 PST";
    a_timestamptz_2000_10_29_02_30_europe_mosc: 'A', "timestamptz", "2000-10-29 02:30 Europe/Moscow", "Sat Oct 28 16:30:00 2000 PDT";
    a_timestamptz_990108: 'A', "timestamptz", "990108", "Fri Jan 08 00:00:00 1999 PST";
    a_timestamptz_2024_02_01_17_00_00: 'A', "timestamptz", "2024-02-01 17:00:00", "Thu Feb 01 17:00:00 2024 PST";
    a_timestamptz_2018_11_02_12_34_56_78901234: 'A', "timestamptz", "2018-11-02 12:34:56.78901234", "Fri Nov 02 12:34:56.789012 2018 PDT";
    a_timestamptz_0002_12_31_bc: 'A', "timestamptz", "0002-12-31 BC", "Fri Dec 31 00:00:00 0002 LMT BC";
    a_timestamptz_0100_12_31_bc: 'A', "timestamptz", "0100-12-31 BC", "Tue Dec 31 00:00:00 0100 LMT BC";
    a_timestamptz_1970_01_01: 'A', "timestamptz", "1970-01-01", "Thu Jan 01 00:00:00 1970 PST";
    a_timestamptz_41_mon_13_ms_20_y: 'A', "timestamptz", "@ -41 mon -13 ms -20 y", "ERR 22009 time zone displacement out of range: \"@ -41 mon -13 ms -20 y\"";
    a_timestamptz_123_2_03_2_04: 'A', "timestamptz", "123 2:03 -2:04", "ERR 22007 invalid input syntax for type timestamp with time zone: \"123 2:03 -2:04\"";
    a_timestamptz_1_minute: 'A', "timestamptz", "@ 1 minute", "ERR 22007 invalid input syntax for type timestamp with time zone: \"@ 1 minute\"";
    a_timestamptz_hh_hh12_hh24_mi_ss_ssss: 'A', "timestamptz", "HH HH12 HH24 MI SS SSSS", "ERR 22007 invalid input syntax for type timestamp with time zone: \"HH HH12 HH24 MI SS SSSS\"";
    a_timestamptz_p1_1y0m3dt4h5m6s: 'A', "timestamptz", "P1.1Y0M3DT4H5M6S", "ERR 22007 invalid input syntax for type timestamp with time zone: \"P1.1Y0M3DT4H5M6S\"";
    a_interval_1_ms: 'A', "interval", "1 ms", "@ 0.001 secs";
    a_interval_0: 'A', "interval", "0", "@ 0";
    a_interval_1_2_3_4_05_06_789: 'A', "interval", "+1-2 -3 +4:05:06.789", "@ 1 year 2 mons -3 days 4 hours 5 mins 6.789 secs";
    a_interval_1: 'A', "interval", "+1", "@ 1 sec";
    a_interval_p3y10m5dt_27h5m9_385s: 'A', "interval", "P3Y10M5DT-27H5M9.385S", "@ 3 years 10 mons 5 days -26 hours -54 mins -50.615 secs";
    a_interval_p1_1y0m3dt4h5m6s: 'A', "interval", "P1.1Y0M3DT4H5M6S", "@ 1 year 1 mon 3 days 4 hours 5 mins 6 secs";
    a_interval_10: 'A', "interval", "+10", "@ 10 secs";
    a_interval_p1y0m3dt4h5m6s: 'A', "interval", "P1Y0M3DT4H5M6S", "@ 1 year 3 days 4 hours 5 mins 6 secs";
    a_interval_01_00: 'A', "interval", "+01:00", "@ 1 hour";
    a_interval_1_hour: 'A', "interval", "1 hour", "@ 1 hour";
    a_interval_3_seconds_ago: 'A', "interval", "@ 3 seconds ago", "@ 3 secs ago";
    a_interval_23_hours_45_min_12_34_sec: 'A', "interval", "-23 hours 45 min 12.34 sec", "@ 22 hours 14 mins 47.66 secs ago";
    a_interval_200000000_days: 'A', "interval", "200000000 days", "@ 200000000 days";
    a_interval_10_00: 'A', "interval", "+10:00:", "@ 10 hours";
    a_interval_1970_03_20: 'A', "interval", "1970-03-20", "ERR 22007 invalid input syntax for type interval: \"1970-03-20\"";
    a_interval_1996_02_28: 'A', "interval", "1996-02-28", "ERR 22007 invalid input syntax for type interval: \"1996-02-28\"";
    a_interval_2050_11_05_02_30_america_los_an: 'A', "interval", "2050-11-05 02:30 America/Los_Angeles", "ERR 22007 invalid input syntax for type interval: \"2050-11-05 02:30 America/Los_Angeles\"";
    a_interval_jan_08_99: 'A', "interval", "Jan 08 99", "ERR 22007 invalid input syntax for type interval: \"Jan 08 99\"";
    a_timestamp_1996_03_02: 'A', "timestamp", "1996-03-02", "Sat Mar 02 00:00:00 1996";
    a_timestamp_2037_03_10_01_30_europe_moscow: 'A', "timestamp", "2037-03-10 01:30 Europe/Moscow", "Tue Mar 10 01:30:00 2037";
    a_timestamp_1970_03_20_04_30_00_00000: 'A', "timestamp", "1970-03-20 04:30:00.00000", "Fri Mar 20 04:30:00 1970";
    a_timestamp_2100_03_12_03_30_europe_moscow: 'A', "timestamp", "2100-03-12 03:30 Europe/Moscow", "Fri Mar 12 03:30:00 2100";
    a_timestamp_jan_08_99: 'A', "timestamp", "Jan-08-99", "Fri Jan 08 00:00:00 1999";
    a_timestamp_nov_3_2000: 'A', "timestamp", "nov 3, 2000", "Fri Nov 03 00:00:00 2000";
    a_timestamp_10_00: 'A', "timestamp", "+10:00", "ERR 22007 invalid input syntax for type timestamp: \"+10:00\"";
    a_timestamp_pt10_30: 'A', "timestamp", "PT10:30", "ERR 22007 invalid input syntax for type timestamp: \"PT10:30\"";
    a_time_12_31_1000_23_59_59_999999: 'A', "time", "12/31/1000 23:59:59.999999", "23:59:59.999999";
    a_time_4714_11_23_23_59_59_00_bc: 'A', "time", "4714-11-23 23:59:59+00 BC", "23:59:59";
    a_time_2050_10_06_03_30_australia_sydney: 'A', "time", "2050-10-06 03:30 Australia/Sydney", "03:30:00";
    a_time_2020_01_01_00_00: 'A', "time", "2020-01-01 00:00", "00:00:00";
    a_time_1973_07_15_08_15_55_33_02: 'A', "time", "1973-07-15 08:15:55.33+02", "08:15:55.33";
    a_time_29_2_2100: 'A', "time", "29.2.2100", "ERR 22007 invalid input syntax for type time: \"29.2.2100\"";
    b_timestamptz_294276_12_30: 'B', "timestamptz", "294276-12-30", "294276-12-30 00:00:00-08";
    b_timestamptz_2000_10_29_02_30_australia_l: 'B', "timestamptz", "2000-10-29 02:30 Australia/Lord_Howe", "2000-10-28 08:30:00-07";
    b_timestamptz_1999_08_01: 'B', "timestamptz", "1999 08 01", "1999-08-01 00:00:00-07";
    b_timestamptz_2007_04_02_02_30: 'B', "timestamptz", "2007-04-02 02:30", "2007-04-02 02:30:00-07";
    b_timestamptz_1902_01_01: 'B', "timestamptz", "1902-01-01", "1902-01-01 00:00:00-08";
    b_timestamptz_2024_03_31_03_30_australia_l: 'B', "timestamptz", "2024-03-31 03:30 Australia/Lord_Howe", "2024-03-30 09:30:00-07";
    b_timestamptz_1423_10_12t15_07_07_000001_m: 'B', "timestamptz", "1423-10-12T15:07:07.000001 MET DST", "1423-10-12 05:14:09.000001-07:52:58";
    b_timestamptz_08_jan_1999: 'B', "timestamptz", "08-Jan-1999", "1999-01-08 00:00:00-08";
    b_timestamptz_tzh_tzm: 'B', "timestamptz", "TZH:TZM", "ERR 22007 invalid input syntax for type timestamp with time zone: \"TZH:TZM\"";
    b_timestamptz_ff1_ff2_ff3_ff4_ff5_ff6_ff1_: 'B', "timestamptz", "FF1 FF2 FF3 FF4 FF5 FF6  ff1 ff2 ff3 ff4 ff5 ff6  MS US", "ERR 22007 invalid input syntax for type timestamp with time zone: \"FF1 FF2 FF3 FF4 FF5 FF6  ff1 ff2 ff3 ff4 ff5 ff6  MS US\"";
    b_interval_2147483647_days_2147483648_mont: 'B', "interval", "2147483647 days -2147483648 months", "-178956970 years -8 mons +2147483647 days";
    b_interval_1_day_2_hours_3_minutes_4_secon: 'B', "interval", "1 day 2 hours 3 minutes 4 seconds", "1 day 02:03:04";
    b_interval_p1y2m: 'B', "interval", "P1Y2M", "1 year 2 mons";
    b_interval_pt10_30: 'B', "interval", "PT10:30", "10:30:00";
    b_interval_5_11_6_23_11_29: 'B', "interval", "5-11 -6 23:11:29", "5 years 11 mons -6 days +23:11:29";
    b_interval_1_day_01_23_45_6789: 'B', "interval", "1 day 01:23:45.6789", "1 day 01:23:45.6789";
    b_interval_wed_jul_11_10_51_14_gmt_4_2001: 'B', "interval", "Wed Jul 11 10:51:14 GMT-4 2001", "ERR 22007 invalid input syntax for type interval: \"Wed Jul 11 10:51:14 GMT-4 2001\"";
    b_interval_99_08_01: 'B', "interval", "99-08-01", "ERR 22007 invalid input syntax for type interval: \"99-08-01\"";
    b_date_0011_01_01_bc: 'B', "date", "0011-01-01 BC", "0011-01-01 BC";
    b_date_1942_03_31_02_30_australia_sydney: 'B', "date", "1942-03-31 02:30 Australia/Sydney", "1942-03-31";
    b_date_0004_12_25: 'B', "date", "0004-12-25", "0004-12-25";
    b_date_29_2_12345: 'B', "date", "29.2.12345", "ERR 22008 date/time field value out of range: \"29.2.12345\"";
    c_timestamptz_epoch: 'C', "timestamptz", "epoch", "01/01/1970 02:00:00 EET";
    c_timestamptz_11_3_1752_23_59_59_999999: 'C', "timestamptz", "11/3/1752 23:59:59.999999", "11/03/1752 23:59:59.999999 LMT";
    c_timestamptz_sat_mar_12_23_58_48_100000_i: 'C', "timestamptz", "Sat Mar 12 23:58:48 100000 IST", "12/03/100000 23:58:48 EET";
    c_timestamptz_2004_02_29: 'C', "timestamptz", "2004-02-29", "29/02/2004 00:00:00 EET";
    c_timestamptz_1999_01_18: 'C', "timestamptz", "1999-01-18", "18/01/1999 00:00:00 EET";
    c_timestamptz_fmday_fmday_fmday_fmmonth_fm: 'C', "timestamptz", "FMDAY FMDay FMday FMMONTH FMMonth FMmonth FMRM", "ERR 22007 invalid input syntax for type timestamp with time zone: \"FMDAY FMDay FMday FMMONTH FMMonth FMmonth FMRM\"";
    c_interval_1_month: 'C', "interval", "1 month", "0-1";
    c_interval_2147483648_months_30_days_24_hr: 'C', "interval", "-2147483648 months -30 days 24 hrs", "-178956970-8 -30 +24:00:00";
    c_interval_08_00: 'C', "interval", "-08:00", "-8:00:00";
    c_interval_1_2_03_04: 'C', "interval", "1 2:03:04", "1 2:03:04";
    c_interval_187803_15526052: 'C', "interval", "187803.15526052", "52:10:03.155261";
    c_interval_1_y_83_week_6_8498_d_23_6_msecs: 'C', "interval", "1 y 83 week 6.8498 d 23.6 msecs", "+1-0 +587 +20:23:42.7436";
    c_interval_infinity: 'C', "interval", "infinity", "ERR 22007 invalid input syntax for type interval: \"infinity\"";
    c_interval_2038_01_01: 'C', "interval", "2038-01-01", "ERR 22007 invalid input syntax for type interval: \"2038-01-01\"";
    c_date_2018_11_02_12_34_56: 'C', "date", "2018-11-02 12:34:56", "02/11/2018";
    c_date_2007_10_27_02_30_australia_lord_how: 'C', "date", "2007-10-27 02:30 Australia/Lord_Howe", "27/10/2007";
    c_date_p1y0m3dt4h5m6s: 'C', "date", "P1Y0M3DT4H5M6S", "ERR 22007 invalid input syntax for type date: \"P1Y0M3DT4H5M6S\"";
    d_timestamptz_jan_08_99: 'D', "timestamptz", "Jan 08 99", "08.01.1999 00:00:00 IST";
    d_timestamptz_0009_12_31: 'D', "timestamptz", "0009-12-31", "31.12.0009 00:00:00 LMT";
    d_timestamptz_1_8_1999: 'D', "timestamptz", "1/8/1999", "01.08.1999 00:00:00 IST";
    d_timestamptz_sat_mar_12_23_58_48_100000_i: 'D', "timestamptz", "Sat Mar 12 23:58:48 100000 IST", "13.03.100000 03:28:48 IST";
    d_timestamptz_2018_11_02_12_34_56_78901: 'D', "timestamptz", "2018-11-02 12:34:56.78901", "02.11.2018 12:34:56.78901 IST";
    d_timestamptz_1_00: 'D', "timestamptz", "+1:00", "ERR 22007 invalid input syntax for type timestamp with time zone: \"+1:00\"";
    d_interval_100_milliseconds: 'D', "interval", "100 milliseconds", "PT0.1S";
    d_interval_2147483648_days_2147483647_mont: 'D', "interval", "-2147483648 days 2147483647 months", "P178956970Y7M-2147483648D";
    d_interval_10_mons_3_days_03_55_06_70: 'D', "interval", "-10 mons -3 days +03:55:06.70", "P-10M-3DT3H55M6.7S";
    d_interval_3_9_32_46_316836: 'D', "interval", "-3 9:32:46.316836", "P-3DT9H32M46.316836S";
    d_interval_pt_0_1s: 'D', "interval", "PT-0.1S", "PT-0.1S";
    d_interval_1_2_03: 'D', "interval", "1 +2:03", "P1DT2H3M";
    d_interval_08_01_1999: 'D', "interval", "08 01 1999", "ERR 22007 invalid input syntax for type interval: \"08 01 1999\"";
    d_interval_2100_03_12_01_30_america_new_yo: 'D', "interval", "2100-03-12 01:30 America/New_York", "ERR 22007 invalid input syntax for type interval: \"2100-03-12 01:30 America/New_York\"";
    d_date_10_mar_1000_12_34_56_789: 'D', "date", "10 mar 1000 12:34:56.789", "10.03.1000";
    d_date_1970_01_01_00_00_00_00: 'D', "date", "1970-01-01 00:00:00+00", "01.01.1970";
    d_date_19010229t120000: 'D', "date", "19010229T120000", "ERR 22008 date/time field value out of range: \"19010229T120000\"";
    e_date_1970_03_20_04_30_00_00000: 'E', "date", "1970-03-20 04:30:00.00000", "1970-03-20";
    e_date_2037_03_10_01_30: 'E', "date", "2037-03-10 01:30", "2037-03-10";
    e_date_2000_10_27_03_30_america_los_angele: 'E', "date", "2000-10-27 03:30 America/Los_Angeles", "2000-10-27";
    e_date_6_months_3_days_52_hours_3_minutes_: 'E', "date", "6 months 3 days 52 hours 3 minutes 2 seconds", "ERR 22007 invalid input syntax for type date: \"6 months 3 days 52 hours 3 minutes 2 seconds\"";
    e_timestamp_1975_03_12_02_30: 'E', "timestamp", "1975-03-12 02:30", "1975-03-12 02:30:00";
    e_timestamp_1996_03_02: 'E', "timestamp", "1996-03-02", "1996-03-02 00:00:00";
    e_timestamp_1999_jan_08: 'E', "timestamp", "1999 Jan 08", "1999-01-08 00:00:00";
    e_timestamp_1_month_2146410_days: 'E', "timestamp", "1 month 2146410 days", "ERR 22007 invalid input syntax for type timestamp: \"1 month 2146410 days\"";
    f_timestamptz_2000_04_01: 'F', "timestamptz", "2000-04-01", "04/01/2000 00:00:00 EST";
    f_timestamptz_1975_10_06_01_30_europe_mosc: 'F', "timestamptz", "1975-10-06 01:30 Europe/Moscow", "10/05/1975 18:30:00 EDT";
    f_timestamptz_100001103t120000: 'F', "timestamptz", "100001103T120000", "11/03/10000 12:00:00 EDT";
    f_timestamptz_187803_15526052: 'F', "timestamptz", "187803.15526052", "ERR 22007 invalid input syntax for type timestamp with time zone: \"187803.15526052\"";
    f_interval_1_2_03_04: 'F', "interval", "1 -2:03:04", "+0-0 +1 -2:03:04";
    f_interval_p0002_10_15: 'F', "interval", "P0002-10-15", "+2-10 +15 +0:00:00";
    f_interval_m17: 'F', "interval", "m17", "0:00:17";
    f_interval_4714_11_23_16_00_00_08_bc: 'F', "interval", "4714-11-23 16:00:00-08 BC", "ERR 22007 invalid input syntax for type interval: \"4714-11-23 16:00:00-08 BC\"";
    g_timestamptz_1993_12_25: 'G', "timestamptz", "1993-12-25", "Sat 25 Dec 00:00:00 1993 +05";
    g_timestamptz_2011_03_27_02_00_01: 'G', "timestamptz", "2011-03-27 02:00:01", "Sun 27 Mar 02:00:01 2011 +05";
    g_timestamptz_08_jan_1999: 'G', "timestamptz", "08 Jan 1999", "Fri 08 Jan 00:00:00 1999 +05";
    g_timestamptz_1_2_03: 'G', "timestamptz", "1 2:03", "ERR 22007 invalid input syntax for type timestamp with time zone: \"1 2:03\"";
    g_interval_1000: 'G', "interval", "+1000", "PT16M40S";
    g_interval_5_months_12_hours: 'G', "interval", "5 months 12 hours", "P5MT12H";
    g_interval_2147483647_years: 'G', "interval", "2147483647 years", "ERR 22008 interval out of range";
    h_timestamptz_sun_nov_23_16_00_00_4714_pst: 'H', "timestamptz", "Sun Nov 23 16:00:00 4714 PST BC", "4714-11-23 23:58:45-00:01:15 BC";
    h_timestamptz_01_08_99: 'H', "timestamptz", "01 08 99", "1999-08-01 00:00:00+01";
    h_timestamptz_2000_02_30: 'H', "timestamptz", "2000-02-30", "ERR 22008 date/time field value out of range: \"2000-02-30\"";
    h_interval_4: 'H', "interval", "4", "@ 4 secs";
    h_interval_2_hours: 'H', "interval", "2 hours", "@ 2 hours";
    h_interval_1582_12_31: 'H', "interval", "1582-12-31", "ERR 22015 interval field value out of range: \"1582-12-31\"";
    i_timestamptz_1918_11_05_01_30_america_new: 'I', "timestamptz", "1918-11-05 01:30 America/New_York", "05.11.1918 16:30:00 AEST";
    i_timestamptz_1901_01_01: 'I', "timestamptz", "1901-01-01", "01.01.1901 00:00:00 AEST";
    i_timestamptz_1_2_03_5678: 'I', "timestamptz", "1 2:03.5678", "ERR 22007 invalid input syntax for type timestamp with time zone: \"1 2:03.5678\"";
    j_timestamptz_99_jan_08: 'J', "timestamptz", "99 Jan 08", "Fri Jan 08 00:00:00 1999 MSK";
    j_timestamptz_1996_02_29: 'J', "timestamptz", "1996-02-29", "Thu Feb 29 00:00:00 1996 MSK";
    j_timestamptz_1_5_weeks: 'J', "timestamptz", "1.5 weeks", "ERR 22007 invalid input syntax for type timestamp with time zone: \"1.5 weeks\"";
    j_interval_p0002_10_15: 'J', "interval", "P0002-10-15", "+2-10 +15 +0:00:00";
    j_interval_1918_03_12_01_30_australia_sydn: 'J', "interval", "1918-03-12 01:30 Australia/Sydney", "ERR 22007 invalid input syntax for type interval: \"1918-03-12 01:30 Australia/Sydney\"";
    k_timestamptz_2000_01_01: 'K', "timestamptz", "2000-01-01", "01/01/2000 00:00:00 ";
    k_timestamptz_1942_04_02_03_30_america_new: 'K', "timestamptz", "1942-04-02 03:30 America/New_York", "04/02/1942 11:00:00 ";
    k_timestamptz_1_day: 'K', "timestamptz", "@ 1 day", "ERR 22007 invalid input syntax for type timestamp with time zone: \"@ 1 day\"";
    g_raw_timestamptz_8395543546709042769: 'G', "raw_timestamptz", "8395543546709042769", "Tue 08 Mar 02:38:29.042769 268044 +05";
    a_raw_timestamptz_123826667848000000: 'A', "raw_timestamptz", "123826667848000000", "Thu Nov 29 16:37:28 5923 PST";
    j_raw_timestamptz_3376026595513000000: 'J', "raw_timestamptz", "3376026595513000000", "Wed Jan 09 00:25:13 108982 MSK";
    a_raw_timestamptz_9063661307654000000: 'A', "raw_timestamptz", "9063661307654000000", "Tue Dec 29 00:34:14 289215 PST";
    g_raw_timestamptz_2490000616000000: 'G', "raw_timestamptz", "2490000616000000", "Sat 26 Nov 15:50:16 2078 +05";
    d_raw_timestamptz_1206993500949000000: 'D', "raw_timestamptz", "1206993500949000000", "07.02.40248 09:59:09 IST";
    f_raw_timestamptz_3141474506000000: 'F', "raw_timestamptz", "-3141474506000000", "06/14/1900 03:11:34 EST";
    a_raw_timestamptz_5768183871266000000: 'A', "raw_timestamptz", "5768183871266000000", "Sat Jun 21 02:34:26 184786 PDT";
    i_raw_timestamptz_953293420153000000: 'I', "raw_timestamptz", "953293420153000000", "01.09.32208 02:19:13 +1030";
    g_raw_timestamptz_120028976422000000: 'G', "raw_timestamptz", "120028976422000000", "Wed 27 Jul 11:20:22 5803 +05";
    g_raw_timestamp_2402530924000000: 'G', "raw_timestamp", "-2402530924000000", "Tue 13 Nov 22:17:56 1923";
    b_raw_timestamp_370057632000000: 'B', "raw_timestamp", "370057632000000", "2011-09-23 01:47:12";
    c_raw_timestamp_203329348350000000: 'C', "raw_timestamp", "203329348350000000", "01/04/8443 22:32:30";
    j_raw_timestamp_3306726309531000000: 'J', "raw_timestamp", "3306726309531000000", "Thu Dec 26 05:58:51 106785";
    k_raw_date_425830: 'K', "raw_date", "425830", "11/19/3165";
    f_raw_date_594892: 'F', "raw_date", "594892", "10/04/3628";
    k_raw_date_196459: 'K', "raw_date", "196459", "11/20/2537";
    f_raw_date_33861534: 'F', "raw_date", "33861534", "09/25/94709";
    b_raw_interval_0_38_2245844046214301846: 'B', "raw_interval", "0 38 2245844046214301846", "38 days 623845568:23:34.301846";
    g_raw_interval_12_0_0: 'G', "raw_interval", "12 0 0", "P1Y";
    g_raw_interval_0_586598347_44230411290: 'G', "raw_interval", "0 586598347 44230411290", "P586598347DT12H17M10.41129S";
    f_raw_interval_2147483648_2147483648_922337203: 'F', "raw_interval", "-2147483648 -2147483648 -9223372036854775808", "-178956970-8 -2147483648 -2562047788:00:54.775808";
    j_raw_interval_0_0_0: 'J', "raw_interval", "0 0 0", "0";
    j_raw_interval_1628206104_0_0: 'J', "raw_interval", "1628206104 0 0", "135683842-0";
    g_raw_interval_0_29_0: 'G', "raw_interval", "0 29 0", "P29D";
    j_raw_interval_14_0_36826794724: 'J', "raw_interval", "-14 0 -36826794724", "-1-2 +0 -10:13:46.794724";
    i_raw_interval_0_0_44269421255: 'I', "raw_interval", "0 0 44269421255", "12:17:49.421255";
    a_raw_interval_0_0_114202781473881752: 'A', "raw_interval", "0 0 114202781473881752", "@ 31722994 hours 51 mins 13.881752 secs";
    a_raw_timestamptz_211813488000000000: 'A', "raw_timestamptz", "-211813488000000000", "Sun Nov 23 16:07:02 4714 LMT BC";
    a_raw_timestamptz_9223371331199999999: 'A', "raw_timestamptz", "9223371331199999999", "Sun Dec 31 15:59:59.999999 294276 PST";
    k_raw_timestamptz_211813488000000000: 'K', "raw_timestamptz", "-211813488000000000", "11/24/4714 03:30:00  BC";
    k_raw_timestamptz_9223371331199999999: 'K', "raw_timestamptz", "9223371331199999999", "01/01/294277 03:29:59.999999 ";
}

/// Input of type `ty` formatted back, or "ERR code message", as the
/// comparison corpus has it.
fn round_trip(ty: &str, input: &str, st: &Settings) -> String {
    let n = |i: usize| {
        input
            .split(' ')
            .nth(i)
            .and_then(|x| x.parse::<i64>().ok())
            .unwrap_or(0)
    };
    let r = match ty {
        "raw_date" => Ok(format_date(n(0) as i32, st)),
        "raw_timestamp" => Ok(format_timestamp(n(0), st)),
        "raw_timestamptz" => Ok(format_timestamptz(n(0), st)),
        "raw_interval" => Ok(format_interval(
            &Interval {
                months: n(0) as i32,
                days: n(1) as i32,
                micros: n(2),
            },
            st,
        )),
        "date" => parse_date(input, st).map(|d| format_date(d, st)),
        "timestamp" => parse_timestamp(input, st).map(|t| format_timestamp(t, st)),
        "timestamptz" => parse_timestamptz(input, st).map(|t| format_timestamptz(t, st)),
        "time" => parse_time(input, st).map(format_time),
        _ => parse_interval(input, st).map(|iv| format_interval(&iv, st)),
    };
    match r {
        Ok(s) => s,
        Err(e) => format!("ERR {} {}", e.code, e.message),
    }
}

/// Compares with a corpus made by psql: lines of session letter, TimeZone,
/// DateStyle, IntervalStyle, now (microseconds since 2000), type, input and
/// PostgreSQL's output or "ERR code message", tab-separated, in the file
/// `$DATETIME_CORPUS`; mismatches go to `$DATETIME_CORPUS.mismatch`. Run with
/// `--ignored`.
#[test]
#[ignore]
fn compare_corpus() {
    use std::collections::BTreeMap;
    use std::io::Write;
    let Ok(path) = std::env::var("DATETIME_CORPUS") else {
        return;
    };
    let text = std::fs::read_to_string(&path).unwrap();
    let mut bad = std::fs::File::create(format!("{path}.mismatch")).unwrap();
    let mut counts: BTreeMap<(String, bool), (u32, u32)> = BTreeMap::new();
    for line in text.lines() {
        let p: Vec<&str> = line.split('\t').collect();
        let mut st = Settings::default();
        st.set_timezone(p[1]).unwrap();
        st.parse_datestyle(p[2]).unwrap();
        st.interval = match p[3] {
            "postgres_verbose" => IntervalStyle::PostgresVerbose,
            "sql_standard" => IntervalStyle::SqlStandard,
            "iso_8601" => IntervalStyle::Iso8601,
            _ => IntervalStyle::Postgres,
        };
        st.now_us = p[4].parse().unwrap();
        let want = p[7]
            .replace("\\t", "\t")
            .replace("\\n", "\n")
            .replace("\\\\", "\\");
        let got = std::panic::catch_unwind(|| round_trip(p[5], p[6], &st))
            .unwrap_or_else(|_| "PANIC".into());
        let e = counts
            .entry((p[5].to_string(), want.starts_with("ERR")))
            .or_default();
        e.0 += 1;
        if got == want {
            e.1 += 1;
        } else {
            writeln!(bad, "{}\t{}\t{}\t{}\t{}", p[0], p[5], p[6], want, got).unwrap();
        }
    }
    for ((ty, err), (n, ok)) in counts {
        println!("{ty:12} {:6} {ok}/{n}", if err { "error" } else { "value" });
    }
}

/// 2026-11-26 16:10:16.123456 UTC, as a transaction start.
const NOW: i64 = 849_024_616_123_456;

#[test]
fn now_and_relative_days() {
    let mut st = session('B');
    st.now_us = NOW;
    let ts = |s: &str| format_timestamptz(parse_timestamptz(s, &st).unwrap(), &st);
    assert_eq!(ts("now"), "2026-11-26 08:10:16.123456-08");
    assert_eq!(ts("today"), "2026-11-26 00:00:00-08");
    assert_eq!(ts("tomorrow"), "2026-11-27 00:00:00-08");
    assert_eq!(ts("yesterday"), "2026-11-25 00:00:00-08");
    assert_eq!(ts("tomorrow EST"), "2026-11-26 21:00:00-08");
    assert_eq!(ts("tomorrow zulu"), "2026-11-26 16:00:00-08");
    assert_eq!(
        format_date(parse_date("today", &st).unwrap(), &st),
        "2026-11-26"
    );
    assert_eq!(
        format_time(parse_time("allballs", &st).unwrap()),
        "00:00:00"
    );
    assert_eq!(
        format_time(parse_time("now", &st).unwrap()),
        "08:10:16.123456"
    );
}

#[test]
fn specials_and_extremes() {
    let st = session('A');
    assert_eq!(parse_date("infinity", &st).unwrap(), i32::MAX);
    assert_eq!(parse_date("-infinity", &st).unwrap(), i32::MIN);
    assert_eq!(parse_timestamptz("infinity", &st).unwrap(), i64::MAX);
    assert_eq!(parse_timestamp("-infinity", &st).unwrap(), i64::MIN);
    assert_eq!(format_timestamptz(i64::MIN, &st), "-infinity");
    assert_eq!(format_date(i32::MAX, &st), "infinity");
    assert_eq!(parse_timestamp("epoch", &st).unwrap(), -946_684_800_000_000);
    assert_eq!(parse_date("2000-01-01", &st).unwrap(), 0);
    let iso = session('B');
    let tz = |s: &str| format_timestamptz(parse_timestamptz(s, &iso).unwrap(), &iso);
    assert_eq!(
        tz("4714-11-24 00:00:00+00 BC"),
        "4714-11-23 16:07:02-07:52:58 BC"
    );
    assert_eq!(
        tz("294276-12-31 23:59:59.999999+00"),
        "294276-12-31 15:59:59.999999-08"
    );
    assert_eq!(tz("2024-03-10 02:30"), "2024-03-10 03:30:00-07");
    assert_eq!(tz("2024-11-03 01:30"), "2024-11-03 01:30:00-08");
}

#[test]
fn errors_carry_postgres_codes_and_hints() {
    let st = session('A');
    let e = parse_date("13/13/2000", &st).unwrap_err();
    assert_eq!(
        (e.code, e.message.as_str()),
        (
            "22008",
            "date/time field value out of range: \"13/13/2000\""
        )
    );
    assert_eq!(
        e.hint.as_deref(),
        Some("Perhaps you need a different \"datestyle\" setting.")
    );
    let e = parse_date("2000-02-30", &st).unwrap_err();
    assert_eq!(e.hint, None);
    let e = parse_date("5874898-01-01", &st).unwrap_err();
    assert_eq!(
        (e.code, e.message.as_str()),
        ("22008", "date out of range: \"5874898-01-01\"")
    );
    let e = parse_timestamp("294277-01-01", &st).unwrap_err();
    assert_eq!(e.message, "timestamp out of range: \"294277-01-01\"");
    let e = parse_timestamptz("2000-01-01 00:00 Foo/Bar", &st).unwrap_err();
    assert_eq!(
        (e.code, e.message.as_str()),
        ("22023", "time zone \"foo/bar\" not recognized")
    );
    let e = parse_interval("2147483648 days", &st).unwrap_err();
    assert_eq!(
        (e.code, e.message.as_str()),
        (
            "22015",
            "interval field value out of range: \"2147483648 days\""
        )
    );
    let e = parse_interval("178956971 years", &st).unwrap_err();
    assert_eq!(
        (e.code, e.message.as_str()),
        ("22008", "interval out of range")
    );
    let e = parse_timestamptz("2000-01-01 00:00 +16", &st).unwrap_err();
    assert_eq!(
        (e.code, e.message.as_str()),
        (
            "22009",
            "time zone displacement out of range: \"2000-01-01 00:00 +16\""
        )
    );
    let e = parse_time("25:00", &st).unwrap_err();
    assert_eq!(
        (e.code, e.message.as_str()),
        ("22008", "date/time field value out of range: \"25:00\"")
    );
}

#[test]
fn datestyle_setting() {
    let mut st = Settings::default();
    st.parse_datestyle("German").unwrap();
    assert_eq!((st.style, st.order), (DateStyle::German, DateOrder::Dmy));
    st.parse_datestyle("YMD, German").unwrap();
    assert_eq!((st.style, st.order), (DateStyle::German, DateOrder::Ymd));
    st.parse_datestyle("Euro").unwrap();
    assert_eq!((st.style, st.order), (DateStyle::German, DateOrder::Dmy));
    st.parse_datestyle("Postgres,US").unwrap();
    assert_eq!((st.style, st.order), (DateStyle::Postgres, DateOrder::Mdy));
    st.parse_datestyle("Default").unwrap();
    assert_eq!((st.style, st.order), (DateStyle::Iso, DateOrder::Mdy));
    let e = st.parse_datestyle("ISO, SQL").unwrap_err();
    assert_eq!(
        e.message,
        "invalid value for parameter \"DateStyle\": \"ISO, SQL\""
    );
    assert_eq!(
        e.detail.as_deref(),
        Some("Conflicting \"datestyle\" specifications.")
    );
    let e = st.parse_datestyle("foo").unwrap_err();
    assert_eq!(e.detail.as_deref(), Some("Unrecognized key word: \"foo\"."));
    let e = st.parse_datestyle("iso mdy").unwrap_err();
    assert_eq!(e.detail.as_deref(), Some("List syntax is invalid."));
}

#[test]
fn timezone_setting() {
    let noon = parse_timestamptz("2000-07-01 12:00 UTC", &Settings::default()).unwrap();
    let show = |zone: &str| {
        let mut st = Settings::default();
        st.parse_datestyle("Postgres").unwrap();
        st.set_timezone(zone)
            .map(|_| (format_timestamptz(noon, &st), st.zone.name().to_string()))
    };
    let ok = |zone: &str, want: &str, name: &str| {
        assert_eq!(
            show(zone).unwrap(),
            (want.to_string(), name.to_string()),
            "{zone}"
        );
    };
    ok("+05", "Sat Jul 01 17:00:00 2000 +05", "<+05>-05");
    ok("-7", "Sat Jul 01 05:00:00 2000 -07", "<-07>+07");
    ok("5.5", "Sat Jul 01 17:30:00 2000 +05:30", "<+05:30>-05:30");
    ok("utc", "Sat Jul 01 12:00:00 2000 UTC", "UTC");
    ok(
        "america/new_york",
        "Sat Jul 01 08:00:00 2000 EDT",
        "America/New_York",
    );
    ok("EST5EDT", "Sat Jul 01 08:00:00 2000 EDT", "EST5EDT");
    ok("XYZ-3", "Sat Jul 01 15:00:00 2000 XYZ", "XYZ-3");
    ok("GMT+3", "Sat Jul 01 09:00:00 2000 GMT", "GMT+3");
    ok(
        "Europe/Helsinki",
        "Sat Jul 01 15:00:00 2000 EEST",
        "Europe/Helsinki",
    );
    ok(
        "INTERVAL '-08:00'",
        "Sat Jul 01 04:00:00 2000 -08",
        "<-08>+08",
    );
    ok("167", "Sat Jul 08 11:00:00 2000 +167", "<+167>-167");
    let e = show("foo").unwrap_err();
    assert_eq!(
        (e.code, e.message.as_str()),
        ("22023", "invalid value for parameter \"TimeZone\": \"foo\"")
    );
    let e = show("200").unwrap_err();
    assert_eq!(
        e.detail.as_deref(),
        Some("UTC timezone offset is out of range.")
    );
    let e = show("interval '1 day'").unwrap_err();
    assert_eq!(
        e.detail.as_deref(),
        Some("Cannot specify days in time zone interval.")
    );
}

#[test]
fn interval_styles() {
    let iv = Interval {
        months: 14,
        days: -3,
        micros: 14_706_789_000,
    };
    let out = |style| {
        let st = Settings {
            interval: style,
            ..Settings::default()
        };
        format_interval(&iv, &st)
    };
    assert_eq!(
        out(IntervalStyle::Postgres),
        "1 year 2 mons -3 days +04:05:06.789"
    );
    assert_eq!(
        out(IntervalStyle::PostgresVerbose),
        "@ 1 year 2 mons -3 days 4 hours 5 mins 6.789 secs"
    );
    assert_eq!(out(IntervalStyle::SqlStandard), "+1-2 -3 +4:05:06.789");
    assert_eq!(out(IntervalStyle::Iso8601), "P1Y2M-3DT4H5M6.789S");
}

/// Arbitrary text never panics (a deterministic pseudo-random walk over the
/// characters the grammar cares about).
#[test]
fn never_panics() {
    let alphabet: Vec<char> = "0123456789 :-/.+,@TtJjPpYMDHSWZzaemnoy_é".chars().collect();
    let st = session('C');
    let mut seed: u64 = 0x2545_f491_4f6c_dd1d;
    for _ in 0..20_000 {
        let mut s = String::new();
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        for k in 0..(seed % 24) {
            let idx = (seed.rotate_left(k as u32 * 5) % alphabet.len() as u64) as usize;
            s.push(alphabet[idx]);
        }
        for ty in ["date", "timestamp", "timestamptz", "time", "interval"] {
            let _ = round_trip(ty, &s, &st);
        }
    }
    for v in [i64::MIN + 1, i64::MAX - 1, -1, 1 << 62] {
        let _ = format_timestamptz(v, &st);
        let _ = format_timestamp(v, &st);
        let _ = format_time(v);
    }
    for v in [i32::MIN + 1, i32::MAX - 1] {
        let _ = format_date(v, &st);
    }
}
