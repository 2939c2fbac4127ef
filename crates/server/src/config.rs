//! Settings from the command line (`-c name=value`), with PostgreSQL's names, units
//! and error messages. Owns the mapping from setting names to
//! [`strata_engine::Settings`] fields.
//!
//! | name | unit | default | range |
//! |------|------|---------|-------|
//! | `shared_buffers` | 8kB blocks or memory units | 128MB | 128kB .. 1TB |
//! | `full_page_writes` | bool | on | |
//! | `checkpoint_timeout` | s (or `ms`, `s`, `min`, `h`, `d`) | 5min | 30s .. 1d |
//! | `max_wal_size` | MB or memory units | 1GB | 2MB .. 1TB |
//! | `wal_segment_size` | bytes or memory units (init only) | 16MB | 64kB .. 1GB, power of two |
//! | `max_files_per_process` | count | 1000 | 64 .. 1,000,000 |
//! | `listen_addresses` | comma-separated hosts, `*` for all | localhost | |
//! | `port` | TCP port | 5433 | 1 .. 65535 |
//! | `max_connections` | count | 100 | 1 .. 10,000 |
//! | `superuser_reserved_connections` | count | 3 | 0 .. 10,000, below `max_connections` |
//! | `authentication_timeout` | s (or `ms`, `s`, `min`, ...) | 1min | 1s .. 10min |
//! | `archive_mode` | on/off | off | completed WAL segments wait in pg_wal until archived |
//! | `archive_command` | shell command | '' | `%p` the segment's path, `%f` its name |
//! | `archive_timeout` | s | 0 | a segment holding WAL is switched (and archived) at most this long after it began |
//! | `wal_keep_size` | MB | 0 | WAL kept behind the insert position for slot-less consumers |
//! | `max_wal_senders` | count | 10 | 0 .. 10,000 (WAL sender slots, not connection slots) |
//! | `wal_sender_timeout` | ms (or `s`, `min`, ...) | 1min | 0 (none) .. 2147483647ms |
//! | `synchronous_standby_names` | `FIRST n (names)`, `ANY n (names)`, `names` | '' | standbys whose confirmation a commit waits for (syncrep rules) |
//! | `max_standby_streaming_delay` | ms | 30s | -1 (forever) .. 2147483647ms: how long a standby's replay waits for conflicting queries before cancelling them |
//! | `max_standby_archive_delay` | ms | 30s | -1 (forever) .. 2147483647ms: the same, while replaying WAL restored from the archive |
//! | `restore_command` | shell command | '' | fetches an archived WAL segment in recovery: `%f` its name, `%p` where to put it |
//! | `recovery_target_lsn` | pg_lsn | '' | archive recovery stops before the first record at or after it |
//! | `recovery_target_timeline` | `latest` | latest | the only value Strata takes |
//! | `recovery_target_action` | `promote` | promote | the only value Strata takes |
//! | `primary_conninfo` | libpq connection string | '' | a standby's primary (with `standby.signal`) |
//! | `primary_slot_name` | slot name | '' | the primary's replication slot the standby streams through |
//! | `hot_standby_feedback` | boolean | off | a standby tells its primary the oldest xid its queries need, so the primary's VACUUM keeps those rows (fewer replay conflicts, more bloat) |
//! | `wal_receiver_status_interval` | s | 10s | 0 .. 2147483s: the standby reports its positions at least this often |
//! | `wal_receiver_timeout` | ms | 1min | 0 (none) .. 2147483647ms: a silent primary is disconnected after it |
//! | `wal_retrieve_retry_interval` | ms | 5s | 1ms .. 2147483647ms: wait before a standby reconnects |
//! | `log_directory` | directory (relative to the data directory) | (stderr) | |
//! | `ssl` | on/off | off | TLS for clients that ask for it (tls rules) |
//! | `ssl_cert_file` | path (relative to the data directory) | server.crt | the server's certificate chain (PEM) |
//! | `ssl_key_file` | path | server.key | its private key (PEM, mode 0600 or 0640 if owned by root) |
//! | `ssl_ca_file` | path | '' | when set, client certificates are requested and verified against it |
//! | `ssl_min_protocol_version` | `TLSv1.2`, `TLSv1.3` | TLSv1.2 | older versions are refused (rustls has none) |
//! | `hba_file` | path | pg_hba.conf (in the data directory) | the host-based authentication rules (hba rules) |
//! | `recovery_init_sync_method` | `fsync` or `syncfs` | fsync | |
//! | `debug_io_fault` | `kind:op:errno:after` (tests only) | (none) | see `strata_vfs::sim::Fault` |
//!
//! The server reads `strata.conf` in the data directory (PostgreSQL's `name = value`
//! lines, `#` comments, optional single quotes with `''` or `\'` for a quote), then
//! `postgresql.auto.conf` (what `pg_basebackup -R` and ALTER SYSTEM write), then
//! applies `-c` flags over them.
//!
//! Reload (SIGHUP, `pg_reload_conf()`, see `reload`) applies the settings listed in
//! [`RELOADABLE`] to a running server; any other setting changed in the files is
//! logged as needing a restart and keeps its value.

use crate::tls::{TlsSettings, TlsVersion};
use std::time::Duration;
use strata_engine::{RecoverySyncMethod, Settings};
use strata_types::units::{self, check_range, parse_memory};
use strata_vfs::sim::{Fault, SimVfs};

/// The settings a reload changes in a running server (PostgreSQL's `sighup` context,
/// for those Strata can change live).
pub const RELOADABLE: &[&str] = &[
    "ssl",
    "ssl_cert_file",
    "ssl_key_file",
    "ssl_ca_file",
    "ssl_min_protocol_version",
    "authentication_timeout",
    "archive_command",
    // For WAL senders that start after the reload (one already streaming keeps its own).
    "wal_sender_timeout",
];

fn invalid(name: &str, value: &str, hint: &str) -> String {
    format!("invalid value for parameter \"{name}\": \"{value}\"{hint}")
}

/// Parses a time setting in milliseconds (`strata_types::units::parse_time_ms`).
pub fn parse_time_ms(name: &str, value: &str, default_unit_ms: u64) -> Result<u64, String> {
    units::parse_time_ms(name, value, default_unit_ms).map_err(|e| e.to_string())
}

pub fn parse_bool(name: &str, value: &str) -> Result<bool, String> {
    match value.trim().to_ascii_lowercase().as_str() {
        "on" | "true" | "yes" | "1" | "t" | "y" => Ok(true),
        "off" | "false" | "no" | "0" | "f" | "n" => Ok(false),
        _ => Err(format!("parameter \"{name}\" requires a Boolean value")),
    }
}

/// `max_standby_streaming_delay` / `max_standby_archive_delay`: -1 is forever.
fn standby_delay(name: &str, value: &str) -> Result<Option<Duration>, String> {
    if value.trim() == "-1" {
        return Ok(None);
    }
    let ms = parse_time_ms(name, value, 1)?;
    if ms > i32::MAX as u64 {
        return Err(format!(
            "{ms} ms is outside the valid range for parameter \"{name}\" (-1 .. 2147483647)"
        ));
    }
    Ok(Some(Duration::from_millis(ms)))
}

/// The recovery settings of `s` (standby rules 9 and 11).
fn apply_recovery(s: &mut Settings, name: &str, value: &str) -> Result<(), String> {
    match name {
        "max_standby_streaming_delay" => s.max_standby_delay = standby_delay(name, value)?,
        "max_standby_archive_delay" => s.max_standby_archive_delay = standby_delay(name, value)?,
        "restore_command" => {
            s.restore_command = Some(value.to_string()).filter(|v| !v.trim().is_empty())
        }
        "recovery_target_lsn" => {
            s.recovery_target_lsn = if value.trim().is_empty() {
                None
            } else {
                Some(value.trim().parse().map_err(|_| invalid(name, value, ""))?)
            }
        }
        "recovery_target_timeline" => {
            if !value.trim().eq_ignore_ascii_case("latest") {
                return Err(invalid(
                    name,
                    value,
                    "\nHINT:  Strata follows the latest timeline only.",
                ));
            }
        }
        "recovery_target_action" => {
            if !value.trim().eq_ignore_ascii_case("promote") {
                return Err(invalid(
                    name,
                    value,
                    "\nHINT:  Strata ends recovery at its target by promoting (recovery_target_action = promote).",
                ));
            }
        }
        _ => return Err(format!("unrecognized configuration parameter \"{name}\"")),
    }
    Ok(())
}

/// Applies one `name=value` to `s`.
pub fn apply(s: &mut Settings, name: &str, value: &str) -> Result<(), String> {
    match name {
        "shared_buffers" => {
            s.shared_buffers_bytes =
                strata_buffer::parse_shared_buffers(value).map_err(|e| e.to_string())?
        }
        "full_page_writes" => s.full_page_writes = parse_bool(name, value)?,
        "checkpoint_timeout" => {
            let ms = parse_time_ms(name, value, 1000)?;
            if !(30_000..=86_400_000).contains(&ms) {
                return Err(format!(
                    "{ms} ms is outside the valid range for parameter \"{name}\" (30s .. 1d)"
                ));
            }
            s.checkpoint_timeout = Duration::from_millis(ms);
        }
        "max_wal_size" => {
            let b = parse_memory(name, value, 1 << 20).map_err(|e| e.to_string())?;
            s.max_wal_size_bytes =
                check_range(name, b, 2 << 20, 1 << 40).map_err(|e| e.to_string())?;
        }
        "archive_mode" => {
            s.archive_mode =
                match value.trim().to_ascii_lowercase().as_str() {
                    "always" => return Err(
                        "archive_mode = always (archiving on a standby) is not supported by Strata"
                            .into(),
                    ),
                    _ => parse_bool(name, value)?,
                }
        }
        "archive_timeout" => {
            let ms = parse_time_ms(name, value, 1000)?;
            if ms > 1_073_741_823_000 {
                return Err(format!(
                    "{ms} ms is outside the valid range for parameter \"{name}\" (0 .. 1073741823s)"
                ));
            }
            s.archive_timeout = Duration::from_millis(ms);
        }
        "wal_keep_size" => {
            let b = parse_memory(name, value, 1 << 20).map_err(|e| e.to_string())?;
            s.wal_keep_size_bytes =
                check_range(name, b, 0, i32::MAX as u64 * (1 << 20)).map_err(|e| e.to_string())?;
        }
        "wal_segment_size" => {
            let b = parse_memory(name, value, 1).map_err(|e| e.to_string())?;
            if !b.is_power_of_two() || !(64 << 10..=1 << 30).contains(&b) {
                return Err(format!(
                    "invalid value for parameter \"{name}\": \"{value}\"\nHINT:  It must be a power of two from 64kB to 1GB."
                ));
            }
            s.wal_segment_bytes = b;
        }
        "max_files_per_process" => {
            let n: usize = value.trim().parse().map_err(|_| invalid(name, value, ""))?;
            if !(64..=1_000_000).contains(&n) {
                return Err(format!(
                    "{n} is outside the valid range for parameter \"{name}\" (64 .. 1000000)"
                ));
            }
            s.max_files_per_process = n;
        }
        "recovery_init_sync_method" => {
            s.recovery_init_sync_method = match value.trim().to_ascii_lowercase().as_str() {
                "fsync" => RecoverySyncMethod::Fsync,
                "syncfs" => RecoverySyncMethod::Syncfs,
                _ => {
                    return Err(invalid(
                        name,
                        value,
                        "\nHINT:  Available values: fsync, syncfs.",
                    ))
                }
            }
        }
        "max_standby_streaming_delay"
        | "max_standby_archive_delay"
        | "restore_command"
        | "recovery_target_lsn"
        | "recovery_target_timeline"
        | "recovery_target_action" => apply_recovery(s, name, value)?,
        "debug_io_fault" => {
            // A test seam: the server runs on the simulated disk with this fault armed.
            let fault = Fault::parse(value.trim()).ok_or_else(|| {
                invalid(
                    name,
                    value,
                    "\nHINT:  kind:op:errno:after, e.g. wal:sync:eio:3 (kinds data, wal, xact, control; ops write, sync; errno eio, enospc, panic).",
                )
            })?;
            let sim = SimVfs::new(None, true).map_err(|e| e.to_string())?;
            sim.arm(fault);
            s.vfs = std::sync::Arc::new(sim);
        }
        _ => return Err(format!("unrecognized configuration parameter \"{name}\"")),
    }
    Ok(())
}

/// The whole server's configuration: the engine's settings and the server's own.
#[derive(Clone)]
pub struct ServerConfig {
    pub engine: Settings,
    pub listen_addresses: String,
    pub port: u16,
    pub max_connections: usize,
    /// Of `max_connections`, the last slots left to superusers.
    pub superuser_reserved_connections: usize,
    /// Time from accept to authentication (serve rule 3).
    pub authentication_timeout: Duration,
    /// WAL sender slots (walsender rule 3).
    pub max_wal_senders: usize,
    /// Run for each completed WAL segment with `archive_mode = on` (archiver rule 2).
    pub archive_command: String,
    /// A WAL sender whose client says nothing this long is ended (zero: never).
    pub wal_sender_timeout: Duration,
    /// Standbys a commit waits for (syncrep rule 2).
    pub synchronous_standby_names: String,
    /// A standby's primary (libpq connection string) and slot.
    pub primary_conninfo: String,
    pub primary_slot_name: String,
    pub wal_receiver_status_interval: Duration,
    pub hot_standby_feedback: bool,
    pub wal_receiver_timeout: Duration,
    pub wal_retrieve_retry_interval: Duration,
    pub log_directory: Option<String>,
    /// `ssl` and its files (tls rules).
    pub tls: TlsSettings,
    /// `hba_file`; empty: `pg_hba.conf` in the data directory.
    pub hba_file: String,
    /// Every setting given, as written (for SHOW).
    pub given: Vec<(String, String)>,
}

impl Default for ServerConfig {
    fn default() -> Self {
        ServerConfig {
            engine: Settings::default(),
            listen_addresses: "localhost".into(),
            port: 5433,
            max_connections: 100,
            superuser_reserved_connections: 3,
            authentication_timeout: Duration::from_secs(60),
            max_wal_senders: 10,
            archive_command: String::new(),
            wal_sender_timeout: Duration::from_secs(60),
            synchronous_standby_names: String::new(),
            primary_conninfo: String::new(),
            primary_slot_name: String::new(),
            wal_receiver_status_interval: Duration::from_secs(10),
            hot_standby_feedback: false,
            wal_receiver_timeout: Duration::from_secs(60),
            wal_retrieve_retry_interval: Duration::from_secs(5),
            log_directory: None,
            tls: TlsSettings::default(),
            hba_file: String::new(),
            given: Vec::new(),
        }
    }
}

/// The inside of a quoted configuration value: `''` and `\'` are a quote, `\\` a
/// backslash (PostgreSQL's configuration file rules).
fn unquote_conf(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    let mut chars = s.chars().peekable();
    while let Some(c) = chars.next() {
        match (c, chars.peek()) {
            ('\'', Some('\'')) | ('\\', Some('\'' | '\\')) => {
                out.push(chars.next().unwrap_or(c));
            }
            _ => out.push(c),
        }
    }
    out
}

/// Parses `strata.conf` text into (name, value) pairs, with line numbers in errors.
pub fn parse_conf(text: &str, file: &str) -> Result<Vec<(String, String)>, String> {
    let mut out = Vec::new();
    for (n, raw) in text.lines().enumerate() {
        let line = match raw.find('#') {
            // A '#' inside quotes is part of the value.
            Some(i) if raw[..i].matches('\'').count() % 2 == 0 => &raw[..i],
            _ => raw,
        }
        .trim();
        if line.is_empty() {
            continue;
        }
        let (name, value) = match line.split_once('=') {
            Some((a, b)) => (a.trim(), b.trim()),
            None => match line.split_once(char::is_whitespace) {
                Some((a, b)) => (a.trim(), b.trim()),
                None => {
                    return Err(format!(
                        "syntax error in file \"{file}\" line {}, near end of line",
                        n + 1
                    ))
                }
            },
        };
        let value = match value.strip_prefix('\'').and_then(|v| v.strip_suffix('\'')) {
            Some(quoted) => unquote_conf(quoted),
            None => value.to_string(),
        };
        if name.is_empty() || !name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') {
            return Err(format!(
                "syntax error in file \"{file}\" line {}, near token \"{name}\"",
                n + 1
            ));
        }
        out.push((name.to_ascii_lowercase(), value));
    }
    Ok(out)
}

impl ServerConfig {
    /// Applies one setting.
    pub fn apply(&mut self, name: &str, value: &str) -> Result<(), String> {
        match name {
            "listen_addresses" => self.listen_addresses = value.trim().to_string(),
            "port" => {
                self.port = value
                    .trim()
                    .parse()
                    .ok()
                    .filter(|p: &u16| *p > 0)
                    .ok_or_else(|| invalid(name, value, ""))?
            }
            "max_connections" => {
                let n: usize = value.trim().parse().map_err(|_| invalid(name, value, ""))?;
                if !(1..=10_000).contains(&n) {
                    return Err(format!(
                        "{n} is outside the valid range for parameter \"{name}\" (1 .. 10000)"
                    ));
                }
                self.max_connections = n;
            }
            "superuser_reserved_connections" => {
                let n: usize = value.trim().parse().map_err(|_| invalid(name, value, ""))?;
                if n > 10_000 {
                    return Err(format!(
                        "{n} is outside the valid range for parameter \"{name}\" (0 .. 10000)"
                    ));
                }
                self.superuser_reserved_connections = n;
            }
            "authentication_timeout" => {
                let ms = parse_time_ms(name, value, 1000)?;
                if !(1000..=600_000).contains(&ms) {
                    return Err(format!(
                        "{ms} ms is outside the valid range for parameter \"{name}\" (1s .. 10min)"
                    ));
                }
                self.authentication_timeout = Duration::from_millis(ms);
            }
            "archive_command" => self.archive_command = value.to_string(),
            "max_wal_senders" => {
                let n: usize = value.trim().parse().map_err(|_| invalid(name, value, ""))?;
                if n > 10_000 {
                    return Err(format!(
                        "{n} is outside the valid range for parameter \"{name}\" (0 .. 10000)"
                    ));
                }
                self.max_wal_senders = n;
            }
            "wal_sender_timeout" => {
                let ms = parse_time_ms(name, value, 1)?;
                if ms > i32::MAX as u64 {
                    return Err(format!(
                        "{ms} ms is outside the valid range for parameter \"{name}\" (0 .. 2147483647)"
                    ));
                }
                self.wal_sender_timeout = Duration::from_millis(ms);
            }
            "log_directory" => {
                self.log_directory = Some(value.trim().to_string()).filter(|v| !v.is_empty())
            }
            "synchronous_standby_names" => {
                strata_sql::syncrep::SyncRep::new(value)?;
                self.synchronous_standby_names = value.trim().to_string();
            }
            "ssl" => self.tls.enabled = parse_bool(name, value)?,
            "ssl_cert_file" => self.tls.cert_file = value.trim().to_string(),
            "ssl_key_file" => self.tls.key_file = value.trim().to_string(),
            "ssl_ca_file" => self.tls.ca_file = value.trim().to_string(),
            "ssl_min_protocol_version" => self.tls.min_protocol = TlsVersion::parse(name, value)?,
            "hba_file" => self.hba_file = value.trim().to_string(),
            "primary_conninfo"
            | "primary_slot_name"
            | "wal_receiver_status_interval"
            | "hot_standby_feedback"
            | "wal_receiver_timeout"
            | "wal_retrieve_retry_interval" => self.apply_standby(name, value)?,
            _ => apply(&mut self.engine, name, value)?,
        }
        self.given.retain(|(n, _)| n != name);
        self.given
            .push((name.to_string(), value.trim().to_string()));
        Ok(())
    }

    /// The standby's settings.
    fn apply_standby(&mut self, name: &str, value: &str) -> Result<(), String> {
        let ms_in = |lo: u64, default_unit_ms: u64| -> Result<Duration, String> {
            let ms = parse_time_ms(name, value, default_unit_ms)?;
            if ms < lo || ms > i32::MAX as u64 {
                return Err(format!(
                    "{ms} ms is outside the valid range for parameter \"{name}\" ({lo} .. 2147483647)"
                ));
            }
            Ok(Duration::from_millis(ms))
        };
        match name {
            "primary_conninfo" => self.primary_conninfo = value.trim().to_string(),
            "primary_slot_name" => self.primary_slot_name = value.trim().to_string(),
            "wal_receiver_status_interval" => self.wal_receiver_status_interval = ms_in(0, 1000)?,
            "hot_standby_feedback" => self.hot_standby_feedback = parse_bool(name, value)?,
            "wal_receiver_timeout" => self.wal_receiver_timeout = ms_in(0, 1)?,
            _ => self.wal_retrieve_retry_interval = ms_in(1, 1)?,
        }
        Ok(())
    }

    /// Reads one configuration file, if it exists, applying each line.
    fn apply_file(&mut self, path: &std::path::Path) -> Result<(), String> {
        match std::fs::read_to_string(path) {
            Ok(text) => {
                for (n, v) in parse_conf(&text, &path.display().to_string())? {
                    self.apply(&n, &v)
                        .map_err(|e| format!("{e} (in \"{}\")", path.display()))?;
                }
                Ok(())
            }
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
            Err(e) => Err(format!("could not read \"{}\": {e}", path.display())),
        }
    }

    /// The configuration file (if it exists) and `postgresql.auto.conf` beside it,
    /// then the `-c name=value` flags.
    pub fn from_flags(
        conf: Option<&std::path::Path>,
        flags: &[String],
    ) -> Result<ServerConfig, String> {
        let mut c = ServerConfig::default();
        if let Some(path) = conf {
            c.apply_file(path)?;
            if let Some(dir) = path.parent() {
                c.apply_file(&dir.join("postgresql.auto.conf"))?;
            }
        }
        for p in flags {
            let (n, v) = p
                .split_once('=')
                .ok_or_else(|| format!("-c {p}: expected name=value"))?;
            c.apply(n.trim(), v.trim())?;
        }
        if c.superuser_reserved_connections >= c.max_connections {
            return Err(format!(
                "superuser_reserved_connections ({}) must be less than max_connections ({})",
                c.superuser_reserved_connections, c.max_connections
            ));
        }
        Ok(c)
    }

    /// Where `pg_hba.conf` is: `hba_file` (relative to the data directory), else
    /// `pg_hba.conf` in the data directory.
    pub fn hba_path(&self, data: &std::path::Path) -> std::path::PathBuf {
        if self.hba_file.is_empty() {
            data.join("pg_hba.conf")
        } else {
            data.join(&self.hba_file)
        }
    }

    /// The addresses to listen on.
    pub fn listen_addrs(&self) -> Result<Vec<String>, String> {
        let mut v = Vec::new();
        for a in self.listen_addresses.split(',') {
            let a = a.trim();
            match a {
                "" => {}
                "*" => v.push("0.0.0.0".to_string()),
                "localhost" => v.push("127.0.0.1".to_string()),
                other => v.push(other.to_string()),
            }
        }
        if v.is_empty() {
            return Err("listen_addresses is empty: the server would accept no connections".into());
        }
        Ok(v)
    }

    /// (name, value, description) of every server setting, for SHOW, in the order it
    /// has always listed them: buffers, WAL and files first, then the rest.
    pub fn show_list(&self, data: &std::path::Path) -> Vec<(String, String, String)> {
        let mut list = self.engine_show_list();
        list.extend(self.server_show_list(data));
        list.extend(self.tls_show_list(data));
        list.extend(self.replication_show_list());
        list
    }

    /// Archiving, WAL senders, synchronous replication and the standby's settings,
    /// for SHOW (on sessions and on replication connections).
    fn replication_show_list(&self) -> Vec<(String, String, String)> {
        let given = |n: &str, default: String| self.given_or(n, default);
        let e = &self.engine;
        // PostgreSQL's SHOW form: the largest unit that divides the time (`30s`, `1min`).
        let secs = |d: Duration| strata_sql::settings::format_ms(d.as_millis() as u64);
        let ms = secs;
        let on = |b: bool| if b { "on" } else { "off" }.to_string();
        let rows: Vec<(&str, String, &str)> = vec![
            ("archive_mode", given("archive_mode", on(e.archive_mode)), "Allows archiving of WAL files using archive_command."),
            ("archive_command", self.archive_command.clone(), "Sets the shell command that will be called to archive a WAL file."),
            ("archive_timeout", given("archive_timeout", secs(e.archive_timeout)), "Sets the amount of time to wait before forcing a switch to the next WAL file."),
            ("wal_keep_size", given("wal_keep_size", format!("{}MB", e.wal_keep_size_bytes >> 20)), "Sets the size of WAL files held for standby servers."),
            ("max_wal_senders", self.max_wal_senders.to_string(), "Sets the maximum number of simultaneously running WAL sender processes."),
            ("wal_sender_timeout", given("wal_sender_timeout", ms(self.wal_sender_timeout)), "Sets the maximum time to wait for WAL replication."),
            ("synchronous_standby_names", self.synchronous_standby_names.clone(), "Number of synchronous standbys and list of names of potential synchronous ones."),
            ("hot_standby", "on".into(), "Allows connections and queries during recovery."),
            ("primary_conninfo", self.primary_conninfo.clone(), "Sets the connection string to be used to connect to the sending server."),
            ("primary_slot_name", self.primary_slot_name.clone(), "Sets the name of the replication slot to use on the sending server."),
            ("wal_receiver_status_interval", given("wal_receiver_status_interval", secs(self.wal_receiver_status_interval)), "Sets the maximum interval between WAL receiver status reports to the sending server."),
            ("hot_standby_feedback", on(self.hot_standby_feedback), "Allows feedback from a hot standby to the primary that will avoid query conflicts."),
            ("wal_receiver_timeout", given("wal_receiver_timeout", ms(self.wal_receiver_timeout)), "Sets the maximum wait time to receive data from the sending server."),
            ("wal_retrieve_retry_interval", given("wal_retrieve_retry_interval", ms(self.wal_retrieve_retry_interval)), "Sets the time to wait before retrying to retrieve WAL after a failed attempt."),
            ("max_standby_streaming_delay", given("max_standby_streaming_delay", e.max_standby_delay.map_or("-1".into(), ms)), "Sets the maximum delay before canceling queries when a hot standby server is processing streamed WAL data."),
            ("max_standby_archive_delay", given("max_standby_archive_delay", e.max_standby_archive_delay.map_or("-1".into(), ms)), "Sets the maximum delay before canceling queries when a hot standby server is processing archived WAL data."),
            ("restore_command", e.restore_command.clone().unwrap_or_default(), "Sets the shell command that will be called to retrieve an archived WAL file."),
            ("recovery_target_lsn", e.recovery_target_lsn.map(|l| l.to_string()).unwrap_or_default(), "Sets the LSN of the write-ahead log location up to which recovery will proceed."),
        ];
        rows.into_iter()
            .map(|(n, v, d)| (n.to_string(), v, d.to_string()))
            .collect()
    }

    /// The value given for `name` (as written), or `default`.
    fn given_or(&self, name: &str, default: String) -> String {
        self.given
            .iter()
            .find(|(g, _)| g == name)
            .map(|(_, v)| v.clone())
            .unwrap_or(default)
    }

    /// Buffers, WAL and files, for SHOW.
    fn engine_show_list(&self) -> Vec<(String, String, String)> {
        let given = |n: &str, default: String| self.given_or(n, default);
        let mem = |b: u64| {
            if b.is_multiple_of(1 << 30) {
                format!("{}GB", b >> 30)
            } else if b.is_multiple_of(1 << 20) {
                format!("{}MB", b >> 20)
            } else {
                format!("{}kB", b >> 10)
            }
        };
        let e = &self.engine;
        vec![
            (
                "shared_buffers".into(),
                given("shared_buffers", mem(e.shared_buffers_bytes)),
                "Sets the number of shared memory buffers used by the server.".into(),
            ),
            (
                "full_page_writes".into(),
                given(
                    "full_page_writes",
                    if e.full_page_writes { "on" } else { "off" }.into(),
                ),
                "Writes full pages to WAL when first modified after a checkpoint.".into(),
            ),
            (
                "checkpoint_timeout".into(),
                given(
                    "checkpoint_timeout",
                    format!("{}s", e.checkpoint_timeout.as_secs()),
                ),
                "Sets the maximum time between automatic WAL checkpoints.".into(),
            ),
            (
                "max_wal_size".into(),
                given("max_wal_size", mem(e.max_wal_size_bytes)),
                "Sets the WAL size that triggers a checkpoint.".into(),
            ),
            (
                "wal_segment_size".into(),
                given("wal_segment_size", mem(e.wal_segment_bytes)),
                "Shows the size of write ahead log segments.".into(),
            ),
            (
                "max_files_per_process".into(),
                given("max_files_per_process", e.max_files_per_process.to_string()),
                "Sets the maximum number of simultaneously open files for each server process."
                    .into(),
            ),
        ]
    }

    /// TLS and `pg_hba.conf`, for SHOW (the values this start read: a reload does not
    /// change SHOW's list).
    fn tls_show_list(&self, data: &std::path::Path) -> Vec<(String, String, String)> {
        vec![
            (
                "ssl".into(),
                if self.tls.enabled { "on" } else { "off" }.into(),
                "Enables SSL connections.".into(),
            ),
            (
                "ssl_cert_file".into(),
                self.tls.cert_file.clone(),
                "Location of the SSL server certificate file.".into(),
            ),
            (
                "ssl_key_file".into(),
                self.tls.key_file.clone(),
                "Location of the SSL server private key file.".into(),
            ),
            (
                "ssl_ca_file".into(),
                self.tls.ca_file.clone(),
                "Location of the SSL certificate authority file.".into(),
            ),
            (
                "ssl_min_protocol_version".into(),
                self.tls.min_protocol.name().into(),
                "Sets the minimum SSL/TLS protocol version to use.".into(),
            ),
            (
                "hba_file".into(),
                self.hba_path(data).display().to_string(),
                "Sets the server's \"hba\" configuration file.".into(),
            ),
        ]
    }

    /// Connections, logging, recovery, the data directory and fsync, for SHOW.
    fn server_show_list(&self, data: &std::path::Path) -> Vec<(String, String, String)> {
        let given = |n: &str, default: String| self.given_or(n, default);
        let e = &self.engine;
        vec![
            (
                "listen_addresses".into(),
                self.listen_addresses.clone(),
                "Sets the host name or IP address(es) to listen to.".into(),
            ),
            (
                "port".into(),
                self.port.to_string(),
                "Sets the TCP port the server listens on.".into(),
            ),
            (
                "max_connections".into(),
                self.max_connections.to_string(),
                "Sets the maximum number of concurrent connections.".into(),
            ),
            (
                "superuser_reserved_connections".into(),
                self.superuser_reserved_connections.to_string(),
                "Sets the number of connection slots reserved for superusers.".into(),
            ),
            (
                "authentication_timeout".into(),
                given(
                    "authentication_timeout",
                    format!("{}s", self.authentication_timeout.as_secs()),
                ),
                "Sets the maximum allowed time to complete client authentication.".into(),
            ),
            (
                "log_directory".into(),
                self.log_directory.clone().unwrap_or_default(),
                "Sets the destination directory for log files (empty: stderr).".into(),
            ),
            (
                "recovery_init_sync_method".into(),
                given(
                    "recovery_init_sync_method",
                    format!("{:?}", e.recovery_init_sync_method).to_lowercase(),
                ),
                "Sets the method for synchronizing the data directory before crash recovery."
                    .into(),
            ),
            (
                "data_directory".into(),
                data.display().to_string(),
                "Sets the server's data directory.".into(),
            ),
            (
                "fsync".into(),
                "on".into(),
                "Forces synchronization of updates to disk (always on in Strata).".into(),
            ),
        ]
    }
}

/// Settings from a list of `name=value` strings.
pub fn settings_from(pairs: &[String]) -> Result<Settings, String> {
    let mut s = Settings::default();
    for p in pairs {
        let (n, v) = p
            .split_once('=')
            .ok_or_else(|| format!("-c {p}: expected name=value"))?;
        apply(&mut s, n.trim(), v.trim())?;
    }
    Ok(s)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn settings_take_postgres_units_and_refuse_nonsense() {
        let s = settings_from(&[
            "shared_buffers=8GB".into(),
            "checkpoint_timeout=1h".into(),
            "max_wal_size=64GB".into(),
            "full_page_writes=off".into(),
        ])
        .unwrap();
        assert_eq!(s.shared_buffers_bytes, 8 << 30);
        assert_eq!(s.checkpoint_timeout, Duration::from_secs(3600));
        assert_eq!(s.max_wal_size_bytes, 64 << 30);
        assert!(!s.full_page_writes);
        assert_eq!(
            settings_from(&["checkpoint_timeout=300".into()])
                .unwrap()
                .checkpoint_timeout,
            Duration::from_secs(300)
        );
        for bad in [
            "shared_buffers=lots",
            "checkpoint_timeout=5 fortnights",
            "checkpoint_timeout=1s",
            "full_page_writes=maybe",
            "wal_segment_size=3MB",
            "no_such_setting=1",
            "shared_buffers",
        ] {
            assert!(settings_from(&[bad.into()]).is_err(), "{bad}");
        }
    }
}
