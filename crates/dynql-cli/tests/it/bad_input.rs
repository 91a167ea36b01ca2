//! Input a careful database refuses (issue 38): reads at timestamps not yet reached, values
//! with YSON attributes, hostile names and paths. Each is a clear error, bounded in size and
//! time, that leaves the store as it was.

use std::time::{Duration, Instant};

use super::TestStore;

const SCHEMA: &str =
    "{dynamic=%true; schema=[{name=k;type=int64;sort_order=ascending};{name=v;type=int64}]}";

fn store_with_table() -> TestStore {
    let s = TestStore::new();
    s.ok(&["create", "table", "//t", "--attributes", SCHEMA], None);
    s.ok(&["insert-rows", "//t"], Some("{k=1;v=1}"));
    s
}

#[test]
fn a_read_at_a_timestamp_answers_the_same_after_later_commits() {
    let s = store_with_table();
    let at = s.ok(&["generate-timestamp"], None).trim().to_string();
    let query = [
        "select-rows",
        "k, v from [//t]",
        "--timestamp",
        &at,
        "--format",
        "json",
    ];
    let before = s.ok(&query, None);
    assert_eq!(before.trim(), r#"{"k":1,"v":1}"#);
    s.ok(&["insert-rows", "//t"], Some("{k=2;v=2}"));
    assert_eq!(s.ok(&query, None), before);
    let lookup = ["lookup-rows", "//t", "--timestamp", &at, "--format", "json"];
    assert_eq!(s.ok(&lookup, Some("{\"k\":2}")).trim(), "");
    // An hour ahead of the clock: refused, saying why.
    let far: u64 = at.parse::<u64>().unwrap() + (3600u64 << 30);
    let far = far.to_string();
    let err = s.fails(&["select-rows", "k from [//t]", "--timestamp", &far], None);
    assert!(err.contains("ahead of the clock"), "{err}");
}

#[test]
fn timestamps_above_the_largest_are_refused_by_every_read() {
    let s = store_with_table();
    // 2^62 - 1, 2^62, u64::MAX and a value between the two sentinels: none is a timestamp,
    // and none reads the latest state (an answer a later insert would change).
    for bad in [
        "4611686018427387903",
        "4611686018427387904",
        "18446744073709551615",
        "0x3fffffffffffff02",
    ] {
        for args in [
            &["select-rows", "k from [//t]", "--timestamp", bad][..],
            &["lookup-rows", "//t", "--timestamp", bad],
            &["sql", "select k from \"//t\"", "--timestamp", bad],
            &["export", "//t", "--to", "out", "--timestamp", bad],
        ] {
            let out = s.run(args, Some("{k=1}"));
            let err = String::from_utf8_lossy(&out.stderr);
            assert!(!out.status.success(), "{args:?} succeeded");
            assert!(err.contains("Invalid read timestamp"), "{args:?}: {err}");
        }
    }
    // The sentinels, typed by name or as their numbers, still read the latest state.
    for latest in [
        "sync_last_committed",
        "0x3fffffffffffff01",
        "4611686018427387652",
    ] {
        let rows = s.ok(
            &[
                "select-rows",
                "k from [//t]",
                "--timestamp",
                latest,
                "--format",
                "json",
            ],
            None,
        );
        assert_eq!(rows.trim(), r#"{"k":1}"#, "{latest}");
    }
}

#[test]
fn values_with_top_level_attributes_are_refused() {
    let s = store_with_table();
    let err = s.fails(&["insert-rows", "//t"], Some("{k=5;v=<a=b>3}"));
    assert!(
        err.contains("Table values cannot have top-level attributes"),
        "{err}"
    );
    let rows = s.ok(&["select-rows", "k from [//t]", "--format", "json"], None);
    assert_eq!(rows.trim(), r#"{"k":1}"#, "the refused row was written");
}

#[test]
fn a_huge_name_is_not_echoed_whole() {
    let s = store_with_table();
    let name = "c".repeat(1 << 20);
    let err = s.fails(&["insert-rows", "//t"], Some(&format!("{{k=1;{name}=1}}")));
    assert!(
        err.contains("No such column"),
        "{}",
        &err[..err.len().min(300)]
    );
    assert!(err.len() < 1024, "the error is {} bytes", err.len());
}

#[test]
fn deep_paths_are_refused_at_once() {
    let s = TestStore::new();
    let path = format!("//m{}", "/m".repeat(19_999));
    let started = Instant::now();
    let err = s.fails(&["create", "map_node", &path, "-r"], None);
    assert!(err.contains("4096 bytes"), "{}", &err[..err.len().min(300)]);
    assert!(err.len() < 1024, "the error is {} bytes", err.len());
    let deep = format!("//m{}", "/m".repeat(128));
    let err = s.fails(&["create", "map_node", &deep, "-r"], None);
    assert!(err.contains("129 levels deep"), "{err}");
    assert_eq!(s.ok(&["exists", "//m"], None).trim(), "false");
    assert!(
        started.elapsed() < Duration::from_secs(30),
        "took {:?}",
        started.elapsed()
    );
}

#[test]
fn a_store_that_is_a_file_is_refused_naming_it() {
    let dir = tempfile::tempdir().expect("temp dir");
    let file = dir.path().join("notes.txt");
    std::fs::write(&file, "not a store\n").unwrap();
    let path = file.display().to_string();
    let inside = format!("{path}/store");
    let url = format!("file://{path}");
    let commands: [&[&str]; 4] = [
        &["list", "/"],
        &["select-rows", "* FROM [//t]"],
        &["create", "table", "//t", "--attributes", SCHEMA],
        &["shell"],
    ];
    for store in [&path, &url, &inside] {
        for args in commands {
            let out = std::process::Command::new(env!("CARGO_BIN_EXE_dynql"))
                .arg("--store")
                .arg(store)
                .args(args)
                .stdin(std::process::Stdio::null())
                .output()
                .expect("run dynql");
            let err = String::from_utf8_lossy(&out.stderr);
            assert_eq!(out.status.code(), Some(1), "{store} {args:?}: {err}");
            assert!(
                err.contains(&format!("{path} is a file, not a store directory")),
                "{store} {args:?}: {err}"
            );
            assert!(out.stdout.is_empty(), "{store} {args:?}");
        }
    }
    assert_eq!(std::fs::read_to_string(&file).unwrap(), "not a store\n");
}

#[test]
fn set_refuses_values_nested_deeper_than_the_yson_limit() {
    let s = store_with_table();
    let nested = |depth: usize| format!("{}{}", "[".repeat(depth), "]".repeat(depth));
    // 257 levels: refused, naming the limit, whether an argument or stdin, and nothing set.
    let err = s.fails(&["set", "//t/@x", &nested(257)], None);
    assert!(err.contains("deeper than 256 levels"), "{err}");
    let err = s.fails(&["set", "//t/@x"], Some(&nested(100_000)));
    assert!(
        err.contains("deeper than 256 levels"),
        "{}",
        &err[..err.len().min(300)]
    );
    assert!(err.len() < 1024, "the error is {} bytes", err.len());
    let err = s.fails(&["get", "//t/@x"], None);
    assert!(err.contains("Attribute \"x\" is not found"), "{err}");
    // JSON past its parser's 128 levels that is no YSON either is refused too, not a string.
    let json = format!("{}1{}", r#"{"a":"#.repeat(200), "}".repeat(200));
    let err = s.fails(&["set", "//t/@x", &json], None);
    assert!(err.contains("128 levels"), "{err}");
    // 256 levels is the most YSON allows: stored as the list it is.
    s.ok(&["set", "//t/@x", &nested(256)], None);
    let got = s.ok(&["get", "//t/@x", "--format", "yson"], None);
    assert_eq!(got.matches('[').count(), 256, "{got}");
}

#[test]
fn nan_in_a_double_key_is_refused_by_small_and_large_writes() {
    let s = TestStore::new();
    let schema =
        "{dynamic=%true; schema=[{name=d;type=double;sort_order=ascending};{name=v;type=double}]}";
    s.ok(&["create", "table", "//t", "--attributes", schema], None);
    // NaN is a value in a non-key column, not in a key.
    s.ok(
        &["insert-rows", "//t"],
        Some("{d=1.5;v=%nan};{d=-1.0;v=2.0}"),
    );
    let err = s.fails(
        &["insert-rows", "//t"],
        Some("{d=2.0;v=1.0};{d=%nan;v=1.0}"),
    );
    assert!(err.contains("key column \"d\" cannot be NaN"), "{err}");
    // A large insert goes through columns: the same check, the row named.
    let mut rows: String = (0..20_000)
        .map(|i| format!("{{d={i}.5;v=1.0}};\n"))
        .collect();
    rows.push_str("{d=%nan;v=1.0};\n");
    let err = s.fails(&["insert-rows", "//t"], Some(&rows));
    assert!(err.contains("key column \"d\" cannot be NaN"), "{err}");
    assert!(err.contains("row #20000"), "{err}");
    let err = s.fails(&["delete-rows", "//t"], Some("{d=%nan}"));
    assert!(err.contains("cannot be NaN"), "{err}");
    // Nothing was written, and a range over the key reads without meeting a NaN.
    let got = s.ok(
        &[
            "select-rows",
            "d from [//t] where d > 0.0",
            "--format",
            "json",
        ],
        None,
    );
    assert_eq!(got.trim(), r#"{"d":1.5}"#);
}

/// A command that fails on a store that was never written leaves no directory behind and
/// says there was no store; a shell that writes nothing creates none (issue 73, item 6).
#[test]
fn a_failed_command_or_an_idle_shell_leaves_no_store_directory() {
    let root = tempfile::tempdir().unwrap();
    let store = root.path().join("x").join("a").join("b");
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_dynql"))
        .arg("--store")
        .arg(&store)
        .args(["insert-rows", "//t"])
        .stdin(std::process::Stdio::null())
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("no such table") && err.contains("no dynql store existed at"),
        "{err}"
    );
    assert!(err.contains(&*store.to_string_lossy()), "{err}");
    assert!(
        !root.path().join("x").exists(),
        "the failed command left directories"
    );

    let shell = root.path().join("new");
    let mut child = std::process::Command::new(env!("CARGO_BIN_EXE_dynql"))
        .arg("--store")
        .arg(format!("file://{}", shell.display()))
        .arg("shell")
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    use std::io::Write;
    child.stdin.take().unwrap().write_all(b"list /;\n").unwrap();
    assert!(child.wait_with_output().unwrap().status.success());
    assert!(!shell.exists(), "the shell left an empty store directory");
}
