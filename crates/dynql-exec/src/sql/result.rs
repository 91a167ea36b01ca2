//! A statement's Arrow batches as a [`QueryResult`] in YT wire types.

use std::sync::Arc;

use arrow::array::ArrayRef;
use arrow::datatypes::{DataType, Field, Schema};
use arrow::record_batch::RecordBatch;
use dynql_core::arrow_convert::{arrow_type, batch_to_rows, value_type_of_field};
use dynql_core::ValueType;

use crate::error::Result;
use crate::select::{QueryResult, Statistics};

/// The rows of `batches` with their columns' names and wire types.
pub(super) fn query_result(batches: &[RecordBatch], statistics: Statistics) -> Result<QueryResult> {
    let (columns, rows) = if let Some(first) = batches.first() {
        let columns = result_columns(&first.schema());
        let types: Vec<ValueType> = columns.iter().map(|(_, t)| *t).collect();
        let mut rows = Vec::new();
        for b in batches {
            rows.extend(batch_to_rows(&as_wire_types(b, &types)?, &types));
        }
        (columns, rows)
    } else {
        (Vec::new(), Vec::new())
    };
    let mut statistics = statistics;
    statistics.rows_written = rows.len() as u64;
    Ok(QueryResult {
        columns,
        rows,
        statistics,
    })
}

/// Names and YT wire types of a result: lists, structs and maps are `any` (YSON); other
/// types without a YT equivalent (dates, decimals) are shown as text.
fn result_columns(schema: &Schema) -> Vec<(String, ValueType)> {
    schema
        .fields()
        .iter()
        .map(|f| {
            let t = match f.data_type() {
                DataType::Utf8View | DataType::BinaryView => ValueType::String,
                t if t.is_nested() => ValueType::Any,
                _ => value_type_of_field(&Field::new(f.name(), f.data_type().clone(), true))
                    .unwrap_or(ValueType::String),
            };
            (f.name().clone(), t)
        })
        .collect()
}

/// `batch` with each column cast to the Arrow type of its wire type (text first where the
/// type has no YT equivalent).
fn as_wire_types(batch: &RecordBatch, types: &[ValueType]) -> Result<RecordBatch> {
    let mut fields = Vec::with_capacity(types.len());
    let mut columns: Vec<ArrayRef> = Vec::with_capacity(types.len());
    for ((field, column), t) in batch
        .schema()
        .fields()
        .iter()
        .zip(batch.columns())
        .zip(types)
    {
        let target = arrow_type(*t);
        let mut column = column.clone();
        if *t == ValueType::Any && column.data_type().is_nested() {
            column = dynql_storage::files::types::nested_as_yson(column.as_ref(), field.name())?;
        }
        if *t == ValueType::String
            && !matches!(
                column.data_type(),
                DataType::Utf8
                    | DataType::LargeUtf8
                    | DataType::Utf8View
                    | DataType::Binary
                    | DataType::LargeBinary
                    | DataType::BinaryView
                    | DataType::FixedSizeBinary(_)
            )
        {
            column = arrow::compute::cast(&column, &DataType::Utf8)
                .map_err(datafusion::error::DataFusionError::from)?;
        }
        if column.data_type() != &target {
            column = arrow::compute::cast(&column, &target)
                .map_err(datafusion::error::DataFusionError::from)?;
        }
        fields.push(Field::new(field.name(), target, true));
        columns.push(column);
    }
    Ok(RecordBatch::try_new(Arc::new(Schema::new(fields)), columns)
        .map_err(datafusion::error::DataFusionError::from)?)
}
