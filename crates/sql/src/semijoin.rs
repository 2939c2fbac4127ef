//! EXISTS and NOT EXISTS in WHERE as semi and anti joins (planner rule 7),
//! PostgreSQL's `convert_EXISTS_sublink_to_join`.
//!
//! Rules (cited as "semi join rule N"):
//! 1. A WHERE conjunct `[NOT] EXISTS (SELECT ... FROM f WHERE c)` becomes a semi
//!    (anti) join of the query's FROM row with `f` when the subquery is a plain
//!    SELECT (no grouping, window or OFFSET, no LIMIT but a constant one of at least
//!    one row or NULL, which cannot change whether a row exists: PostgreSQL's
//!    simplify_EXISTS_query; its targets and ORDER BY do not matter), every conjunct of `c` reads at most the subquery's own row and the
//!    row of the query holding it (no query further out, no subquery of its own),
//!    and at least one conjunct is an equality between an expression of each; its
//!    FROM is tables and joins of them (nothing there can name the holding query).
//! 2. The conjuncts of `c` over `f` alone filter `f`'s plan; the equalities are the
//!    hash keys; the other conjuncts are tested on the joined row. Anything else
//!    stays a subquery run per row.
//! 3. A semi join gives each outer row once if some inner row matches; an anti join
//!    gives it if none does (an outer key that is NULL matches nothing, so NOT
//!    EXISTS holds for it, as the subquery would find no row). Both give the outer
//!    row alone, so nothing above sees a different layout.
//! 4. Except where the subquery reads one table through an index its correlation
//!    serves: run per outer row it is an index probe (PostgreSQL's parameterized
//!    nested loop), where a hash join would read the whole table.
//! 5. A WHERE conjunct `lhs IN (SELECT ...)` is first written as the EXISTS whose
//!    WHERE also says `lhs = value` ([`in_as_exists`], PostgreSQL's
//!    convert_ANY_sublink_to_join): in a WHERE's conjunct false and NULL both drop
//!    the row, so the two agree. NOT IN is left alone (its NULLs differ).

use crate::analyze::{JoinKind, SetTree};
use crate::bind::{BinOp, Expr};
use crate::planner::{self, map_cols, Plan, Relations};
use crate::subquery::{SubKind, SubLink};
use crate::SqlResult;

/// One conjunct turned into a join.
pub(crate) struct SemiJoin<'q> {
    anti: bool,
    link: &'q SubLink,
}

impl SemiJoin<'_> {
    /// The holding query's columns the join reads (its keys' and residual's
    /// `Outer(1, c)`), into `out`.
    pub(crate) fn outer_columns(&self, out: &mut Vec<usize>) {
        let SetTree::Select(s) = &self.link.query.body else {
            return;
        };
        let mut stack: Vec<&Expr> = s.filter.iter().collect();
        while let Some(e) = stack.pop() {
            if let Expr::Outer(1, c) = e {
                out.push(*c);
            }
            e.children(&mut stack);
        }
    }
}

/// Semi join rule 5: WHERE conjunct `lhs IN (SELECT t FROM f WHERE c)` as
/// `EXISTS (SELECT ... FROM f WHERE c AND lhs = t)`, when `lhs` reads the holding
/// query's row alone and the subquery is a plain SELECT; any other `e` as it is.
pub(crate) fn in_as_exists(e: Expr) -> Expr {
    let Expr::SubLink(link) = &e else { return e };
    let SubKind::Quantified {
        lhs,
        test,
        all: false,
    } = &link.kind
    else {
        return e;
    };
    let SetTree::Select(s) = &link.query.body else {
        return e;
    };
    let q = &link.query;
    let plain =
        s.grouping.is_none() && s.windows.is_empty() && q.limit.is_none() && q.offset.is_none();
    let local = |x: &Expr| {
        let mut stack = vec![x];
        while let Some(y) = stack.pop() {
            if matches!(
                y,
                Expr::Outer(..)
                    | Expr::SubLink(_)
                    | Expr::Agg(_)
                    | Expr::Window(_)
                    | Expr::Param(_)
            ) {
                return false;
            }
            y.children(&mut stack);
        }
        true
    };
    if !plain || s.visible != 1 || !local(lhs) || !local(&s.targets[0]) {
        return e;
    }
    // The test over (lhs, the row's value): lhs's columns as the holding query's,
    // the value as the target over the subquery's row.
    fn outer_cols(x: Expr) -> SqlResult<Expr> {
        match x {
            Expr::Col(c) => Ok(Expr::Outer(1, c)),
            x => x.map_children(&mut outer_cols),
        }
    }
    let (Ok(l), target) = (outer_cols(lhs.clone()), s.targets[0].clone()) else {
        return e;
    };
    fn put(x: Expr, l: &Expr, t: &Expr) -> SqlResult<Expr> {
        match x {
            Expr::Col(0) => Ok(l.clone()),
            Expr::Col(_) => Ok(t.clone()),
            x => x.map_children(&mut |y| put(y, l, t)),
        }
    }
    let Ok(cond) = put(test.clone(), &l, &target) else {
        return e;
    };
    let mut query = link.query.clone();
    if let SetTree::Select(s) = &mut query.body {
        let mut conjs: Vec<Expr> = s.filter.take().into_iter().collect();
        conjs.push(cond);
        s.filter = planner::and_all(conjs);
    }
    Expr::SubLink(Box::new(SubLink {
        kind: SubKind::Exists,
        query,
        correlated: true,
    }))
}

/// Splits the WHERE conjuncts into those that stay and the EXISTS that become joins.
pub(crate) fn extract<'q>(
    conjs: &'q [Expr],
    rels: &Relations<'_>,
) -> (Vec<Expr>, Vec<SemiJoin<'q>>) {
    let (mut keep, mut joins) = (Vec::new(), Vec::new());
    for c in conjs {
        let (anti, link) = match c {
            Expr::SubLink(l) => (false, &**l),
            Expr::Not(x) => match &**x {
                Expr::SubLink(l) => (true, &**l),
                _ => {
                    keep.push(c.clone());
                    continue;
                }
            },
            _ => {
                keep.push(c.clone());
                continue;
            }
        };
        if link.kind == SubKind::Exists
            && link.correlated
            && pullable(link)
            && !index_probed(link, rels)
        {
            joins.push(SemiJoin { anti, link });
        } else {
            keep.push(c.clone());
        }
    }
    (keep, joins)
}

/// How a subquery conjunct reads: its own row only, or also the holding query's.
enum Reads {
    Inner,
    Both,
    /// Something semi join rule 1 does not take.
    No,
}

fn reads(e: &Expr) -> Reads {
    let (mut outer, mut stack) = (false, vec![e]);
    while let Some(e) = stack.pop() {
        match e {
            Expr::Outer(1, _) => outer = true,
            Expr::Outer(..) | Expr::SubLink(_) | Expr::Agg(_) | Expr::Window(_) => {
                return Reads::No
            }
            Expr::Param(_) => return Reads::No,
            _ => {}
        }
        e.children(&mut stack);
    }
    if outer {
        Reads::Both
    } else {
        Reads::Inner
    }
}

/// Whether an expression reads the holding query's row only (no inner column).
fn outer_only(e: &Expr) -> bool {
    let mut cols = Vec::new();
    crate::privileges::expr_columns(e, &mut cols);
    cols.is_empty() && matches!(reads(e), Reads::Both)
}

fn inner_only(e: &Expr) -> bool {
    matches!(reads(e), Reads::Inner)
}

fn pullable(link: &SubLink) -> bool {
    let q = &link.query;
    let SetTree::Select(s) = &q.body else {
        return false;
    };
    fn moot(e: &Expr) -> bool {
        match e {
            Expr::Const(crate::Datum::Null) => true,
            Expr::Const(crate::Datum::Int8(n)) => *n > 0,
            Expr::Const(crate::Datum::Int4(n)) => *n > 0,
            Expr::Cast(x, _) => moot(x),
            _ => false,
        }
    }
    let limit_moot = q.limit.as_ref().is_none_or(moot);
    if !limit_moot || q.offset.is_some() || s.grouping.is_some() || !s.windows.is_empty() {
        return false;
    }
    let Some(f) = &s.filter else {
        return false;
    };
    if !plain_from(&s.from) {
        return false;
    }
    let mut conjs = Vec::new();
    planner::split_and(f.clone(), &mut conjs);
    let mut keyed = false;
    for c in &conjs {
        if matches!(reads(c), Reads::No) {
            return false;
        }
        keyed |= key_pair(c).is_some();
    }
    keyed
}

/// Semi join rule 4: whether the subquery reads one table through an index its
/// correlation serves — run per outer row, each run is an index probe (its result
/// kept per key: subquery rule 5), PostgreSQL's parameterized nested loop; a hash
/// join would read the whole table instead.
fn index_probed(link: &SubLink, rels: &Relations<'_>) -> bool {
    if !rels.switches().indexscan {
        return false;
    }
    let SetTree::Select(s) = &link.query.body else {
        return false;
    };
    let crate::analyze::Rel::Table { name, .. } = &s.from else {
        return false;
    };
    match rels.entry(name) {
        Ok(Some(e)) => crate::plan::choose(s.filter.as_ref(), &e.columns, &e.indexes).is_some(),
        _ => false,
    }
}

/// Whether a FROM is tables and joins of them whose ONs read only their own rows:
/// nothing in it can name the holding query, so it plans on its own.
fn plain_from(r: &crate::analyze::Rel) -> bool {
    use crate::analyze::Rel;
    match r {
        Rel::Table { .. } => true,
        Rel::Join(j) => {
            plain_from(&j.left)
                && plain_from(&j.right)
                && j.on.as_ref().is_none_or(inner_only)
                && j.merged.iter().all(inner_only)
        }
        _ => false,
    }
}

/// `a = b` with one side over the inner row only and the other over the outer
/// row only: (outer side, inner side).
fn key_pair(c: &Expr) -> Option<(&Expr, &Expr)> {
    let Expr::Bin(a, BinOp::Eq, b) = c else {
        return None;
    };
    if outer_only(a) && inner_only(b) && !is_const(b) {
        Some((a, b))
    } else if outer_only(b) && inner_only(a) && !is_const(a) {
        Some((b, a))
    } else {
        None
    }
}

fn is_const(e: &Expr) -> bool {
    let mut cols = Vec::new();
    crate::privileges::expr_columns(e, &mut cols);
    cols.is_empty()
}

/// `e` (a subquery conjunct) over the joined row: the holding query's columns
/// first (`Outer(1, c)` is `Col(c)`), the subquery's after them.
fn joined(e: Expr, outer_width: usize) -> Expr {
    match e {
        Expr::Outer(1, c) => Expr::Col(c),
        Expr::Col(c) => Expr::Col(outer_width + c),
        e => e
            .map_children(&mut |x| Ok(joined(x, outer_width)))
            .expect("rewriting never fails"),
    }
}

/// `e` over the outer row alone (its `Outer(1, c)` as `Col(c)`).
fn outer_side(e: Expr) -> Expr {
    match e {
        Expr::Outer(1, c) => Expr::Col(c),
        e => e
            .map_children(&mut |x| Ok(outer_side(x)))
            .expect("rewriting never fails"),
    }
}

/// The inner plan projected to the columns its keys and the residual read (semi
/// join rule 2: the hash table holds only those), the keys and residual rewritten
/// over it; its new width.
fn prune(
    inner: Plan,
    outer_width: usize,
    inner_width: usize,
    ikeys: &mut [Expr],
    residual: &mut [Expr],
) -> (Plan, usize) {
    let mut cols = Vec::new();
    for k in ikeys.iter() {
        crate::privileges::expr_columns(k, &mut cols);
    }
    let mut rcols = Vec::new();
    for r in residual.iter() {
        crate::privileges::expr_columns(r, &mut rcols);
    }
    cols.extend(rcols.into_iter().filter_map(|c| c.checked_sub(outer_width)));
    cols.sort_unstable();
    cols.dedup();
    if cols.len() == inner_width {
        return (inner, inner_width);
    }
    let at = |c: usize| cols.iter().position(|&x| x == c).expect("a kept column");
    for k in ikeys.iter_mut() {
        *k = map_cols(k.clone(), &|c| at(c));
    }
    for r in residual.iter_mut() {
        *r = map_cols(r.clone(), &|c| match c.checked_sub(outer_width) {
            Some(i) => outer_width + at(i),
            None => c,
        });
    }
    let exprs = cols.iter().map(|&c| Expr::Col(c)).collect();
    let p = Plan::Project {
        input: Box::new(inner),
        exprs,
    };
    (p, cols.len())
}

/// `p` (the FROM row, `width` wide) semi- or anti-joined to each subquery.
pub(crate) fn apply(
    mut p: Plan,
    width: usize,
    joins: Vec<SemiJoin<'_>>,
    rels: &Relations<'_>,
) -> SqlResult<Plan> {
    for j in joins {
        let SetTree::Select(s) = &j.link.query.body else {
            unreachable!("pullable checked the body")
        };
        let mut conjs = Vec::new();
        if let Some(f) = &s.filter {
            planner::split_and(f.clone(), &mut conjs);
        }
        let (mut inner_c, mut okeys, mut ikeys, mut residual) =
            (Vec::new(), Vec::new(), Vec::new(), Vec::new());
        for c in conjs {
            if let Some((o, i)) = key_pair(&c) {
                okeys.push(outer_side(o.clone()));
                ikeys.push(i.clone());
            } else if inner_only(&c) {
                inner_c.push(c);
            } else {
                residual.push(joined(c, width));
            }
        }
        let inner = planner::rel(&s.from, inner_c, rels)?;
        let (inner, iw) = prune(inner, width, s.from.width(), &mut ikeys, &mut residual);
        let kind = if j.anti {
            JoinKind::Anti
        } else {
            JoinKind::Semi
        };
        let sw = rels.switches();
        if !sw.hashjoin && sw.nestloop {
            // Planner rule 8: a nested loop testing the keys' equalities too.
            let mut cond: Vec<Expr> = okeys
                .into_iter()
                .zip(ikeys)
                .map(|(o, i)| {
                    let i = map_cols(i, &|c| width + c);
                    Expr::Bin(Box::new(o), BinOp::Eq, Box::new(i))
                })
                .collect();
            cond.extend(residual);
            p = Plan::NestLoop {
                kind,
                outer: Box::new(p),
                inner: Box::new(inner),
                cond: planner::and_all(cond),
                widths: (width, iw),
            };
            continue;
        }
        p = Plan::HashJoin {
            kind,
            outer: Box::new(p),
            inner: Box::new(inner),
            outer_keys: okeys,
            inner_keys: ikeys,
            residual: planner::and_all(residual),
            widths: (width, iw),
            parallel: false,
        };
    }
    Ok(p)
}
