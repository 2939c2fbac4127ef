//! DCH_from_char: reading the input text into TmFromChar (dtfmt rule 5).

use super::to_char::{DAYS_FULL, DAYS_SHORT, MONTHS_FULL, MONTHS_SHORT, RM_MONTHS};
use super::S_TH_UPPER;
use super::{is_separator, is_space, mblen, KeyWord, Kw, Lit, Mode, Node, S_FM, S_TH_LOWER};
use crate::{SqlError, SqlResult};

/// PostgreSQL's TmFromChar: what the input gave.
#[derive(Clone, Copy, Debug)]
pub(super) struct TmFromChar {
    pub mode: Mode,
    pub hh: i32,
    pub pm: i32,
    pub mi: i32,
    pub ss: i32,
    pub ssss: i32,
    /// 1..7, Sunday 1; 0 when missing.
    pub d: i32,
    pub dd: i32,
    pub ddd: i32,
    pub mm: i32,
    pub ms: i32,
    pub year: i32,
    pub bc: i32,
    pub ww: i32,
    pub w: i32,
    pub cc: i32,
    pub j: i32,
    pub us: i32,
    pub yysz: i32,
    /// The 12-hour clock was used.
    pub clock12: bool,
    pub tzsign: i32,
    pub tzh: i32,
    pub tzm: i32,
    pub ff: i32,
}

impl Default for TmFromChar {
    fn default() -> TmFromChar {
        TmFromChar {
            mode: Mode::None,
            hh: 0,
            pm: 0,
            mi: 0,
            ss: 0,
            ssss: 0,
            d: 0,
            dd: 0,
            ddd: 0,
            mm: 0,
            ms: 0,
            year: 0,
            bc: 0,
            ww: 0,
            w: 0,
            cc: 0,
            j: 0,
            us: 0,
            yysz: 0,
            clock12: false,
            tzsign: 0,
            tzh: 0,
            tzm: 0,
            ff: 0,
        }
    }
}

const AMPM: [&str; 4] = ["am", "pm", "AM", "PM"];
const AMPM_LONG: [&str; 4] = ["a.m.", "p.m.", "A.M.", "P.M."];
const ADBC: [&str; 4] = ["ad", "bc", "AD", "BC"];
const ADBC_LONG: [&str; 4] = ["a.d.", "b.c.", "A.D.", "B.C."];

fn bad_format(msg: String) -> SqlError {
    SqlError::new("22007", msg)
}

const FM_HINT: &str = "If your source string is not fixed-width, try using the \"FM\" modifier.";

/// C's strtol (base 10) from byte `i`: the value (clamped), where it stopped
/// (`i` when nothing was read) and whether it overflowed.
pub(super) fn strtol(s: &[u8], i: usize) -> (i64, usize, bool) {
    let mut p = i;
    while p < s.len() && is_space(s[p]) {
        p += 1;
    }
    let neg = match s.get(p) {
        Some(b'-') => {
            p += 1;
            true
        }
        Some(b'+') => {
            p += 1;
            false
        }
        _ => false,
    };
    let start = p;
    let mut v: i64 = 0;
    let mut over = false;
    while p < s.len() && s[p].is_ascii_digit() {
        let d = i64::from(s[p] - b'0');
        match v.checked_mul(10).and_then(|x| x.checked_sub(d)) {
            Some(x) => v = x,
            None => over = true,
        }
        p += 1;
    }
    if p == start {
        return (0, i, false);
    }
    let v = if neg {
        if over {
            i64::MIN
        } else {
            v
        }
    } else if over || v == i64::MIN {
        over = true;
        i64::MAX
    } else {
        -v
    };
    (v, p, over)
}

/// The input reader: the format's nodes, the input and the position.
pub(super) struct Reader<'a> {
    nodes: &'a [Node],
    s: &'a [u8],
    pos: usize,
    pub out: TmFromChar,
}

impl<'a> Reader<'a> {
    pub(super) fn new(nodes: &'a [Node], text: &'a str) -> Reader<'a> {
        Reader {
            nodes,
            s: text.as_bytes(),
            pos: 0,
            out: TmFromChar::default(),
        }
    }

    fn at(&self, i: usize) -> u8 {
        self.s.get(i).copied().unwrap_or(0)
    }

    /// Moves past the character at the position (never beyond the end).
    fn skip_char(&mut self) {
        if self.pos < self.s.len() {
            self.pos = (self.pos + mblen(self.s[self.pos])).min(self.s.len());
        }
    }

    /// Skips spaces; how many.
    fn skip_spaces(&mut self) -> i32 {
        let mut n = 0;
        while self.pos < self.s.len() && is_space(self.s[self.pos]) {
            self.pos += 1;
            n += 1;
        }
        n
    }

    /// DCH_from_char's loop (dtfmt rule 5).
    pub(super) fn run(&mut self) -> SqlResult<()> {
        let mut fx = false;
        let mut extra_skip: i32 = 0;
        let mut ni = 0;
        while ni < self.nodes.len() && self.pos < self.s.len() {
            let node = &self.nodes[ni];
            let is_fx = matches!(node, Node::Action { key, .. } if key.id == Kw::FX);
            let is_action = matches!(node, Node::Action { .. });
            if !fx && !is_fx && (is_action || ni == 0) {
                extra_skip += self.skip_spaces();
            }
            match node {
                Node::Literal { kind, .. } if *kind != Lit::Char => {
                    if fx {
                        self.skip_char();
                    } else {
                        extra_skip -= 1;
                        let c = self.at(self.pos);
                        if is_space(c) || is_separator(c) {
                            self.pos += 1;
                            extra_skip += 1;
                        }
                    }
                }
                Node::Literal { .. } => {
                    if !fx && extra_skip > 0 {
                        extra_skip -= 1;
                    } else {
                        self.skip_char();
                    }
                }
                Node::Action { key, suffix } => {
                    self.set_mode(key.mode)?;
                    if key.id == Kw::FX {
                        fx = true;
                    } else {
                        self.field(ni, key, *suffix, extra_skip)?;
                    }
                    if !fx {
                        extra_skip = self.skip_spaces();
                    }
                }
            }
            ni += 1;
        }
        Ok(())
    }

    /// from_char_set_mode.
    fn set_mode(&mut self, mode: Mode) -> SqlResult<()> {
        if mode == Mode::None {
            return Ok(());
        }
        if self.out.mode == Mode::None {
            self.out.mode = mode;
        } else if self.out.mode != mode {
            return Err(
                bad_format("invalid combination of date conventions".into()).with_hint(
                    "Do not mix Gregorian and ISO week date conventions in a formatting template.",
                ),
            );
        }
        Ok(())
    }

    /// One keyword's field.
    fn field(&mut self, ni: usize, key: &KeyWord, suffix: u8, extra_skip: i32) -> SqlResult<()> {
        if self.text_field(key)? {
            return Ok(());
        }
        match key.id {
            Kw::TZ | Kw::LowTZ | Kw::OF => {
                return Err(SqlError::new(
                    "0A000",
                    format!(
                        "formatting field \"{}\" is only supported in to_char",
                        key.name
                    ),
                ));
            }
            Kw::TZH => {
                let c = self.at(self.pos);
                if matches!(c, b'+' | b'-' | b' ') {
                    self.out.tzsign = if c == b'-' { -1 } else { 1 };
                    self.pos += 1;
                } else if extra_skip > 0 && self.pos > 0 && self.s[self.pos - 1] == b'-' {
                    self.out.tzsign = -1;
                } else {
                    self.out.tzsign = 1;
                }
                self.int_len(Slot::Tzh, 2, ni)?;
                return Ok(());
            }
            Kw::TZM => {
                if self.out.tzsign == 0 {
                    self.out.tzsign = 1;
                }
                self.int_len(Slot::Tzm, 2, ni)?;
                return Ok(());
            }
            Kw::YComma => self.y_yyy()?,
            _ => self.number_field(ni, key)?,
        }
        if suffix & (S_TH_UPPER | S_TH_LOWER) != 0 {
            self.skip_char();
            self.skip_char();
        }
        Ok(())
    }

    /// The numeric keywords.
    fn number_field(&mut self, ni: usize, key: &KeyWord) -> SqlResult<()> {
        let klen = key.name.len();
        let (slot, len) = match key.id {
            Kw::HH | Kw::HH12 | Kw::HH24 => (Slot::Hh, 2),
            Kw::MI => (Slot::Mi, klen),
            Kw::SS => (Slot::Ss, klen),
            Kw::MS => (Slot::Ms, 3),
            Kw::FF(n) => (Slot::Us, usize::from(n)),
            Kw::US => (Slot::Us, 6),
            Kw::SSSS => (Slot::Ssss, klen),
            Kw::MM => (Slot::Mm, klen),
            Kw::DDD => (Slot::Ddd, klen),
            Kw::IDDD => (Slot::Ddd, 3),
            Kw::DD => (Slot::Dd, klen),
            Kw::D => (Slot::D, klen),
            Kw::ID => (Slot::D, 1),
            Kw::WW | Kw::IW => (Slot::Ww, klen),
            Kw::Q => (Slot::Discard, klen),
            Kw::CC => (Slot::Cc, klen),
            Kw::W => (Slot::W, klen),
            Kw::J => (Slot::J, klen),
            _ => return self.year_field(ni, key),
        };
        if let Kw::FF(n) = key.id {
            self.out.ff = i32::from(n);
        }
        let used = self.int_len(slot, len, ni)?;
        match key.id {
            Kw::HH | Kw::HH12 => self.out.clock12 = true,
            Kw::MS => {
                let scale = match used {
                    1 => 100,
                    2 => 10,
                    _ => 1,
                };
                self.out.ms = self.out.ms.wrapping_mul(scale);
            }
            Kw::FF(_) | Kw::US => {
                let scale = if (1..6).contains(&used) {
                    10i32.pow(6 - used as u32)
                } else {
                    1
                };
                self.out.us = self.out.us.wrapping_mul(scale);
            }
            Kw::ID => {
                self.out.d = self.out.d.wrapping_add(1);
                if self.out.d > 7 {
                    self.out.d = 1;
                }
            }
            _ => {}
        }
        Ok(())
    }

    /// YYYY YYY YY Y and the ISO forms.
    fn year_field(&mut self, ni: usize, key: &KeyWord) -> SqlResult<()> {
        let (klen, sz) = match key.id {
            Kw::YYYY | Kw::IYYY => (4, 4),
            Kw::YYY | Kw::IYY => (3, 3),
            Kw::YY | Kw::IY => (2, 2),
            Kw::Y | Kw::I => (1, 1),
            _ => return Ok(()),
        };
        let len = self.int_len(Slot::Year, klen, ni)?;
        if sz < 4 && len < 4 {
            self.out.year = adjust_partial_year_to_2020(self.out.year);
        }
        self.out.yysz = sz;
        Ok(())
    }

    /// The keywords matched against word lists; false if `key` is not one.
    fn text_field(&mut self, key: &KeyWord) -> SqlResult<bool> {
        let (list, slot): (&[&str], Slot) = match key.id {
            Kw::AMDot | Kw::PDot | Kw::LowAMDot | Kw::LowPDot => (&AMPM_LONG, Slot::Pm),
            Kw::AM | Kw::PM | Kw::LowAM | Kw::LowPM => (&AMPM, Slot::Pm),
            Kw::ADot | Kw::BDot | Kw::LowADot | Kw::LowBDot => (&ADBC_LONG, Slot::Bc),
            Kw::AD | Kw::BC | Kw::LowAD | Kw::LowBC => (&ADBC, Slot::Bc),
            Kw::MONTH | Kw::Month | Kw::LowMonth => (&MONTHS_FULL, Slot::Mm),
            Kw::MON | Kw::Mon | Kw::LowMon => (&MONTHS_SHORT, Slot::Mm),
            Kw::DAY | Kw::Day | Kw::LowDay => (&DAYS_FULL, Slot::D),
            Kw::DY | Kw::Dy | Kw::LowDy => (&DAYS_SHORT, Slot::D),
            Kw::RM | Kw::LowRM => (&RM_MONTHS, Slot::Mm),
            _ => return Ok(false),
        };
        let value = self.seq_search(list, key)? as i32;
        let value = match (key.id, slot) {
            (_, Slot::Pm | Slot::Bc) => value % 2,
            (Kw::RM | Kw::LowRM, _) => 12 - value,
            (_, Slot::Mm) => value + 1,
            _ => value,
        };
        self.set_int(slot, value, key)?;
        match slot {
            Slot::Pm => self.out.clock12 = true,
            Slot::D => self.out.d = self.out.d.wrapping_add(1),
            _ => {}
        }
        Ok(true)
    }

    /// from_char_seq_search: the index of the first word of `list` the input
    /// starts with, case-insensitively.
    fn seq_search(&mut self, list: &[&str], key: &KeyWord) -> SqlResult<usize> {
        let rest = &self.s[self.pos..];
        let found = list.iter().enumerate().find(|(_, w)| {
            !rest.is_empty()
                && rest.len() >= w.len()
                && rest[..w.len()].eq_ignore_ascii_case(w.as_bytes())
        });
        if let Some((i, w)) = found {
            self.pos += w.len();
            return Ok(i);
        }
        let end = rest
            .iter()
            .position(|&c| matches!(c, b' ' | b'\t' | b'\n' | b'\r' | 0x0c))
            .unwrap_or(rest.len());
        let copy = String::from_utf8_lossy(&rest[..end]);
        Err(
            bad_format(format!("invalid value \"{copy}\" for \"{}\"", key.name)).with_detail(
                "The given value did not match any of the allowed values for this field.",
            ),
        )
    }

    /// The field a slot names.
    fn slot(&mut self, slot: Slot) -> Option<&mut i32> {
        let o = &mut self.out;
        Some(match slot {
            Slot::Hh => &mut o.hh,
            Slot::Pm => &mut o.pm,
            Slot::Mi => &mut o.mi,
            Slot::Ss => &mut o.ss,
            Slot::Ssss => &mut o.ssss,
            Slot::D => &mut o.d,
            Slot::Dd => &mut o.dd,
            Slot::Ddd => &mut o.ddd,
            Slot::Mm => &mut o.mm,
            Slot::Ms => &mut o.ms,
            Slot::Year => &mut o.year,
            Slot::Bc => &mut o.bc,
            Slot::Ww => &mut o.ww,
            Slot::W => &mut o.w,
            Slot::Cc => &mut o.cc,
            Slot::J => &mut o.j,
            Slot::Us => &mut o.us,
            Slot::Tzh => &mut o.tzh,
            Slot::Tzm => &mut o.tzm,
            Slot::Discard => return None,
        })
    }

    /// from_char_set_int: a field may be set twice only to the same value.
    fn set_int(&mut self, slot: Slot, value: i32, key: &KeyWord) -> SqlResult<()> {
        let Some(dest) = self.slot(slot) else {
            return Ok(());
        };
        if *dest != 0 && *dest != value {
            return Err(bad_format(format!(
                "conflicting values for \"{}\" field in formatting string",
                key.name
            ))
            .with_detail("This value contradicts a previous setting for the same field type."));
        }
        *dest = value;
        Ok(())
    }

    /// is_next_separator: whether the node after `ni` cannot continue a number.
    fn next_is_separator(&self, ni: usize) -> bool {
        if self.nodes[ni].suffix() & (S_TH_UPPER | S_TH_LOWER) != 0 {
            return true;
        }
        match self.nodes.get(ni + 1) {
            None => true,
            Some(Node::Action { key, .. }) => !key.digit,
            Some(Node::Literal { text, .. }) => {
                !(text.len() == 1 && text.as_bytes()[0].is_ascii_digit())
            }
        }
    }

    /// from_char_parse_int_len: an integer of `len` characters (or as many as
    /// there are with FM or before a separator); the characters used.
    fn int_len(&mut self, slot: Slot, len: usize, ni: usize) -> SqlResult<usize> {
        let Node::Action { key, suffix } = &self.nodes[ni] else {
            return Ok(0);
        };
        let init = self.pos;
        self.skip_spaces();
        let avail = self.s.len() - self.pos;
        let copy_bytes = &self.s[self.pos..self.pos + avail.min(len)];
        let copy = String::from_utf8_lossy(copy_bytes).into_owned();
        let (result, over) = if suffix & S_FM != 0 || self.next_is_separator(ni) {
            let (v, end, over) = strtol(self.s, init);
            self.pos = end;
            (v, over)
        } else {
            if avail < len {
                return Err(bad_format(format!(
                    "source string too short for \"{}\" formatting field",
                    key.name
                ))
                .with_detail(format!(
                    "Field requires {len} characters, but only {avail} remain."
                ))
                .with_hint(FM_HINT));
            }
            let (v, end, over) = strtol(copy_bytes, 0);
            if end > 0 && end < len {
                return Err(
                    bad_format(format!("invalid value \"{copy}\" for \"{}\"", key.name))
                        .with_detail(format!(
                            "Field requires {len} characters, but only {end} could be parsed."
                        ))
                        .with_hint(FM_HINT),
                );
            }
            self.pos += end;
            (v, over)
        };
        if self.pos == init {
            return Err(
                bad_format(format!("invalid value \"{copy}\" for \"{}\"", key.name))
                    .with_detail("Value must be an integer."),
            );
        }
        if over || result < i64::from(i32::MIN) || result > i64::from(i32::MAX) {
            return Err(SqlError::new(
                "22008",
                format!(
                    "value for \"{}\" in source string is out of range",
                    key.name
                ),
            )
            .with_detail("Value must be in the range -2147483648 to 2147483647."));
        }
        self.set_int(slot, result as i32, key)?;
        Ok(self.pos - init)
    }

    /// Y,YYY: `sscanf(s, "%d,%03d%n")`.
    fn y_yyy(&mut self) -> SqlResult<()> {
        let bad = || bad_format("invalid input string for \"Y,YYY\"".into());
        let (millennia, p, _) = strtol(self.s, self.pos);
        if p == self.pos || self.at(p) != b',' {
            return Err(bad());
        }
        let (years, end) = scan_width3(self.s, p + 1).ok_or_else(bad)?;
        let years = years.wrapping_add((millennia as i32).wrapping_mul(1000));
        let key = super::KEYWORDS.iter().find(|k| k.id == Kw::YComma);
        if let Some(key) = key {
            self.set_int(Slot::Year, years, key)?;
        }
        self.out.yysz = 4;
        self.pos = end;
        Ok(())
    }
}

/// scanf's `%03d`: blanks skipped, then at most 3 characters of sign and
/// digits.
fn scan_width3(s: &[u8], mut p: usize) -> Option<(i32, usize)> {
    while p < s.len() && is_space(s[p]) {
        p += 1;
    }
    let mut width = 3;
    let neg = s.get(p) == Some(&b'-');
    if matches!(s.get(p), Some(b'-' | b'+')) {
        p += 1;
        width -= 1;
    }
    let start = p;
    let mut v = 0i32;
    while p < s.len() && p - start < width && s[p].is_ascii_digit() {
        v = v * 10 + i32::from(s[p] - b'0');
        p += 1;
    }
    if p == start {
        return None;
    }
    Some((if neg { -v } else { v }, p))
}

/// adjust_partial_year_to_2020.
fn adjust_partial_year_to_2020(year: i32) -> i32 {
    if year < 70 {
        year.wrapping_add(2000)
    } else if year < 100 {
        year + 1900
    } else if year < 520 {
        year + 2000
    } else if year < 1000 {
        year + 1000
    } else {
        year
    }
}

/// A TmFromChar field.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Slot {
    Hh,
    Pm,
    Mi,
    Ss,
    Ssss,
    D,
    Dd,
    Ddd,
    Mm,
    Ms,
    Year,
    Bc,
    Ww,
    W,
    Cc,
    J,
    Us,
    Tzh,
    Tzm,
    Discard,
}
