//! Date, time, timestamp and duration input columns converted to YT's date types, `interval`
//! or integers.

use arrow::array::ArrayRef;
use arrow::datatypes::Field;

use dynql_core::arrow_convert::values_to_array;
use dynql_core::{ColumnSchema, LogicalType, Value, ValueType};
use dynql_storage::files::types::{temporal_values, value_text};

use super::column::coerce;
use super::problems::RowProblems;

/// How many microseconds one unit of a YT date type is: the instants `date`, `datetime`,
/// `timestamp`.
fn instant_micros(t: LogicalType) -> Option<i128> {
    match t {
        LogicalType::Date => Some(86_400_000_000),
        LogicalType::Datetime => Some(1_000_000),
        LogicalType::Timestamp => Some(1),
        _ => None,
    }
}

/// A date, time, timestamp or duration input column converted to `column`'s type, recording
/// per-row problems; `None` for other input types.
///
/// Dates and timestamps go into `date`, `datetime` and `timestamp` columns in the column's
/// unit (a value finer than it, such as a time of day into `date`, is the row's problem, never
/// rounded away); durations and times of day into `interval` columns (microseconds). Into an
/// integer column goes the value YT QL reads from the file: days of `Date32`, seconds of
/// `Date64`, microseconds of timestamps, durations and times.
///
/// # Errors
/// A column type the input's values have no meaning in (a timestamp into `string`, a
/// duration into `timestamp`): once, naming the column.
pub(super) fn convert_temporal(
    field: &Field,
    input: &ArrayRef,
    column: &ColumnSchema,
    problems: &mut RowProblems,
) -> std::result::Result<Option<ArrayRef>, String> {
    let Some((source, values)) = temporal_values(input.as_ref()) else {
        return Ok(None);
    };
    let target = column.logical_type;
    let integer = matches!(target.wire_type(), ValueType::Int64 | ValueType::Uint64)
        && instant_micros(target).is_none()
        && target != LogicalType::Interval;
    let fits = match (instant_micros(source), instant_micros(target)) {
        (Some(_), Some(_)) => true,
        _ => integer || (source == LogicalType::Interval && target == LogicalType::Interval),
    };
    if !fits {
        let into = if source == LogicalType::Interval {
            "interval"
        } else {
            "date, datetime or timestamp"
        };
        return Err(format!(
            "column {:?} has Arrow type {} (YT {source}), which imports into {into} and integer columns, not into {target} column {:?}",
            field.name(),
            input.data_type(),
            column.name
        ));
    }
    let invalid = |message: String| {
        dynql_core::Error::InvalidValue {
            column: column.name.clone(),
            message,
        }
        .to_string()
    };
    let mut out = Vec::with_capacity(values.len());
    for (r, v) in values.into_iter().enumerate() {
        let value = match v {
            None => Ok(Value::Null),
            Some(None) => Err(invalid(format!(
                "value {} is out of range for type {target}",
                value_text(input.as_ref(), r)
            ))),
            Some(Some(v)) => match (instant_micros(source), instant_micros(target)) {
                (Some(from), Some(to)) => {
                    let micros = v as i128 * from;
                    if micros < 0 {
                        Err(invalid(format!(
                            "value {} is before 1970-01-01, which type {target} cannot hold",
                            value_text(input.as_ref(), r)
                        )))
                    } else if micros % to != 0 {
                        Err(invalid(format!(
                            "value {} is not a whole {}: type {target} holds {}",
                            value_text(input.as_ref(), r),
                            if target == LogicalType::Date {
                                "day"
                            } else {
                                "second"
                            },
                            if target == LogicalType::Date {
                                "days"
                            } else {
                                "seconds"
                            },
                        )))
                    } else {
                        u64::try_from(micros / to).map(Value::Uint64).map_err(|_| {
                            invalid(format!(
                                "value {} is out of range for type {target}",
                                value_text(input.as_ref(), r)
                            ))
                        })
                    }
                }
                _ => coerce(column, Value::Int64(v)),
            },
        };
        out.push(value.unwrap_or_else(|m| {
            problems.push(r, m);
            Value::Null
        }));
    }
    let refs: Vec<&Value> = out.iter().collect();
    values_to_array(column.wire_type(), &refs)
        .map(Some)
        .map_err(|e| format!("internal: {e}"))
}
