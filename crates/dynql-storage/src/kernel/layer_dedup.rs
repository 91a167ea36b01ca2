//! What each clean layer of a piece keeps when the rows may come out of key order: the rows
//! whose key no newer layer holds. Two ways to find them:
//!
//! - [`kept_by_key_offsets`]: where every layer is one commit and the keys are one or two
//!   non-null int64/uint64 columns whose values leave little room between them (a piece of
//!   a table keyed by `(hash % 64, id)` holds a stretch of ids under one or two hashes),
//!   each key is an offset into a bitmap, and the layers, newest first, mark their keys: a
//!   row whose key is marked already is overwritten. One pass per layer over its key columns, no comparison
//!   between layers, no dependency from one row to the next (a merge's next step waits on the
//!   last one's comparisons).
//! - [`kept_rows`]: from the runs of the merge by key ([`super::layer_merge`]), for any
//!   other piece.
//!
//! Pure: arrays in, masks out.

use arrow::array::{Array, ArrayRef, AsArray, BooleanArray};
use arrow::buffer::{BooleanBuffer, Buffer, ScalarBuffer};
use arrow::datatypes::{Int64Type, UInt64Type};

use super::layer_merge::{Layer, Run};

/// The rows a layer keeps of its rows in a piece.
#[derive(Debug, PartialEq)]
pub(crate) enum Kept {
    /// All of them (no newer layer overwrites any of its keys).
    All,
    /// Those set in the mask, of which there is one at least and not all.
    Some(BooleanArray),
}

/// At most this many bits of bitmap per row of the piece (and at least [`MIN_BITMAP_BITS`]):
/// past it, clearing the bitmap would cost more than merging. A table keyed by
/// `(farm_hash(id) % 64, id)` holds one id in 64 under each hash: 64 bits a row.
const BITS_PER_ROW: u128 = 256;
const MIN_BITMAP_BITS: u128 = 1 << 16;

/// A key column's values as unsigned integers whose wrapping differences are the values'
/// differences (an int64's bits read as a uint64: two's complement), and whether the
/// values are signed.
struct Bits {
    values: ScalarBuffer<u64>,
    signed: bool,
}

impl Bits {
    /// The values of `column`, if a non-null, non-empty int64 or uint64 column.
    fn of(column: &ArrayRef) -> Option<Bits> {
        if column.null_count() > 0 || column.is_empty() {
            return None;
        }
        if let Some(column) = column.as_primitive_opt::<Int64Type>() {
            let values = column.values();
            return Some(Bits {
                values: ScalarBuffer::new(values.inner().clone(), 0, values.len()),
                signed: true,
            });
        }
        let column = column.as_primitive_opt::<UInt64Type>()?;
        Some(Bits {
            values: column.values().clone(),
            signed: false,
        })
    }

    /// Value `i` as a number.
    fn value(&self, i: usize) -> i128 {
        match self.signed {
            true => i128::from(self.values[i] as i64),
            false => i128::from(self.values[i]),
        }
    }

    /// The least and greatest of rows `rows` (not empty) as numbers, and the least's bits.
    fn bounds(&self, rows: std::ops::Range<usize>) -> (i128, i128, u64) {
        // An int64's bits with the sign bit flipped are in the values' order: one unsigned
        // minimum and maximum (which the compiler vectorises) for both types.
        let flip = if self.signed { 1u64 << 63 } else { 0 };
        let (least, greatest) = self.values[rows]
            .iter()
            .map(|&v| v ^ flip)
            .fold((u64::MAX, 0), |(l, g), v| (l.min(v), g.max(v)));
        let number = |ordered: u64| {
            let bits = ordered ^ flip;
            match self.signed {
                true => i128::from(bits as i64),
                false => i128::from(bits),
            }
        };
        (number(least), number(greatest), least ^ flip)
    }
}

/// Rows of a layer up to `end` (from the previous segment's end) whose offsets are
/// `base` plus their value's difference from `least` (bits).
struct Segment {
    end: usize,
    base: u64,
    least: u64,
}

/// What each layer keeps (`None`: no row), finding overwritten keys in a bitmap of the keys'
/// offsets (see the module docs). `keys`: each layer's key columns (each layer the same
/// types); `timestamps`: each layer's one commit timestamp; `bitmap`: room to reuse. Of equal
/// timestamps the first layer's version is kept, as [`super::layer_merge`] keeps it. `None`
/// where the keys are not one or two non-null int64/uint64 columns, or span too much room.
///
/// A key of one column is its offset from the least; of two, each value of the first column
/// (the keys are sorted by it: a layer's rows of one value are one stretch) gets the span of
/// second values its rows take, one after another.
pub(crate) fn kept_by_key_offsets(
    keys: &[Vec<ArrayRef>],
    timestamps: &[u64],
    bitmap: &mut Vec<u64>,
) -> Option<Vec<Option<Kept>>> {
    let columns = keys.first()?.len();
    if !(1..=2).contains(&columns) {
        return None;
    }
    let layers: Vec<Vec<Bits>> = keys
        .iter()
        .map(|layer| layer.iter().map(Bits::of).collect::<Option<Vec<_>>>())
        .collect::<Option<_>>()?;
    if layers.iter().any(|l| l.len() != columns) {
        return None;
    }
    let rows: usize = layers.iter().map(|l| l[0].values.len()).sum();
    // Each layer's stretches of one first value (one stretch of all rows for one column),
    // with the value (none for one column).
    let stretches: Vec<Vec<(Option<i128>, usize)>> = layers
        .iter()
        .map(|l| {
            let first = &l[0];
            let n = first.values.len();
            if columns == 1 {
                return vec![(None, n)];
            }
            let mut out = Vec::new();
            let mut start = 0;
            while start < n {
                let v = first.values[start];
                // Sorted: the rows of one value are consecutive.
                let end = start + first.values[start..].partition_point(|&x| x == v);
                out.push((Some(first.value(start)), end));
                start = end;
            }
            out
        })
        .collect();
    // The span of the counted column (the only one, or the second) under each first value.
    let counted = columns - 1;
    let mut spans: std::collections::BTreeMap<Option<i128>, (i128, i128, u64)> =
        std::collections::BTreeMap::new();
    for (layer, stretches) in layers.iter().zip(&stretches) {
        let mut start = 0;
        for &(value, end) in stretches {
            let (least, greatest, bits) = layer[counted].bounds(start..end);
            spans
                .entry(value)
                .and_modify(|s| {
                    if least < s.0 {
                        (s.0, s.2) = (least, bits);
                    }
                    s.1 = s.1.max(greatest);
                })
                .or_insert((least, greatest, bits));
            start = end;
        }
    }
    // Room for each first value, one after another.
    let mut bases = std::collections::BTreeMap::new();
    let mut room: u128 = 0;
    for (value, &(least, greatest, bits)) in &spans {
        bases.insert(*value, (room as u64, bits));
        room += (greatest - least + 1) as u128;
        if room > MIN_BITMAP_BITS.max(BITS_PER_ROW * rows as u128) {
            return None;
        }
    }
    bitmap.clear();
    bitmap.resize(room.div_ceil(64) as usize, 0);
    // Newest first; of equal timestamps, the first layer first.
    let mut order: Vec<usize> = (0..keys.len()).collect();
    order.sort_by_key(|&l| (std::cmp::Reverse(timestamps[l]), l));
    let mut kept: Vec<Option<Kept>> = (0..keys.len()).map(|_| None).collect();
    for l in order {
        let segments: Vec<Segment> = stretches[l]
            .iter()
            .map(|&(value, end)| {
                let (base, least) = bases[&value];
                Segment { end, base, least }
            })
            .collect();
        kept[l] = mark(bitmap, &layers[l][counted].values, &segments);
    }
    Some(kept)
}

/// Marks the offsets of a layer's rows (`values`, in `segments`) in `bitmap`, and gives
/// what the layer keeps: the rows whose offset was not marked before.
fn mark(bitmap: &mut [u64], values: &[u64], segments: &[Segment]) -> Option<Kept> {
    let rows = values.len();
    let mut words = vec![0u64; rows.div_ceil(64)];
    let mut kept = 0usize;
    let mut s = 0;
    for (w, word) in words.iter_mut().enumerate() {
        let mut bits = 0u64;
        for (i, &value) in values.iter().enumerate().skip(w * 64).take(64) {
            while i >= segments[s].end {
                s += 1;
            }
            let segment = &segments[s];
            let o = segment.base + value.wrapping_sub(segment.least);
            let (at, bit) = ((o >> 6) as usize, 1u64 << (o & 63));
            let fresh = bitmap[at] & bit == 0;
            bitmap[at] |= bit;
            bits |= u64::from(fresh) << (i & 63);
        }
        kept += bits.count_ones() as usize;
        *word = bits;
    }
    match kept {
        0 => None,
        k if k == rows => Some(Kept::All),
        _ => Some(Kept::Some(BooleanArray::new(
            BooleanBuffer::new(Buffer::from_vec(words), 0, rows),
            None,
        ))),
    }
}

/// What each of `layers` keeps of its rows, as `runs` (their merge) pick them: `None` for a
/// layer that keeps no row.
pub(crate) fn kept_rows(layers: &[Layer], runs: &[Run]) -> Vec<Option<Kept>> {
    let mut counts = vec![0usize; layers.len()];
    for run in runs {
        counts[run.layer] += run.rows;
    }
    let lengths: Vec<usize> = layers.iter().map(|l| l.rows.2.len()).collect();
    // A mask only for the layers that keep part of their rows; each mask is built in row
    // order (a layer's runs come in its own key order), a stretch at a time.
    let mut masks: Vec<Option<(arrow::array::BooleanBufferBuilder, usize)>> = counts
        .iter()
        .zip(&lengths)
        .map(|(&count, &length)| {
            (count > 0 && count < length)
                .then(|| (arrow::array::BooleanBufferBuilder::new(length), 0))
        })
        .collect();
    for run in runs {
        if let Some((mask, next)) = &mut masks[run.layer] {
            mask.append_n(run.start - *next, false);
            mask.append_n(run.rows, true);
            *next = run.start + run.rows;
        }
    }
    masks
        .into_iter()
        .zip(counts.iter().zip(&lengths))
        .map(|(mask, (&count, &length))| match mask {
            Some((mut mask, next)) => {
                mask.append_n(length - next, false);
                Some(Kept::Some(BooleanArray::new(mask.finish(), None)))
            }
            None => (count == length && count > 0).then_some(Kept::All),
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use std::collections::{BTreeMap, BTreeSet};
    use std::sync::Arc;

    use arrow::array::{Int64Array, UInt64Array};

    use super::*;
    use crate::kernel::layer_merge::{newest_per_key, push_row, CommitTimestamps, LayerKeys};

    /// The rows of each layer set in `kept` (all of them for [`Kept::All`]).
    fn kept_sets(kept: &[Option<Kept>], lengths: &[usize]) -> Vec<BTreeSet<usize>> {
        kept.iter()
            .zip(lengths)
            .map(|(k, &n)| match k {
                None => BTreeSet::new(),
                Some(Kept::All) => (0..n).collect(),
                Some(Kept::Some(mask)) => {
                    assert_eq!(mask.len(), n);
                    let set: BTreeSet<usize> = (0..n).filter(|&i| mask.value(i)).collect();
                    assert!(
                        !set.is_empty() && set.len() < n,
                        "a mask keeps some, not all"
                    );
                    set
                }
            })
            .collect()
    }

    /// (layer, row) of each key's newest version: the greatest timestamp, of equal ones the
    /// first layer's.
    fn model<K: Ord + Copy>(layers: &[Vec<K>], timestamps: &[u64]) -> Vec<BTreeSet<usize>> {
        let mut newest: BTreeMap<K, (u64, usize, usize)> = BTreeMap::new();
        for (l, layer) in layers.iter().enumerate() {
            for (r, &key) in layer.iter().enumerate() {
                let t = timestamps[l];
                let kept = newest.entry(key).or_insert((t, l, r));
                if t > kept.0 {
                    *kept = (t, l, r);
                }
            }
        }
        let mut sets = vec![BTreeSet::new(); layers.len()];
        for (_, l, r) in newest.into_values() {
            sets[l].insert(r);
        }
        sets
    }

    proptest::proptest! {
        /// The bitmap keeps each key's newest version, as the model does, for keys of one
        /// int64 column and of two columns (uint64, int64) spanning extremes of both types
        /// (offsets are differences of bits, so a span across zero or the sign bit must still
        /// work); and [`kept_rows`] of the merge's runs keeps the same.
        #[test]
        fn the_bitmap_keeps_what_the_merge_keeps(
            layers in proptest::collection::vec(
                proptest::collection::btree_set((0u64..3, -20i64..20), 0..60),
                1..8,
            ),
            timestamps in proptest::collection::vec(0u64..4, 8),
            base in proptest::prop_oneof![
                proptest::strategy::Just(0i64),
                proptest::strategy::Just(i64::MIN),
                proptest::strategy::Just(i64::MAX - 40),
                -1000i64..1000,
            ],
            high in proptest::prop_oneof![
                proptest::strategy::Just(0u64),
                proptest::strategy::Just(u64::MAX - 3),
                proptest::strategy::Just((1 << 63) - 1),
            ],
        ) {
            let layers: Vec<Vec<(u64, i64)>> = layers
                .into_iter()
                .filter(|l| !l.is_empty())
                .map(|l| {
                    l.into_iter()
                        .map(|(a, b)| (a + high, b.saturating_add(base).max(base)))
                        .collect::<BTreeSet<_>>()
                        .into_iter()
                        .collect()
                })
                .collect();
            proptest::prop_assume!(!layers.is_empty());
            let timestamps = &timestamps[..layers.len()];
            let lengths: Vec<usize> = layers.iter().map(Vec::len).collect();
            let two: Vec<Vec<ArrayRef>> = layers
                .iter()
                .map(|l| {
                    vec![
                        Arc::new(UInt64Array::from_iter_values(l.iter().map(|k| k.0))) as ArrayRef,
                        Arc::new(Int64Array::from_iter_values(l.iter().map(|k| k.1))) as ArrayRef,
                    ]
                })
                .collect();
            let expected = model(&layers, timestamps);
            let kept = kept_by_key_offsets(&two, timestamps, &mut Vec::new()).expect("a small box");
            proptest::prop_assert_eq!(&kept_sets(&kept, &lengths), &expected);
            // The same through the merge's runs.
            let merged: Vec<Layer> = two
                .iter()
                .zip(timestamps)
                .map(|(columns, &t)| {
                    let mut keys = Vec::new();
                    assert!(crate::sort_keys::append_integer_keys(columns, &mut keys));
                    Layer {
                        keys: LayerKeys::Integers(keys),
                        rows: (0, 0, 0..columns[0].len()),
                        timestamps: CommitTimestamps::One(t),
                    }
                })
                .collect();
            let runs = newest_per_key(&merged);
            proptest::prop_assert_eq!(&kept_sets(&kept_rows(&merged, &runs), &lengths), &expected);
            // One int64 column: each layer's second values, once each.
            let one: Vec<Vec<i64>> = layers
                .iter()
                .map(|l| l.iter().map(|k| k.1).collect::<BTreeSet<_>>().into_iter().collect())
                .collect();
            let columns: Vec<Vec<ArrayRef>> = one
                .iter()
                .map(|l| vec![Arc::new(Int64Array::from(l.clone())) as ArrayRef])
                .collect();
            let lengths: Vec<usize> = one.iter().map(Vec::len).collect();
            let kept = kept_by_key_offsets(&columns, timestamps, &mut Vec::new()).expect("a small box");
            proptest::prop_assert_eq!(&kept_sets(&kept, &lengths), &model(&one, timestamps));
        }

        /// [`kept_rows`] keeps exactly the rows the runs pick of each layer.
        #[test]
        fn kept_rows_are_the_rows_the_runs_pick(
            lengths in proptest::collection::vec(1usize..40, 1..5),
            picks in proptest::collection::vec(0usize..100, 0..200),
            whole in proptest::collection::vec(proptest::bool::ANY, 5),
        ) {
            let layers: Vec<Layer> = lengths
                .iter()
                .map(|&n| Layer {
                    keys: LayerKeys::Integers(Vec::new()),
                    rows: (0, 0, 0..n),
                    timestamps: CommitTimestamps::One(1),
                })
                .collect();
            let mut picked: Vec<BTreeSet<usize>> = lengths
                .iter()
                .enumerate()
                .map(|(l, &n)| if whole[l] { (0..n).collect() } else { BTreeSet::new() })
                .collect();
            for p in picks {
                let layer = p % lengths.len();
                picked[layer].insert(p % lengths[layer]);
            }
            let mut runs = Vec::new();
            for (layer, rows) in picked.iter().enumerate() {
                for &row in rows {
                    push_row(&mut runs, layer, row);
                }
            }
            proptest::prop_assert_eq!(&kept_sets(&kept_rows(&layers, &runs), &lengths), &picked);
        }
    }

    #[test]
    fn keys_spanning_a_large_box_or_of_other_types_are_declined() {
        let wide: Vec<Vec<ArrayRef>> = vec![
            vec![Arc::new(Int64Array::from(vec![0, i64::MAX])) as ArrayRef],
            vec![Arc::new(Int64Array::from(vec![5])) as ArrayRef],
        ];
        assert!(kept_by_key_offsets(&wide, &[1, 2], &mut Vec::new()).is_none());
        let strings: Vec<Vec<ArrayRef>> = vec![vec![
            Arc::new(arrow::array::StringArray::from(vec!["a"])) as ArrayRef,
        ]];
        assert!(kept_by_key_offsets(&strings, &[1], &mut Vec::new()).is_none());
        let nulls: Vec<Vec<ArrayRef>> = vec![vec![
            Arc::new(Int64Array::from(vec![None, Some(1)])) as ArrayRef
        ]];
        assert!(kept_by_key_offsets(&nulls, &[1], &mut Vec::new()).is_none());
    }
}
