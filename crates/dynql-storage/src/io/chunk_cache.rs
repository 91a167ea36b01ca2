//! A cache of decoded chunks and row groups, shared by the clones of a
//! [`Store`](crate::Store).
//!
//! Chunks are immutable, so a decoded unit is valid for as long as it is cached; what is
//! kept, evicted and admitted is [`crate::io::cache_entries`]'s. Whole chunks serve merges over a whole table
//! (compaction, full reads, lookups); single row groups serve pruned scans, which read them
//! with ranged requests after the file's footer.

use std::sync::{Arc, Mutex};

use arrow::array::ArrayRef;
use arrow::record_batch::RecordBatch;
use futures::TryStreamExt;
use object_store::path::Path as ObjectPath;
use object_store::{ObjectStore, ObjectStoreExt};
use parquet::arrow::arrow_reader::{ArrowReaderMetadata, ArrowReaderOptions};
use parquet::arrow::ProjectionMask;
use parquet::errors::ParquetError;
use parquet::file::metadata::PageIndexPolicy;

use dynql_core::{TableSchema, ValueType};

use crate::chunk::{check_key_order, decode_versioned_chunk, decode_versions};
use crate::error::{Error, Result};
use crate::io::cache_entries::{
    window_rows, CacheAdmission, Cached, CachedColumn, Entries, Part, What, ALL_ROWS, WHOLE,
};
use crate::io::object_file::ObjectFile;
use crate::kernel::chunk_ref::{ChunkRef, Cleanliness};
use crate::kernel::mvcc::RowDelta;
use crate::kernel::page_index::KeySegments;
use crate::kernel::row_group_filter::{column_statistics, ColumnStatistics};
use crate::row_group_decode::{
    few_values_as_dictionary, inspect_raw, one_batch, row_group_reader, views_schema, RawRowGroup,
};

/// Memory the cache may hold by default, estimated (a soft limit: a single larger unit is
/// still cached).
pub const CHUNK_CACHE_BYTES: usize = 2 << 30;

/// Footers kept parsed at most.
const CACHED_FOOTERS: usize = 4096;

/// Row groups whose page-index key segments are kept at most (a few KiB each).
const CACHED_SEGMENTS: usize = 4096;

/// Decoded chunks and row groups by object path, up to a budget of bytes.
pub(crate) struct ChunkCache {
    entries: Mutex<Entries>,
    budget: usize,
    /// Files and row groups of in-memory tables, outside the budget ([`crate::io::in_memory`]).
    pub(crate) in_memory: crate::io::in_memory::InMemoryChunks,
}

impl Default for ChunkCache {
    fn default() -> ChunkCache {
        ChunkCache::with_budget(CHUNK_CACHE_BYTES)
    }
}

impl ChunkCache {
    /// A cache holding about `budget` bytes (a soft limit: a single larger unit is still
    /// cached, unless the budget is 0, which caches nothing).
    pub(crate) fn with_budget(budget: usize) -> ChunkCache {
        ChunkCache::admitting(budget, CacheAdmission::FirstRead)
    }

    /// A cache of about `budget` bytes that lets units in as `admission` says.
    pub(crate) fn admitting(budget: usize, admission: CacheAdmission) -> ChunkCache {
        ChunkCache {
            entries: Mutex::new(Entries {
                admission,
                ..Entries::default()
            }),
            budget,
            in_memory: Default::default(),
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Entries> {
        match self.entries.lock() {
            Ok(g) => g,
            Err(poisoned) => poisoned.into_inner(),
        }
    }

    fn get(&self, path: &str, part: Part) -> Option<Cached> {
        self.lock().get(path, part)
    }

    fn get_versions(&self, path: &str, part: Part) -> Option<Arc<Vec<RowDelta>>> {
        match self.get(path, part) {
            Some(Cached::Versions(v)) => Some(v),
            _ => None,
        }
    }

    fn insert(&self, path: &str, part: Part, value: Cached, read_again: bool) {
        if self.budget > 0 {
            self.lock()
                .admit(self.budget, path, part, value, read_again);
        }
    }

    /// Every version of `chunk`, fetched and decoded on a miss.
    pub(crate) async fn versions(
        &self,
        objects: &dyn ObjectStore,
        schema: &TableSchema,
        chunk: &ChunkRef,
    ) -> Result<Arc<Vec<RowDelta>>> {
        let part = (WHOLE, What::Versions, ALL_ROWS);
        if let Some(v) = self.get_versions(&chunk.path, part) {
            return Ok(v);
        }
        let bytes = match self.in_memory.file(&chunk.path) {
            Some(pinned) => pinned,
            None => crate::io::in_memory::fetch_verified(objects, chunk).await?,
        };
        let mut versions = decode_versioned_chunk(&chunk.path, schema, bytes)?;
        chunk.stamp(&mut versions);
        let versions = Arc::new(versions);
        self.insert(&chunk.path, part, Cached::Versions(versions.clone()), false);
        Ok(versions)
    }

    /// The versions of row group `index` of `chunk` (the whole chunk when it records no row
    /// groups), or of the row window `rows` of it, read with ranged requests on a miss.
    pub(crate) async fn row_group(
        &self,
        objects: &Arc<dyn ObjectStore>,
        schema: &TableSchema,
        chunk: &ChunkRef,
        index: usize,
        rows: Option<std::ops::Range<usize>>,
    ) -> Result<Arc<Vec<RowDelta>>> {
        if chunk.row_groups.is_empty() {
            return self.versions(objects.as_ref(), schema, chunk).await;
        }
        if rows.is_none() {
            if let Some(v) = self.in_memory.row_group(&chunk.path, index) {
                return Ok(v);
            }
        }
        let part = (index, What::Versions, window_rows(&rows));
        if let Some(v) = self.get_versions(&chunk.path, part) {
            return Ok(v);
        }
        let raw = self
            .raw_row_group(objects, schema, chunk, index, rows)
            .await?;
        let mut versions = decode_versions(&chunk.path, schema, &raw.batch)?;
        chunk.stamp(&mut versions);
        let versions = Arc::new(versions);
        check_key_order(&chunk.path, schema, &versions)?;
        self.insert(&chunk.path, part, Cached::Versions(versions.clone()), false);
        Ok(versions)
    }

    /// Since when row group `index` of `chunk` (or its row window `rows`) is clean, if it is
    /// ([`crate::kernel::chunk_ref::clean_since`]): as the chunk records it, or else found by decoding
    /// its version columns (once: the answer is cached).
    pub(crate) async fn clean_since(
        &self,
        objects: &Arc<dyn ObjectStore>,
        schema: &TableSchema,
        chunk: &ChunkRef,
        index: usize,
        rows: Option<std::ops::Range<usize>>,
    ) -> Result<Option<u64>> {
        match chunk.row_groups.get(index).map(|g| g.clean) {
            Some(Cleanliness::Since(t)) => return Ok(Some(t)),
            Some(Cleanliness::Dirty) => return Ok(None),
            Some(Cleanliness::Unknown) | None => {}
        }
        let part = (index, What::Clean, window_rows(&rows));
        if let Some(Cached::Clean(c)) = self.get(&chunk.path, part) {
            return Ok(c);
        }
        let raw = self
            .raw_row_group(objects, schema, chunk, index, rows)
            .await?;
        // A bulk write's chunk is clean from its commit (its file holds placeholders).
        let clean = raw.clean_since.map(|t| chunk.commit_timestamp.unwrap_or(t));
        self.insert(&chunk.path, part, Cached::Clean(clean), false);
        Ok(clean)
    }

    /// Table columns `columns` of row group `index` of `chunk` (or of its row window
    /// `rows`), in that order, byte strings as `BinaryView` when `views` (DataFusion groups
    /// views much faster), or as a dictionary of views where values repeat (see
    /// [`crate::row_group_decode::few_values_as_dictionary`]; `expanded` gives the views).
    /// Only the columns missing from the cache are decoded (Parquet's projection), and each
    /// is cached on its own, so queries reading other columns of the row group share them.
    /// The chunk must record its row groups. `read_again`: the caller will ask for them
    /// again (admitted at once, see [`crate::io::cache_entries`]). Each column comes with
    /// its data weight, weighed once for as long as it is cached.
    #[allow(clippy::too_many_arguments)]
    pub(crate) async fn columns(
        &self,
        objects: &Arc<dyn ObjectStore>,
        chunk: &ChunkRef,
        index: usize,
        rows: Option<std::ops::Range<usize>>,
        columns: &[usize],
        views: bool,
        read_again: bool,
    ) -> Result<Vec<CachedColumn>> {
        let window = window_rows(&rows);
        let part = |c: usize| (index, What::Column { index: c, views }, window);
        // One lock for all the columns (a point read asks for a handful per row group).
        let mut found: Vec<Option<CachedColumn>> = self
            .lock()
            .get_all(&chunk.path, columns.iter().map(|&c| part(c)))
            .into_iter()
            .map(|f| match f {
                Some(Cached::Column(a)) => Some(a),
                _ => None,
            })
            .collect();
        let mut missing: Vec<usize> = columns
            .iter()
            .zip(&found)
            .filter(|(_, f)| f.is_none())
            .map(|(c, _)| *c)
            .collect();
        missing.sort_unstable();
        missing.dedup();
        if !missing.is_empty() {
            let decoded = self
                .decode_columns(objects, chunk, index, rows, &missing, views)
                .await?;
            for (c, array) in missing.into_iter().zip(decoded) {
                let column = CachedColumn::new(array);
                for (slot, _) in found.iter_mut().zip(columns).filter(|(_, &k)| k == c) {
                    *slot = Some(column.clone());
                }
                self.insert(&chunk.path, part(c), Cached::Column(column), read_again);
            }
        }
        found
            .into_iter()
            .zip(columns)
            .map(|(f, c)| {
                f.ok_or_else(|| Error::Corrupt {
                    path: chunk.path.clone(),
                    message: format!("row group {index} has no column {c}"),
                })
            })
            .collect()
    }

    /// Decodes columns `columns` (ascending table column indices) of row group `index` of
    /// `chunk` (or of its row window `rows`), and nothing else.
    async fn decode_columns(
        &self,
        objects: &Arc<dyn ObjectStore>,
        chunk: &ChunkRef,
        index: usize,
        rows: Option<std::ops::Range<usize>>,
        columns: &[usize],
        views: bool,
    ) -> Result<Vec<ArrayRef>> {
        let corrupt = |e: ParquetError| Error::Corrupt {
            path: chunk.path.clone(),
            message: e.to_string(),
        };
        let (footer, reader) = self.footer(objects, chunk).await?;
        let footer = if views {
            let schema = views_schema(footer.schema(), footer.metadata(), index);
            let options = ArrowReaderOptions::new().with_schema(schema);
            ArrowReaderMetadata::try_new(footer.metadata().clone(), options).map_err(corrupt)?
        } else {
            footer
        };
        if let Some(&c) = columns
            .iter()
            .find(|&&c| c >= footer.schema().fields().len())
        {
            return Err(Error::Corrupt {
                path: chunk.path.clone(),
                message: format!("the file has no column {c}"),
            });
        }
        let mask = ProjectionMask::roots(footer.parquet_schema(), columns.iter().copied());
        let (builder, expected) = row_group_reader(chunk, footer, reader, index, &rows)?;
        let stream = builder
            .with_projection(mask)
            .with_batch_size(expected.max(1))
            .build()
            .map_err(corrupt)?;
        let batches: Vec<RecordBatch> = stream.try_collect().await.map_err(corrupt)?;
        let batch = one_batch(&chunk.path, index, batches, expected)?;
        if batch.num_columns() != columns.len() {
            return Err(Error::Corrupt {
                path: chunk.path.clone(),
                message: format!("row group {index} gave the wrong columns"),
            });
        }
        batch
            .columns()
            .iter()
            .map(few_values_as_dictionary)
            .collect()
    }

    /// The statistics of table columns `columns` (of wire types `types`) in row group
    /// `index` of `chunk`, from its footer (see [`crate::kernel::row_group_filter`]).
    pub(crate) async fn statistics(
        &self,
        objects: &Arc<dyn ObjectStore>,
        chunk: &ChunkRef,
        index: usize,
        columns: &[(usize, ValueType)],
    ) -> Result<Vec<ColumnStatistics>> {
        let (footer, _) = self.footer(objects, chunk).await?;
        let metadata = footer.metadata();
        let nan_columns = chunk
            .row_groups
            .get(index)
            .and_then(|g| g.nan_columns.as_deref());
        Ok(match metadata.row_groups().get(index) {
            Some(group) => columns
                .iter()
                .map(|&(c, ty)| column_statistics(group, c, ty, nan_columns))
                .collect(),
            None => columns
                .iter()
                .map(|&(_, ty)| ColumnStatistics::unknown(0, ty))
                .collect(),
        })
    }

    /// The rows of clean row group `index` of `chunk` whose pages `filter` may want (see
    /// [`crate::kernel::page_filter`]), when that is at most half of the row group (`None`: read it
    /// whole). `columns` are the filter's table columns with their types, `known` their
    /// row-group statistics.
    pub(crate) async fn filter_window(
        &self,
        objects: &Arc<dyn ObjectStore>,
        chunk: &ChunkRef,
        index: usize,
        filter: &dyn crate::kernel::row_group_filter::RowGroupFilter,
        columns: &[(usize, ValueType)],
        known: &[ColumnStatistics],
    ) -> Result<Option<std::ops::Range<usize>>> {
        let (footer, _) = self.footer(objects, chunk).await?;
        // A chunk's Parquet columns start with the table's, in schema order.
        let window = crate::kernel::page_filter::filter_window(
            footer.metadata(),
            index,
            filter,
            columns,
            known,
        );
        Ok(worth_a_window(chunk, index, window))
    }

    /// The rows of row group `index` of `chunk` a scan of `range` must read, when the page
    /// index narrows them to at most half of the row group (`None`: read it whole, which is
    /// also what is cached for the next scans). Nothing is fetched when the row group is
    /// already cached whole.
    pub(crate) async fn window(
        &self,
        objects: &Arc<dyn ObjectStore>,
        schema: &TableSchema,
        chunk: &ChunkRef,
        index: usize,
        range: &crate::scan::KeyRange,
    ) -> Result<Option<std::ops::Range<usize>>> {
        if chunk.row_groups.is_empty() {
            return Ok(None);
        }
        let cached = {
            let e = self.lock();
            if e.contains(&chunk.path, &(index, What::Versions, ALL_ROWS)) {
                return Ok(None);
            }
            e.chunks
                .get(&chunk.path)
                .and_then(|c| c.segments.get(&index).cloned())
        };
        let segments = match cached {
            Some(segments) => segments,
            None => {
                let (footer, _) = self.footer(objects, chunk).await?;
                let segments =
                    KeySegments::of_chunk(footer.metadata(), schema, index).map(Arc::new);
                let mut e = self.lock();
                if e.segments >= CACHED_SEGMENTS {
                    e.clear_segments();
                }
                let fresh = e
                    .chunk_mut(&chunk.path)
                    .segments
                    .insert(index, segments.clone())
                    .is_none();
                if fresh {
                    e.segments += 1;
                }
                segments
            }
        };
        let window = segments.and_then(|s| s.window(range));
        Ok(worth_a_window(chunk, index, window))
    }

    /// The parsed footer of `chunk` with its page index, and a reader of the file.
    async fn footer(
        &self,
        objects: &Arc<dyn ObjectStore>,
        chunk: &ChunkRef,
    ) -> Result<(ArrowReaderMetadata, ObjectFile)> {
        let path = ObjectPath::from(chunk.path.as_str());
        let size = match chunk.bytes {
            0 => objects.head(&path).await?.size,
            n => n,
        };
        let mut reader = ObjectFile {
            objects: objects.clone(),
            path,
            size,
            checksum: chunk.checksum,
            tail: None,
            blocks: None,
            pinned: self.in_memory.file(&chunk.path),
        };
        let cached_footer = self.lock().footers.get(&chunk.path).cloned();
        let (footer, blocks) = match cached_footer {
            Some(f) => f,
            None => {
                // Chunks written before pages were indexed have no page index: optional.
                let options =
                    ArrowReaderOptions::new().with_page_index_policy(PageIndexPolicy::Optional);
                let f = ArrowReaderMetadata::load_async(&mut reader, options)
                    .await
                    .map_err(|e| Error::Corrupt {
                        path: chunk.path.clone(),
                        message: e.to_string(),
                    })?;
                // The footer was read through the verifying reader: its block hashes are
                // the ones to check the data against.
                let blocks = match &chunk.checksum {
                    Some(c) => Some(Arc::new(crate::kernel::checksum::footer_block_hashes(
                        &chunk.path,
                        f.metadata(),
                        c,
                    )?)),
                    None => None,
                };
                let mut e = self.lock();
                if e.footers.len() >= CACHED_FOOTERS {
                    e.footers.clear();
                }
                e.footers
                    .insert(chunk.path.clone(), (f.clone(), blocks.clone()));
                (f, blocks)
            }
        };
        reader.blocks = blocks;
        Ok((footer, reader))
    }

    /// Row group `index` of `chunk` (or its row window `rows`) as Parquet decodes it, every
    /// column, read with ranged requests: with a window, only the pages holding its rows. The
    /// chunk must record its row groups. Not cached: what is made of it is.
    pub(crate) async fn raw_row_group(
        &self,
        objects: &Arc<dyn ObjectStore>,
        schema: &TableSchema,
        chunk: &ChunkRef,
        index: usize,
        rows: Option<std::ops::Range<usize>>,
    ) -> Result<RawRowGroup> {
        let corrupt = |e: ParquetError| Error::Corrupt {
            path: chunk.path.clone(),
            message: e.to_string(),
        };
        let (footer, reader) = self.footer(objects, chunk).await?;
        let (builder, expected) = row_group_reader(chunk, footer, reader, index, &rows)?;
        let stream = builder
            .with_batch_size(expected.max(1))
            .build()
            .map_err(corrupt)?;
        let batches: Vec<RecordBatch> = stream.try_collect().await.map_err(corrupt)?;
        let batch = one_batch(&chunk.path, index, batches, expected)?;
        inspect_raw(&chunk.path, schema, batch)
    }
}

/// `window` of row group `index` of `chunk` when it is at most half of the row group: a wider
/// one reads the row group whole, which is also what the next scans then find cached.
fn worth_a_window(
    chunk: &ChunkRef,
    index: usize,
    window: Option<std::ops::Range<usize>>,
) -> Option<std::ops::Range<usize>> {
    let rows = chunk
        .row_groups
        .get(index)
        .map(|g| g.rows as usize)
        .unwrap_or(0);
    window.filter(|w| w.len() * 2 <= rows)
}
#[cfg(test)]
mod tests {
    use super::*;
    use crate::kernel::weight::column_weight;
    use crate::row_group_decode::expanded;
    use arrow::datatypes::DataType;
    use dynql_core::Value;

    const PART: Part = (WHOLE, What::Versions, ALL_ROWS);

    /// A chunk of `//t (k int64 key, v string, n int64, c string)` over keys 0..`rows`
    /// (`v` distinct, `c` one of three values; one version
    /// each, or a second one of every tenth key when `dirty`), in row groups of
    /// [`crate::chunk::ROW_GROUP_ROWS`].
    async fn chunk(
        objects: &Arc<dyn ObjectStore>,
        rows: i64,
        dirty: bool,
    ) -> (TableSchema, ChunkRef) {
        use crate::kernel::mvcc::WriteKind;
        use crate::kernel::timestamp::Timestamp;
        let schema = TableSchema::parse(
            "[{name=k;type=int64;sort_order=ascending};{name=v;type=string};{name=n;type=int64};\
              {name=c;type=string}]",
        )
        .unwrap();
        let mut versions = Vec::new();
        for k in 0..rows {
            let copies = if dirty && k % 10 == 0 { 2 } else { 1 };
            for c in 0..copies {
                versions.push(RowDelta {
                    timestamp: Timestamp(10 + c),
                    kind: WriteKind::Overwrite,
                    values: vec![
                        Some(Value::Int64(k)),
                        Some(Value::String(format!("v{k}-{c}").into_bytes())),
                        Some(Value::Int64(k * 2 + c as i64)),
                        Some(Value::String(format!("c{}", k % 3).into_bytes())),
                    ],
                    aggregate: false,
                });
            }
        }
        let refs: Vec<&RowDelta> = versions.iter().collect();
        let chunk = crate::chunk::write_versioned_chunk(
            objects.as_ref(),
            "c.parquet".into(),
            &schema,
            &refs,
            Vec::new(),
            Default::default(),
        )
        .await
        .unwrap()
        .unwrap();
        (schema, chunk)
    }

    #[tokio::test]
    async fn projected_columns_are_the_raw_columns_and_are_shared_by_later_reads() {
        let objects: Arc<dyn ObjectStore> = Arc::new(object_store::memory::InMemory::new());
        let (schema, chunk) = chunk(&objects, 20_000, false).await;
        assert_eq!(chunk.row_groups.len(), 2);
        assert_eq!(chunk.row_groups[0].clean, Cleanliness::Since(10));
        let cache = ChunkCache::default();
        for window in [None, Some(100..1124)] {
            let raw = cache
                .raw_row_group(&objects, &schema, &chunk, 1, window.clone())
                .await
                .unwrap();
            assert_eq!(raw.clean_since, Some(10));
            for views in [false, true] {
                for columns in [vec![1], vec![2, 0], vec![1, 1, 2], vec![3, 1]] {
                    let got = cache
                        .columns(&objects, &chunk, 1, window.clone(), &columns, views, false)
                        .await
                        .unwrap();
                    for (column, &c) in got.iter().zip(&columns) {
                        let array = &column.array;
                        assert_eq!(column.weight(), column_weight(array.as_ref()));
                        // Few distinct strings stay a dictionary of views; many become views.
                        let expected_type = match (views, c) {
                            (true, 3) => DataType::Dictionary(
                                Box::new(DataType::Int32),
                                Box::new(DataType::BinaryView),
                            ),
                            (true, 1) => DataType::BinaryView,
                            _ => raw.batch.column(c).data_type().clone(),
                        };
                        assert_eq!(array.data_type(), &expected_type, "column {c}");
                        let array = expanded(array).unwrap();
                        let expected = raw.batch.column(c);
                        let expected = arrow::compute::cast(expected, array.data_type()).unwrap();
                        assert_eq!(array.to_data(), expected.to_data(), "column {c}");
                    }
                }
            }
        }
        // Each column is cached on its own: a read of cached columns decodes nothing, even
        // from a store that has lost the file.
        objects
            .delete(&ObjectPath::from("c.parquet"))
            .await
            .unwrap();
        let again = cache
            .columns(&objects, &chunk, 1, None, &[2], true, false)
            .await;
        assert!(again.is_ok());
        assert!(cache
            .columns(&objects, &chunk, 0, None, &[2], true, false)
            .await
            .is_err());
    }

    #[tokio::test]
    async fn cleanliness_comes_from_the_reference_or_else_from_the_version_columns() {
        let objects: Arc<dyn ObjectStore> = Arc::new(object_store::memory::InMemory::new());
        let cache = ChunkCache::default();
        for dirty in [false, true] {
            let (schema, mut chunk) = chunk(&objects, 1000, dirty).await;
            let recorded = cache
                .clean_since(&objects, &schema, &chunk, 0, None)
                .await
                .unwrap();
            assert_eq!(recorded, (!dirty).then_some(10));
            // A chunk written before cleanliness was recorded.
            chunk.row_groups[0].clean = Cleanliness::Unknown;
            chunk.path = format!("old-{dirty}");
            objects
                .copy(
                    &ObjectPath::from("c.parquet"),
                    &ObjectPath::from(chunk.path.as_str()),
                )
                .await
                .unwrap();
            let found = cache
                .clean_since(&objects, &schema, &chunk, 0, None)
                .await
                .unwrap();
            assert_eq!(found, recorded);
        }
    }

    #[test]
    fn a_zero_budget_keeps_nothing_and_a_budget_keeps_what_fits() {
        let none = ChunkCache::with_budget(0);
        none.insert("a", PART, Cached::Versions(Arc::default()), false);
        assert!(none.get_versions("a", PART).is_none());

        let some = ChunkCache::with_budget(1 << 20);
        some.insert("a", PART, Cached::Versions(Arc::default()), false);
        assert!(some.get_versions("a", PART).is_some());
    }
}
