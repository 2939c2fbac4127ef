//! The clock: now as PostgreSQL's timestamps count (microseconds since
//! 2000-01-01 00:00:00 UTC). Date/time values' text, arithmetic and functions
//! are [`crate::datetime`]'s and [`crate::datefn`]'s.

/// 2000-01-01 in Unix microseconds.
pub const PG_EPOCH_UNIX_US: i64 = 946_684_800_000_000;
const US_PER_DAY: i64 = 86_400_000_000;

/// Now, in microseconds since 2000-01-01.
pub fn now_us() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_micros() as i64)
        - PG_EPOCH_UNIX_US
}

/// The day of a (local) timestamp, as a `date`.
pub fn date_of(us: i64) -> i32 {
    us.div_euclid(US_PER_DAY) as i32
}
