//! Aggregate functions: their binding (argument, result type, DISTINCT, FILTER)
//! and their running state.
//!
//! Entry points: [`Binder::aggregate`] (an aggregate call in a select list, HAVING
//! or ORDER BY), [`AggState`] (`new`, `step` per input row, `finish`).
//!
//! Rules (cited as "aggregate rule N"):
//! 1. The aggregates are PostgreSQL's with its result types: count (bigint), sum
//!    (bigint of smallint/integer, numeric of bigint/numeric, the float's own type),
//!    avg (numeric of integers and numeric, double of floats), min / max (the
//!    argument's type), bool_and / bool_or / every (boolean), string_agg (text),
//!    and the statistics of [`crate::moments`] (variance, stddev, covariance,
//!    correlation, regression).
//! 2. NULL inputs are skipped; over no rows count is 0 and the others NULL.
//! 3. `agg(DISTINCT x)` counts each distinct non-NULL value once; `FILTER (WHERE c)`
//!    feeds only the rows where c is true. An aggregate inside another's argument
//!    is 42803.
//! 4. Memory: O(1) per aggregate, except DISTINCT (its distinct values) and
//!    string_agg (its result).

use crate::bind::{cast_datum, compare, is_true, Agg, AggFunc, Binder, Expr, Scope};
use crate::object_name;
use crate::{Datum, SqlError, SqlResult, SqlType};
use sqlparser::ast;
use std::cmp::Ordering;
use std::collections::HashSet;

/// The aggregate `name` names (with `*` only count), if any.
pub fn agg_func(name: &str, star: bool) -> Option<AggFunc> {
    Some(match name {
        "count" if star => AggFunc::CountStar,
        "count" => AggFunc::Count,
        "sum" => AggFunc::Sum,
        "min" => AggFunc::Min,
        "max" => AggFunc::Max,
        "avg" => AggFunc::Avg,
        "bool_and" | "every" => AggFunc::BoolAnd,
        "bool_or" => AggFunc::BoolOr,
        "string_agg" => AggFunc::StringAgg,
        _ => AggFunc::Stat(crate::moments::Stat::from_name(name)?),
    })
}

/// The result type of `func` over an argument of type `t` (aggregate rule 1).
fn result_type(func: AggFunc, name: &str, t: SqlType) -> SqlResult<SqlType> {
    let missing = || {
        SqlError::new(
            "42883",
            format!("function {name}({}) does not exist", t.name()),
        )
        .with_hint("No function matches the given name and argument types. You might need to add explicit type casts.")
    };
    Ok(match func {
        AggFunc::CountStar | AggFunc::Count => SqlType::Int8,
        AggFunc::Sum if matches!(t, SqlType::Int2 | SqlType::Int4) => SqlType::Int8,
        AggFunc::Sum if t.is_int() => SqlType::Numeric,
        AggFunc::Sum if t.is_number() || t == SqlType::Interval => t,
        AggFunc::Avg if matches!(t, SqlType::Float4 | SqlType::Float8) => SqlType::Float8,
        AggFunc::Avg if t.is_number() => SqlType::Numeric,
        AggFunc::Avg if t == SqlType::Interval => t,
        AggFunc::BoolAnd | AggFunc::BoolOr if t == SqlType::Bool => t,
        AggFunc::StringAgg if matches!(t, SqlType::Text | SqlType::Bpchar) => SqlType::Text,
        AggFunc::StringAgg if t == SqlType::Bytea => t,
        AggFunc::Min | AggFunc::Max => t,
        AggFunc::Stat(s) => s.result_type(t).ok_or_else(missing)?,
        _ => return Err(missing()),
    })
}

impl Binder {
    /// An aggregate call (aggregate rules 1 and 3), appended to `list`; its value
    /// in the bound expression is `Expr::Agg(n)`.
    pub(crate) fn aggregate(
        &mut self,
        scope: &Scope,
        f: &ast::Function,
        func: AggFunc,
        list: Option<&mut Vec<Agg>>,
    ) -> SqlResult<(Expr, SqlType)> {
        self.aggregate_with(scope, f, list, |b| b.bind_agg(scope, f, func))
    }

    /// An aggregate call bound by `bind`, appended to `list` (aggregate rule 3).
    pub(crate) fn aggregate_with(
        &mut self,
        scope: &Scope,
        f: &ast::Function,
        list: Option<&mut Vec<Agg>>,
        bind: impl FnOnce(&mut Binder) -> SqlResult<Agg>,
    ) -> SqlResult<(Expr, SqlType)> {
        if let Some(clause) = self.aggs_refused_in {
            // As PostgreSQL decides by the aggregate's level: one of this query is
            // refused in the clause; one of an outer query is nested in the
            // aggregate whose clause this is.
            let (before, refused) = (self.in_agg, self.aggs_refused_in.take());
            self.in_agg = true;
            let agg = bind(self);
            (self.in_agg, self.aggs_refused_in) = (before, refused);
            let (local, up) = crate::outer::agg_level(&agg?)?;
            if !local && up != usize::MAX {
                return Err(SqlError::new(
                    "42803",
                    "aggregate function calls cannot be nested",
                ));
            }
            return Err(SqlError::new(
                "42803",
                format!("aggregate functions are not allowed in {clause}"),
            ));
        }
        if self.in_agg {
            return Err(SqlError::new(
                "42803",
                "aggregate function calls cannot be nested",
            ));
        }
        self.in_agg = true;
        let agg = bind(self);
        self.in_agg = false;
        let agg = agg?;
        let ty = agg.ty;
        if let Some(outer) = self.lift_agg(scope, &agg)? {
            return Ok((outer, ty));
        }
        let Some(list) = list else {
            return Err(SqlError::new(
                "42803",
                format!(
                    "aggregate functions are not allowed here ({})",
                    object_name(&f.name)?
                ),
            ));
        };
        list.push(agg);
        Ok((Expr::Agg(list.len() - 1), ty))
    }

    /// An aggregate call's function, arguments, FILTER and result type.
    pub(crate) fn bind_agg(
        &mut self,
        scope: &Scope,
        f: &ast::Function,
        func: AggFunc,
    ) -> SqlResult<Agg> {
        let name = object_name(&f.name)?;
        if f.over.is_some() {
            return Err(SqlError::unsupported("window functions"));
        }
        if f.null_treatment.is_some() {
            return Err(SqlError::unsupported(format!("the call {f}")));
        }
        let (args, distinct, order_by) = call_parts(f)?;
        let mut exprs = Vec::new();
        for a in args {
            match a {
                ast::FunctionArg::Unnamed(ast::FunctionArgExpr::Expr(e)) => {
                    // The first argument decides the call's types; the others are
                    // brought to them (an untyped delimiter becomes bytea or text).
                    let (x, t) = self.expr_in(scope, e, &mut None)?;
                    exprs.push(match exprs.is_empty() {
                        true => self.settle_type(x, t),
                        false => (x, t),
                    });
                }
                ast::FunctionArg::Unnamed(ast::FunctionArgExpr::Wildcard)
                    if func == AggFunc::CountStar => {}
                other => return Err(SqlError::unsupported(format!("the argument {other}"))),
            }
        }
        let filter = self.agg_filter(scope, f)?;
        let want = match func {
            AggFunc::CountStar => 0,
            AggFunc::StringAgg => 2,
            AggFunc::Stat(s) if s.two_args() => 2,
            _ => 1,
        };
        if !f.within_group.is_empty() {
            let types: Vec<SqlType> = exprs.iter().map(|(_, t)| *t).collect();
            return Err(self.not_ordered_set(scope, f, &name, types, want));
        }
        if exprs.len() != want {
            return Err(SqlError::new(
                "42883",
                format!(
                    "function {name} with {} arguments does not exist",
                    exprs.len()
                ),
            ));
        }
        let mut it = exprs.into_iter();
        let mut arg = it.next();
        if matches!(func, AggFunc::Stat(s) if s.two_args()) {
            if let Some((a, t)) = arg.take() {
                arg = Some((self.coerce(a, t, SqlType::Float8)?, SqlType::Float8));
            }
        }
        let t = arg.as_ref().map_or(SqlType::Int8, |(_, t)| *t);
        let ty = result_type(func, &name, t)?;
        let second = match (func, t) {
            (AggFunc::StringAgg, SqlType::Bytea) => SqlType::Bytea,
            (AggFunc::StringAgg, _) => SqlType::Text,
            _ => SqlType::Float8,
        };
        let arg2 = match it.next() {
            Some((d, dt)) => Some(self.coerce(d, dt, second)?),
            None => None,
        };
        let arg = match (func, arg) {
            (AggFunc::StringAgg, Some((a, SqlType::Bpchar))) => Some(crate::bind::bpchar_text(a)),
            (_, a) => a.map(|(a, _)| a),
        };
        let order: Vec<_> = self
            .agg_order(scope, order_by)?
            .into_iter()
            .map(|(k, _)| k)
            .collect();
        if distinct {
            let args: Vec<&Expr> = arg.iter().chain(arg2.iter()).collect();
            crate::aggorder::distinct_order_ok(&args, &order, order_by)?;
        }
        Ok(Agg {
            func,
            arg,
            ty,
            distinct,
            filter,
            arg2,
            order,
            direct: Vec::new(),
        })
    }
}

/// A call's arguments, DISTINCT and ORDER BY (the only clause taken inside the
/// parentheses).
fn call_parts(f: &ast::Function) -> SqlResult<(&[ast::FunctionArg], bool, &[ast::OrderByExpr])> {
    let ast::FunctionArguments::List(l) = &f.args else {
        return Ok((&[], false, &[]));
    };
    let mut order_by: &[ast::OrderByExpr] = &[];
    for c in &l.clauses {
        match c {
            ast::FunctionArgumentClause::OrderBy(o) => order_by = o,
            other => {
                return Err(SqlError::unsupported(format!(
                    "the clause {other} in an aggregate call"
                )))
            }
        }
    }
    let distinct = matches!(
        l.duplicate_treatment,
        Some(ast::DuplicateTreatment::Distinct)
    );
    Ok((&l.args, distinct, order_by))
}

impl Binder {
    /// An aggregate's FILTER condition, in which aggregates are 42803.
    pub(crate) fn agg_filter(
        &mut self,
        scope: &Scope,
        f: &ast::Function,
    ) -> SqlResult<Option<Expr>> {
        let Some(c) = &f.filter else {
            return Ok(None);
        };
        let before = self.aggs_refused_in.replace("FILTER");
        let cond = self.condition(scope, c, "FILTER");
        self.aggs_refused_in = before;
        cond.map(Some)
    }

    /// WITHIN GROUP on a plain aggregate: 42809 if the arguments with the WITHIN
    /// GROUP keys would fit it, else 42883 for that call.
    fn not_ordered_set(
        &mut self,
        scope: &Scope,
        f: &ast::Function,
        name: &str,
        mut types: Vec<SqlType>,
        want: usize,
    ) -> SqlError {
        match self.agg_order(scope, &f.within_group) {
            Ok(keys) => types.extend(keys.into_iter().map(|(_, t)| t)),
            Err(e) => return e,
        }
        if types.len() != want {
            let names: Vec<&str> = types.iter().map(|t| t.name()).collect();
            return SqlError::new(
                "42883",
                format!("function {name}({}) does not exist", names.join(", ")),
            );
        }
        SqlError::new(
            "42809",
            format!("{name} is not an ordered-set aggregate, so it cannot have WITHIN GROUP"),
        )
    }
}

/// One aggregate's running state over one group.
#[derive(Debug)]
pub struct AggState {
    acc: Datum,
    n: i64,
    /// DISTINCT: the argument pairs seen.
    seen: Option<HashSet<(Datum, Datum)>>,
    /// A statistic's moments.
    moments: Option<Box<crate::moments::Moments>>,
    /// With ORDER BY: the group's rows, sorted at the end (aggorder rule 1).
    ordered: Option<Box<crate::aggorder::Ordered>>,
}

impl AggState {
    pub fn new(a: &Agg) -> AggState {
        let mut st = AggState::plain(a);
        if !a.order.is_empty() {
            st.ordered = Some(Box::default());
        }
        st
    }

    /// The state that takes rows as they come (no ORDER BY).
    fn plain(a: &Agg) -> AggState {
        AggState {
            acc: Datum::Null,
            n: 0,
            seen: a.distinct.then(HashSet::new),
            moments: matches!(a.func, AggFunc::Stat(_)).then(Box::default),
            ordered: None,
        }
    }

    /// Whether a value has been taken (planner rule 14's internal aggregate skips
    /// its rows after the first non-NULL one).
    pub fn has_value(&self) -> bool {
        !self.acc.is_null()
    }

    /// Whether the aggregate holds its rows for sorting: its rows come to
    /// [`AggState::step_ordered`].
    pub fn holds_rows(&self) -> bool {
        self.ordered.is_some()
    }

    /// Steps a plain aggregate (no DISTINCT, ORDER BY or statistic) by one value
    /// lent, not moved: a count, an integer sum that stays in range, or a min/max
    /// that keeps its value copies nothing. False if it must take the general path
    /// ([`AggState::step`]), which then does all of the step.
    pub fn step_lent(&mut self, a: &Agg, v: &Datum) -> bool {
        if self.seen.is_some() || self.moments.is_some() || self.ordered.is_some() {
            return false;
        }
        match (a.func, &mut self.acc, v) {
            (AggFunc::CountStar, ..) => self.n += 1,
            (_, _, Datum::Null) if a.func != AggFunc::Any => {}
            (AggFunc::Count, ..) => self.n += 1,
            (AggFunc::Sum, Datum::Int8(acc), Datum::Int4(x)) => {
                match acc.checked_add(i64::from(*x)) {
                    Some(sum) => {
                        *acc = sum;
                        self.n += 1;
                    }
                    None => return false,
                }
            }
            (AggFunc::Min | AggFunc::Max, acc, v) if !acc.is_null() => {
                let o = match (&*acc, v) {
                    (Datum::Int4(x), Datum::Int4(y)) => y.cmp(x),
                    (Datum::Int8(x), Datum::Int8(y)) => y.cmp(x),
                    (x, y) => compare(y, x),
                };
                let want = match a.func {
                    AggFunc::Min => Ordering::Less,
                    _ => Ordering::Greater,
                };
                if o == want {
                    *acc = v.clone();
                }
                self.n += 1;
            }
            _ => return false,
        }
        true
    }

    /// Holds one input row's ORDER BY keys and argument values (aggorder rule 1).
    pub fn step_ordered(&mut self, keys: Vec<Datum>, v: Datum, d: Datum) -> SqlResult<()> {
        match &mut self.ordered {
            Some(o) => o.push(keys, v, d),
            None => Ok(()),
        }
    }

    /// The aggregate's value over its group; `direct`: an ordered-set aggregate's
    /// direct arguments evaluated for the group.
    pub fn finish_group(mut self, a: &Agg, direct: &[Datum]) -> SqlResult<Datum> {
        match (self.ordered.take(), a.func) {
            (Some(o), AggFunc::Ordered(kind)) => o.finish_set(a, kind, direct),
            (Some(o), _) => o.feed(a, AggState::plain(a)),
            (None, _) => self.value(a),
        }
    }

    /// Feeds one input row's argument values (`v`: the argument, `delim`:
    /// string_agg's delimiter or a statistic's X); `pass`: the FILTER held.
    pub fn step(&mut self, a: &Agg, v: Datum, delim: Datum) -> SqlResult<()> {
        if a.func == AggFunc::CountStar {
            self.n += 1;
            return Ok(());
        }
        if let (AggFunc::Stat(s), Some(m)) = (a.func, self.moments.as_mut()) {
            if a.distinct && !v.is_null() {
                if let Some(seen) = &mut self.seen {
                    if !seen.insert((v.clone(), delim.clone())) {
                        return Ok(());
                    }
                }
            }
            return m.step(s, &v, &delim);
        }
        if v.is_null() {
            return Ok(());
        }
        if let Some(seen) = &mut self.seen {
            if !seen.insert((v.clone(), delim.clone())) {
                return Ok(());
            }
        }
        self.n += 1;
        // sum(int2 | int4) adds in place while its bigint does not overflow (the
        // general path below then raises PostgreSQL's error).
        if let (AggFunc::Sum, Datum::Int8(acc)) = (a.func, &mut self.acc) {
            let x = match v {
                Datum::Int4(x) => Some(i64::from(x)),
                Datum::Int2(x) => Some(i64::from(x)),
                _ => None,
            };
            if let Some(sum) = x.and_then(|x| acc.checked_add(x)) {
                *acc = sum;
                return Ok(());
            }
        }
        self.acc = match (a.func, std::mem::replace(&mut self.acc, Datum::Null)) {
            (AggFunc::Count, acc) => acc,
            (AggFunc::Sum | AggFunc::Avg, Datum::Null) => cast_datum(v, sum_type(a))?,
            (AggFunc::Sum | AggFunc::Avg, acc) => {
                crate::bind::add(&acc, &cast_datum(v, sum_type(a))?)?
            }
            (AggFunc::Min | AggFunc::Max, Datum::Null) => v,
            (AggFunc::Min | AggFunc::Max, acc) => {
                let o = compare(&v, &acc);
                let better = if a.func == AggFunc::Min {
                    o == Ordering::Less
                } else {
                    o == Ordering::Greater
                };
                if better {
                    v
                } else {
                    acc
                }
            }
            (AggFunc::BoolAnd, acc) => Datum::Bool(is_true(&v) && (acc.is_null() || is_true(&acc))),
            (AggFunc::BoolOr, acc) => Datum::Bool(is_true(&v) || is_true(&acc)),
            (AggFunc::Any, Datum::Null) => v,
            (AggFunc::Any, acc) => acc,
            (AggFunc::StringAgg, acc) => string_agg(acc, v, delim)?,
            (AggFunc::CountStar | AggFunc::Stat(_) | AggFunc::Ordered(_), _) => {
                unreachable!("counted above or held")
            }
        };
        Ok(())
    }

    /// Adds the rows `other` was fed, as a parallel aggregate's leader combines its
    /// workers' states (parallel rule 4); only for the aggregates
    /// [`combinable`] says.
    pub fn combine(&mut self, a: &Agg, other: AggState) -> SqlResult<()> {
        self.n += other.n;
        let (x, y) = (std::mem::replace(&mut self.acc, Datum::Null), other.acc);
        self.acc = match (a.func, x, y) {
            (_, Datum::Null, v) | (_, v, Datum::Null) => v,
            (AggFunc::Sum | AggFunc::Avg, x, y) => crate::bind::add(&x, &y)?,
            (AggFunc::Min, x, y) => std::cmp::min_by(x, y, compare),
            (AggFunc::Max, x, y) => std::cmp::max_by(x, y, compare),
            (AggFunc::BoolAnd, x, y) => Datum::Bool(is_true(&x) && is_true(&y)),
            (AggFunc::BoolOr, x, y) => Datum::Bool(is_true(&x) || is_true(&y)),
            (AggFunc::Any, x, _) => x,
            (f, ..) => unreachable!("{f:?} is not combinable"),
        };
        Ok(())
    }

    /// The aggregate's value over the rows fed (aggregate rule 2).
    pub fn finish(self, a: &Agg) -> SqlResult<Datum> {
        self.finish_group(a, &[])
    }

    /// The aggregate's value over the rows fed so far (a window's running value).
    pub fn value(&self, a: &Agg) -> SqlResult<Datum> {
        Ok(match a.func {
            AggFunc::CountStar | AggFunc::Count => Datum::Int8(self.n),
            AggFunc::Avg if self.n == 0 => Datum::Null,
            AggFunc::Avg => crate::bind::divide(&self.acc, self.n)?,
            AggFunc::Stat(s) => match &self.moments {
                Some(m) => m.value(s)?,
                None => Datum::Null,
            },
            _ => self.acc.clone(),
        })
    }
}

/// Whether states of `a` fed different rows combine into the state of all of them
/// ([`AggState::combine`]): not DISTINCT, ordered, nor a statistic or string_agg.
pub fn combinable(a: &Agg) -> bool {
    !a.distinct
        && a.order.is_empty()
        && a.direct.is_empty()
        && matches!(
            a.func,
            AggFunc::CountStar
                | AggFunc::Count
                | AggFunc::Sum
                | AggFunc::Avg
                | AggFunc::Min
                | AggFunc::Max
                | AggFunc::BoolAnd
                | AggFunc::BoolOr
                | AggFunc::Any
        )
}

/// The type a sum or avg accumulates in.
fn sum_type(a: &Agg) -> SqlType {
    match (a.func, a.ty) {
        (AggFunc::Avg, SqlType::Float8) => SqlType::Float8,
        (AggFunc::Avg, SqlType::Interval) => SqlType::Interval,
        (AggFunc::Avg, _) => SqlType::Numeric,
        (_, t) => t,
    }
}

/// string_agg: the running text, the delimiter before every value but the first.
fn string_agg(acc: Datum, v: Datum, delim: Datum) -> SqlResult<Datum> {
    if let Datum::Bytea(v) = v {
        let mut b = match acc {
            Datum::Bytea(b) => b,
            _ => return Ok(Datum::Bytea(v)),
        };
        if let Datum::Bytea(d) = delim {
            b.extend_from_slice(&d);
        }
        crate::alloc_request(b.len() + v.len() + 4)?;
        b.extend_from_slice(&v);
        return Ok(Datum::Bytea(b));
    }
    let v = crate::text_of(v)?;
    Ok(Datum::Text(match acc {
        Datum::Null => v,
        acc => {
            let mut s = crate::text_of(acc)?;
            if let Datum::Text(d) = delim {
                s.push_str(&d);
            }
            crate::alloc_request(s.len() + v.len() + 4)?;
            s.push_str(&v);
            s
        }
    }))
}
