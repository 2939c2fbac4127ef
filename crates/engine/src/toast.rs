//! TOAST: text and bytea values too large for their row stored out of line, in a
//! second heap beside the table's (PostgreSQL's pg_toast relation), so a row of any
//! width up to [`MAX_TOASTED_BYTES`] fits a page.
//!
//! Entry points: [`toast_key`], [`toast_row`] (the writer, before encoding),
//! [`decode_row`] (every reader of table rows), [`delete_rows`] (every delete of
//! table rows), [`chunk_tids`].
//!
//! Rules (cited as "toast rule N"):
//! 1. A table's TOAST heap is the relation whose file number is the table's with
//!    [`TOAST_BIT`] set: no catalog entry, so every operation that makes, drops or
//!    copies a table's files (TRUNCATE, a rewrite, DROP, CREATE DATABASE) names it
//!    by the table's own number; its file is made by the first transaction that
//!    moves a value out, as any created file (engine rule 4).
//! 2. A row whose encoding passes [`TOAST_THRESHOLD`] has its largest text and
//!    bytea values moved out, largest first, until it fits under it. A moved value
//!    is cut into chunks of up to [`CHUNK_BYTES`], each a tuple of the TOAST heap
//!    inserted by the same transaction; the row keeps a pointer: the chunks' TIDs
//!    (TIDs are stable, heap rule 3, so no index is needed).
//! 3. Chunks live and die with their row version: every delete of a row deletes its
//!    chunks in the same transaction, so VACUUM finds both dead to the same
//!    snapshots. VACUUM prunes the table before its TOAST heap, so no row with
//!    storage ever points at a pruned (and perhaps reused) chunk slot.
//! 4. Readers follow a pointer only from a row they see (or, for an index build
//!    and the index check, a row with storage whose inserter committed, whose
//!    chunks rule 3 keeps). Never from a row of an aborted inserter: when its
//!    transaction made the TOAST heap, the abort removed the file, and a later one
//!    may hold other chunks at the same TIDs.

use crate::heap::{self, ColType, Column, Datum};
use crate::{corrupt, EngineError, Result, Shared};
use strata_buffer::ReadMode;
use strata_types::{BlockNumber, BufferTag, ForkNumber, RelFileNumber, RelKey, Xid};

/// Set in a file number: the TOAST heap of the table with the other bits (rule 1).
/// Relation file numbers are handed out from 16384 up and never reach it.
pub const TOAST_BIT: u64 = 1 << 62;

/// A row encoded past this many bytes has values moved out (PostgreSQL's
/// TOAST_TUPLE_THRESHOLD: four rows to a page).
pub const TOAST_THRESHOLD: usize = 2032;

/// Bytes of a value per chunk: a chunk tuple fills a page (fewer TIDs per pointer).
pub const CHUNK_BYTES: usize = heap::TUPLE_MAX_BYTES - 64;

/// A value moved out is at most this long: its pointer (6 bytes per chunk) must fit
/// in its row. About 10 MB; PostgreSQL's limit is 1 GB.
pub const MAX_TOASTED_BYTES: usize = (heap::TUPLE_MAX_BYTES - 256) / 6 * CHUNK_BYTES;

/// Values shorter than this stay in their row.
const MIN_TOASTED_BYTES: usize = 256;

/// Rule 1: the TOAST heap of the table stored at `rel`.
pub fn toast_key(rel: RelKey) -> RelKey {
    RelKey {
        rel: RelFileNumber(rel.rel.0 | TOAST_BIT),
        ..rel
    }
}

fn chunk_columns() -> [Column; 1] {
    [Column::new("chunk_data", ColType::Bytea)]
}

/// The stored bytes of a text, bytea or numeric value.
fn bytes_of(v: &Datum) -> Option<std::borrow::Cow<'_, [u8]>> {
    match v {
        Datum::Text(s) => Some(s.as_bytes().into()),
        Datum::Bytea(b) => Some(b.as_slice().into()),
        Datum::Numeric(n) => {
            let mut b = Vec::new();
            n.encode(&mut b);
            Some(b.into())
        }
        _ => None,
    }
}

/// Which values of `row` rule 2 moves out (their positions), if any; the caller
/// encodes the row to know its size.
pub fn to_move(row: &[Datum], encoded_len: usize) -> Vec<usize> {
    if encoded_len <= TOAST_THRESHOLD {
        return Vec::new();
    }
    let mut cands: Vec<(usize, usize)> = row
        .iter()
        .enumerate()
        .filter_map(|(i, v)| bytes_of(v).map(|b| (b.len(), i)))
        .filter(|(n, _)| *n >= MIN_TOASTED_BYTES)
        .collect();
    cands.sort_unstable_by(|a, b| b.cmp(a));
    let mut size = encoded_len;
    let mut out = Vec::new();
    for (n, i) in cands {
        if size <= TOAST_THRESHOLD {
            break;
        }
        out.push(i);
        size = size - n + 16; // a pointer of a few chunks stays
    }
    out
}

/// Rule 2: moves values `which` of `row` into the TOAST heap `toast` (its file
/// exists) as transaction `xid`; the pointers to encode in their place.
pub fn toast_row(
    sh: &Shared,
    toast: RelKey,
    xid: Xid,
    row: &[Datum],
    which: &[usize],
) -> Result<Vec<Option<Vec<u8>>>> {
    let mut out = vec![None; row.len()];
    for &i in which {
        let bytes = bytes_of(&row[i]).ok_or_else(|| corrupt("TOAST of a fixed-width value"))?;
        if bytes.len() > MAX_TOASTED_BYTES {
            return Err(EngineError::ProgramLimit(format!(
                "value of {} bytes is too large to store (Strata keeps values up to {MAX_TOASTED_BYTES} bytes)",
                bytes.len()
            )));
        }
        let tuples: Vec<Vec<u8>> = bytes
            .chunks(CHUNK_BYTES)
            .map(|c| heap::encode_tuple(xid, &chunk_columns(), &[Datum::Bytea(c.to_vec())]))
            .collect();
        let refs: Vec<&[u8]> = tuples.iter().map(Vec::as_slice).collect();
        let tids = crate::access::insert_many(sh, toast, xid, &refs)?;
        let mut ptr = Vec::with_capacity(8 + tids.len() * 6);
        ptr.extend_from_slice(&(bytes.len() as u32 | heap::TOASTED).to_le_bytes());
        ptr.extend_from_slice(&(tids.len() as u32).to_le_bytes());
        for t in &tids {
            ptr.extend_from_slice(&t.block.0.to_le_bytes());
            ptr.extend_from_slice(&t.offset.to_le_bytes());
        }
        out[i] = Some(ptr);
    }
    Ok(out)
}

/// The chunk TIDs of a pointer (the bytes after its length word).
fn pointer_tids(ptr: &[u8]) -> Vec<(u32, u16)> {
    ptr.get(4..)
        .unwrap_or_default()
        .chunks_exact(6)
        .map(|c| {
            (
                u32::from_le_bytes(c[..4].try_into().expect("4 bytes")),
                u16::from_le_bytes(c[4..].try_into().expect("2 bytes")),
            )
        })
        .collect()
}

/// Reads an out-of-line value from TOAST heap `toast` (rule 4).
fn fetch(sh: &Shared, toast: RelKey, len: usize, ptr: &[u8]) -> Result<Vec<u8>> {
    let mut out = Vec::with_capacity(len);
    for (block, item) in pointer_tids(ptr) {
        let t = BufferTag::new(toast, ForkNumber::Main, BlockNumber(block));
        let buf = sh.pool.read_buffer(t, ReadMode::Normal)?;
        let g = buf.read();
        let tuple = strata_page::item(&g, item as usize).ok_or_else(|| {
            corrupt(format!(
                "TOAST chunk ({block},{item}) of {toast:?} is missing"
            ))
        })?;
        match heap::decode_values(&chunk_columns(), tuple)
            .map_err(corrupt)?
            .pop()
        {
            Some(Datum::Bytea(b)) => out.extend_from_slice(&b),
            _ => {
                return Err(corrupt(format!(
                    "TOAST chunk ({block},{item}) does not decode"
                )))
            }
        }
    }
    Ok(out)
}

/// A row of the table at `rel`, its out-of-line values fetched.
pub fn decode_row(sh: &Shared, rel: RelKey, cols: &[Column], tuple: &[u8]) -> Result<Vec<Datum>> {
    decode_row_noting(sh, rel, cols, tuple, None)
}

/// [`decode_row`] into `out`, reusing its slots and their strings (a scan's row
/// buffer: cursor rule 6), of the columns `mask` marks (None: all); the others are
/// NULL, their bytes skipped and their out-of-line values not fetched.
pub fn decode_row_into(
    sh: &Shared,
    rel: RelKey,
    cols: &[Column],
    tuple: &[u8],
    mask: Option<&[bool]>,
    out: &mut Vec<Datum>,
) -> Result<()> {
    detoasting(sh, rel, None, &mut |detoast| {
        heap::decode_values_into(cols, tuple, detoast, mask, out)
    })
}

/// [`heap::decode_more_into`] with out-of-line values fetched from `rel`'s TOAST
/// heap: the columns `more` marks decoded into a row that holds the others.
pub fn decode_more_into(
    sh: &Shared,
    rel: RelKey,
    cols: &[Column],
    tuple: &[u8],
    more: &[bool],
    out: &mut Vec<Datum>,
) -> Result<()> {
    detoasting(sh, rel, None, &mut |detoast| {
        heap::decode_more_into(cols, tuple, detoast, more, out)
    })
}

/// Runs `decode` with a detoaster that fetches from `rel`'s TOAST heap (noting the
/// chunks' TIDs in `chunks`), mapping its errors back to the engine's.
fn detoasting<T>(
    sh: &Shared,
    rel: RelKey,
    mut chunks: Option<&mut Vec<(u32, u16)>>,
    decode: &mut dyn FnMut(&mut heap::Detoast<'_>) -> crate::codec::DecResult<T>,
) -> Result<T> {
    let toast = toast_key(rel);
    let mut failed = None;
    let r = decode(&mut |len, ptr| {
        if let Some(c) = chunks.as_deref_mut() {
            c.extend(pointer_tids(ptr));
        }
        fetch(sh, toast, len, ptr).map_err(|e| {
            let msg = crate::codec::DecodeError(e.to_string());
            failed = Some(e);
            msg
        })
    });
    match (r, failed) {
        (Ok(v), _) => Ok(v),
        (Err(_), Some(e)) => Err(e),
        (Err(e), None) => Err(corrupt(e)),
    }
}

/// [`decode_row`], adding to `chunks` the TIDs of the chunks it read (a delete's
/// matching pass: rule 3 deletes them with the row, without reading it again).
pub fn decode_row_noting(
    sh: &Shared,
    rel: RelKey,
    cols: &[Column],
    tuple: &[u8],
    chunks: Option<&mut Vec<(u32, u16)>>,
) -> Result<Vec<Datum>> {
    detoasting(sh, rel, chunks, &mut |detoast| {
        heap::decode_values_with(cols, tuple, detoast)
    })
}

/// The TIDs of every chunk a tuple of `cols` points at.
pub fn chunk_tids(cols: &[Column], tuple: &[u8]) -> Result<Vec<(u32, u16)>> {
    let mut tids = Vec::new();
    heap::decode_values_with(cols, tuple, &mut |len, ptr| {
        tids.extend(pointer_tids(ptr));
        // Stand-in bytes that decode as any varlena type: spaces are text, and
        // (a moved value being at least MIN_TOASTED_BYTES long) a numeric.
        Ok(vec![b' '; len])
    })
    .map_err(corrupt)?;
    Ok(tids)
}

/// Rule 3: deletes, as `xid`, the chunks of `tuples` (rows of the table at `rel`
/// being deleted by `xid`).
pub fn delete_rows(
    sh: &Shared,
    rel: RelKey,
    cols: &[Column],
    tuples: &[&[u8]],
    xid: Xid,
) -> Result<()> {
    if !may_point(cols) {
        return Ok(());
    }
    let mut tids = Vec::new();
    for t in tuples {
        tids.extend(chunk_tids(cols, t)?);
    }
    delete_chunks(sh, rel, tids, xid)
}

/// Rule 3: deletes, as `xid`, chunks `tids` of the TOAST heap of the table at
/// `rel`. One record per TOAST page changed.
pub fn delete_chunks(sh: &Shared, rel: RelKey, mut tids: Vec<(u32, u16)>, xid: Xid) -> Result<()> {
    if tids.is_empty() {
        return Ok(());
    }
    tids.sort_unstable();
    let toast = toast_key(rel);
    for same in tids.chunk_by(|a, b| a.0 == b.0) {
        let offsets: Vec<u16> = same.iter().map(|t| t.1).collect();
        crate::access::delete_on_page(sh, toast, same[0].0, &offsets, xid)?;
    }
    Ok(())
}

/// Whether rows of `cols` may hold a pointer: the table has text, bytea or numeric
/// columns.
pub fn may_point(cols: &[Column]) -> bool {
    cols.iter()
        .any(|c| matches!(c.ty, ColType::Text | ColType::Bytea | ColType::Numeric))
}
