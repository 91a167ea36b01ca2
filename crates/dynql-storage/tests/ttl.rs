//! TTL on a column: every read path (scan rows, clean row groups, merged row groups, lookups
//! with and without the row cache, full reads) hides rows past their TTL as of the read's
//! time; `set`/`remove` change it at once; full compactions drop expired rows for good.

use dynql_core::{TableSchema, Value};
use dynql_storage::Retention;
use dynql_storage::{AttributeValue, Store, TableOptions, Timestamp, WriteKind};

const TTL: &str = "Interval(\"PT1H\") ON at";

fn schema() -> TableSchema {
    TableSchema::parse(
        "[{name=k;type=int64;sort_order=ascending};{name=at;type=datetime};{name=v;type=string}]",
    )
    .unwrap()
}

fn now_seconds() -> u64 {
    dynql_storage::Fresh::default().now().unix_seconds()
}

/// Row `k`: even keys were made two hours ago (expired under a one-hour TTL), odd keys
/// now; keys from 1000 have no time and never expire.
fn row(k: i64, now: u64) -> Vec<Option<Value>> {
    let at = if k >= 1000 {
        Value::Null
    } else if k % 2 == 0 {
        Value::Uint64(now - 7200)
    } else {
        Value::Uint64(now)
    };
    vec![
        Some(Value::Int64(k)),
        Some(at),
        Some(Value::String(format!("v{k}").into_bytes())),
    ]
}

fn live(k: i64) -> bool {
    k >= 1000 || k % 2 == 1
}

async fn table(retention: Retention) -> (Store, u64) {
    let s = Store::open("memory://").unwrap();
    let options = TableOptions {
        ttl: Some(TTL.into()),
        retention,
        lookup_cache_rows_ratio: Some(0.5),
        ..TableOptions::default()
    };
    s.create_table("//t", schema(), options).await.unwrap();
    let now = now_seconds();
    let rows = (0..200).chain(1000..1010).map(|k| row(k, now)).collect();
    s.write_rows("//t", WriteKind::Overwrite, false, rows)
        .await
        .unwrap();
    (s, now)
}

fn keys_of(rows: &[Vec<Value>]) -> Vec<i64> {
    rows.iter()
        .map(|r| match r[0] {
            Value::Int64(k) => k,
            _ => panic!("int key"),
        })
        .collect()
}

/// Every read path, at `at`, returns exactly the keys `expected` says.
async fn check_reads(s: &Store, at: Timestamp, expected: impl Fn(i64) -> bool) {
    let want: Vec<i64> = (0..200)
        .chain(1000..1010)
        .filter(|k| expected(*k))
        .collect();
    assert_eq!(keys_of(&s.read_rows("//t", at).await.unwrap()), want);
    let (tablets, statistics) = s.scan_ranges("//t", None, at).await.unwrap();
    let scanned: Vec<Vec<Value>> = tablets.into_iter().flat_map(|t| t.rows).collect();
    assert_eq!(keys_of(&scanned), want);
    assert_eq!(statistics.rows_read, want.len() as u64);
    let batches = s.scan_batches("//t", None, at).await.unwrap().0;
    let mut batched = Vec::new();
    for b in &batches {
        let keys = b
            .column(0)
            .as_any()
            .downcast_ref::<arrow::array::Int64Array>()
            .unwrap();
        batched.extend(keys.values().iter().copied());
    }
    assert_eq!(batched, want);
    let keys: Vec<Vec<Value>> = (0..200)
        .chain(1000..1010)
        .map(|k| vec![Value::Int64(k)])
        .collect();
    for cache in [Some(false), Some(true), Some(true)] {
        let (rows, _) = s.lookup_rows_with("//t", &keys, at, cache).await.unwrap();
        let found: Vec<Vec<Value>> = rows.into_iter().flatten().collect();
        assert_eq!(keys_of(&found), want, "lookups with cache {cache:?}");
    }
}

#[tokio::test]
async fn reads_hide_expired_rows_wherever_the_rows_are() {
    let (s, now) = table(Retention::default()).await;
    // In the dynamic store.
    check_reads(&s, Timestamp::MAX, live).await;
    // One clean chunk: whole row groups as batches.
    s.flush_table("//t").await.unwrap();
    check_reads(&s, Timestamp::MAX, live).await;
    // Two layers of the same keys: merged row groups.
    let rows = (0..200).chain(1000..1010).map(|k| row(k, now)).collect();
    s.write_rows("//t", WriteKind::Overwrite, false, rows)
        .await
        .unwrap();
    s.flush_table("//t").await.unwrap();
    check_reads(&s, Timestamp::MAX, live).await;
    // Expiry follows the read's time: under a TTL of half a second, once the clock has
    // passed the rows' second, only rows without a time are left. (Reads at a timestamp
    // ahead of the clock are refused, so the test waits rather than reading ahead.)
    s.set_attribute(
        "//t",
        "ttl",
        AttributeValue::Text("Interval(\"PT0.5S\") ON at".into()),
    )
    .await
    .unwrap();
    while now_seconds() <= now + 1 {
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
    check_reads(&s, Timestamp::MAX, |k| k >= 1000).await;
}

#[tokio::test]
async fn set_and_remove_change_expiry_at_once() {
    let (s, _) = table(Retention::default()).await;
    s.flush_table("//t").await.unwrap();
    s.set_attribute("//t", "ttl", AttributeValue::Removed)
        .await
        .unwrap();
    assert_eq!(s.table("//t").await.unwrap().ttl, None);
    check_reads(&s, Timestamp::MAX, |_| true).await;
    s.set_attribute(
        "//t",
        "ttl",
        AttributeValue::Text("Interval(\"PT3H\") ON at".into()),
    )
    .await
    .unwrap();
    check_reads(&s, Timestamp::MAX, |_| true).await;
    s.set_attribute("//t", "ttl", AttributeValue::Text(TTL.into()))
        .await
        .unwrap();
    check_reads(&s, Timestamp::MAX, live).await;
    // Refused changes leave the TTL as it was.
    for (name, value, why) in [
        (
            "ttl",
            AttributeValue::Text("Interval(\"P1D\") ON v".into()),
            "is a string",
        ),
        ("ttl", AttributeValue::Number(5), "must be a string"),
        ("min_data_ttl", AttributeValue::Removed, "cannot be removed"),
    ] {
        let e = s.set_attribute("//t", name, value).await.unwrap_err();
        assert!(e.to_string().contains(why), "{e}");
    }
    check_reads(&s, Timestamp::MAX, live).await;
}

#[tokio::test]
async fn full_compaction_drops_expired_rows_for_good() {
    let retention = Retention {
        min_data_ttl: 0,
        max_data_ttl: 0,
        ..Retention::default()
    };
    let (s, _) = table(retention).await;
    s.flush_table("//t").await.unwrap();
    assert_eq!(s.version_count("//t").await.unwrap(), 210);
    s.compact("//t").await.unwrap();
    assert_eq!(s.version_count("//t").await.unwrap(), 110);
    // Gone, not hidden: removing the TTL does not bring them back.
    s.set_attribute("//t", "ttl", AttributeValue::Removed)
        .await
        .unwrap();
    check_reads(&s, Timestamp::MAX, live).await;
}

#[tokio::test]
async fn retention_keeps_recent_history_of_expired_rows() {
    // Default retention keeps versions younger than 30 minutes: the expired rows get a
    // tombstone, and their versions stay until they age out.
    let (s, _) = table(Retention::default()).await;
    s.compact("//t").await.unwrap();
    assert_eq!(s.version_count("//t").await.unwrap(), 310);
    check_reads(&s, Timestamp::MAX, live).await;
}

#[tokio::test]
async fn ttl_is_checked_at_creation() {
    let s = Store::open("memory://").unwrap();
    for (schema, ttl, why) in [
        (schema(), "Interval(\"P1D\") ON missing", "no column"),
        (schema(), "Interval(\"P1M\") ON at", "months"),
        (
            TableSchema::parse("[{name=at;type=datetime};{name=v;type=string}]").unwrap(),
            "Interval(\"P1D\") ON at",
            "sorted tables",
        ),
    ] {
        let options = TableOptions {
            ttl: Some(ttl.into()),
            ..TableOptions::default()
        };
        let e = s.create_table("//t", schema, options).await.unwrap_err();
        assert!(e.to_string().contains(why), "{e}");
    }
    assert!(s.tables().await.unwrap().is_empty());
}
