//! Temporary files for operators that outgrow `work_mem`: sorted runs of an
//! external sort and the partitions of a hash aggregate (issue 28's spill).
//!
//! Entry points: [`Temp`] (a statement's temporary space), [`TempFile`] (rows
//! written once, then read back in order).
//!
//! Rules (cited as "spill rule N"):
//! 1. Files live in `base/pgsql_tmp` of the data directory, named
//!    `pgsql_tmp<pid>.<n>` as PostgreSQL names them; a file is removed when its
//!    reader or writer is dropped (the end of the operator, an error, a cancel),
//!    and start-up removes any a crash left (`Smgr::open`). They are never fsynced:
//!    nothing in them outlives the statement.
//! 2. `temp_file_limit` (kB, -1 for none) bounds the bytes a statement's files hold
//!    at once; past it the statement fails with 53400 as PostgreSQL's does.
//! 3. A row is written as its values in a self-describing encoding ([`put`]):
//!    reading one back needs no column types.

use crate::{Datum, SqlError, SqlResult};
use std::fs::File;
use std::io::{BufReader, BufWriter, Read, Write};
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use strata_types::{Float, Interval, Lsn, Numeric};

/// A statement's temporary space (rule 2).
#[derive(Debug)]
pub struct Temp {
    dir: PathBuf,
    /// temp_file_limit in bytes; `None` for no limit.
    limit: Option<u64>,
    used: AtomicU64,
}

impl Temp {
    /// The space under `data_dir`, bounded by `limit_kb` (negative: none).
    pub fn new(data_dir: &std::path::Path, limit_kb: i64) -> Temp {
        Temp {
            dir: data_dir.join(TEMP_DIR),
            limit: u64::try_from(limit_kb)
                .ok()
                .map(|kb| kb.saturating_mul(1024)),
            used: AtomicU64::new(0),
        }
    }

    /// Counts `bytes` more, unless that passes temp_file_limit (53400); one
    /// atomic update, so a parallel plan's workers cannot pass it together.
    fn charge(&self, bytes: u64) -> SqlResult<()> {
        let limit = self.limit.unwrap_or(u64::MAX);
        let add = |used: u64| used.checked_add(bytes).filter(|u| *u <= limit);
        match self
            .used
            .fetch_update(Ordering::Relaxed, Ordering::Relaxed, add)
        {
            Ok(_) => Ok(()),
            Err(_) => Err(SqlError::new(
                "53400",
                format!(
                    "temporary file size exceeds temp_file_limit ({}kB)",
                    limit / 1024
                ),
            )),
        }
    }

    fn release(&self, bytes: u64) {
        let _ = self
            .used
            .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |u| {
                Some(u.saturating_sub(bytes))
            });
    }
}

/// Where temporary files live, under the data directory (rule 1).
pub const TEMP_DIR: &str = "base/pgsql_tmp";

static NEXT_FILE: AtomicU64 = AtomicU64::new(0);

fn io_err(what: &str, e: std::io::Error) -> SqlError {
    SqlError::new("58030", format!("could not {what} temporary file: {e}"))
}

/// A temporary file: rows written, then read back once (rules 1, 3).
pub struct TempFile<'t> {
    temp: &'t Temp,
    path: PathBuf,
    writer: Option<BufWriter<File>>,
    reader: Option<BufReader<File>>,
    bytes: u64,
    rows: u64,
}

impl<'t> TempFile<'t> {
    pub fn create(temp: &'t Temp) -> SqlResult<TempFile<'t>> {
        std::fs::create_dir_all(&temp.dir).map_err(|e| io_err("create directory for", e))?;
        let n = NEXT_FILE.fetch_add(1, Ordering::Relaxed);
        let path = temp
            .dir
            .join(format!("pgsql_tmp{}.{n}", std::process::id()));
        let f = File::create(&path).map_err(|e| io_err("create", e))?;
        Ok(TempFile {
            temp,
            path,
            writer: Some(BufWriter::with_capacity(64 * 1024, f)),
            reader: None,
            bytes: 0,
            rows: 0,
        })
    }

    /// Rows written so far.
    pub fn rows(&self) -> u64 {
        self.rows
    }

    /// Appends a row of `parts` (each a list of values).
    pub fn write(&mut self, parts: &[&[Datum]]) -> SqlResult<()> {
        let mut buf = Vec::new();
        for p in parts {
            put_len(&mut buf, p.len());
            for d in *p {
                put(&mut buf, d);
            }
        }
        self.temp.charge(buf.len() as u64 + 4)?;
        self.bytes += buf.len() as u64 + 4;
        self.rows += 1;
        let w = self.writer.as_mut().expect("written before reading");
        w.write_all(&(buf.len() as u32).to_le_bytes())
            .and_then(|_| w.write_all(&buf))
            .map_err(|e| io_err("write to", e))
    }

    /// Ends the writing: the write buffer flushed and given back (a sort's many
    /// runs hold no buffer each until they are read).
    pub fn close_writer(&mut self) -> SqlResult<()> {
        if let Some(mut w) = self.writer.take() {
            w.flush().map_err(|e| io_err("write to", e))?;
        }
        Ok(())
    }

    /// The next row (its parts), after the last write; `None` at the end.
    pub fn read(&mut self) -> SqlResult<Option<Vec<Vec<Datum>>>> {
        self.close_writer()?;
        if self.reader.is_none() {
            let f = File::open(&self.path).map_err(|e| io_err("open", e))?;
            self.reader = Some(BufReader::with_capacity(8 * 1024, f));
        }
        let r = self.reader.as_mut().expect("opened above");
        let mut len = [0u8; 4];
        match r.read_exact(&mut len) {
            Ok(()) => {}
            Err(e) if e.kind() == std::io::ErrorKind::UnexpectedEof => return Ok(None),
            Err(e) => return Err(io_err("read", e)),
        }
        let mut buf = vec![0u8; u32::from_le_bytes(len) as usize];
        r.read_exact(&mut buf).map_err(|e| io_err("read", e))?;
        let mut at = 0;
        let mut parts = Vec::new();
        while at < buf.len() {
            let n = get_len(&buf, &mut at)?;
            let mut vals = Vec::with_capacity(n);
            for _ in 0..n {
                vals.push(get(&buf, &mut at)?);
            }
            parts.push(vals);
        }
        Ok(Some(parts))
    }
}

impl Drop for TempFile<'_> {
    fn drop(&mut self) {
        self.writer = None;
        self.reader = None;
        let _ = std::fs::remove_file(&self.path);
        self.temp.release(self.bytes);
    }
}

fn put_len(out: &mut Vec<u8>, n: usize) {
    out.extend((n as u32).to_le_bytes());
}

fn put_bytes(out: &mut Vec<u8>, b: &[u8]) {
    put_len(out, b.len());
    out.extend(b);
}

/// A value's bytes: a tag, then its payload (rule 3).
fn put(out: &mut Vec<u8>, d: &Datum) {
    match d {
        Datum::Null => out.push(0),
        Datum::Int2(v) => {
            out.push(1);
            out.extend(v.to_le_bytes());
        }
        Datum::Int4(v) => {
            out.push(2);
            out.extend(v.to_le_bytes());
        }
        Datum::Int8(v) => {
            out.push(3);
            out.extend(v.to_le_bytes());
        }
        Datum::Text(s) => {
            out.push(4);
            put_bytes(out, s.as_bytes());
        }
        Datum::Bool(b) => out.extend([5, u8::from(*b)]),
        Datum::Timestamp(v) => {
            out.push(6);
            out.extend(v.to_le_bytes());
        }
        Datum::TimestampTz(v) => {
            out.push(7);
            out.extend(v.to_le_bytes());
        }
        Datum::Date(v) => {
            out.push(8);
            out.extend(v.to_le_bytes());
        }
        Datum::Uuid(u) => {
            out.push(9);
            out.extend(u);
        }
        Datum::Bytea(b) => {
            out.push(10);
            put_bytes(out, b);
        }
        Datum::Float4(f) => {
            out.push(11);
            out.extend(f.get().to_le_bytes());
        }
        Datum::Float8(f) => {
            out.push(12);
            out.extend(f.get().to_le_bytes());
        }
        Datum::Numeric(n) => {
            out.push(13);
            let mut b = Vec::new();
            n.encode(&mut b);
            put_bytes(out, &b);
        }
        Datum::Time(v) => {
            out.push(14);
            out.extend(v.to_le_bytes());
        }
        Datum::Interval(i) => {
            out.push(15);
            out.extend(i.months.to_le_bytes());
            out.extend(i.days.to_le_bytes());
            out.extend(i.micros.to_le_bytes());
        }
        Datum::Lsn(l) => {
            out.push(16);
            out.extend(l.0.to_le_bytes());
        }
    }
}

fn corrupt() -> SqlError {
    SqlError::new("XX001", "a temporary file does not decode")
}

fn take<'b>(b: &'b [u8], at: &mut usize, n: usize) -> SqlResult<&'b [u8]> {
    let s = b.get(*at..*at + n).ok_or_else(corrupt)?;
    *at += n;
    Ok(s)
}

fn get_len(b: &[u8], at: &mut usize) -> SqlResult<usize> {
    Ok(u32::from_le_bytes(take(b, at, 4)?.try_into().expect("4 bytes")) as usize)
}

fn arr<const N: usize>(b: &[u8], at: &mut usize) -> SqlResult<[u8; N]> {
    Ok(take(b, at, N)?.try_into().expect("N bytes"))
}

/// A value from [`put`]'s bytes.
fn get(b: &[u8], at: &mut usize) -> SqlResult<Datum> {
    let tag = take(b, at, 1)?[0];
    Ok(match tag {
        0 => Datum::Null,
        1 => Datum::Int2(i16::from_le_bytes(arr(b, at)?)),
        2 => Datum::Int4(i32::from_le_bytes(arr(b, at)?)),
        3 => Datum::Int8(i64::from_le_bytes(arr(b, at)?)),
        4 => {
            let n = get_len(b, at)?;
            let s = take(b, at, n)?;
            Datum::Text(String::from_utf8(s.to_vec()).map_err(|_| corrupt())?)
        }
        5 => Datum::Bool(take(b, at, 1)?[0] != 0),
        6 => Datum::Timestamp(i64::from_le_bytes(arr(b, at)?)),
        7 => Datum::TimestampTz(i64::from_le_bytes(arr(b, at)?)),
        8 => Datum::Date(i32::from_le_bytes(arr(b, at)?)),
        9 => Datum::Uuid(arr(b, at)?),
        10 => {
            let n = get_len(b, at)?;
            Datum::Bytea(take(b, at, n)?.to_vec())
        }
        11 => Datum::Float4(Float::new(f64::from_le_bytes(arr(b, at)?))),
        12 => Datum::Float8(Float::new(f64::from_le_bytes(arr(b, at)?))),
        13 => {
            let n = get_len(b, at)?;
            Datum::Numeric(Numeric::decode(take(b, at, n)?).ok_or_else(corrupt)?)
        }
        14 => Datum::Time(i64::from_le_bytes(arr(b, at)?)),
        15 => Datum::Interval(Interval {
            months: i32::from_le_bytes(arr(b, at)?),
            days: i32::from_le_bytes(arr(b, at)?),
            micros: i64::from_le_bytes(arr(b, at)?),
        }),
        16 => Datum::Lsn(Lsn(u64::from_le_bytes(arr(b, at)?))),
        _ => return Err(corrupt()),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rows_come_back_as_written_and_the_file_goes() {
        let dir = tempfile::tempdir().unwrap();
        let temp = Temp::new(dir.path(), -1);
        let row = vec![
            Datum::Null,
            Datum::Int4(-5),
            Datum::Text("héllo".into()),
            Datum::Numeric(Numeric::parse("-12345678901234567890.125").unwrap()),
            Datum::Interval(Interval {
                months: 1,
                days: -2,
                micros: 3,
            }),
            Datum::Float8(Float::new(f64::NAN)),
        ];
        let mut f = TempFile::create(&temp).unwrap();
        for i in 0..1000 {
            f.write(&[&[Datum::Int8(i)], &row]).unwrap();
        }
        let files = || {
            std::fs::read_dir(dir.path().join(TEMP_DIR))
                .unwrap()
                .count()
        };
        assert_eq!(files(), 1);
        for i in 0..1000 {
            let parts = f.read().unwrap().unwrap();
            assert_eq!(parts[0], vec![Datum::Int8(i)]);
            assert_eq!(parts[1].len(), row.len());
            assert_eq!(format!("{:?}", parts[1]), format!("{row:?}"));
        }
        assert!(f.read().unwrap().is_none());
        drop(f);
        assert_eq!(files(), 0);
        assert_eq!(temp.used.load(Ordering::Relaxed), 0);
    }

    #[test]
    fn temp_file_limit_is_53400() {
        let dir = tempfile::tempdir().unwrap();
        let temp = Temp::new(dir.path(), 1);
        let mut f = TempFile::create(&temp).unwrap();
        let big = vec![Datum::Text("x".repeat(600))];
        f.write(&[&big]).unwrap();
        let e = f.write(&[&big]).unwrap_err();
        assert_eq!(e.code, "53400");
        assert_eq!(
            e.message,
            "temporary file size exceeds temp_file_limit (1kB)"
        );
    }
}
