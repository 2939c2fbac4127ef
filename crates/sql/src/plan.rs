//! Access paths: whether a statement's WHERE lets it read its table through an index
//! instead of every page, and the index range to read.
//!
//! Entry points: [`choose`] (at bind time, over the table's columns and indexes) and
//! [`IndexPath::range`] (at execution, with the parameters' values).
//!
//! Rules (cited as "plan rule N"):
//! 1. Only conjuncts of the WHERE count: `col op value` or `value op col` with `op`
//!    one of `= < <= > >=` and `value` free of columns (an enclosing query's columns
//!    count as values: they are fixed for each run of a subquery) and of volatile functions
//!    (constants, parameters, casts and arithmetic of them), evaluated once.
//! 2. An index is usable if its first column has an equality or a range; it then
//!    takes equalities on its leading columns and at most a low and a high bound on
//!    the next. The index with the most equalities wins, then one with a range; ties go
//!    to the unique index, then the first defined (PostgreSQL's cost model would
//!    also weigh selectivity; with equalities first the choice is the same for
//!    key lookups).
//! 3. The WHERE is still applied to every row the index gives (engine index rule 4),
//!    but for the conjuncts the range enforces exactly ([`IndexPath::residual`]: a
//!    bound or equality on a column whose keys sort as SQL compares, plan rule 6's
//!    types), which PostgreSQL does not test again either. Where the range does
//!    not evaluate (rule 4) the whole WHERE is applied.
//! 4. A value that does not convert exactly to its column's key (a numeric against an
//!    integer column) gives no range: the statement reads every page instead, with
//!    the same result.
//! 5. A `char(n)` column counts only as SQL compares it, without its trailing spaces
//!    (`bpchar_text(col) op value`), which is how the engine keys it.

use crate::bind::{BinOp, Expr, Func};
use crate::{Datum, SqlResult};
use strata_engine::{ColType, Column, IndexDef, IndexRange};

/// An index and the expressions of its range (plan rule 2), read forward or
/// backward (plan rule 6).
#[derive(Clone, Debug)]
pub struct IndexPath {
    pub index: String,
    eq: Vec<Expr>,
    lo: Option<(Expr, bool)>,
    hi: Option<(Expr, bool)>,
    /// The types of the index's columns the range covers.
    types: Vec<ColType>,
    /// Read in descending order (ORDER BY ... DESC, plan rule 6).
    pub backward: bool,
    /// The column after the equalities is IS NOT NULL and has no bound (plan rule
    /// 6): its NULL keys are not read.
    not_null: bool,
    /// The conjuncts the range enforces exactly (plan rule 3).
    covers: Vec<Expr>,
}

/// A conjunct `col op value` (plan rule 1), with `op` as seen from the column.
struct Cmp<'a> {
    /// The conjunct itself.
    whole: &'a Expr,
    col: usize,
    /// The column is compared without its trailing spaces (plan rule 5).
    trimmed: bool,
    op: BinOp,
    value: &'a Expr,
}

/// A column as a comparison operand: bare, or a `char(n)` one without its trailing
/// spaces (plan rule 5).
fn column_of(e: &Expr) -> Option<(usize, bool)> {
    match e {
        Expr::Col(c) => Some((*c, false)),
        Expr::Call(Func::BpcharText, a) => match a.as_slice() {
            [Expr::Col(c)] => Some((*c, true)),
            _ => None,
        },
        _ => None,
    }
}

/// Plan rule 1: a value computed once: no columns, no volatile function.
fn is_value(e: &Expr) -> bool {
    match e {
        // An outer reference is fixed for each run of its (sub)query.
        Expr::Const(_) | Expr::Param(_) | Expr::Outer(..) => true,
        Expr::Cast(x, _) | Expr::Fit(x, _) | Expr::Neg(x) => is_value(x),
        Expr::Call(Func::BpcharText, a) => a.iter().all(is_value),
        Expr::Bin(a, op, b) => {
            matches!(
                op,
                BinOp::Add | BinOp::Sub | BinOp::Mul | BinOp::Div | BinOp::Mod | BinOp::Concat
            ) && is_value(a)
                && is_value(b)
        }
        _ => false,
    }
}

fn flip(op: BinOp) -> BinOp {
    match op {
        BinOp::Lt => BinOp::Gt,
        BinOp::Le => BinOp::Ge,
        BinOp::Gt => BinOp::Lt,
        BinOp::Ge => BinOp::Le,
        other => other,
    }
}

fn conjuncts<'a>(e: &'a Expr, out: &mut Vec<Cmp<'a>>) {
    match e {
        Expr::Bool(BinOp::And, v) => v.iter().for_each(|x| conjuncts(x, out)),
        Expr::Bin(a, BinOp::And, b) => {
            conjuncts(a, out);
            conjuncts(b, out);
        }
        Expr::Bin(a, op, b)
            if matches!(
                op,
                BinOp::Eq | BinOp::Lt | BinOp::Le | BinOp::Gt | BinOp::Ge
            ) =>
        {
            match (column_of(a), column_of(b)) {
                (Some((col, trimmed)), None) if is_value(b) => out.push(Cmp {
                    whole: e,
                    col,
                    trimmed,
                    op: *op,
                    value: b,
                }),
                (None, Some((col, trimmed))) if is_value(a) => out.push(Cmp {
                    whole: e,
                    col,
                    trimmed,
                    op: flip(*op),
                    value: a,
                }),
                _ => {}
            }
        }
        _ => {}
    }
}

/// Plan rule 2: the best index for `pred` over a table with `columns` and `indexes`.
pub fn choose(pred: Option<&Expr>, columns: &[Column], indexes: &[IndexDef]) -> Option<IndexPath> {
    let mut cmps = Vec::new();
    conjuncts(pred?, &mut cmps);
    let mut best: Option<((usize, bool, bool), IndexPath)> = None;
    for ix in indexes {
        let path = prefix_path(ix, columns, &cmps);
        if path.eq.is_empty() && path.lo.is_none() && path.hi.is_none() {
            continue;
        }
        let score = (
            path.eq.len(),
            path.lo.is_some() || path.hi.is_some(),
            ix.unique,
        );
        if best.as_ref().is_none_or(|(s, _)| score > *s) {
            best = Some((score, path));
        }
    }
    best.map(|(_, p)| p)
}

/// The range plan rule 2 gives index `ix`: equalities on its leading columns, then
/// a low and a high bound on the next.
fn prefix_path(ix: &IndexDef, columns: &[Column], cmps: &[Cmp<'_>]) -> IndexPath {
    let mut path = IndexPath {
        index: ix.name.clone(),
        eq: Vec::new(),
        lo: None,
        hi: None,
        types: Vec::new(),
        backward: false,
        not_null: false,
        covers: Vec::new(),
    };
    for &c in &ix.columns {
        let exact = orders_as_sql(&columns[c]);
        // Plan rule 5: as the engine keys the column.
        let trimmed = columns[c].padded;
        let on = |op: BinOp| {
            cmps.iter()
                .find(|x| x.col == c && x.op == op && x.trimmed == trimmed)
        };
        if let Some(eq) = on(BinOp::Eq) {
            path.eq.push(eq.value.clone());
            path.types.push(columns[c].ty);
            if exact {
                path.covers.push(eq.whole.clone());
            }
            continue;
        }
        let lo = on(BinOp::Ge)
            .map(|x| (x, true))
            .or(on(BinOp::Gt).map(|x| (x, false)));
        let hi = on(BinOp::Le)
            .map(|x| (x, true))
            .or(on(BinOp::Lt).map(|x| (x, false)));
        path.lo = lo.map(|(x, incl)| (x.value.clone(), incl));
        path.hi = hi.map(|(x, incl)| (x.value.clone(), incl));
        if exact {
            let bounds = lo.into_iter().chain(hi).map(|(x, _)| x.whole.clone());
            path.covers.extend(bounds);
        }
        if lo.is_some() || hi.is_some() {
            path.types.push(columns[c].ty);
        }
        break;
    }
    path
}

/// Whether `pred` has the conjunct `Col(c) IS NOT NULL`.
fn is_not_null(pred: &Expr, c: usize) -> bool {
    match pred {
        Expr::Bool(BinOp::And, v) => v.iter().any(|x| is_not_null(x, c)),
        Expr::IsNull(x, true) => **x == Expr::Col(c),
        _ => false,
    }
}

/// Whether an index on a column of type `ty` gives its values in ORDER BY's order
/// (plan rule 6): the key encodings that sort as SQL compares.
fn orders_as_sql(c: &Column) -> bool {
    use ColType as C;
    !c.padded
        && matches!(
            c.ty,
            C::Int2
                | C::Int4
                | C::Int8
                | C::Text
                | C::Date
                | C::Timestamp
                | C::TimestampTz
                | C::Time
                | C::Bool
                | C::Numeric
                | C::Uuid
        )
}

/// The path of index `ix` read whole, in its order (an Index Only Scan's where no
/// condition bounds it: planner rule 13).
pub fn whole(ix: &IndexDef, columns: &[Column]) -> IndexPath {
    prefix_path(ix, columns, &[])
}

/// Plan rule 6: an index that gives the rows in `order` (table columns with their
/// DESC and NULLS FIRST): its columns are those `pred` fixes by equality, then the
/// ORDER BY's, all ascending with NULLs last (read forward) or all descending with
/// NULLs first (read backward). Its range is plan rule 2's. The one with the most
/// equalities wins, then a unique one.
pub fn choose_ordered(
    pred: Option<&Expr>,
    columns: &[Column],
    indexes: &[IndexDef],
    order: &[(usize, bool, bool)],
) -> Option<IndexPath> {
    let backward = match order.first()? {
        (_, false, false) => false,
        (_, true, true) => true,
        _ => return None,
    };
    if order
        .iter()
        .any(|(c, d, n)| (*d, *n) != (backward, backward) || !orders_as_sql(&columns[*c]))
    {
        return None;
    }
    let mut cmps = Vec::new();
    if let Some(p) = pred {
        conjuncts(p, &mut cmps);
    }
    let mut best: Option<((usize, bool), IndexPath)> = None;
    for ix in indexes {
        let mut path = prefix_path(ix, columns, &cmps);
        let k = path.eq.len();
        let follows = ix.columns.len() >= k + order.len()
            && ix.columns[k..k + order.len()]
                .iter()
                .zip(order)
                .all(|(c, (o, _, _))| c == o);
        if !follows {
            continue;
        }
        path.backward = backward;
        let next = ix.columns[k];
        if path.lo.is_none() && path.hi.is_none() && pred.is_some_and(|p| is_not_null(p, next)) {
            path.not_null = true;
            path.types.push(columns[next].ty);
        }
        let score = (k, ix.unique);
        if best.as_ref().is_none_or(|(s, _)| score > *s) {
            best = Some((score, path));
        }
    }
    best.map(|(_, p)| p)
}

/// A value as the index key of a column of type `ty` (plan rule 4): `None` if it does
/// not convert exactly. NULL stays NULL (the range then matches nothing, as `=` and
/// the comparisons with NULL never hold).
fn key_value(d: Datum, ty: ColType) -> Option<Datum> {
    use ColType as C;
    Some(match (d, ty) {
        (Datum::Null, _) => Datum::Null,
        // Every integer type has the same key encoding.
        (Datum::Int2(v), C::Int2 | C::Int4 | C::Int8) => Datum::Int8(i64::from(v)),
        (Datum::Int4(v), C::Int2 | C::Int4 | C::Int8) => Datum::Int8(i64::from(v)),
        (Datum::Int8(v), C::Int2 | C::Int4 | C::Int8) => Datum::Int8(v),
        (Datum::Text(s), C::Text) => Datum::Text(s),
        (Datum::Bool(b), C::Bool) => Datum::Bool(b),
        (Datum::Timestamp(t), C::Timestamp) => Datum::Timestamp(t),
        (Datum::TimestampTz(t), C::TimestampTz) => Datum::TimestampTz(t),
        (Datum::Date(d), C::Date) => Datum::Date(d),
        (Datum::Uuid(u), C::Uuid) => Datum::Uuid(u),
        (Datum::Bytea(b), C::Bytea) => Datum::Bytea(b),
        // Floats key by their value as double precision; numerics by their value
        // whatever their scale.
        (Datum::Float4(f) | Datum::Float8(f), C::Float4 | C::Float8) => Datum::Float8(f),
        (Datum::Numeric(n), C::Numeric) => Datum::Numeric(n),
        (Datum::Time(t), C::Time) => Datum::Time(t),
        (Datum::Interval(i), C::Interval) => Datum::Interval(i),
        (Datum::Int2(v), C::Numeric) => Datum::Numeric(i64::from(v).into()),
        (Datum::Int4(v), C::Numeric) => Datum::Numeric(i64::from(v).into()),
        (Datum::Int8(v), C::Numeric) => Datum::Numeric(v.into()),
        _ => return None,
    })
}

impl IndexPath {
    /// `filter`'s conjuncts without those this path's range enforces exactly
    /// (plan rule 3), for the rows the range gives. Borrowed, not copied: a
    /// subquery in one is known by its address (subquery rule 1).
    /// One allocation at most (a correlated subquery's scan is built per outer
    /// row): the conjuncts are walked in place, not through a stack.
    pub fn residual<'e>(&self, filter: &'e Expr) -> Vec<&'e Expr> {
        fn walk<'e>(covers: &[Expr], e: &'e Expr, out: &mut Vec<&'e Expr>) {
            match e {
                Expr::Bool(BinOp::And, l) => l.iter().for_each(|x| walk(covers, x, out)),
                Expr::Bin(a, BinOp::And, b) => {
                    walk(covers, a, out);
                    walk(covers, b, out);
                }
                e if !covers.contains(e) => out.push(e),
                _ => {}
            }
        }
        let mut conjs = Vec::new();
        walk(&self.covers, filter, &mut conjs);
        conjs
    }

    /// The conjuncts the range enforces exactly (plan rule 3).
    /// How many leading index columns it fixes by equality.
    pub fn equalities(&self) -> usize {
        self.eq.len()
    }

    pub fn covered(&self) -> &[Expr] {
        &self.covers
    }

    /// The index conditions (EXPLAIN's Index Cond): per condition, the index
    /// column's position in the index, the operator as seen from the column, and
    /// the value.
    pub fn conds(&self) -> Vec<(usize, BinOp, &Expr)> {
        let mut out: Vec<(usize, BinOp, &Expr)> = self
            .eq
            .iter()
            .enumerate()
            .map(|(i, e)| (i, BinOp::Eq, e))
            .collect();
        let n = self.eq.len();
        if let Some((e, incl)) = &self.lo {
            out.push((n, if *incl { BinOp::Ge } else { BinOp::Gt }, e));
        }
        if let Some((e, incl)) = &self.hi {
            out.push((n, if *incl { BinOp::Le } else { BinOp::Lt }, e));
        }
        out
    }

    /// The position in the index of the column read without its NULL keys (IS
    /// NOT NULL), if any.
    pub fn not_null_at(&self) -> Option<usize> {
        self.not_null.then_some(self.eq.len())
    }

    /// The range for this execution, its values computed by `eval`; `None` if a value
    /// does not convert (plan rule 4: read every page instead).
    pub fn range(&self, eval: &dyn Fn(&Expr) -> SqlResult<Datum>) -> SqlResult<Option<IndexRange>> {
        let mut r = IndexRange {
            backward: self.backward,
            not_null: self.not_null,
            ..IndexRange::default()
        };
        for (e, ty) in self.eq.iter().zip(&self.types) {
            match key_value(eval(e)?, *ty) {
                Some(v) => r.eq.push(v),
                None => return Ok(None),
            }
        }
        let ty = self.types.last().copied();
        for (bound, slot) in [(&self.lo, &mut r.lo), (&self.hi, &mut r.hi)] {
            if let (Some((e, incl)), Some(ty)) = (bound, ty) {
                match key_value(eval(e)?, ty) {
                    Some(v) => *slot = Some((v, *incl)),
                    None => return Ok(None),
                }
            }
        }
        Ok(Some(r))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ix(name: &str, columns: &[usize], unique: bool) -> IndexDef {
        IndexDef {
            oid: strata_types::Oid(1),
            name: name.into(),
            relfilenumber: strata_types::RelFileNumber(1),
            columns: columns.to_vec(),
            unique,
            primary: false,
            constraint: false,
        }
    }

    fn cmp(col: usize, op: BinOp, v: i64) -> Expr {
        Expr::Bin(
            Box::new(Expr::Col(col)),
            op,
            Box::new(Expr::Const(Datum::Int8(v))),
        )
    }

    /// Plan rules 1 and 2: the index with the most equalities, then a range; nothing
    /// for a WHERE with no usable conjunct.
    #[test]
    fn the_index_with_the_most_equalities_wins() {
        let cols: Vec<Column> = ["a", "b", "c"]
            .iter()
            .map(|n| Column::new(n, ColType::Int4))
            .collect();
        let idx = [
            ix("i_b", &[1], false),
            ix("i_ab", &[0, 1], false),
            ix("i_c", &[2], true),
        ];
        let and = |v: Vec<Expr>| Expr::Bool(BinOp::And, v);
        let pick = |e: &Expr| choose(Some(e), &cols, &idx).map(|p| p.index);
        assert_eq!(
            pick(&and(vec![cmp(0, BinOp::Eq, 1), cmp(1, BinOp::Eq, 2)])).as_deref(),
            Some("i_ab")
        );
        assert_eq!(pick(&cmp(1, BinOp::Eq, 2)).as_deref(), Some("i_b"));
        assert_eq!(
            pick(&and(vec![cmp(1, BinOp::Eq, 2), cmp(2, BinOp::Eq, 2)])).as_deref(),
            Some("i_c")
        );
        assert_eq!(pick(&cmp(0, BinOp::Gt, 2)).as_deref(), Some("i_ab"));
        assert_eq!(pick(&cmp(0, BinOp::Ne, 2)), None);
        let or = Expr::Bool(BinOp::Or, vec![cmp(1, BinOp::Eq, 1), cmp(1, BinOp::Eq, 2)]);
        assert_eq!(pick(&or), None);
        // A value flipped to the right side; a column on both sides is no value.
        let flipped = Expr::Bin(Box::new(Expr::Param(0)), BinOp::Lt, Box::new(Expr::Col(2)));
        let p = choose(Some(&flipped), &cols, &idx).unwrap();
        assert_eq!(
            (p.index.as_str(), p.lo.is_some(), p.hi.is_none()),
            ("i_c", true, true)
        );
        let cols_both = Expr::Bin(Box::new(Expr::Col(0)), BinOp::Eq, Box::new(Expr::Col(1)));
        assert_eq!(pick(&cols_both), None);
        // Plan rule 4: a value that is not an integer gives no range.
        let p = choose(Some(&cmp(2, BinOp::Eq, 5)), &cols, &idx).unwrap();
        let text = p.range(&|_| Ok(Datum::Text("5".into()))).unwrap();
        assert_eq!(text, None);
        let int = p.range(&|_| Ok(Datum::Int4(5))).unwrap().unwrap();
        assert_eq!(int.eq, vec![Datum::Int8(5)]);
    }

    /// Plan rule 5: a `char(n)` column's index serves the comparison without its
    /// trailing spaces (as the binder writes every bpchar comparison), not a bare one.
    #[test]
    fn a_char_column_is_keyed_without_its_trailing_spaces() {
        let mut c = Column::new("code", ColType::Text);
        c.padded = true;
        c.max_chars = Some(3);
        let idx = [ix("chr_pkey", &[0], true)];
        let trimmed = |e: Expr| Expr::Call(Func::BpcharText, vec![e]);
        let konst = Expr::Const(Datum::Text("ab ".into()));
        let cmp = Expr::Bin(
            Box::new(trimmed(Expr::Col(0))),
            BinOp::Eq,
            Box::new(trimmed(konst.clone())),
        );
        let p = choose(Some(&cmp), std::slice::from_ref(&c), &idx).unwrap();
        // The value is the bound one, trimmed as it is evaluated.
        let r = p
            .range(&|e| match e {
                Expr::Call(Func::BpcharText, a) => match a.as_slice() {
                    [Expr::Const(Datum::Text(t))] => Ok(Datum::Text(t.trim_end().into())),
                    other => panic!("{other:?}"),
                },
                other => panic!("{other:?}"),
            })
            .unwrap()
            .unwrap();
        assert_eq!(r.eq, vec![Datum::Text("ab".into())]);
        let bare = Expr::Bin(Box::new(Expr::Col(0)), BinOp::Eq, Box::new(konst));
        assert!(choose(Some(&bare), std::slice::from_ref(&c), &idx).is_none());
    }
}
