//! [`Database::import`]: bulk-load files into an existing table (design note 0007).
//!
//! ```text
//! files ─▶ batches of ≤ 8192 rows ─▶ Converter ─▶ accepted rows (Arrow) + keys ─┐
//!                                        └─▶ rejected rows ─▶ count, examples, callback
//! all read ─▶ too many rejected? fail, nothing written
//!          ─▶ sorted: sort by key (Arrow row format), keep each key's last row
//!             ─▶ bulk write: key-sorted chunks per tablet ─▶ one commit
//!          ─▶ ordered: append in input order ─▶ one commit
//! ```

use std::hash::{BuildHasher, Hasher};
use std::time::{Duration, Instant};

use arrow::compute::interleave_record_batch;
use arrow::record_batch::RecordBatch;
use arrow::row::{RowConverter, SortField};

use dynql_core::arrow_convert::batch_to_rows;
use dynql_core::{compare_rows, Value};
use dynql_storage::{RowValues, Timestamp};

use crate::database::Database;
use crate::error::{Error, Result};
use crate::io::convert::Converter;
use crate::io::source::{expand_sources, read_batches};
use crate::io::{
    seconds, FileFormat, Phase, Progress, ProgressFn, RejectedFn, RejectedRow, REJECTED_EXAMPLES,
};

/// Rows per bulk-write batch unless [`ImportOptions::write_batch_rows`] says otherwise.
pub const DEFAULT_WRITE_BATCH_ROWS: usize = 100_000;

/// How [`Database::import`] reads and what it tolerates.
#[derive(Clone)]
pub struct ImportOptions {
    /// The format of every input file; `None` tells it from each file's extension.
    pub format: Option<FileFormat>,
    /// The most rejected rows to tolerate (default 0): up to this many, the valid rows are
    /// imported and the rejected ones reported; beyond it, the import fails and writes
    /// nothing.
    pub max_rejected: u64,
    /// Rows per write batch of a sorted table (each a chunk; all committed together).
    pub write_batch_rows: usize,
    /// Called as the import advances.
    pub progress: Option<ProgressFn>,
    /// Called for every rejected row, whether or not the import then fails.
    pub on_rejected: Option<RejectedFn>,
}

impl Default for ImportOptions {
    fn default() -> ImportOptions {
        ImportOptions {
            format: None,
            max_rejected: 0,
            write_batch_rows: DEFAULT_WRITE_BATCH_ROWS,
            progress: None,
            on_rejected: None,
        }
    }
}

impl std::fmt::Debug for ImportOptions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ImportOptions")
            .field("format", &self.format)
            .field("max_rejected", &self.max_rejected)
            .field("write_batch_rows", &self.write_batch_rows)
            .field("progress", &self.progress.is_some())
            .field("on_rejected", &self.on_rejected.is_some())
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
    /// order given. Columns are matched to the schema by name; a schema column the input
    /// lacks is null. Values are converted to the column types (CSV text is parsed per
    /// type; an empty CSV field is null). Computed key columns are evaluated as on insert;
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
    /// (strict) schema lacks, a key column is missing or null, a required column is missing
    /// or null, or a computed column cannot be evaluated or disagrees. Every row is checked
    /// before anything is written; the write is a single commit, so a failed import leaves
    /// the table as it was.
    ///
    /// Memory: the accepted rows are held as Arrow batches (plus their keys in Arrow's row
    /// format, or as values when a key column is a double) until they are sorted; the write
    /// then encodes one batch of [`ImportOptions::write_batch_rows`] at a time, and the rows
    /// land as the table's chunks (opening the store later does not read them).
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
        if options.write_batch_rows == 0 {
            return Err(Error::Invalid("write_batch_rows must be positive".into()));
        }
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
        let mut batches: Vec<RecordBatch> = Vec::new();
        let mut keys: Vec<Vec<Value>> = Vec::new();
        // Keys with no double column sort by Arrow's row format (its byte order is YT's for
        // integers, booleans and strings): the converter's keys as values need not be kept.
        let by_bytes = sorted
            && entry
                .schema
                .key_columns()
                .iter()
                .all(|c| c.wire_type() != dynql_core::ValueType::Double);
        let mut tablets: Vec<Option<usize>> = Vec::new();
        let mut rows_read = 0u64;
        let mut rejected = 0u64;
        let mut examples = Vec::new();
        let mut bytes_before = 0u64;
        for file in &files {
            for input in read_batches(file)? {
                let input = input?;
                let bytes = bytes_before + input.bytes_read;
                let converted = converter.convert(&file.name, input)?;
                if sorted && converted.keys.len() != converted.batch.num_rows() {
                    // The rows are later found by their keys' positions: never guess.
                    return Err(Error::Invalid(format!(
                        "internal: {} accepted rows of {} but {} keys",
                        converted.batch.num_rows(),
                        file.name,
                        converted.keys.len()
                    )));
                }
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
                    batches = Vec::new();
                    keys = Vec::new();
                    tablets = Vec::new();
                } else if converted.batch.num_rows() > 0 {
                    batches.push(converted.batch);
                    if !by_bytes {
                        keys.extend(converted.keys);
                    }
                    tablets.extend(converted.tablets);
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
        let types: Vec<_> = entry
            .schema
            .columns()
            .iter()
            .map(|c| c.wire_type())
            .collect();
        let full = |batch: &RecordBatch| -> Vec<RowValues> {
            batch_to_rows(batch, &types)
                .into_iter()
                .map(|r| r.into_iter().map(Some).collect())
                .collect()
        };
        let (rows_imported, duplicates_folded, timestamp) = match bulk {
            Some(mut bulk) => {
                let (order, duplicates) = if by_bytes {
                    last_row_per_key_by_bytes(&batches, entry.schema.key_column_count())?
                } else {
                    last_row_per_key(&keys)
                };
                drop(keys);
                let locations: Vec<(usize, usize)> = batches
                    .iter()
                    .enumerate()
                    .flat_map(|(b, batch)| (0..batch.num_rows()).map(move |r| (b, r)))
                    .collect();
                let refs: Vec<&RecordBatch> = batches.iter().collect();
                let mut written = 0u64;
                for part in order.chunks(options.write_batch_rows) {
                    let indices: Vec<(usize, usize)> = part.iter().map(|&i| locations[i]).collect();
                    let batch = interleave_record_batch(&refs, &indices)
                        .map_err(|e| Error::Invalid(format!("internal: {e}")))?;
                    self.store().stage_bulk_batch(&mut bulk, &batch).await?;
                    written += part.len() as u64;
                    report(Progress {
                        phase: Phase::Writing,
                        rows: written,
                        bytes: total_bytes,
                        total: Some(order.len() as u64),
                    });
                }
                let timestamp = if order.is_empty() {
                    None
                } else {
                    Some(self.store().commit_bulk_write(bulk).await?)
                };
                (order.len() as u64, duplicates, timestamp)
            }
            None => {
                // One tablet for every row that names none, so that input order is kept.
                let default_tablet = random_below(entry.tablet_count.max(1));
                let mut rows = Vec::with_capacity(tablets.len());
                let mut tablet = tablets.into_iter();
                for batch in &batches {
                    for row in full(batch) {
                        let t = tablet.next().flatten().unwrap_or(default_tablet);
                        rows.push((Some(t), row));
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

/// Positions of the rows to keep, in key order: of each run of equal keys the last in input
/// order (the sort is stable, so a run is in input order). Also returns how many were folded.
fn last_row_per_key(keys: &[Vec<Value>]) -> (Vec<usize>, u64) {
    let mut order: Vec<usize> = (0..keys.len()).collect();
    order.sort_by(|&a, &b| compare_rows(&keys[a], &keys[b]));
    let mut kept = Vec::with_capacity(order.len());
    for (i, &row) in order.iter().enumerate() {
        let next_is_same = order
            .get(i + 1)
            .is_some_and(|&next| compare_rows(&keys[row], &keys[next]).is_eq());
        if !next_is_same {
            kept.push(row);
        }
    }
    let folded = (order.len() - kept.len()) as u64;
    (kept, folded)
}

/// [`last_row_per_key`] of the rows of `batches` (in input order), keys being their first
/// `key_count` columns, none of them a double: compared in Arrow's row format, whose byte
/// order is YT's order for integers, booleans and strings (a double's is not: -0.0, NaN).
fn last_row_per_key_by_bytes(
    batches: &[RecordBatch],
    key_count: usize,
) -> Result<(Vec<usize>, u64)> {
    let internal = |e: arrow::error::ArrowError| Error::Invalid(format!("internal: {e}"));
    let Some(first) = batches.first() else {
        return Ok((Vec::new(), 0));
    };
    let fields = first.columns()[..key_count]
        .iter()
        .map(|c| SortField::new(c.data_type().clone()))
        .collect();
    let converter = RowConverter::new(fields).map_err(internal)?;
    let total: usize = batches.iter().map(RecordBatch::num_rows).sum();
    let mut rows = converter.empty_rows(total, total * 16);
    for b in batches {
        converter
            .append(&mut rows, &b.columns()[..key_count])
            .map_err(internal)?;
    }
    let mut order: Vec<usize> = (0..total).collect();
    // Equal keys in input order, as a stable sort would leave them.
    order.sort_unstable_by(|&a, &b| rows.row(a).cmp(&rows.row(b)).then(a.cmp(&b)));
    let mut kept = Vec::with_capacity(order.len());
    for (i, &row) in order.iter().enumerate() {
        let next_is_same = order
            .get(i + 1)
            .is_some_and(|&next| rows.row(row) == rows.row(next));
        if !next_is_same {
            kept.push(row);
        }
    }
    let folded = (order.len() - kept.len()) as u64;
    Ok((kept, folded))
}

/// A number in `0..n` that differs from run to run (which tablet an ordered import fills).
fn random_below(n: usize) -> usize {
    let mut h = std::collections::hash_map::RandomState::new().build_hasher();
    h.write_u64(0);
    (h.finish() % n as u64) as usize
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_last_row_of_each_key_is_kept_in_key_order() {
        let k = |v: i64| vec![Value::Int64(v)];
        let keys = vec![k(3), k(1), k(3), k(2), k(1), k(3)];
        let (kept, folded) = last_row_per_key(&keys);
        assert_eq!(kept, vec![4, 3, 5]);
        assert_eq!(folded, 3);
    }

    proptest::proptest! {
        /// Sorting by Arrow's row format keeps the rows sorting by values keeps, in the same
        /// order (signed integers and byte strings, split over batches).
        #[test]
        fn byte_order_sorts_as_values_do(
            keys in proptest::collection::vec((-3i64..3, "[ab]{0,2}"), 0..60),
            cut in 0usize..60,
        ) {
            use arrow::array::{BinaryArray, Int64Array};
            let values: Vec<Vec<Value>> = keys
                .iter()
                .map(|(i, s)| vec![Value::Int64(*i), Value::String(s.as_bytes().to_vec())])
                .collect();
            let batch = |part: &[(i64, String)]| {
                RecordBatch::try_from_iter([
                    ("i", std::sync::Arc::new(Int64Array::from_iter_values(part.iter().map(|k| k.0))) as _),
                    ("s", std::sync::Arc::new(BinaryArray::from_iter_values(part.iter().map(|k| k.1.as_bytes()))) as _),
                ])
                .unwrap()
            };
            let cut = cut.min(keys.len());
            let batches = [batch(&keys[..cut]), batch(&keys[cut..])];
            proptest::prop_assert_eq!(
                last_row_per_key_by_bytes(&batches, 2).unwrap(),
                last_row_per_key(&values)
            );
        }
    }
}
