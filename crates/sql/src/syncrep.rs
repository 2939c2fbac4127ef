//! Synchronous replication: which standbys a commit waits for
//! (`synchronous_standby_names`), how far (`synchronous_commit`), and the wait.
//!
//! Entry points: [`SyncRep::new`] (from the server setting), [`SyncRep::update`] and
//! [`SyncRep::remove`] (by the WAL senders, on each standby status update and when a
//! standby goes), [`SyncRep::wait`] (by a session after its commit record is durable),
//! [`SyncRep::sync_state`] (for `pg_stat_replication`), [`Level::parse`].
//!
//! Rules (cited as "syncrep rule N"):
//! 1. The wait starts after the commit is durable locally and its effects are
//!    visible: it can only delay the client's answer, never undo the commit. A
//!    cancelled or terminated wait says so with PostgreSQL's WARNING ("The transaction
//!    has already committed locally, but might not have been replicated to the
//!    standby."), and the commit stands.
//! 2. `FIRST n (a, b, c)` (or `n (a, b, c)`, or a bare list meaning `FIRST 1`): the
//!    n connected standbys whose `application_name` comes first in the list are
//!    synchronous; a commit waits until every one of them has reached its LSN (write,
//!    flush or apply, by `synchronous_commit`). `ANY n (...)`: until n of the listed
//!    standbys have. `*` matches any name. Fewer connected standbys than n: the
//!    commit waits, as in PostgreSQL.
//! 3. An empty `synchronous_standby_names`, or `synchronous_commit` off, local or
//!    on-with-no-names, waits for nobody.
//! 4. Waiting costs no CPU: a condition variable woken by every status update, and
//!    the session's interrupt check every 10 ms.

use crate::{SqlError, SqlResult};
use parking_lot::{Condvar, Mutex};
use std::time::Duration;
use strata_types::Lsn;

/// How far a commit waits (`synchronous_commit`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Level {
    Off,
    Local,
    RemoteWrite,
    On,
    RemoteApply,
}

impl Level {
    /// A `synchronous_commit` value, as PostgreSQL spells it (booleans too).
    pub fn parse(v: &str) -> Option<Level> {
        Some(match v.trim().to_ascii_lowercase().as_str() {
            "off" | "false" | "no" | "0" => Level::Off,
            "local" => Level::Local,
            "remote_write" => Level::RemoteWrite,
            "on" | "true" | "yes" | "1" => Level::On,
            "remote_apply" => Level::RemoteApply,
            _ => return None,
        })
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Method {
    First,
    Any,
}

/// A parsed `synchronous_standby_names`.
#[derive(Clone, Debug, PartialEq, Eq)]
struct Config {
    method: Method,
    num: usize,
    names: Vec<String>,
}

/// What a standby last reported.
#[derive(Clone, Debug)]
struct Standby {
    id: u64,
    name: String,
    write: Lsn,
    flush: Lsn,
    apply: Lsn,
}

/// The server's synchronous replication state (module doc).
pub struct SyncRep {
    config: Option<Config>,
    standbys: Mutex<Vec<Standby>>,
    cv: Condvar,
}

/// How a waiting commit ended without its standbys (syncrep rule 1).
pub struct Cancelled {
    /// The WARNING's message.
    pub message: &'static str,
    /// The error that ended the wait (57014, 57P01, 08006): the caller reports a
    /// fatal one after the commit's answer.
    pub error: SqlError,
}

impl SyncRep {
    /// From `synchronous_standby_names` (an error in PostgreSQL's words).
    pub fn new(names: &str) -> Result<SyncRep, String> {
        Ok(SyncRep {
            config: parse_names(names)?,
            standbys: Mutex::new(Vec::new()),
            cv: Condvar::new(),
        })
    }

    /// Whether commits at `level` wait for anyone (rule 3).
    pub fn waits(&self, level: Level) -> bool {
        self.config.is_some() && level >= Level::RemoteWrite
    }

    /// A standby's status update.
    pub fn update(&self, id: u64, name: &str, write: Lsn, flush: Lsn, apply: Lsn) {
        let mut s = self.standbys.lock();
        match s.iter_mut().find(|x| x.id == id) {
            Some(x) => {
                x.write = write;
                x.flush = flush;
                x.apply = apply;
                name.clone_into(&mut x.name);
            }
            None => s.push(Standby {
                id,
                name: name.to_string(),
                write,
                flush,
                apply,
            }),
        }
        self.cv.notify_all();
    }

    /// A standby went.
    pub fn remove(&self, id: u64) {
        self.standbys.lock().retain(|x| x.id != id);
        self.cv.notify_all();
    }

    /// A standby's priority in the list (1 = first; 0 = not listed).
    fn priority(&self, name: &str) -> usize {
        let Some(c) = &self.config else { return 0 };
        c.names
            .iter()
            .position(|n| n == "*" || n.eq_ignore_ascii_case(name))
            .map_or(0, |p| p + 1)
    }

    /// The standbys a FIRST commit waits for: the `num` listed ones of highest
    /// priority (rule 2), by priority then arrival.
    fn first(&self, all: &[Standby]) -> Vec<u64> {
        let Some(c) = &self.config else {
            return Vec::new();
        };
        let mut listed: Vec<(usize, usize, u64)> = all
            .iter()
            .enumerate()
            .filter_map(|(i, s)| {
                let p = self.priority(&s.name);
                (p > 0).then_some((p, i, s.id))
            })
            .collect();
        listed.sort();
        listed
            .into_iter()
            .take(c.num)
            .map(|(_, _, id)| id)
            .collect()
    }

    /// Whether every standby `level` needs has reached `lsn` (rule 2).
    fn reached(&self, all: &[Standby], level: Level, lsn: Lsn) -> bool {
        let Some(c) = &self.config else { return true };
        let pos = |s: &Standby| match level {
            Level::RemoteWrite => s.write,
            Level::RemoteApply => s.apply,
            _ => s.flush,
        };
        match c.method {
            Method::First => {
                let sync = self.first(all);
                sync.len() >= c.num
                    && all
                        .iter()
                        .filter(|s| sync.contains(&s.id))
                        .all(|s| pos(s) >= lsn)
            }
            Method::Any => {
                all.iter()
                    .filter(|s| self.priority(&s.name) > 0 && pos(s) >= lsn)
                    .count()
                    >= c.num
            }
        }
    }

    /// Waits until the standbys `level` needs have reached `lsn` (rules 1, 4);
    /// `check` is the session's interrupt check, run every 10 ms.
    pub fn wait(
        &self,
        lsn: Lsn,
        level: Level,
        check: &dyn Fn() -> SqlResult<()>,
    ) -> Result<(), Cancelled> {
        if !self.waits(level) {
            return Ok(());
        }
        let mut all = self.standbys.lock();
        loop {
            if self.reached(&all, level, lsn) {
                return Ok(());
            }
            if let Err(error) = check() {
                let message = if error.code == "57014" {
                    "canceling wait for synchronous replication due to user request"
                } else {
                    "canceling the wait for synchronous replication and terminating connection due to administrator command"
                };
                return Err(Cancelled { message, error });
            }
            self.cv.wait_for(&mut all, Duration::from_millis(10));
        }
    }

    /// `pg_stat_replication`'s `sync_priority` and `sync_state` of standby `id`.
    pub fn sync_state(&self, id: u64, name: &str) -> (i32, &'static str) {
        let p = self.priority(name);
        let Some(c) = &self.config else {
            return (0, "async");
        };
        if p == 0 {
            return (0, "async");
        }
        let prio = i32::try_from(p).unwrap_or(i32::MAX);
        match c.method {
            Method::Any => (prio, "quorum"),
            Method::First => {
                if self.first(&self.standbys.lock()).contains(&id) {
                    (prio, "sync")
                } else {
                    (prio, "potential")
                }
            }
        }
    }
}

/// `synchronous_standby_names` (rule 2): `None` for an empty value.
fn parse_names(s: &str) -> Result<Option<Config>, String> {
    let t = s.trim();
    if t.is_empty() {
        return Ok(None);
    }
    let bad = || format!("invalid value for parameter \"synchronous_standby_names\": \"{s}\"");
    let upper = t.to_ascii_uppercase();
    let (method, rest) = if upper.starts_with("FIRST ") {
        (Some(Method::First), t[6..].trim())
    } else if upper.starts_with("ANY ") {
        (Some(Method::Any), t[4..].trim())
    } else {
        (None, t)
    };
    let (num, list) = match rest.split_once('(') {
        Some((n, l)) => {
            let n: usize = n.trim().parse().map_err(|_| bad())?;
            let l = l.trim().strip_suffix(')').ok_or_else(bad)?;
            (n, l)
        }
        None if method.is_none() => (1, rest),
        None => return Err(bad()),
    };
    let names: Vec<String> = list
        .split(',')
        .map(|n| n.trim().trim_matches('"').to_string())
        .collect();
    if num == 0 || names.iter().any(String::is_empty) {
        return Err(bad());
    }
    Ok(Some(Config {
        method: method.unwrap_or(Method::First),
        num,
        names,
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rep(names: &str) -> SyncRep {
        SyncRep::new(names).unwrap()
    }

    #[test]
    fn names_parse_as_postgres_reads_them() {
        let c = |s| parse_names(s).unwrap().unwrap();
        assert_eq!(c("s1").num, 1);
        assert_eq!(c("s1, s2").names, vec!["s1", "s2"]);
        assert_eq!(c("2 (a, b, c)").method, Method::First);
        assert_eq!(c("FIRST 2 (a, b)").num, 2);
        assert_eq!(c("any 1 (\"a\", b)").method, Method::Any);
        assert_eq!(c("*").names, vec!["*"]);
        assert!(parse_names("").unwrap().is_none());
        for bad in ["FIRST x (a)", "ANY 1 (a", "0 (a)", "a,,b", "ANY 2"] {
            assert!(parse_names(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn first_waits_for_the_highest_priority_standbys() {
        let r = rep("FIRST 1 (b, a)");
        r.update(1, "a", Lsn(100), Lsn(100), Lsn(100));
        assert!(r.reached(&r.standbys.lock(), Level::On, Lsn(100)));
        r.update(2, "b", Lsn(50), Lsn(50), Lsn(10));
        // b outranks a: now b is the one synchronous standby.
        assert!(!r.reached(&r.standbys.lock(), Level::On, Lsn(100)));
        assert!(r.reached(&r.standbys.lock(), Level::On, Lsn(50)));
        assert!(!r.reached(&r.standbys.lock(), Level::RemoteApply, Lsn(50)));
        assert_eq!(r.sync_state(2, "b"), (1, "sync"));
        assert_eq!(r.sync_state(1, "a"), (2, "potential"));
        assert_eq!(r.sync_state(3, "z"), (0, "async"));
        r.remove(2);
        assert!(r.reached(&r.standbys.lock(), Level::On, Lsn(100)));
    }

    #[test]
    fn any_is_a_quorum_and_no_standby_means_waiting() {
        let r = rep("ANY 2 (*)");
        assert!(!r.reached(&r.standbys.lock(), Level::On, Lsn(1)));
        r.update(1, "x", Lsn(10), Lsn(10), Lsn(10));
        assert!(!r.reached(&r.standbys.lock(), Level::On, Lsn(10)));
        r.update(2, "y", Lsn(20), Lsn(20), Lsn(5));
        assert!(r.reached(&r.standbys.lock(), Level::On, Lsn(10)));
        assert!(!r.reached(&r.standbys.lock(), Level::RemoteApply, Lsn(10)));
        assert_eq!(r.sync_state(1, "x"), (1, "quorum"));
    }

    #[test]
    fn a_cancelled_wait_returns_with_the_warning_and_no_names_never_waits() {
        let r = rep("s1");
        let cancel = || {
            Err(SqlError::new(
                "57014",
                "canceling statement due to user request",
            ))
        };
        let c = r.wait(Lsn(5), Level::On, &cancel).err().unwrap();
        assert!(c.message.contains("user request"));
        assert!(r.wait(Lsn(5), Level::Local, &cancel).is_ok());
        assert!(rep("").wait(Lsn(5), Level::RemoteApply, &cancel).is_ok());
    }
}
