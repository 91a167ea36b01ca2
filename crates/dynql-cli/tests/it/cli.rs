//! The CLI contract: commands, formats, and errors that leave the store unchanged.

use crate::TestStore;

const SCHEMA: &str = r#"{dynamic=%true; schema=[{name=k;type=int64;sort_order=ascending};{name=v;type=string};{name=u;type=uint64}]}"#;

fn store_with_rows() -> TestStore {
    let s = TestStore::new();
    s.ok(
        &["create", "table", "//home/t", "--attributes", SCHEMA],
        None,
    );
    s.ok(
        &["insert-rows", "//home/t", "--format", "json"],
        Some("{\"k\": 1, \"v\": \"a\", \"u\": 18446744073709551615}\n{\"k\": 2, \"v\": \"b\"}\n"),
    );
    s
}

#[test]
fn json_output_keeps_column_order_and_prints_uint64_plainly() {
    let s = store_with_rows();
    let out = s.ok(
        &[
            "select-rows",
            "u, v, k from [//home/t] where k = 1",
            "--format",
            "json",
        ],
        None,
    );
    assert_eq!(out, "{\"u\":18446744073709551615,\"v\":\"a\",\"k\":1}\n");
}

#[test]
fn yson_and_dsv_output() {
    let s = store_with_rows();
    let out = s.ok(
        &[
            "select-rows",
            "k, v, u from [//home/t] order by k limit 2",
            "--format",
            "yson",
        ],
        None,
    );
    assert_eq!(
        out,
        "{\"k\"=1;\"v\"=\"a\";\"u\"=18446744073709551615u;};\n{\"k\"=2;\"v\"=\"b\";\"u\"=#;};\n"
    );
    let out = s.ok(
        &[
            "select-rows",
            "k, v from [//home/t] where k = 1",
            "--format=schemaful_dsv",
        ],
        None,
    );
    assert_eq!(out, "1\ta\n");
    let err = s.fails(
        &[
            "select-rows",
            "k, u from [//home/t] where k = 2",
            "--format",
            "schemaful_dsv",
        ],
        None,
    );
    assert!(err.contains("is in schema but missing"), "{err}");
}

#[test]
fn yson_rows_on_stdin_and_delete() {
    let s = store_with_rows();
    s.ok(
        &["insert-rows", "//home/t"],
        Some("{k=3;v=\"c\"};{k=4;v=\"d\";u=4u}"),
    );
    s.ok(
        &["delete-rows", "//home/t", "--format", "json"],
        Some("{\"k\": 1}\n"),
    );
    let out = s.ok(
        &[
            "select-rows",
            "sum(1) as n from [//home/t] group by 1",
            "--format",
            "json",
        ],
        None,
    );
    assert_eq!(out, "{\"n\":3}\n");
}

#[test]
fn bad_rows_fail_and_leave_the_store_unchanged() {
    let s = store_with_rows();
    let before = s.ok(
        &["select-rows", "* from [//home/t]", "--format", "json"],
        None,
    );
    for (rows, message) in [
        (
            "{\"k\": 5, \"v\": \"ok\"}\n{\"k\": \"x\"}\n",
            "cannot store string",
        ),
        ("{\"v\": \"no key\"}\n", "Missing key column \"k\""),
        ("{\"k\": 6, \"nope\": 1}\n", "No such column \"nope\""),
        ("{\"k\": 7, \n", "malformed JSON"),
    ] {
        let err = s.fails(&["insert-rows", "//home/t", "--format", "json"], Some(rows));
        assert!(err.contains(message), "{err}");
    }
    assert_eq!(
        s.ok(
            &["select-rows", "* from [//home/t]", "--format", "json"],
            None
        ),
        before
    );
}

#[test]
fn syntax_errors_point_at_the_position() {
    let s = store_with_rows();
    let err = s.fails(
        &[
            "select-rows",
            "* from [//home/t] limit 5 offset 2",
            "--format",
            "json",
        ],
        None,
    );
    assert!(err.contains("Error while parsing query"), "{err}");
    assert!(err.contains("at position 26"), "{err}");
    assert!(err.contains("                          ^^^^^^"), "{err}");
}

#[test]
fn options_accept_both_flag_forms() {
    let s = store_with_rows();
    let err = s.fails(
        &["select-rows", "* from [//home/t]", "--input-row-limit", "1"],
        None,
    );
    assert!(err.contains("Query terminated prematurely"), "{err}");
    let out = s.ok(
        &[
            "select-rows",
            "k from [//home/t]",
            "--format",
            "json",
            "--input-row-limit=1",
            "--fail-on-incomplete-result=false",
        ],
        None,
    );
    assert_eq!(out.lines().count(), 1);
    let out = s.ok(
        &[
            "select-rows",
            "k from [//home/t] where k = {key}",
            "--format",
            "json",
            "--placeholder-values",
            "{key=2}",
        ],
        None,
    );
    assert_eq!(out, "{\"k\":2}\n");
}

#[test]
fn catalog_commands() {
    let s = store_with_rows();
    assert_eq!(s.ok(&["exists", "//home/t"], None), "true\n");
    assert_eq!(s.ok(&["exists", "//home/x"], None), "false\n");
    assert_eq!(s.ok(&["list", "//home"], None), "t\n");
    let err = s.fails(
        &["create", "table", "//home/t", "--attributes", SCHEMA],
        None,
    );
    assert!(err.contains("already exists"), "{err}");
    s.ok(&["remove", "//home/t"], None);
    assert_eq!(s.ok(&["exists", "//home/t"], None), "false\n");
    let err = s.fails(&["select-rows", "* from [//home/t]"], None);
    assert!(err.contains("does not exist"), "{err}");
}

#[test]
fn invalid_schemas_are_refused() {
    let s = TestStore::new();
    for (attrs, message) in [
        (
            r#"{dynamic=%true; schema=[{name=v;type=int64};{name=k;type=int64;sort_order=ascending}]}"#,
            "key columns must come first",
        ),
        (
            r#"{dynamic=%true; schema=[{name=k;type=int64;sort_order=ascending};{name=h;type=uint64;sort_order=ascending;expression="farm_hash(v)"};{name=v;type=string}]}"#,
            "not a non-computed key column",
        ),
        (
            r#"{schema=[{name=k;type=int64}]; tablet_count=2}"#,
            "\"tablet_count\" is for dynamic tables",
        ),
        (r#"{dynamic=%false}"#, "\"schema\" is required"),
        (
            r#"{dynamic=%true; schema=[{name=k;type=int64;sort_order=ascending};{name=v;type=int64}]; pivot_keys=[[1]]}"#,
            "first pivot key must be empty",
        ),
    ] {
        let err = s.fails(&["create", "table", "//t", "--attributes", attrs], None);
        assert!(err.contains(message), "{attrs}: {err}");
    }
    assert_eq!(s.ok(&["exists", "//t"], None), "false\n");
}

#[test]
fn json_rows_with_repeated_keys_or_invalid_utf8_are_refused_with_their_line() {
    let s = TestStore::new();
    s.ok(
        &[
            "create",
            "table",
            "//t",
            "--attributes",
            "{dynamic=%true;schema=[{name=k;type=int64;sort_order=ascending};{name=v;type=string}]}",
        ],
        None,
    );
    let err = s.fails(
        &["insert-rows", "//t", "--format", "json"],
        Some("{\"k\":1,\"v\":\"a\"}\n{\"k\":2,\"k\":3}\n"),
    );
    assert!(err.contains("line 2"), "{err}");
    assert!(err.contains("\"k\" appears twice"), "{err}");
    // Invalid UTF-8 on line 3 (the input is bytes: written through a file).
    let rows = s.dir.path().join("rows.json");
    std::fs::write(&rows, b"{\"k\":1}\n\n{\"k\":4,\"v\":\"\xc3\x28\"}\n").unwrap();
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_dynql"))
        .args([
            "--store",
            &s.url(),
            "insert-rows",
            "//t",
            "--format",
            "json",
        ])
        .stdin(std::fs::File::open(&rows).unwrap())
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(
        err.contains("line 3") && err.contains("invalid UTF-8"),
        "{err}"
    );
    // Nothing was written.
    let rows = s.ok(&["select-rows", "* from [//t]", "--format", "json"], None);
    assert!(rows.trim().is_empty(), "{rows}");
}

#[test]
fn an_output_row_limit_stops_the_scan_instead_of_reading_everything() {
    let s = TestStore::new();
    s.ok(
        &[
            "create",
            "table",
            "//t",
            "--attributes",
            "{dynamic=%true;schema=[{name=k;type=int64;sort_order=ascending};{name=v;type=int64}]}",
        ],
        None,
    );
    let rows: String = (0..20_000)
        .map(|i| format!("{{\"k\":{i},\"v\":{i}}}\n"))
        .collect();
    s.ok(&["insert-rows", "//t", "--format", "json"], Some(&rows));
    let query = "* from [//t] where v % 2 = 0";
    let out = s.run(
        &[
            "select-rows",
            query,
            "--format",
            "json",
            "--output-row-limit",
            "3",
            "--fail-on-incomplete-result",
            "false",
            "--print-statistics",
        ],
        None,
    );
    let stdout = String::from_utf8_lossy(&out.stdout).to_string();
    let stderr = String::from_utf8_lossy(&out.stderr).to_string();
    assert_eq!(stdout.lines().count(), 3, "{stdout}");
    let all = format!("{stdout}{stderr}");
    // The 20000 rows land as one chunk (a large insert is a bulk write): its first row
    // group (16384 rows) is enough to find one row past the limit.
    assert!(
        all.contains("\"rows_read\"=16384;")
            && all.contains("\"row_groups_read\"=1;\"row_groups\"=2;"),
        "read more than needed: {all}"
    );
    assert!(all.contains("\"data_weight_read\"=278528;"), "{all}");
    assert!(all.contains("\"incomplete_output\"=%true;"), "{all}");
    // With the default fail_on_incomplete_result the result is YT's output-limit error, as
    // when everything is read.
    let err = s.fails(&["select-rows", query, "--output-row-limit", "3"], None);
    assert!(err.contains("excessive output"), "{err}");
}

#[test]
fn json_output_loads_back_value_for_value() {
    let s = TestStore::new();
    let attributes = "{dynamic=%true;schema=[{name=k;type=int64;sort_order=ascending};{name=d;type=double};{name=s;type=string};{name=u;type=uint64};{name=a;type=any}]}";
    for t in ["//t", "//copy"] {
        s.ok(&["create", "table", t, "--attributes", attributes], None);
    }
    s.ok(
        &["insert-rows", "//t"],
        Some(concat!(
            r#"{k=1;d=%nan;s="nan";u=18446744073709551615u;a={x=[1;"y";%true]}};"#,
            r#"{k=2;d=%inf;s="";a=#};{k=3;d=%-inf;s="inf"};{k=4;d=-0.0;s="\x00text";a="str"};"#,
            r#"{k=-9223372036854775808;d=1e308;s="é"}"#,
        )),
    );
    let json = s.ok(&["select-rows", "* from [//t]", "--format", "json"], None);
    s.ok(&["insert-rows", "//copy", "--format", "json"], Some(&json));
    let original = s.ok(&["select-rows", "* from [//t]", "--format", "yson"], None);
    let copied = s.ok(
        &["select-rows", "* from [//copy]", "--format", "yson"],
        None,
    );
    assert_eq!(copied, original);
    assert!(
        original.contains("%nan") && original.contains("%-inf"),
        "{original}"
    );
}

#[test]
fn encode_utf8_json_round_trips_every_byte() {
    let s = TestStore::new();
    let attributes = "{dynamic=%true;schema=[{name=k;type=int64;sort_order=ascending};{name=s;type=string};{name=a;type=any}]}";
    for t in ["//t", "//copy"] {
        s.ok(&["create", "table", t, "--attributes", attributes], None);
    }
    // Every byte value, as YSON escapes, in a string and inside an `any` value.
    let all: String = (0..=255u8).map(|b| format!("\\x{b:02x}")).collect();
    s.ok(
        &["insert-rows", "//t"],
        Some(&format!(
            r#"{{k=1;s="{all}";a={{x="{all}"}}}};{{k=2;s="é"}}"#
        )),
    );
    let format = "<encode_utf8=%true>json";
    let json = s.ok(&["select-rows", "* from [//t]", "--format", format], None);
    s.ok(&["insert-rows", "//copy", "--format", format], Some(&json));
    let lookup = s.ok(
        &["lookup-rows", "//t", "--format", format],
        Some(r#"{"k":1}"#),
    );
    assert_eq!(lookup.trim(), json.lines().next().unwrap());
    assert_eq!(
        s.ok(&["select-rows", "* from [//copy]"], None),
        s.ok(&["select-rows", "* from [//t]"], None)
    );
    // A character above U+00FF stands for no byte.
    let err = s.fails(
        &["insert-rows", "//copy", "--format", format],
        Some("{\"k\":3,\"s\":\"привет\"}\n"),
    );
    assert!(err.contains("above U+00FF"), "{err}");
    // `<encode_utf8=%false>json` is the plain json format.
    s.ok(
        &[
            "insert-rows",
            "//copy",
            "--format",
            "<encode_utf8=%false>json",
        ],
        Some("{\"k\":3,\"s\":\"привет\"}\n"),
    );
    let text = s.ok(
        &[
            "select-rows",
            "s from [//copy] where k = 3",
            "--format",
            "json",
        ],
        None,
    );
    assert_eq!(text.trim(), r#"{"s":"привет"}"#);
}

#[test]
fn select_rows_prints_rows_as_computed_and_a_later_error_still_fails_the_command() {
    let s = TestStore::new();
    s.ok(
        &[
            "create",
            "table",
            "//t",
            "--attributes",
            "{dynamic=%true; schema=[{name=k;type=int64;sort_order=ascending}]}",
        ],
        None,
    );
    let rows: String = (0..30_000).map(|k| format!("{{k={k}}};\n")).collect();
    s.ok(&["insert-rows", "//t"], Some(&rows));
    s.ok(&["compact", "//t"], None);
    let all = s.ok(&["select-rows", "k from [//t]", "--format", "json"], None);
    assert_eq!(all.lines().count(), 30_000);
    // Division by zero at k = 25000: the rows before it may be printed, the command fails.
    let out = s.run(
        &[
            "select-rows",
            "k, 1 / (k - 25000) as x from [//t]",
            "--format",
            "json",
        ],
        None,
    );
    assert_eq!(out.status.code(), Some(1), "{out:?}");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("Division by zero"), "{stderr}");
    let printed = String::from_utf8_lossy(&out.stdout);
    let count = printed.lines().count();
    assert!(count > 0 && count < 25_000, "{count} rows printed");
    for (k, line) in printed.lines().enumerate() {
        let row: serde_json::Value = serde_json::from_str(line).unwrap();
        assert_eq!(row["k"], k as i64);
    }
}

/// `dynql --store URL ARGS`, for a store URL of the test's choosing.
fn run_on(url: &str, args: &[&str]) -> std::process::Output {
    std::process::Command::new(env!("CARGO_BIN_EXE_dynql"))
        .arg("--store")
        .arg(url)
        .args(args)
        .stdin(std::process::Stdio::null())
        .output()
        .expect("run dynql")
}

#[test]
fn commands_that_only_read_never_create_a_store_and_their_errors_name_it() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("mistyped");
    let url = format!("file://{}", path.display());
    let out = run_on(&url, &["exists", "//t"]);
    assert!(out.status.success());
    assert_eq!(String::from_utf8_lossy(&out.stdout), "false\n");
    let note = String::from_utf8_lossy(&out.stderr);
    assert!(note.contains(&format!("no dynql store at {url}")), "{note}");
    for args in [
        &["select-rows", "* from [//t]"][..],
        &["lookup-rows", "//t"],
        &["explain-query", "* from [//t]"],
        &["get", "//t/@schema"],
        &["list", "/"],
        &["check"],
    ] {
        let out = run_on(&url, args);
        let stderr = String::from_utf8_lossy(&out.stderr);
        if !out.status.success() && stderr.contains("does not exist") {
            assert!(
                stderr.contains(&format!("(no dynql store exists at {url})")),
                "{args:?}: {stderr}"
            );
        }
        assert!(!path.exists(), "{args:?} created the store");
    }
    // An empty directory is no store either: reading it creates nothing in it.
    std::fs::create_dir(&path).unwrap();
    let out = run_on(&url, &["select-rows", "* from [//t]"]);
    assert!(!out.status.success());
    assert_eq!(std::fs::read_dir(&path).unwrap().count(), 0);
    // A write creates the store; then a missing table is named with the store searched.
    let out = run_on(&url, &["create", "table", "//t", "--attributes", SCHEMA]);
    assert!(out.status.success(), "{out:?}");
    let out = run_on(&url, &["select-rows", "* from [//nope]"]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains(&format!(
            "Table \"//nope\" does not exist (in the store at {url})"
        )),
        "{stderr}"
    );
    assert!(!stderr.contains("note:"), "{stderr}");
}

#[test]
fn the_query_may_be_given_as_an_option() {
    let s = store_with_rows();
    let query = "k from [//home/t] where k = 2";
    let positional = s.ok(&["select-rows", query, "--format", "json"], None);
    let option = s.ok(&["select-rows", "--query", query, "--format", "json"], None);
    assert_eq!(positional, "{\"k\":2}\n");
    assert_eq!(option, positional);
    let err = s.fails(&["select-rows", "--format", "json"], None);
    assert!(err.contains("QUERY"), "{err}");
}

#[test]
fn yt_spellings_work_as_typed() {
    let s = TestStore::new();
    let schema = r#"{dynamic=%true; schema=[{name=k;type=int64;sort_order=ascending};{name=v;type=string};{name=n;type=int64;aggregate=sum}]}"#;
    s.ok(
        &[
            "create",
            "--type",
            "table",
            "//home/t",
            "--attributes",
            schema,
        ],
        None,
    );
    s.ok(&["create", "map_node", "//home/dir"], None);
    s.ok(&["create", "map_node", "//home/dir", "-i"], None);
    // insert-rows: --atomicity, --no-update after --update (the last wins), --aggregate.
    s.ok(
        &[
            "insert-rows",
            "//home/t",
            "--atomicity",
            "none",
            "--update",
            "--no-update",
        ],
        Some("{k=1;v=a;n=1};{k=2;v=b;n=2}"),
    );
    s.ok(
        &["insert-rows", "//home/t", "--update", "--aggregate"],
        Some("{k=1;n=5}"),
    );
    let out = s.ok(
        &[
            "lookup-rows",
            "//home/t",
            "--column-name",
            "n",
            "--column-name",
            "v",
            "--format",
            "json",
        ],
        Some("{\"k\": 1}\n"),
    );
    assert_eq!(out, "{\"n\":6,\"v\":\"a\"}\n");
    let err = s.fails(&["lookup-rows", "//home/t", "--versioned"], Some("{k=1}"));
    assert!(err.contains("--versioned lookups"), "{err}");
    s.ok(
        &["delete-rows", "//home/t", "--atomicity", "full"],
        Some("{k=2}"),
    );
    // Transactions: master by default (as in YT), tablet ones for rows.
    let master = s.ok(&["start-tx"], None).trim().to_string();
    let err = s.fails(&["insert-rows", "//home/t", "--tx", &master], Some("{k=3}"));
    assert!(
        err.contains("is not a valid tablet transaction id"),
        "{err}"
    );
    let tablet = s
        .ok(&["start-tx", "--type", "tablet"], None)
        .trim()
        .to_string();
    let err = s.fails(&["create", "map_node", "//tmp/x", "--tx", &tablet], None);
    assert!(
        err.contains("is not a valid master transaction id"),
        "{err}"
    );
    // get: a node, with attributes, and a directory.
    assert_eq!(s.ok(&["get", "//home/t"], None), "#\n");
    assert_eq!(
        s.ok(&["get", "//home/t", "--attribute", "tablet_count"], None),
        "<\"tablet_count\"=1;>#\n"
    );
    assert_eq!(s.ok(&["get", "//home"], None), "{\"dir\"={};\"t\"=#;}\n");
    // set: the value on stdin.
    s.ok(&["set", "//home/t/@max_data_versions"], Some("3\n"));
    assert_eq!(s.ok(&["get", "//home/t/@max_data_versions"], None), "3u\n");
    // alter-table --dynamic as a bare flag; remove -r of a table.
    s.ok(&["unmount-table", "//home/t"], None);
    s.ok(&["alter-table", "//home/t", "--dynamic"], None);
    let err = s.fails(&["remove", "-r", "//home"], None);
    assert!(err.contains("builtin node"), "{err}");
    s.ok(&["remove", "-r", "//home/t"], None);
    assert_eq!(s.ok(&["exists", "//home/t"], None), "false\n");
    // --proxy names a cluster dynql does not have.
    let err = s.fails(&["--proxy", "hahn", "list", "/"], None);
    assert!(err.contains("no proxy"), "{err}");
}

#[test]
fn statistics_print_as_a_yson_map() {
    let s = store_with_rows();
    let out = s.run(
        &["select-rows", "k from [//home/t]", "--print-statistics"],
        None,
    );
    assert!(out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    let statistics = dynql::yson::parse(stderr.trim().as_bytes()).expect("YSON statistics");
    assert_eq!(statistics.get("rows_read"), Some(&dynql::Yson::Int64(2)));
    assert_eq!(
        statistics.get("incomplete_output"),
        Some(&dynql::Yson::Boolean(false))
    );
}

#[test]
fn formats_take_yt_attributes_and_yt_format() {
    let s = store_with_rows();
    let q = "k, v from [//home/t]";
    let run = |format: &str| s.ok(&["select-rows", q, "--format", format], None);
    assert_eq!(
        run("<format=text>yson"),
        "{\"k\"=1;\"v\"=\"a\";};\n{\"k\"=2;\"v\"=\"b\";};\n"
    );
    assert_eq!(
        run("<format=pretty>yson"),
        "{\n    \"k\" = 1;\n    \"v\" = \"a\";\n};\n{\n    \"k\" = 2;\n    \"v\" = \"b\";\n};\n"
    );
    assert_eq!(run("<columns=[v;k]>schemaful_dsv"), "a\t1\nb\t2\n");
    assert_eq!(run("<encode_utf8=%false>json"), run("json"));
    for (bad, says) in [
        ("<format=binary>yson", "binary YSON is not supported"),
        (
            "<columns=[nope]>schemaful_dsv",
            "\"nope\" is not in the result",
        ),
        (
            "<indent=2>json",
            "attribute indent of json is not supported",
        ),
        ("dsv", "unknown format \"dsv\""),
    ] {
        let err = s.fails(&["select-rows", q, "--format", bad], None);
        assert!(err.contains(says), "{bad}: {err}");
    }
    // YT_FORMAT when --format is not given, as yt reads it.
    let out = s.run_with_env(&["select-rows", q], None, &[("YT_FORMAT", "json")]);
    assert_eq!(
        String::from_utf8_lossy(&out.stdout),
        "{\"k\":1,\"v\":\"a\"}\n{\"k\":2,\"v\":\"b\"}\n"
    );
    let explained = s.ok(&["explain-query", q, "--format", "yson"], None);
    let node = dynql::yson::parse(explained.trim().as_bytes()).expect("YSON");
    assert!(node.get("ranges").is_some(), "{explained}");
}

#[test]
fn row_commands_take_yt_formats_and_yt_format() {
    let s = store_with_rows();
    let json = [("YT_FORMAT", "json")];
    let out = s.run_with_env(
        &["insert-rows", "//home/t"],
        Some("{\"k\": 3, \"v\": \"c\"}\n"),
        &json,
    );
    assert!(out.status.success(), "{out:?}");
    s.ok(
        &["insert-rows", "//home/t", "--format", "<format=text>yson"],
        Some("{k=4;v=d};"),
    );
    // --format wins over YT_FORMAT; pretty YSON prints lookups indented.
    let out = s.run_with_env(
        &[
            "lookup-rows",
            "//home/t",
            "--format",
            "<format=pretty>yson",
            "--column-name",
            "k",
            "--column-name",
            "v",
        ],
        Some("{k=3};{k=4};"),
        &json,
    );
    assert_eq!(
        String::from_utf8_lossy(&out.stdout),
        "{\n    \"k\" = 3;\n    \"v\" = \"c\";\n};\n{\n    \"k\" = 4;\n    \"v\" = \"d\";\n};\n"
    );
    let out = s.run_with_env(&["delete-rows", "//home/t"], Some("{\"k\": 3}\n"), &json);
    assert!(out.status.success(), "{out:?}");
    assert_eq!(
        s.ok(
            &["select-rows", "k from [//home/t]", "--format", "json"],
            None
        ),
        "{\"k\":1}\n{\"k\":2}\n{\"k\":4}\n"
    );
    for bad in ["schemaful_dsv", "<format=binary>yson", "<indent=2>json"] {
        let err = s.fails(
            &["insert-rows", "//home/t", "--format", bad],
            Some("{k=9};"),
        );
        assert!(err.contains("invalid value"), "{bad}: {err}");
    }
    let out = s.run_with_env(
        &["insert-rows", "//home/t"],
        Some("{k=9};"),
        &[("YT_FORMAT", "csv")],
    );
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("YT_FORMAT") && err.contains("not csv"),
        "{err}"
    );
    // Nothing was written by the refused commands.
    assert_eq!(
        s.ok(
            &[
                "select-rows",
                "k from [//home/t] where k = 9",
                "--format",
                "json"
            ],
            None
        ),
        ""
    );
}

#[test]
fn sql_mistakes_read_once_as_the_query_s() {
    let s = store_with_rows();
    let err = s.fails(&["sql", "selec 1"], None);
    assert_eq!(
        err.matches("Expected: an SQL statement").count(),
        1,
        "{err}"
    );
    let err = s.fails(&["sql", "select nope from \"//home/t\""], None);
    assert_eq!(err.matches("No field named nope").count(), 1, "{err}");
}

#[test]
fn csv_and_tsv_have_a_header_and_quote_what_needs_it() {
    let s = store_with_rows();
    s.ok(
        &["insert-rows", "//home/t", "--format", "json"],
        Some("{\"k\": 3, \"v\": \"x,\\\"y\\\"\"}\n"),
    );
    let q = "k, v from [//home/t]";
    assert_eq!(
        s.ok(&["select-rows", q, "--format", "csv"], None),
        "k,v\n1,a\n2,b\n3,\"x,\"\"y\"\"\"\n"
    );
    assert_eq!(
        s.ok(
            &[
                "select-rows",
                "k, u from [//home/t] where k > 1",
                "--format",
                "tsv"
            ],
            None
        ),
        "k\tu\n2\t\n3\t\n"
    );
    // No rows: the header alone.
    assert_eq!(
        s.ok(
            &[
                "select-rows",
                "k from [//home/t] where k > 9",
                "--format",
                "csv"
            ],
            None
        ),
        "k\n"
    );
}
