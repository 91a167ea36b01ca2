//! `dynql check` through the command line: an intact store, then one with a damaged chunk.

use super::TestStore;

const SCHEMA: &str =
    "{dynamic=%true; schema=[{name=k;type=int64;sort_order=ascending};{name=v;type=string}]}";

#[test]
fn check_reports_damage_and_the_tables_it_affects() {
    let s = TestStore::new();
    for t in ["//good", "//bad"] {
        s.ok(&["create", "table", t, "--attributes", SCHEMA], None);
        s.ok(&["insert-rows", t], Some("{k=1;v=a};{k=2;v=b}"));
        s.ok(&["compact", t], None);
    }
    let out = s.ok(&["check"], None);
    assert!(out.contains("no damage found"), "{out}");
    // Damage the chunk of //bad.
    let listing = s.ok(&["get", "//bad/@id"], None);
    let id = listing.trim().trim_matches('"');
    let folder = s.dir.path().join("tables").join(id);
    let chunk = std::fs::read_dir(&folder)
        .unwrap_or_else(|e| panic!("{}: {e}", folder.display()))
        .map(|e| e.unwrap().path())
        .find(|p| p.extension().is_some_and(|x| x == "parquet"))
        .expect("a chunk of //bad");
    std::fs::write(&chunk, b"PAR1 damaged PAR1").unwrap();
    let out = s.run(&["check"], None);
    assert_eq!(out.status.code(), Some(1));
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(stdout.contains("damaged:"), "{stdout}");
    assert!(stdout.contains("//bad"), "{stdout}");
    assert!(!stdout.contains("//good"), "{stdout}");
    // The other table still answers.
    let rows = s.ok(
        &[
            "select-rows",
            "v from [//good] where k = 2",
            "--format",
            "json",
        ],
        None,
    );
    assert_eq!(rows.trim(), r#"{"v":"b"}"#);
}

/// Issue 38: a missing log record used to fail every command on every table. Now it damages
/// the table the next record says it touched; `check --repair` records the loss and
/// `--accept-loss` makes the table readable without it.
#[test]
fn a_lost_record_is_contained_and_repaired_on_request() {
    let s = TestStore::new();
    for t in ["//good", "//bad"] {
        s.ok(&["create", "table", t, "--attributes", SCHEMA], None);
        s.ok(&["insert-rows", t], Some("{k=1;v=a}"));
    }
    s.ok(&["insert-rows", "//bad"], Some("{k=2;v=lost}"));
    let log = s.dir.path().join("_log");
    let newest = |dir: &std::path::Path| {
        std::fs::read_dir(dir)
            .unwrap()
            .map(|e| e.unwrap().path())
            .max()
            .unwrap()
    };
    let lost = newest(&log);
    s.ok(&["insert-rows", "//good"], Some("{k=2;v=b}"));
    std::fs::remove_file(&lost).unwrap();
    let json = |q: &str| s.ok(&["select-rows", q, "--format", "json"], None);
    assert_eq!(json("k from [//good]").trim(), "{\"k\":1}\n{\"k\":2}");
    let err = s.fails(&["select-rows", "k from [//bad]"], None);
    assert!(
        err.contains("is damaged") && err.contains("missing"),
        "{err}"
    );
    let out = s.run(&["check"], None);
    assert_eq!(out.status.code(), Some(1));
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(stdout.contains("is missing"), "{stdout}");
    // Repair records the loss but keeps the table damaged until the loss is accepted.
    let out = s.run(&["check", "--repair"], None);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(stdout.contains("repaired: wrote a placeholder"), "{stdout}");
    assert_eq!(out.status.code(), Some(1), "{stdout}");
    let out = s.ok(&["check", "--repair", "--accept-loss", "//bad"], None);
    assert!(out.contains("accepted the loss"), "{out}");
    assert!(out.contains("no damage found"), "{out}");
    assert_eq!(json("k, v from [//bad]").trim(), "{\"k\":1,\"v\":\"a\"}");
}

/// A deleted key filter file is named once, as what it is, and lookups read around it.
#[test]
fn a_missing_key_filter_is_named_once_and_read_around() {
    let s = TestStore::new();
    let attributes = "{dynamic=%true; chunk_writer={key_filter={enable=%true}}; mount_config={enable_key_filter_for_lookup=%true}; schema=[{name=k;type=int64;sort_order=ascending};{name=v;type=string}]}";
    s.ok(
        &["create", "table", "//t", "--attributes", attributes],
        None,
    );
    s.ok(&["insert-rows", "//t"], Some("{k=1;v=a};{k=2;v=b}"));
    s.ok(&["compact", "//t"], None);
    let mut filters = Vec::new();
    let mut stack = vec![s.dir.path().join("tables")];
    while let Some(dir) = stack.pop() {
        for e in std::fs::read_dir(dir).unwrap() {
            let p = e.unwrap().path();
            if p.is_dir() {
                stack.push(p);
            } else if p.extension().is_some_and(|x| x == "kf") {
                filters.push(p);
            }
        }
    }
    assert!(!filters.is_empty(), "no key filter was written");
    for f in &filters {
        std::fs::remove_file(f).unwrap();
    }
    let found = s.ok(
        &["lookup-rows", "//t", "--format", "json"],
        Some("{\"k\":2}"),
    );
    assert_eq!(found.trim(), "{\"k\":2,\"v\":\"b\"}");
    let out = s.run(&["check"], None);
    let stdout = String::from_utf8_lossy(&out.stdout);
    let lines: Vec<&str> = stdout
        .lines()
        .filter(|l| l.starts_with("damaged:"))
        .collect();
    assert_eq!(lines.len(), filters.len(), "{stdout}");
    assert!(lines[0].contains("key filter file is missing"), "{stdout}");
    assert_eq!(lines[0].matches("os error").count(), 0, "{stdout}");
}
