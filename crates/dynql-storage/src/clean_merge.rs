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

use arrow::array::{Array, ArrayRef, AsArray};
use arrow::compute::interleave;
use arrow::datatypes::{Int64Type, UInt64Type};
use arrow::row::{RowConverter, SortField};

use dynql_core::{TableSchema, ValueType};

use crate::error::Result;
use crate::kernel::key_range::KeyRange;
use crate::kernel::key_search::{partition_keys, partition_keys_from};
use crate::kernel::layer_dedup::{kept_by_key_offsets, kept_rows, Kept};
use crate::kernel::layer_merge::{
    newest_per_key, rows_of, CommitTimestamps, Layer, LayerKeys, Run,
};
use crate::kernel::timestamp::Timestamp;
use crate::row_group_decode::expanded;
use crate::state::TableData;
use crate::store::Store;

/// The keys of every layer as [`LayerKeys::Int64`] or [`LayerKeys::Integers`], when each is
/// one or two non-null int64/uint64 columns; `None` otherwise.
pub(crate) fn integer_keys(keys: &[Vec<ArrayRef>]) -> Option<Vec<LayerKeys>> {
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
    /// The bitmap of [`kept_by_key_offsets`], reused from piece to piece (a fresh one's
    /// pages would be zeroed by the kernel at every piece).
    bitmap: Vec<u64>,
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

/// What a piece's read asks for: the snapshot, the table columns (in that order), whether
/// byte strings come as views, and whether the rows may come out of key order.
pub(crate) struct PieceRead<'a> {
    pub(crate) timestamp: Timestamp,
    pub(crate) projection: &'a [usize],
    pub(crate) views: bool,
    /// The rows each layer keeps, as a part of their own (see [`MergedPiece::parts`]),
    /// instead of all of them gathered in key order.
    pub(crate) any_order: bool,
}

/// Rows of a merged piece: the projected columns (none at all where the read projects
/// none), and how many rows.
pub(crate) struct Part {
    pub(crate) columns: Vec<ArrayRef>,
    pub(crate) rows: usize,
}

/// The projected columns of a merged piece, and the rows decoded for it.
pub(crate) struct MergedPiece {
    /// The rows in parts, each the projected columns: one part in key order; or, where the
    /// read allows any order, a part per layer that keeps rows, which holds them in the
    /// layer's own key order and its columns as the chunk cache gives them (a column it
    /// keeps as a dictionary stays one: nothing is gathered across layers).
    pub(crate) parts: Vec<Part>,
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
            any_order,
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
        if any_order {
            let timestamps: Option<Vec<u64>> = layers
                .iter()
                .map(|l| match l.timestamps {
                    CommitTimestamps::One(t) => Some(t),
                    CommitTimestamps::Each(_) => None,
                })
                .collect();
            if let Some(kept) =
                timestamps.and_then(|t| kept_by_key_offsets(&layer_keys, &t, &mut shared.bitmap))
            {
                let parts = self
                    .kept_parts(shared, data, &layers, kept, projection, views)
                    .await?;
                return Ok(Some(MergedPiece { parts, decoded }));
            }
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
                parts: Vec::new(),
                decoded,
            }));
        }
        if any_order {
            let kept = kept_rows(&layers, &runs);
            let parts = self
                .kept_parts(shared, data, &layers, kept, projection, views)
                .await?;
            return Ok(Some(MergedPiece { parts, decoded }));
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
            parts: vec![Part { columns, rows }],
            decoded,
        }))
    }

    /// The rows each of `layers` keeps (`kept`, see [`kept_by_key_offsets`]) as a part of
    /// their own, the projected columns as the chunk cache gives them: a slice of the layer
    /// where it keeps all its rows, else filtered.
    async fn kept_parts(
        &self,
        shared: &mut SharedRowGroups,
        data: &TableData,
        layers: &[Layer],
        kept: Vec<Option<Kept>>,
        projection: &[usize],
        views: bool,
    ) -> Result<Vec<Part>> {
        let mut parts = Vec::new();
        for (layer, kept) in layers.iter().zip(kept) {
            let Some(kept) = kept else { continue };
            let (ci, g, ref range) = layer.rows;
            let columns: Vec<ArrayRef> = self
                .shared_columns(shared, (ci, g), projection, views, data)
                .await?
                .iter()
                .map(|a| a.slice(range.start, range.len()))
                .collect();
            parts.push(match kept {
                Kept::All => Part {
                    columns,
                    rows: range.len(),
                },
                Kept::Some(mask) => {
                    let filter = arrow::compute::FilterBuilder::new(&mask).optimize().build();
                    Part {
                        columns: columns
                            .iter()
                            .map(|c| filter.filter(c))
                            .collect::<std::result::Result<_, _>>()?,
                        rows: filter.count(),
                    }
                }
            });
        }
        Ok(parts)
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
            for (c, column) in missing.into_iter().zip(arrays) {
                shared.columns.insert((ci, g, c), column.array);
            }
        }
        Ok(columns
            .iter()
            .map(|&c| shared.columns[&(ci, g, c)].clone())
            .collect())
    }
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

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use arrow::array::Int64Array;

    use super::*;
    use crate::kernel::layer_merge::push_row;

    proptest::proptest! {
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
