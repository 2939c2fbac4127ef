//! A whole tree of pages in memory, driven by the page functions as the engine will
//! drive them through the buffer pool: inserts with splits up to new roots, searches
//! that move right, scans along the leaves, and a tree-wide check.

use crate::key::{encode_key, leaf_entry, split_leaf_entry, KeyPart};
use crate::page::*;
use proptest::prelude::*;
use strata_page::PageBuf;
use strata_types::{BlockNumber, BLCKSZ};

fn blank() -> Box<PageBuf> {
    Box::new([0u8; BLCKSZ])
}

/// Block 0 is the meta page.
struct Tree {
    pages: Vec<Box<PageBuf>>,
}

impl Tree {
    fn new() -> Tree {
        let mut meta = blank();
        init_meta(&mut meta, Meta { root: 1, level: 0 });
        let mut root = blank();
        init_page(
            &mut root,
            Opaque {
                level: 0,
                flags: FLAG_LEAF | FLAG_ROOT,
                left: 0,
                right: 0,
            },
        );
        Tree {
            pages: vec![meta, root],
        }
    }

    /// A tree built bottom-up from sorted `entries` (build rules 1-3).
    fn build(entries: &[Vec<u8>]) -> Tree {
        let mut pages: Vec<Box<PageBuf>> = vec![blank()];
        let put = |(b, p): (u32, Box<PageBuf>), pages: &mut Vec<Box<PageBuf>>| {
            assert_eq!(b as usize, pages.len(), "blocks are handed out in order");
            pages.push(p);
        };
        let mut level = crate::build::LevelBuilder::new(0, 1);
        for e in entries {
            if let Some(done) = level.push(e.clone()) {
                put(done, &mut pages);
            }
        }
        let mut n = 0u16;
        loop {
            let (last, parents, next) = level.finish();
            put(last, &mut pages);
            if parents.len() == 1 {
                init_meta(
                    &mut pages[0],
                    Meta {
                        root: next - 1,
                        level: n,
                    },
                );
                return Tree { pages };
            }
            n += 1;
            level = crate::build::LevelBuilder::new(n, next);
            for e in parents {
                if let Some(done) = level.push(e) {
                    put(done, &mut pages);
                }
            }
        }
    }

    fn page(&self, b: u32) -> &PageBuf {
        &self.pages[b as usize]
    }

    /// The leaf for `target`, and the internal pages passed on the way down.
    fn find_leaf(&self, target: &[u8]) -> (u32, Vec<u32>) {
        let mut b = meta(self.page(0)).unwrap().root;
        let mut path = Vec::new();
        loop {
            let p = self.page(b);
            if moves_right(p, target) {
                b = opaque(p).right;
            } else if opaque(p).is_leaf() {
                return (b, path);
            } else {
                path.push(b);
                b = descend(p, target);
            }
        }
    }

    fn insert(&mut self, entry: &[u8]) {
        let (leaf, mut path) = self.find_leaf(entry);
        self.insert_into(leaf, entry.to_vec(), &mut path);
    }

    /// Inserts `entry` into page `b` or a right sibling of it, splitting upwards.
    fn insert_into(&mut self, mut b: u32, mut entry: Vec<u8>, path: &mut Vec<u32>) {
        loop {
            let o = opaque(self.page(b));
            let key_len = entry.len() - if o.is_leaf() { 0 } else { CHILD_BYTES };
            if moves_right(self.page(b), &entry[..key_len]) {
                b = o.right;
                continue;
            }
            let at = lower_bound(self.page(b), &entry[..key_len]);
            if strata_page::insert_item(&mut self.pages[b as usize], at, &entry) {
                return;
            }
            let new_block = self.pages.len() as u32;
            let s = split(self.page(b), b, new_block, at, &entry);
            self.pages[b as usize] = s.left;
            self.pages.push(s.right);
            if o.right != 0 {
                let r = &mut self.pages[o.right as usize];
                let mut ro = opaque(r);
                ro.left = new_block;
                set_opaque(r, ro);
            }
            if o.flags & FLAG_ROOT != 0 {
                let root = self.pages.len() as u32;
                let mut r = blank();
                new_root(&mut r, o.level + 1, b, &s.separator, new_block);
                self.pages.push(r);
                let m = Meta {
                    root,
                    level: o.level + 1,
                };
                init_meta(&mut self.pages[0], m);
                return;
            }
            entry = internal_entry(&s.separator, new_block);
            b = path.pop().expect("a page below the root has a parent");
        }
    }

    /// Every leaf entry, left to right.
    fn scan(&self) -> Vec<Vec<u8>> {
        let (mut b, _) = self.find_leaf(&[]);
        let mut out = Vec::new();
        loop {
            let p = self.page(b);
            for i in first_entry(p)..strata_page::item_count(p) {
                out.push(entry(p, i).to_vec());
            }
            match opaque(p).right {
                0 => return out,
                r => b = r,
            }
        }
    }

    fn contains(&self, e: &[u8]) -> bool {
        let (b, _) = self.find_leaf(e);
        let p = self.page(b);
        let at = lower_bound(p, e);
        at < strata_page::item_count(p) && entry(p, at) == e
    }

    /// Every page checks; siblings link both ways; each high key is the next page's
    /// first key; each child lies between its parent entry's low key and the next.
    fn check(&self) -> Result<(), String> {
        let root = meta(self.page(0)).unwrap().root;
        self.check_subtree(root, None, None)
    }

    fn check_subtree(&self, b: u32, low: Option<&[u8]>, high: Option<&[u8]>) -> Result<(), String> {
        let p = self.page(b);
        check_page(p).map_err(|e| format!("block {b}: {e}"))?;
        let o = opaque(p);
        if high_key(p) != high {
            return Err(format!("block {b}: high key is not its parent's bound"));
        }
        if o.right != 0 && opaque(self.page(o.right)).left != b {
            return Err(format!("block {b}: right sibling does not link back"));
        }
        let (first, n) = (first_entry(p), strata_page::item_count(p));
        if o.is_leaf() {
            let below = low.is_some_and(|l| n > first && entry_key(p, first, true) < l);
            return if below {
                Err(format!("block {b}: an entry below its low key"))
            } else {
                Ok(())
            };
        }
        for i in first..n {
            let lo = if i == first {
                low
            } else {
                Some(entry_key(p, i, false))
            };
            let hi = if i + 1 < n {
                Some(entry_key(p, i + 1, false))
            } else {
                high
            };
            let c = self.page(child(p, i));
            if opaque(c).level + 1 != o.level {
                return Err(format!(
                    "block {b}: child {} on the wrong level",
                    child(p, i)
                ));
            }
            self.check_subtree(child(p, i), lo, hi)?;
        }
        Ok(())
    }
}

fn row_entry(a: Option<i64>, s: &Option<String>, tid: u32) -> Vec<u8> {
    let mut key = Vec::new();
    let text = s.as_deref().map(str::as_bytes);
    let parts = [
        a.map_or(KeyPart::Null, KeyPart::Int),
        text.map_or(KeyPart::Null, KeyPart::Bytes),
    ];
    encode_key(&parts, &mut key);
    leaf_entry(&key, BlockNumber(tid / 100), (tid % 100) as u16)
}

/// Values in PostgreSQL's ascending order: NULLs last.
fn cmp_nulls_last<T: Ord>(a: &Option<T>, b: &Option<T>) -> std::cmp::Ordering {
    match (a, b) {
        (Some(x), Some(y)) => x.cmp(y),
        (None, None) => std::cmp::Ordering::Equal,
        (None, _) => std::cmp::Ordering::Greater,
        (_, None) => std::cmp::Ordering::Less,
    }
}

fn text() -> impl Strategy<Value = Option<String>> {
    prop_oneof![
        1 => Just(None),
        6 => "[a-c\u{0}]{0,6}".prop_map(Some),
        2 => "[a-z]{200,600}".prop_map(Some),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(48))]

    /// Btree rule 1: byte order is value order, column by column, NULLs last.
    #[test]
    fn keys_sort_as_their_values(
        a in proptest::collection::vec((proptest::option::of(any::<i64>()), text()), 2..40)
    ) {
        for x in &a {
            for y in &a {
                let (ex, ey) = (row_entry(x.0, &x.1, 0), row_entry(y.0, &y.1, 0));
                let want = cmp_nulls_last(&x.0, &y.0).then_with(|| cmp_nulls_last(&x.1, &y.1));
                prop_assert_eq!(ex.cmp(&ey), want, "{:?} vs {:?}", x, y);
            }
        }
    }

    /// Inserted in any order, with splits up to a three-level tree: every entry is
    /// found, the leaves hold them all in order, and every page and link checks.
    #[test]
    fn a_tree_of_pages_holds_every_entry_in_order(
        rows in proptest::collection::vec((proptest::option::of(-50i64..50), text()), 1..1500)
    ) {
        let mut t = Tree::new();
        let mut entries: Vec<Vec<u8>> = rows
            .iter()
            .enumerate()
            .map(|(i, (a, s))| row_entry(*a, s, i as u32))
            .collect();
        for e in &entries {
            t.insert(e);
        }
        prop_assert_eq!(t.check(), Ok(()));
        for e in &entries {
            prop_assert!(t.contains(e));
        }
        entries.sort();
        prop_assert_eq!(t.scan(), entries);
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(32))]

    /// Build rules 1-3: a tree built bottom-up from any sorted entries (small keys,
    /// keys of hundreds of bytes, none) checks, holds them all in order, takes inserts
    /// afterwards, and loses entries to `delete_entries` only where asked.
    #[test]
    fn a_tree_built_bottom_up_checks_and_takes_inserts(
        rows in proptest::collection::vec((proptest::option::of(-50i64..50), text()), 0..3000),
        more in proptest::collection::vec((proptest::option::of(-50i64..50), text()), 0..300),
    ) {
        let mut entries: Vec<Vec<u8>> = rows
            .iter()
            .enumerate()
            .map(|(i, (a, s))| row_entry(*a, s, i as u32))
            .collect();
        entries.sort();
        let mut t = Tree::build(&entries);
        prop_assert_eq!(t.check(), Ok(()));
        prop_assert_eq!(t.scan(), entries.clone());
        for (i, (a, s)) in more.iter().enumerate() {
            let e = row_entry(*a, s, 10_000 + i as u32);
            t.insert(&e);
            entries.push(e);
        }
        entries.sort();
        prop_assert_eq!(t.check(), Ok(()));
        prop_assert_eq!(t.scan(), entries.clone());
        // Every third entry of the leftmost leaf removed.
        let (leaf, _) = t.find_leaf(&[]);
        let p = t.page(leaf);
        let remove: Vec<u16> = (first_entry(p)..strata_page::item_count(p))
            .step_by(3)
            .map(|i| i as u16)
            .collect();
        let gone: Vec<Vec<u8>> = remove.iter().map(|i| entry(p, *i as usize).to_vec()).collect();
        t.pages[leaf as usize] = crate::build::delete_entries(p, &remove);
        prop_assert_eq!(t.check(), Ok(()));
        entries.retain(|e| !gone.contains(e));
        prop_assert_eq!(t.scan(), entries);
    }
}

#[test]
fn splits_grow_the_tree_upwards_and_tids_come_back() {
    let mut t = Tree::new();
    for i in 0..20_000u32 {
        let mut key = Vec::new();
        encode_key(&[KeyPart::Int(i64::from((i * 7919) % 20_000))], &mut key);
        t.insert(&leaf_entry(&key, BlockNumber(i), 1));
    }
    assert_eq!(t.check(), Ok(()));
    let m = meta(t.page(0)).unwrap();
    assert!(m.level >= 1, "{m:?}");
    let all = t.scan();
    assert_eq!(all.len(), 20_000);
    let (k0, b0, i0) = split_leaf_entry(&all[0]);
    let mut zero = Vec::new();
    encode_key(&[KeyPart::Int(0)], &mut zero);
    assert_eq!((k0, b0, i0), (&zero[..], BlockNumber(0), 1));
}

#[test]
fn meta_and_special_round_trip() {
    let mut p = blank();
    init_meta(&mut p, Meta { root: 7, level: 2 });
    assert_eq!(meta(&p), Some(Meta { root: 7, level: 2 }));
    let o = Opaque {
        level: 3,
        flags: FLAG_ROOT,
        left: 5,
        right: 9,
    };
    init_page(&mut p, o);
    assert_eq!(opaque(&p), o);
    assert_eq!(meta(&p), None);
}

/// Page rule 5: ascending keys fill their leaves to about 90%, not half.
#[test]
fn ascending_inserts_fill_leaves_as_a_rightmost_split_leaves_them() {
    let mut t = Tree::new();
    let mut bytes = 0;
    for i in 0..20_000u32 {
        let mut key = Vec::new();
        encode_key(&[KeyPart::Int(i64::from(i))], &mut key);
        let e = leaf_entry(&key, BlockNumber(i), 1);
        bytes += e.len() + strata_page::ITEM_ID_BYTES;
        t.insert(&e);
    }
    assert_eq!(t.check(), Ok(()));
    let leaves = (1..t.pages.len() as u32)
        .filter(|b| opaque(t.page(*b)).is_leaf())
        .count();
    let usable = BLCKSZ - strata_page::HEADER_BYTES - SPECIAL_BYTES;
    let fill = bytes as f64 / (leaves * usable) as f64;
    assert!(fill > 0.85, "{leaves} leaves, {:.0}% full", fill * 100.0);
}

/// A leaf entry of exactly `bytes` bytes (key and TID): a text key of `c`s, so equal
/// sizes of different letters interleave with smaller ones in the key order.
fn sized_entry(c: u8, bytes: usize, tid: u32) -> Vec<u8> {
    // A text key is its bytes plus 3 (a marker and a two-byte end).
    let text = vec![c; bytes - crate::key::TID_BYTES - 3];
    let mut key = Vec::new();
    encode_key(&[KeyPart::Bytes(&text)], &mut key);
    let e = leaf_entry(&key, BlockNumber(tid / 100), (tid % 100) as u16);
    assert_eq!(e.len(), bytes);
    e
}

fn entry_size() -> impl Strategy<Value = usize> {
    prop_oneof![
        3 => (MAX_ENTRY_BYTES - 40)..=MAX_ENTRY_BYTES,
        2 => 900..MAX_ENTRY_BYTES,
        2 => 9..120usize,
    ]
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    /// Page rule 6: entries of any size up to the limit, inserted in any order (so
    /// pages split at every position, on every level, beside high keys of every
    /// size), always fit: the tree checks and holds every entry in order. A tree
    /// built bottom-up from the same entries checks too.
    #[test]
    fn entries_of_every_size_up_to_the_limit_split_anywhere(
        rows in proptest::collection::vec((0u8..4, entry_size()), 1..160)
    ) {
        let mut entries: Vec<Vec<u8>> = rows
            .iter()
            .enumerate()
            .map(|(i, (c, n))| sized_entry(b'a' + c, *n, i as u32))
            .collect();
        let mut t = Tree::new();
        for e in &entries {
            t.insert(e);
            prop_assert_eq!(t.check(), Ok(()));
        }
        for e in &entries {
            prop_assert!(t.contains(e));
        }
        entries.sort();
        prop_assert_eq!(t.scan(), entries.clone());
        let built = Tree::build(&entries);
        prop_assert_eq!(built.check(), Ok(()));
        prop_assert_eq!(built.scan(), entries);
    }
}

/// The sequence at the limit: two keys of the largest size, a small one
/// between them, then a third of the largest size beside it: the split must leave
/// room for the separator on the left.
#[test]
fn largest_entries_around_a_small_one_split_with_room_for_the_high_key() {
    for order in [[0, 1, 2, 3], [3, 2, 1, 0], [2, 0, 3, 1], [1, 3, 0, 2]] {
        let all = [
            sized_entry(b'b', MAX_ENTRY_BYTES, 1),
            sized_entry(b'd', MAX_ENTRY_BYTES, 2),
            sized_entry(b'c', 19, 3),
            sized_entry(b'c', MAX_ENTRY_BYTES, 4),
        ];
        let mut t = Tree::new();
        for i in order {
            t.insert(&all[i]);
        }
        for e in 5..40 {
            t.insert(&sized_entry(b'c', MAX_ENTRY_BYTES - e, e as u32));
        }
        assert_eq!(t.check(), Ok(()), "order {order:?}");
    }
}

proptest! {
    /// Every key reads back as the values it was made of (index-only scans' rows).
    #[test]
    fn keys_decode_to_their_values(
        a in proptest::option::of(any::<i64>()),
        s in text(),
        b in proptest::option::of(any::<bool>()),
        u in proptest::option::of(proptest::collection::vec(any::<u8>(), 16)),
    ) {
        use crate::key::{decode_key, KeyValue, PartKind};
        let bytes = s.as_deref().map(str::as_bytes);
        let parts = [
            a.map_or(KeyPart::Null, KeyPart::Int),
            bytes.map_or(KeyPart::Null, KeyPart::Bytes),
            b.map_or(KeyPart::Null, KeyPart::Bool),
            u.as_deref().map_or(KeyPart::Null, KeyPart::Fixed),
        ];
        let mut key = Vec::new();
        encode_key(&parts, &mut key);
        let kinds = [PartKind::Int, PartKind::Bytes, PartKind::Bool, PartKind::Fixed(16)];
        let want = [
            a.map_or(KeyValue::Null, KeyValue::Int),
            bytes.map_or(KeyValue::Null, |b| KeyValue::Bytes(b.into())),
            b.map_or(KeyValue::Null, KeyValue::Bool),
            u.as_deref().map_or(KeyValue::Null, KeyValue::Fixed),
        ];
        let all = |key: &[u8]| {
            let mut got = Vec::new();
            decode_key(key, &kinds, &mut |v| {
                got.push(format!("{v:?}"));
                Some(())
            })
            .map(|()| got)
        };
        let want: Vec<String> = want.iter().map(|v| format!("{v:?}")).collect();
        prop_assert_eq!(all(&key), Some(want));
        // A key cut short, or with bytes after it, is not one.
        prop_assert_eq!(all(&key[..key.len() - 1]), None);
        key.push(0);
        prop_assert_eq!(all(&key), None);
    }
}
