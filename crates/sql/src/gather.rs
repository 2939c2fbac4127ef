//! ANALYZE: a table's rows sampled and its columns' statistics computed, as
//! PostgreSQL's `analyze.c` computes them (`compute_scalar_stats`), for the engine
//! to keep in its catalog (`stats` rules) and the planner to estimate with
//! (`estimate` rules).
//!
//! Rules (cited as "gather rule N"):
//! 1. The sample is up to 300 × `default_statistics_target` (100) rows, drawn
//!    uniformly from one pass over the table (reservoir sampling, a fixed seed so
//!    the same table gives the same statistics); the table's row count is the
//!    pass's exact count.
//! 2. Per column: the null fraction; the distinct values of the sample, scaled to
//!    the table by the Haas-Stokes estimator PostgreSQL uses (exact when the sample
//!    is the table; stored as minus a fraction of the rows when above a tenth of
//!    them, so it grows with the table); the average width.
//! 3. Most common values: every value when the sample is the table and has at most
//!    the target's number of them; else the values seen at least twice and 25% more
//!    often than the average value, commonest first, up to the target.
//! 4. The histogram: up to target + 1 bounds splitting the other values, sorted,
//!    into buckets of equal counts (none when fewer than two distinct values are
//!    left).
//! 5. Memory is the sample's: O(300 × target rows of the columns analyzed), each
//!    value at most [`WIDTH_THRESHOLD`] bytes: a wider text or bytea is kept as its
//!    width only, counted as a distinct non-null value and left out of the common
//!    values and the histogram (PostgreSQL's "toowide" values).
//! 6. The correlation of each column's values with their rows' physical order:
//!    the sample's rows ranked by where the pass saw them, the non-null values
//!    sorted (equal ones by rank), and the Pearson correlation of sorted position
//!    with rank, as PostgreSQL's `compute_scalar_stats` computes it.

use crate::bind::compare;
use crate::Datum;
use std::cmp::Ordering;
use strata_engine::{ColumnStats, TableStats};

/// PostgreSQL's `default_statistics_target`.
pub(crate) const STATISTICS_TARGET: usize = 100;

/// Rows sampled (rule 1).
pub(crate) const SAMPLE_ROWS: usize = 300 * STATISTICS_TARGET;

/// Rule 5: the widest value a sample keeps (PostgreSQL's WIDTH_THRESHOLD).
pub(crate) const WIDTH_THRESHOLD: usize = 1024;

/// A sampled value: the value, or only the width of one too wide to keep (rule 5).
pub(crate) enum Sampled {
    Value(Datum),
    Wide(usize),
}

fn sampled(d: &Datum) -> Sampled {
    match d {
        Datum::Text(s) if s.len() > WIDTH_THRESHOLD => Sampled::Wide(s.len()),
        Datum::Bytea(b) if b.len() > WIDTH_THRESHOLD => Sampled::Wide(b.len()),
        d => Sampled::Value(d.clone()),
    }
}

/// A reservoir of rows (rule 1).
pub(crate) struct Sampler {
    pub(crate) rows: Vec<Vec<Sampled>>,
    /// Where in the pass each row kept was seen (its physical order, rule 6).
    at: Vec<u64>,
    pub(crate) seen: u64,
    cap: usize,
    state: u64,
}

impl Sampler {
    pub(crate) fn new(cap: usize) -> Sampler {
        Sampler {
            rows: Vec::new(),
            at: Vec::new(),
            seen: 0,
            cap,
            state: 0x9E37_79B9_7F4A_7C15,
        }
    }

    /// A pseudo-random number below `n` (xorshift64*).
    fn below(&mut self, n: u64) -> u64 {
        self.state ^= self.state >> 12;
        self.state ^= self.state << 25;
        self.state ^= self.state >> 27;
        self.state.wrapping_mul(0x2545_F491_4F6C_DD1D) % n
    }

    /// Offers one row; the reservoir keeps each row seen with equal chance.
    pub(crate) fn offer(&mut self, row: &[Datum]) {
        self.seen += 1;
        if self.rows.len() < self.cap {
            self.rows.push(row.iter().map(sampled).collect());
            self.at.push(self.seen);
            return;
        }
        let j = self.below(self.seen) as usize;
        if j < self.cap {
            self.rows[j] = row.iter().map(sampled).collect();
            self.at[j] = self.seen;
        }
    }
}

/// The statistics of a table from its sample: `columns` says which to compute (the
/// others are None), `pages` its main fork's length.
pub(crate) fn table_stats(s: &Sampler, columns: &[bool], pages: u32) -> TableStats {
    let total = s.seen as f64;
    // Each sampled row's rank in physical order (rule 6).
    let mut order: Vec<usize> = (0..s.rows.len()).collect();
    order.sort_unstable_by_key(|&i| s.at[i]);
    let mut rank = vec![0; order.len()];
    for (r, &i) in order.iter().enumerate() {
        rank[i] = r;
    }
    TableStats {
        reltuples: total,
        relpages: pages,
        relallvisible: 0,
        columns: columns
            .iter()
            .enumerate()
            .map(|(i, on)| {
                on.then(|| {
                    column_stats(
                        s.rows
                            .iter()
                            .map(|r| &r[i])
                            .enumerate()
                            .map(|(k, v)| (rank[k], v)),
                        total,
                    )
                })
            })
            .collect(),
    }
}

/// One column's statistics from its sampled values (rules 2-4).
pub(crate) fn column_stats<'a>(
    values: impl Iterator<Item = (usize, &'a Sampled)>,
    total: f64,
) -> ColumnStats {
    let (mut n, mut width, mut wide) = (0usize, 0usize, 0usize);
    let mut vals: Vec<(usize, &Datum)> = Vec::new();
    for (at, v) in values {
        n += 1;
        match v {
            Sampled::Wide(len) => {
                width += len + 4;
                wide += 1;
            }
            Sampled::Value(d) if !d.is_null() => {
                width += datum_width(d);
                vals.push((at, d));
            }
            Sampled::Value(_) => {}
        }
    }
    vals.sort_by(|a, b| compare(a.1, b.1).then(a.0.cmp(&b.0)));
    let correlation = correlation(vals.iter().map(|(at, _)| *at));
    // Runs of equal values: (value, count).
    let mut runs: Vec<(&Datum, usize)> = Vec::new();
    for (_, v) in &vals {
        match runs.last_mut() {
            Some((w, c)) if compare(w, v) == Ordering::Equal => *c += 1,
            _ => runs.push((v, 1)),
        }
    }
    let nonnull = vals.len() + wide;
    let null_frac = if n == 0 {
        0.0
    } else {
        (n - nonnull) as f64 / n as f64
    };
    let whole = n as f64 >= total;
    let n_distinct = distinct(&runs, wide, (nonnull, null_frac), total, whole);
    let mcv = common(&runs, whole);
    let histogram = histogram(&runs, &mcv);
    ColumnStats {
        null_frac,
        n_distinct,
        avg_width: width.checked_div(nonnull).unwrap_or(0) as u32,
        mcv: mcv
            .into_iter()
            .map(|(v, c)| (v.clone(), c as f64 / n.max(1) as f64))
            .collect(),
        histogram,
        correlation,
    }
}

/// Rule 6: the correlation of the values' sorted order with their rows' physical
/// ranks, given in sorted order (PostgreSQL's compute_scalar_stats); None for
/// fewer than two values.
fn correlation(ranks: impl ExactSizeIterator<Item = usize>) -> Option<f64> {
    let n = ranks.len() as f64;
    if n < 2.0 {
        return None;
    }
    let xy: f64 = ranks.enumerate().map(|(i, r)| i as f64 * r as f64).sum();
    let x = (n - 1.0) * n / 2.0;
    let x2 = (n - 1.0) * n * (2.0 * n - 1.0) / 6.0;
    let r = (n * xy - x * x) / (n * x2 - x * x);
    Some(r.clamp(-1.0, 1.0))
}

/// Rule 2: PostgreSQL's stadistinct; each too-wide value (rule 5) counts as seen once.
fn distinct(
    runs: &[(&Datum, usize)],
    wide: usize,
    (nonnull, null_frac): (usize, f64),
    total: f64,
    whole: bool,
) -> f64 {
    let d = (runs.len() + wide) as f64;
    if nonnull == 0 {
        return 0.0;
    }
    let f1 = (runs.iter().filter(|(_, c)| *c == 1).count() + wide) as f64;
    let est = if whole {
        d
    } else if f1 as usize == nonnull {
        // Every sampled value unique: assume the column is.
        return -(1.0 - null_frac);
    } else {
        let n = nonnull as f64;
        let rows = (total * (1.0 - null_frac)).max(n);
        let est = n * d / ((n - f1) + f1 * n / rows);
        est.clamp(d, rows).floor()
    };
    if total > 0.0 && est > 0.1 * total {
        -(est / total)
    } else {
        est
    }
}

/// Rule 3: the most common values and their counts, commonest first.
fn common<'a>(runs: &[(&'a Datum, usize)], whole: bool) -> Vec<(&'a Datum, usize)> {
    if runs.is_empty() {
        return Vec::new();
    }
    let mut out: Vec<(&Datum, usize)> = if whole && runs.len() <= STATISTICS_TARGET {
        runs.to_vec()
    } else {
        let nonnull: usize = runs.iter().map(|(_, c)| c).sum();
        let avg = nonnull as f64 / runs.len() as f64;
        let min = (avg * 1.25).max(2.0);
        runs.iter()
            .filter(|(_, c)| *c as f64 >= min)
            .copied()
            .collect()
    };
    out.sort_by(|a, b| b.1.cmp(&a.1).then_with(|| compare(a.0, b.0)));
    out.truncate(STATISTICS_TARGET);
    out
}

/// Rule 4: bounds of equal-count buckets over the values outside `mcv`.
fn histogram(runs: &[(&Datum, usize)], mcv: &[(&Datum, usize)]) -> Vec<Datum> {
    let is_mcv = |v: &Datum| mcv.iter().any(|(m, _)| compare(m, v) == Ordering::Equal);
    let rest: Vec<(&Datum, usize)> = runs.iter().filter(|(v, _)| !is_mcv(v)).copied().collect();
    if rest.len() < 2 {
        return Vec::new();
    }
    let values: Vec<&Datum> = rest
        .iter()
        .flat_map(|(v, c)| std::iter::repeat_n(*v, *c))
        .collect();
    let bounds = rest.len().min(STATISTICS_TARGET + 1);
    let last = values.len() - 1;
    let mut out: Vec<Datum> = Vec::with_capacity(bounds);
    for i in 0..bounds {
        let v = values[i * last / (bounds - 1)];
        if out.last().is_none_or(|w| compare(w, v) != Ordering::Equal) {
            out.push(v.clone());
        }
    }
    if out.len() < 2 {
        out.clear();
    }
    out
}

/// A value's stored width, roughly (rule 2's average width).
fn varlena(len: usize) -> usize {
    len + if len < 127 { 1 } else { 4 }
}

fn datum_width(d: &Datum) -> usize {
    match d {
        Datum::Null => 0,
        Datum::Bool(_) => 1,
        Datum::Int2(_) => 2,
        Datum::Int4(_) | Datum::Date(_) | Datum::Float4(_) => 4,
        // PostgreSQL's stored width: a one-byte header up to 126 bytes.
        Datum::Text(s) => varlena(s.len()),
        Datum::Bytea(b) => varlena(b.len()),
        Datum::Numeric(_) | Datum::Uuid(_) | Datum::Interval(_) => 16,
        _ => 8,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn whole_table_statistics_are_exact() {
        // 1000 rows: 25 nations evenly, every 10th NULL.
        let vals: Vec<Datum> = (0..1000)
            .map(|i| match i % 10 {
                0 => Datum::Null,
                _ => Datum::Int4(i % 25),
            })
            .collect();
        let vals: Vec<Sampled> = vals.into_iter().map(Sampled::Value).collect();
        let c = column_stats(vals.iter().enumerate(), 1000.0);
        assert!((c.null_frac - 0.1).abs() < 1e-9);
        assert_eq!(c.n_distinct, 25.0);
        assert_eq!(
            c.mcv.len(),
            25,
            "rule 3: all values, the sample being whole"
        );
        assert!(c.histogram.is_empty());
        let sum: f64 = c.mcv.iter().map(|(_, f)| f).sum();
        assert!((sum - 0.9).abs() < 1e-9);
    }

    #[test]
    fn a_unique_column_is_a_fraction_with_a_histogram() {
        let vals: Vec<Sampled> = (0..5000).map(|i| Sampled::Value(Datum::Int4(i))).collect();
        let c = column_stats(vals.iter().enumerate(), 5000.0);
        assert_eq!(c.n_distinct, -1.0);
        assert!(c.mcv.is_empty());
        assert_eq!(c.histogram.len(), STATISTICS_TARGET + 1);
        assert_eq!(c.histogram[0], Datum::Int4(0));
        assert_eq!(c.histogram[STATISTICS_TARGET], Datum::Int4(4999));
        // A sample of a larger table: every value unique is taken as unique.
        let c = column_stats(vals.iter().enumerate(), 50_000.0);
        assert_eq!(c.n_distinct, -1.0);
    }

    #[test]
    fn correlation_follows_the_physical_order() {
        // Ranks given in the values' sorted order.
        assert_eq!(correlation(0..100usize), Some(1.0));
        assert_eq!(correlation((0..100usize).rev()), Some(-1.0));
        assert_eq!(correlation(std::iter::once(3usize)), None);
        let scattered: Vec<usize> = (0..1000).map(|i| i * 7919 % 1000).collect();
        let r = correlation(scattered.into_iter()).unwrap();
        assert!(r.abs() < 0.1, "{r}");
    }

    #[test]
    fn a_reservoir_keeps_a_uniform_sample() {
        let mut s = Sampler::new(100);
        for i in 0..10_000 {
            s.offer(&[Datum::Int4(i)]);
        }
        assert_eq!((s.rows.len(), s.seen), (100, 10_000));
        let high = s
            .rows
            .iter()
            .filter(|r| matches!(r[0], Sampled::Value(Datum::Int4(v)) if v >= 5000))
            .count();
        assert!(
            (30..=70).contains(&high),
            "{high} of 100 from the upper half"
        );
        let t = table_stats(&s, &[true], 40);
        assert_eq!((t.reltuples, t.relpages), (10_000.0, 40));
        // Rule 5: wide values are kept as their widths, distinct and non-null.
        let mut s = Sampler::new(100);
        for i in 0..50 {
            s.offer(&[Datum::Text(format!("{i}").repeat(2000))]);
            s.offer(&[Datum::Text("short".into())]);
        }
        assert!(s.rows.iter().all(|r| match &r[0] {
            Sampled::Wide(n) => *n >= 2000,
            Sampled::Value(Datum::Text(t)) => t.len() <= WIDTH_THRESHOLD,
            _ => false,
        }));
        let c = table_stats(&s, &[true], 1).columns[0].clone().unwrap();
        assert_eq!(c.null_frac, 0.0);
        assert_eq!(
            c.n_distinct, -0.51,
            "50 wide values and one short one, of 100 rows"
        );
        assert_eq!(c.mcv.len(), 1, "only the short value is kept");
        assert!(c.avg_width > 1000);
    }
}
