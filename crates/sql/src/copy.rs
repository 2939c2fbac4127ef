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
//!    as its end is seen, by moving where the unread part begins; the read part is
//!    dropped once it is half the buffer, so each byte is scanned and moved O(1)
//!    times whatever the chunks' sizes. A record is at most [`MAX_RECORD_BYTES`]
//!    (54000 beyond it, before the buffer grows).
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
        let (delimiter, quote, escape) = (delimiter, quote, escape);
        let byte = |c: Option<char>, default: u8, what: &str, code| -> SqlResult<u8> {
            match c {
                None => Ok(default),
                Some(c) if c.is_ascii() => Ok(c as u8),
                Some(_) => Err(SqlError::new(
                    code,
                    format!("COPY {what} must be a single one-byte character"),
                )),
            }
        };
        let delimiter = byte(
            delimiter,
            if csv { b',' } else { b'\t' },
            "delimiter",
            "0A000",
        )?;
        let null = null.unwrap_or_else(|| if csv { String::new() } else { "\\N".into() });
        check_options(csv, delimiter, &null, (quote.is_some(), escape.is_some()))?;
        let quote = byte(quote, b'"', "quote", "0A000")?;
        let escape = byte(escape, quote, "escape", "0A000")?;
        check_csv_options(csv, delimiter, quote, &null)?;
        Ok(CopyOptions {
            csv,
            delimiter,
            null,
            header,
            quote,
            escape,
        })
    }
}

/// PostgreSQL's checks of the delimiter and NULL string, in its order (22023 for
/// a bad value, 0A000 for an option of the other format). HEADER is taken in both
/// formats, as PostgreSQL 15 takes it.
fn check_options(csv: bool, d: u8, null: &str, (quote, escape): (bool, bool)) -> SqlResult<()> {
    let bad = |m: String| Err(SqlError::new("22023", m));
    if d == b'\n' || d == b'\r' {
        return bad("COPY delimiter cannot be newline or carriage return".into());
    }
    if null.contains(['\n', '\r']) {
        return bad("COPY null representation cannot use newline or carriage return".into());
    }
    if !csv && b"\\.abcdefghijklmnopqrstuvwxyz0123456789".contains(&d) {
        return bad(format!("COPY delimiter cannot be \"{}\"", d as char));
    }
    if !csv && quote {
        return Err(SqlError::new(
            "0A000",
            "COPY quote available only in CSV mode",
        ));
    }
    if !csv && escape {
        return Err(SqlError::new(
            "0A000",
            "COPY escape available only in CSV mode",
        ));
    }
    if null.as_bytes().contains(&d) {
        return Err(SqlError::new(
            "0A000",
            "COPY delimiter must not appear in the NULL specification",
        ));
    }
    Ok(())
}

/// The CSV format's own checks: the quote differs from the delimiter and is not in
/// the NULL string.
fn check_csv_options(csv: bool, d: u8, q: u8, null: &str) -> SqlResult<()> {
    if !csv {
        return Ok(());
    }
    if d == q {
        return Err(SqlError::new(
            "22023",
            "COPY delimiter and quote must be different",
        ));
    }
    if null.as_bytes().contains(&q) {
        return Err(SqlError::new(
            "0A000",
            "CSV quote character must not appear in the NULL specification",
        ));
    }
    Ok(())
}

/// A bad record: 22P04 with PostgreSQL's words.
fn bad_format(msg: impl Into<String>) -> SqlError {
    SqlError::new("22P04", msg)
}

/// The longest record COPY FROM takes: PostgreSQL's MaxAllocSize, the bound of its
/// line buffer (copy rule 4).
pub const MAX_RECORD_BYTES: usize = crate::MAX_ALLOC_BYTES;

/// One record's fields, their text side by side in one string: a reader reuses it,
/// so a record costs no allocation once its buffers have grown (copy rule 4).
#[derive(Default)]
pub struct Record {
    text: String,
    fields: Vec<Option<std::ops::Range<usize>>>,
    /// A field's bytes after unescaping (text) or unquoting (csv).
    scratch: Vec<u8>,
}

impl Record {
    pub fn len(&self) -> usize {
        self.fields.len()
    }
    pub fn is_empty(&self) -> bool {
        self.fields.is_empty()
    }
    /// Field `i`'s text; None for NULL (or past the end).
    pub fn get(&self, i: usize) -> Option<&str> {
        let r = self.fields.get(i)?.clone()?;
        // Every range spans one field pushed whole as a str: on char boundaries.
        self.text.get(r)
    }
    fn clear(&mut self) {
        self.text.clear();
        self.fields.clear();
    }
    fn push_null(&mut self) {
        self.fields.push(None);
    }
    /// Appends a field's bytes: 22021 for a NUL or bytes that are not UTF-8, as
    /// PostgreSQL refuses them in text.
    fn push_field(&mut self, bytes: &[u8], line: u64) -> SqlResult<()> {
        let s = std::str::from_utf8(bytes).map_err(|e| {
            let at = e.valid_up_to();
            let n = e.error_len().unwrap_or(bytes.len() - at).min(4);
            bad_encoding(&bytes[at..at + n], line)
        })?;
        if let Some(at) = s.find('\0') {
            return Err(bad_encoding(&bytes[at..at + 1], line));
        }
        let start = self.text.len();
        self.text.push_str(s);
        self.fields.push(Some(start..self.text.len()));
        Ok(())
    }
}

/// PostgreSQL's 22021 for bytes its encoding does not take.
fn bad_encoding(bytes: &[u8], line: u64) -> SqlError {
    let hex: Vec<String> = bytes.iter().map(|b| format!("0x{b:02x}")).collect();
    SqlError::new(
        "22021",
        format!(
            "invalid byte sequence for encoding \"UTF8\": {}",
            hex.join(" ")
        ),
    )
    .with_detail(format!("line {line}"))
}

/// COPY FROM's reader (copy rules 1–4): chunks in, records out.
pub struct Reader {
    opts: CopyOptions,
    buf: Vec<u8>,
    /// Where the unread part of `buf` begins (copy rule 4).
    start: usize,
    /// Bytes of `buf` up to here are known to hold no record end after `start`
    /// (csv: with the quote state).
    scanned: usize,
    /// Bytes moved to the front of `buf` so far (copy rule 4's cost, for tests).
    moved_bytes: usize,
    in_quotes: bool,
    /// Records returned so far (for "line N" in errors).
    pub line: u64,
    ended: bool,
    skip_header: bool,
    /// The last record read.
    rec: Record,
}

impl Reader {
    pub fn new(opts: CopyOptions) -> Reader {
        let skip_header = opts.header;
        Reader {
            opts,
            buf: Vec::new(),
            start: 0,
            scanned: 0,
            moved_bytes: 0,
            in_quotes: false,
            line: 0,
            ended: false,
            skip_header,
            rec: Record::default(),
        }
    }

    /// Appends a chunk of the data: 54000 if the record it continues is already
    /// past [`MAX_RECORD_BYTES`] (so a record's buffer is at most that plus one
    /// chunk), 53200 if memory for the chunk cannot be had (copy rule 4). The
    /// caller takes every complete record out ([`Reader::next_record`]) before
    /// pushing again.
    pub fn push(&mut self, chunk: &[u8]) -> SqlResult<()> {
        if self.start > 0 && self.start * 2 >= self.buf.len() {
            self.moved_bytes += self.buf.len() - self.start;
            self.buf.drain(..self.start);
            self.scanned -= self.start;
            self.start = 0;
        }
        let pending = self.buf.len() - self.start;
        if pending > MAX_RECORD_BYTES {
            return Err(SqlError::new("54000", "out of memory").with_detail(format!(
                "Cannot enlarge string buffer containing {pending} bytes by {} more bytes.",
                chunk.len()
            )));
        }
        let need = self.buf.len() + chunk.len();
        if need > self.buf.capacity() {
            // Doubling, but never past what a record may reach: a buffer of at most
            // MAX_RECORD_BYTES plus one chunk.
            let target = need.max((2 * self.buf.capacity()).min(MAX_RECORD_BYTES + chunk.len()));
            let more = target - self.buf.len();
            crate::try_reserve(&mut self.buf, more)?;
        }
        self.buf.extend_from_slice(chunk);
        Ok(())
    }

    /// [`Reader::push`] of a chunk the caller gives up: when nothing is pending it
    /// becomes the buffer as it is (a large CopyData message is not copied again).
    pub fn push_owned(&mut self, chunk: Vec<u8>) -> SqlResult<()> {
        if self.start == self.buf.len() && chunk.len() <= MAX_RECORD_BYTES {
            self.buf = chunk;
            self.start = 0;
            self.scanned = 0;
            return Ok(());
        }
        self.push(&chunk)
    }

    /// Reads the next complete record ([`Reader::record`] then holds its fields);
    /// false when no complete record is buffered. With `eof`, what remains is the
    /// last record.
    pub fn next_record(&mut self, eof: bool) -> SqlResult<bool> {
        loop {
            if self.ended {
                return Ok(false);
            }
            let Some(end) = self.record_end(eof) else {
                return Ok(false);
            };
            let mut rec = self.start..end;
            // Copy rule 4: the next record starts after the newline.
            self.start = (end + 1).min(self.buf.len());
            self.scanned = self.start;
            if self.buf[rec.clone()].last() == Some(&b'\r') {
                rec.end -= 1;
            }
            self.line += 1;
            if !self.opts.csv && self.buf[rec.clone()] == *b"\\." {
                self.ended = true; // copy rule 1
                return Ok(false);
            }
            if std::mem::take(&mut self.skip_header) {
                continue;
            }
            let mut out = std::mem::take(&mut self.rec);
            out.clear();
            let read = if self.opts.csv {
                self.csv_fields(&self.buf[rec], &mut out)
            } else {
                self.text_fields(&self.buf[rec], &mut out)
            };
            self.rec = out;
            return read.map(|()| true);
        }
    }

    /// The fields of the record [`Reader::next_record`] read last.
    pub fn record(&self) -> &Record {
        &self.rec
    }

    /// Where the first record of the buffer ends (the newline's index).
    fn record_end(&mut self, eof: bool) -> Option<usize> {
        let q = self.opts.quote;
        if !self.opts.csv {
            let from = self.scanned;
            match self.buf[from..].iter().position(|&c| c == b'\n') {
                Some(i) => return Some(from + i),
                None => self.scanned = self.buf.len(),
            }
        }
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
        if eof && self.start < self.buf.len() {
            self.in_quotes = false;
            return Some(self.buf.len());
        }
        None
    }

    /// Text format (copy rules 2, 3): fields split at delimiters a backslash does
    /// not escape, unescaped only when they hold a backslash.
    fn text_fields(&self, rec: &[u8], out: &mut Record) -> SqlResult<()> {
        let d = self.opts.delimiter;
        let (mut start, mut i) = (0, 0);
        loop {
            while i < rec.len() && rec[i] != d {
                i += if rec[i] == b'\\' { 2 } else { 1 };
            }
            let raw = &rec[start.min(rec.len())..i.min(rec.len())];
            if raw == self.opts.null.as_bytes() {
                out.push_null();
            } else if !raw.contains(&b'\\') {
                out.push_field(raw, self.line)?;
            } else {
                let mut field = std::mem::take(&mut out.scratch);
                field.clear();
                unescape_text(raw, &mut field);
                let pushed = out.push_field(&field, self.line);
                out.scratch = field;
                pushed?;
            }
            if i >= rec.len() {
                return Ok(());
            }
            i += 1; // the delimiter
            start = i;
        }
    }

    /// CSV format (copy rule 2): quote and escape as configured.
    fn csv_fields(&self, rec: &[u8], out: &mut Record) -> SqlResult<()> {
        let (d, q, e) = (self.opts.delimiter, self.opts.quote, self.opts.escape);
        let mut i = 0;
        let mut field = std::mem::take(&mut out.scratch);
        loop {
            field.clear();
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
                out.scratch = field;
                return Err(bad_format("unterminated CSV quoted field"));
            }
            if !quoted && field == self.opts.null.as_bytes() {
                out.push_null();
            } else if let Err(err) = out.push_field(&field, self.line) {
                out.scratch = field;
                return Err(err);
            }
            if i >= rec.len() {
                out.scratch = field;
                return Ok(());
            }
            i += 1; // the delimiter
        }
    }
}

/// Copy rule 3: `raw` unescaped, appended to `out`.
fn unescape_text(raw: &[u8], out: &mut Vec<u8>) {
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
        let fields = |r: &Reader| -> Vec<Option<String>> {
            let rec = r.record();
            (0..rec.len())
                .map(|i| rec.get(i).map(str::to_string))
                .collect()
        };
        for chunk in data.chunks(n) {
            r.push(chunk)?;
            while r.next_record(false)? {
                out.push(fields(&r));
            }
        }
        while r.next_record(true)? {
            let rec = fields(&r);
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
        // PostgreSQL 15 takes HEADER in text format too.
        let header = [ast::CopyOption::Header(true)];
        assert!(CopyOptions::from_ast(&header, &[]).unwrap().header);
        // Its checks, with its SQLSTATEs and words (issue 27 defect 6: a delimiter
        // equal to the quote was accepted).
        use ast::CopyOption as O;
        let csv = || O::Format(ast::Ident::new("csv"));
        for (opts, code, msg) in [
            (
                vec![csv(), O::Delimiter(','), O::Quote(',')],
                "22023",
                "COPY delimiter and quote must be different",
            ),
            (
                vec![O::Delimiter('\n')],
                "22023",
                "COPY delimiter cannot be newline or carriage return",
            ),
            (
                vec![O::Null("a\rb".into())],
                "22023",
                "COPY null representation cannot use newline or carriage return",
            ),
            (
                vec![O::Delimiter('a')],
                "22023",
                "COPY delimiter cannot be \"a\"",
            ),
            (
                vec![O::Quote('"')],
                "0A000",
                "COPY quote available only in CSV mode",
            ),
            (
                vec![O::Escape('x')],
                "0A000",
                "COPY escape available only in CSV mode",
            ),
            (
                vec![O::Delimiter(','), O::Null("a,b".into())],
                "0A000",
                "COPY delimiter must not appear in the NULL specification",
            ),
            (
                vec![csv(), O::Null("a\"b".into())],
                "0A000",
                "CSV quote character must not appear in the NULL specification",
            ),
            (
                vec![O::Delimiter('é')],
                "0A000",
                "COPY delimiter must be a single one-byte character",
            ),
        ] {
            let e = CopyOptions::from_ast(&opts, &[]).unwrap_err();
            assert_eq!((e.code, e.message.as_str()), (code, msg), "{opts:?}");
        }
        let bin = [ast::CopyOption::Format(ast::Ident::new("binary"))];
        assert_eq!(CopyOptions::from_ast(&bin, &[]).unwrap_err().code, "0A000");
        let legacy = [ast::CopyLegacyOption::Csv(vec![
            ast::CopyLegacyCsvOption::Header,
        ])];
        let o = CopyOptions::from_ast(&[], &legacy).unwrap();
        assert!(o.csv && o.header && o.delimiter == b',' && o.null.is_empty());
    }

    /// Copy rule 4 (issue 27 defect 4): reading is linear in the input whatever the
    /// chunk sizes: 200,000 records in one chunk move no byte, in 64 KiB chunks at
    /// most a chunk's worth each. The old reader shifted the whole buffer per record
    /// (quadratic: about 10^11 bytes moved for this input in one chunk).
    #[test]
    fn records_are_cut_without_moving_the_buffer() {
        let data: Vec<u8> = (0..200_000)
            .flat_map(|i| format!("{i}\trow {i}\n").into_bytes())
            .collect();
        for n in [data.len(), 1 << 16, 8192, 7] {
            let mut r = Reader::new(opts(false));
            let mut count = 0;
            for chunk in data.chunks(n) {
                r.push(chunk).unwrap();
                while r.next_record(false).unwrap() {
                    assert_eq!(r.record().get(0), Some(count.to_string().as_str()));
                    count += 1;
                }
            }
            assert!(!r.next_record(true).unwrap());
            assert_eq!(count, 200_000);
            assert!(
                r.moved_bytes <= data.len(),
                "{n}-byte chunks moved {} bytes",
                r.moved_bytes
            );
        }
    }

    /// Copy rule 4: a record (a line without its newline, or an unterminated CSV
    /// quote) longer than MAX_RECORD_BYTES is 54000 before its buffer grows further.
    #[test]
    fn a_record_past_the_limit_is_refused() {
        for csv in [false, true] {
            let mut r = Reader::new(opts(csv));
            let chunk = vec![b'"'; 1 << 20];
            let mut err = None;
            for _ in 0..(MAX_RECORD_BYTES >> 20) + 3 {
                if let Err(e) = r.push(&chunk[..if csv { 1 } else { chunk.len() }]) {
                    err = Some(e);
                    break;
                }
                if csv {
                    // An unterminated quote: one quote, then data without an end.
                    r.push(&vec![b'x'; (1 << 20) - 1]).unwrap();
                }
                assert!(!r.next_record(false).unwrap());
            }
            let e = err.expect("refused");
            assert_eq!((e.code, e.message.as_str()), ("54000", "out of memory"));
            assert!(
                r.buf.len() <= MAX_RECORD_BYTES + (1 << 20),
                "{}",
                r.buf.len()
            );
        }
    }
}
