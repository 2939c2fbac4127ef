//! Physical replication slots: named positions in the WAL that a consumer (a standby,
//! `pg_receivewal --slot`) has not yet confirmed, so the checkpointer keeps every
//! segment from the oldest of them on.
//!
//! Owns `pg_replslot/<name>/state`: one line, `restart_lsn X/X`.
//!
//! Rules (cited as "slots rule N"):
//! 1. A slot's file is written atomically (`strata_vfs::write_atomic`) and its
//!    directory created and removed with the parent fsynced: after a crash a slot
//!    exists with a restart LSN it had, or does not exist, never half.
//! 2. The restart LSN only moves forward, in memory as the consumer confirms flushes,
//!    and reaches the file at the next checkpoint ([`Slots::persist`]) or drop. A crash
//!    can therefore leave an older restart LSN, which holds more WAL, never less.
//! 3. Temporary slots live in memory only and go with the connection that made them.
//! 4. At most one consumer uses a slot at a time ([`Slots::acquire`]).
//! 5. Costs are O(slots), which are few (PostgreSQL's max_replication_slots).

use parking_lot::Mutex;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use strata_types::Lsn;
use strata_vfs::Vfs;

/// Why a slot operation was refused, with PostgreSQL's SQLSTATE.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{message}")]
pub struct SlotError {
    pub code: &'static str,
    pub message: String,
}

fn err(code: &'static str, message: String) -> SlotError {
    SlotError { code, message }
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Slot {
    pub restart_lsn: Lsn,
    pub temporary: bool,
    /// The consumer using it (a sender's id), if any.
    pub active: Option<u64>,
    /// Changed since last written (rule 2).
    dirty: bool,
}

/// Every slot of the cluster.
pub struct Slots {
    vfs: Arc<dyn Vfs>,
    dir: PathBuf,
    slots: Mutex<BTreeMap<String, Slot>>,
}

/// PostgreSQL's ReplicationSlotValidateName: 1..63 of `[a-z0-9_]`.
pub fn check_name(name: &str) -> Result<(), SlotError> {
    if name.is_empty() || name.len() > 63 {
        return Err(err(
            "42602",
            format!("replication slot name \"{name}\" is too short or too long"),
        ));
    }
    if !name
        .bytes()
        .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'_')
    {
        return Err(err(
            "42602",
            format!("replication slot name \"{name}\" contains invalid character"),
        ));
    }
    Ok(())
}

fn io(what: &str, path: &Path, e: std::io::Error) -> SlotError {
    err(
        "58030",
        format!("could not {what} \"{}\": {e}", path.display()),
    )
}

impl Slots {
    /// Loads `data_dir/pg_replslot` (created if missing). O(slots).
    pub fn load(vfs: Arc<dyn Vfs>, data_dir: &Path) -> Result<Slots, SlotError> {
        let dir = data_dir.join("pg_replslot");
        vfs.create_dir_all(&dir)
            .map_err(|e| io("create directory", &dir, e))?;
        let mut slots = BTreeMap::new();
        for entry in vfs.list_dir(&dir).map_err(|e| io("read", &dir, e))? {
            let path = dir.join(&entry.name).join("state");
            if check_name(&entry.name).is_err() {
                continue;
            }
            let text = match strata_vfs::read_file(&*vfs, &path) {
                Ok(b) => String::from_utf8_lossy(&b).into_owned(),
                // A directory without its state: a create that a crash interrupted.
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => continue,
                Err(e) => return Err(io("read", &path, e)),
            };
            let lsn = text
                .trim()
                .strip_prefix("restart_lsn ")
                .and_then(|l| l.parse::<Lsn>().ok())
                .ok_or_else(|| err("XX001", format!("{}: invalid slot state", path.display())))?;
            slots.insert(
                entry.name.clone(),
                Slot {
                    restart_lsn: lsn,
                    temporary: false,
                    active: None,
                    dirty: false,
                },
            );
        }
        Ok(Slots {
            vfs,
            dir,
            slots: Mutex::new(slots),
        })
    }

    fn write_state(&self, name: &str, lsn: Lsn) -> Result<(), SlotError> {
        let path = self.dir.join(name).join("state");
        strata_vfs::write_atomic(&*self.vfs, &path, format!("restart_lsn {lsn}\n").as_bytes())
            .map_err(|e| io("write", &path, e))
    }

    /// Creates a slot whose WAL is kept from `restart_lsn` on (rule 1).
    pub fn create(&self, name: &str, restart_lsn: Lsn, temporary: bool) -> Result<(), SlotError> {
        check_name(name)?;
        let mut slots = self.slots.lock();
        if slots.contains_key(name) {
            return Err(err(
                "42710",
                format!("replication slot \"{name}\" already exists"),
            ));
        }
        if !temporary {
            let d = self.dir.join(name);
            self.vfs
                .create_dir_all(&d)
                .map_err(|e| io("create directory", &d, e))?;
            self.write_state(name, restart_lsn)?;
            self.vfs
                .sync_dir(&self.dir)
                .map_err(|e| io("fsync", &self.dir, e))?;
        }
        slots.insert(
            name.to_string(),
            Slot {
                restart_lsn,
                temporary,
                active: None,
                dirty: false,
            },
        );
        Ok(())
    }

    fn missing(name: &str) -> SlotError {
        err(
            "42704",
            format!("replication slot \"{name}\" does not exist"),
        )
    }

    /// Drops a slot nobody uses (rule 1).
    pub fn drop_slot(&self, name: &str) -> Result<(), SlotError> {
        let mut slots = self.slots.lock();
        let slot = slots.get(name).ok_or_else(|| Slots::missing(name))?;
        if let Some(pid) = slot.active {
            return Err(err(
                "55006",
                format!("replication slot \"{name}\" is active for PID {pid}"),
            ));
        }
        if !slot.temporary {
            let d = self.dir.join(name);
            let state = d.join("state");
            self.vfs
                .remove_file(&state)
                .map_err(|e| io("remove", &state, e))?;
            self.vfs
                .remove_dir_all(&d)
                .map_err(|e| io("remove directory", &d, e))?;
            self.vfs
                .sync_dir(&self.dir)
                .map_err(|e| io("fsync", &self.dir, e))?;
        }
        slots.remove(name);
        Ok(())
    }

    /// The slot, if it exists.
    pub fn get(&self, name: &str) -> Option<Slot> {
        self.slots.lock().get(name).cloned()
    }

    /// Takes a slot for consumer `who` (rule 4).
    pub fn acquire(&self, name: &str, who: u64) -> Result<Lsn, SlotError> {
        let mut slots = self.slots.lock();
        let slot = slots.get_mut(name).ok_or_else(|| Slots::missing(name))?;
        match slot.active {
            Some(pid) if pid != who => Err(err(
                "55006",
                format!("replication slot \"{name}\" is active for PID {pid}"),
            )),
            _ => {
                slot.active = Some(who);
                Ok(slot.restart_lsn)
            }
        }
    }

    /// Gives back every slot `who` holds; with `ending` (the consumer's connection
    /// ends) its temporary slots are dropped (rule 3).
    pub fn release_all(&self, who: u64, ending: bool) {
        let mut slots = self.slots.lock();
        if ending {
            slots.retain(|_, s| !(s.temporary && s.active == Some(who)));
        }
        for s in slots.values_mut() {
            if s.temporary && !ending {
                continue;
            }
            if s.active == Some(who) {
                s.active = None;
            }
        }
    }

    /// Moves a slot's restart LSN forward to `lsn` (rule 2).
    pub fn advance(&self, name: &str, lsn: Lsn) {
        if let Some(s) = self.slots.lock().get_mut(name) {
            if lsn > s.restart_lsn {
                s.restart_lsn = lsn;
                s.dirty = true;
            }
        }
    }

    /// The oldest restart LSN of any slot that holds WAL (one created without
    /// reserving WAL and never used holds none): WAL from there on must stay.
    pub fn min_restart_lsn(&self) -> Option<Lsn> {
        self.slots
            .lock()
            .values()
            .map(|s| s.restart_lsn)
            .filter(|l| *l != Lsn::INVALID)
            .min()
    }

    /// Writes the restart LSNs that moved (the checkpoint's part, rule 2).
    pub fn persist(&self) -> Result<(), SlotError> {
        let mut slots = self.slots.lock();
        for (name, s) in slots.iter_mut() {
            if s.dirty && !s.temporary {
                self.write_state(name, s.restart_lsn)?;
                s.dirty = false;
            }
        }
        Ok(())
    }

    /// Every slot, by name.
    pub fn list(&self) -> Vec<(String, Slot)> {
        self.slots
            .lock()
            .iter()
            .map(|(n, s)| (n.clone(), s.clone()))
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn load(dir: &Path) -> Slots {
        Slots::load(strata_vfs::StdVfs::arc(), dir).unwrap()
    }

    #[test]
    fn slots_survive_a_reload_and_hold_the_oldest_position() {
        let dir = tempfile::tempdir().unwrap();
        let s = load(dir.path());
        assert_eq!(s.min_restart_lsn(), None);
        s.create("unreserved", Lsn::INVALID, false).unwrap();
        assert_eq!(s.min_restart_lsn(), None, "holds no WAL until used");
        s.create("a", Lsn(0x200), false).unwrap();
        s.create("b", Lsn(0x100), false).unwrap();
        s.create("t", Lsn(0x50), true).unwrap();
        assert_eq!(s.create("a", Lsn(1), false).unwrap_err().code, "42710");
        assert_eq!(s.create("A", Lsn(1), false).unwrap_err().code, "42602");
        assert_eq!(s.min_restart_lsn(), Some(Lsn(0x50)));
        s.advance("b", Lsn(0x300));
        s.advance("b", Lsn(0x10)); // never backwards
        assert_eq!(s.get("b").unwrap().restart_lsn, Lsn(0x300));
        // Not yet persisted: a reload sees the old position (rule 2), no temporary.
        let again = load(dir.path());
        assert_eq!(again.get("b").unwrap().restart_lsn, Lsn(0x100));
        assert!(again.get("t").is_none());
        s.persist().unwrap();
        assert_eq!(load(dir.path()).get("b").unwrap().restart_lsn, Lsn(0x300));
        // In use: no second consumer, no drop; released, dropped for good.
        s.acquire("a", 7).unwrap();
        assert_eq!(s.acquire("a", 8).unwrap_err().code, "55006");
        assert_eq!(s.drop_slot("a").unwrap_err().code, "55006");
        s.acquire("t", 7).unwrap();
        s.release_all(7, false);
        assert_eq!(
            s.get("t").unwrap().active,
            Some(7),
            "temporary: kept by its connection"
        );
        s.release_all(7, true);
        assert!(s.get("t").is_none());
        s.drop_slot("a").unwrap();
        assert_eq!(s.drop_slot("a").unwrap_err().code, "42704");
        assert!(load(dir.path()).get("a").is_none());
        assert_eq!(load(dir.path()).min_restart_lsn(), Some(Lsn(0x300)));
    }
}
