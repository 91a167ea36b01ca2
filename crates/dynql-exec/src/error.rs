//! Execution errors.

/// Result of query execution.
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// A query execution error.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The query is invalid or failed while evaluating rows.
    #[error(transparent)]
    Query(#[from] dynql_ql::Error),
    /// Reading a table failed.
    #[error(transparent)]
    Storage(#[from] dynql_storage::Error),
    /// DataFusion failed.
    #[error("DataFusion error: {0}")]
    DataFusion(#[from] datafusion::error::DataFusionError),
    /// An input or output row limit was hit and `fail_on_incomplete_result` is set.
    #[error("Query terminated prematurely due to excessive {what}; consider rewriting your query or changing {what} limit")]
    LimitExceeded { what: &'static str },
    /// A select option has an invalid value.
    #[error("Invalid option {name}: {message}")]
    InvalidOption { name: &'static str, message: String },
}
