//! B-tree indexes on the engine: `strata_btree`'s pages through the buffer pool,
//! WAL-logged and replayed (issue 14, step 2; the catalog and SQL come next).
//!
//! Entry points: [`build_empty`], [`insert`], [`scan_from`], [`scan_backward`],
//! [`check`]; the redo of
//! the records written here, [`btree_redo`] (Btree).
//!
//! Records (resource manager Btree, 11):
//!
//! | record | content | written for |
//! |--------|---------|-------------|
//! | `BTREE_INSERT` | one block reference, item index (u16), entry | an entry inserted into a page with room |
//! | `BTREE_INSERT_MANY` | one block reference, a count (u16), then per entry its item index (u16), length (u16) and bytes, in the order inserted | several entries of one statement into one page with room |
//! | `BTREE_PAGES` | a count (u16), then block references, each with the page's image after the change | a split cascade (every split page, its new right sibling, the old right sibling's left link, the parents, a new root and the meta page), a new index, a build's pages |
//! | `BTREE_DELETE` | one block reference, the newest deleter of the rows (u32: standby conflicts), a count (u16), the item indexes (u16 each, ascending) | the removal of entries whose rows are dead to every snapshot from a leaf: VACUUM's, and the writer's on its way through an index (index rule 2) |
//!
//! Rules (cited as "btree rule N"; the pages' own are `strata_btree::page`'s):
//! 1. One record per insert: an entry into one page (or a statement's sorted entries
//!    that fit one page together, [`insert_many`]), or every page a split cascade
//!    changes as images in one record, so a crash never leaves half a split.
//!    (PostgreSQL logs a split and its parent's downlink in two records and completes
//!    incomplete splits later; one record is simpler, and a split is one insert in
//!    hundreds.)
//! 2. One writer (engine rule 1): only the transaction holding the writer lock
//!    changes an index. Readers lock one page at a time, shared, and move right past
//!    a split they did not see (btree page rule 3), so they never wait for a parent.
//! 3. Every page a record changes is locked exclusively from before the change until
//!    its LSN is set (engine rule 2); a split cascade locks its pages in rule 6's
//!    order, which no reader can invert: readers hold one lock.
//! 4. New blocks are extended through the storage manager first (access rule 3).
//! 5. The writer remembers the rightmost leaf it inserted into (the index's target
//!    block) and starts there when the target is above that leaf's first entry
//!    ([`fastpath`]): no other leaf can hold it. A split still descends for the
//!    parents. Readers always descend.
//! 6. A `BTREE_PAGES` record lists the pages a change created before those it
//!    changed, and the meta page last: replay installs them one at a time while a
//!    hot standby's readers follow right links and downlinks, so no page may point
//!    at one not yet installed (every link a change adds points at a new page).
//! 7. Backward scans ([`scan_backward`]) follow left links, which a split updates
//!    in the same record as the right links (the old right sibling's `left` points
//!    at the new page). A reader that read a left link before a split of that
//!    sibling finds the sibling's right link no longer pointing back, and moves
//!    right until it does (PostgreSQL's _bt_walk_left).
//! 8. A page a change rewrites whole is zeroed in the pool (`ReadMode::Zero`) only
//!    if no reader can reach it: a block the change made, or any block of an index
//!    being built (`new_from` = `u32::MAX`). Any other page is read as it is first:
//!    a zeroed page is visible to readers between its mapping and the writer's
//!    lock, and a reader descending through one would find no entries.

use crate::access::ZERO_PAGE;
use crate::records::{BlockRef, RM_BTREE};
use crate::redo::{unknown_record, RedoContext};
use crate::{corrupt, EngineError, Result, Shared};
use strata_btree::page::{self as bt, Meta, Opaque, FLAG_LEAF, FLAG_ROOT};
use strata_buffer::ReadMode;
use strata_page::PageBuf;
use strata_types::{BlockNumber, BufferTag, ForkNumber, RelKey, Xid};
use strata_wal::Record;

pub(crate) const BTREE_INSERT: u8 = 0x00;
pub(crate) const BTREE_PAGES: u8 = 0x10;
pub(crate) const BTREE_DELETE: u8 = 0x20;
pub(crate) const BTREE_INSERT_MANY: u8 = 0x30;

fn tag(rel: RelKey, block: u32) -> BufferTag {
    BufferTag::new(rel, ForkNumber::Main, BlockNumber(block))
}

/// Formats a new (empty, file just created) index: the meta page and an empty root
/// leaf, in one `BTREE_PAGES` record.
pub(crate) fn build_empty(sh: &Shared, rel: RelKey, xid: Xid) -> Result<()> {
    let mut meta = Box::new(ZERO_PAGE);
    bt::init_meta(&mut meta, Meta { root: 1, level: 0 });
    let mut root = Box::new(ZERO_PAGE);
    let o = Opaque {
        level: 0,
        flags: FLAG_LEAF | FLAG_ROOT,
        left: 0,
        right: 0,
    };
    bt::init_page(&mut root, o);
    let (m, r) = (extend(sh, rel)?, extend(sh, rel)?); // rule 4
    if (m, r) != (0, 1) {
        return Err(corrupt(format!("index {rel:?} is not new")));
    }
    write_pages(sh, rel, xid, vec![(0, meta), (1, root)], u32::MAX)
}

/// The root's block, from the meta page.
fn root(sh: &Shared, rel: RelKey) -> Result<u32> {
    let buf = sh.pool.read_buffer(tag(rel, 0), ReadMode::Normal)?;
    let g = buf.read();
    bt::meta(&g)
        .map(|m| m.root)
        .ok_or_else(|| corrupt(format!("index {rel:?} has no meta page")))
}

/// Rule 2: the leaf where `target` belongs, and the internal pages passed on the way.
fn find_leaf(sh: &Shared, rel: RelKey, target: &[u8]) -> Result<(u32, Vec<u32>)> {
    let mut b = root(sh, rel)?;
    let mut path = Vec::new();
    loop {
        let buf = sh.pool.read_buffer(tag(rel, b), ReadMode::Normal)?;
        let g = buf.read();
        let o = bt::opaque(&g);
        if bt::moves_right(&g, target) {
            b = o.right;
        } else if o.is_leaf() {
            return Ok((b, path));
        } else {
            path.push(b);
            b = bt::descend(&g, target);
        }
    }
}

/// Rule 5: the rightmost leaf the writer last inserted into, kept as the index's
/// target block (PostgreSQL's fastpath, in rd_targblock too), if it still is the
/// rightmost leaf and its first entry is below `target`: then every entry at or
/// above `target` belongs to it, and no other leaf holds one that starts with
/// `target`. Ascending keys (a serial column) skip the descent.
fn fastpath(sh: &Shared, rel: RelKey, target: &[u8]) -> Result<Option<u32>> {
    let Some(b) = sh.targblock.lock().get(&rel).copied() else {
        return Ok(None);
    };
    let buf = sh.pool.read_buffer(tag(rel, b), ReadMode::Normal)?;
    let g = buf.read();
    let o = bt::opaque(&g);
    let first = bt::first_entry(&g);
    let usable = o.is_leaf()
        && o.right == 0
        && strata_page::item_count(&g) > first
        && bt::entry(&g, first) < target;
    Ok(usable.then_some(b))
}

/// Inserts a leaf entry (`strata_btree::key::leaf_entry`): rule 1's one record.
pub(crate) fn insert(sh: &Shared, rel: RelKey, entry: &[u8], xid: Xid) -> Result<()> {
    if entry.len() > bt::MAX_ENTRY_BYTES {
        return Err(EngineError::RowTooBig(entry.len()));
    }
    let (mut b, mut path) = match fastpath(sh, rel, entry)? {
        Some(b) => (b, None),
        None => {
            let (b, path) = find_leaf(sh, rel, entry)?;
            (b, Some(path))
        }
    };
    // Move right while the leaf's high key says so (a split since the descent: none
    // with one writer, but the rule costs nothing).
    loop {
        let buf = sh.pool.read_buffer(tag(rel, b), ReadMode::Normal)?;
        let mut g = buf.write();
        if bt::moves_right(&g, entry) {
            b = bt::opaque(&g).right;
            continue;
        }
        let at = bt::lower_bound(&g, entry);
        if entry.len() <= strata_page::free_space(&g) {
            strata_page::insert_item(&mut g, at, entry);
            buf.mark_dirty(&g);
            let mut payload_tail = Vec::with_capacity(entry.len() + 2);
            payload_tail.extend_from_slice(&(at as u16).to_le_bytes());
            payload_tail.extend_from_slice(entry);
            crate::access::log_block(
                sh,
                buf.tag(),
                &mut g,
                false,
                RM_BTREE,
                BTREE_INSERT,
                xid,
                |r| {
                    let mut e = crate::codec::Enc::new();
                    r.encode(&mut e);
                    e.raw(&payload_tail);
                    e.0
                },
            )?;
            if bt::opaque(&g).right == 0 {
                sh.targblock.lock().insert(rel, b); // rule 5
            }
            return Ok(());
        }
        drop(g);
        drop(buf);
        // A split needs the parents: the fastpath has none, so descend after all.
        let mut path = match path.take() {
            Some(p) => p,
            None => {
                let (leaf, p) = find_leaf(sh, rel, entry)?;
                b = leaf;
                p
            }
        };
        let new_from = sh.smgr.nblocks(rel, ForkNumber::Main)?;
        let pages = split_cascade(sh, rel, b, entry.to_vec(), &mut path)?;
        return write_pages(sh, rel, xid, pages, new_from);
    }
}

/// Inserts sorted leaf entries: those that belong to one leaf and fit it go in
/// together with one `BTREE_INSERT_MANY` record (rule 1); an entry that would split
/// its leaf goes alone through [`insert`]. O(entries + leaves touched).
pub(crate) fn insert_many(sh: &Shared, rel: RelKey, entries: &[Vec<u8>], xid: Xid) -> Result<()> {
    if let Some(e) = entries.iter().find(|e| e.len() > bt::MAX_ENTRY_BYTES) {
        return Err(EngineError::RowTooBig(e.len()));
    }
    let mut rest = entries;
    while let Some(first) = rest.first() {
        let n = insert_on_leaf(sh, rel, rest, xid)?;
        if n == 0 {
            insert(sh, rel, first, xid)?;
            rest = &rest[1..];
        } else {
            rest = &rest[n..];
        }
    }
    Ok(())
}

/// The leading entries of `entries` that belong to the first one's leaf and fit it,
/// inserted with one record; how many (0: the first would split the leaf).
fn insert_on_leaf(sh: &Shared, rel: RelKey, entries: &[Vec<u8>], xid: Xid) -> Result<usize> {
    let b = match fastpath(sh, rel, &entries[0])? {
        Some(b) => b,
        None => find_leaf(sh, rel, &entries[0])?.0,
    };
    let buf = sh.pool.read_buffer(tag(rel, b), ReadMode::Normal)?;
    let mut g = buf.write();
    let mut done: Vec<(u16, &[u8])> = Vec::new();
    for e in entries {
        if bt::moves_right(&g, e) || e.len() > strata_page::free_space(&g) {
            break;
        }
        let at = bt::lower_bound(&g, e);
        strata_page::insert_item(&mut g, at, e);
        done.push((at as u16, e));
    }
    if done.is_empty() {
        return Ok(0);
    }
    buf.mark_dirty(&g);
    let info = if done.len() == 1 {
        BTREE_INSERT
    } else {
        BTREE_INSERT_MANY
    };
    crate::access::log_block(sh, buf.tag(), &mut g, false, RM_BTREE, info, xid, |r| {
        let mut enc = crate::codec::Enc::new();
        r.encode(&mut enc);
        if let [(at, e)] = done.as_slice() {
            enc.u16(*at);
            enc.raw(e);
            return enc.0;
        }
        enc.u16(done.len() as u16);
        for (at, e) in &done {
            enc.u16(*at);
            enc.u16(e.len() as u16);
            enc.raw(e);
        }
        enc.0
    })?;
    if bt::opaque(&g).right == 0 {
        sh.targblock.lock().insert(rel, b); // rule 5
    }
    Ok(done.len())
}

/// The pages a split of `b` for `entry` changes, up to where an entry fits or a new
/// root (rule 1), computed from the pages as they are (one writer: nothing else
/// changes them meanwhile). New blocks are extended first (rule 4).
fn split_cascade(
    sh: &Shared,
    rel: RelKey,
    mut b: u32,
    mut entry: Vec<u8>,
    path: &mut Vec<u32>,
) -> Result<Vec<(u32, Box<PageBuf>)>> {
    let mut out: Vec<(u32, Box<PageBuf>)> = Vec::new();
    loop {
        let page = current(sh, rel, b, &out)?;
        let o = bt::opaque(&page);
        let key_len = entry.len() - if o.is_leaf() { 0 } else { bt::CHILD_BYTES };
        let at = bt::lower_bound(&page, &entry[..key_len]);
        if entry.len() <= strata_page::free_space(&page) {
            let mut p = page;
            strata_page::insert_item(&mut p, at, &entry);
            out.push((b, p));
            return Ok(out);
        }
        let new_block = extend(sh, rel)?;
        let s = bt::split(&page, b, new_block, at, &entry);
        out.push((b, s.left));
        out.push((new_block, s.right));
        if o.right != 0 {
            let mut r = current(sh, rel, o.right, &out)?;
            let mut ro = bt::opaque(&r);
            ro.left = new_block;
            bt::set_opaque(&mut r, ro);
            out.push((o.right, r));
        }
        if o.flags & FLAG_ROOT != 0 {
            let root = extend(sh, rel)?;
            let mut r = Box::new(ZERO_PAGE);
            bt::new_root(&mut r, o.level + 1, b, &s.separator, new_block);
            out.push((root, r));
            let mut m = current(sh, rel, 0, &out)?;
            bt::init_meta(
                &mut m,
                Meta {
                    root,
                    level: o.level + 1,
                },
            );
            out.push((0, m));
            return Ok(out);
        }
        entry = bt::internal_entry(&s.separator, new_block);
        b = path.pop().ok_or_else(|| {
            corrupt(format!(
                "index {rel:?}: block {b} is not the root and has no parent"
            ))
        })?;
    }
}

/// Page `b` as the cascade has it so far: its newest version in `out`, else the pool's.
fn current(sh: &Shared, rel: RelKey, b: u32, out: &[(u32, Box<PageBuf>)]) -> Result<Box<PageBuf>> {
    if let Some((_, p)) = out.iter().rev().find(|(ob, _)| *ob == b) {
        return Ok(p.clone());
    }
    let buf = sh.pool.read_buffer(tag(rel, b), ReadMode::Normal)?;
    let g = buf.read();
    Ok(Box::new(*g))
}

/// A new block at the end of the index, zeroed on disk first (rule 4).
pub(crate) fn extend(sh: &Shared, rel: RelKey) -> Result<u32> {
    let b = sh.smgr.nblocks(rel, ForkNumber::Main)?;
    sh.smgr
        .extend(rel, ForkNumber::Main, BlockNumber(b), &ZERO_PAGE)?;
    Ok(b)
}

/// Rules 1, 3 and 6: installs the new versions of `pages` (the last version of each
/// block wins) under exclusive locks and logs them in one `BTREE_PAGES` record, the
/// blocks from `new_from` on (made by this change) first and the meta page last.
pub(crate) fn write_pages(
    sh: &Shared,
    rel: RelKey,
    xid: Xid,
    pages: Vec<(u32, Box<PageBuf>)>,
    new_from: u32,
) -> Result<()> {
    let mut last: Vec<(u32, Box<PageBuf>)> = Vec::new();
    for (b, p) in pages.into_iter().rev() {
        if !last.iter().any(|(lb, _)| *lb == b) {
            last.push((b, p));
        }
    }
    last.reverse();
    // Rule 6: replay installs the pages one at a time, in this order.
    last.sort_by_key(|(b, _)| match *b {
        0 => 2,
        b if b >= new_from => 0,
        _ => 1,
    });
    // Rule 8: a page a reader may reach is read, not zeroed, before it is locked.
    let mode = |b: u32| match new_from == u32::MAX || b >= new_from {
        true => ReadMode::Zero,
        false => ReadMode::Normal,
    };
    let bufs = last
        .iter()
        .map(|(b, _)| sh.pool.read_buffer(tag(rel, *b), mode(*b)))
        .collect::<std::result::Result<Vec<_>, _>>()?;
    let mut guards: Vec<_> = bufs.iter().map(|b| b.write()).collect();
    let mut e = crate::codec::Enc::new();
    e.u16(last.len() as u16);
    for ((b, p), (buf, g)) in last.iter().zip(bufs.iter().zip(guards.iter_mut())) {
        **g = **p;
        buf.mark_dirty(g);
        BlockRef {
            tag: tag(rel, *b),
            will_init: true,
            image: Some(p.clone()),
        }
        .encode(&mut e);
    }
    if rel.is_temp() {
        return Ok(()); // never logged (smgr rule 8)
    }
    let _redo = sh.redo_ptr.read();
    let (_, end) = sh.wal_insert(RM_BTREE, BTREE_PAGES, xid.0, &e.0)?;
    for g in guards.iter_mut() {
        strata_page::set_lsn(g, end);
    }
    Ok(())
}

/// Calls `f` with each leaf entry at or above `from`, in order, until it returns
/// false (rule 2: one shared page lock at a time).
pub(crate) fn scan_from(
    sh: &Shared,
    rel: RelKey,
    from: &[u8],
    f: &mut dyn FnMut(&[u8]) -> Result<bool>,
) -> Result<()> {
    let (b, _) = find_leaf(sh, rel, from)?;
    scan_leaves(sh, rel, b, from, f)
}

/// Calls `f` with each leaf entry below `before`, in descending order, until it
/// returns false (rule 2: one shared page lock at a time). A step left checks that
/// the left sibling still links right to the page it came from, and moves right
/// past a split it did not see (rule 7).
pub(crate) fn scan_backward(
    sh: &Shared,
    rel: RelKey,
    before: &[u8],
    f: &mut dyn FnMut(&[u8]) -> Result<bool>,
) -> Result<()> {
    let (mut b, _) = find_leaf(sh, rel, before)?;
    let mut first = true;
    loop {
        let left = {
            let buf = sh.pool.read_buffer(tag(rel, b), ReadMode::Normal)?;
            let g = buf.read();
            let end = match first {
                true => bt::lower_bound(&g, before),
                false => strata_page::item_count(&g),
            };
            first = false;
            for i in (bt::first_entry(&g)..end).rev() {
                if !f(bt::entry(&g, i))? {
                    return Ok(());
                }
            }
            bt::opaque(&g).left
        };
        if left == 0 {
            return Ok(());
        }
        b = left_of(sh, rel, left, b)?;
    }
}

/// The page left of `b` on its level, from `b`'s left link `l` (rule 7): a page
/// split since `l` was read lies between them, so move right until the page that
/// links right to `b`.
fn left_of(sh: &Shared, rel: RelKey, mut l: u32, b: u32) -> Result<u32> {
    loop {
        let buf = sh.pool.read_buffer(tag(rel, l), ReadMode::Normal)?;
        let right = bt::opaque(&buf.read()).right;
        if right == b {
            return Ok(l);
        }
        if right == 0 {
            return Err(corrupt(format!(
                "index {rel}: no page left of block {b} links to it"
            )));
        }
        l = right;
    }
}

/// [`scan_from`] for the writer, starting at the fastpath leaf when it serves
/// (rule 5): a unique check of an ascending key reads one page.
pub(crate) fn writer_scan_from(
    sh: &Shared,
    rel: RelKey,
    from: &[u8],
    f: &mut dyn FnMut(&[u8]) -> Result<bool>,
) -> Result<()> {
    let b = match fastpath(sh, rel, from)? {
        Some(b) => b,
        None => find_leaf(sh, rel, from)?.0,
    };
    scan_leaves(sh, rel, b, from, f)
}

fn scan_leaves(
    sh: &Shared,
    rel: RelKey,
    mut b: u32,
    from: &[u8],
    f: &mut dyn FnMut(&[u8]) -> Result<bool>,
) -> Result<()> {
    let mut first = true;
    loop {
        let buf = sh.pool.read_buffer(tag(rel, b), ReadMode::Normal)?;
        let g = buf.read();
        let start = if first {
            bt::lower_bound(&g, from)
        } else {
            bt::first_entry(&g)
        };
        first = false;
        for i in start..strata_page::item_count(&g) {
            if !f(bt::entry(&g, i))? {
                return Ok(());
            }
        }
        match bt::opaque(&g).right {
            0 => return Ok(()),
            r => b = r,
        }
    }
}

/// A leaf's visitor in [`each_leaf`]: the items to remove and their rows' newest
/// deleter.
pub(crate) type LeafVisitor<'a> = dyn FnMut(&PageBuf) -> Result<(Vec<u16>, Xid)> + 'a;

/// Visits the leaves left to right under an exclusive lock each; `f` names the item
/// indexes to remove from the page (ascending) and the newest deleter among their
/// rows, removed with one `BTREE_DELETE` record per page that changes (index rule 2;
/// the caller is the writer).
pub(crate) fn each_leaf(sh: &Shared, rel: RelKey, f: &mut LeafVisitor<'_>) -> Result<()> {
    let (mut b, _) = find_leaf(sh, rel, &[])?;
    loop {
        let buf = sh.pool.read_buffer(tag(rel, b), ReadMode::Normal)?;
        let mut g = buf.write();
        let (items, conflict) = f(&g)?;
        delete_items(sh, &buf, &mut g, &items, conflict)?;
        match bt::opaque(&g).right {
            0 => return Ok(()),
            r => b = r,
        }
    }
}

/// Removes the leaf entries `entries` (sorted; each present), one `BTREE_DELETE`
/// record per leaf; `conflict` is the newest deleter among their rows (standby rule
/// 9). The caller is the writer (no split meanwhile).
pub(crate) fn delete_exact(
    sh: &Shared,
    rel: RelKey,
    entries: &[Vec<u8>],
    conflict: Xid,
) -> Result<()> {
    let mut rest = entries;
    while let Some(first) = rest.first() {
        let (b, _) = find_leaf(sh, rel, first)?;
        let buf = sh.pool.read_buffer(tag(rel, b), ReadMode::Normal)?;
        let mut g = buf.write();
        let mut items = Vec::new();
        while let Some(e) = rest.first() {
            if bt::moves_right(&g, e) {
                break;
            }
            let at = bt::lower_bound(&g, e);
            if at < strata_page::item_count(&g) && bt::entry(&g, at) == e.as_slice() {
                items.push(at as u16);
            }
            rest = &rest[1..];
        }
        delete_items(sh, &buf, &mut g, &items, conflict)?;
    }
    Ok(())
}

/// The change and record of a `BTREE_DELETE` (engine rule 2), if there are items.
fn delete_items<'a>(
    sh: &Shared,
    buf: &strata_buffer::PinnedBuffer<'a>,
    g: &mut parking_lot::MappedRwLockWriteGuard<'a, PageBuf>,
    items: &[u16],
    conflict: Xid,
) -> Result<()> {
    if items.is_empty() {
        return Ok(());
    }
    **g = *strata_btree::build::delete_entries(g, items);
    buf.mark_dirty(g);
    let tag = buf.tag();
    crate::access::log_block(
        sh,
        tag,
        &mut *g,
        false,
        RM_BTREE,
        BTREE_DELETE,
        Xid::INVALID,
        |r| {
            let mut e = crate::codec::Enc::new();
            r.encode(&mut e);
            e.u32(conflict.0);
            e.u16(items.len() as u16);
            for i in items {
                e.u16(*i);
            }
            e.0
        },
    )?;
    Ok(())
}

/// An amcheck for the whole index: every page checks (btree page rule 4), siblings
/// link both ways, each page's high key is its parent's bound, each child is on the
/// level below. Returns the leaf entries in order.
pub(crate) fn check(sh: &Shared, rel: RelKey) -> Result<Vec<Vec<u8>>> {
    let root = root(sh, rel)?;
    let mut out = Vec::new();
    check_subtree(sh, rel, root, (None, None), &mut out)?;
    Ok(out)
}

fn check_subtree(
    sh: &Shared,
    rel: RelKey,
    b: u32,
    (low, high): (Option<Vec<u8>>, Option<Vec<u8>>),
    out: &mut Vec<Vec<u8>>,
) -> Result<()> {
    let page = current(sh, rel, b, &[])?;
    let bad = |m: String| corrupt(format!("index {rel:?} block {b}: {m}"));
    bt::check_page(&page).map_err(bad)?;
    let o = bt::opaque(&page);
    if bt::high_key(&page) != high.as_deref() {
        return Err(bad("high key is not its parent's bound".into()));
    }
    if o.right != 0 && bt::opaque(&*current(sh, rel, o.right, &[])?).left != b {
        return Err(bad("right sibling does not link back".into()));
    }
    let (first, n) = (bt::first_entry(&page), strata_page::item_count(&page));
    if o.is_leaf() {
        if low
            .as_deref()
            .is_some_and(|l| n > first && bt::entry(&page, first) < l)
        {
            return Err(bad("an entry below its parent's low key".into()));
        }
        out.extend((first..n).map(|i| bt::entry(&page, i).to_vec()));
        return Ok(());
    }
    for i in first..n {
        let lo = if i == first {
            low.clone()
        } else {
            Some(bt::entry_key(&page, i, false).to_vec())
        };
        let hi = if i + 1 < n {
            Some(bt::entry_key(&page, i + 1, false).to_vec())
        } else {
            high.clone()
        };
        let c = bt::child(&page, i);
        if bt::opaque(&*current(sh, rel, c, &[])?).level + 1 != o.level {
            return Err(bad(format!("child {c} is not on the level below")));
        }
        check_subtree(sh, rel, c, (lo, hi), out)?;
    }
    Ok(())
}

/// `strata waldump`'s text for a Btree record; each block reference goes to `block`.
pub(crate) fn describe(
    r: &Record,
    block: &mut dyn FnMut(&BlockRef),
) -> std::result::Result<String, crate::codec::DecodeError> {
    let mut d = crate::codec::Dec::new(&r.payload, "Btree record");
    match r.info {
        BTREE_INSERT => {
            block(&BlockRef::decode(&mut d)?);
            let at = d.u16()?;
            Ok(format!("item {at}, {} bytes", d.rest().len()))
        }
        BTREE_PAGES => {
            let n = d.u16()?;
            for _ in 0..n {
                block(&BlockRef::decode(&mut d)?);
            }
            Ok(format!("{n} pages"))
        }
        BTREE_INSERT_MANY => {
            block(&BlockRef::decode(&mut d)?);
            Ok(format!("{} entries", d.u16()?))
        }
        BTREE_DELETE => {
            block(&BlockRef::decode(&mut d)?);
            let conflict = d.u32()?;
            Ok(format!(
                "{} entries removed, conflict xid {conflict}",
                d.u16()?
            ))
        }
        other => Err(crate::codec::DecodeError(format!("info 0x{other:02X}"))),
    }
}

/// Redo of the Btree resource manager: an entry into one page, or the images of a
/// split cascade (recovery rule 2 for each block).
pub(crate) fn btree_redo(rx: &mut dyn RedoContext, r: &Record) -> Result<()> {
    let mut d = crate::codec::Dec::new(&r.payload, "Btree record");
    match r.info {
        BTREE_INSERT => {
            let b = BlockRef::decode(&mut d).map_err(corrupt)?;
            let at = d.u16().map_err(corrupt)? as usize;
            let entry = d.rest().to_vec();
            rx.redo_block(r, &b, &mut |p| {
                if strata_page::insert_item(p, at, &entry) {
                    Ok(())
                } else {
                    Err(format!("no room for an index entry at item {at}"))
                }
            })?;
            Ok(())
        }
        BTREE_PAGES => {
            let n = d.u16().map_err(corrupt)?;
            for _ in 0..n {
                let b = BlockRef::decode(&mut d).map_err(corrupt)?;
                rx.redo_block(r, &b, &mut |_| Ok(()))?;
            }
            Ok(())
        }
        BTREE_INSERT_MANY => {
            let b = BlockRef::decode(&mut d).map_err(corrupt)?;
            let n = d.u16().map_err(corrupt)?;
            let mut items = Vec::with_capacity(n as usize);
            for _ in 0..n {
                let at = d.u16().map_err(corrupt)? as usize;
                let len = d.u16().map_err(corrupt)? as usize;
                items.push((at, d.take(len).map_err(corrupt)?.to_vec()));
            }
            rx.redo_block(r, &b, &mut |p| {
                for (at, e) in &items {
                    if !strata_page::insert_item(p, *at, e) {
                        return Err(format!("no room for an index entry at item {at}"));
                    }
                }
                Ok(())
            })?;
            Ok(())
        }
        BTREE_DELETE => {
            let b = BlockRef::decode(&mut d).map_err(corrupt)?;
            let conflict = Xid(d.u32().map_err(corrupt)?);
            if rx.hot_standby() {
                // Standby rule 9: queries that may still see the rows go first.
                crate::standby::resolve_snapshot_conflict(rx.shared(), conflict);
            }
            let n = d.u16().map_err(corrupt)?;
            let items = (0..n)
                .map(|_| d.u16())
                .collect::<std::result::Result<Vec<u16>, _>>()
                .map_err(corrupt)?;
            rx.redo_block(r, &b, &mut |p| {
                *p = *strata_btree::build::delete_entries(p, &items);
                Ok(())
            })?;
            Ok(())
        }
        _ => Err(unknown_record(r)),
    }
}
