//! Property: COPY FROM STDIN and COPY TO STDOUT speak PostgreSQL's protocol, so psql's
//! `\copy` (text and csv) moves a table out and back in unchanged; a COPY is all or
//! nothing (a bad row, or the client's CopyFail, leaves no row and the connection
//! usable); rows copied in survive a SIGKILL once the COPY has returned; COPY runs
//! in the extended protocol too (tokio-postgres's copy_in and copy_out).

mod common;
use common::*;

fn sqlstate(body: &[u8]) -> String {
    let mut i = 0;
    while i < body.len() && body[i] != 0 {
        let end = i + 1 + body[i + 1..].iter().position(|b| *b == 0).unwrap();
        if body[i] == b'C' {
            return String::from_utf8_lossy(&body[i + 1..end]).into_owned();
        }
        i = end + 1;
    }
    String::new()
}

#[test]
fn psql_copy_round_trips_text_and_csv_and_survives_sigkill() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("d");
    let mut s = Server::start(&data, &[]);
    s.psql_ok(
        "postgres",
        &["-c", "create table t (a int, b text, c bigint)"],
    );
    let mut tsv = String::new();
    for i in 0..5000 {
        let b = match i % 4 {
            0 => "\\N".to_string(),
            1 => format!("tab\\there {i}"),
            2 => format!("line\\nbreak, \"quoted\" {i}"),
            _ => format!("back\\\\slash {i}"),
        };
        tsv.push_str(&format!("{i}\t{b}\t{}\n", i64::from(i) << 20));
    }
    let f = dir.path().join("in.tsv");
    std::fs::write(&f, &tsv).unwrap();
    let out = s.psql_ok(
        "postgres",
        &[
            "-c",
            &format!("\\copy t from '{}'", f.display()),
            "-c",
            "select count(*) from t",
        ],
    );
    assert_eq!(out.trim(), "5000");
    // Out as csv, into a second table, out again as text: the original bytes.
    let csv = dir.path().join("out.csv");
    let back = dir.path().join("back.tsv");
    s.psql_ok(
        "postgres",
        &[
            "-c",
            "create table u (a int, b text, c bigint)",
            "-c",
            &format!("\\copy t to '{}' with (format csv, header)", csv.display()),
            "-c",
            &format!(
                "\\copy u from '{}' with (format csv, header)",
                csv.display()
            ),
        ],
    );
    s.psql_ok(
        "postgres",
        &["-c", &format!("\\copy u to '{}'", back.display())],
    );
    let mut got: Vec<String> = std::fs::read_to_string(&back)
        .unwrap()
        .lines()
        .map(str::to_string)
        .collect();
    got.sort_by_key(|l| l.split('\t').next().unwrap().parse::<i32>().unwrap());
    let want: Vec<&str> = tsv.lines().collect();
    assert_eq!(got.len(), want.len(), "rows back");
    if let Some(k) = (0..want.len()).find(|&k| got[k] != want[k]) {
        panic!("row {k}: {:?} back, {:?} in", got[k], want[k]);
    }
    s.kill9();
    drop(s);
    let s = Server::start(&data, &[]);
    let n = s.psql_ok("postgres", &["-XAtc", "select count(*), sum(c) from u"]);
    let sum: i64 = (0..5000i64).map(|i| i << 20).sum();
    assert_eq!(n.trim(), format!("5000|{sum}"));
}

#[test]
fn a_failed_copy_leaves_nothing_and_the_connection_goes_on() {
    let dir = tempfile::tempdir().unwrap();
    let s = Server::start(&dir.path().join("d"), &[]);
    s.psql_ok("postgres", &["-c", "create table t (a int, b text)"]);
    // A bad row: 22P02 after the data, nothing inserted.
    let f = dir.path().join("bad.tsv");
    std::fs::write(&f, "1\tok\n2\tok\nthree\tbad\n4\tok\n").unwrap();
    let out = s.psql_db(
        "postgres",
        &["-c", &format!("\\copy t from '{}'", f.display())],
    );
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("invalid input syntax for type integer"),
        "{err}"
    );
    assert!(err.contains("line 3"), "{err}");
    // CopyFail from the client: 57014, then the same connection answers.
    let mut r = Raw::ready(s.port, "strata");
    r.send(&frame(b'Q', &cstr("COPY t FROM STDIN")));
    assert_eq!(r.read_msg().map(|m| m.0), Some(b'G'), "CopyInResponse");
    r.send(&frame(b'd', b"5\tfive\n"));
    r.send(&frame(b'f', &cstr("client gave up")));
    let msgs = r.until_ready();
    let errs: Vec<String> = msgs
        .iter()
        .filter(|(t, _)| *t == b'E')
        .map(|(_, b)| sqlstate(b))
        .collect();
    assert_eq!(errs, ["57014"], "{msgs:?}");
    r.send(&frame(b'Q', &cstr("SELECT count(*) FROM t")));
    let msgs = r.until_ready();
    assert!(
        msgs.iter().any(|(t, b)| *t == b'D' && b.ends_with(b"0")),
        "{msgs:?}"
    );
    // COPY, then more statements in the same query string, after CopyDone.
    r.send(&frame(
        b'Q',
        &cstr("COPY t FROM STDIN; SELECT count(*) FROM t"),
    ));
    assert_eq!(r.read_msg().map(|m| m.0), Some(b'G'));
    r.send(&frame(b'd', b"6\tsix\n7\tse"));
    r.send(&frame(b'd', b"ven\n"));
    r.send(&frame(b'c', &[]));
    let msgs = r.until_ready();
    let tags: Vec<&[u8]> = msgs
        .iter()
        .filter(|(t, _)| *t == b'C')
        .map(|(_, b)| &b[..b.len() - 1])
        .collect();
    assert_eq!(tags, [&b"COPY 2"[..], &b"SELECT 1"[..]], "{msgs:?}");
    // The extended protocol (tokio-postgres): in and out.
    let rt = tokio::runtime::Runtime::new().unwrap();
    rt.block_on(async {
        use futures::{SinkExt, StreamExt};
        let c = s.client("postgres").await;
        let sink = c
            .copy_in::<_, bytes::Bytes>("COPY t (b, a) FROM STDIN WITH (FORMAT csv)")
            .await
            .unwrap();
        futures::pin_mut!(sink);
        for i in 100..400 {
            sink.send(bytes::Bytes::from(format!("\"r,{i}\",{i}\n")))
                .await
                .unwrap();
        }
        assert_eq!(sink.finish().await.unwrap(), 300);
        let out = c.copy_out("COPY t (a, b) TO STDOUT").await.unwrap();
        futures::pin_mut!(out);
        let mut rows = Vec::new();
        while let Some(r) = out.next().await {
            rows.push(String::from_utf8(r.unwrap().to_vec()).unwrap());
        }
        assert_eq!(rows.len(), 302, "a CopyData per row");
        assert!(
            rows.contains(&"399\tr,399\n".to_string()),
            "{:?}",
            &rows[..3]
        );
        let n: i64 = c
            .query_one("select count(*) from t", &[])
            .await
            .unwrap()
            .get(0);
        assert_eq!(n, 302);
    });
}

/// An error in a COPY an Execute started (extended protocol, as tokio-postgres's
/// copy_in sends it: Bind, Execute, Sync, the data, CopyDone, Sync) is reported once
/// and the server waits for the client's Sync before ReadyForQuery, as PostgreSQL
/// does: one ReadyForQuery, so the client's next request gets its own answer. (It
/// answered the CopyDone with a ReadyForQuery too, and the driver lost its place.)
#[test]
fn an_extended_copy_that_fails_waits_for_sync() {
    let dir = tempfile::tempdir().unwrap();
    let s = Server::start(&dir.path().join("d"), &[]);
    s.psql_ok("postgres", &["-c", "create table t (a int)"]);
    let mut r = Raw::ready(s.port, "strata");
    let mut parse = cstr("");
    parse.extend(cstr("copy t from stdin"));
    parse.extend([0, 0]);
    r.send(&frame(b'P', &parse));
    let mut bind = cstr("");
    bind.extend(cstr(""));
    bind.extend([0, 0, 0, 0, 0, 0]);
    r.send(&frame(b'B', &bind));
    let mut exec = cstr("");
    exec.extend([0, 0, 0, 0]);
    r.send(&frame(b'E', &exec));
    r.send(&frame(b'S', &[]));
    r.send(&frame(b'd', b"x\n"));
    for _ in 0..5 {
        r.send(&frame(b'd', b"1\n"));
    }
    r.send(&frame(b'c', &[]));
    r.send(&frame(b'S', &[]));
    r.send(&frame(b'Q', &cstr("select count(*) from t")));
    let mut got = Vec::new();
    while got.iter().filter(|t| **t == b'Z').count() < 2 {
        let (t, b) = r.read_msg().expect("a message");
        if t == b'E' {
            assert_eq!(sqlstate(&b), "22P02");
        }
        got.push(t);
    }
    assert_eq!(String::from_utf8(got).unwrap(), "12GEZTDCZ");
}
