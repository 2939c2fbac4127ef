//! Roles and privileges hold as PostgreSQL 15's do (issue 27 B): the privilege matrix
//! (`privileges/matrix.sql`: a superuser and three ordinary roles, every statement
//! kind against owned, granted and ungranted objects) gives, statement by statement,
//! the output PostgreSQL 15 gives when psql runs it against both. PostgreSQL's output
//! is kept in `privileges/matrix.expected`; where PostgreSQL is installed the test
//! runs it too and checks that file against it.

mod common;
use common::*;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

fn matrix_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/privileges")
}

/// psql running `script` (from stdin, so every engine's messages name the same
/// input) as `user`, the superuser's name in `:su`; stdout and stderr together.
fn run_psql(port: u16, user: &str, script: &Path) -> String {
    let out_path =
        std::env::temp_dir().join(format!("strata-priv-{port}-{}.out", std::process::id()));
    let out = std::fs::File::create(&out_path).unwrap();
    let status = Command::new(PSQL)
        .args(["-X", "-a", "-q", "-h", "127.0.0.1", "-d", "postgres"])
        .args([
            "-p",
            &port.to_string(),
            "-U",
            user,
            "-v",
            &format!("su={user}"),
        ])
        .env("PGCONNECT_TIMEOUT", "20")
        .stdin(std::fs::File::open(script).unwrap())
        .stdout(out.try_clone().unwrap())
        .stderr(out)
        .status()
        .unwrap();
    assert!(status.code().is_some(), "psql was killed");
    let text = std::fs::read_to_string(&out_path).unwrap();
    let _ = std::fs::remove_file(&out_path);
    text
}

/// The outputs split at each echoed statement: (statement, what followed it).
fn statements(out: &str) -> Vec<String> {
    let mut v: Vec<String> = Vec::new();
    for line in out.lines() {
        let starts = !line.starts_with(' ')
            && !line.starts_with("psql:")
            && !line.starts_with('(')
            && !line.starts_with('-')
            && line
                .chars()
                .next()
                .is_some_and(|c| c.is_ascii_uppercase() || c == '\\');
        if starts || v.is_empty() {
            v.push(String::new());
        }
        let last = v.last_mut().unwrap();
        last.push_str(line);
        last.push('\n');
    }
    v
}

/// An output without the error positions psql adds in terse mode (" at character
/// N"): Strata reports no positions yet, a difference of its whole error
/// reporting, not of privileges.
fn without_positions(out: &str) -> String {
    out.lines()
        .map(|l| match l.find(" at character ") {
            Some(at) if l[at + 14..].chars().all(|c| c.is_ascii_digit()) => &l[..at],
            _ => l,
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// Panics with every statement whose output differs.
fn assert_same(want: &str, got: &str, what: &str) {
    let (want, got) = (without_positions(want), without_positions(got));
    let (w, g) = (statements(&want), statements(&got));
    let mut diffs = Vec::new();
    for (i, (a, b)) in w.iter().zip(&g).enumerate() {
        if a != b {
            diffs.push(format!("--- #{i} PostgreSQL 15:\n{a}+++ {what}:\n{b}"));
        }
    }
    assert!(
        diffs.is_empty() && w.len() == g.len(),
        "{} of {} statements differ ({} vs {} statements):\n{}",
        diffs.len(),
        w.len(),
        w.len(),
        g.len(),
        diffs.join("\n")
    );
}

#[test]
fn the_privilege_matrix_gives_postgres_outcomes() {
    let script = matrix_dir().join("matrix.sql");
    let expected_path = matrix_dir().join("matrix.expected");
    let mut expected = std::fs::read_to_string(&expected_path).unwrap_or_default();
    if Path::new(PG_BIN).join("postgres").exists() {
        let pg = Postgres::start();
        let t0 = Instant::now();
        let pg_out = run_psql(pg.port, "postgres", &script);
        assert!(t0.elapsed() < Duration::from_secs(120));
        if std::env::var("STRATA_REGEN").is_ok() {
            std::fs::write(&expected_path, &pg_out).unwrap();
            expected.clone_from(&pg_out);
        }
        assert_same(
            &pg_out,
            &expected,
            "matrix.expected (STRATA_REGEN=1 rewrites it)",
        );
    }
    let dir = tempfile::tempdir().unwrap();
    let s = Server::start(&dir.path().join("d"), &[]);
    let out = run_psql(s.port, "strata", &script);
    assert_same(&expected, &out, "Strata");
}

/// SHOW ALL hides from an ordinary role the settings it may not examine (data_directory,
/// config_file, ...), as PostgreSQL's does; a superuser and pg_read_all_settings see them.
#[test]
fn show_all_hides_superuser_only_settings() {
    let dir = tempfile::tempdir().unwrap();
    let s = Server::start(&dir.path().join("d"), &[]);
    s.psql_ok(
        "postgres",
        &["-c", "create role plain login; create role reader login"],
    );
    s.psql_ok("postgres", &["-c", "grant pg_read_all_settings to reader"]);
    let names = |user: &str| {
        let out = s.psql(user, &["-F", "|", "-c", "show all"], None);
        assert!(out.status.success(), "{out:?}");
        String::from_utf8_lossy(&out.stdout)
            .lines()
            .map(|l| l.split('|').next().unwrap_or("").to_string())
            .collect::<Vec<_>>()
    };
    let has = |v: &[String], n: &str| v.iter().any(|x| x == n);
    for (user, sees) in [("strata", true), ("reader", true), ("plain", false)] {
        let v = names(user);
        assert!(has(&v, "shared_buffers"), "{user}: {v:?}");
        assert_eq!(has(&v, "data_directory"), sees, "{user}: {v:?}");
    }
    let e = s.psql("plain", &["-c", "show data_directory"], None);
    assert!(
        String::from_utf8_lossy(&e.stderr).contains("pg_read_all_settings"),
        "{e:?}"
    );
}

/// `select pg_cancel_backend(target)` on `c`: its answer, or the error's code and text.
async fn cancel(c: &tokio_postgres::Client, target: i32) -> Result<bool, (String, String)> {
    match c
        .query_one("select pg_cancel_backend($1)", &[&target])
        .await
    {
        Ok(r) => Ok(r.get::<_, bool>(0)),
        Err(e) => Err((code_of(&e), e.as_db_error().unwrap().message().to_string())),
    }
}

/// pg_cancel_backend follows PostgreSQL 15's rules: a superuser's backend only by a
/// superuser; another role's only by a member of it or of pg_signal_backend.
#[test]
fn cancelling_a_backend_needs_its_role_or_pg_signal_backend() {
    let dir = tempfile::tempdir().unwrap();
    let s = Server::start(&dir.path().join("d"), &[]);
    s.psql_ok(
        "postgres",
        &["-c", "create role p1 login; create role p2 login"],
    );
    let rt = tokio::runtime::Runtime::new().unwrap();
    rt.block_on(async {
        let pid = |c: tokio_postgres::Client| async move {
            let p: i32 = c
                .query_one("select pg_backend_pid()", &[])
                .await
                .unwrap()
                .get(0);
            (c, p)
        };
        let connect = |u: &'static str| async move {
            connect_to(s.port, u, "postgres", None).await.unwrap()
        };
        let (_su, su_pid) = pid(connect("strata").await).await;
        let (_p2, p2_pid) = pid(connect("p2").await).await;
        let p1 = connect("p1").await;
        let superuser = Err((
            "42501".to_string(),
            "must be a superuser to cancel superuser query".to_string(),
        ));
        assert_eq!(cancel(&p1, su_pid).await, superuser);
        let member = Err(("42501".to_string(), "must be a member of the role whose query is being canceled or member of pg_signal_backend".to_string()));
        assert_eq!(cancel(&p1, p2_pid).await, member);
        // A role may cancel its own other sessions; pg_signal_backend any non-superuser's.
        let p2b = connect("p2").await;
        assert_eq!(cancel(&p2b, p2_pid).await, Ok(true));
        s.psql_ok("postgres", &["-c", "grant pg_signal_backend to p1"]);
        assert_eq!(cancel(&p1, p2_pid).await, Ok(true));
        assert_eq!(cancel(&p1, su_pid).await, superuser);
    });
}

/// A cluster made before roles were catalog rows (no `pg_authid` relation, no
/// `pg_hba.conf`, its password in the old `global/pg_authid` file) starts with
/// PostgreSQL's roles made, its password moved into the catalog, and a
/// `pg_hba.conf` that asks for it, as the old server did once a password was set.
#[test]
fn an_older_cluster_keeps_its_password_and_gets_roles() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("d");
    init(&data, None);
    std::fs::remove_file(data.join("global/1260")).unwrap();
    std::fs::remove_file(data.join("pg_hba.conf")).unwrap();
    let v = strata_server::pg::auth::derive("old-pw").unwrap();
    let hex = |b: &[u8]| b.iter().map(|x| format!("{x:02x}")).collect::<String>();
    let line = format!(
        "strata:{}:{}:{}:{}\n",
        v.iterations,
        hex(&v.salt),
        hex(&v.stored_key),
        hex(&v.server_key)
    );
    std::fs::write(data.join("global/pg_authid"), line).unwrap();
    let s = Server::start(&data, &[]);
    assert!(!s.answers(None), "a password was set: SCRAM is asked for");
    assert!(!s.answers(Some("wrong")));
    assert!(s.answers(Some("old-pw")), "{}", s.log_text());
    assert!(data.join("global/pg_authid.migrated").exists());
    assert!(!data.join("global/pg_authid").exists());
    let hba = std::fs::read_to_string(data.join("pg_hba.conf")).unwrap();
    assert!(hba.contains("scram-sha-256"), "{hba}");
    let out = s.psql(
        "strata",
        &[
            "-c",
            "create role r; grant pg_read_all_data to r; drop role r",
        ],
        Some("old-pw"),
    );
    assert!(out.status.success(), "{out:?}");
    // Once moved, a restart keeps it (the catalog's, WAL-logged).
    drop(s);
    let s = Server::start(&data, &[]);
    assert!(s.answers(Some("old-pw")));
}

/// `+group` in pg_hba.conf matches the members of the group, directly or through
/// other roles, as PostgreSQL's does; a role that is not one gets the next line.
#[test]
fn hba_group_lines_follow_role_membership() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("d");
    init(&data, None);
    let s = Server::start(&data, &[]);
    s.psql_ok(
        "postgres",
        &[
            "-c",
            "create role staff; create role team in role staff; create role ann login in role staff; create role kim login in role team; create role joe login",
        ],
    );
    write_hba(
        &data,
        "host all strata 127.0.0.1/32 trust\nhost all +staff 127.0.0.1/32 trust\nhost all all 127.0.0.1/32 reject\n",
    );
    s.psql_ok("postgres", &["-c", "select pg_reload_conf()"]);
    let answers = |user: &str| {
        let out = s.psql(user, &["-c", "select current_user"], None);
        (
            String::from_utf8_lossy(&out.stdout).trim().to_string(),
            String::from_utf8_lossy(&out.stderr).to_string(),
        )
    };
    assert_eq!(answers("ann").0, "ann");
    assert_eq!(answers("kim").0, "kim");
    let (out, err) = answers("joe");
    assert_eq!(out, "");
    assert!(err.contains("pg_hba.conf rejects connection"), "{err}");
    // Membership revoked: the next connection is refused.
    s.psql_ok("postgres", &["-c", "revoke team from kim"]);
    assert!(answers("kim").1.contains("pg_hba.conf rejects"));
}
