//! The `strata` binary: the command line.
//!
//! Owns: argument parsing (clap) and dispatch. Subcommands: `start` and `stop` (the
//! server), `promote` (a standby becomes a primary), `init` (a new cluster, like initdb), `waldump` (pg_waldump),
//! `basebackup` (pg_basebackup: a copy of a running server, with its WAL), `bench` (benchmarks: `bufpool`,
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
        /// A file whose first line is the password of role "strata" (the default
        /// pg_hba.conf then requires SCRAM-SHA-256 of loopback connections too).
        #[arg(long)]
        pwfile: Option<PathBuf>,
    },
    /// Take a base backup of a running server into a directory, with the WAL streamed
    /// beside it (like pg_basebackup -Fp -X stream).
    #[command(disable_help_flag = true)]
    Basebackup(BasebackupArgs),
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

/// `strata basebackup`'s arguments: pg_basebackup's names.
#[derive(clap::Args)]
struct BasebackupArgs {
    /// The target directory: must not exist or be empty.
    #[arg(short = 'D', long = "pgdata")]
    data: PathBuf,
    /// A connection string (keyword=value or postgresql:// URI).
    #[arg(short = 'd', long = "dbname", value_name = "CONNSTR")]
    dbname: Option<String>,
    /// The server's host name or Unix socket directory.
    #[arg(short = 'h', long = "host")]
    host: Option<String>,
    /// The server's port.
    #[arg(short = 'p', long = "port")]
    port: Option<u16>,
    /// The role to connect as (superuser or REPLICATION).
    #[arg(short = 'U', long = "username")]
    user: Option<String>,
    /// The checkpoint that starts the backup.
    #[arg(short = 'c', long = "checkpoint", default_value = "spread", value_parser = ["fast", "spread"])]
    checkpoint: String,
    /// Write standby.signal and primary_conninfo: the copy starts as a standby.
    #[arg(short = 'R', long = "write-recovery-conf")]
    write_recovery_conf: bool,
    /// Show a progress bar.
    #[arg(short = 'P', long = "progress")]
    progress: bool,
    /// Put the tablespace at OLDDIR into NEWDIR.
    #[arg(short = 'T', long = "tablespace-mapping", value_name = "OLDDIR=NEWDIR")]
    mappings: Vec<String>,
    /// Write no backup_manifest.
    #[arg(long = "no-manifest")]
    no_manifest: bool,
    /// The backup's label.
    #[arg(short = 'l', long = "label", default_value = "strata basebackup")]
    label: String,
    /// Print help.
    #[arg(long, action = clap::ArgAction::Help)]
    help: Option<bool>,
}

/// The progress bar of `-P`, from the server's progress messages.
struct Bar(Option<indicatif::ProgressBar>);

impl strata_server::basebackup_client::Progress for Bar {
    fn start(&mut self, total_bytes: u64) {
        if let Some(b) = &self.0 {
            b.set_length(total_bytes);
        }
    }
    fn update(&mut self, done_bytes: u64) {
        if let Some(b) = &self.0 {
            if b.length().is_some_and(|l| l < done_bytes) {
                b.set_length(done_bytes);
            }
            b.set_position(done_bytes);
        }
    }
    fn finish(&mut self) {
        if let Some(b) = &self.0 {
            b.finish();
        }
    }
}

fn basebackup(a: BasebackupArgs) -> Result<(), String> {
    use strata_server::basebackup_client as bb;
    let opts = bb::Options {
        conninfo: bb::conninfo(
            a.dbname.as_deref(),
            a.host.as_deref(),
            a.port,
            a.user.as_deref(),
        )?,
        dir: a.data,
        fast: a.checkpoint == "fast",
        write_recovery_conf: a.write_recovery_conf,
        tablespace_mappings: a
            .mappings
            .iter()
            .map(|m| bb::parse_mapping(m))
            .collect::<Result<_, _>>()?,
        manifest: !a.no_manifest,
        label: a.label,
    };
    let bar = a.progress.then(|| {
        let b = indicatif::ProgressBar::new(0);
        if let Ok(style) = indicatif::ProgressStyle::with_template(
            "{bytes}/{total_bytes} ({percent}%) [{wide_bar}] {elapsed}",
        ) {
            b.set_style(style);
        }
        b
    });
    let t0 = std::time::Instant::now();
    let s = bb::run(&opts, &mut Bar(bar))?;
    println!(
        "base backup of {} kB done in {:.1} s: WAL {} to {} on timeline {}, {} segment file(s) streamed into {}",
        s.bytes / 1024,
        t0.elapsed().as_secs_f64(),
        s.start,
        s.end,
        s.timeline,
        s.wal_segments,
        opts.dir.join("pg_wal").display()
    );
    Ok(())
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
        Command::Basebackup(a) => basebackup(a),
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
