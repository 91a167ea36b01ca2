//! Storage of dynql tables on an object store.
//!
//! Every change is a record of the [commit log](log) (catalog changes and versioned row
//! deltas); the [`Store`] replays the log and resolves versions at a [`Timestamp`]
//! ([`mvcc`]). [Chunks](chunk) encode rows as Parquet for flush and compaction.

pub mod checkpoint;
pub mod chunk;
pub mod compaction;
pub mod conflict;
pub mod error;
pub mod log;
pub mod mvcc;
pub mod store;
pub mod timestamp;
pub mod transaction;

pub use compaction::Retention;
pub use conflict::LockMode;
pub use error::{Error, Result};
pub use mvcc::WriteKind;
pub use store::{validate_path, RowValues, Store, TableEntry, TableOptions};
pub use timestamp::Timestamp;
pub use transaction::TransactionInfo;
