//! Versioned writes through the CLI: update mode, aggregate columns, tombstones, time travel,
//! lookup-rows, generate-timestamp, and writers in separate processes.

use crate::TestStore;

const SCHEMA: &str = r#"{dynamic=%true; schema=[{name=k;type=int64;sort_order=ascending};{name=v;type=string};{name=n;type=int64;aggregate=sum};{name=r;type=string;required=%true}]}"#;

fn store() -> TestStore {
    let s = TestStore::new();
    s.ok(&["create", "table", "//t", "--attributes", SCHEMA], None);
    s.ok(
        &["insert-rows", "//t"],
        Some("{k=1;v=\"a\";n=1;r=\"x\"};{k=2;v=\"b\";n=2;r=\"y\"}"),
    );
    s
}

fn select(s: &TestStore, extra: &[&str]) -> String {
    let mut args = vec!["select-rows", "k, v, n from [//t]", "--format", "json"];
    args.extend_from_slice(extra);
    s.ok(&args, None)
}

#[test]
fn update_mode_keeps_unwritten_columns_and_aggregates_fold() {
    let s = store();
    s.ok(
        &["insert-rows", "//t", "--update"],
        Some("{k=1;v=\"A\";r=\"x\"}"),
    );
    s.ok(
        &["insert-rows", "//t", "--update", "--aggregate"],
        Some("{k=1;n=10;r=\"x\"}"),
    );
    s.ok(
        &["insert-rows", "//t", "--aggregate"],
        Some("{k=2;v=\"B\";n=5;r=\"y\"}"),
    );
    assert_eq!(
        select(&s, &[]),
        "{\"k\":1,\"v\":\"A\",\"n\":11}\n{\"k\":2,\"v\":\"B\",\"n\":7}\n"
    );
    // Overwrite mode without --aggregate replaces the aggregate and nulls unwritten columns.
    s.ok(&["insert-rows", "//t"], Some("{k=2;n=1;r=\"y\"}"));
    assert_eq!(
        select(&s, &[]),
        "{\"k\":1,\"v\":\"A\",\"n\":11}\n{\"k\":2,\"v\":null,\"n\":1}\n"
    );
    let err = s.fails(
        &["insert-rows", "//t", "--update"],
        Some("{k=1;v=\"no r\"}"),
    );
    assert!(err.contains("Missing required column \"r\""), "{err}");
}

#[test]
fn reads_at_an_old_timestamp_see_the_table_as_it_was() {
    let s = store();
    let before = s.ok(&["generate-timestamp"], None).trim().to_string();
    s.ok(&["delete-rows", "//t"], Some("{k=1}"));
    s.ok(&["insert-rows", "//t"], Some("{k=3;v=\"c\";r=\"z\"}"));
    assert_eq!(
        select(&s, &[]),
        "{\"k\":2,\"v\":\"b\",\"n\":2}\n{\"k\":3,\"v\":\"c\",\"n\":null}\n"
    );
    assert_eq!(
        select(&s, &["--timestamp", &before]),
        "{\"k\":1,\"v\":\"a\",\"n\":1}\n{\"k\":2,\"v\":\"b\",\"n\":2}\n"
    );
    assert_eq!(
        select(&s, &["--timestamp=async_last_committed"]),
        select(&s, &[])
    );
    let err = s.fails(
        &["select-rows", "* from [//t]", "--timestamp", "yesterday"],
        None,
    );
    assert!(err.contains("expected a timestamp"), "{err}");
}

#[test]
fn lookup_rows_follows_request_order() {
    let s = store();
    let before = s.ok(&["generate-timestamp"], None).trim().to_string();
    s.ok(
        &["insert-rows", "//t", "--update"],
        Some("{k=2;v=\"B\";r=\"y\"}"),
    );
    let out = s.ok(
        &["lookup-rows", "//t", "--format", "json"],
        Some("{\"k\": 2}\n{\"k\": 9}\n{\"k\": 1}\n"),
    );
    assert_eq!(
        out,
        "{\"k\":2,\"v\":\"B\",\"n\":2,\"r\":\"y\"}\n{\"k\":1,\"v\":\"a\",\"n\":1,\"r\":\"x\"}\n"
    );
    let out = s.ok(
        &[
            "lookup-rows",
            "//t",
            "--format",
            "json",
            "--keep-missing-rows",
            "--column-names",
            "v",
            "--timestamp",
            &before,
        ],
        Some("{\"k\": 9}\n{\"k\": 2}\n"),
    );
    assert_eq!(out, "null\n{\"v\":\"b\"}\n");
    let err = s.fails(
        &["lookup-rows", "//t", "--format", "json"],
        Some("{\"v\": \"x\"}\n"),
    );
    assert!(
        err.contains("Missing key column \"k\"") || err.contains("not a key column"),
        "{err}"
    );
}

#[test]
fn writers_in_separate_processes_lose_nothing() {
    let s = TestStore::new();
    s.ok(&["create", "table", "//t", "--attributes", SCHEMA], None);
    std::thread::scope(|scope| {
        for w in 0..4 {
            let s = &s;
            scope.spawn(move || {
                for i in 0..5 {
                    let row = format!("{{k={};r=\"w\"}}", w * 10 + i);
                    s.ok(&["insert-rows", "//t"], Some(&row));
                }
            });
        }
    });
    let out = s.ok(
        &[
            "select-rows",
            "sum(1) as n from [//t] group by 1",
            "--format",
            "json",
        ],
        None,
    );
    assert_eq!(out, "{\"n\":20}\n");
}

#[test]
fn compaction_applies_retention_and_keeps_current_reads() {
    let s = TestStore::new();
    let attrs = r#"{dynamic=%true; min_data_versions=0; max_data_versions=1; min_data_ttl=0; max_data_ttl=0;
        schema=[{name=k;type=int64;sort_order=ascending};{name=n;type=int64;aggregate=sum}]}"#;
    s.ok(&["create", "table", "//t", "--attributes", attrs], None);
    s.ok(&["insert-rows", "//t"], Some("{k=1;n=1};{k=2;n=2}"));
    let old = s.ok(&["generate-timestamp"], None).trim().to_string();
    s.ok(&["insert-rows", "//t", "--aggregate"], Some("{k=1;n=10}"));
    s.ok(&["delete-rows", "//t"], Some("{k=2}"));
    let current = "{\"k\":1,\"n\":11}\n";
    let read = |extra: &[&str]| {
        let mut args = vec!["select-rows", "k, n from [//t]", "--format", "json"];
        args.extend_from_slice(extra);
        s.ok(&args, None)
    };
    assert_eq!(
        read(&["--timestamp", &old]),
        "{\"k\":1,\"n\":1}\n{\"k\":2,\"n\":2}\n"
    );
    let out = s.run(&["compact", "//t"], None);
    assert!(out.status.success());
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("4 row versions -> 0"),
        "{out:?}"
    );
    // max_data_ttl=0 and min_data_versions=0: every version may go, and the rows with them.
    assert_eq!(read(&[]), "");

    let s2 = TestStore::new();
    let keep_last = r#"{dynamic=%true; min_data_ttl=0; max_data_ttl=0;
        schema=[{name=k;type=int64;sort_order=ascending};{name=n;type=int64;aggregate=sum}]}"#;
    s2.ok(&["create", "table", "//t", "--attributes", keep_last], None);
    s2.ok(&["insert-rows", "//t"], Some("{k=1;n=1};{k=2;n=2}"));
    s2.ok(&["insert-rows", "//t", "--aggregate"], Some("{k=1;n=10}"));
    s2.ok(&["delete-rows", "//t"], Some("{k=2}"));
    let out = s2.run(&["compact", "//t"], None);
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("4 row versions -> 1"),
        "{out:?}"
    );
    assert_eq!(
        s2.ok(
            &["select-rows", "k, n from [//t]", "--format", "json"],
            None
        ),
        current
    );
    let err = s2.fails(&["create", "table", "//u", "--attributes", "{dynamic=%true; min_data_versions=3; schema=[{name=k;type=int64;sort_order=ascending};{name=v;type=int64}]}"], None);
    assert!(
        err.contains("min_data_versions must not exceed max_data_versions"),
        "{err}"
    );
}

/// A null key is a key (YT's order puts it first), whether the write is small or large
/// enough to be a bulk write.
#[test]
fn null_keys_are_written_by_small_and_large_inserts_alike() {
    let s = store();
    s.ok(&["insert-rows", "//t"], Some("{k=#;v=\"small\";r=\"x\"}"));
    let mut large = String::from("{k=#;v=\"large\";r=\"x\"};");
    for k in 0..12_000 {
        large.push_str(&format!("{{k={k};v=\"v{k}\";r=\"x\"}};"));
    }
    s.ok(&["insert-rows", "//t"], Some(&large));
    let out = s.ok(
        &[
            "select-rows",
            "k, v from [//t] where k = null or k < 2 order by k limit 10",
            "--format",
            "json",
        ],
        None,
    );
    assert_eq!(
        out.lines().collect::<Vec<_>>(),
        [
            r#"{"k":null,"v":"large"}"#,
            r#"{"k":0,"v":"v0"}"#,
            r#"{"k":1,"v":"v1"}"#
        ],
        "{out}"
    );
}

#[test]
fn retention_drops_values_per_column_for_time_travel_reads() {
    let s = store();
    let first = s.ok(&["generate-timestamp"], None).trim().to_string();
    s.ok(
        &["insert-rows", "//t", "--update"],
        Some("{k=1;v=\"A\";r=\"x\"}"),
    );
    s.ok(&["set", "//t/@min_data_ttl", "0"], None);
    s.ok(&["set", "//t/@max_data_ttl", "0"], None);
    let before = select(&s, &["--timestamp", &first]);
    assert!(
        before.starts_with("{\"k\":1,\"v\":\"a\",\"n\":1}"),
        "{before}"
    );
    s.ok(&["compact", "//t"], None);
    // v's first value is gone (a newer one exists); n and r keep their only values.
    let after = select(&s, &["--timestamp", &first]);
    assert!(after.starts_with("{\"k\":1,\"v\":null,\"n\":1}"), "{after}");
    assert!(select(&s, &[]).starts_with("{\"k\":1,\"v\":\"A\",\"n\":1}"));
}
