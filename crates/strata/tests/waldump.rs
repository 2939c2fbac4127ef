//! Property: `strata waldump` shows every record a workload wrote, with the relation
//! and block each names, and its `--stats` tables count exactly the records it prints.

mod common;
use common::*;
use std::path::Path;
use std::process::Command;

fn waldump(data: &Path, args: &[&str]) -> (bool, String, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_strata"))
        .arg("waldump")
        .arg("-D")
        .arg(data)
        .args(args)
        .output()
        .unwrap();
    (
        out.status.success(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// The N column of a `--stats` row.
fn stat_n(table: &str, row: &str) -> u64 {
    let line = table
        .lines()
        .find(|l| l.split_whitespace().next() == Some(row))
        .unwrap_or_else(|| panic!("no row {row} in\n{table}"));
    line.split_whitespace().nth(1).unwrap().parse().unwrap()
}

/// The tuple count of a Heap/MULTI_INSERT line (`ntuples N`).
fn ntuples(line: &str) -> usize {
    let n = line.split_once("ntuples ").unwrap().1;
    n.split(' ').next().unwrap().parse().unwrap()
}

#[test]
fn waldump_shows_each_record_of_a_workload_and_counts_them() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("d");
    let mut s = Server::start(&data, &[]);
    s.psql_ok(
        "postgres",
        &[
            "-c",
            "checkpoint",
            "-c",
            "create table w (a int, b text)",
            "-c",
            "insert into w select g, 'row ' || g from generate_series(1, 250) g",
            "-c",
            "delete from w where a <= 10",
            "-c",
            "vacuum w",
            "-c",
            "drop table w",
        ],
    );
    // No shutdown checkpoint: the control file's redo point is the CHECKPOINT's.
    s.kill9();
    let (ok, dump, err) = waldump(&data, &[]);
    assert!(ok, "{err}");
    assert!(err.contains("end of valid WAL at"), "{err}");
    let lines: Vec<&str> = dump.lines().collect();
    assert!(lines.iter().all(|l| l.starts_with("rmgr: ")), "{dump}");
    // The DROP's commit names the table's files; every change to them is there.
    let dropped: Vec<&str> = lines
        .iter()
        .filter_map(|l| l.split_once("desc: COMMIT rels: ").map(|x| x.1))
        .collect();
    assert_eq!(dropped.len(), 1, "{dump}");
    let on_w = |kind: &str| -> Vec<&str> {
        let blk = format!("blkref #0: rel {} blk", dropped[0]);
        lines
            .iter()
            .copied()
            .filter(|l| l.contains(&format!("desc: {kind} ")) && l.contains(&blk))
            .collect()
    };
    // 250 rows of one INSERT: as many per record as fit a page (access rule 4).
    let multi = on_w("MULTI_INSERT");
    assert!(!multi.is_empty(), "{dump}");
    let in_multi: usize = multi.iter().map(|l| ntuples(l)).sum();
    assert_eq!(on_w("INSERT").len() + in_multi, 250, "{dump}");
    let deleted: usize = on_w("DELETE")
        .iter()
        .map(|l| {
            let offs = l.split_once("offs [").unwrap().1;
            offs.split(']').next().unwrap().split(',').count()
        })
        .sum();
    assert_eq!(deleted, 10, "{dump}");
    assert!(
        on_w("PRUNE").iter().any(|l| l.contains("nremoved 10")),
        "{dump}"
    );
    // The statistics count what the dump printed.
    let (ok, by_type, _) = waldump(&data, &["--stats=record"]);
    assert!(ok);
    let inserts = lines.iter().filter(|l| l.contains("desc: INSERT ")).count();
    assert_eq!(stat_n(&by_type, "Heap/INSERT"), inserts as u64, "{by_type}");
    let multis = lines
        .iter()
        .filter(|l| l.contains("desc: MULTI_INSERT "))
        .count();
    assert_eq!(
        stat_n(&by_type, "Heap/MULTI_INSERT"),
        multis as u64,
        "{by_type}"
    );
    assert_eq!(stat_n(&by_type, "Total"), lines.len() as u64, "{by_type}");
    let (ok, by_rmgr, _) = waldump(&data, &["--stats"]);
    assert!(ok);
    let heap = lines
        .iter()
        .filter(|l| l.starts_with("rmgr: Heap "))
        .count();
    assert_eq!(stat_n(&by_rmgr, "Heap"), heap as u64, "{by_rmgr}");
    filters_limits_and_starts(&data, &lines);
}

/// `-r`, `-n` and `-s` over the dump `lines` of the cluster at `data`, and a start that
/// is not a record.
fn filters_limits_and_starts(data: &Path, lines: &[&str]) {
    let (_, xact, _) = waldump(data, &["-r", "transaction"]);
    assert!(xact.lines().count() >= 4);
    assert!(
        xact.lines().all(|l| l.starts_with("rmgr: Transaction ")),
        "{xact}"
    );
    let (_, five, _) = waldump(data, &["-n", "5"]);
    assert_eq!(five.lines().collect::<Vec<_>>(), lines[..5].to_vec());
    let second = lines[1]
        .split("lsn: ")
        .nth(1)
        .unwrap()
        .split(',')
        .next()
        .unwrap();
    let (_, from_second, _) = waldump(data, &["-s", second]);
    assert_eq!(from_second.lines().next(), Some(lines[1]));
    let (ok, _, err) = waldump(data, &["-s", "0/1"]);
    assert!(!ok && err.contains("no valid record at 0/1"), "{err}");
}
