//! What this thread did to the pool: pages found, read, dirtied and written
//! (PostgreSQL's `pgBufferUsage`, README rule 9), for EXPLAIN (ANALYZE, BUFFERS).
//! Counted in a thread-local cell: the hit path pays one increment and touches
//! no shared cache line. A reader takes [`usage`] before and after the work and
//! keeps the difference ([`Usage::since`]).

use std::cell::Cell;

/// Counts of buffer accesses by one thread.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Usage {
    /// Pages found in the pool.
    pub hit: u64,
    /// Pages read from disk into it.
    pub read: u64,
    /// Clean pages this thread made dirty.
    pub dirtied: u64,
    /// Dirty pages this thread wrote out (a victim's, to make room).
    pub written: u64,
}

impl Usage {
    const ZERO: Usage = Usage {
        hit: 0,
        read: 0,
        dirtied: 0,
        written: 0,
    };

    /// What was counted between `before` and `self`.
    pub fn since(self, before: Usage) -> Usage {
        Usage {
            hit: self.hit.wrapping_sub(before.hit),
            read: self.read.wrapping_sub(before.read),
            dirtied: self.dirtied.wrapping_sub(before.dirtied),
            written: self.written.wrapping_sub(before.written),
        }
    }

    /// Both counts summed.
    pub fn plus(self, o: Usage) -> Usage {
        Usage {
            hit: self.hit + o.hit,
            read: self.read + o.read,
            dirtied: self.dirtied + o.dirtied,
            written: self.written + o.written,
        }
    }
}

thread_local! {
    static USAGE: Cell<Usage> = const { Cell::new(Usage::ZERO) };
}

/// This thread's counts so far.
pub fn usage() -> Usage {
    USAGE.with(Cell::get)
}

/// Adds what other threads counted for this one's work (a parallel query's
/// workers, to their leader's: PostgreSQL's InstrAccumParallelQuery).
pub fn absorb(u: Usage) {
    count(|mine| *mine = mine.plus(u));
}

/// Adds to this thread's counts.
#[inline]
pub(crate) fn count(f: impl FnOnce(&mut Usage)) {
    USAGE.with(|c| {
        let mut u = c.get();
        f(&mut u);
        c.set(u);
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_are_per_thread_and_differences_are_kept() {
        let before = usage();
        count(|u| u.hit += 2);
        count(|u| u.read += 1);
        let d = usage().since(before);
        assert_eq!((d.hit, d.read, d.dirtied, d.written), (2, 1, 0, 0));
        // Another thread counts apart.
        let other = std::thread::spawn(|| {
            count(|u| u.written += 5);
            usage()
        })
        .join()
        .unwrap();
        assert_eq!(other.written, 5);
        assert_eq!(usage().since(before).written, 0);
    }
}
