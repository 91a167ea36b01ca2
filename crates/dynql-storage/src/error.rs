//! Storage errors.

/// Result of storage operations.
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// A storage error.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The store URL is malformed or of an unsupported scheme.
    #[error("Invalid store URL {url:?}: {message}")]
    InvalidUrl { url: String, message: String },
    /// No table at this path.
    #[error("Error resolving path {path}: no such table")]
    NoSuchTable { path: String },
    /// A node lock cannot be taken (`lock`, or one a change implies).
    #[error("{0}")]
    LockConflict(String),
    /// No node at this path (nor a value inside a document).
    #[error("Error resolving path {path}: node does not exist")]
    NoSuchNode { path: String },
    /// A node exists where a new one was to be created (or copied, or moved); the message
    /// says which.
    #[error("{message}")]
    AlreadyExists { path: String, message: String },
    /// A transaction's write or lock conflicts with a commit made after it started.
    #[error("Row lock conflict due to concurrent write: table {path}, key {key}; the transaction is aborted, retry it")]
    Conflict { path: String, key: String },
    /// The transaction's commit (or abort) has started: it takes no more writes.
    #[error("Transaction {id} is {state}: it takes no more writes; this write was not applied")]
    TransactionSealed { id: String, state: &'static str },
    /// Compaction after the transaction started may have removed the versions its conflict
    /// check needs (it started before the compaction could see it).
    #[error("Transaction conflict: table {path} was compacted past this transaction's start, so a concurrent write cannot be ruled out; the transaction is aborted, retry it")]
    CompactedSinceStart { path: String },
    /// The transaction does not exist: never started, committed, aborted or expired.
    #[error("No such transaction {id}: it has expired, was aborted or was already committed")]
    NoSuchTransaction { id: String },
    /// The request is invalid (bad path, bad attributes, bad arguments).
    #[error("{0}")]
    Invalid(String),
    /// Row `row` (counted from 0 in the request) of a write to `path` does not fit the
    /// table; `column` names the column to blame where one is.
    #[error("row #{row} for {path}: {message}")]
    InvalidRow {
        path: String,
        row: u64,
        column: Option<String>,
        message: String,
    },
    /// The table's state refuses the operation (`state`: `frozen`, `unmounted`, `static`,
    /// ...): the message says which command changes it.
    #[error("{message}")]
    WrongState {
        path: String,
        state: String,
        message: String,
    },
    /// dynql does not do this, for this kind of table or in this context; the message says
    /// what to do instead.
    #[error("{0}")]
    Unsupported(String),
    /// The operation lost its race with concurrent writers every time it tried; nothing was
    /// changed, and running it again normally succeeds.
    #[error("{0}")]
    Contended(String),
    /// An invariant of dynql did not hold, or a thread of its own failed: a bug.
    #[error("internal error (a bug in dynql): {0}")]
    Internal(String),
    /// The table's state is unknown: a log record or chunk it depends on is damaged.
    #[error("Table {path} is damaged: {reason}. Reading and writing it fail until it is repaired; `dynql check` lists the damage (README, \"Recovering from damage\")")]
    Damaged { path: String, reason: String },
    /// A stored file does not decode.
    #[error("Corrupt data in {path}: {message}")]
    Corrupt { path: String, message: String },
    /// The log records a reader needs were collected after a newer checkpoint; reload it.
    #[error("The commit log starts at record {first}, after record {expected} this reader needs")]
    LogTruncated { expected: u64, first: u64 },
    /// A snapshot at a log position the store no longer keeps what it needs for (see
    /// [`crate::Store::snapshot_at`]).
    #[error("Snapshot too old: log position {seq} is before {oldest}, the oldest this store can still be read at (the log before its older kept checkpoint was collected); read at a newer position")]
    SnapshotTooOld { seq: u64, oldest: u64 },
    /// The object store failed.
    #[error("Object store error: {0}")]
    ObjectStore(#[from] object_store::Error),
    /// Parquet encoding or decoding failed.
    #[error("Parquet error: {0}")]
    Parquet(#[from] parquet::errors::ParquetError),
    /// Arrow failed.
    #[error("Arrow error: {0}")]
    Arrow(#[from] arrow::error::ArrowError),
    /// A bulk write's sort could not write or read its spill file (in `TMPDIR`).
    #[error("Bulk write sort spill file error (temporary directory {dir})", dir = std::env::temp_dir().display())]
    Spill {
        /// The failed file operation.
        source: std::io::Error,
    },
    /// A schema or value error.
    #[error(transparent)]
    Core(#[from] dynql_core::Error),
}

impl Error {
    /// The table at `path` is `state` (`frozen`, `unmounted`, `static`, ...), which refuses
    /// what was asked; `message` says so and what changes the state.
    pub(crate) fn wrong_state(path: &str, state: &str, message: String) -> Error {
        Error::WrongState {
            path: path.into(),
            state: state.into(),
            message,
        }
    }
}
