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
            DataType::Dictionary(key, value)
                if **key == DataType::Int32 && **value == DataType::BinaryView =>
            {
                dictionary_bytes(column.as_dictionary::<arrow::datatypes::Int32Type>())
            }
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

/// The bytes of the present values of a dictionary of byte-string views, as if expanded.
fn dictionary_bytes(
    dictionary: &arrow::array::DictionaryArray<arrow::datatypes::Int32Type>,
) -> u64 {
    use arrow::array::{Array, AsArray};
    let values = dictionary.values();
    let lengths: Vec<u64> = values
        .as_binary_view()
        .views()
        .iter()
        .enumerate()
        .map(|(i, v)| {
            if values.is_valid(i) {
                u64::from(*v as u32)
            } else {
                0
            }
        })
        .collect();
    let nulls = dictionary.nulls();
    dictionary
        .keys()
        .values()
        .iter()
        .enumerate()
        .filter(|(i, _)| nulls.is_none_or(|n| n.is_valid(*i)))
        .map(|(_, &k)| lengths.get(k as usize).copied().unwrap_or(0))
        .sum()
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use arrow::array::{ArrayRef, BinaryViewArray, DictionaryArray, Int32Array};
    use arrow::datatypes::{DataType, Field, Int32Type, Schema};

    use super::*;

    fn one_column(column: ArrayRef) -> RecordBatch {
        let schema = Schema::new(vec![Field::new("s", column.data_type().clone(), true)]);
        RecordBatch::try_new(Arc::new(schema), vec![column]).unwrap()
    }

    #[test]
    fn a_dictionary_of_views_weighs_as_its_rows_expanded() {
        let values = BinaryViewArray::from(vec![&b"alpha"[..], b"a long value past twelve bytes"]);
        let keys = Int32Array::from(vec![Some(1), None, Some(0), Some(1), Some(0)]);
        let dictionary = DictionaryArray::<Int32Type>::try_new(keys, Arc::new(values)).unwrap();
        let expanded = arrow::compute::cast(&dictionary, &DataType::BinaryView).unwrap();
        let as_dictionary = batch_weight(&one_column(Arc::new(dictionary)));
        assert_eq!(as_dictionary, batch_weight(&one_column(expanded)));
        // Five rows, and the bytes of the four present values.
        assert_eq!(as_dictionary, 5 + 2 * 30 + 2 * 5);
    }
}
