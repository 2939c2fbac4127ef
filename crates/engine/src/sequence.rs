//! Sequences: a one-page relation whose single tuple — `last_value`, `log_cnt`,
//! `is_called`, as PostgreSQL's — changes in place, outside every transaction.
//!
//! Entry points: [`format`] (the first page, in the creating transaction),
//! [`nextval`], [`setval`], [`columns`]; [`seq_redo`] replays `Sequence/LOG`.
//!
//! Rules (cited as "sequence rule N"):
//! 1. Values are not transactional: nextval and setval change the page under its
//!    content lock, which serializes every caller, and nothing undoes them. A value
//!    handed out is never handed out again, whether its transaction commits or not
//!    (PostgreSQL's).
//! 2. The WAL runs ahead of the page: a nextval that logs records the state
//!    [`SEQ_LOG_VALS`] values further on, while the page keeps the real state and
//!    counts the values logged ahead (`log_cnt`); the calls after it change only
//!    the page until those are used up. Crash recovery restores the logged state,
//!    so values may be skipped, never repeated. A nextval also logs when the
//!    page's LSN is at or before the redo point: a checkpoint may have written the
//!    page with values handed out after its last record, and replay starts past it.
//!    The decision and the insert happen under the redo-pointer lock (engine rule 2).
//! 3. Every `Sequence/LOG` record carries the whole page as logged: replay restores
//!    it, so no full-page-image decision is needed and no torn page survives.
//! 4. The record behind a value is durable before the value can be relied on: a
//!    caller inside a transaction with an xid has it flushed by its commit (which
//!    flushes past it) or its abort (`Shared::seq_lsn`: PostgreSQL leaves the
//!    values an aborted transaction saw to chance); every other caller flushes it
//!    before returning.
//! 5. The page is a heap page holding one tuple of the bootstrap transaction
//!    (visible to every snapshot), so `SELECT * FROM s` reads it as a table.

use crate::access::ZERO_PAGE;
use crate::catalog::SeqDef;
use crate::codec::DecodeError;
use crate::heap::{self, ColType, Column, Datum};
use crate::records::{BlockRef, RM_SEQ};
use crate::redo::{unknown_record, RedoContext};
use crate::{corrupt, EngineError, Result, Shared};
use strata_buffer::ReadMode;
use strata_page::PageBuf;
use strata_types::{BlockNumber, BufferTag, ForkNumber, Lsn, RelKey, Xid};
use strata_wal::Record;

/// `Sequence/LOG`: a [`BlockRef`] with the page's image (rule 3).
pub const SEQ_LOG: u8 = 0x00;

/// Values logged ahead of the one handed out (PostgreSQL's SEQ_LOG_VALS).
pub const SEQ_LOG_VALS: i64 = 32;

/// The columns of a sequence's tuple, as PostgreSQL shows them.
pub fn columns() -> Vec<Column> {
    vec![
        Column::new("last_value", ColType::Int8),
        Column::new("log_cnt", ColType::Int8),
        Column::new("is_called", ColType::Bool),
    ]
}

/// A sequence's state: its tuple.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SeqState {
    pub last_value: i64,
    pub log_cnt: i64,
    pub is_called: bool,
}

fn tag(rel: RelKey) -> BufferTag {
    BufferTag::new(rel, ForkNumber::Main, BlockNumber(0))
}

/// The page holding `st` alone (deterministic: replay and primary agree).
fn write_state(page: &mut PageBuf, st: SeqState) {
    *page = ZERO_PAGE;
    strata_page::init(page, 0);
    let values = [
        Datum::Int8(st.last_value),
        Datum::Int8(st.log_cnt),
        Datum::Bool(st.is_called),
    ];
    let t = heap::encode_tuple(Xid::BOOTSTRAP, &columns(), &values);
    heap::page_insert(page, &t).expect("a sequence tuple fits an empty page");
}

fn read_state(page: &PageBuf, rel: RelKey) -> Result<SeqState> {
    let bad = || corrupt(format!("sequence {rel:?} has no valid tuple"));
    let tuples = heap::page_tuples(page).map_err(|_| bad())?;
    let (_, t) = tuples.first().ok_or_else(bad)?;
    match heap::decode_values(&columns(), t).map_err(|_| bad())?[..] {
        [Datum::Int8(last_value), Datum::Int8(log_cnt), Datum::Bool(is_called)] => Ok(SeqState {
            last_value,
            log_cnt,
            is_called,
        }),
        _ => Err(bad()),
    }
}

/// Rule 3: logs `logged` as the page's whole content and sets the page LSN. The
/// caller holds the page's content lock exclusively and the redo-pointer lock.
fn log_state(
    sh: &Shared,
    rel: RelKey,
    page: &mut PageBuf,
    logged: SeqState,
    xid: Xid,
) -> Result<Lsn> {
    if rel.is_temp() {
        return Ok(Lsn(0)); // never logged (smgr rule 8)
    }
    let mut img = Box::new(ZERO_PAGE);
    write_state(&mut img, logged);
    let mut e = crate::codec::Enc::new();
    BlockRef {
        tag: tag(rel),
        will_init: false,
        image: Some(img),
    }
    .encode(&mut e);
    let (_, end) = sh.wal_insert(RM_SEQ, SEQ_LOG, xid.0, &e.0)?;
    strata_page::set_lsn(page, end);
    Ok(end)
}

/// The first page of a new sequence (its file just created by `xid`): `start`,
/// not yet called, logged.
pub(crate) fn format(sh: &Shared, rel: RelKey, start: i64, xid: Xid) -> Result<()> {
    if sh.smgr.nblocks(rel, ForkNumber::Main)? != 0 {
        return Err(corrupt(format!("sequence {rel:?} is not new")));
    }
    sh.smgr
        .extend(rel, ForkNumber::Main, BlockNumber(0), &ZERO_PAGE)?;
    let buf = sh.pool.read_buffer(tag(rel), ReadMode::Zero)?;
    let mut g = buf.write();
    let st = SeqState {
        last_value: start,
        log_cnt: 0,
        is_called: false,
    };
    write_state(&mut g, st);
    buf.mark_dirty(&g);
    let _redo = sh.redo_ptr.read();
    log_state(sh, rel, &mut g, st, xid)?;
    Ok(())
}

/// The value after `v`, or `None` at the bound of a sequence that does not cycle.
fn step(def: &SeqDef, v: i64) -> Option<i64> {
    let next = v.checked_add(def.increment);
    let within = next.filter(|n| (def.min..=def.max).contains(n));
    match (within, def.cycle) {
        (Some(n), _) => Some(n),
        (None, true) if def.increment > 0 => Some(def.min),
        (None, true) => Some(def.max),
        (None, false) => None,
    }
}

/// PostgreSQL's 2200H for a sequence at its bound.
fn limit_error(def: &SeqDef, name: &str) -> EngineError {
    let (which, v) = if def.increment > 0 {
        ("maximum", def.max)
    } else {
        ("minimum", def.min)
    };
    EngineError::SequenceLimit(format!(
        "nextval: reached {which} value of sequence \"{name}\" ({v})"
    ))
}

/// The next value of sequence `name` stored in `rel` (rules 1 and 2), and the end
/// of the record it wrote, if it logged (rule 4 is the caller's).
pub(crate) fn nextval(
    sh: &Shared,
    rel: RelKey,
    def: &SeqDef,
    name: &str,
) -> Result<(i64, Option<Lsn>)> {
    let buf = sh.pool.read_buffer(tag(rel), ReadMode::Normal)?;
    let mut g = buf.write();
    let st = read_state(&g, rel)?;
    let value = if st.is_called {
        step(def, st.last_value).ok_or_else(|| limit_error(def, name))?
    } else {
        st.last_value
    };
    let redo = sh.redo_ptr.read();
    let logit = st.log_cnt <= 0 || !st.is_called || strata_page::lsn(&g) <= *redo;
    if !logit {
        let next = SeqState {
            last_value: value,
            log_cnt: st.log_cnt - 1,
            is_called: true,
        };
        write_state_keep_lsn(&mut g, next);
        buf.mark_dirty(&g);
        return Ok((value, None));
    }
    let (mut ahead, mut n) = (value, 0);
    while n < SEQ_LOG_VALS {
        match step(def, ahead) {
            Some(v) => (ahead, n) = (v, n + 1),
            None => break,
        }
    }
    let logged = SeqState {
        last_value: ahead,
        log_cnt: 0,
        is_called: true,
    };
    let now = SeqState {
        last_value: value,
        log_cnt: n,
        is_called: true,
    };
    write_state_keep_lsn(&mut g, now);
    buf.mark_dirty(&g);
    let end = log_state(sh, rel, &mut g, logged, Xid::INVALID)?;
    Ok((value, Some(end)))
}

/// [`write_state`], keeping the page's LSN (the page changes without a record).
fn write_state_keep_lsn(page: &mut PageBuf, st: SeqState) {
    let lsn = strata_page::lsn(page);
    write_state(page, st);
    strata_page::set_lsn(page, lsn);
}

/// setval: the sequence's state becomes `value` (called or not), logged (rule 1);
/// 22003 outside its bounds. The end of its record (rule 4 is the caller's).
pub(crate) fn setval(
    sh: &Shared,
    rel: RelKey,
    def: &SeqDef,
    name: &str,
    (value, is_called): (i64, bool),
) -> Result<Lsn> {
    if !(def.min..=def.max).contains(&value) {
        return Err(EngineError::NumericOutOfRange(format!(
            "setval: value {value} is out of bounds for sequence \"{name}\" ({}..{})",
            def.min, def.max
        )));
    }
    let buf = sh.pool.read_buffer(tag(rel), ReadMode::Normal)?;
    let mut g = buf.write();
    read_state(&g, rel)?;
    let st = SeqState {
        last_value: value,
        log_cnt: 0,
        is_called,
    };
    write_state_keep_lsn(&mut g, st);
    buf.mark_dirty(&g);
    let _redo = sh.redo_ptr.read();
    log_state(sh, rel, &mut g, st, Xid::INVALID)
}

/// The bounds of a sequence of type `ty` (`smallint`, `integer`, `bigint`).
pub fn type_bounds(ty: ColType) -> Option<(i64, i64)> {
    match ty {
        ColType::Int2 => Some((i16::MIN as i64, i16::MAX as i64)),
        ColType::Int4 => Some((i32::MIN as i64, i32::MAX as i64)),
        ColType::Int8 => Some((i64::MIN, i64::MAX)),
        _ => None,
    }
}

/// The options of CREATE SEQUENCE (and of an identity column), unset ones `None`.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct SeqOptions {
    /// AS type: `smallint`, `integer` or `bigint` (the default).
    pub ty: Option<ColType>,
    pub increment: Option<i64>,
    /// `Some(None)`: NO MINVALUE.
    pub min: Option<Option<i64>>,
    pub max: Option<Option<i64>>,
    pub start: Option<i64>,
    pub cache: Option<i64>,
    pub cycle: Option<bool>,
}

impl SeqOptions {
    /// The definition these options give, with PostgreSQL's defaults and checks
    /// (22023 with its messages).
    pub fn define(&self, owned: bool) -> Result<SeqDef> {
        let bad = |m: String| Err(EngineError::InvalidParameter(m));
        let ty = self.ty.unwrap_or(ColType::Int8);
        let Some((tmin, tmax)) = type_bounds(ty) else {
            return bad("sequence type must be smallint, integer, or bigint".into());
        };
        let increment = self.increment.unwrap_or(1);
        if increment == 0 {
            return bad("INCREMENT must not be zero".into());
        }
        let asc = increment > 0;
        let max = self.max.flatten().unwrap_or(if asc { tmax } else { -1 });
        let min = self.min.flatten().unwrap_or(if asc { 1 } else { tmin });
        let tname = match ty {
            ColType::Int2 => "smallint",
            ColType::Int4 => "integer",
            _ => "bigint",
        };
        for (what, v) in [("MAXVALUE", max), ("MINVALUE", min)] {
            if !(tmin..=tmax).contains(&v) {
                return bad(format!(
                    "{what} ({v}) is out of range for sequence data type {tname}"
                ));
            }
        }
        if min >= max {
            return bad(format!(
                "MINVALUE ({min}) must be less than MAXVALUE ({max})"
            ));
        }
        let start = self.start.unwrap_or(if asc { min } else { max });
        if start < min {
            return bad(format!(
                "START value ({start}) cannot be less than MINVALUE ({min})"
            ));
        }
        if start > max {
            return bad(format!(
                "START value ({start}) cannot be greater than MAXVALUE ({max})"
            ));
        }
        let cache = self.cache.unwrap_or(1);
        if cache <= 0 {
            return bad(format!("CACHE ({cache}) must be greater than zero"));
        }
        Ok(SeqDef {
            ty,
            increment,
            min,
            max,
            start,
            cache,
            cycle: self.cycle.unwrap_or(false),
            owned,
        })
    }
}

/// Redo of `Sequence/LOG`: restores the page (rule 3).
pub(crate) fn seq_redo(rx: &mut dyn RedoContext, r: &Record) -> Result<()> {
    if r.info != SEQ_LOG {
        return Err(unknown_record(r));
    }
    let mut d = crate::codec::Dec::new(&r.payload, "Sequence/LOG record");
    let b = BlockRef::decode(&mut d).map_err(corrupt)?;
    if b.image.is_none() {
        return Err(corrupt("Sequence/LOG record without its page"));
    }
    rx.redo_block(r, &b, &mut |_| Ok(()))?;
    Ok(())
}

/// The state a `Sequence/LOG` record carries, for `strata waldump`.
pub(crate) fn describe(
    r: &Record,
    block: &mut dyn FnMut(&BlockRef),
) -> std::result::Result<String, DecodeError> {
    let mut d = crate::codec::Dec::new(&r.payload, "Sequence/LOG record");
    let b = BlockRef::decode(&mut d)?;
    block(&b);
    let bad = || DecodeError("Sequence/LOG record without a sequence page".into());
    let img = b.image.as_ref().ok_or_else(bad)?;
    let st = read_state(img, b.tag.rel).map_err(|_| bad())?;
    Ok(format!(
        "last_value {} log_cnt {} is_called {}",
        st.last_value, st.log_cnt, st.is_called
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn def(increment: i64, min: i64, max: i64, cycle: bool) -> SeqDef {
        SeqDef {
            ty: ColType::Int8,
            increment,
            min,
            max,
            start: min,
            cache: 1,
            cycle,
            owned: false,
        }
    }

    #[test]
    fn steps_stop_or_wrap_at_the_bounds() {
        assert_eq!(step(&def(1, 1, 3, false), 2), Some(3));
        assert_eq!(step(&def(1, 1, 3, false), 3), None);
        assert_eq!(step(&def(2, 1, 4, true), 3), Some(1));
        assert_eq!(step(&def(-1, -3, -1, true), -3), Some(-1));
        assert_eq!(step(&def(-1, -3, -1, false), -3), None);
        assert_eq!(step(&def(i64::MAX, 0, i64::MAX, false), 1), None);
        assert_eq!(step(&def(i64::MIN, i64::MIN, 0, false), -1), None);
    }

    #[test]
    fn options_take_postgresql_defaults_and_checks() {
        let d = SeqOptions::default().define(false).unwrap();
        assert_eq!((d.min, d.max, d.start, d.increment), (1, i64::MAX, 1, 1));
        let down = SeqOptions {
            increment: Some(-2),
            ty: Some(ColType::Int4),
            ..Default::default()
        };
        let d = down.define(false).unwrap();
        assert_eq!((d.min, d.max, d.start), (i32::MIN as i64, -1, -1));
        let err = |o: SeqOptions| o.define(false).unwrap_err().to_string();
        let o = SeqOptions {
            increment: Some(0),
            ..Default::default()
        };
        assert_eq!(err(o), "INCREMENT must not be zero");
        let o = SeqOptions {
            ty: Some(ColType::Int2),
            max: Some(Some(40000)),
            ..Default::default()
        };
        assert_eq!(
            err(o),
            "MAXVALUE (40000) is out of range for sequence data type smallint"
        );
        let o = SeqOptions {
            start: Some(0),
            ..Default::default()
        };
        assert_eq!(err(o), "START value (0) cannot be less than MINVALUE (1)");
        let o = SeqOptions {
            min: Some(Some(5)),
            max: Some(Some(5)),
            ..Default::default()
        };
        assert_eq!(err(o), "MINVALUE (5) must be less than MAXVALUE (5)");
    }

    #[test]
    fn the_state_round_trips_through_its_page() {
        let mut p = Box::new(ZERO_PAGE);
        let st = SeqState {
            last_value: -7,
            log_cnt: 31,
            is_called: true,
        };
        strata_page::set_lsn(&mut p, Lsn(99));
        write_state_keep_lsn(&mut p, st);
        assert_eq!(strata_page::lsn(&p), Lsn(99));
        let rel = RelKey::new(
            strata_types::Oid(1663),
            strata_types::Oid(5),
            strata_types::RelFileNumber(1),
        );
        assert_eq!(read_state(&p, rel).unwrap(), st);
    }
}
