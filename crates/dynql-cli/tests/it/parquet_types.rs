//! Parquet files of every kind of Arrow type on the command line (issue 40, items 2 and 4):
//! `select-rows` reads dates, timestamps and nested columns typed and refuses decimals by
//! name; `import` refuses a file's unknown columns once and takes `--columns`.

use std::path::Path;
use std::sync::Arc;

use arrow::array::{
    ArrayRef, BinaryArray, Date32Array, Decimal128Array, Int64Array, ListArray, StringArray,
    TimestampMillisecondArray,
};
use arrow::datatypes::Int32Type;
use arrow::record_batch::RecordBatch;
use parquet::arrow::ArrowWriter;

use crate::TestStore;

/// Rows 1 and 2 of `(id, day, ts, tags, price, name, raw)`.
fn write_file(dir: &Path) -> String {
    let batch = RecordBatch::try_from_iter(vec![
        ("id", Arc::new(Int64Array::from(vec![1, 2])) as ArrayRef),
        ("day", Arc::new(Date32Array::from(vec![Some(19_000), None]))),
        (
            "ts",
            Arc::new(
                TimestampMillisecondArray::from(vec![1_700_000_000_123, 1_700_000_000_000])
                    .with_timezone("UTC"),
            ),
        ),
        (
            "tags",
            Arc::new(ListArray::from_iter_primitive::<Int32Type, _, _>(vec![
                Some(vec![Some(1), None]),
                None,
            ])),
        ),
        (
            "price",
            Arc::new(
                Decimal128Array::from(vec![12_345, 99])
                    .with_precision_and_scale(10, 2)
                    .unwrap(),
            ),
        ),
        ("name", Arc::new(StringArray::from(vec!["one", "two"]))),
        (
            "raw",
            Arc::new(BinaryArray::from(vec![&[0xffu8, 0x00][..], b"ok"])),
        ),
    ])
    .unwrap();
    let path = dir.join("types.parquet");
    let mut w =
        ArrowWriter::try_new(std::fs::File::create(&path).unwrap(), batch.schema(), None).unwrap();
    w.write(&batch).unwrap();
    w.close().unwrap();
    path.display().to_string()
}

#[test]
fn select_rows_types_dates_timestamps_and_lists_and_refuses_decimals_by_name() {
    let s = TestStore::new();
    let file = write_file(s.dir.path());
    let out = s.ok(
        &[
            "select-rows",
            &format!("id, day, ts, tags, name from [file:{file}]"),
            "--format",
            "json",
        ],
        None,
    );
    assert_eq!(
        out,
        "{\"id\":1,\"day\":19000,\"ts\":1700000000123000,\"tags\":[1,null],\"name\":\"one\"}\n\
         {\"id\":2,\"day\":null,\"ts\":1700000000000000,\"tags\":null,\"name\":\"two\"}\n"
    );
    // Bytes that are not UTF-8 read as a string of bytes.
    let out = s.ok(
        &[
            "select-rows",
            &format!("raw from [file:{file}] where id = 1"),
        ],
        None,
    );
    assert_eq!(out, "{\"raw\"=\"\\xFF\\x00\";};\n");
    let err = s.fails(&["select-rows", &format!("* from [file:{file}]")], None);
    assert!(
        err.contains("* includes column \"price\", which cannot be read: its Arrow type is Decimal128(10, 2), and YT QL has no decimal type (`dynql sql` reads it as a decimal); name the columns to read instead of *"),
        "{err}"
    );
    let err = s.fails(
        &[
            "select-rows",
            &format!("sum(price) as s from [file:{file}] group by 1 as g"),
        ],
        None,
    );
    assert!(err.contains("Column \"price\" cannot be read"), "{err}");
}

#[test]
fn import_refuses_unknown_columns_once_and_takes_columns() {
    let s = TestStore::new();
    s.ok(
        &[
            "create",
            "table",
            "//t",
            "--attributes",
            "{dynamic=%true; schema=[{name=id;type=int64;sort_order=ascending};{name=day;type=date};{name=at;type=timestamp};{name=label;type=string}]}",
        ],
        None,
    );
    let file = write_file(s.dir.path());
    let err = s.fails(&["import", "//t", "--from", &file], None);
    assert!(
        err.contains("types.parquet: the file has columns \"ts\", \"tags\", \"price\", \"name\", \"raw\" that the table does not have; import the others with --columns id,day"),
        "{err}"
    );
    assert_eq!(err.matches("the table does not have").count(), 1, "{err}");
    let err = s.fails(
        &["import", "//t", "--from", &file, "--columns", "id,nope"],
        None,
    );
    assert!(
        err.contains("the file has no column \"nope\" of the columns to import (its columns: id, day, ts, tags, price, name, raw)"),
        "{err}"
    );
    let out = s.run(
        &[
            "import",
            "//t",
            "--from",
            &file,
            "--columns",
            "id,day,at=ts,label=name",
        ],
        None,
    );
    assert!(out.status.success(), "{out:?}");
    assert_eq!(
        s.ok(&["select-rows", "* from [//t]", "--format", "json"], None),
        "{\"id\":1,\"day\":19000,\"at\":1700000000123000,\"label\":\"one\"}\n\
         {\"id\":2,\"day\":null,\"at\":1700000000000000,\"label\":\"two\"}\n"
    );
    let out = s.run(
        &["import", "//t", "--from", &file, "--columns", "id,id=day"],
        None,
    );
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success());
    assert!(err.contains("table column \"id\" is given twice"), "{err}");
}
