//! numeric's text forms, both ways, as PostgreSQL's numeric_in and numeric_out.

use super::{pow10, NumError, Numeric, Repr, MAX_INT_DIGITS, MAX_SCALE};
use num_bigint::BigInt;
use std::fmt;

impl Numeric {
    /// PostgreSQL's numeric_in: optional spaces, a sign, digits with at most one
    /// point, an exponent (`e-3`), spaces; or NaN, Infinity, inf (any case, signed
    /// but NaN). Syntax for anything else; Overflow past the limits.
    pub fn parse(text: &str) -> Result<Numeric, NumError> {
        let t = text.trim_matches(|c: char| c.is_ascii_whitespace());
        if t.eq_ignore_ascii_case("nan") {
            return Ok(Numeric::NAN);
        }
        let (neg, body) = match t.as_bytes().first() {
            Some(b'-') => (true, &t[1..]),
            Some(b'+') => (false, &t[1..]),
            _ => (false, t),
        };
        if body.eq_ignore_ascii_case("infinity") || body.eq_ignore_ascii_case("inf") {
            return Ok(if neg {
                Numeric::NEG_INFINITY
            } else {
                Numeric::INFINITY
            });
        }
        let (mantissa, exp) = match body.find(['e', 'E']) {
            Some(i) => (&body[..i], Some(&body[i + 1..])),
            None => (body, None),
        };
        let (int, frac) = mantissa.split_once('.').unwrap_or((mantissa, ""));
        let all_digits = |s: &str| s.bytes().all(|b| b.is_ascii_digit());
        if int.len() + frac.len() == 0 || !all_digits(int) || !all_digits(frac) {
            return Err(NumError::Syntax);
        }
        let exp = match exp {
            Some(e) => parse_exponent(e)?,
            None => 0,
        };
        build(neg, int, frac, exp)
    }
}

/// An exponent's digits (signed); Overflow when past ±INT_MAX/2 as PostgreSQL.
fn parse_exponent(e: &str) -> Result<i64, NumError> {
    let (neg, digits) = match e.as_bytes().first() {
        Some(b'-') => (true, &e[1..]),
        Some(b'+') => (false, &e[1..]),
        _ => (false, e),
    };
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return Err(NumError::Syntax);
    }
    let v: i64 = digits.parse().unwrap_or(i64::MAX);
    if v >= i64::from(i32::MAX / 2) {
        return Err(NumError::Overflow);
    }
    Ok(if neg { -v } else { v })
}

fn build(neg: bool, int: &str, frac: &str, exp: i64) -> Result<Numeric, NumError> {
    let digits = format!("{int}{frac}");
    let lead = digits.trim_start_matches('0');
    // Scale of the digits as written, after the exponent moves the point.
    let scale = frac.len() as i64 - exp;
    let dscale = scale.max(0);
    if dscale > i64::from(MAX_SCALE) {
        return Err(NumError::Overflow);
    }
    if !lead.is_empty() && lead.len() as i64 - scale > i64::from(MAX_INT_DIGITS) {
        return Err(NumError::Overflow);
    }
    if lead.len() <= 18 {
        let v: i64 = if lead.is_empty() {
            0
        } else {
            lead.parse().expect("digits")
        };
        let v = if neg { -v } else { v };
        if scale >= 0 {
            return Ok(Numeric::from_i64_scaled(v, scale as u16));
        }
        if let Some(v) = 10i64
            .checked_pow((-scale) as u32)
            .and_then(|p| v.checked_mul(p))
        {
            return Ok(Numeric::from_i64_scaled(v, 0));
        }
    }
    let mut m: BigInt = if lead.is_empty() {
        BigInt::from(0u8)
    } else {
        lead.parse().expect("digits")
    };
    if scale < 0 {
        m *= pow10((-scale) as u32);
    }
    if neg {
        m = -m;
    }
    Ok(Numeric::from_parts_unchecked(m, dscale as u32))
}

impl fmt::Display for Numeric {
    /// PostgreSQL's numeric_out: every digit of the display scale.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.0 {
            Repr::NaN => f.write_str("NaN"),
            Repr::PosInf => f.write_str("Infinity"),
            Repr::NegInf => f.write_str("-Infinity"),
            Repr::Small { m, scale: 0 } => write!(f, "{m}"),
            Repr::Small { m, scale } => {
                write_scaled(f, *m < 0, &m.unsigned_abs().to_string(), u32::from(*scale))
            }
            Repr::Big(b) => write_scaled(
                f,
                b.m.sign() == num_bigint::Sign::Minus,
                &b.m.magnitude().to_string(),
                u32::from(b.scale),
            ),
        }
    }
}

fn write_scaled(f: &mut fmt::Formatter<'_>, neg: bool, digits: &str, scale: u32) -> fmt::Result {
    if neg {
        f.write_str("-")?;
    }
    let scale = scale as usize;
    if scale == 0 {
        return f.write_str(digits);
    }
    if digits.len() > scale {
        let (i, d) = digits.split_at(digits.len() - scale);
        return write!(f, "{i}.{d}");
    }
    f.write_str("0.")?;
    for _ in digits.len()..scale {
        f.write_str("0")?;
    }
    f.write_str(digits)
}
