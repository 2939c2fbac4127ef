//! The operators of dates, times, timestamps and intervals: the types they
//! bind to ([`binop_type`]) and their evaluation ([`arith`]), which is
//! [`crate::datefn`]'s port of PostgreSQL's. Text input and output are
//! [`crate::datetime`]'s.

use crate::bind::BinOp;
use crate::{Datum, SqlResult, SqlType};

/// The operand and result types of a date/time operator (binding), or None when
/// the operands are not of one: (left as, right as, result).
pub fn binop_type(lt: SqlType, op: BinOp, rt: SqlType) -> Option<(SqlType, SqlType, SqlType)> {
    use SqlType as T;
    let ts = |t: T| matches!(t, T::Timestamp | T::TimestampTz);
    let dt = |t: T| ts(t) || matches!(t, T::Date | T::Time);
    // An untyped literal beside a date or time is an interval.
    let (lt, rt) = match (lt, rt) {
        (T::Unknown, r) if dt(r) && op == BinOp::Add => (T::Interval, r),
        (l, T::Unknown) if dt(l) && matches!(op, BinOp::Add | BinOp::Sub) => (l, T::Interval),
        (T::Unknown, T::Interval) | (T::Interval, T::Unknown) => (T::Interval, T::Interval),
        other => other,
    };
    let add_sub = matches!(op, BinOp::Add | BinOp::Sub);
    let r = match (lt, op, rt) {
        (l, _, T::Interval) if ts(l) && add_sub => l,
        (T::Interval, BinOp::Add, r) if ts(r) => r,
        (T::Date, _, T::Interval) if add_sub => T::Timestamp,
        (T::Interval, BinOp::Add, T::Date) => T::Timestamp,
        (T::Time, _, T::Interval) if add_sub => T::Time,
        (T::Interval, BinOp::Add, T::Time) => T::Time,
        (T::Date, BinOp::Add, T::Time) | (T::Time, BinOp::Add, T::Date) => T::Timestamp,
        (T::Interval, _, T::Interval) if add_sub => T::Interval,
        (l, BinOp::Sub, r) if ts(l) && ts(r) => {
            let both = if l == r { l } else { T::TimestampTz };
            return Some((both, both, T::Interval));
        }
        (T::Time, BinOp::Sub, T::Time) => T::Interval,
        (T::Date, BinOp::Sub, T::Date) => T::Int4,
        (T::Date, _, r) if add_sub && r.is_int() && r != T::Numeric => {
            return Some((T::Date, T::Int4, T::Date))
        }
        (l, BinOp::Add, T::Date) if l.is_int() && l != T::Numeric => {
            return Some((T::Int4, T::Date, T::Date))
        }
        (T::Interval, BinOp::Mul | BinOp::Div, r) if r.is_number() || r == T::Unknown => {
            return Some((T::Interval, T::Float8, T::Interval))
        }
        (l, BinOp::Mul, T::Interval) if l.is_number() || l == T::Unknown => {
            return Some((T::Float8, T::Interval, T::Interval))
        }
        _ => return None,
    };
    Some((lt, rt, r))
}

/// Evaluates a date/time operator on non-NULL values (`None` when they are not
/// of one: the caller's arithmetic), as PostgreSQL's ([`crate::datefn`]): a
/// timestamptz's months and days are added in the session's zone.
pub fn arith(op: BinOp, a: &Datum, b: &Datum) -> Option<SqlResult<Datum>> {
    use crate::datefn as f;
    use Datum as D;
    let sub = op == BinOp::Sub;
    Some(match (a, op, b) {
        (D::Timestamp(t), BinOp::Add | BinOp::Sub, D::Interval(i)) => match sub {
            true => f::timestamp_mi_interval(*t, *i),
            false => f::timestamp_pl_interval(*t, *i),
        }
        .map(D::Timestamp),
        (D::Interval(i), BinOp::Add, D::Timestamp(t)) => {
            f::timestamp_pl_interval(*t, *i).map(D::Timestamp)
        }
        (D::TimestampTz(t), BinOp::Add | BinOp::Sub, D::Interval(i)) => {
            crate::datetime::with_session(|st| match sub {
                true => f::timestamptz_mi_interval(*t, *i, st),
                false => f::timestamptz_pl_interval(*t, *i, st),
            })
            .map(D::TimestampTz)
        }
        (D::Interval(i), BinOp::Add, D::TimestampTz(t)) => {
            crate::datetime::with_session(|st| f::timestamptz_pl_interval(*t, *i, st))
                .map(D::TimestampTz)
        }
        (D::Date(d), BinOp::Add | BinOp::Sub, D::Interval(i)) => match sub {
            true => f::date_mi_interval(*d, *i),
            false => f::date_pl_interval(*d, *i),
        }
        .map(D::Timestamp),
        (D::Interval(i), BinOp::Add, D::Date(d)) => f::date_pl_interval(*d, *i).map(D::Timestamp),
        (D::Timestamp(x) | D::TimestampTz(x), BinOp::Sub, D::Timestamp(y) | D::TimestampTz(y)) => {
            f::timestamp_mi(*x, *y).map(D::Interval)
        }
        (D::Time(t), BinOp::Add | BinOp::Sub, D::Interval(i)) => Ok(D::Time(match sub {
            true => f::time_mi_interval(*t, *i),
            false => f::time_pl_interval(*t, *i),
        })),
        (D::Interval(i), BinOp::Add, D::Time(t)) => Ok(D::Time(f::time_pl_interval(*t, *i))),
        (D::Time(x), BinOp::Sub, D::Time(y)) => Ok(D::Interval(f::time_mi_time(*x, *y))),
        (D::Date(d), BinOp::Add, D::Time(t)) | (D::Time(t), BinOp::Add, D::Date(d)) => {
            f::date_pl_time(*d, *t).map(D::Timestamp)
        }
        (D::Interval(x), BinOp::Add | BinOp::Sub, D::Interval(y)) => match sub {
            true => f::interval_mi(*x, *y),
            false => f::interval_pl(*x, *y),
        }
        .map(D::Interval),
        (D::Date(x), BinOp::Sub, D::Date(y)) => f::date_mi(*x, *y).map(D::Int4),
        (D::Date(d), BinOp::Add | BinOp::Sub, D::Int4(n)) => match sub {
            true => f::date_mii(*d, *n),
            false => f::date_pli(*d, *n),
        }
        .map(D::Date),
        (D::Int4(n), BinOp::Add, D::Date(d)) => f::date_pli(*d, *n).map(D::Date),
        (D::Interval(i), BinOp::Mul, D::Float8(x)) | (D::Float8(x), BinOp::Mul, D::Interval(i)) => {
            f::interval_mul(*i, x.get()).map(D::Interval)
        }
        (D::Interval(i), BinOp::Div, D::Float8(x)) => f::interval_div(*i, x.get()).map(D::Interval),
        _ => return None,
    })
}
