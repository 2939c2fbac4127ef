//! SQL's prepared statements: `PREPARE name [(type, ...)] AS statement`,
//! `EXECUTE name [(value, ...)]`, `DEALLOCATE [PREPARE] name | ALL`, as parsed;
//! the session keeps and runs them (session plancache rules 8-10).
//!
//! Rules (cited as "prepare rule N"):
//! 1. The statement prepared is a query (SELECT, VALUES, TABLE, WITH), INSERT,
//!    UPDATE or DELETE, as PostgreSQL's grammar allows; anything else is a syntax
//!    error at its first word.
//! 2. The declared types are the first parameters' types; the others are inferred
//!    from their use, as PostgreSQL's.
//! 3. `statement` (pg_prepared_statements) is the whole query string that held
//!    the PREPARE, as PostgreSQL keeps it.

use crate::{SqlError, SqlResult, SqlType, Stmt, Toks};
use sqlparser::ast;
use sqlparser::dialect::PostgreSqlDialect;
use sqlparser::parser::Parser;
use sqlparser::tokenizer::{Token, TokenWithSpan};

/// PREPARE, EXECUTE and DEALLOCATE.
#[derive(Clone, Debug)]
pub enum PreparedStmt {
    Prepare(Box<Prepare>),
    Execute {
        name: String,
        args: Vec<ast::Expr>,
    },
    /// A name, or ALL (None).
    Deallocate(Option<String>),
    /// EXPLAIN [(options)] EXECUTE name [(args)].
    Explain {
        name: String,
        args: Vec<ast::Expr>,
        options: crate::explain::Options,
    },
}

/// `PREPARE name [(types)] AS stmt`.
#[derive(Clone, Debug)]
pub struct Prepare {
    pub name: String,
    pub types: Vec<SqlType>,
    pub stmt: Stmt,
    /// Rule 3 (set once the whole text is parsed).
    pub text: String,
}

impl PreparedStmt {
    pub fn verb(&self) -> &'static str {
        match self {
            PreparedStmt::Prepare(_) => "PREPARE",
            PreparedStmt::Execute { .. } => "EXECUTE",
            PreparedStmt::Deallocate(_) => "DEALLOCATE",
            PreparedStmt::Explain { .. } => "EXPLAIN",
        }
    }
}

/// The words that may follow `AS` (rule 1).
const PREPARABLE: [&str; 7] = [
    "SELECT", "VALUES", "TABLE", "WITH", "INSERT", "UPDATE", "DELETE",
];

/// `PREPARE ...`, its first word consumed; `inner` parses the statement.
pub(crate) fn parse_prepare(
    k: &mut Toks,
    inner: impl FnOnce(Vec<TokenWithSpan>) -> SqlResult<Stmt>,
) -> SqlResult<Stmt> {
    let name = k.ident()?;
    let mut types = Vec::new();
    if k.peek() == Some(&Token::LParen) {
        let mut p = parser(paren_contents(k)?);
        loop {
            types.push(SqlType::from_ast(&p.parse_data_type().map_err(syntax)?)?);
            if !p.consume_token(&Token::Comma) {
                break;
            }
        }
        if p.peek_token().token != Token::EOF {
            return Err(SqlError::syntax(format!(
                "syntax error at or near \"{}\"",
                p.peek_token().token
            )));
        }
    }
    k.expect_word("AS")?;
    let first = k.peek_word(0).unwrap_or_default();
    if !PREPARABLE.contains(&first.as_str()) {
        return Err(k.near());
    }
    let stmt = inner(k.rest())?;
    Ok(Stmt::Prepared(PreparedStmt::Prepare(Box::new(Prepare {
        name,
        types,
        stmt,
        text: String::new(),
    }))))
}

/// `EXECUTE name [(expr, ...)]`, its first word consumed.
pub(crate) fn parse_execute(k: &mut Toks) -> SqlResult<Stmt> {
    let name = k.ident()?;
    let mut args = Vec::new();
    if k.peek() == Some(&Token::LParen) {
        let mut p = parser(paren_contents(k)?);
        args = p
            .parse_comma_separated(Parser::parse_expr)
            .map_err(syntax)?;
        if p.peek_token().token != Token::EOF {
            return Err(SqlError::syntax(format!(
                "syntax error at or near \"{}\"",
                p.peek_token().token
            )));
        }
    }
    if !k.at_end() {
        return Err(k.near());
    }
    Ok(Stmt::Prepared(PreparedStmt::Execute { name, args }))
}

/// `DEALLOCATE [PREPARE] name | ALL`, its first word consumed.
pub(crate) fn parse_deallocate(k: &mut Toks) -> SqlResult<Stmt> {
    k.word("PREPARE");
    let name = match k.word("ALL") {
        true => None,
        false => Some(k.ident()?),
    };
    k.end()?;
    Ok(Stmt::Prepared(PreparedStmt::Deallocate(name)))
}

/// The tokens between a `(` at the cursor and its matching `)`, both consumed.
fn paren_contents(k: &mut Toks) -> SqlResult<Vec<TokenWithSpan>> {
    let all = k.rest();
    let mut depth = 0usize;
    for (i, t) in all.iter().enumerate() {
        match t.token {
            Token::LParen => depth += 1,
            Token::RParen => {
                depth -= 1;
                if depth == 0 {
                    let inner = all[1..i].to_vec();
                    k.i += i + 1;
                    return Ok(inner);
                }
            }
            _ => {}
        }
    }
    Err(SqlError::syntax("syntax error at end of input"))
}

fn parser(tokens: Vec<TokenWithSpan>) -> Parser<'static> {
    Parser::new(&PostgreSqlDialect {})
        .with_recursion_limit(crate::PARSER_RECURSION_LIMIT)
        .with_tokens_with_locations(tokens)
}

fn syntax(e: sqlparser::parser::ParserError) -> SqlError {
    SqlError::syntax(e.to_string())
}
