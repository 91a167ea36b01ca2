//! End-to-end tests of the `dynql` binary through its command-line contract.

mod bad_input;
mod cli;
mod conformance;
mod cypress;
mod damage;
mod durability;
mod explain;
mod fidelity;
mod files;
mod habits;
mod io;
mod key_filters;
mod limits;
mod logging;
mod master_locks;
mod memory;
mod mvcc;
mod parquet_types;
mod ql_rules;
mod queues;
mod shell;
mod sql;
mod static_tables;
mod tablets;
mod terminal;
mod transactions;
mod ttl;
mod write_limits;

use std::process::{Command, Output, Stdio};

/// A fresh file store in a temporary directory.
pub struct TestStore {
    pub dir: tempfile::TempDir,
}

impl Default for TestStore {
    fn default() -> TestStore {
        TestStore::new()
    }
}

impl TestStore {
    pub fn new() -> TestStore {
        TestStore {
            dir: tempfile::tempdir().expect("temp dir"),
        }
    }

    pub fn url(&self) -> String {
        format!("file://{}", self.dir.path().display())
    }

    /// Runs `dynql --store URL ARGS` with `stdin`.
    pub fn run(&self, args: &[&str], stdin: Option<&str>) -> Output {
        self.run_with_env(args, stdin, &[])
    }

    /// [`TestStore::run`] with extra environment variables.
    pub fn run_with_env(&self, args: &[&str], stdin: Option<&str>, env: &[(&str, &str)]) -> Output {
        use std::io::Write;
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_dynql"));
        cmd.arg("--store").arg(self.url()).args(args);
        cmd.envs(env.iter().copied());
        cmd.stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        let mut child = cmd.spawn().expect("spawn dynql");
        let mut input = child.stdin.take().expect("stdin");
        if let Some(text) = stdin {
            // A command refused before it reads its input (a bad argument) may exit first.
            match input.write_all(text.as_bytes()) {
                Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => {}
                other => other.expect("write stdin"),
            }
        }
        drop(input);
        child.wait_with_output().expect("dynql output")
    }

    /// Runs and asserts success; returns stdout.
    pub fn ok(&self, args: &[&str], stdin: Option<&str>) -> String {
        let out = self.run(args, stdin);
        assert!(
            out.status.success(),
            "dynql {args:?} failed: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8(out.stdout).expect("utf-8 stdout")
    }

    /// Runs and asserts failure with exit status 1; returns stderr.
    pub fn fails(&self, args: &[&str], stdin: Option<&str>) -> String {
        let out = self.run(args, stdin);
        assert_eq!(
            out.status.code(),
            Some(1),
            "dynql {args:?} should fail with 1: {out:?}"
        );
        String::from_utf8(out.stderr).expect("utf-8 stderr")
    }
}

/// Runs `run` over `cases` on `threads` threads; returns "id: message" for each failure.
pub fn run_cases(
    cases: &[serde_json::Value],
    threads: usize,
    run: fn(&serde_json::Value) -> Result<(), String>,
) -> Vec<String> {
    std::thread::scope(|s| {
        let handles: Vec<_> = cases
            .chunks(cases.len().div_ceil(threads).max(1))
            .map(|part| {
                s.spawn(move || {
                    part.iter()
                        .filter_map(|c| {
                            run(c)
                                .err()
                                .map(|e| format!("{}: {e}", c["id"].as_str().unwrap_or("?")))
                        })
                        .collect::<Vec<_>>()
                })
            })
            .collect();
        handles
            .into_iter()
            .flat_map(|h| h.join().expect("runner thread"))
            .collect()
    })
}
