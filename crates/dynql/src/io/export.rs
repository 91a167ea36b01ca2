//! [`Database::export`]: a table snapshot as key-sorted Parquet files (design note 0007; the
//! file contract is in the [module docs](crate::io)).

use std::fs::File;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use arrow::datatypes::SchemaRef;
use arrow::record_batch::RecordBatch;
use parquet::arrow::ArrowWriter;
use parquet::basic::Compression;
use parquet::file::metadata::{KeyValue, SortingColumn};
use parquet::file::properties::WriterProperties;

use dynql_core::arrow_convert::table_arrow_schema;
use dynql_core::{TableSchema, Value};
use dynql_storage::scan::batch_weight;
use dynql_storage::scan_plan::tablet_ranges;
use dynql_storage::static_table::TableRead;
use dynql_storage::{KeyBound, KeyRange, Timestamp};

use crate::database::Database;
use crate::error::{Error, Result};
use crate::io::{seconds, Phase, Progress, ProgressFn, SCHEMA_METADATA_KEY};

/// Rows per file unless [`ExportOptions::rows_per_file`] says otherwise.
pub const DEFAULT_ROWS_PER_FILE: u64 = 1_000_000;

/// Rows per Parquet row group of an exported file.
const ROW_GROUP_ROWS: usize = 128 * 1024;

/// How [`Database::export`] writes.
#[derive(Clone)]
pub struct ExportOptions {
    /// The snapshot to export; `None` (or a "last committed" sentinel) exports the latest
    /// commit as of the start of the export.
    pub timestamp: Option<Timestamp>,
    /// The most rows in one file (positive).
    pub rows_per_file: u64,
    /// Write into a non-empty directory, replacing its `part-*.parquet` files.
    pub force: bool,
    /// The files' compression codec (see [`dynql_storage::codec::parse_codec`]); snappy by
    /// default, which every reader reads fastest.
    pub compression: Compression,
    /// Write `string` columns as Parquet byte arrays without the UTF-8 annotation (Arrow
    /// `Binary`; DuckDB reads `BLOB`). By default they are text (`Utf8`, DuckDB's
    /// `VARCHAR`), and a column holding a value that is not UTF-8 is written as bytes.
    pub binary_strings: bool,
    /// Called as the export advances.
    pub progress: Option<ProgressFn>,
}

impl Default for ExportOptions {
    fn default() -> ExportOptions {
        ExportOptions {
            timestamp: None,
            rows_per_file: DEFAULT_ROWS_PER_FILE,
            force: false,
            compression: Compression::SNAPPY,
            binary_strings: false,
            progress: None,
        }
    }
}

impl std::fmt::Debug for ExportOptions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ExportOptions")
            .field("timestamp", &self.timestamp)
            .field("rows_per_file", &self.rows_per_file)
            .field("force", &self.force)
            .field("compression", &self.compression)
            .field("progress", &self.progress.is_some())
            .finish()
    }
}

/// What an export wrote.
#[derive(Debug, Clone)]
pub struct ExportReport {
    /// The files written, in row order (`part-00000.parquet`, …).
    pub files: Vec<PathBuf>,
    /// Rows exported.
    pub rows: u64,
    /// Their data weight (YT's measure: one byte per row plus each value's size).
    pub data_weight: u64,
    /// Total size of the files.
    pub bytes: u64,
    /// The snapshot exported.
    pub timestamp: Timestamp,
    /// Wall time of the export.
    pub elapsed: Duration,
}

impl ExportReport {
    /// The one-line summary: `exported N rows to F files (B bytes) at timestamp TS in T s`.
    pub fn summary(&self) -> String {
        format!(
            "exported {} rows to {} file{} ({} bytes) at timestamp {} in {}",
            self.rows,
            self.files.len(),
            if self.files.len() == 1 { "" } else { "s" },
            self.bytes,
            self.timestamp.0,
            seconds(self.elapsed)
        )
    }
}

impl Database {
    /// Writes the table at `path` as Parquet files `DIR/part-00000.parquet`, … as of one
    /// timestamp: rows in key order (sorted tables) or tablet then row order (ordered tables),
    /// every file with the schema in its metadata and the key columns as its sorting columns
    /// (the contract is in the [module docs](crate::io)).
    ///
    /// The directory is created if missing and must be empty unless
    /// [`ExportOptions::force`] (which then replaces its `part-*.parquet` files and leaves
    /// other files alone). Files are written under temporary names and renamed at the end,
    /// so a failed export leaves no `part-*.parquet` file behind. The table is scanned one
    /// tablet at a time: memory holds one tablet's rows.
    ///
    /// # Errors
    /// No such table; a non-empty directory without `force`; `rows_per_file` of 0; a file
    /// that cannot be written.
    ///
    /// # Example
    /// ```
    /// # tokio::runtime::Runtime::new().unwrap().block_on(async {
    /// use dynql::io::ExportOptions;
    /// use dynql::Database;
    /// let db = Database::open("memory://")?;
    /// db.create_table_from_text("//t", "{dynamic=%true; schema=[{name=k;type=int64;sort_order=ascending};{name=v;type=string}]}").await?;
    /// db.insert_json_rows("//t", &[serde_json::json!({"k": 1, "v": "one"})]).await?;
    /// let dir = tempfile::tempdir().unwrap();
    /// let report = db.export("//t", dir.path(), &ExportOptions::default()).await?;
    /// assert_eq!(report.rows, 1);
    /// assert!(dir.path().join("part-00000.parquet").exists());
    /// # Ok::<(), dynql::Error>(()) }).unwrap();
    /// ```
    pub async fn export(
        &self,
        path: &str,
        dir: impl AsRef<Path>,
        options: &ExportOptions,
    ) -> Result<ExportReport> {
        let started = Instant::now();
        let dir = dir.as_ref();
        let dir = match dir.to_str().and_then(|d| d.strip_prefix("file://")) {
            Some(local) => Path::new(local),
            None => dir,
        };
        if options.rows_per_file == 0 {
            return Err(Error::Invalid("rows_per_file must be positive".into()));
        }
        let entry = self.store().table(path).await?;
        // One concrete timestamp for every tablet's scan: a consistent snapshot even while
        // others commit.
        let timestamp = match options.timestamp {
            Some(t) if !t.is_latest() => t,
            _ => self.store().last_committed_timestamp().await?,
        };
        // A static table's rows are its chunks, read as they are.
        let static_chunks = match self.store().table_for_read(path, None).await? {
            TableRead::Static { chunks, .. } => Some(chunks),
            TableRead::Versioned { .. } => None,
        };
        let old_parts = prepare_directory(dir, options.force)?;
        let estimate = self.store().version_count(path).await? as u64;
        let schema = &entry.schema;
        // `string` columns as text, until a value that is not UTF-8 says otherwise: then the
        // export starts again (the same snapshot) with that column as bytes.
        let mut text =
            crate::text::text_columns(&table_arrow_schema(schema), options.binary_strings);
        let (writer, rows, data_weight) = loop {
            let mut writer = PartWriter::new(
                dir,
                schema,
                &text,
                options.rows_per_file,
                options.compression,
            );
            let result = self
                .write_parts(
                    path,
                    &entry,
                    static_chunks.as_deref(),
                    timestamp,
                    estimate,
                    &mut writer,
                    options,
                )
                .await;
            match result.and_then(|r| writer.finish().map(|()| r)) {
                Ok(Written::All { rows, weight }) => break (writer, rows, weight),
                Ok(Written::NotText(column)) => {
                    writer.discard();
                    text.retain(|&c| c != column);
                }
                Err(e) => {
                    writer.discard();
                    return Err(e);
                }
            }
        };
        let files = writer.publish(&old_parts)?;
        let mut bytes = 0;
        for f in &files {
            bytes += std::fs::metadata(f).map(|m| m.len()).unwrap_or(0);
        }
        Ok(ExportReport {
            files,
            rows,
            data_weight,
            bytes,
            timestamp,
            elapsed: started.elapsed(),
        })
    }

    /// Writes the table's rows at `timestamp` through `writer`, in key order (tablet by
    /// tablet, or a static table's chunks in turn).
    #[allow(clippy::too_many_arguments)]
    async fn write_parts(
        &self,
        path: &str,
        entry: &dynql_storage::TableEntry,
        static_chunks: Option<&[dynql_storage::kernel::static_rows::StaticChunk]>,
        timestamp: Timestamp,
        estimate: u64,
        writer: &mut PartWriter,
        options: &ExportOptions,
    ) -> Result<Written> {
        let schema = &entry.schema;
        {
            let mut rows = 0u64;
            let mut weight = 0u64;
            let ranges: Vec<KeyRange> = if schema.is_sorted() {
                tablet_ranges(entry)
            } else {
                (0..entry.tablet_count)
                    .map(|t| {
                        let t = vec![Value::Int64(t as i64)];
                        KeyRange {
                            lower: KeyBound::new(t.clone(), false),
                            upper: KeyBound::new(t, true),
                        }
                    })
                    .collect()
            };
            let parts = match static_chunks {
                Some(chunks) => chunks.iter().map(Part::Chunk).collect(),
                None => ranges.into_iter().map(Part::Range).collect::<Vec<_>>(),
            };
            for part in parts {
                let batches = match part {
                    Part::Chunk(chunk) => self.store().read_static_chunk(chunk).await?,
                    Part::Range(range) => {
                        self.store()
                            .scan_batches(path, Some(&[range]), timestamp)
                            .await?
                            .0
                    }
                };
                for batch in batches {
                    let batch = match writer.table_batch(batch)? {
                        Ok(batch) => batch,
                        Err(column) => return Ok(Written::NotText(column)),
                    };
                    rows += batch.num_rows() as u64;
                    weight += batch_weight(&batch);
                    writer.write(&batch)?;
                    if let Some(f) = &options.progress {
                        f(&Progress {
                            phase: Phase::Exporting,
                            rows,
                            bytes: weight,
                            total: Some(estimate.max(rows)),
                        });
                    }
                }
            }
            Ok(Written::All { rows, weight })
        }
    }
}

/// How an attempt at writing an export ended.
enum Written {
    /// Every row, and their data weight.
    All { rows: u64, weight: u64 },
    /// A column written as text holds a value that is not UTF-8.
    NotText(usize),
}

/// What an export reads at a time: a key range of a dynamic table, or a static table's chunk.
enum Part<'a> {
    Range(KeyRange),
    Chunk(&'a dynql_storage::kernel::static_rows::StaticChunk),
}

/// The name of the `index`th file of an export.
fn part_name(index: usize) -> String {
    format!("part-{index:05}.parquet")
}

fn is_part_name(name: &str) -> bool {
    name.starts_with("part-") && name.ends_with(".parquet")
}

/// Creates `dir` if needed and checks that it may be written; returns the `part-*.parquet`
/// files already there (replaced at the end of a forced export).
fn prepare_directory(dir: &Path, force: bool) -> Result<Vec<PathBuf>> {
    let io = |action: &'static str, e: std::io::Error| Error::File {
        action,
        path: dir.display().to_string(),
        source: Box::new(e),
    };
    std::fs::create_dir_all(dir).map_err(|e| io("create directory", e))?;
    let mut entries = 0;
    let mut parts = Vec::new();
    for item in std::fs::read_dir(dir).map_err(|e| io("list", e))? {
        let item = item.map_err(|e| io("list", e))?;
        entries += 1;
        if is_part_name(&item.file_name().to_string_lossy()) {
            parts.push(item.path());
        }
    }
    if entries > 0 && !force {
        return Err(Error::Invalid(format!(
            "export directory {} is not empty ({entries} entr{}): choose an empty one, or force the export (`--force`, `ExportOptions::force`) to replace its part-*.parquet files",
            dir.display(),
            if entries == 1 { "y" } else { "ies" }
        )));
    }
    Ok(parts)
}

/// Writes rows to `part-NNNNN.parquet` files under temporary names, rolling over every
/// `rows_per_file` rows.
struct PartWriter {
    dir: PathBuf,
    arrow_schema: SchemaRef,
    /// The `string` columns written as text.
    text: Vec<usize>,
    properties: WriterProperties,
    rows_per_file: u64,
    /// The file being written and its rows so far.
    current: Option<(ArrowWriter<File>, u64)>,
    /// (temporary path, final path) of every file started.
    files: Vec<(PathBuf, PathBuf)>,
}

impl PartWriter {
    /// A writer of `schema`'s rows, its `text` columns (`string` ones) as `Utf8`.
    fn new(
        dir: &Path,
        schema: &TableSchema,
        text: &[usize],
        rows_per_file: u64,
        compression: Compression,
    ) -> PartWriter {
        let sorting: Vec<SortingColumn> = (0..schema.key_column_count())
            .map(|i| SortingColumn {
                column_idx: i as i32,
                descending: false,
                nulls_first: true,
            })
            .collect();
        let schema_text = dynql_core::yson::to_text(&schema.to_yson());
        let properties = WriterProperties::builder()
            .set_compression(compression)
            .set_max_row_group_row_count(Some(ROW_GROUP_ROWS))
            .set_sorting_columns((!sorting.is_empty()).then_some(sorting))
            .set_key_value_metadata(Some(vec![KeyValue::new(
                SCHEMA_METADATA_KEY.to_string(),
                schema_text,
            )]))
            .build();
        PartWriter {
            dir: dir.to_path_buf(),
            arrow_schema: crate::text::text_schema(&table_arrow_schema(schema), text),
            text: text.to_vec(),
            properties,
            rows_per_file,
            current: None,
            files: Vec::new(),
        }
    }

    /// A scanned batch as a batch of the table's columns: ordered tables scan with
    /// `$tablet_index` and `$row_index` first, which the files do not hold. `Err(column)`
    /// where a text column's value is not UTF-8.
    fn table_batch(&self, batch: RecordBatch) -> Result<std::result::Result<RecordBatch, usize>> {
        let width = self.arrow_schema.fields().len();
        let skip = batch.num_columns().checked_sub(width).ok_or_else(|| {
            Error::Invalid(format!(
                "internal: a scan returned {} columns for a table of {width}",
                batch.num_columns()
            ))
        })?;
        let mut columns = batch.columns()[skip..].to_vec();
        for &c in &self.text {
            match crate::text::binary_as_text(&columns[c]) {
                Ok(array) => columns[c] = array,
                Err(_) => return Ok(Err(c)),
            }
        }
        RecordBatch::try_new(self.arrow_schema.clone(), columns)
            .map(Ok)
            .map_err(|e| Error::Invalid(format!("internal: scanned batch does not fit: {e}")))
    }

    fn write_error(&self, path: &Path, e: impl std::error::Error + Send + Sync + 'static) -> Error {
        Error::File {
            action: "write",
            path: path.display().to_string(),
            source: Box::new(e),
        }
    }

    fn start_file(&mut self) -> Result<()> {
        let index = self.files.len();
        let final_path = self.dir.join(part_name(index));
        let temp = self
            .dir
            .join(format!(".{}.tmp-{}", part_name(index), std::process::id()));
        let file = File::create(&temp).map_err(|e| self.write_error(&temp, e))?;
        self.files.push((temp.clone(), final_path));
        let writer = ArrowWriter::try_new(
            file,
            self.arrow_schema.clone(),
            Some(self.properties.clone()),
        )
        .map_err(|e| self.write_error(&temp, e))?;
        self.current = Some((writer, 0));
        Ok(())
    }

    fn close_current(&mut self) -> Result<()> {
        if let Some((writer, _)) = self.current.take() {
            let path = self.files.last().map(|f| f.0.clone()).unwrap_or_default();
            writer.close().map_err(|e| self.write_error(&path, e))?;
        }
        Ok(())
    }

    fn write(&mut self, batch: &RecordBatch) -> Result<()> {
        let mut offset = 0;
        while offset < batch.num_rows() {
            if self
                .current
                .as_ref()
                .is_none_or(|(_, rows)| *rows >= self.rows_per_file)
            {
                self.close_current()?;
                self.start_file()?;
            }
            let path = self.files.last().map(|f| f.0.clone()).unwrap_or_default();
            let Some((writer, rows)) = self.current.as_mut() else {
                return Err(Error::Invalid("internal: no export file open".into()));
            };
            let room = (self.rows_per_file - *rows).min((batch.num_rows() - offset) as u64);
            let piece = batch.slice(offset, room as usize);
            if let Err(e) = writer.write(&piece) {
                return Err(Error::File {
                    action: "write",
                    path: path.display().to_string(),
                    source: Box::new(e),
                });
            }
            *rows += room;
            offset += room as usize;
        }
        Ok(())
    }

    /// Closes the last file; an empty table still gets one (empty) file, so that readers of
    /// the directory find the schema.
    fn finish(&mut self) -> Result<()> {
        if self.files.is_empty() {
            self.start_file()?;
        }
        self.close_current()
    }

    /// Removes every temporary file (after a failure).
    fn discard(&mut self) {
        self.current = None;
        for (temp, _) in &self.files {
            let _ = std::fs::remove_file(temp);
        }
    }

    /// Replaces `old` part files by the new ones; returns the new files' paths.
    fn publish(mut self, old: &[PathBuf]) -> Result<Vec<PathBuf>> {
        for path in old {
            if let Err(e) = std::fs::remove_file(path) {
                self.discard();
                return Err(self.write_error(path, e));
            }
        }
        let mut done = Vec::with_capacity(self.files.len());
        for (temp, final_path) in &self.files {
            if let Err(e) = std::fs::rename(temp, final_path) {
                // No partial export: take back the files already renamed.
                for path in &done {
                    let _ = std::fs::remove_file(path);
                }
                return Err(self.write_error(final_path, e));
            }
            done.push(final_path.clone());
        }
        Ok(done)
    }
}

impl Drop for PartWriter {
    fn drop(&mut self) {
        // After publish the temporary names no longer exist; before it they must not stay.
        for (temp, _) in &self.files {
            if temp.exists() {
                let _ = std::fs::remove_file(temp);
            }
        }
    }
}
