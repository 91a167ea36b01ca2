//! The YT QL parser: a recursive-descent parser over [`lexer`](crate::lexer) tokens that
//! follows YT's grammar and operator precedence (reference §2–§3).
//!
//! YT QL is not SQL: `[..]` quotes paths, `OFFSET` must precede `LIMIT`, `BETWEEN` has a
//! multi-range form, there are no comments and no `;`. A hand-written parser states that
//! grammar directly and reports every error with its byte position.

use crate::ast::*;
use crate::error::{Error, Result, Span};
use crate::lexer::{Keyword, Spanned, Token};

mod expr;
mod query;

/// The largest LIMIT YT accepts.
pub const MAX_LIMIT: i64 = i64::MAX - 2;

/// The hint for SQL's `count(*)` and `count(x)`: YT QL has no count; YT users count rows
/// with `sum(1)`.
pub const COUNT_HINT: &str =
    "YT QL has no count(): count rows with sum(1), e.g. `sum(1) AS cnt FROM [//t] GROUP BY 1`";

/// Parses a whole query from (placeholder-expanded) tokens.
pub fn parse_query(tokens: &[Spanned]) -> Result<Query> {
    let mut p = Parser {
        tokens,
        pos: 0,
        depth: 0,
    };
    let q = p.query()?;
    p.expect_eof()?;
    Ok(q)
}

/// Parses a standalone expression (computed column definitions).
pub fn parse_expression(tokens: &[Spanned]) -> Result<Expr> {
    let mut p = Parser {
        tokens,
        pos: 0,
        depth: 0,
    };
    let e = p.expr()?;
    p.expect_eof()?;
    Ok(e)
}

struct Parser<'a> {
    tokens: &'a [Spanned],
    pos: usize,
    /// Current recursion depth, capped so that hostile input cannot overflow the stack.
    depth: usize,
}

/// The deepest nesting of parentheses and prefix operators the parser accepts.
pub const MAX_PARSE_DEPTH: usize = 64;

/// The longest chain of one binary operator (`a + b + ...`); each link deepens the tree.
pub const MAX_CHAIN: usize = 1000;

fn describe(t: &Token) -> String {
    match t {
        Token::Keyword(k) => format!("keyword {}", format!("{k:?}").to_uppercase()),
        Token::Ident(s) => format!("identifier {s:?}"),
        Token::QuotedIdent(s) => format!("quoted identifier [{s}]"),
        Token::Str(_) => "string literal".into(),
        Token::Int(v) => format!("integer {v}"),
        Token::Uint(v) => format!("integer {v}u"),
        Token::Double(v) => format!("number {v}"),
        Token::Placeholder(n) => format!("placeholder {{{n}}}"),
        Token::Punct(p) => format!("{p:?}"),
        Token::Eof => "end of query".into(),
    }
}

impl<'a> Parser<'a> {
    fn peek(&self) -> &'a Token {
        &self.tokens[self.pos.min(self.tokens.len() - 1)].token
    }

    fn peek_at(&self, ahead: usize) -> &'a Token {
        &self.tokens[(self.pos + ahead).min(self.tokens.len() - 1)].token
    }

    fn span(&self) -> Span {
        self.tokens[self.pos.min(self.tokens.len() - 1)].span
    }

    fn prev_span(&self) -> Span {
        self.tokens[self.pos.saturating_sub(1)].span
    }

    fn advance(&mut self) -> &'a Spanned {
        let t = &self.tokens[self.pos.min(self.tokens.len() - 1)];
        if self.pos < self.tokens.len() - 1 {
            self.pos += 1;
        }
        t
    }

    fn error<T>(&self, what: &str) -> Result<T> {
        Err(Error::grammar(
            format_args!("unexpected {}, expected {what}", describe(self.peek())),
            self.span(),
        ))
    }

    fn is_kw(&self, k: Keyword) -> bool {
        *self.peek() == Token::Keyword(k)
    }

    fn eat_kw(&mut self, k: Keyword) -> bool {
        if self.is_kw(k) {
            self.advance();
            true
        } else {
            false
        }
    }

    fn expect_kw(&mut self, k: Keyword, what: &str) -> Result<()> {
        if self.eat_kw(k) {
            Ok(())
        } else {
            self.error(what)
        }
    }

    fn is_punct(&self, p: &str) -> bool {
        matches!(self.peek(), Token::Punct(q) if *q == p)
    }

    fn eat_punct(&mut self, p: &str) -> bool {
        if self.is_punct(p) {
            self.advance();
            true
        } else {
            false
        }
    }

    fn expect_punct(&mut self, p: &str) -> Result<()> {
        if self.eat_punct(p) {
            Ok(())
        } else {
            self.error(&format!("{p:?}"))
        }
    }

    fn expect_eof(&mut self) -> Result<()> {
        if *self.peek() == Token::Eof {
            Ok(())
        } else {
            self.error("end of query")
        }
    }

    fn identifier(&mut self, what: &str) -> Result<(String, Span)> {
        match self.peek() {
            Token::Ident(s) | Token::QuotedIdent(s) => {
                let span = self.advance().span;
                Ok((s.clone(), span))
            }
            _ => self.error(what),
        }
    }
}

#[cfg(test)]
mod tests;
