//! PostgreSQL's mathematical functions and the `^` operator: round, trunc, ceil,
//! floor, sign, sqrt, cbrt, exp, ln, log, power, div, mod, scale, min_scale,
//! trim_scale, width_bucket, gcd, lcm, factorial, pi, degrees, radians and the
//! trigonometric functions.
//!
//! Rules (cited as "mathfn rule N"):
//! 1. A function of one number is numeric's for a numeric argument and double
//!    precision's for any other (integers, floats, unknown literals), as
//!    PostgreSQL's resolution prefers float8 in the numeric category; round(x, n),
//!    trunc(x, n), div, scale, min_scale, trim_scale, log(b, x) and factorial are
//!    numeric's only; mod, gcd and lcm keep integer types.
//! 2. Results and errors are PostgreSQL's: numeric's display scales and its
//!    special values (`strata_types::numeric`), float8's POSIX cases (`pow(NaN, 0)`
//!    is 1), 2201E/2201F/2201G/22003/22012 with PostgreSQL's messages.

use crate::bind::Func;
use crate::numeric::num_err;
use crate::{Datum, SqlError, SqlResult, SqlType};
use strata_types::numeric as num;
use strata_types::{Float, Numeric};

/// A mathematical function (rule 1); evaluated by [`eval`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MathFn {
    Round,
    RoundTo,
    Trunc,
    TruncTo,
    Ceil,
    Floor,
    Sign,
    Sqrt,
    Cbrt,
    Exp,
    Ln,
    Log10,
    Log,
    Power,
    Div,
    Mod,
    Scale,
    MinScale,
    TrimScale,
    WidthBucket,
    Gcd,
    Lcm,
    Factorial,
    Pi,
    Degrees,
    Radians,
    Sin,
    Cos,
    Tan,
    Cot,
    Asin,
    Acos,
    Atan,
    Atan2,
    /// to_char(number, format) ([`crate::numfmt`]).
    ToChar,
    /// to_number(text, format).
    ToNumber,
    /// pg_lsn(numeric).
    PgLsn,
}

type Sig = (Func, &'static [SqlType], SqlType);

const N: SqlType = SqlType::Numeric;
const F: SqlType = SqlType::Float8;
const I4: SqlType = SqlType::Int4;

/// The function `name` for arguments of types `args` (rule 1), or `None` if
/// `name` is none of these.
pub fn signature(name: &str, args: &[SqlType]) -> Option<Sig> {
    let numeric = args.contains(&N);
    let m = |f: MathFn, ps: &'static [SqlType], ret: SqlType| Some((Func::Math(f, ret), ps, ret));
    let unary = |f: MathFn| {
        if numeric {
            m(f, &[N], N)
        } else {
            m(f, &[F], F)
        }
    };
    match (name, args.len()) {
        ("round", 1) => unary(MathFn::Round),
        ("round", 2) => m(MathFn::RoundTo, &[N, I4], N),
        ("trunc", 1) => unary(MathFn::Trunc),
        ("trunc", 2) => m(MathFn::TruncTo, &[N, I4], N),
        ("ceil" | "ceiling", 1) => unary(MathFn::Ceil),
        ("floor", 1) => unary(MathFn::Floor),
        ("sign", 1) => unary(MathFn::Sign),
        ("sqrt", 1) => unary(MathFn::Sqrt),
        ("cbrt", 1) => m(MathFn::Cbrt, &[F], F),
        ("exp", 1) => unary(MathFn::Exp),
        ("ln", 1) => unary(MathFn::Ln),
        ("log" | "log10", 1) => unary(MathFn::Log10),
        ("log", 2) => m(MathFn::Log, &[N, N], N),
        ("power" | "pow", 2) if numeric => m(MathFn::Power, &[N, N], N),
        ("power" | "pow", 2) => m(MathFn::Power, &[F, F], F),
        ("div", 2) => m(MathFn::Div, &[N, N], N),
        ("mod", 2) => int_pair(MathFn::Mod, args),
        ("gcd", 2) => int_pair(MathFn::Gcd, args),
        ("lcm", 2) => int_pair(MathFn::Lcm, args),
        ("scale", 1) => m(MathFn::Scale, &[N], I4),
        ("min_scale", 1) => m(MathFn::MinScale, &[N], I4),
        ("trim_scale", 1) => m(MathFn::TrimScale, &[N], N),
        ("width_bucket", 4) if numeric => m(MathFn::WidthBucket, &[N, N, N, I4], I4),
        ("width_bucket", 4) => m(MathFn::WidthBucket, &[F, F, F, I4], I4),
        ("factorial", 1) => m(MathFn::Factorial, &[SqlType::Int8], N),
        ("pi", 0) => m(MathFn::Pi, &[], F),
        ("pg_lsn", 1) => m(MathFn::PgLsn, &[N], SqlType::Lsn),
        ("to_number", 2) => m(MathFn::ToNumber, &[SqlType::Text, SqlType::Text], N),
        ("to_char", 2) => {
            let ps: &'static [SqlType] = match args[0] {
                SqlType::Int2 | SqlType::Int4 => &[I4, SqlType::Text],
                SqlType::Int8 => &[SqlType::Int8, SqlType::Text],
                SqlType::Float4 => &[SqlType::Float4, SqlType::Text],
                SqlType::Float8 => &[F, SqlType::Text],
                SqlType::Numeric => &[N, SqlType::Text],
                _ => return None,
            };
            m(MathFn::ToChar, ps, SqlType::Text)
        }
        _ => float_signature(name, args.len()),
    }
}

fn float_signature(name: &str, n: usize) -> Option<Sig> {
    let f = match (name, n) {
        ("degrees", 1) => MathFn::Degrees,
        ("radians", 1) => MathFn::Radians,
        ("sin", 1) => MathFn::Sin,
        ("cos", 1) => MathFn::Cos,
        ("tan", 1) => MathFn::Tan,
        ("cot", 1) => MathFn::Cot,
        ("asin", 1) => MathFn::Asin,
        ("acos", 1) => MathFn::Acos,
        ("atan", 1) => MathFn::Atan,
        ("atan2", 2) => return Some((Func::Math(MathFn::Atan2, F), &[F, F], F)),
        _ => return None,
    };
    Some((Func::Math(f, F), &[F], F))
}

/// mod, gcd, lcm: of the wider integer type, or numeric.
fn int_pair(f: MathFn, args: &[SqlType]) -> Option<Sig> {
    let t = if args.contains(&N)
        || args
            .iter()
            .any(|t| matches!(t, SqlType::Float4 | SqlType::Float8))
    {
        N
    } else if args.contains(&SqlType::Int8) {
        SqlType::Int8
    } else if args.iter().all(|t| *t == SqlType::Int2) && f == MathFn::Mod {
        SqlType::Int2
    } else {
        I4
    };
    let ps: &'static [SqlType] = match t {
        N => &[N, N],
        SqlType::Int8 => &[SqlType::Int8, SqlType::Int8],
        SqlType::Int2 => &[SqlType::Int2, SqlType::Int2],
        _ => &[I4, I4],
    };
    Some((Func::Math(f, t), ps, t))
}

/// Evaluates `f` of result type `t` on non-NULL arguments (rule 2).
pub fn eval(f: MathFn, t: SqlType, vals: &[Datum]) -> SqlResult<Datum> {
    if matches!(f, MathFn::ToChar | MathFn::ToNumber) {
        return format_fn(f, vals);
    }
    if matches!(f, MathFn::Mod | MathFn::Gcd | MathFn::Lcm) && t != N {
        return int_fn(f, t, vals);
    }
    if let (MathFn::PgLsn, Some(Datum::Numeric(x))) = (f, vals.first()) {
        return pg_lsn(x);
    }
    if let Some(Datum::Numeric(x)) = vals.first() {
        return numeric_fn(f, x, vals);
    }
    if f == MathFn::Factorial {
        return num::factorial(int(&vals[0]))
            .map(Datum::Numeric)
            .map_err(num_err);
    }
    float_fn(f, vals)
}

fn int(d: &Datum) -> i64 {
    match d {
        Datum::Int2(v) => i64::from(*v),
        Datum::Int4(v) => i64::from(*v),
        Datum::Int8(v) => *v,
        _ => 0,
    }
}

fn numeric_of(d: &Datum) -> Numeric {
    match d {
        Datum::Numeric(n) => n.clone(),
        other => Numeric::from_i64(int(other)),
    }
}

fn numeric_fn(f: MathFn, x: &Numeric, vals: &[Datum]) -> SqlResult<Datum> {
    let y = || numeric_of(&vals[1]);
    let r = match f {
        MathFn::Round => x.round(0).checked(),
        MathFn::RoundTo => x.round(clamp_scale(int(&vals[1]))).checked(),
        MathFn::Trunc => x.trunc(0).checked(),
        MathFn::TruncTo => x.trunc(clamp_scale(int(&vals[1]))).checked(),
        MathFn::Ceil => Ok(x.ceil()),
        MathFn::Floor => Ok(x.floor()),
        MathFn::Sign if x.is_nan() => Ok(Numeric::NAN),
        MathFn::Sign => Ok(Numeric::from_i64(i64::from(x.signum()))),
        MathFn::Sqrt => num::sqrt(x),
        MathFn::Exp => num::exp(x),
        MathFn::Ln => num::ln(x),
        MathFn::Log10 => num::log10(x),
        MathFn::Log => num::log(x, &y()),
        MathFn::Power => num::power(x, &y()),
        MathFn::Div => x.div_trunc(&y()),
        MathFn::Mod => x.rem(&y()),
        MathFn::Gcd => num::gcd(x, &y()),
        MathFn::Lcm => num::lcm(x, &y()),
        MathFn::Scale | MathFn::MinScale if !x.is_finite() => return Ok(Datum::Null),
        MathFn::Scale => return Ok(Datum::Int4(x.scale() as i32)),
        MathFn::MinScale => return Ok(Datum::Int4(x.min_scale() as i32)),
        MathFn::TrimScale => Ok(x.stripped()),
        MathFn::WidthBucket => return numeric_width_bucket(x, vals),
        _ => return float_fn(f, &[Datum::Float8(Float::new(x.to_f64()))]),
    };
    r.map(Datum::Numeric).map_err(num_err)
}

/// PostgreSQL's clamp of round's and trunc's scale argument.
fn clamp_scale(s: i64) -> i32 {
    s.clamp(-(num::MAX_INT_DIGITS as i64) - 4, num::MAX_SCALE as i64) as i32
}

fn bucket_err(msg: &str) -> SqlError {
    SqlError::new("2201G", msg.to_string())
}

/// width_bucket's argument checks, in PostgreSQL's order.
fn bucket_checks(count: i64, nan: bool, infinite_bound: bool) -> SqlResult<()> {
    if count <= 0 {
        return Err(bucket_err("count must be greater than zero"));
    }
    if nan {
        return Err(bucket_err(
            "operand, lower bound, and upper bound cannot be NaN",
        ));
    }
    if infinite_bound {
        return Err(bucket_err("lower and upper bounds must be finite"));
    }
    Ok(())
}

fn numeric_width_bucket(x: &Numeric, vals: &[Datum]) -> SqlResult<Datum> {
    let (lo, hi) = (numeric_of(&vals[1]), numeric_of(&vals[2]));
    let count = int(&vals[3]);
    bucket_checks(
        count,
        x.is_nan() || lo.is_nan() || hi.is_nan(),
        lo.is_infinite() || hi.is_infinite(),
    )?;
    let c = Numeric::from_i64(count);
    let bucket = |num: Numeric, den: Numeric| -> SqlResult<i64> {
        let scaled = num.mul(&c).map_err(num_err)?;
        let q = scaled.div_trunc(&den).map_err(num_err)?;
        Ok(q.to_i128_round().map_err(num_err)? as i64 + 1)
    };
    let r = match lo.cmp(&hi) {
        std::cmp::Ordering::Equal => {
            return Err(bucket_err("lower bound cannot equal upper bound"))
        }
        std::cmp::Ordering::Less if *x < lo => 0,
        std::cmp::Ordering::Less if *x >= hi => count + 1,
        std::cmp::Ordering::Less => {
            bucket(x.sub(&lo).map_err(num_err)?, hi.sub(&lo).map_err(num_err)?)?
        }
        _ if *x > lo => 0,
        _ if *x <= hi => count + 1,
        _ => bucket(lo.sub(x).map_err(num_err)?, lo.sub(&hi).map_err(num_err)?)?,
    };
    i32::try_from(r)
        .map(Datum::Int4)
        .map_err(|_| SqlError::new("22003", "integer out of range"))
}

fn float(d: &Datum) -> f64 {
    match d {
        Datum::Float4(v) | Datum::Float8(v) => v.get(),
        Datum::Numeric(n) => n.to_f64(),
        other => int(other) as f64,
    }
}

fn overflow() -> SqlError {
    SqlError::new("22003", "value out of range: overflow")
}

fn underflow() -> SqlError {
    SqlError::new("22003", "value out of range: underflow")
}

fn log_err(x: f64) -> Option<SqlError> {
    if x == 0.0 {
        Some(SqlError::new("2201E", "cannot take logarithm of zero"))
    } else if x < 0.0 {
        Some(SqlError::new(
            "2201E",
            "cannot take logarithm of a negative number",
        ))
    } else {
        None
    }
}

fn float_fn(f: MathFn, vals: &[Datum]) -> SqlResult<Datum> {
    let x = vals.first().map(float).unwrap_or(0.0);
    let v = match f {
        MathFn::Round => x.round_ties_even(),
        MathFn::Trunc => x.trunc(),
        MathFn::Ceil => x.ceil(),
        MathFn::Floor => x.floor(),
        MathFn::Sign if x > 0.0 => 1.0,
        MathFn::Sign if x < 0.0 => -1.0,
        MathFn::Sign => 0.0,
        MathFn::Sqrt if x < 0.0 => {
            return Err(SqlError::new(
                "2201F",
                "cannot take square root of a negative number",
            ))
        }
        MathFn::Sqrt => x.sqrt(),
        MathFn::Cbrt => x.cbrt(),
        MathFn::Exp => {
            let r = x.exp();
            if r.is_infinite() && x.is_finite() {
                return Err(overflow());
            }
            if r == 0.0 && x.is_finite() {
                return Err(underflow());
            }
            r
        }
        MathFn::Ln | MathFn::Log10 => {
            if let Some(e) = log_err(x) {
                return Err(e);
            }
            if f == MathFn::Ln {
                x.ln()
            } else {
                x.log10()
            }
        }
        MathFn::Power => float_power(x, float(&vals[1]))?,
        MathFn::WidthBucket => return float_width_bucket(x, vals),
        _ => trig(f, x, vals)?,
    };
    Ok(Datum::Float8(Float::new(v)))
}

fn trig(f: MathFn, x: f64, vals: &[Datum]) -> SqlResult<f64> {
    let out_of_range = || SqlError::new("22003", "input is out of range");
    Ok(match f {
        MathFn::Pi => std::f64::consts::PI,
        MathFn::Degrees => x.to_degrees(),
        MathFn::Radians => x.to_radians(),
        MathFn::Sin | MathFn::Cos | MathFn::Tan | MathFn::Cot if x.is_infinite() => {
            return Err(out_of_range())
        }
        MathFn::Sin => x.sin(),
        MathFn::Cos => x.cos(),
        MathFn::Tan => x.tan(),
        MathFn::Cot => 1.0 / x.tan(),
        MathFn::Asin | MathFn::Acos if !(-1.0..=1.0).contains(&x) && !x.is_nan() => {
            return Err(out_of_range())
        }
        MathFn::Asin => x.asin(),
        MathFn::Acos => x.acos(),
        MathFn::Atan => x.atan(),
        MathFn::Atan2 => x.atan2(float(&vals[1])),
        _ => unreachable!("numeric-only functions bind numeric arguments"),
    })
}

/// PostgreSQL's dpow: POSIX's special cases, then pow with its range errors.
fn float_power(x: f64, y: f64) -> SqlResult<f64> {
    if x.is_nan() {
        return Ok(if y.is_nan() || y != 0.0 {
            f64::NAN
        } else {
            1.0
        });
    }
    if y.is_nan() {
        return Ok(if x != 1.0 { f64::NAN } else { 1.0 });
    }
    if x == 0.0 && y < 0.0 {
        return Err(SqlError::new(
            "2201F",
            "zero raised to a negative power is undefined",
        ));
    }
    if x < 0.0 && y.floor() != y {
        return Err(SqlError::new(
            "2201F",
            "a negative number raised to a non-integer power yields a complex result",
        ));
    }
    let r = x.powf(y);
    if x.is_infinite() || y.is_infinite() {
        return Ok(r);
    }
    if r.is_infinite() {
        return Err(overflow());
    }
    if r == 0.0 && x != 0.0 {
        return Err(underflow());
    }
    Ok(r)
}

fn float_width_bucket(x: f64, vals: &[Datum]) -> SqlResult<Datum> {
    let (lo, hi) = (float(&vals[1]), float(&vals[2]));
    let count = int(&vals[3]) as i32;
    bucket_checks(
        i64::from(count),
        x.is_nan() || lo.is_nan() || hi.is_nan(),
        lo.is_infinite() || hi.is_infinite(),
    )?;
    let c = f64::from(count);
    let frac = |num: f64, den: f64, num2: f64, den2: f64| -> i32 {
        let q = if den.is_infinite() {
            num2 / den2
        } else {
            num / den
        };
        ((c * q) as i32).min(count - 1) + 1
    };
    let r = if lo < hi {
        if x < lo {
            0
        } else if x >= hi {
            count.checked_add(1).ok_or_else(int_range)?
        } else {
            frac(x - lo, hi - lo, x / 2.0 - lo / 2.0, hi / 2.0 - lo / 2.0)
        }
    } else if lo > hi {
        if x > lo {
            0
        } else if x <= hi {
            count.checked_add(1).ok_or_else(int_range)?
        } else {
            frac(lo - x, lo - hi, lo / 2.0 - x / 2.0, lo / 2.0 - hi / 2.0)
        }
    } else {
        return Err(bucket_err("lower bound cannot equal upper bound"));
    };
    Ok(Datum::Int4(r))
}

fn int_range() -> SqlError {
    SqlError::new("22003", "integer out of range")
}

fn int_datum(v: i128, t: SqlType) -> SqlResult<Datum> {
    Ok(match t {
        SqlType::Int2 => Datum::Int2(
            i16::try_from(v).map_err(|_| SqlError::new("22003", "smallint out of range"))?,
        ),
        SqlType::Int4 => Datum::Int4(i32::try_from(v).map_err(|_| int_range())?),
        _ => Datum::Int8(
            i64::try_from(v).map_err(|_| SqlError::new("22003", "bigint out of range"))?,
        ),
    })
}

/// mod, gcd and lcm of integers, in the integer type `t`.
fn int_fn(f: MathFn, t: SqlType, vals: &[Datum]) -> SqlResult<Datum> {
    let (a, b) = (i128::from(int(&vals[0])), i128::from(int(&vals[1])));
    match f {
        MathFn::Mod if b == 0 => Err(SqlError::new("22012", "division by zero")),
        MathFn::Mod => int_datum(a % b, t),
        MathFn::Gcd => int_datum(gcd(a, b), t),
        _ => {
            if a == 0 || b == 0 {
                return int_datum(0, t);
            }
            let g = gcd(a, b);
            int_datum((a / g * b).abs(), t)
        }
    }
}

fn gcd(a: i128, b: i128) -> i128 {
    let (mut a, mut b) = (a.abs(), b.abs());
    while b != 0 {
        (a, b) = (b, a % b);
    }
    a
}

/// to_char and to_number (PostgreSQL's formatting.c, [`crate::numfmt`]).
fn format_fn(f: MathFn, vals: &[Datum]) -> SqlResult<Datum> {
    let Datum::Text(fmt) = &vals[1] else {
        return Ok(Datum::Null);
    };
    if f == MathFn::ToNumber {
        let Datum::Text(t) = &vals[0] else {
            return Ok(Datum::Null);
        };
        return Ok(crate::numfmt::to_number_opt(t, fmt)?.map_or(Datum::Null, Datum::Numeric));
    }
    Ok(Datum::Text(match &vals[0] {
        Datum::Int2(v) => crate::numfmt::to_char_i32(i32::from(*v), fmt)?,
        Datum::Int4(v) => crate::numfmt::to_char_i32(*v, fmt)?,
        Datum::Int8(v) => crate::numfmt::to_char_i64(*v, fmt)?,
        Datum::Float4(v) => crate::numfmt::to_char_f64(v.get(), fmt, true)?,
        Datum::Float8(v) => crate::numfmt::to_char_f64(v.get(), fmt, false)?,
        Datum::Numeric(n) => crate::numfmt::to_char_numeric(n, fmt)?,
        _ => return Ok(Datum::Null),
    }))
}

/// pg_lsn(numeric): the value rounded to an integer, which must fit 64 bits.
fn pg_lsn(x: &Numeric) -> SqlResult<Datum> {
    if x.is_nan() || x.is_infinite() {
        let what = if x.is_nan() { "NaN" } else { "infinity" };
        return Err(SqlError::new(
            "0A000",
            format!("cannot convert {what} to pg_lsn"),
        ));
    }
    let v = x
        .to_i128_round()
        .ok()
        .and_then(|v| u64::try_from(v).ok())
        .ok_or_else(|| SqlError::new("22003", "pg_lsn out of range"))?;
    Ok(Datum::Lsn(strata_types::Lsn(v)))
}
