//! A blocking API: [`blocking::Database`](Database) has the methods of the async
//! [`crate::Database`] as plain functions, for programs that are not async (as
//! `reqwest::blocking` or `duckdb` are used).
//!
//! It owns a multi-threaded tokio runtime (shared by its clones and its transactions) and
//! runs each call of the async API on it to completion; nothing is done twice, so results,
//! errors and semantics are the async API's.
//!
//! Calling it from async code works too, and blocks the calling thread for the call's
//! duration as any blocking call does: the call is then driven from a helper thread, since
//! tokio forbids blocking on a runtime inside another. Async code should rather use
//! [`crate::Database`] ([`Database::as_async`] gives the one inside).
//!
//! # Example
//! ```
//! use dynql::blocking::Database;
//! use dynql::SelectOptions;
//! let db = Database::open("memory://")?;
//! db.create_table_from_text(
//!     "//t",
//!     "{dynamic=%true; schema=[{name=k;type=int64;sort_order=ascending};{name=v;type=string}]}",
//! )?;
//! db.insert_json_rows("//t", &[serde_json::json!({"k": 1, "v": "one"})])?;
//! let result = db.select_rows("v from [//t] where k = 1", &SelectOptions::default())?;
//! assert_eq!(result.row(0).unwrap().get::<String>("v")?, "one");
//! for batch in db.select_batches("k, v from [//t]", &SelectOptions::default())? {
//!     assert_eq!(batch?.num_rows(), 1);
//! }
//! # Ok::<(), dynql::Error>(())
//! ```

mod batches;
mod cypress;
mod runtime;
mod transaction;

pub use batches::SelectBatches;
pub use transaction::Transaction;

use std::sync::Arc;

use arrow::record_batch::RecordBatch;
use datafusion::catalog::TableProvider;
use dynql_core::Yson;
use dynql_exec::{Explanation, FileTables, SelectOptions};
use dynql_storage::{TabletCommand, Timestamp};

use crate::database::{LookupOptions, WriteOptions};
use crate::error::Result;
use crate::results::{LookupResult, SelectResult};
use runtime::Runtime;

/// A dynql store opened for blocking calls; see the [module](self) and, for each method,
/// the async method of [`crate::Database`] it runs.
///
/// Clones share the store and the runtime; the runtime stops when the last clone (and the
/// last [`Transaction`] or [`SelectBatches`] made from one) is dropped.
#[derive(Clone)]
pub struct Database {
    db: crate::Database,
    runtime: Arc<Runtime>,
}

impl std::fmt::Debug for Database {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("blocking::Database")
            .field("url", &self.db.store().url())
            .finish()
    }
}

impl Database {
    /// Opens (or creates) the store at `url` ([`crate::Database::open`]) and starts the
    /// runtime.
    ///
    /// # Errors
    /// A bad URL; the runtime cannot start ([`crate::Error::Runtime`]).
    pub fn open(url: &str) -> Result<Database> {
        Database::from_async(crate::Database::open(url)?)
    }

    /// Opens the store at `url` with a chunk cache of `bytes`
    /// ([`crate::Database::open_with_chunk_cache`]).
    pub fn open_with_chunk_cache(url: &str, bytes: usize) -> Result<Database> {
        Database::from_async(crate::Database::open_with_chunk_cache(url, bytes)?)
    }

    /// Blocking calls over an opened async database (the same store, a runtime of its own).
    ///
    /// # Errors
    /// The runtime cannot start.
    pub fn from_async(db: crate::Database) -> Result<Database> {
        Ok(Database {
            db,
            runtime: Arc::new(Runtime::new()?),
        })
    }

    /// The async database inside, for async code and for what only it offers.
    pub fn as_async(&self) -> &crate::Database {
        &self.db
    }

    /// [`crate::Database::create_table_from_text`].
    pub fn create_table_from_text(&self, path: &str, attributes: &str) -> Result<()> {
        self.runtime
            .run(self.db.create_table_from_text(path, attributes))
    }

    /// [`crate::Database::create_table`].
    pub fn create_table(&self, path: &str, attributes: &Yson) -> Result<()> {
        self.runtime.run(self.db.create_table(path, attributes))
    }

    /// [`crate::Database::insert_rows`].
    pub fn insert_rows(&self, path: &str, rows: &[Yson]) -> Result<()> {
        self.runtime.run(self.db.insert_rows(path, rows))
    }

    /// [`crate::Database::insert_rows_with`]: returns the commit timestamp.
    pub fn insert_rows_with(
        &self,
        path: &str,
        rows: &[Yson],
        options: WriteOptions,
    ) -> Result<Timestamp> {
        self.runtime
            .run(self.db.insert_rows_with(path, rows, options))
    }

    /// [`crate::Database::insert_json_rows`].
    pub fn insert_json_rows(&self, path: &str, rows: &[serde_json::Value]) -> Result<()> {
        self.runtime.run(self.db.insert_json_rows(path, rows))
    }

    /// [`crate::Database::insert_batch`].
    pub fn insert_batch(&self, path: &str, batch: &RecordBatch) -> Result<()> {
        self.runtime.run(self.db.insert_batch(path, batch))
    }

    /// [`crate::Database::delete_rows`].
    pub fn delete_rows(&self, path: &str, keys: &[Yson]) -> Result<()> {
        self.runtime.run(self.db.delete_rows(path, keys))
    }

    /// [`crate::Database::lookup_rows`].
    pub fn lookup_rows(
        &self,
        path: &str,
        keys: &[Yson],
        options: &LookupOptions,
    ) -> Result<LookupResult> {
        self.runtime.run(self.db.lookup_rows(path, keys, options))
    }

    /// [`crate::Database::select_rows`].
    pub fn select_rows(&self, query: &str, options: &SelectOptions) -> Result<SelectResult> {
        self.runtime.run(self.db.select_rows(query, options))
    }

    /// [`crate::Database::select_stream`] as an iterator of Arrow record batches, computed
    /// as the iterator is read; dropping it cancels the query.
    pub fn select_batches(&self, query: &str, options: &SelectOptions) -> Result<SelectBatches> {
        let stream = self.runtime.run(self.db.select_stream(query, options))?;
        Ok(SelectBatches::new(stream, self.runtime.clone()))
    }

    /// [`crate::Database::explain_query`].
    pub fn explain_query(&self, query: &str, options: &SelectOptions) -> Result<Explanation> {
        self.runtime.run(self.db.explain_query(query, options))
    }

    /// [`crate::Database::explain_analyze_query`].
    pub fn explain_analyze_query(
        &self,
        query: &str,
        options: &SelectOptions,
    ) -> Result<Explanation> {
        self.runtime
            .run(self.db.explain_analyze_query(query, options))
    }

    /// [`crate::Database::sql`].
    pub fn sql(
        &self,
        query: &str,
        files: &FileTables,
        timestamp: Timestamp,
    ) -> Result<SelectResult> {
        self.runtime.run(self.db.sql(query, files, timestamp))
    }

    /// [`crate::Database::sql_allowing_writes`].
    pub fn sql_allowing_writes(
        &self,
        query: &str,
        files: &FileTables,
        timestamp: Timestamp,
    ) -> Result<SelectResult> {
        self.runtime
            .run(self.db.sql_allowing_writes(query, files, timestamp))
    }

    /// [`crate::Database::table_provider`]: the table as a DataFusion table, pinned now.
    /// Queries over it run on the caller's DataFusion runtime, not this one.
    pub fn table_provider(&self, path: &str) -> Result<Arc<dyn TableProvider>> {
        self.runtime.run(self.db.table_provider(path))
    }

    /// [`crate::Database::table_provider_at`].
    pub fn table_provider_at(
        &self,
        path: &str,
        timestamp: Timestamp,
    ) -> Result<Arc<dyn TableProvider>> {
        self.runtime.run(self.db.table_provider_at(path, timestamp))
    }

    /// [`crate::Database::generate_timestamp`].
    pub fn generate_timestamp(&self) -> Result<Timestamp> {
        self.runtime.run(self.db.generate_timestamp())
    }

    /// [`crate::Database::flush`].
    pub fn flush(&self, path: &str) -> Result<bool> {
        self.runtime.run(self.db.flush(path))
    }

    /// [`crate::Database::compact`].
    pub fn compact(&self, path: &str) -> Result<(usize, usize)> {
        self.runtime.run(self.db.compact(path))
    }

    /// [`crate::Database::trim_rows`].
    pub fn trim_rows(&self, path: &str, tablet_index: usize, trimmed_row_count: u64) -> Result<()> {
        self.runtime
            .run(self.db.trim_rows(path, tablet_index, trimmed_row_count))
    }

    /// [`crate::Database::alter_table`].
    pub fn alter_table(
        &self,
        path: &str,
        schema: Option<&Yson>,
        dynamic: Option<bool>,
    ) -> Result<()> {
        self.runtime.run(self.db.alter_table(path, schema, dynamic))
    }

    /// [`crate::Database::set_tablet_state`]: mount, unmount, freeze, …
    pub fn set_tablet_state(&self, path: &str, command: TabletCommand) -> Result<()> {
        self.runtime.run(self.db.set_tablet_state(path, command))
    }

    /// [`crate::Database::start_transaction`]: a tablet transaction.
    ///
    /// # Example
    /// ```
    /// let db = dynql::blocking::Database::open("memory://")?;
    /// db.create_table_from_text("//t", "{dynamic=%true; schema=[{name=k;type=int64;sort_order=ascending}]}")?;
    /// let tx = db.start_transaction()?;
    /// tx.insert_rows("//t", &[dynql::yson::parse(b"{k=1}").unwrap()], Default::default())?;
    /// assert!(db.select_rows("k from [//t]", &Default::default())?.rows.is_empty());
    /// tx.commit()?;
    /// assert_eq!(db.select_rows("k from [//t]", &Default::default())?.rows.len(), 1);
    /// # Ok::<(), dynql::Error>(())
    /// ```
    pub fn start_transaction(&self) -> Result<Transaction> {
        let tx = self.runtime.run(self.db.start_transaction())?;
        Ok(Transaction::new(tx, self.runtime.clone()))
    }

    /// [`crate::Database::start_transaction_with_timeout`].
    pub fn start_transaction_with_timeout(&self, timeout_ms: u64) -> Result<Transaction> {
        let tx = self
            .runtime
            .run(self.db.start_transaction_with_timeout(timeout_ms))?;
        Ok(Transaction::new(tx, self.runtime.clone()))
    }

    /// [`crate::Database::transaction`]: attaches to a live tablet transaction by id.
    pub fn transaction(&self, id: &str) -> Result<Transaction> {
        let tx = self.runtime.run(self.db.transaction(id))?;
        Ok(Transaction::new(tx, self.runtime.clone()))
    }
}
