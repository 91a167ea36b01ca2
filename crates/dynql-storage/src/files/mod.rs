//! Parquet files queried as a table: exported chunk files, or any Parquet.
//!
//! A [`FileTable`] is opened from a location with an optional glob
//! (`./exports/*.parquet`, `s3://bucket/dump/**/*.parquet`). Its schema comes from the
//! files: the `dynql.schema` key-value metadata that `dynql export` writes (exact YT types
//! and key), otherwise the Arrow schema, with key columns from the files' declared sort
//! order (`sorting_columns`) or given by the caller. Scans of key ranges skip the row groups
//! whose statistics rule the ranges out, with the same tuple-interval reasoning as page
//! windows (see `page_index.rs`), and return only rows inside the ranges.
//!
//! A key is a promise that rows are sorted by it, file after file in path order. It is
//! checked where it is cheap and sure: row groups' statistics at open, and every row a scan
//! reads; a violation is an error, never a silently wrong answer on the rows read.

mod columns;
mod glob;
mod listing;
mod read_plan;
pub mod types;

use std::sync::Arc;

use arrow::array::ArrayRef;
use arrow::record_batch::RecordBatch;
use futures::{StreamExt, TryStreamExt};
use object_store::{ObjectStore, ObjectStoreExt};
use parquet::arrow::arrow_reader::{ArrowReaderMetadata, ArrowReaderOptions, RowSelection};
use parquet::arrow::async_reader::ParquetRecordBatchStreamBuilder;
use parquet::arrow::ProjectionMask;

use dynql_core::arrow_convert::{array_value, batch_to_rows, table_arrow_schema};
use dynql_core::{compare_rows, ColumnSchema, TableSchema, Value, ValueType};

use crate::error::{Error, Result};
use crate::io::object_file::ObjectFile;
use crate::kernel::row_group_filter::RowGroupFilter;
use crate::scan::{normalize_ranges, FnSink, KeyRange, Piece, PieceSink, ScanStatistics};
use crate::stream::{Prefetch, ScanStream};
use columns::{describe, same_fields, table_schema};
use types::convert;

pub use listing::{list_files, ListedFiles};

/// Key-value metadata holding the YT schema of exported files (YSON text).
pub const SCHEMA_METADATA_KEY: &str = "dynql.schema";

/// Footers read at once while opening many files.
const FOOTER_READS: usize = 8;

/// One Parquet file of a [`FileTable`].
#[derive(Debug, Clone)]
struct FileRef {
    path: object_store::path::Path,
    size: u64,
    metadata: ArrowReaderMetadata,
}

/// Parquet files read as one table.
///
/// ```no_run
/// # async fn example() -> dynql_storage::Result<()> {
/// use dynql_storage::files::FileTable;
/// let logs = FileTable::open("./exports/*.parquet", None).await?;
/// println!("{} files, key {:?}", logs.file_count(), logs.schema().key_columns());
/// let (rows, statistics) = logs.scan_rows(None).await?;
/// # Ok(()) }
/// ```
#[derive(Debug, Clone)]
pub struct FileTable {
    location: String,
    objects: Arc<dyn ObjectStore>,
    files: Vec<FileRef>,
    schema: TableSchema,
    /// Per schema column: its index among the files' top-level fields.
    file_columns: Vec<usize>,
    /// Per schema column: its Parquet leaf column (statistics, page index), if it is one.
    leaves: Vec<Option<usize>>,
    /// Columns of the files that YT QL cannot read, with why ("its Arrow type is …").
    refused: Vec<(String, String)>,
}

impl FileTable {
    /// Opens the files at `location` (a path, `file:///path` or `s3://bucket/path`, with an
    /// optional glob; a directory means every `.parquet` file under it). `key` names the key
    /// columns, overriding what the files declare.
    ///
    /// # Errors
    /// [`Error::Invalid`] when nothing matches, the files' schemas differ, a key column is
    /// missing or not sortable, or the row groups' statistics show the files are not sorted
    /// by the key; [`Error::Corrupt`] for a file that is not Parquet.
    pub async fn open(location: &str, key: Option<&[String]>) -> Result<FileTable> {
        let resolved = glob::resolve(location)?;
        let objects = resolved.objects.clone();
        let mut listed: Vec<object_store::ObjectMeta> = Vec::new();
        match &resolved.pattern {
            Some(pattern) => {
                let mut stream = objects.list(Some(&resolved.prefix));
                while let Some(meta) = stream.next().await {
                    let meta = meta.map_err(|e| listing_error(location, e))?;
                    if pattern.is_match(meta.location.as_ref()) {
                        listed.push(meta);
                    }
                }
            }
            None => match objects.head(&resolved.prefix).await {
                Ok(meta) => listed.push(meta),
                Err(object_store::Error::NotFound { .. }) => {
                    let mut stream = objects.list(Some(&resolved.prefix));
                    while let Some(meta) = stream.next().await {
                        let meta = meta.map_err(|e| listing_error(location, e))?;
                        if meta.location.as_ref().ends_with(".parquet") {
                            listed.push(meta);
                        }
                    }
                }
                Err(e) => return Err(listing_error(location, e)),
            },
        }
        if listed.is_empty() {
            return Err(Error::Invalid(format!(
                "No Parquet files match {location:?}"
            )));
        }
        listed.sort_by(|a, b| a.location.cmp(&b.location));
        // A local file's object path is its absolute path without the leading `/` (a
        // relative location was resolved against the working directory).
        let local = resolved.root.starts_with("file://");
        let files: Vec<FileRef> = futures::stream::iter(listed)
            .map(|meta| {
                let objects = objects.clone();
                async move {
                    let mut reader =
                        ObjectFile::unverified(objects, meta.location.clone(), meta.size);
                    // The page index (when the files have one) narrows point reads to pages.
                    let options = ArrowReaderOptions::new()
                        .with_page_index_policy(parquet::file::metadata::PageIndexPolicy::Optional);
                    let metadata = ArrowReaderMetadata::load_async(&mut reader, options)
                        .await
                        .map_err(|e| {
                            // The path as the user wrote it (object paths drop the leading
                            // `/`), and no "corrupt": most often it is simply not Parquet.
                            let shown = if local {
                                format!("/{}", meta.location)
                            } else {
                                meta.location.to_string()
                            };
                            Error::Invalid(format!(
                                "{shown} is not a Parquet file (or it is damaged): {e}"
                            ))
                        })?;
                    Ok::<_, Error>(FileRef {
                        path: meta.location,
                        size: meta.size,
                        metadata,
                    })
                }
            })
            .buffered(FOOTER_READS)
            .try_collect()
            .await?;
        let first = files[0].metadata.schema().clone();
        for f in &files[1..] {
            if !same_fields(&first, f.metadata.schema()) {
                return Err(Error::Invalid(format!(
                    "The files of {location:?} have different schemas: {} has {}, {} has {}",
                    files[0].path,
                    describe(&first),
                    f.path,
                    describe(f.metadata.schema())
                )));
            }
        }
        let (schema, file_columns, refused) = table_schema(location, &files[0], key)?;
        let descr = files[0]
            .metadata
            .metadata()
            .file_metadata()
            .schema_descr_ptr();
        let leaves = schema
            .columns()
            .iter()
            .map(|c| {
                (0..descr.num_columns()).find(|&l| {
                    let parts = descr.column(l).path().parts().to_vec();
                    parts.len() == 1 && parts[0] == c.name
                })
            })
            .collect();
        let table = FileTable {
            location: location.to_string(),
            objects,
            files,
            schema,
            file_columns,
            leaves,
            refused,
        };
        table.check_row_group_order()?;
        Ok(table)
    }

    /// The table's schema (key columns first).
    pub fn schema(&self) -> &TableSchema {
        &self.schema
    }

    /// The location the table was opened from.
    pub fn location(&self) -> &str {
        &self.location
    }

    /// How many files the location matched.
    pub fn file_count(&self) -> usize {
        self.files.len()
    }

    /// Rows in all files (from their footers).
    pub fn row_count(&self) -> u64 {
        self.files
            .iter()
            .map(|f| f.metadata.metadata().file_metadata().num_rows().max(0) as u64)
            .sum()
    }

    /// Bytes of all files.
    pub fn byte_size(&self) -> u64 {
        self.files.iter().map(|f| f.size).sum()
    }

    /// Columns of the files that YT QL cannot read (types YT has no counterpart for, such
    /// as decimals), each with why: "its Arrow type is …". They are not in
    /// [`FileTable::schema`]; a query naming one, or `*`, fails with that reason.
    pub fn refused_columns(&self) -> &[(String, String)] {
        &self.refused
    }

    /// What a scan of `ranges` reads, without reading it: files as chunks, row groups.
    pub fn explain(&self, ranges: Option<&[KeyRange]>) -> ScanStatistics {
        let plan = self.plan(ranges);
        ScanStatistics {
            tablets: (1, 1),
            chunks: (
                plan.iter().filter(|(_, g)| !g.is_empty()).count(),
                self.files.len(),
            ),
            row_groups: (
                plan.iter().map(|(_, g)| g.len()).sum(),
                self.files
                    .iter()
                    .map(|f| f.metadata.metadata().num_row_groups())
                    .sum(),
            ),
            ..ScanStatistics::default()
        }
    }

    /// The rows with keys in `ranges` (every row when `None` or when the table has no key),
    /// in file order, and what the scan read.
    pub async fn scan_rows(
        &self,
        ranges: Option<&[KeyRange]>,
    ) -> Result<(Vec<Vec<Value>>, ScanStatistics)> {
        let mut rows = Vec::new();
        let statistics = self
            .scan_visit(ranges, &mut |row| {
                rows.push(row);
                Ok(true)
            })
            .await?;
        Ok((rows, statistics))
    }

    /// Hands the rows of [`FileTable::scan_rows`] to `sink` one by one until it returns
    /// `false`; reads no further row group then.
    pub async fn scan_visit(
        &self,
        ranges: Option<&[KeyRange]>,
        sink: &mut (dyn FnMut(Vec<Value>) -> Result<bool> + Send),
    ) -> Result<ScanStatistics> {
        let types = wire_types(self.schema.columns());
        let mut rows = |_, piece| {
            if let Piece::Batch(batch, _) = piece {
                for row in batch_to_rows(&batch, &types) {
                    if !sink(row)? {
                        return Ok(false);
                    }
                }
            }
            Ok(true)
        };
        self.scan_batches_inner(ranges, false, None, None, &mut FnSink(&mut rows))
            .await
    }

    /// The rows of [`FileTable::scan_rows`] as Arrow batches of the table's Arrow schema
    /// (byte strings as `BinaryView` with `views`).
    pub async fn scan_batches(
        &self,
        ranges: Option<&[KeyRange]>,
        views: bool,
    ) -> Result<(Vec<RecordBatch>, ScanStatistics)> {
        let mut batches = Vec::new();
        let statistics = self
            .scan_batches_inner(
                ranges,
                views,
                None,
                None,
                &mut FnSink(&mut |_, piece| {
                    if let Piece::Batch(b, _) = piece {
                        batches.push(b);
                    }
                    Ok(true)
                }),
            )
            .await?;
        Ok((batches, statistics))
    }

    /// The rows of [`FileTable::scan_rows`] as a stream of batches of the table's Arrow
    /// schema (byte strings as `BinaryView` with `views`), read by a task a few batches ahead
    /// that stops soon after the stream is dropped. Must be called inside a Tokio runtime.
    pub fn stream(self: &Arc<Self>, ranges: Option<Vec<KeyRange>>, views: bool) -> ScanStream {
        self.stream_columns(ranges, views, None)
    }

    /// [`FileTable::stream`] of the schema columns `columns` only (all when `None`), in that
    /// order: the files' other columns are not read, so a value there that YT cannot hold (a
    /// date before 1970) does not fail the scan.
    pub fn stream_columns(
        self: &Arc<Self>,
        ranges: Option<Vec<KeyRange>>,
        views: bool,
        columns: Option<Vec<usize>>,
    ) -> ScanStream {
        self.stream_filtered(ranges, views, columns, None)
    }

    /// [`FileTable::stream_columns`], skipping the row groups `filter` rules out by their
    /// column statistics (a file's rows are single versions, so the statistics bound the
    /// values a read finds there).
    pub fn stream_filtered(
        self: &Arc<Self>,
        ranges: Option<Vec<KeyRange>>,
        views: bool,
        columns: Option<Vec<usize>>,
        filter: Option<Arc<dyn RowGroupFilter>>,
    ) -> ScanStream {
        let table = self.clone();
        let schema = table_arrow_schema(&self.schema);
        let schema = match &columns {
            Some(c) => Arc::new(schema.project(c).unwrap_or_else(|_| (*schema).clone())),
            None => schema,
        };
        ScanStream::new(
            schema,
            views,
            8192,
            1,
            Prefetch::Task,
            move |mut sink| async move {
                let read = table
                    .scan_batches_inner(
                        ranges.as_deref(),
                        views,
                        columns.as_deref(),
                        filter.as_deref(),
                        &mut sink,
                    )
                    .await;
                (read, sink)
            },
        )
    }

    /// Every row's values of the schema columns `columns` (all when `None`), file after
    /// file, as Arrow batches of those columns. Reads only those columns; order is not
    /// checked (nothing here depends on it).
    pub async fn scan_columns(&self, columns: Option<&[usize]>) -> Result<Vec<RecordBatch>> {
        let all: Vec<usize> = (0..self.schema.columns().len()).collect();
        let columns = columns.unwrap_or(&all);
        let table_schema = table_arrow_schema(&self.schema);
        let projected = Arc::new(table_schema.project(columns)?);
        let mut out = Vec::new();
        for file in &self.files {
            let wanted: Vec<usize> = columns.iter().map(|&c| self.file_columns[c]).collect();
            let mut stream = self.read(file, None, None, &wanted)?;
            while let Some(batch) = stream.next().await {
                let batch = batch.map_err(|e| corrupt(file, e))?;
                let converted = self.convert_batch(&batch, columns, &wanted)?;
                out.push(RecordBatch::try_new_with_options(
                    projected.clone(),
                    converted,
                    &arrow::record_batch::RecordBatchOptions::new()
                        .with_row_count(Some(batch.num_rows())),
                )?);
            }
        }
        Ok(out)
    }

    /// A stream of the file columns `file_columns` of `file` (row groups `groups`, or all).
    fn read(
        &self,
        file: &FileRef,
        groups: Option<Vec<usize>>,
        selection: Option<RowSelection>,
        file_columns: &[usize],
    ) -> Result<parquet::arrow::async_reader::ParquetRecordBatchStream<ObjectFile>> {
        let reader = ObjectFile::unverified(self.objects.clone(), file.path.clone(), file.size);
        let mask = ProjectionMask::roots(
            file.metadata.metadata().file_metadata().schema_descr(),
            file_columns.iter().copied(),
        );
        let mut builder =
            ParquetRecordBatchStreamBuilder::new_with_metadata(reader, file.metadata.clone())
                .with_projection(mask)
                .with_batch_size(8192);
        if let Some(groups) = groups {
            builder = builder.with_row_groups(groups);
        }
        if let Some(selection) = selection {
            builder = builder.with_row_selection(selection);
        }
        builder.build().map_err(|e| corrupt(file, e))
    }

    /// The schema columns `columns` of a batch read with the file columns `file_columns`
    /// (the projection keeps the files' order), as the Arrow types of their wire types.
    fn convert_batch(
        &self,
        batch: &RecordBatch,
        columns: &[usize],
        file_columns: &[usize],
    ) -> Result<Vec<ArrayRef>> {
        let mut order: Vec<usize> = file_columns.to_vec();
        order.sort_unstable();
        order.dedup();
        columns
            .iter()
            .zip(file_columns)
            .map(|(&c, fc)| {
                let p = order.iter().position(|o| o == fc).unwrap_or(0);
                convert(batch.column(p), &self.schema.columns()[c])
            })
            .collect()
    }

    /// The scan behind every other: the rows of `ranges`, checked in key order, as batches
    /// of the schema columns `columns` (all when `None`). Reads the key columns and those.
    async fn scan_batches_inner<S: PieceSink>(
        &self,
        ranges: Option<&[KeyRange]>,
        views: bool,
        columns: Option<&[usize]>,
        filter: Option<&dyn RowGroupFilter>,
        sink: &mut S,
    ) -> Result<ScanStatistics> {
        let mut statistics = self.explain(ranges);
        let ranges = ranges.map(|r| normalize_ranges(r.to_vec()));
        let everything = ranges
            .as_ref()
            .is_none_or(|r| r.iter().any(|r| *r == KeyRange::all()));
        let key_count = self.schema.key_column_count();
        let key_types = wire_types(self.schema.key_columns());
        let all: Vec<usize> = (0..self.schema.columns().len()).collect();
        // The key columns come first in `read` (they are the schema's first columns).
        let mut read: Vec<usize> = (0..key_count)
            .chain(columns.unwrap_or(&all).iter().copied())
            .collect();
        read.sort_unstable();
        read.dedup();
        let read_file_columns: Vec<usize> = read.iter().map(|&c| self.file_columns[c]).collect();
        let arrow_schema = Arc::new(table_arrow_schema(&self.schema).project(&read)?);
        let output = columns.map(|columns| {
            let positions: Vec<usize> = columns
                .iter()
                .map(|c| read.iter().position(|r| r == c).unwrap_or(0))
                .collect();
            positions
        });
        let mut last_key: Option<Vec<Value>> = None;
        let mut read_files = 0;
        let mut read_groups = 0;
        for (fi, groups) in self.plan(ranges.as_deref()) {
            let file = &self.files[fi];
            let groups: Vec<usize> = match filter {
                Some(filter) => groups
                    .into_iter()
                    .filter(|&g| {
                        filter.may_match(&self.group_statistics(file, g, filter.columns()))
                    })
                    .collect(),
                None => groups,
            };
            if groups.is_empty() {
                continue;
            }
            read_files += 1;
            read_groups += groups.len();
            let key_ranges = ranges.as_deref().filter(|_| !everything);
            let selection = self.page_selection(file, &groups, key_ranges, filter);
            let mut stream = self.read(file, Some(groups), selection, &read_file_columns)?;
            while let Some(batch) = stream.next().await {
                let batch = batch.map_err(|e| corrupt(file, e))?;
                let columns = self.convert_batch(&batch, &read, &read_file_columns)?;
                let mut batch = RecordBatch::try_new_with_options(
                    arrow_schema.clone(),
                    columns,
                    &arrow::record_batch::RecordBatchOptions::new()
                        .with_row_count(Some(batch.num_rows())),
                )?;
                statistics.rows_decoded += batch.num_rows() as u64;
                if key_count > 0 {
                    let keys = |i: usize| -> Vec<Value> {
                        (0..key_count)
                            .map(|c| array_value(batch.column(c).as_ref(), key_types[c], i))
                            .collect()
                    };
                    let mut keep = Vec::with_capacity(batch.num_rows());
                    for i in 0..batch.num_rows() {
                        let key = keys(i);
                        if let Some(last) = &last_key {
                            if compare_rows(&key, last).is_lt() {
                                return Err(self.unsorted(&format!(
                                    "in {}, key {} follows {}",
                                    file.path,
                                    format_key(&key),
                                    format_key(last)
                                )));
                            }
                        }
                        keep.push(
                            everything
                                || ranges
                                    .as_ref()
                                    .is_some_and(|r| r.iter().any(|r| r.contains(&key))),
                        );
                        last_key = Some(key);
                    }
                    if !everything {
                        let mask = arrow::array::BooleanArray::from(keep);
                        batch = arrow::compute::filter_record_batch(&batch, &mask)?;
                    }
                }
                if batch.num_rows() == 0 {
                    continue;
                }
                if let Some(output) = &output {
                    batch = batch.project(output)?;
                }
                statistics.rows_read += batch.num_rows() as u64;
                let weight = crate::scan::batch_weight(&batch);
                statistics.data_weight += weight;
                if views {
                    batch = crate::row_group_decode::binary_as_views(&batch)?;
                }
                if !sink.accept(0, Piece::Batch(batch, weight)).await? {
                    statistics.chunks.0 = read_files;
                    statistics.row_groups.0 = read_groups;
                    return Ok(statistics);
                }
            }
        }
        statistics.chunks.0 = read_files;
        statistics.row_groups.0 = read_groups;
        Ok(statistics)
    }
}

fn wire_types(columns: &[ColumnSchema]) -> Vec<ValueType> {
    columns.iter().map(|c| c.wire_type()).collect()
}

fn corrupt(file: &FileRef, e: parquet::errors::ParquetError) -> Error {
    Error::Corrupt {
        path: file.path.to_string(),
        message: e.to_string(),
    }
}

fn listing_error(location: &str, e: object_store::Error) -> Error {
    Error::Invalid(format!("Cannot list {location:?}: {e}"))
}

fn format_key(key: &[Value]) -> String {
    let parts: Vec<String> = key.iter().map(|v| v.to_string()).collect();
    format!("[{}]", parts.join("; "))
}
