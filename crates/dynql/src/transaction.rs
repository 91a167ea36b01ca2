//! [`Transaction`]: a tablet transaction of a [`Database`].

use dynql_core::Yson;
use dynql_storage::{LockMode, Timestamp, WriteKind};

use crate::database::{Database, LookupOptions, WriteOptions};
use crate::error::Result;
use crate::results::{LookupResult, SelectResult, SelectStream};
use dynql_exec::SelectOptions;

/// A tablet transaction: snapshot isolation at its start timestamp, writes staged until
/// [`Transaction::commit`], row-lock conflicts detected at commit.
///
/// Reads inside see the start timestamp, not the transaction's own writes (as in YT).
#[derive(Clone)]
pub struct Transaction {
    db: Database,
    id: String,
    start: Timestamp,
}

impl Transaction {
    pub(crate) fn new(db: Database, id: String, start: Timestamp) -> Transaction {
        Transaction { db, id, start }
    }

    /// The transaction id (pass it to `--tx`).
    pub fn id(&self) -> &str {
        &self.id
    }

    /// The snapshot the transaction reads.
    pub fn start_timestamp(&self) -> Timestamp {
        self.start
    }

    /// Stages rows (see [`Database::insert_rows_with`]).
    pub async fn insert_rows(
        &self,
        path: &str,
        rows: &[Yson],
        options: WriteOptions,
    ) -> Result<()> {
        let (kind, rows, tablets) = self.db.prepare_insert(path, rows, options).await?;
        if !self.db.store.table(path).await?.schema.is_sorted() {
            let rows = tablets.into_iter().zip(rows).collect();
            return Ok(self.db.store.append_rows_in(&self.id, path, rows).await?);
        }
        Ok(self
            .db
            .store
            .write_rows_in(&self.id, path, kind, options.aggregate, rows)
            .await?)
    }

    /// Stages deletes.
    pub async fn delete_rows(&self, path: &str, keys: &[Yson]) -> Result<()> {
        let keys = self.db.prepare_delete(path, keys).await?;
        Ok(self
            .db
            .store
            .write_rows_in(&self.id, path, WriteKind::Delete, false, keys)
            .await?)
    }

    /// Locks rows until commit; `groups` empty locks every lock group.
    pub async fn lock_rows(
        &self,
        path: &str,
        keys: &[Yson],
        mode: LockMode,
        groups: Vec<String>,
    ) -> Result<()> {
        let keys = self.db.prepare_keys(path, keys).await?;
        Ok(self
            .db
            .store
            .lock_rows_in(&self.id, path, mode, groups, keys)
            .await?)
    }

    /// Runs a query at the start timestamp.
    pub async fn select_rows(&self, query: &str, options: &SelectOptions) -> Result<SelectResult> {
        self.select_stream(query, options)
            .await?
            .into_result()
            .await
    }

    /// Starts a query at the start timestamp, giving its rows as they are computed.
    pub async fn select_stream(
        &self,
        query: &str,
        options: &SelectOptions,
    ) -> Result<SelectStream> {
        self.db.store.transaction(&self.id).await?;
        let options = SelectOptions {
            timestamp: self.start,
            ..options.clone()
        };
        self.db.select_stream(query, &options).await
    }

    /// Looks rows up at the start timestamp.
    pub async fn lookup_rows(
        &self,
        path: &str,
        keys: &[Yson],
        options: &LookupOptions,
    ) -> Result<LookupResult> {
        self.db.store.transaction(&self.id).await?;
        // At the start timestamp, never through the lookup row cache (it serves the latest).
        let options = LookupOptions {
            timestamp: self.start,
            use_lookup_cache: Some(false),
            ..options.clone()
        };
        self.db.lookup_rows(path, keys, &options).await
    }

    /// Extends the deadline.
    pub async fn ping(&self) -> Result<()> {
        Ok(self.db.store.ping_transaction(&self.id).await?)
    }

    /// Commits atomically; returns the commit timestamp.
    ///
    /// # Errors
    /// A row-lock conflict (the transaction is aborted), or an expired transaction.
    pub async fn commit(&self) -> Result<Timestamp> {
        Ok(self.db.store.commit_transaction(&self.id).await?)
    }

    /// Drops the staged writes.
    pub async fn abort(&self) -> Result<()> {
        Ok(self.db.store.abort_transaction(&self.id).await?)
    }
}
