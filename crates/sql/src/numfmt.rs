//! PostgreSQL 15's number formatting (`formatting.c`, the NUM_* part):
//! `to_char(numeric | int | float, text)` and `to_number(text, text)`.
//!
//! Entry points: [`to_char_numeric`], [`to_char_i32`] (int2/int4),
//! [`to_char_i64`] (int8), [`to_char_f64`] (float4/float8), [`to_number`] and
//! [`to_number_opt`].
//!
//! Rules (cited as "numfmt rule N"):
//! 1. The format is parsed as PostgreSQL's `parse_format` parses it: keywords
//!    (`9 0 . , B C D EEEE FM G L MI PL PR RN SG SP S TH V`, most in either case),
//!    double-quoted text (a backslash quotes the next character), `\"` outside
//!    quotes is a literal quote, anything else is a literal character. The
//!    pattern checks of `NUMDesc_prepare` fail with 42601 as PostgreSQL's do.
//! 2. The value becomes a digit string as the type's `*_to_char` makes it
//!    (numeric rounded to the pattern's fraction digits, floats through C's
//!    `%.*f` with at most 15 (6 for `real`) significant digits); a value with
//!    more integral digits than the pattern prints as `#`s.
//! 3. `NUM_processor` then lays the digits into the pattern byte by byte, the
//!    same state machine as PostgreSQL's; locale-dependent patterns take the C
//!    locale's values (`D` is `.`, `G` is `,`, `L` is a space, `S` is `+`/`-`).
//! 4. `to_number` reads digits, sign and decimal point with the same machine and
//!    feeds the text to `numeric_in` with the typmod the pattern implies.

use crate::numeric::num_err;
use crate::{SqlError, SqlResult};
use strata_types::Numeric;

const F_DECIMAL: u32 = 1 << 1;
const F_LDECIMAL: u32 = 1 << 2;
const F_ZERO: u32 = 1 << 3;
const F_BLANK: u32 = 1 << 4;
const F_FILLMODE: u32 = 1 << 5;
const F_LSIGN: u32 = 1 << 6;
const F_BRACKET: u32 = 1 << 7;
const F_MINUS: u32 = 1 << 8;
const F_PLUS: u32 = 1 << 9;
const F_ROMAN: u32 = 1 << 10;
const F_MULTI: u32 = 1 << 11;
const F_PLUS_POST: u32 = 1 << 12;
const F_MINUS_POST: u32 = 1 << 13;
const F_EEEE: u32 = 1 << 14;

const LSIGN_PRE: i32 = -1;
const LSIGN_POST: i32 = 1;
const LSIGN_NONE: i32 = 0;

/// C's DBL_DIG and FLT_DIG.
const DBL_DIG: i32 = 15;
const FLT_DIG: i32 = 6;

/// A keyword of the number format (PostgreSQL's NUM_poz, case folded where
/// PostgreSQL folds it).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Kw {
    Comma,
    Dec,
    Zero,
    Nine,
    B,
    C,
    D,
    E,
    Fm,
    G,
    L,
    Mi,
    Pl,
    Pr,
    Rn,
    RnLower,
    Sg,
    Sp,
    S,
    Th,
    ThLower,
    V,
}

/// NUM_keywords, in PostgreSQL's order (the first match wins).
const KEYWORDS: &[(&str, Kw)] = &[
    (",", Kw::Comma),
    (".", Kw::Dec),
    ("0", Kw::Zero),
    ("9", Kw::Nine),
    ("B", Kw::B),
    ("C", Kw::C),
    ("D", Kw::D),
    ("EEEE", Kw::E),
    ("FM", Kw::Fm),
    ("G", Kw::G),
    ("L", Kw::L),
    ("MI", Kw::Mi),
    ("PL", Kw::Pl),
    ("PR", Kw::Pr),
    ("RN", Kw::Rn),
    ("SG", Kw::Sg),
    ("SP", Kw::Sp),
    ("S", Kw::S),
    ("TH", Kw::Th),
    ("V", Kw::V),
    ("b", Kw::B),
    ("c", Kw::C),
    ("d", Kw::D),
    ("eeee", Kw::E),
    ("fm", Kw::Fm),
    ("g", Kw::G),
    ("l", Kw::L),
    ("mi", Kw::Mi),
    ("pl", Kw::Pl),
    ("pr", Kw::Pr),
    ("rn", Kw::RnLower),
    ("sg", Kw::Sg),
    ("sp", Kw::Sp),
    ("s", Kw::S),
    ("th", Kw::ThLower),
    ("v", Kw::V),
];

/// One node of a parsed format.
#[derive(Clone, Debug, PartialEq, Eq)]
enum Node {
    Key(Kw),
    Char(Vec<u8>),
}

/// PostgreSQL's NUMDesc: what the pattern asks for.
#[derive(Clone, Copy, Debug, Default)]
struct Desc {
    pre: i32,
    post: i32,
    lsign: i32,
    flag: u32,
    pre_lsign_num: i32,
    multi: i32,
    zero_start: i32,
    zero_end: i32,
}

impl Desc {
    fn is(&self, f: u32) -> bool {
        self.flag & f != 0
    }
}

fn syntax(msg: &str) -> SqlError {
    SqlError::new("42601", msg)
}

/// The keyword at the start of `s`, if any (index_seq_search).
fn keyword_at(s: &[u8]) -> Option<(Kw, usize)> {
    let c = *s.first()?;
    if c <= b' ' || c >= b'~' {
        return None;
    }
    KEYWORDS
        .iter()
        .find(|(name, _)| s.starts_with(name.as_bytes()))
        .map(|(name, kw)| (*kw, name.len()))
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

/// parse_format for the number version (numfmt rule 1).
fn parse_format(fmt: &str) -> SqlResult<(Vec<Node>, Desc)> {
    let s = fmt.as_bytes();
    let mut nodes = Vec::new();
    let mut desc = Desc::default();
    let mut i = 0;
    while i < s.len() {
        if let Some((kw, len)) = keyword_at(&s[i..]) {
            prepare(&mut desc, kw)?;
            nodes.push(Node::Key(kw));
            i += len;
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
                let len = mblen(s[i]).min(s.len() - i);
                nodes.push(Node::Char(s[i..i + len].to_vec()));
                i += len;
            }
        } else {
            if s[i] == b'\\' && s.get(i + 1) == Some(&b'"') {
                i += 1;
            }
            let len = mblen(s[i]).min(s.len() - i);
            nodes.push(Node::Char(s[i..i + len].to_vec()));
            i += len;
        }
    }
    Ok((nodes, desc))
}

/// NUMDesc_prepare: one keyword's effect on the description, or its error.
fn prepare(num: &mut Desc, kw: Kw) -> SqlResult<()> {
    if num.is(F_EEEE) && kw != Kw::E {
        return Err(syntax("\"EEEE\" must be the last pattern used"));
    }
    match kw {
        Kw::Nine | Kw::Zero => prepare_digit(num, kw)?,
        Kw::B => {
            if num.pre == 0 && num.post == 0 && !num.is(F_ZERO) {
                num.flag |= F_BLANK;
            }
        }
        Kw::D | Kw::Dec => {
            if kw == Kw::D {
                num.flag |= F_LDECIMAL;
            }
            if num.is(F_DECIMAL) {
                return Err(syntax("multiple decimal points"));
            }
            if num.is(F_MULTI) {
                return Err(syntax("cannot use \"V\" and decimal point together"));
            }
            num.flag |= F_DECIMAL;
        }
        Kw::Fm => num.flag |= F_FILLMODE,
        Kw::S | Kw::Mi | Kw::Pl | Kw::Sg | Kw::Pr => prepare_sign(num, kw)?,
        Kw::Rn | Kw::RnLower => num.flag |= F_ROMAN,
        Kw::V => {
            if num.is(F_DECIMAL) {
                return Err(syntax("cannot use \"V\" and decimal point together"));
            }
            num.flag |= F_MULTI;
        }
        Kw::E => prepare_eeee(num)?,
        Kw::Comma | Kw::C | Kw::G | Kw::L | Kw::Sp | Kw::Th | Kw::ThLower => {}
    }
    Ok(())
}

fn prepare_digit(num: &mut Desc, kw: Kw) -> SqlResult<()> {
    if num.is(F_BRACKET) {
        return Err(syntax(if kw == Kw::Nine {
            "\"9\" must be ahead of \"PR\""
        } else {
            "\"0\" must be ahead of \"PR\""
        }));
    }
    if kw == Kw::Nine {
        if num.is(F_MULTI) {
            num.multi += 1;
        } else if num.is(F_DECIMAL) {
            num.post += 1;
        } else {
            num.pre += 1;
        }
        return Ok(());
    }
    if !num.is(F_ZERO) && !num.is(F_DECIMAL) {
        num.flag |= F_ZERO;
        num.zero_start = num.pre + 1;
    }
    if num.is(F_DECIMAL) {
        num.post += 1;
    } else {
        num.pre += 1;
    }
    num.zero_end = num.pre + num.post;
    Ok(())
}

fn prepare_sign(num: &mut Desc, kw: Kw) -> SqlResult<()> {
    let lsign = num.is(F_LSIGN);
    match kw {
        Kw::S => {
            if lsign {
                return Err(syntax("cannot use \"S\" twice"));
            }
            if num.is(F_PLUS) || num.is(F_MINUS) || num.is(F_BRACKET) {
                return Err(syntax(
                    "cannot use \"S\" and \"PL\"/\"MI\"/\"SG\"/\"PR\" together",
                ));
            }
            if !num.is(F_DECIMAL) {
                num.lsign = LSIGN_PRE;
                num.pre_lsign_num = num.pre;
                num.flag |= F_LSIGN;
            } else if num.lsign == LSIGN_NONE {
                num.lsign = LSIGN_POST;
                num.flag |= F_LSIGN;
            }
        }
        Kw::Mi | Kw::Pl => {
            let (name, f, post) = if kw == Kw::Mi {
                ("MI", F_MINUS, F_MINUS_POST)
            } else {
                ("PL", F_PLUS, F_PLUS_POST)
            };
            if lsign {
                return Err(syntax(&format!("cannot use \"S\" and \"{name}\" together")));
            }
            num.flag |= f;
            if num.is(F_DECIMAL) {
                num.flag |= post;
            }
        }
        Kw::Sg => {
            if lsign {
                return Err(syntax("cannot use \"S\" and \"SG\" together"));
            }
            num.flag |= F_MINUS | F_PLUS;
        }
        _ => {
            if lsign || num.is(F_PLUS) || num.is(F_MINUS) {
                return Err(syntax(
                    "cannot use \"PR\" and \"S\"/\"PL\"/\"MI\"/\"SG\" together",
                ));
            }
            num.flag |= F_BRACKET;
        }
    }
    Ok(())
}

fn prepare_eeee(num: &mut Desc) -> SqlResult<()> {
    if num.is(F_EEEE) {
        return Err(syntax("cannot use \"EEEE\" twice"));
    }
    let others = F_BLANK | F_FILLMODE | F_LSIGN | F_BRACKET | F_MINUS | F_PLUS | F_ROMAN | F_MULTI;
    if num.flag & others != 0 {
        return Err(
            syntax("\"EEEE\" is incompatible with other formats").with_detail(
                "\"EEEE\" may only be used together with digit and decimal point patterns.",
            ),
        );
    }
    num.flag |= F_EEEE;
    Ok(())
}

/// `n` in upper-case Roman numerals, or 15 `#` outside 1..3999 (int_to_roman).
fn int_to_roman(n: i64) -> Vec<u8> {
    const RM1: [&str; 9] = ["I", "II", "III", "IV", "V", "VI", "VII", "VIII", "IX"];
    const RM10: [&str; 9] = ["X", "XX", "XXX", "XL", "L", "LX", "LXX", "LXXX", "XC"];
    const RM100: [&str; 9] = ["C", "CC", "CCC", "CD", "D", "DC", "DCC", "DCCC", "CM"];
    if !(1..=3999).contains(&n) {
        return vec![b'#'; 15];
    }
    let mut out = String::new();
    let (th, h, t, o) = (n / 1000, n / 100 % 10, n / 10 % 10, n % 10);
    for _ in 0..th {
        out.push('M');
    }
    for (d, table) in [(h, &RM100), (t, &RM10), (o, &RM1)] {
        if d > 0 {
            out.push_str(table[d as usize - 1]);
        }
    }
    out.into_bytes()
}

/// `pre + post + 1` `#`s with a point after `pre` (the overflow form).
fn hashes(pre: i32, post: i32) -> Vec<u8> {
    let mut v = vec![b'#'; (pre + post + 1).max(0) as usize];
    if let Some(c) = v.get_mut(pre.max(0) as usize) {
        *c = b'.';
    }
    v
}

/// The EEEE form of NaN and ±Infinity: `#`s with a leading space and a point.
fn eeee_hashes(pre: i32, post: i32) -> Vec<u8> {
    let mut v = vec![b'#'; (pre + post + 6).max(0) as usize];
    if let Some(c) = v.first_mut() {
        *c = b' ';
    }
    if let Some(c) = v.get_mut((pre + 1).max(0) as usize) {
        *c = b'.';
    }
    v
}

/// The digits (no sign) with their sign: `-` first is the sign, else `+`.
fn split_sign(s: String) -> (Vec<u8>, u8) {
    match s.strip_prefix('-') {
        Some(rest) => (rest.as_bytes().to_vec(), b'-'),
        None => (s.into_bytes(), b'+'),
    }
}

/// The padding (out_pre_spaces) for `numstr`, or its `#` form when it has more
/// integral digits than the pattern (numfmt rule 2).
fn fit_digits(numstr: Vec<u8>, pre: i32, post: i32) -> (Vec<u8>, i32) {
    let pre_len = numstr
        .iter()
        .position(|&c| c == b'.')
        .unwrap_or(numstr.len()) as i32;
    if pre_len < pre {
        (numstr, pre - pre_len)
    } else if pre_len > pre {
        (hashes(pre, post), 0)
    } else {
        (numstr, 0)
    }
}

/// numeric_out_sci: `d.ddde+XX` rounded to `post` fraction digits (half away
/// from zero), or NaN / Infinity / -Infinity.
fn numeric_sci(v: &Numeric, post: i32) -> String {
    let Some((m, _)) = v.parts() else {
        return v.to_string();
    };
    let post = post.max(0) as usize;
    let text = m.to_string();
    let (neg, digits) = match text.strip_prefix('-') {
        Some(d) => (true, d),
        None => (false, text.as_str()),
    };
    let exp = v.exponent10().unwrap_or(0);
    let digits = if v.signum() == 0 { "0" } else { digits };
    let mut kept: Vec<u8> = digits.bytes().take(post + 1).collect();
    kept.resize(post + 1, b'0');
    if digits.as_bytes().get(post + 1).is_some_and(|&c| c >= b'5') {
        let mut i = kept.len();
        loop {
            if i == 0 {
                kept.insert(0, b'1');
                break;
            }
            i -= 1;
            if kept[i] == b'9' {
                kept[i] = b'0';
            } else {
                kept[i] += 1;
                break;
            }
        }
    }
    let int_len = kept.len() - post;
    let mut out = String::new();
    if neg {
        out.push('-');
    }
    out.push_str(std::str::from_utf8(&kept[..int_len]).unwrap_or("0"));
    if post > 0 {
        out.push('.');
        out.push_str(std::str::from_utf8(&kept[int_len..]).unwrap_or(""));
    }
    let sign = if exp < 0 { '-' } else { '+' };
    format!("{out}e{sign}{:02}", exp.abs())
}

/// NUMProc for to_char: the state of laying digits into the pattern.
struct ToChar {
    num: Desc,
    number: Vec<u8>,
    np: usize,
    out: Vec<u8>,
    sign: u8,
    sign_wrote: bool,
    num_count: i32,
    num_in: bool,
    num_curr: i32,
    out_pre_spaces: i32,
    last_relevant: Option<usize>,
}

impl ToChar {
    /// The digit-string byte at `i` (NUL past the end, as C's string).
    fn at(&self, i: usize) -> u8 {
        self.number.get(i).copied().unwrap_or(0)
    }
    fn fill(&self) -> bool {
        self.num.is(F_FILLMODE)
    }
    fn last_is_dot(&self) -> bool {
        self.last_relevant.is_some_and(|i| self.at(i) == b'.')
    }
    /// IS_PREDEC_SPACE: "0.1" in "9.9" prints " .1".
    fn predec_space(&self) -> bool {
        !self.num.is(F_ZERO) && self.np == 0 && self.at(0) == b'0' && self.num.post != 0
    }
    fn push_sign_text(&mut self) {
        self.out.push(if self.sign == b'-' { b'-' } else { b'+' });
    }

    /// PostgreSQL's set-up of NUM_processor for to_char (sign and counts).
    fn new(num: Desc, number: Vec<u8>, out_pre_spaces: i32, sign: u8) -> ToChar {
        let mut p = ToChar {
            num,
            number,
            np: 0,
            out: Vec::new(),
            sign,
            sign_wrote: false,
            num_count: 0,
            num_in: false,
            num_curr: 0,
            out_pre_spaces: 0,
            last_relevant: None,
        };
        if p.num.is(F_ROMAN) {
            p.num.lsign = 0;
            p.num.pre_lsign_num = 0;
            p.num.post = 0;
            p.num.pre = 0;
            p.num.flag = (p.num.flag & F_FILLMODE) | F_ROMAN;
        }
        if p.num.is(F_PLUS) || p.num.is(F_MINUS) {
            p.sign_wrote = !p.num.is(F_PLUS) || p.num.is(F_MINUS);
        } else {
            if p.sign != b'-' && p.fill() {
                p.num.flag &= !F_BRACKET;
            }
            p.sign_wrote = p.sign == b'+' && p.fill() && !p.num.is(F_LSIGN);
            if p.num.lsign == LSIGN_PRE && p.num.pre == p.num.pre_lsign_num {
                p.num.lsign = LSIGN_POST;
            }
        }
        p.num_count = p.num.post + p.num.pre - 1;
        p.out_pre_spaces = out_pre_spaces;
        if p.fill() && p.num.is(F_DECIMAL) {
            p.set_last_relevant();
        }
        if !p.sign_wrote && p.out_pre_spaces == 0 {
            p.num_count += 1;
        }
        p
    }

    /// get_last_relevant_decnum, then kept past the pattern's last `0`.
    fn set_last_relevant(&mut self) {
        let Some(dot) = self.number.iter().position(|&c| c == b'.') else {
            return;
        };
        let last = (dot + 1..self.number.len())
            .rev()
            .find(|&i| self.number[i] != b'0')
            .unwrap_or(dot);
        self.last_relevant = Some(last);
        if self.num.zero_end > self.out_pre_spaces {
            let pos = (self.number.len() as i32 - 1).min(self.num.zero_end - self.out_pre_spaces);
            if pos >= 0 && (last as i32) < pos {
                self.last_relevant = Some(pos as usize);
            }
        }
    }

    /// Writes the sign where the number starts (first half of NUM_numpart_to_char).
    fn write_sign(&mut self) {
        let starts = self.num_curr >= self.out_pre_spaces
            || (self.num.is(F_ZERO) && self.num.zero_start == self.num_curr);
        if self.sign_wrote || !starts || (self.predec_space() && !self.last_is_dot()) {
            return;
        }
        if self.num.is(F_LSIGN) {
            if self.num.lsign == LSIGN_PRE {
                self.push_sign_text();
                self.sign_wrote = true;
            }
        } else if self.num.is(F_BRACKET) {
            self.out.push(if self.sign == b'+' { b' ' } else { b'<' });
            self.sign_wrote = true;
        } else if self.sign == b'+' {
            if !self.fill() {
                self.out.push(b' ');
            }
            self.sign_wrote = true;
        } else if self.sign == b'-' {
            self.out.push(b'-');
            self.sign_wrote = true;
        }
    }

    /// NUM_numpart_to_char: a digit, zero, blank or decimal point.
    fn numpart(&mut self, kw: Kw) {
        if self.num.is(F_ROMAN) {
            return;
        }
        self.num_in = false;
        self.write_sign();
        if matches!(kw, Kw::Nine | Kw::Zero | Kw::D | Kw::Dec) {
            self.write_digit(kw);
            let mut end = self.num_count
                + i32::from(self.out_pre_spaces != 0)
                + i32::from(self.num.is(F_DECIMAL));
            if self.last_relevant == Some(self.np) {
                end = self.num_curr;
            }
            if self.num_curr + 1 == end {
                if self.sign_wrote && self.num.is(F_BRACKET) {
                    self.out.push(if self.sign == b'+' { b' ' } else { b'>' });
                } else if self.num.is(F_LSIGN) && self.num.lsign == LSIGN_POST {
                    self.push_sign_text();
                }
            }
        }
        self.num_curr += 1;
    }

    fn write_digit(&mut self, kw: Kw) {
        let zero = self.num.is(F_ZERO);
        let before = self.num_curr < self.out_pre_spaces;
        if before && (self.num.zero_start > self.num_curr || !zero) {
            if !self.fill() {
                self.out.push(b' ');
            }
            return;
        }
        if zero && before && self.num.zero_start <= self.num_curr {
            self.out.push(b'0');
            self.num_in = true;
            return;
        }
        let c = self.at(self.np);
        if c == b'.' {
            if !self.last_is_dot() || self.fill() {
                self.out.push(b'.');
            }
        } else if self.last_relevant.is_some_and(|l| self.np > l) && kw != Kw::Zero {
        } else if self.predec_space() {
            if !self.fill() {
                self.out.push(b' ');
            } else if self.last_is_dot() {
                self.out.push(b'0');
            }
        } else {
            self.out.push(c);
            self.num_in = true;
        }
        if c != 0 {
            self.np += 1;
        }
    }

    /// One keyword outside the digits (the switch of NUM_processor).
    fn keyword(&mut self, kw: Kw) -> SqlResult<()> {
        match kw {
            Kw::Nine | Kw::Zero | Kw::Dec | Kw::D => self.numpart(kw),
            Kw::Comma | Kw::G => {
                if self.num_in {
                    self.out.push(b',');
                } else if !self.fill() {
                    self.out.push(b' ');
                }
            }
            Kw::L => self.out.push(b' '),
            Kw::Rn | Kw::RnLower => {
                let mut s = self.number[self.np.min(self.number.len())..].to_vec();
                if let Some(z) = s.iter().position(|&c| c == 0) {
                    s.truncate(z);
                }
                if kw == Kw::RnLower {
                    s.make_ascii_lowercase();
                }
                if !self.fill() {
                    self.out
                        .extend(std::iter::repeat_n(b' ', 15usize.saturating_sub(s.len())));
                }
                self.out.extend_from_slice(&s);
            }
            Kw::Th | Kw::ThLower => {
                if self.num.is(F_ROMAN)
                    || self.at(0) == b'#'
                    || self.sign == b'-'
                    || self.num.is(F_DECIMAL)
                {
                    return Ok(());
                }
                let th = get_th(&self.number)?;
                let th = if kw == Kw::Th {
                    th.to_ascii_uppercase()
                } else {
                    th.to_string()
                };
                self.out.extend_from_slice(th.as_bytes());
            }
            Kw::Mi | Kw::Pl => {
                let (want, c) = if kw == Kw::Mi {
                    (b'-', b'-')
                } else {
                    (b'+', b'+')
                };
                if self.sign == want {
                    self.out.push(c);
                } else if !self.fill() {
                    self.out.push(b' ');
                }
            }
            Kw::Sg => self.out.push(self.sign),
            _ => {}
        }
        Ok(())
    }
}

/// get_th: the ordinal suffix (lower case) of a digit string.
fn get_th(num: &[u8]) -> SqlResult<&'static str> {
    let end = num.iter().position(|&c| c == 0).unwrap_or(num.len());
    let num = &num[..end];
    let last = num.last().copied().unwrap_or(0);
    if !last.is_ascii_digit() {
        return Err(SqlError::new(
            "22P02",
            format!("\"{}\" is not a number", String::from_utf8_lossy(num)),
        ));
    }
    let teen = num.len() > 1 && num[num.len() - 2] == b'1';
    Ok(match last {
        b'1' if !teen => "st",
        b'2' if !teen => "nd",
        b'3' if !teen => "rd",
        _ => "th",
    })
}

/// NUM_processor for to_char (numfmt rule 3).
fn process_to_char(
    nodes: &[Node],
    mut num: Desc,
    number: Vec<u8>,
    out_pre_spaces: i32,
    sign: u8,
) -> SqlResult<String> {
    if num.zero_start != 0 {
        num.zero_start -= 1;
    }
    if num.is(F_EEEE) {
        return Ok(String::from_utf8_lossy(&number).into_owned());
    }
    let mut p = ToChar::new(num, number, out_pre_spaces, sign);
    for n in nodes {
        match n {
            Node::Key(kw) => p.keyword(*kw)?,
            Node::Char(c) => p.out.extend_from_slice(c),
        }
    }
    if let Some(z) = p.out.iter().position(|&c| c == 0) {
        p.out.truncate(z);
    }
    Ok(String::from_utf8_lossy(&p.out).into_owned())
}

/// The digit string, padding and sign the callers hand to NUM_processor.
struct Prepared {
    number: Vec<u8>,
    pre_spaces: i32,
    sign: u8,
}

impl Prepared {
    fn bare(number: Vec<u8>) -> Prepared {
        Prepared {
            number,
            pre_spaces: 0,
            sign: 0,
        }
    }
}

/// Parses `fmt` and runs `prep` and the processor; "" for an empty format.
fn to_char_with(
    fmt: &str,
    prep: impl FnOnce(&mut Desc) -> SqlResult<Prepared>,
) -> SqlResult<String> {
    if fmt.is_empty() {
        return Ok(String::new());
    }
    let (nodes, mut desc) = parse_format(fmt)?;
    let p = prep(&mut desc)?;
    process_to_char(&nodes, desc, p.number, p.pre_spaces, p.sign)
}

/// A leading space for a number without a sign (EEEE output).
fn space_signed(s: String) -> Vec<u8> {
    if s.starts_with('-') {
        s.into_bytes()
    } else {
        let mut v = vec![b' '];
        v.extend_from_slice(s.as_bytes());
        v
    }
}

/// Digits of an integer's text, with `post` zeros after a point (int*_to_char).
fn int_digits(text: String, desc: &Desc) -> Prepared {
    let (digits, sign) = split_sign(text);
    let pre_len = digits.len() as i32;
    let mut number = digits;
    if desc.post > 0 {
        number.push(b'.');
        number.extend(std::iter::repeat_n(b'0', desc.post as usize));
    }
    let (number, pre_spaces) = if pre_len < desc.pre {
        (number, desc.pre - pre_len)
    } else if pre_len > desc.pre {
        (hashes(desc.pre, desc.post), 0)
    } else {
        (number, 0)
    };
    Prepared {
        number,
        pre_spaces,
        sign,
    }
}

fn int_out_of_range() -> SqlError {
    SqlError::new("22003", "integer out of range")
}

fn bigint_out_of_range() -> SqlError {
    SqlError::new("22003", "bigint out of range")
}

/// to_char(numeric, text): PostgreSQL's numeric_to_char.
pub fn to_char_numeric(v: &Numeric, fmt: &str) -> SqlResult<String> {
    to_char_with(fmt, |desc| {
        if desc.is(F_ROMAN) {
            return Ok(Prepared::bare(int_to_roman(numeric_to_i32(v)?)));
        }
        if desc.is(F_EEEE) {
            if !v.is_finite() {
                return Ok(Prepared::bare(eeee_hashes(desc.pre, desc.post)));
            }
            return Ok(Prepared::bare(space_signed(numeric_sci(v, desc.post))));
        }
        let mut val = v.clone();
        if desc.is(F_MULTI) {
            let scale = Numeric::parse(&format!("1e{}", desc.multi)).map_err(num_err)?;
            val = val.mul(&scale).map_err(num_err)?;
            desc.pre += desc.multi;
        }
        let (digits, sign) = split_sign(val.round(desc.post).to_string());
        let (number, pre_spaces) = fit_digits(digits, desc.pre, desc.post);
        Ok(Prepared {
            number,
            pre_spaces,
            sign,
        })
    })
}

/// numeric_int4 of round(v, 0), as RN needs it.
fn numeric_to_i32(v: &Numeric) -> SqlResult<i64> {
    if v.is_nan() {
        return Err(SqlError::new("0A000", "cannot convert NaN to integer"));
    }
    if v.is_infinite() {
        return Err(SqlError::new("0A000", "cannot convert infinity to integer"));
    }
    let r = v.round(0);
    if r.int_digits() > 10 {
        return Err(int_out_of_range());
    }
    let n: i64 = r.to_string().parse().map_err(|_| int_out_of_range())?;
    if i32::try_from(n).is_err() {
        return Err(int_out_of_range());
    }
    Ok(n)
}

/// to_char(int4, text) (and int2): PostgreSQL's int4_to_char.
pub fn to_char_i32(v: i32, fmt: &str) -> SqlResult<String> {
    to_char_with(fmt, |desc| {
        if desc.is(F_ROMAN) {
            return Ok(Prepared::bare(int_to_roman(i64::from(v))));
        }
        if desc.is(F_EEEE) {
            return Ok(Prepared::bare(c_exp(f64::from(v), desc.post)));
        }
        let mut val = v;
        if desc.is(F_MULTI) {
            let m = pow10f(desc.multi);
            // C's (int32) cast of an out-of-range double is INT_MIN on x86.
            let m = if m <= f64::from(i32::MAX) {
                m as i32
            } else {
                i32::MIN
            };
            val = val.wrapping_mul(m);
            desc.pre += desc.multi;
        }
        Ok(int_digits(val.to_string(), desc))
    })
}

/// to_char(int8, text): PostgreSQL's int8_to_char.
pub fn to_char_i64(v: i64, fmt: &str) -> SqlResult<String> {
    to_char_with(fmt, |desc| {
        if desc.is(F_ROMAN) {
            let n = i32::try_from(v).map_err(|_| int_out_of_range())?;
            return Ok(Prepared::bare(int_to_roman(i64::from(n))));
        }
        if desc.is(F_EEEE) {
            let s = numeric_sci(&Numeric::from_i64(v), desc.post);
            return Ok(Prepared::bare(space_signed(s)));
        }
        let mut val = v;
        if desc.is(F_MULTI) {
            let m = pow10f(desc.multi);
            // dtoi8: 2^63 and past are out of range.
            if m >= 2f64.powi(63) {
                return Err(bigint_out_of_range());
            }
            val = val.checked_mul(m as i64).ok_or_else(bigint_out_of_range)?;
            desc.pre += desc.multi;
        }
        Ok(int_digits(val.to_string(), desc))
    })
}

/// C's pow(10, n), correctly rounded.
fn pow10f(n: i32) -> f64 {
    format!("1e{n}").parse().unwrap_or(f64::INFINITY)
}

/// C's `%+.*e` through PostgreSQL's snprintf, the `+` swapped for a space.
fn c_exp(v: f64, post: i32) -> Vec<u8> {
    let s = format!("{:.*e}", post.max(0) as usize, v);
    let (mant, exp) = s.split_once('e').unwrap_or((&s, "0"));
    let exp: i32 = exp.parse().unwrap_or(0);
    let mant = if v.is_sign_negative() {
        mant.to_string()
    } else {
        format!(" {mant}")
    };
    let esign = if exp < 0 { '-' } else { '+' };
    format!("{mant}e{esign}{:02}", exp.abs()).into_bytes()
}

/// C's `%.*f` through PostgreSQL's snprintf (NaN, Infinity, -Infinity).
fn c_fixed(v: f64, post: i32) -> String {
    if v.is_nan() {
        "NaN".to_string()
    } else if v.is_infinite() {
        if v < 0.0 { "-Infinity" } else { "Infinity" }.to_string()
    } else {
        format!("{:.*}", post.max(0) as usize, v)
    }
}

/// C's `(int) rint(v)` on x86: INT_MIN when out of range or NaN.
fn c_rint_i32(v: f64) -> i64 {
    let r = v.round_ties_even();
    if r.is_nan() || r < f64::from(i32::MIN) || r > f64::from(i32::MAX) {
        i64::from(i32::MIN)
    } else {
        r as i64
    }
}

/// to_char(float8 | float4, text): PostgreSQL's float8_to_char / float4_to_char.
pub fn to_char_f64(v: f64, fmt: &str, float4: bool) -> SqlResult<String> {
    let v = if float4 { f64::from(v as f32) } else { v };
    to_char_with(fmt, |desc| {
        if desc.is(F_ROMAN) {
            return Ok(Prepared::bare(int_to_roman(c_rint_i32(v))));
        }
        if desc.is(F_EEEE) {
            if !v.is_finite() {
                return Ok(Prepared::bare(eeee_hashes(desc.pre, desc.post)));
            }
            return Ok(Prepared::bare(c_exp(v, desc.post)));
        }
        let mut val = v;
        if desc.is(F_MULTI) {
            let m = pow10f(desc.multi);
            val = if float4 {
                f64::from(v as f32 * m as f32)
            } else {
                v * m
            };
            desc.pre += desc.multi;
        }
        let digits = if float4 { FLT_DIG } else { DBL_DIG };
        let pre_len = c_fixed(val.abs(), 0).len() as i32;
        if pre_len >= digits {
            desc.post = 0;
        } else if pre_len + desc.post > digits {
            desc.post = digits - pre_len;
        }
        let (text, sign) = split_sign(c_fixed(val, desc.post));
        let (number, pre_spaces) = fit_digits(text, desc.pre, desc.post);
        Ok(Prepared {
            number,
            pre_spaces,
            sign,
        })
    })
}

/// NUMProc for to_number: the input being read and the number being built.
struct FromChar<'a> {
    num: Desc,
    input: &'a [u8],
    p: usize,
    /// The sign (`' '`, `-` or `+`) then the digits read.
    number: Vec<u8>,
    read_dec: bool,
    read_post: i32,
    read_pre: i32,
}

impl FromChar<'_> {
    fn over(&self) -> bool {
        self.p >= self.input.len()
    }
    /// AMOUNT_TEST: at least `n` bytes remain.
    fn amount(&self, n: usize) -> bool {
        self.p + n <= self.input.len()
    }
    fn cur(&self) -> u8 {
        self.input.get(self.p).copied().unwrap_or(0)
    }

    /// NUM_numpart_from_char: a sign, digit or decimal point.
    fn numpart(&mut self, kw: Kw) {
        if self.over() {
            return;
        }
        if self.cur() == b' ' {
            self.p += 1;
        }
        if self.over() {
            return;
        }
        let digit_kw = matches!(kw, Kw::Zero | Kw::Nine);
        if self.number[0] == b' ' && digit_kw && self.read_pre + self.read_post == 0 {
            self.read_pre_sign();
        }
        if self.over() {
            return;
        }
        let mut isread = false;
        let c = self.cur();
        if c.is_ascii_digit() {
            if self.read_dec && self.read_post == self.num.post {
                return;
            }
            self.number.push(c);
            if self.read_dec {
                self.read_post += 1;
            } else {
                self.read_pre += 1;
            }
            isread = true;
        } else if self.num.is(F_DECIMAL) && !self.read_dec && self.amount(1) && c == b'.' {
            self.number.push(b'.');
            self.read_dec = true;
            isread = true;
        }
        if self.over() {
            return;
        }
        if self.number[0] == b' ' && self.read_pre + self.read_post > 0 {
            self.read_post_sign(isread);
        }
    }

    fn read_pre_sign(&mut self) {
        let c = self.cur();
        if self.num.is(F_LSIGN) && self.num.lsign == LSIGN_PRE {
            if self.amount(1) && (c == b'-' || c == b'+') {
                self.p += 1;
                self.number[0] = c;
            }
        } else if c == b'-' || (self.num.is(F_BRACKET) && c == b'<') {
            self.number[0] = b'-';
            self.p += 1;
        } else if c == b'+' {
            self.number[0] = b'+';
            self.p += 1;
        }
    }

    fn read_post_sign(&mut self, isread: bool) {
        let lsign = self.num.is(F_LSIGN);
        if lsign
            && isread
            && self.p + 1 < self.input.len()
            && !self.input[self.p + 1].is_ascii_digit()
        {
            let tmp = self.p;
            self.p += 1;
            let c = self.cur();
            if self.amount(1) && (c == b'-' || c == b'+') {
                self.number[0] = c;
            } else {
                self.p = tmp;
            }
        } else if !isread && !lsign && (self.num.is(F_PLUS) || self.num.is(F_MINUS)) {
            let c = self.cur();
            if c == b'-' || c == b'+' {
                self.number[0] = c;
            }
        }
    }

    /// NUM_eat_non_data_chars: skips up to `n` characters that are no data.
    fn eat(&mut self, n: usize) {
        for _ in 0..n {
            if self.over() || b"0123456789.,+-".contains(&self.cur()) {
                break;
            }
            self.p += mblen(self.cur());
        }
    }

    /// One node; true when the input position then advances by one.
    fn node(&mut self, n: &Node) -> bool {
        let kw = match n {
            Node::Char(_) => {
                self.p += mblen(self.cur());
                return false;
            }
            Node::Key(kw) => *kw,
        };
        let c = self.cur();
        let fill = self.num.is(F_FILLMODE);
        match kw {
            Kw::Nine | Kw::Zero | Kw::Dec | Kw::D => {
                self.numpart(kw);
                true
            }
            Kw::Comma | Kw::G => !fill && c == b',' && self.amount(1),
            Kw::L => {
                self.eat(1);
                false
            }
            Kw::Th | Kw::ThLower => {
                if !self.num.is(F_DECIMAL) {
                    self.eat(2);
                }
                false
            }
            Kw::Mi | Kw::Pl | Kw::Sg => {
                let hit = match kw {
                    Kw::Mi => c == b'-',
                    Kw::Pl => c == b'+',
                    _ => c == b'-' || c == b'+',
                };
                if hit {
                    self.number[0] = c;
                } else {
                    self.eat(1);
                }
                hit
            }
            _ => false,
        }
    }
}

/// NUM_processor for to_number: the text numeric_in gets, and the digits read
/// after the point (numfmt rule 4).
fn process_from_char(nodes: &[Node], num: &Desc, input: &str) -> SqlResult<(String, i32)> {
    if num.is(F_EEEE) {
        return Err(SqlError::new("0A000", "\"EEEE\" not supported for input"));
    }
    if num.is(F_ROMAN) {
        return Err(SqlError::new("0A000", "\"RN\" not supported for input"));
    }
    let mut st = FromChar {
        num: *num,
        input: input.as_bytes(),
        p: 0,
        number: vec![b' '],
        read_dec: false,
        read_post: 0,
        read_pre: 0,
    };
    for n in nodes {
        if st.over() {
            break;
        }
        if st.node(n) {
            st.p += 1;
        }
    }
    if st.number.len() > 1 && st.number.last() == Some(&b'.') {
        st.number.pop();
    }
    Ok((
        String::from_utf8_lossy(&st.number).into_owned(),
        st.read_post,
    ))
}

/// to_number(text, text): PostgreSQL's numeric_to_number; `None` (SQL NULL) for
/// an empty format.
pub fn to_number_opt(text: &str, fmt: &str) -> SqlResult<Option<Numeric>> {
    if fmt.is_empty() {
        return Ok(None);
    }
    let (nodes, desc) = parse_format(fmt)?;
    let (numstr, scale) = process_from_char(&nodes, &desc, text)?;
    let precision = desc.pre + desc.multi + scale;
    let value = Numeric::parse(&numstr).map_err(|e| match e {
        strata_types::NumError::Syntax => SqlError::new(
            "22P02",
            format!("invalid input syntax for type numeric: \"{numstr}\""),
        ),
        e => num_err(e),
    })?;
    let mut value = value
        .fit(precision, scale)
        .map_err(|detail| SqlError::new("22003", "numeric field overflow").with_detail(detail))?;
    if desc.is(F_MULTI) {
        let ten = Numeric::from_i64(10);
        let x = strata_types::numeric::power(&ten, &Numeric::from_i64(-i64::from(desc.multi)))
            .map_err(num_err)?;
        value = value.mul(&x).map_err(num_err)?;
    }
    Ok(Some(value))
}

/// to_number(text, text) for a non-empty format (an empty one is SQL NULL: see
/// [`to_number_opt`]; here it is 22023).
pub fn to_number(text: &str, fmt: &str) -> SqlResult<Numeric> {
    to_number_opt(text, fmt)?
        .ok_or_else(|| SqlError::new("22023", "to_number with an empty format is NULL"))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// One call as SQL makes it: `kind` is n (numeric), i4, i8, f8, f4 (to_char)
    /// or tn (to_number); an error prints as "ERROR <sqlstate> <message>".
    fn run(kind: &str, v: &str, f: &str) -> String {
        let r = match kind {
            "n" => to_char_numeric(&Numeric::parse(v).unwrap(), f),
            "i4" => to_char_i32(v.parse().unwrap(), f),
            "i8" => to_char_i64(v.parse().unwrap(), f),
            "f8" | "f4" => {
                let x: f64 = match v {
                    "nan" => f64::NAN,
                    "inf" => f64::INFINITY,
                    "-inf" => f64::NEG_INFINITY,
                    _ => v.parse().unwrap(),
                };
                to_char_f64(x, f, kind == "f4")
            }
            _ => to_number_opt(v, f).map(|o| o.map_or("<NULL>".into(), |n| n.to_string())),
        };
        match r {
            Ok(s) => s,
            Err(e) => format!("ERROR {} {}", e.code, e.message),
        }
    }

    /// (kind, value, format, PostgreSQL 15's output), pasted from psql: the
    /// to_char / to_number calls of PostgreSQL's numeric.sql and more.
    const CASES: &[(&str, &str, &str, &str)] = &[
        (
            "n",
            "-34338492.2153970470",
            "9G999G999G999G999G999",
            "           -34,338,492",
        ),
        (
            "n",
            "4.3100000000",
            "9G999G999G999G999G999",
            "                     4",
        ),
        (
            "n",
            "93901.5776302600",
            "9G999G999G999G999G999",
            "                93,902",
        ),
        (
            "n",
            "-34338492.2153970470",
            "9G999G999G999G999G999D999G999G999G999G999",
            "           -34,338,492.215,397,047,000,000",
        ),
        (
            "n",
            "4.3100000000",
            "9G999G999G999G999G999D999G999G999G999G999",
            "                     4.310,000,000,000,000",
        ),
        (
            "n",
            "93901.5776302600",
            "9G999G999G999G999G999D999G999G999G999G999",
            "                93,901.577,630,260,000,000",
        ),
        (
            "n",
            "-34338492.2153970470",
            "9999999999999999.999999999999999PR",
            "        <34338492.215397047000000>",
        ),
        (
            "n",
            "4.3100000000",
            "9999999999999999.999999999999999PR",
            "                4.310000000000000 ",
        ),
        (
            "n",
            "93901.5776302600",
            "9999999999999999.999999999999999PR",
            "            93901.577630260000000 ",
        ),
        (
            "n",
            "-34338492.2153970470",
            "9999999999999999.999999999999999S",
            "        34338492.215397047000000-",
        ),
        (
            "n",
            "4.3100000000",
            "9999999999999999.999999999999999S",
            "               4.310000000000000+",
        ),
        (
            "n",
            "93901.5776302600",
            "9999999999999999.999999999999999S",
            "           93901.577630260000000+",
        ),
        (
            "n",
            "-34338492.2153970470",
            "MI9999999999999999.999999999999999",
            "-        34338492.215397047000000",
        ),
        (
            "n",
            "4.3100000000",
            "MI9999999999999999.999999999999999",
            "                4.310000000000000",
        ),
        (
            "n",
            "93901.5776302600",
            "MI9999999999999999.999999999999999",
            "            93901.577630260000000",
        ),
        (
            "n",
            "-34338492.2153970470",
            "FMS9999999999999999.999999999999999",
            "-34338492.215397047",
        ),
        (
            "n",
            "4.3100000000",
            "FMS9999999999999999.999999999999999",
            "+4.31",
        ),
        (
            "n",
            "93901.5776302600",
            "FMS9999999999999999.999999999999999",
            "+93901.57763026",
        ),
        (
            "n",
            "-34338492.2153970470",
            "FM9999999999999999.999999999999999THPR",
            "<34338492.215397047>",
        ),
        (
            "n",
            "4.3100000000",
            "FM9999999999999999.999999999999999THPR",
            "4.31",
        ),
        (
            "n",
            "93901.5776302600",
            "FM9999999999999999.999999999999999THPR",
            "93901.57763026",
        ),
        (
            "n",
            "-34338492.2153970470",
            "SG9999999999999999.999999999999999th",
            "-        34338492.215397047000000",
        ),
        (
            "n",
            "4.3100000000",
            "SG9999999999999999.999999999999999th",
            "+               4.310000000000000",
        ),
        (
            "n",
            "93901.5776302600",
            "SG9999999999999999.999999999999999th",
            "+           93901.577630260000000",
        ),
        (
            "n",
            "-34338492.2153970470",
            "0999999999999999.999999999999999",
            "-0000000034338492.215397047000000",
        ),
        (
            "n",
            "4.3100000000",
            "0999999999999999.999999999999999",
            " 0000000000000004.310000000000000",
        ),
        (
            "n",
            "93901.5776302600",
            "0999999999999999.999999999999999",
            " 0000000000093901.577630260000000",
        ),
        (
            "n",
            "-34338492.2153970470",
            "S0999999999999999.999999999999999",
            "-0000000034338492.215397047000000",
        ),
        (
            "n",
            "4.3100000000",
            "S0999999999999999.999999999999999",
            "+0000000000000004.310000000000000",
        ),
        (
            "n",
            "93901.5776302600",
            "S0999999999999999.999999999999999",
            "+0000000000093901.577630260000000",
        ),
        (
            "n",
            "-34338492.2153970470",
            "FM0999999999999999.999999999999999",
            "-0000000034338492.215397047",
        ),
        (
            "n",
            "4.3100000000",
            "FM0999999999999999.999999999999999",
            "0000000000000004.31",
        ),
        (
            "n",
            "93901.5776302600",
            "FM0999999999999999.999999999999999",
            "0000000000093901.57763026",
        ),
        (
            "n",
            "-34338492.2153970470",
            "FM9999999999999999.099999999999999",
            "-34338492.215397047",
        ),
        (
            "n",
            "4.3100000000",
            "FM9999999999999999.099999999999999",
            "4.31",
        ),
        (
            "n",
            "93901.5776302600",
            "FM9999999999999999.099999999999999",
            "93901.57763026",
        ),
        (
            "n",
            "-34338492.2153970470",
            "FM9999999999990999.990999999999999",
            "-34338492.215397047",
        ),
        (
            "n",
            "4.3100000000",
            "FM9999999999990999.990999999999999",
            "0004.310",
        ),
        (
            "n",
            "93901.5776302600",
            "FM9999999999990999.990999999999999",
            "93901.57763026",
        ),
        (
            "n",
            "-34338492.2153970470",
            "FM0999999999999999.999909999999999",
            "-0000000034338492.215397047",
        ),
        (
            "n",
            "4.3100000000",
            "FM0999999999999999.999909999999999",
            "0000000000000004.31000",
        ),
        (
            "n",
            "93901.5776302600",
            "FM0999999999999999.999909999999999",
            "0000000000093901.57763026",
        ),
        (
            "n",
            "-34338492.2153970470",
            "FM9999999990999999.099999999999999",
            "-34338492.215397047",
        ),
        (
            "n",
            "4.3100000000",
            "FM9999999990999999.099999999999999",
            "0000004.31",
        ),
        (
            "n",
            "93901.5776302600",
            "FM9999999990999999.099999999999999",
            "0093901.57763026",
        ),
        (
            "n",
            "-34338492.2153970470",
            "L9999999999999999.099999999999999",
            "         -34338492.215397047000000",
        ),
        (
            "n",
            "4.3100000000",
            "L9999999999999999.099999999999999",
            "                 4.310000000000000",
        ),
        (
            "n",
            "93901.5776302600",
            "L9999999999999999.099999999999999",
            "             93901.577630260000000",
        ),
        (
            "n",
            "-34338492.2153970470",
            "FM9999999999999999.99999999999999",
            "-34338492.215397047",
        ),
        (
            "n",
            "4.3100000000",
            "FM9999999999999999.99999999999999",
            "4.31",
        ),
        (
            "n",
            "93901.5776302600",
            "FM9999999999999999.99999999999999",
            "93901.57763026",
        ),
        (
            "n",
            "-34338492.2153970470",
            "S 9 9 9 9 9 9 9 9 9 9 9 9 9 9 9 9 . 9 9 9 9 9 9 9 9 9 9 9 9 9 9 9 9 9",
            "                 -3 4 3 3 8 4 9 2 . 2 1 5 3 9 7 0 4 7 0 0 0 0 0 0 0 0",
        ),
        (
            "n",
            "4.3100000000",
            "S 9 9 9 9 9 9 9 9 9 9 9 9 9 9 9 9 . 9 9 9 9 9 9 9 9 9 9 9 9 9 9 9 9 9",
            "                               +4 . 3 1 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0",
        ),
        (
            "n",
            "93901.5776302600",
            "S 9 9 9 9 9 9 9 9 9 9 9 9 9 9 9 9 . 9 9 9 9 9 9 9 9 9 9 9 9 9 9 9 9 9",
            "                       +9 3 9 0 1 . 5 7 7 6 3 0 2 6 0 0 0 0 0 0 0 0 0",
        ),
        (
            "n",
            "-34338492.2153970470",
            "FMS 9 9 9 9 9 9 9 9 9 9 9 9 9 9 9 9 . 9 9 9 9 9 9 9 9 9 9 9 9 9 9 9 9 9",
            "         -3 4 3 3 8 4 9 2 . 2 1 5 3 9 7 0 4 7        ",
        ),
        (
            "n",
            "4.3100000000",
            "FMS 9 9 9 9 9 9 9 9 9 9 9 9 9 9 9 9 . 9 9 9 9 9 9 9 9 9 9 9 9 9 9 9 9 9",
            "                +4 . 3 1               ",
        ),
        (
            "n",
            "93901.5776302600",
            "FMS 9 9 9 9 9 9 9 9 9 9 9 9 9 9 9 9 . 9 9 9 9 9 9 9 9 9 9 9 9 9 9 9 9 9",
            "            +9 3 9 0 1 . 5 7 7 6 3 0 2 6         ",
        ),
        (
            "n",
            "-34338492.2153970470",
            "99999 \"text\" 9999 \"9999\" 999 \"\\\"text between quote marks\\\"\" 9999",
            "      text    -3 9999 433 \"text between quote marks\" 8492",
        ),
        (
            "n",
            "4.3100000000",
            "99999 \"text\" 9999 \"9999\" 999 \"\\\"text between quote marks\\\"\" 9999",
            "      text      9999     \"text between quote marks\"     4",
        ),
        (
            "n",
            "93901.5776302600",
            "99999 \"text\" 9999 \"9999\" 999 \"\\\"text between quote marks\\\"\" 9999",
            "      text      9999    9 \"text between quote marks\" 3902",
        ),
        (
            "n",
            "-34338492.2153970470",
            "999999SG9999999999",
            "      -  34338492",
        ),
        (
            "n",
            "4.3100000000",
            "999999SG9999999999",
            "      +         4",
        ),
        (
            "n",
            "93901.5776302600",
            "999999SG9999999999",
            "      +     93902",
        ),
        (
            "n",
            "-34338492.2153970470",
            "FM9999999999999999.999999999999999",
            "-34338492.215397047",
        ),
        (
            "n",
            "4.3100000000",
            "FM9999999999999999.999999999999999",
            "4.31",
        ),
        (
            "n",
            "93901.5776302600",
            "FM9999999999999999.999999999999999",
            "93901.57763026",
        ),
        ("n", "-34338492.2153970470", "9.999EEEE", "-3.434e+07"),
        ("n", "4.3100000000", "9.999EEEE", " 4.310e+00"),
        ("n", "93901.5776302600", "9.999EEEE", " 9.390e+04"),
        ("n", "0", "9.999EEEE", " 0.000e+00"),
        ("f8", "0", "9.999EEEE", " 0.000e+00"),
        ("f4", "0", "9.999EEEE", " 0.000e+00"),
        ("n", "-4.2", "9.999EEEE", "-4.200e+00"),
        ("f8", "-4.2", "9.999EEEE", "-4.200e+00"),
        ("f4", "-4.2", "9.999EEEE", "-4.200e+00"),
        ("n", "4.2e9", "9.999EEEE", " 4.200e+09"),
        ("f8", "4.2e9", "9.999EEEE", " 4.200e+09"),
        ("f4", "4.2e9", "9.999EEEE", " 4.200e+09"),
        ("n", "1.2e-5", "9.999EEEE", " 1.200e-05"),
        ("f8", "1.2e-5", "9.999EEEE", " 1.200e-05"),
        ("f4", "1.2e-5", "9.999EEEE", " 1.200e-05"),
        ("n", "inf", "9.999EEEE", " #.#######"),
        ("f8", "inf", "9.999EEEE", " #.#######"),
        ("f4", "inf", "9.999EEEE", " #.#######"),
        ("n", "-inf", "9.999EEEE", " #.#######"),
        ("f8", "-inf", "9.999EEEE", " #.#######"),
        ("f4", "-inf", "9.999EEEE", " #.#######"),
        ("n", "nan", "9.999EEEE", " #.#######"),
        ("f8", "nan", "9.999EEEE", " #.#######"),
        ("f4", "nan", "9.999EEEE", " #.#######"),
        ("n", "0", "MI9999999999.99", "           .00"),
        ("f8", "0", "MI9999999999.99", "           .00"),
        ("f4", "0", "MI9999999999.99", "           .00"),
        ("n", "-4.2", "MI9999999999.99", "-         4.20"),
        ("f8", "-4.2", "MI9999999999.99", "-         4.20"),
        ("f4", "-4.2", "MI9999999999.99", "-         4.20"),
        ("n", "4.2e9", "MI9999999999.99", " 4200000000.00"),
        ("f8", "4.2e9", "MI9999999999.99", " 4200000000.00"),
        ("f4", "4.2e9", "MI9999999999.99", " 4200000000"),
        ("n", "1.2e-5", "MI9999999999.99", "           .00"),
        ("f8", "1.2e-5", "MI9999999999.99", "           .00"),
        ("f4", "1.2e-5", "MI9999999999.99", "           .00"),
        ("n", "inf", "MI9999999999.99", "   Infinity"),
        ("f8", "inf", "MI9999999999.99", "   Infinity"),
        ("f4", "inf", "MI9999999999.99", "   Infinity"),
        ("n", "-inf", "MI9999999999.99", "-  Infinity"),
        ("f8", "-inf", "MI9999999999.99", "-  Infinity"),
        ("f4", "-inf", "MI9999999999.99", "-  Infinity"),
        ("n", "nan", "MI9999999999.99", "        NaN"),
        ("f8", "nan", "MI9999999999.99", "        NaN"),
        ("f4", "nan", "MI9999999999.99", "        NaN"),
        ("n", "0", "MI99.99", "   .00"),
        ("f8", "0", "MI99.99", "   .00"),
        ("f4", "0", "MI99.99", "   .00"),
        ("n", "-4.2", "MI99.99", "- 4.20"),
        ("f8", "-4.2", "MI99.99", "- 4.20"),
        ("f4", "-4.2", "MI99.99", "- 4.20"),
        ("n", "4.2e9", "MI99.99", " ##.##"),
        ("f8", "4.2e9", "MI99.99", " ##.##"),
        ("f4", "4.2e9", "MI99.99", " ##."),
        ("n", "1.2e-5", "MI99.99", "   .00"),
        ("f8", "1.2e-5", "MI99.99", "   .00"),
        ("f4", "1.2e-5", "MI99.99", "   .00"),
        ("n", "inf", "MI99.99", " ##.##"),
        ("f8", "inf", "MI99.99", " ##.##"),
        ("f4", "inf", "MI99.99", " ##."),
        ("n", "-inf", "MI99.99", "-##.##"),
        ("f8", "-inf", "MI99.99", "-##.##"),
        ("f4", "-inf", "MI99.99", "-##."),
        ("n", "nan", "MI99.99", " ##.##"),
        ("f8", "nan", "MI99.99", " ##.##"),
        ("f4", "nan", "MI99.99", " ##.##"),
        ("n", "1.2345e-16379", "9.999EEEE", " 1.235e-16379"),
        ("n", "1.2345e-16378", "9.999EEEE", " 1.235e-16378"),
        ("n", "1.2345e-1234", "9.999EEEE", " 1.235e-1234"),
        ("n", "1.2345e-789", "9.999EEEE", " 1.235e-789"),
        ("n", "1.2345e-45", "9.999EEEE", " 1.235e-45"),
        ("n", "1.2345e-5", "9.999EEEE", " 1.235e-05"),
        ("n", "1.2345e-4", "9.999EEEE", " 1.235e-04"),
        ("n", "1.2345e-3", "9.999EEEE", " 1.235e-03"),
        ("n", "1.2345e-2", "9.999EEEE", " 1.235e-02"),
        ("n", "1.2345e-1", "9.999EEEE", " 1.235e-01"),
        ("n", "1.2345e0", "9.999EEEE", " 1.235e+00"),
        ("n", "1.2345e1", "9.999EEEE", " 1.235e+01"),
        ("n", "1.2345e2", "9.999EEEE", " 1.235e+02"),
        ("n", "1.2345e3", "9.999EEEE", " 1.235e+03"),
        ("n", "1.2345e4", "9.999EEEE", " 1.235e+04"),
        ("n", "1.2345e5", "9.999EEEE", " 1.235e+05"),
        ("n", "1.2345e38", "9.999EEEE", " 1.235e+38"),
        ("n", "1.2345e275", "9.999EEEE", " 1.235e+275"),
        ("n", "1.2345e2345", "9.999EEEE", " 1.235e+2345"),
        ("n", "1.2345e45678", "9.999EEEE", " 1.235e+45678"),
        ("n", "1.2345e131070", "9.999EEEE", " 1.235e+131070"),
        ("n", "1.2345e131071", "9.999EEEE", " 1.235e+131071"),
        ("n", "100", "FM999.9", "100."),
        ("n", "100", "FM999.", "100"),
        ("n", "100", "FM999", "100"),
        (
            "f8",
            "12345678901",
            "FM9999999999D9999900000000000000000",
            "##########.####",
        ),
        ("n", "100", "foo999", "foo 100"),
        ("n", "100", "f\\oo999", "f\\oo 100"),
        ("n", "100", "f\\\\oo999", "f\\\\oo 100"),
        ("n", "100", "f\\\"oo999", "f\"oo 100"),
        ("n", "100", "f\\\\\"oo999", "f\\\"oo 100"),
        ("n", "100", "f\"ool\"999", "fool 100"),
        ("n", "100", "f\"\\ool\"999", "fool 100"),
        ("n", "100", "f\"\\\\ool\"999", "f\\ool 100"),
        ("n", "100", "f\"ool\\\"999", "fool\"999"),
        ("n", "100", "f\"ool\\\\\"999", "fool\\ 100"),
        ("tn", "-34,338,492", "99G999G999", "-34338492"),
        (
            "tn",
            "-34,338,492.654,878",
            "99G999G999D999G999",
            "-34338492.654878",
        ),
        ("tn", "<564646.654564>", "999999.999999PR", "-564646.654564"),
        ("tn", "0.00001-", "9.999999S", "-0.00001"),
        ("tn", "5.01-", "FM9.999999S", "-5.01"),
        ("tn", "5.01-", "FM9.999999MI", "-5.01"),
        ("tn", "5 4 4 4 4 8 . 7 8", "9 9 9 9 9 9 . 9 9", "544448.78"),
        ("tn", ".01", "FM9.99", "0.01"),
        ("tn", ".0", "99999999.99999999", "0.0"),
        ("tn", "0", "99.99", "0"),
        ("tn", ".-01", "S99.99", "-0.01"),
        ("tn", ".01-", "99.99S", "-0.01"),
        ("tn", " . 0 1-", " 9 9 . 9 9 S", "-0.01"),
        ("tn", "34,50", "999,99", "3450"),
        ("tn", "123,000", "999G", "123"),
        ("tn", "123456", "999G999", "123456"),
        ("tn", "$1234.56", "L9,999.99", "1234.56"),
        ("tn", "$1234.56", "L99,999.99", "1234.56"),
        ("tn", "$1,234.56", "L99,999.99", "1234.56"),
        ("tn", "1234.56", "L99,999.99", "1234.56"),
        ("tn", "1,234.56", "L99,999.99", "1234.56"),
        ("tn", "42nd", "99th", "42"),
        ("i8", "4000", "rn", "###############"),
        ("i8", "999", "0.9", " #.#"),
        ("f8", "99.995", "999MI", "100 "),
        ("f8", "1.25", "MI9.99", " 1.25"),
        ("f4", "123456789.123", "FM9.99S", "#.+"),
        ("i8", "22", "é999", "é  22"),
        ("f4", "3999.4", "0.00", " #.##"),
        ("f4", "-12.345", "99", "-12"),
        ("i4", "4", "FM9.99S", "4.+"),
        ("i4", "4000", "9.99EEEE", " 4.00e+03"),
        ("i8", "111", "FM0.9", "#.#"),
        ("n", "0.0", "rn", "###############"),
        ("n", "inf", "99V99", " ####"),
        ("i8", "111", "FM9.99S", "#.##+"),
        ("n", "0.0", "0.9", " 0.0"),
        ("i4", "3", "FM0.9", "3."),
        ("i8", "2", "SP999", "   2"),
        ("i8", "101", "99D99", " ##.##"),
        ("i8", "1000", "SG999", "+###"),
        ("f8", "12.345", "RN", "            XII"),
        ("f8", "-0.5", "SG999", "-  0"),
        ("f8", "0", "999.", "   0"),
        ("i8", "111", "FM9.9PR", "#.#"),
        ("n", "99.995", "999", " 100"),
        ("f4", "-1.25", "0.00", "-1.25"),
        ("f4", "0.001", "999SG", "  0+"),
        ("f4", "1e20", "9,999", " #,###"),
        ("i4", "12", "\"x\"999\"y\"", "x  12y"),
        ("i4", "0", "0000", " 0000"),
        ("f4", "-0.0", "0.0EEEE", "-0.0e+00"),
        ("f8", "-12.345", "FM9.99S", "#.##-"),
        ("n", "1e20", "FM9.9PR", "#.#"),
        ("i8", "-12", "99th", "-12"),
        ("n", "3999", "99D99", " ##.##"),
        ("f4", "1.5", "\\999", "\\   2"),
        ("f4", "3999.4", "FMSG999", "+###"),
        ("i8", "4", "PL999", "+   4"),
        ("n", "123", "MI9.99", " #.##"),
        ("i4", "4", "FM0.00", "4.00"),
        ("f4", "nan", "0000", " 0NaN"),
        ("i8", "1000", "PL999", "+ ###"),
        ("f4", "99.995", "9,9.9,9", " #,#.#,#"),
        ("i8", "2147483647", "999th", " ###"),
        ("i8", "101", "9.99EEEE", " 1.01e+02"),
        ("f4", "-12.345", "RN9", "###############"),
        ("i8", "4", "\"x\"999\"y\"", "x   4y"),
        ("f4", "-0.5", "9TH", "-0"),
        ("i8", "-12", "999D", " -12"),
        ("f4", "nan", "9.9PR", " #.# "),
        ("i8", "112", "\\999", "\\ 112"),
        ("n", "-123", "SG0.00", "-#.##"),
        ("n", "0.05", ".00", " .##"),
        ("f8", "0.1", "é999", "é   0"),
        ("f8", "1.5", "9G9G9", "     2"),
        ("f4", "1.5", "é999", "é   2"),
        ("f8", "1e20", "RN", "###############"),
        ("n", "-inf", "S0.00", "-#.##"),
        ("f4", "inf", "9999", " ####"),
        ("i8", "22", "9EEEE", " 2e+01"),
        ("i4", "2", "999PR", "   2 "),
        ("f8", "12.345", "000.000", " 012.345"),
        ("n", "99.5", "0.9", " #.#"),
        ("n", "inf", "\\999", "\\ ###"),
        ("f4", "-12.345", "9999RN", "###############"),
        ("n", "99.5", "S999", "+100"),
        ("f8", "1e20", "999TH", " ###"),
        ("i8", "22", "\\999", "\\  22"),
        ("f8", "0", "0.0EEEE", " 0.0e+00"),
        ("n", "123", "B999", " 123"),
        ("f8", "-0.0", "MI999", "-  0"),
        ("i8", "2147483647", "0.00", " #.##"),
        ("n", "12.345", "C999", "  12"),
        ("i4", "1", "C999", "   1"),
        ("n", "1234.5678", "FM99.00", "##.##"),
        ("n", "-inf", "FMS9.99", "-#.##"),
        ("n", "-0.001", ".99", " .##"),
        ("i4", "1", "FM9G9G9", "1"),
        ("i4", "12345", "SG999", "+###"),
        ("f4", "-1.25", "999", "  -1"),
        ("i4", "12", "FM99999", "12"),
        ("i8", "-123", "99th", "-##"),
        ("f4", "nan", "FM9G9G9", "N,a,N"),
        ("i4", "0", "MI999", "   0"),
        ("n", "-1.25", "9G999", "    -1"),
        ("n", "3999", "9G999", " 3,999"),
        ("f8", "-12.345", "FMMI99", "-12"),
        ("tn", "12.34", "99.99", "12.34"),
        ("i8", "22", "FM000.000", "022.000"),
        ("i4", "112", "FM0.9", "#.#"),
        ("i8", "4", "9EEEE", " 4e+00"),
        (
            "n",
            "inf",
            "9999RN",
            "ERROR 0A000 cannot convert infinity to integer",
        ),
        ("i4", "4", "TH", "ERROR 22P02 \".\" is not a number"),
        ("n", "1e20", "RN", "ERROR 22003 integer out of range"),
        ("i8", "112", "TH", "ERROR 22P02 \".\" is not a number"),
        ("f8", "nan", "999TH", "ERROR 22P02 \"NaN\" is not a number"),
        (
            "n",
            "inf",
            "FMRN",
            "ERROR 0A000 cannot convert infinity to integer",
        ),
        (
            "n",
            "inf",
            "RN9",
            "ERROR 0A000 cannot convert infinity to integer",
        ),
        (
            "tn",
            "",
            "999",
            "ERROR 22P02 invalid input syntax for type numeric: \" \"",
        ),
        (
            "f4",
            "nan",
            "FM999TH",
            "ERROR 22P02 \"NaN\" is not a number",
        ),
        ("n", "100", "TH", "ERROR 22P02 \".\" is not a number"),
        ("f8", "99.995", "TH", "ERROR 22P02 \".\" is not a number"),
        ("i4", "101", "TH", "ERROR 22P02 \".\" is not a number"),
        ("i8", "13", "TH", "ERROR 22P02 \".\" is not a number"),
        ("n", "123", "TH", "ERROR 22P02 \".\" is not a number"),
        (
            "n",
            "nan",
            "RN",
            "ERROR 0A000 cannot convert NaN to integer",
        ),
    ];

    #[test]
    fn matches_postgres() {
        let mut bad = Vec::new();
        for &(kind, v, f, want) in CASES {
            let got = run(kind, v, f);
            if got != want {
                bad.push(format!("{kind} {v:?} {f:?}: want {want:?}, got {got:?}"));
            }
        }
        assert!(bad.is_empty(), "{}", bad.join("\n"));
    }

    #[test]
    fn error_details() {
        let e = to_number("1234", "9.9").unwrap_err();
        assert_eq!(
            (e.code, e.message.as_str()),
            ("22003", "numeric field overflow")
        );
        assert_eq!(
            e.detail.as_deref(),
            Some(
                "A field with precision 1, scale 0 must round to an absolute value less than 10^1."
            )
        );
        let e = to_char_numeric(&Numeric::from_i64(1), "FM9EEEE").unwrap_err();
        assert_eq!(e.code, "42601");
        assert_eq!(
            e.detail.as_deref(),
            Some("\"EEEE\" may only be used together with digit and decimal point patterns.")
        );
    }

    #[test]
    fn empty_formats() {
        assert_eq!(to_char_numeric(&Numeric::from_i64(1), "").unwrap(), "");
        assert_eq!(to_char_i64(1, "").unwrap(), "");
        assert!(to_number_opt("1", "").unwrap().is_none());
        assert_eq!(run("tn", "12345", "999V99"), "123.4500000000000000");
        assert_eq!(
            run("i8", "1", "9V9999999999999999999"),
            "ERROR 22003 bigint out of range"
        );
        assert_eq!(run("i4", "12", "9V9999999999"), "           0");
        assert_eq!(run("n", "1e400", "9V9"), " ##");
    }
}
