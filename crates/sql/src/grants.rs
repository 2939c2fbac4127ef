//! The statements that change owners and ACLs: GRANT and REVOKE on tables (and their
//! columns), sequences, databases, tablespaces and the schema public; ALTER ...
//! OWNER TO; REASSIGN OWNED; DROP OWNED. Each runs in the session's transaction and
//! writes one new catalog row per object it changes (engine roles rule 1).
//!
//! Entry points: [`grant`] (GRANT and REVOKE), [`alter_owner`], [`reassign_owned`],
//! [`drop_owned`]; the rules are the `privileges` module's (rule 5 for GRANT and
//! REVOKE).

use crate::privileges::{
    acl_or_default, all_of, held, no_privilege, require_create_in_public, who, Catalog, Who,
    PG_DATABASE_OWNER,
};
use crate::roles::{ObjKind, PrivStmt, RoleSpec};
use crate::session::{Notices, Session};
use crate::{SqlError, SqlResult};
use strata_engine::acl::{AclItem, Priv};
use strata_engine::{Acl, RelAccess, RelEntry, RoleDep, Txn};
use strata_types::Oid;

/// A privilege's name as GRANT writes it.
fn priv_named(name: &str) -> SqlResult<Priv> {
    Ok(match name {
        "SELECT" => Priv::SELECT,
        "INSERT" => Priv::INSERT,
        "UPDATE" => Priv::UPDATE,
        "DELETE" => Priv::DELETE,
        "TRUNCATE" => Priv::TRUNCATE,
        "REFERENCES" => Priv::REFERENCES,
        "TRIGGER" => Priv::TRIGGER,
        "EXECUTE" => Priv::EXECUTE,
        "USAGE" => Priv::USAGE,
        "CREATE" => Priv::CREATE,
        "CONNECT" => Priv::CONNECT,
        "TEMPORARY" | "TEMP" => Priv::TEMPORARY,
        other => {
            return Err(SqlError::new(
                "42601",
                format!("unrecognized privilege type \"{}\"", other.to_lowercase()),
            ))
        }
    })
}

/// What one GRANT / REVOKE asks for on an object of `kind`: table-level
/// privileges, and per column name its own.
struct Asked {
    /// ALL [PRIVILEGES]: no warning for the ones that cannot be granted.
    all: bool,
    table: Priv,
    columns: Vec<(String, Priv)>,
}

fn asked(p: &PrivStmt, kind: ObjKind) -> SqlResult<Asked> {
    let Some(list) = &p.privs else {
        return Ok(Asked {
            all: true,
            table: all_of(kind),
            columns: Vec::new(),
        });
    };
    let mut a = Asked {
        all: false,
        table: Priv::NONE,
        columns: Vec::new(),
    };
    for (name, cols) in list {
        let pr = priv_named(name)?;
        let invalid = |what: &str| {
            SqlError::new("0LP01", format!("invalid privilege type {name} for {what}"))
        };
        match cols {
            None if !all_of(kind).contains(pr) => return Err(invalid(kind.word())),
            None => a.table = a.table.union(pr),
            Some(cols) => {
                let column_kinds = [Priv::SELECT, Priv::INSERT, Priv::UPDATE, Priv::REFERENCES];
                if kind != ObjKind::Table || !column_kinds.contains(&pr) {
                    return Err(invalid("column"));
                }
                for c in cols {
                    a.columns.push((c.clone(), pr));
                }
            }
        }
    }
    Ok(a)
}

/// Privileges rule 5: the grantor a GRANT or REVOKE acts as, and the grant options
/// it holds.
fn grantor(who: &Who, acl: &Acl, owner: Oid, want: Priv) -> (Oid, Priv) {
    if who.has_privs_of(owner) {
        return (owner, Priv(u16::MAX));
    }
    let mut roles: Vec<Oid> = who.privs_of.iter().copied().collect();
    roles.sort_by_key(|r| (*r != who.oid, r.0));
    let mut best = (who.oid, Priv::NONE);
    for r in roles {
        let opts = acl
            .iter()
            .filter(|i| i.grantee == r || i.grantee == Oid(0))
            .fold(Priv::NONE, |a, i| a.union(i.grant_options));
        if opts.contains(want) {
            return (r, opts);
        }
        if opts.0.count_ones() > best.1 .0.count_ones() {
            best = (r, opts);
        }
    }
    best
}

/// Adds `privs` (with their grant options if `with_option`) from `grantor` to each
/// grantee.
fn grant_into(acl: &mut Acl, grantees: &[Oid], grantor: Oid, privs: Priv, with_option: bool) {
    if privs.is_empty() {
        return;
    }
    for g in grantees {
        let options = if with_option { privs } else { Priv::NONE };
        match acl
            .iter_mut()
            .find(|i| i.grantee == *g && i.grantor == grantor)
        {
            Some(i) => {
                i.privs = i.privs.union(privs);
                i.grant_options = i.grant_options.union(options);
            }
            None => acl.push(AclItem {
                grantee: *g,
                grantor,
                privs,
                grant_options: options,
            }),
        }
    }
}

/// Takes `privs` (or only their grant options) that `grantor` gave each grantee;
/// grant options others used go with CASCADE (what they granted, recursively), else
/// 2BP01 (privileges rule 5).
fn revoke_from(
    acl: &mut Acl,
    grantees: &[Oid],
    grantor: Oid,
    privs: Priv,
    (options_only, cascade): (bool, bool),
) -> SqlResult<()> {
    for g in grantees {
        let Some(i) = acl
            .iter_mut()
            .find(|i| i.grantee == *g && i.grantor == grantor)
        else {
            continue;
        };
        let lost = i.grant_options.intersect(privs);
        i.grant_options = i.grant_options.minus(privs);
        if !options_only {
            i.privs = i.privs.minus(privs);
        }
        let used = acl
            .iter()
            .any(|d| d.grantor == *g && !d.privs.intersect(lost).is_empty());
        if used && *g != Oid(0) {
            if !cascade {
                return Err(SqlError::new("2BP01", "dependent privileges exist")
                    .with_hint("Use CASCADE to revoke them too."));
            }
            let theirs: Vec<Oid> = acl
                .iter()
                .filter(|d| d.grantor == *g)
                .map(|d| d.grantee)
                .collect();
            revoke_from(acl, &theirs, *g, lost, (false, true))?;
        }
    }
    acl.retain(|i| !i.privs.is_empty());
    Ok(())
}

/// One object's owner and ACL in a GRANT or REVOKE.
struct Object {
    kind: ObjKind,
    name: String,
    owner: Oid,
    acl: Acl,
    /// A table's columns: name and ACL.
    columns: Vec<(String, Option<Acl>)>,
}

/// GRANT or REVOKE (`grant`) of privileges on every object `p` names.
pub(crate) fn grant(
    s: &mut Session<'_>,
    p: &PrivStmt,
    is_grant: bool,
    notices: &mut Notices,
) -> SqlResult<()> {
    let me = s.current_role().to_string();
    let db = s.db().to_string();
    let spec: Vec<RoleSpec> = p.grantees.clone();
    let ids = (s.current_role().to_string(), s.user().to_string());
    s.write(|t| {
        let grantees = grantee_ids(t, &spec, &ids)?;
        let w = acting(t, &me, &db)?;
        for name in object_names(t, p, &db)? {
            let mut o = load(t, p.kind, &db, &name)?;
            change(&w, &mut o, p, &grantees, is_grant, notices)?;
            store(t, &db, o)?;
        }
        Ok(())
    })
}

fn grantee_ids(
    t: &Txn<'_>,
    spec: &[RoleSpec],
    (current, session): &(String, String),
) -> SqlResult<Vec<Oid>> {
    spec.iter()
        .map(|g| match g {
            RoleSpec::Public => Ok(Oid(0)),
            RoleSpec::Name(n) => Ok(Catalog::role(t, n)?.oid),
            RoleSpec::CurrentUser => Ok(Catalog::role(t, current)?.oid),
            RoleSpec::SessionUser => Ok(Catalog::role(t, session)?.oid),
        })
        .collect()
}

/// The acting role as checks see it, in the current database.
fn acting(t: &Txn<'_>, me: &str, db: &str) -> SqlResult<Who> {
    let r = Catalog::role(t, me)?;
    let owner = t.database(db)?.owner;
    Ok(who(t, &r, owner))
}

/// The objects a GRANT names (ALL TABLES / SEQUENCES IN SCHEMA public: every such
/// relation of the current database).
fn object_names(t: &Txn<'_>, p: &PrivStmt, db: &str) -> SqlResult<Vec<String>> {
    if !p.all_in_schema {
        return Ok(p.objects.clone());
    }
    for schema in &p.objects {
        if schema != "public" {
            return Err(SqlError::new(
                "3F000",
                format!("schema \"{schema}\" does not exist"),
            ));
        }
    }
    let want_seq = p.kind == ObjKind::Sequence;
    Ok(t.relations(db)?
        .into_iter()
        .filter(|r| r.sequence.is_some() == want_seq)
        .map(|r| r.name.clone())
        .collect())
}

fn load(t: &Txn<'_>, kind: ObjKind, db: &str, name: &str) -> SqlResult<Object> {
    Ok(match kind {
        ObjKind::Table | ObjKind::View | ObjKind::Sequence => {
            let r = Catalog::relation_entry(t, db, name)?;
            let actual = if r.sequence.is_some() {
                ObjKind::Sequence
            } else if r.view.is_some() {
                ObjKind::View
            } else {
                ObjKind::Table
            };
            if kind == ObjKind::Sequence && actual != ObjKind::Sequence {
                return Err(SqlError::new(
                    "42809",
                    format!("\"{name}\" is not a sequence"),
                ));
            }
            Object {
                kind: actual,
                name: name.into(),
                owner: r.owner,
                acl: acl_or_default(r.acl.as_ref(), actual, r.owner),
                columns: r
                    .columns
                    .iter()
                    .map(|c| (c.name.clone(), c.acl.clone()))
                    .collect(),
            }
        }
        ObjKind::Database => {
            let d = Catalog::database_entry(t, name)?;
            let acl = acl_or_default(d.acl.as_ref(), kind, d.owner);
            Object::plain(kind, name, d.owner, acl)
        }
        ObjKind::Tablespace => {
            let sp = Catalog::tablespace_entry(t, name)?;
            let acl = acl_or_default(sp.acl.as_ref(), kind, sp.owner);
            Object::plain(kind, name, sp.owner, acl)
        }
        ObjKind::Schema => {
            if name != "public" {
                return Err(SqlError::new(
                    "3F000",
                    format!("schema \"{name}\" does not exist"),
                ));
            }
            let d = Catalog::database_entry(t, db)?;
            let acl = acl_or_default(d.public_acl.as_ref(), kind, PG_DATABASE_OWNER);
            Object::plain(kind, name, PG_DATABASE_OWNER, acl)
        }
    })
}

impl Object {
    fn plain(kind: ObjKind, name: &str, owner: Oid, acl: Acl) -> Object {
        Object {
            kind,
            name: name.into(),
            owner,
            acl,
            columns: Vec::new(),
        }
    }

    /// Whether `w` holds anything at all on it (table or column level).
    fn holds_any(&self, w: &Who) -> bool {
        let (p, g) = held(&self.acl, w);
        !p.is_empty()
            || !g.is_empty()
            || self
                .columns
                .iter()
                .filter_map(|(_, a)| a.as_ref())
                .any(|a| !held(a, w).0.is_empty())
    }
}

/// Applies one GRANT or REVOKE to an object (privileges rule 5).
fn change(
    w: &Who,
    o: &mut Object,
    p: &PrivStmt,
    grantees: &[Oid],
    is_grant: bool,
    notices: &mut Notices,
) -> SqlResult<()> {
    let mut a = asked(p, o.kind)?;
    if o.kind == ObjKind::Sequence && p.kind == ObjKind::Table && !a.all {
        let seq = all_of(ObjKind::Sequence);
        if !seq.contains(a.table) {
            notices.push((
                "WARNING",
                format!(
                    "sequence \"{}\" only supports USAGE, SELECT, and UPDATE privileges",
                    o.name
                ),
            ));
            a.table = a.table.intersect(seq);
        }
    }
    let want = a.columns.iter().fold(a.table, |x, (_, pr)| x.union(*pr));
    let (g, avail) = grantor(w, &o.acl, o.owner, want);
    if avail.is_empty() && !o.holds_any(w) {
        return Err(no_privilege(o.kind, &o.name));
    }
    let granted = want.intersect(avail);
    warn_partial(o, (want, granted), (a.all, is_grant), notices);
    let table = a.table.intersect(avail);
    if is_grant {
        grant_into(&mut o.acl, grantees, g, table, p.grant_option);
    } else {
        revoke_from(&mut o.acl, grantees, g, table, (p.grant_option, p.cascade))?;
    }
    change_columns(o, &a, (grantees, g, avail), p, is_grant)
}

fn warn_partial(
    o: &Object,
    (want, granted): (Priv, Priv),
    (all, is_grant): (bool, bool),
    notices: &mut Notices,
) {
    let (none, some) = if is_grant {
        (
            "no privileges were granted",
            "not all privileges were granted",
        )
    } else {
        (
            "no privileges could be revoked",
            "not all privileges could be revoked",
        )
    };
    if granted.is_empty() {
        notices.push(("WARNING", format!("{none} for \"{}\"", o.name)));
    } else if !all && granted != want {
        notices.push(("WARNING", format!("{some} for \"{}\"", o.name)));
    }
}

/// The column half of a GRANT or REVOKE; a table-level REVOKE reaches every
/// column too, as PostgreSQL's does.
fn change_columns(
    o: &mut Object,
    a: &Asked,
    (grantees, g, avail): (&[Oid], Oid, Priv),
    p: &PrivStmt,
    is_grant: bool,
) -> SqlResult<()> {
    for (col, pr) in &a.columns {
        let pr = pr.intersect(avail);
        let Some((_, acl)) = o.columns.iter_mut().find(|(n, _)| n == col) else {
            return Err(SqlError::new(
                "42703",
                format!("column \"{col}\" of relation \"{}\" does not exist", o.name),
            ));
        };
        let mut list = acl.take().unwrap_or_default();
        if is_grant {
            grant_into(&mut list, grantees, g, pr, p.grant_option);
        } else {
            revoke_from(&mut list, grantees, g, pr, (p.grant_option, p.cascade))?;
        }
        *acl = (!list.is_empty()).then_some(list);
    }
    if !is_grant && !a.table.is_empty() {
        for (_, acl) in o.columns.iter_mut() {
            if let Some(mut list) = acl.take() {
                let flags = (p.grant_option, p.cascade);
                revoke_from(&mut list, grantees, g, a.table.intersect(avail), flags)?;
                *acl = (!list.is_empty()).then_some(list);
            }
        }
    }
    Ok(())
}

/// Writes an object's owner and ACLs back.
fn store(t: &mut Txn<'_>, db: &str, o: Object) -> SqlResult<()> {
    match o.kind {
        ObjKind::Table | ObjKind::View | ObjKind::Sequence => {
            let access = RelAccess {
                owner: o.owner,
                acl: Some(o.acl),
                column_acls: o.columns.into_iter().map(|(_, a)| a).collect(),
            };
            t.set_relation_access(db, &o.name, access)?;
        }
        ObjKind::Database => {
            let d = t.database(&o.name)?;
            let public = d.public_acl.clone();
            t.set_database_access(&o.name, o.owner, Some(o.acl), public)?;
        }
        ObjKind::Tablespace => t.set_tablespace_access(&o.name, o.owner, Some(o.acl))?,
        ObjKind::Schema => {
            let d = t.database(db)?;
            let (owner, acl) = (d.owner, d.acl.clone());
            t.set_database_access(db, owner, acl, Some(o.acl))?;
        }
    }
    Ok(())
}

/// An ACL with `old` replaced by `new` wherever it stands (PostgreSQL's
/// aclnewowner), items that then coincide merged.
fn new_owner_acl(acl: Option<Acl>, old: Oid, new: Oid) -> Option<Acl> {
    let acl = acl?;
    let mut out: Acl = Vec::with_capacity(acl.len());
    for mut i in acl {
        if i.grantee == old {
            i.grantee = new;
        }
        if i.grantor == old {
            i.grantor = new;
        }
        match out
            .iter_mut()
            .find(|o| o.grantee == i.grantee && o.grantor == i.grantor)
        {
            Some(o) => {
                o.privs = o.privs.union(i.privs);
                o.grant_options = o.grant_options.union(i.grant_options);
            }
            None => out.push(i),
        }
    }
    Some(out)
}

/// The owner CREATE DATABASE or CREATE TABLESPACE ... OWNER names, if the current
/// role may make it one (a superuser, or a member of it: PostgreSQL 15's "must be
/// member of role"); None without the clause (the current role owns it).
pub(crate) fn owner_for_new(
    t: &Txn<'_>,
    (me, user, db): (&str, &str, &str),
    owner: Option<&RoleSpec>,
) -> SqlResult<Option<Oid>> {
    let Some(spec) = owner else {
        return Ok(None);
    };
    let new = role_oid(t, spec, (me, user))?;
    let w = acting(t, me, db)?;
    if w.superuser || w.oid == new || w.member_of.contains(&new) {
        return Ok(Some(new));
    }
    Err(SqlError::new(
        "42501",
        format!(
            "must be member of role \"{}\"",
            crate::roles::role_name(t, new)
        ),
    ))
}

fn role_oid(t: &Txn<'_>, r: &RoleSpec, (current, session): (&str, &str)) -> SqlResult<Oid> {
    let name = match r {
        RoleSpec::Name(n) => n.as_str(),
        RoleSpec::CurrentUser => current,
        RoleSpec::SessionUser => session,
        RoleSpec::Public => return Err(SqlError::new("42704", "role \"public\" does not exist")),
    };
    Ok(Catalog::role(t, name)?.oid)
}

/// ALTER TABLE | SEQUENCE | DATABASE | TABLESPACE name OWNER TO role: the owner
/// (or a superuser), a member of the new owner, gives it away; the ACL follows.
pub(crate) fn alter_owner(
    s: &mut Session<'_>,
    kind: ObjKind,
    name: &str,
    owner: &RoleSpec,
) -> SqlResult<()> {
    let (me, user, db) = s.names();
    s.write(|t| {
        let w = acting(t, &me, &db)?;
        let new = role_oid(t, owner, (&me, &user))?;
        let new_name = crate::roles::role_name(t, new);
        let may_become = |w: &Who| {
            if w.superuser || w.member_of.contains(&new) || w.oid == new {
                Ok(())
            } else {
                Err(SqlError::new(
                    "42501",
                    format!("must be member of role \"{new_name}\""),
                ))
            }
        };
        match kind {
            ObjKind::Table | ObjKind::View | ObjKind::Sequence => {
                let r = Catalog::relation_entry(t, &db, name)?;
                if kind == ObjKind::Sequence && r.sequence.is_none() {
                    return Err(SqlError::new(
                        "42809",
                        format!("\"{name}\" is not a sequence"),
                    ));
                }
                if r.owner == new {
                    return Ok(());
                }
                let word = if r.sequence.is_some() {
                    "sequence"
                } else if r.view.is_some() {
                    "view"
                } else {
                    "table"
                };
                crate::privileges::require_owner(&w, r.owner, word, name)?;
                may_become(&w)?;
                if !w.superuser {
                    let new_role = t
                        .role_by_oid(new)
                        .ok_or_else(|| SqlError::new("42704", "role does not exist"))?;
                    let nw = who(t, &new_role, t.database(&db)?.owner);
                    require_create_in_public(&nw, &Catalog::database_entry(t, &db)?)?;
                }
                set_rel_owner(t, &db, &r, new)
            }
            ObjKind::Database => {
                let d = Catalog::database_entry(t, name)?;
                if d.owner == new {
                    return Ok(());
                }
                crate::privileges::require_owner(&w, d.owner, "database", name)?;
                may_become(&w)?;
                let me_role = Catalog::role(t, &me)?;
                if !w.superuser && !me_role.createdb {
                    return Err(SqlError::new(
                        "42501",
                        "permission denied to change owner of database",
                    ));
                }
                let acl = new_owner_acl(d.acl.clone(), d.owner, new);
                Ok(t.set_database_access(name, new, acl, d.public_acl.clone())?)
            }
            ObjKind::Tablespace => {
                let sp = Catalog::tablespace_entry(t, name)?;
                if sp.owner == new {
                    return Ok(());
                }
                crate::privileges::require_owner(&w, sp.owner, "tablespace", name)?;
                may_become(&w)?;
                let acl = new_owner_acl(sp.acl.clone(), sp.owner, new);
                Ok(t.set_tablespace_access(name, new, acl)?)
            }
            ObjKind::Schema => Err(SqlError::unsupported("ALTER SCHEMA ... OWNER TO")),
        }
    })
}

fn set_rel_owner(t: &mut Txn<'_>, db: &str, r: &RelEntry, new: Oid) -> SqlResult<()> {
    let access = RelAccess {
        owner: new,
        acl: new_owner_acl(r.acl.clone(), r.owner, new),
        column_acls: r
            .columns
            .iter()
            .map(|c| new_owner_acl(c.acl.clone(), r.owner, new))
            .collect(),
    };
    Ok(t.set_relation_access(db, &r.name, access)?)
}

/// REASSIGN OWNED BY a, ... TO b: what each role owns in the current database and
/// among the shared objects passes to `b`. Needs the privileges of every role
/// named.
pub(crate) fn reassign_owned(
    s: &mut Session<'_>,
    from: &[RoleSpec],
    to: &RoleSpec,
) -> SqlResult<()> {
    let (me, user, db) = s.names();
    s.write(|t| {
        let w = acting(t, &me, &db)?;
        let new = role_oid(t, to, (&me, &user))?;
        let db_oid = t.database(&db)?.oid;
        for r in from {
            let old = role_oid(t, r, (&me, &user))?;
            if !w.has_privs_of(old) || !w.has_privs_of(new) {
                return Err(SqlError::new("42501", "permission denied to reassign objects"));
            }
            if strata_engine::is_system_role(old) {
                return Err(SqlError::new("2BP01", format!(
                    "cannot reassign ownership of objects owned by role {} because they are required by the database system",
                    crate::roles::role_name(t, old)
                )));
            }
            for d in t.role_dependents(old).into_iter().filter(|d| d.owner) {
                match &d.dep {
                    RoleDep::Relation(rdb, name) if *rdb == db_oid => {
                        let r = Catalog::relation_entry(t, &db, name)?;
                        set_rel_owner(t, &db, &r, new)?;
                    }
                    RoleDep::Database(oid) => {
                        let dbe = t.database_by_oid(*oid).ok_or_else(|| SqlError::new("XX000", "database vanished"))?;
                        let acl = new_owner_acl(dbe.acl.clone(), old, new);
                        t.set_database_access(&dbe.name, new, acl, dbe.public_acl.clone())?;
                    }
                    RoleDep::Tablespace(oid) => {
                        let sp = t.tablespace_by_oid(*oid).ok_or_else(|| SqlError::new("XX000", "tablespace vanished"))?;
                        let acl = new_owner_acl(sp.acl.clone(), old, new);
                        t.set_tablespace_access(&sp.name, new, acl)?;
                    }
                    RoleDep::Relation(..) => {}
                }
            }
        }
        Ok(())
    })
}

/// An ACL without `role`'s items (as grantee).
fn without(acl: Option<Acl>, role: Oid) -> Option<Acl> {
    acl.map(|mut a| {
        a.retain(|i| i.grantee != role);
        a
    })
}

/// DROP OWNED BY a, ...: the relations each role owns in the current database are
/// dropped, and every privilege granted to it there and on shared objects is
/// revoked (its own databases and tablespaces stay, as in PostgreSQL).
pub(crate) fn drop_owned(
    s: &mut Session<'_>,
    roles: &[RoleSpec],
    _cascade: bool,
    _notices: &mut Notices,
) -> SqlResult<()> {
    let (me, user, db) = s.names();
    s.write(|t| {
        let w = acting(t, &me, &db)?;
        let db_oid = t.database(&db)?.oid;
        for r in roles {
            let role = role_oid(t, r, (&me, &user))?;
            if !w.has_privs_of(role) {
                return Err(SqlError::new("42501", "permission denied to drop objects"));
            }
            if strata_engine::is_system_role(role) {
                return Err(SqlError::new("2BP01", format!(
                    "cannot drop objects owned by role {} because they are required by the database system",
                    crate::roles::role_name(t, role)
                )));
            }
            drop_owned_by(t, &db, db_oid, role)?;
        }
        Ok(())
    })
}

fn drop_owned_by(t: &mut Txn<'_>, db: &str, db_oid: Oid, role: Oid) -> SqlResult<()> {
    let deps = t.role_dependents(role);
    // Tables first (their owned sequences go with them), then what is left.
    let mut owned: Vec<(bool, String)> = deps
        .iter()
        .filter_map(|d| match &d.dep {
            RoleDep::Relation(rdb, name) if *rdb == db_oid && d.owner => {
                Some((d.kind == "sequence", name.clone()))
            }
            _ => None,
        })
        .collect();
    owned.sort();
    for (is_seq, name) in &owned {
        let Ok(r) = Catalog::relation_entry(t, db, name) else {
            continue;
        };
        if *is_seq || r.sequence.is_some() {
            t.drop_sequence(db, name)?;
        } else {
            t.drop_table(db, name)?;
        }
    }
    for d in t.role_dependents(role).into_iter().filter(|d| !d.owner) {
        match &d.dep {
            RoleDep::Relation(rdb, name) if *rdb == db_oid => {
                let r = Catalog::relation_entry(t, db, name)?;
                let access = RelAccess {
                    owner: r.owner,
                    acl: without(r.acl.clone(), role),
                    column_acls: r
                        .columns
                        .iter()
                        .map(|c| without(c.acl.clone(), role))
                        .collect(),
                };
                t.set_relation_access(db, name, access)?;
            }
            RoleDep::Database(oid) => {
                let e = t
                    .database_by_oid(*oid)
                    .ok_or_else(|| SqlError::new("XX000", "database vanished"))?;
                let (acl, public) = (
                    without(e.acl.clone(), role),
                    without(e.public_acl.clone(), role),
                );
                t.set_database_access(&e.name, e.owner, acl, public)?;
            }
            RoleDep::Tablespace(oid) => {
                let e = t
                    .tablespace_by_oid(*oid)
                    .ok_or_else(|| SqlError::new("XX000", "tablespace vanished"))?;
                t.set_tablespace_access(&e.name, e.owner, without(e.acl.clone(), role))?;
            }
            RoleDep::Relation(..) => {}
        }
    }
    Ok(())
}
