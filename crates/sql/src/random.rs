//! random() and setseed(): PostgreSQL 15's generator (pg_prng.c's
//! xoroshiro128**, seeded through splitmix64), one per backend thread, so that
//! `setseed(x)` followed by `random()` gives PostgreSQL's sequence.
//!
//! Rules (cited as "random rule N"):
//! 1. Until setseed, the generator is seeded from the operating system's
//!    randomness (PostgreSQL seeds from pg_strong_random at backend start).
//! 2. setseed(x) takes x in [-1, 1] (22023 otherwise, PostgreSQL's message) and
//!    seeds as pg_prng_fseed: `(2^52 - 1) * x` as a signed 64-bit seed.
//! 3. random() is pg_prng_double: the top 52 bits of the next output over 2^52.

use crate::{SqlError, SqlResult};
use std::cell::Cell;

thread_local! {
    /// The backend's generator state (s0, s1); None until first used.
    static STATE: Cell<Option<(u64, u64)>> = const { Cell::new(None) };
}

/// splitmix64: the next value of a seed sequence.
fn splitmix64(state: &mut u64) -> u64 {
    *state = state.wrapping_add(0x9E37_79B9_7F4A_7C15);
    let mut v = *state;
    v = (v ^ (v >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    v = (v ^ (v >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    v ^ (v >> 31)
}

/// pg_prng_seed (with pg_prng_seed_check's all-zero guard).
fn seeded(mut seed: u64) -> (u64, u64) {
    let s0 = splitmix64(&mut seed);
    let s1 = splitmix64(&mut seed);
    if s0 == 0 && s1 == 0 {
        return (0x5851_F42D_4C95_7F2D, 0x1405_7B7E_F767_814F);
    }
    (s0, s1)
}

/// xoroshiro128**: the next output, and the state after it.
fn next(state: (u64, u64)) -> (u64, (u64, u64)) {
    let (s0, s1) = state;
    let sx = s1 ^ s0;
    let val = s0.wrapping_mul(5).rotate_left(7).wrapping_mul(9);
    (
        val,
        (s0.rotate_left(24) ^ sx ^ (sx << 16), sx.rotate_left(37)),
    )
}

/// random(): a float8 in [0, 1) (rule 3).
pub fn random() -> f64 {
    STATE.with(|cell| {
        let state = cell.get().unwrap_or_else(|| seeded(rand::random()));
        let (v, after) = next(state);
        cell.set(Some(after));
        (v >> 12) as f64 / (1u64 << 52) as f64
    })
}

/// setseed(x) (rule 2).
pub fn setseed(x: f64) -> SqlResult<()> {
    if !(-1.0..=1.0).contains(&x) {
        return Err(SqlError::new(
            "22023",
            format!(
                "setseed parameter {} is out of allowed range [-1,1]",
                crate::numeric::format_float_in(x, false, 0)
            ),
        ));
    }
    let seed = (((1u64 << 52) - 1) as f64 * x) as i64;
    STATE.with(|cell| cell.set(Some(seeded(seed as u64))));
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// PostgreSQL 15: `SELECT setseed(0.5); SELECT random(), random(), random();`
    #[test]
    fn setseed_then_random_is_postgresqls_sequence() {
        setseed(0.5).unwrap();
        let got: Vec<f64> = (0..3).map(|_| random()).collect();
        assert_eq!(
            got,
            [
                0.985_167_717_534_799_9,
                0.825_301_858_027_981,
                0.129_746_100_124_504_16
            ]
        );
        setseed(-0.25).unwrap();
        assert_eq!(random(), 0.555_321_334_003_935_1);
        let e = setseed(2.0).unwrap_err();
        assert_eq!(
            e.message,
            "setseed parameter 2 is out of allowed range [-1,1]"
        );
    }
}
