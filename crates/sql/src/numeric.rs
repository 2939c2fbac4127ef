//! The numeric tower: `smallint` < `integer` < `bigint` < `numeric` < `real` <
//! `double precision`, as PostgreSQL's implicit casts order them — text forms,
//! arithmetic, comparison and casts of `numeric` (an exact decimal) and the floats.
//!
//! Entry points: [`rank`], [`parse_numeric`], [`parse_float`], [`format_float`],
//! [`arith`], [`compare`], [`cast`].
//!
//! Rules (cited as "numeric rule N"):
//! 1. An operation on two ranked types is done in the higher-ranked one (an integer
//!    with a numeric in numeric, anything with a float in that float).
//! 2. `numeric` is PostgreSQL's ([`strata_types::Numeric`]): 131,072 digits before
//!    the point, 16,383 after, NaN and ±Infinity. Sums keep every digit, products
//!    their scales' sum, and a quotient gets PostgreSQL's result scale
//!    (`select_div_scale`), rounded half away from zero.
//! 3. Floats print as PostgreSQL 15 prints them (`extra_float_digits = 1`): the
//!    shortest text that reads back exactly, in exponent form past 15 digits (6 for
//!    `real`); NaN and ±Infinity are values. Float overflow is 22003, division by
//!    zero 22012, for every type.

use crate::bind::BinOp;
use crate::{Datum, SqlError, SqlResult, SqlType};
use std::cmp::Ordering;
use strata_types::{Float, NumError, Numeric};

/// A type's place in the tower (0: not a number).
pub fn rank(t: SqlType) -> u8 {
    match t {
        SqlType::Int2 => 1,
        SqlType::Int4 => 2,
        SqlType::Int8 => 3,
        SqlType::Numeric => 4,
        SqlType::Float4 => 5,
        SqlType::Float8 => 6,
        _ => 0,
    }
}

/// The higher-ranked of two number types (rule 1); `real` beside any other number
/// type is double precision, as PostgreSQL resolves it (its float4 operators take
/// float8 on the other side: `0.1::real = 0.1` is false).
pub fn wider(a: SqlType, b: SqlType) -> SqlType {
    if (a == SqlType::Float4) != (b == SqlType::Float4) && a.is_number() && b.is_number() {
        return SqlType::Float8;
    }
    if rank(a) >= rank(b) {
        a
    } else {
        b
    }
}

pub(crate) fn overflow() -> SqlError {
    SqlError::new("22003", "value overflows numeric format")
}

/// A numeric operation's error as PostgreSQL reports it.
pub(crate) fn num_err(e: NumError) -> SqlError {
    match e {
        NumError::Overflow => overflow(),
        NumError::DivisionByZero => division_by_zero(),
        NumError::Syntax => SqlError::new("22P02", "invalid input syntax for type numeric"),
        NumError::Other(code, msg) => SqlError::new(code, msg),
    }
}

/// A numeric's text (`1.50`, `-3`, `1e-3`, `NaN`, `-Infinity`): the value, 22003
/// past numeric's limits, `None` for text that is no number.
pub fn parse_numeric(s: &str) -> Option<SqlResult<Numeric>> {
    match Numeric::parse(s) {
        Ok(v) => Some(Ok(v)),
        Err(NumError::Syntax) => None,
        Err(e) => Some(Err(num_err(e))),
    }
}

/// A float's text: a number, or NaN, Infinity, inf (any case, signed); rounded
/// to `real` when `float4` (22003 out of its range).
pub fn parse_float(s: &str, float4: bool) -> Option<SqlResult<f64>> {
    let t = s.trim();
    let lower = t.to_ascii_lowercase();
    let unsigned = lower.trim_start_matches(['+', '-']);
    let special = match unsigned {
        "nan" => Some(f64::NAN),
        "infinity" | "inf" => Some(f64::INFINITY),
        _ => None,
    };
    let v = match special {
        Some(v) if lower.starts_with('-') => -v,
        Some(v) => v,
        None => {
            if !matches!(Numeric::parse(t), Ok(n) if n.is_finite()) {
                return None;
            }
            t.parse::<f64>().ok()?
        }
    };
    if float4 {
        let f = v as f32;
        if f.is_infinite() && v.is_finite() {
            return Some(Err(SqlError::new(
                "22003",
                format!("\"{t}\" is out of range for type real"),
            )));
        }
        return Some(Ok(f as f64));
    }
    if v.is_infinite() && !matches!(unsigned, "infinity" | "inf") {
        return Some(Err(SqlError::new(
            "22003",
            format!("\"{t}\" is out of range for type double precision"),
        )));
    }
    Some(Ok(v))
}

/// Rule 3: PostgreSQL's text of a float.
pub fn format_float_in(v: f64, float4: bool, extra_float_digits: i32) -> String {
    if extra_float_digits > 0 || !v.is_finite() {
        return format_float(v, float4);
    }
    // PostgreSQL's `%.*g` with FLT_DIG or DBL_DIG plus extra_float_digits.
    let digits = (if float4 { 6 } else { 15 }) + extra_float_digits;
    format_g(v, digits.max(1) as usize)
}

/// C's `%.{p}g`: `p` significant digits, scientific when the exponent is below
/// -4 or at least `p`, trailing zeros dropped, the exponent two digits at least.
fn format_g(v: f64, p: usize) -> String {
    let sci = format!("{:.*e}", p - 1, v);
    let (mantissa, exp) = sci.split_once('e').expect("{:e} has an exponent");
    let exp: i32 = exp.parse().expect("an integer exponent");
    let trim = |s: &str| -> String {
        if s.contains('.') {
            s.trim_end_matches('0').trim_end_matches('.').to_string()
        } else {
            s.to_string()
        }
    };
    if exp < -4 || exp >= p as i32 {
        let sign = if exp < 0 { '-' } else { '+' };
        return format!("{}e{sign}{:02}", trim(mantissa), exp.abs());
    }
    let decimals = (p as i32 - 1 - exp).max(0) as usize;
    trim(&format!("{:.*}", decimals, v))
}

/// A float's text with extra_float_digits above 0 (PostgreSQL 12's default of
/// 1): the shortest text that reads back as the same value.
pub fn format_float(v: f64, float4: bool) -> String {
    if v.is_nan() {
        return "NaN".into();
    }
    if v.is_infinite() {
        return if v > 0.0 { "Infinity" } else { "-Infinity" }.into();
    }
    let sci = if float4 {
        format!("{:e}", v as f32)
    } else {
        format!("{v:e}")
    };
    let (mantissa, exp) = sci.split_once('e').expect("{:e} has an exponent");
    let exp: i32 = exp.parse().expect("an integer exponent");
    let max_exp = if float4 { 6 } else { 15 };
    if exp < -4 || exp >= max_exp {
        let sign = if exp < 0 { '-' } else { '+' };
        return format!("{mantissa}e{sign}{:02}", exp.abs());
    }
    if float4 {
        format!("{}", v as f32)
    } else {
        format!("{v}")
    }
}

/// A value of the tower as the operation's type sees it.
enum Num {
    Int(i128),
    Dec(Numeric),
    Flt(f64),
}

fn num_of(d: &Datum) -> Option<Num> {
    Some(match d {
        Datum::Int2(v) => Num::Int(i128::from(*v)),
        Datum::Int4(v) => Num::Int(i128::from(*v)),
        Datum::Int8(v) => Num::Int(i128::from(*v)),
        Datum::Numeric(v) => Num::Dec(v.clone()),
        Datum::Float4(v) | Datum::Float8(v) => Num::Flt(v.get()),
        _ => return None,
    })
}

fn as_dec(n: &Num) -> Numeric {
    match n {
        Num::Int(i) => Numeric::from_i128(*i),
        Num::Dec(d) => d.clone(),
        Num::Flt(f) => Numeric::from_f64_digits(*f, 15),
    }
}

fn as_f64(n: &Num) -> f64 {
    match n {
        Num::Int(i) => *i as f64,
        Num::Dec(d) => d.to_f64(),
        Num::Flt(f) => *f,
    }
}

/// Compares two non-NULL numbers of any ranks (rule 1); `None` if one is no
/// number.
pub fn compare(a: &Datum, b: &Datum) -> Option<Ordering> {
    let (x, y) = (num_of(a)?, num_of(b)?);
    Some(match (&x, &y) {
        (Num::Int(p), Num::Int(q)) => p.cmp(q),
        (Num::Flt(_), _) | (_, Num::Flt(_)) => Float::new(as_f64(&x)).cmp(&Float::new(as_f64(&y))),
        _ => as_dec(&x).cmp(&as_dec(&y)),
    })
}

/// `+ - * / %` on numeric or float operands, in type `t` (rule 1); `None` when
/// `t` is an integer type (the caller's integer arithmetic).
pub fn arith(op: BinOp, a: &Datum, b: &Datum, t: SqlType) -> Option<SqlResult<Datum>> {
    let (x, y) = (num_of(a)?, num_of(b)?);
    match t {
        SqlType::Numeric => Some(dec_arith(op, &x, &y).map(Datum::Numeric)),
        SqlType::Float4 | SqlType::Float8 => Some(float_arith(
            op,
            as_f64(&x),
            as_f64(&y),
            t == SqlType::Float4,
        )),
        _ => None,
    }
}

fn division_by_zero() -> SqlError {
    SqlError::new("22012", "division by zero")
}

fn dec_arith(op: BinOp, x: &Num, y: &Num) -> SqlResult<Numeric> {
    let (p, q) = (as_dec(x), as_dec(y));
    match op {
        BinOp::Add => p.add(&q),
        BinOp::Sub => p.sub(&q),
        BinOp::Mul => p.mul(&q),
        BinOp::Div => p.div(&q),
        BinOp::Mod => p.rem(&q),
        _ => unreachable!("comparison and logic are eval_bin's"),
    }
    .map_err(num_err)
}

/// `p / q` at PostgreSQL's result scale, with that scale (rule 2).
pub fn divide_numeric(p: &Numeric, q: &Numeric) -> SqlResult<(Numeric, u32)> {
    let r = p.div(q).map_err(num_err)?;
    let scale = r.scale();
    Ok((r, scale))
}

fn float_arith(op: BinOp, p: f64, q: f64, float4: bool) -> SqlResult<Datum> {
    let v = match op {
        BinOp::Add => p + q,
        BinOp::Sub => p - q,
        BinOp::Mul => p * q,
        BinOp::Div if q == 0.0 => return Err(division_by_zero()),
        BinOp::Div => p / q,
        BinOp::Mod => {
            return Err(SqlError::new(
                "42883",
                "operator does not exist: double precision % double precision",
            ))
        }
        _ => unreachable!("comparison and logic are eval_bin's"),
    };
    float_datum(v, float4, p.is_infinite() || q.is_infinite())
}

/// A float result as `real` or `double precision`: 22003 if it overflowed (an
/// infinity no operand was).
fn float_datum(v: f64, float4: bool, inf_in: bool) -> SqlResult<Datum> {
    let v = if float4 { (v as f32) as f64 } else { v };
    if v.is_infinite() && !inf_in {
        return Err(SqlError::new("22003", "value out of range: overflow"));
    }
    Ok(if float4 {
        Datum::Float4(Float::new(v))
    } else {
        Datum::Float8(Float::new(v))
    })
}

/// Casts between the tower's types (`None` for other types): to an integer
/// rounds (numeric half away from zero, floats half to even, as PostgreSQL's
/// rint) and checks the range.
pub fn cast(d: &Datum, to: SqlType) -> Option<SqlResult<Datum>> {
    let n = num_of(d)?;
    let int = |v: Option<i128>, name: &str| -> SqlResult<Datum> {
        let v = v.ok_or_else(|| SqlError::new("22003", format!("{name} out of range")))?;
        let bad = || SqlError::new("22003", format!("{name} out of range"));
        Ok(match to {
            SqlType::Int2 => Datum::Int2(i16::try_from(v).map_err(|_| bad())?),
            SqlType::Int4 => Datum::Int4(i32::try_from(v).map_err(|_| bad())?),
            _ => Datum::Int8(i64::try_from(v).map_err(|_| bad())?),
        })
    };
    Some(match to {
        SqlType::Int2 | SqlType::Int4 | SqlType::Int8 => {
            let name = to.name();
            let v = match &n {
                Num::Int(i) => Some(*i),
                Num::Dec(d) if d.is_nan() || d.is_infinite() => {
                    let what = if d.is_nan() { "NaN" } else { "infinity" };
                    return Some(Err(SqlError::new(
                        "0A000",
                        format!("cannot convert {what} to {name}"),
                    )));
                }
                Num::Dec(d) => d.to_i128_round().ok(),
                Num::Flt(f) if f.is_finite() => Some(f.round_ties_even() as i128),
                Num::Flt(_) => None,
            };
            int(v, name)
        }
        SqlType::Numeric => Ok(Datum::Numeric(match d {
            Datum::Float4(f) => Numeric::from_f64_digits(f.get(), 6),
            _ => as_dec(&n),
        })),
        SqlType::Float4 | SqlType::Float8 => {
            let v = as_f64(&n);
            float_datum(
                v,
                to == SqlType::Float4,
                match &n {
                    Num::Flt(f) => f.is_infinite(),
                    Num::Dec(d) => d.is_infinite(),
                    Num::Int(_) => false,
                },
            )
        }
        _ => return None,
    })
}

/// An integer as numeric.
pub fn from_i128(v: i128) -> SqlResult<Numeric> {
    Ok(Numeric::from_i128(v))
}

/// `-x` for a numeric or float (integers are the caller's).
pub fn negate(d: &Datum) -> Option<Datum> {
    Some(match d {
        Datum::Numeric(v) => Datum::Numeric(v.neg()),
        Datum::Float4(v) => Datum::Float4(Float::new(-v.get())),
        Datum::Float8(v) => Datum::Float8(Float::new(-v.get())),
        _ => return None,
    })
}

/// `abs(x)` for a numeric or float.
pub fn abs(d: &Datum) -> Option<Datum> {
    Some(match d {
        Datum::Numeric(v) => Datum::Numeric(v.abs()),
        Datum::Float4(v) => Datum::Float4(Float::new(v.get().abs())),
        Datum::Float8(v) => Datum::Float8(Float::new(v.get().abs())),
        _ => return None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// extra_float_digits 0 and below: C's %g with DBL_DIG / FLT_DIG plus the
    /// setting (PostgreSQL 15's answers).
    #[test]
    fn floats_print_with_extra_float_digits_as_postgres() {
        for (v, f4, extra, want) in [
            (131.107_032_318_950_47, false, 0, "131.10703231895"),
            (f64::from(431.7726_f32), true, 0, "431.773"),
            (1e20, false, 0, "1e+20"),
            (1.5e-5, false, 0, "1.5e-05"),
            (0.1, false, 0, "0.1"),
            (100.0, false, 0, "100"),
            (1e15, false, 0, "1e+15"),
            (123_456_789_012_345_678.0, false, 0, "1.23456789012346e+17"),
            (2.5, false, -14, "2"),
            (0.001_234, false, -15, "0.001"),
            (-0.0, false, 0, "-0"),
            (0.1, false, 1, "0.1"),
        ] {
            assert_eq!(format_float_in(v, f4, extra), want, "{v} {extra}");
        }
    }

    #[test]
    fn floats_print_as_postgres_prints_them() {
        for (v, f4, want) in [
            (0.1, false, "0.1"),
            (1e15, false, "1e+15"),
            (123456789012345.0, false, "123456789012345"),
            (1e-5, false, "1e-05"),
            (0.0001, false, "0.0001"),
            (1.0 / 3.0, false, "0.3333333333333333"),
            (-2.5e-300, false, "-2.5e-300"),
            (1e6, true, "1e+06"),
            (123456.0, true, "123456"),
            (0.1, true, "0.1"),
            (f64::NAN, false, "NaN"),
            (f64::NEG_INFINITY, true, "-Infinity"),
        ] {
            assert_eq!(format_float(v, f4), want, "{v}");
        }
    }

    #[test]
    fn division_takes_postgres_result_scale() {
        let d = |s: &str| parse_numeric(s).unwrap().unwrap();
        let div = |a: &str, b: &str| {
            dec_arith(BinOp::Div, &Num::Dec(d(a)), &Num::Dec(d(b)))
                .unwrap()
                .to_string()
        };
        assert_eq!(div("1", "3"), "0.33333333333333333333");
        assert_eq!(div("10", "3"), "3.3333333333333333");
        assert_eq!(div("1.50", "0.5"), "3.0000000000000000");
        assert!(parse_numeric("1.2.3").is_none());
        assert!(parse_numeric("1e").is_none());
        assert_eq!(d("1.5e3").to_string(), "1500");
        assert_eq!(parse_numeric("1e200000").map(|r| r.is_err()), Some(true));
    }
}
