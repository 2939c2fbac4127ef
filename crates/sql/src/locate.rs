//! Positions of the names an INSERT, UPDATE or DELETE resolves only when it runs:
//! its target relation and the columns it names. The parsed statement keeps these
//! as names, so an error about one ("relation ... does not exist", "column ... of
//! relation ... does not exist") is placed by reading the statement's tokens, as
//! PostgreSQL places it at the name.
//!
//! Rules (cited as "locate rule N"):
//! 1. Only a query string of one statement is read (a statement's own range in a
//!    longer string is not kept), and only an error without a position.
//! 2. The statement's verb is its first INSERT, UPDATE or DELETE outside
//!    parentheses (a WITH before it is stepped over). Its target is the name after
//!    INTO (INSERT), the verb (UPDATE) or FROM (DELETE), ONLY skipped.
//! 3. A column of the target is looked for in INSERT's column list (the
//!    parentheses right after the target) or after UPDATE's SET; the first token
//!    that spells the name (bare names fold to lower case) is the place.

use crate::SqlError;
use sqlparser::dialect::PostgreSqlDialect;
use sqlparser::keywords::Keyword;
use sqlparser::tokenizer::{Token, TokenWithSpan, Tokenizer};

/// `e` placed at the name it is about in `text` (a one-statement query string),
/// when it is one of the errors this module places and has no position yet.
pub(crate) fn dml_name(text: &str, e: SqlError) -> SqlError {
    if e.location.is_some() {
        return e;
    }
    let (relation, column) = match e.code {
        "42P01" => (quoted_name(&e.message, "relation \""), None),
        "42703" if e.message.contains("\" of relation \"") => {
            (None, quoted_name(&e.message, "column \""))
        }
        _ => return e,
    };
    let Ok(tokens) = Tokenizer::new(&PostgreSqlDialect {}, text).tokenize_with_location() else {
        return e;
    };
    let toks: Vec<&TokenWithSpan> = tokens
        .iter()
        .filter(|t| !matches!(t.token, Token::Whitespace(_)))
        .collect();
    let found = match (relation, column) {
        (Some(r), _) => target(&toks).filter(|&i| spells(toks[i], &r)),
        (None, Some(c)) => column_at(&toks, &c),
        _ => None,
    };
    match found {
        Some(i) => e.at(toks[i].span),
        None => e,
    }
}

/// The name between `prefix` and the next `"` of a message.
fn quoted_name(message: &str, prefix: &str) -> Option<String> {
    let rest = message.strip_prefix(prefix)?;
    Some(rest[..rest.find('"')?].to_string())
}

/// Locate rule 2: the verb's index and which it is.
fn verb(toks: &[&TokenWithSpan]) -> Option<(usize, Keyword)> {
    let mut depth = 0i32;
    for (i, t) in toks.iter().enumerate() {
        match &t.token {
            Token::LParen => depth += 1,
            Token::RParen => depth -= 1,
            Token::Word(w)
                if depth == 0
                    && matches!(
                        w.keyword,
                        Keyword::INSERT | Keyword::UPDATE | Keyword::DELETE
                    ) =>
            {
                return Some((i, w.keyword));
            }
            _ => {}
        }
    }
    None
}

/// Locate rule 2: the index of the target's (first) name token.
fn target(toks: &[&TokenWithSpan]) -> Option<usize> {
    let (v, kw) = verb(toks)?;
    let mut i = v + 1;
    if kw != Keyword::UPDATE {
        // INTO (INSERT) or FROM (DELETE).
        i += 1;
    }
    if matches!(&toks.get(i)?.token, Token::Word(w) if w.keyword == Keyword::ONLY) {
        i += 1;
    }
    matches!(toks.get(i)?.token, Token::Word(_)).then_some(i)
}

/// Locate rule 3.
fn column_at(toks: &[&TokenWithSpan], name: &str) -> Option<usize> {
    let (_, kw) = verb(toks)?;
    let t = target(toks)?;
    // Past a qualified target's dots, and its alias.
    let mut i = t + 1;
    while matches!(toks.get(i).map(|t| &t.token), Some(Token::Period)) {
        i += 2;
    }
    let from = match kw {
        Keyword::INSERT => toks[i..]
            .iter()
            .position(|t| matches!(t.token, Token::LParen))
            .filter(|&p| p <= 2)
            .map(|p| i + p)?,
        Keyword::UPDATE => {
            i + toks[i..]
                .iter()
                .position(|t| matches!(&t.token, Token::Word(w) if w.keyword == Keyword::SET))?
        }
        _ => return None,
    };
    (from..toks.len()).find(|&k| spells(toks[k], name))
}

/// Whether a token is a name that reads as `name` (a bare word folded).
fn spells(t: &TokenWithSpan, name: &str) -> bool {
    match &t.token {
        Token::Word(w) if w.quote_style.is_some() => w.value == name,
        Token::Word(w) => w.value.to_lowercase() == name,
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(text: &str, code: &'static str, msg: &str) -> Option<u32> {
        dml_name(text, SqlError::new(code, msg))
            .placed(text)
            .position
    }

    #[test]
    fn targets_and_their_columns_are_placed_at_their_names() {
        let rel = "relation \"nosuch\" does not exist";
        assert_eq!(at("insert into nosuch values (1)", "42P01", rel), Some(13));
        assert_eq!(at("UPDATE ONLY nosuch SET a = 1", "42P01", rel), Some(13));
        assert_eq!(at("delete from nosuch", "42P01", rel), Some(13));
        let with = "WITH w AS (SELECT 42) INSERT INTO nosuch VALUES (1)";
        assert_eq!(at(with, "42P01", rel), Some(35));
        let col = "column \"a\" of relation \"t\" does not exist";
        assert_eq!(
            at("insert into t (b, a) values (1, 2)", "42703", col),
            Some(19)
        );
        assert_eq!(at("update t set a = 3", "42703", col), Some(14));
        let quoted = "column \"A b\" of relation \"t\" does not exist";
        assert_eq!(
            at("insert into t (\"A b\") values (1)", "42703", quoted),
            Some(16)
        );
        // A name the statement does not spell there, or another error: unplaced.
        assert_eq!(at("insert into other values (1)", "42P01", rel), None);
        assert_eq!(at("select 1", "42P01", rel), None);
        assert_eq!(at("insert into t values (1)", "23505", rel), None);
    }
}
