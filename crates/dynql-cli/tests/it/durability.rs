//! Durable commits through the command line (issue 75): a command reports success only after
//! its commit is on disk (seen with `strace`, where it can trace), and `--durability none`
//! syncs nothing.

use std::process::{Command, Stdio};

use super::TestStore;

const SCHEMA: &str =
    "{dynamic=%true; schema=[{name=k;type=int64;sort_order=ascending};{name=v;type=string}]}";

/// The `fsync`/`fdatasync` calls of `dynql --store URL ARGS` (with `extra` global options),
/// traced by strace; `None` where strace is missing or may not trace.
fn syncs_of(store: &TestStore, extra: &[&str], args: &[&str], stdin: &str) -> Option<Vec<String>> {
    use std::io::Write;
    let log = store.dir.path().join("strace.log");
    let traced = Command::new("strace")
        .args(["-f", "-qq", "-e", "trace=fsync,fdatasync", "-o"])
        .arg(&log)
        .arg(env!("CARGO_BIN_EXE_dynql"))
        .arg("--store")
        .arg(store.url())
        .args(extra)
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn();
    let Ok(mut child) = traced else {
        eprintln!("strace is not installed: the traced durability check is skipped");
        return None;
    };
    child
        .stdin
        .take()
        .unwrap()
        .write_all(stdin.as_bytes())
        .unwrap();
    let out = child.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    if !out.status.success() && stderr.contains("ptrace") {
        eprintln!("strace may not trace here ({stderr}): the traced durability check is skipped");
        return None;
    }
    assert!(out.status.success(), "traced dynql failed: {stderr}");
    let text = std::fs::read_to_string(&log).unwrap();
    std::fs::remove_file(&log).unwrap();
    Some(
        text.lines()
            .filter(|l| l.contains("fsync(") || l.contains("fdatasync("))
            .map(str::to_string)
            .collect(),
    )
}

#[test]
fn an_insert_is_synced_before_it_returns_and_not_without_durability() {
    let s = TestStore::new();
    s.ok(&["create", "table", "//t", "--attributes", SCHEMA], None);
    let Some(synced) = syncs_of(&s, &[], &["insert-rows", "//t"], "{k=1;v=a}") else {
        return;
    };
    // The record's bytes, then the log directory: two syncs for a one-row commit.
    assert_eq!(synced.len(), 2, "{synced:?}");
    assert!(synced[0].contains("fdatasync("), "{synced:?}");
    assert!(synced[1].contains("fsync("), "{synced:?}");
    let none = syncs_of(
        &s,
        &["--durability", "none"],
        &["insert-rows", "//t"],
        "{k=2;v=b}",
    )
    .expect("traced once already");
    assert_eq!(none, Vec::<String>::new());
    let rows = s.ok(&["select-rows", "k from [//t]", "--format", "json"], None);
    assert_eq!(rows.lines().count(), 2, "{rows}");
}

#[test]
fn an_unknown_durability_is_refused_with_the_values_named() {
    let s = TestStore::new();
    let err = s.fails(&["--durability", "sometimes", "list", "/"], None);
    assert!(err.contains("fsync") && err.contains("none"), "{err}");
    let out = s.run_with_env(&["list", "/"], None, &[("DYNQL_DURABILITY", "often")]);
    assert_eq!(out.status.code(), Some(1), "{out:?}");
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("DYNQL_DURABILITY") && err.contains("fsync"),
        "{err}"
    );
    // Either value is taken from the environment.
    let out = s.run_with_env(&["list", "/"], None, &[("DYNQL_DURABILITY", "none")]);
    assert!(out.status.success(), "{out:?}");
}
