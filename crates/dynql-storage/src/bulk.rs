//! Bulk writes: many batches of rows of a sorted table, each written as key-sorted chunks
//! split at the table's pivot keys (as a flush writes them), made visible by one commit.
//!
//! ```text
//! start_bulk_write ──▶ stage_bulk_rows (batch 1 → chunks) ──▶ … ──▶ commit_bulk_write
//!                       nothing visible yet; a failure leaves only unreferenced chunks
//! ```
//!
//! A bulk write keeps one batch in memory at a time and still commits atomically: a single
//! log record ([`Action::BulkInsert`]) names every chunk, so a failed import leaves the table
//! exactly as it was, and unreferenced chunks of an abandoned bulk write are removed by
//! garbage collection like any other.
//!
//! The chunks are written before the commit timestamp exists, so their files hold placeholder
//! timestamps and the commit gives every version its own ([`ChunkRef::commit_timestamp`]): on
//! replay the chunks simply join the table's chunk list. Opening the store afterwards reads
//! none of their rows, and a query reads them as it reads flushed chunks (their row groups
//! are clean: one overwrite per key), not through the dynamic store in memory.

use arrow::record_batch::RecordBatch;

use dynql_core::arrow_convert::batch_to_rows;
use dynql_core::ValueType;

use crate::bulk_chunk::{check_sorted_rows, write_bulk_chunk};
use crate::chunk::{new_chunk_path, ChunkRef};
use crate::error::{Error, Result};
use crate::key_search::partition_keys_from;
use crate::log::Action;
use crate::mvcc::{RowDelta, WriteKind};
use crate::scan::tablet_ranges;
use crate::store::{RowValues, Store, LARGE_WRITE_ROWS};
use crate::timestamp::Timestamp;

/// A bulk write in progress (see the module docs): the chunks and inline rows staged so far.
#[derive(Debug)]
pub struct BulkWrite {
    path: String,
    table_id: String,
    /// The schema the rows are checked against; the commit re-checks it.
    schema: dynql_core::TableSchema,
    /// The pivot keys the chunks were split at; the commit re-checks them.
    pivot_keys: Vec<String>,
    /// Small batches, which travel inline in the commit record.
    inline: Vec<Action>,
    chunks: Vec<ChunkRef>,
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

    /// The chunks staged so far.
    pub fn staged_chunks(&self) -> &[ChunkRef] {
        &self.chunks
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
            pivot_keys: entry.pivot_keys,
            inline: Vec::new(),
            chunks: Vec::new(),
            rows: 0,
        })
    }

    /// Stages one batch of full rows (schema order, computed columns filled) in overwrite
    /// mode: a large batch becomes chunks now (sorted by key, one per tablet it touches), a
    /// small one travels inline in the commit.
    ///
    /// Batches of one bulk write must not share keys, nor may one batch hold a key twice: all
    /// their versions get one commit timestamp, so two versions of a key would be
    /// indistinguishable. A large batch holding a key twice is refused (a small one is
    /// written as `write_rows` writes it: the later row wins).
    ///
    /// # Errors
    /// Malformed rows (wrong width, missing key), a key given twice, the table replaced or
    /// resharded since the write started, or a failed chunk upload.
    pub async fn stage_bulk_rows(&self, bulk: &mut BulkWrite, rows: Vec<RowValues>) -> Result<()> {
        if rows.is_empty() {
            return Ok(());
        }
        let entry = self.bulk_table(bulk).await?;
        let count = rows.len() as u64;
        if rows.len() < LARGE_WRITE_ROWS {
            let (action, _) = self
                .prepare_write(&bulk.path, WriteKind::Overwrite, false, &rows, false)
                .await?;
            bulk.inline.push(action);
        } else {
            crate::validate::row_shapes(&entry.schema, &bulk.path, &rows)?;
            let key_count = entry.schema.key_column_count();
            let mut versions: Vec<RowDelta> = rows
                .into_iter()
                .map(|values| RowDelta {
                    // A placeholder: the commit gives every version its timestamp.
                    timestamp: Timestamp::MIN,
                    kind: WriteKind::Overwrite,
                    values,
                    aggregate: false,
                })
                .collect();
            versions.sort_by(|a, b| crate::chunk::compare_version_keys(a, b, key_count));
            if let Some(w) = versions
                .windows(2)
                .find(|w| crate::chunk::compare_version_keys(&w[0], &w[1], key_count).is_eq())
            {
                return Err(Error::Invalid(format!(
                    "a bulk write to {} gives key {} twice",
                    bulk.path,
                    crate::chunk::key_text(&crate::chunk::version_key(&w[0], key_count))
                )));
            }
            let refs: Vec<&RowDelta> = versions.iter().collect();
            let chunks = crate::flush::write_tablet_chunks(self, &entry, "bulk", &refs).await?;
            bulk.chunks.extend(chunks);
        }
        bulk.rows += count;
        Ok(())
    }

    /// Stages key-sorted rows given as a record batch in the table's Arrow schema
    /// ([`dynql_core::arrow_convert::table_arrow_schema`], computed columns filled): like
    /// [`Store::stage_bulk_rows`], but a large batch is encoded straight from Arrow, one chunk
    /// per tablet it touches.
    ///
    /// # Errors
    /// Rows in another schema, a null key, keys not strictly increasing (sorted, each once),
    /// the table replaced or resharded since the write started, or a failed chunk upload.
    pub async fn stage_bulk_batch(&self, bulk: &mut BulkWrite, rows: &RecordBatch) -> Result<()> {
        let n = rows.num_rows();
        if n == 0 {
            return Ok(());
        }
        let entry = self.bulk_table(bulk).await?;
        let schema = &entry.schema;
        check_sorted_rows(schema, &bulk.path, rows)?;
        if n < LARGE_WRITE_ROWS {
            let types: Vec<ValueType> = schema.columns().iter().map(|c| c.wire_type()).collect();
            let values = batch_to_rows(rows, &types)
                .into_iter()
                .map(|r| r.into_iter().map(Some).collect())
                .collect();
            return self.stage_bulk_rows(bulk, values).await;
        }
        let key_count = schema.key_column_count();
        let key_types: Vec<ValueType> =
            schema.key_columns().iter().map(|c| c.wire_type()).collect();
        let keys = &rows.columns()[..key_count];
        let tablets = tablet_ranges(&entry)?;
        let mut start = 0;
        for (i, tablet) in tablets.iter().enumerate() {
            // Rows before `start` lie in earlier tablets, so before this one's upper bound.
            let end = if i + 1 == tablets.len() {
                n
            } else {
                partition_keys_from(keys, &key_types, start, &tablet.upper).max(start)
            };
            if end > start {
                let path = new_chunk_path(&entry.id, "bulk");
                let part = rows.slice(start, end - start);
                if let Some(c) =
                    write_bulk_chunk(self.objects.as_ref(), path, schema, &part).await?
                {
                    bulk.chunks.push(c);
                }
            }
            start = end;
        }
        bulk.rows += n as u64;
        Ok(())
    }

    /// The table of a bulk write, checked to be the one it started on: same id, schema and
    /// pivot keys, still writable.
    async fn bulk_table(&self, bulk: &BulkWrite) -> Result<crate::store::TableEntry> {
        let entry = self.table(&bulk.path).await?;
        if entry.id != bulk.table_id {
            return Err(Error::NoSuchTable {
                path: bulk.path.clone(),
            });
        }
        if entry.schema != bulk.schema {
            return Err(crate::validate::schema_changed(&bulk.path));
        }
        if entry.pivot_keys != bulk.pivot_keys {
            return Err(resharded(&bulk.path));
        }
        crate::tablets::check_writable(&entry, &bulk.path)?;
        Ok(entry)
    }

    /// Commits every staged batch in one log record and returns its timestamp (the last
    /// commit's when nothing was staged).
    ///
    /// # Errors
    /// The table was removed, replaced or resharded since the write started; the store
    /// failed.
    pub async fn commit_bulk_write(&self, bulk: BulkWrite) -> Result<Timestamp> {
        if bulk.inline.is_empty() && bulk.chunks.is_empty() {
            return self.last_committed_timestamp().await;
        }
        let BulkWrite {
            path,
            table_id,
            schema,
            pivot_keys,
            inline,
            chunks,
            ..
        } = bulk;
        let mut actions = inline;
        if !chunks.is_empty() {
            actions.push(Action::BulkInsert {
                path: path.clone(),
                table_id: table_id.clone(),
                chunks,
            });
        }
        self.commit(|state| {
            let (entry, _) = crate::validate::writable_table(state, &path, &table_id, &schema)?;
            if entry.pivot_keys != pivot_keys {
                return Err(resharded(&path));
            }
            Ok(actions.clone())
        })
        .await
    }
}

/// The error of a bulk write whose table was resharded while it wrote: its chunks were split
/// at the old pivot keys.
fn resharded(path: &str) -> Error {
    Error::Invalid(format!(
        "{path} was resharded during the bulk write; run it again"
    ))
}

#[cfg(test)]
mod tests {
    use dynql_core::{TableSchema, Value};

    use super::*;
    use crate::store::{TableOptions, LARGE_WRITE_ROWS};

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

    fn schema() -> TableSchema {
        TableSchema::parse("[{name=k;type=int64;sort_order=ascending};{name=v;type=string}]")
            .unwrap()
    }

    /// A table of two tablets (pivot 5000).
    async fn two_tablets(store: &Store) {
        let options = TableOptions {
            pivot_keys: Some(vec![vec![], vec![Value::Int64(5000)]]),
            ..TableOptions::default()
        };
        store.create_table("//t", schema(), options).await.unwrap();
    }

    /// Rows `keys` with value `v`, in the order given.
    fn rows(keys: impl Iterator<Item = i64>, v: &str) -> Vec<RowValues> {
        keys.map(|k| row(k, v)).collect()
    }

    /// The table's rows as of the last commit.
    async fn latest(store: &Store) -> Vec<Vec<Value>> {
        store
            .read_rows("//t", Timestamp::SYNC_LAST_COMMITTED)
            .await
            .unwrap()
    }

    /// Key `k`'s value in `rows` (as read).
    fn value_of(rows: &[Vec<Value>], k: i64) -> Option<Value> {
        rows.iter()
            .find(|r| r[0] == Value::Int64(k))
            .map(|r| r[1].clone())
    }

    #[tokio::test]
    async fn a_bulk_insert_is_chunks_at_its_commit_timestamp_and_opening_reads_none_of_them() {
        let dir = tempfile::tempdir().unwrap();
        let url = format!("file://{}", dir.path().display());
        let store = Store::open(&url).unwrap();
        two_tablets(&store).await;
        // Earlier rows, some of whose keys the bulk write overwrites.
        let before = store
            .write_rows(
                "//t",
                WriteKind::Overwrite,
                false,
                rows([3, 7000].into_iter(), "old"),
            )
            .await
            .unwrap();
        let n = LARGE_WRITE_ROWS as i64;
        let mut bulk = store.start_bulk_write("//t").await.unwrap();
        // Unsorted input, across both tablets, in two batches.
        store
            .stage_bulk_rows(&mut bulk, rows((0..n).rev().map(|k| k * 2), "bulk"))
            .await
            .unwrap();
        store
            .stage_bulk_rows(&mut bulk, rows((0..n).map(|k| k * 2 + 1), "bulk"))
            .await
            .unwrap();
        // Nothing visible, and the chunks are split at the pivot key.
        assert_eq!(
            store
                .read_rows("//t", Timestamp::SYNC_LAST_COMMITTED)
                .await
                .unwrap()
                .len(),
            2
        );
        assert!(
            bulk.staged_chunks().len() >= 4,
            "{:?}",
            bulk.staged_chunks().len()
        );
        for c in bulk.staged_chunks() {
            let lower = c.min_key[0] >= Value::Int64(5000);
            let upper = c.max_key[0] >= Value::Int64(5000);
            assert_eq!(lower, upper, "a chunk straddles the pivot: {c:?}");
        }
        let committed = store.commit_bulk_write(bulk).await.unwrap();
        assert!(committed > before);

        // `in_memory`: keys in the dynamic store (the two earlier rows, until a flush).
        let check = |store: Store, in_memory: usize| async move {
            let state = store.refresh().await.unwrap();
            let (_, data) = state.table_data("//t").unwrap();
            // The bulk rows are chunks stamped with the commit timestamp, never in memory.
            assert_eq!(data.sorted.len(), in_memory);
            let bulk: Vec<_> = data
                .chunks
                .iter()
                .filter(|c| c.path.contains("/bulk-"))
                .collect();
            assert!(bulk.len() >= 4);
            assert!(bulk.iter().all(|c| c.commit_timestamp == Some(committed.0)
                && c.min_timestamp == committed.0
                && c.max_timestamp == committed.0));
            let now = store
                .read_rows("//t", Timestamp::SYNC_LAST_COMMITTED)
                .await
                .unwrap();
            // Keys 0..2n, the earlier rows' among them.
            assert_eq!(now.len(), 2 * LARGE_WRITE_ROWS);
            assert_eq!(value_of(&now, 3), Some(Value::string("bulk")));
            assert_eq!(value_of(&now, 7000), Some(Value::string("bulk")));
            assert_eq!(value_of(&now, 2 * n - 1), Some(Value::string("bulk")));
            // A read before the commit sees the table as it was.
            let then = store.read_rows("//t", before).await.unwrap();
            assert_eq!(then.len(), 2);
            assert_eq!(value_of(&then, 7000), Some(Value::string("old")));
            let found = store
                .lookup_rows("//t", &[vec![Value::Int64(3)]], before)
                .await
                .unwrap();
            assert_eq!(
                found[0].as_ref().map(|r| r[1].clone()),
                Some(Value::string("old"))
            );
        };
        check(store.clone(), 2).await;
        // A fresh process opening the store reads the log, not the rows.
        check(Store::open(&url).unwrap(), 2).await;
        // And so does one opening it from a checkpoint, which flushed the two earlier rows
        // into a chunk listed after the (newer) bulk chunks.
        store.checkpoint().await.unwrap();
        check(Store::open(&url).unwrap(), 0).await;

        // Later writes win over the bulk rows, through compaction too.
        store
            .write_rows("//t", WriteKind::Overwrite, false, vec![row(3, "new")])
            .await
            .unwrap();
        store
            .write_rows(
                "//t",
                WriteKind::Delete,
                false,
                vec![vec![Some(Value::Int64(4)), None]],
            )
            .await
            .unwrap();
        for _ in 0..2 {
            let now = store
                .read_rows("//t", Timestamp::SYNC_LAST_COMMITTED)
                .await
                .unwrap();
            assert_eq!(now.len(), 2 * LARGE_WRITE_ROWS - 1);
            assert_eq!(value_of(&now, 3), Some(Value::string("new")));
            assert_eq!(value_of(&now, 4), None);
            assert_eq!(value_of(&now, 5), Some(Value::string("bulk")));
            store.compact("//t").await.unwrap();
        }
    }

    #[tokio::test]
    async fn a_sorted_arrow_batch_becomes_clean_chunks_and_a_bad_one_is_refused() {
        use arrow::array::{ArrayRef, BinaryArray, Int64Array};
        use std::sync::Arc;
        let store = Store::open("memory://").unwrap();
        two_tablets(&store).await;
        let batch = |keys: &[i64]| {
            let columns: Vec<ArrayRef> = vec![
                Arc::new(Int64Array::from(keys.to_vec())),
                Arc::new(BinaryArray::from_iter_values(
                    keys.iter().map(|k| format!("v{k}").into_bytes()),
                )),
            ];
            RecordBatch::try_new(
                dynql_core::arrow_convert::table_arrow_schema(&schema()),
                columns,
            )
            .unwrap()
        };
        let mut bulk = store.start_bulk_write("//t").await.unwrap();
        let unsorted = store
            .stage_bulk_batch(&mut bulk, &batch(&[2, 1]))
            .await
            .unwrap_err();
        assert!(
            unsorted
                .to_string()
                .contains("sorted by key, each key once: [1;] follows [2;]"),
            "{unsorted}"
        );
        let twice = store
            .stage_bulk_batch(&mut bulk, &batch(&[1, 1]))
            .await
            .unwrap_err();
        assert!(twice.to_string().contains("[1;] follows [1;]"), "{twice}");
        let keys_only =
            RecordBatch::try_from_iter([("k", Arc::new(Int64Array::from(vec![1i64])) as ArrayRef)])
                .unwrap();
        let schema_error = store
            .stage_bulk_batch(&mut bulk, &keys_only)
            .await
            .unwrap_err();
        assert!(
            schema_error.to_string().contains("table's Arrow schema"),
            "{schema_error}"
        );
        assert_eq!(bulk.staged_rows(), 0);

        let keys: Vec<i64> = (0..2 * LARGE_WRITE_ROWS as i64).collect();
        store
            .stage_bulk_batch(&mut bulk, &batch(&keys))
            .await
            .unwrap();
        // Split at the pivot 5000: one chunk per tablet.
        assert_eq!(bulk.staged_chunks().len(), 2);
        assert_eq!(bulk.staged_chunks()[1].min_key, vec![Value::Int64(5000)]);
        let committed = store.commit_bulk_write(bulk).await.unwrap();
        let state = store.refresh().await.unwrap();
        let (_, data) = state.table_data("//t").unwrap();
        assert!(data
            .chunks
            .iter()
            .flat_map(|c| &c.row_groups)
            .all(|g| g.clean == crate::chunk::Cleanliness::Since(committed.0)
                && g.nan_columns.as_deref() == Some(&[])));
        let read = store
            .read_rows("//t", Timestamp::SYNC_LAST_COMMITTED)
            .await
            .unwrap();
        let expected: Vec<Vec<Value>> = keys
            .iter()
            .map(|k| vec![Value::Int64(*k), Value::string(format!("v{k}"))])
            .collect();
        assert_eq!(read, expected);
    }

    #[tokio::test]
    async fn a_key_given_twice_is_refused_and_nothing_is_written() {
        let store = Store::open("memory://").unwrap();
        two_tablets(&store).await;
        let mut bulk = store.start_bulk_write("//t").await.unwrap();
        let mut batch = rows(0..LARGE_WRITE_ROWS as i64, "a");
        batch.push(row(17, "b"));
        let err = store.stage_bulk_rows(&mut bulk, batch).await.unwrap_err();
        assert!(err.to_string().contains("gives key [17;] twice"), "{err}");
        assert_eq!(bulk.staged_rows(), 0);
        store.commit_bulk_write(bulk).await.unwrap();
        assert!(latest(&store).await.is_empty());
    }

    #[tokio::test]
    async fn a_reshard_during_the_bulk_write_fails_its_commit() {
        use crate::tablets::{Reshard, TabletCommand};
        let store = Store::open("memory://").unwrap();
        two_tablets(&store).await;
        let mut bulk = store.start_bulk_write("//t").await.unwrap();
        store
            .stage_bulk_rows(&mut bulk, rows(0..LARGE_WRITE_ROWS as i64, "a"))
            .await
            .unwrap();
        store
            .set_tablet_state("//t", TabletCommand::Unmount)
            .await
            .unwrap();
        store
            .reshard_table(
                "//t",
                Reshard::Pivots(vec![vec![], vec![Value::Int64(100)]]),
            )
            .await
            .unwrap();
        store
            .set_tablet_state("//t", TabletCommand::Mount)
            .await
            .unwrap();
        let err = store.commit_bulk_write(bulk).await.unwrap_err();
        assert!(
            err.to_string()
                .contains("was resharded during the bulk write"),
            "{err}"
        );
        assert!(latest(&store).await.is_empty());
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
