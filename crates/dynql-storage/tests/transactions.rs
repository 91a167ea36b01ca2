//! Tablet transactions through the storage API: isolation, row-lock conflicts, expiry, and a
//! bank-transfer invariant under concurrent transactions from independent store handles.

use dynql_core::{TableSchema, Value};
use dynql_storage::{Error, LockMode, Store, TableOptions, Timestamp, WriteKind};

fn schema() -> TableSchema {
    TableSchema::parse("[{name=k;type=int64;sort_order=ascending};{name=v;type=int64};{name=w;type=int64;lock=other}]").unwrap()
}

fn row(k: i64, v: i64) -> Vec<Option<Value>> {
    vec![Some(Value::Int64(k)), Some(Value::Int64(v)), None]
}

async fn table() -> Store {
    let s = Store::open("memory://").unwrap();
    s.create_table("//t", schema(), TableOptions::default())
        .await
        .unwrap();
    s.write_rows(
        "//t",
        WriteKind::Update,
        false,
        vec![row(1, 10), row(2, 20)],
    )
    .await
    .unwrap();
    s
}

async fn value(s: &Store, k: i64, at: Timestamp) -> Option<Value> {
    s.lookup_rows("//t", &[vec![Value::Int64(k)]], at)
        .await
        .unwrap()[0]
        .as_ref()
        .map(|r| r[1].clone())
}

#[tokio::test]
async fn staged_writes_are_invisible_until_commit_and_reads_see_the_start() {
    let s = table().await;
    let tx = s.start_transaction(60_000).await.unwrap();
    s.write_rows_in(&tx.id, "//t", WriteKind::Update, false, vec![row(1, 11)])
        .await
        .unwrap();
    assert_eq!(value(&s, 1, Timestamp::MAX).await, Some(Value::Int64(10)));
    let ts = s.commit_transaction(&tx.id).await.unwrap();
    assert!(ts > tx.start_timestamp);
    assert_eq!(value(&s, 1, Timestamp::MAX).await, Some(Value::Int64(11)));
    assert_eq!(
        value(&s, 1, tx.start_timestamp).await,
        Some(Value::Int64(10))
    );
    // A committed transaction cannot be committed again.
    assert!(matches!(
        s.commit_transaction(&tx.id).await,
        Err(Error::NoSuchTransaction { .. })
    ));
}

#[tokio::test]
async fn a_write_after_my_start_to_my_key_aborts_my_commit() {
    let s = table().await;
    let mine = s.start_transaction(60_000).await.unwrap();
    let theirs = s.start_transaction(60_000).await.unwrap();
    s.write_rows_in(
        &theirs.id,
        "//t",
        WriteKind::Update,
        false,
        vec![row(1, 100)],
    )
    .await
    .unwrap();
    s.write_rows_in(
        &mine.id,
        "//t",
        WriteKind::Update,
        false,
        vec![row(1, 200), row(2, 200)],
    )
    .await
    .unwrap();
    s.commit_transaction(&theirs.id).await.unwrap();
    let err = s.commit_transaction(&mine.id).await.unwrap_err();
    assert!(matches!(err, Error::Conflict { .. }), "{err}");
    assert!(err.to_string().contains("Row lock conflict"));
    // Nothing of the conflicting transaction was applied.
    assert_eq!(value(&s, 1, Timestamp::MAX).await, Some(Value::Int64(100)));
    assert_eq!(value(&s, 2, Timestamp::MAX).await, Some(Value::Int64(20)));
}

#[tokio::test]
async fn different_keys_and_lock_groups_do_not_conflict() {
    let s = table().await;
    let a = s.start_transaction(60_000).await.unwrap();
    let b = s.start_transaction(60_000).await.unwrap();
    s.write_rows_in(&a.id, "//t", WriteKind::Update, false, vec![row(1, 1)])
        .await
        .unwrap();
    s.write_rows_in(&b.id, "//t", WriteKind::Update, false, vec![row(2, 2)])
        .await
        .unwrap();
    let c = s.start_transaction(60_000).await.unwrap();
    let w_only = vec![Some(Value::Int64(1)), None, Some(Value::Int64(7))];
    s.write_rows_in(&c.id, "//t", WriteKind::Update, false, vec![w_only])
        .await
        .unwrap();
    s.commit_transaction(&a.id).await.unwrap();
    s.commit_transaction(&b.id).await.unwrap();
    s.commit_transaction(&c.id).await.unwrap();
    let r = s
        .lookup_rows("//t", &[vec![Value::Int64(1)]], Timestamp::MAX)
        .await
        .unwrap();
    assert_eq!(
        r[0].as_ref().unwrap()[1..],
        [Value::Int64(1), Value::Int64(7)]
    );
}

#[tokio::test]
async fn locks_take_part_in_conflicts() {
    let s = table().await;
    let reader = s.start_transaction(60_000).await.unwrap();
    s.lock_rows_in(
        &reader.id,
        "//t",
        LockMode::SharedStrong,
        vec![],
        vec![vec![Value::Int64(1)]],
    )
    .await
    .unwrap();
    s.write_rows("//t", WriteKind::Update, false, vec![row(1, 5)])
        .await
        .unwrap();
    assert!(matches!(
        s.commit_transaction(&reader.id).await,
        Err(Error::Conflict { .. })
    ));

    let weak = s.start_transaction(60_000).await.unwrap();
    s.lock_rows_in(
        &weak.id,
        "//t",
        LockMode::SharedWeak,
        vec![],
        vec![vec![Value::Int64(1)]],
    )
    .await
    .unwrap();
    s.write_rows("//t", WriteKind::Update, false, vec![row(1, 6)])
        .await
        .unwrap();
    s.commit_transaction(&weak.id).await.unwrap();

    let a = s.start_transaction(60_000).await.unwrap();
    let b = s.start_transaction(60_000).await.unwrap();
    s.lock_rows_in(
        &a.id,
        "//t",
        LockMode::Exclusive,
        vec![],
        vec![vec![Value::Int64(2)]],
    )
    .await
    .unwrap();
    s.lock_rows_in(
        &b.id,
        "//t",
        LockMode::Exclusive,
        vec![],
        vec![vec![Value::Int64(2)]],
    )
    .await
    .unwrap();
    s.commit_transaction(&a.id).await.unwrap();
    assert!(matches!(
        s.commit_transaction(&b.id).await,
        Err(Error::Conflict { .. })
    ));
    let err = s
        .lock_rows_in(
            &a.id,
            "//t",
            LockMode::Exclusive,
            vec!["other".into()],
            vec![vec![Value::Int64(2)]],
        )
        .await
        .unwrap_err();
    assert!(matches!(err, Error::NoSuchTransaction { .. }), "{err}");
    let live = s.start_transaction(60_000).await.unwrap();
    let err = s
        .lock_rows_in(
            &live.id,
            "//t",
            LockMode::Exclusive,
            vec!["nope".into()],
            vec![vec![Value::Int64(2)]],
        )
        .await
        .unwrap_err();
    assert!(err.to_string().contains("no lock group \"nope\""), "{err}");
}

#[tokio::test]
async fn expired_and_aborted_transactions_are_gone() {
    let s = table().await;
    let tx = s.start_transaction(1).await.unwrap();
    s.write_rows_in(&tx.id, "//t", WriteKind::Update, false, vec![row(1, 0)])
        .await
        .err();
    tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    assert!(matches!(
        s.commit_transaction(&tx.id).await,
        Err(Error::NoSuchTransaction { .. })
    ));
    let tx = s.start_transaction(60_000).await.unwrap();
    s.ping_transaction(&tx.id).await.unwrap();
    s.write_rows_in(&tx.id, "//t", WriteKind::Update, false, vec![row(1, 0)])
        .await
        .unwrap();
    s.abort_transaction(&tx.id).await.unwrap();
    assert!(matches!(
        s.commit_transaction(&tx.id).await,
        Err(Error::NoSuchTransaction { .. })
    ));
    assert_eq!(value(&s, 1, Timestamp::MAX).await, Some(Value::Int64(10)));
}

#[tokio::test]
async fn bank_transfers_keep_the_total() {
    let dir = tempfile::tempdir().unwrap();
    let url = format!("file://{}", dir.path().display());
    let s = Store::open(&url).unwrap();
    s.create_table(
        "//bank",
        TableSchema::parse("[{name=k;type=int64;sort_order=ascending};{name=v;type=int64}]")
            .unwrap(),
        TableOptions::default(),
    )
    .await
    .unwrap();
    let accounts = 5i64;
    let initial: Vec<_> = (0..accounts)
        .map(|k| vec![Some(Value::Int64(k)), Some(Value::Int64(100))])
        .collect();
    s.write_rows("//bank", WriteKind::Overwrite, false, initial)
        .await
        .unwrap();
    let mut workers = Vec::new();
    for w in 0..4u64 {
        let url = url.clone();
        workers.push(tokio::spawn(async move {
            let s = Store::open(&url).unwrap();
            let mut seed = w * 7 + 3;
            let mut committed = 0;
            for _ in 0..12 {
                seed = seed
                    .wrapping_mul(6364136223846793005)
                    .wrapping_add(1442695040888963407);
                let from = (seed >> 33) as i64 % accounts;
                let to = (from + 1 + (seed >> 40) as i64 % (accounts - 1)) % accounts;
                let tx = s.start_transaction(60_000).await.unwrap();
                let keys = vec![vec![Value::Int64(from)], vec![Value::Int64(to)]];
                let rows = s
                    .lookup_rows("//bank", &keys, tx.start_timestamp)
                    .await
                    .unwrap();
                let bal = |i: usize| match &rows[i].as_ref().unwrap()[1] {
                    Value::Int64(v) => *v,
                    other => panic!("{other:?}"),
                };
                let amount = 7;
                let writes = vec![
                    vec![
                        Some(Value::Int64(from)),
                        Some(Value::Int64(bal(0) - amount)),
                    ],
                    vec![Some(Value::Int64(to)), Some(Value::Int64(bal(1) + amount))],
                ];
                s.write_rows_in(&tx.id, "//bank", WriteKind::Overwrite, false, writes)
                    .await
                    .unwrap();
                match s.commit_transaction(&tx.id).await {
                    Ok(_) => committed += 1,
                    Err(Error::Conflict { .. }) => {}
                    Err(e) => panic!("unexpected {e}"),
                }
            }
            committed
        }));
    }
    let mut committed = 0;
    for w in workers {
        committed += w.await.unwrap();
    }
    assert!(committed > 0);
    let rows = Store::open(&url)
        .unwrap()
        .read_rows("//bank", Timestamp::MAX)
        .await
        .unwrap();
    let total: i64 = rows
        .iter()
        .map(|r| if let Value::Int64(v) = r[1] { v } else { 0 })
        .sum();
    assert_eq!(
        total,
        100 * accounts,
        "money was created or lost ({committed} transfers committed)"
    );
}

#[tokio::test]
async fn a_conflicting_write_is_found_after_it_was_flushed_to_a_chunk() {
    let s = table().await;
    let tx = s.start_transaction(60_000).await.unwrap();
    s.write_rows_in(&tx.id, "//t", WriteKind::Update, false, vec![row(1, 11)])
        .await
        .unwrap();
    // Another writer changes key 1 after the start; a flush moves that version to a chunk.
    s.write_rows("//t", WriteKind::Update, false, vec![row(1, 12)])
        .await
        .unwrap();
    assert!(!s.flush_table("//t").await.unwrap().is_empty());
    assert!(matches!(
        s.commit_transaction(&tx.id).await,
        Err(Error::Conflict { .. })
    ));
    // A transaction that started after the flush commits.
    let tx = s.start_transaction(60_000).await.unwrap();
    s.write_rows_in(&tx.id, "//t", WriteKind::Update, false, vec![row(1, 13)])
        .await
        .unwrap();
    s.commit_transaction(&tx.id).await.unwrap();
    assert_eq!(value(&s, 1, Timestamp::MAX).await, Some(Value::Int64(13)));
}

/// The bank invariant while other handles compact the table (retention that drops every old
/// version at once), checkpoint it, freeze and unfreeze it, and reshard it (unmount, new
/// pivots, mount): transfers that fail or
/// conflict change nothing, committed ones move money without creating or losing any.
#[tokio::test]
async fn bank_transfers_keep_the_total_under_compaction_and_freezes() {
    let dir = tempfile::tempdir().unwrap();
    let url = format!("file://{}", dir.path().display());
    let s = Store::open(&url).unwrap();
    let options = TableOptions {
        retention: dynql_storage::Retention {
            min_data_ttl: 0,
            max_data_ttl: 0,
            ..Default::default()
        },
        ..TableOptions::default()
    };
    s.create_table(
        "//bank",
        TableSchema::parse("[{name=k;type=int64;sort_order=ascending};{name=v;type=int64}]")
            .unwrap(),
        options,
    )
    .await
    .unwrap();
    let accounts = 4i64;
    let initial: Vec<_> = (0..accounts)
        .map(|k| vec![Some(Value::Int64(k)), Some(Value::Int64(100))])
        .collect();
    s.write_rows("//bank", WriteKind::Overwrite, false, initial)
        .await
        .unwrap();
    let done = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let mut chores = Vec::new();
    for chore in 0..2 {
        let url = url.clone();
        let done = done.clone();
        chores.push(tokio::spawn(async move {
            let s = Store::open(&url).unwrap();
            let mut rounds = 0;
            while !done.load(std::sync::atomic::Ordering::SeqCst) && rounds < 200 {
                rounds += 1;
                match chore {
                    0 => {
                        s.compact("//bank").await.unwrap();
                        if rounds % 4 == 0 {
                            s.checkpoint().await.unwrap();
                        }
                    }
                    _ if rounds % 3 == 0 => {
                        // Reshard: unmount, new pivots, mount.
                        s.set_tablet_state("//bank", dynql_storage::TabletCommand::Unmount)
                            .await
                            .unwrap();
                        let pivots = if rounds % 2 == 0 {
                            vec![vec![], vec![Value::Int64(2)]]
                        } else {
                            vec![vec![]]
                        };
                        s.reshard_table("//bank", dynql_storage::Reshard::Pivots(pivots))
                            .await
                            .unwrap();
                        s.set_tablet_state("//bank", dynql_storage::TabletCommand::Mount)
                            .await
                            .unwrap();
                    }
                    _ => {
                        s.set_tablet_state("//bank", dynql_storage::TabletCommand::Freeze)
                            .await
                            .unwrap();
                        tokio::task::yield_now().await;
                        s.set_tablet_state("//bank", dynql_storage::TabletCommand::Unfreeze)
                            .await
                            .unwrap();
                    }
                }
                tokio::task::yield_now().await;
            }
        }));
    }
    let mut workers = Vec::new();
    for w in 0..3u64 {
        let url = url.clone();
        workers.push(tokio::spawn(async move {
            let s = Store::open(&url).unwrap();
            let mut seed = w * 11 + 5;
            let mut committed = 0;
            // Each transfer is retried until it commits (chores refuse or conflict with many
            // attempts), so the test always moves money.
            let mut attempts = 0;
            while committed < 6 && attempts < 300 {
                attempts += 1;
                seed = seed
                    .wrapping_mul(6364136223846793005)
                    .wrapping_add(1442695040888963407);
                let from = (seed >> 33) as i64 % accounts;
                let to = (from + 1 + (seed >> 40) as i64 % (accounts - 1)) % accounts;
                let tx = s.start_transaction(60_000).await.unwrap();
                let keys = vec![vec![Value::Int64(from)], vec![Value::Int64(to)]];
                // An unmounted table refuses the read: the transfer is dropped.
                let Ok(rows) = s.lookup_rows("//bank", &keys, tx.start_timestamp).await else {
                    s.abort_transaction(&tx.id).await.unwrap();
                    continue;
                };
                let bal = |i: usize| match &rows[i].as_ref().unwrap()[1] {
                    Value::Int64(v) => *v,
                    other => panic!("{other:?}"),
                };
                let writes = vec![
                    vec![Some(Value::Int64(from)), Some(Value::Int64(bal(0) - 3))],
                    vec![Some(Value::Int64(to)), Some(Value::Int64(bal(1) + 3))],
                ];
                // A frozen table refuses the write or the commit: the transfer is dropped.
                if s.write_rows_in(&tx.id, "//bank", WriteKind::Overwrite, false, writes)
                    .await
                    .is_err()
                {
                    s.abort_transaction(&tx.id).await.unwrap();
                    continue;
                }
                match s.commit_transaction(&tx.id).await {
                    Ok(_) => committed += 1,
                    Err(
                        Error::Conflict { .. }
                        | Error::CompactedSinceStart { .. }
                        | Error::Invalid(_)
                        | Error::WrongState { .. },
                    ) => {}
                    Err(e) => panic!("unexpected {e}"),
                }
            }
            committed
        }));
    }
    let mut committed = 0;
    for w in workers {
        committed += w.await.unwrap();
    }
    eprintln!("bank under chores: {committed} transfers committed");
    assert!(committed > 0, "no transfer committed");
    done.store(true, std::sync::atomic::Ordering::SeqCst);
    for c in chores {
        c.await.unwrap();
    }
    let rows = Store::open(&url)
        .unwrap()
        .read_rows("//bank", Timestamp::MAX)
        .await
        .unwrap();
    let total: i64 = rows
        .iter()
        .map(|r| if let Value::Int64(v) = r[1] { v } else { 0 })
        .sum();
    assert_eq!(
        total,
        100 * accounts,
        "money was created or lost ({committed} transfers committed)"
    );
}

/// Issue 38: a read at a timestamp after the newest commit answered, then a later commit drew
/// a timestamp below it and the same read answered differently. Now such a read waits for the
/// clock to pass it (when it is close) or is refused, and commits draw timestamps above it.
#[tokio::test]
async fn a_read_at_a_timestamp_is_repeatable() {
    let s = table().await;
    let scan = |s: Store, at: Timestamp| async move {
        let rows = s.read_rows("//t", at).await?;
        let keys = s.lookup_rows("//t", &[vec![Value::Int64(3)]], at).await?;
        Ok::<_, Error>((rows, keys))
    };
    // A generated timestamp, the clock a moment later, and one just ahead of the clock.
    let generated = s.generate_timestamp().await.unwrap();
    let ahead = Timestamp(dynql_storage::Fresh::default().now().0 + 200_000_000);
    for at in [generated, ahead] {
        let before = scan(s.clone(), at).await.unwrap();
        for k in 3..6 {
            let committed = s
                .write_rows("//t", WriteKind::Overwrite, false, vec![row(k, k)])
                .await
                .unwrap();
            assert!(
                committed > at,
                "commit {committed:?} drew a timestamp below the read {at:?}"
            );
            assert_eq!(scan(s.clone(), at).await.unwrap(), before);
        }
        s.write_rows(
            "//t",
            WriteKind::Delete,
            false,
            (3..6)
                .map(|k| vec![Some(Value::Int64(k)), None, None])
                .collect(),
        )
        .await
        .unwrap();
    }
    // Far ahead of the clock: refused by every read, with the reason.
    let far = Timestamp(dynql_storage::Fresh::default().now().0 + (3600u64 << 30));
    let refused = scan(s.clone(), far).await.unwrap_err();
    assert!(
        matches!(&refused, Error::Invalid(m) if m.contains("ahead of the clock")),
        "{refused}"
    );
    assert!(s
        .scan_ranges("//t", None, far)
        .await
        .is_err_and(|e| e.to_string().contains("ahead of the clock")));
    // The sentinels and past timestamps read as before.
    assert_eq!(
        s.read_rows("//t", Timestamp::SYNC_LAST_COMMITTED)
            .await
            .unwrap()
            .len(),
        2
    );
    assert_eq!(s.read_rows("//t", Timestamp::MIN).await.unwrap().len(), 0);
}
