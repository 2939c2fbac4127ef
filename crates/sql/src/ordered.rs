//! B-trees that serve ORDER BY, LIMIT and min/max (issue 28 item 12): a query
//! that wants its table's rows in an index's order reads them in that order
//! instead of sorting them, and stops after the rows its LIMIT needs.
//!
//! Rules (cited as "ordered rule N"):
//! 1. A SELECT over one table (no grouping, window or DISTINCT) whose ORDER BY
//!    keys are its plain columns reads an index that gives that order (plan rule
//!    6: the WHERE's equality columns, then the ORDER BY's, forward or backward)
//!    and drops the Sort — when it has a LIMIT (the scan stops after the rows the
//!    LIMIT takes) or its WHERE already reads that index. Without either a sort of
//!    the rows the WHERE keeps is what PostgreSQL's costs choose too for a table of
//!    any size.
//! 2. A SELECT over one table whose aggregates are all min and max of columns an
//!    index leads with, without GROUP BY (PostgreSQL's planagg), reads each as a
//!    subquery: `(SELECT c FROM t WHERE <its WHERE> AND c IS NOT NULL ORDER BY c
//!    [DESC] LIMIT 1)`, which rule 1 serves with the first entry of the index in
//!    the right direction. Its WHERE, targets and HAVING may not read an
//!    enclosing query or hold subqueries (the rewrite would change what they see).
//! 3. The scan the rules put in is the select's own scan with a different access
//!    path: the WHERE is still applied to every row (plan rule 3), so the rows are
//!    those the sort would have had.
//! 4. The select whose scan rule 1 replaces is planned without costing its own
//!    access paths against each other ([`Shaped`]): only its shape is kept, and a
//!    one-row probe (rule 2's subqueries, run at every execution) costs no table
//!    costing.

use crate::analyze::{Distinct, Query, Rel, Select, SetTree, SortSpec};
use crate::bind::{AggFunc, Expr};
use crate::planner::{Plan, Relations};
use crate::subquery::{SubKind, SubLink};
use crate::{Datum, SqlResult};

/// Rule 1: query `q` planned with its table read in its ORDER BY's order (no Sort
/// above it); None if no index serves it. `plain` plans the body as the planner
/// would.
pub(crate) fn ordered_body(
    q: &Query,
    rels: &Relations<'_>,
    plain: &dyn Fn(&SetTree, &Relations<'_>) -> SqlResult<Plan>,
) -> SqlResult<Option<Plan>> {
    let SetTree::Select(s) = &q.body else {
        return Ok(None);
    };
    let sw = rels.switches();
    if !sw.indexscan {
        // Planner rule 8.
        return Ok(None);
    }
    if q.order.is_empty() || s.grouping.is_some() || !s.windows.is_empty() {
        return Ok(None);
    }
    if s.distinct != Distinct::No {
        return Ok(None);
    }
    let Rel::Table { name, .. } = &s.from else {
        return Ok(None);
    };
    let Some(keys) = order_columns(q, s) else {
        return Ok(None);
    };
    let Some(entry) = rels.entry(name)? else {
        return Ok(None);
    };
    let filter = s.filter.as_ref();
    let Some(path) = crate::plan::choose_ordered(filter, &entry.columns, &entry.indexes, &keys)
    else {
        return Ok(None);
    };
    let own = crate::plan::choose(filter, &entry.columns, &entry.indexes);
    // Planner rule 8: with sorts or sequential scans off, an index's order serves
    // whenever it can.
    let forced = !sw.sort || !sw.seqscan;
    if !forced && q.limit.is_none() && own.is_none_or(|p| p.index != path.index) {
        return Ok(None);
    }
    Ok(with_scan(plain(&q.body, &Shaped(rels))?, path, rels))
}

/// Rule 4: the catalog as the planner sees it with sequential scans off, so that
/// a single table's scan is planned by its filter alone, without costs.
struct Shaped<'r, 'a>(&'r Relations<'a>);

impl crate::planner::RelSource for Shaped<'_, '_> {
    fn entry(&self, name: &str) -> SqlResult<Option<std::sync::Arc<strata_engine::RelEntry>>> {
        self.0.entry(name)
    }
    fn pages(&self, name: &str) -> u32 {
        self.0.pages(name)
    }
    fn stats(&self, name: &str) -> Option<std::sync::Arc<strata_engine::TableStats>> {
        self.0.stats(name)
    }
    fn units(&self) -> crate::cost::Units {
        self.0.units()
    }
    fn switches(&self) -> crate::planner::Switches {
        crate::planner::Switches {
            seqscan: false,
            ..self.0.switches()
        }
    }
}

/// The ORDER BY keys as the table's columns with their DESC and NULLS FIRST;
/// None if one is not a plain column.
fn order_columns(q: &Query, s: &Select) -> Option<Vec<(usize, bool, bool)>> {
    q.order
        .iter()
        .map(|k: &SortSpec| match s.targets.get(k.col) {
            Some(Expr::Col(c)) => Some((*c, k.desc, k.nulls_first)),
            _ => None,
        })
        .collect()
}

/// Rule 3: `p` (a select over one table: projections and filters over its scan)
/// with its scan reading through `path`; None if `p` is another shape (a semi
/// join the WHERE became, say).
fn with_scan(p: Plan, path: crate::plan::IndexPath, rels: &Relations<'_>) -> Option<Plan> {
    Some(match p {
        Plan::Project { input, exprs } => Plan::Project {
            input: Box::new(with_scan(*input, path, rels)?),
            exprs,
        },
        Plan::Filter { input, cond } => Plan::Filter {
            input: Box::new(with_scan(*input, path, rels)?),
            cond,
        },
        Plan::SeqScan {
            table,
            alias,
            filter,
            cols,
            ..
        }
        | Plan::IndexScan {
            table,
            alias,
            filter,
            cols,
            ..
        } => Plan::IndexScan {
            only: crate::planner::covers(&table, &path.index, cols.as_deref(), rels),
            table,
            alias,
            path,
            filter,
            cols,
        },
        _ => return None,
    })
}

/// Rule 2: select `s` with its min and max aggregates read from indexes, as a
/// Result under its targets (and HAVING); None if it does not qualify.
pub(crate) fn min_max(s: &Select, rels: &Relations<'_>) -> SqlResult<Option<Plan>> {
    let (Some(g), Rel::Table { name, .. }) = (&s.grouping, &s.from) else {
        return Ok(None);
    };
    if !g.keys.is_empty() || g.aggs.is_empty() || !s.windows.is_empty() {
        return Ok(None);
    }
    if !rels.switches().indexscan {
        // Planner rule 8.
        return Ok(None);
    }
    // Cheap tests first: most grouped queries are not min/max alone, and need no
    // catalog entry for this.
    let min_max_of_column = |a: &crate::bind::Agg| {
        matches!(a.func, AggFunc::Min | AggFunc::Max)
            && matches!(a.arg, Some(Expr::Col(_)))
            && a.filter.is_none()
    };
    if !g.aggs.iter().all(min_max_of_column) {
        return Ok(None);
    }
    let above = s.targets.iter().chain(&g.having);
    if s.filter.as_ref().is_some_and(reaches_out) || above.into_iter().any(reaches_out) {
        return Ok(None);
    }
    let Some(entry) = rels.entry(name)? else {
        return Ok(None);
    };
    let mut subs = Vec::with_capacity(g.aggs.len());
    for a in &g.aggs {
        let (desc, Some(Expr::Col(c)), None) = (a.func == AggFunc::Max, &a.arg, &a.filter) else {
            return Ok(None);
        };
        if !matches!(a.func, AggFunc::Min | AggFunc::Max) {
            return Ok(None);
        }
        let order = [(*c, desc, desc)];
        if crate::plan::choose_ordered(None, &entry.columns, &entry.indexes, &order).is_none() {
            return Ok(None);
        }
        subs.push(first_value(s, *c, desc, a.ty));
    }
    let put = |e: Expr| put_subqueries(e, &subs);
    let mut p = Plan::Result;
    if let Some(h) = &g.having {
        p = Plan::Filter {
            input: Box::new(p),
            cond: put(h.clone())?,
        };
    }
    let exprs = s
        .targets
        .iter()
        .cloned()
        .map(put)
        .collect::<SqlResult<_>>()?;
    Ok(Some(Plan::Project {
        input: Box::new(p),
        exprs,
    }))
}

/// Whether `e` reads an enclosing query or holds a subquery (rule 2).
fn reaches_out(e: &Expr) -> bool {
    let mut stack = vec![e];
    while let Some(x) = stack.pop() {
        if matches!(x, Expr::Outer(..) | Expr::SubLink(_) | Expr::Param(_)) {
            return true;
        }
        x.children(&mut stack);
    }
    false
}

/// `(SELECT c FROM <s's table> WHERE <s's WHERE> AND c IS NOT NULL ORDER BY c
/// [DESC] LIMIT 1)` (rule 2).
fn first_value(s: &Select, c: usize, desc: bool, ty: crate::SqlType) -> Expr {
    let not_null = Expr::IsNull(Box::new(Expr::Col(c)), true);
    let filter = match &s.filter {
        Some(f) => Expr::Bool(crate::bind::BinOp::And, vec![f.clone(), not_null]),
        None => not_null,
    };
    let select = Select {
        from: s.from.clone(),
        filter: Some(filter),
        grouping: None,
        targets: vec![Expr::Col(c)],
        types: vec![ty],
        distinct: Distinct::No,
        visible: 1,
        windows: Vec::new(),
    };
    let query = Query {
        body: SetTree::Select(Box::new(select)),
        order: vec![SortSpec {
            col: 0,
            desc,
            nulls_first: desc,
        }],
        limit: Some(Expr::Const(Datum::Int8(1))),
        offset: None,
        columns: vec![(if desc { "max" } else { "min" }.to_string(), ty)],
        reads: Vec::new(),
    };
    Expr::SubLink(Box::new(SubLink {
        kind: SubKind::Scalar,
        query,
        correlated: false,
    }))
}

/// A grouped row's expression with aggregate `i` (its column `i`: no keys) read
/// from subquery `subs[i]`.
fn put_subqueries(e: Expr, subs: &[Expr]) -> SqlResult<Expr> {
    match e {
        Expr::Col(i) => Ok(subs[i].clone()),
        e => e.map_children(&mut |x| put_subqueries(x, subs)),
    }
}
