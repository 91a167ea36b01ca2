//! A cache of decoded chunks and row groups, shared by the clones of a
//! [`Store`](crate::Store).
//!
//! Chunks are immutable, so a decoded unit is valid for as long as it is cached; eviction is
//! least-recently-used by version count. Whole chunks serve merges over a whole table
//! (compaction, full reads, lookups); single row groups serve pruned scans, which read them
//! with ranged requests after the file's footer.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use arrow::record_batch::RecordBatch;
use bytes::Bytes;
use futures::future::{BoxFuture, FutureExt};
use futures::TryStreamExt;
use object_store::path::Path as ObjectPath;
use object_store::{ObjectStore, ObjectStoreExt};
use parquet::arrow::arrow_reader::{ArrowReaderMetadata, ArrowReaderOptions, RowSelection};
use parquet::arrow::async_reader::{AsyncFileReader, ParquetRecordBatchStreamBuilder};
use parquet::errors::ParquetError;
use parquet::file::metadata::{PageIndexPolicy, ParquetMetaData, ParquetMetaDataReader};

use dynql_core::TableSchema;

use crate::checksum::ChunkChecksum;
use crate::chunk::{check_key_order, decode_versioned_chunk, decode_versions, ChunkRef};
use crate::error::{Error, Result};
use crate::mvcc::RowDelta;
use crate::page_index::KeySegments;

/// Memory the cache may hold by default, estimated (a soft limit: a single larger unit is
/// still cached).
pub const CHUNK_CACHE_BYTES: usize = 2 << 30;

/// Footers kept parsed at most.
const CACHED_FOOTERS: usize = 4096;

/// Row groups whose page-index key segments are kept at most (a few KiB each).
const CACHED_SEGMENTS: usize = 4096;

/// The unit index of a whole chunk.
const WHOLE: usize = usize::MAX;

/// The rows of a unit that is a whole row group (or chunk).
const ALL_ROWS: (usize, usize) = (0, usize::MAX);

/// A cached unit: (chunk path, row group or [`WHOLE`], what: versions, raw, viewed, the row
/// window `[start, end)` of the row group, or [`ALL_ROWS`]).
type Unit = (String, usize, u8, (usize, usize));

/// A row window of a row group, or all of it.
fn window_rows(window: &Option<std::ops::Range<usize>>) -> (usize, usize) {
    window
        .as_ref()
        .map(|w| (w.start, w.end))
        .unwrap_or(ALL_ROWS)
}

const VERSIONS: u8 = 0;
const RAW: u8 = 1;
const VIEWED: u8 = 2;

/// What a cache entry holds.
#[derive(Clone)]
enum Cached {
    Versions(Arc<Vec<RowDelta>>),
    Raw(Arc<RawRowGroup>),
    /// A clean row group's table columns with byte strings as views (for DataFusion).
    Viewed(RecordBatch),
}

impl Cached {
    /// Estimated memory: Arrow's own count for batches; for versions, a row of values plus
    /// the vector headers.
    fn bytes(&self) -> usize {
        match self {
            Cached::Versions(v) => v.iter().map(|d| 64 + d.values.len() * 40).sum(),
            Cached::Raw(r) => r.batch.get_array_memory_size(),
            Cached::Viewed(b) => b.get_array_memory_size(),
        }
    }
}

/// A row group as Parquet decodes it (table columns plus the version columns), with what a
/// columnar scan needs to use it without resolving versions.
pub(crate) struct RawRowGroup {
    pub(crate) batch: RecordBatch,
    /// Every version overwrites a whole row (no update, delete or aggregate delta, every
    /// column written) and keys are unique: the rows are the table's rows for any read at or
    /// after `max_timestamp`.
    pub(crate) clean: bool,
    pub(crate) max_timestamp: u64,
    key_count: usize,
    key_types: Vec<dynql_core::ValueType>,
}

impl RawRowGroup {
    /// The key of row `i`.
    pub(crate) fn key(&self, i: usize) -> Vec<dynql_core::Value> {
        self.key_types
            .iter()
            .enumerate()
            .map(|(c, t)| {
                dynql_core::arrow_convert::array_value(self.batch.column(c).as_ref(), *t, i)
            })
            .collect()
    }

    /// The first row whose key is not before `bound` (rows are in key order).
    pub(crate) fn partition(&self, before: impl Fn(&[dynql_core::Value]) -> bool) -> usize {
        let (mut lo, mut hi) = (0, self.batch.num_rows());
        while lo < hi {
            let mid = lo + (hi - lo) / 2;
            if before(&self.key(mid)) {
                lo = mid + 1;
            } else {
                hi = mid;
            }
        }
        debug_assert!(self.key_count == self.key_types.len());
        lo
    }
}

/// A parsed footer and the block hashes it holds (chunks with a checksum).
type Footer = (ArrowReaderMetadata, Option<Arc<Vec<u64>>>);

#[derive(Default)]
struct Entries {
    units: HashMap<Unit, (Cached, u64)>,
    /// Parsed footers, with the block hashes of chunks that have a checksum.
    footers: HashMap<String, Footer>,
    /// The page index's key segments of row groups (by chunk path and row group), so that
    /// the many key ranges of one scan (an IN list) are each a walk over them.
    segments: HashMap<(String, usize), Option<Arc<KeySegments>>>,
    bytes: usize,
    tick: u64,
}

/// Ranged reads of one chunk file, for Parquet's async reader, verified against the chunk's
/// checksum when it has one (see [`crate::checksum`]): bytes of the tail come from the whole
/// tail, fetched once and verified; bytes of the data region are fetched in whole blocks and
/// each block is verified before any of it is returned.
pub(crate) struct ObjectFile {
    pub(crate) objects: Arc<dyn ObjectStore>,
    pub(crate) path: ObjectPath,
    pub(crate) size: u64,
    /// How to verify what is read; `None` for files that carry no checksum (chunks written
    /// before checksums, Parquet files that are not the store's).
    pub(crate) checksum: Option<ChunkChecksum>,
    /// The verified tail, once fetched.
    pub(crate) tail: Option<Bytes>,
    /// The hashes of the data blocks, from the verified footer.
    pub(crate) blocks: Option<Arc<Vec<u64>>>,
}

impl ObjectFile {
    /// An unverified reader (a file that is not one of the store's chunks).
    pub(crate) fn unverified(objects: Arc<dyn ObjectStore>, path: ObjectPath, size: u64) -> Self {
        ObjectFile {
            objects,
            path,
            size,
            checksum: None,
            tail: None,
            blocks: None,
        }
    }

    fn corrupt(&self, message: String) -> ParquetError {
        ParquetError::External(Box::new(Error::Corrupt {
            path: self.path.to_string(),
            message,
        }))
    }

    /// The verified tail.
    async fn tail(&mut self, c: ChunkChecksum) -> parquet::errors::Result<Bytes> {
        if let Some(t) = &self.tail {
            return Ok(t.clone());
        }
        if c.data_end > self.size {
            return Err(self.corrupt(format!(
                "the file has {} bytes, fewer than its data region of {}",
                self.size, c.data_end
            )));
        }
        let tail = self
            .objects
            .get_range(&self.path, c.data_end..self.size)
            .await
            .map_err(external)?;
        crate::checksum::verify_tail(self.path.as_ref(), &tail, &c)
            .map_err(|e| ParquetError::External(Box::new(e)))?;
        self.tail = Some(tail.clone());
        Ok(tail)
    }

    /// The block hashes, from the verified footer.
    async fn blocks(&mut self, c: ChunkChecksum) -> parquet::errors::Result<Arc<Vec<u64>>> {
        if let Some(b) = &self.blocks {
            return Ok(b.clone());
        }
        let tail = self.tail(c).await?;
        let metadata = ParquetMetaDataReader::new().parse_and_finish(&tail)?;
        let hashes = crate::checksum::footer_block_hashes(self.path.as_ref(), &metadata, &c)
            .map_err(|e| ParquetError::External(Box::new(e)))?;
        let hashes = Arc::new(hashes);
        self.blocks = Some(hashes.clone());
        Ok(hashes)
    }

    /// The whole blocks covering `range` of the data region.
    fn aligned(c: ChunkChecksum, range: &std::ops::Range<u64>) -> std::ops::Range<u64> {
        let block = crate::checksum::BLOCK_BYTES;
        (range.start / block * block)..(range.end.div_ceil(block) * block).min(c.data_end)
    }

    /// Reads `range`, verified.
    async fn read(&mut self, range: std::ops::Range<u64>) -> parquet::errors::Result<Bytes> {
        let Some(c) = self.checksum else {
            return self
                .objects
                .get_range(&self.path, range)
                .await
                .map_err(external);
        };
        if range.end > self.size || range.start > range.end {
            return Err(self.corrupt(format!(
                "a read of bytes {range:?} past the end of the file ({} bytes)",
                self.size
            )));
        }
        if range.start >= c.data_end {
            let tail = self.tail(c).await?;
            let (a, b) = (range.start - c.data_end, range.end - c.data_end);
            return Ok(tail.slice(a as usize..b as usize));
        }
        if range.end > c.data_end {
            let head = Box::pin(self.read(range.start..c.data_end)).await?;
            let tail = Box::pin(self.read(c.data_end..range.end)).await?;
            let mut joined = Vec::with_capacity(head.len() + tail.len());
            joined.extend_from_slice(&head);
            joined.extend_from_slice(&tail);
            return Ok(Bytes::from(joined));
        }
        let blocks = self.blocks(c).await?;
        let aligned = Self::aligned(c, &range);
        let bytes = self
            .objects
            .get_range(&self.path, aligned.clone())
            .await
            .map_err(external)?;
        self.verified_slice(&blocks, aligned, bytes, range)
    }

    /// Verifies the blocks of `aligned` (fetched as `bytes`) and returns `range` of them.
    fn verified_slice(
        &self,
        blocks: &[u64],
        aligned: std::ops::Range<u64>,
        bytes: Bytes,
        range: std::ops::Range<u64>,
    ) -> parquet::errors::Result<Bytes> {
        let first = aligned.start / crate::checksum::BLOCK_BYTES;
        crate::checksum::verify_blocks(self.path.as_ref(), first, &bytes, blocks)
            .map_err(|e| ParquetError::External(Box::new(e)))?;
        let (a, b) = (range.start - aligned.start, range.end - aligned.start);
        Ok(bytes.slice(a as usize..b as usize))
    }
}

fn external(e: object_store::Error) -> ParquetError {
    ParquetError::External(Box::new(e))
}

impl AsyncFileReader for ObjectFile {
    fn get_bytes(
        &mut self,
        range: std::ops::Range<u64>,
    ) -> BoxFuture<'_, parquet::errors::Result<Bytes>> {
        async move { self.read(range).await }.boxed()
    }

    fn get_byte_ranges(
        &mut self,
        ranges: Vec<std::ops::Range<u64>>,
    ) -> BoxFuture<'_, parquet::errors::Result<Vec<Bytes>>> {
        async move {
            let Some(c) = self.checksum else {
                return self
                    .objects
                    .get_ranges(&self.path, &ranges)
                    .await
                    .map_err(external);
            };
            // Ranges inside the data region go out together (the store may coalesce them),
            // widened to whole blocks; the rest one by one.
            if ranges
                .iter()
                .all(|r| r.end <= c.data_end && r.start <= r.end)
            {
                let blocks = self.blocks(c).await?;
                let aligned: Vec<_> = ranges.iter().map(|r| Self::aligned(c, r)).collect();
                let fetched = self
                    .objects
                    .get_ranges(&self.path, &aligned)
                    .await
                    .map_err(external)?;
                return ranges
                    .into_iter()
                    .zip(aligned)
                    .zip(fetched)
                    .map(|((r, a), bytes)| self.verified_slice(&blocks, a, bytes, r))
                    .collect();
            }
            let mut out = Vec::with_capacity(ranges.len());
            for r in ranges {
                out.push(self.read(r).await?);
            }
            Ok(out)
        }
        .boxed()
    }

    fn get_metadata<'a>(
        &'a mut self,
        options: Option<&'a ArrowReaderOptions>,
    ) -> BoxFuture<'a, parquet::errors::Result<Arc<ParquetMetaData>>> {
        async move {
            let size = self.size;
            let metadata = ParquetMetaDataReader::new()
                .with_arrow_reader_options(options)
                .load_and_finish(self, size)
                .await?;
            Ok(Arc::new(metadata))
        }
        .boxed()
    }
}

/// Decoded chunks and row groups by object path, up to a budget of bytes.
pub(crate) struct ChunkCache {
    entries: Mutex<Entries>,
    budget: usize,
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
        ChunkCache {
            entries: Mutex::default(),
            budget,
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Entries> {
        match self.entries.lock() {
            Ok(g) => g,
            Err(poisoned) => poisoned.into_inner(),
        }
    }

    fn get(&self, unit: &Unit) -> Option<Cached> {
        let mut e = self.lock();
        e.tick += 1;
        let tick = e.tick;
        e.units.get_mut(unit).map(|(v, used)| {
            *used = tick;
            v.clone()
        })
    }

    fn get_versions(&self, unit: &Unit) -> Option<Arc<Vec<RowDelta>>> {
        match self.get(unit) {
            Some(Cached::Versions(v)) => Some(v),
            _ => None,
        }
    }

    fn insert(&self, unit: Unit, versions: Cached) {
        let mut e = self.lock();
        if self.budget == 0 {
            return;
        }
        let size = versions.bytes();
        while e.bytes + size > self.budget && !e.units.is_empty() {
            let oldest = e
                .units
                .iter()
                .min_by_key(|(_, (_, used))| *used)
                .map(|(u, _)| u.clone());
            if let Some(u) = oldest {
                if let Some((v, _)) = e.units.remove(&u) {
                    e.bytes -= v.bytes();
                }
            }
        }
        e.tick += 1;
        let tick = e.tick;
        e.bytes += size;
        if let Some((old, _)) = e.units.insert(unit, (versions, tick)) {
            e.bytes -= old.bytes();
        }
    }

    /// Every version of `chunk`, fetched and decoded on a miss.
    pub(crate) async fn versions(
        &self,
        objects: &dyn ObjectStore,
        schema: &TableSchema,
        chunk: &ChunkRef,
    ) -> Result<Arc<Vec<RowDelta>>> {
        let unit = (chunk.path.clone(), WHOLE, VERSIONS, ALL_ROWS);
        if let Some(v) = self.get_versions(&unit) {
            return Ok(v);
        }
        let bytes = objects
            .get(&ObjectPath::from(chunk.path.as_str()))
            .await?
            .bytes()
            .await?;
        if let Some(c) = &chunk.checksum {
            crate::checksum::verify_chunk(&chunk.path, &bytes, c)?;
        }
        let versions = Arc::new(decode_versioned_chunk(&chunk.path, schema, bytes)?);
        self.insert(unit, Cached::Versions(versions.clone()));
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
        let unit = (chunk.path.clone(), index, VERSIONS, window_rows(&rows));
        if let Some(v) = self.get_versions(&unit) {
            return Ok(v);
        }
        let raw = self
            .raw_row_group(objects, schema, chunk, index, rows)
            .await?;
        let versions = Arc::new(decode_versions(&chunk.path, schema, &raw.batch)?);
        check_key_order(&chunk.path, schema, &versions)?;
        self.insert(unit, Cached::Versions(versions.clone()));
        Ok(versions)
    }

    /// The table columns of raw row group `index` of `chunk` (or of its row window `rows`),
    /// byte strings as `BinaryView` (cast once and cached: DataFusion groups views much
    /// faster).
    pub(crate) async fn viewed_row_group(
        &self,
        objects: &Arc<dyn ObjectStore>,
        schema: &TableSchema,
        chunk: &ChunkRef,
        index: usize,
        rows: Option<std::ops::Range<usize>>,
    ) -> Result<RecordBatch> {
        let unit = (chunk.path.clone(), index, VIEWED, window_rows(&rows));
        if let Some(Cached::Viewed(b)) = self.get(&unit) {
            return Ok(b);
        }
        let raw = self
            .raw_row_group(objects, schema, chunk, index, rows)
            .await?;
        let columns: Vec<usize> = (0..schema.columns().len()).collect();
        let viewed = binary_as_views(&raw.batch.project(&columns)?)?;
        self.insert(unit, Cached::Viewed(viewed.clone()));
        Ok(viewed)
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
        {
            let e = self.lock();
            let whole = |what| {
                e.units
                    .contains_key(&(chunk.path.clone(), index, what, ALL_ROWS))
            };
            if whole(RAW) || whole(VERSIONS) {
                return Ok(None);
            }
        }
        let key = (chunk.path.clone(), index);
        let cached = self.lock().segments.get(&key).cloned();
        let segments = match cached {
            Some(segments) => segments,
            None => {
                let (footer, _) = self.footer(objects, chunk).await?;
                let segments =
                    KeySegments::of_chunk(footer.metadata(), schema, index).map(Arc::new);
                let mut e = self.lock();
                if e.segments.len() >= CACHED_SEGMENTS {
                    e.segments.clear();
                }
                e.segments.insert(key, segments.clone());
                segments
            }
        };
        let window = segments.and_then(|s| s.window(range));
        let rows = chunk
            .row_groups
            .get(index)
            .map(|g| g.rows as usize)
            .unwrap_or(0);
        Ok(window.filter(|w| w.len() * 2 <= rows))
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
                    Some(c) => Some(Arc::new(crate::checksum::footer_block_hashes(
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

    /// Row group `index` of `chunk` (or its row window `rows`) as Parquet decodes it, read
    /// with ranged requests on a miss: with a window, only the pages holding its rows. The
    /// chunk must record its row groups.
    pub(crate) async fn raw_row_group(
        &self,
        objects: &Arc<dyn ObjectStore>,
        schema: &TableSchema,
        chunk: &ChunkRef,
        index: usize,
        rows: Option<std::ops::Range<usize>>,
    ) -> Result<Arc<RawRowGroup>> {
        let unit = (chunk.path.clone(), index, RAW, window_rows(&rows));
        if let Some(Cached::Raw(r)) = self.get(&unit) {
            return Ok(r);
        }
        let corrupt = |e: parquet::errors::ParquetError| Error::Corrupt {
            path: chunk.path.clone(),
            message: e.to_string(),
        };
        let (footer, reader) = self.footer(objects, chunk).await?;
        let Some(group) = footer.metadata().row_groups().get(index) else {
            return Err(Error::Corrupt {
                path: chunk.path.clone(),
                message: format!(
                    "row group {index} is missing: the file has {}",
                    footer.metadata().num_row_groups()
                ),
            });
        };
        let total = group.num_rows().max(0) as usize;
        let mut builder = ParquetRecordBatchStreamBuilder::new_with_metadata(reader, footer)
            .with_row_groups(vec![index])
            .with_batch_size(8192);
        let mut expected = total;
        if let Some(w) = &rows {
            if w.end > total || w.start >= w.end {
                return Err(Error::Corrupt {
                    path: chunk.path.clone(),
                    message: format!("rows {w:?} are not in row group {index} of {total} rows"),
                });
            }
            expected = w.len();
            builder = builder.with_row_selection(RowSelection::from_consecutive_ranges(
                std::iter::once(w.clone()),
                total,
            ));
        }
        let stream = builder.build().map_err(corrupt)?;
        let batches: Vec<RecordBatch> = stream.try_collect().await.map_err(corrupt)?;
        let mut batches = batches;
        let batch = if batches.len() == 1 {
            batches.pop()
        } else {
            batches
                .first()
                .map(|b| b.schema())
                .map(|schema| arrow::compute::concat_batches(&schema, &batches))
                .transpose()?
        };
        let batch = batch
            .filter(|b| b.num_rows() == expected)
            .ok_or_else(|| Error::Corrupt {
                path: chunk.path.clone(),
                message: format!("row group {index} does not hold the {expected} rows expected"),
            })?;
        let raw = Arc::new(inspect_raw(&chunk.path, schema, batch)?);
        self.insert(unit, Cached::Raw(raw.clone()));
        Ok(raw)
    }
}

/// Checks a raw row group's version columns: whether it is clean (see [`RawRowGroup`]).
fn inspect_raw(path: &str, schema: &TableSchema, batch: RecordBatch) -> Result<RawRowGroup> {
    use arrow::array::Array;
    let width = schema.columns().len();
    let columns = crate::chunk::version_columns(path, schema, &batch)?;
    let (ts, kinds, aggregates, written) = (
        columns.timestamps,
        columns.kinds,
        columns.aggregates,
        columns.written,
    );
    let max_timestamp = arrow::compute::max(ts).unwrap_or(0);
    let full: Vec<u8> = (0..width.div_ceil(8))
        .map(|b| {
            let bits = (width - b * 8).min(8);
            if bits == 8 {
                0xff
            } else {
                (1u8 << bits) - 1
            }
        })
        .collect();
    let key_count = schema.key_column_count();
    // Double keys are left to the merge: -0.0 and 0.0 are one key in YT but two in Arrow's
    // row format.
    let mut clean = key_count > 0
        && schema
            .key_columns()
            .iter()
            .all(|c| c.wire_type() != dynql_core::ValueType::Double)
        && kinds.values().iter().all(|k| *k == 0)
        && aggregates.true_count() == 0
        && (0..written.len()).all(|r| written.value(r) == full.as_slice());
    if clean {
        // Unique keys: each row's key (in the comparable row format) above the previous one.
        use arrow::row::{RowConverter, SortField};
        let fields = (0..key_count)
            .map(|c| SortField::new(batch.column(c).data_type().clone()))
            .collect();
        let converter = RowConverter::new(fields)?;
        let rows = converter.convert_columns(&batch.columns()[..key_count])?;
        clean = (1..rows.num_rows()).all(|i| rows.row(i - 1) < rows.row(i));
    }
    Ok(RawRowGroup {
        batch,
        clean,
        max_timestamp,
        key_count,
        key_types: schema.key_columns().iter().map(|c| c.wire_type()).collect(),
    })
}

/// `batch` with every `Binary` column cast to `BinaryView`.
pub(crate) fn binary_as_views(batch: &RecordBatch) -> Result<RecordBatch> {
    use arrow::datatypes::{DataType, Field, Schema};
    let schema = batch.schema();
    let mut fields = Vec::with_capacity(schema.fields().len());
    let mut columns = Vec::with_capacity(schema.fields().len());
    for (f, c) in schema.fields().iter().zip(batch.columns()) {
        if f.data_type() == &DataType::Binary {
            fields.push(Field::clone(f).with_data_type(DataType::BinaryView));
            columns.push(arrow::compute::cast(c, &DataType::BinaryView)?);
        } else {
            fields.push(Field::clone(f));
            columns.push(c.clone());
        }
    }
    Ok(RecordBatch::try_new(
        Arc::new(Schema::new(fields)),
        columns,
    )?)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn unit(path: &str) -> Unit {
        (path.to_string(), WHOLE, VERSIONS, ALL_ROWS)
    }

    #[test]
    fn a_zero_budget_keeps_nothing_and_a_budget_keeps_what_fits() {
        let none = ChunkCache::with_budget(0);
        none.insert(unit("a"), Cached::Versions(Arc::default()));
        assert!(none.get_versions(&unit("a")).is_none());

        let some = ChunkCache::with_budget(1 << 20);
        some.insert(unit("a"), Cached::Versions(Arc::default()));
        assert!(some.get_versions(&unit("a")).is_some());
    }
}
