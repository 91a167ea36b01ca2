//! Batch analytics over Parquet files: YT QL over `[file:…]` and mapped names (key ranges
//! pruning row groups, grouping, key-order limits, joins with dynamic tables), and SQL over
//! the same tables.

use std::path::Path;
use std::sync::Arc;

use arrow::array::{ArrayRef, Int64Array, StringArray};
use arrow::datatypes::{DataType, Field, Schema};
use arrow::record_batch::RecordBatch;
use dynql::{Database, FileTables, SelectOptions, Timestamp, Value};
use parquet::arrow::ArrowWriter;
use parquet::file::metadata::SortingColumn;
use parquet::file::properties::WriterProperties;

/// `parts` files of 1000 rows `(id, region, amount)` sorted by `id` (declared), row groups of
/// 100 rows; region = id % 3, amount = id * 2.
fn write_exports(dir: &Path, parts: i64) {
    std::fs::create_dir_all(dir).unwrap();
    let schema = Arc::new(Schema::new(vec![
        Field::new("id", DataType::Int64, false),
        Field::new("region", DataType::Utf8, true),
        Field::new("amount", DataType::Int64, true),
    ]));
    for p in 0..parts {
        let ids: Vec<i64> = (p * 1000..(p + 1) * 1000).collect();
        let columns: Vec<ArrayRef> = vec![
            Arc::new(Int64Array::from_iter_values(ids.iter().copied())),
            Arc::new(StringArray::from_iter_values(
                ids.iter().map(|i| format!("r{}", i % 3)),
            )),
            Arc::new(Int64Array::from_iter_values(ids.iter().map(|i| i * 2))),
        ];
        let batch = RecordBatch::try_new(schema.clone(), columns).unwrap();
        let props = WriterProperties::builder()
            .set_max_row_group_row_count(Some(100))
            .set_sorting_columns(Some(vec![SortingColumn {
                column_idx: 0,
                descending: false,
                nulls_first: true,
            }]))
            .build();
        let file = std::fs::File::create(dir.join(format!("part-{p:05}.parquet"))).unwrap();
        let mut w = ArrowWriter::try_new(file, schema.clone(), Some(props)).unwrap();
        w.write(&batch).unwrap();
        w.close().unwrap();
    }
}

fn ints(rows: &[Vec<Value>]) -> Vec<Vec<i64>> {
    rows.iter()
        .map(|r| {
            r.iter()
                .map(|v| match v {
                    Value::Int64(i) => *i,
                    Value::Uint64(u) => *u as i64,
                    other => panic!("not an integer: {other:?}"),
                })
                .collect()
        })
        .collect()
}

#[tokio::test]
async fn yt_ql_over_files_prunes_by_key_groups_and_joins() {
    let dir = tempfile::tempdir().unwrap();
    write_exports(&dir.path().join("exports"), 3);
    let db = Database::open("memory://").unwrap();
    let files = format!("file:{}/exports/*.parquet", dir.path().display());
    let options = SelectOptions::default();

    // A point reads one row group of one file.
    let q = format!("id, amount from [{files}] where id = 1234");
    let r = db.select_rows(&q, &options).await.unwrap();
    assert_eq!(ints(&r.rows), vec![vec![1234, 2468]]);
    assert_eq!(r.statistics.scan.chunks, (1, 3));
    assert_eq!(r.statistics.scan.row_groups, (1, 30));
    let e = db.explain_query(&q, &options).await.unwrap();
    assert_eq!(e.ranges[0].to_string(), "[1234]..[1234,MAX]");
    assert_eq!(e.read.row_groups, (1, 30));

    // Grouping over every row (the column-wise path).
    let q = format!("region, sum(amount) as s, sum(1) as n from [{files}] group by region order by region limit 10");
    let r = db.select_rows(&q, &options).await.unwrap();
    assert_eq!(r.rows.len(), 3);
    assert_eq!(r.rows[0][0], Value::String(b"r0".to_vec()));
    assert_eq!(r.rows[0][2], Value::Int64(1000));
    let total: i64 = (0..3000).filter(|i| i % 3 == 0).map(|i| i * 2).sum();
    assert_eq!(r.rows[0][1], Value::Int64(total));

    // ORDER BY the key with a LIMIT stops after the first rows.
    let q = format!("id from [{files}] where id >= 1990 order by id limit 3");
    let r = db.select_rows(&q, &options).await.unwrap();
    assert_eq!(ints(&r.rows), vec![vec![1990], vec![1991], vec![1992]]);
    assert!(r.statistics.rows_read <= 100, "{:?}", r.statistics);

    // A mapped name, joined from a dynamic table by the files' key.
    db.create_table_from_text(
        "//orders",
        "{dynamic=%true; schema=[{name=o;type=int64;sort_order=ascending};{name=id;type=int64}]}",
    )
    .await
    .unwrap();
    db.insert_json_rows(
        "//orders",
        &[
            serde_json::json!({"o": 1, "id": 7}),
            serde_json::json!({"o": 2, "id": 2999}),
        ],
    )
    .await
    .unwrap();
    let mapped = SelectOptions {
        files: FileTables {
            tables: vec![(
                "//exports".into(),
                format!("{}/exports", dir.path().display()),
            )],
            keys: vec![],
        },
        ..SelectOptions::default()
    };
    let q = "o, amount from [//orders] join [//exports] using id order by o limit 10";
    let r = db.select_rows(q, &mapped).await.unwrap();
    assert_eq!(ints(&r.rows), vec![vec![1, 14], vec![2, 5998]]);

    // Mistakes are clear errors.
    let e = db
        .select_rows("* from [file:/nonexistent/dir/*.parquet]", &options)
        .await
        .unwrap_err();
    assert!(e.to_string().contains("No Parquet files match"), "{e}");
    let clash = SelectOptions {
        files: FileTables {
            tables: vec![("//orders".into(), files["file:".len()..].to_string())],
            keys: vec![],
        },
        ..SelectOptions::default()
    };
    let e = db
        .select_rows("* from [//orders]", &clash)
        .await
        .unwrap_err();
    assert!(e.to_string().contains("names both a dynamic table"), "{e}");
}

#[tokio::test]
async fn a_given_key_makes_unsorted_declarations_queryable_by_range() {
    let dir = tempfile::tempdir().unwrap();
    write_exports(&dir.path().join("e"), 1);
    let db = Database::open("memory://").unwrap();
    let files = format!("file:{}/e/part-00000.parquet", dir.path().display());
    // `amount` is sorted too (id * 2): as the key, WHERE on it prunes row groups.
    let options = SelectOptions {
        files: FileTables {
            tables: vec![],
            keys: vec![(None, vec!["amount".into()])],
        },
        ..SelectOptions::default()
    };
    let q = format!("id from [{files}] where amount between 500 and 503");
    let r = db.select_rows(&q, &options).await.unwrap();
    assert_eq!(ints(&r.rows), vec![vec![250], vec![251]]);
    assert_eq!(r.statistics.scan.row_groups, (1, 10));
}

#[tokio::test]
async fn sql_runs_over_dynamic_tables_and_files() {
    let dir = tempfile::tempdir().unwrap();
    write_exports(&dir.path().join("exports"), 2);
    let db = Database::open("memory://").unwrap();
    db.create_table_from_text(
        "//regions",
        "{dynamic=%true; schema=[{name=region;type=string;sort_order=ascending};{name=name;type=string}]}",
    )
    .await
    .unwrap();
    db.insert_json_rows(
        "//regions",
        &[
            serde_json::json!({"region": "r0", "name": "north"}),
            serde_json::json!({"region": "r1", "name": "south"}),
        ],
    )
    .await
    .unwrap();
    let files = FileTables {
        tables: vec![(
            "sales".into(),
            format!("{}/exports/*.parquet", dir.path().display()),
        )],
        keys: vec![],
    };
    let ts = Timestamp::SYNC_LAST_COMMITTED;
    let r = db
        .sql(
            r#"SELECT g.name, count(*) AS n, sum(s.amount) AS total
               FROM sales s JOIN "//regions" g ON s.region = g.region
               GROUP BY g.name ORDER BY g.name"#,
            &files,
            ts,
        )
        .await
        .unwrap();
    let names: Vec<&str> = r.columns.iter().map(|(n, _)| n.as_str()).collect();
    assert_eq!(names, ["name", "n", "total"]);
    assert_eq!(r.rows.len(), 2);
    assert_eq!(r.rows[0][0], Value::String(b"north".to_vec()));
    assert_eq!(r.rows[0][1], Value::Int64(667));
    // Files named in the statement itself, and SQL errors.
    let q = format!(
        r#"SELECT max(id) AS m FROM "file:{}/exports/part-00001.parquet""#,
        dir.path().display()
    );
    let r = db.sql(&q, &FileTables::default(), ts).await.unwrap();
    assert_eq!(ints(&r.rows), vec![vec![1999]]);
    let e = db
        .sql("SELEC 1", &FileTables::default(), ts)
        .await
        .unwrap_err();
    assert!(e.to_string().contains("SELEC"), "{e}");
    let e = db
        .sql(r#"SELECT * FROM "//missing""#, &FileTables::default(), ts)
        .await
        .unwrap_err();
    assert!(e.to_string().contains("//missing"), "{e}");
}

#[tokio::test]
async fn sql_over_sorted_files_streams_only_the_row_groups_the_key_filters_meet() {
    let dir = tempfile::tempdir().unwrap();
    write_exports(&dir.path().join("exports"), 2);
    let db = Database::open("memory://").unwrap();
    let files = FileTables {
        tables: vec![(
            "sales".into(),
            format!("{}/exports/*.parquet", dir.path().display()),
        )],
        keys: vec![],
    };
    let ts = Timestamp::SYNC_LAST_COMMITTED;
    let q = "SELECT count(*) AS n, min(region) AS r FROM sales WHERE id BETWEEN 1220 AND 1250";
    let r = db.sql(q, &files, ts).await.unwrap();
    assert_eq!(r.rows[0][0], Value::Int64(31));
    assert_eq!(r.rows[0][1], Value::String(b"r0".to_vec()));
    // One row group of 100 rows of the 2000 is read.
    assert!(r.statistics.rows_read <= 100, "{:?}", r.statistics);
    let all = db
        .sql(
            "SELECT count(*) AS n FROM sales WHERE amount > 0",
            &files,
            ts,
        )
        .await
        .unwrap();
    assert_eq!(all.rows[0][0], Value::Int64(1999));
    assert_eq!(all.statistics.rows_read, 2000);
}
