//! System views: relations whose rows the server makes when they are read
//! (`pg_stat_replication`, `pg_stat_wal_receiver`, `strata_stat_replay`).
//!
//! Entry points: [`schema`] (a view's columns, for binding), [`SystemViews`] (what the
//! server implements to give their rows), [`NoViews`].
//!
//! Rules:
//! 1. A view's name is resolved before the database's tables, as PostgreSQL's
//!    `pg_catalog` comes first in the search path; its rows are made at the scan, in
//!    the column order of [`schema`], and are never written (a write names no table:
//!    42P01).
//! 2. Times are `timestamp with time zone`, as PostgreSQL's; types Strata lacks are
//!    shown as text in PostgreSQL's output format: intervals as `HH:MM:SS.ffffff`,
//!    addresses as text.

use crate::{Datum, SqlType};

type Col = (&'static str, SqlType);

/// The session's own prepared statements (made by the session, not the server);
/// `parameter_types` is `regtype[]` in PostgreSQL, its text here (rule 2).
const PREPARED: &[Col] = &[
    ("name", SqlType::Text),
    ("statement", SqlType::Text),
    ("prepare_time", SqlType::TimestampTz),
    ("parameter_types", SqlType::Text),
    ("from_sql", SqlType::Bool),
    ("generic_plans", SqlType::Int8),
    ("custom_plans", SqlType::Int8),
];

const REPLICATION: &[Col] = &[
    ("pid", SqlType::Int4),
    ("usename", SqlType::Text),
    ("application_name", SqlType::Text),
    ("client_addr", SqlType::Text),
    ("client_port", SqlType::Int4),
    ("backend_start", SqlType::TimestampTz),
    ("backend_xmin", SqlType::Int8),
    ("state", SqlType::Text),
    ("sent_lsn", SqlType::Lsn),
    ("write_lsn", SqlType::Lsn),
    ("flush_lsn", SqlType::Lsn),
    ("replay_lsn", SqlType::Lsn),
    ("write_lag", SqlType::Text),
    ("flush_lag", SqlType::Text),
    ("replay_lag", SqlType::Text),
    ("sync_priority", SqlType::Int4),
    ("sync_state", SqlType::Text),
    ("reply_time", SqlType::TimestampTz),
];

const WAL_RECEIVER: &[Col] = &[
    ("pid", SqlType::Int4),
    ("status", SqlType::Text),
    ("receive_start_lsn", SqlType::Lsn),
    ("receive_start_tli", SqlType::Int4),
    ("written_lsn", SqlType::Lsn),
    ("flushed_lsn", SqlType::Lsn),
    ("received_tli", SqlType::Int4),
    ("last_msg_send_time", SqlType::TimestampTz),
    ("last_msg_receipt_time", SqlType::TimestampTz),
    ("latest_end_lsn", SqlType::Lsn),
    ("slot_name", SqlType::Text),
    ("sender_host", SqlType::Text),
    ("sender_port", SqlType::Int4),
    ("conninfo", SqlType::Text),
];

/// Per record type, what replay spent (on a standby since start; on a primary, its
/// crash recovery): Strata's own view.
const REPLAY: &[Col] = &[
    ("resource_manager", SqlType::Text),
    ("record_type", SqlType::Text),
    ("records", SqlType::Int8),
    ("total_ms", SqlType::Numeric),
    ("avg_us", SqlType::Numeric),
];

/// The columns of system view `name` (rule 1), or `None` if it is not one.
pub fn schema(name: &str) -> Option<Vec<(String, SqlType)>> {
    let cols = match name {
        "pg_prepared_statements" => PREPARED,
        "pg_stat_replication" => REPLICATION,
        "pg_stat_wal_receiver" => WAL_RECEIVER,
        "strata_stat_replay" => REPLAY,
        _ => return None,
    };
    Some(cols.iter().map(|(n, t)| (n.to_string(), *t)).collect())
}

/// What the server gives the views (rule 1).
pub trait SystemViews: Send + Sync {
    /// The rows of view `name`, in [`schema`]'s column order.
    fn rows(&self, name: &str) -> Vec<Vec<Datum>>;
    /// `pg_reload_conf()`: the server re-reads its configuration files; whether it
    /// did (no server: false).
    fn reload_conf(&self) -> bool {
        false
    }
}

/// No server: every view is empty (in-process tests).
pub struct NoViews;

impl SystemViews for NoViews {
    fn rows(&self, _: &str) -> Vec<Vec<Datum>> {
        Vec::new()
    }
}

/// A Unix time in microseconds as a `timestamp with time zone` (rule 2).
pub fn timestamp(unix_us: i64) -> Datum {
    Datum::TimestampTz(unix_us - crate::time::PG_EPOCH_UNIX_US)
}

/// A duration as PostgreSQL prints an interval under a day (rule 2).
pub fn interval(d: std::time::Duration) -> Datum {
    let us = d.as_micros();
    let s = us / 1_000_000;
    Datum::Text(format!(
        "{:02}:{:02}:{:02}.{:06}",
        s / 3600,
        s / 60 % 60,
        s % 60,
        us % 1_000_000
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn times_print_as_postgres_prints_them() {
        assert_eq!(
            crate::datetime::format_timestamptz(
                match timestamp(1_795_374_007_000_123) {
                    Datum::TimestampTz(t) => t,
                    other => panic!("{other:?}"),
                },
                &crate::datetime::Settings::default()
            ),
            "2026-11-22 19:00:07.000123+00"
        );
        assert_eq!(
            interval(std::time::Duration::from_micros(3_723_000_450)),
            Datum::Text("01:02:03.000450".into())
        );
        assert!(schema("pg_stat_replication").is_some_and(|c| c.len() == 18));
        assert!(schema("t").is_none());
    }
}
