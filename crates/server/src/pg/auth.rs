//! Authentication: the password store and the startup handler (trust or SCRAM).
//!
//! Owns `global/pg_authid`, a text file of SCRAM-SHA-256 verifiers, one role per line
//! (`role:iterations:salt:stored_key:server_key`, hex), written by
//! `ALTER ROLE ... PASSWORD` (and `strata init --pwfile`). The password itself is
//! never stored, only PostgreSQL's verifier.
//!
//! Invariants:
//! 1. With no password set, every connection is trusted (PostgreSQL's `trust`, for a
//!    server that listens on 127.0.0.1 by default). Once any role has a password,
//!    every connection must authenticate with SCRAM-SHA-256, and a role without one
//!    is refused (28P01).
//! 2. The file is replaced atomically (write, fsync, rename, fsync of the directory):
//!    a crash leaves the old set of passwords or the new one, never a mix.
//! 3. A connection takes a slot (`max_connections`, `superuser_reserved_connections`)
//!    and its database is checked only once it has authenticated, as PostgreSQL
//!    checks the database after authentication; so connections that never finish
//!    authenticating lock nobody out. The refusal is FATAL.
//! 4. Role names cannot be probed: an unknown role goes through the same SCRAM
//!    exchange as a known one, with a salt derived from its name and a server
//!    secret (`global/pg_mock_nonce`, PostgreSQL's `scram_mock_salt`), and fails
//!    with the same 28P01 message as a wrong password. The log says which it was.
//! 5. Files here are created 0600, through the cluster's file abstraction
//!    (`strata_vfs`), so that tests can fail or lose their writes like any other
//!    durable file's.
//! 6. A password change commits with its transaction, PostgreSQL's way of keeping
//!    pg_authid in a table, done with two files: [`AuthStore::stage`] writes the
//!    whole new set to `global/pg_authid.pending` (atomically, as in 2), headed by
//!    the transaction's xid; after the commit record is durable,
//!    [`AuthStore::install`] renames it over `pg_authid`; an abort removes it
//!    ([`AuthStore::discard`]). At start-up, after recovery, [`AuthStore::load`]
//!    installs a pending file whose xid committed (a crash between the commit record
//!    and the rename) and removes any other. Staging needs an xid, so the writer
//!    lock (engine rule 1): there is one pending file at most. An install that fails
//!    after the commit record is durable is a PANIC (engine rule 7): the process ends
//!    and start-up settles the pending file by the commit log.

use super::{fatal, Conn};
use async_trait::async_trait;
use futures::sink::Sink;
use parking_lot::RwLock;
use pgwire::api::auth::driver::AuthOutcome;
use pgwire::api::auth::mechanism::AuthMechanismFactory;
use pgwire::api::auth::sasl::scram::{gen_salted_password, ScramAuth, ScramSecret};
use pgwire::api::auth::sasl::{SaslMechanismFactory, SaslMechanisms};
use pgwire::api::auth::{
    protocol_negotiation, save_startup_parameters_to_metadata, AuthDriver, AuthSource,
    DefaultServerParameterProvider, LoginInfo, Password, StartupHandler,
};
use pgwire::api::{ClientInfo, PidSecretKeyGenerator};
use pgwire::error::{PgWireError, PgWireResult};
use pgwire::messages::startup::Authentication;
use pgwire::messages::{PgWireBackendMessage, PgWireFrontendMessage};
use std::collections::BTreeMap;
use std::fmt::Debug;
use std::path::{Path, PathBuf};
use std::sync::{Arc, OnceLock};
use strata_types::Xid;
use strata_vfs::Vfs;

const ITERATIONS: usize = 4096;

/// The role `strata init` creates (PostgreSQL's bootstrap superuser). Every other
/// role is an ordinary role: it may change only its own password, and may not take
/// the `superuser_reserved_connections` slots.
pub const BOOTSTRAP_SUPERUSER: &str = "strata";

/// Whether `role` is a superuser.
pub fn is_superuser(role: &str) -> bool {
    role == BOOTSTRAP_SUPERUSER
}

#[derive(Clone)]
struct Verifier {
    iterations: usize,
    salt: Vec<u8>,
    stored_key: Vec<u8>,
    server_key: Vec<u8>,
}

/// The roles' SCRAM verifiers, loaded from and saved to `global/pg_authid`.
pub struct AuthStore {
    path: PathBuf,
    roles: RwLock<BTreeMap<String, Verifier>>,
    /// The server secret behind mock salts (rule 4).
    mock_nonce: Vec<u8>,
    vfs: Arc<dyn Vfs>,
}

/// Reads the mock nonce, creating it (32 random bytes, 0600) on first use.
fn load_mock_nonce(vfs: &dyn Vfs, global: &Path) -> Result<Vec<u8>, String> {
    let path = global.join("pg_mock_nonce");
    match strata_vfs::read_file(vfs, &path) {
        Ok(b) if b.len() == 32 => return Ok(b),
        Ok(_) => {}
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
        Err(e) => return Err(format!("could not read \"{}\": {e}", path.display())),
    }
    let nonce: [u8; 32] = rand::random();
    strata_vfs::write_atomic(vfs, &path, &nonce)
        .map_err(|e| format!("could not write \"{}\": {e}", path.display()))?;
    Ok(nonce.to_vec())
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
    roles: &BTreeMap<String, Verifier>,
    changes: &[(String, Option<String>)],
) -> Result<BTreeMap<String, Verifier>, String> {
    let mut next = roles.clone();
    for (role, password) in changes {
        match password {
            Some(p) => {
                next.insert(role.clone(), verifier(p)?);
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

/// A SCRAM-SHA-256 verifier of `password` with a fresh salt.
fn verifier(password: &str) -> Result<Verifier, String> {
    let salt: [u8; 16] = rand::random();
    let salted = gen_salted_password(password, &salt, ITERATIONS);
    let ScramSecret::Verifier {
        salt,
        iterations,
        stored_key,
        server_key,
    } = ScramSecret::verifier_from_salted_password(salt.to_vec(), salted, ITERATIONS)
    else {
        return Err("could not derive a SCRAM verifier".into());
    };
    Ok(Verifier {
        iterations,
        salt,
        stored_key,
        server_key,
    })
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

/// Writes `text` to `path` atomically and durably (rules 2 and 5).
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

/// A password change staged for a transaction (rule 6).
pub struct Staged {
    roles: BTreeMap<String, Verifier>,
}

impl AuthStore {
    /// Loads `global/pg_authid`, first settling a pending change (rule 6):
    /// installed if `committed` says its xid committed, else removed.
    pub fn load(
        vfs: Arc<dyn Vfs>,
        data_dir: &Path,
        committed: &dyn Fn(Xid) -> bool,
    ) -> Result<AuthStore, String> {
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
        let global = path.parent().unwrap_or(data_dir).to_path_buf();
        Ok(AuthStore {
            path,
            roles: RwLock::new(roles),
            mock_nonce: load_mock_nonce(&*vfs, &global)?,
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
        let next = apply(&roles, &[(role.to_string(), password.map(str::to_string))])?;
        write_atomic(&*self.vfs, &self.path, &to_text(&next))?;
        *roles = next;
        Ok(())
    }

    /// Stages password changes (role, new password or `None` to remove) for
    /// transaction `xid`: `global/pg_authid.pending` holds the whole new set, durably
    /// (rule 6). Called again in the same transaction, it replaces the staged
    /// set; `changes` are then all of the transaction's changes so far.
    pub fn stage(&self, xid: Xid, changes: &[(String, Option<String>)]) -> Result<Staged, String> {
        for (role, _) in changes {
            check_role(role)?;
        }
        let next = apply(&self.roles.read(), changes)?;
        let text = format!("xid {}\n{}", xid.0, to_text(&next));
        write_atomic(&*self.vfs, &self.path.with_extension("pending"), &text)?;
        Ok(Staged { roles: next })
    }

    /// Makes a staged change the password file, once its transaction's commit record
    /// is durable (rule 6). A failure here is a PANIC: the commit cannot be undone, and
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

    /// The role's verifier, or for an unknown role a mock one (rule 4): its salt is
    /// a keyed hash of the name (stable, so repeated tries look like a real role),
    /// its keys are random, so no proof matches them.
    fn secret_or_mock(&self, role: &str) -> ScramSecret {
        if let Some(v) = self.roles.read().get(role) {
            return ScramSecret::Verifier {
                salt: v.salt.clone(),
                iterations: v.iterations,
                stored_key: v.stored_key.clone(),
                server_key: v.server_key.clone(),
            };
        }
        let mut salt = gen_salted_password(role, &self.mock_nonce, 1);
        salt.truncate(16);
        let stored_key: [u8; 32] = rand::random();
        let server_key: [u8; 32] = rand::random();
        ScramSecret::Verifier {
            salt,
            iterations: ITERATIONS,
            stored_key: stored_key.to_vec(),
            server_key: server_key.to_vec(),
        }
    }
}

/// The SCRAM exchange's view of the store.
#[derive(Debug)]
struct StoreSource(Arc<crate::sql::session::ServerState>);

impl Debug for crate::sql::session::ServerState {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("ServerState")
    }
}

#[async_trait]
impl AuthSource for StoreSource {
    async fn get_password(&self, login: &LoginInfo) -> PgWireResult<Password> {
        Err(PgWireError::InvalidPassword(
            login.user().unwrap_or_default().to_owned(),
        ))
    }

    /// A known role's verifier; for an unknown one, a mock that no proof matches
    /// (rule 4), so the exchange runs to its end either way.
    async fn get_scram_secret(&self, login: &LoginInfo) -> PgWireResult<(ScramSecret, Option<()>)> {
        let user = login.user().unwrap_or_default();
        Ok((self.0.auth.secret_or_mock(user), None))
    }
}

/// Server parameters reported at startup.
pub fn parameters() -> DefaultServerParameterProvider {
    let mut p = DefaultServerParameterProvider::default();
    p.server_version = "15.0 (Strata)".to_string();
    p.time_zone = "UTC".to_string();
    p
}

/// BackendKeyData: the session's pid and secret (registered before
/// `complete_authentication` asks for them, in `Startup::admit`).
struct ConnKey(Arc<Conn>);

impl PidSecretKeyGenerator for ConnKey {
    fn generate(&self, _client: &dyn ClientInfo) -> (i32, pgwire::messages::startup::SecretKey) {
        self.0.key()
    }
}

/// The per-connection startup handler.
pub struct Startup {
    pub(super) conn: Arc<Conn>,
    driver: AuthDriver<DefaultServerParameterProvider>,
    scram: Arc<ScramAuth>,
    /// (user, database) from the startup message.
    login: OnceLock<(String, String)>,
}

impl Startup {
    pub(super) fn new(conn: Arc<Conn>) -> Startup {
        let mut scram = ScramAuth::new(Arc::new(StoreSource(conn.server.clone())));
        scram.set_iterations(ITERATIONS);
        Startup {
            driver: AuthDriver::new(parameters())
                .with_pid_secret_key_generator(Arc::new(ConnKey(conn.clone()))),
            scram: Arc::new(scram),
            conn,
            login: OnceLock::new(),
        }
    }

    /// Authentication succeeded: take a connection slot and start the session,
    /// then tell the client (rule 3). A refusal is FATAL.
    async fn admit<C>(
        &self,
        client: &mut C,
        final_message: Option<Authentication>,
    ) -> PgWireResult<()>
    where
        C: ClientInfo + Sink<PgWireBackendMessage> + Unpin + Send + Sync,
        C::Error: Debug,
        PgWireError: From<<C as Sink<PgWireBackendMessage>>::Error>,
    {
        let (user, db) = self.login.get().cloned().unwrap_or_default();
        self.conn.start_session(&db, &user).map_err(fatal)?;
        self.driver
            .complete_authentication(client, final_message)
            .await
    }

    /// Logs a failed authentication with PostgreSQL's DETAIL (the client sees only
    /// the message, the same for every cause: rule 4).
    fn log_failure(&self, e: &PgWireError) {
        let PgWireError::InvalidPassword(_) = e else {
            return;
        };
        let user = self.login.get().map(|l| l.0.as_str()).unwrap_or_default();
        let detail = if self.conn.server.auth.has_role(user) {
            format!("Password does not match for user \"{user}\".")
        } else {
            format!("Role \"{user}\" does not exist.")
        };
        (self.conn.server.log)(&format!(
            "FATAL:  28P01: password authentication failed for user \"{user}\"\nDETAIL:  {detail}"
        ));
    }
}

#[async_trait]
impl StartupHandler for Startup {
    async fn on_startup<C>(
        &self,
        client: &mut C,
        message: PgWireFrontendMessage,
    ) -> PgWireResult<()>
    where
        C: ClientInfo + Sink<PgWireBackendMessage> + Unpin + Send + Sync,
        C::Error: Debug,
        PgWireError: From<<C as Sink<PgWireBackendMessage>>::Error>,
    {
        let outcome = match message {
            PgWireFrontendMessage::Startup(ref s) => {
                protocol_negotiation(client, s).await?;
                save_startup_parameters_to_metadata(client, s);
                let user = s.parameters.get("user").cloned().unwrap_or_default();
                let db = s
                    .parameters
                    .get("database")
                    .filter(|d| !d.is_empty())
                    .cloned()
                    .unwrap_or_else(|| user.clone());
                let _ = self.login.set((user, db));
                if !self.conn.server.auth.required() {
                    return self.admit(client, None).await;
                }
                let scram: Arc<dyn SaslMechanismFactory> = self.scram.clone();
                let mechanism = SaslMechanisms::new(vec![scram]).create();
                self.driver.begin_authentication(client, mechanism).await
            }
            PgWireFrontendMessage::PasswordMessageFamily(m) => {
                self.driver.advance_authentication(client, m).await
            }
            _ => return Ok(()),
        };
        match outcome {
            Ok(AuthOutcome::InProgress) => Ok(()),
            Ok(AuthOutcome::Authenticated { final_message, .. }) => {
                self.admit(client, final_message).await
            }
            Err(e) => {
                self.log_failure(&e);
                Err(e)
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn change(p: &str) -> Vec<(String, Option<String>)> {
        vec![("strata".to_string(), Some(p.to_string()))]
    }

    #[test]
    fn a_staged_change_is_settled_at_load_by_its_transaction_fate() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir(dir.path().join("global")).unwrap();
        let pending = dir.path().join("global/pg_authid.pending");
        let store = AuthStore::load(strata_vfs::StdVfs::arc(), dir.path(), &|_| false).unwrap();
        // Staged, then a crash before the commit record: removed at load.
        store.stage(Xid(7), &change("a")).unwrap();
        assert!(!store.required(), "not before install");
        let store =
            AuthStore::load(strata_vfs::StdVfs::arc(), dir.path(), &|x| x != Xid(7)).unwrap();
        assert!(!store.required());
        assert!(!pending.exists());
        // Staged, committed, a crash before install: installed at load.
        store.stage(Xid(8), &change("b")).unwrap();
        let store =
            AuthStore::load(strata_vfs::StdVfs::arc(), dir.path(), &|x| x == Xid(8)).unwrap();
        assert!(store.required());
        assert!(!pending.exists());
        // Installed in the running server.
        let st = store.stage(Xid(9), &[("other".to_string(), None)]).unwrap();
        store.install(st);
        assert!(store.has_role("strata"));
        let again = AuthStore::load(strata_vfs::StdVfs::arc(), dir.path(), &|_| false).unwrap();
        assert!(again.has_role("strata"));
    }
}
