//! Constant folding: a bound query's subexpressions whose operands are all constants
//! are evaluated once, when the query is analyzed, instead of once per row
//! (PostgreSQL's eval_const_expressions). `l_discount between 0.06 - 0.01 and 0.06 +
//! 0.01` becomes `l_discount >= 0.05 AND l_discount <= 0.07`, and EXPLAIN shows it so.
//!
//! Rules (cited as "fold rule N"):
//! 1. Only what gives the same value whenever and wherever it runs is folded
//!    (PostgreSQL's immutable functions and operators): no function of the session,
//!    the transaction or the server (now(), nextval(), current_user, random, the WAL
//!    functions), and nothing whose value depends on the session's TimeZone or
//!    DateStyle — a timestamptz among the operands or the result, or a cast between
//!    text and a date/time type — so a prepared statement's query stays right after
//!    a SET.
//! 2. A subexpression that fails (division by zero, overflow) is left as it is: it
//!    fails when it runs, if it runs — as before folding, so a CASE arm or a WHERE over
//!    no rows that never evaluates it does not fail.
//! 3. A subexpression that folds to NULL is left as it is: a NULL constant has no
//!    type of its own, and the expression's type is what the planner reads.
//! 4. Folding is bottom-up over the whole query, subqueries included, and the result
//!    is evaluated exactly as the original would be (the same `eval`).
//! 5. A text or bytea result longer than [`MAX_FOLDED`] bytes is left as an
//!    expression: a plan holds no large constant, and a value near the allocation
//!    bound is made once, when the row needs it, not also when planning.

use crate::bind::{eval, Env, Expr, Func, Row, SeqCall};
use crate::conditional::Special;
use crate::{Datum, SqlResult, SqlType};
use strata_types::Lsn;

/// Rule 5: the longest text or bytea made a constant.
const MAX_FOLDED: usize = 1024;

/// Folds every expression of `q` (rule 4).
pub(crate) fn query(q: &mut crate::analyze::Query) -> SqlResult<()> {
    crate::outer::visit_query_post_mut(q, 0, &mut |e, _| {
        fold_node(e);
        Ok(())
    })
}

/// Folds `e` alone, its operands already folded.
pub(crate) fn fold_node(e: &mut Expr) {
    if !foldable(e) {
        return;
    }
    let row = Row {
        cols: &[],
        params: &[],
        aggs: &[],
        env: &Immutable,
        sub: None,
    };
    match eval(e, &row) {
        Ok(d) if !d.is_null() && !zoned(&d) && !large(&d) => *e = Expr::Const(d),
        // Rules 2, 3 and 5.
        _ => {}
    }
}

/// Rule 5.
fn large(d: &Datum) -> bool {
    match d {
        Datum::Text(s) => s.len() > MAX_FOLDED,
        Datum::Bytea(b) => b.len() > MAX_FOLDED,
        _ => false,
    }
}

/// Whether `e` is an immutable operation over constants (rule 1).
fn foldable(e: &Expr) -> bool {
    let consts = |l: &[&Expr]| l.iter().all(|x| matches!(x, Expr::Const(d) if !zoned(d)));
    match e {
        Expr::Const(_)
        | Expr::Col(_)
        | Expr::Param(_)
        | Expr::Agg(_)
        | Expr::Outer(..)
        | Expr::SubLink(_)
        | Expr::Window(_) => false,
        Expr::Bin(a, _, b) => consts(&[a, b]),
        Expr::Bool(_, l) => consts(&l.iter().collect::<Vec<_>>()),
        Expr::Not(a) | Expr::Neg(a) | Expr::IsNull(a, _) | Expr::Fit(a, _) => consts(&[a]),
        Expr::Cast(a, t) => consts(&[a]) && cast_immutable(a, *t),
        Expr::InList(a, l, _) => consts(&[a]) && consts(&l.iter().collect::<Vec<_>>()),
        Expr::Call(f, l) => immutable(*f) && consts(&l.iter().collect::<Vec<_>>()),
        Expr::Special(s) => special_consts(s, &consts),
    }
}

fn special_consts(s: &Special, consts: &dyn Fn(&[&Expr]) -> bool) -> bool {
    match s {
        Special::Case { whens, default } => {
            whens.iter().all(|(c, v)| consts(&[c, v])) && consts(&[default])
        }
        Special::Coalesce(l) | Special::Extreme(l, _) => consts(&l.iter().collect::<Vec<_>>()),
        Special::NullIf(a, b) | Special::Distinct(a, b, _) => consts(&[a, b]),
        Special::BoolTest(a, _, _) => consts(&[a]),
        Special::Like {
            expr,
            pattern,
            escape,
            ..
        } => consts(&[expr, pattern]) && escape.as_ref().is_none_or(|x| consts(&[x])),
    }
}

/// A timestamptz: its text and its arithmetic depend on the session's TimeZone.
fn zoned(d: &Datum) -> bool {
    matches!(d, Datum::TimestampTz(_))
}

fn date_time(t: SqlType) -> bool {
    matches!(
        t,
        SqlType::Date
            | SqlType::Time
            | SqlType::Timestamp
            | SqlType::TimestampTz
            | SqlType::Interval
    )
}

/// A cast whose result depends on no setting (rule 1).
fn cast_immutable(a: &Expr, to: SqlType) -> bool {
    let Expr::Const(d) = a else { return false };
    let from_text = matches!(d, Datum::Text(_));
    let from_time = matches!(
        d,
        Datum::Date(_)
            | Datum::Time(_)
            | Datum::Timestamp(_)
            | Datum::TimestampTz(_)
            | Datum::Interval(_)
    );
    let to_text = matches!(to, SqlType::Text | SqlType::Bpchar);
    to != SqlType::TimestampTz && !(from_text && date_time(to)) && !(from_time && to_text)
}

/// PostgreSQL's immutable functions among Strata's (rule 1), less `repeat`, whose
/// result may be far larger than its operands (rule 5).
fn immutable(f: Func) -> bool {
    matches!(
        f,
        Func::Length
            | Func::Lower
            | Func::Upper
            | Func::Abs
            | Func::BpcharText
            | Func::Substr
            | Func::Math(..)
    ) || matches!(f, Func::Str(s, _) if s.immutable())
        || matches!(f, Func::Date(d, _) if d.immutable())
}

/// The environment of a folded expression: none. Only immutable operations are
/// folded (rule 1), and they ask nothing of it; what would is an error.
struct Immutable;

impl Env for Immutable {
    fn current_database(&self) -> String {
        String::new()
    }
    fn current_wal_lsn(&self) -> Lsn {
        Lsn(0)
    }
    fn relation_filepath(&self, _: &str) -> Option<String> {
        None
    }
    fn backend_pid(&self) -> i32 {
        0
    }
    fn cancel_backend(&self, _: i32) -> SqlResult<bool> {
        Err(crate::SqlError::unsupported(
            "a server function while folding",
        ))
    }
    fn in_recovery(&self) -> bool {
        false
    }
    fn recovery_lsns(&self) -> Option<(Option<Lsn>, Lsn)> {
        None
    }
    fn promote(&self, _: bool, _: i32) -> SqlResult<bool> {
        Err(crate::SqlError::unsupported(
            "a server function while folding",
        ))
    }
    fn switch_wal(&self) -> SqlResult<Lsn> {
        Err(crate::SqlError::unsupported(
            "a server function while folding",
        ))
    }
    fn last_xact_replay_unix_us(&self) -> Option<i64> {
        None
    }
    fn sequence(&self, _call: SeqCall<'_>) -> SqlResult<i64> {
        Err(crate::SqlError::unsupported("a sequence while folding"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bind::BinOp;

    fn c(d: Datum) -> Box<Expr> {
        Box::new(Expr::Const(d))
    }

    #[test]
    fn folds_immutable_operations_bottom_up() {
        // (2 + 3) * x: the sum folds, the product cannot.
        let mut e = Expr::Bin(
            Box::new(Expr::Bin(c(Datum::Int4(2)), BinOp::Add, c(Datum::Int4(3)))),
            BinOp::Mul,
            Box::new(Expr::Col(0)),
        );
        let mut q = e.clone();
        crate::outer::visit_expr_post_mut(&mut q, 0, &mut |x, _| {
            fold_node(x);
            Ok(())
        })
        .unwrap();
        e = Expr::Bin(c(Datum::Int4(5)), BinOp::Mul, Box::new(Expr::Col(0)));
        assert_eq!(q, e);
    }

    #[test]
    fn leaves_errors_nulls_and_zoned_values() {
        let div0 = Expr::Bin(c(Datum::Int4(1)), BinOp::Div, c(Datum::Int4(0)));
        let mut e = div0.clone();
        fold_node(&mut e);
        assert_eq!(e, div0, "rule 2: fails when it runs, not when folded");
        let null = Expr::Bin(c(Datum::Int4(1)), BinOp::Add, c(Datum::Null));
        let mut e = null.clone();
        fold_node(&mut e);
        assert_eq!(e, null, "rule 3");
        let zoned = Expr::Cast(c(Datum::Date(0)), SqlType::TimestampTz);
        let mut e = zoned.clone();
        fold_node(&mut e);
        assert_eq!(e, zoned, "rule 1: depends on TimeZone");
        let now = Expr::Call(Func::Now, vec![]);
        let mut e = now.clone();
        fold_node(&mut e);
        assert_eq!(e, now, "rule 1: not immutable");
        let mut e = Expr::Cast(c(Datum::Int4(7)), SqlType::Int8);
        fold_node(&mut e);
        assert_eq!(e, Expr::Const(Datum::Int8(7)));
        let half = || c(Datum::Text("x".repeat(600)));
        let big = Expr::Bin(half(), BinOp::Concat, half());
        let mut e = big.clone();
        fold_node(&mut e);
        assert_eq!(e, big, "rule 5: no large constants");
        let rep = Expr::Call(
            Func::Repeat,
            vec![*c(Datum::Text("x".into())), *c(Datum::Int4(3))],
        );
        let mut e = rep.clone();
        fold_node(&mut e);
        assert_eq!(e, rep, "repeat is not folded at all");
    }
}
