//! Views in a transaction (catalog rule 9): CREATE [OR REPLACE] VIEW, DROP VIEW and
//! the views that read a relation, as this transaction sees them.

use super::Txn;
use crate::catalog::{CatalogCache, DbEntry, RelEntry, ViewDef};

/// A derived map of the cache: per database OID, relation → its dependents.
pub(super) type DepMap =
    rustc_hash::FxHashMap<Oid, rustc_hash::FxHashMap<String, FxHashSet<String>>>;
use crate::heap::Column;
use crate::{EngineError, Result};
use rustc_hash::FxHashSet;
use std::sync::Arc;
use strata_types::{Oid, RelFileNumber, TEMP_TABLESPACE};

impl Txn<'_> {
    /// CREATE [OR REPLACE] VIEW `name` in database `db`: a `pg_class` row with the
    /// view's columns and definition, and no storage (`pg_temp.name`: a temporary
    /// view, in the session's cache alone, as a temporary table is). OR REPLACE keeps the view's
    /// OID, owner and privileges (the SQL layer checks that the new columns extend
    /// the old ones); a table of that name is 42809.
    pub fn create_view(
        &mut self,
        db: &str,
        name: &str,
        columns: &[Column],
        def: ViewDef,
        replace: bool,
    ) -> Result<()> {
        let dbe = self.database(db)?;
        let stored = crate::temp::stored_for_create(name);
        let spc = if stored.is_some() {
            TEMP_TABLESPACE
        } else {
            Oid(0)
        };
        let name = stored.as_deref().unwrap_or(name);
        let old = self.relation_exact(&dbe, name);
        let mut e = match old {
            Some(o) if replace && o.view.is_some() => {
                self.class_delete(&dbe, &o)?;
                RelEntry {
                    columns: columns.to_vec(),
                    view: Some(def),
                    tid: None,
                    ..(*o).clone()
                }
            }
            Some(_) if replace => {
                return Err(EngineError::WrongObjectType(format!(
                    "\"{name}\" is not a view"
                )))
            }
            _ if self.name_taken(&dbe, name) => {
                return Err(EngineError::DuplicateTable(name.into()))
            }
            _ => RelEntry {
                oid: self.alloc_oid()?,
                name: name.into(),
                relfilenumber: RelFileNumber(0),
                reltablespace: spc,
                columns: columns.to_vec(),
                indexes: Vec::new(),
                foreign_keys: Vec::new(),
                sequence: None,
                view: Some(def),
                owner: self.role,
                acl: None,
                tid: None,
            },
        };
        e.tid = self.class_insert(&dbe, &e)?;
        self.ov
            .rels
            .insert((dbe.oid, name.into()), Some(Arc::new(e)));
        Ok(())
    }

    /// DROP VIEW `name`: 42809 for another kind of relation, 2BP01 while views read
    /// it (the SQL layer drops those first for CASCADE).
    pub fn drop_view(&mut self, db: &str, name: &str) -> Result<()> {
        let dbe = self.database(db)?;
        let rel = self.relation(&dbe, name)?;
        if rel.view.is_none() {
            return Err(EngineError::WrongObjectType(format!(
                "\"{name}\" is not a view"
            )));
        }
        self.refuse_dependents(&dbe, &rel, "view")?;
        self.class_delete(&dbe, &rel)?;
        self.ov.rels.insert((dbe.oid, rel.name.clone()), None);
        Ok(())
    }

    /// 2BP01 if views read relation `rel` (catalog rule 9).
    pub(super) fn refuse_dependents(
        &self,
        dbe: &DbEntry,
        rel: &RelEntry,
        kind: &str,
    ) -> Result<()> {
        if self.views_reading(dbe, &rel.name).is_empty() {
            return Ok(());
        }
        Err(EngineError::DependentObjects(format!(
            "cannot drop {kind} {} because other objects depend on it",
            rel.name
        )))
    }

    /// The names of the views of database `db` that read relation `name`, as this
    /// transaction sees them, sorted. O(the views that read it + this transaction's
    /// catalog changes).
    pub fn dependent_views(&self, db: &str, name: &str) -> Result<Vec<String>> {
        let dbe = self.database(db)?;
        let stored = self.relation(&dbe, name)?.name.clone();
        Ok(self.views_reading(&dbe, &stored))
    }

    fn views_reading(&self, dbe: &DbEntry, stored: &str) -> Vec<String> {
        let names = self.dependents(dbe, |c| &c.view_deps, stored, &|e| {
            e.view
                .as_ref()
                .is_some_and(|v| v.deps.iter().any(|(x, _)| x == stored))
        });
        let mut out: Vec<String> = names.into_iter().collect();
        out.sort();
        out
    }

    /// The relations of `dbe` that depend on relation `stored`, as this
    /// transaction sees them: the committed ones by the cache's derived map
    /// `deps`, then this transaction's changed ones by `names_it`. O(those
    /// relations + this transaction's catalog changes).
    pub(super) fn dependents(
        &self,
        dbe: &DbEntry,
        deps: fn(&CatalogCache) -> &DepMap,
        stored: &str,
        names_it: &dyn Fn(&RelEntry) -> bool,
    ) -> FxHashSet<String> {
        let mut names: FxHashSet<String> = deps(&self.sh.catalog.read())
            .get(&dbe.oid)
            .and_then(|m| m.get(stored))
            .cloned()
            .unwrap_or_default();
        for ((d, n), e) in &self.ov.rels {
            if *d == dbe.oid {
                names.remove(n);
                if e.as_deref().is_some_and(names_it) {
                    names.insert(n.clone());
                }
            }
        }
        names
    }
}

impl Txn<'_> {
    /// Renames (`new` set) or drops column `col` of relation `rel`: 2BP01 for a drop
    /// and 0A000 for a rename while a view reads the column (a view keeps its query
    /// as text, so a rename would break it); `col` None: the relation's own rename.
    pub(super) fn refuse_column_change(
        &self,
        dbe: &DbEntry,
        rel: &RelEntry,
        col: Option<&str>,
        drop: bool,
    ) -> Result<()> {
        let readers = self.views_reading(dbe, &rel.name);
        let reader = readers.iter().find(|v| {
            col.is_none_or(|c| {
                self.relation_exact(dbe, v)
                    .and_then(|e| e.view.clone())
                    .is_some_and(|d| d.reads_column(&rel.name, c))
            })
        });
        let (Some(view), shown) = (reader, crate::temp::bare(&rel.name)) else {
            return Ok(());
        };
        Err(match (col, drop) {
            (Some(c), true) => EngineError::DependentObjects(format!(
                "cannot drop column {c} of table {shown} because other objects depend on it"
            )),
            (Some(c), false) => EngineError::NotSupported(format!(
                "renaming column \"{c}\" of \"{shown}\", which view \"{view}\" reads, is not supported by Strata"
            )),
            (None, _) => EngineError::NotSupported(format!(
                "renaming \"{shown}\", which view \"{view}\" reads, is not supported by Strata"
            )),
        })
    }
}
