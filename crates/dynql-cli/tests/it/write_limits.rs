//! What writes take at most (issue 75): an endless or garbage input to `import`,
//! `insert-rows` and `write-table` fails in bounded memory and time, naming the row text
//! limit; a value over 16 MiB or a row weighing over 16 MiB is refused naming YT's limit, and
//! nothing is written.

use std::io::Write;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use crate::TestStore;

const SCHEMA: &str = "{dynamic=%true; schema=[{name=k;type=int64;sort_order=ascending};{name=v;type=string};{name=w;type=string}]}";
const STATIC: &str = "{schema=[{name=k;type=int64};{name=v;type=string}]}";

fn store() -> TestStore {
    let s = TestStore::new();
    s.ok(&["create", "table", "//t", "--attributes", SCHEMA], None);
    s.ok(&["create", "table", "//s", "--attributes", STATIC], None);
    s.ok(&["insert-rows", "//t"], Some("{k=1;v=a}"));
    s
}

/// Runs `dynql ARGS` with at most `most` bytes of zeros on stdin, written as it reads them;
/// returns stderr and how many bytes it took.
fn fed_zeros(s: &TestStore, args: &[&str], most: usize) -> (String, usize) {
    let mut child = Command::new(env!("CARGO_BIN_EXE_dynql"))
        .arg("--store")
        .arg(s.url())
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn dynql");
    let mut input = child.stdin.take().expect("stdin");
    let writer = std::thread::spawn(move || {
        let zeros = vec![0u8; 1 << 20];
        let mut written = 0;
        while written < most {
            if input.write_all(&zeros).is_err() {
                break; // dynql stopped reading: the error is on its way.
            }
            written += zeros.len();
        }
        written
    });
    let out = child.wait_with_output().expect("dynql output");
    let written = writer.join().expect("writer");
    assert_eq!(out.status.code(), Some(1), "{args:?}: {out:?}");
    (String::from_utf8_lossy(&out.stderr).into_owned(), written)
}

fn rows(s: &TestStore) -> String {
    s.ok(&["select-rows", "k from [//t]", "--format", "json"], None)
}

#[test]
fn endless_input_without_row_boundaries_fails_at_the_row_text_limit() {
    let s = store();
    let started = Instant::now();
    // 512 MiB offered; the limit is 64 MiB of one row's text.
    for args in [
        &["insert-rows", "//t", "--format", "json"][..],
        &["insert-rows", "//t", "--format", "yson"],
        &["write-table", "//s", "--format", "json"],
        &["write-table", "//s", "--format", "yson"],
    ] {
        let (err, written) = fed_zeros(&s, args, 512 << 20);
        assert!(
            err.contains("longer than 67108864 bytes (64 MiB)"),
            "{args:?}: {err}"
        );
        assert!(written < 512 << 20, "{args:?} read all {written} bytes");
    }
    for format in ["json", "csv"] {
        let args = ["import", "//t", "--from", "/dev/zero", "--format", format];
        let err = s.fails(&args, None);
        assert!(
            err.contains("longer than 67108864 bytes (64 MiB)"),
            "{format}: {err}"
        );
    }
    // A CSV header, then a record that never ends.
    let csv = s.dir.path().join("endless.csv");
    let mut text = b"k,v\n1,\"".to_vec();
    text.resize(text.len() + (80 << 20), b'x');
    std::fs::write(&csv, text).unwrap();
    let err = s.fails(&["import", "//t", "--from", csv.to_str().unwrap()], None);
    assert!(
        err.contains("the CSV record from line 2 is longer than"),
        "{err}"
    );
    assert_eq!(rows(&s).trim(), r#"{"k":1}"#);
    assert!(
        started.elapsed() < Duration::from_secs(120),
        "took {:?}",
        started.elapsed()
    );
}

#[test]
fn values_and_rows_over_16_mib_are_refused_and_nothing_is_written() {
    let s = store();
    let long = "x".repeat((16 << 20) + 1);
    let half = "y".repeat(9 << 20);
    let too_long = format!("{{\"k\":2,\"v\":\"{long}\"}}\n");
    let too_heavy = format!("{{\"k\":3,\"v\":\"{half}\",\"w\":\"{half}\"}}\n");
    for (input, limit) in [
        (
            &too_long,
            "Value is too long: length 16777217, limit 16777216",
        ),
        (&too_heavy, "Row weight is too large (18874377 > 16777216"),
    ] {
        let err = s.fails(&["insert-rows", "//t", "--format", "json"], Some(input));
        assert!(err.contains(limit), "{}", &err[..err.len().min(300)]);
        let file = s.dir.path().join("rows.jsonl");
        std::fs::write(&file, input).unwrap();
        let err = s.fails(&["import", "//t", "--from", file.to_str().unwrap()], None);
        assert!(err.contains(limit), "{}", &err[..err.len().min(300)]);
        assert!(err.contains("nothing was imported"), "{err}");
    }
    let csv = s.dir.path().join("rows.csv");
    std::fs::write(&csv, format!("k,v\n4,{long}\n")).unwrap();
    let err = s.fails(&["import", "//t", "--from", csv.to_str().unwrap()], None);
    assert!(
        err.contains("Value is too long"),
        "{}",
        &err[..err.len().min(300)]
    );
    let err = s.fails(&["write-table", "//s", "--format", "json"], Some(&too_long));
    assert!(
        err.contains("Value is too long"),
        "{}",
        &err[..err.len().min(300)]
    );
    assert_eq!(rows(&s).trim(), r#"{"k":1}"#);
    let read = s.ok(&["read-table", "//s", "--format", "json"], None);
    assert_eq!(read.trim(), "");
    // Within both (one byte, the key's 8 and the value weigh 16 MiB): taken.
    let at_limit = format!("{{\"k\":5,\"v\":\"{}\"}}\n", "z".repeat((16 << 20) - 9));
    s.ok(&["insert-rows", "//t", "--format", "json"], Some(&at_limit));
    let lengths = s.ok(
        &[
            "select-rows",
            "length(v) as n from [//t] where k = 5",
            "--format",
            "json",
        ],
        None,
    );
    assert_eq!(lengths.trim(), r#"{"n":16777207}"#);
}
