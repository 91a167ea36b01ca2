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
    let err = store.fails(&["move", "//t", "//dir/moved"], None);
    assert!(err.contains("node //dir does not exist"), "{err}");
    store.ok(&["move", "-r", "//t", "//dir/moved"], None);
    assert_eq!(store.ok(&["exists", "//t"], None).trim(), "false");
    assert_eq!(
        query(&store, "k from [//dir/moved] where k = 3").trim(),
        r#"{"k":3}"#
    );
    let err = store.fails(&["copy", "//c", "//dir/moved"], None);
    assert!(err.contains("already exists"), "{err}");
    let err = store.fails(&["move", "//missing", "//x"], None);
    assert!(err.contains("//missing: node does not exist"), "{err}");
}

/// Rows `{k, v}` for keys `keys`, with values that compress badly (so a few hundred thousand
/// rows are megabytes of chunks), as JSON lines.
fn incompressible_rows(keys: std::ops::Range<u64>) -> String {
    let mut out = String::new();
    for k in keys {
        let mut x = k.wrapping_mul(0x9E37_79B9_7F4A_7C15) ^ 0xD1B5_4A32_D192_ED03;
        let mut v = String::new();
        for _ in 0..2 {
            x ^= x >> 31;
            x = x.wrapping_mul(0xBF58_476D_1CE4_E5B9);
            v.push_str(&format!("{x:016x}"));
        }
        out.push_str(&format!("{{\"k\": {k}, \"v\": \"{v}\"}}\n"));
    }
    out
}

#[test]
fn tables_that_partition_by_size_split_as_they_grow_and_merge_as_they_shrink() {
    let store = TestStore::new();
    store.ok(
        &[
            "create",
            "table",
            "//t",
            "--attributes",
            "{dynamic=%true; auto_partitioning_by_size=ENABLED; auto_partitioning_partition_size_mb=1; auto_partitioning_max_partitions_count=64; min_data_ttl=0; max_data_ttl=0; schema=[{name=k; type=uint64; sort_order=ascending}; {name=v; type=string}]}",
        ],
        None,
    );
    assert_eq!(get(&store, "auto_partitioning_by_size"), json!(true));
    assert_eq!(get(&store, "auto_partitioning_partition_size_mb"), json!(1));
    let rows = store.dir.path().join("rows.json");
    std::fs::write(&rows, incompressible_rows(0..100_000)).unwrap();
    store.ok(
        &[
            "import",
            "//t",
            "--from",
            rows.to_str().unwrap(),
            "--format",
            "json",
        ],
        None,
    );
    // The import's commit split the table: several megabytes at 1 MB per tablet (a row group
    // of 16,384 rows, the finest cut, is about 0.7 MB here).
    let tablets = get(&store, "tablet_count").as_u64().unwrap();
    assert!((4..=16).contains(&tablets), "{tablets} tablets");
    let sizes: Vec<u64> = get(&store, "tablets")
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["compressed_data_size"].as_u64().unwrap())
        .collect();
    assert!(sizes.iter().all(|s| *s <= 1 << 20), "{sizes:?}");
    // Results are whatever they were; a point query reads one tablet.
    assert_eq!(
        query(&store, "sum(1) as n, max(k) as m from [//t] group by 1"),
        "{\"n\":100000,\"m\":99999}\n"
    );
    let out = store.run(
        &[
            "select-rows",
            "k from [//t] where k = 77777",
            "--format",
            "json",
            "--print-statistics",
        ],
        None,
    );
    assert_eq!(String::from_utf8_lossy(&out.stdout), "{\"k\":77777}\n");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("\"tablets_read\"=1;"), "{stderr}");
    // Deleting most rows and compacting merges tablets back, down to the minimum count.
    store.ok(
        &["set", "//t/@auto_partitioning_min_partitions_count", "2"],
        None,
    );
    let keys: String = (0..99_000).map(|k| format!("{{\"k\": {k}}}\n")).collect();
    store.ok(&["delete-rows", "//t", "--format", "json"], Some(&keys));
    let out = store.run(&["compact", "//t"], None);
    assert!(out.status.success(), "{out:?}");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("tablets -> 2 (auto_partitioning_by_size)"),
        "{stderr}"
    );
    assert_eq!(get(&store, "tablet_count"), json!(2));
    assert_eq!(
        query(&store, "sum(1) as n from [//t] group by 1"),
        "{\"n\":1000}\n"
    );
    // Turned off, nothing changes any more; ordered tables refuse the settings.
    store.ok(&["set", "//t/@auto_partitioning_by_size", "DISABLED"], None);
    assert_eq!(get(&store, "auto_partitioning_by_size"), json!(false));
    let err = store.fails(
        &["set", "//t/@auto_partitioning_partition_size_mb", "0"],
        None,
    );
    assert!(err.contains("positive integer"), "{err}");
    let err = store.fails(
        &[
            "create",
            "table",
            "//q",
            "--attributes",
            "{dynamic=%true; auto_partitioning_by_size=%true; schema=[{name=a; type=int64}]}",
        ],
        None,
    );
    assert!(err.contains("for sorted tables"), "{err}");
}

#[test]
fn slicing_cuts_tablets_of_equal_size_from_the_statistics() {
    let store = TestStore::new();
    store.ok(
        &[
            "create",
            "table",
            "//t",
            "--attributes",
            "{dynamic=%true; schema=[{name=k; type=uint64; sort_order=ascending}; {name=v; type=string}]}",
        ],
        None,
    );
    let rows = store.dir.path().join("rows.json");
    std::fs::write(&rows, incompressible_rows(0..200_000)).unwrap();
    store.ok(
        &[
            "import",
            "//t",
            "--from",
            rows.to_str().unwrap(),
            "--format",
            "json",
        ],
        None,
    );
    store.ok(&["unmount-table", "//t"], None);
    store.ok(
        &[
            "reshard-table",
            "//t",
            "--tablet-count",
            "4",
            "--enable-slicing",
        ],
        None,
    );
    store.ok(&["mount-table", "//t"], None);
    // Row groups of 16,384 rows: the cuts fall at row-group starts near each quarter.
    let pivots = get(&store, "pivot_keys");
    let cuts: Vec<u64> = pivots.as_array().unwrap()[1..]
        .iter()
        .map(|p| p[0].as_u64().unwrap())
        .collect();
    assert_eq!(cuts.len(), 3, "{pivots}");
    for (i, cut) in cuts.iter().enumerate() {
        let quarter = (i as u64 + 1) * 50_000;
        assert!(cut.abs_diff(quarter) <= 16_384, "{cuts:?}");
    }
    assert_eq!(
        query(&store, "sum(1) as n from [//t] group by 1"),
        "{\"n\":200000}\n"
    );
    let err = store.fails(&["reshard-table", "//t", "--enable-slicing"], None);
    assert!(err.contains("--tablet-count"), "{err}");
}

#[test]
fn forced_compaction_revision_and_auto_compaction_period_compact() {
    let store = TestStore::new();
    let schema = "schema=[{name=k; type=int64; sort_order=ascending}; {name=v; type=int64}]";
    let create = |path: &str, extra: &str| {
        store.ok(
            &[
                "create",
                "table",
                path,
                "--attributes",
                &format!("{{dynamic=%true; {extra} {schema}}}"),
            ],
            None,
        )
    };
    create("//t", "");
    create("//periodic", "mount_config={auto_compaction_period=1};");
    // Two large writes of the same keys: two layers of chunks, which the size-tiered policy
    // leaves alone (it merges three).
    for round in 0..2 {
        let rows: String = (0..10_000)
            .map(|k| format!("{{\"k\": {k}, \"v\": {round}}}\n"))
            .collect();
        for path in ["//t", "//periodic"] {
            store.ok(&["insert-rows", path, "--format", "json"], Some(&rows));
        }
    }
    let chunks = |path: &str| {
        let out = store.ok(&["get", &format!("{path}/@chunk_count")], None);
        out.trim().parse::<u64>().unwrap()
    };
    assert_eq!(chunks("//t"), 2);
    // The period (1 ms) has passed since //periodic last compacted (never): each write's
    // commit compacted it fully.
    assert_eq!(chunks("//periodic"), 1);
    assert_eq!(
        store
            .ok(&["get", "//periodic/@auto_compaction_period"], None)
            .trim(),
        "1u"
    );
    // Setting forced_compaction_revision compacts at once.
    assert_eq!(
        store
            .ok(&["get", "//t/@forced_compaction_revision"], None)
            .trim(),
        "#"
    );
    store.ok(&["set", "//t/@forced_compaction_revision", "1"], None);
    assert_eq!(chunks("//t"), 1);
    assert_eq!(
        store
            .ok(&["get", "//t/@forced_compaction_revision"], None)
            .trim(),
        "1u"
    );
    assert_eq!(
        query(&store, "sum(v) as s, sum(1) as n from [//t] group by 1"),
        "{\"s\":10000,\"n\":10000}\n"
    );
    let err = store.fails(&["set", "//t/@auto_compaction_period", "0"], None);
    assert!(err.contains("positive number of milliseconds"), "{err}");
}

#[test]
fn the_lookup_cache_serves_repeated_lookups_and_never_a_stale_row() {
    let store = TestStore::new();
    store.ok(
        &[
            "create",
            "table",
            "//t",
            "--attributes",
            "{dynamic=%true; mount_config={lookup_cache_rows_ratio=0.5; enable_lookup_cache_by_default=%true}; schema=[{name=k; type=int64; sort_order=ascending}; {name=v; type=string}]}",
        ],
        None,
    );
    let rows: String = (0..100).map(|k| format!("{{k={k}; v=v{k}}};")).collect();
    store.ok(&["insert-rows", "//t"], Some(&rows));
    // One process: the cache lives as long as the shell's store.
    let script = "lookup-rows //t --format json --print-statistics
{\"k\": 1}
{\"k\": 2}

lookup-rows //t --format json --print-statistics
{\"k\": 1}
{\"k\": 2}

insert-rows //t
{k=1; v=new};

lookup-rows //t --format json --print-statistics
{\"k\": 1}
{\"k\": 2}

lookup-rows //t --format json --print-statistics --use-lookup-cache false
{\"k\": 1}
";
    let out = store.run(&["shell"], Some(script));
    assert!(out.status.success(), "{out:?}");
    assert_eq!(
        String::from_utf8_lossy(&out.stdout),
        "{\"k\":1,\"v\":\"v1\"}\n{\"k\":2,\"v\":\"v2\"}\n\
         {\"k\":1,\"v\":\"v1\"}\n{\"k\":2,\"v\":\"v2\"}\n\
         {\"k\":1,\"v\":\"new\"}\n{\"k\":2,\"v\":\"v2\"}\n\
         {\"k\":1,\"v\":\"new\"}\n"
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    let stats: Vec<&str> = stderr
        .lines()
        .filter(|l| l.contains("cache_hits"))
        .collect();
    assert_eq!(
        stats,
        [
            "{\"rows_looked_up\"=2;\"cache_hits\"=0;\"cache_misses\"=2;\"chunks_skipped_by_key_filter\"=0;}",
            "{\"rows_looked_up\"=2;\"cache_hits\"=2;\"cache_misses\"=0;\"chunks_skipped_by_key_filter\"=0;}",
            "{\"rows_looked_up\"=2;\"cache_hits\"=1;\"cache_misses\"=1;\"chunks_skipped_by_key_filter\"=0;}",
            "{\"rows_looked_up\"=1;\"cache_hits\"=0;\"cache_misses\"=0;\"chunks_skipped_by_key_filter\"=0;}",
        ],
        "{stderr}"
    );
    store.ok(
        &["set", "//t/@mount_config/lookup_cache_rows_ratio", "0.25"],
        None,
    );
    assert_eq!(
        store
            .ok(&["get", "//t/@mount_config/lookup_cache_rows_ratio"], None)
            .trim(),
        "0.25"
    );
    let config = get(&store, "mount_config");
    assert_eq!(config["enable_lookup_cache_by_default"], json!(true));
    assert_eq!(config["enable_compaction_and_partitioning"], json!(true));
    let err = store.fails(&["get", "//t/@mount_config/nope"], None);
    assert!(err.contains("mount_config holds"), "{err}");
    let err = store.fails(
        &["set", "//t/@mount_config/lookup_cache_rows_ratio", "2"],
        None,
    );
    assert!(err.contains("from 0 to 1"), "{err}");
}

#[test]
fn in_memory_mode_is_set_at_creation_and_with_set() {
    let store = TestStore::new();
    store.ok(
        &[
            "create",
            "table",
            "//t",
            "--attributes",
            "{dynamic=%true; in_memory_mode=compressed; schema=[{name=k; type=int64; sort_order=ascending}; {name=v; type=string}]}",
        ],
        None,
    );
    assert_eq!(get(&store, "in_memory_mode"), "compressed");
    store.ok(&["insert-rows", "//t"], Some("{k=1; v=a};{k=2; v=b};"));
    store.ok(&["compact", "//t"], None);
    store.ok(&["set", "//t/@in_memory_mode", "uncompressed"], None);
    assert_eq!(get(&store, "in_memory_mode"), "uncompressed");
    assert_eq!(query(&store, "v from [//t] where k = 2"), "{\"v\":\"b\"}\n");
    let err = store.fails(&["set", "//t/@in_memory_mode", "always"], None);
    assert!(err.contains("none, compressed or uncompressed"), "{err}");
}

#[test]
fn compression_codec_is_set_at_creation_and_with_set() {
    let store = TestStore::new();
    let create = |path: &str, codec: &str| {
        vec![
            "create".to_string(),
            "table".into(),
            path.into(),
            "--attributes".into(),
            format!("{{dynamic=%true; {codec} schema=[{{name=k; type=int64; sort_order=ascending}}; {{name=v; type=string}}]}}"),
        ]
    };
    let args = create("//t", "compression_codec=zstd_3;");
    store.ok(&args.iter().map(String::as_str).collect::<Vec<_>>(), None);
    assert_eq!(get(&store, "compression_codec"), "zstd_3");
    store.ok(&["insert-rows", "//t"], Some("{k=1; v=a};{k=2; v=b};"));
    store.ok(&["compact", "//t"], None);
    // DuckDB's spelling is taken too; `get` answers with YT's name.
    store.ok(&["set", "//t/@compression_codec", "zstd(9)"], None);
    assert_eq!(get(&store, "compression_codec"), "zstd_9");
    store.ok(&["set", "//t/@compression_codec", "snappy"], None);
    assert_eq!(get(&store, "compression_codec"), "snappy");
    // The zstd chunk reads on after the change, and compaction rewrites it.
    store.ok(&["insert-rows", "//t"], Some("{k=3; v=c};"));
    let all = "{\"k\":1,\"v\":\"a\"}\n{\"k\":2,\"v\":\"b\"}\n{\"k\":3,\"v\":\"c\"}\n";
    assert_eq!(query(&store, "k, v from [//t]"), all);
    store.ok(&["compact", "//t"], None);
    assert_eq!(query(&store, "k, v from [//t]"), all);

    let err = store.fails(&["set", "//t/@compression_codec", "lzo"], None);
    assert!(err.contains("none, snappy, lz4, zstd_N"), "{err}");
    assert_eq!(get(&store, "compression_codec"), "snappy");

    // A bad name at creation creates nothing.
    let args = create("//bad", "compression_codec=zstd_99;");
    let err = store.fails(&args.iter().map(String::as_str).collect::<Vec<_>>(), None);
    assert!(err.contains("1 to 22"), "{err}");
    store.fails(&["get", "//bad/@compression_codec"], None);
}

#[test]
fn alter_table_grows_a_sorted_table_and_old_rows_read_null() {
    let store = TestStore::new();
    store.ok(
        &[
            "create",
            "table",
            "//t",
            "--attributes",
            "{dynamic=%true; schema=[{name=k; type=int32; sort_order=ascending}; {name=v; type=utf8}]}",
        ],
        None,
    );
    store.ok(&["insert-rows", "//t"], Some("{k=1; v=a};{k=2; v=b};"));
    store.ok(&["compact", "//t"], None);
    store.ok(&["insert-rows", "//t"], Some("{k=3; v=c};"));
    let grown = "[{name=k; type=int64; sort_order=ascending}; {name=k2; type=string; sort_order=ascending}; {name=v; type=string}; {name=n; type=int64}]";
    let err = store.fails(&["alter-table", "//t", "--schema", grown], None);
    assert!(err.contains("unmount-table first"), "{err}");
    store.ok(&["unmount-table", "//t"], None);
    let err = store.fails(
        &[
            "alter-table",
            "//t",
            "--schema",
            "[{name=k; type=int32; sort_order=ascending}]",
        ],
        None,
    );
    assert!(err.contains("column \"v\" cannot be removed"), "{err}");
    store.ok(&["alter-table", "//t", "--schema", grown], None);
    store.ok(&["mount-table", "//t"], None);
    store.ok(&["insert-rows", "//t"], Some("{k=1; k2=x; v=new; n=5};"));
    assert_eq!(
        query(&store, "k, k2, v, n from [//t]"),
        "{\"k\":1,\"k2\":null,\"v\":\"a\",\"n\":null}\n{\"k\":1,\"k2\":\"x\",\"v\":\"new\",\"n\":5}\n\
         {\"k\":2,\"k2\":null,\"v\":\"b\",\"n\":null}\n{\"k\":3,\"k2\":null,\"v\":\"c\",\"n\":null}\n"
    );
    let schema = store.ok(&["get", "//t/@schema"], None);
    assert!(
        schema.contains("name=n") || schema.contains("\"name\"=\"n\""),
        "{schema}"
    );
    assert_eq!(get(&store, "key_columns"), json!(["k", "k2"]));
}
