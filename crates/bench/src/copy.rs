//! `strata bench copy`: COPY FROM STDIN of one-field rows sent in CopyData messages
//! of several sizes, against Strata and PostgreSQL 15 side by side (issue 27's
//! defect 4: Strata's reader was quadratic in its message size).
//!
//! Method, per engine: a fresh cluster (`seeds`' settings), then per message size
//! a new table `copy_<size>` (one integer column, no index) and one COPY of
//! `--rows` rows (`1\n2\n...`), the data cut into messages of exactly that many
//! bytes (the last shorter) wherever the cut falls, as a client's buffer does.
//! Timed by the client from the COPY statement to its CommandComplete; the row
//! count is checked. Each size is copied `--runs` times, the sizes taken in turn
//! (so the machine's drift reaches them alike), and the least kept: noise only
//! adds. Reported: seconds per row, and for Strata the spread of its per-row time
//! over the message sizes (the defect's figure: 1.0 is flat).

use super::seeds::{self, Cluster, Kind};
use super::Record;
use futures::SinkExt;
use std::path::PathBuf;
use std::time::Instant;

#[derive(clap::Args, Clone)]
pub struct Args {
    /// Engines to run, comma-separated: strata, postgres.
    #[arg(long, default_value = "strata,postgres")]
    pub engines: String,
    /// shared_buffers, PostgreSQL units.
    #[arg(long, default_value = "128MB")]
    pub shared_buffers: String,
    /// Rows per COPY.
    #[arg(long, default_value_t = 2_000_000)]
    pub rows: u64,
    /// COPYs of each size; the least time is kept.
    #[arg(long, default_value_t = 5)]
    pub runs: u32,
    /// CopyData message sizes, PostgreSQL units, comma-separated.
    #[arg(long, default_value = "8kB,1MB,16MB")]
    pub message_sizes: String,
    /// Write the records to this file.
    #[arg(long)]
    pub json: Option<PathBuf>,
    /// PostgreSQL's bin directory (initdb, postgres).
    #[arg(long, default_value = "/usr/lib/postgresql/15/bin")]
    pub pg_bin: PathBuf,
}

/// The COPY data: `1\n` to `rows\n`.
fn data(rows: u64) -> Vec<u8> {
    let mut out = Vec::with_capacity(rows as usize * 8);
    for i in 1..=rows {
        out.extend_from_slice(i.to_string().as_bytes());
        out.push(b'\n');
    }
    out
}

/// A message size in bytes: PostgreSQL's units, decimal (16MB is 16,000,000 bytes,
/// under Strata's 16 MiB frame bound and PostgreSQL's 1 GB).
fn message_bytes(s: &str) -> Result<usize, String> {
    let t = s.trim();
    let (num, unit) = t.split_at(t.find(|c: char| !c.is_ascii_digit()).unwrap_or(t.len()));
    let n: usize = num.parse().map_err(|_| format!("bad message size: {s}"))?;
    let m = match unit.trim() {
        "" | "B" => 1,
        "kB" => 1000,
        "MB" => 1_000_000,
        _ => return Err(format!("bad message size: {s}")),
    };
    Ok(n * m)
}

/// One COPY of `data` into a new table, in `size`-byte messages: seconds.
async fn one_copy(
    c: &Cluster,
    name: &str,
    data: &[u8],
    size: usize,
    rows: u64,
) -> Result<f64, String> {
    let client = c.client("postgres").await?;
    let table = format!("copy_{name}");
    client
        .batch_execute(&format!(
            "DROP TABLE IF EXISTS {table}; CREATE TABLE {table} (a int)"
        ))
        .await
        .map_err(seeds::sql_err)?;
    let t0 = Instant::now();
    let sink = client
        .copy_in::<_, bytes::Bytes>(&format!("COPY {table} FROM STDIN"))
        .await
        .map_err(seeds::sql_err)?;
    futures::pin_mut!(sink);
    for chunk in data.chunks(size) {
        sink.send(bytes::Bytes::copy_from_slice(chunk))
            .await
            .map_err(seeds::sql_err)?;
    }
    let n = sink.finish().await.map_err(seeds::sql_err)?;
    let seconds = t0.elapsed().as_secs_f64();
    if n != rows {
        return Err(format!("{}: COPY {n}, expected {rows}", c.kind.name()));
    }
    client
        .batch_execute(&format!("DROP TABLE {table}"))
        .await
        .map_err(seeds::sql_err)?;
    Ok(seconds)
}

/// Runs the comparison; prints a line per COPY, then the ratios.
pub fn run(args: &Args) -> Result<Vec<Record>, String> {
    let seeds_args = seeds::Args::for_clusters(&args.engines, &args.shared_buffers, &args.pg_bin);
    let kinds = seeds::engines(&seeds_args)?;
    let (sb, sb_bytes) = seeds::sizes(&seeds_args)?
        .into_iter()
        .next()
        .ok_or("no shared_buffers size")?;
    let sizes: Vec<(String, usize)> = args
        .message_sizes
        .split(',')
        .map(|s| message_bytes(s).map(|b| (s.trim().to_string(), b)))
        .collect::<Result<_, _>>()?;
    let data = data(args.rows);
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| e.to_string())?;
    println!(
        "COPY of {} rows ({} bytes), shared_buffers {sb}",
        args.rows,
        data.len()
    );
    println!(
        "{:<9} {:>8} {:>10} {:>12}",
        "engine", "message", "seconds", "per row"
    );
    let mut per_row: Vec<(Kind, String, f64)> = Vec::new();
    let mut records = Vec::new();
    for &k in &kinds {
        let root = tempfile::Builder::new()
            .prefix(&format!("strata-copy-{}-", k.name()))
            .tempdir()
            .map_err(|e| e.to_string())?;
        let mut c = Cluster::create(k, root.path(), &sb, &seeds_args)?;
        c.start()?;
        let mut least = vec![f64::INFINITY; sizes.len()];
        for _ in 0..args.runs.max(1) {
            for ((name, bytes), l) in sizes.iter().zip(&mut least) {
                let s =
                    rt.block_on(one_copy(&c, &name.to_lowercase(), &data, *bytes, args.rows))?;
                *l = l.min(s);
            }
        }
        for ((name, _), s) in sizes.iter().zip(least) {
            let pr = s / args.rows as f64;
            println!(
                "{:<9} {name:>8} {:>10} {:>12}",
                k.name(),
                super::format_seconds(s),
                super::format_seconds(pr)
            );
            per_row.push((k, name.clone(), pr));
            records.push(Record {
                bench: "copy",
                case: format!("{} rows in {name} messages", args.rows),
                implementation: k.name(),
                shared_buffers: sb_bytes,
                metric: "seconds_per_op",
                value: pr,
            });
        }
        c.stop()?;
    }
    report(&per_row);
    Ok(records)
}

/// The ratios: each size's Strata / PostgreSQL, and Strata's slowest per-row time
/// over its fastest across sizes.
fn report(per_row: &[(Kind, String, f64)]) {
    let strata: Vec<&(Kind, String, f64)> =
        per_row.iter().filter(|x| x.0 == Kind::Strata).collect();
    for (_, name, s) in &strata {
        let pg = per_row
            .iter()
            .find(|x| x.0 == Kind::Postgres && x.1 == *name);
        if let Some((_, _, p)) = pg {
            println!(
                "{name:>8} messages: strata / postgres time per row {:.2}x",
                s / p
            );
        }
    }
    let times = strata.iter().map(|x| x.2);
    if let (Some(lo), Some(hi)) = (times.clone().reduce(f64::min), times.reduce(f64::max)) {
        println!("strata's slowest / fastest size per row: {:.2}x", hi / lo);
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn message_sizes_read_in_decimal_units() {
        assert_eq!(super::message_bytes("8kB"), Ok(8000));
        assert_eq!(super::message_bytes("16MB"), Ok(16_000_000));
        assert!(super::message_bytes("16GB").is_err());
        assert_eq!(super::data(3), b"1\n2\n3\n");
    }
}
