//! Execution errors.

use datafusion::error::DataFusionError;

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
    /// DataFusion failed. Shown by its innermost message, once: DataFusion's own text
    /// repeats each cause, and so would a chain of sources.
    #[error("{}", datafusion_message(.0))]
    DataFusion(DataFusionError),
    /// An input or output row limit was hit and `fail_on_incomplete_result` is set.
    #[error("Query terminated prematurely due to excessive {what}; consider rewriting your query or changing {what} limit")]
    LimitExceeded { what: &'static str },
    /// A select option has an invalid value.
    #[error("Invalid option {name}: {message}")]
    InvalidOption { name: &'static str, message: String },
}

/// An Arrow kernel's failure (a cast, a concatenation, a row encoding) is DataFusion's kind.
impl From<arrow::error::ArrowError> for Error {
    fn from(e: arrow::error::ArrowError) -> Error {
        Error::DataFusion(e.into())
    }
}

impl From<DataFusionError> for Error {
    fn from(e: DataFusionError) -> Error {
        Error::DataFusion(e)
    }
}

/// The innermost message of a DataFusion error.
fn datafusion_message(e: &DataFusionError) -> String {
    match e.find_root() {
        DataFusionError::SQL(parser, _) => parser.to_string(),
        DataFusionError::ResourcesExhausted(message) => format!(
            "the query needs more memory than its memory limit allows and could not spill \
             what it holds (raise the limit, e.g. --memory-limit, or read less): {message}"
        ),
        root => root.to_string(),
    }
}

impl Error {
    /// Whether the error is the query's to fix (SQL syntax, unknown names, types, a feature
    /// DataFusion lacks) rather than a failure of dynql.
    pub fn is_invalid_query(&self) -> bool {
        match self {
            Error::Query(_) | Error::InvalidOption { .. } => true,
            Error::DataFusion(e) => matches!(
                e.find_root(),
                DataFusionError::SQL(..)
                    | DataFusionError::Plan(_)
                    | DataFusionError::SchemaError(..)
                    | DataFusionError::NotImplemented(_)
            ),
            _ => false,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_datafusion_error_reads_once_and_sql_mistakes_are_the_query_s() {
        let parse = datafusion::sql::sqlparser::parser::ParserError::ParserError(
            "Expected: an SQL statement, found: selec".into(),
        );
        let e = Error::from(DataFusionError::SQL(Box::new(parse), None));
        assert_eq!(
            e.to_string(),
            "sql parser error: Expected: an SQL statement, found: selec"
        );
        assert!(std::error::Error::source(&e).is_none());
        assert!(e.is_invalid_query());
        let wrapped = Error::from(DataFusionError::Context(
            "planning".into(),
            Box::new(DataFusionError::Plan("no field named nope".into())),
        ));
        assert_eq!(
            wrapped.to_string(),
            "Error during planning: no field named nope"
        );
        assert!(wrapped.is_invalid_query());
        assert!(!Error::from(DataFusionError::Internal("bug".into())).is_invalid_query());
    }
}
