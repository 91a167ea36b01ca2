//! YT types <-> Arrow types, and rows <-> record batches.
//!
//! `string` and `any` are Arrow `Binary` (byte strings round-trip exactly); the YT logical
//! type of each column is kept in the field metadata under [`YT_TYPE_KEY`].

use std::collections::HashMap;
use std::sync::Arc;

use arrow::array::{
    Array, ArrayRef, BinaryArray, BinaryBuilder, BinaryViewArray, BooleanArray, BooleanBuilder,
    Float64Array, Float64Builder, Int64Array, Int64Builder, LargeBinaryArray, StringArray,
    UInt64Array, UInt64Builder,
};
use arrow::datatypes::{DataType, Field, Schema, SchemaRef};
use arrow::error::ArrowError;
use arrow::record_batch::{RecordBatch, RecordBatchOptions};

use crate::schema::TableSchema;
use crate::types::ValueType;
use crate::value::Value;

/// Field metadata key holding a column's YT type name.
pub const YT_TYPE_KEY: &str = "yt:type";

/// The Arrow type that stores values of a wire type.
pub fn arrow_type(t: ValueType) -> DataType {
    match t {
        ValueType::Null => DataType::Null,
        ValueType::Int64 => DataType::Int64,
        ValueType::Uint64 => DataType::UInt64,
        ValueType::Double => DataType::Float64,
        ValueType::Boolean => DataType::Boolean,
        ValueType::String | ValueType::Any => DataType::Binary,
    }
}

/// The wire type an Arrow field holds (its `yt:type` metadata wins over the Arrow type).
pub fn value_type_of_field(field: &Field) -> Option<ValueType> {
    if let Some(t) = field.metadata().get(YT_TYPE_KEY) {
        return crate::types::LogicalType::parse(t).map(|l| l.wire_type());
    }
    Some(match field.data_type() {
        DataType::Null => ValueType::Null,
        DataType::Int8 | DataType::Int16 | DataType::Int32 | DataType::Int64 => ValueType::Int64,
        DataType::UInt8 | DataType::UInt16 | DataType::UInt32 | DataType::UInt64 => {
            ValueType::Uint64
        }
        DataType::Float32 | DataType::Float64 => ValueType::Double,
        DataType::Boolean => ValueType::Boolean,
        DataType::Utf8 | DataType::LargeUtf8 | DataType::Binary | DataType::LargeBinary => {
            ValueType::String
        }
        _ => return None,
    })
}

/// An Arrow field for a column of the given name and wire type.
pub fn arrow_field(name: &str, t: ValueType, logical: &str) -> Field {
    Field::new(name, arrow_type(t), true).with_metadata(HashMap::from([(
        YT_TYPE_KEY.to_string(),
        logical.to_string(),
    )]))
}

/// The Arrow schema of a table (all fields nullable; YT's `required` is checked on write).
pub fn table_arrow_schema(schema: &TableSchema) -> SchemaRef {
    Arc::new(Schema::new(
        schema
            .columns()
            .iter()
            .map(|c| arrow_field(&c.name, c.wire_type(), c.logical_type.name()))
            .collect::<Vec<_>>(),
    ))
}

/// Builds one Arrow array from values of one wire type (nulls allowed).
///
/// # Errors
/// When a value is of another type than `t`, or the strings add up to more than a `Binary`
/// array holds (its offsets are `i32`).
pub fn values_to_array(t: ValueType, values: &[&Value]) -> Result<ArrayRef, ArrowError> {
    let wrong =
        |v: &Value| ArrowError::InvalidArgumentError(format!("value {v} does not have type {t}"));
    Ok(match t {
        ValueType::Null => Arc::new(arrow::array::NullArray::new(values.len())),
        ValueType::Int64 => {
            let mut b = Int64Builder::with_capacity(values.len());
            for v in values {
                match v {
                    Value::Null => b.append_null(),
                    Value::Int64(x) => b.append_value(*x),
                    other => return Err(wrong(other)),
                }
            }
            Arc::new(b.finish())
        }
        ValueType::Uint64 => {
            let mut b = UInt64Builder::with_capacity(values.len());
            for v in values {
                match v {
                    Value::Null => b.append_null(),
                    Value::Uint64(x) => b.append_value(*x),
                    other => return Err(wrong(other)),
                }
            }
            Arc::new(b.finish())
        }
        ValueType::Double => {
            let mut b = Float64Builder::with_capacity(values.len());
            for v in values {
                match v {
                    Value::Null => b.append_null(),
                    Value::Double(x) => b.append_value(*x),
                    other => return Err(wrong(other)),
                }
            }
            Arc::new(b.finish())
        }
        ValueType::Boolean => {
            let mut b = BooleanBuilder::with_capacity(values.len());
            for v in values {
                match v {
                    Value::Null => b.append_null(),
                    Value::Boolean(x) => b.append_value(*x),
                    other => return Err(wrong(other)),
                }
            }
            Arc::new(b.finish())
        }
        ValueType::String | ValueType::Any => {
            // Measured first: Arrow's builder panics once its i32 offsets overflow.
            let bytes = values.iter().fold(0usize, |n, v| match v {
                Value::String(x) | Value::Any(x) => n.saturating_add(x.len()),
                _ => n,
            });
            if bytes > i32::MAX as usize {
                return Err(ArrowError::InvalidArgumentError(format!(
                    "{bytes} bytes of strings do not fit one Arrow array (at most {} bytes)",
                    i32::MAX
                )));
            }
            let mut b = BinaryBuilder::with_capacity(values.len(), bytes);
            for v in values {
                match v {
                    Value::Null => b.append_null(),
                    Value::String(x) if t == ValueType::String => b.append_value(x),
                    Value::Any(x) if t == ValueType::Any => b.append_value(x),
                    other => return Err(wrong(other)),
                }
            }
            Arc::new(b.finish())
        }
    })
}

/// Builds a record batch from rows whose values follow `schema`'s fields.
pub fn rows_to_batch(schema: &SchemaRef, rows: &[Vec<Value>]) -> Result<RecordBatch, ArrowError> {
    let mut columns = Vec::with_capacity(schema.fields().len());
    for (i, field) in schema.fields().iter().enumerate() {
        let t = value_type_of_field(field).ok_or_else(|| {
            ArrowError::InvalidArgumentError(format!(
                "unsupported field type {}",
                field.data_type()
            ))
        })?;
        let column: Vec<&Value> = rows.iter().map(|r| &r[i]).collect();
        columns.push(values_to_array(t, &column)?);
    }
    RecordBatch::try_new_with_options(
        schema.clone(),
        columns,
        &RecordBatchOptions::new().with_row_count(Some(rows.len())),
    )
}

/// Reads the value at `row` of an Arrow array as a YT value of wire type `t`.
///
/// Narrower Arrow integer/float types and UTF-8 strings (as found in foreign Parquet files)
/// widen to the wire type.
pub fn array_value(array: &dyn Array, t: ValueType, row: usize) -> Value {
    if array.is_null(row) {
        return Value::Null;
    }
    let any = array.as_any();
    macro_rules! get {
        ($ty:ty) => {
            any.downcast_ref::<$ty>().map(|a| a.value(row))
        };
    }
    let v = match t {
        ValueType::Null => return Value::Null,
        ValueType::Int64 => get!(Int64Array).map(Value::Int64).or_else(|| {
            arrow::compute::cast(&array.slice(row, 1), &DataType::Int64)
                .ok()
                .and_then(|a| {
                    a.as_any()
                        .downcast_ref::<Int64Array>()
                        .map(|a| Value::Int64(a.value(0)))
                })
        }),
        ValueType::Uint64 => get!(UInt64Array).map(Value::Uint64).or_else(|| {
            arrow::compute::cast(&array.slice(row, 1), &DataType::UInt64)
                .ok()
                .and_then(|a| {
                    a.as_any()
                        .downcast_ref::<UInt64Array>()
                        .map(|a| Value::Uint64(a.value(0)))
                })
        }),
        ValueType::Double => get!(Float64Array).map(Value::Double).or_else(|| {
            arrow::compute::cast(&array.slice(row, 1), &DataType::Float64)
                .ok()
                .and_then(|a| {
                    a.as_any()
                        .downcast_ref::<Float64Array>()
                        .map(|a| Value::Double(a.value(0)))
                })
        }),
        ValueType::Boolean => get!(BooleanArray).map(Value::Boolean),
        ValueType::String | ValueType::Any => {
            let bytes = get!(BinaryArray)
                .map(|b| b.to_vec())
                .or_else(|| get!(BinaryViewArray).map(|b| b.to_vec()))
                .or_else(|| get!(LargeBinaryArray).map(|b| b.to_vec()))
                .or_else(|| get!(StringArray).map(|s| s.as_bytes().to_vec()));
            bytes.map(|b| {
                if t == ValueType::Any {
                    Value::Any(b)
                } else {
                    Value::String(b)
                }
            })
        }
    };
    v.unwrap_or(Value::Null)
}

/// Converts a record batch to rows of values, one wire type per column.
pub fn batch_to_rows(batch: &RecordBatch, types: &[ValueType]) -> Vec<Vec<Value>> {
    let mut rows = vec![Vec::with_capacity(types.len()); batch.num_rows()];
    for (c, t) in types.iter().enumerate() {
        let array = batch.column(c);
        for (r, row) in rows.iter_mut().enumerate() {
            row.push(array_value(array.as_ref(), *t, r));
        }
    }
    rows
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn strings_over_an_arrays_offsets_are_an_error_not_a_panic() {
        // 129 references to one 16 MiB value: 2 GiB + 16 MiB, without allocating them.
        let value = Value::String(vec![b's'; 16 << 20]);
        let refs = vec![&value; 129];
        let err = values_to_array(ValueType::String, &refs).unwrap_err();
        assert!(
            err.to_string().contains("do not fit one Arrow array"),
            "{err}"
        );
        let fits = values_to_array(ValueType::String, &refs[..2]).unwrap();
        assert_eq!(fits.len(), 2);
    }

    #[test]
    fn rows_round_trip_through_a_batch_byte_exactly() {
        let schema = TableSchema::parse(
            "[{name=k;type=int64;sort_order=ascending};{name=u;type=uint64};{name=d;type=double};\
              {name=b;type=boolean};{name=s;type=string};{name=a;type=any}]",
        )
        .unwrap();
        let arrow_schema = table_arrow_schema(&schema);
        let rows = vec![
            vec![
                Value::Int64(-1),
                Value::Uint64(u64::MAX),
                Value::Double(0.5),
                Value::Boolean(true),
                Value::String(vec![0, 0xff, 0x80]),
                Value::Any(b"{\"a\"=1;}".to_vec()),
            ],
            vec![Value::Null; 6],
        ];
        let batch = rows_to_batch(&arrow_schema, &rows).unwrap();
        let types: Vec<_> = schema.columns().iter().map(|c| c.wire_type()).collect();
        assert_eq!(batch_to_rows(&batch, &types), rows);
    }
}
