//! Aggregates over ordered input: ORDER BY inside an aggregate call
//! (`string_agg(x, ',' ORDER BY y)`) and WITHIN GROUP, PostgreSQL's ordered-set
//! aggregates (percentile_cont, percentile_disc, mode) and hypothetical-set
//! aggregates (rank, dense_rank, percent_rank, cume_dist).
//!
//! Entry points: [`Binder::agg_order`] and [`Binder::ordered_set`] (binding),
//! [`Ordered`] (an aggregate's rows held for sorting), [`finish_ordered_set`].
//!
//! Rules (cited as "aggorder rule N"):
//! 1. An aggregate with ORDER BY holds its group's rows (the ORDER BY keys with the
//!    arguments) and sorts them when the group ends, then feeds them to the plain
//!    aggregate in that order (PostgreSQL's per-group tuplesort). With DISTINCT
//!    every ORDER BY key must be an argument (42P10).
//! 2. An ordered-set aggregate's ORDER BY (its WITHIN GROUP) is its aggregated
//!    argument; its direct arguments are evaluated once per group, so like the
//!    select list they may read only the group's keys (analysis regroups them and
//!    reports 42803 otherwise) and no aggregate (42803 "cannot be nested").
//! 3. percentile_disc(p): the first value whose position in the sorted non-NULL
//!    values is at least p·n; percentile_cont(p): the linear interpolation between
//!    the values at positions floor and ceil of p·(n−1) (float8 or interval);
//!    p outside [0, 1] is 22003; no rows or a NULL p give NULL. mode(): the most
//!    frequent non-NULL value, the first in sort order among equals.
//! 4. A hypothetical-set aggregate places the row of its direct arguments among the
//!    group's rows in the WITHIN GROUP order (NULLs included): rank is one more than
//!    the rows before it, dense_rank one more than the distinct rows before it,
//!    percent_rank (rank − 1)/n (0 for no rows), cume_dist (the rows before it or
//!    its peers, plus one)/(n + 1). Each direct argument and its ORDER BY key are
//!    brought to one type (42804 "WITHIN GROUP types ... cannot be matched"); their
//!    counts must agree (42883).
//! 5. Memory: the group's rows, as PostgreSQL's sort holds them (they are not
//!    spilled: a group larger than memory fails by the allocation limit).

use crate::aggregate::AggState;
use crate::bind::{compare, Agg, AggFunc, Binder, Expr, Scope};
use crate::{Datum, SqlError, SqlResult, SqlType};
use sqlparser::ast;
use std::cmp::Ordering;
use strata_types::Float;

/// An ordered-set or hypothetical-set aggregate.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum OrderedSet {
    PercentileCont,
    PercentileDisc,
    Mode,
    Rank,
    DenseRank,
    PercentRank,
    CumeDist,
}

impl OrderedSet {
    pub fn from_name(name: &str) -> Option<OrderedSet> {
        Some(match name {
            "percentile_cont" => OrderedSet::PercentileCont,
            "percentile_disc" => OrderedSet::PercentileDisc,
            "mode" => OrderedSet::Mode,
            "rank" => OrderedSet::Rank,
            "dense_rank" => OrderedSet::DenseRank,
            "percent_rank" => OrderedSet::PercentRank,
            "cume_dist" => OrderedSet::CumeDist,
            _ => return None,
        })
    }

    pub fn name(self) -> &'static str {
        match self {
            OrderedSet::PercentileCont => "percentile_cont",
            OrderedSet::PercentileDisc => "percentile_disc",
            OrderedSet::Mode => "mode",
            OrderedSet::Rank => "rank",
            OrderedSet::DenseRank => "dense_rank",
            OrderedSet::PercentRank => "percent_rank",
            OrderedSet::CumeDist => "cume_dist",
        }
    }

    /// Hypothetical-set (rule 4), else ordered-set (rule 3).
    pub fn hypothetical(self) -> bool {
        matches!(
            self,
            OrderedSet::Rank
                | OrderedSet::DenseRank
                | OrderedSet::PercentRank
                | OrderedSet::CumeDist
        )
    }
}

/// One ORDER BY key of an aggregate: expression, descending, NULLs first.
pub type AggKey = (Expr, bool, bool);

impl Binder {
    /// A call of an ordered-set aggregate (rules 2-4), appended to `aggs`; None if
    /// `f` is no such call.
    pub(crate) fn ordered_set_call(
        &mut self,
        scope: &Scope,
        f: &ast::Function,
        name: &str,
        aggs: &mut Option<&mut Vec<Agg>>,
    ) -> SqlResult<Option<(Expr, SqlType)>> {
        let kind = OrderedSet::from_name(name);
        if f.within_group.is_empty() {
            return match kind {
                Some(k) if !k.hypothetical() => Err(self.within_group_required(scope, f, k)),
                _ => Ok(None),
            };
        }
        let Some(kind) = kind else {
            return Ok(None);
        };
        let list = aggs.as_deref_mut();
        self.aggregate_with(scope, f, list, |b| b.ordered_set(scope, f, kind))
            .map(Some)
    }

    /// An ordered-set aggregate called without WITHIN GROUP: 42809 if its
    /// arguments would fit it with one (direct arguments and the aggregated one),
    /// else 42883 for the call as written.
    fn within_group_required(
        &mut self,
        scope: &Scope,
        f: &ast::Function,
        k: OrderedSet,
    ) -> SqlError {
        let args = match crate::bind::function_args(f) {
            Ok((args, _)) => args,
            Err(e) => return e,
        };
        let fits = usize::from(k != OrderedSet::Mode) + 1;
        if args.len() == fits {
            return SqlError::new(
                "42809",
                format!(
                    "WITHIN GROUP is required for ordered-set aggregate {}",
                    k.name()
                ),
            );
        }
        let mut types = Vec::new();
        for a in &args {
            match self.expr_in(scope, a, &mut None) {
                Ok((_, t)) => types.push(t.name()),
                Err(e) => return e,
            }
        }
        SqlError::new(
            "42883",
            format!("function {}({}) does not exist", k.name(), types.join(", ")),
        )
        .with_hint("No function matches the given name and argument types. You might need to add explicit type casts.")
    }

    /// The ORDER BY keys of `keys` (rule 1), bound over the aggregate's input rows.
    pub(crate) fn agg_order(
        &mut self,
        scope: &Scope,
        keys: &[ast::OrderByExpr],
    ) -> SqlResult<Vec<(AggKey, SqlType)>> {
        let mut out = Vec::with_capacity(keys.len());
        for o in keys {
            let desc = match &o.options.sort {
                None | Some(ast::OrderBySort::Asc) => false,
                Some(ast::OrderBySort::Desc) => true,
                Some(_) => return Err(SqlError::unsupported("ORDER BY ... USING")),
            };
            let (x, t) = self.expr_in(scope, &o.expr, &mut None)?;
            let (x, t) = self.settle_type(x, t);
            let x = if t == SqlType::Bpchar {
                crate::bind::bpchar_text(x)
            } else {
                x
            };
            out.push(((x, desc, o.options.nulls_first.unwrap_or(desc)), t));
        }
        Ok(out)
    }

    /// An ordered-set aggregate call `f` with WITHIN GROUP (rules 2-4).
    pub(crate) fn ordered_set(
        &mut self,
        scope: &Scope,
        f: &ast::Function,
        kind: OrderedSet,
    ) -> SqlResult<Agg> {
        let args = match &f.args {
            ast::FunctionArguments::List(l) => {
                if !l.clauses.is_empty() {
                    return Err(SqlError::syntax(
                        "cannot use multiple ORDER BY clauses with WITHIN GROUP",
                    ));
                }
                if l.duplicate_treatment == Some(ast::DuplicateTreatment::Distinct) {
                    return Err(SqlError::syntax("cannot use DISTINCT with WITHIN GROUP"));
                }
                l.args.clone()
            }
            _ => Vec::new(),
        };
        let mut direct = Vec::with_capacity(args.len());
        for a in &args {
            let ast::FunctionArg::Unnamed(ast::FunctionArgExpr::Expr(e)) = a else {
                return Err(SqlError::unsupported(format!("the argument {a}")));
            };
            direct.push((self.expr_in(scope, e, &mut None)?, e));
        }
        let keys = self.agg_order(scope, &f.within_group)?;
        let filter = self.agg_filter(scope, f)?;
        let (direct, order, ty) = if kind.hypothetical() {
            self.hypothetical_args(kind, direct, keys)?
        } else {
            self.ordered_set_args(kind, direct, keys)?
        };
        Ok(Agg {
            func: AggFunc::Ordered(kind),
            arg: None,
            ty,
            distinct: false,
            filter,
            arg2: None,
            order,
            direct,
        })
    }

    /// percentile_cont / percentile_disc / mode: one direct argument (float8) but
    /// for mode, one key; the result type (rule 3).
    fn ordered_set_args(
        &mut self,
        kind: OrderedSet,
        direct: Vec<((Expr, SqlType), &ast::Expr)>,
        mut keys: Vec<(AggKey, SqlType)>,
    ) -> SqlResult<(Vec<Expr>, Vec<AggKey>, SqlType)> {
        let want = usize::from(kind != OrderedSet::Mode);
        if direct.len() != want || keys.len() != 1 {
            return Err(no_such_call(kind, &direct, &keys));
        }
        let mut out = Vec::with_capacity(1);
        for ((e, t), src) in direct {
            out.push(
                self.coerce(e, t, SqlType::Float8)
                    .map_err(|e| e.at(src_span(src)))?,
            );
        }
        let ((key, desc, nf), kt) = keys.remove(0);
        let (key, ty) = match (kind, kt) {
            (OrderedSet::PercentileCont, SqlType::Interval) => (key, kt),
            (OrderedSet::PercentileCont, _) => {
                (self.coerce(key, kt, SqlType::Float8)?, SqlType::Float8)
            }
            _ => (key, kt),
        };
        Ok((out, vec![(key, desc, nf)], ty))
    }

    /// rank / dense_rank / percent_rank / cume_dist: each direct argument with its
    /// key, brought to one type (rule 4).
    fn hypothetical_args(
        &mut self,
        kind: OrderedSet,
        direct: Vec<((Expr, SqlType), &ast::Expr)>,
        keys: Vec<(AggKey, SqlType)>,
    ) -> SqlResult<(Vec<Expr>, Vec<AggKey>, SqlType)> {
        if direct.len() != keys.len() {
            return Err(no_such_call(kind, &direct, &keys));
        }
        let (mut args, mut order) = (Vec::new(), Vec::new());
        for (((d, dt), src), ((k, desc, nf), kt)) in direct.into_iter().zip(keys) {
            let at = |e: SqlError| e.at(src_span(src));
            let t = crate::conditional::common_type(&[kt, dt], "WITHIN GROUP").map_err(at)?;
            args.push(self.to_common(d, dt, t).map_err(at)?);
            order.push((self.to_common(k, kt, t)?, desc, nf));
        }
        let ty = match kind {
            OrderedSet::Rank | OrderedSet::DenseRank => SqlType::Int8,
            _ => SqlType::Float8,
        };
        Ok((args, order, ty))
    }
}

/// 42883 for an ordered-set call whose arguments fit no signature: its direct
/// arguments' types, then its WITHIN GROUP keys'.
fn no_such_call(
    kind: OrderedSet,
    direct: &[((Expr, SqlType), &ast::Expr)],
    keys: &[(AggKey, SqlType)],
) -> SqlError {
    let mut types: Vec<&str> = direct.iter().map(|((_, t), _)| t.name()).collect();
    types.extend(keys.iter().map(|(_, t)| t.name()));
    SqlError::new(
        "42883",
        format!("function {}({}) does not exist", kind.name(), types.join(", ")),
    )
    .with_hint(
        "No function matches the given name and argument types. You might need to add explicit type casts.",
    )
}

fn src_span(e: &ast::Expr) -> sqlparser::tokenizer::Span {
    use sqlparser::ast::Spanned;
    e.span()
}

/// The ORDER BY key of `keys` that is not one of `args` (rule 1's DISTINCT check).
pub(crate) fn distinct_order_ok(
    args: &[&Expr],
    keys: &[AggKey],
    src: &[ast::OrderByExpr],
) -> SqlResult<()> {
    let Some(i) = keys.iter().position(|(k, _, _)| !args.contains(&k)) else {
        return Ok(());
    };
    Err(SqlError::new(
        "42P10",
        "in an aggregate with DISTINCT, ORDER BY expressions must appear in argument list",
    )
    .at(src_span(&src[i].expr)))
}

/// A group's rows held for an aggregate with ORDER BY (rule 1): keys, argument
/// and second argument.
#[derive(Debug, Default)]
pub struct Ordered {
    rows: Vec<(Vec<Datum>, Datum, Datum)>,
    bytes: usize,
}

impl Ordered {
    pub fn push(&mut self, keys: Vec<Datum>, v: Datum, d: Datum) -> SqlResult<()> {
        self.bytes += crate::sort::row_bytes(std::slice::from_ref(&v), &keys)
            + crate::sort::row_bytes(std::slice::from_ref(&d), &[]);
        crate::alloc_request(self.bytes)?;
        self.rows.push((keys, v, d));
        Ok(())
    }

    /// The rows in the aggregate's ORDER BY order.
    fn sorted(self, a: &Agg) -> Vec<(Vec<Datum>, Datum, Datum)> {
        let dirs: Vec<(bool, bool)> = a.order.iter().map(|(_, d, n)| (*d, *n)).collect();
        let mut rows = self.rows;
        crate::sort::pg_qsort(&mut rows, &mut |x, y| {
            crate::window::cmp_keys(&x.0, &y.0, &dirs)
        });
        rows
    }

    /// A plain aggregate's value over the rows in order (rule 1).
    pub fn feed(self, a: &Agg, mut plain: AggState) -> SqlResult<Datum> {
        for (_, v, d) in self.sorted(a) {
            plain.step(a, v, d)?;
        }
        plain.finish(a)
    }

    /// An ordered-set aggregate's value (rules 3-4); `direct`: its direct
    /// arguments' values for the group.
    pub fn finish_set(self, a: &Agg, kind: OrderedSet, direct: &[Datum]) -> SqlResult<Datum> {
        let rows = self.sorted(a);
        if kind.hypothetical() {
            return Ok(hypothetical(a, kind, &rows, direct));
        }
        let vals: Vec<&Datum> = rows
            .iter()
            .map(|r| &r.0[0])
            .filter(|v| !v.is_null())
            .collect();
        match kind {
            OrderedSet::Mode => Ok(mode(&vals)),
            _ => percentile(kind, &vals, direct.first().unwrap_or(&Datum::Null), a.ty),
        }
    }
}

/// mode(): the first value of the longest run of equal values.
fn mode(vals: &[&Datum]) -> Datum {
    let (mut best, mut best_n) = (None, 0usize);
    let mut i = 0;
    while i < vals.len() {
        let mut j = i + 1;
        while j < vals.len() && compare(vals[j], vals[i]) == Ordering::Equal {
            j += 1;
        }
        if j - i > best_n {
            (best, best_n) = (Some(vals[i]), j - i);
        }
        i = j;
    }
    best.cloned().unwrap_or(Datum::Null)
}

/// percentile_disc / percentile_cont of `p` over the sorted values (rule 3).
fn percentile(kind: OrderedSet, vals: &[&Datum], p: &Datum, ty: SqlType) -> SqlResult<Datum> {
    let p = match p {
        Datum::Float8(f) => f.get(),
        _ => return Ok(Datum::Null),
    };
    if !(0.0..=1.0).contains(&p) {
        return Err(SqlError::new(
            "22003",
            format!(
                "percentile value {} is not between 0 and 1",
                crate::numeric::format_float_in(p, false, 0)
            ),
        ));
    }
    let n = vals.len();
    if n == 0 {
        return Ok(Datum::Null);
    }
    if kind == OrderedSet::PercentileDisc {
        let row = (p * n as f64).ceil() as usize;
        return Ok(vals[row.max(1) - 1].clone());
    }
    let pos = p * (n - 1) as f64;
    let (first, second) = (pos.floor() as usize, pos.ceil() as usize);
    if first == second {
        return Ok(vals[first].clone());
    }
    let pct = pos - first as f64;
    lerp(vals[first], vals[second], pct, ty)
}

/// `lo + pct·(hi − lo)` (float8_lerp, interval_lerp).
fn lerp(lo: &Datum, hi: &Datum, pct: f64, ty: SqlType) -> SqlResult<Datum> {
    use crate::datefn as f;
    Ok(match (lo, hi) {
        (Datum::Interval(l), Datum::Interval(h)) if ty == SqlType::Interval => {
            let step = f::interval_mul(f::interval_mi(*h, *l)?, pct)?;
            Datum::Interval(f::interval_pl(*l, step)?)
        }
        (Datum::Float8(l), Datum::Float8(h)) => {
            Datum::Float8(Float::new(l.get() + pct * (h.get() - l.get())))
        }
        _ => Datum::Null,
    })
}

/// rank / dense_rank / percent_rank / cume_dist of the row `direct` (rule 4).
fn hypothetical(
    a: &Agg,
    kind: OrderedSet,
    rows: &[(Vec<Datum>, Datum, Datum)],
    direct: &[Datum],
) -> Datum {
    let dirs: Vec<(bool, bool)> = a.order.iter().map(|(_, d, n)| (*d, *n)).collect();
    let cmp = |r: &Vec<Datum>| crate::window::cmp_keys(r, direct, &dirs);
    let before = rows.iter().filter(|r| cmp(&r.0) == Ordering::Less).count();
    let n = rows.len();
    match kind {
        OrderedSet::Rank => Datum::Int8(before as i64 + 1),
        OrderedSet::DenseRank => {
            let mut distinct = 0usize;
            let mut last: Option<&Vec<Datum>> = None;
            for r in rows.iter().filter(|r| cmp(&r.0) == Ordering::Less) {
                if last.is_none_or(|l| crate::window::cmp_keys(l, &r.0, &dirs) != Ordering::Equal) {
                    distinct += 1;
                }
                last = Some(&r.0);
            }
            Datum::Int8(distinct as i64 + 1)
        }
        OrderedSet::PercentRank if n == 0 => Datum::Float8(Float::new(0.0)),
        OrderedSet::PercentRank => Datum::Float8(Float::new(before as f64 / n as f64)),
        _ => {
            let upto = rows
                .iter()
                .filter(|r| cmp(&r.0) != Ordering::Greater)
                .count();
            Datum::Float8(Float::new((upto + 1) as f64 / (n + 1) as f64))
        }
    }
}
