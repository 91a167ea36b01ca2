//! A bulk write's chunk, encoded straight from Arrow: key-sorted rows of a table, given as a
//! record batch in the table's Arrow schema, become a versioned chunk of overwrites (every
//! column written, placeholder timestamps: see [`ChunkRef::commit_timestamp`]) without a
//! detour through rows of values.

use std::sync::Arc;

use arrow::array::{Array, AsArray, BinaryArray, BooleanArray, UInt64Array, UInt8Array};
use arrow::datatypes::{Float64Type, Int64Type, UInt64Type};
use arrow::record_batch::RecordBatch;

use dynql_core::arrow_convert::array_value;
use dynql_core::{TableSchema, Value, ValueType};

use crate::chunk::{kind_code, versioned_schema, ChunkEncoder, ROW_GROUP_ROWS};
use crate::error::{Error, Result};
use crate::kernel::chunk_ref::{keys_can_be_clean, ChunkRef, Cleanliness, RowGroupRef};
use crate::kernel::codec::CompressionCodec;
use crate::kernel::mvcc::WriteKind;
use crate::key_filter::KeyFilterBuilder;

/// The key of row `row` of `rows` (key columns first, of `types`).
pub(crate) fn key_at(rows: &RecordBatch, types: &[ValueType], row: usize) -> Vec<Value> {
    types
        .iter()
        .enumerate()
        .map(|(c, t)| array_value(rows.column(c).as_ref(), *t, row))
        .collect()
}

/// Checks rows for a bulk write of `path`: in the table's Arrow schema, no null key.
pub(crate) fn check_bulk_rows(schema: &TableSchema, path: &str, rows: &RecordBatch) -> Result<()> {
    let expected = dynql_core::arrow_convert::table_arrow_schema(schema);
    let types_match = rows.num_columns() == expected.fields().len()
        && rows
            .schema()
            .fields()
            .iter()
            .zip(expected.fields())
            .all(|(a, b)| a.data_type() == b.data_type());
    if !types_match {
        return Err(Error::Invalid(format!(
            "a bulk write to {path} needs rows in the table's Arrow schema {expected:?}, not {:?}",
            rows.schema()
        )));
    }
    let key_count = schema.key_column_count();
    if let Some(c) = (0..key_count).find(|&c| rows.column(c).null_count() > 0) {
        return Err(Error::Invalid(format!(
            "a bulk write to {path} has a null in key column {:?}: bulk writes take non-null keys (write such rows with write_rows)",
            schema.columns()[c].name
        )));
    }
    // The sizes every write checks (dynql_core::limits), column by column.
    let mut weights = vec![1u64; rows.num_rows()];
    for (column, array) in schema.columns().iter().zip(rows.columns()) {
        let max = dynql_core::limits::MAX_VALUE_BYTES;
        let mut first = None;
        crate::kernel::weight::add_row_weights(array.as_ref(), &mut weights, max, |r, n| {
            first.get_or_insert((r, n));
        });
        if let Some((row, length)) = first {
            let message = dynql_core::limits::value_too_long(&column.name, length);
            return Err(
                crate::validate::RowFault::of_column(&column.name, message).of_row(path, row)
            );
        }
    }
    if let Some(row) = weights
        .iter()
        .position(|&w| w > dynql_core::limits::MAX_ROW_WEIGHT)
    {
        let message = dynql_core::limits::row_too_heavy(weights[row]);
        return Err(crate::validate::RowFault {
            column: None,
            message,
        }
        .of_row(path, row));
    }
    for (c, column) in schema.key_columns().iter().enumerate() {
        if let Some(doubles) = rows.column(c).as_primitive_opt::<Float64Type>() {
            if let Some(row) = doubles.values().iter().position(|d| d.is_nan()) {
                return Err(crate::validate::nan_key(&column.name).of_row(path, row));
            }
        }
    }
    Ok(())
}

/// `rows` (checked by [`check_bulk_rows`]) as a versioned batch of overwrites.
fn encode_overwrites(schema: &TableSchema, rows: &RecordBatch) -> Result<RecordBatch> {
    let n = rows.num_rows();
    let width = schema.columns().len();
    let mut written = vec![0u8; width.div_ceil(8)];
    for i in 0..width {
        written[i / 8] |= 1 << (i % 8);
    }
    let mut columns = rows.columns().to_vec();
    columns.push(Arc::new(UInt64Array::from(vec![0u64; n])));
    columns.push(Arc::new(UInt8Array::from(vec![
        kind_code(
            WriteKind::Overwrite
        );
        n
    ])));
    columns.push(Arc::new(BooleanArray::from(vec![false; n])));
    columns.push(Arc::new(BinaryArray::from_iter_values(
        std::iter::repeat_n(written.as_slice(), n),
    )));
    Ok(RecordBatch::try_new(versioned_schema(schema), columns)?)
}

/// The columns of `rows` (byte strings and 64-bit numbers) whose first values are mostly
/// distinct: a dictionary would not pay for the hashing it costs (the chunk's later row
/// groups are alike in bulk data; a wrong guess only costs size or time, never correctness).
fn mostly_distinct_columns(rows: &RecordBatch) -> Vec<&str> {
    const SAMPLE: usize = 4096;
    fn mostly_distinct<T: std::hash::Hash + Eq>(sample: impl Iterator<Item = T>) -> bool {
        let sample: Vec<T> = sample.take(SAMPLE).collect();
        let distinct: std::collections::HashSet<&T> = sample.iter().collect();
        distinct.len() * 2 > sample.len()
    }
    let schema = rows.schema_ref();
    rows.columns()
        .iter()
        .enumerate()
        .filter(|(_, c)| {
            if let Some(values) = c.as_binary_opt::<i32>() {
                mostly_distinct(values.iter().flatten())
            } else if let Some(values) = c.as_primitive_opt::<Int64Type>() {
                mostly_distinct(values.iter().flatten())
            } else if let Some(values) = c.as_primitive_opt::<UInt64Type>() {
                mostly_distinct(values.iter().flatten())
            } else if let Some(values) = c.as_primitive_opt::<Float64Type>() {
                mostly_distinct(values.iter().flatten().map(f64::to_bits))
            } else {
                false
            }
        })
        .map(|(i, _)| schema.field(i).name().as_str())
        .collect()
}

/// The double columns of `rows` holding a NaN.
fn nan_columns(rows: &RecordBatch) -> Vec<usize> {
    (0..rows.num_columns())
        .filter(|&c| {
            rows.column(c)
                .as_primitive_opt::<Float64Type>()
                .is_some_and(|a| a.iter().flatten().any(f64::is_nan))
        })
        .collect()
}

/// One chunk of a bulk write, encoded as its key-sorted rows stream in (each key once, in the
/// table's Arrow schema), with its row groups' key bounds, cleanliness and NaN columns recorded
/// as a flush records them.
pub(crate) struct BulkChunkWriter {
    path: String,
    schema: TableSchema,
    key_types: Vec<ValueType>,
    /// Created with the first rows, which tell the columns not worth a dictionary.
    encoder: Option<ChunkEncoder>,
    rows: usize,
    row_groups: Vec<RowGroupRef>,
    min_key: Vec<Value>,
    max_key: Vec<Value>,
    /// Bytes to reserve for the encoded file up front (a guess: growing the buffer as the
    /// file grows copies it over and over).
    capacity: usize,
    /// The chunk's key filters, when the table asks for them ([`crate::key_filter`]).
    key_filter: Option<KeyFilterBuilder>,
    /// The table's `compression_codec`.
    codec: CompressionCodec,
}

/// A bulk chunk encoded: its reference, its file and its key filter file.
pub(crate) struct EncodedChunk {
    pub(crate) chunk: ChunkRef,
    pub(crate) bytes: bytes::Bytes,
    pub(crate) key_filter: Option<bytes::Bytes>,
}

impl BulkChunkWriter {
    /// A writer of the chunk at `path`, reserving `capacity` bytes for its file (e.g. the
    /// size of the write's previous chunk), compressed with `codec`.
    pub(crate) fn new(
        path: String,
        schema: &TableSchema,
        capacity: usize,
        key_filters: Vec<(usize, u8)>,
        codec: CompressionCodec,
    ) -> Result<BulkChunkWriter> {
        Ok(BulkChunkWriter {
            capacity,
            codec,
            key_filter: KeyFilterBuilder::new(key_filters),
            path,
            schema: schema.clone(),
            key_types: schema.key_columns().iter().map(|c| c.wire_type()).collect(),
            encoder: None,
            rows: 0,
            row_groups: Vec::new(),
            min_key: Vec::new(),
            max_key: Vec::new(),
        })
    }

    /// The bytes to reserve for a chunk of `rows` rows like those of `batch`: their values'
    /// size in memory (of the rows `batch` holds, not of buffers it slices: about what plain
    /// pages take), the version columns, and a quarter more for page headers, statistics
    /// and the page index (too little costs a copy of the whole file).
    pub(crate) fn capacity_for(batch: &RecordBatch, rows: usize) -> Result<usize> {
        /// The version columns of a bulk row, dictionary-encoded: a few bits each.
        const VERSION_BYTES: usize = 2;
        let mut bytes = 0;
        for column in batch.columns() {
            bytes += column.to_data().get_slice_memory_size()?;
        }
        let per_row = bytes / batch.num_rows().max(1) + VERSION_BYTES;
        let estimate = per_row.saturating_mul(rows);
        Ok(estimate.saturating_add(estimate / 4))
    }

    /// Appends rows whose keys all follow the rows before.
    pub(crate) fn write(&mut self, rows: &RecordBatch) -> Result<()> {
        let n = rows.num_rows();
        if n == 0 {
            return Ok(());
        }
        // Overwrites of every column, one per key: clean where the keys can be.
        let clean = if keys_can_be_clean(&self.schema) {
            Cleanliness::Since(0)
        } else {
            Cleanliness::Dirty
        };
        // The encoder cuts a row group every ROW_GROUP_ROWS rows of the chunk: follow its cuts.
        let mut start = 0;
        while start < n {
            let in_group = self.rows % ROW_GROUP_ROWS;
            let end = (start + ROW_GROUP_ROWS - in_group).min(n);
            let part = rows.slice(start, end - start);
            let last = key_at(rows, &self.key_types, end - 1);
            if let Some(filter) = &mut self.key_filter {
                if in_group == 0 && self.rows > 0 {
                    filter.finish_group();
                }
                for i in start..end {
                    filter.add(&key_at(rows, &self.key_types, i));
                }
            }
            if in_group == 0 {
                self.row_groups.push(RowGroupRef {
                    rows: 0,
                    min_key: key_at(rows, &self.key_types, start),
                    max_key: Vec::new(),
                    clean,
                    nan_columns: Some(Vec::new()),
                });
            }
            let group = self.row_groups.last_mut().expect("a row group was opened");
            group.rows += (end - start) as u64;
            group.max_key = last.clone();
            if let Some(nan) = &mut group.nan_columns {
                for c in nan_columns(&part) {
                    if !nan.contains(&c) {
                        nan.push(c);
                    }
                }
                nan.sort_unstable();
            }
            if self.rows == 0 {
                self.min_key = key_at(rows, &self.key_types, 0);
            }
            self.max_key = last;
            self.rows += end - start;
            start = end;
        }
        let encoder = match &mut self.encoder {
            Some(encoder) => encoder,
            None => {
                let plain = mostly_distinct_columns(rows);
                self.encoder.insert(ChunkEncoder::for_table(
                    &self.schema,
                    &plain,
                    self.capacity,
                    self.codec,
                )?)
            }
        };
        encoder.write(&encode_overwrites(&self.schema, rows)?)
    }

    /// Finishes encoding the chunk: its reference and its bytes, to upload with
    /// [`crate::chunk::put_encoded`]; `None` when no row was written.
    pub(crate) fn encode(self) -> Result<Option<EncodedChunk>> {
        if self.rows == 0 {
            return Ok(None);
        }
        let Some(encoder) = self.encoder else {
            return Ok(None);
        };
        let (bytes, checksum) = encoder.finish()?;
        let (key_filter, key_filter_bytes) = match self.key_filter {
            Some(mut filter) => {
                filter.finish_group();
                let (bytes, reference) = filter.finish();
                (Some(reference), Some(bytes))
            }
            None => (None, None),
        };
        let chunk = ChunkRef {
            path: self.path,
            rows: self.rows as u64,
            min_key: self.min_key,
            max_key: self.max_key,
            min_timestamp: 0,
            max_timestamp: 0,
            bytes: bytes.len() as u64,
            row_groups: self.row_groups,
            checksum: Some(checksum),
            commit_timestamp: None,
            key_filter,
        };
        Ok(Some(EncodedChunk {
            chunk,
            bytes,
            key_filter: key_filter_bytes,
        }))
    }
}

#[cfg(test)]
mod tests {
    use arrow::array::{ArrayRef, BinaryArray, Int64Array};
    use arrow::datatypes::{DataType, Field, Schema};

    use super::*;

    #[test]
    fn a_chunk_reserves_about_its_rows_size_however_its_batch_was_sliced() {
        let n = 100_000;
        let batch = RecordBatch::try_new(
            Arc::new(Schema::new(vec![
                Field::new("k", DataType::Int64, false),
                Field::new("v", DataType::Binary, true),
            ])),
            vec![
                Arc::new(Int64Array::from_iter_values(0..n)) as ArrayRef,
                Arc::new(BinaryArray::from_iter_values(
                    (0..n).map(|i| format!("value-{i:06}").into_bytes()),
                )),
            ],
        )
        .unwrap();
        // 8 (key) + 4 (offset) + 12 (bytes) + 2 (versions) per row, and a quarter more.
        let expected = 26 * 1000 + 26 * 1000 / 4;
        let near = |got: usize| got.abs_diff(expected) <= 100;
        let whole = BulkChunkWriter::capacity_for(&batch, 1000).unwrap();
        assert!(near(whole), "{whole}");
        // A slice of a large batch is measured by its own rows, not the buffers it shares.
        let slice = BulkChunkWriter::capacity_for(&batch.slice(10, 100), 1000).unwrap();
        assert!(near(slice), "{slice}");
    }
}
