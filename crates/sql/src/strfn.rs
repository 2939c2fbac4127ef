//! PostgreSQL's string functions: split_part, strpos, replace, translate, btrim /
//! ltrim / rtrim, lpad / rpad, left, right, reverse, initcap, chr, ascii,
//! starts_with, md5, sha224 / sha256 / sha384 / sha512, encode / decode, to_hex,
//! quote_ident / quote_literal / quote_nullable, concat / concat_ws, format,
//! octet_length, bit_length, character_length and the regular-expression
//! functions regexp_replace, regexp_like, regexp_count, regexp_instr and
//! regexp_substr.
//!
//! Rules (cited as "strfn rule N"):
//! 1. Arguments are text (an untyped literal becomes text), save where PostgreSQL's
//!    parameter is `"any"` (concat, concat_ws, format's values, quote_literal and
//!    quote_nullable of a non-text value): there the signature's parameter is
//!    [`SqlType::Unknown`], which the binder takes as any type, and the value is
//!    printed as PostgreSQL's output function would ([`crate::TextOut`]).
//! 2. Functions are strict (NULL for a NULL argument) except concat, concat_ws,
//!    format and quote_nullable, which see their NULLs ([`StrFn::strict`]).
//! 3. Results and errors are PostgreSQL 15's, with its SQLSTATEs and messages.
//! 4. Regular expressions are PostgreSQL's written for the `regex` crate
//!    ([`regex_of`]): flags i, c, n, m, s, p, w, x, q, t and g as PostgreSQL's (with
//!    n or p a negated bracket also excludes the newline); the escapes \y \Y \m \M
//!    \Z translated. A pattern with backreferences (`(.)\1`), which the `regex`
//!    crate lacks, goes to fancy-regex. Differences left: alternation and
//!    quantifiers are leftmost-first (Perl's) where PostgreSQL's are
//!    leftmost-longest (`a|ab` on `abcd` matches `a`, PostgreSQL's `ab`); basic
//!    regular expressions (flag b) are refused; a pattern refused is 2201B with the
//!    crate's message, not PostgreSQL's.

use crate::bind::Func;
use crate::{Datum, SqlError, SqlResult, SqlType, TextOut};

/// A string function (see the module's rules); evaluated by [`eval`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum StrFn {
    SplitPart,
    Strpos,
    Replace,
    Translate,
    Btrim,
    Ltrim,
    Rtrim,
    Lpad,
    Rpad,
    Left,
    Right,
    Reverse,
    Initcap,
    Chr,
    Ascii,
    StartsWith,
    Md5,
    Sha224,
    Sha256,
    Sha384,
    Sha512,
    Encode,
    Decode,
    ToHex,
    QuoteIdent,
    QuoteLiteral,
    QuoteNullable,
    Concat,
    ConcatWs,
    Format,
    OctetLength,
    BitLength,
    CharLength,
    RegexpReplace,
    RegexpLike,
    RegexpCount,
    RegexpInstr,
    RegexpSubstr,
    Overlay,
    Unistr,
}

impl StrFn {
    /// Rule 2: false for the functions that see NULL arguments.
    pub fn strict(self) -> bool {
        !matches!(
            self,
            StrFn::QuoteNullable | StrFn::Concat | StrFn::ConcatWs | StrFn::Format
        )
    }

    /// The function's name in SQL.
    pub fn name(self) -> &'static str {
        let names = [
            "split_part",
            "strpos",
            "replace",
            "translate",
            "btrim",
            "ltrim",
            "rtrim",
            "lpad",
            "rpad",
            "left",
            "right",
            "reverse",
            "initcap",
            "chr",
            "ascii",
            "starts_with",
            "md5",
            "sha224",
            "sha256",
            "sha384",
            "sha512",
            "encode",
            "decode",
            "to_hex",
            "quote_ident",
            "quote_literal",
            "quote_nullable",
            "concat",
            "concat_ws",
            "format",
            "octet_length",
            "bit_length",
            "character_length",
            "regexp_replace",
            "regexp_like",
            "regexp_count",
            "regexp_instr",
            "regexp_substr",
            "overlay",
            "unistr",
        ];
        names[self as usize]
    }

    /// PostgreSQL's immutable ones: not those of `"any"` arguments, whose text
    /// may depend on the session's settings (fold rule 1).
    pub fn immutable(self) -> bool {
        !matches!(
            self,
            StrFn::QuoteLiteral
                | StrFn::QuoteNullable
                | StrFn::Concat
                | StrFn::ConcatWs
                | StrFn::Format
        )
    }
}

type Sig = (Func, &'static [SqlType], SqlType);

const T: SqlType = SqlType::Text;
const B: SqlType = SqlType::Bytea;
const I4: SqlType = SqlType::Int4;
const I8: SqlType = SqlType::Int8;
/// Rule 1: a parameter of any type.
const ANY: SqlType = SqlType::Unknown;
const ANYS: [SqlType; 101] = [ANY; 101];
const TEXT_ANYS: [SqlType; 101] = {
    let mut a = [ANY; 101];
    a[0] = T;
    a
};

/// The function `name` for arguments of types `args`, or `None` if `name` is
/// none of these.
pub fn signature(name: &str, args: &[SqlType]) -> Option<Sig> {
    let s = |f: StrFn, ps: &'static [SqlType], ret: SqlType| Some((Func::Str(f, ret), ps, ret));
    let n = args.len();
    let first = args.first().copied().unwrap_or(ANY);
    let textual = matches!(first, SqlType::Text | SqlType::Bpchar | ANY);
    match (name, n) {
        ("split_part", 3) => s(StrFn::SplitPart, &[T, T, I4], T),
        ("strpos", 2) => s(StrFn::Strpos, &[T, T], I4),
        ("replace", 3) => s(StrFn::Replace, &[T, T, T], T),
        ("translate", 3) => s(StrFn::Translate, &[T, T, T], T),
        ("btrim" | "ltrim" | "rtrim", 1 | 2) => trim_signature(name, first == B, n),
        ("lpad", 2) => s(StrFn::Lpad, &[T, I4], T),
        ("lpad", 3) => s(StrFn::Lpad, &[T, I4, T], T),
        ("rpad", 2) => s(StrFn::Rpad, &[T, I4], T),
        ("rpad", 3) => s(StrFn::Rpad, &[T, I4, T], T),
        ("left", 2) => s(StrFn::Left, &[T, I4], T),
        ("right", 2) => s(StrFn::Right, &[T, I4], T),
        ("reverse", 1) => s(StrFn::Reverse, &[T], T),
        ("initcap", 1) => s(StrFn::Initcap, &[T], T),
        ("chr", 1) => s(StrFn::Chr, &[I4], T),
        ("ascii", 1) => s(StrFn::Ascii, &[T], I4),
        ("starts_with", 2) => s(StrFn::StartsWith, &[T, T], SqlType::Bool),
        ("md5", 1) if first == B => s(StrFn::Md5, &[B], T),
        ("md5", 1) => s(StrFn::Md5, &[T], T),
        ("sha224", 1) => s(StrFn::Sha224, &[B], B),
        ("sha256", 1) => s(StrFn::Sha256, &[B], B),
        ("sha384", 1) => s(StrFn::Sha384, &[B], B),
        ("sha512", 1) => s(StrFn::Sha512, &[B], B),
        ("encode", 2) => s(StrFn::Encode, &[B, T], T),
        ("decode", 2) => s(StrFn::Decode, &[T, T], B),
        ("to_hex", 1) if first == I8 => s(StrFn::ToHex, &[I8], T),
        ("to_hex", 1) => s(StrFn::ToHex, &[I4], T),
        ("quote_ident", 1) => s(StrFn::QuoteIdent, &[T], T),
        ("quote_literal", 1) if textual => s(StrFn::QuoteLiteral, &[T], T),
        ("quote_literal", 1) => s(StrFn::QuoteLiteral, &[ANY], T),
        ("quote_nullable", 1) if textual => s(StrFn::QuoteNullable, &[T], T),
        ("quote_nullable", 1) => s(StrFn::QuoteNullable, &[ANY], T),
        ("concat", 1..=100) => s(StrFn::Concat, &ANYS[..n], T),
        ("concat_ws", 2..=101) => s(StrFn::ConcatWs, &TEXT_ANYS[..n], T),
        ("format", 1..=101) => s(StrFn::Format, &TEXT_ANYS[..n], T),
        ("octet_length", 1) if first == B => s(StrFn::OctetLength, &[B], I4),
        ("octet_length", 1) => s(StrFn::OctetLength, &[T], I4),
        ("bit_length", 1) if first == B => s(StrFn::BitLength, &[B], I4),
        ("bit_length", 1) => s(StrFn::BitLength, &[T], I4),
        ("character_length", 1) => s(StrFn::CharLength, &[T], I4),
        ("overlay", 3) if first == B => s(StrFn::Overlay, &[B, B, I4], B),
        ("overlay", 4) if first == B => s(StrFn::Overlay, &[B, B, I4, I4], B),
        ("overlay", 3) => s(StrFn::Overlay, &[T, T, I4], T),
        ("overlay", 4) => s(StrFn::Overlay, &[T, T, I4, I4], T),
        ("unistr", 1) => s(StrFn::Unistr, &[T], T),
        _ => regexp_signature(name, args),
    }
}

fn trim_signature(name: &str, bytea: bool, n: usize) -> Option<Sig> {
    let f = match name {
        "btrim" => StrFn::Btrim,
        "ltrim" => StrFn::Ltrim,
        _ => StrFn::Rtrim,
    };
    let (ps, ret): (&'static [SqlType], SqlType) = match (bytea, n) {
        (true, 2) => (&[B, B], B),
        (_, 1) => (&[T], T),
        _ => (&[T, T], T),
    };
    Some((Func::Str(f, ret), ps, ret))
}

fn regexp_signature(name: &str, args: &[SqlType]) -> Option<Sig> {
    let n = args.len();
    let (f, ps, ret): (StrFn, &'static [SqlType], SqlType) = match (name, n) {
        ("regexp_replace", 3) => (StrFn::RegexpReplace, &[T, T, T], T),
        ("regexp_replace", 4) if matches!(args[3], T | ANY | SqlType::Bpchar) => {
            (StrFn::RegexpReplace, &[T, T, T, T], T)
        }
        ("regexp_replace", 4..=6) => (StrFn::RegexpReplace, &[T, T, T, I4, I4, T][..n], T),
        ("regexp_like", 2 | 3) => (StrFn::RegexpLike, &[T, T, T][..n], SqlType::Bool),
        ("regexp_count", 2..=4) => (StrFn::RegexpCount, &[T, T, I4, T][..n], I4),
        ("regexp_instr", 2..=7) => (StrFn::RegexpInstr, &[T, T, I4, I4, I4, T, I4][..n], I4),
        ("regexp_substr", 2..=6) => (StrFn::RegexpSubstr, &[T, T, I4, I4, T, I4][..n], T),
        _ => return None,
    };
    Some((Func::Str(f, ret), ps, ret))
}

/// `f` on `vals` (all non-NULL unless `f` is not strict: rule 2); `t` is the
/// result type.
pub fn eval(f: StrFn, t: SqlType, vals: &[Datum]) -> SqlResult<Datum> {
    let _ = t;
    match f {
        StrFn::QuoteNullable | StrFn::Concat | StrFn::ConcatWs | StrFn::Format => {
            return any_fn(f, vals)
        }
        StrFn::QuoteLiteral => return Ok(Datum::Text(quote_literal(&cast_text(&vals[0])?))),
        StrFn::Md5 | StrFn::Sha224 | StrFn::Sha256 | StrFn::Sha384 | StrFn::Sha512 => {
            return Ok(digest(f, bytes(&vals[0])))
        }
        StrFn::Encode => return Ok(Datum::Text(encode(bytes(&vals[0]), str_of(&vals[1]))?)),
        StrFn::Decode => return Ok(Datum::Bytea(decode(str_of(&vals[0]), str_of(&vals[1]))?)),
        StrFn::Btrim | StrFn::Ltrim | StrFn::Rtrim if matches!(vals[0], Datum::Bytea(_)) => {
            return Ok(Datum::Bytea(trim_bytes(
                f,
                bytes(&vals[0]),
                bytes(&vals[1]),
            )))
        }
        StrFn::OctetLength | StrFn::BitLength => {
            let n = match &vals[0] {
                Datum::Bytea(b) => b.len(),
                d => str_of(d).len(),
            } as i32;
            return Ok(Datum::Int4(if f == StrFn::BitLength { n * 8 } else { n }));
        }
        StrFn::Chr => return chr(int(&vals[0])).map(Datum::Text),
        StrFn::Overlay => return overlay(vals),
        StrFn::Unistr => return unistr(str_of(&vals[0])).map(Datum::Text),
        StrFn::ToHex => {
            return Ok(Datum::Text(match vals[0] {
                Datum::Int8(v) => format!("{:x}", v as u64),
                _ => format!("{:x}", int(&vals[0]) as u32),
            }))
        }
        StrFn::RegexpReplace
        | StrFn::RegexpLike
        | StrFn::RegexpCount
        | StrFn::RegexpInstr
        | StrFn::RegexpSubstr => return regexp_fn(f, vals),
        _ => {}
    }
    text_fn(f, vals)
}

/// The functions of text arguments and a text, integer or boolean result.
fn text_fn(f: StrFn, vals: &[Datum]) -> SqlResult<Datum> {
    let s = str_of(&vals[0]);
    let arg = |i: usize| str_of(&vals[i]);
    Ok(Datum::Text(match f {
        StrFn::SplitPart => split_part(s, arg(1), int(&vals[2]))?,
        StrFn::Strpos => return Ok(Datum::Int4(strpos(s, arg(1)))),
        StrFn::Replace if arg(1).is_empty() => s.to_string(),
        StrFn::Replace => {
            let count = s.matches(arg(1)).count();
            let grow = arg(2).len().saturating_sub(arg(1).len());
            crate::alloc_request(s.len().saturating_add(count.saturating_mul(grow)))?;
            s.replace(arg(1), arg(2))
        }
        StrFn::Translate => translate(s, arg(1), arg(2)),
        StrFn::Btrim | StrFn::Ltrim | StrFn::Rtrim => {
            let set: Vec<char> = vals
                .get(1)
                .map_or(vec![' '], |d| str_of(d).chars().collect());
            let t = match f {
                StrFn::Ltrim => s.trim_start_matches(&set[..]),
                StrFn::Rtrim => s.trim_end_matches(&set[..]),
                _ => s.trim_matches(&set[..]),
            };
            t.to_string()
        }
        StrFn::Lpad | StrFn::Rpad => {
            let fill = vals.get(2).map_or(" ", str_of);
            pad(s, int(&vals[1]), fill, f == StrFn::Lpad)?
        }
        StrFn::Left | StrFn::Right => left_right(s, int(&vals[1]), f == StrFn::Left),
        StrFn::Reverse => s.chars().rev().collect(),
        StrFn::Initcap => initcap(s),
        StrFn::Ascii => return Ok(Datum::Int4(s.chars().next().map_or(0, |c| c as i32))),
        StrFn::StartsWith => return Ok(Datum::Bool(s.starts_with(arg(1)))),
        StrFn::QuoteIdent => quote_ident(s),
        StrFn::CharLength => return Ok(Datum::Int4(s.chars().count() as i32)),
        _ => unreachable!("text_fn takes the text functions"),
    }))
}

fn str_of(d: &Datum) -> &str {
    match d {
        Datum::Text(s) => s,
        _ => "",
    }
}

fn bytes(d: &Datum) -> &[u8] {
    match d {
        Datum::Bytea(b) => b,
        Datum::Text(s) => s.as_bytes(),
        _ => &[],
    }
}

fn int(d: &Datum) -> i64 {
    match d {
        Datum::Int2(v) => i64::from(*v),
        Datum::Int4(v) => i64::from(*v),
        Datum::Int8(v) => *v,
        _ => 0,
    }
}

/// A value as PostgreSQL's output function prints it (rule 1).
fn text(d: &Datum) -> SqlResult<String> {
    match d {
        Datum::Text(s) => Ok(s.clone()),
        d => crate::text_of(d.clone()),
    }
}

/// A value cast to text (quote_literal(anyelement)): as its output function
/// prints it, save a boolean, which the cast spells `true` / `false`.
fn cast_text(d: &Datum) -> SqlResult<String> {
    match d {
        Datum::Bool(b) => Ok(b.to_string()),
        d => text(d),
    }
}

fn invalid(msg: impl Into<String>) -> SqlError {
    SqlError::new("22023", msg)
}

fn too_large() -> SqlError {
    SqlError::new("54000", "requested length too large")
}

/// split_part: field `n` (from 1, or from the end if negative) of `s` cut at `sep`.
fn split_part(s: &str, sep: &str, n: i64) -> SqlResult<String> {
    if n == 0 {
        return Err(invalid("field position must not be zero"));
    }
    if s.is_empty() {
        return Ok(String::new());
    }
    if sep.is_empty() {
        return Ok(if n == 1 || n == -1 {
            s.to_string()
        } else {
            String::new()
        });
    }
    let fields: Vec<&str> = s.split(sep).collect();
    let i = if n > 0 {
        n - 1
    } else {
        fields.len() as i64 + n
    };
    Ok(usize::try_from(i)
        .ok()
        .and_then(|i| fields.get(i))
        .map_or(String::new(), |f| f.to_string()))
}

/// strpos: the character position of `needle` in `s`, 0 if absent.
fn strpos(s: &str, needle: &str) -> i32 {
    match s.find(needle) {
        Some(b) => s[..b].chars().count() as i32 + 1,
        None => 0,
    }
}

fn translate(s: &str, from: &str, to: &str) -> String {
    let from: Vec<char> = from.chars().collect();
    let to: Vec<char> = to.chars().collect();
    s.chars()
        .filter_map(|c| match from.iter().position(|f| *f == c) {
            Some(i) => to.get(i).copied(),
            None => Some(c),
        })
        .collect()
}

fn trim_bytes(f: StrFn, b: &[u8], set: &[u8]) -> Vec<u8> {
    let mut lo = 0;
    let mut hi = b.len();
    if f != StrFn::Rtrim {
        while lo < hi && set.contains(&b[lo]) {
            lo += 1;
        }
    }
    if f != StrFn::Ltrim {
        while hi > lo && set.contains(&b[hi - 1]) {
            hi -= 1;
        }
    }
    b[lo..hi].to_vec()
}

/// lpad / rpad: `s` filled with `fill` (repeated) or cut to `len` characters.
fn pad(s: &str, len: i64, fill: &str, left: bool) -> SqlResult<String> {
    let len = usize::try_from(len.max(0)).unwrap_or(0);
    let kept: String = s.chars().take(len).collect();
    let have = kept.chars().count();
    if fill.is_empty() || have >= len {
        return Ok(kept);
    }
    let need = len - have;
    let max_char = fill.chars().map(char::len_utf8).max().unwrap_or(1);
    let bytes = kept.len() + need * max_char;
    if bytes + 4 > crate::MAX_ALLOC_BYTES {
        return Err(too_large());
    }
    let mut out = crate::try_string(bytes)?;
    let padding = fill.chars().cycle().take(need);
    if left {
        out.extend(padding);
        out.push_str(&kept);
    } else {
        out.push_str(&kept);
        out.extend(padding);
    }
    Ok(out)
}

fn left_right(s: &str, n: i64, left: bool) -> String {
    let count = s.chars().count() as i64;
    let keep = if n >= 0 {
        n.min(count)
    } else {
        (count + n).max(0)
    };
    if left {
        s.chars().take(keep as usize).collect()
    } else {
        s.chars().skip((count - keep) as usize).collect()
    }
}

/// initcap: each word's first letter upper case, the rest lower (a word is a run
/// of letters and digits).
fn initcap(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    let mut in_word = false;
    for c in s.chars() {
        // One character for one, as towlower / towupper: a character whose
        // mapping is several (the ligature ﬃ) stays as it is.
        let mut m: Vec<char> = if in_word {
            c.to_lowercase().collect()
        } else {
            c.to_uppercase().collect()
        };
        if m.len() != 1 {
            m = vec![c];
        }
        out.push(m[0]);
        in_word = c.is_alphanumeric();
    }
    out
}

fn chr(n: i64) -> SqlResult<String> {
    let err = |m: String| Err(SqlError::new("54000", m));
    if n < 0 {
        return Err(invalid("character number must be positive"));
    }
    if n == 0 {
        return err("null character not permitted".into());
    }
    if n > 0x10ffff {
        return err(format!("requested character too large for encoding: {n}"));
    }
    match char::from_u32(n as u32) {
        Some(c) => Ok(c.to_string()),
        None => err(format!("requested character not valid for encoding: {n}")),
    }
}

fn hex(b: &[u8]) -> String {
    let mut s = String::with_capacity(b.len() * 2);
    for x in b {
        s.push(char::from(b"0123456789abcdef"[usize::from(x >> 4)]));
        s.push(char::from(b"0123456789abcdef"[usize::from(x & 15)]));
    }
    s
}

/// md5 (as hex text) and the SHA-2 digests (as bytea).
fn digest(f: StrFn, b: &[u8]) -> Datum {
    use sha2::Digest;
    match f {
        StrFn::Md5 => Datum::Text(hex(&md5::Md5::digest(b))),
        StrFn::Sha224 => Datum::Bytea(sha2::Sha224::digest(b).to_vec()),
        StrFn::Sha256 => Datum::Bytea(sha2::Sha256::digest(b).to_vec()),
        StrFn::Sha384 => Datum::Bytea(sha2::Sha384::digest(b).to_vec()),
        _ => Datum::Bytea(sha2::Sha512::digest(b).to_vec()),
    }
}

const BASE64: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

fn encoding_err(name: &str) -> SqlError {
    invalid(format!("unrecognized encoding: \"{name}\""))
}

/// encode(bytea, 'hex' | 'base64' | 'escape').
fn encode(b: &[u8], how: &str) -> SqlResult<String> {
    let how_lc = how.to_ascii_lowercase();
    let need = match how_lc.as_str() {
        "hex" => b.len().saturating_mul(2),
        "base64" => (b.len().saturating_add(2) / 3).saturating_mul(4) * 77 / 76 + 1,
        "escape" => b.len().saturating_mul(4),
        _ => return Err(encoding_err(how)),
    };
    crate::alloc_request(need)?;
    Ok(match how_lc.as_str() {
        "hex" => hex(b),
        "base64" => base64_encode(b),
        _ => {
            let mut s = String::with_capacity(b.len());
            for &x in b {
                match x {
                    0 | 0x80..=0xff => s.push_str(&format!("\\{x:03o}")),
                    b'\\' => s.push_str("\\\\"),
                    _ => s.push(char::from(x)),
                }
            }
            s
        }
    })
}

/// PostgreSQL's base64: a newline after every 76 characters.
fn base64_encode(b: &[u8]) -> String {
    let mut out = String::new();
    let mut line = 0;
    for chunk in b.chunks(3) {
        let v = chunk
            .iter()
            .enumerate()
            .fold(0u32, |a, (i, x)| a | u32::from(*x) << (16 - 8 * i));
        for i in 0..4 {
            if i <= chunk.len() {
                out.push(char::from(BASE64[(v >> (18 - 6 * i)) as usize & 63]));
            } else {
                out.push('=');
            }
        }
        line += 4;
        if line >= 76 && chunk.len() == 3 {
            out.push('\n');
            line = 0;
        }
    }
    out
}

/// decode(text, 'hex' | 'base64' | 'escape').
fn decode(s: &str, how: &str) -> SqlResult<Vec<u8>> {
    match how.to_ascii_lowercase().as_str() {
        "hex" => hex_decode(s),
        "base64" => base64_decode(s),
        "escape" => escape_decode(s.as_bytes()),
        _ => Err(encoding_err(how)),
    }
}

fn first_char(s: &str) -> &str {
    let n = s.chars().next().map_or(0, char::len_utf8);
    &s[..n]
}

fn hex_decode(s: &str) -> SqlResult<Vec<u8>> {
    let mut out = Vec::with_capacity(s.len() / 2);
    let digit = |i: usize| -> SqlResult<u8> {
        let c = s.as_bytes()[i];
        (c as char).to_digit(16).map(|d| d as u8).ok_or_else(|| {
            invalid(format!(
                "invalid hexadecimal digit: \"{}\"",
                first_char(&s[i..])
            ))
        })
    };
    let b = s.as_bytes();
    let mut i = 0;
    while i < b.len() {
        if matches!(b[i], b' ' | b'\n' | b'\t' | b'\r') {
            i += 1;
            continue;
        }
        let hi = digit(i)?;
        i += 1;
        if i >= b.len() {
            return Err(invalid("invalid hexadecimal data: odd number of digits"));
        }
        out.push(hi << 4 | digit(i)?);
        i += 1;
    }
    Ok(out)
}

fn base64_decode(s: &str) -> SqlResult<Vec<u8>> {
    let mut out = Vec::with_capacity(s.len() / 4 * 3);
    let (mut buf, mut pos, mut end) = (0u32, 0, 0);
    for (i, c) in s.char_indices() {
        if matches!(c, ' ' | '\t' | '\n' | '\r') {
            continue;
        }
        let b = if c == '=' {
            if end == 0 {
                end = match pos {
                    2 => 1,
                    3 => 2,
                    _ => return Err(invalid("unexpected \"=\" while decoding base64 sequence")),
                };
            }
            0
        } else {
            match BASE64.iter().position(|x| u32::from(*x) == c as u32) {
                Some(v) => v as u32,
                None => {
                    return Err(invalid(format!(
                        "invalid symbol \"{}\" found while decoding base64 sequence",
                        first_char(&s[i..])
                    )))
                }
            }
        };
        buf = (buf << 6) + b;
        pos += 1;
        if pos == 4 {
            out.push((buf >> 16) as u8);
            if end == 0 || end > 1 {
                out.push((buf >> 8) as u8);
            }
            if end == 0 || end > 2 {
                out.push(buf as u8);
            }
            (buf, pos) = (0, 0);
        }
    }
    if pos != 0 {
        return Err(invalid("invalid base64 end sequence")
            .with_hint("Input data is missing padding, is truncated, or is otherwise corrupted."));
    }
    Ok(out)
}

fn escape_decode(s: &[u8]) -> SqlResult<Vec<u8>> {
    let mut out = Vec::with_capacity(s.len());
    let mut i = 0;
    let oct = |c: u8, hi: u8| (b'0'..=hi).contains(&c);
    while i < s.len() {
        if s[i] != b'\\' {
            out.push(s[i]);
            i += 1;
        } else if i + 3 < s.len()
            && oct(s[i + 1], b'3')
            && oct(s[i + 2], b'7')
            && oct(s[i + 3], b'7')
        {
            out.push((s[i + 1] - b'0') << 6 | (s[i + 2] - b'0') << 3 | (s[i + 3] - b'0'));
            i += 4;
        } else if i + 1 < s.len() && s[i + 1] == b'\\' {
            out.push(b'\\');
            i += 2;
        } else {
            return Err(SqlError::new(
                "22P02",
                "invalid input syntax for type bytea",
            ));
        }
    }
    Ok(out)
}

/// PostgreSQL's reserved and type-or-function-name keywords: no bare column name
/// (`crate::column_name_keyword_ok`), quoted by quote_ident. Sorted.
pub(crate) const RESERVED_KEYWORDS: &[&str] = &[
    "all",
    "analyse",
    "analyze",
    "and",
    "any",
    "array",
    "as",
    "asc",
    "asymmetric",
    "authorization",
    "binary",
    "both",
    "case",
    "cast",
    "check",
    "collate",
    "collation",
    "column",
    "concurrently",
    "constraint",
    "create",
    "cross",
    "current_catalog",
    "current_date",
    "current_role",
    "current_schema",
    "current_time",
    "current_timestamp",
    "current_user",
    "default",
    "deferrable",
    "desc",
    "distinct",
    "do",
    "else",
    "end",
    "except",
    "false",
    "fetch",
    "for",
    "foreign",
    "freeze",
    "from",
    "full",
    "grant",
    "group",
    "having",
    "ilike",
    "in",
    "initially",
    "inner",
    "intersect",
    "into",
    "is",
    "isnull",
    "join",
    "lateral",
    "leading",
    "left",
    "like",
    "limit",
    "localtime",
    "localtimestamp",
    "natural",
    "not",
    "notnull",
    "null",
    "offset",
    "on",
    "only",
    "or",
    "order",
    "outer",
    "overlaps",
    "placing",
    "primary",
    "references",
    "returning",
    "right",
    "select",
    "session_user",
    "similar",
    "some",
    "symmetric",
    "table",
    "tablesample",
    "then",
    "to",
    "trailing",
    "true",
    "union",
    "unique",
    "user",
    "using",
    "variadic",
    "verbose",
    "when",
    "where",
    "window",
    "with",
];

/// PostgreSQL's column-name keywords: quote_ident quotes them too. Sorted.
const COL_NAME_KEYWORDS: &[&str] = &[
    "between",
    "bigint",
    "bit",
    "boolean",
    "char",
    "character",
    "coalesce",
    "dec",
    "decimal",
    "exists",
    "extract",
    "float",
    "greatest",
    "grouping",
    "inout",
    "int",
    "integer",
    "interval",
    "least",
    "national",
    "nchar",
    "none",
    "normalize",
    "nullif",
    "numeric",
    "out",
    "overlay",
    "position",
    "precision",
    "real",
    "row",
    "setof",
    "smallint",
    "substring",
    "time",
    "timestamp",
    "treat",
    "trim",
    "values",
    "varchar",
    "xmlattributes",
    "xmlconcat",
    "xmlelement",
    "xmlexists",
    "xmlforest",
    "xmlnamespaces",
    "xmlparse",
    "xmlpi",
    "xmlroot",
    "xmlserialize",
    "xmltable",
];

/// quote_ident: `s` as is if it is a lower-case identifier and no reserved
/// word, else in double quotes.
pub fn quote_ident(s: &str) -> String {
    let safe = s
        .chars()
        .next()
        .is_some_and(|c| c.is_ascii_lowercase() || c == '_')
        && s.chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_')
        && RESERVED_KEYWORDS.binary_search(&s).is_err()
        && COL_NAME_KEYWORDS.binary_search(&s).is_err();
    if safe {
        return s.to_string();
    }
    format!("\"{}\"", s.replace('"', "\"\""))
}

/// quote_literal: `s` in single quotes, E'...' with doubled backslashes if it
/// has any.
pub fn quote_literal(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 3);
    if s.contains('\\') {
        out.push('E');
    }
    out.push('\'');
    for c in s.chars() {
        if c == '\'' || c == '\\' {
            out.push(c);
        }
        out.push(c);
    }
    out.push('\'');
    out
}

/// The functions that see NULLs (rule 2).
fn any_fn(f: StrFn, vals: &[Datum]) -> SqlResult<Datum> {
    match f {
        StrFn::QuoteNullable => Ok(Datum::Text(match &vals[0] {
            Datum::Null => "NULL".to_string(),
            d => quote_literal(&cast_text(d)?),
        })),
        StrFn::Concat => Ok(Datum::Text(join("", vals)?)),
        StrFn::ConcatWs => match &vals[0] {
            Datum::Null => Ok(Datum::Null),
            d => Ok(Datum::Text(join(str_of(d), &vals[1..])?)),
        },
        _ => match &vals[0] {
            Datum::Null => Ok(Datum::Null),
            d => crate::strfn::format(str_of(d), &vals[1..]).map(Datum::Text),
        },
    }
}

/// concat / concat_ws: the non-NULL values' text, `sep` between.
fn join(sep: &str, vals: &[Datum]) -> SqlResult<String> {
    let mut out = String::new();
    let mut first = true;
    for v in vals.iter().filter(|v| !v.is_null()) {
        if !first {
            out.push_str(sep);
        }
        first = false;
        match v {
            Datum::Text(s) => out.push_str(s),
            v => out.push_str(&v.to_text().unwrap_or_default()),
        }
        crate::alloc_request(out.len())?;
    }
    Ok(out)
}

fn format_hint(e: SqlError) -> SqlError {
    e.with_hint("For a single \"%\" use \"%%\".")
}

fn unterminated() -> SqlError {
    format_hint(invalid("unterminated format() type specifier"))
}

/// A `%` specification of format(): argument position, width position (0 for
/// the next argument), left-justification and width.
#[derive(Default)]
struct Spec {
    arg: Option<usize>,
    width_arg: Option<usize>,
    minus: bool,
    width: i64,
}

/// Digits at `cs[*i..]`, if any (PostgreSQL's text_format_parse_digits).
fn format_digits(cs: &[char], i: &mut usize) -> SqlResult<Option<i64>> {
    let mut v: Option<i64> = None;
    while let Some(d) = cs.get(*i).and_then(|c| c.to_digit(10)) {
        let n = v.unwrap_or(0) * 10 + i64::from(d);
        if n > i64::from(i32::MAX) {
            return Err(SqlError::new("22003", "number is out of range"));
        }
        v = Some(n);
        *i += 1;
        if *i >= cs.len() {
            return Err(unterminated());
        }
    }
    Ok(v)
}

fn advance(cs: &[char], i: &mut usize) -> SqlResult<()> {
    *i += 1;
    if *i >= cs.len() {
        return Err(unterminated());
    }
    Ok(())
}

fn arg_zero() -> SqlError {
    invalid("format specifies argument 0, but arguments are numbered from 1")
}

/// PostgreSQL's text_format_parse_format: `cs[*i]` is the character after `%`.
fn format_spec(cs: &[char], i: &mut usize) -> SqlResult<Spec> {
    let mut spec = Spec::default();
    if let Some(n) = format_digits(cs, i)? {
        if cs[*i] != '$' {
            spec.width = n;
            return Ok(spec);
        }
        if n == 0 {
            return Err(arg_zero());
        }
        spec.arg = Some(n as usize);
        advance(cs, i)?;
    }
    while cs[*i] == '-' {
        spec.minus = true;
        advance(cs, i)?;
    }
    if cs[*i] == '*' {
        advance(cs, i)?;
        match format_digits(cs, i)? {
            Some(n) => {
                if cs[*i] != '$' {
                    return Err(invalid("width argument position must be ended by \"$\""));
                }
                if n == 0 {
                    return Err(arg_zero());
                }
                spec.width_arg = Some(n as usize);
                advance(cs, i)?;
            }
            None => spec.width_arg = Some(0),
        }
    } else if let Some(n) = format_digits(cs, i)? {
        spec.width = n;
    }
    Ok(spec)
}

/// format(fmt, args...): %s, %I, %L and %%, with positions `n$`, the `-` flag and
/// widths (`*` and `*n$` from an argument).
fn format(fmt: &str, args: &[Datum]) -> SqlResult<String> {
    let cs: Vec<char> = fmt.chars().collect();
    let mut out = String::new();
    let mut arg = 0usize;
    let mut i = 0;
    while i < cs.len() {
        if cs[i] != '%' {
            out.push(cs[i]);
            i += 1;
            continue;
        }
        advance(&cs, &mut i)?;
        if cs[i] == '%' {
            out.push('%');
            i += 1;
            continue;
        }
        let mut spec = format_spec(&cs, &mut i)?;
        let conv = cs[i];
        if !matches!(conv, 's' | 'I' | 'L') {
            return Err(format_hint(invalid(format!(
                "unrecognized format() type specifier \"{conv}\""
            ))));
        }
        if let Some(w) = spec.width_arg {
            arg = if w > 0 { w } else { arg + 1 };
            let v = args.get(arg - 1).ok_or_else(too_few)?;
            let w = width_of(v)?;
            if w < 0 {
                spec.minus = true;
                if w == i64::from(i32::MIN) {
                    return Err(SqlError::new("22003", "number is out of range"));
                }
            }
            spec.width = w.abs();
        }
        arg = spec.arg.unwrap_or(arg + 1);
        let v = args.get(arg - 1).ok_or_else(too_few)?;
        let s = match (v, conv) {
            (Datum::Null, 's') => String::new(),
            (Datum::Null, 'L') => "NULL".to_string(),
            (Datum::Null, _) => {
                return Err(SqlError::new(
                    "22004",
                    "null values cannot be formatted as an SQL identifier",
                ))
            }
            (v, 'I') => quote_ident(&text(v)?),
            (v, 'L') => quote_literal(&text(v)?),
            (v, _) => text(v)?,
        };
        let fill = usize::try_from(spec.width)
            .unwrap_or(0)
            .saturating_sub(s.chars().count());
        crate::alloc_request(out.len().saturating_add(s.len()).saturating_add(fill))?;
        if !spec.minus {
            out.extend(std::iter::repeat_n(' ', fill));
        }
        out.push_str(&s);
        if spec.minus {
            out.extend(std::iter::repeat_n(' ', fill));
        }
        i += 1;
    }
    Ok(out)
}

fn too_few() -> SqlError {
    invalid("too few arguments for format()")
}

/// A width argument: an integer, or text read as one; NULL is 0.
fn width_of(v: &Datum) -> SqlResult<i64> {
    Ok(match v {
        Datum::Null => 0,
        Datum::Int2(_) | Datum::Int4(_) | Datum::Int8(_) => int(v),
        v => {
            let t = text(v)?;
            t.trim().parse::<i32>().map(i64::from).map_err(|_| {
                SqlError::new(
                    "22P02",
                    format!("invalid input syntax for type integer: \"{t}\""),
                )
            })?
        }
    })
}

// ---------------------------------------------------------------------------
// Regular expressions (rule 4).

/// PostgreSQL's regular-expression flags, parsed.
struct Flags {
    global: bool,
    icase: bool,
    /// `.` and `[^...]` stop at newlines.
    nl_stop: bool,
    /// `^` and `$` match at newlines.
    nl_anchor: bool,
    expanded: bool,
    literal: bool,
}

fn parse_flags(flags: &str) -> SqlResult<Flags> {
    let mut f = Flags {
        global: false,
        icase: false,
        nl_stop: false,
        nl_anchor: false,
        expanded: false,
        literal: false,
    };
    for c in flags.chars() {
        match c {
            'g' => f.global = true,
            'i' => f.icase = true,
            'c' => f.icase = false,
            'n' | 'm' => (f.nl_stop, f.nl_anchor) = (true, true),
            's' => (f.nl_stop, f.nl_anchor) = (false, false),
            'p' => (f.nl_stop, f.nl_anchor) = (true, false),
            'w' => (f.nl_stop, f.nl_anchor) = (false, true),
            'x' => f.expanded = true,
            't' => f.expanded = false,
            'q' => f.literal = true,
            'e' => {}
            'b' => return Err(SqlError::unsupported("basic regular expressions (flag b)")),
            _ => {
                return Err(invalid(format!(
                    "invalid regular expression option: \"{c}\""
                )))
            }
        }
    }
    Ok(f)
}

/// PostgreSQL's escapes outside brackets that the `regex` crate spells otherwise.
/// With `nl_stop` (flags n, p), a negated bracket expression also excludes the
/// newline, as PostgreSQL's.
fn translate_pattern(p: &str, nl_stop: bool) -> String {
    let mut out = String::with_capacity(p.len() + 8);
    let mut cs = p.chars().peekable();
    let mut bracket = false;
    while let Some(c) = cs.next() {
        match c {
            '\\' => {
                let Some(n) = cs.next() else {
                    out.push('\\');
                    break;
                };
                match (bracket, n) {
                    (false, 'y') => out.push_str("\\b"),
                    (false, 'Y') => out.push_str("\\B"),
                    (false, 'm') => out.push_str("\\b{start}"),
                    (false, 'M') => out.push_str("\\b{end}"),
                    (false, 'Z') => out.push_str("\\z"),
                    _ => {
                        out.push('\\');
                        out.push(n);
                    }
                }
            }
            '[' if !bracket => {
                bracket = true;
                out.push('[');
                if cs.peek() == Some(&'^') {
                    out.push('^');
                    if nl_stop {
                        out.push_str("\\n");
                    }
                    cs.next();
                }
                if cs.peek() == Some(&']') {
                    out.push_str("\\]");
                    cs.next();
                }
            }
            '[' if cs.peek() == Some(&':')
                || cs.peek() == Some(&'.')
                || cs.peek() == Some(&'=') =>
            {
                out.push('[');
                let close = cs.next().unwrap_or(':');
                out.push(close);
                for d in cs.by_ref() {
                    out.push(d);
                    if d == ']' {
                        break;
                    }
                }
            }
            ']' if bracket => {
                bracket = false;
                out.push(']');
            }
            _ => out.push(c),
        }
    }
    out
}

/// A compiled expression: the `regex` crate's, or fancy-regex's for a pattern
/// with backreferences, which the `regex` crate lacks.
#[derive(Clone)]
enum Re {
    Plain(regex::Regex),
    Fancy(Box<fancy_regex::Regex>),
}

/// The groups of a match, 0 the whole match: byte ranges, `None` for a group
/// that took no part.
type Groups = Vec<Option<(usize, usize)>>;

fn re_err(msg: impl std::fmt::Display) -> SqlError {
    SqlError::new("2201B", format!("invalid regular expression: {msg}"))
}

impl Re {
    /// The number of groups, the whole match included.
    fn groups(&self) -> usize {
        match self {
            Re::Plain(r) => r.captures_len(),
            Re::Fancy(r) => r.captures_len(),
        }
    }

    /// The first match at or after byte `at` of `s`.
    fn captures_at(&self, s: &str, at: usize) -> SqlResult<Option<Groups>> {
        Ok(match self {
            Re::Plain(r) => r
                .captures_at(s, at)
                .map(|c| c.iter().map(|m| m.map(|m| (m.start(), m.end()))).collect()),
            Re::Fancy(r) => r
                .captures_from_pos(s, at)
                .map_err(re_err)?
                .map(|c| c.iter().map(|m| m.map(|m| (m.start(), m.end()))).collect()),
        })
    }
}

thread_local! {
    static CACHE: std::cell::RefCell<Vec<(String, String, Re)>> =
        const { std::cell::RefCell::new(Vec::new()) };
}

/// The compiled expression of `pattern` under `flags` (cached, as PostgreSQL's 32
/// most recent).
fn regex_of(pattern: &str, f: &Flags, flags: &str) -> SqlResult<Re> {
    let hit = CACHE.with(|c| {
        c.borrow()
            .iter()
            .find(|(p, fl, _)| p == pattern && fl == flags)
            .map(|x| x.2.clone())
    });
    if let Some(r) = hit {
        return Ok(r);
    }
    let body = if f.literal {
        regex::escape(pattern)
    } else {
        translate_pattern(pattern, f.nl_stop)
    };
    let plain = regex::RegexBuilder::new(&body)
        .case_insensitive(f.icase)
        .dot_matches_new_line(!f.nl_stop)
        .multi_line(f.nl_anchor)
        .ignore_whitespace(f.expanded && !f.literal)
        .size_limit(64 << 20)
        .build();
    let r = match plain {
        Ok(r) => Re::Plain(r),
        Err(regex::Error::Syntax(m)) if m.contains("backreferences are not supported") => {
            fancy(&body, f)?
        }
        Err(e) => {
            let msg = match e {
                regex::Error::Syntax(s) => s.lines().last().unwrap_or("").to_string(),
                e => e.to_string(),
            };
            return Err(re_err(msg.trim_start_matches("error: ")));
        }
    };
    CACHE.with(|c| {
        let mut c = c.borrow_mut();
        if c.len() >= 32 {
            c.remove(0);
        }
        c.push((pattern.to_string(), flags.to_string(), r.clone()));
    });
    Ok(r)
}

/// A pattern with backreferences, by fancy-regex (its flags written inline).
fn fancy(body: &str, f: &Flags) -> SqlResult<Re> {
    let mut inline = String::from("(?");
    if !f.nl_stop {
        inline.push('s');
    }
    if f.nl_anchor {
        inline.push('m');
    }
    if f.expanded {
        inline.push('x');
    }
    let pattern = if inline.len() > 2 {
        format!("{inline}){body}")
    } else {
        body.to_string()
    };
    fancy_regex::RegexBuilder::new(&pattern)
        .case_insensitive(f.icase)
        .build()
        .map(|r| Re::Fancy(Box::new(r)))
        .map_err(re_err)
}

fn bad_param(name: &str, v: i64) -> SqlError {
    invalid(format!("invalid value for parameter \"{name}\": {v}"))
}

/// The byte offset of character `n` (from 0) of `s`, `None` past its end.
fn byte_at(s: &str, n: i64) -> Option<usize> {
    if n < 0 {
        return None;
    }
    let mut it = s
        .char_indices()
        .map(|(b, _)| b)
        .chain(std::iter::once(s.len()));
    it.nth(n as usize)
}

fn char_pos(s: &str, b: usize) -> i32 {
    s[..b].chars().count() as i32 + 1
}

/// The byte after a match at `m`: its end, or one character on if it is empty.
fn next_start(s: &str, start: usize, end: usize) -> usize {
    if start == end {
        end + s[end..].chars().next().map_or(1, char::len_utf8)
    } else {
        end
    }
}

/// The matches of `r` in `s` from byte `from`, as PostgreSQL's
/// setup_regexp_matches finds them (an empty match right after another counts).
fn matches_from(r: &Re, s: &str, from: usize) -> SqlResult<Vec<Groups>> {
    let mut out = Vec::new();
    let mut at = from;
    while at <= s.len() {
        let Some(c) = r.captures_at(s, at)? else {
            break;
        };
        let (start, end) = c[0].expect("group 0");
        at = next_start(s, start, end);
        out.push(c);
    }
    Ok(out)
}

fn global_err(f: &str) -> SqlError {
    invalid(format!("{f}() does not support the \"global\" option"))
}

/// The regexp_ functions' arguments past the pattern, by position: start, N,
/// endoption, flags, subexpr (those of `f`'s signature).
struct ReArgs<'a> {
    start: i64,
    n: i64,
    endoption: i64,
    flags: &'a str,
    subexpr: i64,
}

fn re_args(f: StrFn, vals: &[Datum]) -> SqlResult<ReArgs<'_>> {
    let g = |i: usize, d: i64| vals.get(i).map_or(d, int);
    let fl = |i: usize| vals.get(i).map_or("", str_of);
    let a = match f {
        StrFn::RegexpLike => ReArgs {
            start: 1,
            n: 1,
            endoption: 0,
            flags: fl(2),
            subexpr: 0,
        },
        StrFn::RegexpCount => ReArgs {
            start: g(2, 1),
            n: 1,
            endoption: 0,
            flags: fl(3),
            subexpr: 0,
        },
        StrFn::RegexpInstr => ReArgs {
            start: g(2, 1),
            n: g(3, 1),
            endoption: g(4, 0),
            flags: fl(5),
            subexpr: g(6, 0),
        },
        _ => ReArgs {
            start: g(2, 1),
            n: g(3, 1),
            endoption: 0,
            flags: fl(4),
            subexpr: g(5, 0),
        },
    };
    if a.start <= 0 {
        return Err(bad_param("start", a.start));
    }
    if a.n <= 0 {
        return Err(bad_param("n", a.n));
    }
    if a.endoption != 0 && a.endoption != 1 {
        return Err(bad_param("endoption", a.endoption));
    }
    if a.subexpr < 0 {
        return Err(bad_param("subexpr", a.subexpr));
    }
    Ok(a)
}

fn regexp_fn(f: StrFn, vals: &[Datum]) -> SqlResult<Datum> {
    if f == StrFn::RegexpReplace {
        return regexp_replace(vals);
    }
    let (s, pattern) = (str_of(&vals[0]), str_of(&vals[1]));
    let a = re_args(f, vals)?;
    let flags = parse_flags(a.flags)?;
    if flags.global {
        let name = match f {
            StrFn::RegexpLike => "regexp_like",
            StrFn::RegexpCount => "regexp_count",
            StrFn::RegexpInstr => "regexp_instr",
            _ => "regexp_substr",
        };
        return Err(global_err(name));
    }
    let r = regex_of(pattern, &flags, a.flags)?;
    if f == StrFn::RegexpLike {
        return Ok(Datum::Bool(r.captures_at(s, 0)?.is_some()));
    }
    let all = match byte_at(s, a.start - 1) {
        Some(b) => matches_from(&r, s, b)?,
        None => Vec::new(),
    };
    if f == StrFn::RegexpCount {
        return Ok(Datum::Int4(all.len() as i32));
    }
    // Without parenthesized groups, the match is group 1 (PostgreSQL's
    // setup_regexp_matches).
    let sub = if r.groups() == 1 && a.subexpr == 1 {
        0
    } else {
        a.subexpr as usize
    };
    let group = all
        .get(a.n as usize - 1)
        .and_then(|c| c.get(sub).copied().flatten());
    Ok(match (f, group) {
        (StrFn::RegexpInstr, None) => Datum::Int4(0),
        (StrFn::RegexpInstr, Some((_, e))) if a.endoption == 1 => Datum::Int4(char_pos(s, e)),
        (StrFn::RegexpInstr, Some((b, _))) => Datum::Int4(char_pos(s, b)),
        (_, None) => Datum::Null,
        (_, Some((b, e))) => Datum::Text(s[b..e].to_string()),
    })
}

/// regexp_replace(source, pattern, replacement [, flags]) and
/// regexp_replace(source, pattern, replacement, start [, N [, flags]]).
fn regexp_replace(vals: &[Datum]) -> SqlResult<Datum> {
    let (s, pattern, rep) = (str_of(&vals[0]), str_of(&vals[1]), str_of(&vals[2]));
    let (start, n, flag_text) = match vals.get(3) {
        Some(Datum::Text(fl)) if fl.starts_with(|c: char| c.is_ascii_digit()) => {
            return Err(invalid(format!(
                "invalid regular expression option: \"{}\"",
                first_char(fl)
            ))
            .with_hint("If you meant to use regexp_replace() with a start parameter, cast the fourth argument to integer explicitly."));
        }
        Some(Datum::Text(fl)) => (1, 1, fl.as_str()),
        Some(d) => (
            int(d),
            vals.get(4).map_or(1, int),
            vals.get(5).map_or("", str_of),
        ),
        None => (1, 1, ""),
    };
    if start <= 0 {
        return Err(bad_param("start", start));
    }
    if n < 0 {
        return Err(bad_param("n", n));
    }
    let flags = parse_flags(flag_text)?;
    // The g flag is ignored when N is given.
    let n = if vals.len() < 5 && flags.global { 0 } else { n };
    let r = regex_of(pattern, &flags, flag_text)?;
    let Some(from) = byte_at(s, start - 1) else {
        return Ok(Datum::Text(s.to_string()));
    };
    let mut out = String::with_capacity(s.len());
    let mut copied = 0;
    let mut count = 0;
    let mut at = from;
    while at <= s.len() {
        let Some(c) = r.captures_at(s, at)? else {
            break;
        };
        let (start, end) = c[0].expect("group 0");
        count += 1;
        at = next_start(s, start, end);
        if n > 0 && count < n {
            continue;
        }
        out.push_str(&s[copied..start]);
        substitute(&mut out, rep, s, &c);
        crate::alloc_request(out.len())?;
        copied = end;
        if n > 0 {
            break;
        }
    }
    out.push_str(&s[copied..]);
    Ok(Datum::Text(out))
}

/// The replacement text with \1..\9 (groups), \& (the match) and \\.
fn substitute(out: &mut String, rep: &str, s: &str, c: &Groups) {
    let group = |g: usize| c.get(g).copied().flatten().map_or("", |(b, e)| &s[b..e]);
    let mut cs = rep.chars().peekable();
    while let Some(ch) = cs.next() {
        if ch != '\\' {
            out.push(ch);
            continue;
        }
        match cs.peek().copied() {
            Some(d @ '1'..='9') => {
                cs.next();
                let g = d as usize - '0' as usize;
                out.push_str(group(g));
            }
            Some('&') => {
                cs.next();
                out.push_str(group(0));
            }
            Some('\\') => {
                cs.next();
                out.push('\\');
            }
            _ => out.push('\\'),
        }
    }
}

impl crate::bind::Binder {
    /// TRIM([BOTH | LEADING | TRAILING] [chars] FROM x), POSITION(a IN b) and
    /// OVERLAY(x PLACING y FROM s [FOR n]): PostgreSQL's btrim / ltrim / rtrim,
    /// strpos and overlay.
    #[inline(never)]
    pub(crate) fn string_syntax(
        &mut self,
        scope: &crate::bind::Scope,
        e: &sqlparser::ast::Expr,
        aggs: &mut Option<&mut Vec<crate::bind::Agg>>,
    ) -> SqlResult<(crate::bind::Expr, SqlType)> {
        use sqlparser::ast::{Expr as E, TrimWhereField as W};
        let (name, parts): (&str, Vec<&E>) = match e {
            E::Trim {
                trim_where,
                trim_what,
                expr,
                trim_characters: None,
            } => {
                let name = match trim_where {
                    Some(W::Leading) => "ltrim",
                    Some(W::Trailing) => "rtrim",
                    _ => "btrim",
                };
                let mut parts = vec![&**expr];
                parts.extend(trim_what.as_deref());
                (name, parts)
            }
            E::Position { expr, r#in } => ("strpos", vec![&**r#in, &**expr]),
            E::Overlay {
                expr,
                overlay_what,
                overlay_from,
                overlay_for,
            } => {
                let mut parts = vec![&**expr, &**overlay_what, &**overlay_from];
                parts.extend(overlay_for.as_deref());
                ("overlay", parts)
            }
            _ => return Err(SqlError::unsupported(format!("the expression \"{e}\""))),
        };
        let mut bound = Vec::with_capacity(parts.len());
        for p in parts {
            bound.push(self.expr_in(scope, p, aggs)?);
        }
        self.call_bound(name, bound)
    }
}

/// overlay(x PLACING y FROM s [FOR n]): x's first s - 1 characters (or bytes),
/// y, and x from s + n on (n is y's length if not given).
fn overlay(vals: &[Datum]) -> SqlResult<Datum> {
    let sp = int(&vals[2]);
    let bytea = matches!(vals[0], Datum::Bytea(_));
    let len = |d: &Datum| match d {
        Datum::Bytea(b) => b.len() as i64,
        d => str_of(d).chars().count() as i64,
    };
    let sl = vals.get(3).map_or_else(|| len(&vals[1]), int);
    let after = sp + sl;
    if after > i64::from(i32::MAX) || after < i64::from(i32::MIN) {
        return Err(SqlError::new("22011", "integer out of range"));
    }
    if sp - 1 < 0 {
        return Err(SqlError::new(
            "22011",
            "negative substring length not allowed",
        ));
    }
    let head = (sp - 1) as usize;
    let tail = (after.max(1) - 1) as usize;
    if bytea {
        let (x, y) = (bytes(&vals[0]), bytes(&vals[1]));
        let mut out = x[..head.min(x.len())].to_vec();
        out.extend_from_slice(y);
        out.extend_from_slice(&x[tail.min(x.len())..]);
        return Ok(Datum::Bytea(out));
    }
    let x = str_of(&vals[0]);
    let mut out: String = x.chars().take(head).collect();
    out.push_str(str_of(&vals[1]));
    out.extend(x.chars().skip(tail));
    Ok(Datum::Text(out))
}

fn unicode_err(msg: String) -> SqlError {
    SqlError::new("42601", msg)
}

/// `n` hex digits at `b[i..]`, if they are.
fn hex_n(b: &[u8], i: usize, n: usize) -> Option<u32> {
    let d = b.get(i..i + n)?;
    if !d.iter().all(u8::is_ascii_hexdigit) {
        return None;
    }
    u32::from_str_radix(std::str::from_utf8(d).ok()?, 16).ok()
}

/// unistr: \XXXX, \+XXXXXX, \uXXXX, \UXXXXXXXX and \\ (UTF-16 surrogate pairs
/// joined), as PostgreSQL's.
fn unistr(s: &str) -> SqlResult<String> {
    let b = s.as_bytes();
    let mut out = String::with_capacity(s.len());
    let mut pair_first = 0u32;
    let bad_pair = || unicode_err("invalid Unicode surrogate pair".into());
    let mut i = 0;
    while i < b.len() {
        if b[i] != b'\\' {
            if pair_first != 0 {
                return Err(bad_pair());
            }
            let c = s[i..].chars().next().expect("a character");
            out.push(c);
            i += c.len_utf8();
            continue;
        }
        if b.get(i + 1) == Some(&b'\\') {
            out.push('\\');
            i += 2;
            continue;
        }
        let (u, skip) = if let Some(u) = hex_n(b, i + 1, 4) {
            (u, 5)
        } else if let (Some(b'u'), Some(u)) = (b.get(i + 1), hex_n(b, i + 2, 4)) {
            (u, 6)
        } else if let (Some(b'+'), Some(u)) = (b.get(i + 1), hex_n(b, i + 2, 6)) {
            (u, 8)
        } else if let (Some(b'U'), Some(u)) = (b.get(i + 1), hex_n(b, i + 2, 8)) {
            (u, 10)
        } else {
            return Err(unicode_err("invalid Unicode escape".into())
                .with_hint("Unicode escapes must be \\XXXX, \\+XXXXXX, \\uXXXX, or \\UXXXXXXXX."));
        };
        if u == 0 || u > 0x10ffff {
            return Err(invalid(format!("invalid Unicode code point: {u:04X}")));
        }
        i += skip;
        match u {
            0xd800..=0xdbff if pair_first != 0 => return Err(bad_pair()),
            0xd800..=0xdbff => pair_first = u,
            0xdc00..=0xdfff if pair_first == 0 => return Err(bad_pair()),
            0xdc00..=0xdfff => {
                let c = 0x10000 + ((pair_first - 0xd800) << 10) + (u - 0xdc00);
                out.push(char::from_u32(c).ok_or_else(bad_pair)?);
                pair_first = 0;
            }
            _ if pair_first != 0 => return Err(bad_pair()),
            _ => out.push(char::from_u32(u).ok_or_else(bad_pair)?),
        }
    }
    if pair_first != 0 {
        return Err(bad_pair());
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    //! Each expected value is PostgreSQL 15's, pasted from psql (the query above
    //! each test; errors as "ERROR <SQLSTATE>: <message>", NULL as "<NULL>").
    use super::StrFn::*;
    use super::*;

    fn tx(s: &str) -> Datum {
        Datum::Text(s.to_string())
    }

    fn by(h: &str) -> Datum {
        Datum::Bytea(hex_decode(h).expect("hex"))
    }

    fn check(f: StrFn, args: Vec<Datum>, want: &str) {
        let got = match eval(f, SqlType::Text, &args) {
            Ok(d) => d.to_text().unwrap_or_else(|| "<NULL>".into()),
            Err(e) => format!("ERROR {}: {}", e.code, e.message),
        };
        assert_eq!(got, want, "{f:?}{args:?}");
    }

    #[test]
    fn names_are_sql_names() {
        assert_eq!(SplitPart.name(), "split_part");
        assert_eq!(RegexpSubstr.name(), "regexp_substr");
        assert_eq!(Unistr.name(), "unistr");
    }

    /// `select regexp_replace('foobarrbazz', E'(.)\\1', E'X\\&Y', 'g')`
    /// (a backreference: fancy-regex).
    #[test]
    fn regexp_replace_backreference() {
        let a = |r: &str, fl: Option<&str>| {
            let mut v = vec![tx("foobarrbazz"), tx("(.)\\1"), tx(r)];
            v.extend(fl.map(tx));
            v
        };
        check(RegexpReplace, a("X\\&Y", Some("g")), "fXooYbaXrrYbaXzzY");
        check(RegexpReplace, a("X\\\\Y", Some("g")), "fX\\YbaX\\YbaX\\Y");
        check(RegexpReplace, a("X\\Y\\1Z\\", None), "fX\\YoZ\\barrbazz");
    }

    /// `select regexp_instr('abc', 'b', 1, 1, 0, '', 1)`: without groups, the
    /// match is group 1.
    #[test]
    fn regexp_instr_no_groups() {
        let v = vec![tx("abc"), tx("b"), Datum::Int4(1), Datum::Int4(1)];
        let mut w = v.clone();
        w.extend([Datum::Int4(0), tx(""), Datum::Int4(1)]);
        check(RegexpInstr, w, "2");
        let mut w = v;
        w.extend([Datum::Int4(0), tx(""), Datum::Int4(2)]);
        check(RegexpInstr, w, "0");
    }

    /// `select quote_literal(true), quote_nullable(false)`: the cast to text.
    #[test]
    fn quote_boolean() {
        check(QuoteLiteral, vec![Datum::Bool(true)], "'true'");
        check(QuoteNullable, vec![Datum::Bool(false)], "'false'");
    }

    /// `select regexp_replace('abc', 'b', 'x', '1')`
    #[test]
    fn regexp_replace_digit_flag() {
        let v = vec![tx("abc"), tx("b"), tx("x"), tx("1")];
        check(
            RegexpReplace,
            v,
            "ERROR 22023: invalid regular expression option: \"1\"",
        );
    }

    #[test]
    fn keywords_are_sorted() {
        for list in [RESERVED_KEYWORDS, COL_NAME_KEYWORDS] {
            assert!(list.windows(2).all(|w| w[0] < w[1]));
        }
    }

    /// `select split_part(E'a,b,c', E',', 2)`
    #[test]
    fn split_part_1() {
        check(SplitPart, vec![tx("a,b,c"), tx(","), Datum::Int4(2)], "b");
    }

    /// `select split_part(E'a,b,c', E',', -1)`
    #[test]
    fn split_part_2() {
        check(SplitPart, vec![tx("a,b,c"), tx(","), Datum::Int4(-1)], "c");
    }

    /// `select split_part(E'a,b,c', E',', -4)`
    #[test]
    fn split_part_3() {
        check(SplitPart, vec![tx("a,b,c"), tx(","), Datum::Int4(-4)], "");
    }

    /// `select split_part(E'a,b,c', E',', 0)`
    #[test]
    fn split_part_4() {
        check(
            SplitPart,
            vec![tx("a,b,c"), tx(","), Datum::Int4(0)],
            "ERROR 22023: field position must not be zero",
        );
    }

    /// `select split_part(E'abc', E'', 1)`
    #[test]
    fn split_part_5() {
        check(SplitPart, vec![tx("abc"), tx(""), Datum::Int4(1)], "abc");
    }

    /// `select split_part(E'abc', E'', 2)`
    #[test]
    fn split_part_6() {
        check(SplitPart, vec![tx("abc"), tx(""), Datum::Int4(2)], "");
    }

    /// `select split_part(E'', E'@', 1)`
    #[test]
    fn split_part_7() {
        check(SplitPart, vec![tx(""), tx("@"), Datum::Int4(1)], "");
    }

    /// `select split_part(E'@joeuser@mydatabase@', E'@', -2)`
    #[test]
    fn split_part_8() {
        check(
            SplitPart,
            vec![tx("@joeuser@mydatabase@"), tx("@"), Datum::Int4(-2)],
            "mydatabase",
        );
    }

    /// `select strpos(E'abcdef', E'cd')`
    #[test]
    fn strpos_1() {
        check(Strpos, vec![tx("abcdef"), tx("cd")], "3");
    }

    /// `select strpos(E'abcdef', E'')`
    #[test]
    fn strpos_2() {
        check(Strpos, vec![tx("abcdef"), tx("")], "1");
    }

    /// `select strpos(E'日本語', E'語')`
    #[test]
    fn strpos_3() {
        check(Strpos, vec![tx("日本語"), tx("語")], "3");
    }

    /// `select replace(E'yabadabadoo', E'ba', E'123')`
    #[test]
    fn replace_1() {
        check(
            Replace,
            vec![tx("yabadabadoo"), tx("ba"), tx("123")],
            "ya123da123doo",
        );
    }

    /// `select replace(E'abc', E'', E'x')`
    #[test]
    fn replace_2() {
        check(Replace, vec![tx("abc"), tx(""), tx("x")], "abc");
    }

    /// `select translate(E'12345', E'134', E'a')`
    #[test]
    fn translate_1() {
        check(Translate, vec![tx("12345"), tx("134"), tx("a")], "a25");
    }

    /// `select translate(E'abc', E'aa', E'xy')`
    #[test]
    fn translate_2() {
        check(Translate, vec![tx("abc"), tx("aa"), tx("xy")], "xbc");
    }

    /// `select btrim(E'  x  ')`
    #[test]
    fn btrim_1() {
        check(Btrim, vec![tx("  x  ")], "x");
    }

    /// `select btrim(E'xyxabcxyx', E'xy')`
    #[test]
    fn btrim_2() {
        check(Btrim, vec![tx("xyxabcxyx"), tx("xy")], "abc");
    }

    /// `select ltrim(E'zzzytrim', E'xyz')`
    #[test]
    fn ltrim_1() {
        check(Ltrim, vec![tx("zzzytrim"), tx("xyz")], "trim");
    }

    /// `select rtrim(E'abcxx', E'x')`
    #[test]
    fn rtrim_1() {
        check(Rtrim, vec![tx("abcxx"), tx("x")], "abc");
    }

    /// `select btrim('\x007472696d00'::bytea, '\x00'::bytea)`
    #[test]
    fn btrim_3() {
        check(Btrim, vec![by("007472696d00"), by("00")], "\\x7472696d");
    }

    /// `select ltrim('\x000102'::bytea, '\x00'::bytea)`
    #[test]
    fn ltrim_2() {
        check(Ltrim, vec![by("000102"), by("00")], "\\x0102");
    }

    /// `select lpad(E'hi', 5, E'xy')`
    #[test]
    fn lpad_1() {
        check(Lpad, vec![tx("hi"), Datum::Int4(5), tx("xy")], "xyxhi");
    }

    /// `select lpad(E'hi', 5)`
    #[test]
    fn lpad_2() {
        check(Lpad, vec![tx("hi"), Datum::Int4(5)], "   hi");
    }

    /// `select lpad(E'hello', 2)`
    #[test]
    fn lpad_3() {
        check(Lpad, vec![tx("hello"), Datum::Int4(2)], "he");
    }

    /// `select lpad(E'hi', -5, E'xy')`
    #[test]
    fn lpad_4() {
        check(Lpad, vec![tx("hi"), Datum::Int4(-5), tx("xy")], "");
    }

    /// `select lpad(E'hi', 5, E'')`
    #[test]
    fn lpad_5() {
        check(Lpad, vec![tx("hi"), Datum::Int4(5), tx("")], "hi");
    }

    /// `select rpad(E'hi', 5, E'xy')`
    #[test]
    fn rpad_1() {
        check(Rpad, vec![tx("hi"), Datum::Int4(5), tx("xy")], "hixyx");
    }

    /// `select rpad(E'日本', 5, E'語')`
    #[test]
    fn rpad_2() {
        check(
            Rpad,
            vec![tx("日本"), Datum::Int4(5), tx("語")],
            "日本語語語",
        );
    }

    /// `select left(E'abcde', 2)`
    #[test]
    fn left_1() {
        check(Left, vec![tx("abcde"), Datum::Int4(2)], "ab");
    }

    /// `select left(E'abcde', -2)`
    #[test]
    fn left_2() {
        check(Left, vec![tx("abcde"), Datum::Int4(-2)], "abc");
    }

    /// `select right(E'abcde', 2)`
    #[test]
    fn right_1() {
        check(Right, vec![tx("abcde"), Datum::Int4(2)], "de");
    }

    /// `select right(E'abcde', -2)`
    #[test]
    fn right_2() {
        check(Right, vec![tx("abcde"), Datum::Int4(-2)], "cde");
    }

    /// `select right(E'abcde', -10)`
    #[test]
    fn right_3() {
        check(Right, vec![tx("abcde"), Datum::Int4(-10)], "");
    }

    /// `select reverse(E'aé日x')`
    #[test]
    fn reverse_1() {
        check(Reverse, vec![tx("aé日x")], "x日éa");
    }

    /// `select initcap(E'hi THOMAS o''neil 3rd-x')`
    #[test]
    fn initcap_1() {
        check(
            Initcap,
            vec![tx("hi THOMAS o'neil 3rd-x")],
            "Hi Thomas O'Neil 3rd-X",
        );
    }

    /// `select initcap(E'élan VITAL')`
    #[test]
    fn initcap_2() {
        check(Initcap, vec![tx("élan VITAL")], "Élan Vital");
    }

    /// `select chr(65)`
    #[test]
    fn chr_1() {
        check(Chr, vec![Datum::Int4(65)], "A");
    }

    /// `select chr(0)`
    #[test]
    fn chr_2() {
        check(
            Chr,
            vec![Datum::Int4(0)],
            "ERROR 54000: null character not permitted",
        );
    }

    /// `select chr(-1)`
    #[test]
    fn chr_3() {
        check(
            Chr,
            vec![Datum::Int4(-1)],
            "ERROR 22023: character number must be positive",
        );
    }

    /// `select chr(1114112)`
    #[test]
    fn chr_4() {
        check(
            Chr,
            vec![Datum::Int4(1114112)],
            "ERROR 54000: requested character too large for encoding: 1114112",
        );
    }

    /// `select chr(55296)`
    #[test]
    fn chr_5() {
        check(
            Chr,
            vec![Datum::Int4(55296)],
            "ERROR 54000: requested character not valid for encoding: 55296",
        );
    }

    /// `select chr(26085)`
    #[test]
    fn chr_6() {
        check(Chr, vec![Datum::Int4(26085)], "日");
    }

    /// `select ascii(E'x')`
    #[test]
    fn ascii_1() {
        check(Ascii, vec![tx("x")], "120");
    }

    /// `select ascii(E'')`
    #[test]
    fn ascii_2() {
        check(Ascii, vec![tx("")], "0");
    }

    /// `select ascii(E'é')`
    #[test]
    fn ascii_3() {
        check(Ascii, vec![tx("é")], "233");
    }

    /// `select starts_with(E'alphabet', E'alph')`
    #[test]
    fn starts_with_1() {
        check(StartsWith, vec![tx("alphabet"), tx("alph")], "t");
    }

    /// `select starts_with(E'alphabet', E'bet')`
    #[test]
    fn starts_with_2() {
        check(StartsWith, vec![tx("alphabet"), tx("bet")], "f");
    }

    /// `select md5(E'abc')`
    #[test]
    fn md5_1() {
        check(Md5, vec![tx("abc")], "900150983cd24fb0d6963f7d28e17f72");
    }

    /// `select md5('\x00ff'::bytea)`
    #[test]
    fn md5_2() {
        check(Md5, vec![by("00ff")], "d07d34efac6328007ad67c7e0a985e00");
    }

    /// `select sha224('\x'::bytea)`
    #[test]
    fn sha224_1() {
        check(
            Sha224,
            vec![by("")],
            "\\xd14a028c2a3a2bc9476102bb288234c415a2b01f828ea62ac5b3e42f",
        );
    }

    /// `select sha256('\x616263'::bytea)`
    #[test]
    fn sha256_1() {
        check(
            Sha256,
            vec![by("616263")],
            "\\xba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad",
        );
    }

    /// `select sha384('\x616263'::bytea)`
    #[test]
    fn sha384_1() {
        check(Sha384, vec![by("616263")], "\\xcb00753f45a35e8bb5a03d699ac65007272c32ab0eded1631a8b605a43ff5bed8086072ba1e7cc2358baeca134c825a7");
    }

    /// `select sha512('\x'::bytea)`
    #[test]
    fn sha512_1() {
        check(Sha512, vec![by("")], "\\xcf83e1357eefb8bdf1542850d66d8007d620e4050b5715dc83f4a921d36ce9ce47d0d13c5d85f2b0ff8318d2877eec2f63b931bd47417a81a538327af927da3e");
    }

    /// `select encode('\x1234567890abcdef00'::bytea, E'hex')`
    #[test]
    fn encode_1() {
        check(
            Encode,
            vec![by("1234567890abcdef00"), tx("hex")],
            "1234567890abcdef00",
        );
    }

    /// `select encode('\x1234567890abcdef00'::bytea, E'escape')`
    #[test]
    fn encode_2() {
        check(
            Encode,
            vec![by("1234567890abcdef00"), tx("escape")],
            "4Vx\\220\\253\\315\\357\\000",
        );
    }

    /// `select encode('\x615c6280'::bytea, E'escape')`
    #[test]
    fn encode_3() {
        check(Encode, vec![by("615c6280"), tx("escape")], "a\\\\b\\200");
    }

    /// `select encode('\x61626364'::bytea, E'base64')`
    #[test]
    fn encode_4() {
        check(Encode, vec![by("61626364"), tx("base64")], "YWJjZA==");
    }

    /// `select encode('\x616161616161616161616161616161616161616161616161616161616161616161616161616161616161616161616161616161616161616161'::bytea, E'base64')`
    #[test]
    fn encode_5() {
        check(Encode, vec![by("616161616161616161616161616161616161616161616161616161616161616161616161616161616161616161616161616161616161616161"), tx("base64")], "YWFhYWFhYWFhYWFhYWFhYWFhYWFhYWFhYWFhYWFhYWFhYWFhYWFhYWFhYWFhYWFhYWFhYWFhYWFh\n");
    }

    /// `select encode('\x616161616161616161616161616161616161616161616161616161616161616161616161616161616161616161616161616161616161616161616161'::bytea, E'base64')`
    #[test]
    fn encode_6() {
        check(Encode, vec![by("616161616161616161616161616161616161616161616161616161616161616161616161616161616161616161616161616161616161616161616161"), tx("base64")], "YWFhYWFhYWFhYWFhYWFhYWFhYWFhYWFhYWFhYWFhYWFhYWFhYWFhYWFhYWFhYWFhYWFhYWFhYWFh\nYWFh");
    }

    /// `select encode('\x616263'::bytea, E'foo')`
    #[test]
    fn encode_7() {
        check(
            Encode,
            vec![by("616263"), tx("foo")],
            "ERROR 22023: unrecognized encoding: \"foo\"",
        );
    }

    /// `select decode(E'1234 567890abcdef00', E'hex')`
    #[test]
    fn decode_1() {
        check(
            Decode,
            vec![tx("1234 567890abcdef00"), tx("hex")],
            "\\x1234567890abcdef00",
        );
    }

    /// `select decode(E'abc', E'hex')`
    #[test]
    fn decode_2() {
        check(
            Decode,
            vec![tx("abc"), tx("hex")],
            "ERROR 22023: invalid hexadecimal data: odd number of digits",
        );
    }

    /// `select decode(E'zz', E'hex')`
    #[test]
    fn decode_3() {
        check(
            Decode,
            vec![tx("zz"), tx("hex")],
            "ERROR 22023: invalid hexadecimal digit: \"z\"",
        );
    }

    /// `select decode(E'YWJj\nZA==', E'base64')`
    #[test]
    fn decode_4() {
        check(Decode, vec![tx("YWJj\nZA=="), tx("base64")], "\\x61626364");
    }

    /// `select decode(E'YQ=', E'base64')`
    #[test]
    fn decode_5() {
        check(
            Decode,
            vec![tx("YQ="), tx("base64")],
            "ERROR 22023: invalid base64 end sequence",
        );
    }

    /// `select decode(E'=YQ', E'base64')`
    #[test]
    fn decode_6() {
        check(
            Decode,
            vec![tx("=YQ"), tx("base64")],
            "ERROR 22023: unexpected \"=\" while decoding base64 sequence",
        );
    }

    /// `select decode(E'Y!Q=', E'base64')`
    #[test]
    fn decode_7() {
        check(
            Decode,
            vec![tx("Y!Q="), tx("base64")],
            "ERROR 22023: invalid symbol \"!\" found while decoding base64 sequence",
        );
    }

    /// `select decode(E'a\\\\b\\101', E'escape')`
    #[test]
    fn decode_8() {
        check(Decode, vec![tx("a\\\\b\\101"), tx("escape")], "\\x615c6241");
    }

    /// `select decode(E'a\\b', E'escape')`
    #[test]
    fn decode_9() {
        check(
            Decode,
            vec![tx("a\\b"), tx("escape")],
            "ERROR 22P02: invalid input syntax for type bytea",
        );
    }

    /// `select decode(E'x', E'ESCAPE')`
    #[test]
    fn decode_10() {
        check(Decode, vec![tx("x"), tx("ESCAPE")], "\\x78");
    }

    /// `select to_hex(16777215)`
    #[test]
    fn to_hex_1() {
        check(ToHex, vec![Datum::Int4(16777215)], "ffffff");
    }

    /// `select to_hex(-1)`
    #[test]
    fn to_hex_2() {
        check(ToHex, vec![Datum::Int4(-1)], "ffffffff");
    }

    /// `select to_hex(-1::int8)`
    #[test]
    fn to_hex_3() {
        check(ToHex, vec![Datum::Int8(-1)], "ffffffffffffffff");
    }

    /// `select to_hex(4294967295::int8)`
    #[test]
    fn to_hex_4() {
        check(ToHex, vec![Datum::Int8(4294967295)], "ffffffff");
    }

    /// `select quote_ident(E'foo')`
    #[test]
    fn quote_ident_1() {
        check(QuoteIdent, vec![tx("foo")], "foo");
    }

    /// `select quote_ident(E'Foo bar')`
    #[test]
    fn quote_ident_2() {
        check(QuoteIdent, vec![tx("Foo bar")], "\"Foo bar\"");
    }

    /// `select quote_ident(E'select')`
    #[test]
    fn quote_ident_3() {
        check(QuoteIdent, vec![tx("select")], "\"select\"");
    }

    /// `select quote_ident(E'name')`
    #[test]
    fn quote_ident_4() {
        check(QuoteIdent, vec![tx("name")], "name");
    }

    /// `select quote_ident(E'a"b')`
    #[test]
    fn quote_ident_5() {
        check(QuoteIdent, vec![tx("a\"b")], "\"a\"\"b\"");
    }

    /// `select quote_ident(E'')`
    #[test]
    fn quote_ident_6() {
        check(QuoteIdent, vec![tx("")], "\"\"");
    }

    /// `select quote_literal(E'O''Reilly')`
    #[test]
    fn quote_literal_1() {
        check(QuoteLiteral, vec![tx("O'Reilly")], "'O''Reilly'");
    }

    /// `select quote_literal(E'a\\b')`
    #[test]
    fn quote_literal_2() {
        check(QuoteLiteral, vec![tx("a\\b")], "E'a\\\\b'");
    }

    /// `select quote_literal(42)`
    #[test]
    fn quote_literal_3() {
        check(QuoteLiteral, vec![Datum::Int4(42)], "'42'");
    }

    /// `select quote_nullable(NULL)`
    #[test]
    fn quote_nullable_1() {
        check(QuoteNullable, vec![Datum::Null], "NULL");
    }

    /// `select quote_nullable(E'x')`
    #[test]
    fn quote_nullable_2() {
        check(QuoteNullable, vec![tx("x")], "'x'");
    }

    /// `select concat(E'a', 1, NULL, E'b')`
    #[test]
    fn concat_1() {
        check(
            Concat,
            vec![tx("a"), Datum::Int4(1), Datum::Null, tx("b")],
            "a1b",
        );
    }

    /// `select concat_ws(E',', E'a', NULL, 2)`
    #[test]
    fn concat_ws_1() {
        check(
            ConcatWs,
            vec![tx(","), tx("a"), Datum::Null, Datum::Int4(2)],
            "a,2",
        );
    }

    /// `select format(E'Hello %s, %1$s', E'World')`
    #[test]
    fn format_1() {
        check(
            Format,
            vec![tx("Hello %s, %1$s"), tx("World")],
            "Hello World, World",
        );
    }

    /// `select format(E'%s %s', E'a')`
    #[test]
    fn format_2() {
        check(
            Format,
            vec![tx("%s %s"), tx("a")],
            "ERROR 22023: too few arguments for format()",
        );
    }

    /// `select format(E'%-5s|%5s|', E'a', E'b')`
    #[test]
    fn format_3() {
        check(
            Format,
            vec![tx("%-5s|%5s|"), tx("a"), tx("b")],
            "a    |    b|",
        );
    }

    /// `select format(E'%*s|', 4, E'a')`
    #[test]
    fn format_4() {
        check(Format, vec![tx("%*s|"), Datum::Int4(4), tx("a")], "   a|");
    }

    /// `select format(E'%*s|', -4, E'a')`
    #[test]
    fn format_5() {
        check(Format, vec![tx("%*s|"), Datum::Int4(-4), tx("a")], "a   |");
    }

    /// `select format(E'%1$*2$s|', E'a', 3)`
    #[test]
    fn format_6() {
        check(
            Format,
            vec![tx("%1$*2$s|"), tx("a"), Datum::Int4(3)],
            "  a|",
        );
    }

    /// `select format(E'%I %L %L', E'Some Table', E'O''Reilly', NULL)`
    #[test]
    fn format_7() {
        check(
            Format,
            vec![
                tx("%I %L %L"),
                tx("Some Table"),
                tx("O'Reilly"),
                Datum::Null,
            ],
            "\"Some Table\" 'O''Reilly' NULL",
        );
    }

    /// `select format(E'%I', NULL)`
    #[test]
    fn format_8() {
        check(
            Format,
            vec![tx("%I"), Datum::Null],
            "ERROR 22004: null values cannot be formatted as an SQL identifier",
        );
    }

    /// `select format(E'%s|%%', NULL)`
    #[test]
    fn format_9() {
        check(Format, vec![tx("%s|%%"), Datum::Null], "|%");
    }

    /// `select format(E'%z', 1)`
    #[test]
    fn format_10() {
        check(
            Format,
            vec![tx("%z"), Datum::Int4(1)],
            "ERROR 22023: unrecognized format() type specifier \"z\"",
        );
    }

    /// `select format(E'abc %')`
    #[test]
    fn format_11() {
        check(
            Format,
            vec![tx("abc %")],
            "ERROR 22023: unterminated format() type specifier",
        );
    }

    /// `select format(E'%0$s', 1)`
    #[test]
    fn format_12() {
        check(
            Format,
            vec![tx("%0$s"), Datum::Int4(1)],
            "ERROR 22023: format specifies argument 0, but arguments are numbered from 1",
        );
    }

    /// `select format(E'%*1s', 1)`
    #[test]
    fn format_13() {
        check(
            Format,
            vec![tx("%*1s"), Datum::Int4(1)],
            "ERROR 22023: width argument position must be ended by \"$\"",
        );
    }

    /// `select octet_length(E'日本')`
    #[test]
    fn octet_length_1() {
        check(OctetLength, vec![tx("日本")], "6");
    }

    /// `select bit_length(E'abc')`
    #[test]
    fn bit_length_1() {
        check(BitLength, vec![tx("abc")], "24");
    }

    /// `select octet_length('\x0102'::bytea)`
    #[test]
    fn octet_length_2() {
        check(OctetLength, vec![by("0102")], "2");
    }

    /// `select character_length(E'日本')`
    #[test]
    fn character_length_1() {
        check(CharLength, vec![tx("日本")], "2");
    }

    /// `select regexp_replace(E'1112223333', E'(\\d{3})(\\d{3})(\\d{4})', E'(\\1) \\2-\\3')`
    #[test]
    fn regexp_replace_1() {
        check(
            RegexpReplace,
            vec![
                tx("1112223333"),
                tx("(\\d{3})(\\d{3})(\\d{4})"),
                tx("(\\1) \\2-\\3"),
            ],
            "(111) 222-3333",
        );
    }

    /// `select regexp_replace(E'AAA aaa', E'A+', E'Z', E'gi')`
    #[test]
    fn regexp_replace_2() {
        check(
            RegexpReplace,
            vec![tx("AAA aaa"), tx("A+"), tx("Z"), tx("gi")],
            "Z Z",
        );
    }

    /// `select regexp_replace(E'AAA', E'^|$', E'Z', E'g')`
    #[test]
    fn regexp_replace_3() {
        check(
            RegexpReplace,
            vec![tx("AAA"), tx("^|$"), tx("Z"), tx("g")],
            "ZAAAZ",
        );
    }

    /// `select regexp_replace(E'baaac', E'a*', E'-', E'g')`
    #[test]
    fn regexp_replace_4() {
        check(
            RegexpReplace,
            vec![tx("baaac"), tx("a*"), tx("-"), tx("g")],
            "-b--c-",
        );
    }

    /// `select regexp_replace(E'abc', E'b', E'x\\')`
    #[test]
    fn regexp_replace_5() {
        check(RegexpReplace, vec![tx("abc"), tx("b"), tx("x\\")], "ax\\c");
    }

    /// `select regexp_replace(E'AAA aaa', E'A+', E'Z', E'z')`
    #[test]
    fn regexp_replace_6() {
        check(
            RegexpReplace,
            vec![tx("AAA aaa"), tx("A+"), tx("Z"), tx("z")],
            "ERROR 22023: invalid regular expression option: \"z\"",
        );
    }

    /// `select regexp_replace(E'A PostgreSQL function', E'a|e|i|o|u', E'X', 1, 2, E'i')`
    #[test]
    fn regexp_replace_7() {
        check(
            RegexpReplace,
            vec![
                tx("A PostgreSQL function"),
                tx("a|e|i|o|u"),
                tx("X"),
                Datum::Int4(1),
                Datum::Int4(2),
                tx("i"),
            ],
            "A PXstgreSQL function",
        );
    }

    /// `select regexp_replace(E'A PostgreSQL function', E'A|e|i|o|u', E'X', 7, 0, E'i')`
    #[test]
    fn regexp_replace_8() {
        check(
            RegexpReplace,
            vec![
                tx("A PostgreSQL function"),
                tx("A|e|i|o|u"),
                tx("X"),
                Datum::Int4(7),
                Datum::Int4(0),
                tx("i"),
            ],
            "A PostgrXSQL fXnctXXn",
        );
    }

    /// `select regexp_replace(E'A PostgreSQL function', E'a|e|i|o|u', E'X', -1, 0, E'i')`
    #[test]
    fn regexp_replace_9() {
        check(
            RegexpReplace,
            vec![
                tx("A PostgreSQL function"),
                tx("a|e|i|o|u"),
                tx("X"),
                Datum::Int4(-1),
                Datum::Int4(0),
                tx("i"),
            ],
            "ERROR 22023: invalid value for parameter \"start\": -1",
        );
    }

    /// `select regexp_replace(E'hello world', E'\\mw', E'W')`
    #[test]
    fn regexp_replace_10() {
        check(
            RegexpReplace,
            vec![tx("hello world"), tx("\\mw"), tx("W")],
            "hello World",
        );
    }

    /// `select regexp_count(E'123123123123123', E'(12)3')`
    #[test]
    fn regexp_count_1() {
        check(RegexpCount, vec![tx("123123123123123"), tx("(12)3")], "5");
    }

    /// `select regexp_count(E'ABCABCABCABC', E'Abc', 1, E'i')`
    #[test]
    fn regexp_count_2() {
        check(
            RegexpCount,
            vec![tx("ABCABCABCABC"), tx("Abc"), Datum::Int4(1), tx("i")],
            "4",
        );
    }

    /// `select regexp_count(E'123123123123', E'123', 0)`
    #[test]
    fn regexp_count_3() {
        check(
            RegexpCount,
            vec![tx("123123123123"), tx("123"), Datum::Int4(0)],
            "ERROR 22023: invalid value for parameter \"start\": 0",
        );
    }

    /// `select regexp_count(E'abc', E'', 4)`
    #[test]
    fn regexp_count_4() {
        check(RegexpCount, vec![tx("abc"), tx(""), Datum::Int4(4)], "1");
    }

    /// `select regexp_like(E'Steven', E'^Ste(v|ph)en$')`
    #[test]
    fn regexp_like_1() {
        check(RegexpLike, vec![tx("Steven"), tx("^Ste(v|ph)en$")], "t");
    }

    /// `select regexp_like(E'a\nd', E'a.d', E'n')`
    #[test]
    fn regexp_like_2() {
        check(RegexpLike, vec![tx("a\nd"), tx("a.d"), tx("n")], "f");
    }

    /// `select regexp_like(E'a\nd', E'a.d')`
    #[test]
    fn regexp_like_3() {
        check(RegexpLike, vec![tx("a\nd"), tx("a.d")], "t");
    }

    /// `select regexp_like(E'abc', E' a . c ', E'x')`
    #[test]
    fn regexp_like_4() {
        check(RegexpLike, vec![tx("abc"), tx(" a . c "), tx("x")], "t");
    }

    /// `select regexp_like(E'abc', E'a.c', E'g')`
    #[test]
    fn regexp_like_5() {
        check(
            RegexpLike,
            vec![tx("abc"), tx("a.c"), tx("g")],
            "ERROR 22023: regexp_like() does not support the \"global\" option",
        );
    }

    /// `select regexp_instr(E'abcabcabc', E'A.C', 1, 2, 0, E'i')`
    #[test]
    fn regexp_instr_1() {
        check(
            RegexpInstr,
            vec![
                tx("abcabcabc"),
                tx("A.C"),
                Datum::Int4(1),
                Datum::Int4(2),
                Datum::Int4(0),
                tx("i"),
            ],
            "4",
        );
    }

    /// `select regexp_instr(E'1234567890', E'(123)(4(56)(78))', 1, 1, 1, E'i', 3)`
    #[test]
    fn regexp_instr_2() {
        check(
            RegexpInstr,
            vec![
                tx("1234567890"),
                tx("(123)(4(56)(78))"),
                Datum::Int4(1),
                Datum::Int4(1),
                Datum::Int4(1),
                tx("i"),
                Datum::Int4(3),
            ],
            "7",
        );
    }

    /// `select regexp_instr(E'abcabcabc', E'a.c', 1, 1, 2)`
    #[test]
    fn regexp_instr_3() {
        check(
            RegexpInstr,
            vec![
                tx("abcabcabc"),
                tx("a.c"),
                Datum::Int4(1),
                Datum::Int4(1),
                Datum::Int4(2),
            ],
            "ERROR 22023: invalid value for parameter \"endoption\": 2",
        );
    }

    /// `select regexp_instr(E'foo', E'foo(bar)?', 1, 1, 0, E'', 1)`
    #[test]
    fn regexp_instr_4() {
        check(
            RegexpInstr,
            vec![
                tx("foo"),
                tx("foo(bar)?"),
                Datum::Int4(1),
                Datum::Int4(1),
                Datum::Int4(0),
                tx(""),
                Datum::Int4(1),
            ],
            "0",
        );
    }

    /// `select regexp_substr(E'1234567890', E'(123)(4(56)(78))', 1, 1, E'i', 4)`
    #[test]
    fn regexp_substr_1() {
        check(
            RegexpSubstr,
            vec![
                tx("1234567890"),
                tx("(123)(4(56)(78))"),
                Datum::Int4(1),
                Datum::Int4(1),
                tx("i"),
                Datum::Int4(4),
            ],
            "78",
        );
    }

    /// `select regexp_substr(E'abcabcabc', E'a.c', 1, 4)`
    #[test]
    fn regexp_substr_2() {
        check(
            RegexpSubstr,
            vec![tx("abcabcabc"), tx("a.c"), Datum::Int4(1), Datum::Int4(4)],
            "<NULL>",
        );
    }

    /// `select regexp_substr(E'abcabcabc', E'a.c', 1, 0)`
    #[test]
    fn regexp_substr_3() {
        check(
            RegexpSubstr,
            vec![tx("abcabcabc"), tx("a.c"), Datum::Int4(1), Datum::Int4(0)],
            "ERROR 22023: invalid value for parameter \"n\": 0",
        );
    }

    /// `select overlay(E'abcdef', E'45', 4)`
    #[test]
    fn overlay_1() {
        check(
            Overlay,
            vec![tx("abcdef"), tx("45"), Datum::Int4(4)],
            "abc45f",
        );
    }

    /// `select overlay(E'babosa', E'ubb', 2, 4)`
    #[test]
    fn overlay_2() {
        check(
            Overlay,
            vec![tx("babosa"), tx("ubb"), Datum::Int4(2), Datum::Int4(4)],
            "bubba",
        );
    }

    /// `select overlay(E'abc', E'x', 0)`
    #[test]
    fn overlay_3() {
        check(
            Overlay,
            vec![tx("abc"), tx("x"), Datum::Int4(0)],
            "ERROR 22011: negative substring length not allowed",
        );
    }

    /// `select overlay('\x5468006f6d6173'::bytea, '\x0203'::bytea, 5, 3)`
    #[test]
    fn overlay_4() {
        check(
            Overlay,
            vec![
                by("5468006f6d6173"),
                by("0203"),
                Datum::Int4(5),
                Datum::Int4(3),
            ],
            "\\x5468006f0203",
        );
    }

    /// `select unistr(E'\\0064at\\+0000610')`
    #[test]
    fn unistr_1() {
        check(Unistr, vec![tx("\\0064at\\+0000610")], "data0");
    }

    /// `select unistr(E'd\\u0061t\\U000000610')`
    #[test]
    fn unistr_2() {
        check(Unistr, vec![tx("d\\u0061t\\U000000610")], "data0");
    }

    /// `select unistr(E'wrong: \\db99\\0061')`
    #[test]
    fn unistr_3() {
        check(
            Unistr,
            vec![tx("wrong: \\db99\\0061")],
            "ERROR 42601: invalid Unicode surrogate pair",
        );
    }

    /// `select unistr(E'wrong: \\+2FFFFF')`
    #[test]
    fn unistr_4() {
        check(
            Unistr,
            vec![tx("wrong: \\+2FFFFF")],
            "ERROR 22023: invalid Unicode code point: 2FFFFF",
        );
    }

    /// `select unistr(E'wrong: \\xyz')`
    #[test]
    fn unistr_5() {
        check(
            Unistr,
            vec![tx("wrong: \\xyz")],
            "ERROR 42601: invalid Unicode escape",
        );
    }

    /// `select unistr(E'\\d83d\\de00')`
    #[test]
    fn unistr_6() {
        check(Unistr, vec![tx("\\d83d\\de00")], "😀");
    }
}
