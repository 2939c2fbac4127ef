//! Data definition: CREATE TABLE, DROP TABLE, TRUNCATE, ALTER TABLE, CREATE/DROP
//! INDEX, CREATE/DROP TABLESPACE and CREATE/DROP DATABASE, one function each.
//!
//! Entry point: [`run`], which the session's dispatcher calls with a parsed [`Ddl`]
//! once the block state allows it (session rules 3 and 4).
//!
//! Rules (cited as "ddl rule N"):
//! 1. Table DDL runs in the session's transaction — the block's, or one of its own
//!    outside a block — and commits or aborts with it (a created relation's files
//!    go at abort, a dropped one's after the commit record is durable: engine rules).
//! 2. Tablespace and database DDL never runs in a block (session rule 4, checked
//!    before [`run`]): each is its own transaction, committed before it returns.
//! 3. DROP DATABASE refuses new connections to the database while it runs, waits up
//!    to 5 s for the other sessions on it to go (then 55006, with PostgreSQL's
//!    hint), and with `WITH (FORCE)` first asks them to terminate (57P01 for them).
//!    CREATE DATABASE refuses a template that another session (or this one) is
//!    connected to (55006), as PostgreSQL does.
//! 4. `IF [NOT] EXISTS` turns the error into a NOTICE "..., skipping", in
//!    PostgreSQL's words; the names of one DROP TABLE are all checked before any
//!    is dropped.

use crate::session::{Notices, Output, Session};
use crate::{Ddl, IndexSpec, SqlError, SqlResult};
use std::time::{Duration, Instant};
use strata_engine::{Column, CreateDbStrategy, NewIndex, Txn};

/// PostgreSQL's NOTICE for CREATE ... IF NOT EXISTS of a relation that exists (ddl
/// rule 4).
pub(crate) fn exists_skipping(name: &str) -> (&'static str, String) {
    (
        "NOTICE",
        format!(
            "relation \"{}\" already exists, skipping",
            crate::temp::shown(name)
        ),
    )
}

/// A temporary table's ON COMMIT, noted before the transaction that creates it
/// commits (temp rule 2).
fn note_temp(s: &mut Session<'_>, ddl: &Ddl) {
    if let Ddl::CreateTable {
        name, on_commit, ..
    }
    | Ddl::CreateTableAs {
        name, on_commit, ..
    } = ddl
    {
        s.note_temp(name, *on_commit);
    }
}

/// How long DROP DATABASE waits for other sessions to leave (PostgreSQL's 5 s).
const DROP_DATABASE_WAIT_MS: u64 = 5000;

/// Runs one DDL statement.
pub(crate) fn run(s: &mut Session<'_>, ddl: &Ddl, notices: &mut Notices) -> SqlResult<Output> {
    note_temp(s, ddl);
    match ddl {
        Ddl::CreateTable {
            name,
            if_not_exists,
            columns,
            tablespace,
            indexes,
            sequences,
            foreign_keys,
            ..
        } => create_table(
            s,
            (name, *if_not_exists),
            (columns, sequences),
            (tablespace.as_deref(), indexes, foreign_keys),
            notices,
        ),
        Ddl::CreateSequence {
            name,
            if_not_exists,
            options,
        } => crate::sequences::create(s, name, *if_not_exists, options, notices),
        Ddl::DropSequence { names, if_exists } => {
            crate::sequences::drop(s, names, *if_exists, notices)
        }
        Ddl::CreateIndex {
            table,
            spec,
            if_not_exists,
        } => create_index(s, table, spec, *if_not_exists, notices),
        Ddl::DropIndex { names, if_exists } => drop_index(s, names, *if_exists, notices),
        Ddl::AddConstraint {
            table,
            if_exists,
            spec,
        } => alter_table(s, (table, *if_exists), notices, |t, db, _| {
            add_index(t, db, table, spec)?;
            Ok(None)
        }),
        Ddl::AddForeignKey {
            table,
            if_exists,
            spec,
        } => alter_table(s, (table, *if_exists), notices, |t, db, _| {
            let fk = crate::foreign::resolve(t, db, table, spec)?;
            t.add_foreign_key(db, table, fk.clone())?;
            if !spec.not_valid {
                crate::foreign::validate(t, db, table, &strata_engine::no_interrupt, &fk)?;
            }
            Ok(None)
        }),
        Ddl::DropConstraint {
            table,
            if_exists,
            name,
            constraint_if_exists,
        } => drop_constraint(s, (table, *if_exists), name, *constraint_if_exists, notices),
        Ddl::DropTable {
            names,
            if_exists,
            cascade,
        } => drop_table(s, names, (*if_exists, *cascade), notices),
        Ddl::CreateView { .. } | Ddl::DropView { .. } => crate::rewrite::run(s, ddl, notices),
        Ddl::CreateTableAs {
            name,
            if_not_exists,
            query,
            with_data,
            ..
        } => s.create_table_as(name, (*if_not_exists, *with_data), query, notices),
        Ddl::Truncate { names } => truncate(s, names),
        Ddl::Rename {
            table,
            if_exists,
            column,
            new_name,
        } => rename(s, (table, *if_exists), column.as_deref(), new_name, notices),
        Ddl::AddColumn {
            table,
            if_exists,
            column,
            if_not_exists,
        } => add_column(s, (table, *if_exists), column, *if_not_exists, notices),
        Ddl::DropColumn {
            table,
            if_exists,
            column,
            column_if_exists,
        } => drop_column(s, (table, *if_exists), column, *column_if_exists, notices),
        Ddl::CreateTablespace { .. }
        | Ddl::DropTablespace { .. }
        | Ddl::CreateDatabase { .. }
        | Ddl::DropDatabase { .. } => run_shared(s, ddl, notices),
    }
}

/// Runs the DDL of databases and tablespaces.
fn run_shared(s: &mut Session<'_>, ddl: &Ddl, notices: &mut Notices) -> SqlResult<Output> {
    match ddl {
        Ddl::CreateTablespace {
            name,
            location,
            owner,
        } => create_tablespace(s, name, location, owner.as_ref()),
        Ddl::DropTablespace { name, if_exists } => drop_tablespace(s, name, *if_exists, notices),
        Ddl::CreateDatabase {
            name,
            template,
            tablespace,
            strategy,
            owner,
        } => create_database(
            s,
            name,
            (template.as_deref().unwrap_or("template1"), owner.as_ref()),
            tablespace.as_deref(),
            strategy.unwrap_or(CreateDbStrategy::WalLog),
        ),
        Ddl::DropDatabase {
            name,
            if_exists,
            force,
        } => drop_database(s, name, *if_exists, *force, notices),
        _ => unreachable!("run sends only databases and tablespaces here"),
    }
}

fn create_table(
    s: &mut Session<'_>,
    (name, if_not_exists): (&str, bool),
    (columns, sequences): (&[Column], &[crate::sequences::ColumnSeq]),
    (tablespace, indexes, fks): (Option<&str>, &[IndexSpec], &[crate::foreign::FkSpec]),
    notices: &mut Notices,
) -> SqlResult<Output> {
    let scope = crate::session::check_scope(name, columns);
    for c in columns {
        let mut b = crate::bind::Binder::default();
        if let Some(d) = &c.default {
            crate::session::bind_default(&mut b, c, d)?;
        }
        for (_, sql) in &c.checks {
            crate::session::bind_check(&mut b, &scope, sql)?;
        }
    }
    let db = s.db().to_string();
    let mut skipped = false;
    s.write(|t| {
        if if_not_exists && t.relation_name_taken(&db, name)? {
            skipped = true;
            return Ok(());
        }
        let mut columns = columns.to_vec();
        crate::sequences::create_owned(t, &db, name, &mut columns, sequences)?;
        t.create_table(&db, name, &columns, tablespace)?;
        for ix in indexes {
            add_index(t, &db, name, ix)?;
        }
        for spec in fks {
            let fk = crate::foreign::resolve(t, &db, name, spec)?;
            t.add_foreign_key(&db, name, fk)?; // a new table: no rows to check
        }
        Ok(())
    })?;
    if skipped {
        notices.push(exists_skipping(name));
    }
    Ok(Output::Command("CREATE TABLE".into()))
}

/// The name PostgreSQL gives an index it names: `<table>_<columns>_<suffix>`
/// (`<table>_pkey` for a primary key), numbered from 1 while taken.
fn index_name(t: &Txn<'_>, db: &str, table: &str, spec: &IndexSpec) -> SqlResult<String> {
    let base = if spec.primary {
        format!("{table}_pkey")
    } else {
        let suffix = if spec.constraint { "key" } else { "idx" };
        format!("{table}_{}_{suffix}", spec.columns.join("_"))
    };
    crate::sequences::free_name(t, db, &base)
}

/// Creates the index of `spec` on `table` (a constraint's, or CREATE INDEX's).
fn add_index(t: &mut Txn<'_>, db: &str, table: &str, spec: &IndexSpec) -> SqlResult<()> {
    let name = match &spec.name {
        Some(n) => n.clone(),
        None => index_name(t, db, table, spec)?,
    };
    let new = NewIndex {
        name: &name,
        columns: &spec.columns,
        unique: spec.unique,
        primary: spec.primary,
        constraint: spec.constraint,
    };
    t.create_index(db, table, &new)?;
    Ok(())
}

/// CREATE [UNIQUE] INDEX: built in the session's transaction (ddl rule 1).
fn create_index(
    s: &mut Session<'_>,
    table: &str,
    spec: &IndexSpec,
    if_not_exists: bool,
    notices: &mut Notices,
) -> SqlResult<Output> {
    let db = s.db().to_string();
    let mut skipped = None;
    s.write(|t| {
        if let Some(n) = spec.name.as_deref() {
            if if_not_exists && t.relation_name_taken(&db, n)? {
                skipped = Some(n.to_string());
                return Ok(());
            }
        }
        add_index(t, &db, table, spec)
    })?;
    if let Some(n) = skipped {
        notices.push(exists_skipping(&n));
    }
    Ok(Output::Command("CREATE INDEX".into()))
}

/// DROP INDEX: every name checked first (42704, or a NOTICE with IF EXISTS), then
/// all dropped in the one transaction (ddl rule 4).
fn drop_index(
    s: &mut Session<'_>,
    names: &[String],
    if_exists: bool,
    notices: &mut Notices,
) -> SqlResult<Output> {
    let db = s.db().to_string();
    let mut skipped = Vec::new();
    s.write(|t| {
        let mut seen: Vec<&String> = Vec::new();
        for n in names {
            if t.index_table(&db, n)?.is_none() || seen.contains(&n) {
                if if_exists {
                    skipped.push(n.clone());
                    continue;
                }
                return Err(SqlError::new(
                    "42704",
                    format!("index \"{n}\" does not exist"),
                ));
            }
            seen.push(n);
        }
        for n in seen {
            t.drop_index(&db, n)?;
        }
        Ok(())
    })?;
    for n in skipped {
        notices.push(("NOTICE", format!("index \"{n}\" does not exist, skipping")));
    }
    Ok(Output::Command("DROP INDEX".into()))
}

/// ALTER TABLE ... DROP CONSTRAINT of a PRIMARY KEY or UNIQUE constraint.
fn drop_constraint(
    s: &mut Session<'_>,
    target: (&str, bool),
    name: &str,
    if_exists: bool,
    notices: &mut Notices,
) -> SqlResult<Output> {
    let table = target.0;
    alter_table(s, target, notices, |t, db, _| {
        match t.drop_constraint(db, table, name) {
            Err(e) if if_exists && e.sqlstate() == "42704" => Ok(Some(format!(
                "constraint \"{name}\" of relation \"{table}\" does not exist, skipping"
            ))),
            r => r.map(|_| None).map_err(Into::into),
        }
    })
}

/// DROP TABLE: every name checked first (a missing one is 42P01 unless IF EXISTS;
/// a name given twice counts as missing the second time, as in PostgreSQL), then
/// all dropped in the one transaction (ddl rule 4).
fn drop_table(
    s: &mut Session<'_>,
    names: &[String],
    (if_exists, cascade): (bool, bool),
    notices: &mut Notices,
) -> SqlResult<Output> {
    let db = s.db().to_string();
    let mut skipped = Vec::new();
    let mut cascaded = Vec::new();
    s.write(|t| {
        let dbe = t.database(&db)?;
        let mut seen = Vec::new();
        for n in names {
            if t.relation(&dbe, n).is_err() || seen.contains(n) {
                if if_exists {
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
            if t.relation(&dbe, n)?.view.is_some() {
                return Err(SqlError::new("42809", format!("\"{n}\" is not a table"))
                    .with_hint("Use DROP VIEW to remove a view."));
            }
            cascaded.extend(crate::rewrite::drop_dependents(
                t,
                &db,
                (n, "table"),
                cascade,
            )?);
            cascaded.extend(drop_referencing(t, &db, n, &seen, cascade)?);
            t.drop_table(&db, n)?;
        }
        Ok(())
    })?;
    for n in skipped {
        notices.push(("NOTICE", format!("table \"{n}\" does not exist, skipping")));
    }
    notices.extend(cascaded.into_iter().map(|m| ("NOTICE", m)));
    Ok(Output::Command("DROP TABLE".into()))
}

/// DROP TABLE `name`'s FOREIGN KEYs that reference it from other tables: dropped
/// with their tables when those are dropped too (`dropping`), else with CASCADE
/// (NOTICEs returned), else 2BP01 in PostgreSQL's words.
fn drop_referencing(
    t: &mut Txn<'_>,
    db: &str,
    name: &str,
    dropping: &[String],
    cascade: bool,
) -> SqlResult<Vec<String>> {
    let dbe = t.database(db)?;
    let stored = t.relation(&dbe, name)?.name.clone();
    let dropped: Vec<String> = dropping
        .iter()
        .filter_map(|d| t.relation(&dbe, d).ok().map(|r| r.name.clone()))
        .collect();
    let mut outside = Vec::new();
    for child in t.referencing(db, name)? {
        if child.name == stored {
            continue;
        }
        let also = dropped.contains(&child.name);
        for fk in child.foreign_keys.iter().filter(|f| f.parent == stored) {
            if !also {
                let shown = strata_engine::temp::bare(&child.name);
                outside.push(format!("constraint {} on table {shown}", fk.name));
            }
            t.drop_constraint(db, &child.name, &fk.name)?;
        }
    }
    if !outside.is_empty() && !cascade {
        let detail: Vec<String> = outside
            .iter()
            .map(|o| format!("{o} depends on table {name}"))
            .collect();
        return Err(SqlError::new(
            "2BP01",
            format!("cannot drop table {name} because other objects depend on it"),
        )
        .with_detail(detail.join("\n"))
        .with_hint("Use DROP ... CASCADE to drop the dependent objects too."));
    }
    Ok(match outside.len() {
        0 => Vec::new(),
        1 => vec![format!("drop cascades to {}", outside[0])],
        n => vec![format!("drop cascades to {n} other objects")],
    })
}

/// TRUNCATE: 0A000 for a table another table not truncated with it references
/// (PostgreSQL's words), else new empty files for each (engine rules).
fn truncate(s: &mut Session<'_>, names: &[String]) -> SqlResult<Output> {
    let db = s.db().to_string();
    s.write(|t| {
        let dbe = t.database(&db)?;
        let stored: Vec<String> = names
            .iter()
            .filter_map(|n| t.relation(&dbe, n).ok().map(|r| r.name.clone()))
            .collect();
        for n in names {
            for child in t.referencing(&db, n)? {
                if !stored.contains(&child.name) {
                    let shown = strata_engine::temp::bare(&child.name);
                    return Err(SqlError::new(
                        "0A000",
                        "cannot truncate a table referenced in a foreign key constraint",
                    )
                    .with_detail(format!("Table \"{shown}\" references \"{n}\"."))
                    .with_hint(format!(
                        "Truncate table \"{shown}\" at the same time, or use TRUNCATE ... CASCADE."
                    )));
                }
            }
        }
        for n in names {
            t.truncate_table(&db, n)?;
        }
        Ok(())
    })?;
    Ok(Output::Command("TRUNCATE TABLE".into()))
}

/// One ALTER TABLE action in one write: `act` gets the transaction, the database and
/// the table's columns, and returns the NOTICE of an action IF [NOT] EXISTS skipped.
/// A missing table is 42P01, or with IF EXISTS a notice.
fn alter_table(
    s: &mut Session<'_>,
    (table, if_exists): (&str, bool),
    notices: &mut Notices,
    act: impl FnOnce(&mut strata_engine::Txn<'_>, &str, &[Column]) -> SqlResult<Option<String>>,
) -> SqlResult<Output> {
    let db = s.db().to_string();
    let mut skipped = None;
    s.write(|t| {
        let dbe = t.database(&db)?;
        let Ok(rel) = t.relation(&dbe, table) else {
            if if_exists {
                skipped = Some(format!("relation \"{table}\" does not exist, skipping"));
                return Ok(());
            }
            return Err(strata_engine::EngineError::UndefinedTable(table.into()).into());
        };
        skipped = act(t, &db, &rel.columns)?;
        Ok(())
    })?;
    notices.extend(skipped.map(|m| ("NOTICE", m)));
    Ok(Output::Command("ALTER TABLE".into()))
}

/// ALTER TABLE ... ADD COLUMN: the DEFAULT (bound as CREATE TABLE binds it) is
/// evaluated once and fills every existing row; a CHECK on the new column is 0A000
/// (existing rows would have to be checked).
fn add_column(
    s: &mut Session<'_>,
    target: (&str, bool),
    column: &Column,
    if_not_exists: bool,
    notices: &mut Notices,
) -> SqlResult<Output> {
    if !column.checks.is_empty() {
        return Err(SqlError::unsupported(
            "ALTER TABLE ... ADD COLUMN with a CHECK constraint",
        ));
    }
    let fill = s.default_value(column)?;
    let table = target.0;
    alter_table(s, target, notices, |t, db, cols| {
        if if_not_exists && cols.iter().any(|c| c.name == column.name) {
            return Ok(Some(format!(
                "column \"{}\" of relation \"{table}\" already exists, skipping",
                column.name
            )));
        }
        t.add_column(db, table, column.clone(), fill)?;
        Ok(None)
    })
}

/// ALTER TABLE ... DROP COLUMN: the table rewritten without it.
fn drop_column(
    s: &mut Session<'_>,
    target: (&str, bool),
    column: &str,
    column_if_exists: bool,
    notices: &mut Notices,
) -> SqlResult<Output> {
    let table = target.0;
    alter_table(s, target, notices, |t, db, cols| {
        if column_if_exists && !cols.iter().any(|c| c.name == column) {
            return Ok(Some(format!(
                "column \"{column}\" of relation \"{table}\" does not exist, skipping"
            )));
        }
        t.drop_column(db, table, column)?;
        Ok(None)
    })
}

/// ALTER TABLE ... RENAME (a table, or one of its columns).
fn rename(
    s: &mut Session<'_>,
    target: (&str, bool),
    column: Option<&str>,
    new_name: &str,
    notices: &mut Notices,
) -> SqlResult<Output> {
    let table = target.0;
    let out = alter_table(s, target, notices, |t, db, _| {
        match column {
            None => t.rename_table(db, table, new_name)?,
            Some(c) => t.rename_column(db, table, c, new_name)?,
        }
        Ok(None)
    })?;
    if column.is_none() {
        s.temps_mut().renamed(table, new_name);
    }
    Ok(out)
}

/// CREATE TABLESPACE [OWNER role]: the owner is checked before the directory is
/// taken, as PostgreSQL does.
fn create_tablespace(
    s: &mut Session<'_>,
    name: &str,
    location: &str,
    owner: Option<&crate::roles::RoleSpec>,
) -> SqlResult<Output> {
    let who = s.names();
    s.write(|t| {
        let new_owner = crate::grants::owner_for_new(t, (&who.0, &who.1, &who.2), owner)?;
        t.create_tablespace(name, location)?;
        if let Some(o) = new_owner {
            t.set_tablespace_access(name, o, None)?;
        }
        Ok(())
    })?;
    Ok(Output::Command("CREATE TABLESPACE".into()))
}

fn drop_tablespace(
    s: &mut Session<'_>,
    name: &str,
    if_exists: bool,
    notices: &mut Notices,
) -> SqlResult<Output> {
    if if_exists && !s.engine().tablespaces().iter().any(|t| t.name == name) {
        notices.push((
            "NOTICE",
            format!("tablespace \"{name}\" does not exist, skipping"),
        ));
    } else {
        s.write(|t| t.drop_tablespace(name).map_err(Into::into))?;
    }
    Ok(Output::Command("DROP TABLESPACE".into()))
}

/// CREATE DATABASE from `template`, refused while anyone is connected to the
/// template (ddl rule 3).
fn create_database(
    s: &mut Session<'_>,
    name: &str,
    (template, owner): (&str, Option<&crate::roles::RoleSpec>),
    tablespace: Option<&str>,
    strategy: CreateDbStrategy,
) -> SqlResult<Output> {
    let who = s.names();
    if s.server().registry.others_on(template, s.id()) > 0 || template == s.db() {
        return Err(SqlError::new(
            "55006",
            format!("source database \"{template}\" is being accessed by other users"),
        ));
    }
    s.write(|t| {
        let new_owner = crate::grants::owner_for_new(t, (&who.0, &who.1, &who.2), owner)?;
        t.create_database(name, template, tablespace, strategy)?;
        if let Some(o) = new_owner {
            t.set_database_access(name, o, None, None)?;
        }
        Ok(())
    })?;
    Ok(Output::Command("CREATE DATABASE".into()))
}

/// DROP DATABASE (ddl rule 3): the database is marked as being dropped (new
/// connections to it are refused) for the whole wait and drop.
fn drop_database(
    s: &mut Session<'_>,
    name: &str,
    if_exists: bool,
    force: bool,
    notices: &mut Notices,
) -> SqlResult<Output> {
    if s.engine().database(name).is_none() {
        if if_exists {
            notices.push((
                "NOTICE",
                format!("database \"{name}\" does not exist, skipping"),
            ));
            return Ok(Output::Command("DROP DATABASE".into()));
        }
        return Err(SqlError::new(
            "3D000",
            format!("database \"{name}\" does not exist"),
        ));
    }
    if name == s.db() {
        return Err(SqlError::new(
            "55006",
            "cannot drop the currently open database",
        ));
    }
    let reg = &s.server().registry;
    reg.set_dropping(name, true);
    let result = wait_for_others(s, name, force)
        .and_then(|()| s.write(|t| t.drop_database(name).map_err(Into::into)));
    reg.set_dropping(name, false);
    result?;
    Ok(Output::Command("DROP DATABASE".into()))
}

/// Waits until no other session is connected to `name`, having asked them to
/// terminate if `force`: polled every 10 ms, interruptible, 55006 after
/// [`DROP_DATABASE_WAIT_MS`].
fn wait_for_others(s: &Session<'_>, name: &str, force: bool) -> SqlResult<()> {
    let reg = &s.server().registry;
    if force {
        reg.terminate_others(name, s.id());
    }
    let deadline = Instant::now() + Duration::from_millis(DROP_DATABASE_WAIT_MS);
    loop {
        let n = reg.others_on(name, s.id());
        if n == 0 {
            return Ok(());
        }
        s.interrupted()?;
        if Instant::now() >= deadline {
            let (verb, plural) = if n == 1 { ("is", "") } else { ("are", "s") };
            return Err(SqlError::new(
                "55006",
                format!("database \"{name}\" is being accessed by other users"),
            )
            .with_hint(format!(
                "There {verb} {n} other session{plural} using the database."
            )));
        }
        std::thread::sleep(Duration::from_millis(10));
    }
}
