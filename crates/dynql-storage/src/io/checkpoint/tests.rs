//! Tests of [`crate::io::checkpoint`].

use super::*;
use crate::kernel::catalog::TableOptions;
use dynql_core::{TableSchema, Value};

fn schema() -> TableSchema {
    TableSchema::parse("[{name=k;type=int64;sort_order=ascending};{name=v;type=string};{name=n;type=int64;aggregate=sum}]").unwrap()
}

#[tokio::test]
async fn reopening_from_a_checkpoint_and_the_log_tail_gives_the_same_state() {
    let dir = tempfile::tempdir().unwrap();
    let url = format!("file://{}", dir.path().display());
    let s = Store::open(&url).unwrap();
    s.create_table("//t", schema(), TableOptions::default())
        .await
        .unwrap();
    let ordered = TableSchema::parse("[{name=a;type=string}]").unwrap();
    s.create_table("//q", ordered, TableOptions::default())
        .await
        .unwrap();
    let row = |k: i64, v: Option<&[u8]>, n: Option<i64>| {
        vec![
            Some(Value::Int64(k)),
            v.map(|v| Value::String(v.to_vec())),
            n.map(Value::Int64),
        ]
    };
    let t1 = s
        .write_rows(
            "//t",
            WriteKind::Overwrite,
            false,
            vec![row(1, Some(b"\xff\x00"), Some(1)), row(2, Some(b"b"), None)],
        )
        .await
        .unwrap();
    s.write_rows("//t", WriteKind::Update, true, vec![row(1, None, Some(5))])
        .await
        .unwrap();
    s.write_rows(
        "//t",
        WriteKind::Delete,
        false,
        vec![vec![Some(Value::Int64(2)), None, None]],
    )
    .await
    .unwrap();
    s.append_rows("//q", vec![(None, vec![Some(Value::string("x"))])])
        .await
        .unwrap();
    s.append_rows(
        "//q",
        vec![
            (Some(0), vec![Some(Value::string("y"))]),
            (Some(0), vec![Some(Value::string("z"))]),
        ],
    )
    .await
    .unwrap();
    s.trim_rows("//q", 0, 1).await.unwrap();
    let tx = s.start_transaction(60_000).await.unwrap();
    s.lock_rows_in(
        &tx.id,
        "//t",
        LockMode::Exclusive,
        vec![],
        vec![vec![Value::Int64(1)]],
    )
    .await
    .unwrap();
    s.commit_transaction(&tx.id).await.unwrap();
    let seq = s.checkpoint().await.unwrap();
    assert!(seq > 0);
    s.write_rows(
        "//t",
        WriteKind::Overwrite,
        false,
        vec![row(3, Some(b"c"), None)],
    )
    .await
    .unwrap();

    let reopened = Store::open(&url).unwrap();
    for path in ["//t", "//q"] {
        for ts in [t1, Timestamp::MAX] {
            assert_eq!(
                reopened.read_rows(path, ts).await.unwrap(),
                s.read_rows(path, ts).await.unwrap(),
                "{path} at {ts}"
            );
        }
    }
    assert_eq!(
        reopened.queue_tablets("//q").await.unwrap(),
        s.queue_tablets("//q").await.unwrap()
    );
    assert_eq!(
        reopened
            .read_rows("//q", Timestamp::MAX)
            .await
            .unwrap()
            .len(),
        2
    );
    let state = reopened.refresh().await.unwrap();
    assert!(state.committed_transactions.contains(&tx.id));
    assert_eq!(state.tables["//t"].1.locks.len(), 1);
}

#[tokio::test]
async fn old_checkpoints_and_their_chunks_are_collected() {
    let dir = tempfile::tempdir().unwrap();
    let url = format!("file://{}", dir.path().display());
    let s = Store::open(&url).unwrap().with_gc_grace_ms(0);
    // Chunks counted here are the checkpoints' alone.
    let options = TableOptions {
        enable_compaction_and_partitioning: Some(false),
        ..TableOptions::default()
    };
    s.create_table("//t", schema(), options).await.unwrap();
    let write_and_checkpoint = |i: i64| {
        let s = s.clone();
        async move {
            s.write_rows(
                "//t",
                WriteKind::Overwrite,
                false,
                vec![vec![Some(Value::Int64(i)), None, None]],
            )
            .await
            .unwrap();
            s.checkpoint().await.unwrap();
        }
    };
    for i in 0..4 {
        write_and_checkpoint(i).await;
    }
    let count = |d: &str| walk(&dir.path().join(d));
    assert_eq!(count("_checkpoints"), 2);
    // One flush chunk per checkpoint, all live.
    assert_eq!(count("tables"), 4);
    s.compact("//t").await.unwrap();
    for i in 4..6 {
        write_and_checkpoint(i).await;
    }
    // The four flushed chunks were replaced by the compacted one; once no kept checkpoint
    // or log record names them they are gone.
    assert_eq!(count("_checkpoints"), 2);
    assert_eq!(count("tables"), 3);
    assert_eq!(
        Store::open(&url)
            .unwrap()
            .read_rows("//t", Timestamp::MAX)
            .await
            .unwrap()
            .len(),
        6
    );
}

fn walk(p: &std::path::Path) -> usize {
    std::fs::read_dir(p)
        .map(|rd| {
            rd.flatten()
                .map(|e| {
                    if e.path().is_dir() {
                        walk(&e.path())
                    } else {
                        1
                    }
                })
                .sum()
        })
        .unwrap_or(0)
}

#[tokio::test]
async fn a_reader_behind_a_collected_log_reloads_the_checkpoint() {
    let dir = tempfile::tempdir().unwrap();
    let url = format!("file://{}", dir.path().display());
    let writer = Store::open(&url).unwrap();
    writer
        .create_table("//t", schema(), TableOptions::default())
        .await
        .unwrap();
    let reader = Store::open(&url).unwrap();
    assert_eq!(
        reader.read_rows("//t", Timestamp::MAX).await.unwrap().len(),
        0
    );
    for i in 0..5 {
        writer
            .write_rows(
                "//t",
                WriteKind::Overwrite,
                false,
                vec![vec![Some(Value::Int64(i)), None, None]],
            )
            .await
            .unwrap();
        writer.checkpoint().await.unwrap();
    }
    assert_eq!(
        reader.read_rows("//t", Timestamp::MAX).await.unwrap().len(),
        5
    );
}

#[tokio::test]
async fn the_last_compaction_survives_a_checkpoint_and_paces_auto_compaction_period() {
    let dir = tempfile::tempdir().unwrap();
    let url = format!("file://{}", dir.path().display());
    let s = Store::open(&url).unwrap();
    let options = TableOptions {
        auto_compaction_period: Some(3_600_000),
        ..TableOptions::default()
    };
    s.create_table("//t", schema(), options).await.unwrap();
    s.write_rows(
        "//t",
        WriteKind::Overwrite,
        false,
        vec![vec![Some(Value::Int64(1)), None, None]],
    )
    .await
    .unwrap();
    let due = |s: &Store| {
        let s = s.clone();
        async move {
            let state = s.refresh().await.unwrap();
            let (e, d) = &state.tables["//t"];
            (
                crate::compact::periodic_compaction_due(e, d, crate::clock::Fresh::default().now()),
                d.last_compaction,
            )
        }
    };
    // Never compacted, with data: due.
    assert!(due(&s).await.0);
    s.compact("//t").await.unwrap();
    let (is_due, last) = due(&s).await;
    assert!(!is_due && last > Timestamp::MIN);
    // A checkpoint, then a store opened from it (the log before it collected), keep it.
    s.checkpoint().await.unwrap();
    let reopened = Store::open(&url).unwrap();
    assert_eq!(due(&reopened).await, (false, last));
}

#[tokio::test]
async fn checkpoints_compact_crowded_tables() {
    let s = Store::open("memory://").unwrap();
    let schema = crate::test_tables::key_value_schema();
    let options = TableOptions {
        retention: crate::kernel::retention::Retention {
            min_data_ttl: 0,
            max_data_ttl: 0,
            ..Default::default()
        },
        // The checkpoints' rule alone.
        enable_compaction_and_partitioning: Some(false),
        ..TableOptions::default()
    };
    s.create_table("//t", schema.clone(), options.clone())
        .await
        .unwrap();
    // Every checkpoint flushes the new layer into a chunk; the one that finds more than
    // AUTO_COMPACTION_CHUNKS chunks compacts them into one.
    for layer in 0..=AUTO_COMPACTION_CHUNKS as i64 {
        let rows = (0..50)
            .map(|k| vec![Some(Value::Int64(k)), Some(Value::Int64(layer))])
            .collect();
        s.write_rows("//t", WriteKind::Overwrite, false, rows)
            .await
            .unwrap();
        s.checkpoint().await.unwrap();
        let chunks = s.refresh().await.unwrap().tables["//t"].1.chunks.len();
        if layer < AUTO_COMPACTION_CHUNKS as i64 {
            assert_eq!(chunks, layer as usize + 1);
            assert_eq!(
                s.version_count("//t").await.unwrap(),
                50 * (layer as usize + 1)
            );
        } else {
            assert_eq!(chunks, 1);
        }
    }
    assert_eq!(s.version_count("//t").await.unwrap(), 50);
    // Chunks of keys that do not overlap are one layer, however many: left as they are.
    s.create_table("//wide", schema.clone(), options.clone())
        .await
        .unwrap();
    for layer in 0..=AUTO_COMPACTION_CHUNKS as i64 + 2 {
        let rows = (layer * 100..layer * 100 + 50)
            .map(|k| vec![Some(Value::Int64(k)), Some(Value::Int64(layer))])
            .collect();
        s.write_rows("//wide", WriteKind::Overwrite, false, rows)
            .await
            .unwrap();
        s.checkpoint().await.unwrap();
    }
    let wide = s.refresh().await.unwrap().tables["//wide"].1.chunks.len();
    assert_eq!(wide, AUTO_COMPACTION_CHUNKS + 3);
    let last = AUTO_COMPACTION_CHUNKS as i64;
    assert!(s
        .read_rows("//t", Timestamp::MAX)
        .await
        .unwrap()
        .iter()
        .all(|r| r[1] == Value::Int64(last)));
}

#[tokio::test]
async fn checkpoints_trim_expired_rows_of_ordered_tables() {
    let s = Store::open("memory://").unwrap();
    let queue = TableSchema::parse("[{name=a;type=int64}]").unwrap();
    let options = |min_data_versions| TableOptions {
        retention: crate::kernel::retention::Retention {
            min_data_versions,
            max_data_versions: min_data_versions,
            min_data_ttl: 0,
            max_data_ttl: 0,
        },
        ..TableOptions::default()
    };
    s.create_table("//expiring", queue.clone(), options(0))
        .await
        .unwrap();
    s.create_table("//kept", queue, options(1)).await.unwrap();
    for path in ["//expiring", "//kept"] {
        s.append_rows(path, vec![(None, vec![Some(Value::Int64(1))])])
            .await
            .unwrap();
    }
    s.checkpoint().await.unwrap();
    // min_data_versions = 0 with both ttls 0: the row may go; min_data_versions > 0 keeps
    // everything.
    assert!(s
        .read_rows("//expiring", Timestamp::MAX)
        .await
        .unwrap()
        .is_empty());
    assert_eq!(
        s.queue_tablets("//expiring").await.unwrap()[0].trimmed_row_count,
        1
    );
    assert_eq!(
        s.read_rows("//kept", Timestamp::MAX).await.unwrap().len(),
        1
    );
}

#[tokio::test]
async fn a_corrupt_chunk_is_a_clear_error_and_the_log_is_untouched() {
    let dir = tempfile::tempdir().unwrap();
    let url = format!("file://{}", dir.path().display());
    let s = Store::open(&url).unwrap();
    s.create_table("//t", schema(), TableOptions::default())
        .await
        .unwrap();
    s.write_rows(
        "//t",
        WriteKind::Overwrite,
        false,
        vec![vec![Some(Value::Int64(1)), None, None]],
    )
    .await
    .unwrap();
    s.checkpoint().await.unwrap();
    let tables = dir.path().join("tables");
    let table_dir = std::fs::read_dir(&tables)
        .unwrap()
        .next()
        .unwrap()
        .unwrap()
        .path();
    let chunk = std::fs::read_dir(&table_dir)
        .unwrap()
        .next()
        .unwrap()
        .unwrap()
        .path();
    std::fs::write(&chunk, b"PAR1 not really parquet").unwrap();
    let err = Store::open(&url)
        .unwrap()
        .read_rows("//t", Timestamp::MAX)
        .await
        .unwrap_err();
    assert!(matches!(err, Error::Corrupt { .. }), "{err}");
    assert!(
        err.to_string().contains(".parquet"),
        "the error names the chunk: {err}"
    );
    // The log still holds every commit (create, write, flush).
    assert_eq!(
        std::fs::read_dir(dir.path().join("_log")).unwrap().count(),
        3
    );
}

#[tokio::test]
async fn manifests_written_before_checksums_still_load() {
    let dir = tempfile::tempdir().unwrap();
    let url = format!("file://{}", dir.path().display());
    let s = Store::open(&url).unwrap();
    s.create_table("//t", schema(), TableOptions::default())
        .await
        .unwrap();
    let seq = s.checkpoint().await.unwrap();
    let path = dir
        .path()
        .join("_checkpoints")
        .join(format!("{seq:020}.json"));
    let framed = std::fs::read(&path).unwrap();
    let body = &framed[framed.iter().position(|b| *b == b'\n').unwrap() + 1..];
    std::fs::write(&path, body).unwrap();
    assert!(Store::open(&url).unwrap().table("//t").await.is_ok());
}

#[tokio::test]
async fn a_corrupt_only_checkpoint_opens_from_the_log_or_is_a_clear_error() {
    let dir = tempfile::tempdir().unwrap();
    let url = format!("file://{}", dir.path().display());
    let s = Store::open(&url).unwrap();
    s.create_table("//t", schema(), TableOptions::default())
        .await
        .unwrap();
    let seq = s.checkpoint().await.unwrap();
    std::fs::write(
        dir.path()
            .join("_checkpoints")
            .join(format!("{seq:020}.json")),
        b"[",
    )
    .unwrap();
    // The log is all there: the store opens from its first record.
    assert_eq!(Store::open(&url).unwrap().tables().await.unwrap().len(), 1);
    // Without its first record it cannot open, and says which file to restore.
    std::fs::remove_file(dir.path().join("_log").join(format!("{:020}.json", 1))).unwrap();
    let err = Store::open(&url).unwrap().tables().await.unwrap_err();
    assert!(matches!(err, Error::Corrupt { .. }), "{err}");
    assert!(
        err.to_string().contains(&format!("{seq:020}.json")),
        "{err}"
    );
}
