//! Bulk writes: rows of a sorted table in any order, sorted in bounded memory and written as
//! key-sorted chunks split at the table's pivot keys (as a flush writes them), made visible
//! by one commit.
//!
//! ```text
//! start_bulk_write ─▶ stage_bulk_batch/rows … ─▶ write_bulk_rows ─▶ commit_bulk_write
//!                     external sort: runs       merge ─▶ one chunk   one log record
//!                     spilled to temp files     per tablet (or more)
//!                     nothing visible yet; a failure leaves only unreferenced chunks
//! ```
//!
//! A bulk write holds about [`BulkWrite::set_sort_memory`] bytes of rows, however many it
//! takes (`external_sort.rs`), and still commits atomically: a single log record
//! ([`Action::BulkInsert`]) names every chunk, so a failed import leaves the table exactly
//! as it was, and unreferenced chunks of an abandoned bulk write are removed by garbage
//! collection like any other. Of rows with the same key the last staged wins, as in one
//! `insert_rows`.
//!
//! The chunks are written before the commit timestamp exists, so their files hold placeholder
//! timestamps and the commit gives every version its own ([`ChunkRef::commit_timestamp`]): on
//! replay the chunks simply join the table's chunk list. Opening the store afterwards reads
//! none of their rows, and a query reads them as it reads flushed chunks (their row groups
//! are clean: one overwrite per key), not through the dynamic store in memory.

use arrow::record_batch::RecordBatch;

use dynql_core::arrow_convert::{batch_to_rows, rows_to_batch, table_arrow_schema};
use dynql_core::{Value, ValueType};

use crate::bulk_chunk::{check_bulk_rows, BulkChunkWriter};
use crate::bulk_upload::{ChunkEncoding, ChunkUploads};
use crate::chunk::{new_chunk_path, ChunkRef, ROW_GROUP_ROWS};
use crate::error::{Error, Result};
use crate::external_sort::ExternalSorter;
pub use crate::external_sort::DEFAULT_SORT_MEMORY;
use crate::key_search::partition_keys_from;
use crate::log::Action;
use crate::mvcc::WriteKind;
use crate::scan::tablet_ranges;
use crate::store::{RowValues, Store, LARGE_WRITE_ROWS};
use crate::timestamp::Timestamp;

/// Rows per chunk of a bulk write at most (a tablet with more gets several chunks, their key
/// ranges disjoint): what one chunk's encoder holds in memory.
pub const BULK_CHUNK_ROWS: usize = 64 * ROW_GROUP_ROWS;

/// A bulk write in progress (see the module docs): the rows staged so far, then the chunks
/// written.
pub struct BulkWrite {
    path: String,
    table_id: String,
    /// The schema the rows are checked against; the commit re-checks it.
    schema: dynql_core::TableSchema,
    /// The table as the write started: what staged rows are validated against.
    entry: crate::store::TableEntry,
    sort_memory: usize,
    /// The staged rows; `None` before the first and after they are written.
    sorter: Option<ExternalSorter>,
    /// Set once the staged rows are written (as chunks or inline).
    written: bool,
    /// Small writes, which travel inline in the commit record.
    inline: Vec<Action>,
    chunks: Vec<ChunkRef>,
    rows: u64,
    rows_written: u64,
    folded: u64,
}

impl std::fmt::Debug for BulkWrite {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("BulkWrite")
            .field("path", &self.path)
            .field("rows", &self.rows)
            .field("written", &self.written)
            .field("chunks", &self.chunks.len())
            .finish()
    }
}

impl BulkWrite {
    /// The table as the write started: the schema and retention staged rows must fit.
    pub fn table(&self) -> &crate::store::TableEntry {
        &self.entry
    }

    /// The table written.
    pub fn path(&self) -> &str {
        &self.path
    }

    /// Rows staged so far (before repeated keys are folded).
    pub fn staged_rows(&self) -> u64 {
        self.rows
    }

    /// The chunks written (empty until [`Store::write_bulk_rows`]).
    pub fn staged_chunks(&self) -> &[ChunkRef] {
        &self.chunks
    }

    /// Rows written, one per key (known once [`Store::write_bulk_rows`] ran).
    pub fn rows_written(&self) -> u64 {
        self.rows_written
    }

    /// Rows dropped because a later staged row had the same key (known once
    /// [`Store::write_bulk_rows`] ran).
    pub fn duplicates_folded(&self) -> u64 {
        self.folded
    }

    /// Sets the memory the sort buffers before it spills sorted runs to temporary files
    /// (default [`DEFAULT_SORT_MEMORY`]); only before the first rows are staged.
    pub fn set_sort_memory(&mut self, bytes: usize) {
        if self.sorter.is_none() {
            self.sort_memory = bytes;
        }
    }

    /// Spill files written so far by the sort.
    pub fn spilled_runs(&self) -> usize {
        self.sorter.as_ref().map_or(0, ExternalSorter::spilled_runs)
    }

    fn sorter(&mut self) -> Result<&mut ExternalSorter> {
        if self.written {
            return Err(Error::Invalid(format!(
                "the bulk write to {} has written its rows: it takes no more",
                self.path
            )));
        }
        if self.sorter.is_none() {
            self.sorter = Some(ExternalSorter::new(
                table_arrow_schema(&self.schema),
                self.schema.key_column_count(),
                self.sort_memory,
            )?);
        }
        Ok(self.sorter.as_mut().expect("created above"))
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
            table_id: entry.id.clone(),
            schema: entry.schema.clone(),
            entry,
            sort_memory: DEFAULT_SORT_MEMORY,
            sorter: None,
            written: false,
            inline: Vec::new(),
            chunks: Vec::new(),
            rows: 0,
            rows_written: 0,
            folded: 0,
        })
    }

    /// Stages full rows (schema order, computed columns filled) in overwrite mode, in any
    /// order. Of rows with the same key (in this call or across calls) the last staged wins.
    ///
    /// # Errors
    /// Malformed rows (wrong width, missing key, a value of another type), or rows staged
    /// after [`Store::write_bulk_rows`].
    pub async fn stage_bulk_rows(&self, bulk: &mut BulkWrite, rows: Vec<RowValues>) -> Result<()> {
        if rows.is_empty() {
            return Ok(());
        }
        crate::validate::rows(&bulk.entry, &bulk.path, WriteKind::Overwrite, &rows)?;
        let rows: Vec<Vec<Value>> = rows
            .into_iter()
            .map(|r| r.into_iter().map(|v| v.unwrap_or(Value::Null)).collect())
            .collect();
        let batch = rows_to_batch(&table_arrow_schema(&bulk.schema), &rows)
            .map_err(|e| Error::Invalid(format!("a bulk write to {}: {e}", bulk.path)))?;
        self.stage_bulk_batch(bulk, &batch).await
    }

    /// Stages rows given as a record batch in the table's Arrow schema
    /// ([`dynql_core::arrow_convert::table_arrow_schema`], computed columns filled), in any
    /// order: like [`Store::stage_bulk_rows`] without a detour through values. The rows are
    /// sorted in bounded memory, spilling sorted runs to temporary files
    /// ([`BulkWrite::set_sort_memory`]).
    ///
    /// # Errors
    /// Rows in another schema, a null key, a failed spill file, or rows staged after
    /// [`Store::write_bulk_rows`].
    pub async fn stage_bulk_batch(&self, bulk: &mut BulkWrite, rows: &RecordBatch) -> Result<()> {
        self.stage_bulk_batches(bulk, std::slice::from_ref(rows))
            .await
    }

    /// Stages the parts of one input, in order, as [`Store::stage_bulk_batch`] does each: the
    /// sort buffers them together (a large `insert_rows` converted in parts on several
    /// cores stays one run in memory, as one batch would).
    ///
    /// # Errors
    /// As [`Store::stage_bulk_batch`]; on an error no part is staged.
    pub async fn stage_bulk_batches(
        &self,
        bulk: &mut BulkWrite,
        parts: &[RecordBatch],
    ) -> Result<()> {
        if parts.iter().all(|rows| rows.num_rows() == 0) {
            return Ok(());
        }
        for rows in parts {
            check_bulk_rows(&bulk.schema, &bulk.path, rows)?;
        }
        bulk.sorter()?.push_together(parts.to_vec())?;
        bulk.rows += parts.iter().map(|r| r.num_rows() as u64).sum::<u64>();
        Ok(())
    }

    /// Writes the staged rows, sorted by key, each key once: fewer than [`LARGE_WRITE_ROWS`]
    /// as one inline write, more as chunks split at the table's pivot keys (as a flush writes
    /// them, at most [`BULK_CHUNK_ROWS`] rows each). Nothing is visible until
    /// [`Store::commit_bulk_write`]; `progress` hears the rows written so far.
    ///
    /// # Errors
    /// The table was removed or replaced since the write started; a failed spill
    /// file or chunk upload.
    pub async fn write_bulk_rows(
        &self,
        bulk: &mut BulkWrite,
        progress: &mut (dyn FnMut(u64) + Send),
    ) -> Result<()> {
        if bulk.written {
            return Ok(());
        }
        let entry = self.bulk_table(bulk).await?;
        bulk.written = true;
        let Some(sorter) = bulk.sorter.take() else {
            return Ok(());
        };
        let total_rows = sorter.rows();
        let small = total_rows < LARGE_WRITE_ROWS as u64 && sorter.spilled_runs() == 0;
        let mut sorted = sorter.finish()?;
        let schema = &entry.schema;
        if small {
            let types: Vec<ValueType> = schema.columns().iter().map(|c| c.wire_type()).collect();
            let mut rows: Vec<RowValues> = Vec::new();
            while let Some(batch) = sorted.next_batch()? {
                rows.extend(
                    batch_to_rows(&batch, &types)
                        .into_iter()
                        .map(|r| r.into_iter().map(Some).collect::<RowValues>()),
                );
            }
            bulk.rows_written = rows.len() as u64;
            bulk.folded = sorted.folded();
            let (action, _) = self
                .prepare_write(&bulk.path, WriteKind::Overwrite, false, &rows, false)
                .await?;
            bulk.inline.push(action);
            progress(bulk.rows_written);
            return Ok(());
        }
        let key_count = schema.key_column_count();
        let key_types: Vec<ValueType> =
            schema.key_columns().iter().map(|c| c.wire_type()).collect();
        let tablets = tablet_ranges(&entry);
        // Keys only rise: the tablet being written and its open chunk.
        let mut tablet = 0;
        let mut writer: Option<ChunkEncoding> = None;
        let mut uploads = ChunkUploads::new(self.objects.clone());
        // Merged on a thread, each chunk encoded on one (two at once), uploaded by a task.
        let (mut merged, merging) = sorted.in_background()?;
        while let Some(batch) = merged.recv().await {
            let batch = batch?;
            let n = batch.num_rows();
            let keys = &batch.columns()[..key_count];
            let mut start = 0;
            while start < n {
                // Rows before `start` lie in this tablet or earlier ones.
                let end = if tablet + 1 == tablets.len() {
                    n
                } else {
                    partition_keys_from(keys, &key_types, start, &tablets[tablet].upper).max(start)
                };
                if end == start {
                    // The rest lies beyond this tablet.
                    if let Some(w) = writer.take() {
                        uploads.push(w).await?;
                    }
                    tablet += 1;
                    continue;
                }
                if writer.as_ref().is_some_and(|w| w.rows() >= BULK_CHUNK_ROWS) {
                    uploads.push(writer.take().expect("checked above")).await?;
                }
                let w = match &mut writer {
                    Some(w) => w,
                    None => {
                        // Reserved for the file's buffer, so that it rarely grows (each
                        // growth copies it): a little over the largest chunk's size so far,
                        // or for the first chunk about its rows' size in memory.
                        let capacity = match uploads.largest_bytes() {
                            0 => {
                                let left = total_rows.saturating_sub(bulk.rows_written);
                                let rows = (BULK_CHUNK_ROWS as u64).min(left) as usize;
                                BulkChunkWriter::capacity_for(&batch, rows)?
                            }
                            largest => largest + largest / 8,
                        };
                        writer.insert(uploads.start(BulkChunkWriter::new(
                            new_chunk_path(&entry.id, "bulk"),
                            schema,
                            capacity,
                        )?))
                    }
                };
                let end = end.min(start + BULK_CHUNK_ROWS - w.rows());
                w.write(batch.slice(start, end - start)).await?;
                bulk.rows_written += (end - start) as u64;
                start = end;
            }
            progress(bulk.rows_written);
        }
        if let Some(w) = writer.take() {
            uploads.push(w).await?;
        }
        bulk.chunks.extend(uploads.finish().await?);
        bulk.folded = merging
            .join()
            .map_err(|_| Error::Invalid("internal: the sort's merge thread panicked".into()))?;
        Ok(())
    }

    /// The table of a bulk write, checked to be the one it started on (same id and schema)
    /// and still writable; its chunks are cut at its pivot keys of now.
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
        crate::tablets::check_writable(&entry, &bulk.path)?;
        Ok(entry)
    }

    /// Writes the staged rows (unless [`Store::write_bulk_rows`] did) and commits them in one
    /// log record; returns its timestamp (the last commit's when there was nothing to write).
    ///
    /// # Errors
    /// The table was removed or replaced since the write started; the store
    /// failed.
    pub async fn commit_bulk_write(&self, mut bulk: BulkWrite) -> Result<Timestamp> {
        self.write_bulk_rows(&mut bulk, &mut |_| {}).await?;
        if bulk.inline.is_empty() && bulk.chunks.is_empty() {
            return self.last_committed_timestamp().await;
        }
        let BulkWrite {
            path,
            table_id,
            schema,
            inline,
            chunks,
            ..
        } = bulk;
        let mut actions = inline;
        let added_chunks = !chunks.is_empty();
        if added_chunks {
            actions.push(Action::BulkInsert {
                path: path.clone(),
                table_id: table_id.clone(),
                chunks,
            });
        }
        let timestamp = self
            .commit(|state| {
                // Pivots that changed meanwhile (a split, a reshard) leave the chunks cut at the
                // old ones straddling the new: reads select chunks by their keys, so results
                // are the same, and compaction later cuts them per tablet.
                crate::validate::writable_table(state, &path, &table_id, &schema)?;
                Ok(actions.clone())
            })
            .await?;
        if added_chunks {
            self.compact_after_commit(&path).await;
        }
        Ok(timestamp)
    }
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
        store.write_bulk_rows(&mut bulk, &mut |_| {}).await.unwrap();
        // Nothing visible, and the rows are one chunk per tablet, split at the pivot key.
        assert_eq!(
            store
                .read_rows("//t", Timestamp::SYNC_LAST_COMMITTED)
                .await
                .unwrap()
                .len(),
            2
        );
        assert_eq!(bulk.staged_chunks().len(), 2);
        assert_eq!(bulk.rows_written(), 2 * n as u64);
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
            assert_eq!(bulk.len(), 2);
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
    async fn arrow_batches_in_any_order_become_clean_chunks_and_a_bad_one_is_refused() {
        use arrow::array::{ArrayRef, BinaryArray, Int64Array};
        use std::sync::Arc;
        let store = Store::open("memory://").unwrap();
        two_tablets(&store).await;
        let batch = |keys: &[Option<i64>], v: &str| {
            let columns: Vec<ArrayRef> = vec![
                Arc::new(Int64Array::from(keys.to_vec())),
                Arc::new(BinaryArray::from_iter_values(
                    keys.iter()
                        .map(|k| format!("{v}{}", k.unwrap_or(0)).into_bytes()),
                )),
            ];
            RecordBatch::try_new(
                dynql_core::arrow_convert::table_arrow_schema(&schema()),
                columns,
            )
            .unwrap()
        };
        let mut bulk = store.start_bulk_write("//t").await.unwrap();
        // A budget of a few batches: the sort spills runs and merges them.
        bulk.set_sort_memory(1 << 20);
        let null_key = store
            .stage_bulk_batch(&mut bulk, &batch(&[Some(1), None], "v"))
            .await
            .unwrap_err();
        assert!(
            null_key.to_string().contains("null in key column \"k\""),
            "{null_key}"
        );
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

        // Keys 0..n descending in batches of 1000, then the even ones again: those win.
        let n = 4 * LARGE_WRITE_ROWS as i64;
        let keys: Vec<Option<i64>> = (0..n).rev().map(Some).collect();
        for part in keys.chunks(1000) {
            store
                .stage_bulk_batch(&mut bulk, &batch(part, "old"))
                .await
                .unwrap();
        }
        let evens: Vec<Option<i64>> = (0..n).filter(|k| k % 2 == 0).map(Some).collect();
        store
            .stage_bulk_batch(&mut bulk, &batch(&evens, "new"))
            .await
            .unwrap();
        assert!(bulk.spilled_runs() > 1, "{}", bulk.spilled_runs());
        store.write_bulk_rows(&mut bulk, &mut |_| {}).await.unwrap();
        assert_eq!(bulk.rows_written(), n as u64);
        assert_eq!(bulk.duplicates_folded(), n as u64 / 2);
        // Split at the pivot 5000: one chunk per tablet.
        assert_eq!(bulk.staged_chunks().len(), 2);
        assert_eq!(bulk.staged_chunks()[1].min_key, vec![Value::Int64(5000)]);
        let late = store
            .stage_bulk_batch(&mut bulk, &batch(&[Some(1)], "v"))
            .await
            .unwrap_err();
        assert!(late.to_string().contains("takes no more"), "{late}");
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
        let expected: Vec<Vec<Value>> = (0..n)
            .map(|k| {
                let v = if k % 2 == 0 { "new" } else { "old" };
                vec![Value::Int64(k), Value::string(format!("{v}{k}"))]
            })
            .collect();
        assert_eq!(read, expected);
    }

    #[tokio::test]
    async fn a_key_given_twice_keeps_its_last_row() {
        let store = Store::open("memory://").unwrap();
        two_tablets(&store).await;
        for size in [3, LARGE_WRITE_ROWS as i64] {
            let mut bulk = store.start_bulk_write("//t").await.unwrap();
            let mut batch = rows(0..size, "a");
            batch.push(row(1, "b"));
            store.stage_bulk_rows(&mut bulk, batch).await.unwrap();
            store
                .stage_bulk_rows(&mut bulk, vec![row(2, "c")])
                .await
                .unwrap();
            store.write_bulk_rows(&mut bulk, &mut |_| {}).await.unwrap();
            assert_eq!(bulk.duplicates_folded(), 2);
            store.commit_bulk_write(bulk).await.unwrap();
            let now = latest(&store).await;
            assert_eq!(now.len(), size as usize);
            assert_eq!(value_of(&now, 0), Some(Value::string("a")));
            assert_eq!(value_of(&now, 1), Some(Value::string("b")));
            assert_eq!(value_of(&now, 2), Some(Value::string("c")));
        }
    }

    #[tokio::test]
    async fn a_reshard_during_the_bulk_write_leaves_its_rows_readable() {
        use crate::tablets::{Reshard, TabletCommand};
        let store = Store::open("memory://").unwrap();
        two_tablets(&store).await;
        let mut bulk = store.start_bulk_write("//t").await.unwrap();
        let n = LARGE_WRITE_ROWS as i64;
        store
            .stage_bulk_rows(&mut bulk, rows(0..n, "a"))
            .await
            .unwrap();
        // The chunks are cut at the pivots of the start ([], [5000]); the table is resharded
        // at other pivots before the commit, as a split by size may do at any time.
        store
            .set_tablet_state("//t", TabletCommand::Unmount)
            .await
            .unwrap();
        store
            .reshard_table(
                "//t",
                Reshard::Pivots(vec![
                    vec![],
                    vec![Value::Int64(100)],
                    vec![Value::Int64(7000)],
                ]),
            )
            .await
            .unwrap();
        store
            .set_tablet_state("//t", TabletCommand::Mount)
            .await
            .unwrap();
        store.commit_bulk_write(bulk).await.unwrap();
        let now = latest(&store).await;
        assert_eq!(now.len(), n as usize);
        for (i, row) in now.iter().enumerate() {
            assert_eq!(row[0], Value::Int64(i as i64));
        }
        // A compaction cuts the chunks at the new pivots; the rows stay.
        store.compact("//t").await.unwrap();
        assert_eq!(latest(&store).await, now);
        let state = store.refresh().await.unwrap();
        let (entry, data) = state.table_data("//t").unwrap();
        let tablets = crate::scan::tablet_ranges(entry);
        for chunk in &data.chunks {
            let inside = tablets
                .iter()
                .any(|t| !t.lower.is_after(&chunk.min_key) && t.upper.is_after(&chunk.max_key));
            assert!(
                inside,
                "{:?}..{:?} straddles a pivot",
                chunk.min_key, chunk.max_key
            );
        }
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
