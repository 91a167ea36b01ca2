//! `in_memory_mode`: a store handle holds an in-memory table's chunks, so its reads need the
//! object store no more (shown by deleting the chunk files under it), follows flushes and
//! compactions, and lets go when the mode goes back to `none`.

use dynql_core::{KeyBound, KeyRange, TableSchema, Value};
use dynql_storage::in_memory::InMemoryMode;
use dynql_storage::{AttributeValue, Store, TableOptions, Timestamp, WriteKind};

fn schema() -> TableSchema {
    TableSchema::parse("[{name=k;type=int64;sort_order=ascending};{name=v;type=string}]").unwrap()
}

fn row(k: i64) -> Vec<Option<Value>> {
    vec![
        Some(Value::Int64(k)),
        Some(Value::String(format!("v{k}").into_bytes())),
    ]
}

/// Deletes every chunk file (and key filter file) of the store's directory.
fn delete_chunk_files(dir: &std::path::Path) -> usize {
    let mut deleted = 0;
    for table in std::fs::read_dir(dir.join("tables")).unwrap().flatten() {
        for file in std::fs::read_dir(table.path()).unwrap().flatten() {
            std::fs::remove_file(file.path()).unwrap();
            deleted += 1;
        }
    }
    deleted
}

async fn read_all(s: &Store, n: usize) -> Result<(), dynql_storage::Error> {
    let keys: Vec<Vec<Value>> = (0..n as i64)
        .step_by(97)
        .map(|k| vec![Value::Int64(k)])
        .collect();
    let rows = s.lookup_rows("//t", &keys, Timestamp::MAX).await?;
    assert!(rows.iter().all(Option::is_some));
    let range = KeyRange {
        lower: KeyBound::new(vec![Value::Int64(100)], false),
        upper: KeyBound::new(vec![Value::Int64(30_000)], false),
    };
    let (tablets, _) = s.scan_ranges("//t", Some(&[range]), Timestamp::MAX).await?;
    assert_eq!(tablets.iter().map(|t| t.rows.len()).sum::<usize>(), 29_900);
    assert_eq!(s.read_rows("//t", Timestamp::MAX).await?.len(), n);
    Ok(())
}

async fn held_table(mode: InMemoryMode) {
    let dir = tempfile::tempdir().unwrap();
    let url = format!("file://{}", dir.path().display());
    // No chunk cache: every read of a chunk goes to its file, or to what is held.
    let s = Store::open(&url).unwrap().with_chunk_cache_bytes(0);
    let options = TableOptions {
        in_memory_mode: Some(mode),
        ..TableOptions::default()
    };
    s.create_table("//t", schema(), options).await.unwrap();
    s.write_rows(
        "//t",
        WriteKind::Overwrite,
        false,
        (0..40_000).map(row).collect(),
    )
    .await
    .unwrap();
    s.flush_table("//t").await.unwrap();
    read_all(&s, 40_000).await.unwrap();
    let chunk_bytes: u64 = s.chunks("//t").await.unwrap().iter().map(|c| c.bytes).sum();
    assert_eq!(s.in_memory_bytes("//t").await.unwrap(), chunk_bytes);
    assert!(delete_chunk_files(dir.path()) > 0);
    read_all(&s, 40_000).await.unwrap();

    // A flush adds a chunk: the next read holds it too.
    s.write_rows(
        "//t",
        WriteKind::Overwrite,
        false,
        (40_000..41_000).map(row).collect(),
    )
    .await
    .unwrap();
    s.flush_table("//t").await.unwrap();
    read_all(&s, 41_000).await.unwrap();
    assert!(delete_chunk_files(dir.path()) > 0);
    read_all(&s, 41_000).await.unwrap();

    // Back to none: what was held is let go, and the deleted files are missed.
    s.set_attribute("//t", "in_memory_mode", AttributeValue::Text("none".into()))
        .await
        .unwrap();
    assert!(read_all(&s, 41_000).await.is_err());
    assert_eq!(s.in_memory_bytes("//t").await.unwrap(), 0);
}

#[tokio::test]
async fn compressed_tables_read_from_the_held_files() {
    held_table(InMemoryMode::Compressed).await;
}

#[tokio::test]
async fn uncompressed_tables_read_from_held_row_groups() {
    held_table(InMemoryMode::Uncompressed).await;
}

#[tokio::test]
async fn the_mode_is_an_attribute_checked_when_set() {
    let s = Store::open("memory://").unwrap();
    s.create_table("//t", schema(), TableOptions::default())
        .await
        .unwrap();
    s.set_attribute(
        "//t",
        "in_memory_mode",
        AttributeValue::Text("compressed".into()),
    )
    .await
    .unwrap();
    assert_eq!(
        s.table("//t").await.unwrap().in_memory_mode,
        InMemoryMode::Compressed
    );
    let e = s
        .set_attribute(
            "//t",
            "in_memory_mode",
            AttributeValue::Text("sometimes".into()),
        )
        .await
        .unwrap_err();
    assert!(
        e.to_string().contains("none, compressed or uncompressed"),
        "{e}"
    );
}
