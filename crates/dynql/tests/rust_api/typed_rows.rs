//! Typed access to result rows: `Row::get` for each YT type, and rows into structs through
//! serde, with errors that name the row and the column.

use dynql::{
    Database, ErrorKind, FileTables, LookupOptions, SelectOptions, Timestamp, Value, Yson,
};

/// One column of each YT type family, and a nullable one.
const SCHEMA: &str = r#"{dynamic=%true; schema=[
    {name=id;type=int64;sort_order=ascending};
    {name=small;type=int8};
    {name=count;type=uint64};
    {name=level;type=uint8};
    {name=ratio;type=double};
    {name=flag;type=boolean};
    {name=name;type=utf8};
    {name=payload;type=string};
    {name=doc;type=any};
    {name=at;type=timestamp};
    {name=day;type=date};
    {name=note;type=string}]}"#;

async fn table() -> Database {
    let db = Database::open("memory://").unwrap();
    db.create_table_from_text("//t", SCHEMA).await.unwrap();
    let row = dynql::yson::parse(
        br#"{id=1; small=-3; count=18446744073709551615u; level=200u; ratio=0.5; flag=%true;
             name="Ann"; payload="\xff\x00"; doc={tags=[a;b]; depth=2}; at=1700000000000000u;
             day=19000u}"#,
    )
    .unwrap();
    db.insert_rows("//t", &[row]).await.unwrap();
    db
}

async fn all(db: &Database) -> dynql::SelectResult {
    db.select_rows("* from [//t]", &SelectOptions::default())
        .await
        .unwrap()
}

#[tokio::test]
async fn each_yt_type_reads_as_its_rust_types() {
    let db = table().await;
    let result = all(&db).await;
    let row = result.row(0).unwrap();
    assert_eq!(row.get::<i64>("id").unwrap(), 1);
    assert_eq!(row.get::<i64>(0).unwrap(), 1);
    assert_eq!(row.get::<i8>("small").unwrap(), -3);
    assert_eq!(row.get::<u64>("count").unwrap(), u64::MAX);
    assert_eq!(row.get::<u8>("level").unwrap(), 200);
    assert_eq!(row.get::<i64>("level").unwrap(), 200);
    assert_eq!(row.get::<f64>("ratio").unwrap(), 0.5);
    assert!(row.get::<bool>("flag").unwrap());
    assert_eq!(row.get::<String>("name").unwrap(), "Ann");
    assert_eq!(row.get::<Vec<u8>>("payload").unwrap(), vec![0xff, 0x00]);
    let doc = row.get::<Yson>("doc").unwrap();
    assert_eq!(doc.get("depth"), Some(&Yson::Int64(2)));
    assert_eq!(row.get::<u64>("at").unwrap(), 1_700_000_000_000_000);
    assert_eq!(row.get::<u64>("day").unwrap(), 19_000);
    assert_eq!(row.get::<Option<String>>("note").unwrap(), None);
    assert_eq!(row.get::<Option<i64>>("id").unwrap(), Some(1));
    assert_eq!(row.get::<Value>("note").unwrap(), Value::Null);
    assert_eq!(row.value("name"), Some(&Value::string("Ann")));
    assert_eq!(row.len(), 12);
}

#[tokio::test]
async fn wrong_types_and_unknown_columns_are_clear_errors() {
    let db = table().await;
    let result = all(&db).await;
    let row = result.row(0).unwrap();
    let cases: Vec<(dynql::Error, &str)> = vec![
        (
            row.get::<String>("id").unwrap_err(),
            "Column \"id\": cannot read int64 value 1 as String",
        ),
        (
            row.get::<i64>("count").unwrap_err(),
            "Column \"count\": cannot read uint64 value 18446744073709551615 as i64: it does not fit",
        ),
        (
            row.get::<i64>("note").unwrap_err(),
            "Column \"note\": cannot read null as i64 (read it as Option<i64>)",
        ),
        (
            row.get::<String>("payload").unwrap_err(),
            "Column \"payload\": cannot read string value \"\u{fffd}\\0\" as String (the bytes are not valid UTF-8: read it as Vec<u8>)",
        ),
        (
            row.get::<String>("doc").unwrap_err(),
            "Column \"doc\": cannot read any value as String (read an any column as dynql::Yson)",
        ),
    ];
    for (error, text) in cases {
        assert_eq!(error.to_string(), text);
        assert_eq!(error.kind(), ErrorKind::InvalidInput);
    }
    let unknown = row.get::<i64>("idd").unwrap_err();
    assert!(
        unknown
            .to_string()
            .starts_with("No such column \"idd\" in the result (its columns: id, small, count"),
        "{unknown}"
    );
    assert!(matches!(unknown, dynql::Error::NoSuchColumn { .. }));
    assert!(row.get::<i64>(99).is_err());
}

#[derive(serde::Deserialize, Debug, PartialEq)]
struct Doc {
    tags: Vec<String>,
    depth: u32,
}

#[derive(serde::Deserialize, Debug, PartialEq)]
struct Record {
    id: i64,
    small: i32,
    count: u64,
    ratio: f64,
    flag: bool,
    name: String,
    payload: Vec<u8>,
    doc: Doc,
    at: u64,
    note: Option<String>,
    /// No such column: an `Option` field is `None`.
    absent: Option<i64>,
}

#[tokio::test]
async fn rows_deserialize_into_structs_and_tuples() {
    let db = table().await;
    db.insert_json_rows(
        "//t",
        &[serde_json::json!({"id": 2, "name": "Bob", "note": "x"})],
    )
    .await
    .unwrap();
    let result = db
        .select_rows("* from [//t] where id = 1", &SelectOptions::default())
        .await
        .unwrap();
    let records: Vec<Record> = result.deserialize().unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(
        records[0],
        Record {
            id: 1,
            small: -3,
            count: u64::MAX,
            ratio: 0.5,
            flag: true,
            name: "Ann".into(),
            payload: vec![0xff, 0x00],
            doc: Doc {
                tags: vec!["a".into(), "b".into()],
                depth: 2
            },
            at: 1_700_000_000_000_000,
            note: None,
            absent: None,
        }
    );
    assert_eq!(
        result.row(0).unwrap().deserialize::<Record>().unwrap(),
        records[0]
    );

    // Row #1 has nulls where `Record` wants values: the error names the row and column.
    let partial = db
        .select_rows("* from [//t] where id = 2", &SelectOptions::default())
        .await
        .unwrap();
    let e = partial.deserialize::<Record>().unwrap_err();
    assert_eq!(e.kind(), ErrorKind::InvalidInput);
    assert!(
        e.to_string()
            .starts_with("Row #0, column \"small\": invalid type: null"),
        "{e}"
    );

    // Tuples by position, over a SQL result too.
    let pairs: Vec<(i64, String)> = db
        .sql(
            r#"SELECT id, name FROM "//t" ORDER BY id"#,
            &FileTables::default(),
            Timestamp::SYNC_LAST_COMMITTED,
        )
        .await
        .unwrap()
        .deserialize()
        .unwrap();
    assert_eq!(pairs, vec![(1, "Ann".to_string()), (2, "Bob".to_string())]);
}

#[tokio::test]
async fn lookups_read_missing_rows_as_none() {
    let db = table().await;
    let keys = [
        dynql::yson::parse(b"{id=7}").unwrap(),
        dynql::yson::parse(b"{id=1}").unwrap(),
    ];
    let options = LookupOptions {
        keep_missing_rows: true,
        column_names: Some(vec!["id".into(), "name".into()]),
        ..LookupOptions::default()
    };
    let found = db.lookup_rows("//t", &keys, &options).await.unwrap();
    let names: Vec<Option<String>> = found
        .iter()
        .map(|r| r.map(|r| r.get::<String>("name").unwrap()))
        .collect();
    assert_eq!(names, vec![None, Some("Ann".to_string())]);
    #[derive(serde::Deserialize, Debug, PartialEq)]
    struct Named {
        id: i64,
        name: String,
    }
    let rows: Vec<Option<Named>> = found.deserialize().unwrap();
    assert_eq!(
        rows,
        vec![
            None,
            Some(Named {
                id: 1,
                name: "Ann".into()
            })
        ]
    );
    let e = found.deserialize::<Named>().unwrap_err();
    assert!(
        e.to_string().starts_with("Row #0: no row has this key"),
        "{e}"
    );
}
