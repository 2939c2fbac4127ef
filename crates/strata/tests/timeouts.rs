//! Waiting is bounded, through real clients: lock_timeout (55P03), statement_timeout
//! (57014), CancelRequest and pg_cancel_backend (57014), idle-in-transaction timeout
//! (25P03), and a client that has gone gives up its wait and its connection slot;
//! unknown settings are 42704 while the settings drivers send are accepted.

mod common;
use common::*;
use std::io::Write;
use std::process::Stdio;
use std::time::{Duration, Instant};

/// Awaits `f`, failing the test (rather than hanging it) if the wait is unbounded.
async fn within<T>(f: impl std::future::Future<Output = T>) -> T {
    tokio::time::timeout(Duration::from_secs(20), f)
        .await
        .expect("a bounded wait")
}

fn message(e: &tokio_postgres::Error) -> String {
    e.as_db_error()
        .map(|d| d.message().to_string())
        .unwrap_or_else(|| e.to_string())
}

/// A server with table `t` and a client holding the writer lock (a block that wrote).
async fn holder(s: &Server) -> tokio_postgres::Client {
    let c = s.client("postgres").await;
    c.batch_execute("create table if not exists t (a int)")
        .await
        .unwrap();
    c.batch_execute("begin; insert into t values (1)")
        .await
        .unwrap();
    c
}

async fn count(c: &tokio_postgres::Client) -> i64 {
    c.query_one("select count(*) from t", &[])
        .await
        .unwrap()
        .get(0)
}

#[test]
fn lock_timeout_and_statement_timeout_bound_the_wait() {
    let dir = tempfile::tempdir().unwrap();
    let s = Server::start(&dir.path().join("d"), &[]);
    let rt = tokio::runtime::Runtime::new().unwrap();
    rt.block_on(async {
        let h = holder(&s).await;
        let c = s.client("postgres").await;
        c.batch_execute("set lock_timeout = '200ms'").await.unwrap();
        let t0 = Instant::now();
        let e = within(c.execute("insert into t values (2)", &[]))
            .await
            .unwrap_err();
        assert_eq!(code_of(&e), "55P03");
        assert_eq!(message(&e), "canceling statement due to lock timeout");
        assert!(t0.elapsed() >= Duration::from_millis(200));
        assert!(t0.elapsed() < Duration::from_secs(5), "{:?}", t0.elapsed());
        // In a block, the timeout fails the block.
        c.batch_execute("begin").await.unwrap();
        let e = within(c.batch_execute("insert into t values (2)"))
            .await
            .unwrap_err();
        assert_eq!(code_of(&e), "55P03");
        let e = c.batch_execute("select 1").await.unwrap_err();
        assert_eq!(code_of(&e), "25P02");
        c.batch_execute("rollback").await.unwrap();
        // statement_timeout, while waiting and while working.
        c.batch_execute("set lock_timeout = 0; set statement_timeout = 300")
            .await
            .unwrap();
        let shown: String = c
            .query_one("show statement_timeout", &[])
            .await
            .unwrap()
            .get(0);
        assert_eq!(shown, "300ms");
        let t0 = Instant::now();
        let e = within(c.execute("insert into t values (2)", &[]))
            .await
            .unwrap_err();
        assert_eq!(code_of(&e), "57014");
        assert_eq!(message(&e), "canceling statement due to statement timeout");
        assert!(t0.elapsed() < Duration::from_secs(5));
        c.batch_execute("set statement_timeout = '1ms'")
            .await
            .unwrap();
        let e = within(c.query("select count(*) from generate_series(1, 5000000) g", &[]))
            .await
            .unwrap_err();
        assert_eq!(code_of(&e), "57014");
        // Off again (0, the default); a SET rolled back is undone.
        c.batch_execute("set statement_timeout = 0").await.unwrap();
        c.batch_execute("begin; set lock_timeout = '5s'; rollback")
            .await
            .unwrap();
        let shown: String = c.query_one("show lock_timeout", &[]).await.unwrap().get(0);
        assert_eq!(shown, "0");
        h.batch_execute("commit").await.unwrap();
        c.execute("insert into t values (3)", &[]).await.unwrap();
        assert_eq!(count(&c).await, 2);
    });
}

#[test]
fn cancel_request_and_pg_cancel_backend_cancel_a_waiting_statement() {
    let dir = tempfile::tempdir().unwrap();
    let s = Server::start(&dir.path().join("d"), &[]);
    let rt = tokio::runtime::Runtime::new().unwrap();
    rt.block_on(async {
        let h = holder(&s).await;
        // CancelRequest with the key of BackendKeyData.
        let c = s.client("postgres").await;
        let token = c.cancel_token();
        let waiting =
            tokio::spawn(async move { (c.execute("insert into t values (2)", &[]).await, c) });
        tokio::time::sleep(Duration::from_millis(300)).await;
        assert!(!waiting.is_finished(), "waits for the writer lock");
        token.cancel_query(tokio_postgres::NoTls).await.unwrap();
        let (r, c) = tokio::time::timeout(Duration::from_secs(5), waiting)
            .await
            .expect("canceled in time")
            .unwrap();
        let e = r.unwrap_err();
        assert_eq!(code_of(&e), "57014");
        assert_eq!(message(&e), "canceling statement due to user request");
        // The session goes on; a cancel while idle does not touch the next statement.
        assert_eq!(
            c.query_one("select 1", &[]).await.unwrap().get::<_, i32>(0),
            1
        );
        // pg_cancel_backend(pg_backend_pid()) from another session.
        let pid: i32 = c
            .query_one("select pg_backend_pid()", &[])
            .await
            .unwrap()
            .get(0);
        let other: i32 = h
            .query_one("select pg_backend_pid()", &[])
            .await
            .unwrap()
            .get(0);
        assert_ne!(pid, other);
        let waiting = tokio::spawn(async move { c.execute("insert into t values (2)", &[]).await });
        tokio::time::sleep(Duration::from_millis(300)).await;
        let third = s.client("postgres").await;
        let asked: bool = third
            .query_one("select pg_cancel_backend($1)", &[&pid])
            .await
            .unwrap()
            .get(0);
        assert!(asked);
        let e = tokio::time::timeout(Duration::from_secs(5), waiting)
            .await
            .expect("canceled in time")
            .unwrap()
            .unwrap_err();
        assert_eq!(code_of(&e), "57014");
        let none: bool = third
            .query_one("select pg_cancel_backend(999999)", &[])
            .await
            .unwrap()
            .get(0);
        assert!(!none);
        h.batch_execute("commit").await.unwrap();
        assert_eq!(
            count(&third).await,
            1,
            "the canceled inserts did not happen"
        );
    });
}

#[test]
fn a_client_that_has_gone_gives_up_its_wait_and_its_slot() {
    let dir = tempfile::tempdir().unwrap();
    let s = Server::start(
        &dir.path().join("d"),
        &["max_connections=3", "superuser_reserved_connections=0"],
    );
    let rt = tokio::runtime::Runtime::new().unwrap();
    rt.block_on(async {
        let h = holder(&s).await;
        // A psql waiting for the writer lock is killed.
        let mut waiter = psql_command(s.port, "strata", "postgres", None)
            .args(["-c", "insert into t values (2)"])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        tokio::time::sleep(Duration::from_millis(500)).await;
        assert!(waiter.try_wait().unwrap().is_none(), "psql waits");
        waiter.kill().unwrap();
        waiter.wait().unwrap();
        // Its slot comes back: two more connections fit beside the holder.
        let t0 = Instant::now();
        let c2 = connect(s.port, "strata", None).await.unwrap();
        let c3 = loop {
            match connect(s.port, "strata", None).await {
                Ok(c) => break c,
                Err(e) => {
                    assert_eq!(code_of(&e), "53300");
                    assert!(
                        t0.elapsed() < Duration::from_secs(5),
                        "the killed client's slot is still taken"
                    );
                    tokio::time::sleep(Duration::from_millis(50)).await;
                }
            }
        };
        h.batch_execute("commit").await.unwrap();
        assert_eq!(count(&c2).await, 1, "the killed client's insert never ran");
        drop(c3);
        drop(c2);

        // A psql idle in a transaction that wrote is killed: the writer lock is free.
        let mut idle = psql_command(s.port, "strata", "postgres", None)
            .stdin(Stdio::piped())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let mut stdin = idle.stdin.take().unwrap();
        stdin
            .write_all(b"begin;\ninsert into t values (5);\n")
            .unwrap();
        stdin.flush().unwrap();
        tokio::time::sleep(Duration::from_millis(700)).await;
        idle.kill().unwrap();
        idle.wait().unwrap();
        let c = s.client("postgres").await;
        c.batch_execute("set lock_timeout = '5s'").await.unwrap();
        within(c.execute("insert into t values (6)", &[]))
            .await
            .unwrap();
        assert_eq!(count(&c).await, 2);
        drop(stdin);
    });
}

#[test]
fn idle_timeouts_end_the_session() {
    let dir = tempfile::tempdir().unwrap();
    let s = Server::start(&dir.path().join("d"), &[]);
    let rt = tokio::runtime::Runtime::new().unwrap();
    rt.block_on(async {
        let c = s.client("postgres").await;
        c.batch_execute("create table t (a int)").await.unwrap();
        c.batch_execute(
            "set idle_in_transaction_session_timeout = '300ms'; begin; insert into t values (1)",
        )
        .await
        .unwrap();
        tokio::time::sleep(Duration::from_millis(800)).await;
        let other = s.client("postgres").await;
        within(other.batch_execute("set lock_timeout = '5s'; insert into t values (2)"))
            .await
            .unwrap();
        let e = c.simple_query("select 1").await.unwrap_err();
        assert_eq!(code_of(&e), "25P03", "{e}");
        assert_eq!(count(&other).await, 1);
        // idle_session_timeout: the same outside a block (57P05).
        other
            .batch_execute("set idle_session_timeout = '200ms'")
            .await
            .unwrap();
        tokio::time::sleep(Duration::from_millis(600)).await;
        let e = other.simple_query("select 1").await.unwrap_err();
        assert_eq!(code_of(&e), "57P05", "{e}");
    });
}

#[test]
fn unknown_settings_are_42704_and_drivers_settings_are_accepted() {
    let dir = tempfile::tempdir().unwrap();
    let s = Server::start(&dir.path().join("d"), &[]);
    let out = psql_db(s.port, "postgres", &["-c", "SET foo TO 1"], None);
    assert!(!out.status.success());
    assert!(
        String::from_utf8_lossy(&out.stderr)
            .contains("unrecognized configuration parameter \"foo\""),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let rt = tokio::runtime::Runtime::new().unwrap();
    rt.block_on(async {
        let c = s.client("postgres").await;
        for sql in [
            "set foo = 1",
            "show foo",
            "reset foo",
            "set nosuch_timeout = 0",
        ] {
            let e = c.batch_execute(sql).await.unwrap_err();
            assert_eq!(code_of(&e), "42704", "{sql}");
        }
        let e = c
            .batch_execute("set lock_timeout = 'abc'")
            .await
            .unwrap_err();
        assert_eq!(code_of(&e), "22023");
        let e = c
            .batch_execute("set statement_timeout = -1")
            .await
            .unwrap_err();
        assert_eq!(code_of(&e), "22023");
        // What psql, tokio-postgres, psycopg and JDBC send at connect or soon after.
        c.batch_execute(
            "SET application_name = 'app'; SET client_encoding = 'UTF8'; \
             SET DateStyle = ISO; SET extra_float_digits = 3; SET search_path = public; \
             SET TimeZone = 'UTC'; SET TIME ZONE 'UTC'; SET standard_conforming_strings = on; \
             SET statement_timeout = '2min'; SET lock_timeout = '1s'; \
             SET idle_in_transaction_session_timeout = 0; SET client_min_messages = warning; \
             SET default_transaction_isolation = 'read committed'; SET myapp.tenant = '7'",
        )
        .await
        .unwrap();
        let shown: String = c
            .query_one("show statement_timeout", &[])
            .await
            .unwrap()
            .get(0);
        assert_eq!(shown, "2min");
        let shown: String = c.query_one("show myapp.tenant", &[]).await.unwrap().get(0);
        assert_eq!(shown, "7");
    });
}

#[test]
fn a_waiting_session_is_terminated_by_drop_database_force() {
    let dir = tempfile::tempdir().unwrap();
    let s = Server::start(&dir.path().join("d"), &[]);
    let rt = tokio::runtime::Runtime::new().unwrap();
    rt.block_on(async {
        let d = s.client("postgres").await;
        d.batch_execute("create database busy").await.unwrap();
        let w = s.client("busy").await;
        w.batch_execute("create table b (a int)").await.unwrap();
        let h = holder(&s).await;
        let waiting = tokio::spawn(async move { w.execute("insert into b values (1)", &[]).await });
        tokio::time::sleep(Duration::from_millis(300)).await;
        d.batch_execute("set lock_timeout = '300ms'").await.unwrap();
        // The waiter is terminated at once; the drop then waits for the writer lock.
        let e = within(d.batch_execute("drop database busy with (force)"))
            .await
            .unwrap_err();
        assert_eq!(code_of(&e), "55P03");
        let e = within(waiting).await.unwrap().unwrap_err();
        assert_eq!(code_of(&e), "57P01", "{e}");
        assert_eq!(
            message(&e),
            "terminating connection due to administrator command"
        );
        h.batch_execute("rollback").await.unwrap();
        d.batch_execute("drop database busy").await.unwrap();
    });
}
