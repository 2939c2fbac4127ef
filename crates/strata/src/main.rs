//! The `strata` binary: the command line.
//!
//! Owns: argument parsing (clap) and dispatch. Subcommands: `start` and `stop` (the
//! server), `promote` (a standby becomes a primary), `init` (a new cluster, like initdb), `waldump` (pg_waldump), `bench` (benchmarks: `bufpool`,
//! `crash`, `replay`, `seeds`, `standby`), and the hidden `debug` tools used by tests and benchmarks.
//! Errors are printed once, here, with a non-zero exit status.

mod waldump;

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
    /// Promote a standby to a primary, on a new timeline (like pg_ctl promote).
    Promote {
        #[arg(short = 'D', long = "pgdata", default_value = "strata-data")]
        data: PathBuf,
        /// Seconds to wait for the promotion to end (0: do not wait).
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
    /// Print the WAL record by record, or its statistics, in pg_waldump's layout.
    Waldump(waldump::Args),
    /// Run a benchmark; results as a table, and as JSON records with --json.
    Bench {
        #[command(subcommand)]
        which: strata_bench::BenchCommand,
    },
    /// Internal tools for tests.
    #[command(hide = true)]
    Debug {
        #[command(subcommand)]
        which: strata_bench::DebugCommand,
    },
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let result = match cli.command {
        Command::Start { data, settings } => strata_server::start(&data, &settings),
        Command::Stop {
            data,
            mode,
            timeout,
        } => strata_server::stop(&data, &mode, timeout),
        Command::Promote { data, timeout } => strata_server::promote(&data, timeout),
        Command::Init {
            data,
            settings,
            pwfile,
        } => strata_server::init(&data, &settings, pwfile.as_deref()),
        Command::Waldump(a) => waldump::run(a),
        Command::Bench { which } => strata_bench::run(which),
        Command::Debug { which } => strata_bench::debug(which),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("strata: error: {e}");
            ExitCode::FAILURE
        }
    }
}
