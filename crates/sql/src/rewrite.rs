//! Views, as PostgreSQL's rewriter has them: CREATE [OR REPLACE] VIEW keeps the
//! view's query as text in the catalog (engine catalog rule 9), and a query that
//! names a view reads the view's query in its place, bound afresh.
//!
//! Entry points: [`convert_create_view`] (parsing), `run` (CREATE and DROP
//! VIEW), [`drop_dependents`] (DROP ... CASCADE of what views
//! read), `Binder::view_from` (a view named in FROM).
//!
//! Rules (cited as "rewrite rule N"):
//! 1. A view's query is bound where it is used, in a scope of its own: it sees no
//!    column, CTE or outer query of the statement that names it, and that
//!    statement's parameters do not reach it.
//! 2. A view's columns are those it had when it was made (or replaced): a table it
//!    reads may since have gained columns (its `SELECT *` then gives more), which
//!    the view does not show. A query that no longer gives the view's columns'
//!    types first is an error (XX000), never a different result.
//! 3. Privileges: the statement's role needs SELECT on the columns of the view it
//!    reads (the view is a relation of the statement's reads); the view's query
//!    reads its relations with the view owner's privileges, as PostgreSQL's do.
//! 4. A view reached again while it is being expanded is 42P17 (PostgreSQL's
//!    "infinite recursion detected in rules for relation"); expansion nests at most
//!    [`MAX_VIEW_DEPTH`] views deep (54001).
//! 5. The catalog records the relations and columns a view's query reads; dropping
//!    one of them is 2BP01 unless CASCADE, which drops the views first (those that
//!    read them before them); dropping a column a view reads is 2BP01; renaming a
//!    relation or column a view reads is 0A000 (the text would name it no more).
//! 6. A view that reads a temporary relation is temporary itself (PostgreSQL's
//!    NOTICE), as is CREATE TEMP VIEW: it lives in the session's cache and goes
//!    with the session (temp rule 3).

use crate::analyze::{From, Rel};
use crate::bind::{Binder, Columns, Scope};
use crate::session::{Notices, Output, Session};
use crate::{ident_name, object_name, Ddl, SqlError, SqlResult, SqlType, Stmt};
use sqlparser::ast;
use strata_engine::{RelEntry, Txn, ViewDef};

/// How many views one expansion may nest (rewrite rule 4).
pub const MAX_VIEW_DEPTH: usize = 64;

/// A view as binding sees it: its query's text, its columns, its owner.
#[derive(Clone, Debug)]
pub struct ViewRef {
    pub query: String,
    pub columns: Columns,
    pub owner: u32,
}

/// Relation `r` as a view, if it is one.
pub fn view_ref(r: &RelEntry) -> Option<ViewRef> {
    let v = r.view.as_ref()?;
    Some(ViewRef {
        query: v.query.clone(),
        columns: r
            .columns
            .iter()
            .map(|c| (c.name.clone(), SqlType::of_column(c)))
            .collect(),
        owner: r.owner.0,
    })
}

/// CREATE [OR REPLACE] [TEMP] VIEW as a statement (MATERIALIZED and options are
/// 0A000).
pub fn convert_create_view(cv: ast::CreateView) -> SqlResult<Stmt> {
    let refused = if cv.materialized {
        Some("CREATE MATERIALIZED VIEW")
    } else if cv.or_alter || cv.if_not_exists || cv.to.is_some() {
        Some("this form of CREATE VIEW")
    } else if !matches!(cv.options, ast::CreateTableOptions::None) {
        Some("CREATE VIEW ... WITH (options)")
    } else {
        None
    };
    if let Some(what) = refused {
        return Err(SqlError::unsupported(what));
    }
    let (name, _) = crate::temp::create_name(object_name(&cv.name)?, cv.temporary, None)?;
    Ok(Stmt::Ddl(Ddl::CreateView {
        name,
        columns: cv.columns.iter().map(|c| ident_name(&c.name)).collect(),
        query: cv.query,
        or_replace: cv.or_replace,
    }))
}

impl Binder {
    /// View `name` named in FROM (rewrite rules 1-4): its query, bound in a scope of
    /// its own, as a subquery whose columns are the view's.
    pub(crate) fn view_from<'c>(
        &mut self,
        name: &str,
        v: ViewRef,
        alias: Option<&ast::TableAlias>,
        ctx: &Scope<'c>,
    ) -> SqlResult<From<'c>> {
        if self.views.iter().any(|n| n == name) {
            return Err(SqlError::new(
                "42P17",
                format!("infinite recursion detected in rules for relation \"{name}\""),
            ));
        }
        if self.views.len() >= MAX_VIEW_DEPTH {
            return Err(SqlError::new(
                "54001",
                format!("views nest more than {MAX_VIEW_DEPTH} deep at \"{name}\""),
            ));
        }
        let catalog = ctx
            .catalog
            .ok_or_else(|| SqlError::unsupported("a view here"))?;
        let parsed = match crate::parse(&v.query)?.pop() {
            Some(Stmt::Select(q)) => q,
            _ => {
                return Err(SqlError::new(
                    "XX000",
                    format!("view \"{name}\" does not parse"),
                ))
            }
        };
        let mut inner = Binder::default();
        inner.next_cte_id = self.next_cte_id;
        inner.views = std::mem::take(&mut self.views);
        inner.views.push(name.to_string());
        let q = inner.query(&parsed, catalog);
        self.views = std::mem::take(&mut inner.views);
        self.views.pop();
        self.next_cte_id = inner.next_cte_id;
        let mut q = q?;
        catalog.check_reads_as(v.owner, &q.reads)?;
        fit_columns(name, &mut q.columns, &v.columns)?;
        let mut cols = q.columns.clone();
        if let Some(a) = alias {
            crate::analyze::rename_columns(&mut cols, a)?;
        }
        let qualifier = alias.map_or_else(|| name.to_string(), |a| ident_name(&a.name));
        let width = cols.len();
        Ok(From {
            rel: Rel::Subquery(Box::new(q)),
            scope: Scope::entry(qualifier, cols).within(ctx),
            layout: vec![(0, name.to_string(), width)],
            reads: Vec::new(),
        })
    }
}

/// Rewrite rule 2: the bound query's columns become the view's (`want`), which
/// must lead them with the same types.
fn fit_columns(name: &str, got: &mut Columns, want: &Columns) -> SqlResult<()> {
    let fits = got.len() >= want.len()
        && got
            .iter()
            .zip(want)
            .all(|((_, g), (_, w))| g == w || (*g == SqlType::Unknown && *w == SqlType::Text));
    if !fits {
        return Err(SqlError::new(
            "XX000",
            format!("view \"{name}\" no longer matches the relations it reads"),
        ));
    }
    got.truncate(want.len());
    for (g, w) in got.iter_mut().zip(want) {
        *g = w.clone();
    }
    Ok(())
}

/// Runs CREATE VIEW or DROP VIEW.
pub(crate) fn run(s: &mut Session<'_>, ddl: &Ddl, notices: &mut Notices) -> SqlResult<Output> {
    match ddl {
        Ddl::CreateView {
            name,
            columns,
            query,
            or_replace,
        } => create_view(s, (name, columns), query, *or_replace, notices),
        Ddl::DropView {
            names,
            if_exists,
            cascade,
        } => drop_views(s, names, (*if_exists, *cascade), notices),
        _ => unreachable!("ddl::run sends only views here"),
    }
}

/// CREATE [OR REPLACE] VIEW (rewrite rules 2, 5 and 6).
fn create_view(
    s: &mut Session<'_>,
    (name, names): (&str, &[String]),
    query: &ast::Query,
    or_replace: bool,
    notices: &mut Notices,
) -> SqlResult<Output> {
    let q = s.bind_query(query)?;
    if names.len() > q.columns.len() {
        return Err(SqlError::syntax(
            "CREATE VIEW specifies more column names than columns",
        ));
    }
    let mut cols: Vec<strata_engine::Column> = Vec::with_capacity(q.columns.len());
    for (i, (n, t)) in q.columns.iter().enumerate() {
        let n = names.get(i).unwrap_or(n);
        if cols.iter().any(|c| &c.name == n) {
            return Err(SqlError::new(
                "42701",
                format!("column \"{n}\" specified more than once"),
            ));
        }
        let t = if *t == SqlType::Unknown {
            SqlType::Text
        } else {
            *t
        };
        cols.push(strata_engine::Column::new(n, t.to_col()?));
    }
    if or_replace {
        if let Some(old) = s.relation_arc(name).filter(|r| r.view.is_some()) {
            check_replacement(&old.columns, &cols)?;
        }
    }
    let def = ViewDef {
        query: query.to_string(),
        deps: dependencies(s, &q.reads)?,
    };
    let reads_temp = def
        .deps
        .iter()
        .any(|(n, _)| strata_engine::temp::bare(n) != n);
    let name = match reads_temp && !crate::temp::is_temp(name) {
        true => {
            notices.push((
                "NOTICE",
                format!("view \"{name}\" will be a temporary view"),
            ));
            format!("pg_temp.{name}")
        }
        false => name.to_string(),
    };
    let db = s.db().to_string();
    s.write(|t| Ok(t.create_view(&db, &name, &cols, def, or_replace)?))?;
    s.note_temp(&name, None);
    Ok(Output::Command("CREATE VIEW".into()))
}

/// The relations and columns a view's query reads, by their stored names (rewrite
/// rule 5).
fn dependencies(
    s: &Session<'_>,
    reads: &[(String, Vec<usize>)],
) -> SqlResult<Vec<(String, Vec<String>)>> {
    let mut deps: Vec<(String, Vec<String>)> = Vec::new();
    for (t, cols) in reads {
        if crate::views::schema(t).is_some() {
            continue;
        }
        let r = s
            .relation_arc(t)
            .ok_or_else(|| SqlError::new("42P01", format!("relation \"{t}\" does not exist")))?;
        let at = match deps.iter().position(|(n, _)| *n == r.name) {
            Some(i) => i,
            None => {
                deps.push((r.name.clone(), Vec::new()));
                deps.len() - 1
            }
        };
        for c in cols.iter().filter_map(|c| r.columns.get(*c)) {
            if !deps[at].1.contains(&c.name) {
                deps[at].1.push(c.name.clone());
            }
        }
    }
    Ok(deps)
}

/// OR REPLACE keeps the old columns, in order, with their names and types; it may
/// add columns after them (PostgreSQL's 42P16s).
fn check_replacement(
    old: &[strata_engine::Column],
    new: &[strata_engine::Column],
) -> SqlResult<()> {
    if new.len() < old.len() {
        return Err(SqlError::new("42P16", "cannot drop columns from view"));
    }
    for (o, n) in old.iter().zip(new) {
        if o.name != n.name {
            return Err(SqlError::new(
                "42P16",
                format!(
                    "cannot change name of view column \"{}\" to \"{}\"",
                    o.name, n.name
                ),
            )
            .with_hint(
                "Use ALTER VIEW ... RENAME COLUMN ... to change name of view column instead.",
            ));
        }
        let (ot, nt) = (SqlType::of_column(o), SqlType::of_column(n));
        if ot != nt {
            return Err(SqlError::new(
                "42P16",
                format!(
                    "cannot change data type of view column \"{}\" from {} to {}",
                    o.name,
                    ot.name(),
                    nt.name()
                ),
            ));
        }
    }
    Ok(())
}

/// DROP VIEW [IF EXISTS] names [CASCADE] (rewrite rule 5).
fn drop_views(
    s: &mut Session<'_>,
    names: &[String],
    (if_exists, cascade): (bool, bool),
    notices: &mut Notices,
) -> SqlResult<Output> {
    let db = s.db().to_string();
    let mut said = Vec::new();
    s.write(|t| {
        let dbe = t.database(&db)?;
        let mut seen: Vec<&String> = Vec::new();
        for n in names {
            match t.relation(&dbe, n) {
                Ok(r) if r.view.is_none() => {
                    return Err(SqlError::new("42809", format!("\"{n}\" is not a view"))
                        .with_hint("Use DROP TABLE to remove a table."))
                }
                Ok(_) if !seen.contains(&n) => seen.push(n),
                _ if if_exists => {
                    said.push(format!("view \"{n}\" does not exist, skipping"));
                }
                _ => {
                    return Err(SqlError::new(
                        "42P01",
                        format!("view \"{n}\" does not exist"),
                    ))
                }
            }
        }
        for n in seen {
            said.extend(drop_dependents(t, &db, (n, "view"), cascade)?);
            t.drop_view(&db, n)?;
        }
        Ok(())
    })?;
    notices.extend(said.into_iter().map(|m| ("NOTICE", m)));
    Ok(Output::Command("DROP VIEW".into()))
}

/// Before relation `name` (a `kind`) is dropped: with CASCADE, drops every view that
/// reads it, directly or through other views, those that read them first, and
/// returns the NOTICE PostgreSQL gives; without, 2BP01 with PostgreSQL's DETAIL and
/// HINT if there are any (rewrite rule 5). O(the views dropped).
pub(crate) fn drop_dependents(
    t: &mut Txn<'_>,
    db: &str,
    (name, kind): (&str, &str),
    cascade: bool,
) -> SqlResult<Vec<String>> {
    let direct = t.dependent_views(db, name)?;
    if direct.is_empty() {
        return Ok(Vec::new());
    }
    if !cascade {
        let shown = crate::temp::shown(name);
        let detail: Vec<String> = direct
            .iter()
            .map(|v| {
                format!(
                    "view {} depends on {kind} {shown}",
                    strata_engine::temp::bare(v)
                )
            })
            .collect();
        return Err(SqlError::new(
            "2BP01",
            format!("cannot drop {kind} {shown} because other objects depend on it"),
        )
        .with_detail(detail.join("\n"))
        .with_hint("Use DROP ... CASCADE to drop the dependent objects too."));
    }
    let mut order: Vec<String> = Vec::new();
    let mut done: rustc_hash::FxHashSet<String> = Default::default();
    let mut visiting = done.clone();
    let mut stack: Vec<(String, bool)> = direct.into_iter().rev().map(|v| (v, false)).collect();
    while let Some((v, expanded)) = stack.pop() {
        if done.contains(&v) {
            continue;
        }
        if expanded {
            done.insert(v.clone());
            order.push(v);
            continue;
        }
        if !visiting.insert(v.clone()) {
            continue; // views that read each other (OR REPLACE can make a cycle)
        }
        stack.push((v.clone(), true));
        for d in t.dependent_views(db, &v)?.into_iter().rev() {
            stack.push((d, false));
        }
    }
    for v in &order {
        t.drop_view(db, v)?;
    }
    Ok(vec![match order.len() {
        1 => format!(
            "drop cascades to view {}",
            strata_engine::temp::bare(&order[0])
        ),
        n => format!("drop cascades to {n} other objects"),
    }])
}
