//! A filter on a column that is not the key skips the clean row groups of store chunks
//! whose statistics rule it out, and within a row group the pages whose page index does, in
//! YT QL and in SQL, and only where that cannot change the
//! result: newer versions of a row, nulls (the least value in YT), a NaN YT would fail on
//! and a WHERE that can fail are all still read.

use std::sync::Arc;

use dynql::arrow::array::{ArrayRef, Float64Array, Int64Array};
use dynql::arrow::datatypes::{DataType, Field, Schema};
use dynql::arrow::record_batch::RecordBatch;
use dynql::{Database, FileTables, SelectOptions, Timestamp, Value};
use serde_json::json;

/// Rows of the table: five row groups once flushed.
const ROWS: i64 = 70_000;

/// `//t (k int64 key, v int64, w double)` with `v = k` (rising, but not a key) and
/// `w = k / 2`, flushed into one chunk of clean row groups; `nulls` are keys whose `v` is
/// null, `nan` a key whose `w` is NaN.
async fn table(nulls: &[i64], nan: Option<i64>) -> Database {
    let db = Database::open("memory://").unwrap();
    db.create_table_from_text(
        "//t",
        "{dynamic=%true; schema=[{name=k;type=int64;sort_order=ascending};{name=v;type=int64};{name=w;type=double}]}",
    )
    .await
    .unwrap();
    let keys: Vec<i64> = (0..ROWS).collect();
    let v: Vec<Option<i64>> = keys
        .iter()
        .map(|k| (!nulls.contains(k)).then_some(*k))
        .collect();
    let w: Vec<f64> = keys
        .iter()
        .map(|&k| {
            if Some(k) == nan {
                f64::NAN
            } else {
                k as f64 / 2.0
            }
        })
        .collect();
    let schema = Arc::new(Schema::new(vec![
        Field::new("k", DataType::Int64, false),
        Field::new("v", DataType::Int64, true),
        Field::new("w", DataType::Float64, true),
    ]));
    let columns: Vec<ArrayRef> = vec![
        Arc::new(Int64Array::from(keys)),
        Arc::new(Int64Array::from(v)),
        Arc::new(Float64Array::from(w)),
    ];
    db.insert_batch("//t", &RecordBatch::try_new(schema, columns).unwrap())
        .await
        .unwrap();
    db.flush("//t").await.unwrap();
    db
}

fn keys(rows: &[Vec<Value>]) -> Vec<i64> {
    rows.iter()
        .map(|r| match r[0] {
            Value::Int64(k) => k,
            ref other => panic!("not a key: {other:?}"),
        })
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_filter_on_a_non_key_column_reads_one_row_group() {
    let db = table(&[], None).await;
    for query in [
        "k from [//t] where v between 30000 and 30010",
        "k from [//t] where v >= 30000 and v <= 30010",
        "k from [//t] where 30010 >= v and w >= 15000.0",
        "k from [//t] where v in (30000, 30001, 30002, 30003, 30004, 30005, 30006, 30007, 30008, 30009, 30010)",
    ] {
        let result = db.select_rows(query, &SelectOptions::default()).await.unwrap();
        assert_eq!(keys(&result.rows), (30_000..=30_010).collect::<Vec<_>>(), "{query}");
        assert_eq!(result.statistics.scan.row_groups, (1, 5), "{query}");
        // Within it, the page index of `v` leaves the pages that may hold the values.
        let decoded = result.statistics.scan.rows_decoded;
        assert!(decoded <= 2 * 1024, "{query}: {decoded} rows decoded");
    }
    // Nothing can pass: nothing is decoded.
    let result = db
        .select_rows("k from [//t] where v > 1000000", &SelectOptions::default())
        .await
        .unwrap();
    assert!(result.rows.is_empty());
    assert_eq!(result.statistics.scan.row_groups, (0, 5));
    // A grouped query skips too: only rows passing WHERE reach the groups.
    let result = db
        .select_rows(
            "sum(v) as s from [//t] where v < 100 group by 1",
            &SelectOptions::default(),
        )
        .await
        .unwrap();
    assert_eq!(result.rows, vec![vec![Value::Int64((0..100).sum())]]);
    assert_eq!(result.statistics.scan.row_groups, (1, 5));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn newer_versions_of_a_row_are_read_wherever_they_are() {
    let db = table(&[], None).await;
    // A row far from the filtered values gets a passing value, in the dynamic store and then
    // in a second chunk.
    db.insert_json_rows("//t", &[json!({"k": 65000, "v": 30005, "w": 1.0})])
        .await
        .unwrap();
    let query = "k from [//t] where v between 30000 and 30010";
    let expected: Vec<i64> = (30_000..=30_010).chain([65_000]).collect();
    let result = db
        .select_rows(query, &SelectOptions::default())
        .await
        .unwrap();
    assert_eq!(keys(&result.rows), expected);
    db.flush("//t").await.unwrap();
    let result = db
        .select_rows(query, &SelectOptions::default())
        .await
        .unwrap();
    assert_eq!(keys(&result.rows), expected);
    // And a row whose passing value is overwritten no longer passes.
    db.insert_json_rows("//t", &[json!({"k": 30003, "v": 1, "w": 1.0})])
        .await
        .unwrap();
    db.flush("//t").await.unwrap();
    let result = db
        .select_rows(query, &SelectOptions::default())
        .await
        .unwrap();
    let expected: Vec<i64> = (30_000..=30_010)
        .filter(|k| *k != 30_003)
        .chain([65_000])
        .collect();
    assert_eq!(keys(&result.rows), expected);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn nulls_are_the_least_value_in_yt_and_pass_less_than() {
    let db = table(&[60_000], None).await;
    let result = db
        .select_rows("k from [//t] where v < 3", &SelectOptions::default())
        .await
        .unwrap();
    assert_eq!(keys(&result.rows), vec![0, 1, 2, 60_000]);
    let result = db
        .select_rows("k from [//t] where v = 3", &SelectOptions::default())
        .await
        .unwrap();
    assert_eq!(keys(&result.rows), vec![3]);
    assert_eq!(result.statistics.scan.row_groups, (1, 5));
    let result = db
        .select_rows("k from [//t] where is_null(v)", &SelectOptions::default())
        .await
        .unwrap();
    assert_eq!(keys(&result.rows), vec![60_000]);
    assert_eq!(result.statistics.scan.row_groups, (1, 5));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_nan_in_a_row_group_the_filter_rules_out_still_fails_the_query() {
    let db = table(&[], Some(69_000)).await;
    // YT compares every row's `w`: the NaN fails the query.
    let error = db
        .select_rows("k from [//t] where w < 10.0", &SelectOptions::default())
        .await
        .unwrap_err();
    assert!(error.to_string().contains("NaN"), "{error}");
    // A filter that can fail on any row (a division, evaluated first) reads every row, as
    // YT does.
    let error = db
        .select_rows(
            "k from [//t] where 1 / (k - 69999) > -10 and v < 10",
            &SelectOptions::default(),
        )
        .await;
    let rows = error.map(|r| r.rows.len());
    assert!(
        rows.as_ref()
            .is_err_and(|e| e.to_string().to_lowercase().contains("division")),
        "{rows:?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sql_filters_on_a_store_table_skip_row_groups_too() {
    let db = table(&[], None).await;
    let result = db
        .sql(
            r#"SELECT count(*) AS n, sum(w) AS s FROM "//t" WHERE v BETWEEN 30000 AND 30010"#,
            &FileTables::default(),
            Timestamp::SYNC_LAST_COMMITTED,
        )
        .await
        .unwrap();
    let s: f64 = (30_000..=30_010).map(|k| k as f64 / 2.0).sum();
    assert_eq!(result.rows, vec![vec![Value::Int64(11), Value::Double(s)]]);
    assert_eq!(result.statistics.scan.row_groups, (1, 5));
    let decoded = result.statistics.scan.rows_decoded;
    assert!(decoded <= 2 * 1024, "{decoded} rows decoded");
}

/// A Parquet file of `ROWS` rows in row groups of 14,000: `k` and `v = k` (not a key: the
/// file declares none), `v` null at 60,000.
fn file(dir: &std::path::Path) -> String {
    let keys: Vec<i64> = (0..ROWS).collect();
    let v: Vec<Option<i64>> = keys.iter().map(|&k| (k != 60_000).then_some(k)).collect();
    let batch = RecordBatch::try_from_iter([
        ("k", Arc::new(Int64Array::from(keys)) as ArrayRef),
        ("v", Arc::new(Int64Array::from(v)) as ArrayRef),
    ])
    .unwrap();
    let path = dir.join("rows.parquet");
    let properties = parquet::file::properties::WriterProperties::builder()
        .set_max_row_group_row_count(Some(14_000))
        .set_data_page_row_count_limit(1_000)
        .set_write_batch_size(1_000)
        .build();
    let mut writer = parquet::arrow::ArrowWriter::try_new(
        std::fs::File::create(&path).unwrap(),
        batch.schema(),
        Some(properties),
    )
    .unwrap();
    writer.write(&batch).unwrap();
    writer.close().unwrap();
    path.display().to_string()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn select_rows_over_a_file_skips_row_groups_by_any_column() {
    let dir = tempfile::tempdir().unwrap();
    let path = file(dir.path());
    let db = Database::open("memory://").unwrap();
    let result = db
        .select_rows(
            &format!("k from [file:{path}] where v between 30000 and 30010"),
            &SelectOptions::default(),
        )
        .await
        .unwrap();
    assert_eq!(keys(&result.rows), (30_000..=30_010).collect::<Vec<_>>());
    assert_eq!(result.statistics.scan.row_groups, (1, 5));
    // Within it, only the pages of `v` that may hold the values are read.
    let decoded = result.statistics.scan.rows_decoded;
    assert!(decoded <= 2_000, "{decoded} rows decoded");
    // The null is the least value: it passes `v < 3`, in the row group that holds it.
    let result = db
        .select_rows(
            &format!("k from [file:{path}] where v < 3"),
            &SelectOptions::default(),
        )
        .await
        .unwrap();
    assert_eq!(keys(&result.rows), vec![0, 1, 2, 60_000]);
    assert_eq!(result.statistics.scan.row_groups, (2, 5));
    // An input row limit below the file's rows reads as YT does: every row counts.
    let limited = SelectOptions {
        input_row_limit: 20_000,
        ..SelectOptions::default()
    };
    let error = db
        .select_rows(&format!("k from [file:{path}] where v > 69990"), &limited)
        .await
        .unwrap_err();
    assert!(error.to_string().contains("input"), "{error}");
}
