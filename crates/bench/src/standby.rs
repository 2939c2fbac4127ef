//! `strata bench standby`: how far a streaming hot standby falls behind its primary,
//! Strata against PostgreSQL 15, with the same SQL through the same client
//! (tokio-postgres), the same shared_buffers on primary and standby, in one run.
//!
//! Owns: the pairs' lives (a fresh primary, a standby made from it by PostgreSQL 15's
//! `pg_basebackup -X stream -c fast -R`, started and waited for until it answers and
//! `pg_is_in_recovery()` is true), the scenarios, the lag sampler, the records, the
//! table and the lag charts. The clusters themselves are [`crate::seeds`]'s.
//!
//! Scenarios (counts from [`crate::workloads`] at `--scale`):
//! - **B**: workload B's tables, catch-up, then its one-per-transaction DROP TABLEs on
//!   the primary. `lag_seconds`: from the last commit returning until the standby's
//!   replay position reaches the primary's position at that moment;
//!   `generation_bytes_per_second` = WAL bytes / primary seconds,
//!   `replay_bytes_per_second` = WAL bytes / (primary seconds + lag).
//! - **G**: on B's pair after it, one-row inserts into one table, one per transaction,
//!   until the WAL written reaches B's; measured the same way (not workload G of
//!   `seeds`, whose transactions insert 1,000 rows).
//! - **C**: its own pair, the primary started with `synchronous_standby_names = '*'`;
//!   workload C's tables, catch-up, `SET synchronous_commit = remote_apply`, then the
//!   transaction dropping 50 tables, timed, and four more like it on the next 50
//!   tables each (fewer when the scale leaves fewer tables); the median of the
//!   rounds is reported ([`c_rounds`]). Skipped (with the server's message)
//!   when the engine does not know either parameter or the commit never returns.
//! - **A**: its own pair, the backup made after workload A's set-up (each tablespace
//!   mapped to the standby's own directory with `-T`), catch-up, then DROP DATABASE;
//!   `replay_seconds` is the time from it returning until the standby has replayed it.
//!
//! While a timed part runs, a sampler polls both positions every 50 ms on its own two
//! connections; `--plot` draws the bytes behind over time. Rules: every cluster is
//! stopped at the end of its scenario, the standby first; errors other than the
//! skips above end the run.

use super::seeds::{self, engines, free_port, parse_scale, run_ok, sizes, sql_err, tail};
use super::seeds::{send_setup, Cluster, Kind};
use super::workloads::Workload;
use super::{format_bytes, format_seconds, Record};
use indicatif::{ProgressBar, ProgressStyle};
use plotters::prelude::*;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio_postgres::{Client, SimpleQueryMessage};

#[derive(clap::Args, Clone)]
pub struct Args {
    /// Engines to run, comma-separated: strata, postgres.
    #[arg(long, default_value = "strata,postgres")]
    pub engines: String,
    /// shared_buffers sizes (primary and standby alike), PostgreSQL units, comma-separated.
    #[arg(long, default_value = "128MB,8GB")]
    pub shared_buffers: String,
    /// `full` (the reports' sizes), `small` (1/100, for tests) or a factor.
    #[arg(long, default_value = "full")]
    pub scale: String,
    /// Run only these scenarios (comma-separated: B, G, C, A); all by default. G runs
    /// on B's pair after B's drops, which also run (unreported) when only G is asked for.
    #[arg(long)]
    pub only: Option<String>,
    /// Write the records (brief §6) to this file.
    #[arg(long)]
    pub json: Option<PathBuf>,
    /// Write PNG charts of the standby's lag over time to this directory.
    #[arg(long)]
    pub plot: Option<PathBuf>,
    /// PostgreSQL's bin directory (initdb, postgres, pg_basebackup).
    #[arg(long, default_value = "/usr/lib/postgresql/15/bin")]
    pub pg_bin: PathBuf,
}

/// C's rounds (transactions of 50 drops); the median is reported.
const C_ROUNDS: usize = 5;

/// The scenarios, in the order they run.
const SCENARIOS: [&str; 4] = ["B", "G", "C", "A"];

const CURRENT: &str = "pg_current_wal_lsn";
const REPLAY: &str = "pg_last_wal_replay_lsn";

/// The table of scenario G.
const G_TABLE: &str = "g_stream";

/// (seconds since the timed part began, primary's position, standby's replay position).
type Sample = (f64, u64, u64);

/// What one timed part measured.
struct Measured {
    primary: f64,
    wal_bytes: f64,
    lag: f64,
    samples: Vec<Sample>,
}

/// One scenario on one engine and size; `Err` is a skip and its reason.
struct Outcome {
    id: &'static str,
    kind: Kind,
    sb: String,
    sb_bytes: u64,
    result: Result<Measured, String>,
}

/// A primary and its standby. Fields drop in order: the standby goes first.
struct Pair {
    standby: Cluster,
    primary: Cluster,
}

impl Pair {
    fn stop(mut self) -> Result<(), String> {
        self.standby.stop()?;
        self.primary.stop()
    }
}

/// `seeds`' arguments carrying ours (its clusters read `pg_bin` from them).
fn seeds_args(args: &Args) -> seeds::Args {
    seeds::Args {
        engines: args.engines.clone(),
        shared_buffers: args.shared_buffers.clone(),
        scale: args.scale.clone(),
        only: None,
        json: None,
        plot: None,
        pg_bin: args.pg_bin.clone(),
        indexes: false,
    }
}

fn chosen(args: &Args) -> Result<Vec<&'static str>, String> {
    let Some(only) = &args.only else {
        return Ok(SCENARIOS.to_vec());
    };
    let wanted: Vec<String> = only
        .split(',')
        .map(|s| s.trim().to_ascii_uppercase())
        .filter(|s| !s.is_empty())
        .collect();
    for w in &wanted {
        if !SCENARIOS.contains(&w.as_str()) {
            return Err(format!("unknown scenario \"{w}\" (B, G, C, A)"));
        }
    }
    Ok(SCENARIOS
        .into_iter()
        .filter(|s| wanted.iter().any(|w| w == s))
        .collect())
}

pub fn parse_lsn(s: &str) -> Result<u64, String> {
    let bad = || format!("not an LSN: \"{s}\"");
    let (hi, lo) = s.trim().split_once('/').ok_or_else(bad)?;
    let hi = u64::from_str_radix(hi, 16).map_err(|_| bad())?;
    let lo = u64::from_str_radix(lo, 16).map_err(|_| bad())?;
    Ok((hi << 32) | lo)
}

fn fmt_lsn(l: u64) -> String {
    format!("{:X}/{:X}", l >> 32, l & 0xffff_ffff)
}

/// `SELECT func()` as a position (a NULL replay position is 0).
async fn lsn_of(c: &Client, func: &str) -> Result<u64, String> {
    let msgs = c
        .simple_query(&format!("SELECT {func}()"))
        .await
        .map_err(|e| format!("{func}(): {}", sql_err(e)))?;
    for m in msgs {
        if let SimpleQueryMessage::Row(r) = m {
            return match r.get(0) {
                Some(v) => parse_lsn(v),
                None => Ok(0),
            };
        }
    }
    Err(format!("{func}() returned no row"))
}

/// Waits until the standby's replay position reaches `target`; the moment it did.
async fn wait_replayed(s: &Client, target: u64, limit: Duration) -> Result<Instant, String> {
    let t0 = Instant::now();
    loop {
        let at = lsn_of(s, REPLAY).await?;
        if at >= target {
            return Ok(Instant::now());
        }
        if t0.elapsed() > limit {
            return Err(format!(
                "the standby did not replay up to {} within {} s (it is at {})",
                fmt_lsn(target),
                limit.as_secs(),
                fmt_lsn(at)
            ));
        }
        tokio::time::sleep(Duration::from_millis(1)).await;
    }
}

/// Waits until the standby has replayed everything the primary has written so far.
async fn catch_up(p: &Client, s: &Client, limit: Duration) -> Result<(), String> {
    let target = lsn_of(p, CURRENT).await?;
    wait_replayed(s, target, limit).await.map(|_| ())
}

/// Polls both positions every 50 ms on its own connections.
struct Sampler {
    t0: Instant,
    stop: Arc<AtomicBool>,
    task: tokio::task::JoinHandle<Result<Vec<Sample>, String>>,
}

impl Sampler {
    async fn start(pair: &Pair) -> Result<Sampler, String> {
        let p = pair.primary.client("postgres").await?;
        let s = pair.standby.client("postgres").await?;
        let stop = Arc::new(AtomicBool::new(false));
        let flag = stop.clone();
        let t0 = Instant::now();
        let task = tokio::spawn(async move {
            let mut out = Vec::new();
            let mut tick = tokio::time::interval(Duration::from_millis(50));
            tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
            loop {
                tick.tick().await;
                let last = flag.load(Ordering::Relaxed);
                let t = t0.elapsed().as_secs_f64();
                let pl = lsn_of(&p, CURRENT).await?;
                let sl = lsn_of(&s, REPLAY).await?;
                out.push((t, pl, sl));
                if last {
                    return Ok(out);
                }
            }
        });
        Ok(Sampler { t0, stop, task })
    }

    async fn finish(self) -> Result<Vec<Sample>, String> {
        self.stop.store(true, Ordering::Relaxed);
        self.task
            .await
            .map_err(|e| format!("the lag sampler failed: {e}"))?
    }
}

/// A timed part.
enum Timed<'a> {
    /// Each one message to the primary's `postgres` database.
    Statements(&'a [String]),
    /// One-row inserts, one per transaction, until this many WAL bytes are written.
    InsertsUntil(u64),
}

/// Runs `work` on the primary (through `p`) with the sampler on, then waits for the
/// standby (through `s`) to replay up to where the primary was when it ended.
async fn measure(
    pair: &Pair,
    p: &Client,
    s: &Client,
    work: Timed<'_>,
    bar: &ProgressBar,
    limit: Duration,
) -> Result<Measured, String> {
    let lsn0 = lsn_of(p, CURRENT).await?;
    let sampler = Sampler::start(pair).await?;
    let t0 = sampler.t0;
    match work {
        Timed::Statements(stmts) => {
            bar.set_length(stmts.len() as u64);
            bar.set_position(0);
            for (k, q) in stmts.iter().enumerate() {
                p.batch_execute(q)
                    .await
                    .map_err(|e| format!("on the primary: {q}: {}", sql_err(e)))?;
                if k % 64 == 0 {
                    bar.set_position(k as u64);
                }
            }
        }
        Timed::InsertsUntil(bytes) => {
            bar.set_length(bytes);
            bar.set_position(0);
            for k in 0u64.. {
                let q = format!("INSERT INTO {G_TABLE} VALUES ({k}, 'row {k}')");
                p.batch_execute(&q)
                    .await
                    .map_err(|e| format!("on the primary: {q}: {}", sql_err(e)))?;
                if k % 16 == 15 {
                    let written = lsn_of(p, CURRENT).await?.saturating_sub(lsn0);
                    bar.set_position(written.min(bytes));
                    if written >= bytes {
                        break;
                    }
                }
            }
        }
    }
    let primary = t0.elapsed().as_secs_f64();
    let t_end = Instant::now();
    let end = lsn_of(p, CURRENT).await?;
    let reached = wait_replayed(s, end, limit).await?;
    let samples = sampler.finish().await?;
    Ok(Measured {
        primary,
        wal_bytes: end.saturating_sub(lsn0) as f64,
        lag: reached.duration_since(t_end).as_secs_f64(),
        samples,
    })
}

/// Settings of every PostgreSQL primary beyond `seeds`' (written to its
/// postgresql.auto.conf, which the standby's copy inherits).
const PG_PRIMARY: [&str; 3] = [
    "wal_level = replica",
    "max_wal_senders = 10",
    "hot_standby = on",
];

/// A fresh primary in `root` (every directory it must own already there), `extra`
/// settings in its postgresql.auto.conf, started.
fn start_primary(
    kind: Kind,
    sb: &str,
    sargs: &seeds::Args,
    root: &Path,
    extra: &[&str],
) -> Result<Cluster, String> {
    let mut c = Cluster::create(kind, root, sb, sargs)?;
    let mut lines = String::from("\n");
    if kind == Kind::Postgres {
        for s in PG_PRIMARY {
            lines += &format!("{s}\n");
        }
    }
    for s in extra {
        lines += &format!("{s}\n");
    }
    let auto = c.data.join("postgresql.auto.conf");
    let mut f = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(&auto)
        .map_err(|e| format!("could not open \"{}\": {e}", auto.display()))?;
    std::io::Write::write_all(&mut f, lines.as_bytes())
        .map_err(|e| format!("could not write \"{}\": {e}", auto.display()))?;
    drop(f);
    c.chown(&auto)?;
    c.start()?;
    Ok(c)
}

/// A standby of `primary` in `root/standby` (which exists, owned by the server's
/// user): `pg_basebackup -X stream -c fast -R` with `-T old=new` per tablespace,
/// `synchronous_standby_names` dropped from its copy of the settings, started and
/// waited for.
async fn make_standby(
    primary: &Cluster,
    root: &Path,
    spc: &[(PathBuf, PathBuf)],
    limit: Duration,
) -> Result<Cluster, String> {
    let dir = root.join("standby");
    let mut s = Cluster {
        kind: primary.kind,
        data: dir.join("data"),
        log: dir.join("server.log"),
        port: free_port()?,
        sb: primary.sb.clone(),
        pg_bin: primary.pg_bin.clone(),
        as_postgres: primary.as_postgres,
        child: None,
        strata_bin: primary.strata_bin.clone(),
    };
    let bin = primary.pg_bin.join("pg_basebackup");
    if !bin.exists() {
        return Err(format!(
            "{} is not installed (apt-get install -y postgresql-15, or --pg-bin)",
            bin.display()
        ));
    }
    let mut cmd = primary.command(&bin);
    let port = primary.port.to_string();
    cmd.args(["-h", "127.0.0.1", "-p", &port, "-U", primary.kind.user()])
        .args(["-X", "stream", "-c", "fast", "-R", "--no-manifest", "-D"])
        .arg(&s.data);
    for (old, new) in spc {
        cmd.arg("-T")
            .arg(format!("{}={}", old.display(), new.display()));
    }
    run_ok(cmd, &format!("pg_basebackup of {}", primary.kind.name()))?;
    let auto = s.data.join("postgresql.auto.conf");
    let text = std::fs::read_to_string(&auto)
        .map_err(|e| format!("could not read \"{}\": {e}", auto.display()))?;
    let kept: Vec<&str> = text
        .lines()
        .filter(|l| !l.trim_start().starts_with("synchronous_standby_names"))
        .collect();
    std::fs::write(&auto, kept.join("\n") + "\n")
        .map_err(|e| format!("could not write \"{}\": {e}", auto.display()))?;
    spawn_standby(&mut s)?;
    wait_recovering(&mut s, limit).await?;
    Ok(s)
}

/// Starts the standby's server with `seeds`' settings for its engine.
fn spawn_standby(s: &mut Cluster) -> Result<(), String> {
    let logf = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(&s.log)
        .map_err(|e| format!("could not open \"{}\": {e}", s.log.display()))?;
    s.chown(&s.log)?;
    let mut settings = vec![
        format!("port={}", s.port),
        "listen_addresses=127.0.0.1".into(),
        format!("shared_buffers={}", s.sb),
        "checkpoint_timeout=1h".into(),
        "max_wal_size=100GB".into(),
    ];
    let mut cmd = match s.kind {
        Kind::Strata => {
            let mut c = Command::new(&s.strata_bin);
            c.arg("start").arg("-D").arg(&s.data);
            c
        }
        Kind::Postgres => {
            settings.extend([
                format!("unix_socket_directories={}", s.data.display()),
                "fsync=on".into(),
                "autovacuum=off".into(),
                "max_locks_per_transaction=1024".into(),
                "logging_collector=off".into(),
            ]);
            let mut c = s.command(&s.pg_bin.join("postgres"));
            c.arg("-D").arg(&s.data);
            c
        }
    };
    for x in settings {
        cmd.arg("-c").arg(x);
    }
    let child = cmd
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(logf)
        .spawn()
        .map_err(|e| format!("could not start the {} standby: {e}", s.kind.name()))?;
    s.child = Some(child);
    Ok(())
}

/// Waits until the standby answers and `pg_is_in_recovery()` is true.
async fn wait_recovering(s: &mut Cluster, limit: Duration) -> Result<(), String> {
    let t0 = Instant::now();
    loop {
        if let Some(c) = s.child.as_mut() {
            if let Ok(Some(st)) = c.try_wait() {
                return Err(format!(
                    "the {} standby exited during start ({st}); log:\n{}",
                    s.kind.name(),
                    tail(&s.log)
                ));
            }
        }
        let last = match s.client("postgres").await {
            Ok(c) => match c.simple_query("SELECT pg_is_in_recovery()").await {
                Ok(msgs) => {
                    let yes = msgs
                        .iter()
                        .any(|m| matches!(m, SimpleQueryMessage::Row(r) if r.get(0) == Some("t")));
                    if yes {
                        return Ok(());
                    }
                    "pg_is_in_recovery() is false".to_string()
                }
                Err(e) => sql_err(e),
            },
            Err(e) => e,
        };
        if t0.elapsed() > limit {
            return Err(format!(
                "the {} standby was not up in recovery within {} s ({last}); log:\n{}",
                s.kind.name(),
                limit.as_secs(),
                tail(&s.log)
            ));
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// What a run shares across its scenarios.
struct Ctx<'a> {
    sargs: seeds::Args,
    scale: f64,
    limit: Duration,
    rt: tokio::runtime::Runtime,
    bar: ProgressBar,
    /// Every pair's directory stays until the run ends (as in `seeds`).
    kept: Vec<tempfile::TempDir>,
    records: Vec<Record>,
    outcomes: Vec<Outcome>,
    only: Vec<&'a str>,
}

pub fn run(args: &Args) -> Result<Vec<Record>, String> {
    let sargs = seeds_args(args);
    let scale = parse_scale(&args.scale)?;
    let kinds = engines(&sargs)?;
    let sizes = sizes(&sargs)?;
    let only = chosen(args)?;
    let bar = ProgressBar::new(0);
    bar.set_style(
        ProgressStyle::with_template("{msg:40} [{bar:30}] {pos}/{len} {elapsed}")
            .map_err(|e| e.to_string())?
            .progress_chars("=> "),
    );
    let mut ctx = Ctx {
        sargs,
        scale,
        limit: Duration::from_secs_f64((3600.0 * scale).max(120.0)),
        rt: tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .map_err(|e| e.to_string())?,
        bar,
        kept: Vec::new(),
        records: Vec::new(),
        outcomes: Vec::new(),
        only,
    };
    println!(
        "{:<3} {:>6} {:<9} {:>11} {:>10} {:>11} {:>14} {:>14}",
        "id", "size", "engine", "primary", "WAL", "lag/replay", "generated/s", "replayed/s"
    );
    for (sb, sb_bytes) in &sizes {
        for &k in &kinds {
            ctx.run_pairs(k, sb, *sb_bytes)?;
        }
    }
    ctx.bar.finish_and_clear();
    drop(std::mem::take(&mut ctx.kept));
    if let Some(dir) = &args.plot {
        lag_charts(dir, &ctx.outcomes)?;
        println!("charts written to {}", dir.display());
    }
    Ok(ctx.records)
}

impl Ctx<'_> {
    fn wants(&self, id: &str) -> bool {
        self.only.contains(&id)
    }

    /// Every chosen scenario on engine `k` at one size.
    fn run_pairs(&mut self, k: Kind, sb: &str, sb_bytes: u64) -> Result<(), String> {
        let mut results: Vec<(&'static str, Result<Measured, String>)> = Vec::new();
        if self.wants("B") || self.wants("G") {
            let (b, g) = self.scenario_bg(k, sb)?;
            if self.wants("B") {
                results.push(("B", Ok(b)));
            }
            if let Some(g) = g {
                results.push(("G", Ok(g)));
            }
        }
        if self.wants("C") {
            results.push(("C", self.scenario_c(k, sb)?));
        }
        if self.wants("A") {
            results.push(("A", Ok(self.scenario_a(k, sb)?)));
        }
        for (id, result) in results {
            self.report(Outcome {
                id,
                kind: k,
                sb: sb.to_string(),
                sb_bytes,
                result,
            });
        }
        Ok(())
    }

    /// A fresh directory for one pair, with `standby/` (and `dirs`) in it.
    fn pair_dir(&mut self, k: Kind, id: &str) -> Result<PathBuf, String> {
        let root = tempfile::Builder::new()
            .prefix(&format!("strata-standby-{}-{id}-", k.name()))
            .tempdir()
            .map_err(|e| format!("could not make a temporary directory: {e}"))?;
        let path = root.path().to_path_buf();
        std::fs::create_dir_all(path.join("standby"))
            .map_err(|e| format!("could not create \"{}\": {e}", path.display()))?;
        self.kept.push(root);
        Ok(path)
    }

    fn workload(&self, id: &str) -> Result<Workload, String> {
        Workload::new(id, self.scale).ok_or_else(|| format!("no workload {id}"))
    }

    /// B on a fresh pair, then G on the same pair (when chosen).
    fn scenario_bg(&mut self, k: Kind, sb: &str) -> Result<(Measured, Option<Measured>), String> {
        let root = self.pair_dir(k, "B")?;
        let w = self.workload("B")?;
        let q = seeds::sql(&w, &root.join("spc"));
        let primary = start_primary(k, sb, &self.sargs, &root, &[])?;
        let (bar, limit, want_g) = (&self.bar, self.limit, self.wants("G"));
        let name = k.name();
        self.rt.block_on(async {
            bar.set_message(format!("B {name} {sb}: standby"));
            let standby = make_standby(&primary, &root, &[], limit).await?;
            let pair = Pair { standby, primary };
            bar.set_message(format!("B {name} {sb}: set-up"));
            send_setup(&pair.primary, "B", &q, bar).await?;
            let p = pair.primary.client("postgres").await?;
            let s = pair.standby.client("postgres").await?;
            catch_up(&p, &s, limit).await?;
            bar.set_message(format!("B {name} {sb}: drops"));
            let b = measure(&pair, &p, &s, Timed::Statements(&q.work), bar, limit)
                .await
                .map_err(|e| format!("B on {name}: {e}"))?;
            let mut g = None;
            if want_g {
                p.batch_execute(&format!("CREATE TABLE {G_TABLE} (a int, b text)"))
                    .await
                    .map_err(|e| format!("G set-up on {name}: {}", sql_err(e)))?;
                catch_up(&p, &s, limit).await?;
                bar.set_message(format!("G {name} {sb}: inserts"));
                let bytes = (b.wal_bytes as u64).max(1);
                let m = measure(&pair, &p, &s, Timed::InsertsUntil(bytes), bar, limit)
                    .await
                    .map_err(|e| format!("G on {name}: {e}"))?;
                g = Some(m);
            }
            drop((p, s));
            pair.stop()?;
            Ok((b, g))
        })
    }

    /// C on a fresh pair whose primary waits for its standby; Err inside: skipped.
    fn scenario_c(&mut self, k: Kind, sb: &str) -> Result<Result<Measured, String>, String> {
        let root = self.pair_dir(k, "C")?;
        let w = self.workload("C")?;
        let q = seeds::sql(&w, &root.join("spc"));
        let unknown = |e: &str| e.contains("unrecognized configuration parameter");
        let primary = match start_primary(
            k,
            sb,
            &self.sargs,
            &root,
            &["synchronous_standby_names = '*'"],
        ) {
            Ok(c) => c,
            Err(e) if unknown(&e) => return Ok(Err(first_line_with(&e, "unrecognized"))),
            Err(e) => return Err(e),
        };
        let (bar, limit, name) = (&self.bar, self.limit, k.name());
        self.rt.block_on(async {
            bar.set_message(format!("C {name} {sb}: standby"));
            let standby = make_standby(&primary, &root, &[], limit).await?;
            let pair = Pair { standby, primary };
            bar.set_message(format!("C {name} {sb}: set-up"));
            let setup = send_setup(&pair.primary, "C", &q, bar);
            match tokio::time::timeout(limit, setup).await {
                Ok(r) => r?,
                Err(_) => return Ok(Err(format!(
                    "set-up commits did not return within {} s with synchronous_standby_names = '*'",
                    limit.as_secs()
                ))),
            }
            let p = pair.primary.client("postgres").await?;
            let s = pair.standby.client("postgres").await?;
            catch_up(&p, &s, limit).await?;
            if let Err(e) = p.batch_execute("SET synchronous_commit = remote_apply").await {
                let e = sql_err(e);
                return if unknown(&e) || e.contains("42704") || e.contains("invalid value") {
                    Ok(Err(format!("SET synchronous_commit = remote_apply: {e}")))
                } else {
                    Err(format!("C on {name}: SET synchronous_commit: {e}"))
                };
            }
            let mut runs = Vec::new();
            for (r, work) in c_rounds(&w, &q.work).iter().enumerate() {
                bar.set_message(format!("C {name} {sb}: drops, round {}", r + 1));
                let timed = measure(&pair, &p, &s, Timed::Statements(work), bar, limit);
                match tokio::time::timeout(limit, timed).await {
                    Ok(m) => runs.push(m.map_err(|e| format!("C on {name}: {e}"))?),
                    Err(_) => return Ok(Err(format!(
                        "the remote_apply COMMIT did not return within {} s",
                        limit.as_secs()
                    ))),
                }
            }
            runs.sort_by(|a, b| a.primary.total_cmp(&b.primary));
            let m = runs.swap_remove(runs.len() / 2);
            drop((p, s));
            pair.stop()?;
            Ok(Ok(m))
        })
    }

    /// A: set-up on a fresh primary, then the backup (tablespaces mapped), DROP DATABASE.
    fn scenario_a(&mut self, k: Kind, sb: &str) -> Result<Measured, String> {
        let root = self.pair_dir(k, "A")?;
        let w = self.workload("A")?;
        let q = seeds::sql(&w, &root.join("spc"));
        let mkdir = |d: &Path| {
            std::fs::create_dir_all(d)
                .map_err(|e| format!("could not create \"{}\": {e}", d.display()))
        };
        mkdir(&root.join("spc"))?;
        mkdir(&root.join("standby_spc"))?;
        let mut spc = Vec::new();
        for d in &q.spc_dirs {
            mkdir(d)?;
            let name = d.file_name().unwrap_or_default();
            spc.push((d.clone(), root.join("standby_spc").join(name)));
        }
        let primary = start_primary(k, sb, &self.sargs, &root, &[])?;
        let (bar, limit, name) = (&self.bar, self.limit, k.name());
        self.rt.block_on(async {
            bar.set_message(format!("A {name} {sb}: set-up"));
            send_setup(&primary, "A", &q, bar).await?;
            bar.set_message(format!("A {name} {sb}: standby"));
            let standby = make_standby(&primary, &root, &spc, limit).await?;
            let pair = Pair { standby, primary };
            let p = pair.primary.client("postgres").await?;
            let s = pair.standby.client("postgres").await?;
            catch_up(&p, &s, limit).await?;
            bar.set_message(format!("A {name} {sb}: DROP DATABASE"));
            let m = measure(&pair, &p, &s, Timed::Statements(&q.work), bar, limit)
                .await
                .map_err(|e| format!("A on {name}: {e}"))?;
            drop((p, s));
            pair.stop()?;
            Ok(m)
        })
    }

    /// The table line of one outcome and its records.
    fn report(&mut self, o: Outcome) {
        let head = format!("{:<3} {:>6} {:<9}", o.id, o.sb, o.kind.name());
        let line = match &o.result {
            Err(why) => format!("{head} skipped: {why}"),
            Ok(m) => {
                let rates = rates(m).filter(|_| o.id == "B" || o.id == "G");
                let rate = |r: Option<f64>| {
                    r.map(|r| format!("{}/s", format_bytes(r)))
                        .unwrap_or_else(|| "-".into())
                };
                format!(
                    "{head} {:>11} {:>10} {:>11} {:>14} {:>14}",
                    format_seconds(m.primary),
                    format_bytes(m.wal_bytes),
                    format_seconds(m.lag),
                    rate(rates.map(|r| r.0)),
                    rate(rates.map(|r| r.1)),
                )
            }
        };
        self.bar.suspend(|| println!("{line}"));
        if let Ok(m) = &o.result {
            let mut rec = |metric: &'static str, value: f64| {
                self.records.push(Record {
                    bench: "standby",
                    case: o.id.to_string(),
                    implementation: o.kind.name(),
                    shared_buffers: o.sb_bytes,
                    metric,
                    value,
                })
            };
            rec("primary_seconds", m.primary);
            rec("wal_bytes", m.wal_bytes);
            rec(
                if o.id == "A" {
                    "replay_seconds"
                } else {
                    "lag_seconds"
                },
                m.lag,
            );
            if o.id == "B" || o.id == "G" {
                if let Some((generated, replayed)) = rates(m) {
                    rec("generation_bytes_per_second", generated);
                    rec("replay_bytes_per_second", replayed);
                }
            }
        }
        self.outcomes.push(o);
    }
}

/// (generated, replayed) bytes per second, when the primary took any time.
fn rates(m: &Measured) -> Option<(f64, f64)> {
    (m.primary > 0.0).then(|| (m.wal_bytes / m.primary, m.wal_bytes / (m.primary + m.lag)))
}

/// The line of `e` that holds `what` (the server's message in a start-up log), or `e`.
fn first_line_with(e: &str, what: &str) -> String {
    e.lines()
        .find(|l| l.contains(what))
        .unwrap_or(e)
        .trim()
        .to_string()
}

/// C's timed transactions: the workload's (dropping the first 50 tables), then as
/// many more of the same kind on the next tables, up to [`C_ROUNDS`] in all while
/// the workload has tables to spare: one commit of a few milliseconds is at the
/// mercy of the scheduler, so C reports the median round.
fn c_rounds(w: &Workload, first: &[String]) -> Vec<Vec<String>> {
    let mut rounds = vec![first.to_vec()];
    if let super::workloads::Work::DropTogether { prefix, count } = &w.work {
        let spare = w.table_count().saturating_sub(1) / count.max(&1);
        for r in 1..C_ROUNDS.min(spare) {
            let drops: String = (r * count..(r + 1) * count)
                .map(|i| format!("DROP TABLE {prefix}{i};\n"))
                .collect();
            rounds.push(vec![format!("BEGIN;\n{drops}COMMIT;")]);
        }
    }
    rounds
}

/// One PNG per scenario: the standby's bytes behind over time, a line per engine and
/// size.
fn lag_charts(dir: &Path, outcomes: &[Outcome]) -> Result<(), String> {
    std::fs::create_dir_all(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    let colors = [BLUE, RED, GREEN, MAGENTA, CYAN, BLACK];
    for id in SCENARIOS {
        let series: Vec<(String, Vec<(f64, f64)>)> = outcomes
            .iter()
            .filter(|o| o.id == id)
            .filter_map(|o| {
                let m = o.result.as_ref().ok()?;
                let pts = m
                    .samples
                    .iter()
                    .map(|(t, p, s)| (*t, p.saturating_sub(*s) as f64 / 1024.0))
                    .collect();
                Some((format!("{} {}", o.kind.name(), o.sb), pts))
            })
            .collect();
        if series
            .iter()
            .all(|(_, p): &(String, Vec<(f64, f64)>)| p.is_empty())
        {
            continue;
        }
        let all = || series.iter().flat_map(|(_, p)| p.iter());
        let xmax = all().map(|p| p.0).fold(0.0f64, f64::max).max(1e-3) * 1.05;
        let ymax = all().map(|p| p.1).fold(0.0f64, f64::max).max(1.0) * 1.15;
        let path = dir.join(format!("lag_{id}.png"));
        let e = |x: &dyn std::fmt::Display| format!("{}: {x}", path.display());
        let root = BitMapBackend::new(&path, (800, 500)).into_drawing_area();
        root.fill(&WHITE).map_err(|x| e(&x))?;
        let mut chart = ChartBuilder::on(&root)
            .caption(
                format!("Scenario {id}: standby lag (KiB of WAL behind the primary)"),
                ("sans-serif", 20),
            )
            .margin(15)
            .x_label_area_size(40)
            .y_label_area_size(70)
            .build_cartesian_2d(0.0..xmax, 0.0..ymax)
            .map_err(|x| e(&x))?;
        chart
            .configure_mesh()
            .x_desc("seconds since the timed part began")
            .y_desc("KiB behind")
            .draw()
            .map_err(|x| e(&x))?;
        for (i, (label, pts)) in series.iter().enumerate() {
            let color = colors[i % colors.len()];
            chart
                .draw_series(LineSeries::new(pts.clone(), color.stroke_width(2)))
                .map_err(|x| e(&x))?
                .label(label.clone())
                .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 20, y)], color));
        }
        chart
            .configure_series_labels()
            .background_style(WHITE.mix(0.8))
            .border_style(BLACK)
            .draw()
            .map_err(|x| e(&x))?;
        root.present().map_err(|x| e(&x))?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lsn_text_round_trips() {
        assert_eq!(parse_lsn("0/16B3748"), Ok(0x16B_3748));
        assert_eq!(parse_lsn("1/0"), Ok(1 << 32));
        assert_eq!(fmt_lsn(0x1_0016_B374), "1/16B374");
        assert!(parse_lsn("16B3748").is_err());
        assert!(parse_lsn("x/1").is_err());
    }
}
