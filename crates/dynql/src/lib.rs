//! dynql: an embeddable engine for YTsaurus-style dynamic tables and YT QL.
//!
//! Open a store with [`Database::open`], create tables with YT schemas, write rows, and run
//! `select_rows` queries with YT's semantics. See the crate-level example on [`Database`]
//! and `examples/quickstart.rs`. Bulk import from Parquet, CSV or JSON lines and export to
//! Parquet are in [`io`].
//!
//! - [`blocking::Database`]: the same API without async, a runtime inside.
//! - [`Row::get`] and [`SelectResult::deserialize`]: result values as Rust types (the YT
//!   type -> Rust type mapping is on [`FromValue`]), rows into structs with serde.
//! - [`Database::table_provider`]: a table as a DataFusion `TableProvider` for the caller's
//!   own `SessionContext`.

mod attributes;
pub mod blocking;
mod cypress;
mod database;
mod error;
mod insert_columns;
pub mod io;
mod master;
mod queries;
mod results;
mod row;
mod sql;
mod table_attributes;
mod table_provider;
mod table_rows;
mod text;
mod transaction;
mod ypath;

pub use attributes::ATTRIBUTES;
pub use cypress::{CopyOptions, CreateOptions, NODE_TYPES};
pub use database::{Database, LookupOptions, WriteOptions, DEFAULT_TRANSACTION_TIMEOUT_MS};
pub use dynql_core::json_rows;
pub use dynql_core::limits;
pub use dynql_core::yson;
pub use dynql_core::{ColumnSchema, LogicalType, TableSchema, Value, ValueType, Yson};
pub use dynql_exec::{Analysis, Explanation, FileTables, SelectOptions, Statistics};
pub use dynql_storage::cypress::{LockOptions, TakenLock};
pub use dynql_storage::progress::{ProgressNow, ReadProgress};
pub use dynql_storage::{
    CacheAdmission, CheckReport, Damage, LockMode, LookupStatistics, RepairReport, Reshard,
    TabletCommand, TabletState, Timestamp,
};
pub use dynql_storage::{Clock, IdGenerator, ManualClock, ProcessIds, SeededIds, SystemClock};
pub use dynql_storage::{Disk, Durability, OsDisk, StoreOptions};
pub use error::{Error, ErrorKind, Result};
pub use master::MasterTransactionOptions;
pub use results::{LookupResult, SelectResult, SelectStream};
pub use row::{FromValue, FromValueError, Row, RowIndex};
pub use sql::{SqlOptions, SqlOutcome, SqlSession, SqlStream};
pub use table_attributes::{parse_document, parse_pivot_keys, parse_value_or_string};
pub use table_rows::{ReadTableOptions, TableRows, TableWriter, WriteTableOptions};
pub use transaction::Transaction;
pub use ypath::RichPath;

/// The Arrow crate dynql's record batches come from, for callers that read them.
pub use arrow;

/// The DataFusion crate dynql plans and runs queries with, the same version, for callers
/// that work with its plans and types.
pub use datafusion;

/// The futures crate, for consuming [`SelectStream`] (a `Stream` of record batches) without
/// depending on a matching version.
///
/// # Example
/// ```
/// # tokio::runtime::Runtime::new().unwrap().block_on(async {
/// use dynql::futures::TryStreamExt;
/// use dynql::{Database, SelectOptions};
/// let db = Database::open("memory://")?;
/// db.create_table_from_text("//t", "{dynamic=%true; schema=[{name=k;type=int64;sort_order=ascending}]}")
///     .await?;
/// let stream = db.select_stream("k from [//t]", &SelectOptions::default()).await?;
/// let batches: Vec<dynql::arrow::record_batch::RecordBatch> = stream.try_collect().await?;
/// assert_eq!(batches.iter().map(|b| b.num_rows()).sum::<usize>(), 0);
/// # Ok::<(), dynql::Error>(()) }).unwrap();
/// ```
pub use futures;

/// The YT QL layer, for callers that parse or bind queries themselves.
pub use dynql_ql as ql;
