//! The catalog: tablespaces, databases and relations, stored as heap relations (so
//! they are WAL-logged, crash-safe and transactional like any table) and cached in
//! memory.
//!
//! Entry points: [`CatalogCache`], the row codecs [`SpcEntry::values`] etc., and the
//! fixed relations [`pg_tablespace`], [`pg_database`], [`pg_class`].
//!
//! | catalog | where | columns |
//! |---------|-------|---------|
//! | `pg_tablespace` | `global/1213` | oid int4, spcname text, spclocation text |
//! | `pg_database` | `global/1262` | oid int4, datname text, dattablespace int4, datistemplate bool, datallowconn bool |
//! | `pg_class` | `<db's directory>/1259`, one per database | oid int4, relname text, relfilenode int8, reltablespace int4 (0 = the database's), relcolumns text |
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

use crate::codec::{DecResult, DecodeError};
use crate::heap::{ColType, Column, Value};
use rustc_hash::FxHashMap;
use std::sync::Arc;
use strata_types::{
    BlockNumber, Oid, RelFileNumber, RelKey, DEFAULT_TABLESPACE, GLOBAL_TABLESPACE,
};

pub const PG_TABLESPACE_REL: RelFileNumber = RelFileNumber(1213);
pub const PG_DATABASE_REL: RelFileNumber = RelFileNumber(1262);
pub const PG_CLASS_REL: RelFileNumber = RelFileNumber(1259);
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
/// `pg_class` of database `db` whose default tablespace is `spc` (rule 1).
pub fn pg_class(spc: Oid, db: Oid) -> RelKey {
    RelKey::new(spc, db, PG_CLASS_REL)
}

pub fn tablespace_columns() -> Vec<Column> {
    vec![
        Column::new("oid", ColType::Int4),
        Column::new("spcname", ColType::Text),
        Column::new("spclocation", ColType::Text),
    ]
}
pub fn database_columns() -> Vec<Column> {
    vec![
        Column::new("oid", ColType::Int4),
        Column::new("datname", ColType::Text),
        Column::new("dattablespace", ColType::Int4),
        Column::new("datistemplate", ColType::Bool),
        Column::new("datallowconn", ColType::Bool),
    ]
}
pub fn class_columns() -> Vec<Column> {
    vec![
        Column::new("oid", ColType::Int4),
        Column::new("relname", ColType::Text),
        Column::new("relfilenode", ColType::Int8),
        Column::new("reltablespace", ColType::Int4),
        Column::new("relcolumns", ColType::Text),
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
    pub tid: Option<Tid>,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DbEntry {
    pub oid: Oid,
    pub name: String,
    pub spc: Oid,
    pub is_template: bool,
    pub allow_conn: bool,
    pub tid: Option<Tid>,
}

impl DbEntry {
    pub fn pg_class(&self) -> RelKey {
        pg_class(self.spc, self.oid)
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

impl SpcEntry {
    pub fn values(&self) -> Vec<Value> {
        vec![
            Value::Int4(self.oid.0 as i32),
            Value::Text(self.name.clone()),
            Value::Text(self.location.clone()),
        ]
    }
    pub fn from_values(v: &[Value], tid: Tid) -> DecResult<SpcEntry> {
        match v {
            [Value::Int4(oid), Value::Text(name), Value::Text(loc)] => Ok(SpcEntry {
                oid: Oid(*oid as u32),
                name: name.clone(),
                location: loc.clone(),
                tid: Some(tid),
            }),
            _ => Err(bad("pg_tablespace")),
        }
    }
}

impl DbEntry {
    pub fn values(&self) -> Vec<Value> {
        vec![
            Value::Int4(self.oid.0 as i32),
            Value::Text(self.name.clone()),
            Value::Int4(self.spc.0 as i32),
            Value::Bool(self.is_template),
            Value::Bool(self.allow_conn),
        ]
    }
    pub fn from_values(v: &[Value], tid: Tid) -> DecResult<DbEntry> {
        match v {
            [Value::Int4(oid), Value::Text(name), Value::Int4(spc), Value::Bool(t), Value::Bool(c)] => {
                Ok(DbEntry {
                    oid: Oid(*oid as u32),
                    name: name.clone(),
                    spc: Oid(*spc as u32),
                    is_template: *t,
                    allow_conn: *c,
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
/// ALWAYS / BY DEFAULT, `!s` the sequence it owns; then per index `#` and five
/// counted texts: name, OID, relation file number, flags (`u` unique, `p` primary,
/// `c` constraint), column positions joined by `,`.
fn encode_columns(cols: &[Column], indexes: &[IndexDef], seq: Option<&SeqDef>) -> String {
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
    s
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

type DecodedColumns = (Vec<Column>, Vec<IndexDef>, Option<SeqDef>);

fn decode_columns(s: &str) -> DecResult<DecodedColumns> {
    let mut out = Vec::new();
    let mut indexes = Vec::new();
    let (seq, mut rest) = match s.strip_prefix('S') {
        Some(r) => {
            let (def, r) = decode_sequence(r)?;
            (Some(def), r)
        }
        None => (None, s),
    };
    while !rest.is_empty() {
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
            } else {
                break;
            }
        }
        out.push(col);
    }
    Ok((out, indexes, seq))
}

impl RelEntry {
    pub fn values(&self) -> Vec<Value> {
        vec![
            Value::Int4(self.oid.0 as i32),
            Value::Text(self.name.clone()),
            Value::Int8(self.relfilenumber.0 as i64),
            Value::Int4(self.reltablespace.0 as i32),
            Value::Text(encode_columns(
                &self.columns,
                &self.indexes,
                self.sequence.as_ref(),
            )),
        ]
    }
    pub fn from_values(v: &[Value], tid: Tid) -> DecResult<RelEntry> {
        match v {
            [Value::Int4(oid), Value::Text(name), Value::Int8(rfn), Value::Int4(spc), Value::Text(cols)] =>
            {
                let (columns, indexes, sequence) = decode_columns(cols)?;
                Ok(RelEntry {
                    oid: Oid(*oid as u32),
                    name: name.clone(),
                    relfilenumber: RelFileNumber(*rfn as u64),
                    reltablespace: Oid(*spc as u32),
                    columns,
                    indexes,
                    sequence,
                    tid: Some(tid),
                })
            }
            _ => Err(bad("pg_class")),
        }
    }
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
}

impl CatalogCache {
    /// Sets database `db`'s relations (loading), deriving its index names.
    pub fn set_rels(&mut self, db: Oid, rels: FxHashMap<String, Arc<RelEntry>>) {
        let owners = self.index_owner.entry(db).or_default();
        owners.clear();
        for r in rels.values() {
            for ix in &r.indexes {
                owners.insert(ix.name.clone(), r.name.clone());
            }
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
        let rel = self
            .rels
            .get(&dbe.oid)
            .and_then(|m| m.get(table))
            .ok_or_else(|| crate::EngineError::UndefinedTable(table.into()))?;
        Ok((dbe, rel))
    }

    pub fn builtin_spcs() -> [SpcEntry; 2] {
        [
            SpcEntry {
                oid: DEFAULT_TABLESPACE,
                name: "pg_default".into(),
                location: String::new(),
                tid: None,
            },
            SpcEntry {
                oid: GLOBAL_TABLESPACE,
                name: "pg_global".into(),
                location: String::new(),
                tid: None,
            },
        ]
    }
}

/// A transaction's uncommitted catalog changes (rule 2): `None` = removed.
#[derive(Default)]
pub struct Overlay {
    pub spcs: FxHashMap<String, Option<Arc<SpcEntry>>>,
    pub dbs: FxHashMap<String, Option<Arc<DbEntry>>>,
    pub rels: FxHashMap<(Oid, String), Option<Arc<RelEntry>>>,
}

impl Overlay {
    /// Applies the changes to the committed cache (at commit). O(changes + relations of
    /// dropped databases).
    pub fn apply(self, cache: &mut CatalogCache) {
        for (name, e) in self.spcs {
            match e {
                Some(e) => {
                    cache.spcs.insert(name, e);
                }
                None => {
                    cache.spcs.remove(&name);
                }
            }
        }
        let mut dropped_dbs = Vec::new();
        for (name, e) in self.dbs {
            match e {
                Some(e) => {
                    cache.rels.entry(e.oid).or_default();
                    cache.dbs.insert(name, e);
                }
                None => {
                    if let Some(old) = cache.dbs.remove(&name) {
                        dropped_dbs.push(old.oid);
                    }
                }
            }
        }
        // Rule 5: index names follow their tables; every old entry's go first, so a
        // renamed table's (old name removed, new one added) survive.
        for ((db, name), _) in self.rels.iter() {
            let old = cache.rels.get_mut(db).and_then(|m| m.remove(name));
            if let (Some(old), Some(owners)) = (old, cache.index_owner.get_mut(db)) {
                for ix in &old.indexes {
                    owners.remove(&ix.name);
                }
            }
        }
        for ((db, name), e) in self.rels {
            if let Some(e) = e {
                let owners = cache.index_owner.entry(db).or_default();
                for ix in &e.indexes {
                    owners.insert(ix.name.clone(), name.clone());
                }
                cache.rels.entry(db).or_default().insert(name, e);
            }
        }
        for db in dropped_dbs {
            cache.rels.remove(&db);
            cache.index_owner.remove(&db);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rows_round_trip() {
        let r = RelEntry {
            oid: Oid(16390),
            name: "t:1,odd".into(),
            relfilenumber: RelFileNumber(1 << 40),
            reltablespace: Oid(0),
            columns: vec![
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
                Column::new("i", ColType::Float8),
            ],
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
}
