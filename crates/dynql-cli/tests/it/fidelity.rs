//! Attributes dynql used to accept and ignore, or accept wrongly (issue 39): each now has its
//! effect or is refused with a reason.

use super::TestStore;

const SORTED: &str = "[{name=k;type=int64;sort_order=ascending};{name=v;type=string}]";

fn create(store: &TestStore, path: &str, attributes: &str) {
    store.ok(&["create", "table", path, "--attributes", attributes], None);
}

/// The cache hits of each `--print-statistics` line of a shell run.
fn cache_hits(stderr: &str) -> Vec<i64> {
    stderr
        .lines()
        .filter_map(|l| {
            let at = l.find("\"cache_hits\"=")?;
            l[at + 13..]
                .chars()
                .take_while(char::is_ascii_digit)
                .collect::<String>()
                .parse()
                .ok()
        })
        .collect()
}

/// Seed 003's recipe: the two settings at the table's top level, then a remount.
#[test]
fn top_level_mount_settings_turn_the_lookup_cache_on() {
    let store = TestStore::new();
    create(
        &store,
        "//t",
        &format!("{{dynamic=%true; schema={SORTED}}}"),
    );
    store.ok(&["insert-rows", "//t"], Some("{k=1;v=a};{k=2;v=b}"));
    let script = "\
set //t/@lookup_cache_rows_ratio 0.5

set //t/@enable_lookup_cache_by_default %true

remount-table //t

lookup-rows //t --format json --print-statistics
{\"k\": 1}

lookup-rows //t --format json --print-statistics
{\"k\": 1}
";
    let out = store.run(&["shell"], Some(script));
    assert!(out.status.success(), "{out:?}");
    assert_eq!(cache_hits(&String::from_utf8_lossy(&out.stderr)), [0, 1]);
    // Both names show the one setting; nothing was stored as a custom attribute.
    for name in [
        "lookup_cache_rows_ratio",
        "mount_config/lookup_cache_rows_ratio",
    ] {
        let got = store.ok(&["get", &format!("//t/@{name}")], None);
        assert_eq!(got.trim(), "0.5", "{name}");
    }
    // The deprecated per-tablet size is honoured too, at both paths and at creation.
    create(
        &store,
        "//p",
        &format!("{{dynamic=%true; lookup_cache_rows_per_tablet=10; enable_lookup_cache_by_default=%true; schema={SORTED}}}"),
    );
    store.ok(&["insert-rows", "//p"], Some("{k=1;v=a}"));
    let script = "\
lookup-rows //p --format json --print-statistics
{\"k\": 1}

lookup-rows //p --format json --print-statistics
{\"k\": 1}
";
    let out = store.run(&["shell"], Some(script));
    assert!(out.status.success(), "{out:?}");
    assert_eq!(cache_hits(&String::from_utf8_lossy(&out.stderr)), [0, 1]);
    store.ok(
        &[
            "set",
            "//p/@mount_config/lookup_cache_rows_per_tablet",
            "20",
        ],
        None,
    );
    assert_eq!(
        store
            .ok(&["get", "//p/@lookup_cache_rows_per_tablet"], None)
            .trim(),
        "20u"
    );
}

#[test]
fn key_bloom_filter_turns_key_filters_on_and_off() {
    let store = TestStore::new();
    create(
        &store,
        "//t",
        &format!("{{dynamic=%true; key_bloom_filter=ENABLED; schema={SORTED}}}"),
    );
    let get = |name: &str| store.ok(&["get", &format!("//t/@{name}")], None);
    assert_eq!(get("key_bloom_filter").trim(), "\"ENABLED\"");
    assert_eq!(get("chunk_writer/key_filter/enable").trim(), "%true");
    assert_eq!(
        get("mount_config/enable_key_filter_for_lookup").trim(),
        "%true"
    );
    store.ok(&["set", "//t/@key_bloom_filter", "DISABLED"], None);
    assert_eq!(get("key_bloom_filter").trim(), "\"DISABLED\"");
    assert_eq!(get("chunk_writer/key_filter/enable").trim(), "%false");
    let err = store.fails(&["set", "//t/@key_bloom_filter", "MAYBE"], None);
    assert!(err.contains("ENABLED or DISABLED"), "{err}");
}

#[test]
fn non_strict_schemas_and_commit_ordering_of_static_tables_are_refused() {
    let store = TestStore::new();
    let err = store.fails(
        &[
            "create",
            "table",
            "//t",
            "--attributes",
            &format!("{{dynamic=%true; schema=<strict=%false>{SORTED}}}"),
        ],
        None,
    );
    assert!(err.contains("non-strict"), "{err}");
    assert_eq!(store.ok(&["exists", "//t"], None).trim(), "false");
    create(&store, "//s", &format!("{{schema={SORTED}}}"));
    let err = store.fails(&["set", "//s/@commit_ordering", "strong"], None);
    assert!(err.contains("for dynamic tables"), "{err}");
}

#[test]
fn system_columns_are_typed_at_creation() {
    let store = TestStore::new();
    let err = store.fails(
        &[
            "create",
            "table",
            "//q",
            "--attributes",
            "{dynamic=%true; schema=[{name=a;type=int64};{name=\"$timestamp\";type=int64}]}",
        ],
        None,
    );
    assert!(
        err.contains("\"$timestamp\" must be a nullable column of type uint64"),
        "{err}"
    );
    let err = store.fails(
        &[
            "create",
            "table",
            "//q",
            "--attributes",
            "{dynamic=%true; schema=[{name=a;type=int64};{name=\"$cumulative_data_weight\";type=uint64}]}",
        ],
        None,
    );
    assert!(err.contains("of type int64"), "{err}");
}

#[test]
fn uniform_tablets_split_the_range_of_the_key_type() {
    let store = TestStore::new();
    create(
        &store,
        "//t",
        "{dynamic=%true; tablet_count=4; schema=[{name=k;type=uint32;sort_order=ascending};{name=v;type=string}]}",
    );
    let pivots = store.ok(&["get", "//t/@pivot_keys", "--format", "json"], None);
    let pivots: serde_json::Value = serde_json::from_str(&pivots).unwrap();
    assert_eq!(
        pivots,
        serde_json::json!([[], [1073741824u64], [2147483648u64], [3221225472u64]])
    );
    // Keys across the 32-bit range are written and read across the tablets.
    store.ok(
        &["insert-rows", "//t"],
        Some("{k=1u;v=a};{k=3000000000u;v=b}"),
    );
    let rows = store.ok(&["select-rows", "k from [//t]", "--format", "json"], None);
    assert_eq!(rows, "{\"k\":1}\n{\"k\":3000000000}\n");
}

/// YT's bulk-load path: write a sorted static table, make it dynamic, mount it, read it.
#[test]
fn a_sorted_static_table_with_rows_becomes_dynamic() {
    let store = TestStore::new();
    create(&store, "//s", &format!("{{schema={SORTED}}}"));
    store.ok(
        &["write-table", "//s"],
        Some("{k=1;v=a};{k=2;v=b};{k=5;v=e};"),
    );
    store.ok(&["alter-table", "//s", "--dynamic", "true"], None);
    store.ok(&["mount-table", "//s"], None);
    assert_eq!(store.ok(&["get", "//s/@dynamic"], None).trim(), "%true");
    let rows = store.ok(
        &[
            "select-rows",
            "k, v from [//s] where k >= 2",
            "--format",
            "json",
        ],
        None,
    );
    assert_eq!(rows, "{\"k\":2,\"v\":\"b\"}\n{\"k\":5,\"v\":\"e\"}\n");
    let found = store.ok(
        &["lookup-rows", "//s", "--format", "json"],
        Some("{\"k\":1}"),
    );
    assert_eq!(found.trim(), "{\"k\":1,\"v\":\"a\"}");
    // An unsorted static table is refused, saying why, and keeps its rows.
    create(&store, "//u", "{schema=[{name=a;type=int64}]}");
    store.ok(&["write-table", "//u"], Some("{a=2};{a=1};"));
    let err = store.fails(&["alter-table", "//u", "--dynamic", "true"], None);
    assert!(err.contains("not sorted"), "{err}");
    assert_eq!(
        store.ok(&["read-table", "//u", "--format", "json"], None),
        "{\"a\":2}\n{\"a\":1}\n"
    );
}
