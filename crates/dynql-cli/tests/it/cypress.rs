//! Cypress through the command line: directories, documents, attributes, master transactions
//! and node locks, as a YT user types them; two processes racing for one lock.

use crate::TestStore;

const SCHEMA: &str =
    r#"{dynamic=%true; schema=[{name=k;type=int64;sort_order=ascending};{name=v;type=string}]}"#;

fn line(out: String) -> String {
    out.trim().to_string()
}

#[test]
fn directories_documents_and_attributes() {
    let s = TestStore::new();
    assert_eq!(s.ok(&["list", "/"], None), "home\nsys\ntmp\n");
    let err = s.fails(&["create", "map_node", "//home/me/project"], None);
    assert!(err.contains("node //home/me does not exist"), "{err}");
    s.ok(&["create", "map_node", "//home/me/project", "-r"], None);
    s.ok(&["create", "map_node", "//home/me/project", "-i"], None);
    let err = s.fails(&["create", "document", "//home/me/project", "-i"], None);
    assert!(err.contains("has type map_node, not document"), "{err}");
    s.ok(
        &[
            "create",
            "table",
            "//home/me/project/events",
            "--attributes",
            SCHEMA,
        ],
        None,
    );
    s.ok(
        &[
            "create",
            "document",
            "//home/me/project/config",
            "--attributes",
            "{value={retries=3; hosts=[a; b]}; owner=alice}",
        ],
        None,
    );
    assert_eq!(
        s.ok(&["get", "//home/me/project/config/hosts/1"], None),
        "\"b\"\n"
    );
    s.ok(&["set", "//home/me/project/config/retries", "5"], None);
    assert_eq!(
        s.ok(&["get", "//home/me/project", "--format", "json"], None),
        "{\"config\":{\"retries\":5,\"hosts\":[\"a\",\"b\"]},\"events\":null}\n"
    );
    // Attributes on every node: custom ones on tables, directories and documents.
    s.ok(&["set", "//home/me/project/events/@team", "storage"], None);
    s.ok(&["set", "//home/me/project/@quota", "{disk=10}"], None);
    assert_eq!(
        s.ok(&["get", "//home/me/project/events/@team"], None),
        "\"storage\"\n"
    );
    assert_eq!(
        s.ok(&["get", "//home/me/project/@quota/disk"], None),
        "10\n"
    );
    assert_eq!(
        s.ok(&["get", "//home/me/project/@type"], None),
        "\"map_node\"\n"
    );
    assert_eq!(
        s.ok(&["get", "//home/me/project/@child_count"], None),
        "2\n"
    );
    assert_eq!(
        s.ok(&["get", "//home/me/project/config/@owner"], None),
        "\"alice\"\n"
    );
    let err = s.fails(&["set", "//home/me/project/@type", "x"], None);
    assert!(err.contains("Builtin attribute \"type\""), "{err}");
    s.ok(&["remove", "//home/me/project/@quota"], None);
    let err = s.fails(&["get", "//home/me/project/@quota"], None);
    assert!(err.contains("not found"), "{err}");
    // copy and move take subtrees; a table keeps its rows.
    s.ok(
        &["insert-rows", "//home/me/project/events"],
        Some("{k=1;v=a}"),
    );
    s.ok(
        &["copy", "-r", "//home/me/project", "//home/you/project"],
        None,
    );
    s.ok(&["move", "//home/me/project", "//tmp/project"], None);
    assert_eq!(s.ok(&["exists", "//home/me/project"], None), "false\n");
    let rows = s.ok(
        &[
            "select-rows",
            "v from [//tmp/project/events]",
            "--format",
            "json",
        ],
        None,
    );
    assert_eq!(rows, "{\"v\":\"a\"}\n");
    assert_eq!(
        s.ok(&["get", "//home/you/project/events/@team"], None),
        "\"storage\"\n"
    );
    // remove: a directory that is not empty needs -r.
    let err = s.fails(&["remove", "//tmp/project"], None);
    assert!(err.contains("non-empty composite node"), "{err}");
    s.ok(&["remove", "-r", "//tmp/project"], None);
    s.ok(&["remove", "-f", "//tmp/project"], None);
    let err = s.fails(&["remove", "//tmp/project"], None);
    assert!(err.contains("node does not exist"), "{err}");
    let err = s.fails(&["create", "map_node", "//a/../b"], None);
    assert!(err.contains("Invalid path"), "{err}");
}

#[test]
fn master_transactions_branch_and_merge() {
    let s = TestStore::new();
    let top = line(s.ok(
        &["start-tx", "--timeout", "600000", "--title", "deploy"],
        None,
    ));
    let nested = line(s.ok(&["start-tx", "--tx", &top, "--timeout", "600000"], None));
    s.ok(&["create", "map_node", "//tmp/app", "--tx", &top], None);
    s.ok(&["set", "//tmp/app/version", "2", "--tx", &nested], None);
    assert_eq!(s.ok(&["exists", "//tmp/app"], None), "false\n");
    assert_eq!(s.ok(&["get", "//tmp/app", "--tx", &top], None), "{}\n");
    assert_eq!(
        s.ok(&["get", "//tmp/app", "--tx", &nested], None),
        "{\"version\"=2;}\n"
    );
    assert_eq!(
        s.ok(&["get", &format!("#{top}/@title")], None),
        "\"deploy\"\n"
    );
    assert_eq!(
        s.ok(&["get", &format!("#{nested}/@parent_id")], None),
        format!("\"{top}\"\n")
    );
    assert_eq!(
        s.ok(&["get", &format!("#{top}/@nested_transaction_ids")], None),
        format!("[\"{nested}\";]\n")
    );
    assert_eq!(
        s.ok(&["list", "//sys/topmost_transactions"], None),
        format!("{top}\n")
    );
    let err = s.fails(&["commit-tx", &top], None);
    assert!(err.contains("active nested transaction"), "{err}");
    s.ok(&["commit-tx", &nested], None);
    s.ok(&["commit-tx", &top], None);
    assert_eq!(s.ok(&["get", "//tmp/app/version"], None), "2\n");
    assert_eq!(s.ok(&["list", "//sys/transactions"], None), "");
    // Aborted: nothing happened.
    let tx = line(s.ok(&["start-tx", "--timeout", "600000"], None));
    s.ok(&["remove", "-r", "//tmp/app", "--tx", &tx], None);
    assert_eq!(s.ok(&["exists", "//tmp/app", "--tx", &tx], None), "false\n");
    s.ok(&["abort-tx", &tx], None);
    assert_eq!(s.ok(&["get", "//tmp/app/version"], None), "2\n");
    let err = s.fails(&["ping-tx", &tx], None);
    assert!(err.contains("No such transaction"), "{err}");
}

#[test]
fn locks_conflict_wait_and_keep_snapshots() {
    let s = TestStore::new();
    s.ok(
        &[
            "create",
            "document",
            "//tmp/config",
            "--attributes",
            "{value={limit=1}}",
        ],
        None,
    );
    let a = line(s.ok(&["start-tx", "--timeout", "600000"], None));
    let b = line(s.ok(&["start-tx", "--timeout", "600000"], None));
    let lock = line(s.ok(&["lock", "//tmp/config", "--tx", &a], None));
    assert_eq!(
        s.ok(&["get", &format!("#{lock}/@state")], None),
        "\"acquired\"\n"
    );
    assert_eq!(
        s.ok(&["get", &format!("#{lock}/@mode")], None),
        "\"exclusive\"\n"
    );
    let err = s.fails(
        &["lock", "//tmp/config", "--tx", &b, "--mode", "shared"],
        None,
    );
    assert!(
        err.contains("Cannot take \"shared\" lock for node //tmp/config"),
        "{err}"
    );
    let err = s.fails(&["set", "//tmp/config/limit", "5"], None);
    assert!(err.contains("lock is taken by transaction"), "{err}");
    let waiting = line(s.ok(&["lock", "//tmp/config", "--tx", &b, "--waitable"], None));
    assert_eq!(
        s.ok(&["get", &format!("#{waiting}/@state")], None),
        "\"pending\"\n"
    );
    s.ok(&["unlock", "//tmp/config", "--tx", &a], None);
    assert_eq!(
        s.ok(&["get", &format!("#{waiting}/@state")], None),
        "\"acquired\"\n"
    );
    s.ok(&["abort-tx", &b], None);
    // A snapshot lock reads the locked version by node id.
    let c = line(s.ok(&["start-tx", "--timeout", "600000"], None));
    let snapshot = line(s.ok(
        &["lock", "//tmp/config", "--tx", &c, "--mode", "snapshot"],
        None,
    ));
    let node = line(s.ok(&["get", &format!("#{snapshot}/@node_id")], None));
    let node = node.trim_matches('"').to_string();
    s.ok(&["set", "//tmp/config/limit", "5"], None);
    assert_eq!(
        s.ok(&["get", &format!("#{node}/limit"), "--tx", &c], None),
        "1\n"
    );
    assert_eq!(s.ok(&["get", &format!("#{node}/limit")], None), "5\n");
    // Keys: shared locks on different children do not conflict.
    let d = line(s.ok(&["start-tx", "--timeout", "600000"], None));
    let e = line(s.ok(&["start-tx", "--timeout", "600000"], None));
    s.ok(
        &[
            "lock",
            "//tmp",
            "--tx",
            &d,
            "--mode",
            "shared",
            "--child-key",
            "x",
        ],
        None,
    );
    s.ok(
        &[
            "lock",
            "//tmp",
            "--tx",
            &e,
            "--mode",
            "shared",
            "--child-key",
            "y",
        ],
        None,
    );
    let err = s.fails(
        &[
            "lock",
            "//tmp",
            "--tx",
            &e,
            "--mode",
            "shared",
            "--child-key",
            "x",
        ],
        None,
    );
    assert!(err.contains("child key \"x\""), "{err}");
    let err = s.fails(&["lock", "//tmp", "--tx", &e, "--child-key", "x"], None);
    assert!(err.contains("Only shared locks"), "{err}");
}

#[test]
fn master_and_tablet_transactions_are_told_apart() {
    let s = TestStore::new();
    s.ok(
        &["create", "table", "//tmp/t", "--attributes", SCHEMA],
        None,
    );
    let master = line(s.ok(&["start-tx", "--timeout", "600000"], None));
    let err = s.fails(&["insert-rows", "//tmp/t", "--tx", &master], Some("{k=1}"));
    assert!(
        err.contains("is not a valid tablet transaction id"),
        "{err}"
    );
    let tablet = line(s.ok(&["start-tx", "--type", "tablet"], None));
    let err = s.fails(&["set", "//tmp/x", "1", "--tx", &tablet], None);
    assert!(
        err.contains("is not a valid master transaction id"),
        "{err}"
    );
    // A table created in a master transaction appears at its commit.
    s.ok(
        &[
            "create",
            "table",
            "//tmp/u",
            "--attributes",
            SCHEMA,
            "--tx",
            &master,
        ],
        None,
    );
    assert_eq!(s.ok(&["exists", "//tmp/u"], None), "false\n");
    s.ok(&["commit-tx", &master], None);
    s.ok(&["insert-rows", "//tmp/u"], Some("{k=1;v=x}"));
    assert_eq!(
        s.ok(
            &["select-rows", "v from [//tmp/u]", "--format", "json"],
            None
        ),
        "{\"v\":\"x\"}\n"
    );
    // Timeouts above an hour are cut to an hour.
    let long = line(s.ok(&["start-tx", "--timeout", "7200000"], None));
    assert_eq!(
        s.ok(&["get", &format!("#{long}/@timeout")], None),
        "3600000\n"
    );
}

#[test]
fn two_processes_racing_for_an_exclusive_lock_one_wins() {
    let s = TestStore::new();
    s.ok(&["create", "map_node", "//tmp/resource"], None);
    for _ in 0..3 {
        let a = line(s.ok(&["start-tx", "--timeout", "600000"], None));
        let b = line(s.ok(&["start-tx", "--timeout", "600000"], None));
        let outcomes: Vec<bool> = std::thread::scope(|scope| {
            let racers: Vec<_> = [&a, &b]
                .into_iter()
                .map(|tx| {
                    let s = &s;
                    scope.spawn(move || {
                        s.run(&["lock", "//tmp/resource", "--tx", tx], None)
                            .status
                            .success()
                    })
                })
                .collect();
            racers.into_iter().map(|r| r.join().unwrap()).collect()
        });
        assert_eq!(
            outcomes.iter().filter(|won| **won).count(),
            1,
            "{outcomes:?}"
        );
        s.ok(&["abort-tx", &a], None);
        s.ok(&["abort-tx", &b], None);
    }
    // Waitable locks from several processes are granted in the order they queued.
    let holder = line(s.ok(&["start-tx", "--timeout", "600000"], None));
    s.ok(&["lock", "//tmp/resource", "--tx", &holder], None);
    let mut queue = Vec::new();
    for _ in 0..3 {
        let tx = line(s.ok(&["start-tx", "--timeout", "600000"], None));
        let lock = line(s.ok(&["lock", "//tmp/resource", "--tx", &tx, "--waitable"], None));
        queue.push((tx, lock));
    }
    s.ok(&["commit-tx", &holder], None);
    for (i, (tx, _)) in queue.iter().enumerate() {
        // The ones before were aborted (their locks are gone).
        let states: Vec<String> = queue[i..]
            .iter()
            .map(|(_, l)| line(s.ok(&["get", &format!("#{l}/@state")], None)))
            .collect();
        let mut expected = vec!["\"pending\""; queue.len() - i];
        expected[0] = "\"acquired\"";
        assert_eq!(states, expected, "after {i} releases");
        s.ok(&["abort-tx", tx], None);
    }
}
