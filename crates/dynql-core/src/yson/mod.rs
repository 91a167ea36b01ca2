//! Text YSON, the notation YT uses for attributes, table schemas and rows.
//!
//! [`parse`] reads one node, [`parse_list_fragment`] reads the `node; node;` row format,
//! [`to_text`] writes compact canonical text that [`parse`] reads back to the same value, and
//! [`Yson::from_json`] / [`Yson::to_json`] convert to and from YT's JSON format conventions
//! (`$value`/`$attributes`).
//!
//! Grammar accepted (YT's text YSON):
//!
//! ```text
//! node       := attributes? value
//! attributes := '<' (key '=' node (';' key '=' node)* ';'?)? '>'
//! value      := '#' | '%true' | '%false' | '%nan' | '%inf' | '%+inf' | '%-inf'
//!             | int64 (-?[0-9]+) | uint64 ([0-9]+u) | double (1.5, 1., -2.5e10)
//!             | string | '[' (node (';' node)* ';'?)? ']' | '{' (key '=' node ...)? '}'
//! string     := '"' C-escaped bytes '"' | [A-Za-z_][A-Za-z0-9_.-]*
//! key        := string
//! ```
//!
//! Unquoted `true` is the *string* "true", as in YT; booleans are spelled `%true`/`%false`.
//! Binary YSON is rejected with an error naming the marker byte. Parsing never panics: every
//! malformed input yields a [`YsonError`] with the byte offset of the problem.

use parser::{describe_byte, Parser};
use writer::write_node;

mod parser;
#[cfg(test)]
mod tests;
mod writer;

/// A YSON node.
///
/// Strings and map keys are byte strings: YSON does not require UTF-8.
#[derive(Debug, Clone, PartialEq)]
pub enum Yson {
    /// `#`, YT's null.
    Entity,
    /// `%true` / `%false`.
    Boolean(bool),
    /// `-42`.
    Int64(i64),
    /// `42u`.
    Uint64(u64),
    /// `1.5`, `1.`, `%nan`, `%inf`, `%-inf`.
    Double(f64),
    /// `"text"` or an unquoted identifier such as `int64`.
    String(Vec<u8>),
    /// `[a; b; c]`.
    List(Vec<Yson>),
    /// `{k = v; ...}`; entries keep their order in the text.
    Map(Vec<(Vec<u8>, Yson)>),
    /// `<k = v; ...>value`: a node carrying attributes. The parser never produces an empty
    /// attribute list (`<>x` parses as plain `x`), matching YT where "no attributes" and "empty
    /// attributes" are the same thing.
    Attributed {
        /// The attributes, in text order.
        attributes: Vec<(Vec<u8>, Yson)>,
        /// The node the attributes are attached to (never itself `Attributed` when parsed).
        value: Box<Yson>,
    },
}

/// A malformed YSON text: what is wrong and the byte offset where it was detected.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("YSON parse error at offset {offset}: {message}")]
pub struct YsonError {
    /// Byte offset into the parsed text.
    pub offset: usize,
    /// Human-readable description.
    pub message: String,
    /// The text nests lists, maps or attributes deeper than [`MAX_DEPTH`]: it may be well
    /// formed, but no value this deep is accepted.
    pub too_deep: bool,
}

/// Nesting limit for lists, maps and attributes (YT's YSON parser allows 256 levels too).
/// Bounds recursion so that hostile input such as `[[[[...` is an error, not a stack overflow.
pub const MAX_DEPTH: usize = 256;

/// Parses exactly one YSON node, with optional surrounding whitespace.
///
/// A trailing `;` is not allowed here (that is the list-fragment format, see
/// [`parse_list_fragment`]).
///
/// # Errors
/// [`YsonError`] with the byte offset of the first malformed token, of trailing input, or of a
/// binary-YSON marker byte.
///
/// ```
/// use dynql_core::yson::{parse, Yson};
/// let schema = parse(b"[{name=k; type=int64}]").unwrap();
/// assert_eq!(schema, Yson::List(vec![Yson::Map(vec![
///     (b"name".to_vec(), Yson::String(b"k".to_vec())),
///     (b"type".to_vec(), Yson::String(b"int64".to_vec())),
/// ])]));
/// ```
pub fn parse(text: &[u8]) -> Result<Yson, YsonError> {
    let mut p = Parser::new(text);
    p.skip_ws();
    let node = p.node()?;
    p.skip_ws();
    match p.peek() {
        None => Ok(node),
        Some(b';') => Err(p.error_here(
            "unexpected ';' after the node (a `node; node;` fragment needs parse_list_fragment)",
        )),
        Some(c) => Err(p.error_here(format!("unexpected {} after the node", describe_byte(c)))),
    }
}

/// Parses a list fragment `node; node; node` (optional trailing `;`), YT's YSON row format.
///
/// Empty or all-whitespace input gives an empty vector; an empty item (`a;;b`) is an error.
///
/// # Errors
/// [`YsonError`] with the byte offset of the first malformed item or missing separator.
///
/// ```
/// use dynql_core::yson::{parse_list_fragment, Yson};
/// let rows = parse_list_fragment(b"{a=1};{a=2u};").unwrap();
/// assert_eq!(rows.len(), 2);
/// assert_eq!(rows[1].get("a"), Some(&Yson::Uint64(2)));
/// ```
pub fn parse_list_fragment(text: &[u8]) -> Result<Vec<Yson>, YsonError> {
    let mut p = Parser::new(text);
    let mut items = Vec::new();
    loop {
        p.skip_ws();
        if p.peek().is_none() {
            return Ok(items);
        }
        items.push(p.node()?);
        p.skip_ws();
        match p.peek() {
            None => return Ok(items),
            Some(b';') => p.pos += 1,
            Some(c) => {
                return Err(p.error_here(format!(
                    "expected ';' between list fragment items, found {}",
                    describe_byte(c)
                )))
            }
        }
    }
}

/// Writes compact canonical text YSON that [`parse`] reads back to an equal value.
///
/// Maps and attributes are written `{"a"=1;"b"=%true;}` / `<"a"=1;>value` (every item followed by
/// `;`, as YT's text writer does), lists `[1;2;]`, strings always quoted with non-printable and
/// non-ASCII bytes as `\xHH` (so the output is ASCII), uint64 with `u`, entity `#`, doubles in the
/// shortest form that re-parses exactly (`1.`, `1.5`, `1e+300` style exponents as `1e300`,
/// `%nan`, `%inf`, `%-inf`). An `Attributed` node with no attributes is written as its value.
pub fn to_text(v: &Yson) -> String {
    let mut out = String::new();
    write_node(&mut out, v);
    out
}

impl Yson {
    /// Converts YT's JSON format representation to YSON.
    ///
    /// Integers that fit `i64` become `Int64`, larger non-negative ones `Uint64`, other numbers
    /// `Double`; `null` becomes `Entity`; strings become their UTF-8 bytes; an object whose keys
    /// are `$value` and optionally `$attributes` (an object) becomes `Attributed` (or just the
    /// value when the attributes are empty); every other object becomes a `Map` in key order.
    pub fn from_json(v: &serde_json::Value) -> Yson {
        use serde_json::Value as J;
        match v {
            J::Null => Yson::Entity,
            J::Bool(b) => Yson::Boolean(*b),
            J::Number(n) => {
                if let Some(i) = n.as_i64() {
                    Yson::Int64(i)
                } else if let Some(u) = n.as_u64() {
                    Yson::Uint64(u)
                } else {
                    // Only non-integral (or out-of-range) numbers reach here; serde_json always
                    // yields some f64 for them.
                    Yson::Double(n.as_f64().unwrap_or(f64::NAN))
                }
            }
            J::String(s) => Yson::String(s.as_bytes().to_vec()),
            J::Array(items) => Yson::List(items.iter().map(Yson::from_json).collect()),
            J::Object(obj) => {
                let wrapper = obj.contains_key("$value")
                    && obj.keys().all(|k| k == "$value" || k == "$attributes")
                    && obj.get("$attributes").is_none_or(|a| a.is_object());
                if !wrapper {
                    return Yson::Map(
                        obj.iter()
                            .map(|(k, v)| (k.as_bytes().to_vec(), Yson::from_json(v)))
                            .collect(),
                    );
                }
                let value = obj.get("$value").map_or(Yson::Entity, Yson::from_json);
                let attributes: Vec<(Vec<u8>, Yson)> = match obj.get("$attributes") {
                    Some(J::Object(attrs)) => attrs
                        .iter()
                        .map(|(k, v)| (k.as_bytes().to_vec(), Yson::from_json(v)))
                        .collect(),
                    _ => Vec::new(),
                };
                if attributes.is_empty() {
                    value
                } else {
                    Yson::Attributed {
                        attributes,
                        value: Box::new(value),
                    }
                }
            }
        }
    }

    /// Converts to YT's JSON format representation.
    ///
    /// `Entity` → `null`; `Int64`/`Uint64` → numbers; finite doubles → numbers, NaN and infinities
    /// → the strings `"nan"`, `"inf"`, `"-inf"`; strings and keys → JSON strings, UTF-8 as is,
    /// other byte strings one code point U+0000..U+00FF per byte; `Attributed` →
    /// `{"$attributes": {...}, "$value": ...}`. Duplicate map keys (only possible in values built
    /// by hand) keep the last entry.
    pub fn to_json(&self) -> serde_json::Value {
        use serde_json::Value as J;
        match self {
            Yson::Entity => J::Null,
            Yson::Boolean(b) => J::Bool(*b),
            Yson::Int64(i) => J::from(*i),
            Yson::Uint64(u) => J::from(*u),
            Yson::Double(d) => match serde_json::Number::from_f64(*d) {
                Some(n) => J::Number(n),
                None if d.is_nan() => J::String("nan".into()),
                None if *d > 0.0 => J::String("inf".into()),
                None => J::String("-inf".into()),
            },
            Yson::String(s) => J::String(bytes_to_json_string(s)),
            Yson::List(items) => J::Array(items.iter().map(Yson::to_json).collect()),
            Yson::Map(entries) => J::Object(map_to_json(entries)),
            Yson::Attributed { attributes, value } => {
                let mut obj = serde_json::Map::new();
                obj.insert("$attributes".into(), J::Object(map_to_json(attributes)));
                obj.insert("$value".into(), value.to_json());
                J::Object(obj)
            }
        }
    }

    /// Looks up `key` in a map, looking through an attributes wrapper; `None` for a missing key
    /// or a node that is not a map.
    pub fn get(&self, key: &str) -> Option<&Yson> {
        match self {
            Yson::Map(entries) => entries
                .iter()
                .find(|(k, _)| k.as_slice() == key.as_bytes())
                .map(|(_, v)| v),
            Yson::Attributed { value, .. } => value.get(key),
            _ => None,
        }
    }

    /// The string value as `&str`, looking through an attributes wrapper; `None` if the node is
    /// not a string or its bytes are not UTF-8.
    pub fn as_str(&self) -> Option<&str> {
        match self {
            Yson::String(s) => std::str::from_utf8(s).ok(),
            Yson::Attributed { value, .. } => value.as_str(),
            _ => None,
        }
    }
}

fn bytes_to_json_string(bytes: &[u8]) -> String {
    match std::str::from_utf8(bytes) {
        Ok(s) => s.to_string(),
        // YT's JSON format maps each byte to the code point of the same number.
        Err(_) => bytes.iter().map(|&b| char::from(b)).collect(),
    }
}

fn map_to_json(entries: &[(Vec<u8>, Yson)]) -> serde_json::Map<String, serde_json::Value> {
    entries
        .iter()
        .map(|(k, v)| (bytes_to_json_string(k), v.to_json()))
        .collect()
}
