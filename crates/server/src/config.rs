//! Settings from the command line (`-c name=value`), with PostgreSQL's names, units
//! and error messages. Owns the mapping from setting names to
//! [`strata_engine::Settings`] fields.
//!
//! | name | unit | default | range |
//! |------|------|---------|-------|
//! | `shared_buffers` | 8kB blocks or memory units | 128MB | 128kB .. 1TB |
//! | `full_page_writes` | bool | on | |
//! | `checkpoint_timeout` | s (or `ms`, `s`, `min`, `h`, `d`) | 5min | 30s .. 1d |
//! | `max_wal_size` | MB or memory units | 1GB | 2MB .. 1TB |
//! | `wal_segment_size` | bytes or memory units (init only) | 16MB | 64kB .. 1GB, power of two |
//! | `max_files_per_process` | count | 1000 | 64 .. 1,000,000 |

use std::time::Duration;
use strata_engine::Settings;
use strata_types::units::{check_range, parse_memory};

fn invalid(name: &str, value: &str, hint: &str) -> String {
    format!("invalid value for parameter \"{name}\": \"{value}\"{hint}")
}

/// Parses a time setting: a number with an optional unit; `default_unit_ms` applies
/// without one.
pub fn parse_time_ms(name: &str, value: &str, default_unit_ms: u64) -> Result<u64, String> {
    let v = value.trim();
    let split = v
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(v.len());
    let (num, unit) = (v[..split].trim(), v[split..].trim());
    let n: f64 = num.parse().map_err(|_| invalid(name, value, ""))?;
    let unit_ms = match unit {
        "" => default_unit_ms as f64,
        "us" => 0.001,
        "ms" => 1.0,
        "s" => 1000.0,
        "min" => 60_000.0,
        "h" => 3_600_000.0,
        "d" => 86_400_000.0,
        _ => {
            return Err(invalid(
                name,
                value,
                "\nHINT:  Valid units for this parameter are \"us\", \"ms\", \"s\", \"min\", \"h\", and \"d\".",
            ))
        }
    };
    Ok((n * unit_ms).round() as u64)
}

pub fn parse_bool(name: &str, value: &str) -> Result<bool, String> {
    match value.trim().to_ascii_lowercase().as_str() {
        "on" | "true" | "yes" | "1" | "t" | "y" => Ok(true),
        "off" | "false" | "no" | "0" | "f" | "n" => Ok(false),
        _ => Err(format!("parameter \"{name}\" requires a Boolean value")),
    }
}

/// Applies one `name=value` to `s`.
pub fn apply(s: &mut Settings, name: &str, value: &str) -> Result<(), String> {
    match name {
        "shared_buffers" => {
            s.shared_buffers_bytes =
                strata_buffer::parse_shared_buffers(value).map_err(|e| e.to_string())?
        }
        "full_page_writes" => s.full_page_writes = parse_bool(name, value)?,
        "checkpoint_timeout" => {
            let ms = parse_time_ms(name, value, 1000)?;
            if !(30_000..=86_400_000).contains(&ms) {
                return Err(format!(
                    "{ms} ms is outside the valid range for parameter \"{name}\" (30s .. 1d)"
                ));
            }
            s.checkpoint_timeout = Duration::from_millis(ms);
        }
        "max_wal_size" => {
            let b = parse_memory(name, value, 1 << 20).map_err(|e| e.to_string())?;
            s.max_wal_size_bytes =
                check_range(name, b, 2 << 20, 1 << 40).map_err(|e| e.to_string())?;
        }
        "wal_segment_size" => {
            let b = parse_memory(name, value, 1).map_err(|e| e.to_string())?;
            if !b.is_power_of_two() || !(64 << 10..=1 << 30).contains(&b) {
                return Err(format!(
                    "invalid value for parameter \"{name}\": \"{value}\"\nHINT:  It must be a power of two from 64kB to 1GB."
                ));
            }
            s.wal_segment_bytes = b;
        }
        "max_files_per_process" => {
            let n: usize = value.trim().parse().map_err(|_| invalid(name, value, ""))?;
            if !(64..=1_000_000).contains(&n) {
                return Err(format!(
                    "{n} is outside the valid range for parameter \"{name}\" (64 .. 1000000)"
                ));
            }
            s.max_files_per_process = n;
        }
        _ => return Err(format!("unrecognized configuration parameter \"{name}\"")),
    }
    Ok(())
}

/// Settings from a list of `name=value` strings.
pub fn settings_from(pairs: &[String]) -> Result<Settings, String> {
    let mut s = Settings::default();
    for p in pairs {
        let (n, v) = p
            .split_once('=')
            .ok_or_else(|| format!("-c {p}: expected name=value"))?;
        apply(&mut s, n.trim(), v.trim())?;
    }
    Ok(s)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn settings_take_postgres_units_and_refuse_nonsense() {
        let s = settings_from(&[
            "shared_buffers=8GB".into(),
            "checkpoint_timeout=1h".into(),
            "max_wal_size=64GB".into(),
            "full_page_writes=off".into(),
        ])
        .unwrap();
        assert_eq!(s.shared_buffers_bytes, 8 << 30);
        assert_eq!(s.checkpoint_timeout, Duration::from_secs(3600));
        assert_eq!(s.max_wal_size_bytes, 64 << 30);
        assert!(!s.full_page_writes);
        assert_eq!(
            settings_from(&["checkpoint_timeout=300".into()])
                .unwrap()
                .checkpoint_timeout,
            Duration::from_secs(300)
        );
        for bad in [
            "shared_buffers=lots",
            "checkpoint_timeout=5 fortnights",
            "checkpoint_timeout=1s",
            "full_page_writes=maybe",
            "wal_segment_size=3MB",
            "no_such_setting=1",
            "shared_buffers",
        ] {
            assert!(settings_from(&[bad.into()]).is_err(), "{bad}");
        }
    }
}
