//! Binary search of a row group's key columns for a key bound, comparing the Arrow values
//! in place: a point read probes a page window a dozen times per bound, and building a row
//! of [`Value`]s per probe (a byte string copied for each) cost more than the search.

use std::cmp::Ordering;

use arrow::array::{
    Array, ArrayRef, AsArray, BinaryArray, BinaryViewArray, BooleanArray, Float64Array,
    Int32DictionaryArray, Int64Array, UInt64Array,
};
use arrow::datatypes::Int32Type;

use dynql_core::arrow_convert::array_value;
use dynql_core::value::compare_doubles;
use dynql_core::{compare_values, Value, ValueType};

use crate::kernel::key_range::KeyBound;

/// One key column of a row group, typed once for all the probes of a search.
enum KeyCells<'a> {
    Int64(&'a Int64Array),
    Uint64(&'a UInt64Array),
    Double(&'a Float64Array),
    Boolean(&'a BooleanArray),
    /// Byte strings (`string` or `any`, as `t` says) as views or as `Binary`.
    Views(&'a BinaryViewArray, ValueType),
    Binary(&'a BinaryArray, ValueType),
    /// Byte strings kept as a dictionary of views (see
    /// [`crate::row_group_decode::few_values_as_dictionary`]).
    Dictionary(&'a Int32DictionaryArray, &'a BinaryViewArray, ValueType),
    /// Any other Arrow type (narrower integers of foreign files): through [`array_value`].
    Other(&'a dyn Array, ValueType),
}

impl<'a> KeyCells<'a> {
    fn new(array: &'a ArrayRef, t: ValueType) -> KeyCells<'a> {
        let any = array.as_any();
        let typed = match t {
            ValueType::Int64 => any.downcast_ref().map(KeyCells::Int64),
            ValueType::Uint64 => any.downcast_ref().map(KeyCells::Uint64),
            ValueType::Double => any.downcast_ref().map(KeyCells::Double),
            ValueType::Boolean => any.downcast_ref().map(KeyCells::Boolean),
            ValueType::String | ValueType::Any => array
                .as_binary_view_opt()
                .map(|a| KeyCells::Views(a, t))
                .or_else(|| array.as_binary_opt::<i32>().map(|a| KeyCells::Binary(a, t)))
                .or_else(|| {
                    let d = array.as_dictionary_opt::<Int32Type>()?;
                    Some(KeyCells::Dictionary(d, d.values().as_binary_view_opt()?, t))
                }),
            _ => None,
        };
        typed.unwrap_or(KeyCells::Other(array.as_ref(), t))
    }

    /// The order of the value at `row` against `value`, as [`compare_values`] gives it.
    fn compare(&self, row: usize, value: &Value) -> Ordering {
        let bytes = |t: ValueType, b: &[u8]| match (t, value) {
            (ValueType::String, Value::String(v)) | (ValueType::Any, Value::Any(v)) => {
                Some(b.cmp(v.as_slice()))
            }
            _ => None,
        };
        let fast = match self {
            KeyCells::Other(..) => None,
            _ if self.array().is_null(row) => None,
            KeyCells::Int64(a) => match value {
                Value::Int64(v) => Some(a.value(row).cmp(v)),
                _ => None,
            },
            KeyCells::Uint64(a) => match value {
                Value::Uint64(v) => Some(a.value(row).cmp(v)),
                _ => None,
            },
            KeyCells::Double(a) => match value {
                Value::Double(v) => Some(compare_doubles(a.value(row), *v)),
                _ => None,
            },
            KeyCells::Boolean(a) => match value {
                Value::Boolean(v) => Some(a.value(row).cmp(v)),
                _ => None,
            },
            KeyCells::Views(a, t) => bytes(*t, a.value(row)),
            KeyCells::Binary(a, t) => bytes(*t, a.value(row)),
            KeyCells::Dictionary(d, values, t) => d
                .key(row)
                .filter(|&k| !values.is_null(k))
                .and_then(|k| bytes(*t, values.value(k))),
        };
        fast.unwrap_or_else(|| compare_values(&self.value(row), value))
    }

    /// The value at `row`.
    fn value(&self, row: usize) -> Value {
        match self {
            KeyCells::Dictionary(d, values, t) => match d.key(row) {
                Some(k) => array_value(*values, *t, k),
                None => Value::Null,
            },
            _ => array_value(self.array(), self.value_type(), row),
        }
    }

    fn array(&self) -> &dyn Array {
        match self {
            KeyCells::Int64(a) => *a,
            KeyCells::Uint64(a) => *a,
            KeyCells::Double(a) => *a,
            KeyCells::Boolean(a) => *a,
            KeyCells::Views(a, _) => *a,
            KeyCells::Binary(a, _) => *a,
            KeyCells::Dictionary(a, _, _) => *a,
            KeyCells::Other(a, _) => *a,
        }
    }

    fn value_type(&self) -> ValueType {
        match self {
            KeyCells::Int64(_) => ValueType::Int64,
            KeyCells::Uint64(_) => ValueType::Uint64,
            KeyCells::Double(_) => ValueType::Double,
            KeyCells::Boolean(_) => ValueType::Boolean,
            KeyCells::Views(_, t)
            | KeyCells::Binary(_, t)
            | KeyCells::Dictionary(_, _, t)
            | KeyCells::Other(_, t) => *t,
        }
    }
}

/// Whether `bound` lies after the key at `row` ([`KeyBound::is_after`] of that key).
fn is_after_row(bound: &KeyBound, keys: &[KeyCells<'_>], row: usize) -> bool {
    for (cells, value) in keys.iter().zip(&bound.prefix) {
        match cells.compare(row, value) {
            Ordering::Less => return true,
            Ordering::Greater => return false,
            Ordering::Equal => {}
        }
    }
    keys.len() < bound.prefix.len() || bound.after
}

/// The first row of key-sorted `keys` (the key columns of a row group, of `types`) that is
/// not before `bound`.
pub(crate) fn partition_keys(keys: &[ArrayRef], types: &[ValueType], bound: &KeyBound) -> usize {
    search_keys(keys, types, 0, false, bound)
}

/// [`partition_keys`] where the rows before `start` are known to be before `bound`: the
/// search gallops from there (a point's rows end a probe or two after they start).
pub(crate) fn partition_keys_from(
    keys: &[ArrayRef],
    types: &[ValueType],
    start: usize,
    bound: &KeyBound,
) -> usize {
    search_keys(keys, types, start, true, bound)
}

/// The first row from `start` not before `bound`: a binary search, after a gallop from
/// `start` with `gallop`.
fn search_keys(
    keys: &[ArrayRef],
    types: &[ValueType],
    start: usize,
    gallop: bool,
    bound: &KeyBound,
) -> usize {
    let cells: Vec<KeyCells<'_>> = keys
        .iter()
        .zip(types)
        .map(|(k, t)| KeyCells::new(k, *t))
        .collect();
    let is_before = |row: usize| is_after_row(bound, &cells, row);
    let len = keys.first().map_or(0, |c| c.len());
    let (mut lo, mut hi) = (start.min(len), len);
    // Gallop: rows lo, lo+1, lo+3, lo+7, … until one is not before.
    let mut step = 1;
    while gallop && lo < hi {
        let probe = lo + step - 1;
        if probe >= hi {
            break;
        }
        if is_before(probe) {
            lo = probe + 1;
            step *= 2;
        } else {
            hi = probe;
            break;
        }
    }
    while lo < hi {
        let mid = lo + (hi - lo) / 2;
        if is_before(mid) {
            lo = mid + 1;
        } else {
            hi = mid;
        }
    }
    lo
}

#[cfg(test)]
mod tests {
    use super::*;
    use arrow::array::{Int32Array, StringArray};
    use arrow::datatypes::DataType;
    use proptest::prelude::*;
    use std::sync::Arc;

    proptest! {
        /// Galloping from a start the rows before which are known to be before gives the
        /// first row not before, as a scan from the start does.
        #[test]
        fn partitions_are_the_first_row_not_before(
            mut values in proptest::collection::vec(-50i64..50, 0..300),
            bound in -60i64..60,
            start in 0usize..320,
        ) {
            values.sort_unstable();
            let keys: Vec<ArrayRef> = vec![Arc::new(Int64Array::from(values.clone()))];
            let types = [ValueType::Int64];
            let bound = KeyBound::new(vec![Value::Int64(bound)], false);
            let expected = values
                .iter()
                .position(|&v| !bound.is_after(&[Value::Int64(v)]))
                .unwrap_or(values.len());
            prop_assert_eq!(partition_keys(&keys, &types, &bound), expected);
            // Any start at or below the answer gives it.
            let start = start.min(expected);
            prop_assert_eq!(partition_keys_from(&keys, &types, start, &bound), expected);
        }

        /// Invariant: comparing in place orders as the values do, nulls, other types and
        /// foreign Arrow types included.
        #[test]
        fn in_place_comparison_is_value_comparison(
            ints in proptest::collection::vec(proptest::option::of(-3i64..3), 1..8),
            strings in proptest::collection::vec(proptest::option::of("[ab]{0,2}"), 1..8),
            probe in -4i64..4,
            text in "[ab]{0,2}",
            kind in 0usize..6,
        ) {
            let value = match kind {
                0 => Value::Null,
                1 => Value::Int64(probe),
                2 => Value::Uint64(probe.unsigned_abs()),
                3 => Value::String(text.clone().into_bytes()),
                4 => Value::Any(text.clone().into_bytes()),
                _ => Value::Double(probe as f64),
            };
            let views: ArrayRef = Arc::new(BinaryViewArray::from_iter(
                strings.iter().map(|s| s.as_deref().map(str::as_bytes)),
            ));
            let dictionary: ArrayRef = {
                let plain = StringArray::from(strings.clone());
                let d = arrow::compute::cast(
                    &plain,
                    &DataType::Dictionary(Box::new(DataType::Int32), Box::new(DataType::Utf8)),
                )
                .unwrap();
                let d = d.as_dictionary::<Int32Type>();
                let values = arrow::compute::cast(d.values(), &DataType::BinaryView).unwrap();
                Arc::new(d.with_values(values))
            };
            let narrow = Int32Array::from_iter(ints.iter().map(|v| v.map(|v| v as i32)));
            let columns: Vec<(ArrayRef, ValueType)> = vec![
                (Arc::new(Int64Array::from(ints.clone())), ValueType::Int64),
                (Arc::new(narrow), ValueType::Int64),
                (views, ValueType::String),
                (Arc::new(BinaryArray::from_iter(strings.iter().map(|s| s.as_deref().map(str::as_bytes)))), ValueType::Any),
                (Arc::new(StringArray::from(strings.clone())), ValueType::String),
                (dictionary, ValueType::String),
            ];
            for (array, t) in &columns {
                let cells = KeyCells::new(array, *t);
                let plain = crate::row_group_decode::expanded(array).unwrap();
                for row in 0..array.len() {
                    let expected = compare_values(&array_value(plain.as_ref(), *t, row), &value);
                    prop_assert_eq!(cells.compare(row, &value), expected);
                }
            }
        }
    }
}
