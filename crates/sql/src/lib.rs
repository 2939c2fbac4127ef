//! strata-sql: the SQL layer. Statements and values, parsing (with `sqlparser`,
//! PostgreSQL dialect), binding, evaluation, execution and sessions, over the engine.
//! It knows nothing of sockets or the wire protocol: the server crate feeds it text
//! and parameters and sends back what it returns.
//!
//! Owns the statement forms Strata accepts ([`Stmt`], by kind: [`Control`], DML,
//! [`Ddl`], [`Utility`]), the SQL type model ([`SqlType`]; values are strata-types'
//! [`Datum`], the one value type the engine stores too, given text by [`TextOut`]) and
//! SQL errors with their SQLSTATE ([`SqlError`]).
//! Module map, in dependency order: this file (parsing, values, errors), [`settings`]
//! (the session's SET/SHOW values), [`values`] (the pre-scan of a query string and
//! an INSERT's VALUES rows kept as text), [`numeric`] (numeric, real and double
//! precision: text forms, arithmetic, casts), [`interval`] (the date/time operators'
//! types), [`datetime`] (PostgreSQL's date/time text input and output, every
//! DateStyle and IntervalStyle, DST-aware time zones, interval typmods, and the
//! session's output settings on its backend thread), `datefn` (date/time functions,
//! operators and zone-aware casts), `dtfmt` (to_char / to_timestamp / to_date),
//! `random` (random() and setseed()), [`bind`] (names to the catalog, expressions,
//! evaluation), [`conditional`] (CASE, COALESCE, LIKE, ...), [`aggregate`],
//! [`aggorder`] (ORDER BY inside aggregates, WITHIN GROUP), [`subquery`], `outer`
//! (correlated subqueries in grouped queries, outer-level aggregates), [`cte`]
//! (with `recursion`: WITH RECURSIVE's checks; data-modifying CTEs run by the
//! session's `with_stmt`), then the query pipeline: [`analyze`] (a query tree; `fold`
//! evaluates its constant subexpressions once),
//! [`planner`] (a physical plan; `joinorder` orders inner joins by `estimate`'s
//! sizes, from ANALYZE's statistics where `gather` made them; `ordered` lets B-trees
//! serve ORDER BY, LIMIT and min/max; `parallel` gives large aggregates, sorts and
//! hash tables workers), [`explain`] (a plan as PostgreSQL prints it, with
//! [`cost`]'s estimates), [`executor`] (pull operators; `executor::workers` runs a
//! parallel plan's threads, `executor::sharedhash` the hash tables its workers build
//! together, `executor::keymap` is the hash table of hash joins and hash
//! aggregation), [`copy`] (COPY's text and csv formats), [`sort`] (ORDER BY within
//! `work_mem`, PostgreSQL's quicksort), [`frames`] (window frame clauses sqlparser
//! does not parse), [`moments`] (the statistical aggregates), [`privileges`] (who may do what: ACL checks for every statement kind,
//! PostgreSQL 15's rules), [`roles`] (CREATE/ALTER/DROP ROLE, membership, SET ROLE,
//! SCRAM verifiers), [`temp`] (a session's temporary tables and their ON COMMIT),
//! [`rewrite`] (views: CREATE/DROP VIEW and a view's query read in its place;
//! `updatable` writes through simple views), [`grants`] (GRANT/REVOKE on objects and columns, OWNER TO,
//! REASSIGN/DROP OWNED), [`session`] (a session's transaction-block state machine,
//! binding, the dispatch of each statement kind to its executor, and DML; its
//! `plancache` keeps prepared statements' plans), [`prepare`] (PREPARE, EXECUTE,
//! DEALLOCATE as parsed), `ddl`
//! (tables, databases, tablespaces), [`foreign`] (FOREIGN KEYs: resolved at DDL,
//! checked and acted on at the end of each writing statement), `sequences`
//! (CREATE/DROP SEQUENCE, serial and identity columns) and `utility` (SET, SHOW, CHECKPOINT, VACUUM, ANALYZE), which the session
//! dispatches to.
//!
//! Rules (cited as "sql rule N"):
//! 1. Parsing never touches the engine: a [`Stmt`] is the text's meaning only, so a
//!    multi-statement query is parsed once and each statement bound just before it
//!    runs (a `CREATE TABLE t; INSERT INTO t ...` string works).
//! 2. Every failure is a [`SqlError`] with PostgreSQL's SQLSTATE: 42601 for what does
//!    not parse, 0A000 naming what parses but Strata does not support.
//! 3. Utility statements sqlparser does not know in PostgreSQL's form (CREATE/DROP
//!    DATABASE and TABLESPACE, VACUUM, CHECKPOINT, SET, SHOW, the role and privilege
//!    statements, CREATE SEQUENCE with its options in any order) are parsed here from sqlparser's
//!    tokens; the rest by sqlparser itself.
//! 4. No async runtime and no protocol types here (`cargo tree -p strata-sql` lists
//!    neither tokio nor pgwire): a session is driven by plain calls, and waits (locks,
//!    timeouts, cancels) are its own.
//! 5. A query text costs about its size: it is pre-scanned ([`values`]) and each
//!    statement tokenized alone; an INSERT ... VALUES keeps its rows as text (the
//!    query string shared, not copied) and they are parsed, bound and inserted one
//!    at a time. What the pre-scan cannot split is tokenized whole, as before.
//! 6. A clause is honoured or refused, never dropped: what sqlparser parses but Strata
//!    does not carry out (PARTITION BY, INHERITS, UNLOGGED, storage parameters,
//!    DEFERRABLE, index options, database options at other values than Strata's,
//!    ...) is 0A000 naming it. Structs from sqlparser are taken apart without `..`
//!    where that is practical, so a field a new sqlparser adds fails to compile here
//!    rather than being ignored; CREATE TABLE's is compared whole (see
//!    `create_table_clauses`).
//! 7. Errors of parsing and analysis carry PostgreSQL's position: a client's text
//!    keeps its tokens' locations ([`parse_shared`]; stored text does not), a
//!    syntax error is placed at its token, an analysis error at the innermost
//!    expression that gave it (a missing operator at the operator, a literal that
//!    does not fit at the literal), a relation that does not exist at its name; the
//!    session turns the location into a character offset in the query string
//!    ([`SqlError::placed`], simple protocol). Errors of execution have none.
//! 8. `WITH ... INSERT / UPDATE / DELETE`: the CTEs are given to what the statement
//!    reads — an INSERT's query, an UPDATE's FROM, a DELETE's USING — never to its
//!    target (a CTE named like the table does not replace it); a data-modifying
//!    CTE, and one only a subquery of the statement could read, are 0A000.

pub mod aggorder;
pub mod aggregate;
pub mod analyze;
pub mod bind;
#[cfg(test)]
mod clause_tests;
pub mod conditional;
pub mod copy;
pub mod cost;
pub mod cte;
mod datefn;
pub mod datetime;
mod ddl;
#[cfg(test)]
mod defect_tests;
mod dtfmt;
mod estimate;
pub mod executor;
pub mod explain;
mod fold;
pub mod foreign;
#[cfg(test)]
mod foreign_tests;
pub mod frames;
#[cfg(test)]
mod fuzz_tests;
mod gather;
pub mod grants;
pub mod interval;
#[cfg(test)]
mod isolation_tests;
mod joinorder;
mod locate;
pub mod mathfn;
pub mod moments;
pub mod numeric;
pub mod numfmt;
mod ordered;
mod outer;
mod parallel;
pub mod plan;
#[cfg(test)]
mod plancache_tests;
pub mod planner;
pub mod prepare;
pub mod privileges;
#[cfg(test)]
mod query_tests;
mod random;
mod recursion;
pub mod rewrite;
pub mod roles;
mod semijoin;
mod sequences;
pub mod session;
#[cfg(test)]
mod session_tests;
pub mod settings;
pub mod sort;
pub mod spill;
pub mod strfn;
pub mod subquery;
pub mod syncrep;
pub mod temp;
pub mod time;
mod updatable;
mod utility;
pub mod values;
#[cfg(test)]
mod view_tests;
pub mod views;
pub mod window;

use sqlparser::ast;
use sqlparser::dialect::PostgreSqlDialect;
use sqlparser::keywords::Keyword;
use sqlparser::parser::Parser;
use sqlparser::tokenizer::{Span, Token, TokenWithSpan, Tokenizer, TokenizerError};
use std::fmt;
use std::sync::Arc;
use strata_engine::{ColType, Column};
use strata_engine::{CreateDbStrategy, EngineError};

const TYPES_HINT: &str = "Column types are smallint, integer, bigint, real, double precision, numeric(p,s), text, varchar(n), char(n), boolean, date, timestamp, timestamptz, time, interval, uuid and bytea.";

/// PostgreSQL 15's built-in types Strata does not have: 0A000, where a name neither
/// knows is 42704.
const POSTGRES_TYPES_STRATA_LACKS: &[&str] = &[
    "json",
    "jsonb",
    "xml",
    "money",
    "inet",
    "cidr",
    "macaddr",
    "macaddr8",
    "point",
    "line",
    "lseg",
    "box",
    "path",
    "polygon",
    "circle",
    "bit",
    "bit varying",
    "varbit",
    "tsvector",
    "tsquery",
    "oid",
    "xid",
    "xid8",
    "cid",
    "tid",
    "int4range",
    "int8range",
    "numrange",
    "tsrange",
    "tstzrange",
    "daterange",
    "int4multirange",
    "txid_snapshot",
    "pg_snapshot",
    "timetz",
    "time with time zone",
    "regproc",
    "regtype",
    "regrole",
    "regnamespace",
    "regoper",
    "regconfig",
    "jsonpath",
    "record",
    "void",
];

/// The types whose modifier is a fractional-second precision.
const TIME_TYPES: &[&str] = &[
    "timestamp",
    "timestamp without time zone",
    "timestamptz",
    "timestamp with time zone",
    "time",
    "time without time zone",
    "interval",
];

/// What a type's modifier makes of it: `timestamp(p)`, `time(p)`, `interval(p)`
/// take p in 0 ..= 6 (the column or cast rounds to it, [`time_precision`]), more
/// is refused; `float(p)` is real for p up to 24 and double precision up to 53, as
/// in PostgreSQL. None: the base type decides.
fn type_modifier_held(base: &str, modifier: Option<&str>) -> SqlResult<Option<SqlType>> {
    let Some(m) = modifier else {
        return Ok(None);
    };
    match base {
        _ if TIME_TYPES.contains(&base) => match m.parse::<u32>() {
            Ok(p) if p <= 6 => Ok(None),
            _ => Err(SqlError::unsupported(format!(
                "{base}({m}): a precision past 6 (Strata keeps microseconds)"
            ))),
        },
        "float" | "double" => match m.parse::<i64>() {
            Ok(p) if p < 1 => Err(SqlError::new(
                "22023",
                "precision for type float must be at least 1 bit",
            )),
            Ok(p) if p <= 24 => Ok(Some(SqlType::Float4)),
            Ok(p) if p <= 53 => Ok(Some(SqlType::Float8)),
            _ => Err(SqlError::new(
                "22023",
                "precision for type float must be less than 54 bits",
            )),
        },
        _ => Ok(None),
    }
}

/// An error as the client sees it: severity, SQLSTATE, message, optional hint —
/// boxed, so a `SqlResult<Datum>` is a word wider than a `Datum` and evaluation
/// moves little per row ([`ErrorData`] through `Deref`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SqlError(Box<ErrorData>);

/// What an error says ([`SqlError`]).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ErrorData {
    pub fatal: bool,
    pub code: &'static str,
    pub message: String,
    pub hint: Option<String>,
    pub detail: Option<String>,
    /// Where in the statement's text the error is (line, column from 1), for
    /// errors of parsing and analysis (sql rule 7).
    pub location: Option<(u64, u64)>,
    /// The place is the first non-blank character at or after the location (an
    /// operator after its left operand).
    pub after: bool,
    /// The same as PostgreSQL's error position: a character offset from 1 into the
    /// query string, once the session has placed the location in it.
    pub position: Option<u32>,
}

impl std::ops::Deref for SqlError {
    type Target = ErrorData;
    fn deref(&self) -> &ErrorData {
        &self.0
    }
}

impl std::ops::DerefMut for SqlError {
    fn deref_mut(&mut self) -> &mut ErrorData {
        &mut self.0
    }
}

impl From<ErrorData> for SqlError {
    fn from(d: ErrorData) -> SqlError {
        SqlError(Box::new(d))
    }
}

impl SqlError {
    pub fn new(code: &'static str, message: impl Into<String>) -> SqlError {
        SqlError::from(ErrorData {
            fatal: false,
            code,
            message: message.into(),
            hint: None,
            detail: None,
            location: None,
            after: false,
            position: None,
        })
    }
    /// This error at `span`'s start, unless it has a location already (sql rule
    /// 7). An unknown span (line 0) is kept too, so that no caller further out
    /// looks for one again.
    pub fn at(mut self, span: sqlparser::tokenizer::Span) -> SqlError {
        if self.location.is_none() {
            self.location = Some((span.start.line, span.start.column));
        }
        self
    }
    /// The location placed in `text`, the query string it came from: PostgreSQL's
    /// position (characters from 1).
    pub fn placed(mut self, text: &str) -> SqlError {
        let Some((line, col)) = self.location.filter(|(l, _)| *l > 0) else {
            return self;
        };
        let (mut l, mut c) = (1u64, 1u64);
        let mut reached = false;
        for (n, ch) in text.chars().enumerate() {
            reached |= (l, c) == (line, col);
            if reached && !(self.after && ch.is_whitespace()) {
                self.position = u32::try_from(n + 1).ok();
                break;
            }
            if ch == '\n' {
                (l, c) = (l + 1, 1);
            } else {
                c += 1;
            }
        }
        self
    }
    /// The error's parts, owned.
    pub fn into_data(self) -> ErrorData {
        *self.0
    }
    /// This error, FATAL (the session ends after it).
    pub fn fatal(mut self) -> SqlError {
        self.0.fatal = true;
        self
    }
    pub fn syntax(message: impl Into<String>) -> SqlError {
        SqlError::new("42601", message)
    }
    pub fn unsupported(what: impl fmt::Display) -> SqlError {
        SqlError::new("0A000", format!("{what} is not supported by Strata"))
    }
    pub fn with_detail(mut self, detail: impl Into<String>) -> SqlError {
        self.detail = Some(detail.into());
        self
    }
    pub fn with_hint(mut self, hint: impl Into<String>) -> SqlError {
        self.hint = Some(hint.into());
        self
    }
}

impl fmt::Display for SqlError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} ({})", self.message, self.code)
    }
}

impl From<EngineError> for SqlError {
    fn from(e: EngineError) -> SqlError {
        let text = e.to_string();
        let err = SqlError::new(e.sqlstate(), strata_engine::temp::shown(&text));
        match e {
            // PostgreSQL's DETAIL: Key (a, b)=(1, x) already exists.
            EngineError::UniqueViolation { key, .. } => {
                let (names, values): (Vec<String>, Vec<String>) = key
                    .into_iter()
                    .map(|(n, v)| {
                        let text = v.to_text();
                        (n, text.unwrap_or_else(|| "null".into()))
                    })
                    .unzip();
                err.with_detail(format!(
                    "Key ({})=({}) already exists.",
                    names.join(", "),
                    values.join(", ")
                ))
            }
            EngineError::IndexRowTooBig { table, tid, .. } => err
                .with_detail(format!(
                    "Index row references tuple ({},{}) in relation \"{table}\".",
                    tid.0, tid.1
                ))
                .with_hint("Values larger than 1/3 of a buffer page cannot be indexed.\nConsider a function index of an MD5 hash of the value, or use full text indexing."),
            EngineError::NumericFieldOverflow { detail } => err.with_detail(detail.clone()),
            EngineError::DependentObjects(m) if m.contains('\n') => {
                let (first, detail) = m.split_once('\n').expect("has a line break");
                SqlError::new("2BP01", strata_engine::temp::shown(first))
                    .with_detail(detail)
                    .with_hint("Use DROP ... CASCADE to drop the dependent objects too.")
            }
            EngineError::DependentObjects(m) => {
                let hint = m
                    .split_once(" because constraint ")
                    .and_then(|(_, rest)| rest.split_once(" requires it"))
                    .map(|(c, _)| format!("You can drop constraint {c} instead."));
                match hint {
                    Some(h) => err.with_hint(h),
                    None => err,
                }
            }
            _ => err,
        }
    }
}

pub type SqlResult<T> = Result<T, SqlError>;

/// The deepest expression nesting a statement may have, in parsing (sqlparser's
/// recursion limit and the operator-chain bound in [`check_complexity`]), binding
/// and evaluation (their depth counters). PostgreSQL bounds the same recursion by
/// stack bytes (`max_stack_depth`); Strata counts levels and sizes the backend
/// thread's stack for them ([`BACKEND_STACK_BYTES`]).
pub const MAX_EXPR_DEPTH: usize = 1000;

/// The stack of a backend thread: room for [`MAX_EXPR_DEPTH`] levels of parsing,
/// binding, evaluation and dropping with a wide margin: the deepest statements the
/// bounds admit run in a sixteenth of it (2 MiB, the
/// `the_deepest_admitted_expressions_fit_a_sixteenth_of_the_backend_stack` test, at
/// the test profile's opt-level 1). Only touched pages cost memory.
pub const BACKEND_STACK_BYTES: usize = 32 << 20;

/// The largest value or buffer a client can make the server hold: PostgreSQL's
/// MaxAllocSize (1 GB - 1). Every operator and function that builds a value from a
/// client's input checks the size it will have against this before allocating
/// ([`alloc_request`], 54000), and asks for the memory fallibly ([`try_reserve`],
/// 53200): a failed allocation would abort the process and every session with it.
pub const MAX_ALLOC_BYTES: usize = 0x3fff_ffff;

/// PostgreSQL's check before an allocation of `bytes` for a value: 54000 "invalid
/// memory alloc request size" past [`MAX_ALLOC_BYTES`].
pub fn alloc_request(bytes: usize) -> SqlResult<usize> {
    if bytes > MAX_ALLOC_BYTES {
        return Err(SqlError::new(
            "54000",
            format!("invalid memory alloc request size {bytes}"),
        ));
    }
    Ok(bytes)
}

/// Reserves room for exactly `more` more elements in `v` (the caller chooses how
/// a buffer grows), or 53200 "out of memory" if the allocator refuses (the process
/// goes on).
pub fn try_reserve<T>(v: &mut Vec<T>, more: usize) -> SqlResult<()> {
    v.try_reserve_exact(more).map_err(|_| out_of_memory(more))
}

/// A string of capacity `bytes` (checked by [`alloc_request`] first), or 53200.
pub fn try_string(bytes: usize) -> SqlResult<String> {
    let mut s = String::new();
    s.try_reserve_exact(alloc_request(bytes)?)
        .map_err(|_| out_of_memory(bytes))?;
    Ok(s)
}

/// A value as text, taken (no copy of a text value) and checked: its text must
/// fit [`MAX_ALLOC_BYTES`] (a bytea's hex is twice its size).
pub fn text_of(d: Datum) -> SqlResult<String> {
    match d {
        Datum::Text(s) => Ok(s),
        d => {
            alloc_request(d.text_bytes() + 4)?;
            Ok(d.to_text().unwrap_or_default())
        }
    }
}

fn out_of_memory(bytes: usize) -> SqlError {
    SqlError::new("53200", "out of memory")
        .with_detail(format!("Failed on request of size {bytes}."))
}

/// PostgreSQL's error for too deep a recursion (54001).
pub fn too_deep() -> SqlError {
    SqlError::new("54001", "stack depth limit exceeded").with_hint(format!(
        "Strata bounds expression nesting at {MAX_EXPR_DEPTH} levels (PostgreSQL's \"max_stack_depth\"); simplify the expression."
    ))
}

/// The SQL types of results and expressions.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SqlType {
    /// `smallint`.
    Int2,
    Int4,
    Int8,
    Text,
    /// `character(n)` (PostgreSQL's bpchar): text blank-padded to its length, held as
    /// [`Datum::Text`]. Its trailing spaces are not significant: comparisons, index
    /// keys and the cast to text (implicit where text is wanted: `||`, functions)
    /// leave them out ([`bind::Func::BpcharText`]).
    Bpchar,
    Bool,
    /// `pg_lsn`: a WAL position.
    Lsn,
    /// `numeric`: an exact decimal ([`numeric`] rule 2).
    Numeric,
    /// `real` and `double precision` ([`numeric`] rule 3).
    Float4,
    Float8,
    /// `time` and `interval` ([`interval`]).
    Time,
    Interval,
    /// `timestamp` (without time zone) and `timestamptz` ([`time`]).
    Timestamp,
    TimestampTz,
    Date,
    Uuid,
    Bytea,
    /// A NULL literal or a parameter whose type nothing determines.
    Unknown,
}

impl SqlType {
    pub fn of_col(t: ColType) -> SqlType {
        match t {
            ColType::Int2 => SqlType::Int2,
            ColType::Int4 => SqlType::Int4,
            ColType::Int8 => SqlType::Int8,
            ColType::Text => SqlType::Text,
            ColType::Bool => SqlType::Bool,
            ColType::Timestamp => SqlType::Timestamp,
            ColType::TimestampTz => SqlType::TimestampTz,
            ColType::Date => SqlType::Date,
            ColType::Uuid => SqlType::Uuid,
            ColType::Bytea => SqlType::Bytea,
            ColType::Float4 => SqlType::Float4,
            ColType::Float8 => SqlType::Float8,
            ColType::Numeric => SqlType::Numeric,
            ColType::Time => SqlType::Time,
            ColType::Interval => SqlType::Interval,
        }
    }
    /// The type of a table's column: `char(n)` columns are [`SqlType::Bpchar`].
    pub fn of_column(c: &Column) -> SqlType {
        if c.padded {
            SqlType::Bpchar
        } else {
            SqlType::of_col(c.ty)
        }
    }
    pub fn name(self) -> &'static str {
        match self {
            SqlType::Int2 => "smallint",
            SqlType::Int4 => "integer",
            SqlType::Int8 => "bigint",
            SqlType::Text => "text",
            SqlType::Bpchar => "character",
            SqlType::Bool => "boolean",
            SqlType::Lsn => "pg_lsn",
            SqlType::Numeric => "numeric",
            SqlType::Timestamp => "timestamp without time zone",
            SqlType::TimestampTz => "timestamp with time zone",
            SqlType::Date => "date",
            SqlType::Uuid => "uuid",
            SqlType::Bytea => "bytea",
            SqlType::Float4 => "real",
            SqlType::Float8 => "double precision",
            SqlType::Time => "time without time zone",
            SqlType::Interval => "interval",
            SqlType::Unknown => "unknown",
        }
    }
    /// A type of the numeric tower (integers, numeric, floats: [`numeric::rank`]).
    pub fn is_number(self) -> bool {
        numeric::rank(self) > 0
    }
    pub fn is_int(self) -> bool {
        matches!(
            self,
            SqlType::Int2 | SqlType::Int4 | SqlType::Int8 | SqlType::Numeric
        )
    }
    /// A type name as written in SQL (`int`, `bigint`, `varchar(20)`, ...).
    pub fn from_ast(t: &ast::DataType) -> SqlResult<SqlType> {
        let s = t.to_string().to_ascii_lowercase();
        // The name without its modifier: `varchar(20)`, `timestamp(3) with time zone`.
        let mut bare = String::new();
        let mut depth = 0;
        for c in s.chars() {
            match c {
                '(' => depth += 1,
                ')' => depth -= 1,
                c if depth == 0 => bare.push(c),
                _ => {}
            }
        }
        let bare = bare.split_whitespace().collect::<Vec<_>>().join(" ");
        let base = bare.as_str();
        let modifier = s
            .split_once('(')
            .and_then(|(_, r)| r.split_once(')'))
            .map(|(m, _)| m.trim());
        if let Some(t) = type_modifier_held(base, modifier)? {
            return Ok(t);
        }
        Ok(match base {
            "smallint" | "int2" => SqlType::Int2,
            "int" | "integer" | "int4" => SqlType::Int4,
            "bigint" | "int8" => SqlType::Int8,
            "text" | "varchar" | "character varying" | "name" | "regclass" => SqlType::Text,
            "char" | "character" | "bpchar" => SqlType::Bpchar,
            "bool" | "boolean" => SqlType::Bool,
            "pg_lsn" => SqlType::Lsn,
            "numeric" | "decimal" => SqlType::Numeric,
            "timestamp" | "timestamp without time zone" => SqlType::Timestamp,
            "timestamptz" | "timestamp with time zone" => SqlType::TimestampTz,
            "date" => SqlType::Date,
            "uuid" => SqlType::Uuid,
            "bytea" => SqlType::Bytea,
            "real" | "float4" => SqlType::Float4,
            "time" | "time without time zone" => SqlType::Time,
            "interval" => SqlType::Interval,
            // `interval day to second`: the fields are its typmod.
            _ if base.starts_with("interval ") => SqlType::Interval,
            "double precision" | "float8" | "float" | "double" => SqlType::Float8,
            _ if base.ends_with("[]") || base.starts_with("array") => {
                return Err(
                    SqlError::unsupported(format!("array types (\"{s}\")")).with_hint(TYPES_HINT)
                )
            }
            _ if POSTGRES_TYPES_STRATA_LACKS.contains(&base) => {
                return Err(SqlError::unsupported(format!("type \"{s}\"")).with_hint(TYPES_HINT))
            }
            _ => {
                return Err(
                    SqlError::new("42704", format!("type \"{s}\" does not exist"))
                        .with_hint(TYPES_HINT),
                )
            }
        })
    }
    pub fn to_col(self) -> SqlResult<ColType> {
        match self {
            SqlType::Int2 => Ok(ColType::Int2),
            SqlType::Int4 => Ok(ColType::Int4),
            SqlType::Int8 => Ok(ColType::Int8),
            SqlType::Text | SqlType::Bpchar => Ok(ColType::Text),
            SqlType::Bool => Ok(ColType::Bool),
            SqlType::Timestamp => Ok(ColType::Timestamp),
            SqlType::TimestampTz => Ok(ColType::TimestampTz),
            SqlType::Date => Ok(ColType::Date),
            SqlType::Uuid => Ok(ColType::Uuid),
            SqlType::Bytea => Ok(ColType::Bytea),
            SqlType::Float4 => Ok(ColType::Float4),
            SqlType::Float8 => Ok(ColType::Float8),
            SqlType::Numeric => Ok(ColType::Numeric),
            SqlType::Time => Ok(ColType::Time),
            SqlType::Interval => Ok(ColType::Interval),
            other => Err(SqlError::new(
                "0A000",
                format!(
                    "columns of type {} are not supported by Strata",
                    other.name()
                ),
            )),
        }
    }
}

pub use strata_types::Datum;

/// A value's text form, as PostgreSQL's output functions make it.
pub trait TextOut {
    /// The value as text, as PostgreSQL prints it (`None` for NULL), dates and
    /// times in this thread's session settings ([`datetime::with_session`]).
    fn to_text(&self) -> Option<String>;
    /// The value as text, dates and times in the settings `st`.
    fn to_text_in(&self, st: &datetime::Settings) -> Option<String>;
}

impl TextOut for Datum {
    fn to_text(&self) -> Option<String> {
        if session_dependent(self) {
            return datetime::with_session(|st| self.to_text_in(st));
        }
        plain_text(self)
    }

    fn to_text_in(&self, st: &datetime::Settings) -> Option<String> {
        Some(match self {
            Datum::Timestamp(t) => datetime::format_timestamp(*t, st),
            Datum::TimestampTz(t) => datetime::format_timestamptz(*t, st),
            Datum::Date(d) => datetime::format_date(*d, st),
            Datum::Interval(i) => datetime::format_interval(i, st),
            Datum::Float4(v) => numeric::format_float_in(v.get(), true, st.extra_float_digits),
            Datum::Float8(v) => numeric::format_float_in(v.get(), false, st.extra_float_digits),
            _ => return plain_text(self),
        })
    }
}

/// Whether a value's text depends on the session's settings (DateStyle,
/// TimeZone, IntervalStyle, extra_float_digits).
fn session_dependent(d: &Datum) -> bool {
    matches!(
        d,
        Datum::Timestamp(_)
            | Datum::TimestampTz(_)
            | Datum::Date(_)
            | Datum::Interval(_)
            | Datum::Float4(_)
            | Datum::Float8(_)
    )
}

/// The text of a value whose output does not depend on the session.
fn plain_text(d: &Datum) -> Option<String> {
    Some(match d {
        Datum::Null => return None,
        Datum::Int2(v) => v.to_string(),
        Datum::Int4(v) => v.to_string(),
        Datum::Int8(v) => v.to_string(),
        Datum::Numeric(v) => v.to_string(),
        Datum::Time(t) => datetime::format_time(*t),
        Datum::Text(s) => s.clone(),
        Datum::Bool(b) => (if *b { "t" } else { "f" }).to_string(),
        Datum::Lsn(l) => l.to_string(),
        Datum::Uuid(u) => format_uuid(u),
        Datum::Bytea(b) => {
            let mut s = String::with_capacity(2 + 2 * b.len());
            s.push_str("\\x");
            for x in b {
                s.push_str(&format!("{x:02x}"));
            }
            s
        }
        // (Those whose text depends on the session's settings.)
        _ => return datetime::with_session(|st| d.to_text_in(st)),
    })
}

/// A uuid as PostgreSQL prints it: lowercase, 8-4-4-4-12.
fn format_uuid(u: &[u8; 16]) -> String {
    let h: String = u.iter().map(|b| format!("{b:02x}")).collect();
    format!(
        "{}-{}-{}-{}-{}",
        &h[..8],
        &h[8..12],
        &h[12..16],
        &h[16..20],
        &h[20..]
    )
}

/// A uuid from its text: 32 hex digits, with PostgreSQL's optional hyphens after
/// any group of four and braces around.
pub fn parse_uuid(s: &str) -> Option<[u8; 16]> {
    let t = s.trim();
    let t = t
        .strip_prefix('{')
        .and_then(|x| x.strip_suffix('}'))
        .unwrap_or(t);
    let hex: String = t.chars().filter(|c| *c != '-').collect();
    if hex.len() != 32 || t.starts_with('-') || t.ends_with('-') || t.contains("--") {
        return None;
    }
    let mut out = [0u8; 16];
    for (i, o) in out.iter_mut().enumerate() {
        *o = u8::from_str_radix(hex.get(2 * i..2 * i + 2)?, 16).ok()?;
    }
    Some(out)
}

/// bytea from its text: `\x` and hex digits, or the escape format (`\\` a
/// backslash, `\nnn` an octal byte, anything else itself).
pub fn parse_bytea(s: &str) -> Option<Vec<u8>> {
    if let Some(h) = s.strip_prefix("\\x") {
        let h: Vec<u8> = h.bytes().filter(|b| !b.is_ascii_whitespace()).collect();
        if !h.len().is_multiple_of(2) {
            return None;
        }
        return h
            .chunks(2)
            .map(|p| u8::from_str_radix(std::str::from_utf8(p).ok()?, 16).ok())
            .collect();
    }
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        if b[i] != b'\\' {
            out.push(b[i]);
            i += 1;
        } else if b.get(i + 1) == Some(&b'\\') {
            out.push(b'\\');
            i += 2;
        } else {
            let o = std::str::from_utf8(b.get(i + 1..i + 4)?).ok()?;
            out.push(u8::from_str_radix(o, 8).ok()?);
            i += 4;
        }
    }
    Some(out)
}

/// Where INSERT's rows come from.
#[derive(Clone, Debug)]
pub enum InsertSource {
    Values(Vec<Vec<ast::Expr>>),
    /// A VALUES list still as text, parsed a row at a time ([`values`]).
    Rows(values::Rows),
    Query(Box<ast::Query>),
}

/// One parsed statement: its kind, then what that kind's executor needs (the
/// session binds each kind into what it runs, and dispatches on it once).
#[derive(Clone, Debug)]
#[allow(clippy::large_enum_variant)] // one per statement, short-lived
pub enum Stmt {
    /// Nothing (a query of only comments, `SET TRANSACTION`): dropped by [`parse`].
    Empty,
    /// Transaction control: run by the session's block state machine.
    Control(Control),
    Select(Box<ast::Query>),
    /// EXPLAIN [(options)] query ([`explain`]).
    Explain(Box<ast::Query>, explain::Options),
    Insert {
        table: String,
        columns: Option<Vec<String>>,
        source: InsertSource,
        returning: Returning,
        on_conflict: Option<OnConflict>,
    },
    Delete {
        table: String,
        /// DELETE FROM t [AS] alias: the name the statement gives the table.
        alias: Option<String>,
        /// USING: more tables the WHERE may join with.
        using: Vec<ast::TableWithJoins>,
        /// WITH before the statement: CTEs USING may read (sql rule 8).
        with: Option<Box<ast::With>>,
        selection: Option<ast::Expr>,
        returning: Returning,
    },
    /// UPDATE t SET col = expr, ... [WHERE]: (column, value) in the order written.
    Update {
        table: String,
        /// UPDATE t [AS] alias: the name the statement gives the table.
        alias: Option<String>,
        assignments: Vec<(String, ast::Expr)>,
        /// FROM: more tables the SET and WHERE may read.
        from: Vec<ast::TableWithJoins>,
        /// WITH before the statement: CTEs FROM may read (sql rule 8).
        with: Option<Box<ast::With>>,
        selection: Option<ast::Expr>,
        returning: Returning,
    },
    /// COPY t [(cols)] FROM STDIN | TO STDOUT [WITH (...)].
    Copy(CopyStmt),
    /// Roles and privileges: CREATE / ALTER / DROP ROLE, GRANT, REVOKE, OWNER TO,
    /// REASSIGN / DROP OWNED, SET ROLE.
    Access(roles::AccessStmt),
    /// CREATE/DROP/TRUNCATE of tables, CREATE/DROP of databases and tablespaces.
    Ddl(Ddl),
    /// SET, SHOW, CHECKPOINT, VACUUM, ALTER ROLE.
    Utility(Utility),
    /// A statement whose WITH has data-modifying CTEs, or CTEs a data-modifying
    /// statement reads where its own clauses cannot take them (sql rule 8).
    With(Box<WithStmt>),
    /// PREPARE, EXECUTE, DEALLOCATE ([`prepare`]).
    Prepared(prepare::PreparedStmt),
}

/// A statement with its WITH list run by the session ([`Stmt::With`]).
#[derive(Clone, Debug)]
pub struct WithStmt {
    pub recursive: bool,
    pub ctes: Vec<WithItem>,
    /// The statement, without the WITH.
    pub main: Stmt,
}

/// One CTE of a [`WithStmt`], in the order written.
#[derive(Clone, Debug)]
pub enum WithItem {
    /// A query: read as a subquery at each reference (cte rule 2).
    Query(Box<ast::Cte>),
    /// `name [(columns)] AS (INSERT | UPDATE | DELETE ... [RETURNING ...])`: run
    /// once, before the statement; its RETURNING rows are what the name reads.
    Modify {
        name: String,
        columns: Vec<String>,
        stmt: Box<Stmt>,
    },
}

/// INSERT's ON CONFLICT: its arbiter (the columns of a unique index, or a
/// constraint's name; neither: every unique index, DO NOTHING only) and DO UPDATE's
/// SET and WHERE (`update` None: DO NOTHING).
#[derive(Clone, Debug, PartialEq)]
pub struct OnConflict {
    pub columns: Vec<String>,
    pub constraint: Option<String>,
    pub update: Option<(Assignments, Option<ast::Expr>)>,
}

/// `SET col = expr, ...`, in the order written.
pub type Assignments = Vec<(String, ast::Expr)>;

/// A COPY between a table and the client.
#[derive(Clone, Debug, PartialEq)]
pub struct CopyStmt {
    pub table: String,
    pub columns: Option<Vec<String>>,
    /// TO (else FROM).
    pub to: bool,
    /// A file on the server (superusers and pg_read/write_server_files), else the
    /// client (STDIN / STDOUT).
    pub file: Option<String>,
    pub options: copy::CopyOptions,
}

/// A DML statement's RETURNING list, as written (None: no RETURNING).
pub type Returning = Option<Vec<ast::SelectItem>>;

/// A transaction's modes, as BEGIN or SET TRANSACTION give them (None: not said).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct TxnModes {
    /// READ ONLY (`Some(true)`) or READ WRITE.
    pub read_only: Option<bool>,
    /// REPEATABLE READ (`Some(true)`) or READ COMMITTED / UNCOMMITTED.
    pub repeatable: Option<bool>,
}

/// BEGIN, COMMIT, ROLLBACK and the savepoint commands.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Control {
    /// BEGIN / START TRANSACTION, with its modes.
    Begin {
        modes: TxnModes,
    },
    Commit,
    Rollback,
    /// SAVEPOINT, ROLLBACK TO SAVEPOINT or RELEASE SAVEPOINT (`verb`) of some name:
    /// refused, Strata has no subtransactions (see the session).
    Savepoint {
        verb: &'static str,
    },
}

/// Data definition: tables, databases, tablespaces.
#[derive(Clone, Debug)]
pub enum Ddl {
    CreateTable {
        name: String,
        if_not_exists: bool,
        columns: Vec<Column>,
        tablespace: Option<String>,
        /// Its PRIMARY KEY and UNIQUE constraints, in the order written.
        indexes: Vec<IndexSpec>,
        /// The sequences its `serial` and identity columns own.
        sequences: Vec<sequences::ColumnSeq>,
        /// Its FOREIGN KEYs, column and table constraints in the order written.
        foreign_keys: Vec<foreign::FkSpec>,
        /// A temporary table's ON COMMIT (its name is `pg_temp.name`: temp module).
        on_commit: Option<temp::OnCommit>,
    },
    /// CREATE SEQUENCE [IF NOT EXISTS] name [AS type] [options].
    CreateSequence {
        name: String,
        if_not_exists: bool,
        options: strata_engine::SeqOptions,
    },
    DropSequence {
        names: Vec<String>,
        if_exists: bool,
    },
    /// CREATE [UNIQUE] INDEX [IF NOT EXISTS] [name] ON t (cols).
    CreateIndex {
        table: String,
        spec: IndexSpec,
        if_not_exists: bool,
    },
    DropIndex {
        names: Vec<String>,
        if_exists: bool,
    },
    /// ALTER TABLE [IF EXISTS] t ADD [CONSTRAINT name] PRIMARY KEY | UNIQUE (cols).
    AddConstraint {
        table: String,
        if_exists: bool,
        spec: IndexSpec,
    },
    /// ALTER TABLE [IF EXISTS] t ADD [CONSTRAINT name] FOREIGN KEY ... [NOT VALID].
    AddForeignKey {
        table: String,
        if_exists: bool,
        spec: foreign::FkSpec,
    },
    /// ALTER TABLE [IF EXISTS] t DROP CONSTRAINT [IF EXISTS] name.
    DropConstraint {
        table: String,
        if_exists: bool,
        name: String,
        constraint_if_exists: bool,
    },
    DropTable {
        names: Vec<String>,
        if_exists: bool,
        /// CASCADE: the views that read them go too.
        cascade: bool,
    },
    /// CREATE [OR REPLACE] VIEW name [(columns)] AS query (rewrite module).
    CreateView {
        name: String,
        columns: Vec<String>,
        query: Box<ast::Query>,
        or_replace: bool,
    },
    /// DROP VIEW [IF EXISTS] names [CASCADE].
    DropView {
        names: Vec<String>,
        if_exists: bool,
        cascade: bool,
    },
    Truncate {
        names: Vec<String>,
    },
    /// CREATE TABLE [IF NOT EXISTS] t AS query [WITH [NO] DATA]: a table with the
    /// query's columns, holding its rows unless WITH NO DATA.
    CreateTableAs {
        name: String,
        if_not_exists: bool,
        query: Box<ast::Query>,
        with_data: bool,
        on_commit: Option<temp::OnCommit>,
    },
    /// ALTER TABLE [IF EXISTS] t ADD [COLUMN] [IF NOT EXISTS] col type ...
    AddColumn {
        table: String,
        if_exists: bool,
        column: Column,
        if_not_exists: bool,
    },
    /// ALTER TABLE [IF EXISTS] t DROP [COLUMN] [IF EXISTS] c.
    DropColumn {
        table: String,
        if_exists: bool,
        column: String,
        column_if_exists: bool,
    },
    /// ALTER TABLE [IF EXISTS] t RENAME TO n, or RENAME [COLUMN] c TO n.
    Rename {
        table: String,
        if_exists: bool,
        column: Option<String>,
        new_name: String,
    },
    CreateTablespace {
        name: String,
        location: String,
        owner: Option<roles::RoleSpec>,
    },
    DropTablespace {
        name: String,
        if_exists: bool,
    },
    CreateDatabase {
        name: String,
        template: Option<String>,
        tablespace: Option<String>,
        strategy: Option<CreateDbStrategy>,
        owner: Option<roles::RoleSpec>,
    },
    DropDatabase {
        name: String,
        if_exists: bool,
        force: bool,
    },
}

/// A PRIMARY KEY or UNIQUE constraint, or CREATE INDEX's index; `name` as given
/// (None: chosen as PostgreSQL chooses it, `<table>_pkey`, `<table>_<cols>_key`,
/// `<table>_<cols>_idx`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct IndexSpec {
    pub name: Option<String>,
    pub columns: Vec<String>,
    pub unique: bool,
    pub primary: bool,
    pub constraint: bool,
}

impl IndexSpec {
    fn constraint(name: Option<&ast::Ident>, columns: Vec<String>, primary: bool) -> IndexSpec {
        IndexSpec {
            name: name.map(ident_name),
            columns,
            unique: true,
            primary,
            constraint: true,
        }
    }
}

/// The other utility statements: settings, maintenance, roles.
#[derive(Clone, Debug)]
pub enum Utility {
    /// VACUUM [ANALYZE] [table]: `analyze` gathers statistics after.
    Vacuum {
        table: Option<String>,
        analyze: bool,
    },
    /// ANALYZE [VERBOSE] [table [(column, ...)], ...] (`gather` rules).
    Analyze {
        targets: Vec<(String, Vec<String>)>,
        verbose: bool,
    },
    Checkpoint,
    /// `SET name = value`; `None` for `DEFAULT` (and RESET).
    Set {
        name: String,
        value: Option<String>,
        /// SET LOCAL: until the transaction ends.
        local: bool,
    },
    Show {
        name: String,
    },
    /// SET TRANSACTION modes (this block's), or SET SESSION CHARACTERISTICS AS
    /// TRANSACTION modes (`session`: the defaults of the blocks to come).
    SetTransaction {
        modes: TxnModes,
        session: bool,
    },
}

impl Stmt {
    /// CREATE/DROP DATABASE and TABLESPACE and VACUUM: never in a transaction block.
    pub fn never_in_block(&self) -> bool {
        matches!(
            self,
            Stmt::Ddl(
                Ddl::CreateDatabase { .. }
                    | Ddl::DropDatabase { .. }
                    | Ddl::CreateTablespace { .. }
                    | Ddl::DropTablespace { .. }
            ) | Stmt::Utility(Utility::Vacuum { .. })
        )
    }

    /// The command a read-only transaction refuses this statement as (PostgreSQL's
    /// "cannot execute X in a read-only transaction", 25006); None if it writes
    /// nothing (queries, COPY TO, SET, SHOW, CHECKPOINT, VACUUM).
    pub fn write_verb(&self) -> Option<&'static str> {
        match self {
            Stmt::Insert { .. } | Stmt::Delete { .. } | Stmt::Update { .. } => Some(self.verb()),
            Stmt::Copy(c) if !c.to => Some("COPY FROM"),
            Stmt::Ddl(d) => Some(d.verb()),
            Stmt::Access(a) if a.writes() => Some(a.verb()),
            Stmt::Utility(Utility::Analyze { .. }) => Some("ANALYZE"),
            Stmt::With(w) => w
                .ctes
                .iter()
                .find_map(|c| match c {
                    WithItem::Modify { stmt, .. } => stmt.write_verb(),
                    WithItem::Query(_) => None,
                })
                .or_else(|| w.main.write_verb()),
            _ => None,
        }
    }

    /// BEGIN, COMMIT, ROLLBACK and the savepoint commands.
    pub fn is_txn_control(&self) -> bool {
        matches!(self, Stmt::Control(_))
    }

    /// The command tag's verb, for errors about where a statement may run.
    pub fn verb(&self) -> &'static str {
        match self {
            Stmt::Empty => "",
            Stmt::Control(c) => c.verb(),
            Stmt::Insert { .. } => "INSERT",
            Stmt::Delete { .. } => "DELETE",
            Stmt::Update { .. } => "UPDATE",
            Stmt::Copy(_) => "COPY",
            Stmt::Select(_) => "SELECT",
            Stmt::Explain(..) => "EXPLAIN",
            Stmt::Ddl(d) => d.verb(),
            Stmt::Utility(u) => u.verb(),
            Stmt::Access(a) => a.verb(),
            Stmt::With(w) => w.main.verb(),
            Stmt::Prepared(p) => p.verb(),
        }
    }
}

impl Control {
    pub fn verb(&self) -> &'static str {
        match self {
            Control::Begin { .. } => "BEGIN",
            Control::Commit => "COMMIT",
            Control::Rollback => "ROLLBACK",
            Control::Savepoint { verb } => verb,
        }
    }
}

impl Ddl {
    pub fn verb(&self) -> &'static str {
        match self {
            Ddl::CreateTable { .. } => "CREATE TABLE",
            Ddl::CreateIndex { .. } => "CREATE INDEX",
            Ddl::CreateSequence { .. } => "CREATE SEQUENCE",
            Ddl::DropSequence { .. } => "DROP SEQUENCE",
            Ddl::DropIndex { .. } => "DROP INDEX",
            Ddl::AddConstraint { .. } | Ddl::AddForeignKey { .. } | Ddl::DropConstraint { .. } => {
                "ALTER TABLE"
            }
            Ddl::DropTable { .. } => "DROP TABLE",
            Ddl::CreateView { .. } => "CREATE VIEW",
            Ddl::DropView { .. } => "DROP VIEW",
            Ddl::Truncate { .. } => "TRUNCATE TABLE",
            Ddl::Rename { .. } | Ddl::AddColumn { .. } | Ddl::DropColumn { .. } => "ALTER TABLE",
            Ddl::CreateTableAs { .. } => "CREATE TABLE AS",
            Ddl::CreateTablespace { .. } => "CREATE TABLESPACE",
            Ddl::DropTablespace { .. } => "DROP TABLESPACE",
            Ddl::CreateDatabase { .. } => "CREATE DATABASE",
            Ddl::DropDatabase { .. } => "DROP DATABASE",
        }
    }
}

impl Utility {
    pub fn verb(&self) -> &'static str {
        match self {
            Utility::Vacuum { .. } => "VACUUM",
            Utility::Analyze { .. } => "ANALYZE",
            Utility::Checkpoint => "CHECKPOINT",
            Utility::Set { .. } => "SET",
            Utility::Show { .. } => "SHOW",
            Utility::SetTransaction { .. } => "SET",
        }
    }
}

/// Parses a query string into its statements (empty ones dropped); see
/// [`parse_shared`]. Copies `sql` once.
pub fn parse(sql: &str) -> SqlResult<Vec<Stmt>> {
    parse_text(Arc::new(sql.to_owned()), false)
}

/// Parses a query string into its statements (empty ones dropped). The text is
/// pre-scanned ([`values`]): each statement is tokenized alone, and an INSERT ...
/// VALUES keeps its rows as text shared with the returned statements, parsed a row
/// at a time when it runs; with several statements every row is parsed once here
/// too, so that a syntax error anywhere stops the string before anything runs. A
/// text the pre-scan cannot split is tokenized whole ([`parse_tokens`]), as is one
/// where a statement does not tokenize (its error then reads as it always has).
///
/// A client's text keeps its tokens' locations (sql rule 7); [`parse`], for text
/// Strata stored (views), does not: its errors have no place in the client's.
pub fn parse_shared(text: Arc<String>) -> SqlResult<Vec<Stmt>> {
    parse_text(text, true)
}

fn parse_text(text: Arc<String>, located: bool) -> SqlResult<Vec<Stmt>> {
    let mut v = parse_statements(Arc::clone(&text), located)?;
    for st in &mut v {
        if let Stmt::Prepared(prepare::PreparedStmt::Prepare(p)) = st {
            p.text = text.to_string(); // prepare rule 3
        }
    }
    Ok(v)
}

fn parse_statements(text: Arc<String>, located: bool) -> SqlResult<Vec<Stmt>> {
    let Some(splits) = values::statements(&text) else {
        return parse_tokens(&text, located);
    };
    let mut parsed = Vec::with_capacity(splits.len());
    let mut at = TextCursor::default();
    for s in &splits {
        let base = located.then(|| at.advance(&text, s.range.start));
        match parse_split(&text, s, base) {
            Ok(r) => parsed.push(r),
            Err(_) => return parse_tokens(&text, located),
        }
    }
    if parsed
        .iter()
        .filter(|r| !matches!(r, Ok(Stmt::Empty)))
        .count()
        > 1
    {
        for r in &mut parsed {
            let checked = match r {
                Ok(Stmt::Insert {
                    source: InsertSource::Rows(rows),
                    ..
                }) => rows.check(),
                _ => continue,
            };
            match checked {
                Ok(Ok(())) => {}
                Ok(Err(e)) => *r = Err(e),
                Err(_) => return parse_tokens(&text, located),
            }
        }
    }
    // In text order: the first error is the one reported.
    let mut out = Vec::new();
    for r in parsed {
        let stmt = r?;
        if !matches!(stmt, Stmt::Empty) {
            out.push(stmt);
        }
    }
    Ok(out)
}

/// One statement the pre-scan found: an INSERT ... VALUES parsed as its head and
/// first row (values rule 3), its rows kept as text; any other statement, or one
/// whose head does not parse as such, tokenized and parsed whole. `Err` when its
/// text does not tokenize.
fn parse_split(
    text: &Arc<String>,
    s: &values::Split,
    base: Option<(u64, u64)>,
) -> Result<SqlResult<Stmt>, TokenizerError> {
    if let Some(first) = &s.first_row {
        let head = tokens(&text[s.range.start..first.end], base)?;
        if let Ok(Stmt::Insert {
            table,
            columns,
            source: InsertSource::Values(v),
            returning: None,
            on_conflict: None,
        }) = check_complexity(&head).and_then(|()| parse_one(head))
        {
            if v.len() == 1 {
                let rows = values::Rows::new(text.clone(), first.start..s.range.end);
                return Ok(Ok(Stmt::Insert {
                    table,
                    columns,
                    source: InsertSource::Rows(rows),
                    returning: None,
                    on_conflict: None,
                }));
            }
        }
    }
    let toks = tokens(&text[s.range.clone()], base)?;
    Ok(check_complexity(&toks).and_then(|()| parse_one(toks)))
}

/// A place in a query string, moved forward statement by statement (so finding
/// every statement's line and column costs one pass over the text).
pub(crate) struct TextCursor {
    byte: usize,
    line: u64,
    col: u64,
}

impl Default for TextCursor {
    fn default() -> TextCursor {
        TextCursor {
            byte: 0,
            line: 1,
            col: 1,
        }
    }
}

impl TextCursor {
    /// The line and column (from 1) of byte `to` (at or after the last one asked).
    pub(crate) fn advance(&mut self, text: &str, to: usize) -> (u64, u64) {
        for ch in text[self.byte..to].chars() {
            if ch == '\n' {
                (self.line, self.col) = (self.line + 1, 1);
            } else {
                self.col += 1;
            }
        }
        self.byte = to;
        (self.line, self.col)
    }
}

/// The significant tokens of `sql`, in the form sqlparser takes: whitespace and
/// comments dropped in place. With `base` (where `sql` starts in the client's query
/// string) their spans are moved there (sql rule 7); without, blanked.
fn tokens(sql: &str, base: Option<(u64, u64)>) -> Result<Vec<TokenWithSpan>, TokenizerError> {
    let dialect = PostgreSqlDialect {};
    let mut tokens = Tokenizer::new(&dialect, sql).tokenize_with_location()?;
    let rebase = |l: &mut sqlparser::tokenizer::Location, (bl, bc): (u64, u64)| {
        if l.line == 1 {
            l.column += bc - 1;
        }
        l.line += bl - 1;
    };
    tokens.retain_mut(|t| {
        match base {
            None => t.span = Span::empty(),
            Some(b) if b != (1, 1) => {
                rebase(&mut t.span.start, b);
                rebase(&mut t.span.end, b);
            }
            Some(_) => {}
        }
        !matches!(t.token, Token::Whitespace(_))
    });
    Ok(tokens)
}

/// Parses a query string tokenized whole, into its statements (empty ones dropped).
fn parse_tokens(sql: &str, located: bool) -> SqlResult<Vec<Stmt>> {
    // One vector of tokens; each statement's tokens are split off its end (a single
    // statement is never copied), then handed on by value.
    let base = located.then_some((1, 1));
    let mut tokens = tokens(sql, base).map_err(|e| SqlError::syntax(e.to_string()))?;
    let mut parsed = Vec::new();
    while !tokens.is_empty() {
        let cur = match tokens.iter().rposition(|t| t.token == Token::SemiColon) {
            Some(i) => {
                let cur = tokens.split_off(i + 1);
                tokens.truncate(i);
                cur
            }
            None => std::mem::take(&mut tokens),
        };
        parsed.push(check_complexity(&cur).and_then(|()| parse_one(cur)));
    }
    // In text order: the first error is the one reported.
    let mut out = Vec::new();
    for r in parsed.into_iter().rev() {
        let stmt = r?;
        if !matches!(stmt, Stmt::Empty) {
            out.push(stmt);
        }
    }
    Ok(out)
}

/// sqlparser's recursion limit (nested parentheses, subqueries, prefix operators):
/// each level costs several parser frames, so it is well below [`MAX_EXPR_DEPTH`].
pub const PARSER_RECURSION_LIMIT: usize = 250;

/// The most AND and OR operators one statement may have (PostgreSQL takes a WHERE
/// of 10,000 ORs; so does Strata). Binding flattens their chains, but sqlparser's
/// tree is as deep as the chain, and printing or dropping it recurses: this bounds
/// that depth (the stack test drops and prints the longest).
pub const MAX_BOOL_CHAIN: usize = 20_000;

/// Bounds what sqlparser's recursion limit does not see: a chain of infix
/// operators (`1+1+...`, `x::int::int`) is parsed by a loop into a tree as deep
/// as the chain, which binding, printing and dropping then recurse over. An upper
/// bound of the tree's depth is the number of tokens in one comma-separated item,
/// summed over the enclosing parentheses; past 4 x [`MAX_EXPR_DEPTH`] (every
/// operator brings at least one operand token) the statement is refused before
/// sqlparser builds anything. AND and OR separate items and are counted apart
/// ([`MAX_BOOL_CHAIN`]). O(tokens).
fn check_complexity(tokens: &[TokenWithSpan]) -> SqlResult<()> {
    /// One parenthesized group: depth bound of the current item, of its deepest
    /// item, and of the enclosing groups at its start.
    #[derive(Clone, Copy)]
    struct Group {
        item: usize,
        deepest: usize,
        base: usize,
    }
    let limit = 4 * MAX_EXPR_DEPTH;
    let mut chain = 0usize;
    let mut stack = vec![Group {
        item: 0,
        deepest: 0,
        base: 0,
    }];
    let grow = |g: &mut Group, by: usize| -> SqlResult<()> {
        g.item += by;
        g.deepest = g.deepest.max(g.item);
        if g.base + g.item > limit {
            return Err(too_deep());
        }
        Ok(())
    };
    for t in tokens.iter().map(|t| &t.token) {
        let top = stack.len() - 1;
        match t {
            Token::Whitespace(_) => {}
            Token::LParen | Token::LBracket => {
                let g = stack[top];
                stack.push(Group {
                    item: 0,
                    deepest: 0,
                    base: g.base + g.item + 1,
                });
            }
            Token::RParen | Token::RBracket if top > 0 => {
                let child = stack[top];
                stack.pop();
                grow(&mut stack[top - 1], child.deepest + 1)?;
            }
            Token::Comma => stack[top].item = 0,
            // AND and OR chains are bound flat (bind rule 4): their operands are
            // items of their own, and the chains' total length has its own bound.
            Token::Word(w)
                if w.quote_style.is_none() && matches!(w.keyword, Keyword::AND | Keyword::OR) =>
            {
                chain += 1;
                if chain > MAX_BOOL_CHAIN {
                    return Err(too_deep());
                }
                stack[top].item = 0;
            }
            _ => grow(&mut stack[top], 1)?,
        }
    }
    Ok(())
}

/// The significant tokens of one statement, with a cursor, for the forms parsed here.
pub(crate) struct Toks {
    t: Vec<TokenWithSpan>,
    pub(crate) i: usize,
}

impl Toks {
    /// `all`: one statement's tokens, whitespace removed ([`parse`]).
    fn new(all: Vec<TokenWithSpan>) -> Toks {
        debug_assert!(!all.iter().any(|t| matches!(t.token, Token::Whitespace(_))));
        Toks { t: all, i: 0 }
    }
    /// The tokens from the cursor on.
    pub(crate) fn rest(&self) -> Vec<TokenWithSpan> {
        self.t[self.i..].to_vec()
    }

    pub(crate) fn peek(&self) -> Option<&Token> {
        self.get(self.i)
    }
    pub(crate) fn get(&self, i: usize) -> Option<&Token> {
        self.t.get(i).map(|t| &t.token)
    }
    pub(crate) fn peek_word(&self, n: usize) -> Option<String> {
        match self.get(self.i + n) {
            Some(Token::Word(w)) if w.quote_style.is_none() => Some(w.value.to_ascii_uppercase()),
            _ => None,
        }
    }
    pub(crate) fn at_end(&self) -> bool {
        self.i >= self.t.len()
    }
    pub(crate) fn word(&mut self, kw: &str) -> bool {
        if self.peek_word(0).as_deref() == Some(kw) {
            self.i += 1;
            true
        } else {
            false
        }
    }
    pub(crate) fn words(&mut self, kws: &[&str]) -> bool {
        if kws
            .iter()
            .enumerate()
            .all(|(n, k)| self.peek_word(n).as_deref() == Some(*k))
        {
            self.i += kws.len();
            true
        } else {
            false
        }
    }
    pub(crate) fn tok(&mut self, t: &Token) -> bool {
        if self.peek() == Some(t) {
            self.i += 1;
            true
        } else {
            false
        }
    }
    pub(crate) fn near(&self) -> SqlError {
        match self.peek() {
            Some(t) => SqlError::syntax(format!("syntax error at or near \"{t}\"")),
            None => SqlError::syntax("syntax error at end of input"),
        }
    }
    pub(crate) fn expect_word(&mut self, kw: &str) -> SqlResult<()> {
        if self.word(kw) {
            Ok(())
        } else {
            Err(self.near())
        }
    }
    /// An identifier: unquoted ones fold to lower case, as in PostgreSQL.
    pub(crate) fn ident(&mut self) -> SqlResult<String> {
        match self.peek() {
            Some(Token::Word(w)) => {
                let v = if w.quote_style.is_some() {
                    w.value.clone()
                } else {
                    w.value.to_ascii_lowercase()
                };
                self.i += 1;
                Ok(v)
            }
            _ => Err(self.near()),
        }
    }
    /// A setting's name: `name` or `prefix.name`, lower-cased even when quoted
    /// (PostgreSQL's setting names are case-insensitive).
    pub(crate) fn dotted_ident(&mut self) -> SqlResult<String> {
        let mut n = self.ident()?;
        while self.tok(&Token::Period) {
            n.push('.');
            n.push_str(&self.ident()?);
        }
        Ok(n.to_ascii_lowercase())
    }
    pub(crate) fn string(&mut self) -> SqlResult<String> {
        match self.peek() {
            Some(Token::SingleQuotedString(s)) | Some(Token::EscapedStringLiteral(s)) => {
                let s = s.clone();
                self.i += 1;
                Ok(s)
            }
            _ => Err(self.near()),
        }
    }
    /// A setting value: a word, a string or a number (with its unit, `8GB`).
    pub(crate) fn value(&mut self) -> SqlResult<String> {
        let v = match self.peek() {
            Some(Token::Word(w)) => w.value.clone(),
            Some(Token::SingleQuotedString(s)) => s.clone(),
            Some(Token::Number(n, _)) => {
                let mut n = n.clone();
                // A unit after its number (`10s`, `64kB`); any other word is the
                // next option's (`CONNECTION LIMIT -1 IS_TEMPLATE false`).
                const UNITS: &[&str] = &[
                    "b", "kb", "mb", "gb", "tb", "us", "ms", "s", "min", "h", "d",
                ];
                if let Some(Token::Word(w)) = self.get(self.i + 1) {
                    if w.quote_style.is_none()
                        && UNITS.contains(&w.value.to_ascii_lowercase().as_str())
                    {
                        n.push_str(&w.value);
                        self.i += 1;
                    }
                }
                n
            }
            Some(Token::Minus) => {
                self.i += 1;
                return Ok(format!("-{}", self.value()?));
            }
            Some(Token::Plus) => {
                self.i += 1;
                return self.value();
            }
            _ => return Err(self.near()),
        };
        self.i += 1;
        Ok(v)
    }
    pub(crate) fn end(&self) -> SqlResult<()> {
        if self.at_end() {
            Ok(())
        } else {
            Err(self.near())
        }
    }
}

/// VACUUM's or ANALYZE's parenthesized options, after the `(`, each with an
/// optional boolean: those `allowed` are returned set or not (VERBOSE, ANALYZE,
/// SKIP_LOCKED); any other is refused (0A000), never skipped.
fn maintenance_options(
    k: &mut Toks,
    verb: &str,
    allowed: &[&str],
) -> SqlResult<Vec<(String, bool)>> {
    let mut out = Vec::new();
    loop {
        let Some(opt) = k.peek_word(0) else {
            return Err(SqlError::syntax(format!("syntax error in {verb} options")));
        };
        if !allowed.contains(&opt.as_str()) {
            return Err(SqlError::unsupported(format!("{verb} option {opt}")));
        }
        k.i += 1;
        let mut on = true;
        for (b, v) in [
            ("TRUE", true),
            ("FALSE", false),
            ("ON", true),
            ("OFF", false),
        ] {
            if k.word(b) {
                on = v;
                break;
            }
        }
        out.push((opt, on));
        if k.tok(&Token::RParen) {
            return Ok(out);
        }
        if !k.tok(&Token::Comma) {
            return Err(SqlError::syntax(format!("syntax error in {verb} options")));
        }
    }
}

/// A maintenance command's table name: `name` or `public.name`.
fn maintenance_table(k: &mut Toks) -> SqlResult<String> {
    let n = k.ident()?;
    if !k.tok(&Token::Period) {
        return Ok(n);
    }
    let t = k.ident()?;
    match n.as_str() {
        "public" => Ok(t),
        "pg_temp" => Ok(format!("pg_temp.{t}")),
        _ => Err(SqlError::new(
            "3F000",
            format!("schema \"{n}\" does not exist"),
        )),
    }
}

/// VACUUM [ ( options ) ] [ VERBOSE ] [ ANALYZE ] [ table ]: FULL and FREEZE refused.
fn parse_vacuum(k: &mut Toks) -> SqlResult<Stmt> {
    k.i += 1;
    let mut analyze = false;
    if k.tok(&Token::LParen) {
        for (o, on) in maintenance_options(k, "VACUUM", &["VERBOSE", "ANALYZE"])? {
            analyze |= o == "ANALYZE" && on;
        }
    }
    for opt in ["FULL", "FREEZE"] {
        if k.word(opt) {
            return Err(SqlError::unsupported(format!("VACUUM {opt}")));
        }
    }
    // VERBOSE's report is not written.
    k.word("VERBOSE");
    analyze |= k.word("ANALYZE") || k.word("ANALYSE");
    let table = if k.at_end() {
        None
    } else {
        Some(maintenance_table(k)?)
    };
    k.end()?;
    Ok(Stmt::Utility(Utility::Vacuum { table, analyze }))
}

/// ANALYZE | ANALYSE [ ( options ) | VERBOSE ] [ table [ ( column, ... ) ], ... ].
fn parse_analyze(k: &mut Toks) -> SqlResult<Stmt> {
    k.i += 1;
    let mut verbose = false;
    if k.tok(&Token::LParen) {
        for (o, on) in maintenance_options(k, "ANALYZE", &["VERBOSE", "SKIP_LOCKED"])? {
            verbose |= o == "VERBOSE" && on;
        }
    } else {
        verbose = k.word("VERBOSE");
    }
    let mut targets = Vec::new();
    while !k.at_end() {
        let table = maintenance_table(k)?;
        let mut cols = Vec::new();
        if k.tok(&Token::LParen) {
            loop {
                cols.push(k.ident()?);
                if k.tok(&Token::RParen) {
                    break;
                }
                if !k.tok(&Token::Comma) {
                    return Err(k.near());
                }
            }
        }
        targets.push((table, cols));
        if !k.tok(&Token::Comma) {
            break;
        }
    }
    k.end()?;
    Ok(Stmt::Utility(Utility::Analyze { targets, verbose }))
}

/// COPY's boolean options as PostgreSQL takes them (`FREEZE on`, `HEADER off`,
/// what `pgbench -i` sends), in the TRUE / FALSE sqlparser expects.
fn copy_booleans(mut toks: Vec<TokenWithSpan>) -> Vec<TokenWithSpan> {
    for i in 1..toks.len() {
        let opt = matches!(&toks[i - 1].token, Token::Word(w)
            if w.value.eq_ignore_ascii_case("freeze") || w.value.eq_ignore_ascii_case("header"));
        if let (true, Token::Word(w)) = (opt, &toks[i].token) {
            let v = w.value.to_ascii_lowercase();
            if v == "on" || v == "off" {
                let kw = if v == "on" { "TRUE" } else { "FALSE" };
                toks[i].token = Token::make_keyword(kw);
            }
        }
    }
    toks
}

/// Statements sqlparser parses whole (sql rule 3).
const SQLPARSER_VERBS: [&str; 11] = [
    "SELECT", "WITH", "INSERT", "DELETE", "UPDATE", "COPY", "CREATE", "DROP", "TRUNCATE", "TABLE",
    "EXPLAIN",
];

fn parse_one(tokens: Vec<TokenWithSpan>) -> SqlResult<Stmt> {
    let mut k = Toks::new(tokens);
    if k.at_end() {
        return Ok(Stmt::Empty);
    }
    let w0 = k.peek_word(0).unwrap_or_default();
    let w1 = k.peek_word(1).unwrap_or_default();
    match (w0.as_str(), w1.as_str()) {
        ("CREATE", "TABLESPACE") => parse_create_tablespace(&mut k),
        ("DROP", "TABLESPACE") => {
            k.i += 2;
            let if_exists = k.words(&["IF", "EXISTS"]);
            let name = k.ident()?;
            k.end()?;
            Ok(Stmt::Ddl(Ddl::DropTablespace { name, if_exists }))
        }
        ("CREATE", "DATABASE") => parse_create_database(&mut k),
        ("DROP", "DATABASE") => parse_drop_database(&mut k),
        ("VACUUM", _) => parse_vacuum(&mut k),
        ("ANALYZE", _) | ("ANALYSE", _) => parse_analyze(&mut k),
        ("CHECKPOINT", _) => {
            k.i += 1;
            k.end()?;
            Ok(Stmt::Utility(Utility::Checkpoint))
        }
        ("SET", _) | ("RESET", _) => match roles::parse_set_role(&mut k)? {
            Some(a) => Ok(Stmt::Access(a)),
            None => parse_set(&mut k),
        },
        ("SHOW", _) => {
            k.i += 1;
            let name = if k.word("ALL") {
                "all".into()
            } else if k.words(&["TRANSACTION", "ISOLATION", "LEVEL"]) {
                "transaction_isolation".into()
            } else if k.words(&["TIME", "ZONE"]) {
                "timezone".into()
            } else {
                k.dotted_ident()?
            };
            k.end()?;
            Ok(Stmt::Utility(Utility::Show { name }))
        }
        ("CREATE", "ROLE") | ("CREATE", "USER") | ("CREATE", "GROUP") => {
            let a = roles::parse_create(&mut k)?;
            Ok(Stmt::Access(a))
        }
        ("ALTER", "ROLE") | ("ALTER", "USER") | ("ALTER", "GROUP") => {
            Ok(Stmt::Access(roles::parse_alter(&mut k)?))
        }
        ("DROP", "ROLE") | ("DROP", "USER") | ("DROP", "GROUP") => {
            Ok(Stmt::Access(roles::parse_drop(&mut k)?))
        }
        ("GRANT", _) | ("REVOKE", _) => Ok(Stmt::Access(roles::parse_grant(&mut k)?)),
        ("REASSIGN", "OWNED") | ("DROP", "OWNED") => Ok(Stmt::Access(roles::parse_owned(&mut k)?)),
        ("ALTER", "TABLE" | "SEQUENCE" | "DATABASE" | "TABLESPACE" | "SCHEMA") if owner_to(&k) => {
            parse_alter_owner(&mut k)
        }
        ("BEGIN", _)
        | ("START", "TRANSACTION")
        | ("COMMIT", _)
        | ("END", _)
        | ("ROLLBACK", _)
        | ("ABORT", _)
        | ("SAVEPOINT", _)
        | ("RELEASE", _) => parse_txn_control(&mut k, &w0),
        ("PREPARE", _) => {
            k.i += 1;
            prepare::parse_prepare(&mut k, parse_one)
        }
        ("EXECUTE", _) => {
            k.i += 1;
            prepare::parse_execute(&mut k)
        }
        ("DEALLOCATE", _) => {
            k.i += 1;
            prepare::parse_deallocate(&mut k)
        }
        ("VALUES", _) | ("ALTER", "TABLE") => parse_with_sqlparser(std::mem::take(&mut k.t)),
        ("COPY", _) => parse_with_sqlparser(copy_booleans(std::mem::take(&mut k.t))),
        (w, _) if SQLPARSER_VERBS.contains(&w) => parse_with_sqlparser(std::mem::take(&mut k.t)),
        _ => {
            // Parse it anyway, for a precise 42601, else name it as unsupported.
            let verb = if w1.is_empty() || !k.get(1).is_some_and(is_keyword) {
                w0.clone()
            } else {
                format!("{w0} {w1}")
            };
            match parse_with_sqlparser(k.t.clone()) {
                Err(e) if e.code == "42601" => Err(e),
                _ if verb.is_empty() => Err(k.near()),
                _ => Err(SqlError::unsupported(verb)),
            }
        }
    }
}

/// BEGIN/START TRANSACTION, COMMIT/END, ROLLBACK/ABORT [TO SAVEPOINT], SAVEPOINT,
/// RELEASE; `w0` is the first word, upper-cased.
fn parse_txn_control(k: &mut Toks, w0: &str) -> SqlResult<Stmt> {
    match w0 {
        "BEGIN" | "START" => {
            k.i += if w0 == "BEGIN" { 1 } else { 2 };
            let _ = k.word("WORK") || k.word("TRANSACTION");
            let modes = parse_txn_modes(k)?;
            Ok(Stmt::Control(Control::Begin { modes }))
        }
        "COMMIT" | "END" => {
            k.i += 1;
            let _ = k.word("WORK") || k.word("TRANSACTION");
            k.end()?;
            Ok(Stmt::Control(Control::Commit))
        }
        "ROLLBACK" | "ABORT" => {
            k.i += 1;
            let _ = k.word("WORK") || k.word("TRANSACTION");
            if k.word("TO") {
                return savepoint(k, "ROLLBACK TO SAVEPOINT");
            }
            k.end()?;
            Ok(Stmt::Control(Control::Rollback))
        }
        "SAVEPOINT" => {
            k.i += 1;
            k.ident()?;
            k.end()?;
            Ok(Stmt::Control(Control::Savepoint { verb: "SAVEPOINT" }))
        }
        "RELEASE" => {
            k.i += 1;
            savepoint(k, "RELEASE SAVEPOINT")
        }
        _ => Err(k.near()),
    }
}

/// The rest of `ROLLBACK TO [SAVEPOINT] name` or `RELEASE [SAVEPOINT] name`.
fn savepoint(k: &mut Toks, verb: &'static str) -> SqlResult<Stmt> {
    k.word("SAVEPOINT");
    k.ident()?;
    k.end()?;
    Ok(Stmt::Control(Control::Savepoint { verb }))
}

/// An unquoted SQL keyword (`INDEX` in `CREATE INDEX`, not `t` in `UPDATE t`).
fn is_keyword(t: &Token) -> bool {
    matches!(t, Token::Word(w) if w.quote_style.is_none()
        && w.keyword != sqlparser::keywords::Keyword::NoKeyword)
}

/// A transaction's modes (BEGIN, SET TRANSACTION): READ ONLY or READ WRITE, an
/// isolation level (READ COMMITTED, READ UNCOMMITTED — which PostgreSQL runs as
/// READ COMMITTED — or REPEATABLE READ; SERIALIZABLE is refused, 0A000, until
/// Strata has it), [NOT] DEFERRABLE (which matters only to a SERIALIZABLE READ
/// ONLY transaction).
fn parse_txn_modes(k: &mut Toks) -> SqlResult<TxnModes> {
    let mut modes = TxnModes::default();
    while !k.at_end() {
        if k.words(&["ISOLATION", "LEVEL"]) {
            if k.words(&["REPEATABLE", "READ"]) {
                modes.repeatable = Some(true);
            } else if k.words(&["READ", "COMMITTED"]) || k.words(&["READ", "UNCOMMITTED"]) {
                modes.repeatable = Some(false);
            } else if k.word("SERIALIZABLE") {
                return Err(isolation_unsupported());
            } else {
                return Err(k.near());
            }
        } else if k.words(&["READ", "WRITE"]) {
            modes.read_only = Some(false);
        } else if k.words(&["READ", "ONLY"]) {
            modes.read_only = Some(true);
        } else if k.word("DEFERRABLE") || k.words(&["NOT", "DEFERRABLE"]) {
        } else if !k.tok(&Token::Comma) {
            return Err(k.near());
        }
    }
    Ok(modes)
}

/// SERIALIZABLE, refused (never run as another level).
pub fn isolation_unsupported() -> SqlError {
    SqlError::unsupported("the SERIALIZABLE isolation level")
}

/// Whether an ALTER statement is `ALTER kind [IF EXISTS] name OWNER TO ...`.
fn owner_to(k: &Toks) -> bool {
    let n = if k.peek_word(2).as_deref() == Some("IF") {
        5
    } else {
        3
    };
    k.peek_word(n).as_deref() == Some("OWNER") && k.peek_word(n + 1).as_deref() == Some("TO")
}

/// ALTER TABLE | SEQUENCE | DATABASE | TABLESPACE | SCHEMA name OWNER TO role.
fn parse_alter_owner(k: &mut Toks) -> SqlResult<Stmt> {
    k.i += 1;
    let kind = match k.peek_word(0).as_deref() {
        Some("TABLE") => roles::ObjKind::Table,
        Some("SEQUENCE") => roles::ObjKind::Sequence,
        Some("DATABASE") => roles::ObjKind::Database,
        Some("TABLESPACE") => roles::ObjKind::Tablespace,
        _ => roles::ObjKind::Schema,
    };
    k.i += 1;
    if k.words(&["IF", "EXISTS"]) {
        return Err(SqlError::unsupported("ALTER ... IF EXISTS ... OWNER TO"));
    }
    let mut name = k.ident()?;
    if k.tok(&Token::Period) {
        let t = k.ident()?;
        name = schema_qualified(&name, &t)?;
    }
    k.expect_word("OWNER")?;
    k.expect_word("TO")?;
    let owner = if k.word("CURRENT_USER") || k.word("CURRENT_ROLE") {
        roles::RoleSpec::CurrentUser
    } else if k.word("SESSION_USER") {
        roles::RoleSpec::SessionUser
    } else {
        roles::RoleSpec::Name(k.ident()?)
    };
    k.end()?;
    Ok(Stmt::Access(roles::AccessStmt::AlterOwner {
        kind,
        name,
        owner,
    }))
}

/// `schema.name`: Strata has one schema, public (3F000 for another).
pub(crate) fn schema_qualified(schema: &str, name: &str) -> SqlResult<String> {
    if schema == "public" {
        Ok(name.to_string())
    } else {
        Err(SqlError::new(
            "3F000",
            format!("schema \"{schema}\" does not exist"),
        ))
    }
}

fn parse_create_tablespace(k: &mut Toks) -> SqlResult<Stmt> {
    k.i += 2;
    let name = k.ident()?;
    let owner = if k.word("OWNER") {
        Some(roles::role_spec(k)?)
    } else {
        None
    };
    k.expect_word("LOCATION")?;
    let location = k.string()?;
    if k.word("WITH") {
        return Err(SqlError::unsupported(
            "CREATE TABLESPACE ... WITH (options)",
        ));
    }
    k.end()?;
    Ok(Stmt::Ddl(Ddl::CreateTablespace {
        name,
        location,
        owner,
    }))
}

fn parse_create_database(k: &mut Toks) -> SqlResult<Stmt> {
    k.i += 2;
    let name = k.ident()?;
    let (mut template, mut tablespace, mut strategy, mut owner) = (None, None, None, None);
    k.word("WITH");
    while !k.at_end() {
        let opt = k.peek_word(0).ok_or_else(|| k.near())?;
        k.i += 1;
        k.tok(&Token::Eq);
        match opt.as_str() {
            "TEMPLATE" => template = Some(k.ident()?),
            "OWNER" => owner = Some(roles::role_spec(k)?),
            "TABLESPACE" => tablespace = Some(k.ident()?),
            "STRATEGY" => {
                let s = k.value()?;
                strategy = Some(match s.to_ascii_lowercase().as_str() {
                    "wal_log" => CreateDbStrategy::WalLog,
                    "file_copy" => CreateDbStrategy::FileCopy,
                    _ => {
                        return Err(SqlError::new(
                            "22023",
                            format!("invalid create database strategy \"{s}\""),
                        )
                        .with_hint("Valid strategies are \"wal_log\", and \"file_copy\"."))
                    }
                });
            }
            "ENCODING" | "LOCALE" | "LC_COLLATE" | "LC_CTYPE" | "CONNECTION"
            | "ALLOW_CONNECTIONS" | "IS_TEMPLATE" | "LOCALE_PROVIDER" | "ICU_LOCALE" => {
                if opt == "CONNECTION" {
                    k.expect_word("LIMIT")?;
                    k.tok(&Token::Eq);
                }
                database_option_held(&opt, &k.value()?)?;
            }
            _ => {
                k.i -= 1;
                return Err(k.near());
            }
        }
    }
    Ok(Stmt::Ddl(Ddl::CreateDatabase {
        name,
        template,
        tablespace,
        strategy,
        owner,
    }))
}

/// A CREATE DATABASE option Strata holds only at one value, given that value: every
/// database is UTF8 in the C locale (libc), connectable, not a template, with no
/// connection limit. Any other value is 0A000, never accepted and ignored.
fn database_option_held(opt: &str, value: &str) -> SqlResult<()> {
    let v = value.to_ascii_lowercase();
    let held = match opt {
        "ENCODING" => matches!(v.as_str(), "utf8" | "utf-8" | "unicode" | "6"),
        "LOCALE" | "LC_COLLATE" | "LC_CTYPE" => matches!(value, "C" | "POSIX"),
        "LOCALE_PROVIDER" => v == "libc",
        "CONNECTION" => v == "-1",
        "ALLOW_CONNECTIONS" => matches!(v.as_str(), "true" | "on" | "1" | "yes"),
        "IS_TEMPLATE" => matches!(v.as_str(), "false" | "off" | "0" | "no"),
        _ => false,
    };
    if held {
        return Ok(());
    }
    let what = match opt {
        "CONNECTION" => "CONNECTION LIMIT".to_string(),
        o => o.to_string(),
    };
    Err(SqlError::unsupported(format!(
        "CREATE DATABASE ... {what} {value} (Strata's databases are UTF8 in the C locale, connectable, not templates, without a connection limit)"
    )))
}

fn parse_drop_database(k: &mut Toks) -> SqlResult<Stmt> {
    k.i += 2;
    let if_exists = k.words(&["IF", "EXISTS"]);
    let name = k.ident()?;
    let mut force = false;
    if !k.at_end() {
        k.word("WITH");
        if !k.tok(&Token::LParen) {
            return Err(k.near());
        }
        loop {
            k.expect_word("FORCE")?;
            force = true;
            if !k.tok(&Token::Comma) {
                break;
            }
        }
        if !k.tok(&Token::RParen) {
            return Err(k.near());
        }
    }
    k.end()?;
    Ok(Stmt::Ddl(Ddl::DropDatabase {
        name,
        if_exists,
        force,
    }))
}

fn parse_set(k: &mut Toks) -> SqlResult<Stmt> {
    if k.word("RESET") {
        let name = if k.word("ALL") {
            "all".into()
        } else {
            k.dotted_ident()?
        };
        k.end()?;
        return Ok(Stmt::Utility(Utility::Set {
            name,
            value: None,
            local: false,
        }));
    }
    k.i += 1;
    let local = k.word("LOCAL");
    if !local {
        k.word("SESSION");
    }
    let session = !local && k.words(&["CHARACTERISTICS", "AS", "TRANSACTION"]);
    if session || k.word("TRANSACTION") {
        let modes = parse_txn_modes(k)?;
        return Ok(Stmt::Utility(Utility::SetTransaction { modes, session }));
    }
    let name = if k.words(&["TIME", "ZONE"]) {
        "timezone".to_string()
    } else {
        k.dotted_ident()?
    };
    if !(k.tok(&Token::Eq) || k.word("TO")) && name != "timezone" {
        return Err(k.near());
    }
    let value = if k.word("DEFAULT") || (name == "timezone" && k.word("LOCAL")) {
        None
    } else if name == "timezone" && k.word("INTERVAL") {
        // SET TIME ZONE INTERVAL '-08:00' [HOUR TO MINUTE]: the interval's text.
        let body = k.value()?;
        while !k.at_end() {
            k.i += 1;
        }
        Some(format!("interval '{body}'"))
    } else {
        let mut parts = vec![k.value()?];
        while k.tok(&Token::Comma) {
            parts.push(k.value()?);
        }
        Some(parts.join(", "))
    };
    k.end()?;
    Ok(Stmt::Utility(Utility::Set { name, value, local }))
}

pub(crate) fn ident_name(i: &ast::Ident) -> String {
    if i.quote_style.is_some() {
        i.value.clone()
    } else {
        i.value.to_ascii_lowercase()
    }
}

/// An object name: `name` or `public.name` (Strata has one schema).
pub fn object_name(n: &ast::ObjectName) -> SqlResult<String> {
    let parts: Vec<String> =
        n.0.iter()
            .map(|p| match p.as_ident() {
                Some(i) => Ok(ident_name(i)),
                None => Err(SqlError::syntax(format!("invalid name \"{n}\""))),
            })
            .collect::<SqlResult<_>>()?;
    match parts.as_slice() {
        [t] => Ok(t.clone()),
        [s, t] if s == "public" => Ok(t.clone()),
        // The session's temporary schema (temp rule 1), by either of its names.
        [s, t] if s == "pg_temp" || s.starts_with("pg_temp_") => Ok(format!("pg_temp.{t}")),
        _ => Err(SqlError::new(
            "3F000",
            format!("schema of \"{n}\" does not exist (Strata has only \"public\")"),
        )),
    }
}

/// An INSERT's source: a plain VALUES list, its rows moved out of the tree (never
/// copied: item 16), or a query.
/// Whether a query is `WITH ... INSERT / UPDATE / DELETE`.
fn dml_body(q: &ast::Query) -> bool {
    matches!(
        *q.body,
        ast::SetExpr::Insert(_) | ast::SetExpr::Update(_) | ast::SetExpr::Delete(_)
    )
}

/// `WITH ctes INSERT / UPDATE / DELETE` (sql rule 8): the CTEs go where the
/// statement can read them — an INSERT's query, an UPDATE's FROM, a DELETE's
/// USING. A data-modifying CTE is 0A000; so is a CTE that a VALUES list or a
/// statement without FROM could only reach through a subquery.
fn with_dml(q: ast::Query) -> SqlResult<Stmt> {
    let ast::Query { with, body, .. } = q;
    let Some(with) = with else {
        return Err(SqlError::unsupported("this query form"));
    };
    if with.cte_tables.iter().any(|c| dml_body(&c.query)) {
        return Err(SqlError::unsupported("data-modifying statements in WITH"));
    }
    let inner = match *body {
        ast::SetExpr::Insert(s) | ast::SetExpr::Update(s) | ast::SetExpr::Delete(s) => s,
        _ => unreachable!("dml_body"),
    };
    let unreachable =
        || SqlError::unsupported("WITH before this statement (put the WITH in its query)");
    let mentions_query = |text: String| text.to_ascii_lowercase().contains("select");
    Ok(match convert(inner)? {
        Stmt::Insert {
            table,
            columns,
            source,
            returning,
            on_conflict,
        } => {
            let source = match source {
                InsertSource::Query(mut q) => {
                    q.with = Some(merge_with(with, q.with.take()));
                    InsertSource::Query(q)
                }
                InsertSource::Values(rows) => {
                    if rows.iter().flatten().any(|e| mentions_query(e.to_string())) {
                        return Err(unreachable());
                    }
                    InsertSource::Values(rows)
                }
                InsertSource::Rows(_) => return Err(unreachable()),
            };
            if on_conflict
                .as_ref()
                .is_some_and(|oc| mentions_query(format!("{oc:?}")))
            {
                return Err(unreachable());
            }
            Stmt::Insert {
                table,
                columns,
                source,
                returning,
                on_conflict,
            }
        }
        Stmt::Update {
            table,
            alias,
            assignments,
            from,
            selection,
            returning,
            ..
        } => {
            // Without FROM only a subquery could read a CTE.
            let reads = format!("{assignments:?} {selection:?} {returning:?}");
            if from.is_empty() && mentions_query(reads) {
                return Err(unreachable());
            }
            Stmt::Update {
                table,
                alias,
                assignments,
                with: (!from.is_empty()).then(|| Box::new(with)),
                from,
                selection,
                returning,
            }
        }
        Stmt::Delete {
            table,
            alias,
            using,
            selection,
            returning,
            ..
        } => {
            if using.is_empty() && mentions_query(format!("{selection:?} {returning:?}")) {
                return Err(unreachable());
            }
            Stmt::Delete {
                table,
                alias,
                with: (!using.is_empty()).then(|| Box::new(with)),
                using,
                selection,
                returning,
            }
        }
        _ => return Err(unreachable()),
    })
}

/// Whether a query's WITH has a data-modifying CTE.
fn modifies_in_with(q: &ast::Query) -> bool {
    q.with
        .as_ref()
        .is_some_and(|w| w.cte_tables.iter().any(|c| dml_body(&c.query)))
}

/// A query with a WITH the session runs item by item ([`Stmt::With`]).
fn with_stmt(mut q: ast::Query) -> SqlResult<Stmt> {
    let mut refs: std::collections::HashMap<String, usize> = Default::default();
    let _ = ast::visit_relations(&q, |r| {
        if let Ok(n) = object_name(r) {
            *refs.entry(n).or_default() += 1;
        }
        std::ops::ControlFlow::<()>::Continue(())
    });
    let with = q.with.take().expect("a WITH");
    let mut ctes = Vec::with_capacity(with.cte_tables.len());
    for c in with.cte_tables {
        if !dml_body(&c.query) {
            ctes.push(WithItem::Query(Box::new(c)));
            continue;
        }
        if c.materialized.is_some() || c.from.is_some() {
            return Err(SqlError::unsupported(format!("the CTE {c}")));
        }
        let name = ident_name(&c.alias.name);
        if with.recursive && names_relation(&c.query, &name) {
            return Err(SqlError::new(
                "42P19",
                format!("recursive query \"{name}\" must not contain data-modifying statements"),
            )
            .at(c.alias.name.span));
        }
        let stmt = match c.query.with.is_some() {
            true => with_dml(*c.query)?,
            false => dml_statement(*c.query.body)?,
        };
        ctes.push(WithItem::Modify {
            name: ident_name(&c.alias.name),
            columns: c
                .alias
                .columns
                .iter()
                .map(|col| ident_name(&col.name))
                .collect(),
            stmt: Box::new(stmt),
        });
    }
    let main = match dml_body(&q) {
        true => dml_statement(*q.body)?,
        false => Stmt::Select(Box::new(q)),
    };
    let w = WithStmt {
        recursive: with.recursive,
        ctes,
        main,
    };
    with_conflict(&w, &refs)?;
    Ok(Stmt::With(Box::new(w)))
}

/// With rule 4 (`session/with_stmt.rs`): 0A000 when a table a data-modifying CTE
/// changes is named anywhere else in the statement (`refs`: how often each table
/// is named), but as an INSERT's target.
fn with_conflict(w: &WithStmt, refs: &std::collections::HashMap<String, usize>) -> SqlResult<()> {
    let target = |s: &Stmt| match s {
        Stmt::Insert { table, .. } => Some((table.clone(), true)),
        Stmt::Update { table, .. } | Stmt::Delete { table, .. } => Some((table.clone(), false)),
        _ => None,
    };
    let mut changed = Vec::new();
    let mut taken: std::collections::HashMap<String, usize> = Default::default();
    for item in &w.ctes {
        if let WithItem::Modify { stmt, .. } = item {
            let (t, _) = target(stmt).ok_or_else(|| SqlError::unsupported("this WITH query"))?;
            *taken.entry(t.clone()).or_default() += 1;
            changed.push(t);
        }
    }
    if let Some((t, true)) = target(&w.main) {
        *taken.entry(t).or_default() += 1;
    }
    for t in changed {
        if refs.get(&t).copied().unwrap_or(0) > taken.get(&t).copied().unwrap_or(0) {
            return Err(SqlError::unsupported(format!(
                "a statement that reads or changes table \"{t}\" besides a data-modifying WITH query that changes it (PostgreSQL runs both on one snapshot; Strata would run them in turn)"
            )));
        }
    }
    Ok(())
}

/// Whether `q` names the relation `name` anywhere.
fn names_relation(q: &ast::Query, name: &str) -> bool {
    ast::visit_relations(q, |r| match object_name(r) {
        Ok(n) if n == name => std::ops::ControlFlow::Break(()),
        _ => std::ops::ControlFlow::Continue(()),
    })
    .is_break()
}

/// The INSERT, UPDATE or DELETE of a query body.
fn dml_statement(body: ast::SetExpr) -> SqlResult<Stmt> {
    match body {
        ast::SetExpr::Insert(s) | ast::SetExpr::Update(s) | ast::SetExpr::Delete(s) => convert(s),
        other => Err(SqlError::unsupported(format!("the statement {other}"))),
    }
}

/// An outer WITH put in front of a query's own: the query's CTEs hide the outer
/// ones of the same name.
fn merge_with(outer: ast::With, inner: Option<ast::With>) -> ast::With {
    let Some(mut inner) = inner else {
        return outer;
    };
    let hidden = |c: &ast::Cte| {
        inner
            .cte_tables
            .iter()
            .any(|i| i.alias.name == c.alias.name)
    };
    let mut ctes: Vec<ast::Cte> = outer
        .cte_tables
        .into_iter()
        .filter(|c| !hidden(c))
        .collect();
    ctes.append(&mut inner.cte_tables);
    inner.cte_tables = ctes;
    inner.recursive |= outer.recursive;
    inner
}

/// Whether `node` holds a query (a subquery anywhere in its expressions).
fn holds_query<T: ast::Visit>(node: &T) -> bool {
    struct Finder;
    impl ast::Visitor for Finder {
        type Break = ();
        fn pre_visit_query(&mut self, _: &ast::Query) -> std::ops::ControlFlow<()> {
            std::ops::ControlFlow::Break(())
        }
    }
    node.visit(&mut Finder).is_break()
}

/// Whether a VALUES item is the keyword DEFAULT (the column's default).
pub(crate) fn is_default_keyword(e: &ast::Expr) -> bool {
    matches!(e, ast::Expr::Identifier(id) if id.quote_style.is_none() && id.value.eq_ignore_ascii_case("default"))
}

/// INSERT's rows: a plain VALUES list is bound row by row (the session's fast
/// path); one whose rows hold a subquery (and no DEFAULT) is planned as a query,
/// whose VALUES evaluates subqueries.
fn insert_source(q: Box<ast::Query>) -> InsertSource {
    let plain = q.with.is_none() && q.order_by.is_none() && q.limit_clause.is_none();
    let subquery = match &*q.body {
        ast::SetExpr::Values(v) => {
            let mut items = v.rows.iter().flat_map(|r| &r.content);
            holds_query(&v.rows) && !items.any(is_default_keyword)
        }
        _ => false,
    };
    match *q {
        ast::Query { body, .. }
            if plain && !subquery && matches!(*body, ast::SetExpr::Values(_)) =>
        {
            let ast::SetExpr::Values(v) = *body else {
                unreachable!("matched as VALUES")
            };
            InsertSource::Values(v.rows.into_iter().map(|r| r.content).collect())
        }
        q => InsertSource::Query(Box::new(q)),
    }
}

/// `timestamp(p)`, `timestamptz(p)`, `time(p)`, `interval(p)`: p, the digits of a
/// second kept (sql rule 6: a column or cast rounds to them, as PostgreSQL's do).
fn time_precision(t: &ast::DataType) -> SqlResult<Option<u32>> {
    let s = t.to_string().to_ascii_lowercase();
    let Some((base, rest)) = s.split_once('(') else {
        return Ok(None);
    };
    let Some((m, after)) = rest.split_once(')') else {
        return Ok(None);
    };
    let name = format!("{} {}", base.trim(), after.trim());
    if !TIME_TYPES.contains(&name.trim()) {
        return Ok(None);
    }
    match m.trim().parse::<u32>() {
        Ok(p) if p <= 6 => Ok(Some(p)),
        _ => Err(SqlError::unsupported(format!(
            "{s}: a precision past 6 (Strata keeps microseconds)"
        ))),
    }
}

/// `numeric(p)` / `numeric(p, s)` (and `decimal`): the column's precision and scale
/// (22023 for a precision outside 1 ..= 1000 or a scale outside 0 ..= p, as
/// PostgreSQL 14).
fn numeric_typmod(t: &ast::DataType) -> SqlResult<Option<(u32, u32)>> {
    let info = match t {
        ast::DataType::Numeric(i) | ast::DataType::Decimal(i) | ast::DataType::Dec(i) => i,
        _ => return Ok(None),
    };
    let (p, sc) = match *info {
        ast::ExactNumberInfo::None => return Ok(None),
        ast::ExactNumberInfo::Precision(p) => (p, 0),
        ast::ExactNumberInfo::PrecisionAndScale(p, sc) => (p, sc),
    };
    if !(1..=1000).contains(&p) {
        return Err(SqlError::new(
            "22023",
            format!("NUMERIC precision {p} must be between 1 and 1000"),
        ));
    }
    if sc < 0 || sc as u64 > p {
        return Err(SqlError::new(
            "22023",
            format!("NUMERIC scale {sc} must be between 0 and precision {p}"),
        ));
    }
    Ok(Some((p as u32, sc as u32)))
}

/// `varchar(n)` / `character varying(n)`: at most n characters; `char(n)` /
/// `character(n)` also blank-padded (`char` alone is `char(1)`), as PostgreSQL
/// (22023 for n out of 1 ..= 10485760).
fn char_length(t: &ast::DataType) -> SqlResult<(Option<u32>, bool)> {
    let s = t.to_string().to_ascii_lowercase();
    let (base, n) = match s.split_once('(') {
        Some((b, rest)) => (b.trim(), Some(rest.trim_end_matches(')').trim())),
        None => (s.trim(), None),
    };
    let (padded, name) = match base {
        "char" | "character" => (true, "char"),
        "varchar" | "character varying" => (false, "varchar"),
        _ => return Ok((None, false)),
    };
    let n = match n {
        None if padded => 1,
        None => return Ok((None, false)),
        Some(n) => n
            .parse::<i64>()
            .map_err(|_| SqlError::syntax(format!("invalid length for type {name}: {n}")))?,
    };
    if n < 1 {
        return Err(SqlError::new(
            "22023",
            format!("length for type {name} must be at least 1"),
        ));
    }
    if n > 10_485_760 {
        return Err(SqlError::new(
            "22023",
            format!("length for type {name} cannot exceed 10485760"),
        ));
    }
    Ok((Some(n as u32), padded))
}

/// A DEFAULT or CHECK expression, stored as SQL text, parsed back.
pub fn parse_default(text: &str) -> SqlResult<ast::Expr> {
    let dialect = PostgreSqlDialect {};
    let toks = tokens(text, None).map_err(|e| SqlError::syntax(e.to_string()))?;
    Parser::new(&dialect)
        .with_recursion_limit(PARSER_RECURSION_LIMIT)
        .with_tokens_with_locations(toks)
        .parse_expr()
        .map_err(|e| SqlError::syntax(format!("invalid expression {text:?}: {e}")))
}

/// `ONLY` before a table name (FROM, JOIN, UPDATE, DELETE, TRUNCATE, LOCK, ALTER
/// TABLE) dropped: it excludes a table's inheritance children, and Strata's tables
/// have none (no INHERITS, no partitions), so the table alone is what ONLY reads.
/// ONLY is reserved in PostgreSQL, so after these words it cannot be a name.
fn drop_only(mut tokens: Vec<TokenWithSpan>) -> Vec<TokenWithSpan> {
    let kw = |t: &Token| match t {
        Token::Word(w) if w.quote_style.is_none() => w.keyword,
        _ => Keyword::NoKeyword,
    };
    let mut i = 1;
    // Whether the last clause keyword of tokens[..seen] is FROM (a comma there
    // separates FROM items), kept as `i` moves: one pass, however many commas.
    let (mut in_from, mut seen) = (false, 0);
    while i + 1 < tokens.len() {
        while seen < i {
            if let Some(f) = from_clause(kw(&tokens[seen].token)) {
                in_from = f;
            }
            seen += 1;
        }
        let only = kw(&tokens[i].token) == Keyword::ONLY;
        let before = matches!(
            kw(&tokens[i - 1].token),
            Keyword::FROM | Keyword::JOIN | Keyword::UPDATE | Keyword::TRUNCATE | Keyword::TABLE
        ) || (tokens[i - 1].token == Token::Comma && in_from);
        let name_after = matches!(tokens[i + 1].token, Token::Word(_) | Token::LParen);
        if only && before && name_after {
            tokens.remove(i);
        } else {
            i += 1;
        }
    }
    tokens
}

/// `CREATE [OR REPLACE] [TEMP] RECURSIVE VIEW v (cols) AS q` as PostgreSQL's
/// grammar reads it: `CREATE ... VIEW v AS WITH RECURSIVE v (cols) AS (q) SELECT
/// cols FROM v`. Other statements are returned as they are.
fn recursive_view(tokens: Vec<TokenWithSpan>) -> Vec<TokenWithSpan> {
    let kw = |t: &TokenWithSpan| match &t.token {
        Token::Word(w) if w.quote_style.is_none() => w.keyword,
        _ => Keyword::NoKeyword,
    };
    let Some(r) = tokens
        .iter()
        .take(6)
        .position(|t| kw(t) == Keyword::RECURSIVE)
    else {
        return tokens;
    };
    let head_ok = kw(&tokens[0]) == Keyword::CREATE
        && tokens[1..r].iter().all(|t| {
            matches!(
                kw(t),
                Keyword::OR | Keyword::REPLACE | Keyword::TEMP | Keyword::TEMPORARY
            )
        });
    if !head_ok || tokens.get(r + 1).map(kw) != Some(Keyword::VIEW) {
        return tokens;
    }
    let Some(open) = tokens[r + 2..]
        .iter()
        .position(|t| t.token == Token::LParen)
    else {
        return tokens;
    };
    let open = r + 2 + open;
    let Some(close) = tokens[open..].iter().position(|t| t.token == Token::RParen) else {
        return tokens;
    };
    let close = open + close;
    if tokens.get(close + 1).map(kw) != Some(Keyword::AS) || open == r + 2 {
        return tokens;
    }
    let name = tokens[open - 1].clone();
    let cols: Vec<TokenWithSpan> = tokens[open + 1..close].to_vec();
    let end = match tokens.last() {
        Some(t) if t.token == Token::SemiColon => tokens.len() - 1,
        _ => tokens.len(),
    };
    let t = |tok: Token| TokenWithSpan::new(tok, Span::empty());
    let word = |w: &str| t(Token::make_keyword(w));
    let mut out: Vec<TokenWithSpan> = tokens[..r].to_vec();
    out.extend(tokens[r + 1..open].iter().cloned());
    out.extend([
        word("AS"),
        word("WITH"),
        word("RECURSIVE"),
        name.clone(),
        t(Token::LParen),
    ]);
    out.extend(cols.iter().cloned());
    out.extend([t(Token::RParen), word("AS"), t(Token::LParen)]);
    out.extend(tokens[close + 2..end].iter().cloned());
    out.extend([t(Token::RParen), word("SELECT")]);
    out.extend(cols);
    out.extend([word("FROM"), name]);
    out.extend(tokens[end..].iter().cloned());
    out
}

/// Whether a clause keyword opens a FROM list (Some(true)) or another clause
/// (Some(false)); None for any other token.
fn from_clause(k: Keyword) -> Option<bool> {
    match k {
        Keyword::FROM => Some(true),
        Keyword::SELECT
        | Keyword::WHERE
        | Keyword::SET
        | Keyword::GROUP
        | Keyword::ORDER
        | Keyword::VALUES
        | Keyword::RETURNING => Some(false),
        _ => None,
    }
}

fn parse_with_sqlparser(tokens: Vec<TokenWithSpan>) -> SqlResult<Stmt> {
    let tokens = recursive_view(drop_only(frames::rewrite(tokens)));
    let dialect = PostgreSqlDialect {};
    let mut p = Parser::new(&dialect)
        .with_recursion_limit(PARSER_RECURSION_LIMIT)
        .with_tokens_with_locations(tokens);
    let st = if p.parse_keywords(&[Keyword::CREATE, Keyword::SEQUENCE]) {
        let st = sequences::parse_create(&mut p)?;
        if p.peek_token().token != Token::EOF {
            return Err(SqlError::syntax(format!(
                "syntax error at or near \"{}\"",
                p.peek_token().token
            )));
        }
        return Ok(st);
    } else {
        p.parse_statement()
    };
    let st = st.map_err(|e| {
        if let sqlparser::parser::ParserError::RecursionLimitExceeded = e {
            return too_deep();
        }
        let m = e.to_string();
        let m = m.strip_prefix("sql parser error: ").unwrap_or(&m);
        // sqlparser's " at Line: l, Column: c" is the error's location (sql rule 7).
        let (m, location) = match m.rsplit_once(" at Line: ") {
            Some((head, at)) => {
                let mut nums = at.split(", Column: ").map(|x| x.trim().parse::<u64>().ok());
                match (nums.next().flatten(), nums.next().flatten()) {
                    (Some(l), Some(c)) => (head.to_string(), Some((l, c))),
                    _ => (m.to_string(), None),
                }
            }
            None => (m.to_string(), None),
        };
        // PostgreSQL's form: syntax error at or near "token" (sqlparser's detail as hint).
        let mut err = match m.split_once("found: ") {
            Some((_, tok)) if tok.trim() == "EOF" => {
                SqlError::syntax("syntax error at end of input").with_hint(m.clone())
            }
            Some((_, tok)) => {
                SqlError::syntax(format!("syntax error at or near \"{}\"", tok.trim()))
                    .with_hint(m.clone())
            }
            None => SqlError::syntax(format!("syntax error: {m}")),
        };
        err.location = location;
        err
    })?;
    if p.peek_token().token != Token::EOF {
        return Err(SqlError::syntax(format!(
            "syntax error at or near \"{}\"",
            p.peek_token().token
        )));
    }
    convert(st)
}

/// DROP TABLE, VIEW, INDEX or SEQUENCE.
fn convert_drop(
    object_type: ast::ObjectType,
    (if_exists, cascade): (bool, bool),
    names: &[ast::ObjectName],
) -> SqlResult<Stmt> {
    let names = names.iter().map(object_name).collect::<SqlResult<_>>()?;
    Ok(Stmt::Ddl(match object_type {
        ast::ObjectType::Table => Ddl::DropTable {
            names,
            if_exists,
            cascade,
        },
        ast::ObjectType::View => Ddl::DropView {
            names,
            if_exists,
            cascade,
        },
        ast::ObjectType::Index => Ddl::DropIndex { names, if_exists },
        ast::ObjectType::Sequence => Ddl::DropSequence { names, if_exists },
        other => return Err(SqlError::unsupported(format!("DROP {other}"))),
    }))
}

fn convert(st: ast::Statement) -> SqlResult<Stmt> {
    use ast::Statement as S;
    match st {
        S::Query(q) if modifies_in_with(&q) => with_stmt(*q),
        S::Query(q) if dml_body(&q) => with_dml((*q).clone()).or_else(|e| match e.code {
            // CTEs the statement's clauses cannot take: the session binds them first.
            "0A000" if e.message.starts_with("WITH before") => with_stmt(*q),
            _ => Err(e),
        }),
        S::Query(q) => Ok(Stmt::Select(q)),
        S::Explain {
            describe_alias: ast::DescribeAlias::Explain,
            analyze,
            verbose,
            statement,
            format: None,
            options,
            query_plan: false,
            estimate: false,
        } => convert_explain(analyze, verbose, *statement, options.unwrap_or_default()),
        S::CreateTable(ct) => convert_create_table(ct),
        S::CreateView(cv) => rewrite::convert_create_view(cv),
        S::Drop {
            object_type,
            if_exists,
            names,
            cascade,
            ..
        } => convert_drop(object_type, (if_exists, cascade), &names),
        S::Truncate(t) => convert_truncate(t),
        S::Insert(ins) => {
            let table = match &ins.table {
                ast::TableObject::TableName(n) => object_name(n)?,
                _ => return Err(SqlError::unsupported("INSERT INTO a table function")),
            };
            let on_conflict = match ins.on {
                None => None,
                Some(ast::OnInsert::OnConflict(oc)) => Some(convert_on_conflict(oc)?),
                Some(other) => return Err(SqlError::unsupported(format!("INSERT ... {other}"))),
            };
            let columns = if ins.columns.is_empty() {
                None
            } else {
                Some(
                    ins.columns
                        .iter()
                        .map(|c| match c.0.as_slice() {
                            [p] => p
                                .as_ident()
                                .map(ident_name)
                                .ok_or_else(|| SqlError::syntax(format!("invalid column \"{c}\""))),
                            _ => Err(SqlError::syntax(format!("invalid column \"{c}\""))),
                        })
                        .collect::<SqlResult<_>>()?,
                )
            };
            // DEFAULT VALUES: one row naming no column, so every column gets its
            // DEFAULT (or NULL).
            let (columns, source) = match ins.source {
                Some(q) => (columns, insert_source(q)),
                None => (Some(Vec::new()), InsertSource::Values(vec![Vec::new()])),
            };
            Ok(Stmt::Insert {
                table,
                columns,
                source,
                returning: ins.returning,
                on_conflict,
            })
        }
        S::AlterTable(at) => convert_alter_table(at),
        S::CreateIndex(ci) => convert_create_index(ci),
        S::CreateSequence { temporary, .. } if temporary => {
            Err(SqlError::unsupported("temporary sequences"))
        }
        S::Delete(d) => convert_delete(d),
        S::Update(u) => convert_update(u),
        S::Copy {
            source,
            to,
            target,
            options,
            legacy_options,
            values,
        } => convert_copy(source, to, target, &options, &legacy_options, &values),
        other => {
            let text = other.to_string();
            let verb: Vec<&str> = text.split_whitespace().take(2).collect();
            Err(SqlError::unsupported(verb.join(" ")))
        }
    }
}

/// TRUNCATE [TABLE] [ONLY] a, b [CONTINUE IDENTITY] [CASCADE | RESTRICT]: ONLY and
/// CASCADE are honoured (no table has children or foreign keys to follow); RESTART
/// IDENTITY and the other dialects' clauses are refused (sql rule 6).
fn convert_truncate(t: ast::Truncate) -> SqlResult<Stmt> {
    let ast::Truncate {
        table_names,
        partitions,
        table: _,
        if_exists,
        identity,
        cascade: _,
        on_cluster,
    } = t;
    refuse_given(&[
        (partitions.is_some(), "TRUNCATE ... PARTITION"),
        (
            identity == Some(ast::TruncateIdentityOption::Restart),
            "TRUNCATE ... RESTART IDENTITY",
        ),
        (if_exists || on_cluster.is_some(), "this form of TRUNCATE"),
    ])?;
    Ok(Stmt::Ddl(Ddl::Truncate {
        names: table_names
            .iter()
            .map(|t| object_name(&t.name))
            .collect::<SqlResult<_>>()?,
    }))
}

/// The columns of an index or constraint: plain column names, ascending, NULLs
/// last (Strata's B-tree order); anything else is 0A000.
fn index_columns(cols: &[ast::IndexColumn]) -> SqlResult<Vec<String>> {
    cols.iter()
        .map(|c| {
            let o = &c.column.options;
            let plain = c.operator_class.is_none()
                && matches!(o.sort, None | Some(ast::OrderBySort::Asc))
                && o.nulls_first != Some(true)
                && c.column.with_fill.is_none();
            match &c.column.expr {
                ast::Expr::Identifier(i) if plain => Ok(ident_name(i)),
                _ => Err(SqlError::unsupported(format!(
                    "index column \"{}\" (only plain columns, ascending, NULLS LAST)",
                    c.column
                ))),
            }
        })
        .collect()
}

/// Refuses the first clause given (sql rule 6): `(given, what)` pairs.
fn refuse_given(clauses: &[(bool, &str)]) -> SqlResult<()> {
    match clauses.iter().find(|(given, _)| *given) {
        Some((_, what)) => Err(SqlError::unsupported(what.to_string())),
        None => Ok(()),
    }
}

/// DEFERRABLE, INITIALLY DEFERRED and NOT ENFORCED are refused; their defaults
/// (NOT DEFERRABLE INITIALLY IMMEDIATE ENFORCED) are what Strata does.
fn constraint_characteristics(c: Option<&ast::ConstraintCharacteristics>) -> SqlResult<()> {
    let Some(ast::ConstraintCharacteristics {
        deferrable,
        initially,
        enforced,
    }) = c
    else {
        return Ok(());
    };
    refuse_given(&[
        (*deferrable == Some(true), "DEFERRABLE constraints"),
        (
            *initially == Some(ast::DeferrableInitial::Deferred),
            "INITIALLY DEFERRED constraints",
        ),
        (*enforced == Some(false), "NOT ENFORCED constraints"),
    ])
}

/// A PRIMARY KEY constraint (of a table or a column) as an index; what Strata
/// cannot honour in it is refused (sql rule 6).
fn primary_key(p: &ast::PrimaryKeyConstraint, name: Option<&ast::Ident>) -> SqlResult<IndexSpec> {
    let ast::PrimaryKeyConstraint {
        name: own_name,
        index_name,
        index_type,
        columns,
        include,
        index_options,
        characteristics,
    } = p;
    refuse_given(&[
        (index_type.is_some(), "USING in a constraint"),
        (!include.is_empty(), "INCLUDE in a constraint"),
        (!index_options.is_empty(), "index options in a constraint"),
    ])?;
    constraint_characteristics(characteristics.as_ref())?;
    let name = name.or(own_name.as_ref()).or(index_name.as_ref());
    Ok(IndexSpec::constraint(name, index_columns(columns)?, true))
}

/// A UNIQUE constraint (of a table or a column) as an index (sql rule 6).
fn unique(u: &ast::UniqueConstraint, name: Option<&ast::Ident>) -> SqlResult<IndexSpec> {
    let ast::UniqueConstraint {
        name: own_name,
        index_name,
        index_type_display,
        index_type,
        columns,
        include,
        index_options,
        characteristics,
        nulls_distinct,
    } = u;
    refuse_given(&[
        (
            index_type.is_some() || *index_type_display != ast::KeyOrIndexDisplay::None,
            "USING in a constraint",
        ),
        (!include.is_empty(), "INCLUDE in a constraint"),
        (!index_options.is_empty(), "index options in a constraint"),
        (
            matches!(nulls_distinct, ast::NullsDistinctOption::NotDistinct),
            "NULLS NOT DISTINCT",
        ),
    ])?;
    constraint_characteristics(characteristics.as_ref())?;
    let name = name.or(own_name.as_ref()).or(index_name.as_ref());
    Ok(IndexSpec::constraint(name, index_columns(columns)?, false))
}

/// A CHECK constraint's name (as given) and expression (sql rule 6: NO INHERIT and
/// NOT ENFORCED are refused).
fn check_constraint(c: &ast::CheckConstraint) -> SqlResult<(Option<String>, String)> {
    let ast::CheckConstraint {
        name,
        expr,
        no_inherit,
        enforced,
    } = c;
    refuse_given(&[
        (*no_inherit, "NO INHERIT (table inheritance)"),
        (*enforced == Some(false), "NOT ENFORCED constraints"),
    ])?;
    Ok((name.as_ref().map(ident_name), expr.to_string()))
}

/// A PRIMARY KEY or UNIQUE table constraint; `None` for any other kind.
fn table_index(c: &ast::TableConstraint) -> SqlResult<Option<IndexSpec>> {
    match c {
        ast::TableConstraint::PrimaryKey(p) => primary_key(p, None).map(Some),
        ast::TableConstraint::Unique(u) => unique(u, None).map(Some),
        _ => Ok(None),
    }
}

/// CREATE [UNIQUE] INDEX [IF NOT EXISTS] [name] ON t [USING btree] (cols).
/// Every clause but the name, table, `USING btree`, columns, UNIQUE and IF NOT
/// EXISTS is refused (sql rule 6).
fn convert_create_index(ci: ast::CreateIndex) -> SqlResult<Stmt> {
    let ast::CreateIndex {
        name,
        table_name,
        using,
        columns,
        unique,
        concurrently,
        if_not_exists,
        include,
        nulls_distinct,
        with,
        predicate,
        index_options,
        alter_options,
        r#async,
    } = ci;
    let btree = match &using {
        None => true,
        Some(u) => u.to_string().eq_ignore_ascii_case("btree"),
    };
    if !btree {
        return Err(SqlError::unsupported(format!(
            "access method \"{}\" (Strata has B-tree indexes)",
            using.as_ref().map(|u| u.to_string()).unwrap_or_default()
        )));
    }
    refuse_given(&[
        (concurrently || r#async, "CREATE INDEX CONCURRENTLY"),
        (!include.is_empty(), "CREATE INDEX ... INCLUDE"),
        (
            !with.is_empty(),
            "CREATE INDEX ... WITH (storage parameters)",
        ),
        (
            predicate.is_some(),
            "CREATE INDEX ... WHERE (partial indexes)",
        ),
        (nulls_distinct == Some(false), "NULLS NOT DISTINCT"),
        (
            !index_options.is_empty() || !alter_options.is_empty(),
            "these index options",
        ),
    ])?;
    Ok(Stmt::Ddl(Ddl::CreateIndex {
        table: object_name(&table_name)?,
        spec: IndexSpec {
            name: name.as_ref().map(object_name).transpose()?,
            columns: index_columns(&columns)?,
            unique,
            primary: false,
            constraint: false,
        },
        if_not_exists,
    }))
}

/// ALTER TABLE: RENAME TO, RENAME COLUMN, ADD COLUMN, DROP COLUMN, ADD/DROP of a
/// PRIMARY KEY or UNIQUE constraint; the rest is 0A000 (issue 14).
/// ALTER TABLE's table and its one action; the other dialects' clauses are refused.
/// ONLY is honoured: with inheritance refused, no table has children to skip.
fn alter_table_action(at: &ast::AlterTable) -> SqlResult<(String, &ast::AlterTableOperation)> {
    let ast::AlterTable {
        name,
        if_exists: _,
        only: _,
        operations,
        location,
        on_cluster,
        table_type,
        end_token: _,
    } = at;
    refuse_given(&[(
        location.is_some() || on_cluster.is_some() || table_type.is_some(),
        "this form of ALTER TABLE",
    )])?;
    let [op] = operations.as_slice() else {
        return Err(SqlError::unsupported("ALTER TABLE with several actions"));
    };
    Ok((object_name(name)?, op))
}

fn convert_alter_table(at: ast::AlterTable) -> SqlResult<Stmt> {
    use ast::AlterTableOperation as Op;
    let (table, op) = alter_table_action(&at)?;
    let (column, new_name) = match op {
        Op::AddColumn {
            if_not_exists,
            column_def,
            column_position: None,
            ..
        } => {
            return Ok(Stmt::Ddl(Ddl::AddColumn {
                column: add_column_def(&table, column_def)?,
                table,
                if_exists: at.if_exists,
                if_not_exists: *if_not_exists,
            }))
        }
        Op::DropColumn {
            column_names,
            if_exists,
            drop_behavior,
            ..
        } => {
            let ([c], None | Some(ast::DropBehavior::Restrict)) =
                (column_names.as_slice(), drop_behavior)
            else {
                return Err(SqlError::unsupported(
                    "ALTER TABLE ... DROP COLUMN with CASCADE or several columns",
                ));
            };
            return Ok(Stmt::Ddl(Ddl::DropColumn {
                table,
                if_exists: at.if_exists,
                column: ident_name(c),
                column_if_exists: *if_exists,
            }));
        }
        Op::AddConstraint {
            constraint,
            not_valid,
        } => return add_constraint(table, at.if_exists, constraint, *not_valid),
        Op::DropConstraint {
            if_exists,
            name,
            drop_behavior: None | Some(ast::DropBehavior::Restrict),
        } => {
            return Ok(Stmt::Ddl(Ddl::DropConstraint {
                table,
                if_exists: at.if_exists,
                name: ident_name(name),
                constraint_if_exists: *if_exists,
            }))
        }
        Op::RenameTable { table_name } => {
            let (ast::RenameTableNameKind::To(n) | ast::RenameTableNameKind::As(n)) = table_name;
            (None, object_name(n)?)
        }
        Op::RenameColumn {
            old_column_name,
            new_column_name,
        } => (
            Some(ident_name(old_column_name)),
            ident_name(new_column_name),
        ),
        other => {
            let text = other.to_string();
            let verb: Vec<&str> = text.split_whitespace().take(2).collect();
            return Err(SqlError::unsupported(format!(
                "ALTER TABLE ... {}",
                verb.join(" ")
            )));
        }
    };
    Ok(Stmt::Ddl(Ddl::Rename {
        table,
        if_exists: at.if_exists,
        column,
        new_name,
    }))
}

/// ON CONFLICT [(cols) | ON CONSTRAINT name] DO NOTHING | DO UPDATE SET ... [WHERE].
fn convert_on_conflict(oc: ast::OnConflict) -> SqlResult<OnConflict> {
    let (columns, constraint) = match &oc.conflict_target {
        None => (Vec::new(), None),
        Some(ast::ConflictTarget::Columns(c)) => (c.iter().map(ident_name).collect(), None),
        Some(ast::ConflictTarget::OnConstraint(n)) => (Vec::new(), Some(object_name(n)?)),
    };
    let update = match oc.action {
        ast::OnConflictAction::DoNothing => None,
        ast::OnConflictAction::DoUpdate(u) => {
            if columns.is_empty() && constraint.is_none() {
                return Err(SqlError::syntax(
                    "ON CONFLICT DO UPDATE requires inference specification or constraint name",
                )
                .with_hint("For example, ON CONFLICT (column_name)."));
            }
            Some((
                assignments(u.assignments, "ON CONFLICT DO UPDATE")?,
                u.selection,
            ))
        }
    };
    Ok(OnConflict {
        columns,
        constraint,
        update,
    })
}

/// ALTER TABLE ... ADD [CONSTRAINT] a PRIMARY KEY, UNIQUE or FOREIGN KEY (only a
/// FOREIGN KEY may be NOT VALID); any other constraint is 0A000.
fn add_constraint(
    table: String,
    if_exists: bool,
    constraint: &ast::TableConstraint,
    not_valid: bool,
) -> SqlResult<Stmt> {
    if let ast::TableConstraint::ForeignKey(fk) = constraint {
        let mut spec = foreign::spec(fk, None, None)?;
        spec.not_valid = not_valid;
        return Ok(Stmt::Ddl(Ddl::AddForeignKey {
            table,
            if_exists,
            spec,
        }));
    }
    match table_index(constraint)? {
        Some(spec) if !not_valid => Ok(Stmt::Ddl(Ddl::AddConstraint {
            table,
            if_exists,
            spec,
        })),
        _ => Err(SqlError::unsupported(format!(
            "ALTER TABLE ... ADD {constraint}{}",
            if not_valid { " NOT VALID" } else { "" }
        ))),
    }
}

/// ALTER TABLE ... ADD COLUMN's column: a PRIMARY KEY or UNIQUE on it is 0A000.
fn add_column_def(table: &str, c: &ast::ColumnDef) -> SqlResult<Column> {
    match convert_column(table, c)? {
        (col, ix, None, fks) if ix.is_empty() && fks.is_empty() => Ok(col),
        (_, ix, None, _) if ix.is_empty() => Err(SqlError::unsupported(
            "ALTER TABLE ... ADD COLUMN with REFERENCES (add the column, then the constraint)",
        )),
        (_, _, Some(_), _) => Err(SqlError::unsupported(
            "ALTER TABLE ... ADD COLUMN of a serial or identity column",
        )),
        _ => Err(SqlError::unsupported(
            "ALTER TABLE ... ADD COLUMN with PRIMARY KEY or UNIQUE (add the column, then the constraint)",
        )),
    }
}

/// The table a DELETE or UPDATE changes: its name and the alias it is given.
fn dml_target(t: &ast::TableFactor, verb: &str) -> SqlResult<(String, Option<String>)> {
    match t {
        ast::TableFactor::Table {
            name,
            alias,
            args: None,
            ..
        } => {
            if alias.as_ref().is_some_and(|a| !a.columns.is_empty()) {
                return Err(SqlError::syntax("syntax error at or near \"(\""));
            }
            Ok((
                object_name(name)?,
                alias.as_ref().map(|a| ident_name(&a.name)),
            ))
        }
        _ => Err(SqlError::unsupported(format!(
            "{verb} of this kind of table"
        ))),
    }
}

/// DELETE from one table, by name, [USING other tables].
fn convert_delete(d: ast::Delete) -> SqlResult<Stmt> {
    if d.limit.is_some() || !d.order_by.is_empty() {
        return Err(SqlError::unsupported("DELETE with LIMIT"));
    }
    let tables = match &d.from {
        ast::FromTable::WithFromKeyword(t) | ast::FromTable::WithoutKeyword(t) => t,
    };
    let [t] = tables.as_slice() else {
        return Err(SqlError::unsupported("DELETE from several tables"));
    };
    if !t.joins.is_empty() {
        return Err(SqlError::unsupported("DELETE with a join"));
    }
    let (table, alias) = dml_target(&t.relation, "DELETE")?;
    Ok(Stmt::Delete {
        table,
        alias,
        using: d.using.unwrap_or_default(),
        with: None,
        selection: d.selection,
        returning: d.returning,
    })
}

/// COPY between one table and the client (copy module).
fn convert_copy(
    source: ast::CopySource,
    to: bool,
    target: ast::CopyTarget,
    options: &[ast::CopyOption],
    legacy: &[ast::CopyLegacyOption],
    values: &[Option<String>],
) -> SqlResult<Stmt> {
    let ast::CopySource::Table {
        table_name,
        columns,
    } = source
    else {
        return Err(SqlError::unsupported("COPY (query) TO"));
    };
    let file = match (&target, to) {
        (ast::CopyTarget::Stdin, false) | (ast::CopyTarget::Stdout, true) => None,
        (ast::CopyTarget::Stdin, true) | (ast::CopyTarget::Stdout, false) => {
            return Err(SqlError::syntax(format!(
                "syntax error at or near \"{target}\""
            )))
        }
        (ast::CopyTarget::File { filename }, _) => Some(filename.clone()),
        _ => {
            return Err(SqlError::unsupported(format!("COPY with {target}"))
                .with_hint("Use psql's \\copy, which reads and writes files on the client."))
        }
    };
    if !values.is_empty() {
        return Err(SqlError::syntax(
            "COPY data must follow the statement, not be in it",
        ));
    }
    Ok(Stmt::Copy(CopyStmt {
        table: object_name(&table_name)?,
        columns: (!columns.is_empty()).then(|| columns.iter().map(ident_name).collect()),
        to,
        file,
        options: copy::CopyOptions::from_ast(options, legacy)?,
    }))
}

/// `SET col = expr, ...` of UPDATE or ON CONFLICT DO UPDATE (`verb`): plain columns.
fn assignments(list: Vec<ast::Assignment>, verb: &str) -> SqlResult<Assignments> {
    list.into_iter()
        .map(|a| match a.target {
            ast::AssignmentTarget::ColumnName(n) => match n.0.as_slice() {
                [p] => p
                    .as_ident()
                    .map(|i| (ident_name(i), a.value))
                    .ok_or_else(|| SqlError::syntax(format!("invalid column \"{n}\""))),
                _ => Err(SqlError::unsupported(format!(
                    "{verb} of a qualified column \"{n}\""
                ))),
            },
            ast::AssignmentTarget::Tuple(_) => Err(SqlError::unsupported(format!(
                "{verb} ... SET (a, b) = ..."
            ))),
        })
        .collect()
}

/// UPDATE of one table, by name, with `SET col = expr` assignments.
fn convert_update(u: ast::Update) -> SqlResult<Stmt> {
    if u.limit.is_some() || u.or.is_some() || !u.order_by.is_empty() {
        return Err(SqlError::unsupported("UPDATE with LIMIT or OR"));
    }
    if !u.table.joins.is_empty() {
        return Err(SqlError::unsupported("UPDATE with a join"));
    }
    let (table, alias) = dml_target(&u.table.relation, "UPDATE")?;
    let from = match u.from {
        None => Vec::new(),
        Some(ast::UpdateTableFromKind::AfterSet(f)) => f,
        Some(ast::UpdateTableFromKind::BeforeSet(_)) => {
            return Err(SqlError::syntax("syntax error at or near \"FROM\""))
        }
    };
    let assignments = assignments(u.assignments, "UPDATE")?;
    Ok(Stmt::Update {
        table,
        alias,
        from,
        with: None,
        assignments,
        selection: u.selection,
        returning: u.returning,
    })
}

/// A table's constraints: CHECKs kept on its first column, PRIMARY KEY and UNIQUE as
/// indexes, FOREIGN KEYs as specs. Unnamed CHECKs are `<table>_check`, numbered when
/// taken, as PostgreSQL names them.
fn table_constraints(
    table: &str,
    constraints: &[ast::TableConstraint],
    columns: &mut [Column],
    (indexes, fks): (&mut Vec<IndexSpec>, &mut Vec<foreign::FkSpec>),
) -> SqlResult<()> {
    for c in constraints {
        if let Some(ix) = table_index(c)? {
            indexes.push(ix);
            continue;
        }
        if let ast::TableConstraint::ForeignKey(fk) = c {
            fks.push(foreign::spec(fk, None, None)?);
            continue;
        }
        let ast::TableConstraint::Check(c) = c else {
            return Err(SqlError::unsupported(format!("table constraint {c}")));
        };
        let (given, expr) = check_constraint(c)?;
        let Some(first) = columns.first_mut() else {
            return Err(SqlError::unsupported("a CHECK on a table without columns"));
        };
        let name = match given {
            Some(n) => n,
            None => {
                let taken = |n: &str| first.checks.iter().any(|(x, _)| x == n);
                let mut n = format!("{table}_check");
                let mut k = 0;
                while taken(&n) {
                    k += 1;
                    n = format!("{table}_check{k}");
                }
                n
            }
        };
        first.checks.push((name, expr));
    }
    Ok(())
}

/// Whether a bare word may name a column in CREATE TABLE: PostgreSQL's ColId,
/// which takes no reserved keyword and no type-or-function-name keyword.
fn column_name_keyword_ok(word: &str) -> bool {
    strfn::RESERVED_KEYWORDS
        .binary_search(&word.to_ascii_lowercase().as_str())
        .is_err()
}

/// One column of CREATE TABLE or ALTER TABLE ... ADD COLUMN: its type, NULL/NOT
/// NULL, DEFAULT and CHECKs (`table` names the constraints and the errors), and its
/// PRIMARY KEY or UNIQUE constraint, if any.
fn convert_column(table: &str, c: &ast::ColumnDef) -> SqlResult<ConvertedColumn> {
    if c.name.quote_style.is_none() && !column_name_keyword_ok(&c.name.value) {
        // PostgreSQL's grammar takes no reserved keyword as a bare column name.
        return Err(
            SqlError::syntax(format!("syntax error at or near \"{}\"", c.name.value))
                .at(c.name.span),
        );
    }
    let serial = sequences::serial_column(c);
    let ty = match serial {
        Some(t) => t,
        None => SqlType::from_ast(&c.data_type)?.to_col()?,
    };
    let cname = ident_name(&c.name);
    let mut col = Column::new(&cname, ty);
    (col.max_chars, col.padded) = char_length(&c.data_type)?;
    col.numeric = numeric_typmod(&c.data_type)?;
    col.precision = time_precision(&c.data_type)?;
    let mut null_given = None;
    let mut indexes = Vec::new();
    let mut fks = Vec::new();
    let mut identity = None;
    for o in &c.options {
        if let Some(id) = sequences::identity_option(&o.option)? {
            identity = Some(id);
            continue;
        }
        match &o.option {
            ast::ColumnOption::PrimaryKey(p) => {
                let mut ix = primary_key(p, o.name.as_ref())?;
                ix.columns = vec![cname.clone()];
                indexes.push(ix);
            }
            ast::ColumnOption::Unique(u) => {
                let mut ix = unique(u, o.name.as_ref())?;
                ix.columns = vec![cname.clone()];
                indexes.push(ix);
            }
            ast::ColumnOption::Null | ast::ColumnOption::NotNull => {
                let not_null = matches!(o.option, ast::ColumnOption::NotNull);
                if null_given.is_some_and(|n| n != not_null) {
                    return Err(SqlError::syntax(format!(
                        "conflicting NULL/NOT NULL declarations for column \"{cname}\" of table \"{table}\""
                    )));
                }
                null_given = Some(not_null);
                col.not_null = not_null;
            }
            ast::ColumnOption::ForeignKey(fk) => {
                fks.push(foreign::spec(fk, Some(&cname), o.name.as_ref())?);
            }
            ast::ColumnOption::Check(c) => {
                let (own, expr) = check_constraint(c)?;
                let given = o.name.as_ref().map(ident_name).or(own);
                let n = given.unwrap_or_else(|| format!("{table}_{cname}_check"));
                col.checks.push((n, expr));
            }
            ast::ColumnOption::Default(e) => {
                if col.default.is_some() {
                    return Err(SqlError::syntax(format!(
                        "multiple default values specified for column \"{cname}\" of table \"{}\"",
                        table
                    )));
                }
                col.default = Some(e.to_string());
            }
            other => {
                return Err(SqlError::unsupported(format!(
                    "column option \"{other}\" (column constraints)"
                )))
            }
        }
    }
    let seq = sequences::column_sequence(
        table,
        &mut col,
        serial.is_some(),
        identity,
        null_given.is_some(),
    )?;
    Ok((col, indexes, seq, fks))
}

/// A column of CREATE TABLE: its definition, the indexes of its constraints, the
/// sequence it owns, its REFERENCES.
type ConvertedColumn = (
    Column,
    Vec<IndexSpec>,
    Option<sequences::ColumnSeq>,
    Vec<foreign::FkSpec>,
);

fn convert_create_table(ct: ast::CreateTable) -> SqlResult<Stmt> {
    let tablespace = create_table_clauses(&ct)?;
    let (name, on_commit) = temp::create_name(object_name(&ct.name)?, ct.temporary, ct.on_commit)?;
    if let Some(query) = ct.query {
        if !ct.columns.is_empty() {
            return Err(SqlError::unsupported("CREATE TABLE t (columns) AS"));
        }
        if tablespace.is_some() {
            return Err(SqlError::unsupported("CREATE TABLE ... AS with TABLESPACE"));
        }
        return Ok(Stmt::Ddl(Ddl::CreateTableAs {
            name,
            if_not_exists: ct.if_not_exists,
            query,
            with_data: ct.with_data.is_none_or(|w| w.data),
            on_commit,
        }));
    }
    let mut columns = Vec::new();
    let mut indexes = Vec::new();
    let mut seqs = Vec::new();
    let mut fks = Vec::new();
    for c in &ct.columns {
        let (col, ix, seq, fk) = convert_column(&name, c)?;
        indexes.extend(ix);
        seqs.extend(seq);
        fks.extend(fk);
        let cname = col.name.clone();
        if columns.iter().any(|x: &Column| x.name == cname) {
            return Err(SqlError::new(
                "42701",
                format!("column \"{cname}\" specified more than once"),
            ));
        }
        columns.push(col);
    }
    table_constraints(
        &name,
        &ct.constraints,
        &mut columns,
        (&mut indexes, &mut fks),
    )?;
    Ok(Stmt::Ddl(Ddl::CreateTable {
        name,
        if_not_exists: ct.if_not_exists,
        columns,
        tablespace,
        indexes,
        sequences: seqs,
        foreign_keys: fks,
        on_commit,
    }))
}

/// EXPLAIN [(options)] query: [COSTS] [, VERBOSE] [, ANALYZE [, TIMING] [,
/// SUMMARY] [, BUFFERS]] is what Strata shows (explain rules 5, 7, 8); SETTINGS,
/// WAL, other formats and EXPLAIN of other statements are 0A000.
fn convert_explain(
    analyze: bool,
    verbose: bool,
    statement: ast::Statement,
    options: Vec<ast::UtilityOption>,
) -> SqlResult<Stmt> {
    let on = |o: &ast::UtilityOption| -> SqlResult<bool> {
        match o.arg.as_ref().map(|a| a.to_string().to_ascii_lowercase()) {
            None => Ok(true),
            Some(v) if ["true", "on", "1"].contains(&v.as_str()) => Ok(true),
            Some(v) if ["false", "off", "0"].contains(&v.as_str()) => Ok(false),
            Some(_) => Err(SqlError::new(
                "22023",
                format!("{} requires a Boolean value", o.name.value.to_lowercase()),
            )),
        }
    };
    let mut o = explain::Options {
        analyze,
        verbose,
        ..explain::Options::default()
    };
    for opt in &options {
        match opt.name.value.to_ascii_lowercase().as_str() {
            "costs" => o.costs = on(opt)?,
            "analyze" => o.analyze = on(opt)?,
            "verbose" => o.verbose = on(opt)?,
            "timing" => o.timing = Some(on(opt)?),
            "summary" => o.summary = Some(on(opt)?),
            "buffers" => o.buffers = on(opt)?,
            "settings" | "wal" if !on(opt)? => {}
            other => {
                return Err(SqlError::unsupported(format!("EXPLAIN option {other}")));
            }
        }
    }
    if o.timing == Some(true) && !o.analyze {
        return Err(SqlError::new(
            "22023",
            "EXPLAIN option TIMING requires ANALYZE",
        ));
    }
    match statement {
        ast::Statement::Query(q) => Ok(Stmt::Explain(q, o)),
        ast::Statement::Execute {
            name: Some(name),
            parameters,
            immediate: false,
            into,
            using,
            ..
        } if into.is_empty() && using.is_empty() => {
            Ok(Stmt::Prepared(prepare::PreparedStmt::Explain {
                name: object_name(&name)?,
                args: parameters,
                options: o,
            }))
        }
        other => Err(SqlError::unsupported(format!(
            "EXPLAIN of {}",
            other
                .to_string()
                .split_whitespace()
                .next()
                .unwrap_or("this statement")
        ))),
    }
}

/// A storage parameter at the value Strata's heap works with: `fillfactor = 100`
/// (pages filled whole, PostgreSQL's default, which pgbench names). Any other is
/// refused with CREATE TABLE's WITH.
fn storage_parameter_held(o: &ast::SqlOption) -> bool {
    match o {
        ast::SqlOption::KeyValue { key, value } => {
            key.value.eq_ignore_ascii_case("fillfactor") && value.to_string() == "100"
        }
        _ => false,
    }
}

/// The clauses of CREATE TABLE Strata honours are its name, IF NOT EXISTS, columns,
/// constraints, AS query, WITH [NO] DATA and TABLESPACE (returned, as PostgreSQL
/// folds it). Every other clause sqlparser takes is refused with 0A000 naming it
/// (sql rule 6): the statement is rebuilt from the honoured clauses alone, and any
/// difference from what was parsed is a clause Strata would otherwise drop.
fn create_table_clauses(ct: &ast::CreateTable) -> SqlResult<Option<String>> {
    use ast::helpers::stmt_create_table::CreateTableBuilder;
    let (tablespace, options) = match &ct.table_options {
        ast::CreateTableOptions::Plain(o) => match o.as_slice() {
            [ast::SqlOption::TableSpace(ast::TablespaceOption {
                name,
                storage: None,
            })] => (Some(name.to_lowercase()), ct.table_options.clone()),
            _ => (None, ast::CreateTableOptions::None),
        },
        ast::CreateTableOptions::With(o) if o.iter().all(storage_parameter_held) => {
            (None, ct.table_options.clone())
        }
        _ => (None, ast::CreateTableOptions::None),
    };
    let honoured = CreateTableBuilder::new(ct.name.clone())
        .temporary(ct.temporary)
        .on_commit(ct.on_commit)
        .if_not_exists(ct.if_not_exists)
        .columns(ct.columns.clone())
        .constraints(ct.constraints.clone())
        .query(ct.query.clone())
        .with_data(ct.with_data.filter(|w| w.statistics.is_none()))
        .table_options(options)
        .build();
    if honoured == *ct {
        return Ok(tablespace);
    }
    let named = [
        (
            ct.partition_by.is_some(),
            "PARTITION BY (partitioned tables)",
        ),
        (
            ct.partition_of.is_some() || ct.for_values.is_some(),
            "PARTITION OF (partitions)",
        ),
        (ct.inherits.is_some(), "INHERITS (table inheritance)"),
        (ct.like.is_some(), "CREATE TABLE ... LIKE"),
        (ct.unlogged, "UNLOGGED tables"),
        (
            matches!(ct.table_options, ast::CreateTableOptions::With(_)),
            "CREATE TABLE ... WITH (storage parameters other than fillfactor = 100)",
        ),
        (
            ct.table_options != honoured.table_options,
            "these table options",
        ),
    ];
    let what = named
        .iter()
        .find(|(given, _)| *given)
        .map_or("this form of CREATE TABLE", |(_, w)| w);
    Err(SqlError::unsupported(what.to_string()))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn one(sql: &str) -> Stmt {
        let mut v = parse(sql).unwrap_or_else(|e| panic!("{sql}: {e}"));
        assert_eq!(v.len(), 1, "{sql}");
        v.remove(0)
    }

    #[test]
    fn a_reserved_keyword_is_no_bare_column_name() {
        for (sql, word, at) in [
            ("create table foo (with baz)", "with", 19),
            ("create table foo (a int, left text)", "left", 26),
            ("alter table foo add column user int", "user", 28),
        ] {
            let e = parse_shared(Arc::new(sql.to_string()))
                .map(|_| ())
                .expect_err(sql)
                .placed(sql);
            assert_eq!(e.code, "42601", "{sql}");
            assert_eq!(
                e.message,
                format!("syntax error at or near \"{word}\""),
                "{sql}"
            );
            assert_eq!(e.position, Some(at), "{sql}");
        }
        one("create table foo (\"with\" int, ordinality int, name text)");
    }

    #[test]
    fn utility_statements_parse_in_postgres_form() {
        match one(
            "CREATE DATABASE d1 WITH TEMPLATE = template0 STRATEGY = FILE_COPY TABLESPACE ts1 OWNER bob",
        ) {
            Stmt::Ddl(Ddl::CreateDatabase {
                name,
                template,
                tablespace,
                strategy,
                owner,
            }) => {
                assert_eq!(owner, Some(roles::RoleSpec::Name("bob".into())));
                assert_eq!(name, "d1");
                assert_eq!(template.as_deref(), Some("template0"));
                assert_eq!(tablespace.as_deref(), Some("ts1"));
                assert_eq!(strategy, Some(CreateDbStrategy::FileCopy));
            }
            s => panic!("{s:?}"),
        }
        assert!(matches!(
            one("drop database if exists \"X\" with (force)"),
            Stmt::Ddl(Ddl::DropDatabase { name, if_exists: true, force: true }) if name == "X"
        ));
        assert!(matches!(
            one("CREATE TABLESPACE ts LOCATION '/tmp/x'"),
            Stmt::Ddl(Ddl::CreateTablespace { name, location, owner: None }) if name == "ts" && location == "/tmp/x"
        ));
        assert!(
            matches!(one("vacuum T1"), Stmt::Utility(Utility::Vacuum { table: Some(t), analyze: false }) if t == "t1")
        );
        assert!(matches!(
            one("checkpoint;"),
            Stmt::Utility(Utility::Checkpoint)
        ));
        assert!(matches!(
            one("set work_mem = '64MB'"),
            Stmt::Utility(Utility::Set { name, value: Some(v), .. }) if name == "work_mem" && v == "64MB"
        ));
        assert!(
            matches!(one("show shared_buffers"), Stmt::Utility(Utility::Show { name }) if name == "shared_buffers")
        );
        assert!(matches!(
            one("begin"),
            Stmt::Control(Control::Begin { modes }) if modes == TxnModes::default()
        ));
        assert!(matches!(one("end"), Stmt::Control(Control::Commit)));
    }

    #[test]
    fn table_statements_parse() {
        match one("CREATE TABLE IF NOT EXISTS Test1 (id int PRIMARY KEY, name varchar(20) CONSTRAINT nm UNIQUE, ok boolean, big bigint, UNIQUE (ok, Big)) TABLESPACE ts9") {
            Stmt::Ddl(Ddl::CreateTable {
                name,
                if_not_exists,
                columns,
                tablespace,
                indexes,
                ..
            }) => {
                let spec = |name: Option<&str>, cols: &[&str], primary| IndexSpec {
                    name: name.map(str::to_string),
                    columns: cols.iter().map(|c| c.to_string()).collect(),
                    unique: true,
                    primary,
                    constraint: true,
                };
                assert_eq!(
                    indexes,
                    vec![
                        spec(None, &["id"], true),
                        spec(Some("nm"), &["name"], false),
                        spec(None, &["ok", "big"], false)
                    ]
                );
                assert_eq!(name, "test1");
                assert!(if_not_exists);
                assert_eq!(
                    columns.iter().map(|c| c.ty).collect::<Vec<_>>(),
                    vec![ColType::Int4, ColType::Text, ColType::Bool, ColType::Int8]
                );
                assert_eq!(tablespace.as_deref(), Some("ts9"));
            }
            s => panic!("{s:?}"),
        }
        match one("create unique index if not exists ix on T using btree (a, B asc nulls last)") {
            Stmt::Ddl(Ddl::CreateIndex {
                table,
                spec,
                if_not_exists: true,
            }) => {
                assert_eq!(table, "t");
                assert_eq!((spec.name.as_deref(), spec.unique), (Some("ix"), true));
                assert_eq!(spec.columns, ["a", "b"]);
            }
            s => panic!("{s:?}"),
        }
        assert!(matches!(
            one("alter table pgbench_branches add primary key (bid)"),
            Stmt::Ddl(Ddl::AddConstraint { spec, .. }) if spec.primary && spec.columns == ["bid"]
        ));
        assert!(matches!(
            one("alter table t drop constraint if exists t_pkey"),
            Stmt::Ddl(Ddl::DropConstraint {
                constraint_if_exists: true,
                ..
            })
        ));
        assert!(matches!(
            one("drop index if exists i1, i2"),
            Stmt::Ddl(Ddl::DropIndex { names, if_exists: true }) if names == ["i1", "i2"]
        ));
        assert!(matches!(
            one("DROP TABLE IF EXISTS a, public.b"),
            Stmt::Ddl(Ddl::DropTable { names, if_exists: true, .. }) if names == ["a", "b"]
        ));
        assert!(matches!(
            one("insert into t select g from generate_series(1, 10) g"),
            Stmt::Insert {
                source: InsertSource::Query(_),
                ..
            }
        ));
        match one("insert into t (a) values (1), (2)") {
            Stmt::Insert {
                source: InsertSource::Rows(rows),
                columns: Some(_),
                ..
            } => assert_eq!(rows.iter().count(), 2),
            s => panic!("{s:?}"),
        }
        // A text the pre-scan is unsure of is tokenized whole (values rule 2).
        assert!(matches!(
            one("insert into t (a) values (1), (U&'x')"),
            Stmt::Insert { source: InsertSource::Values(v), .. } if v.len() == 2
        ));
        assert_eq!(parse("select 1; select 2;; ").unwrap().len(), 2);
    }

    #[test]
    fn bad_sql_gets_42601_and_unknown_sql_0a000() {
        for s in ["selec 1", "create table (", "select 1 +", "drop database"] {
            assert_eq!(parse(s).unwrap_err().code, "42601", "{s}");
        }
        for s in [
            "create index i on t using hash (a)",
            "create index i on t (a desc)",
            "create index i on t (lower(a))",
            "update t set a = 1 limit 1",
            "create table t (a int references u (a) deferrable)",
            "create table t (a money)",
            "grant all on function f() to x",
        ] {
            let e = parse(s).unwrap_err();
            assert!(e.code == "0A000" || e.code == "42704", "{s}: {e}");
        }
    }
}
