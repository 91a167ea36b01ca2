//! Bulk writes: many batches of rows of a sorted table, each written as its own chunk, made
//! visible by one commit.
//!
//! ```text
//! start_bulk_write ──▶ stage_bulk_rows (batch 1 → chunk) ──▶ … ──▶ commit_bulk_write
//!                       nothing visible yet; a failure leaves only unreferenced chunks
//! ```
//!
//! A plain [`Store::write_rows`] of N rows encodes them all at once; a bulk write keeps one
//! batch in memory at a time and still commits atomically (a single log record names every
//! chunk), so a failed import leaves the table exactly as it was. Unreferenced chunks of an
//! abandoned bulk write are removed by garbage collection like any other.

use crate::error::{Error, Result};
use crate::log::Action;
use crate::mvcc::WriteKind;
use crate::store::{RowValues, Store};
use crate::timestamp::Timestamp;

/// A bulk write in progress (see the module docs): the chunks and inline rows staged so far.
#[derive(Debug)]
pub struct BulkWrite {
    path: String,
    table_id: String,
    /// The schema the rows are checked against; the commit re-checks it.
    schema: dynql_core::TableSchema,
    actions: Vec<Action>,
    rows: u64,
}

impl BulkWrite {
    /// The table written.
    pub fn path(&self) -> &str {
        &self.path
    }

    /// Rows staged so far.
    pub fn staged_rows(&self) -> u64 {
        self.rows
    }
}

impl Store {
    /// Starts a bulk overwrite of the sorted table at `path`.
    ///
    /// # Errors
    /// No such table, an ordered table (append its rows with [`Store::append_rows`]), or a
    /// table that is not writable (unmounted, frozen, static).
    pub async fn start_bulk_write(&self, path: &str) -> Result<BulkWrite> {
        let entry = self.table(path).await?;
        crate::tablets::check_writable(&entry, path)?;
        if !entry.schema.is_sorted() {
            return Err(Error::Invalid(format!(
                "bulk writes by key are not supported for ordered table {path}: append its rows"
            )));
        }
        Ok(BulkWrite {
            path: path.to_string(),
            table_id: entry.id,
            schema: entry.schema,
            actions: Vec::new(),
            rows: 0,
        })
    }

    /// Stages one batch of full rows (schema order, computed columns filled) in overwrite
    /// mode: a large batch becomes a chunk now, a small one travels inline in the commit.
    ///
    /// Batches of one bulk write must not share keys: all their versions get one commit
    /// timestamp, so two versions of a key would be indistinguishable.
    ///
    /// # Errors
    /// Malformed rows (wrong width, missing key), the table replaced since the write started,
    /// or a failed chunk upload.
    pub async fn stage_bulk_rows(&self, bulk: &mut BulkWrite, rows: Vec<RowValues>) -> Result<()> {
        if rows.is_empty() {
            return Ok(());
        }
        let (action, schema) = self
            .prepare_write(&bulk.path, WriteKind::Overwrite, false, &rows, true)
            .await?;
        match &action {
            Action::WriteRows { .. } if schema != bulk.schema => {
                return Err(crate::validate::schema_changed(&bulk.path))
            }
            Action::WriteRows { table_id, .. } if *table_id == bulk.table_id => {}
            _ => {
                return Err(Error::NoSuchTable {
                    path: bulk.path.clone(),
                })
            }
        }
        bulk.rows += rows.len() as u64;
        bulk.actions.push(action);
        Ok(())
    }

    /// Commits every staged batch in one log record and returns its timestamp (the last
    /// commit's when nothing was staged).
    ///
    /// # Errors
    /// The table was removed or replaced since the write started; the store failed.
    pub async fn commit_bulk_write(&self, bulk: BulkWrite) -> Result<Timestamp> {
        if bulk.actions.is_empty() {
            return self.last_committed_timestamp().await;
        }
        let BulkWrite {
            path,
            table_id,
            schema,
            actions,
            ..
        } = bulk;
        self.commit(|state| {
            crate::validate::writable_table(state, &path, &table_id, &schema)?;
            Ok(actions.clone())
        })
        .await
    }
}

#[cfg(test)]
mod tests {
    use dynql_core::{TableSchema, Value};

    use super::*;
    use crate::store::TableOptions;

    fn row(k: i64, v: &str) -> RowValues {
        vec![Some(Value::Int64(k)), Some(Value::string(v))]
    }

    #[tokio::test]
    async fn batches_become_visible_together_in_one_commit() {
        let store = Store::open("memory://").unwrap();
        let schema =
            TableSchema::parse("[{name=k;type=int64;sort_order=ascending};{name=v;type=string}]")
                .unwrap();
        store
            .create_table("//t", schema, TableOptions::default())
            .await
            .unwrap();
        let mut bulk = store.start_bulk_write("//t").await.unwrap();
        // One batch large enough to become a chunk, one small enough to travel inline.
        let big: Vec<RowValues> = (0..crate::store::LARGE_WRITE_ROWS as i64)
            .map(|k| row(k, "big"))
            .collect();
        store.stage_bulk_rows(&mut bulk, big).await.unwrap();
        store
            .stage_bulk_rows(&mut bulk, vec![row(-1, "small")])
            .await
            .unwrap();
        assert_eq!(
            bulk.staged_rows(),
            crate::store::LARGE_WRITE_ROWS as u64 + 1
        );
        let before = store
            .read_rows("//t", Timestamp::SYNC_LAST_COMMITTED)
            .await
            .unwrap();
        assert!(before.is_empty(), "nothing is visible before the commit");
        store.commit_bulk_write(bulk).await.unwrap();
        let after = store
            .read_rows("//t", Timestamp::SYNC_LAST_COMMITTED)
            .await
            .unwrap();
        assert_eq!(after.len(), crate::store::LARGE_WRITE_ROWS + 1);
        assert_eq!(after[0], vec![Value::Int64(-1), Value::string("small")]);
    }

    #[tokio::test]
    async fn a_replaced_table_fails_the_commit() {
        let store = Store::open("memory://").unwrap();
        let schema = || {
            TableSchema::parse("[{name=k;type=int64;sort_order=ascending};{name=v;type=string}]")
                .unwrap()
        };
        store
            .create_table("//t", schema(), TableOptions::default())
            .await
            .unwrap();
        let mut bulk = store.start_bulk_write("//t").await.unwrap();
        store
            .stage_bulk_rows(&mut bulk, vec![row(1, "a")])
            .await
            .unwrap();
        store.remove_table("//t").await.unwrap();
        store
            .create_table("//t", schema(), TableOptions::default())
            .await
            .unwrap();
        let err = store.commit_bulk_write(bulk).await.unwrap_err();
        assert!(matches!(err, Error::NoSuchTable { .. }), "{err}");
        let rows = store
            .read_rows("//t", Timestamp::SYNC_LAST_COMMITTED)
            .await
            .unwrap();
        assert!(rows.is_empty());
    }
}
