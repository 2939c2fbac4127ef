//! TPC-H as data for `strata bench queries`: the schema, the rows (generated in
//! process by the `tpchgen` crate, a port of the specification's dbgen), the indexes
//! both engines get, and the 22 queries with the specification's default
//! substitution parameters (its "validation" values, §2.4).
//!
//! The query text is `tpchgen`'s copy of the specification's templates; this module
//! only substitutes the parameters, adds the row limits the specification gives
//! outside the text (Q2, Q3, Q10, Q18, Q21), and writes `interval '90' day (3)` as
//! `interval '90' day`, the form PostgreSQL's grammar takes (as every PostgreSQL
//! TPC-H kit does). Both engines are sent the same text.

use std::fmt::Display;
use tpchgen::generators::{
    CustomerGenerator, LineItemGenerator, NationGenerator, OrderGenerator, PartGenerator,
    PartSuppGenerator, RegionGenerator, SupplierGenerator,
};

/// The tables in load order.
pub const TABLES: [&str; 8] = [
    "region", "nation", "part", "supplier", "partsupp", "customer", "orders", "lineitem",
];

/// The schema (specification §1.4, identifiers as integer).
pub const SCHEMA: &str = "
CREATE TABLE region (r_regionkey integer NOT NULL, r_name char(25) NOT NULL,
  r_comment varchar(152));
CREATE TABLE nation (n_nationkey integer NOT NULL, n_name char(25) NOT NULL,
  n_regionkey integer NOT NULL, n_comment varchar(152));
CREATE TABLE part (p_partkey integer NOT NULL, p_name varchar(55) NOT NULL,
  p_mfgr char(25) NOT NULL, p_brand char(10) NOT NULL, p_type varchar(25) NOT NULL,
  p_size integer NOT NULL, p_container char(10) NOT NULL,
  p_retailprice decimal(15,2) NOT NULL, p_comment varchar(23) NOT NULL);
CREATE TABLE supplier (s_suppkey integer NOT NULL, s_name char(25) NOT NULL,
  s_address varchar(40) NOT NULL, s_nationkey integer NOT NULL, s_phone char(15) NOT NULL,
  s_acctbal decimal(15,2) NOT NULL, s_comment varchar(101) NOT NULL);
CREATE TABLE partsupp (ps_partkey integer NOT NULL, ps_suppkey integer NOT NULL,
  ps_availqty integer NOT NULL, ps_supplycost decimal(15,2) NOT NULL,
  ps_comment varchar(199) NOT NULL);
CREATE TABLE customer (c_custkey integer NOT NULL, c_name varchar(25) NOT NULL,
  c_address varchar(40) NOT NULL, c_nationkey integer NOT NULL, c_phone char(15) NOT NULL,
  c_acctbal decimal(15,2) NOT NULL, c_mktsegment char(10) NOT NULL,
  c_comment varchar(117) NOT NULL);
CREATE TABLE orders (o_orderkey integer NOT NULL, o_custkey integer NOT NULL,
  o_orderstatus char(1) NOT NULL, o_totalprice decimal(15,2) NOT NULL,
  o_orderdate date NOT NULL, o_orderpriority char(15) NOT NULL, o_clerk char(15) NOT NULL,
  o_shippriority integer NOT NULL, o_comment varchar(79) NOT NULL);
CREATE TABLE lineitem (l_orderkey integer NOT NULL, l_partkey integer NOT NULL,
  l_suppkey integer NOT NULL, l_linenumber integer NOT NULL,
  l_quantity decimal(15,2) NOT NULL, l_extendedprice decimal(15,2) NOT NULL,
  l_discount decimal(15,2) NOT NULL, l_tax decimal(15,2) NOT NULL,
  l_returnflag char(1) NOT NULL, l_linestatus char(1) NOT NULL, l_shipdate date NOT NULL,
  l_commitdate date NOT NULL, l_receiptdate date NOT NULL, l_shipinstruct char(25) NOT NULL,
  l_shipmode char(10) NOT NULL, l_comment varchar(44) NOT NULL);
";

/// The indexes, built after the load: the specification's primary keys, and the
/// foreign-key columns the queries' correlated subqueries and joins look up by
/// (the usual PostgreSQL TPC-H kit's choice).
pub const INDEXES: [&str; 12] = [
    "ALTER TABLE region ADD PRIMARY KEY (r_regionkey)",
    "ALTER TABLE nation ADD PRIMARY KEY (n_nationkey)",
    "ALTER TABLE part ADD PRIMARY KEY (p_partkey)",
    "ALTER TABLE supplier ADD PRIMARY KEY (s_suppkey)",
    "ALTER TABLE partsupp ADD PRIMARY KEY (ps_partkey, ps_suppkey)",
    "ALTER TABLE customer ADD PRIMARY KEY (c_custkey)",
    "ALTER TABLE orders ADD PRIMARY KEY (o_orderkey)",
    "ALTER TABLE lineitem ADD PRIMARY KEY (l_orderkey, l_linenumber)",
    "CREATE INDEX lineitem_part_supp ON lineitem (l_partkey, l_suppkey)",
    "CREATE INDEX orders_cust ON orders (o_custkey)",
    "CREATE INDEX partsupp_supp ON partsupp (ps_suppkey)",
    "CREATE INDEX customer_nation ON customer (c_nationkey)",
];

/// Calls `send` with COPY text (`|`-delimited) for `table` at scale factor `sf`,
/// about `chunk` bytes at a time; the number of rows.
pub fn rows(
    table: &str,
    sf: f64,
    chunk: usize,
    send: &mut dyn FnMut(Vec<u8>) -> Result<(), String>,
) -> Result<u64, String> {
    let mut buf = Chunker {
        out: Vec::with_capacity(chunk + 512),
        chunk,
        rows: 0,
        send,
    };
    match table {
        "region" => buf.all(RegionGenerator::new(sf, 1, 1).iter())?,
        "nation" => buf.all(NationGenerator::new(sf, 1, 1).iter())?,
        "part" => buf.all(PartGenerator::new(sf, 1, 1).iter())?,
        "supplier" => buf.all(SupplierGenerator::new(sf, 1, 1).iter())?,
        "partsupp" => buf.all(PartSuppGenerator::new(sf, 1, 1).iter())?,
        "customer" => buf.all(CustomerGenerator::new(sf, 1, 1).iter())?,
        "orders" => buf.all(OrderGenerator::new(sf, 1, 1).iter())?,
        "lineitem" => buf.all(LineItemGenerator::new(sf, 1, 1).iter())?,
        other => return Err(format!("no TPC-H table {other}")),
    }
    buf.flush()?;
    Ok(buf.rows)
}

struct Chunker<'a> {
    out: Vec<u8>,
    chunk: usize,
    rows: u64,
    send: &'a mut dyn FnMut(Vec<u8>) -> Result<(), String>,
}

impl Chunker<'_> {
    /// Every row of `it` in the TBL form less its closing `|`.
    fn all<T: Display>(&mut self, it: impl Iterator<Item = T>) -> Result<(), String> {
        use std::io::Write;
        for row in it {
            write!(self.out, "{row}").map_err(|e| e.to_string())?;
            if self.out.last() == Some(&b'|') {
                self.out.pop();
            }
            self.out.push(b'\n');
            self.rows += 1;
            if self.out.len() >= self.chunk {
                self.flush()?;
            }
        }
        Ok(())
    }

    fn flush(&mut self) -> Result<(), String> {
        if self.out.is_empty() {
            return Ok(());
        }
        let full = std::mem::replace(&mut self.out, Vec::with_capacity(self.chunk + 512));
        (self.send)(full)
    }
}

/// The specification's default substitution parameters, `:1` onwards, per query.
fn parameters(q: u32) -> &'static [&'static str] {
    match q {
        1 => &["90"],
        2 => &["15", "BRASS", "EUROPE"],
        3 => &["BUILDING", "1995-03-15"],
        4 => &["1993-07-01"],
        5 => &["ASIA", "1994-01-01"],
        6 => &["1994-01-01", "0.06", "24"],
        7 => &["FRANCE", "GERMANY"],
        8 => &["BRAZIL", "AMERICA", "ECONOMY ANODIZED STEEL"],
        9 => &["green"],
        10 => &["1993-10-01"],
        11 => &["GERMANY", "0.0001"],
        12 => &["MAIL", "SHIP", "1994-01-01"],
        13 => &["special", "requests"],
        14 => &["1995-09-01"],
        15 => &["1996-01-01"],
        16 => &[
            "Brand#45",
            "MEDIUM POLISHED",
            "49",
            "14",
            "23",
            "45",
            "19",
            "3",
            "36",
            "9",
        ],
        17 => &["Brand#23", "MED BOX"],
        18 => &["300"],
        19 => &["Brand#12", "Brand#23", "Brand#34", "1", "10", "20"],
        20 => &["forest", "1994-01-01", "CANADA"],
        21 => &["SAUDI ARABIA"],
        22 => &["13", "31", "23", "29", "30", "18", "17"],
        _ => &[],
    }
}

/// The row limit the specification puts on a query's answer.
fn limit(q: u32) -> Option<u32> {
    match q {
        2 | 18 | 21 => Some(100),
        3 => Some(10),
        10 => Some(20),
        _ => None,
    }
}

/// Query `q` (1..=22) as sent to both engines: one or more statements (Q15 creates
/// its view, selects, drops the view).
pub fn query(q: u32) -> Result<String, String> {
    let template =
        tpchgen::q_and_a::queries::query(q as i32).ok_or_else(|| format!("no TPC-H query {q}"))?;
    let mut text = template.trim().replace("day (3)", "day");
    let params = parameters(q);
    // `:10` before `:1`.
    for (i, p) in params.iter().enumerate().rev() {
        text = text.replace(&format!(":{}", i + 1), p);
    }
    text = text.replace("revenue:s", "revenue0");
    if let Some(n) = limit(q) {
        let body = text.trim_end().trim_end_matches(';');
        text = format!("{body}\nlimit {n};");
    }
    Ok(text)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn queries_have_every_parameter_substituted() {
        for q in 1..=22 {
            let text = query(q).unwrap();
            let stray = text.char_indices().any(|(i, c)| {
                c == ':' && text[i + 1..].starts_with(|d: char| d.is_ascii_alphanumeric())
            });
            assert!(!stray, "Q{q} keeps a placeholder:\n{text}");
        }
        assert!(query(16)
            .unwrap()
            .contains("(49, 14, 23, 45, 19, 3, 36, 9)"));
        assert!(query(1).unwrap().contains("interval '90' day\n"));
        assert!(query(3).unwrap().ends_with("limit 10;"));
        assert!(query(15).unwrap().contains("drop view revenue0"));
        assert!(query(23).is_err());
    }

    #[test]
    fn rows_come_as_copy_text() {
        let mut text = Vec::new();
        let n = rows("nation", 0.01, 1 << 20, &mut |b| {
            text.extend(b);
            Ok(())
        })
        .unwrap();
        assert_eq!(n, 25);
        let text = String::from_utf8(text).unwrap();
        let first = text.lines().next().unwrap();
        assert!(first.starts_with("0|ALGERIA|0|"), "{first}");
        assert_eq!(first.matches('|').count(), 3, "{first}");
    }
}
