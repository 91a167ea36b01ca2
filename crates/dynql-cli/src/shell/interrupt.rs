//! Ctrl-C while a statement runs, seen on a thread of its own.
//!
//! The runtime's I/O driver, which delivers signals to `tokio::signal`, runs only on a worker
//! thread that is idle. A statement whose operators compute without yielding (a hash join's
//! build, a cross join feeding an aggregate) keeps both workers busy for seconds, and a Ctrl-C
//! would wait that long to be seen. A small runtime on a dedicated thread sees it at once.

use anyhow::{Context, Result};
use tokio::sync::watch;

/// The Ctrl-C presses since the shell started, as a count a statement can wait on.
pub struct Interrupts {
    presses: watch::Receiver<u64>,
}

impl Interrupts {
    /// Starts the thread that counts Ctrl-C presses.
    ///
    /// # Errors
    /// The thread or its runtime cannot be started.
    pub fn listen() -> Result<Interrupts> {
        let (count, presses) = watch::channel(0u64);
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .context("cannot start the Ctrl-C listener")?;
        std::thread::Builder::new()
            .name("dynql-ctrl-c".into())
            .spawn(move || {
                runtime.block_on(async move {
                    // The handler is installed by the first call and stays for the process.
                    while tokio::signal::ctrl_c().await.is_ok() {
                        count.send_modify(|n| *n += 1);
                    }
                })
            })
            .context("cannot start the Ctrl-C listener")?;
        Ok(Interrupts { presses })
    }

    /// Forgets the presses so far: a statement is cancelled only by a Ctrl-C pressed while
    /// it runs.
    pub fn mark_seen(&mut self) {
        self.presses.borrow_and_update();
    }

    /// Waits for the next Ctrl-C (forever if the listener has stopped).
    pub async fn pressed(&mut self) {
        if self.presses.changed().await.is_err() {
            std::future::pending::<()>().await;
        }
    }
}
