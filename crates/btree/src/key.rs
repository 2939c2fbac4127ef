//! Order-preserving keys: a row's index columns encoded so that comparing the bytes
//! (memcmp) orders them as the values order, column after column, NULLs last (as
//! PostgreSQL's ascending index). The heap TID appended makes every entry unique.
//!
//! | value | bytes |
//! |-------|-------|
//! | NULL | `0x02` |
//! | integer family (smallint, integer, bigint, date, timestamp, timestamptz) | `0x01`, 8 bytes big-endian with the sign bit flipped |
//! | boolean | `0x01`, `0x00` or `0x01` |
//! | text, bytea | `0x01`, the bytes with each `0x00` written `0x00 0xFF`, then `0x00 0x01` |
//! | fixed-width bytes (uuid) | `0x01`, the bytes |
//!
//! Every column's encoding is prefix-free (fixed width, or terminated), so a whole key
//! is too: two different keys differ at a byte before either ends.

use strata_types::BlockNumber;

/// One column's value, as the index sees it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum KeyPart<'a> {
    Null,
    Int(i64),
    Bool(bool),
    /// Variable-length bytes (text, bytea).
    Bytes(&'a [u8]),
    /// Bytes of a type of fixed width (uuid).
    Fixed(&'a [u8]),
}

const NOT_NULL: u8 = 0x01;
const NULL: u8 = 0x02;

/// Appends the encoding of `parts` to `out`.
pub fn encode_key(parts: &[KeyPart<'_>], out: &mut Vec<u8>) {
    for p in parts {
        match *p {
            KeyPart::Null => out.push(NULL),
            KeyPart::Int(v) => {
                out.push(NOT_NULL);
                out.extend_from_slice(&((v as u64) ^ (1 << 63)).to_be_bytes());
            }
            KeyPart::Bool(b) => out.extend_from_slice(&[NOT_NULL, b as u8]),
            KeyPart::Bytes(b) => {
                out.push(NOT_NULL);
                for &c in b {
                    out.push(c);
                    if c == 0 {
                        out.push(0xFF);
                    }
                }
                out.extend_from_slice(&[0x00, 0x01]);
            }
            KeyPart::Fixed(b) => {
                out.push(NOT_NULL);
                out.extend_from_slice(b);
            }
        }
    }
}

/// Bytes of a heap TID at the end of a leaf entry.
pub const TID_BYTES: usize = 6;

/// A leaf entry: the key, then the heap TID (block, item) big-endian, so entries with
/// equal keys sort by where their row is.
pub fn leaf_entry(key: &[u8], block: BlockNumber, item: u16) -> Vec<u8> {
    let mut e = Vec::with_capacity(key.len() + TID_BYTES);
    e.extend_from_slice(key);
    e.extend_from_slice(&block.0.to_be_bytes());
    e.extend_from_slice(&item.to_be_bytes());
    e
}

/// The key and heap TID of a leaf entry.
pub fn split_leaf_entry(e: &[u8]) -> (&[u8], BlockNumber, u16) {
    let (key, tid) = e.split_at(e.len() - TID_BYTES);
    let block = u32::from_be_bytes(tid[..4].try_into().expect("4 bytes"));
    let item = u16::from_be_bytes(tid[4..].try_into().expect("2 bytes"));
    (key, BlockNumber(block), item)
}

/// How one column's key bytes read back (an index-only scan's rows come from its
/// keys): the width of a fixed-width part, or the kind of a variable one.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PartKind {
    Int,
    Bool,
    Bytes,
    /// A fixed-width part of this many bytes (uuid, or a computed key).
    Fixed(usize),
}

/// One column's value read back from a key: borrowed from it where its bytes
/// are the value's own.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum KeyValue<'a> {
    Null,
    Int(i64),
    Bool(bool),
    /// Variable-length bytes: borrowed unless a `0x00` had to be unescaped.
    Bytes(std::borrow::Cow<'a, [u8]>),
    Fixed(&'a [u8]),
}

/// Hands `each` the values of a key whose columns are of `kinds` in order,
/// inverting [`encode_key`]; None (as soon as it is known) if the bytes are not
/// such a key, or `each` refuses a value. Allocates only to unescape bytes.
pub fn decode_key<'a>(
    mut b: &'a [u8],
    kinds: &[PartKind],
    each: &mut dyn FnMut(KeyValue<'a>) -> Option<()>,
) -> Option<()> {
    for k in kinds {
        let (&flag, rest) = b.split_first()?;
        if flag == NULL {
            each(KeyValue::Null)?;
            b = rest;
            continue;
        }
        if flag != NOT_NULL {
            return None;
        }
        let (v, rest) = decode_part(rest, *k)?;
        each(v)?;
        b = rest;
    }
    b.is_empty().then_some(())
}

/// A non-NULL part of kind `k` at the start of `b`, and the bytes after it.
fn decode_part(b: &[u8], k: PartKind) -> Option<(KeyValue<'_>, &[u8])> {
    match k {
        PartKind::Int => {
            let (v, rest) = b.split_first_chunk::<8>()?;
            Some((
                KeyValue::Int((u64::from_be_bytes(*v) ^ (1 << 63)) as i64),
                rest,
            ))
        }
        PartKind::Bool => {
            let (&v, rest) = b.split_first()?;
            (v <= 1).then_some((KeyValue::Bool(v == 1), rest))
        }
        PartKind::Fixed(n) => Some((KeyValue::Fixed(b.get(..n)?), &b[n..])),
        PartKind::Bytes => {
            let end = b.iter().position(|&c| c == 0)?;
            if *b.get(end + 1)? == 0x01 {
                let v = std::borrow::Cow::Borrowed(&b[..end]);
                return Some((KeyValue::Bytes(v), &b[end + 2..]));
            }
            unescaped(b)
        }
    }
}

/// Variable-length bytes with an escaped `0x00` in them, and the bytes after.
fn unescaped(b: &[u8]) -> Option<(KeyValue<'_>, &[u8])> {
    let mut v = Vec::new();
    let mut i = 0;
    loop {
        let c = *b.get(i)?;
        if c != 0 {
            v.push(c);
            i += 1;
            continue;
        }
        match *b.get(i + 1)? {
            0xFF => v.push(0),
            0x01 => return Some((KeyValue::Bytes(v.into()), &b[i + 2..])),
            _ => return None,
        }
        i += 2;
    }
}
