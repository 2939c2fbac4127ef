//! Helpers shared by the engine's integration tests: a cluster in a temporary
//! directory opened over any `Vfs` (the real disk or the simulated one), with its log
//! kept and its PANIC hook recording instead of exiting.
#![allow(dead_code)] // each test file uses some of them

use parking_lot::Mutex;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use strata_engine::*;
use strata_vfs::Vfs;

pub struct Cluster {
    _tmp: tempfile::TempDir,
    pub dir: PathBuf,
    pub logs: Arc<Mutex<Vec<String>>>,
    pub panicked: Arc<AtomicBool>,
}

impl Cluster {
    pub fn new() -> Cluster {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path().join("data");
        let c = Cluster {
            _tmp: tmp,
            dir,
            logs: Arc::default(),
            panicked: Arc::default(),
        };
        Engine::init(&c.dir, c.settings(strata_vfs::StdVfs::arc())).unwrap();
        c
    }

    /// Small pool (evictions write pages between checkpoints), small WAL segments
    /// (checkpoints remove WAL), and a PANIC hook that only records: the test stands in
    /// for the process exit.
    pub fn settings(&self, vfs: Arc<dyn Vfs>) -> Settings {
        let logs = self.logs.clone();
        let panicked = self.panicked.clone();
        Settings {
            shared_buffers_bytes: 256 << 10,
            wal_segment_bytes: 1 << 20,
            log: Arc::new(move |l: &str| logs.lock().push(l.to_string())),
            on_fatal: Arc::new(move |_: &str| panicked.store(true, Ordering::SeqCst)),
            vfs,
            ..Settings::default()
        }
    }

    pub fn open(&self, vfs: Arc<dyn Vfs>) -> Engine {
        Engine::open(&self.dir, self.settings(vfs)).unwrap()
    }

    pub fn log_text(&self) -> String {
        self.logs.lock().join("\n")
    }
}

/// Sets its flag when dropped: a test's racing threads stop however the thread
/// driving them ends (its loop done, or a panic).
pub struct StopOnDrop<'a>(pub &'a AtomicBool);

impl Drop for StopOnDrop<'_> {
    fn drop(&mut self) {
        self.0.store(true, Ordering::SeqCst);
    }
}
