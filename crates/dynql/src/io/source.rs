//! Import inputs: expanding paths and globs to files, and reading each file as a stream of
//! bounded batches (Arrow record batches for Parquet and CSV, parsed lines for JSON).

use std::fs::File;
use std::io::{BufReader, Read};
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use arrow::datatypes::{DataType, Field, Schema};
use arrow::record_batch::RecordBatch;
use parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder;
use parquet::arrow::ProjectionMask;

use crate::error::{Error, Result};
use crate::io::csv_input::{read_header, CsvBatches, CsvError};
use crate::io::FileFormat;

/// Rows per batch read from a file: bounds what one conversion step holds.
pub(crate) const READ_BATCH_ROWS: usize = 8192;

/// Input bytes per batch of a text file (JSON, CSV): with rows of up to
/// [`dynql_core::limits::MAX_ROW_TEXT_BYTES`] each, a row count alone would not bound it.
const READ_BATCH_BYTES: usize = 64 << 20;

/// One input file.
#[derive(Debug, Clone)]
pub(crate) struct SourceFile {
    /// Where it is on the local file system.
    pub path: PathBuf,
    /// How reports name it: the path as given or as the glob produced it.
    pub name: String,
    pub format: FileFormat,
    /// Size in bytes (the progress total).
    pub size: u64,
}

/// Expands paths, globs (`dump/*.parquet`) and `file://` URLs to files, in the order given
/// (each glob's matches in name order).
///
/// # Errors
/// A pattern that matches nothing, a directory, another URL scheme, a file whose format is
/// neither given nor implied by its extension.
pub(crate) fn expand_sources(
    patterns: &[String],
    format: Option<FileFormat>,
) -> Result<Vec<SourceFile>> {
    if patterns.is_empty() {
        return Err(Error::Invalid("no input files given".into()));
    }
    let mut files = Vec::new();
    for pattern in patterns {
        let local = if let Some(rest) = pattern.strip_prefix("file://") {
            rest
        } else if let Some((scheme, _)) = pattern.split_once("://") {
            return Err(Error::Unsupported(format!(
                "cannot import from {pattern:?}: {scheme}:// is not supported, only local paths and file:// URLs"
            )));
        } else {
            pattern.as_str()
        };
        let mut matched: Vec<PathBuf> = Vec::new();
        if local.contains(['*', '?', '[']) {
            let paths = glob::glob(local).map_err(|e| {
                Error::Invalid(format!("invalid file pattern {pattern:?}: {}", e.msg))
            })?;
            for p in paths {
                let p = p.map_err(|e| Error::File {
                    action: "list",
                    path: e.path().display().to_string(),
                    source: Box::new(std::io::Error::from(e)),
                })?;
                if p.is_file() {
                    matched.push(p);
                }
            }
            if matched.is_empty() {
                return Err(Error::Invalid(format!("no files match {pattern:?}")));
            }
        } else {
            let p = PathBuf::from(local);
            let meta = std::fs::metadata(&p).map_err(|e| Error::File {
                action: "read",
                path: local.to_string(),
                source: Box::new(e),
            })?;
            if meta.is_dir() {
                return Err(Error::Invalid(format!(
                    "{local} is a directory: name its files, e.g. {}/*.parquet",
                    local.trim_end_matches('/')
                )));
            }
            matched.push(p);
        }
        for path in matched {
            let name = path.display().to_string();
            let format = match format.or_else(|| FileFormat::from_path(&name)) {
                Some(f) => f,
                None => {
                    return Err(Error::Invalid(format!(
                        "cannot tell the format of {name} from its extension (.parquet, .csv, .jsonl, .json, .ndjson): give the format explicitly"
                    )))
                }
            };
            let size = std::fs::metadata(&path)
                .map_err(|e| Error::File {
                    action: "read",
                    path: name.clone(),
                    source: Box::new(e),
                })?
                .len();
            files.push(SourceFile {
                path,
                name,
                format,
                size,
            });
        }
    }
    Ok(files)
}

/// One batch of input rows.
pub(crate) struct InputBatch {
    /// 1-based number of the batch's first row among the file's data rows.
    pub first_row: u64,
    pub data: InputData,
    /// Bytes of the file consumed so far (after this batch).
    pub bytes_read: u64,
}

/// The rows of an [`InputBatch`].
pub(crate) enum InputData {
    /// Typed columns (Parquet): converted to the column types.
    Typed(RecordBatch),
    /// Text columns (CSV, all `Utf8`): parsed per column type.
    Text(RecordBatch),
    /// JSON lines.
    Json(Vec<JsonLine>),
}

/// One non-blank line of a JSON-lines file.
pub(crate) struct JsonLine {
    /// 1-based line number.
    pub line: u64,
    /// The parsed value, or the parse error and the raw text.
    pub value: std::result::Result<serde_json::Value, (String, String)>,
}

/// Which input columns an import reads, as `(table column, file column)` pairs
/// ([`ImportOptions::columns`](crate::io::ImportOptions::columns)).
pub(crate) type ColumnChoice = [(String, String)];

/// Opens a file and returns an iterator over its batches: of the `columns` chosen, renamed to
/// their table columns and in their order, or of every column.
///
/// # Errors
/// A file that cannot be read or parsed; a chosen column the file does not have (once, at
/// its header or footer).
pub(crate) fn read_batches(
    file: &SourceFile,
    columns: Option<&ColumnChoice>,
) -> Result<Box<dyn Iterator<Item = Result<InputBatch>> + Send>> {
    let chosen = columns.map(<[_]>::to_vec);
    let name = file.name.clone();
    let batches = read_all_batches(file, columns)?;
    let Some(chosen) = chosen else {
        return Ok(batches);
    };
    Ok(Box::new(batches.map(move |b| {
        let mut b = b?;
        b.data = match b.data {
            InputData::Typed(batch) => InputData::Typed(choose(&name, &batch, &chosen)?),
            InputData::Text(batch) => InputData::Text(choose(&name, &batch, &chosen)?),
            InputData::Json(lines) => InputData::Json(
                lines
                    .into_iter()
                    .map(|mut line| {
                        if let Ok(serde_json::Value::Object(map)) = &mut line.value {
                            let mut chosen_map = serde_json::Map::new();
                            for (to, from) in &chosen {
                                if let Some(v) = map.get(from) {
                                    chosen_map.insert(to.clone(), v.clone());
                                }
                            }
                            *map = chosen_map;
                        }
                        line
                    })
                    .collect(),
            ),
        };
        Ok(b)
    })))
}

/// The error for chosen columns a file does not have.
fn missing_columns(file: &str, missing: &[&str], fields: &arrow::datatypes::Fields) -> Error {
    let shown: Vec<String> = missing
        .iter()
        .map(|n| dynql_core::error::shown(n))
        .collect();
    let have: Vec<&str> = fields.iter().map(|f| f.name().as_str()).collect();
    Error::Invalid(format!(
        "{file}: the file has no column{} {} of the columns to import (its columns: {})",
        if missing.len() == 1 { "" } else { "s" },
        shown.join(", "),
        have.join(", ")
    ))
}

/// The chosen columns of `batch`, renamed to their table columns, in the order chosen.
fn choose(file: &str, batch: &RecordBatch, chosen: &ColumnChoice) -> Result<RecordBatch> {
    let schema = batch.schema();
    let mut fields = Vec::with_capacity(chosen.len());
    let mut columns = Vec::with_capacity(chosen.len());
    let mut missing = Vec::new();
    for (to, from) in chosen {
        match schema.index_of(from) {
            Ok(i) => {
                fields.push(schema.field(i).clone().with_name(to));
                columns.push(batch.column(i).clone());
            }
            Err(_) => missing.push(from.as_str()),
        }
    }
    if !missing.is_empty() {
        return Err(missing_columns(file, &missing, schema.fields()));
    }
    RecordBatch::try_new_with_options(
        Arc::new(Schema::new(fields)),
        columns,
        &arrow::record_batch::RecordBatchOptions::new().with_row_count(Some(batch.num_rows())),
    )
    .map_err(|e| Error::Invalid(format!("internal: {e}")))
}

fn read_all_batches(
    file: &SourceFile,
    columns: Option<&ColumnChoice>,
) -> Result<Box<dyn Iterator<Item = Result<InputBatch>> + Send>> {
    let read_error = |e: Box<dyn std::error::Error + Send + Sync>| Error::File {
        action: "read",
        path: file.name.clone(),
        source: e,
    };
    let open = || File::open(&file.path).map_err(|e| read_error(Box::new(e)));
    match file.format {
        FileFormat::Parquet => {
            let mut builder = ParquetRecordBatchReaderBuilder::try_new(open()?)
                .map_err(|e| read_error(Box::new(e)))?;
            let total_rows = builder.metadata().file_metadata().num_rows().max(0) as u64;
            if let Some(columns) = columns {
                // Only the chosen columns are decoded (others may be of types that could
                // not be imported).
                let fields = builder.schema().fields().clone();
                let mut roots = Vec::new();
                let mut missing = Vec::new();
                for (_, from) in columns {
                    match fields.iter().position(|f| f.name() == from) {
                        Some(i) => roots.push(i),
                        None => missing.push(from.as_str()),
                    }
                }
                if !missing.is_empty() {
                    return Err(missing_columns(&file.name, &missing, &fields));
                }
                let mask = ProjectionMask::roots(builder.parquet_schema(), roots);
                builder = builder.with_projection(mask);
            }
            let reader = builder
                .with_batch_size(READ_BATCH_ROWS)
                .build()
                .map_err(|e| read_error(Box::new(e)))?;
            let size = file.size;
            let name = file.name.clone();
            let mut next_row = 1u64;
            Ok(Box::new(reader.map(move |batch| {
                let batch = batch.map_err(|e| Error::File {
                    action: "read",
                    path: name.clone(),
                    source: Box::new(e),
                })?;
                let first_row = next_row;
                next_row += batch.num_rows() as u64;
                // Decoded bytes are not counted by the reader: estimate them by rows.
                let bytes_read =
                    (size as u128 * (next_row - 1) as u128 / total_rows.max(1) as u128) as u64;
                Ok(InputBatch {
                    first_row,
                    data: InputData::Typed(batch),
                    bytes_read: bytes_read.min(size),
                })
            })))
        }
        FileFormat::Csv => {
            // The header names the columns; every column is read as text and parsed per
            // the table's column type later (CSV has no types of its own). The header and
            // each record are bounded (csv_input), so garbage fails in bounded memory.
            let counter = Arc::new(AtomicU64::new(0));
            let mut input = BufReader::with_capacity(
                1 << 20,
                CountingRead {
                    inner: open()?,
                    count: counter.clone(),
                },
            );
            let header_text = read_header(&mut input, &file.name).map_err(|e| match e {
                Ok(io) => read_error(Box::new(io)),
                Err(limit) => Error::Invalid(limit),
            })?;
            let (header, _) = arrow::csv::reader::Format::default()
                .with_header(true)
                .infer_schema(header_text.as_slice(), Some(0))
                .map_err(|e| read_error(Box::new(e)))?;
            if let Some(columns) = columns {
                let missing: Vec<&str> = columns
                    .iter()
                    .map(|(_, from)| from.as_str())
                    .filter(|from| header.index_of(from).is_err())
                    .collect();
                if !missing.is_empty() {
                    return Err(missing_columns(&file.name, &missing, header.fields()));
                }
            }
            let fields: Vec<Field> = header
                .fields()
                .iter()
                .map(|f| Field::new(f.name(), DataType::Utf8, true))
                .collect();
            let decoder = arrow::csv::ReaderBuilder::new(Arc::new(Schema::new(fields)))
                .with_header(false)
                .with_batch_size(READ_BATCH_ROWS)
                .build_decoder();
            let mut reader = CsvBatches::new(input, decoder, READ_BATCH_BYTES, &file.name);
            let name = file.name.clone();
            let mut next_row = 1u64;
            Ok(Box::new(std::iter::from_fn(move || {
                let batch = match reader.next_batch() {
                    Ok(batch) => batch?,
                    Err(CsvError::Limit(m)) => return Some(Err(Error::Invalid(m))),
                    Err(CsvError::Io(e)) => return Some(Err(read_error_of(&name, Box::new(e)))),
                    Err(CsvError::Arrow(e)) => return Some(Err(read_error_of(&name, Box::new(e)))),
                };
                let first_row = next_row;
                next_row += batch.num_rows() as u64;
                Some(Ok(InputBatch {
                    first_row,
                    data: InputData::Text(batch),
                    bytes_read: counter.load(Ordering::Relaxed),
                }))
            })))
        }
        FileFormat::Json => {
            let counter = Arc::new(AtomicU64::new(0));
            let mut lines = BufReader::new(CountingRead {
                inner: open()?,
                count: counter.clone(),
            });
            let name = file.name.clone();
            let mut line_no = 0u64;
            let mut next_row = 1u64;
            let mut done = false;
            Ok(Box::new(std::iter::from_fn(move || {
                if done {
                    return None;
                }
                let mut batch = Vec::new();
                let mut text = Vec::new();
                let mut bytes = 0;
                while batch.len() < READ_BATCH_ROWS && bytes < READ_BATCH_BYTES {
                    text.clear();
                    let what = format!("{name}: line {}", line_no + 1);
                    match dynql_core::limits::read_row_line(&mut lines, &mut text, &what) {
                        Ok(0) => {
                            done = true;
                            break;
                        }
                        Ok(_) => {}
                        // A line past the row text limit: the input's fault, said as is.
                        Err(e) if e.kind() == std::io::ErrorKind::InvalidData => {
                            done = true;
                            return Some(Err(Error::Invalid(e.to_string())));
                        }
                        Err(e) => {
                            done = true;
                            return Some(Err(Error::File {
                                action: "read",
                                path: name.clone(),
                                source: Box::new(e),
                            }));
                        }
                    }
                    line_no += 1;
                    bytes += text.len();
                    let trimmed = text.trim_ascii();
                    if trimmed.is_empty() {
                        continue;
                    }
                    let value = dynql_core::json_rows::parse_line(trimmed).map_err(|e| {
                        (
                            format!("invalid JSON: {e}"),
                            String::from_utf8_lossy(trimmed).into_owned(),
                        )
                    });
                    batch.push(JsonLine {
                        line: line_no,
                        value,
                    });
                }
                if batch.is_empty() {
                    return None;
                }
                let first_row = next_row;
                next_row += batch.len() as u64;
                Some(Ok(InputBatch {
                    first_row,
                    data: InputData::Json(batch),
                    bytes_read: counter.load(Ordering::Relaxed),
                }))
            })))
        }
    }
}

fn read_error_of(name: &str, source: Box<dyn std::error::Error + Send + Sync>) -> Error {
    Error::File {
        action: "read",
        path: name.to_string(),
        source,
    }
}

/// A reader that counts the bytes read through it (progress of text formats).
struct CountingRead<R> {
    inner: R,
    count: Arc<AtomicU64>,
}

impl<R: Read> Read for CountingRead<R> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let n = self.inner.read(buf)?;
        self.count.fetch_add(n as u64, Ordering::Relaxed);
        Ok(n)
    }
}
