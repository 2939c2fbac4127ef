//! Session settings (SET, RESET, SHOW): the names a session accepts and the values
//! of those Strata acts on.
//!
//! Rules:
//! 1. A name is accepted if PostgreSQL 15 knows it as a setting a session may change
//!    ([`KNOWN`]) or if it is a custom `prefix.name` (PostgreSQL's placeholders);
//!    any other name is 42704 `unrecognized configuration parameter "x"`, as in
//!    PostgreSQL. Drivers send some of these at connect or right after
//!    (`DateStyle`, `extra_float_digits`, `TimeZone`, `client_encoding`,
//!    `application_name`, `search_path`, ...).
//! 2. Time settings (`statement_timeout`, `lock_timeout`,
//!    `idle_in_transaction_session_timeout`, `idle_session_timeout`) take PostgreSQL's
//!    units (a bare number is milliseconds), are checked against PostgreSQL's range
//!    (0 .. 2147483647 ms) and are stored as SHOW prints them (`1500ms`, `90s`).
//! 3. `work_mem` takes PostgreSQL's memory units (B, kB, MB, GB, TB; a bare number is
//!    kB), its range (64 .. 2147483647 kB), and is stored as SHOW prints it (`4MB`).
//! 4. A setting Strata cannot honour is refused, never accepted and ignored: the
//!    transaction settings take only the modes Strata runs (session rule 10);
//!    Boolean ones any of PostgreSQL's spellings, stored as `on`/`off`.
//! 5. The cost constants of plans Strata never makes — JIT compilation
//!    (`jit_above_cost`, ...) — are accepted as a PostgreSQL built without JIT
//!    accepts them: they tune nothing that runs. Of the parallel settings,
//!    `max_parallel_workers_per_gather` (0 .. 1024) sets the workers of a parallel
//!    plan (`parallel` rule 1). The cost units ([`COST_UNITS`]: `seq_page_cost`,
//!    `random_page_cost`, `cpu_*_cost`, `parallel_setup_cost`,
//!    `parallel_tuple_cost`; numbers ≥ 0) are what EXPLAIN's estimates are
//!    counted in (`cost` rule 1); the planner's choices do not weigh them yet (an
//!    open item of issue 28). `transaction_deferrable` matters only to SERIALIZABLE READ ONLY,
//!    which Strata refuses, so it is accepted as PostgreSQL accepts it for the
//!    other levels. The planner switches (`enable_*`, Boolean) are followed by
//!    the planner (planner rule 8), those of plan shapes Strata never builds
//!    (merge joins, bitmap scans, memoize, ...) forbidding or allowing what is
//!    never built; `enable_material` stays unrecognized: a nested loop always
//!    holds its inner side's rows.
//! 6. `DateStyle`, `TimeZone`, `IntervalStyle` and `extra_float_digits` are
//!    checked as PostgreSQL's check hooks do and stored as SHOW prints them
//!    ([`check_datetime`]); the session's output settings are read from them
//!    ([`datetime_settings`]).
//! 7. A startup packet's parameters (and its `options`' `-c name=value`) are
//!    SETs made before the session's first statement, checked as SET checks them;
//!    one refused ends the connection (FATAL), as in PostgreSQL
//!    ([`check_startup`]).

use super::{SqlError, SqlResult};

/// Settings a session may change, with the value SHOW prints before any SET
/// (lower-case names, as identifiers fold).
pub const KNOWN: &[(&str, &str)] = &[
    ("application_name", ""),
    ("bytea_output", "hex"),
    ("check_function_bodies", "on"),
    ("client_encoding", "UTF8"),
    ("client_min_messages", "notice"),
    ("datestyle", "ISO, MDY"),
    ("default_tablespace", ""),
    ("default_transaction_deferrable", "off"),
    ("default_transaction_isolation", "read committed"),
    ("default_transaction_read_only", "off"),
    ("effective_cache_size", "4GB"),
    ("enable_async_append", "on"),
    ("enable_bitmapscan", "on"),
    ("enable_gathermerge", "on"),
    ("enable_hashagg", "on"),
    ("enable_hashjoin", "on"),
    ("enable_incremental_sort", "on"),
    ("enable_indexonlyscan", "on"),
    ("enable_indexscan", "on"),
    ("enable_memoize", "on"),
    ("enable_mergejoin", "on"),
    ("enable_nestloop", "on"),
    ("enable_parallel_append", "on"),
    ("enable_parallel_hash", "on"),
    ("enable_partition_pruning", "on"),
    ("enable_partitionwise_aggregate", "off"),
    ("enable_partitionwise_join", "off"),
    ("enable_seqscan", "on"),
    ("enable_sort", "on"),
    ("enable_tidscan", "on"),
    ("escape_string_warning", "on"),
    ("extra_float_digits", "1"),
    ("geqo", "on"),
    ("idle_in_transaction_session_timeout", "0"),
    ("idle_session_timeout", "0"),
    ("intervalstyle", "postgres"),
    ("jit", "off"),
    ("jit_above_cost", "100000"),
    ("jit_inline_above_cost", "500000"),
    ("jit_optimize_above_cost", "500000"),
    ("lc_messages", "C"),
    ("lc_monetary", "C"),
    ("lc_numeric", "C"),
    ("lc_time", "C"),
    ("lock_timeout", "0"),
    ("log_min_duration_statement", "-1"),
    ("log_statement", "none"),
    ("maintenance_work_mem", "64MB"),
    ("min_parallel_index_scan_size", "512kB"),
    ("min_parallel_table_scan_size", "8MB"),
    ("max_parallel_workers_per_gather", "2"),
    ("parallel_leader_participation", "on"),
    ("cpu_index_tuple_cost", "0.005"),
    ("cpu_operator_cost", "0.0025"),
    ("cpu_tuple_cost", "0.01"),
    ("parallel_setup_cost", "1000"),
    ("parallel_tuple_cost", "0.1"),
    ("plan_cache_mode", "auto"),
    ("random_page_cost", "4"),
    ("role", "none"),
    ("row_security", "on"),
    ("search_path", "\"$user\", public"),
    ("seq_page_cost", "1"),
    ("session_replication_role", "origin"),
    ("standard_conforming_strings", "on"),
    ("statement_timeout", "0"),
    ("synchronous_commit", "on"),
    ("temp_buffers", "8MB"),
    ("temp_file_limit", "-1"),
    ("temp_tablespaces", ""),
    ("timezone", "UTC"),
    ("transaction_deferrable", "off"),
    ("transaction_isolation", "read committed"),
    ("transaction_read_only", "off"),
    ("work_mem", "4MB"),
    ("xmloption", "content"),
];

/// The time settings (rule 2).
const TIMES: &[&str] = &[
    "statement_timeout",
    "lock_timeout",
    "idle_in_transaction_session_timeout",
    "idle_session_timeout",
];

/// The value SHOW prints for `name` before any SET; `None` if it is not a setting.
pub fn default_of(name: &str) -> Option<&'static str> {
    KNOWN.iter().find(|(n, _)| *n == name).map(|(_, v)| *v)
}

fn unrecognized(name: &str) -> SqlError {
    SqlError::new(
        "42704",
        format!("unrecognized configuration parameter \"{name}\""),
    )
}

/// Checks a SET (rule 1) and returns the value to store: time settings normalised
/// (rule 2), others as given.
pub fn check(name: &str, value: &str) -> SqlResult<String> {
    if default_of(name).is_none() && !name.contains('.') {
        return Err(unrecognized(name));
    }
    if name == "work_mem" {
        return check_work_mem(value);
    }
    if name == "temp_file_limit" {
        return check_temp_file_limit(value);
    }
    if name == "max_parallel_workers_per_gather" {
        return check_int(name, value, 0, 1024);
    }
    if COST_UNITS.contains(&name) {
        return check_real(name, value);
    }
    if matches!(
        name,
        "default_transaction_isolation" | "transaction_isolation"
    ) {
        return check_isolation(name, value);
    }
    if matches!(
        name,
        "default_transaction_read_only"
            | "transaction_read_only"
            | "default_transaction_deferrable"
            | "transaction_deferrable"
            | "parallel_leader_participation"
    ) || name.starts_with("enable_")
    {
        return check_bool(name, value);
    }
    if name == "plan_cache_mode" {
        return check_enum(
            name,
            value,
            &["auto", "force_generic_plan", "force_custom_plan"],
        );
    }
    if name == "synchronous_commit" && crate::syncrep::Level::parse(value).is_none() {
        return Err(SqlError::new(
            "22023",
            format!("invalid value for parameter \"synchronous_commit\": \"{value}\""),
        )
        .with_hint("Available values: local, remote_write, remote_apply, on, off."));
    }
    if !TIMES.contains(&name) {
        return Ok(value.to_string());
    }
    let v = value.trim();
    if let Some(neg) = v.strip_prefix('-') {
        if parse_time_ms(name, neg, 1).is_ok() {
            return Err(SqlError::new(
                "22023",
                format!(
                    "{v} ms is outside the valid range for parameter \"{name}\" (0 .. 2147483647)"
                ),
            ));
        }
    }
    let ms = parse_time_ms(name, v, 1).map_err(|m| {
        let (msg, hint) = match m.split_once("\nHINT:  ") {
            Some((a, b)) => (a.to_string(), Some(b.to_string())),
            None => (m, None),
        };
        let e = SqlError::new("22023", msg);
        match hint {
            Some(h) => e.with_hint(h),
            None => e,
        }
    })?;
    if ms > i32::MAX as u64 {
        return Err(SqlError::new(
            "22023",
            format!(
                "{ms} ms is outside the valid range for parameter \"{name}\" (0 .. 2147483647)"
            ),
        ));
    }
    Ok(format_ms(ms))
}

/// The planner's cost units (rule 5): EXPLAIN's estimates are in them
/// ([`crate::cost`] rule 1).
pub const COST_UNITS: &[&str] = &[
    "seq_page_cost",
    "random_page_cost",
    "cpu_tuple_cost",
    "cpu_index_tuple_cost",
    "cpu_operator_cost",
    "parallel_tuple_cost",
    "parallel_setup_cost",
];

/// A cost unit: a finite number, at least 0, as SHOW prints it.
fn check_real(name: &str, value: &str) -> SqlResult<String> {
    let v: f64 = value
        .trim()
        .parse()
        .ok()
        .filter(|v: &f64| v.is_finite())
        .ok_or_else(|| {
            SqlError::new(
                "22023",
                format!("invalid value for parameter \"{name}\": \"{value}\""),
            )
        })?;
    if v < 0.0 {
        return Err(SqlError::new(
            "22023",
            format!("{v} is outside the valid range for parameter \"{name}\" (0 .. 1.79769e+308)"),
        ));
    }
    Ok(format!("{v}"))
}

/// One of `values` (any case), stored in lower case; else 22023 with PostgreSQL's
/// hint listing them.
fn check_enum(name: &str, value: &str, values: &[&str]) -> SqlResult<String> {
    let v = value.trim().to_ascii_lowercase();
    if values.contains(&v.as_str()) {
        return Ok(v);
    }
    Err(SqlError::new(
        "22023",
        format!("invalid value for parameter \"{name}\": \"{value}\""),
    )
    .with_hint(format!("Available values: {}.", values.join(", "))))
}

/// An integer setting within PostgreSQL's range for it, as SHOW prints it.
fn check_int(name: &str, value: &str, lo: i64, hi: i64) -> SqlResult<String> {
    let n: i64 = value.trim().parse().map_err(|_| {
        SqlError::new(
            "22023",
            format!("invalid value for parameter \"{name}\": \"{value}\""),
        )
    })?;
    if !(lo..=hi).contains(&n) {
        return Err(SqlError::new(
            "22023",
            format!("{n} is outside the valid range for parameter \"{name}\" ({lo} .. {hi})"),
        ));
    }
    Ok(n.to_string())
}

/// The workers a parallel plan is given (`max_parallel_workers_per_gather`,
/// parallel rule 1).
pub fn parallel_workers(value: Option<&String>) -> usize {
    value.and_then(|v| v.parse().ok()).unwrap_or(2)
}

/// DateStyle, TimeZone, IntervalStyle and extra_float_digits (rule 6): checked
/// as PostgreSQL's
/// check hooks do and returned as SHOW prints them ("Postgres, MDY",
/// "America/New_York", "<-07>+07", "sql_standard"). DateStyle's value is
/// relative to the current one (`SET DateStyle = DMY` keeps the style). `None`
/// for any other name.
pub fn check_datetime(
    name: &str,
    value: &str,
    vars: &std::collections::BTreeMap<String, String>,
) -> SqlResult<Option<String>> {
    let mut st = datetime_settings(vars);
    Ok(Some(match name {
        "datestyle" => {
            st.parse_datestyle(value)?;
            show_datestyle(&st)
        }
        "timezone" => {
            st.set_timezone(value)?;
            st.zone.name().to_string()
        }
        "intervalstyle" => {
            let v = value.trim().to_ascii_lowercase();
            if !matches!(
                v.as_str(),
                "postgres" | "postgres_verbose" | "sql_standard" | "iso_8601"
            ) {
                return Err(SqlError::new(
                    "22023",
                    format!("invalid value for parameter \"IntervalStyle\": \"{value}\""),
                )
                .with_hint(
                    "Available values: postgres, postgres_verbose, sql_standard, iso_8601.",
                ));
            }
            v
        }
        "extra_float_digits" => {
            let n: i64 = value.trim().parse().map_err(|_| {
                SqlError::new(
                    "22023",
                    format!("invalid value for parameter \"extra_float_digits\": \"{value}\""),
                )
            })?;
            if !(-15..=3).contains(&n) {
                return Err(SqlError::new(
                    "22023",
                    format!("{n} is outside the valid range for parameter \"extra_float_digits\" (-15 .. 3)"),
                ));
            }
            n.to_string()
        }
        _ => return Ok(None),
    }))
}

/// DateStyle as SHOW prints it.
fn show_datestyle(st: &crate::datetime::Settings) -> String {
    use crate::datetime::{DateOrder, DateStyle};
    let style = match st.style {
        DateStyle::Iso => "ISO",
        DateStyle::Postgres => "Postgres",
        DateStyle::Sql => "SQL",
        DateStyle::German => "German",
    };
    let order = match st.order {
        DateOrder::Mdy => "MDY",
        DateOrder::Dmy => "DMY",
        DateOrder::Ymd => "YMD",
    };
    format!("{style}, {order}")
}

/// The date/time settings a session's SETs give (rule 6); the stored values
/// were checked by [`check_datetime`].
pub fn datetime_settings(
    vars: &std::collections::BTreeMap<String, String>,
) -> crate::datetime::Settings {
    use crate::datetime::IntervalStyle;
    let mut st = crate::datetime::Settings::default();
    if let Some(v) = vars.get("datestyle") {
        let _ = st.parse_datestyle(v);
    }
    if let Some(v) = vars.get("timezone") {
        let _ = st.set_timezone(v);
    }
    st.extra_float_digits = vars
        .get("extra_float_digits")
        .and_then(|v| v.parse().ok())
        .unwrap_or(1);
    st.interval = match vars.get("intervalstyle").map(String::as_str) {
        Some("postgres_verbose") => IntervalStyle::PostgresVerbose,
        Some("sql_standard") => IntervalStyle::SqlStandard,
        Some("iso_8601") => IntervalStyle::Iso8601,
        _ => IntervalStyle::Postgres,
    };
    st
}

/// The settings of a startup packet (its parameters other than `user`,
/// `database`, `replication` and `options`, then `options`' `-c name=value` and
/// `--name=value`), checked as SET checks them (rule 7) and returned as stored.
/// `server` holds the names only the server's configuration sets (55P02).
pub fn check_startup(
    params: &[(String, String)],
    server: &[&str],
    superuser: bool,
) -> SqlResult<Vec<(String, String)>> {
    let mut given: Vec<(String, String)> = Vec::new();
    for (name, value) in params {
        let name = name.to_ascii_lowercase();
        match name.as_str() {
            "user" | "database" | "replication" => {}
            "options" => given.extend(startup_options(value)?),
            _ => given.push((name, value.clone())),
        }
    }
    let mut vars = std::collections::BTreeMap::new();
    for (name, value) in given {
        if server.contains(&name.as_str()) {
            return Err(SqlError::new(
                "55P02",
                format!("parameter \"{name}\" cannot be changed without restarting the server"),
            ));
        }
        if crate::privileges::SUPERUSER_SET_SETTINGS.contains(&name.as_str()) && !superuser {
            return Err(SqlError::new(
                "42501",
                format!("permission denied to set parameter \"{name}\""),
            ));
        }
        let v = match check_datetime(&name, &value, &vars)? {
            Some(v) => v,
            None => check(&name, &value)?,
        };
        vars.insert(name, v);
    }
    Ok(vars.into_iter().collect())
}

/// The `options` startup parameter: `-c name=value` and `--name=value`,
/// separated by spaces (a backslash escapes the next character).
fn startup_options(text: &str) -> SqlResult<Vec<(String, String)>> {
    let mut words = Vec::new();
    let mut word = String::new();
    let mut chars = text.chars();
    while let Some(c) = chars.next() {
        match c {
            '\\' => word.extend(chars.next()),
            c if c.is_whitespace() => {
                if !word.is_empty() {
                    words.push(std::mem::take(&mut word));
                }
            }
            c => word.push(c),
        }
    }
    if !word.is_empty() {
        words.push(word);
    }
    let mut out = Vec::new();
    let mut it = words.into_iter();
    while let Some(w) = it.next() {
        let pair = if w == "-c" {
            it.next().unwrap_or_default()
        } else if let Some(p) = w.strip_prefix("-c").or_else(|| w.strip_prefix("--")) {
            p.to_string()
        } else {
            return Err(SqlError::new(
                "42601",
                format!("invalid command-line argument for server process: {w}"),
            )
            .with_hint("Try \"postgres --help\" for more information."));
        };
        let Some((n, v)) = pair.split_once('=') else {
            return Err(SqlError::new(
                "42601",
                format!("-c {pair} requires a value"),
            ));
        };
        out.push((n.replace('-', "_").to_ascii_lowercase(), v.to_string()));
    }
    Ok(out)
}

/// An isolation level (rule 4): READ COMMITTED, READ UNCOMMITTED (which
/// PostgreSQL runs as READ COMMITTED) and REPEATABLE READ; SERIALIZABLE is
/// refused (0A000) until Strata has it, never accepted and run as another.
fn check_isolation(name: &str, value: &str) -> SqlResult<String> {
    let v = value.trim().to_ascii_lowercase();
    match v.as_str() {
        "read committed" | "read uncommitted" | "repeatable read" => Ok(v),
        "serializable" => Err(crate::isolation_unsupported()),
        _ => Err(SqlError::new(
            "22023",
            format!("invalid value for parameter \"{name}\": \"{value}\""),
        )
        .with_hint(
            "Available values: serializable, repeatable read, read committed, read uncommitted.",
        )),
    }
}

/// A Boolean setting as SHOW prints it (`on`/`off`), from any of PostgreSQL's
/// spellings (rule 4).
fn check_bool(name: &str, value: &str) -> SqlResult<String> {
    match value.trim().to_ascii_lowercase().as_str() {
        "on" | "true" | "yes" | "1" | "t" | "y" => Ok("on".into()),
        "off" | "false" | "no" | "0" | "f" | "n" => Ok("off".into()),
        _ => Err(SqlError::new(
            "22023",
            format!("parameter \"{name}\" requires a Boolean value"),
        )),
    }
}

/// `work_mem` in kB from a value with PostgreSQL's memory units (rule 3).
fn work_mem_kb(value: &str) -> Option<i128> {
    let v = value.trim();
    let split = v
        .find(|c: char| !(c.is_ascii_digit() || c == '-'))
        .unwrap_or(v.len());
    let (num, unit) = v.split_at(split);
    let n: i128 = num.parse().ok()?;
    let per_kb: (i128, i128) = match unit.trim() {
        "" | "kB" => (1, 1),
        "B" => (1, 1024),
        "MB" => (1024, 1),
        "GB" => (1 << 20, 1),
        "TB" => (1 << 30, 1),
        _ => return None,
    };
    Some(n * per_kb.0 / per_kb.1)
}

/// Checks a SET of `work_mem` (rule 3); returns it as SHOW prints it.
fn check_work_mem(value: &str) -> SqlResult<String> {
    let kb = work_mem_kb(value).ok_or_else(|| {
        SqlError::new(
            "22023",
            format!("invalid value for parameter \"work_mem\": \"{value}\""),
        )
        .with_hint("Valid units for this parameter are \"B\", \"kB\", \"MB\", \"GB\", and \"TB\".")
    })?;
    if !(64..=i128::from(i32::MAX)).contains(&kb) {
        return Err(SqlError::new(
            "22023",
            format!(
                "{kb} kB is outside the valid range for parameter \"work_mem\" (64 .. 2147483647)"
            ),
        ));
    }
    Ok(match kb {
        k if k % (1 << 20) == 0 => format!("{}GB", k >> 20),
        k if k % 1024 == 0 => format!("{}MB", k >> 10),
        k => format!("{k}kB"),
    })
}

/// The session's `work_mem` in bytes (the default, 4MB, if never SET).
/// temp_file_limit as stored, in kB (-1: no limit).
pub fn temp_file_limit_kb(stored: Option<&String>) -> i64 {
    stored
        .and_then(|v| work_mem_kb(v))
        .and_then(|kb| i64::try_from(kb).ok())
        .unwrap_or(-1)
}

/// Checks a SET of `temp_file_limit` (kB, -1 for none, as PostgreSQL).
fn check_temp_file_limit(value: &str) -> SqlResult<String> {
    let kb = work_mem_kb(value).ok_or_else(|| {
        SqlError::new(
            "22023",
            format!("invalid value for parameter \"temp_file_limit\": \"{value}\""),
        )
        .with_hint("Valid units for this parameter are \"kB\", \"MB\", \"GB\", and \"TB\".")
    })?;
    if !(-1..=i128::from(i32::MAX)).contains(&kb) {
        return Err(SqlError::new(
            "22023",
            format!(
                "{kb} kB is outside the valid range for parameter \"temp_file_limit\" (-1 .. 2147483647)"
            ),
        ));
    }
    Ok(match kb {
        -1 => "-1".into(),
        k if k != 0 && k % (1 << 20) == 0 => format!("{}GB", k >> 20),
        k if k != 0 && k % 1024 == 0 => format!("{}MB", k >> 10),
        k => format!("{k}kB"),
    })
}

pub fn work_mem_bytes(stored: Option<&String>) -> usize {
    let kb = stored.and_then(|v| work_mem_kb(v)).unwrap_or(4096);
    usize::try_from(kb).unwrap_or(4096) * 1024
}

/// A time as SHOW prints it: the largest unit that divides it (`0`, `1500ms`, `90s`).
pub fn format_ms(ms: u64) -> String {
    if ms == 0 {
        return "0".into();
    }
    for (unit, per) in [
        ("d", 86_400_000),
        ("h", 3_600_000),
        ("min", 60_000),
        ("s", 1000),
    ] {
        if ms.is_multiple_of(per) {
            return format!("{}{unit}", ms / per);
        }
    }
    format!("{ms}ms")
}

/// A stored time setting in milliseconds (0 = off).
pub fn time_ms(stored: Option<&String>) -> u64 {
    stored
        .and_then(|v| parse_time_ms("", v, 1).ok())
        .unwrap_or(0)
}

/// A time setting in milliseconds, or its error's text (message and HINT).
fn parse_time_ms(name: &str, value: &str, default_unit_ms: u64) -> Result<u64, String> {
    strata_types::units::parse_time_ms(name, value, default_unit_ms).map_err(|e| e.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_and_times_as_postgres() {
        assert_eq!(check("foo", "1").unwrap_err().code, "42704");
        assert_eq!(check("foo.bar", "1").unwrap(), "1");
        assert_eq!(check("datestyle", "ISO").unwrap(), "ISO");
        assert_eq!(check("statement_timeout", "1.5s").unwrap(), "1500ms");
        assert_eq!(check("statement_timeout", "90000").unwrap(), "90s");
        assert_eq!(check("lock_timeout", "0").unwrap(), "0");
        assert_eq!(check("work_mem", "1024").unwrap(), "1MB");
        assert_eq!(check("work_mem", "64kB").unwrap(), "64kB");
        assert_eq!(check("work_mem", "2GB").unwrap(), "2GB");
        assert_eq!(check("work_mem", "10").unwrap_err().code, "22023");
        assert_eq!(check("work_mem", "4 parsecs").unwrap_err().code, "22023");
        assert_eq!(work_mem_bytes(Some(&"1MB".to_string())), 1 << 20);
        assert_eq!(work_mem_bytes(None), 4 << 20);
        assert_eq!(check("lock_timeout", "abc").unwrap_err().code, "22023");
        let e = check("lock_timeout", "-1").unwrap_err();
        assert_eq!(
            e.message,
            "-1 ms is outside the valid range for parameter \"lock_timeout\" (0 .. 2147483647)"
        );
        assert_eq!(time_ms(Some(&"90s".to_string())), 90_000);
        assert_eq!(time_ms(None), 0);
    }

    #[test]
    fn every_known_name_is_accepted_with_its_default_and_others_are_42704() {
        for (name, default) in KNOWN {
            assert_eq!(default_of(name), Some(*default));
            assert!(
                check(name, default).is_ok() || TIMES.contains(name),
                "{name}"
            );
        }
        assert_eq!(default_of("nosuch"), None);
        // Custom placeholders (rule 1): any prefix.name, any value.
        assert_eq!(
            check("myapp.user_id", "42 and more").unwrap(),
            "42 and more"
        );
        let e = check("shared_bufers", "1").unwrap_err();
        assert_eq!(
            e.message,
            "unrecognized configuration parameter \"shared_bufers\""
        );
    }

    #[test]
    fn times_take_postgres_units_and_range_and_print_as_show_does() {
        for (given, stored) in [
            ("0", "0"),
            ("250", "250ms"),
            ("1000", "1s"),
            ("60s", "1min"),
            ("90 min", "90min"),
            ("2h", "2h"),
            ("1d", "1d"),
            ("1500us", "2ms"),
            ("2147483647", "2147483647ms"),
        ] {
            assert_eq!(
                check("statement_timeout", given).unwrap(),
                stored,
                "{given}"
            );
            assert_eq!(
                time_ms(Some(&stored.to_string())),
                parse_time_ms("", given, 1).unwrap(),
                "{given} round-trips"
            );
        }
        for bad in ["2147483648", "25d", "-5", "5 parsecs", "", "ms"] {
            assert_eq!(
                check("idle_session_timeout", bad).unwrap_err().code,
                "22023",
                "{bad}"
            );
        }
        let e = check("lock_timeout", "5 parsecs").unwrap_err();
        assert!(
            e.hint.clone().unwrap().contains("\"min\""),
            "the units in the HINT"
        );
        assert_eq!(format_ms(86_400_000 * 2), "2d");
        assert_eq!(format_ms(3_600_000 + 1), "3600001ms");
    }

    #[test]
    fn work_mem_takes_memory_units_within_64kb_to_2tb() {
        for (given, stored, bytes) in [
            ("64kB", "64kB", 64 << 10),
            ("65536B", "64kB", 64 << 10),
            ("4096", "4MB", 4 << 20),
            ("1GB", "1GB", 1 << 30),
            ("1536kB", "1536kB", 1536 << 10),
            ("2147483647kB", "2147483647kB", 2147483647usize << 10),
        ] {
            assert_eq!(check("work_mem", given).unwrap(), stored, "{given}");
            assert_eq!(work_mem_bytes(Some(&stored.to_string())), bytes, "{given}");
        }
        for bad in ["63kB", "1024B", "2TB", "-1", "1 mB", "MB"] {
            let e = check("work_mem", bad).unwrap_err();
            assert_eq!(e.code, "22023", "{bad}");
        }
        assert!(check("work_mem", "1 parsec")
            .unwrap_err()
            .hint
            .clone()
            .unwrap()
            .contains("\"kB\""));
    }
}
