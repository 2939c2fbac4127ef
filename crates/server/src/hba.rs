//! Host-based authentication: `pg_hba.conf` as PostgreSQL 15 reads it (`hba.c`), and
//! the choice of a line for a connection.
//!
//! Entry points: [`Hba::parse`] (the file's text to rules, or the errors of its bad
//! lines), [`Hba::find`] (the first line matching a connection), [`HbaLine`] (what
//! the startup handler does with it, `pg::auth`), [`DEFAULT_FILE`] (what `strata
//! init` writes).
//!
//! A line is `type database user [address [mask]] method [name=value ...]`:
//!
//! | field | accepted |
//! |-------|----------|
//! | type | `local` (never matches: Strata has no Unix socket), `host`, `hostssl`, `hostnossl`, `hostgssenc` (never matches: no GSSAPI), `hostnogssenc` |
//! | database | `all`, `sameuser`, `samerole` (`samegroup`), `replication`, names; comma lists; `"quoted"` names are never keywords |
//! | user | `all`, names, `+group` (members of role `group`: [`Client::member`]) |
//! | address | `all`, `a.b.c.d/n`, IPv6 `x::y/n`, or an address and a mask in the next field |
//! | method | `trust`, `reject`, `scram-sha-256`, `md5`, `password`, `cert` |
//! | options | `clientcert=verify-ca` / `verify-full` (on `hostssl` lines) |
//!
//! Rules (cited as "hba rule N"):
//! 1. Every line is checked when the file is read; a bad line is an error naming its
//!    line number (PostgreSQL's message, SQLSTATE F0000), and a file with any bad
//!    line is refused whole: at start-up the server does not start (`could not load
//!    pg_hba.conf`), at reload the old rules stay (`pg_hba.conf was not reloaded`).
//! 2. What Strata cannot honour is refused, never ignored: host names, `samehost`,
//!    `samenet`, `@file` inclusions, the methods Strata does not have (`ident`,
//!    `peer`, `ldap`, ...) and every option but `clientcert`.
//! 3. The first line whose type, database, user and address match the connection
//!    decides; when none does the connection is refused (28000, `no pg_hba.conf
//!    entry for ...`).
//! 4. A physical replication connection (`replication=true`) matches only the
//!    `replication` keyword in the database column; any other connection never does.
//! 5. Keywords and names are case-sensitive, as in PostgreSQL; a quoted token is a
//!    name even when it spells a keyword.
//! 6. Parsing is total: any text gives rules or errors, never a panic, and its cost
//!    is linear in the text's length ([`MAX_FILE_BYTES`] bounds it).

use std::net::IpAddr;

/// The largest `pg_hba.conf` read (a bound on start-up and reload work: rule 6).
pub const MAX_FILE_BYTES: usize = 10 << 20;

/// The file `strata init` writes when no password is set: loopback connections are
/// trusted, every other address must authenticate with SCRAM-SHA-256.
pub const DEFAULT_FILE: &str = r#"# PostgreSQL Client Authentication Configuration File
# ===================================================
#
# Refer to the "Client Authentication" section in the PostgreSQL
# documentation for a complete description of this file.  A short
# synopsis follows.
#
# This file controls: which hosts are allowed to connect, how clients
# are authenticated, which PostgreSQL user names they can use, which
# databases they can access.  Records take one of these forms:
#
# local         DATABASE  USER  METHOD  [OPTIONS]
# host          DATABASE  USER  ADDRESS  METHOD  [OPTIONS]
# hostssl       DATABASE  USER  ADDRESS  METHOD  [OPTIONS]
# hostnossl     DATABASE  USER  ADDRESS  METHOD  [OPTIONS]
#
# (The uppercase items must be replaced by actual values.)
#
# The first field is the connection type: "local" is a Unix-domain
# socket (Strata has none: such lines never match), "host" is a TCP/IP
# socket, "hostssl" is a TCP/IP socket encrypted with SSL, "hostnossl"
# is a TCP/IP socket that is not encrypted.
#
# DATABASE can be "all", "sameuser", "samerole", "replication", a
# database name, or a comma-separated list thereof.  The "all" keyword
# does not match "replication".  Access to replication must be enabled
# in a separate record (see example below).
#
# USER can be "all", a user name, a group name prefixed with "+", or a
# comma-separated list thereof.
#
# ADDRESS specifies the set of hosts the record matches: an IP address
# with a CIDR mask (an integer between 0 and 32 (IPv4) or 128 (IPv6)
# inclusive), or an IP address and a separate netmask in the next
# field.  Host names, "samehost" and "samenet" are not supported by
# Strata.
#
# METHOD can be "trust", "reject", "md5", "password", "scram-sha-256"
# or "cert".  Note that "password" sends passwords in clear text; "md5"
# is treated as "scram-sha-256" (Strata stores SCRAM verifiers only).
#
# OPTIONS: "clientcert=verify-ca" or "clientcert=verify-full" on
# "hostssl" records.
#
# This file is read on server startup and when the server receives a
# SIGHUP signal or SELECT pg_reload_conf() runs.  A file with an error
# is not loaded: the server does not start, or a reload keeps the old
# rules.

# TYPE  DATABASE        USER            ADDRESS                 METHOD

# IPv4 local connections:
host    all             all             127.0.0.1/32            @LOCAL@
# IPv6 local connections:
host    all             all             ::1/128                 @LOCAL@
# Allow replication connections from localhost, by a user with the
# replication privilege.
host    replication     all             127.0.0.1/32            @LOCAL@
host    replication     all             ::1/128                 @LOCAL@
# Every other address must authenticate.
host    all             all             0.0.0.0/0               scram-sha-256
host    all             all             ::/0                    scram-sha-256
host    replication     all             0.0.0.0/0               scram-sha-256
host    replication     all             ::/0                    scram-sha-256
"#;

/// The default file, with `local_method` for loopback connections (`trust`, or
/// `scram-sha-256` when `strata init --pwfile` set a password).
pub fn default_file(local_method: &str) -> String {
    DEFAULT_FILE.replace("@LOCAL@", local_method)
}

/// A bad line: PostgreSQL's message, and the line it is on (rule 1).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct HbaError {
    /// 1-based line number.
    pub line: usize,
    pub message: String,
    pub hint: Option<String>,
}

impl HbaError {
    /// The log lines PostgreSQL writes for it: the message, then CONTEXT.
    pub fn log_text(&self, file: &str) -> String {
        let hint = self
            .hint
            .as_ref()
            .map(|h| format!("\nHINT:  {h}"))
            .unwrap_or_default();
        format!(
            "LOG:  F0000: {}{hint}\nCONTEXT:  line {} of configuration file \"{file}\"",
            self.message, self.line
        )
    }
}

/// The connection types of the first column.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ConnType {
    Local,
    Host,
    HostSsl,
    HostNoSsl,
    HostGssEnc,
    HostNoGssEnc,
}

/// The authentication methods Strata has.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Method {
    Trust,
    Reject,
    /// `scram-sha-256`, and `md5` (PostgreSQL runs SCRAM for `md5` when the stored
    /// password is a SCRAM verifier; Strata stores nothing else).
    Scram,
    /// `password`: the password in clear text, checked against the SCRAM verifier.
    Password,
    /// `cert`: the client certificate's CN must be the user name.
    Cert,
}

/// The `clientcert` option: what a line asks of the client certificate.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ClientCert {
    None,
    /// A certificate that the CA of `ssl_ca_file` signed.
    VerifyCa,
    /// That, and its CN is the user name (always so for `cert`).
    VerifyFull,
}

/// A database or user token: a keyword, unless it was quoted (rule 5).
#[derive(Clone, Debug, PartialEq, Eq)]
struct Token {
    text: String,
    quoted: bool,
}

impl Token {
    fn is(&self, keyword: &str) -> bool {
        !self.quoted && self.text == keyword
    }
}

/// The address column.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Addr {
    /// `local` lines have none.
    None,
    All,
    /// An address and mask, both in the same family; IPv4 as the low 32 bits.
    Net {
        v6: bool,
        ip: u128,
        mask: u128,
    },
}

/// One rule.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct HbaLine {
    /// 1-based line number in the file.
    pub line: usize,
    /// The line as written (for `Connection matched pg_hba.conf line N: "..."`).
    pub raw: String,
    pub conn_type: ConnType,
    databases: Vec<Token>,
    users: Vec<Token>,
    addr: Addr,
    pub method: Method,
    pub clientcert: ClientCert,
}

impl HbaLine {
    /// PostgreSQL's log DETAIL for a failure under this line.
    pub fn matched_detail(&self) -> String {
        format!(
            "Connection matched pg_hba.conf line {}: \"{}\"",
            self.line, self.raw
        )
    }
}

/// The rules of one `pg_hba.conf`, in file order.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Hba {
    pub lines: Vec<HbaLine>,
    /// Lines that are valid but can never match (PostgreSQL's warnings, e.g. a
    /// `hostssl` line with `ssl = off`), as log text.
    pub warnings: Vec<String>,
}

/// A connection as `pg_hba.conf` sees it.
#[derive(Clone, Copy)]
pub struct Client<'a> {
    pub addr: IpAddr,
    pub ssl: bool,
    pub user: &'a str,
    pub database: &'a str,
    /// A physical replication connection (rule 4).
    pub replication: bool,
    /// Whether a role is a member of a group (`+group`, `samerole`): the role
    /// catalog's answer (`pg::auth::role_is_member`).
    pub member: &'a dyn Fn(&str, &str) -> bool,
}

impl Hba {
    /// Parses the text of `file` (rules 1, 2 and 6); `ssl` is the `ssl` setting
    /// (for PostgreSQL's warning about `hostssl` lines that cannot match).
    pub fn parse(text: &str, file: &str, ssl: bool) -> Result<Hba, Vec<HbaError>> {
        let mut hba = Hba::default();
        let mut errors = Vec::new();
        if text.len() > MAX_FILE_BYTES {
            errors.push(HbaError {
                line: 1,
                message: format!("file \"{file}\" is too large (over {MAX_FILE_BYTES} bytes)"),
                hint: None,
            });
            return Err(errors);
        }
        for (i, raw) in text.lines().enumerate() {
            let n = i + 1;
            match parse_line(raw, n) {
                Ok(None) => {}
                Ok(Some(line)) => {
                    if line.conn_type == ConnType::HostSsl && !ssl {
                        hba.warnings.push(format!(
                            "LOG:  F0000: hostssl record cannot match because SSL is disabled\nHINT:  Set ssl = on in strata.conf.\nCONTEXT:  line {n} of configuration file \"{file}\""
                        ));
                    }
                    hba.lines.push(line);
                }
                Err((message, hint)) => errors.push(HbaError {
                    line: n,
                    message,
                    hint,
                }),
            }
        }
        if errors.is_empty() {
            Ok(hba)
        } else {
            Err(errors)
        }
    }

    /// The first line matching `c` (rule 3). O(lines).
    pub fn find(&self, c: &Client<'_>) -> Option<&HbaLine> {
        self.lines.iter().find(|l| matches(l, c))
    }
}

type LineError = (String, Option<String>);

fn err(message: impl Into<String>) -> LineError {
    (message.into(), None)
}

/// Splits a line into fields, each a list of tokens (PostgreSQL's `next_token` and
/// `next_field_expand`): whitespace separates fields, an unquoted comma continues a
/// list, `#` outside quotes starts a comment, `""` inside quotes is a quote.
fn fields(raw: &str) -> Result<Vec<Vec<Token>>, LineError> {
    let mut out: Vec<Vec<Token>> = Vec::new();
    let mut chars = raw.chars().peekable();
    let mut continuing = false;
    loop {
        while chars.peek().is_some_and(|c| c.is_whitespace() || *c == ',') {
            chars.next();
        }
        let Some(&first) = chars.peek() else { break };
        if first == '#' {
            break;
        }
        let (mut text, mut quoted, mut in_quote, mut comma) = (String::new(), false, false, false);
        while let Some(c) = chars.next() {
            match c {
                '"' if in_quote && chars.peek() == Some(&'"') => {
                    chars.next();
                    text.push('"');
                }
                '"' => {
                    if text.is_empty() && !in_quote {
                        quoted = true;
                    }
                    in_quote = !in_quote;
                }
                ',' if !in_quote => {
                    comma = true;
                    break;
                }
                '#' if !in_quote => {
                    // A comment ends the line, the token before it included.
                    while chars.next().is_some() {}
                    break;
                }
                c if c.is_whitespace() && !in_quote => break,
                c => text.push(c),
            }
        }
        if in_quote {
            return Err(err("unterminated quoted string"));
        }
        if text.starts_with('@') && !quoted {
            return Err(err(format!(
                "file inclusion \"{text}\" is not supported by Strata"
            )));
        }
        let token = Token { text, quoted };
        match out.last_mut() {
            Some(list) if continuing => list.push(token),
            _ => out.push(vec![token]),
        }
        continuing = comma;
    }
    Ok(out)
}

fn conn_type(field: &[Token]) -> Result<ConnType, LineError> {
    if field.len() > 1 {
        return Err(err("multiple values specified for connection type"));
    }
    let t = &field[0];
    Ok(match t.text.as_str() {
        "local" => ConnType::Local,
        "host" => ConnType::Host,
        "hostssl" => ConnType::HostSsl,
        "hostnossl" => ConnType::HostNoSsl,
        "hostgssenc" => ConnType::HostGssEnc,
        "hostnogssenc" => ConnType::HostNoGssEnc,
        other => return Err(err(format!("invalid connection type \"{other}\""))),
    })
}

/// One line: `Ok(None)` for a blank or comment line.
fn parse_line(raw: &str, n: usize) -> Result<Option<HbaLine>, LineError> {
    let fields = fields(raw)?;
    let mut it = fields.into_iter();
    let Some(first) = it.next() else {
        return Ok(None);
    };
    let conn_type = conn_type(&first)?;
    let databases = it
        .next()
        .ok_or_else(|| err("end-of-line before database specification"))?;
    let users = it
        .next()
        .ok_or_else(|| err("end-of-line before role specification"))?;
    let addr = if conn_type == ConnType::Local {
        Addr::None
    } else {
        let a = it
            .next()
            .ok_or_else(|| err("end-of-line before IP address specification"))?;
        address(&a, &mut it)?
    };
    let m = it
        .next()
        .ok_or_else(|| err("end-of-line before authentication method"))?;
    let method = method(&m, conn_type)?;
    let mut clientcert = if method == Method::Cert {
        ClientCert::VerifyFull
    } else {
        ClientCert::None
    };
    for opt in it {
        for t in opt {
            option(&t.text, conn_type, method, &mut clientcert)?;
        }
    }
    Ok(Some(HbaLine {
        line: n,
        raw: raw.trim().to_string(),
        conn_type,
        databases,
        users,
        addr,
        method,
        clientcert,
    }))
}

/// The address column, and the mask column after it when the address has no
/// `/n` (rule 2: names are refused).
fn address(
    field: &[Token],
    rest: &mut impl Iterator<Item = Vec<Token>>,
) -> Result<Addr, LineError> {
    if field.len() > 1 {
        return Err(err("multiple values specified for host address"));
    }
    let t = &field[0];
    let text = t.text.as_str();
    match text {
        "all" => return Ok(Addr::All),
        "samehost" | "samenet" => {
            return Err(err(format!(
                "\"{text}\" is not supported by Strata: give the addresses as a CIDR range"
            )))
        }
        _ => {}
    }
    let (ip_text, bits) = match text.split_once('/') {
        Some((ip, bits)) => (ip, Some(bits)),
        None => (text, None),
    };
    let ip: IpAddr = ip_text.parse().map_err(|_| {
        if ip_text.chars().any(|c| c.is_ascii_alphabetic()) && !ip_text.contains(':') {
            err(format!(
                "host name \"{text}\" is not supported by Strata: give an IP address"
            ))
        } else {
            err(format!("invalid IP address \"{ip_text}\""))
        }
    })?;
    let (v6, width) = match ip {
        IpAddr::V4(_) => (false, 32u32),
        IpAddr::V6(_) => (true, 128u32),
    };
    let mask = match bits {
        Some(b) => {
            let n: u32 = b
                .parse()
                .ok()
                .filter(|n| *n <= width && !b.starts_with('+'))
                .ok_or_else(|| err(format!("invalid CIDR mask in address \"{text}\"")))?;
            prefix_mask(n, width)
        }
        None => {
            let Some(m) = rest.next() else {
                return Err((
                    "end-of-line before netmask specification".into(),
                    Some(
                        "Specify an address range in CIDR notation, or provide a separate netmask."
                            .into(),
                    ),
                ));
            };
            netmask(&m, v6)?
        }
    };
    Ok(Addr::Net {
        v6,
        ip: bits_of(ip) & mask,
        mask,
    })
}

/// A separate netmask column: an address of the same family whose bits are a prefix.
fn netmask(field: &[Token], v6: bool) -> Result<u128, LineError> {
    if field.len() > 1 {
        return Err(err("multiple values specified for netmask"));
    }
    let text = &field[0].text;
    let m: IpAddr = text
        .parse()
        .map_err(|_| err(format!("invalid IP mask \"{text}\"")))?;
    if matches!(m, IpAddr::V6(_)) != v6 {
        return Err(err("IP address and mask do not match"));
    }
    let bits = bits_of(m);
    let width = if v6 { 128 } else { 32 };
    let ones = if v6 {
        bits.leading_ones()
    } else {
        (bits as u32).leading_ones()
    };
    if bits != prefix_mask(ones, width) {
        return Err(err(format!("invalid IP mask \"{text}\"")));
    }
    Ok(bits)
}

/// The `n` leading one bits of a `width`-bit mask.
fn prefix_mask(n: u32, width: u32) -> u128 {
    let all: u128 = if width == 128 {
        u128::MAX
    } else {
        (1u128 << width) - 1
    };
    if n == 0 {
        0
    } else {
        all & !((1u128 << (width - n)) - 1)
    }
}

fn bits_of(ip: IpAddr) -> u128 {
    match ip {
        IpAddr::V4(a) => u128::from(u32::from(a)),
        IpAddr::V6(a) => u128::from(a),
    }
}

fn method(field: &[Token], conn_type: ConnType) -> Result<Method, LineError> {
    if field.len() > 1 {
        return Err(err("multiple values specified for authentication type"));
    }
    let name = field[0].text.as_str();
    let m = match name {
        "trust" => Method::Trust,
        "reject" => Method::Reject,
        "scram-sha-256" | "md5" => Method::Scram,
        "password" => Method::Password,
        "cert" => Method::Cert,
        "ident" | "peer" | "gss" | "sspi" | "pam" | "ldap" | "radius" | "bsd" => {
            return Err(err(format!(
                "invalid authentication method \"{name}\": not supported by Strata"
            )))
        }
        _ => return Err(err(format!("invalid authentication method \"{name}\""))),
    };
    if m == Method::Cert && conn_type != ConnType::HostSsl {
        return Err(err(
            "cert authentication is only supported on hostssl connections",
        ));
    }
    Ok(m)
}

/// One `name=value` option (rule 2: only `clientcert`).
fn option(
    text: &str,
    conn_type: ConnType,
    method: Method,
    clientcert: &mut ClientCert,
) -> Result<(), LineError> {
    let Some((name, value)) = text.split_once('=') else {
        return Err(err(format!(
            "authentication option not in name=value format: {text}"
        )));
    };
    match name {
        "clientcert" => {
            if conn_type != ConnType::HostSsl {
                return Err(err(
                    "clientcert can only be configured for \"hostssl\" rows",
                ));
            }
            *clientcert = match value {
                "verify-full" => ClientCert::VerifyFull,
                "verify-ca" if method == Method::Cert => return Err(err(
                    "clientcert only accepts \"verify-full\" when using \"cert\" authentication",
                )),
                "verify-ca" => ClientCert::VerifyCa,
                _ => return Err(err(format!("invalid value for clientcert: \"{value}\""))),
            };
            Ok(())
        }
        "map"
        | "include_realm"
        | "krb_realm"
        | "compat_realm"
        | "upn_username"
        | "pamservice"
        | "pam_use_hostname"
        | "ldapurl"
        | "ldaptls"
        | "ldapscheme"
        | "ldapserver"
        | "ldapport"
        | "ldapbinddn"
        | "ldapbindpasswd"
        | "ldapsearchattribute"
        | "ldapsearchfilter"
        | "ldapbasedn"
        | "ldapprefix"
        | "ldapsuffix"
        | "radiusservers"
        | "radiussecrets"
        | "radiusidentifiers"
        | "radiusports" => Err(err(format!(
            "authentication option \"{name}\" is not supported by Strata"
        ))),
        _ => Err(err(format!(
            "unrecognized authentication option name: \"{name}\""
        ))),
    }
}

/// Whether line `l` matches connection `c` (rules 3-5).
fn matches(l: &HbaLine, c: &Client<'_>) -> bool {
    let type_ok = match l.conn_type {
        ConnType::Local | ConnType::HostGssEnc => false,
        ConnType::Host | ConnType::HostNoGssEnc => true,
        ConnType::HostSsl => c.ssl,
        ConnType::HostNoSsl => !c.ssl,
    };
    type_ok && addr_matches(l.addr, c.addr) && db_matches(l, c) && user_matches(l, c)
}

fn addr_matches(a: Addr, client: IpAddr) -> bool {
    // An IPv4 client seen through an IPv6 socket matches IPv4 lines.
    let client = match client {
        IpAddr::V6(v6) => v6.to_ipv4_mapped().map_or(client, IpAddr::V4),
        v4 => v4,
    };
    match a {
        Addr::None => false,
        Addr::All => true,
        Addr::Net { v6, ip, mask } => {
            matches!(client, IpAddr::V6(_)) == v6 && bits_of(client) & mask == ip
        }
    }
}

fn db_matches(l: &HbaLine, c: &Client<'_>) -> bool {
    l.databases.iter().any(|t| {
        if c.replication {
            return t.is("replication");
        }
        if t.is("all") {
            true
        } else if t.is("sameuser") {
            c.database == c.user
        } else if t.is("samerole") || t.is("samegroup") {
            (c.member)(c.user, c.database)
        } else if t.is("replication") {
            false
        } else {
            t.text == c.database
        }
    })
}

fn user_matches(l: &HbaLine, c: &Client<'_>) -> bool {
    l.users.iter().any(|t| {
        if t.is("all") {
            return true;
        }
        match t.text.strip_prefix('+') {
            Some(group) if !t.quoted => (c.member)(c.user, group),
            _ => t.text == c.user,
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn same(role: &str, group: &str) -> bool {
        role == group
    }

    fn client<'a>(addr: &str, ssl: bool, user: &'a str, db: &'a str) -> Client<'a> {
        Client {
            addr: addr.parse().expect("address"),
            ssl,
            user,
            database: db,
            replication: false,
            member: &same,
        }
    }

    fn parse(text: &str) -> Hba {
        Hba::parse(text, "pg_hba.conf", true).expect("parses")
    }

    fn error_of(line: &str) -> String {
        let e = Hba::parse(line, "pg_hba.conf", true).expect_err("refused");
        assert_eq!(e.len(), 1, "{e:?}");
        assert_eq!(e[0].line, 1);
        e[0].message.clone()
    }

    #[test]
    fn first_matching_line_decides() {
        let h = parse(
            "# comment\n\nlocal all all trust\nhost all bob 127.0.0.1/32 reject\nhostssl all all 127.0.0.1/32 cert\nhost db1,\"db 2\" all 10.0.0.0 255.0.0.0 password # c\nhost all all 127.0.0.0/8 scram-sha-256\n",
        );
        assert_eq!(h.lines.len(), 5);
        let find = |c: Client<'_>| h.find(&c).map(|l| (l.line, l.method));
        assert_eq!(
            find(client("127.0.0.1", false, "bob", "x")),
            Some((4, Method::Reject))
        );
        assert_eq!(
            find(client("127.0.0.1", true, "al", "x")),
            Some((5, Method::Cert))
        );
        assert_eq!(
            find(client("127.0.0.9", false, "al", "x")),
            Some((7, Method::Scram))
        );
        assert_eq!(
            find(client("10.1.2.3", false, "al", "db 2")),
            Some((6, Method::Password))
        );
        assert_eq!(find(client("10.1.2.3", false, "al", "db3")), None);
        assert_eq!(
            find(client("::ffff:127.0.0.1", false, "al", "x")),
            Some((7, Method::Scram))
        );
        assert_eq!(
            h.lines[3].raw,
            "host db1,\"db 2\" all 10.0.0.0 255.0.0.0 password # c"
        );
    }

    #[test]
    fn keywords_replication_and_groups() {
        let h = parse(
            "host replication rep 127.0.0.1/32 trust\nhost \"all\" all ::1/128 trust\nhost sameuser +admins ::/0 md5\nhost samerole all ::/0 trust\n",
        );
        let mut c = client("127.0.0.1", false, "rep", "postgres");
        assert!(
            h.find(&c).is_none(),
            "replication matches only replication connections"
        );
        c.replication = true;
        assert_eq!(h.find(&c).map(|l| l.line), Some(1));
        assert!(
            h.find(&client("::1", false, "u", "x")).is_none(),
            "\"all\" is a name"
        );
        assert_eq!(
            h.find(&client("::1", false, "u", "all")).map(|l| l.line),
            Some(2)
        );
        assert_eq!(
            h.find(&client("::2", false, "admins", "admins"))
                .map(|l| l.line),
            Some(3)
        );
        assert!(h.find(&client("::2", false, "u", "admins")).is_none());
    }

    #[test]
    fn bad_lines_are_refused_with_postgres_words() {
        for (line, want) in [
            ("foo all all trust", "invalid connection type \"foo\""),
            ("host all", "end-of-line before role specification"),
            (
                "host all all",
                "end-of-line before IP address specification",
            ),
            (
                "host all all 1.2.3.4/33 trust",
                "invalid CIDR mask in address \"1.2.3.4/33\"",
            ),
            ("host all all 1.2.3.4 trust", "invalid IP mask \"trust\""),
            (
                "host all all 1.2.3.4",
                "end-of-line before netmask specification",
            ),
            (
                "host all all 1.2.3.4/32",
                "end-of-line before authentication method",
            ),
            (
                "host all all all bogus",
                "invalid authentication method \"bogus\"",
            ),
            (
                "host all all all cert",
                "cert authentication is only supported on hostssl connections",
            ),
            (
                "host all all all trust clientcert=verify-ca",
                "clientcert can only be configured for \"hostssl\" rows",
            ),
            (
                "host all all all trust foo=bar",
                "unrecognized authentication option name: \"foo\"",
            ),
            (
                "host all all samehost trust",
                "\"samehost\" is not supported by Strata: give the addresses as a CIDR range",
            ),
            (
                "host all all db.example.com trust",
                "host name \"db.example.com\" is not supported by Strata: give an IP address",
            ),
            (
                "host all all all ident",
                "invalid authentication method \"ident\": not supported by Strata",
            ),
            (
                "host all @admins all trust",
                "file inclusion \"@admins\" is not supported by Strata",
            ),
            (
                "host all all 10.0.0.0 255.0.255.0 trust",
                "invalid IP mask \"255.0.255.0\"",
            ),
            ("host \"all all all trust", "unterminated quoted string"),
        ] {
            assert_eq!(error_of(line), want, "{line}");
        }
        let e = Hba::parse("host all all all trust\n\nfoo\nbar", "f", true).expect_err("bad");
        assert_eq!(e.iter().map(|e| e.line).collect::<Vec<_>>(), vec![3, 4]);
        let w = Hba::parse("hostssl all all all trust", "f", false).expect("parses");
        assert_eq!(w.warnings.len(), 1);
    }

    /// Fuzz: random and mutated lines never panic, and every refused line is an
    /// error that names a line of the input (hba rule 1, rule 6).
    fn check_total(text: &str) {
        match Hba::parse(text, "pg_hba.conf", true) {
            Ok(h) => {
                for l in &h.lines {
                    assert!(l.line >= 1 && l.line <= text.lines().count());
                }
            }
            Err(errors) => {
                assert!(!errors.is_empty());
                for e in errors {
                    assert!(
                        e.line >= 1 && e.line <= text.lines().count().max(1),
                        "{e:?}"
                    );
                    assert!(!e.message.is_empty());
                }
            }
        }
    }

    const SEEDS: &[&str] = &[
        "host all all 127.0.0.1/32 trust",
        "hostssl db1,\"db 2\" +grp,u ::1/128 cert clientcert=verify-full",
        "host replication all 10.0.0.0 255.0.0.0 scram-sha-256 # x",
        "local all all md5",
        "hostnossl \"a\"\"b\" all all password",
    ];

    proptest! {
        #[test]
        fn random_lines_never_panic(text in "[ -~\t\n\"#,/+@]{0,200}") {
            check_total(&text);
        }

        #[test]
        fn mutated_lines_never_panic(
            seed in 0..SEEDS.len(),
            edits in proptest::collection::vec((0usize..80, any::<char>(), 0u8..3), 1..6),
        ) {
            let mut chars: Vec<char> = SEEDS[seed].chars().collect();
            for (at, c, op) in edits {
                let at = at % (chars.len() + 1);
                match op {
                    0 => chars.insert(at, c),
                    1 if at < chars.len() => { chars.remove(at); }
                    _ if at < chars.len() => chars[at] = c,
                    _ => chars.push(c),
                }
            }
            let line: String = chars.into_iter().collect();
            check_total(&line);
            check_total(&format!("host all all all trust\n{line}\n{line}"));
        }
    }
}
