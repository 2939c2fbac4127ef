//! Window functions: `f(...) OVER (PARTITION BY ... ORDER BY ... frame)`.
//!
//! Entry points: [`Binder::window_call`] (binding a call with OVER), [`compute`]
//! (a window function's value for every row of the input, which the executor's
//! Window node then appends to each row).
//!
//! Rules (cited as "window rule N"):
//! 1. The functions are PostgreSQL's: row_number, rank, dense_rank (bigint),
//!    percent_rank, cume_dist (double precision), ntile (integer), lag, lead,
//!    first_value, last_value, nth_value (the argument's type), and every aggregate.
//! 2. Rows are partitioned by PARTITION BY and ordered by ORDER BY; rows equal on
//!    ORDER BY are peers. Without ORDER BY every row of a partition is a peer.
//! 3. The frame is PostgreSQL's default — RANGE BETWEEN UNBOUNDED PRECEDING AND
//!    CURRENT ROW (so the current row's peers are in it) — or the one written:
//!    ROWS, RANGE or GROUPS with UNBOUNDED, CURRENT ROW and offsets PRECEDING /
//!    FOLLOWING: rows, peer groups, or (RANGE, one ORDER BY key) a distance from
//!    the current row's key — a number for numbers, an interval for dates and
//!    times; a row whose key is NULL has its NULL peers as its frame. Offsets name
//!    no column and are checked once per partition (NULL 22004, negative 22013).
//!    Aggregates, first_value, last_value and nth_value read the frame; the others
//!    the partition.
//! 4. Window functions are allowed in the select list and ORDER BY only (42P20
//!    elsewhere), are evaluated after grouping and HAVING, and may not nest.
//! 5. Cost: a sort per window (PostgreSQL's quicksort, taking the rows in the order
//!    the previous window left them, so peers come out as PostgreSQL's do); windows
//!    are computed in PostgreSQL's order ([`pg_window_order`]); aggregates over a frame starting at UNBOUNDED
//!    PRECEDING run in one pass, other frames recompute each row's frame.
//! 6. Named windows are PostgreSQL's: `OVER w` is window `w` of the SELECT's WINDOW
//!    clause as defined; `OVER (w ORDER BY ...)` and `WINDOW v AS (w ...)` copy `w`
//!    and add to it, never overriding its PARTITION BY or ORDER BY, nor copying its
//!    frame (42P20); an unknown name is 42704.

use crate::aggregate::AggState;
use crate::bind::{compare, Agg, Binder, Expr, Scope};
use crate::{object_name, Datum, SqlError, SqlResult, SqlType};
use sqlparser::ast;
use std::cmp::Ordering;

/// The order PostgreSQL computes windows in (window rule 5; its
/// select_active_windows): functions with the same PARTITION BY, ORDER BY and frame
/// share a window; windows are sorted by their sort keys — a key written later
/// first, descending before ascending, NULLS FIRST before NULLS LAST, a longer list
/// before its prefix — so windows sorting alike are adjacent. The last window's
/// order is the output's. Returns indexes into `funcs`.
pub fn pg_window_order(funcs: &[WinFunc]) -> Vec<usize> {
    let mut keys: Vec<&Expr> = Vec::new();
    let mut windows: Vec<(Vec<SortKey>, Vec<usize>)> = Vec::new();
    let mut seen: Vec<usize> = Vec::new();
    for (i, f) in funcs.iter().enumerate() {
        if let Some(w) = seen.iter().position(|&j| {
            let g = &funcs[j];
            g.partition == f.partition && g.order == f.order && g.frame == f.frame
        }) {
            windows[w].1.push(i);
            continue;
        }
        let mut unique: Vec<SortKey> = Vec::new();
        let clauses = f.partition.iter().map(|e| (e, false, false));
        for (e, desc, nulls_first) in clauses.chain(f.order.iter().map(|(e, d, n)| (e, *d, *n))) {
            let r = match keys.iter().position(|k| *k == e) {
                Some(r) => r,
                None => {
                    keys.push(e);
                    keys.len() - 1
                }
            };
            if !unique.contains(&(r, desc, nulls_first)) {
                unique.push((r, desc, nulls_first));
            }
        }
        seen.push(i);
        windows.push((unique, vec![i]));
    }
    crate::sort::pg_qsort(&mut windows, &mut |a, b| common_prefix_cmp(&a.0, &b.0));
    windows.into_iter().flat_map(|w| w.1).collect()
}

/// A window's sort key: the key's number (in order written), descending, NULLS FIRST.
type SortKey = (usize, bool, bool);

/// PostgreSQL's common_prefix_cmp over two windows' sort keys.
fn common_prefix_cmp(a: &[SortKey], b: &[SortKey]) -> Ordering {
    for (x, y) in a.iter().zip(b) {
        let o = y.0.cmp(&x.0).then(y.1.cmp(&x.1)).then(y.2.cmp(&x.2));
        if o != Ordering::Equal {
            return o;
        }
    }
    b.len().cmp(&a.len())
}

/// A bound window function call.
#[derive(Clone, Debug, PartialEq)]
pub struct WinFunc {
    pub kind: WinKind,
    pub args: Vec<Expr>,
    pub partition: Vec<Expr>,
    /// ORDER BY: expression, descending, NULLs first.
    pub order: Vec<(Expr, bool, bool)>,
    pub frame: Frame,
    pub ty: SqlType,
}

#[derive(Clone, Debug, PartialEq)]
pub enum WinKind {
    RowNumber,
    Rank,
    DenseRank,
    PercentRank,
    CumeDist,
    Ntile,
    Lag,
    Lead,
    FirstValue,
    LastValue,
    NthValue,
    Agg(Agg),
}

#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Units {
    Rows,
    Range,
    Groups,
}

#[derive(Clone, Debug, PartialEq)]
pub enum Bound {
    UnboundedPreceding,
    Preceding(Offset),
    CurrentRow,
    Following(Offset),
    UnboundedFollowing,
}

/// An offset PRECEDING / FOLLOWING (window rule 3).
#[derive(Clone, Debug, PartialEq)]
pub struct Offset {
    /// The offset: rows (ROWS), peer groups (GROUPS) or a distance from the
    /// current row's ORDER BY value (RANGE); it names no column, so it is
    /// evaluated once per partition.
    pub value: Expr,
    /// RANGE: the bound's value over the row `[key]` (the key minus or plus the
    /// offset, in the window's direction).
    pub bound: Option<Expr>,
}

#[derive(Clone, Debug, PartialEq)]
pub struct Frame {
    pub units: Units,
    pub start: Bound,
    pub end: Bound,
    /// EXCLUDE: rows of the frame left out per row (window rule 3).
    pub exclude: crate::frames::Exclude,
}

/// PostgreSQL's default frame (window rule 3).
const DEFAULT_FRAME: Frame = Frame {
    units: Units::Range,
    start: Bound::UnboundedPreceding,
    end: Bound::CurrentRow,
    exclude: crate::frames::Exclude::NoOthers,
};

/// A SELECT's WINDOW clause, each definition resolved against those before it
/// (window rule 6); 42P20 for a name defined twice.
pub(crate) fn named_windows(
    defs: &[ast::NamedWindowDefinition],
) -> SqlResult<Vec<(String, ast::WindowSpec)>> {
    let mut out: Vec<(String, ast::WindowSpec)> = Vec::new();
    for ast::NamedWindowDefinition(name, e) in defs {
        let n = crate::ident_name(name);
        if out.iter().any(|(m, _)| *m == n) {
            return Err(SqlError::new(
                "42P20",
                format!("window \"{n}\" is already defined"),
            ));
        }
        let spec = match e {
            ast::NamedWindowExpr::NamedWindow(r) => named(&out, r)?.clone(),
            ast::NamedWindowExpr::WindowSpec(s) => resolve_spec(&out, s)?,
        };
        out.push((n, spec));
    }
    Ok(out)
}

/// Window `name` of the WINDOW clause (42704 if there is none such).
fn named<'w>(
    wins: &'w [(String, ast::WindowSpec)],
    name: &ast::Ident,
) -> SqlResult<&'w ast::WindowSpec> {
    let n = crate::ident_name(name);
    wins.iter()
        .find(|(m, _)| *m == n)
        .map(|(_, s)| s)
        .ok_or_else(|| SqlError::new("42704", format!("window \"{n}\" does not exist")))
}

/// `(w ORDER BY ...)`: window `w` copied, then this spec's clauses added, with
/// PostgreSQL's refusals (42P20): no second PARTITION BY, no second ORDER BY, and
/// no copy of a window that has a frame.
fn resolve_spec(
    wins: &[(String, ast::WindowSpec)],
    spec: &ast::WindowSpec,
) -> SqlResult<ast::WindowSpec> {
    // A frame's exclusion rides in the name (frames rule 3): kept there once
    // resolved, where no base window is looked up again.
    let (marker, base) = match &spec.window_name {
        Some(n) if n.value.starts_with('\u{1}') => {
            let (_, base) = crate::frames::split_name(n)?;
            (Some(n.clone()), base)
        }
        other => (None, other.clone()),
    };
    let mut out = resolve_base(wins, spec, base.as_ref())?;
    out.window_name = marker;
    Ok(out)
}

fn resolve_base(
    wins: &[(String, ast::WindowSpec)],
    spec: &ast::WindowSpec,
    base_name: Option<&ast::Ident>,
) -> SqlResult<ast::WindowSpec> {
    let Some(base_name) = base_name else {
        return Ok(spec.clone());
    };
    let base = named(wins, base_name)?;
    let n = crate::ident_name(base_name);
    let refuse = |m: String| Err(SqlError::new("42P20", m));
    if !spec.partition_by.is_empty() {
        return refuse(format!(
            "cannot override PARTITION BY clause of window \"{n}\""
        ));
    }
    if !spec.order_by.is_empty() && !base.order_by.is_empty() {
        return refuse(format!("cannot override ORDER BY clause of window \"{n}\""));
    }
    if base.window_frame.is_some() {
        let e = SqlError::new(
            "42P20",
            format!("cannot copy window \"{n}\" because it has a frame clause"),
        );
        let bare = spec.order_by.is_empty() && spec.window_frame.is_none();
        return Err(match bare {
            true => e.with_hint("Omit the parentheses in this OVER clause."),
            false => e,
        });
    }
    let mut out = base.clone();
    if !spec.order_by.is_empty() {
        out.order_by = spec.order_by.clone();
    }
    out.window_frame = spec.window_frame.clone();
    Ok(out)
}

impl Binder {
    /// A call with OVER (window rules 1 and 4), appended to the window functions
    /// of the SELECT being bound; its value is `Expr::Window(n)`.
    pub(crate) fn window_call(
        &mut self,
        scope: &Scope<'_>,
        f: &ast::Function,
        aggs: &mut Option<&mut Vec<Agg>>,
    ) -> SqlResult<(Expr, SqlType)> {
        let name = object_name(&f.name)?;
        let Some(mut list) = self.wins.take() else {
            return Err(SqlError::new(
                "42P20",
                format!("window functions are not allowed here ({name})"),
            ));
        };
        let r = self.window_parts(scope, f, &name, aggs);
        if let Ok(w) = &r {
            list.push(w.clone());
        }
        self.wins = Some(list);
        let w = r?;
        let n = self.wins.as_ref().map_or(0, Vec::len) - 1;
        Ok((Expr::Window(n), w.ty))
    }

    fn window_parts(
        &mut self,
        scope: &Scope<'_>,
        f: &ast::Function,
        name: &str,
        aggs: &mut Option<&mut Vec<Agg>>,
    ) -> SqlResult<WinFunc> {
        let spec = match &f.over {
            Some(ast::WindowType::WindowSpec(spec)) => resolve_spec(&self.named_wins, spec)?,
            Some(ast::WindowType::NamedWindow(n)) => named(&self.named_wins, n)?.clone(),
            None => unreachable!("a window call has OVER"),
        };
        let spec = &spec;
        let (kind, args, ty) = self.window_function(scope, f, name, aggs)?;
        let mut partition = Vec::new();
        for e in &spec.partition_by {
            partition.push(self.expr_in(scope, e, aggs)?.0);
        }
        let mut order = Vec::new();
        let mut types = Vec::new();
        for o in &spec.order_by {
            let (x, t) = self.expr_in(scope, &o.expr, aggs)?;
            types.push((t, matches!(o.options.sort, Some(ast::OrderBySort::Desc))));
            let x = if t == SqlType::Bpchar {
                crate::bind::bpchar_text(x)
            } else {
                x
            };
            let desc = matches!(o.options.sort, Some(ast::OrderBySort::Desc));
            order.push((x, desc, o.options.nulls_first.unwrap_or(desc)));
        }
        let mut frame = match &spec.window_frame {
            None => DEFAULT_FRAME,
            Some(fr) => self.frame(fr, &types)?,
        };
        frame.exclude = crate::frames::exclusion(spec)?;
        Ok(WinFunc {
            kind,
            args,
            partition,
            order,
            frame,
            ty,
        })
    }

    /// The function of a window call: its kind, arguments and result type.
    fn window_function(
        &mut self,
        scope: &Scope<'_>,
        f: &ast::Function,
        name: &str,
        aggs: &mut Option<&mut Vec<Agg>>,
    ) -> SqlResult<(WinKind, Vec<Expr>, SqlType)> {
        let star = matches!(&f.args, ast::FunctionArguments::List(l)
            if l.args.iter().any(|a| matches!(a, ast::FunctionArg::Unnamed(ast::FunctionArgExpr::Wildcard))));
        if let Some(func) = crate::aggregate::agg_func(name, star) {
            let mut g = f.clone();
            g.over = None;
            let agg = self.bind_agg(scope, &g, func)?;
            if !agg.order.is_empty() {
                return Err(SqlError::new(
                    "0A000",
                    "aggregate ORDER BY is not implemented for window functions",
                ));
            }
            let ty = agg.ty;
            return Ok((WinKind::Agg(agg), Vec::new(), ty));
        }
        let mut plain = f.clone();
        plain.over = None;
        let (args, _) = crate::bind::function_args(&plain)?;
        let mut bound = Vec::new();
        for a in &args {
            let (x, t) = self.expr_in(scope, a, aggs)?;
            bound.push(self.settle_type(x, t));
        }
        let arg_t = bound.first().map_or(SqlType::Int8, |(_, t)| *t);
        let (kind, want, ty) = match name {
            "row_number" => (WinKind::RowNumber, 0..=0, SqlType::Int8),
            "rank" => (WinKind::Rank, 0..=0, SqlType::Int8),
            "dense_rank" => (WinKind::DenseRank, 0..=0, SqlType::Int8),
            "percent_rank" => (WinKind::PercentRank, 0..=0, SqlType::Float8),
            "cume_dist" => (WinKind::CumeDist, 0..=0, SqlType::Float8),
            "ntile" => (WinKind::Ntile, 1..=1, SqlType::Int4),
            "lag" => (WinKind::Lag, 1..=3, arg_t),
            "lead" => (WinKind::Lead, 1..=3, arg_t),
            "first_value" => (WinKind::FirstValue, 1..=1, arg_t),
            "last_value" => (WinKind::LastValue, 1..=1, arg_t),
            "nth_value" => (WinKind::NthValue, 2..=2, arg_t),
            _ => {
                return Err(SqlError::new(
                    "42809",
                    format!(
                    "OVER specified, but {name} is not a window function nor an aggregate function"
                ),
                ))
            }
        };
        if !want.contains(&bound.len()) {
            return Err(SqlError::new(
                "42883",
                format!(
                    "function {name} with {} arguments does not exist",
                    bound.len()
                ),
            ));
        }
        let mut out = Vec::with_capacity(bound.len());
        for (i, (e, t)) in bound.into_iter().enumerate() {
            let count = matches!(
                (&kind, i),
                (WinKind::Ntile, 0) | (WinKind::NthValue, 1) | (WinKind::Lag | WinKind::Lead, 1)
            );
            let e = if count {
                self.coerce(e, t, SqlType::Int4)
                    .map_err(|_| int_arg(name))?
            } else if matches!((&kind, i), (WinKind::Lag | WinKind::Lead, 2)) {
                self.to_common(e, t, ty)?
            } else {
                e
            };
            out.push(e);
        }
        Ok((kind, out, ty))
    }
}

fn int_arg(name: &str) -> SqlError {
    SqlError::new(
        "42883",
        format!("function {name} takes an integer argument here"),
    )
}

/// A written frame (window rule 3).
impl Binder {
    /// A frame clause over the window's ORDER BY keys `order` (expression type,
    /// descending) — window rule 3, with PostgreSQL's refusals.
    fn frame(&mut self, f: &ast::WindowFrame, order: &[(SqlType, bool)]) -> SqlResult<Frame> {
        let units = match f.units {
            ast::WindowFrameUnits::Rows => Units::Rows,
            ast::WindowFrameUnits::Range => Units::Range,
            ast::WindowFrameUnits::Groups => Units::Groups,
        };
        if units == Units::Groups && order.is_empty() {
            return Err(SqlError::new(
                "42P20",
                "GROUPS mode requires an ORDER BY clause",
            ));
        }
        let start = self.frame_bound(&f.start_bound, false, units, order)?;
        let end = match &f.end_bound {
            Some(b) => self.frame_bound(b, true, units, order)?,
            None => Bound::CurrentRow,
        };
        Ok(Frame {
            units,
            start,
            end,
            exclude: crate::frames::Exclude::NoOthers,
        })
    }

    fn frame_bound(
        &mut self,
        b: &ast::WindowFrameBound,
        end: bool,
        units: Units,
        order: &[(SqlType, bool)],
    ) -> SqlResult<Bound> {
        Ok(match b {
            ast::WindowFrameBound::CurrentRow => Bound::CurrentRow,
            ast::WindowFrameBound::Preceding(None) if !end => Bound::UnboundedPreceding,
            ast::WindowFrameBound::Following(None) if end => Bound::UnboundedFollowing,
            ast::WindowFrameBound::Preceding(Some(e)) => {
                Bound::Preceding(self.frame_offset(e, false, units, order)?)
            }
            ast::WindowFrameBound::Following(Some(e)) => {
                Bound::Following(self.frame_offset(e, true, units, order)?)
            }
            ast::WindowFrameBound::Preceding(None) => {
                return Err(SqlError::new(
                    "42P20",
                    "frame end cannot be UNBOUNDED PRECEDING",
                ))
            }
            ast::WindowFrameBound::Following(None) => {
                return Err(SqlError::new(
                    "42P20",
                    "frame start cannot be UNBOUNDED FOLLOWING",
                ))
            }
        })
    }

    /// An offset: a bigint for ROWS and GROUPS; for RANGE, of a type the single
    /// ORDER BY key can be moved by, and the bound's expression over `[key]`.
    fn frame_offset(
        &mut self,
        e: &ast::Expr,
        following: bool,
        units: Units,
        order: &[(SqlType, bool)],
    ) -> SqlResult<Offset> {
        let (x, t) = self.expr(&Scope::default(), e)?;
        if units != Units::Range {
            let value = self.coerce(x, t, SqlType::Int8)?;
            return Ok(Offset { value, bound: None });
        }
        let [(kt, desc)] = order else {
            return Err(SqlError::new(
                "42P20",
                "RANGE with offset PRECEDING/FOLLOWING requires exactly one ORDER BY column",
            ));
        };
        let t = if t == SqlType::Unknown { *kt } else { t };
        let op = match following != *desc {
            true => crate::bind::BinOp::Add,
            false => crate::bind::BinOp::Sub,
        };
        let timed = matches!(
            kt,
            SqlType::Date | SqlType::Timestamp | SqlType::TimestampTz | SqlType::Time
        );
        let fits = (kt.is_number() && t.is_number()) || (timed && t == SqlType::Interval);
        let bound = fits
            .then(|| self.binop(Expr::Col(0), *kt, op, x.clone(), t).ok())
            .flatten()
            .ok_or_else(|| {
                SqlError::new(
                    "0A000",
                    format!(
                        "RANGE with offset PRECEDING/FOLLOWING is not supported for column type {} and offset type {}",
                        kt.name(),
                        t.name()
                    ),
                )
                .with_hint("Cast the offset value to an appropriate type.")
            })?;
        Ok(Offset {
            value: x,
            bound: Some(bound.0),
        })
    }
}

/// Orders two rows' keys: (value, descending, NULLs first) per key.
pub fn cmp_keys(a: &[Datum], b: &[Datum], dirs: &[(bool, bool)]) -> Ordering {
    for (i, (desc, nulls_first)) in dirs.iter().enumerate() {
        let (x, y) = (&a[i], &b[i]);
        let o = match (x.is_null(), y.is_null()) {
            (true, true) => Ordering::Equal,
            (true, false) => {
                if *nulls_first {
                    Ordering::Less
                } else {
                    Ordering::Greater
                }
            }
            (false, true) => {
                if *nulls_first {
                    Ordering::Greater
                } else {
                    Ordering::Less
                }
            }
            (false, false) => {
                let o = compare(x, y);
                if *desc {
                    o.reverse()
                } else {
                    o
                }
            }
        };
        if o != Ordering::Equal {
            return o;
        }
    }
    Ordering::Equal
}

/// One partition's rows, in window order, as the computation sees them.
pub struct Part<'p> {
    /// Each row's ORDER BY keys (peers are equal on them).
    pub keys: &'p [Vec<Datum>],
    /// Each row's argument values.
    pub args: &'p [Vec<Datum>],
    /// The frame's offsets, resolved ([`bounds`]).
    pub bounds: &'p Bounds,
}

/// A frame's offsets resolved for one partition (window rule 3): for ROWS and
/// GROUPS the start's and end's counts; for RANGE each row's start and end values;
/// and every row's peer group with each group's rows.
#[derive(Default)]
pub struct Bounds {
    counts: [i64; 2],
    values: [Vec<Datum>; 2],
    group: Vec<usize>,
    groups: Vec<(usize, usize)>,
    /// RANGE: the ORDER BY key's direction (descending, NULLs first).
    dir: (bool, bool),
}

/// Resolves `w`'s frame offsets over one partition's ORDER BY `keys`, evaluating
/// with `eval` (an expression over a row). PostgreSQL's errors: a NULL offset is
/// 22004, a negative one 22013.
pub fn bounds(
    w: &WinFunc,
    keys: &[Vec<Datum>],
    eval: &mut dyn FnMut(&Expr, &[Datum]) -> SqlResult<Datum>,
) -> SqlResult<Bounds> {
    let mut b = Bounds {
        dir: w.order.first().map_or((false, false), |(_, d, n)| (*d, *n)),
        ..Bounds::default()
    };
    for (i, k) in keys.iter().enumerate() {
        match b.groups.last_mut() {
            Some(g) if keys[g.0] == *k => g.1 = i + 1,
            _ => b.groups.push((i, i + 1)),
        }
        b.group.push(b.groups.len() - 1);
    }
    for (which, bound) in [&w.frame.start, &w.frame.end].into_iter().enumerate() {
        let (Bound::Preceding(o) | Bound::Following(o)) = bound else {
            continue;
        };
        let what = if which == 0 { "starting" } else { "ending" };
        let v = eval(&o.value, &[])?;
        if v.is_null() {
            let m = format!("frame {what} offset must not be null");
            return Err(SqlError::new("22004", m));
        }
        let negative = crate::numeric::compare(&v, &Datum::Int4(0)) == Some(Ordering::Less);
        match &o.bound {
            None if negative => {
                let m = format!("frame {what} offset must not be negative");
                return Err(SqlError::new("22013", m));
            }
            None => {
                b.counts[which] = match v {
                    Datum::Int8(k) => k,
                    _ => i64::MAX,
                }
            }
            Some(_) if negative || interval_negative(&v) => {
                let m = "invalid preceding or following size in window function";
                return Err(SqlError::new("22013", m));
            }
            Some(e) => {
                b.values[which] = keys
                    .iter()
                    .map(|k| match k[0].is_null() {
                        true => Ok(Datum::Null),
                        false => eval(e, &k[..1]),
                    })
                    .collect::<SqlResult<_>>()?;
            }
        }
    }
    Ok(b)
}

fn interval_negative(v: &Datum) -> bool {
    matches!(v, Datum::Interval(iv) if iv.months < 0 || iv.days < 0 || iv.micros < 0)
}

impl Part<'_> {
    fn len(&self) -> usize {
        self.keys.len()
    }

    /// The first and one past the last peer of row `i` (window rule 2).
    fn peers(&self, i: usize) -> (usize, usize) {
        self.bounds.groups[self.bounds.group[i]]
    }

    /// Row `i`'s frame as a range of positions (window rule 3).
    fn frame(&self, f: &Frame, i: usize) -> (usize, usize) {
        let n = self.len();
        let s = self.bound_at(f, &f.start, 0, i).min(n);
        let e = self.bound_at(f, &f.end, 1, i).clamp(s, n);
        (s, e)
    }

    /// Row `i`'s frame rows in order, less those its EXCLUDE leaves out (window
    /// rule 3): the row itself, its peers, or its peers but itself.
    fn frame_rows(&self, f: &Frame, i: usize) -> impl Iterator<Item = usize> {
        use crate::frames::Exclude;
        let (s, e) = self.frame(f, i);
        let (p0, p1) = self.peers(i);
        let (x0, x1, keep) = match f.exclude {
            Exclude::NoOthers => (0, 0, None),
            Exclude::CurrentRow => (i, i + 1, None),
            Exclude::Group => (p0, p1, None),
            Exclude::Ties => (p0, p1, Some(i)),
        };
        (s..e).filter(move |&j| !(x0..x1).contains(&j) || Some(j) == keep)
    }

    /// Where bound `b` (the start if `which` is 0, else the end: one past the
    /// frame's last row) falls for row `i`.
    fn bound_at(&self, f: &Frame, b: &Bound, which: usize, i: usize) -> usize {
        let n = self.len();
        let end = which == 1;
        let (p0, p1) = self.peers(i);
        let sign = match b {
            Bound::UnboundedPreceding => return 0,
            Bound::UnboundedFollowing => return n,
            Bound::CurrentRow if f.units == Units::Rows => return i + usize::from(end),
            Bound::CurrentRow => return if end { p1 } else { p0 },
            Bound::Preceding(_) => -1i64,
            Bound::Following(_) => 1,
        };
        let k = self.bounds.counts[which].saturating_mul(sign);
        match f.units {
            Units::Rows => {
                let at = (i as i64).saturating_add(k).saturating_add(i64::from(end));
                at.clamp(0, n as i64) as usize
            }
            Units::Groups => {
                let g = (self.bounds.group[i] as i64).saturating_add(k);
                match usize::try_from(g)
                    .ok()
                    .and_then(|g| self.bounds.groups.get(g))
                {
                    None if g < 0 => 0,
                    None => n,
                    Some(&(gs, ge)) => {
                        if end {
                            ge
                        } else {
                            gs
                        }
                    }
                }
            }
            Units::Range => self.range_bound(which, i, (p0, p1)),
        }
    }

    /// RANGE with an offset: the first row at or past the start value, or one past
    /// the last row at or before the end value, in window order. A row whose key is
    /// NULL has its NULL peers as its frame.
    fn range_bound(&self, which: usize, i: usize, (p0, p1): (usize, usize)) -> usize {
        if self.keys[i][0].is_null() {
            return if which == 1 { p1 } else { p0 };
        }
        let v = &self.bounds.values[which][i];
        let dirs = [self.bounds.dir];
        let cmp = |k: &Vec<Datum>| cmp_keys(&k[..1], std::slice::from_ref(v), &dirs);
        match which {
            0 => self.keys.partition_point(|k| cmp(k) == Ordering::Less),
            _ => self.keys.partition_point(|k| cmp(k) != Ordering::Greater),
        }
    }
}

/// The values of window function `w` for every row of one partition (window
/// rules 1-3, 5).
pub fn compute(w: &WinFunc, p: &Part<'_>) -> SqlResult<Vec<Datum>> {
    let n = p.len();
    let mut out = Vec::with_capacity(n);
    match &w.kind {
        WinKind::Agg(a) => return aggregate(w, a, p),
        WinKind::Ntile => return ntile(p),
        _ => {}
    }
    let mut dense = 0i64;
    for i in 0..n {
        let (p0, p1) = p.peers(i);
        if p0 == i {
            dense += 1;
        }
        let arg = |k: usize| p.args[i].get(k).cloned().unwrap_or(Datum::Null);
        let v = match &w.kind {
            WinKind::RowNumber => Datum::Int8(i as i64 + 1),
            WinKind::Rank => Datum::Int8(p0 as i64 + 1),
            WinKind::DenseRank => Datum::Int8(dense),
            WinKind::PercentRank if n > 1 => float(p0 as f64 / (n - 1) as f64),
            WinKind::PercentRank => float(0.0),
            WinKind::CumeDist => float(p1 as f64 / n as f64),
            WinKind::Lag | WinKind::Lead => {
                let k = match arg(1) {
                    Datum::Int4(k) => i64::from(k),
                    Datum::Null if p.args[i].len() > 1 => return Ok(nulls_to(out, n)),
                    _ => 1,
                };
                let j = if w.kind == WinKind::Lag {
                    i as i64 - k
                } else {
                    i as i64 + k
                };
                match usize::try_from(j).ok().filter(|j| *j < n) {
                    Some(j) => p.args[j][0].clone(),
                    None => arg(2),
                }
            }
            WinKind::FirstValue | WinKind::LastValue | WinKind::NthValue
                if w.frame.exclude != crate::frames::Exclude::NoOthers =>
            {
                let mut rows = p.frame_rows(&w.frame, i);
                let at = match &w.kind {
                    WinKind::FirstValue => rows.next(),
                    WinKind::LastValue => rows.last(),
                    _ => match arg(1) {
                        Datum::Int4(k) if k <= 0 => return Err(nth_not_positive()),
                        Datum::Int4(k) => rows.nth(k as usize - 1),
                        _ => None,
                    },
                };
                at.map_or(Datum::Null, |j| p.args[j][0].clone())
            }
            WinKind::FirstValue | WinKind::LastValue | WinKind::NthValue => {
                let (s, e) = p.frame(&w.frame, i);
                let at = match &w.kind {
                    WinKind::FirstValue => Some(s),
                    WinKind::LastValue => e.checked_sub(1),
                    _ => match arg(1) {
                        Datum::Int4(k) if k <= 0 => return Err(nth_not_positive()),
                        Datum::Int4(k) => Some(s + k as usize - 1),
                        _ => None,
                    },
                };
                at.filter(|j| *j < e && *j >= s)
                    .map_or(Datum::Null, |j| p.args[j][0].clone())
            }
            WinKind::Agg(_) | WinKind::Ntile => unreachable!("computed above"),
        };
        out.push(v);
    }
    Ok(out)
}

fn nth_not_positive() -> SqlError {
    SqlError::new("22016", "argument of nth_value must be greater than zero")
}

fn nulls_to(mut out: Vec<Datum>, n: usize) -> Vec<Datum> {
    out.resize(n, Datum::Null);
    out
}

fn float(v: f64) -> Datum {
    Datum::Float8(strata_types::Float::new(v))
}

/// ntile(k): PostgreSQL's buckets, the first `n % k` one row larger.
fn ntile(p: &Part<'_>) -> SqlResult<Vec<Datum>> {
    let n = p.len();
    let k = match p.args.first().and_then(|a| a.first()) {
        Some(Datum::Int4(k)) if *k <= 0 => {
            return Err(SqlError::new(
                "22014",
                "argument of ntile must be greater than zero",
            ))
        }
        Some(Datum::Int4(k)) => *k as usize,
        _ => return Ok(vec![Datum::Null; n]),
    };
    let (size, extra) = (n / k, n % k);
    let mut out = Vec::with_capacity(n);
    for b in 0..k.min(n) {
        let rows = size + usize::from(b < extra);
        out.extend(std::iter::repeat_n(Datum::Int4(b as i32 + 1), rows));
    }
    Ok(out)
}

/// An aggregate over each row's frame; one pass when frames start at the
/// partition's start (window rule 5).
fn aggregate(w: &WinFunc, a: &Agg, p: &Part<'_>) -> SqlResult<Vec<Datum>> {
    let n = p.len();
    let feed = |st: &mut AggState, j: usize| -> SqlResult<()> {
        let row = &p.args[j];
        if row.get(2).is_some_and(|f| !crate::bind::is_true(f)) {
            return Ok(()); // FILTER
        }
        st.step(
            a,
            row.first().cloned().unwrap_or(Datum::Null),
            row.get(1).cloned().unwrap_or(Datum::Null),
        )
    };
    let mut out = Vec::with_capacity(n);
    if w.frame.start == Bound::UnboundedPreceding
        && w.frame.exclude == crate::frames::Exclude::NoOthers
    {
        let mut st = AggState::new(a);
        let mut fed = 0;
        for i in 0..n {
            let (_, e) = p.frame(&w.frame, i);
            while fed < e {
                feed(&mut st, fed)?;
                fed += 1;
            }
            out.push(st.value(a)?);
        }
        return Ok(out);
    }
    for i in 0..n {
        let mut st = AggState::new(a);
        for j in p.frame_rows(&w.frame, i) {
            feed(&mut st, j)?;
        }
        out.push(st.value(a)?);
    }
    Ok(out)
}

/// `w` with each of its expressions replaced by `f` of it (regrouping).
pub fn map_exprs(mut w: WinFunc, f: &mut dyn FnMut(Expr) -> SqlResult<Expr>) -> SqlResult<WinFunc> {
    w.args = w.args.into_iter().map(&mut *f).collect::<SqlResult<_>>()?;
    w.partition = w
        .partition
        .into_iter()
        .map(&mut *f)
        .collect::<SqlResult<_>>()?;
    w.order = w
        .order
        .into_iter()
        .map(|(e, d, n)| Ok((f(e)?, d, n)))
        .collect::<SqlResult<_>>()?;
    if let WinKind::Agg(a) = &mut w.kind {
        a.arg = a.arg.take().map(&mut *f).transpose()?;
        a.filter = a.filter.take().map(&mut *f).transpose()?;
        a.arg2 = a.arg2.take().map(&mut *f).transpose()?;
        for (e, _, _) in &mut a.order {
            *e = f(std::mem::replace(e, Expr::Const(Datum::Null)))?;
        }
    }
    Ok(w)
}

/// The expressions a window function reads per row for [`Part::args`]: its
/// arguments, or an aggregate's argument, delimiter and FILTER.
pub fn arg_exprs(w: &WinFunc) -> Vec<&Expr> {
    const NULL: &Expr = &Expr::Const(Datum::Null);
    match &w.kind {
        WinKind::Agg(a) => {
            let mut v = vec![
                a.arg.as_ref().unwrap_or(NULL),
                a.arg2.as_ref().unwrap_or(NULL),
            ];
            v.extend(a.filter.as_ref());
            v
        }
        _ => w.args.iter().collect(),
    }
}
