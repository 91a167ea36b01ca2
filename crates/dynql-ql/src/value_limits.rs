//! The largest string or `any` value an expression may compute, and the string building that
//! checks it before it allocates.
//!
//! YT refuses longer values (`MaxStringValueLength`, `MaxAnyValueLength`: 16 MB). Without a
//! cap, a few nested `concat`s of a column, or a regex rewrite of every empty match, ask for
//! gigabytes per row. Functions whose result is at least the sum of some of their arguments
//! (`concat`, `||`, `make_list`, `make_map`, `to_any`) check that sum first; the regex
//! rewrites check as their output grows; every other function that builds a value grows its
//! arguments by a bounded factor and is checked once it is built ([`check_result`]).
//! Functions that give back an argument unchanged (`if_null` of a long stored value) are not
//! checked: they compute nothing.

use regex::bytes::{Captures, Regex};

use dynql_core::Value;

use crate::error::{Error, Result};
use crate::functions::ScalarFunction;

/// The most bytes of one string or `any` value an expression computes: YT's
/// `MaxStringValueLength` and `MaxAnyValueLength` (16 MiB).
pub const MAX_STRING_VALUE_LENGTH: usize = dynql_core::limits::MAX_VALUE_BYTES;

/// Refuses a computed value of `n` bytes above [`MAX_STRING_VALUE_LENGTH`].
///
/// # Errors
/// `String value is too long: {n} bytes (limit 16777216)`.
pub fn check_string_length(n: usize) -> Result<()> {
    if n > MAX_STRING_VALUE_LENGTH {
        return Err(Error::Runtime(format!(
            "String value is too long: {n} bytes (limit {MAX_STRING_VALUE_LENGTH})"
        )));
    }
    Ok(())
}

/// The bytes a value holds as a string or `any` (0 for other values): what the caps count.
pub fn value_bytes(v: &Value) -> usize {
    match v {
        Value::String(b) | Value::Any(b) => b.len(),
        _ => 0,
    }
}

/// `parts` joined, refused before anything is allocated when the result would be too long.
pub(crate) fn concat(parts: &[&[u8]]) -> Result<Vec<u8>> {
    let n = parts.iter().fold(0usize, |n, p| n.saturating_add(p.len()));
    check_string_length(n)?;
    Ok(parts.concat())
}

/// Checks the result `v` of `f` (see the module docs for which functions are checked here).
pub(crate) fn check_result(f: ScalarFunction, v: Value) -> Result<Value> {
    use ScalarFunction as S;
    // These give back one of their arguments (or its scalar inside an `any`), which the
    // query did not compute: a long stored value passes through them as it passes through
    // a column reference.
    let passes_through = matches!(
        f,
        S::If | S::IfNull | S::Coalesce | S::Greatest | S::CastString | S::ToAny
    );
    if !passes_through {
        check_string_length(value_bytes(&v))?;
    }
    Ok(v)
}

/// A piece of an RE2 rewrite string.
#[derive(Debug, Clone, PartialEq)]
enum Piece {
    Text(Vec<u8>),
    /// `\0`-`\9`: the text of a capture group (nothing when it did not take part or does
    /// not exist).
    Group(usize),
}

/// An RE2 rewrite string (`\1` a capture group, `\\` a backslash, every other byte itself)
/// parsed once per call, so that its expansion can be measured before it is appended.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Rewrite {
    pieces: Vec<Piece>,
}

impl Rewrite {
    /// Parses `r` as RE2 does.
    pub(crate) fn parse(r: &[u8]) -> Rewrite {
        let mut pieces = Vec::new();
        let mut text = Vec::new();
        let mut i = 0;
        while i < r.len() {
            match (r[i], r.get(i + 1)) {
                (b'\\', Some(d)) if d.is_ascii_digit() => {
                    if !text.is_empty() {
                        pieces.push(Piece::Text(std::mem::take(&mut text)));
                    }
                    pieces.push(Piece::Group(usize::from(d - b'0')));
                    i += 2;
                }
                (b'\\', Some(b'\\')) => {
                    text.push(b'\\');
                    i += 2;
                }
                (c, _) => {
                    text.push(c);
                    i += 1;
                }
            }
        }
        if !text.is_empty() {
            pieces.push(Piece::Text(text));
        }
        Rewrite { pieces }
    }

    fn uses_groups(&self) -> bool {
        self.pieces.iter().any(|p| matches!(p, Piece::Group(_)))
    }

    /// Appends the rewrite for one match to `out`, checking each piece's length first.
    /// `caps` may be `None` only when the rewrite uses no group.
    fn append(&self, caps: Option<&Captures<'_>>, out: &mut Vec<u8>) -> Result<()> {
        for p in &self.pieces {
            let bytes: &[u8] = match p {
                Piece::Text(t) => t,
                Piece::Group(g) => caps.and_then(|c| c.get(*g)).map_or(&[], |m| m.as_bytes()),
            };
            append(out, bytes)?;
        }
        Ok(())
    }
}

/// `bytes` appended to `out` once the result is known to fit.
fn append(out: &mut Vec<u8>, bytes: &[u8]) -> Result<()> {
    check_string_length(out.len().saturating_add(bytes.len()))?;
    out.extend_from_slice(bytes);
    Ok(())
}

/// `regex_replace_all` (`all`) or `regex_replace_first`: the matches of `re` in `haystack`
/// replaced by `rewrite`, with the regex crate's match semantics (those of `replacen`).
///
/// # Errors
/// The output grows past [`MAX_STRING_VALUE_LENGTH`] (checked before each piece is added).
pub(crate) fn replace(
    re: &Regex,
    haystack: &[u8],
    rewrite: &Rewrite,
    all: bool,
) -> Result<Vec<u8>> {
    let limit = if all { usize::MAX } else { 1 };
    let mut out = Vec::with_capacity(haystack.len());
    let mut last = 0;
    if rewrite.uses_groups() {
        for caps in re.captures_iter(haystack).take(limit) {
            let Some(m) = caps.get(0) else { continue };
            append(&mut out, &haystack[last..m.start()])?;
            rewrite.append(Some(&caps), &mut out)?;
            last = m.end();
        }
    } else {
        // Without groups the matches alone are needed, which the regex finds faster.
        for m in re.find_iter(haystack).take(limit) {
            append(&mut out, &haystack[last..m.start()])?;
            rewrite.append(None, &mut out)?;
            last = m.end();
        }
    }
    append(&mut out, &haystack[last..])?;
    Ok(out)
}

/// `regex_extract`: `rewrite` expanded for the first match of `re` in `haystack`, if any.
///
/// # Errors
/// The expansion grows past [`MAX_STRING_VALUE_LENGTH`].
pub(crate) fn extract(re: &Regex, haystack: &[u8], rewrite: &Rewrite) -> Result<Option<Vec<u8>>> {
    let Some(caps) = re.captures(haystack) else {
        return Ok(None);
    };
    let mut out = Vec::new();
    rewrite.append(Some(&caps), &mut out)?;
    Ok(Some(out))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::functions::call_scalar;
    use dynql_core::ValueType;

    /// The conversion to the regex crate's template syntax that the functions used before
    /// [`Rewrite`]: the reference the rewrites are checked against.
    fn regex_crate_template(r: &[u8]) -> Vec<u8> {
        let mut out = Vec::with_capacity(r.len());
        let mut i = 0;
        while i < r.len() {
            match r[i] {
                b'\\' if i + 1 < r.len() && r[i + 1].is_ascii_digit() => {
                    out.extend_from_slice(format!("${{{}}}", r[i + 1] - b'0').as_bytes());
                    i += 2;
                }
                b'\\' if i + 1 < r.len() && r[i + 1] == b'\\' => {
                    out.push(b'\\');
                    i += 2;
                }
                b'$' => {
                    out.extend_from_slice(b"$$");
                    i += 1;
                }
                c => {
                    out.push(c);
                    i += 1;
                }
            }
        }
        out
    }

    fn s(x: &[u8]) -> Value {
        Value::String(x.to_vec())
    }

    fn too_long(r: Result<Value>) -> String {
        let e = r.unwrap_err().to_string();
        assert!(e.contains("String value is too long"), "{e}");
        assert!(e.contains("(limit 16777216)"), "{e}");
        e
    }

    #[test]
    fn rewrites_agree_with_the_regex_crate() {
        let patterns = ["([0-9]+)", "", "a*", "(a)|(b)", "x", "(é)(.)", "^", "$"];
        let haystacks = ["a12b3", "", "aab", "abcab", "xéz", "ééa", "éa\u{10000}b"];
        let rewrites = [
            "<\\1>", "", "\\0\\0", "$1\\2", "\\\\\\9$", "\\", "a\\", "${1}", "\\12",
        ];
        for p in patterns {
            let re = crate::functions::compile_regex(p.as_bytes()).unwrap();
            for h in haystacks {
                for r in rewrites {
                    let template = regex_crate_template(r.as_bytes());
                    let ours = Rewrite::parse(r.as_bytes());
                    let h = h.as_bytes();
                    let all = re.replace_all(h, template.as_slice()).into_owned();
                    assert_eq!(replace(&re, h, &ours, true).unwrap(), all, "{p} {h:?} {r}");
                    let first = re.replacen(h, 1, template.as_slice()).into_owned();
                    assert_eq!(
                        replace(&re, h, &ours, false).unwrap(),
                        first,
                        "{p} {h:?} {r}"
                    );
                    let extracted = re.captures(h).map(|c| {
                        let mut out = Vec::new();
                        c.expand(&template, &mut out);
                        out
                    });
                    assert_eq!(extract(&re, h, &ours).unwrap(), extracted, "{p} {h:?} {r}");
                }
            }
        }
    }

    #[test]
    fn concat_is_checked_before_it_allocates() {
        let half = vec![b'x'; MAX_STRING_VALUE_LENGTH / 2];
        let joined = call_scalar(
            ScalarFunction::Concat,
            &[s(&half), s(&half)],
            ValueType::String,
        )
        .unwrap();
        assert_eq!(value_bytes(&joined), MAX_STRING_VALUE_LENGTH);
        let e = too_long(call_scalar(
            ScalarFunction::Concat,
            &[joined, s(b"y")],
            ValueType::String,
        ));
        assert!(e.contains("16777217 bytes"), "{e}");
    }

    #[test]
    fn a_regex_rewrite_stops_growing_at_the_limit() {
        // An empty pattern matches before every byte and at the end: 5 MiB of input would
        // grow to 25 MiB.
        let input = vec![b'z'; 5 << 20];
        too_long(call_scalar(
            ScalarFunction::RegexReplaceAll,
            &[s(b""), s(&input), s(b"abcd")],
            ValueType::String,
        ));
        // The first match only: well within the limit.
        let r = call_scalar(
            ScalarFunction::RegexReplaceFirst,
            &[s(b""), s(&input), s(b"abcd")],
            ValueType::String,
        )
        .unwrap();
        assert_eq!(value_bytes(&r), input.len() + 4);
        // A rewrite that repeats a long capture.
        let big = vec![b'q'; 3 << 20];
        too_long(call_scalar(
            ScalarFunction::RegexExtract,
            &[s(b"(q+)"), s(&big), s(b"\\1\\1\\1\\1\\1\\1")],
            ValueType::String,
        ));
    }

    #[test]
    fn yson_builders_are_checked() {
        let big = vec![b'm'; 9 << 20];
        for f in [ScalarFunction::MakeList, ScalarFunction::MakeMap] {
            too_long(call_scalar(f, &[s(&big), s(&big)], ValueType::Any));
        }
        too_long(call_scalar(
            ScalarFunction::ToAny,
            &[s(&vec![b'm'; MAX_STRING_VALUE_LENGTH])],
            ValueType::Any,
        ));
        // A long value passes through functions that only choose among their arguments.
        let stored = Value::String(vec![b'p'; MAX_STRING_VALUE_LENGTH + 1]);
        let r = call_scalar(
            ScalarFunction::IfNull,
            &[stored.clone(), s(b"")],
            ValueType::String,
        )
        .unwrap();
        assert_eq!(r, stored);
        too_long(call_scalar(
            ScalarFunction::Lower,
            &[stored],
            ValueType::String,
        ));
    }
}
