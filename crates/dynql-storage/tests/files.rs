//! Parquet files as tables: schema and key from the files (or given), glob locations, scans
//! of key ranges that skip row groups by statistics and match brute-force filtering, and
//! clear errors for unsorted or mismatched files.

use std::path::Path;
use std::sync::Arc;

use arrow::array::{ArrayRef, Date32Array, Float64Array, Int32Array, Int64Array, StringArray};
use arrow::datatypes::{DataType, Field, Schema};
use arrow::record_batch::RecordBatch;
use dynql_core::{LogicalType, Value, ValueType};
use dynql_storage::files::FileTable;
use dynql_storage::{KeyBound, KeyRange};
use parquet::arrow::ArrowWriter;
use parquet::file::metadata::SortingColumn;
use parquet::file::properties::WriterProperties;
use proptest::prelude::*;

/// Writes rows `(h, id, name, score, day)` for `ids` with row groups of `group_rows`,
/// declaring the sort order `(h, id)` when `sorted`.
fn write(path: &Path, ids: &[i64], group_rows: usize, sorted: bool) {
    let schema = Arc::new(Schema::new(vec![
        Field::new("name", DataType::Utf8, true),
        Field::new("h", DataType::Int32, false),
        Field::new("id", DataType::Int64, false),
        Field::new("score", DataType::Float64, true),
        Field::new("day", DataType::Date32, true),
    ]));
    let columns: Vec<ArrayRef> = vec![
        Arc::new(StringArray::from_iter_values(
            ids.iter().map(|i| format!("n{i}")),
        )),
        Arc::new(Int32Array::from_iter_values(
            ids.iter().map(|i| (i / 100) as i32),
        )),
        Arc::new(Int64Array::from_iter_values(ids.iter().copied())),
        Arc::new(Float64Array::from_iter(
            ids.iter().map(|i| (i % 5 != 0).then_some(*i as f64 / 2.0)),
        )),
        Arc::new(Date32Array::from_iter_values(
            ids.iter().map(|i| (*i % 30) as i32),
        )),
    ];
    let batch = RecordBatch::try_new(schema.clone(), columns).unwrap();
    // Small pages, so that the page index has something to narrow.
    let mut props = WriterProperties::builder()
        .set_max_row_group_row_count(Some(group_rows))
        .set_data_page_row_count_limit(64)
        .set_write_batch_size(64);
    if sorted {
        props = props.set_sorting_columns(Some(vec![
            SortingColumn {
                column_idx: 1,
                descending: false,
                nulls_first: true,
            },
            SortingColumn {
                column_idx: 2,
                descending: false,
                nulls_first: true,
            },
        ]));
    }
    let file = std::fs::File::create(path).unwrap();
    let mut w = ArrowWriter::try_new(file, schema, Some(props.build())).unwrap();
    w.write(&batch).unwrap();
    w.close().unwrap();
}

/// Three sorted files of 1000 ids each, row groups of 100 rows.
fn exports(dir: &Path) {
    std::fs::create_dir_all(dir.join("exports")).unwrap();
    for f in 0..3 {
        let ids: Vec<i64> = (f * 1000..(f + 1) * 1000).collect();
        write(
            &dir.join(format!("exports/part-{f:05}.parquet")),
            &ids,
            100,
            true,
        );
    }
    std::fs::write(dir.join("exports/README.txt"), "not parquet").unwrap();
}

fn point(h: i64, id: i64) -> KeyRange {
    let key = vec![Value::Int64(h), Value::Int64(id)];
    KeyRange {
        lower: KeyBound::new(key.clone(), false),
        upper: KeyBound::new(key, true),
    }
}

#[tokio::test]
async fn a_declared_sort_order_is_the_key_and_points_read_one_row_group() {
    let dir = tempfile::tempdir().unwrap();
    exports(dir.path());
    let location = format!("{}/exports/*.parquet", dir.path().display());
    let t = FileTable::open(&location, None).await.unwrap();
    assert_eq!(t.file_count(), 3);
    assert_eq!(t.row_count(), 3000);
    let names: Vec<&str> = t
        .schema()
        .columns()
        .iter()
        .map(|c| c.name.as_str())
        .collect();
    assert_eq!(names, ["h", "id", "name", "score", "day"]);
    assert_eq!(t.schema().key_column_count(), 2);
    // Dates are YT dates: days since the epoch.
    assert_eq!(t.schema().columns()[4].logical_type, LogicalType::Date);
    assert_eq!(t.schema().columns()[4].wire_type(), ValueType::Uint64);
    let (rows, stats) = t.scan_rows(Some(&[point(12, 1234)])).await.unwrap();
    assert_eq!(
        rows,
        vec![vec![
            Value::Int64(12),
            Value::Int64(1234),
            Value::String(b"n1234".to_vec()),
            Value::Double(617.0),
            Value::Uint64(4),
        ]]
    );
    assert_eq!(stats.chunks, (1, 3));
    assert_eq!(stats.row_groups, (1, 30));
    // A directory means its Parquet files.
    let t = FileTable::open(&format!("file://{}/exports", dir.path().display()), None)
        .await
        .unwrap();
    assert_eq!(t.row_count(), 3000);
}

#[tokio::test]
async fn a_given_key_orders_columns_and_unsorted_files_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(dir.path().join("u")).unwrap();
    // Sorted by id but not declared: the key is given.
    write(
        &dir.path().join("u/a.parquet"),
        &(0..500).collect::<Vec<_>>(),
        64,
        false,
    );
    let location = format!("{}/u/a.parquet", dir.path().display());
    let t = FileTable::open(&location, None).await.unwrap();
    assert_eq!(t.schema().key_column_count(), 0);
    let key = vec!["id".to_string()];
    let t = FileTable::open(&location, Some(&key)).await.unwrap();
    assert_eq!(t.schema().columns()[0].name, "id");
    let range = KeyRange {
        lower: KeyBound::new(vec![Value::Int64(100)], false),
        upper: KeyBound::new(vec![Value::Int64(130)], false),
    };
    let (rows, stats) = t.scan_rows(Some(&[range])).await.unwrap();
    assert_eq!(rows.len(), 30);
    assert_eq!(stats.row_groups, (2, 8));
    // Row groups out of order: refused at open.
    let mut shuffled: Vec<i64> = (250..500).collect();
    shuffled.extend(0..250);
    write(&dir.path().join("u/b.parquet"), &shuffled, 64, false);
    let location = format!("{}/u/b.parquet", dir.path().display());
    let e = FileTable::open(&location, Some(&key)).await.unwrap_err();
    assert!(e.to_string().contains("not sorted by the key (id)"), "{e}");
    // Out of order inside one row group: refused when read.
    let mut swapped: Vec<i64> = (0..100).collect();
    swapped.swap(10, 20);
    write(&dir.path().join("u/c.parquet"), &swapped, 1000, false);
    let location = format!("{}/u/c.parquet", dir.path().display());
    let t = FileTable::open(&location, Some(&key)).await.unwrap();
    let e = t.scan_rows(None).await.unwrap_err();
    assert!(e.to_string().contains("key [11] follows [20]"), "{e}");
    // Unknown key column.
    let e = FileTable::open(&location, Some(&["nope".to_string()]))
        .await
        .unwrap_err();
    assert!(e.to_string().contains("\"nope\" is not a column"), "{e}");
}

#[tokio::test]
async fn bad_locations_and_mismatched_files_are_clear_errors() {
    let dir = tempfile::tempdir().unwrap();
    let e = FileTable::open(&format!("{}/none/*.parquet", dir.path().display()), None)
        .await
        .unwrap_err();
    assert!(e.to_string().contains("No Parquet files match"), "{e}");
    std::fs::create_dir_all(dir.path().join("m")).unwrap();
    write(&dir.path().join("m/a.parquet"), &[1, 2], 10, true);
    let other = Arc::new(Schema::new(vec![Field::new("x", DataType::Int64, true)]));
    let batch = RecordBatch::try_new(
        other.clone(),
        vec![Arc::new(Int64Array::from(vec![1])) as ArrayRef],
    )
    .unwrap();
    let mut w = ArrowWriter::try_new(
        std::fs::File::create(dir.path().join("m/b.parquet")).unwrap(),
        other,
        None,
    )
    .unwrap();
    w.write(&batch).unwrap();
    w.close().unwrap();
    let e = FileTable::open(&format!("{}/m/*.parquet", dir.path().display()), None)
        .await
        .unwrap_err();
    assert!(e.to_string().contains("have different schemas"), "{e}");
    std::fs::write(dir.path().join("m/c.parquet"), b"garbage").unwrap();
    let e = FileTable::open(&format!("{}/m/c.parquet", dir.path().display()), None)
        .await
        .unwrap_err();
    let shown = format!("{}/m/c.parquet is not a Parquet file", dir.path().display());
    assert!(e.to_string().contains(&shown), "{e}");
    assert!(!e.to_string().contains("Corrupt"), "{e}");
    // A relative location is shown as the absolute path it names, leading `/` and all
    // (issue 73, item 9).
    let cwd = std::env::current_dir().unwrap();
    let relative = pathdiff(&dir.path().join("m/c.parquet"), &cwd);
    let e = FileTable::open(&relative, None).await.unwrap_err();
    let absolute = std::fs::canonicalize(dir.path().join("m/c.parquet")).unwrap();
    let shown = format!("{} is not a Parquet file", absolute.display());
    assert!(e.to_string().starts_with(&shown), "{e}");
}

/// `path` relative to `base` (both absolute), through `..` where needed.
fn pathdiff(path: &std::path::Path, base: &std::path::Path) -> String {
    let (path, base) = (
        std::fs::canonicalize(path).unwrap(),
        std::fs::canonicalize(base).unwrap(),
    );
    let common = path
        .components()
        .zip(base.components())
        .take_while(|(a, b)| a == b)
        .count();
    let mut out = std::path::PathBuf::new();
    for _ in base.components().skip(common) {
        out.push("..");
    }
    for c in path.components().skip(common) {
        out.push(c);
    }
    out.display().to_string()
}

fn bound() -> impl Strategy<Value = KeyBound> {
    (proptest::collection::vec(-5i64..35, 0..3), any::<bool>()).prop_map(|(prefix, after)| {
        let mut values = Vec::new();
        for (i, v) in prefix.into_iter().enumerate() {
            // (h, id): h in 0..30, id in 0..3000.
            values.push(Value::Int64(if i == 0 { v } else { v * 100 }));
        }
        KeyBound::new(values, after)
    })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(24))]
    /// Invariant: a scan of key ranges returns exactly the rows a filter over all rows keeps.
    #[test]
    fn scans_of_ranges_match_filtering(
        ranges in proptest::collection::vec((bound(), bound()), 1..4),
    ) {
        let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
        rt.block_on(async {
            let dir = tempfile::tempdir().unwrap();
            exports(dir.path());
            let location = format!("{}/exports/*.parquet", dir.path().display());
            let t = FileTable::open(&location, None).await.unwrap();
            let ranges: Vec<KeyRange> = ranges
                .into_iter()
                .map(|(lower, upper)| KeyRange { lower, upper })
                .collect();
            let (all, _) = t.scan_rows(None).await.unwrap();
            let want: Vec<Vec<Value>> = all
                .into_iter()
                .filter(|r| ranges.iter().any(|range| range.contains(&r[..2])))
                .collect();
            let (got, _) = t.scan_rows(Some(&ranges)).await.unwrap();
            prop_assert_eq!(got, want.clone());
            let (batches, _) = t.scan_batches(Some(&ranges), false).await.unwrap();
            let rows: usize = batches.iter().map(|b| b.num_rows()).sum();
            prop_assert_eq!(rows, want.len());
            Ok(())
        })?;
    }
}

#[tokio::test]
async fn a_point_in_a_large_row_group_reads_its_pages_only() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(dir.path().join("big")).unwrap();
    let ids: Vec<i64> = (0..3000).collect();
    write(&dir.path().join("big/a.parquet"), &ids, 10_000, true);
    let location = format!("{}/big/a.parquet", dir.path().display());
    let t = FileTable::open(&location, None).await.unwrap();
    let (rows, stats) = t.scan_rows(Some(&[point(21, 2109)])).await.unwrap();
    assert_eq!(rows.len(), 1);
    assert_eq!(rows[0][1], Value::Int64(2109));
    assert_eq!(stats.row_groups, (1, 1));
    assert!(stats.rows_decoded <= 2 * 64, "{stats:?}");
    // Two points far apart: two windows of one row group.
    let (rows, stats) = t
        .scan_rows(Some(&[point(1, 150), point(29, 2950)]))
        .await
        .unwrap();
    assert_eq!(rows.len(), 2);
    assert!(stats.rows_decoded <= 4 * 64, "{stats:?}");
}
