//! Authentication: `pg_hba.conf`'s choice of a method for each connection, SCRAM-SHA-256
//! and cleartext passwords over the role catalog, client certificates, and the startup
//! handler.
//!
//! The verifiers live in the engine's role catalog (`pg_authid`, WAL-logged; read
//! committed through [`Engine::role`]); this module derives them from passwords
//! ([`derive`]), runs the exchanges, and owns `global/pg_mock_nonce`. A password
//! past its VALID UNTIL counts as none.
//!
//! Invariants (cited as "auth rule N"):
//! 1. `pg_hba.conf` decides how a connection authenticates (hba rule 3): the first
//!    line matching its address, TLS, user and database names the method; no line,
//!    or a `reject` line, refuses it (FATAL 28000 with PostgreSQL's text). `trust`
//!    admits; `scram-sha-256` and `md5` run SCRAM-SHA-256; `password` takes the
//!    password in clear and checks it against the role's SCRAM verifier; `cert`
//!    (and `clientcert=verify-full`) requires a verified client certificate whose CN
//!    is the user name. A role without a password fails every password method
//!    (28P01).
//! 2. A connection takes a slot (`max_connections`, `superuser_reserved_connections`)
//!    and its database is checked only once it has authenticated, as PostgreSQL
//!    checks the database after authentication; so connections that never finish
//!    authenticating lock nobody out. The refusal is FATAL.
//! 3. Role names cannot be probed: an unknown role goes through the same exchange
//!    as a known one (for SCRAM, with a salt derived from its name and a server
//!    secret, `global/pg_mock_nonce`, PostgreSQL's `scram_mock_salt`), and fails
//!    with the same 28P01 message as a wrong password. The log says which it was.
//! 4. The mock nonce is created 0600 through the cluster's file abstraction, and
//!    replaced atomically (`strata_vfs::write_atomic`).
//! 5. Every refusal is logged here, once, with PostgreSQL's lines: the FATAL with
//!    its SQLSTATE and, where PostgreSQL gives one, its DETAIL (the reason, then
//!    `Connection matched pg_hba.conf line N: "..."`). The client sees the message
//!    only.
//! 6. Over TLS, SCRAM-SHA-256-PLUS is offered beside SCRAM-SHA-256, bound to the
//!    server's certificate (`tls-server-end-point`), so `channel_binding=require`
//!    works and a client that binds cannot be relayed by a man in the middle; without
//!    TLS it is not offered, as in PostgreSQL.

use super::{fatal, Conn};
use crate::hba::{Client, ClientCert, HbaLine, Method};
use async_trait::async_trait;
use futures::sink::Sink;
use pgwire::api::auth::driver::AuthOutcome;
use pgwire::api::auth::mechanism::{AuthMechanism, AuthMechanismFactory, AuthState};
use pgwire::api::auth::sasl::scram::{gen_salted_password, ScramAuth, ScramSecret};
use pgwire::api::auth::sasl::{SaslMechanismFactory, SaslMechanisms};
use pgwire::api::auth::{
    protocol_negotiation, save_startup_parameters_to_metadata, AuthDriver, AuthSource,
    DefaultServerParameterProvider, LoginInfo, Password, ServerParameterProvider, StartupHandler,
};
use pgwire::api::{ClientInfo, PidSecretKeyGenerator};
use pgwire::error::{ErrorInfo, PgWireError, PgWireResult};
use pgwire::messages::startup::{Authentication, PasswordMessageFamily};
use pgwire::messages::{PgWireBackendMessage, PgWireFrontendMessage};
use std::fmt::Debug;
use std::net::IpAddr;
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
    // PostgreSQL's defaults (settings' KNOWN).
    p.date_style = "ISO, MDY".to_string();
    p.interval_style = "postgres".to_string();
    p
}

/// The ParameterStatus of a session: the server's, with DateStyle, TimeZone,
/// IntervalStyle and application_name as the startup packet set them (settings
/// rule 7), so that a driver reads dates in the style they are sent in.
pub struct SessionParameters(DefaultServerParameterProvider);

impl ServerParameterProvider for SessionParameters {
    fn server_parameters<C>(&self, client: &C) -> Option<std::collections::HashMap<String, String>>
    where
        C: ClientInfo,
    {
        let mut params = self.0.server_parameters(client)?;
        let given: Vec<(String, String)> = client
            .metadata()
            .iter()
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect();
        // A refused setting ends the connection later (start_session): none here.
        let set = strata_sql::settings::check_startup(&given, &[], true).unwrap_or_default();
        for (name, value) in set {
            let shown = match name.as_str() {
                "datestyle" => "DateStyle",
                "timezone" => "TimeZone",
                "intervalstyle" => "IntervalStyle",
                "application_name" => "application_name",
                _ => continue,
            };
            params.insert(shown.to_string(), value);
        }
        Some(params)
    }
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
    driver: AuthDriver<SessionParameters>,
    scram: Arc<ScramAuth>,
    /// (user, database) from the startup message.
    login: OnceLock<(String, String)>,
    /// The startup message asked for a WAL sender (`replication=true`).
    replication: OnceLock<bool>,
    /// The startup packet's `application_name` (a WAL sender's name for
    /// synchronous_standby_names and pg_stat_replication).
    application_name: OnceLock<String>,
    /// The startup message's parameters (settings to make: settings rule 7).
    parameters: OnceLock<Vec<(String, String)>>,
    /// The `pg_hba.conf` line that chose the method (rule 1).
    line: OnceLock<HbaLine>,
}

/// Whether `role` is a member of `group`, directly or through other roles and
/// whatever INHERIT says, for `+group` and `samerole` in `pg_hba.conf` (a role is a
/// member of itself; a superuser of no role it was not granted: PostgreSQL's
/// is_member_of_role_nosuper), from the committed role catalog.
pub fn role_is_member(engine: &Engine, role: &str, group: &str) -> bool {
    if role == group {
        return true;
    }
    let (Some(r), Some(g)) = (engine.role(role), engine.role(group)) else {
        return false;
    };
    let w = strata_sql::privileges::who(engine, &r, strata_types::Oid(0));
    w.member_of.contains(&g.oid)
}

/// How the client's address is shown in messages: an IPv4 client of an IPv6
/// socket as IPv4, as PostgreSQL shows it.
fn host_of(addr: std::net::SocketAddr) -> IpAddr {
    match addr.ip() {
        IpAddr::V6(v6) => v6.to_ipv4_mapped().map_or(addr.ip(), IpAddr::V4),
        v4 => v4,
    }
}

fn fatal_error(code: &str, message: String) -> PgWireError {
    PgWireError::UserError(Box::new(ErrorInfo::new(
        "FATAL".into(),
        code.into(),
        message,
    )))
}

/// The client's password checked against the role's SCRAM verifier (`password`).
fn password_matches(v: &Verifier, password: &str) -> bool {
    let salted = gen_salted_password(password, &v.salt, v.iterations);
    match ScramSecret::verifier_from_salted_password(v.salt.clone(), salted, v.iterations) {
        ScramSecret::Verifier { stored_key, .. } => {
            // Compared in time independent of where they differ.
            stored_key.len() == v.stored_key.len()
                && stored_key
                    .iter()
                    .zip(&v.stored_key)
                    .fold(0u8, |acc, (a, b)| acc | (a ^ b))
                    == 0
        }
        _ => false,
    }
}

/// The `password` method: AuthenticationCleartextPassword, then the password
/// checked against the verifier (rule 1); an unknown role fails the same way
/// (rule 3).
struct Cleartext {
    engine: Arc<Engine>,
    user: String,
}

#[async_trait]
impl AuthMechanism for Cleartext {
    async fn begin(&mut self, _: &(dyn ClientInfo + Send + Sync)) -> PgWireResult<AuthState> {
        Ok(AuthState::InProgress(Authentication::CleartextPassword))
    }

    async fn next(
        &mut self,
        _: &(dyn ClientInfo + Send + Sync),
        message: PasswordMessageFamily,
    ) -> PgWireResult<AuthState> {
        let given = message.into_password()?.password;
        let ok =
            usable_verifier(&self.engine, &self.user).is_some_and(|v| password_matches(&v, &given));
        if ok {
            Ok(AuthState::Ok {
                final_message: None,
                identity: None,
            })
        } else {
            Ok(AuthState::Failed(PgWireError::InvalidPassword(
                self.user.clone(),
            )))
        }
    }
}

impl Startup {
    pub(super) fn new(conn: Arc<Conn>) -> Startup {
        let mut scram = ScramAuth::new(Arc::new(StoreSource {
            engine: conn.engine.clone(),
            mock_nonce: conn.shared.mock_nonce.clone(),
        }));
        scram.set_iterations(ITERATIONS);
        Startup {
            driver: AuthDriver::new(SessionParameters(parameters()))
                .with_pid_secret_key_generator(Arc::new(ConnKey(conn.clone()))),
            scram: Arc::new(scram),
            conn,
            login: OnceLock::new(),
            replication: OnceLock::new(),
            application_name: OnceLock::new(),
            parameters: OnceLock::new(),
            line: OnceLock::new(),
        }
    }

    /// Authentication succeeded: take a connection slot and start the session,
    /// then tell the client (rule 2). A refusal is FATAL.
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
            let params = self.parameters.get().map(Vec::as_slice).unwrap_or_default();
            self.conn.start_session(&db, &user, params).map_err(fatal)?;
        }
        self.driver
            .complete_authentication(client, final_message)
            .await
    }

    fn log(&self, line: &str) {
        (self.conn.server.log)(line);
    }

    /// Logs a FATAL refusal (rule 5) and returns it for the client.
    fn refuse(&self, code: &str, message: String, detail: Option<String>) -> PgWireError {
        let detail = detail
            .map(|d| format!("\nDETAIL:  {d}"))
            .unwrap_or_default();
        self.log(&format!("FATAL:  {code}: {message}{detail}"));
        fatal_error(code, message)
    }

    /// The `pg_hba.conf` line for this connection, or its refusal (rule 1).
    fn choose_line(&self, addr: std::net::SocketAddr) -> PgWireResult<HbaLine> {
        let (user, db) = self.login.get().cloned().unwrap_or_default();
        let replication = self.replication.get() == Some(&true);
        let ssl = self.conn.tls_peer().is_some();
        let host = host_of(addr);
        let hba = self.conn.shared.live.hba();
        let engine = &self.conn.engine;
        let member = |role: &str, group: &str| role_is_member(engine, role, group);
        let found = hba.find(&Client {
            addr: host,
            ssl,
            user: &user,
            database: &db,
            replication,
            member: &member,
        });
        let enc = if ssl {
            "SSL encryption"
        } else {
            "no encryption"
        };
        let who = if replication {
            format!("replication connection from host \"{host}\", user \"{user}\", {enc}")
        } else {
            format!("host \"{host}\", user \"{user}\", database \"{db}\", {enc}")
        };
        match found {
            None => Err(self.refuse("28000", format!("no pg_hba.conf entry for {who}"), None)),
            Some(l) if l.method == Method::Reject => {
                // PostgreSQL: "rejects replication connection for host", "rejects
                // connection for host".
                let who = who.replacen("connection from host", "connection for host", 1);
                let who = if replication {
                    who
                } else {
                    format!("connection for {who}")
                };
                Err(self.refuse("28000", format!("pg_hba.conf rejects {who}"), None))
            }
            Some(l) => Ok(l.clone()),
        }
    }

    /// The refusal of a failed authentication under `line`, in the method's words
    /// (PostgreSQL's `auth_failed`), logged with `reason` and the line (rule 5).
    fn auth_failed(&self, line: &HbaLine, reason: Option<String>) -> PgWireError {
        let user = self.login.get().map(|l| l.0.clone()).unwrap_or_default();
        let (code, message) = match line.method {
            Method::Cert => (
                "28000",
                format!("certificate authentication failed for user \"{user}\""),
            ),
            Method::Scram | Method::Password => (
                "28P01",
                format!("password authentication failed for user \"{user}\""),
            ),
            Method::Trust => (
                "28000",
                format!("\"trust\" authentication failed for user \"{user}\""),
            ),
            Method::Reject => (
                "28000",
                format!("authentication failed for user \"{user}\": host rejected"),
            ),
        };
        let detail = match reason {
            Some(r) => format!("{r}\n\t{}", line.matched_detail()),
            None => line.matched_detail(),
        };
        self.refuse(code, message, Some(detail))
    }

    /// The client certificate checks of `cert` and `clientcert` (rule 1), before any
    /// password exchange.
    fn check_certificate(&self, line: &HbaLine) -> PgWireResult<()> {
        if line.clientcert == ClientCert::None {
            return Ok(());
        }
        let user = self.login.get().map(|l| l.0.clone()).unwrap_or_default();
        let Some(peer) = self.conn.tls_peer() else {
            // hostssl lines only (hba rule 2), so TLS is there; refuse if not.
            return Err(self.refuse(
                "28000",
                "connection requires a valid client certificate".into(),
                None,
            ));
        };
        if !peer.verifies_clients {
            let m =
                "client certificates can only be checked if a root certificate store is available";
            // A configuration error, not a failed authentication: the connection
            // loop logs it (its SQLSTATE is not 28xxx).
            return Err(fatal_error("F0000", m.into()));
        }
        if !peer.has_certificate {
            return Err(self.refuse(
                "28000",
                "connection requires a valid client certificate".into(),
                None,
            ));
        }
        if line.clientcert == ClientCert::VerifyCa {
            return Ok(());
        }
        match &peer.common_name {
            Some(cn) if *cn == user => Ok(()),
            Some(cn) => {
                self.log(&format!("LOG:  provided user name ({user}) and authenticated user name ({cn}) do not match"));
                if line.method != Method::Cert {
                    self.log(&format!("LOG:  certificate validation (clientcert=verify-full) failed for user \"{user}\": CN mismatch"));
                }
                Err(self.auth_failed(line, None))
            }
            None => {
                self.log(&format!("LOG:  certificate authentication failed for user \"{user}\": client certificate contains no user name"));
                Err(self.auth_failed(line, None))
            }
        }
    }

    /// Logs a failed password exchange with PostgreSQL's DETAIL (the client sees only
    /// the message, the same for every cause: rule 3).
    fn password_failed(&self, e: PgWireError) -> PgWireError {
        let PgWireError::InvalidPassword(_) = e else {
            return e;
        };
        let Some(line) = self.line.get() else {
            return e;
        };
        let user = self.login.get().map(|l| l.0.as_str()).unwrap_or_default();
        let role = self.conn.engine.role(user);
        let expired = |r: &strata_engine::RoleEntry| {
            r.valid_until
                .is_some_and(|t| t < strata_sql::time::now_us())
        };
        let reason = if let Some(r) = role.as_ref().filter(|r| r.password.is_some() && expired(r)) {
            Some(format!("User \"{}\" has an expired password.", r.name))
        } else if role.is_none() {
            Some(format!("Role \"{user}\" does not exist."))
        } else if usable_verifier(&self.conn.engine, user).is_none() {
            Some(format!("User \"{user}\" has no password assigned."))
        } else if line.method == Method::Password {
            Some(format!("Password does not match for user \"{user}\"."))
        } else {
            None // PostgreSQL says no more for a SCRAM proof that does not match
        };
        self.auth_failed(line, reason)
    }

    /// SCRAM for this connection: over TLS with SCRAM-SHA-256-PLUS too, bound to the
    /// certificate the server presented (`tls-server-end-point`, as PostgreSQL
    /// offers it over SSL); without TLS, SCRAM-SHA-256 only (rule 6).
    fn scram_for_connection(&self) -> Arc<ScramAuth> {
        let Some(peer) = self.conn.tls_peer() else {
            return self.scram.clone();
        };
        let mut scram = ScramAuth::new(Arc::new(StoreSource {
            engine: self.conn.engine.clone(),
            mock_nonce: self.conn.shared.mock_nonce.clone(),
        }));
        scram.set_iterations(ITERATIONS);
        if scram.configure_certificate(&peer.server_cert_pem).is_err() {
            // A signature algorithm tls-server-end-point has no hash for: plain SCRAM.
            return self.scram.clone();
        }
        Arc::new(scram)
    }

    /// The startup packet: its parameters, the `pg_hba.conf` line, and the start of
    /// the line's method (rule 1).
    async fn on_startup_packet<C>(
        &self,
        client: &mut C,
        s: &pgwire::messages::startup::Startup,
    ) -> PgWireResult<AuthOutcome>
    where
        C: ClientInfo + Sink<PgWireBackendMessage> + Unpin + Send + Sync,
        C::Error: Debug,
        PgWireError: From<<C as Sink<PgWireBackendMessage>>::Error>,
    {
        protocol_negotiation(client, s).await?;
        save_startup_parameters_to_metadata(client, s);
        let user = s.parameters.get("user").cloned().unwrap_or_default();
        let db = s
            .parameters
            .get("database")
            .filter(|d| !d.is_empty())
            .cloned()
            .unwrap_or_else(|| user.clone());
        let _ = self.login.set((user.clone(), db));
        let replication =
            super::walsender::mode(s.parameters.get("replication").map(String::as_str))
                .map_err(fatal)?;
        let _ = self.replication.set(replication);
        let app = s.parameters.get("application_name").cloned();
        let _ = self.application_name.set(app.unwrap_or_default());
        let params = s.parameters.iter().map(|(k, v)| (k.clone(), v.clone()));
        let _ = self.parameters.set(params.collect());
        let line = self.choose_line(client.socket_addr())?;
        self.check_certificate(&line)?;
        let method = line.method;
        let _ = self.line.set(line);
        let mechanism: Box<dyn AuthMechanism> = match method {
            Method::Trust | Method::Cert | Method::Reject => {
                return Ok(AuthOutcome::Authenticated {
                    identity: None,
                    final_message: None,
                })
            }
            Method::Scram => {
                let scram: Arc<dyn SaslMechanismFactory> = self.scram_for_connection();
                SaslMechanisms::new(vec![scram]).create()
            }
            Method::Password => {
                // Frames rule 3: the answer is a PasswordMessage.
                self.conn
                    .cleartext
                    .store(true, std::sync::atomic::Ordering::Release);
                Box::new(Cleartext {
                    engine: self.conn.engine.clone(),
                    user,
                })
            }
        };
        self.driver.begin_authentication(client, mechanism).await
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
            PgWireFrontendMessage::Startup(ref s) => self.on_startup_packet(client, s).await,
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
            Err(e) => Err(self.password_failed(e)),
        }
    }
}
