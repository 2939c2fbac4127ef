//! WITH RECURSIVE's checks on the statement's text, before any CTE is analyzed:
//! PostgreSQL 15's parse_cte.c (makeDependencyGraph, TopologicalSort,
//! checkWellFormedRecursion).
//!
//! Entry point: [`order`], for a WITH RECURSIVE list.
//!
//! Rules (cited as "recursion rule N"):
//! 1. A reference is an unqualified name in FROM (or the target or USING of a
//!    data-modifying statement) equal to a CTE's name and not hidden by a WITH
//!    inside the walked query; a WITH RECURSIVE hides its names in all its CTEs,
//!    another WITH each name only in the CTEs after it and in its query.
//! 2. A CTE of a WITH RECURSIVE list is recursive if its query references its own
//!    name anywhere. Every CTE of the list may reference any other; the CTEs are
//!    analyzed so that each comes after those it references (PostgreSQL's
//!    topological sort); a cycle through two or more CTEs is 0A000 "mutual
//!    recursion between WITH items is not implemented" at the first unplaced CTE.
//! 3. A recursive CTE's query must be `init UNION [ALL] step` (42P19, at the CTE's
//!    name; a data-modifying query is its own 42P19), and then the reference must
//!    appear exactly once, in `step`, not within a subquery in an expression (a
//!    subquery in FROM is allowed), on the nullable side of an outer join, in
//!    INTERSECT ALL, or in EXCEPT (the right side, or either side of EXCEPT ALL);
//!    each is 42P19 at the reference. `init` and the query's own WITH must not
//!    reference it at all.
//! 4. ORDER BY, OFFSET, LIMIT (FETCH) and FOR UPDATE/SHARE on a recursive CTE's
//!    UNION are 0A000, at the first key, the OFFSET or the LIMIT expression.

use crate::{ident_name, object_name, SqlError, SqlResult};
use sqlparser::ast::{self, Spanned, Visit, Visitor};
use sqlparser::tokenizer::Span;
use std::ops::ControlFlow;

/// Where a reference stands (PostgreSQL's RecursionContext).
#[derive(Clone, Copy, Debug, PartialEq)]
enum Context {
    Ok,
    NonRecursiveTerm,
    Sublink,
    OuterJoin,
    Intersect,
    Except,
}

impl Context {
    /// The 42P19 message for a reference to `name` here (None where allowed).
    fn error(self, name: &str) -> Option<String> {
        let within = match self {
            Context::Ok => return None,
            Context::NonRecursiveTerm => "its non-recursive term",
            Context::Sublink => "a subquery",
            Context::OuterJoin => "an outer join",
            Context::Intersect => "INTERSECT",
            Context::Except => "EXCEPT",
        };
        Some(format!(
            "recursive reference to query \"{name}\" must not appear within {within}"
        ))
    }

    /// This context, or `to` where references are allowed (a stricter context
    /// is kept: PostgreSQL changes only RECURSION_OK).
    fn narrowed(self, to: Context) -> Context {
        match self {
            Context::Ok => to,
            other => other,
        }
    }
}

/// A reference found: which name, where, in what context.
#[derive(Clone, Copy, Debug)]
struct Ref {
    name: usize,
    span: Span,
    context: Context,
}

/// A walk over a query's text collecting references to `names` (recursion rule 1).
struct Walk<'n> {
    names: &'n [String],
    /// The names of the WITHs around what is walked, innermost last.
    hidden: Vec<Vec<String>>,
    context: Context,
    found: Vec<Ref>,
}

impl<'n> Walk<'n> {
    fn new(names: &'n [String], context: Context) -> Self {
        Walk {
            names,
            hidden: Vec::new(),
            context,
            found: Vec::new(),
        }
    }

    /// `f` walked in context `c`, the context restored after.
    fn within(&mut self, c: Context, f: impl FnOnce(&mut Self)) {
        let saved = std::mem::replace(&mut self.context, c);
        f(self);
        self.context = saved;
    }

    /// A query, its WITH hiding its names (recursion rule 1).
    fn query(&mut self, q: &ast::Query) {
        let Some(w) = &q.with else {
            return self.query_rest(q);
        };
        let names: Vec<String> = w
            .cte_tables
            .iter()
            .map(|c| ident_name(&c.alias.name))
            .collect();
        if w.recursive {
            self.hidden.push(names);
            w.cte_tables.iter().for_each(|c| self.query(&c.query));
        } else {
            self.hidden.push(Vec::new());
            for (c, n) in w.cte_tables.iter().zip(names) {
                self.query(&c.query);
                self.hidden.last_mut().expect("pushed").push(n);
            }
        }
        self.query_rest(q);
        self.hidden.pop();
    }

    /// A query's body, ORDER BY, LIMIT/OFFSET and FETCH.
    fn query_rest(&mut self, q: &ast::Query) {
        self.set_expr(&q.body);
        self.exprs(&q.order_by);
        self.exprs(&q.limit_clause);
        self.exprs(&q.fetch);
    }

    /// A set operation tree (PostgreSQL's checkWellFormedSelectStmt).
    fn set_expr(&mut self, s: &ast::SetExpr) {
        match s {
            ast::SetExpr::Select(s) => self.select(s),
            ast::SetExpr::Query(q) => self.query(q),
            ast::SetExpr::SetOperation {
                left,
                op,
                set_quantifier,
                right,
            } => {
                let all = matches!(set_quantifier, ast::SetQuantifier::All);
                let c = self.context;
                let (l, r) = match op {
                    ast::SetOperator::Intersect if all => (Context::Intersect, Context::Intersect),
                    ast::SetOperator::Except if all => (Context::Except, Context::Except),
                    ast::SetOperator::Except => (Context::Ok, Context::Except),
                    _ => (Context::Ok, Context::Ok),
                };
                self.within(c.narrowed(l), |w| w.set_expr(left));
                self.within(c.narrowed(r), |w| w.set_expr(right));
            }
            ast::SetExpr::Values(v) => self.exprs(v),
            ast::SetExpr::Insert(st)
            | ast::SetExpr::Update(st)
            | ast::SetExpr::Delete(st)
            | ast::SetExpr::Merge(st) => self.visit(st, true),
            ast::SetExpr::Table(_) => {}
        }
    }

    /// A SELECT, in PostgreSQL's order: its list, FROM, then the other clauses.
    fn select(&mut self, s: &ast::Select) {
        self.exprs(&s.distinct);
        self.exprs(&s.projection);
        for item in &s.from {
            self.joins(&item.relation, &item.joins);
        }
        self.exprs(&s.selection);
        self.exprs(&s.group_by);
        self.exprs(&s.having);
        self.exprs(&s.named_window);
    }

    /// `first` joined with `joins`, left to right: the last join's sides are
    /// walked in the contexts its kind gives them (an outer join's nullable side:
    /// recursion rule 3), then its condition.
    fn joins(&mut self, first: &ast::TableFactor, joins: &[ast::Join]) {
        let Some((last, rest)) = joins.split_last() else {
            return self.factor(first);
        };
        use ast::JoinOperator as J;
        let (left_nullable, right_nullable, on) = match &last.join_operator {
            J::Left(c) | J::LeftOuter(c) => (false, true, Some(c)),
            J::Right(c) | J::RightOuter(c) => (true, false, Some(c)),
            J::FullOuter(c) => (true, true, Some(c)),
            J::Join(c) | J::Inner(c) | J::CrossJoin(c) => (false, false, Some(c)),
            _ => (false, false, None),
        };
        let c = self.context;
        let side = |nullable: bool| match nullable {
            true => c.narrowed(Context::OuterJoin),
            false => c,
        };
        self.within(side(left_nullable), |w| w.joins(first, rest));
        self.within(side(right_nullable), |w| w.factor(&last.relation));
        if let Some(ast::JoinConstraint::On(e)) = on {
            self.exprs(e);
        }
    }

    /// A FROM item: a name (a possible reference), a subquery (walked in this
    /// context, as PostgreSQL 15 does), a parenthesized join, or another item
    /// whose expressions are walked.
    fn factor(&mut self, f: &ast::TableFactor) {
        match f {
            ast::TableFactor::Table { name, args, .. } => {
                if args.is_none() {
                    self.relation(name);
                }
                self.exprs(args);
            }
            ast::TableFactor::Derived { subquery, .. } => self.query(subquery),
            ast::TableFactor::NestedJoin {
                table_with_joins: t,
                ..
            } => self.joins(&t.relation, &t.joins),
            other => self.exprs(other),
        }
    }

    /// A relation name: a reference if it is one of `names` not hidden
    /// (recursion rule 1).
    fn relation(&mut self, name: &ast::ObjectName) {
        if name.0.len() != 1 {
            return;
        }
        let Ok(n) = object_name(name) else {
            return;
        };
        if self.hidden.iter().any(|h| h.contains(&n)) {
            return;
        }
        if let Some(i) = self.names.iter().position(|x| *x == n) {
            self.found.push(Ref {
                name: i,
                span: name.span(),
                context: self.context,
            });
        }
    }

    /// Any other part of a query: its subqueries walked as subqueries.
    fn exprs<T: Visit>(&mut self, node: &T) {
        self.visit(node, false);
    }

    /// `node`'s subqueries walked as subqueries; with `relations`, the relation
    /// names outside them are references too (a data-modifying statement).
    fn visit<T: Visit>(&mut self, node: &T, relations: bool) {
        let mut v = Nested {
            walk: self,
            depth: 0,
            relations,
        };
        let _ = node.visit(&mut v);
    }
}

/// A visitor handing the outermost subqueries of what it visits to the walk.
struct Nested<'w, 'n> {
    walk: &'w mut Walk<'n>,
    /// How many queries enclose the node visited.
    depth: usize,
    relations: bool,
}

impl Visitor for Nested<'_, '_> {
    type Break = ();

    fn pre_visit_query(&mut self, q: &ast::Query) -> ControlFlow<()> {
        if self.depth == 0 {
            let c = self.walk.context.narrowed(Context::Sublink);
            self.walk.within(c, |w| w.query(q));
        }
        self.depth += 1;
        ControlFlow::Continue(())
    }

    fn post_visit_query(&mut self, _q: &ast::Query) -> ControlFlow<()> {
        self.depth -= 1;
        ControlFlow::Continue(())
    }

    fn pre_visit_relation(&mut self, name: &ast::ObjectName) -> ControlFlow<()> {
        if self.relations && self.depth == 0 {
            self.walk.relation(name);
        }
        ControlFlow::Continue(())
    }
}

/// The order in which a WITH RECURSIVE list's CTEs are analyzed, each with
/// whether it is recursive, after checking each recursive one (recursion rules
/// 2–4).
pub(crate) fn order(w: &ast::With) -> SqlResult<Vec<(usize, bool)>> {
    let names: Vec<String> = w
        .cte_tables
        .iter()
        .map(|c| ident_name(&c.alias.name))
        .collect();
    let mut items = Vec::new();
    for (i, cte) in w.cte_tables.iter().enumerate() {
        let mut walk = Walk::new(&names, Context::Ok);
        walk.query(&cte.query);
        let mut deps: Vec<usize> = walk.found.iter().map(|r| r.name).collect();
        let recursive = deps.contains(&i);
        deps.retain(|&d| d != i);
        items.push(Item {
            id: i,
            recursive,
            deps,
        });
    }
    let sorted = topological_sort(items, w)?;
    for item in sorted.iter().filter(|it| it.recursive) {
        well_formed(&w.cte_tables[item.id], &names[item.id])?;
    }
    Ok(sorted.iter().map(|it| (it.id, it.recursive)).collect())
}

/// A CTE of the list and the others it references.
struct Item {
    id: usize,
    recursive: bool,
    deps: Vec<usize>,
}

/// PostgreSQL's TopologicalSort: at each place the first remaining item with no
/// dependencies left, swapped there (recursion rule 2).
fn topological_sort(mut items: Vec<Item>, w: &ast::With) -> SqlResult<Vec<Item>> {
    for i in 0..items.len() {
        let Some(j) = (i..items.len()).find(|&j| items[j].deps.is_empty()) else {
            let name = &w.cte_tables[items[i].id].alias.name;
            return Err(SqlError::new(
                "0A000",
                "mutual recursion between WITH items is not implemented",
            )
            .at(name.span));
        };
        items.swap(i, j);
        let placed = items[i].id;
        for later in &mut items[i + 1..] {
            later.deps.retain(|&d| d != placed);
        }
    }
    Ok(items)
}

/// A query's parenthesized layers, outermost first: PostgreSQL reads
/// `((a UNION b))` and `(a UNION b) ORDER BY k` as one query.
pub(crate) fn layers(q: &ast::Query) -> Vec<&ast::Query> {
    let mut out = vec![q];
    while let ast::SetExpr::Query(inner) = &*out[out.len() - 1].body {
        out.push(inner);
    }
    out
}

/// A recursive CTE's form and the place of its reference (recursion rules 3–4).
fn well_formed(cte: &ast::Cte, name: &str) -> SqlResult<()> {
    let layers = layers(&cte.query);
    let at = cte.alias.name.span;
    let (left, right) = match &*layers[layers.len() - 1].body {
        ast::SetExpr::SetOperation {
            left,
            op: ast::SetOperator::Union,
            right,
            ..
        } => (left, right),
        ast::SetExpr::Insert(_)
        | ast::SetExpr::Update(_)
        | ast::SetExpr::Delete(_)
        | ast::SetExpr::Merge(_) => {
            return Err(recursion_error(format!(
                "recursive query \"{name}\" must not contain data-modifying statements"
            ))
            .at(at))
        }
        _ => {
            return Err(recursion_error(format!(
                "recursive query \"{name}\" does not have the form non-recursive-term UNION [ALL] recursive-term"
            ))
            .at(at))
        }
    };
    let names = [name.to_string()];
    let mut refs = Vec::new();
    for (context, side) in [(Context::NonRecursiveTerm, left), (Context::Ok, right)] {
        let mut walk = Walk::new(&names, context);
        walk.set_expr(side);
        refs.extend(walk.found);
    }
    for with in layers.iter().filter_map(|q| q.with.as_ref()) {
        let mut walk = Walk::new(&names, Context::Sublink);
        with.cte_tables.iter().for_each(|c| walk.query(&c.query));
        refs.extend(walk.found);
    }
    check_refs(&refs, name)?;
    layers.iter().try_for_each(|q| decorations(q))
}

/// The first misplaced reference, or the second one (recursion rule 3).
fn check_refs(refs: &[Ref], name: &str) -> SqlResult<()> {
    let mut seen = 0;
    for r in refs {
        if let Some(msg) = r.context.error(name) {
            return Err(recursion_error(msg).at(r.span));
        }
        seen += 1;
        if seen > 1 {
            return Err(recursion_error(format!(
                "recursive reference to query \"{name}\" must not appear more than once"
            ))
            .at(r.span));
        }
    }
    Ok(())
}

/// ORDER BY, OFFSET, LIMIT and FOR UPDATE atop a recursive UNION (recursion
/// rule 4), in PostgreSQL's order.
fn decorations(q: &ast::Query) -> SqlResult<()> {
    let unsupported = |what: &str| {
        SqlError::new(
            "0A000",
            format!("{what} in a recursive query is not implemented"),
        )
    };
    if let Some(ob) = &q.order_by {
        let first = match &ob.kind {
            ast::OrderByKind::Expressions(keys) => keys.first().map(|k| start(&k.expr)),
            _ => None,
        };
        let e = unsupported("ORDER BY");
        return Err(match first {
            Some(s) => e.at(s),
            None => e,
        });
    }
    let (limit, offset) = match &q.limit_clause {
        Some(ast::LimitClause::LimitOffset { limit, offset, .. }) => {
            (limit.as_ref(), offset.as_ref().map(|o| &o.value))
        }
        Some(ast::LimitClause::OffsetCommaLimit { offset, limit }) => (Some(limit), Some(offset)),
        None => (None, None),
    };
    let limit = limit.or(q.fetch.as_ref().and_then(|f| f.quantity.as_ref()));
    if let Some(e) = offset {
        return Err(unsupported("OFFSET").at(start(e)));
    }
    if let Some(e) = limit {
        return Err(unsupported("LIMIT").at(start(e)));
    }
    if !q.locks.is_empty() {
        return Err(unsupported("FOR UPDATE/SHARE"));
    }
    Ok(())
}

/// Where PostgreSQL places an expression: a parenthesized subquery at its `(`,
/// which sqlparser's span leaves out (taken as the column before the query;
/// with blanks between them the session's placement moves on to the query).
fn start(e: &ast::Expr) -> Span {
    let mut span = e.span();
    if matches!(e, ast::Expr::Subquery(_)) && span.start.column > 1 {
        span.start.column -= 1;
    }
    span
}

fn recursion_error(msg: String) -> SqlError {
    SqlError::new("42P19", msg)
}
