//! Prepared statements' plans, kept between executions (PostgreSQL's plancache.c).
//!
//! A prepared statement — the extended protocol's Parse, or SQL `PREPARE` — owns a
//! [`PlanCache`]; each execution asks it for a plan.
//!
//! Rules (cited as "plancache rule N"):
//! 1. A query is bound once and kept with its parameters' types; it is bound
//!    again only when stale (rule 4). INSERT, UPDATE and DELETE are kept as rule
//!    10 says; other statements are bound at each execution.
//! 2. Each execution runs a *custom* plan (made for its parameter values) or the
//!    *generic* one (made once, for any values), as PostgreSQL's
//!    choose_custom_plan decides: `plan_cache_mode` `force_custom_plan` or
//!    `force_generic_plan` decide alone; under `auto`, a query without parameters
//!    is generic; the first five executions are custom; after them the generic
//!    plan is taken when its cost is below the custom plans' average, which counts
//!    their planning (1000 × `cpu_operator_cost` × (relations + 1)).
//! 3. A custom plan plans the query with each parameter replaced by its value
//!    where the value has the parameter's type (a NULL, or a value of another type,
//!    stays a parameter), folded again: the estimates see the values, and EXPLAIN
//!    shows them, as PostgreSQL's.
//! 4. What is kept is stale once the committed catalog's version (engine catalog
//!    rule 12) or the session's `search_path` differ from those it was made under:
//!    then the query is bound again and the generic plan dropped. While the
//!    session's transaction has uncommitted catalog changes nothing is kept or
//!    used: they are its alone and may yet roll back.
//! 5. Each execution counts one plan, generic or custom (pg_prepared_statements'
//!    `generic_plans`, `custom_plans`).
//! 6. The privileges of the kept query are checked at every execution, against
//!    the role current then.
//! 7. A query bound again must return the columns' types it returned when first
//!    bound (the client was told them): else 0A000 "cached plan must not change
//!    result type", as PostgreSQL's.
//! 8. SQL's PREPARE binds its statement at once (its errors are PREPARE's) with
//!    the declared parameter types, and keeps it by name for the session's life
//!    (42P05 for a name taken; 26000 for EXECUTE or DEALLOCATE of a name not
//!    kept); DEALLOCATE ALL forgets them all. pg_prepared_statements lists them.
//! 9. EXECUTE evaluates its arguments as one row (no parameters of its own) and
//!    makes each its parameter's type: an untyped literal any type, a value of
//!    the same kind (numbers, date/times, strings) by a cast, else 42804; the
//!    count must match (42601). The statement is bound with the prepared
//!    parameter types ([`Session::binder`]) and runs as its own statement would,
//!    its plans kept as a protocol-prepared statement's are. Likewise a protocol
//!    Parse's declared types bind its statement ([`Session::prepare_typed`]), and
//!    each execution binds it with the types it was described with.
//! 10. An INSERT, UPDATE or DELETE is planned when bound (its index path, its
//!     FROM's query): its custom plan is a binding made at the execution, by the
//!     caller as for any statement; its generic plan the binding kept (rule 4's
//!     key), cloned per execution, its privileges checked (rule 6). Which runs is
//!     rule 2's choice, where both cost the same: after five custom plans the
//!     generic one (it saves the binding), at once without parameters.

use super::{check_params, Block, Bound, PlannerCatalog, ResultSink, Session};
use crate::analyze::Query;
use crate::bind::{Binder, Expr};
use crate::planner::Plan;
use crate::prepare::PreparedStmt;
use crate::{Datum, SqlError, SqlResult, SqlType, Stmt};
use parking_lot::Mutex;
use std::sync::Arc;

/// Rule 2: the custom plans made before the generic plan is weighed.
const CUSTOM_FIRST: u64 = 5;

/// What a prepared statement keeps between its executions (module rules).
#[derive(Default)]
pub struct PlanCache(Mutex<State>);

#[derive(Default)]
struct State {
    kept: Option<Kept>,
    dml: Option<KeptDml>,
    /// The parameters' types described (rules 9 and 10).
    params: Vec<SqlType>,
    /// The result's column types at the first binding (rule 7).
    result: Option<Vec<SqlType>>,
    generic_plans: u64,
    custom_plans: u64,
    /// The custom plans' costs, planning included (rule 2).
    custom_cost: f64,
}

/// Rule 4's key: the committed catalog's version and the session's search_path.
#[derive(Clone, Debug, PartialEq)]
struct Key {
    version: u64,
    search_path: Option<String>,
}

/// A bound query and, once made, its generic plan with its cost (rule 4's key).
struct Kept {
    key: Key,
    query: Arc<Query>,
    params: Vec<SqlType>,
    generic: Option<(Arc<Plan>, f64)>,
}

impl PlanCache {
    /// The cache of a statement described as `d` (rule 7: its result is `d`'s).
    pub fn new(d: &super::Described) -> PlanCache {
        PlanCache(Mutex::new(State {
            result: Some(d.columns.iter().map(|(_, t)| *t).collect()),
            params: d.params.clone(),
            ..State::default()
        }))
    }

    /// The parameter types its statement was described with: every execution
    /// binds it with them (rule 9).
    pub fn declared(&self) -> Vec<SqlType> {
        self.0.lock().params.clone()
    }

    /// The plans made so far: (generic, custom) (rule 5).
    pub fn counts(&self) -> (u64, u64) {
        let s = self.0.lock();
        (s.generic_plans, s.custom_plans)
    }
}

impl std::fmt::Debug for PlanCache {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let (generic, custom) = self.counts();
        f.debug_struct("PlanCache")
            .field("generic_plans", &generic)
            .field("custom_plans", &custom)
            .finish()
    }
}

/// A bound INSERT, UPDATE or DELETE (rule 10).
#[derive(Clone)]
enum DmlBound {
    Insert(super::BoundInsert),
    Update(super::BoundUpdate),
    Delete(super::BoundDelete),
}

impl DmlBound {
    fn into_bound(self) -> Bound<'static> {
        match self {
            DmlBound::Insert(i) => Bound::Insert(i),
            DmlBound::Update(u) => Bound::Update(u),
            DmlBound::Delete(d) => Bound::Delete(d),
        }
    }
}

/// A kept DML binding with rule 4's key and its parameters' types.
struct KeptDml {
    key: Key,
    bound: DmlBound,
    params: Vec<SqlType>,
}

/// Which plan an execution runs (rule 2).
#[derive(Clone, Copy, Debug, PartialEq)]
enum Choice {
    Custom,
    Generic,
}

impl<'e> Session<'e> {
    /// Rule 4's key: the catalog's version and the search_path, or None while the
    /// transaction has uncommitted catalog changes.
    fn cache_key(&self) -> Option<Key> {
        if let Block::Open { txn: Some(t), .. } = &self.block {
            if t.catalog_changed() {
                return None;
            }
        }
        Some(Key {
            version: self.engine.catalog_version(),
            search_path: self.vars.get("search_path").cloned(),
        })
    }

    /// Runs a prepared query or DML statement through its cache; None if the
    /// caller is to bind and run it as any statement (another kind, or a DML
    /// statement's custom plan: rule 10).
    pub(super) fn run_cached(
        &mut self,
        stmt: &Stmt,
        cache: &PlanCache,
        params: &[Datum],
        notices: &mut super::Notices,
        sink: &mut dyn ResultSink,
    ) -> SqlResult<Option<super::Output>> {
        match stmt {
            Stmt::Select(_) => {}
            Stmt::Insert { .. } | Stmt::Update { .. } | Stmt::Delete { .. } => {
                return self.run_cached_dml(stmt, cache, params, notices, sink);
            }
            _ => return Ok(None),
        }
        let (query, plan) = self.cached_plan(stmt, cache, params)?;
        sink.columns(&query.columns)?;
        let subs = crate::executor::SubCache::default();
        let n = self.run_plan(&plan, params, &subs, &mut |r| sink.row(r))?;
        Ok(Some(super::Output::Rows(n)))
    }

    /// Rule 10: a DML statement's generic plan is its kept binding (made again
    /// when stale, rule 4); a custom one is a binding made now, by the caller.
    fn run_cached_dml(
        &mut self,
        stmt: &Stmt,
        cache: &PlanCache,
        params: &[Datum],
        notices: &mut super::Notices,
        sink: &mut dyn ResultSink,
    ) -> SqlResult<Option<super::Output>> {
        let custom = {
            let s = cache.0.lock();
            match self.vars.get("plan_cache_mode").map(String::as_str) {
                Some("force_custom_plan") => true,
                Some("force_generic_plan") => false,
                _ => !s.params.is_empty() && s.custom_plans < CUSTOM_FIRST,
            }
        };
        if custom {
            cache.0.lock().custom_plans += 1;
            return Ok(None);
        }
        let key = self.cache_key();
        let (bound, types) = self.kept_dml(stmt, cache, &key)?;
        check_params(types.len(), params)?;
        let bound = bound.into_bound();
        self.check_privileges(&bound)?;
        cache.0.lock().generic_plans += 1;
        let mut b = Binder::default();
        b.params = types;
        self.dispatch(bound, &mut b, params, notices, sink)
            .map(Some)
    }

    /// The kept binding of a DML statement if fresh, else one made now (and kept
    /// when the key allows, rule 4).
    fn kept_dml(
        &self,
        stmt: &Stmt,
        cache: &PlanCache,
        key: &Option<Key>,
    ) -> SqlResult<(DmlBound, Vec<SqlType>)> {
        let s = cache.0.lock();
        if let Some(k) = s.dml.as_ref().filter(|k| key.as_ref() == Some(&k.key)) {
            return Ok((k.bound.clone(), k.params.clone()));
        }
        drop(s);
        let rewritten = crate::updatable::dml_on_view(self, stmt)?;
        let stmt = rewritten.as_ref().unwrap_or(stmt);
        let mut b = self.binder();
        let bound = match self.bind(stmt, &mut b)? {
            Bound::Insert(i) => DmlBound::Insert(i),
            Bound::Update(u) => DmlBound::Update(u),
            Bound::Delete(d) => DmlBound::Delete(d),
            _ => return Err(not_kept()),
        };
        if let Some(key) = key {
            cache.0.lock().dml = Some(KeptDml {
                key: key.clone(),
                bound: bound.clone(),
                params: b.params.clone(),
            });
        }
        Ok((bound, b.params))
    }

    /// A prepared query's plan for these parameter values, by rule 2's choice,
    /// counted (rule 5); its privileges checked (rule 6).
    fn cached_plan(
        &self,
        stmt: &Stmt,
        cache: &PlanCache,
        params: &[Datum],
    ) -> SqlResult<(Arc<Query>, Arc<Plan>)> {
        let key = self.cache_key();
        let (query, types) = self.kept_query(stmt, cache, &key)?;
        check_params(types.len(), params)?;
        let who = self.who()?;
        if !who.superuser {
            self.check_select(&who, &query)?; // rule 6
        }
        let plan = match self.choose(cache, &query, &types, &key)? {
            (Choice::Generic, Some(plan)) => {
                cache.0.lock().generic_plans += 1;
                plan
            }
            _ => {
                let (plan, cost) = self.custom_plan(&query, &types, params)?;
                let mut s = cache.0.lock();
                s.custom_plans += 1;
                s.custom_cost += cost;
                plan
            }
        };
        Ok((query, plan))
    }

    /// The kept query if it is fresh, else `stmt` bound again (and kept when the
    /// key allows, rule 4).
    fn kept_query(
        &self,
        stmt: &Stmt,
        cache: &PlanCache,
        key: &Option<Key>,
    ) -> SqlResult<(Arc<Query>, Vec<SqlType>)> {
        let s = cache.0.lock();
        if let Some(k) = s.kept.as_ref().filter(|k| key.as_ref() == Some(&k.key)) {
            return Ok((Arc::clone(&k.query), k.params.clone()));
        }
        drop(s);
        let mut b = self.binder();
        let Bound::Select(q) = self.bind(stmt, &mut b)? else {
            return Err(not_kept());
        };
        let query: Arc<Query> = Arc::from(q);
        let types: Vec<SqlType> = query.columns.iter().map(|(_, t)| *t).collect();
        let mut s = cache.0.lock();
        match &s.result {
            Some(was) if *was != types => {
                return Err(SqlError::new(
                    "0A000",
                    "cached plan must not change result type",
                ))
            }
            Some(_) => {}
            None => s.result = Some(types),
        }
        if let Some(key) = key {
            s.kept = Some(Kept {
                key: key.clone(),
                query: Arc::clone(&query),
                params: b.params.clone(),
                generic: None,
            });
        }
        Ok((query, b.params))
    }

    /// Rule 2's choice, with the generic plan when it is chosen (made, and kept
    /// when the key allows, if there is none: PostgreSQL too makes it to weigh it).
    fn choose(
        &self,
        cache: &PlanCache,
        query: &Arc<Query>,
        types: &[SqlType],
        key: &Option<Key>,
    ) -> SqlResult<(Choice, Option<Arc<Plan>>)> {
        let auto = match self.vars.get("plan_cache_mode").map(String::as_str) {
            Some("force_custom_plan") => return Ok((Choice::Custom, None)),
            Some("force_generic_plan") => false,
            _ => !types.is_empty(),
        };
        let (customs, spent) = {
            let s = cache.0.lock();
            (s.custom_plans, s.custom_cost)
        };
        if auto && customs < CUSTOM_FIRST {
            return Ok((Choice::Custom, None));
        }
        let (plan, cost) = self.generic_plan(cache, query, key)?;
        if auto && cost >= spent / customs as f64 {
            return Ok((Choice::Custom, None));
        }
        Ok((Choice::Generic, Some(plan)))
    }

    /// The kept generic plan and its cost, made (and kept, rule 4) if there is none.
    fn generic_plan(
        &self,
        cache: &PlanCache,
        query: &Arc<Query>,
        key: &Option<Key>,
    ) -> SqlResult<(Arc<Plan>, f64)> {
        let kept = cache.0.lock().kept.as_ref().and_then(|k| {
            let fresh = key.as_ref() == Some(&k.key);
            k.generic.clone().filter(|_| fresh)
        });
        if let Some(g) = kept {
            return Ok(g);
        }
        let plan = Arc::new(self.plan_statement(query)?);
        let cost = self.plan_cost(&plan, false);
        if key.is_some() {
            if let Some(k) = cache.0.lock().kept.as_mut() {
                k.generic = Some((Arc::clone(&plan), cost));
            }
        }
        Ok((plan, cost))
    }

    /// Rule 3: the query planned for these parameter values, and its cost with
    /// its planning.
    fn custom_plan(
        &self,
        query: &Query,
        types: &[SqlType],
        params: &[Datum],
    ) -> SqlResult<(Arc<Plan>, f64)> {
        let mut q = query.clone();
        crate::outer::visit_query_post_mut(&mut q, 0, &mut |e, _| {
            if let Expr::Param(i) = e {
                let v = params.get(*i).filter(|v| !v.is_null());
                if let Some(v) = v.filter(|v| types.get(*i) == Some(&crate::bind::type_of(v))) {
                    *e = Expr::Const(v.clone());
                }
            }
            crate::fold::fold_node(e);
            Ok(())
        })?;
        let plan = Arc::new(self.plan_statement(&q)?);
        let cost = self.plan_cost(&plan, true);
        Ok((plan, cost))
    }

    /// A plan's total cost; with `planning`, PostgreSQL's charge for making it
    /// (rule 2).
    fn plan_cost(&self, plan: &Plan, planning: bool) -> f64 {
        let rels = PlannerCatalog::new(self);
        let mut costs = crate::cost::Costs::new(&rels);
        let total = costs.of(plan).total;
        if !planning {
            return total;
        }
        total + 1000.0 * costs.units().cpu_operator * (relations(plan) + 1) as f64
    }
}

/// The relations a plan reads (PostgreSQL's range table, near enough).
fn relations(p: &Plan) -> usize {
    let own = matches!(
        p,
        Plan::SeqScan { .. } | Plan::IndexScan { .. } | Plan::ViewScan { .. }
    ) as usize;
    own + p.children().into_iter().map(relations).sum::<usize>()
}

/// One statement of SQL's PREPARE (rules 8-10).
pub(crate) struct SqlPrepared {
    stmt: Stmt,
    plans: PlanCache,
    /// Every parameter's type: the declared ones, then those inferred.
    params: Vec<SqlType>,
    /// Its result's columns, as described when prepared.
    columns: Vec<(String, SqlType)>,
    /// The query string that held the PREPARE (prepare rule 3).
    text: String,
    /// When it was prepared (microseconds since 2000-01-01).
    at: i64,
}

impl<'e> Session<'e> {
    /// PREPARE, EXECUTE, DEALLOCATE (rules 8-10).
    pub(super) fn prepared_stmt(
        &mut self,
        p: &PreparedStmt,
        notices: &mut super::Notices,
        sink: &mut dyn ResultSink,
    ) -> SqlResult<super::Output> {
        use super::Output;
        match p {
            PreparedStmt::Prepare(pr) => {
                if self.prepared.contains_key(&pr.name) {
                    return Err(SqlError::new(
                        "42P05",
                        format!("prepared statement \"{}\" already exists", pr.name),
                    ));
                }
                let d = self.with_declared(pr.types.clone(), |s| s.describe(&pr.stmt))?;
                let prepared = SqlPrepared {
                    stmt: pr.stmt.clone(),
                    plans: PlanCache::new(&d),
                    params: d.params,
                    columns: d.columns,
                    text: pr.text.clone(),
                    at: crate::time::now_us(),
                };
                self.prepared.insert(pr.name.clone(), Arc::new(prepared));
                Ok(Output::Command("PREPARE".into()))
            }
            PreparedStmt::Execute { name, args } => self.sql_execute(name, args, notices, sink),
            PreparedStmt::Explain {
                name,
                args,
                options,
            } => {
                let lines = self.explain_execute(name, args, *options)?;
                sink.columns(&[("QUERY PLAN".into(), SqlType::Text)])?;
                let n = lines.len() as u64;
                for l in lines {
                    sink.row(vec![Datum::Text(l)])?;
                }
                Ok(Output::Rows(n))
            }
            PreparedStmt::Deallocate(None) => {
                self.prepared.clear();
                Ok(Output::Command("DEALLOCATE ALL".into()))
            }
            PreparedStmt::Deallocate(Some(name)) => match self.prepared.remove(name) {
                Some(_) => Ok(Output::Command("DEALLOCATE".into())),
                None => Err(no_such(name)),
            },
        }
    }

    /// EXECUTE: the arguments evaluated and made the parameters' types, the
    /// statement run through its cache with its parameters typed as prepared.
    fn sql_execute(
        &mut self,
        name: &str,
        args: &[sqlparser::ast::Expr],
        notices: &mut super::Notices,
        sink: &mut dyn ResultSink,
    ) -> SqlResult<super::Output> {
        let p = self.prepared_for(name, args)?;
        let values = self.argument_values(args, &p.params)?;
        self.with_declared(p.params.clone(), |s| {
            s.execute_inner(&p.stmt, Some(&p.plans), &values, notices, sink)
        })
    }

    /// EXPLAIN EXECUTE: the plan the execution would run, by rule 2's choice and
    /// counted as PostgreSQL counts it; with ANALYZE, run.
    fn explain_execute(
        &mut self,
        name: &str,
        args: &[sqlparser::ast::Expr],
        o: crate::explain::Options,
    ) -> SqlResult<Vec<String>> {
        let p = self.prepared_for(name, args)?;
        if !matches!(p.stmt, Stmt::Select(_)) {
            return Err(SqlError::unsupported(format!(
                "EXPLAIN of {}",
                p.stmt.verb()
            )));
        }
        let began = (std::time::Instant::now(), strata_engine::buffer_usage());
        let values = self.argument_values(args, &p.params)?;
        let planned = self.with_declared(p.params.clone(), |s| {
            s.cached_plan(&p.stmt, &p.plans, &values)
        });
        let (_, plan) = planned?;
        self.explain_plan(&plan, o, &values, began)
    }

    /// The statement kept as `name`, if `args` are as many as its parameters.
    fn prepared_for(
        &self,
        name: &str,
        args: &[sqlparser::ast::Expr],
    ) -> SqlResult<Arc<SqlPrepared>> {
        let p = Arc::clone(self.prepared.get(name).ok_or_else(|| no_such(name))?);
        if args.len() != p.params.len() {
            return Err(SqlError::new(
                "42601",
                format!("wrong number of parameters for prepared statement \"{name}\""),
            )
            .with_detail(format!(
                "Expected {} parameters but got {}.",
                p.params.len(),
                args.len()
            )));
        }
        Ok(p)
    }

    /// EXECUTE's arguments, evaluated as one row without FROM and each made its
    /// parameter's type (PostgreSQL's assignment coercion; 42804 where none is).
    fn argument_values(
        &self,
        args: &[sqlparser::ast::Expr],
        types: &[SqlType],
    ) -> SqlResult<Vec<Datum>> {
        if args.is_empty() {
            return Ok(Vec::new());
        }
        let list: Vec<String> = args.iter().map(|a| a.to_string()).collect();
        let parsed = crate::parse(&format!("SELECT {}", list.join(", ")))?;
        let Some(select) = parsed.into_iter().next() else {
            return Err(not_kept());
        };
        let mut b = Binder::default();
        let Bound::Select(q) = self.bind(&select, &mut b)? else {
            return Err(not_kept());
        };
        if !b.params.is_empty() {
            return Err(SqlError::new("42P02", "there is no parameter $1"));
        }
        let mut row = Vec::new();
        self.run_query(&q, &[], &mut |r| {
            row = r;
            Ok(())
        })?;
        let mut out = Vec::with_capacity(types.len());
        for (i, (d, to)) in row.into_iter().zip(types).enumerate() {
            // An untyped literal ('5') is untyped here too, whatever the row made it.
            let from = match &args[i] {
                sqlparser::ast::Expr::Value(v) if v.value.clone().into_string().is_some() => {
                    SqlType::Unknown
                }
                _ => q.columns[i].1,
            };
            if !assignable(from, *to) {
                return Err(SqlError::new(
                    "42804",
                    format!(
                        "parameter ${} of type {} cannot be coerced to the expected type {}",
                        i + 1,
                        from.name(),
                        to.name()
                    ),
                )
                .with_hint("You will need to rewrite or cast the expression."));
            }
            out.push(match d {
                Datum::Null => Datum::Null,
                d if from == *to => d,
                d => crate::bind::cast_datum(d, *to)?,
            });
        }
        Ok(out)
    }

    /// The columns `p` returns: EXECUTE's are its statement's (Describe).
    pub(super) fn prepared_columns(&self, p: &PreparedStmt) -> Vec<(String, SqlType)> {
        match p {
            PreparedStmt::Execute { name, .. } => self
                .prepared
                .get(name)
                .map_or_else(Vec::new, |p| p.columns.clone()),
            _ => Vec::new(),
        }
    }

    /// pg_prepared_statements: this session's SQL-prepared statements.
    pub(super) fn prepared_rows(&self) -> Vec<Vec<Datum>> {
        let mut names: Vec<&String> = self.prepared.keys().collect();
        names.sort();
        names
            .into_iter()
            .map(|n| {
                let p = &self.prepared[n];
                let types: Vec<&str> = p.params.iter().map(|t| t.name()).collect();
                let (generic, custom) = p.plans.counts();
                vec![
                    Datum::Text(n.clone()),
                    Datum::Text(p.text.clone()),
                    Datum::TimestampTz(p.at),
                    Datum::Text(format!("{{{}}}", types.join(","))),
                    Datum::Bool(true),
                    Datum::Int8(generic as i64),
                    Datum::Int8(custom as i64),
                ]
            })
            .collect()
    }

    /// `f` run with the statement's parameters typed `types` (rule 9), the types
    /// before restored after.
    pub(super) fn with_declared<R>(
        &mut self,
        types: Vec<SqlType>,
        f: impl FnOnce(&mut Self) -> R,
    ) -> R {
        let prior = std::mem::replace(&mut self.declared, types);
        let r = f(self);
        self.declared = prior;
        r
    }

    /// A fresh binder, its parameters typed as the statement running was
    /// prepared with (rule 9).
    pub(super) fn binder(&self) -> Binder {
        let mut b = Binder::default();
        b.params.clone_from(&self.declared);
        b
    }
}

/// A statement that bound as another kind than it parsed as (never expected: an
/// error rather than a panic, server rule).
fn not_kept() -> SqlError {
    SqlError::new(
        "XX000",
        "a prepared statement bound as another kind of statement",
    )
}

fn no_such(name: &str) -> SqlError {
    SqlError::new(
        "26000",
        format!("prepared statement \"{name}\" does not exist"),
    )
}

/// Whether EXECUTE's argument of type `from` may become a parameter of type `to`
/// (rule 9): an untyped literal, anything into a string (PostgreSQL's I/O
/// conversion casts), or a type of the same kind.
fn assignable(from: SqlType, to: SqlType) -> bool {
    use SqlType as T;
    let numeric = |t| {
        matches!(
            t,
            T::Int2 | T::Int4 | T::Int8 | T::Numeric | T::Float4 | T::Float8
        )
    };
    let datetime = |t| matches!(t, T::Date | T::Timestamp | T::TimestampTz);
    let text = |t| matches!(t, T::Text | T::Bpchar);
    from == to
        || from == T::Unknown
        || (numeric(from) && numeric(to))
        || (datetime(from) && datetime(to))
        || text(to)
}
