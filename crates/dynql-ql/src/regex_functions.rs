//! YT's regex functions (`regex_full_match`, `regex_partial_match`, `regex_replace_first`,
//! `regex_replace_all`, `regex_extract`) with their pattern compiled once: the row evaluator
//! prepares one per call, the array evaluator one per batch whose pattern is a literal, and
//! both apply it the same way.

use regex::bytes::Regex;

use crate::error::Result;
use crate::functions::{compile_regex, ScalarFunction};
use crate::value_limits::{self, Rewrite};

/// A regex function with its pattern (and rewrite) known: compiled once, applied to texts.
#[derive(Debug, Clone)]
pub struct PreparedRegex {
    function: ScalarFunction,
    re: Regex,
    /// For the replacing and extracting functions.
    rewrite: Option<Rewrite>,
}

impl PreparedRegex {
    /// Whether `f` is one of the functions a [`PreparedRegex`] applies. Their arguments are
    /// `(pattern, text)`, and `(pattern, text, rewrite)` for those that rewrite.
    pub fn applies_to(f: ScalarFunction) -> bool {
        use ScalarFunction as S;
        matches!(
            f,
            S::RegexFullMatch
                | S::RegexPartialMatch
                | S::RegexReplaceFirst
                | S::RegexReplaceAll
                | S::RegexExtract
        )
    }

    /// Whether `f` answers a boolean (a match) rather than a string.
    pub fn is_predicate(f: ScalarFunction) -> bool {
        matches!(
            f,
            ScalarFunction::RegexFullMatch | ScalarFunction::RegexPartialMatch
        )
    }

    /// `f` with `pattern` (and `rewrite`, for the functions that rewrite) compiled.
    ///
    /// # Errors
    /// The pattern does not compile (as YT: "Error parsing regular expression …").
    pub fn new(f: ScalarFunction, pattern: &[u8], rewrite: &[u8]) -> Result<PreparedRegex> {
        let re = if f == ScalarFunction::RegexFullMatch {
            compile_regex(&[b"^(?:", pattern, b")$"].concat())?
        } else {
            compile_regex(pattern)?
        };
        Ok(PreparedRegex {
            function: f,
            re,
            rewrite: (!Self::is_predicate(f)).then(|| Rewrite::parse(rewrite)),
        })
    }

    /// Whether the pattern matches `text` (fully, for `regex_full_match`).
    pub fn is_match(&self, text: &[u8]) -> bool {
        self.re.is_match(text)
    }

    /// The rewritten `text`: every match (or the first) replaced, or the first match's
    /// expansion (`None` when nothing matches, for `regex_extract`).
    ///
    /// # Errors
    /// The result grows past YT's longest string (checked as it grows).
    pub fn rewrite(&self, text: &[u8]) -> Result<Option<Vec<u8>>> {
        let rewrite = match &self.rewrite {
            Some(r) => r,
            None => return Ok(None),
        };
        match self.function {
            ScalarFunction::RegexExtract => value_limits::extract(&self.re, text, rewrite),
            f => value_limits::replace(
                &self.re,
                text,
                rewrite,
                f == ScalarFunction::RegexReplaceAll,
            )
            .map(Some),
        }
    }
}
