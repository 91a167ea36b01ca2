//! What the scans of one query count as they go: YT's input row limit across partitions
//! ([`InputLimit`]), what the streams read and the rows' data weight ([`Reads`]), and the
//! per-partition metrics of the scan operator ([`ScanMetrics`], shown by EXPLAIN ANALYZE).

use std::fmt;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use datafusion::physical_plan::metrics::{
    BaselineMetrics, Count, ExecutionPlanMetricsSet, MetricBuilder,
};
use dynql_storage::{ScanStatistics, StreamRead};

/// A row limit of YT's (input rows, or the rows of one join), counted across the partitions
/// of one query. Past it a query fails, or (`truncate`, where the rows come in scan order)
/// keeps the rows up to it, as YT does without `fail_on_incomplete_result`.
#[derive(Debug)]
pub(crate) struct InputLimit {
    limit: u64,
    truncate: bool,
    read: AtomicU64,
    exceeded: AtomicBool,
}

impl InputLimit {
    pub(crate) fn new(limit: u64, truncate: bool) -> InputLimit {
        InputLimit {
            limit,
            truncate,
            read: AtomicU64::new(0),
            exceeded: AtomicBool::new(false),
        }
    }

    /// The most rows that pass.
    pub(crate) fn limit(&self) -> u64 {
        self.limit
    }

    /// Counts `rows` more and gives how many of them pass: all of them within the limit;
    /// past it `None` (the query fails), or when truncating the ones up to the limit.
    pub(crate) fn admit(&self, rows: u64) -> Option<u64> {
        if !self.truncate {
            let read = self.read.fetch_add(rows, Ordering::Relaxed) + rows;
            if read > self.limit {
                self.exceeded.store(true, Ordering::Relaxed);
                return None;
            }
            return Some(rows);
        }
        let passed = self.take(rows);
        if passed < rows {
            self.exceeded.store(true, Ordering::Relaxed);
        }
        Some(passed)
    }

    /// Counts up to `rows` more, never past the limit, and gives how many were counted. A
    /// scan hands on those rows and, when some were left over, calls [`InputLimit::overflow`]
    /// only if asked for more: a consumer that stops first (a LIMIT) never passes the limit,
    /// as YT fails only on reading the row past it.
    pub(crate) fn take(&self, rows: u64) -> u64 {
        let mut before = self.read.load(Ordering::Relaxed);
        loop {
            let after = before.saturating_add(rows).min(self.limit).max(before);
            match self.read.compare_exchange_weak(
                before,
                after,
                Ordering::Relaxed,
                Ordering::Relaxed,
            ) {
                Ok(_) => return after - before,
                Err(now) => before = now,
            }
        }
    }

    /// A row past the limit is asked for: the query's limit error, or (when truncating)
    /// `Ok`, the rows ending there. Either way the limit counts as exceeded.
    pub(crate) fn overflow(&self) -> crate::Result<()> {
        self.exceeded.store(true, Ordering::Relaxed);
        if self.truncate {
            Ok(())
        } else {
            Err(crate::Error::LimitExceeded { what: "input" })
        }
    }

    /// Rows read so far (those within the limit, when truncating).
    pub(crate) fn read(&self) -> u64 {
        self.read.load(Ordering::Relaxed)
    }

    /// Whether rows went past the limit (failing the query, or cut when truncating).
    pub(crate) fn exceeded(&self) -> bool {
        self.exceeded.load(Ordering::Relaxed)
    }
}

/// What the scans of one query read: their streams (summed once they end, and added to
/// the metrics of the partition that read each) and the data weight of the rows they
/// handed on.
#[derive(Default)]
pub(crate) struct Reads {
    pub(super) streams: Mutex<Vec<(StreamRead, Arc<ScanMetrics>)>>,
    pub(super) data_weight: AtomicU64,
}

/// The metrics of one partition of a [`super::table_scan::TabletScanExec`] (shown by EXPLAIN ANALYZE): rows
/// and batches handed on and the time spent waiting for them (DataFusion's baseline), and
/// what the partition's stream read, counted once it ends.
pub(super) struct ScanMetrics {
    pub(super) baseline: BaselineMetrics,
    rows_decoded: Count,
    row_groups_read: Count,
    chunks_read: Count,
    chunks_skipped_by_key_filter: Count,
    pub(super) data_weight: Count,
    /// Whether the stream's statistics were added: at its end, or after the plan ran.
    counted: AtomicBool,
}

impl ScanMetrics {
    pub(super) fn new(metrics: &ExecutionPlanMetricsSet, partition: usize) -> ScanMetrics {
        let count = |name: &'static str| MetricBuilder::new(metrics).counter(name, partition);
        ScanMetrics {
            baseline: BaselineMetrics::new(metrics, partition),
            rows_decoded: count("rows_decoded"),
            row_groups_read: count("row_groups_read"),
            chunks_read: count("chunks_read"),
            chunks_skipped_by_key_filter: count("chunks_skipped_by_key_filter"),
            data_weight: count("data_weight"),
            counted: AtomicBool::new(false),
        }
    }

    /// Adds what a finished stream read, once.
    pub(super) fn add(&self, read: &ScanStatistics) {
        if self.counted.swap(true, Ordering::Relaxed) {
            return;
        }
        self.rows_decoded.add(read.rows_decoded as usize);
        self.row_groups_read.add(read.row_groups.0);
        self.chunks_read.add(read.chunks.0);
        self.chunks_skipped_by_key_filter
            .add(read.chunks_skipped_by_key_filter as usize);
    }
}

impl fmt::Debug for Reads {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Reads")
            .field("data_weight", &self.data_weight.load(Ordering::Relaxed))
            .finish_non_exhaustive()
    }
}

/// [`Reads`], shared by a query's scans.
pub(crate) type ScanReads = Arc<Reads>;

/// What the streams of a query read, summed, with `rows_read` rows handed on. Call it once
/// the plan is run (or dropped): it waits for the streams' reading tasks to end.
pub(crate) async fn streamed(reads: &ScanReads, rows_read: u64) -> ScanStatistics {
    let mut total = ScanStatistics {
        rows_read,
        data_weight: reads.data_weight.load(Ordering::Relaxed),
        ..ScanStatistics::default()
    };
    let streams = reads
        .streams
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .clone();
    for (read, metrics) in streams {
        if let Some(s) = read.finished().await {
            metrics.add(&s);
            total.rows_decoded += s.rows_decoded;
            total.chunks_skipped_by_key_filter += s.chunks_skipped_by_key_filter;
            total.tablets.0 = total.tablets.0.max(s.tablets.0);
            total.tablets.1 = s.tablets.1;
            total.chunks.0 += s.chunks.0;
            total.chunks.1 = s.chunks.1;
            total.row_groups.0 += s.row_groups.0;
            total.row_groups.1 = s.row_groups.1;
        }
    }
    total
}
