//! A store on an injected clock and id generator (`Store::with_clock`, `Store::with_ids`)
//! is deterministic: the same operations from the same seed write the same objects, byte
//! for byte (commit records, chunks and their names), and every time and id in them is the
//! clock's and the generator's. Any read of the wall clock or of the process id left on a
//! write path would make two runs differ.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

mod support;

use dynql_core::{TableSchema, Value};
use dynql_storage::cypress::NodeKind;
use dynql_storage::{ManualClock, SeededIds, Store, TableOptions, Timestamp, WriteKind};
use object_store::memory::InMemory;

/// 2030-01-01T00:00:00Z, and a little.
const START_NANOS: u64 = 1_893_456_000_000_000_123;

fn row(k: i64, v: &str) -> Vec<Option<Value>> {
    vec![
        Some(Value::Int64(k)),
        Some(Value::String(v.as_bytes().to_vec())),
    ]
}

async fn create_directory(store: &Store, path: &str) {
    store
        .create_node(path, NodeKind::MapNode, BTreeMap::new(), false, false, None)
        .await
        .unwrap();
}

/// Runs one fixed history on a new in-memory store on a manual clock and ids of `seed`;
/// returns every object written (path -> bytes) and the commit timestamps.
async fn history(seed: u64) -> (BTreeMap<String, Vec<u8>>, Vec<Timestamp>) {
    let objects = Arc::new(InMemory::new());
    let clock = Arc::new(ManualClock::new(START_NANOS));
    let store = Store::from_object_store(objects.clone(), "memory://")
        .with_clock(clock.clone())
        .with_ids(Arc::new(SeededIds::new(seed)));
    let tick = || clock.advance(Duration::from_millis(3));
    let sorted =
        TableSchema::parse("[{name=k;type=int64;sort_order=ascending};{name=v;type=string}]")
            .unwrap();
    let ordered = TableSchema::parse("[{name=k;type=int64};{name=v;type=string}]").unwrap();
    let mut timestamps = Vec::new();

    create_directory(&store, "//work").await;
    tick();
    store
        .create_table("//work/t", sorted, TableOptions::default())
        .await
        .unwrap();
    tick();
    store
        .create_table("//work/q", ordered, TableOptions::default())
        .await
        .unwrap();
    for round in 0..3i64 {
        tick();
        let rows = (0..20).map(|k| row(k * 3 + round, "a")).collect();
        timestamps.push(
            store
                .write_rows("//work/t", WriteKind::Overwrite, false, rows)
                .await
                .unwrap(),
        );
        tick();
        store.flush_table("//work/t").await.unwrap();
    }
    tick();
    // A write large enough to go straight to a chunk.
    let bulk = (0..12_000).map(|k| row(k, "bulk")).collect();
    timestamps.push(
        store
            .write_rows("//work/t", WriteKind::Overwrite, false, bulk)
            .await
            .unwrap(),
    );
    tick();
    store.compact("//work/t").await.unwrap();
    tick();
    timestamps.push(
        store
            .append_rows("//work/q", (0..5).map(|k| (None, row(k, "q"))).collect())
            .await
            .unwrap(),
    );
    tick();
    let tx = store.start_transaction(60_000).await.unwrap();
    store
        .write_rows_in(
            &tx.id,
            "//work/t",
            WriteKind::Overwrite,
            false,
            vec![row(7, "in tx")],
        )
        .await
        .unwrap();
    tick();
    timestamps.push(store.commit_transaction(&tx.id).await.unwrap());
    tick();
    let master = store
        .start_master_transaction(None, 60_000, Some("seeded".into()))
        .await
        .unwrap();
    store
        .create_node(
            "//work/doc",
            NodeKind::Document {
                value: "{a=1}".into(),
            },
            BTreeMap::new(),
            false,
            false,
            Some(&master.id),
        )
        .await
        .unwrap();
    tick();
    store.commit_master_transaction(&master.id).await.unwrap();
    tick();
    store.checkpoint().await.unwrap();

    let written = support::stored_objects(objects.as_ref()).await;
    (written, timestamps)
}

#[tokio::test(flavor = "current_thread")]
async fn the_same_seed_and_clock_write_the_same_objects() {
    let (first, first_timestamps) = history(0x5eed).await;
    let (second, second_timestamps) = history(0x5eed).await;
    assert_eq!(first_timestamps, second_timestamps);
    assert_eq!(
        first.keys().collect::<Vec<_>>(),
        second.keys().collect::<Vec<_>>(),
        "the same objects, by name"
    );
    for (path, bytes) in &first {
        assert!(&second[path] == bytes, "{path} differs between two runs");
    }
    assert!(
        first.keys().any(|p| p.starts_with("tables/")) && first.len() > 10,
        "the history wrote chunks and records: {:?}",
        first.keys().collect::<Vec<_>>()
    );
    // Times are the manual clock's (2030, not the machine's now), ids the generator's.
    for ts in &first_timestamps {
        assert_eq!(ts.unix_seconds(), START_NANOS / 1_000_000_000, "{ts:?}");
    }
    assert!(first_timestamps.windows(2).all(|w| w[0] < w[1]));
    let chunk = first
        .keys()
        .find(|p| p.ends_with(".parquet"))
        .expect("a chunk");
    assert!(
        chunk.contains("-1893456000") && chunk.contains("5eed-"),
        "a chunk named by the clock and the generator: {chunk}"
    );
    // Another seed makes other ids, and so other names.
    let (other, _) = history(0xbeef).await;
    assert_ne!(
        first.keys().collect::<Vec<_>>(),
        other.keys().collect::<Vec<_>>()
    );
}

/// Deadlines are the store's clock's: a master transaction and a tablet transaction expire
/// when the clock passes them, and not before, with no wait in the test. Listings of
/// `//sys/transactions` and `//sys/locks` leave out the expired ones (a reader reaps them).
#[tokio::test(flavor = "current_thread")]
async fn transactions_expire_by_the_stores_clock() {
    let clock = Arc::new(ManualClock::new(START_NANOS));
    let store = Store::open("memory://")
        .unwrap()
        .with_clock(clock.clone())
        .with_ids(Arc::new(SeededIds::new(7)));
    create_directory(&store, "//work").await;
    let master = store
        .start_master_transaction(None, 1_000, None)
        .await
        .unwrap();
    let tablet = store.start_transaction(1_000).await.unwrap();
    let taken = store
        .lock_node(
            "//work",
            &master.id,
            dynql_storage::cypress::locks::LockMode::Snapshot,
            Default::default(),
        )
        .await
        .unwrap();
    clock.advance(Duration::from_millis(999));
    assert!(store.is_master_transaction(&master.id).await.unwrap());
    assert!(store.transaction(&tablet.id).await.is_ok());
    let listed = store.list_node("//sys/transactions", None).await.unwrap();
    assert_eq!(listed, vec![master.id.clone()]);
    assert_eq!(
        store.list_node("//sys/locks", None).await.unwrap(),
        vec![taken.lock_id.clone()]
    );
    clock.advance(Duration::from_millis(2));
    assert!(!store.is_master_transaction(&master.id).await.unwrap());
    assert!(store.transaction(&tablet.id).await.is_err());
    assert!(store
        .list_node("//sys/transactions", None)
        .await
        .unwrap()
        .is_empty());
    assert!(store
        .list_node("//sys/locks", None)
        .await
        .unwrap()
        .is_empty());
    assert!(store.node_in("//work", Some(&master.id)).await.is_err());
}
