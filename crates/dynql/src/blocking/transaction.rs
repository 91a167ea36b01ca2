//! [`Transaction`]: a tablet transaction, blocking.

use std::sync::Arc;

use dynql_core::Yson;
use dynql_exec::SelectOptions;
use dynql_storage::{LockMode, Timestamp};

use super::batches::SelectBatches;
use super::runtime::Runtime;
use crate::database::{LookupOptions, WriteOptions};
use crate::error::Result;
use crate::results::{LookupResult, SelectResult};

/// A tablet transaction of a blocking [`Database`](super::Database): the async
/// [`crate::Transaction`] (snapshot isolation at its start timestamp, writes staged until
/// [`Transaction::commit`], row-lock conflicts detected at commit), each method blocking.
///
/// Dropping it neither commits nor aborts: an uncommitted transaction expires after its
/// timeout, as in YT.
#[derive(Clone)]
pub struct Transaction {
    tx: crate::Transaction,
    runtime: Arc<Runtime>,
}

impl std::fmt::Debug for Transaction {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("blocking::Transaction")
            .field("id", &self.tx.id())
            .finish()
    }
}

impl Transaction {
    pub(super) fn new(tx: crate::Transaction, runtime: Arc<Runtime>) -> Transaction {
        Transaction { tx, runtime }
    }

    /// The async transaction inside.
    pub fn as_async(&self) -> &crate::Transaction {
        &self.tx
    }

    /// The transaction id.
    pub fn id(&self) -> &str {
        self.tx.id()
    }

    /// The snapshot the transaction reads.
    pub fn start_timestamp(&self) -> Timestamp {
        self.tx.start_timestamp()
    }

    /// [`crate::Transaction::insert_rows`].
    pub fn insert_rows(&self, path: &str, rows: &[Yson], options: WriteOptions) -> Result<()> {
        self.runtime.run(self.tx.insert_rows(path, rows, options))
    }

    /// [`crate::Transaction::delete_rows`].
    pub fn delete_rows(&self, path: &str, keys: &[Yson]) -> Result<()> {
        self.runtime.run(self.tx.delete_rows(path, keys))
    }

    /// [`crate::Transaction::lock_rows`].
    pub fn lock_rows(
        &self,
        path: &str,
        keys: &[Yson],
        mode: LockMode,
        groups: Vec<String>,
    ) -> Result<()> {
        self.runtime
            .run(self.tx.lock_rows(path, keys, mode, groups))
    }

    /// [`crate::Transaction::select_rows`]: at the start timestamp.
    pub fn select_rows(&self, query: &str, options: &SelectOptions) -> Result<SelectResult> {
        self.runtime.run(self.tx.select_rows(query, options))
    }

    /// [`crate::Transaction::select_stream`] as an iterator of record batches.
    pub fn select_batches(&self, query: &str, options: &SelectOptions) -> Result<SelectBatches> {
        let stream = self.runtime.run(self.tx.select_stream(query, options))?;
        Ok(SelectBatches::new(stream, self.runtime.clone()))
    }

    /// [`crate::Transaction::lookup_rows`]: at the start timestamp.
    pub fn lookup_rows(
        &self,
        path: &str,
        keys: &[Yson],
        options: &LookupOptions,
    ) -> Result<LookupResult> {
        self.runtime.run(self.tx.lookup_rows(path, keys, options))
    }

    /// [`crate::Transaction::ping`].
    pub fn ping(&self) -> Result<()> {
        self.runtime.run(self.tx.ping())
    }

    /// [`crate::Transaction::commit`]: returns the commit timestamp.
    ///
    /// # Errors
    /// A row-lock conflict (the transaction is aborted), an expired transaction.
    pub fn commit(&self) -> Result<Timestamp> {
        self.runtime.run(self.tx.commit())
    }

    /// [`crate::Transaction::abort`].
    pub fn abort(&self) -> Result<()> {
        self.runtime.run(self.tx.abort())
    }
}
