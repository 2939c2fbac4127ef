//! Bottom-up builds (PostgreSQL's nbtsort): sorted entries fill pages left to right,
//! one level at a time, so a new index over a filled table costs one write per page
//! instead of one descent and one WAL record per entry. Also the leaf delete VACUUM
//! uses ([`delete_entries`]).
//!
//! Rules (cited as "build rule N"):
//! 1. A level's pages take consecutive blocks, handed out by the caller in the order
//!    pages are finished, so each page's right link is the next block of its level.
//! 2. A page is filled up to [`LEAF_FILL_PERCENT`] (leaves) or
//!    [`INTERNAL_FILL_PERCENT`] of its space, leaving room for later inserts; its high
//!    key is the next page's first entry (a leaf's whole entry, an internal page's low
//!    key), and it always fits: if it would not, the page's last entry moves on to the
//!    next page and becomes the high key.
//! 3. The parent level gets one entry per page, `low key ++ block`, the leftmost with
//!    an empty low key (minus infinity), as `page::new_root` makes them.

use crate::page::{fill_page, init_page, Opaque, CHILD_BYTES, FLAG_LEAF, FLAG_ROOT, SPECIAL_BYTES};
use strata_page::{PageBuf, HEADER_BYTES, ITEM_ID_BYTES};
use strata_types::BLCKSZ;

pub const LEAF_FILL_PERCENT: usize = 90;
pub const INTERNAL_FILL_PERCENT: usize = 70;

const USABLE: usize = BLCKSZ - HEADER_BYTES - SPECIAL_BYTES;

fn cost(e: &[u8]) -> usize {
    e.len() + ITEM_ID_BYTES
}

/// One level being built: entries are pushed in order; finished pages come out with
/// their blocks (rule 1).
pub struct LevelBuilder {
    level: u16,
    /// Entries of the page being filled, and their bytes with item ids.
    cur: Vec<Vec<u8>>,
    used: usize,
    /// The block of the page being filled, and of the page before it (0: none).
    block: u32,
    left: u32,
    pages: u32,
    /// Entries for the level above (rule 3).
    parents: Vec<Vec<u8>>,
}

impl LevelBuilder {
    /// A level whose first page goes to block `first_block`.
    pub fn new(level: u16, first_block: u32) -> LevelBuilder {
        LevelBuilder {
            level,
            cur: Vec::new(),
            used: 0,
            block: first_block,
            left: 0,
            pages: 0,
            parents: Vec::new(),
        }
    }

    fn leaf(&self) -> bool {
        self.level == 0
    }

    /// The bytes of `e` an order is taken on: a leaf's whole entry, an internal low key.
    fn key_of<'a>(&self, e: &'a [u8]) -> &'a [u8] {
        if self.leaf() {
            e
        } else {
            &e[..e.len() - CHILD_BYTES]
        }
    }

    /// Adds the next entry (ascending). Returns a finished page, if this entry
    /// started a new one: (block, page).
    pub fn push(&mut self, e: Vec<u8>) -> Option<(u32, Box<PageBuf>)> {
        let pct = if self.leaf() {
            LEAF_FILL_PERCENT
        } else {
            INTERNAL_FILL_PERCENT
        };
        if self.cur.is_empty() || self.used + cost(&e) <= USABLE * pct / 100 {
            self.used += cost(&e);
            self.cur.push(e);
            return None;
        }
        // Rule 2: the high key (the next page's first key) must fit beside the
        // entries; moving the last entry on makes it so (it was on this page).
        let mut carry = None;
        if self.cur.len() > 1 && self.used + cost(self.key_of(&e)) > USABLE {
            let last = self.cur.pop().expect("more than one");
            self.used -= cost(&last);
            carry = Some(last);
        }
        let high = self.key_of(carry.as_ref().unwrap_or(&e)).to_vec();
        let page = self.finish_page(Some(&high), self.block + 1);
        if let Some(c) = carry {
            self.used += cost(&c);
            self.cur.push(c);
        }
        self.used += cost(&e);
        self.cur.push(e);
        Some(page)
    }

    /// Writes the current entries into a page whose right sibling is `right`.
    fn finish_page(&mut self, high: Option<&[u8]>, right: u32) -> (u32, Box<PageBuf>) {
        let mut p = Box::new([0u8; BLCKSZ]);
        let flags = if self.leaf() { FLAG_LEAF } else { 0 };
        let o = Opaque {
            level: self.level,
            flags,
            left: self.left,
            right: if high.is_some() { right } else { 0 },
        };
        init_page(&mut p, o);
        let entries: Vec<&[u8]> = self.cur.iter().map(Vec::as_slice).collect();
        fill_page(&mut p, high, &entries);
        let low = match (self.pages, self.cur.first()) {
            (0, _) | (_, None) => Vec::new(),
            (_, Some(first)) => self.key_of(first).to_vec(),
        };
        self.parents
            .push(crate::page::internal_entry(&low, self.block));
        self.pages += 1;
        self.cur.clear();
        self.used = 0;
        let done = (self.block, p);
        self.left = self.block;
        self.block += 1;
        done
    }

    /// Ends the level: its last page (the root, flagged so, if it is the level's only
    /// page), the entries for the level above, and the next free block.
    pub fn finish(mut self) -> ((u32, Box<PageBuf>), Vec<Vec<u8>>, u32) {
        let only = self.pages == 0;
        let (b, mut p) = self.finish_page(None, 0);
        if only {
            let mut o = crate::page::opaque(&p);
            o.flags |= FLAG_ROOT;
            crate::page::set_opaque(&mut p, o);
        }
        ((b, p), self.parents, self.block)
    }
}

/// A leaf without the entries at item indexes `remove` (ascending; never the high
/// key): VACUUM's removal of entries whose heap rows are gone.
pub fn delete_entries(p: &PageBuf, remove: &[u16]) -> Box<PageBuf> {
    let o = crate::page::opaque(p);
    let first = crate::page::first_entry(p);
    let keep: Vec<&[u8]> = (first..strata_page::item_count(p))
        .filter(|i| remove.binary_search(&(*i as u16)).is_err())
        .map(|i| crate::page::entry(p, i))
        .collect();
    let mut out = Box::new([0u8; BLCKSZ]);
    init_page(&mut out, o);
    fill_page(&mut out, crate::page::high_key(p), &keep);
    strata_page::set_lsn(&mut out, strata_page::lsn(p));
    out
}
