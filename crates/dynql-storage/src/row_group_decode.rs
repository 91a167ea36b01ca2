//! How a row group is decoded from its chunk file: every column (to inspect its versions),
//! or only some columns (Parquet's projection) with byte strings straight into views, and
//! string columns Parquet stores as dictionaries kept as dictionaries where values repeat.

use std::sync::Arc;

use arrow::array::{ArrayRef, AsArray};
use arrow::datatypes::{DataType, Field, Int32Type, Schema, SchemaRef};
use arrow::record_batch::RecordBatch;
use parquet::arrow::arrow_reader::{ArrowReaderMetadata, RowSelection};
use parquet::arrow::async_reader::ParquetRecordBatchStreamBuilder;
use parquet::basic::Encoding;
use parquet::file::metadata::{ColumnChunkMetaData, ParquetMetaData};

use dynql_core::TableSchema;

use crate::error::{Error, Result};
use crate::io::object_file::ObjectFile;
use crate::kernel::chunk_ref::ChunkRef;

/// A row group as Parquet decodes it (table columns plus the version columns), and since
/// when it is clean (see [`crate::kernel::chunk_ref::clean_since`]), if it is.
pub(crate) struct RawRowGroup {
    pub(crate) batch: RecordBatch,
    pub(crate) clean_since: Option<u64>,
}

/// A reader of row group `index` of `chunk` (or its row window `rows`), and the rows it
/// gives.
pub(crate) fn row_group_reader(
    chunk: &ChunkRef,
    footer: ArrowReaderMetadata,
    reader: ObjectFile,
    index: usize,
    rows: &Option<std::ops::Range<usize>>,
) -> Result<(ParquetRecordBatchStreamBuilder<ObjectFile>, usize)> {
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
        .with_row_groups(vec![index]);
    let mut expected = total;
    if let Some(w) = rows {
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
    Ok((builder, expected))
}

/// The decoded batches of one row group as one batch, which must hold `expected` rows.
pub(crate) fn one_batch(
    path: &str,
    index: usize,
    mut batches: Vec<RecordBatch>,
    expected: usize,
) -> Result<RecordBatch> {
    let batch = if batches.len() == 1 {
        batches.pop()
    } else {
        batches
            .first()
            .map(|b| b.schema())
            .map(|schema| arrow::compute::concat_batches(&schema, &batches))
            .transpose()?
    };
    batch
        .filter(|b| b.num_rows() == expected)
        .ok_or_else(|| Error::Corrupt {
            path: path.to_string(),
            message: format!("row group {index} does not hold the {expected} rows expected"),
        })
}

/// `schema` with every `Binary` field as `BinaryView`, for Parquet to decode byte strings
/// straight to views, or (where every page of the field's column chunk in row group `index`
/// is dictionary-encoded) as a dictionary, which Parquet then hands over as it is stored.
pub(crate) fn views_schema(
    schema: &SchemaRef,
    metadata: &ParquetMetaData,
    index: usize,
) -> SchemaRef {
    let group = metadata.row_groups().get(index);
    let fields: Vec<Field> = schema
        .fields()
        .iter()
        .enumerate()
        .map(|(c, f)| match f.data_type() {
            DataType::Binary => {
                let dictionary = group
                    .and_then(|g| g.columns().get(c))
                    .is_some_and(all_pages_dictionary_encoded);
                let data_type = if dictionary {
                    DataType::Dictionary(Box::new(DataType::Int32), Box::new(DataType::Binary))
                } else {
                    DataType::BinaryView
                };
                Field::clone(f).with_data_type(data_type)
            }
            _ => Field::clone(f),
        })
        .collect();
    Arc::new(Schema::new_with_metadata(fields, schema.metadata().clone()))
}

/// Whether every data page of a column chunk is dictionary-encoded (Parquet writers fall
/// back to plain pages when a dictionary grows too large).
pub(crate) fn all_pages_dictionary_encoded(column: &ColumnChunkMetaData) -> bool {
    column.dictionary_page_offset().is_some()
        && column.page_encoding_stats_mask().is_some_and(|mask| {
            mask.is_only(Encoding::PLAIN_DICTIONARY) || mask.is_only(Encoding::RLE_DICTIONARY)
        })
}

/// Rows per distinct value from which a byte-string column stays dictionary-encoded in the
/// cache: a key of 4 bytes per row instead of a view of 16, and the scan expands the rows it
/// hands on (a gather of views) while they are in the CPU's cache.
const DICTIONARY_ROWS_PER_VALUE: usize = 4;

/// A decoded column as the cache keeps it: a dictionary of byte strings with few distinct
/// values keeps its keys, its values as views; any other dictionary becomes plain views.
pub(crate) fn few_values_as_dictionary(column: &ArrayRef) -> Result<ArrayRef> {
    let Some(dictionary) = column.as_dictionary_opt::<Int32Type>() else {
        return Ok(column.clone());
    };
    let values = arrow::compute::cast(dictionary.values(), &DataType::BinaryView)?;
    if values.len() * DICTIONARY_ROWS_PER_VALUE <= dictionary.len() {
        Ok(Arc::new(dictionary.with_values(values)))
    } else {
        Ok(arrow::compute::take(&values, dictionary.keys(), None)?)
    }
}

/// `column` with a dictionary of byte strings ([`few_values_as_dictionary`]) expanded to
/// views; other columns as they are.
pub(crate) fn expanded(column: &ArrayRef) -> Result<ArrayRef> {
    match column.as_dictionary_opt::<Int32Type>() {
        Some(dictionary) => Ok(arrow::compute::take(
            dictionary.values(),
            dictionary.keys(),
            None,
        )?),
        None => Ok(column.clone()),
    }
}

/// `batch` with every dictionary of byte strings ([`few_values_as_dictionary`]) expanded to
/// views.
pub(crate) fn expanded_batch(batch: &RecordBatch) -> Result<RecordBatch> {
    let columns = batch
        .columns()
        .iter()
        .map(expanded)
        .collect::<Result<Vec<_>>>()?;
    let fields: Vec<Field> = batch
        .schema()
        .fields()
        .iter()
        .zip(&columns)
        .map(|(f, c)| Field::clone(f).with_data_type(c.data_type().clone()))
        .collect();
    let options =
        arrow::record_batch::RecordBatchOptions::new().with_row_count(Some(batch.num_rows()));
    Ok(RecordBatch::try_new_with_options(
        Arc::new(Schema::new(fields)),
        columns,
        &options,
    )?)
}

/// Checks a raw row group's version columns: whether it is clean (see [`RawRowGroup`]).
pub(crate) fn inspect_raw(
    path: &str,
    schema: &TableSchema,
    batch: RecordBatch,
) -> Result<RawRowGroup> {
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
        clean_since: clean.then_some(max_timestamp),
    })
}

/// `batch` with every `Binary` column cast to `BinaryView`.
pub(crate) fn binary_as_views(batch: &RecordBatch) -> Result<RecordBatch> {
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
    // The row count is kept for batches of no columns.
    let options =
        arrow::record_batch::RecordBatchOptions::new().with_row_count(Some(batch.num_rows()));
    Ok(RecordBatch::try_new_with_options(
        Arc::new(Schema::new(fields)),
        columns,
        &options,
    )?)
}
