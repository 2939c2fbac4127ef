//! Roles and who owns and may use what, as catalog rows (catalog rule 7): CREATE,
//! ALTER and DROP ROLE, memberships, and the owners and ACLs of tablespaces,
//! databases (and their schema `public`) and relations. What a privilege allows is
//! the SQL layer's (its `privileges` module); this module keeps the rows.
//!
//! Entry points: [`Txn::role`], [`Txn::create_role`], [`Txn::alter_role`],
//! [`Txn::drop_role`], [`Txn::role_dependents`], [`Txn::set_relation_access`],
//! [`Txn::set_database_access`], [`Txn::set_tablespace_access`], and the committed
//! view [`Engine::role`] / [`Engine::role_by_oid`] (authentication, sessions).
//!
//! Rules (cited as "roles rule N"):
//! 1. A role row changes as any catalog row (delete the old version, insert the
//!    new), so its history is the WAL's: a password set on the primary is the
//!    standby's after replay, a crash keeps exactly the committed roles.
//! 2. DROP ROLE is refused (2BP01) while anything names the role (an object it
//!    owns, an ACL it is in: [`Txn::role_dependents`]); its memberships, both ways,
//!    go with it. The bootstrap superuser and the predefined roles cannot be
//!    dropped.
//! 3. Every lookup is by name or OID through hashes, and dependents come from the
//!    cache's derived map plus this transaction's changes: nothing here visits every
//!    role or relation.

use crate::catalog::{
    self, authid_columns, database_columns, pg_authid, pg_database, pg_tablespace,
    tablespace_columns, Acl, Membership, RelEntry, RoleDep, RoleEntry, BOOTSTRAP_SUPERUSER,
    BOOTSTRAP_SUPERUSER_OID,
};
use crate::{Engine, EngineError, Result, Txn};
use std::sync::Arc;
use strata_types::Oid;

/// PostgreSQL 15's predefined roles, with its OIDs, and the roles each is a member
/// of (pg_monitor holds the three monitoring roles).
pub const PREDEFINED_ROLES: &[(u32, &str, &[u32])] = &[
    (6171, "pg_database_owner", &[]),
    (6181, "pg_read_all_data", &[]),
    (6182, "pg_write_all_data", &[]),
    (3374, "pg_read_all_settings", &[]),
    (3375, "pg_read_all_stats", &[]),
    (3377, "pg_stat_scan_tables", &[]),
    (3373, "pg_monitor", &[3374, 3375, 3377]),
    (4569, "pg_read_server_files", &[]),
    (4570, "pg_write_server_files", &[]),
    (4571, "pg_execute_server_program", &[]),
    (4200, "pg_signal_backend", &[]),
    (4544, "pg_checkpoint", &[]),
];

/// Whether `oid` is the bootstrap superuser or a predefined role (roles rule 2).
pub fn is_system_role(oid: Oid) -> bool {
    oid == BOOTSTRAP_SUPERUSER_OID || PREDEFINED_ROLES.iter().any(|(o, _, _)| *o == oid.0)
}

/// What names a role, as DROP ROLE reports it (roles rule 2).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RoleDependent {
    pub dep: RoleDep,
    /// The role owns it (else: it is in its ACL).
    pub owner: bool,
    /// PostgreSQL's word for the object: `table`, `sequence`, `database`,
    /// `tablespace`, `schema`.
    pub kind: &'static str,
}

/// Who owns a relation and its ACLs (table, column by column).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RelAccess {
    pub owner: Oid,
    pub acl: Option<Acl>,
    pub column_acls: Vec<Option<Acl>>,
}

impl Engine {
    /// A committed role, by name.
    pub fn role(&self, name: &str) -> Option<Arc<RoleEntry>> {
        self.sh.catalog.read().roles.get(name).cloned()
    }

    /// A committed role, by OID.
    pub fn role_by_oid(&self, oid: Oid) -> Option<Arc<RoleEntry>> {
        let cat = self.sh.catalog.read();
        cat.roles.get(cat.role_names.get(&oid)?).cloned()
    }

    /// Whether any committed role has a password.
    pub fn any_password(&self) -> bool {
        self.sh
            .catalog
            .read()
            .roles
            .values()
            .any(|r| r.password.is_some())
    }
}

impl Txn<'_> {
    /// A role as this transaction sees it (42704 if none).
    pub fn role(&self, name: &str) -> Result<Arc<RoleEntry>> {
        let found = match self.ov.roles.get(name) {
            Some(e) => e.clone(),
            None => self.sh.catalog.read().roles.get(name).cloned(),
        };
        found.ok_or_else(|| EngineError::UndefinedObject(format!("role \"{name}\" does not exist")))
    }

    /// A role by OID as this transaction sees it. O(this transaction's role changes).
    pub fn role_by_oid(&self, oid: Oid) -> Option<Arc<RoleEntry>> {
        if let Some(e) = self.ov.roles.values().flatten().find(|e| e.oid == oid) {
            return Some(e.clone());
        }
        let name = self.sh.catalog.read().role_names.get(&oid).cloned()?;
        match self.ov.roles.get(&name) {
            Some(_) => None, // changed here, and not found above: dropped or renamed
            None => self.sh.catalog.read().roles.get(&name).cloned(),
        }
    }

    /// CREATE ROLE: a new row with a new OID (42710 if the name is taken).
    pub fn create_role(&mut self, mut e: RoleEntry) -> Result<Oid> {
        if self.role(&e.name).is_ok() {
            return Err(EngineError::DuplicateObject(format!(
                "role \"{}\" already exists",
                e.name
            )));
        }
        if e.oid == Oid(0) {
            e.oid = self.alloc_oid()?;
        }
        let oid = e.oid;
        self.insert_role(e)?;
        Ok(oid)
    }

    fn insert_role(&mut self, mut e: RoleEntry) -> Result<()> {
        e.tid = Some(self.catalog_insert(pg_authid(), &authid_columns(), &e.values())?);
        self.ov.roles.insert(e.name.clone(), Some(Arc::new(e)));
        Ok(())
    }

    /// ALTER ROLE (attributes, password, name, memberships): role `name`'s row
    /// replaced by `e` (roles rule 1); a new name must be free (42710).
    pub fn alter_role(&mut self, name: &str, mut e: RoleEntry) -> Result<()> {
        let old = self.role(name)?;
        if e.name != old.name && self.role(&e.name).is_ok() {
            return Err(EngineError::DuplicateObject(format!(
                "role \"{}\" already exists",
                e.name
            )));
        }
        e.oid = old.oid;
        self.catalog_delete(pg_authid(), old.tid)?;
        if e.name != old.name {
            self.ov.roles.insert(old.name.clone(), None);
        }
        self.insert_role(e)
    }

    /// DROP ROLE (roles rule 2): refused while anything names the role; the roles
    /// it is a member of, and its own members, lose the membership.
    pub fn drop_role(&mut self, name: &str) -> Result<()> {
        let role = self.role(name)?;
        if is_system_role(role.oid) {
            return Err(EngineError::DependentObjects(format!(
                "cannot drop role {name} because it is required by the database system"
            )));
        }
        if !self.role_dependents(role.oid).is_empty() {
            return Err(EngineError::DependentObjects(format!(
                "role \"{name}\" cannot be dropped because some objects depend on it"
            )));
        }
        for member in self.members_of(role.oid) {
            let mut e = (*member).clone();
            e.member_of.retain(|m| m.role != role.oid);
            self.alter_role(&member.name.clone(), e)?;
        }
        self.catalog_delete(pg_authid(), role.tid)?;
        self.ov.roles.insert(name.to_string(), None);
        Ok(())
    }

    /// The roles that are members of `role`, as this transaction sees them.
    /// O(members + this transaction's role changes).
    pub fn members_of(&self, role: Oid) -> Vec<Arc<RoleEntry>> {
        let committed: Vec<Oid> = self
            .sh
            .catalog
            .read()
            .role_members
            .get(&role)
            .map(|s| s.iter().copied().collect())
            .unwrap_or_default();
        let mut out: Vec<Arc<RoleEntry>> = committed
            .into_iter()
            .filter_map(|m| self.role_by_oid(m))
            .filter(|e| e.member_of.iter().any(|m| m.role == role))
            .collect();
        for e in self.ov.roles.values().flatten() {
            if e.member_of.iter().any(|m| m.role == role) && !out.iter().any(|o| o.oid == e.oid) {
                out.push(e.clone());
            }
        }
        out
    }

    /// Makes `member` a member of `role` (GRANT role TO member): its row gains the
    /// membership, or the admin option of one it has. Whether it changed.
    pub fn grant_membership(&mut self, role: Oid, member: &str, m: Membership) -> Result<bool> {
        let e = self.role(member)?;
        let mut next = (*e).clone();
        match next.member_of.iter_mut().find(|x| x.role == role) {
            Some(x) if x.admin || !m.admin => return Ok(false),
            Some(x) => x.admin = true,
            None => next.member_of.push(m),
        }
        self.alter_role(member, next)?;
        Ok(true)
    }
}

/// The relations of a database, by the object kind PostgreSQL names them with.
fn rel_kind(r: &RelEntry) -> &'static str {
    if r.sequence.is_some() {
        "sequence"
    } else {
        "table"
    }
}

fn names(owner: Oid, acls: &[&Acl], role: Oid) -> Option<bool> {
    if owner == role {
        return Some(true);
    }
    acls.iter()
        .any(|a| crate::acl::roles_named(a).any(|r| r == role))
        .then_some(false)
}

impl Txn<'_> {
    /// Everything that names `role` (roles rule 2): owned objects and ACL entries,
    /// in every database, as this transaction sees them. O(dependents + this
    /// transaction's catalog changes).
    pub fn role_dependents(&self, role: Oid) -> Vec<RoleDependent> {
        let committed: Vec<RoleDep> = self
            .sh
            .catalog
            .read()
            .role_deps
            .get(&role)
            .map(|s| s.iter().cloned().collect())
            .unwrap_or_default();
        let mut deps: Vec<RoleDep> = committed;
        for ((db, name), e) in &self.ov.rels {
            if e.is_some() {
                deps.push(RoleDep::Relation(*db, name.clone()));
            }
        }
        deps.extend(
            self.ov
                .dbs
                .values()
                .flatten()
                .map(|d| RoleDep::Database(d.oid)),
        );
        deps.extend(
            self.ov
                .spcs
                .values()
                .flatten()
                .map(|s| RoleDep::Tablespace(s.oid)),
        );
        deps.sort();
        deps.dedup();
        deps.into_iter()
            .filter_map(|d| self.dependent(d, role))
            .collect()
    }

    /// `dep` as it stands now, if it still names `role`.
    fn dependent(&self, dep: RoleDep, role: Oid) -> Option<RoleDependent> {
        let (owner, kind) = match &dep {
            RoleDep::Relation(db, name) => {
                let dbe = self.database_by_oid(*db)?;
                let r = self.relation(&dbe, name).ok()?;
                let mut acls: Vec<&Acl> = r.acl.iter().collect();
                acls.extend(r.columns.iter().filter_map(|c| c.acl.as_ref()));
                (names(r.owner, &acls, role)?, rel_kind(&r))
            }
            RoleDep::Database(oid) => {
                let d = self.database_by_oid(*oid)?;
                let acls: Vec<&Acl> = d.acl.iter().chain(d.public_acl.iter()).collect();
                (names(d.owner, &acls, role)?, "database")
            }
            RoleDep::Tablespace(oid) => {
                let s = self.tablespace_by_oid(*oid)?;
                let acls: Vec<&Acl> = s.acl.iter().collect();
                (names(s.owner, &acls, role)?, "tablespace")
            }
        };
        Some(RoleDependent { dep, owner, kind })
    }

    /// A database by OID as this transaction sees it. O(its database changes).
    pub fn database_by_oid(&self, oid: Oid) -> Option<Arc<catalog::DbEntry>> {
        if let Some(d) = self.ov.dbs.values().flatten().find(|d| d.oid == oid) {
            return Some(d.clone());
        }
        let name = {
            let cat = self.sh.catalog.read();
            cat.dbs
                .values()
                .find(|d| d.oid == oid)
                .map(|d| d.name.clone())?
        };
        self.database(&name).ok().filter(|d| d.oid == oid)
    }

    /// A tablespace by OID as this transaction sees it. O(its tablespace changes).
    pub fn tablespace_by_oid(&self, oid: Oid) -> Option<Arc<catalog::SpcEntry>> {
        if let Some(s) = self.ov.spcs.values().flatten().find(|s| s.oid == oid) {
            return Some(s.clone());
        }
        let name = {
            let cat = self.sh.catalog.read();
            cat.spcs
                .values()
                .find(|s| s.oid == oid)
                .map(|s| s.name.clone())?
        };
        match self.ov.spcs.get(&name) {
            Some(_) => None,
            None => self.sh.catalog.read().spcs.get(&name).cloned(),
        }
    }

    /// The owner and ACLs of relation `name` of database `db`.
    pub fn relation_access(&self, db: &str, name: &str) -> Result<RelAccess> {
        let dbe = self.database(db)?;
        let r = self.relation(&dbe, name)?;
        Ok(RelAccess {
            owner: r.owner,
            acl: r.acl.clone(),
            column_acls: r.columns.iter().map(|c| c.acl.clone()).collect(),
        })
    }

    /// Sets relation `name`'s owner and ACLs (GRANT, REVOKE, ALTER ... OWNER TO):
    /// one new version of its pg_class row. The column list must match.
    pub fn set_relation_access(&mut self, db: &str, name: &str, a: RelAccess) -> Result<()> {
        let dbe = self.database(db)?;
        let r = self.relation(&dbe, name)?;
        if a.column_acls.len() != r.columns.len() {
            return Err(crate::corrupt("column ACLs do not match the columns"));
        }
        let mut e = (*r).clone();
        e.owner = a.owner;
        e.acl = a.acl;
        for (c, acl) in e.columns.iter_mut().zip(a.column_acls) {
            c.acl = acl;
        }
        self.replace_class_row(&dbe, &r, e)
    }

    /// Sets database `name`'s owner, ACL and its schema public's ACL.
    pub fn set_database_access(
        &mut self,
        name: &str,
        owner: Oid,
        acl: Option<Acl>,
        public_acl: Option<Acl>,
    ) -> Result<()> {
        let d = self.database(name)?;
        let mut e = (*d).clone();
        (e.owner, e.acl, e.public_acl) = (owner, acl, public_acl);
        self.catalog_delete(pg_database(), d.tid)?;
        e.tid = Some(self.catalog_insert(pg_database(), &database_columns(), &e.values())?);
        self.ov.dbs.insert(name.to_string(), Some(Arc::new(e)));
        Ok(())
    }

    /// Sets tablespace `name`'s owner and ACL.
    pub fn set_tablespace_access(
        &mut self,
        name: &str,
        owner: Oid,
        acl: Option<Acl>,
    ) -> Result<()> {
        let s = self.tablespace(name)?;
        let mut e = (*s).clone();
        (e.owner, e.acl) = (owner, acl);
        self.catalog_delete(pg_tablespace(), s.tid)?;
        e.tid = Some(self.catalog_insert(pg_tablespace(), &tablespace_columns(), &e.values())?);
        self.ov.spcs.insert(name.to_string(), Some(Arc::new(e)));
        Ok(())
    }

    /// The tablespace `name` as this transaction sees it (42704).
    pub fn tablespace_entry(&self, name: &str) -> Result<Arc<catalog::SpcEntry>> {
        self.tablespace(name)
    }
}

/// initdb's roles: the bootstrap superuser (every attribute) and PostgreSQL's
/// predefined roles, in a new `pg_authid`.
pub(crate) fn bootstrap(t: &mut Txn<'_>) -> Result<()> {
    t.create_rel_file(pg_authid())?;
    let boot = RoleEntry {
        oid: BOOTSTRAP_SUPERUSER_OID,
        superuser: true,
        createrole: true,
        createdb: true,
        login: true,
        replication: true,
        bypassrls: true,
        ..RoleEntry::new(BOOTSTRAP_SUPERUSER)
    };
    t.insert_role(boot)?;
    for (oid, name, member_of) in PREDEFINED_ROLES {
        let e = RoleEntry {
            oid: Oid(*oid),
            member_of: member_of
                .iter()
                .map(|r| Membership {
                    role: Oid(*r),
                    grantor: BOOTSTRAP_SUPERUSER_OID,
                    admin: false,
                })
                .collect(),
            ..RoleEntry::new(name)
        };
        t.insert_role(e)?;
    }
    Ok(())
}

/// A cluster made before roles were catalog rows has none: its roles are made at
/// start-up, once (a primary only: a standby gets them from its primary's WAL).
pub(crate) fn upgrade(engine: &Engine) -> Result<()> {
    if !engine.sh.catalog.read().roles.is_empty() || engine.in_recovery() {
        return Ok(());
    }
    let mut t = engine.begin();
    bootstrap(&mut t)?;
    t.commit()
}
