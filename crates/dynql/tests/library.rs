//! The library API end to end: create, write, query, delete, errors.

use dynql::{Database, ErrorKind, SelectOptions, Value, Yson};
use serde_json::json;

async fn users() -> Database {
    let db = Database::open("memory://").unwrap();
    db.create_table_from_text(
        "//users",
        r#"{"dynamic": true, "schema": [
            {"name": "shard", "type": "uint64", "sort_order": "ascending", "expression": "farm_hash(id) % 4"},
            {"name": "id", "type": "int64", "sort_order": "ascending"},
            {"name": "name", "type": "string"},
            {"name": "age", "type": "int32"}]}"#,
    )
    .await
    .unwrap();
    let rows: Vec<_> = (0..20)
        .map(|i| json!({"id": i, "name": format!("u{i}"), "age": 20 + i % 3}))
        .collect();
    db.insert_json_rows("//users", &rows).await.unwrap();
    db
}

#[tokio::test]
async fn computed_keys_are_filled_and_queryable() {
    let db = users().await;
    let r = db
        .select_rows(
            "shard, id from [//users] where id = 42 or id = 7",
            &SelectOptions::default(),
        )
        .await
        .unwrap();
    // farm_hash(7) % 4, computed on write.
    let expected = dynql_core_hash(7) % 4;
    assert_eq!(r.rows, vec![vec![Value::Uint64(expected), Value::Int64(7)]]);
}

fn dynql_core_hash(k: i64) -> u64 {
    let hash = dynql::ql::functions::call_scalar(
        dynql::ql::functions::ScalarFunction::FarmHash,
        &[Value::Int64(k)],
        dynql::ValueType::Uint64,
    )
    .unwrap();
    match hash {
        Value::Uint64(h) => h,
        other => panic!("{other:?}"),
    }
}

#[tokio::test]
async fn upsert_overwrites_and_delete_removes() {
    let db = users().await;
    db.insert_rows(
        "//users",
        &[dynql::yson::parse(b"{id=3; name=\"three\"}").unwrap()],
    )
    .await
    .unwrap();
    db.delete_rows("//users", &[Yson::from_json(&json!({"id": 4}))])
        .await
        .unwrap();
    let r = db
        .select_rows(
            "id, name, age from [//users] where id between 3 and 4",
            &SelectOptions::default(),
        )
        .await
        .unwrap();
    // Overwrite mode: the unspecified column `age` became null.
    assert_eq!(
        r.rows,
        vec![vec![Value::Int64(3), Value::string("three"), Value::Null]]
    );
}

#[tokio::test]
async fn results_convert_to_arrow_and_json() {
    let db = users().await;
    let r = db
        .select_rows(
            "age, sum(1) as n from [//users] group by age order by age limit 10",
            &SelectOptions::default(),
        )
        .await
        .unwrap();
    let batch = r.to_record_batch().unwrap();
    assert_eq!(batch.num_rows(), 3);
    assert_eq!(batch.schema().field(0).name(), "age");
    assert_eq!(r.to_json_rows()[0], json!({"age": 20, "n": 7}));
}

#[tokio::test]
async fn errors_have_kinds_and_change_nothing() {
    let db = users().await;
    let e = db
        .select_rows("id from [//users] where", &SelectOptions::default())
        .await
        .unwrap_err();
    assert_eq!(e.kind(), ErrorKind::InvalidInput);
    assert!(e.query_span().is_some());
    let e = db
        .insert_json_rows(
            "//users",
            &[json!({"id": 100}), json!({"id": 101, "age": 1u64 << 40})],
        )
        .await
        .unwrap_err();
    assert!(e.to_string().contains("out of range for type int32"), "{e}");
    let options = SelectOptions {
        input_row_limit: 5,
        ..SelectOptions::default()
    };
    let e = db
        .select_rows("id from [//users]", &options)
        .await
        .unwrap_err();
    assert_eq!(e.kind(), ErrorKind::LimitExceeded);
    let r = db
        .select_rows(
            "sum(1) as n from [//users] group by 1",
            &SelectOptions::default(),
        )
        .await
        .unwrap();
    assert_eq!(r.rows, vec![vec![Value::Int64(20)]]);
    let e = db
        .create_table_from_text("//users", "{dynamic=%true; schema=[{name=a;type=int64}]}")
        .await
        .unwrap_err();
    assert!(e.to_string().contains("already exists"));
    assert_eq!(e.kind(), ErrorKind::AlreadyExists);
    // Any node, and a copy onto one, say the same kind.
    let options = dynql::CreateOptions::default();
    db.create("map_node", "//tmp/d", None, options.clone())
        .await
        .unwrap();
    let e = db
        .create("map_node", "//tmp/d", None, options)
        .await
        .unwrap_err();
    assert_eq!(e.kind(), ErrorKind::AlreadyExists, "{e}");
    let e = db
        .copy_node("//tmp/d", "//users", dynql::CopyOptions::default())
        .await
        .unwrap_err();
    assert_eq!(e.kind(), ErrorKind::AlreadyExists, "{e}");
    // What dynql does not do says so, and a table in the wrong state says which.
    db.create_table_from_text("//queue", "{dynamic=%true; schema=[{name=a;type=int64}]}")
        .await
        .unwrap();
    let key = dynql::yson::parse(b"{a=1}").unwrap();
    let e = db.delete_rows("//queue", &[key]).await.unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Unsupported, "{e}");
    db.set_tablet_state("//users", dynql::TabletCommand::Freeze)
        .await
        .unwrap();
    let e = db
        .insert_json_rows("//users", &[json!({"id": 100})])
        .await
        .unwrap_err();
    assert_eq!(e.kind(), ErrorKind::InvalidInput, "{e}");
    assert!(
        matches!(&e, dynql::Error::Storage(dynql_storage::Error::WrongState { state, .. }) if state == "frozen"),
        "{e:?}"
    );
}

#[tokio::test]
async fn read_timestamps_above_the_largest_are_refused() {
    let db = users().await;
    for bad in [(1u64 << 62) - 1, 1 << 62, u64::MAX] {
        let options = SelectOptions {
            timestamp: dynql::Timestamp(bad),
            ..SelectOptions::default()
        };
        let e = db
            .select_rows("id from [//users]", &options)
            .await
            .unwrap_err();
        assert_eq!(e.kind(), ErrorKind::InvalidInput, "{e}");
        assert!(e.to_string().contains("Invalid read timestamp"), "{e}");
        let e = db
            .table_provider_at("//users", dynql::Timestamp(bad))
            .await
            .err()
            .expect("refused");
        assert!(e.to_string().contains("Invalid read timestamp"), "{e}");
    }
}

#[tokio::test]
async fn a_hundred_thousand_copies_of_a_key_column_take_linear_time() {
    let db = users().await;
    // Each copy of the sorted `id` was another ordering DataFusion related to every other
    // one: 10k took 1.4 s, 90k 148 s.
    let started = std::time::Instant::now();
    let n = 100_000;
    let list: Vec<String> = (0..n).map(|i| format!("id as c{i}")).collect();
    for filter in ["", " where age > 20"] {
        let query = format!("{}, name from [//users]{filter}", list.join(", "));
        let r = db
            .select_rows(&query, &SelectOptions::default())
            .await
            .unwrap();
        assert_eq!(r.columns.len(), n + 1);
        assert!(!r.rows.is_empty());
        for row in &r.rows {
            assert!(row[..n].iter().all(|v| v == &row[0]), "{:?}", &row[..3]);
            assert!(matches!(row[n], Value::String(_)), "{:?}", row[n]);
        }
    }
    assert!(
        started.elapsed() < std::time::Duration::from_secs(60),
        "took {:?}",
        started.elapsed()
    );
}

#[tokio::test]
async fn flush_and_compaction_never_change_query_results() {
    let db = users().await;
    let query =
        "age, sum(1) as n, max(name) as m from [//users] group by age order by age limit 10";
    let opts = SelectOptions::default();
    let before = db.select_rows(query, &opts).await.unwrap().rows;
    assert!(db.flush("//users").await.unwrap());
    // Newer writes land in the dynamic store, on top of the flushed chunk.
    let rows: Vec<_> = (0..5)
        .map(|i| json!({"id": i, "name": format!("u{i}"), "age": 20 + i % 3}))
        .collect();
    db.insert_json_rows("//users", &rows).await.unwrap();
    assert_eq!(db.select_rows(query, &opts).await.unwrap().rows, before);
    assert!(db.flush("//users").await.unwrap());
    assert!(!db.flush("//users").await.unwrap(), "nothing left to flush");
    db.compact("//users").await.unwrap();
    assert_eq!(db.select_rows(query, &opts).await.unwrap().rows, before);
}

#[tokio::test]
async fn limit_in_key_order_stops_the_scan_early() {
    let db = Database::open("memory://").unwrap();
    db.create_table_from_text(
        "//t",
        "{dynamic=%true; schema=[{name=k; type=int64; sort_order=ascending}; {name=v; type=int64}]}",
    )
    .await
    .unwrap();
    let rows: Vec<_> = (0..100_000).map(|i| json!({"k": i, "v": i % 7})).collect();
    db.insert_json_rows("//t", &rows).await.unwrap();
    assert!(
        !db.flush("//t").await.unwrap(),
        "a large insert lands as chunks, nothing in memory to flush"
    );
    let opts = SelectOptions::default();
    let r = db
        .select_rows("k from [//t] where v = 3 order by k limit 3", &opts)
        .await
        .unwrap();
    assert_eq!(
        r.rows,
        vec![
            vec![Value::Int64(3)],
            vec![Value::Int64(10)],
            vec![Value::Int64(17)]
        ]
    );
    // The rows come a batch (here a row group of 16384) at a time; the scan decodes at most
    // three row groups ahead of the one the LIMIT is satisfied in (its channel holds two).
    assert_eq!(r.statistics.rows_read, 16384);
    let (read, groups) = r.statistics.scan.row_groups;
    assert_eq!(groups, 7);
    assert!(read <= 4, "{:?}", r.statistics);
    // OFFSET counts too; without ORDER BY, LIMIT takes rows in key order.
    let r = db
        .select_rows("k, v from [//t] where k >= 20000 offset 2 limit 2", &opts)
        .await
        .unwrap();
    assert_eq!(
        r.rows,
        vec![
            vec![Value::Int64(20002), Value::Int64(20002 % 7)],
            vec![Value::Int64(20003), Value::Int64(20003 % 7)]
        ]
    );
    assert!(r.statistics.rows_read <= 16384, "{:?}", r.statistics);
    // The input row limit still applies to what is read.
    let strict = SelectOptions {
        input_row_limit: 5,
        ..SelectOptions::default()
    };
    let err = db
        .select_rows("k from [//t] where v = 6 limit 3", &strict)
        .await
        .unwrap_err();
    assert!(err.to_string().contains("excessive input"), "{err}");
}

#[tokio::test]
async fn row_limits_as_large_as_a_u64_mean_no_limit() {
    let db = Database::open("memory://").unwrap();
    db.create_table_from_text(
        "//t",
        "{dynamic=%true; schema=[{name=k; type=int64; sort_order=ascending}; {name=v; type=int64}]}",
    )
    .await
    .unwrap();
    let rows: Vec<_> = (0..10).map(|i| json!({"k": i, "v": i})).collect();
    db.insert_json_rows("//t", &rows).await.unwrap();
    let unlimited = SelectOptions {
        input_row_limit: u64::MAX,
        output_row_limit: u64::MAX,
        ..SelectOptions::default()
    };
    for (query, expected) in [
        ("k from [//t]", 10),
        ("k from [//t] where v > 2 order by k limit 100", 7),
        ("k from [//t] order by v desc limit 100", 10),
        ("k from [//t] offset 3 limit 100", 7),
        ("v, sum(k) as s from [//t] group by v", 10),
    ] {
        let r = db.select_rows(query, &unlimited).await.unwrap();
        assert_eq!(r.rows.len(), expected, "{query}");
    }
}

/// YT drops the rows of groups past the output row limit before it evaluates their
/// aggregates' arguments, so an error in such a row does not fail the query.
#[tokio::test]
async fn an_error_in_a_group_past_the_output_row_limit_is_never_raised() {
    let db = Database::open("memory://").unwrap();
    db.create_table_from_text(
        "//t",
        "{dynamic=%true; schema=[{name=k; type=int64; sort_order=ascending}; {name=g; type=string}]}",
    )
    .await
    .unwrap();
    let rows = [json!({"k": 0, "g": null}), json!({"k": 24, "g": "g0"})];
    db.insert_json_rows("//t", &rows).await.unwrap();
    db.flush("//t").await.unwrap();
    let query = "g, sum(k / (length(g) % 0)) as s, sum(1) as n from [//t] group by g";
    let cut = SelectOptions {
        output_row_limit: 1,
        fail_on_incomplete_result: false,
        ..SelectOptions::default()
    };
    let r = db.select_rows(query, &cut).await.unwrap();
    assert_eq!(
        r.rows,
        vec![vec![Value::Null, Value::Null, Value::Int64(1)]]
    );
    assert!(r.statistics.incomplete_output);
    // Failing on an incomplete result, the limit is met first.
    let fail = SelectOptions {
        output_row_limit: 1,
        ..SelectOptions::default()
    };
    let err = db.select_rows(query, &fail).await.unwrap_err();
    assert!(err.to_string().contains("output"), "{err}");
    // Without the limit the second group is evaluated, and fails.
    let err = db
        .select_rows(query, &SelectOptions::default())
        .await
        .unwrap_err();
    assert!(err.to_string().contains("Division by zero"), "{err}");
}

#[tokio::test]
async fn a_large_insert_lands_as_sorted_chunks_and_the_last_row_of_a_key_wins() {
    let dir = tempfile::tempdir().unwrap();
    let url = format!("file://{}", dir.path().display());
    let db = Database::open(&url).unwrap();
    db.create_table_from_text(
        "//t",
        "{dynamic=%true; pivot_keys=[[];[10000]]; schema=[{name=k; type=int64; sort_order=ascending}; {name=v; type=int64}; {name=s; type=string}]}",
    )
    .await
    .unwrap();
    // Keys in descending order, then key 7 again: the later row wins, as in YT.
    let mut rows: Vec<_> = (0..20_000)
        .rev()
        .map(|i| json!({"k": i, "v": i, "s": "first"}))
        .collect();
    rows.push(json!({"k": 7, "v": -7}));
    db.insert_json_rows("//t", &rows).await.unwrap();
    assert!(
        !db.flush("//t").await.unwrap(),
        "a large insert is a bulk write: nothing stays in memory to flush"
    );
    // Update mode and aggregation keep the dynamic store's path (they read older values).
    let updates: Vec<Yson> = (0..20_000i64)
        .filter(|k| k % 1000 == 0)
        .map(|k| {
            Yson::Map(vec![
                (b"k".to_vec(), Yson::Int64(k)),
                (b"s".to_vec(), Yson::String(b"updated".to_vec())),
            ])
        })
        .collect();
    db.insert_rows_with(
        "//t",
        &updates,
        dynql::WriteOptions {
            update: true,
            aggregate: false,
        },
    )
    .await
    .unwrap();
    let reopened = Database::open(&url).unwrap();
    for db in [&db, &reopened] {
        let opts = SelectOptions::default();
        let r = db
            .select_rows("k, v, s from [//t] where k in (0, 7, 8, 12000)", &opts)
            .await
            .unwrap();
        assert_eq!(
            r.rows,
            vec![
                vec![Value::Int64(0), Value::Int64(0), Value::string("updated")],
                vec![Value::Int64(7), Value::Int64(-7), Value::Null],
                vec![Value::Int64(8), Value::Int64(8), Value::string("first")],
                vec![
                    Value::Int64(12000),
                    Value::Int64(12000),
                    Value::string("updated")
                ],
            ]
        );
        let count = db
            .select_rows("sum(1) as n from [//t] group by 1", &opts)
            .await
            .unwrap();
        assert_eq!(count.rows, vec![vec![Value::Int64(20_000)]]);
    }
}

/// Layers of large overwrites (clean chunks whose keys overlap) read column by column give
/// the newest row of each key, as the compacted table does; a read at an older timestamp and
/// one after a delete (which take the row merge) too.
#[tokio::test]
async fn overlapping_layers_of_overwrites_read_as_after_compaction() {
    use std::collections::BTreeMap;
    let db = Database::open("memory://").unwrap();
    db.create_table_from_text(
        "//t",
        // The layers stay layers: no compaction policy.
        "{dynamic=%true; pivot_keys=[[];[15000]]; mount_config={enable_compaction_and_partitioning=%false}; schema=[{name=k; type=int64; sort_order=ascending}; {name=v; type=int64}; {name=s; type=string}]}",
    )
    .await
    .unwrap();
    let row = |k: i64, v: i64, s: &str| vec![Value::Int64(k), Value::Int64(v), Value::string(s)];
    let mut model: BTreeMap<i64, Vec<Value>> = BTreeMap::new();
    let mut snapshots = Vec::new();
    for layer in 0..4i64 {
        // Each layer rewrites a shifted window of keys, but every third key of it.
        let keys: Vec<i64> = (layer * 3000..layer * 3000 + 36_000)
            .filter(|k| (k + layer) % 3 != 0)
            .collect();
        let rows: Vec<Yson> = keys
            .iter()
            .map(|&k| {
                let s = format!("s{}", (k * 7 + layer) % 5);
                model.insert(k, row(k, layer, &s));
                Yson::from_json(&json!({"k": k, "v": layer, "s": s}))
            })
            .collect();
        let t = db
            .insert_rows_with("//t", &rows, dynql::WriteOptions::default())
            .await
            .unwrap();
        snapshots.push((t, model.values().cloned().collect::<Vec<_>>()));
    }
    let opts = SelectOptions::default();
    let all = db.select_rows("k, v, s from [//t]", &opts).await.unwrap();
    assert_eq!(all.rows, snapshots[3].1);
    assert!(all.statistics.scan.row_groups.0 > 2);
    let at_layer_1 = SelectOptions {
        timestamp: snapshots[1].0,
        ..SelectOptions::default()
    };
    let then = db
        .select_rows("k, v, s from [//t]", &at_layer_1)
        .await
        .unwrap();
    assert_eq!(then.rows, snapshots[1].1);
    let queries = [
        "s, sum(v) as n, max(k) as m from [//t] group by s",
        "k, v from [//t] where k between 10000 and 20000 and v > 1",
        "k, s from [//t] where s = 's3' order by k limit 7",
    ];
    let mut layered = Vec::new();
    for q in queries {
        layered.push(db.select_rows(q, &opts).await.unwrap().rows);
    }
    db.compact("//t").await.unwrap();
    for (q, before) in queries.iter().zip(&layered) {
        assert_eq!(&db.select_rows(q, &opts).await.unwrap().rows, before, "{q}");
    }
    // A delete over the compacted layer: that piece takes the row merge.
    db.delete_rows("//t", &[Yson::from_json(&json!({"k": 12345}))])
        .await
        .unwrap();
    db.insert_json_rows(
        "//t",
        &(0..12_000)
            .map(|k| json!({"k": k * 4, "v": 9, "s": "new"}))
            .collect::<Vec<_>>(),
    )
    .await
    .unwrap();
    model.remove(&12345);
    for k in 0..12_000 {
        model.insert(k * 4, row(k * 4, 9, "new"));
    }
    let now = db.select_rows("k, v, s from [//t]", &opts).await.unwrap();
    assert_eq!(now.rows, model.into_values().collect::<Vec<_>>());
}

#[tokio::test]
async fn a_long_lived_database_compacts_flushed_layers_on_its_own() {
    let db = Database::open("memory://").unwrap();
    db.create_table_from_text(
        "//t",
        "{dynamic=%true; schema=[{name=k; type=int64; sort_order=ascending}; {name=v; type=int64}]}",
    )
    .await
    .unwrap();
    let chunk_count = || async {
        match db.get_attribute("//t", Some("chunk_count")).await.unwrap() {
            Yson::Int64(n) => n,
            other => panic!("chunk_count {other:?}"),
        }
    };
    let layer = |layer: i64| {
        let rows: Vec<_> = (0..100)
            .map(|k| json!({"k": k * 3 + layer % 3, "v": layer}))
            .collect();
        let db = &db;
        async move {
            db.insert_json_rows("//t", &rows).await.unwrap();
            assert!(db.flush("//t").await.unwrap());
        }
    };
    let opts = SelectOptions::default();
    let query = "k, v from [//t]";
    for l in 0..2 {
        layer(l).await;
    }
    assert_eq!(chunk_count().await, 2);
    // The third flush of a similar size fills a tier (YT's min_compaction_store_count): the
    // three merge, with no `compact`.
    layer(2).await;
    assert_eq!(chunk_count().await, 1);
    let before = db.select_rows(query, &opts).await.unwrap().rows;
    layer(3).await;
    assert_eq!(chunk_count().await, 2);
    // Keys 3k read layer 3 (it rewrote layer 0's keys), 3k+1 layer 1, 3k+2 layer 2.
    let expected: Vec<Vec<Value>> = (0..300)
        .map(|k| {
            let v = if k % 3 == 0 { 3 } else { k % 3 };
            vec![Value::Int64(k), Value::Int64(v)]
        })
        .collect();
    assert_eq!(db.select_rows(query, &opts).await.unwrap().rows, expected);
    assert_ne!(before, expected);
    // Off, as in YT: layers stay until `compact`.
    db.set_attribute(
        "//t",
        "mount_config/enable_compaction_and_partitioning",
        &Yson::Boolean(false),
    )
    .await
    .unwrap();
    for l in 4..9 {
        layer(l).await;
    }
    assert_eq!(chunk_count().await, 7);
    let err = db
        .set_attribute(
            "//t",
            "mount_config/enable_compaction_and_partitioning",
            &Yson::Int64(1),
        )
        .await
        .unwrap_err();
    assert!(err.to_string().contains("%true or %false"), "{err}");
}

#[tokio::test]
async fn a_large_insert_goes_to_columns_and_a_bad_row_is_named_with_nothing_written() {
    let db = users().await;
    let n = 12_000i64;
    let row = |i: i64, age: i64| {
        let mut fields = vec![
            (b"id".to_vec(), Yson::Int64(i)),
            (b"age".to_vec(), Yson::Int64(age)),
        ];
        // Every third row leaves `name` out: it is written as null.
        if i % 3 != 0 {
            fields.insert(
                0,
                (b"name".to_vec(), Yson::String(format!("n{i}").into_bytes())),
            );
        }
        Yson::Map(fields)
    };
    // Keys in reverse order: the bulk write sorts them.
    let rows: Vec<Yson> = (0..n).rev().map(|i| row(i, i % 100)).collect();
    db.insert_rows("//users", &rows).await.unwrap();
    let count = db
        .select_rows(
            "sum(1) as c, sum(age) as a from [//users] group by 1",
            &SelectOptions::default(),
        )
        .await
        .unwrap();
    let ages: i64 = (0..n).map(|i| i % 100).sum();
    assert_eq!(count.rows, vec![vec![Value::Int64(n), Value::Int64(ages)]]);
    let some = db
        .select_rows(
            "shard, id, name, age from [//users] where id in (3, 4)",
            &SelectOptions::default(),
        )
        .await
        .unwrap();
    let mut some = some.rows;
    some.sort_by_key(|r| match r[1] {
        Value::Int64(id) => id,
        _ => i64::MAX,
    });
    assert_eq!(
        some,
        vec![
            vec![
                Value::Uint64(dynql_core_hash(3) % 4),
                Value::Int64(3),
                Value::Null,
                Value::Int64(3)
            ],
            vec![
                Value::Uint64(dynql_core_hash(4) % 4),
                Value::Int64(4),
                Value::string("n4"),
                Value::Int64(4)
            ],
        ]
    );

    // One value out of int32's range among many: the row path names the row, and none of the
    // write is visible.
    let mut bad: Vec<Yson> = (0..n).map(|i| row(i, 1)).collect();
    bad[11_000] = row(11_000, 1 << 40);
    let err = db.insert_rows("//users", &bad).await.unwrap_err();
    assert!(err.to_string().contains("Row #11000"), "{err}");
    let after = db
        .select_rows(
            "sum(age) as a from [//users] group by 1",
            &SelectOptions::default(),
        )
        .await
        .unwrap();
    assert_eq!(after.rows, vec![vec![Value::Int64(ages)]]);
}
