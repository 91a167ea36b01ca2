//! `select_stream`: rows handed on as they are computed, as Arrow batches in the result's
//! schema, with errors and row limits met mid-stream.

use dynql::arrow::array::AsArray;
use dynql::arrow::datatypes::DataType;
use dynql::{Database, ErrorKind, SelectOptions, Value};
use futures::StreamExt;
use serde_json::json;

/// `//t` with keys 0..n in key order and a `utf8` and a `string` column.
async fn table(n: i64) -> Database {
    let db = Database::open("memory://").unwrap();
    db.create_table_from_text(
        "//t",
        "{dynamic=%true; schema=[{name=k;type=int64;sort_order=ascending};{name=name;type=utf8};{name=raw;type=string}]}",
    )
    .await
    .unwrap();
    let rows: Vec<_> = (0..n)
        .map(|k| json!({"k": k, "name": format!("имя{}", k % 3), "raw": "x"}))
        .collect();
    db.insert_json_rows("//t", &rows).await.unwrap();
    db.flush("//t").await.unwrap();
    db
}

#[tokio::test]
async fn rows_before_a_later_error_come_first_then_the_error_ends_the_stream() {
    let db = table(30_000).await;
    // Division by zero at k = 25000, well after the first batch in scan order.
    let mut stream = db
        .select_stream(
            "k, 1 / (k - 25000) as x from [//t]",
            &SelectOptions::default(),
        )
        .await
        .unwrap();
    let first = stream.next().await.unwrap().unwrap();
    assert!(first.num_rows() > 0);
    assert_eq!(
        first
            .column(0)
            .as_primitive::<dynql::arrow::datatypes::Int64Type>()
            .value(0),
        0
    );
    let mut error = None;
    while let Some(item) = stream.next().await {
        if let Err(e) = item {
            error = Some(e);
            break;
        }
    }
    let error = error.expect("the division by zero fails the stream");
    assert!(error.to_string().contains("Division by zero"), "{error}");
    assert!(stream.next().await.is_none(), "nothing follows the error");
    assert!(
        stream.statistics().is_none(),
        "a failed query has no statistics"
    );
}

#[tokio::test]
async fn string_and_utf8_columns_are_text_and_binary_strings_gives_bytes() {
    let db = table(10).await;
    let stream = db
        .select_stream(
            "k, name, raw, concat(name, 'x') as c from [//t] where k < 3",
            &SelectOptions::default(),
        )
        .await
        .unwrap();
    let schema = stream.schema();
    let types: Vec<&DataType> = schema.fields().iter().map(|f| f.data_type()).collect();
    assert_eq!(
        types,
        [
            &DataType::Int64,
            &DataType::Utf8,
            &DataType::Utf8,
            &DataType::Utf8
        ]
    );
    let yt_types: Vec<&str> = schema
        .fields()
        .iter()
        .map(|f| f.metadata()["yt:type"].as_str())
        .collect();
    assert_eq!(yt_types, ["int64", "utf8", "string", "string"]);
    let batches: Vec<_> = stream.map(|b| b.unwrap()).collect().await;
    let names: Vec<&str> = batches
        .iter()
        .flat_map(|b| b.column(1).as_string::<i32>().iter().map(|v| v.unwrap()))
        .collect();
    assert_eq!(names, ["имя0", "имя1", "имя2"]);
    for b in &batches {
        assert_eq!(b.schema(), schema);
    }

    // A group key that is a utf8 column stays utf8; an aggregate of it is a string.
    let stream = db
        .select_stream(
            "name, max(name) as m, sum(1) as n from [//t] group by name",
            &SelectOptions::default(),
        )
        .await
        .unwrap();
    let schema = stream.schema();
    assert_eq!(schema.field(0).data_type(), &DataType::Utf8);
    assert_eq!(schema.field(1).data_type(), &DataType::Utf8);
    assert_eq!(schema.field(1).metadata()["yt:type"], "string");
    let result = stream.into_result().await.unwrap();
    assert_eq!(result.rows.len(), 3);

    // Bytes when asked: `string` columns are Binary, `utf8` ones stay text.
    let bytes = SelectOptions {
        binary_strings: true,
        ..SelectOptions::default()
    };
    let stream = db
        .select_stream("k, name, raw from [//t] where k < 3", &bytes)
        .await
        .unwrap();
    let schema = stream.schema();
    assert_eq!(schema.field(1).data_type(), &DataType::Utf8);
    assert_eq!(schema.field(2).data_type(), &DataType::Binary);
    let batches: Vec<_> = stream.map(|b| b.unwrap()).collect().await;
    assert!(batches.iter().all(|b| b.schema() == schema));
}

#[tokio::test]
async fn the_collected_stream_is_the_query_result_and_has_its_statistics() {
    let db = table(20_000).await;
    let query = "k, name from [//t] where k >= 100 and k < 15000";
    let collected = db
        .select_rows(query, &SelectOptions::default())
        .await
        .unwrap();
    let mut stream = db
        .select_stream(query, &SelectOptions::default())
        .await
        .unwrap();
    assert!(stream.statistics().is_none(), "statistics come at the end");
    let mut rows = Vec::new();
    while let Some(batch) = stream.next_rows().await {
        rows.extend(batch.unwrap());
    }
    assert_eq!(rows, collected.rows);
    assert_eq!(rows.len(), 14_900);
    assert_eq!(rows[0], vec![Value::Int64(100), Value::string("имя1")]);
    let statistics = stream.statistics().unwrap();
    assert_eq!(statistics, collected.statistics);
    assert_eq!(statistics.rows_written, 14_900);
}

#[tokio::test]
async fn the_output_row_limit_fails_mid_stream_or_cuts_in_scan_order() {
    let db = table(30_000).await;
    let options = SelectOptions {
        output_row_limit: 20_000,
        input_row_limit: 100_000,
        ..SelectOptions::default()
    };
    let mut stream = db.select_stream("k from [//t]", &options).await.unwrap();
    let mut rows = 0;
    let error = loop {
        match stream
            .next()
            .await
            .expect("the stream fails before it ends")
        {
            Ok(batch) => rows += batch.num_rows(),
            Err(e) => break e,
        }
    };
    assert_eq!(error.kind(), ErrorKind::LimitExceeded);
    assert!(rows > 0 && rows <= 20_000, "{rows} rows before the error");

    let cut = SelectOptions {
        fail_on_incomplete_result: false,
        ..options
    };
    let mut stream = db.select_stream("k from [//t]", &cut).await.unwrap();
    let mut keys = Vec::new();
    while let Some(batch) = stream.next_rows().await {
        keys.extend(batch.unwrap());
    }
    let expected: Vec<_> = (0..20_000).map(|k| vec![Value::Int64(k)]).collect();
    assert_eq!(keys, expected);
    assert!(stream.statistics().unwrap().incomplete_output);
}

#[tokio::test]
async fn a_dropped_stream_stops_and_the_database_goes_on() {
    let db = table(30_000).await;
    let options = SelectOptions {
        input_row_limit: 100_000,
        ..SelectOptions::default()
    };
    for _ in 0..3 {
        let mut stream = db
            .select_stream("k, name from [//t]", &options)
            .await
            .unwrap();
        let first = stream.next().await.unwrap().unwrap();
        assert!(first.num_rows() > 0 && first.num_rows() < 30_000);
        drop(stream);
    }
    db.insert_json_rows("//t", &[json!({"k": -1, "name": "new", "raw": "y"})])
        .await
        .unwrap();
    let r = db
        .select_rows("sum(1) as n from [//t] group by 1 as g", &options)
        .await
        .unwrap();
    assert_eq!(r.rows[0][0], Value::Int64(30_001));
}
