//! How far a running scan has come, for progress displays (`dynql select-rows` draws a bar
//! from it on a terminal).
//!
//! A [`ReadProgress`] is shared by the streams of one query's scan: each counts the rows it
//! hands on and the row groups it starts, as they happen, with relaxed atomic adds (a
//! display reads them while the scan runs; nothing orders on them). The planned totals are
//! the plan's: the row groups selected by the key ranges, and at most how many rows those
//! and the dynamic store hold. They are upper bounds: versions merge, and WHERE's statistics
//! skip row groups, so a finished scan may stop short of them.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use crate::scan::{Piece, PieceSink};
use crate::Result;

/// Counters of a running read: rows and row groups done, and the plan's totals.
///
/// # Example
/// ```
/// use dynql_storage::progress::ReadProgress;
///
/// let progress = ReadProgress::default();
/// progress.add_planned(1_000, 4);
/// progress.add_rows(250);
/// progress.add_row_groups(1);
/// let now = progress.now();
/// assert_eq!((now.rows, now.planned_rows), (250, Some(1_000)));
/// assert_eq!((now.row_groups, now.planned_row_groups), (1, 4));
/// ```
#[derive(Debug, Default)]
pub struct ReadProgress {
    rows: AtomicU64,
    row_groups: AtomicU64,
    planned_rows: AtomicU64,
    planned_row_groups: AtomicU64,
    /// Whether some scan's rows could not be bounded (an ordered table's plan does not count
    /// what its tablets hold).
    unbounded: std::sync::atomic::AtomicBool,
}

/// A reading of a [`ReadProgress`] at one moment.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ProgressNow {
    /// Rows the scans have handed on.
    pub rows: u64,
    /// At most how many rows the scans hand on, when known.
    pub planned_rows: Option<u64>,
    /// Row groups the scans have started to read (or ruled out by their statistics).
    pub row_groups: u64,
    /// Row groups the scans planned to read (0 for reads that do not count them).
    pub planned_row_groups: u64,
}

impl ReadProgress {
    /// Adds a scan's plan: at most `rows` rows (`u64::MAX`: not known) in `row_groups` row
    /// groups.
    pub fn add_planned(&self, rows: u64, row_groups: u64) {
        if rows == u64::MAX {
            self.unbounded.store(true, Ordering::Relaxed);
        } else {
            self.planned_rows.fetch_add(rows, Ordering::Relaxed);
        }
        self.planned_row_groups
            .fetch_add(row_groups, Ordering::Relaxed);
    }

    /// Counts rows handed on.
    pub fn add_rows(&self, rows: u64) {
        self.rows.fetch_add(rows, Ordering::Relaxed);
    }

    /// Counts row groups started.
    pub fn add_row_groups(&self, row_groups: u64) {
        self.row_groups.fetch_add(row_groups, Ordering::Relaxed);
    }

    /// The counters as they are now.
    pub fn now(&self) -> ProgressNow {
        ProgressNow {
            rows: self.rows.load(Ordering::Relaxed),
            planned_rows: (!self.unbounded.load(Ordering::Relaxed))
                .then(|| self.planned_rows.load(Ordering::Relaxed)),
            row_groups: self.row_groups.load(Ordering::Relaxed),
            planned_row_groups: self.planned_row_groups.load(Ordering::Relaxed),
        }
    }
}

/// A sink that counts what passes through it into a [`ReadProgress`].
pub(crate) struct ProgressSink<S> {
    inner: S,
    progress: Arc<ReadProgress>,
}

impl<S: PieceSink> ProgressSink<S> {
    pub(crate) fn new(inner: S, progress: Arc<ReadProgress>) -> ProgressSink<S> {
        ProgressSink { inner, progress }
    }

    pub(crate) fn into_inner(self) -> S {
        self.inner
    }
}

impl<S: PieceSink> PieceSink for ProgressSink<S> {
    async fn accept(&mut self, tablet: usize, piece: Piece) -> Result<bool> {
        let rows = match &piece {
            Piece::Row(_) => 1,
            Piece::Batch(batch, _) => batch.num_rows() as u64,
        };
        self.progress.add_rows(rows);
        self.inner.accept(tablet, piece).await
    }

    fn row_groups_started(&mut self, count: usize) {
        self.progress.add_row_groups(count as u64);
        self.inner.row_groups_started(count);
    }
}
