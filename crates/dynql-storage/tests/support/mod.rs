//! Helpers the storage tests share: a fault-injecting object store, and the table of an
//! `int64` key `k` and an `int64` value `v` most of them write.

// Each test crate uses some of these.
#![allow(dead_code)]

pub mod faulty_store;
pub mod model_disk;

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

/// Every object in `objects`, by path, with its bytes (what a run left behind).
pub async fn stored_objects(
    objects: &dyn object_store::ObjectStore,
) -> std::collections::BTreeMap<String, Vec<u8>> {
    use futures::TryStreamExt;
    use object_store::ObjectStoreExt;
    let listed: Vec<_> = objects.list(None).try_collect().await.unwrap();
    let mut stored = std::collections::BTreeMap::new();
    for meta in listed {
        let bytes = objects
            .get(&meta.location)
            .await
            .unwrap()
            .bytes()
            .await
            .unwrap();
        stored.insert(meta.location.to_string(), bytes.to_vec());
    }
    stored
}
