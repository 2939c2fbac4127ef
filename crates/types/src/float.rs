//! [`Float`]: a `real` / `double precision` value with PostgreSQL's total order, so
//! rows, keys and sorts can hold it like any other value.

use std::cmp::Ordering;
use std::hash::{Hash, Hasher};

/// A float ordered as PostgreSQL orders `float4` and `float8`: `-0` equals `0`, every
/// NaN equals every other and sorts above `+Infinity`. Made by [`Float::new`], which
/// folds `-0` and the NaNs to one value each, so equality is bit equality.
#[derive(Clone, Copy, Debug)]
pub struct Float(f64);

impl Float {
    pub fn new(v: f64) -> Float {
        if v.is_nan() {
            Float(f64::NAN)
        } else if v == 0.0 {
            Float(0.0)
        } else {
            Float(v)
        }
    }
    pub fn get(self) -> f64 {
        self.0
    }
    /// Order-preserving bytes (for B-tree keys): unsigned comparison of the result
    /// agrees with [`Ord`].
    pub fn key_bytes(self) -> [u8; 8] {
        let b = self.0.to_bits();
        let k = if b >> 63 == 1 { !b } else { b ^ (1 << 63) };
        k.to_be_bytes()
    }
}

impl PartialEq for Float {
    fn eq(&self, other: &Float) -> bool {
        self.0.to_bits() == other.0.to_bits()
    }
}
impl Eq for Float {}
impl PartialOrd for Float {
    fn partial_cmp(&self, other: &Float) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}
impl Ord for Float {
    fn cmp(&self, other: &Float) -> Ordering {
        self.0.total_cmp(&other.0)
    }
}
impl Hash for Float {
    fn hash<H: Hasher>(&self, h: &mut H) {
        self.0.to_bits().hash(h)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn postgres_order_and_key_bytes_agree() {
        let vals = [
            f64::NEG_INFINITY,
            -1e300,
            -1.5,
            -f64::MIN_POSITIVE,
            -0.0,
            0.0,
            1e-300,
            2.0,
            f64::INFINITY,
            f64::NAN,
            -f64::NAN,
        ];
        let fl: Vec<Float> = vals.iter().map(|v| Float::new(*v)).collect();
        assert_eq!(fl[4], fl[5], "-0 = 0");
        assert_eq!(fl[9], fl[10], "NaN = NaN");
        for a in &fl {
            for b in &fl {
                assert_eq!(a.cmp(b), a.key_bytes().cmp(&b.key_bytes()), "{a:?} {b:?}");
            }
        }
        assert!(fl[9] > fl[8], "NaN above Infinity");
        assert!(fl[0] < fl[1]);
    }
}

/// An `interval` as PostgreSQL keeps it: months, days and microseconds, each kept
/// apart (a month is not a fixed number of days, nor a day of hours across a
/// daylight-saving change). Compared by [`Interval::span`], as PostgreSQL
/// compares them (a month as 30 days, a day as 24 hours): `'1 day' = '24 hours'`.
#[derive(Clone, Copy, Debug, Default)]
pub struct Interval {
    pub months: i32,
    pub days: i32,
    pub micros: i64,
}

impl Interval {
    /// The interval's length in microseconds, a month as 30 days.
    pub fn span(self) -> i128 {
        const DAY: i128 = 86_400_000_000;
        (i128::from(self.months) * 30 + i128::from(self.days)) * DAY + i128::from(self.micros)
    }
    /// Order-preserving bytes of the span (for B-tree keys).
    pub fn key_bytes(self) -> [u8; 16] {
        ((self.span() as u128) ^ (1 << 127)).to_be_bytes()
    }
}

impl PartialEq for Interval {
    fn eq(&self, other: &Interval) -> bool {
        self.span() == other.span()
    }
}
impl Eq for Interval {}
impl PartialOrd for Interval {
    fn partial_cmp(&self, other: &Interval) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}
impl Ord for Interval {
    fn cmp(&self, other: &Interval) -> Ordering {
        self.span().cmp(&other.span())
    }
}
impl Hash for Interval {
    fn hash<H: Hasher>(&self, h: &mut H) {
        self.span().hash(h)
    }
}
