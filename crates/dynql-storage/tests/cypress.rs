//! The tree of nodes: directories, documents, scalar nodes, custom attributes, copy and move
//! of subtrees with tables in them; everything survives a reopen (log replay) and a
//! checkpoint, and refused changes leave the tree as it was.

use std::collections::BTreeMap;

use dynql_core::{TableSchema, Yson};
use dynql_storage::cypress::NodeKind;
use dynql_storage::{Store, TableOptions, Timestamp, WriteKind};

fn yson(text: &str) -> Yson {
    dynql_core::yson::parse(text.as_bytes()).unwrap()
}

fn schema() -> TableSchema {
    TableSchema::parse("[{name=k;type=int64;sort_order=ascending};{name=v;type=string}]").unwrap()
}

async fn table(s: &Store, path: &str, recursive: bool) -> dynql_storage::Result<()> {
    let options = TableOptions {
        recursive,
        ..TableOptions::default()
    };
    s.create_table(path, schema(), options).await
}

async fn get(s: &Store, path: &str) -> String {
    dynql_core::yson::to_text(&s.get_node(path, None).await.unwrap())
}

fn temp_store() -> (tempfile::TempDir, String) {
    let dir = tempfile::tempdir().unwrap();
    let url = format!("file://{}", dir.path().display());
    (dir, url)
}

#[tokio::test]
async fn directories_hold_tables_documents_and_values() {
    let (_dir, url) = temp_store();
    let s = Store::open(&url).unwrap();
    // The builtin directories are there from the start.
    assert_eq!(
        s.list_node("/", None).await.unwrap(),
        ["home", "sys", "tmp"]
    );
    // A missing parent is an error without recursive, and nothing is created.
    let err = table(&s, "//home/me/t", false).await.unwrap_err();
    assert!(
        err.to_string().contains("node //home/me does not exist"),
        "{err}"
    );
    assert!(!s.node_exists("//home/me", None).await.unwrap());
    table(&s, "//home/me/t", true).await.unwrap();
    assert_eq!(
        s.node("//home/me").await.unwrap().unwrap().type_name(),
        "map_node"
    );
    s.create_node(
        "//home/me/config",
        NodeKind::Document {
            value: "{retries=3; hosts=[a; b]}".into(),
        },
        BTreeMap::new(),
        false,
        false,
        None,
    )
    .await
    .unwrap();
    // Inside a document: get, set, remove by path.
    assert_eq!(get(&s, "//home/me/config/hosts/-1").await, "\"b\"");
    s.set_node("//home/me/config/hosts/end", &yson("c"), false, None)
        .await
        .unwrap();
    s.set_node("//home/me/config/retries", &yson("5"), false, None)
        .await
        .unwrap();
    s.remove_node("//home/me/config/hosts/0", false, false, None)
        .await
        .unwrap();
    assert_eq!(
        get(&s, "//home/me/config").await,
        "{\"retries\"=5;\"hosts\"=[\"b\";\"c\";];}"
    );
    // set of a new path makes nodes of the value: a map is a directory.
    s.set_node(
        "//home/me/limits",
        &yson("{cpu=4; mem={soft=1; hard=2}}"),
        false,
        None,
    )
    .await
    .unwrap();
    // A list node's items are reached by index, as a document's.
    s.set_node("//home/me/hosts", &yson("[a; b]"), false, None)
        .await
        .unwrap();
    s.set_node("//home/me/hosts/-1", &yson("c"), false, None)
        .await
        .unwrap();
    assert_eq!(get(&s, "//home/me/hosts/1").await, "\"c\"");
    s.remove_node("//home/me/hosts/0", false, false, None)
        .await
        .unwrap();
    assert_eq!(get(&s, "//home/me/hosts").await, "[\"c\";]");
    assert_eq!(
        s.node("//home/me/hosts")
            .await
            .unwrap()
            .unwrap()
            .type_name(),
        "list_node"
    );
    s.remove_node("//home/me/hosts", false, false, None)
        .await
        .unwrap();
    assert_eq!(
        s.node("//home/me/limits/mem/hard")
            .await
            .unwrap()
            .unwrap()
            .type_name(),
        "int64_node"
    );
    assert_eq!(
        s.list_node("//home/me", None).await.unwrap(),
        ["config", "limits", "t"]
    );
    // Nothing lives under a table or a scalar.
    for path in ["//home/me/t/x", "//home/me/limits/cpu/x"] {
        let err = s
            .create_node(path, NodeKind::MapNode, BTreeMap::new(), true, false, None)
            .await
            .unwrap_err();
        let err = err.to_string();
        assert!(
            err.contains("not a map_node") || err.contains("inside the value"),
            "{err}"
        );
    }
    // A directory that is not empty goes only with recursive.
    let err = s
        .remove_node("//home/me", false, false, None)
        .await
        .unwrap_err();
    assert!(
        err.to_string().contains("non-empty composite node"),
        "{err}"
    );
    let err = s.remove_node("//tmp", true, false, None).await.unwrap_err();
    assert!(err.to_string().contains("builtin"), "{err}");
    // All of it replays.
    let again = Store::open(&url).unwrap();
    assert_eq!(get(&again, "//home/me").await, get(&s, "//home/me").await);
    s.remove_node("//home/me", true, false, None).await.unwrap();
    assert!(s.table("//home/me/t").await.is_err());
    assert_eq!(
        s.list_node("//home", None).await.unwrap(),
        Vec::<String>::new()
    );
    s.remove_node("//home/me", false, true, None).await.unwrap();
}

#[tokio::test]
async fn copy_and_move_take_subtrees_with_their_tables() {
    let (_dir, url) = temp_store();
    let s = Store::open(&url).unwrap();
    table(&s, "//home/a/data/t", true).await.unwrap();
    let row = vec![Some(dynql_core::Value::Int64(1)), None];
    s.write_rows("//home/a/data/t", WriteKind::Overwrite, false, vec![row])
        .await
        .unwrap();
    s.set_node("//home/a/meta", &yson("<owner=alice>{v=1}"), false, None)
        .await
        .unwrap();
    s.set_custom_attribute("//home/a/data/t", "tags", Some(&yson("[x; y]")), None)
        .await
        .unwrap();
    // The destination's parent must exist (or recursive), and a node there is kept unless
    // forced.
    let err = s
        .copy_node("//home/a", "//home/b/a", true, false, false, None)
        .await
        .unwrap_err();
    assert!(err.to_string().contains("does not exist"), "{err}");
    s.copy_node("//home/a", "//home/b/a", true, true, false, None)
        .await
        .unwrap();
    let err = s
        .copy_node("//home/a", "//home/b/a", true, false, false, None)
        .await
        .unwrap_err();
    assert!(err.to_string().contains("already exists"), "{err}");
    let err = s
        .copy_node("//home/a", "//home/a/x", true, false, false, None)
        .await
        .unwrap_err();
    assert!(err.to_string().contains("into itself"), "{err}");
    // The copy has new ids, the same rows, values and attributes.
    let original = s.table("//home/a/data/t").await.unwrap();
    let copy = s.table("//home/b/a/data/t").await.unwrap();
    assert_ne!(original.id, copy.id);
    assert_eq!(copy.custom_attributes["tags"], "[\"x\";\"y\";]");
    assert_eq!(
        s.read_rows("//home/b/a/data/t", Timestamp::MAX)
            .await
            .unwrap()
            .len(),
        1
    );
    assert_eq!(get(&s, "//home/b/a/meta").await, "{\"v\"=1;}");
    // A move keeps ids and leaves nothing behind.
    s.copy_node("//home/a", "//tmp/a", false, false, false, None)
        .await
        .unwrap();
    assert!(!s.node_exists("//home/a", None).await.unwrap());
    assert_eq!(s.table("//tmp/a/data/t").await.unwrap().id, original.id);
    // Forced: the destination is replaced.
    s.copy_node("//tmp/a", "//home/b/a", false, false, true, None)
        .await
        .unwrap();
    assert_eq!(s.table("//home/b/a/data/t").await.unwrap().id, original.id);
    s.checkpoint().await.unwrap();
    let again = Store::open(&url).unwrap();
    assert_eq!(get(&again, "/").await, get(&s, "/").await);
    let meta = again.node("//home/b/a/meta").await.unwrap().unwrap();
    assert_eq!(meta.custom_attributes()["owner"], "\"alice\"");
}

#[tokio::test]
async fn custom_attributes_live_on_every_node() {
    let s = Store::open("memory://").unwrap();
    table(&s, "//t", false).await.unwrap();
    s.set_custom_attribute("//t", "conf", Some(&yson("{a={b=1}}")), None)
        .await
        .unwrap();
    s.set_custom_attribute("//t", "conf/a/c", Some(&yson("2")), None)
        .await
        .unwrap();
    assert_eq!(
        s.table("//t").await.unwrap().custom_attributes["conf"],
        "{\"a\"={\"b\"=1;\"c\"=2;};}"
    );
    s.set_custom_attribute("//t", "conf", None, None)
        .await
        .unwrap();
    assert!(s.table("//t").await.unwrap().custom_attributes.is_empty());
    let err = s
        .set_custom_attribute("//t", "conf", None, None)
        .await
        .unwrap_err();
    assert!(err.to_string().contains("not found"), "{err}");
    // An implicit directory becomes a node to carry one.
    s.set_custom_attribute("//tmp", "owner", Some(&yson("me")), None)
        .await
        .unwrap();
    let tmp = s.node("//tmp").await.unwrap().unwrap();
    assert_eq!(tmp.custom_attributes()["owner"], "\"me\"");
    for name in ["id", "type", "child_count"] {
        let err = s
            .set_custom_attribute("//tmp", name, Some(&yson("1")), None)
            .await
            .unwrap_err();
        assert!(err.to_string().contains("Builtin attribute"), "{err}");
    }
}

/// The size of the newest log record of the store in `dir`.
fn newest_record_bytes(dir: &std::path::Path) -> u64 {
    let mut records: Vec<_> = std::fs::read_dir(dir.join("_log"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    records.sort();
    std::fs::metadata(records.last().unwrap()).unwrap().len()
}

/// Issue 38: node actions name a node relative to its parent in the log, so one command on
/// a chain of nodes writes a record that grows with the number of nodes, not with the square
/// of the depth.
#[tokio::test]
async fn a_deep_chain_of_nodes_writes_a_record_linear_in_its_depth() {
    let (dir, url) = temp_store();
    let s = Store::open(&url).unwrap();
    let name = "n".repeat(30);
    let depth = dynql_storage::MAX_PATH_DEPTH;
    let deep = |root: &str| format!("//{root}{}", format!("/{name}").repeat(depth - 1));
    // About 1 KB per node (its id, written in the body, the header's two copies and the next
    // record's summary); full paths came to 536 KB for the creation alone.
    let bound = 1000 * depth as u64;
    let kinds = || (NodeKind::MapNode, BTreeMap::new());

    let (kind, attributes) = kinds();
    s.create_node(&deep("a"), kind, attributes, true, false, None)
        .await
        .unwrap();
    let created = newest_record_bytes(dir.path());
    assert!(created < bound, "create -r wrote {created} bytes");

    s.copy_node("//a", "//b", true, false, false, None)
        .await
        .unwrap();
    let copied = newest_record_bytes(dir.path());
    assert!(copied < bound, "copy wrote {copied} bytes");

    let tx = s
        .start_master_transaction(None, 60_000, None)
        .await
        .unwrap()
        .id;
    let (kind, attributes) = kinds();
    s.create_node(&deep("c"), kind, attributes, true, false, Some(&tx))
        .await
        .unwrap();
    let staged = newest_record_bytes(dir.path());
    assert!(
        staged < bound,
        "create -r in a transaction wrote {staged} bytes"
    );
    let reopened = Store::open(&url).unwrap();
    assert!(reopened.node_exists(&deep("c"), Some(&tx)).await.unwrap());
    assert!(!reopened.node_exists("//c", None).await.unwrap());
    s.commit_master_transaction(&tx).await.unwrap();

    s.remove_node("//b", true, false, None).await.unwrap();
    let removed = newest_record_bytes(dir.path());
    assert!(removed < bound, "remove -r wrote {removed} bytes");

    // Replay resolves the relative paths: a reopened store sees the same tree.
    let reopened = Store::open(&url).unwrap();
    assert!(reopened.node_exists(&deep("a"), None).await.unwrap());
    assert!(reopened.node_exists(&deep("c"), None).await.unwrap());
    assert!(!reopened.node_exists("//b", None).await.unwrap());
    assert_eq!(
        reopened.get_node("//a", None).await.unwrap(),
        s.get_node("//a", None).await.unwrap()
    );
}

/// Issue 38: one `create map_node -r` of 20,000 levels wrote a 1.2 GB log record and made
/// `exists //m` run for minutes, then overflow the stack. Paths are bounded now, checked
/// before any work, and `exists` does not build the value below a node.
#[tokio::test]
async fn deep_and_long_paths_are_refused_before_any_work() {
    let (_dir, url) = temp_store();
    let s = Store::open(&url).unwrap();
    let deep = |levels: usize| format!("//m{}", "/m".repeat(levels - 1));
    let before = s.last_committed_timestamp().await.unwrap();
    for path in [deep(20_000), deep(dynql_storage::MAX_PATH_DEPTH + 1)] {
        let err = s
            .create_node(&path, NodeKind::MapNode, BTreeMap::new(), true, false, None)
            .await
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("levels deep") || err.contains("bytes a path"),
            "{err}"
        );
        assert!(
            err.len() < 400,
            "the error quotes the whole path: {} bytes",
            err.len()
        );
    }
    let long = format!("//{}", "n".repeat(dynql_storage::MAX_PATH_BYTES));
    let err = s
        .create_node(&long, NodeKind::MapNode, BTreeMap::new(), true, false, None)
        .await
        .unwrap_err()
        .to_string();
    assert!(err.contains("4096 bytes"), "{err}");
    assert_eq!(
        s.last_committed_timestamp().await.unwrap(),
        before,
        "something was logged"
    );
    assert!(!s.node_exists("//m", None).await.unwrap());
    // At the limit it works, and reads of it are quick.
    let deepest = deep(dynql_storage::MAX_PATH_DEPTH);
    s.create_node(
        &deepest,
        NodeKind::MapNode,
        BTreeMap::new(),
        true,
        false,
        None,
    )
    .await
    .unwrap();
    assert!(s.node_exists("//m", None).await.unwrap());
    assert!(s.node_exists(&deepest, None).await.unwrap());
    assert!(s.get_node("//m", None).await.is_ok());
    // A value whose maps would make nodes past the limit is refused too.
    let nested = format!("{}1{}", "{a=".repeat(8), "}".repeat(8));
    let err = s
        .set_node(&deepest[..deepest.len() - 2], &yson(&nested), true, None)
        .await
        .unwrap_err()
        .to_string();
    assert!(err.contains("levels deep"), "{err}");
    assert!(
        s.get_node(&deepest, None).await.is_ok(),
        "the refused set changed the tree"
    );
    // The store opens again quickly and sees the same tree.
    let reopened = Store::open(&url).unwrap();
    assert!(reopened.node_exists(&deepest, None).await.unwrap());
}
