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
use crate::chunk::{new_chunk_path, ROW_GROUP_ROWS};
use crate::error::{Error, Result};
use crate::external_sort::ExternalSorter;
pub use crate::external_sort::DEFAULT_SORT_MEMORY;
use crate::kernel::chunk_ref::ChunkRef;
use crate::kernel::key_search::partition_keys_from;
use crate::kernel::mvcc::WriteKind;
use crate::kernel::timestamp::Timestamp;
use crate::log::Action;
use crate::scan_plan::tablet_ranges;
use crate::store::{RowValues, Store, LARGE_WRITE_ROWS};

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
    entry: crate::kernel::catalog::TableEntry,
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
    /// The rows of a static table becoming dynamic (`alter-table --dynamic true`): the table
    /// is static and unmounted while they are written, and they always go to chunks.
    converting: bool,
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
    /// The chunks written so far, taken out (a conversion commits them itself).
    pub(crate) fn take_chunks(&mut self) -> Vec<ChunkRef> {
        std::mem::take(&mut self.chunks)
    }

    /// The table as the write started: the schema and retention staged rows must fit.
    pub fn table(&self) -> &crate::kernel::catalog::TableEntry {
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

impl BulkWrite {
    /// A bulk write into `entry` at `path` with nothing written yet; `converting`: of a static
    /// table's rows, for its conversion to a dynamic table.
    fn new(path: &str, entry: crate::kernel::catalog::TableEntry, converting: bool) -> BulkWrite {
        BulkWrite {
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
            converting,
        }
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
            return Err(Error::Unsupported(format!(
                "bulk writes by key are not supported for ordered table {path}: append its rows"
            )));
        }
        Ok(BulkWrite::new(path, entry, false))
    }

    /// A bulk write of the rows of the static sorted table `entry` into versioned chunks, for
    /// its conversion to a dynamic table (see [`Store::alter_table`]).
    pub(crate) fn start_conversion(
        &self,
        path: &str,
        entry: &crate::kernel::catalog::TableEntry,
    ) -> BulkWrite {
        BulkWrite::new(path, entry.clone(), true)
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
        let small =
            !bulk.converting && total_rows < LARGE_WRITE_ROWS as u64 && sorter.spilled_runs() == 0;
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
                            new_chunk_path(&entry.id, "bulk", &self.fresh),
                            schema,
                            capacity,
                            entry.chunk_writer.filters(schema.key_column_count()),
                            entry.compression_codec,
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
            .map_err(|_| Error::Internal("the sort's merge thread panicked".into()))?;
        Ok(())
    }

    /// The table of a bulk write, checked to be the one it started on (same id and schema)
    /// and still writable; its chunks are cut at its pivot keys of now.
    async fn bulk_table(&self, bulk: &BulkWrite) -> Result<crate::kernel::catalog::TableEntry> {
        let entry = self.table(&bulk.path).await?;
        if entry.id != bulk.table_id {
            return Err(Error::NoSuchTable {
                path: bulk.path.clone(),
            });
        }
        if entry.schema != bulk.schema {
            return Err(crate::validate::schema_changed(&bulk.path));
        }
        if !bulk.converting {
            crate::tablets::check_writable(&entry, &bulk.path)?;
        }
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
mod tests;
