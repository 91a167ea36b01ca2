//! Text at the boundary: YT's `string` columns (the type every YT schema uses for text) leave
//! dynql as Arrow `Utf8` when their values are UTF-8, so that Arrow tools, DuckDB and
//! pandas see text and not bytes; as `Binary` where a value is not UTF-8, or when asked.
//!
//! Inside dynql a `string` is bytes (YT allows any); only the Arrow handed out changes.
//! Streams fix their schema before the first row, so a stream's `string` columns are `Utf8`
//! and a value that is not UTF-8 fails it with the column's name and the way to read bytes
//! ([`crate::SelectOptions::binary_strings`]); collected results and exports look at every
//! value first (an export that meets such a value writes that column as `Binary`).

use std::sync::Arc;

use arrow::array::{Array, ArrayRef, AsArray, StringArray};
use arrow::datatypes::{DataType, Field, Schema, SchemaRef};
use arrow::record_batch::RecordBatch;

use dynql_core::arrow_convert::YT_TYPE_KEY;

use crate::error::Error;

/// The positions of the fields of `schema` that hold YT `string` or `utf8` values as
/// `Binary`: those to hand out as text (`utf8` ones only, with `binary_strings`).
pub(crate) fn text_columns(schema: &Schema, binary_strings: bool) -> Vec<usize> {
    schema
        .fields()
        .iter()
        .enumerate()
        .filter(|(_, f)| {
            f.data_type() == &DataType::Binary
                && match f.metadata().get(YT_TYPE_KEY).map(String::as_str) {
                    Some("utf8") => true,
                    Some("string") => !binary_strings,
                    _ => false,
                }
        })
        .map(|(i, _)| i)
        .collect()
}

/// `schema` with the fields at `columns` as `Utf8` (their metadata kept).
pub(crate) fn text_schema(schema: &Schema, columns: &[usize]) -> SchemaRef {
    let fields: Vec<Field> = schema
        .fields()
        .iter()
        .enumerate()
        .map(|(i, f)| {
            if columns.contains(&i) {
                f.as_ref().clone().with_data_type(DataType::Utf8)
            } else {
                f.as_ref().clone()
            }
        })
        .collect();
    Arc::new(Schema::new_with_metadata(fields, schema.metadata().clone()))
}

/// Why a column cannot be text: its name and the row (of the batch) of a value that is not
/// UTF-8.
#[derive(Debug, Clone)]
pub(crate) struct NotUtf8 {
    pub(crate) name: String,
    pub(crate) row: usize,
}

impl NotUtf8 {
    /// The error a stream fails with.
    pub(crate) fn into_error(self) -> Error {
        Error::Invalid(format!(
            "column {} holds a value that is not UTF-8 (row {} of a batch), which a text (Utf8) column cannot hand out: read string columns as bytes (Binary) with SelectOptions::binary_strings",
            dynql_core::error::shown(&self.name),
            self.row
        ))
    }
}

/// A `Binary` array as `Utf8`, or the first row whose value is not UTF-8. The bytes are
/// checked once and shared, not copied.
pub(crate) fn binary_as_text(array: &ArrayRef) -> std::result::Result<ArrayRef, usize> {
    let binary = array.as_binary::<i32>();
    match StringArray::try_from_binary(binary.clone()) {
        Ok(text) => Ok(Arc::new(text)),
        Err(_) => Err((0..binary.len())
            .find(|&i| binary.is_valid(i) && std::str::from_utf8(binary.value(i)).is_err())
            .unwrap_or(0)),
    }
}

/// `batch` as `schema` (see [`text_schema`]): the `columns` turned into text.
pub(crate) fn batch_as_text(
    batch: &RecordBatch,
    schema: &SchemaRef,
    columns: &[usize],
) -> std::result::Result<RecordBatch, NotUtf8> {
    let mut arrays = batch.columns().to_vec();
    for &c in columns {
        arrays[c] = binary_as_text(&arrays[c]).map_err(|row| NotUtf8 {
            name: schema.field(c).name().clone(),
            row,
        })?;
    }
    // The same columns, lengths and nullability: only the string fields' types differ.
    RecordBatch::try_new(schema.clone(), arrays).map_err(|_| NotUtf8 {
        name: String::new(),
        row: 0,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use arrow::array::BinaryArray;
    use std::collections::HashMap;

    fn field(name: &str, yt: &str) -> Field {
        Field::new(name, DataType::Binary, true)
            .with_metadata(HashMap::from([(YT_TYPE_KEY.to_string(), yt.to_string())]))
    }

    #[test]
    fn string_fields_become_text_and_any_stays_bytes() {
        let schema = Schema::new(vec![
            Field::new("k", DataType::Int64, true),
            field("s", "string"),
            field("a", "any"),
        ]);
        assert_eq!(text_columns(&schema, true), Vec::<usize>::new());
        let columns = text_columns(&schema, false);
        assert_eq!(columns, [1]);
        let text = text_schema(&schema, &columns);
        assert_eq!(text.field(1).data_type(), &DataType::Utf8);
        assert_eq!(text.field(1).metadata()[YT_TYPE_KEY], "string");
        assert_eq!(text.field(2).data_type(), &DataType::Binary);
    }

    #[test]
    fn a_value_that_is_not_utf8_is_found_by_row() {
        let good: ArrayRef = Arc::new(BinaryArray::from_opt_vec(vec![Some(b"a"), None]));
        let text = binary_as_text(&good).unwrap();
        assert_eq!(text.as_string::<i32>().value(0), "a");
        assert!(text.is_null(1));
        let bad: ArrayRef = Arc::new(BinaryArray::from_vec(vec![b"ok", b"\xff\x00", b"x"]));
        assert_eq!(binary_as_text(&bad).unwrap_err(), 1);
    }
}
