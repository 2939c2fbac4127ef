//! FOREIGN KEYs in a transaction (catalog rule 11): adding and dropping them, the
//! tables that reference a table, and keeping the referencing rows right when a
//! referenced table is renamed or loses a column. The rows themselves are checked
//! by the SQL layer, which alone evaluates keys.

use super::Txn;
use crate::catalog::{DbEntry, ForeignKey, IndexDef, RelEntry};
use crate::{EngineError, Result};
use std::sync::Arc;

impl Txn<'_> {
    /// Adds FOREIGN KEY `fk` to `table`'s row (CREATE TABLE's and ALTER TABLE ...
    /// ADD's; the SQL layer has resolved the columns and checked the rows). 42710 if
    /// the table has a constraint of that name.
    pub fn add_foreign_key(&mut self, db: &str, table: &str, fk: ForeignKey) -> Result<()> {
        let dbe = self.database(db)?;
        let rel = self.table(&dbe, table)?;
        let taken = rel.foreign_keys.iter().any(|f| f.name == fk.name)
            || rel
                .columns
                .iter()
                .any(|c| c.checks.iter().any(|(n, _)| *n == fk.name))
            || rel
                .indexes
                .iter()
                .any(|ix| ix.constraint && crate::temp::same(&ix.name, &fk.name));
        if taken {
            return Err(EngineError::DuplicateObject(format!(
                "constraint \"{}\" for relation \"{}\" already exists",
                fk.name,
                crate::temp::bare(&rel.name)
            )));
        }
        let mut e = (*rel).clone();
        e.foreign_keys.push(fk);
        self.replace_class_row(&dbe, &rel, e)
    }

    /// Drops FOREIGN KEY `name` of `rel`, if it has one: whether it did.
    pub(super) fn drop_foreign_key(
        &mut self,
        dbe: &DbEntry,
        rel: &RelEntry,
        name: &str,
    ) -> Result<bool> {
        if !rel.foreign_keys.iter().any(|f| f.name == name) {
            return Ok(false);
        }
        let mut e = rel.clone();
        e.foreign_keys.retain(|f| f.name != name);
        self.replace_class_row(dbe, rel, e)?;
        Ok(true)
    }

    /// The tables of `db` whose FOREIGN KEYs reference `table` (itself, for a
    /// self-reference), as this transaction sees them, sorted by name. O(those
    /// tables + this transaction's catalog changes).
    pub fn referencing(&self, db: &str, table: &str) -> Result<Vec<Arc<RelEntry>>> {
        let dbe = self.database(db)?;
        let stored = self.relation(&dbe, table)?.name.clone();
        Ok(self.referencing_stored(&dbe, &stored))
    }

    fn referencing_stored(&self, dbe: &DbEntry, stored: &str) -> Vec<Arc<RelEntry>> {
        let names = self.dependents(dbe, |c| &c.fk_deps, stored, &|e| {
            e.foreign_keys.iter().any(|f| f.parent == stored)
        });
        let mut out: Vec<Arc<RelEntry>> = names
            .iter()
            .filter_map(|n| self.relation_exact(dbe, n))
            .collect();
        out.sort_by(|a, b| a.name.cmp(&b.name));
        out
    }

    /// 2BP01 if another table's FOREIGN KEY references `rel` (DROP TABLE: the SQL
    /// layer drops those constraints first for CASCADE).
    pub(super) fn refuse_referenced(&self, dbe: &DbEntry, rel: &RelEntry) -> Result<()> {
        for child in self.referencing_stored(dbe, &rel.name) {
            if child.name == rel.name {
                continue;
            }
            let fk = child.foreign_keys.iter().find(|f| f.parent == rel.name);
            return Err(EngineError::DependentObjects(format!(
                "cannot drop table {0} because other objects depend on it\nconstraint {1} on table {2} depends on table {0}",
                crate::temp::bare(&rel.name),
                fk.map_or("", |f| f.name.as_str()),
                crate::temp::bare(&child.name)
            )));
        }
        Ok(())
    }

    /// 2BP01 if a FOREIGN KEY references `rel` through unique index `ix` (its
    /// columns, and no other unique index of `rel` has them).
    pub(super) fn refuse_index_needed(
        &self,
        dbe: &DbEntry,
        rel: &RelEntry,
        ix: &IndexDef,
    ) -> Result<()> {
        let same = |a: &[usize], b: &[usize]| a.len() == b.len() && a.iter().all(|c| b.contains(c));
        let other = |cols: &[usize]| {
            rel.indexes
                .iter()
                .any(|o| o.unique && o.name != ix.name && same(&o.columns, cols))
        };
        for child in self.referencing_stored(dbe, &rel.name) {
            for fk in child.foreign_keys.iter().filter(|f| f.parent == rel.name) {
                if same(&fk.parent_columns, &ix.columns) && !other(&fk.parent_columns) {
                    let ixname = crate::temp::bare(&ix.name);
                    let what = match ix.constraint {
                        true => format!(
                            "constraint {ixname} on table {}",
                            crate::temp::bare(&rel.name)
                        ),
                        false => format!("index {ixname}"),
                    };
                    return Err(EngineError::DependentObjects(format!(
                        "cannot drop {what} because other objects depend on it\nconstraint {} on table {} depends on index {ixname}",
                        fk.name,
                        crate::temp::bare(&child.name)
                    )));
                }
            }
        }
        Ok(())
    }

    /// After `old` (a referenced table) is renamed to `new`: the referencing rows
    /// name it anew (the renamed table's own, for a self-reference, is `e`).
    pub(super) fn rename_referenced(
        &mut self,
        dbe: &DbEntry,
        old: &str,
        e: &mut RelEntry,
    ) -> Result<()> {
        for fk in e.foreign_keys.iter_mut().filter(|f| f.parent == old) {
            fk.parent = e.name.clone();
        }
        for child in self.referencing_stored(dbe, old) {
            if child.name == old {
                continue;
            }
            let mut c = (*child).clone();
            for fk in c.foreign_keys.iter_mut().filter(|f| f.parent == old) {
                fk.parent = e.name.clone();
            }
            self.replace_class_row(dbe, &child, c)?;
        }
        Ok(())
    }

    /// Before column `at` of `rel` is dropped: its own FOREIGN KEYs without the ones
    /// that column is in (PostgreSQL drops those), positions after it moved down;
    /// the referencing tables' positions moved down too (2BP01 if one references
    /// the column itself). Returns `rel`'s new list.
    pub(super) fn foreign_keys_without(
        &mut self,
        dbe: &DbEntry,
        rel: &RelEntry,
        at: usize,
    ) -> Result<Vec<ForeignKey>> {
        let down = |cols: &mut Vec<usize>| {
            for c in cols.iter_mut() {
                *c -= usize::from(*c > at);
            }
        };
        let column = &rel.columns[at].name;
        let shown = crate::temp::bare(&rel.name);
        let mut changed = Vec::new();
        for child in self.referencing_stored(dbe, &rel.name) {
            if let Some(fk) = child
                .foreign_keys
                .iter()
                .find(|f| f.parent == rel.name && f.parent_columns.contains(&at))
                .filter(|f| child.name != rel.name || !f.columns.contains(&at))
            {
                return Err(EngineError::DependentObjects(format!(
                    "cannot drop column {column} of table {shown} because other objects depend on it\nconstraint {} on table {} depends on column {column} of table {shown}",
                    fk.name,
                    crate::temp::bare(&child.name)
                )));
            }
            if child.name != rel.name {
                let mut c = (*child).clone();
                for fk in c.foreign_keys.iter_mut().filter(|f| f.parent == rel.name) {
                    down(&mut fk.parent_columns);
                }
                changed.push((child, c));
            }
        }
        for (old, new) in changed {
            self.replace_class_row(dbe, &old, new)?;
        }
        let mut own: Vec<ForeignKey> = rel
            .foreign_keys
            .iter()
            .filter(|f| !f.columns.contains(&at))
            .cloned()
            .collect();
        for fk in &mut own {
            down(&mut fk.columns);
            if fk.parent == rel.name {
                down(&mut fk.parent_columns);
            }
        }
        Ok(own)
    }
}
