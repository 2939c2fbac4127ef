//! Parallel workers: a parallel aggregate's or Gather's input run by threads that
//! share its scan's blocks (`parallel` rules 2-6), each aggregating the rows it
//! reads (the leader combines their groups) or sending them to the leader.

use super::{add_row, build, Ctx, Groups, Meter, Node, Op, SubCache, Tuple};
use crate::aggregate::AggState;
use crate::bind::{Agg, Env, Expr};
use crate::planner::Plan;
use crate::{Datum, SqlError, SqlResult};
use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use std::sync::mpsc::{self, RecvTimeoutError};
use std::sync::Arc;
use std::time::Duration;
use strata_engine::{Engine, Snapshot};

/// What the workers share with the leader: the part of its context threads may
/// share (parallel rule 3).
#[derive(Clone, Copy)]
struct Shared<'a> {
    engine: &'a Engine,
    snap: &'a Snapshot<'a>,
    db: &'a str,
    params: &'a [Datum],
    env: &'a dyn Env,
    work_mem: usize,
    temp: &'a crate::spill::Temp,
    /// The plans of the input's subqueries, by their key (parallel rule 3).
    subplans: &'a [(usize, Arc<Plan>)],
    /// The parallel hash joins' shared builds (parallel rule 7).
    builds: &'a super::sharedhash::Builds,
}

impl<'a> Shared<'a> {
    fn of(
        cx: &Ctx<'a>,
        subplans: &'a [(usize, Arc<Plan>)],
        builds: &'a super::sharedhash::Builds,
    ) -> Shared<'a> {
        Shared {
            subplans,
            builds,
            engine: cx.engine,
            snap: cx.snap,
            db: cx.db,
            params: cx.params,
            env: cx.env,
            work_mem: cx.work_mem,
            temp: cx.temp,
        }
    }
}

/// Each group's key and its aggregates' states, as a worker leaves them.
type WorkerGroups = Vec<(Tuple, Vec<AggState>)>;

/// How a worker ended.
enum Outcome {
    Groups(WorkerGroups),
    /// Its groups outgrew hash_mem (parallel rule 5).
    Full,
    /// The leader stopped it.
    Stopped,
}

/// How often the leader, waiting for its workers, checks its interrupts.
const LEADER_CHECK: Duration = Duration::from_millis(10);

/// Parallel rule 4: `input` aggregated by `n` workers over their shares of its
/// parallel scan, their groups combined by the leader. None when a worker's groups
/// or the combined ones outgrow hash_mem: the leader then aggregates alone,
/// spilling as it must (parallel rule 5).
pub(super) fn aggregate(
    cx: &Ctx<'_>,
    input: &Plan,
    (keys, aggs): (&[Expr], &[Agg]),
    n: usize,
) -> SqlResult<Option<Vec<Tuple>>> {
    let subplans = subplans(cx, input)?;
    let builds = super::sharedhash::Builds::default();
    let shared = Shared::of(cx, &subplans, &builds);
    let blocks = Arc::new(AtomicU32::new(0));
    let stop = AtomicBool::new(false);
    let spent = Spent::default();
    let parts = std::thread::scope(|s| {
        let (tx, rx) = mpsc::channel();
        for _ in 0..n {
            let (tx, blocks, stop, spent) = (tx.clone(), blocks.clone(), &stop, &spent);
            let instr = super::instrument::current();
            s.spawn(move || {
                let _counted = super::instrument::Installed::new(instr);
                let run = |cx: &Ctx<'_>| partial(cx, input, (keys, aggs));
                let r = spent.count(|| in_worker(shared, blocks, stop, run));
                let r = match r {
                    Err(_) if stop.load(Ordering::Relaxed) => Ok(Outcome::Stopped),
                    r => r,
                };
                let _ = tx.send(r);
            });
        }
        drop(tx);
        collect(cx, &rx, n, &stop)
    });
    spent.hand_to_leader();
    let parts = parts?;
    if let (Some(i), Some(parts)) = (super::instrument::current(), &parts) {
        let groups = parts.iter().map(|p| p.len() as u64).sum();
        i.note_partial(input, n as u64, groups);
    }
    match parts {
        Some(parts) => combine(cx, (keys, aggs), parts),
        None => Ok(None),
    }
}

/// The leader's wait: every worker's groups (None if one's outgrew hash_mem), or
/// the first error. An interrupt of the leader (cancel, statement_timeout) or a
/// worker's error stops the others at their next page or 1024 rows.
fn collect(
    cx: &Ctx<'_>,
    rx: &mpsc::Receiver<SqlResult<Outcome>>,
    n: usize,
    stop: &AtomicBool,
) -> SqlResult<Option<Vec<WorkerGroups>>> {
    let (mut out, mut err, mut full) = (Vec::new(), None, false);
    let mut ended = 0;
    while ended < n {
        let r = match rx.recv_timeout(LEADER_CHECK) {
            Ok(r) => {
                ended += 1;
                r
            }
            Err(RecvTimeoutError::Timeout) => match (cx.check)() {
                Ok(()) => continue,
                Err(e) => Err(e),
            },
            // A worker panicked: the scope raises its panic here.
            Err(RecvTimeoutError::Disconnected) => break,
        };
        match r {
            Ok(Outcome::Groups(g)) => out.push(g),
            Ok(Outcome::Stopped) => {}
            Ok(Outcome::Full) => {
                full = true;
                stop.store(true, Ordering::Relaxed);
            }
            Err(e) => {
                err.get_or_insert(e);
                stop.store(true, Ordering::Relaxed);
            }
        }
    }
    match err {
        Some(e) => Err(e),
        None => Ok((!full).then_some(out)),
    }
}

/// Parallel rule 3: the plans of the subqueries in `input`'s expressions, by
/// their key, made by the leader: a worker has no catalog to plan them with. The
/// leader's own (not copies), so a worker's run of them is counted on their nodes.
fn subplans(cx: &Ctx<'_>, input: &Plan) -> SqlResult<Vec<(usize, Arc<Plan>)>> {
    let mut out = Vec::new();
    for n in crate::parallel::nodes(input) {
        let mut todo = crate::parallel::node_exprs(n).unwrap_or_default();
        while let Some(x) = todo.pop() {
            if let Expr::SubLink(l) = x {
                let key = &**l as *const crate::subquery::SubLink as usize;
                out.push((key, cx.plan_of(key, &l.query)?));
            }
            x.children(&mut todo);
        }
    }
    Ok(out)
}

/// Runs `f` in a worker's context: the leader's snapshot, settings and
/// parameters, its own subquery cache, the shared blocks of the plan's parallel
/// scan, and an interrupt check that sees the leader's stop (parallel rule 5).
fn in_worker<R>(
    sh: Shared<'_>,
    blocks: Arc<AtomicU32>,
    stop: &AtomicBool,
    f: impl FnOnce(&Ctx<'_>) -> SqlResult<R>,
) -> SqlResult<R> {
    let subs = SubCache::default();
    for (key, p) in sh.subplans {
        subs.plans.borrow_mut().insert(*key, p.clone());
    }
    let check = || match stop.load(Ordering::Relaxed) {
        true => Err(SqlError::new(
            "57014",
            "parallel worker stopped by its leader",
        )),
        false => Ok(()),
    };
    let no_rels = |_: &str| Ok(None);
    let no_views = |_: &str| Vec::new();
    let cx = Ctx {
        engine: sh.engine,
        txn: None,
        snap: sh.snap,
        rels: &no_rels,
        subs: &subs,
        outer: Vec::new(),
        db: sh.db,
        params: sh.params,
        env: sh.env,
        check: &check,
        work_mem: sh.work_mem,
        temp: sh.temp,
        views: &no_views,
        blocks: Some(blocks),
        builds: Some(sh.builds),
    };
    f(&cx)
}

/// One worker: its share of `input`'s rows aggregated (parallel rule 4).
fn partial(cx: &Ctx<'_>, input: &Plan, (keys, aggs): (&[Expr], &[Agg])) -> SqlResult<Outcome> {
    let mut op = build(input);
    let mut groups = Groups::new(cx, aggs, !keys.is_empty(), 0);
    let mut key: Tuple = Vec::with_capacity(keys.len());
    let mut n = 0u64;
    // Parallel rule 3: nothing in a parallel plan reaches the engine.
    let drained = op.drain(cx, true, &mut |row| {
        n += 1;
        if n.is_multiple_of(1024) {
            (cx.check)()?;
        }
        add_row(cx, (keys, aggs), &mut groups, &mut key, row)?;
        match groups.full {
            true => Err(SqlError::new("53200", "a worker's groups outgrew hash_mem")),
            false => Ok(()),
        }
    });
    match drained {
        Err(_) if groups.full => Ok(Outcome::Full),
        Err(e) => Err(e),
        Ok(()) => Ok(Outcome::Groups(groups.groups)),
    }
}

/// The leader's groups: each worker's combined into one per key; None if they
/// outgrow hash_mem.
fn combine(
    cx: &Ctx<'_>,
    (keys, aggs): (&[Expr], &[Agg]),
    parts: Vec<WorkerGroups>,
) -> SqlResult<Option<Vec<Tuple>>> {
    let mut groups = Groups::new(cx, aggs, !keys.is_empty(), 0);
    for (key, states) in parts.into_iter().flatten() {
        if !groups.combine(aggs, key, states)? {
            return Ok(None);
        }
    }
    Ok(Some(groups.finish(cx, aggs)?.0))
}

/// What a gathering worker sends its leader.
enum Msg {
    Rows(Vec<Tuple>),
    Done,
    Failed(SqlError),
}

/// Rows a gathering worker sends at a time.
const GATHER_BATCH: usize = 256;

/// A Gather (parallel rule 6): its input's rows from its workers, gathered at the
/// first pull; or, where workers may not run (in a transaction that has written,
/// or inside a worker), its input run by the leader alone.
pub(super) struct GatherOp<'a> {
    input: &'a Plan,
    workers: usize,
    state: Gathering<'a>,
}

enum Gathering<'a> {
    Unstarted,
    Alone(Op<'a>),
    Gathered(Gathered<'a>),
}

/// The rows gathered: up to hash_mem in memory, the rest in a temporary file.
struct Gathered<'t> {
    rows: std::vec::IntoIter<Tuple>,
    file: Option<crate::spill::TempFile<'t>>,
}

impl<'a> GatherOp<'a> {
    pub(super) fn new(input: &'a Plan, workers: usize) -> Self {
        GatherOp {
            input,
            workers,
            state: Gathering::Unstarted,
        }
    }
}

impl<'a> Node<'a> for GatherOp<'a> {
    fn next(&mut self, cx: &Ctx<'a>) -> SqlResult<Option<Tuple>> {
        if let Gathering::Unstarted = self.state {
            self.state = match (cx.txn, &cx.blocks) {
                (None, None) => Gathering::Gathered(gather(cx, self.input, self.workers)?),
                _ => Gathering::Alone(build(self.input)),
            };
        }
        match &mut self.state {
            Gathering::Alone(op) => op.next(cx),
            Gathering::Gathered(g) => match g.rows.next() {
                Some(r) => Ok(Some(r)),
                None => match &mut g.file {
                    Some(f) => Ok(f.read()?.and_then(|mut parts| parts.pop())),
                    None => Ok(None),
                },
            },
            Gathering::Unstarted => unreachable!("started above"),
        }
    }
}

/// Parallel rule 6: `input`'s rows from `n` workers sharing its scan, in the order
/// they come.
fn gather<'t>(cx: &Ctx<'t>, input: &Plan, n: usize) -> SqlResult<Gathered<'t>> {
    let subplans = subplans(cx, input)?;
    let builds = super::sharedhash::Builds::default();
    let shared = Shared::of(cx, &subplans, &builds);
    let blocks = Arc::new(AtomicU32::new(0));
    let stop = AtomicBool::new(false);
    let spent = Spent::default();
    let gathered = std::thread::scope(|s| {
        let (tx, rx) = mpsc::sync_channel(2 * n);
        for _ in 0..n {
            let (tx, blocks, stop, spent) = (tx.clone(), blocks.clone(), &stop, &spent);
            let instr = super::instrument::current();
            s.spawn(move || {
                let _counted = super::instrument::Installed::new(instr);
                let run = |cx: &Ctx<'_>| send_rows(cx, input, &tx);
                let msg = match spent.count(|| in_worker(shared, blocks, stop, run)) {
                    Ok(()) => Msg::Done,
                    Err(_) if stop.load(Ordering::Relaxed) => Msg::Done,
                    Err(e) => Msg::Failed(e),
                };
                let _ = tx.send(msg);
            });
        }
        drop(tx);
        // The receiver goes with `receive`: a worker still sending then stops.
        let r = receive(cx, rx, n);
        if r.is_err() {
            stop.store(true, Ordering::Relaxed);
        }
        r
    });
    spent.hand_to_leader();
    gathered
}

/// The workers' buffer accesses, added to the leader's when they have all ended
/// (`instrument` rule 5: a Gather and the nodes above it count its workers').
#[derive(Default)]
struct Spent(std::sync::Mutex<strata_engine::BufferUsage>);

impl Spent {
    /// Runs a worker's `f`, keeping the buffer accesses it made.
    fn count<T>(&self, f: impl FnOnce() -> T) -> T {
        let before = strata_engine::buffer_usage();
        let r = f();
        let d = strata_engine::buffer_usage().since(before);
        let mut all = self.0.lock().unwrap_or_else(|e| e.into_inner());
        *all = all.plus(d);
        r
    }

    fn hand_to_leader(self) {
        strata_engine::absorb_buffer_usage(self.0.into_inner().unwrap_or_else(|e| e.into_inner()));
    }
}

/// A worker's rows to its leader, a batch at a time.
fn send_rows(cx: &Ctx<'_>, input: &Plan, tx: &mpsc::SyncSender<Msg>) -> SqlResult<()> {
    let gone = |_| SqlError::new("57014", "parallel worker stopped by its leader");
    let mut op = build(input);
    let mut batch = Vec::with_capacity(GATHER_BATCH);
    while let Some(row) = op.next(cx)? {
        batch.push(row);
        if batch.len() == GATHER_BATCH {
            let full = std::mem::replace(&mut batch, Vec::with_capacity(GATHER_BATCH));
            tx.send(Msg::Rows(full)).map_err(gone)?;
        }
    }
    if !batch.is_empty() {
        tx.send(Msg::Rows(batch)).map_err(gone)?;
    }
    Ok(())
}

/// The leader's side of a Gather: every worker's rows, held up to hash_mem and
/// written to a temporary file past it (parallel rule 6); its interrupts checked
/// while it waits.
fn receive<'t>(cx: &Ctx<'t>, rx: mpsc::Receiver<Msg>, n: usize) -> SqlResult<Gathered<'t>> {
    let mut meter = Meter::new(cx, "Gather");
    let (mut rows, mut file) = (Vec::new(), None);
    let mut done = 0;
    while done < n {
        let batch = match rx.recv_timeout(LEADER_CHECK) {
            Ok(Msg::Rows(batch)) => batch,
            Ok(Msg::Done) => {
                done += 1;
                continue;
            }
            Ok(Msg::Failed(e)) => return Err(e),
            Err(RecvTimeoutError::Timeout) => {
                (cx.check)()?;
                continue;
            }
            // A worker panicked: the scope raises its panic.
            Err(RecvTimeoutError::Disconnected) => break,
        };
        for row in batch {
            if file.is_none() && meter.fits(&row, 0) {
                rows.push(row);
                continue;
            }
            let f = match &mut file {
                Some(f) => f,
                None => file.insert(crate::spill::TempFile::create(cx.temp)?),
            };
            f.write(&[&row])?;
        }
    }
    Ok(Gathered {
        rows: rows.into_iter(),
        file,
    })
}
