//! TTL on a column through the CLI: `ttl` at creation, `set`, `get` and `remove //t/@ttl`;
//! select-rows (with and without the TTL column), lookup-rows and sql never return expired
//! rows; time-travel reads judge expiry at their timestamp; compaction drops them.

use crate::TestStore;

/// The machine's time: the `dynql` processes these tests run read the wall clock.
#[allow(clippy::disallowed_methods)]
fn now_seconds() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs()
}

/// A table with a one-hour TTL on `at`: k=1 was made two hours ago, k=2 now, k=3 has no
/// time. Returns the unix seconds the rows were made at.
fn table(store: &TestStore) -> u64 {
    store.ok(
        &[
            "create",
            "table",
            "//t",
            "--attributes",
            r#"{dynamic=%true; ttl="Interval(\"PT1H\") ON at"; min_data_ttl=0; max_data_ttl=0; schema=[{name=k; type=int64; sort_order=ascending}; {name=at; type=datetime}; {name=v; type=string}]}"#,
        ],
        None,
    );
    let now = now_seconds();
    let rows = format!(
        "{{k=1; at={}u; v=old}};{{k=2; at={now}u; v=new}};{{k=3; v=timeless}};",
        now - 7200
    );
    store.ok(&["insert-rows", "//t"], Some(&rows));
    now
}

fn select(store: &TestStore, query: &str, extra: &[&str]) -> String {
    let mut args = vec!["select-rows", query, "--format", "json"];
    args.extend_from_slice(extra);
    store.ok(&args, None)
}

#[test]
fn expired_rows_are_never_read() {
    let store = TestStore::new();
    let now = table(&store);
    for _ in 0..2 {
        assert_eq!(
            select(&store, "k, v from [//t]", &[]),
            "{\"k\":2,\"v\":\"new\"}\n{\"k\":3,\"v\":\"timeless\"}\n"
        );
        // YT orders null first: k=3 (no time) passes `at < ...` too.
        assert_eq!(
            select(&store, "k from [//t] where at < 100000000000", &[]),
            "{\"k\":2}\n{\"k\":3}\n"
        );
        assert_eq!(
            store.ok(
                &["lookup-rows", "//t", "--format", "json"],
                Some("{\"k\":1}\n{\"k\":2}\n")
            ),
            "{\"k\":2,\"at\":".to_string() + &now.to_string() + ",\"v\":\"new\"}\n"
        );
        let sql = store.ok(
            &[
                "sql",
                "SELECT count(*) AS n FROM \"//t\"",
                "--format",
                "json",
            ],
            None,
        );
        assert!(sql.contains("\"n\":2"), "{sql}");
        // Flushed to a chunk and compacted, the same.
        store.ok(&["compact", "//t"], None);
    }
    // Expiry follows the read's time: under half a second, once the clock has passed k=2's
    // second, it has expired too. (A read ahead of the clock is refused: the test waits.)
    store.ok(&["set", "//t/@ttl", "Interval(\"PT0.5S\") ON at"], None);
    while now_seconds() <= now + 1 {
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    assert_eq!(select(&store, "k from [//t]", &[]), "{\"k\":3}\n");
}

#[test]
fn ttl_is_set_shown_and_removed() {
    let store = TestStore::new();
    table(&store);
    let get = |store: &TestStore| store.ok(&["get", "//t/@ttl", "--format", "json"], None);
    assert_eq!(get(&store), "\"Interval(\\\"PT1H\\\") ON at\"\n");
    // Removed before any compaction: the old row is back.
    store.ok(&["remove", "//t/@ttl"], None);
    assert_eq!(get(&store), "null\n");
    assert_eq!(
        select(&store, "k from [//t]", &[]),
        "{\"k\":1}\n{\"k\":2}\n{\"k\":3}\n"
    );
    // Set as the bare expression, as YDB writes it.
    store.ok(&["set", "//t/@ttl", "Interval(\"P1D\") ON at"], None);
    assert_eq!(get(&store), "\"Interval(\\\"P1D\\\") ON at\"\n");
    assert_eq!(
        select(&store, "k from [//t]", &[]),
        "{\"k\":1}\n{\"k\":2}\n{\"k\":3}\n"
    );
    store.ok(&["set", "//t/@ttl", "Interval(\"PT30M\") ON at"], None);
    assert_eq!(
        select(&store, "k from [//t]", &[]),
        "{\"k\":2}\n{\"k\":3}\n"
    );
    for (value, why) in [
        ("Interval(\"P1D\") ON v", "is a string"),
        ("Interval(\"P1Y\") ON at", "years and months"),
        ("Interval(\"P1D\") ON nope", "no column"),
    ] {
        let err = store.fails(&["set", "//t/@ttl", value], None);
        assert!(err.contains(why), "{value}: {err}");
    }
    let err = store.fails(&["remove", "//t/@min_data_versions"], None);
    assert!(err.contains("cannot be removed"), "{err}");
    assert_eq!(get(&store), "\"Interval(\\\"PT30M\\\") ON at\"\n");
}

#[test]
fn compaction_drops_expired_rows_for_good() {
    let store = TestStore::new();
    table(&store);
    store.ok(&["compact", "//t"], None);
    store.ok(&["remove", "//t/@ttl"], None);
    assert_eq!(
        select(&store, "k from [//t]", &[]),
        "{\"k\":2}\n{\"k\":3}\n"
    );
}
