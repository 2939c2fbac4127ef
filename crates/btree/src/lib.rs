//! B-tree indexes, the part that is pure: order-preserving keys ([`key`]) and the
//! page format with its search, split and check ([`page`]). No I/O: the engine pins,
//! locks, WAL-logs and replays these pages through the buffer pool (issue 14), and
//! the tests here drive a whole tree of them in memory.
//!
//! Entry points: [`key::encode_key`], [`key::leaf_entry`], [`page::lower_bound`],
//! [`page::descend`], [`page::moves_right`], [`page::split`], [`page::new_root`],
//! [`page::check_page`], [`build::LevelBuilder`] (bottom-up builds),
//! [`build::delete_entries`].
//!
//! Rules (cited as "btree rule N"; the page's own rules are in [`page`]):
//! 1. Comparing encoded bytes is comparing the values: an index never calls back into
//!    the types (key rule: prefix-free, memcmp order, NULLs last).
//! 2. Every function here is a pure function of its arguments; the caller owns
//!    locking, WAL and which blocks are new.

pub mod build;
pub mod key;
pub mod page;

#[cfg(test)]
mod tests;
