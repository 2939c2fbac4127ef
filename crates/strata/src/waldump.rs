//! `strata waldump`: PostgreSQL's pg_waldump for Strata's WAL.
//!
//! Reads `pg_wal/` of a data directory (the server may be running: it reads only what
//! is written) from an LSN — by default the redo point of the last checkpoint, the
//! oldest record crash recovery needs — and prints each record in pg_waldump's layout,
//! or with `--stats` the counts and sizes per resource manager (`--stats=record`: per
//! record type). It stops at the end of valid WAL and says why on stderr, as
//! pg_waldump does.

use std::path::PathBuf;
use strata_engine::waldump::{describe, format_record, Stats};
use strata_types::Lsn;
use strata_vfs::StdVfs;
use strata_wal::control::ControlFile;
use strata_wal::WalReader;

#[derive(clap::Args)]
pub struct Args {
    /// The data directory.
    #[arg(short = 'D', long = "pgdata", default_value = "strata-data")]
    data: PathBuf,
    /// Start at this record (X/X); default: the last checkpoint's redo point.
    #[arg(short = 's', long = "start")]
    start: Option<Lsn>,
    /// Stop before this LSN.
    #[arg(short = 'e', long = "end")]
    end: Option<Lsn>,
    /// Print at most this many records.
    #[arg(short = 'n', long = "limit")]
    limit: Option<u64>,
    /// Only records of this resource manager (Heap, Transaction, Storage, XLOG,
    /// Database, Tablespace).
    #[arg(short = 'r', long = "rmgr")]
    rmgr: Option<String>,
    /// Statistics instead of records: per resource manager, or `--stats=record` per
    /// record type.
    #[arg(short = 'z', long = "stats", num_args = 0..=1, require_equals = true, default_missing_value = "rmgr")]
    stats: Option<String>,
}

pub fn run(a: Args) -> Result<(), String> {
    let vfs = StdVfs::arc();
    let control = ControlFile::read(&*vfs, &a.data).map_err(|e| e.to_string())?;
    let per_record = match a.stats.as_deref() {
        None | Some("rmgr") => false,
        Some("record") => true,
        Some(s) => return Err(format!("invalid value \"{s}\" for option --stats")),
    };
    let start = a.start.unwrap_or(control.redo);
    let mut reader = WalReader::new(
        &vfs,
        &a.data,
        control.wal_segment_bytes,
        start,
        Lsn::INVALID,
    )
    .map_err(|e| e.to_string())?;
    let mut stats = Stats::default();
    let (mut shown, mut read) = (0u64, 0u64);
    while let Some(r) = reader.next_record().map_err(|e| e.to_string())? {
        read += 1;
        if a.end.is_some_and(|end| r.lsn >= end) || a.limit.is_some_and(|n| shown >= n) {
            return Ok(());
        }
        let d = describe(&r);
        if a.rmgr
            .as_deref()
            .is_some_and(|m| !m.eq_ignore_ascii_case(d.rmgr))
        {
            continue;
        }
        shown += 1;
        if a.stats.is_some() {
            stats.add(&r, &d);
        } else {
            println!("{}", format_record(&r, &d));
        }
    }
    if a.stats.is_some() {
        print!("{}", stats.render(per_record));
    }
    match reader.stop_reason() {
        Some(why) if read == 0 && a.start.is_some() => Err(format!(
            "no valid record at {start} ({why}): give an LSN where a record begins (as printed here, or a checkpoint's redo point)"
        )),
        Some(why) => {
            eprintln!("strata waldump: end of valid WAL at {}: {why}", reader.end());
            Ok(())
        }
        None => Ok(()),
    }
}
