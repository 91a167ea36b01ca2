//! A bulk write's chunk, encoded straight from Arrow: key-sorted rows of a table, given as a
//! record batch in the table's Arrow schema, become a versioned chunk of overwrites (every
//! column written, placeholder timestamps: see [`ChunkRef::commit_timestamp`]) without a
//! detour through rows of values.

use std::sync::Arc;

use arrow::array::{Array, AsArray, BinaryArray, BooleanArray, UInt64Array, UInt8Array};
use arrow::datatypes::Float64Type;
use arrow::record_batch::RecordBatch;
use object_store::ObjectStore;

use dynql_core::arrow_convert::array_value;
use dynql_core::{compare_rows, TableSchema, Value, ValueType};

use crate::chunk::{
    keys_can_be_clean, kind_code, put_chunk, versioned_schema, ChunkRef, Cleanliness, RowGroupRef,
    ROW_GROUP_ROWS,
};
use crate::error::{Error, Result};
use crate::mvcc::WriteKind;

/// The key of row `row` of `rows` (key columns first, of `types`).
pub(crate) fn key_at(rows: &RecordBatch, types: &[ValueType], row: usize) -> Vec<Value> {
    types
        .iter()
        .enumerate()
        .map(|(c, t)| array_value(rows.column(c).as_ref(), *t, row))
        .collect()
}

/// Checks rows for a bulk write of `path`: in the table's Arrow schema, no null key, keys
/// strictly increasing (each key once).
pub(crate) fn check_sorted_rows(
    schema: &TableSchema,
    path: &str,
    rows: &RecordBatch,
) -> Result<()> {
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
    let types: Vec<ValueType> = schema.key_columns().iter().map(|c| c.wire_type()).collect();
    if let Some(c) = (0..key_count).find(|&c| rows.column(c).null_count() > 0) {
        return Err(Error::Invalid(format!(
            "a bulk write to {path} misses key column {:?} in some row",
            schema.columns()[c].name
        )));
    }
    let mut last: Option<Vec<Value>> = None;
    for r in 0..rows.num_rows() {
        let key = key_at(rows, &types, r);
        if let Some(last) = &last {
            if !compare_rows(last, &key).is_lt() {
                return Err(Error::Invalid(format!(
                    "a bulk write to {path} needs rows sorted by key, each key once: {} follows {}",
                    crate::chunk::key_text(&key),
                    crate::chunk::key_text(last)
                )));
            }
        }
        last = Some(key);
    }
    Ok(())
}

/// `rows` (checked by [`check_sorted_rows`]) as a versioned batch of overwrites.
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

/// Writes `rows` (checked by [`check_sorted_rows`]) at `path` as a bulk write's chunk, with
/// its row groups' key bounds, cleanliness and NaN columns recorded as a flush records them.
pub(crate) async fn write_bulk_chunk(
    objects: &dyn ObjectStore,
    path: String,
    schema: &TableSchema,
    rows: &RecordBatch,
) -> Result<Option<ChunkRef>> {
    let n = rows.num_rows();
    if n == 0 {
        return Ok(None);
    }
    let types: Vec<ValueType> = schema.key_columns().iter().map(|c| c.wire_type()).collect();
    // Overwrites of every column, one per key: clean where the keys can be.
    let clean = if keys_can_be_clean(schema) {
        Cleanliness::Since(0)
    } else {
        Cleanliness::Dirty
    };
    let row_groups = (0..n)
        .step_by(ROW_GROUP_ROWS)
        .map(|start| {
            let end = (start + ROW_GROUP_ROWS).min(n);
            RowGroupRef {
                rows: (end - start) as u64,
                min_key: key_at(rows, &types, start),
                max_key: key_at(rows, &types, end - 1),
                clean,
                nan_columns: Some(nan_columns(&rows.slice(start, end - start))),
            }
        })
        .collect();
    let (size, checksum) = put_chunk(objects, &path, encode_overwrites(schema, rows)?).await?;
    Ok(Some(ChunkRef {
        path,
        rows: n as u64,
        min_key: key_at(rows, &types, 0),
        max_key: key_at(rows, &types, n - 1),
        min_timestamp: 0,
        max_timestamp: 0,
        bytes: size,
        row_groups,
        checksum: Some(checksum),
        commit_timestamp: None,
    }))
}
