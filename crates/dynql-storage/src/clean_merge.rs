//! Overlapping clean row groups merged column by column: where a piece of a scan meets row
//! groups of several chunks (layers of overwrites not yet compacted), and each of them is
//! clean as of the read (one whole-row overwrite per key, all committed by then), the rows
//! are the newest version of each key across them. That is a k-way merge by key of their
//! key columns keeping, of equal keys, the version with the newest commit timestamp; the
//! projected columns are then gathered, without a row of values. Keys of one or two non-null
//! int64/uint64 columns are compared as integers (no row encoding), and two such layers (what
//! the compaction policy leaves a tablet) merge with two pointers instead of a tournament tree; other
//! keys are compared in Arrow's row format.
//!
//! A scan cuts a tablet's key range into pieces at every row group's first key, so a row group
//! of one layer meets several pieces (with 8 layers, about 8): its columns are decoded once per
//! scan and kept in [`SharedRowGroups`] until the pieces have passed it, not decoded again per
//! piece nor pushed through the chunk cache (which a one-command read keeps small).
//!
//! Anything else (a dirty row group, versions in the dynamic store, a double key) goes
//! through the row merge of [`crate::scan`], which resolves every kind of version.

use arrow::array::{Array, ArrayRef, AsArray, UInt64Array};
use arrow::buffer::ScalarBuffer;
use arrow::compute::interleave;
use arrow::datatypes::{Int64Type, UInt64Type};
use arrow::row::{RowConverter, Rows, SortField};

use dynql_core::{TableSchema, ValueType};

use crate::error::Result;
use crate::kernel::key_range::KeyRange;
use crate::kernel::key_search::{partition_keys, partition_keys_from};
use crate::kernel::timestamp::Timestamp;
use crate::row_group_decode::expanded;
use crate::state::TableData;
use crate::store::Store;

/// One clean row group's rows within a piece: their keys and commit timestamps, and where
/// they are (chunk index, row group, rows of the row group).
struct Layer {
    keys: LayerKeys,
    rows: (usize, usize, std::ops::Range<usize>),
    timestamps: CommitTimestamps,
}

/// The commit timestamps of a layer's rows.
enum CommitTimestamps {
    /// One for every row (a chunk of one commit): no column of copies to fill.
    One(u64),
    /// A row's own (a chunk of several commits).
    Each(UInt64Array),
}

impl Layer {
    #[inline]
    fn timestamp(&self, row: usize) -> u64 {
        match &self.timestamps {
            CommitTimestamps::One(t) => *t,
            CommitTimestamps::Each(column) => column.value(row),
        }
    }
}

/// A layer's keys as the merge compares them. Every layer of a merge has the same kind.
enum LayerKeys {
    /// Arrow's row format: any key.
    Rows(Rows),
    /// Keys of one or two non-null int64/uint64 columns as integers in key order (int64
    /// with its sign bit flipped): compared with no call and no row encoding.
    Integers(Vec<(u64, u64)>),
    /// A key of one non-null int64 column: its values as decoded, not even packed.
    Int64(ScalarBuffer<i64>),
}

/// The keys of every layer as [`LayerKeys::Int64`] or [`LayerKeys::Integers`], when each is
/// one or two non-null int64/uint64 columns; `None` otherwise.
fn integer_keys(keys: &[Vec<ArrayRef>]) -> Option<Vec<LayerKeys>> {
    let single_int64 = |columns: &Vec<ArrayRef>| match columns.as_slice() {
        [column] => column
            .as_primitive_opt::<Int64Type>()
            .filter(|c| c.null_count() == 0)
            .map(|c| c.values().clone()),
        _ => None,
    };
    if let Some(keys) = keys.iter().map(single_int64).collect::<Option<Vec<_>>>() {
        return Some(keys.into_iter().map(LayerKeys::Int64).collect());
    }
    keys.iter()
        .map(|columns| {
            let mut packed = Vec::new();
            crate::sort_keys::append_integer_keys(columns, &mut packed)
                .then_some(LayerKeys::Integers(packed))
        })
        .collect()
}

/// The decoded columns of the row groups the current piece of a scan meets, by (chunk index,
/// row group, table column): kept for the next pieces, which meet the same row groups until
/// the scan passes their last key.
#[derive(Default)]
pub(crate) struct SharedRowGroups {
    columns: std::collections::HashMap<(usize, usize, usize), ArrayRef>,
}

impl SharedRowGroups {
    /// Forgets the row groups `meeting` (the next piece's, in key order) leaves out: the
    /// scan is past them (a row group's keys are one interval).
    pub(crate) fn keep_only(&mut self, meeting: &[(usize, usize)]) {
        self.columns
            .retain(|(ci, g, _), _| meeting.contains(&(*ci, *g)));
    }

    /// Whether columns of row group `g` of chunk `ci` are kept.
    fn holds(&self, ci: usize, g: usize) -> bool {
        self.columns.keys().any(|&(c, r, _)| (c, r) == (ci, g))
    }
}

/// What a piece's read asks for: the snapshot, the table columns (in that order) and whether
/// byte strings come as views.
pub(crate) struct PieceRead<'a> {
    pub(crate) timestamp: Timestamp,
    pub(crate) projection: &'a [usize],
    pub(crate) views: bool,
}

/// The projected columns of a merged piece, and the rows decoded for it.
pub(crate) struct MergedPiece {
    pub(crate) columns: Vec<ArrayRef>,
    pub(crate) rows: usize,
    pub(crate) decoded: u64,
}

impl Store {
    /// The rows of `piece` from row groups `meeting` (chunk index, row group), merged column
    /// by column when every one is clean as of the read's timestamp (see the module docs);
    /// `None` when one is not (the caller merges rows).
    pub(crate) async fn merge_clean_row_groups(
        &self,
        schema: &TableSchema,
        data: &TableData,
        meeting: &[(usize, usize)],
        piece: &KeyRange,
        read: PieceRead<'_>,
        shared: &mut SharedRowGroups,
    ) -> Result<Option<MergedPiece>> {
        let PieceRead {
            timestamp,
            projection,
            views,
        } = read;
        let key_count = schema.key_column_count();
        if !crate::kernel::chunk_ref::keys_can_be_clean(schema) {
            return Ok(None);
        }
        for &(ci, g) in meeting {
            let chunk = &data.chunks[ci];
            if chunk.row_groups.is_empty() {
                return Ok(None);
            }
            let clean = self
                .cache
                .clean_since(&self.objects, schema, chunk, g, None)
                .await?;
            if clean.is_none_or(|t| t > timestamp.0) {
                return Ok(None);
            }
        }
        let key_types: Vec<ValueType> =
            schema.key_columns().iter().map(|c| c.wire_type()).collect();
        let timestamp_column = schema.columns().len();
        // Keys and commit timestamps first: the merge needs only them, and a layer whose every
        // key a newer one overwrites gives no row, so its projected columns stay undecoded.
        let mut layers = Vec::with_capacity(meeting.len());
        let mut layer_keys: Vec<Vec<ArrayRef>> = Vec::with_capacity(meeting.len());
        let mut decoded = 0;
        for &(ci, g) in meeting {
            let chunk = &data.chunks[ci];
            let mut wanted: Vec<usize> = (0..key_count).collect();
            if chunk.commit_timestamp.is_none() {
                wanted.push(timestamp_column);
            }
            if !shared.holds(ci, g) {
                decoded += chunk.row_groups[g].rows;
            }
            let mut arrays = self
                .shared_columns(shared, (ci, g), &wanted, views, data)
                .await?;
            let keys: Vec<ArrayRef> = arrays
                .drain(..key_count)
                .map(|a| expanded(&a))
                .collect::<Result<_>>()?;
            let lo = partition_keys(&keys, &key_types, &piece.lower);
            let hi = partition_keys_from(&keys, &key_types, lo, &piece.upper).max(lo);
            if hi == lo {
                continue;
            }
            // A bulk write's chunk holds placeholders: its rows are its commit's.
            let timestamps = match (chunk.commit_timestamp, arrays.pop()) {
                (Some(t), _) => CommitTimestamps::One(t),
                (None, Some(timestamps)) => CommitTimestamps::Each(
                    timestamps.as_primitive::<UInt64Type>().slice(lo, hi - lo),
                ),
                (None, None) => unreachable!("the timestamp column was asked for"),
            };
            layer_keys.push(keys.iter().map(|k| k.slice(lo, hi - lo)).collect());
            layers.push(Layer {
                // Set below, once every layer's keys are known.
                keys: LayerKeys::Integers(Vec::new()),
                rows: (ci, g, lo..hi),
                timestamps,
            });
        }
        let keys = match integer_keys(&layer_keys) {
            Some(keys) => keys,
            None => {
                let fields = layer_keys.first().map_or_else(Vec::new, |first| {
                    first
                        .iter()
                        .map(|k| SortField::new(k.data_type().clone()))
                        .collect()
                });
                let converter = RowConverter::new(fields)?;
                layer_keys
                    .iter()
                    .map(|k| Ok(LayerKeys::Rows(converter.convert_columns(k)?)))
                    .collect::<Result<Vec<_>>>()?
            }
        };
        for (layer, keys) in layers.iter_mut().zip(keys) {
            layer.keys = keys;
        }
        let runs = newest_per_key(&layers);
        let rows = runs.iter().map(|r| r.rows).sum();
        if rows == 0 {
            // The row groups' bounds met the piece, none of their keys is in it.
            return Ok(Some(MergedPiece {
                columns: Vec::new(),
                rows: 0,
                decoded,
            }));
        }
        // The projected columns of the layers that give rows (the others' stay empty).
        let mut projected: Vec<Option<Vec<ArrayRef>>> = vec![None; layers.len()];
        for run in &runs {
            if projected[run.layer].is_some() {
                continue;
            }
            let (ci, g, ref range) = layers[run.layer].rows;
            let arrays = self
                .shared_columns(shared, (ci, g), projection, views, data)
                .await?;
            projected[run.layer] = Some(
                arrays
                    .iter()
                    .map(|a| expanded(&a.slice(range.start, range.len())))
                    .collect::<Result<_>>()?,
            );
        }
        let given = projected
            .iter()
            .flatten()
            .next()
            .expect("some layer gives rows");
        let empty: Vec<ArrayRef> = given
            .iter()
            .map(|a| arrow::array::new_empty_array(a.data_type()))
            .collect();
        let projected: Vec<&[ArrayRef]> = projected
            .iter()
            .map(|p| p.as_deref().unwrap_or(&empty))
            .collect();
        // Picked row by row only where runs are short.
        let order = (runs.len() > 1 && runs.len() * MIN_MEAN_RUN > rows).then(|| rows_of(&runs));
        let mut columns = Vec::with_capacity(projection.len());
        for c in 0..projection.len() {
            let arrays: Vec<&dyn Array> = projected.iter().map(|l| l[c].as_ref()).collect();
            columns.push(gather(&arrays, &runs, order.as_deref())?);
        }
        Ok(Some(MergedPiece {
            columns,
            rows,
            decoded,
        }))
    }

    /// Table columns `columns` of row group `g` of chunk `ci` of `data`, decoded (or taken
    /// from the chunk cache) only where `shared` does not hold them yet, and then held there.
    async fn shared_columns(
        &self,
        shared: &mut SharedRowGroups,
        (ci, g): (usize, usize),
        columns: &[usize],
        views: bool,
        data: &TableData,
    ) -> Result<Vec<ArrayRef>> {
        let mut missing: Vec<usize> = columns
            .iter()
            .copied()
            .filter(|&c| !shared.columns.contains_key(&(ci, g, c)))
            .collect();
        missing.sort_unstable();
        missing.dedup();
        if !missing.is_empty() {
            // Read again by the next pieces from `shared`, not from the cache: nothing
            // asks the cache to keep it for this scan.
            let arrays = self
                .cache
                .columns(
                    &self.objects,
                    &data.chunks[ci],
                    g,
                    None,
                    &missing,
                    views,
                    false,
                )
                .await?;
            for (c, array) in missing.into_iter().zip(arrays) {
                shared.columns.insert((ci, g, c), array);
            }
        }
        Ok(columns
            .iter()
            .map(|&c| shared.columns[&(ci, g, c)].clone())
            .collect())
    }
}

/// Consecutive rows of one layer in a merge's output.
#[derive(Clone, Copy, Debug, PartialEq)]
struct Run {
    layer: usize,
    start: usize,
    rows: usize,
}

/// Appends row `row` of `layer` to `runs`, extending the last run where it continues it.
#[inline]
fn push_row(runs: &mut Vec<Run>, layer: usize, row: usize) {
    match runs.last_mut() {
        Some(run) if run.layer == layer && run.start + run.rows == row => run.rows += 1,
        _ => runs.push(Run {
            layer,
            start: row,
            rows: 1,
        }),
    }
}

/// (layer, row) of each row of `runs`.
fn rows_of(runs: &[Run]) -> Vec<(usize, usize)> {
    // Sized first: a flat map gives no length, and growing by doubling copies it over.
    let mut rows = Vec::with_capacity(runs.iter().map(|r| r.rows).sum());
    for r in runs {
        rows.extend((r.start..r.start + r.rows).map(|row| (r.layer, row)));
    }
    rows
}

/// Below this many rows per run on average, picking rows beats copying slices.
const MIN_MEAN_RUN: usize = 32;

/// The rows `runs` pick from `arrays` (one per layer): one run is the layer's column itself
/// (a newer layer overwriting every key of an older one), long runs are copied as slices,
/// short ones picked by `order` (the runs' rows, given when runs are short).
fn gather(
    arrays: &[&dyn Array],
    runs: &[Run],
    order: Option<&[(usize, usize)]>,
) -> Result<ArrayRef> {
    if let Some(order) = order {
        return Ok(interleave(arrays, order)?);
    }
    if let [run] = runs {
        return Ok(arrays[run.layer].slice(run.start, run.rows));
    }
    let slices: Vec<ArrayRef> = runs
        .iter()
        .map(|r| arrays[r.layer].slice(r.start, r.rows))
        .collect();
    let slices: Vec<&dyn Array> = slices.iter().map(|a| a.as_ref()).collect();
    Ok(arrow::compute::concat(&slices)?)
}

/// Each key's newest version across `layers` (each key-sorted, each key once), in key order,
/// as runs of rows: a k-way merge through a tournament tree of the layers' next keys, with
/// the comparison made for the layers' kind of keys (no dispatch per comparison).
fn newest_per_key(layers: &[Layer]) -> Vec<Run> {
    if let [a, b] = layers {
        let first_wins = |i, j| a.timestamp(i) >= b.timestamp(j);
        match (&a.keys, &b.keys) {
            (LayerKeys::Int64(x), LayerKeys::Int64(y)) => return newest_of_two(x, y, first_wins),
            (LayerKeys::Integers(x), LayerKeys::Integers(y)) => {
                return newest_of_two(x, y, first_wins)
            }
            _ => {}
        }
    }
    let newer = |a: (usize, usize), b: (usize, usize)| {
        layers[a.0].timestamp(a.1) > layers[b.0].timestamp(b.1)
    };
    // Of equal keys met in any order: the newest, and of equal timestamps the first layer's.
    let newest = |a: (usize, usize), b: (usize, usize)| {
        let (x, y) = (layers[a.0].timestamp(a.1), layers[b.0].timestamp(b.1));
        x > y || (x == y && a.0 < b.0)
    };
    let int64: Option<Vec<&[i64]>> = layers
        .iter()
        .map(|l| match &l.keys {
            LayerKeys::Int64(keys) => Some(&keys[..]),
            _ => None,
        })
        .collect();
    if let Some(keys) = int64 {
        // Sign bit flipped: the order of the values as unsigned integers.
        let flipped = |k: &i64| (*k as u64) ^ (1 << 63);
        if let Some(runs) = newest_of_many_integers(&keys, flipped, newest) {
            return runs;
        }
        return newest_of_many(&keys, |k: &i64| *k, newer);
    }
    let integers: Option<Vec<&[(u64, u64)]>> = layers
        .iter()
        .map(|l| match &l.keys {
            LayerKeys::Integers(keys) => Some(&keys[..]),
            _ => None,
        })
        .collect();
    if let Some(keys) = integers {
        // Packed in one u128 (same order): a match is one integer comparison, not two.
        let packed = |&(hi, lo): &(u64, u64)| (u128::from(hi) << 64) | u128::from(lo);
        if let Some(runs) = newest_of_many_integers(&keys, packed, newest) {
            return runs;
        }
        return newest_of_many(&keys, packed, newer);
    }
    let rows: Vec<Vec<arrow::row::Row<'_>>> = layers
        .iter()
        .map(|l| match &l.keys {
            LayerKeys::Rows(rows) => rows.iter().collect(),
            _ => unreachable!("the layers of one merge share their kind of keys"),
        })
        .collect();
    let keys: Vec<&[arrow::row::Row<'_>]> = rows.iter().map(Vec::as_slice).collect();
    newest_of_many(&keys, |row| *row, newer)
}

/// The loser tree of `k` leaves whose matches `before(a, b)` decides (leaf `a` wins over
/// `b`): `tree[0]` is the winner; `tree[t]` for t in 1..k the loser of the match at node t,
/// whose children are nodes 2t and 2t+1, leaf `l` sitting at position k + l. A leaf's winner
/// climbs parking at nodes no one has reached yet, so every node plays once.
fn loser_tree(k: usize, before: impl Fn(usize, usize) -> bool) -> Vec<usize> {
    const EMPTY: usize = usize::MAX;
    let mut tree = vec![EMPTY; k];
    for leaf in 0..k {
        let mut winner = leaf;
        let mut t = (leaf + k) / 2;
        while t > 0 {
            if tree[t] == EMPTY {
                tree[t] = winner;
                winner = EMPTY;
                break;
            }
            if before(tree[t], winner) {
                std::mem::swap(&mut tree[t], &mut winner);
            }
            t /= 2;
        }
        if winner != EMPTY {
            tree[0] = winner;
        }
    }
    tree
}

/// An unsigned integer a merge compares keys as, whose greatest value no key takes: it
/// stands for a layer that is through, so a match is one comparison.
trait IntegerKey: Copy + Ord {
    const THROUGH: Self;
}

impl IntegerKey for u64 {
    const THROUGH: u64 = u64::MAX;
}

impl IntegerKey for u128 {
    const THROUGH: u128 = u128::MAX;
}

/// [`newest_of_many`] for keys `head` gives as unsigned integers, without a branch the data
/// decides in a match (with interleaved layers, which wins a match is a coin toss a branch
/// predictor loses half the time): `None` when a key is [`IntegerKey::THROUGH`] (the caller
/// merges with [`newest_of_many`]). Equal keys come in no set order, so `newest(a, b)` says
/// whether row `a` (layer, row) is the version to keep over `b` whatever their order (a total
/// order on versions of one key).
fn newest_of_many_integers<T, K: IntegerKey>(
    keys: &[&[T]],
    head: impl Fn(&T) -> K,
    newest: impl Fn((usize, usize), (usize, usize)) -> bool,
) -> Option<Vec<Run>> {
    if keys
        .iter()
        .filter_map(|l| l.last())
        .any(|key| head(key) == K::THROUGH)
    {
        return None;
    }
    let k = keys.len();
    let mut next = vec![0usize; k];
    let mut heads: Vec<K> = keys
        .iter()
        .map(|l| l.first().map_or(K::THROUGH, &head))
        .collect();
    // The loser tree of `newest_of_many`, its matches decided by the heads alone (ties
    // either way: equal keys still come out one after another, before any greater key).
    let mut tree = loser_tree(k, |a, b| heads[a] < heads[b]);
    let total: usize = keys.iter().map(|l| l.len()).sum();
    let mut runs: Vec<Run> = Vec::with_capacity(total.min(1 << 16));
    // The key of the last row given (THROUGH before the first) and that row, the kept
    // version of its key.
    let mut last = K::THROUGH;
    let mut kept = (0, 0);
    for _ in 0..total {
        let top = tree[0];
        let row = next[top];
        let key = heads[top];
        if key != last {
            push_row(&mut runs, top, row);
            last = key;
            kept = (top, row);
        } else if newest((top, row), kept) {
            // The newer version takes the place of the kept one, the runs' last row.
            let run = runs.last_mut().expect("the kept row was given");
            debug_assert_eq!((run.layer, run.start + run.rows - 1), kept);
            run.rows -= 1;
            if run.rows == 0 {
                runs.pop();
            }
            push_row(&mut runs, top, row);
            kept = (top, row);
        }
        next[top] = row + 1;
        heads[top] = keys[top].get(row + 1).map_or(K::THROUGH, &head);
        // Replay the matches on the way to the root, choosing with selects, not jumps.
        let mut winner = top;
        let mut t = (top + k) / 2;
        while t > 0 {
            let other = tree[t];
            let other_wins = heads[other] < heads[winner];
            tree[t] = if other_wins { winner } else { other };
            winner = if other_wins { other } else { winner };
            t /= 2;
        }
        tree[0] = winner;
    }
    Some(runs)
}

/// [`newest_per_key`] over `keys` (each layer's, sorted, each key once), compared as `head`
/// gives them (in the same order): a loser tree of the layers' next keys gives the least in
/// about log2(layers) comparisons per row. Of equal keys (met one after another, by layer
/// order) the one `newer` than the kept one replaces it: `newer((layer, row), (layer, row))`.
fn newest_of_many<T, K: Ord + Copy>(
    keys: &[&[T]],
    head: impl Fn(&T) -> K,
    newer: impl Fn((usize, usize), (usize, usize)) -> bool,
) -> Vec<Run> {
    // A layer that is through stands at the greatest key of all, marked through so that it
    // comes after a layer still at that key: no Option to match in a match.
    let Some(greatest) = keys.iter().filter_map(|l| l.last()).map(&head).max() else {
        return Vec::new();
    };
    let k = keys.len();
    let mut next = vec![0usize; k];
    // Each layer's next key and whether it is through, kept at hand: a match reads two
    // entries of this small array, not the layers' slices.
    let mut heads: Vec<(K, bool)> = keys
        .iter()
        .map(|l| l.first().map_or((greatest, true), |key| (head(key), false)))
        .collect();
    // Whether layer `a`'s next key comes before layer `b`'s; equal keys by layer order, so
    // that the order is total.
    let before = |heads: &[(K, bool)], a: usize, b: usize| {
        let ((x, x_through), (y, y_through)) = (heads[a], heads[b]);
        x.cmp(&y)
            .then(x_through.cmp(&y_through))
            .then(a.cmp(&b))
            .is_lt()
    };
    let mut tree = loser_tree(k, |a, b| before(&heads, a, b));
    // The runs are built as rows come (no list of rows in between). `last`: the key of the
    // last row given, and that row (layer, row), the kept version of its key.
    let mut runs: Vec<Run> = Vec::new();
    let mut last: Option<(K, (usize, usize))> = None;
    let total: usize = keys.iter().map(|l| l.len()).sum();
    for _ in 0..total {
        let top = tree[0];
        let row = next[top];
        let key = heads[top].0;
        match last {
            Some((last_key, kept)) if last_key == key => {
                if newer((top, row), kept) {
                    // The newer version takes the place of the kept one, the runs' last row.
                    let run = runs.last_mut().expect("the kept row was given");
                    debug_assert_eq!((run.layer, run.start + run.rows - 1), kept);
                    run.rows -= 1;
                    if run.rows == 0 {
                        runs.pop();
                    }
                    push_row(&mut runs, top, row);
                    last = Some((key, (top, row)));
                }
            }
            _ => {
                push_row(&mut runs, top, row);
                last = Some((key, (top, row)));
            }
        }
        next[top] += 1;
        heads[top] = keys[top]
            .get(next[top])
            .map_or((greatest, true), |key| (head(key), false));
        // Replay the matches on the way from the leaf that moved to the root.
        let mut winner = top;
        let mut t = (top + k) / 2;
        while t > 0 {
            if before(&heads, tree[t], winner) {
                std::mem::swap(&mut tree[t], &mut winner);
            }
            t /= 2;
        }
        tree[0] = winner;
    }
    runs
}

/// [`newest_per_key`] for two layers of integer keys (the usual case: the compaction policy
/// leaves a tablet two chunks): a two-pointer merge. `first_wins(i, j)`: of equal keys, row
/// `i` of the first layer is the newer version (else row `j` of the second).
fn newest_of_two<K: Ord>(x: &[K], y: &[K], first_wins: impl Fn(usize, usize) -> bool) -> Vec<Run> {
    let mut runs = Vec::new();
    let (mut i, mut j) = (0, 0);
    while i < x.len() && j < y.len() {
        match x[i].cmp(&y[j]) {
            std::cmp::Ordering::Less => {
                push_row(&mut runs, 0, i);
                i += 1;
            }
            std::cmp::Ordering::Greater => {
                push_row(&mut runs, 1, j);
                j += 1;
            }
            std::cmp::Ordering::Equal => {
                if first_wins(i, j) {
                    push_row(&mut runs, 0, i);
                } else {
                    push_row(&mut runs, 1, j);
                }
                i += 1;
                j += 1;
            }
        }
    }
    for (layer, rest, len) in [(0, i, x.len()), (1, j, y.len())] {
        if rest == len {
            continue;
        }
        // The rest of a layer may continue its last run (then one run is the whole layer).
        match runs.last_mut() {
            Some(run) if run.layer == layer && run.start + run.rows == rest => {
                run.rows += len - rest
            }
            _ => runs.push(Run {
                layer,
                start: rest,
                rows: len - rest,
            }),
        }
    }
    runs
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use arrow::array::Int64Array;
    use arrow::datatypes::DataType;

    use super::*;

    /// A layer of `keys` committed at `timestamp`, and its key column.
    fn layer(keys: &[i64], timestamp: u64) -> (Layer, ArrayRef) {
        let k: ArrayRef = Arc::new(Int64Array::from(keys.to_vec()));
        let converter = RowConverter::new(vec![SortField::new(k.data_type().clone())]).unwrap();
        let layer = Layer {
            keys: LayerKeys::Rows(converter.convert_columns(std::slice::from_ref(&k)).unwrap()),
            rows: (0, 0, 0..keys.len()),
            timestamps: CommitTimestamps::One(timestamp),
        };
        (layer, k)
    }

    /// Int64 keys, often equal across layers, and the extremes.
    fn an_i64() -> impl proptest::strategy::Strategy<Value = i64> {
        use proptest::strategy::Just;
        proptest::prop_oneof![4 => -3i64..3, 1 => Just(i64::MIN), 1 => Just(i64::MAX)]
    }

    /// UInt64 keys, often equal across layers, and the extremes (1 << 63 where a sign flips).
    fn a_u64() -> impl proptest::strategy::Strategy<Value = u64> {
        use proptest::strategy::Just;
        proptest::prop_oneof![4 => 0u64..3, 1 => Just(u64::MAX), 1 => Just(1 << 63)]
    }

    /// (layer, row) of each key's newest version across `layers` (each key-sorted, a
    /// timestamp a row), in key order: a version replaces the kept one only when strictly
    /// newer, so of equal timestamps the first layer's wins.
    fn model<K: Ord + Copy>(layers: &[Vec<(K, u64)>]) -> Vec<(usize, usize)> {
        let mut newest = std::collections::BTreeMap::new();
        for (l, layer) in layers.iter().enumerate() {
            for (r, &(key, t)) in layer.iter().enumerate() {
                let kept = newest.entry(key).or_insert((t, l, r));
                if t > kept.0 {
                    *kept = (t, l, r);
                }
            }
        }
        newest.into_values().map(|(_, l, r)| (l, r)).collect()
    }

    /// Each layer's key `columns` packed as integers ([`LayerKeys::Integers`]).
    fn packed_keys(columns: &[Vec<ArrayRef>]) -> Vec<LayerKeys> {
        columns
            .iter()
            .map(|c| {
                let mut keys = Vec::new();
                assert!(crate::sort_keys::append_integer_keys(c, &mut keys));
                LayerKeys::Integers(keys)
            })
            .collect()
    }

    /// (layer, row) of each row [`newest_per_key`] gives for layers of key `columns` (of
    /// `types`) and `timestamps`, once for each kind of keys they can be compared as.
    fn merged_every_way(
        columns: &[Vec<ArrayRef>],
        types: &[DataType],
        timestamps: &[Vec<u64>],
    ) -> Vec<Vec<(usize, usize)>> {
        let packed = packed_keys(columns);
        let fields = types.iter().map(|t| SortField::new(t.clone())).collect();
        let converter = RowConverter::new(fields).unwrap();
        let rows: Vec<LayerKeys> = columns
            .iter()
            .map(|c| LayerKeys::Rows(converter.convert_columns(c).unwrap()))
            .collect();
        [integer_keys(columns).unwrap(), packed, rows]
            .into_iter()
            .map(|keys| {
                let layers: Vec<Layer> = keys
                    .into_iter()
                    .zip(timestamps)
                    .map(|(keys, t)| Layer {
                        keys,
                        rows: (0, 0, 0..t.len()),
                        timestamps: CommitTimestamps::Each(UInt64Array::from(t.clone())),
                    })
                    .collect();
                let runs = newest_per_key(&layers);
                // The runs as push_row leaves them: none empty, none continuing the one before.
                let rows = rows_of(&runs);
                let mut again = Vec::new();
                for &(layer, row) in &rows {
                    push_row(&mut again, layer, row);
                }
                assert_eq!(runs, again);
                rows
            })
            .collect()
    }

    proptest::proptest! {
        /// Against the model, with up to a dozen layers, timestamps that tie, extreme keys, and
        /// keys of one int64 column and of two columns (int64, uint64), compared every way.
        #[test]
        fn many_layers_merge_like_the_model(
            layers in proptest::collection::vec(
                proptest::collection::btree_map((an_i64(), a_u64()), 0u64..3, 0..40),
                0..12,
            ),
        ) {
            let two: Vec<Vec<((i64, u64), u64)>> = layers
                .iter()
                .map(|l| l.iter().map(|(&k, &t)| (k, t)).collect())
                .collect();
            let columns: Vec<Vec<ArrayRef>> = two
                .iter()
                .map(|l| {
                    let a = Int64Array::from_iter_values(l.iter().map(|&((a, _), _)| a));
                    let b = UInt64Array::from_iter_values(l.iter().map(|&((_, b), _)| b));
                    vec![Arc::new(a) as ArrayRef, Arc::new(b) as ArrayRef]
                })
                .collect();
            let timestamps: Vec<Vec<u64>> =
                two.iter().map(|l| l.iter().map(|&(_, t)| t).collect()).collect();
            let expected = model(&two);
            let types = [DataType::Int64, DataType::UInt64];
            for got in merged_every_way(&columns, &types, &timestamps) {
                proptest::prop_assert_eq!(&got, &expected);
            }
            // The first column alone, each of its values once a layer.
            let one: Vec<Vec<(i64, u64)>> = two
                .iter()
                .map(|l| {
                    let mut l: Vec<(i64, u64)> = l.iter().map(|&((a, _), t)| (a, t)).collect();
                    l.dedup_by_key(|&mut (a, _)| a);
                    l
                })
                .collect();
            let columns: Vec<Vec<ArrayRef>> = one
                .iter()
                .map(|l| {
                    let a = Int64Array::from_iter_values(l.iter().map(|&(a, _)| a));
                    vec![Arc::new(a) as ArrayRef]
                })
                .collect();
            let timestamps: Vec<Vec<u64>> =
                one.iter().map(|l| l.iter().map(|&(_, t)| t).collect()).collect();
            let expected = model(&one);
            for got in merged_every_way(&columns, &[DataType::Int64], &timestamps) {
                proptest::prop_assert_eq!(&got, &expected);
            }
        }

        /// Against a map from key to its newest (timestamp, layer): every key once, in order,
        /// from the layer holding its newest version.
        #[test]
        fn the_newest_version_of_each_key_wins(
            layers in proptest::collection::btree_map(0u64..1000, proptest::collection::btree_set(-50i64..50, 0..20), 1..6),
        ) {
            let (built, key_columns): (Vec<Layer>, Vec<ArrayRef>) = layers
                .iter()
                .map(|(t, keys)| layer(&keys.iter().copied().collect::<Vec<_>>(), *t))
                .unzip();
            let mut model = std::collections::BTreeMap::new();
            for (l, (t, keys)) in layers.iter().enumerate() {
                for &k in keys {
                    let entry = model.entry(k).or_insert((*t, l));
                    if *t > entry.0 {
                        *entry = (*t, l);
                    }
                }
            }
            let got: Vec<(i64, usize)> = rows_of(&newest_per_key(&built))
                .into_iter()
                .map(|(l, r)| (key_columns[l].as_primitive::<arrow::datatypes::Int64Type>().value(r), l))
                .collect();
            let expected: Vec<(i64, usize)> = model.into_iter().map(|(k, (_, l))| (k, l)).collect();
            proptest::prop_assert_eq!(&got, &expected);
            // The same merge over the keys as int64 values, and packed as integers.
            let columns: Vec<Vec<ArrayRef>> = key_columns.iter().map(|k| vec![k.clone()]).collect();
            let packed = packed_keys(&columns);
            let mut as_integers = built;
            for keys in [integer_keys(&columns).unwrap(), packed] {
                for (layer, keys) in as_integers.iter_mut().zip(keys) {
                    layer.keys = keys;
                }
                let got: Vec<(i64, usize)> = rows_of(&newest_per_key(&as_integers))
                    .into_iter()
                    .map(|(l, r)| (key_columns[l].as_primitive::<arrow::datatypes::Int64Type>().value(r), l))
                    .collect();
                proptest::prop_assert_eq!(&got, &expected);
            }
        }

        /// The merge without branches, against the model: many layers of small keys that
        /// often meet, timestamps that tie; and it declines keys at the greatest integer.
        #[test]
        fn integer_merge_without_branches_keeps_the_models_versions(
            layers in proptest::collection::vec(
                proptest::collection::btree_map((0u64..4, 0u64..6), 0u64..3, 0..30),
                0..12,
            ),
        ) {
            let layers: Vec<Vec<((u64, u64), u64)>> = layers
                .iter()
                .map(|l| l.iter().map(|(&k, &t)| (k, t)).collect())
                .collect();
            let keys: Vec<Vec<(u64, u64)>> =
                layers.iter().map(|l| l.iter().map(|&(k, _)| k).collect()).collect();
            let keys: Vec<&[(u64, u64)]> = keys.iter().map(Vec::as_slice).collect();
            let newest = |a: (usize, usize), b: (usize, usize)| {
                let (x, y) = (layers[a.0][a.1].1, layers[b.0][b.1].1);
                x > y || (x == y && a.0 < b.0)
            };
            let packed = |&(hi, lo): &(u64, u64)| (u128::from(hi) << 64) | u128::from(lo);
            let runs = newest_of_many_integers(&keys, packed, newest).unwrap();
            proptest::prop_assert_eq!(rows_of(&runs), model(&layers));
            // Each layer's first column alone, as u64 keys (dropping repeats).
            let firsts: Vec<Vec<u64>> = keys
                .iter()
                .map(|l| {
                    let mut f: Vec<u64> = l.iter().map(|&(a, _)| a).collect();
                    f.dedup();
                    f
                })
                .collect();
            let firsts: Vec<&[u64]> = firsts.iter().map(Vec::as_slice).collect();
            let tie = |a: (usize, usize), b: (usize, usize)| a.0 < b.0;
            let runs = newest_of_many_integers(&firsts, |k: &u64| *k, tie).unwrap();
            let expected = model(
                &firsts
                    .iter()
                    .map(|l| l.iter().map(|&k| (k, 0)).collect())
                    .collect::<Vec<Vec<(u64, u64)>>>(),
            );
            proptest::prop_assert_eq!(rows_of(&runs), expected);
            let through = [u64::MAX];
            proptest::prop_assert!(newest_of_many_integers(&[&through[..]], |k: &u64| *k, tie).is_none());
        }

        /// Gathering by runs picks the same rows as picking them one by one.
        #[test]
        fn gathering_by_runs_is_interleaving(
            order in proptest::collection::vec((0usize..3, 0usize..50), 1..200),
            runs in proptest::collection::vec((0usize..3, 0usize..40, 1usize..60), 0..4),
        ) {
            // Random picks, and long runs (what overwriting layers give).
            let mut order = order;
            for (layer, start, len) in runs {
                order.extend((start..(start + len).min(100)).map(|row| (layer, row)));
            }
            let layers: Vec<ArrayRef> = (0..3)
                .map(|l| Arc::new(Int64Array::from_iter_values((0..100).map(|r| l * 1000 + r))) as ArrayRef)
                .collect();
            let arrays: Vec<&dyn Array> = layers.iter().map(|a| a.as_ref()).collect();
            let mut runs = Vec::new();
            for &(layer, row) in &order {
                push_row(&mut runs, layer, row);
            }
            proptest::prop_assert_eq!(&rows_of(&runs), &order);
            let expected = interleave(&arrays, &order).unwrap();
            let by_slices = gather(&arrays, &runs, None).unwrap();
            proptest::prop_assert_eq!(by_slices.to_data(), expected.to_data());
            let by_rows = gather(&arrays, &runs, Some(&order)).unwrap();
            proptest::prop_assert_eq!(by_rows.to_data(), expected.to_data());
        }
    }
}
