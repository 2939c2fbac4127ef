//! `strata bench bufpool`: the buffer pool's bulk operations and hit path, at several
//! `shared_buffers` sizes, against references measured in the same run.
//!
//! For each size the pool is first filled (every frame holds a page), then each case is
//! timed per operation (median of repetitions; only the operation itself is inside the
//! timer, the set-up of its target pages is not):
//!
//! | case | operation |
//! | --- | --- |
//! | `drop_1page` | `drop_relations` of a relation with 1 cached page |
//! | `drop_1000pages` | `drop_relations` of a relation with 1,000 cached pages |
//! | `truncate_3forks` | `truncate` of main 1,000 → 500, fsm 3 → 1, vm 1 → 0 in one call |
//! | `drop_database` | `drop_database` of a database with 1,000 one-page relations in 100 tablespaces |
//! | `dirty_enum_0` | checkpoint's dirty-page enumeration, nothing dirty |
//! | `dirty_enum_1000` | the same with 1,000 dirty pages in 100 relations |
//! | `hit` | `read_buffer` of a cached page and unpin, 2 threads, random pages |
//! | `idle_pool` | RSS added by creating the pool, before any use |
//!
//! Implementations: `strata` (the relation directory), `full_scan` (the same operation
//! done the PostgreSQL way: one pass over every descriptor, see
//! `strata_buffer::reference`), and for hits `hashmap` (a plain partitioned hash map of
//! the same entries, pinning the same descriptors).

use super::measure::{rss, Process};
use super::{format_bytes, format_seconds, Record};
use indicatif::{ProgressBar, ProgressStyle};
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Instant;
use strata_buffer::reference::{self, PlainMap};
use strata_buffer::{parse_shared_buffers, BufferPool, NoWal, ReadMode};
use strata_smgr::{Smgr, StdVfs};
use strata_types::units::format_memory;
use strata_types::{
    BlockNumber, BufferTag, ForkNumber, Oid, RelFileNumber, RelKey, DEFAULT_TABLESPACE,
};

#[derive(clap::Args, Clone)]
pub struct Args {
    /// shared_buffers sizes to compare, in PostgreSQL units, comma-separated.
    #[arg(long, value_delimiter = ',', default_value = "128MB,1GB,8GB")]
    shared_buffers: Vec<String>,
    /// Also write the figures as JSON records to this file.
    #[arg(long)]
    pub json: Option<PathBuf>,
    /// Run only these cases (comma-separated names from the table); all by default.
    #[arg(long, value_delimiter = ',')]
    only: Vec<String>,
    /// Multiplies the repetitions of every case (e.g. 0.1 for a quick run).
    #[arg(long, default_value_t = 1.0)]
    reps_scale: f64,
    /// Internal: create one idle pool, print the RSS it added, exit. The benchmark runs
    /// itself this way so each size is measured in a fresh process.
    #[arg(long, hide = true)]
    idle_rss_probe: bool,
}

/// RSS added by creating an idle pool of `bytes`, measured in a fresh process (in this
/// one, memory freed by an earlier size would be reused and hide the cost).
fn idle_rss_in_child(bytes: u64) -> Result<f64, String> {
    let exe = std::env::current_exe().map_err(|e| e.to_string())?;
    let out = std::process::Command::new(exe)
        .args(["bench", "bufpool", "--idle-rss-probe", "--shared-buffers"])
        .arg(format!("{}kB", bytes >> 10))
        .output()
        .map_err(|e| format!("could not run the idle-pool probe: {e}"))?;
    let text = String::from_utf8_lossy(&out.stdout);
    text.trim().parse().map_err(|_| {
        format!(
            "idle-pool probe failed: {text}{}",
            String::from_utf8_lossy(&out.stderr)
        )
    })
}

fn idle_rss_probe(bytes: u64) -> Result<(), String> {
    let dir = tempfile::tempdir().map_err(|e| e.to_string())?;
    let smgr = Arc::new(Smgr::open(dir.path(), Arc::new(StdVfs), 1000).map_err(|e| e.to_string())?);
    let rss_now = || {
        rss(Process::This)
            .map(|r| r.now_bytes)
            .ok_or("no /proc/self/status")
    };
    let before = rss_now()?;
    let pool = BufferPool::new(bytes, smgr, Arc::new(NoWal));
    let added = rss_now()?.saturating_sub(before);
    std::hint::black_box(&pool);
    println!("{added}");
    Ok(())
}

const BENCH: &str = "bufpool";
const FILL_DB: Oid = Oid(10);
const WORK_DB: Oid = Oid(11);
const FILL_REL_BLOCKS: u32 = 1024;
const MIN_BYTES: u64 = 32 << 20;
const HIT_THREADS: usize = 2;

/// Hands out relation file numbers never used before in this run.
struct Fresh(u64);

impl Fresh {
    fn rel(&mut self, spc: Oid, db: Oid) -> RelKey {
        self.0 += 1;
        RelKey::new(spc, db, RelFileNumber(self.0))
    }
}

fn tag(rel: RelKey, fork: ForkNumber, block: u32) -> BufferTag {
    BufferTag::new(rel, fork, BlockNumber(block))
}

/// Loads blocks `0..blocks` of each `(rel, fork)` until all are cached at once: in a
/// full pool the clock sweep may evict a page loaded earlier in the same set-up.
fn load_all(pool: &BufferPool, targets: &[(RelKey, ForkNumber, u32)]) -> Result<(), String> {
    for _ in 0..20 {
        let mut missing = false;
        for &(rel, fork, blocks) in targets {
            for b in 0..blocks {
                let t = tag(rel, fork, b);
                if !pool.is_cached(t) {
                    missing = true;
                    pool.read_buffer(t, ReadMode::Zero)
                        .map_err(|e| e.to_string())?;
                }
            }
        }
        if !missing {
            return Ok(());
        }
    }
    Err("could not get the set-up pages cached together".into())
}

fn load(pool: &BufferPool, rel: RelKey, fork: ForkNumber, blocks: u32) -> Result<(), String> {
    load_all(pool, &[(rel, fork, blocks)])
}

fn fill_tag(i: usize) -> BufferTag {
    let rel = RelKey::new(
        DEFAULT_TABLESPACE,
        FILL_DB,
        RelFileNumber(1 + (i / FILL_REL_BLOCKS as usize) as u64),
    );
    tag(rel, ForkNumber::Main, (i % FILL_REL_BLOCKS as usize) as u32)
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(|a, b| a.total_cmp(b));
    v[v.len() / 2]
}

/// Times `op` after `setup`, `reps` times; returns the median seconds of `op`.
fn time_op<S>(
    reps: usize,
    mut setup: impl FnMut() -> Result<S, String>,
    mut op: impl FnMut(S),
) -> Result<f64, String> {
    let mut times = Vec::with_capacity(reps);
    for _ in 0..reps {
        let s = setup()?;
        let t = Instant::now();
        op(s);
        times.push(t.elapsed().as_secs_f64());
    }
    Ok(median(times))
}

fn xorshift(x: &mut u64) -> u64 {
    *x ^= *x << 13;
    *x ^= *x >> 7;
    *x ^= *x << 17;
    *x
}

/// Hit throughput on `HIT_THREADS` threads over random pages of the fill relations.
fn hits_per_second(nbuffers: usize, per_thread: usize, hit: &(dyn Fn(&BufferTag) + Sync)) -> f64 {
    let start = Instant::now();
    std::thread::scope(|s| {
        for t in 0..HIT_THREADS {
            s.spawn(move || {
                let mut x = 0x2545_F491_4F6C_DD1D ^ (t as u64 + 1);
                for _ in 0..per_thread {
                    let i = (xorshift(&mut x) % nbuffers as u64) as usize;
                    hit(&fill_tag(i));
                }
            });
        }
    });
    (HIT_THREADS * per_thread) as f64 / start.elapsed().as_secs_f64()
}

fn populate(pool: &BufferPool, label: &str) -> Result<(), String> {
    let n = pool.nbuffers();
    let bar = ProgressBar::new(n as u64).with_style(
        ProgressStyle::with_template("  filling {msg} pool {bar:40} {pos}/{len} pages")
            .map_err(|e| e.to_string())?,
    );
    bar.set_message(label.to_string());
    for i in 0..n {
        pool.read_buffer(fill_tag(i), ReadMode::Zero)
            .map_err(|e| e.to_string())?;
        if i % 8192 == 0 {
            bar.set_position(i as u64);
        }
    }
    bar.finish_and_clear();
    if pool.stats().frames_allocated != n {
        return Err(format!(
            "pool not full after filling: {} of {n} frames",
            pool.stats().frames_allocated
        ));
    }
    Ok(())
}

fn run_size(bytes: u64, args: &Args) -> Result<Vec<Record>, String> {
    let label = format_memory(bytes);
    eprintln!("shared_buffers = {label}");
    let reps = |n: usize| ((n as f64 * args.reps_scale).round() as usize).max(3);
    let dir = tempfile::tempdir().map_err(|e| e.to_string())?;
    let smgr = Arc::new(Smgr::open(dir.path(), Arc::new(StdVfs), 1000).map_err(|e| e.to_string())?);
    let mut out = Vec::new();
    let mut rec = |case: &str, implementation: &'static str, metric: &'static str, value: f64| {
        out.push(Record {
            bench: BENCH,
            case: case.to_string(),
            implementation,
            shared_buffers: bytes,
            metric,
            value,
        })
    };

    let want = |case: &str| args.only.is_empty() || args.only.iter().any(|c| c == case);
    if want("idle_pool") {
        rec(
            "idle_pool",
            "strata",
            "peak_rss_bytes",
            idle_rss_in_child(bytes)?,
        );
    }
    if !args.only.is_empty() && args.only.iter().all(|c| c == "idle_pool") {
        return Ok(out);
    }
    let pool = BufferPool::new(bytes, smgr, Arc::new(NoWal));
    populate(&pool, &label)?;
    let n = pool.nbuffers();

    // Hits first, while every fill page is cached.
    if want("hit") {
        let per_thread = ((2_000_000.0 * args.reps_scale) as usize).max(10_000);
        let plain = PlainMap::snapshot(&pool);
        let (mut strata_hits, mut plain_hits) = (Vec::new(), Vec::new());
        // Interleaved rounds, median of each: drift in machine load hits both alike.
        for _ in 0..5 {
            strata_hits.push(hits_per_second(n, per_thread, &|t| {
                let buf = pool.read_buffer(*t, ReadMode::Normal).expect("cached page");
                std::hint::black_box(buf.id());
            }));
            plain_hits.push(hits_per_second(n, per_thread, &|t| {
                assert!(plain.hit(&pool, t), "cached page");
            }));
        }
        rec("hit", "strata", "ops_per_second", median(strata_hits));
        rec("hit", "hashmap", "ops_per_second", median(plain_hits));
    }

    let mut fresh = Fresh(1_000_000);
    let mut next_db = 100_000;
    for implementation in ["strata", "full_scan"] {
        let mut cx = Cx {
            pool: &pool,
            fresh: &mut fresh,
            strata: implementation == "strata",
            reps: 0,
        };
        let mut case =
            |name: &str, base_reps: usize, f: &mut dyn FnMut(&mut Cx) -> Result<f64, String>| {
                if !want(name) {
                    return Ok::<(), String>(());
                }
                cx.reps = if cx.strata { reps(base_reps) } else { 5 };
                let t = f(&mut cx)?;
                rec(name, implementation, "seconds_per_op", t);
                Ok(())
            };
        case("drop_1page", 400, &mut |cx| drop_case(cx, 1))?;
        case("drop_1000pages", 40, &mut |cx| drop_case(cx, 1000))?;
        case("truncate_3forks", 40, &mut truncate_case)?;
        case("drop_database", 20, &mut |cx| {
            next_db += 1000;
            drop_database_case(cx, next_db)
        })?;
        case("dirty_enum_0", 400, &mut |cx| dirty_enum_case(cx, 0))?;
        case("dirty_enum_1000", 400, &mut |cx| dirty_enum_case(cx, 1000))?;
    }
    Ok(out)
}

/// What every bulk case needs: the filled pool, fresh relation numbers, which
/// implementation to time, and how many repetitions.
struct Cx<'a> {
    pool: &'a BufferPool,
    fresh: &'a mut Fresh,
    strata: bool,
    reps: usize,
}

fn drop_case(cx: &mut Cx, pages: u32) -> Result<f64, String> {
    let (pool, strata) = (cx.pool, cx.strata);
    let fresh = &mut *cx.fresh;
    time_op(
        cx.reps,
        || {
            let rel = fresh.rel(DEFAULT_TABLESPACE, WORK_DB);
            load(pool, rel, ForkNumber::Main, pages).map(|()| rel)
        },
        |rel| {
            let dropped = if strata {
                pool.drop_relations(&[rel])
            } else {
                reference::drop_relations(pool, &[rel])
            };
            assert_eq!(dropped, pages as usize);
        },
    )
}

fn truncate_case(cx: &mut Cx) -> Result<f64, String> {
    let (pool, strata) = (cx.pool, cx.strata);
    let fresh = &mut *cx.fresh;
    let cuts = [
        (ForkNumber::Main, BlockNumber(500)),
        (ForkNumber::Fsm, BlockNumber(1)),
        (ForkNumber::Vm, BlockNumber(0)),
    ];
    let mut truncated = Vec::new();
    let t = time_op(
        cx.reps,
        || {
            let rel = fresh.rel(DEFAULT_TABLESPACE, WORK_DB);
            load_all(
                pool,
                &[
                    (rel, ForkNumber::Main, 1000),
                    (rel, ForkNumber::Fsm, 3),
                    (rel, ForkNumber::Vm, 1),
                ],
            )?;
            truncated.push(rel);
            Ok(rel)
        },
        |rel| {
            let cut = if strata {
                pool.truncate(rel, &cuts)
            } else {
                reference::truncate(pool, rel, &cuts)
            };
            assert_eq!(cut, 503);
        },
    )?;
    pool.drop_relations(&truncated);
    Ok(t)
}

fn drop_database_case(cx: &mut Cx, first_db: u32) -> Result<f64, String> {
    let (pool, strata) = (cx.pool, cx.strata);
    let fresh = &mut *cx.fresh;
    let mut db = first_db;
    time_op(
        cx.reps,
        || {
            db += 1;
            let targets: Vec<_> = (0..1000u32)
                .map(|i| {
                    (
                        fresh.rel(Oid(20_000 + i % 100), Oid(db)),
                        ForkNumber::Main,
                        1,
                    )
                })
                .collect();
            load_all(pool, &targets)?;
            Ok(Oid(db))
        },
        |db| {
            let dropped = if strata {
                pool.drop_database(db)
            } else {
                reference::drop_database(pool, db)
            };
            assert_eq!(dropped, 1000);
        },
    )
}

fn dirty_enum_case(cx: &mut Cx, ndirty: u32) -> Result<f64, String> {
    let (pool, strata) = (cx.pool, cx.strata);
    let rels: Vec<RelKey> = (0..ndirty / 10)
        .map(|_| cx.fresh.rel(DEFAULT_TABLESPACE, WORK_DB))
        .collect();
    for rel in &rels {
        for b in 0..10 {
            let buf = pool
                .read_buffer(tag(*rel, ForkNumber::Main, b), ReadMode::Zero)
                .map_err(|e| e.to_string())?;
            let page = buf.write();
            buf.mark_dirty(&page);
        }
    }
    let t = time_op(
        cx.reps,
        || Ok(()),
        |()| {
            let found = if strata {
                pool.dirty_pages().len()
            } else {
                reference::dirty_pages(pool).len()
            };
            assert_eq!(found, ndirty as usize);
        },
    )?;
    pool.drop_relations(&rels);
    Ok(t)
}

pub fn run(args: &Args) -> Result<Vec<Record>, String> {
    if args.idle_rss_probe {
        let size = args.shared_buffers.first().ok_or("no size")?;
        idle_rss_probe(parse_shared_buffers(size).map_err(|e| e.to_string())?)?;
        return Ok(Vec::new());
    }
    let mut sizes = Vec::new();
    for s in &args.shared_buffers {
        let bytes = parse_shared_buffers(s).map_err(|e| e.to_string())?;
        if bytes < MIN_BYTES {
            return Err(format!(
                "bench bufpool needs shared_buffers of at least 32MB (its cases hold 1,000-page relations in a full pool); got {s}"
            ));
        }
        sizes.push(bytes);
    }
    if sizes.is_empty() {
        return Err("no --shared-buffers sizes given".into());
    }
    let mut records = Vec::new();
    for &bytes in &sizes {
        records.extend(run_size(bytes, args)?);
    }
    print_table(&records, &sizes);
    Ok(records)
}

fn value(records: &[Record], case: &str, implementation: &str, size: u64) -> Option<f64> {
    records
        .iter()
        .find(|r| r.case == case && r.implementation == implementation && r.shared_buffers == size)
        .map(|r| r.value)
}

fn print_table(records: &[Record], sizes: &[u64]) {
    let (first, last) = (sizes[0], sizes[sizes.len() - 1]);
    let ratio_head = format!("{}/{}", format_memory(last), format_memory(first));
    print!("{:<18} {:<10}", "case", "impl");
    for s in sizes {
        print!(" {:>12}", format_memory(*s));
    }
    println!(" {:>14}", ratio_head);
    let cases = [
        "drop_1page",
        "drop_1000pages",
        "truncate_3forks",
        "drop_database",
        "dirty_enum_0",
        "dirty_enum_1000",
    ];
    let mut worst_strata: f64 = 0.0;
    for case in cases {
        for implementation in ["strata", "full_scan"] {
            if value(records, case, implementation, first).is_none() {
                continue; // not run (--only)
            }
            print!("{case:<18} {implementation:<10}");
            for s in sizes {
                let v = value(records, case, implementation, *s).unwrap_or(f64::NAN);
                print!(" {:>12}", format_seconds(v));
            }
            let ratio = value(records, case, implementation, last).unwrap_or(f64::NAN)
                / value(records, case, implementation, first).unwrap_or(f64::NAN);
            if implementation == "strata" {
                worst_strata = worst_strata.max(ratio);
            }
            println!(" {:>13.2}×", ratio);
        }
    }
    let mut worst_hit: f64 = f64::INFINITY;
    let hits_run = value(records, "hit", "strata", first).is_some();
    for implementation in ["strata", "hashmap"].into_iter().filter(|_| hits_run) {
        print!("{:<18} {implementation:<10}", "hit (ops/s, 2 thr)");
        for s in sizes {
            let v = value(records, "hit", implementation, *s).unwrap_or(f64::NAN);
            print!(" {:>11.2}M", v / 1e6);
        }
        println!();
    }
    if hits_run {
        print!("{:<18} {:<10}", "hit strata/hashmap", "");
        for s in sizes {
            let r = value(records, "hit", "strata", *s).unwrap_or(f64::NAN)
                / value(records, "hit", "hashmap", *s).unwrap_or(f64::NAN);
            worst_hit = worst_hit.min(r);
            print!(" {:>12.3}", r);
        }
        println!();
    }
    if value(records, "idle_pool", "strata", first).is_some() {
        print!("{:<18} {:<10}", "idle_pool RSS", "strata");
        for s in sizes {
            let v = value(records, "idle_pool", "strata", *s).unwrap_or(f64::NAN);
            print!(" {:>12}", format_bytes(v));
        }
        println!();
    }
    println!();
    if cases
        .iter()
        .any(|c| value(records, c, "strata", first).is_some())
    {
        println!(
            "strata bulk operations: worst {ratio_head} time ratio {worst_strata:.2} (target ≤ 1.50): {}",
            if worst_strata <= 1.5 { "met" } else { "NOT met" }
        );
    }
    if hits_run {
        println!(
            "strata hit path: worst throughput relative to the plain hash map {worst_hit:.3} (target ≥ 0.90): {}",
            if worst_hit >= 0.9 { "met" } else { "NOT met" }
        );
    }
}
