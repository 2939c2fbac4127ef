//! Planner statistics in a transaction (catalog rule 10): ANALYZE's
//! [`Txn::set_table_stats`], the statistics as this transaction sees them, and their
//! removal with their table or column.
//!
//! Rules (cited as "xact stats rule N"):
//! 1. Setting a table's statistics replaces its `pg_statistic` row (delete, insert:
//!    WAL-logged heap records, replayed and applied to a standby's cache like every
//!    catalog row) and notes the new entry in the overlay, so the committed cache
//!    changes at commit only and an abort leaves the old statistics.
//! 2. A database without a `pg_statistic` file (made before it) gets one with its
//!    first statistics, in their transaction (a WAL-logged create that an abort
//!    removes); reading such a database finds no statistics.
//! 3. DROP TABLE deletes the table's row in its transaction; DROP COLUMN keeps the
//!    other columns' statistics at their new positions; TRUNCATE and the other
//!    ALTERs keep them (the planner checks `ColumnStats::fits`).

use super::Txn;
use crate::catalog::{statistic_columns, DbEntry, RelEntry, StatEntry};
use crate::stats::TableStats;
use crate::Result;
use std::sync::Arc;
use strata_types::{ForkNumber, Oid, TEMP_TABLESPACE};

impl Txn<'_> {
    /// Stores the statistics ANALYZE computed for table `table` of database `db`
    /// (rule 1), shrunk to fit a page if need be (stats rule 4). 3D000, 42P01, 42809
    /// for a sequence or a view.
    pub fn set_table_stats(&mut self, db: &str, table: &str, stats: TableStats) -> Result<()> {
        let dbe = self.database(db)?;
        let rel = self.table(&dbe, table)?;
        self.put_stats(&dbe, &rel, stats)
    }

    /// Table `table`'s statistics as this transaction sees them: its own change if it
    /// made one, else the committed ones. None for no such table or none stored.
    /// O(1).
    pub fn table_stats(&self, db: &str, table: &str) -> Option<Arc<TableStats>> {
        let dbe = self.database(db).ok()?;
        let rel = self.relation_opt(&dbe, table)?;
        self.stat_entry(&dbe, rel.oid).map(|e| Arc::clone(&e.stats))
    }

    /// Table `relid`'s statistics entry as this transaction sees it: the overlay
    /// first, then the committed cache.
    fn stat_entry(&self, dbe: &DbEntry, relid: Oid) -> Option<Arc<StatEntry>> {
        match self.ov.stats.get(&(dbe.oid, relid)) {
            Some(e) => e.clone(),
            None => self.sh.catalog.read().stat_entry(dbe.oid, relid).cloned(),
        }
    }

    /// Replaces table `rel`'s statistics with `stats` (rules 1, 2).
    fn put_stats(&mut self, dbe: &DbEntry, rel: &RelEntry, stats: TableStats) -> Result<()> {
        let mut e = StatEntry::fitted(rel.oid, stats);
        self.delete_stats_row(dbe, rel.oid)?;
        if rel.reltablespace == TEMP_TABLESPACE {
            self.xid(); // its commit applies the overlay
        } else {
            let key = dbe.pg_statistic();
            if !self.sh.smgr.exists(key, ForkNumber::Main) {
                self.create_rel_file(key)?; // rule 2
            }
            e.tid = Some(self.catalog_insert(key, &statistic_columns(), &e.values())?);
        }
        self.ov.stats.insert((dbe.oid, rel.oid), Some(Arc::new(e)));
        Ok(())
    }

    /// Deletes table `relid`'s statistics row if it has one (not in the overlay:
    /// the caller notes what replaces it).
    fn delete_stats_row(&mut self, dbe: &DbEntry, relid: Oid) -> Result<bool> {
        let Some(old) = self.stat_entry(dbe, relid) else {
            return Ok(false);
        };
        if old.tid.is_some() {
            self.catalog_delete(dbe.pg_statistic(), old.tid)?;
        }
        Ok(true)
    }

    /// DROP TABLE's part (rule 3): the table's statistics go with it.
    pub(super) fn drop_stats(&mut self, dbe: &DbEntry, rel: &RelEntry) -> Result<()> {
        if self.delete_stats_row(dbe, rel.oid)? {
            self.ov.stats.insert((dbe.oid, rel.oid), None);
        }
        Ok(())
    }

    /// DROP COLUMN's part (rule 3): column `at`'s statistics go, the later columns'
    /// move up with their columns.
    pub(super) fn drop_column_stats(
        &mut self,
        dbe: &DbEntry,
        rel: &RelEntry,
        at: usize,
    ) -> Result<()> {
        let Some(old) = self.stat_entry(dbe, rel.oid) else {
            return Ok(());
        };
        let mut stats = (*old.stats).clone();
        if at < stats.columns.len() {
            stats.columns.remove(at);
        }
        self.put_stats(dbe, rel, stats)
    }

    /// CREATE DATABASE's part: the template's statistics rows, copied byte for byte
    /// with its `pg_statistic` (same tids), as this transaction sees them.
    /// O(the template's statistics).
    pub(super) fn copy_stats(&mut self, tmpl: &DbEntry, oid: Oid) {
        let mut copied: Vec<Arc<StatEntry>> = self
            .sh
            .catalog
            .read()
            .stats
            .get(&tmpl.oid)
            .map(|m| {
                m.iter()
                    .filter(|(r, _)| !self.ov.stats.contains_key(&(tmpl.oid, **r)))
                    .map(|(_, e)| Arc::clone(e))
                    .collect()
            })
            .unwrap_or_default();
        copied.extend(
            self.ov
                .stats
                .iter()
                .filter(|((d, _), _)| *d == tmpl.oid)
                .filter_map(|(_, e)| e.clone()),
        );
        for e in copied.into_iter().filter(|e| e.tid.is_some()) {
            self.ov.stats.insert((oid, e.relid), Some(e));
        }
    }
}
