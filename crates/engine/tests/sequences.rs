//! Sequences (issue 14): values outside transactions, never handed out twice —
//! not after an abort, a checkpoint, nor a power loss that takes every unsynced
//! write — dropped with the column that owns them, refused where a table is meant.

mod common;
use common::Cluster;
use std::sync::Arc;
use strata_engine::*;
use strata_vfs::sim::SimVfs;

const DB: &str = "postgres";

fn def(o: SeqOptions) -> SeqDef {
    o.define(false).unwrap()
}

#[test]
fn values_survive_aborts_checkpoints_and_power_loss_without_repeating() {
    let c = Cluster::new();
    let sim = Arc::new(SimVfs::new(None, false).unwrap());
    let e = c.open(sim.clone());
    let mut t = e.begin();
    t.create_sequence(DB, "s", def(SeqOptions::default()))
        .unwrap();
    // The writer sees the sequence it created; nobody else does.
    assert_eq!(e.nextval(DB, "s", true).unwrap().1, 1);
    assert_eq!(e.nextval(DB, "s", false).unwrap_err().sqlstate(), "42P01");
    t.commit().unwrap();
    let mut handed = vec![1];
    // Sequence rule 1: an aborted transaction's values stay used.
    let t = e.begin();
    handed.push(e.nextval(DB, "s", true).unwrap().1);
    t.abort().unwrap();
    for i in 0..100 {
        if i == 40 {
            e.checkpoint().unwrap(); // rule 2: the next call logs again
        }
        handed.push(e.nextval(DB, "s", false).unwrap().1);
    }
    let want: Vec<i64> = (1..=102).collect();
    assert_eq!(handed, want);
    // A last value handed out inside a transaction that commits: its record is
    // durable with the commit (rule 4).
    let mut t = e.begin();
    let (_, last) = e.nextval(DB, "s", true).unwrap();
    t.create_table(DB, "g", &[Column::new("a", ColType::Int8)], None)
        .unwrap();
    t.insert(DB, "g", &[vec![Datum::Int8(last)]]).unwrap();
    t.commit().unwrap();
    // Values from the page alone (logged ahead), and a transaction in flight whose
    // writes are not synced.
    let mut last = last;
    for _ in 0..5 {
        let (_, v) = e.nextval(DB, "s", false).unwrap();
        assert_eq!(v, last + 1);
        last = v;
    }
    let mut t = e.begin();
    let junk: Vec<Vec<Datum>> = (0..20_000).map(|i| vec![Datum::Int8(-i)]).collect();
    t.insert(DB, "g", &junk).unwrap();
    std::mem::forget(t);
    e.abandon();
    let (kept, total) = sim.power_loss(3).unwrap();
    assert!(kept < total, "the crash lost unsynced writes");
    let e = c.open(strata_vfs::StdVfs::arc());
    let (_, after) = e.nextval(DB, "s", false).unwrap();
    assert!(
        after > last,
        "{after} handed out again after the crash (last {last})"
    );
    assert!(
        after <= last + 1 + 32,
        "{after}: more than SEQ_LOG_VALS skipped"
    );
    // The sequence reads as a table of one row.
    let rows = e.scan(DB, "s").unwrap();
    assert_eq!(rows.len(), 1);
    assert_eq!(rows[0][0], Datum::Int8(after));
    assert_eq!(rows[0][2], Datum::Bool(true));
    e.close().unwrap();
}

#[test]
fn bounds_cycles_and_setval() {
    let c = Cluster::new();
    let e = c.open(strata_vfs::StdVfs::arc());
    let mut t = e.begin();
    let down = SeqOptions {
        increment: Some(-2),
        min: Some(Some(-5)),
        ..Default::default()
    };
    t.create_sequence(DB, "down", def(down)).unwrap();
    let cyc = SeqOptions {
        max: Some(Some(3)),
        cycle: Some(true),
        ..Default::default()
    };
    t.create_sequence(DB, "cyc", def(cyc)).unwrap();
    t.commit().unwrap();
    let next = |s: &str| e.nextval(DB, s, false).map(|v| v.1);
    assert_eq!(next("down").unwrap(), -1);
    assert_eq!(next("down").unwrap(), -3);
    assert_eq!(next("down").unwrap(), -5);
    let err = next("down").unwrap_err();
    assert_eq!(err.sqlstate(), "2200H");
    assert_eq!(
        err.to_string(),
        "nextval: reached minimum value of sequence \"down\" (-5)"
    );
    let got: Vec<i64> = (0..7).map(|_| next("cyc").unwrap()).collect();
    assert_eq!(got, vec![1, 2, 3, 1, 2, 3, 1]);
    let err = e.setval(DB, "cyc", (4, true), false).unwrap_err();
    assert_eq!(err.sqlstate(), "22003");
    assert_eq!(
        err.to_string(),
        "setval: value 4 is out of bounds for sequence \"cyc\" (1..3)"
    );
    e.setval(DB, "cyc", (2, false), false).unwrap();
    assert_eq!(next("cyc").unwrap(), 2);
    e.setval(DB, "cyc", (2, true), false).unwrap();
    assert_eq!(next("cyc").unwrap(), 3);
    // A restart replays the setvals: the state is the last one.
    e.close().unwrap();
    let e = c.open(strata_vfs::StdVfs::arc());
    assert_eq!(e.nextval(DB, "cyc", false).unwrap().1, 1);
    e.close().unwrap();
}

#[test]
fn owned_sequences_go_with_their_column_and_table() {
    let c = Cluster::new();
    let e = c.open(strata_vfs::StdVfs::arc());
    let mut t = e.begin();
    for s in ["t_id_seq", "t_n_seq"] {
        t.create_sequence(DB, s, SeqOptions::default().define(true).unwrap())
            .unwrap();
    }
    let cols = vec![
        Column {
            owned_seq: Some("t_id_seq".into()),
            ..Column::new("id", ColType::Int8)
        },
        Column {
            owned_seq: Some("t_n_seq".into()),
            identity: Some(true),
            ..Column::new("n", ColType::Int8)
        },
        Column::new("v", ColType::Text),
    ];
    t.create_table(DB, "t", &cols, None).unwrap();
    t.commit().unwrap();
    let before = e.nextval(DB, "t_n_seq", false).unwrap().1;
    assert_eq!(before, 1);

    let mut t = e.begin();
    // 2BP01: a column owns it. 42809: a sequence is not a table, and the reverse.
    assert_eq!(
        t.drop_sequence(DB, "t_id_seq").unwrap_err().sqlstate(),
        "2BP01"
    );
    assert_eq!(
        t.drop_table(DB, "t_id_seq").unwrap_err().sqlstate(),
        "42809"
    );
    assert_eq!(t.drop_sequence(DB, "t").unwrap_err().sqlstate(), "42809");
    let err = t.insert(DB, "t_id_seq", &[]).unwrap_err();
    assert_eq!(err.to_string(), "cannot change sequence \"t_id_seq\"");
    t.abort().unwrap();

    let mut t = e.begin();
    t.drop_column(DB, "t", "n").unwrap();
    // The writer no longer finds it; the others still do until the commit.
    assert_eq!(
        e.nextval(DB, "t_n_seq", true).unwrap_err().sqlstate(),
        "42P01"
    );
    assert_eq!(e.nextval(DB, "t_n_seq", false).unwrap().1, 2);
    t.commit().unwrap();
    assert_eq!(
        e.nextval(DB, "t_n_seq", false).unwrap_err().sqlstate(),
        "42P01"
    );
    assert_eq!(e.nextval(DB, "t_id_seq", false).unwrap().1, 1);

    let mut t = e.begin();
    t.drop_table(DB, "t").unwrap();
    t.commit().unwrap();
    assert_eq!(
        e.nextval(DB, "t_id_seq", false).unwrap_err().sqlstate(),
        "42P01"
    );
    // Their files went with them.
    e.close().unwrap();
    let e = c.open(strata_vfs::StdVfs::arc());
    let mut t = e.begin();
    t.create_sequence(DB, "t_id_seq", def(SeqOptions::default()))
        .unwrap();
    t.commit().unwrap();
    assert_eq!(e.nextval(DB, "t_id_seq", false).unwrap().1, 1);
    e.close().unwrap();
}

/// Sequence rule 2's second half: a checkpoint writes the page with values logged
/// ahead; the values handed out after it must be covered by a record after the
/// redo point, or a crash would replay nothing and hand them out again.
#[test]
fn a_checkpoint_makes_the_next_value_log_again() {
    let c = Cluster::new();
    let sim = Arc::new(SimVfs::new(None, false).unwrap());
    let e = c.open(sim.clone());
    let mut t = e.begin();
    t.create_sequence(DB, "s", def(SeqOptions::default()))
        .unwrap();
    t.commit().unwrap();
    for want in 1..=3 {
        assert_eq!(e.nextval(DB, "s", false).unwrap().1, want);
    }
    e.checkpoint().unwrap();
    let mut last = 0;
    for _ in 0..5 {
        last = e.nextval(DB, "s", false).unwrap().1;
    }
    assert_eq!(last, 8);
    e.abandon();
    sim.power_loss(1).unwrap();
    let e = c.open(strata_vfs::StdVfs::arc());
    let (_, after) = e.nextval(DB, "s", false).unwrap();
    assert!(after > last, "{after} handed out again (last {last})");
    e.close().unwrap();
}
