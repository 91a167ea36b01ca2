//! `dynql::blocking::Database`: every call runs the async API to completion, outside and
//! inside a tokio runtime alike.

use dynql::blocking::Database;
use dynql::{ErrorKind, FileTables, LookupOptions, SelectOptions, Timestamp, Value, Yson};

const SCHEMA: &str =
    "{dynamic=%true; schema=[{name=k;type=int64;sort_order=ascending};{name=v;type=utf8}]}";

fn yson(text: &str) -> Yson {
    dynql::yson::parse(text.as_bytes()).unwrap()
}

fn keys(db: &Database) -> Vec<i64> {
    db.select_rows(
        "k from [//t] order by k limit 100",
        &SelectOptions::default(),
    )
    .unwrap()
    .iter()
    .map(|r| r.get::<i64>("k").unwrap())
    .collect()
}

/// Writes, reads, queries, SQL, nodes and transactions, all without async, on a file store
/// that a second open reads back.
#[test]
fn the_blocking_api_covers_what_applications_call() {
    let dir = tempfile::tempdir().unwrap();
    let url = format!("file://{}", dir.path().display());
    let db = Database::open(&url).unwrap();
    db.create_table_from_text("//t", SCHEMA).unwrap();
    let e = db.create_table_from_text("//t", SCHEMA).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::AlreadyExists, "{e}");

    db.insert_rows("//t", &[yson("{k=1; v=one}"), yson("{k=2; v=two}")])
        .unwrap();
    db.insert_json_rows("//t", &[serde_json::json!({"k": 3, "v": "three"})])
        .unwrap();
    db.delete_rows("//t", &[yson("{k=2}")]).unwrap();
    assert_eq!(keys(&db), vec![1, 3]);

    let found = db
        .lookup_rows(
            "//t",
            &[yson("{k=3}"), yson("{k=2}")],
            &LookupOptions::default(),
        )
        .unwrap();
    assert_eq!(
        found.rows,
        vec![Some(vec![Value::Int64(3), Value::string("three")])]
    );

    let counted = db
        .sql(
            r#"SELECT count(*) AS n FROM "//t""#,
            &FileTables::default(),
            Timestamp::SYNC_LAST_COMMITTED,
        )
        .unwrap();
    assert_eq!(counted.row(0).unwrap().get::<i64>("n").unwrap(), 2);

    let explained = db
        .explain_query("* from [//t] where k = 3", &SelectOptions::default())
        .unwrap();
    assert_eq!(explained.ranges[0].to_string(), "[3]..[3,MAX]");

    // Nodes.
    db.set("//home/app/limit", &Yson::Int64(7), true).unwrap();
    assert_eq!(db.get("//home/app/limit").unwrap(), Yson::Int64(7));
    assert!(db.exists("//home/app").unwrap());
    assert_eq!(db.list("//home/app").unwrap(), vec!["limit".to_string()]);
    db.remove("//home/app/limit").unwrap();
    assert!(!db.exists("//home/app/limit").unwrap());

    // A tablet transaction: staged until commit, then seen.
    let tx = db.start_transaction().unwrap();
    tx.insert_rows("//t", &[yson("{k=4; v=four}")], Default::default())
        .unwrap();
    assert_eq!(keys(&db), vec![1, 3]);
    assert_eq!(
        tx.select_rows("k from [//t]", &SelectOptions::default())
            .unwrap()
            .rows
            .len(),
        2
    );
    tx.commit().unwrap();
    assert_eq!(keys(&db), vec![1, 3, 4]);

    // Two transactions writing one key: the second to commit conflicts.
    let (a, b) = (
        db.start_transaction().unwrap(),
        db.start_transaction().unwrap(),
    );
    a.insert_rows("//t", &[yson("{k=1; v=a}")], Default::default())
        .unwrap();
    b.insert_rows("//t", &[yson("{k=1; v=b}")], Default::default())
        .unwrap();
    a.commit().unwrap();
    assert_eq!(b.commit().unwrap_err().kind(), ErrorKind::Conflict);

    // A master transaction by id.
    let id = db.start_master_transaction(Default::default()).unwrap();
    db.set_in("//home/app/x", &Yson::Int64(1), false, Some(&id))
        .unwrap();
    assert!(!db.exists("//home/app/x").unwrap());
    db.commit_transaction(&id).unwrap();
    assert!(db.exists("//home/app/x").unwrap());

    drop(db);
    let reopened = Database::open(&url).unwrap();
    assert_eq!(keys(&reopened), vec![1, 3, 4]);
}

/// The batches of a query come as an iterator; statistics once it has ended.
#[test]
fn select_batches_iterates_the_query_s_record_batches() {
    let db = Database::open("memory://").unwrap();
    db.create_table_from_text("//t", SCHEMA).unwrap();
    let rows: Vec<_> = (0..1000)
        .map(|k| serde_json::json!({"k": k, "v": format!("v{k}")}))
        .collect();
    db.insert_json_rows("//t", &rows).unwrap();
    let mut batches = db
        .select_batches("k, v from [//t] where k >= 10", &SelectOptions::default())
        .unwrap();
    assert_eq!(batches.columns().len(), 2);
    assert_eq!(batches.schema().field(1).name(), "v");
    assert!(batches.statistics().is_none());
    let mut read = 0;
    for batch in batches.by_ref() {
        read += batch.unwrap().num_rows();
    }
    assert_eq!(read, 990);
    assert!(batches.next().is_none());
    assert_eq!(batches.statistics().unwrap().rows_read, 990);
    // into_result of a fresh iterator collects every row.
    let all = db
        .select_batches("k from [//t]", &SelectOptions::default())
        .unwrap()
        .into_result()
        .unwrap();
    assert_eq!(all.rows.len(), 1000);
}

/// A query that fails while running: the iterator gives the error, then ends.
#[test]
fn a_query_error_ends_the_iteration() {
    let db = Database::open("memory://").unwrap();
    db.create_table_from_text("//t", SCHEMA).unwrap();
    db.insert_json_rows("//t", &[serde_json::json!({"k": 0, "v": "zero"})])
        .unwrap();
    let outcome = db.select_batches("1 / k from [//t]", &SelectOptions::default());
    let mut batches = match outcome {
        Ok(batches) => batches,
        Err(e) => panic!("the error should come from the running query: {e}"),
    };
    let error = batches
        .find_map(|b| b.err())
        .expect("integer division by zero is an error");
    assert!(error.to_string().contains("Division by zero"), "{error}");
    assert!(batches.next().is_none());
    let e = batches.into_result().unwrap_err();
    assert!(e.to_string().contains("failed"), "{e}");
}

/// Inside a current-thread runtime (a `#[tokio::test]`), calls work rather than panicking
/// (tokio forbids blocking on a runtime there), and so does dropping the database.
#[tokio::test(flavor = "current_thread")]
async fn calls_from_a_current_thread_runtime_work() {
    let db = Database::open("memory://").unwrap();
    db.create_table_from_text("//t", SCHEMA).unwrap();
    db.insert_json_rows("//t", &[serde_json::json!({"k": 1, "v": "one"})])
        .unwrap();
    assert_eq!(keys(&db), vec![1]);
    let batches: Vec<_> = db
        .select_batches("k from [//t]", &SelectOptions::default())
        .unwrap()
        .collect::<dynql::Result<_>>()
        .unwrap();
    assert_eq!(batches.len(), 1);
    // The async database inside serves async code on the caller's runtime.
    let async_rows = db
        .as_async()
        .select_rows("k from [//t]", &SelectOptions::default())
        .await
        .unwrap();
    assert_eq!(async_rows.rows.len(), 1);
    drop(db);
}

/// From tasks of a multi-threaded runtime, from its blocking pool, and from plain threads
/// sharing clones.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn calls_from_tasks_blocking_pools_and_threads_work() {
    let db = Database::open("memory://").unwrap();
    db.create_table_from_text("//t", SCHEMA).unwrap();
    let from_task = {
        let db = db.clone();
        tokio::spawn(async move {
            db.insert_json_rows("//t", &[serde_json::json!({"k": 1, "v": "task"})])
        })
    };
    from_task.await.unwrap().unwrap();
    let from_pool = {
        let db = db.clone();
        tokio::task::spawn_blocking(move || {
            db.insert_json_rows("//t", &[serde_json::json!({"k": 2, "v": "pool"})])
        })
    };
    from_pool.await.unwrap().unwrap();
    let threads: Vec<_> = (3..6)
        .map(|k| {
            let db = db.clone();
            std::thread::spawn(move || {
                db.insert_json_rows("//t", &[serde_json::json!({"k": k, "v": "thread"})])
            })
        })
        .collect();
    for t in threads {
        t.join().unwrap().unwrap();
    }
    assert_eq!(keys(&db), vec![1, 2, 3, 4, 5]);
}

/// The README's blocking example, line for line; the test below runs it.
const README_EXAMPLE: &str = r#"let db = dynql::blocking::Database::open("memory://")?;
db.create_table_from_text("//t", "{dynamic=%true; schema=[{name=k;type=int64;sort_order=ascending}]}")?;
db.insert_json_rows("//t", &[serde_json::json!({"k": 1})])?;
let k: i64 = db.select_rows("k from [//t]", &SelectOptions::default())?.row(0).unwrap().get("k")?;
for batch in db.select_batches("k from [//t]", &SelectOptions::default())? { let batch = batch?; }
"#;

#[test]
fn the_readme_s_blocking_example_is_this_one() {
    let readme = include_str!("../../../../README.md");
    assert!(
        readme.contains(README_EXAMPLE),
        "README.md's blocking example changed: copy it into crates/dynql/tests/rust_api/blocking.rs"
    );
}

#[test]
fn the_readme_s_blocking_example_runs() -> dynql::Result<()> {
    let db = dynql::blocking::Database::open("memory://")?;
    db.create_table_from_text(
        "//t",
        "{dynamic=%true; schema=[{name=k;type=int64;sort_order=ascending}]}",
    )?;
    db.insert_json_rows("//t", &[serde_json::json!({"k": 1})])?;
    let k: i64 = db
        .select_rows("k from [//t]", &SelectOptions::default())?
        .row(0)
        .unwrap()
        .get("k")?;
    assert_eq!(k, 1);
    let mut rows = 0;
    for batch in db.select_batches("k from [//t]", &SelectOptions::default())? {
        let batch = batch?;
        rows += batch.num_rows();
    }
    assert_eq!(rows, 1);
    Ok(())
}
