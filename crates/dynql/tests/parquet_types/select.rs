//! Parquet files of every type read with `select-rows`: values as written, refused types
//! named, date and timestamp keys pruning row groups, dates before 1970 failing the read.

use std::sync::Arc;

use arrow::array::{
    ArrayRef, Date32Array, DurationNanosecondArray, Int64Array, TimestampMicrosecondArray,
};
use arrow::record_batch::RecordBatch;
use dynql::{Database, FileTables, LogicalType, SelectOptions, Value};

use crate::files::{all_ids, expected_row, null, types_batch, write, GROUP_ROWS, ROWS, TS0, TYPED};

#[tokio::test]
async fn every_arrow_type_is_typed_in_yt_ql_or_refused_by_name() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("types.parquet");
    write(&path, &types_batch(&all_ids()), Some(0));
    let location = path.display().to_string();

    // The YT types of the columns; the refused ones are not in the schema but are known.
    let table = dynql_storage::files::FileTable::open(&location, None)
        .await
        .unwrap();
    let types: Vec<(&str, LogicalType)> = table
        .schema()
        .columns()
        .iter()
        .map(|c| (c.name.as_str(), c.logical_type))
        .collect();
    assert_eq!(types, TYPED);
    let refused: Vec<&str> = table
        .refused_columns()
        .iter()
        .map(|(n, _)| n.as_str())
        .collect();
    assert_eq!(refused, ["price", "months", "decimals"]);
    assert_eq!(table.explain(None).row_groups, (10, 10));

    let db = Database::open("memory://").unwrap();
    let options = SelectOptions::default();
    let names: Vec<&str> = TYPED.iter().map(|(n, _)| *n).collect();
    let q = format!("{} from [file:{location}]", names.join(", "));
    let r = db.select_rows(&q, &options).await.unwrap();
    assert_eq!(r.rows.len(), ROWS as usize);
    for (i, row) in r.rows.iter().enumerate() {
        let expected = expected_row(i as i64);
        for ((name, got), want) in names.iter().zip(row).zip(&expected) {
            assert_eq!(got, want, "row {i}, column {name}");
        }
    }

    // Filters on the new types, with YT's literals (uint64 for date types).
    let q = format!(
        "id from [file:{location}] where day = 501u or ts_us = {}u",
        TS0 * 1_000_000 + 12
    );
    let r = db.select_rows(&q, &options).await.unwrap();
    assert_eq!(r.rows, [[Value::Int64(12)], [Value::Int64(501)]]);
    let q = format!("sum(dur_ms) as s from [file:{location}] where day < 7u group by 1 as g");
    let r = db.select_rows(&q, &options).await.unwrap();
    let want: i64 = (0..7).filter(|&i| !null(i)).map(|i| (i - 500) * 1000).sum();
    assert_eq!(r.rows, [[Value::Int64(want)]]);

    // A refused column: named, under `*`, in a filter or an aggregate, the error names it,
    // its Arrow type and what to do; the other columns still read.
    let err = |q: String| {
        let db = &db;
        async move {
            db.select_rows(&q, &SelectOptions::default())
                .await
                .unwrap_err()
                .to_string()
        }
    };
    let e = err(format!("* from [file:{location}]")).await;
    assert!(
        e.contains("* includes column \"price\", which cannot be read: its Arrow type is Decimal128(10, 2), and YT QL has no decimal type (`dynql sql` reads it as a decimal); name the columns to read instead of *"),
        "{e}"
    );
    let e = err(format!("price from [file:{location}]")).await;
    assert!(
        e.contains("Column \"price\" cannot be read: its Arrow type is Decimal128(10, 2), and YT QL has no decimal type"),
        "{e}"
    );
    let e = err(format!("id from [file:{location}] where price > 1")).await;
    assert!(e.contains("Column \"price\" cannot be read"), "{e}");
    let e = err(format!(
        "sum(f.price) as s from [file:{location}] as f group by 1 as g"
    ))
    .await;
    assert!(e.contains("Column \"f.price\" cannot be read"), "{e}");
    let e = err(format!("months from [file:{location}]")).await;
    assert!(
        e.contains("its Arrow type is Interval(YearMonth), which counts months and days of no fixed length"),
        "{e}"
    );
    let e = err(format!("decimals from [file:{location}]")).await;
    assert!(
        e.contains("which holds Decimal128(5, 1), and YT QL has no decimal type"),
        "{e}"
    );
    // A name that is no column at all stays an undefined reference.
    let e = err(format!("nope from [file:{location}]")).await;
    assert!(e.contains("Undefined reference \"nope\""), "{e}");
    // A refused column cannot be the key.
    let keyed = SelectOptions {
        files: FileTables {
            tables: vec![],
            keys: vec![(None, vec!["price".into()])],
        },
        ..SelectOptions::default()
    };
    let e = db
        .select_rows(&format!("id from [file:{location}]"), &keyed)
        .await
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("key column \"price\" cannot be read: its Arrow type is Decimal128"),
        "{e}"
    );
}

#[tokio::test]
async fn date_and_timestamp_keys_prune_row_groups() {
    let dir = tempfile::tempdir().unwrap();
    // Sorted by `ts_ms` (declared), then by other date and timestamp columns (given as the
    // key). Rows with nulls are left out, so that every key column is sorted.
    let kept: Vec<i64> = all_ids().into_iter().filter(|&i| !null(i)).collect();
    write(&dir.path().join("ts.parquet"), &types_batch(&kept), Some(4));
    let db = Database::open("memory://").unwrap();
    let location = dir.path().join("ts.parquet").display().to_string();
    let options = SelectOptions::default();

    let micros = (TS0 * 1000 + 501) * 1000;
    let q = format!("id from [file:{location}] where ts_ms = {micros}u");
    let r = db.select_rows(&q, &options).await.unwrap();
    assert_eq!(r.rows, [[Value::Int64(501)]]);
    let groups = kept.len().div_ceil(GROUP_ROWS);
    assert_eq!(
        r.statistics.scan.row_groups,
        (1, groups),
        "{:?}",
        r.statistics
    );
    let e = db.explain_query(&q, &options).await.unwrap();
    assert_eq!(e.read.row_groups, (1, groups));

    for (key, value) in [
        ("ts_ns", TS0 * 1_000_000 + (501 * 1_001) / 1000),
        ("day", 501),
        ("ts_s", (TS0 + 501) * 1_000_000),
        ("d64", 501 * 86_400 + 1),
    ] {
        let keyed = SelectOptions {
            files: FileTables {
                tables: vec![],
                keys: vec![(None, vec![key.into()])],
            },
            ..SelectOptions::default()
        };
        let q = format!("id from [file:{location}] where {key} = {value}u");
        let r = db.select_rows(&q, &keyed).await.unwrap();
        assert_eq!(r.rows, [[Value::Int64(501)]], "{key}");
        assert_eq!(
            r.statistics.scan.row_groups,
            (1, groups),
            "{key}: {:?}",
            r.statistics
        );
        let q = format!(
            "id from [file:{location}] where {key} between {value}u and {}u",
            value + 1
        );
        let r = db.select_rows(&q, &keyed).await.unwrap();
        assert_eq!(r.rows.first(), Some(&vec![Value::Int64(501)]), "{key}");
    }
}

#[tokio::test]
async fn values_before_1970_fail_the_read_naming_the_column_and_value() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("old.parquet");
    let batch = RecordBatch::try_from_iter(vec![
        ("id", Arc::new(Int64Array::from(vec![1, 2])) as ArrayRef),
        (
            "born",
            Arc::new(Date32Array::from(vec![Some(10), Some(-365)])),
        ),
        (
            "at",
            Arc::new(TimestampMicrosecondArray::from(vec![Some(-1), None])),
        ),
        (
            "span",
            Arc::new(DurationNanosecondArray::from(vec![Some(-1_000), None])),
        ),
    ])
    .unwrap();
    write(&path, &batch, None);
    let db = Database::open("memory://").unwrap();
    let options = SelectOptions::default();
    let location = path.display().to_string();
    let e = db
        .select_rows(&format!("id, born from [file:{location}]"), &options)
        .await
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("Column \"born\" holds 1969-01-01 (Date32), before 1970-01-01: YT's date counts from the epoch"),
        "{e}"
    );
    let e = db
        .select_rows(&format!("at from [file:{location}]"), &options)
        .await
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("Column \"at\" holds 1969-12-31T23:59:59.999999"),
        "{e}"
    );
    assert!(e.contains("YT's timestamp"), "{e}");
    // Durations are signed; the other columns read.
    let r = db
        .select_rows(&format!("id, span from [file:{location}]"), &options)
        .await
        .unwrap();
    assert_eq!(
        r.rows,
        [
            [Value::Int64(1), Value::Int64(-1)],
            [Value::Int64(2), Value::Null]
        ]
    );
}
