//! Analysis: a parsed query (sqlparser's AST) to a query tree — names resolved
//! against the catalog, expressions bound and typed, aggregation and sorting made
//! explicit. What the planner turns into a plan; no storage is touched.
//!
//! Entry point: [`Binder::query`] (a SELECT, VALUES or set operation, with its
//! ORDER BY, LIMIT and OFFSET) over a [`ScopeOf`] that gives a relation's columns.
//!
//! The tree: a [`Query`] is a [`SetTree`] (a [`Select`], VALUES, UNION / INTERSECT
//! / EXCEPT of two trees, or a nested query) plus ORDER BY (as columns of the
//! tree's output), LIMIT and OFFSET. A [`Select`] reads a [`Rel`] (one row, a
//! table, a view, generate_series, a subquery, or a join of two rels), filters it,
//! optionally groups it, and computes its targets.
//!
//! Rules (cited as "analyze rule N"):
//! 1. A rel's row is its columns side by side; a join's row is its left row, then
//!    its right row, then one merged column per USING / NATURAL column (the left's,
//!    the right's for RIGHT JOIN, COALESCE of both for FULL JOIN). Every
//!    expression over a FROM clause is bound as `Col(i)` of that row.
//! 2. Names resolve as PostgreSQL's do: a bare column name must name one column of
//!    the FROM clause (42703 none, 42702 several); `t.c` the column of entry `t`
//!    (42P01 for no entry `t`); a USING column's bare name is its merged column;
//!    `*` lists the merged columns, then each entry's others in order.
//! 3. A SELECT with GROUP BY, HAVING or an aggregate is grouped: its grouped row is
//!    the GROUP BY keys, then the aggregates' values; its targets, HAVING and
//!    ORDER BY are bound over the FROM row and then rewritten over the grouped row
//!    — a subexpression equal to a key is that key, and any other column is 42803.
//! 4. ORDER BY names an output column (by position, or a bare name of one) or is an
//!    expression; an expression not among the targets is added as a hidden target
//!    after the visible ones, which the planner removes after sorting (42P10 for
//!    SELECT DISTINCT, as PostgreSQL). DISTINCT ON keys are taken the same way.
//! 5. A set operation's two sides have as many columns (42601) and each column
//!    resolves to their common type (conditional rule 1); an untyped literal in a
//!    leaf SELECT's list takes the other side's type (`SELECT '1' UNION SELECT 2` is
//!    integer; two untyped sides are text), as PostgreSQL resolves them. Its output
//!    names are the left side's; its ORDER BY names output columns only.
//! 6. Each relation read is recorded with the columns read ([`Query::reads`]), so
//!    privileges are checked over the whole tree before it runs.
//! 7. A LATERAL subquery standing alone in the FROM list, or as a join's right side,
//!    may name the columns of what is to its left: they are its enclosing scope
//!    (`Expr::Outer(1, _)`, one level above the query's own depth), and it becomes
//!    [`Rel::Lateral`], run again for each left row with that row pushed as the
//!    outer row (the executor's Lateral node).
//! 8. UPDATE ... FROM and DELETE ... USING read their FROM items as a query of all
//!    their columns ([`Binder::dml_from`]), named for the statement's expressions
//!    beside the table's.
//! 9. A set-returning function in the select list of a SELECT without FROM
//!    (`SELECT generate_series(1, 3)`, `INSERT ... SELECT generate_series(...)`)
//!    is moved into FROM when it is the only one and the SELECT neither groups
//!    nor is DISTINCT: the same rows as PostgreSQL's ProjectSet. Other placements
//!    stay 0A000.

use crate::bind::{default_name, Agg, Binder, Columns, Expr, Scope, ScopeOf};
use crate::conditional::common_type;
use crate::{ident_name, object_name, SqlError, SqlResult, SqlType};
use sqlparser::ast;

/// An analyzed query.
#[derive(Clone, Debug, PartialEq)]
pub struct Query {
    pub body: SetTree,
    /// ORDER BY, over the body's output row.
    pub order: Vec<SortSpec>,
    pub limit: Option<Expr>,
    pub offset: Option<Expr>,
    /// The visible result columns; the body's row may have hidden ones after them.
    pub columns: Columns,
    /// Relations read and the columns read of each (analyze rule 6).
    pub reads: Vec<(String, Vec<usize>)>,
}

/// One ORDER BY key: an output column, its direction and where NULLs go.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct SortSpec {
    pub col: usize,
    pub desc: bool,
    pub nulls_first: bool,
}

#[derive(Clone, Copy, Debug, PartialEq)]
pub enum SetOp {
    Union,
    Intersect,
    Except,
}

#[derive(Clone, Debug, PartialEq)]
pub enum SetTree {
    Select(Box<Select>),
    /// VALUES rows, each already of the columns' common types.
    Values(Vec<Vec<Expr>>, Vec<SqlType>),
    SetOp {
        op: SetOp,
        all: bool,
        left: Box<SetTree>,
        right: Box<SetTree>,
        types: Vec<SqlType>,
    },
    Query(Box<Query>),
    /// A reference to a WITH query (cte rule 2): its query, run once for every
    /// reference when [`crate::cte::CteShare::materialized`], else read in place;
    /// the name the reference goes by.
    Cte(std::sync::Arc<crate::cte::CteShare>, Box<Query>, String),
}

impl SetTree {
    /// The output columns' types (visible and hidden).
    pub fn types(&self) -> Vec<SqlType> {
        match self {
            SetTree::Select(s) => s.types.clone(),
            SetTree::Values(_, t) => t.clone(),
            SetTree::SetOp { types, .. } => types.clone(),
            SetTree::Query(q) | SetTree::Cte(_, q, _) => {
                q.columns.iter().map(|(_, t)| *t).collect()
            }
        }
    }
}

/// SELECT's DISTINCT: none, over the visible targets, or ON some targets.
#[derive(Clone, Debug, PartialEq)]
pub enum Distinct {
    No,
    All,
    On(Vec<usize>),
}

#[derive(Clone, Debug, PartialEq)]
pub struct Select {
    pub from: Rel,
    pub filter: Option<Expr>,
    pub grouping: Option<Grouping>,
    /// Visible targets, then hidden ones (analyze rule 4); over the FROM row, or
    /// over the grouped row if grouped.
    pub targets: Vec<Expr>,
    pub types: Vec<SqlType>,
    pub distinct: Distinct,
    /// How many targets are visible.
    pub visible: usize,
    /// Window functions, over the grouped row if grouped (else the FROM row); their
    /// values follow that row in the Window node's, where the targets read them.
    pub windows: Vec<crate::window::WinFunc>,
}

/// GROUP BY keys (over the FROM row), aggregates, HAVING (over the grouped row).
#[derive(Clone, Debug, PartialEq)]
pub struct Grouping {
    pub keys: Vec<Expr>,
    pub aggs: Vec<Agg>,
    pub having: Option<Expr>,
}

#[derive(Clone, Copy, Debug, PartialEq)]
pub enum JoinKind {
    Inner,
    Left,
    Right,
    Full,
    /// Each outer row once if an inner row matches (made by the planner from
    /// EXISTS: semi join rules); the row is the outer row alone.
    Semi,
    /// Each outer row no inner row matches (NOT EXISTS).
    Anti,
}

#[derive(Clone, Debug, PartialEq)]
pub enum Rel {
    /// No FROM: one row of no columns.
    One,
    Table {
        name: String,
        width: usize,
        /// What the query calls it (its alias, else its name): EXPLAIN shows it.
        alias: String,
    },
    /// A system view (`views` module), its rows made by the server.
    View {
        name: String,
        width: usize,
    },
    /// generate_series(start, stop[, step]) of int4 or int8.
    Series {
        start: Expr,
        stop: Expr,
        step: Option<Expr>,
        ty: SqlType,
        /// Its alias, if written (EXPLAIN).
        alias: Option<String>,
    },
    Subquery(Box<Query>),
    /// A LATERAL subquery that names columns of the FROM items before it: the
    /// right side of a join, run again for each left row (analyze rule 7).
    Lateral(Box<Query>),
    Join(Box<Join>),
    /// A recursive CTE's work table, read by its step (cte rule 3).
    WorkTable {
        id: usize,
        width: usize,
    },
    Recursive(Box<crate::cte::Recursive>),
}

#[derive(Clone, Debug, PartialEq)]
pub struct Join {
    pub kind: JoinKind,
    pub left: Rel,
    pub right: Rel,
    /// Over the left row then the right row (None: every pair).
    pub on: Option<Expr>,
    /// The merged USING columns, over the left and right rows (analyze rule 1).
    pub merged: Vec<Expr>,
    pub left_width: usize,
    pub right_width: usize,
}

impl Rel {
    /// The width of the rel's row.
    pub fn width(&self) -> usize {
        match self {
            Rel::One => 0,
            Rel::Table { width, .. } | Rel::View { width, .. } => *width,
            Rel::Series { .. } => 1,
            Rel::Subquery(q) | Rel::Lateral(q) => q.columns.len(),
            Rel::Join(j) => j.left_width + j.right_width + j.merged.len(),
            Rel::WorkTable { width, .. } => *width,
            Rel::Recursive(r) => r.columns.len(),
        }
    }
}

/// Where in a FROM row each table's columns are (analyze rule 6).
pub(crate) type Layout = Vec<(usize, String, usize)>;

/// What analyzing a FROM clause gives: the rel, its scope, where its tables' columns
/// are, and the relations read inside its subqueries.
pub(crate) struct From<'c> {
    pub(crate) rel: Rel,
    pub(crate) scope: Scope<'c>,
    pub(crate) layout: Layout,
    pub(crate) reads: Vec<(String, Vec<usize>)>,
}

impl Binder {
    /// Analyzes a query (the module's entry point).
    pub fn query(&mut self, q: &ast::Query, scope_of: &ScopeOf<'_>) -> SqlResult<Query> {
        let mut q = self.query_in(q, scope_of, None)?;
        crate::fold::query(&mut q)?;
        Ok(q)
    }

    /// UPDATE ... FROM / DELETE ... USING: the FROM items as a query of all their
    /// columns (read once, before the statement changes anything), and the scope
    /// that names those columns for its SET, WHERE and RETURNING.
    pub(crate) fn dml_from<'c>(
        &mut self,
        with: Option<&ast::With>,
        items: &[ast::TableWithJoins],
        scope_of: &'c ScopeOf<'c>,
    ) -> SqlResult<(Query, Scope<'c>)> {
        let ctx = Scope {
            catalog: Some(scope_of),
            ..Scope::default()
        };
        // A WITH before the statement is FROM's (sql rule 8).
        let mut cte_reads = Vec::new();
        let pushed = match with {
            Some(w) => self.with_clause(w, &ctx, &mut cte_reads)?,
            None => 0,
        };
        let from = self.range_table(items, &ctx);
        let keep = self.ctes.len() - pushed;
        self.ctes.truncate(keep);
        let from = from?;
        let width = from.rel.width();
        let all: Vec<Expr> = (0..width).map(Expr::Col).collect();
        let refs: Vec<&Expr> = all.iter().collect();
        let mut reads = from.reads.clone();
        reads.extend(cte_reads);
        reads.extend(columns_read(&from.layout, &from.rel, &refs));
        reads.extend(std::mem::take(&mut self.sub_reads));
        let columns = from.scope.cols.clone();
        let select = Select {
            from: from.rel,
            filter: None,
            grouping: None,
            types: columns.iter().map(|(_, t)| *t).collect(),
            targets: all,
            distinct: Distinct::No,
            visible: width,
            windows: Vec::new(),
        };
        let query = Query {
            body: SetTree::Select(Box::new(select)),
            order: Vec::new(),
            limit: None,
            offset: None,
            columns,
            reads,
        };
        Ok((query, from.scope))
    }

    /// A query whose enclosing query's scope is `parent` (a subquery in an
    /// expression: subquery rule 1), or a top-level one.
    pub(crate) fn query_in<'c>(
        &mut self,
        q: &ast::Query,
        scope_of: &'c ScopeOf<'c>,
        parent: Option<&'c Scope<'c>>,
    ) -> SqlResult<Query> {
        let ctx = Scope {
            catalog: Some(scope_of),
            parent,
            depth: parent.map_or(0, |p| p.depth + 1),
            ..Scope::default()
        };
        let mut q = self.query_at(q, &ctx)?;
        q.reads.extend(std::mem::take(&mut self.sub_reads));
        Ok(q)
    }

    /// A query nested at the same level as `ctx`'s (a CTE, a parenthesized query,
    /// a subquery in FROM): the same enclosing queries.
    pub(crate) fn query_in_ctx(&mut self, q: &ast::Query, ctx: &Scope<'_>) -> SqlResult<Query> {
        let mut q = self.query_at(q, ctx)?;
        q.reads.extend(std::mem::take(&mut self.sub_reads));
        Ok(q)
    }

    /// A set tree at `ctx`'s level (a recursive CTE's terms).
    pub(crate) fn set_tree_in(
        &mut self,
        body: &ast::SetExpr,
        ctx: &Scope<'_>,
        reads: &mut Vec<(String, Vec<usize>)>,
    ) -> SqlResult<(SetTree, Columns)> {
        self.set_tree(body, ctx, reads)
    }

    fn query_at(&mut self, q: &ast::Query, ctx: &Scope<'_>) -> SqlResult<Query> {
        let mut reads = Vec::new();
        let pushed = match &q.with {
            Some(w) => self.with_clause(w, ctx, &mut reads)?,
            None => 0,
        };
        let r = self.query_body(q, ctx, reads);
        let keep = self.ctes.len() - pushed;
        self.ctes.truncate(keep);
        r
    }

    fn query_body(
        &mut self,
        q: &ast::Query,
        ctx: &Scope<'_>,
        mut reads: Vec<(String, Vec<usize>)>,
    ) -> SqlResult<Query> {
        if !q.locks.is_empty() {
            return Err(SqlError::unsupported("FOR UPDATE/SHARE"));
        }
        let (body, columns, order) = match &*q.body {
            ast::SetExpr::Select(s) => {
                let (sel, cols) = self.select_body(s, q.order_by.as_ref(), ctx, &mut reads)?;
                let order = sel.1;
                (SetTree::Select(Box::new(sel.0)), cols, order)
            }
            body => {
                let (tree, cols) = self.set_tree(body, ctx, &mut reads)?;
                let order = match &q.order_by {
                    Some(ob) => output_order(ob, &cols)?,
                    None => Vec::new(),
                };
                (tree, cols, order)
            }
        };
        let (mut limit, offset) = match &q.limit_clause {
            Some(lc) => self.limit_offset(lc)?,
            None => (None, None),
        };
        if let Some(f) = &q.fetch {
            limit = Some(self.fetch_first(f, limit.is_some())?);
        }
        Ok(Query {
            body,
            order,
            limit,
            offset,
            columns,
            reads,
        })
    }

    /// A set operation's operand, VALUES, or a parenthesized query.
    fn set_tree(
        &mut self,
        body: &ast::SetExpr,
        ctx: &Scope<'_>,
        reads: &mut Vec<(String, Vec<usize>)>,
    ) -> SqlResult<(SetTree, Columns)> {
        match body {
            ast::SetExpr::Select(s) => {
                let ((sel, _), cols) = self.select_body(s, None, ctx, reads)?;
                Ok((SetTree::Select(Box::new(sel)), cols))
            }
            ast::SetExpr::Query(q) => {
                let q = self.query_in_ctx(q, ctx)?;
                reads.extend(q.reads.iter().cloned());
                let cols = q.columns.clone();
                Ok((SetTree::Query(Box::new(q)), cols))
            }
            ast::SetExpr::Values(v) => self.values(v, ctx),
            ast::SetExpr::SetOperation {
                left,
                op,
                set_quantifier,
                right,
            } => self.set_operation((left, right), op, set_quantifier, ctx, reads),
            other => Err(SqlError::unsupported(format!(
                "this query form ({})",
                other.to_string().chars().take(40).collect::<String>()
            ))),
        }
    }

    /// UNION / INTERSECT / EXCEPT [ALL] (analyze rule 5).
    fn set_operation(
        &mut self,
        (left, right): (&ast::SetExpr, &ast::SetExpr),
        op: &ast::SetOperator,
        q: &ast::SetQuantifier,
        ctx: &Scope<'_>,
        reads: &mut Vec<(String, Vec<usize>)>,
    ) -> SqlResult<(SetTree, Columns)> {
        let (sop, word) = match op {
            ast::SetOperator::Union => (SetOp::Union, "UNION"),
            ast::SetOperator::Intersect => (SetOp::Intersect, "INTERSECT"),
            ast::SetOperator::Except | ast::SetOperator::Minus => (SetOp::Except, "EXCEPT"),
        };
        let all = match q {
            ast::SetQuantifier::All => true,
            ast::SetQuantifier::Distinct | ast::SetQuantifier::None => false,
            other => return Err(SqlError::unsupported(format!("{word} {other}"))),
        };
        self.set_leaf = matches!(left, ast::SetExpr::Select(_));
        let (l, lcols) = self.set_tree(left, ctx, reads)?;
        self.set_leaf = matches!(right, ast::SetExpr::Select(_));
        let (r, rcols) = self.set_tree(right, ctx, reads)?;
        self.set_leaf = false;
        if lcols.len() != rcols.len() {
            return Err(SqlError::syntax(format!(
                "each {word} query must have the same number of columns"
            )));
        }
        let mut types = Vec::with_capacity(lcols.len());
        let mut cols = Vec::with_capacity(lcols.len());
        for ((n, lt), (_, rt)) in lcols.iter().zip(&rcols) {
            let t = match common_type(&[*lt, *rt], word)? {
                SqlType::Unknown => SqlType::Text, // both untyped: text
                t => t,
            };
            types.push(t);
            cols.push((n.clone(), t));
        }
        let tree = SetTree::SetOp {
            op: sop,
            all,
            left: Box::new(l),
            right: Box::new(r),
            types,
        };
        Ok((tree, cols))
    }

    /// VALUES (...), (...): every row as wide as the first (42601), each column of
    /// its rows' common type; columns named column1, column2, ...
    fn values(&mut self, v: &ast::Values, ctx: &Scope<'_>) -> SqlResult<(SetTree, Columns)> {
        // No columns of its own; subqueries and enclosing queries' columns as the
        // query level it stands at has them.
        let here = Scope::default().within(ctx);
        let width = v.rows.first().map_or(0, |r| r.content.len());
        let mut bound: Vec<Vec<(Expr, SqlType)>> = Vec::with_capacity(v.rows.len());
        for row in &v.rows {
            if row.content.len() != width {
                return Err(SqlError::syntax("VALUES lists must all be the same length"));
            }
            let mut out = Vec::with_capacity(width);
            for e in &row.content {
                out.push(self.expr(&here, e)?);
            }
            bound.push(out);
        }
        let mut types = Vec::with_capacity(width);
        for c in 0..width {
            let ts: Vec<SqlType> = bound.iter().map(|r| r[c].1).collect();
            types.push(common_type(&ts, "VALUES")?);
        }
        let mut rows = Vec::with_capacity(bound.len());
        for r in bound {
            let mut out = Vec::with_capacity(width);
            for (c, (e, t)) in r.into_iter().enumerate() {
                out.push(self.to_common(e, t, types[c])?);
            }
            rows.push(out);
        }
        let cols = (0..width)
            .map(|i| (format!("column{}", i + 1), types[i]))
            .collect();
        Ok((SetTree::Values(rows, types), cols))
    }

    /// One SELECT with its ORDER BY (analyze rules 3 and 4): the Select and the
    /// sort keys over its targets, and its visible columns.
    fn select_body(
        &mut self,
        sel: &ast::Select,
        order_by: Option<&ast::OrderBy>,
        ctx: &Scope<'_>,
        reads: &mut Vec<(String, Vec<usize>)>,
    ) -> SqlResult<((Select, Vec<SortSpec>), Columns)> {
        // Window functions belong to the select list they are in (window rule 4).
        let named = crate::window::named_windows(&sel.named_window)?;
        let outer_named = std::mem::replace(&mut self.named_wins, named);
        let outer_wins = self.wins.take();
        let r = self.select_parts(sel, order_by, ctx, reads);
        self.wins = outer_wins;
        self.named_wins = outer_named;
        r
    }

    fn select_parts(
        &mut self,
        sel: &ast::Select,
        order_by: Option<&ast::OrderBy>,
        ctx: &Scope<'_>,
        reads: &mut Vec<(String, Vec<usize>)>,
    ) -> SqlResult<((Select, Vec<SortSpec>), Columns)> {
        refuse_select_clauses(sel)?;
        let srf;
        let sel = match srf_in_from(sel) {
            Some(rewritten) => {
                srf = rewritten;
                &srf
            }
            None => sel,
        };
        let leaf = std::mem::take(&mut self.set_leaf);
        let outer_keep = std::mem::replace(&mut self.keep_unknown, false);
        let r = self.select_parts_in(sel, order_by, ctx, reads, leaf);
        self.keep_unknown = outer_keep;
        r
    }

    fn select_parts_in(
        &mut self,
        sel: &ast::Select,
        order_by: Option<&ast::OrderBy>,
        ctx: &Scope<'_>,
        reads: &mut Vec<(String, Vec<usize>)>,
        leaf: bool,
    ) -> SqlResult<((Select, Vec<SortSpec>), Columns)> {
        let from = self.range_table(&sel.from, ctx)?;
        reads.extend(from.reads.iter().cloned());
        let scope = &from.scope;
        // The select list before WHERE, as PostgreSQL's transformSelectStmt: the
        // first error is the one it would report.
        let mut aggs = Vec::new();
        self.wins = Some(Vec::new());
        self.keep_unknown = leaf;
        let projected = self.projection_list(&sel.projection, scope, &mut aggs);
        self.keep_unknown = false;
        let (mut targets, columns) = projected?;
        let wins = self.wins.take();
        let filter = match &sel.selection {
            Some(w) => Some(self.condition(scope, w, "WHERE")?),
            None => None,
        };
        let keys = self.group_keys(&sel.group_by, scope, &sel.projection, &targets)?;
        let having = match &sel.having {
            Some(h) => Some(self.having(scope, h, &mut aggs)?),
            None => None,
        };
        self.wins = wins;
        let mut order = Vec::new();
        if let Some(ob) = order_by {
            order = self.order_keys(ob, scope, &columns, &mut targets, &mut aggs)?;
        }
        let distinct = self.distinct(sel, scope, &mut targets, &mut aggs, &order, columns.len())?;
        let windows = self.wins.take().unwrap_or_default();
        let mut read_cols: Vec<&Expr> = filter
            .iter()
            .chain(targets.iter())
            .chain(keys.iter())
            .collect();
        for a in &aggs {
            read_cols.extend(a.row_exprs().chain(a.direct.iter()));
        }
        let win_exprs: Vec<Expr> = windows.iter().flat_map(window_exprs).collect();
        read_cols.extend(win_exprs.iter());
        reads.extend(columns_read(&from.layout, &from.rel, &read_cols));
        let width = from.rel.width();
        let (targets, grouping, windows) =
            grouped_parts((targets, keys, aggs, having), windows, width, scope)?;
        let mut types: Vec<SqlType> = columns.iter().map(|(_, t)| *t).collect();
        types.resize(targets.len(), SqlType::Text);
        let select = Select {
            from: from.rel,
            filter,
            grouping,
            windows,
            visible: columns.len(),
            targets,
            types,
            distinct,
        };
        Ok(((select, order), columns))
    }

    /// The select list (targets over the FROM row; aggregate calls into `aggs`).
    fn projection_list(
        &mut self,
        list: &[ast::SelectItem],
        scope: &Scope,
        aggs: &mut Vec<Agg>,
    ) -> SqlResult<(Vec<Expr>, Columns)> {
        self.projection(list, scope, aggs)
    }

    /// HAVING: a condition that may call aggregates.
    fn having(&mut self, scope: &Scope, h: &ast::Expr, aggs: &mut Vec<Agg>) -> SqlResult<Expr> {
        let (x, t) = self.expr_in(scope, h, &mut Some(aggs))?;
        if t != SqlType::Bool && t != SqlType::Unknown {
            return Err(SqlError::new(
                "42804",
                format!(
                    "argument of HAVING must be type boolean, not type {}",
                    t.name()
                ),
            ));
        }
        self.coerce(x, t, SqlType::Bool)
    }

    /// GROUP BY keys: expressions over the FROM row; a number is a select-list
    /// position, a bare name not in the FROM clause an output column's name.
    fn group_keys(
        &mut self,
        g: &ast::GroupByExpr,
        scope: &Scope,
        projection: &[ast::SelectItem],
        targets: &[Expr],
    ) -> SqlResult<Vec<Expr>> {
        let exprs = match g {
            ast::GroupByExpr::Expressions(v, m) if m.is_empty() => v,
            _ => {
                return Err(SqlError::unsupported(
                    "GROUP BY ALL, ROLLUP, CUBE or GROUPING SETS",
                ))
            }
        };
        let mut keys: Vec<Expr> = Vec::with_capacity(exprs.len());
        for e in exprs {
            let key = match e {
                _ if let Some(k) = position(e, targets.len(), "GROUP BY")? => targets[k].clone(),
                ast::Expr::Identifier(i)
                    if !scope.cols.iter().any(|(c, _)| *c == ident_name(i)) =>
                {
                    match output_named(projection, &ident_name(i)) {
                        Some(k) => targets[k].clone(),
                        None => self.expr(scope, e)?.0,
                    }
                }
                e => {
                    let (x, t) = self.expr(scope, e)?;
                    self.settle_type(x, t).0
                }
            };
            if !keys.contains(&key) {
                keys.push(key);
            }
        }
        Ok(keys)
    }

    /// ORDER BY of one SELECT (analyze rule 4): each key a target index.
    fn order_keys(
        &mut self,
        ob: &ast::OrderBy,
        scope: &Scope,
        columns: &Columns,
        targets: &mut Vec<Expr>,
        aggs: &mut Vec<Agg>,
    ) -> SqlResult<Vec<SortSpec>> {
        let exprs = match &ob.kind {
            ast::OrderByKind::Expressions(v) => v,
            ast::OrderByKind::All(_) => return Err(SqlError::unsupported("ORDER BY ALL")),
        };
        let mut out = Vec::with_capacity(exprs.len());
        for o in exprs {
            let col = match output_ref(&o.expr, columns)? {
                Some(k) => k,
                None => {
                    let (x, t) = self.expr_in(scope, &o.expr, &mut Some(aggs))?;
                    let (x, _) = self.settle_type(x, t);
                    target_index(targets, x)
                }
            };
            out.push(sort_spec(col, &o.options)?);
        }
        Ok(out)
    }

    /// DISTINCT and DISTINCT ON (analyze rule 4).
    fn distinct(
        &mut self,
        sel: &ast::Select,
        scope: &Scope,
        targets: &mut Vec<Expr>,
        aggs: &mut Vec<Agg>,
        order: &[SortSpec],
        visible: usize,
    ) -> SqlResult<Distinct> {
        Ok(match &sel.distinct {
            None | Some(ast::Distinct::All) => Distinct::No,
            Some(ast::Distinct::Distinct) => {
                if order.iter().any(|s| s.col >= visible) {
                    return Err(SqlError::new(
                        "42P10",
                        "for SELECT DISTINCT, ORDER BY expressions must appear in select list",
                    ));
                }
                Distinct::All
            }
            Some(ast::Distinct::On(exprs)) => {
                let mut cols = Vec::with_capacity(exprs.len());
                for e in exprs {
                    let (x, t) = self.expr_in(scope, e, &mut Some(aggs))?;
                    let (x, _) = self.settle_type(x, t);
                    cols.push(target_index(targets, x));
                }
                for (i, s) in order.iter().enumerate().take(cols.len()) {
                    if !cols.contains(&s.col) && i < cols.len() {
                        return Err(SqlError::new(
                            "42P10",
                            "SELECT DISTINCT ON expressions must match initial ORDER BY expressions",
                        ));
                    }
                }
                Distinct::On(cols)
            }
        })
    }

    /// A FROM list: its items cross-joined, left to right.
    fn range_table<'c>(
        &mut self,
        items: &[ast::TableWithJoins],
        ctx: &Scope<'c>,
    ) -> SqlResult<From<'c>> {
        let mut acc: Option<From> = None;
        for twj in items {
            acc = Some(match acc {
                Some(left) => {
                    let item = self.table_with_joins(twj, Some(&left), ctx)?;
                    self.join(left, item, JoinKind::Inner, &ast::JoinConstraint::None)?
                }
                None => self.table_with_joins(twj, None, ctx)?,
            });
        }
        Ok(acc.unwrap_or(From {
            rel: Rel::One,
            scope: Scope {
                star: Some(Vec::new()),
                ..Scope::default()
            }
            .within(ctx),
            layout: Vec::new(),
            reads: Vec::new(),
        }))
    }

    /// A FROM item with its joins; `before` is what the FROM list holds to its
    /// left (which a LATERAL subquery standing alone may name).
    fn table_with_joins<'c>(
        &mut self,
        twj: &ast::TableWithJoins,
        before: Option<&From<'c>>,
        ctx: &Scope<'c>,
    ) -> SqlResult<From<'c>> {
        let lateral = match before {
            Some(b) if twj.joins.is_empty() => {
                self.lateral(&twj.relation, b, JoinKind::Inner, ctx)?
            }
            _ => None,
        };
        let acc = match lateral {
            Some(f) => f,
            None => self.table_factor(&twj.relation, ctx)?,
        };
        self.joins_onto(acc, &twj.joins, ctx)
    }

    /// `acc` joined with each of `joins` in turn.
    fn joins_onto<'c>(
        &mut self,
        mut acc: From<'c>,
        joins: &[ast::Join],
        ctx: &Scope<'c>,
    ) -> SqlResult<From<'c>> {
        for j in joins {
            use ast::JoinOperator as J;
            let kind = match &j.join_operator {
                J::Left(_) | J::LeftOuter(_) => JoinKind::Left,
                J::Right(_) | J::RightOuter(_) => JoinKind::Right,
                J::FullOuter(_) => JoinKind::Full,
                _ => JoinKind::Inner,
            };
            let right = match self.lateral(&j.relation, &acc, kind, ctx)? {
                Some(f) => f,
                None => self.table_factor(&j.relation, ctx)?,
            };
            let (kind, c) = match &j.join_operator {
                J::Join(c) | J::Inner(c) => (JoinKind::Inner, c),
                J::Left(c) | J::LeftOuter(c) => (JoinKind::Left, c),
                J::Right(c) | J::RightOuter(c) => (JoinKind::Right, c),
                J::FullOuter(c) => (JoinKind::Full, c),
                J::CrossJoin(c) => (JoinKind::Inner, c),
                other => return Err(SqlError::unsupported(format!("the join {other:?}"))),
            };
            acc = self.join(acc, right, kind, c)?;
        }
        Ok(acc)
    }

    /// One FROM item: a table or view, generate_series, a subquery, VALUES, or a
    /// parenthesized join.
    fn table_factor<'c>(&mut self, tf: &ast::TableFactor, ctx: &Scope<'c>) -> SqlResult<From<'c>> {
        // A name that resolves to nothing is placed at the name (sql rule 7).
        self.table_factor_at(tf, ctx).map_err(|e| match e.code {
            "42P01" | "42704" | "3F000" => e.at(sqlparser::ast::Spanned::span(tf)),
            // A data-modifying CTE without RETURNING, named in FROM (cte rule 4).
            "0A000" if e.message.ends_with("does not have a RETURNING clause") => {
                e.at(sqlparser::ast::Spanned::span(tf))
            }
            _ => e,
        })
    }

    fn table_factor_at<'c>(
        &mut self,
        tf: &ast::TableFactor,
        ctx: &Scope<'c>,
    ) -> SqlResult<From<'c>> {
        match tf {
            // LATERAL with nothing before it to name is a plain subquery.
            ast::TableFactor::Derived {
                subquery, alias, ..
            } => {
                let Some(alias) = alias else {
                    return Err(SqlError::syntax("subquery in FROM must have an alias")
                        .with_hint("For example, FROM (SELECT ...) [AS] foo."));
                };
                let q = self.query_in_ctx(subquery, ctx)?;
                let mut cols = q.columns.clone();
                rename_columns(&mut cols, alias)?;
                let reads = q.reads.clone();
                let scope = Scope::entry(ident_name(&alias.name), cols).within(ctx);
                Ok(From {
                    rel: Rel::Subquery(Box::new(q)),
                    scope,
                    layout: Vec::new(),
                    reads,
                })
            }
            ast::TableFactor::NestedJoin {
                table_with_joins,
                alias: None,
            } => self.table_with_joins(table_with_joins, None, ctx),
            ast::TableFactor::Table { .. } => self.named_table(tf, ctx),
            other => Err(SqlError::unsupported(format!("FROM {other}"))),
        }
    }

    /// Analyze rule 7: a LATERAL subquery after `left` sees `left`'s columns as an
    /// enclosing query's (`Expr::Outer(1, _)`), so it is run again for each left row.
    /// One that names none of them is a plain subquery. Not after a RIGHT or FULL
    /// join's left side (42P10, PostgreSQL's words). `None`: not a LATERAL subquery.
    fn lateral<'c>(
        &mut self,
        tf: &ast::TableFactor,
        left: &From<'c>,
        kind: JoinKind,
        ctx: &Scope<'c>,
    ) -> SqlResult<Option<From<'c>>> {
        let ast::TableFactor::Derived {
            lateral: true,
            subquery,
            alias: Some(alias),
            ..
        } = tf
        else {
            return Ok(None);
        };
        let lctx = Scope {
            catalog: ctx.catalog,
            parent: Some(&left.scope),
            depth: left.scope.depth + 1,
            ..Scope::default()
        };
        let saved = std::mem::replace(&mut self.min_ref, usize::MAX);
        let q = self.query_in_ctx(subquery, &lctx);
        let reached = std::mem::replace(&mut self.min_ref, saved);
        self.min_ref = self.min_ref.min(reached);
        let q = q?;
        let named = reached <= left.scope.depth;
        if named && matches!(kind, JoinKind::Right | JoinKind::Full) {
            let t = left.scope.qualifiers.first().cloned().unwrap_or_default();
            return Err(SqlError::new(
                "42P10",
                format!("invalid reference to FROM-clause entry for table \"{t}\""),
            )
            .with_detail(
                "The combining JOIN type must be INNER or LEFT for a LATERAL reference.",
            ));
        }
        let mut cols = q.columns.clone();
        rename_columns(&mut cols, alias)?;
        let reads = q.reads.clone();
        Ok(Some(From {
            rel: match named {
                true => Rel::Lateral(Box::new(q)),
                false => Rel::Subquery(Box::new(q)),
            },
            scope: Scope::entry(ident_name(&alias.name), cols).within(ctx),
            layout: Vec::new(),
            reads,
        }))
    }

    /// A named table, view or generate_series call.
    fn named_table<'c>(&mut self, tf: &ast::TableFactor, ctx: &Scope<'c>) -> SqlResult<From<'c>> {
        let ast::TableFactor::Table {
            name, alias, args, ..
        } = tf
        else {
            unreachable!("a table");
        };
        if args.is_none() && name.0.len() == 1 {
            let cte_name = object_name(name)?;
            if let Some(r) = self.cte_rel(&cte_name) {
                let (mut rel, mut cols) = r?;
                if let Some(a) = alias {
                    rename_columns(&mut cols, a)?;
                }
                let q = alias
                    .as_ref()
                    .map(|a| ident_name(&a.name))
                    .unwrap_or(cte_name);
                if let Rel::Subquery(sq) = &mut rel {
                    if let SetTree::Cte(_, _, name) = &mut sq.body {
                        name.clone_from(&q);
                    }
                }
                return Ok(From {
                    rel,
                    scope: Scope::entry(q, cols).within(ctx),
                    layout: Vec::new(),
                    reads: Vec::new(),
                });
            }
        }
        let tname = object_name(name)?;
        if args.is_none() {
            if let Some(v) = catalog(ctx)?.view(&tname)? {
                return self.view_from(&tname, v, alias.as_ref(), ctx);
            }
        }
        let (legacy, scope) = self.bind_from_item(tf, catalog(ctx)?, ctx)?;
        let qualifier = alias
            .as_ref()
            .map(|a| ident_name(&a.name))
            .unwrap_or_else(|| tname.clone());
        let scope = Scope::entry(qualifier.clone(), scope.cols).within(ctx);
        let width = scope.cols.len();
        let rel = match legacy {
            crate::bind::From::Series(start, stop, step, ty) => Rel::Series {
                start,
                stop,
                step,
                ty,
                alias: alias.as_ref().map(|a| ident_name(&a.name)),
            },
            _ if args.is_some() => unreachable!("functions are series"),
            _ if crate::views::schema(&tname).is_some() => Rel::View {
                name: tname.clone(),
                width,
            },
            _ => Rel::Table {
                name: tname.clone(),
                width,
                alias: qualifier,
            },
        };
        let layout = match &rel {
            Rel::Table { .. } => vec![(0, tname, width)],
            _ => Vec::new(),
        };
        Ok(From {
            rel,
            scope,
            layout,
            reads: Vec::new(),
        })
    }

    /// `left JOIN right` with its constraint (analyze rules 1 and 2).
    fn join<'c>(
        &mut self,
        left: From<'c>,
        right: From<'c>,
        kind: JoinKind,
        c: &ast::JoinConstraint,
    ) -> SqlResult<From<'c>> {
        for q in &right.scope.qualifiers {
            if left.scope.qualifiers.contains(q) {
                return Err(SqlError::new(
                    "42712",
                    format!("table name \"{q}\" specified more than once"),
                ));
            }
        }
        let (lw, rw) = (left.rel.width(), right.rel.width());
        let using: Vec<String> = match c {
            ast::JoinConstraint::Using(names) => {
                names.iter().map(object_name).collect::<SqlResult<_>>()?
            }
            ast::JoinConstraint::Natural => {
                let l = bare_names(&left.scope);
                bare_names(&right.scope)
                    .into_iter()
                    .filter(|n| l.contains(n))
                    .collect()
            }
            _ => Vec::new(),
        };
        let mut scope = side_by_side(&left.scope, &right.scope);
        let mut conds = Vec::new();
        let mut merged = Vec::new();
        let mut star = Vec::new();
        let mut hidden = Vec::new();
        for n in &using {
            let li = using_column(&left.scope, n, "left")?;
            let ri = using_column(&right.scope, n, "right")?;
            let (lt, rt) = (left.scope.cols[li].1, right.scope.cols[ri].1);
            let (eq, _) = self.binop(
                Expr::Col(li),
                lt,
                crate::bind::BinOp::Eq,
                Expr::Col(lw + ri),
                rt,
            )?;
            conds.push(eq);
            let t = common_type(&[lt, rt], "JOIN/USING")?;
            let l = self.to_common(Expr::Col(li), lt, t)?;
            let r = self.to_common(Expr::Col(lw + ri), rt, t)?;
            merged.push(match kind {
                JoinKind::Inner | JoinKind::Left | JoinKind::Semi | JoinKind::Anti => l,
                JoinKind::Right => r,
                JoinKind::Full => {
                    Expr::Special(Box::new(crate::conditional::Special::Coalesce(vec![l, r])))
                }
            });
            let at = scope.cols.len();
            scope.cols.push((n.clone(), t));
            scope.owner.push(None);
            scope.bare.push(true);
            star.push(at);
            hidden.extend([li, lw + ri]);
        }
        for i in &hidden {
            scope.bare[*i] = false;
        }
        let rest = scope.star_cols();
        star.extend(rest.into_iter().filter(|i| !hidden.contains(i)));
        scope.star = Some(star);
        let on = match c {
            ast::JoinConstraint::On(e) => Some(self.condition(&scope, e, "JOIN/ON")?),
            _ if conds.is_empty() => None,
            _ if conds.len() == 1 => conds.pop(),
            _ => Some(Expr::Bool(crate::bind::BinOp::And, conds)),
        };
        let mut layout = left.layout;
        layout.extend(right.layout.into_iter().map(|(o, n, w)| (o + lw, n, w)));
        let mut reads = left.reads;
        reads.extend(right.reads);
        let rel = Rel::Join(Box::new(Join {
            kind,
            left: left.rel,
            right: right.rel,
            on,
            merged,
            left_width: lw,
            right_width: rw,
        }));
        if let Rel::Join(j) = &rel {
            let exprs: Vec<&Expr> = j.on.iter().chain(j.merged.iter()).collect();
            reads.extend(columns_read(&layout, &rel, &exprs));
        }
        Ok(From {
            rel,
            scope,
            layout,
            reads,
        })
    }
}

type Parts = (Vec<Expr>, Vec<Expr>, Vec<Agg>, Option<Expr>);

/// A SELECT's targets, grouping and window functions over the rows they are
/// evaluated on (analyze rule 3): regrouped if grouped, window values as columns
/// after the row the Window node reads.
fn grouped_parts(
    (targets, keys, aggs, having): Parts,
    windows: Vec<crate::window::WinFunc>,
    from_width: usize,
    scope: &Scope<'_>,
) -> SqlResult<(Vec<Expr>, Option<Grouping>, Vec<crate::window::WinFunc>)> {
    let grouped = !keys.is_empty() || !aggs.is_empty() || having.is_some();
    let (targets, grouping, windows, width) = if grouped {
        let nk = keys.len();
        let width = nk + aggs.len();
        let regroup = |e: Expr| regroup(e, &keys, nk, scope);
        let targets = targets
            .into_iter()
            .map(regroup)
            .collect::<SqlResult<Vec<_>>>()?;
        let having = having.map(regroup).transpose()?;
        // An ordered-set aggregate's direct arguments read the group (aggorder rule 2).
        let mut aggs = aggs;
        for a in &mut aggs {
            a.direct = std::mem::take(&mut a.direct)
                .into_iter()
                .map(regroup)
                .collect::<SqlResult<_>>()?;
        }
        let windows = windows
            .into_iter()
            .map(|w| crate::window::map_exprs(w, &mut |e| regroup(e)))
            .collect::<SqlResult<Vec<_>>>()?;
        (
            targets,
            Some(Grouping { keys, aggs, having }),
            windows,
            width,
        )
    } else {
        (targets, None, windows, from_width)
    };
    let targets = targets
        .into_iter()
        .map(|e| window_cols(e, width))
        .collect::<SqlResult<Vec<_>>>()?;
    Ok((targets, grouping, windows))
}

/// `Window(i)` as column `base + i` of the Window node's row.
fn window_cols(e: Expr, base: usize) -> SqlResult<Expr> {
    match e {
        Expr::Window(i) => Ok(Expr::Col(base + i)),
        e => e.map_children(&mut |x| window_cols(x, base)),
    }
}

/// The expressions a window function reads (for privileges).
fn window_exprs(w: &crate::window::WinFunc) -> Vec<Expr> {
    let mut v: Vec<Expr> = crate::window::arg_exprs(w).into_iter().cloned().collect();
    v.extend(w.partition.iter().cloned());
    v.extend(w.order.iter().map(|(e, _, _)| e.clone()));
    v
}

/// Refuses what a SELECT may carry that Strata does not carry out (sql rule 6).
fn refuse_select_clauses(sel: &ast::Select) -> SqlResult<()> {
    if sel.into.is_some() {
        return Err(SqlError::unsupported("SELECT INTO"));
    }
    if sel.top.is_some() || !sel.lateral_views.is_empty() || sel.qualify.is_some() {
        return Err(SqlError::unsupported(format!("the clauses of \"{sel}\"")));
    }
    if !sel.cluster_by.is_empty() || !sel.distribute_by.is_empty() || !sel.sort_by.is_empty() {
        return Err(SqlError::unsupported(format!("the clauses of \"{sel}\"")));
    }
    Ok(())
}

/// A GROUP BY query's expression over the grouped row (analyze rule 3).
fn regroup(e: Expr, keys: &[Expr], nk: usize, scope: &Scope) -> SqlResult<Expr> {
    if let Some(k) = keys.iter().position(|g| *g == e) {
        return Ok(Expr::Col(k));
    }
    match e {
        Expr::Agg(i) => Ok(Expr::Col(nk + i)),
        Expr::SubLink(mut l) if l.correlated => {
            let missing = |c: usize| not_grouped(c, scope);
            crate::outer::regroup_subquery(&mut l.query, keys, nk, &missing)?;
            Expr::SubLink(l).map_children(&mut |x| regroup(x, keys, nk, scope))
        }
        Expr::Col(c) => Err(not_grouped(c, scope)),
        e => e.map_children(&mut |x| regroup(x, keys, nk, scope)),
    }
}

/// 42803 for column `c` of a grouped query's FROM row that is no group key.
fn not_grouped(c: usize, scope: &Scope) -> SqlError {
    {
        {
            let name = &scope.cols[c].0;
            let q = scope
                .owner
                .get(c)
                .copied()
                .flatten()
                .map(|o| format!("{}.", scope.qualifiers[o]))
                .unwrap_or_default();
            SqlError::new(
                "42803",
                format!("column \"{q}{name}\" must appear in the GROUP BY clause or be used in an aggregate function"),
            )
        }
    }
}

/// The index of `x` among the targets, appended as a hidden one if absent.
fn target_index(targets: &mut Vec<Expr>, x: Expr) -> usize {
    match targets.iter().position(|t| *t == x) {
        Some(k) => k,
        None => {
            targets.push(x);
            targets.len() - 1
        }
    }
}

/// An ORDER BY key that names an output column: a position or a bare name.
fn output_ref(e: &ast::Expr, columns: &Columns) -> SqlResult<Option<usize>> {
    if let Some(k) = position(e, columns.len(), "ORDER BY")? {
        return Ok(Some(k));
    }
    match e {
        ast::Expr::Identifier(i) => {
            let n = ident_name(i);
            let hits: Vec<usize> = (0..columns.len()).filter(|k| columns[*k].0 == n).collect();
            match hits.as_slice() {
                [] => Ok(None),
                [k] => Ok(Some(*k)),
                _ => Err(SqlError::new(
                    "42702",
                    format!("ORDER BY \"{n}\" is ambiguous"),
                )),
            }
        }
        _ => Ok(None),
    }
}

/// A select-list position written as a number in `clause` (GROUP BY, ORDER BY):
/// its index, 42P10 if there is no such item, None if `e` is not a number.
fn position(e: &ast::Expr, items: usize, clause: &str) -> SqlResult<Option<usize>> {
    let ast::Expr::Value(ast::ValueWithSpan {
        value: ast::Value::Number(n, _),
        ..
    }) = e
    else {
        return Ok(None);
    };
    let k: usize = n.parse().unwrap_or(0);
    if k == 0 || k > items {
        return Err(SqlError::new(
            "42P10",
            format!("{clause} position {n} is not in select list"),
        ));
    }
    Ok(Some(k - 1))
}

/// ORDER BY of a set operation or VALUES: output columns only (analyze rule 5).
fn output_order(ob: &ast::OrderBy, columns: &Columns) -> SqlResult<Vec<SortSpec>> {
    let ast::OrderByKind::Expressions(exprs) = &ob.kind else {
        return Err(SqlError::unsupported("ORDER BY ALL"));
    };
    let mut out = Vec::with_capacity(exprs.len());
    for o in exprs {
        let Some(col) = output_ref(&o.expr, columns)? else {
            return Err(
                SqlError::unsupported("invalid UNION/INTERSECT/EXCEPT ORDER BY clause")
                    .with_detail(
                        "Only result column names can be used, not expressions or functions.",
                    ),
            );
        };
        out.push(sort_spec(col, &o.options)?);
    }
    Ok(out)
}

fn sort_spec(col: usize, o: &ast::OrderByOptions) -> SqlResult<SortSpec> {
    let desc = match &o.sort {
        None | Some(ast::OrderBySort::Asc) => false,
        Some(ast::OrderBySort::Desc) => true,
        Some(_) => return Err(SqlError::unsupported("ORDER BY ... USING")),
    };
    Ok(SortSpec {
        col,
        desc,
        nulls_first: o.nulls_first.unwrap_or(desc),
    })
}

/// The select-list position whose output name is `name`.
fn output_named(projection: &[ast::SelectItem], name: &str) -> Option<usize> {
    projection.iter().position(|it| match it {
        ast::SelectItem::ExprWithAlias { alias, .. } => ident_name(alias) == name,
        ast::SelectItem::UnnamedExpr(e) => default_name(e) == name,
        _ => false,
    })
}

/// `SELECT generate_series(a, b) [AS x], ...` without FROM (analyze rule 9): the
/// set-returning call moved into FROM, as PostgreSQL's ProjectSet gives the same
/// rows there — when it is the only one, stands alone in its select item, and the
/// SELECT neither groups nor aggregates nor is DISTINCT. None otherwise.
fn srf_in_from(sel: &ast::Select) -> Option<ast::Select> {
    use ast::{Expr as E, SelectItem as I};
    if !sel.from.is_empty() || sel.having.is_some() || sel.distinct.is_some() {
        return None;
    }
    if !matches!(&sel.group_by, ast::GroupByExpr::Expressions(g, m) if g.is_empty() && m.is_empty())
    {
        return None;
    }
    let is_srf = |e: &E| {
        matches!(e, E::Function(f) if f.over.is_none() && f.filter.is_none()
        && crate::object_name(&f.name).is_ok_and(|n| n == "generate_series"))
    };
    let at: Vec<usize> = (0..sel.projection.len())
        .filter(|i| match &sel.projection[*i] {
            I::UnnamedExpr(e) | I::ExprWithAlias { expr: e, .. } => is_srf(e),
            _ => false,
        })
        .collect();
    let [at] = at[..] else { return None };
    let mentions = |item: &I| {
        let text = item.to_string().to_ascii_lowercase();
        text.contains("generate_series") || text.contains("over") || text.contains('(')
    };
    if sel
        .projection
        .iter()
        .enumerate()
        .any(|(i, it)| i != at && mentions(it))
    {
        return None;
    }
    let (call, alias) = match &sel.projection[at] {
        I::UnnamedExpr(E::Function(f)) => (f, None),
        I::ExprWithAlias {
            expr: E::Function(f),
            alias,
        } => (f, Some(alias.clone())),
        _ => return None,
    };
    let ast::FunctionArguments::List(list) = &call.args else {
        return None;
    };
    if list.duplicate_treatment.is_some() || !list.clauses.is_empty() {
        return None;
    }
    let col = ast::Ident::new("generate_series");
    let rel = ast::Ident::with_quote('"', "*SRF*");
    let mut out = sel.clone();
    out.from = vec![ast::TableWithJoins {
        relation: ast::TableFactor::Table {
            name: call.name.clone(),
            alias: Some(ast::TableAlias {
                explicit: true,
                name: rel.clone(),
                columns: vec![ast::TableAliasColumnDef::from_name("generate_series")],
                at: None,
            }),
            args: Some(ast::TableFunctionArgs {
                args: list.args.clone(),
                settings: None,
            }),
            with_hints: vec![],
            version: None,
            with_ordinality: false,
            partitions: vec![],
            json_path: None,
            sample: None,
            index_hints: vec![],
        },
        joins: vec![],
    }];
    out.projection[at] = I::ExprWithAlias {
        expr: E::CompoundIdentifier(vec![rel, col.clone()]),
        alias: alias.unwrap_or(col),
    };
    Some(out)
}

/// Two scopes side by side (a join's row before its merged columns).
pub(crate) fn side_by_side<'c>(l: &Scope<'c>, r: &Scope<'c>) -> Scope<'c> {
    let (lw, lq) = (l.cols.len(), l.qualifiers.len());
    let owner_of = |s: &Scope, i: usize| s.owner.get(i).copied().unwrap_or(Some(0));
    let mut owner: Vec<Option<usize>> = (0..lw).map(|i| owner_of(l, i)).collect();
    owner.extend((0..r.cols.len()).map(|i| owner_of(r, i).map(|o| o + lq)));
    let mut bare: Vec<bool> = (0..lw)
        .map(|i| l.bare.get(i).copied().unwrap_or(true))
        .collect();
    bare.extend((0..r.cols.len()).map(|i| r.bare.get(i).copied().unwrap_or(true)));
    let mut star = l.star_cols();
    star.extend(r.star_cols().into_iter().map(|i| i + lw));
    Scope {
        qualifiers: l.qualifiers.iter().chain(&r.qualifiers).cloned().collect(),
        cols: l.cols.iter().chain(&r.cols).cloned().collect(),
        excluded: false,
        owner,
        bare,
        star: Some(star),
        catalog: l.catalog,
        parent: l.parent,
        depth: l.depth,
    }
}

/// The catalog of a query's context (always there in analysis).
fn catalog<'c>(ctx: &Scope<'c>) -> SqlResult<&'c ScopeOf<'c>> {
    ctx.catalog
        .ok_or_else(|| SqlError::unsupported("a query without a catalog"))
}

/// The names a bare reference reaches in a scope (NATURAL's candidates).
fn bare_names(s: &Scope) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for i in s.star_cols() {
        if s.bare.get(i).copied().unwrap_or(true) && !out.contains(&s.cols[i].0) {
            out.push(s.cols[i].0.clone());
        }
    }
    out
}

/// The one column a USING name reaches on one side of a join.
fn using_column(s: &Scope, name: &str, side: &str) -> SqlResult<usize> {
    let hits: Vec<usize> = (0..s.cols.len())
        .filter(|i| s.cols[*i].0 == name && s.bare.get(*i).copied().unwrap_or(true))
        .collect();
    match hits.as_slice() {
        [i] => Ok(*i),
        [] => Err(SqlError::new(
            "42703",
            format!("column \"{name}\" specified in USING clause does not exist in {side} table"),
        )),
        _ => Err(SqlError::new(
            "42702",
            format!("common column name \"{name}\" appears more than once in {side} table"),
        )),
    }
}

/// A subquery's or VALUES' columns renamed by its alias's column list.
pub(crate) fn rename_columns(cols: &mut Columns, alias: &ast::TableAlias) -> SqlResult<()> {
    if alias.columns.len() > cols.len() {
        return Err(SqlError::new(
            "42P10",
            format!(
                "table \"{}\" has {} columns available but {} columns specified",
                ident_name(&alias.name),
                cols.len(),
                alias.columns.len()
            ),
        ));
    }
    for (c, a) in cols.iter_mut().zip(&alias.columns) {
        c.0 = ident_name(&a.name);
    }
    Ok(())
}

/// The tables' columns `exprs` read, by the layout of their FROM row.
fn columns_read(layout: &Layout, rel: &Rel, exprs: &[&Expr]) -> Vec<(String, Vec<usize>)> {
    let _ = rel;
    let mut cols = Vec::new();
    for e in exprs {
        crate::privileges::expr_columns(e, &mut cols);
    }
    layout
        .iter()
        .map(|(off, name, w)| {
            let mut mine: Vec<usize> = cols
                .iter()
                .filter(|c| **c >= *off && **c < off + w)
                .map(|c| c - off)
                .collect();
            mine.sort_unstable();
            mine.dedup();
            (name.clone(), mine)
        })
        .collect()
}

/// Every expression of `q` at its own level into `exprs`; the queries nested at
/// the same level (subqueries in FROM, parenthesized queries, recursive CTE terms)
/// to `nested`. Subqueries in expressions are left inside their `SubLink`s.
pub fn query_exprs<'q>(q: &'q Query, exprs: &mut Vec<&'q Expr>, nested: &mut dyn FnMut(&'q Query)) {
    exprs.extend(q.limit.iter().chain(q.offset.iter()));
    let mut trees = vec![&q.body];
    while let Some(t) = trees.pop() {
        match t {
            SetTree::Select(s) => {
                exprs.extend(s.filter.iter().chain(s.targets.iter()));
                if let Some(g) = &s.grouping {
                    exprs.extend(g.keys.iter().chain(g.having.iter()));
                    for a in &g.aggs {
                        exprs.extend(a.row_exprs().chain(a.direct.iter()));
                    }
                }
                rel_exprs(&s.from, exprs, nested);
            }
            SetTree::Values(rows, _) => exprs.extend(rows.iter().flatten()),
            SetTree::SetOp { left, right, .. } => trees.extend([&**left, &**right]),
            SetTree::Query(inner) | SetTree::Cte(_, inner, _) => nested(inner),
        }
    }
}

fn rel_exprs<'q>(r: &'q Rel, exprs: &mut Vec<&'q Expr>, nested: &mut dyn FnMut(&'q Query)) {
    let mut rels = vec![r];
    while let Some(r) = rels.pop() {
        match r {
            Rel::One | Rel::Table { .. } | Rel::View { .. } | Rel::WorkTable { .. } => {}
            Rel::Series {
                start, stop, step, ..
            } => exprs.extend([start, stop].into_iter().chain(step.iter())),
            Rel::Subquery(q) | Rel::Lateral(q) => nested(q),
            Rel::Recursive(rc) => {
                nested(&rc.init);
                nested(&rc.step);
            }
            Rel::Join(j) => {
                exprs.extend(j.on.iter().chain(j.merged.iter()));
                rels.extend([&j.left, &j.right]);
            }
        }
    }
}
