//! What a subquery takes from the query around it when that query aggregates:
//! correlated subqueries in a grouped query, and outer-level aggregates (an
//! aggregate in a subquery whose arguments read only the enclosing query's
//! columns belongs to that query, as the SQL standard and PostgreSQL have it).
//!
//! Rules (cited as "outer rule N"):
//! 1. A correlated subquery in a grouped query's targets, HAVING or ORDER BY reads
//!    the grouped row: each of its references to that query's columns becomes the
//!    group key it equals (42803 if it is not a key, PostgreSQL's words).
//! 2. An aggregate in a subquery belongs to the innermost query whose columns its
//!    arguments read: if they read none of the subquery's own and some of the
//!    query one level out, the aggregate is computed there, over that query's rows,
//!    and the subquery reads its value as an outer column ([`AGG_REF`]). One level
//!    out only (0A000 beyond); where the outer query may not aggregate (its WHERE,
//!    say) 42803.
//! 3. References are rewritten by walking the whole subquery, its own subqueries
//!    included, each at its nesting depth ([`visit_query_mut`]); the walk is
//!    bounded by binding's depth limit (sql rule 4).

use crate::analyze::{Query, Rel, SetTree};
use crate::bind::{Agg, Binder, Expr, Scope};
use crate::{SqlError, SqlResult};

/// `Expr::Outer(level, AGG_REF + i)`: aggregate `i` of the query `level` levels
/// out, before that query is regrouped (outer rule 2); regrouping turns it into
/// that aggregate's column of the grouped row.
pub const AGG_REF: usize = 1 << 40;

/// A subquery being bound inside a query that may take its aggregates (outer
/// rule 2).
#[derive(Debug, Default)]
pub(crate) struct LiftFrame {
    /// The scope depth of the query around the subquery.
    depth: usize,
    /// How many aggregates that query had when the subquery began; None where it
    /// may not aggregate.
    base: Option<usize>,
    /// The aggregates lifted into it, in order.
    aggs: Vec<Agg>,
    /// Whether the subquery sits in an aggregate's arguments (restored after it:
    /// its own aggregates are not nested in that one).
    in_agg: bool,
    /// The clause refusing aggregates around the subquery (restored after it).
    refused_in: Option<&'static str>,
}

/// Whether `agg`'s expressions read its own query's columns, and the fewest
/// levels out any of them reads (usize::MAX: none) — outer rule 2's test.
pub(crate) fn agg_level(agg: &Agg) -> SqlResult<(bool, usize)> {
    let (mut local, mut up) = (false, usize::MAX);
    for e in agg.row_exprs() {
        let mut e = e.clone();
        visit_expr_mut(&mut e, 0, &mut |x, nest| {
            match x {
                Expr::Outer(_, c) if *c >= AGG_REF => return Err(nested()),
                Expr::Col(_) if nest == 0 => local = true,
                Expr::Outer(level, _) if *level == nest => local = true,
                Expr::Outer(level, _) if *level > nest => up = up.min(*level - nest),
                _ => {}
            }
            Ok(())
        })?;
    }
    Ok((local, up))
}

impl Binder {
    /// Starts a subquery of the query at scope depth `depth`, which holds `base`
    /// aggregates so far (None: it may not aggregate here).
    pub(crate) fn enter_subquery(&mut self, depth: usize, base: Option<usize>) {
        self.lift.push(LiftFrame {
            depth,
            base,
            aggs: Vec::new(),
            in_agg: std::mem::take(&mut self.in_agg),
            refused_in: self.aggs_refused_in.take(),
        });
    }

    /// Ends the subquery begun last: the aggregates it lifted into the query
    /// around it, to append to that query's list.
    pub(crate) fn leave_subquery(&mut self) -> Vec<Agg> {
        let Some(f) = self.lift.pop() else {
            return Vec::new();
        };
        self.in_agg = f.in_agg;
        self.aggs_refused_in = f.refused_in;
        f.aggs
    }

    /// Outer rule 2: `agg`, bound in the subquery of scope `scope`, as a reference
    /// to the enclosing query's aggregate if its arguments read only that query's
    /// columns; None if it is the subquery's own.
    pub(crate) fn lift_agg(&mut self, scope: &Scope<'_>, agg: &Agg) -> SqlResult<Option<Expr>> {
        let (local, up) = agg_level(agg)?;
        if local || up == usize::MAX {
            return Ok(None);
        }
        if up > 1 {
            return Err(SqlError::unsupported(
                "an aggregate of a query more than one level out",
            ));
        }
        let Some(frame) = self.lift.last_mut().filter(|f| f.depth + 1 == scope.depth) else {
            return Ok(None);
        };
        let Some(base) = frame.base else {
            return Err(SqlError::new(
                "42803",
                "aggregate functions are not allowed here",
            ));
        };
        let mut lifted = agg.clone();
        for e in lifted.row_exprs_mut() {
            visit_expr_mut(e, 0, &mut |x, nest| {
                if let Expr::Outer(level, c) = x {
                    if *level > nest {
                        *x = match (nest, *level - 1) {
                            (0, 0) => Expr::Col(*c),
                            (_, l) => Expr::Outer(l, *c),
                        };
                    }
                }
                Ok(())
            })?;
        }
        frame.aggs.push(lifted);
        let at = base + frame.aggs.len() - 1;
        self.min_ref = self.min_ref.min(frame.depth);
        Ok(Some(Expr::Outer(1, AGG_REF + at)))
    }
}

fn nested() -> SqlError {
    SqlError::new("42803", "aggregate function calls cannot be nested")
}

/// Outer rules 1 and 2: correlated subquery `q`, in a grouped query with group
/// keys `keys` (`nk` of them), reading the grouped row: its references to that
/// query's columns become key positions, its lifted aggregates their columns.
/// `missing` makes the 42803 of a column that is not a key.
pub(crate) fn regroup_subquery(
    q: &mut Query,
    keys: &[Expr],
    nk: usize,
    missing: &dyn Fn(usize) -> SqlError,
) -> SqlResult<()> {
    visit_query_mut(q, 1, &mut |x, nest| {
        if let Expr::Outer(level, c) = x {
            if *level == nest {
                *c = match *c {
                    c if c >= AGG_REF => nk + (c - AGG_REF),
                    c => keys
                        .iter()
                        .position(|k| *k == Expr::Col(c))
                        .ok_or_else(|| missing(c))?,
                };
            }
        }
        Ok(())
    })
}

type Visit<'a> = dyn FnMut(&mut Expr, usize) -> SqlResult<()> + 'a;

/// Calls `f` on every expression node of `q` and of the queries inside it, with
/// how many subquery levels below the starting one it sits (`nest`) (outer rule 3).
pub(crate) fn visit_query_mut(q: &mut Query, nest: usize, f: &mut Visit<'_>) -> SqlResult<()> {
    walk_query(q, nest, f, false)
}

/// [`visit_query_mut`] calling `f` on each node after its operands (bottom-up).
pub(crate) fn visit_query_post_mut(q: &mut Query, nest: usize, f: &mut Visit<'_>) -> SqlResult<()> {
    walk_query(q, nest, f, true)
}

fn walk_query(q: &mut Query, nest: usize, f: &mut Visit<'_>, post: bool) -> SqlResult<()> {
    for e in q.limit.iter_mut().chain(q.offset.iter_mut()) {
        walk_expr(e, nest, f, post)?;
    }
    walk_tree(&mut q.body, nest, f, post)
}

fn walk_tree(t: &mut SetTree, nest: usize, f: &mut Visit<'_>, post: bool) -> SqlResult<()> {
    match t {
        SetTree::Select(s) => {
            for e in s.filter.iter_mut().chain(s.targets.iter_mut()) {
                walk_expr(e, nest, f, post)?;
            }
            if let Some(g) = &mut s.grouping {
                for e in g.keys.iter_mut().chain(g.having.iter_mut()) {
                    walk_expr(e, nest, f, post)?;
                }
                for a in &mut g.aggs {
                    for e in a.row_exprs_mut() {
                        walk_expr(e, nest, f, post)?;
                    }
                    for e in &mut a.direct {
                        walk_expr(e, nest, f, post)?;
                    }
                }
            }
            let wins = std::mem::take(&mut s.windows);
            s.windows = wins
                .into_iter()
                .map(|w| {
                    crate::window::map_exprs(w, &mut |mut e| {
                        walk_expr(&mut e, nest, f, post)?;
                        Ok(e)
                    })
                })
                .collect::<SqlResult<_>>()?;
            walk_rel(&mut s.from, nest, f, post)
        }
        SetTree::Values(rows, _) => rows
            .iter_mut()
            .flatten()
            .try_for_each(|e| walk_expr(e, nest, f, post)),
        SetTree::SetOp { left, right, .. } => {
            walk_tree(left, nest, f, post)?;
            walk_tree(right, nest, f, post)
        }
        SetTree::Query(inner) | SetTree::Cte(_, inner, _) => walk_query(inner, nest, f, post),
    }
}

/// A FROM item's expressions: a subquery in FROM is at its query's level, a
/// LATERAL one a level below (its left side is its enclosing query).
fn walk_rel(r: &mut Rel, nest: usize, f: &mut Visit<'_>, post: bool) -> SqlResult<()> {
    match r {
        Rel::One | Rel::Table { .. } | Rel::View { .. } | Rel::WorkTable { .. } => Ok(()),
        Rel::Series {
            start, stop, step, ..
        } => [start, stop]
            .into_iter()
            .chain(step.iter_mut())
            .try_for_each(|e| walk_expr(e, nest, f, post)),
        Rel::Subquery(q) => walk_query(q, nest, f, post),
        Rel::Lateral(q) => walk_query(q, nest + 1, f, post),
        Rel::Recursive(rc) => {
            walk_query(&mut rc.init, nest, f, post)?;
            walk_query(&mut rc.step, nest, f, post)
        }
        Rel::Join(j) => {
            for e in j.on.iter_mut().chain(j.merged.iter_mut()) {
                walk_expr(e, nest, f, post)?;
            }
            walk_rel(&mut j.left, nest, f, post)?;
            walk_rel(&mut j.right, nest, f, post)
        }
    }
}

/// `e` and every node below it, a subquery's nodes one level deeper.
pub(crate) fn visit_expr_mut(e: &mut Expr, nest: usize, f: &mut Visit<'_>) -> SqlResult<()> {
    walk_expr(e, nest, f, false)
}

/// [`visit_expr_mut`] calling `f` on each node after its operands (bottom-up).
#[cfg(test)]
pub(crate) fn visit_expr_post_mut(e: &mut Expr, nest: usize, f: &mut Visit<'_>) -> SqlResult<()> {
    walk_expr(e, nest, f, true)
}

fn walk_expr(e: &mut Expr, nest: usize, f: &mut Visit<'_>, post: bool) -> SqlResult<()> {
    if !post {
        f(e, nest)?;
    }
    if let Expr::SubLink(l) = e {
        walk_query(&mut l.query, nest + 1, f, post)?;
    }
    let x = std::mem::replace(e, Expr::Const(crate::Datum::Null));
    *e = x.map_children(&mut |mut c| {
        walk_expr(&mut c, nest, f, post)?;
        Ok(c)
    })?;
    if post {
        f(e, nest)?;
    }
    Ok(())
}
