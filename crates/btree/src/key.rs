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
