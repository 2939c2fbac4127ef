//! Planning: a query tree ([`crate::analyze`]) to a physical plan — a tree of
//! [`Plan`] nodes, one executor operator each ([`crate::executor`]).
//!
//! Entry point: [`plan`], over a [`Relations`] that gives a table's catalog entry
//! (its columns and indexes).
//!
//! Rules (cited as "planner rule N"):
//! 1. WHERE and JOIN/ON are split into conjuncts. A conjunct over one side of an
//!    inner join (or the preserved side of an outer join's WHERE) is pushed to
//!    that side, down to the scan that can use it: a table's scan takes the
//!    conjuncts over its columns as its filter and, where an index serves them, reads
//!    through it (`plan` rules). Conjuncts of an outer join's ON stay at the join.
//!    A filter tests its conjuncts cheap first: those with correlated subqueries last.
//! 2. A join whose ON has a conjunct `l = r` with `l` over the left side only and
//!    `r` over the right only is a hash join on those keys (the right side built
//!    into the table, the left probing); any other join is a nested loop over the
//!    materialized right side. Both keep a matched flag per right row, so RIGHT and
//!    FULL joins emit the right rows nothing matched, NULL-extended. With hash
//!    joins switched off, one whose keys are all plain columns is a merge join
//!    (rule 8, [`Plan::MergeJoin`]); with both on, such a join is the one of the
//!    two that `cost` finds cheaper, as PostgreSQL chooses (a merge join over
//!    sides whose keys' distinct values nothing knows, where PostgreSQL expects a
//!    tenth of the hashed rows in each bucket). A FULL join with no such key is
//!    0A000 as in PostgreSQL, whatever the switches.
//! 3. Grouping is hash aggregation ([`Plan::Agg`]); no GROUP BY is one group, which
//!    gives one row even over no input. When an aggregate has DISTINCT or ORDER BY
//!    (ordered-set aggregates too) the input is sorted by the group keys and each
//!    run of equal keys is a group (`sorted`: PostgreSQL's GroupAggregate, which
//!    its planner must use then): the groups come out in key order, one at a time.
//!    The sort holds only the columns the aggregate reads, compacted by a
//!    projection below it (a join's rows carry every column of both sides).
//! 4. A SELECT runs: scan/join → filter → aggregate → HAVING filter → project
//!    targets → sort → DISTINCT (keeping each key's first row, so it follows the
//!    sort) → LIMIT/OFFSET → drop hidden targets.
//! 5. UNION ALL appends; UNION, INTERSECT and EXCEPT [ALL] count rows per side by
//!    value ([`Plan::SetOp`]). Each side's columns are cast to the common type.
//! 6. A tree of inner joins is ordered by estimated sizes (`joinorder` rules).
//! 7. A WHERE conjunct `[NOT] EXISTS` over a plain correlated subquery is a semi
//!    (anti) hash join above the FROM's plan (`semijoin` rules).
//! 8. The planner switches ([`Switches`], the session's `enable_*` settings) take a
//!    plan shape out of the choice wherever another gives the same rows, as
//!    PostgreSQL's `disable_cost` does; a shape with no alternative stays.
//!    - `enable_indexscan` off: no index is read (by DML either).
//!    - `enable_seqscan` off: index nested loops and index order are taken wherever
//!      they serve; a table no index condition or order serves is still read
//!      whole, as PostgreSQL builds no index path for it either.
//!    - `enable_hashjoin` off: a join whose equalities between its sides are all
//!      of plain columns is a merge join over both sides sorted on them
//!      (`enable_mergejoin` on); any other join, and semi joins, nested loops.
//!    - `enable_nestloop` off: no index nested loop; a join without an equality
//!      between its sides stays a nested loop.
//!    - `enable_hashagg` off: GROUP BY sorts its input and aggregates each run of
//!      equal keys (GroupAggregate); DISTINCT and UNION / INTERSECT / EXCEPT sort
//!      their rows.
//!    - `enable_sort` off: an index's order is taken over a sort wherever one serves.
//!    - Switches of shapes Strata never plans (bitmap and index-only
//!      scans, memoize, incremental sort, parallel plans, partitions) are accepted:
//!      off, they forbid what is never built; on, they allow it.
//! 9. Below a FROM of outer joins (which join order rule 7 does not reach), each
//!    scan decodes only the columns read above it or by the joins' conditions, and
//!    a column only its own filter reads is NULL in the rows it gives ([`narrow`]):
//!    joins copy, and hash tables hold, only what is read.
//! 10. A FROM subquery's output columns the query above never reads become NULL
//!     ([`prune_outputs`], PostgreSQL's remove_unused_subquery_outputs): their
//!     expressions, a scalar subquery that would fail among them, are never
//!     evaluated. Not under DISTINCT or a set operation (every column counts), nor
//!     for ORDER BY's columns or volatile expressions.
//! 11. A hash LEFT JOIN whose preserved side is estimated to have fewer rows is
//!     run as a RIGHT JOIN hashing that side ([`hash_smaller_side`]): the hash
//!     table holds the smaller side, the larger streams past it.
//! 12. A table with an index its filter can read (plan rule 2's choice) is read
//!     through it or whole, whichever `cost` estimates cheaper: a filter that
//!     keeps most of the table reads it whole, as PostgreSQL's would.
//! 13. A scan through an index that holds every column the query reads of its
//!     table, in keys that read back whole (`strata_engine::key_kinds`), is an
//!     Index Only Scan (`enable_indexonlyscan`): rows come from the keys where
//!     the heap page is all visible (index rule 5), and `cost` charges the heap
//!     reads of the pages that are not. Where no condition bounds an index, the
//!     smallest covering one is weighed against reading the table whole, as
//!     PostgreSQL's check_index_only paths are (`count(*)` over an index).
//! 14. A GROUP BY that holds every column of a table's primary key groups on
//!     those and not on the table's other columns it holds: they are the same in
//!     every row of a group, so each is taken from any row of it (an internal
//!     aggregate; PostgreSQL's remove_useless_groupby_columns), and the row is
//!     put back in the query's layout above the aggregate ([`dependent_keys`]).

use crate::analyze::{
    Distinct, Grouping, Join, JoinKind, Query, Rel, Select, SetOp, SetTree, SortSpec,
};
use crate::bind::{Agg, AggFunc, BinOp, Expr, Func};
use crate::plan::IndexPath;
use crate::{SqlResult, SqlType};

/// What the planner asks of the catalog.
pub trait RelSource {
    /// A table's catalog entry, shared (None: a system view or no such table).
    fn entry(&self, name: &str) -> SqlResult<Option<std::sync::Arc<strata_engine::RelEntry>>>;
    /// A table's main-fork pages now, for estimates (`estimate` rule 1); 0 when
    /// unknown.
    fn pages(&self, _name: &str) -> u32 {
        0
    }
    /// A table's statistics from ANALYZE (`estimate` rule 5); None when it has none.
    fn stats(&self, _name: &str) -> Option<std::sync::Arc<strata_engine::TableStats>> {
        None
    }
    /// The session's cost units (`cost` rule 1); PostgreSQL's defaults.
    fn units(&self) -> crate::cost::Units {
        crate::cost::Units::default()
    }
    /// The session's planner switches (planner rule 8); all on by default.
    fn switches(&self) -> Switches {
        Switches::default()
    }
}

/// The `enable_*` settings Strata's planner follows (planner rule 8): each off
/// takes its plan shape out of the choice wherever another shape gives the same
/// rows, as PostgreSQL's `disable_cost` does.
#[derive(Clone, Copy, Debug)]
pub struct Switches {
    pub seqscan: bool,
    pub indexscan: bool,
    pub indexonlyscan: bool,
    pub hashjoin: bool,
    pub mergejoin: bool,
    pub nestloop: bool,
    pub hashagg: bool,
    pub sort: bool,
    /// `max_parallel_workers_per_gather` (parallel rule 1).
    pub workers: usize,
}

impl Default for Switches {
    fn default() -> Self {
        Switches {
            seqscan: true,
            indexscan: true,
            indexonlyscan: true,
            hashjoin: true,
            mergejoin: true,
            nestloop: true,
            hashagg: true,
            sort: true,
            workers: 2,
        }
    }
}

impl<F: Fn(&str) -> SqlResult<Option<strata_engine::RelEntry>>> RelSource for F {
    fn entry(&self, name: &str) -> SqlResult<Option<std::sync::Arc<strata_engine::RelEntry>>> {
        Ok(self(name)?.map(std::sync::Arc::new))
    }
}

/// The planner's catalog.
pub type Relations<'a> = dyn RelSource + 'a;

/// A physical plan node.
#[derive(Clone, Debug)]
pub enum Plan {
    /// One row of no columns.
    Result,
    SeqScan {
        table: String,
        /// What the query calls the table (EXPLAIN).
        alias: String,
        filter: Option<Expr>,
        /// The columns read above and by the filter (None: all); the others are
        /// NULL in the scan's rows (cursor rule 5).
        cols: Option<Vec<bool>>,
        /// Its blocks are shared by a parallel plan's workers (parallel rule 2).
        parallel: bool,
    },
    IndexScan {
        table: String,
        alias: String,
        path: IndexPath,
        filter: Option<Expr>,
        cols: Option<Vec<bool>>,
        /// Rows from the index's keys where the heap page is all visible (an
        /// Index Only Scan: planner rule 13).
        only: bool,
    },
    ViewScan {
        name: String,
        filter: Option<Expr>,
    },
    Series {
        start: Expr,
        stop: Expr,
        step: Option<Expr>,
        ty: SqlType,
        alias: Option<String>,
    },
    Values(Vec<Vec<Expr>>),
    Filter {
        input: Box<Plan>,
        cond: Expr,
    },
    Project {
        input: Box<Plan>,
        exprs: Vec<Expr>,
    },
    /// A join whose inner side is a LATERAL subquery, planned once and run for
    /// each outer row with that row as its outer row (analyze rule 7).
    Lateral {
        kind: JoinKind,
        outer: Box<Plan>,
        inner: Box<Plan>,
        cond: Option<Expr>,
        widths: (usize, usize),
    },
    NestLoop {
        kind: JoinKind,
        outer: Box<Plan>,
        inner: Box<Plan>,
        cond: Option<Expr>,
        widths: (usize, usize),
    },
    HashJoin {
        kind: JoinKind,
        outer: Box<Plan>,
        inner: Box<Plan>,
        /// Over the outer row.
        outer_keys: Vec<Expr>,
        /// Over the inner row.
        inner_keys: Vec<Expr>,
        /// Over the joined row.
        residual: Option<Expr>,
        widths: (usize, usize),
        /// Parallel rule 7: the inner side hashed once by the workers together,
        /// each reading a share of its driving scan (PostgreSQL's Parallel Hash).
        parallel: bool,
    },
    /// A join of two sides sorted ascending on their keys, plain columns
    /// (`executor::merge` rules; planner rule 8).
    MergeJoin {
        kind: JoinKind,
        outer: Box<Plan>,
        inner: Box<Plan>,
        outer_keys: Vec<Expr>,
        inner_keys: Vec<Expr>,
        residual: Option<Expr>,
        widths: (usize, usize),
    },
    /// Outputs the group keys, then the aggregates' values.
    Agg {
        input: Box<Plan>,
        keys: Vec<Expr>,
        aggs: Vec<Agg>,
        /// The input comes sorted by the keys: each run of equal keys is a group
        /// (planner rule 3), emitted when the run ends.
        sorted: bool,
        /// Parallel workers, each aggregating its share of the input, the leader
        /// combining their groups (parallel rule 4); 0: the leader alone.
        workers: usize,
    },
    Sort {
        input: Box<Plan>,
        keys: Vec<SortSpec>,
        /// Rows needed from the sort (LIMIT + OFFSET), if known when planned.
        bound: Option<Box<(Option<Expr>, Option<Expr>)>>,
    },
    /// Keeps each row whose key (the given columns, or all) was not seen before.
    Unique {
        input: Box<Plan>,
        cols: Option<Vec<usize>>,
    },
    Limit {
        input: Box<Plan>,
        offset: Option<Expr>,
        limit: Option<Expr>,
    },
    Append(Vec<Plan>),
    /// Appends each window function's value to every row (`window` rules); rows
    /// come out in the first function's window order.
    Window {
        input: Box<Plan>,
        funcs: Vec<crate::window::WinFunc>,
    },
    /// A recursive CTE (cte rule 3): `init`, then `step` over the work table
    /// `id` until a round gives no new rows.
    RecursiveUnion {
        id: usize,
        init: Box<Plan>,
        step: Box<Plan>,
        all: bool,
    },
    /// Its input's rows from parallel workers sharing its parallel scan (parallel
    /// rule 6).
    Gather {
        input: Box<Plan>,
        workers: usize,
    },
    /// A shared WITH query's rows (cte rule 2): `plan` runs at the first of its
    /// scans to be read, and every scan of `id` reads the rows it gave.
    CteScan {
        id: usize,
        name: String,
        alias: String,
        plan: Box<Plan>,
    },
    WorkTableScan {
        id: usize,
    },
    SetOp {
        op: SetOp,
        all: bool,
        left: Box<Plan>,
        right: Box<Plan>,
    },
}

/// Aggregation of `p` (a row of `width` columns) by `keys`: hashed, or over the
/// input sorted by the keys (planner rule 3). A key that is not a column of the
/// input is computed into a column after the input's for the sort.
fn aggregate(p: Plan, width: usize, (keys, aggs): (&[Expr], &[Agg]), sorted: bool) -> Plan {
    if !sorted {
        return Plan::Agg {
            input: Box::new(p),
            keys: keys.to_vec(),
            aggs: aggs.to_vec(),
            sorted,
            workers: 0,
        };
    }
    let (mut input, mut width) = (p, width);
    let compact = compacted(width, keys, aggs);
    let (keys, aggs) = match &compact {
        Some(kept) => {
            let at = |c: usize| kept.iter().position(|k| *k == c).expect("kept");
            let keys: Vec<Expr> = keys.iter().map(|k| map_cols(k.clone(), &at)).collect();
            let aggs: Vec<Agg> = aggs.iter().map(|a| agg_cols(a, &at)).collect();
            input = Plan::Project {
                input: Box::new(input),
                exprs: kept.iter().map(|c| Expr::Col(*c)).collect(),
            };
            width = kept.len();
            (std::borrow::Cow::Owned(keys), std::borrow::Cow::Owned(aggs))
        }
        None => (
            std::borrow::Cow::Borrowed(keys),
            std::borrow::Cow::Borrowed(aggs),
        ),
    };
    let (keys, aggs): (&[Expr], &[Agg]) = (&keys, &aggs);
    let mut cols = Vec::with_capacity(keys.len());
    let mut extra: Vec<Expr> = Vec::new();
    for k in keys {
        match k {
            Expr::Col(c) => cols.push(*c),
            _ => {
                cols.push(width + extra.len());
                extra.push(k.clone());
            }
        }
    }
    if !extra.is_empty() {
        let mut exprs: Vec<Expr> = (0..width).map(Expr::Col).collect();
        exprs.extend(extra);
        input = Plan::Project {
            input: Box::new(input),
            exprs,
        };
    }
    let sort = Plan::Sort {
        input: Box::new(input),
        keys: ascending(&cols),
        bound: None,
    };
    Plan::Agg {
        input: Box::new(sort),
        keys: cols.into_iter().map(Expr::Col).collect(),
        aggs: aggs.to_vec(),
        sorted,
        workers: 0,
    }
}

/// Planner rule 14: the GROUP BY keys (their places, with their types) that are
/// plain columns of a table whose primary key's columns are all keys too, not
/// themselves in that key.
fn dependent_keys(from: &Rel, keys: &[Expr], rels: &Relations<'_>) -> Vec<(usize, SqlType)> {
    let mut tables = Vec::new();
    table_leaves(from, 0, &mut tables);
    let cols: Vec<Option<usize>> = keys
        .iter()
        .map(|k| match k {
            Expr::Col(c) => Some(*c),
            _ => None,
        })
        .collect();
    let mut out: Vec<(usize, SqlType)> = Vec::new();
    for (offset, width, name) in tables {
        let Ok(Some(entry)) = rels.entry(name) else {
            continue;
        };
        let Some(pk) = entry.indexes.iter().find(|i| i.primary) else {
            continue;
        };
        if !pk.columns.iter().all(|c| cols.contains(&Some(offset + c))) {
            continue;
        }
        for (i, c) in cols.iter().enumerate() {
            let Some(c) = c.filter(|c| (offset..offset + width).contains(c)) else {
                continue;
            };
            if !pk.columns.contains(&(c - offset)) && !out.iter().any(|(k, _)| *k == i) {
                if let Some(col) = entry.columns.get(c - offset) {
                    out.push((i, SqlType::of_column(col)));
                }
            }
        }
    }
    out.sort_by_key(|(i, _)| *i);
    out
}

/// The tables of a FROM (their row's offset, width and name), through its joins.
fn table_leaves<'r>(r: &'r Rel, offset: usize, out: &mut Vec<(usize, usize, &'r str)>) {
    match r {
        Rel::Table { name, width, .. } => out.push((offset, *width, name)),
        Rel::Join(j) => {
            table_leaves(&j.left, offset, out);
            table_leaves(&j.right, offset + j.left_width, out);
        }
        _ => {}
    }
}

/// Planner rule 14: the aggregation grouped on the keys but the `dropped` ones,
/// each of those taken from any row of its group by an internal aggregate, the
/// row put back as keys then aggregates.
fn grouped_on_fewer(
    p: Plan,
    width: usize,
    (keys, aggs): (&[Expr], &[Agg]),
    sorted: bool,
    dropped: &[(usize, SqlType)],
) -> Plan {
    let is_dropped = |i: usize| dropped.iter().position(|(k, _)| *k == i);
    let kept: Vec<Expr> = (0..keys.len())
        .filter(|i| is_dropped(*i).is_none())
        .map(|i| keys[i].clone())
        .collect();
    let mut all = aggs.to_vec();
    all.extend(dropped.iter().map(|(i, ty)| Agg {
        func: AggFunc::Any,
        arg: Some(keys[*i].clone()),
        ty: *ty,
        distinct: false,
        filter: None,
        arg2: None,
        order: Vec::new(),
        direct: Vec::new(),
    }));
    let p = aggregate(p, width, (&kept, &all), sorted);
    let (nk, na) = (kept.len(), aggs.len());
    let mut next = 0;
    let mut exprs: Vec<Expr> = (0..keys.len())
        .map(|i| match is_dropped(i) {
            Some(j) => Expr::Col(nk + na + j),
            None => {
                next += 1;
                Expr::Col(next - 1)
            }
        })
        .collect();
    exprs.extend((0..na).map(|a| Expr::Col(nk + a)));
    Plan::Project {
        input: Box::new(p),
        exprs,
    }
}

/// Planner rule 3: the input columns a sorted aggregation reads (its keys' and
/// its aggregates' row expressions), in order, when they are fewer than the
/// input's; None when it reads them all or an expression could read the row
/// otherwise (a subquery's outer references).
fn compacted(width: usize, keys: &[Expr], aggs: &[Agg]) -> Option<Vec<usize>> {
    let mut read = vec![false; width];
    let exprs = keys.iter().chain(aggs.iter().flat_map(Agg::row_exprs));
    for e in exprs {
        if !crate::bind::engine_free(e) {
            return None;
        }
        let mut cs = Vec::new();
        crate::privileges::expr_columns(e, &mut cs);
        for c in cs {
            *read.get_mut(c)? = true;
        }
    }
    let kept: Vec<usize> = (0..width).filter(|c| read[*c]).collect();
    (kept.len() < width).then_some(kept)
}

/// `a` with its row expressions reading column `c` as `at(c)` (its direct
/// arguments read the group's key row, and stay).
fn agg_cols(a: &Agg, at: &dyn Fn(usize) -> usize) -> Agg {
    let mut a = a.clone();
    let map = |e: &mut Option<Expr>| *e = e.take().map(|x| map_cols(x, at));
    map(&mut a.arg);
    map(&mut a.filter);
    map(&mut a.arg2);
    for (e, _, _) in a.order.iter_mut() {
        *e = map_cols(e.clone(), at);
    }
    a
}

impl Plan {
    /// The node's inputs, in EXPLAIN's order.
    pub fn children(&self) -> Vec<&Plan> {
        match self {
            Plan::Filter { input, .. }
            | Plan::Project { input, .. }
            | Plan::Agg { input, .. }
            | Plan::Sort { input, .. }
            | Plan::Unique { input, .. }
            | Plan::Limit { input, .. }
            | Plan::Gather { input, .. }
            | Plan::Window { input, .. } => vec![input],
            Plan::Lateral { outer, inner, .. }
            | Plan::NestLoop { outer, inner, .. }
            | Plan::HashJoin { outer, inner, .. }
            | Plan::MergeJoin { outer, inner, .. } => vec![outer, inner],
            Plan::RecursiveUnion { init, step, .. } => vec![init, step],
            Plan::SetOp { left, right, .. } => vec![left, right],
            Plan::Append(v) => v.iter().collect(),
            _ => Vec::new(),
        }
    }
}

/// Sort keys over `cols`, ascending with NULLs last (PostgreSQL's default order).
fn ascending(cols: &[usize]) -> Vec<SortSpec> {
    cols.iter()
        .map(|&col| SortSpec {
            col,
            desc: false,
            nulls_first: false,
        })
        .collect()
}

/// Plans an analyzed query.
pub fn plan(q: &Query, rels: &Relations<'_>) -> SqlResult<Plan> {
    let ordered = crate::ordered::ordered_body(q, rels, &set_tree)?;
    let sorted = ordered.is_some();
    let body = match ordered {
        Some(p) => p,
        None => set_tree(&q.body, rels)?,
    };
    let width = q.body.types().len();
    let mut p = body;
    if !q.order.is_empty() && !sorted {
        let bound = (q.limit.is_some()).then(|| Box::new((q.offset.clone(), q.limit.clone())));
        p = Plan::Sort {
            input: Box::new(p),
            keys: q.order.clone(),
            bound,
        };
    }
    if let SetTree::Select(s) = &q.body {
        if s.distinct == Distinct::All && q.order.is_empty() && !rels.switches().hashagg {
            // Rule 8: DISTINCT by sorting, its rows in the sort's order.
            p = Plan::Sort {
                input: Box::new(p),
                keys: ascending(&(0..s.visible).collect::<Vec<_>>()),
                bound: None,
            };
        }
        p = distinct(p, s);
    }
    if q.limit.is_some() || q.offset.is_some() {
        p = Plan::Limit {
            input: Box::new(p),
            offset: q.offset.clone(),
            limit: q.limit.clone(),
        };
    }
    if width > q.columns.len() {
        p = Plan::Project {
            input: Box::new(p),
            exprs: (0..q.columns.len()).map(Expr::Col).collect(),
        };
    }
    Ok(p)
}

fn distinct(p: Plan, s: &Select) -> Plan {
    match &s.distinct {
        Distinct::No => p,
        Distinct::All => Plan::Unique {
            input: Box::new(p),
            cols: Some((0..s.visible).collect()),
        },
        Distinct::On(cols) => Plan::Unique {
            input: Box::new(p),
            cols: Some(cols.clone()),
        },
    }
}

fn set_tree(t: &SetTree, rels: &Relations<'_>) -> SqlResult<Plan> {
    Ok(match t {
        SetTree::Select(s) => select(s, rels)?,
        SetTree::Values(rows, _) => Plan::Values(rows.clone()),
        SetTree::Query(q) => plan(q, rels)?,
        SetTree::Cte(share, q, alias) if share.materialized() => Plan::CteScan {
            id: share.id,
            name: share.name.clone(),
            alias: alias.clone(),
            plan: Box::new(plan(q, rels)?),
        },
        SetTree::Cte(_, q, _) => plan(q, rels)?,
        SetTree::SetOp {
            op,
            all,
            left,
            right,
            types,
        } => {
            let l = cast_to(set_tree(left, rels)?, &left.types(), types);
            let r = cast_to(set_tree(right, rels)?, &right.types(), types);
            let p = match (op, all) {
                (SetOp::Union, true) => return Ok(Plan::Append(vec![l, r])),
                _ => Plan::SetOp {
                    op: *op,
                    all: *all,
                    left: Box::new(l),
                    right: Box::new(r),
                },
            };
            if rels.switches().hashagg {
                return Ok(p);
            }
            // Rule 8: the rows of a sorted set operation come out in its order.
            Plan::Sort {
                input: Box::new(p),
                keys: ascending(&(0..types.len()).collect::<Vec<_>>()),
                bound: None,
            }
        }
    })
}

/// A set operation side's columns cast to the common types (planner rule 5). A
/// side that is a projection takes the casts into it, a constant's folded (an
/// untyped literal becomes a constant of the common type, as PostgreSQL plans it).
fn cast_to(p: Plan, from: &[SqlType], to: &[SqlType]) -> Plan {
    if from.iter().zip(to).all(|(a, b)| a == b) && from.len() == to.len() {
        return p;
    }
    let cast = |i: usize, t: &SqlType, x: Expr| match (from.get(i), x) {
        (Some(f), x) if f == t => x,
        (Some(SqlType::Bpchar), x) if *t == SqlType::Text => crate::bind::bpchar_text(x),
        (_, Expr::Const(d)) => match crate::bind::cast_datum(d.clone(), *t) {
            Ok(v) => Expr::Const(v),
            Err(_) => Expr::Cast(Box::new(Expr::Const(d)), *t),
        },
        (_, x) => Expr::Cast(Box::new(x), *t),
    };
    match p {
        Plan::Project { input, exprs } if exprs.len() == to.len() => Plan::Project {
            input,
            exprs: exprs
                .into_iter()
                .zip(to)
                .enumerate()
                .map(|(i, (x, t))| cast(i, t, x))
                .collect(),
        },
        p => Plan::Project {
            input: Box::new(p),
            exprs: to
                .iter()
                .enumerate()
                .map(|(i, t)| cast(i, t, Expr::Col(i)))
                .collect(),
        },
    }
}

/// A SELECT (planner rule 4, up to the projection).
fn select(s: &Select, rels: &Relations<'_>) -> SqlResult<Plan> {
    if let Some(p) = crate::ordered::min_max(s, rels)? {
        return Ok(p);
    }
    let mut conjs = Vec::new();
    if let Some(f) = &s.filter {
        split_and(f.clone(), &mut conjs);
    }
    let conjs: Vec<Expr> = conjs
        .into_iter()
        .flat_map(factor_or)
        .map(crate::semijoin::in_as_exists)
        .collect();
    let (conjs, semis) = crate::semijoin::extract(&conjs, rels);
    let mut p = match &s.from {
        Rel::Join(j) if crate::joinorder::flattens(j) => {
            let needed = needed_columns(s, &conjs, &semis);
            crate::joinorder::plan(&s.from, conjs, needed.as_deref(), rels)?
        }
        Rel::Table { name, alias, .. } => {
            let needed = needed_columns(s, &conjs, &semis);
            let above = needed_columns(s, &[], &semis);
            let p = table_scan((name, alias), and_all(conjs), needed.as_deref(), rels)?;
            filter_only_nulled(read_only(p, needed.clone(), rels), needed, above)
        }
        from @ Rel::Join(_) => {
            let needed = needed_columns(s, &conjs, &semis);
            let mut p = rel(from, conjs, rels)?;
            if let Some(n) = needed {
                narrow(&mut p, &n, rels);
            }
            p
        }
        Rel::Subquery(q) => {
            let needed = needed_columns(s, &conjs, &semis);
            match needed.and_then(|n| prune_outputs(crate::cte::inlined(q), &n)) {
                Some(q) => rel(&Rel::Subquery(Box::new(q)), conjs, rels)?,
                None => rel(&s.from, conjs, rels)?,
            }
        }
        from => rel(from, conjs, rels)?,
    };
    p = crate::semijoin::apply(p, s.from.width(), semis, rels)?;
    if let Some(Grouping { keys, aggs, having }) = &s.grouping {
        // Rule 3, and rule 8's enable_hashagg.
        let sorted = !keys.is_empty()
            && (!rels.switches().hashagg || aggs.iter().any(|a| a.distinct || !a.order.is_empty()));
        p = match dependent_keys(&s.from, keys, rels) {
            dropped if dropped.is_empty() => aggregate(p, s.from.width(), (keys, aggs), sorted),
            dropped => grouped_on_fewer(p, s.from.width(), (keys, aggs), sorted, &dropped),
        };
        if let Some(h) = having {
            p = Plan::Filter {
                input: Box::new(p),
                cond: h.clone(),
            };
        }
    }
    if !s.windows.is_empty() {
        p = Plan::Window {
            input: Box::new(p),
            funcs: s.windows.clone(),
        };
    }
    Ok(Plan::Project {
        input: Box::new(p),
        exprs: s.targets.clone(),
    })
}

/// `p`, a table's scan under its filters, decoding only the `needed` columns.
/// Planner rule 9: `p` (a join tree's plan) with each scan below its joins
/// decoding only the columns read above it (`needed`, over `p`'s row) or by the
/// joins' conditions, and holding only those past its filter: the others are NULL
/// in its rows, so joins copy and hash tables hold only what is read. A node whose
/// expressions hold a subquery (whose reads are not followed) is left whole.
fn narrow(p: &mut Plan, needed: &[bool], rels: &Relations<'_>) {
    if matches!(p, Plan::SeqScan { .. } | Plan::IndexScan { .. }) {
        let scan = std::mem::replace(p, Plan::Result);
        *p = narrow_scan(scan, needed, rels);
        return;
    }
    let Some(needs) = child_needs(p, needed) else {
        return;
    };
    let children: Vec<&mut Plan> = match p {
        Plan::HashJoin { outer, inner, .. }
        | Plan::MergeJoin { outer, inner, .. }
        | Plan::NestLoop { outer, inner, .. } => vec![&mut **outer, &mut **inner],
        Plan::Project { input, .. } | Plan::Filter { input, .. } => vec![&mut **input],
        _ => return,
    };
    for (c, n) in children.into_iter().zip(needs) {
        narrow(c, &n, rels);
    }
}

/// The columns each child of `p` must give for `p` to give those `needed` marks
/// (planner rule 9): those read above and by `p`'s own expressions. None where
/// the children are left whole.
fn child_needs(p: &Plan, needed: &[bool]) -> Option<Vec<Vec<bool>>> {
    let union =
        |a: &[bool], b: &[bool]| -> Vec<bool> { a.iter().zip(b).map(|(x, y)| *x || *y).collect() };
    match p {
        Plan::HashJoin {
            outer_keys,
            inner_keys,
            residual,
            widths: (lw, rw),
            ..
        }
        | Plan::MergeJoin {
            outer_keys,
            inner_keys,
            residual,
            widths: (lw, rw),
            ..
        } if needed.len() == lw + rw => {
            let o = cols_of(outer_keys.iter(), *lw)?;
            let i = cols_of(inner_keys.iter(), *rw)?;
            let here = union(needed, &cols_of(residual.iter(), lw + rw)?);
            Some(vec![union(&here[..*lw], &o), union(&here[*lw..], &i)])
        }
        Plan::NestLoop {
            cond,
            widths: (lw, rw),
            ..
        } if needed.len() == lw + rw => {
            let here = union(needed, &cols_of(cond.iter(), lw + rw)?);
            Some(vec![here[..*lw].to_vec(), here[*lw..].to_vec()])
        }
        Plan::Project { input, exprs } if needed.len() == exprs.len() => {
            let used = exprs
                .iter()
                .zip(needed)
                .filter(|(_, n)| **n)
                .map(|(e, _)| e);
            Some(vec![cols_of(used, plan_width(input)?)?])
        }
        Plan::Filter { cond, .. } => Some(vec![union(
            needed,
            &cols_of(std::iter::once(cond), needed.len())?,
        )]),
        _ => None,
    }
}

/// The columns (of a row of `width`) that `es` read; None if one holds a
/// subquery or reaches the server (its reads are not followed).
fn cols_of<'e>(es: impl Iterator<Item = &'e Expr>, width: usize) -> Option<Vec<bool>> {
    let mut v = vec![false; width];
    for e in es {
        if !crate::bind::engine_free(e) {
            return None;
        }
        let mut cs = Vec::new();
        crate::privileges::expr_columns(e, &mut cs);
        for c in cs {
            *v.get_mut(c)? = true;
        }
    }
    Some(v)
}

/// Planner rule 9 at a scan: it decodes what `needed` marks and what its filter
/// reads; a column its filter alone reads is NULL in the rows it gives.
fn narrow_scan(p: Plan, needed: &[bool], rels: &Relations<'_>) -> Plan {
    let (Plan::SeqScan { filter, cols, .. } | Plan::IndexScan { filter, cols, .. }) = &p else {
        return p;
    };
    if cols.is_some()
        || filter
            .as_ref()
            .is_some_and(|f| !crate::bind::engine_free(f))
    {
        return p;
    }
    let mut read = needed.to_vec();
    if let Some(f) = filter {
        let mut cs = Vec::new();
        crate::privileges::expr_columns(f, &mut cs);
        for c in cs {
            match read.get_mut(c) {
                Some(r) => *r = true,
                None => return p,
            }
        }
    }
    if read.iter().all(|r| *r) {
        return read_only(p, None, rels);
    }
    let filter_only = read != needed;
    let p = read_only(p, Some(read), rels);
    if !filter_only {
        return p;
    }
    nulling(p, needed)
}

/// `p` under a projection that keeps the columns `keep` marks and gives NULL for
/// the others (planner rule 9).
fn nulling(p: Plan, keep: &[bool]) -> Plan {
    let exprs = keep
        .iter()
        .enumerate()
        .map(|(i, n)| match n {
            true => Expr::Col(i),
            false => Expr::Const(crate::Datum::Null),
        })
        .collect();
    Plan::Project {
        input: Box::new(p),
        exprs,
    }
}

/// Planner rule 9 at a single table's index scan: the columns only its filter
/// reads (`needed` but not `above`) are NULL in the rows it gives, by a
/// projection fused into the scan; through its index the scan then decodes only
/// what its residual conjuncts and the rest of the query read (executor rule 7).
fn filter_only_nulled(p: Plan, needed: Option<Vec<bool>>, above: Option<Vec<bool>>) -> Plan {
    let (Some(needed), Some(above)) = (needed, above) else {
        return p;
    };
    if !matches!(p, Plan::IndexScan { .. }) || needed == above || needed.len() != above.len() {
        return p;
    }
    nulling(p, &above)
}

/// The width of the rows a scan, filter or projection gives, where known without
/// the catalog.
fn plan_width(p: &Plan) -> Option<usize> {
    match p {
        Plan::Project { exprs, .. } => Some(exprs.len()),
        Plan::Filter { input, .. } => plan_width(input),
        Plan::HashJoin { widths, .. }
        | Plan::MergeJoin { widths, .. }
        | Plan::NestLoop { widths, .. } => Some(widths.0 + widths.1),
        _ => None,
    }
}

pub(crate) fn read_only(p: Plan, needed: Option<Vec<bool>>, rels: &Relations<'_>) -> Plan {
    match p {
        Plan::Filter { input, cond } => Plan::Filter {
            input: Box::new(read_only(*input, needed, rels)),
            cond,
        },
        Plan::SeqScan {
            table,
            alias,
            filter,
            parallel,
            ..
        } => Plan::SeqScan {
            table,
            alias,
            filter,
            cols: needed,
            parallel,
        },
        Plan::IndexScan {
            table,
            alias,
            path,
            filter,
            cols,
            only,
        } => Plan::IndexScan {
            // Decided already for these columns (by `table_scan`), else now.
            only: match cols == needed {
                true => only,
                false => covers(&table, &path.index, needed.as_deref(), rels),
            },
            table,
            alias,
            path,
            filter,
            cols: needed,
        },
        p => p,
    }
}

/// The FROM row's columns the rest of the SELECT reads (its WHERE conjuncts
/// `conjs`, the semi joins above the FROM, grouping, aggregates, or without
/// grouping its targets and windows), the columns its correlated subqueries read
/// among them.
fn needed_columns(
    s: &Select,
    conjs: &[Expr],
    semis: &[crate::semijoin::SemiJoin<'_>],
) -> Option<Vec<bool>> {
    let mut exprs: Vec<&Expr> = conjs.iter().collect();
    // A window aggregate's argument and FILTER are in its kind, not its args.
    let win_args: Vec<&Expr> = match &s.grouping {
        Some(_) => Vec::new(),
        None => s
            .windows
            .iter()
            .flat_map(crate::window::arg_exprs)
            .collect(),
    };
    match &s.grouping {
        Some(g) => {
            exprs.extend(&g.keys);
            for a in &g.aggs {
                exprs.extend(a.row_exprs());
            }
        }
        None => {
            exprs.extend(&s.targets);
            exprs.extend(&win_args);
            for w in &s.windows {
                exprs.extend(w.args.iter().chain(&w.partition));
                exprs.extend(w.order.iter().map(|o| &o.0));
            }
        }
    }
    let mut need = vec![false; s.from.width()];
    let mut cols = Vec::new();
    for j in semis {
        j.outer_columns(&mut cols);
    }
    for e in exprs {
        correlated_columns(e, &mut cols);
        crate::privileges::expr_columns(e, &mut cols);
    }
    for c in cols {
        if let Some(n) = need.get_mut(c) {
            *n = true;
        }
    }
    Some(need)
}

/// `e`'s AND operands, flattened.
pub(crate) fn split_and(e: Expr, out: &mut Vec<Expr>) {
    split_bool(e, BinOp::And, out)
}

/// `e`'s operands of `op` (AND or OR), flattened.
pub(crate) fn split_bool(e: Expr, op: BinOp, out: &mut Vec<Expr>) {
    match e {
        Expr::Bool(o, l) if o == op => l.into_iter().for_each(|x| split_bool(x, op, out)),
        Expr::Bin(a, o, b) if o == op => {
            split_bool(*a, op, out);
            split_bool(*b, op, out);
        }
        e => out.push(e),
    }
}

/// `(A AND B) OR (A AND C)` as `A` and `B OR C` (planner rule 1, PostgreSQL's
/// `find_duplicate_ors`): a conjunct every arm of an OR holds is a conjunct of its
/// own, so a join condition inside every arm can drive a hash join.
pub(crate) fn factor_or(e: Expr) -> Vec<Expr> {
    let mut arms = Vec::new();
    split_bool(e, BinOp::Or, &mut arms);
    if arms.len() < 2 {
        return arms;
    }
    let mut arms: Vec<Vec<Expr>> = arms
        .into_iter()
        .map(|a| {
            let mut v = Vec::new();
            split_and(a, &mut v);
            v
        })
        .collect();
    let common: Vec<Expr> = arms[0]
        .iter()
        .filter(|c| arms[1..].iter().all(|a| a.contains(c)))
        .cloned()
        .collect();
    if common.is_empty() {
        let arms = arms.into_iter().map(and_of).collect();
        return vec![Expr::Bool(BinOp::Or, arms)];
    }
    for a in &mut arms {
        a.retain(|c| !common.contains(c));
    }
    let mut out = common;
    // An arm left with nothing is TRUE: the OR holds whenever the common part does.
    if arms.iter().all(|a| !a.is_empty()) {
        out.push(Expr::Bool(
            BinOp::Or,
            arms.into_iter().map(and_of).collect(),
        ));
    }
    out
}

fn and_of(mut v: Vec<Expr>) -> Expr {
    if v.len() == 1 {
        return v.pop().expect("one");
    }
    Expr::Bool(BinOp::And, v)
}

/// How dear a conjunct is to test: none of its subqueries (0), uncorrelated ones
/// run once (1), correlated ones run per row (2).
fn cost_class(e: &Expr) -> u8 {
    let mut stack = vec![e];
    let mut class = 0;
    while let Some(e) = stack.pop() {
        if let Expr::SubLink(l) = e {
            class = class.max(if l.correlated { 2 } else { 1 });
        }
        e.children(&mut stack);
    }
    class
}

/// The conjuncts ANDed, the cheap ones first (planner rule 1): a correlated
/// subquery runs only for the rows the others let through.
pub(crate) fn and_all(mut conjs: Vec<Expr>) -> Option<Expr> {
    conjs.sort_by_key(cost_class);
    match conjs.len() {
        0 => None,
        1 => conjs.pop(),
        _ => Some(Expr::Bool(BinOp::And, conjs)),
    }
}

/// The columns `e` reads: (lowest, highest), or None for none.
fn col_span(e: &Expr) -> Option<(usize, usize)> {
    if has_correlated(e) {
        // Evaluated over the whole row it was bound over: never pushed down.
        return Some((0, usize::MAX));
    }
    let mut cols = Vec::new();
    crate::privileges::expr_columns(e, &mut cols);
    let lo = cols.iter().min()?;
    Some((*lo, *cols.iter().max()?))
}

/// Whether `e` holds a correlated subquery (its outer references index the row
/// `e` was bound over).
pub(crate) fn has_correlated(e: &Expr) -> bool {
    let mut stack = vec![e];
    while let Some(e) = stack.pop() {
        if matches!(e, Expr::SubLink(l) if l.correlated) {
            return true;
        }
        e.children(&mut stack);
    }
    false
}

/// The columns of the row `e` is evaluated over that its correlated subqueries
/// read (as outer references, at any depth inside them).
pub(crate) fn correlated_columns(e: &Expr, out: &mut Vec<usize>) {
    let mut stack = vec![e];
    while let Some(x) = stack.pop() {
        if let Expr::SubLink(l) = x {
            if l.correlated {
                let deps = crate::subquery::outer_deps(&l.query, 1);
                out.extend(deps.into_iter().filter(|(d, _)| *d == 0).map(|(_, c)| c));
            }
        }
        x.children(&mut stack);
    }
}

/// Whether `e` reads only columns in `range` (or none).
pub(crate) fn within(e: &Expr, range: std::ops::Range<usize>) -> bool {
    col_span(e).is_none_or(|(lo, hi)| range.contains(&lo) && range.contains(&hi))
}

/// `e` with every column shifted down by `by` (a conjunct moved to the right side).
pub(crate) fn shift(e: Expr, by: usize) -> Expr {
    match e {
        Expr::Col(c) => Expr::Col(c - by),
        e => e
            .map_children(&mut |x| Ok(shift(x, by)))
            .expect("shifting never fails"),
    }
}

/// `e` with every column shifted up by `by` (a conjunct of a join nested at `by`).
pub(crate) fn shift_up(e: Expr, by: usize) -> Expr {
    match e {
        Expr::Col(c) => Expr::Col(c + by),
        e => e
            .map_children(&mut |x| Ok(shift_up(x, by)))
            .expect("shifting never fails"),
    }
}

/// A join of `outer` and `inner` under `conds` (over the joined row): a hash join
/// on the equalities between the sides, else a nested loop (planner rule 2).
pub(crate) fn keyed_join(
    kind: JoinKind,
    (outer, inner): (Plan, Plan),
    conds: Vec<Expr>,
    (widths, rels): ((usize, usize), &Relations<'_>),
) -> SqlResult<Plan> {
    let sw = rels.switches();
    let keyless = !conds
        .iter()
        .any(|c| equi_key(c, widths.0, widths.0 + widths.1).is_some());
    if kind == JoinKind::Full && keyless && conds.iter().any(|c| col_span(c).is_some()) {
        // PostgreSQL's limit: a full join needs only hash- or merge-joinable quals,
        // whatever the switches.
        return Err(crate::SqlError::new(
            "0A000",
            "FULL JOIN is only supported with merge-joinable or hash-joinable join conditions",
        ));
    }
    if !sw.hashjoin && sw.mergejoin && mergeable(&conds, widths) {
        return Ok(merge_join(kind, (outer, inner), conds, widths));
    }
    if !sw.hashjoin && sw.nestloop {
        // Rule 8: a nested loop testing every condition.
        return Ok(Plan::NestLoop {
            kind,
            outer: Box::new(outer),
            inner: Box::new(inner),
            cond: and_all(conds),
            widths,
        });
    }
    // Rule 2: where a merge join could serve, the cheaper of the two.
    let merged = (sw.mergejoin && mergeable(&conds, widths))
        .then(|| merge_join(kind, (outer.clone(), inner.clone()), conds.clone(), widths));
    let (okeys, ikeys, residual) = split_keys(conds, widths);
    if okeys.is_empty() {
        return Ok(Plan::NestLoop {
            kind,
            outer: Box::new(outer),
            inner: Box::new(inner),
            cond: and_all(residual),
            widths,
        });
    }
    let hashed = Plan::HashJoin {
        kind,
        outer: Box::new(outer),
        inner: Box::new(inner),
        outer_keys: okeys,
        inner_keys: ikeys,
        residual: and_all(residual),
        widths,
        parallel: false,
    };
    Ok(match merged {
        Some(m) => {
            let mut costs = crate::cost::Costs::new(rels);
            if costs.of(&m).total < costs.of(&hashed).total {
                m
            } else {
                hashed
            }
        }
        None => hashed,
    })
}

/// `conds` (over a join's row) split into the equalities between its sides (each
/// side's expression, over that side's row) and the rest.
fn split_keys(conds: Vec<Expr>, widths: (usize, usize)) -> (Vec<Expr>, Vec<Expr>, Vec<Expr>) {
    let (mut okeys, mut ikeys, mut residual) = (Vec::new(), Vec::new(), Vec::new());
    for c in conds {
        match equi_key(&c, widths.0, widths.0 + widths.1) {
            Some((o, i)) => {
                okeys.push(o);
                ikeys.push(i);
            }
            None => residual.push(c),
        }
    }
    (okeys, ikeys, residual)
}

/// Planner rule 8: whether a join under `conds` can merge: it has an equality
/// between its sides, and each such equality is of two plain columns (what the
/// Sorts below a merge join order by).
fn mergeable(conds: &[Expr], widths: (usize, usize)) -> bool {
    let mut any = false;
    for c in conds {
        if let Some(k) = equi_key(c, widths.0, widths.0 + widths.1) {
            if !matches!(k, (Expr::Col(_), Expr::Col(_))) {
                return false;
            }
            any = true;
        }
    }
    any
}

/// A merge join of `outer` and `inner` under `conds`, each side sorted
/// ascending on its keys (planner rule 8).
fn merge_join(
    kind: JoinKind,
    (outer, inner): (Plan, Plan),
    conds: Vec<Expr>,
    widths: (usize, usize),
) -> Plan {
    let (okeys, ikeys, residual) = split_keys(conds, widths);
    let sorted = |p: Plan, keys: &[Expr]| {
        let cols: Vec<usize> = keys
            .iter()
            .filter_map(|k| match k {
                Expr::Col(c) => Some(*c),
                _ => None,
            })
            .collect();
        Box::new(Plan::Sort {
            input: Box::new(p),
            keys: ascending(&cols),
            bound: None,
        })
    };
    Plan::MergeJoin {
        kind,
        outer: sorted(outer, &okeys),
        inner: sorted(inner, &ikeys),
        outer_keys: okeys,
        inner_keys: ikeys,
        residual: and_all(residual),
        widths,
    }
}

/// A rel with `conjs` (over its row) applied (planner rule 1).
pub(crate) fn rel(r: &Rel, conjs: Vec<Expr>, rels: &Relations<'_>) -> SqlResult<Plan> {
    let filter = and_all(conjs.clone());
    Ok(match r {
        Rel::One => with_filter(Plan::Result, filter),
        Rel::Table { name, alias, .. } => table_scan((name, alias), filter, None, rels)?,
        Rel::View { name, .. } => Plan::ViewScan {
            name: name.clone(),
            filter,
        },
        Rel::Series {
            start,
            stop,
            step,
            ty,
            alias,
        } => with_filter(
            Plan::Series {
                start: start.clone(),
                stop: stop.clone(),
                step: step.clone(),
                ty: *ty,
                alias: alias.clone(),
            },
            filter,
        ),
        Rel::Subquery(q) => {
            let q = crate::cte::inlined(q);
            let (inner, rest) = push_into_subquery(q, conjs);
            let p = plan(inner.as_ref().unwrap_or(q), rels)?;
            with_filter(p, and_all(rest))
        }
        Rel::Join(j) if crate::joinorder::flattens(j) => {
            crate::joinorder::plan(r, conjs, None, rels)?
        }
        Rel::Join(j) => join(j, conjs, rels)?,
        Rel::Lateral(_) => {
            return Err(crate::SqlError::unsupported(
                "LATERAL inside a join on the right of another",
            ))
        }
        Rel::WorkTable { id, .. } => with_filter(Plan::WorkTableScan { id: *id }, filter),
        Rel::Recursive(r) => {
            let types: Vec<SqlType> = r.columns.iter().map(|(_, t)| *t).collect();
            let step_types = r.step.body.types();
            let step = cast_to(plan(&r.step, rels)?, &step_types, &types);
            let p = Plan::RecursiveUnion {
                id: r.id,
                init: Box::new(plan(&r.init, rels)?),
                step: Box::new(step),
                all: r.all,
            };
            with_filter(p, filter)
        }
    })
}

/// WHERE conjuncts over a subquery in FROM (a view's, say) go into its WHERE when it
/// is a plain SELECT (no grouping, window, DISTINCT, LIMIT or OFFSET, which a filter
/// above would not commute with): its output columns become the expressions it
/// computes them with, so the subquery's scan sees them (an index it serves, a
/// join's leaf). Conjuncts with subqueries, outer references or volatile calls stay
/// above. Returns the subquery with them (None: unchanged) and those left.
fn push_into_subquery(q: &Query, conjs: Vec<Expr>) -> (Option<Query>, Vec<Expr>) {
    let SetTree::Select(s) = &q.body else {
        return (None, conjs);
    };
    let plain = s.grouping.is_none()
        && s.windows.is_empty()
        && s.distinct == crate::analyze::Distinct::No
        && q.limit.is_none()
        && q.offset.is_none();
    if !plain || conjs.is_empty() {
        return (None, conjs);
    }
    let (mut pushed, mut rest) = (Vec::new(), Vec::new());
    for c in conjs {
        match substituted(&c, &s.targets[..s.visible]) {
            Some(x) => pushed.push(x),
            None => rest.push(c),
        }
    }
    if pushed.is_empty() {
        return (None, rest);
    }
    let mut inner = q.clone();
    if let SetTree::Select(s) = &mut inner.body {
        pushed.extend(s.filter.take());
        s.filter = and_all(pushed);
    }
    (Some(inner), rest)
}

/// Planner rule 10: `q` with the output columns `needed` leaves unmarked NULL;
/// None if nothing changes.
fn prune_outputs(q: &Query, needed: &[bool]) -> Option<Query> {
    let SetTree::Select(sel) = &q.body else {
        return None;
    };
    if sel.distinct != Distinct::No || needed.len() > sel.targets.len() {
        return None;
    }
    let unused: Vec<usize> = (0..needed.len())
        .filter(|i| !needed[*i] && !q.order.iter().any(|o| o.col == *i))
        .filter(|i| !matches!(sel.targets[*i], Expr::Const(_)) && !has_volatile(&sel.targets[*i]))
        .collect();
    if unused.is_empty() {
        return None;
    }
    let mut out = q.clone();
    if let SetTree::Select(s) = &mut out.body {
        for i in unused {
            s.targets[i] = Expr::Const(crate::Datum::Null);
        }
    }
    Some(out)
}

/// Whether `e` calls a volatile or session-changing function.
pub(crate) fn has_volatile(e: &Expr) -> bool {
    let mut stack = vec![e];
    while let Some(x) = stack.pop() {
        if volatile_call(x) {
            return true;
        }
        x.children(&mut stack);
    }
    false
}

/// Whether `x` itself is a call of a volatile or session-changing function.
pub(crate) fn volatile_call(x: &Expr) -> bool {
    matches!(
        x,
        Expr::Call(
            Func::Nextval
                | Func::Setval
                | Func::Currval
                | Func::Lastval
                | Func::Clock
                | Func::Sleep
                | Func::Random
                | Func::Setseed,
            _
        )
    )
}

/// `c` with each column replaced by the target computing it; None if `c` or a
/// target it reads may not move below (subqueries, outer references, volatile or
/// session-changing calls).
fn substituted(c: &Expr, targets: &[Expr]) -> Option<Expr> {
    let movable = |e: &Expr| {
        let mut stack = vec![e];
        while let Some(x) = stack.pop() {
            let fixed = !matches!(
                x,
                Expr::SubLink(_) | Expr::Outer(..) | Expr::Agg(_) | Expr::Window(_)
            ) && !volatile_call(x);
            if !fixed {
                return false;
            }
            x.children(&mut stack);
        }
        true
    };
    if !movable(c) {
        return None;
    }
    fn put(e: Expr, targets: &[Expr]) -> SqlResult<Expr> {
        match e {
            Expr::Col(i) => targets
                .get(i)
                .cloned()
                .ok_or_else(|| crate::SqlError::new("XX000", "a column past the subquery's")),
            e => e.map_children(&mut |x| put(x, targets)),
        }
    }
    let mut read = Vec::new();
    crate::privileges::expr_columns(c, &mut read);
    if read
        .iter()
        .any(|i| targets.get(*i).is_none_or(|t| !movable(t)))
    {
        return None;
    }
    put(c.clone(), targets).ok()
}

pub(crate) fn with_filter(p: Plan, filter: Option<Expr>) -> Plan {
    match filter {
        Some(cond) => Plan::Filter {
            input: Box::new(p),
            cond,
        },
        None => p,
    }
}

/// A table read whole or through an index its filter allows (`plan` rules), or
/// through one that holds every column the query reads (`needed`, where known:
/// rule 13; None: all of them).
fn table_scan(
    (name, alias): (&str, &str),
    filter: Option<Expr>,
    needed: Option<&[bool]>,
    rels: &Relations<'_>,
) -> SqlResult<Plan> {
    let sw = rels.switches();
    // Rule 8.
    let entry = if sw.indexscan {
        rels.entry(name)?
    } else {
        None
    };
    let (path, unique) = match (&filter, &entry) {
        (Some(f), Some(entry)) => {
            let path = crate::plan::choose(Some(f), &entry.columns, &entry.indexes);
            let unique = path.as_ref().is_some_and(|p| point_lookup(p, entry));
            (path, unique)
        }
        _ => (None, false),
    };
    let seq = |filter| Plan::SeqScan {
        table: name.to_string(),
        alias: alias.to_string(),
        filter,
        cols: None,
        parallel: false,
    };
    let path = path.or_else(|| covering_index(entry.as_ref()?, needed?, rels));
    let Some(path) = path else {
        return Ok(seq(filter)); // no copy of the filter where no index serves
    };
    let whole = seq(filter.clone());
    let only = entry.as_ref().is_some_and(|e| {
        let ix = e.indexes.iter().find(|ix| ix.name == path.index);
        ix.is_some_and(|ix| covers_entry(e, ix, needed, sw))
    });
    let index = Plan::IndexScan {
        table: name.to_string(),
        alias: alias.to_string(),
        path,
        filter,
        cols: needed.map(<[bool]>::to_vec),
        only,
    };
    // Rule 12: the cheaper; with sequential scans off, the index (rule 8).
    if !sw.seqscan || (unique && rels.pages(name) > 2) {
        return Ok(index);
    }
    let mut costs = crate::cost::Costs::new(rels);
    if costs.of(&whole).total < costs.of(&index).total {
        return Ok(whole);
    }
    Ok(index)
}

/// Rule 13: an index holding every column of `entry` that `needed` marks, read
/// whole (the one with the fewest columns), for a query no index condition
/// serves; None if none does.
fn covering_index(
    entry: &strata_engine::RelEntry,
    needed: &[bool],
    rels: &Relations<'_>,
) -> Option<crate::plan::IndexPath> {
    let ix = entry
        .indexes
        .iter()
        .filter(|ix| covers_entry(entry, ix, Some(needed), rels.switches()))
        .min_by_key(|ix| ix.columns.len())?;
    Some(crate::plan::whole(ix, &entry.columns))
}

/// Rule 13: whether index `index` of `table` holds every column a scan reads
/// (`read`; None: all) in keys that read back whole, so the scan can be an Index
/// Only Scan.
pub(crate) fn covers(
    table: &str,
    index: &str,
    read: Option<&[bool]>,
    rels: &Relations<'_>,
) -> bool {
    let Ok(Some(entry)) = rels.entry(table) else {
        return false;
    };
    entry
        .indexes
        .iter()
        .find(|ix| ix.name == index)
        .is_some_and(|ix| covers_entry(&entry, ix, read, rels.switches()))
}

fn covers_entry(
    entry: &strata_engine::RelEntry,
    ix: &strata_engine::IndexDef,
    read: Option<&[bool]>,
    sw: Switches,
) -> bool {
    let reads = |c: usize| read.is_none_or(|r| r.get(c).copied().unwrap_or(false));
    sw.indexonlyscan
        && sw.indexscan
        && (0..entry.columns.len()).all(|c| !reads(c) || ix.columns.contains(&c))
        && strata_engine::key_kinds(entry, ix).is_some()
}

/// Rule 12's shortcut: whether `path` reads at most one row (equalities on every
/// column of a unique index). Of a table of more than two pages that costs less
/// than reading the table (a probe's two random pages against at least three pages
/// and their rows), so it is taken without weighing: a point query is not charged
/// the estimates.
fn point_lookup(path: &crate::plan::IndexPath, entry: &strata_engine::RelEntry) -> bool {
    entry
        .indexes
        .iter()
        .any(|ix| ix.name == path.index && ix.unique && ix.columns.len() == path.equalities())
}

/// A join whose right side is a LATERAL subquery: WHERE conjuncts over the left
/// row go below it; the ON condition and the rest are tested on the joined row.
fn lateral(j: &Join, q: &Query, above: Vec<Expr>, rels: &Relations<'_>) -> SqlResult<Plan> {
    let lw = j.left_width;
    let (mut left_c, mut top) = (Vec::new(), Vec::new());
    for c in above {
        match within(&c, 0..lw) {
            true => left_c.push(c),
            false => top.push(c),
        }
    }
    let mut p = Plan::Lateral {
        kind: j.kind,
        outer: Box::new(rel(&j.left, left_c, rels)?),
        inner: Box::new(plan(q, rels)?),
        cond: j.on.clone(),
        widths: (lw, j.right_width),
    };
    if !j.merged.is_empty() {
        let mut exprs: Vec<Expr> = (0..lw + j.right_width).map(Expr::Col).collect();
        exprs.extend(j.merged.iter().cloned());
        p = Plan::Project {
            input: Box::new(p),
            exprs,
        };
    }
    Ok(with_filter(p, and_all(top)))
}

/// A join with the conjuncts above it (planner rules 1 and 2).
pub(crate) fn join(j: &Join, above: Vec<Expr>, rels: &Relations<'_>) -> SqlResult<Plan> {
    if let Rel::Lateral(q) = &j.right {
        return lateral(j, q, above, rels);
    }
    let (lw, rw) = (j.left_width, j.right_width);
    let inner_width = lw + rw;
    let (mut left_c, mut right_c, mut here) = (Vec::new(), Vec::new(), Vec::new());
    let mut on = Vec::new();
    if let Some(c) = &j.on {
        split_and(c.clone(), &mut on);
    }
    // WHERE conjuncts: over merged columns they stay above the join.
    let mut top = Vec::new();
    for c in above {
        if !within(&c, 0..inner_width) {
            top.push(c);
        } else if within(&c, 0..lw) && matches!(j.kind, JoinKind::Inner | JoinKind::Left) {
            left_c.push(c);
        } else if within(&c, lw..inner_width) && matches!(j.kind, JoinKind::Inner | JoinKind::Right)
        {
            right_c.push(shift(c, lw));
        } else {
            top.push(c);
        }
    }
    for c in on {
        match j.kind {
            JoinKind::Inner if col_span(&c).is_some() && within(&c, 0..lw) => left_c.push(c),
            JoinKind::Inner if col_span(&c).is_some() && within(&c, lw..inner_width) => {
                right_c.push(shift(c, lw))
            }
            JoinKind::Left if col_span(&c).is_some() && within(&c, lw..inner_width) => {
                right_c.push(shift(c, lw))
            }
            JoinKind::Right if col_span(&c).is_some() && within(&c, 0..lw) => left_c.push(c),
            _ => here.push(c),
        }
    }
    let sizes = crate::estimate::Sizes::new(rels);
    let smaller_left = sizes.rel_rows(&j.left, &left_c) < sizes.rel_rows(&j.right, &right_c);
    let outer = rel(&j.left, left_c, rels)?;
    let inner = rel(&j.right, right_c, rels)?;
    let mut p = keyed_join(j.kind, (outer, inner), here, ((lw, rw), rels))?;
    if j.kind == JoinKind::Left && smaller_left {
        p = hash_smaller_side(p);
    }
    if !j.merged.is_empty() {
        let mut exprs: Vec<Expr> = (0..inner_width).map(Expr::Col).collect();
        exprs.extend(j.merged.iter().cloned());
        p = Plan::Project {
            input: Box::new(p),
            exprs,
        };
    }
    Ok(with_filter(p, and_all(top)))
}

/// Planner rule 11: a hash left join whose preserved side is estimated smaller
/// becomes a hash right join hashing that side (PostgreSQL's choice too), under a
/// projection that puts the row back in the left-then-right layout.
fn hash_smaller_side(p: Plan) -> Plan {
    let Plan::HashJoin {
        kind: JoinKind::Left,
        outer,
        inner,
        outer_keys,
        inner_keys,
        residual,
        widths: (lw, rw),
        ..
    } = p
    else {
        return p;
    };
    // The residual over the swapped row: the right side's columns first.
    let swap = |c: usize| if c < lw { c + rw } else { c - lw };
    let residual = residual.map(|e| map_cols(e, &swap));
    let joined = Plan::HashJoin {
        kind: JoinKind::Right,
        outer: inner,
        inner: outer,
        outer_keys: inner_keys,
        inner_keys: outer_keys,
        residual,
        widths: (rw, lw),
        parallel: false,
    };
    Plan::Project {
        input: Box::new(joined),
        exprs: (0..lw + rw).map(|c| Expr::Col(swap(c))).collect(),
    }
}

/// `e` with each column `c` read as `f(c)`.
pub(crate) fn map_cols(e: Expr, f: &dyn Fn(usize) -> usize) -> Expr {
    match e {
        Expr::Col(c) => Expr::Col(f(c)),
        e => e
            .map_children(&mut |x| Ok(map_cols(x, f)))
            .expect("rewriting never fails"),
    }
}

/// `l = r` with `l` over the left side and `r` over the right (either order): the
/// left key, and the right key over the right row.
fn equi_key(c: &Expr, lw: usize, width: usize) -> Option<(Expr, Expr)> {
    let Expr::Bin(a, BinOp::Eq, b) = c else {
        return None;
    };
    let (sa, sb) = (col_span(a)?, col_span(b)?);
    let left = |s: (usize, usize)| s.1 < lw;
    let right = |s: (usize, usize)| s.0 >= lw && s.1 < width;
    if left(sa) && right(sb) {
        Some(((**a).clone(), shift((**b).clone(), lw)))
    } else if right(sa) && left(sb) {
        Some(((**b).clone(), shift((**a).clone(), lw)))
    } else {
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn equi_keys_are_found_either_way_round() {
        let eq = |a, b| Expr::Bin(Box::new(Expr::Col(a)), BinOp::Eq, Box::new(Expr::Col(b)));
        assert_eq!(
            equi_key(&eq(0, 3), 2, 5),
            Some((Expr::Col(0), Expr::Col(1)))
        );
        assert_eq!(
            equi_key(&eq(4, 1), 2, 5),
            Some((Expr::Col(1), Expr::Col(2)))
        );
        assert_eq!(equi_key(&eq(0, 1), 2, 5), None);
    }

    #[test]
    fn conjuncts_split_and_shift() {
        let mut out = Vec::new();
        let c = |i| Expr::IsNull(Box::new(Expr::Col(i)), false);
        split_and(
            Expr::Bool(
                BinOp::And,
                vec![c(0), Expr::Bool(BinOp::And, vec![c(1), c(2)])],
            ),
            &mut out,
        );
        assert_eq!(out.len(), 3);
        assert_eq!(shift(c(5), 2), c(3));
        assert!(within(&c(1), 0..2) && !within(&c(2), 0..2));
    }
}
