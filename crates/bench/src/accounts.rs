//! The single-table suite of `strata bench queries --suite accounts` (issue 28's
//! "must show"): pgbench's `pgbench_accounts` at a pgbench scale (100,000 rows per
//! unit) and the queries an application runs on one table — a full count, sums
//! and extremes, a top-N sort, an index range, an ordered LIMIT through the key,
//! min/max of the key, a key lookup and a grouping.
//!
//! The rows are pgbench's shape with balances spread deterministically
//! (`abalance = (aid * 7919) % 20001 - 10000`, so every ORDER BY here has one
//! answer), generated in process and sent by COPY to both engines alike; the
//! primary key is added after the load, as `pgbench -i` does.

/// The table, as `pgbench -i` makes it (before its primary key).
pub const SCHEMA: &str = "CREATE TABLE pgbench_accounts (aid integer NOT NULL, \
    bid integer, abalance integer, filler char(84))";

/// The primary key, added after the rows.
pub const INDEX: &str = "ALTER TABLE pgbench_accounts ADD PRIMARY KEY (aid)";

/// The queries, numbered from 1.
pub const QUERIES: [&str; 8] = [
    "SELECT count(*) FROM pgbench_accounts",
    "SELECT sum(abalance), min(abalance), max(abalance) FROM pgbench_accounts",
    "SELECT aid, abalance FROM pgbench_accounts ORDER BY abalance DESC, aid LIMIT 5",
    "SELECT count(*) FROM pgbench_accounts WHERE aid BETWEEN 200001 AND 300000",
    "SELECT aid, abalance FROM pgbench_accounts WHERE abalance = 0 ORDER BY aid DESC LIMIT 10",
    "SELECT min(aid), max(aid) FROM pgbench_accounts",
    "SELECT abalance FROM pgbench_accounts WHERE aid = 123457",
    "SELECT bid, count(*), sum(abalance) FROM pgbench_accounts GROUP BY bid ORDER BY bid",
];

/// Query `q` (1-based).
pub fn query(q: u32) -> Result<String, String> {
    QUERIES
        .get((q as usize).wrapping_sub(1))
        .map(|s| s.to_string())
        .ok_or_else(|| format!("no accounts query {q}"))
}

/// The rows at pgbench scale `scale`, as COPY text (the filler empty, as pgbench
/// sends it), in chunks of about `chunk` bytes; how many.
pub fn rows(
    scale: f64,
    chunk: usize,
    send: &mut dyn FnMut(Vec<u8>) -> Result<(), String>,
) -> Result<u64, String> {
    let n = (scale * 100_000.0).round() as u64;
    let mut buf = Vec::with_capacity(chunk + 64);
    for aid in 1..=n {
        let bid = (aid - 1) / 100_000 + 1;
        let abalance = (aid * 7919 % 20001) as i64 - 10_000;
        buf.extend_from_slice(format!("{aid}\t{bid}\t{abalance}\t\n").as_bytes());
        if buf.len() >= chunk {
            send(std::mem::replace(&mut buf, Vec::with_capacity(chunk + 64)))?;
        }
    }
    if !buf.is_empty() {
        send(buf)?;
    }
    Ok(n)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rows_are_pgbench_shaped_and_balances_spread() {
        let mut text = Vec::new();
        let n = rows(0.01, 100, &mut |b| {
            text.extend(b);
            Ok(())
        })
        .unwrap();
        assert_eq!(n, 1000);
        let text = String::from_utf8(text).unwrap();
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines.len(), 1000);
        assert_eq!(lines[0], "1\t1\t-2081\t");
        assert!(query(8).unwrap().contains("GROUP BY bid"));
        assert!(query(9).is_err() && query(0).is_err());
    }
}
