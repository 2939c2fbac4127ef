//! The `strata` binary: the command line.
//!
//! Owns: argument parsing (clap) and dispatch. Subcommands today: `bench bufpool`.
//! `init`, `start`, `stop` arrive with the engine and the server (issues 3 and 4).
//! Errors are printed once, here, with a non-zero exit status.

mod bench;

use clap::{Parser, Subcommand};
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
    /// Run a benchmark; results as a table, and as JSON records with --json.
    Bench {
        #[command(subcommand)]
        which: bench::BenchCommand,
    },
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let result = match cli.command {
        Command::Bench { which } => bench::run(which),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("strata: error: {e}");
            ExitCode::FAILURE
        }
    }
}
