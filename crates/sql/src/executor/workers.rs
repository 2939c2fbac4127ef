//! Parallel workers: a parallel aggregate's input run by threads that share its
//! scan's blocks (`parallel` rules 2-5), each aggregating the rows it reads; the
//! leader combines their groups.

use super::{add_row, build, Ctx, Groups, SubCache, Tuple};
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
    let shared = Shared {
        engine: cx.engine,
        snap: cx.snap,
        db: cx.db,
        params: cx.params,
        env: cx.env,
        work_mem: cx.work_mem,
        temp: cx.temp,
    };
    let blocks = Arc::new(AtomicU32::new(0));
    let stop = AtomicBool::new(false);
    let parts = std::thread::scope(|s| {
        let (tx, rx) = mpsc::channel();
        for _ in 0..n {
            let (tx, blocks, stop) = (tx.clone(), blocks.clone(), &stop);
            s.spawn(move || {
                let r = match partial(shared, input, (keys, aggs), blocks, stop) {
                    Err(_) if stop.load(Ordering::Relaxed) => Ok(Outcome::Stopped),
                    r => r,
                };
                let _ = tx.send(r);
            });
        }
        drop(tx);
        collect(cx, &rx, n, &stop)
    })?;
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

/// One worker: its share of `input`'s rows aggregated (parallel rule 4).
fn partial(
    sh: Shared<'_>,
    input: &Plan,
    (keys, aggs): (&[Expr], &[Agg]),
    blocks: Arc<AtomicU32>,
    stop: &AtomicBool,
) -> SqlResult<Outcome> {
    let subs = SubCache::default();
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
    };
    let mut op = build(input);
    let mut groups = Groups::new(&cx, aggs, !keys.is_empty(), 0);
    let mut key: Tuple = Vec::with_capacity(keys.len());
    let mut n = 0u64;
    // Parallel rule 3: nothing in a parallel plan reaches the engine.
    let drained = op.drain(&cx, true, &mut |row| {
        n += 1;
        if n.is_multiple_of(1024) {
            check()?;
        }
        add_row(&cx, (keys, aggs), &mut groups, &mut key, row)?;
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
        let g = match keys.is_empty() {
            true => 0,
            false => match groups.group(cx, aggs, &key)? {
                Some(g) => g,
                None => return Ok(None),
            },
        };
        for ((st, other), a) in groups.groups[g].1.iter_mut().zip(states).zip(aggs) {
            st.combine(a, other)?;
        }
    }
    Ok(Some(groups.finish(cx, aggs)?.0))
}
