//! Pruned scans: the rows of a table whose keys lie in given key ranges, read from only the
//! tablets, chunks and row groups whose bounds meet a range.
//!
//! Tablets are the spans between a sorted table's pivot keys; a flushed or compacted chunk
//! belongs to one tablet. Each chunk records the key bounds of its row groups
//! ([`ChunkRef::row_groups`]), so a scan decodes only the row groups it needs, merges them
//! with the dynamic store range by range ([`crate::kernel::merge`]) and resolves each key at
//! the read timestamp.
//!
//! [`ChunkRef::row_groups`]: crate::kernel::chunk_ref::ChunkRef::row_groups

use arrow::record_batch::RecordBatch;

use dynql_core::arrow_convert::{rows_to_batch, table_arrow_schema};
use dynql_core::{Value, ValueType};

use crate::error::{Error, Result};
pub use crate::kernel::key_range::{normalize_ranges, KeyBound, KeyRange};
use crate::kernel::key_search::{partition_keys, partition_keys_from};
use crate::kernel::merge::{KeyGroup, KeyGroups, VersionMerge};
use crate::kernel::mvcc::{resolve_versions, RowDelta};
use crate::kernel::row_group_filter::RowGroupFilter;
use crate::kernel::timestamp::Timestamp;
pub use crate::kernel::weight::{batch_weight, column_weight, row_weight, value_weight};
use crate::piece_batches::projected_batch;
pub(crate) use crate::piece_batches::{ByteStrings, Columnar};
use crate::scan_plan::{plan_scan, ScanPlan};
use crate::state::{KeyOrd, TableData};
use crate::store::Store;

/// What a scan reads, as `[selected, total]` pairs, and what it produced.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ScanStatistics {
    pub tablets: (usize, usize),
    pub chunks: (usize, usize),
    pub row_groups: (usize, usize),
    /// Rows the scan produced (resolved rows inside the ranges).
    pub rows_read: u64,
    /// Their data weight, as YT counts it: one byte per row plus each value's size.
    pub data_weight: u64,
    /// Row versions decoded from chunks: whole row groups, or the page windows of them that
    /// the page index selects for narrow ranges.
    pub rows_decoded: u64,
    /// Chunks the scan did not read because their key filters ruled out its key prefix
    /// ([`crate::key_filter`]; with `mount_config/enable_key_filter_for_lookup`).
    pub chunks_skipped_by_key_filter: u64,
}

/// The rows of one tablet, in key order.
#[derive(Debug, Clone, Default)]
pub struct TabletRows {
    pub tablet_index: usize,
    pub rows: Vec<Vec<Value>>,
}

impl Store {
    /// What a scan of `ranges` (all keys when `None`) would read, without reading it.
    pub async fn explain_scan(
        &self,
        path: &str,
        ranges: Option<&[KeyRange]>,
        timestamp: Timestamp,
    ) -> Result<ScanStatistics> {
        let state = self.refresh().await?;
        let (entry, data) = state.table_data(path)?;
        let all = [KeyRange::all()];
        let ranges = normalize_ranges(ranges.unwrap_or(&all).to_vec());
        if !entry.schema.is_sorted() {
            let selected = (0..data.queues.len())
                .filter(|t| {
                    let tablet = KeyRange {
                        lower: KeyBound::new(vec![Value::Int64(*t as i64)], false),
                        upper: KeyBound::new(vec![Value::Int64(*t as i64)], true),
                    };
                    ranges.iter().any(|r| r.intersect(&tablet).is_some())
                })
                .count();
            return Ok(ScanStatistics {
                tablets: (selected, data.queues.len()),
                ..ScanStatistics::default()
            });
        }
        Ok(plan_scan(entry, data, &ranges, timestamp)?.statistics)
    }

    /// The rows of a sorted table with keys in `ranges` (all keys when `None`) as of
    /// `timestamp`, per selected tablet in key order, and what the scan read.
    pub async fn scan_ranges(
        &self,
        path: &str,
        ranges: Option<&[KeyRange]>,
        timestamp: Timestamp,
    ) -> Result<(Vec<TabletRows>, ScanStatistics)> {
        let mut out: Vec<TabletRows> = Vec::new();
        let statistics = self
            .scan_visit(path, ranges, timestamp, &mut |tablet_index, row| {
                match out.last_mut() {
                    Some(t) if t.tablet_index == tablet_index => t.rows.push(row),
                    _ => out.push(TabletRows {
                        tablet_index,
                        rows: vec![row],
                    }),
                }
                Ok(true)
            })
            .await?;
        Ok((out, statistics))
    }

    /// Visits the rows of `ranges` (all keys when `None`) as of `timestamp` in key order,
    /// with their tablet index, until `visit` returns false. Row groups are decoded range by
    /// range as the scan reaches them, so stopping early reads little. The statistics count
    /// the row groups decoded and the rows visited.
    pub async fn scan_visit(
        &self,
        path: &str,
        ranges: Option<&[KeyRange]>,
        timestamp: Timestamp,
        visit: &mut (dyn FnMut(usize, Vec<Value>) -> Result<bool> + Send),
    ) -> Result<ScanStatistics> {
        self.scan_pieces(
            path,
            ranges,
            timestamp,
            None,
            &mut |tablet, piece| match piece {
                Piece::Row(row) => visit(tablet, row),
                // Not produced without `columnar`.
                Piece::Batch(..) => Ok(true),
            },
        )
        .await
    }

    /// The rows of `ranges` (all keys when `None`) as of `timestamp`, in key order, as record
    /// batches in the table's Arrow schema. Where a piece of a range lies in one *clean* row
    /// group (whole-row overwrites, unique keys, all older than the read) and nothing else,
    /// that row group's Parquet columns are returned as they were decoded, without resolving
    /// versions row by row: compacted data scans at columnar speed.
    pub async fn scan_batches(
        &self,
        path: &str,
        ranges: Option<&[KeyRange]>,
        timestamp: Timestamp,
    ) -> Result<(Vec<RecordBatch>, ScanStatistics)> {
        let (batches, statistics) = self.scan_batches_as(path, ranges, timestamp, false).await?;
        Ok((batches.into_iter().map(|(_, b)| b).collect(), statistics))
    }

    /// [`Store::scan_batches`] with each batch's tablet index (batches of a tablet are
    /// contiguous, in key order), and byte-string columns as `BinaryView` when `views` (the
    /// clean row groups' views are cast once and cached), which DataFusion groups and hashes
    /// much faster.
    pub async fn scan_batches_as(
        &self,
        path: &str,
        ranges: Option<&[KeyRange]>,
        timestamp: Timestamp,
        views: bool,
    ) -> Result<(Vec<(usize, RecordBatch)>, ScanStatistics)> {
        let entry = self.table(path).await?;
        // Ordered tables scan in the query layout (`$tablet_index`, `$row_index` first).
        let arrow_schema = table_arrow_schema(&entry.schema.query_schema());
        let mut batches: Vec<(usize, RecordBatch)> = Vec::new();
        // Resolved rows waiting to become a batch, and their tablet.
        let mut rows: Vec<Vec<Value>> = Vec::new();
        let mut rows_tablet = 0;
        let mut failure = None;
        let flush =
            |rows: &mut Vec<Vec<Value>>, tablet: usize, batches: &mut Vec<(usize, RecordBatch)>| {
                if rows.is_empty() {
                    return Ok(());
                }
                let mut b = rows_to_batch(&arrow_schema, rows)?;
                if views {
                    b = crate::row_group_decode::binary_as_views(&b)?;
                }
                rows.clear();
                batches.push((tablet, b));
                Ok::<(), Error>(())
            };
        let statistics = self
            .scan_pieces(
                path,
                ranges,
                timestamp,
                Some(ByteStrings::views_when(views)),
                &mut |tablet, piece| {
                    if tablet != rows_tablet
                        || rows.len() >= 64 * 1024
                        || matches!(piece, Piece::Batch(..))
                    {
                        if let Err(e) = flush(&mut rows, rows_tablet, &mut batches) {
                            failure = Some(e);
                            return Ok(false);
                        }
                        rows_tablet = tablet;
                    }
                    match piece {
                        Piece::Row(row) => rows.push(row),
                        Piece::Batch(b, _) => batches.push((tablet, b)),
                    }
                    Ok(true)
                },
            )
            .await?;
        if let Some(e) = failure {
            return Err(e);
        }
        flush(&mut rows, rows_tablet, &mut batches)?;
        Ok((batches, statistics))
    }

    /// The row window of row group `g` of `chunk` a scan of `range` reads (`None`: all).
    async fn page_window(
        &self,
        schema: &dynql_core::TableSchema,
        chunk: &crate::kernel::chunk_ref::ChunkRef,
        g: usize,
        range: &KeyRange,
    ) -> Result<Option<std::ops::Range<usize>>> {
        if !self.page_windows {
            return Ok(None);
        }
        self.cache
            .window(&self.objects, schema, chunk, g, range)
            .await
    }

    /// The rows of clean row group `g` of `chunk` whose pages `filter` may want, when its
    /// page index narrows them (see [`crate::kernel::page_filter`]).
    async fn filter_window(
        &self,
        chunk: &crate::kernel::chunk_ref::ChunkRef,
        g: usize,
        filter: &dyn RowGroupFilter,
        columns: &[(usize, ValueType)],
        known: &[crate::kernel::row_group_filter::ColumnStatistics],
    ) -> Result<Option<std::ops::Range<usize>>> {
        if !self.page_windows {
            return Ok(None);
        }
        self.cache
            .filter_window(&self.objects, chunk, g, filter, columns, known)
            .await
    }

    /// The scan behind [`Store::scan_visit`] and [`Store::scan_batches`]: rows one by one, or
    /// (with `columnar`) whole slices of clean row groups.
    async fn scan_pieces(
        &self,
        path: &str,
        ranges: Option<&[KeyRange]>,
        timestamp: Timestamp,
        columnar: Option<ByteStrings>,
        sink: &mut (dyn FnMut(usize, Piece) -> Result<bool> + Send),
    ) -> Result<ScanStatistics> {
        self.settle_read_timestamp(timestamp).await?;
        let state = self.refresh().await?;
        let all = [KeyRange::all()];
        let ranges = normalize_ranges(ranges.unwrap_or(&all).to_vec());
        let mut sink = FnSink(sink);
        self.scan_state_pieces(
            &state,
            path,
            &ranges,
            timestamp,
            columnar.map(Columnar::from),
            None,
            None,
            None,
            None,
            &mut sink,
        )
        .await
    }

    /// [`Store::scan_pieces`] over a pinned state, of normalised `ranges`, of the tablets in
    /// `tablets` only (all when `None`), handing pieces to an asynchronous sink (which may
    /// wait for its consumer). With `columns` (indices in the query layout), pieces hold
    /// those columns only, in that order, and clean row groups decode only them. With
    /// `filter`, clean row groups it rules out by their statistics are skipped. `planned`
    /// is the plan of these ranges over this state, if made already.
    #[allow(clippy::too_many_arguments)]
    pub(crate) async fn scan_state_pieces<S: PieceSink>(
        &self,
        state: &crate::state::State,
        path: &str,
        ranges: &[KeyRange],
        timestamp: Timestamp,
        columnar: Option<Columnar>,
        tablets: Option<&[usize]>,
        columns: Option<&[usize]>,
        filter: Option<&dyn RowGroupFilter>,
        planned: Option<&ScanPlan>,
        sink: &mut S,
    ) -> Result<ScanStatistics> {
        let (entry, data) = state.table_data(path)?;
        let schema = &entry.schema;
        let any_order = columnar.is_some_and(|c| c.any_order);
        let columnar = columnar.map(|c| c.strings);
        let project = |row: Vec<Value>| match columns {
            Some(columns) => project_row(row, columns),
            None => row,
        };
        if !schema.is_sorted() {
            // Ordered tables (held in memory): rows in the query layout,
            // `($tablet_index, $row_index)` first.
            let mut rows = Vec::new();
            let statistics =
                crate::queue::scan_queues(entry, data, ranges, timestamp, &mut |t, row| {
                    if tablets.is_none_or(|only| only.contains(&t)) {
                        rows.push((t, row));
                    }
                    Ok(true)
                })?;
            for (t, row) in rows {
                if !sink.accept(t, Piece::Row(project(row))).await? {
                    break;
                }
            }
            return Ok(statistics);
        }
        self.keep_in_memory(entry, data).await?;
        let made;
        let plan = match planned {
            Some(plan) => plan,
            None => {
                made = plan_scan(entry, data, ranges, timestamp)?;
                &made
            }
        };
        let selected = plan
            .tablets
            .iter()
            .filter(|(t, _)| tablets.is_none_or(|only| only.contains(t)));
        let key_count = schema.key_column_count();
        let key_types: Vec<_> = schema.key_columns().iter().map(|c| c.wire_type()).collect();
        let key_columns: Vec<usize> = (0..key_count).collect();
        let all_columns: Vec<usize> = (0..schema.columns().len()).collect();
        let ttl = crate::kernel::ttl::ScanTtl::new(
            entry.ttl.as_ref(),
            schema,
            columns.unwrap_or(&all_columns),
            self.fresh.resolve_latest(timestamp),
        );
        // Pieces are built of the projection, plus the TTL column when it lacks it.
        let projection = ttl
            .as_ref()
            .map_or(columns.unwrap_or(&all_columns), |t| &t.columns[..]);
        let names = table_arrow_schema(schema);
        // The columns the filter reads, with their types.
        let filtered: Vec<(usize, ValueType)> = filter
            .map(|f| {
                f.columns()
                    .iter()
                    .map(|&c| {
                        (
                            c,
                            schema
                                .columns()
                                .get(c)
                                .map_or(ValueType::Null, |c| c.wire_type()),
                        )
                    })
                    .collect()
            })
            .unwrap_or_default();
        let mut statistics = plan.statistics;
        let mut last_schema = None;
        let mut decoded = std::collections::HashSet::new();
        // The row groups met so far, each told to the sink once (a row group may meet
        // several pieces).
        let mut started = std::collections::HashSet::new();
        'tablets: for (tablet_index, tablet_ranges) in selected {
            for range in tablet_ranges {
                // Cut the range where row groups start, so that each piece decodes only the
                // row groups it meets and a visit that stops early decodes little.
                // The row groups this range meets, in chunk list order (most ranges of a point
                // query meet one). A chunk's row groups are in key order (at most a key whose
                // versions straddle two is in both): binary-search the first one it meets.
                let in_range: Vec<(usize, usize)> = plan
                    .row_groups
                    .iter()
                    .filter(|(ci, _)| {
                        let chunk = &data.chunks[*ci];
                        range.meets_keys(&chunk.min_key, &chunk.max_key)
                    })
                    .flat_map(|(ci, groups)| {
                        let chunk = &data.chunks[*ci];
                        let first = groups
                            .partition_point(|&g| range.lower.is_after(chunk.row_group_bound(g).1));
                        groups[first..]
                            .iter()
                            .take_while(|&&g| range.upper.is_after(chunk.row_group_bound(g).0))
                            .map(|&g| (*ci, g))
                            .collect::<Vec<_>>()
                    })
                    .collect();
                let in_range = if entry.enable_key_filter_for_lookup {
                    self.drop_filtered_out(data, range, in_range, &mut statistics)
                        .await?
                } else {
                    in_range
                };
                let mut cuts: Vec<KeyBound> = Vec::new();
                for &(ci, g) in &in_range {
                    let (min, _) = data.chunks[ci].row_group_bound(g);
                    let cut = KeyBound::new(min.to_vec(), false);
                    if range.lower.compare(&cut).is_lt() && cut.compare(&range.upper).is_lt() {
                        cuts.push(cut);
                    }
                }
                cuts.sort_by(|a, b| a.compare(b));
                cuts.dedup_by(|a, b| a.compare(b).is_eq());
                let mut lower = range.lower.clone();
                let mut shared = crate::clean_merge::SharedRowGroups::default();
                for upper in cuts.into_iter().chain(std::iter::once(range.upper.clone())) {
                    let piece = KeyRange {
                        lower: std::mem::replace(&mut lower, upper.clone()),
                        upper,
                    };
                    // The piece's row groups, in chunk list order (the merge's source order is
                    // commit order).
                    let meeting: Vec<(usize, usize)> = in_range
                        .iter()
                        .copied()
                        .filter(|&(ci, g)| {
                            let (min, max) = data.chunks[ci].row_group_bound(g);
                            piece.meets_keys(min, max)
                        })
                        .collect();
                    shared.keep_only(&meeting);
                    let new = meeting.iter().filter(|&&g| started.insert(g)).count();
                    if new > 0 {
                        sink.row_groups_started(new);
                    }
                    if columnar.is_some()
                        && meeting.len() == 1
                        && memory_range(data, &piece).next().is_none()
                    {
                        let (ci, g) = meeting[0];
                        let chunk = &data.chunks[ci];
                        if !chunk.row_groups.is_empty() {
                            let window = self.page_window(schema, chunk, g, &piece).await?;
                            if window.as_ref().is_some_and(|w| w.is_empty()) {
                                // The page index rules out every row of the piece.
                                decoded.insert((ci, g));
                                continue;
                            }
                            let clean = self
                                .cache
                                .clean_since(&self.objects, schema, chunk, g, window.clone())
                                .await?;
                            if clean.is_some_and(|t| t <= timestamp.0) {
                                let mut window = window;
                                if let Some(filter) = filter {
                                    let known = self
                                        .cache
                                        .statistics(&self.objects, chunk, g, &filtered)
                                        .await?;
                                    if !filter.may_match(&known) {
                                        continue;
                                    }
                                    // The filter's page window, within the key's: a part of a
                                    // clean window is clean.
                                    if let Some(span) = self
                                        .filter_window(chunk, g, filter, &filtered, &known)
                                        .await?
                                    {
                                        let rows = chunk.row_groups[g].rows as usize;
                                        let key = window.clone().unwrap_or(0..rows);
                                        let both = key.start.max(span.start)..key.end.min(span.end);
                                        if both.is_empty() {
                                            continue;
                                        }
                                        window = Some(both);
                                    }
                                }
                                decoded.insert((ci, g));
                                let rows = match &window {
                                    Some(w) => w.len(),
                                    None => chunk.row_groups[g].rows as usize,
                                };
                                statistics.rows_decoded += rows as u64;
                                let views = columnar.is_some_and(ByteStrings::views);
                                // Where the piece holds the whole row group its keys are not
                                // needed; else they are read with the projected columns, in
                                // one decode.
                                let (min, max) = chunk.row_group_bound(g);
                                let whole = !piece.lower.is_after(min) && piece.upper.is_after(max);
                                let wanted: Vec<usize> = if whole {
                                    projection.to_vec()
                                } else {
                                    key_columns.iter().chain(projection).copied().collect()
                                };
                                // A row group reaching past the piece is read again by the next.
                                let again = !piece.upper.is_after(max);
                                let mut columns = self
                                    .cache
                                    .columns(&self.objects, chunk, g, window, &wanted, views, again)
                                    .await?;
                                let (lo, hi) = if whole {
                                    (0, rows)
                                } else {
                                    let keys: Vec<_> =
                                        columns.drain(..key_count).map(|c| c.array).collect();
                                    let lo = partition_keys(&keys, &key_types, &piece.lower);
                                    let hi =
                                        partition_keys_from(&keys, &key_types, lo, &piece.upper);
                                    (lo, hi)
                                };
                                // All of the decoded columns go on as they are: their cached
                                // weights are the batch's.
                                let weight = (lo == 0 && hi == rows && ttl.is_none()).then(|| {
                                    rows as u64 + columns.iter().map(|c| c.weight()).sum::<u64>()
                                });
                                let arrays: Vec<_> = columns.into_iter().map(|c| c.array).collect();
                                if hi > lo {
                                    let batch = projected_batch(
                                        &names,
                                        projection,
                                        &arrays,
                                        lo..hi,
                                        columnar == Some(ByteStrings::ViewsOrDictionaries),
                                        &mut last_schema,
                                    )?;
                                    let tablet = *tablet_index;
                                    let batch = live_rows(batch, ttl.as_ref())?;
                                    if !hand_on(sink, tablet, batch, weight, &mut statistics)
                                        .await?
                                    {
                                        break 'tablets;
                                    }
                                }
                                continue;
                            }
                        }
                    }
                    if columnar.is_some()
                        && meeting.len() > 1
                        && memory_range(data, &piece).next().is_none()
                    {
                        // Layers of overwrites: merged column by column when all are clean.
                        let read = crate::clean_merge::PieceRead {
                            timestamp,
                            projection,
                            views: columnar.is_some_and(ByteStrings::views),
                            any_order,
                        };
                        if let Some(merged) = self
                            .merge_clean_row_groups(
                                schema,
                                data,
                                &meeting,
                                &piece,
                                read,
                                &mut shared,
                            )
                            .await?
                        {
                            decoded.extend(meeting.iter().copied());
                            statistics.rows_decoded += merged.decoded;
                            for part in &merged.parts {
                                let batch = projected_batch(
                                    &names,
                                    projection,
                                    &part.columns,
                                    0..part.rows,
                                    columnar == Some(ByteStrings::ViewsOrDictionaries),
                                    &mut last_schema,
                                )?;
                                let tablet = *tablet_index;
                                let batch = live_rows(batch, ttl.as_ref())?;
                                if !hand_on(sink, tablet, batch, None, &mut statistics).await? {
                                    break 'tablets;
                                }
                            }
                            continue;
                        }
                    }
                    let mut runs = Vec::new();
                    for &(ci, g) in &meeting {
                        decoded.insert((ci, g));
                        let chunk = &data.chunks[ci];
                        let window = self.page_window(schema, chunk, g, &piece).await?;
                        if window.as_ref().is_some_and(|w| w.is_empty()) {
                            continue;
                        }
                        let run = self
                            .cache
                            .row_group(&self.objects, schema, chunk, g, window)
                            .await?;
                        statistics.rows_decoded += run.len() as u64;
                        runs.push(run);
                    }
                    let mut sources: Vec<Box<dyn Iterator<Item = KeyGroup<'_>> + Send + '_>> = runs
                        .iter()
                        .map(|run| {
                            let slice = slice_run(run, &piece, key_count);
                            Box::new(KeyGroups::new(slice, key_count)) as _
                        })
                        .collect();
                    sources.push(Box::new(memory_range(data, &piece)));
                    for history in VersionMerge::new(key_count, sources) {
                        if let Some(row) = resolve_versions(schema, &history, timestamp) {
                            if ttl.as_ref().is_some_and(|t| !t.cut.keeps_row(&row)) {
                                continue;
                            }
                            let row = project(row);
                            statistics.rows_read += 1;
                            statistics.data_weight += row_weight(&row);
                            if !sink.accept(*tablet_index, Piece::Row(row)).await? {
                                break 'tablets;
                            }
                        }
                    }
                }
            }
        }
        statistics.row_groups.0 = decoded.len();
        statistics.chunks.0 = decoded
            .iter()
            .map(|(c, _)| *c)
            .collect::<std::collections::HashSet<_>>()
            .len();
        Ok(statistics)
    }
}

/// `batch` without the rows expired by the table's TTL, if it has one.
fn live_rows(batch: RecordBatch, ttl: Option<&crate::kernel::ttl::ScanTtl>) -> Result<RecordBatch> {
    match ttl {
        Some(t) => t.apply(batch),
        None => Ok(batch),
    }
}

/// Hands a batch of rows to `sink`, counting it as read (its data weight is `weight` when
/// known, else weighed here); false when the sink stops the scan (an empty batch is
/// skipped).
async fn hand_on<S: PieceSink>(
    sink: &mut S,
    tablet: usize,
    batch: RecordBatch,
    weight: Option<u64>,
    statistics: &mut ScanStatistics,
) -> Result<bool> {
    if batch.num_rows() == 0 {
        return Ok(true);
    }
    debug_assert!(weight.is_none_or(|w| w == batch_weight(&batch)));
    let weight = weight.unwrap_or_else(|| batch_weight(&batch));
    statistics.rows_read += batch.num_rows() as u64;
    statistics.data_weight += weight;
    sink.accept(tablet, Piece::Batch(batch, weight)).await
}

/// `row` with only `columns`, in that order.
fn project_row(mut row: Vec<Value>, columns: &[usize]) -> Vec<Value> {
    columns
        .iter()
        .enumerate()
        .map(|(i, &c)| {
            // A column asked for twice is cloned but for its last time.
            if columns[i + 1..].contains(&c) {
                row[c].clone()
            } else {
                std::mem::replace(&mut row[c], Value::Null)
            }
        })
        .collect()
}

/// What a scan hands over: a resolved row, or a slice of a clean row group with its data
/// weight.
pub(crate) enum Piece {
    Row(Vec<Value>),
    Batch(RecordBatch, u64),
}

/// Where a scan hands its pieces; `false` stops the scan.
pub(crate) trait PieceSink: Send {
    fn accept(
        &mut self,
        tablet: usize,
        piece: Piece,
    ) -> impl std::future::Future<Output = Result<bool>> + Send;

    /// Told when the scan starts on `count` more row groups (for progress displays).
    fn row_groups_started(&mut self, _count: usize) {}
}

/// A synchronous callback as a sink.
pub(crate) struct FnSink<'a>(pub(crate) &'a mut (dyn FnMut(usize, Piece) -> Result<bool> + Send));

impl PieceSink for FnSink<'_> {
    fn accept(
        &mut self,
        tablet: usize,
        piece: Piece,
    ) -> impl std::future::Future<Output = Result<bool>> + Send {
        std::future::ready((self.0)(tablet, piece))
    }
}

/// The versions of a key-sorted run whose keys lie in `range`.
fn slice_run<'a>(run: &'a [RowDelta], range: &KeyRange, key_count: usize) -> &'a [RowDelta] {
    let key_of =
        |d: &RowDelta| -> Vec<Value> { crate::kernel::chunk_ref::version_key(d, key_count) };
    let lo = run.partition_point(|d| range.lower.is_after(&key_of(d)));
    let hi = run.partition_point(|d| range.upper.is_after(&key_of(d)));
    &run[lo..hi.max(lo)]
}

/// The dynamic store's histories with keys in `range`, in key order.
fn memory_range<'a>(
    data: &'a TableData,
    range: &'a KeyRange,
) -> impl Iterator<Item = KeyGroup<'a>> + Send + 'a {
    data.sorted
        .range(KeyOrd(range.lower.prefix.clone())..)
        .skip_while(move |(k, _)| range.lower.is_after(&k.0))
        .take_while(move |(k, _)| range.upper.is_after(&k.0))
        .map(|(_, v)| v.as_slice())
}
