//! Size estimates for the planner's choices, as PostgreSQL makes them for a table
//! it has no statistics of (ANALYZE's statistics are not kept yet).
//!
//! Rules (cited as "estimate rule N"):
//! 1. A table's rows: its main fork's pages (10 when it has none, as PostgreSQL
//!    assumes of a table never vacuumed) times the tuples a page holds at the
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
//!    without grouping), VALUES its rows, generate_series 1,000 (PostgreSQL's
//!    default for a set-returning function), an outer join its preserved side's.

use crate::analyze::{Grouping, JoinKind, Rel, SetTree};
use crate::bind::{BinOp, Expr};
use crate::planner::Relations;
use strata_engine::{ColType, RelEntry};

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

    /// A table's entry and its rows before any condition (estimate rule 1).
    fn table(&self, name: &str) -> Option<(RelEntry, f64)> {
        let entry = self.rels.entry(name).ok()??;
        let pages = match self.rels.pages(name) {
            0 => 10.0,
            n => n as f64,
        };
        let width: f64 = entry.columns.iter().map(col_width).sum();
        let per_page = (PAGE_SPACE / (width + TUPLE_OVERHEAD)).floor().max(1.0);
        Some((entry, pages * per_page))
    }

    /// Rows of `rel` filtered by `conjs` (over its row).
    pub(crate) fn rel_rows(&self, rel: &Rel, conjs: &[Expr]) -> f64 {
        let (table, base) = match rel {
            Rel::Table { name, .. } => match self.table(name) {
                Some((e, rows)) => (Some((e, rows)), rows),
                None => (None, 1000.0),
            },
            other => (None, self.other_rows(other)),
        };
        let sel: f64 = conjs
            .iter()
            .map(|c| clause_sel(c, table.as_ref()))
            .product();
        (base * sel).max(1.0)
    }

    /// Estimate rule 4.
    fn other_rows(&self, rel: &Rel) -> f64 {
        match rel {
            Rel::One => 1.0,
            Rel::Subquery(q) => match &q.body {
                SetTree::Select(s) => match &s.grouping {
                    Some(Grouping { keys, .. }) if keys.is_empty() => 1.0,
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
        let nd = |t: &Option<(RelEntry, f64)>, cols: &[usize], rows: f64| match t {
            Some((e, r)) if unique_covered(e, cols) => *r,
            Some((_, r)) => DEFAULT_NUM_DISTINCT.min(*r),
            None => DEFAULT_NUM_DISTINCT.min(rows),
        };
        let (ra, rb) = (self.rel_rows(a.0, &[]), self.rel_rows(b.0, &[]));
        let covered = |t: &Option<(RelEntry, f64)>, cols: &[usize]| {
            t.as_ref().is_some_and(|(e, _)| unique_covered(e, cols))
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

    fn side_table(&self, rel: &Rel) -> Option<(RelEntry, f64)> {
        match rel {
            Rel::Table { name, .. } => self.table(name),
            _ => None,
        }
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

/// Estimate rule 2, over a table's row when `table` is given.
fn clause_sel(e: &Expr, table: Option<&(RelEntry, f64)>) -> f64 {
    let eq = |x: &Expr, y: &Expr| {
        let unique = |c: Option<usize>| {
            let (e, rows) = table?;
            let c = c?;
            unique_covered(e, &[c]).then_some(1.0 / rows.max(1.0))
        };
        let consts = |z: &Expr| {
            let mut cols = Vec::new();
            crate::privileges::expr_columns(z, &mut cols);
            cols.is_empty()
        };
        match (consts(x), consts(y)) {
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
        Expr::Bool(BinOp::And, v) => v.iter().map(|x| clause_sel(x, table)).product(),
        Expr::Bin(x, BinOp::And, y) => clause_sel(x, table) * clause_sel(y, table),
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
        Expr::InList(_, items, negated) => {
            let s = (items.len() as f64 * DEFAULT_EQ_SEL).min(1.0);
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
        Expr::Special(s) if matches!(**s, crate::conditional::Special::Like { .. }) => {
            DEFAULT_EQ_SEL
        }
        _ => DEFAULT_INEQ_SEL,
    }
}
