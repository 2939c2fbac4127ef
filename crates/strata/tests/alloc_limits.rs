//! No value or buffer a client controls can take the server down (issue 27, defect
//! 3): the server runs under a virtual-memory limit (`ulimit -v`), and statements
//! that build values past PostgreSQL's 1 GB (`||`, `repeat`), that ask for more
//! memory than the limit leaves, or that send a COPY record (a line without a
//! newline, an unterminated CSV quote) past 1 GB each get an error (54000, 53200)
//! while another session is served throughout and afterwards. Before the fix the
//! first statement aborted the process ("memory allocation of ... failed").

mod common;
use common::*;
use futures::SinkExt;

/// The server's address space: room for a 1 GB value and the server, not for two.
const LIMIT_KB: u64 = 2_000_000;

fn rt() -> tokio::runtime::Runtime {
    tokio::runtime::Runtime::new().unwrap()
}

/// The SQLSTATE of a statement's error; "" if it succeeded.
async fn code(c: &tokio_postgres::Client, sql: &str) -> String {
    match c.simple_query(sql).await {
        Ok(_) => String::new(),
        Err(e) => code_of(&e),
    }
}

/// A COPY whose one record grows past 1 GB: `first` once, then 1 MiB pieces of `x`.
async fn endless_record(c: &tokio_postgres::Client, sql: &str, first: &[u8]) -> String {
    let sink = c.copy_in::<_, bytes::Bytes>(sql).await.unwrap();
    futures::pin_mut!(sink);
    let piece = bytes::Bytes::from(vec![b'x'; 1 << 20]);
    let mut sent = sink.send(bytes::Bytes::copy_from_slice(first)).await;
    for _ in 0..1100 {
        if sent.is_err() {
            break;
        }
        sent = sink.send(piece.clone()).await;
    }
    match sent {
        Err(e) => code_of(&e),
        Ok(()) => match sink.finish().await {
            Err(e) => code_of(&e),
            Ok(n) => format!("COPY {n}"),
        },
    }
}

/// Prints the server's log if the test fails (a failure here is often the server's).
struct ShowLogOnPanic(std::path::PathBuf);

impl Drop for ShowLogOnPanic {
    fn drop(&mut self) {
        if std::thread::panicking() {
            eprintln!(
                "server log:\n{}",
                std::fs::read_to_string(&self.0).unwrap_or_default()
            );
        }
    }
}

#[test]
fn values_and_buffers_past_their_bounds_fail_the_statement_not_the_server() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("d");
    let s = Server::start_with(&data, &[], Some(&format!("ulimit -v {LIMIT_KB};")));
    let log = s.log.clone();
    let _show = ShowLogOnPanic(log);
    rt().block_on(async {
        let other = connect(s.port, "strata", None).await.unwrap();
        other
            .batch_execute("create table t (a text)")
            .await
            .unwrap();
        let c = connect(s.port, "strata", None).await.unwrap();
        // PostgreSQL's words and figure (its 4-byte header counted).
        let e = c
            .simple_query("select length(repeat('x', 600000000) || repeat('x', 600000000))")
            .await
            .unwrap_err();
        let db = e.as_db_error().unwrap();
        assert_eq!(
            (db.code().code(), db.message()),
            ("54000", "invalid memory alloc request size 1200000004")
        );
        assert_eq!(code(&c, "select repeat('x', 2000000000)").await, "54000");
        // Within 1 GB but past what the limit leaves: the allocation fails, the
        // statement gets 53200 (or, if it fits after all, succeeds).
        let big = "select length(repeat('x', 900000000) || repeat('y', 150000000))";
        assert!(["53200", ""].contains(&code(&c, big).await.as_str()));
        assert_eq!(
            code(&c, "select length(upper(repeat('x', 1000000000)))").await,
            "53200"
        );
        // COPY: a line without a newline, and a CSV quote never closed.
        let e = endless_record(&c, "copy t from stdin", b"").await;
        assert_eq!(e, "54000");
        let e = endless_record(&c, "copy t from stdin with (format csv)", b"\"").await;
        assert_eq!(e, "54000");
        // Everyone is still served; nothing of the failed COPYs stayed.
        let rows = other
            .query_one("select count(*) from t", &[])
            .await
            .unwrap();
        assert_eq!(rows.get::<_, i64>(0), 0);
        let n = c
            .query_one("select length(repeat('ab', 1000))", &[])
            .await
            .unwrap();
        assert_eq!(n.get::<_, i32>(0), 2000);
    });
    let mut s = s;
    assert!(s.alive(), "the server went down:\n{}", s.log_text());
}
