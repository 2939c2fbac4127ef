//! The statistical aggregates: variance and standard deviation of one column, and
//! the covariance, correlation and regression statistics of two (Y, X).
//!
//! Entry points: [`Stat`] (the functions, their names and result types),
//! [`Moments`] (`step` per input row, `value`).
//!
//! Rules (cited as "moments rule N"):
//! 1. The functions are PostgreSQL's: var_pop, var_samp, variance, stddev_pop,
//!    stddev_samp, stddev (numeric over integers and numeric, double precision over
//!    floats); covar_pop, covar_samp, corr, regr_avgx, regr_avgy, regr_sxx, regr_syy,
//!    regr_sxy, regr_slope, regr_intercept, regr_r2 (double precision of two double
//!    precision arguments, Y first) and regr_count (bigint).
//! 2. Floats accumulate as PostgreSQL's float8_accum and float8_regr_accum do (the
//!    Youngs-Cramer update of N, Sx, Sxx, Sy, Syy, Sxy), so results agree to the
//!    last bit; an infinite or NaN input makes the sums of squares NaN, and finite
//!    inputs whose sums overflow are 22003.
//! 3. Integers and numeric accumulate exactly (N, Σx, Σx²) and finish as
//!    PostgreSQL's numeric_stddev_internal: (NΣx² − (Σx)²) / (N·N or N·(N−1)) at
//!    the scale numeric division picks, a square root at that scale, 0 for a
//!    non-positive numerator.
//! 4. Rows where any argument is NULL are skipped. Over no rows the results are
//!    NULL (regr_count 0); the sample forms need two rows; corr, regr_slope,
//!    regr_intercept and regr_r2 are NULL for a vertical or horizontal line as
//!    PostgreSQL's are.
//! 5. Memory O(1) per group.

use crate::{Datum, SqlError, SqlResult, SqlType};
use strata_types::Float;
use strata_types::Numeric;

/// One statistical aggregate (rule 1).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Stat {
    VarPop,
    VarSamp,
    Variance,
    StddevPop,
    StddevSamp,
    Stddev,
    CovarPop,
    CovarSamp,
    Corr,
    RegrCount,
    RegrAvgx,
    RegrAvgy,
    RegrSxx,
    RegrSyy,
    RegrSxy,
    RegrSlope,
    RegrIntercept,
    RegrR2,
}

const NAMES: [(Stat, &str); 18] = [
    (Stat::VarPop, "var_pop"),
    (Stat::VarSamp, "var_samp"),
    (Stat::Variance, "variance"),
    (Stat::StddevPop, "stddev_pop"),
    (Stat::StddevSamp, "stddev_samp"),
    (Stat::Stddev, "stddev"),
    (Stat::CovarPop, "covar_pop"),
    (Stat::CovarSamp, "covar_samp"),
    (Stat::Corr, "corr"),
    (Stat::RegrCount, "regr_count"),
    (Stat::RegrAvgx, "regr_avgx"),
    (Stat::RegrAvgy, "regr_avgy"),
    (Stat::RegrSxx, "regr_sxx"),
    (Stat::RegrSyy, "regr_syy"),
    (Stat::RegrSxy, "regr_sxy"),
    (Stat::RegrSlope, "regr_slope"),
    (Stat::RegrIntercept, "regr_intercept"),
    (Stat::RegrR2, "regr_r2"),
];

impl Stat {
    pub fn from_name(name: &str) -> Option<Stat> {
        NAMES.iter().find(|(_, n)| *n == name).map(|(s, _)| *s)
    }

    pub fn name(self) -> &'static str {
        NAMES
            .iter()
            .find(|(s, _)| *s == self)
            .map_or("", |(_, n)| n)
    }

    /// Whether it takes two arguments (Y, X).
    pub fn two_args(self) -> bool {
        !matches!(
            self,
            Stat::VarPop
                | Stat::VarSamp
                | Stat::Variance
                | Stat::StddevPop
                | Stat::StddevSamp
                | Stat::Stddev
        )
    }

    /// The result type over an argument of type `t` (rule 1); None: no such
    /// function for `t`. Two-argument forms take double precision.
    pub fn result_type(self, t: SqlType) -> Option<SqlType> {
        Some(match self {
            Stat::RegrCount => SqlType::Int8,
            s if s.two_args() => SqlType::Float8,
            _ if matches!(t, SqlType::Float4 | SqlType::Float8) => SqlType::Float8,
            _ if t.is_int() || t == SqlType::Numeric => SqlType::Numeric,
            _ => return None,
        })
    }

    fn sample(self) -> bool {
        matches!(
            self,
            Stat::VarSamp | Stat::Variance | Stat::StddevSamp | Stat::Stddev
        )
    }

    fn root(self) -> bool {
        matches!(self, Stat::StddevPop | Stat::StddevSamp | Stat::Stddev)
    }
}

/// The running moments of one group (rules 2 and 3).
#[derive(Debug, Default)]
pub struct Moments {
    n: f64,
    sx: f64,
    sxx: f64,
    sy: f64,
    syy: f64,
    sxy: f64,
    /// Exact N, Σx, Σx² (rule 3).
    exact: Option<(i64, Numeric, Numeric)>,
}

fn overflow() -> SqlError {
    SqlError::new("22003", "value out of range: overflow")
}

fn float(d: &Datum) -> f64 {
    match d {
        Datum::Float8(f) | Datum::Float4(f) => f.get(),
        Datum::Int2(v) => f64::from(*v),
        Datum::Int4(v) => f64::from(*v),
        Datum::Int8(v) => *v as f64,
        _ => f64::NAN,
    }
}

impl Moments {
    /// Feeds one row: `y` the argument (Y of two), `x` the second argument.
    pub fn step(&mut self, stat: Stat, y: &Datum, x: &Datum) -> SqlResult<()> {
        if y.is_null() || (stat.two_args() && x.is_null()) {
            return Ok(());
        }
        if !stat.two_args() && !matches!(y, Datum::Float4(_) | Datum::Float8(_)) {
            return self.step_exact(y);
        }
        if stat.two_args() {
            self.step_pair(float(y), float(x))
        } else {
            self.step_one(float(y))
        }
    }

    /// PostgreSQL's float8_accum (rule 2).
    fn step_one(&mut self, v: f64) -> SqlResult<()> {
        let n0 = self.n;
        let sx0 = self.sx;
        self.n += 1.0;
        self.sx += v;
        if n0 > 0.0 {
            let tmp = v * self.n - self.sx;
            self.sxx += tmp * tmp / (self.n * n0);
            if self.sx.is_infinite() || self.sxx.is_infinite() {
                if !sx0.is_infinite() && !v.is_infinite() {
                    return Err(overflow());
                }
                self.sxx = f64::NAN;
            }
        } else if !v.is_finite() {
            self.sxx = f64::NAN;
        }
        Ok(())
    }

    /// PostgreSQL's float8_regr_accum (rule 2): `y`, then `x`.
    fn step_pair(&mut self, y: f64, x: f64) -> SqlResult<()> {
        let (n0, sx0, sy0) = (self.n, self.sx, self.sy);
        self.n += 1.0;
        self.sx += x;
        self.sy += y;
        if n0 > 0.0 {
            let tx = x * self.n - self.sx;
            let ty = y * self.n - self.sy;
            let scale = 1.0 / (self.n * n0);
            self.sxx += tx * tx * scale;
            self.syy += ty * ty * scale;
            self.sxy += tx * ty * scale;
            if self.sx.is_infinite() || self.sxx.is_infinite() {
                if !sx0.is_infinite() && !x.is_infinite() {
                    return Err(overflow());
                }
                self.sxx = f64::NAN;
            }
            if self.sy.is_infinite() || self.syy.is_infinite() {
                if !sy0.is_infinite() && !y.is_infinite() {
                    return Err(overflow());
                }
                self.syy = f64::NAN;
            }
            if self.sxy.is_infinite() {
                if !sx0.is_infinite() && !x.is_infinite() && !sy0.is_infinite() && !y.is_infinite()
                {
                    return Err(overflow());
                }
                self.sxy = f64::NAN;
            }
        } else {
            if !x.is_finite() {
                self.sxx = f64::NAN;
                self.sxy = f64::NAN;
            }
            if !y.is_finite() {
                self.syy = f64::NAN;
                self.sxy = f64::NAN;
            }
        }
        Ok(())
    }

    /// Exact sums of an integer or numeric (rule 3).
    fn step_exact(&mut self, v: &Datum) -> SqlResult<()> {
        let d = match v {
            Datum::Int2(i) => Numeric::from_i64(i64::from(*i)),
            Datum::Int4(i) => Numeric::from_i64(i64::from(*i)),
            Datum::Int8(i) => Numeric::from_i64(*i),
            Datum::Numeric(d) => d.clone(),
            _ => {
                return Err(SqlError::new(
                    "XX000",
                    "a statistical aggregate got a non-number",
                ))
            }
        };
        let (n, sx, sxx) = self.exact.get_or_insert((0, Numeric::ZERO, Numeric::ZERO));
        let sq = d.mul_exact(&d);
        *n += 1;
        *sx = sx.add_exact(&d);
        *sxx = sxx.add_exact(&sq);
        Ok(())
    }

    /// The aggregate's value over the rows so far (rules 2-4).
    pub fn value(&self, stat: Stat) -> SqlResult<Datum> {
        if let Some((n, sx, sxx)) = &self.exact {
            return exact_value(stat, *n, sx, sxx);
        }
        let n = self.n;
        if stat == Stat::RegrCount {
            return Ok(Datum::Int8(n as i64));
        }
        let v = match stat {
            _ if n < 1.0 => None,
            Stat::VarPop | Stat::StddevPop => Some(self.sxx / n),
            _ if stat.sample() && n <= 1.0 => None,
            Stat::VarSamp | Stat::Variance | Stat::StddevSamp | Stat::Stddev => {
                Some(self.sxx / (n - 1.0))
            }
            Stat::CovarPop => Some(self.sxy / n),
            Stat::CovarSamp if n < 2.0 => None,
            Stat::CovarSamp => Some(self.sxy / (n - 1.0)),
            Stat::RegrAvgx => Some(self.sx / n),
            Stat::RegrAvgy => Some(self.sy / n),
            Stat::RegrSxx => Some(self.sxx),
            Stat::RegrSyy => Some(self.syy),
            Stat::RegrSxy => Some(self.sxy),
            _ => self.line(stat),
        };
        Ok(match v {
            None => Datum::Null,
            Some(v) if stat.root() => Datum::Float8(Float::new(v.sqrt())),
            Some(v) => Datum::Float8(Float::new(v)),
        })
    }

    /// corr and the regression line's statistics (NULL for a vertical line, rule 4).
    fn line(&self, stat: Stat) -> Option<f64> {
        let (sxx, syy, sxy) = (self.sxx, self.syy, self.sxy);
        match stat {
            Stat::Corr if sxx == 0.0 || syy == 0.0 => None,
            Stat::Corr => Some(sxy / (sxx * syy).sqrt()),
            _ if sxx == 0.0 => None,
            Stat::RegrR2 if syy == 0.0 => Some(1.0),
            Stat::RegrR2 => Some((sxy * sxy) / (sxx * syy)),
            Stat::RegrSlope => Some(sxy / sxx),
            Stat::RegrIntercept => Some((self.sy - self.sx * sxy / sxx) / self.n),
            _ => None,
        }
    }
}

/// numeric_stddev_internal (rule 3).
fn exact_value(stat: Stat, n: i64, sx: &Numeric, sxx: &Numeric) -> SqlResult<Datum> {
    if n == 0 || (stat.sample() && n <= 1) {
        return Ok(Datum::Null);
    }
    if !sx.is_finite() || !sxx.is_finite() {
        return Ok(Datum::Numeric(Numeric::NAN));
    }
    // numeric_stddev_internal: N·Σx² − (Σx)² at twice Σx's scale.
    let rscale = sx.scale() * 2;
    let nd = Numeric::from_i64(n);
    let sq = sx.mul_exact(sx).with_scale(rscale);
    let num = nd.mul_exact(sxx).with_scale(rscale);
    let num = num.add_exact(&sq.neg());
    if num.signum() <= 0 {
        return Ok(Datum::Numeric(Numeric::ZERO));
    }
    let other = if stat.sample() { n - 1 } else { n };
    let den = nd.mul_exact(&Numeric::from_i64(other));
    let (var, scale) = crate::numeric::divide_numeric(&num, &den)?;
    Ok(Datum::Numeric(if stat.root() {
        var.sqrt_at(scale).ok_or_else(crate::numeric::overflow)?
    } else {
        var
    }))
}
