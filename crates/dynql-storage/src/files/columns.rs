//! The columns of file tables: their YT schema from the files' Arrow schema (see
//! [`super::types`]) or the `dynql.schema` metadata, and row-group statistics as YT values.

use arrow::datatypes::{DataType, Schema, TimeUnit};
use parquet::basic::{ConvertedType, LogicalType as ParquetType, TimeUnit as ParquetUnit};
use parquet::file::statistics::Statistics;
use parquet::schema::types::ColumnDescriptor;

use dynql_core::{ColumnSchema, TableSchema, Value, ValueType};

use super::types::{file_column_type, Scale};
use super::{FileRef, SCHEMA_METADATA_KEY};
use crate::error::{Error, Result};

pub(super) fn same_fields(a: &Schema, b: &Schema) -> bool {
    a.fields().len() == b.fields().len()
        && a.fields()
            .iter()
            .zip(b.fields())
            .all(|(x, y)| x.name() == y.name() && x.data_type() == y.data_type())
}

pub(super) fn describe(schema: &Schema) -> String {
    let fields: Vec<String> = schema
        .fields()
        .iter()
        .map(|f| format!("{}: {}", f.name(), f.data_type()))
        .collect();
    format!("({})", fields.join(", "))
}

/// The schema of the table from its first file, the file field of each column, and the
/// columns YT QL cannot read, each with why ("its Arrow type is …").
#[allow(clippy::type_complexity)]
pub(super) fn table_schema(
    location: &str,
    file: &FileRef,
    key: Option<&[String]>,
) -> Result<(TableSchema, Vec<usize>, Vec<(String, String)>)> {
    let fields = file.metadata.schema().fields().clone();
    let field_index = |name: &str| fields.iter().position(|f| f.name() == name);
    let declared = file
        .metadata
        .metadata()
        .file_metadata()
        .key_value_metadata()
        .and_then(|kv| kv.iter().find(|e| e.key == SCHEMA_METADATA_KEY))
        .and_then(|e| e.value.clone());
    let invalid = |m: String| Error::Invalid(format!("Files {location:?}: {m}"));
    let mut refused: Vec<(String, String)> = Vec::new();
    let mut columns: Vec<ColumnSchema> = match declared {
        Some(text) => {
            let declared = TableSchema::parse(&text)
                .map_err(|e| invalid(format!("malformed {SCHEMA_METADATA_KEY} metadata: {e}")))?;
            declared.columns().to_vec()
        }
        None => {
            let mut columns = Vec::new();
            for f in fields.iter() {
                match file_column_type(f.data_type()) {
                    Ok(t) => columns.push(ColumnSchema::new(f.name().clone(), t)),
                    Err(why) => refused.push((
                        f.name().clone(),
                        format!("its Arrow type is {}, {why}", f.data_type()),
                    )),
                }
            }
            let sorting = file
                .metadata
                .metadata()
                .row_groups()
                .first()
                .and_then(|g| g.sorting_columns().cloned())
                .unwrap_or_default();
            // A declared ascending order over top-level columns is the key.
            let leaves = file.metadata.metadata().file_metadata().schema_descr();
            let mut sorted = Vec::new();
            for s in &sorting {
                if s.descending || s.column_idx < 0 {
                    break;
                }
                let leaf = leaves.column(s.column_idx as usize);
                let name = leaf.path().parts()[0].clone();
                if leaf.path().parts().len() != 1 {
                    break;
                }
                sorted.push(name);
            }
            for c in &mut columns {
                c.sort_ascending = sorted.contains(&c.name);
            }
            order_key_first(columns, &sorted)
        }
    };
    if let Some(key) = key {
        for name in key {
            if let Some((_, why)) = refused.iter().find(|(r, _)| r == name) {
                return Err(invalid(format!(
                    "key column {name:?} cannot be read: {why}"
                )));
            }
            if !columns.iter().any(|c| &c.name == name) {
                return Err(invalid(format!(
                    "key column {name:?} is not a column of the files"
                )));
            }
        }
        for c in &mut columns {
            c.sort_ascending = key.contains(&c.name);
            c.expression = None;
            c.aggregate = None;
        }
        columns = order_key_first(columns, key);
    }
    for c in &columns {
        if c.is_key() && c.wire_type() == ValueType::Any {
            return Err(invalid(format!("key column {:?} has type any", c.name)));
        }
    }
    let mut file_columns = Vec::with_capacity(columns.len());
    for c in &columns {
        let Some(i) = field_index(&c.name) else {
            return Err(invalid(format!(
                "column {:?} of the {SCHEMA_METADATA_KEY} metadata is not in the files",
                c.name
            )));
        };
        file_columns.push(i);
    }
    let schema = TableSchema::new(columns).map_err(|e| invalid(e.to_string()))?;
    Ok((schema, file_columns, refused))
}

/// `columns` with the key (in `key` order) first, the rest in their order.
pub(super) fn order_key_first(columns: Vec<ColumnSchema>, key: &[String]) -> Vec<ColumnSchema> {
    let mut ordered: Vec<ColumnSchema> = key
        .iter()
        .filter_map(|k| columns.iter().find(|c| &c.name == k).cloned())
        .collect();
    ordered.extend(columns.into_iter().filter(|c| !key.contains(&c.name)));
    ordered
}

/// Row-group statistics of a column of Arrow type `data_type` as YT values, where Parquet's
/// order is YT's: integers, booleans, bytes (bytewise), and dates and timestamps (signed
/// integers in Parquet, the same order as YT's unsigned ones once before-1970 bounds are left
/// open). The unit of temporal statistics is the Parquet column's, which may differ from the
/// Arrow type's (a writer may store seconds as milliseconds).
pub(super) fn statistics_bounds(
    stats: &Statistics,
    descr: &ColumnDescriptor,
    data_type: &DataType,
) -> (Option<Value>, Option<Value>) {
    let data_type = match data_type {
        DataType::Dictionary(_, value) => value.as_ref(),
        t => t,
    };
    let signed = matches!(
        data_type,
        DataType::Int8 | DataType::Int16 | DataType::Int32 | DataType::Int64
    );
    let unsigned = matches!(
        data_type,
        DataType::UInt8 | DataType::UInt16 | DataType::UInt32 | DataType::UInt64
    );
    if let Some(scale) = temporal_statistics_scale(stats, descr, data_type) {
        let bound = |v: i64| {
            scale
                .apply(v)
                .filter(|v| *v >= 0)
                .map(|v| Value::Uint64(v as u64))
        };
        return match stats {
            Statistics::Int32(s) => (
                s.min_opt().and_then(|v| bound(*v as i64)),
                s.max_opt().and_then(|v| bound(*v as i64)),
            ),
            Statistics::Int64(s) => (
                s.min_opt().and_then(|v| bound(*v)),
                s.max_opt().and_then(|v| bound(*v)),
            ),
            _ => (None, None),
        };
    }
    match stats {
        Statistics::Int32(s) if signed => (
            s.min_opt().map(|v| Value::Int64(*v as i64)),
            s.max_opt().map(|v| Value::Int64(*v as i64)),
        ),
        Statistics::Int32(s) if unsigned => (
            s.min_opt().map(|v| Value::Uint64(*v as u32 as u64)),
            s.max_opt().map(|v| Value::Uint64(*v as u32 as u64)),
        ),
        Statistics::Int64(s) if signed => (
            s.min_opt().map(|v| Value::Int64(*v)),
            s.max_opt().map(|v| Value::Int64(*v)),
        ),
        Statistics::Int64(s) if unsigned => (
            s.min_opt().map(|v| Value::Uint64(*v as u64)),
            s.max_opt().map(|v| Value::Uint64(*v as u64)),
        ),
        Statistics::Boolean(s) if *data_type == DataType::Boolean => (
            s.min_opt().map(|v| Value::Boolean(*v)),
            s.max_opt().map(|v| Value::Boolean(*v)),
        ),
        Statistics::ByteArray(s) if is_bytes(data_type) => (
            s.min_opt().map(|v| Value::String(v.data().to_vec())),
            s.max_opt().map(|v| Value::String(v.data().to_vec())),
        ),
        // Plain fixed-size bytes compare bytewise (unsigned), as YT's strings.
        Statistics::FixedLenByteArray(s)
            if matches!(data_type, DataType::FixedSizeBinary(_))
                && descr.logical_type_ref().is_none()
                && descr.converted_type() == ConvertedType::NONE =>
        {
            (
                s.min_opt().map(|v| Value::String(v.data().to_vec())),
                s.max_opt().map(|v| Value::String(v.data().to_vec())),
            )
        }
        _ => (None, None),
    }
}

/// For a date or timestamp column (YT `date`, `datetime`, `timestamp`), the step from its
/// Parquet statistics to YT's unit, from the Parquet column's own unit; `None` for other
/// columns and for units not known for sure.
fn temporal_statistics_scale(
    stats: &Statistics,
    descr: &ColumnDescriptor,
    data_type: &DataType,
) -> Option<Scale> {
    let parquet = descr.logical_type_ref();
    let converted = descr.converted_type();
    let is_date = matches!(parquet, Some(ParquetType::Date)) || converted == ConvertedType::DATE;
    let timestamp_unit = match parquet {
        Some(ParquetType::Timestamp(t)) => Some(match t.unit {
            ParquetUnit::MILLIS => Scale::Multiply(1_000),
            ParquetUnit::MICROS => Scale::Multiply(1),
            ParquetUnit::NANOS => Scale::Divide(1_000),
        }),
        Some(_) => None,
        None => match converted {
            ConvertedType::TIMESTAMP_MILLIS => Some(Scale::Multiply(1_000)),
            ConvertedType::TIMESTAMP_MICROS => Some(Scale::Multiply(1)),
            _ => None,
        },
    };
    let plain = parquet.is_none() && converted == ConvertedType::NONE;
    match (data_type, stats) {
        (DataType::Date32, Statistics::Int32(_)) if is_date => Some(Scale::Multiply(1)),
        // Date64 is written as days (INT32 DATE) or as plain milliseconds (INT64).
        (DataType::Date64, Statistics::Int32(_)) if is_date => Some(Scale::Multiply(86_400)),
        (DataType::Date64, Statistics::Int64(_)) if plain => Some(Scale::Divide(1_000)),
        (DataType::Timestamp(_, _), Statistics::Int64(_)) if timestamp_unit.is_some() => {
            timestamp_unit
        }
        // Seconds have no Parquet unit: written as plain INT64.
        (DataType::Timestamp(TimeUnit::Second, _), Statistics::Int64(_)) if plain => {
            Some(Scale::Multiply(1_000_000))
        }
        _ => None,
    }
}

/// Whether the page index of a column of Arrow type `data_type` holds its values as the
/// wire type's (numbers, booleans, bytes), which the page windows of key ranges need.
pub(super) fn page_index_is_exact(data_type: &DataType) -> bool {
    data_type.is_integer()
        || data_type.is_floating()
        || *data_type == DataType::Boolean
        || is_bytes(data_type)
}

/// Whether an Arrow type holds text or bytes (Parquet BYTE_ARRAY, ordered bytewise as YT
/// orders strings).
fn is_bytes(data_type: &DataType) -> bool {
    matches!(
        data_type,
        DataType::Utf8
            | DataType::LargeUtf8
            | DataType::Utf8View
            | DataType::Binary
            | DataType::LargeBinary
            | DataType::BinaryView
    )
}
