//! A failure after which durability is unknown ends the server process — a failed WAL
//! fsync (PANIC), a panic while engine state is held — and the next start recovers
//! every acknowledged commit; an I/O error on `pg_authid` before a password change
//! commits fails that statement only. Faults are injected with the test-only setting
//! `debug_io_fault` (the simulated disk of `strata_vfs::sim` over the real files).

use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

struct Server {
    child: Child,
    port: u16,
    log: PathBuf,
}

impl Server {
    fn start(data: &Path, extra: &[&str]) -> Server {
        let port = free_port();
        let log = data.with_extension(format!("log{port}"));
        let logf = std::fs::File::create(&log).unwrap();
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_strata"));
        cmd.arg("start").arg("-D").arg(data).args([
            "-c",
            &format!("port={port}"),
            "-c",
            "listen_addresses=127.0.0.1",
        ]);
        for e in extra {
            cmd.args(["-c", e]);
        }
        let child = cmd.stdout(Stdio::null()).stderr(logf).spawn().unwrap();
        let s = Server { child, port, log };
        let t0 = Instant::now();
        while TcpStream::connect(("127.0.0.1", port)).is_err() {
            assert!(t0.elapsed() < Duration::from_secs(60), "{}", s.log_text());
            std::thread::sleep(Duration::from_millis(20));
        }
        s
    }

    fn log_text(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }

    fn psql(&self, sql: &str) -> Output {
        Command::new("/usr/bin/psql")
            .args([
                "-X",
                "-q",
                "-At",
                "-v",
                "ON_ERROR_STOP=1",
                "-h",
                "127.0.0.1",
            ])
            .args([
                "-p",
                &self.port.to_string(),
                "-U",
                "strata",
                "-d",
                "postgres",
            ])
            .args(["-c", sql])
            .output()
            .unwrap()
    }

    /// Waits for the process to end by itself; its exit status.
    fn wait_exit(&mut self) -> std::process::ExitStatus {
        let t0 = Instant::now();
        loop {
            if let Some(st) = self.child.try_wait().unwrap() {
                return st;
            }
            assert!(
                t0.elapsed() < Duration::from_secs(20),
                "the server did not stop after the failure:\n{}",
                self.log_text()
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn init(dir: &Path) -> PathBuf {
    let data = dir.join("data");
    let out = Command::new(env!("CARGO_BIN_EXE_strata"))
        .args(["init", "-D"])
        .arg(&data)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    data
}

#[test]
fn a_failed_wal_fsync_stops_the_server_and_restart_keeps_acknowledged_commits() {
    let dir = tempfile::tempdir().unwrap();
    let data = init(dir.path());
    // The sixth WAL fsync fails: start-up's checkpoint and a few commits go first.
    let mut s = Server::start(&data, &["debug_io_fault=wal:sync:eio:5"]);
    assert!(s.psql("create table t (a int)").status.success());
    let mut acked = Vec::new();
    for i in 0..20 {
        if s.psql(&format!("insert into t values ({i})"))
            .status
            .success()
        {
            acked.push(i);
        } else {
            break;
        }
    }
    assert!(acked.len() < 20, "the fault never hit:\n{}", s.log_text());
    let st = s.wait_exit();
    assert!(!st.success(), "{st}");
    let log = s.log_text();
    assert!(
        log.contains("PANIC:") && log.contains("could not flush WAL"),
        "{log}"
    );
    drop(s);
    let s = Server::start(&data, &[]);
    let out = s.psql("select a from t order by a");
    let got: Vec<i32> = String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(|l| l.parse().unwrap())
        .collect();
    assert_eq!(got, acked, "every acknowledged insert, nothing else");
}

#[test]
fn a_panic_while_engine_state_is_held_ends_the_process_and_restart_recovers() {
    let dir = tempfile::tempdir().unwrap();
    let data = init(dir.path());
    // A panic inside the checkpoint's first data-file fsync: pages written, the
    // checkpoint half done, its lock held.
    let mut s = Server::start(&data, &["debug_io_fault=data:sync:panic:0"]);
    let out =
        s.psql("create table t (a int); insert into t select g from generate_series(1, 1000) g");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let out = s.psql("checkpoint");
    assert!(!out.status.success(), "the checkpoint cannot complete");
    let st = s.wait_exit();
    assert!(!st.success(), "{st}");
    assert!(s.log_text().contains("PANIC:"), "{}", s.log_text());
    drop(s);
    let s = Server::start(&data, &[]);
    let out = s.psql("select count(*), sum(a) from t");
    assert_eq!(String::from_utf8_lossy(&out.stdout).trim(), "1000|500500");
}

#[test]
fn an_io_error_staging_a_password_fails_the_change_and_keeps_the_old_one() {
    for fault in ["authid:write:enospc:0", "authid:sync:eio:0"] {
        let dir = tempfile::tempdir().unwrap();
        let data = init(dir.path());
        let mut s = Server::start(&data, &[&format!("debug_io_fault={fault}")]);
        let out = s.psql("alter role strata password 'secret'");
        assert!(
            !out.status.success(),
            "{fault}: the change cannot be made durable"
        );
        // The server goes on, and nothing needs a password.
        let out = s.psql("select 1");
        assert_eq!(String::from_utf8_lossy(&out.stdout).trim(), "1", "{fault}");
        assert!(
            s.child.try_wait().unwrap().is_none(),
            "{fault}: still running"
        );
        drop(s);
        let s = Server::start(&data, &[]);
        assert!(s.psql("select 1").status.success(), "{fault}: no password");
        assert!(!data.join("global/pg_authid.pending").exists(), "{fault}");
    }
}
