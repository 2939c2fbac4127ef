//! B-tree pages: PostgreSQL's nbtree layout, simplified, with Lehman and Yao's right
//! links and high keys so a reader needs no lock on a parent while a writer splits
//! the child.
//!
//! Block 0 of an index is its meta page (one item: magic, version, root block, root
//! level). Every other block is a tree page, whose special space is
//!
//! | offset | size | field | meaning |
//! |--------|------|-------|---------|
//! | 0 | 2 | `level` | 0 for a leaf |
//! | 2 | 2 | `flags` | [`FLAG_LEAF`], [`FLAG_ROOT`] |
//! | 4 | 4 | `left` | left sibling's block, 0 if none |
//! | 8 | 4 | `right` | right sibling's block, 0 if none (block 0 is the meta page) |
//! | 12 | 4 | reserved | 0 |
//!
//! and whose items are, in order:
//! - on a page with a right sibling, item 0: its **high key**, a bound every entry of
//!   the page is below and every entry to its right is at or above;
//! - a leaf's entries: `key ++ heap TID` ([`crate::key::leaf_entry`]), ascending;
//! - an internal page's entries: `low key ++ child block` (4 bytes big-endian),
//!   ascending: the child holds what is at or above its low key and below the next
//!   entry's. The first entry's low key is not compared: it stands for minus infinity.
//!
//! Rules (cited as "btree page rule N"):
//! 1. Entries are unique (a leaf entry carries its TID), so an entry has one place.
//! 2. A split ([`split`]) keeps the lower part of the entries in place and moves the
//!    upper part to a new right sibling; the left page's new high key, the
//!    **separator**, is the right page's first entry (a leaf's whole entry, an
//!    internal page's low key); the parent then gets `separator ++ new block`.
//! 3. A reader whose target is at or above a page's high key moves right
//!    ([`moves_right`]): the page split after the reader read its parent.
//! 4. [`check_page`] verifies what a page alone can promise (order, bounds, layout),
//!    as PostgreSQL's amcheck does page by page.
//! 5. A split of the rightmost page of a level by an entry at its end (ascending
//!    keys) leaves [`RIGHTMOST_SPLIT_PERCENT`] of the bytes on the left, as
//!    PostgreSQL's does; any other split halves the bytes.
//! 6. A split always fits: the left part beside its new high key (the separator),
//!    the right part beside the old high key. No entry is larger than a third of a
//!    page ([`MAX_ENTRY_BYTES`]; callers check before an entry reaches a page), so
//!    such a point exists, and [`split_point`] takes the one nearest rule 5's share.

use crate::key::TID_BYTES;
use strata_page::PageBuf;
use strata_types::BLCKSZ;

/// Bytes of a tree page's special space.
pub const SPECIAL_BYTES: usize = 16;
pub const FLAG_LEAF: u16 = 1;
pub const FLAG_ROOT: u16 = 2;
/// Bytes of an internal entry's child pointer.
pub const CHILD_BYTES: usize = 4;
/// The largest leaf entry (key and TID) a page takes: PostgreSQL's limit for a
/// version-4 B-tree row (BTMaxItemSize, 2704 bytes), which here leaves room for an
/// internal entry made of it (plus its child block) to fit three to a page, so a
/// split always finds a point where both halves fit beside their high keys
/// (rule 6).
pub const MAX_ENTRY_BYTES: usize = 2704;

/// Bytes of a page that items (and their item ids) may take.
const USABLE_BYTES: usize = BLCKSZ - strata_page::HEADER_BYTES - SPECIAL_BYTES;

const _: () = assert!(
    3 * (MAX_ENTRY_BYTES + CHILD_BYTES + strata_page::ITEM_ID_BYTES) <= USABLE_BYTES,
    "three of the largest internal entries fit a page (rule 6)"
);

/// Rule 5: the share of a rightmost page's bytes its left part keeps when an entry
/// at its end splits it (PostgreSQL's leaf fillfactor, 90).
pub const RIGHTMOST_SPLIT_PERCENT: usize = 90;

const META_MAGIC: u32 = 0x053162;
const META_VERSION: u32 = 1;

/// A tree page's special space.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub struct Opaque {
    pub level: u16,
    pub flags: u16,
    pub left: u32,
    pub right: u32,
}

impl Opaque {
    pub fn is_leaf(&self) -> bool {
        self.flags & FLAG_LEAF != 0
    }
}

/// The meta page's content.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Meta {
    pub root: u32,
    pub level: u16,
}

/// Formats the meta page.
pub fn init_meta(p: &mut PageBuf, m: Meta) {
    strata_page::init(p, 0);
    let mut item = Vec::with_capacity(14);
    item.extend_from_slice(&META_MAGIC.to_be_bytes());
    item.extend_from_slice(&META_VERSION.to_be_bytes());
    item.extend_from_slice(&m.root.to_be_bytes());
    item.extend_from_slice(&m.level.to_be_bytes());
    strata_page::add_item(p, &item).expect("an empty page takes the meta item");
}

/// The meta page's content, or None if the page is not one.
pub fn meta(p: &PageBuf) -> Option<Meta> {
    let item = strata_page::item(p, 0)?;
    if item.len() != 14 {
        return None;
    }
    let at = |i: usize| u32::from_be_bytes(item[i..i + 4].try_into().expect("4 bytes"));
    if at(0) != META_MAGIC || at(4) != META_VERSION {
        return None;
    }
    Some(Meta {
        root: at(8),
        level: u16::from_be_bytes([item[12], item[13]]),
    })
}

/// Formats an empty tree page.
pub fn init_page(p: &mut PageBuf, o: Opaque) {
    strata_page::init(p, SPECIAL_BYTES);
    set_opaque(p, o);
}

pub fn opaque(p: &PageBuf) -> Opaque {
    let s = strata_page::special(p);
    let u16_at = |i: usize| u16::from_le_bytes([s[i], s[i + 1]]);
    let u32_at = |i: usize| u32::from_le_bytes(s[i..i + 4].try_into().expect("4 bytes"));
    Opaque {
        level: u16_at(0),
        flags: u16_at(2),
        left: u32_at(4),
        right: u32_at(8),
    }
}

pub fn set_opaque(p: &mut PageBuf, o: Opaque) {
    let s = strata_page::special_mut(p);
    s[0..2].copy_from_slice(&o.level.to_le_bytes());
    s[2..4].copy_from_slice(&o.flags.to_le_bytes());
    s[4..8].copy_from_slice(&o.left.to_le_bytes());
    s[8..12].copy_from_slice(&o.right.to_le_bytes());
}

/// Index of the first entry (after the high key, if any).
pub fn first_entry(p: &PageBuf) -> usize {
    usize::from(opaque(p).right != 0)
}

/// Number of entries (items but the high key).
pub fn entry_count(p: &PageBuf) -> usize {
    strata_page::item_count(p) - first_entry(p)
}

/// The page's high key: None on the rightmost page of its level.
pub fn high_key(p: &PageBuf) -> Option<&[u8]> {
    (opaque(p).right != 0).then(|| item(p, 0))
}

fn item(p: &PageBuf, idx: usize) -> &[u8] {
    strata_page::item(p, idx).expect("a tree page's items are all live")
}

/// The bytes entry `idx` (an item index) is ordered by: a leaf's whole entry, an
/// internal entry's low key.
pub fn entry_key(p: &PageBuf, idx: usize, leaf: bool) -> &[u8] {
    let e = item(p, idx);
    if leaf {
        e
    } else {
        &e[..e.len() - CHILD_BYTES]
    }
}

/// The item at `idx` as stored.
pub fn entry(p: &PageBuf, idx: usize) -> &[u8] {
    item(p, idx)
}

/// The child block of internal entry `idx`.
pub fn child(p: &PageBuf, idx: usize) -> u32 {
    let e = item(p, idx);
    u32::from_be_bytes(e[e.len() - CHILD_BYTES..].try_into().expect("4 bytes"))
}

/// An internal entry: `low key ++ child`.
pub fn internal_entry(low_key: &[u8], child: u32) -> Vec<u8> {
    let mut e = Vec::with_capacity(low_key.len() + CHILD_BYTES);
    e.extend_from_slice(low_key);
    e.extend_from_slice(&child.to_be_bytes());
    e
}

/// Rule 3: `target` belongs to a page to the right.
pub fn moves_right(p: &PageBuf, target: &[u8]) -> bool {
    high_key(p).is_some_and(|h| target >= h)
}

/// The item index of the first entry whose key is at or above `target` (where an
/// entry equal to `target` would be inserted); past the last entry if none.
pub fn lower_bound(p: &PageBuf, target: &[u8]) -> usize {
    let leaf = opaque(p).is_leaf();
    let (mut lo, mut hi) = (first_entry(p), strata_page::item_count(p));
    while lo < hi {
        let mid = (lo + hi) / 2;
        if entry_key(p, mid, leaf) < target {
            lo = mid + 1;
        } else {
            hi = mid;
        }
    }
    lo
}

/// The child of an internal page to descend to for `target`: that of the last entry
/// whose low key is at or below it (the first entry's counts as minus infinity).
pub fn descend(p: &PageBuf, target: &[u8]) -> u32 {
    let first = first_entry(p);
    let (mut lo, mut hi) = (first + 1, strata_page::item_count(p));
    while lo < hi {
        let mid = (lo + hi) / 2;
        if entry_key(p, mid, false) <= target {
            lo = mid + 1;
        } else {
            hi = mid;
        }
    }
    child(p, lo - 1)
}

/// A split's result (rule 2): the two pages and the separator for the parent.
pub struct Split {
    pub left: Box<PageBuf>,
    pub right: Box<PageBuf>,
    pub separator: Vec<u8>,
}

/// Splits page `p` (at block `me`) with `new` inserted at item index `at`, the upper
/// part going to a new page at block `new_block` (rule 2). The caller writes both,
/// points the old right sibling's `left` at `new_block` and inserts
/// `separator ++ new_block` into the parent.
pub fn split(p: &PageBuf, me: u32, new_block: u32, at: usize, new: &[u8]) -> Split {
    let o = opaque(p);
    let first = first_entry(p);
    let mut entries: Vec<&[u8]> = (first..strata_page::item_count(p))
        .map(|i| item(p, i))
        .collect();
    entries.insert(at - first, new);
    // Rule 5: the rightmost page split by an entry at its end keeps most of its
    // entries (ascending keys would otherwise leave every page half full).
    let leaf = o.is_leaf();
    let percent = if o.right == 0 && at == strata_page::item_count(p) {
        RIGHTMOST_SPLIT_PERCENT
    } else {
        50
    };
    let high_bytes = high_key(p).map_or(0, |h| h.len() + strata_page::ITEM_ID_BYTES);
    let k = split_point(&entries, leaf, high_bytes, percent);
    let separator = if leaf {
        entries[k].to_vec()
    } else {
        entries[k][..entries[k].len() - CHILD_BYTES].to_vec()
    };
    let flags = o.flags & !FLAG_ROOT;
    let mut left = Box::new([0u8; BLCKSZ]);
    init_page(
        &mut left,
        Opaque {
            level: o.level,
            flags,
            left: o.left,
            right: new_block,
        },
    );
    fill_page(&mut left, Some(&separator), &entries[..k]);
    let mut right = Box::new([0u8; BLCKSZ]);
    init_page(
        &mut right,
        Opaque {
            level: o.level,
            flags,
            left: me,
            right: o.right,
        },
    );
    fill_page(&mut right, high_key(p), &entries[k..]);
    Split {
        left,
        right,
        separator,
    }
}

/// Rules 5 and 6: the first index of the right part. Among the points where the
/// left part fits beside its high key (the separator: entry `k`'s key) and the
/// right part beside `high_bytes` (the old high key's item, 0 if none), the one
/// nearest the first point that leaves `left_percent` of the bytes on the left.
/// O(entries).
fn split_point(entries: &[&[u8]], leaf: bool, high_bytes: usize, left_percent: usize) -> usize {
    let cost = |e: &[u8]| e.len() + strata_page::ITEM_ID_BYTES;
    let sep_cost = |e: &[u8]| cost(e) - if leaf { 0 } else { CHILD_BYTES };
    let n = entries.len();
    assert!(n >= 2, "a split needs two entries");
    // left[k]: the bytes of entries[..k].
    let mut left = Vec::with_capacity(n + 1);
    left.push(0usize);
    for e in entries {
        left.push(left.last().copied().unwrap_or(0) + cost(e));
    }
    let total = left[n];
    let fits = |k: usize| {
        left[k] + sep_cost(entries[k]) <= USABLE_BYTES
            && total - left[k] + high_bytes <= USABLE_BYTES
    };
    let want = (1..n)
        .find(|&k| left[k] * 100 >= total * left_percent)
        .unwrap_or(n - 1);
    // Nearest fitting point, looking below and above in turn.
    for d in 0..n {
        for k in [want.checked_sub(d), want.checked_add(d)]
            .into_iter()
            .flatten()
        {
            if (1..n).contains(&k) && fits(k) {
                return k;
            }
        }
    }
    panic!("no split point fits (rule 6): entries over MAX_ENTRY_BYTES reached a page");
}

/// Writes `high` (if any) then `entries` into an empty page, in order.
pub fn fill_page(p: &mut PageBuf, high: Option<&[u8]>, entries: &[&[u8]]) {
    if let Some(h) = high {
        strata_page::add_item(p, h).expect("the high key fits an empty page");
    }
    for e in entries {
        strata_page::add_item(p, e).expect("half of a page's entries fit a page");
    }
}

/// A new root above a split root: `[-inf ++ left, separator ++ right]`.
pub fn new_root(p: &mut PageBuf, level: u16, left: u32, separator: &[u8], right: u32) {
    init_page(
        p,
        Opaque {
            level,
            flags: FLAG_ROOT,
            left: 0,
            right: 0,
        },
    );
    strata_page::add_item(p, &internal_entry(&[], left)).expect("fits");
    strata_page::add_item(p, &internal_entry(separator, right)).expect("fits");
}

/// Rule 4: entries ascending, all below the high key, leaf entries long enough for a
/// TID, internal ones for a child; the level agrees with the leaf flag.
pub fn check_page(p: &PageBuf) -> Result<(), String> {
    let o = opaque(p);
    if o.is_leaf() != (o.level == 0) {
        return Err(format!("level {} with flags {:#x}", o.level, o.flags));
    }
    let leaf = o.is_leaf();
    let min = if leaf { TID_BYTES } else { CHILD_BYTES };
    let first = first_entry(p);
    let n = strata_page::item_count(p);
    for i in first..n {
        let Some(e) = strata_page::item(p, i) else {
            return Err(format!("item {i} is not live"));
        };
        if e.len() < min {
            return Err(format!("item {i} has {} bytes", e.len()));
        }
        // The first internal entry's low key is not compared (minus infinity).
        let compared = leaf || i > first;
        if compared && i + 1 < n && entry_key(p, i, leaf) >= entry_key(p, i + 1, leaf) {
            return Err(format!("items {i} and {} out of order", i + 1));
        }
        if let Some(h) = high_key(p) {
            if compared && entry_key(p, i, leaf) >= h {
                return Err(format!("item {i} at or above the high key"));
            }
        }
    }
    Ok(())
}
