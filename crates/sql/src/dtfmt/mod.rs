//! PostgreSQL 15's date/time formatting (`formatting.c`, the DCH part):
//! `to_char(timestamp | timestamptz | interval, text)`, `to_timestamp(text,
//! text)` and `to_date(text, text)`, in the C locale.
//!
//! Entry points: [`to_char_timestamp`], [`to_char_interval`], [`to_timestamp`]
//! and [`to_date`]. The number half of formatting.c is [`crate::numfmt`].
//!
//! Rules (cited as "dtfmt rule N"):
//! 1. The format is parsed as PostgreSQL's `parse_format` parses it: at each
//!    position one prefix (`FM`, `fm`, `TM`, `tm`), then the first keyword of
//!    PostgreSQL's table that the text starts with (longest forms first, so
//!    `HH24` before `HH`), then one postfix (`TH`, `th`, `SP`). A prefix without
//!    a keyword after it is dropped. Double-quoted text is literal (a backslash
//!    quotes the next character), `\"` outside quotes is a literal quote, and
//!    any other character is literal: a separator (ASCII punctuation), a space
//!    or a plain character, which matters only to `to_timestamp`.
//! 2. `to_char` lays each keyword out as PostgreSQL's `DCH_to_char`: numbers
//!    zero-padded to the keyword's width unless `FM` (one more for a negative
//!    interval field), names blank-padded to 9 (`RM` to 4) unless `FM` or `TM`,
//!    `TH`/`th` append the English ordinal suffix, `SP` is ignored. `TM` is the
//!    C locale's, i.e. the English names. Years are shown with BC years
//!    positive (1 BC is year 0 inside), intervals' years as they are.
//! 3. A timestamptz is formatted in the session zone: `TZ`/`tz` are the zone's
//!    abbreviation at that moment, `TZH`, `TZM` and `OF` its offset. For a
//!    timestamp `TZ` is empty and the offset is zero. An infinite timestamp or
//!    an empty format gives NULL (`Ok(None)`), as PostgreSQL's.
//! 4. For an interval, the fields are PostgreSQL's `interval2itm` (years and
//!    months from the months, days, and hours that may exceed 24); patterns
//!    tied to calendar dates (`Month`, `Day`, `D`, `ID`, `AD`, `TZ`, ...) fail
//!    with 22007 "invalid format specification for an interval value".
//! 5. `to_timestamp` and `to_date` read the input with PostgreSQL 15's
//!    `DCH_from_char`: outside `FX` mode, spaces before fields are skipped and a
//!    format separator or space matches one separator or space of the input or
//!    nothing; a literal character skips one input character. Numbers are read
//!    to the keyword's width, or as far as digits go when `FM` is given or the
//!    next format node is not a digit field. Names match case-insensitively.
//!    `TZ`, `tz` and `OF` are refused (0A000), as PostgreSQL 15 refuses them.
//! 6. The fields are then combined as `do_to_timestamp` does (12-hour clock,
//!    century, ISO week dates, day of year, Julian day) with 32-bit wrapping
//!    arithmetic where PostgreSQL 15 has no overflow check, and checked with
//!    `ValidateDate`; errors carry PostgreSQL's SQLSTATEs, messages, DETAILs and
//!    HINTs. `to_timestamp` uses the `TZH`/`TZM` offset when given, else the
//!    session zone's at that local time; `FFn` rounds to n fraction digits.

mod convert;
mod from_char;
#[cfg(test)]
mod tests;
mod to_char;

use crate::datetime::Settings;
use crate::SqlResult;
use strata_types::Interval;

/// A DCH keyword (PostgreSQL's DCH_poz; lower-case forms that behave the same
/// share the upper-case id). The names are the keywords' own spelling.
#[allow(clippy::upper_case_acronyms)] // DAY, MONTH, YYYY are the patterns' names
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Kw {
    ADot,
    AMDot,
    AD,
    AM,
    BDot,
    BC,
    CC,
    DAY,
    DDD,
    DD,
    DY,
    Day,
    Dy,
    D,
    FF(u8),
    FX,
    HH24,
    HH12,
    HH,
    IDDD,
    ID,
    IW,
    IYYY,
    IYY,
    IY,
    I,
    J,
    MI,
    MM,
    MONTH,
    MON,
    MS,
    Month,
    Mon,
    OF,
    PDot,
    PM,
    Q,
    RM,
    SSSS,
    SS,
    TZH,
    TZM,
    TZ,
    US,
    WW,
    W,
    YComma,
    YYYY,
    YYY,
    YY,
    Y,
    LowADot,
    LowAMDot,
    LowAD,
    LowAM,
    LowBDot,
    LowBC,
    LowDay,
    LowDy,
    LowMonth,
    LowMon,
    LowPDot,
    LowPM,
    LowRM,
    LowTZ,
}

/// FromCharDateMode: the date convention a keyword belongs to.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Mode {
    None,
    Gregorian,
    IsoWeek,
}

/// One entry of DCH_keywords: name, id, is_digit, date mode.
#[derive(Debug)]
struct KeyWord {
    name: &'static str,
    id: Kw,
    digit: bool,
    mode: Mode,
}

const fn kw(name: &'static str, id: Kw, digit: bool, mode: Mode) -> KeyWord {
    KeyWord {
        name,
        id,
        digit,
        mode,
    }
}

use Mode::{Gregorian as G, IsoWeek as Iso, None as N};

/// DCH_keywords, in PostgreSQL's order (the first match wins).
const KEYWORDS: &[KeyWord] = &[
    kw("A.D.", Kw::ADot, false, N),
    kw("A.M.", Kw::AMDot, false, N),
    kw("AD", Kw::AD, false, N),
    kw("AM", Kw::AM, false, N),
    kw("B.C.", Kw::BDot, false, N),
    kw("BC", Kw::BC, false, N),
    kw("CC", Kw::CC, true, N),
    kw("DAY", Kw::DAY, false, N),
    kw("DDD", Kw::DDD, true, G),
    kw("DD", Kw::DD, true, G),
    kw("DY", Kw::DY, false, N),
    kw("Day", Kw::Day, false, N),
    kw("Dy", Kw::Dy, false, N),
    kw("D", Kw::D, true, G),
    kw("FF1", Kw::FF(1), true, N),
    kw("FF2", Kw::FF(2), true, N),
    kw("FF3", Kw::FF(3), true, N),
    kw("FF4", Kw::FF(4), true, N),
    kw("FF5", Kw::FF(5), true, N),
    kw("FF6", Kw::FF(6), true, N),
    kw("FX", Kw::FX, false, N),
    kw("HH24", Kw::HH24, true, N),
    kw("HH12", Kw::HH12, true, N),
    kw("HH", Kw::HH, true, N),
    kw("IDDD", Kw::IDDD, true, Iso),
    kw("ID", Kw::ID, true, Iso),
    kw("IW", Kw::IW, true, Iso),
    kw("IYYY", Kw::IYYY, true, Iso),
    kw("IYY", Kw::IYY, true, Iso),
    kw("IY", Kw::IY, true, Iso),
    kw("I", Kw::I, true, Iso),
    kw("J", Kw::J, true, N),
    kw("MI", Kw::MI, true, N),
    kw("MM", Kw::MM, true, G),
    kw("MONTH", Kw::MONTH, false, G),
    kw("MON", Kw::MON, false, G),
    kw("MS", Kw::MS, true, N),
    kw("Month", Kw::Month, false, G),
    kw("Mon", Kw::Mon, false, G),
    kw("OF", Kw::OF, false, N),
    kw("P.M.", Kw::PDot, false, N),
    kw("PM", Kw::PM, false, N),
    kw("Q", Kw::Q, true, N),
    kw("RM", Kw::RM, false, G),
    kw("SSSSS", Kw::SSSS, true, N),
    kw("SSSS", Kw::SSSS, true, N),
    kw("SS", Kw::SS, true, N),
    kw("TZH", Kw::TZH, false, N),
    kw("TZM", Kw::TZM, true, N),
    kw("TZ", Kw::TZ, false, N),
    kw("US", Kw::US, true, N),
    kw("WW", Kw::WW, true, G),
    kw("W", Kw::W, true, G),
    kw("Y,YYY", Kw::YComma, true, G),
    kw("YYYY", Kw::YYYY, true, G),
    kw("YYY", Kw::YYY, true, G),
    kw("YY", Kw::YY, true, G),
    kw("Y", Kw::Y, true, G),
    kw("a.d.", Kw::LowADot, false, N),
    kw("a.m.", Kw::LowAMDot, false, N),
    kw("ad", Kw::LowAD, false, N),
    kw("am", Kw::LowAM, false, N),
    kw("b.c.", Kw::LowBDot, false, N),
    kw("bc", Kw::LowBC, false, N),
    kw("cc", Kw::CC, true, N),
    kw("day", Kw::LowDay, false, N),
    kw("ddd", Kw::DDD, true, G),
    kw("dd", Kw::DD, true, G),
    kw("dy", Kw::LowDy, false, N),
    kw("d", Kw::D, true, G),
    kw("ff1", Kw::FF(1), true, N),
    kw("ff2", Kw::FF(2), true, N),
    kw("ff3", Kw::FF(3), true, N),
    kw("ff4", Kw::FF(4), true, N),
    kw("ff5", Kw::FF(5), true, N),
    kw("ff6", Kw::FF(6), true, N),
    kw("fx", Kw::FX, false, N),
    kw("hh24", Kw::HH24, true, N),
    kw("hh12", Kw::HH12, true, N),
    kw("hh", Kw::HH, true, N),
    kw("iddd", Kw::IDDD, true, Iso),
    kw("id", Kw::ID, true, Iso),
    kw("iw", Kw::IW, true, Iso),
    kw("iyyy", Kw::IYYY, true, Iso),
    kw("iyy", Kw::IYY, true, Iso),
    kw("iy", Kw::IY, true, Iso),
    kw("i", Kw::I, true, Iso),
    kw("j", Kw::J, true, N),
    kw("mi", Kw::MI, true, N),
    kw("mm", Kw::MM, true, G),
    kw("month", Kw::LowMonth, false, G),
    kw("mon", Kw::LowMon, false, G),
    kw("ms", Kw::MS, true, N),
    kw("of", Kw::OF, false, N),
    kw("p.m.", Kw::LowPDot, false, N),
    kw("pm", Kw::LowPM, false, N),
    kw("q", Kw::Q, true, N),
    kw("rm", Kw::LowRM, false, G),
    kw("sssss", Kw::SSSS, true, N),
    kw("ssss", Kw::SSSS, true, N),
    kw("ss", Kw::SS, true, N),
    kw("tzh", Kw::TZH, false, N),
    kw("tzm", Kw::TZM, true, N),
    kw("tz", Kw::LowTZ, false, N),
    kw("us", Kw::US, true, N),
    kw("ww", Kw::WW, true, G),
    kw("w", Kw::W, true, G),
    kw("y,yyy", Kw::YComma, true, G),
    kw("yyyy", Kw::YYYY, true, G),
    kw("yyy", Kw::YYY, true, G),
    kw("yy", Kw::YY, true, G),
    kw("y", Kw::Y, true, G),
];

/// Suffix bits (DCH_S_*).
const S_FM: u8 = 0x01;
const S_TH_UPPER: u8 = 0x02;
const S_TH_LOWER: u8 = 0x04;
const S_SP: u8 = 0x08;
const S_TM: u8 = 0x10;

/// DCH_suff: prefixes, then postfixes, each searched in order.
const PREFIXES: &[(&str, u8)] = &[("FM", S_FM), ("fm", S_FM), ("TM", S_TM), ("tm", S_TM)];
const POSTFIXES: &[(&str, u8)] = &[("TH", S_TH_UPPER), ("th", S_TH_LOWER), ("SP", S_SP)];

/// The kind of a literal node (NODE_TYPE_CHAR, _SEPARATOR, _SPACE).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Lit {
    Char,
    Separator,
    Space,
}

/// One node of a parsed format.
#[derive(Debug)]
enum Node {
    Action { key: &'static KeyWord, suffix: u8 },
    Literal { kind: Lit, text: String },
}

impl Node {
    fn suffix(&self) -> u8 {
        match self {
            Node::Action { suffix, .. } => *suffix,
            Node::Literal { .. } => 0,
        }
    }
}

/// The length of the UTF-8 character whose first byte is `c` (pg_utf_mblen).
fn mblen(c: u8) -> usize {
    if c & 0x80 == 0 {
        1
    } else if c & 0xe0 == 0xc0 {
        2
    } else if c & 0xf0 == 0xe0 {
        3
    } else if c & 0xf8 == 0xf0 {
        4
    } else {
        1
    }
}

/// C's isspace in the C locale.
fn is_space(c: u8) -> bool {
    matches!(c, b' ' | b'\t' | b'\n' | 0x0b | 0x0c | b'\r')
}

/// is_separator_char: ASCII punctuation.
fn is_separator(c: u8) -> bool {
    c > 0x20 && c < 0x7f && !c.is_ascii_alphanumeric()
}

/// The character starting at byte `i` of `s` (whole, or what is left).
fn char_at(s: &[u8], i: usize) -> String {
    let end = (i + mblen(s[i])).min(s.len());
    String::from_utf8_lossy(&s[i..end]).into_owned()
}

/// A literal node for the character at byte `i`.
fn literal(s: &[u8], i: usize, quoted: bool) -> Node {
    let c = s[i];
    let kind = if quoted {
        Lit::Char
    } else if is_separator(c) {
        Lit::Separator
    } else if is_space(c) {
        Lit::Space
    } else {
        Lit::Char
    };
    Node::Literal {
        kind,
        text: char_at(s, i),
    }
}

/// parse_format for the date/time version (dtfmt rule 1).
fn parse_format(fmt: &str) -> Vec<Node> {
    let s = fmt.as_bytes();
    let mut nodes = Vec::new();
    let mut i = 0;
    while i < s.len() {
        let mut suffix = 0;
        if let Some((name, bit)) = PREFIXES
            .iter()
            .find(|(p, _)| s[i..].starts_with(p.as_bytes()))
        {
            suffix |= bit;
            i += name.len();
        }
        if i >= s.len() {
            break;
        }
        if let Some(key) = KEYWORDS
            .iter()
            .find(|k| s[i..].starts_with(k.name.as_bytes()))
        {
            i += key.name.len();
            if let Some((name, bit)) = POSTFIXES
                .iter()
                .find(|(p, _)| s[i..].starts_with(p.as_bytes()))
            {
                suffix |= bit;
                i += name.len();
            }
            nodes.push(Node::Action { key, suffix });
        } else if s[i] == b'"' {
            i += 1;
            while i < s.len() {
                if s[i] == b'"' {
                    i += 1;
                    break;
                }
                if s[i] == b'\\' && i + 1 < s.len() {
                    i += 1;
                }
                nodes.push(literal(s, i, true));
                i += mblen(s[i]);
            }
        } else {
            if s[i] == b'\\' && s.get(i + 1) == Some(&b'"') {
                i += 1;
            }
            nodes.push(literal(s, i, false));
            i += mblen(s[i]);
        }
    }
    nodes
}

/// `to_char(timestamp | timestamptz, text)`: `us` is microseconds since
/// 2000-01-01 (UTC for a timestamptz, `tz` true), formatted in the session
/// zone for a timestamptz (dtfmt rules 2 and 3). `Ok(None)` is SQL NULL: an
/// infinite timestamp (`i64::MIN` / `i64::MAX`) or an empty format.
pub fn to_char_timestamp(us: i64, tz: bool, fmt: &str, st: &Settings) -> SqlResult<Option<String>> {
    if fmt.is_empty() || us == i64::MIN || us == i64::MAX {
        return Ok(None);
    }
    let tm = to_char::timestamp_fields(us, tz.then_some(st));
    to_char::format(&parse_format(fmt), &tm, false).map(Some)
}

/// `to_char(interval, text)` (dtfmt rules 2 and 4); `Ok(None)` for an empty
/// format.
pub fn to_char_interval(iv: &Interval, fmt: &str) -> SqlResult<Option<String>> {
    if fmt.is_empty() {
        return Ok(None);
    }
    let tm = to_char::interval_fields(iv);
    to_char::format(&parse_format(fmt), &tm, true).map(Some)
}

/// `to_timestamp(text, text)`: a timestamptz, microseconds since 2000-01-01
/// UTC (dtfmt rules 5 and 6).
pub fn to_timestamp(text: &str, fmt: &str, st: &Settings) -> SqlResult<i64> {
    convert::to_timestamp(text, &parse_format(fmt), st)
}

/// `to_date(text, text)`: days since 2000-01-01 (dtfmt rules 5 and 6).
pub fn to_date(text: &str, fmt: &str, _st: &Settings) -> SqlResult<i32> {
    convert::to_date(text, &parse_format(fmt))
}
