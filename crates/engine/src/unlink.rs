//! Dropped relations' files, removed after their commit rather than in it (engine
//! rule 5).
//!
//! A commit that drops relations (or its replay) forgets their buffers at once, then
//! queues their files here ([`Unlinks::defer`]) and returns: the session's COMMIT,
//! and a standby's report that it applied the commit, do not wait for the kernel to
//! search a directory of many relations. The unlinker thread removes them at once,
//! off that path. PostgreSQL defers the main fork's unlink past the next checkpoint;
//! Strata's deferral is shorter.
//!
//! Rules (cited as "unlink rule N"):
//! 1. Queued under the redo-pointer lock (shared), settled by every checkpoint and
//!    restartpoint before its sync phase ([`Unlinks::settle`]): a redo point never
//!    passes a durable drop whose files are still there, so a crash at any moment
//!    leaves either the files gone or their drop in the WAL to replay.
//! 2. [`Unlinks::settle`] returns only when everything queued before it was called is
//!    gone, including a batch the unlinker thread is removing: one batch at a time.
//! 3. A queued relation has no buffers and no catalog entry: nothing reads or writes
//!    its files, so removing them needs no lock but the queue's. DROP TABLESPACE
//!    settles first, so the files it finds are those of live relations.
//! 4. The thread starts a batch [`UNLINK_DELAY`] after it is woken: the removals of
//!    a commit do not compete for a CPU with the commit's own return, nor, on a
//!    synchronous standby's host, with its replication; drops in quick succession
//!    go in one batch.
//! 5. A failed removal is logged as a WARNING, as a failed removal in the commit was;
//!    the storage manager is latched failed by it (smgr rule 4), so the next
//!    checkpoint fails and the restart's replay removes the files.

use crate::Shared;
use parking_lot::{Condvar, Mutex};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Duration;
use strata_smgr::Smgr;
use strata_types::RelKey;

/// How long the unlinker waits after being woken before it removes (rule 4).
pub const UNLINK_DELAY: Duration = Duration::from_millis(10);

/// The queue of dropped relations whose files are still to go.
#[derive(Default)]
pub struct Unlinks {
    queue: Mutex<Vec<RelKey>>,
    cv: Condvar,
    /// Held while a batch is removed (rule 2).
    busy: Mutex<()>,
    stop: AtomicBool,
    /// While set, the thread leaves the queue alone (tests of rule 1).
    paused: AtomicBool,
}

impl Unlinks {
    /// Queues relations whose buffers are gone and whose drop is durable (or
    /// replayed), and wakes the unlinker.
    pub(crate) fn defer(&self, rels: &[RelKey]) {
        if rels.is_empty() {
            return;
        }
        self.queue.lock().extend_from_slice(rels);
        self.cv.notify_one();
    }

    /// Removes every queued relation's files, after any batch in progress (rule 2).
    /// Returns how many relations it removed.
    pub(crate) fn settle(&self, smgr: &Smgr) -> strata_smgr::Result<usize> {
        let _one = self.busy.lock();
        let batch = std::mem::take(&mut *self.queue.lock());
        smgr.unlink(&batch)?;
        Ok(batch.len())
    }

    /// Stops (or restarts) the thread's removals; settling still removes.
    pub(crate) fn pause(&self, on: bool) {
        self.paused.store(on, Ordering::Release);
        let _q = self.queue.lock();
        self.cv.notify_all();
    }

    /// Asks the unlinker thread to end (what is queued stays for the shutdown
    /// checkpoint, or for replay after a crash).
    pub(crate) fn stop(&self) {
        self.stop.store(true, Ordering::Release);
        let _q = self.queue.lock();
        self.cv.notify_all();
    }
}

/// The unlinker thread: waits for queued relations and removes them (rule 5 on
/// failure), until [`Unlinks::stop`].
pub(crate) fn spawn_unlinker(sh: Arc<Shared>) -> JoinHandle<()> {
    std::thread::Builder::new()
        .name("unlinker".into())
        .spawn(move || loop {
            {
                let mut q = sh.unlinks.queue.lock();
                let u = &sh.unlinks;
                while (q.is_empty() || u.paused.load(Ordering::Acquire))
                    && !u.stop.load(Ordering::Acquire)
                {
                    sh.unlinks.cv.wait(&mut q);
                }
                if sh.unlinks.stop.load(Ordering::Acquire) {
                    return;
                }
            }
            std::thread::sleep(UNLINK_DELAY); // rule 4
            if let Err(e) = sh.unlinks.settle(&sh.smgr) {
                sh.log(&format!(
                    "WARNING:  could not remove dropped files after commit: {e}"
                ));
            }
        })
        .expect("spawn unlinker thread")
}
