//! Damage is contained: a log record that does not apply, or a damaged chunk named by a
//! logged write, makes its own table fail with a clear error while every other table reads
//! and writes on; `Store::check` reports what is damaged and which tables it affects; the
//! damaged table can be removed.

use dynql_core::{TableSchema, Value};
use dynql_storage::log::{Action, CommitRecord};
use dynql_storage::log_store;
use dynql_storage::{Error, Store, TableOptions, Timestamp, WriteKind};

fn sorted() -> TableSchema {
    TableSchema::parse("[{name=k;type=int64;sort_order=ascending};{name=v;type=int64}]").unwrap()
}

fn row(k: i64, v: i64) -> Vec<Option<Value>> {
    vec![Some(Value::Int64(k)), Some(Value::Int64(v))]
}

async fn two_tables(url: &str) -> Store {
    let s = Store::open(url).unwrap();
    for t in ["//good", "//bad"] {
        s.create_table(t, sorted(), TableOptions::default())
            .await
            .unwrap();
        s.write_rows(t, WriteKind::Overwrite, false, vec![row(1, 1)])
            .await
            .unwrap();
    }
    s
}

/// The tables other than the damaged one keep working, through a fresh handle.
async fn assert_contained(url: &str, damaged: &str) {
    let s = Store::open(url).unwrap();
    let Err(err) = s.read_rows(damaged, Timestamp::MAX).await else {
        panic!("reading the damaged table {damaged} succeeded");
    };
    assert!(matches!(err, Error::Damaged { .. }), "{err}");
    assert!(err.to_string().contains("dynql check"), "{err}");
    let err = s
        .write_rows(damaged, WriteKind::Overwrite, false, vec![row(9, 9)])
        .await
        .unwrap_err();
    assert!(matches!(err, Error::Damaged { .. }), "{err}");
    // The good table reads and writes.
    s.write_rows("//good", WriteKind::Overwrite, false, vec![row(2, 2)])
        .await
        .unwrap();
    assert_eq!(
        s.read_rows("//good", Timestamp::MAX).await.unwrap().len(),
        2
    );
    // The check names the damaged table.
    let report = s.check().await.unwrap();
    assert!(!report.is_ok());
    assert!(
        report
            .damage
            .iter()
            .any(|d| d.tables.iter().any(|t| t == damaged)),
        "{report:?}"
    );
    // Removing it is the way out; the store is whole again.
    s.remove_table(damaged).await.unwrap();
    assert!(Store::open(url).unwrap().check().await.unwrap().is_ok());
}

#[tokio::test]
async fn a_record_that_does_not_apply_damages_only_its_table() {
    let dir = tempfile::tempdir().unwrap();
    let url = format!("file://{}", dir.path().display());
    let s = two_tables(&url).await;
    let bad = s.table("//bad").await.unwrap();
    let state_ts = s.last_committed_timestamp().await.unwrap();
    let seq = std::fs::read_dir(dir.path().join("_log")).unwrap().count() as u64;
    // A record no validated commit could make: a row with a column the table lacks.
    let record = CommitRecord {
        seq: seq + 1,
        timestamp: dynql_storage::Fresh::default().next_after(state_ts).0,
        transaction_id: None,
        actions: vec![Action::WriteRows {
            path: "//bad".into(),
            table_id: bad.id,
            kind: WriteKind::Overwrite,
            aggregate: false,
            rows: vec!["{k=5;nope=1}".into()],
            chunk: None,
            chunk_checksum: None,
        }],
        previous: None,
        lost: None,
    };
    log_store::append(s_objects(&url).as_ref(), &record)
        .await
        .unwrap();
    assert_contained(&url, "//bad").await;
}

#[tokio::test]
async fn a_damaged_large_write_chunk_damages_only_its_table() {
    let dir = tempfile::tempdir().unwrap();
    let url = format!("file://{}", dir.path().display());
    let s = two_tables(&url).await;
    let rows = (0..dynql_storage::store::LARGE_WRITE_ROWS as i64)
        .map(|k| row(k, k))
        .collect();
    s.write_rows("//bad", WriteKind::Overwrite, false, rows)
        .await
        .unwrap();
    let bad_id = s.table("//bad").await.unwrap().id;
    let chunk = std::fs::read_dir(dir.path().join("tables").join(&bad_id))
        .unwrap()
        .next()
        .unwrap()
        .unwrap()
        .path();
    // Cut short: the chunk no longer decodes. (Single flipped bits are the checksums' job:
    // tests/bitflip.rs.)
    let bytes = std::fs::read(&chunk).unwrap();
    std::fs::write(&chunk, &bytes[..bytes.len() / 2]).unwrap();
    assert_contained(&url, "//bad").await;

    // A missing one too.
    let s = two_tables(&format!("{url}/again")).await;
    let rows = (0..dynql_storage::store::LARGE_WRITE_ROWS as i64)
        .map(|k| row(k, k))
        .collect();
    s.write_rows("//bad", WriteKind::Overwrite, false, rows)
        .await
        .unwrap();
    let bad_id = s.table("//bad").await.unwrap().id;
    let folder = dir.path().join("again").join("tables").join(&bad_id);
    for f in std::fs::read_dir(folder).unwrap() {
        std::fs::remove_file(f.unwrap().path()).unwrap();
    }
    assert_contained(&format!("{url}/again"), "//bad").await;
}

#[tokio::test]
async fn a_damaged_chunk_fails_only_the_queries_that_read_it_and_check_names_it() {
    let dir = tempfile::tempdir().unwrap();
    let url = format!("file://{}", dir.path().display());
    let s = two_tables(&url).await;
    s.checkpoint().await.unwrap();
    assert!(s.check().await.unwrap().is_ok());
    let bad_id = s.table("//bad").await.unwrap().id;
    let chunk = std::fs::read_dir(dir.path().join("tables").join(&bad_id))
        .unwrap()
        .map(|e| e.unwrap().path())
        .find(|p| p.to_string_lossy().contains("flush-"))
        .expect("a flushed chunk");
    std::fs::write(&chunk, b"PAR1 not parquet at all PAR1").unwrap();
    let fresh = Store::open(&url).unwrap();
    assert!(fresh.read_rows("//bad", Timestamp::MAX).await.is_err());
    assert_eq!(
        fresh
            .read_rows("//good", Timestamp::MAX)
            .await
            .unwrap()
            .len(),
        1
    );
    let report = fresh.check().await.unwrap();
    assert_eq!(report.damage.len(), 1, "{report:?}");
    assert_eq!(report.damage[0].tables, vec!["//bad".to_string()]);
    assert!(report.damage[0].file.contains(&bad_id));
}

/// The object store under a `file://` URL, for writing records by hand.
fn s_objects(url: &str) -> std::sync::Arc<dyn object_store::ObjectStore> {
    let dir = url.strip_prefix("file://").unwrap();
    std::sync::Arc::new(object_store::local::LocalFileSystem::new_with_prefix(dir).unwrap())
}

#[tokio::test]
async fn a_damaged_newest_checkpoint_falls_back_to_the_older_one_and_the_log() {
    let dir = tempfile::tempdir().unwrap();
    let url = format!("file://{}", dir.path().display());
    let s = two_tables(&url).await;
    let queue = TableSchema::parse("[{name=a;type=int64}]").unwrap();
    s.create_table("//q", queue, TableOptions::default())
        .await
        .unwrap();
    s.append_rows("//q", vec![(None, vec![Some(Value::Int64(1))])])
        .await
        .unwrap();
    let older = s.checkpoint().await.unwrap();
    s.write_rows("//good", WriteKind::Overwrite, false, vec![row(2, 2)])
        .await
        .unwrap();
    s.append_rows("//q", vec![(None, vec![Some(Value::Int64(2))])])
        .await
        .unwrap();
    let newest = s.checkpoint().await.unwrap();
    assert!(newest > older);
    let read_all = |url: String| async move {
        let s = Store::open(&url).unwrap();
        let mut out = Vec::new();
        for t in ["//good", "//bad", "//q"] {
            out.push(
                s.read_rows(t, Timestamp::MAX)
                    .await
                    .map_err(|e| e.to_string()),
            );
        }
        out
    };
    let expected = read_all(url.clone()).await;
    assert!(expected.iter().all(Result::is_ok));
    let manifest = dir
        .path()
        .join("_checkpoints")
        .join(format!("{newest:020}.json"));
    let intact = std::fs::read(&manifest).unwrap();
    // A damaged manifest: the older checkpoint and the log after it give the same state.
    let mut damaged = intact.clone();
    let middle = damaged.len() / 2;
    damaged[middle] ^= 0x01;
    std::fs::write(&manifest, &damaged).unwrap();
    assert_eq!(read_all(url.clone()).await, expected);
    let report = Store::open(&url).unwrap().check().await.unwrap();
    assert!(
        report
            .damage
            .iter()
            .any(|d| d.file.contains("_checkpoints")),
        "{report:?}"
    );
    std::fs::write(&manifest, &intact).unwrap();
    // A damaged tail chunk of the newest checkpoint (the ordered table's rows) too.
    let text = String::from_utf8_lossy(&intact).to_string();
    let tail = text
        .split('"')
        .find(|p| p.contains("/tail-"))
        .expect("the newest checkpoint has a tail chunk")
        .to_string();
    let tail_file = dir.path().join(&tail);
    let tail_bytes = std::fs::read(&tail_file).unwrap();
    let mut damaged = tail_bytes.clone();
    damaged[10] ^= 0x04;
    std::fs::write(&tail_file, &damaged).unwrap();
    assert_eq!(read_all(url.clone()).await, expected);
    std::fs::write(&tail_file, &tail_bytes).unwrap();
    assert!(Store::open(&url).unwrap().check().await.unwrap().is_ok());
}

#[tokio::test]
async fn a_damaged_table_takes_no_change_but_its_removal() {
    let dir = tempfile::tempdir().unwrap();
    let url = format!("file://{}", dir.path().display());
    let s = two_tables(&url).await;
    let bad = s.table("//bad").await.unwrap();
    let seq = std::fs::read_dir(dir.path().join("_log")).unwrap().count() as u64;
    let record = CommitRecord {
        seq: seq + 1,
        timestamp: dynql_storage::Fresh::default()
            .next_after(s.last_committed_timestamp().await.unwrap())
            .0,
        transaction_id: None,
        actions: vec![Action::WriteRows {
            path: "//bad".into(),
            table_id: bad.id,
            kind: WriteKind::Overwrite,
            aggregate: false,
            rows: vec!["{k=5;nope=1}".into()],
            chunk: None,
            chunk_checksum: None,
        }],
        previous: None,
        lost: None,
    };
    log_store::append(s_objects(&url).as_ref(), &record)
        .await
        .unwrap();
    let s = Store::open(&url).unwrap();
    let attribute = dynql_storage::AttributeValue::Number(3);
    for err in [
        s.set_attribute("//bad", "max_data_versions", attribute)
            .await
            .unwrap_err(),
        s.copy_table("//bad", "//copy", true).await.unwrap_err(),
        s.copy_table("//bad", "//moved", false).await.unwrap_err(),
        s.set_tablet_state("//bad", dynql_storage::TabletCommand::Freeze)
            .await
            .unwrap_err(),
    ] {
        assert!(matches!(err, Error::Damaged { .. }), "{err}");
    }
    assert!(s.table("//copy").await.is_err() && s.table("//moved").await.is_err());
    s.remove_table("//bad").await.unwrap();
}
