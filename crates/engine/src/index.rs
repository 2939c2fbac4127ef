//! Indexes of tables: keys from rows, bottom-up builds, upkeep on insert with the
//! unique check, VACUUM's removal of entries whose rows are gone, index scans, and
//! the index-against-table check (PostgreSQL's amcheck with heapallindexed).
//!
//! Entry points: [`row_key`], [`build`], [`insert_rows`], [`bulk_delete`],
//! [`scan_batches`], [`collect_tids`], [`fetch`], [`check`].
//!
//! Rules (cited as "index rule N"):
//! 1. Every heap row that some snapshot may still see has one entry in each index of
//!    its table (a build indexes dead rows too): an index never decides visibility; a
//!    fetch through it does (engine rule 9). A row of an aborted transaction may lack
//!    its entry (a unique check refused it, or the crash took its record), and so may a
//!    row dead to every snapshot (rule 2); no entry points anywhere but at an item
//!    with storage and that key.
//! 2. Entries go before their rows: VACUUM removes the entries of the rows it will
//!    prune, from every index, before it prunes them (and before it truncates), so no
//!    entry ever points at an unused or reused item. A crash in between leaves dead
//!    rows without entries, which the next VACUUM prunes. The writer also removes, on
//!    its way through an index, the entries of rows dead to every snapshot
//!    ([`collect_tids`]). Each removal record names the newest deleter of the rows,
//!    and a standby's replay resolves conflicts with its queries first.
//! 3. A unique index refuses a key (23505) that a row visible to the writer already
//!    has (one writer, engine rule 1: no other transaction is in progress to wait
//!    for). Keys with a NULL are never equal (PostgreSQL's NULLS DISTINCT).
//! 4. A scan rechecks nothing itself: it hands over every visible row its range's
//!    entries point at; the caller applies its whole WHERE to them. Its batches follow
//!    `stream`'s rules 1-4, resolving the index again under the drop lock each time.
//! 5. An index-only scan gives the row an entry's key holds (its index's columns,
//!    the others NULL) without reading the heap where the visibility map says the
//!    entry's heap page is all visible (heap rule 2: every tuple on it is visible to
//!    every snapshot), and fetches the row as rule 4's scan does elsewhere. Only
//!    keys that read back whole qualify ([`key_kinds`]). VACUUM waits, between
//!    removing a pass's entries and pruning their rows, for every index batch in
//!    flight (the drop lock taken exclusively once): no batch holding an entry of a
//!    row it removes sees that row's page marked all visible. On a standby every
//!    entry's row is fetched (replay's removals and bits take no such turn).

use crate::access::{self, Snapshot};
use crate::catalog::{IndexDef, RelEntry, Tid};
use crate::heap::{self, ColType, Datum};
use crate::{corrupt, EngineError, Interrupt, Result, Shared};
use std::sync::Arc;
use strata_btree::build::LevelBuilder;
use strata_btree::key::{
    decode_key, encode_key, leaf_entry, split_leaf_entry, KeyPart, KeyValue, PartKind, TID_BYTES,
};
use strata_buffer::ReadMode;
use strata_page::PageBuf;
use strata_types::{BlockNumber, BufferTag, ForkNumber, RelKey, Xid};

/// Pages per `BTREE_PAGES` record of a build.
const BUILD_PAGES_PER_RECORD: usize = 16;
/// Entries of `NULL` sort after every value (the key encoding's NULL byte).
const NULL_BYTE: u8 = 0x02;

fn part(v: &Datum) -> KeyPart<'_> {
    match v {
        Datum::Null => KeyPart::Null,
        Datum::Int2(x) => KeyPart::Int(i64::from(*x)),
        Datum::Int4(x) => KeyPart::Int(i64::from(*x)),
        Datum::Int8(x) | Datum::Timestamp(x) | Datum::TimestampTz(x) => KeyPart::Int(*x),
        Datum::Date(d) => KeyPart::Int(i64::from(*d)),
        Datum::Time(t) => KeyPart::Int(*t),
        // Never stored (datum rule 1); kept total.
        Datum::Lsn(l) => KeyPart::Int(l.0 as i64),
        Datum::Bool(b) => KeyPart::Bool(*b),
        Datum::Text(s) => KeyPart::Bytes(s.as_bytes()),
        Datum::Bytea(b) => KeyPart::Bytes(b),
        Datum::Uuid(u) => KeyPart::Fixed(u),
        Datum::Float4(_) | Datum::Float8(_) | Datum::Numeric(_) | Datum::Interval(_) => {
            unreachable!("computed keys come from computed_key")
        }
    }
}

/// The key bytes of a value whose encoding is computed: floats by their order-
/// preserving bits, numerics by [`numeric_key`].
fn computed_key(v: &Datum) -> Option<Vec<u8>> {
    match v {
        Datum::Float4(f) | Datum::Float8(f) => Some(f.key_bytes().to_vec()),
        Datum::Numeric(d) => Some(d.key_bytes()),
        Datum::Interval(i) => Some(i.key_bytes().to_vec()),
        _ => None,
    }
}

/// How each column of `ix` reads back from its keys (index rule 5); None if one
/// cannot: a numeric's or an interval's key is computed one way, a `char(n)`'s
/// drops its padding.
pub fn key_kinds(rel: &RelEntry, ix: &IndexDef) -> Option<Vec<PartKind>> {
    ix.columns
        .iter()
        .map(|c| {
            let col = rel.columns.get(*c)?;
            Some(match col.ty {
                ColType::Int2
                | ColType::Int4
                | ColType::Int8
                | ColType::Timestamp
                | ColType::TimestampTz
                | ColType::Date
                | ColType::Time => PartKind::Int,
                ColType::Bool => PartKind::Bool,
                ColType::Text if !col.padded => PartKind::Bytes,
                ColType::Bytea => PartKind::Bytes,
                ColType::Uuid => PartKind::Fixed(16),
                ColType::Float4 | ColType::Float8 => PartKind::Fixed(8),
                ColType::Text | ColType::Numeric | ColType::Interval => return None,
            })
        })
        .collect()
}

/// The value of a column of type `ty` read back from its key (index rule 5).
fn key_datum(ty: ColType, v: KeyValue<'_>) -> Option<Datum> {
    let float = |b: &[u8]| {
        let k = u64::from_be_bytes(b.try_into().ok()?);
        let bits = if k >> 63 == 1 { k ^ (1 << 63) } else { !k };
        Some(strata_types::Float::new(f64::from_bits(bits)))
    };
    Some(match (ty, v) {
        (_, KeyValue::Null) => Datum::Null,
        (ColType::Int2, KeyValue::Int(x)) => Datum::Int2(i16::try_from(x).ok()?),
        (ColType::Int4, KeyValue::Int(x)) => Datum::Int4(i32::try_from(x).ok()?),
        (ColType::Int8, KeyValue::Int(x)) => Datum::Int8(x),
        (ColType::Timestamp, KeyValue::Int(x)) => Datum::Timestamp(x),
        (ColType::TimestampTz, KeyValue::Int(x)) => Datum::TimestampTz(x),
        (ColType::Date, KeyValue::Int(x)) => Datum::Date(i32::try_from(x).ok()?),
        (ColType::Time, KeyValue::Int(x)) => Datum::Time(x),
        (ColType::Bool, KeyValue::Bool(b)) => Datum::Bool(b),
        (ColType::Text, KeyValue::Bytes(b)) => Datum::Text(String::from_utf8(b.into_owned()).ok()?),
        (ColType::Bytea, KeyValue::Bytes(b)) => Datum::Bytea(b.into_owned()),
        (ColType::Uuid, KeyValue::Fixed(b)) => Datum::Uuid(b.try_into().ok()?),
        (ColType::Float4, KeyValue::Fixed(b)) => Datum::Float4(float(b)?),
        (ColType::Float8, KeyValue::Fixed(b)) => Datum::Float8(float(b)?),
        _ => return None,
    })
}

/// Index rule 5: `row` (of `rel`'s width) with the columns of `ix` that `mask`
/// marks (None: all) read from leaf entry `entry`'s key, every other column NULL.
/// A row of no such column reads nothing (`count(*)`).
pub(crate) fn key_row(
    (rel, ix, kinds): (&RelEntry, &IndexDef, &[PartKind]),
    entry: &[u8],
    mask: Option<&[bool]>,
    row: &mut Vec<Datum>,
) -> Result<()> {
    let wanted = |c: usize| mask.is_none_or(|m| m.get(c).copied().unwrap_or(false));
    row.clear();
    row.extend(std::iter::repeat_with(|| Datum::Null).take(rel.columns.len()));
    if !ix.columns.iter().any(|c| wanted(*c)) {
        return Ok(());
    }
    let (key, _, _) = split_leaf_entry(entry);
    let mut cols = ix.columns.iter();
    let decoded = decode_key(key, kinds, &mut |v| {
        let c = *cols.next()?;
        if wanted(c) {
            row[c] = key_datum(rel.columns[c].ty, v)?;
        }
        Some(())
    });
    decoded.ok_or_else(|| {
        let name = &ix.name;
        corrupt(format!(
            "index \"{name}\": an entry that is not a key of its columns"
        ))
    })
}

/// The encoded key of `values` (btree rule 1).
pub(crate) fn encode(values: &[&Datum]) -> Vec<u8> {
    let computed: Vec<Option<Vec<u8>>> = values.iter().map(|v| computed_key(v)).collect();
    let parts: Vec<KeyPart<'_>> = values
        .iter()
        .zip(&computed)
        .map(|(v, c)| match c {
            Some(bytes) => KeyPart::Fixed(bytes),
            None => part(v),
        })
        .collect();
    let mut out = Vec::new();
    encode_key(&parts, &mut out);
    out
}

/// The bytes PostgreSQL's B-tree row for `values` would take: its index tuple's
/// header (with a null bitmap if a value is NULL), each datum at its type's
/// alignment (short varlena headers for values up to 126 bytes), MAXALIGNed.
/// Uncompressed: PostgreSQL compresses values over 510 bytes that compress, Strata
/// does not. Only for [`checked_entry`]'s message and limit.
fn postgres_row_bytes(values: &[&Datum]) -> usize {
    let align = |n: usize, a: usize| n.div_ceil(a) * a;
    let has_null = values.iter().any(|v| **v == Datum::Null);
    let mut n = if has_null { 16 } else { 8 };
    for v in values {
        let var = |len: usize, n: usize| {
            if len <= 126 {
                n + 1 + len
            } else {
                align(n, 4) + 4 + len
            }
        };
        n = match v {
            Datum::Null => n,
            Datum::Bool(_) => n + 1,
            Datum::Int2(_) => align(n, 2) + 2,
            Datum::Int4(_) | Datum::Date(_) | Datum::Float4(_) => align(n, 4) + 4,
            Datum::Int8(_)
            | Datum::Timestamp(_)
            | Datum::TimestampTz(_)
            | Datum::Time(_)
            | Datum::Lsn(_)
            | Datum::Float8(_) => align(n, 8) + 8,
            Datum::Interval(_) => align(n, 8) + 16,
            Datum::Uuid(_) => n + 16,
            Datum::Text(s) => var(s.len(), n),
            Datum::Bytea(b) => var(b.len(), n),
            // Base-10000 digits, two bytes each, after a two-byte header.
            Datum::Numeric(d) => var(
                2 + 2 * (d.int_digits().div_ceil(4) + d.scale().div_ceil(4)) as usize,
                n,
            ),
        };
    }
    align(n, 8)
}

/// Btree page rule 6, checked before an entry is made: the leaf entry of `row` at
/// `tid` in index `ix`, or 54000 with PostgreSQL's words when it is past
/// [`strata_btree::page::MAX_ENTRY_BYTES`]. The size reported is the larger of
/// PostgreSQL's row for the same values and Strata's entry, so what PostgreSQL
/// refuses is refused here with its figure. O(the key).
pub(crate) fn checked_entry(
    rel: &RelEntry,
    ix: &IndexDef,
    row: &[Datum],
    key: &[u8],
    tid: Tid,
) -> Result<Vec<u8>> {
    let entry_bytes = key.len() + TID_BYTES;
    let vals: Vec<&Datum> = ix.columns.iter().map(|c| &row[*c]).collect();
    let size = postgres_row_bytes(&vals).max(entry_bytes);
    if size > strata_btree::page::MAX_ENTRY_BYTES {
        return Err(EngineError::IndexRowTooBig {
            size,
            index: ix.name.clone(),
            table: rel.name.clone(),
            tid: (tid.block.0, tid.offset + 1),
        });
    }
    Ok(leaf_entry(key, tid.block, tid.offset))
}

/// The key of `row` in index `ix`, and whether one of its columns is NULL.
/// A `char(n)` column's key leaves out its trailing spaces, which PostgreSQL's
/// bpchar comparison does not count (so `'ab'` finds `'ab '`, and keys order as
/// bpchar values do).
pub(crate) fn row_key(rel: &RelEntry, ix: &IndexDef, row: &[Datum]) -> (Vec<u8>, bool) {
    let trimmed: Vec<Option<Datum>> = ix
        .columns
        .iter()
        .map(|c| match &row[*c] {
            Datum::Text(s) if rel.columns[*c].padded => {
                Some(Datum::Text(s.trim_end_matches(' ').to_string()))
            }
            _ => None,
        })
        .collect();
    let vals: Vec<&Datum> = ix
        .columns
        .iter()
        .zip(&trimmed)
        .map(|(c, t)| t.as_ref().unwrap_or(&row[*c]))
        .collect();
    let has_null = vals.iter().any(|v| **v == Datum::Null);
    (encode(&vals), has_null)
}

fn heap_tag(rel: RelKey, block: u32) -> BufferTag {
    BufferTag::new(rel, ForkNumber::Main, BlockNumber(block))
}

/// The heap page `tid` is on, pinned; `None` past the heap's end.
fn heap_page<'a>(
    sh: &'a Shared,
    heap: RelKey,
    tid: Tid,
) -> Result<Option<strata_buffer::PinnedBuffer<'a>>> {
    if tid.block.0 >= sh.smgr.nblocks(heap, ForkNumber::Main)? {
        return Ok(None);
    }
    let buf = sh
        .pool
        .read_buffer(heap_tag(heap, tid.block.0), ReadMode::Normal)?;
    Ok(Some(buf))
}

/// Calls `f` with the tuple at `tid` if it has storage and `snap` (with `my`) sees it.
/// The caller holds the drop lock or the writer lock (engine rule 8).
pub(crate) fn fetch<R>(
    sh: &Shared,
    heap: RelKey,
    tid: Tid,
    snap: &Snapshot<'_>,
    my: Option<Xid>,
    f: impl FnOnce(&[u8]) -> Result<R>,
) -> Result<Option<R>> {
    let Some(buf) = heap_page(sh, heap, tid)? else {
        return Ok(None);
    };
    let g = buf.read();
    if snap.cancelled_by_recovery() {
        return Err(EngineError::RecoveryConflict);
    }
    match strata_page::item(&g, tid.offset as usize) {
        Some(t) if t.len() >= heap::TUPLE_HEADER_BYTES && access::visible(snap, t, my) => {
            f(t).map(Some)
        }
        _ => Ok(None),
    }
}

/// Heap fetches of one batch of index entries (cursor rule 10): the heap's length
/// read once, a page kept pinned while the entries stay on it, and the commit
/// status of the last inserter and deleter remembered across tuples.
pub(crate) struct Fetcher<'a> {
    sh: &'a Shared,
    heap: RelKey,
    nblocks: u32,
    page: Option<(u32, strata_buffer::PinnedBuffer<'a>)>,
    memo: access::XidMemo,
}

impl<'a> Fetcher<'a> {
    /// After the batch's entries are read: every heap tuple they name is below
    /// the length read here (a tuple is written before its entry).
    pub(crate) fn new(sh: &'a Shared, heap: RelKey) -> Result<Self> {
        Ok(Fetcher {
            sh,
            heap,
            nblocks: sh.smgr.nblocks(heap, ForkNumber::Main)?,
            page: None,
            memo: access::XidMemo::default(),
        })
    }

    /// [`fetch`] of `tid` through the batch's pinned page and memo.
    pub(crate) fn fetch<R>(
        &mut self,
        tid: Tid,
        snap: &Snapshot<'_>,
        my: Option<Xid>,
        f: impl FnOnce(&[u8]) -> Result<R>,
    ) -> Result<Option<R>> {
        let b = tid.block.0;
        if b >= self.nblocks {
            return Ok(None);
        }
        if self.page.as_ref().is_none_or(|(at, _)| *at != b) {
            self.page = None;
            let buf = self
                .sh
                .pool
                .read_buffer(heap_tag(self.heap, b), ReadMode::Normal)?;
            self.page = Some((b, buf));
        }
        let (_, buf) = self.page.as_ref().expect("pinned above");
        let g = buf.read();
        if snap.cancelled_by_recovery() {
            return Err(EngineError::RecoveryConflict);
        }
        match strata_page::item(&g, tid.offset as usize) {
            Some(t)
                if t.len() >= heap::TUPLE_HEADER_BYTES
                    && access::visible_memo(snap, t, my, &mut self.memo) =>
            {
                f(t).map(Some)
            }
            _ => Ok(None),
        }
    }
}

/// The key columns of a row, for 23505's detail.
fn key_values(rel: &RelEntry, ix: &IndexDef, row: &[Datum]) -> Vec<(String, Datum)> {
    ix.columns
        .iter()
        .map(|c| (rel.columns[*c].name.clone(), row[*c].clone()))
        .collect()
}

fn unique_violation(rel: &RelEntry, ix: &IndexDef, row: &[Datum]) -> EngineError {
    EngineError::UniqueViolation {
        constraint: ix.name.clone(),
        key: key_values(rel, ix, row),
    }
}

/// Rule 3: the row the writer `xid` sees, other than at `except`, that has `key` in
/// `index`: where it is and its values (decoded with `rel`'s columns).
pub(crate) fn find_visible(
    sh: &Shared,
    (heap, index): (RelKey, RelKey),
    rel: &RelEntry,
    key: &[u8],
    (except, snap): (Option<Tid>, &Snapshot<'_>),
    xid: Xid,
) -> Result<Option<(Tid, Vec<Datum>)>> {
    let mut found = None;
    crate::btree::writer_scan_from(sh, index, key, &mut |e| {
        if !e.starts_with(key) || e.len() != key.len() + TID_BYTES {
            return Ok(false);
        }
        let (_, block, offset) = split_leaf_entry(e);
        let tid = Tid { block, offset };
        if Some(tid) == except {
            return Ok(true);
        }
        found = fetch(sh, heap, tid, snap, Some(xid), |t| {
            crate::toast::decode_row(sh, heap, &rel.columns, t)
        })?
        .map(|row| (tid, row));
        Ok(found.is_none())
    })?;
    Ok(found)
}

/// Adds the entries of rows just inserted at `tids` to every index of `rel` (rule 1),
/// refusing duplicate keys in unique ones (rule 3). One WAL record per entry (btree
/// rule 1).
pub(crate) fn insert_rows(
    sh: &Shared,
    rel: &RelEntry,
    heap: RelKey,
    rows: &[Vec<Datum>],
    tids: &[Tid],
    xid: Xid,
) -> Result<()> {
    // One writer (engine rule 1): nothing commits while the rows go in, so one
    // snapshot serves every row's check (rows of this transaction are its own).
    let snap = Snapshot::take(sh);
    for ix in &rel.indexes {
        let index = RelKey {
            rel: ix.relfilenumber,
            ..heap
        };
        // (key length, entry, row): sorted, so a batch's duplicates are neighbours
        // and its entries go into each leaf together (btree rule 1's INSERT_MANY).
        let mut entries: Vec<(usize, Vec<u8>, usize)> = Vec::with_capacity(rows.len());
        for (i, (row, tid)) in rows.iter().zip(tids).enumerate() {
            let (key, has_null) = row_key(rel, ix, row);
            let keys = (heap, index);
            if ix.unique
                && !has_null
                && find_visible(sh, keys, rel, &key, (Some(*tid), &snap), xid)?.is_some()
            {
                return Err(unique_violation(rel, ix, row));
            }
            let n = if has_null { usize::MAX } else { key.len() };
            entries.push((n, checked_entry(rel, ix, row, &key, *tid)?, i));
        }
        entries.sort_unstable_by(|a, b| a.1.cmp(&b.1));
        if ix.unique {
            for w in entries.windows(2) {
                let ((n, a, _), (_, b, i)) = (&w[0], &w[1]);
                if *n != usize::MAX && b.len() > *n && a[..*n] == b[..*n] {
                    return Err(unique_violation(rel, ix, &rows[*i]));
                }
            }
        }
        let sorted: Vec<Vec<u8>> = entries.into_iter().map(|(_, e, _)| e).collect();
        crate::btree::insert_many(sh, index, &sorted, xid)?;
    }
    Ok(())
}

/// Rule 1's entries of every heap item with storage, sorted, each with whether the
/// writer `xid` sees its row. O(rows) memory (PostgreSQL spills a build's sort to
/// disk past maintenance_work_mem; Strata does not yet).
fn collect_entries(
    sh: &Shared,
    rel: &RelEntry,
    heap: RelKey,
    ix: &IndexDef,
    xid: Xid,
) -> Result<Vec<(Vec<u8>, bool)>> {
    let snap = Snapshot::take(sh);
    let n = sh.smgr.nblocks(heap, ForkNumber::Main)?;
    let mut out = Vec::new();
    for b in 0..n {
        let buf = sh.pool.read_buffer(heap_tag(heap, b), ReadMode::Normal)?;
        let g = buf.read();
        for (off, t) in heap::page_tuples(&g).map_err(corrupt)? {
            // A row of an aborted inserter gets no entry (rule 1 allows it), and is
            // not decoded: its TOAST heap may have gone with it (toast rule 4).
            let xmin = heap::tuple_xmin(t);
            if xmin != xid && !sh.clog.is_committed(xmin) {
                continue;
            }
            let row = crate::toast::decode_row(sh, heap, &rel.columns, t)?;
            let live = access::visible(&snap, t, Some(xid));
            if ix.primary && live {
                if let Some(c) = ix.columns.iter().find(|c| row[**c] == Datum::Null) {
                    return Err(EngineError::NotNullViolation {
                        column: rel.columns[*c].name.clone(),
                        table: rel.name.clone(),
                    });
                }
            }
            let (key, _) = row_key(rel, ix, &row);
            let tid = Tid {
                block: BlockNumber(b),
                offset: off,
            };
            out.push((checked_entry(rel, ix, &row, &key, tid)?, live));
        }
    }
    out.sort_unstable_by(|a, b| a.0.cmp(&b.0));
    Ok(out)
}

/// Rule 3 over a build's sorted entries: two rows the writer sees with one key.
fn check_unique(
    sh: &Shared,
    rel: &RelEntry,
    heap: RelKey,
    ix: &IndexDef,
    entries: &[(Vec<u8>, bool)],
    xid: Xid,
) -> Result<()> {
    let key_of = |e: &[u8]| e.len() - TID_BYTES;
    let mut prev: Option<&[u8]> = None;
    for (e, live) in entries.iter().filter(|(_, live)| *live) {
        let key = &e[..key_of(e)];
        if prev == Some(key) && *live {
            let (_, block, offset) = split_leaf_entry(e);
            let snap = Snapshot::take(sh);
            let row = fetch(sh, heap, Tid { block, offset }, &snap, Some(xid), |t| {
                crate::toast::decode_row(sh, heap, &rel.columns, t)
            })?
            .ok_or_else(|| corrupt("a build's live row is gone"))?;
            if !row_key(rel, ix, &row).1 {
                return Err(unique_violation(rel, ix, &row));
            }
        }
        prev = Some(key);
    }
    Ok(())
}

/// Builds index `ix` of `rel` into its new, empty file `index`, bottom-up from the
/// table's rows (rule 1; build rules 1-3): one `BTREE_PAGES` record per
/// [`BUILD_PAGES_PER_RECORD`] pages. O(rows log rows + pages).
pub(crate) fn build(
    sh: &Shared,
    rel: &RelEntry,
    heap: RelKey,
    index: RelKey,
    ix: &IndexDef,
    xid: Xid,
) -> Result<()> {
    let entries = collect_entries(sh, rel, heap, ix, xid)?;
    if ix.unique {
        check_unique(sh, rel, heap, ix, &entries, xid)?;
    }
    if crate::btree::extend(sh, index)? != 0 {
        return Err(corrupt(format!("index {index:?} is not new")));
    }
    let mut batch: Vec<(u32, Box<PageBuf>)> = Vec::new();
    let put = |page: (u32, Box<PageBuf>), batch: &mut Vec<(u32, Box<PageBuf>)>| {
        if crate::btree::extend(sh, index)? != page.0 {
            return Err(corrupt(format!("index {index:?}: blocks out of order")));
        }
        batch.push(page);
        if batch.len() == BUILD_PAGES_PER_RECORD {
            crate::btree::write_pages(sh, index, xid, std::mem::take(batch), u32::MAX)?;
        }
        Ok(())
    };
    let mut level = LevelBuilder::new(0, 1);
    for (e, _) in entries {
        if let Some(done) = level.push(e) {
            put(done, &mut batch)?;
        }
    }
    let mut n = 0u16;
    let root = loop {
        let (last, parents, next) = level.finish();
        put(last, &mut batch)?;
        if parents.len() == 1 {
            break next - 1;
        }
        n += 1;
        level = LevelBuilder::new(n, next);
        for e in parents {
            if let Some(done) = level.push(e) {
                put(done, &mut batch)?;
            }
        }
    };
    let mut meta = Box::new(crate::access::ZERO_PAGE);
    strata_btree::page::init_meta(&mut meta, strata_btree::page::Meta { root, level: n });
    batch.push((0, meta));
    crate::btree::write_pages(sh, index, xid, batch, u32::MAX)
}

/// Rule 2: removes from `index` the entries pointing at `dead` (sorted TIDs), one
/// `BTREE_DELETE` record per leaf changed. O(the index's leaves). Returns how many.
pub(crate) fn bulk_delete(
    sh: &Shared,
    index: RelKey,
    dead: &[(u32, u16)],
    conflict: Xid,
) -> Result<u64> {
    let mut removed = 0;
    crate::btree::each_leaf(sh, index, &mut |page| {
        let first = strata_btree::page::first_entry(page);
        let items: Vec<u16> = (first..strata_page::item_count(page))
            .filter(|i| {
                let (_, b, o) = split_leaf_entry(strata_btree::page::entry(page, *i));
                dead.binary_search(&(b.0, o)).is_ok()
            })
            .map(|i| i as u16)
            .collect();
        removed += items.len() as u64;
        Ok((items, conflict))
    })?;
    Ok(removed)
}

/// Which entries an index scan takes: `eq` on the leading columns, then an optional
/// range on the next one (`(value, inclusive)`). A NULL anywhere matches nothing
/// (`=` and the comparisons are never true of NULL). Nothing at all: every entry,
/// NULL keys last. `not_null`: none of the next column's NULL keys. `backward`: in
/// descending order (a cursor's; NULL keys first).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct IndexRange {
    pub eq: Vec<Datum>,
    pub lo: Option<(Datum, bool)>,
    pub hi: Option<(Datum, bool)>,
    /// The column after the equalities has no NULL key (IS NOT NULL).
    pub not_null: bool,
    pub backward: bool,
}

/// A range's bytes: where to start, and the tests that skip and stop.
pub(crate) struct Bounds {
    start: Vec<u8>,
    /// Entries starting with this are skipped (an exclusive low bound).
    skip: Option<Vec<u8>>,
    /// The first byte string past the range, and whether entries starting with it
    /// are still inside (an inclusive high bound).
    stop: Vec<u8>,
    stop_inclusive: bool,
}

impl IndexRange {
    pub(crate) fn bounds(&self) -> Option<Bounds> {
        let nulls = self.eq.iter().chain(self.lo.iter().map(|(v, _)| v));
        if nulls
            .chain(self.hi.iter().map(|(v, _)| v))
            .any(|v| *v == Datum::Null)
        {
            return None;
        }
        let eq: Vec<&Datum> = self.eq.iter().collect();
        let prefix = encode(&eq);
        let with = |v: &Datum| {
            let mut k = prefix.clone();
            k.extend_from_slice(&encode(&[v]));
            k
        };
        let (start, skip) = match &self.lo {
            Some((v, incl)) => (with(v), (!incl).then(|| with(v))),
            None => (prefix.clone(), None),
        };
        let (stop, stop_inclusive) = match &self.hi {
            Some((v, incl)) => (with(v), *incl),
            // A range on the next column ends where its NULLs begin; equality alone
            // where the prefix ends.
            None if self.lo.is_some() || self.not_null => {
                ([prefix.as_slice(), &[NULL_BYTE]].concat(), false)
            }
            None => (prefix, true),
        };
        Some(Bounds {
            start,
            skip,
            stop,
            stop_inclusive,
        })
    }
}

impl Bounds {
    /// Whether entry `e` is past the range.
    fn past(&self, e: &[u8]) -> bool {
        if self.stop_inclusive {
            !e.starts_with(&self.stop) && e > self.stop.as_slice()
        } else {
            e >= self.stop.as_slice()
        }
    }
    fn skips(&self, e: &[u8]) -> bool {
        self.skip.as_deref().is_some_and(|s| e.starts_with(s))
    }

    /// Where a backward scan starts (exclusive): above every entry in the range.
    /// An entry is at most `MAX_ENTRY_BYTES`, so the inclusive stop followed by
    /// more 0xFF bytes than that is above every entry it begins.
    fn upper(&self) -> Vec<u8> {
        let mut k = self.stop.clone();
        if self.stop_inclusive {
            k.resize(k.len() + strata_btree::page::MAX_ENTRY_BYTES + 1, 0xFF);
        }
        k
    }
}

/// [`range_tids`] in descending order: the TIDs of `range`'s entries below
/// `before` (exclusive; None: from the top of the range), up to `limit`; whether
/// the range is done.
pub(crate) fn range_tids_backward(
    sh: &Shared,
    index: RelKey,
    b: &Bounds,
    before: Option<&[u8]>,
    limit: usize,
    out: &mut Vec<(Vec<u8>, Tid)>,
    mut keep: Keep<'_>,
) -> Result<bool> {
    let upper;
    let from = match before {
        Some(e) => e,
        None => {
            upper = b.upper();
            &upper
        }
    };
    let mut done = true;
    // No entry below `from` is past the range: `from` is the range's upper end
    // or an entry in it; so only the low end is tested per entry.
    crate::btree::scan_backward(sh, index, from, &mut |e| {
        debug_assert!(!b.past(e), "an entry below the range's top is past it");
        if e < b.start.as_slice() || b.skips(e) {
            return Ok(false);
        }
        Ok(take_entry(e, (limit, out, &mut keep), &mut done))
    })?;
    Ok(done)
}

/// Leaf entries taken from an index range: each one's bytes (empty unless kept
/// [`Keep::Each`]) and the heap TID it names.
pub(crate) type Entries = Vec<(Vec<u8>, Tid)>;

/// What a range scan keeps of the entries it takes, besides their TIDs.
pub(crate) enum Keep<'a> {
    /// Each entry's bytes beside its TID.
    Each,
    /// The last entry's bytes only: a cursor needs where to resume, not a copy of
    /// every entry.
    Last(&'a mut Vec<u8>),
    /// Every entry's bytes end to end in one buffer (an index-only cursor's keys).
    All(&'a mut KeyArena),
}

/// Entries' bytes end to end: one allocation for a batch, not one per entry.
#[derive(Default)]
pub(crate) struct KeyArena {
    bytes: Vec<u8>,
    ends: Vec<usize>,
}

impl KeyArena {
    /// Entry `i` (in the order taken).
    pub(crate) fn get(&self, i: usize) -> &[u8] {
        let start = if i == 0 { 0 } else { self.ends[i - 1] };
        &self.bytes[start..self.ends[i]]
    }

    pub(crate) fn last(&self) -> Option<&[u8]> {
        self.ends.len().checked_sub(1).map(|i| self.get(i))
    }
}

/// Adds leaf entry `e`'s TID to `out` unless `out` has `limit` already (then the
/// range is not `done`); whether to go on. Its bytes are kept as `keep` says.
fn take_entry(
    e: &[u8],
    (limit, out, keep): (usize, &mut Entries, &mut Keep<'_>),
    done: &mut bool,
) -> bool {
    if out.len() >= limit {
        *done = false;
        return false;
    }
    let (_, block, offset) = split_leaf_entry(e);
    let key = match keep {
        Keep::Each => e.to_vec(),
        Keep::Last(l) => {
            l.clear();
            l.extend_from_slice(e);
            Vec::new()
        }
        Keep::All(a) => {
            a.bytes.extend_from_slice(e);
            a.ends.push(a.bytes.len());
            Vec::new()
        }
    };
    out.push((key, Tid { block, offset }));
    true
}

/// The TIDs of `range`'s entries after `after` (exclusive), up to `limit`, in index
/// order; whether the range is done.
pub(crate) fn range_tids(
    sh: &Shared,
    index: RelKey,
    b: &Bounds,
    after: Option<&[u8]>,
    limit: usize,
    out: &mut Vec<(Vec<u8>, Tid)>,
    mut keep: Keep<'_>,
) -> Result<bool> {
    let from = after.unwrap_or(&b.start);
    let mut done = true;
    // Only the first entry visited can be `after` itself (entries are unique).
    let mut resumed = after;
    crate::btree::scan_from(sh, index, from, &mut |e| {
        if resumed.take().is_some_and(|a| a == e) || b.skips(e) {
            return Ok(true);
        }
        if b.past(e) {
            return Ok(false);
        }
        Ok(take_entry(e, (limit, out, &mut keep), &mut done))
    })?;
    Ok(done)
}

/// Whether the row at `tid` is dead to every snapshot (its inserter aborted, or its
/// deleter committed below `horizon`), for the writer `my`: `Some(its deleter)`.
fn dead_to_all(sh: &Shared, heap: RelKey, tid: Tid, horizon: Xid, my: Xid) -> Result<Option<Xid>> {
    let Some(buf) = heap_page(sh, heap, tid)? else {
        return Ok(None);
    };
    let g = buf.read();
    let Some(t) = strata_page::item(&g, tid.offset as usize) else {
        return Ok(None);
    };
    if t.len() < heap::TUPLE_HEADER_BYTES {
        return Err(corrupt(format!("short tuple at {tid:?} of {heap:?}")));
    }
    let (xmin, xmax) = (heap::tuple_xmin(t), heap::tuple_xmax(t));
    if xmin != my && !sh.clog.is_committed(xmin) {
        return Ok(Some(Xid::INVALID)); // one writer: not mine and not committed is aborted
    }
    let deleted = xmax != Xid::INVALID && xmax != my && xmax < horizon;
    Ok((deleted && sh.clog.is_committed(xmax)).then_some(xmax))
}

/// The writer's TIDs for `range` in `index` of table `heap` (all of them: memory
/// O(matches)), for UPDATE and DELETE, sorted by position in the heap. Entries whose
/// rows are dead to every snapshot are removed on the way (index rule 2's early
/// removal, PostgreSQL's index tuple killing and simple deletion in one): a row
/// updated again and again keeps one or two entries, not one per version.
pub(crate) fn collect_tids(
    sh: &Shared,
    heap: RelKey,
    index: RelKey,
    range: &IndexRange,
    my: Xid,
) -> Result<Vec<Tid>> {
    let Some(b) = range.bounds() else {
        return Ok(Vec::new());
    };
    let mut out = Vec::new();
    range_tids(sh, index, &b, None, usize::MAX, &mut out, Keep::Each)?;
    let horizon = access::removal_horizon(sh);
    let (mut tids, mut dead, mut conflict) = (Vec::new(), Vec::new(), Xid::INVALID);
    for (e, tid) in out {
        match dead_to_all(sh, heap, tid, horizon, my)? {
            Some(x) => {
                conflict = conflict.max(x);
                dead.push(e);
            }
            None => tids.push(tid),
        }
    }
    if !dead.is_empty() {
        crate::btree::delete_exact(sh, index, &dead, conflict)?;
    }
    tids.sort_unstable_by_key(|t| (t.block.0, t.offset));
    Ok(tids)
}

/// Resolves the table and index a scan reads, as of now: heap key, entry, index key.
pub(crate) type ResolveIndex<'a> = &'a dyn Fn() -> Result<(RelKey, Arc<RelEntry>, RelKey)>;

/// Visits the rows `range`'s entries point at that `my` (None: a reader) sees, in
/// index order and in batches (rule 4). Memory O(one batch).
pub(crate) fn scan_batches(
    sh: &Shared,
    resolve: ResolveIndex<'_>,
    range: &IndexRange,
    (snap, my): (&Snapshot<'_>, Option<Xid>),
    interrupt: Interrupt<'_>,
    f: &mut crate::RowVisitor<'_>,
) -> Result<()> {
    let mut cursor = crate::cursor::IndexCursor::new(sh, Box::new(resolve), range.clone(), my);
    let mut rows = Vec::new();
    loop {
        let more = cursor.next_batch(snap, interrupt, &mut rows)?;
        for row in rows.drain(..) {
            if !f(row)? {
                return Ok(());
            }
        }
        if !more {
            return Ok(());
        }
    }
}

/// The amcheck of one index against its table (PostgreSQL's `bt_index_check` with
/// `heapallindexed`): the tree checks (btree's `check`), every row rule 1 names has
/// its entry, and every entry points at an item with storage and that key. The caller
/// holds the writer lock: no transaction is in progress.
/// Returns the number of entries. O(the table + the index).
pub(crate) fn check(sh: &Shared, rel: &RelEntry, heap: RelKey, ix: &IndexDef) -> Result<usize> {
    let index = RelKey {
        rel: ix.relfilenumber,
        ..heap
    };
    let mut entries = crate::btree::check(sh, index)?;
    entries.sort_unstable();
    let n = sh.smgr.nblocks(heap, ForkNumber::Main)?;
    let horizon = access::removal_horizon(sh);
    let mut want = Vec::new();
    // Rows of aborted inserters: an entry may point at one with any key (their
    // values may be gone with their TOAST heap: toast rule 4).
    let mut aborted = Vec::new();
    for b in 0..n {
        let buf = sh.pool.read_buffer(heap_tag(heap, b), ReadMode::Normal)?;
        let g = buf.read();
        for (off, t) in heap::page_tuples(&g).map_err(corrupt)? {
            let (xmin, xmax) = (heap::tuple_xmin(t), heap::tuple_xmax(t));
            if !sh.clog.is_committed(xmin) {
                aborted.push((b, off));
                continue;
            }
            let row = crate::toast::decode_row(sh, heap, &rel.columns, t)?;
            let dead = xmax != Xid::INVALID && xmax < horizon && sh.clog.is_committed(xmax);
            let needed = !dead;
            want.push((
                leaf_entry(&row_key(rel, ix, &row).0, BlockNumber(b), off),
                needed,
            ));
        }
    }
    want.sort_unstable();
    let missing = want
        .iter()
        .find(|(w, needed)| *needed && entries.binary_search(w).is_err());
    if let Some((missing, _)) = missing {
        let (_, b, o) = split_leaf_entry(missing);
        return Err(corrupt(format!(
            "index \"{}\" lacks the entry of heap row ({}, {o})",
            ix.name, b.0
        )));
    }
    let has = |e: &Vec<u8>| {
        let (_, b, o) = split_leaf_entry(e);
        want.binary_search_by(|(w, _)| w.as_slice().cmp(e.as_slice()))
            .is_ok()
            || aborted.binary_search(&(b.0, o)).is_ok()
    };
    if let Some(extra) = entries.iter().find(|e| !has(e)) {
        let (_, b, o) = split_leaf_entry(extra);
        return Err(corrupt(format!(
            "index \"{}\" has an entry for ({}, {o}) that no heap row matches",
            ix.name, b.0
        )));
    }
    Ok(entries.len())
}

#[cfg(test)]
mod tests {

    use strata_types::Numeric;

    #[test]
    fn numeric_keys_sort_as_their_values() {
        let texts = [
            "-12345678901234567890.5",
            "-120",
            "-12",
            "-1.2",
            "-1.15",
            "-1.1",
            "-0.000001",
            "0",
            "0.000",
            "0.0000012",
            "0.1",
            "1",
            "1.00",
            "1.05",
            "1.5",
            "9.99",
            "10",
            "12",
            "12.0001",
            "120",
            "120.5",
            "1200000",
            "79228162514264337593543950335",
        ];
        let vals: Vec<Numeric> = texts.iter().map(|t| Numeric::parse(t).unwrap()).collect();
        for a in &vals {
            for b in &vals {
                assert_eq!(a.cmp(b), a.key_bytes().cmp(&b.key_bytes()), "{a} vs {b}");
            }
        }
        // Self-delimiting: no key is a proper prefix of another.
        for a in &vals {
            for b in &vals {
                let (ka, kb) = (a.key_bytes(), b.key_bytes());
                assert!(ka == kb || !kb.starts_with(&ka), "{a} prefixes {b}");
            }
        }
    }
}
