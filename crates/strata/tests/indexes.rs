//! Property: indexed tables survive SIGKILL at random moments. A client runs random
//! transactions of inserts, updates and deletes by key and by key range (through the
//! primary key's index), refused duplicates (23505) and VACUUMs, against a model of
//! what committed; a killer SIGKILLs the server at a random moment; after each
//! recovery every committed row is there and nothing else (the transaction in flight
//! at the kill either way), each index checks against its table (`bt_index_check`
//! with heapallindexed), and lookups through the index agree with a full scan.

mod common;
use common::*;
use std::collections::BTreeMap;
use std::time::Duration;

type Model = BTreeMap<i32, (i64, String)>;

/// One random transaction against the server and the model; `Err` when the
/// connection is lost (the kill). `pending` holds the model the transaction would
/// leave, while its COMMIT is in flight.
async fn transaction(
    c: &tokio_postgres::Client,
    rng: &mut Lcg,
    model: &mut Model,
    pending: &mut Option<Model>,
) -> Result<(), tokio_postgres::Error> {
    if rng.next(40) == 0 {
        return c.batch_execute("vacuum t").await;
    }
    let mut next = model.clone();
    c.batch_execute("begin").await?;
    for _ in 0..1 + rng.next(6) {
        let k = rng.next(400) as i32;
        let v = rng.next(1000) as i64;
        let g = format!("g{}", rng.next(20));
        match rng.next(5) {
            0 | 1 if !next.contains_key(&k) => {
                c.execute("insert into t values ($1, $2, $3)", &[&k, &v, &g])
                    .await?;
                next.insert(k, (v, g));
            }
            0 | 1 => {
                // Index rule 3: the duplicate is refused, and fails the block.
                let e = c
                    .execute("insert into t values ($1, 0, 'dup')", &[&k])
                    .await
                    .unwrap_err();
                if e.as_db_error().is_none() {
                    return Err(e);
                }
                assert_eq!(code_of(&e), "23505", "{e}");
                c.batch_execute("rollback").await?;
                return Ok(());
            }
            2 => {
                c.execute("update t set v = $2, g = $3 where k = $1", &[&k, &v, &g])
                    .await?;
                if let Some(row) = next.get_mut(&k) {
                    *row = (v, g);
                }
            }
            3 => {
                c.execute("delete from t where k = $1", &[&k]).await?;
                next.remove(&k);
            }
            _ => {
                c.execute(
                    "update t set v = v + 1 where k >= $1 and k < $1 + 20",
                    &[&k],
                )
                .await?;
                for (_, row) in next.range_mut(k..k + 20) {
                    row.0 += 1;
                }
            }
        }
    }
    *pending = Some(next.clone());
    c.batch_execute("commit").await?;
    *pending = None;
    *model = next;
    Ok(())
}

/// The table as the server has it, by a full scan and through the primary key.
fn server_rows(s: &Server) -> (Model, String) {
    let out = s.psql_ok(
        "postgres",
        &["-XAtc", "select k, v, g from t where k + 0 >= 0 order by k"],
    );
    let rows = out
        .lines()
        .filter(|l| !l.is_empty())
        .map(|l| {
            let f: Vec<&str> = l.split('|').collect();
            (
                f[0].parse().unwrap(),
                (f[1].parse().unwrap(), f[2].to_string()),
            )
        })
        .collect();
    let by_index = s.psql_ok(
        "postgres",
        &[
            "-XAtc",
            "select count(*), sum(v) from t where k >= 0 and k < 400",
        ],
    );
    (rows, by_index.trim().to_string())
}

#[test]
fn indexed_tables_survive_sigkill_at_random_moments() {
    let mut rng = Lcg::seeded();
    let seed = rng.0;
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("d");
    let mut s = Server::start(&data, &["shared_buffers=1MB"]);
    s.psql_ok(
        "postgres",
        &["-c", "create table t (k int primary key, v bigint not null, g text); create index t_g on t (g, v)"],
    );
    let mut model = Model::new();
    let rt = tokio::runtime::Runtime::new().unwrap();
    for round in 0..6 {
        let pid = s.pid();
        let after = Duration::from_millis(300 + rng.next(900));
        let killer = kill_after(pid, after);
        let mut pending = None;
        rt.block_on(async {
            let c = s.client("postgres").await;
            while transaction(&c, &mut rng, &mut model, &mut pending)
                .await
                .is_ok()
            {}
        });
        killer.join().unwrap();
        s.kill9();
        s = Server::start(&data, &["shared_buffers=1MB"]);
        let (rows, by_index) = server_rows(&s);
        if let Some(p) = pending.filter(|p| *p == rows) {
            model = p; // the COMMIT in flight at the kill was durable
        }
        assert_eq!(
            rows, model,
            "round {round} (seed {seed}): the table is not what committed"
        );
        let sum: i64 = model.values().map(|(v, _)| v).sum();
        let sum = if model.is_empty() {
            String::new()
        } else {
            sum.to_string()
        };
        assert_eq!(
            by_index,
            format!("{}|{sum}", model.len()),
            "round {round}: through the index"
        );
        for ix in ["t_pkey", "t_g"] {
            s.psql_ok(
                "postgres",
                &["-c", &format!("select bt_index_check('{ix}', true)")],
            );
        }
    }
    assert!(model.len() > 20, "the workload ran ({} rows)", model.len());
}
