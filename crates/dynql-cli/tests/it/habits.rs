//! `yt` habits the command line keeps (issue 40, item 6): `create` prints the new id, `set`
//! of a system attribute names the command that changes it, help texts say what is true.

use crate::TestStore;

const SCHEMA: &str =
    "{dynamic=%true; schema=[{name=k;type=int64;sort_order=ascending};{name=v;type=string}]}";

#[test]
fn create_prints_the_id_of_the_node() {
    let s = TestStore::new();
    let id = s.ok(&["create", "table", "//t", "--attributes", SCHEMA], None);
    assert_eq!(
        s.ok(&["get", "//t/@id"], None),
        format!("\"{}\"\n", id.trim())
    );
    let dir = s.ok(&["create", "map_node", "//tmp/d"], None);
    assert_eq!(
        s.ok(&["get", "//tmp/d/@id"], None),
        format!("\"{}\"\n", dir.trim())
    );
    // With --ignore-existing: the id of the node already there.
    let again = s.ok(&["create", "map_node", "//tmp/d", "-i"], None);
    assert_eq!(again, dir);
    // In a transaction: the id of the node it created.
    let tx = s.ok(&["start-tx", "--timeout", "600000"], None);
    let tx = tx.trim();
    let inner = s.ok(&["create", "map_node", "//tmp/e", "--tx", tx], None);
    assert_eq!(
        s.ok(&["get", "//tmp/e/@id", "--tx", tx], None),
        format!("\"{}\"\n", inner.trim())
    );
}

#[test]
fn set_of_a_system_attribute_names_the_command_that_changes_it() {
    let s = TestStore::new();
    s.ok(&["create", "table", "//t", "--attributes", SCHEMA], None);
    for (name, value, says) in [
        (
            "schema",
            "[{name=k;type=int64}]",
            "alter-table PATH --schema",
        ),
        ("dynamic", "%false", "alter-table PATH --dynamic"),
        ("tablet_count", "4", "reshard-table"),
        ("tablet_state", "unmounted", "unmount-table"),
        ("row_count", "5", "read-only"),
    ] {
        let err = s.fails(&["set", &format!("//t/@{name}"), value], None);
        assert!(
            err.contains(&format!("Attribute \"{name}\" of table //t cannot be set"))
                && err.contains(says),
            "{name}: {err}"
        );
    }
    // Nothing changed.
    assert_eq!(s.ok(&["get", "//t/@dynamic"], None), "%true\n");
}

#[test]
fn start_tx_help_says_it_starts_a_master_transaction() {
    let s = TestStore::new();
    let help = s.ok(&["--help"], None);
    let line = help
        .lines()
        .find(|l| l.trim_start().starts_with("start-tx"))
        .unwrap_or_else(|| panic!("{help}"));
    assert!(line.contains("master"), "{line}");
}

#[test]
fn queries_over_files_alone_need_no_store_and_say_nothing_of_it() {
    let s = TestStore::new();
    let files = tempfile::tempdir().unwrap();
    let file = files.path().join("f.parquet");
    let copy = format!(
        "COPY (SELECT 1 AS k UNION ALL SELECT 2 AS k) TO '{}'",
        file.display()
    );
    let quiet = |args: &[&str]| {
        let out = s.run(args, None);
        let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
        assert!(out.status.success(), "{args:?}: {stderr}");
        assert!(!stderr.contains("note:"), "{args:?}: {stderr}");
        String::from_utf8(out.stdout).unwrap()
    };
    quiet(&["sql", "--allow-writes", &copy]);
    let query = format!(
        "sum(k) as s from [file:{}] group by 1 as one",
        file.display()
    );
    assert_eq!(
        quiet(&["select-rows", &query, "--format", "json"]),
        "{\"s\":3}\n"
    );
    // A table that is not there: the error names the store searched, in both dialects.
    let err = s.fails(&["select-rows", "* from [//t]"], None);
    assert!(err.contains("no dynql store exists at"), "{err}");
    let err = s.fails(&["sql", "SELECT * FROM \"//t\""], None);
    assert!(err.contains("no dynql store exists at"), "{err}");
    // Commands that read the tree still say the store is missing.
    let out = s.run(&["list", "/"], None);
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("note: there is no dynql store"),
        "{out:?}"
    );
}

#[test]
fn get_list_and_explain_query_take_the_formats_yt_takes() {
    let s = TestStore::new();
    s.ok(
        &["create", "table", "//home/t", "-r", "--attributes", SCHEMA],
        None,
    );
    let get = |path: &str, format: &str| s.ok(&["get", path, "--format", format], None);
    // Pretty YSON as YT writes it: four spaces a level, `"key" = value;`, attributes in
    // front of the value.
    let pretty = get("//home/t/@schema", "<format=pretty>yson");
    assert!(
        pretty.starts_with(
            "<\n    \"strict\" = %true;\n    \"unique_keys\" = %true;\n> [\n    {\n        \"name\" = \"k\";\n"
        ),
        "{pretty}"
    );
    assert!(pretty.ends_with("    };\n]\n"), "{pretty}");
    // Text YSON (also the default in a pipe) and JSON.
    assert_eq!(get("//home/t/@key_columns", "yson"), "[\"k\";]\n");
    assert_eq!(
        get("//home/t/@key_columns", "<format=text>yson"),
        "[\"k\";]\n"
    );
    assert_eq!(s.ok(&["get", "//home/t/@key_columns"], None), "[\"k\";]\n");
    assert_eq!(get("//home/t/@key_columns", "json"), "[\"k\"]\n");
    assert_eq!(
        get("//home/t/@key_columns", "<format=pretty>json"),
        "[\n  \"k\"\n]\n"
    );
    let err = s.fails(&["get", "//home/t/@key_columns", "--format", "xml"], None);
    assert!(err.contains("unknown format \"xml\""), "{err}");
    // list --format at the top, with attributes.
    assert_eq!(
        s.ok(
            &["list", "/", "--format", "<format=pretty>yson", "--attribute", "type"],
            None
        ),
        "[\n    <\n        \"type\" = \"map_node\";\n    > \"home\";\n    <\n        \"type\" = \"map_node\";\n    > \"sys\";\n    <\n        \"type\" = \"map_node\";\n    > \"tmp\";\n]\n"
    );
    assert_eq!(
        s.ok(&["list", "//home", "--format", "json"], None),
        "[\"t\"]\n"
    );
    // explain-query: JSON in a pipe as before, any of the formats when asked.
    let query = "k FROM [//home/t] WHERE k = 1";
    assert!(s.ok(&["explain-query", query], None).starts_with("{\""));
    let explained = s.ok(
        &["explain-query", query, "--format", "<format=pretty>yson"],
        None,
    );
    assert!(
        explained.starts_with(
            "{\n    \"ranges\" = [\n        {\n            \"lower\" = [\n                1;\n"
        ),
        "{explained}"
    );
    assert!(s
        .ok(&["explain-query", query, "--format", "yson"], None)
        .starts_with("{\"ranges\"=[{"));
}

#[test]
fn list_long_format_prints_what_yt_prints_as_far_as_dynql_knows_it() {
    let s = TestStore::new();
    s.ok(
        &["create", "table", "//home/t", "-r", "--attributes", SCHEMA],
        None,
    );
    s.ok(
        &[
            "create",
            "document",
            "//home/doc",
            "--attributes",
            "{value={a=1}}",
        ],
        None,
    );
    let out = s.ok(&["list", "-l", "//home"], None);
    let lines: Vec<&str> = out.lines().collect();
    assert_eq!(lines.len(), 2, "{out}");
    // yt's columns: type (10 wide), account (20), disk space (10), date (10), time (5), name.
    let doc = lines.iter().find(|l| l.ends_with(" doc")).expect("doc");
    assert_eq!(&doc[..10], "  document", "{out}");
    assert_eq!(&doc[10..32], "                    - ", "{out}");
    assert_eq!(&doc[32..43], "      0.0B ", "{out}");
    let date = &doc[43..53];
    assert!(date.len() == 10 && date.as_bytes()[4] == b'-', "{out}");
    assert_eq!(doc.as_bytes()[59], b' ', "{out}");
    assert_eq!(doc.as_bytes()[56], b':', "{out}");
    // A table has no modification time in dynql: `-`.
    let table = lines.iter().find(|l| l.ends_with(" t")).expect("t");
    let fields: Vec<&str> = table.split_whitespace().collect();
    assert_eq!(fields, ["table", "-", "0.0B", "-", "-", "t"], "{out}");
    // As in yt, -l and --format do not go together.
    let err = s.fails(&["list", "-l", "//home", "--format", "yson"], None);
    assert!(err.contains("cannot be used with"), "{err}");
}

#[test]
fn sql_and_select_rows_print_yson_into_a_pipe() {
    let s = TestStore::new();
    s.ok(
        &["create", "table", "//home/t", "-r", "--attributes", SCHEMA],
        None,
    );
    s.ok(&["insert-rows", "//home/t"], Some("{k=1;v=a};"));
    assert_eq!(s.ok(&["sql", "SELECT 1 AS a"], None), "{\"a\"=1;};\n");
    assert_eq!(
        s.ok(&["select-rows", "k, v FROM [//home/t]"], None),
        "{\"k\"=1;\"v\"=\"a\";};\n"
    );
    // YT_FORMAT chooses for sql too.
    let out = s.run_with_env(&["sql", "SELECT 1 AS a"], None, &[("YT_FORMAT", "json")]);
    assert_eq!(String::from_utf8_lossy(&out.stdout), "{\"a\":1}\n");
}

/// Runs `dynql ARGS` with `stdin`, reads two lines of its stdout and closes it, as `| head
/// -2` does; returns the exit status and stderr.
fn read_two_lines_and_close(
    s: &TestStore,
    args: &[&str],
    stdin: &str,
) -> (std::process::ExitStatus, String) {
    use std::io::{BufRead, Read, Write};
    use std::process::{Command, Stdio};
    let mut child = Command::new(env!("CARGO_BIN_EXE_dynql"))
        .arg("--store")
        .arg(s.url())
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn dynql");
    child
        .stdin
        .take()
        .expect("stdin")
        .write_all(stdin.as_bytes())
        .expect("write stdin");
    let mut stdout = std::io::BufReader::new(child.stdout.take().expect("stdout"));
    for _ in 0..2 {
        let mut line = String::new();
        stdout.read_line(&mut line).expect("read a line");
        assert!(line.starts_with('{'), "{args:?}: {line:?}");
    }
    drop(stdout);
    let mut stderr = String::new();
    child
        .stderr
        .take()
        .expect("stderr")
        .read_to_string(&mut stderr)
        .expect("read stderr");
    (child.wait().expect("wait for dynql"), stderr)
}

#[test]
fn a_reader_that_stops_early_ends_the_command_quietly() {
    let s = TestStore::new();
    s.ok(&["create", "table", "//t", "--attributes", SCHEMA], None);
    // Megabytes of output: far more than a pipe holds, so dynql is still writing when its
    // reader goes away.
    let rows: String = (0..50_000)
        .map(|k| format!("{{k={k};v=\"{}\"}};\n", "x".repeat(40)))
        .collect();
    s.ok(&["insert-rows", "//t"], Some(&rows));
    for (args, stdin) in [
        (&["select-rows", "* FROM [//t]"][..], ""),
        (&["sql", r#"SELECT * FROM "//t""#][..], ""),
        (&["shell"][..], "SELECT * FROM [//t];\n"),
    ] {
        let (status, stderr) = read_two_lines_and_close(&s, args, stdin);
        assert!(!stderr.contains("Broken pipe"), "{args:?}: {stderr}");
        assert!(status.success(), "{args:?}: {status:?} {stderr}");
    }
}

/// `<format=pretty>json` (and `<format=text>json`) are taken by select-rows and sql as by
/// `get`: a row indented over several lines (issue 73, item 10).
#[test]
fn json_takes_the_pretty_format_attribute_for_rows() {
    let s = TestStore::new();
    s.ok(
        &[
            "create",
            "table",
            "//t",
            "--attributes",
            "{dynamic=%true; schema=[{name=k;type=int64;sort_order=ascending};{name=v;type=string}]}",
        ],
        None,
    );
    s.ok(&["insert-rows", "//t"], Some("{k=1;v=a}"));
    let pretty = "{\n  \"k\": 1,\n  \"v\": \"a\"\n}\n";
    let rows = s.ok(
        &[
            "select-rows",
            "* from [//t]",
            "--format",
            "<format=pretty>json",
        ],
        None,
    );
    assert_eq!(rows, pretty);
    let sql = s.ok(
        &[
            "sql",
            "SELECT * FROM \"//t\"",
            "--format",
            "<format=pretty>json",
        ],
        None,
    );
    assert_eq!(sql, pretty);
    let text = s.ok(
        &[
            "select-rows",
            "* from [//t]",
            "--format",
            "<format=text>json",
        ],
        None,
    );
    assert_eq!(text, "{\"k\":1,\"v\":\"a\"}\n");
    let err = s.fails(
        &[
            "select-rows",
            "* from [//t]",
            "--format",
            "<format=binary>json",
        ],
        None,
    );
    assert!(err.contains("takes text or pretty"), "{err}");
}
