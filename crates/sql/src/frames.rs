//! Window frame clauses sqlparser does not parse, rewritten in the token stream
//! before it parses: `EXCLUDE CURRENT ROW | GROUP | TIES | NO OTHERS`, and frame
//! offsets that begin with a string literal (`'1 year'::interval PRECEDING`).
//!
//! Entry points: [`rewrite`] (the tokens of one statement), [`exclusion`] (a bound
//! window spec's exclusion).
//!
//! Rules (cited as "frames rule N"):
//! 1. A frame is found where PostgreSQL's grammar has one: `ROWS`, `RANGE` or
//!    `GROUPS` directly inside the parentheses after `OVER` or `AS` (a WINDOW
//!    clause's definition), followed by `BETWEEN`, `UNBOUNDED`, `CURRENT` or an
//!    offset and `PRECEDING` / `FOLLOWING`. Anything else is left to sqlparser.
//! 2. An offset that begins with a string literal is parenthesized: sqlparser reads
//!    a literal there as MySQL's `INTERVAL` form and stops at `::`.
//! 3. An exclusion is cut from the tokens and carried in the window's name: the
//!    spec's base-window name becomes the quoted identifier
//!    `"\u{1}<mode>\u{1}<base name>"` (no base name: empty), which the binder
//!    takes apart ([`split_name`]) before it looks the base window up. The control
//!    character cannot come from an unquoted name, and one quoted with it is
//!    refused (42601) rather than misread.
//! 4. Statements without `PRECEDING`, `FOLLOWING` or `EXCLUDE` are not touched:
//!    one pass over the tokens.

use crate::{SqlError, SqlResult};
use sqlparser::ast;
use sqlparser::keywords::Keyword;
use sqlparser::tokenizer::{Span, Token, TokenWithSpan, Word};

/// A frame's EXCLUDE clause (PostgreSQL's frame exclusion).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Exclude {
    #[default]
    NoOthers,
    CurrentRow,
    Group,
    Ties,
}

const MARK: char = '\u{1}';

impl Exclude {
    fn code(self) -> &'static str {
        match self {
            Exclude::NoOthers => "no others",
            Exclude::CurrentRow => "current row",
            Exclude::Group => "group",
            Exclude::Ties => "ties",
        }
    }

    fn from_code(s: &str) -> Option<Exclude> {
        [
            Exclude::NoOthers,
            Exclude::CurrentRow,
            Exclude::Group,
            Exclude::Ties,
        ]
        .into_iter()
        .find(|e| e.code() == s)
    }
}

/// A window name as written, or the marker of rule 3 taken apart: the exclusion
/// and the base window's name (None if the spec names none). 42601 for a quoted
/// name that only looks like a marker.
pub fn split_name(name: &ast::Ident) -> SqlResult<(Exclude, Option<ast::Ident>)> {
    let Some(rest) = name.value.strip_prefix(MARK) else {
        return Ok((Exclude::NoOthers, Some(name.clone())));
    };
    let bad = || SqlError::syntax(format!("syntax error at or near \"{name}\""));
    let (code, base) = rest.split_once(MARK).ok_or_else(bad)?;
    let ex = Exclude::from_code(code).ok_or_else(bad)?;
    let base = (!base.is_empty()).then(|| ast::Ident::with_quote('"', base));
    Ok((ex, base))
}

/// The exclusion a resolved window spec carries (rule 3).
pub fn exclusion(spec: &ast::WindowSpec) -> SqlResult<Exclude> {
    match &spec.window_name {
        Some(n) => Ok(split_name(n)?.0),
        None => Ok(Exclude::NoOthers),
    }
}

fn kw(t: &TokenWithSpan) -> Keyword {
    match &t.token {
        Token::Word(w) if w.quote_style.is_none() => w.keyword,
        _ => Keyword::NoKeyword,
    }
}

fn token(t: Token) -> TokenWithSpan {
    TokenWithSpan::new(t, Span::empty())
}

/// Rewrites the frames of one statement's tokens (see the module rules).
pub fn rewrite(tokens: Vec<TokenWithSpan>) -> Vec<TokenWithSpan> {
    let wanted = [Keyword::PRECEDING, Keyword::FOLLOWING, Keyword::EXCLUDE];
    if !tokens.iter().any(|t| wanted.contains(&kw(t))) {
        return tokens;
    }
    let mut edits = Edits::default();
    // Per open parenthesis: whether it opens a window spec (rule 1).
    let mut stack: Vec<(usize, bool)> = Vec::new();
    for i in 0..tokens.len() {
        match tokens[i].token {
            Token::LParen => {
                let prev = i.checked_sub(1).map(|p| kw(&tokens[p]));
                stack.push((i, matches!(prev, Some(Keyword::OVER | Keyword::AS))));
            }
            Token::RParen => {
                stack.pop();
            }
            _ => {
                if let Some(&(open, true)) = stack.last() {
                    if matches!(
                        kw(&tokens[i]),
                        Keyword::ROWS | Keyword::RANGE | Keyword::GROUPS
                    ) {
                        frame(&tokens, open, i, &mut edits);
                    }
                }
            }
        }
    }
    edits.apply(tokens)
}

/// The edits of [`rewrite`]: tokens inserted before a position, replaced, or cut.
#[derive(Default)]
struct Edits {
    before: Vec<(usize, Token)>,
    replace: Vec<(usize, Token)>,
    cut: Vec<std::ops::Range<usize>>,
}

impl Edits {
    fn apply(mut self, tokens: Vec<TokenWithSpan>) -> Vec<TokenWithSpan> {
        if self.before.is_empty() && self.replace.is_empty() && self.cut.is_empty() {
            return tokens;
        }
        self.before.sort_by_key(|(i, _)| *i);
        let mut out = Vec::with_capacity(tokens.len() + self.before.len());
        let mut ins = self.before.into_iter().peekable();
        for (i, t) in tokens.into_iter().enumerate() {
            while let Some((_, x)) = ins.next_if(|(at, _)| *at == i) {
                out.push(token(x));
            }
            if self.cut.iter().any(|r| r.contains(&i)) {
                continue;
            }
            match self.replace.iter().position(|(at, _)| *at == i) {
                Some(k) => out.push(token(self.replace.swap_remove(k).1)),
                None => out.push(t),
            }
        }
        out.extend(ins.map(|(_, x)| token(x)));
        out
    }
}

/// One frame starting at `units` inside the spec opened at `open` (rules 1-3).
fn frame(t: &[TokenWithSpan], open: usize, units: usize, edits: &mut Edits) {
    let mut i = units + 1;
    let between = kw_at(t, i) == Keyword::BETWEEN;
    if between {
        i += 1;
    }
    let Some(end) = bound(t, i, edits) else {
        return;
    };
    i = end;
    if between {
        if kw_at(t, i) != Keyword::AND {
            return;
        }
        let Some(end) = bound(t, i + 1, edits) else {
            return;
        };
        i = end;
    }
    if kw_at(t, i) != Keyword::EXCLUDE {
        return;
    }
    let (ex, len) = match (kw_at(t, i + 1), kw_at(t, i + 2)) {
        (Keyword::CURRENT, Keyword::ROW) => (Exclude::CurrentRow, 3),
        (Keyword::GROUP, _) => (Exclude::Group, 2),
        (Keyword::TIES, _) => (Exclude::Ties, 2),
        (Keyword::NO, _) if word_at(t, i + 2).eq_ignore_ascii_case("others") => {
            (Exclude::NoOthers, 3)
        }
        _ => return,
    };
    edits.cut.push(i..i + len);
    let name = match t.get(open + 1).map(|x| &x.token) {
        Some(Token::Word(w)) if w.keyword == Keyword::NoKeyword || w.quote_style.is_some() => {
            let base = match w.quote_style {
                Some(_) => w.value.clone(),
                None => w.value.to_lowercase(),
            };
            edits.cut.push(open + 1..open + 2);
            base
        }
        _ => String::new(),
    };
    let marker = Token::Word(Word {
        value: format!("{MARK}{}{MARK}{name}", ex.code()),
        quote_style: Some('"'),
        keyword: Keyword::NoKeyword,
    });
    edits.before.push((open + 1, marker));
}

/// The unquoted word at `i` ("" if none).
fn word_at(t: &[TokenWithSpan], i: usize) -> &str {
    match t.get(i).map(|x| &x.token) {
        Some(Token::Word(w)) if w.quote_style.is_none() => &w.value,
        _ => "",
    }
}

fn kw_at(t: &[TokenWithSpan], i: usize) -> Keyword {
    t.get(i).map_or(Keyword::NoKeyword, kw)
}

/// One frame bound at `i`; the position after it, None if it is not one. An
/// offset beginning with a string literal is parenthesized (rule 2).
fn bound(t: &[TokenWithSpan], i: usize, edits: &mut Edits) -> Option<usize> {
    match (kw_at(t, i), kw_at(t, i + 1)) {
        (Keyword::UNBOUNDED, Keyword::PRECEDING | Keyword::FOLLOWING) => return Some(i + 2),
        (Keyword::CURRENT, Keyword::ROW) => return Some(i + 2),
        _ => {}
    }
    let mut depth = 0usize;
    for (j, x) in t.iter().enumerate().skip(i) {
        match x.token {
            Token::LParen => depth += 1,
            Token::RParen if depth == 0 => return None,
            Token::RParen => depth -= 1,
            _ if depth == 0 && matches!(kw(x), Keyword::PRECEDING | Keyword::FOLLOWING) => {
                if j > i && matches!(t[i].token, Token::SingleQuotedString(_)) {
                    edits.before.push((i, Token::LParen));
                    edits.before.push((j, Token::RParen));
                }
                return Some(j + 1);
            }
            _ if depth == 0 && kw(x) == Keyword::AND && j > i => return None,
            _ => {}
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;
    use sqlparser::dialect::PostgreSqlDialect;
    use sqlparser::tokenizer::Tokenizer;

    /// The statement's tokens rewritten, printed back.
    fn rewritten(sql: &str) -> String {
        let mut toks = Tokenizer::new(&PostgreSqlDialect {}, sql)
            .tokenize_with_location()
            .unwrap();
        toks.retain(|t| !matches!(t.token, Token::Whitespace(_)));
        rewrite(toks)
            .iter()
            .map(|t| t.token.to_string())
            .collect::<Vec<_>>()
            .join(" ")
    }

    #[test]
    fn exclusions_move_into_the_window_name() {
        let s = rewritten("select sum(x) over (order by y rows 1 preceding exclude ties) from t");
        assert_eq!(
            s,
            "select sum ( x ) over ( \"\u{1}ties\u{1}\" order by y rows 1 preceding ) from t"
        );
        let s = rewritten(
            "select f() over (W rows between current row and unbounded following exclude current row) from t window W as (order by y)",
        );
        assert!(
            s.contains("over ( \"\u{1}current row\u{1}w\" rows between"),
            "{s}"
        );
        let s =
            rewritten("select 1 from t window w as (groups unbounded preceding exclude no others)");
        assert!(
            s.contains("as ( \"\u{1}no others\u{1}\" groups unbounded preceding )"),
            "{s}"
        );
        let (ex, base) = split_name(&ast::Ident::with_quote('"', "\u{1}group\u{1}w")).unwrap();
        assert_eq!((ex, base.unwrap().value.as_str()), (Exclude::Group, "w"));
        assert!(split_name(&ast::Ident::with_quote('"', "\u{1}most\u{1}")).is_err());
    }

    #[test]
    fn string_offsets_are_parenthesized_and_the_rest_left_alone() {
        let s = rewritten(
            "select sum(x) over (order by d range between '1 year'::interval preceding and '2 days'::interval following) from t",
        );
        assert!(
            s.contains(
                "between ( '1 year' :: interval ) preceding and ( '2 days' :: interval ) following"
            ),
            "{s}"
        );
        for sql in [
            "select a from t order by a offset 5 rows fetch first 3 rows only",
            "with x as (select 1) select * from x",
            "select exclude from t",
        ] {
            let plain = rewritten(sql);
            assert!(
                !plain.contains('\u{1}') && !plain.contains("( '"),
                "{plain}"
            );
        }
    }
}
