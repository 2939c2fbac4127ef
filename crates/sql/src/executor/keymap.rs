//! [`KeyMap`]: the hash table of hash joins and hash aggregation, keyed by a row
//! of values.
//!
//! Rules (cited as "keymap rule N"):
//! 1. A key of one or two integer-like values (int2, int4, int8, date, time,
//!    timestamp, timestamptz, bool; no NULL) is held inline as an [`IntKey`]:
//!    hashing and comparing it touch no memory outside the table (a `Vec<Datum>`
//!    key costs a cache miss per probe). Every other key is held as its row.
//! 2. Whether a key is inline is a function of its values alone, so a key is
//!    always found in the map it was put in, and two keys are equal exactly when
//!    their rows are (`Datum`'s equality: each value's variant and bits).
//! 3. [`Packed`] holds the rows a hash table points into in one array, without
//!    the columns that are NULL in every row (those a narrowed scan does not
//!    decode: planner rule 9), in an order the caller gives (a hash join puts a
//!    key's rows together): a probe's matches are one short run of memory.

use crate::Datum;
use rustc_hash::FxHashMap;

/// A key of up to two integer-like values: each value's variant tag and its bits.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(super) struct IntKey {
    tags: [u8; 2],
    vals: [i64; 2],
}

impl std::hash::Hash for IntKey {
    /// One word to the hasher: the values and tags mixed by odd multipliers (the
    /// derived hash would feed the hasher slices, byte-wise).
    fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
        let tags = u64::from(self.tags[0]) | u64::from(self.tags[1]) << 8;
        let a = (self.vals[0] as u64).wrapping_mul(0x9e37_79b9_7f4a_7c15);
        let b = (self.vals[1] as u64).wrapping_mul(0xc2b2_ae3d_27d4_eb4f);
        state.write_u64(a ^ b.rotate_left(31) ^ tags);
    }
}

impl IntKey {
    /// The inline form of `key` (keymap rule 1), if it has one.
    pub(super) fn of(key: &[Datum]) -> Option<IntKey> {
        let mut k = IntKey {
            tags: [0; 2],
            vals: [0; 2],
        };
        if key.is_empty() || key.len() > 2 {
            return None;
        }
        for (i, d) in key.iter().enumerate() {
            let (tag, v) = int_like(d)?;
            k.tags[i] = tag;
            k.vals[i] = v;
        }
        Some(k)
    }
}

/// An integer-like value's tag (never 0: 0 marks an absent second value) and bits.
fn int_like(d: &Datum) -> Option<(u8, i64)> {
    Some(match d {
        Datum::Int2(v) => (1, i64::from(*v)),
        Datum::Int4(v) => (2, i64::from(*v)),
        Datum::Int8(v) => (3, *v),
        Datum::Date(v) => (4, i64::from(*v)),
        Datum::Time(v) => (5, *v),
        Datum::Timestamp(v) => (6, *v),
        Datum::TimestampTz(v) => (7, *v),
        Datum::Bool(v) => (8, i64::from(*v)),
        _ => return None,
    })
}

/// A map from keys (rows of values) to `V`, integer-like keys inline.
pub(super) struct KeyMap<V> {
    ints: FxHashMap<IntKey, V>,
    rows: FxHashMap<Vec<Datum>, V>,
}

impl<V> Default for KeyMap<V> {
    fn default() -> Self {
        KeyMap {
            ints: FxHashMap::default(),
            rows: FxHashMap::default(),
        }
    }
}

impl<V> KeyMap<V> {
    pub(super) fn get(&self, key: &[Datum]) -> Option<&V> {
        match IntKey::of(key) {
            Some(k) => self.ints.get(&k),
            None => self.rows.get(key),
        }
    }

    /// Puts `v` under `key`, replacing what was there.
    pub(super) fn insert(&mut self, key: &[Datum], v: V) {
        match IntKey::of(key) {
            Some(k) => {
                self.ints.insert(k, v);
            }
            None => {
                self.rows.insert(key.to_vec(), v);
            }
        }
    }

    /// Every value, in no particular order.
    pub(super) fn values_mut(&mut self) -> impl Iterator<Item = &mut V> {
        self.ints.values_mut().chain(self.rows.values_mut())
    }

    /// The value under `key`, `new()` put there first if there was none.
    pub(super) fn get_or_insert_with(&mut self, key: &[Datum], new: impl FnOnce() -> V) -> &mut V {
        match IntKey::of(key) {
            Some(k) => self.ints.entry(k).or_insert_with(new),
            None => match self.rows.contains_key(key) {
                true => self.rows.get_mut(key).expect("checked above"),
                false => self.rows.entry(key.to_vec()).or_insert_with(new),
            },
        }
    }
}

/// Rows of one width held in one array, the columns NULL in all of them left out
/// (keymap rule 3).
#[derive(Default)]
pub(super) struct Packed {
    /// The held columns, ascending.
    cols: Vec<usize>,
    /// The rows' width.
    width: usize,
    flat: Vec<Datum>,
    len: usize,
}

impl Packed {
    /// `rows`, row `i` at `order[i]` (`order` a permutation; None: as they come).
    pub(super) fn new(mut rows: Vec<Vec<Datum>>, order: Option<&[usize]>) -> Packed {
        let width = rows.iter().map(Vec::len).max().unwrap_or(0);
        let mut held = vec![false; width];
        for r in &rows {
            for (h, d) in held.iter_mut().zip(r) {
                *h |= !d.is_null();
            }
        }
        let cols: Vec<usize> = (0..width).filter(|c| held[*c]).collect();
        let mut flat = Vec::with_capacity(rows.len() * cols.len());
        let len = rows.len();
        let mut at: Vec<usize> = (0..len).collect();
        if let Some(order) = order {
            for (i, p) in order.iter().enumerate() {
                at[*p] = i;
            }
        }
        for i in at {
            let r = &mut rows[i];
            r.resize(width, Datum::Null);
            flat.extend(
                cols.iter()
                    .map(|c| std::mem::replace(&mut r[*c], Datum::Null)),
            );
        }
        Packed {
            cols,
            width,
            flat,
            len,
        }
    }

    pub(super) fn len(&self) -> usize {
        self.len
    }

    /// Row `i`, whole, appended to `out`.
    pub(super) fn extend_row(&self, i: usize, out: &mut Vec<Datum>) {
        let held = &self.flat[i * self.cols.len()..(i + 1) * self.cols.len()];
        let mut next = self.cols.iter().zip(held).peekable();
        for c in 0..self.width {
            match next.peek() {
                Some((k, d)) if **k == c => {
                    out.push((*d).clone());
                    next.next();
                }
                _ => out.push(Datum::Null),
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_are_found_where_they_were_put_and_equal_only_as_rows_are() {
        let mut m: KeyMap<u32> = KeyMap::default();
        m.insert(&[Datum::Int4(5)], 1);
        m.insert(&[Datum::Int8(5)], 2);
        m.insert(&[Datum::Int4(5), Datum::Date(7)], 3);
        m.insert(&[Datum::Text("5".into())], 4);
        m.insert(&[Datum::Int4(5), Datum::Int4(7), Datum::Int4(9)], 5);
        m.insert(&[Datum::Null], 6);
        assert_eq!(m.get(&[Datum::Int4(5)]), Some(&1));
        assert_eq!(m.get(&[Datum::Int8(5)]), Some(&2));
        assert_eq!(m.get(&[Datum::Int2(5)]), None);
        assert_eq!(m.get(&[Datum::Int4(5), Datum::Date(7)]), Some(&3));
        assert_eq!(m.get(&[Datum::Int4(5), Datum::Int4(7)]), None);
        assert_eq!(m.get(&[Datum::Text("5".into())]), Some(&4));
        assert_eq!(
            m.get(&[Datum::Int4(5), Datum::Int4(7), Datum::Int4(9)]),
            Some(&5)
        );
        assert_eq!(m.get(&[Datum::Null]), Some(&6));
        // A value next to an absent one is not the same key as the value alone.
        assert_eq!(m.get(&[Datum::Int4(5), Datum::Int4(0)]), None);
        *m.get_or_insert_with(&[Datum::Int4(5)], || 0) += 10;
        *m.get_or_insert_with(&[Datum::Bool(true)], || 0) += 10;
        *m.get_or_insert_with(&[Datum::Text("x".into())], || 1) += 10;
        assert_eq!(m.get(&[Datum::Int4(5)]), Some(&11));
        assert_eq!(m.get(&[Datum::Bool(true)]), Some(&10));
        assert_eq!(m.get(&[Datum::Text("x".into())]), Some(&11));
    }

    #[test]
    fn packed_rows_come_back_whole() {
        let rows = vec![
            vec![
                Datum::Int4(1),
                Datum::Null,
                Datum::Null,
                Datum::Text("a".into()),
            ],
            vec![Datum::Null, Datum::Null, Datum::Int8(2), Datum::Null],
            vec![
                Datum::Int4(3),
                Datum::Null,
                Datum::Null,
                Datum::Text("c".into()),
            ],
        ];
        let p = Packed::new(rows.clone(), None);
        assert_eq!((p.len(), p.cols.clone()), (3, vec![0, 2, 3]));
        for (i, r) in rows.iter().enumerate() {
            let mut out = vec![Datum::Bool(true)];
            p.extend_row(i, &mut out);
            assert_eq!(out[1..], r[..]);
        }
        let p = Packed::new(rows.clone(), Some(&[2, 0, 1]));
        for (i, r) in rows.iter().enumerate() {
            let mut out = Vec::new();
            p.extend_row([2, 0, 1][i], &mut out);
            assert_eq!(out, *r);
        }
        assert_eq!(Packed::new(Vec::new(), None).len(), 0);
    }
}
