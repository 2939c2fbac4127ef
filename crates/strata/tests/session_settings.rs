//! A client's date/time settings reach the session as PostgreSQL's do (issue 31,
//! settings rules 6 and 7): psql's PGTZ, PGDATESTYLE and PGOPTIONS travel in the
//! startup packet and are the session's settings (what RESET returns to), a
//! refused one ends the connection with PostgreSQL's FATAL, and output follows
//! them. Expected answers are PostgreSQL 15's.

mod common;
use common::*;

#[test]
fn startup_settings_shape_output_and_refused_ones_are_fatal() {
    let dir = tempfile::tempdir().unwrap();
    let s = Server::start(&dir.path().join("d"), &[]);
    let out = psql_command(s.port, "strata", "postgres", None)
        .env("PGTZ", "America/New_York")
        .env("PGDATESTYLE", "SQL, DMY")
        .env(
            "PGOPTIONS",
            "-c intervalstyle=sql_standard -c extra_float_digits=0",
        )
        .args([
            "-c",
            "show timezone",
            "-c",
            "show datestyle",
            "-c",
            "select timestamptz '2024-07-01 12:00:00+00', date '2024-02-03', \
             interval '1 day 2 hours', 0.1::float8 + 0.2::float8",
            "-c",
            "set timezone = 'UTC'",
            "-c",
            "reset timezone",
            "-c",
            "show timezone",
        ])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}\n{}",
        String::from_utf8_lossy(&out.stderr),
        s.log_text()
    );
    assert_eq!(
        String::from_utf8_lossy(&out.stdout),
        "America/New_York\nSQL, DMY\n01/07/2024 08:00:00 EDT|03/02/2024|1 2:00:00|0.3\nAmerica/New_York\n"
    );
    let refused = psql_command(s.port, "strata", "postgres", None)
        .env("PGOPTIONS", "-c TimeZone=Nowhere/Land")
        .args(["-c", "select 1"])
        .output()
        .unwrap();
    assert!(!refused.status.success());
    let err = String::from_utf8_lossy(&refused.stderr);
    assert!(
        err.contains("FATAL:  invalid value for parameter \"TimeZone\": \"Nowhere/Land\""),
        "{err}"
    );
    // The server goes on.
    assert_eq!(s.psql_ok("postgres", &["-c", "select 1"]).trim(), "1");
}
