//! Scans as streams of record batches. A [`TableScan`] is planned once over a pinned store
//! state (one snapshot for the whole query) and read tablet by tablet: each stream decodes,
//! merges and gives a batch at a time, either on a task of its own that stays two batches
//! ahead (large scans) or inline in the reader's polls (small reads, no task to wake), so a
//! scan holds a few batches, not the table, and stops when its reader goes away.

use std::collections::{BTreeMap, VecDeque};
use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};

use arrow::datatypes::SchemaRef;
use arrow::record_batch::RecordBatch;
use dynql_core::arrow_convert::{rows_to_batch, table_arrow_schema};
use dynql_core::Value;
use tokio::sync::mpsc;

use crate::error::Result;
use crate::kernel::catalog::TableEntry;
use crate::kernel::row_group_filter::RowGroupFilter;
use crate::kernel::timestamp::Timestamp;
use crate::progress::{ProgressSink, ReadProgress};
use crate::scan::{
    normalize_ranges, ByteStrings, Columnar, KeyBound, KeyRange, Piece, PieceSink, ScanStatistics,
};
use crate::state::State;
use crate::store::Store;

/// Batches a scan stream may hold before its reader takes them.
const CHANNEL_BATCHES: usize = 2;

/// The most chunk row groups a small scan ([`TableScan::is_small`]) plans to read. Narrow
/// key ranges read only the pages of a row group that hold them; at 10M rows, an IN list of
/// 100 keys meets 96 row groups.
const SMALL_SCAN_ROW_GROUPS: usize = 128;

/// The most unflushed keys (in the table's dynamic store) a small scan may meet.
const SMALL_SCAN_UNFLUSHED_KEYS: usize = 65_536;

/// A scan of one table planned over one pinned state: the tablets that meet the key ranges,
/// read as streams ([`TableScan::stream`]).
#[derive(Clone)]
pub struct TableScan {
    pub(crate) store: Store,
    pub(crate) state: Arc<State>,
    pub(crate) path: String,
    pub(crate) entry: Arc<TableEntry>,
    pub(crate) ranges: Arc<Vec<KeyRange>>,
    /// The Arrow schema of the rows ([`TableScan::schema`]).
    schema: SchemaRef,
    pub(crate) timestamp: Timestamp,
    pub(crate) tablets: Vec<usize>,
    planned: ScanStatistics,
    /// Keys in the table's dynamic store (all of them, not only those in range).
    unflushed_keys: usize,
    /// Versions in the planned row groups: with `unflushed_keys`, a bound on the rows read.
    planned_versions: u64,
    /// Rules clean row groups out by their statistics before they are decoded.
    row_group_filter: Option<Arc<dyn RowGroupFilter>>,
    /// The plan of a sorted table's scan, made once for its streams.
    plan: Option<Arc<crate::scan_plan::ScanPlan>>,
    /// Slices of clean row groups smaller than this are handed on together, up to this many
    /// rows ([`TableScan::with_gathered_slices`]); 1: each on its own.
    gathered_slices: usize,
    /// Whether a stream of views may give dictionaries ([`TableScan::with_dictionaries`]).
    dictionaries: bool,
    /// Whether a stream may give rows out of key order ([`TableScan::with_rows_in_any_order`]).
    any_order: bool,
    /// Counts the rows and row groups the scan's streams read ([`TableScan::with_progress`]).
    progress: Option<Arc<ReadProgress>>,
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
    /// A snapshot of `state`, read through `store`.
    pub(crate) fn new(store: Store, state: Arc<State>) -> Snapshot {
        Snapshot { store, state }
    }

    /// The log position of this snapshot: the last commit record it holds (see
    /// [`Store::snapshot_at`], which opens the store at it again).
    pub fn seq(&self) -> u64 {
        self.state.seq
    }

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
        let mut made = None;
        let (tablets, planned, planned_versions) = if entry.schema.is_sorted() {
            let plan = crate::scan_plan::plan_scan(entry, data, &ranges, timestamp)?;
            let tablets = plan.tablets.iter().map(|(t, _)| *t).collect();
            let versions = plan
                .row_groups
                .iter()
                .map(|(ci, groups)| {
                    let chunk = &data.chunks[*ci];
                    match chunk.row_groups.is_empty() {
                        true => chunk.rows,
                        false => groups.iter().map(|&g| chunk.row_groups[g].rows).sum(),
                    }
                })
                .sum();
            let statistics = plan.statistics;
            made = Some(Arc::new(plan));
            (tablets, statistics, versions)
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
            (tablets, statistics, u64::MAX)
        };
        let schema = table_arrow_schema(&entry.schema.query_schema());
        let entry = Arc::new(entry.clone());
        let unflushed_keys = data.sorted.len();
        Ok(TableScan {
            store: self.store.clone(),
            state: self.state.clone(),
            path: path.to_string(),
            entry,
            ranges: Arc::new(ranges),
            schema,
            timestamp,
            tablets,
            planned,
            unflushed_keys,
            planned_versions,
            row_group_filter: None,
            plan: made,
            gathered_slices: 1,
            dictionaries: false,
            any_order: false,
            progress: None,
        })
    }
}

impl TableScan {
    /// The selected tablets, in key order.
    pub fn tablets(&self) -> &[usize] {
        &self.tablets
    }

    /// The selected tablets (as [`TableScan::tablets`]) with about how many versions the
    /// scan reads of each: the weights to share them out by. A tablet weighs at least 1 (the
    /// plan does not count the dynamic store's rows: tablets of unflushed rows alone must not
    /// all weigh nothing and land in one partition); every tablet weighs 1 where the plan
    /// does not count at all (ordered tables).
    pub fn tablet_weights(&self) -> Vec<(usize, u64)> {
        match &self.plan {
            Some(plan) => plan
                .tablets
                .iter()
                .zip(&plan.tablet_versions)
                .map(|((t, _), v)| (*t, v.saturating_add(1)))
                .collect(),
            None => self.tablets.iter().map(|&t| (t, 1)).collect(),
        }
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

    /// At most how many rows the scan gives: the versions of the planned row groups and the
    /// keys of the dynamic store (`u64::MAX` for ordered tables, whose plan does not count).
    pub fn most_rows(&self) -> u64 {
        self.planned_versions
            .saturating_add(self.unflushed_keys as u64)
    }

    /// This scan, skipping the clean row groups `filter` rules out by their statistics
    /// (see [`crate::kernel::row_group_filter`]).
    pub fn with_row_group_filter(mut self, filter: Arc<dyn RowGroupFilter>) -> TableScan {
        self.row_group_filter = Some(filter);
        self
    }

    /// This scan, counting the rows its streams hand on and the row groups they start into
    /// `progress`, to which its plan (at most how many rows, in how many row groups) is
    /// added now.
    pub fn with_progress(mut self, progress: Arc<ReadProgress>) -> TableScan {
        progress.add_planned(self.most_rows(), self.planned.row_groups.0 as u64);
        self.progress = Some(progress);
        self
    }

    /// This scan, handing on slices of clean row groups of fewer than `rows` rows together
    /// until they hold `rows` (a point read's, an IN list's slices: each batch costs its
    /// reader a pass through every operator). A reader that stops after its first `n` rows
    /// should gather at most `n`, so that the scan reads no further than it would have.
    pub fn with_gathered_slices(mut self, rows: usize) -> TableScan {
        self.gathered_slices = rows.max(1);
        self
    }

    /// This scan, whose streams of views ([`TableScan::stream`] with `views`) may give a
    /// byte-string column as a `Dictionary(Int32, BinaryView)` where a clean row group holds
    /// few distinct values (the chunk cache keeps such columns so): for a reader that works
    /// once per distinct value, such as a grouping by the column. Other batches keep
    /// `BinaryView`, so one column may come in both types.
    pub fn with_dictionaries(mut self) -> TableScan {
        self.dictionaries = true;
        self
    }

    /// This scan, whose streams may give rows out of key order where that saves work: where
    /// clean row groups of overlapping chunks (layers of overwrites not yet compacted) are
    /// merged, each layer's newest versions come as batches of their own (each in key order)
    /// instead of gathered into key order, and keep the chunk cache's dictionaries (with
    /// [`TableScan::with_dictionaries`]). For a reader the order does not matter to, such as
    /// a hash aggregation; the rows are the same, as are the rows read and decoded.
    pub fn with_rows_in_any_order(mut self) -> TableScan {
        self.any_order = true;
        self
    }

    /// Whether the scan reads little (a sorted table, at most 128 planned row groups, at most
    /// 65,536 unflushed keys in the table): such a scan is best read [`Prefetch::Inline`] and
    /// in one partition, as a task's spawn and wake-ups, or spreading a few batches over
    /// cores, cost more than the read. Ordered tables are never small: their plan does not
    /// count what their tablets hold.
    pub fn is_small(&self) -> bool {
        self.entry.schema.is_sorted()
            && self.planned.row_groups.0 <= SMALL_SCAN_ROW_GROUPS
            && self.unflushed_keys <= SMALL_SCAN_UNFLUSHED_KEYS
    }

    /// The Arrow schema of the rows (the query layout: ordered tables lead with
    /// `$tablet_index`, `$row_index`).
    pub fn schema(&self) -> SchemaRef {
        self.schema.clone()
    }

    /// Streams the rows of `tablets` (a subset of [`TableScan::tablets`], read in the order
    /// given) in key order, as batches: resolved rows gathered `batch_rows` at a time, clean
    /// row-group slices as decoded. Byte strings come as `BinaryView` when `views`. With
    /// `columns` (indices into [`TableScan::schema`]) batches hold those columns only, in
    /// that order, and clean row groups decode nothing else. With [`Prefetch::Task`], must be
    /// called inside a Tokio runtime.
    pub fn stream(
        &self,
        tablets: Vec<usize>,
        columns: Option<Vec<usize>>,
        views: bool,
        batch_rows: usize,
        prefetch: Prefetch,
    ) -> Result<ScanStream> {
        let scan = self.clone();
        let schema = match &columns {
            Some(columns) => Arc::new(self.schema().project(columns)?),
            None => self.schema(),
        };
        Ok(ScanStream::new(
            schema,
            views,
            batch_rows,
            self.gathered_slices,
            prefetch,
            move |mut sink| async move {
                let columns = columns.as_deref();
                match &scan.progress {
                    None => (
                        scan.read_pieces(&tablets, columns, views, &mut sink).await,
                        sink,
                    ),
                    Some(progress) => {
                        let mut counted = ProgressSink::new(sink, progress.clone());
                        let read = scan
                            .read_pieces(&tablets, columns, views, &mut counted)
                            .await;
                        (read, counted.into_inner())
                    }
                }
            },
        ))
    }
}

impl TableScan {
    /// Reads `tablets`' pieces into `sink`.
    async fn read_pieces<S: PieceSink>(
        &self,
        tablets: &[usize],
        columns: Option<&[usize]>,
        views: bool,
        sink: &mut S,
    ) -> Result<ScanStatistics> {
        self.store
            .scan_state_pieces(
                &self.state,
                &self.path,
                &self.ranges,
                self.timestamp,
                Some(Columnar {
                    strings: match (views, self.dictionaries) {
                        (true, true) => ByteStrings::ViewsOrDictionaries,
                        (true, false) => ByteStrings::Views,
                        (false, _) => ByteStrings::Binary,
                    },
                    any_order: self.any_order,
                }),
                Some(tablets),
                columns,
                self.row_group_filter.as_deref(),
                self.plan.as_deref(),
                sink,
            )
            .await
    }
}

/// How a [`ScanStream`] is read.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Prefetch {
    /// On a task of its own that stays a couple of batches ahead of the reader: decoding
    /// overlaps with the reader's work. For scans that read many row groups.
    Task,
    /// In the reader's own polls, a batch at a time: no task to spawn and wake. For small
    /// reads (point lookups, short key ranges), where waking a task costs more than the read.
    Inline,
}

/// An item of a scan stream: a batch and its data weight.
type Item = Result<(RecordBatch, u64)>;

/// The reading of a scan, boxed to be polled inline.
type Reading = Pin<Box<dyn Future<Output = ()> + Send>>;

/// The batches of a scan ([`TableScan::stream`], [`crate::files::FileTable::stream`]), read
/// ahead by a task or inline as they are asked for ([`Prefetch`]).
pub struct ScanStream {
    feed: Feed,
    read: StreamRead,
    /// The data weight of the batch last given.
    last_weight: u64,
}

/// Where a [`ScanStream`] takes its batches from.
enum Feed {
    Channel(mpsc::Receiver<Item>),
    Queue(Arc<InlineQueue>),
}

/// The batches an inline reading has given and the stream not yet taken.
///
/// Invariant: the reading waits (returns `Pending` without a waker) only while the queue
/// holds a batch, and the stream polls the reading only when the queue is empty, so it
/// never waits on itself; once `closed`, the reading never waits on the queue.
#[derive(Default)]
struct InlineQueue {
    items: Mutex<VecDeque<Item>>,
    /// Set when nobody will take more batches: the reading stops at its next one.
    closed: AtomicBool,
}

impl InlineQueue {
    fn lock(&self) -> std::sync::MutexGuard<'_, VecDeque<Item>> {
        self.items.lock().unwrap_or_else(|p| p.into_inner())
    }
}

/// Ready once the stream has taken every queued batch (or will take no more).
struct Drained<'a>(&'a InlineQueue);

impl Future for Drained<'_> {
    type Output = ();

    fn poll(self: Pin<&mut Self>, _cx: &mut Context<'_>) -> Poll<()> {
        // No waker: the stream polls the reading again right after emptying the queue.
        if self.0.closed.load(Ordering::Acquire) || self.0.lock().is_empty() {
            Poll::Ready(())
        } else {
            Poll::Pending
        }
    }
}

/// What a [`ScanStream`] read, known once its reading ends: when the stream is read to its
/// end, or when [`StreamRead::finished`] is awaited after it is dropped (the reading stops
/// at its next batch).
#[derive(Clone)]
pub struct StreamRead {
    statistics: Arc<Mutex<Option<ScanStatistics>>>,
    work: Arc<Mutex<Work>>,
}

/// The reading behind a stream, while it runs.
enum Work {
    Done,
    Task(tokio::task::JoinHandle<()>),
    Inline(Arc<InlineQueue>, Reading),
}

impl StreamRead {
    fn work(&self) -> std::sync::MutexGuard<'_, Work> {
        self.work.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Waits for the reading to end and gives what it read (`None` after an error). Call it
    /// once the stream is read or dropped: a reading waiting for its reader never ends.
    pub async fn finished(&self) -> Option<ScanStatistics> {
        let work = std::mem::replace(&mut *self.work(), Work::Done);
        match work {
            Work::Done => {}
            // A task that panicked read nothing that can be counted.
            Work::Task(task) => drop(task.await),
            Work::Inline(queue, reading) => {
                queue.closed.store(true, Ordering::Release);
                reading.await;
            }
        }
        *self.statistics.lock().unwrap_or_else(|p| p.into_inner())
    }
}

impl ScanStream {
    /// Runs `read`, handing what it gives the sink to the stream: resolved rows gathered
    /// `batch_rows` at a time into batches of `schema`, batches as they come; byte strings as
    /// `BinaryView` when `views`. `read` gives the sink back with its result. With
    /// [`Prefetch::Task`] it runs on a task (inside a Tokio runtime).
    pub(crate) fn new<F, Fut>(
        schema: SchemaRef,
        views: bool,
        batch_rows: usize,
        gathered_slices: usize,
        prefetch: Prefetch,
        read: F,
    ) -> ScanStream
    where
        F: FnOnce(ChannelSink) -> Fut + Send + 'static,
        Fut: Future<Output = (Result<ScanStatistics>, ChannelSink)> + Send + 'static,
    {
        let statistics = Arc::new(Mutex::new(None));
        let done = statistics.clone();
        let (outlet, feed) = match prefetch {
            Prefetch::Task => {
                let (sender, receiver) = mpsc::channel(CHANNEL_BATCHES);
                (Outlet::Channel(sender), Feed::Channel(receiver))
            }
            Prefetch::Inline => {
                let queue = Arc::new(InlineQueue::default());
                (Outlet::Queue(queue.clone()), Feed::Queue(queue))
            }
        };
        let sink = ChannelSink {
            outlet,
            schema,
            views,
            rows: Vec::new(),
            weight: 0,
            slices: Vec::new(),
            slice_rows: 0,
            slice_weight: 0,
            gathered_slices: gathered_slices.max(1),
            batch_rows: batch_rows.max(1),
        };
        let reading = async move {
            let (read, mut sink) = read(sink).await;
            let read = match read {
                Ok(s) => sink.flush().await.map(|_| s),
                Err(e) => Err(e),
            };
            match read {
                Ok(s) => *done.lock().unwrap_or_else(|p| p.into_inner()) = Some(s),
                Err(e) => {
                    // The slices read before the error come first.
                    if sink.flush_slices().await.unwrap_or(false) {
                        sink.outlet.send_last(Err(e)).await
                    }
                }
            }
        };
        let work = match &feed {
            Feed::Channel(_) => Work::Task(tokio::spawn(reading)),
            Feed::Queue(queue) => Work::Inline(queue.clone(), Box::pin(reading)),
        };
        ScanStream {
            feed,
            last_weight: 0,
            read: StreamRead {
                statistics,
                work: Arc::new(Mutex::new(work)),
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

/// The next item of an inline reading: a queued one, or the reading polled until it queues
/// one, ends, or waits on I/O (which wakes `cx`).
fn poll_inline(read: &StreamRead, queue: &InlineQueue, cx: &mut Context<'_>) -> Poll<Option<Item>> {
    loop {
        if let Some(item) = queue.lock().pop_front() {
            return Poll::Ready(Some(item));
        }
        let mut work = read.work();
        let Work::Inline(_, reading) = &mut *work else {
            return Poll::Ready(None);
        };
        match reading.as_mut().poll(cx) {
            Poll::Ready(()) => *work = Work::Done,
            // Waiting on a queued batch, taken at the top of the loop.
            Poll::Pending if !queue.lock().is_empty() => {}
            Poll::Pending => return Poll::Pending,
        }
    }
}

impl Drop for ScanStream {
    fn drop(&mut self) {
        if let Feed::Queue(queue) = &self.feed {
            queue.closed.store(true, Ordering::Release);
        }
    }
}

impl futures::Stream for ScanStream {
    type Item = Result<RecordBatch>;

    fn poll_next(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        let this = self.get_mut();
        let polled = match &mut this.feed {
            Feed::Channel(receiver) => receiver.poll_recv(cx),
            Feed::Queue(queue) => poll_inline(&this.read, queue, cx),
        };
        match polled {
            Poll::Ready(Some(Ok((batch, weight)))) => {
                this.last_weight = weight;
                Poll::Ready(Some(Ok(batch)))
            }
            Poll::Ready(Some(Err(e))) => Poll::Ready(Some(Err(e))),
            Poll::Ready(None) => Poll::Ready(None),
            Poll::Pending => Poll::Pending,
        }
    }
}

/// Where a sink's batches go: to a channel read on another task, or to the queue of an
/// inline reading.
enum Outlet {
    Channel(mpsc::Sender<Item>),
    Queue(Arc<InlineQueue>),
}

impl Outlet {
    /// Hands `item` to the stream, waiting while the reader is behind; `false` when the
    /// reader is gone.
    async fn send(&self, item: Item) -> bool {
        match self {
            Outlet::Channel(sender) => sender.send(item).await.is_ok(),
            Outlet::Queue(queue) => {
                if queue.closed.load(Ordering::Acquire) {
                    return false;
                }
                queue.lock().push_back(item);
                Drained(queue).await;
                !queue.closed.load(Ordering::Acquire)
            }
        }
    }

    /// Hands the reading's last item (an error) to the stream, if it is still read.
    async fn send_last(&self, item: Item) {
        match self {
            // The reader may be gone; then nobody needs the error.
            Outlet::Channel(sender) => drop(sender.send(item).await),
            Outlet::Queue(queue) => queue.lock().push_back(item),
        }
    }
}

/// Gathers resolved rows into batches and hands them (and clean slices) to the stream,
/// waiting while the reader is behind.
pub(crate) struct ChannelSink {
    outlet: Outlet,
    schema: SchemaRef,
    views: bool,
    rows: Vec<Vec<Value>>,
    /// The data weight of `rows`.
    weight: u64,
    /// Slices of fewer than `gathered_slices` rows (a point read's, an IN list's), handed
    /// on together (see [`TableScan::with_gathered_slices`]). At most one of `rows` and
    /// `slices` holds anything, so rows keep their order.
    slices: Vec<RecordBatch>,
    /// Rows and data weight of `slices`.
    slice_rows: usize,
    slice_weight: u64,
    gathered_slices: usize,
    batch_rows: usize,
}

impl ChannelSink {
    /// Sends the gathered slices as one batch; `false` when the reader is gone.
    async fn flush_slices(&mut self) -> Result<bool> {
        let batch = match self.slices.len() {
            0 => return Ok(true),
            1 => self.slices.remove(0),
            _ => {
                let schema = self.slices[0].schema();
                if self.slices.iter().any(|s| s.schema() != schema) {
                    // A column given as a dictionary in one slice and as views in another
                    // (see `TableScan::with_dictionaries`): all as views.
                    for slice in &mut self.slices {
                        *slice = crate::row_group_decode::expanded_batch(slice)?;
                    }
                }
                let schema = self.slices[0].schema();
                let batch = arrow::compute::concat_batches(&schema, &self.slices)?;
                self.slices.clear();
                batch
            }
        };
        self.slice_rows = 0;
        let weight = std::mem::take(&mut self.slice_weight);
        Ok(self.outlet.send(Ok((batch, weight))).await)
    }

    /// Sends the gathered slices and rows; `false` when the reader is gone.
    async fn flush(&mut self) -> Result<bool> {
        Ok(self.flush_slices().await? && self.flush_rows().await?)
    }

    /// Sends the gathered rows as a batch; `false` when the reader is gone.
    async fn flush_rows(&mut self) -> Result<bool> {
        if self.rows.is_empty() {
            return Ok(true);
        }
        let mut batch = rows_to_batch(&self.schema, &self.rows)?;
        if self.views {
            batch = crate::row_group_decode::binary_as_views(&batch)?;
        }
        self.rows.clear();
        let weight = std::mem::take(&mut self.weight);
        Ok(self.outlet.send(Ok((batch, weight))).await)
    }
}

impl PieceSink for ChannelSink {
    async fn accept(&mut self, _tablet: usize, piece: Piece) -> Result<bool> {
        match piece {
            Piece::Row(row) => {
                if !self.flush_slices().await? {
                    return Ok(false);
                }
                self.weight += crate::scan::row_weight(&row);
                self.rows.push(row);
                if self.rows.len() >= self.batch_rows {
                    return self.flush_rows().await;
                }
                Ok(true)
            }
            Piece::Batch(batch, weight) => {
                if !self.flush_rows().await? {
                    return Ok(false);
                }
                if batch.num_rows() >= self.gathered_slices {
                    if !self.flush_slices().await? {
                        return Ok(false);
                    }
                    return Ok(self.outlet.send(Ok((batch, weight))).await);
                }
                self.slice_rows += batch.num_rows();
                self.slice_weight += weight;
                self.slices.push(batch);
                if self.slice_rows >= self.gathered_slices {
                    return self.flush_slices().await;
                }
                Ok(true)
            }
        }
    }
}
