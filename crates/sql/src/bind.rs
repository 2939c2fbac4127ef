//! Binding and evaluation: sqlparser expressions and queries resolved against a scope
//! of columns into typed [`Expr`] trees and [`SelectPlan`]s, and their evaluation.
//!
//! Invariants:
//! 1. Every bound expression has a static type known before any row is read, so the
//!    extended protocol can describe a statement's parameters and result columns.
//! 2. Untyped inputs (string literals, `$n` parameters, NULL) take their type from
//!    context, as PostgreSQL's unknown-type resolution does: the other operand of a
//!    comparison or arithmetic, the target column of an INSERT; otherwise text.
//! 3. Evaluation follows SQL's three-valued logic: NULL in, NULL out; WHERE keeps a
//!    row only when its condition is true. Integer overflow is 22003, never a wrap.
//! 4. Every recursion is bounded: binding counts nesting levels ([`MAX_EXPR_DEPTH`],
//!    then 54001; a chain of AND or OR is one n-ary node, walked in a loop, so it
//!    costs one level), evaluation counts again ([`MAX_EVAL_DEPTH`]); the walks over a
//!    bound tree (`uses_columns`) and over the source (`default_name`) are loops.
//!    Parameter numbers are at most [`MAX_PARAM`] (42P02 beyond).

use super::{object_name, too_deep, Datum, SqlError, SqlResult, SqlType, MAX_EXPR_DEPTH};
use sqlparser::ast;
use std::cmp::Ordering;
use strata_types::Lsn;

/// What expression evaluation may ask of the server.
/// `Sync`: a parallel plan's workers evaluate through the session's (parallel rule 3).
pub trait Env: Sync {
    fn current_database(&self) -> String;
    fn current_wal_lsn(&self) -> Lsn;
    /// `pg_relation_filepath`: the path of a table's main fork, relative to the data
    /// directory; `None` if there is no such table.
    fn relation_filepath(&self, table: &str) -> Option<String>;
    /// `pg_backend_pid`: the session's process id (the pid of its BackendKeyData).
    fn backend_pid(&self) -> i32;
    /// `pg_cancel_backend`: asks session `pid` to cancel its statement; false if
    /// there is no such session.
    fn cancel_backend(&self, pid: i32) -> SqlResult<bool>;
    /// `pg_is_in_recovery`: the server is a standby replaying WAL.
    fn in_recovery(&self) -> bool;
    /// `pg_last_wal_receive_lsn`, `pg_last_wal_replay_lsn`: on a standby, the end of
    /// the WAL received and made durable, and of the WAL replayed; `None` on a primary.
    fn recovery_lsns(&self) -> Option<(Option<Lsn>, Lsn)>;
    /// `pg_promote(wait, wait_seconds)`: promotes a standby; whether it is done.
    fn promote(&self, wait: bool, wait_seconds: i32) -> SqlResult<bool>;
    /// `pg_switch_wal()`: ends the current WAL segment; the end of the switch.
    fn switch_wal(&self) -> SqlResult<Lsn>;
    /// `pg_reload_conf()`: the server re-reads its configuration files (superuser
    /// only, 42501). Without a server, 0A000.
    fn reload_conf(&self) -> SqlResult<bool> {
        Err(SqlError::unsupported("pg_reload_conf here"))
    }
    /// `pg_last_xact_replay_timestamp()`: on a standby, when the last transaction
    /// replayed committed (Unix microseconds).
    fn last_xact_replay_unix_us(&self) -> Option<i64>;
    /// `now()`, `current_timestamp`: when the transaction began ([`crate::time`]
    /// microseconds). Without a session, the time of the call.
    fn xact_start_us(&self) -> i64 {
        crate::time::now_us()
    }
    /// `bt_index_check(index [, heapallindexed])`: checks index `index` against its
    /// table (the engine's `check_index`); its entry count. Without a server, 0A000.
    fn check_index(&self, _index: &str) -> SqlResult<i64> {
        Err(SqlError::unsupported("bt_index_check here"))
    }
    /// `pg_sleep(seconds)`: waits, ended early by the session's interrupts.
    /// Without a session, 0A000.
    fn sleep(&self, _secs: f64) -> SqlResult<()> {
        Err(SqlError::unsupported("pg_sleep here"))
    }
    /// `current_user` / `current_role` / `user`: the current role.
    fn current_user(&self) -> String {
        crate::roles::BOOTSTRAP_SUPERUSER.to_string()
    }
    /// `session_user`.
    fn session_user(&self) -> String {
        self.current_user()
    }
    /// `nextval`, `currval`, `setval`, `lastval` on sequence `seq` (a name as
    /// [`sequence_name`] reads it). Without a server, 0A000.
    fn sequence(&self, _call: SeqCall<'_>) -> SqlResult<i64> {
        Err(SqlError::unsupported("sequences here"))
    }
}

/// A sequence function's call ([`Env::sequence`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SeqCall<'a> {
    Nextval(&'a str),
    Currval(&'a str),
    Setval(&'a str, i64, bool),
    Lastval,
}

/// The sequence a `regclass` text names, as PostgreSQL reads it: an unquoted name
/// folds to lower case, a double-quoted one is kept, `public.` is the only schema.
pub fn sequence_name(text: &str) -> SqlResult<String> {
    let t = text.trim();
    let t = t
        .strip_prefix("public.")
        .or_else(|| t.strip_prefix("\"public\"."))
        .unwrap_or(t);
    if let Some(q) = t.strip_prefix('"').and_then(|q| q.strip_suffix('"')) {
        if !q.is_empty() && !q.contains('"') {
            return Ok(q.to_string());
        }
    } else if !t.is_empty() && !t.contains(['"', '.', ' ']) {
        return Ok(t.to_lowercase());
    }
    Err(SqlError::new(
        "42602",
        format!("invalid name syntax: \"{text}\""),
    ))
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BinOp {
    Eq,
    Ne,
    Lt,
    Le,
    Gt,
    Ge,
    And,
    Or,
    Add,
    Sub,
    Mul,
    Div,
    Mod,
    Concat,
}

impl BinOp {
    /// The operator as SQL writes it (in PostgreSQL's messages).
    pub fn symbol(self) -> &'static str {
        match self {
            BinOp::Eq => "=",
            BinOp::Ne => "<>",
            BinOp::Lt => "<",
            BinOp::Le => "<=",
            BinOp::Gt => ">",
            BinOp::Ge => ">=",
            BinOp::And => "AND",
            BinOp::Or => "OR",
            BinOp::Add => "+",
            BinOp::Sub => "-",
            BinOp::Mul => "*",
            BinOp::Div => "/",
            BinOp::Mod => "%",
            BinOp::Concat => "||",
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Func {
    Version,
    CurrentDatabase,
    CurrentWalLsn,
    WalLsnDiff,
    IsInRecovery,
    Promote,
    BtIndexCheck,
    SwitchWal,
    LastXactReplayTimestamp,
    LastWalReceiveLsn,
    LastWalReplayLsn,
    RelationFilepath,
    Length,
    Lower,
    Upper,
    Repeat,
    /// now(), current_timestamp, transaction_timestamp(): the transaction's start.
    Now,
    /// clock_timestamp(), statement_timestamp(): the time of the call.
    Clock,
    /// `pg_sleep(seconds)` ([`Env::sleep`]): NULL after the wait.
    Sleep,
    /// `random()` and `setseed(x)` (the `random` module).
    Random,
    Setseed,
    /// localtimestamp: the transaction's start, as a timestamp.
    LocalTimestamp,
    /// current_date: the day of the transaction's start.
    CurrentDate,
    Abs,
    BackendPid,
    ReloadConf,
    CancelBackend,
    Nextval,
    Currval,
    Setval,
    Lastval,
    /// current_user, current_role, user: the current role; session_user.
    CurrentUser,
    SessionUser,
    /// A `character(n)` value as text: its trailing spaces removed (PostgreSQL's
    /// rtrim1, the bpchar-to-text cast). Bound where bpchar meets text or is
    /// compared ([`SqlType::Bpchar`]); never named in SQL.
    BpcharText,
    /// substring(x FROM a FOR b), substr(x, a[, b]).
    Substr,
    /// A mathematical function and its result type ([`crate::mathfn`]).
    Math(crate::mathfn::MathFn, SqlType),
    /// A string function and its result type ([`crate::strfn`]).
    Str(crate::strfn::StrFn, SqlType),
    /// A date/time function and its result type ([`crate::datefn`]).
    Date(crate::datefn::DateFn, SqlType),
}

/// `e` (of type [`SqlType::Bpchar`]) as text, its trailing spaces removed.
pub fn bpchar_text(e: Expr) -> Expr {
    Expr::Call(Func::BpcharText, vec![e])
}

/// A bound expression.
#[derive(Clone, Debug, PartialEq)]
pub enum Expr {
    Const(Datum),
    Col(usize),
    Param(usize),
    Bin(Box<Expr>, BinOp, Box<Expr>),
    /// AND or OR over two or more operands: a chain `a OR b OR ...`, flattened so
    /// that its length costs no depth (rule 4).
    Bool(BinOp, Vec<Expr>),
    Not(Box<Expr>),
    Neg(Box<Expr>),
    IsNull(Box<Expr>, bool),
    InList(Box<Expr>, Vec<Expr>, bool),
    Cast(Box<Expr>, SqlType),
    /// A cast's type modifier, applied to the cast value ([`fit_datum`]).
    Fit(Box<Expr>, Typmod),
    Call(Func, Vec<Expr>),
    /// The value of aggregate number n (aggregate queries only).
    Agg(usize),
    /// Column `.1` of the row of the query `.0` levels out (a correlated
    /// subquery's reference to its enclosing query).
    Outer(usize, usize),
    /// A subquery in an expression ([`crate::subquery`]).
    SubLink(Box<crate::subquery::SubLink>),
    /// The value of window function number n (a SELECT's window functions, before
    /// analysis makes it a column of the Window node's row).
    Window(usize),
    /// CASE, COALESCE, NULLIF, GREATEST / LEAST, IS DISTINCT FROM, IS TRUE, LIKE
    /// ([`crate::conditional`]).
    Special(Box<crate::conditional::Special>),
}

/// The type modifier of a cast's target: `varchar(n)` / `char(n)` or `numeric(p, s)`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Typmod {
    Chars {
        n: u32,
        padded: bool,
    },
    Numeric {
        p: u32,
        s: u32,
    },
    /// Fractional-second digits of a time type.
    Seconds(u32),
    /// An interval's field range and precision (`interval day to second(2)`).
    Interval(crate::datetime::IntervalTypmod),
}

/// `x` under the type modifier of `t`, if it has one (`x` is already cast to `t`).
fn with_typmod(x: Expr, t: &ast::DataType) -> SqlResult<Expr> {
    if let Some(tm) = interval_typmod(t)? {
        return Ok(Expr::Fit(Box::new(x), Typmod::Interval(tm)));
    }
    let m = match (crate::char_length(t)?, crate::numeric_typmod(t)?) {
        ((Some(n), padded), _) => Typmod::Chars { n, padded },
        (_, Some((p, s))) => Typmod::Numeric { p, s },
        _ => match crate::time_precision(t)? {
            Some(p) => Typmod::Seconds(p),
            None => return Ok(x),
        },
    };
    Ok(Expr::Fit(Box::new(x), m))
}

/// The typmod of `interval [fields] [(p)]`, if it has one.
fn interval_typmod(t: &ast::DataType) -> SqlResult<Option<crate::datetime::IntervalTypmod>> {
    let ast::DataType::Interval { fields, precision } = t else {
        return Ok(None);
    };
    if fields.is_none() && precision.is_none() {
        return Ok(None);
    }
    let text = fields.map(|f| f.to_string());
    let (leading, last) = match text.as_deref().map(|f| f.split_once(" TO ")) {
        Some(Some((a, b))) => (Some(a), Some(b)),
        Some(None) => (text.as_deref(), None),
        None => (None, None),
    };
    crate::datetime::IntervalTypmod::from_fields(leading, last, *precision).map(Some)
}

use strata_engine::round_micros;

/// A cast's type modifier applied as PostgreSQL's explicit casts apply it: text cut
/// to n characters without error (`char(n)` padded to n), numeric rounded to its
/// scale and 22003 past its precision (as a column's).
fn fit_datum(d: Datum, m: Typmod) -> SqlResult<Datum> {
    Ok(match (d, m) {
        (Datum::Text(s), Typmod::Chars { n, padded }) => {
            let mut t: String = s.chars().take(n as usize).collect();
            if padded {
                let len = t.chars().count();
                t.extend(std::iter::repeat_n(' ', n as usize - len));
            }
            Datum::Text(t)
        }
        (Datum::Numeric(v), Typmod::Numeric { p, s }) => {
            Datum::Numeric(strata_engine::fit_numeric(&v, p, s).map_err(|detail| {
                SqlError::from(strata_engine::EngineError::NumericFieldOverflow { detail })
            })?)
        }
        (Datum::Timestamp(t), Typmod::Seconds(p)) => Datum::Timestamp(round_micros(t, p)),
        (Datum::TimestampTz(t), Typmod::Seconds(p)) => Datum::TimestampTz(round_micros(t, p)),
        (Datum::Time(t), Typmod::Seconds(p)) => Datum::Time(round_micros(t, p)),
        (Datum::Interval(i), Typmod::Interval(tm)) => {
            Datum::Interval(crate::datetime::adjust_interval(i, &tm))
        }
        (Datum::Interval(i), Typmod::Seconds(p)) => Datum::Interval(strata_types::Interval {
            micros: round_micros(i.micros, p),
            ..i
        }),
        (d, _) => d,
    })
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AggFunc {
    CountStar,
    Count,
    Sum,
    Min,
    Max,
    Avg,
    BoolAnd,
    BoolOr,
    StringAgg,
    /// The statistics of one or two columns ([`crate::moments`]).
    Stat(crate::moments::Stat),
    /// An ordered-set or hypothetical-set aggregate ([`crate::aggorder`]).
    Ordered(crate::aggorder::OrderedSet),
    /// Internal: the value of any row of the group (its first non-NULL one), for
    /// a GROUP BY column the group's primary key determines (planner rule 14).
    Any,
}

/// A bound aggregate call ([`crate::aggregate`]).
#[derive(Clone, Debug, PartialEq)]
pub struct Agg {
    pub func: AggFunc,
    pub arg: Option<Expr>,
    pub ty: SqlType,
    pub distinct: bool,
    pub filter: Option<Expr>,
    /// The second argument: string_agg's delimiter, a statistic's X.
    pub arg2: Option<Expr>,
    /// ORDER BY inside the call, or an ordered-set aggregate's WITHIN GROUP
    /// ([`crate::aggorder`]).
    pub order: Vec<crate::aggorder::AggKey>,
    /// An ordered-set aggregate's direct arguments: over the input row when bound,
    /// over the group's key row after analysis (aggorder rule 2).
    pub direct: Vec<Expr>,
}

impl Agg {
    /// The expressions evaluated on each input row: argument, FILTER, second
    /// argument and ORDER BY keys.
    pub fn row_exprs(&self) -> impl Iterator<Item = &Expr> {
        self.arg
            .iter()
            .chain(self.filter.iter())
            .chain(self.arg2.iter())
            .chain(self.order.iter().map(|(e, _, _)| e))
    }

    /// [`Agg::row_exprs`], to change in place.
    pub fn row_exprs_mut(&mut self) -> impl Iterator<Item = &mut Expr> {
        self.arg
            .iter_mut()
            .chain(self.filter.iter_mut())
            .chain(self.arg2.iter_mut())
            .chain(self.order.iter_mut().map(|(e, _, _)| e))
    }
}

/// The input columns an expression may name: those of one table (the legacy
/// form: `owner`, `bare` and `star` empty) or of a FROM clause's range entries
/// side by side, as a join's row has them.
#[derive(Clone, Default)]
pub struct Scope<'c> {
    /// The names the columns may be qualified with (table names or aliases).
    pub qualifiers: Vec<String>,
    pub cols: Vec<(String, SqlType)>,
    /// ON CONFLICT DO UPDATE: `excluded.c` names column `c` of the row proposed for
    /// insertion, which follows the table's row (`Col(cols.len() + i)`).
    pub excluded: bool,
    /// Per column, the qualifier (index into `qualifiers`) that names it; None for
    /// a USING join's merged column. Empty: every qualifier names every column.
    pub owner: Vec<Option<usize>>,
    /// Per column, whether a bare name reaches it (a USING join's two originals are
    /// reached through their merged column only). Empty: all.
    pub bare: Vec<bool>,
    /// The columns `*` stands for, in order. None: all.
    pub star: Option<Vec<usize>>,
    /// Gives a relation's columns, for the subqueries of this scope's expressions
    /// (None: no subqueries here, 0A000).
    pub catalog: Option<&'c ScopeOf<'c>>,
    /// The enclosing query's scope: a name not found here is looked up there (a
    /// correlated reference, [`Expr::Outer`]).
    pub parent: Option<&'c Scope<'c>>,
    /// How many scopes enclose this one.
    pub depth: usize,
}

impl std::fmt::Debug for Scope<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Scope")
            .field("qualifiers", &self.qualifiers)
            .field("cols", &self.cols)
            .field("depth", &self.depth)
            .finish()
    }
}

impl<'c> Scope<'c> {
    /// One range entry's columns, named by `qualifier`.
    pub fn entry(qualifier: String, cols: Vec<(String, SqlType)>) -> Scope<'c> {
        let n = cols.len();
        Scope {
            qualifiers: vec![qualifier],
            cols,
            excluded: false,
            owner: vec![Some(0); n],
            bare: vec![true; n],
            star: Some((0..n).collect()),
            catalog: None,
            parent: None,
            depth: 0,
        }
    }

    /// This scope in the context of `ctx`: its catalog, parent and depth.
    pub fn within(mut self, ctx: &Scope<'c>) -> Scope<'c> {
        self.catalog = ctx.catalog;
        self.parent = ctx.parent;
        self.depth = ctx.depth;
        self
    }

    /// Whether column `i` answers to qualifier `q`.
    fn owned_by(&self, i: usize, q: &str) -> bool {
        match self.owner.get(i) {
            None => self.qualifiers.iter().any(|x| x == q),
            Some(o) => o.is_some_and(|o| self.qualifiers[o] == q),
        }
    }

    /// The columns `*` stands for.
    pub fn star_cols(&self) -> Vec<usize> {
        match &self.star {
            Some(s) => s.clone(),
            None => (0..self.cols.len()).collect(),
        }
    }

    /// The columns `q.*` stands for (42P01 if no entry is named `q`).
    pub fn qualified_star(&self, q: &str) -> SqlResult<Vec<usize>> {
        if !self.qualifiers.iter().any(|x| x == q) {
            return Err(SqlError::new(
                "42P01",
                format!("missing FROM-clause entry for table \"{q}\""),
            ));
        }
        Ok((0..self.cols.len())
            .filter(|i| self.owned_by(*i, q))
            .collect())
    }
}

/// Gives a table's columns (name, type), or the error that it has none.
pub type ScopeOf<'a> = dyn RelLookup + 'a;

/// What binding asks of the catalog: a relation's columns and, for a view, its
/// definition (the rewrite module expands it). A closure giving columns is a
/// catalog without views.
pub trait RelLookup {
    /// The columns of relation `name` (42P01 if there is none).
    fn columns(&self, name: &str) -> SqlResult<Columns>;
    /// View `name`'s definition; None if `name` is not a view.
    fn view(&self, _name: &str) -> SqlResult<Option<crate::rewrite::ViewRef>> {
        Ok(None)
    }
    /// 42501 unless role `owner` may read what a view's query reads (`reads`, as
    /// [`crate::analyze::Query::reads`]): a view reads its relations with its
    /// owner's privileges, as PostgreSQL's do.
    fn check_reads_as(&self, _owner: u32, _reads: &[(String, Vec<usize>)]) -> SqlResult<()> {
        Ok(())
    }
}

impl<F: Fn(&str) -> SqlResult<Columns>> RelLookup for F {
    fn columns(&self, name: &str) -> SqlResult<Columns> {
        self(name)
    }
}

/// The state of binding one statement: the parameter types found so far, and the
/// depth of expression nesting being bound (bounded by [`MAX_EXPR_DEPTH`]).
#[derive(Debug, Default)]
pub struct Binder {
    pub params: Vec<SqlType>,
    depth: usize,
    /// The shallowest scope depth a column reference reached (correlation: a
    /// subquery whose references reach above its own depth is correlated).
    pub(crate) min_ref: usize,
    /// The relations read by the subqueries bound since the enclosing query began
    /// (analyze rule 6).
    pub(crate) sub_reads: Vec<(String, Vec<usize>)>,
    /// The CTEs in scope, innermost last ([`crate::cte`]).
    pub(crate) ctes: Vec<crate::cte::CteEntry>,
    /// The clause being bound in which aggregate calls are 42803 (FILTER).
    pub(crate) aggs_refused_in: Option<&'static str>,
    pub(crate) next_cte_id: usize,
    /// How many subqueries in expressions enclose what is being bound.
    pub(crate) sub_depth: usize,
    /// The window functions of the select list being bound (None where they are
    /// not allowed: window rule 4).
    pub(crate) wins: Option<Vec<crate::window::WinFunc>>,
    /// The SELECT being analyzed is a leaf of a set operation (analyze rule 5).
    pub(crate) set_leaf: bool,
    /// Its select list keeps untyped literals untyped, for the set operation.
    pub(crate) keep_unknown: bool,
    /// The WINDOW clause of the SELECT being bound, each definition resolved.
    pub(crate) named_wins: Vec<(String, sqlparser::ast::WindowSpec)>,
    /// The views being expanded, outermost first (rewrite rule 4).
    pub(crate) views: Vec<String>,
    /// The subqueries being bound that may lift aggregates into the query around
    /// them, innermost last (outer rule 2).
    pub(crate) lift: Vec<crate::outer::LiftFrame>,
    /// An aggregate's arguments are being bound (a call there is nested: 42803).
    pub(crate) in_agg: bool,
}

/// The highest parameter number, `$65535`: the Bind message counts parameters in
/// 16 bits, so no client can supply more.
pub const MAX_PARAM: usize = u16::MAX as usize;

/// How deep a bound expression may be evaluated: binding bounds the tree at
/// [`MAX_EXPR_DEPTH`] source levels, and each level adds at most a few bound nodes
/// (a cast, BETWEEN's AND of two comparisons), so this never fires for a bound plan.
const MAX_EVAL_DEPTH: usize = 4 * MAX_EXPR_DEPTH;

/// Result columns: name and type.
pub type Columns = Vec<(String, SqlType)>;

#[derive(Clone, Debug)]
pub enum From {
    /// One row, no columns.
    None,
    Table(String),
    /// generate_series(start, stop[, step]) of int4 or int8.
    Series(Expr, Expr, Option<Expr>, SqlType),
}

fn mismatch(op: &str, a: SqlType, b: SqlType) -> SqlError {
    SqlError::new(
        "42883",
        format!("operator does not exist: {} {op} {}", a.name(), b.name()),
    )
    .with_hint("No operator matches the given name and argument types.")
}

pub fn is_timestamp(t: SqlType) -> bool {
    matches!(t, SqlType::Timestamp | SqlType::TimestampTz)
}

/// A timestamp or a date: compared and assigned to each other, as PostgreSQL does.
/// Date and time stamps of different types compare as the wider (PostgreSQL's
/// cross-type operators: date_lt_timestamp makes the date a timestamp,
/// timestamp_lt_timestamptz the timestamp a timestamptz in the session's zone).
fn wider_datetime(a: SqlType, b: SqlType) -> SqlType {
    if a == SqlType::TimestampTz || b == SqlType::TimestampTz {
        SqlType::TimestampTz
    } else {
        SqlType::Timestamp
    }
}

pub fn is_datetime(t: SqlType) -> bool {
    is_timestamp(t) || t == SqlType::Date
}

fn int_rank(t: SqlType) -> u8 {
    crate::numeric::rank(t)
}

/// Parses text as a value of type `t` (22P02 on bad input), as a cast from an
/// unknown literal does.
pub fn text_to(s: &str, t: SqlType) -> SqlResult<Datum> {
    let bad = || {
        SqlError::new(
            "22P02",
            format!("invalid input syntax for type {}: \"{s}\"", t.name()),
        )
    };
    let v = s.trim();
    Ok(match t {
        SqlType::Text | SqlType::Bpchar | SqlType::Unknown => Datum::Text(s.to_string()),
        SqlType::Int2 => Datum::Int2(v.parse().map_err(|_| {
            if v.parse::<i128>().is_ok() {
                out_of_range("smallint")
            } else {
                bad()
            }
        })?),
        SqlType::Int4 => Datum::Int4(v.parse().map_err(|_| {
            if v.parse::<i128>().is_ok() {
                out_of_range("integer")
            } else {
                bad()
            }
        })?),
        SqlType::Int8 => Datum::Int8(v.parse().map_err(|_| {
            if v.parse::<i128>().is_ok() {
                out_of_range("bigint")
            } else {
                bad()
            }
        })?),
        SqlType::Numeric => Datum::Numeric(crate::numeric::parse_numeric(v).ok_or_else(bad)??),
        SqlType::Float4 | SqlType::Float8 => {
            let f = crate::numeric::parse_float(v, t == SqlType::Float4).ok_or_else(bad)??;
            let f = strata_types::Float::new(f);
            if t == SqlType::Float4 {
                Datum::Float4(f)
            } else {
                Datum::Float8(f)
            }
        }
        SqlType::Bool => match v.to_ascii_lowercase().as_str() {
            "t" | "true" | "yes" | "on" | "1" | "y" => Datum::Bool(true),
            "f" | "false" | "no" | "off" | "0" | "n" => Datum::Bool(false),
            _ => return Err(bad()),
        },
        SqlType::Lsn => Datum::Lsn(v.parse().map_err(|_| bad())?),
        SqlType::Date | SqlType::Time | SqlType::Interval => return datetime_in(s, t),
        SqlType::Uuid => Datum::Uuid(crate::parse_uuid(v).ok_or_else(bad)?),
        SqlType::Bytea => Datum::Bytea(crate::parse_bytea(s).ok_or_else(bad)?),
        SqlType::Timestamp | SqlType::TimestampTz => return datetime_in(s, t),
    })
}

/// Date/time input in the session's settings (DateStyle, TimeZone, the
/// transaction's start for `now`).
fn datetime_in(s: &str, t: SqlType) -> SqlResult<Datum> {
    use crate::datetime as dt;
    dt::with_session(|st| {
        Ok(match t {
            SqlType::Date => Datum::Date(dt::parse_date(s, st)?),
            SqlType::Time => Datum::Time(dt::parse_time(s, st)?),
            SqlType::Interval => Datum::Interval(dt::parse_interval(s, st)?),
            SqlType::Timestamp => Datum::Timestamp(dt::parse_timestamp(s, st)?),
            _ => Datum::TimestampTz(dt::parse_timestamptz(s, st)?),
        })
    })
}

fn out_of_range(t: &str) -> SqlError {
    SqlError::new("22003", format!("{t} out of range"))
}

impl Binder {
    /// Gives an untyped expression (literal, parameter, NULL) the type `to`, or casts
    /// between types that convert implicitly (integer widening).
    pub fn coerce(&mut self, e: Expr, from: SqlType, to: SqlType) -> SqlResult<Expr> {
        if from == to || to == SqlType::Unknown {
            return Ok(e);
        }
        match (&e, from) {
            (Expr::Const(Datum::Null), _) => Ok(e),
            (Expr::Const(Datum::Text(s)), SqlType::Unknown) => Ok(Expr::Const(text_to(s, to)?)),
            (Expr::Param(n), SqlType::Unknown) => {
                self.params[*n] = to;
                Ok(e)
            }
            _ if int_rank(from) > 0 && int_rank(to) >= int_rank(from) => {
                Ok(Expr::Cast(Box::new(e), to))
            }
            _ if is_datetime(from) && is_timestamp(to) => Ok(Expr::Cast(Box::new(e), to)),
            _ if from == SqlType::Bpchar && to == SqlType::Text => Ok(bpchar_text(e)),
            _ => Err(SqlError::new(
                "42804",
                format!(
                    "expression is of type {} but {} is expected",
                    from.name(),
                    to.name()
                ),
            )
            .with_hint("You will need to rewrite or cast the expression.")),
        }
    }

    /// Gives any still-untyped expression the type text (at the top of a projection).
    pub(crate) fn settle_type(&mut self, e: Expr, t: SqlType) -> (Expr, SqlType) {
        self.settle(e, t)
    }

    fn settle(&mut self, e: Expr, t: SqlType) -> (Expr, SqlType) {
        match (&e, t) {
            (Expr::Param(n), SqlType::Unknown) => {
                self.params[*n] = SqlType::Text;
                (e, SqlType::Text)
            }
            (_, SqlType::Unknown) => (e, SqlType::Text),
            _ => (e, t),
        }
    }

    /// A condition (WHERE): boolean, or untyped and made boolean.
    pub fn condition(&mut self, scope: &Scope, e: &ast::Expr, clause: &str) -> SqlResult<Expr> {
        let (x, t) = self.expr(scope, e)?;
        if t != SqlType::Bool && t != SqlType::Unknown {
            return Err(SqlError::new(
                "42804",
                format!(
                    "argument of {clause} must be type boolean, not type {}",
                    t.name()
                ),
            ));
        }
        self.coerce(x, t, SqlType::Bool)
    }

    /// A column name: of this scope, or of an enclosing query's (subquery rule 1).
    fn column_ref(
        &mut self,
        scope: &Scope<'_>,
        q: Option<&ast::Ident>,
        c: &ast::Ident,
    ) -> SqlResult<(Expr, SqlType)> {
        let err = match column(scope, q, c) {
            Ok(x) => return Ok(x),
            Err(e) if e.code == "42703" || e.code == "42P01" => e,
            Err(e) => return Err(e),
        };
        let mut level = 0;
        let mut at = scope;
        while let Some(p) = at.parent {
            level += 1;
            at = p;
            if let Ok((Expr::Col(i), t)) = column(p, q, c) {
                self.min_ref = self.min_ref.min(p.depth);
                return Ok((Expr::Outer(level, i), t));
            }
        }
        Err(err)
    }

    pub fn expr(&mut self, scope: &Scope, e: &ast::Expr) -> SqlResult<(Expr, SqlType)> {
        self.expr_in(scope, e, &mut None)
    }

    /// Binds `e`; with `aggs` Some, aggregate calls are allowed and collected there.
    /// Counts the nesting depth (rule 4).
    pub(crate) fn expr_in(
        &mut self,
        scope: &Scope,
        e: &ast::Expr,
        aggs: &mut Option<&mut Vec<Agg>>,
    ) -> SqlResult<(Expr, SqlType)> {
        if self.depth >= MAX_EXPR_DEPTH {
            return Err(too_deep());
        }
        self.depth += 1;
        let r = self.expr_node(scope, e, aggs);
        self.depth -= 1;
        // An analysis error is placed at the innermost expression that gave it
        // (sql rule 7), as PostgreSQL's parser_errposition.
        r.map_err(|err| place_at(err, e))
    }

    fn expr_node(
        &mut self,
        scope: &Scope,
        e: &ast::Expr,
        aggs: &mut Option<&mut Vec<Agg>>,
    ) -> SqlResult<(Expr, SqlType)> {
        use ast::Expr as E;
        match e {
            E::Value(v) => self.value(&v.value),
            // CURRENT_ROLE is a reserved word in PostgreSQL, never a column name.
            E::Identifier(i)
                if i.quote_style.is_none() && i.value.eq_ignore_ascii_case("current_role") =>
            {
                Ok((Expr::Call(Func::CurrentUser, Vec::new()), SqlType::Text))
            }
            E::Identifier(i) => self.column_ref(scope, None, i),
            E::CompoundIdentifier(parts) => match parts.as_slice() {
                [q, c] => self.column_ref(scope, Some(q), c),
                [s, q, c] if s.value.eq_ignore_ascii_case("public") => {
                    self.column_ref(scope, Some(q), c)
                }
                _ => Err(SqlError::unsupported(format!("the name \"{e}\""))),
            },
            E::Nested(inner) => self.expr_in(scope, inner, aggs),
            E::UnaryOp { op, expr } => {
                let (x, t) = self.expr_in(scope, expr, aggs)?;
                self.unary(*op, x, t)
            }
            E::BinaryOp {
                op: op @ (ast::BinaryOperator::And | ast::BinaryOperator::Or),
                ..
            } => self.bool_chain(scope, e, op, aggs),
            E::Ceil { .. }
            | E::Floor { .. }
            | E::BinaryOp {
                op: ast::BinaryOperator::PGExp,
                ..
            } => self.math_syntax(scope, e, aggs),
            E::BinaryOp { left, op, right } => {
                let op = bin_op_of(op)?;
                let (l, lt) = self.expr_in(scope, left, aggs)?;
                let (r, rt) = self.expr_in(scope, right, aggs)?;
                self.binop(l, lt, op, r, rt)
                    .map_err(|err| place_binop(err, (left, right), rt))
            }
            E::IsNull(x) | E::IsNotNull(x) => {
                let (x, t) = self.expr_in(scope, x, aggs)?;
                let (x, _) = self.settle(x, t);
                Ok((
                    Expr::IsNull(Box::new(x), matches!(e, E::IsNotNull(_))),
                    SqlType::Bool,
                ))
            }
            E::InList {
                expr,
                list,
                negated,
            } => self.in_list(scope, (expr, list, *negated), aggs),
            E::Between {
                expr,
                negated,
                low,
                high,
            } => {
                let (x, xt) = self.expr_in(scope, expr, aggs)?;
                let (lo, lot) = self.expr_in(scope, low, aggs)?;
                let (hi, hit) = self.expr_in(scope, high, aggs)?;
                let (a, _) = self.binop(x.clone(), xt, BinOp::Ge, lo, lot)?;
                let (b, _) = self.binop(x, xt, BinOp::Le, hi, hit)?;
                let both = Expr::Bin(Box::new(a), BinOp::And, Box::new(b));
                Ok((
                    if *negated {
                        Expr::Not(Box::new(both))
                    } else {
                        both
                    },
                    SqlType::Bool,
                ))
            }
            E::Cast { .. } | E::TypedString(_) => self.cast_syntax(scope, e, aggs),
            E::Interval(iv) => self.interval(scope, iv, aggs),
            E::AtTimeZone {
                timestamp,
                time_zone,
            } => self.at_time_zone(scope, timestamp, time_zone, aggs),
            E::Function(f) => self.function(scope, f, aggs),
            E::Extract { .. } | E::Substring { .. } => self.extract_or_substring(scope, e, aggs),
            other => match self.special(scope, other, aggs)? {
                Some(x) => Ok(x),
                None if let Some(x) = self.sublink(scope, other, aggs)? => Ok(x),
                None => Err(SqlError::unsupported(format!("the expression \"{other}\""))),
            },
        }
    }

    /// `x [NOT] IN (list)`: the list takes x's type (or x the list's, when x is
    /// untyped); bpchar compares without its trailing spaces.
    fn in_list(
        &mut self,
        scope: &Scope,
        (expr, list, negated): (&ast::Expr, &[ast::Expr], bool),
        aggs: &mut Option<&mut Vec<Agg>>,
    ) -> SqlResult<(Expr, SqlType)> {
        let (x, xt) = self.expr_in(scope, expr, aggs)?;
        let mut t = xt;
        let mut items = Vec::new();
        for i in list {
            items.push(self.expr_in(scope, i, aggs)?);
        }
        if t == SqlType::Unknown {
            t = items
                .iter()
                .map(|(_, t)| *t)
                .find(|t| *t != SqlType::Unknown)
                .unwrap_or(SqlType::Text);
        }
        let x = self.coerce(x, xt, t)?;
        let mut bound = Vec::new();
        for (i, it) in items {
            bound.push(self.unify_to(i, it, t, "=")?);
        }
        // Bpchar compares without its trailing spaces, on both sides.
        let (x, bound) = if t == SqlType::Bpchar {
            (bpchar_text(x), bound.into_iter().map(bpchar_text).collect())
        } else {
            (x, bound)
        };
        Ok((Expr::InList(Box::new(x), bound, negated), SqlType::Bool))
    }

    /// INTERVAL '1 day', or INTERVAL '3' HOUR (the field is the unit).
    fn interval(
        &mut self,
        scope: &Scope,
        iv: &ast::Interval,
        aggs: &mut Option<&mut Vec<Agg>>,
    ) -> SqlResult<(Expr, SqlType)> {
        let (x, from) = self.expr_in(scope, &iv.value, aggs)?;
        if iv.leading_field.is_none() && iv.last_field.is_none() {
            return self.cast(x, from, SqlType::Interval);
        }
        // `SECOND(p)` comes as the leading field's precision, `... TO SECOND(p)`
        // as the fractional seconds'; another field's precision is PostgreSQL's
        // syntax error.
        let leading = iv.leading_field.as_ref().map(|f| f.to_string());
        let last = iv.last_field.as_ref().map(|f| f.to_string());
        if iv.leading_precision.is_some() && leading.as_deref() != Some("SECOND") {
            return Err(SqlError::syntax("syntax error at or near \"(\""));
        }
        let precision = iv.fractional_seconds_precision.or(iv.leading_precision);
        let tm = crate::datetime::IntervalTypmod::from_fields(
            leading.as_deref(),
            last.as_deref(),
            precision,
        )?;
        if let (Expr::Const(Datum::Text(t)), SqlType::Unknown) = (&x, from) {
            let v = crate::datetime::with_session(|st| {
                crate::datetime::parse_interval_typmod(t, st, &tm)
            });
            let v = match &*iv.value {
                ast::Expr::Value(lit) => v.map_err(|e| e.at(lit.span))?,
                _ => v?,
            };
            return Ok((Expr::Const(Datum::Interval(v)), SqlType::Interval));
        }
        let (x, t) = self.cast(x, from, SqlType::Interval)?;
        Ok((Expr::Fit(Box::new(x), Typmod::Interval(tm)), t))
    }

    /// A chain of one boolean operator, `((a OR b) OR c) OR d` as sqlparser builds
    /// it, bound as one n-ary node: the left spine is walked in a loop, so a WHERE
    /// of 10,000 ORs costs one level of depth (rule 4), as PostgreSQL's flattened
    /// BoolExpr does.
    fn bool_chain(
        &mut self,
        scope: &Scope,
        e: &ast::Expr,
        op: &ast::BinaryOperator,
        aggs: &mut Option<&mut Vec<Agg>>,
    ) -> SqlResult<(Expr, SqlType)> {
        let bop = bin_op_of(op)?;
        let sym = if bop == BinOp::And { "AND" } else { "OR" };
        let mut operands = Vec::new();
        let mut cur = e;
        while let ast::Expr::BinaryOp { left, op: o, right } = cur {
            if o != op {
                break;
            }
            operands.push(&**right);
            cur = left;
        }
        operands.push(cur);
        operands.reverse();
        let mut out = Vec::with_capacity(operands.len());
        for x in operands {
            let (b, t) = self.expr_in(scope, x, aggs)?;
            if t != SqlType::Bool && t != SqlType::Unknown {
                return Err(SqlError::new(
                    "42804",
                    format!(
                        "argument of {sym} must be type boolean, not type {}",
                        t.name()
                    ),
                ));
            }
            out.push(self.coerce(b, t, SqlType::Bool)?);
        }
        Ok((Expr::Bool(bop, out), SqlType::Bool))
    }

    /// NOT, unary minus (folding negative literals as PostgreSQL's grammar does), plus.
    fn unary(&mut self, op: ast::UnaryOperator, x: Expr, t: SqlType) -> SqlResult<(Expr, SqlType)> {
        match op {
            ast::UnaryOperator::Not => {
                if t != SqlType::Bool && t != SqlType::Unknown {
                    return Err(SqlError::new(
                        "42804",
                        format!(
                            "argument of NOT must be type boolean, not type {}",
                            t.name()
                        ),
                    ));
                }
                let x = self.coerce(x, t, SqlType::Bool)?;
                Ok((Expr::Not(Box::new(x)), SqlType::Bool))
            }
            ast::UnaryOperator::Minus => {
                if let Expr::Const(Datum::Int4(v)) = x {
                    let v = v.checked_neg().ok_or_else(|| out_of_range("integer"))?;
                    return Ok((Expr::Const(Datum::Int4(v)), t));
                }
                if let Expr::Const(Datum::Int8(v)) = x {
                    let v = v.checked_neg().ok_or_else(|| out_of_range("bigint"))?;
                    // -2147483648 is an int4 literal in PostgreSQL.
                    return Ok(match i32::try_from(v) {
                        Ok(v4) => (Expr::Const(Datum::Int4(v4)), SqlType::Int4),
                        Err(_) => (Expr::Const(Datum::Int8(v)), t),
                    });
                }
                // An untyped operand is taken as an integer; a typed one keeps
                // its width (negating a bigint is a bigint).
                let to = if t == SqlType::Unknown {
                    SqlType::Int4
                } else {
                    t
                };
                if !to.is_number() && to != SqlType::Interval {
                    return Err(SqlError::new(
                        "42883",
                        format!("operator does not exist: - {}", to.name()),
                    ));
                }
                let x = self.coerce(x, t, to)?;
                Ok((Expr::Neg(Box::new(x)), to))
            }
            ast::UnaryOperator::Plus => Ok((x, t)),
            other => Err(SqlError::unsupported(format!("the operator {other}"))),
        }
    }

    fn unify_to(&mut self, e: Expr, t: SqlType, to: SqlType, op: &str) -> SqlResult<Expr> {
        if t == to || t == SqlType::Unknown || (t == SqlType::Bpchar && to == SqlType::Text) {
            self.coerce(e, t, to)
        } else if (t.is_number() && to.is_number()) || (is_timestamp(t) && is_timestamp(to)) {
            Ok(e) // numbers of any type, and both timestamps, compare by value
        } else {
            Err(mismatch(op, to, t))
        }
    }

    fn value(&mut self, v: &ast::Value) -> SqlResult<(Expr, SqlType)> {
        use ast::Value as V;
        Ok(match v {
            V::Number(n, _) => {
                if let Ok(i) = n.parse::<i32>() {
                    (Expr::Const(Datum::Int4(i)), SqlType::Int4)
                } else if let Ok(i) = n.parse::<i64>() {
                    (Expr::Const(Datum::Int8(i)), SqlType::Int8)
                } else {
                    // PostgreSQL's: any other number is a numeric.
                    let d = crate::numeric::parse_numeric(n).ok_or_else(|| {
                        SqlError::syntax(format!("syntax error at or near \"{n}\""))
                    })??;
                    (Expr::Const(Datum::Numeric(d)), SqlType::Numeric)
                }
            }
            V::SingleQuotedString(s) | V::EscapedStringLiteral(s) => {
                (Expr::Const(Datum::Text(s.clone())), SqlType::Unknown)
            }
            V::DollarQuotedString(d) => {
                (Expr::Const(Datum::Text(d.value.clone())), SqlType::Unknown)
            }
            V::Boolean(b) => (Expr::Const(Datum::Bool(*b)), SqlType::Bool),
            V::Null => (Expr::Const(Datum::Null), SqlType::Unknown),
            V::Placeholder(p) => {
                let digits = p
                    .strip_prefix('$')
                    .filter(|d| !d.is_empty() && d.bytes().all(|c| c.is_ascii_digit()))
                    .ok_or_else(|| SqlError::syntax(format!("syntax error at or near \"{p}\"")))?;
                let n = digits
                    .parse::<usize>()
                    .ok()
                    .filter(|n| (1..=MAX_PARAM).contains(n))
                    .ok_or_else(|| SqlError::new("42P02", format!("there is no parameter {p}")))?;
                if self.params.len() < n {
                    self.params.resize(n, SqlType::Unknown);
                }
                let t = self.params[n - 1];
                (Expr::Param(n - 1), t)
            }
            other => return Err(SqlError::unsupported(format!("the literal {other}"))),
        })
    }

    /// `x::t`, with `t`'s type modifier.
    fn cast_to(
        &mut self,
        (x, from): (Expr, SqlType),
        t: &ast::DataType,
    ) -> SqlResult<(Expr, SqlType)> {
        let (x, to) = self.cast(x, from, SqlType::from_ast(t)?)?;
        Ok((with_typmod(x, t)?, to))
    }

    fn cast(&mut self, x: Expr, from: SqlType, to: SqlType) -> SqlResult<(Expr, SqlType)> {
        match (&x, from) {
            (
                Expr::Const(Datum::Text(_)) | Expr::Const(Datum::Null) | Expr::Param(_),
                SqlType::Unknown,
            ) => Ok((self.coerce(x, from, to)?, to)),
            _ if from == SqlType::Bpchar && to == SqlType::Text => Ok((bpchar_text(x), to)),
            _ => {
                let ok = from == to
                    || matches!(to, SqlType::Text | SqlType::Bpchar)
                    || matches!(from, SqlType::Text | SqlType::Bpchar)
                    || (from.is_number() && to.is_number())
                    || (is_datetime(from) && is_datetime(to))
                    || (is_timestamp(from) && to == SqlType::Time)
                    || (from == SqlType::Time && to == SqlType::Interval)
                    || (from == SqlType::Interval && to == SqlType::Time)
                    || (from.is_int() && to == SqlType::Bool && from == SqlType::Int4)
                    || (from == SqlType::Bool && to == SqlType::Int4);
                if !ok {
                    return Err(SqlError::new(
                        "42846",
                        format!("cannot cast type {} to {}", from.name(), to.name()),
                    ));
                }
                Ok((Expr::Cast(Box::new(x), to), to))
            }
        }
    }

    pub(crate) fn binop(
        &mut self,
        l: Expr,
        lt: SqlType,
        op: BinOp,
        r: Expr,
        rt: SqlType,
    ) -> SqlResult<(Expr, SqlType)> {
        let sym = op.symbol();
        let mk = |l: Expr, r: Expr| Expr::Bin(Box::new(l), op, Box::new(r));
        match op {
            BinOp::And | BinOp::Or => {
                for t in [lt, rt] {
                    if t != SqlType::Bool && t != SqlType::Unknown {
                        return Err(SqlError::new(
                            "42804",
                            format!(
                                "argument of {sym} must be type boolean, not type {}",
                                t.name()
                            ),
                        ));
                    }
                }
                let l = self.coerce(l, lt, SqlType::Bool)?;
                let r = self.coerce(r, rt, SqlType::Bool)?;
                Ok((mk(l, r), SqlType::Bool))
            }
            // bytea || bytea is bytea (an untyped side taken as bytea).
            BinOp::Concat
                if matches!(
                    (lt, rt),
                    (SqlType::Bytea, SqlType::Bytea | SqlType::Unknown)
                        | (SqlType::Unknown, SqlType::Bytea)
                ) =>
            {
                let l = self.coerce(l, lt, SqlType::Bytea)?;
                let r = self.coerce(r, rt, SqlType::Bytea)?;
                Ok((mk(l, r), SqlType::Bytea))
            }
            BinOp::Concat => {
                let l = self.settle(l, lt).0;
                let r = self.settle(r, rt).0;
                let as_text = |x: Expr, t: SqlType| match t {
                    SqlType::Text | SqlType::Unknown => x,
                    SqlType::Bpchar => bpchar_text(x),
                    _ => Expr::Cast(Box::new(x), SqlType::Text),
                };
                let (l, r) = (as_text(l, lt), as_text(r, rt));
                Ok((mk(l, r), SqlType::Text))
            }
            _ if crate::interval::binop_type(lt, op, rt).is_some() => {
                let (ls, rs, res) = crate::interval::binop_type(lt, op, rt).expect("checked");
                let l = self.coerce(l, lt, ls)?;
                let r = self.coerce(r, rt, rs)?;
                Ok((mk(l, r), res))
            }
            _ => {
                let t = operand_type(op, lt, rt)?;
                if is_order_cmp(op)
                    && matches!(
                        (lt, rt),
                        (SqlType::Date, SqlType::Timestamp) | (SqlType::Timestamp, SqlType::Date)
                    )
                {
                    // PostgreSQL's cross-type date_lt_timestamp and its kin: the date
                    // compared as its midnight ([`compare`]), not cast per row. Not for
                    // `=`, whose sides a hash join keys on as they are.
                    return Ok((mk(l, r), SqlType::Bool));
                }
                let l = self.coerce(l, lt, t)?;
                let r = self.coerce(r, rt, t)?;
                if is_cmp(op) && t == SqlType::Bpchar {
                    return Ok((mk(bpchar_text(l), bpchar_text(r)), SqlType::Bool));
                }
                if is_cmp(op) {
                    return Ok((mk(l, r), SqlType::Bool));
                }
                if t == SqlType::Lsn && op == BinOp::Sub {
                    return Ok((mk(l, r), SqlType::Numeric));
                }
                if !t.is_number() {
                    return Err(mismatch(sym, t, t));
                }
                Ok((mk(l, r), t))
            }
        }
    }

    fn function(
        &mut self,
        scope: &Scope,
        f: &ast::Function,
        aggs: &mut Option<&mut Vec<Agg>>,
    ) -> SqlResult<(Expr, SqlType)> {
        if f.over.is_some() {
            return self.window_call(scope, f, aggs);
        }
        let name = object_name(&f.name)?;
        let star = matches!(&f.args, ast::FunctionArguments::List(l)
            if l.args.iter().any(|a| matches!(a, ast::FunctionArg::Unnamed(ast::FunctionArgExpr::Wildcard))));
        if let Some(x) = self.ordered_set_call(scope, f, &name, aggs)? {
            return Ok(x);
        }
        if let Some(func) = crate::aggregate::agg_func(&name, star) {
            return self.aggregate(scope, f, func, aggs.as_deref_mut());
        }
        let (args, star) = function_args(f)?;
        let args = named_args(&name, args)?;
        if !star {
            if let Some(x) = self.conditional_call(scope, &name, &args, aggs)? {
                return Ok(x);
            }
        }
        if star {
            return Err(SqlError::syntax(format!(
                "{name}(*) is only valid for count"
            )));
        }
        let mut bound = Vec::new();
        for a in &args {
            bound.push(self.expr_in(scope, a, aggs)?);
        }
        if matches!(name.as_str(), "substr" | "substring") && matches!(bound.len(), 2 | 3) {
            return self.substr(bound);
        }
        // pg_typeof(x): its type's name, known when bound (regtype shown as text).
        if name == "pg_typeof" && bound.len() == 1 {
            let t = bound[0].1;
            return Ok((
                Expr::Const(Datum::Text(t.name().to_string())),
                SqlType::Text,
            ));
        }
        self.call_bound(&name, bound)
    }

    /// `x AT TIME ZONE zone`: PostgreSQL's timezone(zone, x).
    #[inline(never)]
    fn at_time_zone(
        &mut self,
        scope: &Scope,
        x: &ast::Expr,
        zone: &ast::Expr,
        aggs: &mut Option<&mut Vec<Agg>>,
    ) -> SqlResult<(Expr, SqlType)> {
        let zone = self.expr_in(scope, zone, aggs)?;
        let x = self.expr_in(scope, x, aggs)?;
        self.call_bound("timezone", vec![zone, x])
    }

    /// `x::type`, CAST(x AS type) and `type 'literal'`. A literal's input error is
    /// placed at the literal (PostgreSQL's).
    #[inline(never)]
    fn cast_syntax(
        &mut self,
        scope: &Scope,
        e: &ast::Expr,
        aggs: &mut Option<&mut Vec<Agg>>,
    ) -> SqlResult<(Expr, SqlType)> {
        match e {
            ast::Expr::Cast {
                expr, data_type, ..
            } => {
                let x = self.expr_in(scope, expr, aggs)?;
                match &**expr {
                    ast::Expr::Value(v) => self.cast_to(x, data_type).map_err(|e| e.at(v.span)),
                    _ => self.cast_to(x, data_type),
                }
            }
            ast::Expr::TypedString(ts) => {
                let x = self.value(&ts.value.value)?;
                let span = ts.value.span;
                self.cast_to(x, &ts.data_type).map_err(|e| e.at(span))
            }
            _ => unreachable!("cast_syntax of {e}"),
        }
    }

    /// CEIL(x), FLOOR(x) and `a ^ b`, which sqlparser parses as syntax of their
    /// own: PostgreSQL's functions ceil, floor and power.
    #[inline(never)]
    fn math_syntax(
        &mut self,
        scope: &Scope,
        e: &ast::Expr,
        aggs: &mut Option<&mut Vec<Agg>>,
    ) -> SqlResult<(Expr, SqlType)> {
        let plain = ast::CeilFloorKind::DateTimeField(ast::DateTimeField::NoDateTime);
        match e {
            ast::Expr::Ceil { expr, field } | ast::Expr::Floor { expr, field }
                if *field == plain =>
            {
                let x = self.expr_in(scope, expr, aggs)?;
                let name = if matches!(e, ast::Expr::Ceil { .. }) {
                    "ceil"
                } else {
                    "floor"
                };
                self.call_bound(name, vec![x])
            }
            ast::Expr::BinaryOp { left, right, .. } => {
                let l = self.expr_in(scope, left, aggs)?;
                let r = self.expr_in(scope, right, aggs)?;
                self.call_bound("power", vec![l, r])
            }
            _ => Err(SqlError::unsupported(format!("the expression \"{e}\""))),
        }
    }

    /// The scalar function `name` on bound arguments, each coerced to its
    /// parameter's type.
    pub(crate) fn call_bound(
        &mut self,
        name: &str,
        bound: Vec<(Expr, SqlType)>,
    ) -> SqlResult<(Expr, SqlType)> {
        let (func, params, ret) = scalar_signature(name, &bound)?;
        if bound.len() != params.len() {
            return Err(SqlError::new(
                "42883",
                format!(
                    "function {name} takes {} arguments, {} given",
                    params.len(),
                    bound.len()
                ),
            ));
        }
        let types: Vec<&str> = bound.iter().map(|b| b.1.name()).collect();
        let mut out = Vec::new();
        for ((e, t), p) in bound.into_iter().zip(params) {
            let widens = t.is_number() && p.is_number() && int_rank(t) <= int_rank(*p);
            let bpchar = t == SqlType::Bpchar && *p == SqlType::Text;
            // An unknown parameter takes any type (strfn rule 1).
            let any = *p == SqlType::Unknown;
            // PostgreSQL's implicit date/time casts.
            let datetime = matches!(
                (t, *p),
                (SqlType::Date, SqlType::Timestamp | SqlType::TimestampTz)
                    | (SqlType::Timestamp, SqlType::TimestampTz)
                    | (SqlType::Time, SqlType::Interval)
            );
            if t != *p && t != SqlType::Unknown && !widens && !bpchar && !any && !datetime {
                return Err(SqlError::new(
                    "42883",
                    format!("function {name}({}) does not exist", types.join(", ")),
                )
                .with_hint("No function matches the given name and argument types. You might need to add explicit type casts."));
            }
            out.push(self.coerce(e, t, *p)?);
        }
        Ok((Expr::Call(func, out), ret))
    }

    /// EXTRACT(field FROM x) and substring(x FROM a FOR b).
    fn extract_or_substring(
        &mut self,
        scope: &Scope,
        e: &ast::Expr,
        aggs: &mut Option<&mut Vec<Agg>>,
    ) -> SqlResult<(Expr, SqlType)> {
        match e {
            ast::Expr::Extract { field, expr, .. } => {
                let field = Expr::Const(Datum::Text(field.to_string().to_ascii_lowercase()));
                let x = self.expr_in(scope, expr, aggs)?;
                self.call_bound("extract", vec![(field, SqlType::Text), x])
            }
            ast::Expr::Substring {
                expr,
                substring_from,
                substring_for,
                ..
            } => {
                let mut args = vec![self.expr_in(scope, expr, aggs)?];
                match substring_from {
                    Some(f) => args.push(self.expr_in(scope, f, aggs)?),
                    None => args.push((Expr::Const(Datum::Int4(1)), SqlType::Int4)),
                }
                if let Some(f) = substring_for {
                    args.push(self.expr_in(scope, f, aggs)?);
                }
                self.substr(args)
            }
            _ => unreachable!("called for EXTRACT and SUBSTRING"),
        }
    }

    /// substring / substr: text, start, optional length (integers).
    fn substr(&mut self, args: Vec<(Expr, SqlType)>) -> SqlResult<(Expr, SqlType)> {
        let mut out = Vec::new();
        for (i, (e, t)) in args.into_iter().enumerate() {
            let want = if i == 0 { SqlType::Text } else { SqlType::Int4 };
            let ok = t == want
                || t == SqlType::Unknown
                || (i == 0 && t == SqlType::Bpchar)
                || (i > 0 && matches!(t, SqlType::Int2));
            if !ok {
                return Err(SqlError::new(
                    "42883",
                    format!("function substring({}) does not exist", t.name()),
                )
                .with_hint("You might need to add explicit type casts."));
            }
            out.push(self.coerce(e, t, want)?);
        }
        Ok((Expr::Call(Func::Substr, out), SqlType::Text))
    }

    /// A DML statement's RETURNING list over its table's row: the bound items and
    /// result columns (42803 for an aggregate, as PostgreSQL).
    pub fn returning(
        &mut self,
        list: &[ast::SelectItem],
        scope: &Scope,
    ) -> SqlResult<(Vec<Expr>, Columns)> {
        let mut aggs = Vec::new();
        let out = self.projection(list, scope, &mut aggs)?;
        if !aggs.is_empty() {
            return Err(SqlError::new(
                "42803",
                "aggregate functions are not allowed in RETURNING",
            ));
        }
        Ok(out)
    }

    /// The select list: its bound items (aggregate calls collected into `aggs`) and
    /// result columns; `*` expands to the scope's columns.
    pub(crate) fn projection(
        &mut self,
        list: &[ast::SelectItem],
        scope: &Scope,
        aggs: &mut Vec<Agg>,
    ) -> SqlResult<(Vec<Expr>, Columns)> {
        let mut items = Vec::new();
        let mut columns = Vec::new();
        for it in list {
            match it {
                ast::SelectItem::Wildcard(_) => {
                    if scope.cols.is_empty() && scope.qualifiers.is_empty() {
                        return Err(SqlError::syntax(
                            "SELECT * with no tables specified is not valid",
                        ));
                    }
                    for i in scope.star_cols() {
                        items.push(Expr::Col(i));
                        columns.push(scope.cols[i].clone());
                    }
                }
                ast::SelectItem::QualifiedWildcard(kind, _) => {
                    let cols = match kind {
                        ast::SelectItemQualifiedWildcardKind::ObjectName(n) => {
                            scope.qualified_star(&object_name(n)?)?
                        }
                        other => {
                            return Err(SqlError::unsupported(format!("the select item {other}.*")))
                        }
                    };
                    for i in cols {
                        items.push(Expr::Col(i));
                        columns.push(scope.cols[i].clone());
                    }
                }
                ast::SelectItem::ExprWithAliases { .. } => {
                    return Err(SqlError::unsupported("several aliases for one expression"))
                }
                ast::SelectItem::UnnamedExpr(e)
                | ast::SelectItem::ExprWithAlias { expr: e, .. } => {
                    let (b, t) = self.expr_in(scope, e, &mut Some(&mut *aggs))?;
                    // A set operation resolves its leaves' untyped literals (analyze
                    // rule 5).
                    let (b, t) = match self.keep_unknown && !matches!(b, Expr::Param(_)) {
                        true => (b, t),
                        false => self.settle(b, t),
                    };
                    let name = match it {
                        ast::SelectItem::ExprWithAlias { alias, .. } => super::ident_name(alias),
                        _ => default_name(e),
                    };
                    items.push(b);
                    columns.push((name, t));
                }
            }
        }
        Ok((items, columns))
    }

    /// LIMIT and OFFSET, each bound as a bigint (NULL: none).
    pub(crate) fn limit_offset(
        &mut self,
        lc: &ast::LimitClause,
    ) -> SqlResult<(Option<Expr>, Option<Expr>)> {
        let (mut limit, mut offset) = (None, None);
        match lc {
            ast::LimitClause::LimitOffset {
                limit: l,
                offset: o,
                limit_by,
            } => {
                if !limit_by.is_empty() {
                    return Err(SqlError::unsupported("LIMIT BY"));
                }
                if let Some(l) = l {
                    limit = Some(self.count_expr(l)?);
                }
                if let Some(o) = o {
                    offset = Some(self.count_expr(&o.value)?);
                }
            }
            ast::LimitClause::OffsetCommaLimit {
                offset: o,
                limit: l,
            } => {
                limit = Some(self.count_expr(l)?);
                offset = Some(self.count_expr(o)?);
            }
        }
        Ok((limit, offset))
    }

    /// `FETCH FIRST [n] ROW[S] ONLY`: the standard's LIMIT n (1 without n); WITH
    /// TIES is 0A000; PERCENT and FETCH after LIMIT are 42601 as PostgreSQL's
    /// grammar has them.
    pub(crate) fn fetch_first(&mut self, f: &ast::Fetch, has_limit: bool) -> SqlResult<Expr> {
        if has_limit {
            return Err(SqlError::syntax("syntax error at or near \"FETCH\""));
        }
        if f.percent {
            return Err(SqlError::syntax("syntax error at or near \"PERCENT\""));
        }
        if f.with_ties {
            return Err(SqlError::unsupported("FETCH ... WITH TIES"));
        }
        match &f.quantity {
            Some(q) => self.count_expr(q),
            None => Ok(Expr::Const(Datum::Int8(1))),
        }
    }

    fn count_expr(&mut self, e: &ast::Expr) -> SqlResult<Expr> {
        if let ast::Expr::Value(v) = e {
            if matches!(v.value, ast::Value::Null) {
                return Ok(Expr::Const(Datum::Null));
            }
        }
        let (b, t) = self.expr(&Scope::default(), e)?;
        self.coerce(b, t, SqlType::Int8)
            .map_err(|_| SqlError::new("42804", "argument of LIMIT must be type bigint"))
    }

    /// generate_series's arguments: two or three integers, bound as bigints; the
    /// series' type (integer if all are, else bigint).
    fn series_args(
        &mut self,
        args: &[ast::FunctionArg],
        ctx: &Scope<'_>,
    ) -> SqlResult<(Vec<Expr>, SqlType)> {
        let mut bound = Vec::new();
        // The arguments may name an enclosing query's columns (a LATERAL subquery's
        // left side, analyze rule 7), never this FROM list's.
        let scope = Scope {
            catalog: ctx.catalog,
            parent: ctx.parent,
            depth: ctx.depth,
            ..Scope::default()
        };
        for a in args {
            match a {
                ast::FunctionArg::Unnamed(ast::FunctionArgExpr::Expr(e)) => {
                    bound.push(self.expr(&scope, e)?)
                }
                other => return Err(SqlError::unsupported(format!("the argument {other}"))),
            }
        }
        if !(2..=3).contains(&bound.len()) {
            return Err(SqlError::new(
                "42883",
                "generate_series takes 2 or 3 integer arguments",
            ));
        }
        if let Some(t) = bound
            .iter()
            .map(|b| b.1)
            .find(|t| matches!(t, SqlType::Timestamp | SqlType::TimestampTz | SqlType::Date))
        {
            return self.timestamp_series(bound, t);
        }
        let t = if bound.iter().any(|(_, t)| *t == SqlType::Numeric) {
            SqlType::Numeric
        } else if bound
            .iter()
            .all(|(_, t)| *t == SqlType::Int4 || *t == SqlType::Unknown)
        {
            SqlType::Int4
        } else {
            SqlType::Int8
        };
        let mut es = Vec::new();
        for (e, et) in bound {
            if !(et.is_int() || et == SqlType::Unknown || et == SqlType::Numeric) {
                return Err(SqlError::new(
                    "42883",
                    format!("function generate_series({}) does not exist", et.name()),
                ));
            }
            let to = if t == SqlType::Numeric {
                t
            } else {
                SqlType::Int8
            };
            es.push(self.coerce(e, et, to)?);
        }
        Ok((es, t))
    }

    /// generate_series(start, stop, step interval) of timestamps (a date is a
    /// timestamptz, PostgreSQL's preferred type).
    fn timestamp_series(
        &mut self,
        bound: Vec<(Expr, SqlType)>,
        t: SqlType,
    ) -> SqlResult<(Vec<Expr>, SqlType)> {
        let t = if t == SqlType::Date {
            SqlType::TimestampTz
        } else {
            t
        };
        let types: Vec<&str> = bound.iter().map(|b| b.1.name()).collect();
        let fits = bound.len() == 3
            && bound[..2].iter().all(|b| {
                b.1 == t || matches!(b.1, SqlType::Unknown | SqlType::Date | SqlType::Timestamp)
            })
            && matches!(bound[2].1, SqlType::Interval | SqlType::Unknown);
        if !fits {
            return Err(SqlError::new(
                "42883",
                format!(
                    "function generate_series({}) does not exist",
                    types.join(", ")
                ),
            ));
        }
        let mut es = Vec::new();
        for (i, (e, et)) in bound.into_iter().enumerate() {
            let to = if i == 2 { SqlType::Interval } else { t };
            es.push(self.coerce(e, et, to)?);
        }
        Ok((es, t))
    }

    pub(crate) fn bind_from_item(
        &mut self,
        tf: &ast::TableFactor,
        scope_of: &ScopeOf<'_>,
        ctx: &Scope<'_>,
    ) -> SqlResult<(From, Scope<'static>)> {
        let ast::TableFactor::Table {
            name, alias, args, ..
        } = tf
        else {
            return Err(SqlError::unsupported(format!("FROM {tf}")));
        };
        let tname = object_name(name)?;
        let alias_name = alias.as_ref().map(|a| super::ident_name(&a.name));
        let alias_cols: Vec<String> = alias
            .as_ref()
            .map(|a| {
                a.columns
                    .iter()
                    .map(|c| super::ident_name(&c.name))
                    .collect()
            })
            .unwrap_or_default();
        if let Some(args) = args {
            if tname != "generate_series" {
                return Err(SqlError::new(
                    "42883",
                    format!("function {tname}() does not exist"),
                ));
            }
            let (es, t) = self.series_args(&args.args, ctx)?;
            let mut it = es.into_iter();
            let (a, b, c) = (it.next(), it.next(), it.next());
            let col = alias_cols
                .first()
                .cloned()
                .or_else(|| alias_name.clone())
                .unwrap_or_else(|| "generate_series".into());
            let scope = Scope {
                qualifiers: vec![alias_name.unwrap_or_else(|| "generate_series".into())],
                cols: vec![(col, t)],
                excluded: false,
                ..Default::default()
            };
            return Ok((
                From::Series(
                    a.unwrap_or(Expr::Const(Datum::Null)),
                    b.unwrap_or(Expr::Const(Datum::Null)),
                    c,
                    t,
                ),
                scope,
            ));
        }
        let mut cols = scope_of.columns(&tname)?;
        for (i, n) in alias_cols.iter().enumerate() {
            if let Some(c) = cols.get_mut(i) {
                c.0 = n.clone();
            }
        }
        Ok((
            From::Table(tname.clone()),
            Scope {
                qualifiers: vec![alias_name.unwrap_or(tname)],
                cols,
                excluded: false,
                ..Default::default()
            },
        ))
    }
}

/// The functions without arguments that ask the session or the server.
fn niladic_signature(name: &str) -> Option<(Func, &'static [SqlType], SqlType)> {
    Some(match name {
        "version" => (Func::Version, &[], SqlType::Text),
        "current_user" | "current_role" | "user" => (Func::CurrentUser, &[], SqlType::Text),
        "session_user" => (Func::SessionUser, &[], SqlType::Text),
        "current_database" => (Func::CurrentDatabase, &[], SqlType::Text),
        "pg_current_wal_lsn" | "pg_current_wal_insert_lsn" | "pg_current_wal_flush_lsn" => {
            (Func::CurrentWalLsn, &[], SqlType::Lsn)
        }
        "pg_backend_pid" => (Func::BackendPid, &[], SqlType::Int4),
        "pg_reload_conf" => (Func::ReloadConf, &[], SqlType::Bool),
        "pg_is_in_recovery" => (Func::IsInRecovery, &[], SqlType::Bool),
        "pg_switch_wal" => (Func::SwitchWal, &[], SqlType::Lsn),
        "pg_last_xact_replay_timestamp" => {
            (Func::LastXactReplayTimestamp, &[], SqlType::TimestampTz)
        }
        "pg_last_wal_receive_lsn" | "pg_last_wal_replay_lsn" => {
            let f = match name {
                "pg_last_wal_receive_lsn" => Func::LastWalReceiveLsn,
                _ => Func::LastWalReplayLsn,
            };
            (f, &[], SqlType::Lsn)
        }
        "lastval" => (Func::Lastval, &[], SqlType::Int8),
        _ => return None,
    })
}

/// The scalar function `name` for arguments of the given types: what it is, its
/// parameter types and its result type (42883 for a function Strata lacks).
fn scalar_signature(
    name: &str,
    bound: &[(Expr, SqlType)],
) -> SqlResult<(Func, &'static [SqlType], SqlType)> {
    if let Some(sig) = niladic_signature(name) {
        return Ok(sig);
    }
    Ok(match name {
        "pg_wal_lsn_diff" => (
            Func::WalLsnDiff,
            &[SqlType::Lsn, SqlType::Lsn],
            SqlType::Numeric,
        ),
        "pg_relation_filepath" => (Func::RelationFilepath, &[SqlType::Text], SqlType::Text),
        // amcheck's: void, shown as an empty value; heapallindexed is always done.
        "bt_index_check" => {
            let ps: &[SqlType] = match bound.len() {
                1 => &[SqlType::Text],
                _ => &[SqlType::Text, SqlType::Bool],
            };
            (Func::BtIndexCheck, ps, SqlType::Text)
        }
        "pg_promote" => {
            let ps: &[SqlType] = match bound.len() {
                0 => &[],
                1 => &[SqlType::Bool],
                _ => &[SqlType::Bool, SqlType::Int4],
            };
            (Func::Promote, ps, SqlType::Bool)
        }
        "pg_cancel_backend" => (Func::CancelBackend, &[SqlType::Int4], SqlType::Bool),
        "nextval" => (Func::Nextval, &[SqlType::Text], SqlType::Int8),
        "currval" => (Func::Currval, &[SqlType::Text], SqlType::Int8),
        "setval" => {
            let ps: &[SqlType] = match bound.len() {
                2 => &[SqlType::Text, SqlType::Int8],
                _ => &[SqlType::Text, SqlType::Int8, SqlType::Bool],
            };
            (Func::Setval, ps, SqlType::Int8)
        }
        "length" | "char_length" => (Func::Length, &[SqlType::Text], SqlType::Int4),
        "lower" => (Func::Lower, &[SqlType::Text], SqlType::Text),
        "upper" => (Func::Upper, &[SqlType::Text], SqlType::Text),
        "repeat" => (Func::Repeat, &[SqlType::Text, SqlType::Int4], SqlType::Text),
        "now" | "current_timestamp" | "transaction_timestamp" => {
            (Func::Now, &[], SqlType::TimestampTz)
        }
        "clock_timestamp" | "statement_timestamp" => (Func::Clock, &[], SqlType::TimestampTz),
        "pg_sleep" => (Func::Sleep, &[SqlType::Float8], SqlType::Text),
        "random" => (Func::Random, &[], SqlType::Float8),
        "setseed" => (Func::Setseed, &[SqlType::Float8], SqlType::Text),
        "localtimestamp" => (Func::LocalTimestamp, &[], SqlType::Timestamp),
        "current_date" => (Func::CurrentDate, &[], SqlType::Date),
        "abs" => {
            let t = bound.first().map(|b| b.1).unwrap_or(SqlType::Int4);
            let t = if t.is_number() { t } else { SqlType::Int4 };
            let ps: &[SqlType] = match t {
                SqlType::Int2 => &[SqlType::Int2],
                SqlType::Int8 => &[SqlType::Int8],
                SqlType::Numeric => &[SqlType::Numeric],
                SqlType::Float4 => &[SqlType::Float4],
                SqlType::Float8 => &[SqlType::Float8],
                _ => &[SqlType::Int4],
            };
            (Func::Abs, ps, t)
        }
        "generate_series" => {
            return Err(SqlError::unsupported(
                "generate_series outside FROM (write FROM generate_series(a, b) g)",
            ))
        }
        _ => {
            let types: Vec<SqlType> = bound.iter().map(|b| b.1).collect();
            let found = crate::mathfn::signature(name, &types)
                .or_else(|| crate::strfn::signature(name, &types))
                .or_else(|| crate::datefn::signature(name, &types));
            if let Some(sig) = found {
                return Ok(sig);
            }
            let types: Vec<&str> = bound.iter().map(|b| b.1.name()).collect();
            return Err(SqlError::new(
                "42883",
                format!("function {name}({}) does not exist", types.join(", ")),
            )
            .with_hint("No function matches the given name and argument types. You might need to add explicit type casts."));
        }
    })
}

/// The operators Strata implements.
pub(crate) fn bin_op_of(op: &ast::BinaryOperator) -> SqlResult<BinOp> {
    Ok(match op {
        ast::BinaryOperator::Eq => BinOp::Eq,
        ast::BinaryOperator::NotEq => BinOp::Ne,
        ast::BinaryOperator::Lt => BinOp::Lt,
        ast::BinaryOperator::LtEq => BinOp::Le,
        ast::BinaryOperator::Gt => BinOp::Gt,
        ast::BinaryOperator::GtEq => BinOp::Ge,
        ast::BinaryOperator::And => BinOp::And,
        ast::BinaryOperator::Or => BinOp::Or,
        ast::BinaryOperator::Plus => BinOp::Add,
        ast::BinaryOperator::Minus => BinOp::Sub,
        ast::BinaryOperator::Multiply => BinOp::Mul,
        ast::BinaryOperator::Divide => BinOp::Div,
        ast::BinaryOperator::Modulo => BinOp::Mod,
        ast::BinaryOperator::StringConcat => BinOp::Concat,
        other => return Err(SqlError::unsupported(format!("the operator {other}"))),
    })
}

/// The type both operands of `op` take: unknown takes the other side's type.
fn operand_type(op: BinOp, lt: SqlType, rt: SqlType) -> SqlResult<SqlType> {
    Ok(match (lt, rt) {
        (SqlType::Unknown, SqlType::Unknown) if is_cmp(op) => SqlType::Text,
        (SqlType::Unknown, SqlType::Unknown) => SqlType::Int4,
        (SqlType::Unknown, t) | (t, SqlType::Unknown) => t,
        (a, b) if a.is_number() && b.is_number() => crate::numeric::wider(a, b),
        (a, b) if a == b => a,
        // bpchar against text: both as text (bpchar's implicit cast).
        (SqlType::Bpchar, SqlType::Text) | (SqlType::Text, SqlType::Bpchar) => SqlType::Text,
        (a, b) if is_datetime(a) && is_datetime(b) && is_cmp(op) => wider_datetime(a, b),
        (a, b) => return Err(mismatch(op.symbol(), a, b)),
    })
}

/// `<`, `<=`, `>`, `>=`.
fn is_order_cmp(op: BinOp) -> bool {
    matches!(op, BinOp::Lt | BinOp::Le | BinOp::Gt | BinOp::Ge)
}

fn is_cmp(op: BinOp) -> bool {
    matches!(
        op,
        BinOp::Eq | BinOp::Ne | BinOp::Lt | BinOp::Le | BinOp::Gt | BinOp::Ge
    )
}

pub(crate) fn function_args(f: &ast::Function) -> SqlResult<(Vec<ast::Expr>, bool)> {
    // Clauses that change a call's meaning are refused, never ignored (sql rule 2).
    if f.filter.is_some() {
        return Err(SqlError::unsupported("aggregate FILTER"));
    }
    if f.over.is_some() {
        return Err(SqlError::unsupported("window functions"));
    }
    if !f.within_group.is_empty() || f.null_treatment.is_some() {
        return Err(SqlError::unsupported(format!("the call {f}")));
    }
    match &f.args {
        ast::FunctionArguments::None => Ok((vec![], false)),
        ast::FunctionArguments::Subquery(_) => Err(SqlError::unsupported("subqueries")),
        ast::FunctionArguments::List(l) => {
            if l.duplicate_treatment.is_some() || !l.clauses.is_empty() {
                return Err(SqlError::unsupported(format!("the call {f}")));
            }
            let mut out = Vec::new();
            let mut star = false;
            for a in &l.args {
                match a {
                    ast::FunctionArg::Unnamed(ast::FunctionArgExpr::Expr(e)) => out.push(e.clone()),
                    ast::FunctionArg::Unnamed(ast::FunctionArgExpr::Wildcard) => star = true,
                    // `name => x`: as `name := x` (named_args).
                    ast::FunctionArg::Named {
                        name,
                        arg: ast::FunctionArgExpr::Expr(e),
                        ..
                    } => out.push(ast::Expr::BinaryOp {
                        left: Box::new(ast::Expr::Identifier(name.clone())),
                        op: ast::BinaryOperator::Assignment,
                        right: Box::new(e.clone()),
                    }),
                    ast::FunctionArg::ExprNamed {
                        name,
                        arg: ast::FunctionArgExpr::Expr(e),
                        ..
                    } => out.push(ast::Expr::BinaryOp {
                        left: Box::new(name.clone()),
                        op: ast::BinaryOperator::Assignment,
                        right: Box::new(e.clone()),
                    }),
                    other => return Err(SqlError::unsupported(format!("the argument {other}"))),
                }
            }
            Ok((out, star))
        }
    }
}

/// Arguments given by name (`make_interval(days => 3)`, `secs := 1.5`) put in
/// their parameters' places, the others' defaults filled in, for the functions
/// whose parameters PostgreSQL names; positional arguments come first. Other
/// calls are returned as they are.
#[inline(never)]
fn named_args(name: &str, args: Vec<ast::Expr>) -> SqlResult<Vec<ast::Expr>> {
    let named = |a: &ast::Expr| {
        matches!(a, ast::Expr::BinaryOp { op: ast::BinaryOperator::Assignment, left, .. }
            if matches!(**left, ast::Expr::Identifier(_)))
    };
    if !args.iter().any(named) {
        return Ok(args);
    }
    let params: &[(&str, &str)] = match name {
        "make_interval" => &[
            ("years", "0"),
            ("months", "0"),
            ("weeks", "0"),
            ("days", "0"),
            ("hours", "0"),
            ("mins", "0"),
            ("secs", "0.0"),
        ],
        _ => return Err(SqlError::unsupported(format!("named arguments of {name}"))),
    };
    let mut slots: Vec<Option<ast::Expr>> = vec![None; params.len()];
    for (i, a) in args.into_iter().enumerate() {
        let (slot, e) = match a {
            ast::Expr::BinaryOp {
                left,
                op: ast::BinaryOperator::Assignment,
                right,
            } => {
                let ast::Expr::Identifier(id) = *left else {
                    return Err(SqlError::syntax("syntax error at or near \":=\""));
                };
                let n = super::ident_name(&id);
                let slot = params.iter().position(|(p, _)| *p == n).ok_or_else(|| {
                    SqlError::new("42883", format!("function {name} has no parameter \"{n}\""))
                })?;
                (slot, *right)
            }
            e if i < params.len() => (i, e),
            _ => {
                return Err(SqlError::new(
                    "42883",
                    format!("function {name} takes at most {} arguments", params.len()),
                ))
            }
        };
        if slots[slot].replace(e).is_some() {
            return Err(SqlError::new(
                "42601",
                format!("argument name \"{}\" used more than once", params[slot].0),
            ));
        }
    }
    Ok(slots
        .into_iter()
        .zip(params)
        .map(|(s, (_, d))| {
            s.unwrap_or_else(|| ast::Expr::value(ast::Value::Number((*d).into(), false)))
        })
        .collect())
}

/// An analysis error placed at `e` (sql rule 7), the innermost expression that
/// gave it, as PostgreSQL's parser_errposition; not stack depth, nor a numeric
/// literal past what Strata's numeric holds (PostgreSQL's takes it, and may fail
/// later without a place). Apart from `expr_in`, whose frame bounds the depth.
#[inline(never)]
#[cold]
fn place_at(err: SqlError, e: &ast::Expr) -> SqlError {
    match err.location {
        None if !matches!(err.code, "54001" | "22003") => err.at(ast::Spanned::span(e)),
        _ => err,
    }
}

/// A binary operator's error: no such operator at the operator (after its left
/// operand), a literal that does not fit at the literal.
#[inline(never)]
#[cold]
fn place_binop(err: SqlError, (left, right): (&ast::Expr, &ast::Expr), rt: SqlType) -> SqlError {
    use ast::Spanned;
    match err.code {
        "42883" => {
            let end = left.span().end;
            let mut err = err.at(sqlparser::tokenizer::Span::new(end, end));
            err.after = true;
            err
        }
        _ if rt == SqlType::Unknown => err.at(right.span()),
        _ => err.at(left.span()),
    }
}

fn column(scope: &Scope, q: Option<&ast::Ident>, c: &ast::Ident) -> SqlResult<(Expr, SqlType)> {
    let name = super::ident_name(c);
    if let Some(q) = q {
        let qn = super::ident_name(q);
        if scope.excluded && qn == "excluded" && !scope.qualifiers.contains(&qn) {
            let (e, t) = column(
                &Scope {
                    excluded: false,
                    ..scope.clone()
                },
                None,
                c,
            )?;
            let Expr::Col(i) = e else {
                unreachable!("a column")
            };
            return Ok((Expr::Col(scope.cols.len() + i), t));
        }
        if !scope.qualifiers.contains(&qn) {
            return Err(SqlError::new(
                "42P01",
                format!("missing FROM-clause entry for table \"{qn}\""),
            ));
        }
    }
    let qn = q.map(super::ident_name);
    let hits: Vec<usize> = (0..scope.cols.len())
        .filter(|i| scope.cols[*i].0 == name)
        .filter(|i| match &qn {
            Some(q) => scope.owned_by(*i, q),
            None => scope.bare.get(*i).copied().unwrap_or(true),
        })
        .collect();
    match hits.as_slice() {
        [i] => Ok((Expr::Col(*i), scope.cols[*i].1)),
        // PostgreSQL's text: a qualified name is shown as written, unquoted.
        [] => Err(SqlError::new(
            "42703",
            match &qn {
                Some(q) => format!("column {q}.{name} does not exist"),
                None => format!("column \"{name}\" does not exist"),
            },
        )),
        _ => Err(SqlError::new(
            "42702",
            format!("column reference \"{name}\" is ambiguous"),
        )),
    }
}

/// Whether `e` reads a column (a loop over an explicit stack: rule 4).
pub fn uses_columns(e: &Expr) -> bool {
    let mut todo = vec![e];
    while let Some(e) = todo.pop() {
        if matches!(e, Expr::Col(_)) {
            return true;
        }
        e.children(&mut todo);
    }
    false
}

/// Whether `e` evaluates without reaching the engine: no subquery, no function of
/// the server's state ([`Func::reaches_server`]). Such a filter may run while a scan
/// holds a page (cursor rule 6).
pub fn engine_free(e: &Expr) -> bool {
    // Asked once per scan a subquery runs (per outer row): no allocation.
    !e.any(&mut |x| match x {
        Expr::SubLink(_) => true,
        Expr::Call(f, _) => f.reaches_server(),
        _ => false,
    })
}

impl Func {
    /// False for the functions that see NULL arguments (strfn rule 2); the others
    /// are NULL for a NULL argument.
    pub fn strict(self) -> bool {
        match self {
            Func::Str(s, _) => s.strict(),
            Func::Date(d, _) => d.strict(),
            _ => true,
        }
    }

    /// Whether a call reads or changes what lies outside its arguments and the
    /// session's settings: sequences, the WAL, the catalog, other sessions.
    pub fn reaches_server(self) -> bool {
        matches!(
            self,
            Func::CurrentWalLsn
                | Func::IsInRecovery
                | Func::Promote
                | Func::BtIndexCheck
                | Func::SwitchWal
                | Func::LastXactReplayTimestamp
                | Func::LastWalReceiveLsn
                | Func::LastWalReplayLsn
                | Func::RelationFilepath
                | Func::ReloadConf
                | Func::CancelBackend
                | Func::Nextval
                | Func::Currval
                | Func::Setval
                | Func::Lastval
        )
    }
}

impl Expr {
    /// Pushes the operands of this node onto `out` (walks use an explicit stack:
    /// rule 4).
    pub fn children<'a>(&'a self, out: &mut Vec<&'a Expr>) {
        self.each_child(&mut |c| {
            out.push(c);
            false
        });
    }

    /// Whether `f` holds of this node or of any below it, walked without
    /// allocating (the depth is bounded by binding, rule 4): for tests made per
    /// row or per run of a subquery.
    pub fn any(&self, f: &mut dyn FnMut(&Expr) -> bool) -> bool {
        f(self) || self.each_child(&mut |c| c.any(f))
    }

    /// Gives `f` each operand of this node in turn, until it returns true
    /// (then true).
    fn each_child<'a>(&'a self, f: &mut dyn FnMut(&'a Expr) -> bool) -> bool {
        use crate::conditional::Special as S;
        match self {
            Expr::Const(_)
            | Expr::Param(_)
            | Expr::Agg(_)
            | Expr::Col(_)
            | Expr::Outer(..)
            | Expr::Window(_) => false,
            Expr::SubLink(l) => match &l.kind {
                crate::subquery::SubKind::Quantified { lhs, .. } => f(lhs),
                _ => false,
            },
            Expr::Bin(a, _, b) => f(a) || f(b),
            Expr::Bool(_, l) | Expr::Call(_, l) => l.iter().any(f),
            Expr::Not(a)
            | Expr::Neg(a)
            | Expr::IsNull(a, _)
            | Expr::Cast(a, _)
            | Expr::Fit(a, _) => f(a),
            Expr::InList(a, l, _) => f(a) || l.iter().any(f),
            Expr::Special(s) => match &**s {
                S::Case { whens, default } => whens.iter().any(|(c, v)| f(c) || f(v)) || f(default),
                S::Coalesce(l) | S::Extreme(l, _) => l.iter().any(f),
                S::NullIf(a, b) | S::Distinct(a, b, _) => f(a) || f(b),
                S::BoolTest(a, _, _) => f(a),
                S::Like {
                    expr,
                    pattern,
                    escape,
                    ..
                } => f(expr) || f(pattern) || escape.as_ref().is_some_and(f),
            },
        }
    }

    /// This node with each operand replaced by `f` of it (bottom-up rewrites;
    /// the depth is bounded by binding, rule 4).
    pub fn map_children(self, f: &mut dyn FnMut(Expr) -> SqlResult<Expr>) -> SqlResult<Expr> {
        use crate::conditional::Special as S;
        let mut bx = |b: Box<Expr>| -> SqlResult<Box<Expr>> { Ok(Box::new(f(*b)?)) };
        Ok(match self {
            e @ (Expr::Const(_)
            | Expr::Param(_)
            | Expr::Agg(_)
            | Expr::Col(_)
            | Expr::Outer(..)
            | Expr::Window(_)) => e,
            Expr::SubLink(mut l) => {
                if let crate::subquery::SubKind::Quantified { lhs, .. } = &mut l.kind {
                    let x = std::mem::replace(lhs, Expr::Const(Datum::Null));
                    *lhs = f(x)?;
                }
                Expr::SubLink(l)
            }
            Expr::Bin(a, op, b) => Expr::Bin(bx(a)?, op, bx(b)?),
            Expr::Not(a) => Expr::Not(bx(a)?),
            Expr::Neg(a) => Expr::Neg(bx(a)?),
            Expr::IsNull(a, n) => Expr::IsNull(bx(a)?, n),
            Expr::Cast(a, t) => Expr::Cast(bx(a)?, t),
            Expr::Fit(a, m) => Expr::Fit(bx(a)?, m),
            Expr::Bool(op, l) => Expr::Bool(op, map_all(l, f)?),
            Expr::Call(func, l) => Expr::Call(func, map_all(l, f)?),
            Expr::InList(a, l, n) => Expr::InList(bx(a)?, map_all(l, f)?, n),
            Expr::Special(s) => Expr::Special(Box::new(match *s {
                S::Case { whens, default } => S::Case {
                    whens: whens
                        .into_iter()
                        .map(|(c, v)| Ok((f(c)?, f(v)?)))
                        .collect::<SqlResult<_>>()?,
                    default: f(default)?,
                },
                S::Coalesce(l) => S::Coalesce(map_all(l, f)?),
                S::Extreme(l, least) => S::Extreme(map_all(l, f)?, least),
                S::NullIf(a, b) => S::NullIf(f(a)?, f(b)?),
                S::Distinct(a, b, n) => S::Distinct(f(a)?, f(b)?, n),
                S::BoolTest(a, w, n) => S::BoolTest(f(a)?, w, n),
                S::Like {
                    expr,
                    pattern,
                    escape,
                    fold,
                    negated,
                } => S::Like {
                    expr: f(expr)?,
                    pattern: f(pattern)?,
                    escape: escape.map(&mut *f).transpose()?,
                    fold,
                    negated,
                },
            })),
        })
    }
}

fn map_all(l: Vec<Expr>, f: &mut dyn FnMut(Expr) -> SqlResult<Expr>) -> SqlResult<Vec<Expr>> {
    l.into_iter().map(f).collect()
}

/// PostgreSQL's name for an unaliased result column (FigureColname; a loop: rule
/// 4). A cast names the column by its type unless what it casts has a name of its
/// own (a column, a function).
pub(crate) fn default_name(mut e: &ast::Expr) -> String {
    let mut casts = Vec::new();
    loop {
        match e {
            ast::Expr::Nested(inner) => e = inner,
            ast::Expr::Cast {
                expr, data_type, ..
            } => {
                casts.push(data_type);
                e = expr;
            }
            _ => break,
        }
    }
    match base_name(e) {
        Some(n) => n,
        // The outermost cast names a column whose expression has no name.
        None => casts
            .first()
            .map(|t| cast_column_name(t))
            .unwrap_or_else(|| "?column?".into()),
    }
}

/// The name an expression gives its column, `None` when PostgreSQL's is the weak
/// "?column?".
fn base_name(e: &ast::Expr) -> Option<String> {
    Some(match e {
        ast::Expr::Ceil { .. } => "ceil".into(),
        ast::Expr::Floor { .. } => "floor".into(),
        ast::Expr::Position { .. } => "position".into(),
        ast::Expr::Overlay { .. } => "overlay".into(),
        ast::Expr::Value(_) | ast::Expr::UnaryOp { .. } | ast::Expr::BinaryOp { .. } => {
            return None
        }
        _ => {
            let n = default_name_of(e);
            if n == "?column?" {
                return None;
            }
            n
        }
    })
}

fn default_name_of(e: &ast::Expr) -> String {
    match e {
        ast::Expr::Identifier(i) => super::ident_name(i),
        ast::Expr::CompoundIdentifier(v) => v.last().map(super::ident_name).unwrap_or_default(),
        ast::Expr::Function(f) => f
            .name
            .0
            .last()
            .and_then(|p| p.as_ident())
            .map(super::ident_name)
            .unwrap_or_else(|| "?column?".into()),
        ast::Expr::Cast { data_type, .. } => cast_column_name(data_type),
        // `date '...'` is a cast of its literal (PostgreSQL's grammar).
        ast::Expr::TypedString(ts) => cast_column_name(&ts.data_type),
        ast::Expr::Interval(_) => "interval".into(),
        ast::Expr::AtTimeZone { .. } => "timezone".into(),
        ast::Expr::Case { .. } => "case".into(),
        ast::Expr::Exists { .. } => "exists".into(),
        ast::Expr::Extract { .. } => "extract".into(),
        ast::Expr::Substring { .. } => "substring".into(),
        // A scalar subquery is named by its one column (PostgreSQL's FigureColname).
        ast::Expr::Subquery(q) => match &*q.body {
            ast::SetExpr::Select(s) => match s.projection.as_slice() {
                [ast::SelectItem::ExprWithAlias { alias, .. }] => super::ident_name(alias),
                [ast::SelectItem::UnnamedExpr(e)] => default_name(e),
                _ => "?column?".into(),
            },
            _ => "?column?".into(),
        },
        _ => "?column?".into(),
    }
}

/// The name PostgreSQL gives a cast constant's column: the type's `typname`, without
/// its modifier (`1::int` is `int4`, `'a'::varchar(3)` is `varchar`). Strata keeps
/// varchar and char as text, so those (and the other text-held names) are named here;
/// the rest by their column type's name.
fn cast_column_name(t: &ast::DataType) -> String {
    let s = t.to_string().to_ascii_lowercase();
    let base = s.split('(').next().unwrap_or_default().trim();
    match base {
        "character varying" => "varchar".into(),
        "char" | "character" => "bpchar".into(),
        "varchar" | "name" | "regclass" | "pg_lsn" => base.into(),
        _ => match SqlType::from_ast(t).and_then(SqlType::to_col) {
            Ok(c) => c.name().into(),
            Err(_) => base.into(),
        },
    }
}

// ---- evaluation ----

/// The row and parameters an expression is evaluated against.
pub struct Row<'a> {
    pub cols: &'a [Datum],
    pub params: &'a [Datum],
    pub aggs: &'a [Datum],
    pub env: &'a dyn Env,
    /// Runs subqueries and gives enclosing queries' columns (the executor's);
    /// None where a subquery cannot be (a DEFAULT, a CHECK).
    pub sub: Option<&'a dyn crate::subquery::SubRunner>,
}

fn int_of(d: &Datum) -> Option<i128> {
    match d {
        Datum::Int2(v) => Some(i128::from(*v)),
        Datum::Int4(v) => Some(i128::from(*v)),
        Datum::Int8(v) => Some(i128::from(*v)),
        _ => None,
    }
}

/// Converts an integer result to type `t`, or 22003.
fn int_as(v: i128, t: SqlType) -> SqlResult<Datum> {
    match t {
        SqlType::Int2 => i16::try_from(v)
            .map(Datum::Int2)
            .map_err(|_| out_of_range("smallint")),
        SqlType::Int4 => i32::try_from(v)
            .map(Datum::Int4)
            .map_err(|_| out_of_range("integer")),
        SqlType::Int8 => i64::try_from(v)
            .map(Datum::Int8)
            .map_err(|_| out_of_range("bigint")),
        _ => crate::numeric::from_i128(v).map(Datum::Numeric),
    }
}

/// Compares two non-NULL values of compatible types.
pub fn compare(a: &Datum, b: &Datum) -> Ordering {
    match (a, b) {
        // The commonest pairs first, without numeric's general path.
        (Datum::Int4(x), Datum::Int4(y)) => x.cmp(y),
        (Datum::Int8(x), Datum::Int8(y)) => x.cmp(y),
        (Datum::Numeric(x), Datum::Numeric(y)) => x.cmp(y),
        (Datum::Text(x), Datum::Text(y)) => x.as_bytes().cmp(y.as_bytes()),
        (Datum::Bool(x), Datum::Bool(y)) => x.cmp(y),
        (Datum::Lsn(x), Datum::Lsn(y)) => x.cmp(y),
        (Datum::Timestamp(x), Datum::Timestamp(y))
        | (Datum::TimestampTz(x), Datum::TimestampTz(y)) => x.cmp(y),
        (Datum::Date(x), Datum::Date(y)) => x.cmp(y),
        (
            Datum::Timestamp(_) | Datum::TimestampTz(_) | Datum::Date(_),
            Datum::Timestamp(_) | Datum::TimestampTz(_) | Datum::Date(_),
        ) => compare_datetimes(a, b),
        (Datum::Time(x), Datum::Time(y)) => x.cmp(y),
        // PostgreSQL's interval_cmp: a month is 30 days, a day 24 hours.
        (Datum::Interval(x), Datum::Interval(y)) => {
            crate::datefn::interval_cmp_key(*x).cmp(&crate::datefn::interval_cmp_key(*y))
        }
        (Datum::Uuid(x), Datum::Uuid(y)) => x.cmp(y),
        (Datum::Bytea(x), Datum::Bytea(y)) => x.cmp(y),
        (Datum::Null, Datum::Null) => Ordering::Equal,
        // NULLs sort last, as in PostgreSQL's default ascending order.
        (Datum::Null, _) => Ordering::Greater,
        (_, Datum::Null) => Ordering::Less,
        _ => crate::numeric::compare(a, b).unwrap_or(Ordering::Equal),
    }
}

pub(crate) fn type_of(d: &Datum) -> SqlType {
    match d {
        Datum::Null => SqlType::Unknown,
        Datum::Int2(_) => SqlType::Int2,
        Datum::Int4(_) => SqlType::Int4,
        Datum::Int8(_) => SqlType::Int8,
        Datum::Text(_) => SqlType::Text,
        Datum::Bool(_) => SqlType::Bool,
        Datum::Lsn(_) => SqlType::Lsn,
        Datum::Numeric(_) => SqlType::Numeric,
        Datum::Timestamp(_) => SqlType::Timestamp,
        Datum::TimestampTz(_) => SqlType::TimestampTz,
        Datum::Date(_) => SqlType::Date,
        Datum::Uuid(_) => SqlType::Uuid,
        Datum::Bytea(_) => SqlType::Bytea,
        Datum::Float4(_) => SqlType::Float4,
        Datum::Float8(_) => SqlType::Float8,
        Datum::Time(_) => SqlType::Time,
        Datum::Interval(_) => SqlType::Interval,
    }
}

pub fn cast_datum(d: Datum, to: SqlType) -> SqlResult<Datum> {
    if d.is_null() || type_of(&d) == to || to == SqlType::Unknown {
        return Ok(d);
    }
    match (&d, to) {
        (_, SqlType::Text | SqlType::Bpchar) => Ok(Datum::Text(crate::text_of(d)?)),
        (Datum::Text(s), t) => text_to(s, t),
        (Datum::Bool(b), SqlType::Int4) => Ok(Datum::Int4(i32::from(*b))),
        (
            Datum::Timestamp(_) | Datum::TimestampTz(_) | Datum::Date(_),
            SqlType::Date | SqlType::Timestamp | SqlType::TimestampTz | SqlType::Time,
        ) => datetime_cast(&d, to),
        (Datum::Int4(v), SqlType::Bool) => Ok(Datum::Bool(*v != 0)),
        (Datum::Time(t), SqlType::Interval) => {
            Ok(Datum::Interval(crate::datefn::time_to_interval(*t)))
        }
        (Datum::Interval(i), SqlType::Time) => Ok(Datum::Time(crate::datefn::interval_to_time(*i))),
        _ if to.is_number() && type_of(&d).is_number() => {
            crate::numeric::cast(&d, to).expect("numbers cast")
        }
        _ => match int_of(&d) {
            Some(v) => int_as(v, to),
            None => Err(SqlError::new(
                "42846",
                format!("cannot cast type {} to {}", type_of(&d).name(), to.name()),
            )),
        },
    }
}

/// Date, timestamp and timestamptz of different types, compared as PostgreSQL's
/// cross-type operators do: both as the wider type (timestamptz over timestamp
/// over date), a timestamp made a timestamptz in the session's zone.
fn compare_datetimes(a: &Datum, b: &Datum) -> Ordering {
    let wide = |d: &Datum| match d {
        Datum::TimestampTz(_) => 2,
        Datum::Timestamp(_) => 1,
        _ => 0,
    };
    let to = match wide(a).max(wide(b)) {
        2 => SqlType::TimestampTz,
        _ => SqlType::Timestamp,
    };
    let at = |d: &Datum| match d {
        // A value of the wider type as it is (a cast to its own type would not be).
        Datum::Timestamp(v) if to == SqlType::Timestamp => *v,
        Datum::TimestampTz(v) if to == SqlType::TimestampTz => *v,
        Datum::Date(x) if to == SqlType::Timestamp => {
            crate::datefn::date_to_timestamp(*x).unwrap_or(if *x < 0 { i64::MIN } else { i64::MAX })
        }
        d => match datetime_cast(d, to) {
            Ok(Datum::Timestamp(v) | Datum::TimestampTz(v)) => v,
            _ => match d {
                Datum::Date(v) if *v < 0 => i64::MIN,
                _ => i64::MAX,
            },
        },
    };
    at(a).cmp(&at(b))
}

/// Casts between date, timestamp and timestamptz (and to time): a timestamptz
/// is read and made in the session's zone ([`crate::datefn`]); the infinities
/// stay infinite (a time of one is NULL).
fn datetime_cast(d: &Datum, to: SqlType) -> SqlResult<Datum> {
    use crate::datefn as f;
    use Datum as D;
    use SqlType as T;
    crate::datetime::with_session(|st| {
        Ok(match (d, to) {
            (D::Date(_), T::Time) => {
                return Err(SqlError::new(
                    "42846",
                    "cannot cast type date to time without time zone",
                ))
            }
            (D::Date(x), T::Timestamp) => D::Timestamp(f::date_to_timestamp(*x)?),
            (D::Date(x), _) => D::TimestampTz(f::date_to_timestamptz(*x, st)?),
            (D::Timestamp(x), T::Date) => D::Date(f::timestamp_to_date(*x)?),
            (D::Timestamp(x), T::Time) => f::timestamp_to_time(*x)?.map_or(D::Null, D::Time),
            (D::Timestamp(x), _) => D::TimestampTz(f::timestamp_to_timestamptz(*x, st)?),
            (D::TimestampTz(x), T::Date) => D::Date(f::timestamptz_to_date(*x, st)?),
            (D::TimestampTz(x), T::Time) => {
                f::timestamptz_to_time(*x, st)?.map_or(D::Null, D::Time)
            }
            (D::TimestampTz(x), _) => D::Timestamp(f::timestamptz_to_timestamp(*x, st)?),
            _ => unreachable!("datetime_cast of {d:?}"),
        })
    })
}

/// Evaluates a bound expression against a row.
pub fn eval(e: &Expr, r: &Row<'_>) -> SqlResult<Datum> {
    eval_at(e, r, 0)
}

/// Evaluates `e` at nesting `depth` (rule 4). The commonest nodes here; the rest
/// out of line ([`eval_other`]), so this function's frame stays small per row.
fn eval_at(e: &Expr, r: &Row<'_>, depth: usize) -> SqlResult<Datum> {
    if depth >= MAX_EVAL_DEPTH {
        return Err(too_deep());
    }
    Ok(match e {
        Expr::Const(d) => d.clone(),
        Expr::Col(i) => r.cols[*i].clone(),
        Expr::Bin(a, op, b) => eval_bin(a, *op, b, r, depth + 1)?,
        Expr::Bool(op, list) => eval_bool(*op, list, r, depth + 1)?,
        Expr::Cast(x, t) => cast_datum(eval_at(x, r, depth + 1)?, *t)?,
        Expr::Not(x) => match eval_at(x, r, depth + 1)? {
            Datum::Bool(b) => Datum::Bool(!b),
            _ => Datum::Null,
        },
        Expr::IsNull(x, negated) => Datum::Bool(eval_at(x, r, depth + 1)?.is_null() != *negated),
        _ => eval_other(e, r, depth)?,
    })
}

/// AND stops at the first false, OR at the first true; else NULL if any operand
/// was NULL (three-valued logic, rule 3).
fn eval_bool(op: BinOp, list: &[Expr], r: &Row<'_>, depth: usize) -> SqlResult<Datum> {
    let stop = op == BinOp::Or;
    let mut saw_null = false;
    for x in list {
        match eval_at(x, r, depth)? {
            Datum::Bool(b) if b == stop => return Ok(Datum::Bool(stop)),
            Datum::Bool(_) => {}
            _ => saw_null = true,
        }
    }
    Ok(if saw_null {
        Datum::Null
    } else {
        Datum::Bool(!stop)
    })
}

/// [`eval_at`] of the less common nodes.
#[inline(never)]
fn eval_other(e: &Expr, r: &Row<'_>, depth: usize) -> SqlResult<Datum> {
    let sub = |x: &Expr| eval_at(x, r, depth + 1);
    Ok(match e {
        Expr::Const(_)
        | Expr::Col(_)
        | Expr::Bin(..)
        | Expr::Bool(..)
        | Expr::Cast(..)
        | Expr::Not(_)
        | Expr::IsNull(..) => eval_at(e, r, depth)?,
        Expr::Param(i) => r.params.get(*i).cloned().unwrap_or(Datum::Null),
        Expr::Agg(i) => r.aggs[*i].clone(),
        Expr::Outer(level, col) => match r.sub {
            Some(s) => s.outer(*level, *col)?,
            None => return Err(SqlError::unsupported("an outer reference here")),
        },
        Expr::Window(_) => return Err(SqlError::new("42P20", "window function outside a window")),
        Expr::SubLink(l) => match r.sub {
            Some(s) => s.sublink(l, r.cols)?,
            None => return Err(SqlError::unsupported("a subquery here")),
        },
        Expr::Neg(x) => match sub(x)? {
            Datum::Null => Datum::Null,
            Datum::Interval(i) => Datum::Interval(crate::datefn::interval_um(i)?),
            d => match crate::numeric::negate(&d) {
                Some(n) => n,
                None => int_as(-int_of(&d).unwrap_or(0), type_of(&d))?,
            },
        },
        Expr::Fit(x, m) => fit_datum(sub(x)?, *m)?,
        Expr::InList(x, list, negated) => {
            if let Some(d) = text_in(x, list, *negated, r) {
                return Ok(d);
            }
            // Operands borrowed where they are columns or constants: no copy of a
            // text per item per row.
            let v = operand(x, r, depth + 1)?;
            if v.is_null() {
                return Ok(Datum::Null);
            }
            let mut saw_null = false;
            for i in list {
                let w = operand(i, r, depth + 1)?;
                if w.is_null() {
                    saw_null = true;
                } else if compare(&v, &w) == Ordering::Equal {
                    return Ok(Datum::Bool(!negated));
                }
            }
            if saw_null {
                Datum::Null
            } else {
                Datum::Bool(*negated)
            }
        }
        Expr::Special(s) => match &**s {
            // Operands borrowed: no copy of the text or the pattern per row.
            crate::conditional::Special::Like {
                expr,
                pattern,
                escape: None,
                fold,
                negated,
            } => {
                let x = operand(expr, r, depth + 1)?;
                let p = operand(pattern, r, depth + 1)?;
                match (&*x, &*p) {
                    (Datum::Text(x), Datum::Text(p)) => {
                        Datum::Bool(crate::conditional::like(x, p, None, *fold)? != *negated)
                    }
                    _ => Datum::Null,
                }
            }
            s => crate::conditional::eval_special(s, &sub)?,
        },
        Expr::Call(f, args) => {
            let vals: Vec<Datum> = args.iter().map(sub).collect::<SqlResult<_>>()?;
            if f.strict() && vals.iter().any(Datum::is_null) {
                return Ok(Datum::Null);
            }
            call(*f, &vals, r)?
        }
    })
}

/// A binary operator: AND and OR short-circuit in three-valued logic; the others
/// are NULL on a NULL operand.
/// An operand by reference when it is a column or a constant (no copy of a text
/// value to compare it), else evaluated.
fn operand<'r>(
    e: &'r Expr,
    r: &'r Row<'_>,
    depth: usize,
) -> SqlResult<std::borrow::Cow<'r, Datum>> {
    use std::borrow::Cow;
    Ok(match e {
        Expr::Const(d) => Cow::Borrowed(d),
        Expr::Col(i) => Cow::Borrowed(&r.cols[*i]),
        e => Cow::Owned(eval_at(e, r, depth)?),
    })
}

/// A comparison's operand as text without a copy: a text constant or column, or a
/// bpchar column read as text (its trailing spaces sliced off, not copied off).
/// None for any other expression or value; `Some(None)` for NULL.
fn text_operand<'r>(e: &'r Expr, r: &'r Row<'_>) -> Option<Option<&'r str>> {
    let (d, trim) = match e {
        Expr::Const(d) => (d, false),
        Expr::Col(i) => (&r.cols[*i], false),
        Expr::Call(Func::BpcharText, a) => match a.as_slice() {
            [Expr::Col(i)] => (&r.cols[*i], true),
            _ => return None,
        },
        _ => return None,
    };
    match d {
        Datum::Text(t) if trim => Some(Some(t.trim_end_matches(' '))),
        Datum::Text(t) => Some(Some(t)),
        Datum::Null => Some(None),
        _ => None,
    }
}

/// `a op b` for a comparison with a bpchar column read as text on either side,
/// compared in place (the commonest filter on `char(n)` columns allocated twice
/// a row: the value's copy and its trimmed copy). None where it does not apply.
fn text_cmp(a: &Expr, op: BinOp, b: &Expr, r: &Row<'_>) -> Option<Datum> {
    let trim = |e: &Expr| matches!(e, Expr::Call(Func::BpcharText, _));
    if !is_cmp(op) || !(trim(a) || trim(b)) {
        return None;
    }
    let (Some(x), Some(y)) = (text_operand(a, r)?, text_operand(b, r)?) else {
        return Some(Datum::Null);
    };
    let o = x.as_bytes().cmp(y.as_bytes());
    Some(Datum::Bool(match op {
        BinOp::Eq => o == Ordering::Equal,
        BinOp::Ne => o != Ordering::Equal,
        BinOp::Lt => o == Ordering::Less,
        BinOp::Le => o != Ordering::Greater,
        BinOp::Gt => o == Ordering::Greater,
        _ => o != Ordering::Less,
    }))
}

/// `x [NOT] IN (list)` with `x` a bpchar column read as text and text constants
/// or columns listed, compared in place ([`text_cmp`]). None where it does not
/// apply.
fn text_in(x: &Expr, list: &[Expr], negated: bool, r: &Row<'_>) -> Option<Datum> {
    if !matches!(x, Expr::Call(Func::BpcharText, _)) {
        return None;
    }
    let Some(v) = text_operand(x, r)? else {
        return Some(Datum::Null);
    };
    let mut saw_null = false;
    for i in list {
        match text_operand(i, r)? {
            None => saw_null = true,
            Some(w) if w == v => return Some(Datum::Bool(!negated)),
            Some(_) => {}
        }
    }
    Some(if saw_null {
        Datum::Null
    } else {
        Datum::Bool(negated)
    })
}

fn eval_bin(a: &Expr, op: BinOp, b: &Expr, r: &Row<'_>, depth: usize) -> SqlResult<Datum> {
    if let Some(d) = text_cmp(a, op, b, r) {
        return Ok(d);
    }
    let x = operand(a, r, depth)?;
    match op {
        BinOp::And => {
            if *x == Datum::Bool(false) {
                return Ok(x.into_owned());
            }
            let y = eval_at(b, r, depth)?;
            return Ok(match (x.into_owned(), y) {
                (_, Datum::Bool(false)) => Datum::Bool(false),
                (Datum::Bool(true), Datum::Bool(true)) => Datum::Bool(true),
                _ => Datum::Null,
            });
        }
        BinOp::Or => {
            if *x == Datum::Bool(true) {
                return Ok(x.into_owned());
            }
            let y = eval_at(b, r, depth)?;
            return Ok(match (x.into_owned(), y) {
                (_, Datum::Bool(true)) => Datum::Bool(true),
                (Datum::Bool(false), Datum::Bool(false)) => Datum::Bool(false),
                _ => Datum::Null,
            });
        }
        _ => {}
    }
    let y = operand(b, r, depth)?;
    if x.is_null() || y.is_null() {
        return Ok(Datum::Null);
    }
    if op == BinOp::Concat {
        // Moved, never copied: either side may be a value near the allocation bound.
        return concat(x.into_owned(), y.into_owned());
    }
    let y = &*y;
    Ok(match op {
        BinOp::Eq => Datum::Bool(compare(&x, y) == Ordering::Equal),
        BinOp::Ne => Datum::Bool(compare(&x, y) != Ordering::Equal),
        BinOp::Lt => Datum::Bool(compare(&x, y) == Ordering::Less),
        BinOp::Le => Datum::Bool(compare(&x, y) != Ordering::Greater),
        BinOp::Gt => Datum::Bool(compare(&x, y) == Ordering::Greater),
        BinOp::Ge => Datum::Bool(compare(&x, y) != Ordering::Less),
        _ => arith(op, &x, y)?,
    })
}

/// `x || y`: bytea of two byteas, else text. The result's size is checked before
/// it is allocated ([`crate::alloc_request`], with PostgreSQL's 4-byte header in
/// the figure, as its message counts it), and allocated fallibly: the session
/// gets an error, the server goes on.
fn concat(x: Datum, y: Datum) -> SqlResult<Datum> {
    if let (Datum::Bytea(a), Datum::Bytea(b)) = (&x, &y) {
        crate::alloc_request(a.len() + b.len() + 4)?;
        let mut out = x.into_bytea();
        crate::try_reserve(&mut out, b.len())?;
        out.extend_from_slice(b);
        return Ok(Datum::Bytea(out));
    }
    let a = crate::text_of(x)?;
    let b = crate::text_of(y)?;
    crate::alloc_request(a.len() + b.len() + 4)?;
    let mut out = a.into_bytes();
    crate::try_reserve(&mut out, b.len())?;
    out.extend_from_slice(b.as_bytes());
    Ok(Datum::Text(String::from_utf8(out).expect("two strs")))
}

/// Integer arithmetic (and pg_lsn minus pg_lsn), overflow-checked.
fn arith(op: BinOp, x: &Datum, y: &Datum) -> SqlResult<Datum> {
    if let (Datum::Numeric(p), Datum::Numeric(q)) = (x, y) {
        // The commonest case, without the general path's conversions; division
        // (its result scale) goes the general way.
        let r = match op {
            BinOp::Add => Some(p.add(q)),
            BinOp::Sub => Some(p.sub(q)),
            BinOp::Mul => Some(p.mul(q)),
            _ => None,
        };
        if let Some(r) = r {
            return r.map(Datum::Numeric).map_err(crate::numeric::num_err);
        }
    }
    let same_int = match (x, y) {
        (Datum::Int4(p), Datum::Int4(q)) => Some((i64::from(*p), i64::from(*q), SqlType::Int4)),
        (Datum::Int8(p), Datum::Int8(q)) => Some((*p, *q, SqlType::Int8)),
        _ => None,
    };
    if let (Some((p, q, t)), BinOp::Add | BinOp::Sub | BinOp::Mul) = (same_int, op) {
        let v = match op {
            BinOp::Add => i128::from(p) + i128::from(q),
            BinOp::Sub => i128::from(p) - i128::from(q),
            _ => i128::from(p) * i128::from(q),
        };
        return int_as(v, t);
    }
    if let (Datum::Lsn(p), Datum::Lsn(q)) = (x, y) {
        return Ok(Datum::Numeric(lsn_diff(*p, *q)?));
    }
    if let Some(r) = crate::interval::arith(op, x, y) {
        return r;
    }
    let t = crate::numeric::wider(type_of(x), type_of(y));
    if let Some(r) = crate::numeric::arith(op, x, y, t) {
        return r;
    }
    let (p, q) = (int_of(x).unwrap_or(0), int_of(y).unwrap_or(0));
    let v = match op {
        BinOp::Add => p.checked_add(q),
        BinOp::Sub => p.checked_sub(q),
        BinOp::Mul => p.checked_mul(q),
        BinOp::Div | BinOp::Mod => {
            if q == 0 {
                return Err(SqlError::new("22012", "division by zero"));
            }
            if op == BinOp::Div {
                p.checked_div(q)
            } else {
                p.checked_rem(q)
            }
        }
        _ => unreachable!("comparison and logic handled by eval_bin"),
    };
    int_as(v.ok_or_else(|| out_of_range("numeric"))?, t)
}

/// `a - b` in bytes, negative if `b` is later (pg_lsn minus pg_lsn is numeric).
fn lsn_diff(a: Lsn, b: Lsn) -> SqlResult<strata_types::Numeric> {
    crate::numeric::from_i128(match a.checked_sub(b) {
        Some(d) => i128::from(d),
        None => -i128::from(b - a),
    })
}

/// A function call on non-NULL arguments (checked in number and type by binding).
fn call(f: Func, vals: &[Datum], r: &Row<'_>) -> SqlResult<Datum> {
    Ok(match f {
        Func::Version => Datum::Text(version_string()),
        Func::CurrentDatabase => Datum::Text(r.env.current_database()),
        Func::CurrentWalLsn if r.env.in_recovery() => {
            return Err(SqlError::new("55000", "recovery is in progress")
                .with_hint("WAL control functions cannot be executed during recovery."))
        }
        Func::CurrentWalLsn => Datum::Lsn(r.env.current_wal_lsn()),
        Func::IsInRecovery => Datum::Bool(r.env.in_recovery()),
        Func::SwitchWal => Datum::Lsn(r.env.switch_wal()?),
        Func::LastXactReplayTimestamp => match r.env.last_xact_replay_unix_us() {
            Some(us) => crate::views::timestamp(us),
            None => Datum::Null,
        },
        Func::Promote => {
            let wait = !matches!(vals.first(), Some(Datum::Bool(false)));
            let secs = match vals.get(1) {
                Some(Datum::Int4(s)) => *s,
                _ => 60,
            };
            Datum::Bool(r.env.promote(wait, secs)?)
        }
        Func::LastWalReceiveLsn => match r.env.recovery_lsns() {
            Some((Some(l), _)) => Datum::Lsn(l),
            _ => Datum::Null,
        },
        Func::LastWalReplayLsn => match r.env.recovery_lsns() {
            Some((_, l)) => Datum::Lsn(l),
            None => Datum::Null,
        },
        Func::BackendPid => Datum::Int4(r.env.backend_pid()),
        Func::ReloadConf => Datum::Bool(r.env.reload_conf()?),
        Func::CancelBackend => match vals[0] {
            Datum::Int4(pid) => Datum::Bool(r.env.cancel_backend(pid)?),
            Datum::Int8(pid) => match i32::try_from(pid) {
                Ok(pid) => Datum::Bool(r.env.cancel_backend(pid)?),
                Err(_) => Datum::Bool(false),
            },
            _ => Datum::Null,
        },
        Func::WalLsnDiff => match (&vals[0], &vals[1]) {
            (Datum::Lsn(a), Datum::Lsn(b)) => Datum::Numeric(lsn_diff(*a, *b)?),
            _ => Datum::Null,
        },
        Func::BtIndexCheck => match &vals[0] {
            Datum::Text(ix) => {
                r.env.check_index(ix)?;
                Datum::Text(String::new())
            }
            _ => Datum::Null,
        },
        Func::RelationFilepath => match &vals[0] {
            Datum::Text(t) => r.env.relation_filepath(t).map(Datum::Text).ok_or_else(|| {
                SqlError::new("42P01", format!("relation \"{t}\" does not exist"))
            })?,
            _ => Datum::Null,
        },
        Func::CurrentUser => Datum::Text(r.env.current_user()),
        Func::SessionUser => Datum::Text(r.env.session_user()),
        Func::BpcharText
        | Func::Length
        | Func::Lower
        | Func::Upper
        | Func::Repeat
        | Func::Substr => string_call(f, vals)?,
        Func::Now => Datum::TimestampTz(r.env.xact_start_us()),
        Func::Clock => Datum::TimestampTz(crate::time::now_us()),
        Func::Random => Datum::Float8(strata_types::Float::new(crate::random::random())),
        Func::Setseed => {
            crate::random::setseed(crate::datefn::float(&vals[0]))?;
            Datum::Null
        }
        Func::Sleep => {
            r.env.sleep(crate::datefn::float(&vals[0]))?;
            Datum::Null
        }
        Func::LocalTimestamp => Datum::Timestamp(r.env.xact_start_us()),
        Func::CurrentDate => {
            let now = r.env.xact_start_us();
            let local = crate::datetime::with_session(|st| crate::datetime::to_local(now, st));
            Datum::Date(crate::time::date_of(local))
        }
        Func::Abs => match crate::numeric::abs(&vals[0]) {
            Some(d) => d,
            None => int_as(int_of(&vals[0]).unwrap_or(0).abs(), type_of(&vals[0]))?,
        },
        Func::Nextval | Func::Currval | Func::Setval | Func::Lastval => {
            sequence_call(f, vals, r.env)?
        }
        Func::Math(m, t) => crate::mathfn::eval(m, t, vals)?,
        Func::Str(s, t) => crate::strfn::eval(s, t, vals)?,
        Func::Date(d, t) => {
            crate::datetime::with_session(|st| crate::datefn::eval(d, t, vals, st))?
        }
    })
}

/// substring(t FROM start [FOR count]) as PostgreSQL's: 1-based, a start before 1
/// counting toward the length, a negative count 22011.
fn substring(vals: &[Datum]) -> SqlResult<Datum> {
    let Datum::Text(t) = &vals[0] else {
        return Ok(Datum::Null);
    };
    let Datum::Int4(start) = vals[1] else {
        return Ok(Datum::Null);
    };
    let start = i64::from(start);
    let end = match vals.get(2) {
        None => i64::MAX,
        Some(Datum::Int4(n)) if *n < 0 => {
            return Err(SqlError::new(
                "22011",
                "negative substring length not allowed",
            ))
        }
        Some(Datum::Int4(n)) => start.saturating_add(i64::from(*n)),
        Some(_) => return Ok(Datum::Null),
    };
    let from = start.max(1) - 1;
    let to = end.saturating_sub(1).max(from);
    let out: String = t
        .chars()
        .skip(from as usize)
        .take(usize::try_from(to - from).unwrap_or(usize::MAX))
        .collect();
    Ok(Datum::Text(out))
}

/// The string functions: their results' sizes checked before they are allocated
/// (sql's MAX_ALLOC_BYTES).
fn string_call(f: Func, vals: &[Datum]) -> SqlResult<Datum> {
    Ok(match f {
        Func::BpcharText => match &vals[0] {
            Datum::Text(t) => Datum::Text(t.trim_end_matches(' ').to_string()),
            d => d.clone(),
        },
        Func::Length => match &vals[0] {
            Datum::Text(t) => Datum::Int4(t.chars().count() as i32),
            _ => Datum::Null,
        },
        Func::Lower | Func::Upper => {
            let t: std::borrow::Cow<'_, str> = match &vals[0] {
                Datum::Text(s) => s.into(),
                d => crate::text_of(d.clone())?.into(),
            };
            let mut out = crate::try_string(t.len())?;
            for c in t.chars() {
                if f == Func::Lower {
                    out.extend(c.to_lowercase());
                } else {
                    out.extend(c.to_uppercase());
                }
            }
            crate::alloc_request(out.len() + 4)?;
            Datum::Text(out)
        }
        Func::Repeat => match (&vals[0], &vals[1]) {
            (Datum::Text(t), Datum::Int4(n)) => {
                let n = (*n).max(0) as usize;
                let bytes = t.len().saturating_mul(n);
                if bytes + 4 > crate::MAX_ALLOC_BYTES {
                    return Err(SqlError::new("54000", "requested length too large"));
                }
                let mut out = crate::try_string(bytes)?;
                if n > 0 {
                    // Doubling: O(log n) copies of a growing prefix, not n small ones.
                    out.push_str(t);
                    while out.len() < bytes {
                        let more = out.len().min(bytes - out.len());
                        out.extend_from_within(..more);
                    }
                }
                Datum::Text(out)
            }
            _ => Datum::Null,
        },
        Func::Substr => substring(vals)?,
        _ => unreachable!("string_call takes string functions"),
    })
}

/// nextval, currval, setval, lastval: NULL for a NULL argument, as PostgreSQL's
/// strict functions.
fn sequence_call(f: Func, vals: &[Datum], env: &dyn Env) -> SqlResult<Datum> {
    if vals.iter().any(Datum::is_null) {
        return Ok(Datum::Null);
    }
    let name = match vals.first() {
        Some(Datum::Text(t)) => sequence_name(t)?,
        _ => String::new(),
    };
    let call = match (f, vals) {
        (Func::Nextval, _) => SeqCall::Nextval(&name),
        (Func::Currval, _) => SeqCall::Currval(&name),
        (Func::Setval, [_, Datum::Int8(v)]) => SeqCall::Setval(&name, *v, true),
        (Func::Setval, [_, Datum::Int8(v), Datum::Bool(c)]) => SeqCall::Setval(&name, *v, *c),
        _ => SeqCall::Lastval,
    };
    Ok(Datum::Int8(env.sequence(call)?))
}

/// `version()`: says what answers, in PostgreSQL's shape so tools that parse it work.
pub fn version_string() -> String {
    format!(
        "PostgreSQL 15.0 (Strata {}) on {}-linux, compiled by rustc, 64-bit",
        env!("CARGO_PKG_VERSION"),
        std::env::consts::ARCH
    )
}

/// WHERE semantics: only true keeps the row.
pub fn is_true(d: &Datum) -> bool {
    matches!(d, Datum::Bool(true))
}

/// `a + b` of two non-NULL numbers or intervals of one type (a running sum).
pub fn add(a: &Datum, b: &Datum) -> SqlResult<Datum> {
    arith(BinOp::Add, a, b)
}

/// `sum / n` for avg: numeric (PostgreSQL's division scale), double or interval.
pub fn divide(sum: &Datum, n: i64) -> SqlResult<Datum> {
    match sum {
        Datum::Float8(_) => arith(
            BinOp::Div,
            sum,
            &Datum::Float8(strata_types::Float::new(n as f64)),
        ),
        Datum::Interval(_) => arith(
            BinOp::Div,
            sum,
            &Datum::Float8(strata_types::Float::new(n as f64)),
        ),
        _ => arith(BinOp::Div, sum, &Datum::Numeric(n.into())),
    }
}

#[cfg(test)]
mod tests {
    //! Binding and evaluation without a server: type resolution of untyped inputs
    //! (rule 2), the errors and SQLSTATEs PostgreSQL gives, three-valued logic and
    //! checked arithmetic (rule 3).

    use super::*;
    use crate::{parse, Stmt};

    struct NoServer;

    impl Env for NoServer {
        fn current_database(&self) -> String {
            "db".into()
        }
        fn current_wal_lsn(&self) -> Lsn {
            Lsn(0x1_0000_00A0)
        }
        fn relation_filepath(&self, _: &str) -> Option<String> {
            None
        }
        fn backend_pid(&self) -> i32 {
            7
        }
        fn cancel_backend(&self, _: i32) -> SqlResult<bool> {
            Ok(false)
        }
        fn in_recovery(&self) -> bool {
            false
        }
        fn recovery_lsns(&self) -> Option<(Option<Lsn>, Lsn)> {
            None
        }
        fn promote(&self, _: bool, _: i32) -> SqlResult<bool> {
            Err(SqlError::new("55000", "recovery is not in progress"))
        }
        fn switch_wal(&self) -> SqlResult<Lsn> {
            Ok(Lsn(0x100_0000))
        }
        fn last_xact_replay_unix_us(&self) -> Option<i64> {
            None
        }
    }

    fn scope_of(t: &str) -> SqlResult<Vec<(String, SqlType)>> {
        let cols = |v: &[(&str, SqlType)]| v.iter().map(|(n, t)| (n.to_string(), *t)).collect();
        match t {
            "t" => Ok(cols(&[
                ("a", SqlType::Int4),
                ("b", SqlType::Text),
                ("c", SqlType::Int8),
                ("d", SqlType::Bool),
            ])),
            "dup" => Ok(cols(&[("x", SqlType::Int4), ("x", SqlType::Int4)])),
            _ => Err(SqlError::new(
                "42P01",
                format!("relation \"{t}\" does not exist"),
            )),
        }
    }

    /// The plan of a SELECT and its parameters' types.
    fn plan(sql: &str) -> SqlResult<(crate::analyze::Query, Vec<SqlType>)> {
        let Stmt::Select(q) = parse(sql)?.remove(0) else {
            panic!("not a SELECT: {sql}")
        };
        let mut b = Binder::default();
        let p = b.query(&q, &scope_of)?;
        Ok((p, b.params))
    }

    fn types(sql: &str) -> (Vec<SqlType>, Vec<SqlType>) {
        let (p, params) = plan(sql).unwrap_or_else(|e| panic!("{sql}: {e}"));
        (p.columns.iter().map(|c| c.1).collect(), params)
    }

    fn code(sql: &str) -> &'static str {
        match plan(sql) {
            Ok(_) => panic!("{sql} bound"),
            Err(e) => e.code,
        }
    }

    /// The first result column of a SELECT without FROM.
    fn value(sql: &str) -> SqlResult<Datum> {
        let (p, _) = plan(sql)?;
        let row = Row {
            cols: &[],
            params: &[],
            aggs: &[],
            env: &NoServer,
            sub: None,
        };
        let crate::analyze::SetTree::Select(s) = &p.body else {
            panic!("not a SELECT: {sql}")
        };
        eval(&s.targets[0], &row)
    }

    #[test]
    fn untyped_inputs_take_their_type_from_context() {
        use SqlType::*;
        assert_eq!(
            types("SELECT a + $1, $2 = c, $3, $4 IN (1, 2) FROM t"),
            (vec![Int4, Bool, Text, Bool], vec![Int4, Int8, Text, Int4])
        );
        assert_eq!(types("SELECT b FROM t WHERE b = $1").1, [Text]);
        assert_eq!(types("SELECT 'x', NULL").0, [Text, Text]);
        assert_eq!(
            types("SELECT 1, 2147483648, 9223372036854775808").0,
            [Int4, Int8, Numeric]
        );
        assert_eq!(
            types("SELECT a + c, -a, a || b, -c, -(a + c) FROM t").0,
            [Int8, Int4, Text, Int8, Int8]
        );
        assert_eq!(
            types("SELECT sum(a), sum(c), count(*), count(b), min(b), max(d) FROM t").0,
            [Int8, Numeric, Int8, Int8, Text, Bool]
        );
        assert_eq!(
            types("SELECT pg_current_wal_lsn(), pg_wal_lsn_diff('0/10', '0/5'), '0/1'::pg_lsn").0,
            [Lsn, Numeric, Lsn]
        );
        assert_eq!(value("SELECT '12' + 1"), Ok(Datum::Int4(13)));
        assert_eq!(value("SELECT -2147483648"), Ok(Datum::Int4(i32::MIN)));
    }

    #[test]
    fn errors_carry_postgres_sqlstates() {
        for (sql, want) in [
            ("SELECT nosuch FROM t", "42703"),
            ("SELECT x FROM dup", "42702"),
            ("SELECT u.a FROM t", "42P01"),
            ("SELECT * FROM nosuch", "42P01"),
            ("SELECT b + 1 FROM t", "42883"),
            ("SELECT -b FROM t", "42883"),
            ("SELECT a FROM t WHERE a", "42804"),
            ("SELECT NOT a FROM t", "42804"),
            ("SELECT a FROM t WHERE count(*) > 1", "42803"),
            ("SELECT a, count(*) FROM t", "42803"),
            ("SELECT a FROM t ORDER BY 2", "42P10"),
            ("SELECT a FROM t LIMIT true", "42804"),
            ("SELECT 'x'::int", "22P02"),
            ("SELECT a FROM t WHERE a = 'x'", "22P02"),
            ("SELECT '99999999999'::int", "22003"),
            ("SELECT 'zz'::pg_lsn", "22P02"),
            ("SELECT true::bigint", "42846"),
            ("SELECT $0", "42P02"),
            ("SELECT $65536", "42P02"),
            ("SELECT nosuch()", "42883"),
            ("SELECT length('a', 'b')", "42883"),
            ("SELECT length(true)", "42883"),
            ("SELECT sum(b) FROM t", "42883"),
            ("SELECT length(*)", "42601"),
            ("SELECT 1 FROM t JOIN t ON true", "42712"),
            ("SELECT b FROM t GROUP BY a", "42803"),
            ("SELECT DISTINCT a FROM t ORDER BY b", "42P10"),
            ("SELECT a FROM t UNION SELECT a, b FROM t", "42601"),
            ("SELECT a FROM t UNION SELECT b FROM t", "42804"),
        ] {
            assert_eq!(code(sql), want, "{sql}");
        }
        let e = plan("SELECT b + 1 FROM t").unwrap_err();
        assert_eq!(e.message, "operator does not exist: text + integer");
        let e = plan("SELECT NOT a FROM t").unwrap_err();
        assert_eq!(
            e.message,
            "argument of NOT must be type boolean, not type integer"
        );
        let e = plan("SELECT nosuch FROM t").unwrap_err();
        assert_eq!(e.message, "column \"nosuch\" does not exist");
        let deep = format!("SELECT {}", vec!["1"; MAX_EXPR_DEPTH + 10].join("+"));
        assert_eq!(code(&deep), "54001");
    }

    #[test]
    fn evaluation_is_three_valued_and_overflow_checked() {
        let b = |v| Ok(Datum::Bool(v));
        assert_eq!(value("SELECT NULL AND false"), b(false));
        assert_eq!(value("SELECT NULL OR true"), b(true));
        assert_eq!(value("SELECT NULL AND true"), Ok(Datum::Null));
        assert_eq!(value("SELECT NULL = 1"), Ok(Datum::Null));
        assert_eq!(value("SELECT 1 IN (2, NULL)"), Ok(Datum::Null));
        assert_eq!(value("SELECT 1 NOT IN (2, 3)"), b(true));
        assert_eq!(value("SELECT 2 BETWEEN 1 AND 3"), b(true));
        assert_eq!(value("SELECT NULL IS NULL"), b(true));
        assert_eq!(value("SELECT 'a' || NULL"), Ok(Datum::Null));
        assert_eq!(value("SELECT abs(-5)"), Ok(Datum::Int4(5)));
        assert_eq!(value("SELECT 7 % 3"), Ok(Datum::Int4(1)));
        assert_eq!(value("SELECT 2147483647 + 1").unwrap_err().code, "22003");
        assert_eq!(
            value("SELECT -(-9223372036854775807 - 1)")
                .unwrap_err()
                .code,
            "22003"
        );
        assert_eq!(value("SELECT 1 / 0").unwrap_err().code, "22012");
        assert_eq!(value("SELECT 5 % 0").unwrap_err().code, "22012");
        assert_eq!(
            value("SELECT 2147483647 + 1::bigint"),
            Ok(Datum::Int8(1 << 31))
        );
    }

    #[test]
    fn pg_lsn_reads_prints_compares_and_subtracts_as_postgres() {
        assert_eq!(
            value("SELECT '1/A0'::pg_lsn"),
            Ok(Datum::Lsn(Lsn(0x1_0000_00A0)))
        );
        assert_eq!(
            value("SELECT ('1/a0'::pg_lsn)::text"),
            Ok(Datum::Text("1/A0".into()))
        );
        assert_eq!(
            value("SELECT pg_current_wal_lsn() = '1/A0'"),
            Ok(Datum::Bool(true))
        );
        assert_eq!(
            value("SELECT '0/FFFFFFFF'::pg_lsn < '1/0'::pg_lsn"),
            Ok(Datum::Bool(true))
        );
        assert_eq!(
            value("SELECT pg_wal_lsn_diff('0/10', '0/5')"),
            Ok(Datum::Numeric(11.into()))
        );
        assert_eq!(
            value("SELECT pg_wal_lsn_diff('0/5', '1/0')"),
            Ok(Datum::Numeric((5 - (1i64 << 32)).into()))
        );
        assert_eq!(
            value("SELECT '1/0'::pg_lsn - '0/1'::pg_lsn"),
            Ok(Datum::Numeric(((1i64 << 32) - 1).into()))
        );
        for bad in ["1/", "/1", "123456789/0", "1/0/0", "g/0"] {
            assert_eq!(
                value(&format!("SELECT '{bad}'::pg_lsn")).unwrap_err().code,
                "22P02",
                "{bad}"
            );
        }
    }
}
