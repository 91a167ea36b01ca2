//! The columns of file tables: their YT schema from the files' Arrow schema or the
//! `dynql.schema` metadata, row-group statistics as YT values, and file columns converted to
//! the Arrow types of their wire types.

use arrow::array::{Array, ArrayRef};
use arrow::datatypes::{DataType, Schema};
use parquet::file::statistics::Statistics;

use dynql_core::arrow_convert::arrow_type;
use dynql_core::{ColumnSchema, LogicalType, TableSchema, Value, ValueType};

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

/// The YT type of an Arrow column (types without a YT equivalent, such as dates and decimals,
/// are held as their text: see [`convert`]); `Err` for types dynql cannot hold at all.
pub(super) fn logical_type(data_type: &DataType) -> std::result::Result<LogicalType, String> {
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
        DataType::Binary | DataType::LargeBinary | DataType::BinaryView => LogicalType::String,
        // Dates, times and decimals are read as their text form.
        t if arrow::compute::can_cast_types(t, &DataType::Utf8) && !t.is_nested() => {
            LogicalType::String
        }
        t => return Err(format!("type {t} has no YT equivalent")),
    })
}

/// The schema of the table from its first file, the file field of each column, and the
/// fields left out.
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
    let mut skipped = Vec::new();
    let mut columns: Vec<ColumnSchema> = match declared {
        Some(text) => {
            let declared = TableSchema::parse(&text)
                .map_err(|e| invalid(format!("malformed {SCHEMA_METADATA_KEY} metadata: {e}")))?;
            declared.columns().to_vec()
        }
        None => {
            let mut columns = Vec::new();
            for f in fields.iter() {
                match logical_type(f.data_type()) {
                    Ok(t) => columns.push(ColumnSchema::new(f.name().clone(), t)),
                    Err(why) => skipped.push((f.name().clone(), why)),
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
    Ok((schema, file_columns, skipped))
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

/// Row-group statistics as YT values, where Parquet's order is YT's.
pub(super) fn statistics_bounds(
    stats: &Statistics,
    data_type: &DataType,
) -> (Option<Value>, Option<Value>) {
    let signed = matches!(
        data_type,
        DataType::Int8 | DataType::Int16 | DataType::Int32 | DataType::Int64
    );
    let unsigned = matches!(
        data_type,
        DataType::UInt8 | DataType::UInt16 | DataType::UInt32 | DataType::UInt64
    );
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
        _ => (None, None),
    }
}

/// A file column as the Arrow type of its YT wire type (text for types held as text).
pub(super) fn convert(array: &ArrayRef, wire: ValueType) -> Result<ArrayRef> {
    let target = arrow_type(wire);
    if array.data_type() == &target {
        return Ok(array.clone());
    }
    let source =
        if matches!(wire, ValueType::String | ValueType::Any) && !is_bytes(array.data_type()) {
            arrow::compute::cast(array, &DataType::Utf8)?
        } else {
            array.clone()
        };
    Ok(arrow::compute::cast(&source, &target)?)
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
