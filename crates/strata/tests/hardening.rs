//! No client can take the server down or lock others out (issue 11): each test
//! attacks a live `strata start` through real sockets, psql or tokio-postgres and
//! checks the error the attacker gets and that everyone else is still served.

mod common;

use common::*;
use std::net::TcpStream;
use std::time::{Duration, Instant};

fn rt() -> tokio::runtime::Runtime {
    tokio::runtime::Runtime::new().unwrap()
}

// ---- item 13: expression depth and query length ----

#[test]
fn deep_expressions_get_54001_and_the_server_keeps_serving() {
    let dir = tempfile::tempdir().unwrap();
    let s = Server::start(&dir.path().join("d"), &[]);
    let sum = |n: usize| format!("SELECT {}", vec!["1"; n].join("+"));
    let ors = |n: usize| {
        format!(
            "SELECT 1 WHERE {}",
            (0..n)
                .map(|i| format!("{i} = 1"))
                .collect::<Vec<_>>()
                .join(" OR ")
        )
    };
    let parens = format!("SELECT {}1{}", "(".repeat(2000), ")".repeat(2000));
    let nots = format!("SELECT {} true", "NOT ".repeat(5000));
    let casts = format!("SELECT 1{}", "::int".repeat(3000));
    rt().block_on(async {
        let c = connect(s.port, "strata", None).await.unwrap();
        // Within the bound: answered.
        let rows = c.simple_query(&sum(900)).await.unwrap();
        let v = rows.iter().find_map(|m| match m {
            tokio_postgres::SimpleQueryMessage::Row(r) => r.get(0).map(str::to_string),
            _ => None,
        });
        assert_eq!(v.as_deref(), Some("900"));
        // 10,000 ORs, as PostgreSQL: the chain is bound flat.
        let rows = c.simple_query(&ors(10_000)).await.unwrap();
        assert_eq!(
            rows.len(),
            3,
            "a row description, one row and the command tag"
        );
        for q in [sum(1300), sum(100_000), ors(25_000), parens, nots, casts] {
            let e = c.simple_query(&q).await.expect_err("too deep");
            assert_eq!(code_of(&e), "54001", "{e}");
            let db = e.as_db_error().unwrap();
            assert_eq!(db.message(), "stack depth limit exceeded");
            assert!(db.hint().unwrap_or("").contains("max_stack_depth"));
            // The same session goes on.
            c.simple_query("SELECT 1").await.unwrap();
        }
        // Through the extended protocol too.
        let e = c.prepare(&sum(1300)).await.expect_err("too deep");
        assert_eq!(code_of(&e), "54001");
        // A query text past the message bound (16 MiB) is a protocol violation.
        let huge = format!("SELECT '{}'", "x".repeat(17 << 20));
        let e = c.simple_query(&huge).await.expect_err("too long");
        assert!(e.is_closed() || code_of(&e) == "08P01", "{e}");
    });
    assert!(s.answers(None), "{}", s.log_text());
}

// ---- item 14: parameter numbers ----

#[test]
fn parameter_numbers_are_bounded_and_bind_counts_checked() {
    let dir = tempfile::tempdir().unwrap();
    let s = Server::start(&dir.path().join("d"), &[]);
    rt().block_on(async {
        let c = connect(s.port, "strata", None).await.unwrap();
        for q in [
            "SELECT $99999999999",
            "SELECT $65536",
            "SELECT $4294967297 + 1",
        ] {
            let e = c.prepare(q).await.expect_err("no such parameter");
            assert_eq!(code_of(&e), "42P02", "{q}: {e}");
            let e = c.simple_query(q).await.expect_err("no such parameter");
            assert_eq!(code_of(&e), "42P02", "{q}: {e}");
        }
        // $65535 is the highest (as many as a Bind can carry).
        let st = c.prepare("SELECT $65535::int IS NULL").await.unwrap();
        assert_eq!(st.params().len(), 65_535);
    });
    // A Bind with more parameters than the statement has: 08P01.
    let mut r = Raw::ready(s.port, "strata");
    let mut parse = cstr("");
    parse.extend(cstr("SELECT 1"));
    parse.extend(0u16.to_be_bytes());
    let mut bind = cstr("");
    bind.extend(cstr(""));
    bind.extend(0u16.to_be_bytes());
    bind.extend(2u16.to_be_bytes());
    for v in [b"1", b"2"] {
        bind.extend(1i32.to_be_bytes());
        bind.extend_from_slice(v);
    }
    bind.extend(0u16.to_be_bytes());
    let mut exec = cstr("");
    exec.extend(0i32.to_be_bytes());
    r.send(
        &[
            frame(b'P', &parse),
            frame(b'B', &bind),
            frame(b'E', &exec),
            frame(b'S', b""),
        ]
        .concat(),
    );
    let msgs = r.until_ready();
    let (code, msg) = first_error(&msgs).expect("an error");
    assert_eq!(code, "08P01", "{msg}");
    assert!(msg.contains("bind message supplies 2 parameters"), "{msg}");
    assert!(s.answers(None));
}

#[test]
fn result_format_counts_that_do_not_match_the_columns_are_08p01() {
    let dir = tempfile::tempdir().unwrap();
    let mut s = Server::start(&dir.path().join("d"), &[]);
    let mut r = Raw::ready(s.port, "strata");
    let mut parse = cstr("");
    parse.extend(cstr("SELECT 1, 2, 3"));
    parse.extend(0u16.to_be_bytes());
    let mut bind = cstr("");
    bind.extend(cstr(""));
    bind.extend(0u16.to_be_bytes());
    bind.extend(0u16.to_be_bytes());
    bind.extend(2u16.to_be_bytes()); // two result formats for three columns
    bind.extend(1i16.to_be_bytes());
    bind.extend(0i16.to_be_bytes());
    let mut describe = vec![b'P'];
    describe.extend(cstr(""));
    let mut exec = cstr("");
    exec.extend(0i32.to_be_bytes());
    r.send(
        &[
            frame(b'P', &parse),
            frame(b'B', &bind),
            frame(b'D', &describe),
            frame(b'E', &exec),
            frame(b'S', b""),
        ]
        .concat(),
    );
    let msgs = r.until_ready();
    let (code, msg) = first_error(&msgs).expect("an error");
    assert_eq!(code, "08P01", "{msg}");
    assert!(msg.contains("2 result formats"), "{msg}");
    assert!(s.alive(), "{}", s.log_text());
    assert!(s.answers(None));
}

// ---- item 15: connection slots, authentication_timeout, the pre-auth bound ----

#[test]
fn unauthenticated_connections_hold_no_slots_and_time_out() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("d");
    init(&data, Some("pw"));
    let s = Server::start(&data, &["max_connections=10"]);
    // 100 sockets that send nothing, 100 that send a startup packet and stop
    // mid-authentication.
    let mut idle = Vec::new();
    for i in 0..200 {
        let mut r = Raw::connect(s.port);
        if i % 2 == 1 {
            r.send(&startup_packet("strata"));
        }
        idle.push(r);
    }
    std::thread::sleep(Duration::from_millis(500));
    // Everyone else still gets in, and the server holds a bounded number of them.
    let t0 = Instant::now();
    assert!(s.answers(Some("pw")), "{}", s.log_text());
    let answered = t0.elapsed();
    assert!(answered < Duration::from_secs(10));
    let fds = fd_count(s.pid());
    eprintln!(
        "psql answered in {answered:?} past 200 idle sockets; server holds {fds} descriptors"
    );
    assert!(
        fds < 150,
        "server holds {fds} descriptors for 200 idle sockets"
    );
    // The oldest waiting sockets were closed to make room (pre-auth bound).
    assert!(idle[0].closed(), "the oldest idle socket is still open");
    drop(idle);
    drop(s);

    // authentication_timeout = 1s: both kinds are closed, the second with a log line.
    let s = Server::start(&data, &["authentication_timeout=1s"]);
    let mut silent = Raw::connect(s.port);
    let mut started = Raw::connect(s.port);
    started.send(&startup_packet("strata"));
    let t0 = Instant::now();
    assert!(
        silent.closed(),
        "a silent socket outlived authentication_timeout"
    );
    assert!(
        started.closed(),
        "a half-authenticated socket outlived authentication_timeout"
    );
    assert!(t0.elapsed() < Duration::from_secs(5));
    std::thread::sleep(Duration::from_millis(200));
    assert!(
        s.log_text()
            .contains("FATAL:  57014: canceling authentication due to timeout"),
        "{}",
        s.log_text()
    );
    assert!(s.answers(Some("pw")));
}

#[test]
fn the_last_slots_are_reserved_for_the_superuser() {
    let dir = tempfile::tempdir().unwrap();
    let s = Server::start(
        &dir.path().join("d"),
        &["max_connections=4", "superuser_reserved_connections=2"],
    );
    s.psql_ok(
        "postgres",
        &[
            "-c",
            "create role alice login; create role bob login; create role carol login",
        ],
    );
    rt().block_on(async {
        let a = connect(s.port, "alice", None).await.unwrap();
        let b = connect(s.port, "bob", None).await.unwrap();
        let Err(e) = connect(s.port, "carol", None).await else {
            panic!("carol took a reserved slot")
        };
        assert_eq!(code_of(&e), "53300");
        let m = e.as_db_error().unwrap().message();
        assert!(m.contains("reserved"), "{m}");
        let x = connect(s.port, "strata", None).await.unwrap();
        let y = connect(s.port, "strata", None).await.unwrap();
        let Err(e) = connect(s.port, "strata", None).await else {
            panic!("a fifth connection")
        };
        assert_eq!(code_of(&e), "53300");
        let m = e.as_db_error().unwrap().message();
        assert!(m.contains("too many clients"), "{m}");
        drop((a, b, x, y));
    });
}

// ---- item 17: malformed frames ----

fn violation_closes(port: u16, bytes: &[u8]) -> (String, String) {
    let mut r = Raw::ready(port, "strata");
    r.send(bytes);
    let msgs = r.until_ready();
    let err = first_error(&msgs).unwrap_or_else(|| panic!("no error for {bytes:?}: {msgs:?}"));
    assert!(r.closed(), "connection left open after {err:?}");
    err
}

#[test]
fn malformed_frames_are_protocol_violations_that_close_the_connection() {
    let dir = tempfile::tempdir().unwrap();
    let s = Server::start(&dir.path().join("d"), &[]);
    // Bytes after the Query's NUL: never run as a hidden statement.
    let (code, _) = violation_closes(
        s.port,
        &frame(b'Q', b"SELECT 1\0CREATE TABLE hidden (a int)\0"),
    );
    assert_eq!(code, "08P01");
    let out = s.psql("strata", &["-c", "select count(*) from hidden"], None);
    assert!(!out.status.success(), "the hidden statement ran");
    // Truncated Parse, negative counts, lengths past the end, bad lengths, unknown types.
    let mut neg_bind = cstr("");
    neg_bind.extend(cstr(""));
    neg_bind.extend((-1i16).to_be_bytes());
    let mut long_param = cstr("");
    long_param.extend(cstr(""));
    long_param.extend(0u16.to_be_bytes());
    long_param.extend(1u16.to_be_bytes());
    long_param.extend(1_000_000i32.to_be_bytes());
    long_param.extend(b"12");
    let mut neg_parse = cstr("");
    neg_parse.extend(cstr("SELECT 1"));
    neg_parse.extend((-5i16).to_be_bytes());
    let cases: Vec<Vec<u8>> = vec![
        frame(b'P', b"\0SELECT 1"),
        frame(b'P', &neg_parse),
        frame(b'B', &neg_bind),
        frame(b'B', &long_param),
        frame(b'E', b"\0\0"),
        frame(b'D', b"X\0"),
        frame(b'S', b"extra"),
        vec![b'Q', 0, 0, 0, 2],
        vec![b'Q', 0xFF, 0xFF, 0xFF, 0xF0],
        frame(b'F', b""),
    ];
    for c in &cases {
        let (code, msg) = violation_closes(s.port, c);
        assert_eq!(code, "08P01", "{c:?}: {msg}");
    }
    // A malformed startup packet and a bad protocol version.
    let mut r = Raw::connect(s.port);
    r.send(&[0, 0, 0, 9, 0, 3, 0, 0, b'u']);
    let msgs = r.until_ready();
    assert_eq!(first_error(&msgs).map(|e| e.0).as_deref(), Some("08P01"));
    let mut r = Raw::connect(s.port);
    r.send(&[0, 0, 0, 9, 0, 9, 0, 0, 0]);
    let msgs = r.until_ready();
    assert_eq!(first_error(&msgs).map(|e| e.0).as_deref(), Some("0A000"));
    assert!(s.answers(None), "{}", s.log_text());
    assert!(s
        .log_text()
        .contains("FATAL:  08P01: invalid message format"));
}

#[test]
fn malformed_sasl_messages_get_errors() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("d");
    init(&data, Some("pw"));
    let s = Server::start(&data, &[]);
    let initial = |mech: &str, data: Option<&[u8]>| {
        let mut b = cstr(mech);
        match data {
            Some(d) => {
                b.extend((d.len() as i32).to_be_bytes());
                b.extend_from_slice(d);
            }
            None => b.extend((-1i32).to_be_bytes()),
        }
        frame(b'p', &b)
    };
    let mut wrong_len = cstr("SCRAM-SHA-256");
    wrong_len.extend(100i32.to_be_bytes());
    wrong_len.extend(b"n,,n=,r=x");
    let cases: Vec<Vec<u8>> = vec![
        frame(b'p', b"SCRAM-SHA-256"),
        frame(b'p', &wrong_len),
        initial("SCRAM-SHA-256", Some(b"garbage")),
        initial("SCRAM-SHA-256", None),
        initial("NOPE", Some(b"n,,n=,r=abc")),
        initial("SCRAM-SHA-256", Some(&[0xFF; 300])),
        frame(b'Q', b"SELECT 1\0"),
    ];
    for c in &cases {
        let mut r = Raw::connect(s.port);
        r.send(&startup_packet("strata"));
        let m = r.read_msg().expect("SASL request");
        assert_eq!(m.0, b'R');
        r.send(c);
        let msgs = r.until_ready();
        assert!(first_error(&msgs).is_some(), "{c:?}: {msgs:?}");
        assert!(r.closed());
    }
    assert!(s.answers(Some("pw")), "{}", s.log_text());
}

// ---- item 19: file permissions and tablespace locations ----

fn modes_under(dir: &std::path::Path, out: &mut Vec<(std::path::PathBuf, u32)>) {
    use std::os::unix::fs::PermissionsExt;
    for e in std::fs::read_dir(dir).unwrap().flatten() {
        let p = e.path();
        let m = std::fs::symlink_metadata(&p).unwrap();
        if m.file_type().is_symlink() {
            continue;
        }
        out.push((p.clone(), m.permissions().mode() & 0o777));
        if m.is_dir() {
            modes_under(&p, out);
        }
    }
}

#[test]
fn data_directory_and_files_are_private() {
    use std::os::unix::fs::PermissionsExt;
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("d");
    init(&data, Some("pw"));
    let s = Server::start(&data, &[]);
    let out = s.psql(
        "strata",
        &[
            "-c",
            "create table t (a int)",
            "-c",
            "insert into t values (1)",
            "-c",
            "checkpoint",
        ],
        Some("pw"),
    );
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    // A tablespace location that resolves into the data directory is refused.
    let sneaky = format!("{}/x/../d/pg_tblspc", dir.path().display());
    std::fs::create_dir(dir.path().join("x")).unwrap();
    let out = s.psql(
        "strata",
        &["-c", &format!("create tablespace ts location '{sneaky}'")],
        Some("pw"),
    );
    assert!(!out.status.success());
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("inside the data directory"),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    drop(s);
    let mode = std::fs::metadata(&data).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode, 0o700);
    let mut all = Vec::new();
    modes_under(&data, &mut all);
    assert!(all.len() > 10);
    for (p, m) in &all {
        assert_eq!(m & 0o077, 0, "{} is {m:o}", p.display());
    }
    // A data directory others can read is refused, in PostgreSQL's words.
    std::fs::set_permissions(&data, std::fs::Permissions::from_mode(0o755)).unwrap();
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_strata"))
        .args(["start", "-D"])
        .arg(&data)
        .args(["-c", &format!("port={}", free_port())])
        .output()
        .unwrap();
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("has invalid permissions"), "{err}");
    assert!(
        err.contains("Permissions should be u=rwx (0700) or u=rwx,g=rx (0750)."),
        "{err}"
    );
}

// ---- item 20: roles ----

#[test]
fn roles_change_only_their_own_password_and_cannot_be_probed() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("d");
    let s = Server::start(&data, &[]);
    s.psql_ok("postgres", &["-c", "create role alice login"]);
    rt().block_on(async {
        let strata = connect(s.port, "strata", None).await.unwrap();
        let alice = connect(s.port, "alice", None).await.unwrap();
        let e = alice
            .simple_query("ALTER ROLE strata PASSWORD 'mine'")
            .await
            .expect_err("not alice's");
        assert_eq!(code_of(&e), "42501");
        // PostgreSQL 15's words for a superuser role, not alice's to change.
        assert_eq!(
            e.as_db_error().unwrap().message(),
            "must be superuser to alter superuser roles or change superuser attribute"
        );
        alice
            .simple_query("ALTER ROLE alice PASSWORD 'a'")
            .await
            .unwrap();
        strata
            .simple_query("ALTER ROLE strata PASSWORD 'pw'")
            .await
            .unwrap();
        // Now passwords are required.
        write_hba(&data, "host all all 127.0.0.1/32 scram-sha-256\n");
        strata
            .simple_query("SELECT pg_reload_conf()")
            .await
            .unwrap();
    });
    // An unknown role and a wrong password look the same to the client: a SASL
    // exchange, then the same 28P01 message.
    let exchange = |user: &str| -> Vec<u8> {
        let mut r = Raw::connect(s.port);
        r.send(&startup_packet(user));
        let (t, body) = r.read_msg().expect("SASL");
        assert_eq!((t, &body[..4]), (b'R', &10i32.to_be_bytes()[..]));
        let mut b = cstr("SCRAM-SHA-256");
        let first = b"n,,n=,r=fyko+d2lbbFgONRv9qkxdawL";
        b.extend((first.len() as i32).to_be_bytes());
        b.extend_from_slice(first);
        r.send(&frame(b'p', &b));
        let (t, body) = r.read_msg().expect("server-first");
        assert_eq!(t, b'R', "{user}: {:?}", String::from_utf8_lossy(&body));
        assert_eq!(&body[..4], &11i32.to_be_bytes(), "{user}: no SASLContinue");
        body[4..].to_vec()
    };
    let known = String::from_utf8(exchange("alice")).unwrap();
    let unknown = String::from_utf8(exchange("nobody")).unwrap();
    assert!(
        known.contains(",s=") && known.contains(",i=4096"),
        "{known}"
    );
    assert!(
        unknown.contains(",s=") && unknown.contains(",i=4096"),
        "{unknown}"
    );
    // The mock salt is stable per name (a real role's salt does not change either).
    let salt = |m: &str| {
        m.split(",s=")
            .nth(1)
            .and_then(|r| r.split(',').next())
            .map(str::to_string)
    };
    assert_eq!(
        salt(&unknown),
        salt(&String::from_utf8(exchange("nobody")).unwrap())
    );
    rt().block_on(async {
        let e1 = connect(s.port, "alice", Some("wrong")).await.err().unwrap();
        let e2 = connect(s.port, "nobody", Some("wrong"))
            .await
            .err()
            .unwrap();
        assert_eq!(code_of(&e1), "28P01");
        assert_eq!(code_of(&e2), "28P01");
        assert_eq!(
            e1.as_db_error().unwrap().message().replace("alice", "X"),
            e2.as_db_error().unwrap().message().replace("nobody", "X")
        );
        connect(s.port, "alice", Some("a")).await.unwrap();
    });
    std::thread::sleep(Duration::from_millis(200));
    let log = s.log_text();
    assert!(
        log.contains("FATAL:  28P01: password authentication failed for user \"nobody\""),
        "{log}"
    );
    assert!(log.contains("Role \"nobody\" does not exist."), "{log}");
    // A SCRAM proof that does not match: PostgreSQL's DETAIL names the line only.
    assert!(
        log.contains(
            "DETAIL:  Connection matched pg_hba.conf line 1: \"host all all 127.0.0.1/32 scram-sha-256\""
        ),
        "{log}"
    );
}

// ---- item 21: out of file descriptors ----

#[test]
fn accept_backs_off_when_out_of_file_descriptors() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("d");
    init(&data, None);
    let s = Server::start_with(&data, &["max_files_per_process=64"], Some("ulimit -n 128;"));
    // Exhaust the server's descriptors with idle sockets (they wait for startup).
    let mut held = Vec::new();
    let addr: std::net::SocketAddr = format!("127.0.0.1:{}", s.port).parse().unwrap();
    for _ in 0..200 {
        // Past the listen backlog, connect waits for SYN retries: stop there.
        match TcpStream::connect_timeout(&addr, Duration::from_millis(300)) {
            Ok(c) => held.push(c),
            Err(_) => break,
        }
    }
    std::thread::sleep(Duration::from_millis(500));
    let tick = 100.0; // clock ticks per second (USER_HZ)
    let before = cpu_ticks(s.pid());
    std::thread::sleep(Duration::from_secs(2));
    let cpu_s = (cpu_ticks(s.pid()) - before) as f64 / tick;
    eprintln!("server CPU over 2 s with descriptors exhausted: {cpu_s:.2} s");
    assert!(
        cpu_s < 0.3,
        "the accept loop spins: {cpu_s:.2} s of CPU in 2 s"
    );
    assert!(
        s.log_text().contains("could not accept new connection"),
        "{}",
        s.log_text()
    );
    eprintln!("{} sockets held", held.len());
    drop(held);
    let t0 = Instant::now();
    while !s.answers(None) {
        assert!(t0.elapsed() < Duration::from_secs(20), "{}", s.log_text());
        std::thread::sleep(Duration::from_millis(200));
    }
    eprintln!("serving again {:?} after the sockets closed", t0.elapsed());
}
