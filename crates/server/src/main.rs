//! The `strata` binary: the command line.
//!
//! Owns: argument parsing (clap) and dispatch. Subcommands: `start` and `stop` (the
//! server), `init` (a new cluster, like initdb), `bench` (benchmarks: `bufpool`,
//! `crash`, `replay`), and the hidden `debug` tools used by tests and benchmarks.
//! Errors are printed once, here, with a non-zero exit status.

mod bench;
mod config;
mod crash;
mod pg;
mod server;
mod sql;

use clap::{Parser, Subcommand};
use std::path::PathBuf;
use std::process::ExitCode;

#[derive(Parser)]
#[command(
    name = "strata",
    version,
    about = "Strata: a PostgreSQL-style storage server whose bulk operations cost O(pages touched)"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Start the server (creating the cluster on first start); stops on SIGINT/SIGTERM.
    Start {
        /// The data directory.
        #[arg(short = 'D', long = "pgdata", default_value = "strata-data")]
        data: PathBuf,
        /// A setting, name=value (over those of DIR/strata.conf).
        #[arg(short = 'c', value_name = "NAME=VALUE")]
        settings: Vec<String>,
    },
    /// Stop the server running on a data directory.
    Stop {
        #[arg(short = 'D', long = "pgdata", default_value = "strata-data")]
        data: PathBuf,
        /// fast: end sessions, checkpoint, exit; immediate: SIGKILL (recovery at next start).
        #[arg(short = 'm', long = "mode", default_value = "fast")]
        mode: String,
        /// Seconds to wait for the server to exit.
        #[arg(short = 't', long = "timeout", default_value_t = 60)]
        timeout: u64,
    },
    /// Create a new cluster (databases template1, template0, postgres), like initdb.
    Init {
        /// The data directory to create; must not exist or be empty.
        #[arg(short = 'D', long = "pgdata", default_value = "strata-data")]
        data: PathBuf,
        /// A setting, name=value (wal_segment_size is fixed here for the cluster's life).
        #[arg(short = 'c', value_name = "NAME=VALUE")]
        settings: Vec<String>,
        /// A file whose first line is the password of role "strata" (SCRAM-SHA-256
        /// authentication is then required of every connection).
        #[arg(long)]
        pwfile: Option<PathBuf>,
    },
    /// Run a benchmark; results as a table, and as JSON records with --json.
    Bench {
        #[command(subcommand)]
        which: bench::BenchCommand,
    },
    /// Internal tools for tests.
    #[command(hide = true)]
    Debug {
        #[command(subcommand)]
        which: DebugCommand,
    },
}

#[derive(Subcommand)]
enum DebugCommand {
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

fn main() -> ExitCode {
    let cli = Cli::parse();
    let result = match cli.command {
        Command::Start { data, settings } => server::start(&data, &settings),
        Command::Stop {
            data,
            mode,
            timeout,
        } => server::stop(&data, &mode, timeout),
        Command::Init {
            data,
            settings,
            pwfile,
        } => init(&data, &settings, pwfile.as_deref()),
        Command::Bench { which } => bench::run(which),
        Command::Debug { which } => debug(which),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("strata: error: {e}");
            ExitCode::FAILURE
        }
    }
}

fn debug(which: DebugCommand) -> Result<(), String> {
    match which {
        DebugCommand::CrashWorker {
            data,
            seed,
            id_base,
            settings,
            journal,
        } => crash::worker(
            &data,
            config::settings_from(&settings)?,
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
        } => bench::replay::primary(
            &data,
            quiet(config::settings_from(&settings)?),
            &workload,
            scale,
            &spc_root,
        ),
        DebugCommand::Recover { data, settings } => {
            bench::replay::recover(&data, config::settings_from(&settings)?)
        }
    }
}

fn quiet(s: strata_engine::Settings) -> strata_engine::Settings {
    strata_engine::Settings {
        log: std::sync::Arc::new(|_: &str| {}),
        ..s
    }
}

fn init(
    data: &std::path::Path,
    settings: &[String],
    pwfile: Option<&std::path::Path>,
) -> Result<(), String> {
    let password = match pwfile {
        Some(p) => Some(
            std::fs::read_to_string(p)
                .map_err(|e| format!("could not read password file \"{}\": {e}", p.display()))?
                .lines()
                .next()
                .unwrap_or("")
                .to_string(),
        ),
        None => None,
    };
    let s = config::settings_from(settings)?;
    server::private_files();
    server::make_data_dir(data)?;
    let s = strata_engine::Settings {
        log: std::sync::Arc::new(|_: &str| {}),
        ..s
    };
    strata_engine::Engine::init(data, s).map_err(|e| e.to_string())?;
    if let Some(pw) = password {
        pg::auth::AuthStore::load(strata_vfs::StdVfs::arc(), data, &|_| false)?
            .set_password(pg::auth::BOOTSTRAP_SUPERUSER, Some(&pw))?;
    }
    println!(
        "Success. The cluster is in \"{}\" with databases template1, template0 and postgres.",
        data.display()
    );
    Ok(())
}
