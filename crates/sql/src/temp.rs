//! Temporary tables as a session sees them: CREATE TEMP TABLE's names, what each
//! commit does to them (ON COMMIT), and their end with the session.
//!
//! The engine keeps a temporary table under its session's stored name, without a
//! `pg_class` row, WAL or fsync (`strata_engine::temp`, smgr rule 8). The SQL layer
//! names one `pg_temp.name` when it creates it; every other statement names it as
//! the user wrote it and the engine's lookup finds the session's own first.
//!
//! Rules (cited as "temp rule N" in this crate):
//! 1. The session serves its statements inside `strata_engine::temp::enter` (its
//!    id), so that lookups see its temporary tables and no other session's.
//! 2. Before every commit of a writing transaction, ON COMMIT DELETE ROWS tables are
//!    truncated and ON COMMIT DROP tables dropped, in that transaction (PostgreSQL's
//!    PreCommit_on_commit_actions).
//! 3. When the session ends, its temporary tables and views are dropped in one
//!    transaction, each with the views that read it (CASCADE, as ON COMMIT DROP);
//!    a crash loses them with the files the storage manager removes at start-up.
//!    The session's list costs O(its temporary tables), never a catalog pass.

use crate::{SqlError, SqlResult};
use sqlparser::ast;
use strata_engine::{EngineError, Txn};

/// ON COMMIT of CREATE TEMP TABLE.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum OnCommit {
    PreserveRows,
    DeleteRows,
    Drop,
}

impl From<ast::OnCommit> for OnCommit {
    fn from(o: ast::OnCommit) -> OnCommit {
        match o {
            ast::OnCommit::PreserveRows => OnCommit::PreserveRows,
            ast::OnCommit::DeleteRows => OnCommit::DeleteRows,
            ast::OnCommit::Drop => OnCommit::Drop,
        }
    }
}

/// The name CREATE gives the engine: `pg_temp.name` for a temporary table (TEMP,
/// or a name qualified with `pg_temp`), else the name; and ON COMMIT, which only a
/// temporary table may have (42P16, PostgreSQL's text).
pub(crate) fn create_name(
    name: String,
    temporary: bool,
    on_commit: Option<ast::OnCommit>,
) -> SqlResult<(String, Option<OnCommit>)> {
    let name = match temporary && !is_temp(&name) {
        true => format!("pg_temp.{name}"),
        false => name,
    };
    if on_commit.is_some() && !is_temp(&name) {
        return Err(SqlError::new(
            "42P16",
            "ON COMMIT can only be used on temporary tables",
        ));
    }
    Ok((name, on_commit.map(OnCommit::from)))
}

/// Whether a name the SQL layer holds names a temporary relation to create.
pub(crate) fn is_temp(name: &str) -> bool {
    name.starts_with("pg_temp.")
}

/// A relation's name as messages show it (`pg_temp.t` as `t`).
pub(crate) fn shown(name: &str) -> &str {
    name.strip_prefix("pg_temp.").unwrap_or(name)
}

/// One temporary table of the session.
#[derive(Clone, Debug)]
pub(crate) struct TempRel {
    /// Its name (bare: the engine's lookup finds the session's own first).
    pub name: String,
    pub on_commit: OnCommit,
}

/// The session's temporary tables (rule 3).
#[derive(Default)]
pub(crate) struct Temps {
    rels: Vec<TempRel>,
}

impl Temps {
    /// Notes a temporary table just created (by `pg_temp.name`).
    pub fn created(&mut self, name: &str, on_commit: Option<OnCommit>) {
        let name = format!("pg_temp.{}", shown(name));
        self.rels.retain(|r| r.name != name);
        self.rels.push(TempRel {
            name,
            on_commit: on_commit.unwrap_or(OnCommit::PreserveRows),
        });
    }

    /// Notes a rename of a temporary table.
    pub fn renamed(&mut self, from: &str, to: &str) {
        let from = format!("pg_temp.{}", shown(from));
        if let Some(r) = self.rels.iter_mut().find(|r| r.name == from) {
            r.name = format!("pg_temp.{to}");
        }
    }

    /// Rule 2: ON COMMIT actions, in `t` before it commits.
    pub fn before_commit(&self, t: &mut Txn<'_>, db: &str) -> SqlResult<()> {
        for r in &self.rels {
            let done = match r.on_commit {
                OnCommit::PreserveRows => continue,
                OnCommit::DeleteRows => t.truncate_table(db, &r.name),
                OnCommit::Drop => {
                    drop_cascading(t, db, &r.name)?;
                    continue;
                }
            };
            gone_is_fine(done)?;
        }
        Ok(())
    }

    /// After a commit or rollback: ON COMMIT DROP tables are gone either way.
    pub fn after_end(&mut self) {
        self.rels.retain(|r| r.on_commit != OnCommit::Drop);
    }

    /// Rule 3: drops every temporary table and view left, in `t`.
    pub fn drop_all(&mut self, t: &mut Txn<'_>, db: &str) -> SqlResult<()> {
        for r in std::mem::take(&mut self.rels) {
            drop_cascading(t, db, &r.name)?;
        }
        Ok(())
    }

    pub fn is_empty(&self) -> bool {
        self.rels.is_empty()
    }
}

/// Drops temporary table or view `name` and the views that read it, as
/// PostgreSQL's ON COMMIT DROP and session end do (CASCADE); one dropped meanwhile
/// is fine.
fn drop_cascading(t: &mut Txn<'_>, db: &str, name: &str) -> SqlResult<()> {
    let dbe = t.database(db)?;
    let Ok(rel) = t.relation(&dbe, name) else {
        return Ok(());
    };
    let kind = if rel.view.is_some() { "view" } else { "table" };
    crate::rewrite::drop_dependents(t, db, (name, kind), true)?;
    match kind {
        "view" => gone_is_fine(t.drop_view(db, name)),
        _ => gone_is_fine(t.drop_table(db, name)),
    }
}

/// A temporary table dropped meanwhile (DROP TABLE, a rolled-back CREATE) is fine.
fn gone_is_fine(r: Result<(), EngineError>) -> SqlResult<()> {
    match r {
        Err(EngineError::UndefinedTable(_)) => Ok(()),
        r => Ok(r?),
    }
}
