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
    batch.num_rows() as u64
        + batch
            .columns()
            .iter()
            .map(|c| column_weight(c.as_ref()))
            .sum::<u64>()
}

/// YT's data weight of a column's values (without the byte per row): 8 bytes per present
/// number, 1 per boolean, a string's bytes, nothing for null. A batch weighs its rows plus
/// its columns' weights, so a column weighed once (the chunk cache keeps the weight of
/// what it holds) need not be weighed again.
pub fn column_weight(column: &dyn arrow::array::Array) -> u64 {
    use arrow::array::AsArray;
    use arrow::datatypes::DataType;
    let present = (column.len() - column.null_count()) as u64;
    match column.data_type() {
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
    }
}

/// Adds each row's weight in `column` to `weights` (YT's data weight without the byte per
/// row), and calls `too_long(row, length)` for each byte string longer than `max_value`
/// bytes. Byte strings are `Binary` or `Utf8` (a table's Arrow schema); any other type weighs
/// 1 per present boolean and 8 per other present value.
pub fn add_row_weights(
    column: &dyn arrow::array::Array,
    weights: &mut [u64],
    max_value: usize,
    mut too_long: impl FnMut(usize, usize),
) {
    use arrow::array::AsArray;
    use arrow::datatypes::DataType;
    let offsets = match column.data_type() {
        DataType::Binary => Some(column.as_binary::<i32>().value_offsets()),
        DataType::Utf8 => Some(column.as_string::<i32>().value_offsets()),
        _ => None,
    };
    for (row, weight) in weights.iter_mut().enumerate() {
        if column.is_null(row) {
            continue;
        }
        *weight += match (offsets, column.data_type()) {
            (Some(o), _) => {
                let length = (o[row + 1] - o[row]) as usize;
                if length > max_value {
                    too_long(row, length);
                }
                length as u64
            }
            (None, DataType::Boolean) => 1,
            (None, _) => 8,
        };
    }
}

/// The bytes of the present values of byte-string views (a view's low 32 bits are its
/// value's length): the sum over all views (which the compiler vectorises) less the null
/// ones' (a null's view may hold any length).
fn view_bytes(views: &[u128], nulls: Option<&arrow::buffer::NullBuffer>) -> u64 {
    let all: u64 = views.iter().map(|v| u64::from(*v as u32)).sum();
    let null: u64 = nulls.filter(|n| n.null_count() > 0).map_or(0, |n| {
        (!n.inner())
            .set_indices()
            .map(|i| u64::from(views[i] as u32))
            .sum()
    });
    all - null
}

/// The bytes of the present values of a dictionary of byte-string views, as if expanded:
/// each value's length (none for a null value) summed over the rows' keys, less the null
/// rows'.
fn dictionary_bytes(
    dictionary: &arrow::array::DictionaryArray<arrow::datatypes::Int32Type>,
) -> u64 {
    use arrow::array::{Array, AsArray};
    let values = dictionary.values();
    // One more entry for keys past the values (none in a valid dictionary): nothing.
    let mut lengths: Vec<u64> = values
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
    lengths.push(0);
    let past = lengths.len() - 1;
    let length = |k: i32| lengths[(k as u32 as usize).min(past)];
    let keys = dictionary.keys().values();
    let all: u64 = keys.iter().map(|&k| length(k)).sum();
    let null: u64 = dictionary
        .keys()
        .nulls()
        .filter(|n| n.null_count() > 0)
        .map_or(0, |n| {
            (!n.inner()).set_indices().map(|i| length(keys[i])).sum()
        });
    all - null
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

    proptest::proptest! {
        /// Views and dictionaries of views (null rows, null values, slices) weigh one byte a
        /// row plus the bytes of the present values, counted one by one.
        #[test]
        fn byte_strings_weigh_their_present_values(
            values in proptest::collection::vec(proptest::option::of("[a-z]{0,20}"), 1..8),
            rows in proptest::collection::vec(proptest::option::of(0usize..8), 0..100),
            offset in 0usize..5,
        ) {
            let keys = Int32Array::from(
                rows.iter().map(|r| r.map(|r| (r % values.len()) as i32)).collect::<Vec<_>>(),
            );
            let dictionary_values = BinaryViewArray::from(
                values.iter().map(|v| v.as_deref().map(str::as_bytes)).collect::<Vec<_>>(),
            );
            let dictionary =
                DictionaryArray::<Int32Type>::try_new(keys, Arc::new(dictionary_values)).unwrap();
            let expanded = arrow::compute::cast(&dictionary, &DataType::BinaryView).unwrap();
            let offset = offset.min(rows.len());
            let dictionary: ArrayRef = Arc::new(dictionary);
            for column in [dictionary.slice(offset, rows.len() - offset), expanded.slice(offset, rows.len() - offset)] {
                let present: u64 = rows[offset..]
                    .iter()
                    .filter_map(|r| r.and_then(|r| values[r % values.len()].as_ref()))
                    .map(|v| v.len() as u64)
                    .sum();
                proptest::prop_assert_eq!(
                    batch_weight(&one_column(column)),
                    (rows.len() - offset) as u64 + present
                );
            }
        }
    }
}
