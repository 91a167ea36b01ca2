//! What a tablet scan hands on: its batches in the scan schema's types (byte strings as views
//! or, where a reader asked, as dictionaries) and only the rows the top-k thresholds pushed
//! into it let through.

use std::sync::Arc;

use arrow::array::{Array, AsArray};
use arrow::datatypes::{DataType, SchemaRef};
use arrow::record_batch::{RecordBatch, RecordBatchOptions};
use datafusion::error::{DataFusionError, Result as DfResult};
use datafusion::physical_expr::PhysicalExpr;

/// The type in which a scan gives a byte-string column to a reader that works once per
/// distinct value ([`TabletScanExec::with_dictionary_columns`]).
pub(crate) fn byte_string_dictionary() -> DataType {
    DataType::Dictionary(Box::new(DataType::Int32), Box::new(DataType::BinaryView))
}

/// The rows of `batch` the dynamic filters pushed in (top-k thresholds, kept only where
/// skipping rows is safe) still let through: the sort above would drop the others, and each
/// batch it takes a row of is held whole until it compacts its rows (a copy of the top k per
/// such batch, when a threshold lets a few rows of nearly every batch through).
pub(crate) fn within_thresholds(
    mut batch: RecordBatch,
    pushed: &[Arc<dyn PhysicalExpr>],
) -> DfResult<RecordBatch> {
    for filter in pushed {
        let rows = batch.num_rows();
        if rows == 0 {
            break;
        }
        let passed = filter.evaluate(&batch)?.into_array(rows)?;
        let Some(passed) = passed.as_boolean_opt() else {
            continue;
        };
        // A null is not a pass, as in a WHERE.
        if passed.null_count() == 0 && passed.true_count() == rows {
            continue;
        }
        batch = arrow::compute::filter_record_batch(&batch, passed)?;
    }
    Ok(batch)
}

/// A column of byte strings as a dictionary ([`byte_string_dictionary`]): views as a
/// dictionary of their own rows (a null row has a null key), a dictionary as it is.
fn as_dictionary(column: &arrow::array::ArrayRef) -> DfResult<arrow::array::ArrayRef> {
    if column.data_type() == &byte_string_dictionary() {
        return Ok(column.clone());
    }
    if column.data_type() != &DataType::BinaryView {
        return Err(DataFusionError::Internal(format!(
            "a scan cannot give a column of {} as a dictionary",
            column.data_type()
        )));
    }
    let rows = i32::try_from(column.len())
        .map_err(|_| DataFusionError::Internal("a batch of more than 2^31 rows".into()))?;
    let keys = arrow::array::Int32Array::new((0..rows).collect(), column.nulls().cloned());
    Ok(Arc::new(arrow::array::DictionaryArray::<
        arrow::datatypes::Int32Type,
    >::try_new(keys, column.clone())?))
}

/// The projected columns of a scanned batch of `table`, in the scan schema's types.
pub(crate) fn project(
    batch: &RecordBatch,
    projection: &[usize],
    schema: &SchemaRef,
    table: &str,
) -> DfResult<RecordBatch> {
    let columns = projection
        .iter()
        .zip(schema.fields())
        .map(|(&i, f)| {
            let c = batch.column(i);
            if c.data_type() == f.data_type() {
                Ok(c.clone())
            } else if f.data_type() == &byte_string_dictionary() {
                as_dictionary(c)
            } else {
                let options = arrow::compute::CastOptions {
                    safe: false,
                    ..Default::default()
                };
                // YT's dates, datetimes and timestamps are stored as uint64: through the
                // signed integer Arrow's temporal types are cast from (values are in range).
                let c = match (c.data_type(), f.data_type()) {
                    (DataType::UInt64, DataType::Date32) => {
                        arrow::compute::cast_with_options(c, &DataType::Int32, &options)?
                    }
                    (DataType::UInt64, DataType::Timestamp(..)) => {
                        arrow::compute::cast_with_options(c, &DataType::Int64, &options)?
                    }
                    _ => c.clone(),
                };
                arrow::compute::cast_with_options(&c, f.data_type(), &options).map_err(|e| {
                    if matches!(f.data_type(), DataType::Utf8 | DataType::Utf8View) {
                        DataFusionError::Execution(format!(
                            "column {} of {table} holds a value that is not UTF-8 text ({e}); SQL reads string columns as text, YT QL (select-rows) reads them as bytes",
                            f.name()
                        ))
                    } else {
                        DataFusionError::from(e)
                    }
                })
            }
        })
        .collect::<DfResult<Vec<_>>>()?;
    Ok(RecordBatch::try_new_with_options(
        schema.clone(),
        columns,
        &RecordBatchOptions::new().with_row_count(Some(batch.num_rows())),
    )?)
}

#[cfg(test)]
mod tests {
    use super::*;
    use arrow::array::{Float64Array, Int64Array};
    use arrow::datatypes::{Field, Schema};
    use datafusion::logical_expr::Operator;
    use datafusion::physical_expr::expressions::{binary, col, lit};

    fn batch() -> RecordBatch {
        let schema = Arc::new(Schema::new(vec![
            Field::new("k", DataType::Int64, false),
            Field::new("v", DataType::Float64, true),
        ]));
        let columns: Vec<arrow::array::ArrayRef> = vec![
            Arc::new(Int64Array::from(vec![1, 2, 3, 4])),
            Arc::new(Float64Array::from(vec![
                Some(1.0),
                None,
                Some(3.0),
                Some(0.5),
            ])),
        ];
        RecordBatch::try_new(schema, columns).unwrap()
    }

    fn below(v: f64, batch: &RecordBatch) -> Arc<dyn PhysicalExpr> {
        let schema = batch.schema();
        binary(col("v", &schema).unwrap(), Operator::Lt, lit(v), &schema).unwrap()
    }

    #[test]
    fn a_threshold_keeps_the_rows_it_lets_through_and_no_null() {
        let b = batch();
        let kept = within_thresholds(b.clone(), &[below(2.0, &b)]).unwrap();
        let keys: &Int64Array = kept.column(0).as_primitive();
        assert_eq!(keys.values().to_vec(), vec![1, 4]);
        // Two thresholds: both must let a row through.
        let kept = within_thresholds(b.clone(), &[below(2.0, &b), below(0.9, &b)]).unwrap();
        assert_eq!(kept.num_rows(), 1);
    }

    #[test]
    fn a_batch_a_threshold_lets_through_whole_is_given_as_it_is() {
        let mut b = batch();
        b = b.slice(2, 2);
        let kept = within_thresholds(b.clone(), &[below(5.0, &b)]).unwrap();
        assert!(Arc::ptr_eq(kept.column(1), b.column(1)));
        let none = within_thresholds(b.clone(), &[]).unwrap();
        assert_eq!(none.num_rows(), 2);
    }
}
