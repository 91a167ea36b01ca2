//! `DYNQL_LOG`: spans of planning, scans, commits and compactions on stderr, nothing when it is
//! unset, and a filter that is not one is reported without failing the command.

use crate::TestStore;

const TABLE: &str =
    "{dynamic=%true; schema=[{name=k;type=int64;sort_order=ascending};{name=v;type=int64}]}";

fn stderr_of(store: &TestStore, args: &[&str], stdin: Option<&str>, log: &str) -> String {
    let out = store.run_with_env(args, stdin, &[("DYNQL_LOG", log)]);
    assert!(
        out.status.success(),
        "{args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stderr).unwrap()
}

#[test]
fn dynql_log_shows_the_spans_of_commits_queries_scans_and_compactions() {
    let store = TestStore::new();
    store.ok(&["create", "table", "//t", "--attributes", TABLE], None);
    let commit = stderr_of(
        &store,
        &["insert-rows", "//t"],
        Some("{k=1;v=10};{k=2;v=20};"),
        "dynql=debug",
    );
    assert!(commit.contains("append_commit"), "{commit}");
    let query = stderr_of(
        &store,
        &[
            "select-rows",
            "sum(v) AS s FROM [//t] GROUP BY 1",
            "--format",
            "json",
        ],
        None,
        "dynql=debug",
    );
    for span in [
        "select_stream_in",
        "bind",
        "key_ranges",
        "plan",
        "physical plan",
        "scan{",
    ] {
        assert!(query.contains(span), "no {span:?} in:\n{query}");
    }
    // The whole physical plan on the event's one line, root first.
    let plan = query
        .lines()
        .find(|l| l.contains("physical plan"))
        .unwrap_or_default();
    assert!(
        plan.contains("AggregateExec") && plan.contains(" | "),
        "{plan}"
    );
    assert!(plan.contains("TabletScanExec: table=//t"), "{plan}");
    let compaction = stderr_of(&store, &["compact", "//t"], None, "dynql_storage=debug");
    for span in ["compact{", "write_compacted_chunks", "append_commit"] {
        assert!(compaction.contains(span), "no {span:?} in:\n{compaction}");
    }
    // Without the variable, stderr stays empty.
    let quiet = store.run(&["select-rows", "* FROM [//t]", "--format", "json"], None);
    assert!(quiet.status.success());
    assert_eq!(String::from_utf8_lossy(&quiet.stderr), "");
}

#[test]
fn a_filter_that_is_not_one_is_reported_and_the_command_runs() {
    let store = TestStore::new();
    store.ok(&["create", "table", "//t", "--attributes", TABLE], None);
    let out = store.run_with_env(
        &["select-rows", "* FROM [//t]", "--format", "json"],
        None,
        &[("DYNQL_LOG", "dynql=loud")],
    );
    assert!(out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("DYNQL_LOG=\"dynql=loud\" is ignored"),
        "{stderr}"
    );
}
