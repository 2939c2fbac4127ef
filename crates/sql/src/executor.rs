//! Execution: a physical plan ([`crate::planner::Plan`]) run as a tree of pull
//! operators, one per plan node; the root's rows go to the caller as they come.
//!
//! Entry points: [`run`] (a plan to completion, each row to a consumer that may
//! stop it), [`Ctx`] (what operators share: the statement's snapshot, the
//! transaction or engine it reads through, parameters, the interrupt check).
//!
//! Rules (cited as "executor rule N"):
//! 1. One snapshot per statement: every scan of the plan reads through [`Ctx`]'s,
//!    so a self-join's two scans see the same rows (engine `cursor` rules).
//! 2. Operators pull: `next` gives one row or None at the end. Scans hold one
//!    batch of the engine's cursor; Filter, Project, Limit, Append and the probe
//!    side of joins stream; Sort, Agg, the build side of joins, Unique's seen keys
//!    and the sides of INTERSECT / EXCEPT hold what they must.
//! 3. Sort holds at most `work_mem` and writes sorted runs to temporary files past
//!    it (`sort` and `spill` rules); hash aggregation holds at most PostgreSQL's
//!    hash_mem, 2 × `work_mem`, and writes the rows of groups that do not fit to
//!    partition files, aggregated after the input ends ([`AggOp`]); a hash join
//!    whose inner side passes hash_mem partitions both sides to files and joins
//!    them pair by pair ([`GraceJoin`]). Every other operator that holds rows (a
//!    nested loop's inner side, DISTINCT, the set operations, recursive queries,
//!    windows, a subquery's values) holds at most hash_mem ([`Meter`]) and fails
//!    with 53200 past it (spilling them is an open item of issue 28), so the
//!    server's memory stays bounded.
//! 4. The interrupt check (cancel, statement_timeout, a client gone) runs before each
//!    scan page and every 1024 rows a held input gives.
//! 5. Equality of join keys, group keys, DISTINCT and set operations is the values'
//!    equality with NULL equal to NULL (grouping), except that a join key with a
//!    NULL matches nothing (`=` is never true of NULL).
//! 6. A sequential scan's filter is tested in two steps ([`Early`]): its leading
//!    conjuncts over the first one's columns on the row with only those decoded,
//!    the rest once the other columns are (engine cursor rule 9).
//! 7. A scan through its index with its projection fused decodes only the columns
//!    the projection keeps and its residual conjuncts read
//!    ([`read_through_index`]): the range enforces the other conjuncts.
//! 8. A top-N sort (sort rule 2) pulls rows until its heap holds the best n, then
//!    is lent the rest of its input and copies only the rows that beat the worst
//!    one held.
//! 9. A hash join whose unmatched outer rows give nothing (inner, semi, right)
//!    hands a sequential scan on its outer side a [`Probe`]: the scan decodes a
//!    row's key columns first (with its filter's early ones, engine cursor rule
//!    9) and drops the row there if its key is not in the built table, before
//!    decoding or copying the rest, as PostgreSQL's lazy tuple deforming reads
//!    a row's other columns only for the rows its join emits. EXPLAIN ANALYZE
//!    counts the dropped rows as the scan's.
//! 10. A LIMIT tells its input, before the first row, how many rows it will take
//!     at most ([`Node::bound`], PostgreSQL's ExecSetTupleBound), through
//!     projections; an index scan's first batch then reads no more entries than
//!     that (engine cursor rule 7): `LIMIT 1` (min/max, ordered rule 2) fetches
//!     one heap tuple, not eight.

use crate::aggregate::AggState;
use crate::analyze::{JoinKind, SetOp, SortSpec};
use crate::bind::{self, Agg, Env, Expr, Row};
use crate::plan::IndexPath;
use crate::planner::{Plan, Relations};
use crate::subquery::{SubKind, SubLink, SubRunner};
use crate::{Datum, SqlError, SqlResult, SqlType};
use std::cell::RefCell;
use std::collections::{HashMap, HashSet};
use std::rc::Rc;
use strata_engine::{Engine, IndexCursor, SeqCursor, Snapshot, Txn};

pub mod instrument;
mod keymap;
mod merge;
mod sharedhash;
mod workers;

/// A result row.
pub type Tuple = Vec<Datum>;

/// What a statement's operators share (executor rule 1).
pub struct Ctx<'a> {
    pub engine: &'a Engine,
    /// The open transaction, if the session has one: scans see its own writes.
    pub txn: Option<&'a Txn<'a>>,
    pub snap: &'a Snapshot<'a>,
    /// Table entries, for planning subqueries.
    pub rels: &'a Relations<'a>,
    /// Subqueries' plans and uncorrelated subqueries' results, for the statement.
    pub subs: &'a SubCache,
    /// The rows of the enclosing queries, outermost first (subquery rule 1).
    pub outer: Vec<Tuple>,
    pub db: &'a str,
    pub params: &'a [Datum],
    pub env: &'a dyn Env,
    pub check: &'a dyn Fn() -> SqlResult<()>,
    pub work_mem: usize,
    /// Temporary files for sorts and hash aggregates past `work_mem` (`spill`).
    pub temp: &'a crate::spill::Temp,
    /// The rows of a system view.
    pub views: &'a dyn Fn(&str) -> Vec<Tuple>,
    /// In a parallel worker's context, the next block of the plan's parallel scan,
    /// shared by the workers (parallel rule 2); None in the leader's.
    pub blocks: Option<std::sync::Arc<std::sync::atomic::AtomicU32>>,
    /// In a parallel worker's context, the parallel hash joins' shared builds
    /// (parallel rule 7); None in the leader's.
    pub(crate) builds: Option<&'a sharedhash::Builds>,
}

impl Ctx<'_> {
    fn eval(&self, e: &Expr, cols: &[Datum]) -> SqlResult<Datum> {
        bind::eval(
            e,
            &Row {
                cols,
                params: self.params,
                aggs: &[],
                env: self.env,
                sub: Some(self),
            },
        )
    }

    fn holds(&self, e: &Option<Expr>, cols: &[Datum]) -> SqlResult<bool> {
        match e {
            Some(c) => Ok(bind::is_true(&self.eval(c, cols)?)),
            None => Ok(true),
        }
    }

    fn engine_check(&self) -> strata_engine::Result<()> {
        (self.check)().map_err(|e| strata_engine::EngineError::Interrupted {
            code: e.code,
            message: e.into_data().message,
        })
    }
}

/// What a statement keeps of its subqueries: their plans, made once, and the
/// results of the uncorrelated ones (subquery rules 1 and 4).
#[derive(Default)]
pub struct SubCache {
    /// Shared with parallel workers (one allocation: EXPLAIN ANALYZE counts a
    /// worker's run of a subquery's nodes as the leader's, by their addresses).
    plans: RefCell<HashMap<usize, std::sync::Arc<Plan>>>,
    kept: RefCell<HashMap<(usize, Tuple), Rc<Kept>>>,
    /// Correlated subqueries' outer columns: (scope depth, column).
    deps: RefCell<HashMap<usize, Rc<OuterDeps>>>,
    /// Recursive CTEs' work tables, by id (cte rule 3).
    work: RefCell<HashMap<usize, Rc<Vec<Tuple>>>>,
    /// Shared WITH queries' rows, by id (cte rule 2).
    ctes: RefCell<HashMap<usize, Rc<Vec<Tuple>>>>,
}

impl SubCache {
    /// The plan a subquery ran with in this statement, if it ran.
    pub fn plan_run(&self, l: &SubLink) -> Option<std::sync::Arc<Plan>> {
        let key = l as *const SubLink as usize;
        self.plans.borrow().get(&key).cloned()
    }
}

/// (scope depth, column) of the outer columns a correlated subquery reads.
type OuterDeps = Vec<(usize, usize)>;

/// An uncorrelated subquery's result.
enum Kept {
    /// EXISTS or a scalar subquery's value.
    Value(Datum),
    /// The values of a quantified subquery; hashed (with whether one is NULL) for
    /// `x = ANY (q)`.
    Values(Vec<Datum>, Option<(HashSet<Datum>, bool)>),
}

impl<'a> Ctx<'a> {
    /// A context for a subquery run for the row `row` of this one.
    fn child(&self, row: &[Datum]) -> Ctx<'a> {
        let mut outer = self.outer.clone();
        outer.push(row.to_vec());
        Ctx {
            engine: self.engine,
            txn: self.txn,
            snap: self.snap,
            rels: self.rels,
            subs: self.subs,
            outer,
            db: self.db,
            params: self.params,
            env: self.env,
            check: self.check,
            work_mem: self.work_mem,
            temp: self.temp,
            views: self.views,
            blocks: None,
            builds: None,
        }
    }

    /// This context with `blocks` as its parallel scan's (parallel rule 7: a
    /// shared build's inner side reads its own share of its driving scan).
    fn with_blocks(&self, blocks: Option<std::sync::Arc<std::sync::atomic::AtomicU32>>) -> Ctx<'a> {
        Ctx {
            outer: self.outer.clone(),
            blocks,
            builds: self.builds,
            ..*self
        }
    }

    /// The subquery's plan, made at its first use.
    fn plan_of(&self, key: usize, q: &crate::analyze::Query) -> SqlResult<std::sync::Arc<Plan>> {
        if let Some(p) = self.subs.plans.borrow().get(&key) {
            return Ok(p.clone());
        }
        let p = std::sync::Arc::new(crate::planner::plan(q, self.rels)?);
        self.subs.plans.borrow_mut().insert(key, p.clone());
        Ok(p)
    }

    /// Up to `limit` rows of the subquery for the row `row`.
    fn sub_rows(&self, s: &SubLink, row: &[Datum], limit: usize) -> SqlResult<Vec<Tuple>> {
        let plan = self.plan_of(s as *const SubLink as usize, &s.query)?;
        let cx = self.child(row);
        let mut root = build(&plan);
        let mut out = Vec::new();
        let mut meter = Meter::new(self, "A subquery's rows");
        while out.len() < limit {
            match root.next(&cx)? {
                Some(r) => {
                    meter.hold(&r, 0)?;
                    out.push(r);
                }
                None => break,
            }
        }
        Ok(out)
    }

    /// A subquery's result for the row `row`: an uncorrelated one's computed at
    /// its first use and kept; a correlated one's kept by the values of the outer
    /// columns it reads (subquery rule 5), up to [`MEMO_ROWS`] of them.
    fn kept(&self, s: &SubLink, row: &[Datum]) -> SqlResult<Rc<Kept>> {
        let ptr = s as *const SubLink as usize;
        let key = if s.correlated {
            self.memo_key(s, ptr, row)?
        } else {
            Vec::new()
        };
        if let Some(k) = self.subs.kept.borrow().get(&(ptr, key.clone())) {
            return Ok(k.clone());
        }
        let k = Rc::new(self.compute(s, row)?);
        let mut kept = self.subs.kept.borrow_mut();
        if kept.len() < MEMO_ROWS {
            kept.insert((ptr, key), k.clone());
        }
        Ok(k)
    }

    /// The values of the outer columns a correlated subquery reads.
    fn memo_key(&self, s: &SubLink, ptr: usize, row: &[Datum]) -> SqlResult<Tuple> {
        let here = self.outer.len();
        let deps = {
            let mut cache = self.subs.deps.borrow_mut();
            cache
                .entry(ptr)
                .or_insert_with(|| Rc::new(crate::subquery::outer_deps(&s.query, here + 1)))
                .clone()
        };
        deps.iter()
            .map(|&(depth, col)| {
                let r = if depth == here {
                    Some(row)
                } else {
                    self.outer.get(depth).map(|r| &r[..])
                };
                r.and_then(|r| r.get(col))
                    .cloned()
                    .ok_or_else(|| SqlError::new("XX000", "an outer reference has no row"))
            })
            .collect()
    }

    /// Runs a subquery for the row `row` (subquery rules 2-4).
    fn compute(&self, s: &SubLink, row: &[Datum]) -> SqlResult<Kept> {
        Ok(match &s.kind {
            SubKind::Exists => Kept::Value(Datum::Bool(!self.sub_rows(s, row, 1)?.is_empty())),
            SubKind::Scalar => Kept::Value(scalar(self.sub_rows(s, row, 2)?)?),
            SubKind::Quantified { test, all, .. } => {
                let vals: Vec<Datum> = self
                    .sub_rows(s, row, usize::MAX)?
                    .into_iter()
                    .map(|mut r| r.swap_remove(0))
                    .collect();
                let hashed = match test {
                    Expr::Bin(_, crate::bind::BinOp::Eq, b) if !all => {
                        let mut set = HashSet::new();
                        let mut null = false;
                        for v in &vals {
                            match self.eval(b, &[Datum::Null, v.clone()])? {
                                Datum::Null => null = true,
                                k => {
                                    set.insert(k);
                                }
                            }
                        }
                        Some((set, null))
                    }
                    _ => None,
                };
                Kept::Values(vals, hashed)
            }
        })
    }
}

/// How many subquery results a statement keeps (subquery rule 5).
const MEMO_ROWS: usize = 100_000;

impl SubRunner for Ctx<'_> {
    fn sublink(&self, s: &SubLink, cols: &[Datum]) -> SqlResult<Datum> {
        let kept = self.kept(s, cols)?;
        match (&s.kind, &*kept) {
            (_, Kept::Value(v)) => Ok(v.clone()),
            (SubKind::Quantified { lhs, test, all }, Kept::Values(vals, hashed)) => {
                let l = self.eval(lhs, cols)?;
                if let (Some((set, null)), Expr::Bin(a, _, _)) = (hashed, test) {
                    let key = self.eval(a, &[l, Datum::Null])?;
                    return Ok(match key {
                        _ if vals.is_empty() => Datum::Bool(false),
                        Datum::Null => Datum::Null,
                        k if set.contains(&k) => Datum::Bool(true),
                        _ if *null => Datum::Null,
                        _ => Datum::Bool(false),
                    });
                }
                let vals = vals.iter().cloned();
                crate::subquery::quantified(*all, vals, &mut |v| self.eval(test, &[l.clone(), v]))
            }
            (_, Kept::Values(..)) => unreachable!("values are kept for ANY / ALL only"),
        }
    }

    fn outer(&self, level: usize, col: usize) -> SqlResult<Datum> {
        let n = self.outer.len();
        n.checked_sub(level)
            .and_then(|i| self.outer.get(i))
            .and_then(|r| r.get(col))
            .cloned()
            .ok_or_else(|| SqlError::new("XX000", "an outer reference has no row"))
    }
}

/// A scalar subquery's value (subquery rule 2).
fn scalar(rows: Vec<Tuple>) -> SqlResult<Datum> {
    match rows.len() {
        0 => Ok(Datum::Null),
        1 => Ok(rows
            .into_iter()
            .next()
            .and_then(|r| r.into_iter().next())
            .unwrap_or(Datum::Null)),
        _ => Err(SqlError::new(
            "21000",
            "more than one row returned by a subquery used as an expression",
        )),
    }
}

/// A pull operator (executor rule 2).
trait Node<'a> {
    fn next(&mut self, cx: &Ctx<'a>) -> SqlResult<Option<Tuple>>;

    /// Gives `f` each remaining row, lent rather than given. A consumer that reads
    /// every row and keeps few (aggregation) pulls this way; `engine_free` says `f`
    /// never reaches the engine, so a scan may call it on the row its cursor lends,
    /// under the page's lock, and copy nothing (cursor rule 6).
    fn drain(
        &mut self,
        cx: &Ctx<'a>,
        _engine_free: bool,
        f: &mut dyn FnMut(&[Datum]) -> SqlResult<()>,
    ) -> SqlResult<()> {
        while let Some(row) = self.next(cx)? {
            f(&row)?;
        }
        Ok(())
    }

    /// The rows its own filter rejected so far, for EXPLAIN ANALYZE's `Rows
    /// Removed by Filter` (None: it has no filter).
    fn removed(&self) -> Option<u64> {
        None
    }

    /// Executor rule 9: asks the operator (a sequential scan not yet begun) to
    /// drop the rows whose columns `probe.cols` fail `probe.test`, before it
    /// decodes their other columns. False if it will not: every row comes.
    fn prefilter(&mut self, _probe: Probe<'a>) -> bool {
        false
    }

    /// The rows a prefilter dropped so far (EXPLAIN ANALYZE counts them as the
    /// scan's, as PostgreSQL's scan gives them to its join).
    fn prefiltered(&self) -> u64 {
        0
    }

    /// Executor rule 10: at most `rows` rows will be pulled (told before the
    /// first).
    fn bound(&mut self, _rows: usize) {}

    /// What EXPLAIN ANALYZE adds under it (a sort's method and memory).
    fn analysis(&self) -> Vec<String> {
        Vec::new()
    }

    /// The rows an Index Only Scan read from the heap so far (EXPLAIN ANALYZE's
    /// `Heap Fetches`; None: not one).
    fn heap_fetches(&self) -> Option<u64> {
        None
    }
}

type Op<'a> = Box<dyn Node<'a> + 'a>;

/// Executor rule 9: a hash join's test of an outer row's key, given the key's
/// values (the row's columns `cols`, in order); false drops the row.
pub(super) struct Probe<'a> {
    cols: Vec<usize>,
    test: KeyTest<'a>,
}

/// Whether a key's values may match (executor rule 9).
type KeyTest<'a> = Box<dyn Fn(&[Datum]) -> bool + 'a>;

/// Runs `plan`, giving each row to `emit` until it returns false. The rows given.
pub fn run<'a>(
    plan: &'a Plan,
    cx: &Ctx<'a>,
    emit: &mut dyn FnMut(Tuple) -> SqlResult<bool>,
) -> SqlResult<u64> {
    let mut root = build(plan);
    let mut n = 0;
    while let Some(row) = root.next(cx)? {
        n += 1;
        if !emit(row)? {
            break;
        }
    }
    Ok(n)
}

/// The operator tree of a plan, each operator counted in an instrumented run
/// (instrument rule 1).
fn build<'a>(p: &'a Plan) -> Op<'a> {
    instrument::wrap(build_op(p), p)
}

fn build_op<'a>(p: &'a Plan) -> Op<'a> {
    match p {
        Plan::Result => Box::new(OneRow(false)),
        Plan::SeqScan { .. } | Plan::IndexScan { .. } => Box::new(scan_of(p)),
        Plan::ViewScan { name, filter } => Box::new(Held::new(Source::View(name), filter)),
        Plan::Series {
            start,
            stop,
            step,
            ty,
            ..
        } => Box::new(Series::new((start, stop, step.as_ref()), *ty)),
        Plan::Values(rows) => Box::new(Held::new(Source::Values(rows), &None)),
        Plan::Filter { input, cond } => Box::new(Filter(build(input), cond, 0)),
        Plan::Project { input, exprs } => match (&**input, moves(exprs)) {
            // A scan's projection to the columns read above (a join leaf's: join
            // order rule 7) is the scan's own: each row it keeps is made that narrow
            // from the row its cursor lends (cursor rule 6), not copied whole first.
            (Plan::SeqScan { .. } | Plan::IndexScan { .. }, true) => {
                let mut scan = scan_of(input);
                scan.take = Some(exprs);
                Box::new(scan)
            }
            _ => Box::new(Project(build(input), exprs, moves(exprs))),
        },
        Plan::Lateral { .. }
        | Plan::NestLoop { .. }
        | Plan::HashJoin { .. }
        | Plan::MergeJoin { .. } => join_op(p),
        Plan::Agg {
            input,
            keys,
            aggs,
            sorted,
            workers,
        } => match sorted {
            true => Box::new(GroupAggOp::new(build(input), keys, aggs)),
            false => {
                let mut op = AggOp::new(build(input), keys, aggs);
                op.parallel = (*workers > 0).then_some((&**input, *workers));
                Box::new(op)
            }
        },
        Plan::Sort { input, keys, bound } => Box::new(SortOp::new(build(input), keys, bound)),
        Plan::Unique { input, cols } => Box::new(Unique(build(input), cols, HashSet::new(), None)),
        Plan::Limit {
            input,
            offset,
            limit,
        } => Box::new(Limit::new(build(input), offset, limit)),
        Plan::Append(parts) => Box::new(Append(parts.iter().map(build).collect(), 0)),
        Plan::RecursiveUnion {
            id,
            init,
            step,
            all,
        } => Box::new(RecursiveUnion::new(*id, init, step, *all)),
        Plan::WorkTableScan { id } => Box::new(WorkTable(*id, None)),
        Plan::Gather { input, workers } => Box::new(workers::GatherOp::new(input, *workers)),
        Plan::CteScan { id, plan, .. } => Box::new(CteScan {
            id: *id,
            plan,
            rows: None,
        }),
        Plan::Window { input, funcs } => Box::new(WindowOp {
            input: build(input),
            funcs,
            out: None,
        }),
        Plan::SetOp {
            op,
            all,
            left,
            right,
        } => Box::new(SetOpNode::new(*op, *all, build(left), build(right))),
    }
}

/// The operator of a join plan node.
fn join_op<'a>(p: &'a Plan) -> Op<'a> {
    match p {
        Plan::Lateral {
            kind,
            outer,
            inner,
            cond,
            widths,
        } => Box::new(LateralOp {
            kind: *kind,
            outer: build(outer),
            inner,
            cond,
            widths: *widths,
            current: None,
        }),
        Plan::NestLoop {
            kind,
            outer,
            inner,
            cond,
            widths,
        } => Box::new(JoinOp::new(
            *kind,
            (build(outer), build(inner)),
            None,
            cond,
            *widths,
        )),
        Plan::HashJoin {
            kind,
            outer,
            inner,
            outer_keys,
            inner_keys,
            residual,
            widths,
            parallel,
        } => {
            let mut j = JoinOp::new(
                *kind,
                (build(outer), build(inner)),
                Some((outer_keys, inner_keys)),
                residual,
                *widths,
            );
            if *parallel {
                j.shared = Some((p as *const Plan as usize, &**inner));
            }
            Box::new(j)
        }
        Plan::MergeJoin {
            kind,
            outer,
            inner,
            outer_keys,
            inner_keys,
            residual,
            widths,
        } => Box::new(merge::MergeJoinOp::new(
            *kind,
            (build(outer), build(inner)),
            (outer_keys, inner_keys),
            residual,
            *widths,
        )),
        _ => unreachable!("join_op is given joins"),
    }
}

/// The operator of a SeqScan or IndexScan plan node.
fn scan_of(p: &Plan) -> Scan<'_> {
    match p {
        Plan::SeqScan {
            table,
            filter,
            cols,
            parallel,
            ..
        } => {
            let mut scan = Scan::new(table, None, filter, cols.as_deref());
            scan.parallel = *parallel;
            scan
        }
        Plan::IndexScan {
            table,
            path,
            filter,
            cols,
            only,
            ..
        } => {
            let mut scan = Scan::new(table, Some(path), filter, cols.as_deref());
            scan.index_only = *only;
            scan
        }
        _ => unreachable!("scan_of is given scans"),
    }
}

/// One empty row (a SELECT without FROM).
struct OneRow(bool);

impl<'a> Node<'a> for OneRow {
    fn next(&mut self, _: &Ctx<'a>) -> SqlResult<Option<Tuple>> {
        Ok((!std::mem::replace(&mut self.0, true)).then(Vec::new))
    }
}

enum Cursor<'a> {
    Unopened,
    Seq(SeqCursor<'a>),
    Index(IndexCursor<'a>),
    Done,
}

/// A table read page by page or through an index range, its filter applied.
struct Scan<'a> {
    table: &'a str,
    path: Option<&'a IndexPath>,
    filter: &'a Option<Expr>,
    /// The columns to decode (None: all).
    cols: Option<&'a [bool]>,
    cursor: Cursor<'a>,
    batch: std::vec::IntoIter<Tuple>,
    /// How many rows at the front of `batch` passed the filter already (and are
    /// narrowed to `take`).
    passed: usize,
    /// The columns kept, in order, when a projection is fused in (all: None).
    take: Option<&'a [Expr]>,
    /// A parallel plan's scan: in a worker, its blocks are shared (parallel rule 2).
    parallel: bool,
    /// The filter's part tested before the other columns are decoded.
    early: Option<Early>,
    /// The filter without what the index range enforces (plan rule 3), and
    /// whether the scan reads through the index (else the whole filter applies).
    residual: Vec<&'a Expr>,
    through_index: bool,
    /// Rows the filter rejected (EXPLAIN ANALYZE).
    rejected: u64,
    /// An Index Only Scan (planner rule 13), and the rows it read from the heap
    /// (EXPLAIN ANALYZE's Heap Fetches).
    index_only: bool,
    heap_fetches: u64,
    /// Executor rule 9: the join's key test, on the table's columns, and the rows
    /// it dropped.
    probe: Option<Probe<'a>>,
    dropped: u64,
    /// Executor rule 10: the rows a LIMIT above will take at most.
    bound: Option<usize>,
}

/// Executor rule 6: a sequential scan's filter split for the engine's early
/// columns (cursor rule 9): its leading conjuncts that read only the first one's
/// columns are tested on a row with just those decoded, the rest after the other
/// columns are. The conjuncts keep their order, so a row is rejected by the same
/// conjunct (and an error raised by the same one) as by the whole filter.
struct Early {
    cols: Vec<bool>,
    test: Option<Expr>,
    rest: Option<Expr>,
}

impl Early {
    /// The split of `filter` for a scan decoding `cols` (None: all); None where
    /// the first conjuncts read every column decoded.
    fn split(filter: &Expr, cols: Option<&[bool]>) -> Option<Early> {
        let mut conjs = Vec::new();
        crate::planner::split_and(filter.clone(), &mut conjs);
        let reads = |e: &Expr| {
            let mut c = Vec::new();
            crate::privileges::expr_columns(e, &mut c);
            c
        };
        let first = reads(conjs.first()?);
        let n = conjs
            .iter()
            .take_while(|e| reads(e).iter().all(|c| first.contains(c)))
            .count();
        let mut mask = vec![false; first.iter().max().map_or(0, |c| c + 1)];
        for c in first {
            mask[c] = true;
        }
        let more = |m: &[bool]| {
            m.iter()
                .enumerate()
                .any(|(c, w)| *w && !mask.get(c).copied().unwrap_or(false))
        };
        if !cols.is_none_or(more) {
            return None;
        }
        let rest = conjs.split_off(n);
        Some(Early {
            cols: mask,
            test: crate::planner::and_all(conjs),
            rest: crate::planner::and_all(rest),
        })
    }
}

impl<'a> Scan<'a> {
    fn new(
        table: &'a str,
        path: Option<&'a IndexPath>,
        filter: &'a Option<Expr>,
        cols: Option<&'a [bool]>,
    ) -> Self {
        Scan {
            table,
            path,
            filter,
            cols,
            cursor: Cursor::Unopened,
            batch: Vec::new().into_iter(),
            passed: 0,
            take: None,
            parallel: false,
            early: None,
            residual: match (path, filter) {
                (Some(p), Some(f)) => p.residual(f),
                _ => Vec::new(),
            },
            through_index: false,
            rejected: 0,
            index_only: false,
            heap_fetches: 0,
            probe: None,
            dropped: 0,
            bound: None,
        }
    }

    /// Opens the cursor: through the index if its range evaluates (plan rule 4).
    fn open(&mut self, cx: &Ctx<'a>) -> SqlResult<Cursor<'a>> {
        let range = match self.path {
            Some(p) => p.range(&|e| cx.eval(e, &[]))?,
            None => None,
        };
        let c = match (cx.txn, range, self.path) {
            (Some(t), Some(r), Some(p)) => {
                Cursor::Index(t.index_cursor(cx.db, self.table, &p.index, r)?)
            }
            (Some(t), _, _) => Cursor::Seq(t.seq_cursor(cx.db, self.table)?),
            (None, Some(r), Some(p)) => {
                Cursor::Index(cx.engine.index_cursor(cx.db, self.table, &p.index, r))
            }
            (None, _, _) => Cursor::Seq(cx.engine.seq_cursor(cx.db, self.table)),
        };
        let c = match (c, &cx.blocks) {
            (Cursor::Seq(s), Some(blocks)) if self.parallel => {
                Cursor::Seq(s.shared(blocks.clone()))
            }
            (c, _) => c,
        };
        self.through_index = matches!(c, Cursor::Index(_));
        let c = match (c, self.cols) {
            (Cursor::Seq(s), Some(m)) => Cursor::Seq(s.only(m.to_vec())),
            (Cursor::Index(i), Some(m)) => match self.take {
                Some(t) => Cursor::Index(i.only(read_through_index(m, t, &self.residual))),
                None => Cursor::Index(i.only(m.to_vec())),
            },
            (c, _) => c,
        };
        let c = match c {
            Cursor::Index(i) if self.index_only => Cursor::Index(i.index_only()),
            c => c,
        };
        let c = match (c, self.bound) {
            (Cursor::Index(i), Some(n)) => Cursor::Index(i.wanting(n)),
            (c, _) => c,
        };
        self.early = match (&c, self.filter) {
            (Cursor::Seq(_), Some(f)) if bind::engine_free(f) => Early::split(f, self.cols),
            _ => None,
        };
        self.early_probe(matches!(c, Cursor::Seq(_)));
        Ok(match (c, &self.early) {
            (Cursor::Seq(s), Some(e)) => Cursor::Seq(s.early(e.cols.clone())),
            (c, _) => c,
        })
    }

    /// Rule 9 at the opening: the probe's columns join the early ones, its test
    /// run after the early conjuncts; kept only for a sequential scan whose
    /// filter is all early (a conjunct left for later could raise an error on a
    /// row the probe drops).
    fn early_probe(&mut self, seq: bool) {
        let Some(probe) = &self.probe else {
            return;
        };
        let all_early = match (self.filter, &self.early) {
            (None, _) => true,
            (Some(_), Some(e)) => e.rest.is_none(),
            (Some(_), None) => false,
        };
        if !seq || !all_early {
            self.probe = None;
            return;
        }
        let early = self.early.get_or_insert_with(|| Early {
            cols: Vec::new(),
            test: None,
            rest: None,
        });
        for &c in &probe.cols {
            if early.cols.len() <= c {
                early.cols.resize(c + 1, false);
            }
            early.cols[c] = true;
        }
    }

    /// The next batch; false at the end. A filter that does not reach the engine
    /// runs on each row as the cursor lends it, so only the rows that pass are copied
    /// (cursor rule 6); those lead the batch (`passed`). From a row the filter fails
    /// on — and for a filter that may reach the engine (a subquery's, which must not
    /// run under the scan's page and drop locks: cursor rule 1) — rows are kept whole
    /// and filtered as they are pulled, so an error surfaces only where PostgreSQL's
    /// would (not past a LIMIT).
    fn fill(&mut self, cx: &Ctx<'a>) -> SqlResult<bool> {
        if matches!(self.cursor, Cursor::Unopened) {
            self.cursor = self.open(cx)?;
        }
        let mut inline = self.filter.as_ref().is_none_or(bind::engine_free);
        let mut rows = Vec::new();
        let mut passed = 0;
        let (filter, take) = (
            active(self.filter, &self.residual, self.through_index),
            self.take,
        );
        let (early, recheck) = (self.early.as_ref(), std::cell::Cell::new(false));
        let (rejected, dropped) = (std::cell::Cell::new(0u64), std::cell::Cell::new(0u64));
        let (probe, mut key) = (self.probe.as_ref(), Vec::new());
        let mut test = |r: &[Datum]| {
            early_test(cx, early, (&recheck, &rejected), r)
                && (recheck.get() || probed(probe, r, &mut key, &dropped))
        };
        let mut visit = |r: &mut Tuple| {
            if inline {
                match rest_of(filter, early, &recheck).holds(cx, r) {
                    Ok(true) => {
                        passed += 1;
                        return rows.push(narrow(take, r));
                    }
                    Ok(false) => return rejected.set(rejected.get() + 1),
                    Err(_) => inline = false,
                }
            }
            rows.push(std::mem::take(r));
        };
        let check = || cx.engine_check();
        let more = match &mut self.cursor {
            Cursor::Seq(c) => c.next_batch_visit_early(cx.snap, &check, &mut test, &mut visit),
            Cursor::Index(c) => {
                let more = c.next_batch_visit(cx.snap, &check, &mut visit);
                self.heap_fetches = c.heap_fetches();
                more
            }
            Cursor::Unopened | Cursor::Done => Ok(false),
        }
        .map_err(SqlError::from)?;
        self.rejected += rejected.get();
        self.dropped += dropped.get();
        if !more {
            self.cursor = Cursor::Done;
        }
        self.passed = passed;
        self.batch = rows.into_iter();
        Ok(more || self.batch.len() > 0)
    }
}

impl<'a> Node<'a> for Scan<'a> {
    fn bound(&mut self, rows: usize) {
        self.bound = Some(rows);
    }

    fn drain(
        &mut self,
        cx: &Ctx<'a>,
        engine_free: bool,
        f: &mut dyn FnMut(&[Datum]) -> SqlResult<()>,
    ) -> SqlResult<()> {
        if !engine_free || !self.filter.as_ref().is_none_or(bind::engine_free) {
            while let Some(row) = self.next(cx)? {
                f(&row)?;
            }
            return Ok(());
        }
        // Rows already pulled into a batch first (a consumer that pulled before).
        while self.batch.len() > 0 {
            match self.next(cx)? {
                Some(row) => f(&row)?,
                None => return Ok(()),
            }
        }
        if matches!(self.cursor, Cursor::Unopened) {
            self.cursor = self.open(cx)?;
        }
        let (filter, take) = (
            active(self.filter, &self.residual, self.through_index),
            self.take,
        );
        let (early, recheck) = (self.early.as_ref(), std::cell::Cell::new(false));
        let (rejected, dropped) = (std::cell::Cell::new(0u64), std::cell::Cell::new(0u64));
        let (probe, mut key) = (self.probe.as_ref(), Vec::new());
        let mut test = |r: &[Datum]| {
            early_test(cx, early, (&recheck, &rejected), r)
                && (recheck.get() || probed(probe, r, &mut key, &dropped))
        };
        let failed = RefCell::new(None);
        let mut out: Tuple = Vec::new();
        let mut visit = |r: &mut Tuple| {
            let mut failed = failed.borrow_mut();
            if failed.is_some() {
                return;
            }
            // A fused projection (`take`) narrows the lent row into `out`.
            let mut lend = |r: &mut Tuple| match take {
                None => f(r),
                Some(t) => {
                    out.clear();
                    out.extend(t.iter().map(|e| moved(e, r)));
                    f(&out)
                }
            };
            if let Err(e) = rest_of(filter, early, &recheck)
                .holds(cx, r)
                .and_then(|ok| match ok {
                    true => lend(r),
                    false => {
                        rejected.set(rejected.get() + 1);
                        Ok(())
                    }
                })
            {
                *failed = Some(e);
            }
        };
        let check = || cx.engine_check();
        loop {
            let more = match &mut self.cursor {
                Cursor::Seq(c) => c.next_batch_visit_early(cx.snap, &check, &mut test, &mut visit),
                Cursor::Index(c) => {
                    let more = c.next_batch_visit(cx.snap, &check, &mut visit);
                    self.heap_fetches = c.heap_fetches();
                    more
                }
                Cursor::Unopened | Cursor::Done => Ok(false),
            }
            .map_err(SqlError::from)?;
            self.rejected += rejected.take();
            self.dropped += dropped.take();
            if let Some(e) = failed.borrow_mut().take() {
                return Err(e);
            }
            if !more {
                self.cursor = Cursor::Done;
                return Ok(());
            }
        }
    }

    fn next(&mut self, cx: &Ctx<'a>) -> SqlResult<Option<Tuple>> {
        loop {
            for mut row in self.batch.by_ref() {
                if self.passed > 0 {
                    self.passed -= 1;
                    return Ok(Some(row));
                }
                let filter = active(self.filter, &self.residual, self.through_index);
                if filter.holds(cx, &row)? {
                    return Ok(Some(narrow(self.take, &mut row)));
                }
                self.rejected += 1;
            }
            if matches!(self.cursor, Cursor::Done) || !self.fill(cx)? {
                return Ok(None);
            }
        }
    }

    fn removed(&self) -> Option<u64> {
        self.filter.as_ref().map(|_| self.rejected)
    }

    fn heap_fetches(&self) -> Option<u64> {
        self.index_only.then_some(self.heap_fetches)
    }

    /// Rule 9: taken by a sequential scan not yet begun, its probe's columns
    /// mapped through a fused projection to the table's.
    fn prefilter(&mut self, mut probe: Probe<'a>) -> bool {
        if !matches!(self.cursor, Cursor::Unopened) || self.path.is_some() || self.probe.is_some() {
            return false;
        }
        if let Some(take) = self.take {
            let mut cols = Vec::with_capacity(probe.cols.len());
            for &c in &probe.cols {
                match take.get(c) {
                    Some(Expr::Col(t)) => cols.push(*t),
                    _ => return false,
                }
            }
            probe.cols = cols;
        }
        self.probe = Some(probe);
        true
    }

    fn prefiltered(&self) -> u64 {
        self.dropped
    }
}

/// Rule 9: whether the row `r` (its early columns decoded) passes the probe, if
/// any; a row dropped is counted in `dropped`. `key` is a buffer for a key of
/// several columns.
fn probed(
    probe: Option<&Probe<'_>>,
    r: &[Datum],
    key: &mut Tuple,
    dropped: &std::cell::Cell<u64>,
) -> bool {
    let Some(p) = probe else {
        return true;
    };
    let pass = match p.cols.as_slice() {
        [c] => r.get(*c).is_some_and(|v| (p.test)(std::slice::from_ref(v))),
        cols => {
            key.clear();
            key.extend(
                cols.iter()
                    .map(|c| r.get(*c).cloned().unwrap_or(Datum::Null)),
            );
            (p.test)(key)
        }
    };
    if !pass {
        dropped.set(dropped.get() + 1);
    }
    pass
}

/// The filter a scan's rows are tested by: through an index, what its range does
/// not enforce (plan rule 3); else the whole filter.
/// Executor rule 7: the columns a scan through its index decodes when its
/// projection is fused (`take`): those of `cols` the projection keeps or the
/// residual conjuncts read. A column only the range's conjuncts read is decoded
/// by a scan that falls back to the heap (the whole filter tests it), never
/// through the index, which enforces them (count(*) over a key range decodes
/// nothing).
fn read_through_index(cols: &[bool], take: &[Expr], residual: &[&Expr]) -> Vec<bool> {
    if !residual.iter().all(|e| bind::engine_free(e)) {
        // A subquery's reads are not followed: all of `cols`.
        return cols.to_vec();
    }
    let mut used = Vec::new();
    for e in take.iter().chain(residual.iter().copied()) {
        crate::privileges::expr_columns(e, &mut used);
    }
    cols.iter()
        .enumerate()
        .map(|(i, c)| *c && used.contains(&i))
        .collect()
}

fn active<'f>(filter: &'f Option<Expr>, residual: &'f [&'f Expr], index: bool) -> Test<'f> {
    match index {
        true => Test::Conjs(residual),
        false => Test::Whole(filter),
    }
}

/// Executor rule 6: a row with only the early columns, tested by the early
/// conjuncts. An error lets the row through with `recheck` set, for the whole
/// filter to raise it where it would. A rejected row is counted in `rejected`
/// (EXPLAIN ANALYZE).
fn early_test(
    cx: &Ctx<'_>,
    early: Option<&Early>,
    (recheck, rejected): (&std::cell::Cell<bool>, &std::cell::Cell<u64>),
    r: &[Datum],
) -> bool {
    match early.map(|e| cx.holds(&e.test, r)) {
        None | Some(Ok(true)) => true,
        Some(Ok(false)) => {
            rejected.set(rejected.get() + 1);
            false
        }
        Some(Err(_)) => {
            recheck.set(true);
            true
        }
    }
}

/// The filter a whole row is tested by: the conjuncts after the early ones, or
/// the whole filter after an early error (executor rule 6).
fn rest_of<'e>(
    filter: Test<'e>,
    early: Option<&'e Early>,
    recheck: &std::cell::Cell<bool>,
) -> Test<'e> {
    match early {
        Some(e) if !recheck.replace(false) => Test::Whole(&e.rest),
        _ => filter,
    }
}

/// What a scan's rows are tested by: an expression, or the conjuncts of one that
/// an index range leaves (plan rule 3).
#[derive(Clone, Copy)]
enum Test<'f> {
    Whole(&'f Option<Expr>),
    Conjs(&'f [&'f Expr]),
}

impl Test<'_> {
    /// Whether the row passes: the conjuncts as AND takes them, in order, false
    /// at the first false one.
    fn holds(self, cx: &Ctx<'_>, row: &[Datum]) -> SqlResult<bool> {
        match self {
            Test::Whole(e) => cx.holds(e, row),
            Test::Conjs(conjs) => {
                let mut all = true;
                for c in conjs {
                    match cx.eval(c, row)? {
                        Datum::Bool(true) => {}
                        Datum::Bool(false) => return Ok(false),
                        _ => all = false,
                    }
                }
                Ok(all)
            }
        }
    }
}

enum Source<'a> {
    View(&'a str),
    Values(&'a [Vec<Expr>]),
}

/// Rows made whole at the first call: a system view's, or VALUES'.
struct Held<'a> {
    source: Source<'a>,
    filter: &'a Option<Expr>,
    rows: Option<std::vec::IntoIter<Tuple>>,
}

impl<'a> Held<'a> {
    fn new(source: Source<'a>, filter: &'a Option<Expr>) -> Self {
        Held {
            source,
            filter,
            rows: None,
        }
    }
}

impl<'a> Node<'a> for Held<'a> {
    fn next(&mut self, cx: &Ctx<'a>) -> SqlResult<Option<Tuple>> {
        if self.rows.is_none() {
            let rows = match &self.source {
                Source::View(name) => (cx.views)(name),
                Source::Values(rows) => rows
                    .iter()
                    .map(|r| r.iter().map(|e| cx.eval(e, &[])).collect())
                    .collect::<SqlResult<_>>()?,
            };
            self.rows = Some(rows.into_iter());
        }
        let rows = self.rows.as_mut().expect("filled above");
        for row in rows.by_ref() {
            if cx.holds(self.filter, &row)? {
                return Ok(Some(row));
            }
        }
        Ok(None)
    }
}

/// generate_series(start, stop[, step]) of integers, numerics or timestamps (an
/// interval step), a row at a time.
struct Series<'a> {
    args: (&'a Expr, &'a Expr, Option<&'a Expr>),
    ty: SqlType,
    /// Next value, last value, step; None before the first call, Some(None) when
    /// an argument is NULL.
    state: Option<Option<(Datum, Datum, Datum)>>,
    n: u64,
}

impl<'a> Series<'a> {
    fn new(args: (&'a Expr, &'a Expr, Option<&'a Expr>), ty: SqlType) -> Self {
        Series {
            args,
            ty,
            state: None,
            n: 0,
        }
    }

    /// The arguments as the series' type (integers as bigint), checked as
    /// PostgreSQL checks them.
    fn start(&self, cx: &Ctx<'a>) -> SqlResult<Option<(Datum, Datum, Datum)>> {
        let to = match self.ty {
            SqlType::Numeric | SqlType::Timestamp | SqlType::TimestampTz => self.ty,
            _ => SqlType::Int8,
        };
        let arg = |e: &Expr| -> SqlResult<Datum> { bind::cast_datum(cx.eval(e, &[])?, to) };
        let (a, b) = (arg(self.args.0)?, arg(self.args.1)?);
        let step = match (self.args.2, self.ty) {
            (Some(s), SqlType::Timestamp | SqlType::TimestampTz) => cx.eval(s, &[])?,
            (Some(s), _) => arg(s)?,
            (None, _) => bind::cast_datum(Datum::Int8(1), to)?,
        };
        if a.is_null() || b.is_null() || step.is_null() {
            return Ok(None);
        }
        let bad = |m: &str| Err(SqlError::new("22023", m.to_string()));
        for (d, what) in [
            (&a, "start value"),
            (&b, "stop value"),
            (&step, "step size"),
        ] {
            if let Datum::Numeric(n) = d {
                if n.is_nan() {
                    return bad(&format!("{what} cannot be NaN"));
                }
                if n.is_infinite() {
                    return bad(&format!("{what} cannot be infinity"));
                }
            }
        }
        if matches!(&step, Datum::Int8(0))
            || matches!(&step, Datum::Numeric(n) if n.is_zero())
            || matches!(&step, Datum::Interval(i) if crate::datefn::interval_cmp_key(*i) == 0)
        {
            return bad("step size cannot equal zero");
        }
        Ok(Some((a, b, step)))
    }
}

impl<'a> Node<'a> for Series<'a> {
    fn next(&mut self, cx: &Ctx<'a>) -> SqlResult<Option<Tuple>> {
        if self.state.is_none() {
            self.state = Some(self.start(cx)?);
        }
        let Some(Some((v, stop, step))) = &mut self.state else {
            return Ok(None);
        };
        let up = match &*step {
            Datum::Int8(s) => *s > 0,
            Datum::Numeric(n) => n.signum() > 0,
            Datum::Interval(i) => crate::datefn::interval_cmp_key(*i) > 0,
            _ => true,
        };
        let past = match (&*v, &*stop) {
            (Datum::Int8(a), Datum::Int8(b)) => {
                if up {
                    a > b
                } else {
                    a < b
                }
            }
            (Datum::Numeric(a), Datum::Numeric(b)) => {
                if up {
                    a > b
                } else {
                    a < b
                }
            }
            (Datum::Timestamp(a), Datum::Timestamp(b))
            | (Datum::TimestampTz(a), Datum::TimestampTz(b)) => {
                if up {
                    a > b
                } else {
                    a < b
                }
            }
            _ => true,
        };
        if past {
            return Ok(None);
        }
        self.n += 1;
        if self.n.is_multiple_of(1024) {
            (cx.check)()?;
        }
        let next = match (&*v, &*step) {
            (Datum::Int8(a), Datum::Int8(s)) => match a.checked_add(*s) {
                Some(x) => Datum::Int8(x),
                // Past bigint's end: this value is the last.
                None => stop.clone(),
            },
            (Datum::Numeric(a), Datum::Numeric(s)) => Datum::Numeric(a.add_exact(s)),
            (a, s @ Datum::Interval(_)) => {
                crate::interval::arith(crate::bind::BinOp::Add, a, s).unwrap_or(Ok(Datum::Null))?
            }
            _ => Datum::Null,
        };
        let cur = std::mem::replace(v, next);
        if matches!((&cur, &*v), (Datum::Int8(a), Datum::Int8(b)) if a == b) {
            *stop = Datum::Null;
        }
        Ok(Some(vec![match cur {
            Datum::Int8(x) if self.ty == SqlType::Int4 => Datum::Int4(x as i32),
            d => d,
        }]))
    }
}

/// `.2`: the rows rejected.
struct Filter<'a>(Op<'a>, &'a Expr, u64);

impl<'a> Node<'a> for Filter<'a> {
    fn drain(
        &mut self,
        cx: &Ctx<'a>,
        engine_free: bool,
        f: &mut dyn FnMut(&[Datum]) -> SqlResult<()>,
    ) -> SqlResult<()> {
        let (cond, rejected) = (self.1, &mut self.2);
        let free = engine_free && bind::engine_free(cond);
        self.0.drain(cx, free, &mut |row| {
            if bind::is_true(&cx.eval(cond, row)?) {
                f(row)?;
            } else {
                *rejected += 1;
            }
            Ok(())
        })
    }

    fn next(&mut self, cx: &Ctx<'a>) -> SqlResult<Option<Tuple>> {
        while let Some(row) = self.0.next(cx)? {
            if bind::is_true(&cx.eval(self.1, &row)?) {
                return Ok(Some(row));
            }
            self.2 += 1;
        }
        Ok(None)
    }

    fn removed(&self) -> Option<u64> {
        Some(self.2)
    }
}

/// A projection; `.2`: its expressions are distinct columns, moved out of the input
/// row rather than copied (a join leaf's projection, join order rule 7).
struct Project<'a>(Op<'a>, &'a [Expr], bool);

/// A scan's row narrowed to the columns of its fused projection (`take`), moved
/// out of `r`; all of `r` without one.
fn narrow(take: Option<&[Expr]>, r: &mut Tuple) -> Tuple {
    match take {
        None => std::mem::take(r),
        Some(t) => t.iter().map(|e| moved(e, r)).collect(),
    }
}

/// Column `e` of `r`, moved out (a moving projection's: `moves`), or a NULL.
fn moved(e: &Expr, r: &mut Tuple) -> Datum {
    match e {
        Expr::Col(i) => std::mem::replace(&mut r[*i], Datum::Null),
        Expr::Const(Datum::Null) => Datum::Null,
        _ => unreachable!("moves() checked: columns and NULLs only"),
    }
}

/// Whether `exprs` are columns, none twice, and NULLs (a column a scan's filter
/// alone reads, dropped: planner rule 9).
fn moves(exprs: &[Expr]) -> bool {
    let mut seen = std::collections::HashSet::new();
    exprs.iter().all(|e| match e {
        Expr::Col(i) => seen.insert(*i),
        Expr::Const(Datum::Null) => true,
        _ => false,
    })
}

impl<'a> Node<'a> for Project<'a> {
    fn bound(&mut self, rows: usize) {
        self.0.bound(rows);
    }

    /// Projects each lent row into one buffer, lent on in turn.
    fn drain(
        &mut self,
        cx: &Ctx<'a>,
        engine_free: bool,
        f: &mut dyn FnMut(&[Datum]) -> SqlResult<()>,
    ) -> SqlResult<()> {
        let exprs = self.1;
        let free = engine_free && exprs.iter().all(bind::engine_free);
        let mut out: Tuple = Vec::with_capacity(exprs.len());
        self.0.drain(cx, free, &mut |row| {
            out.clear();
            for e in exprs {
                out.push(match e {
                    Expr::Col(i) => row[*i].clone(),
                    e => cx.eval(e, row)?,
                });
            }
            f(&out)
        })
    }

    fn next(&mut self, cx: &Ctx<'a>) -> SqlResult<Option<Tuple>> {
        let Some(mut row) = self.0.next(cx)? else {
            return Ok(None);
        };
        if self.2 {
            let out = self.1.iter().map(|e| moved(e, &mut row)).collect();
            return Ok(Some(out));
        }
        let out = self
            .1
            .iter()
            .map(|e| match e {
                Expr::Col(i) => Ok(row[*i].clone()),
                e => cx.eval(e, &row),
            })
            .collect::<SqlResult<_>>()?;
        Ok(Some(out))
    }

    /// EXPLAIN shows a projection on its input's line, filter included: the
    /// input's count.
    fn removed(&self) -> Option<u64> {
        self.0.removed()
    }

    fn heap_fetches(&self) -> Option<u64> {
        self.0.heap_fetches()
    }
}

/// What one operator holds, against its limit (executor rule 3).
struct Meter {
    used: usize,
    limit: usize,
    what: &'static str,
}

impl Meter {
    /// PostgreSQL's hash_mem: work_mem times hash_mem_multiplier (2).
    fn new(cx: &Ctx<'_>, what: &'static str) -> Meter {
        Meter {
            used: 0,
            limit: cx.work_mem.saturating_mul(2),
            what,
        }
    }

    /// Counts `extra` bytes and a row held if they fit under the limit; false
    /// (nothing counted) if they do not.
    fn fits(&mut self, row: &[Datum], extra: usize) -> bool {
        let bytes = crate::sort::row_bytes(row, &[]) + extra;
        if self.used + bytes > self.limit {
            return false;
        }
        self.used += bytes;
        true
    }

    /// Counts `extra` bytes and a row held; 53200 past the limit.
    fn hold(&mut self, row: &[Datum], extra: usize) -> SqlResult<()> {
        self.used += crate::sort::row_bytes(row, &[]) + extra;
        if self.used > self.limit {
            return Err(SqlError::new("53200", "out of memory")
                .with_detail(format!(
                    "{} needs more than hash_mem (2 × work_mem, {}kB); Strata spills only sorts, hash aggregates and hash joins to temporary files.",
                    self.what,
                    self.limit / 1024
                ))
                .with_hint("Raise work_mem (SET work_mem = '64MB')."));
        }
        Ok(())
    }
}

/// Every row of `op`, held (executor rule 4: the interrupt check every 1024).
fn drain<'a>(op: &mut Op<'a>, cx: &Ctx<'a>, meter: &mut Meter) -> SqlResult<Vec<Tuple>> {
    let mut rows = Vec::new();
    while let Some(r) = op.next(cx)? {
        meter.hold(&r, 0)?;
        rows.push(r);
        if rows.len().is_multiple_of(1024) {
            (cx.check)()?;
        }
    }
    Ok(rows)
}

/// Nested-loop and hash joins (planner rule 2): the inner side held, with a
/// matched flag per row for RIGHT and FULL joins.
/// The group of an inner row whose key is NULL (it matches nothing).
const END: usize = usize::MAX;

/// Executor rule 9: the outer rows a join's prefilter tests before it stops
/// testing, if more than half of them matched.
const PROBE_SAMPLE: u32 = 4096;

struct JoinOp<'a> {
    kind: JoinKind,
    outer: Op<'a>,
    inner: Option<Op<'a>>,
    keys: Option<(&'a [Expr], &'a [Expr])>,
    cond: &'a Option<Expr>,
    widths: (usize, usize),
    /// The inner side held (and hashed): its own, or, in a parallel hash join,
    /// the workers' shared table (parallel rule 7).
    hashed: std::sync::Arc<Hashed>,
    matched: Vec<bool>,
    /// A parallel hash join's plan node address and inner side (parallel rule 7).
    shared: Option<(usize, &'a Plan)>,
    /// The outer row being joined, the inner candidates left, whether it matched.
    current: Option<(Tuple, Vec<usize>, usize, bool)>,
    /// The inner rows left to emit unmatched (RIGHT, FULL), once the outer ends.
    tail: Option<usize>,
    /// Buffers kept across outer rows: a probe's key, the candidates' list.
    probe: Tuple,
    spare: Vec<usize>,
    /// Past hash_mem: the join done partition by partition from temporary files.
    grace: Option<Box<GraceJoin<'a>>>,
    /// How many partitionings led here (0 for the plan's own join).
    depth: u32,
}

impl<'a> JoinOp<'a> {
    fn new(
        kind: JoinKind,
        (outer, inner): (Op<'a>, Op<'a>),
        keys: Option<(&'a Vec<Expr>, &'a Vec<Expr>)>,
        cond: &'a Option<Expr>,
        widths: (usize, usize),
    ) -> Self {
        JoinOp {
            kind,
            outer,
            inner: Some(inner),
            keys: keys.map(|(o, i)| (&o[..], &i[..])),
            cond,
            widths,
            hashed: Default::default(),
            matched: Vec::new(),
            shared: None,
            current: None,
            tail: None,
            probe: Vec::new(),
            spare: Vec::new(),
            grace: None,
            depth: 0,
        }
    }

    /// Holds the inner side (and hashes it on its keys). A hash join's inner side
    /// past hash_mem turns the join into a [`GraceJoin`]; a parallel hash join's
    /// in a worker is built with the other workers (parallel rule 7).
    fn build(&mut self, cx: &Ctx<'a>) -> SqlResult<()> {
        let Some(inner) = self.inner.take() else {
            return Ok(());
        };
        match (self.shared, cx.builds) {
            (Some((key, _)), Some(builds)) if self.depth == 0 => {
                self.build_shared(cx, &builds.get(key), inner)?
            }
            _ => self.build_own(cx, cx, inner)?,
        }
        if self.grace.is_none() {
            self.prefilter_outer();
        }
        Ok(())
    }

    /// Executor rule 9: an inner, semi or right hash join on plain outer columns
    /// hands its outer scan the test of whether a row's key is in the table it
    /// built (an outer row without a match gives nothing in these joins), so
    /// the scan decodes the rest of a row only for a key that may match. Where
    /// most keys match, the test stops asking after [`PROBE_SAMPLE`] rows.
    fn prefilter_outer(&mut self) {
        let Some((okeys, _)) = self.keys else {
            return;
        };
        if !matches!(
            self.kind,
            JoinKind::Inner | JoinKind::Semi | JoinKind::Right
        ) {
            return;
        }
        let cols: Option<Vec<usize>> = okeys
            .iter()
            .map(|k| match k {
                Expr::Col(c) => Some(*c),
                _ => None,
            })
            .collect();
        let Some(cols) = cols else {
            return;
        };
        let hashed = self.hashed.clone();
        let (seen, kept) = (std::cell::Cell::new(0u32), std::cell::Cell::new(0u32));
        let test = move |key: &[Datum]| {
            let n = seen.get();
            if n >= PROBE_SAMPLE && kept.get() > n / 2 {
                return true;
            }
            let hit = !key.iter().any(Datum::is_null) && hashed.table.get(key).is_some();
            seen.set(n.saturating_add(1));
            kept.set(kept.get() + u32::from(hit));
            hit
        };
        self.outer.prefilter(Probe {
            cols,
            test: Box::new(test),
        });
    }

    /// The inner side held by this join alone, pulled through `icx`.
    fn build_own(&mut self, cx: &Ctx<'a>, icx: &Ctx<'a>, mut inner: Op<'a>) -> SqlResult<()> {
        let mut meter = Meter::new(cx, "The inner side of a join");
        let mut rows = Vec::new();
        while let Some(r) = inner.next(icx)? {
            if self.keys.is_some() && self.depth < SPILL_DEPTH && !meter.fits(&r, 0) {
                rows.push(r);
                let outer = std::mem::replace(&mut self.outer, Box::new(NoRows));
                let sides = ((inner, icx), outer);
                self.grace = Some(Box::new(GraceJoin::start(self, cx, rows, sides)?));
                return Ok(());
            }
            if self.keys.is_none() || self.depth >= SPILL_DEPTH {
                meter.hold(&r, 0)?;
            }
            rows.push(r);
            if rows.len().is_multiple_of(1024) {
                (cx.check)()?;
            }
        }
        self.matched = vec![false; rows.len()];
        self.hashed = std::sync::Arc::new(Hashed::new(cx, self.keys.map(|k| k.1), rows)?);
        Ok(())
    }

    /// Parallel rule 7 (shared hash rules 1–3): this worker's share of the inner
    /// side added to the build, and the table all workers probe.
    fn build_shared(
        &mut self,
        cx: &Ctx<'a>,
        b: &std::sync::Arc<sharedhash::Build>,
        mut inner: Op<'a>,
    ) -> SqlResult<()> {
        use sharedhash::Step;
        let mut step = b.join(cx)?;
        loop {
            step = match step {
                Step::Collect(p) => {
                    let icx = cx.with_blocks(Some(b.blocks.clone()));
                    let share = share(&mut inner, &icx, Meter::new(cx, "The inner side of a join"));
                    b.add(cx, p, share)?
                }
                Step::Hash(p, rows) => {
                    let hashed =
                        Hashed::new(cx, self.keys.map(|k| k.1), rows).map(std::sync::Arc::new);
                    p.done(&hashed);
                    Step::Probe(hashed?)
                }
                Step::Probe(h) => {
                    self.hashed = h;
                    return Ok(());
                }
                Step::Whole => {
                    // Shared hash rule 2: the inner side run anew, its scans whole.
                    let plan = self.shared.expect("a parallel hash join").1;
                    let icx = cx.with_blocks(None);
                    return self.build_own(cx, &icx, build(plan));
                }
            };
        }
    }

    /// The inner rows an outer row may match, into `out` (last first), with no
    /// allocation once the buffers have grown.
    fn candidates(&mut self, cx: &Ctx<'a>, row: &[Datum], out: &mut Vec<usize>) -> SqlResult<()> {
        out.clear();
        let Some((okeys, _)) = self.keys else {
            out.extend((0..self.hashed.rows.len()).rev());
            return Ok(());
        };
        if !key_into(cx, okeys, row, &mut self.probe)? {
            return Ok(());
        }
        if let Some(&(start, n)) = self.hashed.table.get(&self.probe) {
            out.extend((start..start + n).rev());
        }
        Ok(())
    }

    fn unmatched_inner(&mut self) -> Option<Tuple> {
        let at = self.tail.get_or_insert(0);
        while *at < self.hashed.rows.len() {
            let i = *at;
            *at += 1;
            if !self.matched[i] {
                let mut out = vec![Datum::Null; self.widths.0];
                self.hashed.rows.extend_row(i, &mut out);
                return Some(out);
            }
        }
        None
    }
}

/// A join's inner side held: its rows and, for a hash join, each key's rows.
#[derive(Default)]
pub(super) struct Hashed {
    rows: keymap::Packed,
    /// Each key's inner rows: where they start in `rows` (a key's rows are
    /// together, in the order they came) and how many.
    table: keymap::KeyMap<(usize, usize)>,
}

impl Hashed {
    /// `rows` held, hashed on `keys` if given: each key's rows together in the
    /// order they came, rows with a NULL key last (keymap rule 3).
    fn new(cx: &Ctx<'_>, keys: Option<&[Expr]>, rows: Vec<Tuple>) -> SqlResult<Hashed> {
        let mut table = keymap::KeyMap::default();
        let order = match keys {
            Some(keys) => Some(hash_order(cx, keys, &rows, &mut table)?),
            None => None,
        };
        Ok(Hashed {
            rows: keymap::Packed::new(rows, order.as_deref()),
            table,
        })
    }
}

/// Hashes `rows` on `keys` into `table`: each row's place, each key's rows
/// together in the order they came, rows with a NULL key last.
fn hash_order(
    cx: &Ctx<'_>,
    keys: &[Expr],
    rows: &[Tuple],
    table: &mut keymap::KeyMap<(usize, usize)>,
) -> SqlResult<Vec<usize>> {
    // First each key's group and row count, then the groups' starts.
    let mut group = Vec::with_capacity(rows.len());
    let mut counts: Vec<usize> = Vec::new();
    let mut k = Vec::with_capacity(keys.len());
    for r in rows {
        if !key_into(cx, keys, r, &mut k)? {
            group.push(END);
            continue;
        }
        let next = counts.len();
        let (g, n) = table.get_or_insert_with(&k, || (next, 0));
        *n += 1;
        group.push(*g);
        if *g == next {
            counts.push(0);
        }
        counts[*g] += 1;
    }
    let mut start = 0;
    let starts: Vec<usize> = counts
        .iter()
        .map(|n| {
            start += n;
            start - n
        })
        .collect();
    for v in table.values_mut() {
        v.0 = starts[v.0];
    }
    let mut fill = starts;
    Ok(group
        .into_iter()
        .map(|g| {
            let slot = fill.get_mut(g).unwrap_or(&mut start);
            *slot += 1;
            *slot - 1
        })
        .collect())
}

/// Parallel rule 7: a worker's share of a shared build's inner side, pulled
/// through `icx` (whose blocks are the build's); None past hash_mem (shared
/// hash rule 2).
fn share<'a>(inner: &mut Op<'a>, icx: &Ctx<'a>, mut meter: Meter) -> SqlResult<Option<Vec<Tuple>>> {
    let mut rows = Vec::new();
    while let Some(r) = inner.next(icx)? {
        if !meter.fits(&r, 0) {
            return Ok(None);
        }
        rows.push(r);
        if rows.len().is_multiple_of(1024) {
            (icx.check)()?;
        }
    }
    Ok(Some(rows))
}

impl<'a> Node<'a> for JoinOp<'a> {
    fn next(&mut self, cx: &Ctx<'a>) -> SqlResult<Option<Tuple>> {
        self.build(cx)?;
        if let Some(g) = self.grace.as_mut() {
            return g.next(cx);
        }
        loop {
            if self.tail.is_some() {
                return Ok(self.unmatched_inner());
            }
            let Some((row, cands, _, hit)) = &mut self.current else {
                match self.outer.next(cx)? {
                    Some(row) => {
                        let mut c = std::mem::take(&mut self.spare);
                        self.candidates(cx, &row, &mut c)?;
                        self.current = Some((row, c, 0, false));
                    }
                    None if matches!(self.kind, JoinKind::Right | JoinKind::Full) => {
                        self.tail = Some(0);
                    }
                    None => return Ok(None),
                }
                continue;
            };
            let semi = matches!(self.kind, JoinKind::Semi | JoinKind::Anti);
            if semi && self.cond.is_none() && !cands.is_empty() {
                // No residual: any candidate is a match, nothing to join.
                *hit = true;
                cands.clear();
            }
            while let Some(i) = cands.pop() {
                // The outer row's last candidate takes the row itself, not a copy
                // (given back if the condition fails).
                let (last, width) = (cands.is_empty() && !semi, row.len());
                let mut joined = match last {
                    true => std::mem::take(row),
                    false => Vec::with_capacity(row.len() + self.widths.1),
                };
                if !last {
                    joined.extend_from_slice(row);
                }
                self.hashed.rows.extend_row(i, &mut joined);
                if cx.holds(self.cond, &joined)? {
                    *hit = true;
                    // Kept for RIGHT and FULL joins, never a shared build's.
                    if let Some(m) = self.matched.get_mut(i) {
                        *m = true;
                    }
                    if last {
                        self.spare = std::mem::take(cands);
                        self.current = None;
                        return Ok(Some(joined));
                    }
                    if !semi {
                        return Ok(Some(joined));
                    }
                    // Semi join rule 3: one match settles the outer row.
                    cands.clear();
                } else if last {
                    joined.truncate(width);
                    *row = joined;
                }
            }
            let (row, cands, _, hit) = self.current.take().expect("a current row");
            self.spare = cands;
            match (self.kind, hit) {
                (JoinKind::Semi, true) | (JoinKind::Anti, false) => return Ok(Some(row)),
                _ => {}
            }
            if !hit && matches!(self.kind, JoinKind::Left | JoinKind::Full) {
                let mut out = row;
                out.resize(self.widths.0 + self.widths.1, Datum::Null);
                return Ok(Some(out));
            }
        }
    }
}

/// No rows (what a join's outer side becomes once a [`GraceJoin`] has read it).
struct NoRows;

impl<'a> Node<'a> for NoRows {
    fn next(&mut self, _: &Ctx<'a>) -> SqlResult<Option<Tuple>> {
        Ok(None)
    }
}

/// The rows of a temporary file, in the order written.
struct FileScan<'a>(crate::spill::TempFile<'a>);

impl<'a> Node<'a> for FileScan<'a> {
    fn next(&mut self, _: &Ctx<'a>) -> SqlResult<Option<Tuple>> {
        Ok(self.0.read()?.and_then(|mut p| p.pop()))
    }
}

/// A hash join whose inner side outgrew hash_mem (PostgreSQL's batched hash
/// join): both sides written to partitions by a hash of their keys, then joined
/// partition by partition, each as a hash join of its own (which partitions again
/// if still too large). Rows whose key is NULL match nothing: they go straight to
/// the output where the join keeps unmatched rows (executor rule 3).
struct GraceJoin<'a> {
    kind: JoinKind,
    keys: (&'a [Expr], &'a [Expr]),
    cond: &'a Option<Expr>,
    widths: (usize, usize),
    depth: u32,
    /// Rows to give first: unmatched rows with NULL keys.
    direct: crate::spill::TempFile<'a>,
    /// (outer, inner) partitions not yet joined.
    parts: Vec<(crate::spill::TempFile<'a>, crate::spill::TempFile<'a>)>,
    current: Option<Box<JoinOp<'a>>>,
}

impl<'a> GraceJoin<'a> {
    fn start(
        j: &JoinOp<'a>,
        cx: &Ctx<'a>,
        held: Vec<Tuple>,
        ((mut inner, icx), mut outer): ((Op<'a>, &Ctx<'a>), Op<'a>),
    ) -> SqlResult<Self> {
        let keys = j.keys.expect("a hash join");
        let mut g = GraceJoin {
            kind: j.kind,
            keys,
            cond: j.cond,
            widths: j.widths,
            depth: j.depth,
            direct: crate::spill::TempFile::create(cx.temp)?,
            parts: Vec::new(),
            current: None,
        };
        let mut files = Vec::new();
        for _ in 0..2 * SPILL_FANOUT {
            files.push(crate::spill::TempFile::create(cx.temp)?);
        }
        for r in held {
            g.place(cx, &mut files, r, false)?;
        }
        while let Some(r) = inner.next(icx)? {
            g.place(cx, &mut files, r, false)?;
        }
        while let Some(r) = outer.next(cx)? {
            g.place(cx, &mut files, r, true)?;
        }
        let mut it = files.into_iter();
        while let (Some(o), Some(i)) = (it.next(), it.next()) {
            if o.rows() > 0 || i.rows() > 0 {
                g.parts.push((o, i));
            }
        }
        g.parts.reverse();
        Ok(g)
    }

    /// A row of either side into its partition (outer files at even places), or,
    /// with a NULL key, to the output if the join keeps it unmatched.
    fn place(
        &mut self,
        cx: &Ctx<'a>,
        files: &mut [crate::spill::TempFile<'a>],
        row: Tuple,
        outer: bool,
    ) -> SqlResult<()> {
        let ks = if outer { self.keys.0 } else { self.keys.1 };
        match key_of(cx, ks, &row)? {
            Some(k) => {
                let p = spill_part(self.depth, &k) * 2 + usize::from(!outer);
                files[p].write(&[&row])
            }
            None => match (self.kind, outer) {
                (JoinKind::Left | JoinKind::Full, true) => {
                    let mut out = row;
                    out.resize(self.widths.0 + self.widths.1, Datum::Null);
                    self.direct.write(&[&out])
                }
                (JoinKind::Anti, true) => self.direct.write(&[&row]),
                (JoinKind::Right | JoinKind::Full, false) => {
                    let mut out = vec![Datum::Null; self.widths.0];
                    out.extend(row);
                    self.direct.write(&[&out])
                }
                _ => Ok(()),
            },
        }
    }

    fn next(&mut self, cx: &Ctx<'a>) -> SqlResult<Option<Tuple>> {
        if let Some(mut p) = self.direct.read()? {
            return Ok(p.pop());
        }
        loop {
            if let Some(j) = self.current.as_mut() {
                if let Some(r) = j.next(cx)? {
                    return Ok(Some(r));
                }
            }
            let Some((o, i)) = self.parts.pop() else {
                return Ok(None);
            };
            let mut j = JoinOp::new(
                self.kind,
                (Box::new(FileScan(o)), Box::new(FileScan(i))),
                None,
                self.cond,
                self.widths,
            );
            j.keys = Some(self.keys);
            j.depth = self.depth + 1;
            self.current = Some(Box::new(j));
        }
    }
}

/// A join with a LATERAL subquery (analyze rule 7): for each outer row, the inner
/// plan is run afresh with that row as its outer row; a LEFT join gives the outer
/// row with NULLs when no inner row passes the condition.
struct LateralOp<'a> {
    kind: JoinKind,
    outer: Op<'a>,
    inner: &'a Plan,
    cond: &'a Option<Expr>,
    widths: (usize, usize),
    /// The outer row, its inner rows' operator, whether one was joined.
    current: Option<(Tuple, Op<'a>, bool)>,
}

impl<'a> Node<'a> for LateralOp<'a> {
    fn next(&mut self, cx: &Ctx<'a>) -> SqlResult<Option<Tuple>> {
        loop {
            let Some((row, inner, hit)) = &mut self.current else {
                match self.outer.next(cx)? {
                    Some(row) => self.current = Some((row, build(self.inner), false)),
                    None => return Ok(None),
                }
                continue;
            };
            let child = cx.child(row);
            while let Some(r) = inner.next(&child)? {
                let mut joined = row.clone();
                joined.extend(r);
                if cx.holds(self.cond, &joined)? {
                    *hit = true;
                    return Ok(Some(joined));
                }
            }
            let (row, _, hit) = self.current.take().expect("a current row");
            if !hit && self.kind == JoinKind::Left {
                let mut out = row;
                out.resize(self.widths.0 + self.widths.1, Datum::Null);
                return Ok(Some(out));
            }
        }
    }
}

/// A join key's values; None if one is NULL (executor rule 5).
fn key_of(cx: &Ctx<'_>, keys: &[Expr], row: &[Datum]) -> SqlResult<Option<Tuple>> {
    let mut out = Vec::with_capacity(keys.len());
    Ok(key_into(cx, keys, row, &mut out)?.then_some(out))
}

/// A join key's values into `out` (its buffer reused); false if one is NULL.
fn key_into(cx: &Ctx<'_>, keys: &[Expr], row: &[Datum], out: &mut Tuple) -> SqlResult<bool> {
    out.clear();
    for k in keys {
        let v = cx.eval(k, row)?;
        if v.is_null() {
            return Ok(false);
        }
        out.push(v);
    }
    Ok(true)
}

/// Hash aggregation (planner rule 3): groups in order of first appearance. Past
/// hash_mem, the rows of groups not yet in memory go to temporary files by a hash
/// of their key (PostgreSQL's hash aggregate spill), each file aggregated in its
/// turn once the input ends (executor rule 3).
struct AggOp<'a> {
    input: Op<'a>,
    keys: &'a [Expr],
    aggs: &'a [Agg],
    out: Option<std::vec::IntoIter<Tuple>>,
    /// Spilled partitions still to aggregate, with their depth.
    pending: Vec<Part<'a>>,
    /// The input's plan and the workers to run it with (parallel rule 4).
    parallel: Option<(&'a Plan, usize)>,
}

impl<'a> AggOp<'a> {
    fn new(input: Op<'a>, keys: &'a [Expr], aggs: &'a [Agg]) -> Self {
        AggOp {
            input,
            keys,
            aggs,
            out: None,
            pending: Vec::new(),
            parallel: None,
        }
    }
}

/// A spilled partition of hash aggregation and the depth of the pass to read it.
type Part<'t> = (crate::spill::TempFile<'t>, u32);

/// Partitions a spilling pass writes; passes deeper than this fail with 53200.
const SPILL_FANOUT: u64 = 8;
const SPILL_DEPTH: u32 = 8;

/// The partition of a key at a spilling depth: a hash seeded by the depth, so a
/// partition that must be split again splits (SipHash: every bit of it depends on
/// every bit of the key, unlike FxHash's low bits).
fn spill_part(depth: u32, key: &[Datum]) -> usize {
    use std::hash::{Hash, Hasher};
    let mut h = std::collections::hash_map::DefaultHasher::new();
    (depth, key).hash(&mut h);
    (h.finish() % SPILL_FANOUT) as usize
}

/// One pass of hash aggregation: the groups in memory and the spilled rows.
struct Groups<'t> {
    index: keymap::KeyMap<usize>,
    groups: Vec<(Tuple, Vec<AggState>)>,
    meter: Meter,
    /// Past hash_mem: new groups' rows go to `parts`.
    full: bool,
    parts: Vec<crate::spill::TempFile<'t>>,
    depth: u32,
}

impl<'t> Groups<'t> {
    fn new(cx: &Ctx<'_>, aggs: &[Agg], grouped: bool, depth: u32) -> Self {
        let mut groups = Vec::new();
        if !grouped {
            groups.push((Vec::new(), aggs.iter().map(AggState::new).collect()));
        }
        Groups {
            index: Default::default(),
            groups,
            meter: Meter::new(cx, "Hash aggregation"),
            full: false,
            parts: Vec::new(),
            depth,
        }
    }

    /// The group of `key` (a new one if it fits), or `None` once memory is full and
    /// the key is new.
    fn group(&mut self, cx: &Ctx<'t>, aggs: &[Agg], key: &Tuple) -> SqlResult<Option<usize>> {
        if let Some(g) = self.index.get(key.as_slice()) {
            return Ok(Some(*g));
        }
        if !self.full && !self.meter.fits(key, 64 * aggs.len()) {
            if self.depth >= SPILL_DEPTH {
                self.meter.hold(key, 64 * aggs.len())?;
            }
            self.full = true;
        }
        if self.full {
            if self.parts.is_empty() {
                for _ in 0..SPILL_FANOUT {
                    self.parts.push(crate::spill::TempFile::create(cx.temp)?);
                }
            }
            return Ok(None);
        }
        self.groups
            .push((key.clone(), aggs.iter().map(AggState::new).collect()));
        self.index.insert(key, self.groups.len() - 1);
        Ok(Some(self.groups.len() - 1))
    }

    /// Parallel rule 4: a worker's group combined into these: its states added
    /// to its key's group, or the group taken as it is (key and states moved, not
    /// copied). False once memory is full and the key is new.
    fn combine(&mut self, aggs: &[Agg], key: Tuple, states: Vec<AggState>) -> SqlResult<bool> {
        let g = match self.index.get(key.as_slice()) {
            Some(&g) => g,
            None if self.groups.len() == 1 && key.is_empty() => 0,
            None if !self.meter.fits(&key, 64 * aggs.len()) => return Ok(false),
            None => {
                self.index.insert(&key, self.groups.len());
                self.groups.push((key, states));
                return Ok(true);
            }
        };
        for ((st, other), a) in self.groups[g].1.iter_mut().zip(states).zip(aggs) {
            st.combine(a, other)?;
        }
        Ok(true)
    }

    /// A row of a key with no group in memory, into its partition.
    fn spill(&mut self, key: &Tuple, row: &[Datum]) -> SqlResult<()> {
        let p = spill_part(self.depth, key);
        self.parts[p].write(&[row])
    }

    /// The groups' rows (key values then aggregate values), and the partitions to
    /// aggregate next.
    fn finish(self, cx: &Ctx<'_>, aggs: &[Agg]) -> SqlResult<(Vec<Tuple>, Vec<Part<'t>>)> {
        let rows = self
            .groups
            .into_iter()
            .map(|(key, states)| group_row(cx, aggs, key, states))
            .collect::<SqlResult<Vec<_>>>()?;
        let depth = self.depth + 1;
        let parts = self
            .parts
            .into_iter()
            .filter(|f| f.rows() > 0)
            .map(|f| (f, depth))
            .collect();
        Ok((rows, parts))
    }
}

/// A finished group's row: its key values, then its aggregates' values.
fn group_row(
    cx: &Ctx<'_>,
    aggs: &[Agg],
    mut key: Tuple,
    states: Vec<AggState>,
) -> SqlResult<Tuple> {
    let nk = key.len();
    key.reserve_exact(aggs.len());
    for (st, a) in states.into_iter().zip(aggs) {
        // Direct arguments read the group's keys (aggorder rule 2).
        let direct = a
            .direct
            .iter()
            .map(|e| cx.eval(e, &key[..nk]))
            .collect::<SqlResult<Vec<_>>>()?;
        key.push(st.finish_group(a, &direct)?);
    }
    Ok(key)
}

/// Aggregation over input sorted by its keys (planner rule 3): each run of equal
/// keys is a group, emitted when the next key differs, so one group is held at a
/// time.
struct GroupAggOp<'a> {
    input: Op<'a>,
    keys: &'a [Expr],
    aggs: &'a [Agg],
    /// The group being aggregated: its key and states.
    current: Option<(Tuple, Vec<AggState>)>,
    /// The row's key, computed into one buffer: a new group's key is taken from
    /// it, so a row of the current group allocates nothing.
    key: Tuple,
    done: bool,
    rows: u64,
}

impl<'a> GroupAggOp<'a> {
    fn new(input: Op<'a>, keys: &'a [Expr], aggs: &'a [Agg]) -> Self {
        GroupAggOp {
            input,
            keys,
            aggs,
            current: None,
            key: Vec::new(),
            done: false,
            rows: 0,
        }
    }
}

impl<'a> Node<'a> for GroupAggOp<'a> {
    fn next(&mut self, cx: &Ctx<'a>) -> SqlResult<Option<Tuple>> {
        while !self.done {
            let Some(row) = self.input.next(cx)? else {
                self.done = true;
                break;
            };
            self.rows += 1;
            if self.rows.is_multiple_of(1024) {
                (cx.check)()?;
            }
            self.key.clear();
            for k in self.keys {
                self.key.push(cx.eval(k, &row)?);
            }
            let ended = match &mut self.current {
                Some((k, states)) if *k == self.key => {
                    step(cx, self.aggs, states, &row)?;
                    None
                }
                _ => {
                    let mut states: Vec<AggState> = self.aggs.iter().map(AggState::new).collect();
                    step(cx, self.aggs, &mut states, &row)?;
                    let key = std::mem::take(&mut self.key);
                    self.current.replace((key, states))
                }
            };
            if let Some((k, states)) = ended {
                return group_row(cx, self.aggs, k, states).map(Some);
            }
        }
        match self.current.take() {
            Some((k, states)) => group_row(cx, self.aggs, k, states).map(Some),
            None => Ok(None),
        }
    }
}

/// The argument of an aggregate without one (count(*)).
const NULL: Datum = Datum::Null;

/// Feeds one row to a group's aggregates.
fn step(cx: &Ctx<'_>, aggs: &[Agg], states: &mut [AggState], row: &[Datum]) -> SqlResult<()> {
    {
        for (a, st) in aggs.iter().zip(states.iter_mut()) {
            // Planner rule 14: a group's value, once taken, is every row's.
            if a.func == bind::AggFunc::Any && st.has_value() {
                continue;
            }
            // A bare column (or none) without FILTER: stepped by reference.
            if a.filter.is_none() && a.arg2.is_none() {
                let lent = match &a.arg {
                    Some(Expr::Col(i)) => row.get(*i),
                    None => Some(&NULL),
                    Some(_) => None,
                };
                if lent.is_some_and(|v| st.step_lent(a, v)) {
                    continue;
                }
            }
            if !cx.holds(&a.filter, row)? {
                continue;
            }
            // A bare column (most aggregates' argument) is read, not evaluated.
            let v = match &a.arg {
                Some(Expr::Col(i)) => row[*i].clone(),
                Some(e) => cx.eval(e, row)?,
                None => Datum::Null,
            };
            let d = match &a.arg2 {
                Some(e) => cx.eval(e, row)?,
                None => Datum::Null,
            };
            if st.holds_rows() {
                let keys = a
                    .order
                    .iter()
                    .map(|(e, _, _)| cx.eval(e, row))
                    .collect::<SqlResult<Vec<_>>>()?;
                st.step_ordered(keys, v, d)?;
                continue;
            }
            st.step(a, v, d)?;
        }
        Ok(())
    }
}

impl<'a> AggOp<'a> {
    /// Aggregates the input (the first pass).
    fn compute(&mut self, cx: &Ctx<'a>) -> SqlResult<Vec<Tuple>> {
        if let (Some((input, n)), None) = (self.parallel, cx.txn) {
            if let Some(rows) = workers::aggregate(cx, input, (self.keys, self.aggs), n)? {
                return Ok(rows);
            }
        }
        let mut groups = Groups::new(cx, self.aggs, !self.keys.is_empty(), 0);
        let mut n = 0u64;
        // One key buffer for every row: a group's key is copied only when it is new.
        let mut key: Tuple = Vec::with_capacity(self.keys.len());
        let engine_free = self.keys.iter().all(bind::engine_free)
            && self
                .aggs
                .iter()
                .all(|a| a.row_exprs().all(bind::engine_free));
        let (keys, aggs) = (self.keys, self.aggs);
        self.input.drain(cx, engine_free, &mut |row| {
            n += 1;
            if n.is_multiple_of(1024) {
                (cx.check)()?;
            }
            add_row(cx, (keys, aggs), &mut groups, &mut key, row)
        })?;
        let (rows, parts) = groups.finish(cx, aggs)?;
        self.pending.extend(parts);
        Ok(rows)
    }

    /// Aggregates a spilled partition (a later pass).
    fn compute_part(&mut self, cx: &Ctx<'a>) -> SqlResult<Option<Vec<Tuple>>> {
        let Some((mut file, depth)) = self.pending.pop() else {
            return Ok(None);
        };
        let mut groups = Groups::new(cx, self.aggs, true, depth);
        let mut key: Tuple = Vec::with_capacity(self.keys.len());
        let mut n = 0u64;
        while let Some(mut parts) = file.read()? {
            n += 1;
            if n.is_multiple_of(1024) {
                (cx.check)()?;
            }
            let row = parts.pop().unwrap_or_default();
            add_row(cx, (self.keys, self.aggs), &mut groups, &mut key, &row)?;
        }
        drop(file);
        let (rows, parts) = groups.finish(cx, self.aggs)?;
        self.pending.extend(parts);
        Ok(Some(rows))
    }
}

/// One input row into `groups`: stepped in its group, or spilled.
fn add_row<'t>(
    cx: &Ctx<'t>,
    (keys, aggs): (&[Expr], &[Agg]),
    groups: &mut Groups<'t>,
    key: &mut Tuple,
    row: &[Datum],
) -> SqlResult<()> {
    let g = if keys.is_empty() {
        Some(0)
    } else {
        key.clear();
        for k in keys {
            key.push(cx.eval(k, row)?);
        }
        groups.group(cx, aggs, key)?
    };
    match g {
        Some(g) => step(cx, aggs, &mut groups.groups[g].1, row),
        None => groups.spill(key, row),
    }
}

impl<'a> Node<'a> for AggOp<'a> {
    fn next(&mut self, cx: &Ctx<'a>) -> SqlResult<Option<Tuple>> {
        loop {
            if let Some(r) = self.out.as_mut().and_then(Iterator::next) {
                return Ok(Some(r));
            }
            let rows = if self.out.is_none() {
                self.compute(cx)?
            } else {
                match self.compute_part(cx)? {
                    Some(rows) => rows,
                    None => return Ok(None),
                }
            };
            self.out = Some(rows.into_iter());
        }
    }
}

/// ORDER BY through the `sort` module (bounded by LIMIT when known).
struct SortOp<'a> {
    input: Op<'a>,
    keys: &'a [SortSpec],
    bound: &'a Option<Box<(Option<Expr>, Option<Expr>)>>,
    out: Option<crate::sort::Sorted<'a>>,
    /// How it sorted, for EXPLAIN ANALYZE.
    method: Option<String>,
}

impl<'a> SortOp<'a> {
    fn new(
        input: Op<'a>,
        keys: &'a [SortSpec],
        bound: &'a Option<Box<(Option<Expr>, Option<Expr>)>>,
    ) -> Self {
        SortOp {
            input,
            keys,
            bound,
            out: None,
            method: None,
        }
    }

    /// The sort keys of a row: a NULL flag first where NULLs go against the
    /// direction's default, then the value.
    fn keys_of(&self, row: &[Datum]) -> Vec<Datum> {
        let mut out = Vec::with_capacity(self.keys.len());
        keys_into(self.keys, row, &mut out);
        out
    }

    fn sorted(&mut self, cx: &Ctx<'a>) -> SqlResult<crate::sort::Sorted<'a>> {
        let mut desc = Vec::new();
        for s in self.keys {
            if s.nulls_first != s.desc {
                desc.push(s.desc);
            }
            desc.push(s.desc);
        }
        let bound = match self.bound.as_deref() {
            Some((offset, limit)) => {
                let (o, l) = offset_limit(cx, offset, limit)?;
                (l != usize::MAX).then(|| o.saturating_add(l))
            }
            None => None,
        };
        let mut sorter = crate::sort::Sorter::new(&desc, bound, cx.work_mem).spilling(cx.temp);
        let mut n = 0u64;
        let mut ended = true;
        while let Some(row) = self.input.next(cx)? {
            n += 1;
            if n.is_multiple_of(1024) {
                (cx.check)()?;
            }
            let k = self.keys_of(&row);
            sorter.push(row, k)?;
            if sorter.bounded() {
                ended = false;
                break;
            }
        }
        if !ended {
            // Rule 8 (sort rule 2): the rest of the input is lent, and only the
            // rows that beat the worst one held are copied. The keys are plain
            // columns, and a bounded push writes no run: nothing here reaches the
            // engine or the disk under the input's page locks.
            let (keys, mut k) = (self.keys, Vec::with_capacity(desc.len()));
            self.input.drain(cx, true, &mut |row| {
                n += 1;
                if n.is_multiple_of(1024) {
                    (cx.check)()?;
                }
                k.clear();
                keys_into(keys, row, &mut k);
                match sorter.would_keep(&k) {
                    true => sorter.push(row.to_vec(), k.clone()),
                    false => Ok(()),
                }
            })?;
        }
        self.method = Some(sorter.method());
        sorter.finish_stream()
    }
}

/// A row's sort keys into `out`: a NULL flag first where NULLs go against the
/// direction's default, then the value.
fn keys_into(keys: &[SortSpec], row: &[Datum], out: &mut Vec<Datum>) {
    for s in keys {
        let v = &row[s.col];
        if s.nulls_first != s.desc {
            // NULLs first ascending, or last descending: sort on "is not null".
            out.push(Datum::Bool(!v.is_null()));
        }
        out.push(v.clone());
    }
}

impl<'a> Node<'a> for SortOp<'a> {
    fn next(&mut self, cx: &Ctx<'a>) -> SqlResult<Option<Tuple>> {
        if self.out.is_none() {
            self.out = Some(self.sorted(cx)?);
        }
        self.out.as_mut().expect("sorted above").next_row()
    }

    fn analysis(&self) -> Vec<String> {
        self.method
            .iter()
            .map(|m| format!("Sort Method: {m}"))
            .collect()
    }
}

/// OFFSET and LIMIT as counts (usize::MAX: no limit; 2201W if negative).
fn offset_limit(
    cx: &Ctx<'_>,
    offset: &Option<Expr>,
    limit: &Option<Expr>,
) -> SqlResult<(usize, usize)> {
    let count = |e: &Option<Expr>| -> SqlResult<Option<usize>> {
        let Some(e) = e else { return Ok(None) };
        match bind::cast_datum(cx.eval(e, &[])?, SqlType::Int8)? {
            Datum::Int8(n) if n < 0 => Err(SqlError::new(
                "2201W",
                "LIMIT or OFFSET must not be negative",
            )),
            Datum::Int8(n) => Ok(Some(usize::try_from(n).unwrap_or(usize::MAX))),
            _ => Ok(None),
        }
    };
    Ok((
        count(offset)?.unwrap_or(0),
        count(limit)?.unwrap_or(usize::MAX),
    ))
}

/// DISTINCT [ON]: the first row of each key.
struct Unique<'a>(
    Op<'a>,
    &'a Option<Vec<usize>>,
    HashSet<Tuple>,
    Option<Meter>,
);

impl<'a> Node<'a> for Unique<'a> {
    fn next(&mut self, cx: &Ctx<'a>) -> SqlResult<Option<Tuple>> {
        while let Some(row) = self.0.next(cx)? {
            let key = match self.1 {
                Some(cols) => cols.iter().map(|c| row[*c].clone()).collect(),
                None => row.clone(),
            };
            if !self.2.contains(&key) {
                let m = self.3.get_or_insert_with(|| Meter::new(cx, "DISTINCT"));
                m.hold(&key, 0)?;
                self.2.insert(key);
                return Ok(Some(row));
            }
        }
        Ok(None)
    }
}

struct Limit<'a> {
    input: Op<'a>,
    offset: &'a Option<Expr>,
    limit: &'a Option<Expr>,
    /// Rows still to skip and to give; None before the first call.
    left: Option<(usize, usize)>,
}

impl<'a> Limit<'a> {
    fn new(input: Op<'a>, offset: &'a Option<Expr>, limit: &'a Option<Expr>) -> Self {
        Limit {
            input,
            offset,
            limit,
            left: None,
        }
    }
}

impl<'a> Node<'a> for Limit<'a> {
    fn next(&mut self, cx: &Ctx<'a>) -> SqlResult<Option<Tuple>> {
        if self.left.is_none() {
            let (skip, give) = offset_limit(cx, self.offset, self.limit)?;
            self.input.bound(skip.saturating_add(give));
            self.left = Some((skip, give));
        }
        let (skip, give) = self.left.as_mut().expect("set above");
        if *give == 0 {
            return Ok(None);
        }
        while *skip > 0 {
            if self.input.next(cx)?.is_none() {
                return Ok(None);
            }
            *skip -= 1;
        }
        let row = self.input.next(cx)?;
        if row.is_some() {
            *give -= 1;
        }
        Ok(row)
    }
}

/// UNION ALL: each input in turn.
struct Append<'a>(Vec<Op<'a>>, usize);

impl<'a> Node<'a> for Append<'a> {
    fn next(&mut self, cx: &Ctx<'a>) -> SqlResult<Option<Tuple>> {
        while self.1 < self.0.len() {
            if let Some(r) = self.0[self.1].next(cx)? {
                return Ok(Some(r));
            }
            self.1 += 1;
        }
        Ok(None)
    }
}

/// UNION, INTERSECT [ALL], EXCEPT [ALL] (planner rule 5).
struct SetOpNode<'a> {
    op: SetOp,
    all: bool,
    left: Op<'a>,
    right: Option<Op<'a>>,
    /// INTERSECT / EXCEPT: the right side's rows and their counts.
    counts: HashMap<Tuple, usize>,
    seen: HashSet<Tuple>,
    on_right: bool,
    meter: Option<Meter>,
}

impl<'a> SetOpNode<'a> {
    fn new(op: SetOp, all: bool, left: Op<'a>, right: Op<'a>) -> Self {
        SetOpNode {
            op,
            all,
            left,
            right: Some(right),
            counts: HashMap::new(),
            seen: HashSet::new(),
            on_right: false,
            meter: None,
        }
    }

    /// UNION (distinct): the left's rows, then the right's, each value once.
    fn union(&mut self, cx: &Ctx<'a>) -> SqlResult<Option<Tuple>> {
        loop {
            let row = if self.on_right {
                match self.right.as_mut() {
                    Some(r) => r.next(cx)?,
                    None => None,
                }
            } else {
                self.left.next(cx)?
            };
            match row {
                Some(r) => {
                    if !self.seen.contains(&r) {
                        let m = self.meter.get_or_insert_with(|| Meter::new(cx, "UNION"));
                        m.hold(&r, 0)?;
                        self.seen.insert(r.clone());
                        return Ok(Some(r));
                    }
                }
                None if !self.on_right => self.on_right = true,
                None => return Ok(None),
            }
        }
    }
}

impl<'a> Node<'a> for SetOpNode<'a> {
    fn next(&mut self, cx: &Ctx<'a>) -> SqlResult<Option<Tuple>> {
        if self.op == SetOp::Union {
            return self.union(cx);
        }
        if let Some(mut right) = self.right.take() {
            let mut meter = Meter::new(cx, "INTERSECT or EXCEPT");
            for r in drain(&mut right, cx, &mut meter)? {
                *self.counts.entry(r).or_default() += 1;
            }
        }
        while let Some(row) = self.left.next(cx)? {
            let n = self.counts.get(&row).copied().unwrap_or(0);
            let keep = match (self.op, self.all) {
                (SetOp::Intersect, true) => n > 0,
                (SetOp::Intersect, false) => n > 0 && self.seen.insert(row.clone()),
                (SetOp::Except, true) => n == 0,
                (SetOp::Except, false) => n == 0 && self.seen.insert(row.clone()),
                (SetOp::Union, _) => unreachable!("handled above"),
            };
            if self.all && n > 0 {
                *self.counts.get_mut(&row).expect("counted") -= 1;
            }
            if keep {
                return Ok(Some(row));
            }
        }
        Ok(None)
    }
}

/// A recursive CTE's rounds (cte rule 3): each round's new rows are given out and
/// become the next round's work table.
struct RecursiveUnion<'a> {
    id: usize,
    init: &'a Plan,
    step: &'a Plan,
    all: bool,
    seen: HashSet<Tuple>,
    out: std::collections::VecDeque<Tuple>,
    /// None before the first round; then the last round's new rows.
    working: Option<Vec<Tuple>>,
    meter: Option<Meter>,
}

impl<'a> RecursiveUnion<'a> {
    fn new(id: usize, init: &'a Plan, step: &'a Plan, all: bool) -> Self {
        RecursiveUnion {
            id,
            init,
            step,
            all,
            seen: HashSet::new(),
            out: std::collections::VecDeque::new(),
            working: None,
            meter: None,
        }
    }

    /// Runs one round; false once a round gave nothing new.
    fn round(&mut self, cx: &Ctx<'a>) -> SqlResult<bool> {
        (cx.check)()?;
        let plan = match self.working.take() {
            None => self.init,
            Some(w) if w.is_empty() => return Ok(false),
            Some(w) => {
                cx.subs.work.borrow_mut().insert(self.id, Rc::new(w));
                self.step
            }
        };
        let meter = self
            .meter
            .get_or_insert_with(|| Meter::new(cx, "A recursive query's rows"));
        let rows = drain(&mut build(plan), cx, meter)?;
        let mut fresh = Vec::new();
        for r in rows {
            if self.all || self.seen.insert(r.clone()) {
                self.out.push_back(r.clone());
                fresh.push(r);
            }
        }
        let more = !fresh.is_empty();
        self.working = Some(fresh);
        Ok(more)
    }
}

impl<'a> Node<'a> for RecursiveUnion<'a> {
    fn next(&mut self, cx: &Ctx<'a>) -> SqlResult<Option<Tuple>> {
        loop {
            if let Some(r) = self.out.pop_front() {
                return Ok(Some(r));
            }
            if !self.round(cx)? {
                return Ok(None);
            }
        }
    }
}

/// A shared WITH query's rows (cte rule 2): the first scan of it to be read runs
/// its plan and keeps the rows (within hash_mem) for every other.
struct CteScan<'a> {
    id: usize,
    plan: &'a Plan,
    rows: Option<(Rc<Vec<Tuple>>, usize)>,
}

impl<'a> Node<'a> for CteScan<'a> {
    fn next(&mut self, cx: &Ctx<'a>) -> SqlResult<Option<Tuple>> {
        if self.rows.is_none() {
            let kept = cx.subs.ctes.borrow().get(&self.id).cloned();
            let rows = match kept {
                Some(rows) => rows,
                None => {
                    if let Some(i) = instrument::current() {
                        i.note_cte(self.id, self.plan);
                    }
                    let mut meter = Meter::new(cx, "A WITH query's rows");
                    let rows = Rc::new(drain(&mut build(self.plan), cx, &mut meter)?);
                    cx.subs.ctes.borrow_mut().insert(self.id, rows.clone());
                    rows
                }
            };
            self.rows = Some((rows, 0));
        }
        let (rows, at) = self.rows.as_mut().expect("set above");
        let r = rows.get(*at).cloned();
        *at += 1;
        Ok(r)
    }
}

/// The work table of a recursive CTE's current round.
struct WorkTable(usize, Option<(Rc<Vec<Tuple>>, usize)>);

impl<'a> Node<'a> for WorkTable {
    fn next(&mut self, cx: &Ctx<'a>) -> SqlResult<Option<Tuple>> {
        if self.1.is_none() {
            let rows = cx
                .subs
                .work
                .borrow()
                .get(&self.0)
                .cloned()
                .unwrap_or_default();
            self.1 = Some((rows, 0));
        }
        let (rows, at) = self.1.as_mut().expect("set above");
        let r = rows.get(*at).cloned();
        *at += 1;
        Ok(r)
    }
}

/// Window functions (`window` rules): the input held, each function computed per
/// partition in its window order, its value appended to each row.
struct WindowOp<'a> {
    input: Op<'a>,
    funcs: &'a [crate::window::WinFunc],
    out: Option<std::vec::IntoIter<Tuple>>,
}

impl<'a> WindowOp<'a> {
    fn compute(&mut self, cx: &Ctx<'a>) -> SqlResult<Vec<Tuple>> {
        let mut meter = Meter::new(cx, "A window's rows");
        let mut rows = drain(&mut self.input, cx, &mut meter)?;
        let mut order: Vec<usize> = (0..rows.len()).collect();
        let mut values: Vec<Vec<Datum>> = vec![Vec::new(); self.funcs.len()];
        for f in crate::window::pg_window_order(self.funcs) {
            let (v, o) = window_values(cx, &self.funcs[f], &rows, &order)?;
            values[f] = v;
            order = o;
        }
        for (i, row) in rows.iter_mut().enumerate() {
            row.extend(values.iter().map(|v| v[i].clone()));
        }
        let mut slots: Vec<Option<Tuple>> = rows.into_iter().map(Some).collect();
        Ok(order.into_iter().filter_map(|i| slots[i].take()).collect())
    }
}

/// One window function's value for every row (by input position), and the rows'
/// window order: the rows are taken in `order` (the previous window's) and sorted
/// by PostgreSQL's quicksort (window rule 5).
fn window_values(
    cx: &Ctx<'_>,
    w: &crate::window::WinFunc,
    rows: &[Tuple],
    order: &[usize],
) -> SqlResult<(Vec<Datum>, Vec<usize>)> {
    // The expressions are borrowed, never cloned: a subquery in one is known by
    // its address (subquery rule 1).
    let eval_all = |es: &[&Expr], r: &Tuple| -> SqlResult<Tuple> {
        es.iter().map(|e| cx.eval(e, r)).collect()
    };
    let order_exprs: Vec<&Expr> = w.order.iter().map(|(e, _, _)| e).collect();
    let partition: Vec<&Expr> = w.partition.iter().collect();
    let dirs: Vec<(bool, bool)> = w.order.iter().map(|(_, d, n)| (*d, *n)).collect();
    let arg_exprs = crate::window::arg_exprs(w);
    let mut keyed = Vec::with_capacity(rows.len());
    for &i in order {
        let r = &rows[i];
        keyed.push((
            eval_all(&partition, r)?,
            eval_all(&order_exprs, r)?,
            eval_all(&arg_exprs, r)?,
            i,
        ));
    }
    let pdirs = vec![(false, false); w.partition.len()];
    crate::sort::pg_qsort(&mut keyed, &mut |a, b| {
        crate::window::cmp_keys(&a.0, &b.0, &pdirs)
            .then_with(|| crate::window::cmp_keys(&a.1, &b.1, &dirs))
    });
    let mut out = vec![Datum::Null; rows.len()];
    let mut start = 0;
    while start < keyed.len() {
        let mut end = start + 1;
        while end < keyed.len() && keyed[end].0 == keyed[start].0 {
            end += 1;
        }
        let part = &keyed[start..end];
        let keys: Vec<Tuple> = part.iter().map(|k| k.1.clone()).collect();
        let args: Vec<Tuple> = part.iter().map(|k| k.2.clone()).collect();
        let bounds = crate::window::bounds(w, &keys, &mut |e, r| cx.eval(e, r))?;
        let vals = crate::window::compute(
            w,
            &crate::window::Part {
                keys: &keys,
                args: &args,
                bounds: &bounds,
            },
        )?;
        for (k, v) in part.iter().zip(vals) {
            out[k.3] = v;
        }
        start = end;
    }
    Ok((out, keyed.iter().map(|k| k.3).collect()))
}

impl<'a> Node<'a> for WindowOp<'a> {
    fn next(&mut self, cx: &Ctx<'a>) -> SqlResult<Option<Tuple>> {
        if self.out.is_none() {
            self.out = Some(self.compute(cx)?.into_iter());
        }
        Ok(self.out.as_mut().and_then(Iterator::next))
    }
}
