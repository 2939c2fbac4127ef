//! strata-bench: `strata bench`, benchmarks that report ratios measured within one
//! run, and the crash harness with the processes it kills (`strata debug ...`).
//!
//! Owns: the record format shared by every benchmark (brief §6: one flat JSON record per
//! figure) and the table printer. Modules:
//! - [`workloads`]: the brief's workloads A–G (and M), defined once as data;
//! - [`measure`]: what is read from measured processes (RSS from `/proc`, the `redo
//!   done ... elapsed` log line of Strata and PostgreSQL);
//! - [`bufpool`]: the pool's bulk operations against PostgreSQL's full scans
//!   (`strata_buffer::reference`);
//! - [`replay`]: the workloads through the engine API, crash, replay;
//! - [`seeds`]: the same workloads as SQL, side by side with PostgreSQL 15, plotted by
//!   `plot`;
//! - [`standby`]: a streaming hot standby's lag behind its primary (made by
//!   `pg_basebackup -R`), side by side with PostgreSQL 15;
//! - [`pgbench`]: PostgreSQL's pgbench against both engines, side by side;
//! - [`copy`]: COPY FROM STDIN in CopyData messages of several sizes, side by side;
//! - [`queries`]: TPC-H's 22 queries side by side, its data and text from [`tpch`];
//! - [`crash`]: SIGKILL and power-loss crash tests.
//!
//! Each benchmark returns `Vec<Record>`. The dependencies only benchmarks use
//! (tokio-postgres, plotters, indicatif) are this crate's, not the server's.
//!
//! Rules:
//! 1. A workload's counts and names come from [`workloads`] alone; `replay` and
//!    `seeds` only translate them (engine calls, SQL).
//! 2. Memory and replay time are read through [`measure`], nowhere else.

pub mod accounts;
pub mod bufpool;
pub mod copy;
pub mod crash;
pub mod measure;
pub mod pgbench;
mod plot;
pub mod queries;
pub mod replay;
pub mod seeds;
pub mod standby;
pub mod tpch;
pub mod workloads;

use clap::Subcommand;
use serde::Serialize;
use std::path::PathBuf;
use strata_server::config::settings_from;

#[derive(Subcommand)]
pub enum BenchCommand {
    /// The buffer pool's bulk operations and hit path against the PostgreSQL-style
    /// full pass and a plain partitioned hash map, at several shared_buffers sizes.
    Bufpool(bufpool::Args),
    /// SIGKILL a worker running random transactions at random moments, recover, and
    /// check every committed transaction; prints "N crashes, L lost".
    Crash(CrashArgs),
    /// Workloads A–G of the brief through the engine: primary time, WAL bytes, replay
    /// time after a SIGKILL (from the `redo done` line), restart time, peak RSS.
    Replay(replay::Args),
    /// Workloads A–G side by side against PostgreSQL 15: the same SQL through the same
    /// client, the same shared_buffers, crashed and recovered the same way.
    Seeds(seeds::Args),
    /// PostgreSQL 15's pgbench (-i, then timed -M simple/prepared runs at several
    /// client counts) against Strata and PostgreSQL, same shared_buffers and settings.
    Pgbench(pgbench::Args),
    /// COPY FROM STDIN of one-field rows in CopyData messages of several sizes,
    /// against PostgreSQL 15: time per row for each size.
    Copy(copy::Args),
    /// A streaming standby (pg_basebackup -R) behind its primary, against PostgreSQL
    /// 15: lag after B's drops and a stream of inserts, a remote_apply commit of C,
    /// the replay of A's DROP DATABASE; lag over time with --plot.
    Standby(standby::Args),
    /// TPC-H's 22 queries (data generated in process by tpchgen) against PostgreSQL
    /// 15: each engine's time (least of --runs), the rows compared, the geometric mean.
    Queries(queries::Args),
}

#[derive(clap::Args)]
pub struct CrashArgs {
    /// How many crashes.
    #[arg(long, default_value_t = 100)]
    pub iterations: u64,
    /// Seed of the run (printed; the same seed makes the same choices).
    #[arg(long)]
    pub seed: Option<u64>,
    /// A setting for the cluster, name=value (e.g. shared_buffers=1MB).
    #[arg(short = 'c', value_name = "NAME=VALUE")]
    pub settings: Vec<String>,
    /// One line per crash on stderr.
    #[arg(long)]
    pub verbose: bool,
    /// Lose power instead of SIGKILL: the worker runs on a simulated disk and, at the
    /// chosen moment, drops or tears a random subset of the writes it had not synced.
    #[arg(long)]
    pub power_loss: bool,
    #[arg(long)]
    pub json: Option<PathBuf>,
}

pub fn run(cmd: BenchCommand) -> Result<(), String> {
    match cmd {
        BenchCommand::Bufpool(args) => {
            let json = args.json.clone();
            let records = bufpool::run(&args)?;
            if let Some(path) = json {
                write_json(&path, &records)?;
            }
            Ok(())
        }
        BenchCommand::Replay(args) => {
            let records = replay::run(&args)?;
            if let Some(path) = &args.json {
                write_json(path, &records)?;
            }
            Ok(())
        }
        BenchCommand::Seeds(args) => {
            let records = seeds::run(&args)?;
            if let Some(path) = &args.json {
                write_json(path, &records)?;
            }
            Ok(())
        }
        BenchCommand::Pgbench(args) => {
            let records = pgbench::run(&args)?;
            if let Some(path) = &args.json {
                write_json(path, &records)?;
            }
            Ok(())
        }
        BenchCommand::Copy(args) => {
            let records = copy::run(&args)?;
            if let Some(path) = &args.json {
                write_json(path, &records)?;
            }
            Ok(())
        }
        BenchCommand::Queries(args) => {
            let records = queries::run(&args)?;
            if let Some(path) = &args.json {
                write_json(path, &records)?;
            }
            Ok(())
        }
        BenchCommand::Standby(args) => {
            let records = standby::run(&args)?;
            if let Some(path) = &args.json {
                write_json(path, &records)?;
            }
            Ok(())
        }
        BenchCommand::Crash(args) => {
            let seed = args.seed.unwrap_or_else(|| {
                std::time::SystemTime::now()
                    .duration_since(std::time::UNIX_EPOCH)
                    .map(|d| d.as_nanos() as u64)
                    .unwrap_or(1)
            });
            println!("crash run: seed {seed}, {} iterations", args.iterations);
            let s = crate::crash::run(&crate::crash::CrashRun {
                iterations: args.iterations,
                seed,
                settings_args: args.settings.clone(),
                verbose: args.verbose,
                power_loss: args.power_loss,
            })?;
            if let Some(path) = &args.json {
                write_json(path, &s.records)?;
            }
            println!(
                "{} crashes, {} lost ({} commits checked)",
                s.crashes, s.lost, s.commits
            );
            if s.problems.is_empty() {
                Ok(())
            } else {
                Err(format!(
                    "crash run failed (seed {seed}):\n{}",
                    s.problems.join("\n")
                ))
            }
        }
    }
}

/// One figure (brief §6).
#[derive(Serialize, Clone, Debug, PartialEq)]
pub struct Record {
    pub bench: &'static str,
    pub case: String,
    #[serde(rename = "impl")]
    pub implementation: &'static str,
    pub shared_buffers: u64,
    pub metric: &'static str,
    pub value: f64,
}

fn write_json(path: &PathBuf, records: &[Record]) -> Result<(), String> {
    let text = serde_json::to_string_pretty(records).map_err(|e| e.to_string())?;
    std::fs::write(path, text + "\n")
        .map_err(|e| format!("could not write \"{}\": {e}", path.display()))
}

/// Formats seconds with a unit that keeps three significant digits.
pub fn format_seconds(s: f64) -> String {
    if s >= 1.0 {
        format!("{s:.2} s")
    } else if s >= 1e-3 {
        format!("{:.2} ms", s * 1e3)
    } else if s >= 1e-6 {
        format!("{:.2} µs", s * 1e6)
    } else {
        format!("{:.0} ns", s * 1e9)
    }
}

pub fn format_bytes(b: f64) -> String {
    if b >= (1u64 << 30) as f64 {
        format!("{:.2} GiB", b / (1u64 << 30) as f64)
    } else if b >= (1u64 << 20) as f64 {
        format!("{:.1} MiB", b / (1u64 << 20) as f64)
    } else {
        format!("{:.0} KiB", b / 1024.0)
    }
}

#[derive(Subcommand)]
pub enum DebugCommand {
    /// Recover a cluster, then run random transactions until killed (crash tests).
    CrashWorker {
        #[arg(short = 'D')]
        data: PathBuf,
        #[arg(long)]
        seed: u64,
        #[arg(long)]
        id_base: i64,
        #[arg(short = 'c', value_name = "NAME=VALUE")]
        settings: Vec<String>,
        /// Run on the simulated disk with this journal; `POWERLOSS <seed>` on stdin
        /// loses power.
        #[arg(long)]
        journal: Option<PathBuf>,
    },
    /// Set up and run one replay-bench workload, print its figures, wait for SIGKILL.
    ReplayPrimary {
        #[arg(short = 'D')]
        data: PathBuf,
        #[arg(long)]
        workload: String,
        #[arg(long)]
        scale: f64,
        #[arg(long)]
        spc_root: PathBuf,
        #[arg(short = 'c', value_name = "NAME=VALUE")]
        settings: Vec<String>,
    },
    /// Recover a cluster, logging to stderr; print RSS figures.
    Recover {
        #[arg(short = 'D')]
        data: PathBuf,
        #[arg(short = 'c', value_name = "NAME=VALUE")]
        settings: Vec<String>,
    },
}

/// Runs a hidden `strata debug` tool (the processes the harnesses start and kill).
pub fn debug(which: DebugCommand) -> Result<(), String> {
    match which {
        DebugCommand::CrashWorker {
            data,
            seed,
            id_base,
            settings,
            journal,
        } => crash::worker(
            &data,
            settings_from(&settings)?,
            seed,
            id_base,
            journal.as_deref(),
        ),
        DebugCommand::ReplayPrimary {
            data,
            workload,
            scale,
            spc_root,
            settings,
        } => replay::primary(
            &data,
            quiet(settings_from(&settings)?),
            &workload,
            scale,
            &spc_root,
        ),
        DebugCommand::Recover { data, settings } => {
            replay::recover(&data, settings_from(&settings)?)
        }
    }
}

/// `s` with a log that drops every line.
fn quiet(s: strata_engine::Settings) -> strata_engine::Settings {
    strata_engine::Settings {
        log: std::sync::Arc::new(|_: &str| {}),
        ..s
    }
}
