//! Waiting for the writer lock is bounded: `Engine::try_begin` gives up at its
//! deadline or when its interrupt check fails, and the scans and writes that take
//! an interrupt check stop at the next row or page.

use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};
use strata_engine::*;

fn engine() -> (tempfile::TempDir, Engine) {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("data");
    let settings = || Settings {
        shared_buffers_bytes: 2 << 20,
        wal_segment_bytes: 1 << 20,
        ..Settings::default()
    };
    Engine::init(&dir, settings()).unwrap();
    let e = Engine::open(&dir, settings()).unwrap();
    (tmp, e)
}

fn canceled() -> EngineError {
    EngineError::Interrupted {
        code: "57014",
        message: "canceling statement due to user request".into(),
    }
}

#[test]
fn try_begin_gives_up_at_its_deadline_and_on_interrupt() {
    let (_tmp, e) = engine();
    let holder = e.begin();
    let t0 = Instant::now();
    let got = e
        .try_begin(Some(t0 + Duration::from_millis(100)), &no_interrupt)
        .unwrap();
    assert!(got.is_none(), "the writer lock is held");
    assert!(t0.elapsed() >= Duration::from_millis(100));
    assert!(t0.elapsed() < Duration::from_secs(2));

    let flag = AtomicBool::new(false);
    let check = || {
        if flag.load(Ordering::SeqCst) {
            Err(canceled())
        } else {
            Ok(())
        }
    };
    std::thread::scope(|s| {
        s.spawn(|| {
            std::thread::sleep(Duration::from_millis(50));
            flag.store(true, Ordering::SeqCst);
        });
        let r = e.try_begin(None, &check);
        assert_eq!(r.err().map(|e| e.sqlstate()), Some("57014"));
    });
    drop(holder);
    assert!(e
        .try_begin(Some(Instant::now()), &no_interrupt)
        .unwrap()
        .is_some());
}

#[test]
fn scans_and_writes_stop_at_the_interrupt() {
    let (_tmp, e) = engine();
    let cols = vec![Column::new("a", ColType::Int4)];
    let rows: Vec<Vec<Datum>> = (0..1000).map(|i| vec![Datum::Int4(i)]).collect();
    let mut t = e.begin();
    t.create_table("postgres", "t", &cols, None).unwrap();
    t.insert("postgres", "t", &rows).unwrap();
    t.commit().unwrap();
    let fail = || Err(canceled());
    let r = e.scan_checked("postgres", "t", &fail);
    assert_eq!(r.err().map(|e| e.sqlstate()), Some("57014"));
    let mut t = e.begin();
    assert!(t.insert_checked("postgres", "t", &rows, &fail).is_err());
    assert!(t
        .delete_where_checked("postgres", "t", &mut |_| true, &fail)
        .is_err());
    assert!(t.scan_checked("postgres", "t", &fail).is_err());
    t.abort().unwrap();
    assert_eq!(e.scan("postgres", "t").unwrap().len(), 1000);
}
