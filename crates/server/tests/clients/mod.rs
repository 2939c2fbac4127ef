//! Helpers of the session tests (atomicity, timeouts): a `strata start` process on a
//! free port in a temporary directory, and psql (PostgreSQL 15's, at /usr/bin/psql)
//! and tokio-postgres clients of it, connecting as `strata` to a named database.
#![allow(dead_code)] // each test file uses some of them

use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
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
    pub fn start(data: &Path, extra: &[&str]) -> Server {
        Server::start_on(data, free_port(), extra)
    }

    pub fn start_on(data: &Path, port: u16, extra: &[&str]) -> Server {
        let log = data.with_extension(format!("log{}", port));
        let logf = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&log)
            .unwrap();
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_strata"));
        cmd.arg("start").arg("-D").arg(data);
        cmd.args([
            "-c",
            &format!("port={port}"),
            "-c",
            "listen_addresses=127.0.0.1",
        ]);
        for e in extra {
            cmd.args(["-c", e]);
        }
        let child = cmd
            .stdout(Stdio::null())
            .stderr(logf)
            .spawn()
            .expect("spawn strata start");
        let s = Server {
            child: Some(child),
            port,
            log,
        };
        s.wait_ready();
        s
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

    pub fn kill9(&mut self) {
        if let Some(mut c) = self.child.take() {
            c.kill().unwrap(); // SIGKILL
            c.wait().unwrap();
        }
    }

    pub fn psql(&self, db: &str, args: &[&str]) -> Output {
        psql_as(self.port, db, args, None)
    }

    /// psql with ON_ERROR_STOP; panics with its output unless it succeeds.
    pub fn psql_ok(&self, db: &str, args: &[&str]) -> String {
        let out = self.psql(db, args);
        let stdout = String::from_utf8_lossy(&out.stdout).to_string();
        assert!(
            out.status.success(),
            "psql {args:?} failed:\n{stdout}\n{}\nserver log:\n{}",
            String::from_utf8_lossy(&out.stderr),
            self.log_text()
        );
        stdout
    }

    pub async fn client(&self, db: &str) -> tokio_postgres::Client {
        let (c, conn) = tokio_postgres::connect(
            &format!("host=127.0.0.1 port={} user=strata dbname={db}", self.port),
            tokio_postgres::NoTls,
        )
        .await
        .unwrap_or_else(|e| panic!("connect to {db}: {e}\n{}", self.log_text()));
        tokio::spawn(conn);
        c
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        self.kill9();
    }
}

pub fn psql_as(port: u16, db: &str, args: &[&str], password: Option<&str>) -> Output {
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
    .args(["-p", &port.to_string(), "-U", "strata", "-d", db])
    .args(args)
    .env_remove("PGPASSWORD")
    .env("PGCONNECT_TIMEOUT", "30");
    if let Some(p) = password {
        cmd.env("PGPASSWORD", p);
    }
    cmd.output().unwrap()
}

pub fn code_of(e: &tokio_postgres::Error) -> String {
    e.code()
        .map(|c| c.code().to_string())
        .unwrap_or_else(|| format!("no SQLSTATE: {e}"))
}
