//! Crash recovery in one process: `Engine::abandon` stops without flushing anything,
//! as a crash would, and the next `open` replays. Each test checks rows and files. Also:
//! a running online backup keeps the WAL from its start through checkpoints.

use parking_lot::Mutex;
use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use strata_engine::*;
use strata_types::{ForkNumber, RelKey};

struct Cluster {
    _tmp: tempfile::TempDir,
    dir: PathBuf,
    logs: Arc<Mutex<Vec<String>>>,
}

impl Cluster {
    fn new() -> Cluster {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path().join("data");
        let c = Cluster {
            _tmp: tmp,
            dir,
            logs: Arc::default(),
        };
        Engine::init(&c.dir, c.settings()).unwrap();
        c
    }
    fn settings(&self) -> Settings {
        let logs = self.logs.clone();
        Settings {
            shared_buffers_bytes: 2 << 20,
            wal_segment_bytes: 1 << 20,
            log: Arc::new(move |l: &str| logs.lock().push(l.to_string())),
            ..Settings::default()
        }
    }
    fn open(&self) -> Engine {
        self.logs.lock().clear();
        Engine::open(&self.dir, self.settings()).unwrap()
    }
    fn log_has(&self, s: &str) -> bool {
        self.logs.lock().iter().any(|l| l.contains(s))
    }
    fn log_text(&self) -> String {
        self.logs.lock().join("\n")
    }
}

fn cols() -> Vec<Column> {
    vec![
        Column::new("id", ColType::Int4),
        Column::new("s", ColType::Text),
    ]
}

fn rows(r: std::ops::Range<i32>) -> Vec<Vec<Datum>> {
    r.map(|i| vec![Datum::Int4(i), Datum::Text(format!("row {i}"))])
        .collect()
}

fn ids(e: &Engine, db: &str, t: &str) -> Vec<i32> {
    let mut v: Vec<i32> = e
        .scan(db, t)
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

/// Relation file numbers present in a database directory (any fork).
fn files_in(dir: &Path) -> BTreeSet<u64> {
    let Ok(rd) = std::fs::read_dir(dir) else {
        return BTreeSet::new();
    };
    rd.flatten()
        .filter_map(|e| {
            let n = e.file_name().to_string_lossy().to_string();
            n.split(['_', '.']).next().and_then(|x| x.parse().ok())
        })
        .collect()
}

/// Every relation file of `db` belongs to a committed table or is its pg_class or
/// pg_statistic.
fn assert_files_match_catalog(e: &Engine, db: &str) {
    let dbe = e.databases().into_iter().find(|d| d.name == db).unwrap();
    let mut expect: BTreeSet<u64> = e
        .tables(db)
        .unwrap()
        .iter()
        .filter(|r| r.reltablespace.0 == 0)
        .map(|r| r.relfilenumber.0)
        .collect();
    expect.insert(1259);
    expect.insert(2619);
    let dir = e.smgr().database_dir(dbe.spc, dbe.oid);
    assert_eq!(files_in(&dir), expect, "files of {db} in {}", dir.display());
}

/// Every page of every file of a directory verifies.
fn assert_checksums(dir: &Path) {
    for entry in std::fs::read_dir(dir).unwrap().flatten() {
        let bytes = std::fs::read(entry.path()).unwrap();
        assert_eq!(bytes.len() % 8192, 0, "{}", entry.path().display());
        for (i, page) in bytes.chunks(8192).enumerate() {
            let p: &[u8; 8192] = page.try_into().unwrap();
            strata_page::verify(p, strata_types::BlockNumber(i as u32))
                .unwrap_or_else(|e| panic!("{} block {i}: {e}", entry.path().display()));
        }
    }
}

#[test]
fn bootstrap_makes_the_initdb_catalog_and_restarts_cleanly() {
    let c = Cluster::new();
    let e = c.open();
    let names: Vec<String> = e.databases().into_iter().map(|d| d.name).collect();
    assert_eq!(names, ["template1", "template0", "postgres"]);
    let spcs: Vec<String> = e.tablespaces().into_iter().map(|s| s.name).collect();
    assert_eq!(spcs, ["pg_default", "pg_global"]);
    assert!(c.log_has("database system was shut down"));
    e.close().unwrap();
    let e = c.open();
    assert_eq!(e.databases().len(), 3);
    // A second init over a cluster is refused.
    assert!(matches!(
        Engine::init(&c.dir, c.settings()),
        Err(EngineError::NotEmpty(_))
    ));
    drop(e);
    let nowhere = c.dir.join("nope");
    assert!(matches!(
        Engine::open(&nowhere, c.settings()),
        Err(EngineError::NotACluster(_))
    ));
}

#[test]
fn committed_work_survives_a_crash_and_unfinished_work_leaves_nothing() {
    let c = Cluster::new();
    let e = c.open();
    let mut t = e.begin();
    t.create_table("postgres", "a", &cols(), None).unwrap();
    t.insert("postgres", "a", &rows(0..500)).unwrap();
    t.commit().unwrap();
    e.checkpoint().unwrap();
    let mut t = e.begin();
    t.insert("postgres", "a", &rows(500..600)).unwrap();
    t.create_table("postgres", "b", &cols(), None).unwrap();
    t.insert("postgres", "b", &rows(0..10)).unwrap();
    t.commit().unwrap();
    // An aborted transaction's table goes at once.
    let mut t = e.begin();
    t.create_table("postgres", "aborted", &cols(), None)
        .unwrap();
    t.insert("postgres", "a", &rows(1000..1010)).unwrap();
    t.abort().unwrap();
    assert_files_match_catalog(&e, "postgres");
    // Unfinished at the crash: a create, inserts and a drop.
    let mut t = e.begin();
    t.create_table("postgres", "c", &cols(), None).unwrap();
    t.insert("postgres", "c", &rows(0..100)).unwrap();
    t.insert("postgres", "a", &rows(2000..2050)).unwrap();
    t.drop_table("postgres", "b").unwrap();
    let dbdir = e
        .smgr()
        .database_dir(strata_types::DEFAULT_TABLESPACE, POSTGRES_OID);
    assert_eq!(
        files_in(&dbdir).len(),
        5,
        "pg_class, pg_statistic, a, b and c's file exist now"
    );
    std::mem::forget(t); // the process dies with the transaction open
    e.abandon();

    let e = c.open();
    assert!(c.log_has("redo done at"), "{}", c.log_text());
    assert_eq!(ids(&e, "postgres", "a"), (0..600).collect::<Vec<_>>());
    assert_eq!(ids(&e, "postgres", "b"), (0..10).collect::<Vec<_>>());
    assert!(matches!(
        e.scan("postgres", "c"),
        Err(EngineError::UndefinedTable(_))
    ));
    assert_files_match_catalog(&e, "postgres");
    e.close().unwrap();
    assert_checksums(&dbdir);
}

#[test]
fn replay_removes_files_of_a_drop_whose_unlink_the_crash_prevented() {
    let c = Cluster::new();
    let e = c.open();
    let mut t = e.begin();
    for i in 0..20 {
        t.create_table("postgres", &format!("t{i}"), &cols(), None)
            .unwrap();
        t.insert("postgres", &format!("t{i}"), &rows(0..i)).unwrap();
    }
    t.commit().unwrap();
    e.checkpoint().unwrap();
    let dbdir = e
        .smgr()
        .database_dir(strata_types::DEFAULT_TABLESPACE, POSTGRES_OID);
    // Keep copies of the files, to put back after the crash: as if the process died
    // after the commit record was durable and before the files were removed.
    let saved = tempfile::tempdir().unwrap();
    for entry in std::fs::read_dir(&dbdir).unwrap().flatten() {
        std::fs::copy(entry.path(), saved.path().join(entry.file_name())).unwrap();
    }
    let mut t = e.begin();
    for i in 0..10 {
        t.drop_table("postgres", &format!("t{i}")).unwrap();
    }
    t.commit().unwrap();
    e.settle_unlinks().unwrap(); // the unlinker's work, done now
    assert_files_match_catalog(&e, "postgres");
    e.abandon();
    for entry in std::fs::read_dir(saved.path()).unwrap().flatten() {
        let dst = dbdir.join(entry.file_name());
        if !dst.exists() {
            std::fs::copy(entry.path(), dst).unwrap();
        }
    }
    let e = c.open();
    assert!(c.log_has("Transaction/COMMIT"), "{}", c.log_text());
    assert_eq!(e.tables("postgres").unwrap().len(), 10);
    assert_files_match_catalog(&e, "postgres");
    for i in 10..20 {
        assert_eq!(ids(&e, "postgres", &format!("t{i}")).len(), i);
    }
}

#[test]
fn vacuum_removes_dead_rows_and_truncates_every_fork_with_one_record() {
    let c = Cluster::new();
    let e = c.open();
    let mut t = e.begin();
    t.create_table("postgres", "d", &cols(), None).unwrap();
    t.insert("postgres", "d", &rows(0..2000)).unwrap();
    t.commit().unwrap();
    e.vacuum("postgres", Some("d")).unwrap(); // makes the FSM and VM, sets VM bits
    let key = e.table_key("postgres", "d").unwrap();
    let main = e.smgr().nblocks(key, ForkNumber::Main).unwrap();
    assert!(main > 5, "{main} pages");
    assert!(e.smgr().exists(key, ForkNumber::Fsm) && e.smgr().exists(key, ForkNumber::Vm));
    e.checkpoint().unwrap();
    // Delete the upper half: the tail pages empty, the head stays.
    let mut t = e.begin();
    let n = t
        .delete_where(
            "postgres",
            "d",
            &|r| matches!(r[0], Datum::Int4(i) if i >= 1000),
        )
        .unwrap();
    assert_eq!(n, 1000);
    t.commit().unwrap();
    let truncated = e.vacuum("postgres", Some("d")).unwrap();
    let after = e.smgr().nblocks(key, ForkNumber::Main).unwrap();
    assert!(truncated > 0 && after < main, "{after} of {main}");
    assert_eq!(after as u64 + truncated, main as u64);
    // Rows inserted after the vacuum reuse the freed space or extend again.
    let mut t = e.begin();
    t.insert("postgres", "d", &rows(5000..5100)).unwrap();
    t.commit().unwrap();
    // Delete everything: all forks go to zero length.
    let mut t = e.begin();
    t.delete_where("postgres", "d", &|_| true).unwrap();
    t.commit().unwrap();
    e.vacuum("postgres", Some("d")).unwrap();
    for fork in [ForkNumber::Main, ForkNumber::Fsm, ForkNumber::Vm] {
        assert_eq!(e.smgr().nblocks(key, fork).unwrap(), 0, "{fork}");
    }
    let mut t = e.begin();
    t.insert("postgres", "d", &rows(7000..7003)).unwrap();
    t.commit().unwrap();
    e.abandon();
    let e = c.open();
    let log = c.log_text();
    let truncates = log
        .lines()
        .find(|l| l.contains("Storage/TRUNCATE"))
        .unwrap_or_else(|| panic!("{log}"));
    assert!(
        truncates.contains(" 2 records"),
        "one record per vacuum: {truncates}"
    );
    assert_eq!(ids(&e, "postgres", "d"), vec![7000, 7001, 7002]);
    assert_eq!(e.smgr().nblocks(key, ForkNumber::Main).unwrap(), 1);
    e.close().unwrap();
    assert_checksums(&c.dir.join("base").join(POSTGRES_OID.to_string()));
}

#[test]
fn create_database_copies_the_template_by_either_strategy() {
    let c = Cluster::new();
    let e = c.open();
    let mut t = e.begin();
    t.create_table("template1", "seed", &cols(), None).unwrap();
    t.insert("template1", "seed", &rows(0..300)).unwrap();
    t.commit().unwrap();
    e.checkpoint().unwrap();
    for (name, strategy) in [
        ("fc", CreateDbStrategy::FileCopy),
        ("wl", CreateDbStrategy::WalLog),
    ] {
        let mut t = e.begin();
        t.create_database(name, "template1", None, strategy)
            .unwrap();
        t.commit().unwrap();
        assert_eq!(ids(&e, name, "seed"), (0..300).collect::<Vec<_>>());
        // The copies are independent of the template and of each other.
        let mut t = e.begin();
        t.insert(name, "seed", &rows(1000..1001)).unwrap();
        t.commit().unwrap();
    }
    // An aborted CREATE DATABASE leaves no directory.
    let mut t = e.begin();
    t.create_database("gone", "template1", None, CreateDbStrategy::FileCopy)
        .unwrap();
    t.abort().unwrap();
    e.abandon();
    let e = c.open();
    for name in ["fc", "wl"] {
        let mut want: Vec<i32> = (0..300).collect();
        want.push(1000);
        assert_eq!(ids(&e, name, "seed"), want, "{name}");
        assert_files_match_catalog(&e, name);
    }
    assert_eq!(ids(&e, "template1", "seed").len(), 300);
    let base: BTreeSet<String> = std::fs::read_dir(c.dir.join("base"))
        .unwrap()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().to_string())
        .collect();
    assert_eq!(
        base.len(),
        5,
        "template1, template0, postgres, fc, wl: {base:?}"
    );
}

#[test]
fn file_copy_replay_ignores_later_template_changes() {
    let c = Cluster::new();
    let e = c.open();
    let mut t = e.begin();
    t.create_table("template1", "t", &cols(), None).unwrap();
    t.insert("template1", "t", &rows(0..10)).unwrap();
    t.commit().unwrap();
    e.checkpoint().unwrap();
    let mut t = e.begin();
    t.create_database("copy", "template1", None, CreateDbStrategy::FileCopy)
        .unwrap();
    t.commit().unwrap();
    // Later changes to the template: more rows, a new table, all written to disk.
    let mut t = e.begin();
    t.insert("template1", "t", &rows(10..20)).unwrap();
    t.create_table("template1", "later", &cols(), None).unwrap();
    t.insert("template1", "later", &rows(0..5)).unwrap();
    t.commit().unwrap();
    e.pool().flush_all_dirty().unwrap();
    e.abandon();
    let e = c.open();
    assert!(c.log_has("Database/CREATE_FILE_COPY"), "{}", c.log_text());
    assert_eq!(ids(&e, "copy", "t"), (0..10).collect::<Vec<_>>());
    assert!(e.scan("copy", "later").is_err());
    assert_files_match_catalog(&e, "copy");
    assert_eq!(ids(&e, "template1", "t"), (0..20).collect::<Vec<_>>());
    assert_eq!(ids(&e, "template1", "later").len(), 5);
}

#[test]
fn drop_database_over_many_tablespaces_is_one_record_and_replays() {
    let c = Cluster::new();
    let locs: Vec<tempfile::TempDir> = (0..5).map(|_| tempfile::tempdir().unwrap()).collect();
    let e = c.open();
    let mut t = e.begin();
    t.create_database("many", "template1", None, CreateDbStrategy::WalLog)
        .unwrap();
    t.commit().unwrap();
    for (i, l) in locs.iter().enumerate() {
        let mut t = e.begin();
        t.create_tablespace(&format!("ts{i}"), l.path().to_str().unwrap())
            .unwrap();
        t.commit().unwrap();
        let mut t = e.begin();
        t.create_table("many", &format!("t{i}"), &cols(), Some(&format!("ts{i}")))
            .unwrap();
        t.insert("many", &format!("t{i}"), &rows(0..50)).unwrap();
        t.commit().unwrap();
    }
    let oid = e.databases().iter().find(|d| d.name == "many").unwrap().oid;
    let dirs: Vec<PathBuf> = (0..5)
        .map(|i| {
            let spc = e
                .tablespaces()
                .iter()
                .find(|s| s.name == format!("ts{i}"))
                .unwrap()
                .oid;
            e.smgr().database_dir(spc, oid)
        })
        .collect();
    assert!(dirs.iter().all(|d| d.exists()));
    e.checkpoint().unwrap();
    let lsn0 = e.current_wal_lsn();
    let mut t = e.begin();
    t.drop_database("many").unwrap();
    t.commit().unwrap();
    assert!(dirs.iter().all(|d| !d.exists()));
    // A tablespace in use cannot be dropped; an empty one can.
    let mut t = e.begin();
    t.drop_tablespace("ts0").unwrap();
    t.commit().unwrap();
    assert!(!c.dir.join("pg_tblspc").join("ts0").exists());
    assert!(e.current_wal_lsn() > lsn0);
    // Put one directory back, as if the crash came before the removal.
    std::fs::create_dir_all(&dirs[3]).unwrap();
    std::fs::write(dirs[3].join("99999"), b"").unwrap();
    e.abandon();
    let e = c.open();
    assert!(!dirs[3].exists(), "replay of the commit removed it again");
    assert!(e.databases().iter().all(|d| d.name != "many"));
    assert_eq!(e.tablespaces().len(), 2 + 4);
    let mut t = e.begin();
    t.create_table("postgres", "x", &cols(), Some("ts1"))
        .unwrap();
    t.commit().unwrap();
    let mut t = e.begin();
    assert!(matches!(
        t.drop_tablespace("ts1"),
        Err(EngineError::TablespaceNotEmpty(_))
    ));
    assert!(matches!(
        t.drop_tablespace("pg_default"),
        Err(EngineError::ObjectInUse(_))
    ));
}

#[test]
fn a_torn_page_is_repaired_from_its_full_page_image() {
    let c = Cluster::new();
    let e = c.open();
    let mut t = e.begin();
    t.create_table("postgres", "t", &cols(), None).unwrap();
    t.insert("postgres", "t", &rows(0..100)).unwrap();
    t.commit().unwrap();
    e.checkpoint().unwrap();
    let key: RelKey = e.table_key("postgres", "t").unwrap();
    let mut t = e.begin();
    t.insert("postgres", "t", &rows(100..110)).unwrap(); // first change: FPI
    t.commit().unwrap();
    e.pool().flush_all_dirty().unwrap();
    let path = e.smgr().segment_path(key, ForkNumber::Main, 0);
    e.abandon();
    // Tear block 0: its second half is garbage, as if the write was cut midway.
    let mut bytes = std::fs::read(&path).unwrap();
    for b in &mut bytes[4096..8192] {
        *b ^= 0x5A;
    }
    std::fs::write(&path, &bytes).unwrap();
    let e = c.open();
    // The ten rows went in one record per page (access rule 4), with the image.
    assert!(c.log_has("Heap/MULTI_INSERT"), "{}", c.log_text());
    assert_eq!(ids(&e, "postgres", "t"), (0..110).collect::<Vec<_>>());
    e.close().unwrap();
    assert_checksums(path.parent().unwrap());
}

#[test]
fn without_full_page_writes_a_torn_page_stops_recovery_with_its_name() {
    let c = Cluster::new();
    let settings = Settings {
        full_page_writes: false,
        ..c.settings()
    };
    let e = Engine::open(&c.dir, settings.clone()).unwrap();
    let mut t = e.begin();
    t.create_table("postgres", "t", &cols(), None).unwrap();
    t.insert("postgres", "t", &rows(0..100)).unwrap();
    t.commit().unwrap();
    e.checkpoint().unwrap();
    let key: RelKey = e.table_key("postgres", "t").unwrap();
    let mut t = e.begin();
    t.insert("postgres", "t", &rows(100..110)).unwrap();
    t.commit().unwrap();
    e.pool().flush_all_dirty().unwrap();
    let path = e.smgr().segment_path(key, ForkNumber::Main, 0);
    e.abandon();
    let mut bytes = std::fs::read(&path).unwrap();
    for b in &mut bytes[4096..8192] {
        *b ^= 0x5A;
    }
    std::fs::write(&path, &bytes).unwrap();
    let err = Engine::open(&c.dir, settings)
        .err()
        .expect("recovery must fail");
    let msg = err.to_string();
    assert!(
        msg.contains("invalid page in block 0") && msg.contains(&key.rel.to_string()),
        "{msg}"
    );
}

fn wal_file_at(dir: &Path, lsn: strata_types::Lsn) -> (PathBuf, u64) {
    let seg = 1u64 << 20;
    let name = strata_wal::segment_file_name(1, lsn.0 / seg, seg);
    (dir.join("pg_wal").join(name), lsn.0 % seg)
}

#[test]
fn a_corrupt_or_truncated_wal_tail_ends_recovery_at_the_last_valid_record() {
    for mode in ["corrupt", "truncate"] {
        let c = Cluster::new();
        let e = c.open();
        let mut t = e.begin();
        t.create_table("postgres", "t", &cols(), None).unwrap();
        t.insert("postgres", "t", &rows(0..50)).unwrap();
        t.commit().unwrap();
        let cut = e.current_wal_lsn();
        let mut t = e.begin();
        t.insert("postgres", "t", &rows(50..60)).unwrap();
        t.commit().unwrap();
        e.abandon();
        let (path, off) = wal_file_at(&c.dir, cut);
        let mut bytes = std::fs::read(&path).unwrap();
        if mode == "corrupt" {
            bytes[off as usize + 40] ^= 0xFF;
        } else {
            bytes.truncate(off as usize + 20);
        }
        std::fs::write(&path, &bytes).unwrap();
        let e = c.open();
        let log = c.log_text();
        assert!(
            log.contains(&format!("end of WAL at {cut}")),
            "{mode}: {log}"
        );
        assert_eq!(
            ids(&e, "postgres", "t"),
            (0..50).collect::<Vec<_>>(),
            "{mode}"
        );
        // New work appends after the cut, and survives another crash.
        let mut t = e.begin();
        t.insert("postgres", "t", &rows(100..101)).unwrap();
        t.commit().unwrap();
        e.abandon();
        let e = c.open();
        assert_eq!(ids(&e, "postgres", "t").len(), 51, "{mode}");
    }
}

#[test]
fn checkpoints_remove_old_wal_and_max_wal_size_triggers_them() {
    let c = Cluster::new();
    let settings = Settings {
        max_wal_size_bytes: 1 << 20,
        ..c.settings()
    };
    let e = Engine::open(&c.dir, settings.clone()).unwrap();
    let mut t = e.begin();
    t.create_table("postgres", "g", &cols(), None).unwrap();
    t.commit().unwrap();
    let before = e.checkpoints_done();
    // Enough WAL for several 1MB segments (multi-row inserts log little beyond
    // the tuples).
    for k in 0..60 {
        let mut t = e.begin();
        t.insert("postgres", "g", &rows(k * 1000..(k + 1) * 1000))
            .unwrap();
        t.commit().unwrap();
    }
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    while e.checkpoints_done() == before && std::time::Instant::now() < deadline {
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    assert!(
        e.checkpoints_done() > before,
        "max_wal_size must trigger a checkpoint"
    );
    e.checkpoint().unwrap();
    let segs = std::fs::read_dir(c.dir.join("pg_wal")).unwrap().count();
    assert!(segs <= 2, "{segs} segments left after a checkpoint");
    // Nothing happened since: a requested checkpoint still runs, and writes nothing.
    let idle = e.checkpoint().unwrap();
    assert!(!idle.skipped && idle.buffers_written == 0);
    e.abandon();
    let e = Engine::open(&c.dir, settings).unwrap();
    assert_eq!(e.scan("postgres", "g").unwrap().len(), 60_000);
}

#[test]
fn oids_and_relfilenumbers_are_never_handed_out_twice_across_a_crash() {
    let c = Cluster::new();
    let mut seen_oids = BTreeSet::new();
    let mut seen_rels = BTreeSet::new();
    for round in 0..4 {
        let e = c.open();
        let mut t = e.begin();
        t.create_table("postgres", &format!("r{round}"), &cols(), None)
            .unwrap();
        t.commit().unwrap();
        if round == 1 {
            e.checkpoint().unwrap();
            let mut t = e.begin();
            t.create_table("postgres", "after_ckpt", &cols(), None)
                .unwrap();
            t.commit().unwrap();
        }
        for r in e.tables("postgres").unwrap() {
            seen_oids.insert((r.name.clone(), r.oid));
            seen_rels.insert((r.name.clone(), r.relfilenumber));
        }
        e.abandon();
    }
    let oids: BTreeSet<_> = seen_oids.iter().map(|(_, o)| *o).collect();
    let rels: BTreeSet<_> = seen_rels.iter().map(|(_, r)| *r).collect();
    assert_eq!(oids.len(), 5, "{seen_oids:?}");
    assert_eq!(rels.len(), 5, "{seen_rels:?}");
}

#[test]
fn a_missing_file_that_no_later_drop_explains_stops_recovery() {
    let c = Cluster::new();
    let e = c.open();
    let mut t = e.begin();
    t.create_table("postgres", "t", &cols(), None).unwrap();
    t.insert("postgres", "t", &rows(0..10)).unwrap();
    t.commit().unwrap();
    e.checkpoint().unwrap();
    let mut t = e.begin();
    t.insert("postgres", "t", &rows(10..20)).unwrap();
    t.commit().unwrap();
    let path = e
        .smgr()
        .segment_path(e.table_key("postgres", "t").unwrap(), ForkNumber::Main, 0);
    e.abandon();
    std::fs::remove_file(&path).unwrap();
    let err = Engine::open(&c.dir, c.settings())
        .err()
        .expect("must not start");
    assert!(
        err.to_string()
            .contains("WAL contains references to invalid pages"),
        "{err}"
    );
}

#[test]
fn an_online_backup_keeps_its_wal_until_it_ends() {
    let c = Cluster::new();
    let e = c.open();
    let mut t = e.begin();
    t.create_table("postgres", "g", &cols(), None).unwrap();
    t.commit().unwrap();
    let b = e.start_backup().unwrap();
    assert!(
        b.checkpoint >= b.start,
        "the checkpoint record follows its redo point"
    );
    let seg_bytes = 1u64 << 20;
    let seg = b.start.0 / seg_bytes;
    let per_id = 0x1_0000_0000 / seg_bytes;
    let first =
        c.dir
            .join("pg_wal")
            .join(format!("{:08X}{:08X}{:08X}", 1, seg / per_id, seg % per_id));
    for k in 0..60 {
        let mut t = e.begin();
        t.insert("postgres", "g", &rows(k * 1000..(k + 1) * 1000))
            .unwrap();
        t.commit().unwrap();
        e.checkpoint().unwrap();
    }
    assert!(
        first.exists(),
        "checkpoints removed {} that the running backup needs",
        first.display()
    );
    let start = b.start;
    let end = b.stop().unwrap();
    assert!(end > start);
    e.checkpoint().unwrap();
    assert!(!first.exists(), "the backup's WAL is kept after it ended");
}

/// Copies a directory tree (a base backup's file copy, done by hand).
fn copy_tree(from: &Path, to: &Path, skip: &str) {
    std::fs::create_dir_all(to).unwrap();
    for e in std::fs::read_dir(from).unwrap() {
        let e = e.unwrap();
        let name = e.file_name();
        if name.to_string_lossy() == skip {
            continue;
        }
        if e.file_type().unwrap().is_dir() {
            copy_tree(&e.path(), &to.join(&name), skip);
        } else {
            std::fs::copy(e.path(), to.join(&name)).unwrap();
        }
    }
}

/// CREATE DATABASE ... FILE_COPY after a base backup copied the files and before it
/// ended: the backup holds the catalog row's WAL but not the new database's files, so
/// replay from the backup must copy them from the template (as PostgreSQL's dbase_redo
/// does), while crash recovery leaves the durable copy alone.
#[test]
fn a_file_copy_database_made_during_a_backup_is_copied_in_replay() {
    let c = Cluster::new();
    let e = c.open();
    let mut t = e.begin();
    t.create_table("template1", "tt", &cols(), None).unwrap();
    t.insert("template1", "tt", &rows(0..500)).unwrap();
    t.commit().unwrap();
    let b = e.start_backup().unwrap();
    let copy = c.dir.with_file_name("copy");
    copy_tree(&c.dir, &copy, "pg_wal");
    let mut t = e.begin();
    t.create_database("d2", "template1", None, CreateDbStrategy::FileCopy)
        .unwrap();
    t.commit().unwrap();
    let label = format!(
        "START WAL LOCATION: {} (file x)\nCHECKPOINT LOCATION: {}\nBACKUP METHOD: streamed\n",
        b.start, b.checkpoint
    );
    b.stop().unwrap();
    copy_tree(&c.dir.join("pg_wal"), &copy.join("pg_wal"), "");
    std::fs::write(copy.join("backup_label"), label).unwrap();
    e.close().unwrap();
    let restored = Engine::open(&copy, c.settings()).unwrap();
    let got = restored.scan("d2", "tt").unwrap();
    assert_eq!(got.len(), 500, "the new database's table, copied in replay");
    restored.close().unwrap();
}

#[test]
fn dropped_files_wait_for_no_commit_and_go_before_a_checkpoint_completes() {
    let c = Cluster::new();
    let e = c.open();
    e.pause_unlinker(true);
    let mut t = e.begin();
    for i in 0..6 {
        t.create_table("postgres", &format!("t{i}"), &cols(), None)
            .unwrap();
        t.insert("postgres", &format!("t{i}"), &rows(0..i)).unwrap();
    }
    t.commit().unwrap();
    let dbe = e
        .databases()
        .into_iter()
        .find(|d| d.name == "postgres")
        .unwrap();
    let dir = e.smgr().database_dir(dbe.spc, dbe.oid);
    let before = files_in(&dir);
    let mut t = e.begin();
    for i in 0..3 {
        t.drop_table("postgres", &format!("t{i}")).unwrap();
    }
    t.commit().unwrap();
    // The commit returned with its files still there (the unlinker is paused) ...
    assert_eq!(files_in(&dir), before);
    // ... and a checkpoint does not complete before they are gone (unlink rule 1).
    e.checkpoint().unwrap();
    assert_files_match_catalog(&e, "postgres");
    // A crash with drops still queued: replay removes their files.
    let mut t = e.begin();
    t.drop_table("postgres", "t3").unwrap();
    t.commit().unwrap();
    assert_eq!(files_in(&dir).len(), before.len() - 3);
    e.abandon();
    let e = c.open();
    assert_files_match_catalog(&e, "postgres");
    assert_eq!(e.tables("postgres").unwrap().len(), 2);
}
