//! The merge join: both sides sorted ascending on their keys (NULLs last), walked
//! together; the inner rows of the current key held as a group.
//!
//! Rules (cited as "merge rule N"):
//! 1. Keys are compared as ORDER BY compares them (`bind::compare`), the order the
//!    Sorts below gave; a key with a NULL matches nothing and sorts after every
//!    other key.
//! 2. The inner rows of one key are held (the group) while the outer rows of that
//!    key pass; memory is the largest group, not the inner side.
//! 3. The residual condition is tested on each pair of a key; an outer row is
//!    matched if one pair passes it, an inner row likewise (RIGHT, FULL: its
//!    group's flags).
//! 4. An inner row no outer row matched (RIGHT, FULL) is emitted, NULL-extended,
//!    when its group is left behind or skipped over, and those after the last
//!    outer row at the end.

use super::{Ctx, Node, Op, Tuple};
use crate::analyze::JoinKind;
use crate::bind::{compare, Expr};
use crate::{Datum, SqlResult};
use std::cmp::Ordering;
use std::collections::VecDeque;

/// A merge join's operator.
pub(super) struct MergeJoinOp<'a> {
    kind: JoinKind,
    outer: Op<'a>,
    inner: Op<'a>,
    okeys: Vec<usize>,
    ikeys: Vec<usize>,
    cond: &'a Option<Expr>,
    widths: (usize, usize),
    /// The next inner row not yet in a group (read ahead), None at the end.
    ahead: Option<Tuple>,
    started: bool,
    /// The current group's key, its rows and whether each matched (rule 2).
    key: Option<Tuple>,
    group: Vec<Tuple>,
    matched: Vec<bool>,
    /// The outer row being joined: the next group row to try, whether it matched.
    current: Option<(Tuple, usize, bool)>,
    /// Rows ready to be given (unmatched inner rows, rule 4).
    ready: VecDeque<Tuple>,
    done: bool,
}

/// Column positions of keys that are plain columns (the planner makes no other).
fn columns(keys: &[Expr]) -> Vec<usize> {
    keys.iter()
        .map(|k| match k {
            Expr::Col(c) => *c,
            other => unreachable!("a merge key is a column: {other:?}"),
        })
        .collect()
}

/// Rule 1: `a`'s key against `b`'s in the Sorts' order (a NULL after every value).
/// Keys compared equal match only if neither has a NULL, which the caller knows
/// of the outer key it compares with.
fn cmp_keys(a: &[Datum], ak: &[usize], b: &[Datum], bk: &[usize]) -> Ordering {
    for (x, y) in ak.iter().zip(bk) {
        match compare(&a[*x], &b[*y]) {
            Ordering::Equal => continue,
            o => return o,
        }
    }
    Ordering::Equal
}

/// The positions of a group key's own columns.
fn key_cols(k: &[Datum]) -> Vec<usize> {
    (0..k.len()).collect()
}

impl<'a> MergeJoinOp<'a> {
    pub(super) fn new(
        kind: JoinKind,
        (outer, inner): (Op<'a>, Op<'a>),
        (okeys, ikeys): (&[Expr], &[Expr]),
        cond: &'a Option<Expr>,
        widths: (usize, usize),
    ) -> Self {
        MergeJoinOp {
            kind,
            outer,
            inner,
            okeys: columns(okeys),
            ikeys: columns(ikeys),
            cond,
            widths,
            ahead: None,
            started: false,
            key: None,
            group: Vec::new(),
            matched: Vec::new(),
            current: None,
            ready: VecDeque::new(),
            done: false,
        }
    }

    fn keeps_inner(&self) -> bool {
        matches!(self.kind, JoinKind::Right | JoinKind::Full)
    }

    /// An inner row NULL-extended on the left (rule 4).
    fn unmatched(&self, row: Tuple) -> Tuple {
        let mut out = vec![Datum::Null; self.widths.0];
        out.extend(row);
        out
    }

    /// Leaves the current group behind: its unmatched rows made ready (rule 4).
    fn drop_group(&mut self) {
        let group = std::mem::take(&mut self.group);
        let matched = std::mem::take(&mut self.matched);
        self.key = None;
        if self.keeps_inner() {
            for (r, m) in group.into_iter().zip(matched) {
                if !m {
                    let out = self.unmatched(r);
                    self.ready.push_back(out);
                }
            }
        }
    }

    /// Makes the group the inner rows whose key equals outer row `o`'s, skipping
    /// (and making ready, rule 4) those below it.
    fn seek(&mut self, cx: &Ctx<'a>, o: &[Datum]) -> SqlResult<()> {
        if !self.started {
            self.started = true;
            self.ahead = self.inner.next(cx)?;
        }
        if let Some(k) = &self.key {
            if cmp_keys(o, &self.okeys, k, &key_cols(k)) == Ordering::Equal {
                return Ok(());
            }
        }
        self.drop_group();
        while let Some(i) = self.ahead.take() {
            match cmp_keys(&i, &self.ikeys, o, &self.okeys) {
                Ordering::Less => {
                    if self.keeps_inner() {
                        let out = self.unmatched(i);
                        self.ready.push_back(out);
                    }
                    self.ahead = self.inner.next(cx)?;
                }
                Ordering::Equal => {
                    self.key = Some(self.ikeys.iter().map(|c| i[*c].clone()).collect());
                    self.group.push(i);
                    self.ahead = self.inner.next(cx)?;
                    self.fill_group(cx)?;
                    break;
                }
                // Above the outer key: it waits for a later outer row.
                Ordering::Greater => {
                    self.ahead = Some(i);
                    break;
                }
            }
        }
        self.matched = vec![false; self.group.len()];
        Ok(())
    }

    /// Takes the inner rows that follow with the group's key.
    fn fill_group(&mut self, cx: &Ctx<'a>) -> SqlResult<()> {
        while let Some(i) = self.ahead.take() {
            let k = self.key.as_deref().unwrap_or_default();
            if cmp_keys(&i, &self.ikeys, k, &key_cols(k)) != Ordering::Equal {
                self.ahead = Some(i);
                break;
            }
            self.group.push(i);
            if self.group.len().is_multiple_of(1024) {
                (cx.check)()?;
            }
            self.ahead = self.inner.next(cx)?;
        }
        Ok(())
    }

    /// After the last outer row: the rest of the inner side, unmatched (rule 4).
    fn finish(&mut self, cx: &Ctx<'a>) -> SqlResult<()> {
        self.done = true;
        self.drop_group();
        if !self.keeps_inner() {
            return Ok(());
        }
        if !self.started {
            self.started = true;
            self.ahead = self.inner.next(cx)?;
        }
        while let Some(i) = self.ahead.take() {
            let out = self.unmatched(i);
            self.ready.push_back(out);
            self.ahead = self.inner.next(cx)?;
        }
        Ok(())
    }

    /// The outer row's next joined row (rule 3), or None when its group is done.
    fn pair(&mut self, cx: &Ctx<'a>) -> SqlResult<Option<Tuple>> {
        let semi = matches!(self.kind, JoinKind::Semi | JoinKind::Anti);
        let Some((row, at, hit)) = &mut self.current else {
            return Ok(None);
        };
        while *at < self.group.len() {
            let g = *at;
            *at += 1;
            let mut joined = Vec::with_capacity(row.len() + self.widths.1);
            joined.extend_from_slice(row);
            joined.extend_from_slice(&self.group[g]);
            if cx.holds(self.cond, &joined)? {
                *hit = true;
                self.matched[g] = true;
                if semi {
                    // One match settles a semi or anti join's outer row.
                    *at = self.group.len();
                    break;
                }
                return Ok(Some(joined));
            }
        }
        Ok(None)
    }

    /// What an outer row whose pairs are done gives on its own, if anything.
    fn settle(&self, row: Tuple, hit: bool) -> Option<Tuple> {
        match (self.kind, hit) {
            (JoinKind::Semi, true) | (JoinKind::Anti, false) => Some(row),
            (JoinKind::Left | JoinKind::Full, false) => {
                let mut out = row;
                out.resize(self.widths.0 + self.widths.1, Datum::Null);
                Some(out)
            }
            _ => None,
        }
    }
}

impl<'a> Node<'a> for MergeJoinOp<'a> {
    fn next(&mut self, cx: &Ctx<'a>) -> SqlResult<Option<Tuple>> {
        loop {
            if let Some(r) = self.ready.pop_front() {
                return Ok(Some(r));
            }
            if self.done {
                return Ok(None);
            }
            if self.current.is_some() {
                if let Some(j) = self.pair(cx)? {
                    return Ok(Some(j));
                }
                let (row, _, hit) = self.current.take().expect("a current row");
                if let Some(r) = self.settle(row, hit) {
                    return Ok(Some(r));
                }
                continue;
            }
            match self.outer.next(cx)? {
                Some(o) => {
                    if self.okeys.iter().any(|c| o[*c].is_null()) {
                        // Rule 1: it matches nothing (and comes after every other).
                        if let Some(r) = self.settle(o, false) {
                            return Ok(Some(r));
                        }
                        continue;
                    }
                    self.seek(cx, &o)?;
                    self.current = Some((o, 0, false));
                }
                None => self.finish(cx)?,
            }
        }
    }
}
