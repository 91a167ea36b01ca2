//! Ordered tables through the CLI: a queue consumer's life (append, read by row index, trim,
//! keep reading), `trimmed_row_counts`, `$tablet_index` routing, system columns, and appends
//! inside transactions.

use serde_json::{json, Value};

use crate::TestStore;

fn rows(store: &TestStore, q: &str) -> Vec<Value> {
    store
        .ok(&["select-rows", q, "--format", "json"], None)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

fn create(store: &TestStore, attributes: &str) {
    store.ok(
        &["create", "table", "//q", "--attributes", attributes],
        None,
    );
}

#[test]
fn a_queue_consumer_appends_reads_by_row_index_and_trims() {
    let store = TestStore::new();
    create(
        &store,
        "{dynamic=%true; tablet_count=2; schema=[{name=m; type=string}; {name=\"$timestamp\"; type=uint64}; {name=\"$cumulative_data_weight\"; type=int64}]}",
    );
    let batch: String = (0..5)
        .map(|i| format!("{{\"$tablet_index\"=1; m=\"m{i}\"}};"))
        .collect();
    store.ok(&["insert-rows", "//q"], Some(&batch));
    let read = |from: i64, to: i64| {
        rows(
            &store,
            &format!("[$row_index], m from [//q] where [$tablet_index] = 1 and [$row_index] between {from} and {to}"),
        )
    };
    assert_eq!(
        read(1, 2),
        vec![
            json!({"$row_index": 1, "m": "m1"}),
            json!({"$row_index": 2, "m": "m2"})
        ]
    );
    // Trim is absolute; numbering is kept; a smaller count changes nothing.
    store.ok(&["trim-rows", "//q", "1", "3"], None);
    store.ok(&["trim-rows", "//q", "1", "2"], None);
    assert_eq!(read(0, 10).len(), 2);
    assert_eq!(read(0, 10)[0], json!({"$row_index": 3, "m": "m3"}));
    store.ok(
        &["insert-rows", "//q"],
        Some("{\"$tablet_index\"=1; m=\"m5\"}"),
    );
    assert_eq!(read(5, 5), vec![json!({"$row_index": 5, "m": "m5"})]);
    let tablets: Value =
        serde_json::from_str(&store.ok(&["get", "//q/@tablets", "--format", "json"], None))
            .unwrap();
    assert_eq!(tablets[1]["trimmed_row_count"], json!(3));
    assert_eq!(tablets[1]["row_count"], json!(6));
    assert_eq!(tablets[0]["row_count"], json!(0));
    // Trimming beyond the rows written is refused and changes nothing.
    let err = store.fails(&["trim-rows", "//q", "1", "100"], None);
    assert!(err.contains("only 6 rows"), "{err}");
    let err = store.fails(&["trim-rows", "//q", "7", "1"], None);
    assert!(err.contains("Invalid tablet index"), "{err}");
    // System columns: commit timestamps never decrease; the cumulative weight grows by each
    // row's weight (1 + value sizes, its own 8 bytes included).
    let sys = rows(
        &store,
        "[$row_index], [$timestamp], [$cumulative_data_weight] from [//q] where [$tablet_index] = 1",
    );
    let ts: Vec<u64> = sys
        .iter()
        .map(|r| r["$timestamp"].as_u64().unwrap())
        .collect();
    assert!(ts.windows(2).all(|w| w[0] <= w[1]), "{ts:?}");
    let weights: Vec<i64> = sys
        .iter()
        .map(|r| r["$cumulative_data_weight"].as_i64().unwrap())
        .collect();
    // Rows 3..5: "mN" is 2 bytes; each row weighs 1 + 2 + 8 + 8.
    assert_eq!(weights, vec![4 * 19, 5 * 19, 6 * 19]);
    // Ordered tables are queues: no update, no delete.
    let err = store.fails(&["insert-rows", "//q", "--update"], Some("{m=x}"));
    assert!(err.contains("ordered"), "{err}");
    let err = store.fails(&["insert-rows", "//q"], Some("{\"$tablet_index\"=2; m=x}"));
    assert!(err.contains("$tablet_index"), "{err}");
}

#[test]
fn trimmed_row_counts_set_each_tablets_first_row_index() {
    let store = TestStore::new();
    create(
        &store,
        "{dynamic=%true; tablet_count=2; trimmed_row_counts=[10; 20]; schema=[{name=a; type=int64}]}",
    );
    store.ok(
        &["insert-rows", "//q"],
        Some("{\"$tablet_index\"=0; a=1}; {\"$tablet_index\"=1; a=2}"),
    );
    assert_eq!(
        rows(&store, "[$tablet_index], [$row_index], a from [//q]"),
        vec![
            json!({"$tablet_index": 0, "$row_index": 10, "a": 1}),
            json!({"$tablet_index": 1, "$row_index": 20, "a": 2})
        ]
    );
    let err = store.fails(
        &[
            "create",
            "table",
            "//bad",
            "--attributes",
            "{dynamic=%true; trimmed_row_counts=[1; 2]; schema=[{name=a; type=int64}]}",
        ],
        None,
    );
    assert!(err.contains("tablet_count"), "{err}");
}

#[test]
fn appends_in_a_transaction_appear_at_commit_with_sorted_writes() {
    let store = TestStore::new();
    create(&store, "{dynamic=%true; schema=[{name=a; type=int64}]}");
    store.ok(
        &[
            "create",
            "table",
            "//s",
            "--attributes",
            "{dynamic=%true; schema=[{name=k; type=int64; sort_order=ascending}; {name=v; type=int64}]}",
        ],
        None,
    );
    let tx = store
        .ok(&["start-tx", "--type", "tablet"], None)
        .trim()
        .to_string();
    store.ok(&["insert-rows", "//q", "--tx", &tx], Some("{a=1}; {a=2}"));
    store.ok(&["insert-rows", "//s", "--tx", &tx], Some("{k=1; v=1}"));
    assert!(rows(&store, "a from [//q]").is_empty());
    store.ok(&["commit-tx", &tx], None);
    assert_eq!(
        rows(&store, "a from [//q]"),
        vec![json!({"a": 1}), json!({"a": 2})]
    );
    assert_eq!(rows(&store, "v from [//s]"), vec![json!({"v": 1})]);
    let e: Value = serde_json::from_str(&store.ok(
        &[
            "explain-query",
            "* from [//q] where [$tablet_index] = 0 and [$row_index] between 1 and 5",
            "--format",
            "json",
        ],
        None,
    ))
    .unwrap();
    assert_eq!(
        e["ranges"],
        json!([{"lower": [0, 1], "upper": [0, 5, {"$max": true}]}])
    );
}

#[test]
fn resharding_a_queue_follows_the_seed_example() {
    let store = TestStore::new();
    create(
        &store,
        "{dynamic=%true; tablet_count=5; schema=[{name=a; type=int64}]}",
    );
    let rows_text: String = (0..5)
        .map(|t| format!("{{\"$tablet_index\"={t}; a={t}}};"))
        .collect();
    store.ok(&["insert-rows", "//q"], Some(&rows_text));
    let err = store.fails(&["reshard-table", "//q", "--tablet-count", "5"], None);
    assert!(err.contains("unmount-table first"), "{err}");
    store.ok(&["unmount-table", "//q"], None);
    store.ok(
        &[
            "reshard-table",
            "//q",
            "--tablet-count",
            "5",
            "--first-tablet-index",
            "1",
            "--last-tablet-index",
            "3",
            "--trimmed-row-counts",
            "10",
            "20",
        ],
        None,
    );
    store.ok(&["mount-table", "//q"], None);
    // (old #0) (old #1) (old #2) (old #3) 10 20 (old #4)
    let tablets: Value =
        serde_json::from_str(&store.ok(&["get", "//q/@tablets", "--format", "json"], None))
            .unwrap();
    let trimmed: Vec<i64> = tablets
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["trimmed_row_count"].as_i64().unwrap())
        .collect();
    assert_eq!(trimmed, vec![0, 0, 0, 0, 10, 20, 0]);
    assert_eq!(
        rows(
            &store,
            "[$tablet_index], a from [//q] where [$tablet_index] = 6"
        ),
        vec![json!({"$tablet_index": 6, "a": 4})]
    );
    store.ok(&["insert-rows", "//q"], Some("{\"$tablet_index\"=5; a=55}"));
    assert_eq!(
        rows(
            &store,
            "[$row_index], a from [//q] where [$tablet_index] = 5"
        ),
        vec![json!({"$row_index": 20, "a": 55})]
    );
    // Shrinking appends the removed tablets' rows to the last kept one, unless one of them
    // has trimmed rows.
    store.ok(&["unmount-table", "//q"], None);
    let err = store.fails(&["reshard-table", "//q", "--tablet-count", "2"], None);
    assert!(err.contains("trimmed rows"), "{err}");
    store.ok(
        &[
            "reshard-table",
            "//q",
            "--tablet-count",
            "1",
            "--first-tablet-index",
            "0",
            "--last-tablet-index",
            "3",
        ],
        None,
    );
    store.ok(&["mount-table", "//q"], None);
    assert_eq!(
        rows(
            &store,
            "[$row_index], a from [//q] where [$tablet_index] = 0"
        ),
        vec![
            json!({"$row_index": 0, "a": 0}),
            json!({"$row_index": 1, "a": 1}),
            json!({"$row_index": 2, "a": 2}),
            json!({"$row_index": 3, "a": 3})
        ]
    );
    assert_eq!(rows(&store, "a from [//q]").len(), 6);
}

#[test]
fn alter_table_adds_columns_and_a_static_round_trip_forgets_trimming() {
    let store = TestStore::new();
    create(
        &store,
        "{dynamic=%true; commit_ordering=strong; schema=[{name=a; type=int64}]}",
    );
    assert_eq!(
        store.ok(&["get", "//q/@commit_ordering"], None).trim(),
        "\"strong\""
    );
    // Two commits of two rows each: storage is freed by whole commits.
    store.ok(&["insert-rows", "//q"], Some("{a=0}; {a=1}"));
    store.ok(&["insert-rows", "//q"], Some("{a=2}; {a=3}"));
    store.ok(&["trim-rows", "//q", "0", "3"], None);
    assert_eq!(rows(&store, "a from [//q]"), vec![json!({"a": 3})]);
    let err = store.fails(
        &[
            "alter-table",
            "//q",
            "--schema",
            "[{name=a; type=int64}; {name=b; type=string}]",
        ],
        None,
    );
    assert!(err.contains("unmount-table first"), "{err}");
    store.ok(&["unmount-table", "//q"], None);
    store.ok(
        &[
            "alter-table",
            "//q",
            "--schema",
            "[{name=a; type=int64}; {name=b; type=string}]",
        ],
        None,
    );
    let err = store.fails(
        &[
            "alter-table",
            "//q",
            "--schema",
            "[{name=a; type=string}; {name=b; type=string}]",
        ],
        None,
    );
    assert!(err.contains("incompatible"), "{err}");
    // Static and back: the trim is forgotten; what the second commit stored reappears.
    store.ok(&["alter-table", "//q", "--dynamic", "false"], None);
    assert_eq!(store.ok(&["get", "//q/@dynamic"], None).trim(), "%false");
    let err = store.fails(&["mount-table", "//q"], None);
    assert!(err.contains("Cannot mount static table"), "{err}");
    let err = store.fails(&["select-rows", "a from [//q]"], None);
    assert!(err.contains("static"), "{err}");
    let err = store.fails(&["insert-rows", "//q"], Some("{a=9}"));
    assert!(err.contains("static"), "{err}");
    store.ok(&["unmount-table", "//q"], None);
    store.ok(&["alter-table", "//q", "--dynamic", "true"], None);
    store.ok(&["mount-table", "//q"], None);
    assert_eq!(
        rows(&store, "[$row_index], a, b from [//q]"),
        vec![
            json!({"$row_index": 0, "a": 2, "b": null}),
            json!({"$row_index": 1, "a": 3, "b": null})
        ]
    );
    store.ok(&["insert-rows", "//q"], Some("{a=4; b=x}"));
    assert_eq!(
        rows(&store, "a, b from [//q] where [$row_index] = 2"),
        vec![json!({"a": 4, "b": "x"})]
    );
}

#[test]
fn retention_trims_expired_commits_and_the_data_weight_limit_refuses_appends() {
    let store = TestStore::new();
    create(
        &store,
        "{dynamic=%true; min_data_versions=0; max_data_versions=0; min_data_ttl=0; max_data_ttl=0; mount_config={max_ordered_tablet_data_weight=100}; schema=[{name=s; type=string}]}",
    );
    // Each row weighs 1 + its string's length.
    store.ok(
        &["insert-rows", "//q"],
        Some("{s=\"0123456789\"}; {s=\"0123456789\"}"),
    );
    let err = store.fails(
        &["insert-rows", "//q"],
        Some(&format!("{{s=\"{}\"}}", "x".repeat(90))),
    );
    assert!(err.contains("max_ordered_tablet_data_weight"), "{err}");
    assert_eq!(rows(&store, "s from [//q]").len(), 2);
    // With all ttls 0 and min_data_versions 0, compaction trims every committed row.
    store.ok(&["compact", "//q"], None);
    assert!(rows(&store, "s from [//q]").is_empty());
    let tablets: Value =
        serde_json::from_str(&store.ok(&["get", "//q/@tablets", "--format", "json"], None))
            .unwrap();
    assert_eq!(tablets[0]["trimmed_row_count"], json!(2));
    // Trimmed rows no longer count against the limit.
    store.ok(
        &["insert-rows", "//q"],
        Some(&format!("{{s=\"{}\"}}", "x".repeat(90))),
    );
}

#[test]
fn cumulative_data_weight_added_later_goes_on_from_what_the_tablet_held() {
    let store = TestStore::new();
    create(&store, "{dynamic=%true; schema=[{name=a; type=int64}]}");
    // Each row weighs 1 byte plus 8 for `a`: the tablet holds 18 bytes.
    store.ok(&["insert-rows", "//q"], Some("{a=1}; {a=2}"));
    store.ok(&["unmount-table", "//q"], None);
    let with = |columns: &str| format!("[{{name=a; type=int64}}; {columns}]");
    let err = store.fails(
        &[
            "alter-table",
            "//q",
            "--schema",
            &with("{name=\"$cumulative_data_weight\"; type=string}"),
        ],
        None,
    );
    assert!(err.contains("type int64"), "{err}");
    store.ok(
        &[
            "alter-table",
            "//q",
            "--schema",
            &with("{name=\"$cumulative_data_weight\"; type=int64}; {name=\"$timestamp\"; type=uint64}"),
        ],
        None,
    );
    store.ok(&["mount-table", "//q"], None);
    // A new row weighs 1 + 8 (a) + 8 (itself) + 8 ($timestamp): 25, after the 18 before.
    store.ok(&["insert-rows", "//q"], Some("{a=3}"));
    let read = rows(&store, "a, [$cumulative_data_weight] as w from [//q]");
    assert_eq!(
        read,
        vec![
            json!({"a": 1, "w": null}),
            json!({"a": 2, "w": null}),
            json!({"a": 3, "w": 43})
        ]
    );
    let stamped = rows(&store, "a from [//q] where not is_null([$timestamp])");
    assert_eq!(stamped, vec![json!({"a": 3})]);
}
