//! Expressions that do not simply evaluate every operand and go NULL on a NULL:
//! CASE, COALESCE, NULLIF, GREATEST, LEAST (PostgreSQL's "conditional
//! expressions"), IS [NOT] DISTINCT FROM, IS [NOT] TRUE / FALSE / UNKNOWN, and
//! LIKE / ILIKE pattern matching.
//!
//! Entry points: [`Binder::special`] (binding, called by the expression binder for
//! these forms), [`eval_special`] (evaluation), [`common_type`] (the type several
//! branches resolve to, also used by UNION and VALUES).
//!
//! Rules (cited as "conditional rule N"):
//! 1. The branches of CASE, COALESCE, GREATEST / LEAST, the columns of a UNION and
//!    of VALUES resolve to one type as PostgreSQL's `select_common_type` does for
//!    the types Strata has: untyped literals take the others' type (text if all are
//!    untyped); numbers widen (int2 < int4 < int8 < numeric < real < double); char(n)
//!    with text is text; timestamp with timestamptz is timestamptz; any other
//!    mix is 42804 "CASE types x and y cannot be matched".
//! 2. Only the operands needed are evaluated: CASE stops at its first true WHEN,
//!    COALESCE at its first non-NULL (so a division by zero in a branch not taken
//!    raises nothing).
//! 3. LIKE matches characters, not bytes; `%` any run, `_` one character, the
//!    escape character (backslash unless ESCAPE says otherwise; ESCAPE '' none)
//!    makes the next one literal; a pattern ending in it is 22025 where the match
//!    reaches that end with text left (else no match), as PostgreSQL's. ILIKE folds
//!    case with Unicode's simple lowercase.
//! 4. A LIKE pattern of literal runs between `%`s is matched on the strings' bytes
//!    in place (UTF-8 makes a byte match a character match); only other patterns
//!    are copied into characters.

use crate::bind::{compare, is_true, Agg, Binder, Expr, Scope};
use crate::{Datum, SqlError, SqlResult, SqlType};
use sqlparser::ast;
use std::cmp::Ordering;

/// A conditional expression, bound.
#[derive(Clone, Debug, PartialEq)]
pub enum Special {
    /// Searched CASE (a simple CASE is bound as one: `operand = value` per WHEN).
    Case {
        whens: Vec<(Expr, Expr)>,
        default: Expr,
    },
    Coalesce(Vec<Expr>),
    NullIf(Expr, Expr),
    /// GREATEST (false) or LEAST (true): NULLs ignored.
    Extreme(Vec<Expr>, bool),
    /// `a IS DISTINCT FROM b` (false) or IS NOT DISTINCT FROM (true).
    Distinct(Expr, Expr, bool),
    /// `x IS [NOT] TRUE / FALSE / UNKNOWN`: the value tested for (None: unknown)
    /// and whether NOT was written.
    BoolTest(Expr, Option<bool>, bool),
    Like {
        expr: Expr,
        pattern: Expr,
        escape: Option<Expr>,
        fold: bool,
        negated: bool,
    },
}

/// The type `types` resolve to (conditional rule 1); `what` names the construct in
/// the error ("CASE", "UNION", "COALESCE", "VALUES").
pub fn common_type(types: &[SqlType], what: &str) -> SqlResult<SqlType> {
    let mut out = SqlType::Unknown;
    for &t in types {
        out = match (out, t) {
            (SqlType::Unknown, t) | (t, SqlType::Unknown) => t,
            (a, b) if a == b => a,
            (a, b) if a.is_number() && b.is_number() => crate::numeric::wider(a, b),
            (SqlType::Bpchar, SqlType::Text) | (SqlType::Text, SqlType::Bpchar) => SqlType::Text,
            (a, b) if crate::bind::is_timestamp(a) && crate::bind::is_timestamp(b) => {
                SqlType::TimestampTz
            }
            (SqlType::Date, b) | (b, SqlType::Date) if crate::bind::is_timestamp(b) => b,
            (a, b) => {
                return Err(SqlError::new(
                    "42804",
                    format!(
                        "{what} types {} and {} cannot be matched",
                        a.name(),
                        b.name()
                    ),
                ))
            }
        };
    }
    Ok(if out == SqlType::Unknown {
        SqlType::Text
    } else {
        out
    })
}

impl Binder {
    /// `e` of type `t` as a value of `to` (the common type of its construct).
    pub fn to_common(&mut self, e: Expr, t: SqlType, to: SqlType) -> SqlResult<Expr> {
        if t == to {
            return Ok(e);
        }
        if t == SqlType::Unknown {
            return self.coerce(e, t, to);
        }
        if t == SqlType::Bpchar && to == SqlType::Text {
            return Ok(crate::bind::bpchar_text(e));
        }
        Ok(Expr::Cast(Box::new(e), to))
    }

    /// Binds `items` and brings them to their common type (conditional rule 1).
    fn common(
        &mut self,
        scope: &Scope,
        items: &[&ast::Expr],
        what: &str,
        aggs: &mut Option<&mut Vec<Agg>>,
    ) -> SqlResult<(Vec<Expr>, SqlType)> {
        let mut bound = Vec::with_capacity(items.len());
        for e in items {
            bound.push(self.expr_in(scope, e, aggs)?);
        }
        let types: Vec<SqlType> = bound.iter().map(|(_, t)| *t).collect();
        let t = common_type(&types, what)?;
        let mut out = Vec::with_capacity(bound.len());
        for (e, et) in bound {
            out.push(self.to_common(e, et, t)?);
        }
        Ok((out, t))
    }

    /// The conditional forms of `e`, or None if `e` is not one.
    pub(crate) fn special(
        &mut self,
        scope: &Scope,
        e: &ast::Expr,
        aggs: &mut Option<&mut Vec<Agg>>,
    ) -> SqlResult<Option<(Expr, SqlType)>> {
        use ast::Expr as E;
        let wrap = |s: Special, t: SqlType| Some((Expr::Special(Box::new(s)), t));
        Ok(match e {
            E::Case {
                operand,
                conditions,
                else_result,
                ..
            } => Some(self.case(scope, operand.as_deref(), conditions, else_result, aggs)?),
            E::IsDistinctFrom(a, b) | E::IsNotDistinctFrom(a, b) => {
                let (a, at) = self.expr_in(scope, a, aggs)?;
                let (b, bt) = self.expr_in(scope, b, aggs)?;
                let (cmp, _) = self.binop(a, at, crate::bind::BinOp::Eq, b, bt)?;
                let Expr::Bin(a, _, b) = cmp else {
                    unreachable!("a comparison binds as one")
                };
                let not = matches!(e, E::IsNotDistinctFrom(..));
                wrap(Special::Distinct(*a, *b, not), SqlType::Bool)
            }
            E::IsTrue(x) | E::IsNotTrue(x) | E::IsFalse(x) | E::IsNotFalse(x) => {
                let x = self.condition_in(scope, x, "IS TRUE", aggs)?;
                let want = matches!(e, E::IsTrue(_) | E::IsNotTrue(_));
                let not = matches!(e, E::IsNotTrue(_) | E::IsNotFalse(_));
                wrap(Special::BoolTest(x, Some(want), not), SqlType::Bool)
            }
            E::IsUnknown(x) | E::IsNotUnknown(x) => {
                let x = self.condition_in(scope, x, "IS UNKNOWN", aggs)?;
                let not = matches!(e, E::IsNotUnknown(_));
                wrap(Special::BoolTest(x, None, not), SqlType::Bool)
            }
            E::Like {
                negated,
                any: false,
                expr,
                pattern,
                escape_char,
            }
            | E::ILike {
                negated,
                any: false,
                expr,
                pattern,
                escape_char,
            } => {
                let fold = matches!(e, E::ILike { .. });
                let s = self.like(scope, (expr, pattern, escape_char.as_deref()), aggs)?;
                let (expr, pattern, escape) = s;
                let negated = *negated;
                wrap(
                    Special::Like {
                        expr,
                        pattern,
                        escape,
                        fold,
                        negated,
                    },
                    SqlType::Bool,
                )
            }
            E::Trim { .. } | E::Position { .. } | E::Overlay { .. } => {
                Some(self.string_syntax(scope, e, aggs)?)
            }
            _ => None,
        })
    }

    /// A boolean operand (42804 otherwise).
    fn condition_in(
        &mut self,
        scope: &Scope,
        e: &ast::Expr,
        what: &str,
        aggs: &mut Option<&mut Vec<Agg>>,
    ) -> SqlResult<Expr> {
        let (x, t) = self.expr_in(scope, e, aggs)?;
        if t != SqlType::Bool && t != SqlType::Unknown {
            return Err(SqlError::new(
                "42804",
                format!(
                    "argument of {what} must be type boolean, not type {}",
                    t.name()
                ),
            ));
        }
        self.coerce(x, t, SqlType::Bool)
    }

    /// CASE: a simple CASE compares its operand to each WHEN value with `=`.
    fn case(
        &mut self,
        scope: &Scope,
        operand: Option<&ast::Expr>,
        conditions: &[ast::CaseWhen],
        else_result: &Option<Box<ast::Expr>>,
        aggs: &mut Option<&mut Vec<Agg>>,
    ) -> SqlResult<(Expr, SqlType)> {
        let operand = match operand {
            Some(o) => Some(self.expr_in(scope, o, aggs)?),
            None => None,
        };
        let mut conds = Vec::with_capacity(conditions.len());
        for w in conditions {
            let c = match &operand {
                Some((o, ot)) => {
                    let (v, vt) = self.expr_in(scope, &w.condition, aggs)?;
                    self.binop(o.clone(), *ot, crate::bind::BinOp::Eq, v, vt)?.0
                }
                None => self.condition_in(scope, &w.condition, "CASE/WHEN", aggs)?,
            };
            conds.push(c);
        }
        let null = ast::Expr::Value(ast::Value::Null.into());
        let mut results: Vec<&ast::Expr> = conditions.iter().map(|w| &w.result).collect();
        results.push(else_result.as_deref().unwrap_or(&null));
        let (mut vals, t) = self.common(scope, &results, "CASE", aggs)?;
        let default = vals.pop().expect("the ELSE");
        let whens = conds.into_iter().zip(vals).collect();
        Ok((Expr::Special(Box::new(Special::Case { whens, default })), t))
    }

    /// COALESCE, NULLIF, GREATEST and LEAST, by name; None for any other function.
    pub(crate) fn conditional_call(
        &mut self,
        scope: &Scope,
        name: &str,
        args: &[ast::Expr],
        aggs: &mut Option<&mut Vec<Agg>>,
    ) -> SqlResult<Option<(Expr, SqlType)>> {
        let refs: Vec<&ast::Expr> = args.iter().collect();
        let what = name.to_uppercase();
        let s = match name {
            "coalesce" | "greatest" | "least" => {
                if args.is_empty() {
                    return Err(SqlError::syntax(format!(
                        "syntax error at or near \")\" ({what} needs arguments)"
                    )));
                }
                let (vals, t) = self.common(scope, &refs, &what, aggs)?;
                let s = match name {
                    "coalesce" => Special::Coalesce(vals),
                    _ => Special::Extreme(vals, name == "least"),
                };
                (s, t)
            }
            "nullif" => {
                let [a, b] = args else {
                    return Err(SqlError::new("42883", "function nullif takes 2 arguments"));
                };
                let (a, at) = self.expr_in(scope, a, aggs)?;
                let (b, bt) = self.expr_in(scope, b, aggs)?;
                let (a, at) = if at == SqlType::Unknown && bt != SqlType::Unknown {
                    (self.coerce(a, at, bt)?, bt)
                } else {
                    (a, at)
                };
                let (cmp, _) = self.binop(a.clone(), at, crate::bind::BinOp::Eq, b, bt)?;
                let Expr::Bin(_, _, b) = cmp else {
                    unreachable!("a comparison binds as one")
                };
                let t = if at == SqlType::Unknown {
                    SqlType::Text
                } else {
                    at
                };
                (Special::NullIf(a, *b), t)
            }
            _ => return Ok(None),
        };
        Ok(Some((Expr::Special(Box::new(s.0)), s.1)))
    }

    /// LIKE's operands as text (an untyped pattern is text; char(n) loses its padding).
    fn like(
        &mut self,
        scope: &Scope,
        (expr, pattern, escape): (&ast::Expr, &ast::Expr, Option<&ast::Expr>),
        aggs: &mut Option<&mut Vec<Agg>>,
    ) -> SqlResult<(Expr, Expr, Option<Expr>)> {
        let mut text = |b: &mut Binder, e: &ast::Expr| -> SqlResult<Expr> {
            let (x, t) = b.expr_in(scope, e, aggs)?;
            match t {
                SqlType::Text | SqlType::Unknown => b.coerce(x, t, SqlType::Text),
                SqlType::Bpchar => Ok(crate::bind::bpchar_text(x)),
                t => Err(SqlError::new(
                    "42883",
                    format!("operator does not exist: {} ~~ unknown", t.name()),
                )
                .with_hint("No operator matches the given name and argument types. You might need to add explicit type casts.")),
            }
        };
        let x = text(self, expr)?;
        let p = text(self, pattern)?;
        let esc = match escape {
            Some(e) => Some(text(self, e)?),
            None => None,
        };
        Ok((x, p, esc))
    }
}

/// Evaluates a conditional expression (conditional rule 2).
pub fn eval_special(s: &Special, eval: &dyn Fn(&Expr) -> SqlResult<Datum>) -> SqlResult<Datum> {
    Ok(match s {
        Special::Case { whens, default } => {
            for (c, v) in whens {
                if is_true(&eval(c)?) {
                    return eval(v);
                }
            }
            eval(default)?
        }
        Special::Coalesce(list) => {
            for e in list {
                let v = eval(e)?;
                if !v.is_null() {
                    return Ok(v);
                }
            }
            Datum::Null
        }
        Special::NullIf(a, b) => {
            let x = eval(a)?;
            let y = eval(b)?;
            if !x.is_null() && !y.is_null() && compare(&x, &y) == Ordering::Equal {
                Datum::Null
            } else {
                x
            }
        }
        Special::Extreme(list, least) => {
            let mut best: Option<Datum> = None;
            for e in list {
                let v = eval(e)?;
                if v.is_null() {
                    continue;
                }
                let better = match &best {
                    None => true,
                    Some(b) if *least => compare(&v, b) == Ordering::Less,
                    Some(b) => compare(&v, b) == Ordering::Greater,
                };
                if better {
                    best = Some(v);
                }
            }
            best.unwrap_or(Datum::Null)
        }
        Special::Distinct(a, b, not) => {
            let x = eval(a)?;
            let y = eval(b)?;
            let same = match (x.is_null(), y.is_null()) {
                (true, true) => true,
                (false, false) => compare(&x, &y) == Ordering::Equal,
                _ => false,
            };
            Datum::Bool(same == *not)
        }
        Special::BoolTest(x, want, not) => {
            let v = eval(x)?;
            let hit = match (v, want) {
                (Datum::Bool(b), Some(w)) => b == *w,
                (Datum::Null, None) => true,
                _ => false,
            };
            Datum::Bool(hit != *not)
        }
        Special::Like {
            expr,
            pattern,
            escape,
            fold,
            negated,
        } => {
            let (x, p) = (eval(expr)?, eval(pattern)?);
            let esc = match escape {
                Some(e) => match eval(e)? {
                    Datum::Null => return Ok(Datum::Null),
                    d => Some(crate::text_of(d)?),
                },
                None => None,
            };
            match (x, p) {
                (Datum::Text(s), Datum::Text(p)) => {
                    Datum::Bool(like(&s, &p, esc.as_deref(), *fold)? != *negated)
                }
                _ => Datum::Null,
            }
        }
    })
}

/// Whether `s` matches the LIKE pattern `p` (conditional rule 3).
pub fn like(s: &str, p: &str, escape: Option<&str>, fold: bool) -> SqlResult<bool> {
    let esc = match escape {
        None => Some('\\'),
        Some("") => None,
        Some(e) if e.chars().count() == 1 => e.chars().next(),
        Some(_) => {
            return Err(SqlError::new("22019", "invalid escape string")
                .with_hint("Escape string must be empty or one character."))
        }
    };
    if !fold {
        if let Some(hit) = like_literals(s, p, esc) {
            return Ok(hit);
        }
    }
    let lower = |c: char| {
        if fold {
            c.to_lowercase().next().unwrap_or(c)
        } else {
            c
        }
    };
    // The pattern as tokens: Some(c) a literal, None for `_`, and '%' runs apart.
    let mut toks: Vec<Tok> = Vec::new();
    let mut it = p.chars();
    while let Some(c) = it.next() {
        if Some(c) == esc {
            match it.next() {
                Some(n) => toks.push(Tok::Lit(lower(n))),
                None => toks.push(Tok::BadEscape),
            }
        } else if c == '%' {
            if toks.last() != Some(&Tok::Any) {
                toks.push(Tok::Any);
            }
        } else if c == '_' {
            toks.push(Tok::One);
        } else {
            toks.push(Tok::Lit(lower(c)));
        }
    }
    let text: Vec<char> = s.chars().map(lower).collect();
    matches(&text, &toks)
}

/// Conditional rule 4: a pattern of literal runs between `%`s (no `_`, no escape
/// character) matched on the bytes without copying either string: the first run
/// a prefix, the last a suffix, each run between found leftmost after the one
/// before (which is what greedy matching finds). None for any other pattern.
fn like_literals(s: &str, p: &str, esc: Option<char>) -> Option<bool> {
    if p.contains('_') || esc.is_some_and(|e| p.contains(e)) {
        return None;
    }
    let Some((first, after)) = p.split_once('%') else {
        return Some(s == p);
    };
    let Some(rest) = s.strip_prefix(first) else {
        return Some(false);
    };
    let (middle, last) = after.rsplit_once('%').unwrap_or(("", after));
    let Some(mut rest) = rest.strip_suffix(last) else {
        return Some(false);
    };
    for run in middle.split('%').filter(|r| !r.is_empty()) {
        match memchr::memmem::find(rest.as_bytes(), run.as_bytes()) {
            // A whole run's bytes found: the cut is on a character boundary.
            Some(i) => rest = &rest[i + run.len()..],
            None => return Some(false),
        }
    }
    Some(true)
}

#[derive(Clone, Copy, PartialEq)]
enum Tok {
    Lit(char),
    One,
    Any,
    /// The pattern ends with its escape character: 22025 if the match reaches it
    /// with text left, as PostgreSQL's matcher (else simply no match).
    BadEscape,
}

/// Greedy matching with one backtrack point per `%` (linear in practice, at most
/// O(text × pattern)).
fn matches(text: &[char], toks: &[Tok]) -> SqlResult<bool> {
    let (mut t, mut p) = (0usize, 0usize);
    let mut star: Option<(usize, usize)> = None;
    while t < text.len() {
        match toks.get(p) {
            Some(Tok::Any) => {
                star = Some((p, t));
                p += 1;
            }
            Some(Tok::One) => {
                t += 1;
                p += 1;
            }
            Some(Tok::Lit(c)) if *c == text[t] => {
                t += 1;
                p += 1;
            }
            Some(Tok::BadEscape) => {
                return Err(SqlError::new(
                    "22025",
                    "LIKE pattern must not end with escape character",
                ))
            }
            _ => match star {
                Some((sp, st)) => {
                    p = sp + 1;
                    t = st + 1;
                    star = Some((sp, st + 1));
                }
                None => return Ok(false),
            },
        }
    }
    Ok(toks[p..].iter().all(|k| *k == Tok::Any))
}

#[cfg(test)]
mod tests {
    use super::like;

    #[test]
    fn like_patterns() {
        let m = |s: &str, p: &str| like(s, p, None, false).unwrap();
        assert!(m("hello", "h%o"));
        assert!(m("hello", "%"));
        assert!(m("", "%"));
        assert!(!m("", "_"));
        assert!(m("hello", "_ello"));
        assert!(!m("hello", "hell"));
        assert!(m("a%b", "a\\%b"));
        assert!(!m("axb", "a\\%b"));
        assert!(m("abcabc", "%abc"));
        assert!(m("mississippi", "%iss%ppi"));
        assert!(like("HeLLo", "hello", None, true).unwrap());
        assert!(like("a_b", "a#_b", Some("#"), false).unwrap());
        assert_eq!(like("xz", "x\\", None, false).unwrap_err().code, "22025");
        assert!(!like("x", "x\\", None, false).unwrap());
    }

    /// Conditional rule 4's byte matching agrees with the general matcher on every
    /// pattern of literal runs, including overlapping prefix and suffix.
    #[test]
    fn literal_runs_match_as_the_general_matcher_does() {
        let texts = [
            "",
            "a",
            "ab",
            "aba",
            "abab",
            "ba",
            "special requests",
            "xspecialyrequestsz",
            "requests special",
            "é%ü",
            "éaé",
        ];
        let pats = [
            "",
            "%",
            "%%",
            "a",
            "a%",
            "%a",
            "%a%",
            "ab%ba",
            "a%a",
            "%b%a%",
            "aba%aba",
            "%special%requests%",
            "special%",
            "%requests",
            "é%",
            "%é",
            "%a%é%",
        ];
        for t in texts {
            for p in pats {
                let fast = super::like_literals(t, p, Some('\\')).expect("literal runs");
                let toks: Vec<_> = p
                    .chars()
                    .map(|c| match c {
                        '%' => super::Tok::Any,
                        c => super::Tok::Lit(c),
                    })
                    .collect();
                let text: Vec<char> = t.chars().collect();
                assert_eq!(
                    fast,
                    super::matches(&text, &toks).unwrap(),
                    "{t:?} LIKE {p:?}"
                );
            }
        }
        assert_eq!(super::like_literals("a_b", "a_b", None), None);
        assert_eq!(super::like_literals("a#b", "a#b", Some('#')), None);
    }
}
