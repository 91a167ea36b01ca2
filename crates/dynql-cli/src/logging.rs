//! `DYNQL_LOG`: the spans and events of planning, scans, commits, flushes and compactions
//! (the `tracing` instrumentation of the library's crates) written to stderr as they close.
//!
//! The variable takes a level or comma-separated `target=level` directives, as `RUST_LOG`
//! does elsewhere (`tracing-subscriber`'s `Targets` syntax): `DYNQL_LOG=debug` shows
//! everything at debug level (the object store's HTTP client too), `DYNQL_LOG=dynql=debug`
//! only dynql's own crates (`dynql`, `dynql_exec`, `dynql_storage`: a target matches by
//! prefix). Unset or empty, nothing is logged and the spans cost next to nothing.

use tracing_subscriber::filter::Targets;
use tracing_subscriber::fmt::format::FmtSpan;
use tracing_subscriber::layer::SubscriberExt;
use tracing_subscriber::util::SubscriberInitExt;

/// The environment variable that turns logging on.
pub(crate) const LOG_VARIABLE: &str = "DYNQL_LOG";

/// Installs the stderr logger when `DYNQL_LOG` is set; a filter it cannot parse is reported
/// and ignored (the command still runs).
pub(crate) fn init() {
    let Some(spec) = std::env::var(LOG_VARIABLE)
        .ok()
        .filter(|s| !s.trim().is_empty())
    else {
        return;
    };
    match spec.parse::<Targets>() {
        Ok(filter) => {
            let printer = tracing_subscriber::fmt::layer()
                .with_writer(std::io::stderr)
                .with_ansi(false)
                // A span is printed when it closes, with its busy and idle time.
                .with_span_events(FmtSpan::CLOSE);
            let _ = tracing_subscriber::registry()
                .with(printer)
                .with(filter)
                .try_init();
        }
        Err(e) => eprintln!("Warning: {LOG_VARIABLE}={spec:?} is ignored: {e}"),
    }
}
