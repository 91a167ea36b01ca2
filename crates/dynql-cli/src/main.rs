//! `dynql`: the command line, mirroring `yt` for dynamic tables.
//!
//! ```text
//! dynql [--store URL] create table PATH --attributes ATTRS
//! dynql [--store URL] insert-rows PATH [--format json|yson]   < rows
//! dynql [--store URL] delete-rows PATH [--format json|yson]   < keys
//! dynql [--store URL] select-rows QUERY [--format json|yson|schemaful_dsv] [options]
//! dynql [--store URL] remove PATH | exists PATH | list PATH
//! dynql [--store URL] import PATH --from FILES… [--format parquet|csv|json] [--max-rejected N] [--sort-memory-mib M]
//! dynql [--store URL] export PATH --to DIR [--timestamp TS] [--rows-per-file N] [--force]
//! dynql [--store URL] shell                     # also `dynql` alone (statements piped in run too)
//! ```
//! Errors go to stderr with exit status 1; a failed command changes nothing. A reader of
//! stdout that goes away (`| head`) ends the command quietly with status 0.

mod commands;
mod execute;
mod files;
mod format;
mod io;
mod logging;
mod output;
mod pretty;
mod progress;
#[cfg(test)]
mod reference;
mod row_input;
mod select_rows;
mod shell;
mod store;
mod tree;

use std::process::ExitCode;

use clap::error::ErrorKind;
use clap::Parser;

/// mimalloc: queries allocate and free many Arrow buffers, which glibc's allocator returns
/// to the kernel and faults in again (README, "Library": the figures and the memory cost).
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// Turns transparent huge pages off for this process. mimalloc asks the kernel for huge
/// pages (2 MiB) where it may, and a thread that touches a few KiB of its heap then holds a
/// whole one: on a full scan of 10M rows that was 30 of a command's 140 MB peak. A command's
/// working set is small and short-lived, so TLB misses cost it less than that memory.
#[cfg(target_os = "linux")]
fn without_huge_pages() {
    // SAFETY: PR_SET_THP_DISABLE takes integers only and reads or writes no memory of ours;
    // a kernel without it fails the call, which changes nothing.
    unsafe {
        libc::prctl(libc::PR_SET_THP_DISABLE, 1, 0, 0, 0);
    }
}

#[cfg(not(target_os = "linux"))]
fn without_huge_pages() {}

fn main() -> ExitCode {
    without_huge_pages();
    let parsed = match commands::Cli::try_parse() {
        // `dynql` alone is `dynql shell`: on a terminal it is interactive, and statements
        // piped to it run one after another (`echo 'get //t/@schema;' | dynql`), as duckdb
        // and sqlite do.
        Err(e)
            if matches!(
                e.kind(),
                ErrorKind::MissingSubcommand | ErrorKind::DisplayHelpOnMissingArgumentOrSubcommand
            ) =>
        {
            commands::Cli::try_parse_from(std::env::args_os().chain(["shell".into()]))
        }
        other => other,
    };
    // Usage errors exit with 1 like every other failure (clap's default is 2).
    let cli = match parsed {
        Ok(cli) => cli,
        Err(e) => {
            let code = if e.use_stderr() {
                ExitCode::FAILURE
            } else {
                ExitCode::SUCCESS
            };
            let _ = e.print();
            return code;
        }
    };
    logging::init();
    // One worker thread per core (tokio's default), as many as the partitions DataFusion
    // plans a scan into (`target_partitions` is the core count too): a fixed number would
    // leave cores idle on a larger machine, or run more partitions than threads.
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
    {
        Ok(r) => r,
        Err(e) => {
            eprintln!("Error: cannot start the runtime: {e}");
            return ExitCode::FAILURE;
        }
    };
    match runtime.block_on(execute::run(cli)) {
        Ok(()) => ExitCode::SUCCESS,
        // The reader of stdout went away (`| head`): it has what it wanted.
        Err(_) if output::stdout_closed() => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("Error: {}", error_text(&e));
            ExitCode::FAILURE
        }
    }
}

/// The longest error message printed: a message quoting hostile input (a 1 MB name in an
/// error built by a dependency) is cut here even where its source did not cut it.
const MAX_ERROR_BYTES: usize = 16 * 1024;

/// The error and its causes, each said once: a cause whose text its wrapper already quotes
/// (object_store's errors repeat their source) is not printed again.
fn error_text(e: &anyhow::Error) -> String {
    let mut text = String::new();
    for cause in e.chain() {
        let part = cause.to_string();
        if text.contains(&part) {
            continue;
        }
        if !text.is_empty() {
            text.push_str(": ");
        }
        text.push_str(&part);
    }
    if text.len() > MAX_ERROR_BYTES {
        let mut end = MAX_ERROR_BYTES;
        while !text.is_char_boundary(end) {
            end -= 1;
        }
        let cut = text.len() - end;
        text.truncate(end);
        text.push_str(&format!("… ({cut} more bytes)"));
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn causes_are_said_once_and_long_messages_cut() {
        let inner = anyhow::anyhow!("No such file or directory (os error 2)");
        let e = inner.context("Object store error: No such file or directory (os error 2)");
        assert_eq!(
            error_text(&e),
            "Object store error: No such file or directory (os error 2)"
        );
        let e = anyhow::anyhow!("root").context("outer");
        assert_eq!(error_text(&e), "outer: root");
        let e = anyhow::anyhow!("{}", "x".repeat(1 << 20));
        let text = error_text(&e);
        assert!(text.len() < MAX_ERROR_BYTES + 64, "{}", text.len());
        assert!(text.ends_with("more bytes)"));
    }
}
