//! `--memory-limit`: a query's operators stay within it, spilling a sort to temporary
//! files (same rows as without a limit), failing with a clear error where they cannot
//! spill, and a size that is not one is refused before any work.

use crate::TestStore;

/// `//t` with 100,000 rows whose `v` (30 bytes) is in no order of the key.
fn table(store: &TestStore) {
    store.ok(
        &[
            "create",
            "table",
            "//t",
            "--attributes",
            "{dynamic=%true; schema=[{name=k;type=int64;sort_order=ascending};{name=v;type=string}]}",
        ],
        None,
    );
    let rows: String = (0..100_000u64)
        .map(|k| {
            let v = k.wrapping_mul(2_654_435_761) % 1_000_003;
            format!("{{k={k}; v=\"value number {v:015}\"}};")
        })
        .collect();
    store.ok(&["insert-rows", "//t"], Some(&rows));
    store.ok(&["compact", "//t"], None);
}

#[test]
fn a_sort_past_the_memory_limit_spills_and_gives_the_same_rows() {
    let store = TestStore::new();
    table(&store);
    let sort = r#"SELECT v, k FROM "//t" ORDER BY v, k"#;
    let unlimited = store.ok(&["sql", sort, "--format", "json"], None);
    let limited = store.ok(
        &["--memory-limit", "8MiB", "sql", sort, "--format", "json"],
        None,
    );
    assert_eq!(limited.lines().count(), 100_000);
    assert!(limited == unlimited, "the spilled sort gave other rows");
    let analyzed = store.ok(
        &[
            "--memory-limit",
            "8MiB",
            "sql",
            &format!("EXPLAIN ANALYZE {sort}"),
            "--format",
            "json",
        ],
        None,
    );
    let spills = analyzed
        .split("spill_count=")
        .nth(1)
        .and_then(|rest| rest.split([',', ']']).next())
        .and_then(|n| n.trim().parse::<u64>().ok())
        .unwrap_or(0);
    assert!(spills > 0, "no spill under the limit: {analyzed}");
    // Without the limit nothing spills.
    let analyzed = store.ok(
        &[
            "sql",
            &format!("EXPLAIN ANALYZE {sort}"),
            "--format",
            "json",
        ],
        None,
    );
    assert!(analyzed.contains("spill_count=0"), "{analyzed}");
}

#[test]
fn what_cannot_spill_fails_naming_the_memory_limit_and_bad_sizes_are_refused() {
    let store = TestStore::new();
    table(&store);
    // 100,000 groups of distinct strings, in 1 MiB.
    let err = store.fails(
        &[
            "--memory-limit",
            "1MiB",
            "select-rows",
            "v, sum(1) as n from [//t] group by v",
            "--output-row-limit",
            "1000000",
        ],
        None,
    );
    assert!(err.contains("memory limit"), "{err}");
    assert!(!err.contains("panicked"), "{err}");
    // The same query within a generous limit runs.
    let out = store.ok(
        &[
            "--memory-limit",
            "1GiB",
            "select-rows",
            "sum(1) as n from [//t] group by 1 as one",
            "--format",
            "json",
        ],
        None,
    );
    assert!(out.contains("100000"), "{out}");
    for bad in ["0", "lots", "12 parsecs"] {
        let out = store.run(
            &["--memory-limit", bad, "select-rows", "* from [//t]"],
            None,
        );
        assert!(!out.status.success());
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.contains("memory"), "{bad}: {err}");
    }
}
