//! `explain-query`, the range cases (`testdata/conformance/ranges-public.jsonl`, checked as
//! `shared/conformance/ranges.py` checks them), the full-scan guard and pruned reads.

use serde_json::{json, Value};

use crate::TestStore;

/// Compares bounds value by value: numbers by value, `{"$max": true}` sentinels, strings.
fn same_bound(want: &Value, got: &Value) -> bool {
    match (want, got) {
        (Value::Number(a), Value::Number(b)) => {
            a.as_i64().zip(b.as_i64()).is_some_and(|(x, y)| x == y)
                || a.as_u64().zip(b.as_u64()).is_some_and(|(x, y)| x == y)
                || a.as_f64() == b.as_f64()
        }
        (Value::Array(a), Value::Array(b)) => {
            a.len() == b.len() && a.iter().zip(b).all(|(x, y)| same_bound(x, y))
        }
        _ => want == got,
    }
}

fn run_case(case: &Value) -> Result<(), String> {
    let store = TestStore::new();
    let attributes = json!({"dynamic": true, "schema": case["schema"]}).to_string();
    store.ok(
        &["create", "table", "//t", "--attributes", &attributes],
        None,
    );
    let query = format!("* from [//t] where {}", case["predicate"].as_str().unwrap());
    let limit = case["range_expansion_limit"]
        .as_u64()
        .unwrap_or(200_000)
        .to_string();
    let out = store.run(
        &[
            "explain-query",
            &query,
            "--format",
            "json",
            "--range-expansion-limit",
            &limit,
        ],
        None,
    );
    let stderr = String::from_utf8_lossy(&out.stderr).to_string();
    if stderr.contains("panicked") {
        return Err(format!("panic: {stderr}"));
    }
    if let Some(error) = case["expect"]["error"].as_str() {
        if out.status.success() {
            return Err(format!("expected error {error:?}, got success"));
        }
        if !stderr.to_lowercase().contains(&error.to_lowercase()) {
            return Err(format!("expected error {error:?}, got {stderr}"));
        }
        return Ok(());
    }
    if !out.status.success() {
        return Err(format!("failed: {stderr}"));
    }
    let got: Value = serde_json::from_slice(&out.stdout).map_err(|e| e.to_string())?;
    let want = &case["expect"]["ranges"];
    let got_ranges = got["ranges"].as_array().ok_or("no ranges field")?;
    let want_ranges = want.as_array().ok_or("bad case")?;
    let matches = want_ranges.len() == got_ranges.len()
        && want_ranges.iter().zip(got_ranges).all(|(w, g)| {
            same_bound(&w["lower"], &g["lower"]) && same_bound(&w["upper"], &g["upper"])
        });
    if !matches {
        return Err(format!(
            "ranges differ\n  want {want}\n  got  {}",
            got["ranges"]
        ));
    }
    Ok(())
}

#[test]
fn public_range_cases_pass_through_the_cli() {
    let path = format!(
        "{}/../../testdata/conformance/ranges-public.jsonl",
        env!("CARGO_MANIFEST_DIR")
    );
    let text = std::fs::read_to_string(path).expect("range cases");
    let cases: Vec<Value> = text
        .lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| serde_json::from_str(l).expect("case"))
        .collect();
    assert!(cases.len() >= 21);
    let failures = crate::run_cases(&cases, 2, run_case);
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

fn hashed_table(store: &TestStore, tablet_pivots: &str) {
    let attributes = format!(
        r#"{{dynamic=%true; pivot_keys={tablet_pivots}; schema=[
            {{name=h; type=uint64; sort_order=ascending; expression="farm_hash(id) % 4"}};
            {{name=id; type=int64; sort_order=ascending}};
            {{name=v; type=string}}]}}"#
    );
    store.ok(
        &["create", "table", "//t", "--attributes", &attributes],
        None,
    );
    let rows: String = (0..200)
        .map(|i| format!("{{id={i}; v=\"value {i}\"}};"))
        .collect();
    store.ok(&["insert-rows", "//t"], Some(&rows));
}

#[test]
fn explain_reports_ranges_and_what_is_read() {
    let store = TestStore::new();
    hashed_table(&store, "[[]; [1u]; [2u]; [3u]]");
    let out = store.ok(
        &[
            "explain-query",
            "* from [//t] where id = 7",
            "--format",
            "json",
        ],
        None,
    );
    let e: Value = serde_json::from_str(&out).unwrap();
    // One computed point range, in one of the four tablets.
    assert_eq!(e["ranges"].as_array().unwrap().len(), 1);
    assert_eq!(e["ranges"][0]["lower"][1], json!(7));
    assert_eq!(e["read"]["tablets"], json!([1, 4]));
    // A full scan reads every tablet.
    let out = store.ok(&["explain-query", "* from [//t]", "--format", "json"], None);
    let e: Value = serde_json::from_str(&out).unwrap();
    assert_eq!(
        e["ranges"],
        json!([{"lower": [], "upper": [{"$max": true}]}])
    );
    assert_eq!(e["read"]["tablets"], json!([4, 4]));
}

#[test]
fn the_full_scan_guard_uses_yts_message() {
    let store = TestStore::new();
    hashed_table(&store, "[[]]");
    let err = store.fails(
        &[
            "select-rows",
            "* from [//t] where v = \"x\"",
            "--allow-full-scan",
            "false",
        ],
        None,
    );
    assert!(
        err.contains("Primary table key is not used in the where clause (full scan)"),
        "{err}"
    );
    let out = store.ok(
        &[
            "select-rows",
            "v from [//t] where id = 3",
            "--allow-full-scan",
            "false",
            "--format",
            "json",
        ],
        None,
    );
    assert_eq!(out.trim(), r#"{"v":"value 3"}"#);
}

#[test]
fn statistics_show_that_a_point_query_reads_one_row() {
    let store = TestStore::new();
    hashed_table(&store, "[[]; [2u]]");
    let out = store.run(
        &[
            "select-rows",
            "v from [//t] where id = 3",
            "--print-statistics",
            "--format",
            "json",
        ],
        None,
    );
    assert!(out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("\"rows_read\"=1;"), "{stderr}");
    assert!(
        stderr.contains("\"tablets_read\"=1;\"tablets\"=2;"),
        "{stderr}"
    );
    let out = store.run(
        &[
            "select-rows",
            "v from [//t] where v = \"value 3\"",
            "--print-statistics",
            "--format",
            "json",
        ],
        None,
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("\"rows_read\"=200;"), "{stderr}");
}

#[test]
fn a_join_on_the_foreign_key_reads_only_the_matching_rows() {
    let store = TestStore::new();
    store.ok(
        &[
            "create",
            "table",
            "//dim",
            "--attributes",
            "{dynamic=%true; schema=[{name=id; type=int64; sort_order=ascending}; {name=name; type=string}]}",
        ],
        None,
    );
    let dims: String = (0..500)
        .map(|i| format!("{{id={i}; name=\"d{i}\"}};"))
        .collect();
    store.ok(&["insert-rows", "//dim"], Some(&dims));
    store.ok(
        &[
            "create",
            "table",
            "//fact",
            "--attributes",
            "{dynamic=%true; schema=[{name=k; type=int64; sort_order=ascending}; {name=dim; type=int64}]}",
        ],
        None,
    );
    store.ok(
        &["insert-rows", "//fact"],
        Some("{k=1; dim=10}; {k=2; dim=20}; {k=3; dim=10}; {k=4; dim=999}"),
    );
    let out = store.run(
        &[
            "select-rows",
            "k, name from [//fact] join [//dim] on dim = id",
            "--print-statistics",
            "--format",
            "json",
        ],
        None,
    );
    assert!(out.status.success(), "{out:?}");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(stdout.lines().count(), 3, "{stdout}");
    let stderr = String::from_utf8_lossy(&out.stderr);
    // 4 fact rows, then the 2 distinct dim keys that exist (of 3 asked for).
    assert!(stderr.contains("\"rows_read\"=6;"), "{stderr}");
}

#[test]
fn range_expansion_limits_above_the_cap_are_refused_before_any_work() {
    let store = TestStore::new();
    store.ok(
        &[
            "create",
            "table",
            "//t",
            "--attributes",
            "{dynamic=%true;schema=[{name=k;type=int64;sort_order=ascending};{name=v;type=int64}]}",
        ],
        None,
    );
    for command in ["explain-query", "select-rows"] {
        let err = store.fails(
            &[
                command,
                "* from [//t] where k between 1 and 100000000",
                "--range-expansion-limit",
                "100000000",
            ],
            None,
        );
        assert!(err.contains("range_expansion_limit"), "{err}");
        assert!(err.contains("1000000"), "{err}");
    }
    // At the cap it works.
    store.ok(
        &[
            "explain-query",
            "* from [//t] where k in (1, 2, 3)",
            "--format",
            "json",
            "--range-expansion-limit",
            "1000000",
        ],
        None,
    );
}

#[test]
fn explain_shows_the_physical_plan_with_the_tablet_scan() {
    let store = TestStore::new();
    hashed_table(&store, "[[]; [1u]; [2u]; [3u]]");
    let out = store.ok(
        &[
            "explain-query",
            "v, sum(1) as n from [//t] where id between 1 and 9 group by v having n > 1 order by v limit 3",
            "--format",
            "json",
        ],
        None,
    );
    let e: Value = serde_json::from_str(&out).unwrap();
    let plan = e["plan"].as_str().unwrap();
    for step in [
        "ProjectionExec",
        "SortExec",
        "AggregateExec",
        "FilterExec",
        "TabletScanExec: table=//t",
    ] {
        assert!(plan.contains(step), "{step} missing from\n{plan}");
    }
    // Only the columns the query reads leave the scan.
    assert!(plan.contains("columns=[id, v]"), "{plan}");
    // Rows wanted in key order up to a LIMIT: one partition in key order, no sort, a limit
    // that stops the scan.
    for query in [
        "* from [//t] limit 2",
        "* from [//t] where v != \"x\" order by h, id limit 2",
    ] {
        let out = store.ok(&["explain-query", query, "--format", "json"], None);
        let e: Value = serde_json::from_str(&out).unwrap();
        let plan = e["plan"].as_str().unwrap();
        assert!(plan.contains("fetch=2"), "{plan}");
        assert!(plan.contains("in key order"), "{plan}");
        assert!(!plan.contains("SortExec"), "{plan}");
    }
    // A join is a lookup over the joined table's key prefixes, under the WHERE filter.
    let out = store.ok(
        &[
            "explain-query",
            "a.v, b.v from [//t] as a join [//t] as b on a.id = b.id where a.id between 1 and 9 and b.v > \"value 1\"",
            "--format",
            "json",
        ],
        None,
    );
    let e: Value = serde_json::from_str(&out).unwrap();
    let plan = e["plan"].as_str().unwrap();
    assert!(
        plan.contains("LookupJoinExec: table=//t, inner, expected reads=key prefixes"),
        "{plan}"
    );
    // LIMIT of groups without ORDER BY keeps the first groups, in the order they appeared.
    let out = store.ok(
        &[
            "explain-query",
            "v, sum(1) as n from [//t] group by v limit 2",
            "--format",
            "json",
        ],
        None,
    );
    let e: Value = serde_json::from_str(&out).unwrap();
    let plan = e["plan"].as_str().unwrap();
    assert!(plan.contains("FirstGroupsExec: keys="), "{plan}");
    assert!(plan.contains("groups=2"), "{plan}");
    assert!(plan.contains("expr=[o@"), "{plan}");
}

/// The metrics of one operator's line of an analysed plan: `name=value` pairs inside
/// `metrics=[...]`.
fn metric(plan: &str, operator: &str, name: &str) -> Option<u64> {
    let line = plan
        .lines()
        .find(|l| l.trim_start().starts_with(operator))?;
    let metrics = &line[line.find("metrics=[")? + "metrics=[".len()..];
    let value = &metrics[metrics.find(&format!("{name}="))? + name.len() + 1..];
    let digits: String = value.chars().take_while(char::is_ascii_digit).collect();
    digits.parse().ok()
}

#[test]
fn explain_analyze_runs_the_query_and_shows_each_operators_metrics() {
    let store = TestStore::new();
    hashed_table(&store, "[[]; [1u]; [2u]; [3u]]");
    store.ok(&["compact", "//t"], None);
    let analyze = |query: &str| -> Value {
        let out = store.ok(
            &["explain-query", "--analyze", query, "--format", "json"],
            None,
        );
        serde_json::from_str(&out).unwrap()
    };
    // A grouped query is one plan: the groups are counted (YT's output row limit), then
    // HAVING, ORDER BY and the projection run over them.
    let e =
        analyze("v, sum(1) as n from [//t] where id between 1 and 9 group by v order by v limit 3");
    let plan = e["plan"].as_str().unwrap();
    assert!(!plan.contains("Stage"), "{plan}");
    assert_eq!(
        metric(plan, "GroupLimitExec", "output_rows"),
        Some(9),
        "{plan}"
    );
    assert_eq!(
        metric(plan, "TabletScanExec", "output_rows"),
        Some(9),
        "{plan}"
    );
    assert!(
        metric(plan, "TabletScanExec", "rows_decoded").unwrap() >= 9,
        "{plan}"
    );
    assert!(
        metric(plan, "TabletScanExec", "row_groups_read").unwrap() >= 1,
        "{plan}"
    );
    assert!(plan.contains("elapsed_compute="), "{plan}");
    let a = &e["analysis"];
    assert_eq!(a["result_rows"], 3, "{e}");
    assert_eq!(a["rows_read"], 9, "{e}");
    assert!(a["elapsed_ms"].as_f64().unwrap() > 0.0, "{e}");
    // A join's lookups, and the first groups, show their output rows.
    let e = analyze(
        "a.v, b.v from [//t] as a join [//t] as b on a.id = b.id where a.id between 1 and 9",
    );
    let plan = e["plan"].as_str().unwrap();
    assert_eq!(
        metric(plan, "LookupJoinExec", "output_rows"),
        Some(9),
        "{plan}"
    );
    let e = analyze("v, sum(1) as n from [//t] group by v limit 2");
    let plan = e["plan"].as_str().unwrap();
    assert_eq!(
        metric(plan, "FirstGroupsExec", "output_rows"),
        Some(2),
        "{plan}"
    );
    // Without --analyze nothing runs, and there is no analysis.
    let out = store.ok(&["explain-query", "v from [//t]", "--format", "json"], None);
    let e: Value = serde_json::from_str(&out).unwrap();
    assert!(e.get("analysis").is_none(), "{e}");
    assert!(!e["plan"].as_str().unwrap().contains("output_rows="), "{e}");
    // A query that fails fails the same way analysed.
    let err = store.fails(
        &[
            "explain-query",
            "--analyze",
            "id / 0 from [//t]",
            "--format",
            "json",
        ],
        None,
    );
    assert!(err.contains("Division by zero"), "{err}");
    // The run's row limits are select-rows' own: passed, the error's hint names the flag,
    // and the flag raises the limit.
    let err = store.fails(
        &[
            "explain-query",
            "--analyze",
            "v from [//t]",
            "--input-row-limit",
            "5",
        ],
        None,
    );
    assert!(
        err.contains("excessive input") && err.contains("--input-row-limit"),
        "{err}"
    );
    let out = store.ok(
        &[
            "explain-query",
            "--analyze",
            "v from [//t] where id between 1 and 9",
            "--input-row-limit",
            "9",
            "--output-row-limit",
            "9",
            "--format",
            "json",
        ],
        None,
    );
    let e: Value = serde_json::from_str(&out).unwrap();
    assert_eq!(e["analysis"]["result_rows"], 9, "{e}");
}
