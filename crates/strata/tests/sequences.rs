//! Property: no sequence value is handed out twice, across SIGKILLs at random
//! moments. A client inserts into a table with a `bigserial` key (autocommit, and in
//! blocks that commit or roll back), calls nextval on a sequence of its own, and
//! keeps every value it was given; a killer SIGKILLs the server at a random moment.
//! After each recovery every committed row is there and nothing else (the
//! statement in flight either way), and every value handed out from then on is
//! above every value handed out before (sequence rules 1, 2 and 4).

mod common;
use common::*;
use std::collections::{BTreeMap, BTreeSet};
use std::time::Duration;

/// What the client saw: the rows committed (id → v), the row whose commit was in
/// flight at the kill, and every value of each sequence handed out.
#[derive(Default)]
struct Seen {
    rows: BTreeMap<i64, i32>,
    pending: Option<(i64, i32)>,
    ids: BTreeSet<i64>,
    s: BTreeSet<i64>,
}

/// One random step; `Err` when the connection is lost (the kill).
async fn step(
    c: &tokio_postgres::Client,
    rng: &mut Lcg,
    seen: &mut Seen,
) -> Result<(), tokio_postgres::Error> {
    let v = rng.next(1000) as i32;
    match rng.next(4) {
        0 => {
            let r = c.query_one("select nextval('s')", &[]).await?;
            assert!(seen.s.insert(r.get(0)), "nextval('s') repeated a value");
        }
        1 => {
            c.batch_execute("begin").await?;
            let r = c
                .query_one("insert into t (v) values ($1) returning id", &[&v])
                .await?;
            let id: i64 = r.get(0);
            assert!(seen.ids.insert(id), "id {id} handed out twice");
            c.batch_execute("rollback").await?;
        }
        _ => {
            // Autocommit: the row is committed when the answer comes.
            seen.pending = Some((-1, v));
            let r = c
                .query_one("insert into t (v) values ($1) returning id", &[&v])
                .await?;
            let id: i64 = r.get(0);
            seen.pending = None;
            assert!(seen.ids.insert(id), "id {id} handed out twice");
            seen.rows.insert(id, v);
        }
    }
    Ok(())
}

fn server_rows(s: &Server) -> BTreeMap<i64, i32> {
    s.psql_ok("postgres", &["-XAtc", "select id, v from t order by id"])
        .lines()
        .filter(|l| !l.is_empty())
        .map(|l| {
            let (a, b) = l.split_once('|').unwrap();
            (a.parse().unwrap(), b.parse().unwrap())
        })
        .collect()
}

#[test]
fn sequences_never_repeat_a_value_across_sigkill() {
    let mut rng = Lcg::seeded();
    let seed = rng.0;
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("d");
    let mut s = Server::start(&data, &["shared_buffers=1MB"]);
    s.psql_ok(
        "postgres",
        &[
            "-c",
            "create table t (id bigserial primary key, v int); create sequence s",
        ],
    );
    let mut seen = Seen::default();
    let rt = tokio::runtime::Runtime::new().unwrap();
    for round in 0..5 {
        let pid = s.pid();
        let after = Duration::from_millis(200 + rng.next(800));
        let killer = kill_after(pid, after);
        rt.block_on(async {
            let c = s.client("postgres").await;
            while step(&c, &mut rng, &mut seen).await.is_ok() {}
        });
        killer.join().unwrap();
        s.kill9();
        if round == 2 {
            // A checkpoint between crashes: replay then starts past the records
            // that logged the values ahead (sequence rule 2).
            s = Server::start(&data, &["shared_buffers=1MB"]);
            s.psql_ok("postgres", &["-c", "checkpoint"]);
            let c = s.psql_ok("postgres", &["-XAtc", "select nextval('s')"]);
            assert!(seen.s.insert(c.trim().parse().unwrap()));
            s.kill9();
        }
        s = Server::start(&data, &["shared_buffers=1MB"]);
        let rows = server_rows(&s);
        if let Some((_, v)) = seen.pending.take() {
            // The autocommit insert in flight: committed or not, its id is used.
            let extra: Vec<i64> = rows
                .keys()
                .filter(|id| !seen.rows.contains_key(id))
                .copied()
                .collect();
            if let [id] = extra[..] {
                assert_eq!(rows[&id], v);
                assert!(
                    seen.ids.insert(id),
                    "the in-flight id {id} was handed out before"
                );
                seen.rows.insert(id, v);
            }
        }
        assert_eq!(
            rows, seen.rows,
            "round {round} (seed {seed}): not what committed"
        );
        let next_id: i64 = s
            .psql_ok("postgres", &["-XAtc", "select nextval('t_id_seq')"])
            .trim()
            .parse()
            .unwrap();
        let next_s: i64 = s
            .psql_ok("postgres", &["-XAtc", "select nextval('s')"])
            .trim()
            .parse()
            .unwrap();
        let max_id = seen.ids.iter().max().copied().unwrap_or(0);
        let max_s = seen.s.iter().max().copied().unwrap_or(0);
        assert!(
            next_id > max_id,
            "round {round} (seed {seed}): id {next_id} after {max_id}"
        );
        assert!(
            next_s > max_s,
            "round {round} (seed {seed}): s {next_s} after {max_s}"
        );
        seen.ids.insert(next_id);
        seen.s.insert(next_s);
    }
    assert!(
        seen.rows.len() > 20,
        "the workload ran ({} rows)",
        seen.rows.len()
    );
    s.psql_ok("postgres", &["-c", "select bt_index_check('t_pkey', true)"]);
}
