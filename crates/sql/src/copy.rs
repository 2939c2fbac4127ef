//! COPY's data formats: PostgreSQL's text and csv, read from a stream of chunks cut
//! anywhere (COPY FROM STDIN: psql's `\copy`, drivers' copy, `pgbench -i`) and
//! written in chunks (COPY TO STDOUT).
//!
//! Entry points: [`CopyOptions::from_ast`] (the statement's options), [`Reader`]
//! (chunks in, records of fields out), [`write_row`] (one row out).
//!
//! Rules (cited as "copy rule N"):
//! 1. A record ends at a newline outside quotes (csv) or at any newline (text, where a
//!    newline in data is written `\n`); a trailing carriage return is dropped, and a
//!    last record without a newline counts. Text's `\.` line ends the data.
//! 2. NULL is the NULL string unquoted (`\N` in text, empty in csv); a quoted empty
//!    csv field is the empty string.
//! 3. Text escapes are PostgreSQL's: `\b \f \n \r \t \v \\`, `\` + 1–3 octal digits,
//!    `\x` + 1–2 hex digits; any other escaped character is itself (so an escaped
//!    delimiter is data).
//! 4. Memory is one record plus one chunk: a record is cut out of the buffer as soon
//!    as its end is seen.
//! 5. Output is what PostgreSQL's COPY TO writes, so a COPY TO and COPY FROM round
//!    trip: text escapes backslash, newline, carriage return, tab and the delimiter;
//!    csv quotes a field holding the delimiter, a quote, a newline or a carriage
//!    return, or the empty string (NULL is unquoted empty).

use crate::{SqlError, SqlResult};
use sqlparser::ast;

/// The options of one COPY.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CopyOptions {
    pub csv: bool,
    pub delimiter: u8,
    pub null: String,
    pub header: bool,
    pub quote: u8,
    pub escape: u8,
}

impl CopyOptions {
    /// The statement's WITH (...) and legacy options, with PostgreSQL's defaults and
    /// checks (0A000 binary, 22023 a bad option).
    pub fn from_ast(
        options: &[ast::CopyOption],
        legacy: &[ast::CopyLegacyOption],
    ) -> SqlResult<CopyOptions> {
        let mut csv = false;
        let (mut delimiter, mut null, mut header) = (None, None, false);
        let (mut quote, mut escape) = (None, None);
        for o in options {
            match o {
                ast::CopyOption::Format(f) => match f.value.to_ascii_lowercase().as_str() {
                    "text" => csv = false,
                    "csv" => csv = true,
                    "binary" => return Err(SqlError::unsupported("COPY in binary format")),
                    other => {
                        return Err(SqlError::new(
                            "22023",
                            format!("COPY format \"{other}\" not recognized"),
                        ))
                    }
                },
                ast::CopyOption::Freeze(_) | ast::CopyOption::Encoding(_) => {}
                ast::CopyOption::Delimiter(c) => delimiter = Some(*c),
                ast::CopyOption::Null(s) => null = Some(s.clone()),
                ast::CopyOption::Header(h) => header = *h,
                ast::CopyOption::Quote(c) => quote = Some(*c),
                ast::CopyOption::Escape(c) => escape = Some(*c),
                other => return Err(SqlError::unsupported(format!("COPY option {other}"))),
            }
        }
        for o in legacy {
            match o {
                ast::CopyLegacyOption::Binary => {
                    return Err(SqlError::unsupported("COPY in binary format"))
                }
                ast::CopyLegacyOption::Delimiter(c) => delimiter = Some(*c),
                ast::CopyLegacyOption::Null(s) => null = Some(s.clone()),
                ast::CopyLegacyOption::Csv(opts) => {
                    csv = true;
                    for c in opts {
                        match c {
                            ast::CopyLegacyCsvOption::Header => header = true,
                            ast::CopyLegacyCsvOption::Quote(q) => quote = Some(*q),
                            ast::CopyLegacyCsvOption::Escape(e) => escape = Some(*e),
                            other => {
                                return Err(SqlError::unsupported(format!("COPY option {other}")))
                            }
                        }
                    }
                }
                other => return Err(SqlError::unsupported(format!("COPY option {other}"))),
            }
        }
        if header && !csv {
            return Err(SqlError::new(
                "0A000",
                "COPY HEADER available only in CSV mode",
            ));
        }
        let byte = |c: Option<char>, default: u8, what: &str| -> SqlResult<u8> {
            match c {
                None => Ok(default),
                Some(c) if c.is_ascii() && c != '\n' && c != '\r' => Ok(c as u8),
                Some(_) => Err(SqlError::new(
                    "22023",
                    format!("COPY {what} must be a single one-byte character"),
                )),
            }
        };
        let delimiter = byte(delimiter, if csv { b',' } else { b'\t' }, "delimiter")?;
        let quote = byte(quote, b'"', "quote")?;
        let escape = byte(escape, quote, "escape")?;
        if !csv && delimiter == b'\\' {
            return Err(SqlError::new("22023", "COPY delimiter cannot be backslash"));
        }
        Ok(CopyOptions {
            csv,
            delimiter,
            null: null.unwrap_or_else(|| if csv { String::new() } else { "\\N".into() }),
            header,
            quote,
            escape,
        })
    }
}

/// A bad record: 22P04 with PostgreSQL's words.
fn bad_format(msg: impl Into<String>) -> SqlError {
    SqlError::new("22P04", msg)
}

/// COPY FROM's reader (copy rules 1–4): chunks in, records out.
pub struct Reader {
    opts: CopyOptions,
    buf: Vec<u8>,
    /// Bytes of `buf` already known to hold no record end (csv: with the quote state).
    scanned: usize,
    in_quotes: bool,
    /// Records returned so far (for "line N" in errors).
    pub line: u64,
    ended: bool,
    skip_header: bool,
}

impl Reader {
    pub fn new(opts: CopyOptions) -> Reader {
        let skip_header = opts.header;
        Reader {
            opts,
            buf: Vec::new(),
            scanned: 0,
            in_quotes: false,
            line: 0,
            ended: false,
            skip_header,
        }
    }

    /// Appends a chunk of the data.
    pub fn push(&mut self, chunk: &[u8]) {
        self.buf.extend_from_slice(chunk);
    }

    /// The next complete record's fields (None: NULL), or None when no complete
    /// record is buffered. With `eof`, what remains is the last record.
    pub fn next_record(&mut self, eof: bool) -> SqlResult<Option<Vec<Option<String>>>> {
        loop {
            if self.ended {
                return Ok(None);
            }
            let Some(end) = self.record_end(eof) else {
                return Ok(None);
            };
            let mut rec: Vec<u8> = self.buf.drain(..end).collect();
            if self.buf.first() == Some(&b'\n') {
                self.buf.remove(0);
            }
            self.scanned = 0;
            if rec.last() == Some(&b'\r') {
                rec.pop();
            }
            self.line += 1;
            if !self.opts.csv && rec == b"\\." {
                self.ended = true; // copy rule 1
                return Ok(None);
            }
            if std::mem::take(&mut self.skip_header) {
                continue;
            }
            return if self.opts.csv {
                self.csv_fields(&rec).map(Some)
            } else {
                self.text_fields(&rec).map(Some)
            };
        }
    }

    /// Where the first record of the buffer ends (the newline's index).
    fn record_end(&mut self, eof: bool) -> Option<usize> {
        let q = self.opts.quote;
        while self.scanned < self.buf.len() {
            let c = self.buf[self.scanned];
            if self.opts.csv && c == q {
                self.in_quotes = !self.in_quotes;
            } else if c == b'\n' && !(self.opts.csv && self.in_quotes) {
                self.in_quotes = false;
                return Some(self.scanned);
            }
            self.scanned += 1;
        }
        if eof && !self.buf.is_empty() {
            self.in_quotes = false;
            return Some(self.buf.len());
        }
        None
    }

    fn utf8(&self, b: Vec<u8>) -> SqlResult<String> {
        String::from_utf8(b).map_err(|_| {
            SqlError::new(
                "22021",
                format!(
                    "invalid byte sequence for encoding \"UTF8\" (line {})",
                    self.line
                ),
            )
        })
    }

    /// Text format (copy rules 2, 3).
    fn text_fields(&self, rec: &[u8]) -> SqlResult<Vec<Option<String>>> {
        let mut out = Vec::new();
        for raw in split_unescaped(rec, self.opts.delimiter) {
            if raw == self.opts.null.as_bytes() {
                out.push(None);
                continue;
            }
            out.push(Some(self.utf8(unescape_text(raw))?));
        }
        Ok(out)
    }

    /// CSV format (copy rule 2): quote and escape as configured.
    fn csv_fields(&self, rec: &[u8]) -> SqlResult<Vec<Option<String>>> {
        let (d, q, e) = (self.opts.delimiter, self.opts.quote, self.opts.escape);
        let mut out = Vec::new();
        let mut i = 0;
        loop {
            let mut field = Vec::new();
            let mut quoted = false;
            let mut in_q = false;
            while i < rec.len() {
                let c = rec[i];
                if in_q {
                    if c == e && e != q && rec.get(i + 1) == Some(&q) {
                        field.push(q);
                        i += 2;
                        continue;
                    }
                    if c == q {
                        if q == e && rec.get(i + 1) == Some(&q) {
                            field.push(q);
                            i += 2;
                            continue;
                        }
                        in_q = false;
                    } else {
                        field.push(c);
                    }
                } else if c == q {
                    in_q = true;
                    quoted = true;
                } else if c == d {
                    break;
                } else {
                    field.push(c);
                }
                i += 1;
            }
            if in_q {
                return Err(bad_format("unterminated CSV quoted field"));
            }
            if !quoted && field == self.opts.null.as_bytes() {
                out.push(None);
            } else {
                out.push(Some(self.utf8(field)?));
            }
            if i >= rec.len() {
                return Ok(out);
            }
            i += 1; // the delimiter
        }
    }
}

/// Splits a text-format record at delimiters not escaped by a backslash.
fn split_unescaped(rec: &[u8], d: u8) -> Vec<&[u8]> {
    let mut out = Vec::new();
    let (mut start, mut i) = (0, 0);
    while i < rec.len() {
        if rec[i] == b'\\' {
            i += 2;
            continue;
        }
        if rec[i] == d {
            out.push(&rec[start..i]);
            start = i + 1;
        }
        i += 1;
    }
    out.push(&rec[start.min(rec.len())..]);
    out
}

/// Copy rule 3.
fn unescape_text(raw: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(raw.len());
    let mut i = 0;
    while i < raw.len() {
        let c = raw[i];
        i += 1;
        if c != b'\\' || i >= raw.len() {
            out.push(c);
            continue;
        }
        let e = raw[i];
        i += 1;
        match e {
            b'b' => out.push(8),
            b'f' => out.push(12),
            b'n' => out.push(b'\n'),
            b'r' => out.push(b'\r'),
            b't' => out.push(b'\t'),
            b'v' => out.push(11),
            b'0'..=b'7' => {
                let mut v = u32::from(e - b'0');
                for _ in 0..2 {
                    match raw.get(i) {
                        Some(&d @ b'0'..=b'7') => {
                            v = v * 8 + u32::from(d - b'0');
                            i += 1;
                        }
                        _ => break,
                    }
                }
                out.push(v as u8);
            }
            b'x' if raw.get(i).is_some_and(u8::is_ascii_hexdigit) => {
                let mut v = 0u32;
                for _ in 0..2 {
                    match raw.get(i).and_then(|d| (*d as char).to_digit(16)) {
                        Some(d) => {
                            v = v * 16 + d;
                            i += 1;
                        }
                        None => break,
                    }
                }
                out.push(v as u8);
            }
            other => out.push(other),
        }
    }
    out
}

/// Appends one row in COPY TO's format (copy rule 5); `None` is NULL.
pub fn write_row(opts: &CopyOptions, row: &[Option<String>], out: &mut Vec<u8>) {
    for (k, f) in row.iter().enumerate() {
        if k > 0 {
            out.push(opts.delimiter);
        }
        match f {
            None => out.extend_from_slice(opts.null.as_bytes()),
            Some(s) if opts.csv => write_csv_field(opts, s, out),
            Some(s) => {
                for &b in s.as_bytes() {
                    match b {
                        b'\\' => out.extend_from_slice(b"\\\\"),
                        b'\n' => out.extend_from_slice(b"\\n"),
                        b'\r' => out.extend_from_slice(b"\\r"),
                        b'\t' => out.extend_from_slice(b"\\t"),
                        b if b == opts.delimiter => {
                            out.push(b'\\');
                            out.push(b);
                        }
                        b => out.push(b),
                    }
                }
            }
        }
    }
    out.push(b'\n');
}

fn write_csv_field(opts: &CopyOptions, s: &str, out: &mut Vec<u8>) {
    let (d, q, e) = (opts.delimiter, opts.quote, opts.escape);
    let needs = s.is_empty()
        || s == opts.null
        || s.bytes()
            .any(|b| b == d || b == q || b == b'\n' || b == b'\r');
    if !needs {
        out.extend_from_slice(s.as_bytes());
        return;
    }
    out.push(q);
    for b in s.bytes() {
        if b == q || b == e {
            out.push(e);
        }
        out.push(b);
    }
    out.push(q);
}

#[cfg(test)]
mod tests {
    use super::*;

    fn opts(csv: bool) -> CopyOptions {
        let f = ast::CopyOption::Format(ast::Ident::new(if csv { "csv" } else { "text" }));
        CopyOptions::from_ast(&[f], &[]).unwrap()
    }

    /// Feeds `data` in chunks of `n` bytes; all records.
    fn read(o: CopyOptions, data: &[u8], n: usize) -> SqlResult<Vec<Vec<Option<String>>>> {
        let mut r = Reader::new(o);
        let mut out = Vec::new();
        for chunk in data.chunks(n) {
            r.push(chunk);
            while let Some(rec) = r.next_record(false)? {
                out.push(rec);
            }
        }
        while let Some(rec) = r.next_record(true)? {
            out.push(rec);
        }
        Ok(out)
    }

    fn s(v: &str) -> Option<String> {
        Some(v.to_string())
    }

    #[test]
    fn text_records_cut_anywhere_read_the_same() {
        let data = b"1\tone\\ttab\n2\t\\N\n3\ta\\\\b\\nc\\101\\x41\r\n4\tlast";
        let want = vec![
            vec![s("1"), s("one\ttab")],
            vec![s("2"), None],
            vec![s("3"), s("a\\b\ncAA")],
            vec![s("4"), s("last")],
        ];
        for n in [1, 2, 3, 7, 100] {
            assert_eq!(read(opts(false), data, n).unwrap(), want, "chunks of {n}");
        }
        assert_eq!(
            read(opts(false), b"1\tx\n\\.\n2\ty\n", 4).unwrap(),
            [vec![s("1"), s("x")]]
        );
    }

    #[test]
    fn csv_quotes_span_lines_and_tell_empty_from_null() {
        let mut o = opts(true);
        o.header = true;
        let data = b"id,name\n1,\"a, \"\"quoted\"\"\nline\"\n2,\n3,\"\"\n";
        let want = vec![
            vec![s("1"), s("a, \"quoted\"\nline")],
            vec![s("2"), None],
            vec![s("3"), s("")],
        ];
        for n in [1, 5, 100] {
            assert_eq!(read(o.clone(), data, n).unwrap(), want, "chunks of {n}");
        }
        assert_eq!(
            read(opts(true), b"1,\"open\n", 3).unwrap_err().code,
            "22P04"
        );
    }

    #[test]
    fn what_copy_to_writes_copy_from_reads_back() {
        let rows = vec![
            vec![s("x\ty\\z\nw\r"), None, s("")],
            vec![s("a,\"b\""), s("\\N"), s("plain")],
        ];
        for csv in [false, true] {
            let o = opts(csv);
            let mut out = Vec::new();
            for r in &rows {
                write_row(&o, r, &mut out);
            }
            assert_eq!(read(o, &out, 3).unwrap(), rows, "csv {csv}");
        }
    }

    #[test]
    fn options_as_postgres_checks_them() {
        let header = [ast::CopyOption::Header(true)];
        assert_eq!(
            CopyOptions::from_ast(&header, &[]).unwrap_err().code,
            "0A000"
        );
        let bin = [ast::CopyOption::Format(ast::Ident::new("binary"))];
        assert_eq!(CopyOptions::from_ast(&bin, &[]).unwrap_err().code, "0A000");
        let legacy = [ast::CopyLegacyOption::Csv(vec![
            ast::CopyLegacyCsvOption::Header,
        ])];
        let o = CopyOptions::from_ast(&[], &legacy).unwrap();
        assert!(o.csv && o.header && o.delimiter == b',' && o.null.is_empty());
    }
}
