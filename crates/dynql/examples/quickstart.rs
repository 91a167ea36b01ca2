//! Create a hash-sharded table, insert rows, and run YT QL queries.
//!
//! Run: `cargo run -p dynql --example quickstart`

use dynql::{Database, SelectOptions};

#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<(), dynql::Error> {
    let db = Database::open("memory://")?;
    // Directories are nodes, as in YT: `//home` is there, `//home/demo` is made here.
    let recursive = dynql::CreateOptions {
        recursive: true,
        ..dynql::CreateOptions::default()
    };
    db.create("map_node", "//home/demo", None, recursive)
        .await?;
    db.create_table_from_text(
        "//home/demo/users",
        r#"{dynamic=%true; schema=[
            {name=hash; type=uint64; sort_order=ascending; expression="farm_hash(id) % 16"};
            {name=id; type=int64; sort_order=ascending};
            {name=name; type=string};
            {name=score; type=double}]}"#,
    )
    .await?;
    let rows: Vec<_> = (1..=10)
        .map(|i| serde_json::json!({"id": i, "name": format!("user{i}"), "score": i as f64 * 1.5}))
        .collect();
    db.insert_json_rows("//home/demo/users", &rows).await?;

    let result = db
        .select_rows(
            "id % 2 as parity, sum(1) as n, avg(score) as mean from [//home/demo/users] group by parity with totals",
            &SelectOptions::default(),
        )
        .await?;
    for row in result.to_json_rows() {
        println!("{row}");
    }
    let batch = db
        .select_rows(
            "id, name from [//home/demo/users] where id in (3, 7)",
            &SelectOptions::default(),
        )
        .await?
        .to_record_batch()?;
    println!("{} rows as Arrow", batch.num_rows());

    // Rows as Arrow batches as they are computed; dropping the stream cancels the query.
    use futures::StreamExt;
    let mut stream = db
        .select_stream(
            "id, score from [//home/demo/users] where score > 5.0",
            &SelectOptions::default(),
        )
        .await?;
    while let Some(batch) = stream.next().await {
        println!("a batch of {} rows", batch?.num_rows());
    }
    println!("{:?}", stream.statistics());
    Ok(())
}

/// `cargo test` runs the example (`test = true` in Cargo.toml), so it cannot rot.
#[cfg(test)]
mod tests {
    #[test]
    fn the_quickstart_runs() {
        super::main().unwrap();
    }
}
