//! SQL over dynamic tables reads them through the streaming tablet scan: the key ranges its
//! filters fix prune tablets (computed key columns included), results match YT QL's, and a
//! string that is not UTF-8 fails with the column and table named.

use dynql::{Database, SelectOptions};
use dynql_core::{Value, Yson};
use dynql_exec::FileTables;
use dynql_storage::Timestamp;
use serde_json::json;

async fn table(db: &Database) {
    db.create_table_from_text(
        "//t",
        "{dynamic=%true; pivot_keys=[[]; [100]; [200]]; schema=[{name=k; type=int64; sort_order=ascending}; {name=v; type=string}; {name=n; type=int64}]}",
    )
    .await
    .unwrap();
    let rows: Vec<_> = (0..300)
        .map(|k| json!({"k": k, "v": format!("v{k}"), "n": k % 7}))
        .collect();
    db.insert_json_rows("//t", &rows[..200]).await.unwrap();
    db.flush("//t").await.unwrap();
    db.insert_json_rows("//t", &rows[200..]).await.unwrap();
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

/// The physical plan of `query` as DataFusion's EXPLAIN prints it.
async fn physical_plan(db: &Database, query: &str) -> String {
    physical_plan_with(db, "", query).await
}

/// [`physical_plan`] after the `settings` statements (`SET ...;`).
async fn physical_plan_with(db: &Database, settings: &str, query: &str) -> String {
    let explained = sql(db, &format!("{settings} EXPLAIN {query}")).await;
    explained
        .rows
        .iter()
        .filter(|r| r[0] == Value::string("physical_plan"))
        .map(|r| match &r[1] {
            Value::String(s) => String::from_utf8_lossy(s).into_owned(),
            other => format!("{other:?}"),
        })
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn key_filters_prune_tablets_and_the_rows_are_those_yt_ql_selects() {
    let db = Database::open("memory://").unwrap();
    table(&db).await;

    let plan = physical_plan(&db, r#"SELECT v FROM "//t" WHERE k = 150"#).await;
    assert!(plan.contains("TabletScanExec: table=//t"), "{plan}");
    assert!(plan.contains("tablets=1/3"), "{plan}");
    let plan = physical_plan(&db, r#"SELECT v FROM "//t" WHERE k >= 120 AND n = 3"#).await;
    assert!(plan.contains("tablets=2/3"), "{plan}");
    let plan = physical_plan(&db, r#"SELECT v FROM "//t" WHERE n = 3"#).await;
    assert!(plan.contains("tablets=3/3"), "{plan}");

    // Only the tablet of the range is read; the filter above the scan keeps the right rows.
    let r = sql(
        &db,
        r#"SELECT count(*) AS c, sum(n) AS s FROM "//t" WHERE k BETWEEN 100 AND 199 AND n > 2"#,
    )
    .await;
    let yt = db
        .select_rows(
            "sum(1) AS c, sum(n) AS s FROM [//t] WHERE k BETWEEN 100 AND 199 AND n > 2 GROUP BY 1 AS g",
            &SelectOptions::default(),
        )
        .await
        .unwrap();
    assert_eq!(r.rows[0], yt.rows[0]);
    assert_eq!(r.statistics.rows_read, 100);

    // IN lists and ORs of key ranges; strings come as text.
    let r = sql(
        &db,
        r#"SELECT k, upper(v) AS u FROM "//t" WHERE k IN (5, 250) OR (k > 297) ORDER BY k"#,
    )
    .await;
    let keys: Vec<_> = r.rows.iter().map(|r| r[0].clone()).collect();
    assert_eq!(
        keys,
        [5, 250, 298, 299].map(Value::Int64).to_vec(),
        "{:?}",
        r.rows
    );
    assert_eq!(r.rows[1][1], Value::string("V250"));
    assert_eq!(r.statistics.rows_read, 4, "{:?}", r.statistics);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn computed_keys_are_pruned_from_the_filters_on_their_sources() {
    let db = Database::open("memory://").unwrap();
    db.create_table_from_text(
        "//h",
        "{dynamic=%true; pivot_keys=[[]; [4u]; [8u]; [12u]]; schema=[{name=h; type=uint64; sort_order=ascending; expression=\"farm_hash(id) % 16\"}; {name=id; type=int64; sort_order=ascending}; {name=v; type=double}]}",
    )
    .await
    .unwrap();
    let rows: Vec<_> = (0..400)
        .map(|id| json!({"id": id, "v": id as f64 / 2.0}))
        .collect();
    db.insert_json_rows("//h", &rows).await.unwrap();
    let plan = physical_plan(&db, r#"SELECT v FROM "//h" WHERE id = 77"#).await;
    assert!(plan.contains("tablets=1/4"), "{plan}");
    let r = sql(&db, r#"SELECT v FROM "//h" WHERE id = 77"#).await;
    assert_eq!(r.rows, vec![vec![Value::Double(38.5)]]);
    assert!(r.statistics.rows_read < 400, "{:?}", r.statistics);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_string_that_is_not_utf8_names_its_column_and_table() {
    let db = Database::open("memory://").unwrap();
    db.create_table_from_text(
        "//b",
        "{dynamic=%true; schema=[{name=k; type=int64; sort_order=ascending}; {name=s; type=string}]}",
    )
    .await
    .unwrap();
    let row = Yson::Map(vec![
        ("k".into(), Yson::Int64(1)),
        ("s".into(), Yson::String(vec![0xff, 0xfe])),
    ]);
    db.insert_rows("//b", &[row]).await.unwrap();
    // Reading only the key is fine; reading the string is not.
    let r = sql(&db, r#"SELECT k FROM "//b""#).await;
    assert_eq!(r.rows, vec![vec![Value::Int64(1)]]);
    let e = db
        .sql(
            r#"SELECT s FROM "//b""#,
            &FileTables::default(),
            Timestamp::SYNC_LAST_COMMITTED,
        )
        .await
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("column s of //b") && e.contains("not UTF-8"),
        "{e}"
    );
}

/// Each tablet's rows come in key order, and the scan says so where a partition is one
/// tablet: ORDER BY the key with YT's null order (nulls first; SQL's default puts them last)
/// merges the tablets instead of sorting, and the rows are in order (the dynamic store's rows
/// and flushed chunks merged). With fewer partitions than tablets, a partition reads tablets
/// that are not neighbours and declares no order: the rows are sorted, to the same answer.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_scan_declares_key_order_so_an_order_by_the_key_needs_no_sort() {
    let db = Database::open("memory://").unwrap();
    table(&db).await;
    let query = r#"SELECT k, v FROM "//t" ORDER BY k NULLS FIRST LIMIT 5"#;
    let plan = physical_plan_with(
        &db,
        "SET datafusion.execution.target_partitions = 4;",
        query,
    )
    .await;
    assert!(!plan.contains("SortExec"), "{plan}");
    assert!(plan.contains("SortPreservingMergeExec"), "{plan}");
    let plan = physical_plan_with(
        &db,
        "SET datafusion.execution.target_partitions = 2;",
        query,
    )
    .await;
    assert!(plan.contains("SortExec"), "{plan}");
    for settings in [
        "SET datafusion.execution.target_partitions = 4;",
        "SET datafusion.execution.target_partitions = 2;",
    ] {
        let r = sql(&db, &format!("{settings} {query}")).await;
        let keys: Vec<_> = r.rows.iter().map(|r| r[0].clone()).collect();
        assert_eq!(
            keys,
            (0..5).map(Value::Int64).collect::<Vec<_>>(),
            "{settings}"
        );
    }
    let query = r#"SELECT k FROM "//t" WHERE k > 95 ORDER BY k NULLS FIRST LIMIT 8"#;
    let r = sql(&db, query).await;
    let keys: Vec<_> = r.rows.iter().map(|r| r[0].clone()).collect();
    assert_eq!(keys, (96..104).map(Value::Int64).collect::<Vec<_>>());
    // The scan's estimate: the planned rows (200 flushed, 100 in the dynamic store).
    let explained = sql(
        &db,
        r#"SET datafusion.explain.show_statistics = true; EXPLAIN SELECT k FROM "//t""#,
    )
    .await;
    let plan: String = explained
        .rows
        .iter()
        .filter_map(|r| match &r[1] {
            Value::String(s) => Some(String::from_utf8_lossy(s).into_owned()),
            _ => None,
        })
        .collect();
    assert!(plan.contains("Rows=Inexact(300)"), "{plan}");
    // A column that is not the key is still sorted.
    let plan = physical_plan(&db, r#"SELECT k FROM "//t" ORDER BY n, k LIMIT 5"#).await;
    assert!(plan.contains("SortExec"), "{plan}");
    // Descending is a sort too.
    let r = sql(&db, r#"SELECT k FROM "//t" ORDER BY k DESC LIMIT 2"#).await;
    assert_eq!(
        r.rows,
        vec![vec![Value::Int64(299)], vec![Value::Int64(298)]]
    );

    // A string key with a null, over a flushed chunk and the dynamic store.
    db.create_table_from_text(
        "//s",
        "{dynamic=%true; schema=[{name=s; type=string; sort_order=ascending}; {name=x; type=int64}]}",
    )
    .await
    .unwrap();
    let rows = [json!({"s": "b", "x": 1}), json!({"s": "a", "x": 2})];
    db.insert_json_rows("//s", &rows).await.unwrap();
    db.flush("//s").await.unwrap();
    let rows = [json!({"s": null, "x": 3}), json!({"s": "ab", "x": 4})];
    db.insert_json_rows("//s", &rows).await.unwrap();
    let query = r#"SELECT s, x FROM "//s" ORDER BY s NULLS FIRST"#;
    assert!(!physical_plan(&db, query).await.contains("SortExec"));
    let r = sql(&db, query).await;
    let xs: Vec<_> = r.rows.iter().map(|r| r[1].clone()).collect();
    assert_eq!(xs, [3, 2, 4, 1].map(Value::Int64).to_vec(), "{:?}", r.rows);
    let r = sql(&db, r#"SELECT s, x FROM "//s" ORDER BY s"#).await;
    let xs: Vec<_> = r.rows.iter().map(|r| r[1].clone()).collect();
    assert_eq!(xs, [2, 4, 1, 3].map(Value::Int64).to_vec(), "{:?}", r.rows);
}
