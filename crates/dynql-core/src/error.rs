//! Errors of the data-model layer.

use crate::yson::YsonError;

/// Result of `dynql-core` operations.
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// An error in a schema, a value or a YSON/JSON document.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum Error {
    /// The table schema is malformed or violates a YT rule.
    #[error("Invalid table schema: {0}")]
    InvalidSchema(String),
    /// A value does not fit the column it is written to.
    #[error("Invalid value for column {}: {message}", shown(column))]
    InvalidValue { column: String, message: String },
    /// A row is malformed (not a map, unknown column, missing key, ...).
    #[error("{0}")]
    InvalidRow(String),
    /// A YSON document could not be parsed.
    #[error(transparent)]
    Yson(#[from] YsonError),
}

/// Bytes of a user-supplied name or path an error message quotes; longer ones are cut.
pub const MAX_QUOTED_NAME_BYTES: usize = 128;

/// `name` quoted for an error message: whole when short, else its first
/// [`MAX_QUOTED_NAME_BYTES`] bytes and its length, so that a hostile 1 MB name does not come
/// back in every error.
///
/// ```
/// use dynql_core::error::shown;
/// assert_eq!(shown("k"), "\"k\"");
/// let long = "x".repeat(1_000_000);
/// assert!(shown(&long).len() < 200);
/// assert!(shown(&long).ends_with("(1000000 bytes)"));
/// ```
pub fn shown(name: &str) -> String {
    if name.len() <= MAX_QUOTED_NAME_BYTES {
        return format!("{name:?}");
    }
    let mut end = MAX_QUOTED_NAME_BYTES;
    while !name.is_char_boundary(end) {
        end -= 1;
    }
    format!("{:?}… ({} bytes)", &name[..end], name.len())
}
