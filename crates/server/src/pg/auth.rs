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
//! 3. The database and `max_connections` are checked when the startup message
//!    arrives, before authentication, as PostgreSQL does; the refusal is FATAL.

use super::{fatal, Conn};
use async_trait::async_trait;
use futures::sink::Sink;
use parking_lot::RwLock;
use pgwire::api::auth::sasl::scram::{gen_salted_password, ScramAuth, ScramSecret};
use pgwire::api::auth::sasl::SASLAuthStartupHandler;
use pgwire::api::auth::{
    finish_authentication, protocol_negotiation, save_startup_parameters_to_metadata, AuthSource,
    DefaultServerParameterProvider, LoginInfo, Password, StartupHandler,
};
use pgwire::api::{ClientInfo, PidSecretKeyGenerator, RandomPidSecretKeyGenerator};
use pgwire::error::{PgWireError, PgWireResult};
use pgwire::messages::{PgWireBackendMessage, PgWireFrontendMessage};
use std::collections::BTreeMap;
use std::fmt::Debug;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::Arc;

const ITERATIONS: usize = 4096;

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
        Ok(AuthStore {
            path,
            roles: RwLock::new(roles),
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
            let mut f = std::fs::File::create(&tmp)?;
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

    fn secret(&self, role: &str) -> Option<ScramSecret> {
        self.roles.read().get(role).map(|v| ScramSecret::Verifier {
            salt: v.salt.clone(),
            iterations: v.iterations,
            stored_key: v.stored_key.clone(),
            server_key: v.server_key.clone(),
        })
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

    async fn get_scram_secret(&self, login: &LoginInfo) -> PgWireResult<(ScramSecret, Option<()>)> {
        let user = login.user().unwrap_or_default();
        match self.0.auth.secret(user) {
            Some(s) => Ok((s, None)),
            None => Err(PgWireError::InvalidPassword(user.to_owned())),
        }
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
    scram: SASLAuthStartupHandler<DefaultServerParameterProvider>,
}

impl Startup {
    pub(super) fn new(conn: Arc<Conn>) -> Startup {
        let mut scram = ScramAuth::new(Arc::new(StoreSource(conn.server.clone())));
        scram.set_iterations(ITERATIONS);
        Startup {
            scram: SASLAuthStartupHandler::new(Arc::new(parameters())).with_scram(scram),
            conn,
        }
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
        if let PgWireFrontendMessage::Startup(ref s) = message {
            let user = s.parameters.get("user").cloned().unwrap_or_default();
            let db = s
                .parameters
                .get("database")
                .filter(|d| !d.is_empty())
                .cloned()
                .unwrap_or_else(|| user.clone());
            self.conn.start_session(&db).map_err(fatal)?;
            if !self.conn.server.auth.required() {
                protocol_negotiation(client, s).await?;
                save_startup_parameters_to_metadata(client, s);
                let (pid, key) = RandomPidSecretKeyGenerator::default().generate(client);
                client.set_pid_and_secret_key(pid, key);
                return finish_authentication(client, &parameters()).await;
            }
        }
        self.scram.on_startup(client, message).await
    }
}
