//! Parquet files in every compression codec a writer may use (issue 40, item 1): each opens
//! in YT QL, in SQL and in `import`, with the values written; `export` writes the codec asked
//! for, and what it writes reads back.

use std::path::Path;
use std::sync::Arc;

use arrow::array::{ArrayRef, Float64Array, Int64Array, StringArray};
use arrow::record_batch::RecordBatch;
use dynql::io::{parse_codec, Compression, ExportOptions, FileFormat, ImportOptions};
use dynql::{Database, FileTables, SelectOptions, Timestamp, Value};
use parquet::arrow::ArrowWriter;
use parquet::file::properties::WriterProperties;
use parquet::file::reader::{FileReader, SerializedFileReader};

const ROWS: i64 = 3_000;

/// Every codec, as Parquet names them (both LZ4 framings).
const CODECS: [&str; 7] = [
    "snappy",
    "zstd",
    "gzip",
    "lz4",
    "lz4_hadoop",
    "brotli",
    "uncompressed",
];

/// `k` 0..3000, `v` text with a null every 7th row, `d` = k / 2; row groups of 1,000 rows.
fn write_file(dir: &Path, codec: &str) -> String {
    let path = dir.join(format!("{codec}.parquet"));
    let k: Vec<i64> = (0..ROWS).collect();
    let v: Vec<Option<String>> = k
        .iter()
        .map(|k| (k % 7 != 0).then(|| format!("v{k}")))
        .collect();
    let d: Vec<f64> = k.iter().map(|k| *k as f64 / 2.0).collect();
    let batch = RecordBatch::try_from_iter([
        ("k", Arc::new(Int64Array::from(k)) as ArrayRef),
        ("v", Arc::new(StringArray::from(v)) as ArrayRef),
        ("d", Arc::new(Float64Array::from(d)) as ArrayRef),
    ])
    .unwrap();
    let properties = WriterProperties::builder()
        .set_compression(parse_codec(codec, None).unwrap())
        .set_max_row_group_row_count(Some(1_000))
        .build();
    let file = std::fs::File::create(&path).unwrap();
    let mut writer = ArrowWriter::try_new(file, batch.schema(), Some(properties)).unwrap();
    writer.write(&batch).unwrap();
    writer.close().unwrap();
    path.display().to_string()
}

/// The codec of every column chunk of the Parquet file at `path`.
fn codecs_in(path: &Path) -> Vec<Compression> {
    let reader = SerializedFileReader::new(std::fs::File::open(path).unwrap()).unwrap();
    let metadata = reader.metadata();
    metadata
        .row_groups()
        .iter()
        .flat_map(|g| g.columns().iter().map(|c| c.compression()))
        .collect()
}

fn expected_sum() -> i64 {
    (0..ROWS).sum()
}

fn non_null_v() -> i64 {
    (0..ROWS).filter(|k| k % 7 != 0).count() as i64
}

#[tokio::test]
async fn every_codec_reads_in_yt_ql_sql_and_import() {
    let dir = tempfile::tempdir().unwrap();
    let db = Database::open("memory://").unwrap();
    for codec in CODECS {
        let file = write_file(dir.path(), codec);
        // YT QL over the file: an aggregate over every row and a filtered read.
        let query = format!("sum(k) as s, sum(1) as n from [file:{file}] group by 1 as one");
        let got = db
            .select_rows(&query, &SelectOptions::default())
            .await
            .unwrap_or_else(|e| panic!("{codec}: {e}"));
        assert_eq!(
            got.rows,
            vec![vec![Value::Int64(expected_sum()), Value::Int64(ROWS)]],
            "{codec}"
        );
        let query = format!("k, v, d from [file:{file}] where k between 1498 and 1500");
        let got = db
            .select_rows(&query, &SelectOptions::default())
            .await
            .unwrap();
        let want: Vec<Vec<Value>> = (1498..=1500)
            .map(|k: i64| {
                vec![
                    Value::Int64(k),
                    match k % 7 {
                        0 => Value::Null,
                        _ => Value::string(format!("v{k}")),
                    },
                    Value::Double(k as f64 / 2.0),
                ]
            })
            .collect();
        assert_eq!(got.rows, want, "{codec}");
        // SQL over the same file.
        let sql = format!("SELECT count(*) AS n, sum(k) AS s, count(v) AS nv FROM '{file}'");
        let got = db
            .sql(&sql, &FileTables::default(), Timestamp::SYNC_LAST_COMMITTED)
            .await
            .unwrap_or_else(|e| panic!("{codec}: {e}"));
        assert_eq!(
            got.rows,
            vec![vec![
                Value::Int64(ROWS),
                Value::Int64(expected_sum()),
                Value::Int64(non_null_v())
            ]],
            "{codec}"
        );
        // Import into a dynamic table.
        let path = format!("//import/{codec}");
        db.create_table_from_text(
            &path,
            "{dynamic=%true; schema=[{name=k;type=int64;sort_order=ascending};{name=v;type=string};{name=d;type=double}]}",
        )
        .await
        .unwrap_or_else(|e| panic!("{codec}: {e}"));
        let options = ImportOptions {
            format: Some(FileFormat::Parquet),
            ..ImportOptions::default()
        };
        let report = db
            .import(&path, &[file.clone()], &options)
            .await
            .unwrap_or_else(|e| panic!("{codec}: {e}"));
        assert_eq!(report.rows_imported, ROWS as u64, "{codec}");
        let query = format!("sum(k) as s, sum(d) as sd from [{path}] group by 1 as one");
        let got = db
            .select_rows(&query, &SelectOptions::default())
            .await
            .unwrap();
        let sum_d: f64 = (0..ROWS).map(|k| k as f64 / 2.0).sum();
        assert_eq!(
            got.rows,
            vec![vec![Value::Int64(expected_sum()), Value::Double(sum_d)]],
            "{codec}"
        );
    }
}

#[tokio::test]
async fn export_writes_the_codec_asked_for_and_reads_back() {
    let dir = tempfile::tempdir().unwrap();
    let db = Database::open("memory://").unwrap();
    db.create_table_from_text(
        "//t",
        "{dynamic=%true; schema=[{name=k;type=int64;sort_order=ascending};{name=v;type=string}]}",
    )
    .await
    .unwrap();
    let rows: Vec<dynql::Yson> = (0..500)
        .map(|k| dynql::yson::parse(format!("{{k={k};v=\"x{k}\"}}").as_bytes()).unwrap())
        .collect();
    db.insert_rows("//t", &rows).await.unwrap();
    for (name, level, expected) in [
        ("zstd", Some(9), parse_codec("zstd", Some(9)).unwrap()),
        ("gzip", None, parse_codec("gzip", None).unwrap()),
        ("lz4", None, Compression::LZ4_RAW),
        ("snappy", None, Compression::SNAPPY),
    ] {
        let out = dir.path().join(name);
        let options = ExportOptions {
            compression: parse_codec(name, level).unwrap(),
            ..ExportOptions::default()
        };
        let report = db.export("//t", &out, &options).await.unwrap();
        assert_eq!(report.rows, 500, "{name}");
        let part = out.join("part-00000.parquet");
        let codecs = codecs_in(&part);
        assert!(!codecs.is_empty());
        assert!(codecs.iter().all(|c| *c == expected), "{name}: {codecs:?}");
        let query = format!(
            "sum(k) as s from [file:{}] group by 1 as one",
            out.display()
        );
        let got = db
            .select_rows(&query, &SelectOptions::default())
            .await
            .unwrap();
        assert_eq!(got.rows, vec![vec![Value::Int64(124_750)]], "{name}");
    }
}
