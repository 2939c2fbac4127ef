//! Object privileges as PostgreSQL 15 decides them: who holds what on tables,
//! sequences, databases, tablespaces and the schema `public`, the checks every
//! statement makes, and the statements that change owners and ACLs (GRANT and
//! REVOKE on objects, ALTER ... OWNER TO, REASSIGN OWNED, DROP OWNED).
//!
//! Entry points: [`Catalog`] (the session's view: its transaction's, else the
//! committed one), [`who`], [`require`], [`require_owner`], [`check_ddl`], [`run`].
//!
//! Rules (cited as "privileges rule N"):
//! 1. A superuser passes every check. Otherwise a role holds a privilege if an ACL
//!    item gives it to PUBLIC or to a role whose privileges it has: itself and,
//!    through INHERIT, the roles it is a member of (PostgreSQL's
//!    has_privs_of_role). The owner of the database has those of
//!    pg_database_owner.
//! 2. A missing ACL is the defaults (engine acl module): the owner holds all of the
//!    kind's privileges; PUBLIC CONNECT and TEMPORARY on a database, USAGE on the
//!    schema public (owned by pg_database_owner, which alone may CREATE in it, as
//!    in PostgreSQL 15). A GRANT or REVOKE first writes the defaults out.
//! 3. A table-level privilege covers every column; without it, SELECT, INSERT,
//!    UPDATE and REFERENCES need the privilege on each column the statement uses
//!    (on any one column, if it uses none).
//! 4. DDL on an object needs its ownership (having the owner's privileges); CREATE
//!    in the schema public; CREATE DATABASE the CREATEDB attribute; CREATE
//!    TABLESPACE a superuser; TRUNCATE its privilege.
//! 5. GRANT and REVOKE act as the object's owner when the role has its privileges
//!    (or is a superuser), else as the role among its own that holds the grant
//!    options; privileges it cannot grant are skipped with PostgreSQL's WARNING, and
//!    a role with no privilege at all on the object gets 42501. Revoking a grant
//!    option others used is 2BP01 unless CASCADE, which revokes what they granted.
//! 6. Checks come after the statement is bound (a missing table or column is
//!    reported first, as PostgreSQL does), before anything is written.

use crate::roles::{AccessStmt, ObjKind};
use crate::session::{Notices, Output, Session};
use crate::{SqlError, SqlResult};
use rustc_hash::FxHashSet;
use std::sync::Arc;
use strata_engine::acl::{AclItem, Priv};
use strata_engine::{Acl, DbEntry, Engine, RelEntry, RoleDep, RoleEntry, SpcEntry, Txn};
use strata_types::Oid;

/// pg_database_owner's OID (its members: the owners of the current database).
pub const PG_DATABASE_OWNER: Oid = Oid(6171);
/// pg_signal_backend, pg_checkpoint, pg_read_all_settings.
pub const PG_SIGNAL_BACKEND: Oid = Oid(4200);
pub const PG_CHECKPOINT: Oid = Oid(4544);
pub const PG_READ_ALL_SETTINGS: Oid = Oid(3374);

/// The catalog as a statement sees it: its transaction's (with uncommitted
/// changes) or the committed one.
pub trait Catalog {
    fn role(&self, name: &str) -> SqlResult<Arc<RoleEntry>>;
    fn role_by_oid(&self, oid: Oid) -> Option<Arc<RoleEntry>>;
    fn database_entry(&self, name: &str) -> SqlResult<DbEntry>;
    fn relation_entry(&self, db: &str, name: &str) -> SqlResult<RelEntry>;
    fn tablespace_entry(&self, name: &str) -> SqlResult<SpcEntry>;
    /// The table that owns index `index`, if there is such an index.
    fn index_table(&self, db: &str, index: &str) -> Option<String>;
}

impl Catalog for Txn<'_> {
    fn role(&self, name: &str) -> SqlResult<Arc<RoleEntry>> {
        Ok(Txn::role(self, name)?)
    }
    fn role_by_oid(&self, oid: Oid) -> Option<Arc<RoleEntry>> {
        Txn::role_by_oid(self, oid)
    }
    fn database_entry(&self, name: &str) -> SqlResult<DbEntry> {
        Ok((*self.database(name)?).clone())
    }
    fn relation_entry(&self, db: &str, name: &str) -> SqlResult<RelEntry> {
        let dbe = self.database(db)?;
        Ok((*self.relation(&dbe, name)?).clone())
    }
    fn tablespace_entry(&self, name: &str) -> SqlResult<SpcEntry> {
        Ok((*Txn::tablespace_entry(self, name)?).clone())
    }
    fn index_table(&self, db: &str, index: &str) -> Option<String> {
        Txn::index_table(self, db, index).ok().flatten()
    }
}

impl Catalog for Engine {
    fn role(&self, name: &str) -> SqlResult<Arc<RoleEntry>> {
        Engine::role(self, name)
            .ok_or_else(|| SqlError::new("42704", format!("role \"{name}\" does not exist")))
    }
    fn role_by_oid(&self, oid: Oid) -> Option<Arc<RoleEntry>> {
        Engine::role_by_oid(self, oid)
    }
    fn database_entry(&self, name: &str) -> SqlResult<DbEntry> {
        self.database(name)
            .ok_or_else(|| SqlError::new("3D000", format!("database \"{name}\" does not exist")))
    }
    fn relation_entry(&self, db: &str, name: &str) -> SqlResult<RelEntry> {
        Ok(self.table(db, name)?)
    }
    fn tablespace_entry(&self, name: &str) -> SqlResult<SpcEntry> {
        self.tablespace(name)
            .ok_or_else(|| SqlError::new("42704", format!("tablespace \"{name}\" does not exist")))
    }
    fn index_table(&self, db: &str, index: &str) -> Option<String> {
        Engine::index_table(self, db, index)
    }
}

/// The acting role as checks see it (privileges rule 1).
#[derive(Clone, Debug)]
pub struct Who {
    pub oid: Oid,
    pub name: String,
    pub superuser: bool,
    /// Roles whose privileges it has (itself, and through INHERIT).
    pub privs_of: FxHashSet<Oid>,
    /// Roles it is a member of, directly or not, whatever INHERIT (SET ROLE).
    pub member_of: FxHashSet<Oid>,
}

impl Who {
    /// Whether it has the privileges of `role` (or is a superuser).
    pub fn has_privs_of(&self, role: Oid) -> bool {
        self.superuser || self.privs_of.contains(&role)
    }
}

/// `role` as checks see it in a database owned by `db_owner` (privileges rule 1).
/// O(the roles it reaches through memberships).
pub fn who(cat: &dyn Catalog, role: &RoleEntry, db_owner: Oid) -> Who {
    let reach = |follow_noinherit: bool| {
        let mut seen: FxHashSet<Oid> = FxHashSet::default();
        let mut stack = vec![role.oid];
        while let Some(r) = stack.pop() {
            if !seen.insert(r) {
                continue;
            }
            let Some(e) = cat.role_by_oid(r) else {
                continue;
            };
            if follow_noinherit || e.inherit {
                stack.extend(e.member_of.iter().map(|m| m.role));
            }
        }
        seen
    };
    let mut privs_of = reach(false);
    let mut member_of = reach(true);
    if privs_of.contains(&db_owner) {
        privs_of.insert(PG_DATABASE_OWNER);
    }
    if member_of.contains(&db_owner) {
        member_of.insert(PG_DATABASE_OWNER);
    }
    Who {
        oid: role.oid,
        name: role.name.clone(),
        superuser: role.superuser,
        privs_of,
        member_of,
    }
}

/// Whether `member` is a member of `role`, directly or not (as this transaction
/// sees roles).
pub(crate) fn is_member(t: &Txn<'_>, member: Oid, role: Oid) -> bool {
    let Some(m) = t.role_by_oid(member) else {
        return false;
    };
    who(t, &m, Oid(0)).member_of.contains(&role) && member != role
}

/// Whether `me` has the ADMIN OPTION on `role`, itself or through a role whose
/// privileges it has.
pub(crate) fn has_admin(t: &Txn<'_>, me: Oid, role: Oid) -> bool {
    let Some(e) = t.role_by_oid(me) else {
        return false;
    };
    let w = who(t, &e, Oid(0));
    w.privs_of.iter().any(|r| {
        t.role_by_oid(*r)
            .is_some_and(|x| x.member_of.iter().any(|m| m.role == role && m.admin))
    })
}

/// Every privilege of a kind (ALL PRIVILEGES).
pub fn all_of(kind: ObjKind) -> Priv {
    let letters: &[Priv] = match kind {
        ObjKind::Table | ObjKind::View => &[
            Priv::INSERT,
            Priv::SELECT,
            Priv::UPDATE,
            Priv::DELETE,
            Priv::TRUNCATE,
            Priv::REFERENCES,
            Priv::TRIGGER,
        ],
        ObjKind::Sequence => &[Priv::SELECT, Priv::UPDATE, Priv::USAGE],
        ObjKind::Database => &[Priv::CREATE, Priv::TEMPORARY, Priv::CONNECT],
        ObjKind::Tablespace => &[Priv::CREATE],
        ObjKind::Schema => &[Priv::USAGE, Priv::CREATE],
    };
    letters.iter().fold(Priv::NONE, |a, p| a.union(*p))
}

fn item(grantee: Oid, grantor: Oid, privs: Priv) -> AclItem {
    AclItem {
        grantee,
        grantor,
        privs,
        grant_options: Priv::NONE,
    }
}

/// An ACL, or the defaults of its kind for `owner` (privileges rule 2).
pub fn acl_or_default(acl: Option<&Acl>, kind: ObjKind, owner: Oid) -> Acl {
    if let Some(a) = acl {
        return a.clone();
    }
    let all = all_of(kind);
    let owner_item = AclItem {
        grant_options: all,
        ..item(owner, owner, all)
    };
    match kind {
        ObjKind::Database => vec![
            item(Oid(0), owner, Priv::TEMPORARY.union(Priv::CONNECT)),
            owner_item,
        ],
        ObjKind::Schema => vec![owner_item, item(Oid(0), owner, Priv::USAGE)],
        _ => vec![owner_item],
    }
}

/// What `who` holds in `acl`: (privileges, grant options) (privileges rule 1).
pub fn held(acl: &Acl, who: &Who) -> (Priv, Priv) {
    acl.iter()
        .filter(|i| i.grantee == Oid(0) || who.privs_of.contains(&i.grantee))
        .fold((Priv::NONE, Priv::NONE), |(p, g), i| {
            (p.union(i.privs), g.union(i.grant_options))
        })
}

/// PostgreSQL's 42501 for a missing privilege: "permission denied for table t".
pub fn no_privilege(kind: ObjKind, name: &str) -> SqlError {
    SqlError::new(
        "42501",
        format!("permission denied for {} {name}", kind.word()),
    )
}

/// PostgreSQL's 42501 for a missing ownership: "must be owner of table t".
pub fn not_owner(kind: &str, name: &str) -> SqlError {
    SqlError::new("42501", format!("must be owner of {kind} {name}"))
}

fn rel_kind(r: &RelEntry) -> ObjKind {
    if r.sequence.is_some() {
        ObjKind::Sequence
    } else if r.view.is_some() {
        ObjKind::View
    } else {
        ObjKind::Table
    }
}

/// Privileges rule 3: `need` on relation `r`, for the columns `cols` it uses.
pub fn require(who: &Who, r: &RelEntry, need: Priv, cols: &[usize]) -> SqlResult<()> {
    if who.superuser {
        return Ok(());
    }
    let kind = rel_kind(r);
    let acl = acl_or_default(r.acl.as_ref(), kind, r.owner);
    if held(&acl, who).0.contains(need) {
        return Ok(());
    }
    let column_kinds = Priv::SELECT
        .union(Priv::INSERT)
        .union(Priv::UPDATE)
        .union(Priv::REFERENCES);
    if kind == ObjKind::Table && column_kinds.contains(need) {
        let col_has = |c: &usize| {
            r.columns
                .get(*c)
                .and_then(|col| col.acl.as_ref())
                .is_some_and(|a| held(a, who).0.contains(need))
        };
        let ok = if cols.is_empty() {
            (0..r.columns.len()).any(|c| col_has(&c))
        } else {
            cols.iter().all(col_has)
        };
        if ok {
            return Ok(());
        }
    }
    Err(no_privilege(kind, &r.name))
}

/// Privileges rule 4: `who` has the owner's privileges of an object.
pub fn require_owner(who: &Who, owner: Oid, kind: &str, name: &str) -> SqlResult<()> {
    if who.has_privs_of(owner) {
        Ok(())
    } else {
        Err(not_owner(kind, name))
    }
}

/// CREATE in the schema public of database `d` (PostgreSQL 15's defaults: its
/// owner only).
pub fn require_create_in_public(who: &Who, d: &DbEntry) -> SqlResult<()> {
    if who.superuser {
        return Ok(());
    }
    let acl = acl_or_default(d.public_acl.as_ref(), ObjKind::Schema, PG_DATABASE_OWNER);
    if held(&acl, who).0.contains(Priv::CREATE) {
        return Ok(());
    }
    Err(no_privilege(ObjKind::Schema, "public"))
}

/// `need` on tablespace `s`.
pub fn require_tablespace(who: &Who, s: &SpcEntry, need: Priv) -> SqlResult<()> {
    if who.superuser {
        return Ok(());
    }
    let acl = acl_or_default(s.acl.as_ref(), ObjKind::Tablespace, s.owner);
    if held(&acl, who).0.contains(need) {
        return Ok(());
    }
    Err(no_privilege(ObjKind::Tablespace, &s.name))
}

/// `need` on database `d` (CONNECT at connection, CREATE, TEMPORARY).
pub fn require_database(who: &Who, d: &DbEntry, need: Priv) -> SqlResult<()> {
    if who.superuser {
        return Ok(());
    }
    let acl = acl_or_default(d.acl.as_ref(), ObjKind::Database, d.owner);
    if held(&acl, who).0.contains(need) {
        return Ok(());
    }
    Err(no_privilege(ObjKind::Database, &d.name))
}

/// Runs a privileges statement (the object half of [`AccessStmt`]).
pub(crate) fn run(s: &mut Session<'_>, a: &AccessStmt, notices: &mut Notices) -> SqlResult<Output> {
    match a {
        AccessStmt::Grant(p) => crate::grants::grant(s, p, true, notices)?,
        AccessStmt::Revoke(p) => crate::grants::grant(s, p, false, notices)?,
        AccessStmt::AlterOwner { kind, name, owner } => {
            crate::grants::alter_owner(s, *kind, name, owner)?
        }
        AccessStmt::ReassignOwned { from, to } => crate::grants::reassign_owned(s, from, to)?,
        AccessStmt::DropOwned { roles, cascade } => {
            crate::grants::drop_owned(s, roles, *cascade, notices)?
        }
        _ => unreachable!("the roles module runs the rest"),
    }
    Ok(Output::Command(a.verb().into()))
}

/// DROP ROLE's DETAIL (engine roles rule 2), as PostgreSQL words it: each object
/// of the current database and each shared one by name, the rest counted per
/// database.
pub(crate) fn describe_dependents(
    t: &Txn<'_>,
    current_db: &str,
    deps: &[strata_engine::RoleDependent],
) -> String {
    let mut lines = Vec::new();
    let mut elsewhere: std::collections::BTreeMap<String, usize> = Default::default();
    let current = t.database(current_db).map(|d| d.oid).ok();
    for d in deps {
        let what = if d.owner {
            "owner of"
        } else {
            "privileges for"
        };
        match &d.dep {
            RoleDep::Database(oid) => {
                let name = t
                    .database_by_oid(*oid)
                    .map(|e| e.name.clone())
                    .unwrap_or_default();
                lines.push(format!("{what} database {name}"));
            }
            RoleDep::Tablespace(oid) => {
                let name = t
                    .tablespace_by_oid(*oid)
                    .map(|e| e.name.clone())
                    .unwrap_or_default();
                lines.push(format!("{what} tablespace {name}"));
            }
            RoleDep::Relation(db, name) if Some(*db) == current => {
                lines.push(format!("{what} {} {name}", d.kind));
            }
            RoleDep::Relation(db, _) => {
                let n = t
                    .database_by_oid(*db)
                    .map(|e| e.name.clone())
                    .unwrap_or_default();
                *elsewhere.entry(n).or_default() += 1;
            }
        }
    }
    for (db, n) in elsewhere {
        let objects = if n == 1 { "object" } else { "objects" };
        lines.push(format!("{n} {objects} in database {db}"));
    }
    lines.join("\n")
}

/// The columns an expression reads (privileges rule 3), appended to `out`. A loop
/// over a stack: expression depth is bounded elsewhere, but this walk needs no
/// recursion at all.
pub(crate) fn expr_columns(e: &crate::bind::Expr, out: &mut Vec<usize>) {
    let mut stack = vec![e];
    while let Some(e) = stack.pop() {
        if let crate::bind::Expr::Col(c) = e {
            out.push(*c);
        }
        e.children(&mut stack);
    }
}

/// Privileges rule 4: what a DDL statement needs, checked before it runs. An object
/// that does not exist is left to the statement (its 42P01 or NOTICE).
pub(crate) fn check_ddl(cat: &dyn Catalog, db: &str, w: &Who, d: &crate::Ddl) -> SqlResult<()> {
    use crate::Ddl as D;
    if w.superuser {
        return Ok(());
    }
    let owns = |name: &str| -> SqlResult<()> {
        match cat.relation_entry(db, name) {
            Ok(r) => require_owner(w, r.owner, rel_kind(&r).word(), name),
            Err(_) => Ok(()),
        }
    };
    // REFERENCES on each referenced table (one being created is the user's).
    let references = |fks: &[crate::foreign::FkSpec]| -> SqlResult<()> {
        for fk in fks {
            if let Ok(r) = cat.relation_entry(db, &fk.parent) {
                let cols: Vec<usize> = fk
                    .parent_columns
                    .iter()
                    .filter_map(|n| r.columns.iter().position(|c| c.name == *n))
                    .collect();
                require(w, &r, Priv::REFERENCES, &cols)?;
            }
        }
        Ok(())
    };
    match d {
        D::CreateTable {
            tablespace,
            foreign_keys,
            ..
        } => {
            require_create_in_public(w, &cat.database_entry(db)?)?;
            if let Some(s) = tablespace {
                require_tablespace(w, &cat.tablespace_entry(s)?, Priv::CREATE)?;
            }
            references(foreign_keys)?;
        }
        D::AddForeignKey { table, spec, .. } => {
            owns(table)?;
            references(std::slice::from_ref(spec))?;
        }
        D::CreateTableAs { .. } | D::CreateSequence { .. } => {
            require_create_in_public(w, &cat.database_entry(db)?)?
        }
        D::CreateView {
            name, or_replace, ..
        } => {
            require_create_in_public(w, &cat.database_entry(db)?)?;
            if *or_replace {
                owns(name)?;
            }
        }
        D::CreateIndex { table, .. }
        | D::AddConstraint { table, .. }
        | D::DropConstraint { table, .. }
        | D::AddColumn { table, .. }
        | D::DropColumn { table, .. }
        | D::Rename { table, .. } => owns(table)?,
        D::DropTable { names, .. } | D::DropSequence { names, .. } | D::DropView { names, .. } => {
            names.iter().try_for_each(|n| owns(n))?
        }
        D::DropIndex { names, .. } => {
            for n in names {
                if let Some(t) = cat.index_table(db, n) {
                    let r = cat.relation_entry(db, &t)?;
                    require_owner(w, r.owner, "index", n)?;
                }
            }
        }
        D::Truncate { names } => {
            for n in names {
                if let Ok(r) = cat.relation_entry(db, n) {
                    require(w, &r, Priv::TRUNCATE, &[])?;
                }
            }
        }
        _ => check_shared_ddl(cat, w, d)?,
    }
    Ok(())
}

/// [`check_ddl`] for databases and tablespaces.
fn check_shared_ddl(cat: &dyn Catalog, w: &Who, d: &crate::Ddl) -> SqlResult<()> {
    use crate::Ddl as D;
    match d {
        D::CreateTablespace { name, .. } => Err(SqlError::new(
            "42501",
            format!("permission denied to create tablespace \"{name}\""),
        )
        .with_hint("Must be superuser to create a tablespace.")),
        D::DropTablespace { name, .. } => match cat.tablespace_entry(name) {
            Ok(s) => require_owner(w, s.owner, "tablespace", name),
            Err(_) => Ok(()),
        },
        D::CreateDatabase {
            template,
            tablespace,
            ..
        } => {
            let me = cat.role(&w.name)?;
            if !me.createdb {
                return Err(SqlError::new(
                    "42501",
                    "permission denied to create database",
                ));
            }
            let t = template.as_deref().unwrap_or("template1");
            if let Ok(te) = cat.database_entry(t) {
                if !te.is_template && !w.has_privs_of(te.owner) {
                    return Err(SqlError::new(
                        "42501",
                        format!("permission denied to copy database \"{t}\""),
                    ));
                }
            }
            if let Some(s) = tablespace {
                require_tablespace(w, &cat.tablespace_entry(s)?, Priv::CREATE)?;
            }
            Ok(())
        }
        D::DropDatabase { name, .. } => match cat.database_entry(name) {
            Ok(e) => require_owner(w, e.owner, "database", name),
            Err(_) => Ok(()),
        },
        _ => Ok(()),
    }
}

/// Settings only a superuser (or pg_read_all_settings) may see, PostgreSQL 15's
/// GUC_SUPERUSER_ONLY ones Strata has or names.
pub const SUPERUSER_ONLY_SETTINGS: &[&str] = &[
    "config_file",
    "data_directory",
    "dynamic_library_path",
    "external_pid_file",
    "hba_file",
    "ident_file",
    "log_directory",
    "log_filename",
    "primary_conninfo",
    "shared_preload_libraries",
    "session_preload_libraries",
    "ssl_ciphers",
    "ssl_max_protocol_version",
    "ssl_min_protocol_version",
    "unix_socket_directories",
];

/// Session settings only a superuser may SET (PostgreSQL 15's superuser context).
pub const SUPERUSER_SET_SETTINGS: &[&str] = &[
    "lc_messages",
    "log_min_duration_statement",
    "log_statement",
    "session_replication_role",
    "temp_file_limit",
];

/// May `w` see setting `name` (SHOW)?
pub fn may_show(w: &Who, name: &str) -> SqlResult<()> {
    if !SUPERUSER_ONLY_SETTINGS.contains(&name) || w.has_privs_of(PG_READ_ALL_SETTINGS) {
        return Ok(());
    }
    Err(SqlError::new(
        "42501",
        format!(
            "must be superuser or have privileges of pg_read_all_settings to examine \"{name}\""
        ),
    ))
}

/// May `w` SET setting `name`?
pub fn may_set(w: &Who, name: &str) -> SqlResult<()> {
    if w.superuser || !SUPERUSER_SET_SETTINGS.contains(&name) {
        return Ok(());
    }
    Err(SqlError::new(
        "42501",
        format!("permission denied to set parameter \"{name}\""),
    ))
}

/// CHECKPOINT: a superuser or a member of pg_checkpoint.
/// COPY to or from a file on the server: superusers and the members of
/// pg_write_server_files / pg_read_server_files, as PostgreSQL 15.
pub fn may_copy_file(w: &Who, to: bool) -> SqlResult<()> {
    let (role, name, dir) = if to {
        (Oid(4570), "pg_write_server_files", "to")
    } else {
        (Oid(4569), "pg_read_server_files", "from")
    };
    if w.has_privs_of(role) {
        return Ok(());
    }
    Err(SqlError::new(
        "42501",
        format!("must be superuser or have privileges of the {name} role to COPY {dir} a file"),
    )
    .with_hint(
        "Anyone can COPY to stdout or from stdin. psql's \\copy command also works for anyone.",
    ))
}

pub fn may_checkpoint(w: &Who) -> SqlResult<()> {
    if w.has_privs_of(PG_CHECKPOINT) {
        return Ok(());
    }
    Err(SqlError::new(
        "42501",
        "must be superuser or have privileges of pg_checkpoint to do CHECKPOINT",
    ))
}

/// VACUUM of a relation: its owner, the database's owner or a superuser.
pub fn may_vacuum(w: &Who, r: &RelEntry, db_owner: Oid) -> bool {
    w.has_privs_of(r.owner) || w.has_privs_of(db_owner)
}
