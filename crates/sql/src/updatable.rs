//! Simple views that INSERT, UPDATE and DELETE write through (issue 28 item 8), as
//! PostgreSQL's automatically updatable views: the statement is rewritten into the
//! same statement on the relation the view reads, before it is bound.
//!
//! Rules (cited as "updatable rule N"):
//! 1. A view is automatically updatable when its query reads exactly one table or
//!    updatable view and has no WITH, DISTINCT, GROUP BY, HAVING, LIMIT / OFFSET,
//!    set operation, or aggregate or window function in its select list
//!    (PostgreSQL's list: 55000 with its DETAIL and HINT otherwise).
//! 2. INSERT's and UPDATE's columns become the base columns the view's columns
//!    are; a view column that is an expression takes no value (0A000, PostgreSQL's
//!    words); columns left out take the base's defaults. UPDATE's and DELETE's
//!    WHERE gain the view's WHERE, so rows the view does not show are not touched.
//!    A view column named in the statement's expressions reads the view's
//!    expression for it. Repeated through views of views.
//! 3. Subqueries in the statement's expressions and ON CONFLICT are 0A000 on a view
//!    (the rewrite would change what a subquery's names reach).
//! 4. Privileges: the role needs the privilege on the view; the rewritten statement
//!    is then checked as any other, so it needs it on the table too — stricter than
//!    PostgreSQL, where the view owner's privileges on the table suffice.
//! 5. RETURNING gives the view's columns, by their names.

use crate::rewrite::MAX_VIEW_DEPTH;
use crate::session::Session;
use crate::{ident_name, InsertSource, Returning, SqlError, SqlResult, Stmt};
use sqlparser::ast;
use std::ops::ControlFlow;
use strata_engine::RelEntry;

/// A view's query as its writes need it (rule 1).
struct Simple {
    view: String,
    base: String,
    /// The view's columns: name, expression over the base, base column if it is one.
    cols: Vec<(String, ast::Expr, Option<String>)>,
    filter: Option<ast::Expr>,
    /// The base's column names, in order.
    base_order: Vec<String>,
}

/// `stmt` rewritten onto the tables its target view reads (rule 2), None if its
/// target is no view.
pub(crate) fn dml_on_view(s: &Session<'_>, stmt: &Stmt) -> SqlResult<Option<Stmt>> {
    let mut cur: Option<Stmt> = None;
    for _ in 0..MAX_VIEW_DEPTH {
        let st = cur.as_ref().unwrap_or(stmt);
        let (table, verb, need) = match st {
            Stmt::Insert { table, .. } => (table, "insert into", strata_engine::acl::Priv::INSERT),
            Stmt::Update { table, .. } => (table, "update", strata_engine::acl::Priv::UPDATE),
            Stmt::Delete { table, .. } => (table, "delete from", strata_engine::acl::Priv::DELETE),
            _ => return Ok(None),
        };
        let Some(rel) = s.relation_arc(table).filter(|r| r.view.is_some()) else {
            return Ok(cur);
        };
        let w = s.who()?;
        crate::privileges::require(&w, &rel, need, &[])?;
        let v = simple(s, &rel, verb)?;
        cur = Some(v.rewrite(st.clone())?);
    }
    Err(SqlError::new(
        "54001",
        format!("views nest more than {MAX_VIEW_DEPTH} deep"),
    ))
}

/// 55000: view `name` is not automatically updatable, for `why`.
fn not_updatable(verb: &str, name: &str, why: &str) -> SqlError {
    let (ing, kw) = match verb {
        "insert into" => ("inserting into", "INSERT"),
        "update" => ("updating", "UPDATE"),
        _ => ("deleting from", "DELETE"),
    };
    SqlError::new("55000", format!("cannot {verb} view \"{name}\""))
        .with_detail(why)
        .with_hint(format!(
            "To enable {ing} the view, provide an INSTEAD OF {kw} trigger or an unconditional ON {kw} DO INSTEAD rule."
        ))
}

/// Rule 1: view `rel`'s query as a [`Simple`] view, or 55000.
fn simple(s: &Session<'_>, rel: &RelEntry, verb: &str) -> SqlResult<Simple> {
    let name = strata_engine::temp::bare(&rel.name).to_string();
    let def = rel.view.as_ref().expect("a view");
    let q = match crate::parse(&def.query)?.pop() {
        Some(Stmt::Select(q)) => q,
        _ => {
            return Err(SqlError::new(
                "XX000",
                format!("view \"{name}\" does not parse"),
            ))
        }
    };
    let no = |why: &str| Err(not_updatable(verb, &name, why));
    if q.with.is_some() {
        return no("Views containing WITH are not automatically updatable.");
    }
    if q.limit_clause.is_some() || q.fetch.is_some() {
        return no("Views containing LIMIT or OFFSET are not automatically updatable.");
    }
    let ast::SetExpr::Select(sel) = &*q.body else {
        return no("Views containing UNION, INTERSECT, or EXCEPT are not automatically updatable.");
    };
    if sel.distinct.is_some() {
        return no("Views containing DISTINCT are not automatically updatable.");
    }
    let grouped = !matches!(&sel.group_by, ast::GroupByExpr::Expressions(v, _) if v.is_empty());
    if grouped || sel.having.is_some() {
        return no("Views containing GROUP BY are not automatically updatable.");
    }
    let one_table = match sel.from.as_slice() {
        [twj] if twj.joins.is_empty() => match &twj.relation {
            ast::TableFactor::Table {
                name,
                alias,
                args: None,
                ..
            } => Some((
                crate::object_name(name)?,
                alias.as_ref().map(|a| ident_name(&a.name)),
            )),
            _ => None,
        },
        _ => None,
    };
    let Some((base, alias)) = one_table else {
        return no(
            "Views that do not select from a single table or view are not automatically updatable.",
        );
    };
    let base_rel = s
        .relation_arc(&base)
        .ok_or_else(|| SqlError::new("42P01", format!("relation \"{base}\" does not exist")))?;
    let qual = alias.unwrap_or_else(|| base.clone());
    let mut exprs = Vec::new();
    for item in &sel.projection {
        match item {
            ast::SelectItem::Wildcard(_) | ast::SelectItem::QualifiedWildcard(..) => {
                for c in &base_rel.columns {
                    exprs.push(ast::Expr::Identifier(ast::Ident::new(c.name.clone())));
                }
            }
            ast::SelectItem::UnnamedExpr(e) | ast::SelectItem::ExprWithAlias { expr: e, .. } => {
                if has_aggregate(e) {
                    return no(
                        "Views that return aggregate functions are not automatically updatable.",
                    );
                }
                exprs.push(unqualified(e.clone(), &qual));
            }
            other => return Err(SqlError::unsupported(format!("the view item {other}"))),
        }
    }
    let cols = rel
        .columns
        .iter()
        .zip(exprs)
        .map(|(c, e)| {
            let base_col = match &e {
                ast::Expr::Identifier(i) => {
                    let n = ident_name(i);
                    base_rel.columns.iter().any(|b| b.name == n).then_some(n)
                }
                _ => None,
            };
            (c.name.clone(), e, base_col)
        })
        .collect();
    Ok(Simple {
        view: name,
        base,
        cols,
        filter: sel.selection.clone().map(|f| unqualified(f, &qual)),
        base_order: base_rel.columns.iter().map(|c| c.name.clone()).collect(),
    })
}

/// Whether `e` calls an aggregate or window function.
fn has_aggregate(e: &ast::Expr) -> bool {
    let mut e = e.clone();
    let r = ast::visit_expressions_mut(&mut e, |x| match x {
        ast::Expr::Function(f)
            if f.over.is_some()
                || crate::object_name(&f.name)
                    .is_ok_and(|n| crate::aggregate::agg_func(&n, false).is_some()) =>
        {
            ControlFlow::Break(())
        }
        _ => ControlFlow::Continue(()),
    });
    r.is_break()
}

/// `e` with `qual.col` written as `col` (the view reads one relation).
fn unqualified(mut e: ast::Expr, qual: &str) -> ast::Expr {
    let _ = ast::visit_expressions_mut(&mut e, |x| {
        if let ast::Expr::CompoundIdentifier(parts) = x {
            if parts.len() == 2 && ident_name(&parts[0]) == qual {
                *x = ast::Expr::Identifier(parts[1].clone());
            }
        }
        ControlFlow::<()>::Continue(())
    });
    e
}

impl Simple {
    fn col(&self, name: &str) -> Option<&(String, ast::Expr, Option<String>)> {
        self.cols.iter().find(|(n, _, _)| n == name)
    }

    /// Rule 2: a view column named in `e` reads its expression (rule 3: no
    /// subqueries).
    fn expr(&self, mut e: ast::Expr) -> SqlResult<ast::Expr> {
        let r = ast::visit_expressions_mut(&mut e, |x| {
            let name = match x {
                ast::Expr::Subquery(_)
                | ast::Expr::Exists { .. }
                | ast::Expr::InSubquery { .. } => {
                    return ControlFlow::Break(());
                }
                ast::Expr::Identifier(i) => ident_name(i),
                ast::Expr::CompoundIdentifier(p)
                    if p.len() == 2 && ident_name(&p[0]) == self.view =>
                {
                    ident_name(&p[1])
                }
                _ => return ControlFlow::Continue(()),
            };
            if let Some((_, v, _)) = self.col(&name) {
                *x = ast::Expr::Nested(Box::new(v.clone()));
            }
            ControlFlow::Continue(())
        });
        if r.is_break() {
            return Err(SqlError::unsupported(format!(
                "a subquery in a statement on view \"{}\"",
                self.view
            )));
        }
        Ok(e)
    }

    /// The base column view column `name` is, for `verb` (0A000 for an expression).
    fn target(&self, name: &str, verb: &str) -> SqlResult<String> {
        match self.col(name) {
            Some((_, _, Some(b))) => Ok(b.clone()),
            Some(_) => Err(SqlError::new(
                "0A000",
                format!("cannot {verb} column \"{name}\" of view \"{}\"", self.view),
            )
            .with_detail(
                "View columns that are not columns of their base relation are not updatable.",
            )),
            None => Err(SqlError::new(
                "42703",
                format!(
                    "column \"{name}\" of relation \"{}\" does not exist",
                    self.view
                ),
            )),
        }
    }

    /// The statement's WHERE and the view's, both.
    fn filter(&self, selection: Option<ast::Expr>) -> SqlResult<Option<ast::Expr>> {
        let user = selection.map(|e| self.expr(e)).transpose()?;
        Ok(match (self.filter.clone(), user) {
            (Some(v), Some(u)) => Some(ast::Expr::BinaryOp {
                left: Box::new(ast::Expr::Nested(Box::new(v))),
                op: ast::BinaryOperator::And,
                right: Box::new(ast::Expr::Nested(Box::new(u))),
            }),
            (v, u) => v.or(u),
        })
    }

    /// Rule 5: RETURNING over the view's columns, by their names.
    fn returning(&self, r: Returning) -> SqlResult<Returning> {
        let Some(items) = r else { return Ok(None) };
        let mut out = Vec::new();
        for item in items {
            match item {
                ast::SelectItem::Wildcard(_) | ast::SelectItem::QualifiedWildcard(..) => {
                    for (n, e, _) in &self.cols {
                        out.push(ast::SelectItem::ExprWithAlias {
                            expr: e.clone(),
                            alias: ast::Ident::with_quote('"', n.clone()),
                        });
                    }
                }
                ast::SelectItem::UnnamedExpr(e) => {
                    let named = match &e {
                        ast::Expr::Identifier(i) => Some(i.clone()),
                        ast::Expr::CompoundIdentifier(p) => p.last().cloned(),
                        _ => None,
                    };
                    let expr = self.expr(e)?;
                    out.push(match named {
                        Some(alias) => ast::SelectItem::ExprWithAlias { expr, alias },
                        None => ast::SelectItem::UnnamedExpr(expr),
                    });
                }
                ast::SelectItem::ExprWithAlias { expr, alias } => {
                    out.push(ast::SelectItem::ExprWithAlias {
                        expr: self.expr(expr)?,
                        alias,
                    });
                }
                other => return Err(SqlError::unsupported(format!("RETURNING {other}"))),
            }
        }
        Ok(Some(out))
    }

    /// Rule 2: `st` on the view as the same statement on its base.
    fn rewrite(&self, st: Stmt) -> SqlResult<Stmt> {
        Ok(match st {
            Stmt::Insert {
                columns,
                source,
                returning,
                on_conflict,
                ..
            } => {
                if on_conflict.is_some() {
                    return Err(SqlError::unsupported("ON CONFLICT on a view"));
                }
                let source = match source {
                    InsertSource::Values(rows) => InsertSource::Values(
                        rows.into_iter()
                            .map(|r| r.into_iter().map(|e| self.expr(e)).collect())
                            .collect::<SqlResult<_>>()?,
                    ),
                    other => other,
                };
                Stmt::Insert {
                    table: self.base.clone(),
                    columns: self.insert_columns(columns)?,
                    source,
                    returning: self.returning(returning)?,
                    on_conflict: None,
                }
            }
            Stmt::Update {
                alias,
                from,
                assignments,
                selection,
                returning,
                ..
            } => Stmt::Update {
                table: self.base.clone(),
                alias: refuse_alias(alias, from.is_empty())?,
                from,
                with: None,
                assignments: assignments
                    .into_iter()
                    .map(|(c, e)| Ok((self.target(&c, "update")?, self.expr(e)?)))
                    .collect::<SqlResult<_>>()?,
                selection: self.filter(selection)?,
                returning: self.returning(returning)?,
            },
            Stmt::Delete {
                alias,
                using,
                selection,
                returning,
                ..
            } => Stmt::Delete {
                table: self.base.clone(),
                alias: refuse_alias(alias, using.is_empty())?,
                using,
                with: None,
                selection: self.filter(selection)?,
                returning: self.returning(returning)?,
            },
            other => other,
        })
    }

    /// INSERT's columns on the base: the named view columns' base columns; with
    /// none named, the view's columns in order (kept positional when they are the
    /// base's leading columns in order, so a shorter VALUES row still fills them).
    fn insert_columns(&self, columns: Option<Vec<String>>) -> SqlResult<Option<Vec<String>>> {
        let names: Vec<String> = match columns {
            Some(c) => c,
            None => {
                let identity = self
                    .cols
                    .iter()
                    .enumerate()
                    .all(|(i, (_, _, b))| b.is_some() && b.as_deref() == self.base_col_at(i));
                if identity {
                    return Ok(None);
                }
                self.cols.iter().map(|(n, _, _)| n.clone()).collect()
            }
        };
        names
            .iter()
            .map(|n| self.target(n, "insert into"))
            .collect::<SqlResult<_>>()
            .map(Some)
    }

    /// The name of the base's `i`th column as the view's wildcard gave it (None if
    /// the view's `i`th column is not the base's `i`th).
    fn base_col_at(&self, i: usize) -> Option<&str> {
        match self.cols.get(i) {
            Some((_, ast::Expr::Identifier(id), Some(b))) if id.value == *b => self
                .base_order
                .get(i)
                .filter(|n| *n == b)
                .map(|n| n.as_str()),
            _ => None,
        }
    }
}

/// DML on a view with an alias, FROM or USING: not rewritten onto the base yet
/// (0A000); without them, no alias on the base.
fn refuse_alias(alias: Option<String>, plain: bool) -> SqlResult<Option<String>> {
    if alias.is_some() || !plain {
        return Err(SqlError::unsupported(
            "UPDATE or DELETE of a view with an alias, FROM or USING",
        ));
    }
    Ok(None)
}
