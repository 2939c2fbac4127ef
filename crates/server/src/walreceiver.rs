//! The WAL receiver: the client side of PostgreSQL's physical streaming replication
//! protocol, with which a standby streams WAL from its primary (PostgreSQL's
//! `walreceiver.c` and `libpqwalreceiver.c`). It owns the replication connection:
//! connecting, authenticating, IDENTIFY_SYSTEM, START_REPLICATION, the copy-both
//! stream and the standby status updates; what happens to the WAL is the engine's,
//! behind [`ReceiverSink`].
//!
//! Entry points: [`Conninfo::parse`] (`primary_conninfo`, keyword or URI form),
//! [`ReceiverSettings`] (the `wal_receiver_*` settings), [`run`] (the receiver loop,
//! until its stop signal).
//!
//! Rules (cited as "walreceiver rule N"):
//! 1. Nothing the primary sends ends the process: every failure ends the connection,
//!    is logged in PostgreSQL's words, and the receiver connects again after
//!    `wal_retrieve_retry_interval`. The one exception is a failed `flush` of the
//!    sink, logged as FATAL: the receiver stops and the engine takes it from there.
//! 2. The primary must be the standby's: its system identifier and timeline must
//!    equal the sink's, else nothing is streamed.
//! 3. WAL arrives in order: an XLogData that does not start where the previous one
//!    ended ends the connection. The write position reported is what was handed to
//!    the sink, the flush position what `flush` returned, the apply position the
//!    sink's replay position.
//! 4. Received WAL is flushed when no more is immediately buffered (or every
//!    [`FLUSH_EVERY`] bytes), and each flush is reported at once; a keepalive asking
//!    for a reply, a moved replay or flush position (checked every [`TICK`], and
//!    the moment replay moves while it is behind the flushed end:
//!    [`ReceiverSink::replay_progress`]) and `wal_receiver_status_interval` send a
//!    status update too.
//! 5. Reads and writes are concurrent: the socket is polled together with a tick, so
//!    a silent primary is noticed after `wal_receiver_timeout` (pinged with a
//!    reply-requested update at half of it), and a stop request within a tick.
//! 6. The password never reaches a log line: the conninfo shown is
//!    [`Conninfo::display_sanitized`].
//! 7. With `hot_standby_feedback` on, the oldest xid the standby's snapshots need
//!    goes to the primary at stream start and every `wal_receiver_status_interval`
//!    ('h' messages), so its VACUUM keeps the rows they may see.
//! 8. TLS as libpq does it (tls rule 4): `sslmode` (default `prefer`) decides the
//!    attempts, `sslrootcert`, `sslcert`, `sslkey` and `ssl_min_protocol_version`
//!    are honoured; a TLS keyword whose value Strata cannot honour (`sslcrl`,
//!    `sslpassword`, a lower `ssl_max_protocol_version`, ...) is refused when the
//!    connection string is parsed, never accepted and ignored. TLS is not used over
//!    a Unix socket (libpq's rule).
//! 9. Over TLS, SCRAM binds to the server's certificate (SCRAM-SHA-256-PLUS,
//!    `tls-server-end-point`) when the server offers it, as libpq does with
//!    `channel_binding=prefer` (the default); `channel_binding=require` refuses any
//!    authentication that did not bind, `disable` never binds.

use crate::tls::{ClientTls, SslMode, TlsVersion};
use bytes::{Buf, BufMut, BytesMut};
use futures::{FutureExt, SinkExt, StreamExt};
use postgres_protocol::authentication::md5_hash;
use postgres_protocol::authentication::sasl::{
    ChannelBinding, ScramSha256, SCRAM_SHA_256, SCRAM_SHA_256_PLUS,
};
use postgres_protocol::message::backend::Message;
use postgres_protocol::message::frontend;
use std::io;
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};
use strata_types::Lsn;
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::sync::watch;
use tokio_util::codec::{Decoder, Encoder, Framed};

/// How often the streaming loop looks at the replay position, the timeout and stop.
pub const TICK: Duration = Duration::from_millis(20);
/// The tick while replay has not reached the flushed position (rule 4).
pub const APPLY_TICK: Duration = Duration::from_millis(1);
/// Received WAL is flushed at least this often, in bytes (rule 4).
pub const FLUSH_EVERY: u64 = 1 << 20;
/// The largest backend message accepted.
const MAX_MESSAGE: usize = 1 << 30;
/// Seconds from the Unix epoch to PostgreSQL's (2000-01-01 UTC), in microseconds.
const PG_EPOCH_US: i64 = 946_684_800_000_000;

/// Keywords libpq knows that the receiver accepts and ignores.
const IGNORED: &[&str] = &[
    "dbname",
    "fallback_application_name",
    "options",
    // libpq itself ignores it (since PostgreSQL 14).
    "sslcompression",
    "gssencmode",
    "gsslib",
    "krbsrvname",
    "gssdelegation",
    "target_session_attrs",
    "load_balance_hosts",
    "keepalives",
    "keepalives_idle",
    "keepalives_interval",
    "keepalives_count",
    "tcp_user_timeout",
    "requirepeer",
    "require_auth",
    "service",
    "replication",
];

/// A libpq connection string (`primary_conninfo`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Conninfo {
    /// A host name or address, or (starting with '/') a Unix socket directory.
    pub host: String,
    pub port: u16,
    pub user: String,
    pub password: Option<String>,
    /// A `.pgpass`-format file to look the password up in.
    pub passfile: Option<String>,
    pub application_name: Option<String>,
    /// `connect_timeout`; `None` waits as long as the operating system does.
    pub connect_timeout: Option<Duration>,
    /// `sslmode` as given (libpq's values; none: `prefer`).
    pub sslmode: Option<String>,
    /// The accepted-and-ignored keywords, in order, for display.
    pub other: Vec<(String, String)>,
}

impl Conninfo {
    fn defaults() -> Conninfo {
        Conninfo {
            host: "localhost".into(),
            port: 5432,
            user: std::env::var("USER")
                .ok()
                .filter(|u| !u.is_empty())
                .unwrap_or_else(|| "postgres".into()),
            password: None,
            passfile: None,
            application_name: None,
            connect_timeout: None,
            sslmode: None,
            other: Vec::new(),
        }
    }

    /// Parses a connection string in keyword=value or URI form, as libpq does.
    pub fn parse(s: &str) -> Result<Conninfo, String> {
        let t = s.trim_start();
        if let Some(rest) = t
            .strip_prefix("postgresql://")
            .or_else(|| t.strip_prefix("postgres://"))
        {
            return Self::parse_uri(rest);
        }
        let mut ci = Conninfo::defaults();
        for (k, v) in keyword_pairs(s)? {
            ci.set(&k, &v)?;
        }
        Ok(ci)
    }

    /// `[user[:password]@][host][:port][/dbname][?k=v&...]`, after the scheme.
    fn parse_uri(rest: &str) -> Result<Conninfo, String> {
        let mut ci = Conninfo::defaults();
        let (main, query) = match rest.split_once('?') {
            Some((m, q)) => (m, Some(q)),
            None => (rest, None),
        };
        let (authority, db) = match main.split_once('/') {
            Some((a, d)) => (a, Some(d)),
            None => (main, None),
        };
        let hostport = match authority.rsplit_once('@') {
            Some((userinfo, hp)) => {
                let (u, p) = match userinfo.split_once(':') {
                    Some((u, p)) => (u, Some(p)),
                    None => (userinfo, None),
                };
                ci.set("user", &percent_decode(u)?)?;
                if let Some(p) = p {
                    ci.set("password", &percent_decode(p)?)?;
                }
                hp
            }
            None => authority,
        };
        let (host, port) = split_host_port(hostport)?;
        ci.set("host", &percent_decode(host)?)?;
        if let Some(p) = port {
            ci.set("port", &percent_decode(p)?)?;
        }
        if let Some(d) = db.filter(|d| !d.is_empty()) {
            ci.set("dbname", &percent_decode(d)?)?;
        }
        for pair in query.unwrap_or("").split('&').filter(|p| !p.is_empty()) {
            let Some((k, v)) = pair.split_once('=') else {
                return Err(format!(
                    "missing key/value separator \"=\" in URI query parameter: \"{pair}\""
                ));
            };
            ci.set(&percent_decode(k)?, &percent_decode(v)?)?;
        }
        Ok(ci)
    }

    /// Applies one keyword; an empty value leaves the default, as in libpq.
    fn set(&mut self, key: &str, value: &str) -> Result<(), String> {
        let v = value.to_string();
        match key {
            "host" | "hostaddr" if v.contains(',') => {
                return Err("multiple hosts are not supported".into())
            }
            "host" | "hostaddr" if !v.is_empty() => self.host = v,
            "port" if !v.is_empty() => {
                self.port = v
                    .parse()
                    .ok()
                    .filter(|p| *p != 0)
                    .ok_or_else(|| format!("invalid port number: \"{v}\""))?
            }
            "user" if !v.is_empty() => self.user = v,
            "password" => self.password = Some(v),
            "passfile" if !v.is_empty() => self.passfile = Some(v),
            "application_name" => self.application_name = Some(v),
            "connect_timeout" if !v.is_empty() => {
                let secs: i64 = v.trim().parse().map_err(|_| {
                    format!(
                        "invalid integer value \"{v}\" for connection option \"connect_timeout\""
                    )
                })?;
                // libpq: zero or less waits forever, and less than 2 seconds is 2.
                self.connect_timeout = (secs > 0).then(|| Duration::from_secs(secs.max(2) as u64));
            }
            "sslmode" => {
                if !v.is_empty() {
                    SslMode::parse(&v)?;
                }
                self.sslmode = Some(v);
            }
            "channel_binding" if !matches!(v.as_str(), "" | "disable" | "prefer" | "require") => {
                return Err(format!("invalid channel_binding value: \"{v}\""))
            }
            "channel_binding" => self.other.push((key.to_string(), v)),
            "sslrootcert"
            | "sslcert"
            | "sslkey"
            | "ssl_min_protocol_version"
            | "ssl_max_protocol_version"
            | "sslcrl"
            | "sslcrldir"
            | "sslpassword"
            | "sslcertmode"
            | "sslsni" => {
                check_ssl_keyword(key, &v)?;
                self.other.push((key.to_string(), v));
            }
            "host" | "hostaddr" | "port" | "user" | "passfile" | "connect_timeout" => {}
            k if IGNORED.contains(&k) => self.other.push((k.to_string(), v)),
            k => return Err(format!("invalid connection option \"{k}\"")),
        }
        Ok(())
    }

    /// `sslmode`, libpq's default `prefer` when not given (rule 8).
    pub fn ssl_mode(&self) -> Result<SslMode, String> {
        match self.sslmode.as_deref() {
            None | Some("") => Ok(SslMode::Prefer),
            Some(m) => SslMode::parse(m),
        }
    }

    /// `channel_binding` (`disable`, `prefer`, `require`), libpq's default `prefer`.
    pub fn channel_binding(&self) -> &str {
        self.other
            .iter()
            .rev()
            .find(|(n, _)| n == "channel_binding")
            .map(|(_, v)| v.as_str())
            .filter(|v| !v.is_empty())
            .unwrap_or("prefer")
    }

    /// The TLS keywords given (`sslrootcert`, `sslcert`, `sslkey`,
    /// `ssl_min_protocol_version`); the last of each wins, as in libpq.
    pub fn client_tls(&self) -> Result<ClientTls, String> {
        let get = |k: &str| {
            self.other
                .iter()
                .rev()
                .find(|(n, _)| n == k)
                .map(|(_, v)| v.clone())
                .filter(|v| !v.is_empty())
        };
        Ok(ClientTls {
            rootcert: get("sslrootcert"),
            cert: get("sslcert"),
            key: get("sslkey"),
            min_protocol: match get("ssl_min_protocol_version") {
                Some(v) => Some(min_protocol(&v)?),
                None => None,
            },
        })
    }

    /// The keyword form with the password replaced by `********` (rule 6).
    pub fn display_sanitized(&self) -> String {
        let mut parts = vec![("user", self.user.clone())];
        if self.password.is_some() {
            parts.push(("password", "********".into()));
        }
        if let Some(p) = &self.passfile {
            parts.push(("passfile", p.clone()));
        }
        if let Some(a) = &self.application_name {
            parts.push(("application_name", a.clone()));
        }
        if let Some(t) = self.connect_timeout {
            parts.push(("connect_timeout", t.as_secs().to_string()));
        }
        parts.push(("host", self.host.clone()));
        parts.push(("port", self.port.to_string()));
        if let Some(m) = &self.sslmode {
            parts.push(("sslmode", m.clone()));
        }
        let mut out: Vec<String> = parts.iter().map(|(k, v)| kv(k, v)).collect();
        out.extend(self.other.iter().map(|(k, v)| kv(k, v)));
        out.join(" ")
    }

    /// The password: the conninfo's, else the passfile's (the conninfo's `passfile`,
    /// `PGPASSFILE`, or `~/.pgpass`) for database `replication`.
    pub fn lookup_password(&self) -> Option<String> {
        if let Some(p) = &self.password {
            return Some(p.clone());
        }
        let file = self
            .passfile
            .clone()
            .or_else(|| std::env::var("PGPASSFILE").ok().filter(|f| !f.is_empty()))
            .or_else(|| std::env::var("HOME").ok().map(|h| format!("{h}/.pgpass")))?;
        let text = std::fs::read_to_string(file).ok()?;
        // libpq matches a socket directory (or no host) as "localhost".
        let host = if self.host.starts_with('/') {
            "localhost"
        } else {
            self.host.as_str()
        };
        pgpass_lookup(
            &text,
            host,
            &self.port.to_string(),
            "replication",
            &self.user,
        )
    }

    /// Where to connect, for messages: libpq's wording.
    fn describe(&self) -> String {
        if self.host.starts_with('/') {
            format!("on socket \"{}\"", self.socket_path())
        } else {
            format!("at \"{}\", port {}", self.host, self.port)
        }
    }

    fn socket_path(&self) -> String {
        format!("{}/.s.PGSQL.{}", self.host.trim_end_matches('/'), self.port)
    }
}

/// libpq's `ssl_min_protocol_version`: anything older than TLSv1.2 is satisfied by
/// rustls's TLSv1.2 (a minimum, and rustls's is higher); TLSv1.3 is honoured.
fn min_protocol(v: &str) -> Result<TlsVersion, String> {
    match v {
        "TLSv1" | "TLSv1.1" | "TLSv1.2" => Ok(TlsVersion::V1_2),
        "TLSv1.3" => Ok(TlsVersion::V1_3),
        _ => Err(format!("invalid ssl_min_protocol_version value: \"{v}\"")),
    }
}

/// The TLS keywords a connection honours or refuses (rule 8): never one accepted
/// and then ignored.
fn check_ssl_keyword(key: &str, v: &str) -> Result<(), String> {
    let unsupported = || Err(format!("{key} value \"{v}\" is not supported by Strata"));
    match key {
        "ssl_min_protocol_version" if !v.is_empty() => min_protocol(v).map(|_| ()),
        // rustls's maximum is TLSv1.3: a lower maximum would not be honoured.
        "ssl_max_protocol_version" if !v.is_empty() && v != "TLSv1.3" => unsupported(),
        // Revocation lists and encrypted keys: not built, so refused.
        "sslcrl" | "sslcrldir" | "sslpassword" if !v.is_empty() => unsupported(),
        "sslcertmode" if !v.is_empty() && v != "allow" => unsupported(),
        "sslsni" if !v.is_empty() && v != "1" => unsupported(),
        _ => Ok(()),
    }
}

/// `key=value`, quoted when the value needs it.
pub(crate) fn kv(k: &str, v: &str) -> String {
    if !v.is_empty() && !v.contains(|c: char| c.is_whitespace() || c == '\'' || c == '\\') {
        return format!("{k}={v}");
    }
    let escaped = v.replace('\\', "\\\\").replace('\'', "\\'");
    format!("{k}='{escaped}'")
}

/// The `key=value` pairs of libpq's keyword form.
fn keyword_pairs(s: &str) -> Result<Vec<(String, String)>, String> {
    let mut out = Vec::new();
    let mut chars = s.chars().peekable();
    loop {
        while chars.next_if(|c| c.is_whitespace()).is_some() {}
        if chars.peek().is_none() {
            return Ok(out);
        }
        let mut key = String::new();
        while let Some(c) = chars.next_if(|c| *c != '=' && !c.is_whitespace()) {
            key.push(c);
        }
        while chars.next_if(|c| c.is_whitespace()).is_some() {}
        if chars.next() != Some('=') {
            return Err(format!(
                "missing \"=\" after \"{key}\" in connection info string"
            ));
        }
        while chars.next_if(|c| c.is_whitespace()).is_some() {}
        let mut value = String::new();
        if chars.next_if_eq(&'\'').is_some() {
            loop {
                match chars.next() {
                    None => {
                        return Err("unterminated quoted string in connection info string".into())
                    }
                    Some('\\') => value.extend(chars.next()),
                    Some('\'') => break,
                    Some(c) => value.push(c),
                }
            }
        } else {
            while let Some(c) = chars.next_if(|c| !c.is_whitespace()) {
                if c == '\\' {
                    value.extend(chars.next());
                } else {
                    value.push(c);
                }
            }
        }
        out.push((key, value));
    }
}

/// Splits `host[:port]`, where host may be `[ipv6]`.
fn split_host_port(s: &str) -> Result<(&str, Option<&str>), String> {
    if let Some(rest) = s.strip_prefix('[') {
        let Some((host, after)) = rest.split_once(']') else {
            return Err(format!(
                "end of string reached when looking for matching \"]\" in IPv6 host address in URI: \"{s}\""
            ));
        };
        return match after.strip_prefix(':') {
            Some(p) => Ok((host, Some(p))),
            None if after.is_empty() => Ok((host, None)),
            None => Err(format!(
                "unexpected character \"{after}\" after IPv6 host address in URI"
            )),
        };
    }
    Ok(match s.rsplit_once(':') {
        Some((h, p)) => (h, Some(p)),
        None => (s, None),
    })
}

/// URI percent-decoding.
fn percent_decode(s: &str) -> Result<String, String> {
    let bytes = s.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] != b'%' {
            out.push(bytes[i]);
            i += 1;
            continue;
        }
        let hex = bytes
            .get(i + 1..i + 3)
            .and_then(|h| std::str::from_utf8(h).ok())
            .and_then(|h| u8::from_str_radix(h, 16).ok())
            .ok_or_else(|| format!("invalid percent-encoded token: \"{s}\""))?;
        if hex == 0 {
            return Err(format!(
                "forbidden value %00 in percent-encoded value: \"{s}\""
            ));
        }
        out.push(hex);
        i += 3;
    }
    String::from_utf8(out).map_err(|_| format!("invalid percent-encoded token: \"{s}\""))
}

/// Looks up a password in `.pgpass` text: `hostname:port:database:username:password`
/// lines, `*` matching anything, `\:` and `\\` escapes; the first match wins.
pub fn pgpass_lookup(text: &str, host: &str, port: &str, db: &str, user: &str) -> Option<String> {
    let wanted = [host, port, db, user];
    for line in text.lines() {
        let line = line.trim_end_matches('\r');
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let mut fields: Vec<(String, bool)> = Vec::with_capacity(4);
        let mut cur = String::new();
        let mut raw = String::new();
        let mut chars = line.chars();
        while fields.len() < 4 {
            match chars.next() {
                None => break,
                Some('\\') => {
                    if let Some(c) = chars.next() {
                        cur.push(c);
                        raw.push('\\');
                        raw.push(c);
                    }
                }
                Some(':') => {
                    fields.push((std::mem::take(&mut cur), raw == "*"));
                    raw.clear();
                }
                Some(c) => {
                    cur.push(c);
                    raw.push(c);
                }
            }
        }
        if fields.len() < 4 {
            continue;
        }
        let matches = fields
            .iter()
            .zip(wanted)
            .all(|((value, any), want)| *any || value == want);
        if matches {
            let mut password = String::new();
            while let Some(c) = chars.next() {
                if c == '\\' {
                    password.extend(chars.next());
                } else {
                    password.push(c);
                }
            }
            return Some(password);
        }
    }
    None
}

/// What the engine gives the receiver.
pub trait ReceiverSink: Send + Sync + 'static {
    /// The standby's system identifier (rule 2).
    fn system_identifier(&self) -> u64;
    /// The standby's timeline (1 for now).
    fn timeline(&self) -> u32;
    /// Where to ask the primary to start streaming.
    fn start_lsn(&self) -> Lsn;
    /// WAL bytes at `start`, not yet durable.
    fn write(&self, start: Lsn, data: &[u8]) -> Result<(), String>;
    /// Makes everything written durable; returns the durable end.
    fn flush(&self) -> Result<Lsn, String>;
    /// The replay position, reported as `apply`.
    fn replayed(&self) -> Lsn;
    /// Changes as replay advances, if the sink can tell (rule 4); else the receiver
    /// looks every [`APPLY_TICK`] while replay is behind.
    fn replay_progress(&self) -> Option<watch::Receiver<Lsn>> {
        None
    }
    /// The oldest xid the standby's queries need (rule 7); 0 holds nothing.
    fn oldest_needed_xid(&self) -> u32 {
        0
    }
    /// A server log line: no severity prefix means LOG, else "FATAL:  " etc.
    fn log(&self, line: &str);
    /// The receiver's state, for `pg_stat_wal_receiver`.
    fn set_state(&self, state: ReceiverState);
    /// The primary was promoted to timeline `tli` (history file `history`), which the
    /// standby's WAL does not go past: the standby follows it from now on.
    fn adopt_timeline(&self, tli: u32, history: &str) -> Result<(), String>;
}

/// The receiver's state, for `pg_stat_wal_receiver`.
#[derive(Clone, Debug, Default)]
pub struct ReceiverState {
    /// "starting", "streaming", "waiting" or "stopping".
    pub status: &'static str,
    pub sender_host: String,
    pub sender_port: u16,
    pub slot_name: Option<String>,
    /// The conninfo, sanitized (rule 6).
    pub conninfo: String,
    pub received_tli: u32,
    /// Where the current connection started streaming.
    pub receive_start_lsn: Lsn,
    pub latest_end_lsn: Lsn,
    /// The primary's send time of its last message, PostgreSQL epoch microseconds.
    pub last_msg_send_time_us: i64,
    /// When that message arrived, Unix epoch microseconds.
    pub last_msg_receipt_unix_us: i64,
}

/// The receiver's settings.
#[derive(Clone, Debug)]
pub struct ReceiverSettings {
    pub conninfo: Conninfo,
    /// `primary_slot_name`.
    pub slot_name: Option<String>,
    /// The `application_name` sent; the conninfo's wins.
    pub application_name: String,
    /// `wal_receiver_status_interval`.
    pub status_interval: Duration,
    /// `hot_standby_feedback` (rule 7).
    pub hot_standby_feedback: bool,
    /// `wal_receiver_timeout`; zero never times out.
    pub timeout: Duration,
    /// `wal_retrieve_retry_interval`.
    pub retry_interval: Duration,
}

impl ReceiverSettings {
    /// PostgreSQL's defaults: "walreceiver", 10 s, 60 s, 5 s.
    pub fn new(conninfo: Conninfo) -> ReceiverSettings {
        ReceiverSettings {
            conninfo,
            slot_name: None,
            application_name: "walreceiver".into(),
            status_interval: Duration::from_secs(10),
            hot_standby_feedback: false,
            timeout: Duration::from_secs(60),
            retry_interval: Duration::from_secs(5),
        }
    }

    fn app_name(&self) -> &str {
        self.conninfo
            .application_name
            .as_deref()
            .unwrap_or(&self.application_name)
    }
}

/// PostgreSQL's timestamps: microseconds since 2000-01-01 UTC.
pub(crate) fn pg_now() -> i64 {
    unix_now() - PG_EPOCH_US
}

fn unix_now() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_micros() as i64)
}

/// The stream to the primary: TCP or a Unix socket.
pub(crate) trait Io: AsyncRead + AsyncWrite + Unpin + Send {}
impl<T: AsyncRead + AsyncWrite + Unpin + Send> Io for T {}

pub(crate) type Socket = Framed<Box<dyn Io>, Codec>;

/// A backend message: the ones `postgres_protocol` parses, and those it does not.
pub(crate) enum Backend {
    Msg(Message),
    CopyBoth,
    Sasl(Vec<String>),
    /// An ErrorResponse's message.
    Error(String),
    Notice,
}

/// Frames backend messages; frontend messages are encoded by `postgres_protocol`.
pub(crate) struct Codec;

impl Decoder for Codec {
    type Item = Backend;
    type Error = io::Error;

    fn decode(&mut self, buf: &mut BytesMut) -> io::Result<Option<Backend>> {
        let Some(header) = buf.get(..5) else {
            return Ok(None);
        };
        let tag = header[0];
        let len = u32::from_be_bytes([header[1], header[2], header[3], header[4]]) as usize;
        if !(4..=MAX_MESSAGE).contains(&len) {
            return Err(io::Error::new(
                io::ErrorKind::InvalidData,
                format!("invalid message length {len}"),
            ));
        }
        if buf.len() < len + 1 {
            buf.reserve(len + 1 - buf.len());
            return Ok(None);
        }
        let is_sasl = tag == b'R' && len >= 8 && buf.get(5..9) == Some(&10i32.to_be_bytes()[..]);
        if !(is_sasl || matches!(tag, b'W' | b'E' | b'N')) {
            return Message::parse(buf).map(|m| m.map(Backend::Msg));
        }
        let frame = buf.split_to(len + 1);
        let body = &frame[5..];
        Ok(Some(match tag {
            b'W' => Backend::CopyBoth,
            b'E' => Backend::Error(error_message(body)),
            b'N' => Backend::Notice,
            _ => Backend::Sasl(
                body.get(4..)
                    .unwrap_or_default()
                    .split(|b| *b == 0)
                    .filter(|m| !m.is_empty())
                    .map(|m| String::from_utf8_lossy(m).into_owned())
                    .collect(),
            ),
        }))
    }
}

impl Encoder<BytesMut> for Codec {
    type Error = io::Error;

    fn encode(&mut self, item: BytesMut, dst: &mut BytesMut) -> io::Result<()> {
        dst.extend_from_slice(&item);
        Ok(())
    }
}

/// The `M` field of an ErrorResponse body.
fn error_message(body: &[u8]) -> String {
    let mut rest = body;
    while let Some((&kind, tail)) = rest.split_first() {
        if kind == 0 {
            break;
        }
        let end = tail.iter().position(|b| *b == 0).unwrap_or(tail.len());
        if kind == b'M' {
            return String::from_utf8_lossy(&tail[..end]).into_owned();
        }
        rest = tail.get(end + 1..).unwrap_or(&[]);
    }
    "unknown error".into()
}

/// The columns of a DataRow body (after its column count): they fill it.
pub(crate) fn data_row(body: &[u8]) -> Result<Vec<Option<String>>, String> {
    let mut buf = body;
    let mut out = Vec::new();
    while !buf.is_empty() {
        if buf.len() < 4 {
            return Err("invalid DataRow message".into());
        }
        let len = buf.get_i32();
        if len < 0 {
            out.push(None);
            continue;
        }
        let len = len as usize;
        let Some(value) = buf.get(..len) else {
            return Err("invalid DataRow message".into());
        };
        out.push(Some(String::from_utf8_lossy(value).into_owned()));
        buf = &buf[len..];
    }
    Ok(out)
}

pub(crate) async fn send(sock: &mut Socket, msg: BytesMut) -> Result<(), String> {
    sock.send(msg).await.map_err(|e| e.to_string())
}

/// The next backend message; a closed connection is an error.
pub(crate) async fn recv(sock: &mut Socket) -> Result<Backend, String> {
    match sock.next().await {
        Some(Ok(m)) => Ok(m),
        Some(Err(e)) => Err(e.to_string()),
        None => Err("server closed the connection unexpectedly".into()),
    }
}

/// How a connection ended.
#[derive(Debug, PartialEq, Eq)]
enum End {
    /// Connect again after the retry interval (rule 1).
    Retry,
    /// The stop signal.
    Stopped,
    /// A flush of the sink failed: the receiver stops.
    Fatal,
}

/// Runs the receiver until `*stop.borrow()` becomes true or its sender is dropped
/// (or a sink flush fails: rule 1).
pub async fn run(
    settings: ReceiverSettings,
    sink: Arc<dyn ReceiverSink>,
    mut stop: watch::Receiver<bool>,
) {
    let mut state = ReceiverState {
        status: "starting",
        sender_host: settings.conninfo.host.clone(),
        sender_port: settings.conninfo.port,
        slot_name: settings.slot_name.clone(),
        conninfo: settings.conninfo.display_sanitized(),
        ..ReceiverState::default()
    };
    loop {
        if *stop.borrow() {
            break;
        }
        state.status = "starting";
        sink.set_state(state.clone());
        let end = connection(&settings, &*sink, &mut state, &mut stop).await;
        if end != End::Retry {
            break;
        }
        state.status = "waiting";
        sink.set_state(state.clone());
        tokio::select! {
            _ = tokio::time::sleep(settings.retry_interval) => {}
            _ = stop.wait_for(|s| *s) => break,
        }
    }
    state.status = "stopping";
    sink.set_state(state);
}

/// One connection: connect, identify, stream; logs why it ended.
async fn connection(
    settings: &ReceiverSettings,
    sink: &dyn ReceiverSink,
    state: &mut ReceiverState,
    stop: &mut watch::Receiver<bool>,
) -> End {
    let setup = async {
        let mut sock = connect(settings)
            .await
            .map_err(|e| format!("FATAL:  could not connect to the primary server: {e}"))?;
        identify(&mut sock, sink).await?;
        start_streaming(&mut sock, settings, sink).await?;
        Ok::<Socket, String>(sock)
    };
    let mut stopped = stop.clone();
    let start_lsn = sink.start_lsn();
    let mut sock = tokio::select! {
        r = setup => match r {
            Ok(sock) => sock,
            Err(lines) => {
                for line in lines.lines() {
                    sink.log(line);
                }
                return End::Retry;
            }
        },
        _ = stopped.wait_for(|s| *s) => return End::Stopped,
    };
    state.status = "streaming";
    state.received_tli = sink.timeline();
    state.receive_start_lsn = start_lsn;
    sink.set_state(state.clone());
    let end = stream(&mut sock, settings, sink, state, stop).await;
    if end != End::Retry {
        let mut bye = BytesMut::new();
        frontend::terminate(&mut bye);
        let _ = tokio::time::timeout(TICK, send(&mut sock, bye)).await;
    }
    end
}

/// Connects as `sslmode` says (rule 8): the attempts in libpq's order (`prefer`: TLS,
/// then without; `allow`: without, then TLS), each a whole connection, startup and
/// authentication included.
pub(crate) async fn connect(settings: &ReceiverSettings) -> Result<Socket, String> {
    let ci = &settings.conninfo;
    let mode = ci.ssl_mode()?;
    let attempts: &[bool] = match mode {
        SslMode::Disable => &[false],
        SslMode::Allow => &[false, true],
        SslMode::Prefer => &[true, false],
        SslMode::Require | SslMode::VerifyCa | SslMode::VerifyFull => &[true],
    };
    let mut last = String::new();
    for &tls in attempts {
        match connect_once(settings, mode, tls).await {
            Ok(s) => return Ok(s),
            Err(e) => last = e,
        }
    }
    Err(last)
}

/// Opens the TCP connection (with TCP_NODELAY) or the Unix socket.
async fn open(ci: &Conninfo) -> io::Result<Opened> {
    if ci.host.starts_with('/') {
        return Ok(Opened::Unix(
            tokio::net::UnixStream::connect(ci.socket_path()).await?,
        ));
    }
    let tcp = tokio::net::TcpStream::connect((ci.host.as_str(), ci.port)).await?;
    tcp.set_nodelay(true)?;
    Ok(Opened::Tcp(tcp))
}

enum Opened {
    Tcp(tokio::net::TcpStream),
    Unix(tokio::net::UnixStream),
}

/// SSLRequest, then the TLS handshake if the server agrees (rule 8). `Ok(None)`: the
/// server said 'N' and `mode` allows going on without TLS (the caller then goes on
/// over plain TCP, on the same connection).
async fn start_tls(tcp: &mut tokio::net::TcpStream, mode: SslMode) -> Result<Option<()>, String> {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let mut request = BytesMut::new();
    frontend::ssl_request(&mut request);
    tcp.write_all(&request).await.map_err(|e| e.to_string())?;
    let mut answer = [0u8; 1];
    tcp.read_exact(&mut answer)
        .await
        .map_err(|e| format!("could not receive data from server: {e}"))?;
    match answer[0] {
        b'S' => Ok(Some(())),
        b'N' if mode.requires_tls() => {
            Err("server does not support SSL, but SSL was required".into())
        }
        b'N' => Ok(None),
        other => Err(format!(
            "received invalid response to SSL negotiation: {}",
            char::from(other)
        )),
    }
}

/// One connection: open, TLS if `tls` (and the server agrees), the startup message,
/// authentication, ReadyForQuery.
async fn connect_once(
    settings: &ReceiverSettings,
    mode: SslMode,
    tls: bool,
) -> Result<Socket, String> {
    let ci = &settings.conninfo;
    let failed = |e: String| format!("connection to server {} failed: {e}", ci.describe());
    let opened = match ci.connect_timeout {
        Some(t) => tokio::time::timeout(t, open(ci))
            .await
            .unwrap_or_else(|_| Err(io::Error::other("timeout expired"))),
        None => open(ci).await,
    };
    // Over TLS, the server certificate's channel binding data (if it has any).
    let mut binding: Option<Option<Vec<u8>>> = None;
    let io: Box<dyn Io> = match opened.map_err(|e| failed(e.to_string()))? {
        // libpq does not use TLS over a Unix socket, whatever sslmode says.
        Opened::Unix(u) => Box::new(u),
        Opened::Tcp(mut tcp) => {
            if tls && start_tls(&mut tcp, mode).await.map_err(failed)?.is_some() {
                let config = crate::tls::client_config(mode, &ci.client_tls()?).map_err(failed)?;
                let name = crate::tls::server_name(&ci.host).map_err(failed)?;
                let connector = pgwire::tokio::tokio_rustls::TlsConnector::from(config);
                let stream = connector
                    .connect(name, tcp)
                    .await
                    .map_err(|e| failed(format!("SSL error: {e}")))?;
                let cert = stream
                    .get_ref()
                    .1
                    .peer_certificates()
                    .and_then(|c| c.first());
                binding = Some(cert.and_then(|c| crate::tls::tls_server_end_point(c.as_ref())));
                Box::new(stream)
            } else {
                Box::new(tcp)
            }
        }
    };
    let mut sock = Framed::new(io, Codec);
    let mut buf = BytesMut::new();
    let params = [
        ("user", ci.user.as_str()),
        ("database", "replication"),
        ("replication", "true"),
        ("application_name", settings.app_name()),
    ];
    frontend::startup_message(params, &mut buf).map_err(|e| e.to_string())?;
    send(&mut sock, buf).await?;
    authenticate(&mut sock, ci, binding).await.map_err(failed)?;
    loop {
        match recv(&mut sock).await? {
            Backend::Msg(Message::ReadyForQuery(_)) => return Ok(sock),
            Backend::Msg(Message::ParameterStatus(_) | Message::BackendKeyData(_))
            | Backend::Notice => {}
            Backend::Error(e) => return Err(e),
            _ => return Err("unexpected message from server during startup".into()),
        }
    }
}

/// Answers the server's authentication requests until AuthenticationOk. `binding`:
/// `None` without TLS, else the server certificate's channel binding data (rule 9).
async fn authenticate(
    sock: &mut Socket,
    ci: &Conninfo,
    binding: Option<Option<Vec<u8>>>,
) -> Result<(), String> {
    let password = || {
        ci.lookup_password()
            .ok_or("fe_sendauth: no password supplied")
    };
    let require = ci.channel_binding() == "require";
    let unbound = "channel binding required but not supported by server's authentication request";
    let mut bound = false;
    loop {
        let mut buf = BytesMut::new();
        match recv(sock).await? {
            Backend::Msg(Message::AuthenticationOk) if require && !bound => return Err(
                "channel binding required, but server authenticated client without channel binding"
                    .into(),
            ),
            Backend::Msg(Message::AuthenticationOk) => return Ok(()),
            Backend::Msg(
                Message::AuthenticationCleartextPassword | Message::AuthenticationMd5Password(_),
            ) if require => return Err(unbound.into()),
            Backend::Msg(Message::AuthenticationCleartextPassword) => {
                frontend::password_message(password()?.as_bytes(), &mut buf)
                    .map_err(|e| e.to_string())?;
            }
            Backend::Msg(Message::AuthenticationMd5Password(body)) => {
                let hash = md5_hash(ci.user.as_bytes(), password()?.as_bytes(), body.salt());
                frontend::password_message(hash.as_bytes(), &mut buf).map_err(|e| e.to_string())?;
            }
            Backend::Sasl(mechanisms) => {
                let (mechanism, cb) = choose_scram(ci, &mechanisms, &binding)?;
                bound = mechanism == SCRAM_SHA_256_PLUS;
                scram(sock, &password()?, mechanism, cb).await?;
                continue;
            }
            Backend::Notice => continue,
            Backend::Error(e) => return Err(e),
            _ => {
                return Err("authentication method requested by the server is not supported".into())
            }
        }
        send(sock, buf).await?;
    }
}

/// libpq's choice of a SCRAM mechanism (rule 9): SCRAM-SHA-256-PLUS bound to the
/// server's certificate when TLS is in use, the server offers it and
/// `channel_binding` is not `disable`; else SCRAM-SHA-256, saying whether the client
/// could have bound ('y') or not ('n').
fn choose_scram(
    ci: &Conninfo,
    mechanisms: &[String],
    binding: &Option<Option<Vec<u8>>>,
) -> Result<(&'static str, ChannelBinding), String> {
    let offers = |m: &str| mechanisms.iter().any(|x| x == m);
    let mode = ci.channel_binding();
    match binding {
        Some(Some(data)) if mode != "disable" && offers(SCRAM_SHA_256_PLUS) => Ok((
            SCRAM_SHA_256_PLUS,
            ChannelBinding::tls_server_end_point(data.clone()),
        )),
        _ if mode == "require" => Err(
            "channel binding is required, but server did not offer an authentication method that supports channel binding"
                .into(),
        ),
        _ if !offers(SCRAM_SHA_256) => {
            Err("none of the server's SASL authentication mechanisms are supported".into())
        }
        Some(Some(_)) if mode != "disable" => Ok((SCRAM_SHA_256, ChannelBinding::unrequested())),
        _ => Ok((SCRAM_SHA_256, ChannelBinding::unsupported())),
    }
}

/// The SCRAM exchange with `mechanism`.
async fn scram(
    sock: &mut Socket,
    password: &str,
    mechanism: &str,
    binding: ChannelBinding,
) -> Result<(), String> {
    let mut scram = ScramSha256::new(password.as_bytes(), binding);
    let mut buf = BytesMut::new();
    frontend::sasl_initial_response(mechanism, scram.message(), &mut buf)
        .map_err(|e| e.to_string())?;
    send(sock, buf).await?;
    match recv(sock).await? {
        Backend::Msg(Message::AuthenticationSaslContinue(body)) => {
            scram.update(body.data()).map_err(|e| e.to_string())?
        }
        Backend::Error(e) => return Err(e),
        _ => return Err("unexpected message during SASL authentication".into()),
    }
    let mut buf = BytesMut::new();
    frontend::sasl_response(scram.message(), &mut buf).map_err(|e| e.to_string())?;
    send(sock, buf).await?;
    match recv(sock).await? {
        Backend::Msg(Message::AuthenticationSaslFinal(body)) => {
            scram.finish(body.data()).map_err(|e| e.to_string())
        }
        Backend::Error(e) => Err(e),
        _ => Err("unexpected message during SASL authentication".into()),
    }
}

/// A simple Query's rows, up to ReadyForQuery.
pub(crate) async fn simple_query(
    sock: &mut Socket,
    text: &str,
) -> Result<Vec<Vec<Option<String>>>, String> {
    let mut buf = BytesMut::new();
    frontend::query(text, &mut buf).map_err(|e| e.to_string())?;
    send(sock, buf).await?;
    let mut rows = Vec::new();
    let mut error = None;
    loop {
        match recv(sock).await? {
            Backend::Msg(Message::DataRow(row)) => {
                rows.push(data_row(row.buffer())?);
            }
            Backend::Msg(Message::ReadyForQuery(_)) => break,
            Backend::Error(e) => error = Some(e),
            _ => {}
        }
    }
    error.map_or(Ok(rows), Err)
}

/// IDENTIFY_SYSTEM: the primary must be the standby's (rule 2).
async fn identify(sock: &mut Socket, sink: &dyn ReceiverSink) -> Result<(), String> {
    let rows = simple_query(sock, "IDENTIFY_SYSTEM").await.map_err(|e| {
        format!("FATAL:  could not receive database system identifier and timeline ID from the primary server: {e}")
    })?;
    let row = match rows.as_slice() {
        [row] if row.len() >= 3 => row,
        _ => {
            return Err(format!(
                "FATAL:  invalid response from primary server\nDETAIL:  Could not identify system: got {} rows and {} fields, expected 1 rows and 3 or more fields.",
                rows.len(),
                rows.first().map_or(0, |r| r.len())
            ))
        }
    };
    let field = |i: usize| row[i].as_deref().unwrap_or("");
    let ours = sink.system_identifier();
    if field(0) != ours.to_string() {
        return Err(format!(
            "FATAL:  database system identifier differs between the primary and standby\nDETAIL:  The primary's identifier is {}, the standby's identifier is {ours}.",
            field(0)
        ));
    }
    let tli = sink.timeline();
    match field(1).parse::<u32>() {
        Ok(t) if t == tli => Ok(()),
        Ok(t) if t > tli => follow_timeline(sock, sink, t).await,
        _ => Err(format!(
            "FATAL:  highest timeline {} of the primary is behind recovery timeline {tli}",
            field(1)
        )),
    }
}

/// The primary is on a later timeline (it was promoted): the standby follows it if
/// its own WAL does not go past where its timeline ends in the primary's history
/// (timeline rule 3), storing the history file first.
async fn follow_timeline(
    sock: &mut Socket,
    sink: &dyn ReceiverSink,
    new: u32,
) -> Result<(), String> {
    let rows = simple_query(sock, &format!("TIMELINE_HISTORY {new}"))
        .await
        .map_err(|e| {
            format!("FATAL:  could not receive timeline history file from the primary server: {e}")
        })?;
    let text = rows
        .first()
        .and_then(|r| r.get(1).cloned().flatten())
        .ok_or("FATAL:  invalid response from primary server: no timeline history")?;
    let history = strata_wal::timeline::parse_history(&text).map_err(|e| format!("FATAL:  {e}"))?;
    let ours = sink.timeline();
    let switch = strata_wal::timeline::switch_point(&history, ours).ok_or_else(|| {
        format!(
            "FATAL:  the primary's timeline {new} did not fork from this standby's timeline {ours}"
        )
    })?;
    let at = sink.start_lsn();
    if at > switch {
        return Err(format!(
            "FATAL:  new timeline {new} forked off current database system timeline {ours} before current recovery point {at}\nDETAIL:  The primary's history switched off timeline {ours} at {switch}."
        ));
    }
    sink.adopt_timeline(new, &text)?;
    sink.log(&format!("new target timeline is {new}"));
    Ok(())
}

/// START_REPLICATION: expects CopyBothResponse.
async fn start_streaming(
    sock: &mut Socket,
    settings: &ReceiverSettings,
    sink: &dyn ReceiverSink,
) -> Result<(), String> {
    let (start, tli) = (sink.start_lsn(), sink.timeline());
    let slot = match &settings.slot_name {
        Some(s) => format!("SLOT \"{}\" ", s.replace('"', "\"\"")),
        None => String::new(),
    };
    let mut buf = BytesMut::new();
    let text = format!("START_REPLICATION {slot}PHYSICAL {start} TIMELINE {tli}");
    frontend::query(&text, &mut buf).map_err(|e| e.to_string())?;
    let started = async {
        send(sock, buf).await?;
        loop {
            match recv(sock).await? {
                Backend::CopyBoth => return Ok(()),
                Backend::Error(e) => return Err(e),
                Backend::Notice | Backend::Msg(Message::ParameterStatus(_)) => {}
                _ => return Err("unexpected response to START_REPLICATION".into()),
            }
        }
    };
    started
        .await
        .map_err(|e| format!("FATAL:  could not start WAL streaming: {e}"))?;
    sink.log(&format!(
        "started streaming WAL from primary at {start} on timeline {tli}"
    ));
    Ok(())
}

/// The streaming loop's positions and clocks.
struct Streaming {
    /// Where the next XLogData must start: everything before it was written.
    next: Lsn,
    flushed: Lsn,
    /// Bytes written since the last flush.
    unflushed: u64,
    /// The (write, flush, apply) of the last status update.
    reported: (Lsn, Lsn, Lsn),
    last_update: Instant,
    last_recv: Instant,
    pinged: bool,
    state_dirty: bool,
    /// When hot-standby feedback was last sent (rule 7).
    last_feedback: Option<Instant>,
}

/// A handled message's outcome: `Some(end)` or `Err(end)` ends the connection.
type Step = Result<Option<End>, End>;

/// The copy-both stream (rules 3 to 5).
async fn stream(
    sock: &mut Socket,
    settings: &ReceiverSettings,
    sink: &dyn ReceiverSink,
    state: &mut ReceiverState,
    stop: &mut watch::Receiver<bool>,
) -> End {
    let start = sink.start_lsn();
    let mut st = Streaming {
        next: start,
        flushed: start,
        unflushed: 0,
        reported: (start, start, sink.replayed()),
        last_update: Instant::now(),
        last_recv: Instant::now(),
        pinged: false,
        state_dirty: false,
        last_feedback: None,
    };
    let mut progress = sink.replay_progress();
    loop {
        // While replay is behind what was flushed, the apply position must reach the
        // primary (remote_apply waits on it) as soon as replay moves: woken by replay,
        // or by looking every millisecond when the sink cannot wake us.
        if let Some(p) = progress.as_mut() {
            p.borrow_and_update();
        }
        let behind = sink.replayed() < st.flushed;
        let wait = if behind && progress.is_none() {
            APPLY_TICK
        } else {
            TICK
        };
        let got = tokio::select! {
            m = sock.next() => Some(m),
            _ = replay_moved(&mut progress), if behind => None,
            _ = tokio::time::sleep(wait) => None,
        };
        let step = match got {
            Some(m) => on_messages(sock, m, sink, state, &mut st).await,
            None => on_tick(sock, settings, sink, &mut st, stop).await,
        };
        if st.state_dirty {
            st.state_dirty = false;
            sink.set_state(state.clone());
        }
        match step {
            Ok(None) => {}
            Ok(Some(end)) => return end,
            Err(end) => return end,
        }
    }
}

/// Returns when replay moves; never if it cannot tell (then it stops asking).
async fn replay_moved(progress: &mut Option<watch::Receiver<Lsn>>) {
    match progress {
        Some(p) => {
            if p.changed().await.is_err() {
                *progress = None;
            }
        }
        None => std::future::pending().await,
    }
}

/// Handles a message and every one immediately buffered after it, then flushes and
/// reports (rule 4).
async fn on_messages(
    sock: &mut Socket,
    first: Option<io::Result<Backend>>,
    sink: &dyn ReceiverSink,
    state: &mut ReceiverState,
    st: &mut Streaming,
) -> Step {
    let mut m = first;
    loop {
        let reply = match on_message(sock, m, sink, state, st).await? {
            Flow::Continue => false,
            Flow::Reply => true,
            Flow::End(end) => return Ok(Some(end)),
        };
        if reply || st.unflushed >= FLUSH_EVERY {
            flush_and_report(sock, sink, st, false).await?;
        }
        match sock.next().now_or_never() {
            Some(next) => m = next,
            None => break,
        }
    }
    if st.unflushed > 0 {
        flush_and_report(sock, sink, st, false).await?;
    }
    Ok(None)
}

/// What one message asks of the loop.
enum Flow {
    Continue,
    /// A keepalive asked for a reply.
    Reply,
    End(End),
}

/// Handles one message from the primary.
async fn on_message(
    sock: &mut Socket,
    m: Option<io::Result<Backend>>,
    sink: &dyn ReceiverSink,
    state: &mut ReceiverState,
    st: &mut Streaming,
) -> Result<Flow, End> {
    let fail = |e: &str| {
        sink.log(&format!(
            "FATAL:  could not receive data from WAL stream: {e}"
        ));
        End::Retry
    };
    let body = match m {
        Some(Ok(Backend::Msg(Message::CopyData(d)))) => d.into_bytes(),
        Some(Ok(Backend::Msg(Message::CopyDone))) => {
            sink.log("replication terminated by primary server");
            sink.log(&format!(
                "DETAIL:  End of WAL reached on timeline {} at {}.",
                sink.timeline(),
                st.next
            ));
            flush_and_report(sock, sink, st, false).await?;
            let mut buf = BytesMut::new();
            frontend::copy_done(&mut buf);
            let _ = send(sock, buf).await;
            return Ok(Flow::End(End::Retry));
        }
        Some(Ok(Backend::Notice)) => return Ok(Flow::Continue),
        Some(Ok(Backend::Error(e))) => return Err(fail(&e)),
        Some(Ok(_)) => return Err(fail("unexpected message type")),
        Some(Err(e)) => return Err(fail(&e.to_string())),
        None => return Err(fail("server closed the connection unexpectedly")),
    };
    st.last_recv = Instant::now();
    st.pinged = false;
    let mut b = &body[..];
    match b.first() {
        Some(b'w') if b.len() >= 25 => {
            b.advance(1);
            let (start, end, sent) = (Lsn(b.get_u64()), Lsn(b.get_u64()), b.get_i64());
            note_message(state, st, end, sent);
            if start != st.next {
                sink.log(&format!(
                    "FATAL:  received WAL at {start} from the primary, expected {}",
                    st.next
                ));
                return Err(End::Retry);
            }
            if let Err(e) = sink.write(start, b) {
                sink.log(&format!("FATAL:  could not write WAL at {start}: {e}"));
                return Err(End::Retry);
            }
            st.next += b.len() as u64;
            st.unflushed += b.len() as u64;
            Ok(Flow::Continue)
        }
        Some(b'k') if b.len() >= 18 => {
            b.advance(1);
            let (end, sent, reply) = (Lsn(b.get_u64()), b.get_i64(), b.get_u8());
            note_message(state, st, end, sent);
            Ok(if reply != 0 {
                Flow::Reply
            } else {
                Flow::Continue
            })
        }
        _ => Err(fail("invalid streaming message")),
    }
}

/// Records a message's WAL end and send time for `pg_stat_wal_receiver`.
fn note_message(state: &mut ReceiverState, st: &mut Streaming, end: Lsn, sent: i64) {
    state.latest_end_lsn = end;
    state.last_msg_send_time_us = sent;
    state.last_msg_receipt_unix_us = unix_now();
    st.state_dirty = true;
}

/// Flushes what was written (a failure stops the receiver: rule 1) and sends a
/// status update.
async fn flush_and_report(
    sock: &mut Socket,
    sink: &dyn ReceiverSink,
    st: &mut Streaming,
    ping: bool,
) -> Result<(), End> {
    if st.unflushed > 0 {
        // An fsync: off the runtime's worker, which serves every connection.
        match tokio::task::block_in_place(|| sink.flush()) {
            Ok(at) => st.flushed = at,
            Err(e) => {
                sink.log(&format!(
                    "FATAL:  could not flush WAL received from the primary: {e}"
                ));
                return Err(End::Fatal);
            }
        }
        st.unflushed = 0;
    }
    status_update(sock, sink, st, ping).await
}

/// Sends a standby status update ('r'): write, flush, apply, now, reply-requested.
async fn status_update(
    sock: &mut Socket,
    sink: &dyn ReceiverSink,
    st: &mut Streaming,
    ping: bool,
) -> Result<(), End> {
    let apply = sink.replayed();
    let mut msg = BytesMut::with_capacity(34);
    msg.put_u8(b'r');
    msg.put_u64(st.next.0);
    msg.put_u64(st.flushed.0);
    msg.put_u64(apply.0);
    msg.put_i64(pg_now());
    msg.put_u8(u8::from(ping));
    let mut buf = BytesMut::new();
    frontend::CopyData::new(msg.freeze())
        .map_err(|_| End::Retry)?
        .write(&mut buf);
    if let Err(e) = send(sock, buf).await {
        sink.log(&format!("FATAL:  could not send data to WAL stream: {e}"));
        return Err(End::Retry);
    }
    st.reported = (st.next, st.flushed, apply);
    st.last_update = Instant::now();
    Ok(())
}

/// The tick: stop, timeout, and status updates for moved positions (rules 4, 5).
async fn on_tick(
    sock: &mut Socket,
    settings: &ReceiverSettings,
    sink: &dyn ReceiverSink,
    st: &mut Streaming,
    stop: &mut watch::Receiver<bool>,
) -> Step {
    if *stop.borrow_and_update() || stop.has_changed().is_err() {
        flush_and_report(sock, sink, st, false).await?;
        return Ok(Some(End::Stopped));
    }
    let quiet = st.last_recv.elapsed();
    if !settings.timeout.is_zero() {
        if quiet >= settings.timeout {
            sink.log("FATAL:  terminating walreceiver due to timeout");
            return Err(End::Retry);
        }
        if !st.pinged && quiet >= settings.timeout / 2 {
            st.pinged = true;
            flush_and_report(sock, sink, st, true).await?;
            return Ok(None);
        }
    }
    let moved =
        sink.replayed() != st.reported.2 || st.flushed != st.reported.1 || st.next != st.reported.0;
    if moved || st.unflushed > 0 || st.last_update.elapsed() >= settings.status_interval {
        flush_and_report(sock, sink, st, false).await?;
    }
    let due = st
        .last_feedback
        .is_none_or(|t| t.elapsed() >= settings.status_interval);
    if settings.hot_standby_feedback && due {
        st.last_feedback = Some(Instant::now());
        feedback(sock, sink.oldest_needed_xid()).await?;
    }
    Ok(None)
}

/// Rule 7: hot-standby feedback ('h'): now, xmin, its epoch, catalog xmin and epoch
/// (the last two are for logical slots, which Strata lacks: 0).
async fn feedback(sock: &mut Socket, xmin: u32) -> Result<(), End> {
    let mut msg = BytesMut::with_capacity(25);
    msg.put_u8(b'h');
    msg.put_i64(pg_now());
    msg.put_u32(xmin);
    msg.put_u32(0);
    msg.put_u32(0);
    msg.put_u32(0);
    let mut buf = BytesMut::new();
    frontend::CopyData::new(msg.freeze())
        .map_err(|_| End::Retry)?
        .write(&mut buf);
    send(sock, buf).await.map_err(|_| End::Retry)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::{Read, Write};
    use std::net::{TcpListener, TcpStream};
    use std::sync::mpsc;
    use std::sync::Mutex;

    fn ci(s: &str) -> Conninfo {
        Conninfo::parse(s).expect("parses")
    }

    #[test]
    fn pg_basebackup_conninfo() {
        let c = ci("user=strata passfile='/root/.pgpass' channel_binding=prefer host=127.0.0.1 port=5433 sslmode=prefer sslcompression=0 sslcertmode=allow sslsni=1 ssl_min_protocol_version=TLSv1.2 gssencmode=prefer krbsrvname=postgres gssdelegation=0 target_session_attrs=any load_balance_hosts=disable");
        assert_eq!(c.user, "strata");
        assert_eq!(c.passfile.as_deref(), Some("/root/.pgpass"));
        assert_eq!(c.host, "127.0.0.1");
        assert_eq!(c.port, 5433);
        assert_eq!(c.password, None);
        assert_eq!(c.connect_timeout, None);
        let shown = c.display_sanitized();
        assert!(shown.contains("host=127.0.0.1 port=5433"), "{shown}");
        assert!(shown.contains("load_balance_hosts=disable"), "{shown}");
        assert_eq!(ci(&shown), c);
    }

    #[test]
    fn quoting_and_escapes() {
        let c = ci(
            r"host = '/tmp/my dir'  password='it\'s \\ here' application_name=a\ b connect_timeout=1",
        );
        assert_eq!(c.host, "/tmp/my dir");
        assert_eq!(c.password.as_deref(), Some(r"it's \ here"));
        assert_eq!(c.application_name.as_deref(), Some("a b"));
        assert_eq!(c.connect_timeout, Some(Duration::from_secs(2)));
        assert_eq!(c.socket_path(), "/tmp/my dir/.s.PGSQL.5432");
        let shown = c.display_sanitized();
        assert!(shown.contains("password=********"), "{shown}");
        assert!(!shown.contains("it"), "{shown}");
        assert_eq!(ci(&shown).host, "/tmp/my dir");
        assert_eq!(ci("").host, "localhost");
        assert_eq!(ci("port=6000").port, 6000);
        assert!(Conninfo::parse("host='x").is_err());
        assert!(Conninfo::parse("host x").is_err());
        assert!(Conninfo::parse("port=abc").is_err());
    }

    #[test]
    fn uri_form() {
        let c = ci("postgresql://rep%40user:p%3Ass@[::1]:5433/postgres?application_name=s1&sslmode=disable");
        assert_eq!(c.user, "rep@user");
        assert_eq!(c.password.as_deref(), Some("p:ss"));
        assert_eq!(c.host, "::1");
        assert_eq!(c.port, 5433);
        assert_eq!(c.application_name.as_deref(), Some("s1"));
        let c = ci("postgres://%2Fvar%2Frun%2Fpostgresql/db");
        assert_eq!(c.host, "/var/run/postgresql");
        assert_eq!(c.port, 5432);
        let c = ci("postgresql://primary:5434");
        assert_eq!((c.host.as_str(), c.port), ("primary", 5434));
        assert_eq!(ci("postgresql://").host, "localhost");
        assert_eq!(
            Conninfo::parse("postgresql://h?bogus=1"),
            Err("invalid connection option \"bogus\"".into())
        );
        assert!(Conninfo::parse("postgresql://h/%zz").is_err());
    }

    #[test]
    fn invalid_options() {
        assert_eq!(
            Conninfo::parse("host=h foo=1"),
            Err("invalid connection option \"foo\"".into())
        );
        assert_eq!(
            Conninfo::parse("sslmode=on"),
            Err("invalid sslmode value: \"on\"".into())
        );
        let c = ci("sslmode=verify-full sslrootcert=/r.crt sslcert=/c.crt sslkey=/c.key");
        assert_eq!(c.ssl_mode(), Ok(SslMode::VerifyFull));
        let t = c.client_tls().expect("tls keywords");
        assert_eq!(t.rootcert.as_deref(), Some("/r.crt"));
        assert_eq!(
            (t.cert.as_deref(), t.key.as_deref()),
            (Some("/c.crt"), Some("/c.key"))
        );
        assert_eq!(ci(&c.display_sanitized()), c);
        assert_eq!(ci("").ssl_mode(), Ok(SslMode::Prefer));
        assert_eq!(ci("").channel_binding(), "prefer");
        assert_eq!(ci("channel_binding=require").channel_binding(), "require");
        for refused in [
            "sslcrl=/x.crl",
            "sslpassword=x",
            "ssl_max_protocol_version=TLSv1.2",
            "ssl_min_protocol_version=TLSv9",
            "sslsni=0",
            "channel_binding=sometimes",
        ] {
            assert!(Conninfo::parse(refused).is_err(), "{refused}");
        }
        assert!(Conninfo::parse("sslmode=disable dbname=replication replication=true").is_ok());
    }

    #[test]
    fn passfile_lookup() {
        let mut f = tempfile::NamedTempFile::new().expect("temp file");
        let text = "# comment\nother:*:*:*:wrong\n127.0.0.1:5433:postgres:strata:notthis\n127.0.0.1:5433:replication:strata:s3cr\\:et\\\\x\n*:*:*:strata:fallback\n";
        f.write_all(text.as_bytes()).expect("write");
        let path = f.path().display().to_string();
        let c = ci(&format!(
            "user=strata host=127.0.0.1 port=5433 passfile='{path}'"
        ));
        assert_eq!(c.lookup_password().as_deref(), Some(r"s3cr:et\x"));
        let c = ci(&format!(
            "user=strata host=127.0.0.1 port=5434 passfile='{path}'"
        ));
        assert_eq!(c.lookup_password().as_deref(), Some("fallback"));
        let c = ci(&format!("user=bob host=h passfile='{path}'"));
        assert_eq!(c.lookup_password(), None);
        let c = ci(&format!("user=bob password=given passfile='{path}'"));
        assert_eq!(c.lookup_password().as_deref(), Some("given"));
        let line = "h\\:x:1:replication:u:pw:with:colons\n";
        assert_eq!(
            pgpass_lookup(line, "h:x", "1", "replication", "u").as_deref(),
            Some("pw:with:colons")
        );
        assert_eq!(pgpass_lookup(line, "h", "1", "replication", "u"), None);
    }

    #[derive(Default)]
    struct TestSink {
        writes: Mutex<Vec<(Lsn, Vec<u8>)>>,
        logs: Mutex<Vec<String>>,
        states: Mutex<Vec<&'static str>>,
    }

    const START: Lsn = Lsn(0x100_0000);
    const SYSID: u64 = 7_000_000_000_000_000_001;

    impl ReceiverSink for TestSink {
        fn system_identifier(&self) -> u64 {
            SYSID
        }
        fn timeline(&self) -> u32 {
            1
        }
        fn start_lsn(&self) -> Lsn {
            START
        }
        fn write(&self, start: Lsn, data: &[u8]) -> Result<(), String> {
            self.writes.lock().unwrap().push((start, data.to_vec()));
            Ok(())
        }
        fn flush(&self) -> Result<Lsn, String> {
            let w = self.writes.lock().unwrap();
            Ok(w.last().map_or(START, |(s, d)| *s + d.len() as u64))
        }
        fn replayed(&self) -> Lsn {
            START
        }
        fn log(&self, line: &str) {
            self.logs.lock().unwrap().push(line.to_string());
        }
        fn set_state(&self, state: ReceiverState) {
            self.states.lock().unwrap().push(state.status);
        }
        fn adopt_timeline(&self, _: u32, _: &str) -> Result<(), String> {
            Err("the test sink stays on its timeline".into())
        }
    }

    fn msg(tag: u8, body: &[u8]) -> Vec<u8> {
        let mut out = vec![tag];
        out.extend_from_slice(&(body.len() as i32 + 4).to_be_bytes());
        out.extend_from_slice(body);
        out
    }

    fn read_msg(s: &mut TcpStream) -> Option<(u8, Vec<u8>)> {
        let mut head = [0u8; 5];
        s.read_exact(&mut head).ok()?;
        let len = i32::from_be_bytes([head[1], head[2], head[3], head[4]]) as usize;
        let mut body = vec![0; len - 4];
        s.read_exact(&mut body).ok()?;
        Some((head[0], body))
    }

    fn identify_reply(sysid: &str) -> Vec<u8> {
        let mut rd = 4i16.to_be_bytes().to_vec();
        for (name, oid) in [
            ("systemid", 25i32),
            ("timeline", 23),
            ("xlogpos", 25),
            ("dbname", 25),
        ] {
            rd.extend_from_slice(name.as_bytes());
            rd.push(0);
            rd.extend_from_slice(&0i32.to_be_bytes());
            rd.extend_from_slice(&0i16.to_be_bytes());
            rd.extend_from_slice(&oid.to_be_bytes());
            rd.extend_from_slice(&(-1i16).to_be_bytes());
            rd.extend_from_slice(&(-1i32).to_be_bytes());
            rd.extend_from_slice(&0i16.to_be_bytes());
        }
        let mut dr = 4i16.to_be_bytes().to_vec();
        for v in [sysid, "1", "0/1000010"] {
            dr.extend_from_slice(&(v.len() as i32).to_be_bytes());
            dr.extend_from_slice(v.as_bytes());
        }
        dr.extend_from_slice(&(-1i32).to_be_bytes());
        let mut out = msg(b'T', &rd);
        out.extend(msg(b'D', &dr));
        out.extend(msg(b'C', b"IDENTIFY_SYSTEM\0"));
        out.extend(msg(b'Z', b"I"));
        out
    }

    fn xlog(start: u64, data: &[u8]) -> Vec<u8> {
        let mut body = vec![b'w'];
        body.extend_from_slice(&start.to_be_bytes());
        body.extend_from_slice(&0x100_000Bu64.to_be_bytes());
        body.extend_from_slice(&pg_now().to_be_bytes());
        body.extend_from_slice(data);
        msg(b'd', &body)
    }

    /// A tiny primary: one connection, trust or cleartext password auth,
    /// IDENTIFY_SYSTEM, START_REPLICATION, two XLogData and a keepalive; status
    /// updates go to `tx` as (write, flush, apply).
    fn fake_primary(
        listener: TcpListener,
        sysid: &str,
        password: Option<&str>,
        tx: mpsc::Sender<(Lsn, Lsn, Lsn)>,
    ) -> Option<()> {
        let (mut s, _) = listener.accept().ok()?;
        let mut len = [0u8; 4];
        s.read_exact(&mut len).ok()?;
        let mut startup = vec![0; i32::from_be_bytes(len) as usize - 4];
        s.read_exact(&mut startup).ok()?;
        if startup == 80_877_103i32.to_be_bytes() {
            // sslmode=prefer (the default) asks for TLS first; this primary has none.
            s.write_all(b"N").ok()?;
            s.read_exact(&mut len).ok()?;
            startup = vec![0; i32::from_be_bytes(len) as usize - 4];
            s.read_exact(&mut startup).ok()?;
        }
        let has = |needle: &[u8]| startup.windows(needle.len()).any(|w| w == needle);
        assert!(has(b"replication\0true\0") && has(b"database\0replication\0"));
        assert!(has(b"application_name\0walreceiver\0"));
        if let Some(pw) = password {
            s.write_all(&msg(b'R', &3i32.to_be_bytes())).ok()?;
            let (tag, body) = read_msg(&mut s)?;
            assert_eq!((tag, body), (b'p', format!("{pw}\0").into_bytes()));
        }
        let mut hello = msg(b'R', &0i32.to_be_bytes());
        hello.extend(msg(b'S', b"server_version\x0015.0\0"));
        hello.extend(msg(b'Z', b"I"));
        s.write_all(&hello).ok()?;
        let (tag, q) = read_msg(&mut s)?;
        assert_eq!((tag, q.as_slice()), (b'Q', &b"IDENTIFY_SYSTEM\0"[..]));
        s.write_all(&identify_reply(sysid)).ok()?;
        let (tag, q) = read_msg(&mut s)?;
        let want = b"START_REPLICATION PHYSICAL 0/1000000 TIMELINE 1\0";
        assert_eq!((tag, q.as_slice()), (b'Q', &want[..]));
        let mut copy = msg(b'W', &[0, 0, 0]);
        copy.extend(xlog(0x100_0000, b"hello"));
        copy.extend(xlog(0x100_0005, b"world!"));
        let mut k = vec![b'k'];
        k.extend_from_slice(&0x100_000Bu64.to_be_bytes());
        k.extend_from_slice(&pg_now().to_be_bytes());
        k.push(1);
        copy.extend(msg(b'd', &k));
        s.write_all(&copy).ok()?;
        while let Some((tag, body)) = read_msg(&mut s) {
            if tag == b'd' && body.first() == Some(&b'r') && body.len() == 34 {
                let at = |i: usize| {
                    let mut b = [0u8; 8];
                    b.copy_from_slice(&body[i..i + 8]);
                    Lsn(u64::from_be_bytes(b))
                };
                let _ = tx.send((at(1), at(9), at(17)));
            }
            if tag == b'X' {
                break;
            }
        }
        Some(())
    }

    /// A receiver running against a fake primary.
    struct Harness {
        sink: Arc<TestSink>,
        stop: watch::Sender<bool>,
        task: tokio::task::JoinHandle<()>,
        rx: mpsc::Receiver<(Lsn, Lsn, Lsn)>,
        primary: std::thread::JoinHandle<Option<()>>,
    }

    fn start(password: Option<&'static str>, sysid: &'static str) -> Harness {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
        let port = listener.local_addr().expect("addr").port();
        let (tx, rx) = mpsc::channel();
        let primary = std::thread::spawn(move || fake_primary(listener, sysid, password, tx));
        let pw = password.map_or(String::new(), |p| format!("password={p}"));
        let mut settings =
            ReceiverSettings::new(ci(&format!("host=127.0.0.1 port={port} user=rep {pw}")));
        settings.retry_interval = Duration::from_secs(30);
        let sink = Arc::new(TestSink::default());
        let dyn_sink: Arc<dyn ReceiverSink> = sink.clone();
        let (stop_tx, stop_rx) = watch::channel(false);
        let task = tokio::spawn(run(settings, dyn_sink, stop_rx));
        Harness {
            sink,
            stop: stop_tx,
            task,
            rx,
            primary,
        }
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn streams_from_a_fake_primary() {
        let Harness {
            sink,
            stop,
            task,
            rx,
            primary,
        } = start(None, "7000000000000000001");
        let end = Lsn(0x100_000B);
        let got = tokio::task::spawn_blocking(move || loop {
            let r = rx.recv_timeout(Duration::from_secs(10)).ok()?;
            if r.1 == end {
                return Some(r);
            }
        })
        .await
        .expect("join");
        let (write, flush, apply) = got.expect("a status update with flush at the end");
        assert_eq!((write, flush, apply), (end, end, START));
        let writes = sink.writes.lock().unwrap().clone();
        assert_eq!(
            writes,
            vec![
                (START, b"hello".to_vec()),
                (Lsn(0x100_0005), b"world!".to_vec())
            ]
        );
        let logs = sink.logs.lock().unwrap().clone();
        assert!(
            logs.contains(&"started streaming WAL from primary at 0/1000000 on timeline 1".into()),
            "{logs:?}"
        );
        stop.send(true).expect("send stop");
        tokio::time::timeout(Duration::from_secs(5), task)
            .await
            .expect("run ends on stop")
            .expect("no panic");
        assert_eq!(primary.join().expect("primary"), Some(()));
        let states = sink.states.lock().unwrap().clone();
        assert!(states.contains(&"streaming"), "{states:?}");
        assert_eq!(states.last(), Some(&"stopping"));
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn refuses_another_systems_primary() {
        let Harness {
            sink,
            stop,
            task,
            primary,
            ..
        } = start(Some("sekrit"), "42");
        let deadline = Instant::now() + Duration::from_secs(10);
        while !sink.states.lock().unwrap().contains(&"waiting") {
            assert!(Instant::now() < deadline, "receiver never waited");
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        let logs = sink.logs.lock().unwrap().clone();
        assert_eq!(
            logs,
            vec![
                "FATAL:  database system identifier differs between the primary and standby"
                    .to_string(),
                format!(
                    "DETAIL:  The primary's identifier is 42, the standby's identifier is {SYSID}."
                ),
            ]
        );
        assert!(sink.writes.lock().unwrap().is_empty());
        stop.send(true).expect("send stop");
        tokio::time::timeout(Duration::from_secs(5), task)
            .await
            .expect("run ends on stop while waiting")
            .expect("no panic");
        assert_eq!(primary.join().expect("primary"), None);
    }
}
