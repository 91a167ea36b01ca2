//! The table most unit tests of the crate write: a sorted table of an `int64` key `k` and an
//! `int64` value `v`.

use arrow::array::AsArray;
use arrow::datatypes::Int64Type;
use arrow::record_batch::RecordBatch;
use dynql_core::{TableSchema, Value};

use crate::kernel::catalog::TableOptions;
use crate::store::{RowValues, Store};

/// `k int64` (the key), `v int64`.
pub(crate) fn key_value_schema() -> TableSchema {
    TableSchema::parse("[{name=k;type=int64;sort_order=ascending};{name=v;type=int64}]")
        .expect("a valid schema")
}

/// Creates the table at `path` with [`key_value_schema`] and default options.
pub(crate) async fn create_key_value_table(store: &Store, path: &str) {
    store
        .create_table(path, key_value_schema(), TableOptions::default())
        .await
        .expect("the table is created");
}

/// A row of [`key_value_schema`], every column written.
pub(crate) fn key_value_row(k: i64, v: i64) -> RowValues {
    vec![Some(Value::Int64(k)), Some(Value::Int64(v))]
}

/// The `(k, v)` pairs of batches whose first two columns are [`key_value_schema`]'s, in
/// order.
pub(crate) fn key_value_pairs(batches: &[RecordBatch]) -> Vec<(i64, i64)> {
    batches
        .iter()
        .flat_map(|b| {
            let k = b.column(0).as_primitive::<Int64Type>().clone();
            let v = b.column(1).as_primitive::<Int64Type>().clone();
            (0..b.num_rows()).map(move |i| (k.value(i), v.value(i)))
        })
        .collect()
}
