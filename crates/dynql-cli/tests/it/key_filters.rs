//! Key filters through the CLI: `chunk_writer/key_filter`, `key_filter_prefix` and
//! `mount_config/enable_key_filter_for_lookup`, and what `--print-statistics` reports.

use serde_json::Value;

use crate::TestStore;

const TABLE: &str = "{dynamic=%true; chunk_writer={key_filter={enable=%true}; key_filter_prefix={enable=%true; prefix_lengths=[1]}}; mount_config={enable_key_filter_for_lookup=%true}; schema=[{name=a; type=int64; sort_order=ascending}; {name=b; type=int64; sort_order=ascending}; {name=v; type=string}]}";

/// Even `a` from 0 to 98, `b` 0, compacted into a chunk with filters.
fn table() -> TestStore {
    let store = TestStore::new();
    store.ok(&["create", "table", "//t", "--attributes", TABLE], None);
    let rows: String = (0..50)
        .map(|i| format!("{{a={}; b=0; v=v{i}}};", 2 * i))
        .collect();
    store.ok(&["insert-rows", "//t"], Some(&rows));
    store.ok(&["compact", "//t"], None);
    store
}

fn statistic(stderr: &str, name: &str) -> i64 {
    let at = stderr
        .find(&format!("\"{name}\"="))
        .unwrap_or_else(|| panic!("{name} in {stderr}"));
    stderr[at + name.len() + 3..]
        .chars()
        .take_while(char::is_ascii_digit)
        .collect::<String>()
        .parse()
        .unwrap()
}

#[test]
fn lookups_and_prefix_selects_skip_chunks_the_filters_rule_out() {
    let store = table();
    let keys: String = (0..20)
        .map(|a| format!("{{\"a\": {a}, \"b\": 0}}\n"))
        .collect();
    let out = store.run(
        &[
            "lookup-rows",
            "//t",
            "--format",
            "json",
            "--print-statistics",
        ],
        Some(&keys),
    );
    assert!(out.status.success(), "{out:?}");
    assert_eq!(String::from_utf8_lossy(&out.stdout).lines().count(), 10);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(statistic(&stderr, "rows_looked_up"), 20);
    // Ten absent keys, each ruled out with probability 255/256.
    assert!(
        statistic(&stderr, "chunks_skipped_by_key_filter") >= 8,
        "{stderr}"
    );

    let out = store.run(
        &[
            "select-rows",
            "* from [//t] where a = 7",
            "--print-statistics",
        ],
        None,
    );
    assert!(out.status.success(), "{out:?}");
    assert!(out.stdout.is_empty());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(
        statistic(&stderr, "chunks_skipped_by_key_filter"),
        1,
        "{stderr}"
    );
    assert_eq!(statistic(&stderr, "chunks_read"), 0, "{stderr}");
    let found = store.ok(
        &[
            "select-rows",
            "v from [//t] where a = 8",
            "--format",
            "json",
        ],
        None,
    );
    assert_eq!(found, "{\"v\":\"v4\"}\n");
}

#[test]
fn chunk_writer_is_an_attribute_to_get_and_set() {
    let store = table();
    let get = |name: &str| -> Value {
        let out = store.ok(&["get", &format!("//t/@{name}"), "--format", "json"], None);
        serde_json::from_str(&out).unwrap()
    };
    assert_eq!(get("chunk_writer/key_filter/enable"), Value::Bool(true));
    assert_eq!(
        get("chunk_writer/key_filter_prefix/prefix_lengths"),
        serde_json::json!([1])
    );
    assert_eq!(
        get("mount_config/enable_key_filter_for_lookup"),
        Value::Bool(true)
    );
    store.ok(
        &["set", "//t/@chunk_writer/key_filter/bits_per_key", "16"],
        None,
    );
    assert_eq!(
        get("chunk_writer/key_filter/bits_per_key"),
        serde_json::json!(16)
    );
    let err = store.fails(
        &[
            "set",
            "//t/@chunk_writer/key_filter/false_positive_rate",
            "0.01",
        ],
        None,
    );
    assert!(err.contains("cannot both be set"), "{err}");
    store.ok(
        &["set", "//t/@chunk_writer", "{key_filter={enable=%false}}"],
        None,
    );
    assert_eq!(get("chunk_writer/key_filter/enable"), Value::Bool(false));
    assert_eq!(
        get("chunk_writer/key_filter_prefix/enable"),
        Value::Bool(false)
    );
    for (attributes, message) in [
        (
            "{dynamic=%true; chunk_writer={key_filter_prefix={enable=%true; prefix_lengths=[3]}}; schema=[{name=a; type=int64; sort_order=ascending}; {name=v; type=string}]}",
            "longer than the key",
        ),
        (
            "{dynamic=%true; chunk_writer={block_size=1}; schema=[{name=a; type=int64; sort_order=ascending}; {name=v; type=string}]}",
            "chunk_writer/block_size is not supported",
        ),
    ] {
        let err = store.fails(&["create", "table", "//u", "--attributes", attributes], None);
        assert!(err.contains(message), "{err}");
    }
}
