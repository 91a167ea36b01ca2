//! Import and export of tables: bulk-load Parquet, CSV or JSON-lines files into a dynamic
//! table ([`Database::import`]) and write a table out as key-sorted Parquet files
//! ([`Database::export`]). Design note: `docs/design/0007-import-export.md`.
//!
//! ```text
//! import:  files ──read (Arrow batches)──▶ convert to the schema ──▶ sort by key, fold duplicates
//!                                           │ rejected rows: report         └─▶ bulk write, one commit
//! export:  snapshot at one timestamp ──scan tablet by tablet──▶ part-NNNNN.parquet (temp, then rename)
//! ```
//!
//! # The file contract
//!
//! An export directory holds `part-00000.parquet`, `part-00001.parquet`, … (at least one file,
//! possibly empty). Read in name order they give the table's rows in key order (sorted tables)
//! or tablet-then-row order (ordered tables), as of one timestamp. Every file has:
//!
//! * one column per schema column, in schema order, typed by the engine's Arrow mapping
//!   (`int64`-like → `Int64`, `uint64`-like → `UInt64`, `double` → `Float64`, `boolean` →
//!   `Boolean`, `string`/`utf8`/`any` → `Binary`); each Arrow field carries its YT type in the
//!   field metadata `yt:type` (kept in the file's `ARROW:schema`);
//! * `sorting_columns` in every row group: the key columns, ascending, nulls first;
//! * the key-value metadata [`SCHEMA_METADATA_KEY`] (`dynql.schema`): the table schema as YSON
//!   text, exactly the `@schema` attribute, so a reader recovers exact types, key columns and
//!   computed-column expressions.
//!
//! Import reads such files back (and any other Parquet, CSV with a header row, or JSON lines):
//! columns are matched to the schema by name (or chosen and mapped with
//! [`ImportOptions::columns`]), values converted to the column types; see
//! [`Database::import`] for what is rejected.

mod convert;
mod csv_input;
mod export;
mod import;
mod source;

use std::fmt;
use std::sync::Arc;
use std::time::Duration;

pub use export::{ExportOptions, ExportReport, DEFAULT_ROWS_PER_FILE};
pub use import::{ImportOptions, ImportReport, DEFAULT_SORT_MEMORY};

#[cfg(doc)]
use crate::Database;

/// Parquet key-value metadata key holding the table schema (YSON text of `@schema`); the
/// storage layer's [`FileTable`](dynql_storage::files::FileTable) reads it back.
pub use dynql_storage::codec::{parse_codec, CODEC_NAMES};
pub use dynql_storage::files::SCHEMA_METADATA_KEY;
/// A Parquet compression codec ([`ExportOptions::compression`]; [`parse_codec`] reads one
/// from its name).
pub use parquet::basic::Compression;

/// Parses the columns to import, as the CLI's `--columns` takes them: `a,b,c` reads the
/// file columns `a`, `b`, `c` into the table columns of the same names; `dst=src` reads file
/// column `src` into table column `dst`. Spaces around names are ignored.
///
/// ```
/// let columns = dynql::io::parse_columns("id, name=full_name").unwrap();
/// assert_eq!(columns, [("id".to_string(), "id".to_string()), ("name".into(), "full_name".into())]);
/// assert!(dynql::io::parse_columns("a,a").is_err());
/// ```
///
/// # Errors
/// An empty name, or a table column given twice.
pub fn parse_columns(text: &str) -> std::result::Result<Vec<(String, String)>, String> {
    let mut columns: Vec<(String, String)> = Vec::new();
    for item in text.split(',') {
        let (to, from) = match item.split_once('=') {
            Some((to, from)) => (to.trim(), from.trim()),
            None => (item.trim(), item.trim()),
        };
        if to.is_empty() || from.is_empty() {
            return Err(format!(
                "expected COLUMN or TABLE_COLUMN=FILE_COLUMN separated by commas, got {text:?}"
            ));
        }
        if columns.iter().any(|(t, _)| t == to) {
            return Err(format!("table column {to:?} is given twice in {text:?}"));
        }
        columns.push((to.to_string(), from.to_string()));
    }
    Ok(columns)
}

/// How many rejected rows an error message and an [`ImportReport`] keep as examples.
pub const REJECTED_EXAMPLES: usize = 10;

/// The format of an import file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FileFormat {
    /// Apache Parquet (`.parquet`).
    Parquet,
    /// Comma-separated values with a header row naming the columns (`.csv`).
    Csv,
    /// JSON lines: one object per line (`.jsonl`, `.ndjson`, `.json`).
    Json,
}

impl FileFormat {
    /// The format a file name's extension implies, if any.
    ///
    /// ```
    /// use dynql::io::FileFormat;
    /// assert_eq!(FileFormat::from_path("dump/part-0.parquet"), Some(FileFormat::Parquet));
    /// assert_eq!(FileFormat::from_path("rows.ndjson"), Some(FileFormat::Json));
    /// assert_eq!(FileFormat::from_path("rows.txt"), None);
    /// ```
    pub fn from_path(path: &str) -> Option<FileFormat> {
        let ext = path.rsplit_once('.')?.1.to_ascii_lowercase();
        match ext.as_str() {
            "parquet" => Some(FileFormat::Parquet),
            "csv" => Some(FileFormat::Csv),
            "json" | "jsonl" | "ndjson" => Some(FileFormat::Json),
            _ => None,
        }
    }

    /// Parses a format name: `parquet`, `csv`, `json` (also `jsonl`, `ndjson`).
    pub fn parse(name: &str) -> Option<FileFormat> {
        FileFormat::from_path(&format!("x.{name}"))
    }

    /// The format's name.
    pub fn name(self) -> &'static str {
        match self {
            FileFormat::Parquet => "parquet",
            FileFormat::Csv => "csv",
            FileFormat::Json => "json",
        }
    }
}

impl fmt::Display for FileFormat {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// An input row an import did not load, and why.
#[derive(Debug, Clone, PartialEq)]
pub struct RejectedRow {
    /// The file, as given (after glob expansion).
    pub file: String,
    /// 1-based number of the row among the file's data rows (the CSV header not counted).
    pub row: u64,
    /// 1-based line number: exact for JSON lines; for CSV the row number plus one for the
    /// header (off when a quoted field spans lines); `None` for Parquet.
    pub line: Option<u64>,
    /// Why: every problem found in the row, separated by `; `.
    pub reason: String,
    /// The input row as JSON (an object of the file's columns; the raw text for a line that
    /// is not valid JSON).
    pub input: serde_json::Value,
}

impl RejectedRow {
    /// The row as one JSON object (`file`, `row`, `line`, `reason`, `input`), the format of
    /// the CLI's `--rejected-file`.
    pub fn to_json(&self) -> serde_json::Value {
        serde_json::json!({
            "file": self.file,
            "row": self.row,
            "line": self.line,
            "reason": self.reason,
            "input": self.input,
        })
    }
}

impl fmt::Display for RejectedRow {
    /// `FILE:LINE: REASON`, or `FILE row N: REASON` where there are no lines (Parquet).
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.line {
            Some(line) => write!(f, "{}:{line}: {}", self.file, self.reason),
            None => write!(f, "{} row {}: {}", self.file, self.row, self.reason),
        }
    }
}

/// What an import or export has done so far, for progress displays.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Progress {
    /// What is happening now.
    pub phase: Phase,
    /// Rows read (import, reading), written (import, writing) or exported so far.
    pub rows: u64,
    /// Input bytes read (import) or data weight exported (export) so far.
    pub bytes: u64,
    /// The end of the current phase in its own unit: input bytes when reading, rows when
    /// writing or exporting (for export an upper estimate: stored row versions). `None` when
    /// unknown.
    pub total: Option<u64>,
}

/// The phases an import or export reports progress in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Phase {
    /// Import: reading and checking input files (progress in bytes).
    Reading,
    /// Import: writing the sorted rows (progress in rows).
    Writing,
    /// Export: writing Parquet files (progress in rows).
    Exporting,
}

/// A progress callback; called often (every input batch), so it should be cheap.
pub type ProgressFn = Arc<dyn Fn(&Progress) + Send + Sync>;

/// Called for every rejected row, in input order (for example to write them all to a file).
pub type RejectedFn = Arc<dyn Fn(&RejectedRow) + Send + Sync>;

/// Formats a count of seconds the way the summary lines do (`0.42 s`).
pub(crate) fn seconds(d: Duration) -> String {
    format!("{:.2} s", d.as_secs_f64())
}

/// The message of [`crate::Error::Rejected`].
pub(crate) fn rejected_message(count: u64, allowed: u64, examples: &[RejectedRow]) -> String {
    let mut m = format!(
        "{count} input row{} rejected ({}); nothing was imported",
        if count == 1 { "" } else { "s" },
        if allowed == 0 {
            "no rejected rows allowed".to_string()
        } else {
            format!("at most {allowed} allowed")
        }
    );
    if !examples.is_empty() {
        m.push_str(if count as usize > examples.len() {
            "; the first ones:"
        } else {
            ":"
        });
        for r in examples {
            m.push_str("\n  ");
            m.push_str(&r.to_string());
        }
    }
    m
}
