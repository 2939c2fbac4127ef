//! EXPLAIN ANALYZE's counts: each operator of an instrumented run wrapped in a
//! [`Counted`] that counts its rows, the times it ran and (with TIMING) the time
//! to its first row and to its end, kept by plan node for `explain` to show.
//!
//! Rules (cited as "instrument rule N"):
//! 1. Only a run inside [`Instr::run`] is instrumented: `build` wraps operators
//!    while the thread's instrumentation is set (parallel workers take the
//!    leader's), so an ordinary query pays one thread-local read per operator
//!    built, nothing per row.
//! 2. A node's counts are kept under its plan node's address, which lives as long
//!    as the plan: the statement's plan, a subquery's plan kept in the statement's
//!    `SubCache`, a WITH query's plan inside its CteScan.
//! 3. A loop is one operator built from the node and pulled at least once (a
//!    subquery run for a row, a worker's share of a parallel scan); rows and times
//!    are summed over loops and shown per loop, as PostgreSQL's are.
//! 5. With BUFFERS, each call's buffer accesses (the pool's per-thread counts,
//!    `strata_buffer::usage`) are added to the node, children included, as
//!    PostgreSQL's are; a parallel worker's are added by its own operators.
//! 4. Time is the wall-clock time spent in the operator's calls, children included;
//!    a consumer that drains its input (an aggregate) has its own per-row work
//!    counted in its input's time as well, where PostgreSQL's counts it in its own.

use super::{Ctx, Node, Op, Tuple};
use crate::planner::Plan;
use crate::{Datum, SqlResult};
use std::cell::RefCell;
use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use strata_engine::{buffer_usage, BufferUsage};

/// What one plan node did over all its loops (instrument rule 3).
#[derive(Clone, Default, Debug)]
pub struct NodeStats {
    pub loops: u64,
    pub rows: u64,
    /// Time to the first row, summed over loops.
    pub first: Duration,
    pub total: Duration,
    /// Rows its own filter rejected (a scan's), if it counts them.
    pub removed: Option<u64>,
    /// Rows an Index Only Scan read from the heap.
    pub heap_fetches: Option<u64>,
    /// Lines EXPLAIN ANALYZE adds to it (a sort's method and memory).
    pub details: Vec<String>,
    /// Its buffer accesses, with BUFFERS (rule 5).
    pub buffers: BufferUsage,
}

/// An instrumented run's counts, by plan node address (instrument rule 2).
#[derive(Default)]
pub struct Instr {
    pub timing: bool,
    /// Count buffer accesses (rule 5).
    pub buffers: bool,
    nodes: Mutex<HashMap<usize, NodeStats>>,
    /// The WITH queries run, by id: the address of the plan run (a query naming
    /// one twice has a plan for each name; one of them runs).
    ctes: Mutex<HashMap<usize, usize>>,
    /// A parallel aggregate's workers and the groups they gave, by the address
    /// of its input.
    partials: Mutex<HashMap<usize, (u64, u64)>>,
}

thread_local! {
    static CURRENT: RefCell<Option<Arc<Instr>>> = const { RefCell::new(None) };
}

/// Sets this thread's instrumentation while it lives.
pub(super) struct Installed(Option<Arc<Instr>>);

impl Installed {
    pub(super) fn new(instr: Option<Arc<Instr>>) -> Installed {
        Installed(CURRENT.with(|c| c.replace(instr)))
    }
}

impl Drop for Installed {
    fn drop(&mut self) {
        let before = self.0.take();
        CURRENT.with(|c| *c.borrow_mut() = before);
    }
}

/// This thread's instrumentation, if a run is instrumented (rule 1).
pub(super) fn current() -> Option<Arc<Instr>> {
    CURRENT.with(|c| c.borrow().clone())
}

impl Instr {
    pub fn new(timing: bool, buffers: bool) -> Arc<Instr> {
        Arc::new(Instr {
            timing,
            buffers,
            ..Instr::default()
        })
    }

    /// Runs `f` with this thread's operators instrumented by `self`.
    pub fn run<T>(self: &Arc<Self>, f: impl FnOnce() -> T) -> T {
        let _set = Installed::new(Some(self.clone()));
        f()
    }

    /// What the node at `p` did; None if it never ran.
    pub fn stats(&self, p: &Plan) -> Option<NodeStats> {
        let key = p as *const Plan as usize;
        self.nodes.lock().expect("counts").get(&key).cloned()
    }

    /// The address of the plan run for the WITH query `id`.
    pub fn cte_run(&self, id: usize) -> Option<usize> {
        self.ctes.lock().expect("counts").get(&id).copied()
    }

    /// A parallel aggregate's Partial node over `input`: its workers as loops,
    /// their groups as rows, the time the input took.
    pub fn partial(&self, input: &Plan) -> Option<NodeStats> {
        let key = input as *const Plan as usize;
        let (loops, rows) = *self.partials.lock().expect("counts").get(&key)?;
        let scan = self.stats(input).unwrap_or_default();
        Some(NodeStats {
            loops,
            rows,
            first: scan.first,
            total: scan.total,
            // Rule 5: the workers' accesses, as the input's.
            buffers: scan.buffers,
            ..NodeStats::default()
        })
    }

    pub(super) fn note_partial(&self, input: &Plan, workers: u64, groups: u64) {
        let key = input as *const Plan as usize;
        let mut partials = self.partials.lock().expect("counts");
        let n = partials.entry(key).or_default();
        n.0 += workers;
        n.1 += groups;
    }

    pub(super) fn note_cte(&self, id: usize, p: &Plan) {
        let mut ctes = self.ctes.lock().expect("counts");
        ctes.entry(id).or_insert(p as *const Plan as usize);
    }

    fn add(&self, key: usize, run: &NodeStats) {
        let mut nodes = self.nodes.lock().expect("counts");
        let n = nodes.entry(key).or_default();
        n.loops += run.loops;
        n.rows += run.rows;
        n.first += run.first;
        n.total += run.total;
        if let Some(r) = run.removed {
            *n.removed.get_or_insert(0) += r;
        }
        if let Some(h) = run.heap_fetches {
            *n.heap_fetches.get_or_insert(0) += h;
        }
        n.buffers = n.buffers.plus(run.buffers);
        if !run.details.is_empty() {
            n.details = run.details.clone();
        }
    }
}

/// `op` built from `p`, wrapped if the run is instrumented (rule 1).
pub(super) fn wrap<'a>(op: Op<'a>, p: &'a Plan) -> Op<'a> {
    match current() {
        None => op,
        Some(instr) => Box::new(Counted {
            inner: op,
            key: p as *const Plan as usize,
            instr,
            run: NodeStats::default(),
        }),
    }
}

/// An operator and its counts for this loop, added to the run's at its end.
struct Counted<'a> {
    inner: Op<'a>,
    key: usize,
    instr: Arc<Instr>,
    run: NodeStats,
}

/// When a call began: its time (with TIMING) and the thread's buffer counts (with
/// BUFFERS).
type Began = (Option<Instant>, Option<BufferUsage>);

impl Counted<'_> {
    fn start(&mut self) -> Began {
        self.run.loops = 1;
        let buffers = self.instr.buffers.then(buffer_usage);
        (self.instr.timing.then(Instant::now), buffers)
    }

    /// Rule 5: the call's buffer accesses.
    fn count_buffers(&mut self, before: Option<BufferUsage>) {
        if let Some(b) = before {
            self.run.buffers = self.run.buffers.plus(buffer_usage().since(b));
        }
    }

    fn stop(&mut self, (start, buffers): Began, row: bool) {
        self.count_buffers(buffers);
        if let Some(t) = start {
            self.run.total += t.elapsed();
        }
        if row {
            if self.run.rows == 0 {
                self.run.first = self.run.total;
            }
            self.run.rows += 1;
        }
    }
}

impl<'a> Node<'a> for Counted<'a> {
    fn next(&mut self, cx: &Ctx<'a>) -> SqlResult<Option<Tuple>> {
        let start = self.start();
        let r = self.inner.next(cx);
        self.stop(start, matches!(r, Ok(Some(_))));
        r
    }

    fn drain(
        &mut self,
        cx: &Ctx<'a>,
        engine_free: bool,
        f: &mut dyn FnMut(&[Datum]) -> SqlResult<()>,
    ) -> SqlResult<()> {
        let (start, buffers) = self.start();
        let (mut rows, mut first) = (0u64, None);
        let r = self.inner.drain(cx, engine_free, &mut |row| {
            if rows == 0 {
                first = start.map(|t| t.elapsed());
            }
            rows += 1;
            f(row)
        });
        if let Some(t) = start {
            if self.run.rows == 0 {
                self.run.first = self.run.total + first.unwrap_or_default();
            }
            self.run.total += t.elapsed();
        }
        self.run.rows += rows;
        self.count_buffers(buffers);
        r
    }

    fn removed(&self) -> Option<u64> {
        self.inner.removed()
    }

    fn heap_fetches(&self) -> Option<u64> {
        self.inner.heap_fetches()
    }

    fn analysis(&self) -> Vec<String> {
        self.inner.analysis()
    }

    fn prefilter(&mut self, probe: super::Probe<'a>) -> bool {
        self.inner.prefilter(probe)
    }

    fn prefiltered(&self) -> u64 {
        self.inner.prefiltered()
    }

    fn bound(&mut self, rows: usize) {
        self.inner.bound(rows);
    }
}

impl Drop for Counted<'_> {
    fn drop(&mut self) {
        if self.run.loops == 0 {
            return;
        }
        // Executor rule 9: the rows a prefilter dropped were the scan's.
        self.run.rows += self.inner.prefiltered();
        self.run.removed = self.inner.removed();
        self.run.heap_fetches = self.inner.heap_fetches();
        self.run.details = self.inner.analysis();
        self.instr.add(self.key, &self.run);
    }
}
