//! Authentication: SCRAM-SHA-256 over the role store, and the startup handler.
//!
//! The verifiers live in `strata_sql::roles` (`global/pg_authid`); this module
//! derives them from passwords ([`derive`]), runs the exchange, and owns
//! `global/pg_mock_nonce`.
//!
//! Invariants:
//! 1. With no password set, every connection is trusted (roles rule 1). Once any role
//!    has a password, every connection must authenticate with SCRAM-SHA-256, and a
//!    role without one is refused (28P01).
//! 2. A connection takes a slot (`max_connections`, `superuser_reserved_connections`)
//!    and its database is checked only once it has authenticated, as PostgreSQL
//!    checks the database after authentication; so connections that never finish
//!    authenticating lock nobody out. The refusal is FATAL.
//! 3. Role names cannot be probed: an unknown role goes through the same SCRAM
//!    exchange as a known one, with a salt derived from its name and a server
//!    secret (`global/pg_mock_nonce`, PostgreSQL's `scram_mock_salt`), and fails
//!    with the same 28P01 message as a wrong password. The log says which it was.
//! 4. The mock nonce is created 0600 through the cluster's file abstraction, and
//!    replaced atomically (`strata_vfs::write_atomic`).

use super::{fatal, Conn};
use async_trait::async_trait;
use futures::sink::Sink;
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
use std::fmt::Debug;
use std::path::Path;
use std::sync::{Arc, OnceLock};
use strata_engine::Engine;
use strata_sql::roles::Verifier;
use strata_vfs::Vfs;

const ITERATIONS: usize = 4096;

/// Reads the mock nonce, creating it (32 random bytes, 0600) on first use.
pub fn load_mock_nonce(vfs: &dyn Vfs, data_dir: &Path) -> Result<Vec<u8>, String> {
    let path = data_dir.join("global").join("pg_mock_nonce");
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

/// A SCRAM-SHA-256 verifier of `password` with a fresh salt.
pub fn derive(password: &str) -> Result<Verifier, String> {
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

/// The role's verifier, or for an unknown role a mock one (invariant 3): its salt
/// is a keyed hash of the name (stable, so repeated tries look like a real role), its
/// keys are random, so no proof matches them.
fn secret_or_mock(engine: &Engine, mock_nonce: &[u8], role: &str) -> ScramSecret {
    if let Some(v) = usable_verifier(engine, role) {
        return ScramSecret::Verifier {
            salt: v.salt,
            iterations: v.iterations,
            stored_key: v.stored_key,
            server_key: v.server_key,
        };
    }
    let mut salt = gen_salted_password(role, mock_nonce, 1);
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

/// A role's verifier, if it has a password that has not expired (VALID UNTIL):
/// an expired one fails as a wrong one does, as in PostgreSQL.
fn usable_verifier(engine: &Engine, role: &str) -> Option<Verifier> {
    let r = engine.role(role)?;
    if r.valid_until
        .is_some_and(|t| t < strata_sql::time::now_us())
    {
        return None;
    }
    strata_sql::roles::parse_verifier(r.password.as_deref()?)
}

/// The SCRAM exchange's view of the role catalog.
struct StoreSource {
    engine: Arc<Engine>,
    mock_nonce: Arc<[u8]>,
}

impl Debug for StoreSource {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("StoreSource")
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
        Ok((secret_or_mock(&self.engine, &self.mock_nonce, user), None))
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
    /// The startup message asked for a WAL sender (`replication=true`).
    replication: OnceLock<bool>,
    /// The startup packet's `application_name` (a WAL sender's name for
    /// synchronous_standby_names and pg_stat_replication).
    application_name: OnceLock<String>,
}

impl Startup {
    pub(super) fn new(conn: Arc<Conn>) -> Startup {
        let mut scram = ScramAuth::new(Arc::new(StoreSource {
            engine: conn.engine.clone(),
            mock_nonce: conn.shared.mock_nonce.clone(),
        }));
        scram.set_iterations(ITERATIONS);
        Startup {
            driver: AuthDriver::new(parameters())
                .with_pid_secret_key_generator(Arc::new(ConnKey(conn.clone()))),
            scram: Arc::new(scram),
            conn,
            login: OnceLock::new(),
            replication: OnceLock::new(),
            application_name: OnceLock::new(),
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
        if self.replication.get() == Some(&true) {
            let app = self.application_name.get().cloned().unwrap_or_default();
            self.conn.start_walsender(&user, &app).map_err(fatal)?;
        } else {
            self.conn.start_session(&db, &user).map_err(fatal)?;
        }
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
        let detail = match self.conn.engine.role(user) {
            None => format!("Role \"{user}\" does not exist."),
            Some(r) if r.password.is_none() => format!("User \"{user}\" has no password assigned."),
            Some(r)
                if r.valid_until
                    .is_some_and(|t| t < strata_sql::time::now_us()) =>
            {
                format!("User \"{user}\" has an expired password.")
            }
            Some(_) => format!("Password does not match for user \"{user}\"."),
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
                let replication =
                    super::walsender::mode(s.parameters.get("replication").map(String::as_str))
                        .map_err(fatal)?;
                let _ = self.replication.set(replication);
                let app = s.parameters.get("application_name").cloned();
                let _ = self.application_name.set(app.unwrap_or_default());
                if !self.conn.engine.any_password() {
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
