//! Durability through I/O errors and power loss, on a simulated disk (`strata_vfs::sim`):
//! an EIO or ENOSPC on write or fsync of each kind of file (data fork, WAL, pg_xact,
//! pg_control) is a PANIC that latches, and after a power loss and restart every
//! acknowledged commit is there; a crashed process's unsynced writes are made durable by
//! the next one's recovery; a failed commit record never takes the abort path; WAL that
//! ends before the checkpoint is refused, not cut.

mod common;
use common::Cluster;
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use strata_engine::*;
use strata_vfs::sim::{Fault, FaultErrno, FaultOp, SimVfs};
use strata_vfs::{FileKind, Vfs};

fn cols() -> Vec<Column> {
    vec![
        Column::new("id", ColType::Int4),
        Column::new("s", ColType::Text),
    ]
}

fn rows(r: std::ops::Range<i32>) -> Vec<Vec<Datum>> {
    r.map(|i| vec![Datum::Int4(i), Datum::Text(format!("row {i:>200}"))])
        .collect()
}

fn ids(e: &Engine, t: &str) -> Vec<i32> {
    let mut v: Vec<i32> = e
        .scan("postgres", t)
        .unwrap()
        .into_iter()
        .map(|r| match r[0] {
            Datum::Int4(i) => i,
            _ => panic!("bad row"),
        })
        .collect();
    v.sort();
    v
}

/// Commits batches of 40 rows into `t`, each followed by a checkpoint when
/// `checkpoint_each`; records the acknowledged batches and the first in doubt (its
/// commit returned an error). Errors are expected once a fault hits; work goes on, as a
/// careless server would, so that a later checkpoint gets the chance to declare
/// something durable that is not.
fn run_batches(
    e: &Engine,
    batches: std::ops::Range<i32>,
    acked: &mut Vec<i32>,
    in_doubt: &mut Option<i32>,
) {
    for batch in batches {
        let mut txn = e.begin();
        let first = batch * 40;
        if txn
            .insert("postgres", "t", &rows(first..first + 40))
            .is_err()
        {
            let _ = txn.abort();
            continue;
        }
        match txn.commit() {
            Ok(()) => acked.push(batch),
            Err(_) if in_doubt.is_none() => *in_doubt = Some(batch),
            Err(_) => {}
        }
        if batch % 3 == 2 {
            let _ = e.checkpoint();
        }
    }
}

fn expect_batches(found: &[i32], acked: &[i32], in_doubt: Option<i32>, what: &str) {
    let mut batches: Vec<i32> = found.iter().map(|i| i / 40).collect();
    batches.dedup();
    for b in acked {
        let n = found.iter().filter(|i| *i / 40 == *b).count();
        assert_eq!(n, 40, "{what}: acknowledged batch {b} has {n} of 40 rows");
    }
    for b in &batches {
        let n = found.iter().filter(|i| *i / 40 == *b).count();
        assert!(
            acked.contains(b) || (Some(*b) == in_doubt && n == 40),
            "{what}: batch {b} ({n} rows) was never acknowledged"
        );
    }
}

/// One fault: arm it after some operations of its kind, run the workload, lose power,
/// recover on the real disk, and check every acknowledged commit.
fn fault_case(kind: FileKind, op: FaultOp, errno: FaultErrno, after: u64, seed: u64) {
    let what = format!("{kind:?} {op:?} {errno:?} after {after}");
    let c = Cluster::new();
    let sim = SimVfs::new(None, false).unwrap();
    let e = c.open(Arc::new(sim.clone()));
    let mut txn = e.begin();
    txn.create_table("postgres", "t", &cols(), None).unwrap();
    txn.commit().unwrap();
    e.checkpoint().unwrap();
    let (mut acked, mut in_doubt) = (Vec::new(), None);
    run_batches(&e, 0..15, &mut acked, &mut in_doubt);
    // The fault hits the last batch or the checkpoints after it; two more checkpoints
    // with nothing new to write follow, as the checkpointer would run them.
    sim.arm(Fault {
        kind,
        op,
        errno,
        after,
    });
    run_batches(&e, 15..16, &mut acked, &mut in_doubt);
    for _ in 0..3 {
        let _ = e.checkpoint();
    }
    assert!(!sim.injected().is_empty(), "{what}: the fault never hit");
    assert!(
        c.panicked.load(Ordering::SeqCst),
        "{what}: a failed {op:?} of {kind:?} must PANIC\n{}",
        c.log_text()
    );
    assert!(c.log_text().contains("PANIC:"), "{what}: PANIC is logged");
    // After the PANIC nothing is accepted (engine rule 7).
    assert!(e.checkpoint().is_err(), "{what}: a checkpoint after PANIC");
    e.abandon();
    sim.power_loss(seed).unwrap();
    let e = c.open(strata_vfs::StdVfs::arc());
    expect_batches(&ids(&e, "t"), &acked, in_doubt, &what);
    e.close().unwrap();
}

#[test]
fn eio_and_enospc_on_each_file_kind_lose_no_acknowledged_commit() {
    let seed = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_nanos() as u64;
    eprintln!("seed {seed}");
    let kinds = [
        FileKind::Data,
        FileKind::Wal,
        FileKind::Xact,
        FileKind::Control,
    ];
    let mut i = 0;
    for kind in kinds {
        for op in [FaultOp::Write, FaultOp::Sync] {
            for (errno, after) in [(FaultErrno::Eio, 0), (FaultErrno::Enospc, 0)] {
                i += 1;
                fault_case(kind, op, errno, after, seed.wrapping_add(i));
            }
        }
    }
}

/// Writes that a crashed process handed to the kernel but never synced, and that
/// replay therefore never rewrites (their pages are already newer than the WAL, and
/// without full-page writes nothing restores them), are made durable by the next
/// process's recovery before it trusts them (recovery rule 7).
#[test]
fn recovery_makes_a_crashed_processes_unsynced_writes_durable() {
    for seed in 0..8 {
        crashed_writes_case(seed);
    }
}

fn crashed_writes_case(seed: u64) {
    let c = Cluster::new();
    let journal = c.dir.parent().unwrap().join("sim.journal");
    let no_fpw = |vfs: Arc<dyn Vfs>| Settings {
        full_page_writes: false,
        ..c.settings(vfs)
    };
    let first = SimVfs::new(Some(&journal), false).unwrap();
    let e = Engine::open(&c.dir, no_fpw(Arc::new(first))).unwrap();
    let mut txn = e.begin();
    txn.create_table("postgres", "t", &cols(), None).unwrap();
    txn.create_table("postgres", "filler", &cols(), None)
        .unwrap();
    txn.insert("postgres", "t", &rows(0..800)).unwrap();
    txn.commit().unwrap();
    e.checkpoint().unwrap(); // t's pages are durable as they are now
    for k in 0..10 {
        let mut txn = e.begin();
        let pred = move |r: &[Datum]| matches!(r[0], Datum::Int4(i) if i % 20 == k);
        txn.delete_where("postgres", "t", &pred).unwrap();
        txn.commit().unwrap();
    }
    // Push t's changed pages out of the small pool: they reach the kernel, unsynced.
    let mut txn = e.begin();
    txn.insert("postgres", "filler", &rows(0..2000)).unwrap();
    txn.commit().unwrap();
    e.abandon(); // a process crash: the page cache keeps everything

    let second = SimVfs::new(Some(&journal), false).unwrap();
    assert!(
        second.unsynced_changes() > 0,
        "the crash left unsynced writes"
    );
    let e = Engine::open(&c.dir, no_fpw(Arc::new(second.clone()))).unwrap();
    assert!(c.log_text().contains("syncing data directory"));
    e.abandon();
    second.power_loss(seed).unwrap(); // whatever the second process did not make durable

    let e = c.open(strata_vfs::StdVfs::arc());
    let want: Vec<i32> = (0..800).filter(|i| i % 20 >= 10).collect();
    assert_eq!(ids(&e, "t"), want, "seed {seed}");
    e.close().unwrap();
}

/// A commit whose record cannot be flushed is in doubt: it PANICs and never takes the
/// abort path, which would remove the files its durable commit record still needs.
#[test]
fn a_failed_commit_record_panics_instead_of_aborting() {
    let c = Cluster::new();
    let sim = SimVfs::new(None, false).unwrap();
    let e = c.open(Arc::new(sim.clone()));
    let before = txn_table_files(&c.dir);
    let mut txn = e.begin();
    txn.create_table("postgres", "t", &cols(), None).unwrap();
    txn.insert("postgres", "t", &rows(0..10)).unwrap();
    let key = txn_table_files(&c.dir);
    assert!(key.len() > before.len());
    sim.arm(Fault::parse("wal:sync:eio:0").unwrap());
    let err = txn.commit().unwrap_err();
    assert!(matches!(err, EngineError::Fatal(_)), "{err}");
    assert!(c.panicked.load(Ordering::SeqCst));
    assert_eq!(
        txn_table_files(&c.dir),
        key,
        "no file of the table was removed"
    );
    e.abandon();
    // In doubt: the failed fsync may have lost the record (the simulated kernel drops
    // the file's unsynced pages). All of it or none of it, and no orphan file.
    let e = c.open(strata_vfs::StdVfs::arc());
    match e.table("postgres", "t") {
        Ok(_) => assert_eq!(ids(&e, "t"), (0..10).collect::<Vec<_>>()),
        Err(_) => assert_eq!(txn_table_files(&c.dir), before),
    }
    e.close().unwrap();
}

fn txn_table_files(dir: &Path) -> Vec<String> {
    let mut v: Vec<String> = std::fs::read_dir(dir.join("base/5"))
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    v.sort();
    v
}

/// WAL that ends before the checkpoint record recovery starts from is corruption:
/// recovery stops naming both LSNs and leaves the log as it was (recovery rule 8).
#[test]
fn wal_ending_before_the_checkpoint_stops_recovery_without_cutting() {
    let c = Cluster::new();
    let e = c.open(strata_vfs::StdVfs::arc());
    let mut txn = e.begin();
    txn.create_table("postgres", "t", &cols(), None).unwrap();
    txn.commit().unwrap();
    // An online checkpoint with records between its redo point and its own record: a
    // writer runs while it does.
    let stop = AtomicBool::new(false);
    let control = std::thread::scope(|s| {
        s.spawn(|| {
            let mut i = 0;
            while !stop.load(Ordering::SeqCst) {
                let mut txn = e.begin();
                txn.insert("postgres", "t", &rows(i..i + 10)).unwrap();
                txn.commit().unwrap();
                i += 10;
            }
        });
        let vfs = strata_vfs::StdVfs;
        for _ in 0..1000 {
            e.checkpoint().unwrap();
            let control = strata_wal::control::ControlFile::read(&vfs, &c.dir).unwrap();
            if control.redo < control.checkpoint {
                stop.store(true, Ordering::SeqCst);
                return control;
            }
        }
        panic!("no checkpoint overlapped a write");
    });
    e.abandon();
    // Damage the first record after the redo point (its CRC field).
    let seg = control.wal_segment_bytes;
    let name = strata_wal::segment_file_name(1, control.redo.0 / seg, seg);
    let path = c.dir.join("pg_wal").join(name);
    let mut bytes = std::fs::read(&path).unwrap();
    bytes[(control.redo.0 % seg) as usize + 4] ^= 0xff;
    std::fs::write(&path, &bytes).unwrap();
    let err = match Engine::open(&c.dir, c.settings(strata_vfs::StdVfs::arc())) {
        Ok(_) => panic!("recovery must refuse WAL that ends before its checkpoint"),
        Err(e) => e.to_string(),
    };
    assert!(
        err.contains(&control.checkpoint.to_string())
            && err.contains(&control.redo.to_string())
            && err.contains("before the end of the checkpoint record"),
        "{err}"
    );
    assert_eq!(std::fs::read(&path).unwrap(), bytes, "the WAL was not cut");
}

/// Every directory of a cluster is 0700 and every file 0600, as PostgreSQL's
/// (vfs rule 4): nothing a cluster writes is readable by group or others.
#[test]
fn cluster_files_are_private_to_their_owner() {
    use std::os::unix::fs::PermissionsExt;
    let c = Cluster::new();
    let e = c.open(strata_vfs::StdVfs::arc());
    let mut txn = e.begin();
    txn.create_table("postgres", "t", &cols(), None).unwrap();
    txn.insert("postgres", "t", &rows(0..100)).unwrap();
    txn.commit().unwrap();
    e.checkpoint().unwrap();
    e.close().unwrap();
    let mut stack = vec![c.dir.clone()];
    let mut files = 0;
    while let Some(d) = stack.pop() {
        let mode = std::fs::metadata(&d).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o700, "{}", d.display());
        for entry in std::fs::read_dir(&d).unwrap() {
            let p = entry.unwrap().path();
            if p.is_dir() {
                stack.push(p);
            } else {
                let mode = std::fs::metadata(&p).unwrap().permissions().mode() & 0o777;
                assert_eq!(mode, 0o600, "{}", p.display());
                files += 1;
            }
        }
    }
    assert!(files >= 8, "{files} files");
}
