//! Import and export through the library API: formats, duplicates, rejected rows, the
//! Parquet file contract, round trips, and a model test of last-write-wins import.

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use arrow::array::{ArrayRef, Int32Array, Int64Array, StringArray, UInt64Array};
use arrow::datatypes::DataType;
use arrow::record_batch::RecordBatch;
use dynql::io::{ExportOptions, FileFormat, ImportOptions, RejectedRow, SCHEMA_METADATA_KEY};
use dynql::{Database, Error, ErrorKind, SelectOptions, Timestamp, Value};
use parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder;
use parquet::arrow::ArrowWriter;
use serde_json::json;

const KV: &str = "{dynamic=%true; schema=[{name=k;type=int64;sort_order=ascending};{name=v;type=string};{name=n;type=uint64}]}";

async fn table(attributes: &str) -> Database {
    let db = Database::open("memory://").unwrap();
    db.create_table_from_text("//t", attributes).await.unwrap();
    db
}

fn write(dir: &Path, name: &str, text: &str) -> String {
    let path = dir.join(name);
    std::fs::write(&path, text).unwrap();
    path.display().to_string()
}

fn write_parquet(dir: &Path, name: &str, columns: Vec<(&str, ArrayRef)>) -> String {
    let path = dir.join(name);
    let batch = RecordBatch::try_from_iter(columns).unwrap();
    let mut w =
        ArrowWriter::try_new(std::fs::File::create(&path).unwrap(), batch.schema(), None).unwrap();
    w.write(&batch).unwrap();
    w.close().unwrap();
    path.display().to_string()
}

async fn rows(db: &Database, query: &str) -> Vec<Vec<Value>> {
    db.select_rows(query, &SelectOptions::default())
        .await
        .unwrap()
        .rows
}

fn kv(k: i64, v: &str, n: Option<u64>) -> Vec<Value> {
    vec![
        Value::Int64(k),
        Value::string(v),
        n.map(Value::Uint64).unwrap_or(Value::Null),
    ]
}

#[tokio::test]
async fn parquet_csv_and_json_lines_import_with_the_last_duplicate_winning() {
    let dir = tempfile::tempdir().unwrap();
    let db = table(KV).await;
    // Parquet with narrower Arrow types than the table's (Int32, Utf8): cast on import.
    let parquet = write_parquet(
        dir.path(),
        "a.parquet",
        vec![
            ("k", Arc::new(Int32Array::from(vec![3, 1, 2])) as ArrayRef),
            ("v", Arc::new(StringArray::from(vec!["p3", "p1", "p2"]))),
        ],
    );
    let csv = write(dir.path(), "b.csv", "n,k,v\n7,2,c2\n,4,c4\n");
    let json = write(
        dir.path(),
        "c.jsonl",
        "{\"k\": 3, \"v\": \"j3\", \"n\": 18446744073709551615}\n\n{\"k\": 4, \"v\": \"j4\"}\n",
    );
    let report = db
        .import("//t", &[parquet, csv, json], &ImportOptions::default())
        .await
        .unwrap();
    assert_eq!(report.files, 3);
    assert_eq!(report.rows_read, 7);
    assert_eq!(report.rows_imported, 4);
    assert_eq!(report.duplicates_folded, 3);
    assert_eq!(report.rejected, 0);
    assert!(report
        .summary()
        .starts_with("imported 4 rows (3 duplicates folded, 0 rejected) in "));
    assert_eq!(
        rows(&db, "k, v, n from [//t]").await,
        vec![
            kv(1, "p1", None),
            kv(2, "c2", Some(7)),
            kv(3, "j3", Some(u64::MAX)),
            kv(4, "j4", None),
        ]
    );
}

#[tokio::test]
async fn rejected_rows_fail_the_import_and_change_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let db = table(KV).await;
    db.insert_json_rows("//t", &[json!({"k": 100, "v": "old"})])
        .await
        .unwrap();
    let csv = write(
        dir.path(),
        "bad.csv",
        "k,v,n\n1,ok,1\nx,bad,2\n3,neg,-1\n,nokey,4\n5,fine,5\n",
    );
    let json = write(
        dir.path(),
        "bad.jsonl",
        "{\"k\": 6, \"zzz\": 1}\nnot json\n[1]\n",
    );
    let err = db
        .import("//t", &[csv, json], &ImportOptions::default())
        .await
        .unwrap_err();
    assert_eq!(err.kind(), ErrorKind::InvalidInput);
    let Error::Rejected {
        count,
        allowed,
        examples,
    } = &err
    else {
        panic!("expected Rejected, got {err}");
    };
    assert_eq!((*count, *allowed, examples.len()), (6, 0, 6));
    let text = err.to_string();
    assert!(
        text.starts_with("6 input rows rejected (no rejected rows allowed); nothing was imported:"),
        "{text}"
    );
    for expected in [
        "bad.csv:3: Invalid value for column \"k\": cannot parse \"x\" as int64",
        "bad.csv:4: Invalid value for column \"n\": cannot parse \"-1\" as uint64",
        "bad.csv:5: key column \"k\" is null",
        "bad.jsonl:1: No such column \"zzz\" in table schema",
        "bad.jsonl:2: invalid JSON",
        "bad.jsonl:3: a row must be a JSON object",
    ] {
        assert!(
            text.contains(expected),
            "{expected:?} missing from:\n{text}"
        );
    }
    assert_eq!(
        rows(&db, "k, v, n from [//t]").await,
        vec![kv(100, "old", None)]
    );
}

#[tokio::test]
async fn max_rejected_imports_the_valid_rows_and_reports_every_rejected_one() {
    let dir = tempfile::tempdir().unwrap();
    let db = table(KV).await;
    let mut text = String::from("k,v\n");
    for i in 0..30 {
        // Every third row has a key that is not a number.
        if i % 3 == 0 {
            text.push_str(&format!("k{i},bad\n"));
        } else {
            text.push_str(&format!("{i},good\n"));
        }
    }
    let csv = write(dir.path(), "rows.csv", &text);
    let seen: Arc<Mutex<Vec<RejectedRow>>> = Arc::default();
    let sink = seen.clone();
    let options = ImportOptions {
        max_rejected: 10,
        on_rejected: Some(Arc::new(move |r: &RejectedRow| {
            sink.lock().unwrap().push(r.clone())
        })),
        ..ImportOptions::default()
    };
    let report = db
        .import("//t", std::slice::from_ref(&csv), &options)
        .await
        .unwrap();
    assert_eq!((report.rows_imported, report.rejected), (20, 10));
    assert_eq!(report.rejected_examples.len(), 10);
    let seen = seen.lock().unwrap().clone();
    assert_eq!(seen.len(), 10);
    assert_eq!(seen[1].row, 4);
    assert_eq!(seen[1].line, Some(5));
    assert_eq!(seen[1].input, json!({"k": "k3", "v": "bad"}));
    assert_eq!(
        seen[1].to_json()["reason"],
        "Invalid value for column \"k\": cannot parse \"k3\" as int64"
    );
    // One more rejected row than allowed fails the whole import.
    let strict = ImportOptions {
        max_rejected: 9,
        ..ImportOptions::default()
    };
    let db2 = table(KV).await;
    let err = db2.import("//t", &[csv], &strict).await.unwrap_err();
    assert!(
        err.to_string()
            .contains("10 input rows rejected (at most 9 allowed)"),
        "{err}"
    );
    assert!(rows(&db2, "k from [//t]").await.is_empty());
}

#[tokio::test]
async fn import_refuses_a_ttl_below_min_data_ttl_as_insert_does() {
    let dir = tempfile::tempdir().unwrap();
    let db = table(
        "{dynamic=%true; min_data_ttl=1000; max_data_ttl=5000; schema=[{name=k;type=int64;sort_order=ascending};{name=v;type=string};{name=\"$ttl\";type=uint64}]}",
    )
    .await;
    let message = "$ttl 999 is below the table's min_data_ttl 1000";
    let insert = db
        .insert_json_rows("//t", &[json!({"k": 1, "v": "a", "$ttl": 999})])
        .await
        .unwrap_err();
    assert!(insert.to_string().contains(message), "{insert}");
    let csv = write(
        dir.path(),
        "rows.csv",
        "k,v,$ttl\n1,a,999\n2,b,1000\n3,c,\n",
    );
    let jsonl = write(
        dir.path(),
        "rows.jsonl",
        "{\"k\":4,\"v\":\"d\",\"$ttl\":999}\n{\"k\":5,\"v\":\"e\",\"$ttl\":4000}\n",
    );
    let seen: Arc<Mutex<Vec<RejectedRow>>> = Arc::default();
    let sink = seen.clone();
    let options = ImportOptions {
        max_rejected: 2,
        on_rejected: Some(Arc::new(move |r: &RejectedRow| {
            sink.lock().unwrap().push(r.clone())
        })),
        ..ImportOptions::default()
    };
    let report = db.import("//t", &[csv, jsonl], &options).await.unwrap();
    assert_eq!((report.rows_imported, report.rejected), (3, 2));
    let reasons: Vec<String> = seen
        .lock()
        .unwrap()
        .iter()
        .map(|r| r.reason.clone())
        .collect();
    assert_eq!(reasons, [message, message]);
    assert_eq!(
        rows(&db, "k from [//t]").await,
        [[Value::Int64(2)], [Value::Int64(3)], [Value::Int64(5)]]
    );
}

#[tokio::test]
async fn computed_columns_are_filled_and_input_values_checked() {
    let dir = tempfile::tempdir().unwrap();
    let db = table("{dynamic=%true; schema=[{name=h;type=int64;sort_order=ascending;expression=\"k % 3\"};{name=k;type=int64;sort_order=ascending};{name=v;type=string}]}").await;
    let csv = write(dir.path(), "c.csv", "k,v\n4,a\n5,b\n");
    db.import("//t", &[csv], &ImportOptions::default())
        .await
        .unwrap();
    let json = write(
        dir.path(),
        "c.jsonl",
        "{\"h\": 0, \"k\": 6, \"v\": \"c\"}\n{\"h\": 1, \"k\": 7}\n{\"h\": 0, \"k\": 8}\n",
    );
    let err = db
        .import("//t", &[json], &ImportOptions::default())
        .await
        .unwrap_err();
    assert!(
        err.to_string()
            .contains("c.jsonl:3: computed column \"h\" is 0 in the input but k % 3 gives 2"),
        "{err}"
    );
    assert_eq!(
        rows(&db, "h, k from [//t]").await,
        vec![
            vec![Value::Int64(1), Value::Int64(4)],
            vec![Value::Int64(2), Value::Int64(5)],
        ]
    );
}

/// Columnar input (CSV, Parquet) evaluates computed columns column by column; a row whose
/// evaluation fails is found row by row and rejected with the row path's reason.
#[tokio::test]
async fn computed_columns_of_columnar_input_are_checked_and_failing_rows_rejected() {
    let dir = tempfile::tempdir().unwrap();
    let db = table("{dynamic=%true; schema=[{name=h;type=int64;sort_order=ascending;expression=\"100 / k\"};{name=k;type=int64;sort_order=ascending};{name=v;type=string}]}").await;
    let csv = write(dir.path(), "given.csv", "h,k,v\n50,2,a\n,4,b\n7,5,c\n");
    let err = db
        .import("//t", &[csv], &ImportOptions::default())
        .await
        .unwrap_err();
    assert!(
        err.to_string()
            .contains("given.csv:4: computed column \"h\" is 7 in the input but 100 / k gives 20"),
        "{err}"
    );
    let csv = write(dir.path(), "zero.csv", "k,v\n2,a\n0,b\n4,c\n");
    let tolerant = ImportOptions {
        max_rejected: 1,
        ..ImportOptions::default()
    };
    let report = db.import("//t", &[csv], &tolerant).await.unwrap();
    assert_eq!((report.rows_imported, report.rejected), (2, 1));
    let reason = &report.rejected_examples[0].reason;
    assert!(
        reason.contains("Cannot evaluate computed column \"h\""),
        "{reason}"
    );
    assert_eq!(
        rows(&db, "h, k, v from [//t]").await,
        vec![
            vec![Value::Int64(25), Value::Int64(4), Value::string("c")],
            vec![Value::Int64(50), Value::Int64(2), Value::string("a")],
        ]
    );
}

#[tokio::test]
async fn input_problems_are_clear_errors() {
    let dir = tempfile::tempdir().unwrap();
    let db = table(KV).await;
    let missing = dir.path().join("nope.csv").display().to_string();
    let err = db
        .import("//t", &[missing], &ImportOptions::default())
        .await
        .unwrap_err();
    assert!(
        format!("{:?}", anyhow_chain(&err)).contains("No such file"),
        "{err}"
    );
    let txt = write(dir.path(), "rows.txt", "k\n1\n");
    let err = db
        .import("//t", std::slice::from_ref(&txt), &ImportOptions::default())
        .await
        .unwrap_err();
    assert!(err.to_string().contains("cannot tell the format"), "{err}");
    let forced = ImportOptions {
        format: Some(FileFormat::Csv),
        ..ImportOptions::default()
    };
    db.import("//t", &[txt], &forced).await.unwrap();
    let glob = format!("{}/*.parquet", dir.path().display());
    let err = db
        .import("//t", &[glob], &ImportOptions::default())
        .await
        .unwrap_err();
    assert!(err.to_string().contains("no files match"), "{err}");
    let err = db
        .import("//missing", &[String::new()], &ImportOptions::default())
        .await
        .unwrap_err();
    assert!(err.to_string().contains("no such table"), "{err}");
}

fn anyhow_chain(e: &(dyn std::error::Error + 'static)) -> Vec<String> {
    let mut out = vec![e.to_string()];
    let mut cur = e.source();
    while let Some(s) = cur {
        out.push(s.to_string());
        cur = s.source();
    }
    out
}

#[tokio::test]
async fn ordered_tables_append_in_input_order() {
    let dir = tempfile::tempdir().unwrap();
    let db = table("{dynamic=%true; schema=[{name=a;type=int64};{name=b;type=string}]}").await;
    let csv = write(dir.path(), "q.csv", "a,b\n3,x\n1,y\n3,z\n");
    let report = db
        .import("//t", &[csv], &ImportOptions::default())
        .await
        .unwrap();
    assert_eq!((report.rows_imported, report.duplicates_folded), (3, 0));
    let got = rows(&db, "a, b from [//t]").await;
    assert_eq!(
        got,
        vec![
            vec![Value::Int64(3), Value::string("x")],
            vec![Value::Int64(1), Value::string("y")],
            vec![Value::Int64(3), Value::string("z")],
        ]
    );
}

#[tokio::test]
async fn ordered_tables_export_by_tablet_and_import_with_tablet_indexes() {
    let db = Database::open("memory://").unwrap();
    let queue = "{dynamic=%true; schema=[{name=a;type=int64};{name=\"$timestamp\";type=uint64}]; tablet_count=2}";
    db.create_table_from_text("//q", queue).await.unwrap();
    db.create_table_from_text("//copy", queue).await.unwrap();
    db.insert_json_rows(
        "//q",
        &[
            json!({"$tablet_index": 1, "a": 10}),
            json!({"$tablet_index": 0, "a": 20}),
        ],
    )
    .await
    .unwrap();
    db.insert_json_rows("//q", &[json!({"$tablet_index": 1, "a": 30})])
        .await
        .unwrap();
    let dir = tempfile::tempdir().unwrap();
    db.export("//q", dir.path(), &ExportOptions::default())
        .await
        .unwrap();
    let file = std::fs::File::open(dir.path().join("part-00000.parquet")).unwrap();
    let builder = ParquetRecordBatchReaderBuilder::try_new(file).unwrap();
    assert!(builder.metadata().row_group(0).sorting_columns().is_none());
    let batch = builder.build().unwrap().next().unwrap().unwrap();
    // Schema columns only ($timestamp included), tablet 0 before tablet 1, rows in order.
    assert_eq!(batch.num_columns(), 2);
    let a = batch
        .column(0)
        .as_any()
        .downcast_ref::<Int64Array>()
        .unwrap();
    assert_eq!(a.values(), &[20, 10, 30]);
    // The engine stamps $timestamp itself; a $tablet_index column places rows.
    let csv = write(
        dir.path(),
        "q.csv",
        "$tablet_index,a,$timestamp\n1,1,5\n0,2,5\n1,3,5\n",
    );
    db.import("//copy", &[csv], &ImportOptions::default())
        .await
        .unwrap();
    let got = rows(&db, "[$tablet_index], a, [$timestamp] > 5u from [//copy]").await;
    let row = |t: i64, a: i64| vec![Value::Int64(t), Value::Int64(a), Value::Boolean(true)];
    assert_eq!(got, vec![row(0, 2), row(1, 1), row(1, 3)]);
    let bad = write(dir.path(), "bad.csv", "$tablet_index,a\n2,1\n");
    let err = db
        .import("//copy", &[bad], &ImportOptions::default())
        .await
        .unwrap_err();
    assert!(
        err.to_string()
            .contains("bad.csv:2: Invalid $tablet_index 2: the table has 2 tablets"),
        "{err}"
    );
}

fn read_parts(dir: &Path) -> Vec<PathBuf> {
    let mut parts: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    parts.sort();
    parts
}

#[tokio::test]
async fn export_writes_key_sorted_parts_with_sorting_columns_and_the_schema() {
    let db = table("{dynamic=%true; schema=[{name=k;type=int64;sort_order=ascending};{name=s;type=utf8;sort_order=ascending};{name=v;type=string}]; pivot_keys=[[];[40]]}").await;
    let rows_in: Vec<_> = (0..100)
        .rev()
        .map(|i| json!({"k": i % 50, "s": format!("s{i}"), "v": "x"}))
        .collect();
    db.insert_json_rows("//t", &rows_in).await.unwrap();
    let dir = tempfile::tempdir().unwrap();
    let options = ExportOptions {
        rows_per_file: 30,
        ..ExportOptions::default()
    };
    let report = db.export("//t", dir.path(), &options).await.unwrap();
    assert_eq!(report.rows, 100);
    let parts = read_parts(dir.path());
    assert_eq!(parts, report.files);
    let names: Vec<_> = parts
        .iter()
        .map(|p| p.file_name().unwrap().to_string_lossy().into_owned())
        .collect();
    assert_eq!(
        names,
        [
            "part-00000.parquet",
            "part-00001.parquet",
            "part-00002.parquet",
            "part-00003.parquet"
        ]
    );
    let schema_text = dynql::yson::to_text(&db.get_attribute("//t", Some("schema")).await.unwrap());
    let mut keys = Vec::new();
    for part in &parts {
        let builder =
            ParquetRecordBatchReaderBuilder::try_new(std::fs::File::open(part).unwrap()).unwrap();
        let meta = builder.metadata().clone();
        let kv = meta.file_metadata().key_value_metadata().unwrap();
        let stored = kv.iter().find(|e| e.key == SCHEMA_METADATA_KEY).unwrap();
        assert_eq!(stored.value.as_deref(), Some(schema_text.as_str()));
        for rg in meta.row_groups() {
            let sorting = rg.sorting_columns().unwrap();
            assert_eq!(sorting.len(), 2);
            assert!(sorting
                .iter()
                .enumerate()
                .all(|(i, c)| c.column_idx == i as i32 && !c.descending && c.nulls_first));
        }
        let arrow_schema = builder.schema().clone();
        assert_eq!(arrow_schema.field(0).data_type(), &DataType::Int64);
        assert_eq!(arrow_schema.field(1).data_type(), &DataType::Utf8);
        assert_eq!(arrow_schema.field(1).metadata()["yt:type"], "utf8");
        for batch in builder.build().unwrap() {
            let batch = batch.unwrap();
            let k = batch
                .column(0)
                .as_any()
                .downcast_ref::<Int64Array>()
                .unwrap();
            let s = batch
                .column(1)
                .as_any()
                .downcast_ref::<StringArray>()
                .unwrap();
            for r in 0..batch.num_rows() {
                keys.push((k.value(r), s.value(r).as_bytes().to_vec()));
            }
        }
    }
    let mut sorted = keys.clone();
    sorted.sort();
    assert_eq!(keys.len(), 100);
    assert_eq!(keys, sorted, "parts read in name order are in key order");
}

#[tokio::test]
async fn export_reads_one_snapshot_and_guards_the_directory() {
    let db = table(KV).await;
    db.insert_json_rows("//t", &[json!({"k": 1, "v": "a"})])
        .await
        .unwrap();
    let ts: Timestamp = db.store().last_committed_timestamp().await.unwrap();
    db.insert_json_rows("//t", &[json!({"k": 2, "v": "b"})])
        .await
        .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let at = ExportOptions {
        timestamp: Some(ts),
        ..ExportOptions::default()
    };
    let report = db.export("//t", dir.path(), &at).await.unwrap();
    assert_eq!((report.rows, report.timestamp), (1, ts));
    let err = db
        .export("//t", dir.path(), &ExportOptions::default())
        .await
        .unwrap_err();
    assert!(err.to_string().contains("is not empty (1 entry)"), "{err}");
    // A forced export that fails leaves the old parts and no temporary files; here the
    // temporary name of the first part is taken by a directory.
    std::fs::create_dir(
        dir.path()
            .join(format!(".part-00000.parquet.tmp-{}", std::process::id())),
    )
    .unwrap();
    let force = ExportOptions {
        force: true,
        ..ExportOptions::default()
    };
    assert!(db.export("//t", dir.path(), &force).await.is_err());
    std::fs::remove_dir(
        dir.path()
            .join(format!(".part-00000.parquet.tmp-{}", std::process::id())),
    )
    .unwrap();
    assert_eq!(
        read_parts(dir.path()),
        [dir.path().join("part-00000.parquet")]
    );
    // A forced export replaces the parts (two files now: no stale third part remains).
    std::fs::write(dir.path().join("part-00002.parquet"), b"stale").unwrap();
    std::fs::write(dir.path().join("README"), b"kept").unwrap();
    let force = ExportOptions {
        force: true,
        rows_per_file: 1,
        ..ExportOptions::default()
    };
    let report = db.export("//t", dir.path(), &force).await.unwrap();
    assert_eq!(report.rows, 2);
    let names: Vec<_> = read_parts(dir.path())
        .iter()
        .map(|p| p.file_name().unwrap().to_string_lossy().into_owned())
        .collect();
    assert_eq!(
        names,
        ["README", "part-00000.parquet", "part-00001.parquet"]
    );
}

#[tokio::test]
async fn export_then_import_round_trips_every_type() {
    let schema = "{dynamic=%true; schema=[{name=h;type=uint64;sort_order=ascending;expression=\"farm_hash(k) % 4\"};{name=k;type=int64;sort_order=ascending};{name=i8;type=int8};{name=u;type=uint64};{name=d;type=double};{name=b;type=boolean};{name=s;type=string};{name=t;type=utf8};{name=a;type=any};{name=r;type=string;required=%true}]; tablet_count=3}";
    let db = Database::open("memory://").unwrap();
    db.create_table_from_text("//src", schema).await.unwrap();
    db.create_table_from_text("//dst", schema).await.unwrap();
    let rows_in: Vec<_> = (0..50)
        .map(|i| {
            json!({"k": i - 25, "i8": (i % 7) - 3, "u": u64::MAX - i as u64, "d": i as f64 / 3.0,
                   "b": i % 2 == 0, "s": format!("s\u{00ff}{i}"), "t": format!("t{i}"),
                   "a": {"x": [i, "y"]}, "r": "req"})
        })
        .collect();
    db.insert_json_rows("//src", &rows_in).await.unwrap();
    db.insert_json_rows("//src", &[json!({"k": 100, "r": "only required"})])
        .await
        .unwrap();
    let dir = tempfile::tempdir().unwrap();
    db.export("//src", dir.path(), &ExportOptions::default())
        .await
        .unwrap();
    let files = vec![format!("file://{}/*.parquet", dir.path().display())];
    let report = db
        .import("//dst", &files, &ImportOptions::default())
        .await
        .unwrap();
    assert_eq!(report.rows_imported, 51);
    let all = "* from [//src]";
    assert_eq!(
        rows(&db, all).await,
        rows(&db, "* from [//dst]").await,
        "select-rows output differs after the round trip"
    );
}

#[tokio::test]
async fn exported_files_open_as_a_file_table_with_the_same_schema_and_rows() {
    let db = table("{dynamic=%true; schema=[{name=h;type=uint64;sort_order=ascending;expression=\"farm_hash(k) % 8\"};{name=k;type=int64;sort_order=ascending};{name=v;type=utf8};{name=a;type=any}]; tablet_count=3}").await;
    let rows_in: Vec<_> = (0..300)
        .map(|i| json!({"k": i, "v": format!("v{i}"), "a": [i]}))
        .collect();
    db.insert_json_rows("//t", &rows_in).await.unwrap();
    let dir = tempfile::tempdir().unwrap();
    let options = ExportOptions {
        rows_per_file: 70,
        ..ExportOptions::default()
    };
    db.export("//t", dir.path(), &options).await.unwrap();
    // The batch path: schema and key from the files' metadata, sort order checked as it reads.
    let files =
        dynql_storage::files::FileTable::open(&format!("{}/*.parquet", dir.path().display()), None)
            .await
            .unwrap();
    assert_eq!(files.file_count(), 5);
    let schema = db.store().table("//t").await.unwrap().schema;
    assert_eq!(files.schema(), &schema);
    let (read, _) = files.scan_rows(None).await.unwrap();
    assert_eq!(read, rows(&db, "* from [//t]").await);
}

#[tokio::test]
async fn parquet_type_mismatches_are_rejected_per_row() {
    let dir = tempfile::tempdir().unwrap();
    let db = table(KV).await;
    let file = write_parquet(
        dir.path(),
        "m.parquet",
        vec![
            (
                "k",
                Arc::new(UInt64Array::from(vec![1, u64::MAX])) as ArrayRef,
            ),
            ("n", Arc::new(Int64Array::from(vec![Some(-5), Some(5)]))),
        ],
    );
    let options = ImportOptions {
        max_rejected: 5,
        ..ImportOptions::default()
    };
    let report = db.import("//t", &[file], &options).await.unwrap();
    assert_eq!((report.rows_imported, report.rejected), (0, 2));
    let reasons: Vec<String> = report
        .rejected_examples
        .iter()
        .map(|r| r.to_string())
        .collect();
    assert!(reasons[0].ends_with("m.parquet row 1: Invalid value for column \"n\": cannot store int64 -5 in a column of type uint64"), "{reasons:?}");
    assert!(
        reasons[1].contains("cannot store uint64 18446744073709551615u in a column of type int64"),
        "{reasons:?}"
    );
}

mod model {
    use std::collections::BTreeMap;

    use proptest::prelude::*;

    use super::*;

    proptest! {
        #![proptest_config(ProptestConfig { cases: 24, ..ProptestConfig::default() })]
        /// Import of rows with repeated keys, split over files of different formats, equals a
        /// map where each key's last write wins.
        #[test]
        fn import_equals_a_last_write_wins_map(
            rows in proptest::collection::vec((0i64..20, 0u32..1000, 0u8..3), 0..60)
        ) {
            let runtime = tokio::runtime::Runtime::new().unwrap();
            runtime.block_on(async {
                let dir = tempfile::tempdir().unwrap();
                let db = table(KV).await;
                let mut model = BTreeMap::new();
                let mut files = Vec::new();
                // Consecutive rows with the same format share a file.
                let mut start = 0;
                while start < rows.len() {
                    let format = rows[start].2;
                    let end = rows[start..].iter().position(|r| r.2 != format).map_or(rows.len(), |p| start + p);
                    let part = &rows[start..end];
                    let name = format!("f{}", files.len());
                    files.push(match format {
                        0 => {
                            let text: String = part.iter().map(|(k, v, _)| format!("{k},{v}\n")).collect();
                            write(dir.path(), &format!("{name}.csv"), &format!("k,v\n{text}"))
                        }
                        1 => {
                            let text: String = part.iter().map(|(k, v, _)| format!("{{\"k\":{k},\"v\":\"{v}\"}}\n")).collect();
                            write(dir.path(), &format!("{name}.jsonl"), &text)
                        }
                        _ => write_parquet(dir.path(), &format!("{name}.parquet"), vec![
                            ("k", Arc::new(Int64Array::from(part.iter().map(|r| r.0).collect::<Vec<_>>())) as ArrayRef),
                            ("v", Arc::new(StringArray::from(part.iter().map(|r| r.1.to_string()).collect::<Vec<_>>()))),
                        ]),
                    });
                    for (k, v, _) in part {
                        model.insert(*k, v.to_string());
                    }
                    start = end;
                }
                if files.is_empty() {
                    return;
                }
                let report = db.import("//t", &files, &ImportOptions::default()).await.unwrap();
                assert_eq!(report.rows_imported as usize, model.len());
                assert_eq!(report.duplicates_folded as usize, rows.len() - model.len());
                let expected: Vec<Vec<Value>> = model
                    .into_iter()
                    .map(|(k, v)| vec![Value::Int64(k), Value::string(v)])
                    .collect();
                assert_eq!(super::rows(&db, "k, v from [//t]").await, expected);
            });
        }
    }
}
