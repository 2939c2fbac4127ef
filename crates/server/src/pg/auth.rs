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
//! 5. Files here are created 0600.

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
use pgwire::api::ClientInfo;
use pgwire::error::{PgWireError, PgWireResult};
use pgwire::messages::startup::Authentication;
use pgwire::messages::{PgWireBackendMessage, PgWireFrontendMessage};
use std::collections::BTreeMap;
use std::fmt::Debug;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::{Arc, OnceLock};

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
}

/// Creates (or truncates) a file readable by its owner only.
pub(crate) fn create_private(path: &Path) -> std::io::Result<std::fs::File> {
    use std::os::unix::fs::OpenOptionsExt;
    std::fs::OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .mode(0o600)
        .open(path)
}

/// Reads the mock nonce, creating it (32 random bytes, 0600) on first use.
fn load_mock_nonce(global: &Path) -> Result<Vec<u8>, String> {
    let path = global.join("pg_mock_nonce");
    match std::fs::read(&path) {
        Ok(b) if b.len() == 32 => return Ok(b),
        Ok(_) => {}
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
        Err(e) => return Err(format!("could not read \"{}\": {e}", path.display())),
    }
    let nonce: [u8; 32] = rand::random();
    let tmp = path.with_extension("tmp");
    let write = || -> std::io::Result<()> {
        let mut f = create_private(&tmp)?;
        f.write_all(&nonce)?;
        f.sync_all()?;
        std::fs::rename(&tmp, &path)
    };
    write().map_err(|e| format!("could not write \"{}\": {e}", path.display()))?;
    Ok(nonce.to_vec())
}

impl AuthStore {
    pub fn load(data_dir: &Path) -> Result<AuthStore, String> {
        let path = data_dir.join("global").join("pg_authid");
        let mut roles = BTreeMap::new();
        match std::fs::read_to_string(&path) {
            Ok(text) => {
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
            }
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => return Err(format!("could not read \"{}\": {e}", path.display())),
        }
        let global = path.parent().unwrap_or(data_dir).to_path_buf();
        Ok(AuthStore {
            path,
            roles: RwLock::new(roles),
            mock_nonce: load_mock_nonce(&global)?,
        })
    }

    /// Whether connections must authenticate (some role has a password).
    pub fn required(&self) -> bool {
        !self.roles.read().is_empty()
    }

    /// Sets (or with `None` removes) a role's password, durably.
    pub fn set_password(&self, role: &str, password: Option<&str>) -> Result<(), String> {
        if role.contains(':') || role.contains('\n') {
            return Err(format!("invalid role name \"{role}\""));
        }
        let mut roles = self.roles.write();
        let mut next = roles.clone();
        match password {
            Some(p) => {
                let salt: [u8; 16] = rand::random();
                let salted = gen_salted_password(p, &salt, ITERATIONS);
                let ScramSecret::Verifier {
                    salt,
                    iterations,
                    stored_key,
                    server_key,
                } = ScramSecret::verifier_from_salted_password(salt.to_vec(), salted, ITERATIONS)
                else {
                    return Err("could not derive a SCRAM verifier".into());
                };
                next.insert(
                    role.to_string(),
                    Verifier {
                        iterations,
                        salt,
                        stored_key,
                        server_key,
                    },
                );
            }
            None => {
                next.remove(role);
            }
        }
        let mut text = String::new();
        for (r, v) in &next {
            text.push_str(&format!(
                "{r}:{}:{}:{}:{}\n",
                v.iterations,
                hex::encode(&v.salt),
                hex::encode(&v.stored_key),
                hex::encode(&v.server_key)
            ));
        }
        let tmp = self.path.with_extension("tmp");
        let write = || -> std::io::Result<()> {
            let mut f = create_private(&tmp)?;
            f.write_all(text.as_bytes())?;
            f.sync_all()?;
            std::fs::rename(&tmp, &self.path)?;
            if let Some(dir) = self.path.parent() {
                std::fs::File::open(dir)?.sync_all()?;
            }
            Ok(())
        };
        write().map_err(|e| format!("could not write \"{}\": {e}", self.path.display()))?;
        *roles = next;
        Ok(())
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
            driver: AuthDriver::new(parameters()),
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
