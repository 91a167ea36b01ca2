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
