//! Snapshot locks fix the node, not the path (issue 39, items 1-3 and 5): the locked
//! version is what the transaction and those nested in it read by path too, while the path
//! leads to that node; a snapshot lock never waits; a changed branch cannot be unlocked
//! unless the only explicit locks on it are snapshots; the first read of a static table in
//! a transaction pins what later reads see without keeping the transaction from writing it.

use std::collections::BTreeMap;

use dynql_storage::cypress::locks::{LockMode, LockState};
use dynql_storage::cypress::{LockOptions, NodeKind};
use dynql_storage::static_table::TableRead;
use dynql_storage::Store;

use super::merging::{append, static_table};
use super::{map_node, start, yson};

async fn document(s: &Store, path: &str, value: &str) {
    let kind = NodeKind::Document {
        value: value.into(),
    };
    s.create_node(path, kind, BTreeMap::new(), false, false, None)
        .await
        .unwrap();
}

async fn snapshot(s: &Store, path: &str, tx: &str) -> String {
    s.lock_node(path, tx, LockMode::Snapshot, LockOptions::default())
        .await
        .unwrap()
        .lock_id
}

/// The keys of the static table at `path`, as `tx` reads them.
async fn keys(s: &Store, path: &str, tx: Option<&str>) -> Vec<i64> {
    let TableRead::Static { chunks, .. } = s.table_for_read(path, tx).await.unwrap() else {
        panic!("{path} is static");
    };
    let mut keys = Vec::new();
    for chunk in &chunks {
        for batch in s.read_static_chunk(chunk).await.unwrap() {
            let column = batch
                .column(0)
                .as_any()
                .downcast_ref::<arrow::array::Int64Array>()
                .unwrap();
            keys.extend(column.iter().flatten());
        }
    }
    keys
}

#[tokio::test]
async fn the_locked_version_is_read_by_path_in_the_transaction_and_its_nested_ones() {
    let s = Store::open("memory://").unwrap();
    document(&s, "//tmp/config", "{v=1}").await;
    let tx = start(&s, None).await;
    let nested = start(&s, Some(&tx)).await;
    snapshot(&s, "//tmp/config", &tx).await;
    s.set_node("//tmp/config/v", &yson("2"), false, None)
        .await
        .unwrap();
    s.set_custom_attribute("//tmp/config", "a", Some(&yson("1")), None)
        .await
        .unwrap();
    for t in [&tx, &nested] {
        assert_eq!(
            s.get_node("//tmp/config", Some(t)).await.unwrap(),
            yson("{v=1}")
        );
        let node = s.node_in("//tmp/config", Some(t)).await.unwrap().unwrap();
        assert!(node.custom_attributes().is_empty(), "{t}");
    }
    assert_eq!(
        s.get_node("//tmp/config", None).await.unwrap(),
        yson("{v=2}")
    );
    // Another node at the path: the path shows it.
    s.remove_node("//tmp/config", false, false, None)
        .await
        .unwrap();
    document(&s, "//tmp/config", "{v=3}").await;
    assert_eq!(
        s.get_node("//tmp/config", Some(&tx)).await.unwrap(),
        yson("{v=3}")
    );
}

#[tokio::test]
async fn a_snapshot_lock_keeps_the_changes_made_before_it_once() {
    let s = Store::open("memory://").unwrap();
    static_table(&s, "//tmp/t").await;
    append(&s, "//tmp/t", None, &[1]).await;
    let tx = start(&s, None).await;
    append(&s, "//tmp/t", Some(&tx), &[2]).await;
    s.set_custom_attribute("//tmp/t", "mine", Some(&yson("1")), Some(&tx))
        .await
        .unwrap();
    snapshot(&s, "//tmp/t", &tx).await;
    append(&s, "//tmp/t", None, &[3]).await;
    assert_eq!(keys(&s, "//tmp/t", Some(&tx)).await, [1, 2]);
    let node = s.node_in("//tmp/t", Some(&tx)).await.unwrap().unwrap();
    assert_eq!(
        node.custom_attributes().get("mine").map(String::as_str),
        Some("1")
    );
    assert_eq!(keys(&s, "//tmp/t", None).await, [1, 3]);
}

#[tokio::test]
async fn a_waitable_snapshot_lock_never_waits() {
    let s = Store::open("memory://").unwrap();
    map_node(&s, "//tmp/n").await;
    let holder = start(&s, None).await;
    let waiter = start(&s, None).await;
    let reader = start(&s, None).await;
    s.lock_node(
        "//tmp/n",
        &holder,
        LockMode::Exclusive,
        LockOptions::default(),
    )
    .await
    .unwrap();
    let waitable = LockOptions {
        waitable: true,
        ..LockOptions::default()
    };
    let queued = s
        .lock_node("//tmp/n", &waiter, LockMode::Exclusive, waitable.clone())
        .await
        .unwrap();
    assert_eq!(queued.state, LockState::Pending);
    let taken = s
        .lock_node("//tmp/n", &reader, LockMode::Snapshot, waitable)
        .await
        .unwrap();
    assert_eq!(taken.state, LockState::Acquired);
}

#[tokio::test]
async fn a_changed_branch_stays_locked_but_a_snapshot_lock_can_always_go() {
    let s = Store::open("memory://").unwrap();
    map_node(&s, "//tmp/dir").await;
    let tx = start(&s, None).await;
    s.lock_node(
        "//tmp/dir",
        &tx,
        LockMode::Exclusive,
        LockOptions::default(),
    )
    .await
    .unwrap();
    map_node_in(&s, "//tmp/dir/child", &tx).await;
    let err = s.unlock_node("//tmp/dir", &tx).await.unwrap_err();
    assert!(
        err.to_string().contains("branched version has changes"),
        "{err}"
    );
    // A change of a grandchild is the child's, not the directory's.
    let other = start(&s, None).await;
    map_node(&s, "//tmp/dir2").await;
    map_node(&s, "//tmp/dir2/child").await;
    s.lock_node(
        "//tmp/dir2",
        &other,
        LockMode::Shared,
        LockOptions::default(),
    )
    .await
    .unwrap();
    s.set_custom_attribute("//tmp/dir2/child", "a", Some(&yson("1")), Some(&other))
        .await
        .unwrap();
    s.unlock_node("//tmp/dir2", &other).await.unwrap();
    // An explicit snapshot lock on a node the transaction changed can be released.
    let third = start(&s, None).await;
    s.set_custom_attribute("//tmp/dir2", "b", Some(&yson("1")), Some(&third))
        .await
        .unwrap();
    let lock = snapshot(&s, "//tmp/dir2", &third).await;
    s.unlock_node("//tmp/dir2", &third).await.unwrap();
    assert!(s.object(&lock, None).await.unwrap().is_none());
}

async fn map_node_in(s: &Store, path: &str, tx: &str) {
    s.create_node(
        path,
        NodeKind::MapNode,
        BTreeMap::new(),
        false,
        false,
        Some(tx),
    )
    .await
    .unwrap();
}

#[tokio::test]
async fn the_first_read_of_a_static_table_pins_later_reads() {
    let s = Store::open("memory://").unwrap();
    static_table(&s, "//tmp/t").await;
    append(&s, "//tmp/t", None, &[1]).await;
    let tx = start(&s, None).await;
    let nested = start(&s, Some(&tx)).await;
    s.take_read_snapshot("//tmp/t", &tx).await.unwrap();
    assert_eq!(keys(&s, "//tmp/t", Some(&tx)).await, [1]);
    append(&s, "//tmp/t", None, &[2]).await;
    assert_eq!(keys(&s, "//tmp/t", Some(&tx)).await, [1]);
    assert_eq!(keys(&s, "//tmp/t", Some(&nested)).await, [1]);
    // Reading again takes nothing more.
    s.take_read_snapshot("//tmp/t", &tx).await.unwrap();
    s.take_read_snapshot("//tmp/t", &nested).await.unwrap();
    // The transaction and its nested ones may still write the table.
    append(&s, "//tmp/t", Some(&nested), &[3]).await;
    s.commit_master_transaction(&nested).await.unwrap();
    append(&s, "//tmp/t", Some(&tx), &[4]).await;
    assert_eq!(keys(&s, "//tmp/t", Some(&tx)).await, [1, 3, 4]);
    // An explicit snapshot lock taken after the read keeps what was read.
    snapshot(&s, "//tmp/t", &tx).await;
    assert_eq!(keys(&s, "//tmp/t", Some(&tx)).await, [1, 3, 4]);
    s.commit_master_transaction(&tx).await.unwrap();
    assert_eq!(keys(&s, "//tmp/t", None).await, [1, 2, 3, 4]);
}
