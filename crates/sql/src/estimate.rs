//! Size estimates for the planner's choices, as PostgreSQL makes them: from ANALYZE's
//! statistics where a table has them (rule 5), else as for a table it has none of.
//!
//! Rules (cited as "estimate rule N"):
//! 1. A table's rows: its main fork's pages (at least 10 for a table ANALYZE has
//!    not seen, as PostgreSQL assumes of a table never vacuumed) times the tuples a page holds at the
//!    row's estimated width (fixed-width types their size, `varchar(n)`/`char(n)`
//!    n, unbounded text 32, plus the tuple header and line pointer).
//! 2. A condition's selectivity: PostgreSQL's defaults — equality 1/200
//!    (`DEFAULT_EQ_SEL`), inequality 1/3, LIKE 1/200, IS NULL 1/200, an IN list
//!    1/200 per item; AND multiplies, OR adds as independent events, NOT takes the
//!    complement. Equality with a column that alone makes a unique index: 1/rows.
//! 3. A join's equalities between two relations: 1 / the larger number of distinct
//!    values on either side — a side's columns covering a unique index have as many
//!    as its rows, any other column min(200, rows) (`DEFAULT_NUM_DISTINCT`).
//! 4. A rel that is not a table: a subquery 1,000 rows (one if it aggregates
//!    without grouping; a plain SELECT without DISTINCT, LIMIT or OFFSET its
//!    FROM's rows under its WHERE), VALUES its rows, generate_series 1,000 (PostgreSQL's
//!    default for a set-returning function), an outer join its preserved side's.
//! 5. A table ANALYZE has seen (`gather` rules) is estimated from its statistics
//!    instead, as PostgreSQL's selfuncs do: its rows are the rows it had per page
//!    times its pages now; a column's distinct values are its `n_distinct`;
//!    `col = const` is the constant's frequency among the most common values, else
//!    the rest spread evenly over the other distinct values; `col = x` with `x`
//!    fixed for the scan but unknown (a parameter, a correlated subquery's outer
//!    column) one distinct value's share of the non-NULL rows; `col <, <=, >, >=
//!    const` the fraction of the histogram and of the common values on that side;
//!    IS [NOT] NULL the null fraction. A column whose type changed since is
//!    estimated by rules 2 and 3.
//! 6. Conjuncts multiply, except a column's lower and upper bounds against values
//!    fixed for the scan: one range, `upper + lower - 1` (plus its null fraction),
//!    0.005 where either bound has no statistics (PostgreSQL's
//!    clauselist_selectivity and `DEFAULT_RANGE_INEQ_SEL`).

use crate::analyze::{Grouping, JoinKind, Rel, SetTree};
use crate::bind::{BinOp, Expr};
use crate::planner::Relations;
use crate::Datum;
use std::cmp::Ordering;
use std::sync::Arc;
use strata_engine::{ColType, ColumnStats, RelEntry, TableStats};

pub(crate) const DEFAULT_EQ_SEL: f64 = 0.005;
pub(crate) const DEFAULT_INEQ_SEL: f64 = 1.0 / 3.0;
pub(crate) const DEFAULT_NUM_DISTINCT: f64 = 200.0;
const PAGE_SPACE: f64 = 8192.0 - 24.0;
const TUPLE_OVERHEAD: f64 = 24.0 + 4.0;

pub(crate) struct Sizes<'a> {
    rels: &'a Relations<'a>,
}

/// A leaf as `join_sel` sees it: the rel, its offset in the join's row, its width.
pub(crate) type Side<'q> = (&'q Rel, usize, usize);

impl<'a> Sizes<'a> {
    pub(crate) fn new(rels: &'a Relations<'a>) -> Sizes<'a> {
        Sizes { rels }
    }

    /// A table's entry and its rows before any condition (estimate rules 1 and 5).
    fn table(&self, name: &str) -> Option<Table> {
        let entry = self.rels.entry(name).ok()??;
        let now = self.rels.pages(name);
        let stats = self.rels.stats(name);
        // Tuples a page holds at the row's estimated width.
        let by_width = || {
            let width: f64 = entry.columns.iter().map(col_width).sum();
            (PAGE_SPACE / (width + TUPLE_OVERHEAD)).floor().max(1.0)
        };
        let rows = match &stats {
            Some(s) if s.relpages > 0 => s.reltuples / s.relpages as f64 * now.max(1) as f64,
            // Vacuumed or analyzed while empty: its pages now, at the width's
            // density (PostgreSQL's estimate_rel_size).
            Some(_) => f64::from(now) * by_width(),
            // Never vacuumed or analyzed: at least 10 pages, as PostgreSQL assumes.
            None => f64::from(now.max(10)) * by_width(),
        };
        Some(Table { entry, rows, stats })
    }

    /// Rows of `rel` filtered by `conjs` (over its row).
    pub(crate) fn rel_rows(&self, rel: &Rel, conjs: &[Expr]) -> f64 {
        let (table, base) = match rel {
            Rel::Table { name, .. } => match self.table(name) {
                Some(t) => {
                    let rows = t.rows;
                    (Some(t), rows)
                }
                None => (None, 1000.0),
            },
            other => (None, self.other_rows(other)),
        };
        (base * conj_sel(conjs, table.as_ref())).max(1.0)
    }

    /// Estimate rule 4.
    fn other_rows(&self, rel: &Rel) -> f64 {
        match rel {
            Rel::One => 1.0,
            Rel::Subquery(q) => match &crate::cte::inlined(q).body {
                SetTree::Select(s) => match &s.grouping {
                    Some(Grouping { keys, .. }) if keys.is_empty() => 1.0,
                    // A plain SELECT's rows are its FROM's under its WHERE, as
                    // PostgreSQL sees them once it pulls the subquery up.
                    None if s.distinct == crate::analyze::Distinct::No
                        && q.limit.is_none()
                        && q.offset.is_none() =>
                    {
                        let mut conjs = Vec::new();
                        if let Some(f) = &s.filter {
                            crate::planner::split_and(f.clone(), &mut conjs);
                        }
                        self.rel_rows(&s.from, &conjs)
                    }
                    _ => 1000.0,
                },
                SetTree::Values(rows, _) => rows.len() as f64,
                _ => 1000.0,
            },
            Rel::Join(j) => {
                let (l, r) = (self.rel_rows(&j.left, &[]), self.rel_rows(&j.right, &[]));
                match j.kind {
                    JoinKind::Left | JoinKind::Semi | JoinKind::Anti => l,
                    JoinKind::Right => r,
                    _ => l.max(r),
                }
            }
            _ => 1000.0,
        }
    }

    /// The selectivity of the conditions `conds` between sides `a` and `b`
    /// (estimate rule 3; a condition that is not an equality of a column on each
    /// side counts 1/3).
    pub(crate) fn join_sel<'e>(
        &self,
        conds: impl Iterator<Item = &'e Expr>,
        a: Side<'_>,
        b: Side<'_>,
    ) -> f64 {
        let (ta, tb) = (self.side_table(a.0), self.side_table(b.0));
        let (mut ca, mut cb, mut other) = (Vec::new(), Vec::new(), 1.0);
        for c in conds {
            match column_pair(c, a, b) {
                Some((x, y)) => {
                    ca.push(x);
                    cb.push(y);
                }
                None => other *= DEFAULT_INEQ_SEL,
            }
        }
        if ca.is_empty() {
            return other;
        }
        let nd = |t: &Option<Table>, cols: &[usize], rows: f64| match t {
            Some(t) if unique_covered(&t.entry, cols) => t.rows,
            Some(t) => match (cols, t.column(cols[0])) {
                ([_], Some(c)) => c.distinct(t.rows).min(t.rows),
                _ => DEFAULT_NUM_DISTINCT.min(t.rows),
            },
            None => DEFAULT_NUM_DISTINCT.min(rows),
        };
        let (ra, rb) = (self.rel_rows(a.0, &[]), self.rel_rows(b.0, &[]));
        let covered = |t: &Option<Table>, cols: &[usize]| {
            t.as_ref().is_some_and(|t| unique_covered(&t.entry, cols))
        };
        if covered(&ta, &ca) || covered(&tb, &cb) {
            return other / nd(&ta, &ca, ra).max(nd(&tb, &cb, rb)).max(1.0);
        }
        let mut sel = other;
        for (x, y) in ca.iter().zip(&cb) {
            sel /= nd(&ta, &[*x], ra).max(nd(&tb, &[*y], rb)).max(1.0);
        }
        sel
    }

    /// A table scan as the cost model sees it (estimate rules 1, 2 and 5): the
    /// table's rows before `filter`, its pages (10 for one never filled, as rule
    /// 1), and the rows `filter`'s conjuncts keep. None for a name the catalog has no table of.
    pub(crate) fn scan<'e>(
        &self,
        name: &str,
        filter: impl IntoIterator<Item = &'e Expr>,
    ) -> Option<(f64, f64, f64)> {
        let t = self.table(name)?;
        let pages = match self.rels.pages(name) {
            n if t.stats.is_none() => f64::from(n.max(10)),
            n => f64::from(n.max(1)),
        };
        let sel = conj_sel(filter, Some(&t));
        Some((t.rows, pages, (t.rows * sel).max(1.0)))
    }

    /// Every column's average width in bytes (ANALYZE's, else its type's:
    /// estimate rule 1), 0 for one
    /// `cols` leaves out; one lookup of the table. None for no table.
    pub(crate) fn column_widths(&self, name: &str, cols: Option<&[bool]>) -> Option<Vec<f64>> {
        let t = self.table(name)?;
        let widths = (0..t.entry.columns.len())
            .map(
                |c| match cols.is_none_or(|m| m.get(c).copied().unwrap_or(true)) {
                    true => match t.column(c) {
                        Some(s) => f64::from(s.avg_width),
                        None => col_width(&t.entry.columns[c]),
                    },
                    false => 0.0,
                },
            )
            .collect();
        Some(widths)
    }

    /// Table column `c`'s distinct values, where something says (a unique index
    /// on it alone, or ANALYZE); None when only the default would.
    pub(crate) fn column_distinct(&self, name: &str, c: usize) -> Option<f64> {
        let t = self.table(name)?;
        if unique_covered(&t.entry, &[c]) {
            return Some(t.rows);
        }
        t.column(c).map(|s| s.distinct(t.rows).min(t.rows))
    }

    /// The correlation of index `index`'s leading column with its table's
    /// physical order, as PostgreSQL's btcostestimate takes it (three quarters of
    /// it for an index of several columns); 0 where ANALYZE has not said.
    pub(crate) fn index_correlation(&self, name: &str, index: &str) -> f64 {
        let Some(t) = self.table(name) else {
            return 0.0;
        };
        let Some(ix) = t.entry.indexes.iter().find(|i| i.name == index) else {
            return 0.0;
        };
        let r = ix
            .columns
            .first()
            .and_then(|&c| t.column(c)?.correlation)
            .unwrap_or(0.0);
        if ix.columns.len() > 1 {
            r * 0.75
        } else {
            r
        }
    }

    fn side_table(&self, rel: &Rel) -> Option<Table> {
        match rel {
            Rel::Table { name, .. } => self.table(name),
            _ => None,
        }
    }
}

/// A table as the estimates see it: its entry, its rows, its statistics.
pub(crate) struct Table {
    entry: std::sync::Arc<RelEntry>,
    rows: f64,
    stats: Option<Arc<TableStats>>,
}

impl Table {
    /// Column `c`'s statistics, if ANALYZE gathered them for its present type
    /// (estimate rule 5).
    fn column(&self, c: usize) -> Option<&ColumnStats> {
        let s = self.stats.as_ref()?.columns.get(c)?.as_ref()?;
        s.fits(self.entry.columns.get(c)?.ty).then_some(s)
    }
}

/// `x = y` with `x` a column of side `a` and `y` of side `b` (either way round):
/// their positions in their sides' rows.
fn column_pair(c: &Expr, a: Side<'_>, b: Side<'_>) -> Option<(usize, usize)> {
    let Expr::Bin(x, BinOp::Eq, y) = c else {
        return None;
    };
    let (x, y) = (column(x)?, column(y)?);
    let inside = |c: usize, s: Side<'_>| (s.1..s.1 + s.2).contains(&c).then(|| c - s.1);
    match (inside(x, a), inside(y, b)) {
        (Some(i), Some(k)) => Some((i, k)),
        _ => Some((inside(y, a)?, inside(x, b)?)),
    }
}

/// The column `e` reads, through casts.
fn column(e: &Expr) -> Option<usize> {
    match e {
        Expr::Col(c) => Some(*c),
        Expr::Cast(x, _) | Expr::Fit(x, _) => column(x),
        Expr::Call(crate::bind::Func::BpcharText, args) if args.len() == 1 => column(&args[0]),
        _ => None,
    }
}

/// Whether `cols` include every column of one of the table's unique indexes.
fn unique_covered(e: &RelEntry, cols: &[usize]) -> bool {
    e.indexes
        .iter()
        .any(|ix| ix.unique && ix.columns.iter().all(|c| cols.contains(c)))
}

fn col_width(c: &strata_engine::Column) -> f64 {
    match c.ty {
        ColType::Bool => 1.0,
        ColType::Int2 => 2.0,
        ColType::Int4 | ColType::Date | ColType::Float4 => 4.0,
        ColType::Numeric | ColType::Uuid => 16.0,
        ColType::Text | ColType::Bytea => c.max_chars.map_or(32.0, |n| n as f64),
        _ => 8.0,
    }
}

/// Estimate rule 2's selectivity of `e` over a row no table's statistics describe.
pub(crate) fn default_sel(e: &Expr) -> f64 {
    clause_sel(e, None).clamp(0.0, 1.0)
}

/// PostgreSQL's `DEFAULT_RANGE_INEQ_SEL`: a range whose bounds have no statistics.
const DEFAULT_RANGE_SEL: f64 = 0.005;

/// Estimate rule 6: the selectivity of conjuncts (ANDed, nested ANDs flattened) —
/// their product, except that a column's lower and upper bounds against fixed
/// values make one range, `upper + lower - 1` (PostgreSQL's
/// clauselist_selectivity).
fn conj_sel<'e>(conjs: impl IntoIterator<Item = &'e Expr>, table: Option<&Table>) -> f64 {
    fn walk<'e>(e: &'e Expr, out: &mut Vec<&'e Expr>) {
        match e {
            Expr::Bool(BinOp::And, v) => v.iter().for_each(|x| walk(x, out)),
            Expr::Bin(x, BinOp::And, y) => {
                walk(x, out);
                walk(y, out);
            }
            _ => out.push(e),
        }
    }
    let mut flat = Vec::new();
    conjs.into_iter().for_each(|e| walk(e, &mut flat));
    // (column, lower bound's selectivity, upper bound's): the most selective of each.
    let mut ranges: Vec<(usize, Option<f64>, Option<f64>)> = Vec::new();
    let mut sel = 1.0;
    for e in flat {
        let s = clause_sel(e, table);
        let Some((col, lower)) = bound(e) else {
            sel *= s;
            continue;
        };
        let at = match ranges.iter().position(|r| r.0 == col) {
            Some(i) => i,
            None => {
                ranges.push((col, None, None));
                ranges.len() - 1
            }
        };
        let slot = if lower {
            &mut ranges[at].1
        } else {
            &mut ranges[at].2
        };
        *slot = Some(slot.map_or(s, |o: f64| o.min(s)));
    }
    for (col, lo, hi) in ranges {
        sel *= match (lo, hi) {
            (Some(lo), Some(hi)) => {
                let nulls = table
                    .and_then(|t| t.column(col))
                    .map_or(0.0, |c| c.null_frac);
                range_sel(lo, hi, nulls)
            }
            (Some(s), None) | (None, Some(s)) => s,
            (None, None) => 1.0,
        };
    }
    sel
}

/// A column's two bounds as one range (PostgreSQL's clauselist_selectivity):
/// either without statistics gives the default; a negative sum beyond rounding
/// (bounds that contradict the statistics) the default too.
fn range_sel(lo: f64, hi: f64, nulls: f64) -> f64 {
    if lo == DEFAULT_INEQ_SEL || hi == DEFAULT_INEQ_SEL {
        return DEFAULT_RANGE_SEL;
    }
    match hi + lo - 1.0 + nulls {
        s if s > 0.0 => s,
        s if s < -0.01 => DEFAULT_RANGE_SEL,
        _ => 1.0e-10,
    }
}

/// `col op x` (either way round) with `op` an inequality and `x` fixed for the
/// scan: the column and whether it is a lower bound (`col > x`, `col >= x`).
fn bound(e: &Expr) -> Option<(usize, bool)> {
    let Expr::Bin(x, op, y) = e else {
        return None;
    };
    let (col, op) = match (column(x), column(y)) {
        (Some(c), None) if fixed(y) => (c, *op),
        (None, Some(c)) if fixed(x) => (c, flip(*op)?),
        _ => return None,
    };
    match op {
        BinOp::Gt | BinOp::Ge => Some((col, true)),
        BinOp::Lt | BinOp::Le => Some((col, false)),
        _ => None,
    }
}

/// Estimate rule 2, over a table's row when `table` is given (rule 5 where it has
/// statistics).
fn clause_sel(e: &Expr, table: Option<&Table>) -> f64 {
    if let Some(s) = table.and_then(|t| stats_sel(e, t)) {
        return s.clamp(0.0, 1.0);
    }
    let eq = |x: &Expr, y: &Expr| {
        let unique = |c: Option<usize>| {
            let t = table?;
            let c = c?;
            unique_covered(&t.entry, &[c]).then_some(1.0 / t.rows.max(1.0))
        };
        match (fixed(x), fixed(y)) {
            (false, true) => unique(column(x)),
            (true, false) => unique(column(y)),
            _ => None,
        }
        .unwrap_or(DEFAULT_EQ_SEL)
    };
    match e {
        Expr::Bin(x, BinOp::Eq, y) => eq(x, y),
        Expr::Bin(_, BinOp::Ne, _) => 1.0 - DEFAULT_EQ_SEL,
        Expr::Bin(_, BinOp::Lt | BinOp::Le | BinOp::Gt | BinOp::Ge, _) => DEFAULT_INEQ_SEL,
        Expr::Bool(BinOp::And, v) => conj_sel(v, table),
        Expr::Bin(x, BinOp::And, y) => conj_sel([&**x, &**y], table),
        Expr::Bin(x, BinOp::Or, y) => {
            let (a, b) = (clause_sel(x, table), clause_sel(y, table));
            a + b - a * b
        }
        Expr::Bool(BinOp::Or, v) => {
            1.0 - v
                .iter()
                .map(|x| 1.0 - clause_sel(x, table))
                .product::<f64>()
        }
        Expr::Not(x) => 1.0 - clause_sel(x, table),
        Expr::InList(x, items, negated) => {
            let each =
                |i: &Expr| clause_sel(&Expr::Bin(x.clone(), BinOp::Eq, Box::new(i.clone())), table);
            let s = items.iter().map(each).sum::<f64>().min(1.0);
            if *negated {
                1.0 - s
            } else {
                s
            }
        }
        Expr::IsNull(_, not) => {
            if *not {
                1.0 - DEFAULT_EQ_SEL
            } else {
                DEFAULT_EQ_SEL
            }
        }
        Expr::Special(s) => match **s {
            crate::conditional::Special::Like { negated: false, .. } => DEFAULT_EQ_SEL,
            crate::conditional::Special::Like { negated: true, .. } => 1.0 - DEFAULT_EQ_SEL,
            _ => DEFAULT_INEQ_SEL,
        },
        _ => DEFAULT_INEQ_SEL,
    }
}

/// The constant `e` is (through casts), if it is one.
fn constant(e: &Expr) -> Option<&Datum> {
    match e {
        Expr::Const(d) => Some(d),
        Expr::Cast(x, _) | Expr::Fit(x, _) => constant(x),
        _ => None,
    }
}

/// Whether `e` has one value for the whole scan though not known when planning: a
/// constant, a parameter, the enclosing query's column (a correlated subquery's
/// condition) or an uncorrelated scalar subquery, through casts.
fn fixed(e: &Expr) -> bool {
    match e {
        Expr::Const(_) | Expr::Param(_) | Expr::Outer(..) => true,
        Expr::Cast(x, _) | Expr::Fit(x, _) => fixed(x),
        // An uncorrelated scalar subquery runs once (an InitPlan's $n).
        Expr::SubLink(l) => !l.correlated && l.kind == crate::subquery::SubKind::Scalar,
        _ => false,
    }
}

/// Rule 5: a comparison of a column with statistics and a constant, or IS NULL;
/// `col = x` with `x` fixed but unknown is one distinct value's share
/// (PostgreSQL's var_eq_non_const).
fn stats_sel(e: &Expr, t: &Table) -> Option<f64> {
    if let Expr::IsNull(x, not) = e {
        let c = t.column(column(x)?)?;
        return Some(if *not { 1.0 - c.null_frac } else { c.null_frac });
    }
    let Expr::Bin(x, op, y) = e else {
        return None;
    };
    if *op == BinOp::Eq && constant(x).is_none() && constant(y).is_none() {
        let col = match (column(x), column(y)) {
            (Some(c), None) if fixed(y) => c,
            (None, Some(c)) if fixed(x) => c,
            _ => return None,
        };
        let c = t.column(col)?;
        return Some((1.0 - c.null_frac) / c.distinct(t.rows).max(1.0));
    }
    // The column on the left: `const op col` is `col op' const`.
    let (col, op, k) = match (column(x), constant(y), column(y), constant(x)) {
        (Some(c), Some(k), _, _) => (c, *op, k),
        (_, _, Some(c), Some(k)) => (c, flip(*op)?, k),
        _ => return None,
    };
    let c = t.column(col)?;
    if k.is_null() {
        return Some(0.0);
    }
    match op {
        BinOp::Eq => Some(eq_sel(c, k, t.rows)),
        BinOp::Ne => Some(1.0 - eq_sel(c, k, t.rows) - c.null_frac),
        BinOp::Lt | BinOp::Le => Some(below_sel(c, k, op == BinOp::Le)),
        BinOp::Gt | BinOp::Ge => Some(1.0 - c.null_frac - below_sel(c, k, op == BinOp::Gt)),
        _ => None,
    }
}

fn flip(op: BinOp) -> Option<BinOp> {
    Some(match op {
        BinOp::Eq | BinOp::Ne => op,
        BinOp::Lt => BinOp::Gt,
        BinOp::Le => BinOp::Ge,
        BinOp::Gt => BinOp::Lt,
        BinOp::Ge => BinOp::Le,
        _ => return None,
    })
}

/// `col = k`: its frequency among the common values, else the others' share spread
/// over the other distinct values (PostgreSQL's var_eq_const).
fn eq_sel(c: &ColumnStats, k: &Datum, rows: f64) -> f64 {
    let cmp = crate::bind::compare;
    if let Some((_, f)) = c.mcv.iter().find(|(v, _)| cmp(v, k) == Ordering::Equal) {
        return *f;
    }
    let mcv_sum: f64 = c.mcv.iter().map(|(_, f)| f).sum();
    let others = (c.distinct(rows) - c.mcv.len() as f64).max(1.0);
    ((1.0 - mcv_sum - c.null_frac) / others).clamp(0.0, 1.0)
}

/// The fraction of all rows below `k` (or at most `k` with `or_equal`): the common
/// values below it, plus the histogram's fraction below it of the rest
/// (PostgreSQL's scalarineqsel, interpolating within the bucket where both bounds
/// are numbers).
fn below_sel(c: &ColumnStats, k: &Datum, or_equal: bool) -> f64 {
    let cmp = crate::bind::compare;
    let below = |v: &Datum| match cmp(v, k) {
        Ordering::Less => true,
        Ordering::Equal => or_equal,
        Ordering::Greater => false,
    };
    let mcv_sum: f64 = c.mcv.iter().map(|(_, f)| f).sum();
    let mcv_below: f64 = c.mcv.iter().filter(|(v, _)| below(v)).map(|(_, f)| f).sum();
    let rest = (1.0 - mcv_sum - c.null_frac).max(0.0);
    let h = &c.histogram;
    let frac = if h.len() < 2 {
        DEFAULT_INEQ_SEL
    } else {
        let i = h.partition_point(|v| below(v));
        if i == 0 {
            0.0
        } else if i == h.len() {
            1.0
        } else {
            let same = |v: &Datum| std::mem::discriminant(v) == std::mem::discriminant(k);
            let within = match (as_f64(&h[i - 1]), as_f64(&h[i]), as_f64(k)) {
                (Some(lo), Some(hi), Some(x)) if hi > lo && same(&h[i - 1]) && same(&h[i]) => {
                    ((x - lo) / (hi - lo)).clamp(0.0, 1.0)
                }
                _ => 0.5,
            };
            ((i - 1) as f64 + within) / (h.len() - 1) as f64
        }
    };
    mcv_below + rest * frac
}

/// A number, date or time as a float (for interpolation).
fn as_f64(d: &Datum) -> Option<f64> {
    Some(match d {
        Datum::Int2(v) => *v as f64,
        Datum::Int4(v) | Datum::Date(v) => *v as f64,
        Datum::Int8(v) | Datum::Timestamp(v) | Datum::TimestampTz(v) | Datum::Time(v) => *v as f64,
        Datum::Float4(f) | Datum::Float8(f) => f.get(),
        Datum::Numeric(n) => n.to_string().parse().ok()?,
        _ => return None,
    })
}
