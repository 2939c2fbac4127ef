//! The utility statements that are not data definition: SET and RESET, SHOW,
//! CHECKPOINT and VACUUM, one function each.
//!
//! Entry point: [`run`], which the session's dispatcher calls with a parsed
//! [`Utility`] once the block state allows it (session rules 3 and 4);
//! [`columns`] describes what it returns.
//!
//! Rules (cited as "utility rule N"):
//! 1. SET accepts what `settings` accepts (settings rules); server settings
//!    (those of `strata.conf`, `server_version`, `server_encoding`) are 55P02. A SET
//!    in a block is undone if the block rolls back (session rule 3).
//! 2. SHOW looks a name up in the session's SETs, then the server's settings, then
//!    the defaults; SHOW ALL lists the server's and the session's, sorted by name.
//! 3. VACUUM never runs in a block (session rule 4): its own transaction. Then
//!    each table vacuumed gets its pages, live rows and all-visible pages recorded,
//!    as PostgreSQL's VACUUM sets relpages, reltuples and relallvisible (one write for them all, WAL-logged; their columns'
//!    statistics kept), so the planner estimates a table VACUUM has seen by its
//!    rows, not by the ten pages assumed of one never vacuumed.
//! 4. ANALYZE (and VACUUM ANALYZE after its vacuum) samples each table named, or
//!    every table of the database, as its transaction sees it (`gather` rules) and
//!    stores the statistics in the engine's catalog in that transaction: one
//!    write, WAL-logged, so standbys plan with them too. A table the role may not
//!    vacuum is skipped with PostgreSQL's WARNING; views and sequences are not
//!    analyzed (named: PostgreSQL's WARNING too).

use crate::bind;
use crate::session::{Notices, Output, ResultSink, Session};
use crate::{settings, Datum, SqlError, SqlResult, SqlType, Utility};

/// Runs one utility statement; SHOW gives its rows to `sink`.
pub(crate) fn run(
    s: &mut Session<'_>,
    u: &Utility,
    sink: &mut dyn ResultSink,
    notices: &mut Notices,
) -> SqlResult<Output> {
    match u {
        Utility::SetTransaction { modes, session } => set_transaction(s, *modes, *session, notices),
        Utility::Set { name, value, local } if *local => {
            set_local(s, name, value.as_deref(), notices)
        }
        Utility::Set { name, value, .. } => {
            s.forget_local(name);
            set(s, name, value.as_deref())
        }
        Utility::Show { name } => show(s, name, sink),
        Utility::Checkpoint => checkpoint(s),
        Utility::Vacuum { table, analyze } => {
            let out = vacuum(s, table.as_deref(), notices)?;
            if *analyze {
                let targets: Vec<(String, Vec<String>)> =
                    table.iter().map(|t| (t.clone(), Vec::new())).collect();
                run_analyze(s, &targets, false, notices)?;
            }
            Ok(out)
        }
        Utility::Analyze { targets, verbose } => run_analyze(s, targets, *verbose, notices),
    }
}

/// The result columns of a utility statement (Describe): SHOW's, or none.
pub(crate) fn columns(u: &Utility) -> Vec<(String, SqlType)> {
    match u {
        Utility::Show { name } => show_columns(name),
        Utility::Set { .. }
        | Utility::SetTransaction { .. }
        | Utility::Checkpoint
        | Utility::Vacuum { .. }
        | Utility::Analyze { .. } => vec![],
    }
}

/// SET TRANSACTION modes: this block's (session rule 10; outside a block,
/// PostgreSQL's warning and no effect), or with `session` the defaults of the
/// blocks to come (`default_transaction_read_only`).
fn set_transaction(
    s: &mut Session<'_>,
    modes: crate::TxnModes,
    session: bool,
    notices: &mut Notices,
) -> SqlResult<Output> {
    if session {
        if let Some(ro) = modes.read_only {
            let v = if ro { "on" } else { "off" };
            s.vars_mut()
                .insert("default_transaction_read_only".into(), v.into());
        }
        if let Some(rr) = modes.repeatable {
            let v = if rr {
                "repeatable read"
            } else {
                "read committed"
            };
            s.vars_mut()
                .insert("default_transaction_isolation".into(), v.into());
        }
    } else if !s.in_block() {
        notices.push((
            "WARNING",
            "SET TRANSACTION can only be used in transaction blocks".into(),
        ));
    } else {
        if let Some(rr) = modes.repeatable {
            s.set_block_isolation(rr)?;
        }
        if let Some(ro) = modes.read_only {
            s.set_block_read_only(ro);
        }
    }
    Ok(Output::Command("SET".into()))
}

/// SET LOCAL: as SET, until the transaction ends (utility rule 1); outside a
/// transaction block PostgreSQL's WARNING and no effect.
fn set_local(
    s: &mut Session<'_>,
    name: &str,
    value: Option<&str>,
    notices: &mut Notices,
) -> SqlResult<Output> {
    if !s.in_block() {
        settings::check(name, value.unwrap_or("0")).or_else(|e| match e.code == "42704" {
            true => Err(e),
            false => Ok(String::new()),
        })?;
        notices.push((
            "WARNING",
            "SET LOCAL can only be used in transaction blocks".into(),
        ));
        return Ok(Output::Command("SET".into()));
    }
    s.remember_local(name);
    set(s, name, value)
}

/// SET `name` TO `value`; `None` (DEFAULT, RESET) goes back to the default.
/// `all` with `None` is RESET ALL (utility rule 1).
fn set(s: &mut Session<'_>, name: &str, value: Option<&str>) -> SqlResult<Output> {
    if name == "all" {
        s.reset_all();
        return Ok(Output::Command("RESET".into()));
    }
    if s.server().settings.iter().any(|(n, _, _)| n == name) {
        return Err(SqlError::new(
            "55P02",
            format!("parameter \"{name}\" cannot be changed without restarting the server"),
        ));
    }
    if matches!(name, "server_version" | "server_encoding") {
        return Err(SqlError::new(
            "55P02",
            format!("parameter \"{name}\" cannot be changed"),
        ));
    }
    // The block's own modes, not settings of the session (session rule 10).
    if name == "transaction_read_only" {
        let v = settings::check(name, value.unwrap_or("off"))?;
        s.set_block_read_only(v == "on");
        return Ok(Output::Command("SET".into()));
    }
    if name == "transaction_isolation" {
        let level = match value {
            Some(v) => settings::check(name, v)?,
            None => s.default_isolation(),
        };
        s.set_block_isolation(level == "repeatable read")?;
        return Ok(Output::Command("SET".into()));
    }
    if name == "transaction_deferrable" {
        settings::check(name, value.unwrap_or("off"))?;
        return Ok(Output::Command("SET".into()));
    }
    match value {
        Some(v) => {
            let v = match settings::check_datetime(name, v, s.vars())? {
                Some(v) => v,
                None => settings::check(name, v)?,
            };
            s.vars_mut().insert(name.to_string(), v);
        }
        None => {
            // Only the name is checked: an unknown one is 42704, as in PostgreSQL.
            settings::check(name, "0").or_else(|e| {
                if e.code == "42704" {
                    Err(e)
                } else {
                    Ok(String::new())
                }
            })?;
            match s.startup_value(name).cloned() {
                Some(v) => s.vars_mut().insert(name.to_string(), v),
                None => s.vars_mut().remove(name),
            };
        }
    }
    Ok(Output::Command("SET".into()))
}

/// SHOW's result columns: one named after the parameter, or SHOW ALL's three.
fn show_columns(name: &str) -> Vec<(String, SqlType)> {
    if name == "all" {
        return ["name", "setting", "description"]
            .iter()
            .map(|c| (c.to_string(), SqlType::Text))
            .collect();
    }
    vec![(name.to_string(), SqlType::Text)]
}

/// SHOW `name` or SHOW ALL (utility rule 2).
fn show(s: &Session<'_>, name: &str, sink: &mut dyn ResultSink) -> SqlResult<Output> {
    let rows = show_rows(s, name)?;
    sink.columns(&show_columns(name))?;
    let n = rows.len() as u64;
    for r in rows {
        sink.row(r)?;
    }
    Ok(Output::Rows(n))
}

fn show_rows(s: &Session<'_>, name: &str) -> SqlResult<Vec<Vec<Datum>>> {
    let text = |v: &str| Datum::Text(v.to_string());
    let server = &s.server().settings;
    if name == "all" {
        // A role that may not examine a setting does not see it (PostgreSQL's rule).
        let who = s.who()?;
        let mut rows: Vec<Vec<Datum>> = server
            .iter()
            .filter(|(n, _, _)| crate::privileges::may_show(&who, n).is_ok())
            .map(|(n, v, d)| vec![text(n), text(v), text(d)])
            .collect();
        for (n, v) in s.vars() {
            rows.push(vec![text(n), text(v), text("session setting")]);
        }
        rows.sort_by(|a, b| bind::compare(&a[0], &b[0]));
        return Ok(rows);
    }
    let v = if name == "transaction_read_only" {
        (if s.read_only_now() { "on" } else { "off" }).into()
    } else if name == "transaction_isolation" {
        s.isolation_now()
    } else if let Some(v) = s.vars().get(name) {
        v.clone()
    } else if let Some((_, v, _)) = server.iter().find(|(n, _, _)| n == name) {
        v.clone()
    } else {
        match name {
            "server_version" => "15.0".into(),
            "server_encoding" => "UTF8".into(),
            _ => settings::default_of(name)
                .ok_or_else(|| {
                    SqlError::new(
                        "42704",
                        format!("unrecognized configuration parameter \"{name}\""),
                    )
                })?
                .into(),
        }
    };
    Ok(vec![vec![Datum::Text(v)]])
}

fn checkpoint(s: &mut Session<'_>) -> SqlResult<Output> {
    s.engine().checkpoint()?;
    Ok(Output::Command("CHECKPOINT".into()))
}

/// VACUUM one table or the database, in a transaction of its own (utility rule 3).
/// A relation the role may not vacuum is skipped with PostgreSQL's WARNING.
fn vacuum(s: &mut Session<'_>, table: Option<&str>, notices: &mut Notices) -> SqlResult<Output> {
    let w = s.who()?;
    let db_owner = s.catalog().database_entry(s.db())?.owner;
    let mut keep = |r: &strata_engine::RelEntry| {
        let ok = crate::privileges::may_vacuum(&w, r, db_owner);
        if !ok {
            notices.push((
                "WARNING",
                format!(
                    "skipping \"{}\" --- only table or database owner can vacuum it",
                    r.name
                ),
            ));
        }
        ok
    };
    let done = s.begin_txn()?.vacuum_where(s.db(), table, &mut keep)?;
    let db = s.db().to_string();
    // Rule 3: every table's figures in one write (one commit, not one a table).
    s.write(|t| {
        for (r, v) in &done {
            let old = t.table_stats(&db, &r.name);
            let Some(stats) = vacuumed_stats(old.as_deref(), v, r.columns.len()) else {
                continue;
            };
            match t
                .set_table_stats(&db, &r.name, stats)
                .map_err(SqlError::from)
            {
                // Dropped since it was vacuumed: nothing left to describe.
                Err(e) if e.code == "42P01" => {}
                r => r?,
            }
        }
        Ok(())
    })?;
    Ok(Output::Command("VACUUM".into()))
}

/// Utility rule 3: what a VACUUM leaves the planner of a table — its pages and its
/// live rows (PostgreSQL's relpages and reltuples), its columns' statistics as
/// ANALYZE left them. Rows on pages the pass skipped (all visible) are the old
/// density's, or the pages read's where there was none (PostgreSQL's
/// vac_estimate_reltuples); None where the pass read no page and nothing was
/// known (every page all visible, no figures kept from before).
fn vacuumed_stats(
    old: Option<&strata_engine::TableStats>,
    v: &strata_engine::VacuumStats,
    ncols: usize,
) -> Option<strata_engine::TableStats> {
    let (pages, scanned, live) = (v.pages as f64, v.pages_scanned as f64, v.live_tuples as f64);
    let reltuples = match old {
        _ if v.pages_scanned >= v.pages => live,
        Some(o) if o.relpages > 0 => {
            (o.reltuples / f64::from(o.relpages) * (pages - scanned) + live).round()
        }
        _ if scanned > 0.0 => (live / scanned * pages).round(),
        _ => return None,
    };
    Some(strata_engine::TableStats {
        reltuples,
        relpages: u32::try_from(v.pages).unwrap_or(u32::MAX),
        relallvisible: u32::try_from(v.all_visible).unwrap_or(u32::MAX),
        columns: match old {
            Some(o) => o.columns.clone(),
            None => vec![None; ncols],
        },
    })
}

/// ANALYZE (utility rule 4).
fn run_analyze(
    s: &mut Session<'_>,
    targets: &[(String, Vec<String>)],
    verbose: bool,
    notices: &mut Notices,
) -> SqlResult<Output> {
    let w = s.who()?;
    let db_owner = s.catalog().database_entry(s.db())?.owner;
    let db = s.db().to_string();
    let pages = |s: &Session<'_>, t: &str| s.planner_pages(t);
    let mut found = Vec::new();
    s.write(|t| {
        let all = t.relations(&db)?;
        let chosen: Vec<(std::sync::Arc<strata_engine::RelEntry>, &[String])> = if targets.is_empty() {
            all.into_iter().map(|r| (r, &[][..])).collect()
        } else {
            let mut v = Vec::new();
            for (name, cols) in targets {
                let dbe = t.database(&db)?;
                v.push((t.relation(&dbe, name)?, cols.as_slice()));
            }
            v
        };
        for (r, cols) in chosen {
            if r.sequence.is_some() || r.view.is_some() {
                if !targets.is_empty() {
                    notices.push((
                        "WARNING",
                        format!("skipping \"{}\" --- cannot analyze non-tables or special system tables", r.name),
                    ));
                }
                continue;
            }
            if !crate::privileges::may_vacuum(&w, &r, db_owner) {
                notices.push((
                    "WARNING",
                    format!("skipping \"{}\" --- only table or database owner can analyze it", r.name),
                ));
                continue;
            }
            found.push((r, cols.to_vec()));
        }
        Ok(())
    })?;
    for (r, cols) in found {
        let n = pages(s, &r.name);
        let visible = s.planner_all_visible(&r.name, n);
        let report =
            s.write_checked(|t, check| analyze_table(t, (&db, check), &r, &cols, (n, visible)))?;
        if verbose {
            // A temporary table's stored name is already schema-qualified.
            let shown = match r.name.contains('.') {
                true => r.name.clone(),
                false => format!("public.{}", r.name),
            };
            notices.push(("INFO", format!("analyzing \"{shown}\"")));
            notices.push(("INFO", report));
        }
    }
    Ok(Output::Command("ANALYZE".into()))
}

/// Samples one table and stores its statistics; PostgreSQL's VERBOSE line.
fn analyze_table(
    t: &mut strata_engine::Txn<'_>,
    (db, check): (&str, strata_engine::Interrupt<'_>),
    r: &strata_engine::RelEntry,
    cols: &[String],
    (pages, visible): (u32, u32),
) -> SqlResult<String> {
    let mut mask = vec![cols.is_empty(); r.columns.len()];
    for c in cols {
        match r.columns.iter().position(|x| x.name == *c) {
            Some(i) => mask[i] = true,
            None => {
                return Err(SqlError::new(
                    "42703",
                    format!("column \"{c}\" of relation \"{}\" does not exist", r.name),
                ))
            }
        }
    }
    let mut sample = crate::gather::Sampler::new(crate::gather::SAMPLE_ROWS);
    {
        let snap = t.snapshot();
        let mut cur = t.seq_cursor(db, &r.name)?.only(mask.clone());
        while cur.next_batch_visit(&snap, check, &mut |row| sample.offer(row))? {}
    }
    let mut stats = crate::gather::table_stats(&sample, &mask, pages);
    stats.relallvisible = visible;
    t.set_table_stats(db, &r.name, stats)?;
    Ok(format!(
        "\"{}\": scanned {pages} of {pages} pages, containing {} live rows and 0 dead rows; {} rows in sample, {} estimated total rows",
        r.name.rsplit('.').next().unwrap_or(&r.name),
        sample.seen,
        sample.rows.len(),
        sample.seen
    ))
}
