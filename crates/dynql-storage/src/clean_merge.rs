//! Overlapping clean row groups merged column by column: where a piece of a scan meets row
//! groups of several chunks (layers of overwrites not yet compacted), and each of them is
//! clean as of the read (one whole-row overwrite per key, all committed by then), the rows
//! are the newest version of each key across them. That is a k-way merge by key of their
//! key columns keeping, of equal keys, the version with the newest commit timestamp; the
//! projected columns are then gathered, without a row of values. Keys of one or two non-null
//! int64/uint64 columns are compared as integers (no row encoding), and two such layers (what
//! the compaction policy leaves a tablet) merge with two pointers instead of a heap; other
//! keys are compared in Arrow's row format.
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
    keys: LayerKeys,
    columns: Vec<ArrayRef>,
    timestamps: ArrayRef,
}

impl Layer {
    fn timestamp(&self, row: usize) -> u64 {
        self.timestamps.as_primitive::<UInt64Type>().value(row)
    }
}

/// A layer's keys as the merge compares them. Every layer of a merge has the same kind.
enum LayerKeys {
    /// Arrow's row format: any key.
    Rows(Rows),
    /// Keys of one or two non-null int64/uint64 columns as integers in key order (int64
    /// with its sign bit flipped): compared with no call and no row encoding.
    Integers(Vec<(u64, u64)>),
}

impl LayerKeys {
    fn len(&self) -> usize {
        match self {
            LayerKeys::Rows(rows) => rows.num_rows(),
            LayerKeys::Integers(keys) => keys.len(),
        }
    }

    /// Key `i` of `self` against key `j` of `other` (a layer of the same merge).
    #[inline]
    fn compare(&self, i: usize, other: &LayerKeys, j: usize) -> std::cmp::Ordering {
        match (self, other) {
            (LayerKeys::Integers(a), LayerKeys::Integers(b)) => a[i].cmp(&b[j]),
            (LayerKeys::Rows(a), LayerKeys::Rows(b)) => a.row(i).cmp(&b.row(j)),
            _ => unreachable!("the layers of one merge share their kind of keys"),
        }
    }
}

/// The keys of every layer as [`LayerKeys::Integers`], when each is one or two non-null
/// int64/uint64 columns; `None` otherwise.
fn integer_keys(keys: &[Vec<ArrayRef>]) -> Option<Vec<LayerKeys>> {
    keys.iter()
        .map(|columns| {
            let mut packed = Vec::new();
            crate::sort_keys::append_integer_keys(columns, &mut packed)
                .then_some(LayerKeys::Integers(packed))
        })
        .collect()
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
        let mut layers = Vec::with_capacity(meeting.len());
        let mut layer_keys: Vec<Vec<ArrayRef>> = Vec::with_capacity(meeting.len());
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
            layer_keys.push(keys.iter().map(|k| k.slice(lo, hi - lo)).collect());
            layers.push(Layer {
                // Set below, once every layer's keys are known.
                keys: LayerKeys::Integers(Vec::new()),
                columns: arrays
                    .iter()
                    .map(|a| expanded(&a.slice(lo, hi - lo)))
                    .collect::<Result<_>>()?,
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
    if let [a, b] = layers {
        if let (LayerKeys::Integers(x), LayerKeys::Integers(y)) = (&a.keys, &b.keys) {
            return newest_of_two(x, y, |i, j| a.timestamp(i) >= b.timestamp(j));
        }
    }
    let mut next = vec![0usize; layers.len()];
    // Heap of layers by their next key (then layer index, for a deterministic order).
    let before = |next: &[usize], a: usize, b: usize| {
        layers[a]
            .keys
            .compare(next[a], &layers[b].keys, next[b])
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
        .filter(|&l| layers[l].keys.len() > 0)
        .collect();
    for i in (0..heap.len() / 2).rev() {
        sift_down(&mut heap, &next, i);
    }
    let total: usize = layers.iter().map(|l| l.keys.len()).sum();
    let mut out: Vec<(usize, usize)> = Vec::with_capacity(total);
    while let Some(&top) = heap.first() {
        let row = next[top];
        // Equal keys come out one after another: keep the newest.
        match out.last_mut() {
            Some(last)
                if layers[last.0]
                    .keys
                    .compare(last.1, &layers[top].keys, row)
                    .is_eq() =>
            {
                if layers[top].timestamp(row) > layers[last.0].timestamp(last.1) {
                    *last = (top, row);
                }
            }
            _ => out.push((top, row)),
        }
        next[top] += 1;
        if next[top] == layers[top].keys.len() {
            let last = heap.len() - 1;
            heap.swap(0, last);
            heap.pop();
        }
        sift_down(&mut heap, &next, 0);
    }
    out
}

/// [`newest_per_key`] for two layers of integer keys (the usual case: the compaction policy
/// leaves a tablet two chunks): a two-pointer merge. `first_wins(i, j)`: of equal keys, row
/// `i` of the first layer is the newer version (else row `j` of the second).
fn newest_of_two(
    x: &[(u64, u64)],
    y: &[(u64, u64)],
    first_wins: impl Fn(usize, usize) -> bool,
) -> Vec<(usize, usize)> {
    let mut out = Vec::with_capacity(x.len().max(y.len()));
    let (mut i, mut j) = (0, 0);
    while i < x.len() && j < y.len() {
        match x[i].cmp(&y[j]) {
            std::cmp::Ordering::Less => {
                out.push((0, i));
                i += 1;
            }
            std::cmp::Ordering::Greater => {
                out.push((1, j));
                j += 1;
            }
            std::cmp::Ordering::Equal => {
                out.push(if first_wins(i, j) { (0, i) } else { (1, j) });
                i += 1;
                j += 1;
            }
        }
    }
    out.extend((i..x.len()).map(|i| (0, i)));
    out.extend((j..y.len()).map(|j| (1, j)));
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
            keys: LayerKeys::Rows(converter.convert_columns(std::slice::from_ref(&k)).unwrap()),
            columns: vec![k],
            timestamps: Arc::new(UInt64Array::from_value(timestamp, keys.len())),
        }
    }

    proptest::proptest! {
        /// Against a map from key to its newest (timestamp, layer): every key once, in order,
        /// from the layer holding its newest version.
        #[test]
        fn the_newest_version_of_each_key_wins(
            layers in proptest::collection::btree_map(0u64..1000, proptest::collection::btree_set(-50i64..50, 0..20), 1..6),
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
            proptest::prop_assert_eq!(&got, &expected);
            // The same merge over the keys as integers.
            let columns: Vec<Vec<ArrayRef>> = built.iter().map(|l| vec![l.columns[0].clone()]).collect();
            let mut as_integers = built;
            for (layer, keys) in as_integers.iter_mut().zip(integer_keys(&columns).unwrap()) {
                layer.keys = keys;
            }
            let got: Vec<(i64, usize)> = newest_per_key(&as_integers)
                .into_iter()
                .map(|(l, r)| (as_integers[l].columns[0].as_primitive::<arrow::datatypes::Int64Type>().value(r), l))
                .collect();
            proptest::prop_assert_eq!(got, expected);
        }
    }
}
