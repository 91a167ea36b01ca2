//! Concurrent master transactions that change different keys of one node (issue 38, item
//! 3): shared attribute-key and child-key locks let them, and every change lands. Commit
//! merges what each transaction changed, key by key, never its whole copy of the node; and
//! a transaction reads the committed keys it did not change (read committed).

use std::collections::BTreeMap;

use dynql_core::{TableSchema, Value};
use dynql_storage::{Error, Store, TableOptions};

use super::{map_node, start, yson};

/// The custom attributes of `path` as `tx` sees them, values as YSON text.
async fn attributes(s: &Store, path: &str, tx: Option<&str>) -> BTreeMap<String, String> {
    s.node_in(path, tx)
        .await
        .unwrap()
        .unwrap_or_else(|| panic!("{path} is there in {tx:?}"))
        .custom_attributes()
}

/// `names=values`, the way the assertions write attributes.
fn attrs(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
    pairs
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect()
}

async fn set(s: &Store, path: &str, name: &str, value: &str, tx: Option<&str>) {
    s.set_custom_attribute(path, name, Some(&yson(value)), tx)
        .await
        .unwrap();
}

pub(super) async fn static_table(s: &Store, path: &str) {
    let options = TableOptions {
        static_table: true,
        ..TableOptions::default()
    };
    let schema = TableSchema::parse("[{name=k;type=int64}]").unwrap();
    s.create_table(path, schema, options).await.unwrap();
}

/// Appends rows with keys `keys` to the static table at `path`.
pub(super) async fn append(s: &Store, path: &str, tx: Option<&str>, keys: &[i64]) {
    let mut w = s.start_static_write(path, tx, true).await.unwrap();
    s.write_static_rows(
        &mut w,
        keys.iter().map(|&k| vec![Value::Int64(k)]).collect(),
    )
    .await
    .unwrap();
    s.commit_static_write(w).await.unwrap();
}

/// The number of rows of the static table at `path` as `tx` reads it.
async fn row_count(s: &Store, path: &str, tx: Option<&str>) -> u64 {
    match s.table_for_read(path, tx).await.unwrap() {
        dynql_storage::static_table::TableRead::Static { chunks, .. } => {
            chunks.iter().map(|c| c.rows).sum()
        }
        _ => panic!("{path} is static"),
    }
}

/// A map node and a static table, each with the attribute `gone` set outside transactions.
async fn targets(s: &Store) -> [&'static str; 2] {
    map_node(s, "//tmp/m").await;
    static_table(s, "//tmp/t").await;
    for path in ["//tmp/m", "//tmp/t"] {
        set(s, path, "gone", "0", None).await;
    }
    ["//tmp/m", "//tmp/t"]
}

/// T1 sets `@p`, T2 sets `@q` and removes `@gone`, the outside sets `@r`: each sees the
/// committed keys it did not change, and after both commit every change is there. The
/// store is a directory so that a second process, and a checkpoint, see the same.
#[tokio::test]
async fn concurrent_attribute_changes_all_land_on_map_nodes_and_tables() {
    let dir = tempfile::tempdir().unwrap();
    let url = format!("file://{}", dir.path().display());
    let s = Store::open(&url).unwrap();
    let paths = targets(&s).await;
    let t1 = start(&s, None).await;
    let t2 = start(&s, None).await;
    for path in paths {
        set(&s, path, "p", "1", Some(&t1)).await;
        set(&s, path, "q", "2", Some(&t2)).await;
        s.set_custom_attribute(path, "gone", None, Some(&t2))
            .await
            .unwrap();
        set(&s, path, "r", "3", None).await;
    }
    let views = |s: Store| {
        let (t1, t2) = (t1.clone(), t2.clone());
        async move {
            for path in paths {
                assert_eq!(
                    attributes(&s, path, Some(&t1)).await,
                    attrs(&[("gone", "0"), ("p", "1"), ("r", "3")]),
                    "{path} in T1"
                );
                assert_eq!(
                    attributes(&s, path, Some(&t2)).await,
                    attrs(&[("q", "2"), ("r", "3")]),
                    "{path} in T2"
                );
                assert_eq!(
                    attributes(&s, path, None).await,
                    attrs(&[("gone", "0"), ("r", "3")]),
                    "{path} outside"
                );
            }
        }
    };
    views(s.clone()).await;
    // Another process replays the staged changes; a checkpoint keeps them.
    views(Store::open(&url).unwrap()).await;
    Store::open(&url).unwrap().checkpoint().await.unwrap();
    let s = Store::open(&url).unwrap();
    views(s.clone()).await;
    s.commit_master_transaction(&t2).await.unwrap();
    for path in paths {
        let committed = attrs(&[("q", "2"), ("r", "3")]);
        assert_eq!(attributes(&s, path, None).await, committed, "{path}");
        assert_eq!(
            attributes(&s, path, Some(&t1)).await,
            attrs(&[("p", "1"), ("q", "2"), ("r", "3")]),
            "{path} in T1 after T2 committed"
        );
    }
    s.commit_master_transaction(&t1).await.unwrap();
    let all = attrs(&[("p", "1"), ("q", "2"), ("r", "3")]);
    for s in [s.clone(), Store::open(&url).unwrap()] {
        for path in paths {
            assert_eq!(attributes(&s, path, None).await, all, "{path}");
        }
    }
}

/// An attribute set outside transactions on a builtin directory survives the commit of a
/// transaction that set another attribute of it.
#[tokio::test]
async fn a_change_outside_transactions_survives_a_commit() {
    let s = Store::open("memory://").unwrap();
    let tx = start(&s, None).await;
    set(&s, "//tmp", "p", "1", Some(&tx)).await;
    set(&s, "//tmp", "r", "2", None).await;
    s.commit_master_transaction(&tx).await.unwrap();
    assert_eq!(
        attributes(&s, "//tmp", None).await,
        attrs(&[("p", "1"), ("r", "2")])
    );
}

/// Nested siblings C1 and C2 of T and T itself set different attributes: after the nested
/// commits and T's, all are there; a sibling reads what the other committed into T.
#[tokio::test]
async fn nested_siblings_merge_their_keys_into_the_parent() {
    let s = Store::open("memory://").unwrap();
    let paths = targets(&s).await;
    let t = start(&s, None).await;
    let c1 = start(&s, Some(&t)).await;
    let c2 = start(&s, Some(&t)).await;
    for path in paths {
        set(&s, path, "a", "1", Some(&c1)).await;
        set(&s, path, "b", "2", Some(&c2)).await;
        set(&s, path, "c", "3", Some(&t)).await;
    }
    s.commit_master_transaction(&c1).await.unwrap();
    for path in paths {
        assert_eq!(
            attributes(&s, path, Some(&c2)).await,
            attrs(&[("a", "1"), ("b", "2"), ("c", "3"), ("gone", "0")]),
            "{path} in C2"
        );
    }
    s.commit_master_transaction(&c2).await.unwrap();
    s.commit_master_transaction(&t).await.unwrap();
    for path in paths {
        assert_eq!(
            attributes(&s, path, None).await,
            attrs(&[("a", "1"), ("b", "2"), ("c", "3"), ("gone", "0")]),
            "{path}"
        );
    }
}

/// T sets `@p`; T2 sets `@q` and commits; then T replaces the node's value (an exclusive
/// lock, T2's locks having ended). The value change carries no stale attributes: a document
/// and a scalar node both keep `q`.
#[tokio::test]
async fn a_value_change_keeps_attributes_another_transaction_committed() {
    let s = Store::open("memory://").unwrap();
    s.create_node(
        "//tmp/doc",
        dynql_storage::cypress::NodeKind::Document {
            value: "{v=1}".into(),
        },
        BTreeMap::new(),
        false,
        false,
        None,
    )
    .await
    .unwrap();
    s.set_node("//tmp/s", &yson("1"), false, None)
        .await
        .unwrap();
    for (path, value) in [("//tmp/doc", "{v=2}"), ("//tmp/s", "2")] {
        let t = start(&s, None).await;
        let t2 = start(&s, None).await;
        set(&s, path, "p", "1", Some(&t)).await;
        set(&s, path, "q", "2", Some(&t2)).await;
        s.commit_master_transaction(&t2).await.unwrap();
        s.set_node(path, &yson(value), false, Some(&t))
            .await
            .unwrap();
        let both = attrs(&[("p", "1"), ("q", "2")]);
        assert_eq!(attributes(&s, path, Some(&t)).await, both, "{path} in T");
        s.commit_master_transaction(&t).await.unwrap();
        assert_eq!(s.get_node(path, None).await.unwrap(), yson(value), "{path}");
        assert_eq!(attributes(&s, path, None).await, both, "{path}");
    }
}

/// A transaction appends rows to a static table while another sets an attribute of it:
/// whichever commits first, both the rows and the attribute are there.
#[tokio::test]
async fn rows_and_attributes_of_a_table_merge() {
    let s = Store::open("memory://").unwrap();
    static_table(&s, "//tmp/t").await;
    append(&s, "//tmp/t", None, &[1]).await;
    let writer = start(&s, None).await;
    let setter = start(&s, None).await;
    append(&s, "//tmp/t", Some(&writer), &[2, 3]).await;
    set(&s, "//tmp/t", "q", "1", Some(&setter)).await;
    assert_eq!(row_count(&s, "//tmp/t", Some(&setter)).await, 1);
    s.commit_master_transaction(&setter).await.unwrap();
    assert_eq!(
        attributes(&s, "//tmp/t", Some(&writer)).await,
        attrs(&[("q", "1")])
    );
    assert_eq!(row_count(&s, "//tmp/t", Some(&writer)).await, 3);
    s.commit_master_transaction(&writer).await.unwrap();
    assert_eq!(attributes(&s, "//tmp/t", None).await, attrs(&[("q", "1")]));
    assert_eq!(row_count(&s, "//tmp/t", None).await, 3);
}

/// Children are keys of their parent too: T1 creates `a`, T2 creates `b` and removes `c`.
#[tokio::test]
async fn concurrent_child_changes_all_land() {
    let s = Store::open("memory://").unwrap();
    map_node(&s, "//tmp/m").await;
    s.set_node("//tmp/m/c", &yson("0"), false, None)
        .await
        .unwrap();
    let t1 = start(&s, None).await;
    let t2 = start(&s, None).await;
    s.set_node("//tmp/m/a", &yson("1"), false, Some(&t1))
        .await
        .unwrap();
    s.set_node("//tmp/m/b", &yson("2"), false, Some(&t2))
        .await
        .unwrap();
    s.remove_node("//tmp/m/c", false, false, Some(&t2))
        .await
        .unwrap();
    set(&s, "//tmp/m", "p", "1", Some(&t1)).await;
    s.commit_master_transaction(&t2).await.unwrap();
    s.commit_master_transaction(&t1).await.unwrap();
    assert_eq!(
        s.get_node("//tmp/m", None).await.unwrap(),
        yson("{a=1;b=2}")
    );
    assert_eq!(attributes(&s, "//tmp/m", None).await, attrs(&[("p", "1")]));
    assert!(matches!(
        s.get_node("//tmp/m/c", None).await,
        Err(Error::NoSuchNode { .. })
    ));
}
