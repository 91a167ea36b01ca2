//! The YT QL lexer: bytes to tokens with their spans.
//!
//! YT QL has no comments and no statement terminator; `[...]` quotes identifiers (nesting
//! brackets balance), `` `...` `` quotes with C escapes, `#` is null, `%true`/`%false` are
//! booleans, `123u` is a uint64 literal and `{name}` a placeholder.

use crate::error::{Error, Result, Span};

/// A keyword (case-insensitive in the text).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Keyword {
    Select,
    From,
    Where,
    Having,
    Offset,
    Limit,
    Join,
    Array,
    Using,
    Left,
    As,
    On,
    And,
    Or,
    Not,
    Is,
    Null,
    Between,
    In,
    Transform,
    Like,
    Ilike,
    Rlike,
    Regexp,
    Escape,
    True,
    False,
    Case,
    When,
    Then,
    Else,
    End,
    Asc,
    Desc,
    Inf,
    GroupBy,
    OrderBy,
    WithTotals,
    WithIndex,
}

impl Keyword {
    fn from_word(w: &str) -> Option<Keyword> {
        Some(match w.to_ascii_lowercase().as_str() {
            "select" => Keyword::Select,
            "from" => Keyword::From,
            "where" => Keyword::Where,
            "having" => Keyword::Having,
            "offset" => Keyword::Offset,
            "limit" => Keyword::Limit,
            "join" => Keyword::Join,
            "array" => Keyword::Array,
            "using" => Keyword::Using,
            "left" => Keyword::Left,
            "as" => Keyword::As,
            "on" => Keyword::On,
            "and" => Keyword::And,
            "or" => Keyword::Or,
            "not" => Keyword::Not,
            "is" => Keyword::Is,
            "null" => Keyword::Null,
            "between" => Keyword::Between,
            "in" => Keyword::In,
            "transform" => Keyword::Transform,
            "like" => Keyword::Like,
            "ilike" => Keyword::Ilike,
            "rlike" => Keyword::Rlike,
            "regexp" => Keyword::Regexp,
            "escape" => Keyword::Escape,
            "true" => Keyword::True,
            "false" => Keyword::False,
            "case" => Keyword::Case,
            "when" => Keyword::When,
            "then" => Keyword::Then,
            "else" => Keyword::Else,
            "end" => Keyword::End,
            "asc" => Keyword::Asc,
            "desc" => Keyword::Desc,
            "inf" => Keyword::Inf,
            _ => return None,
        })
    }
}

/// One token.
#[derive(Debug, Clone, PartialEq)]
pub enum Token {
    Keyword(Keyword),
    /// A bare identifier.
    Ident(String),
    /// A `[...]` or `` `...` `` quoted identifier or table path.
    QuotedIdent(String),
    /// A string literal (bytes, escapes decoded).
    Str(Vec<u8>),
    /// An unsuffixed integer literal (read as unsigned 64-bit).
    Int(u64),
    /// A `u`-suffixed integer literal.
    Uint(u64),
    Double(f64),
    /// `{name}`.
    Placeholder(String),
    /// Punctuation and operators: `( ) , . * + - / % | & ~ # < > = <= >= != <> << >> ||`.
    Punct(&'static str),
    Eof,
}

/// A token with its span in the query text.
#[derive(Debug, Clone, PartialEq)]
pub struct Spanned {
    pub token: Token,
    pub span: Span,
}

/// Splits query text into tokens; the last token is [`Token::Eof`].
///
/// # Errors
/// [`Error::Syntax`] at the offending byte.
pub fn tokenize(text: &str) -> Result<Vec<Spanned>> {
    Lexer {
        bytes: text.as_bytes(),
        pos: 0,
    }
    .run()
}

struct Lexer<'a> {
    bytes: &'a [u8],
    pos: usize,
}

const PUNCT: &[&str] = &[
    "<=", ">=", "!=", "<>", "<<", ">>", "||", "(", ")", ",", ".", "*", "+", "-", "/", "%", "|",
    "&", "~", "<", ">", "=",
];

impl<'a> Lexer<'a> {
    fn peek(&self, ahead: usize) -> Option<u8> {
        self.bytes.get(self.pos + ahead).copied()
    }

    fn run(mut self) -> Result<Vec<Spanned>> {
        let mut out = Vec::new();
        loop {
            while self.peek(0).is_some_and(|c| c.is_ascii_whitespace()) {
                self.pos += 1;
            }
            let start = self.pos;
            let Some(c) = self.peek(0) else {
                out.push(Spanned {
                    token: Token::Eof,
                    span: Span::new(start, start),
                });
                return Ok(out);
            };
            let token = match c {
                b'[' => Token::QuotedIdent(self.bracketed()?),
                b'`' => Token::QuotedIdent(self.backquoted()?),
                b'\'' | b'"' => Token::Str(self.string(c)?),
                b'{' => self.placeholder()?,
                b'#' => {
                    self.pos += 1;
                    Token::Keyword(Keyword::Null)
                }
                b'%' if self.peek(1).is_some_and(|c| c.is_ascii_alphabetic()) => {
                    let word = self.word_at(self.pos + 1);
                    match word.to_ascii_lowercase().as_str() {
                        "true" => {
                            self.pos += 1 + word.len();
                            Token::Keyword(Keyword::True)
                        }
                        "false" => {
                            self.pos += 1 + word.len();
                            Token::Keyword(Keyword::False)
                        }
                        _ => {
                            self.pos += 1;
                            Token::Punct("%")
                        }
                    }
                }
                b'0'..=b'9' => self.number()?,
                b'.' if self.peek(1).is_some_and(|c| c.is_ascii_digit()) => self.number()?,
                c if c.is_ascii_alphabetic() || c == b'_' => {
                    let word = self.word_at(self.pos);
                    self.pos += word.len();
                    self.word_token(word, start)
                }
                _ => {
                    let rest = &self.bytes[self.pos..];
                    match PUNCT.iter().find(|p| rest.starts_with(p.as_bytes())) {
                        Some(p) => {
                            self.pos += p.len();
                            Token::Punct(p)
                        }
                        None => {
                            let ch = std::str::from_utf8(&self.bytes[self.pos..])
                                .ok()
                                .and_then(|s| s.chars().next())
                                .unwrap_or(c as char);
                            return Err(Error::grammar(
                                format!("unexpected character {ch:?}"),
                                Span::new(start, start + 1),
                            ));
                        }
                    }
                }
            };
            out.push(Spanned {
                token,
                span: Span::new(start, self.pos),
            });
        }
    }

    fn word_at(&self, at: usize) -> &'a str {
        let mut end = at;
        while self
            .bytes
            .get(end)
            .is_some_and(|c| c.is_ascii_alphanumeric() || *c == b'_')
        {
            end += 1;
        }
        // The scanned bytes are ASCII, so this cannot fail.
        std::str::from_utf8(&self.bytes[at..end]).unwrap_or("")
    }

    /// Words, including the two-word keywords `GROUP BY`, `ORDER BY`, `WITH TOTALS|INDEX`.
    fn word_token(&mut self, word: &str, _start: usize) -> Token {
        let lower = word.to_ascii_lowercase();
        let second = |lexer: &mut Lexer, want: &str| -> bool {
            let mut p = lexer.pos;
            while lexer.bytes.get(p).is_some_and(|c| c.is_ascii_whitespace()) {
                p += 1;
            }
            let next = lexer.word_at(p);
            if next.eq_ignore_ascii_case(want) && p > lexer.pos {
                lexer.pos = p + next.len();
                true
            } else {
                false
            }
        };
        match lower.as_str() {
            "group" if second(self, "by") => return Token::Keyword(Keyword::GroupBy),
            "order" if second(self, "by") => return Token::Keyword(Keyword::OrderBy),
            "with" if second(self, "totals") => return Token::Keyword(Keyword::WithTotals),
            "with" if second(self, "index") => return Token::Keyword(Keyword::WithIndex),
            _ => {}
        }
        match Keyword::from_word(word) {
            Some(k) => Token::Keyword(k),
            None => Token::Ident(word.to_string()),
        }
    }

    fn bracketed(&mut self) -> Result<String> {
        let start = self.pos;
        let mut depth = 0usize;
        while let Some(c) = self.peek(0) {
            self.pos += 1;
            match c {
                b'[' => depth += 1,
                b']' => {
                    depth -= 1;
                    if depth == 0 {
                        let inner = &self.bytes[start + 1..self.pos - 1];
                        return String::from_utf8(inner.to_vec()).map_err(|_| {
                            Error::grammar(
                                "identifier is not valid UTF-8",
                                Span::new(start, self.pos),
                            )
                        });
                    }
                }
                _ => {}
            }
        }
        Err(Error::grammar(
            "unterminated [ identifier",
            Span::new(start, self.pos),
        ))
    }

    fn backquoted(&mut self) -> Result<String> {
        let start = self.pos;
        let bytes = self.quoted(b'`', start)?;
        String::from_utf8(bytes).map_err(|_| {
            Error::grammar("identifier is not valid UTF-8", Span::new(start, self.pos))
        })
    }

    fn string(&mut self, quote: u8) -> Result<Vec<u8>> {
        let start = self.pos;
        self.quoted(quote, start)
    }

    /// Reads a quoted run with C-style escapes; `self.pos` is at the opening quote.
    fn quoted(&mut self, quote: u8, start: usize) -> Result<Vec<u8>> {
        self.pos += 1;
        let mut out = Vec::new();
        loop {
            let Some(c) = self.peek(0) else {
                return Err(Error::grammar(
                    "unterminated quoted literal",
                    Span::new(start, self.pos),
                ));
            };
            self.pos += 1;
            if c == quote {
                return Ok(out);
            }
            if c != b'\\' {
                out.push(c);
                continue;
            }
            let Some(e) = self.peek(0) else {
                return Err(Error::grammar(
                    "unterminated escape",
                    Span::new(start, self.pos),
                ));
            };
            self.pos += 1;
            match e {
                b'n' => out.push(b'\n'),
                b't' => out.push(b'\t'),
                b'r' => out.push(b'\r'),
                b'a' => out.push(7),
                b'b' => out.push(8),
                b'f' => out.push(12),
                b'v' => out.push(11),
                b'0'..=b'7' => {
                    let mut v = (e - b'0') as u32;
                    for _ in 0..2 {
                        match self.peek(0) {
                            Some(d @ b'0'..=b'7') => {
                                v = v * 8 + (d - b'0') as u32;
                                self.pos += 1;
                            }
                            _ => break,
                        }
                    }
                    out.push((v & 0xff) as u8);
                }
                b'x' => {
                    let mut v = 0u32;
                    let mut n = 0;
                    while n < 2 {
                        match self.peek(0).and_then(|d| (d as char).to_digit(16)) {
                            Some(d) => {
                                v = v * 16 + d;
                                self.pos += 1;
                                n += 1;
                            }
                            None => break,
                        }
                    }
                    if n == 0 {
                        return Err(Error::grammar(
                            "\\x must be followed by hex digits",
                            Span::new(self.pos - 2, self.pos),
                        ));
                    }
                    out.push(v as u8);
                }
                other => out.push(other),
            }
        }
    }

    fn placeholder(&mut self) -> Result<Token> {
        let start = self.pos;
        let name = self.word_at(self.pos + 1);
        let close = self.pos + 1 + name.len();
        if name.is_empty()
            || name.as_bytes()[0].is_ascii_digit()
            || self.bytes.get(close) != Some(&b'}')
        {
            return Err(Error::grammar(
                "expected a placeholder {name}",
                Span::new(start, close.min(self.bytes.len())),
            ));
        }
        self.pos = close + 1;
        Ok(Token::Placeholder(name.to_string()))
    }

    fn number(&mut self) -> Result<Token> {
        let start = self.pos;
        while self.peek(0).is_some_and(|c| c.is_ascii_digit()) {
            self.pos += 1;
        }
        let mut is_double = false;
        if self.peek(0) == Some(b'.') {
            is_double = true;
            self.pos += 1;
            while self.peek(0).is_some_and(|c| c.is_ascii_digit()) {
                self.pos += 1;
            }
        }
        if matches!(self.peek(0), Some(b'e' | b'E')) {
            let save = self.pos;
            self.pos += 1;
            if matches!(self.peek(0), Some(b'+' | b'-')) {
                self.pos += 1;
            }
            if self.peek(0).is_some_and(|c| c.is_ascii_digit()) {
                is_double = true;
                while self.peek(0).is_some_and(|c| c.is_ascii_digit()) {
                    self.pos += 1;
                }
            } else {
                self.pos = save;
            }
        }
        let text = std::str::from_utf8(&self.bytes[start..self.pos]).unwrap_or("");
        let span = || Span::new(start, self.pos);
        if is_double {
            return text
                .parse::<f64>()
                .map(Token::Double)
                .map_err(|_| Error::grammar(format!("bad number {text:?}"), span()));
        }
        let value = text.parse::<u64>().map_err(|_| {
            Error::grammar(format!("integer literal {text} is out of range"), span())
        })?;
        if self.peek(0) == Some(b'u')
            && !self
                .peek(1)
                .is_some_and(|c| c.is_ascii_alphanumeric() || c == b'_')
        {
            self.pos += 1;
            return Ok(Token::Uint(value));
        }
        if self
            .peek(0)
            .is_some_and(|c| c.is_ascii_alphabetic() || c == b'_')
        {
            return Err(Error::grammar(
                format!(
                    "unexpected character {:?} after a number",
                    self.peek(0).unwrap_or(b' ') as char
                ),
                Span::new(self.pos, self.pos + 1),
            ));
        }
        Ok(Token::Int(value))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn toks(s: &str) -> Vec<Token> {
        tokenize(s).unwrap().into_iter().map(|t| t.token).collect()
    }

    #[test]
    fn lexes_yt_specific_tokens() {
        assert_eq!(
            toks("a from [//t/[x]] where #<>%TRUE and 1u>=.5e1 group  by {p}"),
            vec![
                Token::Ident("a".into()),
                Token::Keyword(Keyword::From),
                Token::QuotedIdent("//t/[x]".into()),
                Token::Keyword(Keyword::Where),
                Token::Keyword(Keyword::Null),
                Token::Punct("<>"),
                Token::Keyword(Keyword::True),
                Token::Keyword(Keyword::And),
                Token::Uint(1),
                Token::Punct(">="),
                Token::Double(5.0),
                Token::Keyword(Keyword::GroupBy),
                Token::Placeholder("p".into()),
                Token::Eof
            ]
        );
    }

    #[test]
    fn decodes_escapes_and_keeps_bytes() {
        assert_eq!(
            toks(r#"'a\'b\x41\101\n' `c\`d`"#)[..2],
            [
                Token::Str(b"a'bAA\n".to_vec()),
                Token::QuotedIdent("c`d".into())
            ]
        );
    }

    #[test]
    fn reports_positions() {
        let e = tokenize("a from [//t] where a ? 1").unwrap_err();
        assert_eq!(e.span().unwrap().start, 21);
        assert!(tokenize("'abc").is_err());
        assert!(tokenize("[abc").is_err());
        assert!(tokenize("99999999999999999999999").is_err());
    }

    #[test]
    fn modulo_before_word_is_an_operator() {
        assert_eq!(toks("a %b")[1], Token::Punct("%"));
    }
}
