//! Roles as SQL sees them: the statements of roles and privileges (CREATE / ALTER /
//! DROP ROLE, GRANT and REVOKE of roles and of privileges, ALTER ... OWNER TO,
//! REASSIGN OWNED, DROP OWNED, SET ROLE, SET SESSION AUTHORIZATION) parsed into
//! [`AccessStmt`], the role statements run against the engine's role catalog
//! (engine roles rules), and passwords' SCRAM-SHA-256 verifiers in PostgreSQL's
//! `rolpassword` form. Object privileges are the `privileges` module's.
//!
//! Entry points: [`parse`] (from the statement parser), [`run`] (the session's
//! dispatcher), [`format_verifier`] / [`parse_verifier`] (authentication).
//!
//! Rules (cited as "roles rule N"):
//! 1. Roles live in the catalog (`pg_authid`, WAL-logged): a password, a new role or
//!    a membership commits or rolls back with its transaction, survives crashes and
//!    reaches standbys by replay. Only the verifier is stored, never the password.
//! 2. Who may do what is PostgreSQL 15's: a superuser anything; CREATEROLE creates,
//!    alters and drops non-superuser roles and grants their membership; a role may
//!    change its own password; the ADMIN OPTION on a role grants it. Refusals are
//!    42501 with PostgreSQL's words.
//! 3. The bootstrap superuser and the predefined roles cannot be dropped or renamed;
//!    neither can the session's own user.

use crate::session::{Notices, Output, Session};
use crate::{SqlError, SqlResult, Toks};
use sqlparser::tokenizer::Token;
use strata_engine::{Membership, RoleEntry, Txn};
use strata_types::Oid;

pub use strata_engine::BOOTSTRAP_SUPERUSER;

/// A role's SCRAM-SHA-256 verifier (PostgreSQL's `rolpassword`, split).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Verifier {
    pub iterations: usize,
    pub salt: Vec<u8>,
    pub stored_key: Vec<u8>,
    pub server_key: Vec<u8>,
}

/// Derives a verifier (with a fresh salt) from a password: the protocol's SCRAM,
/// given to the SQL layer by the server.
pub type Derive = fn(&str) -> Result<Verifier, String>;

/// A verifier in PostgreSQL's text form:
/// `SCRAM-SHA-256$<iterations>:<salt>$<StoredKey>:<ServerKey>` (base64).
pub fn format_verifier(v: &Verifier) -> String {
    use base64::Engine as _;
    let b = |x: &[u8]| base64::engine::general_purpose::STANDARD.encode(x);
    format!(
        "SCRAM-SHA-256${}:{}${}:{}",
        v.iterations,
        b(&v.salt),
        b(&v.stored_key),
        b(&v.server_key)
    )
}

/// The verifier of a `rolpassword` text; None if it is not one.
pub fn parse_verifier(s: &str) -> Option<Verifier> {
    use base64::Engine as _;
    let d = |x: &str| base64::engine::general_purpose::STANDARD.decode(x).ok();
    let rest = s.strip_prefix("SCRAM-SHA-256$")?;
    let (head, keys) = rest.split_once('$')?;
    let (iter, salt) = head.split_once(':')?;
    let (stored, server) = keys.split_once(':')?;
    let v = Verifier {
        iterations: iter.parse().ok().filter(|n| *n > 0)?,
        salt: d(salt)?,
        stored_key: d(stored)?,
        server_key: d(server)?,
    };
    (v.stored_key.len() == 32 && v.server_key.len() == 32).then_some(v)
}

/// A role as a statement names it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum RoleSpec {
    Name(String),
    CurrentUser,
    SessionUser,
    /// PUBLIC, as a grantee.
    Public,
}

/// One option of CREATE / ALTER ROLE.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum RoleOpt {
    Superuser(bool),
    CreateDb(bool),
    CreateRole(bool),
    Inherit(bool),
    Login(bool),
    Replication(bool),
    BypassRls(bool),
    ConnLimit(i32),
    /// PASSWORD 'p' or PASSWORD NULL.
    Password(Option<String>),
    ValidUntil(String),
    /// IN ROLE / IN GROUP: the new role becomes a member of these.
    InRole(Vec<String>),
    /// ROLE / USER: these become members of the new role.
    Members(Vec<String>),
    /// ADMIN: these become members WITH ADMIN OPTION.
    Admins(Vec<String>),
}

/// The object kinds privileges and owners concern.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ObjKind {
    Table,
    /// A view: a table's privileges, named "view" in messages.
    View,
    Sequence,
    Database,
    Tablespace,
    Schema,
}

impl ObjKind {
    /// PostgreSQL's word for the kind in messages.
    pub fn word(self) -> &'static str {
        match self {
            ObjKind::Table => "table",
            ObjKind::View => "view",
            ObjKind::Sequence => "sequence",
            ObjKind::Database => "database",
            ObjKind::Tablespace => "tablespace",
            ObjKind::Schema => "schema",
        }
    }
}

/// Privileges as GRANT names them, each with its column list.
pub type PrivList = Vec<(String, Option<Vec<String>>)>;

/// What GRANT or REVOKE of privileges names.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PrivStmt {
    /// The privileges with their column lists; None: ALL [PRIVILEGES].
    pub privs: Option<PrivList>,
    pub kind: ObjKind,
    /// The objects; with `all_in_schema`, the schemas whose tables or sequences.
    pub objects: Vec<String>,
    pub all_in_schema: bool,
    pub grantees: Vec<RoleSpec>,
    /// WITH GRANT OPTION (GRANT), GRANT OPTION FOR (REVOKE).
    pub grant_option: bool,
    pub cascade: bool,
}

/// The statements of roles and privileges.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum AccessStmt {
    CreateRole {
        name: String,
        /// CREATE USER: LOGIN unless said otherwise.
        user: bool,
        options: Vec<RoleOpt>,
    },
    AlterRole {
        role: RoleSpec,
        options: Vec<RoleOpt>,
    },
    RenameRole {
        name: String,
        new_name: String,
    },
    DropRole {
        names: Vec<String>,
        if_exists: bool,
    },
    GrantRole {
        roles: Vec<String>,
        grantees: Vec<RoleSpec>,
        admin: bool,
    },
    RevokeRole {
        roles: Vec<String>,
        grantees: Vec<RoleSpec>,
        admin_only: bool,
    },
    Grant(PrivStmt),
    Revoke(PrivStmt),
    AlterOwner {
        kind: ObjKind,
        name: String,
        owner: RoleSpec,
    },
    ReassignOwned {
        from: Vec<RoleSpec>,
        to: RoleSpec,
    },
    DropOwned {
        roles: Vec<RoleSpec>,
        cascade: bool,
    },
    /// SET ROLE name | NONE (None), RESET ROLE.
    SetRole(Option<RoleSpec>),
    /// SET SESSION AUTHORIZATION name | DEFAULT (None).
    SetSessionAuth(Option<RoleSpec>),
}

impl AccessStmt {
    /// The command tag.
    pub fn verb(&self) -> &'static str {
        match self {
            AccessStmt::CreateRole { .. } => "CREATE ROLE",
            AccessStmt::AlterRole { .. } | AccessStmt::RenameRole { .. } => "ALTER ROLE",
            AccessStmt::DropRole { .. } => "DROP ROLE",
            AccessStmt::GrantRole { .. } => "GRANT ROLE",
            AccessStmt::RevokeRole { .. } => "REVOKE ROLE",
            AccessStmt::Grant(_) => "GRANT",
            AccessStmt::Revoke(_) => "REVOKE",
            AccessStmt::AlterOwner { kind, .. } => match kind {
                ObjKind::Table => "ALTER TABLE",
                ObjKind::View => "ALTER VIEW",
                ObjKind::Sequence => "ALTER SEQUENCE",
                ObjKind::Database => "ALTER DATABASE",
                ObjKind::Tablespace => "ALTER TABLESPACE",
                ObjKind::Schema => "ALTER SCHEMA",
            },
            AccessStmt::ReassignOwned { .. } => "REASSIGN OWNED",
            AccessStmt::DropOwned { .. } => "DROP OWNED",
            AccessStmt::SetRole(_) | AccessStmt::SetSessionAuth(_) => "SET",
        }
    }

    /// Whether it writes (a READ ONLY transaction refuses it); SET ROLE does not.
    pub fn writes(&self) -> bool {
        !matches!(self, AccessStmt::SetRole(_) | AccessStmt::SetSessionAuth(_))
    }
}

// ---- parsing ----

pub(crate) fn role_spec(k: &mut Toks) -> SqlResult<RoleSpec> {
    if k.word("CURRENT_USER") || k.word("CURRENT_ROLE") {
        return Ok(RoleSpec::CurrentUser);
    }
    if k.word("SESSION_USER") {
        return Ok(RoleSpec::SessionUser);
    }
    if k.word("PUBLIC") {
        return Ok(RoleSpec::Public);
    }
    Ok(RoleSpec::Name(k.ident()?))
}

fn list<T>(k: &mut Toks, f: impl Fn(&mut Toks) -> SqlResult<T>) -> SqlResult<Vec<T>> {
    let mut out = vec![f(k)?];
    while k.tok(&Token::Comma) {
        out.push(f(k)?);
    }
    Ok(out)
}

fn names(k: &mut Toks) -> SqlResult<Vec<String>> {
    list(k, |k| k.ident())
}

/// A flag option of CREATE / ALTER ROLE: its keyword, and the option it sets.
type Flag = (&'static str, fn(bool) -> RoleOpt);

/// The flag options of CREATE / ALTER ROLE.
const FLAGS: &[Flag] = &[
    ("SUPERUSER", RoleOpt::Superuser),
    ("CREATEDB", RoleOpt::CreateDb),
    ("CREATEROLE", RoleOpt::CreateRole),
    ("INHERIT", RoleOpt::Inherit),
    ("LOGIN", RoleOpt::Login),
    ("REPLICATION", RoleOpt::Replication),
    ("BYPASSRLS", RoleOpt::BypassRls),
];

/// One option; None at the end of the options.
fn role_option(k: &mut Toks, create: bool) -> SqlResult<Option<RoleOpt>> {
    for (kw, make) in FLAGS {
        if k.word(kw) {
            return Ok(Some(make(true)));
        }
        if k.word(&format!("NO{kw}")) {
            return Ok(Some(make(false)));
        }
    }
    if k.words(&["CONNECTION", "LIMIT"]) {
        let v = k.value()?;
        let n: i32 = v.parse().map_err(|_| k.near())?;
        return Ok(Some(RoleOpt::ConnLimit(n)));
    }
    if k.word("ENCRYPTED") || k.peek_word(0).as_deref() == Some("PASSWORD") {
        k.expect_word("PASSWORD")?;
        let p = if k.word("NULL") {
            None
        } else {
            Some(k.string()?)
        };
        return Ok(Some(RoleOpt::Password(p)));
    }
    if k.word("UNENCRYPTED") {
        return Err(
            SqlError::new("0A000", "UNENCRYPTED PASSWORD is no longer supported")
                .with_hint("Remove UNENCRYPTED to store the password in encrypted form instead."),
        );
    }
    if k.words(&["VALID", "UNTIL"]) {
        return Ok(Some(RoleOpt::ValidUntil(k.string()?)));
    }
    if create {
        if k.words(&["IN", "ROLE"]) || k.words(&["IN", "GROUP"]) {
            return Ok(Some(RoleOpt::InRole(names(k)?)));
        }
        if k.word("ROLE") || k.word("USER") {
            return Ok(Some(RoleOpt::Members(names(k)?)));
        }
        if k.word("ADMIN") {
            return Ok(Some(RoleOpt::Admins(names(k)?)));
        }
        if k.word("SYSID") {
            k.value()?;
            return Err(SqlError::unsupported("SYSID"));
        }
    }
    if k.at_end() {
        return Ok(None);
    }
    Err(k.near())
}

fn role_options(k: &mut Toks, create: bool) -> SqlResult<Vec<RoleOpt>> {
    k.word("WITH");
    let mut out = Vec::new();
    while let Some(o) = role_option(k, create)? {
        out.push(o);
    }
    Ok(out)
}

/// CREATE ROLE | USER | GROUP name [WITH] options (`k` at CREATE).
pub(crate) fn parse_create(k: &mut Toks) -> SqlResult<AccessStmt> {
    k.i += 1;
    let user = k.word("USER");
    if !user && !k.word("GROUP") {
        k.expect_word("ROLE")?;
    }
    let name = k.ident()?;
    let options = role_options(k, true)?;
    Ok(AccessStmt::CreateRole {
        name,
        user,
        options,
    })
}

/// ALTER ROLE | USER | GROUP ... (`k` at ALTER).
pub(crate) fn parse_alter(k: &mut Toks) -> SqlResult<AccessStmt> {
    k.i += 1;
    let group = k.word("GROUP");
    if !group && !k.word("USER") {
        k.expect_word("ROLE")?;
    }
    if k.word("ALL") {
        return Err(SqlError::unsupported("ALTER ROLE ALL"));
    }
    let role = role_spec(k)?;
    if group {
        return parse_alter_group(k, role);
    }
    if k.words(&["RENAME", "TO"]) {
        let RoleSpec::Name(name) = role else {
            return Err(k.near());
        };
        let new_name = k.ident()?;
        k.end()?;
        return Ok(AccessStmt::RenameRole { name, new_name });
    }
    if matches!(k.peek_word(0).as_deref(), Some("SET" | "RESET" | "IN")) {
        return Err(SqlError::unsupported(
            "ALTER ROLE ... SET / RESET (settings per role)",
        ));
    }
    let options = role_options(k, false)?;
    Ok(AccessStmt::AlterRole { role, options })
}

/// ALTER GROUP g ADD | DROP USER a, b: GRANT / REVOKE of g.
fn parse_alter_group(k: &mut Toks, group: RoleSpec) -> SqlResult<AccessStmt> {
    let RoleSpec::Name(g) = group else {
        return Err(k.near());
    };
    let add = k.word("ADD");
    if !add {
        k.expect_word("DROP")?;
    }
    k.expect_word("USER")?;
    let grantees = list(k, role_spec)?;
    k.end()?;
    Ok(if add {
        AccessStmt::GrantRole {
            roles: vec![g],
            grantees,
            admin: false,
        }
    } else {
        AccessStmt::RevokeRole {
            roles: vec![g],
            grantees,
            admin_only: false,
        }
    })
}

/// DROP ROLE | USER | GROUP [IF EXISTS] names (`k` at DROP).
pub(crate) fn parse_drop(k: &mut Toks) -> SqlResult<AccessStmt> {
    k.i += 1;
    if !k.word("USER") && !k.word("GROUP") {
        k.expect_word("ROLE")?;
    }
    let if_exists = k.words(&["IF", "EXISTS"]);
    let names = names(k)?;
    k.end()?;
    Ok(AccessStmt::DropRole { names, if_exists })
}

/// REASSIGN OWNED BY a TO b, DROP OWNED BY a [CASCADE | RESTRICT].
pub(crate) fn parse_owned(k: &mut Toks) -> SqlResult<AccessStmt> {
    let reassign = k.word("REASSIGN");
    if !reassign {
        k.expect_word("DROP")?;
    }
    k.expect_word("OWNED")?;
    k.expect_word("BY")?;
    let roles = list(k, role_spec)?;
    if reassign {
        k.expect_word("TO")?;
        let to = role_spec(k)?;
        k.end()?;
        return Ok(AccessStmt::ReassignOwned { from: roles, to });
    }
    let cascade = k.word("CASCADE");
    if !cascade {
        k.word("RESTRICT");
    }
    k.end()?;
    Ok(AccessStmt::DropOwned { roles, cascade })
}

/// SET ROLE | SET SESSION AUTHORIZATION | RESET ROLE | RESET SESSION
/// AUTHORIZATION (`k` at SET or RESET); None if it is another SET.
pub(crate) fn parse_set_role(k: &mut Toks) -> SqlResult<Option<AccessStmt>> {
    let at = k.i;
    let reset = k.word("RESET");
    if !reset {
        k.i += 1;
        k.word("SESSION");
        k.word("LOCAL");
    }
    let stmt = if k.word("ROLE") {
        let r = if reset || k.word("NONE") {
            None
        } else {
            Some(role_spec(k)?)
        };
        AccessStmt::SetRole(r)
    } else if k.words(&["SESSION", "AUTHORIZATION"]) || k.word("AUTHORIZATION") {
        let r = if reset || k.word("DEFAULT") {
            None
        } else {
            Some(role_spec(k)?)
        };
        AccessStmt::SetSessionAuth(r)
    } else {
        k.i = at;
        return Ok(None);
    };
    k.end()?;
    Ok(Some(stmt))
}

/// GRANT / REVOKE, of roles or of privileges (`k` at GRANT or REVOKE).
pub(crate) fn parse_grant(k: &mut Toks) -> SqlResult<AccessStmt> {
    let grant = k.word("GRANT");
    if !grant {
        k.expect_word("REVOKE")?;
    }
    let option_for = !grant && (k.words(&["GRANT", "OPTION", "FOR"]));
    let admin_for = !grant && !option_for && k.words(&["ADMIN", "OPTION", "FOR"]);
    let privs = parse_privileges(k)?;
    if !k.word("ON") {
        let roles: Vec<String> = match privs {
            Some(p) if p.iter().all(|(_, c)| c.is_none()) => {
                p.into_iter().map(|(n, _)| n.to_lowercase()).collect()
            }
            _ => return Err(k.near()),
        };
        return parse_role_grant(k, grant, roles, admin_for);
    }
    if admin_for {
        return Err(k.near());
    }
    let (kind, all_in_schema, objects) = parse_objects(k)?;
    k.expect_word(if grant { "TO" } else { "FROM" })?;
    let grantees = list(k, role_spec)?;
    let mut grant_option = option_for;
    if grant && k.words(&["WITH", "GRANT", "OPTION"]) {
        grant_option = true;
    }
    granted_by(k)?;
    let cascade = !grant && k.word("CASCADE");
    if !grant && !cascade {
        k.word("RESTRICT");
    }
    k.end()?;
    let p = PrivStmt {
        privs,
        kind,
        objects,
        all_in_schema,
        grantees,
        grant_option,
        cascade,
    };
    Ok(if grant {
        AccessStmt::Grant(p)
    } else {
        AccessStmt::Revoke(p)
    })
}

/// GRANTED BY: PostgreSQL 15 takes only the current user.
fn granted_by(k: &mut Toks) -> SqlResult<()> {
    if k.words(&["GRANTED", "BY"]) && role_spec(k)? != RoleSpec::CurrentUser {
        return Err(SqlError::new("0A000", "grantor must be current user"));
    }
    Ok(())
}

fn parse_role_grant(
    k: &mut Toks,
    grant: bool,
    roles: Vec<String>,
    admin_for: bool,
) -> SqlResult<AccessStmt> {
    k.expect_word(if grant { "TO" } else { "FROM" })?;
    let grantees = list(k, role_spec)?;
    let admin = grant && k.words(&["WITH", "ADMIN", "OPTION"]);
    granted_by(k)?;
    if !grant && !k.word("CASCADE") {
        k.word("RESTRICT");
    }
    k.end()?;
    Ok(if grant {
        AccessStmt::GrantRole {
            roles,
            grantees,
            admin,
        }
    } else {
        AccessStmt::RevokeRole {
            roles,
            grantees,
            admin_only: admin_for,
        }
    })
}

/// The privilege list: ALL [PRIVILEGES] [(cols)] (None), or names with optional
/// column lists (role names, for GRANT role).
fn parse_privileges(k: &mut Toks) -> SqlResult<Option<PrivList>> {
    if k.word("ALL") {
        k.word("PRIVILEGES");
        if k.tok(&Token::LParen) {
            return Err(SqlError::unsupported("ALL PRIVILEGES with a column list"));
        }
        return Ok(None);
    }
    let one = |k: &mut Toks| -> SqlResult<(String, Option<Vec<String>>)> {
        let name = match k.peek() {
            Some(Token::Word(w)) if w.quote_style.is_none() => w.value.to_ascii_uppercase(),
            _ => return Ok((k.ident()?, None)),
        };
        k.i += 1;
        let cols = if k.tok(&Token::LParen) {
            let c = names(k)?;
            if !k.tok(&Token::RParen) {
                return Err(k.near());
            }
            Some(c)
        } else {
            None
        };
        Ok((name, cols))
    };
    Ok(Some(list(k, one)?))
}

/// ON [TABLE] names | SEQUENCE names | DATABASE names | TABLESPACE names | SCHEMA
/// names | ALL TABLES / SEQUENCES IN SCHEMA names.
fn parse_objects(k: &mut Toks) -> SqlResult<(ObjKind, bool, Vec<String>)> {
    if k.word("ALL") {
        let kind = if k.word("TABLES") {
            ObjKind::Table
        } else if k.word("SEQUENCES") {
            ObjKind::Sequence
        } else {
            return Err(SqlError::unsupported(format!(
                "GRANT ON ALL {}",
                k.peek_word(0).unwrap_or_default()
            )));
        };
        k.expect_word("IN")?;
        k.expect_word("SCHEMA")?;
        return Ok((kind, true, names(k)?));
    }
    let kind = if k.word("SEQUENCE") {
        ObjKind::Sequence
    } else if k.word("DATABASE") {
        ObjKind::Database
    } else if k.word("TABLESPACE") {
        ObjKind::Tablespace
    } else if k.word("SCHEMA") {
        ObjKind::Schema
    } else {
        for other in [
            "FUNCTION",
            "PROCEDURE",
            "ROUTINE",
            "LANGUAGE",
            "TYPE",
            "DOMAIN",
        ] {
            if k.peek_word(0).as_deref() == Some(other) {
                return Err(SqlError::unsupported(format!("GRANT ON {other}")));
            }
        }
        k.word("TABLE");
        ObjKind::Table
    };
    let objects = list(k, |k| {
        let n = k.ident()?;
        if k.tok(&Token::Period) {
            let t = k.ident()?;
            return crate::schema_qualified(&n, &t);
        }
        Ok(n)
    })?;
    Ok((kind, false, objects))
}

// ---- running role statements ----

/// Runs a statement of roles or privileges (roles rule 2; object privileges in
/// `privileges`).
pub(crate) fn run(s: &mut Session<'_>, a: &AccessStmt, notices: &mut Notices) -> SqlResult<Output> {
    let tag = a.verb();
    match a {
        AccessStmt::CreateRole {
            name,
            user,
            options,
        } => create_role(s, name, *user, options)?,
        AccessStmt::AlterRole { role, options } => alter_role(s, role, options)?,
        AccessStmt::RenameRole { name, new_name } => rename_role(s, name, new_name)?,
        AccessStmt::DropRole { names, if_exists } => drop_roles(s, names, *if_exists, notices)?,
        AccessStmt::GrantRole {
            roles,
            grantees,
            admin,
        } => grant_roles(s, roles, grantees, *admin, notices)?,
        AccessStmt::RevokeRole {
            roles,
            grantees,
            admin_only,
        } => revoke_roles(s, roles, grantees, *admin_only, notices)?,
        AccessStmt::SetRole(r) => s.set_role(r.as_ref())?,
        AccessStmt::SetSessionAuth(r) => s.set_session_authorization(r.as_ref())?,
        other => return crate::privileges::run(s, other, notices),
    }
    Ok(Output::Command(tag.into()))
}

fn denied(msg: impl Into<String>) -> SqlError {
    SqlError::new("42501", msg)
}

/// The attribute options of CREATE / ALTER ROLE, passwords already made into
/// verifiers (outside the transaction: deriving one is slow, by design).
struct Prepared {
    options: Vec<RoleOpt>,
}

impl Prepared {
    fn new(derive: Derive, options: &[RoleOpt]) -> SqlResult<Prepared> {
        let mut out = Vec::with_capacity(options.len());
        for o in options {
            out.push(match o {
                RoleOpt::Password(p) => RoleOpt::Password(password_text(derive, p.as_deref())?),
                RoleOpt::ConnLimit(n) if *n < -1 => {
                    return Err(SqlError::new(
                        "22023",
                        format!("invalid connection limit: {n}"),
                    ))
                }
                RoleOpt::ValidUntil(t) => {
                    valid_until(t)?;
                    o.clone()
                }
                o => o.clone(),
            });
        }
        Ok(Prepared { options: out })
    }

    /// Sets `e`'s attributes (who may is the caller's check).
    fn apply(&self, e: &mut RoleEntry) {
        for o in &self.options {
            match o {
                RoleOpt::Superuser(b) => e.superuser = *b,
                RoleOpt::CreateDb(b) => e.createdb = *b,
                RoleOpt::CreateRole(b) => e.createrole = *b,
                RoleOpt::Inherit(b) => e.inherit = *b,
                RoleOpt::Login(b) => e.login = *b,
                RoleOpt::Replication(b) => e.replication = *b,
                RoleOpt::BypassRls(b) => e.bypassrls = *b,
                RoleOpt::ConnLimit(n) => e.connlimit = *n,
                RoleOpt::Password(p) => e.password = p.clone(),
                RoleOpt::ValidUntil(t) => e.valid_until = valid_until(t).ok(),
                RoleOpt::InRole(_) | RoleOpt::Members(_) | RoleOpt::Admins(_) => {}
            }
        }
    }

    fn sets(&self, f: fn(&RoleOpt) -> bool) -> bool {
        self.options.iter().any(f)
    }

    /// Only PASSWORD: what a role may change of itself.
    fn only_password(&self) -> bool {
        self.options
            .iter()
            .all(|o| matches!(o, RoleOpt::Password(_)))
    }
}

/// What `rolpassword` keeps for a password: its verifier, or a verifier given as
/// one (pg_dumpall writes them). An MD5 hash is refused: it could not be checked.
fn password_text(derive: Derive, p: Option<&str>) -> SqlResult<Option<String>> {
    let Some(p) = p else { return Ok(None) };
    if parse_verifier(p).is_some() {
        return Ok(Some(p.to_string()));
    }
    if p.len() == 35 && p.starts_with("md5") {
        return Err(SqlError::unsupported("MD5-hashed passwords"));
    }
    if p.is_empty() {
        return Ok(None); // PostgreSQL: an empty password is no password
    }
    let v = derive(p).map_err(|e| SqlError::new("XX000", e))?;
    Ok(Some(format_verifier(&v)))
}

/// VALID UNTIL's timestamp ('infinity': no limit, kept as the largest value).
fn valid_until(t: &str) -> SqlResult<i64> {
    if t.trim().eq_ignore_ascii_case("infinity") {
        return Ok(i64::MAX);
    }
    match crate::bind::text_to(t, crate::SqlType::TimestampTz)? {
        crate::Datum::TimestampTz(us) => Ok(us),
        _ => Err(SqlError::new(
            "22007",
            format!("invalid input syntax for type timestamp with time zone: \"{t}\""),
        )),
    }
}

/// Refuses role names PostgreSQL reserves.
fn check_new_name(name: &str) -> SqlResult<()> {
    if name.starts_with("pg_") {
        return Err(
            SqlError::new("42939", format!("role name \"{name}\" is reserved"))
                .with_detail("Role names starting with \"pg_\" are reserved."),
        );
    }
    if matches!(name, "public" | "none") {
        return Err(SqlError::new(
            "42939",
            format!("role name \"{name}\" is reserved"),
        ));
    }
    Ok(())
}

/// The attribute checks of CREATE / ALTER ROLE that need a superuser.
fn superuser_only(p: &Prepared, creating: bool) -> Option<&'static str> {
    let (create, alter) = if creating {
        ("create superusers", "create replication users")
    } else {
        (
            "alter superuser roles or change superuser attribute",
            "alter replication roles or change replication attribute",
        )
    };
    if p.sets(|o| matches!(o, RoleOpt::Superuser(_))) {
        return Some(create);
    }
    if p.sets(|o| matches!(o, RoleOpt::Replication(_))) {
        return Some(alter);
    }
    if p.sets(|o| matches!(o, RoleOpt::BypassRls(_))) {
        return Some(if creating {
            "create bypassrls users"
        } else {
            "change bypassrls attribute"
        });
    }
    None
}

/// CREATE ROLE | USER (roles rule 2).
fn create_role(s: &mut Session<'_>, name: &str, user: bool, options: &[RoleOpt]) -> SqlResult<()> {
    check_new_name(name)?;
    let p = Prepared::new(s.server().derive, options)?;
    let me_name = s.current_role().to_string();
    s.write(|t| {
        let me = t.role(&me_name)?;
        if !me.superuser {
            if !me.createrole {
                return Err(denied("permission denied to create role"));
            }
            if let Some(what) = superuser_only(&p, true) {
                return Err(denied(format!("must be superuser to {what}")));
            }
        }
        let mut e = RoleEntry::new(name);
        e.login = user;
        p.apply(&mut e);
        let oid = t.create_role(e)?;
        for o in options {
            match o {
                RoleOpt::InRole(rs) => {
                    for r in rs {
                        add_member(t, &me, r, name, false)?;
                    }
                }
                RoleOpt::Members(ms) | RoleOpt::Admins(ms) => {
                    let admin = matches!(o, RoleOpt::Admins(_));
                    for m in ms {
                        add_member(t, &me, name, m, admin)?;
                    }
                }
                _ => {}
            }
        }
        let _ = oid;
        Ok(())
    })
}

/// `member` becomes a member of `role`, granted by `me` (GRANT's checks are the
/// caller's, but for superuser roles and circles).
fn add_member(
    t: &mut Txn<'_>,
    me: &RoleEntry,
    role: &str,
    member: &str,
    admin: bool,
) -> SqlResult<bool> {
    let r = t.role(role)?;
    let m = t.role(member)?;
    if r.superuser && !me.superuser {
        return Err(denied("must be superuser to alter superusers"));
    }
    if m.oid == r.oid || crate::privileges::is_member(t, r.oid, m.oid) {
        return Err(SqlError::new(
            "0LP01",
            format!("role \"{}\" is a member of role \"{}\"", r.name, m.name),
        ));
    }
    let g = Membership {
        role: r.oid,
        grantor: me.oid,
        admin,
    };
    Ok(t.grant_membership(r.oid, member, g)?)
}

/// The role a statement names, resolved (CURRENT_USER, SESSION_USER).
fn target_name(s: &Session<'_>, r: &RoleSpec) -> SqlResult<String> {
    Ok(match r {
        RoleSpec::Name(n) => n.clone(),
        RoleSpec::CurrentUser => s.current_role().to_string(),
        RoleSpec::SessionUser => s.user().to_string(),
        RoleSpec::Public => return Err(SqlError::new("42704", "role \"public\" does not exist")),
    })
}

/// ALTER ROLE ... options (roles rule 2).
fn alter_role(s: &mut Session<'_>, role: &RoleSpec, options: &[RoleOpt]) -> SqlResult<()> {
    let name = target_name(s, role)?;
    let p = Prepared::new(s.server().derive, options)?;
    let me_name = s.current_role().to_string();
    s.write(|t| {
        let me = t.role(&me_name)?;
        let target = t.role(&name)?;
        if !me.superuser {
            if target.superuser {
                return Err(denied(
                    "must be superuser to alter superuser roles or change superuser attribute",
                ));
            }
            if let Some(what) = superuser_only(&p, false) {
                return Err(denied(format!("must be superuser to {what}")));
            }
            let own_password = target.oid == me.oid && p.only_password();
            if !(me.createrole || own_password) {
                return Err(denied("permission denied"));
            }
        }
        let mut e = (*target).clone();
        p.apply(&mut e);
        Ok(t.alter_role(&name, e)?)
    })
}

/// ALTER ROLE ... RENAME TO (roles rules 2 and 3).
fn rename_role(s: &mut Session<'_>, name: &str, new_name: &str) -> SqlResult<()> {
    check_new_name(new_name)?;
    if name == s.user() {
        return Err(SqlError::new("0A000", "session user cannot be renamed"));
    }
    if name == s.current_role() {
        return Err(SqlError::new("0A000", "current user cannot be renamed"));
    }
    let me_name = s.current_role().to_string();
    s.write(|t| {
        let me = t.role(&me_name)?;
        let target = t.role(name)?;
        if strata_engine::is_system_role(target.oid) {
            return Err(SqlError::new(
                "0A000",
                format!("role \"{name}\" cannot be renamed"),
            ));
        }
        if !me.superuser && !me.createrole {
            return Err(denied("permission denied to rename role"));
        }
        if target.superuser && !me.superuser {
            return Err(denied("must be superuser to rename superusers"));
        }
        let mut e = (*target).clone();
        e.name = new_name.to_string();
        Ok(t.alter_role(name, e)?)
    })
}

/// DROP ROLE (roles rules 2 and 3).
fn drop_roles(
    s: &mut Session<'_>,
    names: &[String],
    if_exists: bool,
    notices: &mut Notices,
) -> SqlResult<()> {
    let me_name = s.current_role().to_string();
    let session_user = s.user().to_string();
    let db = s.db().to_string();
    s.write(|t| {
        let me = t.role(&me_name)?;
        if !me.superuser && !me.createrole {
            return Err(denied("permission denied to drop role"));
        }
        for name in names {
            let Ok(target) = t.role(name) else {
                if if_exists {
                    notices.push((
                        "NOTICE",
                        format!("role \"{name}\" does not exist, skipping"),
                    ));
                    continue;
                }
                return Err(SqlError::new(
                    "42704",
                    format!("role \"{name}\" does not exist"),
                ));
            };
            if *name == me_name {
                return Err(SqlError::new("55006", "current user cannot be dropped"));
            }
            if *name == session_user {
                return Err(SqlError::new("55006", "session user cannot be dropped"));
            }
            if target.superuser && !me.superuser {
                return Err(denied("must be superuser to drop superusers"));
            }
            let deps = t.role_dependents(target.oid);
            if !deps.is_empty() {
                let detail = crate::privileges::describe_dependents(t, &db, &deps);
                return Err(SqlError::new(
                    "2BP01",
                    format!("role \"{name}\" cannot be dropped because some objects depend on it"),
                )
                .with_detail(detail));
            }
            t.drop_role(name)?;
        }
        Ok(())
    })
}

/// Whether `me` may grant and revoke membership in `role` (roles rule 2): a
/// superuser; CREATEROLE for a non-superuser role; the ADMIN OPTION on it.
fn may_admin(t: &Txn<'_>, me: &RoleEntry, role: &RoleEntry) -> SqlResult<()> {
    if me.superuser {
        return Ok(());
    }
    if role.superuser {
        return Err(denied("must be superuser to alter superusers"));
    }
    if me.createrole || crate::privileges::has_admin(t, me.oid, role.oid) {
        return Ok(());
    }
    Err(denied(format!(
        "must have admin option on role \"{}\"",
        role.name
    )))
}

/// Runs `each(t, me, role, grantee)` for every role and grantee of a GRANT or
/// REVOKE of roles, in one write, once the current role may administer the role.
fn over_memberships(
    s: &mut Session<'_>,
    roles: &[String],
    grantees: &[RoleSpec],
    mut each: impl FnMut(&mut Txn<'_>, &RoleEntry, &RoleEntry, &str) -> SqlResult<()>,
) -> SqlResult<()> {
    let me_name = s.current_role().to_string();
    let grantees: Vec<String> = grantees
        .iter()
        .map(|g| target_name(s, g))
        .collect::<SqlResult<_>>()?;
    s.write(|t| {
        let me = t.role(&me_name)?;
        for r in roles {
            let role = t.role(r)?;
            may_admin(t, &me, &role)?;
            for g in &grantees {
                each(t, &me, &role, g)?;
            }
        }
        Ok(())
    })
}

/// GRANT role, ... TO grantee, ... [WITH ADMIN OPTION].
fn grant_roles(
    s: &mut Session<'_>,
    roles: &[String],
    grantees: &[RoleSpec],
    admin: bool,
    notices: &mut Notices,
) -> SqlResult<()> {
    over_memberships(s, roles, grantees, |t, me, role, g| {
        let r = &role.name;
        if !add_member(t, me, r, g, admin)? {
            notices.push((
                "NOTICE",
                format!("role \"{g}\" is already a member of role \"{r}\""),
            ));
        }
        Ok(())
    })
}

/// REVOKE [ADMIN OPTION FOR] role, ... FROM grantee, ...
fn revoke_roles(
    s: &mut Session<'_>,
    roles: &[String],
    grantees: &[RoleSpec],
    admin_only: bool,
    notices: &mut Notices,
) -> SqlResult<()> {
    over_memberships(s, roles, grantees, |t, _, role, g| {
        let member = t.role(g)?;
        let mut e = (*member).clone();
        let Some(at) = e.member_of.iter().position(|m| m.role == role.oid) else {
            notices.push((
                "WARNING",
                format!("role \"{g}\" is not a member of role \"{}\"", role.name),
            ));
            return Ok(());
        };
        if admin_only {
            e.member_of[at].admin = false;
        } else {
            e.member_of.remove(at);
        }
        Ok(t.alter_role(g, e)?)
    })
}

/// Whether `oid` names a role that exists (for messages about dropped roles).
pub(crate) fn role_name(t: &Txn<'_>, oid: Oid) -> String {
    t.role_by_oid(oid)
        .map(|r| r.name.clone())
        .unwrap_or_else(|| oid.0.to_string())
}
