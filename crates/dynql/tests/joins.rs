//! Lookup joins as plan operators: the joined table is read only at the keys the left rows
//! ask for, computed key columns included, and the plan shows the lookup.

use dynql::{Database, SelectOptions, Value};
use serde_json::json;

async fn tables(db: &Database) {
    // The foreign table is keyed by (h = farm_hash(id) % 8, id): a join by id fixes h too.
    db.create_table_from_text(
        "//users",
        "{dynamic=%true; pivot_keys=[[]; [2u]; [4u]; [6u]]; schema=[{name=h; type=uint64; sort_order=ascending; expression=\"farm_hash(id) % 8\"}; {name=id; type=int64; sort_order=ascending}; {name=name; type=string}]}",
    )
    .await
    .unwrap();
    let users: Vec<_> = (0..1000)
        .map(|id| json!({"id": id, "name": format!("user {id}")}))
        .collect();
    db.insert_json_rows("//users", &users).await.unwrap();
    db.flush("//users").await.unwrap();
    db.create_table_from_text(
        "//orders",
        "{dynamic=%true; schema=[{name=o; type=int64; sort_order=ascending}; {name=id; type=int64}; {name=amount; type=int64}]}",
    )
    .await
    .unwrap();
    // Ten orders; one names a user that does not exist, one has no user.
    let mut orders: Vec<_> = (0..8)
        .map(|o| json!({"o": o, "id": o * 111, "amount": o * 10}))
        .collect();
    orders.push(json!({"o": 8, "id": 5000, "amount": 1}));
    orders.push(json!({"o": 9, "id": null, "amount": 2}));
    db.insert_json_rows("//orders", &orders).await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_join_by_key_reads_only_the_keys_its_rows_ask_for() {
    let db = Database::open("memory://").unwrap();
    tables(&db).await;
    let options = SelectOptions::default();

    let r = db
        .select_rows(
            "o, name from [//orders] join [//users] using id where amount > 0",
            &options,
        )
        .await
        .unwrap();
    let names: Vec<_> = r.rows.iter().map(|r| r[1].clone()).collect();
    let expected: Vec<_> = (1..8)
        .map(|o| Value::string(format!("user {}", o * 111)))
        .collect();
    assert_eq!(names, expected);
    // 10 orders, then only the 8 users whose ids they name (of 1000).
    assert_eq!(r.statistics.rows_read, 10 + 8, "{:?}", r.statistics);

    // LEFT: unmatched rows keep nulls, in the orders' key order.
    let r = db
        .select_rows(
            "o, name from [//orders] left join [//users] using id where o >= 7",
            &options,
        )
        .await
        .unwrap();
    assert_eq!(
        r.rows,
        vec![
            vec![Value::Int64(7), Value::string("user 777")],
            vec![Value::Int64(8), Value::Null],
            vec![Value::Int64(9), Value::Null],
        ]
    );

    // Grouped after the join; the plan shows the lookup under the aggregate.
    let q = "sum(amount) as s, sum(1) as n from [//orders] join [//users] using id where is_prefix(\"user 1\", name) group by 1 as g";
    let r = db.select_rows(q, &options).await.unwrap();
    // user 111 (order 1, amount 10) and user 1 (none): only order 1.
    assert_eq!(r.rows, vec![vec![Value::Int64(10), Value::Int64(1)]]);
    let plan = db.explain_query(q, &options).await.unwrap().plan.unwrap();
    assert!(
        plan.contains("LookupJoinExec: table=//users, inner, expected reads=key prefixes"),
        "{plan}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_join_without_an_index_reads_the_table_once() {
    let db = Database::open("memory://").unwrap();
    tables(&db).await;
    let options = SelectOptions {
        allow_join_without_index: true,
        ..SelectOptions::default()
    };
    // The orders' key is o: a join by their id reads them whole, once.
    let q = "u.id, x.o from [//users] as u join [//orders] as x on u.id = x.id where u.id < 300 order by x.o limit 10";
    let r = db.select_rows(q, &options).await.unwrap();
    assert_eq!(
        r.rows,
        (0..3)
            .map(|o| vec![Value::Int64(o * 111), Value::Int64(o)])
            .collect::<Vec<_>>()
    );
    // The users of the 8 hashes below 300 (inferred through the computed key), the orders once.
    assert_eq!(r.statistics.rows_read, 300 + 10, "{:?}", r.statistics);
    let plan = db.explain_query(q, &options).await.unwrap().plan.unwrap();
    assert!(plan.contains("expected reads=whole table"), "{plan}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn batches_asking_for_the_same_keys_share_their_lookup_and_each_counts_it() {
    let db = Database::open("memory://").unwrap();
    tables(&db).await;
    db.create_table_from_text(
        "//visits",
        "{dynamic=%true; schema=[{name=v; type=int64; sort_order=ascending}; {name=id; type=int64}]}",
    )
    .await
    .unwrap();
    // Many batches of visits, every one naming the same three users.
    let visits: Vec<_> = (0..30_000)
        .map(|v| json!({"v": v, "id": (v % 3) * 111}))
        .collect();
    db.insert_json_rows("//visits", &visits).await.unwrap();
    db.flush("//visits").await.unwrap();
    let options = SelectOptions {
        input_row_limit: 1_000_000,
        output_row_limit: 1_000_000,
        ..SelectOptions::default()
    };
    let r = db
        .select_rows("v, name from [//visits] join [//users] using id", &options)
        .await
        .unwrap();
    assert_eq!(r.rows.len(), 30_000);
    for row in &r.rows {
        let Value::Int64(v) = row[0] else {
            panic!("{row:?}")
        };
        assert_eq!(
            row[1],
            Value::string(format!("user {}", (v % 3) * 111)),
            "{row:?}"
        );
    }
    // Every batch counts the three users it looked up, whether read or reused.
    let lookups = r.statistics.rows_read - 30_000;
    assert!(
        lookups > 3 && lookups % 3 == 0,
        "{lookups} users read: {:?}",
        r.statistics
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_join_scans_only_the_main_columns_it_uses() {
    let db = Database::open("memory://").unwrap();
    tables(&db).await;
    db.create_table_from_text(
        "//tags",
        "{dynamic=%true; schema=[{name=label; type=string; sort_order=ascending}; {name=tag; type=string}]}",
    )
    .await
    .unwrap();
    let tags = [
        json!({"label": "user 111", "tag": "vip"}),
        json!({"label": "user 222", "tag": "new"}),
    ];
    db.insert_json_rows("//tags", &tags).await.unwrap();
    let options = SelectOptions::default();
    // `amount` is read by nothing; the second join's equation reads the first's column.
    let q = "tag, o from [//orders] join [//users] using id join [//tags] on name = label";
    let r = db.select_rows(q, &options).await.unwrap();
    assert_eq!(
        r.rows,
        vec![
            vec![Value::string("vip"), Value::Int64(1)],
            vec![Value::string("new"), Value::Int64(2)],
        ]
    );
    let plan = db.explain_query(q, &options).await.unwrap().plan.unwrap();
    let scan = plan
        .lines()
        .find(|l| l.contains("TabletScanExec: table=//orders"))
        .unwrap_or_else(|| panic!("{plan}"));
    assert!(scan.contains("columns=[o, id]"), "{plan}");
    // WHERE over a main column the output does not show: it is scanned too.
    let r = db
        .select_rows(
            "tag from [//orders] join [//users] using id join [//tags] on name = label where amount > 10",
            &options,
        )
        .await
        .unwrap();
    assert_eq!(r.rows, vec![vec![Value::string("new")]]);
}
