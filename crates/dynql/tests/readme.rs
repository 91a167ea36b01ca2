//! The README's library example, run on a fresh store (issue 40, item 5). The code below is
//! the README's, line for line; the first test fails when the two part.

use dynql::{Database, SelectOptions};

/// The README's example, between its `use` line and the end of its code block.
const EXAMPLE: &str = r#"// inside an async fn returning Result<_, dynql::Error>:
let db = Database::open("file://./dynql-data")?;
db.create_table_from_text("//t", "{dynamic=%true; schema=[{name=k;type=int64;sort_order=ascending};{name=v;type=string}]}").await?;
db.insert_json_rows("//t", &[serde_json::json!({"k": 1, "v": "one"})]).await?;
let result = db.select_rows("v from [//t] where k = 1", &SelectOptions::default()).await?;
let batch = result.to_record_batch()?; // or result.to_json_rows()

// Or the rows as Arrow record batches, as they are computed (dropping the stream cancels):
use dynql::futures::TryStreamExt; // dynql re-exports the futures crate
let stream = db.select_stream("k, v from [//t]", &SelectOptions::default()).await?;
let schema = stream.schema(); // `string` and `utf8` columns as Utf8, YT types in `yt:type`
let batches: Vec<dynql::arrow::record_batch::RecordBatch> = stream.try_collect().await?;
"#;

#[test]
fn the_example_here_is_the_readme_s() {
    let readme = include_str!("../../../README.md");
    assert!(
        readme.contains(EXAMPLE),
        "README.md's library example changed: copy it into crates/dynql/tests/readme.rs"
    );
}

/// [`EXAMPLE`], with the store in a fresh directory instead of `./dynql-data`.
#[tokio::test]
async fn the_readme_example_runs_on_a_fresh_store() -> Result<(), dynql::Error> {
    let dir = tempfile::tempdir().unwrap();
    let url = format!("file://{}", dir.path().display());
    let db = Database::open(&url)?;
    db.create_table_from_text(
        "//t",
        "{dynamic=%true; schema=[{name=k;type=int64;sort_order=ascending};{name=v;type=string}]}",
    )
    .await?;
    db.insert_json_rows("//t", &[serde_json::json!({"k": 1, "v": "one"})])
        .await?;
    let result = db
        .select_rows("v from [//t] where k = 1", &SelectOptions::default())
        .await?;
    let batch = result.to_record_batch()?;
    assert_eq!(batch.num_rows(), 1);

    use dynql::futures::TryStreamExt;
    let stream = db
        .select_stream("k, v from [//t]", &SelectOptions::default())
        .await?;
    let schema = stream.schema();
    assert_eq!(schema.fields().len(), 2);
    assert_eq!(
        schema.field(1).data_type(),
        &dynql::arrow::datatypes::DataType::Utf8
    );
    let batches: Vec<dynql::arrow::record_batch::RecordBatch> = stream.try_collect().await?;
    assert_eq!(batches.iter().map(|b| b.num_rows()).sum::<usize>(), 1);
    Ok(())
}
