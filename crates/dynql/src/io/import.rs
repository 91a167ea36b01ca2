//! [`Database::import`]: bulk-load files into an existing table (design note 0007).
//!
//! ```text
//! files ─▶ batches of ≤ 8192 rows ─▶ Converter ─▶ accepted rows (Arrow) ─┐
//!                                        └─▶ rejected rows ─▶ count, examples, callback
//! sorted: accepted rows ─▶ the bulk write's external sort (bounded memory, spill files)
//! ordered: accepted rows held in input order
//! all read ─▶ too many rejected? fail, nothing written
//!          ─▶ sorted: merge ─▶ key-sorted chunks per tablet (each key's last row) ─▶ one commit
//!          ─▶ ordered: append in input order ─▶ one commit
//! ```

use std::hash::{BuildHasher, Hasher};
use std::time::{Duration, Instant};

use arrow::record_batch::RecordBatch;

use dynql_core::arrow_convert::batch_to_rows;
use dynql_storage::{RowValues, Timestamp};

use crate::database::Database;
use crate::error::{Error, Result};
use crate::io::convert::Converter;
use crate::io::source::{expand_sources, read_batches};
use crate::io::{
    seconds, FileFormat, Phase, Progress, ProgressFn, RejectedFn, RejectedRow, REJECTED_EXAMPLES,
};

pub use dynql_storage::bulk::DEFAULT_SORT_MEMORY;

/// How [`Database::import`] reads and what it tolerates.
#[derive(Clone)]
pub struct ImportOptions {
    /// The format of every input file; `None` tells it from each file's extension.
    pub format: Option<FileFormat>,
    /// The most rejected rows to tolerate (default 0): up to this many, the valid rows are
    /// imported and the rejected ones reported; beyond it, the import fails and writes
    /// nothing.
    pub max_rejected: u64,
    /// Sorted tables: the memory the key sort buffers before it spills a sorted run to a
    /// temporary file (default [`DEFAULT_SORT_MEMORY`]).
    pub sort_memory: usize,
    /// Called as the import advances.
    pub progress: Option<ProgressFn>,
    /// Called for every rejected row, whether or not the import then fails.
    pub on_rejected: Option<RejectedFn>,
    /// The input columns to import, as `(table column, file column)` pairs (see
    /// [`parse_columns`](crate::io::parse_columns) for the CLI's `a,b,c=d`); `None` imports
    /// every column of each file. Other columns of the files are not read; a chosen column a
    /// file lacks fails the import.
    pub columns: Option<Vec<(String, String)>>,
}

impl Default for ImportOptions {
    fn default() -> ImportOptions {
        ImportOptions {
            format: None,
            max_rejected: 0,
            sort_memory: DEFAULT_SORT_MEMORY,
            progress: None,
            on_rejected: None,
            columns: None,
        }
    }
}

impl std::fmt::Debug for ImportOptions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ImportOptions")
            .field("format", &self.format)
            .field("max_rejected", &self.max_rejected)
            .field("sort_memory", &self.sort_memory)
            .field("progress", &self.progress.is_some())
            .field("on_rejected", &self.on_rejected.is_some())
            .field("columns", &self.columns)
            .finish()
    }
}

/// What an import did.
#[derive(Debug, Clone)]
pub struct ImportReport {
    /// Input files read.
    pub files: usize,
    /// Their size in bytes.
    pub bytes_read: u64,
    /// Input rows (accepted and rejected).
    pub rows_read: u64,
    /// Rows written to the table (after folding duplicates).
    pub rows_imported: u64,
    /// Rows dropped because a later input row had the same key (sorted tables).
    pub duplicates_folded: u64,
    /// Rejected input rows (at most [`ImportOptions::max_rejected`]).
    pub rejected: u64,
    /// The first [`REJECTED_EXAMPLES`] rejected rows.
    pub rejected_examples: Vec<RejectedRow>,
    /// The commit timestamp; `None` when there was nothing to write.
    pub timestamp: Option<Timestamp>,
    /// Wall time of the whole import.
    pub elapsed: Duration,
}

impl ImportReport {
    /// The one-line summary: `imported N rows (M duplicates folded, K rejected) in T s`.
    pub fn summary(&self) -> String {
        format!(
            "imported {} rows ({} duplicates folded, {} rejected) in {}",
            self.rows_imported,
            self.duplicates_folded,
            self.rejected,
            seconds(self.elapsed)
        )
    }
}

impl Database {
    /// Bulk-loads Parquet, CSV or JSON-lines files into the existing table at `path`.
    ///
    /// `sources` are local paths, globs (`dump/*.parquet`) or `file://` URLs, read in the
    /// order given. Columns are matched to the schema by name, or chosen and renamed with
    /// [`ImportOptions::columns`]; a schema column the input lacks is null. A Parquet or CSV
    /// file with columns the table does not have fails the import once, naming them (choose
    /// the others with `columns`). Values are converted to the column types (CSV text is
    /// parsed per type; an empty CSV field is null). Parquet dates and timestamps go into
    /// `date`, `datetime` and `timestamp` columns in the column's unit (a value finer than
    /// the unit, or before 1970, is rejected), durations and times of day into `interval`
    /// columns; into an integer column goes the value YT QL reads from the file (days of
    /// `Date32`, seconds of `Date64`, microseconds of timestamps and durations). Lists,
    /// structs and maps go into `any` columns as YSON. Computed key columns are evaluated as on insert;
    /// an input value for one must equal what its expression gives. In ordered tables the
    /// engine's system columns (`$timestamp`, `$cumulative_data_weight`) are filled by the
    /// engine (input values are ignored) and a `$tablet_index` column picks each row's tablet.
    ///
    /// Sorted tables: rows are sorted by key and each key keeps its **last** row in input
    /// order (the others count as folded duplicates); the result overwrites those keys.
    /// Ordered tables: rows are appended in input order (rows without `$tablet_index` all go
    /// to one tablet, picked at random).
    ///
    /// A row is **rejected** when a value does not fit its column, it names a column the
    /// (strict) schema lacks (JSON lines), a key column is missing or null, a required column is missing
    /// or null, or a computed column cannot be evaluated or disagrees. Every row is checked
    /// before anything is written; the write is a single commit, so a failed import leaves
    /// the table as it was.
    ///
    /// Memory (sorted tables): the accepted rows go through an external sort that holds about
    /// [`ImportOptions::sort_memory`] bytes and spills sorted runs to temporary files (in
    /// `TMPDIR`, removed even if the process is killed); the merged rows land as the table's
    /// chunks, one per tablet or more (opening the store later does not read them). Ordered
    /// tables hold their accepted rows until the append.
    ///
    /// # Errors
    /// No such table or an unwritable one; an input that cannot be found, read or parsed as
    /// its format; more than [`ImportOptions::max_rejected`] rejected rows
    /// ([`Error::Rejected`], listing the first ones).
    ///
    /// # Example
    /// ```
    /// # tokio::runtime::Runtime::new().unwrap().block_on(async {
    /// use dynql::io::ImportOptions;
    /// use dynql::{Database, SelectOptions};
    /// let dir = tempfile::tempdir().unwrap();
    /// let csv = dir.path().join("rows.csv");
    /// std::fs::write(&csv, "k,v\n2,two\n1,one\n2,TWO\n").unwrap();
    /// let db = Database::open("memory://")?;
    /// db.create_table_from_text("//t", "{dynamic=%true; schema=[{name=k;type=int64;sort_order=ascending};{name=v;type=string}]}").await?;
    /// let report = db.import("//t", &[csv.display().to_string()], &ImportOptions::default()).await?;
    /// assert_eq!((report.rows_imported, report.duplicates_folded), (2, 1));
    /// let rows = db.select_rows("v from [//t]", &SelectOptions::default()).await?.rows;
    /// assert_eq!(rows, [[dynql::Value::string("one")], [dynql::Value::string("TWO")]]);
    /// # Ok::<(), dynql::Error>(()) }).unwrap();
    /// ```
    pub async fn import(
        &self,
        path: &str,
        sources: &[String],
        options: &ImportOptions,
    ) -> Result<ImportReport> {
        let started = Instant::now();
        let entry = self.store().table(path).await?;
        let sorted = entry.schema.is_sorted();
        let files = expand_sources(sources, options.format)?;
        // Fail before reading anything when the table cannot take the rows.
        let bulk = if sorted {
            Some(self.store().start_bulk_write(path).await?)
        } else {
            None
        };
        let converter = Converter::new(&entry)?;
        let total_bytes: u64 = files.iter().map(|f| f.size).sum();
        let report = |progress: Progress| {
            if let Some(f) = &options.progress {
                f(&progress)
            }
        };
        // Sorted tables: accepted rows go to the bulk write's sort as they come (it holds
        // about `sort_memory` bytes and spills sorted runs). Ordered: held until the append.
        let mut bulk = bulk;
        if let Some(bulk) = &mut bulk {
            bulk.set_sort_memory(options.sort_memory);
        }
        let mut batches: Vec<RecordBatch> = Vec::new();
        let mut tablets: Vec<Option<usize>> = Vec::new();
        let mut rows_read = 0u64;
        let mut rejected = 0u64;
        let mut examples = Vec::new();
        let mut bytes_before = 0u64;
        for file in &files {
            for input in read_batches(file, options.columns.as_deref())? {
                let input = input?;
                let bytes = bytes_before + input.bytes_read;
                let converted = converter.convert(&file.name, input)?;
                rows_read += (converted.batch.num_rows() + converted.rejected.len()) as u64;
                for r in converted.rejected {
                    rejected += 1;
                    if let Some(f) = &options.on_rejected {
                        f(&r);
                    }
                    if examples.len() < REJECTED_EXAMPLES {
                        examples.push(r);
                    }
                }
                if rejected > options.max_rejected {
                    // The import will fail: keep checking (for the full count and the
                    // rejected-row callback) but stop holding rows.
                    bulk = None;
                    batches = Vec::new();
                    tablets = Vec::new();
                } else if converted.batch.num_rows() > 0 {
                    match &mut bulk {
                        Some(bulk) => {
                            self.store()
                                .stage_bulk_batch(bulk, &converted.batch)
                                .await?
                        }
                        None => {
                            batches.push(converted.batch);
                            tablets.extend(converted.tablets);
                        }
                    }
                }
                report(Progress {
                    phase: Phase::Reading,
                    rows: rows_read,
                    bytes,
                    total: Some(total_bytes),
                });
            }
            bytes_before += file.size;
        }
        if rejected > options.max_rejected {
            return Err(Error::Rejected {
                count: rejected,
                allowed: options.max_rejected,
                examples,
            });
        }
        let (rows_imported, duplicates_folded, timestamp) = match bulk {
            Some(mut bulk) => {
                let staged = bulk.staged_rows();
                self.store()
                    .write_bulk_rows(&mut bulk, &mut |written| {
                        report(Progress {
                            phase: Phase::Writing,
                            rows: written,
                            bytes: total_bytes,
                            total: Some(staged),
                        })
                    })
                    .await?;
                let (written, folded) = (bulk.rows_written(), bulk.duplicates_folded());
                let timestamp = if written == 0 {
                    None
                } else {
                    Some(self.store().commit_bulk_write(bulk).await?)
                };
                (written, folded, timestamp)
            }
            None => {
                let types: Vec<_> = entry
                    .schema
                    .columns()
                    .iter()
                    .map(|c| c.wire_type())
                    .collect();
                // One tablet for every row that names none, so that input order is kept.
                let default_tablet = random_below(entry.tablet_count.max(1));
                let mut rows = Vec::with_capacity(tablets.len());
                let mut tablet = tablets.into_iter();
                for batch in &batches {
                    for row in batch_to_rows(batch, &types) {
                        let t = tablet.next().flatten().unwrap_or(default_tablet);
                        rows.push((Some(t), row.into_iter().map(Some).collect::<RowValues>()));
                    }
                }
                let count = rows.len() as u64;
                let timestamp = if rows.is_empty() {
                    None
                } else {
                    Some(self.store().append_rows(path, rows).await?)
                };
                report(Progress {
                    phase: Phase::Writing,
                    rows: count,
                    bytes: total_bytes,
                    total: Some(count),
                });
                (count, 0, timestamp)
            }
        };
        Ok(ImportReport {
            files: files.len(),
            bytes_read: total_bytes,
            rows_read,
            rows_imported,
            duplicates_folded,
            rejected,
            rejected_examples: examples,
            timestamp,
            elapsed: started.elapsed(),
        })
    }
}

/// A number in `0..n` that differs from run to run (which tablet an ordered import fills).
fn random_below(n: usize) -> usize {
    let mut h = std::collections::hash_map::RandomState::new().build_hasher();
    h.write_u64(0);
    (h.finish() % n as u64) as usize
}
