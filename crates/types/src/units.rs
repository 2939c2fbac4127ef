//! Parsing and printing of memory sizes and times with PostgreSQL's units.
//!
//! Owns: the grammar of a memory setting: a number, optional white space, then one of
//! `B`, `kB`, `MB`, `GB`, `TB` (case-sensitive, multiples of 1024, as PostgreSQL), or no
//! unit, in which case the setting's own base unit applies (8kB blocks for
//! `shared_buffers`). Fractions are allowed and rounded to the base unit, as PostgreSQL
//! does (`1.5GB`). A time setting is a number and one of `us`, `ms`, `s`, `min`, `h`,
//! `d`, or none (the setting's own unit).

use thiserror::Error;

#[derive(Debug, Error, PartialEq, Eq)]
pub enum UnitError {
    #[error("invalid value for parameter \"{name}\": \"{value}\"{hint}")]
    Invalid {
        name: String,
        value: String,
        hint: String,
    },
    #[error("{value} is outside the valid range for parameter \"{name}\" ({min} .. {max})")]
    OutOfRange {
        name: String,
        value: String,
        min: String,
        max: String,
    },
}

const UNITS: [(&str, u64); 5] = [
    ("B", 1),
    ("kB", 1 << 10),
    ("MB", 1 << 20),
    ("GB", 1 << 30),
    ("TB", 1 << 40),
];

/// Parses a memory setting into bytes. `base_unit_bytes` is what a bare number counts
/// (8192 for `shared_buffers`). The result is rounded to a multiple of the base unit.
pub fn parse_memory(name: &str, value: &str, base_unit_bytes: u64) -> Result<u64, UnitError> {
    let invalid = |hint: &str| UnitError::Invalid {
        name: name.to_string(),
        value: value.to_string(),
        hint: hint.to_string(),
    };
    let s = value.trim();
    let split = s
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(s.len());
    let (num, unit) = (&s[..split], s[split..].trim());
    if num.is_empty() {
        return Err(invalid(""));
    }
    let number: f64 = num.parse().map_err(|_| invalid(""))?;
    let multiplier = if unit.is_empty() {
        base_unit_bytes
    } else {
        match UNITS.iter().find(|(u, _)| *u == unit) {
            Some((_, m)) => *m,
            None => {
                return Err(invalid(
                    "\nHINT:  Valid units for this parameter are \"B\", \"kB\", \"MB\", \"GB\", and \"TB\".",
                ))
            }
        }
    };
    let bytes = number * multiplier as f64;
    if !bytes.is_finite() || bytes > u64::MAX as f64 / 2.0 {
        return Err(invalid(""));
    }
    let units = (bytes / base_unit_bytes as f64).round() as u64;
    Ok(units * base_unit_bytes)
}

/// Checks a parsed size against a range, with PostgreSQL's wording.
pub fn check_range(name: &str, bytes: u64, min: u64, max: u64) -> Result<u64, UnitError> {
    if bytes < min || bytes > max {
        return Err(UnitError::OutOfRange {
            name: name.to_string(),
            value: format_memory(bytes),
            min: format_memory(min),
            max: format_memory(max),
        });
    }
    Ok(bytes)
}

/// Prints bytes with the largest unit that divides them exactly, as `SHOW` does.
pub fn format_memory(bytes: u64) -> String {
    for (unit, m) in UNITS.iter().rev() {
        if bytes >= *m && bytes.is_multiple_of(*m) {
            return format!("{}{}", bytes / m, unit);
        }
    }
    format!("{bytes}B")
}

/// Parses a time setting into milliseconds: a number with an optional unit;
/// `default_unit_ms` is what a bare number counts.
pub fn parse_time_ms(name: &str, value: &str, default_unit_ms: u64) -> Result<u64, UnitError> {
    let invalid = |hint: &str| UnitError::Invalid {
        name: name.to_string(),
        value: value.to_string(),
        hint: hint.to_string(),
    };
    let v = value.trim();
    let split = v
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(v.len());
    let (num, unit) = (v[..split].trim(), v[split..].trim());
    let n: f64 = num.parse().map_err(|_| invalid(""))?;
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
                "\nHINT:  Valid units for this parameter are \"us\", \"ms\", \"s\", \"min\", \"h\", and \"d\".",
            ))
        }
    };
    Ok((n * unit_ms).round() as u64)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_postgres_units() {
        let p = |v| parse_memory("shared_buffers", v, 8192);
        assert_eq!(p("128MB"), Ok(128 << 20));
        assert_eq!(p("8GB"), Ok(8 << 30));
        assert_eq!(p("128kB"), Ok(128 << 10));
        assert_eq!(p("16384"), Ok(16384 * 8192));
        assert_eq!(p(" 1.5GB "), Ok(3 << 29));
        assert_eq!(p("1 TB"), Ok(1 << 40));
    }

    #[test]
    fn rejects_bad_input() {
        let p = |v| parse_memory("shared_buffers", v, 8192);
        assert!(p("").is_err());
        assert!(p("GB").is_err());
        assert!(
            p("12gb").is_err(),
            "units are case-sensitive, as in PostgreSQL"
        );
        assert!(p("12 parsecs").is_err());
        assert!(p("1.2.3MB").is_err());
        assert!(p("-5MB").is_err());
    }

    #[test]
    fn range_and_format() {
        assert!(check_range("shared_buffers", 64 << 10, 128 << 10, 1 << 40).is_err());
        assert_eq!(format_memory(128 << 20), "128MB");
        assert_eq!(format_memory(3 << 29), "1536MB");
        assert_eq!(format_memory(8192), "8kB");
    }
}
