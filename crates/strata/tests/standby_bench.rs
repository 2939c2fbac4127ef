//! `strata bench standby` at small scale: on Strata (and, when PostgreSQL 15 is
//! installed, on PostgreSQL for scenario B) a standby made by `pg_basebackup -R`
//! catches up after each scenario, and every scenario yields finite, non-negative lag
//! or replay figures, a positive primary time and WAL written.

use std::path::Path;
use std::process::Command;

const PG_BIN: &str = "/usr/lib/postgresql/15/bin";

fn records(path: &Path) -> Vec<serde_json::Value> {
    serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

fn value(recs: &[serde_json::Value], case: &str, imp: &str, metric: &str) -> Option<f64> {
    recs.iter()
        .find(|r| {
            r["bench"] == "standby"
                && r["case"] == case
                && r["impl"] == imp
                && r["metric"] == metric
        })
        .and_then(|r| r["value"].as_f64())
}

/// Runs the bench at small scale, 128MB, and returns its records.
fn run(engines: &str, only: &str) -> Vec<serde_json::Value> {
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("standby.json");
    let out = Command::new(env!("CARGO_BIN_EXE_strata"))
        .args(["bench", "standby", "--scale", "small", "--engines", engines])
        .args(["--shared-buffers", "128MB", "--only", only, "--json"])
        .arg(&json)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    records(&json)
}

fn check(recs: &[serde_json::Value], case: &str, imp: &str) {
    let get = |m: &str| value(recs, case, imp, m);
    let lag = get(if case == "A" {
        "replay_seconds"
    } else {
        "lag_seconds"
    });
    let lag = lag.unwrap_or_else(|| panic!("{case} {imp}: no lag/replay record in {recs:?}"));
    assert!(lag.is_finite() && lag >= 0.0, "{case} {imp}: lag {lag}");
    let primary = get("primary_seconds").unwrap_or_else(|| panic!("{case} {imp}: no primary"));
    assert!(primary > 0.0, "{case} {imp}: primary {primary}");
    let wal = get("wal_bytes").unwrap_or_else(|| panic!("{case} {imp}: no wal_bytes"));
    assert!(wal > 0.0, "{case} {imp}: wal_bytes {wal}");
    if case == "B" || case == "G" {
        for m in ["replay_bytes_per_second", "generation_bytes_per_second"] {
            let r = get(m).unwrap_or_else(|| panic!("{case} {imp}: no {m}"));
            assert!(r.is_finite() && r > 0.0, "{case} {imp}: {m} {r}");
        }
    }
}

#[test]
fn strata_standby_catches_up_in_every_scenario() {
    if !Path::new(PG_BIN).join("pg_basebackup").exists() {
        eprintln!(
            "skipped: {PG_BIN}/pg_basebackup is not installed (apt-get install -y postgresql-15)"
        );
        return;
    }
    let recs = run("strata", "B,G,A");
    for case in ["B", "G", "A"] {
        check(&recs, case, "strata");
    }
}

#[test]
fn postgres_standby_runs_scenario_b() {
    if !Path::new(PG_BIN).join("postgres").exists() {
        eprintln!("skipped: PostgreSQL 15 is not installed in {PG_BIN}");
        return;
    }
    let recs = run("postgres", "B");
    check(&recs, "B", "postgres");
}
