//! Tablet scans as streams: a planned scan reads the state it was planned on (later commits
//! are not seen), yields every row once across its tablets, and stops when dropped early.

use dynql::Database;
use dynql_storage::Prefetch;
use futures::StreamExt;
use serde_json::json;

/// `//t (k int64 key, v string)` over tablets split at `pivot_keys`, holding `k` = 0..`rows`
/// (`v` = "v{k}"): the first `flushed` rows in chunks, the rest in the dynamic store.
async fn table(pivot_keys: &str, rows: i64, flushed: usize) -> Database {
    let db = Database::open("memory://").unwrap();
    db.create_table_from_text(
        "//t",
        &format!("{{dynamic=%true; pivot_keys={pivot_keys}; schema=[{{name=k; type=int64; sort_order=ascending}}; {{name=v; type=string}}]}}"),
    )
    .await
    .unwrap();
    let rows: Vec<_> = (0..rows)
        .map(|k| json!({"k": k, "v": format!("v{k}")}))
        .collect();
    db.insert_json_rows("//t", &rows[..flushed]).await.unwrap();
    db.flush("//t").await.unwrap();
    db.insert_json_rows("//t", &rows[flushed..]).await.unwrap();
    db
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_planned_scan_reads_its_pinned_state_and_stops_when_dropped() {
    let db = table("[[]; [100]; [200]]", 300, 150).await;
    let scan = db
        .store()
        .plan_table_scan("//t", None, dynql_storage::Timestamp::SYNC_LAST_COMMITTED)
        .await
        .unwrap();
    assert_eq!(scan.tablets(), &[0, 1, 2]);
    // A commit after planning is not seen by the scan.
    db.insert_json_rows("//t", &[json!({"k": 1000, "v": "late"})])
        .await
        .unwrap();
    let mut total = 0;
    for tablet in scan.tablets().to_vec() {
        let mut stream = scan
            .stream(vec![tablet], None, true, 7, Prefetch::Task)
            .unwrap();
        while let Some(batch) = stream.next().await {
            let batch = batch.unwrap();
            assert!(batch.num_rows() > 0);
            total += batch.num_rows();
        }
    }
    assert_eq!(total, 300);
    // Merged rows come `batch_rows` at a time (the flushed, clean rows of tablet 0 as their
    // row group's slice); a reader that stops after one batch lets the scan end.
    let mut stream = scan
        .stream(vec![2], None, false, 5, Prefetch::Task)
        .unwrap();
    assert_eq!(stream.next().await.unwrap().unwrap().num_rows(), 5);
    drop(stream);
}

/// A scan read inline (no task) gives the same batches as one read by a task, in order, and
/// its statistics once read; dropped early, its reading stops at the next batch and still
/// counts what it decoded. It runs on a current-thread runtime: nothing is spawned.
#[tokio::test(flavor = "current_thread")]
async fn an_inline_scan_reads_like_a_task_and_stops_when_dropped() {
    let db = table("[[]; [100]]", 200, 120).await;
    // Rewrites of flushed keys: resolved row by row.
    db.insert_json_rows(
        "//t",
        &[json!({"k": 5, "v": "new"}), json!({"k": 110, "v": "new"})],
    )
    .await
    .unwrap();
    let scan = db
        .store()
        .plan_table_scan("//t", None, dynql_storage::Timestamp::SYNC_LAST_COMMITTED)
        .await
        .unwrap();
    let collect = |prefetch| {
        let scan = scan.clone();
        async move {
            let mut stream = scan
                .stream(scan.tablets().to_vec(), None, false, 7, prefetch)
                .unwrap();
            let read = stream.read();
            let mut batches = Vec::new();
            while let Some(batch) = stream.next().await {
                batches.push(batch.unwrap());
            }
            (batches, read.finished().await.unwrap())
        }
    };
    let (task, task_read) = collect(Prefetch::Task).await;
    let (inline, inline_read) = collect(Prefetch::Inline).await;
    assert_eq!(inline, task);
    assert_eq!(inline.iter().map(|b| b.num_rows()).sum::<usize>(), 200);
    assert_eq!(inline_read.rows_read, 200);
    assert_eq!(inline_read.rows_decoded, task_read.rows_decoded);

    let mut stream = scan
        .stream(scan.tablets().to_vec(), None, false, 7, Prefetch::Inline)
        .unwrap();
    let read = stream.read();
    assert!(stream.next().await.unwrap().is_ok());
    drop(stream);
    let early = read.finished().await.unwrap();
    assert!(early.rows_read < 200, "{early:?}");
    assert!(early.rows_read >= 1, "{early:?}");
}

/// A scan is small (read inline, in one partition) only for a sorted table with few row
/// groups and few unflushed keys; an ordered table's scan never is.
#[tokio::test(flavor = "current_thread")]
async fn only_small_scans_of_sorted_tables_are_small() {
    let db = table("[[]; [100]]", 200, 120).await;
    let plan = |db: Database, path: &'static str| async move {
        db.store()
            .plan_table_scan(path, None, dynql_storage::Timestamp::SYNC_LAST_COMMITTED)
            .await
            .unwrap()
    };
    assert!(plan(db.clone(), "//t").await.is_small());
    // Writes under 10,000 rows stay in the dynamic store (larger ones go to chunks).
    let rows: Vec<_> = (1000..73_000).map(|k| json!({"k": k, "v": ""})).collect();
    for part in rows.chunks(9_000) {
        db.insert_json_rows("//t", part).await.unwrap();
    }
    assert!(!plan(db.clone(), "//t").await.is_small());
    db.create_table_from_text("//q", "{dynamic=%true; schema=[{name=v; type=string}]}")
        .await
        .unwrap();
    assert!(!plan(db.clone(), "//q").await.is_small());
}

/// The batches of `stream`, as one.
async fn collected(mut stream: dynql_storage::ScanStream) -> arrow::record_batch::RecordBatch {
    let mut batches = Vec::new();
    while let Some(batch) = stream.next().await {
        batches.push(batch.unwrap());
    }
    let schema = batches[0].schema();
    arrow::compute::concat_batches(&schema, &batches).unwrap()
}

/// A stream of some columns gives those columns of the whole rows, in the order asked: from
/// clean row groups (decoded alone), from merged versions (a flushed key written again and
/// flushed), from the dynamic store, and over a key range that cuts row groups.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_projected_stream_gives_those_columns_of_the_whole_rows() {
    use dynql_core::Value;
    use dynql_storage::{KeyBound, KeyRange};
    let db = table("[[]; [100]; [200]]", 300, 250).await;
    let rewritten: Vec<_> = [5, 150].map(|k| json!({"k": k, "v": "again"})).into();
    db.insert_json_rows("//t", &rewritten).await.unwrap();
    db.flush("//t").await.unwrap();
    let cut = KeyRange {
        lower: KeyBound::new(vec![Value::Int64(10)], false),
        upper: KeyBound::new(vec![Value::Int64(120)], false),
    };
    for ranges in [None, Some(vec![cut])] {
        let scan = db
            .store()
            .plan_table_scan(
                "//t",
                ranges.as_deref(),
                dynql_storage::Timestamp::SYNC_LAST_COMMITTED,
            )
            .await
            .unwrap();
        for views in [false, true] {
            let whole = |columns| {
                scan.stream(scan.tablets().to_vec(), columns, views, 7, Prefetch::Task)
                    .unwrap()
            };
            let all = collected(whole(None)).await;
            for columns in [vec![1], vec![1, 0], vec![0, 0]] {
                let some = collected(whole(Some(columns.clone()))).await;
                assert_eq!(some.num_rows(), all.num_rows());
                assert_eq!(some.num_columns(), columns.len());
                for (i, &c) in columns.iter().enumerate() {
                    assert_eq!(
                        some.column(i).to_data(),
                        all.column(c).to_data(),
                        "{columns:?}"
                    );
                }
            }
            // No columns at all: the rows are still counted.
            let mut none = whole(Some(vec![]));
            let mut rows = 0;
            while let Some(batch) = none.next().await {
                let batch = batch.unwrap();
                assert_eq!(batch.num_columns(), 0);
                rows += batch.num_rows();
            }
            assert_eq!(rows, all.num_rows());
        }
    }
}

/// The one-key slices of clean row groups that an IN list reads come as one batch when the
/// scan gathers them, in key order, and only up to the rows asked for; without gathering,
/// one batch per key.
#[tokio::test(flavor = "current_thread")]
async fn small_slices_are_gathered_up_to_the_rows_asked_for() {
    use dynql::arrow::array::AsArray;
    use dynql::arrow::datatypes::Int64Type;
    use dynql_storage::{KeyBound, KeyRange};
    let db = table("[[]]", 3000, 3000).await;
    let points: Vec<KeyRange> = (0..20)
        .map(|i| {
            let key = vec![dynql::Value::Int64(i * 100)];
            KeyRange {
                lower: KeyBound::new(key.clone(), false),
                upper: KeyBound::new(key, true),
            }
        })
        .collect();
    let scan = db
        .store()
        .plan_table_scan(
            "//t",
            Some(&points),
            dynql_storage::Timestamp::SYNC_LAST_COMMITTED,
        )
        .await
        .unwrap();
    let sizes = |gathered: usize| {
        let scan = scan.clone().with_gathered_slices(gathered);
        async move {
            let mut stream = scan
                .stream(scan.tablets().to_vec(), None, true, 8192, Prefetch::Inline)
                .unwrap();
            let mut sizes = Vec::new();
            let mut keys = Vec::new();
            while let Some(batch) = stream.next().await {
                let batch = batch.unwrap();
                sizes.push(batch.num_rows());
                let k = batch.column(0).as_primitive::<Int64Type>();
                keys.extend(k.values().iter().copied());
            }
            (sizes, keys)
        }
    };
    let expected: Vec<i64> = (0..20).map(|i| i * 100).collect();
    let (one_each, keys) = sizes(1).await;
    assert_eq!(one_each, vec![1; 20]);
    assert_eq!(keys, expected);
    let (together, keys) = sizes(8192).await;
    assert_eq!(together, vec![20]);
    assert_eq!(keys, expected);
    let (by_seven, keys) = sizes(7).await;
    assert_eq!(by_seven, vec![7, 7, 6]);
    assert_eq!(keys, expected);
}

/// Layers of overwrites (flushed chunks over the same keys, all clean) read as their newest
/// versions: where a newer layer overwrites every key of an older one, part of it, or every
/// other key; and a key range that falls between their keys reads nothing.
#[tokio::test(flavor = "current_thread")]
async fn overlapping_clean_layers_read_their_newest_versions() {
    let db = Database::open("memory://").unwrap();
    db.create_table_from_text(
        "//t",
        "{dynamic=%true; mount_config={enable_compaction_and_partitioning=%false}; schema=[{name=k; type=int64; sort_order=ascending}; {name=x; type=int64}]}",
    )
    .await
    .unwrap();
    let mut model = std::collections::BTreeMap::new();
    let layers: [(i64, Vec<i64>); 4] = [
        (1, (0..2000).step_by(10).collect()),
        (2, (0..2000).step_by(10).collect()),
        (3, (0..1000).step_by(10).collect()),
        (4, (0..2000).step_by(20).collect()),
    ];
    for (layer, keys) in &layers {
        let rows: Vec<_> = keys.iter().map(|k| json!({"k": k, "x": layer})).collect();
        for k in keys {
            model.insert(*k, *layer);
        }
        db.insert_json_rows("//t", &rows).await.unwrap();
        db.flush("//t").await.unwrap();
    }
    let options = dynql::SelectOptions::default();
    let read = |query: String| {
        let db = &db;
        let options = &options;
        async move {
            let result = db.select_rows(&query, options).await.unwrap();
            result
                .rows
                .iter()
                .map(|row| match (&row[0], &row[1]) {
                    (dynql_core::Value::Int64(k), dynql_core::Value::Int64(x)) => (*k, *x),
                    other => panic!("unexpected row {other:?}"),
                })
                .collect::<Vec<_>>()
        }
    };
    let all = read("k, x from [//t]".into()).await;
    assert_eq!(all, model.iter().map(|(k, x)| (*k, *x)).collect::<Vec<_>>());
    let some = read("k, x from [//t] where k between 905 and 1234".into()).await;
    let expected: Vec<_> = model.range(905..=1234).map(|(k, x)| (*k, *x)).collect();
    assert_eq!(some, expected);
    assert!(read("k, x from [//t] where k between 41 and 49".into())
        .await
        .is_empty());
}

/// A planned scan weighs each tablet by the versions of its flushed row groups, and every
/// tablet at least 1: tablets whose rows are all in the dynamic store (which the plan does
/// not count) still weigh something, so sharing tablets out by weight spreads them.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tablets_weigh_their_flushed_versions_and_at_least_one() {
    // Rows 0..150 flushed (tablet 0 holds 0..100, tablet 1 holds 100..150 of them), the rest
    // in the dynamic store.
    let db = table("[[]; [100]; [200]]", 300, 150).await;
    let scan = db
        .store()
        .plan_table_scan("//t", None, dynql_storage::Timestamp::SYNC_LAST_COMMITTED)
        .await
        .unwrap();
    let weights = scan.tablet_weights();
    let tablets: Vec<usize> = weights.iter().map(|&(t, _)| t).collect();
    assert_eq!(tablets, vec![0, 1, 2]);
    let total: u64 = weights.iter().map(|&(_, w)| w).sum();
    assert_eq!(total, 150 + 3, "{weights:?}");
    assert!(weights.iter().all(|&(_, w)| w >= 1), "{weights:?}");
    assert_eq!(weights[2].1, 1, "{weights:?}");
    // Nothing flushed: every tablet weighs 1.
    let db = table("[[]; [100]; [200]]", 300, 0).await;
    let scan = db
        .store()
        .plan_table_scan("//t", None, dynql_storage::Timestamp::SYNC_LAST_COMMITTED)
        .await
        .unwrap();
    assert_eq!(scan.tablet_weights(), vec![(0, 1), (1, 1), (2, 1)]);
}
