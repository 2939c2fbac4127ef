//! VACUUM's truncation excludes concurrent scans (engine rule 8): a scan racing the
//! cut never reads past the end of the file and never sees rows whose delete committed
//! again from a stale on-disk version of a page whose buffer the truncation dropped.

mod common;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use strata_engine::*;

fn cols() -> Vec<Column> {
    vec![
        Column::new("id", ColType::Int4),
        Column::new("s", ColType::Text),
    ]
}

#[test]
fn scans_racing_vacuum_truncation_see_one_committed_state() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("data");
    let settings = Settings {
        shared_buffers_bytes: 512 << 10,
        wal_segment_bytes: 1 << 20,
        log: Arc::new(|_: &str| {}),
        ..Settings::default()
    };
    Engine::init(&dir, settings.clone()).unwrap();
    let e = Engine::open(&dir, settings).unwrap();
    let mut txn = e.begin();
    txn.create_table("postgres", "t", &cols(), None).unwrap();
    txn.commit().unwrap();
    let stop = AtomicBool::new(false);
    let scans = AtomicU64::new(0);
    let mut truncated = 0;
    std::thread::scope(|s| {
        for _ in 0..2 {
            s.spawn(|| {
                while !stop.load(Ordering::SeqCst) {
                    let rows = e.scan("postgres", "t").unwrap_or_else(|err| {
                        stop.store(true, Ordering::SeqCst);
                        panic!("a scan racing VACUUM failed: {err}")
                    });
                    // Each cycle's 600 rows are all visible or none are.
                    let mut cycles: Vec<i32> = rows
                        .iter()
                        .map(|r| match r[0] {
                            Datum::Int4(i) => i / 1000,
                            _ => -1,
                        })
                        .collect();
                    cycles.dedup();
                    let ok = rows.is_empty() || (cycles.len() == 1 && rows.len() == 600);
                    if !ok {
                        stop.store(true, Ordering::SeqCst);
                        panic!("a scan saw {} rows of cycles {cycles:?}", rows.len());
                    }
                    scans.fetch_add(1, Ordering::Relaxed);
                }
            });
        }
        let _stop = common::StopOnDrop(&stop);
        for cycle in 0..150 {
            if stop.load(Ordering::SeqCst) {
                break;
            }
            let base = cycle * 1000;
            let rows: Vec<Vec<Datum>> = (base..base + 600)
                .map(|i| vec![Datum::Int4(i), Datum::Text(format!("{i:>100}"))])
                .collect();
            let mut txn = e.begin();
            txn.insert("postgres", "t", &rows).unwrap();
            txn.commit().unwrap();
            e.checkpoint().unwrap(); // the pages as inserted are on disk
            let mut txn = e.begin();
            txn.delete_where("postgres", "t", &|_| true).unwrap();
            txn.commit().unwrap(); // the deleted versions only in the pool
                                   // Rows an older snapshot may still see stay; most cycles truncate.
            truncated += e.vacuum("postgres", Some("t")).unwrap();
        }
    });
    assert!(scans.load(Ordering::Relaxed) > 100);
    assert!(truncated > 0, "VACUUM truncated pages");
    e.close().unwrap();
}
