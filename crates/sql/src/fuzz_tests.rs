//! SQL text cannot crash a backend: random bytes and mutated statements run through
//! the parser, the binder and execution in-process (a real engine in a temporary
//! directory, on a thread with the backend's stack), and nothing panics or
//! overflows; every error carries a SQLSTATE. Also: the worst nesting the bounds
//! admit fits a sixteenth of the backend stack.
//!
//! Seeds: `STRATA_FUZZ_SEED=<n>` replays a run; otherwise the seed is the time, and
//! it is printed first.

use super::session::{Registry, ServerState, Session};
use super::{parse, SqlError, BACKEND_STACK_BYTES, MAX_EXPR_DEPTH};
use proptest::prelude::*;
use proptest::test_runner::{Config, RngAlgorithm, TestRng, TestRunner};
use std::sync::Arc;
use std::time::{Duration, Instant};
use strata_engine::Engine;

/// Statements the mutations start from: every form the subset has, a few bad ones.
const CORPUS: &[&str] = &[
    "SELECT 1",
    "SELECT 1 + 2 * 3 - 4 / 2 % 3, 'a' || 'b', -5, NOT true",
    "SELECT a, b FROM t WHERE a > 1 AND b IS NOT NULL ORDER BY a DESC LIMIT 3 OFFSET 1",
    "SELECT count(*), sum(a), min(b), max(a) FROM t",
    "SELECT g FROM generate_series(1, 10, 2) g WHERE g IN (1, 3, 5) OR g BETWEEN 7 AND 9",
    "SELECT CAST('12' AS bigint), '5'::int, length('abc'), upper('x'), abs(-3)",
    "SELECT version(), current_database(), pg_current_wal_lsn(), pg_wal_lsn_diff('0/10', '0/5')",
    "SELECT $1, $2::text",
    "INSERT INTO t VALUES (1, 'one'), (2, NULL)",
    "INSERT INTO t (a) SELECT g FROM generate_series(1, 5) g",
    "DELETE FROM t WHERE a = 2 OR b = 'x'",
    "CREATE TABLE IF NOT EXISTS u (a int, b bigint, c text, d bool)",
    "DROP TABLE IF EXISTS u",
    "TRUNCATE t",
    "BEGIN",
    "COMMIT",
    "ROLLBACK",
    "SHOW shared_buffers",
    "SET application_name = 'x'",
    "VACUUM t",
    "CREATE DATABASE d2 TEMPLATE template1 STRATEGY = WAL_LOG",
    "DROP DATABASE IF EXISTS d2",
    "ALTER ROLE strata PASSWORD NULL",
    "CREATE ROLE r1 LOGIN NOINHERIT CONNECTION LIMIT 3 PASSWORD 'pw' VALID UNTIL '2030-01-01' IN ROLE pg_read_all_data",
    "ALTER ROLE r1 WITH CREATEDB NOCREATEROLE RENAME TO r2",
    "DROP ROLE IF EXISTS r1, r2",
    "GRANT SELECT (a), UPDATE (b) ON t TO r1 WITH GRANT OPTION GRANTED BY CURRENT_USER",
    "REVOKE GRANT OPTION FOR ALL PRIVILEGES ON TABLE t FROM PUBLIC, r1 CASCADE",
    "GRANT CONNECT, CREATE, TEMP ON DATABASE postgres TO r1; GRANT r1 TO strata WITH ADMIN OPTION",
    "REVOKE CREATE ON TABLESPACE pg_default FROM r1; REVOKE ADMIN OPTION FOR r1 FROM strata",
    "ALTER TABLE t OWNER TO r1; REASSIGN OWNED BY r1 TO strata; DROP OWNED BY r1 RESTRICT",
    "SET ROLE r1; RESET ROLE; SET SESSION AUTHORIZATION DEFAULT",
    "SELECT current_user, session_user, current_role",
    "SELECT ((((1))))",
    "SELECT -(-2147483648), -(-(-9223372036854775807 - 1))",
    "SELECT 1 FROM t JOIN t t2 ON true",
    "SELECT * FROM nosuch",
];

/// Fragments inserted by mutation: operators, keywords, brackets, literals.
const PIECES: &[&str] = &[
    "(",
    ")",
    ",",
    ";",
    "+",
    "-",
    "*",
    "/",
    "%",
    "||",
    "::",
    "=",
    "<>",
    "<=",
    "AND ",
    " OR ",
    " NOT ",
    "NULL",
    "'",
    "\"",
    "$1",
    "$99999999999",
    "1e10",
    "99999999999999999999999999",
    " IS NULL",
    " IN (",
    " BETWEEN ",
    "CAST(",
    " AS ",
    "int",
    "text",
    "SELECT ",
    " FROM ",
    " WHERE ",
    "t",
    "a",
    "\0",
    "\u{fffd}",
    "--",
    "/*",
    "*/",
    "E'\\x'",
    "$$",
    "[",
    "]",
];

pub(crate) fn seed() -> u64 {
    std::env::var("STRATA_FUZZ_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| {
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map(|d| d.as_nanos() as u64)
                .unwrap_or(1)
        })
}

fn runner(seed: u64, cases: u32) -> TestRunner {
    let mut key = [0u8; 32];
    key[..8].copy_from_slice(&seed.to_le_bytes());
    let config = Config {
        cases,
        failure_persistence: None,
        ..Config::default()
    };
    TestRunner::new_with_rng(config, TestRng::from_seed(RngAlgorithm::ChaCha, &key))
}

/// A mutation of a corpus statement: pieces inserted, spans deleted or repeated.
fn mutated() -> impl Strategy<Value = String> {
    let edit = (
        0usize..4,
        any::<prop::sample::Index>(),
        any::<prop::sample::Index>(),
        0usize..PIECES.len(),
        1usize..40,
    );
    (0usize..CORPUS.len(), prop::collection::vec(edit, 1..6)).prop_map(|(i, edits)| {
        let mut s: Vec<char> = CORPUS[i].chars().collect();
        for (kind, at, at2, piece, reps) in edits {
            let n = s.len().max(1);
            let (a, b) = {
                let (x, y) = (at.index(n), at2.index(n));
                (x.min(y), x.max(y).min(s.len()))
            };
            match kind {
                0 => {
                    let ins: Vec<char> = PIECES[piece].chars().collect();
                    s.splice(a.min(s.len())..a.min(s.len()), ins);
                }
                1 => {
                    s.drain(a.min(s.len())..b);
                }
                2 => {
                    let span: Vec<char> = s[a.min(s.len())..b].to_vec();
                    for _ in 0..reps {
                        s.splice(b..b, span.iter().copied());
                    }
                }
                _ => {
                    let rep: String = PIECES[piece].repeat(reps * 30);
                    s.splice(a.min(s.len())..a.min(s.len()), rep.chars());
                }
            }
        }
        s.into_iter().collect()
    })
}

fn check_error(sql: &str, e: &SqlError) {
    assert!(
        e.code.len() == 5
            && e.code
                .bytes()
                .all(|c| c.is_ascii_digit() || c.is_ascii_uppercase()),
        "no SQLSTATE for {sql:?}: {e:?}"
    );
}

/// Parses `sql` and executes each statement, as a backend does.
fn run(s: &mut Session<'_>, sql: &str) {
    match parse(sql) {
        Err(e) => check_error(sql, &e),
        Ok(stmts) => {
            for st in &stmts {
                // Never let random text pick tablespace directories on this machine.
                if matches!(st, super::Stmt::Ddl(super::Ddl::CreateTablespace { .. })) {
                    continue;
                }
                if let Err(e) = s.describe(st) {
                    check_error(sql, &e);
                }
                if let Err(e) = s.execute(st, &[], &mut super::session::Collect::default()) {
                    check_error(sql, &e);
                }
            }
        }
    }
}

/// Runs `f` with a session on a fresh cluster, on a thread with `stack` bytes.
pub(crate) fn with_session(stack: usize, f: impl FnOnce(&mut Session<'_>) + Send + 'static) {
    with_sessions(stack, |a, _| f(a))
}

/// Runs `f` with two sessions (ids 1 and 2) of one fresh cluster, on one thread
/// with `stack` bytes: a test interleaves their statements (one may not wait for
/// the other's writer lock).
pub(crate) fn with_sessions(
    stack: usize,
    f: impl FnOnce(&mut Session<'_>, &mut Session<'_>) + Send + 'static,
) {
    let t = std::thread::Builder::new()
        .stack_size(stack)
        .spawn(move || {
            let dir = tempfile::tempdir().unwrap();
            let data = dir.path().join("d");
            let quiet = || strata_engine::Settings {
                log: Arc::new(|_: &str| {}),
                ..strata_engine::Settings::default()
            };
            Engine::init(&data, quiet()).unwrap();
            let engine = Engine::open(&data, quiet()).unwrap();
            let server = ServerState {
                syncrep: Arc::new(crate::syncrep::SyncRep::new("").unwrap()),
                views: Arc::new(crate::views::NoViews),
                registry: Registry::default(),
                settings: vec![],
                derive: |_| Err("no passwords here".into()),
                log: Arc::new(|_: &str| {}),
                reserved_connections: 0,
            };
            let interrupts = Arc::default();
            let mut s = Session::new(&engine, &server, "postgres", "strata", 1, interrupts);
            let mut other = Session::new(&engine, &server, "postgres", "strata", 2, Arc::default());
            run(&mut s, "CREATE TABLE t (a int, b text)");
            f(&mut s, &mut other);
            other.close();
            s.close();
        })
        .unwrap();
    t.join().expect("a statement panicked (see above)");
}

#[test]
fn random_and_mutated_sql_never_panics_and_errors_have_sqlstates() {
    let seed = seed();
    eprintln!("sql fuzz seed {seed} (replay: STRATA_FUZZ_SEED={seed})");
    with_session(BACKEND_STACK_BYTES, move |s| {
        for sql in CORPUS {
            run(s, sql);
        }
        let s = std::cell::RefCell::new(s);
        let deadline = Instant::now() + Duration::from_secs(20);
        let mut r = runner(seed, 3000);
        let bytes = prop::collection::vec(any::<u8>(), 0..200);
        let result = r.run(&bytes, |b| {
            if Instant::now() < deadline {
                run(&mut s.borrow_mut(), &String::from_utf8_lossy(&b));
            }
            Ok(())
        });
        assert!(result.is_ok(), "seed {seed}: {result:?}");
        let mut r = runner(seed ^ 0x5eed, 3000);
        let result = r.run(&mutated(), |sql| {
            if Instant::now() < deadline {
                run(&mut s.borrow_mut(), &sql);
            }
            Ok(())
        });
        assert!(result.is_ok(), "seed {seed}: {result:?}");
    });
}

#[test]
fn the_deepest_admitted_expressions_fit_a_sixteenth_of_the_backend_stack() {
    with_session(BACKEND_STACK_BYTES / 16, |s| {
        let d = MAX_EXPR_DEPTH;
        let chain = |n: usize, op: &str| format!("SELECT {}", vec!["1"; n].join(op));
        let cases = [
            chain(d - 2, "+"),                                         // binds and evaluates
            chain(2 * d - 10, "+"),                                    // parses, binding refuses
            format!("SELECT {}1{}", "(".repeat(240), ")".repeat(240)), // parser recursion
            format!("SELECT {}true", "NOT ".repeat(240)),
            format!("SELECT 1{}", "::int".repeat(d - 10)),
            format!("SELECT 1 WHERE {}", vec!["a = 1"; d / 2 - 10].join(" OR ")),
            format!(
                "SELECT a FROM t WHERE {}",
                vec!["a = 1"; d / 3].join(" OR ")
            ),
        ];
        for sql in &cases {
            run(s, sql);
        }
        // The longest AND/OR chain: bound flat, evaluated, printed and dropped.
        let n = super::MAX_BOOL_CHAIN;
        let ors = vec!["a = 1"; n].join(" OR ");
        for sql in [
            format!("SELECT a FROM t WHERE {ors}"),
            format!("SELECT ({ors}) IS TRUE FROM t"),
            format!("SELECT 1 WHERE {}", vec!["true"; n].join(" AND ")),
        ] {
            run(s, &sql);
            for st in parse(&sql).unwrap() {
                if let super::Stmt::Select(q) = st {
                    assert!(q.to_string().len() > n);
                }
            }
        }
    });
}
