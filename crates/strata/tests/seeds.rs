//! `strata bench seeds` at small scale: every workload runs on Strata (and on
//! PostgreSQL 15 when it is installed), replay happened (a `redo done` line was read)
//! and, after recovery, the data is what the workload committed (the harness checks it
//! and fails the run otherwise).

use std::path::Path;
use std::process::Command;

const PG_BIN: &str = "/usr/lib/postgresql/15/bin";

fn records(path: &Path) -> Vec<serde_json::Value> {
    serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

fn has(recs: &[serde_json::Value], case: &str, imp: &str, metric: &str) -> bool {
    recs.iter().any(|r| {
        r["case"] == case && r["impl"] == imp && r["metric"] == metric && r["bench"] == "seeds"
    })
}

#[test]
fn every_workload_runs_recovers_and_verifies() {
    let with_pg = Path::new(PG_BIN).join("postgres").exists();
    let engines = if with_pg { "strata,postgres" } else { "strata" };
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("seeds.json");
    let plots = dir.path().join("plots");
    let out = Command::new(env!("CARGO_BIN_EXE_strata"))
        .args(["bench", "seeds", "--engines", engines, "--scale", "small"])
        .args(["--shared-buffers", "128MB", "--json"])
        .arg(&json)
        .arg("--plot")
        .arg(&plots)
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let recs = records(&json);
    let mut imps = vec!["strata"];
    if with_pg {
        imps.push("postgres");
    }
    for id in ["A", "B", "C", "D", "E", "F", "G"] {
        for imp in &imps {
            assert!(has(&recs, id, imp, "primary_seconds"), "{id} {imp}");
            assert!(has(&recs, id, imp, "wal_bytes"), "{id} {imp}");
            if id != "F" {
                // Replay was read from the log's `redo done` line after a crash.
                assert!(
                    has(&recs, id, imp, "replay_seconds"),
                    "{id} {imp}: no replay"
                );
                assert!(has(&recs, id, imp, "restart_seconds"), "{id} {imp}");
            }
        }
        assert!(has(&recs, id, "floor", "replay_seconds"), "{id}: no floor");
    }
    for imp in &imps {
        // C's primary is the least of five drops of 50, four after recovery.
        let line = format!("C    128MB {imp} primaries ");
        let runs = stdout.lines().find(|l| l.starts_with(&line));
        let runs = runs.unwrap_or_else(|| panic!("no {line:?}: {stdout}"));
        assert_eq!(runs.matches(", ").count(), 4, "{runs}");
    }
    if with_pg {
        assert!(stdout.contains("(PostgreSQL / Strata)"), "{stdout}");
    }
    assert!(plots.join("replay_B.png").exists());
}

#[test]
fn a_missing_postgres_is_reported_and_strata_runs_alone() {
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("seeds.json");
    let out = Command::new(env!("CARGO_BIN_EXE_strata"))
        .args(["bench", "seeds", "--scale", "small", "--only", "F,B"])
        .args(["--shared-buffers", "128MB", "--pg-bin"])
        .arg(dir.path().join("no-such-postgres"))
        .arg("--json")
        .arg(&json)
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    assert!(
        stderr.contains("apt-get install -y postgresql-15"),
        "{stderr}"
    );
    let recs = records(&json);
    assert!(recs.iter().all(|r| r["impl"] != "postgres"));
    assert!(has(&recs, "B", "strata", "replay_seconds"));
}
