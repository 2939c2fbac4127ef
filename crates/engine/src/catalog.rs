//! The catalog: tablespaces, databases and relations, stored as heap relations (so
//! they are WAL-logged, crash-safe and transactional like any table) and cached in
//! memory.
//!
//! Entry points: [`CatalogCache`], the row codecs [`SpcEntry::values`] etc., and the
//! fixed relations [`pg_tablespace`], [`pg_database`], [`pg_class`],
//! [`pg_statistic`].
//!
//! | catalog | where | columns |
//! |---------|-------|---------|
//! | `pg_tablespace` | `global/1213` | oid int4, spcname text, spclocation text, spcowner int4, spcacl text |
//! | `pg_database` | `global/1262` | oid int4, datname text, dattablespace int4, datistemplate bool, datallowconn bool, datdba int4, datacl text, nspacl text (its schema `public`'s) |
//! | `pg_class` | `<db's directory>/1259`, one per database | oid int4, relname text, relfilenode int8, reltablespace int4 (0 = the database's), relcolumns text (column ACLs in it), relowner int4, relacl text, relview text (rule 9) |
//! | `pg_statistic` | `<db's directory>/2619`, one per database (rule 10) | starelid int4, stadata bytea (a [`TableStats`]'s byte form) |
//! | `pg_authid` | `global/1260` | oid int4, rolname text, rolsuper, rolinherit, rolcreaterole, rolcreatedb, rolcanlogin, rolreplication, rolbypassrls bool, rolconnlimit int4, rolpassword text, rolvaliduntil int8, rolmembers text |
//!
//! ACLs are PostgreSQL's `aclitem[]` text (`{=Tc/strata,bob=r*/strata}`), NULL for
//! the defaults (the owner holds everything; `privileges` module); owners and
//! grantees are role OIDs.
//!
//! Rules:
//! 1. `pg_class` lives in its database's directory, as PostgreSQL's does: dropping a
//!    database removes it with the directory; copying a database copies it.
//! 2. The cache holds committed state only. A transaction's changes live in its
//!    [`Overlay`] and reach the cache after its commit record is durable.
//! 3. Each cache entry remembers where its row is (`tid`) so that a drop deletes that
//!    row without a scan. Catalog heaps are never pruned, so a tid stays valid.
//! 4. Lookups are hash lookups: nothing here is O(objects) except loading at start-up.
//! 5. A table's indexes ([`IndexDef`]) are kept in its own `pg_class` row, so that
//!    creating, dropping or rebuilding one is one row change with the table's, and the
//!    writer finds every index of a table it changes in the entry it already holds.
//!    Index names share the relations' namespace (42P07); the cache derives an index
//!    name → table map from the rows (`index_owner`).
//! 6. A sequence is a relation of its own (its own `pg_class` row, marked by its
//!    [`SeqDef`], and a one-page file). A sequence a column owns (`serial`,
//!    identity) is named in that column (`Column::owned_seq`), so dropping the
//!    column or its table finds it without a search, and is dropped in the same
//!    transaction.
//! 7. Roles are rows of the shared `pg_authid`, WAL-logged like every catalog row, so
//!    crash recovery, standbys and base backups carry them (and passwords: the SCRAM
//!    verifier in PostgreSQL's `rolpassword` form). A role's memberships are kept in
//!    its own row (`rolmembers`: the roles it is a member of), so GRANT and REVOKE
//!    of a role change one row. The cache maps OIDs to names (`role_names`) and
//!    each role to the objects that name it (`role_deps`: owners and grantees),
//!    derived wherever rows change, so DROP ROLE, REASSIGN OWNED and DROP OWNED
//!    visit only what depends on the role.
//! 8. Columns added to a catalog are appended, and read as NULL from the rows of an
//!    older cluster ([`crate::heap::decode_catalog_values`]); a catalog keeps at
//!    most eight columns per null-bitmap byte it had (pg_authid excepted, born
//!    with its thirteen), so an old row's bitmap still covers the new columns.
//! 9. A view is a relation without storage: its `pg_class` row holds its columns
//!    and, in `relview`, its query's text and the relations that query reads
//!    ([`ViewDef`]), WAL-logged and replayed like every catalog row. The cache maps
//!    each relation to the views that read it (`view_deps`), derived wherever rows
//!    change, so dropping a table finds its dependent views without a search.
//! 10. A table's planner statistics ([`TableStats`], what ANALYZE learns) are one
//!     row of its database's `pg_statistic`, keyed by the table's OID (so a new
//!     table of a dropped one's name never finds them), written by
//!     `Txn::set_table_stats` and deleted by DROP TABLE in the same transaction;
//!     DROP DATABASE takes the file with the directory, CREATE DATABASE copies it
//!     (rule 1). The row is never TOASTed, so statistics too big for a page are
//!     shrunk to fit ([`StatEntry::fitted`]). A database made before
//!     `pg_statistic` has no file: it reads as empty and the first statistics
//!     stored create it, in their transaction. The cache holds the decoded
//!     statistics per database and table OID (`stats`), so a planner's lookup is
//!     O(1) and decodes nothing. A temporary table's statistics, like its entry,
//!     have no row and live in the cache alone.
//! 11. A table's FOREIGN KEYs ([`ForeignKey`]) are kept in its own `pg_class` row,
//!     after its indexes, naming the referenced table by its stored name and both
//!     sides' columns by position (so renaming a column changes nothing; renaming
//!     or dropping a column or the referenced table rewrites the referencing rows).
//!     The cache maps each referenced table to the tables that reference it
//!     (`fk_deps`), derived wherever rows change, so a DELETE from the referenced
//!     table finds the keys to check in O(1), never by a search of all tables.
//! 12. The cache counts the changes applied to it ([`CatalogCache::version`]): each
//!     commit of catalog changes, each standby replay of them, each load. A session
//!     keeps a prepared statement's plan while the count it was made under holds;
//!     a transaction's own uncommitted changes ([`Overlay::is_empty`]) are seen by
//!     its session alone, which plans afresh while it has any.

use crate::acl::AclItem;
use crate::codec::{DecResult, DecodeError};

/// An access control list (acl module).
pub type Acl = Vec<AclItem>;
use crate::heap::{ColType, Column, Datum};
use crate::stats::TableStats;
use rustc_hash::{FxHashMap, FxHashSet};
use std::sync::Arc;
use strata_types::{
    BlockNumber, Oid, RelFileNumber, RelKey, DEFAULT_TABLESPACE, GLOBAL_TABLESPACE,
};

pub const PG_TABLESPACE_REL: RelFileNumber = RelFileNumber(1213);
pub const PG_DATABASE_REL: RelFileNumber = RelFileNumber(1262);
pub const PG_CLASS_REL: RelFileNumber = RelFileNumber(1259);
pub const PG_AUTHID_REL: RelFileNumber = RelFileNumber(1260);
pub const PG_STATISTIC_REL: RelFileNumber = RelFileNumber(2619);
/// The bootstrap superuser's OID (PostgreSQL's BOOTSTRAP_SUPERUSERID), owner of
/// what `strata init` makes.
pub const BOOTSTRAP_SUPERUSER_OID: Oid = Oid(10);
/// The bootstrap superuser `strata init` creates.
pub const BOOTSTRAP_SUPERUSER: &str = "strata";
/// First OID and relation file number handed to user objects (PostgreSQL's
/// FirstNormalObjectId).
pub const FIRST_NORMAL_OID: u32 = 16384;
pub const TEMPLATE1_OID: Oid = Oid(1);
pub const TEMPLATE0_OID: Oid = Oid(4);
pub const POSTGRES_OID: Oid = Oid(5);

pub fn pg_tablespace() -> RelKey {
    RelKey::new(GLOBAL_TABLESPACE, Oid(0), PG_TABLESPACE_REL)
}
pub fn pg_database() -> RelKey {
    RelKey::new(GLOBAL_TABLESPACE, Oid(0), PG_DATABASE_REL)
}
pub fn pg_authid() -> RelKey {
    RelKey::new(GLOBAL_TABLESPACE, Oid(0), PG_AUTHID_REL)
}
/// `pg_class` of database `db` whose default tablespace is `spc` (rule 1).
pub fn pg_class(spc: Oid, db: Oid) -> RelKey {
    RelKey::new(spc, db, PG_CLASS_REL)
}

/// `pg_statistic` of database `db` whose default tablespace is `spc` (rules 1, 10).
pub fn pg_statistic(spc: Oid, db: Oid) -> RelKey {
    RelKey::new(spc, db, PG_STATISTIC_REL)
}

pub fn tablespace_columns() -> Vec<Column> {
    vec![
        Column::new("oid", ColType::Int4),
        Column::new("spcname", ColType::Text),
        Column::new("spclocation", ColType::Text),
        Column::new("spcowner", ColType::Int4),
        Column::new("spcacl", ColType::Text),
    ]
}
pub fn database_columns() -> Vec<Column> {
    vec![
        Column::new("oid", ColType::Int4),
        Column::new("datname", ColType::Text),
        Column::new("dattablespace", ColType::Int4),
        Column::new("datistemplate", ColType::Bool),
        Column::new("datallowconn", ColType::Bool),
        Column::new("datdba", ColType::Int4),
        Column::new("datacl", ColType::Text),
        Column::new("nspacl", ColType::Text),
    ]
}
pub fn class_columns() -> Vec<Column> {
    vec![
        Column::new("oid", ColType::Int4),
        Column::new("relname", ColType::Text),
        Column::new("relfilenode", ColType::Int8),
        Column::new("reltablespace", ColType::Int4),
        Column::new("relcolumns", ColType::Text),
        Column::new("relowner", ColType::Int4),
        Column::new("relacl", ColType::Text),
        Column::new("relview", ColType::Text),
    ]
}
pub fn statistic_columns() -> Vec<Column> {
    vec![
        Column::new("starelid", ColType::Int4),
        Column::new("stadata", ColType::Bytea),
    ]
}
pub fn authid_columns() -> Vec<Column> {
    let b = |n: &str| Column::new(n, ColType::Bool);
    vec![
        Column::new("oid", ColType::Int4),
        Column::new("rolname", ColType::Text),
        b("rolsuper"),
        b("rolinherit"),
        b("rolcreaterole"),
        b("rolcreatedb"),
        b("rolcanlogin"),
        b("rolreplication"),
        b("rolbypassrls"),
        Column::new("rolconnlimit", ColType::Int4),
        Column::new("rolpassword", ColType::Text),
        Column::new("rolvaliduntil", ColType::Int8),
        Column::new("rolmembers", ColType::Text),
    ]
}

/// Where a row is: block and item index.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Tid {
    pub block: BlockNumber,
    pub offset: u16,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SpcEntry {
    pub oid: Oid,
    pub name: String,
    pub location: String,
    pub owner: Oid,
    /// None: the defaults (acl module).
    pub acl: Option<Acl>,
    pub tid: Option<Tid>,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DbEntry {
    pub oid: Oid,
    pub name: String,
    pub spc: Oid,
    pub is_template: bool,
    pub allow_conn: bool,
    pub owner: Oid,
    pub acl: Option<Acl>,
    /// The ACL of the database's schema `public` (PostgreSQL 15's: owned by
    /// pg_database_owner, USAGE to PUBLIC).
    pub public_acl: Option<Acl>,
    pub tid: Option<Tid>,
}

impl DbEntry {
    pub fn pg_class(&self) -> RelKey {
        pg_class(self.spc, self.oid)
    }
    pub fn pg_statistic(&self) -> RelKey {
        pg_statistic(self.spc, self.oid)
    }
}

/// A table's statistics (rule 10): its `pg_statistic` row, decoded.
#[derive(Clone, Debug, PartialEq)]
pub struct StatEntry {
    /// The table's OID (`starelid`).
    pub relid: Oid,
    pub stats: Arc<TableStats>,
    /// None for a temporary table's (no row).
    pub tid: Option<Tid>,
}

impl StatEntry {
    /// The entry of table `relid` holding `stats`, shrunk until its row fits a page
    /// (rule 10; stats rule 4). O(encodings: log of the values kept + columns).
    pub fn fitted(relid: Oid, mut stats: TableStats) -> StatEntry {
        let cols = statistic_columns();
        loop {
            let e = StatEntry {
                relid,
                stats: Arc::new(stats),
                tid: None,
            };
            let len = crate::heap::encode_tuple(strata_types::Xid(0), &cols, &e.values()).len();
            if len <= crate::heap::TUPLE_MAX_BYTES {
                return e;
            }
            match e.stats.shrunk() {
                Some(smaller) => stats = smaller,
                None => return e, // nothing left to drop: the insert reports 54000
            }
        }
    }

    pub fn values(&self) -> Vec<Datum> {
        vec![
            Datum::Int4(self.relid.0 as i32),
            Datum::Bytea(self.stats.encode()),
        ]
    }

    pub fn from_values(v: &[Datum], tid: Tid) -> DecResult<StatEntry> {
        match v {
            [Datum::Int4(relid), Datum::Bytea(b)] => Ok(StatEntry {
                relid: Oid(*relid as u32),
                stats: Arc::new(TableStats::decode(b)?),
                tid: Some(tid),
            }),
            _ => Err(bad("pg_statistic")),
        }
    }
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RelEntry {
    pub oid: Oid,
    pub name: String,
    pub relfilenumber: RelFileNumber,
    /// 0 = the database's default tablespace.
    pub reltablespace: Oid,
    pub columns: Vec<Column>,
    /// The table's indexes (rule 5).
    pub indexes: Vec<IndexDef>,
    /// A sequence's definition (rule 6); `None` for a table.
    pub sequence: Option<SeqDef>,
    /// A view's definition (rule 9); `None` for a table or sequence.
    pub view: Option<ViewDef>,
    /// The table's FOREIGN KEYs (rule 11).
    pub foreign_keys: Vec<ForeignKey>,
    pub owner: Oid,
    pub acl: Option<Acl>,
    pub tid: Option<Tid>,
}

/// A sequence (rule 6): its values' type and bounds. Its state (last value,
/// pre-logged count, is-called) lives in its one page (`sequence` module).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SeqDef {
    /// `smallint`, `integer` or `bigint` (AS type).
    pub ty: ColType,
    pub increment: i64,
    pub min: i64,
    pub max: i64,
    pub start: i64,
    pub cache: i64,
    pub cycle: bool,
    /// Owned by a column (`serial`, identity): dropped with it; DROP SEQUENCE of it
    /// alone is 2BP01.
    pub owned: bool,
}

/// A view (rule 9): its defining query as text and the relations and columns
/// that query reads. Its own columns are the entry's `columns`; it has no storage.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ViewDef {
    /// The defining query, as the SQL layer prints it.
    pub query: String,
    /// The stored names of the relations the query reads, in this database, each
    /// with the names of the columns it reads.
    pub deps: Vec<(String, Vec<String>)>,
}

impl ViewDef {
    /// `relview`: the number of relations read, `:`, each relation's name and its
    /// column count then its columns' names as counted texts; then the query.
    fn encode(&self) -> String {
        let mut s = format!("{}:", self.deps.len());
        let mut put = |t: &str| s.push_str(&format!("{}:{t}", t.len()));
        for (rel, cols) in &self.deps {
            put(rel);
            put(&cols.len().to_string());
            for c in cols {
                put(c);
            }
        }
        s.push_str(&self.query);
        s
    }

    fn decode(text: &str) -> DecResult<ViewDef> {
        let b = || bad("pg_class view");
        let (n, mut rest) = text.split_once(':').ok_or_else(b)?;
        let n: usize = n.parse().map_err(|_| b())?;
        let mut take = || -> DecResult<String> {
            let (t, r) = counted(rest)?;
            rest = r;
            Ok(t.to_string())
        };
        let mut deps = Vec::with_capacity(n.min(64));
        for _ in 0..n {
            let rel = take()?;
            let k: usize = take()?.parse().map_err(|_| b())?;
            let cols = (0..k).map(|_| take()).collect::<DecResult<Vec<_>>>()?;
            deps.push((rel, cols));
        }
        Ok(ViewDef {
            query: rest.to_string(),
            deps,
        })
    }

    /// Whether the view reads column `col` of relation `rel`.
    pub fn reads_column(&self, rel: &str, col: &str) -> bool {
        self.deps
            .iter()
            .any(|(r, cols)| r == rel && cols.iter().any(|c| c == col))
    }
}

/// What a FOREIGN KEY does to the referencing rows when a referenced row is
/// deleted or its key changed (rule 11).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FkAction {
    NoAction,
    Restrict,
    Cascade,
    SetNull,
    SetDefault,
}

impl FkAction {
    const ALL: [(FkAction, char); 5] = [
        (FkAction::NoAction, 'a'),
        (FkAction::Restrict, 'r'),
        (FkAction::Cascade, 'c'),
        (FkAction::SetNull, 'n'),
        (FkAction::SetDefault, 'd'),
    ];

    /// PostgreSQL's `confdeltype` letter.
    pub fn code(self) -> char {
        Self::ALL
            .iter()
            .find(|(a, _)| *a == self)
            .expect("listed")
            .1
    }

    pub fn from_code(c: char) -> Option<FkAction> {
        Self::ALL.iter().find(|(_, x)| *x == c).map(|(a, _)| *a)
    }
}

/// A FOREIGN KEY of a table (rule 11).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ForeignKey {
    pub name: String,
    /// The referencing columns: positions in this table's columns.
    pub columns: Vec<usize>,
    /// The referenced table's stored name, in this database (the table itself for
    /// a self-reference).
    pub parent: String,
    /// The referenced columns, positions in the parent's, paired with `columns`.
    pub parent_columns: Vec<usize>,
    pub on_delete: FkAction,
    pub on_update: FkAction,
    /// MATCH FULL: a key is all NULL or has none (else MATCH SIMPLE).
    pub match_full: bool,
}

/// A B-tree index of a table (rule 5): its storage sits in the table's tablespace.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct IndexDef {
    pub oid: Oid,
    pub name: String,
    pub relfilenumber: RelFileNumber,
    /// The indexed columns, as positions in the table's columns.
    pub columns: Vec<usize>,
    pub unique: bool,
    /// The table's PRIMARY KEY (unique, its columns NOT NULL).
    pub primary: bool,
    /// Made by a PRIMARY KEY or UNIQUE constraint (dropped with the constraint, not
    /// by DROP INDEX: 2BP01).
    pub constraint: bool,
}

impl RelEntry {
    /// 42809 for a view, which has no storage to read or change (rule 9).
    pub fn has_storage(&self) -> crate::Result<()> {
        match self.view {
            Some(_) => Err(crate::EngineError::WrongObjectType(format!(
                "\"{}\" is a view",
                crate::temp::bare(&self.name)
            ))),
            None => Ok(()),
        }
    }

    /// Where index `ix` of this table is stored inside database `db`.
    pub fn index_key(&self, db: &DbEntry, ix: &IndexDef) -> RelKey {
        RelKey {
            rel: ix.relfilenumber,
            ..self.key(db)
        }
    }

    /// The relation's storage key inside database `db`.
    pub fn key(&self, db: &DbEntry) -> RelKey {
        let spc = if self.reltablespace == Oid(0) {
            db.spc
        } else {
            self.reltablespace
        };
        RelKey::new(spc, db.oid, self.relfilenumber)
    }
}

fn bad(what: &str) -> DecodeError {
    DecodeError(format!("catalog row of {what} does not decode"))
}

/// An owner column: the bootstrap superuser for a row older than owners (rule 8).
fn owner_of(v: &Datum) -> DecResult<Oid> {
    match v {
        Datum::Int4(o) => Ok(Oid(*o as u32)),
        Datum::Null => Ok(BOOTSTRAP_SUPERUSER_OID),
        _ => Err(bad("an owner")),
    }
}

/// A nullable text column (a password).
fn text_opt(v: &Datum) -> DecResult<Option<String>> {
    match v {
        Datum::Text(t) => Ok(Some(t.clone())),
        Datum::Null => Ok(None),
        _ => Err(bad("a text column")),
    }
}

fn text_value(t: &Option<String>) -> Datum {
    t.clone().map_or(Datum::Null, Datum::Text)
}

/// An ACL column (NULL: the defaults).
fn acl_opt(v: &Datum) -> DecResult<Option<Acl>> {
    text_opt(v)?.map(|t| crate::acl::decode(&t)).transpose()
}

fn acl_value(a: &Option<Acl>) -> Datum {
    a.as_ref()
        .map_or(Datum::Null, |a| Datum::Text(crate::acl::encode(a)))
}

impl SpcEntry {
    pub fn values(&self) -> Vec<Datum> {
        vec![
            Datum::Int4(self.oid.0 as i32),
            Datum::Text(self.name.clone()),
            Datum::Text(self.location.clone()),
            Datum::Int4(self.owner.0 as i32),
            acl_value(&self.acl),
        ]
    }
    pub fn from_values(v: &[Datum], tid: Tid) -> DecResult<SpcEntry> {
        match v {
            [Datum::Int4(oid), Datum::Text(name), Datum::Text(loc), owner, acl] => Ok(SpcEntry {
                oid: Oid(*oid as u32),
                name: name.clone(),
                location: loc.clone(),
                owner: owner_of(owner)?,
                acl: acl_opt(acl)?,
                tid: Some(tid),
            }),
            _ => Err(bad("pg_tablespace")),
        }
    }
}

impl DbEntry {
    pub fn values(&self) -> Vec<Datum> {
        vec![
            Datum::Int4(self.oid.0 as i32),
            Datum::Text(self.name.clone()),
            Datum::Int4(self.spc.0 as i32),
            Datum::Bool(self.is_template),
            Datum::Bool(self.allow_conn),
            Datum::Int4(self.owner.0 as i32),
            acl_value(&self.acl),
            acl_value(&self.public_acl),
        ]
    }
    pub fn from_values(v: &[Datum], tid: Tid) -> DecResult<DbEntry> {
        match v {
            [Datum::Int4(oid), Datum::Text(name), Datum::Int4(spc), Datum::Bool(t), Datum::Bool(c), owner, acl, public_acl] => {
                Ok(DbEntry {
                    oid: Oid(*oid as u32),
                    name: name.clone(),
                    spc: Oid(*spc as u32),
                    is_template: *t,
                    allow_conn: *c,
                    owner: owner_of(owner)?,
                    acl: acl_opt(acl)?,
                    public_acl: acl_opt(public_acl)?,
                    tid: Some(tid),
                })
            }
            _ => Err(bad("pg_database")),
        }
    }
}

/// `relcolumns`: for a sequence first `S` and seven counted texts (type code,
/// increment, minimum, maximum, start, cache, flags: `c` cycle, `o` owned); per
/// column `<type code><name length>:<name>`, then `!n` if NOT NULL,
/// `!d<length>:<default SQL>` if it has a DEFAULT (lengths in bytes), `!l` its
/// length limit, `!p` padded, `!c` each CHECK (name, SQL), `!m` numeric
/// `precision,scale`, `!ia` / `!id` identity
/// ALWAYS / BY DEFAULT, `!s` the sequence it owns, `!a` its privileges (aclitem[]
/// text), `!t` the fractional-second precision of a time type; then per index `#` and five
/// counted texts: name, OID, relation file number, flags (`u` unique, `p` primary,
/// `c` constraint), column positions joined by `,`; then per FOREIGN KEY (rule 11)
/// `%` and five counted texts: name, referenced table, flags (PostgreSQL's action
/// letters for ON DELETE then ON UPDATE, `f` MATCH FULL), the columns' positions,
/// the referenced columns' positions.
fn encode_columns(e: &RelEntry) -> String {
    let (cols, indexes, seq, fks) = (&e.columns, &e.indexes, e.sequence.as_ref(), &e.foreign_keys);
    let mut s = String::new();
    if let Some(q) = seq {
        s.push('S');
        let flags: String = [(q.cycle, 'c'), (q.owned, 'o')]
            .iter()
            .filter(|(on, _)| *on)
            .map(|(_, c)| *c)
            .collect();
        for t in [
            q.ty.code_of().to_string(),
            q.increment.to_string(),
            q.min.to_string(),
            q.max.to_string(),
            q.start.to_string(),
            q.cache.to_string(),
            flags,
        ] {
            s.push_str(&format!("{}:{t}", t.len()));
        }
    }
    for c in cols {
        s.push((b'0' + c.ty.code_of()) as char);
        s.push_str(&c.name.len().to_string());
        s.push(':');
        s.push_str(&c.name);
        if c.not_null {
            s.push_str("!n");
        }
        if let Some(d) = &c.default {
            s.push_str(&format!("!d{}:{d}", d.len()));
        }
        if let Some(n) = c.max_chars {
            let n = n.to_string();
            s.push_str(&format!("!l{}:{n}", n.len()));
        }
        if c.padded {
            s.push_str("!p");
        }
        for (name, sql) in &c.checks {
            s.push_str(&format!("!c{}:{name}{}:{sql}", name.len(), sql.len()));
        }
        if let Some((p, sc)) = c.numeric {
            let t = format!("{p},{sc}");
            s.push_str(&format!("!m{}:{t}", t.len()));
        }
        if let Some(always) = c.identity {
            s.push_str(if always { "!ia" } else { "!id" });
        }
        if let Some(seq) = &c.owned_seq {
            s.push_str(&format!("!s{}:{seq}", seq.len()));
        }
        if let Some(acl) = &c.acl {
            let acl = crate::acl::encode(acl);
            s.push_str(&format!("!a{}:{acl}", acl.len()));
        }
        if let Some(p) = c.precision {
            let p = p.to_string();
            s.push_str(&format!("!t{}:{p}", p.len()));
        }
    }
    for ix in indexes {
        let flags: String = [(ix.unique, 'u'), (ix.primary, 'p'), (ix.constraint, 'c')]
            .iter()
            .filter(|(on, _)| *on)
            .map(|(_, c)| *c)
            .collect();
        let cols: Vec<String> = ix.columns.iter().map(usize::to_string).collect();
        s.push('#');
        for t in [
            ix.name.clone(),
            ix.oid.0.to_string(),
            ix.relfilenumber.0.to_string(),
            flags,
            cols.join(","),
        ] {
            s.push_str(&format!("{}:{t}", t.len()));
        }
    }
    for fk in fks {
        s.push('%');
        let list = |c: &[usize]| c.iter().map(usize::to_string).collect::<Vec<_>>().join(",");
        let mut flags = format!("{}{}", fk.on_delete.code(), fk.on_update.code());
        if fk.match_full {
            flags.push('f');
        }
        for t in [
            fk.name.clone(),
            fk.parent.clone(),
            flags,
            list(&fk.columns),
            list(&fk.parent_columns),
        ] {
            s.push_str(&format!("{}:{t}", t.len()));
        }
    }
    s
}

/// One FOREIGN KEY of `relcolumns` (after its `%`), and what follows it (rule 11).
fn decode_foreign_key(rest: &str) -> DecResult<(ForeignKey, &str)> {
    let b = || bad("pg_class foreign keys");
    let (name, r) = counted(rest)?;
    let (parent, r) = counted(r)?;
    let (flags, r) = counted(r)?;
    let (cols, r) = counted(r)?;
    let (pcols, r) = counted(r)?;
    let list = |t: &str| -> DecResult<Vec<usize>> {
        t.split(',')
            .map(|c| c.parse::<usize>().map_err(|_| b()))
            .collect()
    };
    let mut f = flags.chars();
    let mut action = || f.next().and_then(FkAction::from_code).ok_or_else(b);
    let (on_delete, on_update) = (action()?, action()?);
    let fk = ForeignKey {
        name: name.to_string(),
        columns: list(cols)?,
        parent: parent.to_string(),
        parent_columns: list(pcols)?,
        on_delete,
        on_update,
        match_full: flags.contains('f'),
    };
    if fk.columns.len() != fk.parent_columns.len() {
        return Err(b());
    }
    Ok((fk, r))
}

/// One index of `relcolumns` (after its `#`), and what follows it.
fn decode_index(rest: &str) -> DecResult<(IndexDef, &str)> {
    let b = || bad("pg_class indexes");
    let (name, r) = counted(rest)?;
    let (oid, r) = counted(r)?;
    let (rfn, r) = counted(r)?;
    let (flags, r) = counted(r)?;
    let (cols, r) = counted(r)?;
    let columns = cols
        .split(',')
        .map(|c| c.parse::<usize>().map_err(|_| b()))
        .collect::<DecResult<Vec<_>>>()?;
    let ix = IndexDef {
        oid: Oid(oid.parse().map_err(|_| b())?),
        name: name.to_string(),
        relfilenumber: RelFileNumber(rfn.parse().map_err(|_| b())?),
        columns,
        unique: flags.contains('u'),
        primary: flags.contains('p'),
        constraint: flags.contains('c'),
    };
    Ok((ix, r))
}

/// A `<length>:<text>` at the start of `rest`: the text and what follows it.
fn counted(rest: &str) -> DecResult<(&str, &str)> {
    let colon = rest.find(':').ok_or_else(|| bad("pg_class columns"))?;
    let len: usize = rest[..colon].parse().map_err(|_| bad("pg_class columns"))?;
    let text = rest
        .get(colon + 1..colon + 1 + len)
        .ok_or_else(|| bad("pg_class columns"))?;
    Ok((text, &rest[colon + 1 + len..]))
}

/// A sequence's definition at the start of `relcolumns` (after its `S`).
fn decode_sequence(rest: &str) -> DecResult<(SeqDef, &str)> {
    let b = || bad("pg_class sequence");
    let mut fields = Vec::new();
    let mut r = rest;
    for _ in 0..7 {
        let (t, after) = counted(r)?;
        fields.push(t);
        r = after;
    }
    let num = |i: usize| fields[i].parse::<i64>().map_err(|_| b());
    let code: u8 = fields[0].parse().map_err(|_| b())?;
    let def = SeqDef {
        ty: ColType::from_code(code).ok_or_else(b)?,
        increment: num(1)?,
        min: num(2)?,
        max: num(3)?,
        start: num(4)?,
        cache: num(5)?,
        cycle: fields[6].contains('c'),
        owned: fields[6].contains('o'),
    };
    Ok((def, r))
}

type DecodedColumns = (Vec<Column>, Vec<IndexDef>, Option<SeqDef>, Vec<ForeignKey>);

fn decode_columns(s: &str) -> DecResult<DecodedColumns> {
    let mut out = Vec::new();
    let mut indexes = Vec::new();
    let mut fks: Vec<ForeignKey> = Vec::new();
    let (seq, mut rest) = match s.strip_prefix('S') {
        Some(r) => {
            let (def, r) = decode_sequence(r)?;
            (Some(def), r)
        }
        None => (None, s),
    };
    while !rest.is_empty() {
        if let Some(r) = rest.strip_prefix('%') {
            let (fk, after) = decode_foreign_key(r)?;
            if fk.columns.iter().any(|c| *c >= out.len()) {
                return Err(bad("pg_class foreign keys"));
            }
            fks.push(fk);
            rest = after;
            continue;
        }
        if !fks.is_empty() {
            return Err(bad("pg_class foreign keys"));
        }
        if let Some(r) = rest.strip_prefix('#') {
            let (ix, after) = decode_index(r)?;
            if ix.columns.iter().any(|c| *c >= out.len()) {
                return Err(bad("pg_class indexes"));
            }
            indexes.push(ix);
            rest = after;
            continue;
        }
        if !indexes.is_empty() {
            return Err(bad("pg_class columns"));
        }
        let code = rest.as_bytes()[0].wrapping_sub(b'0');
        let ty = ColType::from_code(code).ok_or_else(|| bad("pg_class columns"))?;
        let (name, after) = counted(rest.get(1..).ok_or_else(|| bad("pg_class columns"))?)?;
        let mut col = Column::new(name, ty);
        rest = after;
        loop {
            if let Some(r) = rest.strip_prefix("!n") {
                col.not_null = true;
                rest = r;
            } else if let Some(r) = rest.strip_prefix("!d") {
                let (d, after) = counted(r)?;
                col.default = Some(d.to_string());
                rest = after;
            } else if let Some(r) = rest.strip_prefix("!l") {
                let (n, after) = counted(r)?;
                col.max_chars = Some(n.parse().map_err(|_| bad("pg_class columns"))?);
                rest = after;
            } else if let Some(r) = rest.strip_prefix("!p") {
                col.padded = true;
                rest = r;
            } else if let Some(r) = rest.strip_prefix("!c") {
                let (name, r) = counted(r)?;
                let (sql, after) = counted(r)?;
                col.checks.push((name.to_string(), sql.to_string()));
                rest = after;
            } else if let Some(r) = rest.strip_prefix("!m") {
                let (t, after) = counted(r)?;
                let (p, sc) = t.split_once(',').ok_or_else(|| bad("pg_class columns"))?;
                let num = |x: &str| x.parse::<u32>().map_err(|_| bad("pg_class columns"));
                col.numeric = Some((num(p)?, num(sc)?));
                rest = after;
            } else if let Some(r) = rest.strip_prefix("!ia") {
                col.identity = Some(true);
                rest = r;
            } else if let Some(r) = rest.strip_prefix("!id") {
                col.identity = Some(false);
                rest = r;
            } else if let Some(r) = rest.strip_prefix("!s") {
                let (seq, after) = counted(r)?;
                col.owned_seq = Some(seq.to_string());
                rest = after;
            } else if let Some(r) = rest.strip_prefix("!t") {
                let (p, after) = counted(r)?;
                col.precision = Some(p.parse().map_err(|_| bad("pg_class columns"))?);
                rest = after;
            } else if let Some(r) = rest.strip_prefix("!a") {
                let (acl, after) = counted(r)?;
                col.acl = Some(crate::acl::decode(acl)?);
                rest = after;
            } else {
                break;
            }
        }
        out.push(col);
    }
    Ok((out, indexes, seq, fks))
}

impl RelEntry {
    pub fn values(&self) -> Vec<Datum> {
        vec![
            Datum::Int4(self.oid.0 as i32),
            Datum::Text(self.name.clone()),
            Datum::Int8(self.relfilenumber.0 as i64),
            Datum::Int4(self.reltablespace.0 as i32),
            Datum::Text(encode_columns(self)),
            Datum::Int4(self.owner.0 as i32),
            acl_value(&self.acl),
            text_value(&self.view.as_ref().map(ViewDef::encode)),
        ]
    }
    pub fn from_values(v: &[Datum], tid: Tid) -> DecResult<RelEntry> {
        match v {
            [Datum::Int4(oid), Datum::Text(name), Datum::Int8(rfn), Datum::Int4(spc), Datum::Text(cols), owner, acl, view] =>
            {
                let (columns, indexes, sequence, foreign_keys) = decode_columns(cols)?;
                Ok(RelEntry {
                    oid: Oid(*oid as u32),
                    name: name.clone(),
                    relfilenumber: RelFileNumber(*rfn as u64),
                    reltablespace: Oid(*spc as u32),
                    columns,
                    indexes,
                    sequence,
                    foreign_keys,
                    view: text_opt(view)?.map(|t| ViewDef::decode(&t)).transpose()?,
                    owner: owner_of(owner)?,
                    acl: acl_opt(acl)?,
                    tid: Some(tid),
                })
            }
            _ => Err(bad("pg_class")),
        }
    }
}

/// A role's membership in another role (rule 7; PostgreSQL's pg_auth_members row).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Membership {
    /// The role this one is a member of.
    pub role: Oid,
    pub grantor: Oid,
    /// WITH ADMIN OPTION: the member may grant the role to others.
    pub admin: bool,
}

/// A role (rule 7): PostgreSQL's pg_authid row, and its memberships.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RoleEntry {
    pub oid: Oid,
    pub name: String,
    pub superuser: bool,
    pub inherit: bool,
    pub createrole: bool,
    pub createdb: bool,
    pub login: bool,
    pub replication: bool,
    pub bypassrls: bool,
    /// CONNECTION LIMIT; -1 for none.
    pub connlimit: i32,
    /// The SCRAM-SHA-256 verifier, in PostgreSQL's `rolpassword` form.
    pub password: Option<String>,
    /// VALID UNTIL, microseconds since 2000-01-01 UTC.
    pub valid_until: Option<i64>,
    pub member_of: Vec<Membership>,
    pub tid: Option<Tid>,
}

impl RoleEntry {
    /// A role with PostgreSQL's CREATE ROLE defaults (NOLOGIN, INHERIT, no limit).
    pub fn new(name: &str) -> RoleEntry {
        RoleEntry {
            oid: Oid(0),
            name: name.to_string(),
            superuser: false,
            inherit: true,
            createrole: false,
            createdb: false,
            login: false,
            replication: false,
            bypassrls: false,
            connlimit: -1,
            password: None,
            valid_until: None,
            member_of: Vec::new(),
            tid: None,
        }
    }

    pub fn values(&self) -> Vec<Datum> {
        let members: Vec<String> = self
            .member_of
            .iter()
            .map(|m| format!("{}:{}:{}", m.role.0, m.grantor.0, u8::from(m.admin)))
            .collect();
        vec![
            Datum::Int4(self.oid.0 as i32),
            Datum::Text(self.name.clone()),
            Datum::Bool(self.superuser),
            Datum::Bool(self.inherit),
            Datum::Bool(self.createrole),
            Datum::Bool(self.createdb),
            Datum::Bool(self.login),
            Datum::Bool(self.replication),
            Datum::Bool(self.bypassrls),
            Datum::Int4(self.connlimit),
            text_value(&self.password),
            self.valid_until.map_or(Datum::Null, Datum::Int8),
            Datum::Text(members.join(",")),
        ]
    }

    pub fn from_values(v: &[Datum], tid: Tid) -> DecResult<RoleEntry> {
        let flag = |i: usize| match v.get(i) {
            Some(Datum::Bool(b)) => Ok(*b),
            _ => Err(bad("pg_authid")),
        };
        let (Some(Datum::Int4(oid)), Some(Datum::Text(name))) = (v.first(), v.get(1)) else {
            return Err(bad("pg_authid"));
        };
        let (Some(Datum::Int4(connlimit)), Some(Datum::Text(members))) = (v.get(9), v.get(12))
        else {
            return Err(bad("pg_authid"));
        };
        let valid_until = match v.get(11) {
            Some(Datum::Int8(t)) => Some(*t),
            Some(Datum::Null) => None,
            _ => return Err(bad("pg_authid")),
        };
        Ok(RoleEntry {
            oid: Oid(*oid as u32),
            name: name.clone(),
            superuser: flag(2)?,
            inherit: flag(3)?,
            createrole: flag(4)?,
            createdb: flag(5)?,
            login: flag(6)?,
            replication: flag(7)?,
            bypassrls: flag(8)?,
            connlimit: *connlimit,
            password: text_opt(v.get(10).ok_or_else(|| bad("pg_authid"))?)?,
            valid_until,
            member_of: decode_members(members)?,
            tid: Some(tid),
        })
    }
}

/// `rolmembers`: `role:grantor:admin` (OIDs, 0 or 1) joined by `,`.
fn decode_members(s: &str) -> DecResult<Vec<Membership>> {
    if s.is_empty() {
        return Ok(Vec::new());
    }
    s.split(',')
        .map(|m| {
            let mut p = m.split(':');
            let mut num = || -> DecResult<u32> {
                p.next()
                    .and_then(|x| x.parse().ok())
                    .ok_or_else(|| bad("pg_authid members"))
            };
            Ok(Membership {
                role: Oid(num()?),
                grantor: Oid(num()?),
                admin: num()? == 1,
            })
        })
        .collect()
}

/// Committed catalog state (rule 2).
#[derive(Default)]
pub struct CatalogCache {
    pub spcs: FxHashMap<String, Arc<SpcEntry>>,
    pub dbs: FxHashMap<String, Arc<DbEntry>>,
    /// Per database OID: its relations by name.
    pub rels: FxHashMap<Oid, FxHashMap<String, Arc<RelEntry>>>,
    /// Per database OID: the table each index name belongs to (rule 5), derived from
    /// `rels` wherever it changes.
    pub index_owner: FxHashMap<Oid, FxHashMap<String, String>>,
    /// Roles by name (rule 7).
    pub roles: FxHashMap<String, Arc<RoleEntry>>,
    /// Role OID → name, derived from `roles`.
    pub role_names: FxHashMap<Oid, String>,
    /// Role OID → what names it (rule 7), derived wherever entries change.
    pub role_deps: FxHashMap<Oid, FxHashSet<RoleDep>>,
    /// Role OID → the roles that are members of it, derived from `roles`.
    pub role_members: FxHashMap<Oid, FxHashSet<Oid>>,
    /// Per database OID: relation name → the views that read it (rule 9), derived
    /// wherever entries change.
    pub view_deps: FxHashMap<Oid, FxHashMap<String, FxHashSet<String>>>,
    /// Per database OID: table name → the tables whose FOREIGN KEYs reference it
    /// (rule 11), derived wherever entries change.
    pub fk_deps: FxHashMap<Oid, FxHashMap<String, FxHashSet<String>>>,
    /// Per database OID: table OID → its statistics (rule 10).
    pub stats: FxHashMap<Oid, FxHashMap<Oid, Arc<StatEntry>>>,
    /// Counts the changes applied (rule 12): a plan made while it held a value is
    /// stale once it holds another.
    pub version: u64,
}

impl CatalogCache {
    /// Sets database `db`'s statistics (loading).
    pub fn set_stats(&mut self, db: Oid, stats: FxHashMap<Oid, Arc<StatEntry>>) {
        self.stats.insert(db, stats);
    }

    /// The committed statistics of table `relid` of database `db` (rule 10). O(1).
    pub fn stat_entry(&self, db: Oid, relid: Oid) -> Option<&Arc<StatEntry>> {
        self.stats.get(&db)?.get(&relid)
    }

    /// Sets database `db`'s relations (loading), deriving its index names.
    pub fn set_rels(&mut self, db: Oid, rels: FxHashMap<String, Arc<RelEntry>>) {
        self.remove_rels_of(db);
        let owners = self.index_owner.entry(db).or_default();
        for r in rels.values() {
            for ix in &r.indexes {
                owners.insert(ix.name.clone(), r.name.clone());
            }
        }
        for r in rels.values() {
            self.note_rel(db, r, true);
        }
        self.rels.insert(db, rels);
    }

    /// A committed table of database `db`, with the database's entry (3D000, 42P01).
    /// O(1).
    pub fn committed_table(
        &self,
        db: &str,
        table: &str,
    ) -> crate::Result<(&Arc<DbEntry>, &Arc<RelEntry>)> {
        let dbe = self
            .dbs
            .get(db)
            .ok_or_else(|| crate::EngineError::UndefinedDatabase(db.into()))?;
        let rels = self.rels.get(&dbe.oid);
        let rel = crate::temp::resolve(table, |n| rels.and_then(|m| m.get(n)))
            .ok_or_else(|| crate::EngineError::UndefinedTable(table.into()))?;
        Ok((dbe, rel))
    }

    pub fn builtin_spcs() -> [SpcEntry; 2] {
        [
            SpcEntry {
                oid: DEFAULT_TABLESPACE,
                name: "pg_default".into(),
                location: String::new(),
                owner: BOOTSTRAP_SUPERUSER_OID,
                acl: None,
                tid: None,
            },
            SpcEntry {
                oid: GLOBAL_TABLESPACE,
                name: "pg_global".into(),
                location: String::new(),
                owner: BOOTSTRAP_SUPERUSER_OID,
                acl: None,
                tid: None,
            },
        ]
    }
}

/// What names a role (rule 7): an object it owns or whose ACL holds it.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum RoleDep {
    Database(Oid),
    Tablespace(Oid),
    /// A relation of database `db` (its OID), by name.
    Relation(Oid, String),
}

/// The roles an entry names: its owner and everyone in its ACLs.
fn named_roles<'a>(owner: Oid, acls: impl Iterator<Item = &'a Acl>) -> FxHashSet<Oid> {
    let mut out: FxHashSet<Oid> = acls.flat_map(|a| crate::acl::roles_named(a)).collect();
    out.insert(owner);
    out
}

fn rel_roles(r: &RelEntry) -> FxHashSet<Oid> {
    let cols = r.columns.iter().filter_map(|c| c.acl.as_ref());
    named_roles(r.owner, r.acl.iter().chain(cols))
}

impl CatalogCache {
    /// Notes (`add`) or forgets that `roles` name `dep` (rule 7). O(roles).
    fn note(&mut self, dep: &RoleDep, roles: FxHashSet<Oid>, add: bool) {
        for r in roles {
            if add {
                self.role_deps.entry(r).or_default().insert(dep.clone());
            } else if let Some(set) = self.role_deps.get_mut(&r) {
                set.remove(dep);
                if set.is_empty() {
                    self.role_deps.remove(&r);
                }
            }
        }
    }

    fn note_spc(&mut self, e: &SpcEntry, add: bool) {
        self.note(
            &RoleDep::Tablespace(e.oid),
            named_roles(e.owner, e.acl.iter()),
            add,
        );
    }

    fn note_db(&mut self, e: &DbEntry, add: bool) {
        let acls = e.acl.iter().chain(e.public_acl.iter());
        self.note(&RoleDep::Database(e.oid), named_roles(e.owner, acls), add);
    }

    fn note_rel(&mut self, db: Oid, e: &RelEntry, add: bool) {
        self.note(&RoleDep::Relation(db, e.name.clone()), rel_roles(e), add);
        let fks = e.foreign_keys.iter().map(|f| &f.parent);
        note_deps(self.fk_deps.entry(db).or_default(), fks, &e.name, add);
        let Some(v) = &e.view else { return };
        let views = v.deps.iter().map(|(d, _)| d);
        note_deps(self.view_deps.entry(db).or_default(), views, &e.name, add);
    }

    /// A role's memberships, noted in (`add`) or taken from `role_members`.
    fn note_role(&mut self, e: &RoleEntry, add: bool) {
        for m in &e.member_of {
            if add {
                self.role_members.entry(m.role).or_default().insert(e.oid);
            } else if let Some(set) = self.role_members.get_mut(&m.role) {
                set.remove(&e.oid);
            }
        }
    }

    /// Adds a role (loading).
    pub fn add_role(&mut self, e: Arc<RoleEntry>) {
        self.note_role(&e, true);
        self.role_names.insert(e.oid, e.name.clone());
        self.roles.insert(e.name.clone(), e);
    }

    /// Adds a tablespace (loading).
    pub fn add_spc(&mut self, e: Arc<SpcEntry>) {
        self.note_spc(&e, true);
        self.spcs.insert(e.name.clone(), e);
    }

    /// Adds a database (loading; its relations come with [`CatalogCache::set_rels`]).
    pub fn add_db(&mut self, e: Arc<DbEntry>) {
        self.note_db(&e, true);
        self.dbs.insert(e.name.clone(), e);
    }

    fn remove_rels_of(&mut self, db: Oid) {
        for e in self
            .rels
            .remove(&db)
            .into_iter()
            .flat_map(|m| m.into_values())
        {
            self.note_rel(db, &e, false);
        }
        self.index_owner.remove(&db);
        self.view_deps.remove(&db);
        self.fk_deps.remove(&db);
        self.stats.remove(&db);
    }
}

/// Notes (`add`) or forgets that relation `name` depends on each of `on`.
fn note_deps<'a>(
    deps: &mut FxHashMap<String, FxHashSet<String>>,
    on: impl Iterator<Item = &'a String>,
    name: &str,
    add: bool,
) {
    for d in on {
        if add {
            deps.entry(d.clone()).or_default().insert(name.to_string());
        } else if let Some(set) = deps.get_mut(d) {
            set.remove(name);
            if set.is_empty() {
                deps.remove(d);
            }
        }
    }
}

/// A transaction's uncommitted catalog changes (rule 2): `None` = removed.
#[derive(Default)]
pub struct Overlay {
    pub spcs: FxHashMap<String, Option<Arc<SpcEntry>>>,
    pub dbs: FxHashMap<String, Option<Arc<DbEntry>>>,
    pub rels: FxHashMap<(Oid, String), Option<Arc<RelEntry>>>,
    pub roles: FxHashMap<String, Option<Arc<RoleEntry>>>,
    /// Statistics by (database OID, table OID) (rule 10).
    pub stats: FxHashMap<(Oid, Oid), Option<Arc<StatEntry>>>,
}

impl Overlay {
    /// No change made (rule 12: applying it changes nothing, the version included).
    pub fn is_empty(&self) -> bool {
        self.spcs.is_empty()
            && self.dbs.is_empty()
            && self.rels.is_empty()
            && self.roles.is_empty()
            && self.stats.is_empty()
    }

    /// Applies the changes to the committed cache (at commit), keeping the derived
    /// maps (rules 5 and 7). O(changes + relations of dropped databases).
    pub fn apply(self, cache: &mut CatalogCache) {
        if self.is_empty() {
            return;
        }
        cache.version += 1;
        // Every old entry goes first, so a renamed role's new name stays.
        for name in self.roles.keys() {
            if let Some(old) = cache.roles.remove(name) {
                cache.role_names.remove(&old.oid);
                cache.note_role(&old, false);
            }
        }
        for e in self.roles.into_values().flatten() {
            cache.add_role(e);
        }
        for (name, e) in self.spcs {
            if let Some(old) = cache.spcs.remove(&name) {
                cache.note_spc(&old, false);
            }
            if let Some(e) = e {
                cache.add_spc(e);
            }
        }
        let mut dropped_dbs = Vec::new();
        for (name, e) in self.dbs {
            let old = cache.dbs.remove(&name);
            if let Some(old) = &old {
                cache.note_db(old, false);
            }
            match (e, old) {
                (Some(e), _) => {
                    cache.rels.entry(e.oid).or_default();
                    cache.add_db(e);
                }
                (None, Some(old)) => dropped_dbs.push(old.oid),
                (None, None) => {}
            }
        }
        apply_rels(self.rels, cache);
        for ((db, relid), e) in self.stats {
            match e {
                Some(e) => {
                    cache.stats.entry(db).or_default().insert(relid, e);
                }
                None => {
                    if let Some(m) = cache.stats.get_mut(&db) {
                        m.remove(&relid);
                    }
                }
            }
        }
        for db in dropped_dbs {
            cache.remove_rels_of(db);
        }
    }
}

/// The relation changes of [`Overlay::apply`]: rule 5's index names follow their
/// tables; every old entry's go first, so a renamed table's survive.
fn apply_rels(rels: FxHashMap<(Oid, String), Option<Arc<RelEntry>>>, cache: &mut CatalogCache) {
    for (db, name) in rels.keys() {
        let old = cache.rels.get_mut(db).and_then(|m| m.remove(name));
        if let Some(old) = old {
            cache.note_rel(*db, &old, false);
            if let Some(owners) = cache.index_owner.get_mut(db) {
                for ix in &old.indexes {
                    owners.remove(&ix.name);
                }
            }
        }
    }
    for ((db, name), e) in rels {
        if let Some(e) = e {
            cache.note_rel(db, &e, true);
            let owners = cache.index_owner.entry(db).or_default();
            for ix in &e.indexes {
                owners.insert(ix.name.clone(), name.clone());
            }
            cache.rels.entry(db).or_default().insert(name, e);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Columns exercising every field the encoding carries, with separators in names.
    fn odd_columns() -> Vec<Column> {
        vec![
            Column::new("a:b", ColType::Int4),
            Column::new("", ColType::Text),
            Column {
                not_null: true,
                default: Some("'x!n:' || 1".into()),
                ..Column::new("c!d", ColType::Int8)
            },
            Column {
                not_null: true,
                ..Column::new("d", ColType::Bool)
            },
            Column {
                max_chars: Some(22),
                padded: true,
                checks: vec![
                    ("e_check".into(), "e <> '!c1:x'".into()),
                    ("two".into(), "true".into()),
                ],
                ..Column::new("e", ColType::Text)
            },
            Column {
                identity: Some(true),
                owned_seq: Some("t_f_seq!s3:x".into()),
                ..Column::new("f", ColType::Int8)
            },
            Column {
                identity: Some(false),
                ..Column::new("g", ColType::Int2)
            },
            Column {
                numeric: Some((12, 3)),
                ..Column::new("h", ColType::Numeric)
            },
            Column {
                precision: Some(2),
                ..Column::new("t!t1:", ColType::TimestampTz)
            },
            Column {
                acl: Some(vec![crate::acl::AclItem {
                    grantee: Oid(16400),
                    grantor: Oid(10),
                    privs: crate::acl::Priv::SELECT,
                    grant_options: crate::acl::Priv::NONE,
                }]),
                ..Column::new("i", ColType::Float8)
            },
        ]
    }

    #[test]
    fn rows_round_trip() {
        let r = RelEntry {
            oid: Oid(16390),
            name: "t:1,odd".into(),
            relfilenumber: RelFileNumber(1 << 40),
            reltablespace: Oid(0),
            columns: odd_columns(),
            indexes: vec![
                IndexDef {
                    oid: Oid(16391),
                    name: "t_pkey#1:x".into(),
                    relfilenumber: RelFileNumber(77),
                    columns: vec![2],
                    unique: true,
                    primary: true,
                    constraint: true,
                },
                IndexDef {
                    oid: Oid(16392),
                    name: String::new(),
                    relfilenumber: RelFileNumber(78),
                    columns: vec![4, 0, 1],
                    unique: false,
                    primary: false,
                    constraint: false,
                },
            ],
            sequence: None,
            foreign_keys: vec![
                ForeignKey {
                    name: "t_a_fkey%1:".into(),
                    columns: vec![0, 2],
                    parent: "p#x".into(),
                    parent_columns: vec![3, 1],
                    on_delete: FkAction::Cascade,
                    on_update: FkAction::SetNull,
                    match_full: true,
                },
                ForeignKey {
                    name: "f".into(),
                    columns: vec![4],
                    parent: "t:1,odd".into(),
                    parent_columns: vec![0],
                    on_delete: FkAction::NoAction,
                    on_update: FkAction::Restrict,
                    match_full: false,
                },
            ],
            view: Some(ViewDef {
                query: "SELECT a FROM t:1".into(),
                deps: vec![
                    ("t".into(), vec!["a".into(), "b:1".into()]),
                    ("é:x".into(), Vec::new()),
                ],
            }),
            owner: Oid(16400),
            acl: Some(Vec::new()),
            tid: Some(Tid {
                block: BlockNumber(2),
                offset: 7,
            }),
        };
        let back = RelEntry::from_values(&r.values(), r.tid.unwrap()).unwrap();
        assert_eq!(back, r);
        let seq = RelEntry {
            name: "s".into(),
            columns: crate::sequence::columns(),
            indexes: Vec::new(),
            foreign_keys: Vec::new(),
            sequence: Some(SeqDef {
                ty: ColType::Int2,
                increment: -3,
                min: i64::MIN,
                max: -1,
                start: -1,
                cache: 20,
                cycle: true,
                owned: true,
            }),
            ..r.clone()
        };
        let back = RelEntry::from_values(&seq.values(), r.tid.unwrap()).unwrap();
        assert_eq!(back, seq);
        assert!(decode_columns("S1:3").is_err());
        assert!(decode_columns("9x").is_err());
        assert!(decode_columns("15:ab").is_err());
        // An index on a column the table lacks, and a column after an index.
        assert!(decode_columns("11:a#1:i2:102:991:u1:1").is_err());
        assert!(decode_columns("11:a#1:i2:102:991:u1:011:b").is_err());
        assert!(decode_columns("11:a#1:i2:102:991:u1:0").is_ok());
    }

    /// Rules 7 and 8: role rows round-trip; a row written before the owner and ACL
    /// columns reads with the bootstrap superuser as owner and the defaults.
    #[test]
    fn roles_round_trip_and_old_rows_read_with_defaults() {
        let tid = Tid {
            block: BlockNumber(0),
            offset: 3,
        };
        let role = RoleEntry {
            oid: Oid(16500),
            login: true,
            connlimit: 3,
            password: Some("SCRAM-SHA-256$4096:c2FsdA==$a2V5:c2Vy".into()),
            valid_until: Some(123),
            member_of: vec![
                Membership {
                    role: Oid(4200),
                    grantor: Oid(10),
                    admin: true,
                },
                Membership {
                    role: Oid(16501),
                    grantor: Oid(16500),
                    admin: false,
                },
            ],
            tid: Some(tid),
            ..RoleEntry::new("bob,:x")
        };
        let back = RoleEntry::from_values(&role.values(), tid).unwrap();
        assert_eq!(back, role);
        let old_cols = &database_columns()[..5];
        let old_values = vec![
            Datum::Int4(5),
            Datum::Text("postgres".into()),
            Datum::Int4(1663),
            Datum::Bool(false),
            Datum::Bool(true),
        ];
        let tuple = crate::heap::encode_tuple(strata_types::Xid(3), old_cols, &old_values);
        let v = crate::heap::decode_catalog_values(&database_columns(), &tuple).unwrap();
        let d = DbEntry::from_values(&v, tid).unwrap();
        assert_eq!(
            (d.owner, d.acl, d.public_acl),
            (BOOTSTRAP_SUPERUSER_OID, None, None)
        );
        assert!(crate::heap::decode_values(&database_columns(), &tuple).is_err());
    }
}
