//! Streaming scans (`stream` rules): rows come in bounded batches read under the
//! drop lock, which the visitor never holds, so a DROP, TRUNCATE or VACUUM can
//! finish while a scan waits between batches; the scan keeps its snapshot, stops
//! when told, and fails with 40001 if its relation's storage went meanwhile.

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

const ROWS: i32 = 5 * SCAN_BATCH_ROWS as i32;

fn table(e: &Engine, name: &str) {
    let cols = vec![Column::new("a", ColType::Int4)];
    let rows: Vec<Vec<Datum>> = (0..ROWS).map(|i| vec![Datum::Int4(i)]).collect();
    let mut t = e.begin();
    t.create_table("postgres", name, &cols, None).unwrap();
    t.insert("postgres", name, &rows).unwrap();
    t.commit().unwrap();
}

#[test]
fn a_scan_stops_when_told_and_keeps_its_snapshot_between_batches() {
    let (_tmp, e) = engine();
    table(&e, "t");
    let mut seen = 0;
    e.scan_each("postgres", "t", &no_interrupt, &mut |_| {
        seen += 1;
        Ok(seen < 10)
    })
    .unwrap();
    assert_eq!(seen, 10);
    // Rows committed while the scan waits between batches are not seen (rule 2),
    // and the writer is never blocked by it (rule 1).
    let mut seen = 0;
    e.scan_each("postgres", "t", &no_interrupt, &mut |_| {
        seen += 1;
        if seen == 1 {
            let mut t = e.begin();
            t.insert("postgres", "t", &[vec![Datum::Int4(-1)]]).unwrap();
            t.delete_where("postgres", "t", &|v| v[0] == Datum::Int4(ROWS - 1))
                .unwrap();
            t.commit().unwrap();
            e.vacuum("postgres", Some("t")).unwrap();
        }
        Ok(true)
    })
    .unwrap();
    assert_eq!(seen, ROWS);
}

#[test]
fn a_drop_or_truncate_between_batches_finishes_and_the_scan_gets_40001() {
    let (_tmp, e) = engine();
    for (name, truncate) in [("d", false), ("u", true)] {
        table(&e, name);
        let mut seen = 0;
        let r = e.scan_each("postgres", name, &no_interrupt, &mut |_| {
            seen += 1;
            if seen == 1 {
                let mut t = e.begin();
                if truncate {
                    t.truncate_table("postgres", name).unwrap();
                } else {
                    t.drop_table("postgres", name).unwrap();
                }
                t.commit().unwrap();
            }
            Ok(true)
        });
        let err = r.unwrap_err();
        assert_eq!(err.sqlstate(), "40001", "{err}");
        assert!(seen < ROWS, "{name}: only the first batch was read");
    }
}

#[test]
fn parallel_participants_share_a_scans_blocks_and_read_each_row_once() {
    let (_tmp, e) = engine();
    table(&e, "t");
    let snap = e.snapshot();
    let next = std::sync::Arc::new(std::sync::atomic::AtomicU32::new(0));
    // Two participants on two threads, pulling until their shares end.
    let shares: Vec<Vec<i32>> = std::thread::scope(|s| {
        let handles: Vec<_> = (0..2)
            .map(|_| {
                let (e, snap, next) = (&e, &snap, next.clone());
                s.spawn(move || {
                    let mut c = e.seq_cursor("postgres", "t").shared(next);
                    let mut rows = Vec::new();
                    while c.next_batch(snap, &no_interrupt, &mut rows).unwrap() {}
                    rows.iter()
                        .map(|r| match r[0] {
                            Datum::Int4(v) => v,
                            ref d => panic!("{d:?}"),
                        })
                        .collect()
                })
            })
            .collect();
        handles.into_iter().map(|h| h.join().unwrap()).collect()
    });
    let mut all: Vec<i32> = shares.concat();
    all.sort_unstable();
    assert_eq!(all, (0..ROWS).collect::<Vec<_>>(), "each row read once");
    // Pulled in turn, both get rows: neither reads past the blocks it claimed.
    let next = std::sync::Arc::new(std::sync::atomic::AtomicU32::new(0));
    let mut c = [0, 1].map(|_| e.seq_cursor("postgres", "t").shared(next.clone()));
    let (mut rows, mut more) = ([Vec::new(), Vec::new()], [true, true]);
    while more.iter().any(|m| *m) {
        for i in 0..2 {
            if more[i] {
                more[i] = c[i].next_batch(&snap, &no_interrupt, &mut rows[i]).unwrap();
            }
        }
    }
    assert!(
        rows.iter().all(|r| r.len() >= SCAN_BATCH_ROWS),
        "{:?}",
        rows.map(|r| r.len())
    );
    assert_eq!(rows[0].len() + rows[1].len(), ROWS as usize);
}
