//! Errors of the query language: syntax errors with their position, binding and typing
//! errors with YT's wording, and runtime evaluation errors.

/// Result of `dynql-ql` operations.
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// A byte range of the query text.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Span {
    pub start: usize,
    pub end: usize,
}

impl Span {
    pub fn new(start: usize, end: usize) -> Span {
        Span { start, end }
    }

    /// The smallest span covering both.
    pub fn to(self, other: Span) -> Span {
        Span::new(self.start.min(other.start), self.end.max(other.end))
    }
}

/// A query-language error.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum Error {
    /// The text does not parse. `position` is a byte offset into the query text.
    #[error("Error while parsing query: {message} at position {position}")]
    Syntax {
        message: String,
        position: usize,
        span: Span,
        /// What to write instead, for a habit of another language (see [`Error::hint`]).
        hint: Option<String>,
    },
    /// The query parses but is not valid (unknown column, type mismatch, misuse of aggregate,
    /// clause rules). The message uses YT's wording.
    #[error("{message}")]
    Invalid {
        message: String,
        span: Option<Span>,
        /// As for [`Error::Syntax`].
        hint: Option<String>,
    },
    /// Evaluation failed on some row (division by zero, bad conversion, ...).
    #[error("{0}")]
    Runtime(String),
}

impl Error {
    /// A text the grammar rejects at `span`; the message starts with YT's "syntax error".
    pub fn grammar(detail: impl std::fmt::Display, span: Span) -> Error {
        Error::syntax(format!("syntax error, {detail}"), span)
    }

    /// A syntax error at `span`.
    pub fn syntax(message: impl Into<String>, span: Span) -> Error {
        Error::Syntax {
            message: message.into(),
            position: span.start,
            span,
            hint: None,
        }
    }

    /// A validation error about the text at `span`.
    pub fn invalid(message: impl Into<String>, span: Span) -> Error {
        Error::Invalid {
            message: message.into(),
            span: Some(span),
            hint: None,
        }
    }

    /// A validation error not tied to one place in the text.
    pub fn invalid_query(message: impl Into<String>) -> Error {
        Error::Invalid {
            message: message.into(),
            span: None,
            hint: None,
        }
    }

    /// The error with a hint: what to write instead. The message stays YT's; the hint is
    /// apart from it, so a command line can print it under the caret.
    pub fn with_hint(mut self, text: impl Into<String>) -> Error {
        match &mut self {
            Error::Syntax { hint, .. } | Error::Invalid { hint, .. } => *hint = Some(text.into()),
            Error::Runtime(_) => {}
        }
        self
    }

    /// The hint of [`Error::with_hint`], if any.
    pub fn hint(&self) -> Option<&str> {
        match self {
            Error::Syntax { hint, .. } | Error::Invalid { hint, .. } => hint.as_deref(),
            Error::Runtime(_) => None,
        }
    }

    /// The span of query text the error is about, if any.
    pub fn span(&self) -> Option<Span> {
        match self {
            Error::Syntax { span, .. } => Some(*span),
            Error::Invalid { span, .. } => *span,
            Error::Runtime(_) => None,
        }
    }
}

impl From<dynql_core::Error> for Error {
    fn from(e: dynql_core::Error) -> Error {
        Error::invalid_query(e.to_string())
    }
}
