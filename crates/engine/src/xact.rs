//! Transactions and DDL.
//!
//! Entry points: [`Txn`] (from `Engine::begin`): `create_tablespace`,
//! `drop_tablespace`, `create_database`, `drop_database`, `create_table`,
//! `drop_table`, `truncate_table`, `create_index`, `drop_index`, `insert`, `upsert`,
//! `delete_where`, `delete_using`, `update_using`, `scan`, `scan_index_each`, `vacuum`,
//! `set_table_stats` and `table_stats` (submodule `stats`, catalog rule 10),
//! [`Txn::commit`], [`Txn::abort`]; [`remove_dropped`] and [`remove_created`], shared
//! with replay; the redo of the records written here, [`xact_redo`] (Transaction),
//! [`dbase_redo`] (Database), [`tblspc_redo`] (Tablespace); [`bootstrap`] (initdb's
//! catalog).
//!
//! State diagram of a transaction:
//!
//! ```text
//!   begin ──► Idle ──(first change: xid assigned)──► Writing ──commit──► Committed
//!               │                                       │
//!               └──────────commit/abort/drop───────────►└──abort/drop──► Aborted
//! ```
//!
//! | transition | function | what happens, in order |
//! |------------|----------|------------------------|
//! | Idle → Writing | `Txn::xid` | next xid; published in `running` for checkpoints |
//! | Writing → Committed | [`Txn::commit`] | commit record (dropped relations, databases with all their tablespaces, tablespaces) inserted and flushed; clog; catalog cache; buffers then files removed (engine rule 3) |
//! | Writing → Aborted | [`Txn::abort`] or drop | abort record (everything created); clog; created buffers and files removed |
//!
//! CREATE DATABASE ... FILE_COPY and the hazard PostgreSQL's two checkpoints guard
//! against. PostgreSQL checkpoints (1) before copying, so that the template's files on
//! disk hold every change, and (2) after, so that replay never copies the template
//! again: by replay time the template's files may hold *later* changes, which would
//! reach the copy. Here (1) is `flush_relations` of the template's relations only
//! (O(its dirty pages)); and (2) is replaced by ordering: the copy is written and
//! fsynced *before* its WAL record, so crash recovery never copies — the record only
//! says the copy exists (a crash before it leaves a directory that recovery removes,
//! because the transaction never committed). Copied pages get LSN 0, so their first
//! change afterwards always carries a full-page image. The test
//! `file_copy_replay_ignores_later_template_changes` pins this.

mod foreign;
mod stats;
mod views;

use crate::access;
use crate::catalog::{
    self, class_columns, database_columns, pg_class, pg_database, pg_tablespace,
    tablespace_columns, DbEntry, IndexDef, Overlay, RelEntry, SeqDef, SpcEntry, Tid,
};
use crate::clog::XidStatus;
use crate::codec::Enc;
use crate::heap::{self, Column, Datum};
use crate::index::IndexRange;
use crate::records::{
    AbortRecord, BlockRef, CommitRecord, DbCreateDir, DbFileCopy, PendingCreate, SmgrCreate,
    TblspcCreate, DBASE_CREATE_DIR, DBASE_FILE_COPY, RM_DBASE, RM_SMGR, RM_TBLSPC, RM_XACT,
    RM_XLOG, SMGR_CREATE, TBLSPC_CREATE, XACT_ABORT, XACT_COMMIT, XLOG_FPI, XLOG_NEXTOID,
};
use crate::redo::{unknown_record, RedoContext};
use crate::{corrupt, EngineError, Interrupt, Result, Shared};
use parking_lot::MutexGuard;
use std::collections::BTreeSet;
use std::path::Path;
use std::sync::Arc;
use strata_buffer::ReadMode;
use strata_types::{
    BlockNumber, BufferTag, ForkNumber, Oid, RelFileNumber, RelKey, Xid, DEFAULT_TABLESPACE,
    GLOBAL_TABLESPACE, TEMP_TABLESPACE,
};
use strata_wal::{Record, RmgrId};

/// OIDs covered by one NEXTOID record.
const OID_BATCH: u32 = 8192;
/// New row versions an UPDATE inserts per call of the insert path.
const UPDATE_INSERT_BATCH: usize = 1000;

/// How CREATE DATABASE copies its template.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CreateDbStrategy {
    /// Every page through the WAL (PostgreSQL 15's default).
    WalLog,
    /// Files copied, one record (see the module doc for the hazard).
    FileCopy,
}

/// What [`Txn::upsert`] did with its row.
#[derive(Clone, Debug, PartialEq)]
pub enum Upsert {
    Inserted(Vec<Datum>),
    /// The conflicting row's new version.
    Updated(Vec<Datum>),
    Skipped,
}

/// The rows one INSERT ... ON CONFLICT has written so far.
#[derive(Default)]
pub struct UpsertState {
    written: rustc_hash::FxHashSet<(u32, u16)>,
}

/// How a DELETE or UPDATE finds its rows.
#[derive(Clone, Copy, Debug)]
pub enum Access<'a> {
    /// Every page of the table.
    Seq,
    /// The rows the entries of `range` in index `index` point at.
    Index {
        index: &'a str,
        range: &'a IndexRange,
    },
}

/// Index `name` of `rel` (42704 if it has none such: dropped since planning).
pub(crate) fn index_of<'r>(rel: &'r RelEntry, name: &str) -> Result<&'r IndexDef> {
    rel.indexes
        .iter()
        .find(|ix| crate::temp::same(&ix.name, name))
        .ok_or_else(|| EngineError::UndefinedObject(format!("index \"{name}\" does not exist")))
}

/// An index to create ([`Txn::create_index`]).
#[derive(Clone, Copy, Debug)]
pub struct NewIndex<'a> {
    pub name: &'a str,
    pub columns: &'a [String],
    pub unique: bool,
    pub primary: bool,
    /// Made by a PRIMARY KEY or UNIQUE constraint.
    pub constraint: bool,
}

/// A transaction: holds the writer lock (engine rule 1) until commit, abort or drop.
pub struct Txn<'e> {
    pub(crate) sh: &'e Shared,
    _writer: MutexGuard<'e, ()>,
    xid: Option<Xid>,
    pub(crate) ov: Overlay,
    /// The role acting: owner of what the transaction creates ([`Txn::act_as`]).
    pub(crate) role: Oid,
    dropped_rels: Vec<RelKey>,
    dropped_dbs: Vec<(Oid, Vec<Oid>)>,
    dropped_spcs: Vec<Oid>,
    created: Vec<PendingCreate>,
    finished: bool,
    /// It noted sequences in `Shared::txn_seqs`, to forget when it ends.
    seqs_noted: bool,
    /// A REPEATABLE READ transaction's snapshot, taken at its first statement
    /// (engine rule 10): every statement and write reads as of it.
    fixed: Option<access::Snapshot<'e>>,
}

impl<'e> Txn<'e> {
    pub(crate) fn new(sh: &'e Shared) -> Txn<'e> {
        Txn::with_writer(sh, sh.writer.lock())
    }

    /// A transaction holding `writer`, the writer lock (engine rule 1).
    pub(crate) fn with_writer(sh: &'e Shared, writer: MutexGuard<'e, ()>) -> Txn<'e> {
        Txn {
            sh,
            _writer: writer,
            xid: None,
            ov: Overlay::default(),
            role: catalog::BOOTSTRAP_SUPERUSER_OID,
            dropped_rels: Vec::new(),
            dropped_dbs: Vec::new(),
            dropped_spcs: Vec::new(),
            created: Vec::new(),
            finished: false,
            seqs_noted: false,
            fixed: None,
        }
    }

    /// Engine rule 10: the transaction reads and writes as of `snap` (a REPEATABLE
    /// READ transaction's, taken at its first statement) rather than a snapshot
    /// per statement.
    pub fn fix_snapshot(&mut self, snap: access::Snapshot<'e>) {
        self.fixed = Some(snap);
    }

    /// Makes `role` the acting role: the owner of the objects this transaction
    /// creates from now on (the bootstrap superuser until told).
    pub fn act_as(&mut self, role: Oid) {
        self.role = role;
    }

    /// The transaction's id, assigned on first change (Idle → Writing).
    pub fn xid(&mut self) -> Xid {
        if let Some(x) = self.xid {
            return x;
        }
        let x = {
            // Engine rule 9: assigned and running under one lock (see Snapshot::take).
            let mut c = self.sh.counters.lock();
            let x = c.next_xid;
            c.next_xid = Xid(x.0 + 1);
            *self.sh.running.lock() = Some((x, Vec::new()));
            x
        };
        self.xid = Some(x);
        x
    }

    /// The next OID; every 8,192 a NEXTOID record covers the next batch, so that
    /// no OID handed out before a crash is handed out again after it.
    pub(crate) fn alloc_oid(&self) -> Result<Oid> {
        let mut c = self.sh.counters.lock();
        let o = c.next_oid;
        if o >= c.oid_logged_upto {
            let upto = Oid(o.0 + OID_BATCH);
            self.sh
                .wal()
                .insert(RM_XLOG, XLOG_NEXTOID, 0, &upto.0.to_le_bytes())?;
            c.oid_logged_upto = upto;
        }
        c.next_oid = Oid(o.0 + 1);
        Ok(o)
    }

    fn alloc_relfilenumber(&self) -> RelFileNumber {
        let mut c = self.sh.counters.lock();
        let r = c.next_relfilenumber;
        c.next_relfilenumber = RelFileNumber(r.0 + 1);
        r
    }

    /// Whether this transaction changed the catalog (catalog rule 12).
    pub fn catalog_changed(&self) -> bool {
        !self.ov.is_empty()
    }

    // ---- catalog lookups: the overlay first, then the committed cache ----

    pub fn database(&self, name: &str) -> Result<Arc<DbEntry>> {
        match self.ov.dbs.get(name) {
            Some(Some(e)) => Ok(e.clone()),
            Some(None) => Err(EngineError::UndefinedDatabase(name.into())),
            None => self
                .sh
                .catalog
                .read()
                .dbs
                .get(name)
                .cloned()
                .ok_or_else(|| EngineError::UndefinedDatabase(name.into())),
        }
    }

    pub(crate) fn tablespace(&self, name: &str) -> Result<Arc<SpcEntry>> {
        match self.ov.spcs.get(name) {
            Some(Some(e)) => Ok(e.clone()),
            Some(None) => Err(EngineError::UndefinedTablespace(name.into())),
            None => self
                .sh
                .catalog
                .read()
                .spcs
                .get(name)
                .cloned()
                .ok_or_else(|| EngineError::UndefinedTablespace(name.into())),
        }
    }

    /// Relation `name` as the session sees it (temp rule 1).
    fn relation_opt(&self, db: &DbEntry, name: &str) -> Option<Arc<RelEntry>> {
        crate::temp::resolve(name, |n| self.relation_exact(db, n))
    }

    /// The relation stored as `name`, as this transaction sees it.
    fn relation_exact(&self, db: &DbEntry, name: &str) -> Option<Arc<RelEntry>> {
        match self.ov.rels.get(&(db.oid, name.to_string())) {
            Some(e) => e.clone(),
            None => self
                .sh
                .catalog
                .read()
                .rels
                .get(&db.oid)
                .and_then(|m| m.get(name))
                .cloned(),
        }
    }

    /// The table that owns index `name`, as this transaction sees it (catalog rule 5):
    /// the overlay's changed tables first (O(changes)), then the cache's map.
    fn index_owner(&self, db: &DbEntry, name: &str) -> Option<Arc<RelEntry>> {
        crate::temp::resolve(name, |n| self.index_owner_exact(db, n))
    }

    fn index_owner_exact(&self, db: &DbEntry, name: &str) -> Option<Arc<RelEntry>> {
        let has = |r: &RelEntry| r.indexes.iter().any(|ix| ix.name == name);
        for ((d, _), r) in &self.ov.rels {
            if let Some(r) = r.as_ref().filter(|r| *d == db.oid && has(r)) {
                return Some(r.clone());
            }
        }
        let table = self
            .sh
            .catalog
            .read()
            .index_owner
            .get(&db.oid)?
            .get(name)?
            .clone();
        self.relation_exact(db, &table).filter(|r| has(r))
    }

    /// Whether a table or an index of `db` is stored as `name` (one namespace, 42P07;
    /// exact, temp rule 1).
    fn name_taken(&self, db: &DbEntry, name: &str) -> bool {
        self.relation_exact(db, name).is_some() || self.index_owner_exact(db, name).is_some()
    }

    /// Whether a table or index of database `db` is called `name`, as this transaction
    /// sees it (for choosing the name of an index a constraint makes).
    pub fn relation_name_taken(&self, db: &str, name: &str) -> Result<bool> {
        let dbe = self.database(db)?;
        let stored = crate::temp::stored_for_create(name);
        Ok(self.name_taken(&dbe, stored.as_deref().unwrap_or(name)))
    }

    /// The name of the table that owns index `index`, if there is such an index.
    pub fn index_table(&self, db: &str, index: &str) -> Result<Option<String>> {
        let dbe = self.database(db)?;
        Ok(self.index_owner(&dbe, index).map(|r| r.name.clone()))
    }

    pub fn relation(&self, db: &DbEntry, name: &str) -> Result<Arc<RelEntry>> {
        self.relation_opt(db, name)
            .ok_or_else(|| EngineError::UndefinedTable(name.into()))
    }

    /// A table (42809 for a sequence or a view, with PostgreSQL's words for DDL).
    fn table(&self, db: &DbEntry, name: &str) -> Result<Arc<RelEntry>> {
        let r = self.relation(db, name)?;
        if r.sequence.is_some() || r.view.is_some() {
            return Err(EngineError::WrongObjectType(format!(
                "\"{name}\" is not a table"
            )));
        }
        Ok(r)
    }

    /// A table whose rows a statement changes (42809 for a sequence or a view).
    fn changed_table(&self, db: &DbEntry, name: &str) -> Result<Arc<RelEntry>> {
        let r = self.relation(db, name)?;
        let kind = match (&r.sequence, &r.view) {
            (Some(_), _) => "sequence",
            (_, Some(_)) => "view",
            _ => return Ok(r),
        };
        Err(EngineError::WrongObjectType(format!(
            "cannot change {kind} \"{name}\""
        )))
    }

    /// A relation with storage to read (42809 for a view: catalog rule 9).
    fn stored(&self, db: &DbEntry, name: &str) -> Result<Arc<RelEntry>> {
        let r = self.relation(db, name)?;
        r.has_storage()?;
        Ok(r)
    }

    /// The relations of database `db` as this transaction sees them (42704-style
    /// 3D000 if there is no such database). O(its relations).
    pub fn relations(&self, db: &str) -> Result<Vec<Arc<RelEntry>>> {
        let dbe = self.database(db)?;
        Ok(self.relations_of(&dbe))
    }

    /// The relations of database `db` as this transaction sees them.
    fn relations_of(&self, db: &DbEntry) -> Vec<Arc<RelEntry>> {
        let mut out: Vec<Arc<RelEntry>> = self
            .sh
            .catalog
            .read()
            .rels
            .get(&db.oid)
            .map(|m| {
                m.iter()
                    .filter(|(n, _)| !crate::temp::is_foreign(n))
                    .filter(|(n, _)| !self.ov.rels.contains_key(&(db.oid, (*n).clone())))
                    .map(|(_, r)| r.clone())
                    .collect()
            })
            .unwrap_or_default();
        out.extend(
            self.ov
                .rels
                .iter()
                .filter(|((d, _), _)| *d == db.oid)
                .filter_map(|(_, r)| r.clone()),
        );
        out
    }

    // ---- the WAL-logged steps shared by DDL ----

    /// Logs a create and publishes it for checkpoints under the redo-pointer lock,
    /// then hands the record to the kernel before the caller creates the file
    /// (engine rule 4).
    fn log_create(
        &mut self,
        what: PendingCreate,
        rmgr: RmgrId,
        info: u8,
        payload: &[u8],
    ) -> Result<()> {
        let xid = self.xid();
        let end = {
            let _r = self.sh.redo_ptr.read();
            let (_, end) = self.sh.wal_insert(rmgr, info, xid.0, payload)?;
            if let Some((_, list)) = self.sh.running.lock().as_mut() {
                list.push(what);
            }
            end
        };
        match what {
            // Engine rule 4: durable before the file exists, so that even a power loss
            // cannot keep a file whose create record it took.
            PendingCreate::Rel(_) | PendingCreate::Tablespace(_) => self.sh.wal_flush(end)?,
            // A database directory only reaches the kernel first: crash recovery
            // removes directories no committed database owns (recovery rule 9), which
            // spares CREATE DATABASE a second fsync.
            PendingCreate::DbDir { .. } => self.sh.wal_write_through()?,
        }
        self.created.push(what);
        Ok(())
    }

    pub(crate) fn create_rel_file(&mut self, rel: RelKey) -> Result<()> {
        if rel.is_temp() {
            // No WAL (smgr rule 8); removed if this transaction aborts.
            self.xid();
            self.created.push(PendingCreate::Rel(rel));
            self.sh.smgr.create_database_dir(rel.spc, rel.db)?;
            return Ok(self.sh.smgr.create_relation(rel)?);
        }
        let rec = SmgrCreate {
            rel,
            fork: ForkNumber::Main,
            transactional: true,
        };
        self.log_create(PendingCreate::Rel(rel), RM_SMGR, SMGR_CREATE, &rec.encode())?;
        self.sh.smgr.create_database_dir(rel.spc, rel.db)?;
        self.sh.smgr.create_relation(rel)?;
        Ok(())
    }

    pub(crate) fn catalog_insert(
        &mut self,
        rel: RelKey,
        cols: &[Column],
        values: &[Datum],
    ) -> Result<Tid> {
        let xid = self.xid();
        let tuple = heap::encode_tuple(xid, cols, values);
        access::insert(self.sh, rel, xid, &tuple)
    }

    pub(crate) fn catalog_delete(&mut self, rel: RelKey, tid: Option<Tid>) -> Result<()> {
        let xid = self.xid();
        let tid = tid.ok_or_else(|| crate::corrupt("catalog entry without a row"))?;
        access::delete_on_page(self.sh, rel, tid.block.0, &[tid.offset], xid)
    }

    /// Inserts relation `e`'s `pg_class` row; none for a temporary relation (temp
    /// module: it lives in the cache alone and dies with its session or a crash).
    fn class_insert(&mut self, dbe: &DbEntry, e: &RelEntry) -> Result<Option<Tid>> {
        if e.reltablespace == TEMP_TABLESPACE {
            crate::temp::note_used();
            self.xid(); // its commit applies the overlay
            return Ok(None);
        }
        Ok(Some(self.catalog_insert(
            dbe.pg_class(),
            &class_columns(),
            &e.values(),
        )?))
    }

    /// Deletes relation `rel`'s `pg_class` row (none for a temporary relation).
    fn class_delete(&mut self, dbe: &DbEntry, rel: &RelEntry) -> Result<()> {
        if rel.reltablespace == TEMP_TABLESPACE {
            self.xid(); // its commit applies the overlay
            return Ok(());
        }
        self.catalog_delete(dbe.pg_class(), rel.tid)
    }

    // ---- tablespaces ----

    /// CREATE TABLESPACE name LOCATION 'location'. The location must be absolute, an
    /// existing empty directory, and outside the data directory.
    pub fn create_tablespace(&mut self, name: &str, location: &str) -> Result<()> {
        if self.tablespace(name).is_ok() {
            return Err(EngineError::DuplicateTablespace(name.into()));
        }
        if name.starts_with("pg_") {
            return Err(EngineError::InvalidParameter(format!(
                "unacceptable tablespace name \"{name}\": the prefix \"pg_\" is reserved for system tablespaces"
            )));
        }
        let loc = Path::new(location);
        let bad = |m: String| Err(EngineError::InvalidTablespaceLocation(m));
        if !loc.is_absolute() {
            return bad("tablespace location must be an absolute path".into());
        }
        if loc.starts_with(&self.sh.dir) || self.sh.dir.starts_with(loc) {
            return bad("tablespace location should not be inside the data directory".into());
        }
        match std::fs::read_dir(loc) {
            Ok(mut it) => {
                if it.next().is_some() {
                    return bad(format!("directory \"{location}\" is not empty"));
                }
            }
            Err(e) => return bad(format!("could not open directory \"{location}\": {e}")),
        }
        let oid = self.alloc_oid()?;
        let rec = TblspcCreate {
            spc: oid,
            location: location.to_string(),
        };
        self.log_create(
            PendingCreate::Tablespace(oid),
            RM_TBLSPC,
            TBLSPC_CREATE,
            &rec.encode(),
        )?;
        self.sh.smgr.create_tablespace(oid, loc)?;
        let mut e = SpcEntry {
            oid,
            name: name.into(),
            location: location.into(),
            owner: self.role,
            acl: None,
            tid: None,
        };
        e.tid = Some(self.catalog_insert(pg_tablespace(), &tablespace_columns(), &e.values())?);
        self.ov.spcs.insert(name.into(), Some(Arc::new(e)));
        Ok(())
    }

    /// DROP TABLESPACE: refused while a database uses it by default or any file is in
    /// it. The directory goes at commit.
    pub fn drop_tablespace(&mut self, name: &str) -> Result<()> {
        let spc = self.tablespace(name)?;
        if spc.oid == DEFAULT_TABLESPACE || spc.oid == GLOBAL_TABLESPACE {
            return Err(EngineError::ObjectInUse(format!(
                "cannot drop tablespace \"{name}\" because it is required by the database system"
            )));
        }
        let used_by_db = {
            let cat = self.sh.catalog.read();
            cat.dbs
                .values()
                .any(|d| d.spc == spc.oid && self.ov.dbs.get(&d.name).is_none_or(|o| o.is_some()))
        } || self.ov.dbs.values().flatten().any(|d| d.spc == spc.oid);
        self.sh.unlinks.settle(&self.sh.smgr)?; // unlink rule 3: only live relations' files
        if used_by_db || !tablespace_is_empty(&self.sh.smgr.tablespace_dir(spc.oid)) {
            return Err(EngineError::TablespaceNotEmpty(name.into()));
        }
        self.catalog_delete(pg_tablespace(), spc.tid)?;
        self.ov.spcs.insert(name.into(), None);
        self.dropped_spcs.push(spc.oid);
        Ok(())
    }

    // ---- databases ----

    /// CREATE DATABASE name TEMPLATE template [TABLESPACE spc] STRATEGY strategy.
    pub fn create_database(
        &mut self,
        name: &str,
        template: &str,
        spc: Option<&str>,
        strategy: CreateDbStrategy,
    ) -> Result<()> {
        if self.database(name).is_ok() {
            return Err(EngineError::DuplicateDatabase(name.into()));
        }
        let tmpl = self.database(template)?;
        let dst_spc = match spc {
            Some(s) => {
                let e = self.tablespace(s)?;
                if e.oid == GLOBAL_TABLESPACE {
                    return Err(EngineError::InvalidParameter(
                        "pg_global cannot be used as default tablespace".into(),
                    ));
                }
                e.oid
            }
            None => tmpl.spc,
        };
        let oid = self.alloc_oid()?;
        // The template's storage: its pg_class and every relation, each fork present.
        let src = self.template_storage(&tmpl);
        let map_spc = |s: Oid| if s == tmpl.spc { dst_spc } else { s };
        let dirs: BTreeSet<(Oid, Oid)> = src.iter().map(|k| (k.spc, map_spc(k.spc))).collect();
        for &(_, d) in &dirs {
            let rec = DbCreateDir { spc: d, db: oid };
            self.log_create(
                PendingCreate::DbDir { spc: d, db: oid },
                RM_DBASE,
                DBASE_CREATE_DIR,
                &rec.encode(),
            )?;
            self.sh.smgr.create_database_dir(d, oid)?;
        }
        match strategy {
            CreateDbStrategy::WalLog => {
                for k in &src {
                    let dst = RelKey::new(map_spc(k.spc), oid, k.rel);
                    for fork in [ForkNumber::Main, ForkNumber::Fsm, ForkNumber::Vm] {
                        if self.sh.smgr.exists(*k, fork) {
                            self.copy_fork_wal_log(*k, dst, fork)?;
                        }
                    }
                }
            }
            CreateDbStrategy::FileCopy => {
                // PostgreSQL's first checkpoint, reduced to the template's dirty pages.
                self.sh.pool.flush_relations(&src)?;
                for k in &src {
                    let dst = RelKey::new(map_spc(k.spc), oid, k.rel);
                    for fork in [ForkNumber::Main, ForkNumber::Fsm, ForkNumber::Vm] {
                        if self.sh.smgr.exists(*k, fork) {
                            copy_fork_files(self.sh, *k, dst, fork)?;
                        }
                    }
                }
                for &(_, d) in &dirs {
                    self.sh
                        .smgr
                        .sync_database_dir(d, oid)
                        .map_err(|e| self.sh.fatal().raise(e))?; // engine rule 7
                }
                // Only now the record: the copy is durable before it (module doc).
                let rec = DbFileCopy {
                    src_db: tmpl.oid,
                    dst_db: oid,
                    dirs: dirs.iter().copied().collect(),
                };
                let xid = self.xid();
                self.sh
                    .wal()
                    .insert(RM_DBASE, DBASE_FILE_COPY, xid.0, &rec.encode())?;
            }
        }
        let mut e = DbEntry {
            oid,
            name: name.into(),
            spc: dst_spc,
            is_template: false,
            allow_conn: true,
            owner: self.role,
            acl: None,
            public_acl: None,
            tid: None,
        };
        e.tid = Some(self.catalog_insert(pg_database(), &database_columns(), &e.values())?);
        // The copy's pg_class is the template's, byte for byte: same rows, same tids.
        for r in self.relations_of(&tmpl) {
            self.ov.rels.insert((oid, r.name.clone()), Some(r));
        }
        self.copy_stats(&tmpl, oid);
        self.ov.dbs.insert(name.into(), Some(Arc::new(e)));
        Ok(())
    }

    /// A template's storage: its pg_class, its pg_statistic if it has one (catalog
    /// rule 10), and every relation's files (heap, indexes, TOAST heap).
    fn template_storage(&self, tmpl: &DbEntry) -> Vec<RelKey> {
        let mut src: Vec<RelKey> = vec![tmpl.pg_class()];
        if self.sh.smgr.exists(tmpl.pg_statistic(), ForkNumber::Main) {
            src.push(tmpl.pg_statistic());
        }
        for r in self.relations_of(tmpl) {
            let key = r.key(tmpl);
            src.push(key);
            src.extend(r.indexes.iter().map(|ix| r.index_key(tmpl, ix)));
            let toast = crate::toast::toast_key(key);
            if self.sh.smgr.exists(toast, ForkNumber::Main) {
                src.push(toast);
            }
        }
        src
    }

    /// Copies one fork page by page through the WAL: each page one full-page-image
    /// record (WAL_LOG strategy). All-zero pages are not logged.
    fn copy_fork_wal_log(&mut self, src: RelKey, dst: RelKey, fork: ForkNumber) -> Result<()> {
        let xid = self.xid();
        let rec = SmgrCreate {
            rel: dst,
            fork,
            transactional: false, // the database directory's removal covers it
        };
        {
            let _r = self.sh.redo_ptr.read();
            self.sh
                .wal_insert(RM_SMGR, SMGR_CREATE, xid.0, &rec.encode())?;
        }
        self.sh.wal_write_through()?;
        self.sh.smgr.create(dst, fork, false)?;
        let n = self.sh.smgr.nblocks(src, fork)?;
        let mode = if fork == ForkNumber::Main {
            ReadMode::Normal
        } else {
            ReadMode::ZeroOnError
        };
        for b in 0..n {
            let image: Box<strata_page::PageBuf> = {
                let buf = self
                    .sh
                    .pool
                    .read_buffer(BufferTag::new(src, fork, BlockNumber(b)), mode)?;
                let g = buf.read();
                Box::new(*g)
            };
            self.sh
                .smgr
                .extend(dst, fork, BlockNumber(b), &access::ZERO_PAGE)?;
            if strata_page::is_new(&image) {
                continue;
            }
            let t = BufferTag::new(dst, fork, BlockNumber(b));
            let buf = self.sh.pool.read_buffer(t, ReadMode::Zero)?;
            let mut g = buf.write();
            g.copy_from_slice(&image[..]);
            buf.mark_dirty(&g);
            let mut e = Enc::new();
            BlockRef {
                tag: t,
                will_init: false,
                image: Some(image),
            }
            .encode(&mut e);
            let _r = self.sh.redo_ptr.read();
            let (_, end) = self.sh.wal_insert(RM_XLOG, XLOG_FPI, xid.0, &e.0)?;
            strata_page::set_lsn(&mut g, end);
        }
        Ok(())
    }

    /// DROP DATABASE: one commit record names the database and every tablespace
    /// holding a directory of it; the directories go at commit.
    pub fn drop_database(&mut self, name: &str) -> Result<()> {
        let db = self.database(name)?;
        if db.is_template {
            return Err(EngineError::ObjectInUse(format!(
                "cannot drop a template database \"{name}\""
            )));
        }
        let mut spcs: BTreeSet<Oid> = self
            .relations_of(&db)
            .iter()
            .map(|r| r.key(&db).spc)
            .collect();
        spcs.insert(db.spc);
        for c in &self.created {
            if let PendingCreate::DbDir { spc, db: d } = c {
                if *d == db.oid {
                    spcs.insert(*spc);
                }
            }
        }
        self.catalog_delete(pg_database(), db.tid)?;
        self.ov.dbs.insert(name.into(), None);
        let oid = db.oid;
        self.ov.rels.retain(|(d, _), _| *d != oid);
        self.ov.stats.retain(|(d, _), _| *d != oid);
        self.dropped_dbs.push((db.oid, spcs.into_iter().collect()));
        Ok(())
    }

    // ---- tables ----

    /// CREATE TABLE in database `db`, in tablespace `spc` (default: the database's).
    pub fn create_table(
        &mut self,
        db: &str,
        name: &str,
        columns: &[Column],
        spc: Option<&str>,
    ) -> Result<()> {
        let dbe = self.database(db)?;
        let stored = crate::temp::stored_for_create(name);
        let temp = stored.is_some();
        let name = stored.as_deref().unwrap_or(name);
        if self.name_taken(&dbe, name) {
            return Err(EngineError::DuplicateTable(name.into()));
        }
        for (i, c) in columns.iter().enumerate() {
            if columns[..i].iter().any(|o| o.name == c.name) {
                return Err(EngineError::InvalidParameter(format!(
                    "column \"{}\" specified more than once",
                    c.name
                )));
            }
        }
        let spc_oid = match spc {
            _ if temp => TEMP_TABLESPACE,
            Some(s) => {
                let e = self.tablespace(s)?;
                if e.oid == GLOBAL_TABLESPACE {
                    return Err(EngineError::InvalidParameter(
                        "only shared relations can be placed in pg_global tablespace".into(),
                    ));
                }
                e.oid
            }
            None => dbe.spc,
        };
        let mut e = RelEntry {
            oid: self.alloc_oid()?,
            name: name.into(),
            relfilenumber: self.alloc_relfilenumber(),
            reltablespace: if spc_oid == dbe.spc { Oid(0) } else { spc_oid },
            columns: columns.to_vec(),
            indexes: Vec::new(),
            foreign_keys: Vec::new(),
            sequence: None,
            view: None,
            owner: self.role,
            acl: None,
            tid: None,
        };
        self.create_rel_file(e.key(&dbe))?;
        e.tid = self.class_insert(&dbe, &e)?;
        self.ov
            .rels
            .insert((dbe.oid, name.into()), Some(Arc::new(e)));
        Ok(())
    }

    // ---- sequences ----

    /// CREATE SEQUENCE (and the sequence of a `serial` or identity column, `def.owned`):
    /// its `pg_class` row and its one-page file, at `def.start`, not yet called
    /// (catalog rule 6, sequence rules).
    pub fn create_sequence(&mut self, db: &str, name: &str, def: SeqDef) -> Result<()> {
        let dbe = self.database(db)?;
        let stored = crate::temp::stored_for_create(name);
        let temp = stored.is_some();
        let name = stored.as_deref().unwrap_or(name);
        if self.name_taken(&dbe, name) {
            return Err(EngineError::DuplicateTable(name.into()));
        }
        let start = def.start;
        let mut e = RelEntry {
            oid: self.alloc_oid()?,
            name: name.into(),
            relfilenumber: self.alloc_relfilenumber(),
            reltablespace: if temp { TEMP_TABLESPACE } else { Oid(0) },
            columns: crate::sequence::columns(),
            indexes: Vec::new(),
            foreign_keys: Vec::new(),
            sequence: Some(def),
            view: None,
            owner: self.role,
            acl: None,
            tid: None,
        };
        let key = e.key(&dbe);
        self.create_rel_file(key)?;
        let xid = self.xid();
        crate::sequence::format(self.sh, key, start, xid)?;
        e.tid = self.class_insert(&dbe, &e)?;
        let e = Arc::new(e);
        self.ov
            .rels
            .insert((dbe.oid, name.into()), Some(Arc::clone(&e)));
        self.note_sequence(dbe.oid, name, Some(e));
        Ok(())
    }

    /// DROP SEQUENCE: 42809 for a table, 2BP01 for a sequence a column owns (it goes
    /// with the column or its table).
    pub fn drop_sequence(&mut self, db: &str, name: &str) -> Result<()> {
        let dbe = self.database(db)?;
        let rel = self.relation(&dbe, name)?;
        let Some(def) = &rel.sequence else {
            return Err(EngineError::WrongObjectType(format!(
                "\"{name}\" is not a sequence"
            )));
        };
        if def.owned {
            return Err(EngineError::DependentObjects(format!(
                "cannot drop sequence {name} because other objects depend on it"
            )));
        }
        self.remove_sequence(&dbe, &rel)
    }

    /// The files of a table go at commit: its heap, its indexes, its TOAST heap if
    /// it has one (toast rule 1).
    fn drop_files_of(&mut self, dbe: &DbEntry, rel: &RelEntry) {
        let key = rel.key(dbe);
        self.dropped_rels.push(key);
        for ix in &rel.indexes {
            self.dropped_rels.push(rel.index_key(dbe, ix));
        }
        let toast = crate::toast::toast_key(key);
        if self.sh.smgr.exists(toast, ForkNumber::Main) {
            self.dropped_rels.push(toast);
        }
    }

    /// The sequences columns `cols` own, dropped with them (catalog rule 6).
    fn drop_owned_sequences<'c>(
        &mut self,
        dbe: &DbEntry,
        cols: impl IntoIterator<Item = &'c Column>,
    ) -> Result<()> {
        for c in cols {
            let Some(seq) = &c.owned_seq else { continue };
            if let Some(rel) = self.relation_opt(dbe, seq).filter(|r| r.sequence.is_some()) {
                self.remove_sequence(dbe, &rel)?;
            }
        }
        Ok(())
    }

    fn remove_sequence(&mut self, dbe: &DbEntry, rel: &RelEntry) -> Result<()> {
        self.class_delete(dbe, rel)?;
        self.ov.rels.insert((dbe.oid, rel.name.clone()), None);
        self.note_sequence(dbe.oid, &rel.name, None);
        self.dropped_rels.push(rel.key(dbe));
        Ok(())
    }

    /// This writer's own view of a sequence it created or dropped, for its nextval
    /// (`Shared::txn_seqs`).
    fn note_sequence(&mut self, db: Oid, name: &str, e: Option<Arc<RelEntry>>) {
        self.sh.txn_seqs.lock().insert((db, name.into()), e);
        self.seqs_noted = true;
    }

    /// Forgets what [`Txn::note_sequence`] noted: the transaction is over.
    fn forget_sequences(&mut self) {
        if std::mem::take(&mut self.seqs_noted) {
            self.sh.txn_seqs.lock().clear();
        }
    }

    /// A B-tree's storage in database `db`: its file (created as a table's is,
    /// removed if this transaction does not commit) holding an empty index (btree
    /// rule 1). Issue 14's next step puts indexes in the catalog; until then this is
    /// the storage layer's entry point, for its tests.
    #[doc(hidden)]
    pub fn create_btree_storage(&mut self, db: &str) -> Result<RelKey> {
        let dbe = self.database(db)?;
        let rel = RelKey::new(dbe.spc, dbe.oid, self.alloc_relfilenumber());
        self.create_rel_file(rel)?;
        let xid = self.xid();
        crate::btree::build_empty(self.sh, rel, xid)?;
        Ok(rel)
    }

    /// Inserts a leaf entry (`strata_btree::key::leaf_entry`) into a B-tree made by
    /// [`Txn::create_btree_storage`]: one WAL record (btree rule 1).
    #[doc(hidden)]
    pub fn btree_insert(&mut self, index: RelKey, entry: &[u8]) -> Result<()> {
        let xid = self.xid();
        crate::btree::insert(self.sh, index, entry, xid)
    }

    /// DROP TABLE: the table's and its indexes' files go when the commit record is
    /// durable (one commit record for all of them).
    pub fn drop_table(&mut self, db: &str, name: &str) -> Result<()> {
        let dbe = self.database(db)?;
        let rel = self.table(&dbe, name)?;
        self.refuse_dependents(&dbe, &rel, "table")?;
        self.refuse_referenced(&dbe, &rel)?;
        self.class_delete(&dbe, &rel)?;
        self.ov.rels.insert((dbe.oid, rel.name.clone()), None);
        self.drop_stats(&dbe, &rel)?;
        self.drop_files_of(&dbe, &rel);
        self.drop_owned_sequences(&dbe, &rel.columns)
    }

    /// TRUNCATE: new, empty relation file numbers for the table and each index (an
    /// empty B-tree); the old files go at commit.
    pub fn truncate_table(&mut self, db: &str, name: &str) -> Result<()> {
        let dbe = self.database(db)?;
        let rel = self.table(&dbe, name)?;
        let mut e = (*rel).clone();
        e.relfilenumber = self.alloc_relfilenumber();
        self.create_rel_file(e.key(&dbe))?;
        self.drop_files_of(&dbe, &rel);
        for i in 0..e.indexes.len() {
            e.indexes[i].relfilenumber = self.alloc_relfilenumber();
            let key = e.index_key(&dbe, &e.indexes[i]);
            self.create_rel_file(key)?;
            let xid = self.xid();
            crate::btree::build_empty(self.sh, key, xid)?;
        }
        self.replace_class_row(&dbe, &rel, e)
    }

    /// CREATE [UNIQUE] INDEX, or the index of a PRIMARY KEY or UNIQUE constraint:
    /// a new file built bottom-up from the table's rows (index rule 1), the table's
    /// row replaced with the index in it (catalog rule 5). 42P07 if the name is
    /// taken, 23505 if a unique index meets a duplicate, 23502 if a primary key meets
    /// a NULL (its columns become NOT NULL), 42P16 for a second primary key.
    pub fn create_index(&mut self, db: &str, table: &str, spec: &NewIndex<'_>) -> Result<()> {
        let dbe = self.database(db)?;
        let rel = self.table(&dbe, table)?;
        let name = match rel.reltablespace == TEMP_TABLESPACE {
            true => crate::temp::beside(spec.name),
            false => spec.name.to_string(),
        };
        if self.name_taken(&dbe, &name) {
            return Err(EngineError::DuplicateTable(spec.name.into()));
        }
        if spec.primary && rel.indexes.iter().any(|ix| ix.primary) {
            return Err(EngineError::InvalidTableDefinition(format!(
                "multiple primary keys for table \"{table}\" are not allowed"
            )));
        }
        let mut columns = Vec::new();
        for c in spec.columns {
            let at = rel
                .columns
                .iter()
                .position(|col| col.name == *c)
                .ok_or_else(|| EngineError::UndefinedColumn(c.clone()))?;
            if columns.contains(&at) {
                return Err(EngineError::InvalidTableDefinition(format!(
                    "column \"{c}\" appears twice in index definition"
                )));
            }
            columns.push(at);
        }
        let ix = IndexDef {
            oid: self.alloc_oid()?,
            name,
            relfilenumber: self.alloc_relfilenumber(),
            columns,
            unique: spec.unique || spec.primary,
            primary: spec.primary,
            constraint: spec.constraint,
        };
        let mut e = (*rel).clone();
        if ix.primary {
            for c in &ix.columns {
                e.columns[*c].not_null = true;
            }
        }
        let key = e.index_key(&dbe, &ix);
        self.create_rel_file(key)?;
        let xid = self.xid();
        crate::index::build(self.sh, &e, e.key(&dbe), key, &ix, xid)?;
        e.indexes.push(ix);
        self.replace_class_row(&dbe, &rel, e)
    }

    /// DROP INDEX: the table's row without it; its file goes at commit. An index a
    /// constraint owns is refused (2BP01), as PostgreSQL refuses it. Returns the table.
    pub fn drop_index(&mut self, db: &str, name: &str) -> Result<String> {
        let dbe = self.database(db)?;
        let rel = self.index_owner(&dbe, name).ok_or_else(|| {
            EngineError::UndefinedObject(format!("index \"{name}\" does not exist"))
        })?;
        let ix = rel
            .indexes
            .iter()
            .find(|ix| crate::temp::same(&ix.name, name))
            .expect("owner");
        if ix.constraint {
            return Err(EngineError::DependentObjects(format!(
                "cannot drop index {name} because constraint {name} on table {} requires it",
                rel.name
            )));
        }
        self.remove_index(&dbe, &rel, name)?;
        Ok(rel.name.clone())
    }

    /// ALTER TABLE ... DROP CONSTRAINT of a PRIMARY KEY or UNIQUE constraint: its
    /// index goes. 42704 if the table has no such constraint.
    pub fn drop_constraint(&mut self, db: &str, table: &str, name: &str) -> Result<()> {
        let dbe = self.database(db)?;
        let rel = self.table(&dbe, table)?;
        // A CHECK is kept on a column of the class row: it goes with a new row.
        if let Some(c) = rel
            .columns
            .iter()
            .position(|c| c.checks.iter().any(|(n, _)| n == name))
        {
            let mut e = (*rel).clone();
            e.columns[c].checks.retain(|(n, _)| n != name);
            return self.replace_class_row(&dbe, &rel, e);
        }
        if self.drop_foreign_key(&dbe, &rel, name)? {
            return Ok(());
        }
        if !rel
            .indexes
            .iter()
            .any(|ix| ix.constraint && crate::temp::same(&ix.name, name))
        {
            return Err(EngineError::UndefinedObject(format!(
                "constraint \"{name}\" of relation \"{table}\" does not exist"
            )));
        }
        self.remove_index(&dbe, &rel, name)
    }

    fn remove_index(&mut self, dbe: &DbEntry, rel: &RelEntry, name: &str) -> Result<()> {
        let mut e = rel.clone();
        let at = e
            .indexes
            .iter()
            .position(|ix| crate::temp::same(&ix.name, name))
            .expect("present");
        self.refuse_index_needed(dbe, rel, &e.indexes[at])?;
        let ix = e.indexes.remove(at);
        self.dropped_rels.push(rel.index_key(dbe, &ix));
        self.replace_class_row(dbe, rel, e)
    }

    /// ALTER TABLE ... RENAME TO: the same relation (OID, files, rows) under a new
    /// name, from this transaction's commit on.
    pub fn rename_table(&mut self, db: &str, name: &str, new_name: &str) -> Result<()> {
        let dbe = self.database(db)?;
        let rel = self.relation(&dbe, name)?;
        self.refuse_column_change(&dbe, &rel, None, false)?;
        let stored = match rel.reltablespace == TEMP_TABLESPACE {
            true => crate::temp::beside(new_name),
            false => new_name.to_string(),
        };
        if self.name_taken(&dbe, &stored) {
            return Err(EngineError::DuplicateTable(new_name.into()));
        }
        if rel.sequence.as_ref().is_some_and(|d| d.owned) {
            // The owning column names it (catalog rule 6).
            return Err(EngineError::NotSupported(format!(
                "renaming sequence \"{name}\", which a column owns, is not supported by Strata"
            )));
        }
        let mut e = (*rel).clone();
        e.name = new_name.into();
        if rel.reltablespace == TEMP_TABLESPACE {
            e.name = crate::temp::beside(new_name);
        }
        self.rename_referenced(&dbe, &rel.name, &mut e)?;
        self.replace_class_row(&dbe, &rel, e)
    }

    /// ALTER TABLE ... RENAME COLUMN. A column a CHECK constraint names is refused
    /// (0A000): constraints are kept as SQL text, which would still say the old name.
    pub fn rename_column(
        &mut self,
        db: &str,
        table: &str,
        column: &str,
        new_name: &str,
    ) -> Result<()> {
        let dbe = self.database(db)?;
        let rel = self.table(&dbe, table)?;
        self.refuse_column_change(&dbe, &rel, Some(column), false)?;
        let Some(at) = rel.columns.iter().position(|c| c.name == column) else {
            return Err(EngineError::UndefinedColumn(column.into()));
        };
        if rel.columns.iter().any(|c| c.name == new_name) {
            return Err(EngineError::DuplicateColumn {
                column: new_name.into(),
                table: table.into(),
            });
        }
        if check_names(&rel.columns, column, None) {
            return Err(EngineError::NotSupported(format!(
                "renaming column \"{column}\", which a CHECK constraint of \"{table}\" uses, is not supported by Strata"
            )));
        }
        let mut e = (*rel).clone();
        e.columns[at].name = new_name.into();
        self.replace_class_row(&dbe, &rel, e)
    }

    /// ALTER TABLE ... ADD COLUMN: the table rewritten into a new file with `fill` (the
    /// column's DEFAULT, evaluated once, or NULL) in every row, as PostgreSQL rewrites
    /// a table for a volatile default. O(the table); memory O(one batch).
    pub fn add_column(&mut self, db: &str, table: &str, column: Column, fill: Datum) -> Result<()> {
        let dbe = self.database(db)?;
        let rel = self.table(&dbe, table)?;
        if rel.columns.iter().any(|c| c.name == column.name) {
            return Err(EngineError::DuplicateColumn {
                column: column.name,
                table: table.into(),
            });
        }
        let mut cols = rel.columns.clone();
        cols.push(column);
        let indexes = rel.indexes.clone();
        self.rewrite(db, table, (cols, indexes), &mut |mut row| {
            row.push(fill.clone());
            row
        })
    }

    /// ALTER TABLE ... DROP COLUMN: the table rewritten without it. A column another
    /// column's CHECK names is refused (0A000); the last column too.
    pub fn drop_column(&mut self, db: &str, table: &str, column: &str) -> Result<()> {
        let dbe = self.database(db)?;
        let rel = self.table(&dbe, table)?;
        self.refuse_column_change(&dbe, &rel, Some(column), true)?;
        let Some(at) = rel.columns.iter().position(|c| c.name == column) else {
            return Err(EngineError::UndefinedColumn(column.into()));
        };
        if rel.columns.len() == 1 {
            return Err(EngineError::NotSupported(format!(
                "dropping the last column of \"{table}\" is not supported by Strata"
            )));
        }
        if check_names(&rel.columns, column, Some(at)) {
            return Err(EngineError::NotSupported(format!(
                "dropping column \"{column}\", which a CHECK constraint of \"{table}\" uses, is not supported by Strata"
            )));
        }
        let fks = self.foreign_keys_without(&dbe, &rel, at)?;
        let mut cols = rel.columns.clone();
        cols.remove(at);
        // PostgreSQL drops the indexes (and constraints) a dropped column is in.
        let indexes = rel
            .indexes
            .iter()
            .filter(|ix| !ix.columns.contains(&at))
            .map(|ix| IndexDef {
                columns: ix
                    .columns
                    .iter()
                    .map(|c| c - usize::from(*c > at))
                    .collect(),
                ..ix.clone()
            })
            .collect();
        self.rewrite(db, table, (cols, indexes), &mut |mut row| {
            row.remove(at);
            row
        })?;
        if fks != rel.foreign_keys {
            let now = self.table(&dbe, table)?;
            let mut e = (*now).clone();
            e.foreign_keys = fks;
            self.replace_class_row(&dbe, &now, e)?;
        }
        self.drop_column_stats(&dbe, &rel, at)?;
        self.drop_owned_sequences(&dbe, [&rel.columns[at]])
    }

    /// The table's rows, as this transaction sees them, through `map` into a new file
    /// with columns `cols`; the old file goes at commit (as TRUNCATE's does), and so
    /// do the old indexes' files: `indexes` are built anew over the new file. NOT NULL
    /// and lengths are checked on the new rows (23502, 22001).
    fn rewrite(
        &mut self,
        db: &str,
        table: &str,
        (cols, indexes): (Vec<Column>, Vec<IndexDef>),
        map: &mut dyn FnMut(Vec<Datum>) -> Vec<Datum>,
    ) -> Result<()> {
        let dbe = self.database(db)?;
        let rel = self.table(&dbe, table)?;
        let mut e = (*rel).clone();
        e.relfilenumber = self.alloc_relfilenumber();
        e.columns = cols;
        let key = e.key(&dbe);
        self.create_rel_file(key)?;
        let toasts = e
            .columns
            .iter()
            .any(|c| matches!(c.ty, heap::ColType::Text | heap::ColType::Bytea));
        if toasts {
            self.create_rel_file(crate::toast::toast_key(key))?; // toast rule 1
        }
        let (sh, xid) = (self.sh, self.xid());
        self.scan_each(db, table, &crate::no_interrupt, &mut |row| {
            let row = map(row);
            let fitted = fit_rows(&e.columns, std::slice::from_ref(&row))?;
            let row = fitted.map_or(row, |mut f| f.remove(0));
            if let Some(c) = e
                .columns
                .iter()
                .zip(&row)
                .find(|(c, v)| c.not_null && **v == Datum::Null)
            {
                return Err(EngineError::NotNullViolation {
                    column: c.0.name.clone(),
                    table: table.to_string(),
                });
            }
            let t = heap::encode_tuple(xid, &e.columns, &row);
            let which = crate::toast::to_move(&row, t.len());
            let t = if which.is_empty() {
                t
            } else {
                let ptrs =
                    crate::toast::toast_row(sh, crate::toast::toast_key(key), xid, &row, &which)?;
                heap::encode_tuple_with(xid, &e.columns, &row, &ptrs)
            };
            access::insert(sh, key, xid, &t)?;
            Ok(true)
        })?;
        self.drop_files_of(&dbe, &rel);
        e.indexes = indexes;
        for i in 0..e.indexes.len() {
            e.indexes[i].relfilenumber = self.alloc_relfilenumber();
            let ikey = e.index_key(&dbe, &e.indexes[i]);
            self.create_rel_file(ikey)?;
            crate::index::build(self.sh, &e, key, ikey, &e.indexes[i], xid)?;
        }
        self.replace_class_row(&dbe, &rel, e)
    }

    /// Replaces a relation's pg_class row with `e` (a new version, as UPDATE makes);
    /// the overlay forgets the old name if it changed.
    pub(crate) fn replace_class_row(
        &mut self,
        dbe: &DbEntry,
        old: &RelEntry,
        mut e: RelEntry,
    ) -> Result<()> {
        self.class_delete(dbe, old)?;
        e.tid = self.class_insert(dbe, &e)?;
        if old.name != e.name {
            self.ov.rels.insert((dbe.oid, old.name.clone()), None);
        }
        self.ov
            .rels
            .insert((dbe.oid, e.name.clone()), Some(Arc::new(e)));
        Ok(())
    }

    /// Column definitions of a table, as this transaction sees it.
    pub fn columns(&self, db: &str, table: &str) -> Result<Vec<Column>> {
        let dbe = self.database(db)?;
        Ok(self.relation(&dbe, table)?.columns.clone())
    }

    /// INSERT of rows; each must match the table's columns in number and type.
    pub fn insert(&mut self, db: &str, table: &str, rows: &[Vec<Datum>]) -> Result<u64> {
        self.insert_checked(db, table, rows, &crate::no_interrupt)
    }

    /// [`Txn::insert`], running `interrupt` before each row.
    pub fn insert_checked(
        &mut self,
        db: &str,
        table: &str,
        rows: &[Vec<Datum>],
        interrupt: Interrupt<'_>,
    ) -> Result<u64> {
        let dbe = self.database(db)?;
        let rel = self.changed_table(&dbe, table)?;
        let fitted = fit_checked(&rel, rows)?;
        let rows = fitted.as_deref().unwrap_or(rows);
        // As many tuples per page and record as fit (access rule 4), in chunks that
        // bound the encoded copies and the time between interrupt checks.
        for chunk in rows.chunks(INSERT_CHUNK_ROWS) {
            interrupt()?;
            self.insert_fitted(&dbe, &rel, chunk)?;
        }
        Ok(rows.len() as u64)
    }

    /// Inserts rows already fitted and checked ([`fit_checked`]), with their index
    /// entries. Returns where each went.
    fn insert_fitted(
        &mut self,
        dbe: &DbEntry,
        rel: &RelEntry,
        rows: &[Vec<Datum>],
    ) -> Result<Vec<Tid>> {
        let xid = self.xid();
        let key = rel.key(dbe);
        // Every tuple in one buffer (no allocation per row).
        let mut arena = Vec::with_capacity(rows.len() * (16 + rel.columns.len() * 8));
        let mut spans = Vec::with_capacity(rows.len());
        for row in rows {
            let start = arena.len();
            heap::encode_tuple_into(xid, &rel.columns, row, &[], &mut arena);
            let which = crate::toast::to_move(row, arena.len() - start);
            if !which.is_empty() {
                arena.truncate(start);
                let toast = crate::toast::toast_key(key);
                if !self.sh.smgr.exists(toast, ForkNumber::Main) {
                    self.create_rel_file(toast)?; // toast rule 1
                }
                let ptrs = crate::toast::toast_row(self.sh, toast, xid, row, &which)?;
                heap::encode_tuple_into(xid, &rel.columns, row, &ptrs, &mut arena);
            }
            spans.push(start..arena.len());
        }
        let refs: Vec<&[u8]> = spans.into_iter().map(|r| &arena[r]).collect();
        let tids = access::insert_many(self.sh, key, xid, &refs)?;
        crate::index::insert_rows(self.sh, rel, key, rows, &tids, xid)?;
        Ok(tids)
    }

    /// INSERT ... ON CONFLICT of one row: if a row this transaction sees has its key
    /// in one of the unique indexes `arbiters`, `resolve` gets that row and gives its
    /// new version (DO UPDATE: the old version deleted, the new one inserted, as
    /// UPDATE does) or `None` (DO NOTHING, or DO UPDATE's WHERE false); otherwise the
    /// row is inserted. A DO UPDATE (`updating`) may not meet a row this statement
    /// already wrote (21000), as PostgreSQL refuses.
    #[allow(clippy::too_many_arguments)]
    pub fn upsert(
        &mut self,
        db: &str,
        table: &str,
        row: Vec<Datum>,
        (arbiters, updating): (&[String], bool),
        state: &mut UpsertState,
        resolve: &mut dyn FnMut(&[Datum]) -> Option<Vec<Datum>>,
    ) -> Result<Upsert> {
        let dbe = self.database(db)?;
        let rel = self.changed_table(&dbe, table)?;
        let row = fit_checked(&rel, std::slice::from_ref(&row))?.map_or(row, |mut f| f.remove(0));
        let xid = self.xid();
        let heap = rel.key(&dbe);
        for name in arbiters {
            let ix = index_of(&rel, name)?;
            let (key, has_null) = crate::index::row_key(&rel, ix, &row);
            let keys = (heap, rel.index_key(&dbe, ix));
            let found = if has_null {
                None
            } else {
                let snap = access::Snapshot::take(self.sh);
                crate::index::find_visible(self.sh, keys, &rel, &key, (None, &snap), xid)?
            };
            let Some((tid, existing)) = found else {
                continue;
            };
            if let Some(fixed) = &self.fixed {
                // Engine rule 10: the conflicting row must be one the transaction's
                // snapshot sees (PostgreSQL's ExecCheckTIDVisible).
                let seen =
                    crate::index::find_visible(self.sh, keys, &rel, &key, (None, fixed), xid)?;
                if seen.map(|(t, _)| t) != Some(tid) {
                    return Err(EngineError::SerializationFailure(
                        "could not serialize access due to concurrent update".into(),
                    ));
                }
            }
            if updating && state.written.contains(&(tid.block.0, tid.offset)) {
                return Err(EngineError::CardinalityViolation(
                    "ON CONFLICT DO UPDATE command cannot affect row a second time".into(),
                ));
            }
            let Some(new) = resolve(&existing) else {
                return Ok(Upsert::Skipped);
            };
            let new =
                fit_checked(&rel, std::slice::from_ref(&new))?.map_or(new, |mut f| f.remove(0));
            access::delete_rows_on_page(
                self.sh,
                (heap, tid.block.0),
                &rel.columns,
                &[tid.offset],
                xid,
            )?;
            let at = self.insert_fitted(&dbe, &rel, std::slice::from_ref(&new))?[0];
            state.written.insert((at.block.0, at.offset));
            return Ok(Upsert::Updated(new));
        }
        let at = self.insert_fitted(&dbe, &rel, std::slice::from_ref(&row))?[0];
        state.written.insert((at.block.0, at.offset));
        Ok(Upsert::Inserted(row))
    }

    /// DELETE of the rows for which `pred` holds. Returns how many.
    pub fn delete_where(
        &mut self,
        db: &str,
        table: &str,
        pred: &dyn Fn(&[Datum]) -> bool,
    ) -> Result<u64> {
        self.delete_where_checked(db, table, &mut |v| pred(v), &crate::no_interrupt)
    }

    /// [`Txn::delete_where`], running `interrupt` before each page.
    pub fn delete_where_checked(
        &mut self,
        db: &str,
        table: &str,
        pred: &mut dyn FnMut(&[Datum]) -> bool,
        interrupt: Interrupt<'_>,
    ) -> Result<u64> {
        self.delete_using(db, table, Access::Seq, pred, interrupt)
    }

    /// [`Txn::delete_where_checked`] over the rows `access` finds: every row, or the
    /// rows an index range points at (`pred` still decides; index rule 4).
    pub fn delete_using(
        &mut self,
        db: &str,
        table: &str,
        access: Access<'_>,
        pred: &mut dyn FnMut(&[Datum]) -> bool,
        interrupt: Interrupt<'_>,
    ) -> Result<u64> {
        let dbe = self.database(db)?;
        let rel = self.changed_table(&dbe, table)?;
        let xid = self.xid();
        let key = rel.key(&dbe);
        let _d = self.sh.drop_lock.read();
        let snap = self.snapshot();
        let cols = &rel.columns;
        match access {
            Access::Seq => access::delete_where(self.sh, key, cols, (&snap, xid), pred, interrupt),
            Access::Index { index, range } => {
                let ix = index_of(&rel, index)?;
                let ikey = rel.index_key(&dbe, ix);
                let tids = crate::index::collect_tids(self.sh, key, ikey, range, xid)?;
                let sx = (&snap, xid);
                access::delete_tids(self.sh, key, cols, sx, &tids, pred, interrupt)
            }
        }
    }

    /// UPDATE: every row this transaction sees for which `f` gives a new row gets a
    /// new version (the old one deleted by this transaction, the new one inserted,
    /// as PostgreSQL's heap keeps versions, with new entries in every index). The new
    /// versions are inserted after the scan, so the scan never meets them; memory
    /// O(rows updated). Returns how many.
    pub fn update_where_checked(
        &mut self,
        db: &str,
        table: &str,
        f: &mut dyn FnMut(&[Datum]) -> Option<Vec<Datum>>,
        interrupt: Interrupt<'_>,
    ) -> Result<u64> {
        self.update_using(db, table, Access::Seq, f, interrupt)
    }

    /// [`Txn::update_where_checked`] over the rows `access` finds.
    pub fn update_using(
        &mut self,
        db: &str,
        table: &str,
        access: Access<'_>,
        f: &mut dyn FnMut(&[Datum]) -> Option<Vec<Datum>>,
        interrupt: Interrupt<'_>,
    ) -> Result<u64> {
        let mut new_rows = Vec::new();
        let mut pred = |v: &[Datum]| match f(v) {
            Some(row) => {
                new_rows.push(row);
                true
            }
            None => false,
        };
        let n = self.delete_using(db, table, access, &mut pred, interrupt)?;
        for chunk in new_rows.chunks(UPDATE_INSERT_BATCH) {
            self.insert_checked(db, table, chunk, interrupt)?;
        }
        Ok(n)
    }

    /// The rows of a table as this transaction sees them (memory O(the table):
    /// tests and tools; queries use [`Txn::scan_each`]).
    pub fn scan(&self, db: &str, table: &str) -> Result<Vec<Vec<Datum>>> {
        self.scan_checked(db, table, &crate::no_interrupt)
    }

    /// [`Txn::scan`], running `interrupt` before each page.
    pub fn scan_checked(
        &self,
        db: &str,
        table: &str,
        interrupt: Interrupt<'_>,
    ) -> Result<Vec<Vec<Datum>>> {
        let mut rows = Vec::new();
        self.scan_each(db, table, interrupt, &mut |r| {
            rows.push(r);
            Ok(true)
        })?;
        Ok(rows)
    }

    /// Visits the rows of a table as of now — every committed row and this
    /// transaction's own, whatever its isolation level (rule 10 is for a
    /// statement's own rows: a table's rewrite and referential checks read the
    /// newest) — in bounded batches (`stream` rules 1-4; this transaction holds the
    /// writer lock, so nothing drops or truncates the table meanwhile). Rows this
    /// transaction inserts while the scan runs may be visited: a caller inserting
    /// into the table it scans must collect first. O(pages read); memory O(one
    /// batch).
    pub fn scan_each(
        &self,
        db: &str,
        table: &str,
        interrupt: Interrupt<'_>,
        f: &mut crate::RowVisitor<'_>,
    ) -> Result<()> {
        let now = access::Snapshot::take(self.sh);
        self.scan_each_as(&now, (db, table), interrupt, f)
    }

    /// [`Txn::scan_each`] as of `snap` (a statement's: COPY TO in a REPEATABLE READ
    /// block reads its snapshot, rule 10).
    pub fn scan_each_as(
        &self,
        snap: &access::Snapshot<'_>,
        (db, table): (&str, &str),
        interrupt: Interrupt<'_>,
        f: &mut crate::RowVisitor<'_>,
    ) -> Result<()> {
        let dbe = self.database(db)?;
        let rel = self.stored(&dbe, table)?;
        let key = rel.key(&dbe);
        let resolve = || Ok((key, rel.clone()));
        crate::stream::scan_batches(self.sh, &resolve, (snap, self.xid), interrupt, f)
    }

    /// Runs `f` with the transaction's REPEATABLE READ snapshot set aside (rule
    /// 10): what `f` deletes and updates it finds as of now. Referential actions
    /// (ON DELETE CASCADE, SET NULL) must reach rows committed since the
    /// snapshot, or they would leave orphans.
    pub fn at_latest<R>(&mut self, f: impl FnOnce(&mut Self) -> R) -> R {
        let fixed = self.fixed.take();
        let r = f(self);
        self.fixed = fixed;
        r
    }

    /// A snapshot for one statement of this transaction (`cursor` rule 2).
    pub fn snapshot(&self) -> access::Snapshot<'e> {
        match &self.fixed {
            Some(s) => s.clone(),
            None => access::Snapshot::take(self.sh),
        }
    }

    /// A pull scan of `table` as this transaction sees it (`cursor` rules). Rows
    /// this transaction inserts while it runs may be read: a caller inserting into
    /// the table it scans collects first.
    pub fn seq_cursor(&self, db: &str, table: &str) -> Result<crate::SeqCursor<'e>> {
        let dbe = self.database(db)?;
        let rel = self.stored(&dbe, table)?;
        let key = rel.key(&dbe);
        let resolve = move || Ok((key, rel.clone()));
        Ok(crate::SeqCursor::new(self.sh, Box::new(resolve), self.xid))
    }

    /// A pull scan of index `index`'s `range` of `table` as this transaction sees
    /// it, in index order.
    pub fn index_cursor(
        &self,
        db: &str,
        table: &str,
        index: &str,
        range: IndexRange,
    ) -> Result<crate::IndexCursor<'e>> {
        let dbe = self.database(db)?;
        let rel = self.stored(&dbe, table)?;
        let ikey = rel.index_key(&dbe, index_of(&rel, index)?);
        let key = rel.key(&dbe);
        let resolve = move || Ok((key, rel.clone(), ikey));
        Ok(crate::IndexCursor::new(
            self.sh,
            Box::new(resolve),
            range,
            self.xid,
        ))
    }

    /// Visits the rows of `table` that index `index`'s `range` points at, as of now
    /// (as [`Txn::scan_each`]: a referential check's parent row is the newest), in
    /// index order (index rule 4: the caller rechecks its WHERE). Memory O(one
    /// batch).
    pub fn scan_index_each(
        &self,
        db: &str,
        table: &str,
        index: &str,
        range: &IndexRange,
        interrupt: Interrupt<'_>,
        f: &mut crate::RowVisitor<'_>,
    ) -> Result<()> {
        let dbe = self.database(db)?;
        let rel = self.stored(&dbe, table)?;
        let ikey = rel.index_key(&dbe, index_of(&rel, index)?);
        let resolve = || Ok((rel.key(&dbe), rel.clone(), ikey));
        let now = access::Snapshot::take(self.sh);
        crate::index::scan_batches(self.sh, &resolve, range, (&now, self.xid), interrupt, f)
    }

    /// VACUUM of one table or of every table of `db` (no transaction is in progress:
    /// the writer lock is held and no xid assigned). Returns pages truncated.
    pub fn vacuum(self, db: &str, table: Option<&str>) -> Result<u64> {
        let done = self.vacuum_where(db, table, &mut |_| true)?;
        Ok(done.iter().map(|(_, v)| v.pages_truncated).sum())
    }

    /// [`Txn::vacuum`] of the relations `keep` says yes to (the others are
    /// skipped: a role may vacuum only what it owns); each table vacuumed with its
    /// heap's figures (its TOAST heap's pages truncated added).
    pub fn vacuum_where(
        self,
        db: &str,
        table: Option<&str>,
        keep: &mut dyn FnMut(&RelEntry) -> bool,
    ) -> Result<Vec<(Arc<RelEntry>, access::VacuumStats)>> {
        if self.xid.is_some() {
            return Err(EngineError::NotSupported(
                "VACUUM cannot run inside a transaction block".into(),
            ));
        }
        let dbe = self.database(db)?;
        let rels: Vec<Arc<RelEntry>> = match table {
            Some(t) => vec![self.relation(&dbe, t)?],
            None => self.relations_of(&dbe),
        };
        let mut done = Vec::new();
        let stored = |r: &RelEntry| r.sequence.is_none() && r.view.is_none();
        for r in rels.into_iter().filter(|r| stored(r) && keep(r)) {
            let indexes: Vec<RelKey> = r.indexes.iter().map(|ix| r.index_key(&dbe, ix)).collect();
            let mut v = access::vacuum_rel(self.sh, r.key(&dbe), &indexes)?;
            // Toast rule 3: the TOAST heap after its table.
            let toast = crate::toast::toast_key(r.key(&dbe));
            if self.sh.smgr.exists(toast, ForkNumber::Main) {
                v.pages_truncated += access::vacuum_rel(self.sh, toast, &[])?.pages_truncated;
            }
            done.push((r, v));
        }
        Ok(done)
    }

    /// Commits: the commit record is made durable, then the catalog changes become
    /// visible and the dropped files go (engine rules 3 and 5).
    pub fn commit(self) -> Result<()> {
        self.commit_lsn().map(|_| ())
    }

    /// [`Txn::commit`], returning where the commit record ends (`None` if the
    /// transaction wrote nothing): what a synchronous standby must reach.
    pub fn commit_lsn(mut self) -> Result<Option<strata_types::Lsn>> {
        let Some(xid) = self.xid else {
            self.finished = true;
            self.forget_sequences();
            return Ok(None);
        };
        let rec = CommitRecord {
            commit_time_unix_us: std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(0, |d| d.as_micros() as u64),
            dropped_rels: std::mem::take(&mut self.dropped_rels),
            dropped_dbs: std::mem::take(&mut self.dropped_dbs),
            dropped_spcs: std::mem::take(&mut self.dropped_spcs),
        };
        let _r = self.sh.redo_ptr.read();
        // From here on the commit cannot become an abort (engine rule 7): if the record
        // cannot be inserted or flushed, whether it is durable is unknown, so it is a
        // PANIC — never the abort path, which would remove files a durable commit
        // record still needs.
        self.finished = true;
        let (_, end) = self
            .sh
            .wal_insert(RM_XACT, XACT_COMMIT, xid.0, &rec.encode())?;
        self.sh.wal_flush(end)?;
        self.sh.clog.set(xid, XidStatus::Committed);
        std::mem::take(&mut self.ov).apply(&mut self.sh.catalog.write());
        self.forget_sequences();
        *self.sh.running.lock() = None;
        if let Err(e) = remove_dropped(self.sh, &rec) {
            self.sh.log(&format!(
                "WARNING:  could not remove dropped files after commit: {e}"
            ));
        }
        Ok(Some(end))
    }

    /// Aborts: everything created is removed; nothing dropped is touched.
    pub fn abort(mut self) -> Result<()> {
        self.do_abort()
    }

    fn do_abort(&mut self) -> Result<()> {
        self.finished = true;
        self.forget_sequences();
        let Some(xid) = self.xid else {
            return Ok(());
        };
        let rec = AbortRecord {
            created: std::mem::take(&mut self.created),
        };
        let inserted = {
            let _r = self.sh.redo_ptr.read();
            self.sh
                .wal_insert(RM_XACT, XACT_ABORT, xid.0, &rec.encode())
        };
        self.sh.clog.set(xid, XidStatus::Aborted);
        *self.sh.running.lock() = None;
        // Sequence rule 4: the values it handed out stay handed out.
        let seq_lsn = self.sh.seq_lsn.load(std::sync::atomic::Ordering::Acquire);
        if seq_lsn != 0 && inserted.is_ok() {
            self.sh.wal_flush(strata_types::Lsn(seq_lsn))?;
        }
        // Without the record, recovery still removes what was created: the
        // transaction never committed.
        let removed = remove_created(self.sh, &rec.created);
        inserted?;
        removed
    }
}

impl Drop for Txn<'_> {
    fn drop(&mut self) {
        if !self.finished {
            if let Err(e) = self.do_abort() {
                self.sh
                    .log(&format!("WARNING:  error while aborting transaction: {e}"));
            }
        }
    }
}

/// Whether a CHECK constraint of `cols` (but those of column `except`) may name
/// `column`: its SQL text contains the name, case aside (conservative: CHECKs are kept
/// as text, so renaming or dropping a column they name would leave them stale).
fn check_names(cols: &[Column], column: &str, except: Option<usize>) -> bool {
    let lower = column.to_lowercase();
    cols.iter()
        .enumerate()
        .filter(|(i, _)| Some(*i) != except)
        .flat_map(|(_, c)| &c.checks)
        .any(|(_, sql)| sql.to_lowercase().contains(&lower))
}

/// Rows an INSERT encodes and inserts at once (one interrupt check per chunk).
const INSERT_CHUNK_ROWS: usize = 256;

/// Rows with their text made to fit `varchar(n)` / `char(n)` columns (22001 for
/// too long); None when every value fits as it is (the common case: no copy).
/// [`fit_rows`], then the checks every inserted row passes: the table's width,
/// NOT NULL (23502), the columns' types.
fn fit_checked(rel: &RelEntry, rows: &[Vec<Datum>]) -> Result<Option<Vec<Vec<Datum>>>> {
    let fitted = fit_rows(&rel.columns, rows)?;
    let table = &rel.name;
    for row in fitted.as_deref().unwrap_or(rows) {
        if row.len() != rel.columns.len() {
            return Err(EngineError::DatatypeMismatch(format!(
                "INSERT has {} expressions but table \"{table}\" has {} columns",
                row.len(),
                rel.columns.len()
            )));
        }
        for (v, c) in row.iter().zip(&rel.columns) {
            if c.not_null && *v == Datum::Null {
                return Err(EngineError::NotNullViolation {
                    column: c.name.clone(),
                    table: table.to_string(),
                });
            }
            if !heap::type_matches(v, c.ty) {
                return Err(EngineError::DatatypeMismatch(format!(
                    "column \"{}\" is of type {} but expression is {v:?}",
                    c.name,
                    c.ty.name()
                )));
            }
        }
    }
    Ok(fitted)
}

fn fit_rows(cols: &[heap::Column], rows: &[Vec<Datum>]) -> Result<Option<Vec<Vec<Datum>>>> {
    if cols
        .iter()
        .all(|c| c.max_chars.is_none() && c.numeric.is_none() && c.precision.is_none())
    {
        return Ok(None);
    }
    let mut out: Option<Vec<Vec<Datum>>> = None;
    for (r, row) in rows.iter().enumerate() {
        for (i, (v, c)) in row.iter().zip(cols).enumerate() {
            let fit = match v {
                Datum::Text(s) => c
                    .fit_text(s)
                    .map_err(EngineError::StringTooLong)?
                    .map(Datum::Text),
                Datum::Numeric(d) if c.numeric.is_some() => {
                    let f = c
                        .fit_numeric(d)
                        .map_err(|detail| EngineError::NumericFieldOverflow { detail })?;
                    (f.scale() != d.scale() || f != *d).then_some(Datum::Numeric(f))
                }
                _ => c.fit_time(v),
            };
            if let Some(fit) = fit {
                out.get_or_insert_with(|| rows.to_vec())[r][i] = fit;
            }
        }
    }
    Ok(out)
}

fn tablespace_is_empty(dir: &Path) -> bool {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return true;
    };
    entries.flatten().all(|e| {
        std::fs::read_dir(e.path())
            .map(|mut d| d.next().is_none())
            .unwrap_or(false)
    })
}

/// Copies one fork file page by page, setting each page's LSN to 0 (so its first
/// change afterwards carries a full-page image), then fsyncs it (FILE_COPY).
fn copy_fork_files(sh: &Shared, src: RelKey, dst: RelKey, fork: ForkNumber) -> Result<()> {
    sh.smgr.create(dst, fork, false)?;
    let n = sh.smgr.nblocks(src, fork)?;
    let mut page = Box::new(access::ZERO_PAGE);
    for b in 0..n {
        let block = BlockNumber(b);
        sh.smgr.read(src, fork, block, &mut page)?;
        if !strata_page::is_new(&page) {
            strata_page::set_lsn(&mut page, strata_types::Lsn::INVALID);
            strata_page::set_checksum(&mut page, block);
        }
        sh.smgr.extend(dst, fork, block, &page)?;
    }
    sh.smgr.sync(dst, fork).map_err(|e| sh.fatal().raise(e))?; // engine rule 7: never retried
    Ok(())
}

/// After a commit record is durable (or in its replay): forget the buffers, then
/// remove the files, of everything it dropped (engine rule 3) — a relation's files
/// through the unlink queue (engine rule 5), databases and tablespaces at once.
/// O(cached pages and files of what was dropped).
pub(crate) fn remove_dropped(sh: &Shared, rec: &CommitRecord) -> Result<()> {
    if rec.dropped_rels.is_empty() && rec.dropped_dbs.is_empty() && rec.dropped_spcs.is_empty() {
        return Ok(());
    }
    let _d = sh.drop_lock.write();
    sh.pool.drop_relations(&rec.dropped_rels);
    sh.unlinks.defer(&rec.dropped_rels); // engine rule 5
    {
        let mut t = sh.targblock.lock();
        for r in &rec.dropped_rels {
            t.remove(r);
        }
    }
    for (db, spcs) in &rec.dropped_dbs {
        sh.pool.drop_database(*db);
        sh.smgr.remove_database(*db, spcs)?;
    }
    for spc in &rec.dropped_spcs {
        sh.smgr.drop_tablespace(*spc)?;
    }
    Ok(())
}

/// After an abort (or for a transaction recovery finds unfinished): remove what it
/// created — relations, database directories, tablespaces, in that order.
pub(crate) fn remove_created(sh: &Shared, created: &[PendingCreate]) -> Result<()> {
    if created.is_empty() {
        return Ok(());
    }
    let _d = sh.drop_lock.write();
    let rels: Vec<RelKey> = created
        .iter()
        .filter_map(|c| match c {
            PendingCreate::Rel(r) => Some(*r),
            _ => None,
        })
        .collect();
    sh.pool.drop_relations(&rels);
    sh.smgr.unlink(&rels)?;
    {
        let mut t = sh.targblock.lock();
        for r in &rels {
            t.remove(r);
        }
    }
    for c in created {
        if let PendingCreate::DbDir { spc, db } = c {
            sh.pool.drop_database(*db);
            sh.smgr.remove_database(*db, &[*spc])?;
        }
    }
    for c in created {
        if let PendingCreate::Tablespace(spc) = c {
            sh.smgr.drop_tablespace(*spc)?;
        }
    }
    Ok(())
}

/// Redo of the Transaction resource manager. COMMIT: the clog, the dropped relations'
/// and databases' skipped pages explained, their buffers then files removed
/// ([`remove_dropped`]). ABORT: the clog, then what the transaction created removed
/// ([`remove_created`]). Either ends the transaction (redo rule 2).
pub(crate) fn xact_redo(rx: &mut dyn RedoContext, r: &Record) -> Result<()> {
    let xid = Xid(r.xid);
    match r.info {
        XACT_COMMIT => {
            let c = CommitRecord::decode(&r.payload).map_err(corrupt)?;
            if rx.hot_standby() {
                // Standby rule 9: the relations stay, for scans that read them, until
                // they end or the delay is up.
                crate::standby::wait_for_scans(rx.shared(), &c);
            }
            rx.shared().clog.set(xid, XidStatus::Committed);
            rx.shared()
                .recovery
                .last_commit_unix_us
                .store(c.commit_time_unix_us, std::sync::atomic::Ordering::Release);
            rx.committed(xid)?;
            rx.forget_rels(&c.dropped_rels);
            for (db, _) in &c.dropped_dbs {
                rx.forget_db(*db);
            }
            remove_dropped(rx.shared(), &c)?;
        }
        XACT_ABORT => {
            let a = AbortRecord::decode(&r.payload).map_err(corrupt)?;
            rx.shared().clog.set(xid, XidStatus::Aborted);
            rx.forget_created(&a.created);
            remove_created(rx.shared(), &a.created)?;
        }
        _ => return Err(unknown_record(r)),
    }
    rx.ended(xid);
    Ok(())
}

/// Redo of the Database resource manager. CREATE_WAL_LOG: the database's directory
/// (tracked, so an unfinished CREATE DATABASE leaves none). CREATE_FILE_COPY: nothing
/// (the module doc's FILE_COPY hazard).
pub(crate) fn dbase_redo(rx: &mut dyn RedoContext, r: &Record) -> Result<()> {
    match r.info {
        DBASE_CREATE_DIR => {
            let c = DbCreateDir::decode(&r.payload).map_err(corrupt)?;
            rx.saw_oid(c.db);
            rx.created(
                Xid(r.xid),
                PendingCreate::DbDir {
                    spc: c.spc,
                    db: c.db,
                },
            );
            if rx.spc_available(c.spc) {
                rx.shared().smgr.create_database_dir(c.spc, c.db)?;
            }
            Ok(())
        }
        DBASE_FILE_COPY => {
            let c = DbFileCopy::decode(&r.payload).map_err(corrupt)?;
            replay_file_copy(rx, &c)
        }
        _ => Err(unknown_record(r)),
    }
}

/// Replay of CREATE DATABASE ... FILE_COPY. In crash recovery the copy was durable
/// before the record (module doc): nothing to do, and copying again would pick up
/// later changes to the template's files. From a base backup the copy may be absent
/// or half-copied (the backup listed the directory while the copy ran): every fork is
/// copied again from the template as replay has it, as PostgreSQL's dbase_redo always
/// does (with PostgreSQL's caveat: a template changed after the CREATE and copied
/// later by the backup lends the copy those changes). O(template's files and pages).
fn replay_file_copy(rx: &mut dyn RedoContext, c: &DbFileCopy) -> Result<()> {
    if !rx.replaying_backup() {
        return Ok(());
    }
    for &(src_spc, dst_spc) in &c.dirs {
        if !rx.spc_available(src_spc) || !rx.spc_available(dst_spc) {
            continue;
        }
        let sh = rx.shared();
        sh.pool.flush_database(c.src_db)?; // the template's replayed pages first
        let src_dir = sh.smgr.database_dir(src_spc, c.src_db);
        let names = match sh.smgr.vfs().list_dir(&src_dir) {
            Ok(n) => n,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => continue,
            Err(source) => {
                return Err(EngineError::Io {
                    op: "read directory",
                    path: src_dir,
                    source,
                })
            }
        };
        sh.smgr.create_database_dir(dst_spc, c.dst_db)?;
        for (rel, fork) in names.iter().filter_map(|e| fork_file(&e.name)) {
            let src = RelKey::new(src_spc, c.src_db, rel);
            let dst = RelKey::new(dst_spc, c.dst_db, rel);
            if sh.smgr.exists(dst, fork) {
                sh.pool.drop_relations(&[dst]);
                sh.smgr.truncate(dst, &[(fork, BlockNumber(0))])?;
            }
            copy_fork_files(sh, src, dst, fork)?;
        }
        sh.smgr
            .sync_database_dir(dst_spc, c.dst_db)
            .map_err(|e| sh.fatal().raise(e))?;
    }
    Ok(())
}

/// The relation and fork of a fork's first segment file (`16384`, `16384_fsm`,
/// `16384_vm`); other names (later segments `16384.1`, other files) are not forks.
fn fork_file(name: &str) -> Option<(RelFileNumber, ForkNumber)> {
    let (num, fork) = match name.split_once('_') {
        Some((n, "fsm")) => (n, ForkNumber::Fsm),
        Some((n, "vm")) => (n, ForkNumber::Vm),
        Some(_) => return None,
        None => (name, ForkNumber::Main),
    };
    Some((RelFileNumber(num.parse().ok()?), fork))
}

/// Redo of the Tablespace resource manager. CREATE (tracked): the location and its
/// link, unless the link exists already; a location that already holds the version
/// directory (the files survived) gets only the link.
pub(crate) fn tblspc_redo(rx: &mut dyn RedoContext, r: &Record) -> Result<()> {
    if r.info != TBLSPC_CREATE {
        return Err(unknown_record(r));
    }
    let c = TblspcCreate::decode(&r.payload).map_err(corrupt)?;
    rx.saw_oid(c.spc);
    rx.created(Xid(r.xid), PendingCreate::Tablespace(c.spc));
    if rx.spc_available(c.spc) {
        return Ok(());
    }
    let sh = rx.shared();
    let loc = Path::new(&c.location);
    let vfs = &sh.settings.vfs;
    let io = |op, source| EngineError::Io {
        op,
        path: loc.to_path_buf(),
        source,
    };
    vfs.create_dir_all(loc)
        .map_err(|e| io("create directory", e))?;
    if vfs.exists(&loc.join(strata_smgr::TABLESPACE_VERSION_DIR)) {
        vfs.symlink(loc, &sh.dir.join("pg_tblspc").join(c.spc.to_string()))
            .map_err(|e| io("create symbolic link", e))?;
    } else {
        sh.smgr.create_tablespace(c.spc, loc)?;
    }
    Ok(())
}

/// initdb's catalog: `pg_tablespace` with `pg_default` and `pg_global`,
/// `pg_database` with `template1`, `template0` and `postgres`, each with its
/// `pg_class` and its (empty) `pg_statistic`.
pub(crate) fn bootstrap(engine: &crate::Engine) -> Result<()> {
    let mut t = engine.begin();
    for rel in [pg_tablespace(), pg_database()] {
        t.create_rel_file(rel)?;
    }
    for mut s in catalog::CatalogCache::builtin_spcs() {
        s.tid = Some(t.catalog_insert(pg_tablespace(), &tablespace_columns(), &s.values())?);
        t.ov.spcs.insert(s.name.clone(), Some(Arc::new(s)));
    }
    for (oid, name, is_template, allow_conn) in [
        (catalog::TEMPLATE1_OID, "template1", true, true),
        (catalog::TEMPLATE0_OID, "template0", true, false),
        (catalog::POSTGRES_OID, "postgres", false, true),
    ] {
        let rec = DbCreateDir {
            spc: DEFAULT_TABLESPACE,
            db: oid,
        };
        t.log_create(
            PendingCreate::DbDir {
                spc: DEFAULT_TABLESPACE,
                db: oid,
            },
            RM_DBASE,
            DBASE_CREATE_DIR,
            &rec.encode(),
        )?;
        t.sh.smgr.create_database_dir(DEFAULT_TABLESPACE, oid)?;
        t.create_rel_file(pg_class(DEFAULT_TABLESPACE, oid))?;
        t.create_rel_file(catalog::pg_statistic(DEFAULT_TABLESPACE, oid))?;
        let mut e = DbEntry {
            oid,
            name: name.into(),
            spc: DEFAULT_TABLESPACE,
            is_template,
            allow_conn,
            owner: catalog::BOOTSTRAP_SUPERUSER_OID,
            acl: None,
            public_acl: None,
            tid: None,
        };
        e.tid = Some(t.catalog_insert(pg_database(), &database_columns(), &e.values())?);
        t.ov.dbs.insert(name.into(), Some(Arc::new(e)));
    }
    crate::roles::bootstrap(&mut t)?;
    t.commit()
}
