//! EXPLAIN: a physical plan in PostgreSQL's text format, with its node names, so a
//! PostgreSQL user reads it without learning anything new.
//!
//! Entry point: [`explain`] (a plan and the catalog, to lines of text).
//!
//! Rules (cited as "explain rule N"):
//! 1. Layout is PostgreSQL's: a node's title, its details two spaces in, each
//!    child on a line of its own as `->  title`, six columns deeper per level.
//! 2. Nodes that PostgreSQL folds into another are folded: a filter shows as the
//!    `Filter:` of the node below it, a projection as nothing (its expressions name
//!    the columns above it), a hash join's inner side under a `Hash` node, a
//!    window's sort as a `Sort` below its `WindowAgg`.
//! 3. Expressions are shown as PostgreSQL deparses them: every operator in
//!    parentheses, columns qualified by their relation's name or alias when the
//!    plan reads more than one relation, constants with a cast unless their type is
//!    what their literal form says (`5`, `5.5`, `'x'::text`, `'-1'::integer`).
//! 4. Subqueries in expressions are numbered in the order they are shown: one run
//!    once is an `InitPlan n (returns $k)` whose value is `$k`; one run per row a
//!    `SubPlan n` (`hashed SubPlan n` when its values are hashed), shown after the
//!    node's children.
//! 5. COSTS (on by default) adds each node's `(cost=a..b rows=n width=w)`, the
//!    estimate `cost` computes for the node shown (the top of a folded chain; a
//!    node Strata folds and PostgreSQL shows is costed from its child, `cost`
//!    rule 6). VERBOSE adds each node's `Output:` (its columns, qualified) as
//!    PostgreSQL's does.
//! 7. ANALYZE runs the query with its operators counted (`executor::instrument`)
//!    and shows each node's `(actual time=first..total rows=r loops=n)` per loop
//!    as PostgreSQL does (`(actual rows=r loops=n)` with TIMING OFF, `(never
//!    executed)` for a node that never ran), `Rows Removed by Filter` where a
//!    filter rejected rows, a sort's `Sort Method`, and with SUMMARY (on by
//!    default) the planning and execution times. A node PostgreSQL has and Strata
//!    folds into another (Hash, Materialize, a window's Sort) shows its child's
//!    counts; a subquery's plan is the one that ran, from the statement's cache.
//! 8. BUFFERS (with ANALYZE) adds to each node the pages its run found in the
//!    pool, read, dirtied and wrote (`instrument` rule 5) as PostgreSQL's
//!    `Buffers: shared hit=.. read=.. dirtied=.. written=..` (nonzero parts
//!    only), and planning's under `Planning:`. Temporary files (a sort or hash
//!    that spilled) are not counted.
//! 6. A parallel aggregate shows as PostgreSQL's three nodes: `Finalize` (the
//!    leader combining the groups), `Gather` with `Workers Planned: n`, `Partial`
//!    (each worker's aggregate) over its input, whose shared scan is a
//!    `Parallel Seq Scan`.

use crate::analyze::{JoinKind, SetOp, SortSpec};
use crate::bind::{Agg, AggFunc, Expr, Func};
use crate::conditional::Special;
use crate::cost::{Costs, Est};
use crate::executor::instrument::{Instr, NodeStats};
use crate::executor::SubCache;
use crate::planner::{Plan, Relations};
use crate::subquery::{SubKind, SubLink};
use crate::{Datum, SqlResult, TextOut};

/// EXPLAIN's options, as given (PostgreSQL's defaults where None).
#[derive(Clone, Copy, Debug)]
pub struct Options {
    /// COSTS (on unless turned off).
    pub costs: bool,
    pub analyze: bool,
    pub verbose: bool,
    pub timing: Option<bool>,
    pub summary: Option<bool>,
    /// BUFFERS (with ANALYZE).
    pub buffers: bool,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            costs: true,
            analyze: false,
            verbose: false,
            timing: None,
            summary: None,
            buffers: false,
        }
    }
}

/// What an EXPLAIN ANALYZE's run left (explain rule 7).
pub struct Analysis<'a> {
    pub instr: &'a Instr,
    pub subs: &'a SubCache,
    pub planning: std::time::Duration,
    pub execution: std::time::Duration,
    /// The buffer accesses of planning, with BUFFERS (explain rule 8).
    pub planning_buffers: Option<strata_engine::BufferUsage>,
}

/// A node's counts as shown (explain rule 7).
#[derive(Clone, Default)]
enum Actual {
    /// Not an ANALYZE.
    #[default]
    None,
    Never,
    Ran(NodeStats),
}

/// A node as shown: its title, detail lines, init plans, children and subplans.
#[derive(Default)]
struct Shown {
    title: String,
    /// The node's estimate (explain rule 5), with COSTS.
    est: Option<Est>,
    actual: Actual,
    /// VERBOSE's `Output:` (the node's columns, its projection's if it has one).
    output: Vec<String>,
    details: Vec<String>,
    inits: Vec<(String, Shown)>,
    children: Vec<Shown>,
    subs: Vec<(String, Shown)>,
}

/// What the rendering of a plan carries: the catalog, whether columns are
/// qualified, the enclosing rows' names for outer references, and the numbering of
/// subqueries.
struct Explainer<'r> {
    rels: &'r Relations<'r>,
    /// The nodes' estimates, with COSTS (explain rule 5).
    costs: Option<Costs<'r>>,
    /// The subqueries' plans shown (cost rule 7: kept while the estimates are).
    kept: Vec<std::sync::Arc<Plan>>,
    analysis: Option<&'r Analysis<'r>>,
    /// The statement's plan (where a WITH query's plan that ran is found).
    root: &'r Plan,
    qualify: bool,
    /// The qualified columns of the scan whose conditions are being shown: what
    /// a subquery in them names as its outer row.
    scan: Option<Vec<String>>,
    /// The plan reads more than one relation (or has subqueries).
    several: bool,
    verbose: bool,
    /// The relation names shown so far: a name seen again becomes `name_1`, ...
    /// as PostgreSQL makes its range table's names unique.
    aliases: Vec<String>,
    outer: Vec<Vec<String>>,
    next_plan: usize,
    next_param: usize,
    /// Subqueries met while deparsing the current node's expressions.
    pending_inits: Vec<(String, Shown)>,
    pending_subs: Vec<(String, Shown)>,
    /// The shared WITH queries shown so far, with their columns' names: each
    /// plan is shown once, as `CTE name` at the top (PostgreSQL's initplans).
    ctes: Vec<(usize, Vec<String>)>,
    pending_ctes: Vec<(String, Shown)>,
}

/// The lines of EXPLAIN ([COSTS] [, VERBOSE] [, ANALYZE]) for `plan`; with
/// ANALYZE, `analysis` is what its run left.
pub fn explain<'r>(
    plan: &Plan,
    rels: &'r Relations<'r>,
    o: Options,
    analysis: Option<&Analysis<'_>>,
) -> SqlResult<Vec<String>> {
    let verbose = o.verbose;
    // PostgreSQL qualifies when its range table has more than one entry, which a
    // subquery in an expression also makes (its plan is walked in Debug form: EXPLAIN
    // is not a hot path).
    let several = relations_read(plan) > 1 || format!("{plan:?}").contains("SubLink(");
    let qualify = verbose || several;
    let mut e = Explainer {
        rels,
        costs: o.costs.then(|| Costs::new(rels)),
        kept: Vec::new(),
        analysis,
        root: plan,
        qualify,
        scan: None,
        several,
        verbose,
        aliases: Vec::new(),
        outer: Vec::new(),
        next_plan: 1,
        next_param: 0,
        pending_inits: Vec::new(),
        pending_subs: Vec::new(),
        ctes: Vec::new(),
        pending_ctes: Vec::new(),
    };
    if let Some(c) = e.costs.as_mut() {
        // Top down first: a work table's estimate comes from its recursive
        // union's first part (cost rule 2).
        c.of(plan);
    }
    let (mut shown, _) = e.node(plan)?;
    shown
        .inits
        .splice(0..0, std::mem::take(&mut e.pending_ctes));
    let mut out = Vec::new();
    let timing = o.timing.unwrap_or(true);
    lines(&shown, 0, (verbose, timing), &mut out);
    if let Some(a) = analysis.filter(|_| o.summary.unwrap_or(true)) {
        let ms = |d: std::time::Duration| d.as_secs_f64() * 1000.0;
        if let Some(line) = a.planning_buffers.and_then(|b| buffers_line(&b)) {
            out.push("Planning:".into());
            out.push(format!("  {line}"));
        }
        out.push(format!("Planning Time: {:.3} ms", ms(a.planning)));
        out.push(format!("Execution Time: {:.3} ms", ms(a.execution)));
    }
    Ok(out)
}

/// Explain rule 7: what ANALYZE appends to a node's title.
fn actual_text(a: &Actual, timing: bool) -> String {
    let n = match a {
        Actual::None => return String::new(),
        Actual::Never => return " (never executed)".into(),
        Actual::Ran(n) => n,
    };
    let loops = n.loops.max(1) as f64;
    let rows = n.rows as f64 / loops;
    match timing {
        true => {
            let ms = |d: std::time::Duration| d.as_secs_f64() * 1000.0 / loops;
            format!(
                " (actual time={:.3}..{:.3} rows={rows:.0} loops={})",
                ms(n.first),
                ms(n.total),
                n.loops
            )
        }
        false => format!(" (actual rows={rows:.0} loops={})", n.loops),
    }
}

/// Explain rule 7: the lines ANALYZE adds under a node's own, after its filter.
fn analyzed_details(s: &Shown) -> Vec<String> {
    let Actual::Ran(n) = &s.actual else {
        return s.details.clone();
    };
    let mut out = Vec::new();
    for d in &s.details {
        out.push(d.clone());
        if let (true, Some(r)) = (d.starts_with("Filter: "), n.removed) {
            let per_loop = r as f64 / n.loops.max(1) as f64;
            if r > 0 {
                out.push(format!("Rows Removed by Filter: {per_loop:.0}"));
            }
        }
    }
    if let Some(h) = n.heap_fetches {
        out.push(format!(
            "Heap Fetches: {:.0}",
            h as f64 / n.loops.max(1) as f64
        ));
    }
    out.extend(n.details.iter().cloned());
    out.extend(buffers_line(&n.buffers));
    out
}

/// Explain rule 8: `Buffers: shared hit=h read=r dirtied=d written=w`, each part
/// only when nonzero; None when all are.
fn buffers_line(b: &strata_engine::BufferUsage) -> Option<String> {
    let parts: Vec<String> = [
        ("hit", b.hit),
        ("read", b.read),
        ("dirtied", b.dirtied),
        ("written", b.written),
    ]
    .iter()
    .filter(|(_, n)| *n > 0)
    .map(|(k, n)| format!("{k}={n}"))
    .collect();
    (!parts.is_empty()).then(|| format!("Buffers: shared {}", parts.join(" ")))
}

/// The plan of the WITH query `id` at address `at` (the one that ran) within `p`.
fn cte_plan(p: &Plan, id: usize, at: usize) -> Option<&Plan> {
    if let Plan::CteScan { id: i, plan, .. } = p {
        if *i == id && &**plan as *const Plan as usize == at {
            return Some(plan);
        }
        return cte_plan(plan, id, at);
    }
    p.children().into_iter().find_map(|c| cte_plan(c, id, at))
}

/// How many relations a plan reads (explain rule 3: qualify when more than one).
fn relations_read(p: &Plan) -> usize {
    match p {
        Plan::SeqScan { .. }
        | Plan::IndexScan { .. }
        | Plan::ViewScan { .. }
        | Plan::Series { .. }
        | Plan::Values(_)
        | Plan::WorkTableScan { .. }
        | Plan::CteScan { .. } => 1,
        Plan::Result => 0,
        _ => p.children().into_iter().map(relations_read).sum(),
    }
}

/// Explain rule 1: the node at `depth` and everything below it.
fn lines(s: &Shown, depth: usize, (verbose, timing): (bool, bool), out: &mut Vec<String>) {
    let est = s.est.as_ref().map(|e| format!("  {}", e.text()));
    let title = format!(
        "{}{}{}",
        s.title,
        est.unwrap_or_default(),
        actual_text(&s.actual, timing)
    );
    let title = match depth {
        0 => title,
        d => format!("{}->  {title}", " ".repeat(6 * d - 4)),
    };
    out.push(title);
    let pad = " ".repeat(6 * depth + 2);
    if verbose && !s.output.is_empty() {
        out.push(format!("{pad}Output: {}", s.output.join(", ")));
    }
    for d in analyzed_details(s) {
        out.push(format!("{pad}{d}"));
    }
    let sub = |label: &str, p: &Shown, out: &mut Vec<String>| {
        out.push(format!("{pad}{label}"));
        let mut inner = Vec::new();
        lines(p, depth + 1, (verbose, timing), &mut inner);
        out.extend(inner.into_iter().map(|l| format!("  {l}")));
    };
    for (label, p) in &s.inits {
        sub(label, p, out);
    }
    for c in &s.children {
        lines(c, depth + 1, (verbose, timing), out);
    }
    for (label, p) in &s.subs {
        sub(label, p, out);
    }
}

/// The output columns VERBOSE shows for `p`, whose columns are named `names`: a
/// scan's projection that NULLs the columns only its filter reads (planner rule
/// 9) shows those it gives, as PostgreSQL's scan shows its target list.
fn output_names(p: &Plan, names: &[String]) -> Vec<String> {
    match p {
        Plan::Project { input, exprs }
            if matches!(**input, Plan::SeqScan { .. } | Plan::IndexScan { .. }) =>
        {
            let null = |e: &Expr| matches!(e, Expr::Const(crate::Datum::Null));
            names
                .iter()
                .zip(exprs)
                .filter(|(_, e)| !null(e))
                .map(|(n, _)| n.clone())
                .collect()
        }
        _ => names.to_vec(),
    }
}

fn titled(title: impl Into<String>) -> Shown {
    Shown {
        title: title.into(),
        ..Shown::default()
    }
}

impl Explainer<'_> {
    /// A node as shown and the names of its output columns.
    fn node(&mut self, p: &Plan) -> SqlResult<(Shown, Vec<String>)> {
        let (mut s, names) = self.node_body(p)?;
        if let Some(c) = self.costs.as_mut() {
            s.est = Some(c.of(p));
        }
        // Explain rule 7: a chain of nodes shown as one (a scan under its filter
        // and projection) shows the counts of its top node that ran.
        if let Some(a) = self.analysis {
            match a.instr.stats(p) {
                Some(n) => s.actual = Actual::Ran(n),
                None if matches!(s.actual, Actual::None) => s.actual = Actual::Never,
                None => {}
            }
        }
        s.inits.append(&mut self.pending_inits);
        s.subs.append(&mut self.pending_subs);
        if s.title != "Append" {
            // PostgreSQL shows none for Append, and qualifies a target list only
            // when the plan reads several relations.
            let shown = output_names(p, &names);
            s.output = match (self.several, self.aliases.first()) {
                (false, Some(a)) => {
                    let prefix = format!("{}.", ident(strata_engine::temp::bare(a)));
                    shown.iter().map(|n| n.replace(&prefix, "")).collect()
                }
                _ => shown,
            };
        }
        Ok((s, names))
    }

    /// A child node: its computed columns (not plain column names) in parentheses
    /// where the parent names them, as PostgreSQL shows a reference to a lower
    /// node's expression.
    fn below(&mut self, p: &Plan) -> SqlResult<(Shown, Vec<String>)> {
        let (s, names) = self.node(p)?;
        Ok((s, wrapped(&names)))
    }

    fn node_body(&mut self, p: &Plan) -> SqlResult<(Shown, Vec<String>)> {
        match p {
            Plan::Result => Ok((titled("Result"), Vec::new())),
            Plan::SeqScan {
                table,
                alias,
                filter,
                parallel,
                ..
            } => {
                let alias = &self.unique(alias);
                let (names, local) = self.scan_names(table, alias)?;
                let on = self.on_name(table, alias);
                let parallel = if *parallel { "Parallel " } else { "" };
                let mut s = titled(format!("{parallel}Seq Scan on {on}"));
                let saved = self.scan.replace(names.clone());
                self.filter_line(&mut s, "Filter", filter.as_ref(), &local);
                self.scan = saved;
                Ok((s, names))
            }
            Plan::IndexScan {
                table,
                alias,
                path,
                filter,
                only,
                ..
            } => self.index_scan((table, alias), (path, *only), filter.as_ref()),
            Plan::ViewScan { name, filter } => {
                let names = self.table_names(name, name, self.qualify)?;
                let mut s = titled(format!("Function Scan on {name}"));
                self.filter_line(&mut s, "Filter", filter.as_ref(), &names);
                Ok((s, names))
            }
            Plan::Series { alias, .. } => {
                let a = self.unique(alias.as_deref().unwrap_or("generate_series"));
                let title = match alias {
                    Some(_) => format!("Function Scan on generate_series {}", ident(&a)),
                    None => "Function Scan on generate_series".into(),
                };
                let col = match self.qualify {
                    true => format!("{}.{}", ident(&a), ident(&a)),
                    false => ident(&a),
                };
                Ok((titled(title), vec![col]))
            }
            Plan::Values(rows) => {
                let n = rows.first().map_or(0, Vec::len);
                let names = (1..=n).map(|i| format!("\"*VALUES*\".column{i}")).collect();
                Ok((titled("Values Scan on \"*VALUES*\""), names))
            }
            Plan::Filter { input, cond } => {
                let (mut s, names) = self.node(input)?;
                let text = self.expr(cond, &names)?;
                s.details.push(format!("Filter: {text}"));
                s.inits.append(&mut self.pending_inits);
                s.subs.append(&mut self.pending_subs);
                Ok((s, names))
            }
            Plan::Project { input, exprs } => {
                let (mut s, names) = self.node(input)?;
                let out = exprs
                    .iter()
                    .map(|e| self.expr(e, &names))
                    .collect::<SqlResult<_>>()?;
                s.inits.append(&mut self.pending_inits);
                s.subs.append(&mut self.pending_subs);
                Ok((s, out))
            }
            _ => self.node_more(p),
        }
    }

    fn node_more(&mut self, p: &Plan) -> SqlResult<(Shown, Vec<String>)> {
        match p {
            Plan::Lateral {
                kind,
                outer,
                inner,
                cond,
                ..
            }
            | Plan::NestLoop {
                kind,
                outer,
                inner,
                cond,
                ..
            } => {
                let (o, mut names) = self.below(outer)?;
                // The inner side of a LATERAL join reads the outer row (Outer(1, _)).
                self.outer.push(names.clone());
                let inner = self.below(inner);
                self.outer.pop();
                let (mut i, inames) = inner?;
                names.extend(inames);
                let mut s = titled(join_title("Nested Loop", *kind));
                self.filter_line(&mut s, "Join Filter", cond.as_ref(), &names);
                // A nested loop holds its inner rows (a LATERAL one runs it again).
                if matches!(p, Plan::NestLoop { .. }) && i.title != "Result" {
                    let mut m = titled("Materialize");
                    m.est = i
                        .est
                        .as_ref()
                        .zip(self.units())
                        .map(|(e, u)| e.materialized(&u));
                    m.actual = i.actual.clone();
                    m.output = i.output.clone();
                    m.children.push(i);
                    i = m;
                }
                s.children = vec![o, i];
                Ok((s, names))
            }
            Plan::HashJoin {
                kind,
                outer,
                inner,
                outer_keys,
                inner_keys,
                residual,
                parallel,
                ..
            } => {
                let keys = (outer_keys.as_slice(), inner_keys.as_slice());
                // Parallel rule 7: a shared build is PostgreSQL's Parallel Hash.
                let method = if *parallel { "Parallel Hash" } else { "Hash" };
                let (mut s, names) =
                    self.keyed_join(method, *kind, (outer, inner), keys, residual)?;
                // Explain rule 2: the inner side under its Hash node.
                let i = s.children.pop().expect("a join's inner side");
                let mut hash = titled(method);
                hash.est = i.est.as_ref().map(Est::hashed);
                hash.actual = i.actual.clone();
                hash.output = i.output.clone();
                hash.children.push(i);
                s.children.push(hash);
                Ok((s, names))
            }
            Plan::Agg {
                input,
                keys,
                aggs,
                sorted,
                workers,
            } => self.aggregate(input, (keys, aggs), *sorted, *workers),
            Plan::Sort { input, keys, .. } => {
                // Its rows' names are its input's: only the keys are shown wrapped.
                let (c, names) = self.node(input)?;
                let mut s = titled("Sort");
                s.details
                    .push(format!("Sort Key: {}", sort_keys(keys, &wrapped(&names))));
                s.children.push(c);
                Ok((s, names))
            }
            _ => self.node_rest(p),
        }
    }

    fn node_rest(&mut self, p: &Plan) -> SqlResult<(Shown, Vec<String>)> {
        let one = |me: &mut Self, title: &str, input: &Plan| -> SqlResult<(Shown, Vec<String>)> {
            let (c, names) = me.below(input)?;
            let mut s = titled(title);
            s.children.push(c);
            Ok((s, names))
        };
        match p {
            Plan::Unique { input, cols } => {
                let (c, names) = self.below(input)?;
                let keys: Vec<String> = match cols {
                    Some(cs) => cs.iter().map(|i| names[*i].clone()).collect(),
                    None => names.clone(),
                };
                let sorted = c.title == "Sort";
                let mut s = titled(if sorted { "Unique" } else { "HashAggregate" });
                if !sorted {
                    s.details.push(format!("Group Key: {}", keys.join(", ")));
                }
                s.children.push(c);
                Ok((s, names))
            }
            Plan::Limit { input, .. } => one(self, "Limit", input),
            Plan::Gather { input, workers } => {
                let (c, names) = self.node(input)?;
                let mut s = titled("Gather");
                s.details.push(format!("Workers Planned: {workers}"));
                s.children.push(c);
                Ok((s, names))
            }
            Plan::Window { input, funcs } => self.window(input, funcs),
            Plan::Append(parts) => {
                let mut s = titled("Append");
                let mut names = Vec::new();
                for (i, part) in parts.iter().enumerate() {
                    let (c, n) = self.below(part)?;
                    if i == 0 {
                        names = n;
                    }
                    s.children.push(c);
                }
                Ok((s, names))
            }
            Plan::SetOp {
                op,
                all,
                left,
                right,
            } => self.set_op(*op, *all, left, right),
            Plan::RecursiveUnion { init, step, .. } => {
                let (a, names) = self.below(init)?;
                let (b, _) = self.below(step)?;
                let mut s = titled("Recursive Union");
                s.children = vec![a, b];
                Ok((s, names))
            }
            Plan::MergeJoin {
                kind,
                outer,
                inner,
                outer_keys,
                inner_keys,
                residual,
                ..
            } => {
                let keys = (outer_keys.as_slice(), inner_keys.as_slice());
                self.keyed_join("Merge", *kind, (outer, inner), keys, residual)
            }
            Plan::WorkTableScan { .. } => Ok((titled("WorkTable Scan"), Vec::new())),
            Plan::CteScan {
                id,
                name,
                alias,
                plan,
            } => self.cte_scan(*id, (name, alias), plan),
            _ => unreachable!("every node kind is shown"),
        }
    }

    fn index_scan(
        &mut self,
        (table, alias): (&str, &str),
        (path, only): (&crate::plan::IndexPath, bool),
        filter: Option<&Expr>,
    ) -> SqlResult<(Shown, Vec<String>)> {
        let alias = &self.unique(alias);
        let (qualified, names) = self.scan_names(table, alias)?;
        let saved = self.scan.replace(qualified.clone());
        let r = self.index_conds((table, alias), (path, only), filter, &names);
        self.scan = saved;
        Ok((r?, qualified))
    }

    /// A scan's columns as its parent names them, and as its own conditions do
    /// (qualified only under VERBOSE: PostgreSQL's show_scan_qual).
    fn scan_names(&self, table: &str, alias: &str) -> SqlResult<(Vec<String>, Vec<String>)> {
        Ok((
            self.table_names(table, alias, self.qualify)?,
            self.table_names(table, alias, self.verbose)?,
        ))
    }

    fn index_conds(
        &mut self,
        (table, alias): (&str, &str),
        (path, only): (&crate::plan::IndexPath, bool),
        filter: Option<&Expr>,
        names: &[String],
    ) -> SqlResult<Shown> {
        let entry = self.rels.entry(table)?;
        let ix_cols = entry
            .as_ref()
            .and_then(|e| e.indexes.iter().find(|ix| ix.name == path.index))
            .map(|ix| ix.columns.clone())
            .unwrap_or_default();
        let index = strata_engine::temp::bare(&path.index).to_string();
        let on = self.on_name(table, alias);
        let dir = if path.backward { " Backward" } else { "" };
        let kind = if only {
            "Index Only Scan"
        } else {
            "Index Scan"
        };
        let mut s = titled(format!("{kind}{dir} using {index} on {on}"));
        let mut conds = Vec::new();
        for (pos, op, v) in path.conds() {
            let col = ix_cols.get(pos).and_then(|c| names.get(*c)).cloned();
            let col = col.unwrap_or_else(|| "?".into());
            conds.push(format!("({col} {} {})", op.symbol(), self.expr(v, names)?));
        }
        if let Some(pos) = path.not_null_at() {
            let col = ix_cols.get(pos).and_then(|c| names.get(*c)).cloned();
            conds.push(format!(
                "({} IS NOT NULL)",
                col.unwrap_or_else(|| "?".into())
            ));
        }
        if !conds.is_empty() {
            s.details
                .push(format!("Index Cond: {}", and_text(conds.clone())));
        }
        if let Some(f) = filter {
            // What the range does not enforce (plan rule 3), borrowed: a subquery
            // in it is known by its address (explain rule 7); and not what reads
            // as an index condition.
            let mut rest = Vec::new();
            for c in path.residual(f) {
                let t = self.expr(c, names)?;
                if !conds.contains(&t) {
                    rest.push(t);
                }
            }
            if !rest.is_empty() {
                s.details.push(format!("Filter: {}", and_text(rest)));
            }
        }
        Ok(s)
    }

    /// A hash or merge join: its `Hash Cond` / `Merge Cond`, its Join Filter, its
    /// two sides.
    fn keyed_join(
        &mut self,
        method: &str,
        kind: JoinKind,
        (outer, inner): (&Plan, &Plan),
        (okeys, ikeys): (&[Expr], &[Expr]),
        residual: &Option<Expr>,
    ) -> SqlResult<(Shown, Vec<String>)> {
        let (o, onames) = self.below(outer)?;
        let (i, inames) = self.below(inner)?;
        let mut conds = Vec::new();
        for (a, b) in okeys.iter().zip(ikeys) {
            let (l, r) = (self.expr(a, &onames)?, self.expr(b, &inames)?);
            conds.push(format!("({l} = {r})"));
        }
        let mut names = onames;
        let outer_width = names.len();
        names.extend(inames);
        let mut s = titled(join_title(method, kind));
        // PostgreSQL's Parallel Hash Join still shows a `Hash Cond`.
        let cond = method.trim_start_matches("Parallel ");
        s.details.push(format!("{cond} Cond: {}", and_text(conds)));
        self.filter_line(&mut s, "Join Filter", residual.as_ref(), &names);
        if matches!(kind, JoinKind::Semi | JoinKind::Anti) {
            names.truncate(outer_width);
        }
        s.children = vec![o, i];
        Ok((s, names))
    }

    fn aggregate(
        &mut self,
        input: &Plan,
        (keys, aggs): (&[Expr], &[Agg]),
        sorted: bool,
        workers: usize,
    ) -> SqlResult<(Shown, Vec<String>)> {
        let (c, names) = self.below(input)?;
        let mut out = Vec::new();
        for k in keys {
            out.push(self.expr(k, &names)?);
        }
        for a in aggs {
            out.push(self.agg(a, &names)?);
        }
        let title = match (keys.is_empty(), sorted) {
            (true, _) => "Aggregate",
            (false, true) => "GroupAggregate",
            (false, false) => "HashAggregate",
        };
        let node = |title: String, child: Shown| {
            let mut s = titled(title);
            if !keys.is_empty() {
                s.details
                    .push(format!("Group Key: {}", out[..keys.len()].join(", ")));
            }
            s.output = out.clone();
            s.children.push(child);
            s
        };
        if workers == 0 {
            return Ok((node(title.into(), c), out));
        }
        // Explain rule 6: the leader's Finalize over the workers' Partial.
        let groups = self
            .analysis
            .and_then(|a| a.instr.partial(input))
            .map_or(Actual::None, Actual::Ran);
        let mut partial = node(format!("Partial {title}"), c);
        partial.est = self
            .costs
            .as_mut()
            .map(|k| k.partial(input, (keys, aggs), sorted));
        partial.actual = groups.clone();
        let mut gather = titled("Gather");
        gather.est = partial
            .est
            .as_ref()
            .zip(self.units())
            .map(|(e, u)| e.gathered(&u, workers));
        gather.actual = match groups {
            // The workers ran at once: the Gather's time is one worker's.
            Actual::Ran(n) => {
                let per = n.loops.clamp(1, u32::MAX as u64) as u32;
                Actual::Ran(NodeStats {
                    loops: 1,
                    first: n.first / per,
                    total: n.total / per,
                    ..n
                })
            }
            a => a,
        };
        gather.details.push(format!("Workers Planned: {workers}"));
        gather.output = out.clone();
        gather.children.push(partial);
        Ok((node(format!("Finalize {title}"), gather), out))
    }

    fn window(
        &mut self,
        input: &Plan,
        funcs: &[crate::window::WinFunc],
    ) -> SqlResult<(Shown, Vec<String>)> {
        let (c, mut names) = self.below(input)?;
        let mut s = titled("WindowAgg");
        let first = funcs.first();
        let mut keys = Vec::new();
        if let Some(w) = first {
            for p in &w.partition {
                keys.push(self.expr(p, &names)?);
            }
            for (e, desc, nulls_first) in &w.order {
                keys.push(self.expr(e, &names)? + &direction(*desc, *nulls_first));
            }
        }
        let child = match keys.is_empty() {
            true => c,
            false => {
                let mut sort = titled("Sort");
                sort.est = c
                    .est
                    .as_ref()
                    .zip(self.units())
                    .map(|(e, u)| e.sorted(&u, None));
                sort.actual = c.actual.clone();
                sort.output = c.output.clone();
                sort.details.push(format!("Sort Key: {}", keys.join(", ")));
                sort.children.push(c);
                sort
            }
        };
        s.children.push(child);
        for w in funcs {
            names.push(format!("{:?}", w.kind).to_lowercase());
        }
        Ok((s, names))
    }

    fn set_op(
        &mut self,
        op: SetOp,
        all: bool,
        left: &Plan,
        right: &Plan,
    ) -> SqlResult<(Shown, Vec<String>)> {
        let (a, names) = self.below(left)?;
        let (b, _) = self.below(right)?;
        let mut append = titled("Append");
        if let (Some(x), Some(y)) = (&a.est, &b.est) {
            append.est = Some(Est::appended(&[x.clone(), y.clone()]));
        }
        append.children = vec![a, b];
        let word = match op {
            SetOp::Union => {
                if all {
                    return Ok((append, names));
                }
                let mut s = titled("HashAggregate");
                s.details.push(format!("Group Key: {}", names.join(", ")));
                s.children.push(append);
                return Ok((s, names));
            }
            SetOp::Intersect => "Intersect",
            SetOp::Except => "Except",
        };
        let mut s = titled(format!("HashSetOp {word}{}", if all { " All" } else { "" }));
        s.children.push(append);
        Ok((s, names))
    }

    /// `alias`, or `alias_n` if a relation was already shown by that name.
    /// A shared WITH query's scan; its plan shown at its first (cte rule 2).
    fn cte_scan(
        &mut self,
        id: usize,
        (name, alias): (&str, &str),
        plan: &Plan,
    ) -> SqlResult<(Shown, Vec<String>)> {
        let cols = match self.ctes.iter().find(|(i, _)| *i == id) {
            Some((_, c)) => c.clone(),
            None => {
                let ran = self.analysis.and_then(|a| a.instr.cte_run(id));
                let plan = ran
                    .and_then(|at| cte_plan(self.root, id, at))
                    .unwrap_or(plan);
                let (inner, names) = self.below(plan)?;
                let cols: Vec<String> = names
                    .iter()
                    .map(|n| n.rsplit('.').next().unwrap_or(n).to_string())
                    .collect();
                self.pending_ctes.push((format!("CTE {name}"), inner));
                self.ctes.push((id, cols.clone()));
                cols
            }
        };
        let alias = self.unique(alias);
        let title = match alias == name {
            true => format!("CTE Scan on {name}"),
            false => format!("CTE Scan on {name} {alias}"),
        };
        let names = cols
            .iter()
            .map(|c| match self.qualify {
                true => format!("{alias}.{c}"),
                false => c.clone(),
            })
            .collect();
        Ok((titled(title), names))
    }

    /// The cost units, with COSTS.
    fn units(&self) -> Option<crate::cost::Units> {
        self.costs.as_ref().map(Costs::units)
    }

    fn unique(&mut self, alias: &str) -> String {
        let mut name = alias.to_string();
        let mut n = 0;
        while self.aliases.contains(&name) {
            n += 1;
            name = format!("{alias}_{n}");
        }
        self.aliases.push(name.clone());
        name
    }

    /// A table's columns as expressions name them (explain rule 3).
    fn table_names(&self, table: &str, alias: &str, qualify: bool) -> SqlResult<Vec<String>> {
        let cols: Vec<String> = match self.rels.entry(table)? {
            Some(e) => e.columns.iter().map(|c| c.name.clone()).collect(),
            None => crate::views::schema(table)
                .map(|v| v.into_iter().map(|(n, _)| n).collect())
                .unwrap_or_default(),
        };
        let q = strata_engine::temp::bare(alias);
        Ok(cols
            .into_iter()
            .map(|c| match qualify {
                true => format!("{q}.{}", ident(&c)),
                false => ident(&c),
            })
            .collect())
    }

    fn filter_line(&mut self, s: &mut Shown, what: &str, e: Option<&Expr>, names: &[String]) {
        if let Some(e) = e {
            let text = self.expr(e, names).unwrap_or_else(|_| "?".into());
            s.details.push(format!("{what}: {text}"));
        }
    }
}

impl Explainer<'_> {
    /// `t`, or `t a` when the alias differs; VERBOSE qualifies the table with its
    /// schema (`public.t`, `pg_temp.t`).
    fn on_name(&self, table: &str, alias: &str) -> String {
        let (t, a) = (
            strata_engine::temp::bare(table),
            strata_engine::temp::bare(alias),
        );
        let schema = match t.len() == table.len() {
            true => "public",
            false => "pg_temp",
        };
        let shown = match self.verbose {
            true => format!("{schema}.{}", ident(t)),
            false => ident(t),
        };
        match t == a {
            true => shown,
            false => format!("{shown} {}", ident(a)),
        }
    }
}

fn join_title(method: &str, kind: JoinKind) -> String {
    let k = match kind {
        JoinKind::Inner => "",
        JoinKind::Left => " Left",
        JoinKind::Right => " Right",
        JoinKind::Full => " Full",
        JoinKind::Semi => " Semi",
        JoinKind::Anti => " Anti",
    };
    match (method, kind) {
        ("Nested Loop", JoinKind::Inner) => "Nested Loop".into(),
        ("Nested Loop", _) => format!("Nested Loop{k} Join"),
        (m, _) => format!("{m}{k} Join"),
    }
}

fn and_text(mut parts: Vec<String>) -> String {
    match parts.len() {
        1 => parts.remove(0),
        _ => format!("({})", parts.join(" AND ")),
    }
}

fn direction(desc: bool, nulls_first: bool) -> String {
    match (desc, nulls_first) {
        (false, false) | (true, true) => if desc { " DESC" } else { "" }.into(),
        (false, true) => " NULLS FIRST".into(),
        (true, false) => " DESC NULLS LAST".into(),
    }
}

fn sort_keys(keys: &[SortSpec], names: &[String]) -> String {
    keys.iter()
        .map(|k| {
            let n = names.get(k.col).cloned().unwrap_or_else(|| "?".into());
            n + &direction(k.desc, k.nulls_first)
        })
        .collect::<Vec<_>>()
        .join(", ")
}

/// Names of a node's columns as a node above shows them: an expression in
/// parentheses.
fn wrapped(names: &[String]) -> Vec<String> {
    names
        .iter()
        .map(|n| match plain_column(n) {
            true => n.clone(),
            false => format!("({n})"),
        })
        .collect()
}

/// Whether a shown column is a plain (possibly qualified) column name.
fn plain_column(n: &str) -> bool {
    n.chars()
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_' || c == '"')
        && n.chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '.' | '"' | '*'))
}

/// A name as PostgreSQL quotes it: bare if lower-case letters, digits and `_`.
fn ident(n: &str) -> String {
    let plain = n
        .chars()
        .next()
        .is_some_and(|c| c.is_ascii_lowercase() || c == '_')
        && n.chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_');
    if plain {
        n.to_string()
    } else {
        format!("\"{}\"", n.replace('"', "\"\""))
    }
}

/// A constant as PostgreSQL deparses it (explain rule 3).
fn constant(d: &Datum) -> String {
    let quoted = |s: &str, t: &str| format!("'{}'::{t}", s.replace('\'', "''"));
    let text = d.to_text().unwrap_or_default();
    match d {
        Datum::Null => "NULL".into(),
        Datum::Bool(b) => b.to_string(),
        Datum::Int4(v) if *v >= 0 => text,
        Datum::Int4(_) => quoted(&text, "integer"),
        // Strata coerces an integer literal to the other side's type where
        // PostgreSQL keeps it an integer under a cross-type operator.
        Datum::Int2(v) if *v >= 0 => text,
        Datum::Int8(v) if (0..=i64::from(i32::MAX)).contains(v) => text,
        Datum::Int2(_) => quoted(&text, "smallint"),
        Datum::Int8(_) => quoted(&text, "bigint"),
        Datum::Numeric(_) if !text.starts_with('-') && text.contains('.') => text,
        Datum::Numeric(_) => quoted(&text, "numeric"),
        Datum::Float8(_) => quoted(&text, "double precision"),
        Datum::Float4(_) => quoted(&text, "real"),
        Datum::Text(_) => quoted(&text, "text"),
        Datum::Date(_) => quoted(&text, "date"),
        Datum::Timestamp(_) => quoted(&text, "timestamp without time zone"),
        Datum::TimestampTz(_) => quoted(&text, "timestamp with time zone"),
        Datum::Interval(_) => quoted(&text, "interval"),
        Datum::Time(_) => quoted(&text, "time without time zone"),
        Datum::Uuid(_) => quoted(&text, "uuid"),
        Datum::Bytea(_) => quoted(&text, "bytea"),
        _ => quoted(&text, "unknown"),
    }
}

fn func_name(f: Func) -> String {
    match f {
        Func::BpcharText => "text".into(),
        Func::Now => "now".into(),
        Func::Date(d, _) => d.name().into(),
        Func::Substr => "\"substring\"".into(),
        Func::Str(s, _) => s.name().into(),
        other => {
            let dbg = format!("{other:?}");
            let mut out = String::new();
            for (i, c) in dbg.chars().enumerate() {
                if c.is_ascii_uppercase() && i > 0 {
                    out.push('_');
                }
                out.push(c.to_ascii_lowercase());
            }
            out
        }
    }
}

impl Explainer<'_> {
    /// An expression over a row whose columns are `names` (explain rule 3).
    fn expr(&mut self, e: &Expr, names: &[String]) -> SqlResult<String> {
        let sub = |me: &mut Self, x: &Expr| me.expr(x, names);
        Ok(match e {
            Expr::Const(d) => constant(d),
            Expr::Col(i) => names.get(*i).cloned().unwrap_or_else(|| "?".into()),
            Expr::Param(i) => format!("${}", i + 1),
            Expr::Bin(a, op, b) => {
                format!("({} {} {})", sub(self, a)?, op.symbol(), sub(self, b)?)
            }
            Expr::Bool(op, xs) => {
                let parts = xs
                    .iter()
                    .map(|x| sub(self, x))
                    .collect::<SqlResult<Vec<_>>>()?;
                format!("({})", parts.join(&format!(" {} ", op.symbol())))
            }
            Expr::Not(x) => format!("(NOT {})", sub(self, x)?),
            Expr::Neg(x) => format!("(- {})", sub(self, x)?),
            Expr::IsNull(x, not) => {
                let w = if *not { "IS NOT NULL" } else { "IS NULL" };
                format!("({} {w})", sub(self, x)?)
            }
            Expr::InList(x, list, not) => {
                let l = sub(self, x)?;
                let parts = list
                    .iter()
                    .map(|v| {
                        Ok(format!(
                            "({l} {} {})",
                            if *not { "<>" } else { "=" },
                            sub(self, v)?
                        ))
                    })
                    .collect::<SqlResult<Vec<_>>>()?;
                format!("({})", parts.join(if *not { " AND " } else { " OR " }))
            }
            Expr::Cast(x, t) => match &**x {
                // An integer literal Strata widened where PostgreSQL's cross-type
                // operator keeps it as written.
                Expr::Const(d @ (Datum::Int2(_) | Datum::Int4(_) | Datum::Int8(_)))
                    if t.is_int() && *t != crate::SqlType::Numeric =>
                {
                    constant(d)
                }
                // PostgreSQL folds a cast of a constant when it plans.
                Expr::Const(d) => match crate::bind::cast_datum(d.clone(), *t) {
                    Ok(v) if !v.is_null() => constant(&v),
                    _ => format!("'{}'::{}", d.to_text().unwrap_or_default(), t.name()),
                },
                _ => format!("({})::{}", sub(self, x)?, t.name()),
            },
            Expr::Fit(x, _) => sub(self, x)?,
            Expr::Call(Func::BpcharText, args) => match args.first() {
                Some(a) => format!("({})::text", sub(self, a)?),
                None => "text()".into(),
            },
            Expr::Call(
                Func::Date(crate::datefn::DateFn::Extract | crate::datefn::DateFn::ExtractTz, _),
                args,
            ) if args.len() == 2 => {
                let field = match &args[0] {
                    Expr::Const(Datum::Text(f)) => f.clone(),
                    other => sub(self, other)?,
                };
                format!("EXTRACT({field} FROM {})", sub(self, &args[1])?)
            }
            Expr::Call(f, args) => {
                let parts = args
                    .iter()
                    .map(|x| sub(self, x))
                    .collect::<SqlResult<Vec<_>>>()?;
                format!("{}({})", func_name(*f), parts.join(", "))
            }
            Expr::Agg(i) => format!("agg{i}"),
            Expr::Outer(level, col) => {
                let n = self.outer.len();
                n.checked_sub(*level)
                    .and_then(|i| self.outer.get(i))
                    .and_then(|r| r.get(*col))
                    .cloned()
                    .unwrap_or_else(|| "?".into())
            }
            Expr::SubLink(l) => self.sublink(l, names)?,
            Expr::Window(n) => format!("window{n}"),
            Expr::Special(s) => self.special(s, names)?,
        })
    }

    fn special(&mut self, s: &Special, names: &[String]) -> SqlResult<String> {
        let list = |me: &mut Self, xs: &[Expr]| -> SqlResult<String> {
            Ok(xs
                .iter()
                .map(|x| me.expr(x, names))
                .collect::<SqlResult<Vec<_>>>()?
                .join(", "))
        };
        Ok(match s {
            Special::Case { whens, default } => {
                let mut out = String::from("CASE");
                for (c, v) in whens {
                    out += &format!(
                        " WHEN {} THEN {}",
                        self.expr(c, names)?,
                        self.expr(v, names)?
                    );
                }
                format!("{out} ELSE {} END", self.expr(default, names)?)
            }
            Special::Coalesce(xs) => format!("COALESCE({})", list(self, xs)?),
            Special::NullIf(a, b) => {
                format!("NULLIF({}, {})", self.expr(a, names)?, self.expr(b, names)?)
            }
            Special::Extreme(xs, least) => {
                let f = if *least { "LEAST" } else { "GREATEST" };
                format!("{f}({})", list(self, xs)?)
            }
            Special::Distinct(a, b, not) => {
                let w = if *not {
                    "IS NOT DISTINCT FROM"
                } else {
                    "IS DISTINCT FROM"
                };
                format!("({} {w} {})", self.expr(a, names)?, self.expr(b, names)?)
            }
            Special::BoolTest(x, want, not) => {
                let v = match want {
                    Some(true) => "TRUE",
                    Some(false) => "FALSE",
                    None => "UNKNOWN",
                };
                let n = if *not { "NOT " } else { "" };
                format!("({} IS {n}{v})", self.expr(x, names)?)
            }
            Special::Like {
                expr,
                pattern,
                fold,
                negated,
                ..
            } => {
                let op = match (fold, negated) {
                    (false, false) => "~~",
                    (false, true) => "!~~",
                    (true, false) => "~~*",
                    (true, true) => "!~~*",
                };
                format!(
                    "({} {op} {})",
                    self.expr(expr, names)?,
                    self.expr(pattern, names)?
                )
            }
        })
    }

    fn agg(&mut self, a: &Agg, names: &[String]) -> SqlResult<String> {
        let f = match a.func {
            AggFunc::CountStar => return Ok(self.agg_filter("count(*)".into(), a, names)),
            // Planner rule 14: the column itself, as PostgreSQL's output shows it.
            AggFunc::Any => match &a.arg {
                Some(x) => return self.expr(x, names),
                None => "any",
            },
            AggFunc::Count => "count",
            AggFunc::Sum => "sum",
            AggFunc::Min => "min",
            AggFunc::Max => "max",
            AggFunc::Avg => "avg",
            AggFunc::BoolAnd => "bool_and",
            AggFunc::BoolOr => "bool_or",
            AggFunc::StringAgg => "string_agg",
            AggFunc::Stat(s) => s.name(),
            AggFunc::Ordered(k) => k.name(),
        };
        let mut args = Vec::new();
        for x in a.arg.iter().chain(&a.arg2).chain(&a.direct) {
            args.push(self.expr(x, names)?);
        }
        let mut order = Vec::new();
        for (e, desc, nulls_first) in &a.order {
            let mut k = self.expr(e, names)?;
            if *desc {
                k.push_str(" DESC");
            }
            if *nulls_first != *desc {
                k.push_str(if *nulls_first {
                    " NULLS FIRST"
                } else {
                    " NULLS LAST"
                });
            }
            order.push(k);
        }
        let d = if a.distinct { "DISTINCT " } else { "" };
        let text = match (a.func, order.is_empty()) {
            (_, true) => format!("{f}({d}{})", args.join(", ")),
            (AggFunc::Ordered(_), false) => format!(
                "{f}({}) WITHIN GROUP (ORDER BY {})",
                args.join(", "),
                order.join(", ")
            ),
            _ => format!("{f}({d}{} ORDER BY {})", args.join(", "), order.join(", ")),
        };
        Ok(self.agg_filter(text, a, names))
    }

    fn agg_filter(&mut self, text: String, a: &Agg, names: &[String]) -> String {
        match &a.filter {
            Some(f) => {
                let c = self.expr(f, names).unwrap_or_else(|_| "?".into());
                format!("{text} FILTER (WHERE {c})")
            }
            None => text,
        }
    }

    /// Explain rule 4: a subquery's plan, numbered, and what stands for its value.
    fn sublink(&mut self, l: &SubLink, names: &[String]) -> SqlResult<String> {
        let ran = self.analysis.and_then(|a| a.subs.plan_run(l));
        let plan = match ran {
            Some(p) => p,
            None => std::sync::Arc::new(crate::planner::plan(&l.query, self.rels)?),
        };
        // Kept to the end: the estimates know nodes by their addresses.
        self.kept.push(plan.clone());
        let n = self.next_plan;
        self.next_plan += 1;
        let (inits, subs) = (
            std::mem::take(&mut self.pending_inits),
            std::mem::take(&mut self.pending_subs),
        );
        let scan = self.scan.take();
        self.outer
            .push(scan.clone().unwrap_or_else(|| names.to_vec()));
        let shown = self.node(&plan);
        self.outer.pop();
        self.scan = scan;
        self.pending_inits = inits;
        self.pending_subs = subs;
        let (shown, _) = shown?;
        let hashed = !l.correlated && matches!(l.kind, SubKind::Quantified { all: false, .. });
        if !l.correlated && !hashed {
            let k = self.next_param;
            self.next_param += 1;
            self.pending_inits
                .push((format!("InitPlan {n} (returns ${k})"), shown));
            return Ok(format!("${k}"));
        }
        let label = match hashed {
            true => format!("hashed SubPlan {n}"),
            false => format!("SubPlan {n}"),
        };
        self.pending_subs.push((format!("SubPlan {n}"), shown));
        Ok(format!("({label})"))
    }
}
