//! The redo loop: one loop for crash recovery, archive recovery and standbys.
//!
//! Entry point: [`redo`]. It reads records from a start LSN to the end of valid WAL and
//! hands each to the caller's `apply` (the engine dispatches on the resource manager).
//! It logs in PostgreSQL's words, so tools that read PostgreSQL's log read ours:
//!
//! ```text
//! redo starts at 0/1000028
//! redo done at 0/3000060 system usage: CPU: user: 0.01 s, system: 0.00 s, elapsed: 0.021 s
//! end of WAL at 0/3000098: end of WAL; reading the WAL took 0.001 s; page faults during redo: 12 minor, 0 major
//! ```
//!
//! (or `redo is not required` when there is nothing to replay), followed by one line per
//! record type: count and time spent in `apply`.
//!
//! Rules:
//! 1. Records are applied strictly in LSN order, each exactly once per call.
//! 2. An error from `apply` stops recovery with the record's LSN and type named:
//!    replay never skips a record it could not apply.
//! 3. The summary's `end` is where new WAL must be appended ([`crate::Wal::open`]).

use crate::{Record, RmgrId, StopReason, WalReader};
use std::collections::BTreeMap;
use std::time::{Duration, Instant};
use strata_types::Lsn;
use thiserror::Error;

#[derive(Debug, Error)]
pub enum RedoError {
    #[error(transparent)]
    Wal(#[from] crate::WalError),
    #[error("could not replay record at {lsn} (rmgr {rmgr}, info {info:#04x}): {reason}")]
    Apply {
        lsn: Lsn,
        rmgr: u8,
        info: u8,
        reason: String,
    },
}

/// Count and time of one record type.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct TypeStats {
    pub records: u64,
    pub apply_time: Duration,
}

/// What a redo pass did.
#[derive(Debug, Clone)]
pub struct RedoSummary {
    pub start: Lsn,
    /// LSN of the last record replayed (`start`'s `prev` if none).
    pub last_record: Lsn,
    /// End of valid WAL: where new records go.
    pub end: Lsn,
    pub stop: StopReason,
    pub records: u64,
    pub elapsed: Duration,
    pub per_type: BTreeMap<(RmgrId, u8), TypeStats>,
}

/// Replays with `reader` (positioned at the first record to replay) to the end of valid
/// WAL, calling `apply` for each record, and `log` with each log line. O(records
/// replayed) plus what `apply` costs.
pub fn redo(
    reader: WalReader,
    apply: impl FnMut(&Record) -> Result<(), String>,
    log: &mut dyn FnMut(&str),
) -> Result<RedoSummary, RedoError> {
    redo_named(reader, apply, log, &|_, _| "")
}

/// [`redo`], naming each record type in the statistics lines with `name` (the
/// resource managers live above this crate).
pub fn redo_named(
    mut reader: WalReader,
    mut apply: impl FnMut(&Record) -> Result<(), String>,
    log: &mut dyn FnMut(&str),
    name: &dyn Fn(RmgrId, u8) -> &'static str,
) -> Result<RedoSummary, RedoError> {
    let usage0 = ThreadUsage::now();
    let began = Instant::now();
    let start = reader.end();
    let mut per_type: BTreeMap<(RmgrId, u8), TypeStats> = BTreeMap::new();
    let mut records = 0u64;
    let mut reading = Duration::ZERO;
    loop {
        let r0 = Instant::now();
        let next = reader.next_record()?;
        reading += r0.elapsed();
        let Some(record) = next else { break };
        if records == 0 {
            log(&format!("redo starts at {}", record.lsn));
        }
        let t = Instant::now();
        apply(&record).map_err(|reason| RedoError::Apply {
            lsn: record.lsn,
            rmgr: record.rmgr.0,
            info: record.info,
            reason,
        })?;
        let stats = per_type.entry((record.rmgr, record.info)).or_default();
        stats.records += 1;
        stats.apply_time += t.elapsed();
        records += 1;
    }
    let elapsed = began.elapsed();
    let usage = ThreadUsage::since(usage0);
    let stop = reader.stop_reason().cloned().unwrap_or(StopReason::End);
    if records == 0 {
        log("redo is not required");
    } else {
        log(&format!(
            "redo done at {} system usage: {}elapsed: {:.6} s",
            reader.last_lsn(),
            usage.map(|u| u.cpu()).unwrap_or_default(),
            elapsed.as_secs_f64()
        ));
    }
    log(&format!(
        "end of WAL at {}: {stop}; reading the WAL took {:.6} s{}",
        reader.end(),
        reading.as_secs_f64(),
        usage.map(|u| u.faults()).unwrap_or_default()
    ));
    for ((rmgr, info), s) in &per_type {
        log(&format!(
            "  rmgr {:>3} info {info:#04x} {:<26} {:>10} records, {:.6} s",
            rmgr.0,
            name(*rmgr, *info),
            s.records,
            s.apply_time.as_secs_f64()
        ));
    }
    Ok(RedoSummary {
        start,
        last_record: reader.last_lsn(),
        end: reader.end(),
        stop,
        records,
        elapsed,
        per_type,
    })
}

/// The redo thread's CPU time and page faults, from `/proc/thread-self/stat` (Linux;
/// `None` elsewhere): the `CPU: user: ..., system: ...` of PostgreSQL's line, and the
/// faults that told fresh memory from work (docs/BENCHMARKS.md, C's replay at 8GB).
#[derive(Clone, Copy, Debug, Default, PartialEq)]
struct ThreadUsage {
    minor_faults: u64,
    major_faults: u64,
    user_ticks: u64,
    system_ticks: u64,
}

/// Linux's USER_HZ, the unit of the stat file's CPU times.
const TICKS_PER_SECOND: f64 = 100.0;

impl ThreadUsage {
    fn now() -> Option<ThreadUsage> {
        Self::parse(&std::fs::read_to_string("/proc/thread-self/stat").ok()?)
    }

    /// Fields 10, 12, 14 and 15 of proc(5)'s stat, counted after the command name
    /// (which may hold spaces and parentheses).
    fn parse(stat: &str) -> Option<ThreadUsage> {
        let (_, rest) = stat.rsplit_once(')')?;
        let f: Vec<&str> = rest.split_whitespace().collect();
        let at = |field: usize| f.get(field - 3)?.parse().ok();
        Some(ThreadUsage {
            minor_faults: at(10)?,
            major_faults: at(12)?,
            user_ticks: at(14)?,
            system_ticks: at(15)?,
        })
    }

    fn since(before: Option<ThreadUsage>) -> Option<ThreadUsage> {
        let (b, a) = (before?, Self::now()?);
        Some(ThreadUsage {
            minor_faults: a.minor_faults.saturating_sub(b.minor_faults),
            major_faults: a.major_faults.saturating_sub(b.major_faults),
            user_ticks: a.user_ticks.saturating_sub(b.user_ticks),
            system_ticks: a.system_ticks.saturating_sub(b.system_ticks),
        })
    }

    fn cpu(&self) -> String {
        format!(
            "CPU: user: {:.2} s, system: {:.2} s, ",
            self.user_ticks as f64 / TICKS_PER_SECOND,
            self.system_ticks as f64 / TICKS_PER_SECOND
        )
    }

    fn faults(&self) -> String {
        format!(
            "; page faults during redo: {} minor, {} major",
            self.minor_faults, self.major_faults
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Wal;
    use std::sync::Arc;

    const SEG: u64 = 64 << 10;

    fn vfs() -> Arc<dyn strata_vfs::Vfs> {
        strata_vfs::StdVfs::arc()
    }

    fn reader(dir: &std::path::Path) -> WalReader {
        WalReader::new(&vfs(), dir, SEG, Lsn(SEG), Lsn::INVALID).unwrap()
    }

    #[test]
    fn replays_in_order_counts_types_and_logs_like_postgres() {
        let dir = tempfile::tempdir().unwrap();
        let wal = Wal::open(&vfs(), dir.path(), SEG, (Lsn(SEG), Lsn::INVALID), 1).unwrap();
        let mut lsns = Vec::new();
        for i in 0..300u32 {
            let (lsn, end) = wal
                .insert(RmgrId((i % 3) as u8), (i % 2) as u8, i, &i.to_le_bytes())
                .unwrap();
            lsns.push((lsn, end));
        }
        wal.flush(wal.insert_lsn()).unwrap();
        let mut seen = Vec::new();
        let mut lines = Vec::new();
        let summary = redo(
            reader(dir.path()),
            |r| {
                seen.push(r.xid);
                Ok(())
            },
            &mut |l| lines.push(l.to_string()),
        )
        .unwrap();
        assert_eq!(seen, (0..300).collect::<Vec<_>>(), "rule 1");
        assert_eq!(summary.records, 300);
        assert_eq!(summary.end, lsns[299].1);
        assert_eq!(summary.last_record, lsns[299].0);
        assert_eq!(summary.per_type.len(), 6);
        assert_eq!(summary.per_type[&(RmgrId(0), 0)].records, 50);
        assert_eq!(lines[0], format!("redo starts at {}", lsns[0].0));
        let done = lines
            .iter()
            .find(|l| l.starts_with("redo done at"))
            .unwrap();
        assert!(
            done.starts_with(&format!("redo done at {} ", lsns[299].0)),
            "{done}"
        );
        let secs: f64 = done
            .rsplit("elapsed: ")
            .next()
            .unwrap()
            .trim_end_matches(" s")
            .parse()
            .unwrap();
        assert!(secs >= 0.0);
        let end = lines
            .iter()
            .find(|l| l.starts_with(&format!("end of WAL at {}", lsns[299].1)))
            .unwrap();
        if cfg!(target_os = "linux") {
            // PostgreSQL's words for the CPU, and the redo thread's faults.
            assert!(done.contains(" system usage: CPU: user: "), "{done}");
            assert!(end.contains("; page faults during redo: "), "{end}");
            assert!(end.ends_with(" major"), "{end}");
        }
    }

    #[test]
    fn thread_usage_reads_proc_stat_past_a_command_with_spaces() {
        // pid (comm) state ppid pgrp session tty tpgid flags minflt cminflt majflt
        // cmajflt utime stime ...
        let stat = "4242 (a (b) c) R 1 2 3 4 5 6 1234 7 5 8 250 37 9 9 20 0 1 0";
        assert_eq!(
            ThreadUsage::parse(stat),
            Some(ThreadUsage {
                minor_faults: 1234,
                major_faults: 5,
                user_ticks: 250,
                system_ticks: 37,
            })
        );
        assert_eq!(ThreadUsage::parse("4242 (x) R 1"), None);
        let u = ThreadUsage::parse(stat).unwrap();
        assert_eq!(u.cpu(), "CPU: user: 2.50 s, system: 0.37 s, ");
        if cfg!(target_os = "linux") {
            assert!(ThreadUsage::now().is_some());
        }
    }

    #[test]
    fn nothing_to_replay_is_said_so() {
        let dir = tempfile::tempdir().unwrap();
        let _wal = Wal::open(&vfs(), dir.path(), SEG, (Lsn(SEG), Lsn::INVALID), 1).unwrap();
        let mut lines = Vec::new();
        let s = redo(reader(dir.path()), |_| Ok(()), &mut |l| {
            lines.push(l.to_string())
        })
        .unwrap();
        assert_eq!(s.records, 0);
        assert_eq!(lines[0], "redo is not required");
    }

    #[test]
    fn a_record_that_cannot_be_applied_stops_recovery_and_is_named() {
        let dir = tempfile::tempdir().unwrap();
        let wal = Wal::open(&vfs(), dir.path(), SEG, (Lsn(SEG), Lsn::INVALID), 1).unwrap();
        let mut bad = Lsn::INVALID;
        for i in 0..10u32 {
            let (lsn, _) = wal.insert(RmgrId(7), 0x20, i, b"").unwrap();
            if i == 4 {
                bad = lsn;
            }
        }
        wal.flush(wal.insert_lsn()).unwrap();
        let mut applied = 0;
        let err = redo(
            reader(dir.path()),
            |r| {
                if r.xid == 4 {
                    return Err("relation 5/1 missing".into());
                }
                applied += 1;
                Ok(())
            },
            &mut |_| {},
        )
        .unwrap_err();
        assert_eq!(applied, 4, "rule 2: nothing after the failure is applied");
        let msg = err.to_string();
        assert!(
            msg.contains(&bad.to_string()) && msg.contains("rmgr 7") && msg.contains("0x20"),
            "{msg}"
        );
    }
}
