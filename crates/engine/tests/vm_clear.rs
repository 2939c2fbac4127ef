//! Property: a heap change clears the page's visibility-map bit before its WAL record is
//! inserted (access rule 2, as PostgreSQL's heap_insert/heap_delete), so a checkpoint
//! that begins while the change waits for the VM page, followed by a crash, never
//! leaves a VM bit set on a heap page that is not all-visible.
//!
//! A reader holding the VM page's content lock (shared) stalls the writer at the VM
//! clear. Cleared after the record (the old order), the record is already in the WAL
//! and the heap page unlocked: the checkpoint's redo point passes the record and
//! writes the changed heap page, the clear stays in memory, and after the crash
//! nothing replays it. Cleared before the record, the record comes after the redo
//! point and replay clears the bit.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};
use strata_buffer::ReadMode;
use strata_engine::*;
use strata_types::{BlockNumber, BufferTag, ForkNumber, RelKey, Xid};

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

fn vm_tag(rel: RelKey, block: u32) -> BufferTag {
    BufferTag::new(rel, ForkNumber::Vm, BlockNumber(block / VM_PER_PAGE))
}

/// Whether `block`'s bit is set on its (locked) VM page: one bit per heap block after
/// the page header (the map layout in access.rs).
fn vm_bit(vm_page: &[u8], block: u32) -> bool {
    let bit = (block % VM_PER_PAGE) as usize;
    vm_page[strata_page::HEADER_BYTES + bit / 8] & (1 << (bit % 8)) != 0
}

/// Checks, for every heap block of `rel`, under its content lock then its VM page's
/// (the writer's lock order): VM bit set ⇒ PD_ALL_VISIBLE set ⇒ every tuple on the
/// page inserted by a committed transaction and not deleted (heap rule 2). Returns the
/// violations; also how many blocks had their bit set.
fn vm_violations(e: &Engine, rel: RelKey) -> (Vec<String>, usize) {
    let pool = e.pool();
    let nblocks = e.smgr().nblocks(rel, ForkNumber::Main).unwrap();
    let (mut bad, mut set) = (Vec::new(), 0);
    for b in 0..nblocks {
        let heap = pool
            .read_buffer(
                BufferTag::new(rel, ForkNumber::Main, BlockNumber(b)),
                ReadMode::Normal,
            )
            .unwrap();
        let page = heap.read();
        let vm = pool.read_buffer(vm_tag(rel, b), ReadMode::Normal).unwrap();
        if !vm_bit(&vm.read()[..], b) {
            continue;
        }
        set += 1;
        if strata_page::flags(&page) & PD_ALL_VISIBLE == 0 {
            bad.push(format!("block {b}: VM bit set, PD_ALL_VISIBLE clear"));
        }
        for i in 0..strata_page::item_count(&page) {
            let Some(t) = strata_page::item(&page, i) else {
                continue;
            };
            // Tuple header: xmin, xmax (heap.rs's layout table).
            let xmin = Xid(u32::from_le_bytes(t[0..4].try_into().unwrap()));
            let xmax = Xid(u32::from_le_bytes(t[4..8].try_into().unwrap()));
            if !e.xid_committed(xmin) || xmax != Xid::INVALID {
                bad.push(format!(
                    "block {b} item {i}: VM bit set, tuple xmin {xmin} xmax {xmax} not visible to all"
                ));
            }
        }
    }
    (bad, set)
}

/// Runs `change` (one transaction that inserts into or deletes from the all-visible
/// page, then commits) while this thread holds the VM page shared; as soon as the WAL
/// moves (or after a second, if the change cannot get so far without the VM page), a
/// checkpoint runs; then the VM page is released and the change finishes.
fn change_across_a_checkpoint(e: &Engine, rel: RelKey, change: &(dyn Fn(&Engine) + Sync)) {
    let vm = e
        .pool()
        .read_buffer(vm_tag(rel, 0), ReadMode::Normal)
        .unwrap();
    let vm_lock = vm.read();
    assert!(vm_bit(&vm_lock[..], 0), "VACUUM set the bit");
    let before = e.current_wal_lsn();
    let checkpointed = AtomicBool::new(false);
    std::thread::scope(|s| {
        s.spawn(|| change(e));
        let deadline = Instant::now() + Duration::from_secs(1);
        while e.current_wal_lsn() == before && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(1));
        }
        // The checkpoint never needs the VM page (it is clean), but it would wait for
        // a dirty heap page the writer holds: released after a bound either way.
        s.spawn(|| {
            e.checkpoint().unwrap();
            checkpointed.store(true, Ordering::SeqCst);
        });
        let deadline = Instant::now() + Duration::from_secs(5);
        while !checkpointed.load(Ordering::SeqCst) && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(1));
        }
        let in_window = checkpointed.load(Ordering::SeqCst);
        drop(vm_lock);
        assert!(
            in_window,
            "the checkpoint ran while the change waited for the VM"
        );
    });
}

/// One case: a one-page table made all-visible by VACUUM and checkpointed, `change`
/// run across a checkpoint (above), a crash, recovery; then the invariant.
fn case(name: &str, change: &(dyn Fn(&Engine) + Sync)) {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("data");
    let settings = Settings {
        shared_buffers_bytes: 1 << 20,
        wal_segment_bytes: 1 << 20,
        log: Arc::new(|_: &str| {}),
        ..Settings::default()
    };
    Engine::init(&dir, settings.clone()).unwrap();
    let e = Engine::open(&dir, settings.clone()).unwrap();
    let mut t = e.begin();
    t.create_table("postgres", "t", &cols(), None).unwrap();
    t.insert("postgres", "t", &rows(0..20)).unwrap();
    t.commit().unwrap();
    e.vacuum("postgres", Some("t")).unwrap();
    e.checkpoint().unwrap(); // the all-visible page and its VM bit on disk, all clean
    let rel = e.table_key("postgres", "t").unwrap();
    assert_eq!(e.smgr().nblocks(rel, ForkNumber::Main).unwrap(), 1);
    assert_eq!(vm_violations(&e, rel), (vec![], 1), "{name}: after VACUUM");
    change_across_a_checkpoint(&e, rel, change);
    assert_eq!(
        vm_violations(&e, rel),
        (vec![], 0),
        "{name}: before the crash"
    );
    e.abandon();
    let e = Engine::open(&dir, settings).unwrap();
    let (bad, _) = vm_violations(&e, rel);
    assert!(bad.is_empty(), "{name}: after recovery: {bad:?}");
    e.close().unwrap();
}

#[test]
fn a_checkpoint_during_a_delete_never_loses_its_vm_clear() {
    case("delete", &|e| {
        let mut t = e.begin();
        let n = t
            .delete_where("postgres", "t", &|r| r[0] == Datum::Int4(7))
            .unwrap();
        assert_eq!(n, 1);
        t.commit().unwrap();
    });
}

#[test]
fn a_checkpoint_during_an_insert_never_loses_its_vm_clear() {
    case("insert", &|e| {
        let mut t = e.begin();
        t.insert("postgres", "t", &rows(100..101)).unwrap();
        t.commit().unwrap();
    });
}
