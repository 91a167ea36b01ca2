//! Scans as streams of record batches. A [`TableScan`] is planned once over a pinned store
//! state (one snapshot for the whole query) and read tablet by tablet: each stream is fed by
//! a task that decodes, merges and sends a batch at a time into a channel of two, so a scan
//! holds a few batches, not the table, and stops when its reader goes away.

use std::collections::BTreeMap;
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};

use arrow::datatypes::SchemaRef;
use arrow::record_batch::RecordBatch;
use dynql_core::arrow_convert::{rows_to_batch, table_arrow_schema};
use dynql_core::Value;
use tokio::sync::mpsc;

use crate::error::Result;
use crate::scan::{normalize_ranges, KeyBound, KeyRange, Piece, PieceSink, ScanStatistics};
use crate::store::{State, Store, TableEntry};
use crate::timestamp::Timestamp;

/// Batches a scan stream may hold before its reader takes them.
const CHANNEL_BATCHES: usize = 2;

/// A scan of one table planned over one pinned state: the tablets that meet the key ranges,
/// read as streams ([`TableScan::stream`]).
#[derive(Clone)]
pub struct TableScan {
    store: Store,
    state: Arc<State>,
    path: String,
    entry: TableEntry,
    ranges: Vec<KeyRange>,
    timestamp: Timestamp,
    tablets: Vec<usize>,
    planned: ScanStatistics,
}

impl std::fmt::Debug for TableScan {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TableScan")
            .field("path", &self.path)
            .field("timestamp", &self.timestamp)
            .field("tablets", &self.tablets)
            .finish()
    }
}

/// The store's state at one moment, pinned: every table read through it (its catalog and
/// every scan planned from it) sees the same commits, whatever commits later. One query
/// reads one snapshot.
#[derive(Clone)]
pub struct Snapshot {
    store: Store,
    state: Arc<State>,
}

impl std::fmt::Debug for Snapshot {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Snapshot")
            .field("seq", &self.state.seq)
            .finish()
    }
}

impl Store {
    /// The store's state as of now (the latest checkpoint and log read first).
    ///
    /// # Errors
    /// Reading the log or checkpoint fails.
    pub async fn snapshot(&self) -> Result<Snapshot> {
        Ok(Snapshot {
            store: self.clone(),
            state: self.refresh().await?,
        })
    }

    /// Plans a scan of `ranges` (all keys when `None`) of the table at `path` as of
    /// `timestamp`, over the store state as of now; later commits do not change it.
    ///
    /// # Errors
    /// No such table, a damaged table, bad pivot keys.
    pub async fn plan_table_scan(
        &self,
        path: &str,
        ranges: Option<&[KeyRange]>,
        timestamp: Timestamp,
    ) -> Result<TableScan> {
        self.snapshot()
            .await?
            .plan_table_scan(path, ranges, timestamp)
    }
}

impl Snapshot {
    /// The tables and their catalog entries.
    pub fn tables(&self) -> BTreeMap<String, TableEntry> {
        self.state
            .tables
            .iter()
            .map(|(p, (e, _))| (p.clone(), e.clone()))
            .collect()
    }

    /// Plans a scan of `ranges` (all keys when `None`) of the table at `path` as of
    /// `timestamp`: the tablets, chunks and row groups that meet the ranges.
    ///
    /// # Errors
    /// No such table, a damaged table, bad pivot keys.
    pub fn plan_table_scan(
        &self,
        path: &str,
        ranges: Option<&[KeyRange]>,
        timestamp: Timestamp,
    ) -> Result<TableScan> {
        let state = self.state.clone();
        let (entry, data) = state.table_data(path)?;
        let all = [KeyRange::all()];
        let ranges = normalize_ranges(ranges.unwrap_or(&all).to_vec());
        let (tablets, planned) = if entry.schema.is_sorted() {
            let plan = crate::scan::plan_scan(entry, data, &ranges, timestamp)?;
            let tablets = plan.tablets.iter().map(|(t, _)| *t).collect();
            (tablets, plan.statistics)
        } else {
            let tablets: Vec<usize> = (0..data.queues.len())
                .filter(|t| {
                    let tablet = KeyRange {
                        lower: KeyBound::new(vec![Value::Int64(*t as i64)], false),
                        upper: KeyBound::new(vec![Value::Int64(*t as i64)], true),
                    };
                    ranges.iter().any(|r| r.intersect(&tablet).is_some())
                })
                .collect();
            let statistics = ScanStatistics {
                tablets: (tablets.len(), data.queues.len()),
                ..ScanStatistics::default()
            };
            (tablets, statistics)
        };
        let entry = entry.clone();
        Ok(TableScan {
            store: self.store.clone(),
            state: self.state.clone(),
            path: path.to_string(),
            entry,
            ranges,
            timestamp,
            tablets,
            planned,
        })
    }
}

impl TableScan {
    /// The selected tablets, in key order.
    pub fn tablets(&self) -> &[usize] {
        &self.tablets
    }

    /// The normalised key ranges the scan reads.
    pub fn ranges(&self) -> &[KeyRange] {
        &self.ranges
    }

    /// The table's catalog entry in the pinned state.
    pub fn entry(&self) -> &TableEntry {
        &self.entry
    }

    /// The table path.
    pub fn path(&self) -> &str {
        &self.path
    }

    /// What the plan selected (tablets, chunks, row groups), before reading anything.
    pub fn planned(&self) -> ScanStatistics {
        self.planned
    }

    /// The Arrow schema of the rows (the query layout: ordered tables lead with
    /// `$tablet_index`, `$row_index`).
    pub fn schema(&self) -> SchemaRef {
        table_arrow_schema(&self.entry.schema.query_schema())
    }

    /// Streams the rows of `tablets` (a subset of [`TableScan::tablets`], read in the order
    /// given) in key order, as batches: resolved rows gathered `batch_rows` at a time, clean
    /// row-group slices as decoded. Byte strings come as `BinaryView` when `views`. Must be
    /// called inside a Tokio runtime (the reading runs as a task).
    pub fn stream(&self, tablets: Vec<usize>, views: bool, batch_rows: usize) -> ScanStream {
        let scan = self.clone();
        ScanStream::spawn(
            self.schema(),
            views,
            batch_rows,
            move |mut sink| async move {
                let read = scan
                    .store
                    .scan_state_pieces(
                        &scan.state,
                        &scan.path,
                        &scan.ranges,
                        scan.timestamp,
                        Some(views),
                        Some(&tablets),
                        &mut sink,
                    )
                    .await;
                (read, sink)
            },
        )
    }
}

/// The batches of a scan ([`TableScan::stream`], [`crate::files::FileTable::stream`]), read
/// by a task that stays a few batches ahead.
pub struct ScanStream {
    receiver: mpsc::Receiver<Result<(RecordBatch, u64)>>,
    read: StreamRead,
    /// The data weight of the batch last given.
    last_weight: u64,
}

/// What a [`ScanStream`] read, known once its reading task ends: when the stream is read to
/// its end, or soon after it is dropped (the task stops at its next batch).
#[derive(Clone)]
pub struct StreamRead {
    statistics: Arc<Mutex<Option<ScanStatistics>>>,
    task: Arc<Mutex<Option<tokio::task::JoinHandle<()>>>>,
}

impl StreamRead {
    /// Waits for the reading task to end and gives what it read (`None` after an error).
    /// Call it once the stream is read or dropped: a task waiting for its reader never ends.
    pub async fn finished(&self) -> Option<ScanStatistics> {
        let task = self.task.lock().unwrap_or_else(|p| p.into_inner()).take();
        if let Some(task) = task {
            // A task that panicked read nothing that can be counted.
            let _ = task.await;
        }
        *self.statistics.lock().unwrap_or_else(|p| p.into_inner())
    }
}

impl ScanStream {
    /// Runs `read` on a task, handing what it gives the sink to the stream: resolved rows
    /// gathered `batch_rows` at a time into batches of `schema`, batches as they come; byte
    /// strings as `BinaryView` when `views`. `read` gives the sink back with its result.
    pub(crate) fn spawn<F, Fut>(
        schema: SchemaRef,
        views: bool,
        batch_rows: usize,
        read: F,
    ) -> ScanStream
    where
        F: FnOnce(ChannelSink) -> Fut + Send + 'static,
        Fut: std::future::Future<Output = (Result<ScanStatistics>, ChannelSink)> + Send,
    {
        let (sender, receiver) = mpsc::channel(CHANNEL_BATCHES);
        let statistics = Arc::new(Mutex::new(None));
        let done = statistics.clone();
        let sink = ChannelSink {
            sender: sender.clone(),
            schema,
            views,
            rows: Vec::new(),
            weight: 0,
            batch_rows: batch_rows.max(1),
        };
        let task = tokio::spawn(async move {
            let (read, mut sink) = read(sink).await;
            let read = match read {
                Ok(s) => sink.flush().await.map(|_| s),
                Err(e) => Err(e),
            };
            match read {
                Ok(s) => *done.lock().unwrap_or_else(|p| p.into_inner()) = Some(s),
                Err(e) => {
                    // The reader may be gone; then nobody needs the error.
                    let _ = sender.send(Err(e)).await;
                }
            }
        });
        ScanStream {
            receiver,
            last_weight: 0,
            read: StreamRead {
                statistics,
                task: Arc::new(Mutex::new(Some(task))),
            },
        }
    }

    /// YT's data weight of the batch the stream gave last (weighed as decoded, before byte
    /// strings became views).
    pub fn last_weight(&self) -> u64 {
        self.last_weight
    }

    /// What the stream reads, known once it ends ([`StreamRead::finished`]).
    pub fn read(&self) -> StreamRead {
        self.read.clone()
    }
}

impl futures::Stream for ScanStream {
    type Item = Result<RecordBatch>;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        match self.receiver.poll_recv(cx) {
            Poll::Ready(Some(Ok((batch, weight)))) => {
                self.last_weight = weight;
                Poll::Ready(Some(Ok(batch)))
            }
            Poll::Ready(Some(Err(e))) => Poll::Ready(Some(Err(e))),
            Poll::Ready(None) => Poll::Ready(None),
            Poll::Pending => Poll::Pending,
        }
    }
}

/// Gathers resolved rows into batches and sends them (and clean slices) to the stream,
/// waiting while the reader is behind.
pub(crate) struct ChannelSink {
    sender: mpsc::Sender<Result<(RecordBatch, u64)>>,
    schema: SchemaRef,
    views: bool,
    rows: Vec<Vec<Value>>,
    /// The data weight of `rows`.
    weight: u64,
    batch_rows: usize,
}

impl ChannelSink {
    /// Sends the gathered rows; `false` when the reader is gone.
    async fn flush(&mut self) -> Result<bool> {
        if self.rows.is_empty() {
            return Ok(true);
        }
        let mut batch = rows_to_batch(&self.schema, &self.rows)?;
        if self.views {
            batch = crate::chunk_cache::binary_as_views(&batch)?;
        }
        self.rows.clear();
        let weight = std::mem::take(&mut self.weight);
        Ok(self.sender.send(Ok((batch, weight))).await.is_ok())
    }
}

impl PieceSink for ChannelSink {
    async fn accept(&mut self, _tablet: usize, piece: Piece) -> Result<bool> {
        match piece {
            Piece::Row(row) => {
                self.weight += crate::scan::row_weight(&row);
                self.rows.push(row);
                if self.rows.len() >= self.batch_rows {
                    return self.flush().await;
                }
                Ok(true)
            }
            Piece::Batch(batch, weight) => {
                if !self.flush().await? {
                    return Ok(false);
                }
                Ok(self.sender.send(Ok((batch, weight))).await.is_ok())
            }
        }
    }
}
