//! `Database::table_provider`: a dynamic table in the caller's own DataFusion session, read
//! from the snapshot pinned when the provider was made, with key filters pushed down.

use dynql::arrow::array::{AsArray, Int64Array};
use dynql::arrow::datatypes::{DataType, Int64Type};
use dynql::arrow::record_batch::RecordBatch;
use dynql::datafusion::physical_plan::displayable;
use dynql::datafusion::prelude::SessionContext;
use dynql::{Database, ErrorKind};

/// Four tablets split at 100, 200, 300; `v` a `string` column.
const SCHEMA: &str = "{dynamic=%true; schema=[{name=k;type=int64;sort_order=ascending};{name=v;type=string};{name=n;type=int64}]; pivot_keys=[[];[100];[200];[300]]}";

async fn table(db: &Database) {
    db.create_table_from_text("//t", SCHEMA).await.unwrap();
    let rows: Vec<_> = (0..400)
        .map(|k| serde_json::json!({"k": k, "v": format!("v{k}"), "n": k * 10}))
        .collect();
    db.insert_json_rows("//t", &rows).await.unwrap();
}

async fn query(ctx: &SessionContext, sql: &str) -> Vec<RecordBatch> {
    ctx.sql(sql).await.unwrap().collect().await.unwrap()
}

fn count(batches: &[RecordBatch]) -> i64 {
    batches[0]
        .column(0)
        .as_any()
        .downcast_ref::<Int64Array>()
        .unwrap()
        .value(0)
}

#[tokio::test]
async fn a_provider_reads_its_pinned_snapshot_in_a_user_session() {
    let db = Database::open("memory://").unwrap();
    table(&db).await;
    let provider = db.table_provider("//t").await.unwrap();
    // Written after the provider was made: a new row, a changed row, a deleted row.
    db.insert_json_rows("//t", &[serde_json::json!({"k": 1000, "v": "new", "n": 0})])
        .await
        .unwrap();
    db.insert_json_rows(
        "//t",
        &[serde_json::json!({"k": 250, "v": "changed", "n": 0})],
    )
    .await
    .unwrap();
    db.delete_rows("//t", &[dynql::yson::parse(b"{k=5}").unwrap()])
        .await
        .unwrap();

    let ctx = SessionContext::new();
    ctx.register_table("t", provider).unwrap();
    let found = query(&ctx, "SELECT k, v, n FROM t WHERE k = 250").await;
    assert_eq!(found.iter().map(|b| b.num_rows()).sum::<usize>(), 1);
    let batch = &found[0];
    assert_eq!(batch.column(0).as_primitive::<Int64Type>().value(0), 250);
    // `string` columns are text, as in SQL.
    assert_eq!(batch.schema().field(1).data_type(), &DataType::Utf8View);
    assert_eq!(batch.column(1).as_string_view().value(0), "v250");
    assert_eq!(batch.column(2).as_primitive::<Int64Type>().value(0), 2500);

    assert_eq!(count(&query(&ctx, "SELECT count(*) FROM t").await), 400);
    assert_eq!(
        count(&query(&ctx, "SELECT count(*) FROM t WHERE k = 5").await),
        1
    );
    assert_eq!(
        count(&query(&ctx, "SELECT count(*) FROM t WHERE k >= 1000").await),
        0
    );
    // A join of the caller's own table with the dynql one.
    ctx.sql("CREATE TABLE wanted AS VALUES (250), (399)")
        .await
        .unwrap();
    let joined = query(
        &ctx,
        "SELECT sum(t.n) FROM t JOIN wanted ON t.k = wanted.column1",
    )
    .await;
    assert_eq!(count(&joined), 2500 + 3990);

    // A fresh provider sees the writes.
    let ctx = SessionContext::new();
    ctx.register_table("t", db.table_provider("//t").await.unwrap())
        .unwrap();
    assert_eq!(count(&query(&ctx, "SELECT count(*) FROM t").await), 400);
    let changed = query(&ctx, "SELECT v FROM t WHERE k = 250").await;
    assert_eq!(changed[0].column(0).as_string_view().value(0), "changed");
}

/// A filter on the key reaches the scan: it reads one tablet of four.
#[tokio::test]
async fn a_key_filter_prunes_the_tablets_the_scan_reads() {
    let db = Database::open("memory://").unwrap();
    table(&db).await;
    let ctx = SessionContext::new();
    ctx.register_table("t", db.table_provider("//t").await.unwrap())
        .unwrap();
    let plan = |sql: &'static str| {
        let ctx = ctx.clone();
        async move {
            let plan = ctx
                .sql(sql)
                .await
                .unwrap()
                .create_physical_plan()
                .await
                .unwrap();
            let text = displayable(plan.as_ref()).indent(true).to_string();
            text
        }
    };
    let point = plan("SELECT v FROM t WHERE k = 250").await;
    assert!(point.contains("tablets=1/4"), "{point}");
    let range = plan("SELECT v FROM t WHERE k >= 150 AND k < 250").await;
    assert!(range.contains("tablets=2/4"), "{range}");
    let all = plan("SELECT v FROM t WHERE n = 250").await;
    assert!(all.contains("tablets=4/4"), "{all}");
}

/// At a timestamp: the table as of then, whatever was committed before the call.
#[tokio::test]
async fn a_provider_at_a_timestamp_reads_the_table_as_of_then() {
    let db = Database::open("memory://").unwrap();
    table(&db).await;
    let before = db.generate_timestamp().await.unwrap();
    db.delete_rows("//t", &[dynql::yson::parse(b"{k=1}").unwrap()])
        .await
        .unwrap();
    let ctx = SessionContext::new();
    ctx.register_table("then", db.table_provider_at("//t", before).await.unwrap())
        .unwrap();
    ctx.register_table("now", db.table_provider("//t").await.unwrap())
        .unwrap();
    assert_eq!(count(&query(&ctx, "SELECT count(*) FROM then").await), 400);
    assert_eq!(count(&query(&ctx, "SELECT count(*) FROM now").await), 399);
}

#[tokio::test]
async fn a_missing_or_unmounted_table_is_refused() {
    let db = Database::open("memory://").unwrap();
    let e = db.table_provider("//nope").await.unwrap_err();
    assert_eq!(e.kind(), ErrorKind::InvalidInput);
    assert!(e.to_string().contains("//nope"), "{e}");
    table(&db).await;
    db.set_tablet_state("//t", dynql::TabletCommand::Unmount)
        .await
        .unwrap();
    let e = db.table_provider("//t").await.unwrap_err();
    assert!(e.to_string().contains("not mounted"), "{e}");
}
