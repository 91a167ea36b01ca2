//! Text is text: YT `string` columns leave dynql as Arrow `Utf8` where their values are
//! UTF-8 (streams, collected results, exported files) and as `Binary` where a value is not,
//! or when asked; the bytes are the same either way.

use std::fs::File;

use dynql::arrow::array::{Array, AsArray};
use dynql::arrow::datatypes::DataType;
use dynql::io::ExportOptions;
use dynql::{Database, SelectOptions, Value, Yson};
use futures::StreamExt;
use parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder;

/// `//t (k, text string, raw string)`: `text` always UTF-8, `raw` not UTF-8 at key 7.
async fn table() -> Database {
    let db = Database::open("memory://").unwrap();
    db.create_table_from_text(
        "//t",
        "{dynamic=%true; schema=[{name=k;type=int64;sort_order=ascending};{name=text;type=string};{name=raw;type=string}]}",
    )
    .await
    .unwrap();
    let rows: Vec<Yson> = (0..10i64)
        .map(|k| {
            let raw = if k == 7 {
                Yson::String(vec![0xff, 0xfe, b'0' + k as u8])
            } else {
                Yson::String(format!("r{k}").into_bytes())
            };
            Yson::Map(vec![
                (b"k".to_vec(), Yson::Int64(k)),
                (
                    b"text".to_vec(),
                    Yson::String(format!("текст {k}").into_bytes()),
                ),
                (b"raw".to_vec(), raw),
            ])
        })
        .collect();
    db.insert_rows("//t", &rows).await.unwrap();
    db
}

#[tokio::test]
async fn a_stream_hands_strings_out_as_text_and_names_a_column_that_is_not() {
    let db = table().await;
    let mut stream = db
        .select_stream("k, text from [//t]", &SelectOptions::default())
        .await
        .unwrap();
    assert_eq!(stream.schema().field(1).data_type(), &DataType::Utf8);
    let batch = stream.next().await.unwrap().unwrap();
    assert_eq!(batch.column(1).as_string::<i32>().value(3), "текст 3");

    let mut stream = db
        .select_stream("k, raw from [//t]", &SelectOptions::default())
        .await
        .unwrap();
    let error = stream.next().await.unwrap().unwrap_err();
    let message = error.to_string();
    assert!(
        message.contains("raw") && message.contains("UTF-8") && message.contains("binary_strings"),
        "{message}"
    );

    let bytes = SelectOptions {
        binary_strings: true,
        ..SelectOptions::default()
    };
    let mut stream = db.select_stream("k, raw from [//t]", &bytes).await.unwrap();
    let batch = stream.next().await.unwrap().unwrap();
    assert_eq!(batch.column(1).data_type(), &DataType::Binary);
    assert_eq!(
        batch.column(1).as_binary::<i32>().value(7),
        &[0xff, 0xfe, b'7']
    );
}

#[tokio::test]
async fn a_collected_result_is_text_where_every_value_is_utf8() {
    let db = table().await;
    let result = db
        .select_rows("k, text, raw from [//t]", &SelectOptions::default())
        .await
        .unwrap();
    let batch = result.to_record_batch().unwrap();
    assert_eq!(batch.schema().field(1).data_type(), &DataType::Utf8);
    assert_eq!(batch.schema().field(2).data_type(), &DataType::Binary);
    assert_eq!(batch.schema().field(1).metadata()["yt:type"], "string");
    // Without the row that is not UTF-8, `raw` is text too.
    let result = db
        .select_rows("k, raw from [//t] where k != 7", &SelectOptions::default())
        .await
        .unwrap();
    let batch = result.to_record_batch().unwrap();
    assert_eq!(batch.schema().field(1).data_type(), &DataType::Utf8);
    assert_eq!(batch.column(1).as_string::<i32>().value(0), "r0");
}

/// The Arrow types of an exported file's columns, and its rows' `raw` bytes.
fn exported(dir: &std::path::Path) -> (Vec<DataType>, Vec<Vec<u8>>) {
    let file = File::open(dir.join("part-00000.parquet")).unwrap();
    let reader = ParquetRecordBatchReaderBuilder::try_new(file)
        .unwrap()
        .build()
        .unwrap();
    let mut types = Vec::new();
    let mut raw = Vec::new();
    for batch in reader {
        let batch = batch.unwrap();
        types = batch
            .schema()
            .fields()
            .iter()
            .map(|f| f.data_type().clone())
            .collect();
        let column = batch.column(2);
        for i in 0..column.len() {
            raw.push(match column.data_type() {
                DataType::Utf8 => column.as_string::<i32>().value(i).as_bytes().to_vec(),
                _ => column.as_binary::<i32>().value(i).to_vec(),
            });
        }
    }
    (types, raw)
}

#[tokio::test]
async fn exports_write_text_columns_and_bytes_only_where_a_value_is_not_utf8() {
    let db = table().await;
    let expected_raw: Vec<Vec<u8>> = (0..10u8)
        .map(|k| {
            if k == 7 {
                vec![0xff, 0xfe, b'7']
            } else {
                format!("r{k}").into_bytes()
            }
        })
        .collect();

    let dir = tempfile::tempdir().unwrap();
    db.export("//t", dir.path(), &ExportOptions::default())
        .await
        .unwrap();
    let (types, raw) = exported(dir.path());
    assert_eq!(types, [DataType::Int64, DataType::Utf8, DataType::Binary]);
    assert_eq!(raw, expected_raw);
    // Only the part files are left: the first attempt's files are gone.
    let names: Vec<String> = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert_eq!(names, ["part-00000.parquet"]);

    let dir = tempfile::tempdir().unwrap();
    let bytes = ExportOptions {
        binary_strings: true,
        ..ExportOptions::default()
    };
    db.export("//t", dir.path(), &bytes).await.unwrap();
    let (types, raw) = exported(dir.path());
    assert_eq!(types, [DataType::Int64, DataType::Binary, DataType::Binary]);
    assert_eq!(raw, expected_raw);

    // Once the row is gone every string column is text, and the file reads back as the
    // table's rows.
    db.delete_rows("//t", &[Yson::Map(vec![(b"k".to_vec(), Yson::Int64(7))])])
        .await
        .unwrap();
    let dir = tempfile::tempdir().unwrap();
    db.export("//t", dir.path(), &ExportOptions::default())
        .await
        .unwrap();
    let (types, _) = exported(dir.path());
    assert_eq!(types, [DataType::Int64, DataType::Utf8, DataType::Utf8]);
    let back = db
        .select_rows(
            &format!(
                "k, text, raw from [file:{}] where k = 3",
                dir.path().display()
            ),
            &SelectOptions::default(),
        )
        .await
        .unwrap();
    assert_eq!(
        back.rows,
        vec![vec![
            Value::Int64(3),
            Value::String("текст 3".as_bytes().to_vec()),
            Value::String(b"r3".to_vec())
        ]]
    );
}
