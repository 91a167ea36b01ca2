//! `ORDER BY … LIMIT` skips the clean row groups its top-k threshold rules out by their
//! statistics, and only where that cannot change the result: a NaN key, a failing WHERE or
//! the input row limit on a skipped row group still fail or cut the query as in YT.

use std::sync::Arc;

use dynql::arrow::array::{ArrayRef, Float64Array, Int64Array};
use dynql::arrow::datatypes::{DataType, Field, Schema};
use dynql::arrow::record_batch::RecordBatch;
use dynql::{Database, SelectOptions, Value};

/// Rows of the table: five row groups once flushed.
const ROWS: i64 = 70_000;

fn value(k: i64) -> f64 {
    ((k * 7919) % 1000) as f64 * 0.25
}

/// `//t (k int64 key, v double)` with `v = value(k)` but where `special` says otherwise,
/// flushed into one chunk of clean row groups.
async fn table(special: &[(i64, f64)]) -> Database {
    let db = Database::open("memory://").unwrap();
    db.create_table_from_text(
        "//t",
        "{dynamic=%true; schema=[{name=k;type=int64;sort_order=ascending};{name=v;type=double}]}",
    )
    .await
    .unwrap();
    let keys: Vec<i64> = (0..ROWS).collect();
    let values: Vec<f64> = keys
        .iter()
        .map(|&k| {
            special
                .iter()
                .find(|(s, _)| *s == k)
                .map_or(value(k), |(_, v)| *v)
        })
        .collect();
    let schema = Arc::new(Schema::new(vec![
        Field::new("k", DataType::Int64, false),
        Field::new("v", DataType::Float64, true),
    ]));
    let columns: Vec<ArrayRef> = vec![
        Arc::new(Int64Array::from(keys)),
        Arc::new(Float64Array::from(values)),
    ];
    let batch = RecordBatch::try_new(schema, columns).unwrap();
    db.insert_batch("//t", &batch).await.unwrap();
    db.flush("//t").await.unwrap();
    db
}

fn options() -> SelectOptions {
    SelectOptions::default()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_threshold_skips_row_groups_and_the_result_is_the_sorted_rows() {
    let db = table(&[]).await;
    for (query, descending) in [
        ("k, v from [//t] order by v, k limit 7", false),
        ("k, v from [//t] order by v desc, k limit 7", true),
    ] {
        let result = db.select_rows(query, &options()).await.unwrap();
        let mut expected: Vec<(i64, f64)> = (0..ROWS).map(|k| (k, value(k))).collect();
        expected.sort_by(|a, b| {
            let by_value = a.1.partial_cmp(&b.1).unwrap();
            let by_value = if descending {
                by_value.reverse()
            } else {
                by_value
            };
            by_value.then(a.0.cmp(&b.0))
        });
        let expected: Vec<Vec<Value>> = expected[..7]
            .iter()
            .map(|(k, v)| vec![Value::Int64(*k), Value::Double(*v)])
            .collect();
        assert_eq!(result.rows, expected, "{query}");
        let (read, planned) = result.statistics.scan.row_groups;
        assert_eq!(planned, 5);
        assert!(
            read < planned,
            "{query}: read {read} of {planned} row groups"
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_nan_key_in_a_row_group_the_threshold_would_skip_still_fails_the_query() {
    let db = table(&[(ROWS - 10, f64::NAN)]).await;
    let error = db
        .select_rows("k, v from [//t] order by v, k limit 3", &options())
        .await
        .unwrap_err();
    assert!(error.to_string().contains("NaN"), "{error}");
    // Where WHERE leaves the NaN out, the query runs (and may skip).
    let result = db
        .select_rows(
            "k, v from [//t] where k < 60000 order by v, k limit 3",
            &options(),
        )
        .await
        .unwrap();
    assert_eq!(result.rows.len(), 3);
    assert_eq!(result.rows[0], vec![Value::Int64(0), Value::Double(0.0)]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_where_that_fails_on_a_late_row_fails_the_query() {
    let db = table(&[]).await;
    let error = db
        .select_rows(
            "k, v from [//t] where 1 / (k - 69000) > -10 order by v, k limit 3",
            &options(),
        )
        .await
        .unwrap_err();
    assert!(
        error.to_string().to_lowercase().contains("division"),
        "{error}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn negative_zero_ties_with_zero_and_the_next_key_decides() {
    let db = table(&[(5, -0.0), (40_000, -0.0)]).await;
    let result = db
        .select_rows("k, v from [//t] order by v, k limit 3", &options())
        .await
        .unwrap();
    let keys: Vec<&Value> = result.rows.iter().map(|r| &r[0]).collect();
    assert_eq!(
        keys,
        [&Value::Int64(0), &Value::Int64(5), &Value::Int64(1000)]
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_input_row_limit_below_the_table_reads_as_yt_does() {
    let db = table(&[]).await;
    let query = "k, v from [//t] order by v, k limit 3";
    // YT reads every row: the limit is met, whatever a threshold could have skipped.
    let strict = SelectOptions {
        input_row_limit: 20_000,
        ..SelectOptions::default()
    };
    let error = db.select_rows(query, &strict).await.unwrap_err();
    assert!(error.to_string().contains("limit"), "{error}");
    let lenient = SelectOptions {
        fail_on_incomplete_result: false,
        ..strict
    };
    let result = db.select_rows(query, &lenient).await.unwrap();
    assert!(result.statistics.incomplete_input);
    assert_eq!(result.statistics.rows_read, 20_000);
}

/// An ORDER BY that only looks like the key (a constant before it) is sorted as YT sorts
/// it: every row up to the input row limit is read, so the limit is met (the result is
/// incomplete, or the query fails), though DataFusion could end a read in key order early.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_order_by_a_constant_then_the_key_still_meets_the_input_row_limit() {
    let db = table(&[]).await;
    let q = "k, 0 as z from [//t] order by z desc, k limit 7";
    let cut = SelectOptions {
        input_row_limit: 100,
        fail_on_incomplete_result: false,
        ..SelectOptions::default()
    };
    let r = db.select_rows(q, &cut).await.unwrap();
    let keys: Vec<Value> = r.rows.iter().map(|row| row[0].clone()).collect();
    assert_eq!(keys, (0..7).map(Value::Int64).collect::<Vec<_>>());
    assert!(r.statistics.incomplete_input, "{:?}", r.statistics);
    let fail = SelectOptions {
        input_row_limit: 100,
        ..SelectOptions::default()
    };
    let e = db.select_rows(q, &fail).await.unwrap_err();
    assert!(e.to_string().contains("excessive input"), "{e}");
    // Within the limit the read may end early: the rows are the same.
    let r = db.select_rows(q, &SelectOptions::default()).await.unwrap();
    assert_eq!(r.rows.len(), 7);
    assert!(!r.statistics.incomplete_input, "{:?}", r.statistics);
}
