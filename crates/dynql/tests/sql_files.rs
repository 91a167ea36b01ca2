//! Files in SQL as DuckDB users read them (issue 40, items 2 and 3): every Arrow type typed,
//! never dropped or turned into text; files combined by position or by name; lists of files;
//! CSV; row groups pruned by statistics on any column; `GROUP BY ALL`; streamed results.

use std::path::Path;
use std::sync::Arc;

use arrow::array::{
    Array, ArrayRef, BinaryArray, Date32Array, Decimal128Array, DurationMillisecondArray,
    FixedSizeBinaryArray, Float64Array, Int32Array, Int64Array, Int64Builder, LargeStringArray,
    ListBuilder, MapBuilder, StringArray, StringBuilder, StructArray, Time64MicrosecondArray,
    TimestampMicrosecondArray,
};
use arrow::datatypes::{DataType, Field, TimeUnit};
use arrow::record_batch::RecordBatch;
use dynql::futures::TryStreamExt;
use dynql::{Database, FileTables, SqlOptions, Timestamp, Value};
use parquet::arrow::ArrowWriter;
use parquet::basic::{Compression, ZstdLevel};
use parquet::file::properties::WriterProperties;

const ROWS: i64 = 1_000;
const ROW_GROUP: usize = 100;

fn write(path: &Path, batch: &RecordBatch) {
    let properties = WriterProperties::builder()
        .set_compression(Compression::ZSTD(ZstdLevel::default()))
        .set_max_row_group_row_count(Some(ROW_GROUP))
        .build();
    let file = std::fs::File::create(path).unwrap();
    let mut writer = ArrowWriter::try_new(file, batch.schema(), Some(properties)).unwrap();
    writer.write(batch).unwrap();
    writer.close().unwrap();
}

/// Price of row `i` in cents: null every 10th row.
fn cents(i: i64) -> Option<i128> {
    (i % 10 != 3).then_some((i * 137 % 100_000) as i128)
}

/// A file of every type, `id` 0..1000 ascending, row groups of 100 rows, zstd.
fn typed_file(dir: &Path) -> String {
    let ids: Vec<i64> = (0..ROWS).collect();
    let price = Decimal128Array::from(ids.iter().map(|i| cents(*i)).collect::<Vec<_>>())
        .with_precision_and_scale(10, 2)
        .unwrap();
    let ts = TimestampMicrosecondArray::from(
        ids.iter()
            .map(|i| (i % 7 != 0).then_some(1_700_000_000_000_000 + i * 1_000_000))
            .collect::<Vec<_>>(),
    )
    .with_timezone("UTC");
    let date = Date32Array::from(
        ids.iter()
            .map(|i| Some(19_000 + *i as i32))
            .collect::<Vec<_>>(),
    );
    let time = Time64MicrosecondArray::from(ids.iter().map(|i| i * 1_000).collect::<Vec<_>>());
    let duration = DurationMillisecondArray::from(ids.iter().map(|i| i * 10).collect::<Vec<_>>());
    let mut list = ListBuilder::new(Int64Builder::new());
    for i in &ids {
        if i % 5 == 0 {
            list.append_null();
        } else {
            for j in 0..(i % 3) {
                list.values().append_value(i + j);
            }
            list.append(true);
        }
    }
    let structs = StructArray::from(vec![
        (
            Arc::new(Field::new("a", DataType::Int64, true)),
            Arc::new(Int64Array::from(ids.clone())) as ArrayRef,
        ),
        (
            Arc::new(Field::new("b", DataType::Utf8, true)),
            Arc::new(StringArray::from(
                ids.iter().map(|i| format!("s{i}")).collect::<Vec<_>>(),
            )) as ArrayRef,
        ),
    ]);
    let mut map = MapBuilder::new(None, StringBuilder::new(), Int64Builder::new());
    for i in &ids {
        map.keys().append_value("k");
        map.values().append_value(*i);
        map.append(true).unwrap();
    }
    let fixed =
        FixedSizeBinaryArray::try_from_iter(ids.iter().map(|i| (*i as u16).to_be_bytes().to_vec()))
            .unwrap();
    // Bytes that are not UTF-8 in every third row.
    let bytes: Vec<Vec<u8>> = ids
        .iter()
        .map(|i| {
            if i % 3 == 0 {
                vec![0xff, *i as u8]
            } else {
                format!("b{i}").into_bytes()
            }
        })
        .collect();
    let binary = BinaryArray::from(bytes.iter().map(|b| b.as_slice()).collect::<Vec<_>>());
    let large = LargeStringArray::from(ids.iter().map(|i| format!("l{i}")).collect::<Vec<_>>());
    let batch = RecordBatch::try_from_iter([
        ("id", Arc::new(Int64Array::from(ids.clone())) as ArrayRef),
        ("price", Arc::new(price) as ArrayRef),
        ("ts", Arc::new(ts) as ArrayRef),
        ("d", Arc::new(date) as ArrayRef),
        ("t", Arc::new(time) as ArrayRef),
        ("dur", Arc::new(duration) as ArrayRef),
        ("l", Arc::new(list.finish()) as ArrayRef),
        ("s", Arc::new(structs) as ArrayRef),
        ("m", Arc::new(map.finish()) as ArrayRef),
        ("fsb", Arc::new(fixed) as ArrayRef),
        ("bin", Arc::new(binary) as ArrayRef),
        ("large", Arc::new(large) as ArrayRef),
    ])
    .unwrap();
    let path = dir.join("typed.parquet");
    write(&path, &batch);
    path.display().to_string()
}

async fn sql(db: &Database, query: &str) -> dynql::SelectResult {
    db.sql(
        query,
        &FileTables::default(),
        Timestamp::SYNC_LAST_COMMITTED,
    )
    .await
    .unwrap_or_else(|e| panic!("{query}: {e}"))
}

async fn sql_error(db: &Database, query: &str) -> String {
    db.sql(
        query,
        &FileTables::default(),
        Timestamp::SYNC_LAST_COMMITTED,
    )
    .await
    .map(|_| ())
    .expect_err(query)
    .to_string()
}

#[tokio::test]
async fn every_arrow_type_is_typed_in_sql() {
    let dir = tempfile::tempdir().unwrap();
    let file = typed_file(dir.path());
    let db = Database::open("memory://").unwrap();

    // Decimals compare and sum as numbers, not text.
    let over: i64 = (0..ROWS)
        .filter(|i| cents(*i).is_some_and(|c| c > 90_000))
        .count() as i64;
    let r = sql(
        &db,
        &format!("SELECT count(*) AS n FROM '{file}' WHERE price > 900"),
    )
    .await;
    assert_eq!(r.rows, vec![vec![Value::Int64(over)]]);
    let text_order = (0..ROWS)
        .filter(|i| {
            cents(*i).is_some_and(|c| format!("{}.{:02}", c / 100, c % 100).as_str() > "900")
        })
        .count() as i64;
    assert_ne!(over, text_order, "the data must tell numbers from text");
    let stream = db
        .sql_stream(
            &format!("SELECT sum(price) AS total, min(ts) AS first, max(d) AS last FROM '{file}'"),
            &SqlOptions::default(),
        )
        .await
        .unwrap();
    let schema = stream.schema();
    assert!(matches!(
        schema.field(0).data_type(),
        DataType::Decimal128(_, 2)
    ));
    assert!(matches!(
        schema.field(1).data_type(),
        DataType::Timestamp(TimeUnit::Microsecond, Some(_))
    ));
    assert_eq!(schema.field(2).data_type(), &DataType::Date32);
    let batches: Vec<RecordBatch> = stream.try_collect().await.unwrap();
    let total: i128 = (0..ROWS).filter_map(cents).sum();
    let sum = batches[0]
        .column(0)
        .as_any()
        .downcast_ref::<Decimal128Array>()
        .unwrap()
        .value(0);
    assert_eq!(sum, total);

    // Dates, timestamps, times and durations filter as their types.
    let r = sql(
        &db,
        &format!(
            "SELECT count(*) AS n FROM '{file}' WHERE d >= DATE '2022-01-10' AND ts < TIMESTAMP '2023-11-14T22:15:00Z' AND dur >= INTERVAL '0.5 seconds'"
        ),
    )
    .await;
    // d: day 19000 is 2022-01-08, so i >= 2; ts: 1_700_000_000 s is 22:13:20, so i < 100;
    // dur: i * 10 ms >= 0.5 s, so i >= 50.
    let expected = (0..ROWS)
        .filter(|i| i % 7 != 0 && *i >= 2 && *i < 100 && *i >= 50)
        .count() as i64;
    assert!(expected > 0);
    assert_eq!(r.rows, vec![vec![Value::Int64(expected)]]);

    // `*` keeps every column, nested and binary ones included, with their types.
    let stream = db
        .sql_stream(
            &format!("SELECT * FROM '{file}' LIMIT 2"),
            &SqlOptions::default(),
        )
        .await
        .unwrap();
    let schema = stream.schema();
    let names: Vec<&str> = schema.fields().iter().map(|f| f.name().as_str()).collect();
    assert_eq!(
        names,
        ["id", "price", "ts", "d", "t", "dur", "l", "s", "m", "fsb", "bin", "large"]
    );
    assert_eq!(
        schema.field(4).data_type(),
        &DataType::Time64(TimeUnit::Microsecond)
    );
    assert_eq!(
        schema.field(5).data_type(),
        &DataType::Duration(TimeUnit::Millisecond)
    );
    assert!(matches!(
        schema.field(6).data_type(),
        DataType::List(_) | DataType::LargeList(_)
    ));
    assert!(matches!(schema.field(7).data_type(), DataType::Struct(_)));
    assert!(matches!(schema.field(8).data_type(), DataType::Map(_, _)));
    assert!(matches!(
        schema.field(9).data_type(),
        DataType::FixedSizeBinary(2)
    ));
    assert!(matches!(
        schema.field(10).data_type(),
        DataType::Binary | DataType::BinaryView | DataType::LargeBinary
    ));
    let batches: Vec<RecordBatch> = stream.try_collect().await.unwrap();
    assert_eq!(batches.iter().map(|b| b.num_rows()).sum::<usize>(), 2);
    // As rows too: the bytes that are not UTF-8 come out as they are.
    let r = sql(
        &db,
        &format!("SELECT bin, s['b'] AS b, l FROM '{file}' WHERE id = 3"),
    )
    .await;
    assert_eq!(r.rows[0][0], Value::String(vec![0xff, 3]));
    assert_eq!(r.rows[0][1], Value::String(b"s3".to_vec()));
    let r = sql(&db, &format!("SELECT * FROM '{file}' LIMIT 2")).await;
    assert_eq!(r.rows.len(), 2);
    assert_eq!(r.rows[0].len(), 12);
}

#[tokio::test]
async fn filters_prune_row_groups_on_any_column() {
    let dir = tempfile::tempdir().unwrap();
    let ids: Vec<i64> = (0..ROWS).collect();
    // `v` rises with `id`, but nothing declares it a key.
    let batch = RecordBatch::try_from_iter([
        ("id", Arc::new(Int64Array::from(ids.clone())) as ArrayRef),
        (
            "v",
            Arc::new(Float64Array::from(
                ids.iter().map(|i| *i as f64 * 0.5).collect::<Vec<_>>(),
            )) as ArrayRef,
        ),
    ])
    .unwrap();
    let path = dir.path().join("sorted.parquet");
    write(&path, &batch);
    let db = Database::open("memory://").unwrap();
    let r = sql(
        &db,
        &format!(
            "SELECT count(*) AS n FROM '{}' WHERE v BETWEEN 100 AND 104.5",
            path.display()
        ),
    )
    .await;
    assert_eq!(r.rows, vec![vec![Value::Int64(10)]]);
    let groups = ROWS as usize / ROW_GROUP;
    assert_eq!(r.statistics.scan.row_groups, (1, groups));
    assert!(
        r.statistics.rows_read <= ROW_GROUP as u64,
        "{:?}",
        r.statistics
    );
}

#[tokio::test]
async fn files_combine_by_position_or_by_name() {
    let dir = tempfile::tempdir().unwrap();
    let a = dir.path().join("a.parquet");
    let b = dir.path().join("b.parquet");
    let c = dir.path().join("c.parquet");
    write(
        &a,
        &RecordBatch::try_from_iter([
            ("id", Arc::new(Int32Array::from(vec![1, 2])) as ArrayRef),
            (
                "name",
                Arc::new(StringArray::from(vec!["x", "y"])) as ArrayRef,
            ),
        ])
        .unwrap(),
    );
    // The same columns, a wider integer.
    write(
        &b,
        &RecordBatch::try_from_iter([
            ("id", Arc::new(Int64Array::from(vec![1 << 40])) as ArrayRef),
            ("name", Arc::new(StringArray::from(vec!["z"])) as ArrayRef),
        ])
        .unwrap(),
    );
    // Other columns.
    write(
        &c,
        &RecordBatch::try_from_iter([
            ("id", Arc::new(Int64Array::from(vec![7])) as ArrayRef),
            ("extra", Arc::new(Float64Array::from(vec![1.5])) as ArrayRef),
        ])
        .unwrap(),
    );
    let db = Database::open("memory://").unwrap();
    let (a, b, c) = (a.display(), b.display(), c.display());
    let r = sql(
        &db,
        &format!("SELECT sum(id) AS s, count(*) AS n FROM read_parquet(['{a}', '{b}'])"),
    )
    .await;
    assert_eq!(
        r.rows,
        vec![vec![Value::Int64(3 + (1 << 40)), Value::Int64(3)]]
    );
    let r = sql(
        &db,
        &format!(
            "SELECT count(*) AS n FROM '{}/[ab].parquet'",
            dir.path().display()
        ),
    )
    .await;
    assert_eq!(r.rows, vec![vec![Value::Int64(3)]]);

    let err = sql_error(&db, &format!("SELECT * FROM read_parquet(['{a}', '{c}'])")).await;
    assert!(
        err.contains("different columns") && err.contains("union_by_name"),
        "{err}"
    );
    for spelling in ["union_by_name => true", "union_by_name = true"] {
        let r = sql(
            &db,
            &format!(
                "SELECT id, name, extra FROM read_parquet(['{a}', '{c}'], {spelling}) ORDER BY id"
            ),
        )
        .await;
        assert_eq!(
            r.rows,
            vec![
                vec![Value::Int64(1), Value::String(b"x".to_vec()), Value::Null],
                vec![Value::Int64(2), Value::String(b"y".to_vec()), Value::Null],
                vec![Value::Int64(7), Value::Null, Value::Double(1.5)],
            ],
            "{spelling}"
        );
    }
    let err = sql_error(
        &db,
        &format!("SELECT * FROM read_parquet('{a}', hive => true)"),
    )
    .await;
    assert!(err.contains("unknown argument hive"), "{err}");
    let err = sql_error(&db, &format!("SELECT * FROM read_parquet('{a}', true)")).await;
    assert!(err.contains("needs its name"), "{err}");
}

#[tokio::test]
async fn csv_files_and_group_by_all() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("1.csv"), "host,bytes\na,10\nb,20\na,5\n").unwrap();
    std::fs::write(dir.path().join("2.csv"), "host,bytes\nb,1\n").unwrap();
    let db = Database::open("memory://").unwrap();
    let one = dir.path().join("1.csv");
    let r = sql(
        &db,
        &format!(
            "SELECT host, sum(bytes) AS total FROM '{}' GROUP BY ALL ORDER BY host",
            one.display()
        ),
    )
    .await;
    assert_eq!(
        r.rows,
        vec![
            vec![Value::String(b"a".to_vec()), Value::Int64(15)],
            vec![Value::String(b"b".to_vec()), Value::Int64(20)],
        ]
    );
    let r = sql(
        &db,
        &format!(
            "SELECT count(*) AS n, sum(bytes) AS total FROM read_csv('{}')",
            dir.path().display()
        ),
    )
    .await;
    assert_eq!(r.rows, vec![vec![Value::Int64(4), Value::Int64(36)]]);
}

#[tokio::test]
async fn copy_takes_duckdb_options() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("out.parquet");
    let db = Database::open("memory://").unwrap();
    db.sql_allowing_writes(
        &format!(
            "COPY (SELECT 1 AS a UNION ALL SELECT 2) TO '{}' (FORMAT parquet, COMPRESSION zstd)",
            out.display()
        ),
        &FileTables::default(),
        Timestamp::SYNC_LAST_COMMITTED,
    )
    .await
    .unwrap();
    let reader =
        parquet::file::reader::SerializedFileReader::new(std::fs::File::open(&out).unwrap())
            .unwrap();
    use parquet::file::reader::FileReader;
    let codec = reader.metadata().row_group(0).column(0).compression();
    assert!(matches!(codec, Compression::ZSTD(_)), "{codec:?}");
    let r = sql(&db, &format!("SELECT sum(a) AS s FROM '{}'", out.display())).await;
    assert_eq!(r.rows, vec![vec![Value::Int64(3)]]);
}
