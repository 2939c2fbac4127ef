//! Temporary tables through the real server (temp rules, smgr rule 8): each session
//! sees its own ahead of permanent tables and never another's; they write no WAL;
//! they go with their session, and after a SIGKILL nothing of them is left while
//! every committed permanent row is.

mod common;
use common::*;
use std::path::Path;

/// Files under the temporary tables' directory of the data directory.
fn temp_files(data: &Path) -> usize {
    fn count(p: &Path) -> usize {
        std::fs::read_dir(p).map_or(0, |d| {
            d.flatten()
                .map(|e| match e.file_type().is_ok_and(|t| t.is_dir()) {
                    true => count(&e.path()),
                    false => 1,
                })
                .sum()
        })
    }
    count(&data.join("base/pgsql_tmp/rels"))
}

async fn ints(c: &tokio_postgres::Client, sql: &str) -> Vec<i32> {
    c.query(sql, &[])
        .await
        .unwrap_or_else(|e| panic!("{sql}: {e}"))
        .iter()
        .map(|r| r.get(0))
        .collect()
}

async fn lsn(c: &tokio_postgres::Client) -> u64 {
    let r = c
        .query_one("select pg_current_wal_lsn()::text", &[])
        .await
        .unwrap();
    let s: String = r.get(0);
    let (hi, lo) = s.split_once('/').unwrap();
    (u64::from_str_radix(hi, 16).unwrap() << 32) | u64::from_str_radix(lo, 16).unwrap()
}

#[test]
fn sessions_see_their_own_temporary_tables_and_they_end_with_them() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("d");
    let s = Server::start(&data, &[]);
    s.psql_ok(
        "postgres",
        &["-c", "create table t (a int); insert into t values (0)"],
    );
    let rt = tokio::runtime::Runtime::new().unwrap();
    rt.block_on(async {
        let a = s.client("postgres").await;
        let b = s.client("postgres").await;
        for (c, v) in [(&a, 1), (&b, 2)] {
            c.batch_execute(&format!(
                "create temp table t (a int primary key); insert into t values ({v}), ({v}0);
                 create index on t (a)"
            ))
            .await
            .unwrap();
        }
        assert_eq!(ints(&a, "select a from t order by a").await, [1, 10]);
        assert_eq!(
            ints(&b, "select a from pg_temp.t order by a").await,
            [2, 20]
        );
        let dup = a
            .batch_execute("insert into t values (1)")
            .await
            .unwrap_err();
        assert_eq!(code_of(&dup), "23505");
        let msg = dup.as_db_error().unwrap().message();
        assert!(msg.contains("\"t_pkey\""), "{msg}");
        // A third session has none: it sees the permanent table.
        let c = s.client("postgres").await;
        assert_eq!(ints(&c, "select a from t").await, [0]);
        let e = c.query("select * from pg_temp.t", &[]).await.unwrap_err();
        assert_eq!(code_of(&e), "42P01");
        // Dropping the temporary table uncovers the permanent one.
        a.batch_execute("drop table t").await.unwrap();
        assert_eq!(ints(&a, "select a from t").await, [0]);
        assert_eq!(ints(&b, "select a from t order by a").await, [2, 20]);
        assert!(temp_files(&data) > 0);
        drop(b);
        drop(a);
    });
    // The sessions are gone, and their files with them (temp rule 3).
    for _ in 0..100 {
        if temp_files(&data) == 0 {
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    assert_eq!(temp_files(&data), 0, "{}", s.log_text());
}

#[test]
fn on_commit_actions_run_at_each_commit() {
    let dir = tempfile::tempdir().unwrap();
    let s = Server::start(&dir.path().join("d"), &[]);
    let rt = tokio::runtime::Runtime::new().unwrap();
    rt.block_on(async {
        let c = s.client("postgres").await;
        c.batch_execute("create temp table d (a int) on commit delete rows")
            .await
            .unwrap();
        c.batch_execute("begin; insert into d values (1), (2)")
            .await
            .unwrap();
        assert_eq!(ints(&c, "select count(*)::int from d").await, [2]);
        c.batch_execute("commit").await.unwrap();
        assert_eq!(ints(&c, "select count(*)::int from d").await, [0]);
        // Autocommit: the rows go with the statement's own commit.
        c.batch_execute("insert into d values (3)").await.unwrap();
        assert_eq!(ints(&c, "select count(*)::int from d").await, [0]);
        // ON COMMIT DROP: there until its transaction commits; rolled back, gone too.
        c.batch_execute(
            "begin; create temp table x (a int) on commit drop; insert into x values (1)",
        )
        .await
        .unwrap();
        assert_eq!(ints(&c, "select a from x").await, [1]);
        c.batch_execute("commit").await.unwrap();
        let e = c.query("select * from x", &[]).await.unwrap_err();
        assert_eq!(code_of(&e), "42P01");
        // Preserved rows survive a commit and a rolled-back change.
        c.batch_execute("create temp table p (a int); insert into p values (7)")
            .await
            .unwrap();
        c.batch_execute("begin; delete from p; rollback")
            .await
            .unwrap();
        assert_eq!(ints(&c, "select a from p").await, [7]);
        let e = c
            .batch_execute("create table q (a int) on commit drop")
            .await
            .unwrap_err();
        assert_eq!(code_of(&e), "42P16");
    });
}

#[test]
fn temporary_tables_write_no_wal_and_vanish_after_sigkill() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("d");
    let mut s = Server::start(&data, &["shared_buffers=1MB"]);
    let rt = tokio::runtime::Runtime::new().unwrap();
    let rows = 20_000;
    rt.block_on(async {
        let c = s.client("postgres").await;
        c.batch_execute("create table keep (a int primary key)")
            .await
            .unwrap();
        c.batch_execute("create temp table scratch (a int primary key, b text)")
            .await
            .unwrap();
        let before = lsn(&c).await;
        let fill = format!(
            "insert into scratch select i, repeat('x', 50) from generate_series(1, {rows}) i;
             update scratch set b = 'y' where a % 2 = 0; delete from scratch where a % 3 = 0"
        );
        c.batch_execute(&fill).await.unwrap();
        let temp_wal = lsn(&c).await - before;
        let before = lsn(&c).await;
        c.batch_execute(&format!(
            "insert into keep select i from generate_series(1, {rows}) i"
        ))
        .await
        .unwrap();
        let kept_wal = lsn(&c).await - before;
        // Only the commit records (and no page of the temporary table) are logged.
        assert!(
            temp_wal < 4096,
            "temporary table wrote {temp_wal} bytes of WAL"
        );
        assert!(
            kept_wal > 100 * 1024,
            "permanent table wrote {kept_wal} bytes"
        );
        let n = ints(&c, "select count(*)::int from scratch").await;
        assert_eq!(n, [rows - rows / 3]);
        assert!(temp_files(&data) > 0);
        std::mem::forget(c); // the session is alive at the kill
    });
    s.kill9();
    let s = Server::start(&data, &["shared_buffers=1MB"]);
    assert_eq!(temp_files(&data), 0, "start-up removes what sessions left");
    let out = s.psql_ok("postgres", &["-XAtc", "select count(*) from keep"]);
    assert_eq!(out.trim(), rows.to_string());
    let out = s.psql("strata", &["-XAtc", "select count(*) from scratch"], None);
    assert!(String::from_utf8_lossy(&out.stderr).contains("does not exist"));
}
