//! The Arrow types of files as YT types, and file columns converted to the Arrow types of
//! their YT wire types.
//!
//! | Arrow | YT | values |
//! | --- | --- | --- |
//! | `Int8`…`Int64`, `UInt8`…`UInt64` | `int8`…`uint64` | as they are |
//! | `Float16`, `Float32` / `Float64` | `float` / `double` | as they are |
//! | `Boolean` | `boolean` | |
//! | `Utf8`, `LargeUtf8`, `Utf8View` | `utf8` | |
//! | `Binary`, `LargeBinary`, `BinaryView`, `FixedSizeBinary` | `string` | the bytes, UTF-8 or not |
//! | `Date32` | `date` | days since 1970-01-01 |
//! | `Date64` | `datetime` | seconds since the epoch (milliseconds rounded down) |
//! | `Timestamp(unit, tz)` | `timestamp` | microseconds since the epoch, UTC (nanoseconds rounded down) |
//! | `Duration(unit)` | `interval` | microseconds, signed (nanoseconds rounded down) |
//! | `Time32`, `Time64` | `interval` | microseconds since midnight (nanoseconds rounded down) |
//! | `List`, `LargeList`, `FixedSizeList`, `ListView`, `LargeListView` | `any` | a YSON list |
//! | `Struct` | `any` | a YSON map of the fields |
//! | `Map` | `any` | a YSON list of `[key; value]` pairs, as YT writes a `dict` |
//! | `Dictionary(_, T)` | as `T` | the values |
//! | `Null` | `string` | every value null |
//! | `Decimal*`, `Interval`, unions, run-end encoded | refused by name | |
//!
//! YT's `date`, `datetime` and `timestamp` are unsigned: a value before 1970 fails the read
//! naming the column and the value. Inside `any` values the same conversions apply (dates as
//! unsigned integers, durations as signed ones) and nulls are YSON's `#`.

use std::sync::Arc;

use arrow::array::{
    Array, ArrayRef, AsArray, BinaryBuilder, GenericListArray, GenericListViewArray, Int64Builder,
    OffsetSizeTrait, UInt64Builder,
};
use arrow::datatypes::{
    DataType, Date32Type, Date64Type, DurationMicrosecondType, DurationMillisecondType,
    DurationNanosecondType, DurationSecondType, Float32Type, Float64Type, Int16Type, Int32Type,
    Int64Type, Int8Type, Time32MillisecondType, Time32SecondType, Time64MicrosecondType,
    Time64NanosecondType, TimeUnit, TimestampMicrosecondType, TimestampMillisecondType,
    TimestampNanosecondType, TimestampSecondType, UInt16Type, UInt32Type, UInt64Type, UInt8Type,
};

use dynql_core::arrow_convert::arrow_type;
use dynql_core::{ColumnSchema, LogicalType, ValueType, Yson};

use crate::error::{Error, Result};

/// The YT type of a file column of Arrow type `data_type` (see the [module](self) table), or
/// why YT QL cannot read it (a clause that follows "its Arrow type is T, ").
///
/// ```
/// use arrow::datatypes::{DataType, TimeUnit};
/// use dynql_core::LogicalType;
/// use dynql_storage::files::types::file_column_type;
/// let t = DataType::Timestamp(TimeUnit::Nanosecond, Some("UTC".into()));
/// assert_eq!(file_column_type(&t), Ok(LogicalType::Timestamp));
/// assert!(file_column_type(&DataType::Decimal128(10, 2)).unwrap_err().contains("no decimal"));
/// ```
pub fn file_column_type(data_type: &DataType) -> std::result::Result<LogicalType, String> {
    Ok(match data_type {
        DataType::Int8 => LogicalType::Int8,
        DataType::Int16 => LogicalType::Int16,
        DataType::Int32 => LogicalType::Int32,
        DataType::Int64 => LogicalType::Int64,
        DataType::UInt8 => LogicalType::Uint8,
        DataType::UInt16 => LogicalType::Uint16,
        DataType::UInt32 => LogicalType::Uint32,
        DataType::UInt64 => LogicalType::Uint64,
        DataType::Float16 | DataType::Float32 => LogicalType::Float,
        DataType::Float64 => LogicalType::Double,
        DataType::Boolean => LogicalType::Boolean,
        DataType::Utf8 | DataType::LargeUtf8 | DataType::Utf8View => LogicalType::Utf8,
        DataType::Binary
        | DataType::LargeBinary
        | DataType::BinaryView
        | DataType::FixedSizeBinary(_)
        | DataType::Null => LogicalType::String,
        DataType::Dictionary(_, value) => file_column_type(value)?,
        t => match temporal(t) {
            Some((logical, _)) => logical,
            None => {
                yson_supported(t)?;
                LogicalType::Any
            }
        },
    })
}

/// Why values of `data_type` have no YT form, if they have none (as a whole or inside
/// `any`).
fn yson_supported(data_type: &DataType) -> std::result::Result<(), String> {
    match data_type {
        DataType::List(f)
        | DataType::LargeList(f)
        | DataType::FixedSizeList(f, _)
        | DataType::ListView(f)
        | DataType::LargeListView(f) => element_supported(f.data_type()),
        DataType::Struct(fields) => fields
            .iter()
            .try_for_each(|f| element_supported(f.data_type())),
        DataType::Map(entries, _) => element_supported(entries.data_type()),
        DataType::Decimal32(..)
        | DataType::Decimal64(..)
        | DataType::Decimal128(..)
        | DataType::Decimal256(..) => Err(
            "and YT QL has no decimal type (`dynql sql` reads it as a decimal)".into(),
        ),
        DataType::Interval(_) => Err(
            "which counts months and days of no fixed length, and YT's interval is microseconds (`dynql sql` reads it as an interval)".into(),
        ),
        t => Err(format!("and YT has no type for {t}")),
    }
}

/// Why values of `data_type` cannot be elements of a YSON value, if they cannot.
fn element_supported(data_type: &DataType) -> std::result::Result<(), String> {
    match file_column_type(data_type) {
        Ok(_) => Ok(()),
        Err(why) => Err(format!("which holds {data_type}, {why}")),
    }
}

/// How a temporal Arrow type becomes YT's: the YT type and the step from the Arrow value.
fn temporal(data_type: &DataType) -> Option<(LogicalType, Scale)> {
    use TimeUnit::*;
    let unit = |u: &TimeUnit| match u {
        Second => Scale::Multiply(1_000_000),
        Millisecond => Scale::Multiply(1_000),
        Microsecond => Scale::Multiply(1),
        Nanosecond => Scale::Divide(1_000),
    };
    Some(match data_type {
        DataType::Date32 => (LogicalType::Date, Scale::Multiply(1)),
        DataType::Date64 => (LogicalType::Datetime, Scale::Divide(1_000)),
        DataType::Timestamp(u, _) => (LogicalType::Timestamp, unit(u)),
        DataType::Duration(u) | DataType::Time32(u) | DataType::Time64(u) => {
            (LogicalType::Interval, unit(u))
        }
        _ => return None,
    })
}

/// An Arrow temporal value to YT's unit: multiplied (an overflow is out of range) or
/// divided, rounding down.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Scale {
    Multiply(i64),
    Divide(i64),
}

impl Scale {
    pub(crate) fn apply(self, v: i64) -> Option<i64> {
        match self {
            Scale::Multiply(k) => v.checked_mul(k),
            Scale::Divide(k) => Some(v.div_euclid(k)),
        }
    }
}

/// Why a temporal value cannot be held by YT's type `logical`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Unfit {
    BeforeEpoch,
    OutOfRange,
}

/// The raw integers of a temporal array (`None` for nulls).
fn raw_integers(array: &dyn Array) -> Vec<Option<i64>> {
    fn collect<T>(a: &dyn Array) -> Vec<Option<i64>>
    where
        T: arrow::datatypes::ArrowPrimitiveType,
        T::Native: Into<i64>,
    {
        a.as_primitive::<T>()
            .iter()
            .map(|v| v.map(Into::into))
            .collect()
    }
    use TimeUnit::*;
    match array.data_type() {
        DataType::Date32 => collect::<Date32Type>(array),
        DataType::Date64 => collect::<Date64Type>(array),
        DataType::Timestamp(Second, _) => collect::<TimestampSecondType>(array),
        DataType::Timestamp(Millisecond, _) => collect::<TimestampMillisecondType>(array),
        DataType::Timestamp(Microsecond, _) => collect::<TimestampMicrosecondType>(array),
        DataType::Timestamp(Nanosecond, _) => collect::<TimestampNanosecondType>(array),
        DataType::Duration(Second) => collect::<DurationSecondType>(array),
        DataType::Duration(Millisecond) => collect::<DurationMillisecondType>(array),
        DataType::Duration(Microsecond) => collect::<DurationMicrosecondType>(array),
        DataType::Duration(Nanosecond) => collect::<DurationNanosecondType>(array),
        DataType::Time32(Second) => collect::<Time32SecondType>(array),
        DataType::Time32(_) => collect::<Time32MillisecondType>(array),
        DataType::Time64(Microsecond) => collect::<Time64MicrosecondType>(array),
        DataType::Time64(_) => collect::<Time64NanosecondType>(array),
        _ => vec![None; array.len()],
    }
}

/// The values of an Arrow date, time, timestamp or duration array in the unit of its YT
/// type ([`file_column_type`]): days for `date`, seconds for `datetime`, microseconds for
/// `timestamp` and `interval` (nanoseconds and milliseconds of `Date64` rounded down),
/// signed. Each value is `None` for a null and `Some(None)` when it does not fit 64 bits.
/// `None` for other arrays.
///
/// ```
/// use arrow::array::Date32Array;
/// use dynql_core::LogicalType;
/// let days = Date32Array::from(vec![Some(3), None, Some(-1)]);
/// let (t, values) = dynql_storage::files::types::temporal_values(&days).unwrap();
/// assert_eq!(t, LogicalType::Date);
/// assert_eq!(values, [Some(Some(3)), None, Some(Some(-1))]);
/// ```
#[allow(clippy::type_complexity)]
pub fn temporal_values(array: &dyn Array) -> Option<(LogicalType, Vec<Option<Option<i64>>>)> {
    let (logical, scale) = temporal(array.data_type())?;
    Some((
        logical,
        raw_integers(array)
            .into_iter()
            .map(|v| v.map(|v| scale.apply(v)))
            .collect(),
    ))
}

/// Value `i` of `array` as Arrow writes it as text (`1969-12-31`,
/// `2024-01-02T03:04:05.123+02:00`), for messages.
pub fn value_text(array: &dyn Array, i: usize) -> String {
    arrow::compute::cast(&array.slice(i, 1), &DataType::Utf8)
        .ok()
        .and_then(|s| {
            s.as_string_opt::<i32>()
                .filter(|s| !s.is_null(0))
                .map(|s| s.value(0).to_string())
        })
        .unwrap_or_else(|| "null".into())
}

/// The YT values of a temporal array: each `Ok(v)` (signed for `interval`, to be stored
/// unsigned otherwise), or why it does not fit.
fn yt_temporal_values(array: &dyn Array) -> Vec<Option<std::result::Result<i64, Unfit>>> {
    let Some((logical, values)) = temporal_values(array) else {
        return vec![None; array.len()];
    };
    values
        .into_iter()
        .map(|v| {
            v.map(|v| match v {
                None => Err(Unfit::OutOfRange),
                Some(v) if v < 0 && logical != LogicalType::Interval => Err(Unfit::BeforeEpoch),
                Some(v) => Ok(v),
            })
        })
        .collect()
}

/// The error for value `i` of temporal `array` (column `name`) that YT's type cannot hold.
fn unfit_error(name: &str, array: &dyn Array, i: usize, why: Unfit) -> String {
    let shown = value_text(array, i);
    let (logical, _) = temporal(array.data_type()).unwrap_or((LogicalType::Any, Scale::Divide(1)));
    let column = dynql_core::error::shown(name);
    match why {
        Unfit::BeforeEpoch => format!(
            "Column {column} holds {shown} ({}), before 1970-01-01: YT's {logical} counts from the epoch and holds no earlier value (`dynql sql` reads the column as it is)",
            array.data_type()
        ),
        Unfit::OutOfRange => format!(
            "Column {column} holds {shown} ({}), out of the range of YT's {logical} (microseconds in 64 bits)",
            array.data_type()
        ),
    }
}

/// A column of Arrow type `array.data_type()` as values of `column`, whose type is
/// [`file_column_type`] of it: what YT QL reads from a file column (temporal values in YT's
/// units, nested values as YSON text, other types cast to the Arrow type of the wire type).
///
/// # Errors
/// [`Error::Invalid`] naming the column and the value for a value YT's type cannot hold (a
/// date before 1970, say).
pub fn file_column_values(array: &ArrayRef, column: &ColumnSchema) -> Result<ArrayRef> {
    convert(array, column)
}

/// A file column (`column` of the table) as the Arrow type of its wire type: temporal
/// values in YT's units, nested values as YSON, other types cast.
///
/// # Errors
/// [`Error::Invalid`] naming the column and the value for a value YT's type cannot hold (a
/// date before 1970, say).
pub(crate) fn convert(array: &ArrayRef, column: &ColumnSchema) -> Result<ArrayRef> {
    let wire = column.wire_type();
    let target = arrow_type(wire);
    if array.data_type() == &target {
        return Ok(array.clone());
    }
    if let DataType::Dictionary(_, value) = array.data_type() {
        return convert(&arrow::compute::cast(array, value)?, column);
    }
    if temporal(array.data_type()).is_some() && matches!(wire, ValueType::Int64 | ValueType::Uint64)
    {
        let values = yt_temporal_values(array.as_ref());
        if let Some((i, why)) = values.iter().enumerate().find_map(|(i, v)| match v {
            Some(Err(why)) => Some((i, *why)),
            _ => None,
        }) {
            return Err(Error::Invalid(unfit_error(
                &column.name,
                array.as_ref(),
                i,
                why,
            )));
        }
        let values = values.into_iter().map(|v| v.and_then(|v| v.ok()));
        return Ok(if wire == ValueType::Uint64 {
            let mut b = UInt64Builder::with_capacity(array.len());
            b.extend(values.map(|v| v.map(|v| v as u64)));
            Arc::new(b.finish())
        } else {
            let mut b = Int64Builder::with_capacity(array.len());
            b.extend(values);
            Arc::new(b.finish())
        });
    }
    if wire == ValueType::Any && array.data_type().is_nested() {
        return nested_as_yson(array.as_ref(), &column.name);
    }
    let source = match array.data_type() {
        // Text of types YT holds as strings; views through their plain forms.
        DataType::Utf8View => arrow::compute::cast(array, &DataType::Utf8)?,
        DataType::BinaryView | DataType::FixedSizeBinary(_) => {
            arrow::compute::cast(array, &DataType::Binary)?
        }
        _ => array.clone(),
    };
    Ok(arrow::compute::cast(&source, &target)?)
}

/// A list, struct or map column (named `name` in errors) as YSON text, one value per row:
/// how nested values cross to YT's `any` type.
///
/// # Errors
/// [`Error::Invalid`] naming the column for an element YT cannot hold (a decimal, say).
pub fn nested_as_yson(array: &dyn Array, name: &str) -> Result<ArrayRef> {
    let cells = yson_cells(array).map_err(|e| e.message(name))?;
    let mut b = BinaryBuilder::with_capacity(array.len(), array.len() * 16);
    for (i, cell) in cells.into_iter().enumerate() {
        if array.is_null(i) {
            b.append_null();
            continue;
        }
        let yson = cell.map_err(|e| e.message(name))?;
        b.append_value(dynql_core::yson::to_text(&yson));
    }
    Ok(Arc::new(b.finish()))
}

/// A value inside a nested column that YT cannot hold: the message given the column name.
#[derive(Debug, Clone)]
enum CellError {
    Unfit {
        array: ArrayRef,
        index: usize,
        why: Unfit,
    },
    Type(DataType),
}

impl CellError {
    fn message(&self, column: &str) -> Error {
        Error::Invalid(match self {
            CellError::Unfit { array, index, why } => {
                unfit_error(column, array.as_ref(), *index, *why)
            }
            CellError::Type(t) => format!(
                "Column {} holds values of Arrow type {t}, which YT cannot hold",
                dynql_core::error::shown(column)
            ),
        })
    }
}

type Cell = std::result::Result<Yson, CellError>;

/// Every element of `array` as a YSON node (`#` for nulls), or why it has none. Errors are
/// per element, so that only values a row holds can fail its read.
fn yson_cells(array: &dyn Array) -> std::result::Result<Vec<Cell>, CellError> {
    let n = array.len();
    let null = |i: usize| array.is_null(i);
    macro_rules! each {
        ($a:expr, $f:expr) => {{
            let a = $a;
            (0..n)
                .map(|i| {
                    Ok(if null(i) {
                        Yson::Entity
                    } else {
                        #[allow(clippy::redundant_closure_call)]
                        $f(a.value(i))
                    })
                })
                .collect()
        }};
    }
    Ok(match array.data_type() {
        DataType::Null => vec![Ok(Yson::Entity); n],
        DataType::Boolean => each!(array.as_boolean(), Yson::Boolean),
        DataType::Int8 => each!(array.as_primitive::<Int8Type>(), |v| Yson::Int64(v as i64)),
        DataType::Int16 => each!(array.as_primitive::<Int16Type>(), |v| Yson::Int64(v as i64)),
        DataType::Int32 => each!(array.as_primitive::<Int32Type>(), |v| Yson::Int64(v as i64)),
        DataType::Int64 => each!(array.as_primitive::<Int64Type>(), Yson::Int64),
        DataType::UInt8 => each!(array.as_primitive::<UInt8Type>(), |v| Yson::Uint64(
            v as u64
        )),
        DataType::UInt16 => {
            each!(array.as_primitive::<UInt16Type>(), |v| Yson::Uint64(
                v as u64
            ))
        }
        DataType::UInt32 => {
            each!(array.as_primitive::<UInt32Type>(), |v| Yson::Uint64(
                v as u64
            ))
        }
        DataType::UInt64 => each!(array.as_primitive::<UInt64Type>(), Yson::Uint64),
        DataType::Float16 => {
            let doubles = arrow::compute::cast(array, &DataType::Float64)
                .map_err(|_| CellError::Type(DataType::Float16))?;
            yson_cells(doubles.as_ref())?
        }
        DataType::Float32 => {
            each!(array.as_primitive::<Float32Type>(), |v| Yson::Double(
                v as f64
            ))
        }
        DataType::Float64 => each!(array.as_primitive::<Float64Type>(), Yson::Double),
        DataType::Utf8 => each!(array.as_string::<i32>(), |v: &str| Yson::String(v.into())),
        DataType::LargeUtf8 => {
            each!(array.as_string::<i64>(), |v: &str| Yson::String(v.into()))
        }
        DataType::Utf8View => {
            each!(array.as_string_view(), |v: &str| Yson::String(v.into()))
        }
        DataType::Binary => each!(array.as_binary::<i32>(), |v: &[u8]| Yson::String(v.into())),
        DataType::LargeBinary => {
            each!(array.as_binary::<i64>(), |v: &[u8]| Yson::String(v.into()))
        }
        DataType::BinaryView => {
            each!(array.as_binary_view(), |v: &[u8]| Yson::String(v.into()))
        }
        DataType::FixedSizeBinary(_) => {
            each!(array.as_fixed_size_binary(), |v: &[u8]| Yson::String(
                v.into()
            ))
        }
        DataType::Dictionary(_, value) => {
            let values = arrow::compute::cast(array, value)
                .map_err(|_| CellError::Type(array.data_type().clone()))?;
            yson_cells(values.as_ref())?
        }
        DataType::List(_) => list_cells(array.as_list::<i32>())?,
        DataType::LargeList(_) => list_cells(array.as_list::<i64>())?,
        DataType::ListView(_) => list_view_cells(array.as_list_view::<i32>())?,
        DataType::LargeListView(_) => list_view_cells(array.as_list_view::<i64>())?,
        DataType::FixedSizeList(_, size) => {
            let a = array.as_fixed_size_list();
            let values = yson_cells(a.values().as_ref())?;
            let size = *size as usize;
            (0..n)
                .map(|i| {
                    if null(i) {
                        return Ok(Yson::Entity);
                    }
                    let start = a.value_offset(i) as usize;
                    gather(&values, start..start + size).map(Yson::List)
                })
                .collect()
        }
        DataType::Struct(fields) => {
            let a = array.as_struct();
            let columns: Vec<Vec<Cell>> = a
                .columns()
                .iter()
                .map(|c| yson_cells(c.as_ref()))
                .collect::<std::result::Result<_, _>>()?;
            (0..n)
                .map(|i| {
                    if null(i) {
                        return Ok(Yson::Entity);
                    }
                    let mut entries = Vec::with_capacity(fields.len());
                    for (f, c) in fields.iter().zip(&columns) {
                        entries.push((f.name().as_bytes().to_vec(), c[i].clone()?));
                    }
                    Ok(Yson::Map(entries))
                })
                .collect()
        }
        DataType::Map(_, _) => {
            let a = array.as_map();
            let keys = yson_cells(a.keys().as_ref())?;
            let values = yson_cells(a.values().as_ref())?;
            let offsets = a.value_offsets();
            (0..n)
                .map(|i| {
                    if null(i) {
                        return Ok(Yson::Entity);
                    }
                    let range = offsets[i] as usize..offsets[i + 1] as usize;
                    let mut pairs = Vec::with_capacity(range.len());
                    for e in range {
                        pairs.push(Yson::List(vec![keys[e].clone()?, values[e].clone()?]));
                    }
                    Ok(Yson::List(pairs))
                })
                .collect()
        }
        t if temporal(t).is_some() => {
            let (logical, _) = temporal(t).unwrap_or((LogicalType::Any, Scale::Divide(1)));
            yt_temporal_values(array)
                .into_iter()
                .enumerate()
                .map(|(i, v)| match v {
                    None => Ok(Yson::Entity),
                    Some(Ok(v)) if logical == LogicalType::Interval => Ok(Yson::Int64(v)),
                    Some(Ok(v)) => Ok(Yson::Uint64(v as u64)),
                    Some(Err(why)) => Err(CellError::Unfit {
                        array: array.slice(0, n),
                        index: i,
                        why,
                    }),
                })
                .collect()
        }
        t => return Err(CellError::Type(t.clone())),
    })
}

/// The elements `range` of a child's cells as a list (the first failing one fails it).
fn gather(
    cells: &[Cell],
    range: std::ops::Range<usize>,
) -> std::result::Result<Vec<Yson>, CellError> {
    cells[range].iter().cloned().collect()
}

fn list_cells<O: OffsetSizeTrait>(
    a: &GenericListArray<O>,
) -> std::result::Result<Vec<Cell>, CellError> {
    let values = yson_cells(a.values().as_ref())?;
    let offsets = a.value_offsets();
    Ok((0..a.len())
        .map(|i| {
            if a.is_null(i) {
                return Ok(Yson::Entity);
            }
            gather(&values, offsets[i].as_usize()..offsets[i + 1].as_usize()).map(Yson::List)
        })
        .collect())
}

fn list_view_cells<O: OffsetSizeTrait>(
    a: &GenericListViewArray<O>,
) -> std::result::Result<Vec<Cell>, CellError> {
    let values = yson_cells(a.values().as_ref())?;
    Ok((0..a.len())
        .map(|i| {
            if a.is_null(i) {
                return Ok(Yson::Entity);
            }
            let start = a.value_offsets()[i].as_usize();
            let size = a.value_sizes()[i].as_usize();
            gather(&values, start..start + size).map(Yson::List)
        })
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;
    use arrow::array::{
        BinaryArray, Date32Array, Date64Array, Decimal128Array, DictionaryArray,
        DurationNanosecondArray, FixedSizeBinaryArray, Int32Array, ListArray, MapArray,
        StringArray, StructArray, Time32MillisecondArray, Time64NanosecondArray,
        TimestampMillisecondArray, TimestampNanosecondArray, TimestampSecondArray,
    };
    use arrow::datatypes::{Field, Fields, IntervalUnit};
    use dynql_core::arrow_convert::array_value;
    use dynql_core::Value;

    /// The values of `array` read as a column of its file type.
    fn read(array: ArrayRef) -> Result<Vec<Value>> {
        let t = file_column_type(array.data_type()).expect("typed");
        let column = ColumnSchema::new("c", t);
        let converted = convert(&array, &column)?;
        Ok((0..converted.len())
            .map(|i| array_value(converted.as_ref(), column.wire_type(), i))
            .collect())
    }

    fn any(text: &str) -> Value {
        Value::Any(text.as_bytes().to_vec())
    }

    #[test]
    fn dates_and_times_take_yt_units() {
        let day = Arc::new(Date32Array::from(vec![Some(0), None, Some(19_000)])) as ArrayRef;
        assert_eq!(file_column_type(day.data_type()), Ok(LogicalType::Date));
        assert_eq!(
            read(day).unwrap(),
            [Value::Uint64(0), Value::Null, Value::Uint64(19_000)]
        );
        // Date64 milliseconds round down to datetime seconds.
        let d64 = Arc::new(Date64Array::from(vec![86_400_999])) as ArrayRef;
        assert_eq!(file_column_type(d64.data_type()), Ok(LogicalType::Datetime));
        assert_eq!(read(d64).unwrap(), [Value::Uint64(86_400)]);
        let s = Arc::new(TimestampSecondArray::from(vec![2]).with_timezone("+03:00")) as ArrayRef;
        assert_eq!(file_column_type(s.data_type()), Ok(LogicalType::Timestamp));
        assert_eq!(read(s).unwrap(), [Value::Uint64(2_000_000)]);
        let ms = Arc::new(TimestampMillisecondArray::from(vec![1_500])) as ArrayRef;
        assert_eq!(read(ms).unwrap(), [Value::Uint64(1_500_000)]);
        // Nanoseconds round down to microseconds.
        let ns = Arc::new(TimestampNanosecondArray::from(vec![1_999, 2_000])) as ArrayRef;
        assert_eq!(read(ns).unwrap(), [Value::Uint64(1), Value::Uint64(2)]);
        // Durations and times of day are signed intervals of microseconds.
        let dur = Arc::new(DurationNanosecondArray::from(vec![-1_500, 3_000])) as ArrayRef;
        assert_eq!(file_column_type(dur.data_type()), Ok(LogicalType::Interval));
        assert_eq!(read(dur).unwrap(), [Value::Int64(-2), Value::Int64(3)]);
        let t32 = Arc::new(Time32MillisecondArray::from(vec![61_001])) as ArrayRef;
        assert_eq!(read(t32).unwrap(), [Value::Int64(61_001_000)]);
        let t64 = Arc::new(Time64NanosecondArray::from(vec![5_000])) as ArrayRef;
        assert_eq!(read(t64).unwrap(), [Value::Int64(5)]);
    }

    #[test]
    fn values_before_1970_or_out_of_range_fail_naming_the_column_and_value() {
        let day = Arc::new(Date32Array::from(vec![Some(1), None, Some(-1)])) as ArrayRef;
        let e = read(day).unwrap_err().to_string();
        assert!(e.contains("Column \"c\" holds 1969-12-31"), "{e}");
        assert!(e.contains("before 1970-01-01"), "{e}");
        assert!(e.contains("YT's date"), "{e}");
        let ts = Arc::new(TimestampNanosecondArray::from(vec![-1])) as ArrayRef;
        let e = read(ts).unwrap_err().to_string();
        assert!(e.contains("1969-12-31T23:59:59.999999999"), "{e}");
        assert!(e.contains("YT's timestamp"), "{e}");
        let big = Arc::new(TimestampSecondArray::from(vec![i64::MAX / 10])) as ArrayRef;
        let e = read(big).unwrap_err().to_string();
        assert!(e.contains("out of the range of YT's timestamp"), "{e}");
        // A negative duration is fine.
        let dur = Arc::new(DurationNanosecondArray::from(vec![-5_000])) as ArrayRef;
        assert_eq!(read(dur).unwrap(), [Value::Int64(-5)]);
    }

    #[test]
    fn nested_columns_are_yson() {
        let list = Arc::new(ListArray::from_iter_primitive::<Int32Type, _, _>(vec![
            Some(vec![Some(1), None, Some(3)]),
            None,
            Some(vec![]),
        ])) as ArrayRef;
        assert_eq!(file_column_type(list.data_type()), Ok(LogicalType::Any));
        assert_eq!(
            read(list).unwrap(),
            [any("[1;#;3;]"), Value::Null, any("[]")]
        );
        let fields = Fields::from(vec![
            Field::new("a", DataType::Int32, true),
            Field::new("b", DataType::Utf8, true),
            Field::new("day", DataType::Date32, true),
        ]);
        let st = Arc::new(StructArray::new(
            fields,
            vec![
                Arc::new(Int32Array::from(vec![Some(1), None])),
                Arc::new(StringArray::from(vec![Some("x"), Some("y")])),
                Arc::new(Date32Array::from(vec![Some(3), Some(-1)])),
            ],
            Some(vec![true, false].into()),
        )) as ArrayRef;
        // The null row's date is not read: it cannot fail.
        assert_eq!(
            read(st).unwrap(),
            [any(r#"{"a"=1;"b"="x";"day"=3u;}"#), Value::Null]
        );
        let map = Arc::new(
            MapArray::new_from_strings(
                ["k1", "k2", "k3"].into_iter(),
                &Int32Array::from(vec![Some(10), None, Some(30)]),
                &[0, 2, 3],
            )
            .unwrap(),
        ) as ArrayRef;
        assert_eq!(
            read(map).unwrap(),
            [any(r#"[["k1";10;];["k2";#;];]"#), any(r#"[["k3";30;];]"#)]
        );
        // List views: offsets and sizes in any order, sharing values.
        let view = Arc::new(arrow::array::ListViewArray::new(
            Arc::new(Field::new_list_field(DataType::Int32, true)),
            arrow::buffer::ScalarBuffer::from(vec![2, 0, 0]),
            arrow::buffer::ScalarBuffer::from(vec![1, 3, 0]),
            Arc::new(Int32Array::from(vec![7, 8, 9])),
            Some(vec![true, true, false].into()),
        )) as ArrayRef;
        assert_eq!(file_column_type(view.data_type()), Ok(LogicalType::Any));
        assert_eq!(
            read(view).unwrap(),
            [any("[9;]"), any("[7;8;9;]"), Value::Null]
        );
        // A date before 1970 inside a list fails naming the column.
        let dates = Arc::new(ListArray::new(
            Arc::new(Field::new_list_field(DataType::Date32, true)),
            arrow::buffer::OffsetBuffer::from_lengths([1]),
            Arc::new(Date32Array::from(vec![-3])),
            None,
        )) as ArrayRef;
        let e = read(dates).unwrap_err().to_string();
        assert!(e.contains("Column \"c\" holds 1969-12-29"), "{e}");
    }

    #[test]
    fn bytes_dictionaries_and_refusals() {
        let fsb = Arc::new(
            FixedSizeBinaryArray::try_from_iter(
                vec![vec![0xffu8, 0], vec![b'a', b'b']].into_iter(),
            )
            .unwrap(),
        ) as ArrayRef;
        assert_eq!(file_column_type(fsb.data_type()), Ok(LogicalType::String));
        assert_eq!(
            read(fsb).unwrap(),
            [Value::String(vec![0xff, 0]), Value::String(b"ab".to_vec())]
        );
        let bin = Arc::new(BinaryArray::from(vec![&[0xc3u8, 0x28][..]])) as ArrayRef;
        assert_eq!(read(bin).unwrap(), [Value::String(vec![0xc3, 0x28])]);
        let dict: DictionaryArray<Int32Type> = vec!["b", "a", "b"].into_iter().collect();
        let dict = Arc::new(dict) as ArrayRef;
        assert_eq!(file_column_type(dict.data_type()), Ok(LogicalType::Utf8));
        assert_eq!(read(dict).unwrap()[2], Value::String(b"b".to_vec()));

        let decimal = Decimal128Array::from(vec![1])
            .with_precision_and_scale(10, 2)
            .unwrap();
        let why = file_column_type(decimal.data_type()).unwrap_err();
        assert!(
            why.contains("no decimal type") && why.contains("dynql sql"),
            "{why}"
        );
        let why = file_column_type(&DataType::Interval(IntervalUnit::MonthDayNano)).unwrap_err();
        assert!(why.contains("months and days"), "{why}");
        let nested = DataType::List(Arc::new(Field::new_list_field(
            DataType::Decimal128(10, 2),
            true,
        )));
        let why = file_column_type(&nested).unwrap_err();
        assert!(why.contains("holds Decimal128(10, 2)"), "{why}");
    }
}
