//! Computed key columns evaluated over Arrow arrays, with the row evaluator's semantics (the
//! vectorised evaluator of queries): what a bulk load uses instead of a row at a time.

use arrow::array::ArrayRef;

use dynql_core::{TableSchema, ValueType};
use dynql_ql::computed::ComputedColumns;
use dynql_ql::eval::EvalOptions;

use crate::select::MAX_BATCH_STRING_BYTES;
use crate::vectorized::budget::Budget;
use crate::vectorized::evaluate::{evaluate, Batch};

/// Evaluates every computed column of `schema` over `keys` (the key columns of a batch, in
/// schema order, each in its type's Arrow encoding; the computed ones may hold anything) and
/// returns each as (column position, values).
///
/// # Errors
/// An evaluation error (e.g. division by zero) in some row; the row path
/// ([`ComputedColumns::fill`]) tells which rows fail.
///
/// # Example
/// ```
/// use std::sync::Arc;
/// use arrow::array::{Array, ArrayRef, AsArray, Int64Array, UInt64Array};
/// use arrow::datatypes::UInt64Type;
/// use dynql_core::TableSchema;
/// use dynql_ql::computed::ComputedColumns;
/// let schema = TableSchema::parse(
///     "[{name=h;type=uint64;sort_order=ascending;expression=\"k % 10u\"};\
///       {name=k;type=uint64;sort_order=ascending};{name=v;type=string}]",
/// )
/// .unwrap();
/// let computed = ComputedColumns::compile(&schema).unwrap();
/// let keys: Vec<ArrayRef> = vec![
///     Arc::new(UInt64Array::from(vec![0u64; 2])),
///     Arc::new(UInt64Array::from(vec![13u64, 20])),
/// ];
/// let filled = dynql_exec::computed::evaluate_computed_columns(&schema, &computed, &keys).unwrap();
/// assert_eq!(filled[0].0, 0);
/// assert_eq!(filled[0].1.as_primitive::<UInt64Type>().values(), &[3, 0]);
/// ```
pub fn evaluate_computed_columns(
    schema: &TableSchema,
    computed: &ComputedColumns,
    keys: &[ArrayRef],
) -> dynql_ql::Result<Vec<(usize, ArrayRef)>> {
    let types: Vec<ValueType> = schema.key_columns().iter().map(|c| c.wire_type()).collect();
    let rows = keys.first().map_or(0, |a| a.len());
    computed
        .iter()
        .map(|(column, e)| {
            // Each expression has its budget, as in a query.
            let budget = Budget::new(MAX_BATCH_STRING_BYTES, rows);
            let input = Batch {
                columns: keys,
                types: &types,
                rows,
                budget: &budget,
            };
            Ok((column, evaluate(e, input, EvalOptions::default())?))
        })
        .collect()
}
