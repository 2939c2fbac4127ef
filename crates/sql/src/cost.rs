//! Costs: what each node of a physical plan is estimated to cost and to return, in
//! PostgreSQL's units and by its formulas (costsize.c), so that EXPLAIN's
//! `(cost=startup..total rows=n width=w)` reads as a PostgreSQL user expects.
//!
//! Entry point: [`Costs::of`] (a plan node, memoized by address for one EXPLAIN).
//!
//! Rules (cited as "cost rule N"):
//! 1. Units are PostgreSQL's settings, the session's ([`Units`]; defaults a
//!    sequential page read 1.0, a random one 4.0, a tuple 0.01, an index tuple
//!    0.005, an operator or function call 0.0025, a row passed by a parallel
//!    worker 0.1, a parallel query's setup 1000).
//! 2. Rows come from `estimate`: a table's rows and its filter's selectivity from
//!    ANALYZE's statistics where it has them; a join's from its equalities'
//!    distinct values (traced through the plan to a table's column where they can
//!    be, else `min(200, rows)`); a group count is the product of its keys'
//!    distinct values, at most the input's rows. Rows shown are at least 1.
//! 3. A sequential scan costs its pages plus, per row, a tuple and its filter's
//!    operators; a parallel one divides the per-row part and its rows by the
//!    parallel divisor (workers + what the leader contributes, 1 − 0.3 × workers).
//!    An index scan costs its descent (log2 of the index's tuples plus 50
//!    operators per level), its index pages and tuples at random-page cost, and
//!    the heap pages its rows fall on: Mackert–Lohman's count at random-page
//!    cost, moved towards one random read and the rest sequential by the square
//!    of the index's leading column's correlation (ANALYZE's). An index-only
//!    scan's heap pages are those not all visible: times 1 − relallvisible /
//!    pages now (PostgreSQL's allvisfrac). An index scan run once per outer row
//!    (a nested loop's parameterized inner side) costs one run of them, the pages
//!    all runs fetch counted once and shared among the runs ([`IndexRun`]).
//! 4. Sort: 2 operators × N × log2(N) before the first row (log2 of twice the
//!    bound for a top-N sort), one operator per row after. Hash join: the inner
//!    side hashed before the first row; per outer row its keys, per joined row a
//!    tuple. Nested loop: the inner side run once and re-read per outer row from
//!    its materialized rows (run again per outer row when it reads the outer row).
//!    Aggregation: per input row an operator per key and aggregate, per group a
//!    tuple; hashed aggregation returns nothing before its input ends. Limit and
//!    OFFSET take their share of the input's run cost (10% of its rows where the
//!    count is not a constant).
//! 5. Width is the average bytes of a node's output columns: a table column's
//!    ANALYZE width else its type's, an expression's type's.
//! 7. A subquery in an expression costs its plan's total once, before the node's
//!    first row, when it runs once (an InitPlan, or hashed), and per row when it
//!    reads the row (a SubPlan). Each plan is costed once and kept while the
//!    estimates are: they are known by their nodes' addresses.
//! 6. A node Strata folds and PostgreSQL shows (Hash, Materialize, a window's
//!    Sort, a set operation's Append, a parallel aggregate's Partial and Gather)
//!    is costed as PostgreSQL costs it, from its child ([`Est`]'s helpers).

use crate::analyze::{JoinKind, SetOp};
use crate::bind::{Agg, AggFunc, BinOp, Expr};
use crate::estimate::{default_sel, Sizes, DEFAULT_NUM_DISTINCT};
use crate::planner::{Plan, Relations};
use crate::{Datum, SqlType};
use std::collections::HashMap;
use std::rc::Rc;

/// The session's cost units (cost rule 1).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Units {
    pub seq_page: f64,
    pub random_page: f64,
    pub cpu_tuple: f64,
    pub cpu_index_tuple: f64,
    pub cpu_operator: f64,
    pub parallel_tuple: f64,
    pub parallel_setup: f64,
}

impl Default for Units {
    fn default() -> Self {
        Units {
            seq_page: 1.0,
            random_page: 4.0,
            cpu_tuple: 0.01,
            cpu_index_tuple: 0.005,
            cpu_operator: 0.0025,
            parallel_tuple: 0.1,
            parallel_setup: 1000.0,
        }
    }
}

impl Units {
    /// The units as settings `get` holds them (by name; a default where unset).
    pub fn from_settings(get: impl Fn(&str) -> Option<f64>) -> Units {
        let d = Units::default();
        let v = |name: &str, dflt: f64| get(name).unwrap_or(dflt);
        Units {
            seq_page: v("seq_page_cost", d.seq_page),
            random_page: v("random_page_cost", d.random_page),
            cpu_tuple: v("cpu_tuple_cost", d.cpu_tuple),
            cpu_index_tuple: v("cpu_index_tuple_cost", d.cpu_index_tuple),
            cpu_operator: v("cpu_operator_cost", d.cpu_operator),
            parallel_tuple: v("parallel_tuple_cost", d.parallel_tuple),
            parallel_setup: v("parallel_setup_cost", d.parallel_setup),
        }
    }
}

/// A node's estimate: cost before its first row and for all of them, its rows and
/// its output columns' widths.
#[derive(Clone, Debug, PartialEq)]
pub struct Est {
    pub startup: f64,
    pub total: f64,
    pub rows: f64,
    pub widths: Vec<f64>,
}

impl Est {
    /// EXPLAIN's text for it (without the leading spaces).
    pub fn text(&self) -> String {
        let width: f64 = self.widths.iter().sum();
        format!(
            "(cost={:.2}..{:.2} rows={:.0} width={:.0})",
            self.startup,
            self.total,
            self.rows.max(1.0).round(),
            width.round()
        )
    }

    fn run(&self) -> f64 {
        self.total - self.startup
    }

    /// A Hash node over this (cost rule 6): everything before its first row.
    pub fn hashed(&self) -> Est {
        Est {
            startup: self.total,
            ..self.clone()
        }
    }

    /// A Materialize node over this: two operators per row kept.
    pub fn materialized(&self, u: &Units) -> Est {
        Est {
            total: self.total + 2.0 * u.cpu_operator * self.rows,
            ..self.clone()
        }
    }

    /// A Sort over this (cost rule 4), with `bound` rows wanted if known.
    pub fn sorted(&self, u: &Units, bound: Option<f64>) -> Est {
        let n = self.rows.max(2.0);
        let cmp = 2.0 * u.cpu_operator;
        let startup = match bound {
            Some(b) if b * 2.0 < n => self.total + cmp * n * (2.0 * b.max(1.0)).log2(),
            _ => self.total + cmp * n * n.log2(),
        };
        Est {
            startup,
            total: startup + u.cpu_operator * self.rows,
            ..self.clone()
        }
    }

    /// An Append of `parts`: their costs and rows summed, the first one's columns.
    pub fn appended(parts: &[Est]) -> Est {
        Est {
            startup: parts.first().map_or(0.0, |p| p.startup),
            total: parts.iter().map(|p| p.total).sum(),
            rows: parts.iter().map(|p| p.rows).sum(),
            widths: parts.first().map(|p| p.widths.clone()).unwrap_or_default(),
        }
    }

    /// A Gather of `workers` over this partial plan (cost rule 3): each worker's
    /// rows, as PostgreSQL counts them (the leader's share left out).
    pub fn gathered(&self, u: &Units, workers: usize) -> Est {
        let rows = self.rows * workers.max(1) as f64;
        Est {
            startup: self.startup + u.parallel_setup,
            total: self.total + u.parallel_setup + u.parallel_tuple * rows,
            rows,
            widths: self.widths.clone(),
        }
    }
}

/// PostgreSQL's parallel divisor: the workers, plus the leader's share.
pub(crate) fn divisor(workers: usize) -> f64 {
    let w = workers as f64;
    w + (1.0 - 0.3 * w).max(0.0)
}

/// One run of an index scan, for cost rule 3 (PostgreSQL's cost_index and
/// btcostestimate): a table of `tuples` rows on `pages` pages, the index
/// condition's selectivity `sel` over `conds` conditions, the index's leading
/// column's squared correlation with the heap, the share of heap pages not all
/// visible (1 unless index-only), and the runs (`loops`) the scan makes.
pub(crate) struct IndexRun {
    pub tuples: f64,
    pub pages: f64,
    pub sel: f64,
    pub conds: f64,
    pub corr2: f64,
    pub unseen: f64,
    pub loops: f64,
}

impl IndexRun {
    /// One run's (startup, index, heap) costs: the descent (log2 of the index's
    /// tuples plus 50 operators per level), the leaf pages and index tuples, and
    /// the heap pages the rows fall on. Pages are Mackert and Lohman's count at
    /// random-page cost, moved towards one random read and the rest sequential by
    /// the correlation; over several runs the pages all runs fetch are counted
    /// once and shared among them (PostgreSQL's index_pages_fetched with a
    /// loop count, the table taken to fit in effective_cache_size).
    pub fn costs(&self, u: &Units, empty: bool) -> (f64, f64, f64) {
        let (tuples, pages, loops) = (self.tuples, self.pages, self.loops.max(1.0));
        let height = match tuples {
            _ if empty => 0.0,
            t if t < 300.0 => 0.0,
            t if t < 90_000.0 => 1.0,
            t if t < 27_000_000.0 => 2.0,
            _ => 3.0,
        };
        let startup =
            tuples.max(2.0).log2().ceil() * u.cpu_operator + (height + 1.0) * 50.0 * u.cpu_operator;
        let rows = (tuples * self.sel).max(1.0);
        let index_pages = (tuples / 300.0).max(1.0);
        let leaf_pages = (self.sel * index_pages).ceil();
        let leaf_io = match loops > 1.0 {
            true => pages_fetched(leaf_pages, index_pages, loops) * u.random_page,
            false => leaf_pages * u.random_page,
        };
        let index = leaf_io + rows * (u.cpu_index_tuple + self.conds * u.cpu_operator);
        // One run's pages are whole; several runs share theirs (PostgreSQL divides
        // the pages all runs fetch by the loop count).
        let heap_pages = pages_fetched(rows, pages, loops) * self.unseen;
        let max_io = match loops > 1.0 {
            true => heap_pages,
            false => heap_pages.ceil(),
        } * u.random_page;
        let least = ((self.sel * pages).ceil() * self.unseen).ceil();
        let min_io = match least {
            _ if loops > 1.0 => pages_fetched(least, pages, loops) * u.random_page,
            p if p > 0.0 => u.random_page + (p - 1.0) * u.seq_page,
            _ => 0.0,
        };
        (startup, index, max_io + self.corr2 * (min_io - max_io))
    }
}

/// The pages of a relation of `pages` pages that `n` rows read at random fetch in
/// one of `loops` runs: Mackert and Lohman's min(2TN / (2T + N), T) over all runs'
/// rows, shared among the runs.
fn pages_fetched(n: f64, pages: f64, loops: f64) -> f64 {
    let all = n * loops;
    if all <= 0.0 || pages <= 0.0 {
        return 0.0;
    }
    (2.0 * pages * all / (2.0 * pages + all)).min(pages).ceil() / loops
}

/// The estimates of one EXPLAIN's plan nodes.
pub struct Costs<'r> {
    rels: &'r Relations<'r>,
    u: Units,
    memo: HashMap<usize, Est>,
    /// The plans of the subqueries costed, kept while the memo is: a node is
    /// known by its address (cost rule 7).
    subs: Vec<(usize, Rc<Plan>)>,
    /// A recursive union's first part's rows, by work table (PostgreSQL takes
    /// the work table as ten times them).
    work: HashMap<usize, f64>,
    /// How many times the node being costed runs (an index scan inside a nested
    /// loop's inner side runs once per outer row; cost rule 3).
    loops: f64,
}

impl<'r> Costs<'r> {
    /// The session's cost units (cost rule 1).
    pub fn units(&self) -> Units {
        self.u
    }

    pub fn new(rels: &'r Relations<'r>) -> Costs<'r> {
        Costs {
            rels,
            u: rels.units(),
            memo: HashMap::new(),
            subs: Vec::new(),
            work: HashMap::new(),
            loops: 1.0,
        }
    }

    fn sizes(&self) -> Sizes<'r> {
        Sizes::new(self.rels)
    }

    /// Node `p`'s estimate.
    pub fn of(&mut self, p: &Plan) -> Est {
        let key = p as *const Plan as usize;
        if let Some(e) = self.memo.get(&key) {
            return e.clone();
        }
        let e = self.compute(p);
        self.memo.insert(key, e.clone());
        e
    }

    fn compute(&mut self, p: &Plan) -> Est {
        let u = self.u;
        match p {
            Plan::Result => leaf(u.cpu_tuple, 1.0, Vec::new()),
            Plan::SeqScan {
                table,
                filter,
                cols,
                parallel,
                ..
            } => self.seq_scan(table, filter.as_ref(), cols.as_deref(), *parallel),
            Plan::IndexScan {
                table,
                path,
                filter,
                cols,
                only,
                ..
            } => self.index_scan(table, path, filter.as_ref(), (cols.as_deref(), *only)),
            Plan::ViewScan { filter, .. } => {
                let rows = 1000.0 * filter.as_ref().map_or(1.0, default_sel);
                let ops = filter.as_ref().map_or(0.0, ops);
                leaf(
                    1000.0 * (u.cpu_tuple + ops * u.cpu_operator),
                    rows,
                    vec![32.0],
                )
            }
            Plan::Series {
                start,
                stop,
                step,
                ty,
                ..
            } => {
                let rows = series_rows(start, stop, step.as_ref());
                leaf(rows * u.cpu_tuple, rows, vec![type_width(*ty)])
            }
            Plan::Values(rows) => {
                let n = rows.len() as f64;
                let first = rows.first().map(Vec::as_slice).unwrap_or_default();
                let widths = first.iter().map(|e| expr_width(e, &[], &[])).collect();
                let per = u.cpu_operator * first.len() as f64 + u.cpu_tuple;
                leaf(n * per, n, widths)
            }
            Plan::Filter { input, cond } => {
                let i = self.of(input);
                let (once, per) = self.qual(cond);
                Est {
                    startup: i.startup + once,
                    total: i.total + once + i.rows * per,
                    rows: (i.rows * default_sel(cond)).max(1.0),
                    ..i
                }
            }
            Plan::Project { input, exprs } => {
                let i = self.of(input);
                let (mut once, mut per) = (0.0, 0.0);
                for e in exprs {
                    let (o, p) = self.qual(e);
                    once += o;
                    per += p;
                }
                Est {
                    startup: i.startup + once,
                    total: i.total + once + per * i.rows,
                    rows: i.rows,
                    widths: exprs
                        .iter()
                        .map(|e| expr_width(e, &i.widths, &[]))
                        .collect(),
                }
            }
            _ => self.compute_joins(p),
        }
    }

    fn compute_joins(&mut self, p: &Plan) -> Est {
        let u = self.u;
        match p {
            Plan::Lateral {
                kind,
                outer,
                inner,
                cond,
                ..
            }
            | Plan::NestLoop {
                kind,
                outer,
                inner,
                cond,
                ..
            } => {
                let o = self.of(outer);
                let rerun = matches!(p, Plan::Lateral { .. });
                // Cost rule 3: a rerun inner side's index scans run once per outer
                // row, sharing the pages they fetch.
                let loops = self.loops;
                if rerun {
                    self.loops = loops * o.rows.max(1.0);
                }
                let i = self.of(inner);
                self.loops = loops;
                self.nest_loop(*kind, (&o, &i), cond.as_ref(), rerun)
            }
            Plan::HashJoin {
                kind,
                outer,
                inner,
                outer_keys,
                inner_keys,
                residual,
                ..
            }
            | Plan::MergeJoin {
                kind,
                outer,
                inner,
                outer_keys,
                inner_keys,
                residual,
                ..
            } => {
                let (o, i) = (self.of(outer), self.of(inner));
                let keyed = (outer_keys.as_slice(), inner_keys.as_slice());
                let (rows, sel) = self.keyed_rows(*kind, (outer, inner), (&o, &i), keyed, residual);
                let keys = outer_keys.len() as f64;
                let check = residual.as_ref().map_or(0.0, ops) * u.cpu_operator;
                let (startup, total) = if matches!(p, Plan::HashJoin { .. }) {
                    let check = check * o.rows * i.rows * sel;
                    self.hash_join(*kind, (inner, inner_keys), (&o, &i), (keys, rows, check))
                } else {
                    merge_join(u, (&o, &i), (keys, rows, check * rows))
                };
                Est {
                    startup,
                    total,
                    rows,
                    widths: joined(*kind, &o, &i),
                }
            }
            _ => self.compute_rest(p),
        }
    }

    /// A keyed join's rows (cost rule 2) and its keys' selectivity.
    fn keyed_rows(
        &mut self,
        kind: JoinKind,
        (outer, inner): (&Plan, &Plan),
        (o, i): (&Est, &Est),
        (okeys, ikeys): (&[Expr], &[Expr]),
        residual: &Option<Expr>,
    ) -> (f64, f64) {
        let mut sel = 1.0;
        let mut semi = 1.0;
        for (a, b) in okeys.iter().zip(ikeys) {
            let na = self.distinct(outer, a, o.rows);
            let nb = self.distinct(inner, b, i.rows);
            sel /= na.max(nb).max(1.0);
            semi *= (nb / na.max(1.0)).min(1.0);
        }
        let rest = residual.as_ref().map_or(1.0, default_sel);
        (
            join_rows(kind, (o.rows, i.rows), sel * rest, semi * rest),
            sel,
        )
    }

    fn compute_rest(&mut self, p: &Plan) -> Est {
        let u = self.u;
        match p {
            Plan::Agg {
                input,
                keys,
                aggs,
                sorted,
                workers,
            } => {
                let i = self.of(input);
                if *workers > 0 {
                    let partial = self.aggregate(input, &i, (keys, aggs), *sorted);
                    let g = partial.gathered(&u, *workers);
                    return finalized(&u, &g, partial.rows, (keys.len(), aggs.len()), *sorted);
                }
                self.aggregate(input, &i, (keys, aggs), *sorted)
            }
            Plan::Sort { input, bound, .. } => {
                let b = bound.as_ref().and_then(|b| {
                    let limit = b.1.as_ref().and_then(count)?;
                    Some(limit + b.0.as_ref().and_then(count).unwrap_or(0.0))
                });
                self.of(input).sorted(&u, b)
            }
            Plan::Unique { input, cols } => {
                let i = self.of(input);
                let all: Vec<usize> = (0..i.widths.len()).collect();
                let cols = cols.as_deref().unwrap_or(&all);
                let groups = self.groups(input, cols.iter().map(|c| Expr::Col(*c)), i.rows);
                let per = u.cpu_operator * cols.len() as f64 * i.rows;
                match matches!(**input, Plan::Sort { .. }) {
                    true => Est {
                        total: i.total + per,
                        rows: groups,
                        ..i
                    },
                    false => Est {
                        startup: i.total + per,
                        total: i.total + per + groups * u.cpu_tuple,
                        rows: groups,
                        widths: i.widths,
                    },
                }
            }
            Plan::Limit {
                input,
                offset,
                limit,
            } => limited(self.of(input), offset.as_ref(), limit.as_ref()),
            Plan::Gather { input, workers } => self.of(input).gathered(&u, *workers),
            Plan::Window { input, funcs } => {
                let i = self.of(input);
                let keys = funcs
                    .first()
                    .map_or(0, |w| w.partition.len() + w.order.len());
                let below = match keys {
                    0 => i,
                    _ => i.sorted(&u, None),
                };
                let per = u.cpu_operator * (funcs.len() + keys) as f64 + u.cpu_tuple;
                let mut widths = below.widths.clone();
                widths.extend(funcs.iter().map(|f| type_width(f.ty)));
                Est {
                    total: below.total + per * below.rows,
                    widths,
                    ..below
                }
            }
            _ => self.compute_sets(p),
        }
    }

    fn compute_sets(&mut self, p: &Plan) -> Est {
        let u = self.u;
        match p {
            Plan::Append(parts) => {
                let parts: Vec<Est> = parts.iter().map(|x| self.of(x)).collect();
                Est::appended(&parts)
            }
            Plan::SetOp {
                op,
                all,
                left,
                right,
            } => {
                let (l, r) = (self.of(left), self.of(right));
                set_op(&u, *op, *all, &l, &r)
            }
            Plan::RecursiveUnion { id, init, step, .. } => {
                let i = self.of(init);
                self.work.insert(*id, i.rows);
                let s = self.of(step);
                Est {
                    startup: i.startup,
                    total: i.total + 10.0 * s.total,
                    rows: i.rows + 10.0 * s.rows,
                    widths: i.widths,
                }
            }
            Plan::WorkTableScan { id } => {
                let rows = 10.0 * self.work.get(id).copied().unwrap_or(100.0);
                leaf(rows * u.cpu_tuple, rows, Vec::new())
            }
            Plan::CteScan { plan, .. } => {
                let c = self.of(plan);
                leaf(c.rows * u.cpu_tuple, c.rows, c.widths)
            }
            _ => unreachable!("every plan node is costed"),
        }
    }
}

/// A parallel aggregate's Finalize of `groups` groups over the Gather `g` of its
/// workers' groups.
fn finalized(u: &Units, g: &Est, groups: f64, (keys, aggs): (usize, usize), sorted: bool) -> Est {
    let work = g.rows * u.cpu_operator * (keys + aggs) as f64;
    let (startup, total) = match (keys == 0, sorted) {
        (false, true) => (g.startup, g.total + work + groups * u.cpu_tuple),
        _ => (g.total + work, g.total + work + groups * u.cpu_tuple),
    };
    Est {
        startup,
        total,
        rows: groups,
        widths: g.widths.clone(),
    }
}

/// A node with no input: its run cost, rows and widths.
fn leaf(total: f64, rows: f64, widths: Vec<f64>) -> Est {
    Est {
        startup: 0.0,
        total,
        rows: rows.max(1.0),
        widths,
    }
}

/// The widths of a join's rows: both sides', the outer's alone for a semi or anti
/// join.
fn joined(kind: JoinKind, o: &Est, i: &Est) -> Vec<f64> {
    let mut w = o.widths.clone();
    if !matches!(kind, JoinKind::Semi | JoinKind::Anti) {
        w.extend(&i.widths);
    }
    w
}

/// A join's rows (PostgreSQL's calc_joinrel_size_estimate): `sel` of the pairs
/// for an inner join, at least each preserved side's rows for an outer one,
/// `semi` (the fraction of outer rows with a match) for a semi or anti join.
fn join_rows(kind: JoinKind, (o, i): (f64, f64), sel: f64, semi: f64) -> f64 {
    let pairs = o * i * sel;
    let rows = match kind {
        JoinKind::Left => pairs.max(o),
        JoinKind::Right => pairs.max(i),
        JoinKind::Full => pairs.max(o).max(i),
        JoinKind::Semi => o * semi,
        JoinKind::Anti => o * (1.0 - semi),
        _ => pairs,
    };
    rows.max(1.0)
}

/// Cost rule 4's Limit: PostgreSQL's adjust_limit_rows_costs.
fn limited(i: Est, offset: Option<&Expr>, limit: Option<&Expr>) -> Est {
    let mut e = i.clone();
    let share = |n: Option<f64>| n.unwrap_or((i.rows * 0.1).max(1.0)).min(e.rows);
    if let Some(off) = offset {
        let n = share(count(off));
        e.startup += i.run() * n / i.rows.max(1.0);
        e.rows = (e.rows - n).max(1.0);
    }
    if let Some(lim) = limit {
        let n = count(lim).unwrap_or((i.rows * 0.1).max(1.0)).min(e.rows);
        e.total = e.startup + i.run() * n / i.rows.max(1.0);
        e.rows = n.max(1.0);
    }
    e
}

/// A LIMIT or OFFSET count known when planned.
fn count(e: &Expr) -> Option<f64> {
    match e {
        Expr::Const(Datum::Int8(n)) => Some(*n as f64),
        Expr::Const(Datum::Int4(n)) => Some(f64::from(*n)),
        Expr::Cast(x, _) => count(x),
        _ => None,
    }
}

/// A set operation's rows (PostgreSQL's: a UNION's are both sides' without
/// duplicates assumed, an INTERSECT's the smaller side's, an EXCEPT's the left's).
fn set_op(u: &Units, op: SetOp, all: bool, l: &Est, r: &Est) -> Est {
    let append = Est::appended(&[l.clone(), r.clone()]);
    let per = u.cpu_operator * append.widths.len() as f64 * append.rows;
    let rows = match op {
        SetOp::Union => append.rows,
        SetOp::Intersect => l.rows.min(r.rows),
        SetOp::Except => l.rows,
    };
    if all && op == SetOp::Union {
        return append;
    }
    Est {
        startup: append.total + per,
        total: append.total + per + rows * u.cpu_tuple,
        rows,
        widths: append.widths,
    }
}

/// generate_series's rows: exact for constant integer bounds (PostgreSQL's
/// support function), else 1000.
fn series_rows(start: &Expr, stop: &Expr, step: Option<&Expr>) -> f64 {
    let (Some(a), Some(b)) = (count(start), count(stop)) else {
        return 1000.0;
    };
    let s = match step {
        None => 1.0,
        Some(s) => match count(s) {
            Some(s) if s != 0.0 => s,
            _ => return 1000.0,
        },
    };
    ((b - a) / s).floor().max(-1.0) + 1.0
}

/// The operators and functions `e` calls per evaluation (cost rule 4's unit; a
/// subquery's own plan is costed by [`Costs::qual`]).
pub(crate) fn ops(e: &Expr) -> f64 {
    let mut n = 0.0;
    let mut todo = vec![e];
    while let Some(x) = todo.pop() {
        n += match x {
            Expr::Bin(_, BinOp::And | BinOp::Or, _) | Expr::Bool(..) | Expr::Not(_) => 0.0,
            Expr::Bin(..) | Expr::Neg(_) | Expr::IsNull(..) | Expr::Cast(..) => 1.0,
            Expr::Call(..) | Expr::Special(_) | Expr::SubLink(_) => 1.0,
            Expr::InList(_, items, _) => 0.5 * items.len() as f64,
            _ => 0.0,
        };
        x.children(&mut todo);
    }
    n
}

/// A type's average width (cost rule 5), PostgreSQL's for a variable-width type
/// it knows nothing of (32).
fn type_width(t: SqlType) -> f64 {
    match t {
        SqlType::Bool => 1.0,
        SqlType::Int2 => 2.0,
        SqlType::Int4 | SqlType::Float4 | SqlType::Date => 4.0,
        SqlType::Int8
        | SqlType::Float8
        | SqlType::Time
        | SqlType::Timestamp
        | SqlType::TimestampTz
        | SqlType::Lsn => 8.0,
        SqlType::Interval | SqlType::Uuid => 16.0,
        _ => 32.0,
    }
}

fn datum_width(d: &Datum) -> f64 {
    match d {
        Datum::Null => 0.0,
        Datum::Bool(_) => 1.0,
        Datum::Int2(_) => 2.0,
        Datum::Int4(_) | Datum::Date(_) | Datum::Float4(_) => 4.0,
        // A constant's type's width, as PostgreSQL's get_typavgwidth.
        Datum::Text(_) | Datum::Bytea(_) | Datum::Numeric(_) => 32.0,
        Datum::Interval(_) | Datum::Uuid(_) => 16.0,
        _ => 8.0,
    }
}

/// An expression's width over a row of `widths`, with `aggs` the widths of the
/// aggregates it may name (cost rule 5).
fn expr_width(e: &Expr, widths: &[f64], aggs: &[f64]) -> f64 {
    let w = |x: &Expr| expr_width(x, widths, aggs);
    match e {
        Expr::Const(d) => datum_width(d),
        Expr::Col(c) => widths.get(*c).copied().unwrap_or(8.0),
        Expr::Agg(n) => aggs.get(*n).copied().unwrap_or(8.0),
        Expr::Cast(_, t) => type_width(*t),
        Expr::Fit(x, _) | Expr::Neg(x) => w(x),
        Expr::Bin(a, BinOp::Concat, b) => w(a) + w(b),
        Expr::Bin(a, BinOp::Add | BinOp::Sub | BinOp::Mul | BinOp::Div | BinOp::Mod, b) => {
            w(a).max(w(b))
        }
        Expr::Bin(..) | Expr::Bool(..) | Expr::Not(_) | Expr::IsNull(..) | Expr::InList(..) => 1.0,
        Expr::Call(_, args) => args.iter().map(w).fold(4.0, f64::max),
        _ => 8.0,
    }
}

/// An aggregate's width: its argument's for min and max, 8 for a count, 32 for
/// what makes text or numeric.
fn agg_width(a: &Agg, widths: &[f64]) -> f64 {
    match a.func {
        AggFunc::CountStar | AggFunc::Count => 8.0,
        AggFunc::Min | AggFunc::Max => a.arg.as_ref().map_or(8.0, |x| expr_width(x, widths, &[])),
        _ => type_width(a.ty),
    }
}

impl Costs<'_> {
    /// What evaluating `e` per row costs (cost rule 7): once before the first row,
    /// and per row.
    fn qual(&mut self, e: &Expr) -> (f64, f64) {
        let u = self.u;
        let (mut once, mut per) = (0.0, ops(e) * u.cpu_operator);
        let mut todo = vec![e];
        while let Some(x) = todo.pop() {
            if let Expr::SubLink(l) = x {
                let total = self.sub(l).total;
                match l.correlated {
                    true => per += total,
                    false => once += total,
                }
            }
            x.children(&mut todo);
        }
        (once, per)
    }

    /// [`Costs::qual`] of an optional expression.
    fn qual_of(&mut self, e: Option<&Expr>) -> (f64, f64) {
        e.map_or((0.0, 0.0), |e| self.qual(e))
    }

    /// The estimate of subquery `l`'s plan (planned once, cost rule 7).
    fn sub(&mut self, l: &crate::subquery::SubLink) -> Est {
        let key = l as *const crate::subquery::SubLink as usize;
        let found = self
            .subs
            .iter()
            .find(|(k, _)| *k == key)
            .map(|(_, p)| p.clone());
        let plan = match found {
            Some(p) => p,
            None => match crate::planner::plan(&l.query, self.rels) {
                Ok(p) => {
                    let p = Rc::new(p);
                    self.subs.push((key, p.clone()));
                    p
                }
                Err(_) => return leaf(0.0, 1.0, vec![8.0]),
            },
        };
        self.of(&plan)
    }

    /// Cost rule 4's aggregation of `i` (the estimate of `input`).
    fn aggregate(
        &mut self,
        input: &Plan,
        i: &Est,
        (keys, aggs): (&[Expr], &[Agg]),
        sorted: bool,
    ) -> Est {
        let u = self.u;
        let groups = match keys.is_empty() {
            true => 1.0,
            false => self.groups(input, keys.iter().cloned(), i.rows),
        };
        let agg_widths: Vec<f64> = aggs.iter().map(|a| agg_width(a, &i.widths)).collect();
        let mut widths: Vec<f64> = keys.iter().map(|k| expr_width(k, &i.widths, &[])).collect();
        widths.extend(&agg_widths);
        let arg_ops: f64 = aggs.iter().flat_map(|a| a.row_exprs()).map(ops).sum();
        let per_row = u.cpu_operator * (keys.len() + aggs.len()) as f64 + arg_ops * u.cpu_operator;
        let work = i.rows * per_row;
        let (startup, total) = match (keys.is_empty(), sorted) {
            (true, _) => (i.total + work, i.total + work + u.cpu_tuple),
            (false, true) => (i.startup, i.total + work + groups * u.cpu_tuple),
            (false, false) => (i.total + work, i.total + work + groups * u.cpu_tuple),
        };
        Est {
            startup,
            total,
            rows: groups,
            widths,
        }
    }

    /// A parallel aggregate's Partial node (explain rule 6) over `input`.
    pub fn partial(&mut self, input: &Plan, (keys, aggs): (&[Expr], &[Agg]), sorted: bool) -> Est {
        let i = self.of(input);
        self.aggregate(input, &i, (keys, aggs), sorted)
    }

    /// The groups `keys` (over `input`'s row) make of `rows` rows (cost rule 2).
    fn groups(&mut self, input: &Plan, keys: impl Iterator<Item = Expr>, rows: f64) -> f64 {
        let mut n = 1.0;
        for k in keys {
            n *= self.distinct(input, &k, rows);
            if n >= rows {
                break;
            }
        }
        n.min(rows).max(1.0)
    }

    /// The distinct values of `e` over `p`'s rows (`rows` of them, cost rule 2).
    fn distinct(&mut self, p: &Plan, e: &Expr, rows: f64) -> f64 {
        let traced = match strip(e) {
            Expr::Col(c) => self.traced(p, *c),
            Expr::Const(_) => Some(1.0),
            _ => None,
        };
        traced.unwrap_or(DEFAULT_NUM_DISTINCT).min(rows).max(1.0)
    }

    /// Cost rule 4: a hash join's (startup, total) — the inner side hashed before
    /// the first row; per outer row its keys and half the rows of a bucket
    /// compared (not for semi and anti joins); per joined row a tuple; `check` the
    /// residual's cost.
    fn hash_join(
        &mut self,
        kind: JoinKind,
        (inner, inner_keys): (&Plan, &[Expr]),
        (o, i): (&Est, &Est),
        (keys, rows, check): (f64, f64, f64),
    ) -> (f64, f64) {
        let u = self.u;
        let startup = o.startup + i.total + i.rows * (u.cpu_operator * keys + u.cpu_tuple);
        let mut probe = o.rows * u.cpu_operator * keys;
        if !matches!(kind, JoinKind::Semi | JoinKind::Anti) {
            let per_bucket = (i.rows * self.bucket_frac(inner, inner_keys, i.rows))
                .round()
                .max(1.0);
            probe += u.cpu_operator * keys * o.rows * per_bucket * 0.5;
        }
        (
            startup,
            startup + o.run() + probe + check + rows * u.cpu_tuple,
        )
    }

    /// The fraction of a hash table's rows in one bucket, the least over the keys
    /// (PostgreSQL's estimate_hash_bucket_size): 0.1 where a key's distinct values
    /// are unknown, else one over its distinct values or over the buckets (a
    /// power of two, at least 1024, for `rows`), whichever is more.
    fn bucket_frac(&mut self, p: &Plan, keys: &[Expr], rows: f64) -> f64 {
        let buckets = rows.max(1024.0).log2().ceil().exp2();
        let mut frac: f64 = 1.0;
        for k in keys {
            let nd = match strip(k) {
                Expr::Col(c) => self.traced(p, *c),
                _ => None,
            };
            frac = frac.min(match nd {
                None => 0.1,
                Some(nd) if nd.min(rows) > buckets => 1.0 / buckets,
                Some(nd) => 1.0 / nd.min(rows).max(1.0),
            });
        }
        frac
    }

    /// Column `c` of `p`'s rows traced to a table's column: its distinct values.
    fn traced(&mut self, p: &Plan, c: usize) -> Option<f64> {
        match p {
            Plan::SeqScan { table, .. } | Plan::IndexScan { table, .. } => {
                self.sizes().column_distinct(table, c)
            }
            Plan::Filter { input, .. }
            | Plan::Sort { input, .. }
            | Plan::Limit { input, .. }
            | Plan::Unique { input, .. }
            | Plan::Gather { input, .. }
            | Plan::Window { input, .. } => self.traced(input, c),
            Plan::Project { input, exprs } => match strip(exprs.get(c)?) {
                Expr::Col(k) => self.traced(input, *k),
                _ => None,
            },
            Plan::Agg { input, keys, .. } => match strip(keys.get(c)?) {
                Expr::Col(k) => self.traced(input, *k),
                _ => None,
            },
            Plan::NestLoop {
                outer,
                inner,
                widths,
                ..
            }
            | Plan::HashJoin {
                outer,
                inner,
                widths,
                ..
            }
            | Plan::MergeJoin {
                outer,
                inner,
                widths,
                ..
            }
            | Plan::Lateral {
                outer,
                inner,
                widths,
                ..
            } => match c < widths.0 {
                true => self.traced(outer, c),
                false => self.traced(inner, c - widths.0),
            },
            _ => None,
        }
    }

    fn seq_scan(
        &mut self,
        table: &str,
        filter: Option<&Expr>,
        cols: Option<&[bool]>,
        parallel: bool,
    ) -> Est {
        let u = self.u;
        let sizes = self.sizes();
        let (tuples, pages, rows) = sizes.scan(table, filter).unwrap_or((1000.0, 10.0, 1000.0));
        let (once, per) = self.qual_of(filter);
        let per = u.cpu_tuple + per;
        let d = match parallel {
            true => divisor(self.rels.switches().workers),
            false => 1.0,
        };
        Est {
            startup: once,
            total: once + pages * u.seq_page + tuples * per / d,
            rows: (rows / d).max(1.0),
            widths: self.table_widths(table, cols),
        }
    }

    /// The widths of the table's columns the scan reads (all when `cols` is None).
    fn table_widths(&self, table: &str, cols: Option<&[bool]>) -> Vec<f64> {
        self.sizes().column_widths(table, cols).unwrap_or_default()
    }

    /// The share of `table`'s pages all visible, as VACUUM or ANALYZE last
    /// counted them against its pages now (PostgreSQL's allvisfrac).
    fn all_visible_frac(&self, table: &str) -> f64 {
        let now = f64::from(self.rels.pages(table));
        match self.rels.stats(table) {
            Some(s) if now > 0.0 => (f64::from(s.relallvisible) / now).min(1.0),
            _ => 0.0,
        }
    }

    /// Cost rule 3's index scan; the tree's height as its tuples make it (none
    /// for a table with no pages yet).
    fn index_scan(
        &mut self,
        table: &str,
        path: &crate::plan::IndexPath,
        filter: Option<&Expr>,
        (cols, only): (Option<&[bool]>, bool),
    ) -> Est {
        let u = self.u;
        let sizes = self.sizes();
        let (tuples, pages, rows) = sizes.scan(table, filter).unwrap_or((1000.0, 10.0, 1000.0));
        let index_sel = sizes
            .scan(table, path.covered())
            .map_or(1.0, |(t, _, r)| r / t.max(1.0));
        let index_rows = (tuples * index_sel).max(1.0);
        let run = IndexRun {
            tuples,
            pages,
            sel: index_sel,
            conds: path.conds().len() as f64,
            corr2: sizes.index_correlation(table, &path.index).powi(2),
            // An index-only scan reads only the heap pages not all visible.
            unseen: match only {
                true => 1.0 - self.all_visible_frac(table),
                false => 1.0,
            },
            loops: self.loops,
        };
        let (startup, index, heap) = run.costs(&u, self.rels.pages(table) == 0);
        let (once, rest) = match filter {
            Some(f) => {
                let mut q = (0.0, 0.0);
                for c in path.residual(f) {
                    let (o, p) = self.qual(c);
                    q = (q.0 + o, q.1 + p);
                }
                q
            }
            None => (0.0, 0.0),
        };
        let startup = startup + once;
        Est {
            startup,
            total: startup + index + heap + index_rows * (u.cpu_tuple + rest),
            rows,
            widths: self.table_widths(table, cols),
        }
    }

    /// Cost rule 4's nested loop of `o` and `i`; `rerun`: the inner side runs again
    /// per outer row (it reads the outer row), else its rows are re-read.
    fn nest_loop(
        &mut self,
        kind: JoinKind,
        (o, i): (&Est, &Est),
        cond: Option<&Expr>,
        rerun: bool,
    ) -> Est {
        let u = self.u;
        let (once, per_pair) = self.qual_of(cond);
        let sel = cond.map_or(1.0, default_sel);
        let (per_outer, inner_rows) = match rerun {
            true => (i.total, i.rows),
            false => (u.cpu_operator * i.rows, i.rows),
        };
        let semi = (sel * inner_rows).min(1.0);
        let rows = join_rows(kind, (o.rows, inner_rows), sel, semi);
        let compare = o.rows * inner_rows * (u.cpu_tuple + per_pair);
        let startup = o.startup + i.startup + once;
        Est {
            startup,
            total: once + o.total + i.total + (o.rows - 1.0).max(0.0) * per_outer + compare,
            rows,
            widths: joined(kind, o, i),
        }
    }
}

/// `e` without the casts around it.
fn strip(e: &Expr) -> &Expr {
    match e {
        Expr::Cast(x, _) | Expr::Fit(x, _) => strip(x),
        Expr::Call(crate::bind::Func::BpcharText, a) if a.len() == 1 => strip(&a[0]),
        _ => e,
    }
}

/// Cost rule 4: a merge join's (startup, total) — both sorted sides read once, the
/// inner's rows again for each outer row sharing their key (PostgreSQL's rescan
/// ratio: the joined rows past the inner's own), a comparison per row read and
/// key, a tuple per joined row; `check` the residual's cost.
fn merge_join(u: Units, (o, i): (&Est, &Est), (keys, rows, check): (f64, f64, f64)) -> (f64, f64) {
    let inner_rows = i.rows.max(1.0);
    let rescan = 1.0 + (rows - inner_rows).max(0.0) / inner_rows;
    let inner_run = (i.run() * rescan).min(i.run() + u.cpu_operator * inner_rows * rescan);
    let compare = u.cpu_operator * keys * (o.rows + inner_rows * rescan);
    let startup = o.startup + i.startup;
    (
        startup,
        o.total + i.startup + inner_run + compare + check + rows * u.cpu_tuple,
    )
}

#[cfg(test)]
mod tests {
    use super::{IndexRun, Units};

    fn run(loops: f64) -> f64 {
        let r = IndexRun {
            tuples: 1_500_000.0,
            pages: 25_000.0,
            sel: 1.0 / 1_500_000.0,
            conds: 1.0,
            corr2: 0.0,
            unseen: 1.0,
            loops,
        };
        let (startup, index, heap) = r.costs(&Units::default(), false);
        startup + index + heap
    }

    /// Cost rule 3: one probe alone reads an index leaf and a heap page at random
    /// (4.0 each, the descent besides); 300,000 probes of a 25,000-page table
    /// fetch its pages once between them, so each costs a fraction of a page
    /// (PostgreSQL's index_pages_fetched with a loop count: a nested loop's
    /// parameterized scan of `orders_pkey` from TPC-H's Q9).
    #[test]
    fn probes_run_many_times_share_the_pages_they_fetch() {
        let one = run(1.0);
        assert!((8.0..9.0).contains(&one), "{one}");
        let many = run(300_000.0);
        assert!(many < 1.0, "{many}");
        // All runs together read no more pages than there are: the
        // index's 5,000 leaf pages and its table's 25,000 pages, at 4.0 each.
        let pages_all = (many - other_than_pages()) * 300_000.0;
        assert!(pages_all <= 4.0 * 30_000.0 + 10.0, "{pages_all}");
    }

    /// A run's costs other than its pages: the descent and one index tuple.
    fn other_than_pages() -> f64 {
        let u = Units::default();
        let descent = (1_500_000f64).log2().ceil() * u.cpu_operator + 3.0 * 50.0 * u.cpu_operator;
        descent + u.cpu_index_tuple + u.cpu_operator
    }
}
