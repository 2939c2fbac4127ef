//! Parallel plans: the aggregates, sorts and hash tables of a statement over a
//! large table fed by several workers, each reading its share of the table's
//! blocks, as PostgreSQL's Partial / Gather / Finalize aggregates and its Gather
//! nodes are.
//!
//! Entry point: [`parallelize`] (a statement's plan, after planning).
//!
//! Rules (cited as "parallel rule N"):
//! 1. Only the statement's own plan is made parallel, never a subquery's (one
//!    may run once per row), and only a hash or plain aggregate whose aggregates
//!    combine ([`crate::aggregate::combinable`]); the workers are
//!    `max_parallel_workers_per_gather` (PostgreSQL's default 2), at most
//!    [`MAX_WORKERS`] (PostgreSQL's `max_parallel_workers`); 0 plans nothing
//!    parallel.
//! 2. The aggregate's input is driven by one sequential scan — the bottom of its
//!    outer side through filters, projections and the outer side of inner, left,
//!    semi and anti joins — whose blocks the workers share (engine cursor rule 8),
//!    so each row of it is read by one worker. Every other part of the input (a
//!    hash join's inner side unless rule 7 shares it, a nested loop's held rows)
//!    is run whole by each worker. The scan must be of at least
//!    `min_parallel_table_scan_size` (8MB, 1024 pages) and at least as large as
//!    the tables the workers run whole (not the scans rule 7 shares), so more
//!    than half the work is shared.
//! 3. Nothing in the input may reach past the worker's own rows: no function that
//!    reaches the server or is volatile, no system view, WITH query or recursive
//!    work table, and a subquery only if its own plan qualifies and holds no
//!    subquery. The leader plans the subqueries before the workers start and each
//!    worker runs them itself (an uncorrelated one once, a correlated one per row,
//!    as the leader would). The workers read through the leader's snapshot and
//!    evaluate with its settings and parameters. A statement inside a transaction
//!    block that has written runs its plan in the leader alone (its rows are the
//!    transaction's own to see).
//! 4. Each worker aggregates the rows it reads into its own groups (the Partial
//!    aggregate), the leader combines each key's states (the Finalize aggregate):
//!    count and sum add, min and max compare, avg adds sums and counts.
//! 5. Memory: each worker's groups and the combined ones are bounded by hash_mem as
//!    any hash aggregate's; past it, the workers stop and the leader aggregates the
//!    input alone, spilling as a hash aggregate does (executor rule 3). An interrupt
//!    of the leader or a worker's error stops every worker within a page or 1024
//!    rows; the leader checks its interrupts while it waits.
//! 6. Gather: the input of a sort, or the inner (built) side of a hash join, is
//!    run by the workers under a Gather when it qualifies as an aggregate's input
//!    does (rules 2-3) and holds nothing parallel yet; a bounded sort (ORDER BY
//!    ... LIMIT) is also run in each worker, so each sends only its best rows;
//!    otherwise the driving scan must have a filter (each row sent costs the
//!    leader about what reading it would: the workers must save more). The
//!    leader gathers every row at the first pull — up to hash_mem in memory, the
//!    rest in a temporary file — and its consumer reads them as they came.
//! 7. Parallel hash: a hash join the driving scan's rows pass through (inner,
//!    left, semi, anti) whose inner side is driven by a sequential scan of at
//!    least `MIN_PAGES` has that side built by the workers together, each
//!    reading a share of that scan's blocks, into one table they all probe
//!    (PostgreSQL's Parallel Hash; `executor::sharedhash`), rather than by each
//!    worker whole. The inner side's own joins are weighed the same way.

use crate::aggregate::combinable;
use crate::analyze::JoinKind;
use crate::bind::Expr;
use crate::planner::{Plan, Relations};

/// Rule 1: the most workers a plan is given (PostgreSQL's `max_parallel_workers`).
pub const MAX_WORKERS: usize = 8;

/// Rule 2: the smallest table a parallel scan reads, in pages (8MB).
pub const MIN_PAGES: u32 = 1024;

/// Rules 1, 2 and 6: `p` with its qualifying aggregates, sorts and hash joins made
/// parallel.
pub fn parallelize(p: &mut Plan, rels: &Relations<'_>) {
    let workers = rels.switches().workers.min(MAX_WORKERS);
    if workers > 0 {
        walk(p, rels, workers);
    }
}

/// Rule 1: the aggregates reached through nodes that run their inputs once.
fn walk(p: &mut Plan, rels: &Relations<'_>, workers: usize) {
    if let Plan::Agg {
        input,
        keys,
        aggs,
        sorted: false,
        workers: w,
    } = p
    {
        let exprs_safe = keys.iter().all(|e| safe_expr(e, Some(rels)))
            && aggs
                .iter()
                .all(|a| combinable(a) && a.row_exprs().all(|e| safe_expr(e, Some(rels))));
        if exprs_safe && safe(input, Some(rels)) && drive(input, rels, false) {
            *w = workers;
            share_builds(input, rels);
            return;
        }
    }
    match p {
        // Rule 6: the highest input that qualifies goes under the Gather, so the
        // most of the work is shared; else what qualifies below it.
        Plan::Sort { input, keys, bound } => {
            if gatherable(input, rels, bound.is_none()) {
                // Rule 6: a bounded sort is also run in each worker, on its share.
                share_builds(input, rels);
                let part = match bound {
                    Some(_) => Plan::Sort {
                        input: Box::new(take(input)),
                        keys: keys.clone(),
                        bound: bound.clone(),
                    },
                    None => take(input),
                };
                **input = Plan::Gather {
                    input: Box::new(part),
                    workers,
                };
            } else {
                walk(input, rels, workers);
            }
        }
        Plan::HashJoin { outer, inner, .. } => {
            walk(outer, rels, workers);
            if gatherable(inner, rels, true) {
                share_builds(inner, rels);
                **inner = Plan::Gather {
                    input: Box::new(take(inner)),
                    workers,
                };
            } else {
                walk(inner, rels, workers);
            }
        }
        Plan::Filter { input, .. }
        | Plan::Project { input, .. }
        | Plan::Agg { input, .. }
        | Plan::Unique { input, .. }
        | Plan::Limit { input, .. }
        | Plan::Window { input, .. } => walk(input, rels, workers),
        Plan::NestLoop { outer, inner, .. } => {
            walk(outer, rels, workers);
            walk(inner, rels, workers);
        }
        Plan::Lateral { outer, .. } => walk(outer, rels, workers),
        Plan::SetOp { left, right, .. } => {
            walk(left, rels, workers);
            walk(right, rels, workers);
        }
        Plan::Append(parts) => parts.iter_mut().for_each(|x| walk(x, rels, workers)),
        _ => {}
    }
}

/// `p`'s plan, left as an empty Result.
fn take(p: &mut Plan) -> Plan {
    std::mem::replace(p, Plan::Result)
}

/// Rule 6: whether `p` may run in workers under a Gather (marking its driving
/// scan parallel): it is safe, holds nothing parallel yet, and is driven by a
/// large enough scan — one with a filter, when every row it passes is sent.
fn gatherable(p: &mut Plan, rels: &Relations<'_>, all_sent: bool) -> bool {
    !has_parallel(p) && safe(p, Some(rels)) && drive(p, rels, all_sent)
}

/// Whether `p` already has a parallel part (a parallel aggregate or a Gather).
fn has_parallel(p: &Plan) -> bool {
    match p {
        Plan::Agg { workers, .. } if *workers > 0 => true,
        Plan::Gather { .. } => true,
        _ => p.children().into_iter().any(has_parallel),
    }
}

/// Rule 2: marks the scan that drives `p` parallel if it is large enough (and
/// has a filter, when `filtered`); whether it did.
fn drive(p: &mut Plan, rels: &Relations<'_>, filtered: bool) -> bool {
    let whole = whole_pages(p, rels);
    let Some(Plan::SeqScan {
        table,
        parallel,
        filter,
        ..
    }) = spine(p)
    else {
        return false;
    };
    if filtered && filter.is_none() {
        return false;
    }
    let pages = u64::from(rels.pages(table));
    if pages < u64::from(MIN_PAGES) || pages * 2 < whole {
        return false;
    }
    *parallel = true;
    true
}

/// Rule 7: marks the hash joins on `p`'s spine whose inner sides the workers
/// build together, and the scans that drive those sides parallel.
fn share_builds(p: &mut Plan, rels: &Relations<'_>) {
    match p {
        Plan::Filter { input, .. } | Plan::Project { input, .. } => share_builds(input, rels),
        Plan::NestLoop { kind, outer, .. } | Plan::Lateral { kind, outer, .. }
            if spine_kind(kind) =>
        {
            share_builds(outer, rels)
        }
        Plan::HashJoin {
            kind,
            outer,
            inner,
            parallel,
            ..
        } if spine_kind(kind) => {
            share_builds(outer, rels);
            if has_parallel(inner) {
                return;
            }
            if let Some(Plan::SeqScan {
                table,
                parallel: scan,
                ..
            }) = spine(inner)
            {
                if rels.pages(table) >= MIN_PAGES {
                    *scan = true;
                    *parallel = true;
                    share_builds(inner, rels);
                }
            }
        }
        _ => {}
    }
}

/// Rule 2: the scan at the bottom of `p`'s outer side, if it is a sequential one.
fn spine(p: &mut Plan) -> Option<&mut Plan> {
    match p {
        Plan::SeqScan { .. } => Some(p),
        Plan::Filter { input, .. } | Plan::Project { input, .. } => spine(input),
        Plan::NestLoop { kind, outer, .. }
        | Plan::HashJoin { kind, outer, .. }
        | Plan::Lateral { kind, outer, .. }
            if spine_kind(kind) =>
        {
            spine(outer)
        }
        _ => None,
    }
}

/// The pages of every table `p` scans sequentially (the driving scan's included)
/// but those of the inner sides rule 7 has the workers build together.
fn whole_pages(p: &Plan, rels: &Relations<'_>) -> u64 {
    match p {
        Plan::SeqScan { table, .. } => u64::from(rels.pages(table)),
        Plan::Filter { input, .. } | Plan::Project { input, .. } => whole_pages(input, rels),
        Plan::HashJoin {
            kind, outer, inner, ..
        } if spine_kind(kind) => {
            let shared = match (has_parallel(inner), driving_table(inner)) {
                (false, Some(t)) if rels.pages(t) >= MIN_PAGES => u64::from(rels.pages(t)),
                _ => 0,
            };
            whole_pages(outer, rels) + whole_pages(inner, rels) - shared
        }
        _ => p.children().into_iter().map(|c| whole_pages(c, rels)).sum(),
    }
}

/// The joins the driving scan's rows pass through (rule 2).
fn spine_kind(k: &JoinKind) -> bool {
    matches!(
        k,
        JoinKind::Inner | JoinKind::Left | JoinKind::Semi | JoinKind::Anti
    )
}

/// The table of the sequential scan at the bottom of `p`'s outer side (rule 2).
fn driving_table(p: &Plan) -> Option<&str> {
    match p {
        Plan::SeqScan { table, .. } => Some(table),
        Plan::Filter { input, .. } | Plan::Project { input, .. } => driving_table(input),
        Plan::NestLoop { kind, outer, .. }
        | Plan::HashJoin { kind, outer, .. }
        | Plan::Lateral { kind, outer, .. }
            if spine_kind(kind) =>
        {
            driving_table(outer)
        }
        _ => None,
    }
}

/// The expressions of node `p` itself (not its children's); None for a node a
/// worker may not run (rule 3): a system view, a WITH query, a recursive union or
/// its work table, a window, a Gather.
pub(crate) fn node_exprs(p: &Plan) -> Option<Vec<&Expr>> {
    Some(match p {
        Plan::Result | Plan::Append(_) | Plan::Unique { .. } => Vec::new(),
        Plan::SeqScan { filter, .. } | Plan::IndexScan { filter, .. } => filter.iter().collect(),
        Plan::Values(rows) => rows.iter().flatten().collect(),
        Plan::Series {
            start, stop, step, ..
        } => [start, stop].into_iter().chain(step.as_ref()).collect(),
        Plan::Filter { cond, .. } => vec![cond],
        Plan::Project { exprs, .. } => exprs.iter().collect(),
        Plan::Lateral { cond, .. } | Plan::NestLoop { cond, .. } => cond.iter().collect(),
        Plan::HashJoin {
            outer_keys,
            inner_keys,
            residual,
            ..
        } => outer_keys
            .iter()
            .chain(inner_keys)
            .chain(residual.as_ref())
            .collect(),
        Plan::Agg { keys, aggs, .. } => keys
            .iter()
            .chain(aggs.iter().flat_map(|a| a.row_exprs().chain(&a.direct)))
            .collect(),
        Plan::Sort { bound, .. } => match bound.as_deref() {
            Some((o, l)) => o.iter().chain(l.iter()).collect(),
            None => Vec::new(),
        },
        Plan::Limit { offset, limit, .. } => offset.iter().chain(limit.iter()).collect(),
        _ => return None,
    })
}

/// Every node of `p`, `p` first.
pub(crate) fn nodes(p: &Plan) -> Vec<&Plan> {
    let mut out = vec![p];
    let mut i = 0;
    while i < out.len() {
        let more = out[i].children();
        out.extend(more);
        i += 1;
    }
    out
}

/// Rule 3: whether a worker may run `p`; a subquery in its expressions only with
/// `rels` to plan it by, and only one with no subquery in its own plan.
fn safe(p: &Plan, rels: Option<&Relations<'_>>) -> bool {
    nodes(p)
        .into_iter()
        .all(|n| node_exprs(n).is_some_and(|es| es.into_iter().all(|e| safe_expr(e, rels))))
}

/// Rule 3: an expression a worker may evaluate: nothing volatile or reaching the
/// server, and a subquery only with `rels` and a plan a worker may run (whose
/// expressions hold no subquery).
fn safe_expr(e: &Expr, rels: Option<&Relations<'_>>) -> bool {
    let mut todo = vec![e];
    while let Some(x) = todo.pop() {
        match x {
            Expr::SubLink(l) => {
                let planned = rels.map(|r| crate::planner::plan(&l.query, r));
                if !matches!(planned, Some(Ok(ref sub)) if safe(sub, None)) {
                    return false;
                }
            }
            Expr::Call(f, _) if f.reaches_server() => return false,
            _ if crate::planner::volatile_call(x) => return false,
            _ => {}
        }
        x.children(&mut todo);
    }
    true
}
