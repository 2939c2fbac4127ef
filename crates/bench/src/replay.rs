//! `strata bench replay`: the brief's workloads (§5, defined in [`crate::workloads`])
//! through the engine API, each on a fresh cluster per `shared_buffers` size: time on
//! the primary, WAL bytes, then a SIGKILL and the replay time read from the recovering
//! process's `redo done ... elapsed` line, its restart time and peak RSS.
//!
//! Processes: the parent creates the cluster, runs `strata debug replay-primary` (set-up,
//! CHECKPOINT, the timed workload, then it waits to be killed), SIGKILLs it, then runs
//! `strata debug recover` and reads its log. `--scale` multiplies every count.
//!
//! The engine's reading of a workload is a list of [`Step`]s, one per engine call,
//! built before it runs ([`setup_steps`], [`work_steps`]) and carried out by
//! [`execute`]; the unit test of `workloads` pins the steps.

use super::measure::{rss, Process, RedoDone};
use super::workloads::{Setup, Work, Workload, ALL, ROWS_PER_INSERT};
use super::{format_bytes, format_seconds, Record};
use indicatif::{ProgressBar, ProgressStyle};
use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};
use strata_engine::{ColType, Column, CreateDbStrategy, Datum, Engine, Settings, Txn};
use strata_types::units::format_memory;

/// Tables per set-up transaction.
pub const TABLES_PER_TRANSACTION: usize = 500;
/// Tablespaces per set-up transaction.
pub const TABLESPACES_PER_TRANSACTION: usize = 100;

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

/// Every table of this harness: `(id int4, v text)`.
fn cols() -> Vec<Column> {
    vec![
        Column::new("id", ColType::Int4),
        Column::new("v", ColType::Text),
    ]
}

/// Row `i` of any table.
fn row(i: i32) -> Vec<Datum> {
    vec![Datum::Int4(i), Datum::Text(format!("value {i:>10}"))]
}

fn e2s(e: strata_engine::EngineError) -> String {
    e.to_string()
}

/// One engine call. Calls between [`Step::Begin`] and [`Step::Commit`] run in that
/// transaction; [`Step::Vacuum`] and [`Step::Checkpoint`] outside any.
#[derive(Clone, Debug, PartialEq)]
pub enum Step {
    Begin,
    Commit,
    /// From template1, in the default tablespace.
    CreateDatabase {
        name: String,
        strategy: CreateDbStrategy,
    },
    /// In the directory `<spc_root>/<name>`, created first.
    CreateTablespace {
        name: String,
    },
    CreateTable {
        db: String,
        name: String,
        tablespace: Option<String>,
    },
    /// Rows `row(first)` .. `row(end - 1)`.
    Insert {
        db: String,
        table: String,
        first: i32,
        end: i32,
    },
    DropTable {
        db: String,
        name: String,
    },
    DropDatabase {
        name: String,
    },
    DeleteAll {
        db: String,
        table: String,
    },
    Vacuum {
        db: String,
    },
    Checkpoint,
}

/// Items `0..n` in transactions of `per`: Begin, the steps `each` gives the items of
/// one transaction, Commit; and so on.
fn in_transactions(n: usize, per: usize, each: impl Fn(usize) -> Vec<Step>) -> Vec<Step> {
    let mut steps = Vec::new();
    for chunk in (0..n).collect::<Vec<_>>().chunks(per) {
        steps.push(Step::Begin);
        steps.extend(chunk.iter().flat_map(|&i| each(i)));
        steps.push(Step::Commit);
    }
    steps
}

fn rows_i32(n: usize) -> i32 {
    i32::try_from(n).expect("row numbers fit an int4")
}

/// The engine calls of `w`'s set-up.
pub fn setup_steps(w: &Workload) -> Vec<Step> {
    let mut steps = Vec::new();
    for s in &w.setup {
        match s {
            Setup::Database { name } => steps.extend([
                Step::Begin,
                Step::CreateDatabase {
                    name: name.to_string(),
                    strategy: CreateDbStrategy::WalLog,
                },
                Step::Commit,
            ]),
            Setup::Tablespaces { prefix, count } => {
                steps.extend(in_transactions(*count, TABLESPACES_PER_TRANSACTION, |i| {
                    vec![Step::CreateTablespace {
                        name: format!("{prefix}{i}"),
                    }]
                }))
            }
            Setup::Tables(t) => {
                steps.extend(in_transactions(t.count, TABLES_PER_TRANSACTION, |i| {
                    let name = format!("{}{i}", t.prefix);
                    let mut v = vec![Step::CreateTable {
                        db: t.db.into(),
                        name: name.clone(),
                        tablespace: t.tablespace.map(|p| format!("{p}{i}")),
                    }];
                    if t.rows > 0 {
                        v.push(Step::Insert {
                            db: t.db.into(),
                            table: name,
                            first: 0,
                            end: rows_i32(t.rows),
                        });
                    }
                    v
                }))
            }
            Setup::Vacuum => steps.push(Step::Vacuum {
                db: "postgres".into(),
            }),
        }
    }
    steps
}

/// The engine calls of `w`'s timed part.
pub fn work_steps(w: &Workload) -> Vec<Step> {
    let pg = || "postgres".to_string();
    let one = |s: Step| vec![Step::Begin, s, Step::Commit];
    match &w.work {
        Work::DropDatabase { name } => one(Step::DropDatabase {
            name: name.to_string(),
        }),
        Work::DropEach { prefix, count } => (0..*count)
            .flat_map(|i| {
                one(Step::DropTable {
                    db: pg(),
                    name: format!("{prefix}{i}"),
                })
            })
            .collect(),
        Work::DropTogether { prefix, count } => in_transactions(*count, *count, |i| {
            vec![Step::DropTable {
                db: pg(),
                name: format!("{prefix}{i}"),
            }]
        }),
        Work::DeleteEachThenVacuum { prefix, count } => (0..*count)
            .flat_map(|i| {
                one(Step::DeleteAll {
                    db: pg(),
                    table: format!("{prefix}{i}"),
                })
            })
            .chain(std::iter::once(Step::Vacuum { db: pg() }))
            .collect(),
        Work::CreateDatabases { count } => [
            ("e_fc", CreateDbStrategy::FileCopy),
            ("e_wl", CreateDbStrategy::WalLog),
        ]
        .into_iter()
        .flat_map(|(prefix, strategy)| {
            (0..*count).flat_map(move |i| {
                [
                    Step::Begin,
                    Step::CreateDatabase {
                        name: format!("{prefix}{i}"),
                        strategy,
                    },
                    Step::Commit,
                ]
            })
        })
        .collect(),
        Work::Checkpoints { runs } => vec![Step::Checkpoint; *runs],
        Work::Inserts {
            table,
            transactions,
        } => (0..*transactions)
            .flat_map(|k| {
                one(Step::Insert {
                    db: pg(),
                    table: table.to_string(),
                    first: rows_i32(k * ROWS_PER_INSERT),
                    end: rows_i32((k + 1) * ROWS_PER_INSERT),
                })
            })
            .collect(),
    }
}

/// Carries out `steps`; returns the seconds each took.
pub fn execute(e: &Engine, steps: &[Step], spc_root: &Path) -> Result<Vec<f64>, String> {
    let mut txn: Option<Txn<'_>> = None;
    let mut times = Vec::with_capacity(steps.len());
    for step in steps {
        let started = Instant::now();
        match step {
            Step::Begin => txn = Some(e.begin()),
            Step::Commit => txn
                .take()
                .ok_or("COMMIT outside a transaction")?
                .commit()
                .map_err(e2s)?,
            Step::Vacuum { db } => {
                e.vacuum(db, None).map_err(e2s)?;
            }
            Step::Checkpoint => {
                e.checkpoint().map_err(e2s)?;
            }
            _ => in_transaction(txn.as_mut().ok_or("no transaction")?, step, spc_root)?,
        }
        times.push(started.elapsed().as_secs_f64());
    }
    Ok(times)
}

/// One step inside a transaction.
fn in_transaction(t: &mut Txn<'_>, step: &Step, spc_root: &Path) -> Result<(), String> {
    match step {
        Step::CreateDatabase { name, strategy } => {
            t.create_database(name, "template1", None, *strategy)
        }
        Step::CreateTablespace { name } => {
            let loc = spc_root.join(name);
            std::fs::create_dir_all(&loc).map_err(|e| e.to_string())?;
            t.create_tablespace(name, loc.to_str().ok_or("path")?)
        }
        Step::CreateTable {
            db,
            name,
            tablespace,
        } => t.create_table(db, name, &cols(), tablespace.as_deref()),
        Step::Insert {
            db,
            table,
            first,
            end,
        } => {
            let rows: Vec<Vec<Datum>> = (*first..*end).map(row).collect();
            t.insert(db, table, &rows).map(|_| ())
        }
        Step::DropTable { db, name } => t.drop_table(db, name),
        Step::DropDatabase { name } => t.drop_database(name),
        Step::DeleteAll { db, table } => t.delete_where(db, table, &|_| true).map(|_| ()),
        Step::Begin | Step::Commit | Step::Vacuum { .. } | Step::Checkpoint => {
            unreachable!("handled by execute")
        }
    }
    .map_err(e2s)
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
    let w =
        Workload::new(workload, scale).ok_or_else(|| format!("unknown workload \"{workload}\""))?;
    let e = Engine::open(dir, settings).map_err(e2s)?;
    execute(&e, &setup_steps(&w), spc_root)?; // not timed
    e.checkpoint().map_err(e2s)?;
    let work = work_steps(&w);
    let lsn0 = e.current_wal_lsn();
    let started = Instant::now();
    let times = execute(&e, &work, spc_root)?;
    let secs = match w.work {
        Work::Checkpoints { .. } => median(times),
        _ => started.elapsed().as_secs_f64(),
    };
    let wal = e.current_wal_lsn().0 - lsn0.0;
    let mut out = std::io::stdout().lock();
    writeln!(out, "RESULT primary_seconds={secs} wal_bytes={wal}")
        .and_then(|()| out.flush())
        .map_err(|e| e.to_string())?;
    loop {
        std::thread::sleep(Duration::from_secs(3600)); // until the SIGKILL
    }
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v.get(v.len() / 2).copied().unwrap_or(0.0)
}

/// The recovering process: opens (replays) the cluster, logging to stderr, and prints
/// its RSS before and after and its peak.
pub fn recover(dir: &Path, settings: Settings) -> Result<(), String> {
    let started = Instant::now();
    let before = rss(Process::This).ok_or("no /proc/self/status")?;
    let settings = Settings {
        log: std::sync::Arc::new(|l: &str| eprintln!("LOG:  {l}")),
        ..settings
    };
    let (e, info) = Engine::open_with_info(dir, settings).map_err(e2s)?;
    let restart = started.elapsed().as_secs_f64();
    let after = rss(Process::This).ok_or("no /proc/self/status")?;
    println!(
        "RESULT restart_seconds={restart} rss_before={} rss_after={} peak_rss={} records={}",
        before.now_bytes, after.now_bytes, after.peak_bytes, info.records
    );
    e.close().map_err(e2s)
}

fn parse_kv(line: &str, key: &str) -> Option<f64> {
    line.split_whitespace()
        .find_map(|w| w.strip_prefix(key)?.strip_prefix('=')?.parse().ok())
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
    f.replay_seconds = RedoDone::last_in(&log).map(|r| r.elapsed_seconds);
    if f.replay_seconds.is_none() {
        return Err(format!(
            "workload {workload} at {sb}: no \"redo done\" line in the log:\n{log}"
        ));
    }
    Ok(f)
}

/// (workload, size as given, size in bytes, figures).
type Row = (String, String, u64, Figures);

/// shared_buffers sizes: (as given, bytes).
type Sizes = Vec<(String, u64)>;

/// `--shared-buffers` and the workloads of `--only`, checked.
fn arguments(args: &Args) -> Result<(Sizes, Vec<&'static str>), String> {
    let sizes: Sizes = args
        .shared_buffers
        .iter()
        .map(|s| {
            strata_buffer::parse_shared_buffers(s)
                .map(|b| (s.clone(), b))
                .map_err(|e| e.to_string())
        })
        .collect::<Result<_, _>>()?;
    for w in &args.only {
        if !ALL.contains(&w.as_str()) {
            return Err(format!(
                "unknown workload \"{w}\"; the workloads are {}",
                ALL.join(", ")
            ));
        }
    }
    if !(args.scale > 0.0 && args.scale <= 10.0) {
        return Err(format!("--scale {} is outside (0, 10]", args.scale));
    }
    let chosen = ALL
        .iter()
        .copied()
        .filter(|w| args.only.is_empty() || args.only.iter().any(|o| o == w))
        .collect();
    Ok((sizes, chosen))
}

pub fn run(args: &Args) -> Result<Vec<Record>, String> {
    let (sizes, chosen) = arguments(args)?;
    let bar = ProgressBar::new((chosen.len() * sizes.len()) as u64).with_style(
        ProgressStyle::with_template("{bar:30} {pos}/{len} {elapsed} {msg}").expect("template"),
    );
    let largest = sizes.iter().map(|(_, b)| *b).max();
    let mut figures = Vec::new();
    for w in &chosen {
        for (label, bytes) in &sizes {
            // M measures replay memory: once, at the largest size given.
            if *w == "M" && Some(*bytes) != largest {
                continue;
            }
            let f = run_one(w, label, args.scale, &bar)?;
            figures.push((w.to_string(), label.clone(), *bytes, f));
            bar.inc(1);
        }
    }
    bar.finish_and_clear();
    let mut records = print_table(&figures);
    println!();
    print_checks(&figures, &sizes, &chosen, &mut records);
    Ok(records)
}

/// The human table, and the records of every figure.
fn print_table(figures: &[Row]) -> Vec<Record> {
    println!(
        "{:<3} {:>7} {:>11} {:>10} {:>11} {:>11} {:>10}",
        "id", "size", "primary", "WAL", "replay", "restart", "peak RSS"
    );
    let mut records = Vec::new();
    for (w, label, bytes, f) in figures {
        let replayed = w != "F";
        let or_dash = |shown: bool, s: String| if shown { s } else { "-".into() };
        println!(
            "{:<3} {:>7} {:>11} {:>10} {:>11} {:>11} {:>10}",
            w,
            label,
            format_seconds(f.primary_seconds),
            format_bytes(f.wal_bytes),
            f.replay_seconds
                .map(format_seconds)
                .unwrap_or_else(|| "-".into()),
            or_dash(replayed, format_seconds(f.restart_seconds)),
            or_dash(replayed, format_bytes(f.peak_rss)),
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
        if replayed {
            push("restart_seconds", f.restart_seconds);
            push("peak_rss_bytes", f.peak_rss);
        }
    }
    records
}

/// The checks, as measured in this run: replay at the largest size against the
/// smallest, B's replay against its primary, M's replay memory (one more record).
fn print_checks(
    figures: &[Row],
    sizes: &[(String, u64)],
    chosen: &[&str],
    records: &mut Vec<Record>,
) {
    let get = |w: &str, b: u64| {
        figures
            .iter()
            .find(|(x, _, y, _)| x == w && *y == b)
            .map(|t| &t.3)
    };
    let (Some(small), Some(large)) = (
        sizes.iter().map(|s| s.1).min(),
        sizes.iter().map(|s| s.1).max(),
    ) else {
        return;
    };
    if small != large {
        for w in chosen {
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
    for (label, bytes) in sizes {
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
