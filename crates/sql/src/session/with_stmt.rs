//! A statement whose WITH the session runs item by item ([`crate::WithStmt`]):
//! data-modifying CTEs, and CTEs a data-modifying statement reads where its own
//! clauses cannot take them (in a VALUES row, ON CONFLICT, a subquery of SET).
//!
//! Rules (cited as "with rule N"):
//! 1. The items are bound in order into one binder, each seeing those before it;
//!    a query CTE is bound once and read as a subquery at each reference (cte rule
//!    2); a data-modifying CTE runs to completion before the statement, once,
//!    whether or not anything reads it, and its RETURNING rows are what its name
//!    reads (cte rule 4).
//! 2. All of it is one transaction: in an open block, the block's; otherwise an
//!    implicit block that commits when the statement ends and rolls back when any
//!    part fails, so no CTE's change outlives a failed statement.
//! 3. Each part is checked for privileges as the statement it is would be.
//! 4. PostgreSQL runs every part under the statement's one snapshot: no part sees
//!    another's changes to a table. Strata runs the parts in turn, so a statement
//!    in which a table a CTE changes is read, or changed again, anywhere else is
//!    refused (0A000, before anything runs: [`crate::with_conflict`]); an INSERT
//!    into it does not read it and is taken.
//! 5. Describing (the extended protocol's Parse) binds the items without running
//!    them: a data-modifying CTE is seeded with its RETURNING columns and no rows.

use super::{check_params, Block, Bound, Lookup, Notices, Output, ResultSink, Session};
use crate::bind::{Binder, Columns, Scope};
use crate::cte::CteEntry;
use crate::{Datum, SqlResult, SqlType, Stmt, WithItem, WithStmt};

/// Keeps a data-modifying CTE's RETURNING rows (with rule 1).
#[derive(Default)]
struct Keep {
    columns: Option<Columns>,
    rows: Vec<Vec<Datum>>,
    bytes: usize,
}

impl ResultSink for Keep {
    fn columns(&mut self, columns: &[(String, SqlType)]) -> SqlResult<()> {
        self.columns = Some(columns.to_vec());
        Ok(())
    }
    fn row(&mut self, row: Vec<Datum>) -> SqlResult<()> {
        self.bytes += crate::sort::row_bytes(&row, &[]);
        crate::alloc_request(self.bytes)?;
        self.rows.push(row);
        Ok(())
    }
    fn end(&mut self, _: SqlResult<super::Executed>) {}
}

impl Keep {
    fn returned(self) -> Option<(Columns, Vec<Vec<Datum>>)> {
        self.columns.map(|c| (c, self.rows))
    }
}

/// The RETURNING columns of a bound data-modifying statement.
fn returning_columns(bound: &Bound<'_>) -> Option<Columns> {
    let r = match bound {
        Bound::Insert(i) => i.returning.as_ref(),
        Bound::Update(u) => u.returning.as_ref(),
        Bound::Delete(d) => d.returning.as_ref(),
        _ => None,
    };
    r.map(|r| r.columns.clone())
}

impl<'e> Session<'e> {
    /// Runs a WITH statement (with rules 1-3) in one transaction (with rule 2).
    pub(super) fn run_with(
        &mut self,
        w: &WithStmt,
        params: &[Datum],
        notices: &mut Notices,
        sink: &mut dyn ResultSink,
    ) -> SqlResult<Output> {
        let implicit = matches!(self.block, Block::Idle);
        if implicit {
            self.open_block(true);
        }
        // On an error the caller fails the block: an implicit one rolls back.
        let out = self.with_items(w, params, notices, sink)?;
        if implicit {
            self.end_block(true)?;
        }
        Ok(out)
    }

    fn with_items(
        &mut self,
        w: &WithStmt,
        params: &[Datum],
        notices: &mut Notices,
        sink: &mut dyn ResultSink,
    ) -> SqlResult<Output> {
        let mut b = self.binder();
        for item in &w.ctes {
            match item {
                WithItem::Query(c) => self.seed_query(&mut b, w.recursive, c)?,
                WithItem::Modify {
                    name,
                    columns,
                    stmt,
                } => {
                    let rewritten = crate::updatable::dml_on_view(self, stmt)?;
                    let stmt = rewritten.as_ref().unwrap_or(stmt);
                    let bound = self.bind(stmt, &mut b)?;
                    check_params(b.params.len(), params)?;
                    self.check_privileges(&bound)?;
                    let mut keep = Keep::default();
                    self.dispatch(bound, &mut b, params, notices, &mut keep)?;
                    b.ctes
                        .push(CteEntry::rows(name.clone(), columns, keep.returned())?);
                }
            }
        }
        let rewritten = crate::updatable::dml_on_view(self, &w.main)?;
        let main = rewritten.as_ref().unwrap_or(&w.main);
        let bound = self.bind(main, &mut b)?;
        check_params(b.params.len(), params)?;
        self.check_privileges(&bound)?;
        self.dispatch(bound, &mut b, params, notices, sink)
    }

    /// A query CTE bound into `b` (with rule 1), its reads checked (with rule 3).
    fn seed_query(
        &self,
        b: &mut Binder,
        recursive: bool,
        c: &sqlparser::ast::Cte,
    ) -> SqlResult<()> {
        let mut reads = Vec::new();
        let lookup = Lookup(self);
        let ctx = Scope {
            catalog: Some(&lookup),
            ..Scope::default()
        };
        b.push_cte(recursive, c, &ctx, &mut reads)?;
        self.check_reads(&reads)
    }

    /// SELECT on the columns `reads` names, for a role that is no superuser.
    fn check_reads(&self, reads: &[(String, Vec<usize>)]) -> SqlResult<()> {
        let w = self.who()?;
        if w.superuser {
            return Ok(());
        }
        for (t, cols) in reads {
            if crate::views::schema(t).is_some() {
                continue;
            }
            let r = self.relation_entry(t)?;
            crate::privileges::require(&w, &r, strata_engine::acl::Priv::SELECT, cols)?;
        }
        Ok(())
    }

    /// Binds a WITH statement without running it (with rule 5): the statement's
    /// own bound form, for describing.
    pub(super) fn bind_with<'s>(&self, w: &'s WithStmt, b: &mut Binder) -> SqlResult<Bound<'s>> {
        for item in &w.ctes {
            match item {
                WithItem::Query(c) => self.seed_query(b, w.recursive, c)?,
                WithItem::Modify {
                    name,
                    columns,
                    stmt,
                } => {
                    let cols = returning_columns(&self.bind(stmt, b)?);
                    let entry =
                        CteEntry::rows(name.clone(), columns, cols.map(|c| (c, Vec::new())))?;
                    b.ctes.push(entry);
                }
            }
        }
        let main: &'s Stmt = &w.main;
        self.bind(main, b)
    }
}
