//! dynql: an embeddable engine for YTsaurus-style dynamic tables and YT QL.
//!
//! Open a store with [`Database::open`], create tables with YT schemas, write rows, and run
//! `select_rows` queries with YT's semantics. See the crate-level example on [`Database`]
//! and `examples/quickstart.rs`. Bulk import from Parquet, CSV or JSON lines and export to
//! Parquet are in [`io`].

mod attributes;
mod cypress;
mod database;
mod error;
mod insert_columns;
pub mod io;
mod master;
mod results;
mod sql;
mod table_attributes;
mod table_rows;
mod transaction;
mod ypath;

pub use attributes::ATTRIBUTES;
pub use cypress::{CopyOptions, CreateOptions, NODE_TYPES};
pub use database::{Database, LookupOptions, WriteOptions, DEFAULT_TRANSACTION_TIMEOUT_MS};
pub use dynql_core::json_rows;
pub use dynql_core::yson;
pub use dynql_core::{ColumnSchema, LogicalType, TableSchema, Value, ValueType, Yson};
pub use dynql_exec::{Explanation, FileTables, SelectOptions, Statistics};
pub use dynql_storage::cypress::{LockOptions, TakenLock};
pub use dynql_storage::{
    CheckReport, Damage, LockMode, LookupStatistics, RepairReport, Reshard, TabletCommand,
    TabletState, Timestamp,
};
pub use error::{Error, ErrorKind, Result};
pub use master::MasterTransactionOptions;
pub use results::{LookupResult, SelectResult, SelectStream};
pub use sql::{SqlOptions, SqlOutcome, SqlSession};
pub use table_attributes::{parse_document, parse_pivot_keys};
pub use table_rows::{ReadTableOptions, TableRows, TableWriter, WriteTableOptions};
pub use transaction::Transaction;
pub use ypath::RichPath;

/// The Arrow crate dynql's record batches come from, for callers that read them.
pub use arrow;

/// The YT QL layer, for callers that parse or bind queries themselves.
pub use dynql_ql as ql;
