//! What a reload can change in a running server, and the reload itself: SIGHUP and
//! `pg_reload_conf()` re-read `strata.conf`, `postgresql.auto.conf` and
//! `pg_hba.conf`.
//!
//! Entry points: [`Live::load`] (at start: the rules and the TLS configuration,
//! FATAL when they cannot be loaded), [`Live::reload`] (SIGHUP), [`Live::hba`],
//! [`Live::tls`] and [`Live::authentication_timeout`] (what each new connection
//! reads), [`Live::archive_command`] (each archiver pass), [`Live::wal_sender_timeout`]
//! (each new WAL sender), [`write_default_hba`] (`strata init`).
//!
//! Rules (cited as "reload rule N"):
//! 1. A connection reads the rules, the TLS acceptor and `authentication_timeout`
//!    once, when it needs them; a reload swaps them whole (an `Arc` each), so a
//!    connection never sees half of an old file and half of a new one, and
//!    connections already authenticated are not affected (as in PostgreSQL).
//! 2. A reload applies what it can and keeps the rest: configuration files with an
//!    error change nothing (`configuration file "..." contains errors; no changes
//!    were applied`); a `pg_hba.conf` with a bad line leaves the old rules (`pg_hba.conf
//!    was not reloaded`); TLS files that cannot be loaded leave the old TLS
//!    configuration (`SSL configuration was not reloaded`).
//! 3. The settings of [`config::RELOADABLE`] take effect at reload (logged as
//!    `parameter "X" changed to "Y"`); any other setting changed in the files is
//!    logged as PostgreSQL logs a `postmaster` one: `parameter "X" cannot be changed
//!    without restarting the server`, and keeps its value. `-c` flags still win
//!    over the files, as at start.
//! 4. At start, a missing or bad `pg_hba.conf` and unusable TLS files are FATAL:
//!    the server does not start (hba rule 1, tls rule 1).

use crate::config::{self, ServerConfig};
use crate::hba::Hba;
use crate::tls;
use parking_lot::{Mutex, RwLock};
use pgwire::tokio::tokio_rustls::TlsAcceptor;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;
use strata_engine::LogSink;

/// The server's TLS acceptor, and whether it verifies client certificates
/// (`ssl_ca_file` set: `clientcert` and `cert` need it).
#[derive(Clone)]
pub struct Tls {
    pub acceptor: TlsAcceptor,
    pub verifies_clients: bool,
    /// The certificate chain served (SCRAM-SHA-256-PLUS binds to it).
    pub cert_pem: Arc<Vec<u8>>,
}

/// What a reload changes (rule 1).
pub struct Live {
    data: PathBuf,
    /// `strata.conf`, and the `-c` flags of the command line.
    conf: PathBuf,
    flags: Vec<String>,
    /// The settings in force.
    config: Mutex<ServerConfig>,
    /// Held for the whole of a reload (SIGHUP and `pg_reload_conf()` may overlap).
    reloading: Mutex<()>,
    hba: RwLock<Arc<Hba>>,
    tls: RwLock<Option<Tls>>,
    log: LogSink,
}

/// Reads and parses `pg_hba.conf`; each error logged in PostgreSQL's form.
fn read_hba(cfg: &ServerConfig, data: &Path, log: &LogSink) -> Option<Hba> {
    let path = cfg.hba_path(data);
    let shown = path.display().to_string();
    let text = match std::fs::read(&path) {
        Ok(b) => String::from_utf8_lossy(&b).into_owned(),
        Err(e) => {
            log(&format!(
                "LOG:  58P01: could not open configuration file \"{shown}\": {}",
                tls::io_text(&e)
            ));
            return None;
        }
    };
    match Hba::parse(&text, &shown, cfg.tls.enabled) {
        Ok(h) => {
            for w in &h.warnings {
                log(w);
            }
            Some(h)
        }
        Err(errors) => {
            for e in errors {
                log(&e.log_text(&shown));
            }
            None
        }
    }
}

fn load_tls(cfg: &ServerConfig, data: &Path) -> Result<Option<Tls>, String> {
    Ok(tls::server_config(data, &cfg.tls)?.map(|t| Tls {
        acceptor: TlsAcceptor::from(t.config),
        verifies_clients: !cfg.tls.ca_file.is_empty(),
        cert_pem: t.cert_pem,
    }))
}

impl Live {
    /// At start: the rules and TLS of `cfg`, or the FATAL message (rule 4).
    pub fn load(
        data: &Path,
        conf: &Path,
        flags: &[String],
        cfg: &ServerConfig,
        log: &LogSink,
    ) -> Result<Live, String> {
        let tls = load_tls(cfg, data)?;
        let hba = read_hba(cfg, data, log).ok_or("could not load pg_hba.conf")?;
        Ok(Live {
            data: data.to_path_buf(),
            conf: conf.to_path_buf(),
            flags: flags.to_vec(),
            config: Mutex::new(cfg.clone()),
            reloading: Mutex::new(()),
            hba: RwLock::new(Arc::new(hba)),
            tls: RwLock::new(tls),
            log: log.clone(),
        })
    }

    /// The rules in force.
    pub fn hba(&self) -> Arc<Hba> {
        self.hba.read().clone()
    }

    /// The TLS acceptor in force (`None` with `ssl = off`).
    pub fn tls(&self) -> Option<Tls> {
        self.tls.read().clone()
    }

    pub fn authentication_timeout(&self) -> Duration {
        self.config.lock().authentication_timeout
    }

    /// `archive_command` in force (archiver rule 4).
    pub fn archive_command(&self) -> String {
        self.config.lock().archive_command.clone()
    }

    /// `wal_sender_timeout` in force, for WAL senders that start from now on.
    pub fn wal_sender_timeout(&self) -> Duration {
        self.config.lock().wal_sender_timeout
    }

    /// Re-reads the configuration files and `pg_hba.conf` (rules 2 and 3).
    pub fn reload(&self) {
        let log = &self.log;
        log("received SIGHUP, reloading configuration files");
        // One reload at a time; the settings' lock is held only to copy and to
        // install them, not while files are read (new connections read it).
        let _one = self.reloading.lock();
        let mut cfg = self.config.lock().clone();
        match ServerConfig::from_flags(Some(&self.conf), &self.flags) {
            Err(e) => {
                log(&format!("LOG:  {e}"));
                log(&format!(
                    "LOG:  configuration file \"{}\" contains errors; no changes were applied",
                    self.conf.display()
                ));
            }
            Ok(new) => self.apply_settings(&mut cfg, &new),
        }
        match load_tls(&cfg, &self.data) {
            Ok(t) => *self.tls.write() = t,
            Err(e) => {
                log(&format!("LOG:  {e}"));
                log("LOG:  SSL configuration was not reloaded");
            }
        }
        match read_hba(&cfg, &self.data, log) {
            Some(h) => *self.hba.write() = Arc::new(h),
            None => log("LOG:  pg_hba.conf was not reloaded"),
        }
        *self.config.lock() = cfg;
    }

    /// Rule 3: the reloadable settings of `new` go into `cfg`; every other change is
    /// logged and left.
    fn apply_settings(&self, cfg: &mut ServerConfig, new: &ServerConfig) {
        let value = |c: &ServerConfig, n: &str| {
            c.given.iter().find(|(g, _)| g == n).map(|(_, v)| v.clone())
        };
        let mut names: Vec<&str> = cfg
            .given
            .iter()
            .chain(new.given.iter())
            .map(|(n, _)| n.as_str())
            .collect();
        names.sort_unstable();
        names.dedup();
        let mut next = cfg.clone();
        for name in names {
            let (old_v, new_v) = (value(cfg, name), value(new, name));
            if old_v == new_v {
                continue;
            }
            if !config::RELOADABLE.contains(&name) {
                (self.log)(&format!(
                    "LOG:  parameter \"{name}\" cannot be changed without restarting the server"
                ));
                continue;
            }
            let shown = new_v.clone().unwrap_or_default();
            let applied = match &new_v {
                Some(v) => next.apply(name, v),
                None => next.apply(name, &default_of(name)),
            };
            match applied {
                Ok(()) => (self.log)(&format!(
                    "LOG:  parameter \"{name}\" changed to \"{shown}\""
                )),
                Err(e) => (self.log)(&format!("LOG:  {e}")),
            }
        }
        *cfg = next;
    }
}

/// A reloadable setting's value when the files no longer give one.
fn default_of(name: &str) -> String {
    let d = ServerConfig::default();
    match name {
        "ssl" => "off".into(),
        "ssl_cert_file" => d.tls.cert_file,
        "ssl_key_file" => d.tls.key_file,
        "ssl_ca_file" => d.tls.ca_file,
        "ssl_min_protocol_version" => d.tls.min_protocol.name().into(),
        "archive_command" => d.archive_command,
        "wal_sender_timeout" => format!("{}ms", d.wal_sender_timeout.as_millis()),
        _ => format!("{}ms", d.authentication_timeout.as_millis()),
    }
}

/// Writes the default `pg_hba.conf` of a new cluster (0600): loopback connections
/// use `local_method`, every other address `scram-sha-256` (`hba::DEFAULT_FILE`).
pub fn write_default_hba(data: &Path, local_method: &str) -> Result<(), String> {
    use std::io::Write;
    use std::os::unix::fs::OpenOptionsExt;
    let path = data.join("pg_hba.conf");
    let mut f = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(&path)
        .map_err(|e| format!("could not create file \"{}\": {e}", path.display()))?;
    f.write_all(crate::hba::default_file(local_method).as_bytes())
        .and_then(|()| f.sync_all())
        .map_err(|e| format!("could not write file \"{}\": {e}", path.display()))
}
