//! `strata bench pgbench`: PostgreSQL 15's own pgbench (TPC-B-like: three UPDATEs by
//! primary key, a SELECT, an INSERT per transaction) against Strata and PostgreSQL
//! side by side, with the same shared_buffers and settings (fsync on, one commit
//! flush per transaction), in one run.
//!
//! Method, per shared_buffers size and engine: a fresh cluster (`seeds`' clusters:
//! fsync on, autovacuum off, no checkpoint by time or WAL size), then per protocol
//! (`-M simple`, `-M prepared`) and client count `pgbench -i -s SCALE` (client-side
//! generation, primary keys; timed, "init") and a timed run `pgbench -T SECONDS -c N
//! -j N` (with `--select-only`, pgbench's `-S` script), whose "tps = ... (without
//! initial connection time)" and failed transactions are reported. Each run starts from its own initialization, so none inherits the
//! row versions an earlier one left; pgbench itself starts each run with VACUUM of the
//! branches and tellers and TRUNCATE of the history.

use super::seeds::{self, Cluster, Kind};
use super::Record;
use std::path::PathBuf;
use std::process::Command;

#[derive(clap::Args, Clone)]
pub struct Args {
    /// Engines to run, comma-separated: strata, postgres.
    #[arg(long, default_value = "strata,postgres")]
    pub engines: String,
    /// shared_buffers sizes, PostgreSQL units, comma-separated.
    #[arg(long, default_value = "128MB")]
    pub shared_buffers: String,
    /// pgbench's scale (-s): 100,000 accounts per unit.
    #[arg(long, default_value_t = 10)]
    pub scale: u32,
    /// Seconds per timed run (-T).
    #[arg(long, default_value_t = 60)]
    pub seconds: u32,
    /// Client counts (-c, with as many threads), comma-separated.
    #[arg(long, default_value = "1,4")]
    pub clients: String,
    /// Protocols (-M), comma-separated: simple, extended, prepared.
    #[arg(long, default_value = "simple,prepared")]
    pub modes: String,
    /// pgbench's select-only script (-S: one SELECT by primary key per
    /// transaction) instead of the TPC-B-like one.
    #[arg(long)]
    pub select_only: bool,
    /// Write the records (tps per engine, size, protocol and clients) to this file.
    #[arg(long)]
    pub json: Option<PathBuf>,
    /// PostgreSQL's bin directory (initdb, postgres, pgbench).
    #[arg(long, default_value = "/usr/lib/postgresql/15/bin")]
    pub pg_bin: PathBuf,
}

/// One timed run's figures.
struct Figures {
    tps: f64,
    failed: u64,
}

fn pgbench(c: &Cluster, args: &Args, extra: &[String]) -> Result<String, String> {
    let out = Command::new(args.pg_bin.join("pgbench"))
        // Each engine's bootstrap superuser (Strata's is `strata`).
        .args(["-h", "127.0.0.1", "-U", c.kind.user(), "-p"])
        .arg(c.port.to_string())
        .args(extra)
        .arg("postgres")
        .output()
        .map_err(|e| format!("pgbench: {e}"))?;
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    if !out.status.success() {
        return Err(format!(
            "pgbench {extra:?} failed ({}):\n{text}",
            out.status
        ));
    }
    Ok(text)
}

/// The figure after `key` on the line that has it ("tps = 123.4 (...)").
fn figure(text: &str, key: &str) -> Option<f64> {
    let line = text.lines().find(|l| l.contains(key))?;
    let rest = &line[line.find(key)? + key.len()..];
    rest.split_whitespace().next()?.parse().ok()
}

fn timed(c: &Cluster, args: &Args, mode: &str, clients: u32) -> Result<Figures, String> {
    let n = clients.to_string();
    let mut extra: Vec<String> = [
        "-T",
        &args.seconds.to_string(),
        "-c",
        &n,
        "-j",
        &n,
        "-M",
        mode,
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    if args.select_only {
        extra.push("-S".into());
    }
    let text = pgbench(c, args, &extra)?;
    Ok(Figures {
        tps: figure(&text, "tps = ").ok_or_else(|| format!("no tps in:\n{text}"))?,
        failed: figure(&text, "number of failed transactions: ").map_or(0, |f| f as u64),
    })
}

fn list<T: std::str::FromStr>(s: &str, what: &str) -> Result<Vec<T>, String> {
    s.split(',')
        .map(|x| x.trim().parse().map_err(|_| format!("bad {what}: {x}")))
        .collect()
}

/// Runs the comparison; prints one line per run and the Strata/PostgreSQL ratios.
pub fn run(args: &Args) -> Result<Vec<Record>, String> {
    let seeds_args = seeds::Args::for_clusters(&args.engines, &args.shared_buffers, &args.pg_bin);
    let kinds = seeds::engines(&seeds_args)?;
    let sizes = seeds::sizes(&seeds_args)?;
    let clients: Vec<u32> = list(&args.clients, "client count")?;
    let modes: Vec<String> = list(&args.modes, "mode")?;
    let mut records = Vec::new();
    println!(
        "{:>6} {:<9} {:<9} {:>7} {:>11} {:>7} {:>10}",
        "size", "engine", "mode", "clients", "tps", "failed", "init"
    );
    for (sb, sb_bytes) in &sizes {
        let mut tps: Vec<(Kind, String, u32, f64)> = Vec::new();
        for &k in &kinds {
            let root = tempfile::Builder::new()
                .prefix(&format!("strata-pgbench-{}-", k.name()))
                .tempdir()
                .map_err(|e| e.to_string())?;
            let mut c = Cluster::create(k, root.path(), sb, &seeds_args)?;
            c.start()?;
            for mode in &modes {
                for &n in &clients {
                    // Each run from a fresh initialization: no run inherits the
                    // versions an earlier one left (autovacuum is off on both).
                    let t0 = std::time::Instant::now();
                    let init_args = ["-i".into(), "-s".into(), args.scale.to_string()];
                    pgbench(&c, args, &init_args)?;
                    let init = t0.elapsed().as_secs_f64();
                    let f = timed(&c, args, mode, n)?;
                    println!(
                        "{sb:>6} {:<9} {mode:<9} {n:>7} {:>11.1} {:>7} {:>10}",
                        k.name(),
                        f.tps,
                        f.failed,
                        super::format_seconds(init)
                    );
                    records.push(Record {
                        bench: "pgbench",
                        case: format!(
                            "s{}{} -M {mode} -c {n}",
                            args.scale,
                            if args.select_only { " -S" } else { "" }
                        ),
                        implementation: k.name(),
                        shared_buffers: *sb_bytes,
                        metric: "tps",
                        value: f.tps,
                    });
                    tps.push((k, mode.clone(), n, f.tps));
                }
            }
            c.stop()?;
        }
        for (k, mode, n, t) in tps.iter().filter(|x| x.0 == Kind::Strata) {
            let pg = tps
                .iter()
                .find(|x| x.0 == Kind::Postgres && x.1 == *mode && x.2 == *n);
            if let Some((_, _, _, p)) = pg {
                println!(
                    "{sb:>6} {} / postgres  -M {mode} -c {n}: {:.2}x",
                    k.name(),
                    t / p
                );
            }
        }
    }
    Ok(records)
}

#[cfg(test)]
mod tests {
    #[test]
    fn figures_are_read_from_pgbench_output() {
        let out = "number of failed transactions: 3 (0.1%)\nlatency average = 0.950 ms\ntps = 1052.355696 (without initial connection time)\n";
        assert_eq!(super::figure(out, "tps = "), Some(1052.355696));
        assert_eq!(
            super::figure(out, "number of failed transactions: "),
            Some(3.0)
        );
        assert_eq!(super::figure(out, "nope"), None);
    }
}
