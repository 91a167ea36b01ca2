//! [`Database::table_provider`]: a dynamic table as a DataFusion table, for the caller's own
//! `SessionContext`.

use std::sync::Arc;

use datafusion::catalog::TableProvider;
use dynql_exec::provider::StoreTable;
use dynql_storage::Timestamp;

use crate::database::Database;
use crate::error::Result;

impl Database {
    /// The dynamic table at `path` as a DataFusion [`TableProvider`], reading the store as it
    /// is now: the snapshot is pinned by this call, so commits after it are not seen by any
    /// query over the provider (take a new one to see them).
    ///
    /// It is the provider [`Database::sql`] reads tables through: the scan streams the
    /// tablets (one partition each), and the filters DataFusion pushes down fix the key
    /// ranges it reads (YT QL's range inference, computed key columns included), so a filter
    /// on the key reads only the tablets, chunks and row groups that can hold its rows.
    /// Filters are applied again above the scan, so results never depend on what was
    /// pruned. Columns are typed as in SQL: `string` and `utf8` as UTF-8 text (`Utf8View`;
    /// a value that is not valid UTF-8 fails the scan), `any` as YSON bytes.
    ///
    /// Chunks that compaction replaces stay readable for the store's garbage-collection grace
    /// period (an hour by default), which bounds how long a provider stays usable.
    ///
    /// # Example
    /// ```
    /// # tokio::runtime::Runtime::new().unwrap().block_on(async {
    /// use dynql::datafusion::prelude::SessionContext;
    /// let db = dynql::Database::open("memory://")?;
    /// db.create_table_from_text(
    ///     "//t",
    ///     "{dynamic=%true; schema=[{name=k;type=int64;sort_order=ascending};{name=v;type=string}]}",
    /// )
    /// .await?;
    /// db.insert_json_rows("//t", &[serde_json::json!({"k": 1, "v": "one"})]).await?;
    /// let ctx = SessionContext::new();
    /// ctx.register_table("t", db.table_provider("//t").await?).unwrap();
    /// let batches = ctx.sql("SELECT v FROM t WHERE k = 1").await.unwrap().collect().await.unwrap();
    /// assert_eq!(batches.iter().map(|b| b.num_rows()).sum::<usize>(), 1);
    /// # Ok::<(), dynql::Error>(()) }).unwrap();
    /// ```
    ///
    /// # Errors
    /// No table at `path`; a static table; an unmounted table; the store cannot be read.
    pub async fn table_provider(&self, path: &str) -> Result<Arc<dyn TableProvider>> {
        self.table_provider_at(path, Timestamp::SYNC_LAST_COMMITTED)
            .await
    }

    /// [`Database::table_provider`] reading the table as of `timestamp` (a commit timestamp
    /// or one from [`Database::generate_timestamp`]), as `select_rows` does with
    /// [`SelectOptions::timestamp`](crate::SelectOptions::timestamp).
    ///
    /// # Example
    /// ```
    /// # tokio::runtime::Runtime::new().unwrap().block_on(async {
    /// use dynql::datafusion::prelude::SessionContext;
    /// let db = dynql::Database::open("memory://")?;
    /// db.create_table_from_text("//t", "{dynamic=%true; schema=[{name=k;type=int64;sort_order=ascending}]}")
    ///     .await?;
    /// db.insert_json_rows("//t", &[serde_json::json!({"k": 1})]).await?;
    /// let before = db.generate_timestamp().await?;
    /// db.insert_json_rows("//t", &[serde_json::json!({"k": 2})]).await?;
    /// let ctx = SessionContext::new();
    /// ctx.register_table("t", db.table_provider_at("//t", before).await?).unwrap();
    /// let batches = ctx.sql("SELECT k FROM t").await.unwrap().collect().await.unwrap();
    /// assert_eq!(batches.iter().map(|b| b.num_rows()).sum::<usize>(), 1);
    /// # Ok::<(), dynql::Error>(()) }).unwrap();
    /// ```
    ///
    /// # Errors
    /// As [`Database::table_provider`]; a timestamp too far ahead of the clock.
    pub async fn table_provider_at(
        &self,
        path: &str,
        timestamp: Timestamp,
    ) -> Result<Arc<dyn TableProvider>> {
        // A timestamp ahead of every commit could later be overtaken by a commit that draws a
        // smaller one; settling it first keeps every read of the provider the same.
        self.store.settle_read_timestamp(timestamp).await?;
        let snapshot = self.store.snapshot().await?;
        let entry =
            snapshot
                .tables()
                .remove(path)
                .ok_or_else(|| dynql_storage::Error::NoSuchTable {
                    path: path.to_string(),
                })?;
        dynql_storage::tablets::check_readable(&entry, path)?;
        Ok(Arc::new(
            StoreTable::new(snapshot, path, entry, timestamp).with_text_strings(),
        ))
    }
}
