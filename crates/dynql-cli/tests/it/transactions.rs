//! Transactions across separate `dynql` processes.

use crate::TestStore;

const SCHEMA: &str =
    r#"{dynamic=%true; schema=[{name=k;type=int64;sort_order=ascending};{name=v;type=int64}]}"#;

fn store() -> TestStore {
    let s = TestStore::new();
    s.ok(&["create", "table", "//t", "--attributes", SCHEMA], None);
    s.ok(&["insert-rows", "//t"], Some("{k=1;v=10};{k=2;v=20}"));
    s
}

fn value(s: &TestStore, k: i64, tx: Option<&str>) -> String {
    let mut args = vec![
        "lookup-rows",
        "//t",
        "--format",
        "json",
        "--column-names",
        "v",
    ];
    if let Some(tx) = tx {
        args.extend(["--tx", tx]);
    }
    s.ok(&args, Some(&format!("{{\"k\": {k}}}\n")))
        .trim()
        .to_string()
}

#[test]
fn staged_writes_appear_at_commit_and_reads_see_the_start() {
    let s = store();
    let tx = s
        .ok(
            &["start-tx", "--type", "tablet", "--timeout", "60000"],
            None,
        )
        .trim()
        .to_string();
    s.ok(&["insert-rows", "//t", "--tx", &tx], Some("{k=1;v=11}"));
    s.ok(&["delete-rows", "//t", "--tx", &tx], Some("{k=2}"));
    s.ok(&["insert-rows", "//t"], Some("{k=3;v=30}"));
    assert_eq!(value(&s, 1, None), "{\"v\":10}");
    // Inside: the start snapshot, without the transaction's own writes or later commits.
    assert_eq!(value(&s, 1, Some(&tx)), "{\"v\":10}");
    let inside = s.ok(
        &[
            "select-rows",
            "k from [//t]",
            "--format",
            "json",
            "--tx",
            &tx,
        ],
        None,
    );
    assert_eq!(inside, "{\"k\":1}\n{\"k\":2}\n");
    s.ok(&["ping-tx", &tx], None);
    let ts = s.ok(&["commit-tx", &tx], None);
    assert!(ts.trim().parse::<u64>().is_ok(), "{ts}");
    let after = s.ok(
        &["select-rows", "k, v from [//t]", "--format", "json"],
        None,
    );
    assert_eq!(after, "{\"k\":1,\"v\":11}\n{\"k\":3,\"v\":30}\n");
    let err = s.fails(&["commit-tx", &tx], None);
    assert!(err.contains("No such transaction"), "{err}");
}

#[test]
fn conflicting_commit_fails_and_changes_nothing() {
    let s = store();
    let a = s
        .ok(&["start-tx", "--type", "tablet"], None)
        .trim()
        .to_string();
    let b = s
        .ok(&["start-tx", "--type", "tablet"], None)
        .trim()
        .to_string();
    s.ok(&["insert-rows", "//t", "--tx", &a], Some("{k=1;v=100}"));
    s.ok(
        &["insert-rows", "//t", "--tx", &b],
        Some("{k=1;v=200};{k=2;v=200}"),
    );
    s.ok(&["commit-tx", &a], None);
    let err = s.fails(&["commit-tx", &b], None);
    assert!(err.contains("Row lock conflict"), "{err}");
    assert_eq!(value(&s, 1, None), "{\"v\":100}");
    assert_eq!(value(&s, 2, None), "{\"v\":20}");
}

#[test]
fn lock_rows_and_abort() {
    let s = store();
    let a = s
        .ok(&["start-tx", "--type", "tablet"], None)
        .trim()
        .to_string();
    s.ok(
        &[
            "lock-rows",
            "//t",
            "--tx",
            &a,
            "--lock-type",
            "shared_strong",
        ],
        Some("{k=2}"),
    );
    s.ok(&["insert-rows", "//t"], Some("{k=2;v=21}"));
    assert!(s
        .fails(&["commit-tx", &a], None)
        .contains("Row lock conflict"));
    let b = s
        .ok(&["start-tx", "--type", "tablet"], None)
        .trim()
        .to_string();
    s.ok(&["insert-rows", "//t", "--tx", &b], Some("{k=2;v=99}"));
    s.ok(&["abort-tx", &b], None);
    assert!(s
        .fails(&["commit-tx", &b], None)
        .contains("No such transaction"));
    assert_eq!(value(&s, 2, None), "{\"v\":21}");
    let err = s.fails(
        &["lock-rows", "//t", "--tx", &b, "--lock-type", "bogus"],
        Some("{k=2}"),
    );
    assert!(err.contains("--lock-type"), "{err}");
    let c = s
        .ok(&["start-tx", "--type", "tablet", "--timeout", "1"], None)
        .trim()
        .to_string();
    std::thread::sleep(std::time::Duration::from_millis(20));
    assert!(s
        .fails(&["insert-rows", "//t", "--tx", &c], Some("{k=5;v=5}"))
        .contains("No such transaction"));
}

/// Four processes move money between five accounts in transactions; conflicts retry; the
/// total never changes.
#[test]
fn bank_transfers_across_processes_keep_the_total() {
    let s = TestStore::new();
    s.ok(
        &[
            "create",
            "table",
            "//bank",
            "--attributes",
            SCHEMA.replace("//t", "//bank").as_str(),
        ],
        None,
    );
    s.ok(
        &["insert-rows", "//bank"],
        Some("{k=0;v=100};{k=1;v=100};{k=2;v=100};{k=3;v=100};{k=4;v=100}"),
    );
    std::thread::scope(|scope| {
        for w in 0..4i64 {
            let s = &s;
            scope.spawn(move || {
                for i in 0..4i64 {
                    let from = (w + i) % 5;
                    let to = (w + 2 * i + 1) % 5;
                    if from == to {
                        continue;
                    }
                    for _attempt in 0..20 {
                        let tx = s
                            .ok(
                                &["start-tx", "--type", "tablet", "--timeout", "60000"],
                                None,
                            )
                            .trim()
                            .to_string();
                        let out = s.ok(
                            &["lookup-rows", "//bank", "--format", "json", "--tx", &tx],
                            Some(&format!("{{\"k\": {from}}}\n{{\"k\": {to}}}\n")),
                        );
                        let balances: Vec<i64> = out
                            .lines()
                            .map(|l| {
                                serde_json::from_str::<serde_json::Value>(l).unwrap()["v"]
                                    .as_i64()
                                    .unwrap()
                            })
                            .collect();
                        let rows = format!(
                            "{{k={from};v={}}};{{k={to};v={}}}",
                            balances[0] - 3,
                            balances[1] + 3
                        );
                        s.ok(&["insert-rows", "//bank", "--tx", &tx], Some(&rows));
                        let out = s.run(&["commit-tx", &tx], None);
                        if out.status.success() {
                            break;
                        }
                        let err = String::from_utf8_lossy(&out.stderr);
                        assert!(err.contains("Row lock conflict"), "{err}");
                    }
                }
            });
        }
    });
    let out = s.ok(
        &[
            "select-rows",
            "sum(v) as total from [//bank] group by 1",
            "--format",
            "json",
        ],
        None,
    );
    assert_eq!(out, "{\"total\":500}\n");
}
