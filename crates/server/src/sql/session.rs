//! A session: one client connection's state and the execution of its statements
//! against the engine.
//!
//! Owns the transaction-block state machine (idle, in a block, failed), session
//! settings (SET/SHOW), and the translation of each [`Stmt`] into engine calls.
//! A session lives on its own thread (a "backend", as in PostgreSQL), because an
//! engine transaction holds the writer lock for its whole life (engine rule 1).
//!
//! Invariants:
//! 1. Outside a block every statement is its own transaction: committed when it
//!    succeeds, aborted (its creations removed) when it fails.
//! 2. In a block, the engine transaction is begun at the first statement that writes;
//!    a block of reads never holds the writer lock.
//! 3. After an error in a block the engine transaction is aborted at once (releasing
//!    the writer lock) and every statement but COMMIT/ROLLBACK gets 25P02.
//! 4. CREATE/DROP DATABASE and TABLESPACE and VACUUM never run in a block (25001).

use super::bind::{self, Binder, Env, Expr, From, Row, Scope, SelectPlan, SortKey};
use super::{Datum, InsertSource, SqlError, SqlResult, SqlType, Stmt};
use parking_lot::Mutex;
use std::collections::{BTreeMap, HashMap};
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};
use strata_engine::{CreateDbStrategy, Engine, Txn, Value};
use strata_types::ForkNumber;

/// What one statement returned.
#[derive(Debug)]
pub enum Output {
    Rows {
        columns: Vec<(String, SqlType)>,
        rows: Vec<Vec<Datum>>,
    },
    Command(String),
    TxnStart(String),
    TxnEnd(String),
}

#[derive(Debug)]
pub struct Executed {
    pub output: Output,
    /// NOTICE and WARNING messages, as (severity, message).
    pub notices: Vec<(&'static str, String)>,
}

/// A statement's parameter types and result columns (extended protocol Describe).
#[derive(Clone, Debug)]
pub struct Described {
    pub params: Vec<SqlType>,
    pub columns: Vec<(String, SqlType)>,
}

/// Sessions by database, for DROP DATABASE (55006 while others are connected;
/// WITH (FORCE) terminates them) and `max_connections`.
#[derive(Default)]
pub struct Registry {
    inner: Mutex<RegistryInner>,
    next_id: AtomicU64,
}

/// Asks one session to end.
pub type Terminate = Box<dyn Fn() + Send>;

#[derive(Default)]
struct RegistryInner {
    sessions: HashMap<u64, (String, Terminate)>,
    /// Databases being dropped: new connections to them are refused.
    dropping: Vec<String>,
}

/// The connection slots a new session may take.
#[derive(Clone, Copy, Debug)]
pub struct Slots {
    /// `max_connections`.
    pub max: usize,
    /// `superuser_reserved_connections`.
    pub reserved: usize,
    /// Whether the connecting role is a superuser (may take a reserved slot).
    pub superuser: bool,
}

/// Why a connection was refused at startup.
#[derive(Debug, PartialEq, Eq)]
pub enum Refused {
    TooMany,
    /// Only the reserved (superuser) slots are left.
    Reserved,
    NoDatabase,
    NotAccepting,
}

impl Registry {
    /// Registers a session on `db` unless the server is full or `db` cannot be
    /// connected to; `terminate` asks the session to end (DROP DATABASE ... FORCE).
    ///
    /// Slots: `max` in all, of which the last `reserved` are for superusers only
    /// (PostgreSQL's `superuser_reserved_connections` rule).
    pub fn register(
        &self,
        engine: &Engine,
        db: &str,
        slots: Slots,
        terminate: Box<dyn Fn() + Send>,
    ) -> Result<u64, Refused> {
        let mut g = self.inner.lock();
        if g.sessions.len() >= slots.max {
            return Err(Refused::TooMany);
        }
        if !slots.superuser && g.sessions.len() + slots.reserved >= slots.max {
            return Err(Refused::Reserved);
        }
        if g.dropping.iter().any(|d| d == db) {
            return Err(Refused::NoDatabase);
        }
        match engine.database(db) {
            None => return Err(Refused::NoDatabase),
            Some(d) if !d.allow_conn => return Err(Refused::NotAccepting),
            Some(_) => {}
        }
        let id = self.next_id.fetch_add(1, Ordering::Relaxed) + 1;
        g.sessions.insert(id, (db.to_string(), terminate));
        Ok(id)
    }

    pub fn unregister(&self, id: u64) {
        self.inner.lock().sessions.remove(&id);
    }

    pub fn count(&self) -> usize {
        self.inner.lock().sessions.len()
    }

    fn others_on(&self, db: &str, me: u64) -> usize {
        self.inner
            .lock()
            .sessions
            .iter()
            .filter(|(id, (d, _))| **id != me && d == db)
            .count()
    }

    /// Asks every session to end (server shutdown).
    pub fn terminate_all(&self) {
        for (term_db, term) in self.inner.lock().sessions.values() {
            let _ = term_db;
            term();
        }
    }

    fn terminate_others(&self, db: &str, me: u64) {
        for (id, (d, term)) in self.inner.lock().sessions.iter() {
            if *id != me && d == db {
                term();
            }
        }
    }
}

/// Server-wide state a session reads: settings to SHOW and the password store.
pub struct ServerState {
    pub registry: Registry,
    /// Server settings as SHOW prints them (name, value, description).
    pub settings: Vec<(String, String, String)>,
    pub auth: crate::pg::auth::AuthStore,
    /// The server log.
    pub log: strata_engine::LogSink,
    /// `superuser_reserved_connections`.
    pub reserved_connections: usize,
}

enum Block<'e> {
    Idle,
    /// In BEGIN ... COMMIT; the engine transaction once something wrote.
    Open(Option<Box<Txn<'e>>>),
    Failed,
}

pub struct Session<'e> {
    engine: &'e Engine,
    server: &'e ServerState,
    db: String,
    /// The authenticated role.
    user: String,
    id: u64,
    block: Block<'e>,
    vars: BTreeMap<String, String>,
}

struct SessionEnv<'a> {
    engine: &'a Engine,
    db: &'a str,
}

impl Env for SessionEnv<'_> {
    fn current_database(&self) -> String {
        self.db.to_string()
    }
    fn current_wal_lsn(&self) -> u64 {
        self.engine.current_wal_lsn().0
    }
    fn relation_filepath(&self, table: &str) -> Option<String> {
        let key = self.engine.table_key(self.db, table).ok()?;
        let p = self.engine.smgr().segment_path(key, ForkNumber::Main, 0);
        let rel = p
            .strip_prefix(self.engine.data_dir())
            .map(Path::to_path_buf)
            .unwrap_or(p);
        Some(rel.display().to_string())
    }
}

fn to_datum(v: Value) -> Datum {
    match v {
        Value::Null => Datum::Null,
        Value::Int4(x) => Datum::Int4(x),
        Value::Int8(x) => Datum::Int8(x),
        Value::Text(x) => Datum::Text(x),
        Value::Bool(x) => Datum::Bool(x),
    }
}

fn to_value(d: Datum) -> Value {
    match d {
        Datum::Null => Value::Null,
        Datum::Int4(x) => Value::Int4(x),
        Datum::Int8(x) => Value::Int8(x),
        Datum::Text(x) => Value::Text(x),
        Datum::Bool(x) => Value::Bool(x),
        Datum::Lsn(l) => Value::Text(super::format_lsn(l)),
        Datum::Numeric(n) => Value::Text(n.to_string()),
    }
}

fn no_block(verb: &str) -> SqlError {
    SqlError::new(
        "25001",
        format!("{verb} cannot run inside a transaction block"),
    )
}

fn aborted() -> SqlError {
    SqlError::new(
        "25P02",
        "current transaction is aborted, commands ignored until end of transaction block",
    )
}

/// Bound INSERT/DELETE/SELECT, ready to run with parameter values.
enum Bound {
    Insert {
        table: String,
        /// For each table column, the index of the source value (None: NULL).
        map: Vec<Option<usize>>,
        col_types: Vec<SqlType>,
        source: BoundSource,
    },
    Delete {
        table: String,
        pred: Option<Expr>,
        ncols: usize,
    },
    Select(Box<SelectPlan>),
    Other,
}

enum BoundSource {
    Values(Vec<Vec<Expr>>),
    Query(Box<SelectPlan>),
}

impl<'e> Session<'e> {
    pub fn new(
        engine: &'e Engine,
        server: &'e ServerState,
        db: &str,
        user: &str,
        id: u64,
    ) -> Session<'e> {
        Session {
            engine,
            server,
            db: db.to_string(),
            user: user.to_string(),
            id,
            block: Block::Idle,
            vars: BTreeMap::new(),
        }
    }

    /// Ends the session: an open transaction is aborted.
    pub fn close(&mut self) {
        if let Block::Open(Some(t)) = std::mem::replace(&mut self.block, Block::Idle) {
            let _ = t.abort();
        }
    }

    /// Columns of a table as this session sees it (its own uncommitted DDL included).
    fn columns(&self, table: &str) -> SqlResult<Vec<(String, SqlType)>> {
        let cols = match &self.block {
            Block::Open(Some(t)) => t.columns(&self.db, table)?,
            _ => self.engine.table(&self.db, table)?.columns,
        };
        Ok(cols
            .into_iter()
            .map(|c| (c.name, SqlType::of_col(c.ty)))
            .collect())
    }

    fn bind(&self, stmt: &Stmt, b: &mut Binder) -> SqlResult<Bound> {
        let scope_of = |t: &str| self.columns(t);
        Ok(match stmt {
            Stmt::Select(q) => Bound::Select(Box::new(b.select(q, &scope_of)?)),
            Stmt::Delete { table, selection } => {
                let cols = self.columns(table)?;
                let scope = Scope {
                    qualifiers: vec![table.clone()],
                    cols: cols.clone(),
                };
                let pred = match selection {
                    Some(w) => Some(b.condition(&scope, w, "WHERE")?),
                    None => None,
                };
                Bound::Delete {
                    table: table.clone(),
                    pred,
                    ncols: cols.len(),
                }
            }
            Stmt::Insert {
                table,
                columns,
                source,
            } => {
                let cols = self.columns(table)?;
                let targets: Vec<usize> = match columns {
                    None => (0..cols.len()).collect(),
                    Some(names) => {
                        let mut v = Vec::new();
                        for n in names {
                            let i = cols.iter().position(|(c, _)| c == n).ok_or_else(|| {
                                SqlError::new(
                                    "42703",
                                    format!(
                                        "column \"{n}\" of relation \"{table}\" does not exist"
                                    ),
                                )
                            })?;
                            if v.contains(&i) {
                                return Err(SqlError::new(
                                    "42701",
                                    format!("column \"{n}\" specified more than once"),
                                ));
                            }
                            v.push(i);
                        }
                        v
                    }
                };
                let col_types: Vec<SqlType> = cols.iter().map(|c| c.1).collect();
                let too_many =
                    || SqlError::new("42601", "INSERT has more expressions than target columns");
                let source = match source {
                    InsertSource::Values(rows) => {
                        let mut out = Vec::new();
                        for r in rows {
                            if r.len() > targets.len() {
                                return Err(too_many());
                            }
                            let mut row = Vec::new();
                            for (k, e) in r.iter().enumerate() {
                                let (x, t) = b.expr(&Scope::default(), e)?;
                                let ci = targets[k];
                                row.push(assign(b, x, t, col_types[ci], &cols[ci].0)?);
                            }
                            out.push(row);
                        }
                        BoundSource::Values(out)
                    }
                    InsertSource::Query(q) => {
                        let plan = b.select(q, &scope_of)?;
                        if plan.columns.len() > targets.len() {
                            return Err(too_many());
                        }
                        for (k, (_, t)) in plan.columns.iter().enumerate() {
                            let ci = targets[k];
                            assign(b, Expr::Const(Datum::Null), *t, col_types[ci], &cols[ci].0)?;
                        }
                        BoundSource::Query(Box::new(plan))
                    }
                };
                let mut map = vec![None; cols.len()];
                for (k, ci) in targets.iter().enumerate() {
                    map[*ci] = Some(k);
                }
                Bound::Insert {
                    table: table.clone(),
                    map,
                    col_types,
                    source,
                }
            }
            _ => Bound::Other,
        })
    }

    /// Parameter types and result columns of one statement, without running it.
    pub fn describe(&self, stmt: &Stmt) -> SqlResult<Described> {
        let mut b = Binder::default();
        let bound = self.bind(stmt, &mut b)?;
        let columns = match (&bound, stmt) {
            (Bound::Select(p), _) => p.columns.clone(),
            (_, Stmt::Show { name }) => vec![(show_column(name), SqlType::Text)],
            _ => vec![],
        };
        let params = b
            .params
            .iter()
            .map(|t| {
                if *t == SqlType::Unknown {
                    SqlType::Text
                } else {
                    *t
                }
            })
            .collect();
        Ok(Described { params, columns })
    }

    /// Runs one statement with parameter values, honouring the block state.
    pub fn execute(&mut self, stmt: &Stmt, params: &[Datum]) -> SqlResult<Executed> {
        let mut notices = Vec::new();
        let r = self.execute_inner(stmt, params, &mut notices);
        match r {
            Ok(output) => Ok(Executed { output, notices }),
            Err(e) => {
                match std::mem::replace(&mut self.block, Block::Idle) {
                    Block::Open(t) => {
                        if let Some(t) = t {
                            let _ = t.abort();
                        }
                        self.block = Block::Failed;
                    }
                    Block::Failed => self.block = Block::Failed,
                    Block::Idle => {}
                }
                Err(e)
            }
        }
    }

    fn execute_inner(
        &mut self,
        stmt: &Stmt,
        params: &[Datum],
        notices: &mut Vec<(&'static str, String)>,
    ) -> SqlResult<Output> {
        // Block control first.
        match stmt {
            Stmt::Begin => {
                return Ok(match self.block {
                    Block::Idle => {
                        self.block = Block::Open(None);
                        Output::TxnStart("BEGIN".into())
                    }
                    Block::Open(_) => {
                        notices.push((
                            "WARNING",
                            "there is already a transaction in progress".into(),
                        ));
                        Output::TxnStart("BEGIN".into())
                    }
                    Block::Failed => return Err(aborted()),
                });
            }
            Stmt::Commit | Stmt::Rollback => {
                let commit = matches!(stmt, Stmt::Commit);
                let tag = |ok: bool| Output::TxnEnd(if ok { "COMMIT" } else { "ROLLBACK" }.into());
                return Ok(match std::mem::replace(&mut self.block, Block::Idle) {
                    Block::Idle => {
                        notices.push(("WARNING", "there is no transaction in progress".into()));
                        tag(commit)
                    }
                    Block::Open(t) => {
                        match t {
                            Some(t) if commit => t.commit()?,
                            Some(t) => t.abort()?,
                            None => {}
                        }
                        tag(commit)
                    }
                    // A failed block ends in a rollback whatever the client said.
                    Block::Failed => tag(false),
                });
            }
            _ => {}
        }
        if matches!(self.block, Block::Failed) {
            return Err(aborted());
        }
        let in_block = matches!(self.block, Block::Open(_));
        match stmt {
            Stmt::CreateDatabase { .. }
            | Stmt::DropDatabase { .. }
            | Stmt::CreateTablespace { .. }
            | Stmt::DropTablespace { .. }
            | Stmt::Vacuum { .. }
                if in_block =>
            {
                return Err(no_block(stmt.verb()))
            }
            _ => {}
        }
        let mut b = Binder::default();
        let bound = self.bind(stmt, &mut b)?;
        if params.len() < b.params.len() {
            return Err(SqlError::new(
                "08P01",
                format!(
                    "bind message supplies {} parameters, but prepared statement requires {}",
                    params.len(),
                    b.params.len()
                ),
            ));
        }
        match stmt {
            Stmt::Select(_) => {
                let Bound::Select(plan) = bound else {
                    unreachable!("bound as a select")
                };
                let rows = self.run_select(&plan, params)?;
                Ok(Output::Rows {
                    columns: plan.columns,
                    rows,
                })
            }
            Stmt::Show { name } => self.show(name),
            Stmt::Set { name, value } => self.set(name, value.as_deref()),
            Stmt::Checkpoint => {
                self.engine.checkpoint()?;
                Ok(Output::Command("CHECKPOINT".into()))
            }
            Stmt::Vacuum { table } => {
                self.engine.vacuum(&self.db, table.as_deref())?;
                Ok(Output::Command("VACUUM".into()))
            }
            Stmt::AlterRolePassword { role, password } => {
                if *role != self.user && !crate::pg::auth::is_superuser(&self.user) {
                    return Err(SqlError::new("42501", "permission denied to alter role")
                        .with_hint(format!(
                            "Only the role itself or the superuser \"{}\" may change the password of role \"{role}\".",
                            crate::pg::auth::BOOTSTRAP_SUPERUSER
                        )));
                }
                self.server
                    .auth
                    .set_password(role, password.as_deref())
                    .map_err(|e| SqlError::new("58030", e))?;
                Ok(Output::Command("ALTER ROLE".into()))
            }
            Stmt::CreateTablespace { name, location } => {
                self.autocommit(|t, _| t.create_tablespace(name, location).map_err(Into::into))?;
                Ok(Output::Command("CREATE TABLESPACE".into()))
            }
            Stmt::DropTablespace { name, if_exists } => {
                if *if_exists && !self.engine.tablespaces().iter().any(|s| s.name == *name) {
                    notices.push((
                        "NOTICE",
                        format!("tablespace \"{name}\" does not exist, skipping"),
                    ));
                } else {
                    self.autocommit(|t, _| t.drop_tablespace(name).map_err(Into::into))?;
                }
                Ok(Output::Command("DROP TABLESPACE".into()))
            }
            Stmt::CreateDatabase {
                name,
                template,
                tablespace,
                strategy,
            } => {
                let template = template.as_deref().unwrap_or("template1");
                if self.server.registry.others_on(template, self.id) > 0 || (template == self.db) {
                    return Err(SqlError::new(
                        "55006",
                        format!("source database \"{template}\" is being accessed by other users"),
                    ));
                }
                let strategy = strategy.unwrap_or(CreateDbStrategy::WalLog);
                self.autocommit(|t, _| {
                    t.create_database(name, template, tablespace.as_deref(), strategy)
                        .map_err(Into::into)
                })?;
                Ok(Output::Command("CREATE DATABASE".into()))
            }
            Stmt::DropDatabase {
                name,
                if_exists,
                force,
            } => {
                self.drop_database(name, *if_exists, *force, notices)?;
                Ok(Output::Command("DROP DATABASE".into()))
            }
            Stmt::CreateTable {
                name,
                if_not_exists,
                columns,
                tablespace,
            } => {
                let db = self.db.clone();
                let mut skipped = false;
                self.write(|t| {
                    let dbe = t.database(&db)?;
                    if *if_not_exists && t.relation(&dbe, name).is_ok() {
                        skipped = true;
                        return Ok(());
                    }
                    t.create_table(&db, name, columns, tablespace.as_deref())?;
                    Ok(())
                })?;
                if skipped {
                    notices.push((
                        "NOTICE",
                        format!("relation \"{name}\" already exists, skipping"),
                    ));
                }
                Ok(Output::Command("CREATE TABLE".into()))
            }
            Stmt::DropTable { names, if_exists } => {
                let db = self.db.clone();
                let mut skipped = Vec::new();
                self.write(|t| {
                    let dbe = t.database(&db)?;
                    let mut seen = Vec::new();
                    for n in names {
                        if t.relation(&dbe, n).is_err() || seen.contains(n) {
                            if *if_exists {
                                skipped.push(n.clone());
                                continue;
                            }
                            return Err(SqlError::new(
                                "42P01",
                                format!("table \"{n}\" does not exist"),
                            ));
                        }
                        seen.push(n.clone());
                    }
                    for n in &seen {
                        t.drop_table(&db, n)?;
                    }
                    Ok(())
                })?;
                for n in skipped {
                    notices.push(("NOTICE", format!("table \"{n}\" does not exist, skipping")));
                }
                Ok(Output::Command("DROP TABLE".into()))
            }
            Stmt::Truncate { names } => {
                let db = self.db.clone();
                self.write(|t| {
                    for n in names {
                        t.truncate_table(&db, n)?;
                    }
                    Ok(())
                })?;
                Ok(Output::Command("TRUNCATE TABLE".into()))
            }
            Stmt::Insert { .. } => {
                let Bound::Insert {
                    table,
                    map,
                    col_types,
                    source,
                } = bound
                else {
                    unreachable!("bound as an insert")
                };
                let env = SessionEnv {
                    engine: self.engine,
                    db: &self.db,
                };
                let srcs: Vec<Vec<Datum>> = match &source {
                    BoundSource::Values(rows) => rows
                        .iter()
                        .map(|r| {
                            let row = Row {
                                cols: &[],
                                params,
                                aggs: &[],
                                env: &env,
                            };
                            r.iter().map(|e| bind::eval(e, &row)).collect()
                        })
                        .collect::<SqlResult<_>>()?,
                    BoundSource::Query(plan) => self.run_select(plan, params)?,
                };
                let mut rows = Vec::with_capacity(srcs.len());
                for mut src in srcs {
                    let mut row = Vec::with_capacity(map.len());
                    for (ci, m) in map.iter().enumerate() {
                        // Columns without a value (a short VALUES row) get NULL. Each
                        // source position feeds one column (42701 above), so it is taken.
                        let d = match m.and_then(|k| src.get_mut(k)) {
                            Some(v) => {
                                bind::cast_datum(std::mem::replace(v, Datum::Null), col_types[ci])?
                            }
                            None => Datum::Null,
                        };
                        row.push(to_value(d));
                    }
                    rows.push(row);
                }
                let db = self.db.clone();
                let n = self.write(|t| Ok(t.insert(&db, &table, &rows)?))?;
                Ok(Output::Command(format!("INSERT 0 {n}")))
            }
            Stmt::Delete { .. } => {
                let Bound::Delete { table, pred, ncols } = bound else {
                    unreachable!("bound as a delete")
                };
                let db = self.db.clone();
                let engine = self.engine;
                let err: std::cell::RefCell<Option<SqlError>> = std::cell::RefCell::new(None);
                let n = self.write(|t| {
                    let env = SessionEnv { engine, db: &db };
                    let f = |vals: &[Value]| -> bool {
                        let Some(p) = &pred else { return true };
                        if err.borrow().is_some() {
                            return false;
                        }
                        let cols: Vec<Datum> = vals.iter().cloned().map(to_datum).collect();
                        debug_assert_eq!(cols.len(), ncols);
                        let row = Row {
                            cols: &cols,
                            params,
                            aggs: &[],
                            env: &env,
                        };
                        match bind::eval(p, &row) {
                            Ok(d) => bind::is_true(&d),
                            Err(e) => {
                                *err.borrow_mut() = Some(e);
                                false
                            }
                        }
                    };
                    let n = t.delete_where(&db, &table, &f)?;
                    if let Some(e) = err.borrow_mut().take() {
                        return Err(e);
                    }
                    Ok(n)
                })?;
                Ok(Output::Command(format!("DELETE {n}")))
            }
            Stmt::Begin | Stmt::Commit | Stmt::Rollback | Stmt::Empty => {
                unreachable!("handled above")
            }
        }
    }

    /// Runs `f` in the block's transaction (begun now if needed) or, outside a block,
    /// in a transaction of its own, committed on success and aborted on failure.
    fn write<T>(&mut self, f: impl FnOnce(&mut Txn<'e>) -> SqlResult<T>) -> SqlResult<T> {
        match &mut self.block {
            Block::Open(t) => {
                let t = t.get_or_insert_with(|| Box::new(self.engine.begin()));
                f(t)
            }
            _ => {
                let mut t = self.engine.begin();
                match f(&mut t) {
                    Ok(v) => {
                        t.commit()?;
                        Ok(v)
                    }
                    Err(e) => {
                        let _ = t.abort();
                        Err(e)
                    }
                }
            }
        }
    }

    /// A statement that never runs in a block, in its own transaction.
    fn autocommit(&mut self, f: impl FnOnce(&mut Txn<'e>, &str) -> SqlResult<()>) -> SqlResult<()> {
        let db = self.db.clone();
        self.write(|t| f(t, &db))
    }

    fn drop_database(
        &mut self,
        name: &str,
        if_exists: bool,
        force: bool,
        notices: &mut Vec<(&'static str, String)>,
    ) -> SqlResult<()> {
        if self.engine.database(name).is_none() {
            if if_exists {
                notices.push((
                    "NOTICE",
                    format!("database \"{name}\" does not exist, skipping"),
                ));
                return Ok(());
            }
            return Err(SqlError::new(
                "3D000",
                format!("database \"{name}\" does not exist"),
            ));
        }
        if name == self.db {
            return Err(SqlError::new(
                "55006",
                "cannot drop the currently open database",
            ));
        }
        let reg = &self.server.registry;
        reg.inner.lock().dropping.push(name.to_string());
        let result = (|| {
            if force {
                reg.terminate_others(name, self.id);
            }
            // As PostgreSQL: wait up to 5 s for other sessions to go.
            let deadline = Instant::now() + Duration::from_secs(5);
            loop {
                let n = reg.others_on(name, self.id);
                if n == 0 {
                    break;
                }
                if Instant::now() >= deadline {
                    let s = if n == 1 { "" } else { "s" };
                    return Err(SqlError::new(
                        "55006",
                        format!("database \"{name}\" is being accessed by other users"),
                    )
                    .with_hint(format!(
                        "There {} {n} other session{s} using the database.",
                        if n == 1 { "is" } else { "are" }
                    )));
                }
                std::thread::sleep(Duration::from_millis(10));
            }
            self.autocommit(|t, _| t.drop_database(name).map_err(Into::into))
        })();
        reg.inner.lock().dropping.retain(|d| d != name);
        result
    }

    fn set(&mut self, name: &str, value: Option<&str>) -> SqlResult<Output> {
        if name == "all" {
            self.vars.clear();
            return Ok(Output::Command("RESET".into()));
        }
        if self.server.settings.iter().any(|(n, _, _)| n == name) {
            return Err(SqlError::new(
                "55P02",
                format!("parameter \"{name}\" cannot be changed without restarting the server"),
            ));
        }
        match value {
            Some(v) => {
                self.vars.insert(name.to_string(), v.to_string());
            }
            None => {
                self.vars.remove(name);
            }
        }
        Ok(Output::Command("SET".into()))
    }

    fn show(&self, name: &str) -> SqlResult<Output> {
        let text = |s: &str| Datum::Text(s.to_string());
        if name == "all" {
            let mut rows: Vec<Vec<Datum>> = self
                .server
                .settings
                .iter()
                .map(|(n, v, d)| vec![text(n), text(v), text(d)])
                .collect();
            for (n, v) in &self.vars {
                rows.push(vec![text(n), text(v), text("session setting")]);
            }
            rows.sort_by(|a, b| bind::compare(&a[0], &b[0]));
            return Ok(Output::Rows {
                columns: vec![
                    ("name".into(), SqlType::Text),
                    ("setting".into(), SqlType::Text),
                    ("description".into(), SqlType::Text),
                ],
                rows,
            });
        }
        let v = if let Some(v) = self.vars.get(name) {
            v.clone()
        } else if let Some((_, v, _)) = self.server.settings.iter().find(|(n, _, _)| n == name) {
            v.clone()
        } else {
            match name {
                "transaction_isolation" | "default_transaction_isolation" => {
                    "read committed".into()
                }
                "server_version" => "15.0".into(),
                "server_encoding" | "client_encoding" => "UTF8".into(),
                "search_path" => "\"$user\", public".into(),
                "standard_conforming_strings" => "on".into(),
                "timezone" => "UTC".into(),
                "datestyle" => "ISO, MDY".into(),
                _ => {
                    return Err(SqlError::new(
                        "42704",
                        format!("unrecognized configuration parameter \"{name}\""),
                    ))
                }
            }
        };
        Ok(Output::Rows {
            columns: vec![(show_column(name), SqlType::Text)],
            rows: vec![vec![Datum::Text(v)]],
        })
    }

    /// Runs a bound SELECT: scan or series, filter, aggregate or project, sort, limit.
    fn run_select(&self, plan: &SelectPlan, params: &[Datum]) -> SqlResult<Vec<Vec<Datum>>> {
        let env = SessionEnv {
            engine: self.engine,
            db: &self.db,
        };
        let konst = |e: &Expr| -> SqlResult<Datum> {
            bind::eval(
                e,
                &Row {
                    cols: &[],
                    params,
                    aggs: &[],
                    env: &env,
                },
            )
        };
        let input: Vec<Vec<Datum>> = match &plan.from {
            From::None => vec![vec![]],
            From::Table(t) => {
                let rows = match &self.block {
                    Block::Open(Some(txn)) => txn.scan(&self.db, t)?,
                    _ => self.engine.scan(&self.db, t)?,
                };
                rows.into_iter()
                    .map(|r| r.into_iter().map(to_datum).collect())
                    .collect()
            }
            From::Series(a, b, step, ty) => {
                let ty = *ty;
                let int = |d: Datum| -> SqlResult<Option<i64>> {
                    Ok(match bind::cast_datum(d, SqlType::Int8)? {
                        Datum::Int8(v) => Some(v),
                        _ => None,
                    })
                };
                let (Some(a), Some(b)) = (int(konst(a)?)?, int(konst(b)?)?) else {
                    return Ok(vec![]);
                };
                let step = match step {
                    Some(s) => match int(konst(s)?)? {
                        Some(0) => {
                            return Err(SqlError::new("22023", "step size cannot equal zero"))
                        }
                        Some(s) => s,
                        None => return Ok(vec![]),
                    },
                    None => 1,
                };
                let n = if (step > 0 && a > b) || (step < 0 && a < b) {
                    0
                } else {
                    ((i128::from(b) - i128::from(a)) / i128::from(step) + 1) as u128
                };
                if n > 50_000_000 {
                    return Err(SqlError::new(
                        "54000",
                        format!("generate_series of {n} rows is more than Strata materialises (50,000,000)"),
                    ));
                }
                (0..n as i64)
                    .map(|k| {
                        let v = a + k * step;
                        vec![if ty == SqlType::Int4 {
                            Datum::Int4(v as i32)
                        } else {
                            Datum::Int8(v)
                        }]
                    })
                    .collect()
            }
        };
        let mut kept = Vec::new();
        for r in input {
            let keep = match &plan.filter {
                Some(f) => bind::is_true(&bind::eval(
                    f,
                    &Row {
                        cols: &r,
                        params,
                        aggs: &[],
                        env: &env,
                    },
                )?),
                None => true,
            };
            if keep {
                kept.push(r);
            }
        }
        let mut out: Vec<(Vec<Datum>, Vec<Datum>)> = Vec::new();
        if !plan.aggs.is_empty() {
            let mut acc: Vec<Datum> = plan.aggs.iter().map(bind::agg_init).collect();
            for r in &kept {
                for (a, slot) in plan.aggs.iter().zip(acc.iter_mut()) {
                    let v = match &a.arg {
                        Some(e) => Some(bind::eval(
                            e,
                            &Row {
                                cols: r,
                                params,
                                aggs: &[],
                                env: &env,
                            },
                        )?),
                        None => None,
                    };
                    bind::agg_step(a, slot, v)?;
                }
            }
            let row = Row {
                cols: &[],
                params,
                aggs: &acc,
                env: &env,
            };
            let vals = plan
                .items
                .iter()
                .map(|e| bind::eval(e, &row))
                .collect::<SqlResult<Vec<_>>>()?;
            out.push((vals, vec![]));
        } else {
            for r in &kept {
                let row = Row {
                    cols: r,
                    params,
                    aggs: &[],
                    env: &env,
                };
                let vals = plan
                    .items
                    .iter()
                    .map(|e| bind::eval(e, &row))
                    .collect::<SqlResult<Vec<_>>>()?;
                let keys = plan
                    .order
                    .iter()
                    .map(|(k, _)| match k {
                        SortKey::Output(i) => Ok(vals[*i].clone()),
                        SortKey::Input(e) => bind::eval(e, &row),
                    })
                    .collect::<SqlResult<Vec<_>>>()?;
                out.push((vals, keys));
            }
        }
        if !plan.order.is_empty() && plan.aggs.is_empty() {
            out.sort_by(|a, b| {
                for (i, (_, desc)) in plan.order.iter().enumerate() {
                    let o = bind::compare(&a.1[i], &b.1[i]);
                    let o = if *desc { o.reverse() } else { o };
                    if o != std::cmp::Ordering::Equal {
                        return o;
                    }
                }
                std::cmp::Ordering::Equal
            });
        }
        let count = |e: &Option<Expr>| -> SqlResult<Option<usize>> {
            match e {
                None => Ok(None),
                Some(e) => match konst(e)? {
                    Datum::Int8(n) if n < 0 => Err(SqlError::new(
                        "2201W",
                        "LIMIT or OFFSET must not be negative",
                    )),
                    Datum::Int8(n) => Ok(Some(n as usize)),
                    Datum::Int4(n) if n >= 0 => Ok(Some(n as usize)),
                    _ => Ok(None),
                },
            }
        };
        let offset = count(&plan.offset)?.unwrap_or(0);
        let limit = count(&plan.limit)?.unwrap_or(usize::MAX);
        Ok(out
            .into_iter()
            .skip(offset)
            .take(limit)
            .map(|(v, _)| v)
            .collect())
    }
}

/// The column name SHOW prints: the parameter's name.
fn show_column(name: &str) -> String {
    name.to_string()
}

/// Assignment of a value of type `t` to a column of type `col`: untyped values take
/// the column's type; integers of another width are converted (with a range check).
fn assign(b: &mut Binder, e: Expr, t: SqlType, col: SqlType, cname: &str) -> SqlResult<Expr> {
    if t == col || t == SqlType::Unknown {
        return b.coerce(e, t, col);
    }
    if t.is_int() && col.is_int() {
        return Ok(Expr::Cast(Box::new(e), col));
    }
    Err(SqlError::new(
        "42804",
        format!(
            "column \"{cname}\" is of type {} but expression is of type {}",
            col.name(),
            t.name()
        ),
    )
    .with_hint("You will need to rewrite or cast the expression."))
}
