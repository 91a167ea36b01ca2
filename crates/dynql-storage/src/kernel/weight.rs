//! YT's data weight: one byte per row plus each value's size (8 bytes for numbers, 1 for a
//! boolean, the bytes of a string, nothing for null), for rows and for Arrow batches.

use arrow::record_batch::RecordBatch;
use dynql_core::Value;

/// YT's data weight of a value.
pub fn value_weight(v: &Value) -> u64 {
    match v {
        Value::Null => 0,
        Value::Int64(_) | Value::Uint64(_) | Value::Double(_) => 8,
        Value::Boolean(_) => 1,
        Value::String(b) | Value::Any(b) => b.len() as u64,
    }
}

/// YT's data weight of a row: one byte plus the values' weights.
pub fn row_weight(row: &[Value]) -> u64 {
    1 + row.iter().map(value_weight).sum::<u64>()
}

/// YT's data weight of a batch: one byte per row plus each value's size.
pub fn batch_weight(batch: &RecordBatch) -> u64 {
    use arrow::array::{Array, AsArray};
    use arrow::datatypes::DataType;
    let mut weight = batch.num_rows() as u64;
    for column in batch.columns() {
        let present = (column.len() - column.null_count()) as u64;
        weight += match column.data_type() {
            DataType::Boolean => present,
            DataType::Binary => {
                let a = column.as_binary::<i32>();
                let offsets = a.value_offsets();
                (offsets[offsets.len() - 1] - offsets[0]) as u64
            }
            DataType::Utf8 => {
                let a = column.as_string::<i32>();
                let offsets = a.value_offsets();
                (offsets[offsets.len() - 1] - offsets[0]) as u64
            }
            DataType::BinaryView => view_bytes(column.as_binary_view().views(), column.nulls()),
            DataType::Utf8View => view_bytes(column.as_string_view().views(), column.nulls()),
            _ => 8 * present,
        };
    }
    weight
}

/// The bytes of the present values of byte-string views (a view's low 32 bits are its
/// value's length).
fn view_bytes(views: &[u128], nulls: Option<&arrow::buffer::NullBuffer>) -> u64 {
    views
        .iter()
        .enumerate()
        .filter(|(i, _)| nulls.is_none_or(|n| n.is_valid(*i)))
        .map(|(_, v)| u64::from(*v as u32))
        .sum()
}
