//! The merge join: both sides sorted ascending on their keys (NULLs last), walked
//! together; the inner rows of the current key held as a group.
//!
//! Rules (cited as "merge rule N"):
//! 1. Keys are compared as ORDER BY compares them (`bind::compare`, a NULL after
//!    every value, column by column), the order the Sorts below gave; a key with a
//!    NULL matches nothing.
//! 2. The inner rows of one key are held (the group) while the outer rows of that
//!    key pass, within hash_mem (53200 past it, as a nested loop's inner side);
//!    nothing else is held: rows skipped over are given one at a time.
//! 3. The residual condition is tested on each pair of a key; an outer row is
//!    matched if one pair passes it, an inner row likewise (RIGHT, FULL: its
//!    group's flags).
//! 4. An inner row no outer row matched (RIGHT, FULL) is given, NULL-extended,
//!    when its group is left behind or it is skipped over, and those after the
//!    last outer row at the end. Reading the inner side checks for interrupts
//!    every 1024 rows.

use super::{Ctx, Meter, Node, Op, Tuple};
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
    /// The outer row whose group is being found (rule 4's skipped rows given
    /// one at a time meanwhile).
    seeking: Option<Tuple>,
    /// A left-behind group's unmatched rows, ready to be given (rule 4).
    ready: VecDeque<Tuple>,
    /// Inner rows read (the interrupts are checked every 1024).
    read: u64,
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
            seeking: None,
            ready: VecDeque::new(),
            read: 0,
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

    /// Leaves the current group behind: its unmatched rows made ready (rule 4;
    /// as many as the group held, which rule 2 bounds).
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

    /// The next inner row, read ahead; the interrupts checked every 1024 rows.
    fn advance(&mut self, cx: &Ctx<'a>) -> SqlResult<()> {
        self.read += 1;
        if self.read.is_multiple_of(1024) {
            (cx.check)()?;
        }
        self.ahead = self.inner.next(cx)?;
        Ok(())
    }

    /// Starts finding the group of outer row `o`: none to find if the held group
    /// has its key (it serves `o` too); else that group is left behind.
    fn start_seek(&mut self, cx: &Ctx<'a>, o: &[Datum]) -> SqlResult<bool> {
        if !self.started {
            self.started = true;
            self.ahead = self.inner.next(cx)?;
        }
        if let Some(k) = &self.key {
            if cmp_keys(o, &self.okeys, k, &key_cols(k)) == Ordering::Equal {
                return Ok(false);
            }
        }
        self.drop_group();
        Ok(true)
    }

    /// One step of finding outer row `o`'s group: an inner row below its key that
    /// a RIGHT or FULL join gives unmatched (rule 4), one at a time; or None once
    /// the group (the inner rows with `o`'s key, perhaps none) is held.
    fn seek_step(&mut self, cx: &Ctx<'a>, o: &[Datum]) -> SqlResult<Option<Tuple>> {
        while let Some(i) = self.ahead.take() {
            match cmp_keys(&i, &self.ikeys, o, &self.okeys) {
                Ordering::Less => {
                    self.advance(cx)?;
                    if self.keeps_inner() {
                        return Ok(Some(self.unmatched(i)));
                    }
                }
                Ordering::Equal => {
                    self.key = Some(self.ikeys.iter().map(|c| i[*c].clone()).collect());
                    self.fill_group(cx, i)?;
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
        Ok(None)
    }

    /// Holds `first` and the inner rows that follow with its key, within hash_mem
    /// (rule 2: 53200 past it, as a nested loop's inner side).
    fn fill_group(&mut self, cx: &Ctx<'a>, first: Tuple) -> SqlResult<()> {
        let mut meter = Meter::new(cx, "The inner rows of one key of a merge join");
        meter.hold(&first, 0)?;
        self.group.push(first);
        self.advance(cx)?;
        while let Some(i) = self.ahead.take() {
            let k = self.key.as_deref().unwrap_or_default();
            if cmp_keys(&i, &self.ikeys, k, &key_cols(k)) != Ordering::Equal {
                self.ahead = Some(i);
                break;
            }
            meter.hold(&i, 0)?;
            self.group.push(i);
            self.advance(cx)?;
        }
        Ok(())
    }

    /// After the last outer row: the rest of the inner side, unmatched (rule 4),
    /// one at a time.
    fn tail(&mut self, cx: &Ctx<'a>) -> SqlResult<Option<Tuple>> {
        if !self.keeps_inner() {
            return Ok(None);
        }
        if !self.started {
            self.started = true;
            self.ahead = self.inner.next(cx)?;
        }
        match self.ahead.take() {
            Some(i) => {
                self.advance(cx)?;
                Ok(Some(self.unmatched(i)))
            }
            None => Ok(None),
        }
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
                return self.tail(cx);
            }
            if let Some(o) = self.seeking.take() {
                match self.seek_step(cx, &o)? {
                    Some(skipped) => {
                        self.seeking = Some(o);
                        return Ok(Some(skipped));
                    }
                    None => self.current = Some((o, 0, false)),
                }
                continue;
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
                // Rule 1: a NULL in its key matches nothing.
                Some(o) if self.okeys.iter().any(|c| o[*c].is_null()) => {
                    if let Some(r) = self.settle(o, false) {
                        return Ok(Some(r));
                    }
                }
                Some(o) => match self.start_seek(cx, &o)? {
                    true => self.seeking = Some(o),
                    false => self.current = Some((o, 0, false)),
                },
                None => {
                    self.done = true;
                    self.drop_group();
                }
            }
        }
    }
}
