//! Subqueries in expressions: scalar `(SELECT ...)`, EXISTS, `x [NOT] IN
//! (SELECT ...)`, `x op ANY / ALL (SELECT ...)`, correlated or not.
//!
//! Entry points: [`Binder::sublink`] (binding: the subquery analyzed in the scope
//! of the expression that holds it), [`SubRunner`] (what evaluation asks of the
//! executor, which runs the subquery's plan), [`quantified`] (ANY / ALL over the
//! subquery's rows).
//!
//! Rules (cited as "subquery rule N"):
//! 1. A name the subquery's own FROM does not have is looked up in the enclosing
//!    queries, innermost first ([`Expr::Outer`]); a subquery with such a reference
//!    to a query outside it is correlated and runs again for each row of that
//!    query, an uncorrelated one runs once per statement and its result is kept.
//! 2. A scalar subquery gives one column (42601 otherwise) and at most one row
//!    (21000 "more than one row returned by a subquery used as an expression");
//!    no row is NULL.
//! 3. `x op ANY (q)` is true if `x op v` is true for some row v of q, NULL if none is
//!    but one is NULL, else false (false over no rows); ALL is its dual (true over
//!    no rows). `x IN (q)` is `x = ANY (q)` and `x NOT IN (q)` is `NOT (x = ANY (q))`,
//!    PostgreSQL's NULL semantics included.
//! 4. An uncorrelated `x IN (q)` keeps q's values hashed: each outer row costs one
//!    lookup, not a pass over q's rows.
//! 5. A correlated subquery's result is kept by the values of the outer columns it
//!    reads ([`outer_deps`]): rows that agree on them run it once (PostgreSQL's
//!    Memoize does this for nested loops), up to 100,000 results a statement.
//! 6. EXISTS reads no column of its subquery's rows: their targets are NULLs
//!    ([`exists_form`]).

use crate::analyze::Query;
use crate::bind::{is_true, Agg, BinOp, Binder, Expr, Scope};
use crate::{Datum, SqlError, SqlResult, SqlType};
use sqlparser::ast;

/// Rule 6: an EXISTS subquery's targets, which nothing reads, as NULLs — unless
/// they decide its rows (grouping, windows, DISTINCT) — so its plan reads only
/// the columns its FROM and WHERE need (PostgreSQL's `simplify_EXISTS_query`).
#[inline(never)]
fn exists_form(q: &mut Query) {
    if let crate::analyze::SetTree::Select(s) = &mut q.body {
        if s.grouping.is_none()
            && s.windows.is_empty()
            && s.distinct == crate::analyze::Distinct::No
        {
            s.targets
                .iter_mut()
                .for_each(|t| *t = Expr::Const(Datum::Null));
        }
    }
}

/// A bound subquery expression.
#[derive(Clone, Debug, PartialEq)]
pub struct SubLink {
    pub kind: SubKind,
    pub query: Query,
    /// It references an enclosing query's columns (subquery rule 1).
    pub correlated: bool,
}

#[derive(Clone, Debug, PartialEq)]
pub enum SubKind {
    Exists,
    Scalar,
    /// `lhs op ANY / ALL (q)`: `test` compares `Col(0)` (lhs's value) with `Col(1)`
    /// (a row's value).
    Quantified {
        lhs: Expr,
        test: Expr,
        all: bool,
    },
}

/// What evaluating a subquery expression needs from the executor.
pub trait SubRunner {
    /// The value of `s` for the current row `cols` of the query that holds it.
    fn sublink(&self, s: &SubLink, cols: &[Datum]) -> SqlResult<Datum>;
    /// Column `col` of the row of the query `level` levels out.
    fn outer(&self, level: usize, col: usize) -> SqlResult<Datum>;
}

impl Binder {
    /// A subquery expression, or None if `e` is not one.
    pub(crate) fn sublink(
        &mut self,
        scope: &Scope<'_>,
        e: &ast::Expr,
        aggs: &mut Option<&mut Vec<Agg>>,
    ) -> SqlResult<Option<(Expr, SqlType)>> {
        use ast::Expr as E;
        let wrap = |s: SubLink| Expr::SubLink(Box::new(s));
        Ok(Some(match e {
            E::Subquery(q) => {
                let (query, correlated) = self.subquery(scope, q, aggs)?;
                let t = one_column(&query)?;
                let s = SubLink {
                    kind: SubKind::Scalar,
                    query,
                    correlated,
                };
                (wrap(s), t)
            }
            E::Exists { subquery, negated } => {
                let (mut query, correlated) = self.subquery(scope, subquery, aggs)?;
                exists_form(&mut query);
                let s = wrap(SubLink {
                    kind: SubKind::Exists,
                    query,
                    correlated,
                });
                (not_if(s, *negated), SqlType::Bool)
            }
            E::InSubquery {
                expr,
                subquery,
                negated,
            } => {
                let s = self.quantified(scope, (expr, subquery), BinOp::Eq, false, aggs)?;
                (not_if(s, *negated), SqlType::Bool)
            }
            E::AnyOp {
                left,
                compare_op,
                right,
                ..
            }
            | E::AllOp {
                left,
                compare_op,
                right,
            } => {
                let Some(q) = subquery_of(right) else {
                    return Err(SqlError::unsupported(format!("ANY / ALL over \"{right}\"")));
                };
                let op = crate::bind::bin_op_of(compare_op)?;
                let all = matches!(e, E::AllOp { .. });
                (
                    self.quantified(scope, (left, q), op, all, aggs)?,
                    SqlType::Bool,
                )
            }
            _ => return Ok(None),
        }))
    }

    /// `lhs op ANY / ALL (q)` (subquery rule 3).
    fn quantified(
        &mut self,
        scope: &Scope<'_>,
        (lhs, q): (&ast::Expr, &ast::Query),
        op: BinOp,
        all: bool,
        aggs: &mut Option<&mut Vec<Agg>>,
    ) -> SqlResult<Expr> {
        let (l, lt) = self.expr_in(scope, lhs, aggs)?;
        let (query, correlated) = self.subquery(scope, q, aggs)?;
        let qt = one_column(&query)?;
        let (l, lt) = if lt == SqlType::Unknown {
            (self.coerce(l, lt, qt)?, qt)
        } else {
            (l, lt)
        };
        let (test, t) = self.binop(Expr::Col(0), lt, op, Expr::Col(1), qt)?;
        if t != SqlType::Bool {
            return Err(SqlError::new(
                "42809",
                format!(
                    "op ANY/ALL (array) requires operator to yield boolean ({})",
                    op.symbol()
                ),
            ));
        }
        Ok(Expr::SubLink(Box::new(SubLink {
            kind: SubKind::Quantified { lhs: l, test, all },
            query,
            correlated,
        })))
    }

    /// Analyzes a subquery in the scope of the expression that holds it; whether
    /// it is correlated (subquery rule 1).
    /// Aggregates it lifts into the query around it (outer rule 2) join `aggs`.
    fn subquery(
        &mut self,
        scope: &Scope<'_>,
        q: &ast::Query,
        aggs: &mut Option<&mut Vec<Agg>>,
    ) -> SqlResult<(Query, bool)> {
        let Some(catalog) = scope.catalog else {
            return Err(SqlError::unsupported("a subquery here"));
        };
        let depth = scope.depth + 1;
        let saved = std::mem::replace(&mut self.min_ref, usize::MAX);
        self.sub_depth += 1;
        self.enter_subquery(scope.depth, aggs.as_ref().map(|l| l.len()));
        let r = self.query_in(q, catalog, Some(scope));
        let lifted = self.leave_subquery();
        if let Some(list) = aggs.as_deref_mut() {
            list.extend(lifted);
        }
        self.sub_depth -= 1;
        let correlated = self.min_ref < depth;
        self.min_ref = saved.min(self.min_ref);
        let query = r?;
        self.sub_reads.extend(query.reads.iter().cloned());
        Ok((query, correlated))
    }
}

/// The one column a subquery used as a value gives (42601 otherwise).
fn one_column(q: &Query) -> SqlResult<SqlType> {
    match q.columns.as_slice() {
        [(_, t)] => Ok(*t),
        _ => Err(SqlError::syntax("subquery must return only one column")),
    }
}

fn not_if(e: Expr, negated: bool) -> Expr {
    if negated {
        Expr::Not(Box::new(e))
    } else {
        e
    }
}

/// The query of `x op ANY (SELECT ...)`'s right side.
fn subquery_of(e: &ast::Expr) -> Option<&ast::Query> {
    match e {
        ast::Expr::Subquery(q) => Some(q),
        ast::Expr::Nested(inner) => subquery_of(inner),
        _ => None,
    }
}

/// The outer columns a subquery at scope depth `depth` reads, as (scope depth,
/// column) of the enclosing queries' rows, each once.
pub fn outer_deps(q: &Query, depth: usize) -> Vec<(usize, usize)> {
    let mut out = Vec::new();
    let mut queries = vec![(q, 0usize)];
    while let Some((q, nest)) = queries.pop() {
        let mut exprs: Vec<&Expr> = Vec::new();
        crate::analyze::query_exprs(q, &mut exprs, &mut |sub| queries.push((sub, nest)));
        while let Some(e) = exprs.pop() {
            match e {
                Expr::Outer(level, col) if *level <= depth + nest => {
                    let target = depth + nest - level;
                    if target < depth && !out.contains(&(target, *col)) {
                        out.push((target, *col));
                    }
                }
                Expr::SubLink(l) => queries.push((&l.query, nest + 1)),
                _ => {}
            }
            e.children(&mut exprs);
        }
    }
    out
}

/// ANY / ALL over `values` in three-valued logic (subquery rule 3), `test` asked of
/// each.
pub fn quantified(
    all: bool,
    values: impl IntoIterator<Item = Datum>,
    test: &mut dyn FnMut(Datum) -> SqlResult<Datum>,
) -> SqlResult<Datum> {
    let mut saw_null = false;
    for v in values {
        match test(v)? {
            Datum::Null => saw_null = true,
            d if is_true(&d) != all => return Ok(Datum::Bool(!all)),
            _ => {}
        }
    }
    Ok(if saw_null {
        Datum::Null
    } else {
        Datum::Bool(all)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(all: bool, vals: &[Option<bool>]) -> Datum {
        let vs = vals.iter().map(|v| v.map_or(Datum::Null, Datum::Bool));
        quantified(all, vs, &mut |d| Ok(d)).unwrap()
    }

    #[test]
    fn any_and_all_are_three_valued() {
        assert_eq!(run(false, &[]), Datum::Bool(false));
        assert_eq!(run(true, &[]), Datum::Bool(true));
        assert_eq!(run(false, &[Some(false), None]), Datum::Null);
        assert_eq!(run(false, &[None, Some(true)]), Datum::Bool(true));
        assert_eq!(run(true, &[Some(true), None]), Datum::Null);
        assert_eq!(run(true, &[None, Some(false)]), Datum::Bool(false));
        assert_eq!(run(true, &[Some(true), Some(true)]), Datum::Bool(true));
    }
}
