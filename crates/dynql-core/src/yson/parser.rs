//! The text YSON parser: one node, or a list fragment of `node;` items.

use std::collections::HashSet;

use super::{Yson, YsonError, MAX_DEPTH};

pub(super) struct Parser<'a> {
    text: &'a [u8],
    pub(super) pos: usize,
    depth: usize,
}

impl<'a> Parser<'a> {
    pub(super) fn new(text: &'a [u8]) -> Self {
        Parser {
            text,
            pos: 0,
            depth: 0,
        }
    }

    pub(super) fn peek(&self) -> Option<u8> {
        self.text.get(self.pos).copied()
    }

    fn error_at(&self, offset: usize, message: impl Into<String>) -> YsonError {
        YsonError {
            offset,
            message: message.into(),
            too_deep: false,
        }
    }

    pub(super) fn error_here(&self, message: impl Into<String>) -> YsonError {
        self.error_at(self.pos, message)
    }

    pub(super) fn skip_ws(&mut self) {
        while let Some(b' ' | b'\t' | b'\n' | b'\r' | 0x0b | 0x0c) = self.peek() {
            self.pos += 1;
        }
    }

    /// Enters a list, map or attribute block, enforcing [`MAX_DEPTH`].
    fn enter(&mut self) -> Result<(), YsonError> {
        if self.depth >= MAX_DEPTH {
            let mut e = self.error_here(format!("nesting is deeper than {MAX_DEPTH} levels"));
            e.too_deep = true;
            return Err(e);
        }
        self.depth += 1;
        Ok(())
    }

    /// `attributes? value`, with the cursor on the first byte of the node.
    pub(super) fn node(&mut self) -> Result<Yson, YsonError> {
        if self.peek() != Some(b'<') {
            return self.value();
        }
        let attributes = self.key_value_block(b'<', b'>')?;
        self.skip_ws();
        if self.peek() == Some(b'<') {
            return Err(self.error_here("a node can carry only one attribute block"));
        }
        let value = self.value()?;
        if attributes.is_empty() {
            return Ok(value);
        }
        Ok(Yson::Attributed {
            attributes,
            value: Box::new(value),
        })
    }

    /// A node without attributes.
    fn value(&mut self) -> Result<Yson, YsonError> {
        let start = self.pos;
        let Some(c) = self.peek() else {
            return Err(self.error_here("expected a YSON node, found end of input"));
        };
        match c {
            b'#' => {
                self.pos += 1;
                Ok(Yson::Entity)
            }
            b'%' => self.percent_literal(),
            b'"' => Ok(Yson::String(self.quoted_string()?)),
            b'[' => self.list(),
            b'{' => Ok(Yson::Map(self.key_value_block(b'{', b'}')?)),
            b'-' | b'+' | b'0'..=b'9' => self.number(),
            c if is_identifier_start(c) => Ok(Yson::String(self.identifier().to_vec())),
            0x01..=0x06 => Err(self.error_at(
                start,
                format!("binary YSON is not supported (found marker byte 0x{c:02x})"),
            )),
            c => Err(self.error_at(
                start,
                format!("expected a YSON node, found {}", describe_byte(c)),
            )),
        }
    }

    /// `%true`, `%false`, `%nan`, `%inf`, `%+inf`, `%-inf`.
    fn percent_literal(&mut self) -> Result<Yson, YsonError> {
        let start = self.pos;
        self.pos += 1;
        let word_start = self.pos;
        while let Some(b'a'..=b'z' | b'A'..=b'Z' | b'+' | b'-') = self.peek() {
            self.pos += 1;
        }
        let value = match &self.text[word_start..self.pos] {
            b"true" => Yson::Boolean(true),
            b"false" => Yson::Boolean(false),
            b"nan" => Yson::Double(f64::NAN),
            b"inf" | b"+inf" => Yson::Double(f64::INFINITY),
            b"-inf" => Yson::Double(f64::NEG_INFINITY),
            word => {
                return Err(self.error_at(
                    start,
                    format!(
                        "unknown literal \"%{}\" (expected %true, %false, %nan, %inf, %-inf)",
                        String::from_utf8_lossy(word)
                    ),
                ))
            }
        };
        Ok(value)
    }

    /// An unquoted string; the cursor is on an identifier-start byte.
    fn identifier(&mut self) -> &'a [u8] {
        let start = self.pos;
        while self.peek().is_some_and(is_identifier_byte) {
            self.pos += 1;
        }
        &self.text[start..self.pos]
    }

    /// A number token: int64, uint64 (`u` suffix) or double (has `.`, `e` or `E`).
    ///
    /// The token is scanned greedily over number-ish and identifier bytes first, so `12abc` or
    /// `1.2.3` are reported whole instead of being split into two nodes.
    fn number(&mut self) -> Result<Yson, YsonError> {
        let start = self.pos;
        while let Some(b'0'..=b'9' | b'a'..=b'z' | b'A'..=b'Z' | b'+' | b'-' | b'.' | b'_') =
            self.peek()
        {
            self.pos += 1;
        }
        let token = &self.text[start..self.pos];
        // The token bytes are all ASCII, so this conversion cannot fail.
        let text = std::str::from_utf8(token).unwrap_or_default();
        let bad = |what: &str| self.error_at(start, format!("invalid {what} literal \"{text}\""));

        if let Some(digits) = text.strip_suffix('u') {
            if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
                return Err(bad("uint64"));
            }
            return digits.parse::<u64>().map(Yson::Uint64).map_err(|_| {
                self.error_at(start, format!("uint64 literal \"{text}\" is out of range"))
            });
        }
        if text.contains(['.', 'e', 'E']) {
            if !is_double_syntax(token) {
                return Err(bad("double"));
            }
            // Syntax was checked above, so this only rejects what Rust itself cannot read.
            return text
                .parse::<f64>()
                .map(Yson::Double)
                .map_err(|_| bad("double"));
        }
        let unsigned = text.strip_prefix(['-', '+']).unwrap_or(text);
        if unsigned.is_empty() || !unsigned.bytes().all(|b| b.is_ascii_digit()) {
            return Err(bad("int64"));
        }
        text.parse::<i64>()
            .map(Yson::Int64)
            .map_err(|_| self.error_at(start, format!("int64 literal \"{text}\" is out of range")))
    }

    /// `"..."` with C escapes; the cursor is on the opening quote.
    fn quoted_string(&mut self) -> Result<Vec<u8>, YsonError> {
        let open = self.pos;
        self.pos += 1;
        let mut out = Vec::new();
        loop {
            let Some(c) = self.peek() else {
                return Err(self.error_at(open, "unterminated string"));
            };
            self.pos += 1;
            match c {
                b'"' => return Ok(out),
                b'\\' => self.escape(&mut out)?,
                c => out.push(c),
            }
        }
    }

    /// One escape sequence; the cursor is just past the backslash.
    fn escape(&mut self, out: &mut Vec<u8>) -> Result<(), YsonError> {
        let backslash = self.pos - 1;
        let Some(c) = self.peek() else {
            return Err(self.error_at(backslash, "unterminated escape sequence"));
        };
        self.pos += 1;
        let byte = match c {
            b'n' => b'\n',
            b't' => b'\t',
            b'r' => b'\r',
            b'a' => 0x07,
            b'b' => 0x08,
            b'f' => 0x0c,
            b'v' => 0x0b,
            b'\\' | b'"' | b'\'' | b'?' => c,
            b'x' => {
                let v = self.radix_digits(16, 2);
                match v {
                    Some(v) => v as u8,
                    None => {
                        return Err(self.error_at(backslash, "\\x must be followed by hex digits"))
                    }
                }
            }
            b'0'..=b'7' => {
                self.pos -= 1;
                match self.radix_digits(8, 3) {
                    Some(v) if v <= 0xff => v as u8,
                    _ => return Err(self.error_at(backslash, "octal escape is above \\377")),
                }
            }
            b'u' | b'U' => {
                let width = if c == b'u' { 4 } else { 8 };
                let start = self.pos;
                let ch = self
                    .radix_digits(16, width)
                    .filter(|_| self.pos - start == width)
                    .and_then(char::from_u32);
                let Some(ch) = ch else {
                    return Err(self.error_at(
                        backslash,
                        format!(
                            "\\{} must be followed by {width} hex digits of a Unicode scalar value",
                            c as char
                        ),
                    ));
                };
                let mut buf = [0u8; 4];
                out.extend_from_slice(ch.encode_utf8(&mut buf).as_bytes());
                return Ok(());
            }
            c => {
                return Err(self.error_at(
                    backslash,
                    format!("unknown escape sequence \\{}", describe_escape(c)),
                ))
            }
        };
        out.push(byte);
        Ok(())
    }

    /// Up to `max` digits in `radix`; `None` if there is not even one.
    fn radix_digits(&mut self, radix: u32, max: usize) -> Option<u32> {
        let mut value: u32 = 0;
        let mut n = 0;
        while n < max {
            let Some(d) = self.peek().and_then(|c| (c as char).to_digit(radix)) else {
                break;
            };
            // max ≤ 8 hex digits, so this fits u32.
            value = value * radix + d;
            self.pos += 1;
            n += 1;
        }
        (n > 0).then_some(value)
    }

    /// `[node; node; ...]`, trailing `;` optional.
    fn list(&mut self) -> Result<Yson, YsonError> {
        self.enter()?;
        self.pos += 1;
        let mut items = Vec::new();
        loop {
            self.skip_ws();
            if self.peek() == Some(b']') {
                self.pos += 1;
                break;
            }
            items.push(self.node()?);
            self.skip_ws();
            match self.peek() {
                Some(b';') => self.pos += 1,
                Some(b']') => {
                    self.pos += 1;
                    break;
                }
                Some(c) => {
                    return Err(self.error_here(format!(
                        "expected ';' or ']' in a list, found {}",
                        describe_byte(c)
                    )))
                }
                None => return Err(self.error_here("unterminated list, expected ']'")),
            }
        }
        self.depth -= 1;
        Ok(Yson::List(items))
    }

    /// A map (`{...}`) or attribute block (`<...>`): `key = node` items separated by `;`.
    /// Duplicate keys are an error, as in YT's tree builder.
    fn key_value_block(&mut self, open: u8, close: u8) -> Result<Vec<(Vec<u8>, Yson)>, YsonError> {
        let what = if open == b'{' { "map" } else { "attributes" };
        self.enter()?;
        self.pos += 1;
        let mut entries: Vec<(Vec<u8>, Yson)> = Vec::new();
        let mut seen: HashSet<Vec<u8>> = HashSet::new();
        loop {
            self.skip_ws();
            let key_start = self.pos;
            let key = match self.peek() {
                Some(c) if c == close => {
                    self.pos += 1;
                    break;
                }
                Some(b'"') => self.quoted_string()?,
                Some(c) if is_identifier_start(c) => self.identifier().to_vec(),
                Some(c) => {
                    return Err(self.error_here(format!(
                        "expected a string key or '{}' in {what}, found {}",
                        close as char,
                        describe_byte(c)
                    )))
                }
                None => {
                    return Err(self
                        .error_here(format!("unterminated {what}, expected '{}'", close as char)))
                }
            };
            if !seen.insert(key.clone()) {
                return Err(self.error_at(
                    key_start,
                    format!(
                        "duplicate key \"{}\" in {what}",
                        String::from_utf8_lossy(&key)
                    ),
                ));
            }
            self.skip_ws();
            match self.peek() {
                Some(b'=') => self.pos += 1,
                Some(c) => {
                    return Err(self.error_here(format!(
                        "expected '=' after a key in {what}, found {}",
                        describe_byte(c)
                    )))
                }
                None => return Err(self.error_here(format!("unterminated {what}, expected '='"))),
            }
            self.skip_ws();
            let value = self.node()?;
            entries.push((key, value));
            self.skip_ws();
            match self.peek() {
                Some(b';') => self.pos += 1,
                Some(c) if c == close => {
                    self.pos += 1;
                    break;
                }
                Some(c) => {
                    return Err(self.error_here(format!(
                        "expected ';' or '{}' in {what}, found {}",
                        close as char,
                        describe_byte(c)
                    )))
                }
                None => {
                    return Err(self
                        .error_here(format!("unterminated {what}, expected '{}'", close as char)))
                }
            }
        }
        self.depth -= 1;
        Ok(entries)
    }
}

fn is_identifier_start(c: u8) -> bool {
    c.is_ascii_alphabetic() || c == b'_'
}

fn is_identifier_byte(c: u8) -> bool {
    c.is_ascii_alphanumeric() || matches!(c, b'_' | b'.' | b'-')
}

/// `[+-]?[0-9]+(\.[0-9]*)?([eE][+-]?[0-9]+)?` — checked by hand because Rust's `f64` parser
/// also accepts `inf`, `nan` and `.5`, which YSON spells differently or not at all.
fn is_double_syntax(t: &[u8]) -> bool {
    let mut i = 0;
    let digits = |i: &mut usize| {
        let start = *i;
        while t.get(*i).is_some_and(u8::is_ascii_digit) {
            *i += 1;
        }
        *i > start
    };
    if matches!(t.first(), Some(b'+' | b'-')) {
        i += 1;
    }
    if !digits(&mut i) {
        return false;
    }
    if t.get(i) == Some(&b'.') {
        i += 1;
        digits(&mut i);
    }
    if matches!(t.get(i), Some(b'e' | b'E')) {
        i += 1;
        if matches!(t.get(i), Some(b'+' | b'-')) {
            i += 1;
        }
        if !digits(&mut i) {
            return false;
        }
    }
    i == t.len()
}

pub(super) fn describe_byte(c: u8) -> String {
    if c.is_ascii_graphic() {
        format!("'{}'", c as char)
    } else {
        format!("byte 0x{c:02x}")
    }
}

fn describe_escape(c: u8) -> String {
    if c.is_ascii_graphic() {
        (c as char).to_string()
    } else {
        format!("<0x{c:02x}>")
    }
}
