//! [`Numeric`]: PostgreSQL's `numeric`, an exact decimal of up to 131,072 digits
//! before the point and 16,383 after, with NaN and ±Infinity.
//!
//! Rules (cited as "numeric type rule N"):
//! 1. A finite value is `m / 10^scale`, `scale` being PostgreSQL's display scale
//!    (dscale): `1.50` keeps its two digits. `m` lives inline while it fits an
//!    `i64` and in a `BigInt` beyond; every constructor makes the inline form when
//!    it fits, so a value has one representation for a given `(m, scale)`.
//! 2. Equality and order are numeric (`1.5 = 1.50`); -Infinity < every finite
//!    value < Infinity < NaN, and NaN equals NaN, as PostgreSQL's B-tree orders
//!    them. The hash is of the value with trailing zeros stripped.
//! 3. Results take PostgreSQL's display scales: a sum the larger scale, a product
//!    the sum of the scales (rounded to 16,383), a quotient `select_div_scale`'s;
//!    rounding is half away from zero. A result past the limits is
//!    [`NumError::Overflow`] ("value overflows numeric format").
//! 4. Special values combine as PostgreSQL's: NaN with anything is NaN, ∞ − ∞,
//!    0 × ∞ and ∞ / ∞ are NaN, a finite value over ∞ is 0; division by zero is an
//!    error even for ∞.

mod math;
mod text;

pub use math::*;

use num_bigint::{BigInt, Sign};
use num_integer::Integer;
use num_traits::{Signed, ToPrimitive, Zero};
use std::cmp::Ordering;
use std::hash::{Hash, Hasher};

/// Digits allowed before the decimal point (PostgreSQL's NUMERIC_WEIGHT_MAX).
pub const MAX_INT_DIGITS: u32 = 131_072;
/// Digits allowed after the decimal point (NUMERIC_DSCALE_MAX).
pub const MAX_SCALE: u32 = 16_383;
/// PostgreSQL's NUMERIC_MIN_SIG_DIGITS: a computed result keeps at least these.
pub const MIN_SIG_DIGITS: i32 = 16;
/// NUMERIC_MAX_DISPLAY_SCALE: computed results keep at most this scale.
pub const MAX_DISPLAY_SCALE: i32 = 1000;

/// Why a numeric operation has no result.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum NumError {
    /// 22003 "value overflows numeric format".
    Overflow,
    /// 22012 "division by zero".
    DivisionByZero,
    /// 22P02: text that is no number.
    Syntax,
    /// An error with PostgreSQL's SQLSTATE and message (the functions' own).
    Other(&'static str, String),
}

/// A PostgreSQL numeric (rule 1).
#[derive(Clone, Debug)]
pub struct Numeric(Repr);

#[derive(Clone, Debug)]
enum Repr {
    Small { m: i64, scale: u16 },
    Big(Box<Big>),
    NaN,
    PosInf,
    NegInf,
}

#[derive(Clone, Debug)]
struct Big {
    m: BigInt,
    scale: u16,
}

/// 10^n as a `BigInt`.
pub(crate) fn pow10(n: u32) -> BigInt {
    num_traits::pow(BigInt::from(10u8), n as usize)
}

/// 10^n as an i128 (n ≤ 38).
fn pow10_i128(n: u32) -> Option<i128> {
    10i128.checked_pow(n)
}

impl Numeric {
    pub const ZERO: Numeric = Numeric(Repr::Small { m: 0, scale: 0 });
    pub const NAN: Numeric = Numeric(Repr::NaN);
    pub const INFINITY: Numeric = Numeric(Repr::PosInf);
    pub const NEG_INFINITY: Numeric = Numeric(Repr::NegInf);

    /// `m / 10^scale` exactly, without the range check (intermediate values).
    pub fn from_parts_unchecked(m: BigInt, scale: u32) -> Numeric {
        if let (Some(v), Ok(s)) = (m.to_i64(), u16::try_from(scale)) {
            return Numeric(Repr::Small { m: v, scale: s });
        }
        let scale = u16::try_from(scale).expect("scale checked by callers");
        Numeric(Repr::Big(Box::new(Big { m, scale })))
    }

    /// `m / 10^scale`, or Overflow past the limits (rule 3).
    pub fn from_parts(m: BigInt, scale: u32) -> Result<Numeric, NumError> {
        if scale > MAX_SCALE {
            return Err(NumError::Overflow);
        }
        let n = Numeric::from_parts_unchecked(m, scale);
        if n.int_digits() > MAX_INT_DIGITS {
            return Err(NumError::Overflow);
        }
        Ok(n)
    }

    /// `m / 10^scale` for a small mantissa.
    pub fn from_i64_scaled(m: i64, scale: u16) -> Numeric {
        Numeric(Repr::Small { m, scale })
    }

    pub fn from_i64(v: i64) -> Numeric {
        Numeric(Repr::Small { m: v, scale: 0 })
    }

    pub fn from_i128(v: i128) -> Numeric {
        Numeric::from_parts_unchecked(BigInt::from(v), 0)
    }

    /// `v / 10^scale`.
    pub fn from_i128_scaled(v: i128, scale: u16) -> Numeric {
        Numeric::from_parts_unchecked(BigInt::from(v), u32::from(scale))
    }

    /// The mantissa and scale of a finite value (`None` for NaN and ±Infinity).
    pub fn parts(&self) -> Option<(BigInt, u32)> {
        match &self.0 {
            Repr::Small { m, scale } => Some((BigInt::from(*m), u32::from(*scale))),
            Repr::Big(b) => Some((b.m.clone(), u32::from(b.scale))),
            _ => None,
        }
    }

    /// The display scale (0 for the special values).
    pub fn scale(&self) -> u32 {
        match &self.0 {
            Repr::Small { scale, .. } => u32::from(*scale),
            Repr::Big(b) => u32::from(b.scale),
            _ => 0,
        }
    }

    pub fn is_nan(&self) -> bool {
        matches!(self.0, Repr::NaN)
    }

    /// ±Infinity.
    pub fn is_infinite(&self) -> bool {
        matches!(self.0, Repr::PosInf | Repr::NegInf)
    }

    pub fn is_finite(&self) -> bool {
        matches!(self.0, Repr::Small { .. } | Repr::Big(_))
    }

    pub fn is_zero(&self) -> bool {
        matches!(self.0, Repr::Small { m: 0, .. })
    }

    /// -1, 0 or 1 (NaN: 0; ±Infinity: ±1).
    pub fn signum(&self) -> i32 {
        match &self.0 {
            Repr::Small { m, .. } => m.signum() as i32,
            Repr::Big(b) => match b.m.sign() {
                Sign::Minus => -1,
                Sign::NoSign => 0,
                Sign::Plus => 1,
            },
            Repr::NaN => 0,
            Repr::PosInf => 1,
            Repr::NegInf => -1,
        }
    }

    /// Digits before the decimal point of a finite value's magnitude (0 for |x| < 1).
    pub fn int_digits(&self) -> u32 {
        if let Repr::Small { m, scale } = self.0 {
            let d = m.unsigned_abs().checked_ilog10().map_or(1, |l| l + 1);
            return d.saturating_sub(u32::from(scale));
        }
        match self.parts() {
            Some((m, s)) => {
                let d = digit_count(&m);
                d.saturating_sub(s)
            }
            None => 0,
        }
    }

    /// The decimal exponent of the leading digit (10^e ≤ |x| < 10^(e+1)); `None`
    /// for zero and the special values.
    pub fn exponent10(&self) -> Option<i64> {
        let (m, s) = self.parts()?;
        if m.is_zero() {
            return None;
        }
        Some(i64::from(digit_count(&m)) - 1 - i64::from(s))
    }

    /// PostgreSQL's (weight, first digit) in base 10,000 of a nonzero finite value;
    /// (0, 0) for zero.
    pub fn base10000_lead(&self) -> (i32, u32) {
        let Some(e10) = self.exponent10() else {
            return (0, 0);
        };
        let w = e10.div_euclid(4);
        let (m, s) = self.parts().expect("finite");
        // floor(|x| / 10000^w): |m| / 10^(s + 4w), shifted by whichever sign.
        let shift = i64::from(s) + 4 * w;
        let m = m.abs();
        let first = if shift >= 0 {
            m / pow10(shift as u32)
        } else {
            m * pow10((-shift) as u32)
        };
        (w as i32, first.to_u32().unwrap_or(0))
    }

    /// The value at `scale` digits (more: zeros appended; fewer: rounded half away
    /// from zero). Special values are themselves.
    pub fn with_scale(&self, scale: u32) -> Numeric {
        let Some((m, s)) = self.parts() else {
            return self.clone();
        };
        if scale >= s {
            if let Repr::Small { m: v, .. } = self.0 {
                if let Some(v) = pow10_i128(scale - s)
                    .and_then(|p| i128::from(v).checked_mul(p))
                    .and_then(|v| i64::try_from(v).ok())
                {
                    return Numeric::from_i64_scaled(v, scale as u16);
                }
            }
            return Numeric::from_parts_unchecked(m * pow10(scale - s), scale);
        }
        Numeric::from_parts_unchecked(div_round(&m, &pow10(s - scale)), scale)
    }

    /// round(x, s): half away from zero at `s` digits after the point (before it
    /// when negative); the result's scale is max(s, 0).
    pub fn round(&self, s: i32) -> Numeric {
        self.cut(s, true)
    }

    /// trunc(x, s): toward zero at `s` digits.
    pub fn trunc(&self, s: i32) -> Numeric {
        self.cut(s, false)
    }

    fn cut(&self, s: i32, round: bool) -> Numeric {
        let Some((m, scale)) = self.parts() else {
            return self.clone();
        };
        let s = s.clamp(-(MAX_INT_DIGITS as i32) - 1, MAX_SCALE as i32);
        if s >= scale as i32 {
            return self.with_scale(s as u32);
        }
        let drop = (scale as i64 - s as i64) as u32;
        let p = pow10(drop);
        let q = if round { div_round(&m, &p) } else { &m / &p };
        if s >= 0 {
            Numeric::from_parts_unchecked(q, s as u32)
        } else {
            Numeric::from_parts_unchecked(q * pow10((-s) as u32), 0)
        }
    }

    /// The largest integer ≤ x (scale 0).
    pub fn floor(&self) -> Numeric {
        self.to_integer(Ordering::Less)
    }

    /// The smallest integer ≥ x (scale 0).
    pub fn ceil(&self) -> Numeric {
        self.to_integer(Ordering::Greater)
    }

    fn to_integer(&self, dir: Ordering) -> Numeric {
        let Some((m, s)) = self.parts() else {
            return self.clone();
        };
        let (q, r) = m.div_mod_floor(&pow10(s));
        let q = if dir == Ordering::Greater && !r.is_zero() {
            q + 1
        } else {
            q
        };
        Numeric::from_parts_unchecked(q, 0)
    }

    /// Rounded to an integer (half away from zero); NaN and ±Infinity are 0A000 as
    /// PostgreSQL's casts to integer types.
    pub fn to_i128_round(&self) -> Result<i128, NumError> {
        match &self.0 {
            Repr::NaN => Err(NumError::Other(
                "0A000",
                "cannot convert NaN to integer".into(),
            )),
            Repr::PosInf | Repr::NegInf => Err(NumError::Other(
                "0A000",
                "cannot convert infinity to integer".into(),
            )),
            Repr::Small { m, scale: 0 } => Ok(i128::from(*m)),
            _ => {
                let (m, s) = self.parts().expect("finite");
                div_round(&m, &pow10(s)).to_i128().ok_or(NumError::Overflow)
            }
        }
    }

    /// The nearest double (NaN and ±Infinity as themselves), by way of the text
    /// as PostgreSQL's numeric_float8.
    pub fn to_f64(&self) -> f64 {
        match &self.0 {
            Repr::NaN => f64::NAN,
            Repr::PosInf => f64::INFINITY,
            Repr::NegInf => f64::NEG_INFINITY,
            Repr::Small { m, scale: 0 } if m.unsigned_abs() < (1 << 53) => *m as f64,
            _ => self.to_string().parse().unwrap_or(f64::NAN),
        }
    }

    /// A float rounded to `digits` significant digits (15 for double precision, 6
    /// for real, as PostgreSQL's casts); NaN and ±Infinity carry over.
    pub fn from_f64_digits(f: f64, digits: usize) -> Numeric {
        if f.is_nan() {
            return Numeric::NAN;
        }
        if f.is_infinite() {
            return if f > 0.0 {
                Numeric::INFINITY
            } else {
                Numeric::NEG_INFINITY
            };
        }
        let text = format!("{f:.*e}", digits.saturating_sub(1));
        let n = Numeric::parse(&text).unwrap_or(Numeric::ZERO);
        n.stripped()
    }

    /// The value with trailing fractional zeros removed (PostgreSQL's
    /// trim_scale).
    pub fn stripped(&self) -> Numeric {
        if let Repr::Small { mut m, mut scale } = self.0 {
            if m == 0 {
                return Numeric::ZERO;
            }
            while scale > 0 && m % 10 == 0 {
                m /= 10;
                scale -= 1;
            }
            return Numeric::from_i64_scaled(m, scale);
        }
        let Some((mut m, mut s)) = self.parts() else {
            return self.clone();
        };
        if m.is_zero() {
            return Numeric::ZERO;
        }
        // The zeros to strip, k ≤ min(scale, binary trailing zeros) < 2^15, found by
        // its binary digits from the top: at most 15 divisions however long the run.
        let limit = s.min(m.trailing_zeros().unwrap_or(0) as u32);
        let mut k = 0;
        let mut step = 1u32 << 14;
        while step > 0 {
            if k + step <= limit {
                let (q, r) = m.div_rem(&pow10(step));
                if r.is_zero() {
                    m = q;
                    k += step;
                }
            }
            step >>= 1;
        }
        s -= k;
        Numeric::from_parts_unchecked(m, s)
    }

    /// The least scale that holds the value exactly (min_scale).
    pub fn min_scale(&self) -> u32 {
        self.stripped().scale()
    }

    /// Checks the limits of rule 3.
    pub fn checked(self) -> Result<Numeric, NumError> {
        if self.scale() > MAX_SCALE || self.int_digits() > MAX_INT_DIGITS {
            return Err(NumError::Overflow);
        }
        Ok(self)
    }

    /// The value made to fit `numeric(p, s)`: rounded to the scale, then
    /// Err(detail) if its integral digits pass p - s or it is infinite.
    pub fn fit(&self, p: i32, s: i32) -> Result<Numeric, String> {
        match &self.0 {
            Repr::NaN => return Ok(Numeric::NAN),
            Repr::PosInf | Repr::NegInf => {
                return Err(format!(
                    "A field with precision {p}, scale {s} cannot hold an infinite value."
                ))
            }
            _ => {}
        }
        let r = self.round(s);
        let max_int = p - s;
        if !r.is_zero() && r.exponent10().is_some_and(|e| e + 1 > i64::from(max_int)) {
            let bound = if max_int == 0 {
                "1".to_string()
            } else {
                format!("10^{max_int}")
            };
            return Err(format!(
                "A field with precision {p}, scale {s} must round to an absolute value less than {bound}."
            ));
        }
        Ok(r)
    }

    fn rank(&self) -> u8 {
        match self.0 {
            Repr::NegInf => 0,
            Repr::Small { .. } | Repr::Big(_) => 1,
            Repr::PosInf => 2,
            Repr::NaN => 3,
        }
    }

    /// -x.
    pub fn neg(&self) -> Numeric {
        match &self.0 {
            Repr::Small { m, scale } if *m != i64::MIN => Numeric::from_i64_scaled(-m, *scale),
            Repr::NaN => Numeric::NAN,
            Repr::PosInf => Numeric::NEG_INFINITY,
            Repr::NegInf => Numeric::INFINITY,
            _ => {
                let (m, s) = self.parts().expect("finite");
                Numeric::from_parts_unchecked(-m, s)
            }
        }
    }

    /// |x|.
    pub fn abs(&self) -> Numeric {
        if self.signum() < 0 {
            self.neg()
        } else {
            self.clone()
        }
    }

    /// x + y (rules 3, 4).
    pub fn add(&self, y: &Numeric) -> Result<Numeric, NumError> {
        if let (Repr::Small { m: a, scale: s }, Repr::Small { m: b, scale: t }) = (&self.0, &y.0) {
            if let Some(v) = small_add(*a, *s, *b, *t) {
                return Ok(v);
            }
        }
        match (self.rank(), y.rank()) {
            (1, 1) => {
                let (a, s, b, t) = self.aligned(y);
                Numeric::from_parts_unchecked(a + b, s.max(t)).checked()
            }
            (3, _) | (_, 3) | (0, 2) | (2, 0) => Ok(Numeric::NAN),
            (0, _) | (_, 0) => Ok(Numeric::NEG_INFINITY),
            _ => Ok(Numeric::INFINITY),
        }
    }

    /// x - y.
    pub fn sub(&self, y: &Numeric) -> Result<Numeric, NumError> {
        self.add(&y.neg())
    }

    /// Both mantissas at the larger scale: (a, s, b, t).
    fn aligned(&self, y: &Numeric) -> (BigInt, u32, BigInt, u32) {
        let (a, s) = self.parts().expect("finite");
        let (b, t) = y.parts().expect("finite");
        let a = if t > s { a * pow10(t - s) } else { a };
        let b = if s > t { b * pow10(s - t) } else { b };
        (a, s, b, t)
    }

    /// x + y of finite values, exact and unchecked: an aggregate's running state,
    /// which PostgreSQL keeps past the limits a stored value has.
    pub fn add_exact(&self, y: &Numeric) -> Numeric {
        if !(self.is_finite() && y.is_finite()) {
            return self.add(y).unwrap_or(Numeric::NAN);
        }
        let (a, s, b, t) = self.aligned(y);
        Numeric::from_parts_unchecked(a + b, s.max(t))
    }

    /// x × y of finite values, exact and unchecked (as [`Numeric::add_exact`]).
    pub fn mul_exact(&self, y: &Numeric) -> Numeric {
        if !(self.is_finite() && y.is_finite()) {
            return self.mul(y).unwrap_or(Numeric::NAN);
        }
        let (a, s) = self.parts().expect("finite");
        let (b, t) = y.parts().expect("finite");
        Numeric::from_parts_unchecked(a * b, s + t)
    }

    /// x × y at the sum of the scales (rule 3).
    pub fn mul(&self, y: &Numeric) -> Result<Numeric, NumError> {
        if let (Repr::Small { m: a, scale: s }, Repr::Small { m: b, scale: t }) = (&self.0, &y.0) {
            if let Some(v) = a.checked_mul(*b) {
                let scale = u32::from(*s) + u32::from(*t);
                if scale <= MAX_SCALE {
                    return Ok(Numeric::from_i64_scaled(v, scale as u16));
                }
            }
        }
        match (self.rank(), y.rank()) {
            (1, 1) => {
                let (a, s) = self.parts().expect("finite");
                let (b, t) = y.parts().expect("finite");
                let mut n = Numeric::from_parts_unchecked_wide(a * b, s + t);
                if s + t > MAX_SCALE {
                    n = n.round(MAX_SCALE as i32);
                }
                n.checked()
            }
            (3, _) | (_, 3) => Ok(Numeric::NAN),
            _ => {
                let sign = self.signum() * y.signum();
                Ok(match sign {
                    0 => Numeric::NAN,
                    1 => Numeric::INFINITY,
                    _ => Numeric::NEG_INFINITY,
                })
            }
        }
    }

    /// A value whose scale may pass u16 (rounded by the caller right after).
    fn from_parts_unchecked_wide(m: BigInt, scale: u32) -> Numeric {
        if scale <= u32::from(u16::MAX) {
            return Numeric::from_parts_unchecked(m, scale);
        }
        let drop = scale - MAX_SCALE;
        Numeric::from_parts_unchecked(div_round(&m, &pow10(drop)), MAX_SCALE)
    }

    /// x / y at PostgreSQL's result scale (`select_div_scale`).
    pub fn div(&self, y: &Numeric) -> Result<Numeric, NumError> {
        if let Some(r) = self.div_special(y)? {
            return Ok(r);
        }
        let scale = self.div_scale(y);
        self.div_at(y, scale)
    }

    /// The special cases of division (rule 4): `Some` result, or `None` for two
    /// finite operands with a nonzero divisor.
    fn div_special(&self, y: &Numeric) -> Result<Option<Numeric>, NumError> {
        match (self.rank(), y.rank()) {
            (3, _) | (_, 3) => Ok(Some(Numeric::NAN)),
            (_, 1) if y.is_zero() => Err(NumError::DivisionByZero),
            (1, 1) => Ok(None),
            (1, _) => Ok(Some(Numeric::ZERO)),
            (_, 1) => Ok(Some(if self.signum() * y.signum() > 0 {
                Numeric::INFINITY
            } else {
                Numeric::NEG_INFINITY
            })),
            _ => Ok(Some(Numeric::NAN)),
        }
    }

    /// PostgreSQL's select_div_scale.
    pub fn div_scale(&self, y: &Numeric) -> u32 {
        let ((w1, f1), (w2, f2)) = (self.base10000_lead(), y.base10000_lead());
        let mut qweight = w1 - w2;
        if f1 <= f2 {
            qweight -= 1;
        }
        let rscale = (MIN_SIG_DIGITS - qweight * 4)
            .max(self.scale() as i32)
            .max(y.scale() as i32);
        rscale.clamp(0, MAX_DISPLAY_SCALE) as u32
    }

    /// x / y (both finite, y nonzero) rounded half away from zero to `scale`.
    pub fn div_at(&self, y: &Numeric, scale: u32) -> Result<Numeric, NumError> {
        if y.is_zero() {
            return Err(NumError::DivisionByZero);
        }
        let (a, s) = self.parts().expect("finite");
        let (b, t) = y.parts().expect("finite");
        // a/10^s / (b/10^t) = a·10^(t - s) / b; at `scale`: a·10^(scale + t - s) / b.
        let shift = i64::from(scale) + i64::from(t) - i64::from(s);
        let (num, den) = if shift >= 0 {
            (a * pow10(shift as u32), b)
        } else {
            (a, b * pow10((-shift) as u32))
        };
        Numeric::from_parts_unchecked(div_round(&num, &den), scale).checked()
    }

    /// div(x, y): the quotient truncated toward zero (scale 0).
    pub fn div_trunc(&self, y: &Numeric) -> Result<Numeric, NumError> {
        if let Some(r) = self.div_special(y)? {
            // PostgreSQL's div() of ±∞ by a finite value is ±∞; of a finite one by
            // ±∞ is 0.
            return Ok(r);
        }
        let (a, s, b, _) = self.aligned(y);
        let _ = s;
        Numeric::from_parts_unchecked(a / b, 0).checked()
    }

    /// x % y: the remainder of the truncated quotient, at the larger scale, with
    /// the dividend's sign.
    pub fn rem(&self, y: &Numeric) -> Result<Numeric, NumError> {
        match (self.rank(), y.rank()) {
            (3, _) | (_, 3) => return Ok(Numeric::NAN),
            (_, 1) if y.is_zero() => return Err(NumError::DivisionByZero),
            (1, 1) => {}
            (1, _) => return Ok(self.clone()),
            _ => return Ok(Numeric::NAN),
        }
        if let (Repr::Small { m: a, scale: s }, Repr::Small { m: b, scale: t }) = (&self.0, &y.0) {
            if s == t {
                return Ok(Numeric::from_i64_scaled(a.checked_rem(*b).unwrap_or(0), *s));
            }
        }
        let (a, s, b, t) = self.aligned(y);
        Numeric::from_parts_unchecked(a % b, s.max(t)).checked()
    }

    /// The square root of a finite non-negative value rounded half away from zero
    /// to `scale` digits (PostgreSQL's sqrt_var at rscale); `None` if negative or
    /// not finite.
    pub fn sqrt_at(&self, scale: u32) -> Option<Numeric> {
        let (m, s) = self.parts()?;
        if m.sign() == Sign::Minus {
            return None;
        }
        // floor(sqrt(x)·10^(scale+1)) = isqrt(m·10^(2(scale+1) - s)).
        let shift = 2 * (i64::from(scale) + 1) - i64::from(s);
        let wide = if shift >= 0 {
            m * pow10(shift as u32)
        } else {
            m / pow10((-shift) as u32)
        };
        let r = wide.sqrt();
        Some(Numeric::from_parts_unchecked((r + 5u8) / 10u8, scale))
    }

    /// The order of two values (rule 2).
    fn order(&self, y: &Numeric) -> Ordering {
        if let (Repr::Small { m: a, scale: s }, Repr::Small { m: b, scale: t }) = (&self.0, &y.0) {
            if s == t {
                return a.cmp(b);
            }
            let d = (i32::from(*s) - i32::from(*t)).unsigned_abs();
            if let Some(p) = pow10_i128(d).filter(|_| d <= 19) {
                let (a, b) = (i128::from(*a), i128::from(*b));
                return if s < t {
                    (a * p).cmp(&b)
                } else {
                    a.cmp(&(b * p))
                };
            }
        }
        match (self.rank(), y.rank()) {
            (1, 1) => {
                let (a, _, b, _) = self.aligned(y);
                a.cmp(&b)
            }
            (p, q) => p.cmp(&q),
        }
    }

    /// Bytes for storage: a scale (u16; 0xFFFF for the special values, then one
    /// byte 0 NaN, 1 Infinity, 2 -Infinity), a sign byte and the magnitude's
    /// little-endian bytes.
    pub fn encode(&self, out: &mut Vec<u8>) {
        match &self.0 {
            Repr::NaN => out.extend([0xFF, 0xFF, 0]),
            Repr::PosInf => out.extend([0xFF, 0xFF, 1]),
            Repr::NegInf => out.extend([0xFF, 0xFF, 2]),
            Repr::Small { m, scale } => {
                out.extend(scale.to_le_bytes());
                out.push(u8::from(*m < 0));
                let mag = m.unsigned_abs().to_le_bytes();
                let used = 8 - (m.unsigned_abs().leading_zeros() / 8) as usize;
                out.extend(&mag[..used]);
            }
            Repr::Big(b) => {
                out.extend(b.scale.to_le_bytes());
                out.push(u8::from(b.m.sign() == Sign::Minus));
                out.extend(b.m.magnitude().to_bytes_le());
            }
        }
    }

    /// A value from [`Numeric::encode`]'s bytes.
    pub fn decode(b: &[u8]) -> Option<Numeric> {
        let scale = u16::from_le_bytes(b.get(..2)?.try_into().ok()?);
        let sign = *b.get(2)?;
        if scale == 0xFFFF {
            return match sign {
                0 => Some(Numeric::NAN),
                1 => Some(Numeric::INFINITY),
                2 => Some(Numeric::NEG_INFINITY),
                _ => None,
            };
        }
        let mag = &b[3..];
        if mag.len() <= 8 {
            let mut w = [0u8; 8];
            w[..mag.len()].copy_from_slice(mag);
            let v = u64::from_le_bytes(w);
            if let Ok(v) = i64::try_from(v) {
                return Some(Numeric::from_i64_scaled(
                    if sign == 1 { -v } else { v },
                    scale,
                ));
            }
        }
        let m = BigInt::from_bytes_le(if sign == 1 { Sign::Minus } else { Sign::Plus }, mag);
        Some(Numeric::from_parts_unchecked(m, u32::from(scale)))
    }

    /// An order-preserving, self-delimiting key: -Infinity 0x00; negatives 0x01;
    /// zero 0x02; positives 0x03; Infinity 0x04; NaN 0x05. A nonzero value is
    /// 0.d₁d₂… × 10^e (d₁ ≠ 0, no trailing zero): e as a biased big-endian u32,
    /// the digits and a 0x00 end, all inverted for a negative value (0xFF end).
    pub fn key_bytes(&self) -> Vec<u8> {
        let (m, s) = match &self.0 {
            Repr::NegInf => return vec![0x00],
            Repr::PosInf => return vec![0x04],
            Repr::NaN => return vec![0x05],
            _ => self.stripped().parts().expect("finite"),
        };
        if m.is_zero() {
            return vec![0x02];
        }
        let digits = m.magnitude().to_string();
        let e = digits.len() as i64 - i64::from(s) + (1 << 30);
        let e = (e as u32).to_be_bytes();
        let mut out = Vec::with_capacity(digits.len() + 6);
        if m.sign() == Sign::Minus {
            out.push(0x01);
            out.extend(e.iter().map(|b| !b));
            out.extend(digits.bytes().map(|c| !c));
            out.push(0xFF);
        } else {
            out.push(0x03);
            out.extend(e);
            out.extend(digits.bytes());
            out.push(0x00);
        }
        out
    }
}

/// a/10^s + b/10^t in i128 when the aligned operands and the sum fit (the common
/// case of `1 - discount`, without a `BigInt`).
fn small_add(a: i64, s: u16, b: i64, t: u16) -> Option<Numeric> {
    if s == t {
        return a.checked_add(b).map(|v| Numeric::from_i64_scaled(v, s));
    }
    let d = u32::from(s.abs_diff(t));
    if d > 18 {
        return None;
    }
    let p = 10i128.pow(d);
    let (a, b) = if s < t {
        (i128::from(a) * p, i128::from(b))
    } else {
        (i128::from(a), i128::from(b) * p)
    };
    i64::try_from(a + b)
        .ok()
        .map(|v| Numeric::from_i64_scaled(v, s.max(t)))
}

/// Decimal digits of |m| (1 for zero).
pub(crate) fn digit_count(m: &BigInt) -> u32 {
    if let Some(v) = m.to_i64() {
        return v.unsigned_abs().checked_ilog10().map_or(1, |l| l + 1);
    }
    // bits·log10(2) is within one of the digit count; the text settles it.
    let est = (m.bits() as f64 * std::f64::consts::LOG10_2) as u32;
    if est < 1000 {
        return m.magnitude().to_string().len() as u32;
    }
    let p = pow10(est);
    if m.magnitude() >= p.magnitude() {
        est + 1
    } else {
        est
    }
}

/// n / d rounded half away from zero (d > 0 or < 0).
pub(crate) fn div_round(n: &BigInt, d: &BigInt) -> BigInt {
    let (q, r) = n.div_rem(d);
    if (r.abs() * 2u8) >= d.abs() {
        if (n.sign() == Sign::Minus) != (d.sign() == Sign::Minus) {
            q - 1
        } else {
            q + 1
        }
    } else {
        q
    }
}

impl PartialEq for Numeric {
    fn eq(&self, other: &Self) -> bool {
        self.order(other) == Ordering::Equal
    }
}

impl Eq for Numeric {}

impl PartialOrd for Numeric {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for Numeric {
    fn cmp(&self, other: &Self) -> Ordering {
        self.order(other)
    }
}

impl Hash for Numeric {
    fn hash<H: Hasher>(&self, state: &mut H) {
        match self.stripped().0 {
            Repr::Small { m, scale } => (0u8, m, scale).hash(state),
            Repr::Big(b) => (1u8, b.m, b.scale).hash(state),
            Repr::NaN => 2u8.hash(state),
            Repr::PosInf => 3u8.hash(state),
            Repr::NegInf => 4u8.hash(state),
        }
    }
}

impl From<i64> for Numeric {
    fn from(v: i64) -> Self {
        Numeric::from_i64(v)
    }
}

#[cfg(test)]
mod tests;
