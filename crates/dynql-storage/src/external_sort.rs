//! The external sort of a bulk write: rows arrive in any order, in batches, and leave sorted
//! by key with each key once (its last row in input order), in memory bounded by a budget.
//!
//! ```text
//! push(batch) ─▶ buffered batches ── budget reached ──▶ sort ─▶ spill run (temp file)
//! finish()    ─▶ last run sorted in memory ─┬─▶ k-way merge of the runs ─▶ sorted batches
//!                spilled runs (1..n) ───────┘   (equal keys: the later run's row wins)
//! ```
//!
//! Keys are compared as [`crate::sort_keys`] orders them: YT's order of keys.
//!
//! Spill files are anonymous temporary files (`tempfile::tempfile`, in `TMPDIR`): the
//! operating system removes them when they are closed, so a killed process leaves none
//! behind.

use std::fs::File;
use std::io::{BufReader, BufWriter, Seek, SeekFrom};
use std::sync::Arc;

use arrow::compute::interleave_record_batch;
use arrow::datatypes::SchemaRef;
use arrow::record_batch::RecordBatch;
use arrow::row::Rows;
use arrow_ipc::reader::StreamReader;
use arrow_ipc::writer::StreamWriter;

use crate::error::{Error, Result};
use crate::sort_keys::{
    integer_keys, integer_keys_rise, last_of_each_integer_key, last_of_each_key, SortKeys,
};

/// The memory a bulk write's sort buffers by default before it spills a run.
pub const DEFAULT_SORT_MEMORY: usize = 256 << 20;

/// Runs sorted and spilled at once, each on a thread of its own, while the next fills: the
/// sort of a run and the write of its file take longer than reading its rows.
const SPILLS_IN_FLIGHT: usize = 2;

/// Rows per sorted batch the sort gives (and per batch of a spill file).
const SORTED_BATCH_ROWS: usize = 16 * 1024;

/// Bytes per buffered row the sort itself needs beside the rows (sort keys, positions),
/// counted against the budget.
const SORT_BYTES_PER_ROW: usize = 64;

/// Sorts rows of a table by key (see the module docs) in bounded memory.
///
/// A full buffer is sorted and spilled on a thread of its own while the next one fills (the
/// caller goes on converting input on the other core), [`SPILLS_IN_FLIGHT`] at once, so each
/// buffer is a third of the budget.
pub(crate) struct ExternalSorter {
    schema: SchemaRef,
    keys: Arc<SortKeys>,
    memory: usize,
    buffered: Vec<RecordBatch>,
    buffered_bytes: usize,
    /// Spilled runs, oldest first: each a stream of sorted batches, each key once.
    runs: Vec<File>,
    /// The runs being spilled, oldest first (at most [`SPILLS_IN_FLIGHT`]): each its file
    /// and the rows it folded.
    spilling: std::collections::VecDeque<std::thread::JoinHandle<Result<(File, u64)>>>,
    rows: u64,
    folded: u64,
}

impl ExternalSorter {
    /// A sorter of rows in `schema` (key columns first) buffering about `memory` bytes.
    pub(crate) fn new(schema: SchemaRef, key_count: usize, memory: usize) -> Result<Self> {
        Ok(ExternalSorter {
            keys: Arc::new(SortKeys::new(&schema, key_count)?),
            schema,
            memory: memory.max(1),
            buffered: Vec::new(),
            buffered_bytes: 0,
            runs: Vec::new(),
            spilling: Default::default(),
            rows: 0,
            folded: 0,
        })
    }

    /// Rows pushed so far.
    pub(crate) fn rows(&self) -> u64 {
        self.rows
    }

    /// Runs spilled so far (or being spilled).
    pub(crate) fn spilled_runs(&self) -> usize {
        self.runs.len() + self.spilling.len()
    }

    /// Adds rows; a row given after another of the same key replaces it.
    #[cfg(test)]
    pub(crate) fn push(&mut self, batch: RecordBatch) -> Result<()> {
        self.push_together(vec![batch])
    }

    /// Adds rows given together (the parts of one input, in order; a row given after
    /// another of the same key replaces it): the buffer may be spilled before them, never
    /// between them.
    pub(crate) fn push_together(&mut self, batches: Vec<RecordBatch>) -> Result<()> {
        let batches: Vec<RecordBatch> = batches.into_iter().filter(|b| b.num_rows() > 0).collect();
        if batches.is_empty() {
            return Ok(());
        }
        let bytes: usize = batches
            .iter()
            .map(|b| b.get_array_memory_size() + b.num_rows() * SORT_BYTES_PER_ROW)
            .sum();
        // The buffer and the runs being sorted share the budget. A full buffer is spilled
        // when more rows come (not as it fills): rows that all fit in one push (a large
        // insert) are sorted in memory at the end, never written to a file.
        if !self.buffered.is_empty()
            && self.buffered_bytes + bytes > self.memory / (SPILLS_IN_FLIGHT + 1)
        {
            self.spill()?;
        }
        self.buffered_bytes += bytes;
        for batch in batches {
            self.rows += batch.num_rows() as u64;
            self.buffered.push(batch);
        }
        Ok(())
    }

    /// Hands the buffered rows to a thread that sorts them into a new spill file (after the
    /// oldest spill is done when [`SPILLS_IN_FLIGHT`] are running).
    fn spill(&mut self) -> Result<()> {
        if self.spilling.len() >= SPILLS_IN_FLIGHT {
            self.wait_for_oldest_spill()?;
        }
        let batches = std::mem::take(&mut self.buffered);
        self.buffered_bytes = 0;
        let (keys, schema) = (self.keys.clone(), self.schema.clone());
        let spilling = std::thread::Builder::new()
            .name("dynql-sort-spill".into())
            .spawn(move || write_run(&keys, &schema, batches))
            .map_err(spill_error)?;
        self.spilling.push_back(spilling);
        Ok(())
    }

    /// Waits for the oldest spill: runs are kept in the order their rows came, so that a
    /// later row of a key wins in the merge.
    fn wait_for_oldest_spill(&mut self) -> Result<()> {
        if let Some(spilling) = self.spilling.pop_front() {
            let (file, folded) = spilling
                .join()
                .map_err(|_| Error::Internal("a sort spill thread panicked".into()))??;
            self.runs.push(file);
            self.folded += folded;
        }
        Ok(())
    }

    /// The rows sorted by key, each key once.
    pub(crate) fn finish(mut self) -> Result<SortedRows> {
        while !self.spilling.is_empty() {
            self.wait_for_oldest_spill()?;
        }
        let last = SortedRun::new(&self.keys, std::mem::take(&mut self.buffered))?;
        self.folded += last.folded;
        if self.runs.is_empty() {
            return Ok(SortedRows {
                inner: Sorted::Memory(last),
                folded: self.folded,
            });
        }
        let mut sources: Vec<Source> = Vec::with_capacity(self.runs.len() + 1);
        for file in self.runs {
            sources.push(Source::Spilled(StreamReader::try_new(
                BufReader::new(file),
                None,
            )?));
        }
        sources.push(Source::Memory(last));
        Ok(SortedRows {
            inner: Sorted::Merge(Merge::new(self.keys, sources)?),
            folded: self.folded,
        })
    }
}

/// Sorts `batches` and writes them to an anonymous temporary file as an IPC stream, rewound
/// for reading; also returns how many rows repeated a key.
fn write_run(
    keys: &SortKeys,
    schema: &SchemaRef,
    batches: Vec<RecordBatch>,
) -> Result<(File, u64)> {
    let mut run = SortedRun::new(keys, batches)?;
    let file = tempfile::tempfile().map_err(spill_error)?;
    let mut writer = StreamWriter::try_new(BufWriter::new(file), schema)?;
    while let Some(batch) = run.next_batch()? {
        writer.write(&batch)?;
    }
    writer.finish()?;
    let mut file = writer
        .into_inner()?
        .into_inner()
        .map_err(|e| spill_error(e.into_error()))?;
    file.seek(SeekFrom::Start(0)).map_err(spill_error)?;
    Ok((file, run.folded))
}

fn spill_error(e: std::io::Error) -> Error {
    Error::Spill { source: e }
}

/// The sorted rows of an [`ExternalSorter`], batch by batch.
pub(crate) struct SortedRows {
    inner: Sorted,
    folded: u64,
}

enum Sorted {
    Memory(SortedRun),
    Merge(Merge),
}

impl SortedRows {
    /// The next batch of rows (keys increasing across batches); `None` at the end.
    pub(crate) fn next_batch(&mut self) -> Result<Option<RecordBatch>> {
        match &mut self.inner {
            Sorted::Memory(run) => run.next_batch(),
            Sorted::Merge(merge) => merge.next_batch(),
        }
    }

    /// Gives the sorted batches from a thread of its own (the merge), so that the caller
    /// encodes them on another core; the thread returns the count of folded rows.
    pub(crate) fn in_background(
        mut self,
    ) -> Result<(
        tokio::sync::mpsc::Receiver<Result<RecordBatch>>,
        std::thread::JoinHandle<u64>,
    )> {
        let (sender, receiver) = tokio::sync::mpsc::channel(2);
        let merging = std::thread::Builder::new()
            .name("dynql-sort-merge".into())
            .spawn(move || {
                // Stop at the end, after an error, or when the receiver is gone.
                while let Some(next) = self.next_batch().transpose() {
                    let failed = next.is_err();
                    if sender.blocking_send(next).is_err() || failed {
                        break;
                    }
                }
                self.folded()
            })
            .map_err(spill_error)?;
        Ok((receiver, merging))
    }

    /// Rows dropped because a later row had the same key (so far: the merge finds the
    /// repeats across runs as it goes).
    pub(crate) fn folded(&self) -> u64 {
        match &self.inner {
            Sorted::Memory(_) => self.folded,
            Sorted::Merge(merge) => self.folded + merge.folded,
        }
    }
}

/// Buffered batches and the order of their rows by key (each key's last row).
struct SortedRun {
    batches: Vec<RecordBatch>,
    order: RunOrder,
    folded: u64,
}

/// How a run's rows leave in key order.
enum RunOrder {
    /// As given: their keys already rise strictly (a sorted input, the usual bulk load), so
    /// they leave as slices of the batches, nothing sorted or copied. At row `row` of
    /// batch `batch`.
    AsGiven { batch: usize, row: usize },
    /// Picked at positions (batch, row), each key's last row in key order; `next` is the
    /// next position to give. The batches are the run's rows regrouped by the sorted batch
    /// they go to (see [`group_by_sorted_batch`]).
    Picked { order: Vec<(u32, u32)>, next: usize },
}

/// Positions of rows in a list of batches: (batch, row) each.
type RowPositions = Vec<(u32, u32)>;

/// Rows of a run regrouped at a time (an input batch, or a slice of a larger one): small
/// enough to stay in the processor's cache while they are taken apart.
const GROUPING_ROWS: usize = 8 * 1024;

/// The rows of `batches` that `kept` names (positions in the batches one after another, in
/// key order) regrouped by the sorted batch of [`SORTED_BATCH_ROWS`] each goes to, and where
/// each kept row now is (grouped batch, row), in key order.
///
/// A sorted batch gathered straight from the run would take each value from anywhere in it,
/// a cache miss per value. Regrouped, each slice of input is taken apart while it is in
/// cache, and each sorted batch then gathers from a few small groups: twice the copying,
/// a fraction of the time.
fn group_by_sorted_batch(
    batches: Vec<RecordBatch>,
    kept: &[u32],
) -> Result<(Vec<RecordBatch>, RowPositions)> {
    let total: usize = batches.iter().map(RecordBatch::num_rows).sum();
    // Where each input row goes in key order (u32::MAX: replaced by a later row).
    let mut destination = vec![u32::MAX; total];
    for (p, &i) in kept.iter().enumerate() {
        destination[i as usize] = p as u32;
    }
    let group_count = kept.len().div_ceil(SORTED_BATCH_ROWS);
    let mut grouped = Vec::new();
    let mut order = vec![(0u32, 0u32); kept.len()];
    let mut first = 0;
    for batch in batches {
        for start in (0..batch.num_rows()).step_by(GROUPING_ROWS) {
            let slice = batch.slice(start, GROUPING_ROWS.min(batch.num_rows() - start));
            let destinations = &destination[first + start..first + start + slice.num_rows()];
            // A counting sort of the slice's kept rows by sorted batch, input order kept.
            let mut next = vec![0u32; group_count + 1];
            for &d in destinations.iter().filter(|&&d| d != u32::MAX) {
                next[d as usize / SORTED_BATCH_ROWS + 1] += 1;
            }
            for g in 1..next.len() {
                next[g] += next[g - 1];
            }
            let mut indices = vec![0u32; next[group_count] as usize];
            let at = grouped.len() as u32;
            for (r, &d) in destinations.iter().enumerate() {
                if d != u32::MAX {
                    let slot = &mut next[d as usize / SORTED_BATCH_ROWS];
                    indices[*slot as usize] = r as u32;
                    order[d as usize] = (at, *slot);
                    *slot += 1;
                }
            }
            let indices = arrow::array::UInt32Array::from(indices);
            grouped.push(arrow::compute::take_record_batch(&slice, &indices)?);
        }
        first += batch.num_rows();
    }
    Ok((grouped, order))
}

impl SortedRun {
    fn new(keys: &SortKeys, batches: Vec<RecordBatch>) -> Result<SortedRun> {
        if integer_keys_rise(keys.key_count, &batches) {
            return Ok(SortedRun {
                batches,
                order: RunOrder::AsGiven { batch: 0, row: 0 },
                folded: 0,
            });
        }
        let total: usize = batches.iter().map(RecordBatch::num_rows).sum();
        let kept = match integer_keys(keys.key_count, &batches) {
            Some(packed) => last_of_each_integer_key(packed),
            None => {
                let mut rows = keys.converter.empty_rows(total, total * 16);
                for b in &batches {
                    keys.converter.append(&mut rows, &keys.columns(b))?;
                }
                last_of_each_key(&rows)
            }
        };
        let folded = (total - kept.len()) as u64;
        let (batches, order) = group_by_sorted_batch(batches, &kept)?;
        Ok(SortedRun {
            batches,
            order: RunOrder::Picked { order, next: 0 },
            folded,
        })
    }

    fn next_batch(&mut self) -> Result<Option<RecordBatch>> {
        match &mut self.order {
            RunOrder::AsGiven { batch, row } => {
                while let Some(b) = self.batches.get(*batch) {
                    if *row < b.num_rows() {
                        let len = SORTED_BATCH_ROWS.min(b.num_rows() - *row);
                        let slice = b.slice(*row, len);
                        *row += len;
                        return Ok(Some(slice));
                    }
                    *batch += 1;
                    *row = 0;
                }
                Ok(None)
            }
            RunOrder::Picked { order, next } => {
                if *next >= order.len() {
                    return Ok(None);
                }
                let end = (*next + SORTED_BATCH_ROWS).min(order.len());
                let indices: Vec<(usize, usize)> = order[*next..end]
                    .iter()
                    .map(|&(b, r)| (b as usize, r as usize))
                    .collect();
                *next = end;
                let refs: Vec<&RecordBatch> = self.batches.iter().collect();
                Ok(Some(interleave_record_batch(&refs, &indices)?))
            }
        }
    }
}

/// A sorted run the merge reads.
enum Source {
    Spilled(StreamReader<BufReader<File>>),
    Memory(SortedRun),
}

impl Source {
    fn next_batch(&mut self) -> Result<Option<RecordBatch>> {
        match self {
            Source::Spilled(reader) => reader.next().transpose().map_err(Error::from),
            Source::Memory(run) => run.next_batch(),
        }
    }
}

/// Where the merge is in one run: its current batch, that batch's sort keys, the next row.
struct Cursor {
    source: Source,
    batch: RecordBatch,
    keys: Rows,
    row: usize,
    /// The batch's index in [`Merge::pool`].
    slot: usize,
}

/// A k-way merge of sorted runs (each key once per run); of equal keys the row of the
/// latest run wins.
struct Merge {
    keys: Arc<SortKeys>,
    cursors: Vec<Cursor>,
    /// Indices of live cursors, a binary min-heap by (current key, run index).
    heap: Vec<usize>,
    /// The batches the next output batch takes rows from.
    pool: Vec<RecordBatch>,
    out: Vec<(usize, usize)>,
    folded: u64,
}

impl Merge {
    fn new(keys: Arc<SortKeys>, sources: Vec<Source>) -> Result<Merge> {
        let mut merge = Merge {
            keys,
            cursors: Vec::with_capacity(sources.len()),
            heap: Vec::with_capacity(sources.len()),
            pool: Vec::new(),
            out: Vec::with_capacity(SORTED_BATCH_ROWS),
            folded: 0,
        };
        for mut source in sources {
            let Some(batch) = source.next_batch()? else {
                continue;
            };
            let keys = merge.keys.rows(&batch)?;
            merge.pool.push(batch.clone());
            merge.heap.push(merge.cursors.len());
            merge.cursors.push(Cursor {
                source,
                batch,
                keys,
                row: 0,
                slot: merge.pool.len() - 1,
            });
        }
        for i in (0..merge.heap.len() / 2).rev() {
            merge.sift_down(i);
        }
        Ok(merge)
    }

    /// Whether cursor `a`'s row goes before cursor `b`'s.
    fn before(&self, a: usize, b: usize) -> bool {
        let (x, y) = (&self.cursors[a], &self.cursors[b]);
        x.keys
            .row(x.row)
            .cmp(&y.keys.row(y.row))
            .then(a.cmp(&b))
            .is_lt()
    }

    fn same_key(&self, a: usize, b: usize) -> bool {
        let (x, y) = (&self.cursors[a], &self.cursors[b]);
        x.keys.row(x.row) == y.keys.row(y.row)
    }

    fn sift_down(&mut self, mut i: usize) {
        loop {
            let (l, r) = (2 * i + 1, 2 * i + 2);
            let mut least = i;
            if l < self.heap.len() && self.before(self.heap[l], self.heap[least]) {
                least = l;
            }
            if r < self.heap.len() && self.before(self.heap[r], self.heap[least]) {
                least = r;
            }
            if least == i {
                return;
            }
            self.heap.swap(i, least);
            i = least;
        }
    }

    fn next_batch(&mut self) -> Result<Option<RecordBatch>> {
        while self.out.len() < SORTED_BATCH_ROWS && !self.heap.is_empty() {
            let top = self.heap[0];
            // A later run holding the same key is the next in the heap: one of the root's
            // children. Its row replaces this one.
            let superseded = self.heap[1..self.heap.len().min(3)]
                .iter()
                .any(|&c| self.same_key(top, c));
            if superseded {
                self.folded += 1;
            } else {
                let c = &self.cursors[top];
                self.out.push((c.slot, c.row));
            }
            let c = &mut self.cursors[top];
            c.row += 1;
            if c.row == c.batch.num_rows() {
                match c.source.next_batch()? {
                    Some(batch) => {
                        c.keys = self.keys.rows(&batch)?;
                        self.pool.push(batch.clone());
                        c.batch = batch;
                        c.row = 0;
                        c.slot = self.pool.len() - 1;
                    }
                    None => {
                        let last = self.heap.len() - 1;
                        self.heap.swap(0, last);
                        self.heap.pop();
                    }
                }
            }
            self.sift_down(0);
        }
        if self.out.is_empty() {
            return Ok(None);
        }
        let refs: Vec<&RecordBatch> = self.pool.iter().collect();
        let batch = interleave_record_batch(&refs, &self.out)?;
        self.out.clear();
        // Keep only the batches the cursors still read.
        self.pool.clear();
        for &i in &self.heap {
            let c = &mut self.cursors[i];
            self.pool.push(c.batch.clone());
            c.slot = self.pool.len() - 1;
        }
        Ok(Some(batch))
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use arrow::array::{AsArray, BinaryArray, Float64Array, Int64Array};
    use arrow::datatypes::{DataType, Field, Float64Type, Schema};
    use dynql_core::{compare_rows, Value};

    use super::*;

    fn schema() -> SchemaRef {
        Arc::new(Schema::new(vec![
            Field::new("k", DataType::Int64, true),
            Field::new("s", DataType::Binary, true),
            Field::new("v", DataType::Int64, true),
        ]))
    }

    fn batch(rows: &[(i64, &str, i64)]) -> RecordBatch {
        RecordBatch::try_new(
            schema(),
            vec![
                Arc::new(Int64Array::from_iter_values(rows.iter().map(|r| r.0))),
                Arc::new(BinaryArray::from_iter_values(
                    rows.iter().map(|r| r.1.as_bytes()),
                )),
                Arc::new(Int64Array::from_iter_values(rows.iter().map(|r| r.2))),
            ],
        )
        .unwrap()
    }

    fn drain(sorted: &mut SortedRows) -> Vec<(i64, Vec<u8>, i64)> {
        let mut out = Vec::new();
        while let Some(b) = sorted.next_batch().unwrap() {
            assert!(b.num_rows() <= SORTED_BATCH_ROWS);
            let k = b.column(0).as_primitive::<arrow::datatypes::Int64Type>();
            let s = b.column(1).as_binary::<i32>();
            let v = b.column(2).as_primitive::<arrow::datatypes::Int64Type>();
            for i in 0..b.num_rows() {
                out.push((k.value(i), s.value(i).to_vec(), v.value(i)));
            }
        }
        out
    }

    /// Sorts `input` (split in batches of `per_batch`) with `memory` bytes of budget, against a
    /// `BTreeMap` of the last row per key.
    fn check(input: &[(i64, String, i64)], per_batch: usize, memory: usize, key_count: usize) {
        let mut sorter = ExternalSorter::new(schema(), key_count, memory).unwrap();
        for part in input.chunks(per_batch.max(1)) {
            let rows: Vec<(i64, &str, i64)> =
                part.iter().map(|r| (r.0, r.1.as_str(), r.2)).collect();
            sorter.push(batch(&rows)).unwrap();
        }
        let mut model: BTreeMap<Vec<Value>, (i64, Vec<u8>, i64)> = BTreeMap::new();
        for r in input {
            let key: Vec<Value> =
                [Value::Int64(r.0), Value::string(r.1.as_str())][..key_count].to_vec();
            model.insert(key, (r.0, r.1.as_bytes().to_vec(), r.2));
        }
        let mut expected: Vec<_> = model.into_iter().collect();
        expected.sort_by(|a, b| compare_rows(&a.0, &b.0));
        let expected: Vec<_> = expected.into_iter().map(|(_, r)| r).collect();
        let mut sorted = sorter.finish().unwrap();
        let got = drain(&mut sorted);
        assert_eq!(sorted.folded(), (input.len() - expected.len()) as u64);
        assert_eq!(got, expected);
    }

    #[test]
    fn spilled_runs_merge_with_the_latest_row_of_each_key() {
        let input: Vec<(i64, String, i64)> = (0..50_000i64)
            .map(|i| ((i * 7919) % 20_011, format!("s{}", i % 3), i))
            .collect();
        // A budget small enough for many runs, and one run.
        check(&input, 1000, 200_000, 1);
        check(&input, 1000, 200_000, 2);
        check(&input, 1000, usize::MAX, 2);
        // Input batches larger than a regrouping, rows going to several sorted batches.
        check(&input, 20_000, usize::MAX, 1);
        check(&input, 20_000, usize::MAX, 2);
        let mut sorter = ExternalSorter::new(schema(), 1, 200_000).unwrap();
        let rows: Vec<(i64, &str, i64)> = input.iter().map(|r| (r.0, "x", r.2)).collect();
        // One push over the budget stays in memory; each further one spills what came before.
        sorter.push(batch(&rows)).unwrap();
        assert_eq!(sorter.spilled_runs(), 0);
        sorter.push(batch(&rows)).unwrap();
        sorter.push(batch(&rows)).unwrap();
        assert_eq!(sorter.spilled_runs(), 2);
        // Parts given together are never spilled apart.
        let mut sorter = ExternalSorter::new(schema(), 1, 200_000).unwrap();
        sorter
            .push_together(vec![batch(&rows), batch(&rows), batch(&rows)])
            .unwrap();
        assert_eq!(sorter.spilled_runs(), 0);
        sorter.push(batch(&rows)).unwrap();
        assert_eq!(sorter.spilled_runs(), 1);
    }

    #[test]
    fn keys_of_two_integer_columns_sort_numerically() {
        // The packed-integer path: uint64 above 2^63, negative int64, repeated keys.
        let schema = Arc::new(Schema::new(vec![
            Field::new("h", DataType::UInt64, false),
            Field::new("k", DataType::Int64, false),
            Field::new("v", DataType::Int64, false),
        ]));
        let hashes = [u64::MAX, 0, 1 << 63, 7, (1 << 63) - 1];
        let ids = [i64::MIN, -1, 0, 1, i64::MAX];
        let rows: Vec<(u64, i64, i64)> = (0..400i64)
            .map(|i| (hashes[(i * 7 % 5) as usize], ids[(i * 3 % 5) as usize], i))
            .collect();
        let mut model = BTreeMap::new();
        for &(h, k, v) in &rows {
            model.insert((h, k), v);
        }
        for memory in [usize::MAX, 2_000] {
            let mut sorter = ExternalSorter::new(schema.clone(), 2, memory).unwrap();
            for part in rows.chunks(30) {
                let batch = RecordBatch::try_new(
                    schema.clone(),
                    vec![
                        Arc::new(arrow::array::UInt64Array::from_iter_values(
                            part.iter().map(|r| r.0),
                        )),
                        Arc::new(Int64Array::from_iter_values(part.iter().map(|r| r.1))),
                        Arc::new(Int64Array::from_iter_values(part.iter().map(|r| r.2))),
                    ],
                )
                .unwrap();
                sorter.push(batch).unwrap();
            }
            let mut sorted = sorter.finish().unwrap();
            let mut got = Vec::new();
            while let Some(b) = sorted.next_batch().unwrap() {
                let h = b.column(0).as_primitive::<arrow::datatypes::UInt64Type>();
                let k = b.column(1).as_primitive::<arrow::datatypes::Int64Type>();
                let v = b.column(2).as_primitive::<arrow::datatypes::Int64Type>();
                for i in 0..b.num_rows() {
                    got.push(((h.value(i), k.value(i)), v.value(i)));
                }
            }
            let expected: Vec<_> = model.clone().into_iter().collect();
            assert_eq!(got, expected, "budget {memory}");
        }
    }

    #[test]
    fn doubles_sort_numerically_with_negative_zero_equal_to_zero_and_nan_last() {
        let schema = Arc::new(Schema::new(vec![Field::new("d", DataType::Float64, true)]));
        let values = [f64::NAN, 1.0, -0.0, f64::NEG_INFINITY, 0.0, -f64::NAN, -2.5];
        let batch = RecordBatch::try_new(
            schema.clone(),
            vec![Arc::new(Float64Array::from(values.to_vec()))],
        )
        .unwrap();
        let mut sorter = ExternalSorter::new(schema, 1, usize::MAX).unwrap();
        sorter.push(batch).unwrap();
        let mut sorted = sorter.finish().unwrap();
        let b = sorted.next_batch().unwrap().unwrap();
        let got: Vec<f64> = b.column(0).as_primitive::<Float64Type>().values().to_vec();
        assert_eq!(
            sorted.folded(),
            2,
            "0.0 and -0.0 are one key, so are the NaNs"
        );
        assert_eq!(got.len(), 5);
        assert_eq!(&got[..4], &[f64::NEG_INFINITY, -2.5, 0.0, 1.0]);
        assert!(got[4].is_nan());
    }

    proptest::proptest! {
        /// Against a `BTreeMap` of the last row per key: any input, any batch size, budgets
        /// from one row per run to everything in memory, one or two key columns.
        #[test]
        fn sorts_like_a_map_of_the_last_row_per_key(
            input in proptest::collection::vec((-30i64..30, "[ab]{0,3}", proptest::num::i64::ANY), 0..400),
            per_batch in 1usize..50,
            memory in proptest::sample::select(vec![1usize, 5_000, 40_000, usize::MAX]),
            key_count in 1usize..3,
        ) {
            check(&input, per_batch, memory, key_count);
            // The same keys each once and rising (a sorted input): the rows as given.
            let mut rising = input.clone();
            rising.sort_by_key(|r| r.0);
            rising.dedup_by_key(|r| r.0);
            check(&rising, per_batch, memory, 1);
        }
    }

    #[test]
    fn rising_integer_keys_are_told_across_batches() {
        let batches = |parts: &[&[i64]]| -> Vec<RecordBatch> {
            parts
                .iter()
                .map(|keys| batch(&keys.iter().map(|&k| (k, "", 0)).collect::<Vec<_>>()))
                .collect()
        };
        let long: Vec<i64> = (0..10_000).collect();
        assert!(integer_keys_rise(
            1,
            &batches(&[&[-5, 0, 3], &[4], &[], &[9]])
        ));
        assert!(integer_keys_rise(1, &batches(&[&long])));
        assert!(!integer_keys_rise(1, &batches(&[&[1, 2], &[2, 3]])));
        assert!(!integer_keys_rise(1, &batches(&[&[1, 3], &[2]])));
        assert!(!integer_keys_rise(1, &batches(&[&[1, 1]])));
        let mut late = long.clone();
        late[9_000] = 5;
        assert!(!integer_keys_rise(1, &batches(&[&late])));
        // Byte string keys are not integer keys.
        assert!(!integer_keys_rise(2, &batches(&[&[1, 2]])));
    }
}
