//! Parallel hash joins' shared builds (parallel rule 7): the inner side of a
//! hash join marked parallel is run by the workers together, each reading a
//! share of its driving scan's blocks, and hashed once into one table all of
//! them probe (PostgreSQL's Parallel Hash).
//!
//! Rules (cited as "shared hash rule N"):
//! 1. A worker joins a build when its join is first pulled. While rows are being
//!    collected it adds its share; the last participant to finish hashes every
//!    share's rows into the one table. A worker arriving later waits for that
//!    table, or takes it when it is done.
//! 2. Each participant's share is bounded by hash_mem as a whole inner side is,
//!    so the table by the workers' hash_mem together, as their own tables were.
//!    A share past it turns the build over: every worker then runs the inner
//!    side whole itself, as an unshared join does (spilling as that may).
//! 3. A participant's error is kept by the build and returned to every worker
//!    waiting on it, so the leader reports the same error whichever worker it
//!    hears from first. A participant that panics leaves the build failed, so
//!    none waits for it. A waiting worker checks its interrupts (the leader's
//!    stop) every 10 ms.

use super::{Ctx, Hashed, Tuple};
use crate::{SqlError, SqlResult};
use std::collections::HashMap;
use std::sync::atomic::AtomicU32;
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::time::Duration;

/// The shared builds of one parallel run, by their join's plan node address.
#[derive(Default)]
pub(crate) struct Builds {
    map: Mutex<HashMap<usize, Arc<Build>>>,
}

impl Builds {
    /// The build of the join at plan node address `key`.
    pub(super) fn get(&self, key: usize) -> Arc<Build> {
        let mut map = self.map.lock().unwrap_or_else(|e| e.into_inner());
        map.entry(key).or_default().clone()
    }
}

/// One join's shared build.
#[derive(Default)]
pub(super) struct Build {
    /// The next block of the inner side's driving scan.
    pub(super) blocks: Arc<AtomicU32>,
    state: Mutex<State>,
    ready: Condvar,
}

#[derive(Default)]
enum State {
    /// No worker has arrived.
    #[default]
    Unstarted,
    /// Participants adding their shares: how many are at it, the rows so far.
    Collecting {
        active: usize,
        rows: Vec<Tuple>,
    },
    /// The last participant hashing the rows.
    Hashing,
    Done(Arc<Hashed>),
    /// A share passed hash_mem: each worker runs the inner side whole (rule 2).
    Whole,
    /// A participant's error (rule 3); None if it panicked.
    Failed(Option<SqlError>),
}

/// What a worker does at a build.
pub(super) enum Step {
    /// Adds its share of the rows ([`Build::add`]).
    Collect(Participant),
    /// Hashes every share's rows, being the last ([`Participant::done`]).
    Hash(Participant, Vec<Tuple>),
    /// Probes the table.
    Probe(Arc<Hashed>),
    /// Runs the inner side whole (rule 2).
    Whole,
}

/// A participant's place in a build: dropped before it has added its share or,
/// the last, hashed the rows (an error or a panic on the way), it fails the
/// build (rule 3).
pub(super) struct Participant {
    build: Arc<Build>,
    added: bool,
}

impl Participant {
    /// The last participant's table, or its error, for the waiting workers.
    pub(super) fn done(mut self, hashed: &SqlResult<Arc<Hashed>>) {
        self.added = true;
        self.build.finish(match hashed {
            Ok(h) => State::Done(h.clone()),
            Err(e) => State::Failed(Some(e.clone())),
        });
    }
}

impl Drop for Participant {
    fn drop(&mut self) {
        if !self.added {
            self.build.finish(State::Failed(None));
        }
    }
}

/// How often a waiting worker checks its interrupts (rule 3).
const WAIT_CHECK: Duration = Duration::from_millis(10);

impl Build {
    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Rule 1: a worker's arrival: to collect while rows are being collected,
    /// else the table (or rule 2's whole run) once there is one.
    pub(super) fn join(self: &Arc<Self>, cx: &Ctx<'_>) -> SqlResult<Step> {
        let mut st = self.lock();
        match &mut *st {
            State::Unstarted => {
                *st = State::Collecting {
                    active: 1,
                    rows: Vec::new(),
                }
            }
            State::Collecting { active, .. } => *active += 1,
            _ => return self.wait(cx, st),
        }
        Ok(Step::Collect(Participant {
            build: self.clone(),
            added: false,
        }))
    }

    /// Rules 1–3: a participant's share (None past hash_mem, or its error); the
    /// last one's step is to hash every share's rows.
    pub(super) fn add(
        &self,
        cx: &Ctx<'_>,
        mut p: Participant,
        share: SqlResult<Option<Vec<Tuple>>>,
    ) -> SqlResult<Step> {
        p.added = true;
        let mut st = self.lock();
        let last = match (&mut *st, share) {
            (_, Err(e)) => {
                drop(st);
                self.finish(State::Failed(Some(e.clone())));
                return Err(e);
            }
            (State::Collecting { .. }, Ok(None)) => {
                drop(st);
                self.finish(State::Whole);
                return Ok(Step::Whole);
            }
            (State::Collecting { active, rows }, Ok(Some(mine))) => {
                rows.extend(mine);
                *active -= 1;
                *active == 0
            }
            _ => false,
        };
        if !last {
            return self.wait(cx, st);
        }
        match std::mem::replace(&mut *st, State::Hashing) {
            State::Collecting { rows, .. } => {
                p.added = false;
                Ok(Step::Hash(p, rows))
            }
            _ => unreachable!("the last participant finds the rows collected"),
        }
    }

    fn finish(&self, to: State) {
        let mut st = self.lock();
        if !matches!(*st, State::Done(_) | State::Whole | State::Failed(_)) {
            *st = to;
        }
        drop(st);
        self.ready.notify_all();
    }

    /// Waits until the build is done, turned over or failed (rule 3).
    fn wait<'s>(&'s self, cx: &Ctx<'_>, mut st: MutexGuard<'s, State>) -> SqlResult<Step> {
        loop {
            match &*st {
                State::Done(h) => return Ok(Step::Probe(h.clone())),
                State::Whole => return Ok(Step::Whole),
                State::Failed(Some(e)) => return Err(e.clone()),
                State::Failed(None) => {
                    return Err(SqlError::new(
                        "57014",
                        "parallel worker stopped: another worker building a hash table failed",
                    ))
                }
                _ => {}
            }
            drop(st);
            (cx.check)()?;
            st = self.lock();
            if matches!(*st, State::Collecting { .. } | State::Hashing) {
                st = self
                    .ready
                    .wait_timeout(st, WAIT_CHECK)
                    .unwrap_or_else(|e| e.into_inner())
                    .0;
            }
        }
    }
}
