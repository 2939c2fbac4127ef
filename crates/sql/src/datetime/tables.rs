//! PostgreSQL's token tables: datetktbl (date/time keywords), deltatktbl
//! (interval units) and the "Default" time zone abbreviation set.

// Field types (datetime.h), as bit numbers of a field mask.
pub(crate) const RESERV: i32 = 0;
pub(crate) const MONTH: i32 = 1;
pub(crate) const YEAR: i32 = 2;
pub(crate) const DAY: i32 = 3;
pub(crate) const TZ: i32 = 5;
pub(crate) const DTZ: i32 = 6;
pub(crate) const DYNTZ: i32 = 7;
pub(crate) const IGNORE_DTF: i32 = 8;
pub(crate) const AMPM: i32 = 9;
pub(crate) const HOUR: i32 = 10;
pub(crate) const MINUTE: i32 = 11;
pub(crate) const SECOND: i32 = 12;
pub(crate) const MILLISECOND: i32 = 13;
pub(crate) const MICROSECOND: i32 = 14;
pub(crate) const DOY: i32 = 15;
pub(crate) const DOW: i32 = 16;
pub(crate) const UNITS: i32 = 17;
pub(crate) const ADBC: i32 = 18;
pub(crate) const AGO: i32 = 19;
pub(crate) const ISOTIME: i32 = 23;
pub(crate) const WEEK: i32 = 24;
pub(crate) const DECADE: i32 = 25;
pub(crate) const CENTURY: i32 = 26;
pub(crate) const MILLENNIUM: i32 = 27;
pub(crate) const DTZMOD: i32 = 28;
pub(crate) const UNKNOWN_FIELD: i32 = 31;

// Token values.
pub(crate) const DTK_NUMBER: i32 = 0;
pub(crate) const DTK_STRING: i32 = 1;
pub(crate) const DTK_DATE: i32 = 2;
pub(crate) const DTK_TIME: i32 = 3;
pub(crate) const DTK_TZ: i32 = 4;
pub(crate) const DTK_SPECIAL: i32 = 6;
pub(crate) const DTK_EARLY: i32 = 9;
pub(crate) const DTK_LATE: i32 = 10;
pub(crate) const DTK_EPOCH: i32 = 11;
pub(crate) const DTK_NOW: i32 = 12;
pub(crate) const DTK_YESTERDAY: i32 = 13;
pub(crate) const DTK_TODAY: i32 = 14;
pub(crate) const DTK_TOMORROW: i32 = 15;
pub(crate) const DTK_ZULU: i32 = 16;
pub(crate) const DTK_SECOND: i32 = 18;
pub(crate) const DTK_MINUTE: i32 = 19;
pub(crate) const DTK_HOUR: i32 = 20;
pub(crate) const DTK_DAY: i32 = 21;
pub(crate) const DTK_WEEK: i32 = 22;
pub(crate) const DTK_MONTH: i32 = 23;
pub(crate) const DTK_QUARTER: i32 = 24;
pub(crate) const DTK_YEAR: i32 = 25;
pub(crate) const DTK_DECADE: i32 = 26;
pub(crate) const DTK_CENTURY: i32 = 27;
pub(crate) const DTK_MILLENNIUM: i32 = 28;
pub(crate) const DTK_MILLISEC: i32 = 29;
pub(crate) const DTK_MICROSEC: i32 = 30;
pub(crate) const DTK_JULIAN: i32 = 31;
pub(crate) const DTK_DOW: i32 = 32;
pub(crate) const DTK_DOY: i32 = 33;
pub(crate) const DTK_TZ_HOUR: i32 = 34;
pub(crate) const DTK_TZ_MINUTE: i32 = 35;
pub(crate) const DTK_ISOYEAR: i32 = 36;
pub(crate) const DTK_ISODOW: i32 = 37;

pub(crate) const AM: i32 = 0;
pub(crate) const PM: i32 = 1;
pub(crate) const HR24: i32 = 2;
pub(crate) const AD: i32 = 0;
pub(crate) const BC: i32 = 1;

/// `DTK_M(t)`.
pub(crate) const fn m(t: i32) -> i32 {
    1 << t
}
pub(crate) const DTK_ALL_SECS_M: i32 = m(SECOND) | m(MILLISECOND) | m(MICROSECOND);
pub(crate) const DTK_DATE_M: i32 = m(YEAR) | m(MONTH) | m(DAY);
pub(crate) const DTK_TIME_M: i32 = m(HOUR) | m(MINUTE) | DTK_ALL_SECS_M;

/// PostgreSQL compares tokens on their first TOKMAXLEN (10) characters.
fn key(token: &str) -> &str {
    match token.char_indices().nth(10) {
        Some((i, _)) => &token[..i],
        None => token,
    }
}

/// datetktbl: (type, value) of a date/time keyword.
pub(crate) fn datetk(token: &str) -> Option<(i32, i32)> {
    Some(match key(token) {
        "-infinity" => (RESERV, DTK_EARLY),
        "ad" => (ADBC, AD),
        "allballs" => (RESERV, DTK_ZULU),
        "am" => (AMPM, AM),
        "apr" | "april" => (MONTH, 4),
        "at" | "on" => (IGNORE_DTF, 0),
        "aug" | "august" => (MONTH, 8),
        "bc" => (ADBC, BC),
        "d" => (UNITS, DTK_DAY),
        "dec" | "december" => (MONTH, 12),
        "dow" => (UNITS, DTK_DOW),
        "doy" => (UNITS, DTK_DOY),
        "dst" => (DTZMOD, 3600),
        "epoch" => (RESERV, DTK_EPOCH),
        "feb" | "february" => (MONTH, 2),
        "fri" | "friday" => (DOW, 5),
        "h" => (UNITS, DTK_HOUR),
        "infinity" => (RESERV, DTK_LATE),
        "isodow" => (UNITS, DTK_ISODOW),
        "isoyear" => (UNITS, DTK_ISOYEAR),
        "j" | "jd" | "julian" => (UNITS, DTK_JULIAN),
        "jan" | "january" => (MONTH, 1),
        "jul" | "july" => (MONTH, 7),
        "jun" | "june" => (MONTH, 6),
        "m" => (UNITS, DTK_MONTH),
        "mar" | "march" => (MONTH, 3),
        "may" => (MONTH, 5),
        "mm" => (UNITS, DTK_MINUTE),
        "mon" | "monday" => (DOW, 1),
        "nov" | "november" => (MONTH, 11),
        "now" => (RESERV, DTK_NOW),
        "oct" | "october" => (MONTH, 10),
        "pm" => (AMPM, PM),
        "s" => (UNITS, DTK_SECOND),
        "sat" | "saturday" => (DOW, 6),
        "sep" | "sept" | "september" => (MONTH, 9),
        "sun" | "sunday" => (DOW, 0),
        "t" => (ISOTIME, DTK_TIME),
        "thu" | "thur" | "thurs" | "thursday" => (DOW, 4),
        "today" => (RESERV, DTK_TODAY),
        "tomorrow" => (RESERV, DTK_TOMORROW),
        "tue" | "tues" | "tuesday" => (DOW, 2),
        "wed" | "wednesday" | "weds" => (DOW, 3),
        "y" => (UNITS, DTK_YEAR),
        "yesterday" => (RESERV, DTK_YESTERDAY),
        _ => return None,
    })
}

/// deltatktbl: (type, value) of an interval unit.
pub(crate) fn deltatk(token: &str) -> Option<(i32, i32)> {
    Some(match key(token) {
        "@" => (IGNORE_DTF, 0),
        "ago" => (AGO, 0),
        "c" | "cent" | "centuries" | "century" => (UNITS, DTK_CENTURY),
        "d" | "day" | "days" => (UNITS, DTK_DAY),
        "dec" | "decade" | "decades" | "decs" => (UNITS, DTK_DECADE),
        "h" | "hour" | "hours" | "hr" | "hrs" => (UNITS, DTK_HOUR),
        "m" | "min" | "mins" | "minute" | "minutes" => (UNITS, DTK_MINUTE),
        "microsecon" | "us" | "usec" | "microsecond" | "useconds" | "usecs" => {
            (UNITS, DTK_MICROSEC)
        }
        "mil" | "millennia" | "millennium" | "mils" => (UNITS, DTK_MILLENNIUM),
        "millisecon" | "ms" | "msec" | "millisecond" | "mseconds" | "msecs" => {
            (UNITS, DTK_MILLISEC)
        }
        "mon" | "mons" | "month" | "months" => (UNITS, DTK_MONTH),
        "qtr" | "quarter" => (UNITS, DTK_QUARTER),
        "s" | "sec" | "second" | "seconds" | "secs" => (UNITS, DTK_SECOND),
        "timezone" => (UNITS, DTK_TZ),
        "timezone_h" => (UNITS, DTK_TZ_HOUR),
        "timezone_m" => (UNITS, DTK_TZ_MINUTE),
        "w" | "week" | "weeks" => (UNITS, DTK_WEEK),
        "y" | "year" | "years" | "yr" | "yrs" => (UNITS, DTK_YEAR),
        _ => return None,
    })
}

/// A time zone abbreviation of the "Default" set: a fixed offset (seconds
/// east) with whether it is daylight time, or a zone whose offset at the time
/// in question is meant.
pub(crate) enum Abbrev {
    Fixed(i32, bool),
    Dynamic(&'static str),
}

/// The abbreviation `token` (lower case), if the Default set has it.
pub(crate) fn abbrev(token: &str) -> Option<Abbrev> {
    let k = key(token);
    let i = ABBREVS.binary_search_by(|(a, _, _)| (*a).cmp(k)).ok()?;
    let (_, v, dst) = ABBREVS[i];
    Some(match v.parse::<i32>() {
        Ok(off) => Abbrev::Fixed(off, dst),
        Err(_) => Abbrev::Dynamic(v),
    })
}

/// PostgreSQL's timezonesets/Default, sorted.
static ABBREVS: &[(&str, &str, bool)] = &[
    ("acdt", "37800", true),
    ("acsst", "37800", true),
    ("acst", "34200", false),
    ("act", "-18000", false),
    ("acwst", "31500", false),
    ("adt", "-10800", true),
    ("aedt", "39600", true),
    ("aesst", "39600", true),
    ("aest", "36000", false),
    ("aft", "16200", false),
    ("akdt", "-28800", true),
    ("akst", "-32400", false),
    ("almst", "25200", true),
    ("almt", "21600", false),
    ("amst", "Asia/Yerevan", false),
    ("amt", "-14400", false),
    ("anast", "Asia/Anadyr", false),
    ("anat", "Asia/Anadyr", false),
    ("arst", "America/Argentina/Buenos_Aires", false),
    ("art", "America/Argentina/Buenos_Aires", false),
    ("ast", "-14400", false),
    ("awsst", "32400", true),
    ("awst", "28800", false),
    ("azost", "0", true),
    ("azot", "-3600", false),
    ("azst", "Asia/Baku", false),
    ("azt", "Asia/Baku", false),
    ("bdst", "7200", true),
    ("bdt", "21600", false),
    ("bnt", "28800", false),
    ("bort", "28800", false),
    ("bot", "-14400", false),
    ("bra", "-10800", false),
    ("brst", "-7200", true),
    ("brt", "-10800", false),
    ("bst", "3600", true),
    ("btt", "21600", false),
    ("cadt", "37800", true),
    ("cast", "34200", false),
    ("cct", "28800", false),
    ("cdt", "-18000", true),
    ("cest", "7200", true),
    ("cet", "3600", false),
    ("cetdst", "7200", true),
    ("chadt", "49500", true),
    ("chast", "45900", false),
    ("chut", "36000", false),
    ("ckt", "Pacific/Rarotonga", false),
    ("clst", "-10800", true),
    ("clt", "America/Santiago", false),
    ("cot", "-18000", false),
    ("cst", "-21600", false),
    ("cxt", "25200", false),
    ("davt", "Antarctica/Davis", false),
    ("ddut", "36000", false),
    ("easst", "Pacific/Easter", false),
    ("east", "Pacific/Easter", false),
    ("eat", "10800", false),
    ("edt", "-14400", true),
    ("eest", "10800", true),
    ("eet", "7200", false),
    ("eetdst", "10800", true),
    ("egst", "0", true),
    ("egt", "-3600", false),
    ("est", "-18000", false),
    ("fet", "10800", false),
    ("fjst", "46800", true),
    ("fjt", "43200", false),
    ("fkst", "Atlantic/Stanley", false),
    ("fkt", "Atlantic/Stanley", false),
    ("fnst", "-3600", true),
    ("fnt", "-7200", false),
    ("galt", "-21600", false),
    ("gamt", "-32400", false),
    ("gest", "Asia/Tbilisi", false),
    ("get", "Asia/Tbilisi", false),
    ("gft", "-10800", false),
    ("gilt", "43200", false),
    ("gmt", "0", false),
    ("gyt", "America/Guyana", false),
    ("hkt", "28800", false),
    ("hst", "-36000", false),
    ("ict", "25200", false),
    ("idt", "10800", true),
    ("iot", "Indian/Chagos", false),
    ("irkst", "Asia/Irkutsk", false),
    ("irkt", "Asia/Irkutsk", false),
    ("irt", "12600", false),
    ("ist", "7200", false),
    ("jayt", "32400", false),
    ("jst", "32400", false),
    ("kdt", "36000", true),
    ("kgst", "21600", true),
    ("kgt", "Asia/Bishkek", false),
    ("kost", "Pacific/Kosrae", false),
    ("krast", "Asia/Krasnoyarsk", false),
    ("krat", "Asia/Krasnoyarsk", false),
    ("kst", "32400", false),
    ("lhdt", "Australia/Lord_Howe", false),
    ("lhst", "37800", false),
    ("ligt", "36000", false),
    ("lint", "Pacific/Kiritimati", false),
    ("lkt", "Asia/Colombo", false),
    ("magst", "Asia/Magadan", false),
    ("magt", "Asia/Magadan", false),
    ("mart", "-34200", false),
    ("mawt", "Antarctica/Mawson", false),
    ("mdt", "-21600", true),
    ("mest", "7200", true),
    ("mesz", "7200", true),
    ("met", "3600", false),
    ("metdst", "7200", true),
    ("mez", "3600", false),
    ("mht", "43200", false),
    ("mmt", "23400", false),
    ("mpt", "36000", false),
    ("msd", "14400", true),
    ("msk", "Europe/Moscow", false),
    ("mst", "-25200", false),
    ("must", "18000", true),
    ("mut", "14400", false),
    ("mvt", "18000", false),
    ("myt", "28800", false),
    ("ndt", "-9000", true),
    ("nft", "-12600", false),
    ("novst", "Asia/Novosibirsk", false),
    ("novt", "Asia/Novosibirsk", false),
    ("npt", "20700", false),
    ("nst", "-12600", false),
    ("nut", "Pacific/Niue", false),
    ("nzdt", "46800", true),
    ("nzst", "43200", false),
    ("nzt", "43200", false),
    ("omsst", "Asia/Omsk", false),
    ("omst", "Asia/Omsk", false),
    ("pdt", "-25200", true),
    ("pet", "-18000", false),
    ("petst", "Asia/Kamchatka", false),
    ("pett", "Asia/Kamchatka", false),
    ("pgt", "36000", false),
    ("pht", "28800", false),
    ("pkst", "21600", true),
    ("pkt", "18000", false),
    ("pmdt", "-7200", true),
    ("pmst", "-10800", false),
    ("pont", "39600", false),
    ("pst", "-28800", false),
    ("pwt", "32400", false),
    ("pyst", "-10800", true),
    ("pyt", "America/Asuncion", false),
    ("ret", "14400", false),
    ("sadt", "37800", true),
    ("sast", "7200", false),
    ("sct", "14400", false),
    ("sgt", "Asia/Singapore", false),
    ("taht", "-36000", false),
    ("tft", "18000", false),
    ("tjt", "18000", false),
    ("tkt", "Pacific/Fakaofo", false),
    ("tmt", "Asia/Ashgabat", false),
    ("tot", "46800", false),
    ("trut", "36000", false),
    ("tvt", "43200", false),
    ("uct", "0", false),
    ("ulast", "32400", true),
    ("ulat", "Asia/Ulaanbaatar", false),
    ("ut", "0", false),
    ("utc", "0", false),
    ("uyst", "-7200", true),
    ("uyt", "-10800", false),
    ("uzst", "21600", true),
    ("uzt", "18000", false),
    ("vet", "America/Caracas", false),
    ("vlast", "Asia/Vladivostok", false),
    ("vlat", "Asia/Vladivostok", false),
    ("volt", "Europe/Volgograd", false),
    ("vut", "39600", false),
    ("wadt", "28800", true),
    ("wakt", "43200", false),
    ("wast", "25200", false),
    ("wat", "3600", false),
    ("wdt", "32400", true),
    ("wet", "0", false),
    ("wetdst", "3600", true),
    ("wft", "43200", false),
    ("wgst", "-7200", true),
    ("wgt", "-10800", false),
    ("xjt", "21600", false),
    ("yakst", "Asia/Yakutsk", false),
    ("yakt", "Asia/Yakutsk", false),
    ("yapt", "36000", false),
    ("yekst", "21600", true),
    ("yekt", "Asia/Yekaterinburg", false),
    ("z", "0", false),
    ("zulu", "0", false),
];
