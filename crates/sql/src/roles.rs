//! Roles and their passwords: `global/pg_authid`, the store behind
//! `ALTER ROLE ... PASSWORD` and authentication.
//!
//! Owns `global/pg_authid`, a text file of SCRAM-SHA-256 verifiers, one role per line
//! (`role:iterations:salt:stored_key:server_key`, hex), written by
//! `ALTER ROLE ... PASSWORD` (and `strata init --pwfile`). The password itself is
//! never stored, only PostgreSQL's verifier, which the wire layer derives (the store is
//! given its [`Derive`] function: SCRAM belongs to the protocol, not to SQL).
//!
//! Rules (cited as "roles rule N"):
//! 1. With no password set, every connection is trusted (PostgreSQL's `trust`, for a
//!    server that listens on 127.0.0.1 by default). Once any role has a password,
//!    every connection must authenticate, and a role without one is refused.
//! 2. The file is replaced atomically (`strata_vfs::write_atomic`: write, fsync,
//!    rename, fsync of the directory): a crash leaves the old set of passwords or the
//!    new one, never a mix.
//! 3. Files here are created 0600, through the cluster's file abstraction
//!    (`strata_vfs`), so that tests can fail or lose their writes like any other
//!    durable file's.
//! 4. A password change commits with its transaction, PostgreSQL's way of keeping
//!    pg_authid in a table, done with two files: [`RoleStore::stage`] writes the
//!    whole new set to `global/pg_authid.pending` (atomically, as in 2), headed by
//!    the transaction's xid; after the commit record is durable,
//!    [`RoleStore::install`] renames it over `pg_authid`; an abort removes it
//!    ([`RoleStore::discard`]). At start-up, after recovery, [`RoleStore::load`]
//!    installs a pending file whose xid committed (a crash between the commit record
//!    and the rename) and removes any other. Staging needs an xid, so the writer
//!    lock (engine rule 1): there is one pending file at most. An install that fails
//!    after the commit record is durable is a PANIC (engine rule 7): the process ends
//!    and start-up settles the pending file by the commit log.

use parking_lot::RwLock;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use strata_types::Xid;
use strata_vfs::Vfs;

/// The role `strata init` creates (PostgreSQL's bootstrap superuser). Every other
/// role is an ordinary role: it may change only its own password, and may not take
/// the `superuser_reserved_connections` slots.
pub const BOOTSTRAP_SUPERUSER: &str = "strata";

/// Whether `role` is a superuser.
pub fn is_superuser(role: &str) -> bool {
    role == BOOTSTRAP_SUPERUSER
}

/// A role's SCRAM-SHA-256 verifier (PostgreSQL's `rolpassword`, split).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Verifier {
    pub iterations: usize,
    pub salt: Vec<u8>,
    pub stored_key: Vec<u8>,
    pub server_key: Vec<u8>,
}

/// Derives a verifier (with a fresh salt) from a password.
pub type Derive = fn(&str) -> Result<Verifier, String>;

/// The roles' SCRAM verifiers, loaded from and saved to `global/pg_authid`.
pub struct RoleStore {
    path: PathBuf,
    roles: RwLock<BTreeMap<String, Verifier>>,
    derive: Derive,
    vfs: Arc<dyn Vfs>,
}

/// Refuses role names the file cannot hold.
pub fn check_role(role: &str) -> Result<(), String> {
    if role.contains(':') || role.contains('\n') {
        return Err(format!("invalid role name \"{role}\""));
    }
    Ok(())
}

/// `roles` with `changes` applied in order.
fn apply(
    derive: Derive,
    roles: &BTreeMap<String, Verifier>,
    changes: &[(String, Option<String>)],
) -> Result<BTreeMap<String, Verifier>, String> {
    let mut next = roles.clone();
    for (role, password) in changes {
        match password {
            Some(p) => {
                next.insert(role.clone(), derive(p)?);
            }
            None => {
                next.remove(role);
            }
        }
    }
    Ok(next)
}

/// The verifiers of a pending file's text (past its `xid` line), or of pg_authid.
fn strip_xid(text: &str) -> &str {
    match text.strip_prefix("xid ") {
        Some(rest) => rest.split_once('\n').map_or("", |(_, r)| r),
        None => text,
    }
}

/// A set of roles' verifiers in the file's text form.
fn to_text(roles: &BTreeMap<String, Verifier>) -> String {
    let mut text = String::new();
    for (r, v) in roles {
        text.push_str(&format!(
            "{r}:{}:{}:{}:{}\n",
            v.iterations,
            hex::encode(&v.salt),
            hex::encode(&v.stored_key),
            hex::encode(&v.server_key)
        ));
    }
    text
}

/// Parses the file's text form (`path` names it in errors).
fn parse(text: &str, path: &Path) -> Result<BTreeMap<String, Verifier>, String> {
    let mut roles = BTreeMap::new();
    for (n, line) in text.lines().enumerate() {
        if line.trim().is_empty() {
            continue;
        }
        let bad = || format!("{}: line {}: malformed verifier", path.display(), n + 1);
        let f: Vec<&str> = line.split(':').collect();
        let [role, it, salt, sk, svk] = f.as_slice() else {
            return Err(bad());
        };
        let v = Verifier {
            iterations: it.parse().map_err(|_| bad())?,
            salt: hex::decode(salt).map_err(|_| bad())?,
            stored_key: hex::decode(sk).map_err(|_| bad())?,
            server_key: hex::decode(svk).map_err(|_| bad())?,
        };
        roles.insert(role.to_string(), v);
    }
    Ok(roles)
}

/// Writes `text` to `path` atomically and durably (rules 2 and 3).
fn write_atomic(vfs: &dyn Vfs, path: &Path, text: &str) -> Result<(), String> {
    strata_vfs::write_atomic(vfs, path, text.as_bytes())
        .map_err(|e| format!("could not write \"{}\": {e}", path.display()))
}

fn sync_dir(vfs: &dyn Vfs, path: &Path) -> std::io::Result<()> {
    vfs.sync_dir(path.parent().unwrap_or(Path::new(".")))
}

fn read_text(vfs: &dyn Vfs, path: &Path) -> std::io::Result<String> {
    let bytes = strata_vfs::read_file(vfs, path)?;
    String::from_utf8(bytes).map_err(|e| std::io::Error::new(std::io::ErrorKind::InvalidData, e))
}

/// A password change staged for a transaction (rule 4).
pub struct Staged {
    roles: BTreeMap<String, Verifier>,
}

impl RoleStore {
    /// Loads `global/pg_authid`, first settling a pending change (rule 4):
    /// installed if `committed` says its xid committed, else removed. `derive` makes
    /// the verifiers of new passwords.
    pub fn load(
        vfs: Arc<dyn Vfs>,
        data_dir: &Path,
        committed: &dyn Fn(Xid) -> bool,
        derive: Derive,
    ) -> Result<RoleStore, String> {
        let path = data_dir.join("global").join("pg_authid");
        let pending = path.with_extension("pending");
        match read_text(&*vfs, &pending) {
            Ok(text) => {
                let xid = text
                    .lines()
                    .next()
                    .and_then(|l| l.strip_prefix("xid "))
                    .and_then(|x| x.parse().ok())
                    .map(Xid);
                let io =
                    |e: std::io::Error| format!("could not settle \"{}\": {e}", pending.display());
                if xid.is_some_and(committed) {
                    vfs.rename(&pending, &path).map_err(io)?;
                } else {
                    vfs.remove_file(&pending).map_err(io)?;
                }
                sync_dir(&*vfs, &path).map_err(io)?;
            }
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => return Err(format!("could not read \"{}\": {e}", pending.display())),
        }
        let roles = match read_text(&*vfs, &path) {
            Ok(text) => parse(strip_xid(&text), &path)?,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => BTreeMap::new(),
            Err(e) => return Err(format!("could not read \"{}\": {e}", path.display())),
        };
        Ok(RoleStore {
            path,
            roles: RwLock::new(roles),
            derive,
            vfs,
        })
    }

    /// Whether connections must authenticate (some role has a password).
    pub fn required(&self) -> bool {
        !self.roles.read().is_empty()
    }

    /// Sets (or with `None` removes) a role's password, durably, outside any
    /// transaction (`strata init --pwfile`, the server not running).
    pub fn set_password(&self, role: &str, password: Option<&str>) -> Result<(), String> {
        check_role(role)?;
        let mut roles = self.roles.write();
        let next = apply(
            self.derive,
            &roles,
            &[(role.to_string(), password.map(str::to_string))],
        )?;
        write_atomic(&*self.vfs, &self.path, &to_text(&next))?;
        *roles = next;
        Ok(())
    }

    /// Stages password changes (role, new password or `None` to remove) for
    /// transaction `xid`: `global/pg_authid.pending` holds the whole new set, durably
    /// (rule 4). Called again in the same transaction, it replaces the staged
    /// set; `changes` are then all of the transaction's changes so far.
    pub fn stage(&self, xid: Xid, changes: &[(String, Option<String>)]) -> Result<Staged, String> {
        for (role, _) in changes {
            check_role(role)?;
        }
        let next = apply(self.derive, &self.roles.read(), changes)?;
        let text = format!("xid {}\n{}", xid.0, to_text(&next));
        write_atomic(&*self.vfs, &self.path.with_extension("pending"), &text)?;
        Ok(Staged { roles: next })
    }

    /// Makes a staged change the password file, once its transaction's commit record
    /// is durable (rule 4). A failure here is a PANIC: the commit cannot be undone, and
    /// only a restart settles the pending file by the commit log.
    pub fn install(&self, staged: Staged) {
        let mut roles = self.roles.write();
        let pending = self.path.with_extension("pending");
        if let Err(e) = self
            .vfs
            .rename(&pending, &self.path)
            .and_then(|()| sync_dir(&*self.vfs, &self.path))
        {
            panic!(
                "could not install \"{}\" after its transaction committed: {e}",
                pending.display()
            );
        }
        *roles = staged.roles;
    }

    /// Drops a staged change (its transaction aborted).
    pub fn discard(&self) {
        let _ = self.vfs.remove_file(&self.path.with_extension("pending"));
    }

    /// Whether `role` has a password.
    pub fn has_role(&self, role: &str) -> bool {
        self.roles.read().contains_key(role)
    }

    /// The role's verifier, if it has a password.
    pub fn verifier(&self, role: &str) -> Option<Verifier> {
        self.roles.read().get(role).cloned()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn derive(p: &str) -> Result<Verifier, String> {
        Ok(Verifier {
            iterations: 1,
            salt: p.as_bytes().to_vec(),
            stored_key: vec![1],
            server_key: vec![2],
        })
    }

    fn load(dir: &Path, committed: &dyn Fn(Xid) -> bool) -> RoleStore {
        RoleStore::load(strata_vfs::StdVfs::arc(), dir, committed, derive).unwrap()
    }

    fn change(p: &str) -> Vec<(String, Option<String>)> {
        vec![("strata".to_string(), Some(p.to_string()))]
    }

    #[test]
    fn a_staged_change_is_settled_at_load_by_its_transaction_fate() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir(dir.path().join("global")).unwrap();
        let pending = dir.path().join("global/pg_authid.pending");
        let store = load(dir.path(), &|_| false);
        // Staged, then a crash before the commit record: removed at load.
        store.stage(Xid(7), &change("a")).unwrap();
        assert!(!store.required(), "not before install");
        let store = load(dir.path(), &|x| x != Xid(7));
        assert!(!store.required());
        assert!(!pending.exists());
        // Staged, committed, a crash before install: installed at load.
        store.stage(Xid(8), &change("b")).unwrap();
        let store = load(dir.path(), &|x| x == Xid(8));
        assert!(store.required());
        assert_eq!(store.verifier("strata").unwrap().salt, b"b");
        assert!(!pending.exists());
        // Installed in the running server.
        let st = store.stage(Xid(9), &[("other".to_string(), None)]).unwrap();
        store.install(st);
        assert!(store.has_role("strata"));
        let again = load(dir.path(), &|_| false);
        assert!(again.has_role("strata"));
    }

    #[test]
    fn the_file_round_trips_and_refuses_what_it_cannot_hold() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir(dir.path().join("global")).unwrap();
        let store = load(dir.path(), &|_| false);
        assert!(store.set_password("a:b", Some("x")).is_err());
        store.set_password("alice", Some("pw")).unwrap();
        let again = load(dir.path(), &|_| false);
        assert_eq!(again.verifier("alice"), derive("pw").ok());
        std::fs::write(dir.path().join("global/pg_authid"), "alice:1:zz\n").unwrap();
        assert!(
            RoleStore::load(strata_vfs::StdVfs::arc(), dir.path(), &|_| false, derive).is_err()
        );
    }
}
