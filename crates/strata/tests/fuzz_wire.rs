//! Wire bytes and SQL text cannot crash or hang a live server: batches of random
//! and mutated frontend messages (before and after startup) and mutated SQL go to
//! `strata start` over TCP; after each batch a fresh connection must still answer
//! `SELECT 1`, and every error the SQL gets carries a SQLSTATE.
//!
//! Seeds: `STRATA_FUZZ_SEED=<n>` replays a run; otherwise the seed is the time, and
//! it is printed first. Each test stops generating after its time budget.

mod common;

use common::*;
use std::time::{Duration, Instant};

/// xorshift64*: small, deterministic per seed.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n.max(1) as u64) as usize
    }
    fn bytes(&mut self, n: usize) -> Vec<u8> {
        (0..n).map(|_| self.next() as u8).collect()
    }
}

fn seed() -> u64 {
    std::env::var("STRATA_FUZZ_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| {
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map(|d| d.as_nanos() as u64)
                .unwrap_or(1)
        })
        | 1
}

/// Valid frontend messages of every type the server reads.
fn valid_frames() -> Vec<Vec<u8>> {
    let q = |s: &str| frame(b'Q', &cstr(s));
    let mut parse = cstr("s1");
    parse.extend(cstr("SELECT $1::int + 1"));
    parse.extend(1u16.to_be_bytes());
    parse.extend(23i32.to_be_bytes());
    let mut bind = cstr("p1");
    bind.extend(cstr("s1"));
    bind.extend(1u16.to_be_bytes());
    bind.extend(0i16.to_be_bytes());
    bind.extend(1u16.to_be_bytes());
    bind.extend(1i32.to_be_bytes());
    bind.extend(b"7");
    bind.extend(1u16.to_be_bytes());
    bind.extend(1i16.to_be_bytes());
    // Result formats that do not match the one column (08P01, once a panic in pgwire).
    let mut bind3 = bind[..bind.len() - 4].to_vec();
    bind3.extend(3u16.to_be_bytes());
    for f in [1i16, 0, 1] {
        bind3.extend(f.to_be_bytes());
    }
    let mut exec = cstr("p1");
    exec.extend(0i32.to_be_bytes());
    let mut describe = vec![b'S'];
    describe.extend(cstr("s1"));
    let mut close = vec![b'P'];
    close.extend(cstr("p1"));
    vec![
        q("SELECT 1"),
        q("SELECT count(*) FROM generate_series(1, 100) g"),
        q("CREATE TABLE IF NOT EXISTS f (a int, b text)"),
        q("INSERT INTO f VALUES (1, 'x')"),
        q("BEGIN"),
        q("ROLLBACK"),
        frame(b'P', &parse),
        frame(b'B', &bind),
        frame(b'B', &bind3),
        frame(b'D', &describe),
        frame(b'E', &exec),
        frame(b'C', &close),
        frame(b'H', b""),
        frame(b'S', b""),
        frame(b'd', b"copy data"),
        frame(b'c', b""),
        frame(b'f', &cstr("failed")),
        frame(b'p', &cstr("password")),
    ]
}

/// One mutation of a valid frame: bytes flipped, cut, grown, lengths rewritten.
fn mutate(rng: &mut Rng, mut f: Vec<u8>) -> Vec<u8> {
    for _ in 0..=rng.below(3) {
        let n = f.len();
        match rng.below(7) {
            0 if n > 0 => {
                let i = rng.below(n);
                f[i] ^= 1 << rng.below(8);
            }
            1 => f.truncate(rng.below(n + 1)),
            2 => {
                let k = rng.below(16);
                let extra = rng.bytes(k);
                let at = rng.below(n + 1);
                f.splice(at..at, extra);
            }
            3 if n >= 5 => {
                // A declared length that lies.
                let v = match rng.below(4) {
                    0 => rng.next() as i32,
                    1 => -1,
                    2 => 3,
                    _ => (n as i32 - 1) + rng.below(8) as i32 - 4,
                };
                f[1..5].copy_from_slice(&v.to_be_bytes());
            }
            4 if n >= 7 => {
                // A count or a field length turned negative / huge.
                let i = 5 + rng.below(n - 6);
                f[i] = 0xFF;
                f[i + 1] = 0xFF;
            }
            5 if n > 0 => f[0] = rng.next() as u8,
            _ => f.extend(cstr("SELECT 2")),
        }
    }
    f
}

fn startup_mutation(rng: &mut Rng) -> Vec<u8> {
    let mut p = startup_packet("strata");
    match rng.below(4) {
        0 => {
            let k = rng.below(64);
            p = rng.bytes(k)
        }
        1 => {
            let i = rng.below(p.len());
            p[i] ^= 1 << rng.below(8);
        }
        2 => p.truncate(rng.below(p.len())),
        _ => p[..4].copy_from_slice(&(rng.next() as i32).to_be_bytes()),
    }
    p
}

/// One fuzz connection: a (possibly mutated) startup, then random messages.
fn one_connection(port: u16, rng: &mut Rng, frames: &[Vec<u8>]) {
    let mut r = Raw::connect(port);
    r.s.set_read_timeout(Some(Duration::from_millis(50)))
        .unwrap();
    if rng.below(5) == 0 {
        r.send(&startup_mutation(rng));
    } else {
        r.send(&startup_packet("strata"));
    }
    let mut out = Vec::new();
    for _ in 0..=rng.below(8) {
        let f = frames[rng.below(frames.len())].clone();
        out.extend(match rng.below(4) {
            0 => f,
            1 => {
                let k = rng.below(40);
                rng.bytes(k)
            }
            _ => mutate(rng, f),
        });
    }
    r.send(&out);
    let t0 = Instant::now();
    while r.read_msg().is_some() && t0.elapsed() < Duration::from_millis(300) {}
}

/// A fresh connection answers SELECT 1 within 10 s.
fn probe(port: u16) -> bool {
    let mut r = Raw::connect(port);
    r.send(&startup_packet("strata"));
    if !r.until_ready().iter().any(|m| m.0 == b'Z') {
        return false;
    }
    r.send(&frame(b'Q', &cstr("SELECT 1")));
    r.until_ready()
        .iter()
        .any(|(t, b)| *t == b'D' && b.ends_with(b"1"))
}

#[test]
fn random_and_mutated_frames_never_take_the_server_down() {
    let seed = seed();
    eprintln!("wire fuzz seed {seed} (replay: STRATA_FUZZ_SEED={seed})");
    let dir = tempfile::tempdir().unwrap();
    let mut s = Server::start(&dir.path().join("d"), &["authentication_timeout=5s"]);
    let frames = valid_frames();
    let mut rng = Rng(seed);
    let deadline = Instant::now() + Duration::from_secs(25);
    let mut batches = 0;
    while Instant::now() < deadline {
        for _ in 0..20 {
            one_connection(s.port, &mut rng, &frames);
        }
        batches += 1;
        assert!(s.alive(), "seed {seed}: server died\n{}", s.log_text());
        assert!(
            probe(s.port),
            "seed {seed}: server stopped answering\n{}",
            s.log_text()
        );
    }
    eprintln!("{batches} batches of 20 connections");
    assert!(
        !s.log_text().contains("panicked"),
        "seed {seed}:\n{}",
        s.log_text()
    );
}

/// SASLInitialResponse with `data`.
fn sasl_initial(mech: &str, data: &[u8]) -> Vec<u8> {
    let mut b = cstr(mech);
    b.extend((data.len() as i32).to_be_bytes());
    b.extend_from_slice(data);
    frame(b'p', &b)
}

/// One SCRAM exchange with mutated client messages.
fn one_sasl_exchange(port: u16, rng: &mut Rng) {
    let mut r = Raw::connect(port);
    r.s.set_read_timeout(Some(Duration::from_millis(200)))
        .unwrap();
    let user = ["strata", "nobody", "", "x\u{1}y"][rng.below(4)];
    r.send(&startup_packet(user));
    if r.read_msg().is_none() {
        return;
    }
    let nonce = "rOprNGfwEbeRWgbNEkqO";
    let first = format!("n,,n=,r={nonce}");
    let mech = ["SCRAM-SHA-256", "SCRAM-SHA-256-PLUS", "OAUTHBEARER", ""][rng.below(4)];
    let msg = sasl_initial(mech, first.as_bytes());
    r.send(&if rng.below(2) == 0 {
        msg
    } else {
        mutate(rng, msg)
    });
    let Some((b'R', body)) = r.read_msg() else {
        return;
    };
    let server_first = String::from_utf8_lossy(body.get(4..).unwrap_or(&[])).to_string();
    let combined = server_first
        .split(',')
        .find_map(|f| f.strip_prefix("r="))
        .unwrap_or(nonce)
        .to_string();
    let finals = [
        format!("c=biws,r={combined},p=dHJ1bmNhdGVk"),
        format!("c=biws,r={combined},p="),
        format!("c=eSws,r={combined},p=AAAA"),
        "c=,r=,p=".to_string(),
        String::from_utf8_lossy(&rng.bytes(40)).to_string(),
    ];
    let f = frame(b'p', finals[rng.below(finals.len())].as_bytes());
    r.send(&if rng.below(2) == 0 { f } else { mutate(rng, f) });
    let t0 = Instant::now();
    while r.read_msg().is_some() && t0.elapsed() < Duration::from_millis(300) {}
}

#[test]
fn mutated_sasl_exchanges_never_take_the_server_down() {
    let seed = seed();
    eprintln!("sasl fuzz seed {seed} (replay: STRATA_FUZZ_SEED={seed})");
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("d");
    init(&data, Some("pw"));
    let mut s = Server::start(&data, &["authentication_timeout=5s"]);
    let mut rng = Rng(seed ^ 0x5a5a_5a5a);
    let deadline = Instant::now() + Duration::from_secs(12);
    let mut n = 0;
    while Instant::now() < deadline {
        for _ in 0..20 {
            one_sasl_exchange(s.port, &mut rng);
            n += 1;
        }
        assert!(s.alive(), "seed {seed}: server died\n{}", s.log_text());
        assert!(
            s.answers(Some("pw")),
            "seed {seed}: not answering\n{}",
            s.log_text()
        );
    }
    eprintln!("{n} exchanges");
}

const SQL_CORPUS: &[&str] = &[
    "SELECT 1 + 2 * 3, 'a' || 'b', NOT true, 5 % 3",
    "SELECT g FROM generate_series(1, 20) g WHERE g IN (1, 2) OR g BETWEEN 5 AND 7 ORDER BY g DESC LIMIT 4",
    "CREATE TABLE IF NOT EXISTS z (a int, b text)",
    "INSERT INTO z VALUES (1, 'x'), (2, NULL)",
    "SELECT count(*), sum(a), min(b), max(a) FROM z WHERE b IS NOT NULL",
    "DELETE FROM z WHERE a = 1",
    "SELECT CAST('7' AS bigint), '3'::int, length('abc'), abs(-2)",
    "BEGIN; SELECT 1; COMMIT",
    "SHOW max_connections",
];

const SQL_PIECES: &[&str] = &[
    "(",
    ")",
    ",",
    ";",
    "+",
    "*",
    "::",
    "=",
    " OR ",
    " AND ",
    "NULL",
    "'",
    "$1",
    "$99999999999",
    " IN (",
    "99999999999999999999999",
    "--",
    "/*",
    "\0",
    "[",
];

fn mutate_sql(rng: &mut Rng) -> String {
    let mut s = SQL_CORPUS[rng.below(SQL_CORPUS.len())].to_string();
    for _ in 0..=rng.below(4) {
        let mut at = rng.below(s.len() + 1);
        while !s.is_char_boundary(at) {
            at -= 1;
        }
        match rng.below(3) {
            0 => s.insert_str(at, SQL_PIECES[rng.below(SQL_PIECES.len())]),
            1 => s.truncate(at),
            _ => {
                let piece = SQL_PIECES[rng.below(SQL_PIECES.len())].repeat(1 + rng.below(3000));
                s.insert_str(at, &piece);
            }
        }
    }
    s.replace('\0', " ")
}

#[test]
fn mutated_sql_through_a_live_server_gets_sqlstates() {
    let seed = seed();
    eprintln!("live sql fuzz seed {seed} (replay: STRATA_FUZZ_SEED={seed})");
    let dir = tempfile::tempdir().unwrap();
    let mut s = Server::start(&dir.path().join("d"), &[]);
    let mut rng = Rng(seed ^ 0x9e37_79b9_7f4a_7c15);
    let deadline = Instant::now() + Duration::from_secs(20);
    let mut r = Raw::ready(s.port, "strata");
    let mut sent = 0;
    while Instant::now() < deadline && sent < 1500 {
        let sql = mutate_sql(&mut rng);
        r.send(&frame(b'Q', &cstr(&sql)));
        let msgs = r.until_ready();
        assert!(
            msgs.iter().any(|m| m.0 == b'Z'),
            "seed {seed}: no answer to {sql:?}\n{}",
            s.log_text()
        );
        for (t, b) in &msgs {
            if *t == b'E' {
                let code = sqlstate(b);
                assert!(
                    code.len() == 5 && code.bytes().all(|c| c.is_ascii_alphanumeric()),
                    "seed {seed}: {sql:?} got an error without SQLSTATE: {b:?}"
                );
            }
        }
        sent += 1;
    }
    eprintln!("{sent} statements");
    assert!(s.alive());
    assert!(probe(s.port));
}
