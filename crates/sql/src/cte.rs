//! WITH: common table expressions, RECURSIVE ones included.
//!
//! Entry points: [`Binder::with_clause`] (a query's WITH, its CTEs made visible to
//! the query and everything nested in it), [`Binder::cte_rel`] (a FROM name that is
//! a CTE), [`Recursive`] (a recursive CTE as the planner takes it).
//!
//! Rules (cited as "cte rule N"):
//! 1. A CTE's name hides a table of that name within its query, the innermost WITH
//!    first; each CTE sees the ones before it in its WITH.
//! 2. A non-recursive CTE is read as a subquery at each reference (PostgreSQL 15
//!    inlines a CTE referenced once and not MATERIALIZED; a MATERIALIZED one is run
//!    once there, which gives the same rows for the queries Strata runs, which have
//!    no volatile functions with side effects).
//! 3. WITH RECURSIVE `t` AS (`init` UNION [ALL] `step`), where `step` reads `t`:
//!    `init`'s rows are the first working table; each round runs `step` over the
//!    last round's new rows (the work table), until a round gives none. UNION
//!    keeps only rows not seen before. The columns are `init`'s (their names from
//!    the CTE's column list); `step` is cast to their types. A CTE of a WITH
//!    RECURSIVE list whose `step` does not read it is a plain CTE (rule 2).
//! 4. A data-modifying CTE (INSERT, UPDATE, DELETE) is run by the session before
//!    its statement ([`crate::WithStmt`]); its RETURNING rows are the rows its
//!    name reads ([`CteEntry::rows`]). One without RETURNING read is 0A000.

use crate::analyze::{Query, Rel, SetTree};
use crate::bind::{Binder, Columns, Scope};
use crate::{ident_name, SqlError, SqlResult};
use sqlparser::ast;
use std::rc::Rc;

/// A CTE in scope.
#[derive(Clone, Debug)]
pub(crate) struct CteEntry {
    name: String,
    def: CteDef,
}

impl CteEntry {
    /// A data-modifying CTE's rows (cte rule 4): its RETURNING columns, renamed by
    /// the CTE's column list; None without RETURNING.
    pub(crate) fn rows(
        name: String,
        renames: &[String],
        returned: Option<(Columns, Vec<Vec<crate::Datum>>)>,
    ) -> SqlResult<CteEntry> {
        let Some((mut columns, rows)) = returned else {
            return Ok(CteEntry {
                name,
                def: CteDef::NoReturning,
            });
        };
        if renames.len() > columns.len() {
            return Err(SqlError::new(
                "42P10",
                format!(
                    "WITH query \"{name}\" has {} columns available but {} columns specified",
                    columns.len(),
                    renames.len()
                ),
            ));
        }
        for (c, n) in columns.iter_mut().zip(renames) {
            c.0 = n.clone();
        }
        let types = columns.iter().map(|c| c.1).collect();
        let rows = rows
            .into_iter()
            .map(|r| r.into_iter().map(crate::bind::Expr::Const).collect())
            .collect();
        let q = Query {
            body: SetTree::Values(rows, types),
            order: Vec::new(),
            limit: None,
            offset: None,
            columns,
            reads: Vec::new(),
        };
        Ok(CteEntry {
            name,
            def: CteDef::Query(Rc::new(q)),
        })
    }
}

#[derive(Clone, Debug)]
enum CteDef {
    Query(Rc<Query>),
    /// A data-modifying CTE without RETURNING (cte rule 4).
    NoReturning,
    /// A recursive CTE's own name while its recursive term is analyzed.
    Work {
        id: usize,
        cols: Columns,
        /// The subquery nesting at which the recursive term is analyzed.
        sub_depth: usize,
    },
    Recursive(Rc<Recursive>),
}

/// A recursive CTE (cte rule 3).
#[derive(Clone, Debug, PartialEq)]
pub struct Recursive {
    /// Names the work table its step reads.
    pub id: usize,
    pub init: Query,
    pub step: Query,
    /// UNION ALL (else UNION).
    pub all: bool,
    pub columns: Columns,
}

impl Binder {
    /// Makes a WITH clause's CTEs visible (cte rule 1); how many were pushed (the
    /// caller pops them when its query is done). Their reads go to `reads`.
    pub(crate) fn with_clause(
        &mut self,
        w: &ast::With,
        ctx: &Scope<'_>,
        reads: &mut Vec<(String, Vec<usize>)>,
    ) -> SqlResult<usize> {
        for (i, cte) in w.cte_tables.iter().enumerate() {
            let name = ident_name(&cte.alias.name);
            if w.cte_tables[..i]
                .iter()
                .any(|c| ident_name(&c.alias.name) == name)
            {
                return Err(SqlError::new(
                    "42712",
                    format!("WITH query name \"{name}\" specified more than once"),
                ));
            }
            self.push_cte(w.recursive, cte, ctx, reads)?;
        }
        Ok(w.cte_tables.len())
    }

    /// Makes one CTE visible to what is bound after it (cte rules 1-3).
    pub(crate) fn push_cte(
        &mut self,
        recursive: bool,
        cte: &ast::Cte,
        ctx: &Scope<'_>,
        reads: &mut Vec<(String, Vec<usize>)>,
    ) -> SqlResult<()> {
        if matches!(
            *cte.query.body,
            ast::SetExpr::Insert(_) | ast::SetExpr::Update(_) | ast::SetExpr::Delete(_)
        ) {
            // The statement's own WITH runs them (cte rule 4); any other cannot.
            return Err(SqlError::new(
                "0A000",
                "WITH clause containing a data-modifying statement must be at the top level",
            ));
        }
        let name = ident_name(&cte.alias.name);
        let def = match self.recursive_cte(recursive, cte, ctx, reads)? {
            Some(r) => CteDef::Recursive(Rc::new(r)),
            None => {
                let mut q = self.query_in_ctx(&cte.query, ctx)?;
                crate::analyze::rename_columns(&mut q.columns, &cte.alias)?;
                reads.extend(q.reads.iter().cloned());
                CteDef::Query(Rc::new(q))
            }
        };
        self.ctes.push(CteEntry { name, def });
        Ok(())
    }

    /// A recursive CTE, if `cte` is one: WITH RECURSIVE, a UNION whose right side
    /// reads the CTE's own name (cte rule 3).
    fn recursive_cte(
        &mut self,
        recursive: bool,
        cte: &ast::Cte,
        ctx: &Scope<'_>,
        reads: &mut Vec<(String, Vec<usize>)>,
    ) -> SqlResult<Option<Recursive>> {
        let ast::SetExpr::SetOperation {
            left,
            op: ast::SetOperator::Union,
            set_quantifier,
            right,
        } = &*cte.query.body
        else {
            return Ok(None);
        };
        if !recursive {
            return Ok(None);
        }
        for (present, what) in [
            (cte.query.order_by.is_some(), "ORDER BY"),
            (cte.query.limit_clause.is_some(), "LIMIT/OFFSET"),
            (!cte.query.locks.is_empty(), "FOR UPDATE/SHARE"),
        ] {
            if present {
                return Err(SqlError::new(
                    "0A000",
                    format!("{what} in a recursive query is not implemented"),
                ));
            }
        }
        let name = ident_name(&cte.alias.name);
        let (init, mut cols) = self.set_tree_in(left, ctx, reads)?;
        crate::analyze::rename_columns(&mut cols, &cte.alias)?;
        let id = self.next_cte_id;
        self.next_cte_id += 1;
        let used_before = std::mem::replace(&mut self.work_used, false);
        self.ctes.push(CteEntry {
            name,
            def: CteDef::Work {
                id,
                cols: cols.clone(),
                sub_depth: self.sub_depth,
            },
        });
        let step = self.set_tree_in(right, ctx, reads);
        self.ctes.pop();
        let used = std::mem::replace(&mut self.work_used, used_before);
        let (step, step_cols) = step?;
        if used {
            well_formed(&step, &ident_name(&cte.alias.name))?;
        }
        if step_cols.len() != cols.len() {
            return Err(SqlError::syntax(
                "each UNION query must have the same number of columns",
            ));
        }
        let all = matches!(set_quantifier, ast::SetQuantifier::All);
        let query = |body: SetTree, columns: &Columns| Query {
            body,
            order: Vec::new(),
            limit: None,
            offset: None,
            columns: columns.clone(),
            reads: Vec::new(),
        };
        if !used {
            // Not recursive after all: a plain CTE in a WITH RECURSIVE list, as in
            // PostgreSQL (analyzed again as one).
            return Ok(None);
        }
        Ok(Some(Recursive {
            id,
            init: query(init, &cols),
            step: query(step, &step_cols),
            all,
            columns: cols,
        }))
    }

    /// The rel and columns of a FROM name that is a CTE in scope (cte rule 1).
    pub(crate) fn cte_rel(&mut self, name: &str) -> Option<SqlResult<(Rel, Columns)>> {
        let e = self.ctes.iter().rev().find(|e| e.name == name)?.clone();
        Some(Ok(match e.def {
            CteDef::NoReturning => {
                return Some(Err(SqlError::new(
                    "0A000",
                    format!("WITH query \"{name}\" does not have a RETURNING clause"),
                )))
            }
            CteDef::Query(q) => {
                let cols = q.columns.clone();
                (Rel::Subquery(Box::new((*q).clone())), cols)
            }
            CteDef::Work {
                id,
                cols,
                sub_depth,
            } => {
                if self.sub_depth > sub_depth {
                    return Some(Err(recursion_error(&format!(
                        "recursive reference to query \"{name}\" must not appear within a subquery"
                    ))));
                }
                self.work_used = true;
                (
                    Rel::WorkTable {
                        id,
                        width: cols.len(),
                    },
                    cols,
                )
            }
            CteDef::Recursive(r) => {
                let cols = r.columns.clone();
                (Rel::Recursive(Box::new((*r).clone())), cols)
            }
        }))
    }
}

fn recursion_error(msg: &str) -> SqlError {
    SqlError::new("42P19", msg.to_string())
}

/// PostgreSQL's checks of a recursive term (42P19): no aggregate, and the work
/// table not on the nullable side of an outer join.
fn well_formed(step: &SetTree, name: &str) -> SqlResult<()> {
    let SetTree::Select(s) = step else {
        return Ok(());
    };
    if s.grouping.as_ref().is_some_and(|g| !g.aggs.is_empty()) {
        return Err(recursion_error(
            "aggregate functions are not allowed in a recursive query's recursive term",
        ));
    }
    let mut stack = vec![(&s.from, false)];
    while let Some((rel, nullable)) = stack.pop() {
        match rel {
            Rel::WorkTable { .. } if nullable => {
                return Err(recursion_error(&format!(
                    "recursive reference to query \"{name}\" must not appear within an outer join"
                )))
            }
            Rel::Join(j) => {
                use crate::analyze::JoinKind as K;
                let (l, r) = match j.kind {
                    K::Inner => (false, false),
                    K::Left | K::Semi | K::Anti => (false, true),
                    K::Right => (true, false),
                    K::Full => (true, true),
                };
                stack.push((&j.left, nullable || l));
                stack.push((&j.right, nullable || r));
            }
            _ => {}
        }
    }
    Ok(())
}
