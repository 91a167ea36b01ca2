//! Ordered tables: every tablet is a queue of rows numbered from 0 (`$row_index`); rows are
//! appended at the end, read by `($tablet_index, $row_index)` ranges, and trimmed from the
//! front (`trim_rows`, absolute: the count is the number of leading rows removed). Numbering
//! survives trimming.
//!
//! A row has one version: the commit that appended it. System columns declared in the schema
//! are filled when the append is replayed: `$timestamp` (the commit timestamp) and
//! `$cumulative_data_weight` (the tablet's running data weight up to and including the row,
//! the column's own 8 bytes counted). Rows are assigned their tablet when the write is
//! prepared (`$tablet_index`, or one random tablet per write), so that replay is
//! deterministic. Trimmed rows leave memory when the trim is replayed and leave storage with
//! the next checkpoint (the log records that held them are collected after it).

use serde::{Deserialize, Serialize};

use dynql_core::{Value, Yson};

use crate::error::{Error, Result};
use crate::kernel::catalog::TableEntry;
use crate::kernel::timestamp::Timestamp;
use crate::log::{self, Action};
use crate::scan::{row_weight, value_weight, KeyBound, KeyRange, ScanStatistics};
use crate::state::{State, TableData};
use crate::store::{RowValues, Store};

/// The name of the column that pins a written row to a tablet.
pub const TABLET_INDEX_COLUMN: &str = "$tablet_index";

/// One tablet of an ordered table.
#[derive(Debug, Clone, Default)]
pub(crate) struct Queue {
    /// Leading rows removed by `trim_rows`: the index of the first readable row.
    pub(crate) trimmed: u64,
    /// The index of `rows[0]` (rows before it are gone from memory).
    pub(crate) first_stored: u64,
    pub(crate) rows: Vec<(Timestamp, Vec<Value>)>,
    /// Running data weight of every row appended so far.
    pub(crate) cumulative_weight: i64,
}

impl Queue {
    pub(crate) fn new(trimmed: u64) -> Queue {
        Queue {
            trimmed,
            first_stored: trimmed,
            ..Queue::default()
        }
    }

    /// The index the next appended row gets.
    pub(crate) fn row_count(&self) -> u64 {
        self.first_stored + self.rows.len() as u64
    }

    fn trim(&mut self, count: u64) {
        if count <= self.trimmed {
            return;
        }
        self.trimmed = count;
        // Storage is freed by whole chunks: the rows one commit appended go together, only
        // once all of them are trimmed (YT frees whole chunks the same way).
        let mut drop = (count.saturating_sub(self.first_stored) as usize).min(self.rows.len());
        if let Some((next, _)) = self.rows.get(drop) {
            let next = *next;
            while drop > 0 && self.rows[drop - 1].0 == next {
                drop -= 1;
            }
        }
        self.rows.drain(..drop);
        self.first_stored += drop as u64;
    }

    /// Data weight of the readable rows.
    pub(crate) fn readable_weight(&self) -> u64 {
        let skip = self.trimmed.saturating_sub(self.first_stored) as usize;
        self.rows
            .iter()
            .skip(skip)
            .map(|(_, r)| row_weight(r))
            .sum()
    }
}

/// What the catalog shows of a tablet of an ordered table (`@tablets`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct QueueTablet {
    pub index: usize,
    /// Leading rows removed (`trimmed_row_count`).
    pub trimmed_row_count: u64,
    /// Rows ever appended, trimmed ones included (the next `$row_index`).
    pub row_count: u64,
}

/// The queues of a newly created ordered table.
pub(crate) fn new_queues(entry: &TableEntry) -> Vec<Queue> {
    (0..entry.tablet_count)
        .map(|i| Queue::new(entry.trimmed_row_counts.get(i).copied().unwrap_or(0)))
        .collect()
}

/// Appends one replayed row to its tablet, filling the system columns.
pub(crate) fn append(
    entry: &TableEntry,
    data: &mut TableData,
    tablet: usize,
    values: Vec<Option<Value>>,
    timestamp: Timestamp,
) -> std::result::Result<(), String> {
    if data.queues.len() < entry.tablet_count {
        data.queues.resize_with(entry.tablet_count, Queue::default);
    }
    let Some(queue) = data
        .queues
        .get_mut(tablet)
        .filter(|_| tablet < entry.tablet_count)
    else {
        return Err(format!(
            "it appends to tablet {tablet}, but the table has {} tablets",
            entry.tablet_count
        ));
    };
    let schema = &entry.schema;
    let mut row: Vec<Value> = values
        .into_iter()
        .map(|v| v.unwrap_or(Value::Null))
        .collect();
    let mut cumulative = None;
    for (i, c) in schema.columns().iter().enumerate() {
        match c.name.as_str() {
            "$timestamp" => row[i] = Value::Uint64(timestamp.0),
            "$cumulative_data_weight" => {
                row[i] = Value::Int64(0);
                cumulative = Some(i);
            }
            _ => {}
        }
    }
    let weight = row_weight(&row) as i64;
    queue.cumulative_weight += weight;
    if let Some(i) = cumulative {
        row[i] = Value::Int64(queue.cumulative_weight);
    }
    queue.rows.push((timestamp, row));
    Ok(())
}

/// Applies a replayed trim.
pub(crate) fn trim(
    data: &mut TableData,
    tablet: usize,
    count: u64,
) -> std::result::Result<(), String> {
    let tablets = data.queues.len();
    let q = data
        .queues
        .get_mut(tablet)
        .ok_or_else(|| format!("it trims tablet {tablet}, but the table has {tablets} tablets"))?;
    q.trim(count);
    Ok(())
}

/// Applies a replayed reshard of tablets `first..=last` into `tablet_count` tablets: growing
/// adds empty tablets after the range's last one; shrinking appends the removed tablets' rows,
/// renumbered, to the last kept tablet.
pub(crate) fn reshard(
    data: &mut TableData,
    first: usize,
    last: usize,
    tablet_count: usize,
    trimmed_row_counts: &[u64],
) {
    let span = last + 1 - first;
    if tablet_count >= span {
        let new = trimmed_row_counts.iter().map(|t| Queue::new(*t));
        let at = (last + 1).min(data.queues.len());
        data.queues.splice(at..at, new);
        return;
    }
    let keep_end = first + tablet_count; // exclusive
    let removed: Vec<Queue> = data
        .queues
        .drain(keep_end..=last.min(data.queues.len() - 1))
        .collect();
    if let Some(target) = data.queues.get_mut(keep_end - 1) {
        for q in removed {
            for (ts, row) in q.rows {
                target.rows.push((ts, row));
            }
        }
    }
}

/// Retention of an ordered table at `now`, as trims (a row has one version, so the settings
/// read: `min_data_versions > 0` keeps everything; otherwise rows older than `min_data_ttl`
/// may go when `max_data_versions = 0`, and rows older than `max_data_ttl` otherwise). Rows go
/// by whole commits, from the front of each tablet, and only while every row of the commit has
/// expired.
pub(crate) fn expired_trims(
    path: &str,
    entry: &TableEntry,
    data: &TableData,
    now: Timestamp,
) -> Vec<Action> {
    let r = &entry.retention;
    if r.min_data_versions > 0 {
        return vec![];
    }
    let ttl = if r.max_data_versions == 0 {
        r.min_data_ttl
    } else {
        r.max_data_ttl.max(r.min_data_ttl)
    };
    let now_ms = crate::kernel::retention::timestamp_ms(now);
    let mut trims = Vec::new();
    for (t, q) in data.queues.iter().enumerate() {
        let skip = q.trimmed.saturating_sub(q.first_stored) as usize;
        let expired = q.rows[skip.min(q.rows.len())..]
            .iter()
            .take_while(|(ts, _)| {
                crate::kernel::retention::timestamp_ms(*ts).saturating_add(ttl) <= now_ms
            })
            .count();
        if expired > 0 {
            trims.push(Action::TrimRows {
                path: path.into(),
                table_id: entry.id.clone(),
                tablet_index: t,
                trimmed_row_count: q.first_stored + (skip + expired) as u64,
            });
        }
    }
    trims
}

/// Replays `alter-table --dynamic true` on an ordered table: what is still stored becomes
/// readable again, numbered from 0 (YT loses trimming across a static round trip).
pub(crate) fn forget_trimming(data: &mut TableData) {
    for q in &mut data.queues {
        q.trimmed = 0;
        q.first_stored = 0;
    }
}

/// Replays a schema change that appended `added` columns: existing rows read null there.
pub(crate) fn widen(data: &mut TableData, added: usize) {
    for q in &mut data.queues {
        for (_, row) in &mut q.rows {
            row.extend(std::iter::repeat_n(Value::Null, added));
        }
    }
}

/// A logged row of an ordered table: the written columns plus `$tablet_index`.
pub(crate) fn encode_row(entry: &TableEntry, tablet: usize, values: &[Option<Value>]) -> String {
    let text = log::encode_row(&entry.schema, values);
    // `{a=1}` -> `{"$tablet_index"=3;a=1}`
    let tablet = format!("\"{TABLET_INDEX_COLUMN}\"={tablet}");
    match text.strip_prefix('{') {
        Some("}") => format!("{{{tablet}}}"),
        Some(rest) => format!("{{{tablet};{rest}"),
        None => text,
    }
}

/// Decodes [`encode_row`]'s output: the tablet (0 when absent) and the row values.
pub(crate) fn decode_row(entry: &TableEntry, text: &str) -> Result<(usize, Vec<Option<Value>>)> {
    let node = dynql_core::yson::parse(text.as_bytes()).map_err(|e| Error::Corrupt {
        path: log::LOG_DIR.into(),
        message: e.to_string(),
    })?;
    let Yson::Map(mut entries) = node else {
        return Err(Error::Corrupt {
            path: log::LOG_DIR.into(),
            message: "a logged row is not a map".into(),
        });
    };
    let mut tablet = 0;
    entries.retain(|(k, v)| {
        if k == TABLET_INDEX_COLUMN.as_bytes() {
            if let Yson::Int64(t) = v {
                tablet = (*t).max(0) as usize;
            }
            false
        } else {
            true
        }
    });
    let rest = dynql_core::yson::to_text(&Yson::Map(entries));
    Ok((tablet, log::decode_row(&entry.schema, &rest)?))
}

/// Visits the rows of an ordered table in `ranges` of `($tablet_index, $row_index)` as of
/// `timestamp`, as query rows (`$tablet_index`, `$row_index`, data columns), tablet by tablet.
pub(crate) fn scan_queues(
    _entry: &TableEntry,
    data: &TableData,
    ranges: &[KeyRange],
    timestamp: Timestamp,
    sink: &mut dyn FnMut(usize, Vec<Value>) -> Result<bool>,
) -> Result<ScanStatistics> {
    let mut statistics = ScanStatistics {
        tablets: (0, data.queues.len()),
        ..ScanStatistics::default()
    };
    let key = |t: usize, i: u64| [Value::Int64(t as i64), Value::Int64(i as i64)];
    for (t, queue) in data.queues.iter().enumerate() {
        let tablet = KeyRange {
            lower: KeyBound::new(vec![Value::Int64(t as i64)], false),
            upper: KeyBound::new(vec![Value::Int64(t as i64)], true),
        };
        let clipped: Vec<KeyRange> = ranges.iter().filter_map(|r| r.intersect(&tablet)).collect();
        if clipped.is_empty() {
            continue;
        }
        statistics.tablets.0 += 1;
        // Readable rows: not trimmed, committed by the read.
        let skip = queue.trimmed.saturating_sub(queue.first_stored) as usize;
        let rows = &queue.rows[skip.min(queue.rows.len())..];
        let rows = &rows[..rows.partition_point(|(ts, _)| *ts <= timestamp)];
        let first = queue.first_stored + skip as u64;
        for range in &clipped {
            let lo = partition(rows.len(), |i| {
                range.lower.is_after(&key(t, first + i as u64))
            });
            let hi = partition(rows.len(), |i| {
                range.upper.is_after(&key(t, first + i as u64))
            });
            for (i, (_, row)) in rows.iter().enumerate().take(hi).skip(lo) {
                let mut out = Vec::with_capacity(row.len() + 2);
                out.extend(key(t, first + i as u64));
                out.extend(row.iter().cloned());
                statistics.rows_read += 1;
                statistics.data_weight += row_weight(row);
                if !sink(t, out)? {
                    return Ok(statistics);
                }
            }
        }
    }
    Ok(statistics)
}

/// The first index in `0..n` where `before` turns false (it must be true, then false).
fn partition(n: usize, before: impl Fn(usize) -> bool) -> usize {
    let (mut lo, mut hi) = (0, n);
    while lo < hi {
        let mid = lo + (hi - lo) / 2;
        if before(mid) {
            lo = mid + 1;
        } else {
            hi = mid;
        }
    }
    lo
}

/// An append checked against the state it was prepared on, with what its commit re-checks.
struct PreparedAppend {
    table_id: String,
    schema: dynql_core::TableSchema,
    /// Data weight added per tablet.
    added: Vec<u64>,
    action: Action,
}

/// The data weight one appended row adds to its tablet: system columns (filled on replay)
/// count 8 bytes each.
pub(crate) fn append_weight(schema: &dynql_core::TableSchema, values: &[Option<Value>]) -> u64 {
    let system = schema
        .columns()
        .iter()
        .filter(|c| c.name.starts_with('$'))
        .count() as u64;
    1 + 8 * system + values.iter().flatten().map(value_weight).sum::<u64>()
}

impl Store {
    /// Appends rows to an ordered table: each to the tablet it names, the others to one
    /// random tablet. Returns the commit timestamp.
    ///
    /// The commit re-checks the table against the state it commits on (see
    /// [`crate::validate`]): a reshard, freeze, unmount, removal or schema change that wins the
    /// race makes the append fail, never vanish.
    pub async fn append_rows(
        &self,
        path: &str,
        rows: Vec<(Option<usize>, RowValues)>,
    ) -> Result<Timestamp> {
        let prepared = self.prepare_append(path, rows).await?;
        self.commit(|state| {
            let (entry, data) =
                crate::validate::writable_table(state, path, &prepared.table_id, &prepared.schema)?;
            crate::validate::check_append(entry, data, path, &prepared.added)?;
            Ok(vec![prepared.action.clone()])
        })
        .await
    }

    /// Stages an append in a transaction (see [`Store::append_rows`]); its commit re-checks
    /// it the same way.
    pub async fn append_rows_in(
        &self,
        transaction_id: &str,
        path: &str,
        rows: Vec<(Option<usize>, RowValues)>,
    ) -> Result<()> {
        let prepared = self.prepare_append(path, rows).await?;
        self.stage(transaction_id, vec![prepared.action]).await
    }

    async fn prepare_append(
        &self,
        path: &str,
        rows: Vec<(Option<usize>, RowValues)>,
    ) -> Result<PreparedAppend> {
        let state = self.refresh().await?;
        let (entry, data) = state.table_data(path)?;
        crate::tablets::check_writable(entry, path)?;
        if entry.schema.is_sorted() {
            return Err(Error::Invalid(format!(
                "{path} is a sorted table: use insert_rows"
            )));
        }
        // One random tablet for the rows that name none.
        let random =
            self.fresh
                .id()
                .bytes()
                .fold(0u64, |h, b| h.wrapping_mul(31).wrapping_add(b as u64)) as usize
                % entry.tablet_count.max(1);
        let mut logged = Vec::with_capacity(rows.len());
        let mut added = vec![0u64; entry.tablet_count];
        for (n, (tablet, values)) in rows.iter().enumerate() {
            // Also checks the row's width.
            crate::validate::row(entry, crate::kernel::mvcc::WriteKind::Overwrite, values)
                .map_err(|fault| fault.of_row(path, n))?;
            let tablet = tablet.unwrap_or(random);
            if tablet >= entry.tablet_count {
                return Err(Error::Invalid(format!(
                    "Invalid $tablet_index {tablet}: the table has {} tablets",
                    entry.tablet_count
                )));
            }
            added[tablet] += append_weight(&entry.schema, values);
            logged.push(encode_row(entry, tablet, values));
        }
        // Checked here for an early error, and again at commit against the state it commits on.
        crate::validate::check_append(entry, data, path, &added)?;
        Ok(PreparedAppend {
            table_id: entry.id.clone(),
            schema: entry.schema.clone(),
            added,
            action: Action::WriteRows {
                path: path.into(),
                table_id: entry.id.clone(),
                kind: crate::kernel::mvcc::WriteKind::Overwrite,
                aggregate: false,
                rows: logged,
                chunk: None,
                chunk_checksum: None,
            },
        })
    }

    /// Removes the first `trimmed_row_count` rows of a tablet of an ordered table (absolute:
    /// a count at or below the current one changes nothing). Outside transactions.
    ///
    /// # Errors
    /// A sorted table, a tablet index out of range, or a count beyond the rows written.
    pub async fn trim_rows(&self, path: &str, tablet: usize, trimmed_row_count: u64) -> Result<()> {
        self.commit(|state: &State| {
            let (entry, data) = state.table_data(path)?;
            if entry.schema.is_sorted() {
                return Err(Error::Invalid(format!(
                    "trim_rows needs an ordered table; {path} is sorted"
                )));
            }
            crate::tablets::check_writable(entry, path)?;
            let queue = data.queues.get(tablet).ok_or_else(|| {
                Error::Invalid(format!(
                    "Invalid tablet index {tablet}: {path} has {} tablets",
                    entry.tablet_count
                ))
            })?;
            if trimmed_row_count > queue.row_count() {
                return Err(Error::Invalid(format!(
                    "Cannot trim tablet {tablet} of {path} to {trimmed_row_count} rows: it has only {} rows",
                    queue.row_count()
                )));
            }
            if trimmed_row_count <= queue.trimmed {
                return Ok(vec![]);
            }
            Ok(vec![Action::TrimRows {
                path: path.into(),
                table_id: entry.id.clone(),
                tablet_index: tablet,
                trimmed_row_count,
            }])
        })
        .await?;
        Ok(())
    }

    /// The tablets of an ordered table: trimmed and total row counts.
    pub async fn queue_tablets(&self, path: &str) -> Result<Vec<QueueTablet>> {
        let state = self.refresh().await?;
        let (_, data) = state.table_data(path)?;
        Ok(data
            .queues
            .iter()
            .enumerate()
            .map(|(index, q)| QueueTablet {
                index,
                trimmed_row_count: q.trimmed,
                row_count: q.row_count(),
            })
            .collect())
    }
}
