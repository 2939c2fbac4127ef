//! Property: `strata bench bufpool` runs end to end as a user would call it, writes one
//! JSON record per figure in the format of docs/WORKLOADS.md §2 (every case, implementation and size),
//! and refuses bad settings with a clear message and a non-zero exit.

use std::process::Command;

fn strata() -> Command {
    Command::new(env!("CARGO_BIN_EXE_strata"))
}

#[test]
fn bufpool_bench_writes_every_figure() {
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("bufpool.json");
    let out = strata()
        .args([
            "bench",
            "bufpool",
            "--shared-buffers",
            "32MB,48MB",
            "--reps-scale",
            "0.01",
        ])
        .arg("--json")
        .arg(&json)
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        stdout.contains("drop_1000pages") && stdout.contains("48MB/32MB"),
        "{stdout}"
    );

    let records: Vec<serde_json::Value> =
        serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    let find = |case: &str, imp: &str, size: u64, metric: &str| {
        records.iter().find(|r| {
            r["bench"] == "bufpool"
                && r["case"] == case
                && r["impl"] == imp
                && r["shared_buffers"] == size
                && r["metric"] == metric
        })
    };
    for size in [32u64 << 20, 48 << 20] {
        for case in [
            "drop_1page",
            "drop_1000pages",
            "truncate_3forks",
            "drop_database",
            "dirty_enum_0",
            "dirty_enum_1000",
        ] {
            for imp in ["strata", "full_scan"] {
                let r = find(case, imp, size, "seconds_per_op")
                    .unwrap_or_else(|| panic!("missing {case}/{imp}/{size}"));
                let v = r["value"].as_f64().unwrap();
                assert!(v > 0.0 && v < 1.0, "{case}/{imp}: {v}");
            }
        }
        for imp in ["strata", "hashmap"] {
            let v = find("hit", imp, size, "ops_per_second").unwrap()["value"]
                .as_f64()
                .unwrap();
            assert!(v > 1000.0, "hit/{imp}: {v}");
        }
        assert!(find("idle_pool", "strata", size, "peak_rss_bytes").is_some());
    }
    assert_eq!(records.len(), 2 * (6 * 2 + 2 + 1));
}

#[test]
fn only_runs_the_named_cases() {
    let out = strata()
        .args([
            "bench",
            "bufpool",
            "--shared-buffers",
            "32MB",
            "--only",
            "drop_1page",
            "--reps-scale",
            "0.01",
        ])
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success());
    assert!(
        stdout.contains("drop_1page") && !stdout.contains("truncate_3forks"),
        "{stdout}"
    );
}

#[test]
fn bad_settings_are_refused_clearly() {
    for (value, expect) in [
        (
            "12parsecs",
            "invalid value for parameter \"shared_buffers\"",
        ),
        ("64kB", "outside the valid range"),
        ("1MB", "at least 32MB"),
    ] {
        let out = strata()
            .args(["bench", "bufpool", "--shared-buffers", value])
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(!out.status.success(), "{value} accepted");
        assert!(stderr.contains(expect), "{value}: {stderr}");
    }
}

/// `strata bench replay` at a small scale: every workload runs on a fresh cluster, the
/// primary is SIGKILLed, recovery's `redo done` line is read, and the JSON has every
/// figure (F: the primary only; M: replay memory at the largest size).
#[test]
fn replay_bench_runs_every_workload_and_reads_the_redo_line() {
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("replay.json");
    let out = strata()
        .args([
            "bench",
            "replay",
            "--scale",
            "0.005",
            "--shared-buffers",
            "1MB,4MB",
            "--json",
        ])
        .arg(&json)
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let records: Vec<serde_json::Value> =
        serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    let has = |case: &str, size: u64, metric: &str| {
        records.iter().any(|r| {
            r["bench"] == "replay"
                && r["case"] == case
                && r["shared_buffers"] == size
                && r["metric"] == metric
        })
    };
    for size in [1u64 << 20, 4 << 20] {
        for case in ["A", "B", "C", "D", "E", "G"] {
            for metric in [
                "primary_seconds",
                "wal_bytes",
                "replay_seconds",
                "restart_seconds",
                "peak_rss_bytes",
            ] {
                assert!(has(case, size, metric), "{case} {size} {metric}\n{stdout}");
            }
        }
        assert!(has("F", size, "primary_seconds") && !has("F", size, "replay_seconds"));
    }
    assert!(has("M", 4 << 20, "rss_growth_bytes") && !has("M", 1 << 20, "replay_seconds"));
    assert!(stdout.contains("B at 1MB: replay"), "{stdout}");
    // Nonsense is refused.
    let bad = strata()
        .args(["bench", "replay", "--only", "Z"])
        .output()
        .unwrap();
    assert!(!bad.status.success());
    assert!(String::from_utf8_lossy(&bad.stderr).contains("unknown workload \"Z\""));
}
