//! Parquet dates and timestamps imported into YT's date types and integers, values a column
//! cannot hold rejected, and `columns` choosing and renaming the columns an import reads.

use std::sync::Arc;

use arrow::array::{
    ArrayRef, Date32Array, DurationMillisecondArray, Int64Array, ListArray,
    TimestampMillisecondArray, TimestampNanosecondArray, TimestampSecondArray,
};
use arrow::datatypes::Int32Type;
use arrow::record_batch::RecordBatch;
use dynql::io::ImportOptions;
use dynql::{Database, SelectOptions, Value, Yson};

use crate::files::{all_ids, any, null, opt, types_batch, write, ROWS, TS0};

const EVENTS: &str = "{dynamic=%true; schema=[{name=id;type=int64;sort_order=ascending};{name=day;type=date};{name=at;type=timestamp};{name=secs;type=datetime};{name=took;type=interval};{name=at_int;type=int64};{name=day_int;type=uint32};{name=tags;type=any}]}";

#[tokio::test]
async fn dates_and_timestamps_import_into_yt_date_types_and_integers() {
    let dir = tempfile::tempdir().unwrap();
    let db = Database::open("memory://").unwrap();
    db.create_table_from_text("//events", EVENTS).await.unwrap();
    let path = dir.path().join("events.parquet");
    let ids: Vec<i64> = (0..20).collect();
    let batch = RecordBatch::try_from_iter(vec![
        ("id", Arc::new(Int64Array::from(ids.clone())) as ArrayRef),
        (
            "day",
            Arc::new(Date32Array::from_iter(
                ids.iter().map(|&i| opt(i, 19_000 + i as i32)),
            )),
        ),
        (
            "at",
            Arc::new(
                TimestampNanosecondArray::from_iter(
                    ids.iter()
                        .map(|&i| opt(i, (TS0 + i) * 1_000_000_000 + 7_000)),
                )
                .with_timezone("UTC"),
            ),
        ),
        // Whole seconds into `datetime`.
        (
            "secs",
            Arc::new(TimestampMillisecondArray::from_iter(
                ids.iter().map(|&i| opt(i, (TS0 + i) * 1000)),
            )),
        ),
        (
            "took",
            Arc::new(DurationMillisecondArray::from_iter(
                ids.iter().map(|&i| opt(i, -i)),
            )),
        ),
        // Into integer columns: the values YT QL reads (microseconds, days).
        (
            "at_int",
            Arc::new(TimestampSecondArray::from_iter(
                ids.iter().map(|&i| opt(i, TS0 + i)),
            )),
        ),
        (
            "day_int",
            Arc::new(Date32Array::from_iter(
                ids.iter().map(|&i| opt(i, i as i32)),
            )),
        ),
        (
            "tags",
            Arc::new(ListArray::from_iter_primitive::<Int32Type, _, _>(
                ids.iter().map(|&i| opt(i, vec![Some(i as i32)])),
            )),
        ),
    ])
    .unwrap();
    write(&path, &batch, None);
    let report = db
        .import(
            "//events",
            &[path.display().to_string()],
            &ImportOptions::default(),
        )
        .await
        .unwrap();
    assert_eq!((report.rows_imported, report.rejected), (20, 0));
    let rows = db
        .select_rows("* from [//events]", &SelectOptions::default())
        .await
        .unwrap()
        .rows;
    for (i, row) in rows.iter().enumerate() {
        let i = i as i64;
        let or_null = |v: Value| if null(i) { Value::Null } else { v };
        assert_eq!(
            row,
            &vec![
                Value::Int64(i),
                or_null(Value::Uint64(19_000 + i as u64)),
                or_null(Value::Uint64(((TS0 + i) * 1_000_000 + 7) as u64)),
                or_null(Value::Uint64((TS0 + i) as u64)),
                or_null(Value::Int64(-i * 1000)),
                or_null(Value::Int64((TS0 + i) * 1_000_000)),
                or_null(Value::Uint64(i as u64)),
                or_null(any(Yson::List(vec![Yson::Int64(i)]))),
            ],
            "row {i}"
        );
    }
    // The same values as YT QL reads from the file itself.
    let from_file = db
        .select_rows(
            &format!("id, day, at, took, day_int from [file:{}]", path.display()),
            &SelectOptions::default(),
        )
        .await
        .unwrap()
        .rows;
    let imported = db
        .select_rows(
            "id, day, at, took, day_int from [//events]",
            &SelectOptions::default(),
        )
        .await
        .unwrap()
        .rows;
    assert_eq!(from_file, imported);
}

#[tokio::test]
async fn date_values_a_column_cannot_hold_are_rejected_per_row_and_wrong_types_once() {
    let dir = tempfile::tempdir().unwrap();
    let db = Database::open("memory://").unwrap();
    db.create_table_from_text("//events", EVENTS).await.unwrap();
    let path = dir.path().join("bad.parquet");
    let batch = RecordBatch::try_from_iter(vec![
        ("id", Arc::new(Int64Array::from(vec![1, 2, 3])) as ArrayRef),
        // A time of day does not fit `date`; 1969 does not fit any date type.
        (
            "day",
            Arc::new(TimestampMillisecondArray::from(vec![
                86_400_000 * 3,
                86_400_000 * 3 + 1,
                -86_400_000,
            ])),
        ),
    ])
    .unwrap();
    write(&path, &batch, None);
    let options = ImportOptions {
        max_rejected: 10,
        ..ImportOptions::default()
    };
    let report = db
        .import("//events", &[path.display().to_string()], &options)
        .await
        .unwrap();
    assert_eq!((report.rows_imported, report.rejected), (1, 2));
    let reasons: Vec<String> = report
        .rejected_examples
        .iter()
        .map(|r| r.reason.clone())
        .collect();
    assert_eq!(
        reasons,
        [
            "Invalid value for column \"day\": value 1970-01-04T00:00:00.001 is not a whole day: type date holds days",
            "Invalid value for column \"day\": value 1969-12-31T00:00:00 is before 1970-01-01, which type date cannot hold",
        ]
    );
    let rows = db
        .select_rows("id, day from [//events]", &SelectOptions::default())
        .await
        .unwrap()
        .rows;
    assert_eq!(rows, [[Value::Int64(1), Value::Uint64(3)]]);

    // A duration into a timestamp column, a timestamp into a string column: refused once.
    db.create_table_from_text(
        "//s",
        "{dynamic=%true; schema=[{name=id;type=int64;sort_order=ascending};{name=at;type=timestamp};{name=s;type=string}]}",
    )
    .await
    .unwrap();
    for (column, array, expected) in [
        (
            "at",
            Arc::new(DurationMillisecondArray::from(vec![1; 3])) as ArrayRef,
            "column \"at\" has Arrow type Duration(ms) (YT interval), which imports into interval and integer columns, not into timestamp column \"at\"",
        ),
        (
            "s",
            Arc::new(TimestampMillisecondArray::from(vec![1; 3])) as ArrayRef,
            "column \"s\" has Arrow type Timestamp(ms) (YT timestamp), which imports into date, datetime or timestamp and integer columns, not into string column \"s\"",
        ),
    ] {
        let path = dir.path().join(format!("{column}.parquet"));
        let batch = RecordBatch::try_from_iter(vec![
            ("id", Arc::new(Int64Array::from(vec![1, 2, 3])) as ArrayRef),
            (column, array),
        ])
        .unwrap();
        write(&path, &batch, None);
        let e = db
            .import("//s", &[path.display().to_string()], &options)
            .await
            .unwrap_err()
            .to_string();
        assert!(e.contains(expected), "{e}");
    }
}

#[tokio::test]
async fn import_columns_choose_and_rename_and_unknown_columns_are_refused_once() {
    let dir = tempfile::tempdir().unwrap();
    let db = Database::open("memory://").unwrap();
    db.create_table_from_text(
        "//t",
        "{dynamic=%true; schema=[{name=id;type=int64;sort_order=ascending};{name=day;type=date};{name=name;type=string}]}",
    )
    .await
    .unwrap();
    // The file of every type: 1000 rows, most columns unknown to the table, a decimal.
    let path = dir.path().join("types.parquet");
    write(&path, &types_batch(&all_ids()), Some(0));
    let file = path.display().to_string();
    let e = db
        .import(
            "//t",
            std::slice::from_ref(&file),
            &ImportOptions::default(),
        )
        .await
        .unwrap_err();
    let text = e.to_string();
    assert!(
        text.contains("types.parquet: the file has columns \"d64\", \"ts_s\""),
        "{text}"
    );
    assert!(
        text.contains("that the table does not have; import the others with --columns id,day (ImportOptions::columns"),
        "{text}"
    );
    // Once, at the schema level: not a rejected row per input row.
    assert!(!matches!(e, dynql::Error::Rejected { .. }), "{text}");

    let chosen = ImportOptions {
        columns: Some(dynql::io::parse_columns("id,day,name=lutf8").unwrap()),
        ..ImportOptions::default()
    };
    let report = db
        .import("//t", std::slice::from_ref(&file), &chosen)
        .await
        .unwrap();
    assert_eq!((report.rows_imported, report.rejected), (ROWS as u64, 0));
    let rows = db
        .select_rows("* from [//t] where id in (3, 4)", &SelectOptions::default())
        .await
        .unwrap()
        .rows;
    assert_eq!(
        rows,
        [
            vec![Value::Int64(3), Value::Null, Value::Null],
            vec![Value::Int64(4), Value::Uint64(4), Value::string("L4")],
        ]
    );

    // A chosen column the file lacks is an error naming it, once.
    let missing = ImportOptions {
        columns: Some(dynql::io::parse_columns("id,name=nope").unwrap()),
        ..ImportOptions::default()
    };
    let e = db
        .import("//t", std::slice::from_ref(&file), &missing)
        .await
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("types.parquet: the file has no column \"nope\" of the columns to import (its columns: id, day, d64"),
        "{e}"
    );

    // CSV and JSON lines take the same choice.
    let csv = dir.path().join("rows.csv");
    std::fs::write(&csv, "id,extra,label\n1007,x,seven\n").unwrap();
    let jsonl = dir.path().join("rows.jsonl");
    std::fs::write(
        &jsonl,
        "{\"id\": 1008, \"extra\": 1, \"label\": \"eight\"}\n",
    )
    .unwrap();
    let e = db
        .import(
            "//t",
            &[csv.display().to_string()],
            &ImportOptions::default(),
        )
        .await
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("the file has columns \"extra\", \"label\" that the table does not have; import the others with --columns id"),
        "{e}"
    );
    let labels = ImportOptions {
        columns: Some(dynql::io::parse_columns("id, name = label").unwrap()),
        ..ImportOptions::default()
    };
    db.import(
        "//t",
        &[csv.display().to_string(), jsonl.display().to_string()],
        &labels,
    )
    .await
    .unwrap();
    let rows = db
        .select_rows(
            "id, name from [//t] where id >= 1007",
            &SelectOptions::default(),
        )
        .await
        .unwrap()
        .rows;
    assert_eq!(
        rows,
        [
            vec![Value::Int64(1007), Value::string("seven")],
            vec![Value::Int64(1008), Value::string("eight")],
        ]
    );
}
