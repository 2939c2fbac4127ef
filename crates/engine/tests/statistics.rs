//! Planner statistics in `pg_statistic` (catalog rule 10): transactional, WAL-logged
//! (crash recovery and a standby's replay get them), gone with their table, shrunk
//! to fit a page, and absent-but-working on a cluster made before the catalog.

mod common;

use common::Cluster;
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;
use strata_engine::*;

fn cols() -> Vec<Column> {
    vec![
        Column::new("id", ColType::Int4),
        Column::new("s", ColType::Text),
        Column::new("k", ColType::Int8),
    ]
}

fn col_stats(n: i64) -> ColumnStats {
    ColumnStats {
        null_frac: 0.125,
        n_distinct: -0.5,
        avg_width: 8,
        mcv: (0..n).map(|i| (Datum::Int8(i), 0.01)).collect(),
        histogram: (0..n).map(|i| Datum::Int8(i * 10)).collect(),
        correlation: Some(0.5),
    }
}

fn stats(reltuples: f64) -> TableStats {
    TableStats {
        reltuples,
        relpages: 3,
        relallvisible: 0,
        columns: vec![
            Some(ColumnStats {
                null_frac: 0.0,
                n_distinct: -1.0,
                avg_width: 4,
                mcv: vec![],
                histogram: vec![Datum::Int4(1), Datum::Int4(50), Datum::Int4(100)],
                correlation: None,
            }),
            None,
            Some(col_stats(4)),
        ],
    }
}

fn open(c: &Cluster) -> Engine {
    c.open(strata_vfs::StdVfs::arc())
}

fn make_table(e: &Engine, db: &str, name: &str) {
    let mut t = e.begin();
    t.create_table(db, name, &cols(), None).unwrap();
    t.commit().unwrap();
}

fn set(e: &Engine, db: &str, table: &str, s: TableStats) {
    let mut t = e.begin();
    t.set_table_stats(db, table, s).unwrap();
    t.commit().unwrap();
}

fn got(e: &Engine, db: &str, table: &str) -> Option<TableStats> {
    e.table_stats(db, table).map(|s| (*s).clone())
}

#[test]
fn stored_statistics_are_transactional() {
    let c = Cluster::new();
    let e = open(&c);
    make_table(&e, "postgres", "t");
    assert_eq!(got(&e, "postgres", "t"), None);

    let mut t = e.begin();
    t.set_table_stats("postgres", "t", stats(10.0)).unwrap();
    assert_eq!(
        t.table_stats("postgres", "t").as_deref(),
        Some(&stats(10.0))
    );
    assert_eq!(got(&e, "postgres", "t"), None, "uncommitted");
    t.commit().unwrap();
    assert_eq!(got(&e, "postgres", "t"), Some(stats(10.0)));

    // A rolled-back replacement leaves the old; a dropped transaction too.
    let mut t = e.begin();
    t.set_table_stats("postgres", "t", stats(20.0)).unwrap();
    t.set_table_stats("postgres", "t", stats(30.0)).unwrap();
    assert_eq!(
        t.table_stats("postgres", "t").as_deref(),
        Some(&stats(30.0))
    );
    t.abort().unwrap();
    {
        let mut t = e.begin();
        t.set_table_stats("postgres", "t", stats(40.0)).unwrap();
    }
    assert_eq!(got(&e, "postgres", "t"), Some(stats(10.0)));

    // Replaced twice in one transaction: the last wins, one row.
    let mut t = e.begin();
    t.set_table_stats("postgres", "t", stats(50.0)).unwrap();
    t.set_table_stats("postgres", "t", stats(60.0)).unwrap();
    t.commit().unwrap();
    assert_eq!(got(&e, "postgres", "t"), Some(stats(60.0)));
    let shared = e.table_stats("postgres", "t").unwrap();
    assert!(Arc::ptr_eq(
        &shared,
        &e.table_stats("postgres", "t").unwrap()
    ));

    // TRUNCATE and ADD COLUMN keep them.
    let mut t = e.begin();
    t.truncate_table("postgres", "t").unwrap();
    t.add_column(
        "postgres",
        "t",
        Column::new("z", ColType::Bool),
        Datum::Null,
    )
    .unwrap();
    t.commit().unwrap();
    assert_eq!(got(&e, "postgres", "t"), Some(stats(60.0)));
    e.close().unwrap();
    let e = open(&c);
    assert_eq!(got(&e, "postgres", "t"), Some(stats(60.0)));
    e.close().unwrap();
}

#[test]
fn errors_name_the_missing_or_wrong_object() {
    let c = Cluster::new();
    let e = open(&c);
    let mut t = e.begin();
    let err = t
        .set_table_stats("postgres", "nope", stats(1.0))
        .unwrap_err();
    assert_eq!(err.sqlstate(), "42P01");
    let err = t.set_table_stats("nodb", "t", stats(1.0)).unwrap_err();
    assert_eq!(err.sqlstate(), "3D000");
    t.create_sequence(
        "postgres",
        "sq",
        SeqDef {
            ty: ColType::Int8,
            increment: 1,
            min: 1,
            max: i64::MAX,
            start: 1,
            cache: 1,
            cycle: false,
            owned: false,
        },
    )
    .unwrap();
    let err = t.set_table_stats("postgres", "sq", stats(1.0)).unwrap_err();
    assert_eq!(err.sqlstate(), "42809");
    assert!(t.table_stats("postgres", "nope").is_none());
    drop(t);
    assert!(e.table_stats("nodb", "t").is_none());
    e.close().unwrap();
}

#[test]
fn drop_table_takes_them_and_a_new_table_of_the_name_has_none() {
    let c = Cluster::new();
    let e = open(&c);
    make_table(&e, "postgres", "t");
    make_table(&e, "postgres", "u");
    set(&e, "postgres", "t", stats(1.0));
    set(&e, "postgres", "u", stats(2.0));

    let mut t = e.begin();
    t.drop_table("postgres", "t").unwrap();
    t.create_table("postgres", "t", &cols(), None).unwrap();
    assert!(t.table_stats("postgres", "t").is_none());
    t.commit().unwrap();
    assert_eq!(got(&e, "postgres", "t"), None);
    assert_eq!(got(&e, "postgres", "u"), Some(stats(2.0)));

    // Set and dropped in one transaction; a rolled-back drop keeps them.
    let mut t = e.begin();
    t.set_table_stats("postgres", "t", stats(3.0)).unwrap();
    t.drop_table("postgres", "t").unwrap();
    t.commit().unwrap();
    let mut t = e.begin();
    t.drop_table("postgres", "u").unwrap();
    t.abort().unwrap();
    assert_eq!(got(&e, "postgres", "u"), Some(stats(2.0)));
    e.abandon();

    let e = open(&c);
    make_table(&e, "postgres", "t");
    assert_eq!(got(&e, "postgres", "t"), None);
    assert_eq!(got(&e, "postgres", "u"), Some(stats(2.0)));
    e.close().unwrap();
}

#[test]
fn drop_column_moves_the_later_columns_statistics_up() {
    let c = Cluster::new();
    let e = open(&c);
    make_table(&e, "postgres", "t");
    set(&e, "postgres", "t", stats(1.0));
    let mut t = e.begin();
    t.drop_column("postgres", "t", "id").unwrap();
    t.commit().unwrap();
    let mut want = stats(1.0);
    want.columns.remove(0);
    assert_eq!(got(&e, "postgres", "t"), Some(want.clone()));
    e.abandon();
    let e = open(&c);
    assert_eq!(got(&e, "postgres", "t"), Some(want));
    e.close().unwrap();
}

/// Committed statistics survive a crash (no checkpoint), uncommitted ones do not, and
/// CREATE DATABASE copies the template's by either strategy; DROP DATABASE takes them.
#[test]
fn statistics_survive_a_crash_and_travel_with_their_database() {
    let c = Cluster::new();
    let e = open(&c);
    make_table(&e, "template1", "t");
    set(&e, "template1", "t", stats(7.0));
    for (name, strategy) in [
        ("wal", CreateDbStrategy::WalLog),
        ("copy", CreateDbStrategy::FileCopy),
    ] {
        let mut t = e.begin();
        t.create_database(name, "template1", None, strategy)
            .unwrap();
        assert_eq!(t.table_stats(name, "t").as_deref(), Some(&stats(7.0)));
        t.commit().unwrap();
        assert_eq!(got(&e, name, "t"), Some(stats(7.0)));
    }
    set(&e, "wal", "t", stats(8.0));
    set(&e, "copy", "t", stats(9.0));
    let mut t = e.begin();
    t.set_table_stats("template1", "t", stats(99.0)).unwrap();
    let _ = t.xid();
    std::mem::forget(t); // the process dies with the transaction open
    e.abandon();

    let e = open(&c);
    assert_eq!(got(&e, "template1", "t"), Some(stats(7.0)));
    assert_eq!(got(&e, "wal", "t"), Some(stats(8.0)));
    assert_eq!(got(&e, "copy", "t"), Some(stats(9.0)));

    let mut t = e.begin();
    t.drop_database("copy").unwrap();
    t.commit().unwrap();
    let mut t = e.begin();
    t.create_database("copy", "postgres", None, CreateDbStrategy::WalLog)
        .unwrap();
    t.create_table("copy", "t", &cols(), None).unwrap();
    t.commit().unwrap();
    assert_eq!(got(&e, "copy", "t"), None);
    e.abandon();
    let e = open(&c);
    assert_eq!(got(&e, "copy", "t"), None);
    assert_eq!(got(&e, "wal", "t"), Some(stats(8.0)));
    e.close().unwrap();
}

/// Stats rule 4: statistics bigger than a page are shrunk, never refused; the null
/// fraction and distinct counts survive.
#[test]
fn oversized_statistics_are_shrunk_to_fit_a_page() {
    let c = Cluster::new();
    let e = open(&c);
    make_table(&e, "postgres", "t");
    let big = TableStats {
        reltuples: 1e6,
        relpages: 1000,
        relallvisible: 0,
        columns: vec![
            Some(ColumnStats {
                histogram: (0..101)
                    .map(|i| Datum::Text(format!("{i:04}{}", "x".repeat(200))))
                    .collect(),
                mcv: (0..100)
                    .map(|i| (Datum::Text(format!("{i}{}", "y".repeat(300))), 0.001))
                    .collect(),
                ..col_stats(0)
            }),
            None,
            Some(col_stats(100)),
        ],
    };
    assert!(big.encode().len() > 8192);
    set(&e, "postgres", "t", big.clone());
    let s = got(&e, "postgres", "t").unwrap();
    assert!(s.encode().len() < 8192);
    let c0 = s.columns[0].as_ref().unwrap();
    assert_eq!((c0.null_frac, c0.n_distinct), (0.125, -0.5));
    assert!(c0.histogram.len() >= 2 && c0.histogram.len() < 101);
    assert_eq!(
        c0.histogram.first(),
        big.columns[0].as_ref().unwrap().histogram.first()
    );
    assert_eq!(
        c0.histogram.last(),
        big.columns[0].as_ref().unwrap().histogram.last()
    );
    assert!(s.columns[2].is_some());
    e.abandon();
    let e = open(&c);
    assert_eq!(got(&e, "postgres", "t"), Some(s));
    e.close().unwrap();
}

/// Catalog rule 10: a database made before `pg_statistic` has no file; it starts,
/// reads no statistics, and its first statistics create the file in their
/// transaction (an abort removes it again).
#[test]
fn a_database_without_pg_statistic_starts_and_gets_one_on_first_use() {
    let c = Cluster::new();
    let e = open(&c);
    make_table(&e, "postgres", "t");
    let db = e.database("postgres").unwrap();
    let file = e.smgr().database_dir(db.spc, db.oid).join("2619");
    e.close().unwrap(); // a shutdown checkpoint: replay starts after the file's create
    assert!(file.exists());
    std::fs::remove_file(&file).unwrap();

    let e = open(&c);
    assert_eq!(got(&e, "postgres", "t"), None);
    let mut t = e.begin();
    t.set_table_stats("postgres", "t", stats(1.0)).unwrap();
    assert!(file.exists());
    t.abort().unwrap();
    assert!(!file.exists(), "an aborted first use removes the file");
    set(&e, "postgres", "t", stats(2.0));
    assert!(file.exists());
    e.abandon();
    let e = open(&c);
    assert_eq!(got(&e, "postgres", "t"), Some(stats(2.0)));
    e.close().unwrap();
}

fn copy_tree(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for entry in std::fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        let dst = to.join(entry.file_name());
        if entry.file_type().unwrap().is_dir() {
            copy_tree(&entry.path(), &dst);
        } else {
            std::fs::copy(entry.path(), &dst).unwrap();
        }
    }
}

/// Streams the primary's flushed WAL to the standby until it has replayed it all.
fn catch_up(primary: &Engine, standby: &Engine) {
    let target = primary.flushed_wal_lsn();
    let deadline = std::time::Instant::now() + Duration::from_secs(30);
    loop {
        let Some(start) = standby.receive_start() else {
            assert!(
                std::time::Instant::now() < deadline,
                "standby never streamed"
            );
            std::thread::sleep(Duration::from_millis(10));
            continue;
        };
        if start >= target {
            break;
        }
        let bytes = primary.read_wal(start).unwrap().expect("WAL kept");
        standby.receive_wal(start, &bytes).unwrap();
        standby.flush_received_wal().unwrap();
    }
    assert!(standby.wait_for_replay(target, Duration::from_secs(30)));
}

/// Standby rule 5: a standby's cache follows the statistics rows it replays — set,
/// replaced, dropped with their table — and a database created in replay brings
/// its template's.
#[test]
fn a_standby_replays_statistics_into_its_cache() {
    let c = Cluster::new();
    let e = open(&c);
    make_table(&e, "postgres", "t");
    make_table(&e, "postgres", "gone");
    e.close().unwrap();
    let standby_dir = c.dir.parent().unwrap().join("standby");
    copy_tree(&c.dir, &standby_dir);
    std::fs::write(standby_dir.join("standby.signal"), "").unwrap();

    let primary = open(&c);
    let standby = Engine::open(&standby_dir, c.settings(strata_vfs::StdVfs::arc())).unwrap();
    assert!(standby.in_recovery());
    set(&primary, "postgres", "t", stats(1.0));
    set(&primary, "postgres", "gone", stats(2.0));
    catch_up(&primary, &standby);
    assert_eq!(got(&standby, "postgres", "t"), Some(stats(1.0)));
    assert_eq!(got(&standby, "postgres", "gone"), Some(stats(2.0)));

    set(&primary, "postgres", "t", stats(3.0));
    let mut t = primary.begin();
    t.drop_table("postgres", "gone").unwrap();
    t.create_table("postgres", "gone", &cols(), None).unwrap();
    t.commit().unwrap();
    let mut t = primary.begin();
    t.create_database("db2", "postgres", None, CreateDbStrategy::WalLog)
        .unwrap();
    t.commit().unwrap();
    let mut t = primary.begin();
    t.create_database("db3", "postgres", None, CreateDbStrategy::FileCopy)
        .unwrap();
    t.commit().unwrap();
    catch_up(&primary, &standby);
    assert_eq!(got(&standby, "db3", "t"), Some(stats(3.0)));
    assert_eq!(got(&standby, "postgres", "t"), Some(stats(3.0)));
    assert_eq!(got(&standby, "postgres", "gone"), None);
    assert_eq!(got(&standby, "db2", "t"), Some(stats(3.0)));
    standby.close().unwrap();
    primary.close().unwrap();
}

/// A temporary table's statistics have no row (catalog rule 10, temp module): they
/// live in the cache, are found by the session's name for the table, and go with it.
#[test]
fn a_temporary_tables_statistics_live_in_the_cache() {
    let c = Cluster::new();
    let e = open(&c);
    let _session = temp::enter(7);
    let mut t = e.begin();
    t.create_table("postgres", "pg_temp.tt", &cols(), None)
        .unwrap();
    t.set_table_stats("postgres", "tt", stats(5.0)).unwrap();
    t.commit().unwrap();
    assert_eq!(got(&e, "postgres", "tt"), Some(stats(5.0)));
    let mut t = e.begin();
    t.drop_table("postgres", "tt").unwrap();
    t.commit().unwrap();
    make_table(&e, "postgres", "tt");
    assert_eq!(got(&e, "postgres", "tt"), None);
    e.close().unwrap();
}
