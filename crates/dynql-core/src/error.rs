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
    #[error("Invalid value for column {column:?}: {message}")]
    InvalidValue { column: String, message: String },
    /// A row is malformed (not a map, unknown column, missing key, ...).
    #[error("{0}")]
    InvalidRow(String),
    /// A YSON document could not be parsed.
    #[error(transparent)]
    Yson(#[from] YsonError),
}
