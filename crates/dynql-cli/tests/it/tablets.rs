//! Tablets of sorted tables through the CLI: uniform pivots at creation, `reshard-table` by
//! pivots and by tablet count, `get PATH/@…`, and results that never change.

use serde_json::{json, Value};

use crate::TestStore;

fn query(store: &TestStore, q: &str) -> String {
    store.ok(&["select-rows", q, "--format", "json"], None)
}

fn get(store: &TestStore, attribute: &str) -> Value {
    let out = store.ok(
        &["get", &format!("//t/@{attribute}"), "--format", "json"],
        None,
    );
    serde_json::from_str(&out).unwrap()
}

#[test]
fn tablet_count_at_creation_splits_a_hash_key_uniformly() {
    let store = TestStore::new();
    store.ok(
        &[
            "create",
            "table",
            "//t",
            "--attributes",
            r#"{dynamic=%true; tablet_count=4; schema=[{name=h; type=uint64; sort_order=ascending; expression="farm_hash(k)"}; {name=k; type=int64; sort_order=ascending}; {name=v; type=int64}]}"#,
        ],
        None,
    );
    assert_eq!(get(&store, "tablet_count"), json!(4));
    assert_eq!(
        get(&store, "pivot_keys"),
        json!([
            [],
            [4611686018427387904u64],
            [9223372036854775808u64],
            [13835058055282163712u64]
        ])
    );
    let yson = store.ok(&["get", "//t/@tablet_count"], None);
    assert_eq!(yson.trim(), "4");
    // A string first key column cannot be split uniformly.
    let err = store.fails(
        &[
            "create",
            "table",
            "//s",
            "--attributes",
            "{dynamic=%true; tablet_count=2; schema=[{name=k; type=string; sort_order=ascending}]}",
        ],
        None,
    );
    assert!(err.contains("integer first key column"), "{err}");
}

#[test]
fn resharding_never_changes_query_results() {
    let store = TestStore::new();
    store.ok(
        &[
            "create",
            "table",
            "//t",
            "--attributes",
            "{dynamic=%true; schema=[{name=k; type=int64; sort_order=ascending}; {name=v; type=string}]}",
        ],
        None,
    );
    let rows: String = (0..300)
        .map(|i| format!("{{k={i}; v=\"v{i}\"}};"))
        .collect();
    store.ok(&["insert-rows", "//t"], Some(&rows));
    let q = "k, v from [//t] where k between 95 and 205 order by k limit 1000";
    let before = query(&store, q);
    // As in YT, resharding needs the table unmounted.
    let err = store.fails(&["reshard-table", "//t", "[]", "[100]"], None);
    assert!(err.contains("unmount-table first"), "{err}");
    store.ok(&["unmount-table", "//t", "--sync"], None);
    // Flags may follow the pivot keys, as `yt` takes them (the seed's own example).
    store.ok(
        &["reshard-table", "//t", "[]", "[100]", "[200]", "--sync"],
        None,
    );
    store.ok(&["mount-table", "//t", "--sync"], None);
    assert_eq!(get(&store, "pivot_keys"), json!([[], [100], [200]]));
    assert_eq!(query(&store, q), before);
    let e: Value = serde_json::from_str(&store.ok(
        &[
            "explain-query",
            "* from [//t] where k between 120 and 130",
            "--format",
            "json",
        ],
        None,
    ))
    .unwrap();
    assert_eq!(e["read"]["tablets"], json!([1, 3]));
    // By count: pivots from the data.
    store.ok(&["unmount-table", "//t"], None);
    store.ok(
        &[
            "reshard-table",
            "//t",
            "--tablet-count",
            "5",
            "--enable-slicing",
            "--sync",
        ],
        None,
    );
    store.ok(&["mount-table", "//t"], None);
    assert_eq!(get(&store, "tablet_count"), json!(5));
    assert_eq!(
        get(&store, "pivot_keys"),
        json!([[], [60], [120], [180], [240]])
    );
    assert_eq!(query(&store, q), before);
    assert_eq!(get(&store, "row_count"), json!(300));
    // Bad pivots are refused and change nothing.
    store.ok(&["unmount-table", "//t"], None);
    let err = store.fails(&["reshard-table", "//t", "[]", "[5]", "[5]"], None);
    assert!(err.contains("strictly increasing"), "{err}");
    assert_eq!(get(&store, "tablet_count"), json!(5));
    let err = store.fails(&["reshard-table", "//t", "[1]"], None);
    assert!(err.contains("first pivot key must be empty"), "{err}");
    store.ok(&["mount-table", "//t"], None);
    let err = store.fails(&["get", "//t/@no_such_attribute"], None);
    assert!(err.contains("not found"), "{err}");
    let all: Value =
        serde_json::from_str(&store.ok(&["get", "//t/@", "--format", "json"], None)).unwrap();
    assert_eq!(all["key_columns"], json!(["k"]));
    assert_eq!(all["dynamic"], json!(true));
}

#[test]
fn tablet_states_gate_reads_and_writes() {
    let store = TestStore::new();
    store.ok(
        &[
            "create",
            "table",
            "//t",
            "--attributes",
            "{dynamic=%true; schema=[{name=k; type=int64; sort_order=ascending}; {name=v; type=int64}]}",
        ],
        None,
    );
    // Created mounted (the conformance runners insert right after create).
    assert_eq!(get(&store, "tablet_state"), json!("mounted"));
    store.ok(&["insert-rows", "//t"], Some("{k=1; v=1}"));
    store.ok(&["freeze-table", "//t", "--sync"], None);
    assert_eq!(get(&store, "tablet_state"), json!("frozen"));
    let err = store.fails(&["insert-rows", "//t"], Some("{k=2; v=2}"));
    assert!(err.contains("frozen"), "{err}");
    assert_eq!(query(&store, "v from [//t]").trim(), r#"{"v":1}"#);
    store.ok(&["unfreeze-table", "//t"], None);
    store.ok(&["unmount-table", "//t"], None);
    let err = store.fails(&["select-rows", "v from [//t]"], None);
    assert!(err.contains("not mounted"), "{err}");
    let err = store.fails(&["insert-rows", "//t"], Some("{k=2; v=2}"));
    assert!(err.contains("not mounted"), "{err}");
    let err = store.fails(&["freeze-table", "//t"], None);
    assert!(err.contains("unmounted"), "{err}");
    store.ok(&["mount-table", "//t"], None);
    store.ok(&["remount-table", "//t"], None);
    store.ok(&["insert-rows", "//t"], Some("{k=2; v=2}"));
    assert_eq!(
        query(&store, "sum(v) as s from [//t] group by 1").trim(),
        r#"{"s":3}"#
    );
}

#[test]
fn set_changes_writable_attributes_and_refuses_the_rest() {
    let store = TestStore::new();
    store.ok(
        &[
            "create",
            "table",
            "//t",
            "--attributes",
            "{dynamic=%true; schema=[{name=k; type=int64; sort_order=ascending}; {name=v; type=int64}]}",
        ],
        None,
    );
    store.ok(&["set", "//t/@min_data_versions", "0"], None);
    store.ok(&["set", "//t/@min_data_ttl", "0"], None);
    store.ok(&["set", "//t/@commit_ordering", "strong"], None);
    assert_eq!(get(&store, "min_data_versions"), json!(0));
    assert_eq!(get(&store, "min_data_ttl"), json!(0));
    assert_eq!(get(&store, "commit_ordering"), json!("strong"));
    let err = store.fails(&["set", "//t/@tablet_count", "3"], None);
    assert!(err.contains("cannot be set"), "{err}");
    let err = store.fails(&["set", "//t/@max_data_versions", "\"many\""], None);
    assert!(err.contains("non-negative integer"), "{err}");
    // min above max is refused and changes nothing.
    let err = store.fails(&["set", "//t/@min_data_versions", "5"], None);
    assert!(err.contains("must not exceed"), "{err}");
    assert_eq!(get(&store, "min_data_versions"), json!(0));
    // Retention set this way drives compaction: with min_data_versions 0 and both ttls 0,
    // every version may go, as in YT.
    store.ok(&["set", "//t/@max_data_ttl", "0"], None);
    store.ok(&["insert-rows", "//t"], Some("{k=1; v=1}"));
    store.ok(&["insert-rows", "//t"], Some("{k=1; v=2}"));
    assert_eq!(query(&store, "v from [//t]").trim(), r#"{"v":2}"#);
    store.ok(&["compact", "//t"], None);
    assert_eq!(query(&store, "v from [//t]").trim(), "");
}

#[test]
fn copy_and_move_keep_rows_and_history() {
    let store = TestStore::new();
    store.ok(
        &[
            "create",
            "table",
            "//t",
            "--attributes",
            "{dynamic=%true; schema=[{name=k; type=int64; sort_order=ascending}; {name=v; type=int64}]}",
        ],
        None,
    );
    store.ok(&["insert-rows", "//t"], Some("{k=1; v=1}; {k=2; v=2}"));
    let before = store.ok(&["generate-timestamp"], None).trim().to_string();
    store.ok(&["insert-rows", "//t"], Some("{k=1; v=10}"));
    store.ok(&["copy", "//t", "//c"], None);
    // The copy is independent of its source.
    store.ok(&["insert-rows", "//t"], Some("{k=3; v=3}"));
    store.ok(&["insert-rows", "//c"], Some("{k=4; v=4}"));
    assert_eq!(
        query(&store, "k, v from [//c]"),
        "{\"k\":1,\"v\":10}\n{\"k\":2,\"v\":2}\n{\"k\":4,\"v\":4}\n"
    );
    // History came along: time travel on the copy sees the source's past.
    let old = store.ok(
        &[
            "select-rows",
            "v from [//c] where k = 1",
            "--format",
            "json",
            "--timestamp",
            &before,
        ],
        None,
    );
    assert_eq!(old.trim(), r#"{"v":1}"#);
    store.ok(&["move", "//t", "//dir/moved"], None);
    assert_eq!(store.ok(&["exists", "//t"], None).trim(), "false");
    assert_eq!(
        query(&store, "k from [//dir/moved] where k = 3").trim(),
        r#"{"k":3}"#
    );
    let err = store.fails(&["copy", "//c", "//dir/moved"], None);
    assert!(err.contains("already exists"), "{err}");
    let err = store.fails(&["move", "//missing", "//x"], None);
    assert!(err.contains("no such table"), "{err}");
}
