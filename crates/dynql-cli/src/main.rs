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
//! dynql [--store URL] shell                     # also `dynql` alone on a terminal
//! ```
//! Errors go to stderr with exit status 1; a failed command changes nothing.

mod commands;
mod execute;
mod files;
mod format;
mod io;
#[cfg(test)]
mod reference;
mod row_input;
mod shell;
mod store;
mod tree;

use std::io::IsTerminal;
use std::process::ExitCode;

use clap::error::ErrorKind;
use clap::Parser;

/// mimalloc: queries allocate and free many Arrow buffers, which glibc's allocator returns
/// to the kernel and faults in again (README, "Library": the figures and the memory cost).
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() -> ExitCode {
    let parsed = match commands::Cli::try_parse() {
        // `dynql` alone on a terminal is `dynql shell`; elsewhere it stays a usage error, so
        // a script that forgot its command fails instead of waiting for input.
        Err(e)
            if matches!(
                e.kind(),
                ErrorKind::MissingSubcommand | ErrorKind::DisplayHelpOnMissingArgumentOrSubcommand
            ) && std::io::stdin().is_terminal() =>
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
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
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
        Err(e) => {
            eprintln!("Error: {e:#}");
            ExitCode::FAILURE
        }
    }
}
