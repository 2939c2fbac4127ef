//! SIGKILL crash testing: a worker process runs random transactions and reports each
//! commit after it returns; the parent kills it at a random moment, recovers the
//! cluster itself, and checks it against a model of what was committed.
//!
//! Entry points: [`worker`] (`strata debug crash-worker`, hidden) and [`run`]
//! (`strata bench crash`, and the crash test in `tests/crash.rs`).
//!
//! Worker protocol, one line per event on stdout, flushed at once:
//!
//! | line | meaning |
//! |------|---------|
//! | `READY` | recovery finished, work starts |
//! | `B <seq> <op>;<op>;…` | transaction `seq` is about to run these operations |
//! | `C <seq>` | its commit returned: it must survive any crash from now on |
//! | `A <seq>` | it was aborted: it must never be seen |
//!
//! Operations: `create <t>`, `ins <t> <first id> <count>`, `del <t> <m> <r>` (rows whose
//! id mod m = r), `drop <t>`, `trunc <t>`, `createdb <d> <wal_log|file_copy>`,
//! `dropdb <d>`. A `B` without `C` or `A` when the worker dies is *in doubt*: the
//! cluster may show it committed or not, but all of it or none of it.
//!
//! After each crash the parent checks: every table and row of the model (with or
//! without the in-doubt transaction) and nothing else; the databases; that every
//! relation file of each database belongs to a committed table (no file of a dropped
//! or aborted relation); and, after a clean shutdown, every page's checksum.
//! A committed transaction whose effect is missing counts as lost.

use crate::Record;
use rand::RngExt;
use rand::SeedableRng;
use rand_xorshift::XorShiftRng;
use std::collections::{BTreeMap, BTreeSet};
use std::io::{BufRead, BufReader, Write};
use std::path::Path;
use std::process::{Command, Stdio};
use std::sync::mpsc;
use std::sync::Arc;
use std::time::{Duration, Instant};
use strata_engine::{ColType, Column, CreateDbStrategy, Datum, Engine, Settings};
use strata_vfs::sim::SimVfs;

const DB: &str = "postgres";

fn columns() -> Vec<Column> {
    vec![
        Column::new("id", ColType::Int4),
        Column::new("v", ColType::Text),
    ]
}

fn text_of(id: i32) -> String {
    format!("v{id}")
}

#[derive(Clone, Debug, PartialEq, Eq)]
enum Op {
    Create(String),
    Ins(String, i32, i32),
    Del(String, i32, i32),
    Drop(String),
    Trunc(String),
    CreateDb(String, bool),
    DropDb(String),
}

impl Op {
    fn render(&self) -> String {
        match self {
            Op::Create(t) => format!("create {t}"),
            Op::Ins(t, a, n) => format!("ins {t} {a} {n}"),
            Op::Del(t, m, r) => format!("del {t} {m} {r}"),
            Op::Drop(t) => format!("drop {t}"),
            Op::Trunc(t) => format!("trunc {t}"),
            Op::CreateDb(d, wal_log) => {
                format!(
                    "createdb {d} {}",
                    if *wal_log { "wal_log" } else { "file_copy" }
                )
            }
            Op::DropDb(d) => format!("dropdb {d}"),
        }
    }

    fn parse(s: &str) -> Result<Op, String> {
        let w: Vec<&str> = s.split_whitespace().collect();
        let num = |i: usize| -> Result<i32, String> {
            w.get(i)
                .and_then(|x| x.parse().ok())
                .ok_or_else(|| format!("bad operation \"{s}\""))
        };
        let name = |i: usize| -> Result<String, String> {
            w.get(i)
                .map(|x| x.to_string())
                .ok_or_else(|| format!("bad operation \"{s}\""))
        };
        Ok(match w.first().copied() {
            Some("create") => Op::Create(name(1)?),
            Some("ins") => Op::Ins(name(1)?, num(2)?, num(3)?),
            Some("del") => Op::Del(name(1)?, num(2)?, num(3)?),
            Some("drop") => Op::Drop(name(1)?),
            Some("trunc") => Op::Trunc(name(1)?),
            Some("createdb") => Op::CreateDb(name(1)?, name(2)? == "wal_log"),
            Some("dropdb") => Op::DropDb(name(1)?),
            _ => return Err(format!("bad operation \"{s}\"")),
        })
    }
}

/// What the committed transactions leave: tables of `postgres` with their row ids
/// (and the transaction that wrote each), and the extra databases.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
struct Model {
    tables: BTreeMap<String, BTreeMap<i32, u64>>,
    created_by: BTreeMap<String, u64>,
    dbs: BTreeMap<String, u64>,
}

impl Model {
    fn apply(&mut self, seq: u64, ops: &[Op]) {
        for op in ops {
            match op {
                Op::Create(t) => {
                    self.tables.insert(t.clone(), BTreeMap::new());
                    self.created_by.insert(t.clone(), seq);
                }
                Op::Ins(t, a, n) => {
                    let rows = self
                        .tables
                        .get_mut(t)
                        .expect("worker inserts into known tables");
                    for id in *a..*a + *n {
                        rows.insert(id, seq);
                    }
                }
                Op::Del(t, m, r) => {
                    if let Some(rows) = self.tables.get_mut(t) {
                        rows.retain(|id, _| id.rem_euclid(*m) != *r);
                    }
                }
                Op::Drop(t) => {
                    self.tables.remove(t);
                    self.created_by.remove(t);
                }
                Op::Trunc(t) => {
                    if let Some(rows) = self.tables.get_mut(t) {
                        rows.clear();
                    }
                }
                Op::CreateDb(d, _) => {
                    self.dbs.insert(d.clone(), seq);
                }
                Op::DropDb(d) => {
                    self.dbs.remove(d);
                }
            }
        }
    }
}

fn emit(out: &mut impl Write, line: &str) -> Result<(), String> {
    writeln!(out, "{line}")
        .and_then(|()| out.flush())
        .map_err(|e| format!("could not write to stdout: {e}"))
}

/// The simulated disk over `journal` (power-loss runs), as the worker and the
/// checker both use it: every sync either makes is recorded (sim rule 1).
fn sim_settings(settings: &Settings, journal: &Path) -> Result<(Settings, SimVfs), String> {
    let sim = SimVfs::new(Some(journal), false)
        .map_err(|e| format!("simulated disk {}: {e}", journal.display()))?;
    let s = Settings {
        vfs: Arc::new(sim.clone()),
        ..settings.clone()
    };
    Ok((s, sim))
}

/// With a simulated disk: a thread waits for `POWERLOSS <seed>` on stdin, then loses
/// power and ends the process at once.
fn listen_for_power_loss(sim: SimVfs) {
    std::thread::spawn(move || {
        for line in std::io::stdin().lock().lines() {
            let Ok(line) = line else { return };
            if let Some(seed) = line.strip_prefix("POWERLOSS ") {
                sim.power_loss_and_exit(seed.trim().parse().unwrap_or(0));
            }
        }
    });
}

/// The worker: recovers `dir`, then runs random transactions until killed (or until
/// it loses power, with a `journal` for the simulated disk).
pub fn worker(
    dir: &Path,
    settings: Settings,
    seed: u64,
    id_base: i64,
    journal: Option<&Path>,
) -> Result<(), String> {
    let settings = match journal {
        Some(j) => {
            let (s, sim) = sim_settings(&settings, j)?;
            listen_for_power_loss(sim);
            s
        }
        None => settings,
    };
    let engine = Engine::open(dir, settings).map_err(|e| e.to_string())?;
    let mut out = std::io::stdout().lock();
    emit(&mut out, "READY")?;
    let mut rng = XorShiftRng::seed_from_u64(seed);
    let mut tables: Vec<String> = engine
        .tables(DB)
        .map_err(|e| e.to_string())?
        .into_iter()
        .map(|r| r.name)
        .collect();
    let mut dbs: Vec<String> = engine
        .databases()
        .into_iter()
        .map(|d| d.name)
        .filter(|n| n.starts_with("cdb_"))
        .collect();
    let mut next = id_base;
    for _ in 0..100_000u64 {
        next += 1;
        let seq = next as u64;
        let roll = rng.random_range(0..100);
        if roll < 5 {
            if let Some(t) = tables.get(rng.random_range(0..tables.len().max(1))) {
                engine.vacuum(DB, Some(t)).map_err(|e| e.to_string())?;
            }
            continue;
        }
        if roll < 8 {
            engine.checkpoint().map_err(|e| e.to_string())?;
            continue;
        }
        let abort = roll >= 90;
        let mut view = tables.clone();
        let mut db_view = dbs.clone();
        let ops = if roll < 12 {
            vec![db_op(&mut rng, seq, &mut db_view)]
        } else {
            table_ops(&mut rng, &mut next, &mut view)
        };
        let desc: Vec<String> = ops.iter().map(Op::render).collect();
        emit(&mut out, &format!("B {seq} {}", desc.join(";")))?;
        let mut txn = engine.begin();
        for op in &ops {
            run_op(&mut txn, op).map_err(|e| format!("transaction {seq}, {}: {e}", op.render()))?;
        }
        if abort {
            txn.abort().map_err(|e| e.to_string())?;
            emit(&mut out, &format!("A {seq}"))?;
        } else {
            txn.commit().map_err(|e| e.to_string())?;
            emit(&mut out, &format!("C {seq}"))?;
            tables = view;
            dbs = db_view;
            for op in &ops {
                if let Op::CreateDb(d, _) = op {
                    dbs.push(d.clone());
                }
            }
        }
    }
    Ok(())
}

/// A CREATE DATABASE (while fewer than four, or at even odds) or a DROP DATABASE.
fn db_op(rng: &mut XorShiftRng, seq: u64, db_view: &mut Vec<String>) -> Op {
    if db_view.len() < 4 || rng.random_bool(0.5) {
        Op::CreateDb(format!("cdb_{seq}"), rng.random_bool(0.5))
    } else {
        Op::DropDb(db_view.remove(rng.random_range(0..db_view.len())))
    }
}

/// One to four table operations; ids come from `next`, so no two rows share one.
fn table_ops(rng: &mut XorShiftRng, next: &mut i64, view: &mut Vec<String>) -> Vec<Op> {
    let mut fresh = |by: i64| {
        let id = *next + 1;
        *next += by;
        id
    };
    let mut ops = Vec::new();
    for _ in 0..rng.random_range(1..=4) {
        let k = rng.random_range(0..100);
        if view.is_empty() || (k < 20 && view.len() < 40) {
            let t = format!("t_{}", fresh(1));
            ops.push(Op::Create(t.clone()));
            let n = rng.random_range(0..30);
            ops.push(Op::Ins(t.clone(), fresh(n as i64 + 1) as i32, n));
            view.push(t);
        } else if k < 60 {
            let t = view[rng.random_range(0..view.len())].clone();
            let n = if rng.random_bool(0.1) {
                rng.random_range(200..1500)
            } else {
                rng.random_range(1..40)
            };
            ops.push(Op::Ins(t, fresh(n as i64 + 1) as i32, n));
        } else if k < 75 {
            let t = view[rng.random_range(0..view.len())].clone();
            let m = rng.random_range(1..5);
            ops.push(Op::Del(t, m, rng.random_range(0..m)));
        } else if k < 88 {
            ops.push(Op::Drop(view.remove(rng.random_range(0..view.len()))));
        } else {
            let t = view[rng.random_range(0..view.len())].clone();
            ops.push(Op::Trunc(t));
        }
    }
    ops
}

fn run_op(txn: &mut strata_engine::Txn<'_>, op: &Op) -> Result<(), strata_engine::EngineError> {
    match op {
        Op::Create(t) => txn.create_table(DB, t, &columns(), None),
        Op::Ins(t, a, n) => {
            let rows: Vec<Vec<Datum>> = (*a..*a + *n)
                .map(|id| vec![Datum::Int4(id), Datum::Text(text_of(id))])
                .collect();
            txn.insert(DB, t, &rows).map(|_| ())
        }
        Op::Del(t, m, r) => {
            let (m, r) = (*m, *r);
            txn.delete_where(
                DB,
                t,
                &move |row| matches!(row[0], Datum::Int4(id) if id.rem_euclid(m) == r),
            )
            .map(|_| ())
        }
        Op::Drop(t) => txn.drop_table(DB, t),
        Op::Trunc(t) => txn.truncate_table(DB, t),
        Op::CreateDb(d, wal_log) => txn.create_database(
            d,
            "template1",
            None,
            if *wal_log {
                CreateDbStrategy::WalLog
            } else {
                CreateDbStrategy::FileCopy
            },
        ),
        Op::DropDb(d) => txn.drop_database(d),
    }
}

/// Outcome of the checks after one crash.
#[derive(Debug, Default)]
pub struct CrashCheck {
    pub lost_transactions: u64,
    pub problems: Vec<String>,
    pub in_doubt_committed: Option<bool>,
}

/// Tables (with row ids) of `postgres` and the extra databases.
type State = (BTreeMap<String, BTreeSet<i32>>, BTreeSet<String>);

fn read_state(e: &Engine) -> Result<(State, Vec<String>), String> {
    let mut problems = Vec::new();
    let mut tables = BTreeMap::new();
    for r in e.tables(DB).map_err(|e| e.to_string())? {
        let rows = e.scan(DB, &r.name).map_err(|e| e.to_string())?;
        let mut ids = BTreeSet::new();
        for row in rows {
            match (&row[0], &row[1]) {
                (Datum::Int4(id), Datum::Text(v)) if *v == text_of(*id) => {
                    if !ids.insert(*id) {
                        problems.push(format!("table {}: row {id} twice", r.name));
                    }
                }
                other => problems.push(format!("table {}: bad row {other:?}", r.name)),
            }
        }
        tables.insert(r.name, ids);
    }
    let dbs = e
        .databases()
        .into_iter()
        .map(|d| d.name)
        .filter(|n| n.starts_with("cdb_"))
        .collect();
    Ok(((tables, dbs), problems))
}

fn model_state(m: &Model) -> State {
    (
        m.tables
            .iter()
            .map(|(t, rows)| (t.clone(), rows.keys().copied().collect()))
            .collect(),
        m.dbs.keys().cloned().collect(),
    )
}

/// Relation file numbers in a directory.
fn rel_files(dir: &Path) -> BTreeSet<u64> {
    std::fs::read_dir(dir)
        .map(|rd| {
            rd.flatten()
                .filter_map(|e| {
                    e.file_name()
                        .to_string_lossy()
                        .split(['_', '.'])
                        .next()
                        .and_then(|x| x.parse().ok())
                })
                .collect()
        })
        .unwrap_or_default()
}

/// Files of every database agree with the catalog; no directory of a dropped database.
fn check_files(e: &Engine, problems: &mut Vec<String>) -> Result<(), String> {
    let dbs = e.databases();
    let base = e.data_dir().join("base");
    let dirs: BTreeSet<String> = std::fs::read_dir(&base)
        .map_err(|e| e.to_string())?
        .flatten()
        .map(|d| d.file_name().to_string_lossy().to_string())
        .collect();
    let want: BTreeSet<String> = dbs.iter().map(|d| d.oid.to_string()).collect();
    if dirs != want {
        problems.push(format!("base/ holds {dirs:?}, catalog has {want:?}"));
    }
    for d in &dbs {
        let mut expect: BTreeSet<u64> = e
            .tables(&d.name)
            .map_err(|e| e.to_string())?
            .iter()
            .map(|r| r.relfilenumber.0)
            .collect();
        expect.insert(1259);
        expect.insert(2619); // pg_statistic (catalog rule 10)
        let found = rel_files(&base.join(d.oid.to_string()));
        if found != expect {
            let extra: Vec<_> = found.difference(&expect).collect();
            let missing: Vec<_> = expect.difference(&found).collect();
            problems.push(format!(
                "database {}: files of no committed relation {extra:?}, missing files {missing:?}",
                d.name
            ));
        }
    }
    Ok(())
}

/// Verifies every page of every relation file under `dir` (recursively).
pub fn check_checksums(dir: &Path, problems: &mut Vec<String>) {
    let Ok(rd) = std::fs::read_dir(dir) else {
        return;
    };
    for entry in rd.flatten() {
        let path = entry.path();
        let name = entry.file_name().to_string_lossy().to_string();
        if path.is_dir() {
            check_checksums(&path, problems);
            continue;
        }
        if !name.starts_with(|c: char| c.is_ascii_digit()) {
            continue;
        }
        let Ok(bytes) = std::fs::read(&path) else {
            continue;
        };
        let whole = bytes.len() / 8192 * 8192;
        if bytes[whole..].iter().any(|b| *b != 0) {
            // A partial block of zeros is the trace of an extension torn by a power
            // loss (the smgr counts whole blocks only, and the next extension
            // overwrites it, as PostgreSQL's mdnblocks); anything else is damage.
            problems.push(format!(
                "{}: {} bytes, a partial last block with data",
                path.display(),
                bytes.len()
            ));
            continue;
        }
        let bytes = &bytes[..whole];
        let seg: u32 = name
            .split('.')
            .nth(1)
            .and_then(|s| s.parse().ok())
            .unwrap_or(0);
        for (i, page) in bytes.chunks(8192).enumerate() {
            let block = strata_types::BlockNumber(seg * strata_types::RELSEG_BLOCKS + i as u32);
            let p: &[u8; 8192] = page.try_into().expect("8192");
            if let Err(e) = strata_page::verify(p, block) {
                problems.push(format!("{} block {}: {e}", path.display(), block.0));
            }
        }
    }
}

/// Recovers the cluster, compares it with the model (accepting the in-doubt
/// transaction all or nothing), shuts down cleanly and verifies checksums.
fn check(
    dir: &Path,
    settings: &Settings,
    model: &mut Model,
    in_doubt: Option<(u64, Vec<Op>)>,
) -> Result<CrashCheck, String> {
    let e = Engine::open(dir, settings.clone()).map_err(|e| format!("recovery failed: {e}"))?;
    let (actual, mut problems) = read_state(&e)?;
    let mut result = CrashCheck::default();
    let with = in_doubt.as_ref().map(|(seq, ops)| {
        let mut m = model.clone();
        m.apply(*seq, ops);
        m
    });
    if actual == model_state(model) {
        result.in_doubt_committed = in_doubt.as_ref().map(|_| false);
    } else if let Some(m) = with.filter(|m| actual == model_state(m)) {
        *model = m;
        result.in_doubt_committed = Some(true);
    } else {
        // Attribute what is missing to the transactions that wrote it.
        let mut lost = BTreeSet::new();
        for (t, rows) in &model.tables {
            match actual.0.get(t) {
                None => {
                    lost.insert(model.created_by[t]);
                }
                Some(have) => {
                    for (id, seq) in rows {
                        if !have.contains(id) {
                            lost.insert(*seq);
                        }
                    }
                }
            }
        }
        for (d, seq) in &model.dbs {
            if !actual.1.contains(d) {
                lost.insert(*seq);
            }
        }
        result.lost_transactions = lost.len() as u64;
        let (mt, md) = model_state(model);
        for (t, have) in &actual.0 {
            let extra: Vec<_> = match mt.get(t) {
                None => {
                    problems.push(format!(
                        "table {t} exists but was never committed or was dropped"
                    ));
                    continue;
                }
                Some(want) => have.difference(want).collect(),
            };
            if !extra.is_empty() {
                problems.push(format!(
                    "table {t}: {} rows never committed or deleted",
                    extra.len()
                ));
            }
        }
        for d in actual.1.difference(&md) {
            problems.push(format!("database {d} exists but was never committed"));
        }
        if !lost.is_empty() {
            problems.push(format!(
                "{} committed transactions lost: {lost:?}",
                lost.len()
            ));
        }
    }
    check_files(&e, &mut problems)?;
    e.close().map_err(|e| format!("shutdown failed: {e}"))?;
    for sub in ["base", "global", "pg_tblspc"] {
        check_checksums(&dir.join(sub), &mut problems);
    }
    result.problems = problems;
    Ok(result)
}

/// Options of a crash run.
pub struct CrashRun {
    pub iterations: u64,
    pub seed: u64,
    pub settings_args: Vec<String>,
    pub verbose: bool,
    /// Lose power (simulated disk) instead of SIGKILL.
    pub power_loss: bool,
}

/// Summary of a crash run.
pub struct CrashSummary {
    pub crashes: u64,
    pub lost: u64,
    pub commits: u64,
    pub problems: Vec<String>,
    pub records: Vec<Record>,
}

enum Event {
    Line(String),
    Eof,
}

/// A running worker process and the lines it printed.
struct Worker {
    child: std::process::Child,
    rx: mpsc::Receiver<Event>,
    reader: std::thread::JoinHandle<()>,
    log_path: std::path::PathBuf,
}

fn spawn_worker(
    opts: &CrashRun,
    dir: &Path,
    tmp: &Path,
    it: u64,
    worker_seed: u64,
) -> Result<Worker, String> {
    let exe = std::env::current_exe().map_err(|e| e.to_string())?;
    let log_path = tmp.join(format!("worker-{it}.log"));
    let log_file = std::fs::File::create(&log_path).map_err(|e| e.to_string())?;
    let mut cmd = Command::new(&exe);
    cmd.args(["debug", "crash-worker", "-D"])
        .arg(dir)
        .args(["--seed", &worker_seed.to_string()])
        .args(["--id-base", &((it as i64 + 1) * 10_000_000).to_string()]);
    for s in &opts.settings_args {
        cmd.args(["-c", s]);
    }
    if opts.power_loss {
        cmd.arg("--journal").arg(tmp.join("sim.journal"));
    }
    let mut child = cmd
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(log_file)
        .spawn()
        .map_err(|e| format!("could not start the worker: {e}"))?;
    let stdout = child.stdout.take().expect("piped");
    let (tx, rx) = mpsc::channel();
    let reader = std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines() {
            match line {
                Ok(l) => {
                    if tx.send(Event::Line(l)).is_err() {
                        return;
                    }
                }
                Err(_) => break,
            }
        }
        let _ = tx.send(Event::Eof);
    });
    Ok(Worker {
        child,
        rx,
        reader,
        log_path,
    })
}

/// Where one crash happens: sometimes during the worker's own recovery, otherwise after
/// a number of commits plus a delay (mid-transaction, mid-commit, mid-checkpoint,
/// mid-vacuum).
struct CrashPoint {
    during_startup: bool,
    want_commits: u64,
    delay: Duration,
    startup_delay: Duration,
    power_seed: u64,
}

impl CrashPoint {
    fn draw(rng: &mut XorShiftRng) -> CrashPoint {
        CrashPoint {
            during_startup: rng.random_bool(0.1),
            want_commits: rng.random_range(0..25u64),
            delay: Duration::from_micros(rng.random_range(0..15_000)),
            startup_delay: Duration::from_micros(rng.random_range(0..30_000)),
            power_seed: rng.random_range(0..u64::MAX),
        }
    }
}

/// Waits for the crash point, then SIGKILLs the worker or makes it lose power.
/// Returns the lines the worker printed, and its commits before the crash.
fn crash_worker(
    w: Worker,
    at: &CrashPoint,
    power_loss: bool,
    it: u64,
) -> Result<(Vec<String>, u64), String> {
    let Worker {
        mut child,
        rx,
        reader,
        log_path,
    } = w;
    let mut lines = Vec::new();
    let mut commits = 0u64;
    let mut exited_early = false;
    if at.during_startup {
        std::thread::sleep(at.startup_delay);
    } else {
        let mut ready = false;
        loop {
            match rx.recv_timeout(Duration::from_secs(120)) {
                Ok(Event::Line(l)) => {
                    ready |= l == "READY";
                    commits += u64::from(l.starts_with("C "));
                    lines.push(l);
                    if ready && commits >= at.want_commits {
                        break;
                    }
                }
                Ok(Event::Eof) => {
                    exited_early = true;
                    break;
                }
                Err(_) => return Err(format!("crash iteration {it}: worker silent for 120 s")),
            }
        }
        std::thread::sleep(at.delay);
    }
    let lost_power = power_loss && !exited_early && lose_power(&mut child, at.power_seed);
    if !lost_power {
        let _ = child.kill(); // SIGKILL
    }
    let status = child.wait().map_err(|e| e.to_string())?;
    let _ = reader.join();
    while let Ok(ev) = rx.try_recv() {
        if let Event::Line(l) = ev {
            lines.push(l);
        }
    }
    let killed_by_us = lost_power || !status.success() || at.during_startup;
    if exited_early || !killed_by_us {
        let log = std::fs::read_to_string(&log_path).unwrap_or_default();
        return Err(format!(
            "crash iteration {it}: the worker stopped by itself ({status}):\n{log}"
        ));
    }
    Ok((lines, commits))
}

/// Asks the worker to lose power; true if it did so within 30 s.
fn lose_power(child: &mut std::process::Child, seed: u64) -> bool {
    let Some(stdin) = child.stdin.as_mut() else {
        return false;
    };
    if writeln!(stdin, "POWERLOSS {seed}")
        .and_then(|()| stdin.flush())
        .is_err()
    {
        return false;
    }
    let deadline = Instant::now() + Duration::from_secs(30);
    while Instant::now() < deadline {
        if let Ok(Some(_)) = child.try_wait() {
            return true;
        }
        std::thread::sleep(Duration::from_millis(2));
    }
    false
}

/// Replays the worker's protocol lines into the model; returns the transaction in
/// doubt, if any.
fn replay_lines(
    lines: &[String],
    model: &mut Model,
    summary: &mut CrashSummary,
) -> Result<Option<(u64, Vec<Op>)>, String> {
    let mut pending: BTreeMap<u64, Vec<Op>> = BTreeMap::new();
    for l in lines {
        let mut parts = l.splitn(3, ' ');
        let kind = parts.next().unwrap_or("");
        let seq: u64 = match parts.next().and_then(|s| s.parse().ok()) {
            Some(s) => s,
            None => continue, // READY
        };
        match kind {
            "B" => {
                let ops = parts
                    .next()
                    .unwrap_or("")
                    .split(';')
                    .filter(|s| !s.is_empty())
                    .map(Op::parse)
                    .collect::<Result<Vec<_>, _>>()?;
                pending.insert(seq, ops);
            }
            "C" => {
                let ops = pending
                    .remove(&seq)
                    .ok_or_else(|| format!("C {seq} without B"))?;
                model.apply(seq, &ops);
                summary.commits += 1;
            }
            "A" => {
                pending.remove(&seq);
            }
            _ => return Err(format!("unexpected worker line \"{l}\"")),
        }
    }
    if pending.len() > 1 {
        return Err(format!("more than one transaction in doubt: {pending:?}"));
    }
    Ok(pending.into_iter().next())
}

/// Runs `iterations` crash cycles on a fresh cluster in a temporary directory.
pub fn run(opts: &CrashRun) -> Result<CrashSummary, String> {
    let settings = strata_server::config::settings_from(&opts.settings_args)?;
    let quiet = Settings {
        log: std::sync::Arc::new(|_: &str| {}),
        ..settings.clone()
    };
    let tmp = tempfile::tempdir().map_err(|e| e.to_string())?;
    let dir = tmp.path().join("data");
    Engine::init(&dir, quiet.clone()).map_err(|e| e.to_string())?;
    let journal = tmp.path().join("sim.journal");
    let mut rng = XorShiftRng::seed_from_u64(opts.seed);
    let mut model = Model::default();
    let mut summary = CrashSummary {
        crashes: 0,
        lost: 0,
        commits: 0,
        problems: Vec::new(),
        records: Vec::new(),
    };
    for it in 0..opts.iterations {
        let worker_seed = rng.random_range(0..u64::MAX);
        let at = CrashPoint::draw(&mut rng);
        let w = spawn_worker(opts, &dir, tmp.path(), it, worker_seed)?;
        let log_path = w.log_path.clone();
        let started = Instant::now();
        let (lines, commits) = crash_worker(w, &at, opts.power_loss, it)?;
        let in_doubt = replay_lines(&lines, &mut model, &mut summary)?;
        // The checker runs on the same simulated disk, so its syncs count too.
        let check_settings = if opts.power_loss {
            sim_settings(&quiet, &journal)?.0
        } else {
            quiet.clone()
        };
        let c = check(&dir, &check_settings, &mut model, in_doubt)?;
        summary.crashes += 1;
        summary.lost += c.lost_transactions;
        summary.records.push(Record {
            bench: "crash",
            case: format!("crash_{it}"),
            implementation: "strata",
            shared_buffers: settings.shared_buffers_bytes,
            metric: "lost_transactions",
            value: c.lost_transactions as f64,
        });
        if opts.verbose {
            eprintln!(
                "crash {it}: {} after {:.0} ms, {commits} commits{}, in doubt: {:?}, {} problems",
                if opts.power_loss {
                    "power lost"
                } else {
                    "killed"
                },
                started.elapsed().as_secs_f64() * 1e3,
                if at.during_startup {
                    " (at a random time from start)"
                } else {
                    ""
                },
                c.in_doubt_committed,
                c.problems.len()
            );
        }
        for p in c.problems {
            summary.problems.push(format!("crash {it}: {p}"));
        }
        if !summary.problems.is_empty() {
            let log = std::fs::read_to_string(&log_path).unwrap_or_default();
            summary
                .problems
                .push(format!("worker log of crash {it}:\n{log}"));
            break;
        }
    }
    Ok(summary)
}
