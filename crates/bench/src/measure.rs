//! What the harnesses read from the processes they measure: resident memory from
//! `/proc/<pid>/status` ([`rss`]) and the replay time from a server's `redo done` log
//! line ([`RedoDone`]), which Strata writes in PostgreSQL's words
//! (`strata_wal::redo`) so that one parser reads both servers' logs.
//!
//! Rules:
//! 1. Memory is `VmRSS` (now) and `VmHWM` (peak) of `/proc/<pid>/status`, in bytes;
//!    the kernel reports them in kB. A process that is gone, or a system without
//!    `/proc`, gives None: no harness reports a made-up 0 as a measurement.
//! 2. The replay time is the `elapsed: N s` of the last `redo done at` line of a log:
//!    the one of the latest recovery when a log holds several.

use strata_types::Lsn;

/// A process to read: this one or another by pid.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Process {
    This,
    Pid(u32),
}

/// Resident memory of a process (rule 1).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Rss {
    /// `VmRSS`.
    pub now_bytes: u64,
    /// `VmHWM`: the peak since the process started.
    pub peak_bytes: u64,
}

/// `VmRSS` and `VmHWM` of `p`, or None when they cannot be read.
pub fn rss(p: Process) -> Option<Rss> {
    let status = status_text(p)?;
    Some(Rss {
        now_bytes: status_kb(&status, "VmRSS:")? * 1024,
        peak_bytes: status_kb(&status, "VmHWM:")? * 1024,
    })
}

/// The first number after `field` in a `/proc/<pid>/status` text (e.g. `Uid:`).
pub fn status_field(p: Process, field: &str) -> Option<u64> {
    status_kb(&status_text(p)?, field)
}

fn status_text(p: Process) -> Option<String> {
    let path = match p {
        Process::This => "/proc/self/status".to_string(),
        Process::Pid(pid) => format!("/proc/{pid}/status"),
    };
    std::fs::read_to_string(path).ok()
}

fn status_kb(status: &str, field: &str) -> Option<u64> {
    status
        .lines()
        .find_map(|l| l.strip_prefix(field))?
        .split_whitespace()
        .next()?
        .parse()
        .ok()
}

/// A `redo done` line: where replay ended and how long it took.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct RedoDone {
    pub lsn: Lsn,
    pub elapsed_seconds: f64,
}

impl RedoDone {
    /// Parses one log line, with or without the server's prefix (time, pid, `LOG:`):
    /// `redo done at 0/1A2B3C4 system usage: CPU: user: 0.01 s, system: 0.00 s,
    /// elapsed: 0.02 s` (PostgreSQL 15 and Strata, to the microsecond) or `redo done
    /// at 0/3000060 system usage: elapsed: 0.021000 s` (Strata before stop 24).
    pub fn parse(line: &str) -> Option<RedoDone> {
        let (_, rest) = line.split_once("redo done at ")?;
        let lsn = parse_lsn(rest.split_whitespace().next()?)?;
        let (_, elapsed) = rest.rsplit_once("elapsed:")?;
        let mut words = elapsed.split_whitespace();
        let elapsed_seconds: f64 = words.next()?.parse().ok()?;
        if words.next() != Some("s") || !elapsed_seconds.is_finite() || elapsed_seconds < 0.0 {
            return None;
        }
        Some(RedoDone {
            lsn,
            elapsed_seconds,
        })
    }

    /// The last `redo done` line of `log` (rule 2).
    pub fn last_in(log: &str) -> Option<RedoDone> {
        log.lines().rev().find_map(RedoDone::parse)
    }
}

/// `X/X` (both halves hex, as PostgreSQL prints an LSN).
fn parse_lsn(s: &str) -> Option<Lsn> {
    let (hi, lo) = s.split_once('/')?;
    let hi = u32::from_str_radix(hi, 16).ok()?;
    let lo = u32::from_str_radix(lo, 16).ok()?;
    Some(Lsn((u64::from(hi) << 32) | u64::from(lo)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_postgres_15s_line_with_its_prefix() {
        let line = "2026-11-23 17:04:39.123 UTC [4242] LOG:  redo done at 0/1A2B3C4 system \
                    usage: CPU: user: 0.01 s, system: 0.00 s, elapsed: 0.02 s";
        assert_eq!(
            RedoDone::parse(line),
            Some(RedoDone {
                lsn: Lsn(0x1A2B3C4),
                elapsed_seconds: 0.02
            })
        );
        let bare = "redo done at 0/1A2B3C4 system usage: CPU: user: 0.01 s, system: 0.00 s, \
                    elapsed: 0.02 s";
        assert_eq!(RedoDone::parse(bare).map(|r| r.elapsed_seconds), Some(0.02));
    }

    #[test]
    fn reads_stratas_line_as_strata_wal_writes_it() {
        // The format of strata_wal::redo, as the server logs it and as `strata debug
        // recover` prints it.
        let line = format!(
            "redo done at {} system usage: elapsed: {:.6} s",
            Lsn(0x1_0300_0060),
            1.25
        );
        assert_eq!(
            RedoDone::parse(&line),
            Some(RedoDone {
                lsn: Lsn(0x1_0300_0060),
                elapsed_seconds: 1.25
            })
        );
        let logged = "LOG:  redo done at 0/3000060 system usage: elapsed: 0.021000 s";
        assert_eq!(RedoDone::parse(logged).map(|r| r.lsn), Some(Lsn(0x3000060)));
    }

    #[test]
    fn takes_the_last_redo_line_and_ignores_others() {
        let log = "LOG:  redo starts at 0/1000028\n\
                   LOG:  redo done at 0/2000000 system usage: elapsed: 3.000000 s\n\
                   LOG:  end of WAL at 0/2000038: end of WAL\n\
                   LOG:  redo starts at 0/2000038\n\
                   LOG:  redo done at 0/3000000 system usage: elapsed: 0.500000 s\n\
                   LOG:    rmgr   1 info 0x10 heap insert   10 records, 0.001 s\n";
        let last = RedoDone::last_in(log).unwrap();
        assert_eq!((last.lsn, last.elapsed_seconds), (Lsn(0x3000000), 0.5));
        assert_eq!(RedoDone::last_in("LOG:  redo is not required\n"), None);
    }

    #[test]
    fn refuses_what_is_not_a_redo_done_line() {
        for line in [
            "redo done at 0/1A2B3C4 system usage: CPU: user: 0.01 s",
            "redo done at zz system usage: elapsed: 0.02 s",
            "redo done at 0/1A2B3C4 system usage: elapsed: -1 s",
            "redo done at 0/1A2B3C4 system usage: elapsed: 0.02 ms",
            "redo starts at 0/1A2B3C4",
        ] {
            assert_eq!(RedoDone::parse(line), None, "{line}");
        }
    }

    #[test]
    fn reads_this_processs_memory() {
        let r = rss(Process::This).expect("/proc/self/status");
        assert!(r.now_bytes > 0 && r.peak_bytes >= r.now_bytes, "{r:?}");
        let pid = rss(Process::Pid(std::process::id())).expect("own pid");
        assert!(pid.peak_bytes >= r.peak_bytes);
        assert_eq!(rss(Process::Pid(u32::MAX)), None);
    }
}
