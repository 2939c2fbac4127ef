//! Sequences in SQL: CREATE SEQUENCE and DROP SEQUENCE, `serial` columns and
//! identity columns (`GENERATED { ALWAYS | BY DEFAULT } AS IDENTITY`), turned into
//! the engine's sequences (its `sequence` module keeps their values).
//!
//! Entry points: [`convert_create`] (parsing), [`column_sequence`] (a column of
//! CREATE TABLE), [`create_owned`] (the sequences of a new table's columns),
//! [`create`] and [`drop`] (the statements).
//!
//! Rules (cited as "sequences rule N"):
//! 1. A `serial` column is PostgreSQL's: its type (`integer`, `bigint`,
//!    `smallint`), NOT NULL, `DEFAULT nextval('<table>_<column>_seq'::regclass)`, and
//!    a sequence of that type the column owns. An identity column owns the same
//!    sequence and takes its values without a DEFAULT; GENERATED ALWAYS refuses
//!    a value given by INSERT (428C9).
//! 2. Owned sequences are named `<table>_<column>_seq`, numbered from 1 while the
//!    name is taken, and are created before their table, in its transaction.

use crate::session::{Notices, Output, Session};
use crate::{ast, object_name, Ddl, SqlError, SqlResult, SqlType};
use strata_engine::{ColType, Column, SeqOptions, Txn};

/// The sequence a column of CREATE TABLE owns (sequences rule 1).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ColumnSeq {
    pub column: String,
    pub options: SeqOptions,
}

/// CREATE SEQUENCE [IF NOT EXISTS] name [AS type] [options]; OWNED BY only NONE.
pub(crate) fn convert_create(
    name: &ast::ObjectName,
    if_not_exists: bool,
    data_type: Option<&ast::DataType>,
    options: &[ast::SequenceOptions],
    owned_by: Option<&ast::ObjectName>,
) -> SqlResult<crate::Stmt> {
    if owned_by.is_some_and(|o| !o.to_string().eq_ignore_ascii_case("none")) {
        return Err(SqlError::unsupported(
            "CREATE SEQUENCE ... OWNED BY a column",
        ));
    }
    let mut o = seq_options(options)?;
    if let Some(t) = data_type {
        o.ty = Some(SqlType::from_ast(t)?.to_col()?);
    }
    Ok(crate::Stmt::Ddl(Ddl::CreateSequence {
        name: object_name(name)?,
        if_not_exists,
        options: o,
    }))
}

/// CREATE SEQUENCE after its two keywords, with its options in any order, as
/// PostgreSQL takes them (pg_dump writes START before INCREMENT; sqlparser wants a
/// fixed order): [IF NOT EXISTS] name, then AS type, INCREMENT [BY] n, MINVALUE n |
/// NO MINVALUE, MAXVALUE n | NO MAXVALUE, START [WITH] n, CACHE n, [NO] CYCLE,
/// OWNED BY NONE.
pub(crate) fn parse_create(p: &mut sqlparser::parser::Parser<'_>) -> SqlResult<crate::Stmt> {
    use ast::SequenceOptions as O;
    use sqlparser::keywords::Keyword as K;
    let syntax = |e: sqlparser::parser::ParserError| SqlError::syntax(e.to_string());
    let if_not_exists = p.parse_keywords(&[K::IF, K::NOT, K::EXISTS]);
    let name = p.parse_object_name(false).map_err(syntax)?;
    let (mut data_type, mut owned_by, mut options) = (None, None, Vec::new());
    loop {
        let opt = if p.parse_keyword(K::AS) {
            data_type = Some(p.parse_data_type().map_err(syntax)?);
            continue;
        } else if p.parse_keywords(&[K::OWNED, K::BY]) {
            owned_by = Some(p.parse_object_name(false).map_err(syntax)?);
            continue;
        } else if p.parse_keyword(K::INCREMENT) {
            let by = p.parse_keyword(K::BY);
            O::IncrementBy(p.parse_number().map_err(syntax)?, by)
        } else if p.parse_keyword(K::MINVALUE) {
            O::MinValue(Some(p.parse_number().map_err(syntax)?))
        } else if p.parse_keyword(K::MAXVALUE) {
            O::MaxValue(Some(p.parse_number().map_err(syntax)?))
        } else if p.parse_keywords(&[K::NO, K::MINVALUE]) {
            O::MinValue(None)
        } else if p.parse_keywords(&[K::NO, K::MAXVALUE]) {
            O::MaxValue(None)
        } else if p.parse_keywords(&[K::NO, K::CYCLE]) {
            O::Cycle(true)
        } else if p.parse_keyword(K::CYCLE) {
            O::Cycle(false)
        } else if p.parse_keyword(K::START) {
            let with = p.parse_keyword(K::WITH);
            O::StartWith(p.parse_number().map_err(syntax)?, with)
        } else if p.parse_keyword(K::CACHE) {
            O::Cache(p.parse_number().map_err(syntax)?)
        } else {
            break;
        };
        options.push(opt);
    }
    convert_create(
        &name,
        if_not_exists,
        data_type.as_ref(),
        &options,
        owned_by.as_ref(),
    )
}

/// The options of CREATE SEQUENCE or of an identity column (42601 for one given
/// twice, as PostgreSQL's "conflicting or redundant options").
fn seq_options(options: &[ast::SequenceOptions]) -> SqlResult<SeqOptions> {
    use ast::SequenceOptions as O;
    let mut o = SeqOptions::default();
    let twice = || SqlError::syntax("conflicting or redundant options");
    for opt in options {
        match opt {
            O::IncrementBy(e, _) => set(&mut o.increment, int(e)?).ok_or_else(twice)?,
            O::MinValue(e) => {
                set(&mut o.min, e.as_ref().map(int).transpose()?).ok_or_else(twice)?
            }
            O::MaxValue(e) => {
                set(&mut o.max, e.as_ref().map(int).transpose()?).ok_or_else(twice)?
            }
            O::StartWith(e, _) => set(&mut o.start, int(e)?).ok_or_else(twice)?,
            O::Cache(e) => set(&mut o.cache, int(e)?).ok_or_else(twice)?,
            O::Cycle(no) => set(&mut o.cycle, !no).ok_or_else(twice)?,
        }
    }
    Ok(o)
}

/// Sets an option once: `None` if it was already set.
fn set<T>(slot: &mut Option<T>, v: T) -> Option<()> {
    match slot {
        Some(_) => None,
        None => {
            *slot = Some(v);
            Some(())
        }
    }
}

/// An integer option's value: a literal, possibly negative.
fn int(e: &ast::Expr) -> SqlResult<i64> {
    let text = e.to_string().replace(' ', "");
    text.parse::<i64>()
        .map_err(|_| SqlError::syntax(format!("syntax error at or near \"{e}\"")))
}

/// A `serial` type's column type: `serial`/`serial4` integer, `bigserial`/`serial8`
/// bigint, `smallserial`/`serial2` smallint.
fn serial_type(t: &ast::DataType) -> Option<ColType> {
    match t.to_string().to_ascii_lowercase().as_str() {
        "serial" | "serial4" => Some(ColType::Int4),
        "bigserial" | "serial8" => Some(ColType::Int8),
        "smallserial" | "serial2" => Some(ColType::Int2),
        _ => None,
    }
}

/// For a column of CREATE TABLE: its type if it is `serial` (rule 1), else `None`
/// (the caller reads the type as usual).
pub(crate) fn serial_column(c: &ast::ColumnDef) -> Option<ColType> {
    serial_type(&c.data_type)
}

/// The sequence column `col` owns, if it is `serial` (`serial` set) or an identity
/// column (`identity`: its option); the column is made NOT NULL and, for an
/// identity, marked. 42601 for an identity with a DEFAULT or NULL; 22023 for an
/// identity of a type other than the integers.
pub(crate) fn column_sequence(
    table: &str,
    col: &mut Column,
    serial: bool,
    identity: Option<(bool, &[ast::SequenceOptions])>,
    null_given: bool,
) -> SqlResult<Option<ColumnSeq>> {
    let cname = col.name.clone();
    let mut options = match identity {
        None if !serial => return Ok(None),
        None => SeqOptions::default(),
        Some((always, opts)) => {
            if serial || col.default.is_some() {
                return Err(SqlError::syntax(format!(
                    "both default and identity specified for column \"{cname}\" of table \"{table}\""
                )));
            }
            if null_given && !col.not_null {
                return Err(SqlError::syntax(format!(
                    "conflicting NULL/NOT NULL declarations for column \"{cname}\" of table \"{table}\""
                )));
            }
            if !matches!(col.ty, ColType::Int2 | ColType::Int4 | ColType::Int8) {
                return Err(SqlError::new(
                    "22023",
                    "identity column type must be smallint, integer, or bigint",
                ));
            }
            col.identity = Some(always);
            seq_options(opts)?
        }
    };
    if serial && col.default.is_some() {
        return Err(SqlError::syntax(format!(
            "multiple default values specified for column \"{cname}\" of table \"{table}\""
        )));
    }
    if options.ty.is_some() {
        return Err(SqlError::syntax("conflicting or redundant options"));
    }
    options.ty = Some(col.ty);
    col.not_null = true;
    Ok(Some(ColumnSeq {
        column: cname,
        options,
    }))
}

/// A name taken nowhere in the relations' namespace: `base`, else `base1`, `base2`...
pub(crate) fn free_name(t: &Txn<'_>, db: &str, base: &str) -> SqlResult<String> {
    let mut name = base.to_string();
    let mut k = 0;
    while t.relation_name_taken(db, &name)? {
        k += 1;
        name = format!("{base}{k}");
    }
    Ok(name)
}

/// `name` as a `regclass` literal reads it back: quoted unless it is a plain
/// lower-case identifier.
pub(crate) fn regclass_literal(name: &str) -> String {
    let plain = name
        .chars()
        .next()
        .is_some_and(|c| c.is_ascii_lowercase() || c == '_')
        && name
            .chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_');
    let ident = if plain {
        name.to_string()
    } else {
        format!("\"{}\"", name.replace('"', "\"\""))
    };
    format!("'{}'::regclass", ident.replace('\'', "''"))
}

/// Rule 2: creates the sequences of a new table's columns and names them in their
/// columns (and in a `serial` column's DEFAULT).
pub(crate) fn create_owned(
    t: &mut Txn<'_>,
    db: &str,
    table: &str,
    columns: &mut [Column],
    seqs: &[ColumnSeq],
) -> SqlResult<()> {
    for cs in seqs {
        let Some(col) = columns.iter_mut().find(|c| c.name == cs.column) else {
            continue;
        };
        let name = free_name(t, db, &format!("{table}_{}_seq", cs.column))?;
        t.create_sequence(db, &name, cs.options.define(true)?)?;
        if col.identity.is_none() {
            col.default = Some(format!("nextval({})", regclass_literal(&name)));
        }
        col.owned_seq = Some(name);
    }
    Ok(())
}

/// CREATE SEQUENCE (in the session's transaction, ddl rule 1).
pub(crate) fn create(
    s: &mut Session<'_>,
    name: &str,
    if_not_exists: bool,
    options: &SeqOptions,
    notices: &mut Notices,
) -> SqlResult<Output> {
    let def = options.define(false)?;
    let db = s.db().to_string();
    let mut skipped = false;
    s.write(|t| {
        if if_not_exists && t.relation_name_taken(&db, name)? {
            skipped = true;
            return Ok(());
        }
        Ok(t.create_sequence(&db, name, def)?)
    })?;
    if skipped {
        notices.push(crate::ddl::exists_skipping(name));
    }
    Ok(Output::Command("CREATE SEQUENCE".into()))
}

/// DROP SEQUENCE [IF EXISTS] names: all checked first, then dropped (ddl rule 4).
pub(crate) fn drop(
    s: &mut Session<'_>,
    names: &[String],
    if_exists: bool,
    notices: &mut Notices,
) -> SqlResult<Output> {
    let db = s.db().to_string();
    let mut missing = Vec::new();
    s.write(|t| {
        for n in names {
            if !t.relation_name_taken(&db, n)? {
                if !if_exists {
                    return Err(SqlError::new(
                        "42P01",
                        format!("sequence \"{n}\" does not exist"),
                    ));
                }
                missing.push(n.clone());
            }
        }
        for n in names.iter().filter(|n| !missing.contains(n)) {
            t.drop_sequence(&db, n)?;
        }
        Ok(())
    })?;
    for n in missing {
        notices.push((
            "NOTICE",
            format!("sequence \"{n}\" does not exist, skipping"),
        ));
    }
    Ok(Output::Command("DROP SEQUENCE".into()))
}

/// The identity column's option of a column definition: (ALWAYS, its sequence
/// options); 0A000 for a generated (computed) column.
pub(crate) fn identity_option(
    o: &ast::ColumnOption,
) -> SqlResult<Option<(bool, &[ast::SequenceOptions])>> {
    let ast::ColumnOption::Generated {
        generated_as,
        sequence_options,
        generation_expr,
        ..
    } = o
    else {
        return Ok(None);
    };
    if generation_expr.is_some() {
        return Err(SqlError::unsupported("generated columns"));
    }
    let always = matches!(generated_as, ast::GeneratedAs::Always);
    Ok(Some((always, sequence_options.as_deref().unwrap_or(&[]))))
}
