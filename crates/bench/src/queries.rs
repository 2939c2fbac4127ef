//! `strata bench queries`: TPC-H's 22 queries (`--suite tpch`) or the single-table
//! queries on pgbench's accounts (`--suite accounts`, [`crate::accounts`]) against
//! Strata and PostgreSQL 15 side by side (issue 28's "must show").
//!
//! Method, per engine: a fresh cluster (`seeds`' settings: same shared_buffers, fsync
//! on, autovacuum off), TPC-H's schema, its rows at `--scale` generated in process by
//! `tpchgen` ([`crate::tpch`]) and sent by COPY FROM STDIN in 1 MB messages (the same
//! bytes to both engines), then the same indexes, then ANALYZE. The load's seconds are
//! reported; a CHECKPOINT follows, outside them, so that no write-back of the load
//! runs beside the timed queries. Per query, in one session with `work_mem` and `statement_timeout` set:
//! `EXPLAIN (COSTS OFF)` of its SELECT (written with `--raw`), then the query
//! `--runs` times through the simple protocol, timed by the client from sending to
//! the last row; the least is kept (noise only adds), and only one run is made of a
//! query whose first run took longer than a minute. A query that ran in under
//! [`SHORT`] is run again for [`SHORT_BUDGET`] more (up to [`SHORT_RUNS`] runs in
//! all): three runs of a 100 µs query do not reach its floor on this machine, where
//! a round trip alone varies by tens of µs. The first run's rows are kept
//! and compared between engines: equal text, or equal as numbers (a numeric shown
//! with another scale) — the two are reported apart. A query that fails or times
//! out is reported with its error and left out of the geometric mean. Peak RSS: of
//! Strata's server process, and of PostgreSQL's backend that ran the queries
//! (`VmHWM`; both count the shared buffers they touched).

use super::seeds::{self, Cluster, Kind};
use super::{format_bytes, format_seconds, tpch, Record};
use futures::SinkExt;
use std::path::PathBuf;
use std::time::Instant;
use tokio_postgres::{Client, SimpleQueryMessage};

/// Which queries: TPC-H's 22, or the single-table ones on pgbench's accounts.
#[derive(clap::ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum Suite {
    Tpch,
    Accounts,
}

impl Suite {
    fn count(self) -> u32 {
        match self {
            Suite::Tpch => 22,
            Suite::Accounts => crate::accounts::QUERIES.len() as u32,
        }
    }

    fn query(self, q: u32) -> Result<String, String> {
        match self {
            Suite::Tpch => tpch::query(q),
            Suite::Accounts => crate::accounts::query(q),
        }
    }

    /// The records' case prefix.
    fn label(self, scale: f64) -> String {
        match self {
            Suite::Tpch => format!("tpch sf{scale}"),
            Suite::Accounts => format!("accounts scale {scale}"),
        }
    }
}

#[derive(clap::Args, Clone)]
pub struct Args {
    /// The queries: TPC-H's (`--scale` its scale factor) or the single-table ones
    /// on pgbench's accounts (`--scale` pgbench's, 100,000 rows each).
    #[arg(long, value_enum, default_value = "tpch")]
    pub suite: Suite,
    /// Engines to run, comma-separated: strata, postgres.
    #[arg(long, default_value = "strata,postgres")]
    pub engines: String,
    /// TPC-H scale factor (1 is 6,001,215 lineitems).
    #[arg(long, default_value_t = 1.0)]
    pub scale: f64,
    /// shared_buffers, PostgreSQL units.
    #[arg(long, default_value = "1GB")]
    pub shared_buffers: String,
    /// work_mem for the queries, PostgreSQL units.
    #[arg(long, default_value = "64MB")]
    pub work_mem: String,
    /// Runs of each query; the least time is kept.
    #[arg(long, default_value_t = 3)]
    pub runs: u32,
    /// statement_timeout for each query, seconds.
    #[arg(long, default_value_t = 600)]
    pub timeout: u64,
    /// Only these queries (comma-separated numbers); all 22 by default.
    #[arg(long)]
    pub only: Option<String>,
    /// Write each engine's EXPLAIN and rows of each query into this directory.
    #[arg(long)]
    pub raw: Option<PathBuf>,
    /// Write the records to this file.
    #[arg(long)]
    pub json: Option<PathBuf>,
    /// Keep each engine's loaded, stopped cluster in this directory (`<DIR>/strata/data`,
    /// `<DIR>/postgres/data`) for profiling, instead of removing it.
    #[arg(long)]
    pub keep: Option<PathBuf>,
    /// PostgreSQL's bin directory (initdb, postgres).
    #[arg(long, default_value = "/usr/lib/postgresql/15/bin")]
    pub pg_bin: PathBuf,
}

type Rows = Vec<Vec<Option<String>>>;

/// One engine's answer to one query.
struct Answer {
    /// The least time, or the error.
    seconds: Result<f64, String>,
    rows: Rows,
}

/// One engine's whole run.
struct EngineRun {
    kind: Kind,
    load_seconds: f64,
    peak_rss: Option<u64>,
    answers: Vec<(u32, Answer)>,
}

fn chosen(args: &Args) -> Result<Vec<u32>, String> {
    let n = args.suite.count();
    let Some(only) = &args.only else {
        return Ok((1..=n).collect());
    };
    only.split(',')
        .map(|s| {
            s.trim()
                .parse::<u32>()
                .ok()
                .filter(|q| (1..=n).contains(q))
                .ok_or_else(|| format!("--only: \"{s}\" is not a query number 1..{n}"))
        })
        .collect()
}

/// COPY of one table's generated rows (`suite`'s generator; TPC-H's `|`-separated).
async fn load_table(client: &Client, suite: Suite, table: &str, sf: f64) -> Result<u64, String> {
    let (tx, mut rx) = tokio::sync::mpsc::channel::<Vec<u8>>(8);
    let name = table.to_string();
    let producer = std::thread::spawn(move || {
        let mut send = |b| {
            tx.blocking_send(b)
                .map_err(|_| "COPY ended early".to_string())
        };
        match suite {
            Suite::Tpch => tpch::rows(&name, sf, 1 << 20, &mut send),
            Suite::Accounts => crate::accounts::rows(sf, 1 << 20, &mut send),
        }
    });
    let options = match suite {
        Suite::Tpch => " WITH (DELIMITER '|')",
        Suite::Accounts => "",
    };
    let sink = client
        .copy_in::<_, bytes::Bytes>(&format!("COPY {table} FROM STDIN{options}"))
        .await
        .map_err(seeds::sql_err)?;
    futures::pin_mut!(sink);
    while let Some(chunk) = rx.recv().await {
        sink.send(bytes::Bytes::from(chunk))
            .await
            .map_err(seeds::sql_err)?;
    }
    let n = sink.finish().await.map_err(seeds::sql_err)?;
    let made = producer
        .join()
        .map_err(|_| "the row generator panicked".to_string())??;
    if n != made {
        return Err(format!("COPY {table}: {n} rows stored, {made} sent"));
    }
    Ok(n)
}

/// Schema, rows, indexes, ANALYZE: seconds.
async fn load(client: &Client, suite: Suite, sf: f64) -> Result<f64, String> {
    let t0 = Instant::now();
    let (schema, tables, indexes): (&str, &[&str], &[&str]) = match suite {
        Suite::Tpch => (tpch::SCHEMA, &tpch::TABLES, &tpch::INDEXES),
        Suite::Accounts => (
            crate::accounts::SCHEMA,
            &["pgbench_accounts"],
            &[crate::accounts::INDEX],
        ),
    };
    client.batch_execute(schema).await.map_err(seeds::sql_err)?;
    for t in tables {
        let n = load_table(client, suite, t, sf).await?;
        eprintln!("  {t}: {n} rows ({:.1} s)", t0.elapsed().as_secs_f64());
    }
    for i in indexes {
        client.batch_execute(i).await.map_err(seeds::sql_err)?;
    }
    // A failure is reported, not fatal.
    if let Err(e) = client.batch_execute("ANALYZE").await {
        eprintln!("  ANALYZE: {}", seeds::sql_err(e));
    }
    let seconds = t0.elapsed().as_secs_f64();
    // The load's pages are written before any query is timed: a checkpoint that
    // the load's WAL set off would otherwise run beside the first queries.
    if let Err(e) = client.batch_execute("CHECKPOINT").await {
        eprintln!("  CHECKPOINT: {}", seeds::sql_err(e));
    }
    Ok(seconds)
}

/// Sends `text` (one or more statements); its rows and the client's seconds.
async fn timed(client: &Client, text: &str) -> Result<(f64, Rows), String> {
    let t0 = Instant::now();
    let msgs = client.simple_query(text).await.map_err(seeds::sql_err)?;
    let seconds = t0.elapsed().as_secs_f64();
    let rows = msgs
        .iter()
        .filter_map(|m| match m {
            SimpleQueryMessage::Row(r) => {
                Some((0..r.len()).map(|i| r.get(i).map(str::to_string)).collect())
            }
            _ => None,
        })
        .collect();
    Ok((seconds, rows))
}

/// EXPLAIN (COSTS OFF) of the query's SELECT (Q15's between its CREATE and DROP
/// VIEW), as text or the error.
async fn explain(client: &Client, text: &str) -> String {
    let mut out = String::new();
    for stmt in text.split(';').map(str::trim).filter(|s| !s.is_empty()) {
        let result = if stmt.to_lowercase().starts_with("select") {
            timed(client, &format!("EXPLAIN (COSTS OFF) {stmt}"))
                .await
                .map(|(_, rows)| {
                    for r in rows {
                        out.push_str(r[0].as_deref().unwrap_or(""));
                        out.push('\n');
                    }
                })
        } else {
            client.batch_execute(stmt).await.map_err(seeds::sql_err)
        };
        if let Err(e) = result {
            out.push_str(&format!("ERROR: {e}\n"));
        }
    }
    out
}

/// A query shorter than this is run for [`SHORT_BUDGET`] more.
const SHORT: f64 = 0.010;

/// The time more runs of a short query are given.
const SHORT_BUDGET: f64 = 1.0;

/// The most runs of a short query.
const SHORT_RUNS: u32 = 2000;

/// One query: the explain, then `runs` timed runs (one if the first took over a
/// minute; more for a short one).
async fn one_query(client: &Client, args: &Args, q: u32, raw: Option<(&PathBuf, Kind)>) -> Answer {
    let text = match args.suite.query(q) {
        Ok(t) => t,
        Err(e) => {
            return Answer {
                seconds: Err(e),
                rows: Vec::new(),
            }
        }
    };
    let plan = explain(client, &text).await;
    let mut least = f64::INFINITY;
    let mut rows = Vec::new();
    let started = Instant::now();
    let mut budget = None;
    for run in 0..SHORT_RUNS {
        let runs = args.runs.max(1);
        if run >= runs {
            // A short query runs on for SHORT_BUDGET (noise only adds).
            let since = *budget.get_or_insert_with(|| started.elapsed().as_secs_f64());
            if least >= SHORT || started.elapsed().as_secs_f64() - since >= SHORT_BUDGET {
                break;
            }
        }
        match timed(client, &text).await {
            Ok((s, r)) => {
                least = least.min(s);
                if run == 0 {
                    rows = r;
                }
                if s > 60.0 {
                    break;
                }
            }
            Err(e) => {
                // A failed Q15 may leave its view behind.
                let _ = client.batch_execute("DROP VIEW IF EXISTS revenue0").await;
                least = f64::NAN;
                rows = vec![vec![Some(e)]];
                break;
            }
        }
    }
    if let Some((dir, kind)) = raw {
        let shown: Vec<String> = rows.iter().map(|r| show_row(r)).collect();
        let body = format!("{text}\n\n{plan}\n{}\n", shown.join("\n"));
        let _ = std::fs::write(dir.join(format!("q{q:02}.{}.txt", kind.name())), body);
    }
    if least.is_nan() {
        let e = rows.pop().and_then(|r| r.into_iter().next().flatten());
        return Answer {
            seconds: Err(e.unwrap_or_default()),
            rows: Vec::new(),
        };
    }
    Answer {
        seconds: Ok(least),
        rows,
    }
}

fn show_row(r: &[Option<String>]) -> String {
    r.iter()
        .map(|v| v.as_deref().unwrap_or("NULL"))
        .collect::<Vec<_>>()
        .join("|")
}

/// The backend's or server's peak RSS.
async fn peak_rss(c: &Cluster, client: &Client) -> Option<u64> {
    let pid = match c.kind {
        Kind::Strata => c.child.as_ref()?.id(),
        Kind::Postgres => {
            let row = client
                .query_one("SELECT pg_backend_pid()", &[])
                .await
                .ok()?;
            row.get::<_, i32>(0) as u32
        }
    };
    super::measure::rss(super::measure::Process::Pid(pid)).map(|r| r.peak_bytes)
}

async fn engine_run(c: &Cluster, args: &Args, queries: &[u32]) -> Result<EngineRun, String> {
    let client = c.client("postgres").await?;
    eprintln!(
        "{}: loading {}",
        c.kind.name(),
        args.suite.label(args.scale)
    );
    let load_seconds = load(&client, args.suite, args.scale).await?;
    client
        .batch_execute(&format!(
            "SET work_mem = '{}'; SET statement_timeout = '{}s'",
            args.work_mem, args.timeout
        ))
        .await
        .map_err(seeds::sql_err)?;
    let raw = args.raw.as_ref().map(|d| (d, c.kind));
    let mut answers = Vec::new();
    for &q in queries {
        let a = one_query(&client, args, q, raw).await;
        let shown = match &a.seconds {
            Ok(s) => format!("{} ({} rows)", format_seconds(*s), a.rows.len()),
            Err(e) => format!("failed: {}", e.lines().next().unwrap_or("")),
        };
        eprintln!("  {} Q{q}: {shown}", c.kind.name());
        answers.push((q, a));
    }
    Ok(EngineRun {
        kind: c.kind,
        load_seconds,
        peak_rss: peak_rss(c, &client).await,
        answers,
    })
}

/// Whether two answers hold the same rows: exactly, as numbers, or not (why).
fn compare(a: &Rows, b: &Rows) -> Result<bool, String> {
    if a.len() != b.len() {
        return Err(format!("{} rows against {}", a.len(), b.len()));
    }
    let mut exact = true;
    for (i, (ra, rb)) in a.iter().zip(b).enumerate() {
        if ra == rb {
            continue;
        }
        exact = false;
        let same = ra.len() == rb.len()
            && ra.iter().zip(rb).all(|(x, y)| match (x, y) {
                (Some(x), Some(y)) => x == y || same_number(x, y),
                (x, y) => x == y,
            });
        if !same {
            return Err(format!(
                "row {}: {} against {}",
                i + 1,
                show_row(ra),
                show_row(rb)
            ));
        }
    }
    Ok(exact)
}

fn same_number(x: &str, y: &str) -> bool {
    match (x.trim().parse::<f64>(), y.trim().parse::<f64>()) {
        (Ok(a), Ok(b)) => (a - b).abs() <= 1e-9 * a.abs().max(b.abs()).max(1.0),
        _ => false,
    }
}

/// Runs the comparison; prints the per-query table, the checks and the geometric mean.
pub fn run(args: &Args) -> Result<Vec<Record>, String> {
    let seeds_args = seeds::Args::for_clusters(&args.engines, &args.shared_buffers, &args.pg_bin);
    if !(args.scale > 0.0 && args.scale <= 100.0) {
        return Err(format!("--scale {} is not in (0, 100]", args.scale));
    }
    let kinds = seeds::engines(&seeds_args)?;
    let (sb, sb_bytes) = seeds::sizes(&seeds_args)?
        .into_iter()
        .next()
        .ok_or("no shared_buffers size")?;
    let queries = chosen(args)?;
    if let Some(d) = &args.raw {
        std::fs::create_dir_all(d).map_err(|e| format!("{}: {e}", d.display()))?;
    }
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| e.to_string())?;
    let mut runs = Vec::new();
    for &k in &kinds {
        let root = tempfile::Builder::new()
            .prefix(&format!("strata-queries-{}-", k.name()))
            .tempdir()
            .map_err(|e| e.to_string())?;
        let dir = match &args.keep {
            Some(d) => {
                let d = d.join(k.name());
                std::fs::create_dir_all(&d).map_err(|e| format!("{}: {e}", d.display()))?;
                d
            }
            None => root.path().to_path_buf(),
        };
        let mut c = Cluster::create(k, &dir, &sb, &seeds_args)?;
        c.start()?;
        let r = rt.block_on(engine_run(&c, args, &queries));
        c.stop()?;
        runs.push(r?);
    }
    let records = report(args, &runs, sb_bytes);
    Ok(records)
}

fn report(args: &Args, runs: &[EngineRun], sb_bytes: u64) -> Vec<Record> {
    let mut records = Vec::new();
    let label = args.suite.label(args.scale);
    let case = |what: String| format!("{label} {what}");
    for r in runs {
        println!(
            "{}: load {}, peak RSS {}",
            r.kind.name(),
            format_seconds(r.load_seconds),
            r.peak_rss.map_or("?".into(), |b| format_bytes(b as f64))
        );
        records.push(Record {
            bench: "queries",
            case: case("load".into()),
            implementation: r.kind.name(),
            shared_buffers: sb_bytes,
            metric: "seconds",
            value: r.load_seconds,
        });
        if let Some(b) = r.peak_rss {
            records.push(Record {
                bench: "queries",
                case: case("peak rss".into()),
                implementation: r.kind.name(),
                shared_buffers: sb_bytes,
                metric: "bytes",
                value: b as f64,
            });
        }
        for (q, a) in &r.answers {
            if let Ok(s) = a.seconds {
                records.push(Record {
                    bench: "queries",
                    case: case(format!("Q{q}")),
                    implementation: r.kind.name(),
                    shared_buffers: sb_bytes,
                    metric: "seconds",
                    value: s,
                });
            }
        }
    }
    let strata = runs.iter().find(|r| r.kind == Kind::Strata);
    let pg = runs.iter().find(|r| r.kind == Kind::Postgres);
    if let (Some(s), Some(p)) = (strata, pg) {
        side_by_side(s, p);
    }
    records
}

/// The table of both engines' times, the row checks and the geometric mean.
fn side_by_side(s: &EngineRun, p: &EngineRun) {
    println!(
        "{:>4} {:>11} {:>11} {:>8}  rows",
        "query", "strata", "postgres", "ratio"
    );
    let (mut log_sum, mut n, mut worst) = (0.0f64, 0u32, (0.0f64, 0u32));
    let mut same = [0u32; 3];
    for ((q, sa), (_, pa)) in s.answers.iter().zip(&p.answers) {
        let show = |a: &Answer| match &a.seconds {
            Ok(x) => format_seconds(*x),
            Err(_) => "failed".into(),
        };
        let (ratio, check) = match (&sa.seconds, &pa.seconds) {
            (Ok(x), Ok(y)) => {
                let check = match compare(&sa.rows, &pa.rows) {
                    Ok(true) => {
                        same[0] += 1;
                        "same".to_string()
                    }
                    Ok(false) => {
                        same[1] += 1;
                        "same as numbers".to_string()
                    }
                    Err(e) => {
                        same[2] += 1;
                        format!("DIFFERENT: {e}")
                    }
                };
                let r = x / y;
                log_sum += r.ln();
                n += 1;
                if r > worst.0 {
                    worst = (r, *q);
                }
                (format!("{r:.2}x"), check)
            }
            (Err(e), _) => (
                "-".into(),
                format!("strata: {}", e.lines().next().unwrap_or("")),
            ),
            (_, Err(e)) => (
                "-".into(),
                format!("postgres: {}", e.lines().next().unwrap_or("")),
            ),
        };
        println!(
            "{:>4} {:>11} {:>11} {ratio:>8}  {check}",
            format!("Q{q}"),
            show(sa),
            show(pa)
        );
    }
    println!(
        "answered by both: {n} of {}; same rows {}, same as numbers {}, different {}",
        s.answers.len(),
        same[0],
        same[1],
        same[2]
    );
    if n > 0 {
        println!(
            "geometric mean strata / postgres over those {n}: {:.2}x; slowest Q{} at {:.2}x",
            (log_sum / n as f64).exp(),
            worst.1,
            worst.0
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rows(v: &[&[&str]]) -> Rows {
        v.iter()
            .map(|r| r.iter().map(|x| Some(x.to_string())).collect())
            .collect()
    }

    #[test]
    fn answers_compare_exactly_then_as_numbers() {
        let a = rows(&[&["A", "25.5"], &["B", "1"]]);
        assert_eq!(compare(&a, &a), Ok(true));
        let b = rows(&[&["A", "25.50000000000000000000"], &["B", "1"]]);
        assert_eq!(compare(&a, &b), Ok(false));
        let c = rows(&[&["A", "25.6"], &["B", "1"]]);
        assert!(compare(&a, &c).is_err());
        assert!(compare(&a, &rows(&[&["A", "25.5"]])).is_err());
        assert!(compare(&rows(&[&["x"]]), &rows(&[&["y"]])).is_err());
    }

    #[test]
    fn only_takes_query_numbers() {
        let mut args = Args {
            suite: Suite::Tpch,
            engines: "strata".into(),
            scale: 1.0,
            shared_buffers: "1GB".into(),
            work_mem: "64MB".into(),
            runs: 3,
            timeout: 600,
            only: None,
            raw: None,
            json: None,
            keep: None,
            pg_bin: PathBuf::from("/nonexistent"),
        };
        assert_eq!(chosen(&args).unwrap().len(), 22);
        args.only = Some("1, 15,22".into());
        assert_eq!(chosen(&args).unwrap(), vec![1, 15, 22]);
        args.only = Some("23".into());
        assert!(chosen(&args).is_err());
    }
}
