//! The one set of helpers of the server's integration tests: a `strata start` process
//! on a free port (with extra settings, its pid, SIGKILL, waiting for it to exit),
//! psql (PostgreSQL 15's, at /usr/bin/psql) and tokio-postgres clients of it, and a raw
//! wire-protocol client that can send any bytes.
#![allow(dead_code)] // each test file uses some of them

use std::io::{Read, Write};
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Output, Stdio};
use std::time::{Duration, Instant};

pub const PSQL: &str = "/usr/bin/psql";

pub struct Server {
    pub child: Option<Child>,
    pub port: u16,
    pub log: PathBuf,
}

pub fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

impl Server {
    /// `strata start -D data -c port=.. -c extra...`; `shell_prefix` (e.g.
    /// `ulimit -n 128;`) runs it through `sh -c` first.
    /// A port another test takes between `free_port` and the bind is tried again
    /// with a new one.
    pub fn start_with(data: &Path, extra: &[&str], shell_prefix: Option<&str>) -> Server {
        for _ in 0..5 {
            let port = free_port();
            let settings: Vec<String> =
                [format!("port={port}"), "listen_addresses=127.0.0.1".into()]
                    .into_iter()
                    .chain(extra.iter().map(|s| s.to_string()))
                    .collect();
            match Server::launch(data, port, &settings, shell_prefix) {
                Ok(s) => return s,
                Err(log) if log.contains("could not bind") => continue,
                Err(log) => panic!("server did not start:\n{log}"),
            }
        }
        panic!("no free port after five tries");
    }

    /// `strata start -D data` with no `-c` settings at all: the port (and the rest)
    /// come from `strata.conf`, so the caller says which `port` to wait on.
    pub fn start_from_conf(data: &Path, port: u16) -> Server {
        Server::launch(data, port, &[], None)
            .unwrap_or_else(|log| panic!("server did not start:\n{log}"))
    }

    /// Spawns `strata start -D data -c settings...` with stderr to the log, and waits
    /// until it says it listens on `port` and the port accepts connections (a port
    /// answering for another test's server is not taken for this one's); its log
    /// if it ends first.
    fn launch(
        data: &Path,
        port: u16,
        settings: &[String],
        shell_prefix: Option<&str>,
    ) -> Result<Server, String> {
        let log = data.with_extension(format!("log{port}"));
        let logf = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&log)
            .unwrap();
        let mut args: Vec<String> = vec!["start".into(), "-D".into(), data.display().to_string()];
        for c in settings {
            args.push("-c".into());
            args.push(c.clone());
        }
        let bin = env!("CARGO_BIN_EXE_strata");
        let mut cmd = match shell_prefix {
            None => {
                let mut c = Command::new(bin);
                c.args(&args);
                c
            }
            Some(pre) => {
                let quoted: Vec<String> = args.iter().map(|a| format!("'{a}'")).collect();
                let mut c = Command::new("sh");
                c.arg("-c")
                    .arg(format!("{pre} exec '{bin}' {}", quoted.join(" ")));
                c
            }
        };
        let from = std::fs::metadata(&log).map_or(0, |m| m.len() as usize);
        let child = cmd
            .stdout(Stdio::null())
            .stderr(logf)
            .spawn()
            .expect("spawn strata start");
        let mut s = Server {
            child: Some(child),
            port,
            log,
        };
        let listening = format!(", port {port}");
        let t0 = Instant::now();
        loop {
            let text = s.log_text();
            let mine = text.get(from..).is_some_and(|t| {
                t.lines()
                    .any(|l| l.contains("listening on") && l.ends_with(&listening))
            });
            if mine && TcpStream::connect(("127.0.0.1", port)).is_ok() {
                return Ok(s);
            }
            if !s.alive() {
                return Err(text);
            }
            assert!(
                t0.elapsed() < Duration::from_secs(60),
                "server did not start:\n{text}"
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    pub fn start(data: &Path, extra: &[&str]) -> Server {
        Server::start_with(data, extra, None)
    }

    pub fn pid(&self) -> u32 {
        self.child.as_ref().map(|c| c.id()).unwrap_or(0)
    }

    pub fn wait_ready(&self) {
        let t0 = Instant::now();
        while TcpStream::connect(("127.0.0.1", self.port)).is_err() {
            assert!(
                t0.elapsed() < Duration::from_secs(60),
                "server did not start:\n{}",
                self.log_text()
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    pub fn log_text(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }

    /// Whether the server process is still running.
    pub fn alive(&mut self) -> bool {
        match self.child.as_mut() {
            Some(c) => c.try_wait().map(|s| s.is_none()).unwrap_or(false),
            None => false,
        }
    }

    /// SIGKILL, then reaps the process (a crash: nothing is shut down cleanly).
    pub fn kill9(&mut self) {
        if let Some(mut c) = self.child.take() {
            c.kill().unwrap(); // SIGKILL
            c.wait().unwrap();
        }
    }

    /// Waits (20 s at most) for the process to end by itself; its exit status.
    pub fn wait_exit(&mut self) -> ExitStatus {
        let c = self.child.as_mut().expect("the server was started");
        let t0 = Instant::now();
        loop {
            if let Some(st) = c.try_wait().unwrap() {
                return st;
            }
            assert!(
                t0.elapsed() < Duration::from_secs(20),
                "the server did not stop:\n{}",
                self.log_text()
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    pub fn psql(&self, user: &str, args: &[&str], password: Option<&str>) -> Output {
        psql_as(self.port, user, args, password)
    }

    /// psql as `strata` in database `db`.
    pub fn psql_db(&self, db: &str, args: &[&str]) -> Output {
        psql_db(self.port, db, args, None)
    }

    /// psql as `strata` in `db`, with ON_ERROR_STOP; panics with its output and the
    /// server log unless it succeeds; its stdout.
    pub fn psql_ok(&self, db: &str, args: &[&str]) -> String {
        let out = self.psql_db(db, args);
        let stdout = String::from_utf8_lossy(&out.stdout).to_string();
        assert!(
            out.status.success(),
            "psql {args:?} failed:\n{stdout}\n{}\nserver log:\n{}",
            String::from_utf8_lossy(&out.stderr),
            self.log_text()
        );
        stdout
    }

    /// A tokio-postgres client as `strata` in `db`; panics with the server log if the
    /// connection fails.
    pub async fn client(&self, db: &str) -> tokio_postgres::Client {
        connect_to(self.port, "strata", db, None)
            .await
            .unwrap_or_else(|e| panic!("connect to {db}: {e}\n{}", self.log_text()))
    }

    /// Runs `select 1` through psql as strata; whether it answered `1`.
    pub fn answers(&self, password: Option<&str>) -> bool {
        let out = self.psql("strata", &["-c", "select 1"], password);
        String::from_utf8_lossy(&out.stdout).trim() == "1"
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        if let Some(mut c) = self.child.take() {
            let _ = c.kill();
            let _ = c.wait();
        }
    }
}

/// psql as `user` in database postgres (quiet, unaligned, tuples only, ON_ERROR_STOP).
pub fn psql_as(port: u16, user: &str, args: &[&str], password: Option<&str>) -> Output {
    psql_command(port, user, "postgres", password)
        .args(args)
        .output()
        .unwrap()
}

/// psql as `strata` in database `db`.
pub fn psql_db(port: u16, db: &str, args: &[&str], password: Option<&str>) -> Output {
    psql_command(port, "strata", db, password)
        .args(args)
        .output()
        .unwrap()
}

/// The psql command line every helper runs (`-X -q -A -t -v ON_ERROR_STOP=1`), as
/// `user` in `db`, for a test to add arguments and run or spawn; PGPASSWORD is
/// `password` or unset.
pub fn psql_command(port: u16, user: &str, db: &str, password: Option<&str>) -> Command {
    assert!(
        Path::new(PSQL).exists(),
        "psql not found at {PSQL}: install it with `apt-get install -y postgresql-client-15`"
    );
    let mut cmd = Command::new(PSQL);
    cmd.args([
        "-X",
        "-q",
        "-A",
        "-t",
        "-v",
        "ON_ERROR_STOP=1",
        "-h",
        "127.0.0.1",
    ])
    .args(["-p", &port.to_string(), "-U", user, "-d", db])
    .env_remove("PGPASSWORD")
    .env("PGCONNECT_TIMEOUT", "30");
    if let Some(p) = password {
        cmd.env("PGPASSWORD", p);
    }
    cmd
}

/// `strata init -D data [--pwfile]` with the password `pw`.
pub fn init(data: &Path, pw: Option<&str>) {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_strata"));
    cmd.args(["init", "-D"]).arg(data);
    if let Some(pw) = pw {
        let f = data.with_extension("pw");
        std::fs::write(&f, format!("{pw}\n")).unwrap();
        cmd.arg("--pwfile").arg(&f);
    }
    let out = cmd.output().unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// Replaces `data`'s `pg_hba.conf` with `text` (a test's own rules; the server reads
/// it at start, SIGHUP or `pg_reload_conf()`).
pub fn write_hba(data: &Path, text: &str) {
    std::fs::write(data.join("pg_hba.conf"), text).unwrap();
}

/// Rules for password tests: database `postgres` trusted from 127.0.0.1 (where a
/// test sets passwords), every other database of 127.0.0.1 by SCRAM-SHA-256.
pub const HBA_TRUST_POSTGRES_ONLY: &str =
    "host postgres all 127.0.0.1/32 trust\nhost all all 127.0.0.1/32 scram-sha-256\n";

/// `strata init -D data` with 1MB WAL segments, so that a small workload fills several
/// (replication, archiving and base-backup tests).
pub fn init_small_segments(data: &Path) {
    let out = Command::new(env!("CARGO_BIN_EXE_strata"))
        .args(["init", "-c", "wal_segment_size=1MB", "-D"])
        .arg(data)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// A tokio-postgres client as `user` in database postgres.
pub async fn connect(
    port: u16,
    user: &str,
    pw: Option<&str>,
) -> Result<tokio_postgres::Client, tokio_postgres::Error> {
    connect_to(port, user, "postgres", pw).await
}

/// A tokio-postgres client as `user` in database `db`; its connection runs on a task.
pub async fn connect_to(
    port: u16,
    user: &str,
    db: &str,
    pw: Option<&str>,
) -> Result<tokio_postgres::Client, tokio_postgres::Error> {
    let mut conf = format!("host=127.0.0.1 port={port} user={user} dbname={db}");
    if let Some(pw) = pw {
        conf.push_str(&format!(" password={pw}"));
    }
    let (c, conn) = tokio_postgres::connect(&conf, tokio_postgres::NoTls).await?;
    tokio::spawn(conn);
    Ok(c)
}

pub fn code_of(e: &tokio_postgres::Error) -> String {
    e.code()
        .map(|c| c.code().to_string())
        .unwrap_or_else(|| format!("no SQLSTATE: {e}"))
}

// ---- raw protocol ----

/// A typed frontend message.
pub fn frame(t: u8, body: &[u8]) -> Vec<u8> {
    let mut v = vec![t];
    v.extend_from_slice(&((body.len() + 4) as i32).to_be_bytes());
    v.extend_from_slice(body);
    v
}

/// A startup packet (protocol 3.0) for `user` on database postgres.
pub fn startup_packet(user: &str) -> Vec<u8> {
    let mut body = Vec::new();
    body.extend_from_slice(&196_608i32.to_be_bytes());
    for s in ["user", user, "database", "postgres"] {
        body.extend_from_slice(s.as_bytes());
        body.push(0);
    }
    body.push(0);
    let mut v = ((body.len() + 4) as i32).to_be_bytes().to_vec();
    v.extend_from_slice(&body);
    v
}

pub fn cstr(s: &str) -> Vec<u8> {
    let mut v = s.as_bytes().to_vec();
    v.push(0);
    v
}

/// A raw connection that reads backend messages as (type, body).
pub struct Raw {
    pub s: TcpStream,
}

impl Raw {
    pub fn connect(port: u16) -> Raw {
        let s = TcpStream::connect(("127.0.0.1", port)).unwrap();
        s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
        Raw { s }
    }

    /// Connects and completes a trust startup as `user`.
    pub fn ready(port: u16, user: &str) -> Raw {
        let mut r = Raw::connect(port);
        r.send(&startup_packet(user));
        let msgs = r.until_ready();
        assert!(
            msgs.iter().any(|(t, _)| *t == b'Z'),
            "no ReadyForQuery: {msgs:?}"
        );
        r
    }

    pub fn send(&mut self, b: &[u8]) {
        let _ = self.s.write_all(b);
    }

    /// The next message, or None at EOF / timeout.
    pub fn read_msg(&mut self) -> Option<(u8, Vec<u8>)> {
        let mut head = [0u8; 5];
        self.s.read_exact(&mut head).ok()?;
        let len = i32::from_be_bytes([head[1], head[2], head[3], head[4]]);
        let mut body = vec![0u8; (len as usize).saturating_sub(4)];
        self.s.read_exact(&mut body).ok()?;
        Some((head[0], body))
    }

    /// Messages up to and including ReadyForQuery, or up to EOF.
    pub fn until_ready(&mut self) -> Vec<(u8, Vec<u8>)> {
        let mut out = Vec::new();
        while let Some(m) = self.read_msg() {
            let done = m.0 == b'Z';
            out.push(m);
            if done {
                break;
            }
        }
        out
    }

    /// Whether the server closed the connection (EOF within the read timeout).
    pub fn closed(&mut self) -> bool {
        let mut b = [0u8; 1];
        loop {
            match self.s.read(&mut b) {
                Ok(0) => return true,
                Ok(_) => continue, // drain whatever was still sent
                Err(e) => {
                    return e.kind() == std::io::ErrorKind::ConnectionReset;
                }
            }
        }
    }
}

/// The SQLSTATE field of an ErrorResponse body.
pub fn sqlstate(body: &[u8]) -> String {
    field(body, b'C')
}

/// A field of an ErrorResponse / NoticeResponse body.
pub fn field(body: &[u8], code: u8) -> String {
    let mut i = 0;
    while i < body.len() && body[i] != 0 {
        let t = body[i];
        let end = body[i + 1..]
            .iter()
            .position(|c| *c == 0)
            .map(|p| i + 1 + p)
            .unwrap_or(body.len());
        if t == code {
            return String::from_utf8_lossy(&body[i + 1..end]).to_string();
        }
        i = end + 1;
    }
    String::new()
}

/// The first ErrorResponse in `msgs`: (SQLSTATE, message).
pub fn first_error(msgs: &[(u8, Vec<u8>)]) -> Option<(String, String)> {
    msgs.iter()
        .find(|(t, _)| *t == b'E')
        .map(|(_, b)| (sqlstate(b), field(b, b'M')))
}

/// CPU time (user + system) of a process, in clock ticks, from /proc/<pid>/stat.
pub fn cpu_ticks(pid: u32) -> u64 {
    let s = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
    let rest = s.rsplit_once(") ").map(|(_, r)| r).unwrap_or("");
    let f: Vec<&str> = rest.split_whitespace().collect();
    // After the command: state is field 3, utime 14, stime 15 (1-based).
    let get = |i: usize| {
        f.get(i - 3)
            .and_then(|v| v.parse::<u64>().ok())
            .unwrap_or(0)
    };
    get(14) + get(15)
}

/// Open file descriptors of a process.
pub fn fd_count(pid: u32) -> usize {
    std::fs::read_dir(format!("/proc/{pid}/fd"))
        .map(|d| d.count())
        .unwrap_or(0)
}

/// A tiny deterministic generator for the random crash tests; [`Lcg::seeded`] prints
/// its seed, so a failure can be re-run.
pub struct Lcg(pub u64);

impl Lcg {
    /// Seeded from the clock (or `STRATA_SEED`), the seed printed.
    pub fn seeded() -> Lcg {
        // STRATA_SEED re-runs a printed seed.
        let seed = std::env::var("STRATA_SEED")
            .ok()
            .and_then(|s| s.parse().ok())
            .unwrap_or_else(|| {
                std::time::SystemTime::now()
                    .duration_since(std::time::UNIX_EPOCH)
                    .unwrap()
                    .as_nanos() as u64
            });
        eprintln!("seed {seed}");
        Lcg(seed)
    }
    /// A number below `n`.
    pub fn next(&mut self, n: u64) -> u64 {
        self.0 = self
            .0
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        (self.0 >> 33) % n
    }
}

/// SIGKILLs process `pid` after `after`, from a thread of its own.
pub fn kill_after(pid: u32, after: std::time::Duration) -> std::thread::JoinHandle<()> {
    std::thread::spawn(move || {
        std::thread::sleep(after);
        let _ = std::process::Command::new("kill")
            .args(["-9", &pid.to_string()])
            .status();
    })
}

/// PostgreSQL 15's binaries.
pub const PG_BIN: &str = "/usr/lib/postgresql/15/bin";

/// A PostgreSQL 15 cluster of its own, trusting every local connection, run as the
/// `postgres` OS user (it refuses root).
pub struct Postgres {
    pub dir: std::path::PathBuf,
    pub port: u16,
}

pub fn as_postgres(cmd: &str) -> std::process::ExitStatus {
    std::process::Command::new("su")
        .args(["postgres", "-s", "/bin/sh", "-c", cmd])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .status()
        .unwrap()
}

impl Postgres {
    pub fn start() -> Postgres {
        let dir =
            std::env::temp_dir().join(format!("strata-pg-{}-{}", std::process::id(), free_port()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        assert!(std::process::Command::new("chown")
            .arg("postgres")
            .arg(&dir)
            .status()
            .unwrap()
            .success());
        let d = dir.display();
        let init = format!("{PG_BIN}/initdb -D {d}/data -U postgres -A trust -E UTF8 --locale=C");
        assert!(as_postgres(&init).success(), "initdb failed");
        let port = free_port();
        let start = format!(
            "{PG_BIN}/pg_ctl -D {d}/data -l {d}/log -w -o '-p {port} -k {d} -c listen_addresses=127.0.0.1' start"
        );
        assert!(as_postgres(&start).success(), "postgres did not start");
        Postgres { dir, port }
    }
}

impl Drop for Postgres {
    fn drop(&mut self) {
        let d = self.dir.display();
        as_postgres(&format!("{PG_BIN}/pg_ctl -D {d}/data -m immediate stop"));
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}
