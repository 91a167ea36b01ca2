//! Overlapping clean row groups merged column by column: where a piece of a scan meets row
//! groups of several chunks (layers of overwrites not yet compacted), and each of them is
//! clean as of the read (one whole-row overwrite per key, all committed by then), the rows
//! are the newest version of each key across them. That is a k-way merge by key of their
//! key columns (Arrow's row format) keeping, of equal keys, the version with the newest
//! commit timestamp; the projected columns are then gathered, without a row of values.
//!
//! Anything else (a dirty row group, versions in the dynamic store, a double key) goes
//! through the row merge of [`crate::scan`], which resolves every kind of version.

use std::sync::Arc;

use arrow::array::{Array, ArrayRef, AsArray, UInt64Array};
use arrow::compute::interleave;
use arrow::datatypes::UInt64Type;
use arrow::row::{RowConverter, Rows, SortField};

use dynql_core::{TableSchema, ValueType};

use crate::error::Result;
use crate::key_range::KeyRange;
use crate::key_search::{partition_keys, partition_keys_from};
use crate::row_group_decode::expanded;
use crate::store::{Store, TableData};
use crate::timestamp::Timestamp;

/// One clean row group's rows within a piece: key columns, projected columns, and the
/// commit timestamp of each row.
struct Layer {
    keys: Rows,
    columns: Vec<ArrayRef>,
    timestamps: ArrayRef,
}

impl Layer {
    fn timestamp(&self, row: usize) -> u64 {
        self.timestamps.as_primitive::<UInt64Type>().value(row)
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
    ) -> Result<Option<MergedPiece>> {
        let PieceRead {
            timestamp,
            projection,
            views,
        } = read;
        let key_count = schema.key_column_count();
        if !crate::chunk::keys_can_be_clean(schema) {
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
        let mut wanted: Vec<usize> = (0..key_count).collect();
        wanted.extend_from_slice(projection);
        wanted.push(timestamp_column);
        let mut converter: Option<RowConverter> = None;
        let mut layers = Vec::with_capacity(meeting.len());
        let mut decoded = 0;
        for &(ci, g) in meeting {
            let chunk = &data.chunks[ci];
            let mut arrays = self
                .cache
                .columns(&self.objects, chunk, g, None, &wanted, views)
                .await?;
            decoded += chunk.row_groups[g].rows;
            let keys: Vec<ArrayRef> = arrays
                .drain(..key_count)
                .map(|a| expanded(&a))
                .collect::<Result<_>>()?;
            let lo = partition_keys(&keys, &key_types, &piece.lower);
            let hi = partition_keys_from(&keys, &key_types, lo, &piece.upper).max(lo);
            if hi == lo {
                continue;
            }
            let timestamps = arrays.pop().expect("the timestamp column was asked for");
            // A bulk write's chunk holds placeholders: its rows are its commit's.
            let timestamps: ArrayRef = match chunk.commit_timestamp {
                Some(t) => Arc::new(UInt64Array::from_value(t, hi - lo)),
                None => timestamps.slice(lo, hi - lo),
            };
            let keys: Vec<ArrayRef> = keys.iter().map(|k| k.slice(lo, hi - lo)).collect();
            let converter = match &mut converter {
                Some(c) => c,
                None => converter.insert(RowConverter::new(
                    keys.iter()
                        .map(|k| SortField::new(k.data_type().clone()))
                        .collect(),
                )?),
            };
            layers.push(Layer {
                keys: converter.convert_columns(&keys)?,
                columns: arrays
                    .iter()
                    .map(|a| expanded(&a.slice(lo, hi - lo)))
                    .collect::<Result<_>>()?,
                timestamps,
            });
        }
        let order = newest_per_key(&layers);
        let rows = order.len();
        let mut columns = Vec::with_capacity(projection.len());
        for c in 0..projection.len() {
            let arrays: Vec<&dyn Array> = layers.iter().map(|l| l.columns[c].as_ref()).collect();
            columns.push(interleave(&arrays, &order)?);
        }
        Ok(Some(MergedPiece {
            columns,
            rows,
            decoded,
        }))
    }
}

/// (layer, row) of each key's newest version across `layers` (each key-sorted, each key
/// once), in key order: a k-way merge over a heap of the layers' next rows.
fn newest_per_key(layers: &[Layer]) -> Vec<(usize, usize)> {
    let mut next = vec![0usize; layers.len()];
    // Heap of layers by their next key (then layer index, for a deterministic order).
    let before = |next: &[usize], a: usize, b: usize| {
        layers[a]
            .keys
            .row(next[a])
            .cmp(&layers[b].keys.row(next[b]))
            .then(a.cmp(&b))
            .is_lt()
    };
    let sift_down = |heap: &mut Vec<usize>, next: &[usize], mut i: usize| loop {
        let (l, r) = (2 * i + 1, 2 * i + 2);
        let mut least = i;
        if l < heap.len() && before(next, heap[l], heap[least]) {
            least = l;
        }
        if r < heap.len() && before(next, heap[r], heap[least]) {
            least = r;
        }
        if least == i {
            return;
        }
        heap.swap(i, least);
        i = least;
    };
    let mut heap: Vec<usize> = (0..layers.len())
        .filter(|&l| layers[l].keys.num_rows() > 0)
        .collect();
    for i in (0..heap.len() / 2).rev() {
        sift_down(&mut heap, &next, i);
    }
    let total: usize = layers.iter().map(|l| l.keys.num_rows()).sum();
    let mut out: Vec<(usize, usize)> = Vec::with_capacity(total);
    while let Some(&top) = heap.first() {
        let row = next[top];
        // Equal keys come out one after another: keep the newest.
        match out.last_mut() {
            Some(last) if layers[last.0].keys.row(last.1) == layers[top].keys.row(row) => {
                if layers[top].timestamp(row) > layers[last.0].timestamp(last.1) {
                    *last = (top, row);
                }
            }
            _ => out.push((top, row)),
        }
        next[top] += 1;
        if next[top] == layers[top].keys.num_rows() {
            let last = heap.len() - 1;
            heap.swap(0, last);
            heap.pop();
        }
        sift_down(&mut heap, &next, 0);
    }
    out
}

#[cfg(test)]
mod tests {
    use arrow::array::Int64Array;

    use super::*;

    fn layer(keys: &[i64], timestamp: u64) -> Layer {
        let k: ArrayRef = Arc::new(Int64Array::from(keys.to_vec()));
        let converter = RowConverter::new(vec![SortField::new(k.data_type().clone())]).unwrap();
        Layer {
            keys: converter.convert_columns(std::slice::from_ref(&k)).unwrap(),
            columns: vec![k],
            timestamps: Arc::new(UInt64Array::from_value(timestamp, keys.len())),
        }
    }

    proptest::proptest! {
        /// Against a map from key to its newest (timestamp, layer): every key once, in order,
        /// from the layer holding its newest version.
        #[test]
        fn the_newest_version_of_each_key_wins(
            layers in proptest::collection::btree_map(0u64..1000, proptest::collection::btree_set(0i64..50, 0..20), 1..6),
        ) {
            let built: Vec<Layer> = layers
                .iter()
                .map(|(t, keys)| layer(&keys.iter().copied().collect::<Vec<_>>(), *t))
                .collect();
            let mut model = std::collections::BTreeMap::new();
            for (l, (t, keys)) in layers.iter().enumerate() {
                for &k in keys {
                    let entry = model.entry(k).or_insert((*t, l));
                    if *t > entry.0 {
                        *entry = (*t, l);
                    }
                }
            }
            let got: Vec<(i64, usize)> = newest_per_key(&built)
                .into_iter()
                .map(|(l, r)| (built[l].columns[0].as_primitive::<arrow::datatypes::Int64Type>().value(r), l))
                .collect();
            let expected: Vec<(i64, usize)> = model.into_iter().map(|(k, (_, l))| (k, l)).collect();
            proptest::prop_assert_eq!(got, expected);
        }
    }
}
