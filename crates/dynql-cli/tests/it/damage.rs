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
