//! One input column converted to a table column's type: cast when the Arrow types are of
//! one family, value by value with range checks otherwise, CSV text parsed per column type.

use arrow::array::{Array, ArrayRef, AsArray};
use arrow::compute::{cast_with_options, CastOptions};
use arrow::datatypes::{DataType, Field};

use dynql_core::arrow_convert::{array_value, arrow_type, value_type_of_field, values_to_array};
use dynql_core::row::check_logical_type;
use dynql_core::{ColumnSchema, LogicalType, Value, ValueType};
use dynql_storage::files::types::{file_column_type, file_column_values};

use super::problems::RowProblems;
use super::temporal::convert_temporal;

/// Converts one input column to a column of the table, recording per-row problems.
///
/// # Errors
/// An Arrow type with no YT counterpart (the message names the column).
pub(super) fn convert_column(
    field: &Field,
    input: &ArrayRef,
    column: &ColumnSchema,
    text: bool,
    problems: &mut RowProblems,
) -> std::result::Result<ArrayRef, String> {
    let mut values = Vec::with_capacity(input.len());
    if text {
        let strings = input.as_string::<i32>();
        for r in 0..strings.len() {
            values.push(if strings.is_null(r) {
                Value::Null
            } else {
                parse_text(column, strings.value(r)).unwrap_or_else(|m| {
                    problems.push(r, m);
                    Value::Null
                })
            });
        }
    } else if let Some(converted) = convert_temporal(field, input, column, problems)? {
        return Ok(converted);
    } else if input.data_type().is_nested() && column.wire_type() == ValueType::Any {
        // Lists, structs and maps as YSON, as YT QL reads them from files.
        let file_type = file_column_type(input.data_type()).map_err(|why| {
            format!(
                "column {:?} cannot be imported: its Arrow type is {}, {why}",
                field.name(),
                input.data_type()
            )
        })?;
        let file_column = ColumnSchema::new(field.name().clone(), file_type);
        return file_column_values(input, &file_column).map_err(|e| e.to_string());
    } else {
        let (source, normalized) = normalize(field, input)?;
        let plain = column.logical_type.signed_range().is_none()
            && column.logical_type.unsigned_max().is_none()
            && column.logical_type != LogicalType::Utf8
            && column.wire_type() != ValueType::Any;
        if source == column.wire_type() && plain {
            // Already the column's Arrow type with nothing to check: no copy.
            return Ok(normalized);
        }
        for r in 0..normalized.len() {
            let v = array_value(normalized.as_ref(), source, r);
            values.push(coerce(column, v).unwrap_or_else(|m| {
                problems.push(r, m);
                Value::Null
            }));
        }
    }
    let refs: Vec<&Value> = values.iter().collect();
    values_to_array(column.wire_type(), &refs).map_err(|e| format!("internal: {e}"))
}

/// An input column as an array of its wire type's Arrow type (casting the wider Arrow
/// families: small integers, `Float32`, `Utf8`, views, dictionaries).
pub(super) fn normalize(
    field: &Field,
    array: &ArrayRef,
) -> std::result::Result<(ValueType, ArrayRef), String> {
    let unsupported = || {
        format!(
            "column {:?} has Arrow type {}, which cannot be imported (integers, floats, booleans, strings, binary, dates, times, timestamps and durations can; lists, structs and maps into any columns)",
            field.name(),
            array.data_type()
        )
    };
    let cast = |a: &ArrayRef, t: &DataType| {
        cast_with_options(
            a,
            t,
            &CastOptions {
                safe: false,
                ..CastOptions::default()
            },
        )
        .map_err(|e| format!("column {:?}: {e}", field.name()))
    };
    if let DataType::Dictionary(_, value) = array.data_type() {
        let values = cast(array, value)?;
        let unpacked = Field::new(field.name(), value.as_ref().clone(), true)
            .with_metadata(field.metadata().clone());
        return normalize(&unpacked, &values);
    }
    let t = match value_type_of_field(field) {
        Some(t) => t,
        None => match array.data_type() {
            DataType::Utf8View | DataType::BinaryView => ValueType::String,
            _ => return Err(unsupported()),
        },
    };
    let target = arrow_type(t);
    if array.data_type() == &target {
        return Ok((t, array.clone()));
    }
    let casted = match array.data_type() {
        // Views cast to Binary through their non-view form.
        DataType::Utf8View => cast(&cast(array, &DataType::Utf8)?, &target)?,
        _ => cast(array, &target)?,
    };
    Ok((t, casted))
}

/// A value of one wire type converted to a column's type, as `insert-rows` converts: integers
/// between signed and unsigned when in range, integers to doubles, anything to `any`.
pub(super) fn coerce(column: &ColumnSchema, v: Value) -> std::result::Result<Value, String> {
    let invalid = |message: String| {
        dynql_core::Error::InvalidValue {
            column: column.name.clone(),
            message,
        }
        .to_string()
    };
    let mismatch = |v: &Value| {
        invalid(format!(
            "cannot store {} {v} in a column of type {}",
            v.value_type(),
            column.logical_type
        ))
    };
    let out = match (column.wire_type(), v) {
        (_, Value::Null) => Value::Null,
        (ValueType::Int64, Value::Int64(x)) => Value::Int64(x),
        (ValueType::Int64, Value::Uint64(x)) if x <= i64::MAX as u64 => Value::Int64(x as i64),
        (ValueType::Uint64, Value::Uint64(x)) => Value::Uint64(x),
        (ValueType::Uint64, Value::Int64(x)) if x >= 0 => Value::Uint64(x as u64),
        (ValueType::Double, Value::Double(x)) => Value::Double(x),
        (ValueType::Double, Value::Int64(x)) => Value::Double(x as f64),
        (ValueType::Double, Value::Uint64(x)) => Value::Double(x as f64),
        (ValueType::Boolean, Value::Boolean(x)) => Value::Boolean(x),
        (ValueType::String, Value::String(x)) => {
            if column.logical_type == LogicalType::Utf8 && std::str::from_utf8(&x).is_err() {
                return Err(invalid(
                    "value is not valid UTF-8 but the column type is utf8".into(),
                ));
            }
            Value::String(x)
        }
        (ValueType::Any, Value::Any(x)) => {
            if dynql_core::yson::parse(&x).is_err() {
                return Err(invalid("value is not a valid YSON document".into()));
            }
            Value::Any(x)
        }
        // A scalar stored in an `any` column becomes that YSON scalar, as insert-rows does.
        (ValueType::Any, other) => {
            Value::Any(dynql_core::yson::to_text(&other.to_yson()).into_bytes())
        }
        (_, other) => return Err(mismatch(&other)),
    };
    check_logical_type(column, &out).map_err(|e| e.to_string())?;
    Ok(out)
}

/// A CSV field parsed as a value of the column's type (surrounding spaces are ignored in
/// numbers and booleans; `uint64` also takes YSON's `123u`).
pub(super) fn parse_text(column: &ColumnSchema, s: &str) -> std::result::Result<Value, String> {
    let bad = || {
        dynql_core::Error::InvalidValue {
            column: column.name.clone(),
            message: format!("cannot parse {s:?} as {}", column.logical_type),
        }
        .to_string()
    };
    let t = s.trim();
    let v = match column.wire_type() {
        ValueType::Int64 => Value::Int64(t.parse().map_err(|_| bad())?),
        ValueType::Uint64 => Value::Uint64(
            t.strip_suffix('u')
                .unwrap_or(t)
                .parse()
                .map_err(|_| bad())?,
        ),
        ValueType::Double => Value::Double(t.parse().map_err(|_| bad())?),
        ValueType::Boolean => match t.to_ascii_lowercase().as_str() {
            "true" | "%true" => Value::Boolean(true),
            "false" | "%false" => Value::Boolean(false),
            _ => return Err(bad()),
        },
        ValueType::String => Value::String(s.as_bytes().to_vec()),
        ValueType::Any => {
            let node = dynql_core::yson::parse(s.as_bytes()).map_err(|_| bad())?;
            Value::Any(dynql_core::yson::to_text(&node).into_bytes())
        }
        ValueType::Null => return Err(bad()),
    };
    check_logical_type(column, &v).map_err(|e| e.to_string())?;
    Ok(v)
}
