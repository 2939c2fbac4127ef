//! WITH: common table expressions, RECURSIVE ones included.
//!
//! Entry points: [`Binder::with_clause`] (a query's WITH, its CTEs made visible to
//! the query and everything nested in it), [`Binder::cte_rel`] (a FROM name that is
//! a CTE), [`Recursive`] (a recursive CTE as the planner takes it).
//!
//! Rules (cited as "cte rule N"):
//! 1. A CTE's name hides a table of that name within its query, the innermost WITH
//!    first; each CTE sees the ones before it in its WITH (in a WITH RECURSIVE,
//!    every one: rule 3).
//! 2. A non-recursive CTE is run once for all its references ([`CteShare`], a CTE
//!    Scan of rows held within `work_mem`) when it is MATERIALIZED, when it calls a
//!    volatile function, or when it is referenced more than once and not NOT
//!    MATERIALIZED; else it is read as a subquery at its reference — PostgreSQL
//!    15's choice. One that reads its enclosing query's row, or one inside a
//!    recursive term (it may read the work table), is always read in place: it
//!    has other rows for each outer row or round.
//! 3. WITH RECURSIVE `t` AS (`init` UNION [ALL] `step`), where `t`'s query
//!    references `t` (which CTEs are recursive, the order a WITH RECURSIVE list is
//!    analyzed in, and the checks of a recursive CTE's form and of where the
//!    reference may appear are [`crate::recursion`]'s, before analysis):
//!    `init`'s rows are the first working table; each round runs `step` over the
//!    last round's new rows (the work table), until a round gives none. UNION
//!    keeps only rows not seen before. The columns are `init`'s (their names from
//!    the CTE's column list); a column whose UNION type is not its `init` type is
//!    42804 (at `init`'s expression for it); else `step` is cast to their types
//!    (an untyped NULL or literal of `step` too). A WITH on `t`'s own
//!    query is visible to both terms. A CTE of a WITH RECURSIVE list that does not
//!    reference itself is a plain CTE (rule 2), and may read any CTE of the list.
//!    After analysis, a `step` that is a SELECT with an aggregate is 42P19, at the
//!    first aggregate call of its list or HAVING.
//! 4. A data-modifying CTE (INSERT, UPDATE, DELETE) is run by the session before
//!    its statement ([`crate::WithStmt`]); its RETURNING rows are the rows its
//!    name reads ([`CteEntry::rows`]). One without RETURNING read is 0A000; one in
//!    a WITH that is not the statement's own is 0A000, as in PostgreSQL.

use crate::analyze::{Query, Rel, SetTree};
use crate::bind::{Binder, Columns, Scope};
use crate::{ident_name, SqlError, SqlResult, SqlType};
use sqlparser::ast::{self, Spanned, Visit, Visitor};
use sqlparser::tokenizer::Span;
use std::ops::ControlFlow;
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
            def: CteDef::Query(Rc::new(q), None),
        })
    }
}

/// A WITH query shared by its references (cte rule 2).
#[derive(Debug)]
pub struct CteShare {
    /// Unique in the process: the executor keeps its rows by it.
    pub id: usize,
    pub name: String,
    /// MATERIALIZED, or volatile: run once whatever the references.
    forced: bool,
    /// NOT MATERIALIZED (and not volatile), or reading the enclosing row.
    never: bool,
    refs: std::sync::atomic::AtomicUsize,
}

impl PartialEq for CteShare {
    fn eq(&self, o: &CteShare) -> bool {
        let refs = |s: &CteShare| s.refs.load(std::sync::atomic::Ordering::Relaxed);
        (self.id, &self.name, self.forced, self.never, refs(self))
            == (o.id, &o.name, o.forced, o.never, refs(o))
    }
}

impl CteShare {
    /// Whether its references read rows it gave once (else it is read in place).
    /// Final once the statement is analyzed, when it is planned.
    pub fn materialized(&self) -> bool {
        self.forced || (!self.never && self.refs.load(std::sync::atomic::Ordering::Relaxed) > 1)
    }
}

/// The query a reference to a CTE read in place stands for (itself otherwise):
/// the planner pushes filters into it and prunes its outputs as any subquery's.
pub(crate) fn inlined(q: &Query) -> &Query {
    match &q.body {
        SetTree::Cte(share, inner, _) if !share.materialized() => inlined(inner),
        _ => q,
    }
}

/// Process-wide ids of shared CTEs (views are analyzed by binders of their own).
static NEXT_SHARE: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(1);

/// `q`'s sharing (cte rule 2), as `cte` asks for it; `in_step`: inside a
/// recursive term.
fn share_of(cte: &ast::Cte, q: &Query, in_step: bool) -> CteShare {
    let any = |f: &dyn Fn(&crate::bind::Expr) -> bool| {
        let mut queries = vec![q];
        while let Some(q) = queries.pop() {
            let mut exprs = Vec::new();
            crate::analyze::query_exprs(q, &mut exprs, &mut |sub| queries.push(sub));
            while let Some(e) = exprs.pop() {
                if f(e) {
                    return true;
                }
                if let crate::bind::Expr::SubLink(l) = e {
                    queries.push(&l.query);
                }
                e.children(&mut exprs);
            }
        }
        false
    };
    let volatile = any(&crate::planner::volatile_call);
    let outer = in_step || any(&|e| matches!(e, crate::bind::Expr::Outer(..)));
    let said = cte.materialized.as_ref();
    CteShare {
        id: NEXT_SHARE.fetch_add(1, std::sync::atomic::Ordering::Relaxed),
        name: ident_name(&cte.alias.name),
        forced: !outer && (volatile || matches!(said, Some(ast::CteAsMaterialized::Materialized))),
        never: outer || matches!(said, Some(ast::CteAsMaterialized::NotMaterialized)),
        refs: std::sync::atomic::AtomicUsize::new(0),
    }
}

#[derive(Clone, Debug)]
enum CteDef {
    /// A query, shared by its references unless it holds a data-modifying CTE's
    /// rows (None).
    Query(Rc<Query>, Option<std::sync::Arc<CteShare>>),
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
    /// caller pops them when its query is done). Their reads go to `reads`. A WITH
    /// RECURSIVE list is analyzed in the order its references give (cte rule 3).
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
                )
                .at(cte.alias.name.span));
            }
        }
        let order = match w.recursive {
            true => crate::recursion::order(w)?,
            false => (0..w.cte_tables.len()).map(|i| (i, false)).collect(),
        };
        for (i, recursive) in order {
            self.push_one(&w.cte_tables[i], recursive, ctx, reads)?;
        }
        Ok(w.cte_tables.len())
    }

    /// Makes one CTE of a WITH (RECURSIVE if `recursive_list`) visible to what is
    /// bound after it, on its own (a statement's WITH bound item by item).
    pub(crate) fn push_cte(
        &mut self,
        recursive_list: bool,
        cte: &ast::Cte,
        ctx: &Scope<'_>,
        reads: &mut Vec<(String, Vec<usize>)>,
    ) -> SqlResult<()> {
        let recursive = recursive_list && {
            let w = ast::With {
                with_token: ast::helpers::attached_token::AttachedToken::empty(),
                recursive: true,
                cte_tables: vec![cte.clone()],
            };
            crate::recursion::order(&w)?
                .first()
                .is_some_and(|(_, r)| *r)
        };
        self.push_one(cte, recursive, ctx, reads)
    }

    /// Makes one CTE visible (cte rules 1-4); `recursive`: it references itself.
    fn push_one(
        &mut self,
        cte: &ast::Cte,
        recursive: bool,
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
        let def = match recursive {
            true => CteDef::Recursive(Rc::new(self.recursive_cte(cte, ctx, reads)?)),
            false => {
                let mut q = self.query_in_ctx(&cte.query, ctx)?;
                rename_cte_columns(&mut q.columns, cte)?;
                reads.extend(q.reads.iter().cloned());
                let in_step = self
                    .ctes
                    .iter()
                    .any(|e| matches!(e.def, CteDef::Work { .. }));
                let share = share_of(cte, &q, in_step);
                CteDef::Query(Rc::new(q), Some(std::sync::Arc::new(share)))
            }
        };
        let name = ident_name(&cte.alias.name);
        self.ctes.push(CteEntry { name, def });
        Ok(())
    }

    /// A recursive CTE (cte rule 3), its form checked already (recursion rules
    /// 3-4): its query's own WITH is visible to both terms.
    fn recursive_cte(
        &mut self,
        cte: &ast::Cte,
        ctx: &Scope<'_>,
        reads: &mut Vec<(String, Vec<usize>)>,
    ) -> SqlResult<Recursive> {
        let keep = self.ctes.len();
        let layers = crate::recursion::layers(&cte.query);
        let r = match layers.iter().find_map(|q| q.with.as_ref()) {
            Some(w) => self
                .with_clause(w, ctx, reads)
                .and_then(|_| self.recursive_terms(cte, ctx, reads)),
            None => self.recursive_terms(cte, ctx, reads),
        };
        self.ctes.truncate(keep);
        r
    }

    /// A recursive CTE's `init` and `step` (cte rule 3).
    fn recursive_terms(
        &mut self,
        cte: &ast::Cte,
        ctx: &Scope<'_>,
        reads: &mut Vec<(String, Vec<usize>)>,
    ) -> SqlResult<Recursive> {
        let layers = crate::recursion::layers(&cte.query);
        let ast::SetExpr::SetOperation {
            left,
            set_quantifier,
            right,
            ..
        } = &*layers[layers.len() - 1].body
        else {
            unreachable!("a UNION (recursion rule 3)");
        };
        let (init, mut cols) = self.set_tree_in(left, ctx, reads)?;
        rename_cte_columns(&mut cols, cte)?;
        let id = self.next_cte_id;
        self.next_cte_id += 1;
        self.ctes.push(CteEntry {
            name: ident_name(&cte.alias.name),
            def: CteDef::Work {
                id,
                cols: cols.clone(),
                sub_depth: self.sub_depth,
            },
        });
        let step = self.set_tree_in(right, ctx, reads);
        self.ctes.pop();
        let (step, step_cols) = step?;
        well_formed(&step, right)?;
        if step_cols.len() != cols.len() {
            return Err(SqlError::syntax(
                "each UNION query must have the same number of columns",
            ));
        }
        column_types(cte, left, &cols, &step_cols)?;
        let query = |body: SetTree, columns: &Columns| Query {
            body,
            order: Vec::new(),
            limit: None,
            offset: None,
            columns: columns.clone(),
            reads: Vec::new(),
        };
        Ok(Recursive {
            id,
            init: query(init, &cols),
            step: query(step, &step_cols),
            all: matches!(set_quantifier, ast::SetQuantifier::All),
            columns: cols,
        })
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
            CteDef::Query(q, None) => {
                let cols = q.columns.clone();
                (Rel::Subquery(Box::new((*q).clone())), cols)
            }
            CteDef::Query(q, Some(share)) => {
                share
                    .refs
                    .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                let cols = q.columns.clone();
                let reference = Query {
                    body: SetTree::Cte(share.clone(), Box::new((*q).clone()), share.name.clone()),
                    order: Vec::new(),
                    limit: None,
                    offset: None,
                    columns: cols.clone(),
                    reads: q.reads.clone(),
                };
                (Rel::Subquery(Box::new(reference)), cols)
            }
            CteDef::Work {
                id,
                cols,
                sub_depth,
            } => {
                if self.sub_depth > sub_depth {
                    return Some(Err(recursion_error(format!(
                        "recursive reference to query \"{name}\" must not appear within a subquery"
                    ))));
                }
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

/// A CTE's columns renamed by its column list: too many names is 42P10 "WITH
/// query ..." at its name, as PostgreSQL says it.
fn rename_cte_columns(cols: &mut Columns, cte: &ast::Cte) -> SqlResult<()> {
    crate::analyze::rename_columns(cols, &cte.alias).map_err(|mut e| {
        if let Some(rest) = e.message.strip_prefix("table ") {
            e.message = format!("WITH query {rest}");
        }
        e.at(cte.alias.name.span)
    })
}

fn recursion_error(msg: impl Into<String>) -> SqlError {
    SqlError::new("42P19", msg)
}

/// Each column's UNION type must be its `init` type (42804 at `init`'s
/// expression for it: cte rule 3).
fn column_types(
    cte: &ast::Cte,
    init: &ast::SetExpr,
    cols: &Columns,
    step_cols: &Columns,
) -> SqlResult<()> {
    for (i, ((_, it), (_, st))) in cols.iter().zip(step_cols).enumerate() {
        // A step column whose type does not match (an untyped NULL or literal
        // Strata has typed as text) is cast to the init type, as before.
        let Ok(overall) = crate::conditional::common_type(&[*it, *st], "UNION") else {
            continue;
        };
        if *it == SqlType::Unknown || overall == SqlType::Unknown || overall == *it {
            continue;
        }
        let e = SqlError::new(
            "42804",
            format!(
                "recursive query \"{}\" column {} has type {} in non-recursive term but type {} overall",
                ident_name(&cte.alias.name),
                i + 1,
                it.name(),
                overall.name()
            ),
        )
        .with_hint("Cast the output of the non-recursive term to the correct type.");
        return Err(match first_leaf_target(init, i) {
            Some(span) => e.at(span),
            None => e,
        });
    }
    Ok(())
}

/// The span of column `i`'s expression in the leftmost SELECT of a set tree
/// (None for VALUES, as PostgreSQL gives no position there).
fn first_leaf_target(s: &ast::SetExpr, i: usize) -> Option<Span> {
    match s {
        ast::SetExpr::Select(sel) => match sel.projection.get(i)? {
            ast::SelectItem::UnnamedExpr(e) | ast::SelectItem::ExprWithAlias { expr: e, .. } => {
                Some(e.span())
            }
            _ => None,
        },
        ast::SetExpr::Query(q) => first_leaf_target(&q.body, i),
        ast::SetExpr::SetOperation { left, .. } => first_leaf_target(left, i),
        _ => None,
    }
}

/// PostgreSQL's check of a recursive term after analysis: no aggregate (42P19,
/// at the first aggregate call of its text; the reference's place is checked
/// before analysis: recursion rule 3).
fn well_formed(step: &SetTree, text: &ast::SetExpr) -> SqlResult<()> {
    let SetTree::Select(s) = step else {
        return Ok(());
    };
    if s.grouping.as_ref().is_some_and(|g| !g.aggs.is_empty()) {
        let e = recursion_error(
            "aggregate functions are not allowed in a recursive query's recursive term",
        );
        return Err(match first_aggregate(text) {
            Some(span) => e.at(span),
            None => e,
        });
    }
    Ok(())
}

/// The span of the first aggregate call in a SELECT's list or HAVING, outside
/// subqueries.
fn first_aggregate(text: &ast::SetExpr) -> Option<Span> {
    let ast::SetExpr::Select(s) = text else {
        return None;
    };
    let mut finder = AggFinder::default();
    let _ = s.projection.visit(&mut finder);
    let _ = s.having.visit(&mut finder);
    finder.found
}

/// A visitor finding the first aggregate call outside subqueries.
#[derive(Default)]
struct AggFinder {
    depth: usize,
    found: Option<Span>,
}

impl Visitor for AggFinder {
    type Break = ();

    fn pre_visit_query(&mut self, _q: &ast::Query) -> ControlFlow<()> {
        self.depth += 1;
        ControlFlow::Continue(())
    }

    fn post_visit_query(&mut self, _q: &ast::Query) -> ControlFlow<()> {
        self.depth -= 1;
        ControlFlow::Continue(())
    }

    fn pre_visit_expr(&mut self, e: &ast::Expr) -> ControlFlow<()> {
        let ast::Expr::Function(f) = e else {
            return ControlFlow::Continue(());
        };
        let star = matches!(&f.args, ast::FunctionArguments::List(l)
            if l.args.iter().any(|a| matches!(a, ast::FunctionArg::Unnamed(ast::FunctionArgExpr::Wildcard))));
        let name = crate::object_name(&f.name).unwrap_or_default();
        let is_agg =
            crate::aggregate::agg_func(&name, star).is_some() || !f.within_group.is_empty();
        if self.depth == 0 && f.over.is_none() && is_agg && self.found.is_none() {
            self.found = Some(e.span());
            return ControlFlow::Break(());
        }
        ControlFlow::Continue(())
    }
}
