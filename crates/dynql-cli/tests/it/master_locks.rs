//! Seed 004's lock rules as a YT user meets them (issue 39, items 1-5): a snapshot lock
//! fixes the node whichever way it is read, a snapshot lock never waits, a changed branch
//! cannot be unlocked, `exists` of attributes, `list --format`, and serializable reads of
//! static tables in a transaction.

use crate::TestStore;

fn line(out: String) -> String {
    out.trim().to_string()
}

fn start_tx(s: &TestStore, parent: Option<&str>) -> String {
    let mut args = vec!["start-tx", "--timeout", "600000"];
    if let Some(p) = parent {
        args.extend(["--tx", p]);
    }
    line(s.ok(&args, None))
}

fn document(s: &TestStore, path: &str, value: &str) {
    s.ok(
        &[
            "create",
            "document",
            path,
            "--attributes",
            &format!("{{value={value}}}"),
        ],
        None,
    );
}

#[test]
fn a_snapshot_lock_fixes_the_node_read_by_path_or_id() {
    let s = TestStore::new();
    document(&s, "//tmp/config", "{limit=1}");
    s.ok(&["set", "//tmp/config/@owner", "\"a\""], None);
    let tx = start_tx(&s, None);
    let nested = start_tx(&s, Some(&tx));
    let lock = line(s.ok(
        &["lock", "//tmp/config", "--tx", &tx, "--mode", "snapshot"],
        None,
    ));
    // `lock` prints the lock id alone, as yt does; the node is `#LOCK/@node_id`.
    assert!(!lock.is_empty() && !lock.contains(' '), "{lock}");
    let node = line(s.ok(&["get", &format!("#{lock}/@node_id")], None));
    let node = node.trim_matches('"');
    // Others change the node in place: the transaction and those nested in it keep reading
    // the locked version, by path and by id; others read the new one.
    s.ok(&["set", "//tmp/config/limit", "5"], None);
    s.ok(&["set", "//tmp/config/@owner", "\"b\""], None);
    for t in [&tx, &nested] {
        assert_eq!(s.ok(&["get", "//tmp/config/limit", "--tx", t], None), "1\n");
        assert_eq!(
            s.ok(&["get", "//tmp/config/@owner", "--tx", t], None),
            "\"a\"\n"
        );
        assert_eq!(
            s.ok(&["get", &format!("#{node}/limit"), "--tx", t], None),
            "1\n"
        );
    }
    assert_eq!(s.ok(&["get", "//tmp/config/limit"], None), "5\n");
    // A new node at that path is another node: the path shows it.
    s.ok(&["remove", "//tmp/config"], None);
    document(&s, "//tmp/config", "{limit=9}");
    assert_eq!(
        s.ok(&["get", "//tmp/config/limit", "--tx", &tx], None),
        "9\n"
    );
    assert_eq!(
        s.ok(&["get", &format!("#{node}/limit"), "--tx", &tx], None),
        "1\n"
    );
}

#[test]
fn a_waitable_snapshot_lock_is_acquired_at_once() {
    let s = TestStore::new();
    document(&s, "//tmp/config", "{limit=1}");
    let holder = start_tx(&s, None);
    let waiter = start_tx(&s, None);
    let reader = start_tx(&s, None);
    s.ok(&["lock", "//tmp/config", "--tx", &holder], None);
    let pending = line(s.ok(
        &["lock", "//tmp/config", "--tx", &waiter, "--waitable"],
        None,
    ));
    assert_eq!(
        s.ok(&["get", &format!("#{pending}/@state")], None),
        "\"pending\"\n"
    );
    // Behind an exclusive lock and a queue: a snapshot lock still does not wait.
    let snapshot = line(s.ok(
        &[
            "lock",
            "//tmp/config",
            "--tx",
            &reader,
            "--mode",
            "snapshot",
            "--waitable",
        ],
        None,
    ));
    assert_eq!(
        s.ok(&["get", &format!("#{snapshot}/@state")], None),
        "\"acquired\"\n"
    );
}

#[test]
fn unlock_fails_once_the_branch_has_changes_except_for_snapshot_locks() {
    let s = TestStore::new();
    s.ok(&["create", "map_node", "//tmp/dir"], None);
    document(&s, "//tmp/config", "{limit=1}");
    let tx = start_tx(&s, None);
    // A child created under an explicitly locked directory changes the directory's branch.
    s.ok(&["lock", "//tmp/dir", "--tx", &tx], None);
    s.ok(
        &["create", "map_node", "//tmp/dir/child", "--tx", &tx],
        None,
    );
    let err = s.fails(&["unlock", "//tmp/dir", "--tx", &tx], None);
    assert!(err.contains("branched version has changes"), "{err}");
    // So does an attribute.
    s.ok(&["lock", "//tmp/config", "--tx", &tx], None);
    s.ok(&["set", "//tmp/config/@a", "1", "--tx", &tx], None);
    let err = s.fails(&["unlock", "//tmp/config", "--tx", &tx], None);
    assert!(err.contains("branched version has changes"), "{err}");
    // Unchanged: unlocked, and others can lock it again.
    let other = start_tx(&s, None);
    s.ok(&["create", "map_node", "//tmp/free"], None);
    s.ok(&["lock", "//tmp/free", "--tx", &tx], None);
    s.ok(&["unlock", "//tmp/free", "--tx", &tx], None);
    s.ok(&["lock", "//tmp/free", "--tx", &other], None);
    // An explicit snapshot lock can always be unlocked, changes made before it or not.
    let third = start_tx(&s, None);
    s.ok(&["create", "map_node", "//tmp/third"], None);
    s.ok(&["set", "//tmp/third/@b", "1", "--tx", &third], None);
    let err = s.fails(&["unlock", "//tmp/third", "--tx", &third], None);
    assert!(err.contains("branched version has changes"), "{err}");
    let fourth = start_tx(&s, None);
    s.ok(&["create", "map_node", "//tmp/fourth"], None);
    s.ok(&["set", "//tmp/fourth/@c", "1", "--tx", &fourth], None);
    let lock = line(s.ok(
        &[
            "lock",
            "//tmp/fourth",
            "--tx",
            &fourth,
            "--mode",
            "snapshot",
        ],
        None,
    ));
    // The snapshot keeps the transaction's own change (not lost, not counted twice).
    assert_eq!(
        s.ok(&["get", "//tmp/fourth/@c", "--tx", &fourth], None),
        "1\n"
    );
    s.ok(&["unlock", "//tmp/fourth", "--tx", &fourth], None);
    let err = s.fails(&["get", &format!("#{lock}/@state")], None);
    assert!(err.contains("no such object"), "{err}");
}

#[test]
fn exists_answers_for_attributes_and_list_takes_a_format() {
    let s = TestStore::new();
    s.ok(&["create", "map_node", "//tmp/dir"], None);
    s.ok(&["set", "//tmp/dir/@team", "\"storage\""], None);
    s.ok(
        &[
            "create",
            "table",
            "//tmp/dir/t",
            "--attributes",
            "{schema=[{name=k;type=int64}]}",
        ],
        None,
    );
    for (path, expected) in [
        ("//tmp/dir/@team", "true"),
        ("//tmp/dir/@type", "true"),
        ("//tmp/dir/@missing", "false"),
        ("//tmp/dir/@", "true"),
        ("//tmp/nothing/@team", "false"),
        ("//tmp/dir/t/@schema", "true"),
        ("//tmp/dir/t/@missing", "false"),
    ] {
        assert_eq!(line(s.ok(&["exists", path], None)), expected, "{path}");
    }
    // Under a transaction: its own attributes.
    let tx = start_tx(&s, None);
    s.ok(&["set", "//tmp/dir/@mine", "1", "--tx", &tx], None);
    assert_eq!(
        line(s.ok(&["exists", "//tmp/dir/@mine", "--tx", &tx], None)),
        "true"
    );
    assert_eq!(line(s.ok(&["exists", "//tmp/dir/@mine"], None)), "false");
    // list: names per line, or one YSON/JSON list with attributes.
    s.ok(&["create", "map_node", "//tmp/dir/a"], None);
    assert_eq!(s.ok(&["list", "//tmp/dir"], None), "a\nt\n");
    assert_eq!(
        s.ok(&["list", "//tmp/dir", "--format", "json"], None),
        "[\"a\",\"t\"]\n"
    );
    let yson = s.ok(
        &[
            "list",
            "//tmp/dir",
            "--format",
            "yson",
            "--attribute",
            "type",
        ],
        None,
    );
    assert!(
        yson.contains("<\"type\"=\"map_node\";>\"a\"")
            && yson.contains("<\"type\"=\"table\";>\"t\""),
        "{yson}"
    );
    let err = s.fails(&["list", "//tmp/dir", "--format", "xml"], None);
    assert!(
        err.contains("unknown format \"xml\": use one of yson"),
        "{err}"
    );
}

#[test]
fn reads_of_a_static_table_in_a_transaction_are_serializable() {
    let s = TestStore::new();
    s.ok(
        &[
            "create",
            "table",
            "//tmp/s",
            "--attributes",
            "{schema=[{name=k;type=int64}]}",
        ],
        None,
    );
    s.ok(&["write-table", "//tmp/s"], Some("{k=1}"));
    let tx = start_tx(&s, None);
    let first = s.ok(&["read-table", "//tmp/s", "--tx", &tx], None);
    assert_eq!(first, "{\"k\"=1;};\n");
    // Another transaction appends and commits in between.
    let other = start_tx(&s, None);
    s.ok(
        &["write-table", "<append=%true>//tmp/s", "--tx", &other],
        Some("{k=2}"),
    );
    s.ok(&["commit-tx", &other], None);
    assert_eq!(s.ok(&["read-table", "//tmp/s", "--tx", &tx], None), first);
    assert_eq!(
        line(s.ok(&["get", "//tmp/s/@row_count", "--tx", &tx], None)),
        "1"
    );
    // The transaction may still write the table; its rows go over what it read.
    s.ok(
        &["write-table", "<append=%true>//tmp/s", "--tx", &tx],
        Some("{k=3}"),
    );
    assert_eq!(
        s.ok(&["read-table", "//tmp/s", "--tx", &tx], None),
        "{\"k\"=1;};\n{\"k\"=3;};\n"
    );
    s.ok(&["commit-tx", &tx], None);
    // Both appends land.
    assert_eq!(
        s.ok(&["read-table", "//tmp/s"], None),
        "{\"k\"=1;};\n{\"k\"=2;};\n{\"k\"=3;};\n"
    );
}
