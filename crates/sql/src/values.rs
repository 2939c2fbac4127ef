//! INSERT ... VALUES row by row (issue 11, item 16: a query text costs about its
//! size): a lexical pre-scan of the query string finds its statements and, in an
//! INSERT whose source is a plain VALUES list, where its rows are, without
//! tokenizing them. Such an INSERT carries its rows as text ([`Rows`], the query
//! string shared, never copied) and each row is tokenized, parsed, bound and
//! inserted before the next is read, so sqlparser's tokens (88 bytes each) and tree
//! (328 bytes per expression) exist for one row at a time.
//!
//! Entry points: [`statements`] (the pre-scan of a query string) and [`Rows`] (one
//! statement's VALUES rows, parsed one at a time by [`Rows::iter`]).
//!
//! Rules:
//! 1. The scanner knows only what decides where sqlparser's PostgreSQL tokenizer
//!    begins and ends tokens: quotes ('...' with '' doubled; E'...' and X'...' with
//!    backslash escapes; "..."; $tag$...$tag$), comments (`--` to the end of the line,
//!    nested `/* */`), words, numbers and operator runs. Where it reports `(`, `)`,
//!    `,` and `;`, sqlparser has the same tokens (a property test compares them on
//!    random texts; another compares what random INSERTs mean parsed either way).
//! 2. Where the two could disagree (a number run into a letter or a quote, `--` or
//!    `/*` inside an operator, `&>`, `U&'...'`, `._`) or where the text does not lex (an
//!    unterminated quote or comment), the scanner gives up ([`Unsure`]) and the
//!    whole query string takes the tokenizer path, which reports errors as before.
//! 3. Statements end at every `;` outside quotes and comments, as the tokenizer path
//!    splits them. A statement is split into head and rows only when its first word
//!    is INSERT and its first VALUES outside parentheses is followed by
//!    parenthesized rows separated by commas up to the statement's end; anything
//!    else (ON CONFLICT, RETURNING, UNION, ORDER BY, VALUE, ROW(...), a trailing
//!    comma) is parsed whole, as before.
//! 4. A row is parsed alone exactly as it would be in its statement: its tokens after
//!    `INSERT INTO x VALUES`; the expression bound (`check_complexity`) applies to each
//!    row's tokens (AND/OR chains are counted per row: a row's tree is dropped before
//!    the next is built, which is what the bound protects). A tokenizer error in a row
//!    reports the line and column of the whole text.
//! 5. Cost: O(text) time for the pre-scan and again for the rows; memory O(one row)
//!    beyond the text itself.

use super::{ast, check_complexity, parse_with_sqlparser, tokens, InsertSource, SqlError};
use super::{SqlResult, Stmt};
use sqlparser::tokenizer::{Token, TokenWithSpan, TokenizerError};
use std::fmt;
use std::ops::Range;
use std::sync::Arc;

/// What the scanner sees of one token (or run of characters).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Lex {
    /// Whitespace or a comment.
    Space,
    /// An unquoted word (identifier or keyword).
    Word,
    Open,
    Close,
    Comma,
    Semi,
    /// Anything else: a string, quoted identifier, number, operator, placeholder.
    Other,
}

/// The scanner cannot say where sqlparser's tokens would end (rule 2).
#[derive(Debug)]
pub struct Unsure;

/// A byte of an unquoted word after its first (sqlparser's PostgreSQL
/// `is_identifier_part`: letters, digits, `_`, `$`, any non-ASCII character).
fn word_part(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b == b'_' || b == b'$' || b >= 0x80
}

/// The first byte of an unquoted word (`is_identifier_start`).
fn word_start(b: u8) -> bool {
    b.is_ascii_alphabetic() || b == b'_' || b >= 0x80
}

/// A character sqlparser may take into a custom operator (`is_custom_operator_part`).
fn op_part(b: u8) -> bool {
    b"+-*/<>=~!@#%^&|`?".contains(&b)
}

/// The lexer: `next` reads one lexeme from `i` on.
struct Lexer<'a> {
    b: &'a [u8],
    i: usize,
}

impl<'a> Lexer<'a> {
    fn new(text: &'a str, from: usize) -> Lexer<'a> {
        Lexer {
            b: text.as_bytes(),
            i: from,
        }
    }

    fn at(&self, k: usize) -> Option<u8> {
        self.b.get(self.i + k).copied()
    }

    /// The next lexeme and where it starts (it ends at `self.i`); `None` at the end.
    fn next(&mut self) -> Option<Result<(Lex, usize), Unsure>> {
        let start = self.i;
        let c = self.at(0)?;
        let lex = match c {
            b' ' | b'\t' | b'\n' | b'\r' | 0x0b | 0x0c => {
                self.i += 1;
                Ok(Lex::Space)
            }
            b'(' | b')' | b',' | b';' => {
                self.i += 1;
                Ok(match c {
                    b'(' => Lex::Open,
                    b')' => Lex::Close,
                    b',' => Lex::Comma,
                    _ => Lex::Semi,
                })
            }
            b'\'' => self.quoted(b'\'', false),
            b'"' => self.quoted(b'"', false),
            b'$' => self.dollar(),
            b'0'..=b'9' => self.number(),
            b'.' if self.at(1).is_some_and(|d| d.is_ascii_digit()) => self.number(),
            b'.' if self.at(1) == Some(b'_') => Err(Unsure),
            _ if word_start(c) => self.word(),
            _ if op_part(c) => self.operator(),
            _ => {
                self.i += 1;
                Ok(Lex::Other)
            }
        };
        Some(lex.map(|l| (l, start)))
    }

    /// A quoted string or identifier from its opening quote: the quote doubled
    /// stands for itself; with `backslash`, `\` escapes the next character.
    fn quoted(&mut self, q: u8, backslash: bool) -> Result<Lex, Unsure> {
        self.i += 1;
        loop {
            match self.at(0).ok_or(Unsure)? {
                b'\\' if backslash => self.i += 2,
                x if x == q => {
                    self.i += 1;
                    if self.at(0) != Some(q) {
                        return Ok(Lex::Other);
                    }
                    self.i += 1;
                }
                _ => self.i += 1,
            }
        }
    }

    /// `$`: a dollar-quoted string `$tag$...$tag$` (ending at the first closing
    /// delimiter, as sqlparser's does) or a placeholder (`$1`).
    fn dollar(&mut self) -> Result<Lex, Unsure> {
        let open = self.i;
        self.i += 1;
        while let Some(c) = self.at(0) {
            if c >= 0x80 {
                // sqlparser takes alphanumeric non-ASCII characters into the tag.
                return Err(Unsure);
            }
            if !(c.is_ascii_alphanumeric() || c == b'_') {
                break;
            }
            self.i += 1;
        }
        if self.at(0) != Some(b'$') {
            return Ok(Lex::Other);
        }
        self.i += 1;
        let delim = &self.b[open..self.i];
        let body = &self.b[self.i..];
        let end = body
            .windows(delim.len())
            .position(|w| w == delim)
            .ok_or(Unsure)?;
        self.i += end + delim.len();
        Ok(Lex::Other)
    }

    /// A number: digits, a fraction, an exponent. One that runs into a word, a
    /// quote or another period is left to the tokenizer (`0x1F`, `1e'..'`, `1_000`).
    fn number(&mut self) -> Result<Lex, Unsure> {
        let digits = |l: &mut Lexer<'_>| {
            while l.at(0).is_some_and(|d| d.is_ascii_digit()) {
                l.i += 1;
            }
        };
        digits(self);
        if self.at(0) == Some(b'.') {
            self.i += 1;
            digits(self);
        }
        if matches!(self.at(0), Some(b'e' | b'E')) {
            let sign = usize::from(matches!(self.at(1), Some(b'+' | b'-')));
            if self.at(1 + sign).is_some_and(|d| d.is_ascii_digit()) {
                self.i += 1 + sign;
                digits(self);
            }
        }
        match self.at(0) {
            Some(c) if word_part(c) || matches!(c, b'\'' | b'"' | b'.') => Err(Unsure),
            _ => Ok(Lex::Other),
        }
    }

    /// An unquoted word, or the string it prefixes: `E'...'` and `X'...'` take
    /// backslash escapes, `B'...'` and `N'...'` do not; `U&'...'` is left to the
    /// tokenizer.
    fn word(&mut self) -> Result<Lex, Unsure> {
        let start = self.i;
        while self.at(0).is_some_and(word_part) {
            self.i += 1;
        }
        let single = self.i - start == 1;
        match (single, self.b[start].to_ascii_lowercase(), self.at(0)) {
            (true, b'e' | b'x', Some(b'\'')) => self.quoted(b'\'', true),
            (true, b'u', Some(b'&')) => Err(Unsure),
            _ => Ok(Lex::Word),
        }
    }

    /// A run of operator characters, or a comment where one begins the run. A
    /// comment starting inside a run may be part of a custom operator in sqlparser,
    /// and its `&>` takes the character after it too (`&>'` is not a string).
    fn operator(&mut self) -> Result<Lex, Unsure> {
        match (self.at(0), self.at(1)) {
            (Some(b'-'), Some(b'-')) => {
                while self.at(0).is_some_and(|c| c != b'\n' && c != b'\r') {
                    self.i += 1;
                }
                return Ok(Lex::Space);
            }
            (Some(b'/'), Some(b'*')) => return self.comment(),
            _ => {}
        }
        if (self.at(0), self.at(1)) == (Some(b'&'), Some(b'>')) {
            return Err(Unsure);
        }
        self.i += 1;
        while let Some(c) = self.at(0).filter(|c| op_part(*c)) {
            if matches!(
                (c, self.at(1)),
                (b'-', Some(b'-')) | (b'/', Some(b'*')) | (b'&', Some(b'>'))
            ) {
                return Err(Unsure);
            }
            self.i += 1;
        }
        Ok(Lex::Other)
    }

    /// A `/* ... */` comment; they nest.
    fn comment(&mut self) -> Result<Lex, Unsure> {
        self.i += 2;
        let mut depth = 1;
        while depth > 0 {
            match (self.at(0).ok_or(Unsure)?, self.at(1)) {
                (b'/', Some(b'*')) => {
                    depth += 1;
                    self.i += 2;
                }
                (b'*', Some(b'/')) => {
                    depth -= 1;
                    self.i += 2;
                }
                _ => self.i += 1,
            }
        }
        Ok(Lex::Space)
    }
}

/// One statement of a query string, as the pre-scan found it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Split {
    /// The statement's bytes, without its `;`.
    pub range: Range<usize>,
    /// In an INSERT ... VALUES split into head and rows (rule 3): the first row,
    /// from its `(` to its `)`; the rows run from there to the statement's end.
    pub first_row: Option<Range<usize>>,
}

/// Where the pre-scan of one statement is (rule 3).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Phase {
    /// Before the first word.
    Start,
    /// After INSERT, looking for VALUES outside parentheses.
    Head,
    /// After VALUES or a comma between rows: a row must begin.
    RowStart,
    /// In a row that began at this byte.
    InRow(usize),
    /// After a row: a comma or the statement's end.
    RowEnd,
    /// Not an INSERT ... VALUES that can be split.
    Whole,
}

/// The pre-scan of one statement.
struct StmtScan {
    start: usize,
    phase: Phase,
    depth: usize,
    first_row: Option<Range<usize>>,
}

impl StmtScan {
    fn new(start: usize) -> StmtScan {
        StmtScan {
            start,
            phase: Phase::Start,
            depth: 0,
            first_row: None,
        }
    }

    fn step(&mut self, lex: Lex, word: &[u8], start: usize, end: usize) {
        use Phase::*;
        if lex == Lex::Space {
            return;
        }
        self.phase = match (self.phase, lex) {
            (Start, Lex::Word) if word.eq_ignore_ascii_case(b"insert") => Head,
            (Start, _) => Whole,
            (Head, Lex::Word) if self.depth == 0 && word.eq_ignore_ascii_case(b"values") => {
                RowStart
            }
            (Head, Lex::Open) => {
                self.depth += 1;
                Head
            }
            (Head, Lex::Close) if self.depth > 0 => {
                self.depth -= 1;
                Head
            }
            (Head, Lex::Close) => Whole,
            (Head, _) => Head,
            (RowStart, Lex::Open) => {
                self.depth = 1;
                InRow(start)
            }
            (InRow(s), Lex::Open) => {
                self.depth += 1;
                InRow(s)
            }
            (InRow(s), Lex::Close) if self.depth == 1 => {
                self.depth = 0;
                self.first_row.get_or_insert(s..end);
                RowEnd
            }
            (InRow(s), Lex::Close) => {
                self.depth -= 1;
                InRow(s)
            }
            (InRow(s), _) => InRow(s),
            (RowEnd, Lex::Comma) => RowStart,
            _ => Whole,
        };
    }

    fn finish(self, end: usize) -> Split {
        Split {
            range: self.start..end,
            first_row: self.first_row.filter(|_| self.phase == Phase::RowEnd),
        }
    }
}

/// The statements of a query string, split at every `;` outside quotes and
/// comments; an INSERT ... VALUES among them with its first row (rule 3). `None`
/// when the text is not one the scanner can split confidently (rule 2). O(text).
pub fn statements(text: &str) -> Option<Vec<Split>> {
    let mut lx = Lexer::new(text, 0);
    let mut out = Vec::new();
    let mut cur = StmtScan::new(0);
    while let Some(r) = lx.next() {
        let (lex, start) = r.ok()?;
        if lex == Lex::Semi {
            out.push(std::mem::replace(&mut cur, StmtScan::new(lx.i)).finish(start));
            continue;
        }
        cur.step(lex, &text.as_bytes()[start..lx.i], start, lx.i);
    }
    out.push(cur.finish(text.len()));
    Some(out)
}

/// An INSERT's VALUES rows, still text: a range of the shared query string, from
/// the first row's `(` to the statement's end, that the pre-scan found to be
/// parenthesized rows separated by commas (rule 3).
#[derive(Clone)]
pub struct Rows {
    text: Arc<String>,
    range: Range<usize>,
}

impl fmt::Debug for Rows {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Rows({:?})", self.range)
    }
}

impl Rows {
    pub fn new(text: Arc<String>, range: Range<usize>) -> Rows {
        Rows { text, range }
    }

    /// The rows in order, each parsed when it is reached (rule 4). O(row) memory.
    pub fn iter(&self) -> impl Iterator<Item = SqlResult<Vec<ast::Expr>>> + '_ {
        // Where each row begins, found by walking on from the last (O(text)).
        let mut at = crate::TextCursor::default();
        self.ranges().map(move |r| {
            let r = r?;
            let base = at.advance(&self.text, r.start);
            parse_row(&self.text, r.clone(), base)
                .unwrap_or_else(|e| Err(SqlError::syntax(relocate(e, &self.text, r.start))))
        })
    }

    /// Parses every row and drops it: a multi-statement query string reports a
    /// syntax error in any of its statements before one runs, as PostgreSQL does.
    /// `Err` when a row does not tokenize (the caller takes the tokenizer path).
    pub fn check(&self) -> Result<SqlResult<()>, TokenizerError> {
        let mut at = crate::TextCursor::default();
        for r in self.ranges() {
            match r {
                Ok(r) => {
                    let base = at.advance(&self.text, r.start);
                    if let Err(e) = parse_row(&self.text, r, base)? {
                        return Ok(Err(e));
                    }
                }
                Err(e) => return Ok(Err(e)),
            }
        }
        Ok(Ok(()))
    }

    /// The byte range of each row, from its `(` to its `)`.
    fn ranges(&self) -> impl Iterator<Item = SqlResult<Range<usize>>> + '_ {
        let mut lx = Lexer::new(&self.text[..self.range.end], self.range.start);
        let mut first = true;
        std::iter::from_fn(move || {
            let r = next_row(&mut lx, first);
            first = false;
            r.map(|r| {
                r.map_err(|Unsure| {
                    SqlError::new("XX000", "VALUES rows no longer split as pre-scanned")
                })
            })
        })
    }
}

/// The next row after a comma (none before the first), or `None` at the end.
fn next_row(lx: &mut Lexer<'_>, first: bool) -> Option<Result<Range<usize>, Unsure>> {
    let mut comma = first;
    loop {
        let (lex, start) = match lx.next()? {
            Ok(l) => l,
            Err(e) => return Some(Err(e)),
        };
        match lex {
            Lex::Space => {}
            Lex::Comma if !comma => comma = true,
            Lex::Open if comma => return Some(row_end(lx, start)),
            _ => return Some(Err(Unsure)),
        }
    }
}

/// The rest of a row whose `(` began at `start`.
fn row_end(lx: &mut Lexer<'_>, start: usize) -> Result<Range<usize>, Unsure> {
    let mut depth = 1usize;
    while depth > 0 {
        match lx.next().ok_or(Unsure)??.0 {
            Lex::Open => depth += 1,
            Lex::Close => depth -= 1,
            _ => {}
        }
    }
    Ok(start..lx.i)
}

/// One row parsed as it would be in its statement (rule 4): `Err` when its text
/// does not tokenize. `base` is the line and column of its start in the whole text, where its
/// tokens are located (an error names its place there).
fn parse_row(
    text: &str,
    r: Range<usize>,
    base: (u64, u64),
) -> Result<SqlResult<Vec<ast::Expr>>, TokenizerError> {
    let row = tokens(&text[r], Some(base))?;
    if let Err(e) = check_complexity(&row) {
        return Ok(Err(e));
    }
    let mut all = Vec::with_capacity(row.len() + 4);
    all.extend(
        [
            Token::make_keyword("INSERT"),
            Token::make_keyword("INTO"),
            Token::make_word("x", None),
            Token::make_keyword("VALUES"),
        ]
        .map(TokenWithSpan::wrap),
    );
    all.extend(row);
    Ok(match parse_with_sqlparser(all) {
        Ok(Stmt::Insert {
            source: InsertSource::Values(mut v),
            ..
        }) if v.len() == 1 => Ok(v.swap_remove(0)),
        Ok(_) => Err(SqlError::syntax("syntax error in a VALUES row")),
        Err(e) => Err(e),
    })
}

/// A tokenizer error in `text[offset..]` as the tokenizer of the whole `text`
/// reports it (lines counted by `\n`, columns in characters, from 1).
fn relocate(mut e: TokenizerError, text: &str, offset: usize) -> String {
    let before = &text[..offset];
    let line0 = before.bytes().filter(|b| *b == b'\n').count() as u64;
    let col0 = before.rsplit('\n').next().unwrap_or("").chars().count() as u64;
    if e.location.line == 1 {
        e.location.column += col0;
    }
    if e.location.line > 0 {
        e.location.line += line0;
    }
    e.to_string()
}

#[cfg(test)]
mod tests {
    //! The pre-scan agrees with sqlparser's tokenizer on where `(`, `)`, `,` and `;`
    //! are (random texts), and `parse` with rows kept as text means what the text
    //! tokenized whole means (random INSERTs); unit cases for each lexical form.

    use super::super::{parse, parse_shared, parse_tokens, InsertSource, Stmt};
    use super::*;
    use proptest::prelude::*;
    use sqlparser::dialect::PostgreSqlDialect;
    use sqlparser::tokenizer::Tokenizer;

    /// The rows of the one statement of `sql`, as text, split by the pre-scan.
    fn rows_of(sql: &str) -> Vec<&str> {
        let splits = statements(sql).expect("the pre-scan splits it");
        let first = splits[0].first_row.clone().expect("split into rows");
        let text = Arc::new(sql.to_string());
        let rows = Rows::new(text, first.start..splits[0].range.end);
        let ranges: Vec<_> = rows.ranges().map(|r| r.unwrap()).collect();
        ranges.into_iter().map(|r| &sql[r]).collect()
    }

    #[test]
    fn rows_end_at_their_parenthesis_whatever_their_strings_and_comments_hold() {
        let sql = "insert into t values (1, 'a,b);c'), (2, E'it\\'s),('), \
                   (3, $$),($$), (4, $x$ $$ ) $x$), (5, \"q,)\"), \
                   /* ), ( /* nested ) */ , */ (6, ((1 + 2) * 3)), -- ), (\n(7, 'x''),(')";
        assert_eq!(
            rows_of(sql),
            [
                "(1, 'a,b);c')",
                "(2, E'it\\'s),(')",
                "(3, $$),($$)",
                "(4, $x$ $$ ) $x$)",
                "(5, \"q,)\")",
                "(6, ((1 + 2) * 3))",
                "(7, 'x''),(')",
            ]
        );
        // A backslash in a standard string is a character, not an escape.
        assert_eq!(
            rows_of("insert into t values ('\\'), (2)"),
            ["('\\')", "(2)"]
        );
        assert_eq!(
            rows_of("insert into t values (x'\\''), (2)"),
            ["(x'\\'')", "(2)"]
        );
    }

    #[test]
    fn statements_end_at_semicolons_outside_quotes_and_comments() {
        let sql =
            "insert into t values (1, ';'); select ';' -- ;\n; /* ; /* ; */ ; */ select $a$;$a$";
        let s = statements(sql).unwrap();
        let texts: Vec<&str> = s.iter().map(|s| sql[s.range.clone()].trim()).collect();
        assert_eq!(
            texts,
            [
                "insert into t values (1, ';')",
                "select ';' -- ;",
                "/* ; /* ; */ ; */ select $a$;$a$"
            ]
        );
        assert_eq!(s[0].first_row.clone().map(|r| &sql[r]), Some("(1, ';')"));
        assert!(s[1].first_row.is_none() && s[2].first_row.is_none());
    }

    #[test]
    fn only_a_plain_values_list_is_split() {
        for sql in [
            "insert into t values (1) returning a",
            "insert into t values (1) on conflict do nothing",
            "insert into t values (1),",
            "insert into t values (1) union select 2",
            "insert into t values row(1)",
            "insert into t value (1)",
            "insert into t select * from (values (1)) v",
            "insert into t values (1",
            "select 1 from t values (1)",
            "with x as (select 1) insert into t values ((select 1))",
        ] {
            let s = statements(sql).unwrap();
            assert!(s[0].first_row.is_none(), "{sql}");
        }
        for sql in [
            "INSERT INTO \"values\" (a) VALUES (1)",
            "insert into t(values) values (1)",
        ] {
            assert!(statements(sql).unwrap()[0].first_row.is_some(), "{sql}");
        }
    }

    #[test]
    fn what_the_scanner_cannot_be_sure_of_goes_to_the_tokenizer() {
        for sql in [
            "insert into t values ('abc",
            "insert into t values (1) /* open",
            "insert into t values ($a$ x)",
            "insert into t values (\"x)",
            "insert into t values (1e'x')",
            "insert into t values (0x1F)",
            "insert into t values (U&'x')",
            "select 1 <-- 2",
            "select 1 */* x */",
            "select 1 &>'a,b)'",
            "select a._b",
        ] {
            assert!(statements(sql).is_none(), "{sql}");
        }
        // And the tokenizer reports it as before: an unterminated string is 42601.
        let e = parse("insert into t values (1, 'abc), (2, 'x')").unwrap_err();
        assert_eq!(e.code, "42601");
        assert!(e.message.starts_with("Unterminated string literal"), "{e}");
    }

    #[test]
    fn a_row_that_does_not_tokenize_reports_where_in_the_whole_text() {
        let sql = "insert into t values (1),\n  (2), (E'\\u12')";
        let whole = parse_tokens(sql, false).unwrap_err();
        let stmts = parse(sql).unwrap();
        let Stmt::Insert {
            source: InsertSource::Rows(rows),
            ..
        } = &stmts[0]
        else {
            panic!("{stmts:?}")
        };
        let e = rows.iter().find_map(Result::err).unwrap();
        assert_eq!((e.code, &e.message), (whole.code, &whole.message));
        assert!(whole.message.contains("Line: 2"), "{whole}");
        // With another statement the rows are checked at parse: the same error.
        assert_eq!(parse(&format!("{sql}; select 1")).unwrap_err(), whole);
    }

    /// Fragments of random texts: every lexical form the scanner knows, whole and
    /// cut in pieces.
    const PIECES: &[&str] = &[
        "(",
        ")",
        ",",
        ";",
        " ",
        "\n",
        "\r",
        "\t",
        "'",
        "''",
        "\"",
        "e'",
        "E'",
        "x'",
        "b'",
        "n'",
        "u&'",
        "\\",
        "\\'",
        "$$",
        "$a$",
        "$1",
        "$",
        "--",
        "/*",
        "*/",
        "-",
        "+",
        "*",
        "/",
        "<",
        ">",
        "=",
        "!",
        "@",
        "#",
        "%",
        "^",
        "&",
        "|",
        "?",
        "`",
        "a",
        "values",
        "insert",
        "e",
        "x",
        "1",
        "1.5",
        "1e5",
        "1e",
        ".",
        "_",
        "é",
        "abc$",
        ":",
        "::",
        "[",
        "]",
        "'a,b)'",
        "E'\\'x'",
        "$$ ) $$",
        "$q$ ; $q$",
        "\"x(\"",
        "/* ( */",
        "-- ,\n",
        "'('",
        "( 1 , 2 )",
        "'it''s'",
        "~",
        "{",
        "}",
        "0",
        "L",
        "\u{2003}",
        "N",
        "B",
    ];

    /// Where the scanner saw `(`, `)`, `,` and `;` (`None`: unsure).
    fn scanner_marks(text: &str) -> Option<Vec<(usize, char)>> {
        let mut lx = Lexer::new(text, 0);
        let mut out = Vec::new();
        while let Some(r) = lx.next() {
            let (lex, at) = r.ok()?;
            let c = match lex {
                Lex::Open => '(',
                Lex::Close => ')',
                Lex::Comma => ',',
                Lex::Semi => ';',
                _ => continue,
            };
            out.push((at, c));
        }
        Some(out)
    }

    /// Where sqlparser's tokens `(`, `)`, `,` and `;` are (`None`: it fails).
    fn tokenizer_marks(text: &str) -> Option<Vec<(usize, char)>> {
        let toks = Tokenizer::new(&PostgreSqlDialect {}, text)
            .tokenize_with_location()
            .ok()?;
        let line_starts: Vec<usize> = std::iter::once(0)
            .chain(text.match_indices('\n').map(|(i, _)| i + 1))
            .collect();
        let offset = |line: u64, col: u64| {
            let start = line_starts[line as usize - 1];
            start
                + text[start..]
                    .chars()
                    .take(col as usize - 1)
                    .map(char::len_utf8)
                    .sum::<usize>()
        };
        let mut out = Vec::new();
        for t in toks {
            let c = match t.token {
                Token::LParen => '(',
                Token::RParen => ')',
                Token::Comma => ',',
                Token::SemiColon => ';',
                _ => continue,
            };
            out.push((offset(t.span.start.line, t.span.start.column), c));
        }
        Some(out)
    }

    /// A row expression for random INSERTs, good and bad.
    const EXPRS: &[&str] = &[
        "1",
        "-2",
        "'a,b)'",
        "E'it\\'s'",
        "$$x);$$",
        "(1+2)*3",
        "null",
        "'x' || 'y'",
        "/* c, ) */ 3",
        "1 -- c\n",
        "abs(-1)",
        "1 +",
        "",
        "(1",
        "true and false",
        "CAST('1' AS int)",
        "DEFAULT",
        "'a'::text",
        "$1",
        "\"q\"",
        "((((7))))",
    ];

    /// What a parse means, rows kept as text read out: statements or the error.
    fn meaning(r: SqlResult<Vec<Stmt>>) -> Result<String, (String, String)> {
        let err = |e: SqlError| (e.code.to_string(), e.into_data().message);
        let mut out = Vec::new();
        for st in r.map_err(err)? {
            let st = match st {
                Stmt::Insert {
                    table,
                    columns,
                    source: InsertSource::Rows(rows),
                    returning,
                    on_conflict,
                } => Stmt::Insert {
                    table,
                    columns,
                    source: InsertSource::Values(
                        rows.iter().collect::<SqlResult<_>>().map_err(err)?,
                    ),
                    returning,
                    on_conflict,
                },
                st => st,
            };
            out.push(format!("{st:?}"));
        }
        Ok(out.join("\n"))
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(
            std::env::var("STRATA_SCAN_CASES").ok().and_then(|v| v.parse().ok()).unwrap_or(3000)
        ))]

        /// Rule 1: where the scanner is sure, its `(`, `)`, `,` and `;` are
        /// sqlparser's.
        #[test]
        fn the_scanner_finds_the_tokenizers_split_points(
            pieces in proptest::collection::vec(0..PIECES.len(), 0..30)
        ) {
            let text: String = pieces.iter().map(|i| PIECES[*i]).collect();
            if let (Some(mine), Some(theirs)) = (scanner_marks(&text), tokenizer_marks(&text)) {
                prop_assert_eq!(mine, theirs, "{:?}", text);
            }
        }
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(400))]

        /// Rules 3 and 4: an INSERT whose rows are parsed one at a time means what
        /// it means tokenized whole, errors included, alone or among statements.
        #[test]
        fn rows_parsed_one_at_a_time_mean_what_the_whole_text_means(
            rows in proptest::collection::vec(
                proptest::collection::vec(0..EXPRS.len(), 1..3), 1..5),
            cols in proptest::bool::ANY,
            after in 0..4usize,
        ) {
            let mut sql = String::from(if cols { "insert into t (a, b) values " } else { "INSERT INTO t VALUES" });
            for (k, r) in rows.iter().enumerate() {
                if k > 0 {
                    sql.push_str(", ");
                }
                let exprs: Vec<&str> = r.iter().map(|i| EXPRS[*i]).collect();
                sql.push_str(&format!("({})", exprs.join(", ")));
            }
            sql.push_str(["", "; select 1", ";; -- x", "; insert into u values (1), (2 +)"][after]);
            prop_assert_eq!(meaning(parse_shared(std::sync::Arc::new(sql.clone()))), meaning(parse_tokens(&sql, true)), "{}", sql);
        }
    }
}
