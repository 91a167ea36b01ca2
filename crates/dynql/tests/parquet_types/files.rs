//! The Parquet file of every type the tests read and import, its expected rows in YT QL,
//! and the writer of test files.

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
use dynql::{LogicalType, Value, Yson};
use parquet::arrow::ArrowWriter;
use parquet::file::metadata::SortingColumn;
use parquet::file::properties::WriterProperties;

pub(crate) const ROWS: i64 = 1000;
pub(crate) const GROUP_ROWS: usize = 100;

/// Row `i`'s nullable values are null.
pub(crate) fn null(i: i64) -> bool {
    i % 7 == 3
}

pub(crate) fn opt<T>(i: i64, v: T) -> Option<T> {
    (!null(i)).then_some(v)
}

/// The columns YT QL reads, with their YT types; the values of row `i` are [`expected_row`].
pub(crate) const TYPED: &[(&str, LogicalType)] = &[
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

pub(crate) const TS0: i64 = 1_700_000_000;

/// The file's rows `ids` with every type (typed ones and refused ones), row groups of
/// [`GROUP_ROWS`], sorted by `id` (declared).
pub(crate) fn types_batch(ids: &[i64]) -> RecordBatch {
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

pub(crate) fn write(path: &Path, batch: &RecordBatch, sorted_by: Option<usize>) {
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

pub(crate) fn any(node: Yson) -> Value {
    Value::Any(dynql::yson::to_text(&node).into_bytes())
}

pub(crate) fn s(text: &str) -> Yson {
    Yson::String(text.as_bytes().to_vec())
}

/// What YT QL reads from row `i`, column by column as in [`TYPED`].
pub(crate) fn expected_row(i: i64) -> Vec<Value> {
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

pub(crate) fn all_ids() -> Vec<i64> {
    (0..ROWS).collect()
}
