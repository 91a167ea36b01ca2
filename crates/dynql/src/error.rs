//! The error type of the dynql library.

/// Result of dynql operations.
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// What a caller can do about an error.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum ErrorKind {
    /// The request is wrong (bad query, bad row, unknown table): fix it.
    InvalidInput,
    /// A node is already at the path a table or node was to be created, copied or moved to
    /// (`create --ignore-existing`, or `copy --force`, is the way around it).
    AlreadyExists,
    /// The store is unreachable or failed: retry later.
    Unavailable,
    /// Stored data does not decode.
    Corrupt,
    /// dynql does not do this (for this kind of table, or in this context); the message
    /// says what to do instead.
    Unsupported,
    /// A row limit of the query was hit.
    LimitExceeded,
    /// The transaction conflicts with a concurrent commit or has expired: retry it.
    Conflict,
    /// A bug in dynql.
    Internal,
}

/// A dynql error.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// A schema, value or YSON error.
    #[error(transparent)]
    Core(#[from] dynql_core::Error),
    /// A query-language error (syntax, binding, evaluation).
    #[error(transparent)]
    Query(#[from] dynql_ql::Error),
    /// A storage error.
    #[error(transparent)]
    Storage(#[from] dynql_storage::Error),
    /// An execution error.
    #[error(transparent)]
    Exec(#[from] dynql_exec::Error),
    /// An invalid request detected by the facade (attributes, rows).
    #[error("{0}")]
    Invalid(String),
    /// dynql does not do this (for this kind of table, or in this context); the message says
    /// what to do instead.
    #[error("{0}")]
    Unsupported(String),
    /// A node has no attribute of the name asked for (`get PATH/@NAME`); the message names
    /// the node, the attribute and, where it helps, the names there are.
    #[error("{0}")]
    NoSuchAttribute(String),
    /// An import or export file could not be read or written; the cause is the source.
    #[error("cannot {action} {path}")]
    File {
        /// What failed: `read`, `write`, `list`, …
        action: &'static str,
        /// The file or directory.
        path: String,
        #[source]
        source: Box<dyn std::error::Error + Send + Sync>,
    },
    /// A result row has no column of the name asked for ([`Row::get`](crate::Row::get)).
    #[error("No such column {column:?} in the result (its columns: {})", columns.join(", "))]
    NoSuchColumn {
        /// The name asked for.
        column: String,
        /// The result's column names, in order.
        columns: Vec<String>,
    },
    /// A result value cannot be read as the Rust type asked for ([`Row::get`](crate::Row::get),
    /// [`SelectResult::deserialize`](crate::SelectResult::deserialize)), or a row lacks what a
    /// struct needs.
    #[error("{}", row_value_message(*row, column.as_deref(), message))]
    RowValue {
        /// The row's number in the result (from 0), when known.
        row: Option<usize>,
        /// The column, when the error is about one value.
        column: Option<String>,
        /// What is wrong: the type found and the type asked for.
        message: String,
    },
    /// The blocking API could not start its runtime ([`crate::blocking::Database::open`]).
    #[error("cannot start the runtime of dynql's blocking API")]
    Runtime(#[source] std::io::Error),
    /// An import found more rejected input rows than allowed; nothing was written.
    #[error("{}", crate::io::rejected_message(*count, *allowed, examples))]
    Rejected {
        /// Rejected rows in all (the whole input was checked).
        count: u64,
        /// The most that was allowed ([`crate::io::ImportOptions::max_rejected`]).
        allowed: u64,
        /// The first [`crate::io::REJECTED_EXAMPLES`] of them.
        examples: Vec<crate::io::RejectedRow>,
    },
}

impl Error {
    /// The kind of the error.
    pub fn kind(&self) -> ErrorKind {
        match self {
            Error::Core(_)
            | Error::Query(_)
            | Error::Invalid(_)
            | Error::NoSuchAttribute(_)
            | Error::NoSuchColumn { .. }
            | Error::RowValue { .. }
            | Error::Rejected { .. } => ErrorKind::InvalidInput,
            Error::Unsupported(_) => ErrorKind::Unsupported,
            Error::Runtime(_) => ErrorKind::Unavailable,
            Error::File { source, .. } => file_kind(source.as_ref()),
            Error::Storage(e) => storage_kind(e),
            Error::Exec(e) => match e {
                dynql_exec::Error::Query(_) | dynql_exec::Error::InvalidOption { .. } => {
                    ErrorKind::InvalidInput
                }
                dynql_exec::Error::Storage(s) => storage_kind(s),
                dynql_exec::Error::DataFusion(_) if e.is_invalid_query() => ErrorKind::InvalidInput,
                dynql_exec::Error::DataFusion(_) => ErrorKind::Internal,
                dynql_exec::Error::LimitExceeded { .. } => ErrorKind::LimitExceeded,
            },
        }
    }

    /// The query-language error this is (syntax, binding, evaluation), if it is one.
    pub fn as_query_error(&self) -> Option<&dynql_ql::Error> {
        match self {
            Error::Query(q) | Error::Exec(dynql_exec::Error::Query(q)) => Some(q),
            _ => None,
        }
    }

    /// What to write instead, for a query written with another language's habit
    /// (`count(*)`), if any.
    pub fn query_hint(&self) -> Option<&str> {
        self.as_query_error().and_then(dynql_ql::Error::hint)
    }

    /// The byte span of the query text the error is about, if any.
    pub fn query_span(&self) -> Option<dynql_ql::Span> {
        self.as_query_error().and_then(dynql_ql::Error::span)
    }
}

/// "Row #3, column \"v\": …", with the parts that are known.
fn row_value_message(row: Option<usize>, column: Option<&str>, message: &str) -> String {
    match (row, column) {
        (Some(r), Some(c)) => format!("Row #{r}, column {c:?}: {message}"),
        (Some(r), None) => format!("Row #{r}: {message}"),
        (None, Some(c)) => format!("Column {c:?}: {message}"),
        (None, None) => message.to_string(),
    }
}

/// A missing or unreadable input file is the caller's to fix; other I/O failures may pass.
fn file_kind(source: &(dyn std::error::Error + 'static)) -> ErrorKind {
    use std::io::ErrorKind as Io;
    match source.downcast_ref::<std::io::Error>().map(|e| e.kind()) {
        Some(Io::NotFound | Io::PermissionDenied | Io::AlreadyExists | Io::InvalidInput) | None => {
            ErrorKind::InvalidInput
        }
        Some(_) => ErrorKind::Unavailable,
    }
}

fn storage_kind(e: &dynql_storage::Error) -> ErrorKind {
    use dynql_storage::Error as S;
    match e {
        S::Conflict { .. }
        | S::Contended(_)
        | S::NoSuchTransaction { .. }
        | S::TransactionSealed { .. }
        | S::LockConflict(_)
        | S::CompactedSinceStart { .. } => ErrorKind::Conflict,
        S::InvalidUrl { .. }
        | S::NoSuchTable { .. }
        | S::NoSuchNode { .. }
        | S::Invalid(_)
        | S::InvalidRow { .. }
        | S::WrongState { .. }
        | S::SnapshotTooOld { .. }
        | S::Core(_) => ErrorKind::InvalidInput,
        S::Unsupported(_) => ErrorKind::Unsupported,
        S::AlreadyExists { .. } => ErrorKind::AlreadyExists,
        S::Corrupt { .. } | S::Damaged { .. } | S::Parquet(_) => ErrorKind::Corrupt,
        S::ObjectStore(_) | S::LogTruncated { .. } | S::Spill { .. } => ErrorKind::Unavailable,
        S::Arrow(_) | S::Internal(_) => ErrorKind::Internal,
    }
}
