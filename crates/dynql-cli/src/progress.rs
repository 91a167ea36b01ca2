//! The progress bar of a running query: after a second, on a terminal, stderr shows the rows
//! and row groups the main table's scan has read of those its plan selected, as
//! datafusion-cli does. Never on a pipe, and never with `DYNQL_LOG` set (log lines would
//! tear it). The bar is cleared when the query ends, before its result is drawn.

use std::io::IsTerminal;
use std::sync::mpsc::{self, RecvTimeoutError};
use std::sync::{Arc, Mutex, PoisonError};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use dynql::{ProgressNow, ReadProgress, SelectOptions};
use indicatif::{HumanCount, ProgressBar, ProgressDrawTarget, ProgressStyle};

/// How long a query runs before its bar appears: quick queries show none.
const SHOW_AFTER: Duration = Duration::from_secs(1);

/// How often the bar is redrawn.
const TICK: Duration = Duration::from_millis(100);

/// The bars alive in this process, and how many times [`hide_all`] was called. Bars draw
/// under this lock, so once `hide_all` returns none of the bars it hid draws again.
static BARS: Mutex<Bars> = Mutex::new(Bars {
    epoch: 0,
    next_id: 0,
    live: Vec::new(),
});

struct Bars {
    /// A bar started in an earlier epoch stays hidden.
    epoch: u64,
    next_id: u64,
    live: Vec<(u64, ProgressBar)>,
}

fn bars() -> std::sync::MutexGuard<'static, Bars> {
    BARS.lock().unwrap_or_else(PoisonError::into_inner)
}

/// Clears every bar drawn now and keeps them hidden until they end. The shell calls it on
/// Ctrl-C before it prints "Cancelled.": a cancelled query computing inline may run on for a
/// while before it stops, and its bar must not draw over the prompt that is already back.
pub(crate) fn hide_all() {
    let mut bars = bars();
    bars.epoch += 1;
    for (_, bar) in bars.live.drain(..) {
        bar.finish_and_clear();
        bar.set_draw_target(ProgressDrawTarget::hidden());
    }
}

/// A query's progress bar, drawn on stderr by a thread of its own while this lives.
pub(crate) struct QueryProgressBar {
    id: u64,
    bar: ProgressBar,
    stop: Option<mpsc::Sender<()>>,
    thread: Option<JoinHandle<()>>,
}

/// Gives `options` a progress counter and starts the bar that shows it, when stderr is a
/// terminal and logging is off; `None` (and `options` unchanged) otherwise.
pub(crate) fn watch(options: &mut SelectOptions) -> Option<QueryProgressBar> {
    let logging = std::env::var_os(crate::logging::LOG_VARIABLE).is_some_and(|v| !v.is_empty());
    if logging || !std::io::stderr().is_terminal() {
        return None;
    }
    let progress = Arc::new(ReadProgress::default());
    options.progress = Some(progress.clone());
    Some(QueryProgressBar::start(progress))
}

impl QueryProgressBar {
    fn start(progress: Arc<ReadProgress>) -> QueryProgressBar {
        let bar = ProgressBar::with_draw_target(None, ProgressDrawTarget::hidden());
        let (stop, stopped) = mpsc::channel::<()>();
        let drawn = bar.clone();
        let (id, epoch) = {
            let mut bars = bars();
            let id = bars.next_id;
            bars.next_id += 1;
            bars.live.push((id, bar.clone()));
            (id, bars.epoch)
        };
        let thread = std::thread::spawn(move || {
            let started = Instant::now();
            let mut shown = false;
            let mut bounded = None;
            loop {
                match stopped.recv_timeout(TICK) {
                    Err(RecvTimeoutError::Timeout) => {}
                    // Stopped, or the owner is gone.
                    _ => return,
                }
                let bars = bars();
                if bars.epoch != epoch {
                    return;
                }
                if !shown && started.elapsed() >= SHOW_AFTER {
                    drawn.set_draw_target(ProgressDrawTarget::stderr());
                    shown = true;
                }
                if shown {
                    draw(&drawn, progress.now(), &mut bounded);
                }
            }
        });
        QueryProgressBar {
            id,
            bar,
            stop: Some(stop),
            thread: Some(thread),
        }
    }

    /// Runs `f` (which writes to the terminal) with the bar hidden, then redraws it.
    pub(crate) fn suspend<R>(&self, f: impl FnOnce() -> R) -> R {
        self.bar.suspend(f)
    }
}

/// Runs `f` with `bar` (if any) hidden.
pub(crate) fn suspended<R>(bar: Option<&QueryProgressBar>, f: impl FnOnce() -> R) -> R {
    match bar {
        Some(bar) => bar.suspend(f),
        None => f(),
    }
}

impl Drop for QueryProgressBar {
    fn drop(&mut self) {
        bars().live.retain(|(id, _)| *id != self.id);
        drop(self.stop.take());
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
        self.bar.finish_and_clear();
    }
}

/// Draws `now`: a bar over the planned rows when their bound is known, else a count.
/// `bounded` is which of the two styles the bar has (`None`: neither yet).
fn draw(bar: &ProgressBar, now: ProgressNow, bounded: &mut Option<bool>) {
    let row_groups = match now.planned_row_groups {
        0 => String::new(),
        planned => format!(
            ", row groups {}/{}",
            HumanCount(now.row_groups.min(planned)),
            HumanCount(planned)
        ),
    };
    match now.planned_rows.filter(|&planned| planned > 0) {
        Some(planned) => {
            if *bounded != Some(true) {
                bar.set_style(style(
                    "reading [{bar:25}] {human_pos}/{human_len} rows{msg}, {rows_per_sec}",
                ));
                *bounded = Some(true);
            }
            bar.set_length(planned);
            // Versions merge, so the rows read stay at or below the bound.
            bar.set_position(now.rows.min(planned));
        }
        None => {
            if *bounded != Some(false) {
                bar.set_style(style("reading {human_pos} rows{msg}, {rows_per_sec}"));
                bar.unset_length();
                *bounded = Some(false);
            }
            bar.set_position(now.rows);
        }
    }
    bar.set_message(row_groups);
}

/// A bar style with `{rows_per_sec}`, a whole number of rows per second.
fn style(template: &str) -> ProgressStyle {
    crate::io::style(template)
}
