//! Helpers the storage tests share: a fault-injecting object store, and the table of an
//! `int64` key `k` and an `int64` value `v` most of them write.

pub mod faulty_store;

use dynql_core::{TableSchema, Value};

/// `k int64` (the key), `v int64`.
pub fn schema() -> TableSchema {
    TableSchema::parse("[{name=k;type=int64;sort_order=ascending};{name=v;type=int64}]").unwrap()
}

/// A row of [`schema`], every column written.
pub fn row(k: i64, v: i64) -> Vec<Option<Value>> {
    vec![Some(Value::Int64(k)), Some(Value::Int64(v))]
}

/// The key of row `k` (to delete it).
pub fn key(k: i64) -> Vec<Option<Value>> {
    vec![Some(Value::Int64(k)), None]
}
