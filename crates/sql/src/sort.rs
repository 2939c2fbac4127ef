//! ORDER BY: the one part of a SELECT that must hold its input, bounded by
//! `work_mem`.
//!
//! Entry point: [`Sorter`] (`push` each projected row with its sort keys, then
//! `finish`).
//!
//! Rules:
//! 1. Without a bound, rows are kept until the input ends, then sorted (stably: ties
//!    keep their input order). When the rows kept exceed `work_mem` the statement
//!    fails with 53200 "out of memory", its DETAIL naming `work_mem` (Strata does
//!    not spill sorts to temporary files yet); memory stays within `work_mem` plus
//!    one row.
//! 2. With LIMIT n (and OFFSET m) only the best n + m rows are kept, in a bounded
//!    heap (PostgreSQL's top-N heapsort): memory O(n + m) rows however large the
//!    input, and `work_mem` applies to those rows.
//! 3. Row sizes are estimated ([`row_bytes`]): the values' heap bytes plus a fixed
//!    overhead per value and per row, as PostgreSQL counts tuples against
//!    `work_mem`.

use super::bind::compare;
use super::{Datum, SqlError, SqlResult};
use std::cmp::Ordering;
use std::collections::BinaryHeap;

/// A row with its sort keys and input position (the tie-breaker, rule 1).
struct Keyed {
    keys: Vec<Datum>,
    seq: u64,
    vals: Vec<Datum>,
}

/// A [`Keyed`] row in a heap ordered by the sort order (`desc` per key).
struct Ranked<'a> {
    row: Keyed,
    desc: &'a [bool],
}

fn order(a: &Keyed, b: &Keyed, desc: &[bool]) -> Ordering {
    for (i, d) in desc.iter().enumerate() {
        let o = compare(&a.keys[i], &b.keys[i]);
        let o = if *d { o.reverse() } else { o };
        if o != Ordering::Equal {
            return o;
        }
    }
    a.seq.cmp(&b.seq)
}

impl PartialEq for Ranked<'_> {
    fn eq(&self, other: &Self) -> bool {
        self.cmp(other) == Ordering::Equal
    }
}
impl Eq for Ranked<'_> {}
impl PartialOrd for Ranked<'_> {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}
impl Ord for Ranked<'_> {
    fn cmp(&self, other: &Self) -> Ordering {
        order(&self.row, &other.row, self.desc)
    }
}

/// The estimated memory of one value (rule 3).
fn datum_bytes(d: &Datum) -> usize {
    std::mem::size_of::<Datum>()
        + match d {
            Datum::Text(s) => s.len(),
            _ => 0,
        }
}

/// The estimated memory of a row and its keys (rule 3).
pub fn row_bytes(vals: &[Datum], keys: &[Datum]) -> usize {
    std::mem::size_of::<Keyed>() + vals.iter().chain(keys).map(datum_bytes).sum::<usize>()
}

/// An ORDER BY in progress (see the module rules).
pub struct Sorter<'a> {
    desc: &'a [bool],
    /// LIMIT + OFFSET, if any (rule 2).
    bound: Option<usize>,
    work_mem_bytes: usize,
    used_bytes: usize,
    seq: u64,
    rows: Vec<Keyed>,
    /// The kept rows under a bound; its top is the worst of them.
    heap: BinaryHeap<Ranked<'a>>,
}

impl<'a> Sorter<'a> {
    pub fn new(desc: &'a [bool], bound: Option<usize>, work_mem_bytes: usize) -> Sorter<'a> {
        Sorter {
            desc,
            bound,
            work_mem_bytes,
            used_bytes: 0,
            seq: 0,
            rows: Vec::new(),
            heap: BinaryHeap::new(),
        }
    }

    /// Adds one row. Err 53200 when the rows kept exceed `work_mem` (rule 1).
    pub fn push(&mut self, vals: Vec<Datum>, keys: Vec<Datum>) -> SqlResult<()> {
        let bytes = row_bytes(&vals, &keys);
        let row = Keyed {
            keys,
            seq: self.seq,
            vals,
        };
        self.seq += 1;
        match self.bound {
            Some(0) => return Ok(()),
            Some(n) if self.heap.len() >= n => {
                let worst = self.heap.peek().map(|r| &r.row);
                if worst.is_some_and(|w| order(&row, w, self.desc) == Ordering::Less) {
                    if let Some(out) = self.heap.pop() {
                        self.used_bytes -= row_bytes(&out.row.vals, &out.row.keys);
                    }
                } else {
                    return Ok(());
                }
                self.heap.push(Ranked {
                    row,
                    desc: self.desc,
                });
            }
            Some(_) => self.heap.push(Ranked {
                row,
                desc: self.desc,
            }),
            None => self.rows.push(row),
        }
        self.used_bytes += bytes;
        if self.used_bytes > self.work_mem_bytes {
            return Err(out_of_work_mem(self.work_mem_bytes));
        }
        Ok(())
    }

    /// The rows in order (the best `bound` of them under a bound).
    pub fn finish(self) -> Vec<Vec<Datum>> {
        let mut rows = if self.bound.is_some() {
            self.heap.into_iter().map(|r| r.row).collect()
        } else {
            self.rows
        };
        let desc = self.desc;
        rows.sort_by(|a, b| order(a, b, desc));
        rows.into_iter().map(|r| r.vals).collect()
    }
}

/// 53200, with the DETAIL that names the limit (rule 1).
fn out_of_work_mem(work_mem_bytes: usize) -> SqlError {
    SqlError::new("53200", "out of memory")
        .with_detail(format!(
            "Sorting needs more than work_mem ({}kB), and Strata does not spill sorts to temporary files.",
            work_mem_bytes / 1024
        ))
        .with_hint("Raise work_mem (SET work_mem = '64MB'), or add a LIMIT.")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(vals: &[i32], desc: bool, bound: Option<usize>) -> Vec<i32> {
        let d = [desc];
        let mut s = Sorter::new(&d, bound, 1 << 20);
        for v in vals {
            s.push(vec![Datum::Int4(*v)], vec![Datum::Int4(*v)])
                .unwrap();
        }
        s.finish()
            .into_iter()
            .map(|r| match r[0] {
                Datum::Int4(v) => v,
                _ => unreachable!(),
            })
            .collect()
    }

    #[test]
    fn top_n_keeps_the_best_rows_in_order() {
        let v: Vec<i32> = (0..1000).map(|i| (i * 7919) % 1000).collect();
        assert_eq!(run(&v, false, Some(3)), vec![0, 1, 2]);
        assert_eq!(run(&v, true, Some(2)), vec![999, 998]);
        assert_eq!(run(&v, false, None).len(), 1000);
        assert!(run(&v, false, Some(0)).is_empty());
    }

    #[test]
    fn beyond_work_mem_is_53200_with_a_detail() {
        let d = [false];
        let mut s = Sorter::new(&d, None, 64 * 1024);
        let e = (0..100_000)
            .find_map(|i| s.push(vec![Datum::Int8(i)], vec![Datum::Int8(i)]).err())
            .unwrap();
        assert_eq!(e.code, "53200");
        assert!(e.detail.clone().unwrap().contains("work_mem"));
    }

    /// Sorts (key, tag) rows by key with `desc`, optionally bounded; the tags.
    fn tags(rows: &[(Datum, u32)], desc: &[bool], bound: Option<usize>) -> Vec<u32> {
        let mut s = Sorter::new(desc, bound, 1 << 20);
        for (k, tag) in rows {
            s.push(vec![Datum::Int8(i64::from(*tag))], vec![k.clone()])
                .unwrap();
        }
        s.finish()
            .into_iter()
            .map(|r| match r[0] {
                Datum::Int8(t) => t as u32,
                _ => unreachable!(),
            })
            .collect()
    }

    #[test]
    fn ties_keep_their_input_order_with_or_without_a_bound() {
        let rows: Vec<(Datum, u32)> = (0..50).map(|i| (Datum::Int4(i % 3), i as u32)).collect();
        let all = tags(&rows, &[false], None);
        let want: Vec<u32> = (0..3)
            .flat_map(|k| (0..50).filter(move |i| i % 3 == k))
            .collect();
        assert_eq!(all, want);
        assert_eq!(tags(&rows, &[false], Some(5)), want[..5]);
        let desc = tags(&rows, &[true], Some(4));
        assert_eq!(
            desc,
            [2, 5, 8, 11],
            "descending keys, ties still in input order"
        );
    }

    #[test]
    fn nulls_sort_last_ascending_and_first_descending_as_postgres() {
        let rows = [(Datum::Int4(2), 0), (Datum::Null, 1), (Datum::Int4(1), 2)];
        assert_eq!(tags(&rows, &[false], None), [2, 0, 1]);
        assert_eq!(tags(&rows, &[true], None), [1, 0, 2]);
        assert_eq!(tags(&rows, &[true], Some(1)), [1]);
        assert_eq!(tags(&rows, &[false], Some(2)), [2, 0]);
    }

    #[test]
    fn several_keys_each_with_its_direction() {
        let mut s = Sorter::new(&[false, true], None, 1 << 20);
        for (a, b) in [(1, 1), (0, 5), (1, 3), (0, 7), (1, 2)] {
            let keys = vec![Datum::Int4(a), Datum::Int4(b)];
            s.push(keys.clone(), keys).unwrap();
        }
        let got: Vec<Vec<Datum>> = s.finish();
        let want: Vec<Vec<Datum>> = [(0, 7), (0, 5), (1, 3), (1, 2), (1, 1)]
            .iter()
            .map(|(a, b)| vec![Datum::Int4(*a), Datum::Int4(*b)])
            .collect();
        assert_eq!(got, want);
    }

    #[test]
    fn a_bound_keeps_memory_to_its_rows_however_long_the_input() {
        // work_mem holds about 10 rows: unbounded, the sort fails; with LIMIT 5 it
        // never holds more than 5 and succeeds over 100,000 rows (rule 2).
        let one = row_bytes(&[Datum::Int8(0)], &[Datum::Int8(0)]);
        let work_mem = 10 * one;
        let mut unbounded = Sorter::new(&[false], None, work_mem);
        assert!((0..100_000).any(|i| unbounded
            .push(vec![Datum::Int8(i)], vec![Datum::Int8(i)])
            .is_err()));
        let mut top = Sorter::new(&[true], Some(5), work_mem);
        for i in 0..100_000 {
            top.push(vec![Datum::Int8(i)], vec![Datum::Int8(i)])
                .unwrap();
        }
        let got: Vec<Datum> = top.finish().into_iter().map(|mut r| r.remove(0)).collect();
        assert_eq!(
            got,
            (99_995..100_000).rev().map(Datum::Int8).collect::<Vec<_>>()
        );
        // A bound whose rows do not fit is 53200 as well.
        let mut big = Sorter::new(&[false], Some(20), work_mem);
        let e = (0..100).find_map(|i| big.push(vec![Datum::Int8(i)], vec![Datum::Int8(i)]).err());
        assert_eq!(e.map(|e| e.code), Some("53200"));
    }
}
