//! Every Arrow type of a Parquet file in YT QL and in import (issue 40, items 2 and 4): files
//! generated here with every type (ten row groups, nulls) are read with `select-rows` and
//! compared with the values written; types YT has no counterpart for are refused by name;
//! date and timestamp keys prune row groups; dates and timestamps import into YT's date
//! types and integers; `columns` chooses and renames the columns an import reads.

use std::path::Path;
use std::sync::Arc;

use arrow::array::{
    ArrayRef, BinaryArray, BinaryViewArray, Date32Array, Date64Array, Decimal128Array,
    DictionaryArray, DurationMillisecondArray, DurationNanosecondArray, FixedSizeBinaryArray,
    FixedSizeListArray, Float64Array, Int32Array, Int64Array, IntervalYearMonthArray,
    LargeListArray, LargeStringArray, ListArray, MapArray, StringArray, StringViewArray,
    StructArray, Time32MillisecondArray, Time64NanosecondArray, TimestampMicrosecondArray,
    TimestampMillisecondArray, TimestampNanosecondArray, TimestampSecondArray,
};
use arrow::buffer::{NullBuffer, OffsetBuffer};
use arrow::datatypes::{DataType, Field, Fields, Int32Type};
use arrow::record_batch::RecordBatch;
use dynql::io::ImportOptions;
use dynql::{Database, FileTables, LogicalType, SelectOptions, Value, Yson};
use parquet::arrow::ArrowWriter;
use parquet::file::metadata::SortingColumn;
use parquet::file::properties::WriterProperties;

const ROWS: i64 = 1000;
const GROUP_ROWS: usize = 100;

/// Row `i`'s nullable values are null.
fn null(i: i64) -> bool {
    i % 7 == 3
}

fn opt<T>(i: i64, v: T) -> Option<T> {
    (!null(i)).then_some(v)
}

/// The columns YT QL reads, with their YT types; the values of row `i` are [`expected_row`].
const TYPED: &[(&str, LogicalType)] = &[
    ("id", LogicalType::Int64),
    ("day", LogicalType::Date),
    ("d64", LogicalType::Datetime),
    ("ts_s", LogicalType::Timestamp),
    ("ts_ms", LogicalType::Timestamp),
    ("ts_us", LogicalType::Timestamp),
    ("ts_ns", LogicalType::Timestamp),
    ("dur_ms", LogicalType::Interval),
    ("dur_ns", LogicalType::Interval),
    ("t32", LogicalType::Interval),
    ("t64", LogicalType::Interval),
    ("list", LogicalType::Any),
    ("llist", LogicalType::Any),
    ("fsl", LogicalType::Any),
    ("st", LogicalType::Any),
    ("map", LogicalType::Any),
    ("fsb", LogicalType::String),
    ("bin", LogicalType::String),
    ("bview", LogicalType::String),
    ("lutf8", LogicalType::Utf8),
    ("sview", LogicalType::Utf8),
    ("dict", LogicalType::Utf8),
];

const TS0: i64 = 1_700_000_000;

/// The file's rows `ids` with every type (typed ones and refused ones), row groups of
/// [`GROUP_ROWS`], sorted by `id` (declared).
fn types_batch(ids: &[i64]) -> RecordBatch {
    let n = ids.len();
    let list = ListArray::from_iter_primitive::<Int32Type, _, _>(ids.iter().map(|&i| {
        opt(
            i,
            if i % 2 == 0 {
                vec![Some(i as i32), None, Some(i as i32 + 1)]
            } else {
                vec![]
            },
        )
    }));
    let llist = LargeListArray::new(
        Arc::new(Field::new_list_field(DataType::Utf8, true)),
        OffsetBuffer::from_lengths(vec![1; n]),
        Arc::new(StringArray::from_iter_values(
            ids.iter().map(|i| format!("a{i}")),
        )),
        None,
    );
    let fsl = FixedSizeListArray::new(
        Arc::new(Field::new_list_field(DataType::Float64, true)),
        2,
        Arc::new(Float64Array::from_iter_values(
            ids.iter().flat_map(|&i| [i as f64 + 0.5, -1.0]),
        )),
        Some(NullBuffer::from_iter(ids.iter().map(|&i| !null(i)))),
    );
    let st = StructArray::new(
        Fields::from(vec![
            Field::new("a", DataType::Int32, true),
            Field::new("b", DataType::Utf8, true),
            Field::new(
                "when",
                DataType::Timestamp(arrow::datatypes::TimeUnit::Millisecond, None),
                true,
            ),
        ]),
        vec![
            Arc::new(Int32Array::from_iter_values(ids.iter().map(|&i| i as i32))),
            Arc::new(StringArray::from_iter(
                ids.iter().map(|&i| (i % 2 == 0).then(|| format!("b{i}"))),
            )),
            Arc::new(TimestampMillisecondArray::from_iter_values(
                ids.iter().map(|&i| TS0 * 1000 + i),
            )),
        ],
        Some(NullBuffer::from_iter(ids.iter().map(|&i| !null(i)))),
    );
    let map = MapArray::new_from_strings(
        ids.iter().flat_map(|_| ["k", "z"]),
        &Int64Array::from_iter(ids.iter().flat_map(|&i| [Some(i), None])),
        &(0..=n as u32).map(|r| r * 2).collect::<Vec<_>>(),
    )
    .unwrap();
    let labels: Vec<String> = ids.iter().map(|i| format!("c{}", i % 3)).collect();
    let dict: DictionaryArray<Int32Type> = labels.iter().map(String::as_str).collect();
    let decimals = ListArray::new(
        Arc::new(Field::new_list_field(DataType::Decimal128(5, 1), true)),
        OffsetBuffer::from_lengths(vec![1; n]),
        Arc::new(
            Decimal128Array::from_iter_values(ids.iter().map(|&i| i as i128))
                .with_precision_and_scale(5, 1)
                .unwrap(),
        ),
        None,
    );
    let columns: Vec<(&str, ArrayRef)> = vec![
        ("id", Arc::new(Int64Array::from(ids.to_vec()))),
        (
            "day",
            Arc::new(Date32Array::from_iter(
                ids.iter().map(|&i| opt(i, i as i32)),
            )),
        ),
        (
            "d64",
            Arc::new(Date64Array::from_iter(
                ids.iter().map(|&i| opt(i, i * 86_400_000 + 1_234)),
            )),
        ),
        (
            "ts_s",
            Arc::new(TimestampSecondArray::from_iter(
                ids.iter().map(|&i| opt(i, TS0 + i)),
            )),
        ),
        (
            "ts_ms",
            Arc::new(
                TimestampMillisecondArray::from_iter(ids.iter().map(|&i| opt(i, TS0 * 1000 + i)))
                    .with_timezone("UTC"),
            ),
        ),
        (
            "ts_us",
            Arc::new(TimestampMicrosecondArray::from_iter(
                ids.iter().map(|&i| opt(i, TS0 * 1_000_000 + i)),
            )),
        ),
        (
            "ts_ns",
            Arc::new(
                TimestampNanosecondArray::from_iter(
                    ids.iter().map(|&i| opt(i, TS0 * 1_000_000_000 + i * 1_001)),
                )
                .with_timezone("+02:00"),
            ),
        ),
        (
            "dur_ms",
            Arc::new(DurationMillisecondArray::from_iter(
                ids.iter().map(|&i| opt(i, i - 500)),
            )),
        ),
        (
            "dur_ns",
            Arc::new(DurationNanosecondArray::from_iter(
                ids.iter().map(|&i| opt(i, (i - 500) * 1_500)),
            )),
        ),
        (
            "t32",
            Arc::new(Time32MillisecondArray::from_iter(
                ids.iter().map(|&i| opt(i, i as i32 * 1_000)),
            )),
        ),
        (
            "t64",
            Arc::new(Time64NanosecondArray::from_iter(
                ids.iter().map(|&i| opt(i, i * 1_000_000 + 999)),
            )),
        ),
        ("list", Arc::new(list)),
        ("llist", Arc::new(llist)),
        ("fsl", Arc::new(fsl)),
        ("st", Arc::new(st)),
        ("map", Arc::new(map)),
        (
            "fsb",
            Arc::new(
                FixedSizeBinaryArray::try_from_sparse_iter_with_size(
                    ids.iter().map(|&i| opt(i, (i as u32).to_be_bytes())),
                    4,
                )
                .unwrap(),
            ),
        ),
        (
            "bin",
            Arc::new(BinaryArray::from_iter(
                ids.iter().map(|&i| opt(i, vec![0xff, 0xfe, i as u8])),
            )),
        ),
        (
            "bview",
            Arc::new(BinaryViewArray::from_iter(
                ids.iter().map(|&i| opt(i, vec![0xc3, 0x28, i as u8])),
            )),
        ),
        (
            "lutf8",
            Arc::new(LargeStringArray::from_iter(
                ids.iter().map(|&i| opt(i, format!("L{i}"))),
            )),
        ),
        (
            "sview",
            Arc::new(StringViewArray::from_iter(
                ids.iter().map(|&i| opt(i, format!("v{i}"))),
            )),
        ),
        ("dict", Arc::new(dict)),
        // Refused by name.
        (
            "price",
            Arc::new(
                Decimal128Array::from_iter(ids.iter().map(|&i| opt(i, i as i128 * 101)))
                    .with_precision_and_scale(10, 2)
                    .unwrap(),
            ),
        ),
        (
            "months",
            Arc::new(IntervalYearMonthArray::from_iter_values(
                ids.iter().map(|&i| i as i32),
            )),
        ),
        ("decimals", Arc::new(decimals)),
    ];
    RecordBatch::try_from_iter(columns).unwrap()
}

fn write(path: &Path, batch: &RecordBatch, sorted_by: Option<usize>) {
    let mut props = WriterProperties::builder()
        .set_max_row_group_row_count(Some(GROUP_ROWS))
        .set_data_page_row_count_limit(32)
        .set_write_batch_size(32);
    if let Some(column_idx) = sorted_by {
        props = props.set_sorting_columns(Some(vec![SortingColumn {
            column_idx: column_idx as i32,
            descending: false,
            nulls_first: true,
        }]));
    }
    let file = std::fs::File::create(path).unwrap();
    let mut w = ArrowWriter::try_new(file, batch.schema(), Some(props.build())).unwrap();
    w.write(batch).unwrap();
    w.close().unwrap();
}

fn any(node: Yson) -> Value {
    Value::Any(dynql::yson::to_text(&node).into_bytes())
}

fn s(text: &str) -> Yson {
    Yson::String(text.as_bytes().to_vec())
}

/// What YT QL reads from row `i`, column by column as in [`TYPED`].
fn expected_row(i: i64) -> Vec<Value> {
    let or_null = |v: Value| if null(i) { Value::Null } else { v };
    let u = |v: i64| or_null(Value::Uint64(v as u64));
    let signed = |v: i64| or_null(Value::Int64(v));
    let list = if i % 2 == 0 {
        Yson::List(vec![Yson::Int64(i), Yson::Entity, Yson::Int64(i + 1)])
    } else {
        Yson::List(vec![])
    };
    vec![
        Value::Int64(i),
        u(i),
        u(i * 86_400 + 1),
        u((TS0 + i) * 1_000_000),
        u((TS0 * 1000 + i) * 1000),
        u(TS0 * 1_000_000 + i),
        u(TS0 * 1_000_000 + (i * 1_001).div_euclid(1000)),
        signed((i - 500) * 1000),
        signed(((i - 500) * 1_500).div_euclid(1000)),
        signed(i * 1_000_000),
        signed(i * 1000),
        or_null(any(list)),
        any(Yson::List(vec![s(&format!("a{i}"))])),
        or_null(any(Yson::List(vec![
            Yson::Double(i as f64 + 0.5),
            Yson::Double(-1.0),
        ]))),
        or_null(any(Yson::Map(vec![
            (b"a".to_vec(), Yson::Int64(i)),
            (
                b"b".to_vec(),
                if i % 2 == 0 {
                    s(&format!("b{i}"))
                } else {
                    Yson::Entity
                },
            ),
            (
                b"when".to_vec(),
                Yson::Uint64(((TS0 * 1000 + i) * 1000) as u64),
            ),
        ]))),
        any(Yson::List(vec![
            Yson::List(vec![s("k"), Yson::Int64(i)]),
            Yson::List(vec![s("z"), Yson::Entity]),
        ])),
        or_null(Value::String((i as u32).to_be_bytes().to_vec())),
        or_null(Value::String(vec![0xff, 0xfe, i as u8])),
        or_null(Value::String(vec![0xc3, 0x28, i as u8])),
        or_null(Value::string(format!("L{i}"))),
        or_null(Value::string(format!("v{i}"))),
        Value::string(format!("c{}", i % 3)),
    ]
}

fn all_ids() -> Vec<i64> {
    (0..ROWS).collect()
}

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
