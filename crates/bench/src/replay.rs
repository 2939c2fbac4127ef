//! `strata bench replay`: the brief's workloads (§5) through the engine API, each on a
//! fresh cluster per `shared_buffers` size: time on the primary, WAL bytes, then a
//! SIGKILL and the replay time read from the recovering process's `redo done ...
//! elapsed` line, its restart time and peak RSS.
//!
//! | id | workload (scale 1) | measured |
//! |----|--------------------|----------|
//! | A | DROP DATABASE of a database with 1,000 tables in 1,000 tablespaces | primary, replay |
//! | B | 20,000 one-row tables; DROP TABLE each in its own transaction | primary, replay |
//! | C | 100,000 tables; one transaction drops 50 | primary, replay |
//! | D | 2,000 tables of 2,000 rows; DELETE all; VACUUM truncates every fork | primary, replay |
//! | E | 500 CREATE DATABASE ... FILE_COPY, then 500 ... WAL_LOG | primary, replay |
//! | F | CHECKPOINT with nothing dirty (median of 5) | primary |
//! | G | 200,000 inserts in transactions of 1,000 rows | primary, replay |
//! | M | 100,000 one-per-transaction drops: replay memory before and after | replay RSS |
//!
//! Processes: the parent creates the cluster, runs `strata debug replay-primary` (set-up,
//! CHECKPOINT, the timed workload, then it waits to be killed), SIGKILLs it, then runs
//! `strata debug recover` and reads its log. `--scale` multiplies every count.

use super::{format_bytes, format_seconds, Record};
use indicatif::{ProgressBar, ProgressStyle};
use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};
use strata_engine::{ColType, Column, CreateDbStrategy, Engine, Settings, Value};
use strata_types::units::format_memory;

pub const WORKLOADS: [&str; 8] = ["A", "B", "C", "D", "E", "F", "G", "M"];

#[derive(clap::Args, Clone)]
pub struct Args {
    /// shared_buffers sizes, PostgreSQL units, comma-separated.
    #[arg(long, value_delimiter = ',', default_value = "128MB,8GB")]
    pub shared_buffers: Vec<String>,
    /// Multiplies every count of every workload (e.g. 0.01 for a quick run).
    #[arg(long, default_value_t = 1.0)]
    pub scale: f64,
    /// Run only these workloads (comma-separated ids); all by default.
    #[arg(long, value_delimiter = ',')]
    pub only: Vec<String>,
    #[arg(long)]
    pub json: Option<PathBuf>,
}

fn count(base: usize, scale: f64) -> usize {
    ((base as f64 * scale).round() as usize).max(1)
}

fn cols() -> Vec<Column> {
    vec![
        Column::new("id", ColType::Int4),
        Column::new("v", ColType::Text),
    ]
}

fn row(i: i32) -> Vec<Value> {
    vec![Value::Int4(i), Value::Text(format!("value {i:>10}"))]
}

fn e2s(e: strata_engine::EngineError) -> String {
    e.to_string()
}

/// Creates `n` tables named `{prefix}{i}` in `db`, `rows` rows each, in batches.
fn make_tables(
    e: &Engine,
    db: &str,
    prefix: &str,
    n: usize,
    rows: i32,
    spc: &dyn Fn(usize) -> Option<String>,
) -> Result<(), String> {
    for chunk in (0..n).collect::<Vec<_>>().chunks(500) {
        let mut t = e.begin();
        for &i in chunk {
            let name = format!("{prefix}{i}");
            t.create_table(db, &name, &cols(), spc(i).as_deref())
                .map_err(e2s)?;
            if rows > 0 {
                let r: Vec<Vec<Value>> = (0..rows).map(row).collect();
                t.insert(db, &name, &r).map_err(e2s)?;
            }
        }
        t.commit().map_err(e2s)?;
    }
    Ok(())
}

/// The primary: set-up, CHECKPOINT, the timed workload; prints the figures, then waits
/// for the SIGKILL.
pub fn primary(
    dir: &Path,
    settings: Settings,
    workload: &str,
    scale: f64,
    spc_root: &Path,
) -> Result<(), String> {
    let e = Engine::open(dir, settings).map_err(e2s)?;
    // Set-up (not timed).
    match workload {
        "A" => {
            let n = count(1000, scale);
            let mut t = e.begin();
            t.create_database("a_db", "template1", None, CreateDbStrategy::WalLog)
                .map_err(e2s)?;
            t.commit().map_err(e2s)?;
            for chunk in (0..n).collect::<Vec<_>>().chunks(100) {
                let mut t = e.begin();
                for &i in chunk {
                    let loc = spc_root.join(format!("ts{i}"));
                    std::fs::create_dir_all(&loc).map_err(|e| e.to_string())?;
                    t.create_tablespace(&format!("ts{i}"), loc.to_str().ok_or("path")?)
                        .map_err(e2s)?;
                }
                t.commit().map_err(e2s)?;
            }
            make_tables(&e, "a_db", "t", n, 1, &|i| Some(format!("ts{i}")))?;
        }
        "B" => make_tables(&e, "postgres", "b", count(20_000, scale), 1, &|_| None)?,
        "C" => make_tables(&e, "postgres", "c", count(100_000, scale), 0, &|_| None)?,
        "M" => make_tables(&e, "postgres", "m", count(100_000, scale), 0, &|_| None)?,
        "D" => {
            let n = count(2000, scale);
            make_tables(&e, "postgres", "d", n, 2000, &|_| None)?;
            e.vacuum("postgres", None).map_err(e2s)?; // maps exist, VM bits set
        }
        "F" => make_tables(
            &e,
            "postgres",
            "f",
            1,
            count(100_000, scale) as i32,
            &|_| None,
        )?,
        "G" => make_tables(&e, "postgres", "g", 1, 0, &|_| None)?,
        "E" => {}
        other => return Err(format!("unknown workload \"{other}\"")),
    }
    e.checkpoint().map_err(e2s)?;
    let lsn0 = e.current_wal_lsn();
    let started = Instant::now();
    let mut seconds = None;
    match workload {
        "A" => {
            let mut t = e.begin();
            t.drop_database("a_db").map_err(e2s)?;
            t.commit().map_err(e2s)?;
        }
        "B" | "M" => {
            let (prefix, n) = if workload == "B" {
                ("b", count(20_000, scale))
            } else {
                ("m", count(100_000, scale))
            };
            for i in 0..n {
                let mut t = e.begin();
                t.drop_table("postgres", &format!("{prefix}{i}"))
                    .map_err(e2s)?;
                t.commit().map_err(e2s)?;
            }
        }
        "C" => {
            let mut t = e.begin();
            for i in 0..50.min(count(100_000, scale)) {
                t.drop_table("postgres", &format!("c{i}")).map_err(e2s)?;
            }
            t.commit().map_err(e2s)?;
        }
        "D" => {
            for i in 0..count(2000, scale) {
                let mut t = e.begin();
                t.delete_where("postgres", &format!("d{i}"), &|_| true)
                    .map_err(e2s)?;
                t.commit().map_err(e2s)?;
            }
            e.vacuum("postgres", None).map_err(e2s)?;
        }
        "E" => {
            let n = count(500, scale);
            for (prefix, strategy) in [
                ("e_fc", CreateDbStrategy::FileCopy),
                ("e_wl", CreateDbStrategy::WalLog),
            ] {
                for i in 0..n {
                    let mut t = e.begin();
                    t.create_database(&format!("{prefix}{i}"), "template1", None, strategy)
                        .map_err(e2s)?;
                    t.commit().map_err(e2s)?;
                }
            }
        }
        "F" => {
            let mut times: Vec<f64> = (0..5)
                .map(|_| {
                    let t = Instant::now();
                    e.checkpoint().map(|_| t.elapsed().as_secs_f64())
                })
                .collect::<Result<_, _>>()
                .map_err(e2s)?;
            times.sort_by(f64::total_cmp);
            seconds = Some(times[2]);
        }
        "G" => {
            let n = count(200, scale) as i32;
            for k in 0..n {
                let rows: Vec<Vec<Value>> = (k * 1000..(k + 1) * 1000).map(row).collect();
                let mut t = e.begin();
                t.insert("postgres", "g0", &rows).map_err(e2s)?;
                t.commit().map_err(e2s)?;
            }
        }
        _ => unreachable!(),
    }
    let secs = seconds.unwrap_or_else(|| started.elapsed().as_secs_f64());
    let wal = e.current_wal_lsn().0 - lsn0.0;
    let mut out = std::io::stdout().lock();
    writeln!(out, "RESULT primary_seconds={secs} wal_bytes={wal}")
        .and_then(|()| out.flush())
        .map_err(|e| e.to_string())?;
    loop {
        std::thread::sleep(Duration::from_secs(3600)); // until the SIGKILL
    }
}

fn status_kb(field: &str) -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with(field))
                .and_then(|l| l.split_whitespace().nth(1))
                .and_then(|v| v.parse().ok())
        })
        .unwrap_or(0)
}

/// The recovering process: opens (replays) the cluster, logging to stderr, and prints
/// its RSS before and after and its peak.
pub fn recover(dir: &Path, settings: Settings) -> Result<(), String> {
    let started = Instant::now();
    let before = status_kb("VmRSS:") * 1024;
    let settings = Settings {
        log: std::sync::Arc::new(|l: &str| eprintln!("LOG:  {l}")),
        ..settings
    };
    let (e, info) = Engine::open_with_info(dir, settings).map_err(e2s)?;
    let restart = started.elapsed().as_secs_f64();
    let after = status_kb("VmRSS:") * 1024;
    let peak = status_kb("VmHWM:") * 1024;
    println!(
        "RESULT restart_seconds={restart} rss_before={before} rss_after={after} peak_rss={peak} records={}",
        info.records
    );
    e.close().map_err(e2s)
}

fn parse_kv(line: &str, key: &str) -> Option<f64> {
    line.split_whitespace()
        .find_map(|w| w.strip_prefix(key)?.strip_prefix('=')?.parse().ok())
}

/// `elapsed: Z s` of the `redo done` line, as PostgreSQL's own reports read it.
pub fn redo_seconds(log: &str) -> Option<f64> {
    let line = log.lines().find(|l| l.contains("redo done at"))?;
    let rest = line.split("elapsed:").nth(1)?;
    rest.split_whitespace().next()?.parse().ok()
}

/// Figures of one workload at one size.
#[derive(Debug, Default, Clone)]
pub struct Figures {
    pub primary_seconds: f64,
    pub wal_bytes: f64,
    pub replay_seconds: Option<f64>,
    pub restart_seconds: f64,
    pub peak_rss: f64,
    pub rss_before: f64,
    pub rss_after: f64,
}

fn run_one(workload: &str, sb: &str, scale: f64, bar: &ProgressBar) -> Result<Figures, String> {
    let exe = std::env::current_exe().map_err(|e| e.to_string())?;
    let tmp = tempfile::tempdir().map_err(|e| e.to_string())?;
    let data = tmp.path().join("data");
    let spc_root = tmp.path().join("spc");
    let settings_arg = format!("shared_buffers={sb}");
    let quiet = Settings {
        log: std::sync::Arc::new(|_: &str| {}),
        ..strata_server::config::settings_from(&[
            settings_arg.clone(),
            "checkpoint_timeout=1h".into(),
            "max_wal_size=64GB".into(),
        ])?
    };
    Engine::init(&data, quiet).map_err(e2s)?;
    let common = [
        "-c",
        &settings_arg,
        "-c",
        "checkpoint_timeout=1h",
        "-c",
        "max_wal_size=64GB",
    ];
    bar.set_message(format!("{workload} at {sb}: set-up and primary"));
    let primary_log = tmp.path().join("primary.log");
    let mut child = Command::new(&exe)
        .args(["debug", "replay-primary", "-D"])
        .arg(&data)
        .args([
            "--workload",
            workload,
            "--scale",
            &scale.to_string(),
            "--spc-root",
        ])
        .arg(&spc_root)
        .args(common)
        .stdout(Stdio::piped())
        .stderr(std::fs::File::create(&primary_log).map_err(|e| e.to_string())?)
        .spawn()
        .map_err(|e| e.to_string())?;
    let stdout = child.stdout.take().expect("piped");
    let mut result = None;
    for line in BufReader::new(stdout).lines() {
        let line = line.map_err(|e| e.to_string())?;
        if line.starts_with("RESULT") {
            result = Some(line);
            break;
        }
    }
    let _ = child.kill(); // SIGKILL, as the reports crashed their servers
    let _ = child.wait();
    let Some(result) = result else {
        return Err(format!(
            "workload {workload} at {sb}: the primary failed:\n{}",
            std::fs::read_to_string(&primary_log).unwrap_or_default()
        ));
    };
    let mut f = Figures {
        primary_seconds: parse_kv(&result, "primary_seconds").ok_or("no primary_seconds")?,
        wal_bytes: parse_kv(&result, "wal_bytes").ok_or("no wal_bytes")?,
        ..Default::default()
    };
    if workload == "F" {
        return Ok(f); // CHECKPOINT is measured on the primary only (brief §5)
    }
    bar.set_message(format!("{workload} at {sb}: recovery"));
    let out = Command::new(&exe)
        .args(["debug", "recover", "-D"])
        .arg(&data)
        .args(common)
        .output()
        .map_err(|e| e.to_string())?;
    let log = String::from_utf8_lossy(&out.stderr).to_string();
    let stdout = String::from_utf8_lossy(&out.stdout).to_string();
    if !out.status.success() {
        return Err(format!(
            "workload {workload} at {sb}: recovery failed:\n{log}"
        ));
    }
    let line = stdout
        .lines()
        .find(|l| l.starts_with("RESULT"))
        .ok_or("recovery printed no RESULT")?;
    f.restart_seconds = parse_kv(line, "restart_seconds").unwrap_or(0.0);
    f.rss_before = parse_kv(line, "rss_before").unwrap_or(0.0);
    f.rss_after = parse_kv(line, "rss_after").unwrap_or(0.0);
    f.peak_rss = parse_kv(line, "peak_rss").unwrap_or(0.0);
    f.replay_seconds = redo_seconds(&log);
    if f.replay_seconds.is_none() {
        return Err(format!(
            "workload {workload} at {sb}: no \"redo done\" line in the log:\n{log}"
        ));
    }
    Ok(f)
}

pub fn run(args: &Args) -> Result<Vec<Record>, String> {
    let sizes: Vec<(String, u64)> = args
        .shared_buffers
        .iter()
        .map(|s| {
            strata_buffer::parse_shared_buffers(s)
                .map(|b| (s.clone(), b))
                .map_err(|e| e.to_string())
        })
        .collect::<Result<_, _>>()?;
    for w in &args.only {
        if !WORKLOADS.contains(&w.as_str()) {
            return Err(format!(
                "unknown workload \"{w}\"; the workloads are {}",
                WORKLOADS.join(", ")
            ));
        }
    }
    if !(args.scale > 0.0 && args.scale <= 10.0) {
        return Err(format!("--scale {} is outside (0, 10]", args.scale));
    }
    let chosen: Vec<&str> = WORKLOADS
        .iter()
        .copied()
        .filter(|w| args.only.is_empty() || args.only.iter().any(|o| o == w))
        .collect();
    let bar = ProgressBar::new((chosen.len() * sizes.len()) as u64).with_style(
        ProgressStyle::with_template("{bar:30} {pos}/{len} {elapsed} {msg}").expect("template"),
    );
    let mut figures = Vec::new();
    for w in &chosen {
        for (label, bytes) in &sizes {
            // M measures replay memory: once, at the largest size given.
            if *w == "M" && Some(bytes) != sizes.iter().map(|(_, b)| b).max() {
                continue;
            }
            let f = run_one(w, label, args.scale, &bar)?;
            figures.push((w.to_string(), label.clone(), *bytes, f));
            bar.inc(1);
        }
    }
    bar.finish_and_clear();
    println!(
        "{:<3} {:>7} {:>11} {:>10} {:>11} {:>11} {:>10}",
        "id", "size", "primary", "WAL", "replay", "restart", "peak RSS"
    );
    let mut records = Vec::new();
    for (w, label, bytes, f) in &figures {
        println!(
            "{:<3} {:>7} {:>11} {:>10} {:>11} {:>11} {:>10}",
            w,
            label,
            format_seconds(f.primary_seconds),
            format_bytes(f.wal_bytes),
            f.replay_seconds
                .map(format_seconds)
                .unwrap_or_else(|| "-".into()),
            if *w == "F" {
                "-".into()
            } else {
                format_seconds(f.restart_seconds)
            },
            if *w == "F" {
                "-".into()
            } else {
                format_bytes(f.peak_rss)
            }
        );
        let mut push = |metric: &'static str, value: f64| {
            records.push(Record {
                bench: "replay",
                case: w.clone(),
                implementation: "strata",
                shared_buffers: *bytes,
                metric,
                value,
            })
        };
        push("primary_seconds", f.primary_seconds);
        push("wal_bytes", f.wal_bytes);
        if let Some(r) = f.replay_seconds {
            push("replay_seconds", r);
        }
        if w != "F" {
            push("restart_seconds", f.restart_seconds);
            push("peak_rss_bytes", f.peak_rss);
        }
    }
    // The checks, as measured in this run.
    println!();
    let get = |w: &str, b: u64| {
        figures
            .iter()
            .find(|(x, _, y, _)| x == w && *y == b)
            .map(|t| &t.3)
    };
    if let (Some((_, small)), Some((_, large))) = (
        sizes.iter().min_by_key(|s| s.1).cloned(),
        sizes.iter().max_by_key(|s| s.1).cloned(),
    ) {
        if small != large {
            for w in &chosen {
                if let (Some(a), Some(b)) = (get(w, small), get(w, large)) {
                    if let (Some(ra), Some(rb)) = (a.replay_seconds, b.replay_seconds) {
                        let ratio = rb / ra.max(1e-6);
                        println!(
                            "{w}: replay at {} / at {} = {ratio:.2} ({})",
                            format_memory(large),
                            format_memory(small),
                            if ratio <= 1.5 {
                                "within 1.5x"
                            } else {
                                "NOT within 1.5x"
                            }
                        );
                    }
                }
            }
        }
        for (label, bytes) in &sizes {
            if let Some(b) = get("B", *bytes) {
                if let Some(r) = b.replay_seconds {
                    println!(
                        "B at {label}: replay {} vs primary {} ({})",
                        format_seconds(r),
                        format_seconds(b.primary_seconds),
                        if r <= b.primary_seconds {
                            "replay no slower"
                        } else {
                            "replay SLOWER"
                        }
                    );
                }
            }
        }
        if let Some(m) = get("M", large) {
            let grew = m.rss_after - m.rss_before;
            println!(
                "M at {}: RSS {} before replay, {} after ({} {}; bound 64 MiB)",
                format_memory(large),
                format_bytes(m.rss_before),
                format_bytes(m.rss_after),
                if grew >= 0.0 { "+" } else { "-" },
                format_bytes(grew.abs())
            );
            records.push(Record {
                bench: "replay",
                case: "M".into(),
                implementation: "strata",
                shared_buffers: large,
                metric: "rss_growth_bytes",
                value: grew,
            });
        }
    }
    Ok(records)
}
