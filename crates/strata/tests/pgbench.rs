//! Property: PostgreSQL 15's pgbench runs against Strata: `pgbench -i` (its tables,
//! COPY FROM STDIN with FREEZE, VACUUM ANALYZE, the primary keys by ALTER TABLE ...
//! ADD PRIMARY KEY), then the TPC-B-like script in the simple and the prepared
//! protocol, with no failed transaction, and afterwards the balances agree: every
//! delta is in the history and in each of the three balance tables, and each primary
//! key checks against its table (`bt_index_check`).
//! Skipped with a message when pgbench is not installed.

mod common;
use common::*;
use std::process::Command;

const PGBENCH: &str = "/usr/lib/postgresql/15/bin/pgbench";

fn pgbench(port: u16, args: &[&str]) -> String {
    let out = Command::new(PGBENCH)
        .args(["-h", "127.0.0.1", "-p", &port.to_string(), "-U", "strata"])
        .args(args)
        .arg("postgres")
        .output()
        .expect("pgbench");
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(out.status.success(), "pgbench {args:?}:\n{text}");
    text
}

#[test]
fn pgbench_initializes_and_runs_with_consistent_balances() {
    if !std::path::Path::new(PGBENCH).exists() {
        eprintln!("skipped: {PGBENCH} is not installed (apt-get install -y postgresql-15)");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let s = Server::start(&dir.path().join("d"), &[]);
    pgbench(s.port, &["-i", "-s", "1", "-q"]);
    assert_eq!(
        s.psql_ok("postgres", &["-c", "select count(*) from pgbench_accounts"])
            .trim(),
        "100000"
    );
    let sums = |s: &Server| -> Vec<i64> {
        s.psql_ok(
            "postgres",
            &[
                "-c",
                "select sum(abalance) from pgbench_accounts",
                "-c",
                "select sum(tbalance) from pgbench_tellers",
                "-c",
                "select sum(bbalance) from pgbench_branches",
            ],
        )
        .lines()
        .map(|l| l.parse().unwrap())
        .collect()
    };
    for mode in ["simple", "prepared"] {
        let before = sums(&s);
        let out = pgbench(s.port, &["-T", "2", "-M", mode]);
        assert!(
            out.contains("number of failed transactions: 0 (0.000%)"),
            "{out}"
        );
        // pgbench empties the history before each run: it holds this run's deltas.
        let hist = s.psql_ok(
            "postgres",
            &[
                "-c",
                "select count(*), sum(delta) from pgbench_history",
                "-c",
                "select count(*) from pgbench_history where mtime > now()",
            ],
        );
        let f: Vec<&str> = hist.trim().split(['|', '\n']).collect();
        let delta: i64 = f[1].parse().unwrap();
        assert!(
            f[0].parse::<i64>().unwrap() > 0,
            "{mode}: no transaction ran"
        );
        assert_eq!(f[2], "0", "{mode}: a history row from the future");
        let after = sums(&s);
        for (b, a) in before.iter().zip(&after) {
            assert_eq!(
                a - b,
                delta,
                "{mode}: balances {before:?} -> {after:?}, history {hist}"
            );
        }
    }
    for t in ["accounts", "tellers", "branches"] {
        let q = format!("select bt_index_check('pgbench_{t}_pkey', true)");
        s.psql_ok("postgres", &["-c", &q]);
    }
}
