//! Regular expressions as YT's RE2 reads and quotes them.

use super::call::runtime;
use crate::error::Result;

/// Compiles an RE2-style pattern (UTF-8 mode, as YT uses RE2).
pub fn compile_regex(pattern: &[u8]) -> Result<regex::bytes::Regex> {
    let text = std::str::from_utf8(pattern)
        .map_err(|_| runtime("Error parsing regular expression: pattern is not valid UTF-8"))?;
    regex::bytes::Regex::new(text)
        .map_err(|e| runtime(format!("Error parsing regular expression {text:?}: {e}")))
}

/// RE2::QuoteMeta: escapes every byte but `[A-Za-z0-9_]` and UTF-8 bytes >= 0x80; NUL -> `\x00`.
pub fn regex_escape(s: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(s.len() * 2);
    for &c in s {
        if c.is_ascii_alphanumeric() || c == b'_' || c >= 0x80 {
            out.push(c);
        } else if c == 0 {
            out.extend_from_slice(b"\\x00");
        } else {
            out.push(b'\\');
            out.push(c);
        }
    }
    out
}
