//! The runtime the blocking API runs dynql's async calls on, and how a call blocks.

use std::future::Future;

use crate::error::{Error, Result};

/// A multi-threaded tokio runtime owned by a blocking [`Database`](super::Database) and its
/// clones: queries still run their tablets in parallel on its workers.
pub(super) struct Runtime {
    /// `None` only while dropping.
    inner: Option<tokio::runtime::Runtime>,
}

impl Runtime {
    pub(super) fn new() -> Result<Runtime> {
        let inner = tokio::runtime::Builder::new_multi_thread()
            .enable_all()
            .thread_name("dynql-blocking")
            .build()
            .map_err(Error::Runtime)?;
        Ok(Runtime { inner: Some(inner) })
    }

    /// Runs `future` to completion on this runtime and returns its output, blocking the
    /// calling thread.
    ///
    /// Called from a thread that is itself running async code (a task of another tokio
    /// runtime, or inside its `block_on`), tokio refuses to block on a second runtime there
    /// (it panics). Then the future is driven from a scoped thread of its own, which the
    /// caller waits for: the call works, and blocks the caller's thread for its duration as
    /// any blocking call does. It cannot deadlock on the caller's runtime, since the future
    /// only ever runs on this one.
    pub(super) fn run<T: Send>(&self, future: impl Future<Output = Result<T>> + Send) -> Result<T> {
        let Some(runtime) = &self.inner else {
            return Err(Error::Invalid(
                "dynql's blocking runtime is shutting down".into(),
            ));
        };
        if tokio::runtime::Handle::try_current().is_err() {
            return runtime.block_on(future);
        }
        std::thread::scope(|scope| {
            let driver = std::thread::Builder::new()
                .name("dynql-blocking-call".into())
                .spawn_scoped(scope, || runtime.block_on(future))
                .map_err(Error::Runtime)?;
            match driver.join() {
                Ok(output) => output,
                // The call panicked (a bug): the caller sees the panic, as without the thread.
                Err(panic) => std::panic::resume_unwind(panic),
            }
        })
    }
}

impl Drop for Runtime {
    fn drop(&mut self) {
        let Some(runtime) = self.inner.take() else {
            return;
        };
        if tokio::runtime::Handle::try_current().is_ok() {
            // Dropping a runtime where blocking is not allowed (inside async code) panics;
            // shutting it down in the background does not wait for its blocking tasks.
            runtime.shutdown_background();
        } else {
            // Waits for blocking tasks (file writes in flight) to end.
            drop(runtime);
        }
    }
}
