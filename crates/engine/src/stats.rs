//! Planner statistics: what ANALYZE learns of a table's columns (PostgreSQL's
//! `pg_statistic` and `pg_class.reltuples`), and their byte form.
//!
//! Rules (cited as "stats rule N"):
//! 1. A table's statistics are one value ([`TableStats`]): its row count and pages
//!    when analyzed, and per column its null fraction, number of distinct values
//!    (PostgreSQL's `stadistinct` convention: > 0 a count, < 0 minus a fraction of the
//!    rows, 0 unknown), average width, most common values with their frequencies,
//!    and a histogram of the other values' bounds.
//! 2. The byte form is self-describing (each value tagged with its type), so it
//!    decodes without the table's columns; a column whose type changed since is the
//!    reader's to ignore ([`ColumnStats::fits`]).
//! 3. Statistics only guide the planner: wrong or stale ones make a plan slower,
//!    never an answer different.
//! 4. Statistics are stored as one catalog row, which is never TOASTed (catalog rule
//!    10): too big for a page, they are shrunk ([`TableStats::shrunk`]) rather than
//!    refused — histograms thinned evenly (their first and last bounds kept), MCV
//!    lists cut to their commonest values, each by half per step; only when no
//!    column keeps any values does a column (the last analyzed) lose its
//!    statistics. Null fractions, distinct counts and widths stay while their column
//!    does.
//! 5. A column's correlation (its values' order against the rows' physical order,
//!    which prices an index scan's heap reads) follows its other statistics in the
//!    byte form, marked by the column's tag 2; statistics stored before it was
//!    kept (tag 1) read as correlation unknown.
//! 6. The pages all visible (`relallvisible`, which prices an index-only scan's
//!    heap reads) end the byte form; statistics stored before they were kept
//!    read as none.

use crate::codec::{Dec, DecResult, DecodeError, Enc};
use crate::heap::{ColType, Datum, Numeric};
use strata_types::{Float, Interval};

/// One column's statistics (rule 1).
#[derive(Clone, Debug, PartialEq)]
pub struct ColumnStats {
    pub null_frac: f64,
    /// PostgreSQL's `stadistinct`: > 0 a count, < 0 minus a fraction of the rows.
    pub n_distinct: f64,
    pub avg_width: u32,
    /// The most common values and the fraction of all rows each is, commonest first.
    pub mcv: Vec<(Datum, f64)>,
    /// Bounds splitting the values not among `mcv` into equal-count buckets,
    /// ascending (none, or at least two).
    pub histogram: Vec<Datum>,
    /// How closely the values' order follows the rows' physical order, -1 to 1
    /// (PostgreSQL's `correlation`); None where unknown (rule 5).
    pub correlation: Option<f64>,
}

impl ColumnStats {
    /// Whether these statistics are of a column of type `ty` (rule 2). One ANALYZE
    /// keeps values of one type per column, so the first most common value and the
    /// first bound say it for all: asked at every column lookup of every planning,
    /// this reads two values, not the up to 200 kept.
    pub fn fits(&self, ty: ColType) -> bool {
        self.mcv
            .first()
            .map(|(d, _)| d)
            .into_iter()
            .chain(self.histogram.first())
            .all(|d| tag(d).is_some_and(|(_, t)| t == Some(ty)))
    }

    /// The number of distinct values among `rows` rows (resolving a fraction).
    pub fn distinct(&self, rows: f64) -> f64 {
        if self.n_distinct < 0.0 {
            (-self.n_distinct * rows).max(1.0)
        } else {
            self.n_distinct
        }
    }
}

/// A table's statistics (rule 1).
#[derive(Clone, Debug, PartialEq, Default)]
pub struct TableStats {
    pub reltuples: f64,
    pub relpages: u32,
    /// Pages the visibility map marked all visible when last counted (VACUUM,
    /// ANALYZE): PostgreSQL's `relallvisible` (rule 6).
    pub relallvisible: u32,
    /// By column position; None for a column not analyzed.
    pub columns: Vec<Option<ColumnStats>>,
}

impl TableStats {
    /// The byte form (rule 2).
    pub fn encode(&self) -> Vec<u8> {
        let mut e = Enc::new();
        e.u64(self.reltuples.to_bits()).u32(self.relpages);
        e.u32(self.columns.len() as u32);
        for c in &self.columns {
            let Some(c) = c else {
                e.u8(0);
                continue;
            };
            // Rule 5: 2 marks a column with its correlation, after the rest.
            e.u8(if c.correlation.is_some() { 2 } else { 1 });
            e.u64(c.null_frac.to_bits())
                .u64(c.n_distinct.to_bits())
                .u32(c.avg_width);
            e.u32(c.mcv.len() as u32);
            for (d, f) in &c.mcv {
                put(&mut e, d);
                e.u64(f.to_bits());
            }
            e.u32(c.histogram.len() as u32);
            for d in &c.histogram {
                put(&mut e, d);
            }
            if let Some(r) = c.correlation {
                e.u64(r.to_bits());
            }
        }
        e.u32(self.relallvisible); // rule 6
        e.0
    }

    /// A smaller version (rule 4), or None if no column has statistics left.
    /// O(values kept).
    pub fn shrunk(&self) -> Option<TableStats> {
        let mut s = self.clone();
        let mut changed = false;
        for c in s.columns.iter_mut().flatten() {
            if !c.mcv.is_empty() {
                c.mcv.truncate(c.mcv.len() / 2);
                changed = true;
            }
            if !c.histogram.is_empty() {
                c.histogram = thinned(&c.histogram);
                changed = true;
            }
        }
        if !changed {
            let last = s.columns.iter().rposition(Option::is_some)?;
            s.columns[last] = None;
        }
        Some(s)
    }

    pub fn decode(b: &[u8]) -> DecResult<TableStats> {
        let mut d = Dec::new(b, "statistics");
        let reltuples = f64::from_bits(d.u64()?);
        let relpages = d.u32()?;
        let n = d.count(1)?;
        let mut columns = Vec::with_capacity(n);
        for _ in 0..n {
            let tag = d.u8()?;
            if tag == 0 {
                columns.push(None);
                continue;
            }
            let null_frac = f64::from_bits(d.u64()?);
            let n_distinct = f64::from_bits(d.u64()?);
            let avg_width = d.u32()?;
            let m = d.count(9)?;
            let mut mcv = Vec::with_capacity(m);
            for _ in 0..m {
                let v = get(&mut d)?;
                mcv.push((v, f64::from_bits(d.u64()?)));
            }
            let h = d.count(1)?;
            let histogram = (0..h).map(|_| get(&mut d)).collect::<DecResult<_>>()?;
            let correlation = match tag {
                2 => Some(f64::from_bits(d.u64()?)),
                _ => None,
            };
            columns.push(Some(ColumnStats {
                null_frac,
                n_distinct,
                avg_width,
                mcv,
                histogram,
                correlation,
            }));
        }
        // Rule 6: absent from statistics stored before it was kept.
        let relallvisible = if d.remaining() > 0 { d.u32()? } else { 0 };
        d.finish()?;
        Ok(TableStats {
            reltuples,
            relpages,
            relallvisible,
            columns,
        })
    }
}

/// About half of histogram bounds `h`, evenly spaced, the first and last kept; none
/// once fewer than two would be left (a histogram has none or at least two).
fn thinned(h: &[Datum]) -> Vec<Datum> {
    let n = h.len();
    let keep = n.div_ceil(2);
    if keep < 2 {
        return Vec::new();
    }
    (0..keep)
        .map(|i| h[i * (n - 1) / (keep - 1)].clone())
        .collect()
}

/// A value's tag and column type (None: NULL, which has none).
fn tag(d: &Datum) -> Option<(u8, Option<ColType>)> {
    Some(match d {
        Datum::Null => (0, None),
        Datum::Int2(_) => (1, Some(ColType::Int2)),
        Datum::Int4(_) => (2, Some(ColType::Int4)),
        Datum::Int8(_) => (3, Some(ColType::Int8)),
        Datum::Text(_) => (4, Some(ColType::Text)),
        Datum::Bool(_) => (5, Some(ColType::Bool)),
        Datum::Timestamp(_) => (6, Some(ColType::Timestamp)),
        Datum::TimestampTz(_) => (7, Some(ColType::TimestampTz)),
        Datum::Date(_) => (8, Some(ColType::Date)),
        Datum::Uuid(_) => (9, Some(ColType::Uuid)),
        Datum::Bytea(_) => (10, Some(ColType::Bytea)),
        Datum::Float4(_) => (11, Some(ColType::Float4)),
        Datum::Float8(_) => (12, Some(ColType::Float8)),
        Datum::Numeric(_) => (13, Some(ColType::Numeric)),
        Datum::Time(_) => (14, Some(ColType::Time)),
        Datum::Interval(_) => (15, Some(ColType::Interval)),
        Datum::Lsn(_) => return None,
    })
}

fn put(e: &mut Enc, d: &Datum) {
    let Some((t, _)) = tag(d) else {
        e.u8(0);
        return;
    };
    e.u8(t);
    match d {
        Datum::Null | Datum::Lsn(_) => {}
        Datum::Int2(v) => {
            e.u16(*v as u16);
        }
        Datum::Int4(v) | Datum::Date(v) => {
            e.u32(*v as u32);
        }
        Datum::Int8(v) | Datum::Timestamp(v) | Datum::TimestampTz(v) | Datum::Time(v) => {
            e.u64(*v as u64);
        }
        Datum::Text(s) => {
            e.bytes(s.as_bytes());
        }
        Datum::Bytea(b) => {
            e.bytes(b);
        }
        Datum::Bool(b) => {
            e.u8(u8::from(*b));
        }
        Datum::Uuid(u) => {
            e.raw(u);
        }
        Datum::Float4(f) | Datum::Float8(f) => {
            e.u64(f.get().to_bits());
        }
        Datum::Numeric(n) => {
            let mut b = Vec::new();
            n.encode(&mut b);
            e.u32(b.len() as u32);
            e.raw(&b);
        }
        Datum::Interval(i) => {
            e.u32(i.months as u32)
                .u32(i.days as u32)
                .u64(i.micros as u64);
        }
    }
}

fn get(d: &mut Dec<'_>) -> DecResult<Datum> {
    Ok(match d.u8()? {
        0 => Datum::Null,
        1 => Datum::Int2(d.u16()? as i16),
        2 => Datum::Int4(d.u32()? as i32),
        3 => Datum::Int8(d.u64()? as i64),
        4 => Datum::Text(d.str()?),
        5 => Datum::Bool(d.u8()? != 0),
        6 => Datum::Timestamp(d.u64()? as i64),
        7 => Datum::TimestampTz(d.u64()? as i64),
        8 => Datum::Date(d.u32()? as i32),
        9 => Datum::Uuid(d.take(16)?.try_into().expect("16 bytes")),
        10 => Datum::Bytea(d.bytes()?.to_vec()),
        11 => Datum::Float4(Float::new(f64::from_bits(d.u64()?))),
        12 => Datum::Float8(Float::new(f64::from_bits(d.u64()?))),
        13 => {
            let n = d.u32()? as usize;
            Datum::Numeric(
                Numeric::decode(d.take(n)?).ok_or_else(|| DecodeError("bad numeric".into()))?,
            )
        }
        14 => Datum::Time(d.u64()? as i64),
        15 => Datum::Interval(Interval {
            months: d.u32()? as i32,
            days: d.u32()? as i32,
            micros: d.u64()? as i64,
        }),
        t => return Err(DecodeError(format!("statistics: bad value tag {t}"))),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trips_and_rejects_garbage() {
        let s = TableStats {
            reltuples: 1234.0,
            relpages: 7,
            relallvisible: 5,
            columns: vec![
                Some(ColumnStats {
                    null_frac: 0.25,
                    n_distinct: -0.5,
                    avg_width: 4,
                    mcv: vec![(Datum::Int4(3), 0.1), (Datum::Int4(9), 0.05)],
                    histogram: vec![Datum::Int4(1), Datum::Int4(50), Datum::Int4(99)],
                    correlation: Some(-0.75),
                }),
                None,
                Some(ColumnStats {
                    null_frac: 0.0,
                    n_distinct: 25.0,
                    avg_width: 12,
                    mcv: vec![(Datum::Text("ASIA".into()), 0.2)],
                    histogram: vec![],
                    correlation: None,
                }),
            ],
        };
        let b = s.encode();
        assert_eq!(TableStats::decode(&b).unwrap(), s);
        assert!(TableStats::decode(&b[..b.len() - 1]).is_err());
        // Rule 6: a form stored before relallvisible was kept reads as none.
        let old = TableStats::decode(&b[..b.len() - 4]).unwrap();
        assert_eq!((old.relallvisible, &old.columns), (0, &s.columns));
        let c = s.columns[0].as_ref().unwrap();
        assert!(c.fits(ColType::Int4) && !c.fits(ColType::Int8));
        assert_eq!(c.distinct(1234.0), 617.0);
    }

    /// Rule 4: each step is smaller; histograms keep their ends; the distinct counts
    /// stay until a column's values are all gone; the end is nothing.
    #[test]
    fn shrinking_thins_evenly_then_drops_columns() {
        let h: Vec<Datum> = (0..9).map(Datum::Int4).collect();
        assert_eq!(thinned(&h), [0, 2, 4, 6, 8].map(Datum::Int4).to_vec());
        assert_eq!(thinned(&h[..3]), [0, 2].map(Datum::Int4).to_vec());
        assert!(thinned(&h[..2]).is_empty());
        let col = |n: i32| ColumnStats {
            null_frac: 0.5,
            n_distinct: -1.0,
            avg_width: 8,
            mcv: (0..n).map(|i| (Datum::Int8(i.into()), 0.01)).collect(),
            histogram: (0..n).map(|i| Datum::Int8(i.into())).collect(),
            correlation: Some(1.0),
        };
        let mut s = TableStats {
            reltuples: 10.0,
            relpages: 1,
            relallvisible: 0,
            columns: vec![Some(col(100)), None, Some(col(7))],
        };
        let mut len = s.encode().len();
        let mut steps = 0;
        while let Some(next) = s.shrunk() {
            let l = next.encode().len();
            assert!(l < len, "step {steps} did not shrink");
            if next.columns[0].is_some() {
                let c = next.columns[0].as_ref().unwrap();
                assert_eq!((c.null_frac, c.n_distinct), (0.5, -1.0));
                if let (Some(first), Some(last)) = (c.histogram.first(), c.histogram.last()) {
                    assert_eq!((first, last), (&Datum::Int8(0), &Datum::Int8(99)));
                }
            }
            (s, len, steps) = (next, l, steps + 1);
        }
        assert!(s.columns.iter().all(Option::is_none));
        assert!(steps < 20, "{steps} steps");
    }
}
