//! The storage kernel (`src/kernel/`) stays pure: no object store, no async runtime, no clock,
//! no file system, no `Store`, and no module of the crate outside the kernel but its errors
//! (see `src/kernel/mod.rs` and `docs/design/0011-storage-layers.md`). A module that needs any
//! of these belongs in another layer.
//!
//! Checked on the source text: each kernel file's code up to its unit tests (tests may build
//! what they like), comments left out.

use std::path::{Path, PathBuf};

/// What kernel code must not name, and why.
const FORBIDDEN: &[(&str, &str)] = &[
    ("object_store", "an object store"),
    ("tokio", "the async runtime"),
    ("futures", "async streams"),
    ("async", "async code"),
    ("await", "async code"),
    ("Store", "the store handle"),
    ("SystemTime", "the wall clock"),
    ("Instant", "the clock"),
    ("fs", "the file system"),
    ("thread", "threads"),
    ("env", "the environment"),
    ("rand", "unseeded randomness"),
];

/// Modules of the crate kernel code may use.
const ALLOWED_MODULES: &[&str] = &["kernel", "error"];

/// The violations in `source` (a kernel file's text): `line: what it names (why)`.
fn violations(source: &str) -> Vec<String> {
    let code = match source.find("#[cfg(test)]\nmod tests") {
        Some(end) => &source[..end],
        None => source,
    };
    let mut found = Vec::new();
    for (n, line) in code.lines().enumerate() {
        let line = match line.find("//") {
            Some(comment) => &line[..comment],
            None => line,
        };
        let words: Vec<&str> = line
            .split(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
            .filter(|w| !w.is_empty())
            .collect();
        for (word, why) in FORBIDDEN {
            if words.contains(word) {
                found.push(format!("{}: names `{word}` ({why})", n + 1));
            }
        }
        let mut rest = line;
        while let Some(at) = rest.find("crate::") {
            rest = &rest[at + "crate::".len()..];
            let module: String = rest
                .chars()
                .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
                .collect();
            if !ALLOWED_MODULES.contains(&module.as_str()) {
                found.push(format!(
                    "{}: uses `crate::{module}`, outside the kernel",
                    n + 1
                ));
            }
        }
    }
    found
}

fn kernel_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).expect("the kernel folder is readable") {
        let path = entry.expect("a directory entry").path();
        if path.is_dir() {
            kernel_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

#[test]
fn kernel_modules_name_no_io_no_clock_and_nothing_outside_the_kernel() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("src/kernel");
    let mut files = Vec::new();
    kernel_files(&dir, &mut files);
    files.sort();
    assert!(files.len() >= 10, "the kernel holds its modules: {files:?}");
    let mut report = Vec::new();
    for file in &files {
        let source = std::fs::read_to_string(file).expect("a kernel file is readable");
        for v in violations(&source) {
            report.push(format!("{}:{v}", file.display()));
        }
    }
    assert!(
        report.is_empty(),
        "impure kernel code:\n{}",
        report.join("\n")
    );
}

#[test]
fn the_check_finds_io_clocks_and_outside_modules_but_not_comments_or_tests() {
    let source = "use crate::kernel::mvcc::RowDelta;\n\
                  use crate::error::Result;\n\
                  use object_store::ObjectStore;\n\
                  // a comment may say tokio or crate::store\n\
                  pub async fn f() { let t = std::time::SystemTime::now(); }\n\
                  fn g(s: &crate::store::Store) {} // Store\n\
                  #[cfg(test)]\nmod tests { use tokio; use crate::store::Store; }\n";
    let found = violations(source);
    assert_eq!(
        found,
        vec![
            "3: names `object_store` (an object store)",
            "5: names `async` (async code)",
            "5: names `SystemTime` (the wall clock)",
            "6: names `Store` (the store handle)",
            "6: uses `crate::store`, outside the kernel",
        ],
    );
}

/// What only `src/clock.rs` may call: the wall clock, and the process id ids are made of.
const CLOCK_ONLY: &[&str] = &["SystemTime::now", "process::id"];

/// The store reads the time and makes ids through its injected clock and id generator
/// (`src/clock.rs`), so that a seeded run replays exactly: no other file of the crate's
/// code calls the wall clock or names the process (clippy's `disallowed-methods` says the
/// same in `clippy.toml`; this check runs with the tests).
#[test]
fn only_the_clock_module_reads_the_wall_clock_or_the_process_id() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut files = Vec::new();
    kernel_files(&src, &mut files);
    files.sort();
    assert!(files.len() >= 50, "the crate's sources: {files:?}");
    let mut report = Vec::new();
    for file in files.iter().filter(|f| !f.ends_with("src/clock.rs")) {
        let source = std::fs::read_to_string(file).expect("a source file is readable");
        let code = match source.find("#[cfg(test)]\nmod tests") {
            Some(end) => &source[..end],
            None => &source,
        };
        for (n, line) in code.lines().enumerate() {
            let line = line.find("//").map_or(line, |comment| &line[..comment]);
            for call in CLOCK_ONLY {
                if line.contains(call) {
                    report.push(format!("{}:{}: calls `{call}`", file.display(), n + 1));
                }
            }
        }
    }
    assert!(
        report.is_empty(),
        "read through the store's `Fresh` instead:\n{}",
        report.join("\n")
    );
}
