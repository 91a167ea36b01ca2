//! Each key's newest version across clean layers (row groups of overlapping chunks, each
//! key-sorted, each key once), in key order, as runs of rows of one layer: the k-way merge
//! the column-by-column read of layers (`crate::clean_merge`) runs on their keys and commit
//! timestamps before it gathers any projected column. Pure: arrays in, runs out.

use arrow::array::UInt64Array;
use arrow::buffer::ScalarBuffer;
use arrow::row::Rows;

/// One clean row group's rows within a piece: their keys and commit timestamps, and where
/// they are (chunk index, row group, rows of the row group).
pub(crate) struct Layer {
    pub(crate) keys: LayerKeys,
    pub(crate) rows: (usize, usize, std::ops::Range<usize>),
    pub(crate) timestamps: CommitTimestamps,
}

/// The commit timestamps of a layer's rows.
pub(crate) enum CommitTimestamps {
    /// One for every row (a chunk of one commit): no column of copies to fill.
    One(u64),
    /// A row's own (a chunk of several commits).
    Each(UInt64Array),
}

impl Layer {
    #[inline]
    pub(crate) fn timestamp(&self, row: usize) -> u64 {
        match &self.timestamps {
            CommitTimestamps::One(t) => *t,
            CommitTimestamps::Each(column) => column.value(row),
        }
    }
}

/// A layer's keys as the merge compares them. Every layer of a merge has the same kind.
pub(crate) enum LayerKeys {
    /// Arrow's row format: any key.
    Rows(Rows),
    /// Keys of one or two non-null int64/uint64 columns as integers in key order (int64
    /// with its sign bit flipped): compared with no call and no row encoding.
    Integers(Vec<(u64, u64)>),
    /// A key of one non-null int64 column: its values as decoded, not even packed.
    Int64(ScalarBuffer<i64>),
}

/// Consecutive rows of one layer in a merge's output.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) struct Run {
    pub(crate) layer: usize,
    pub(crate) start: usize,
    pub(crate) rows: usize,
}

/// Appends row `row` of `layer` to `runs`, extending the last run where it continues it.
#[inline]
pub(crate) fn push_row(runs: &mut Vec<Run>, layer: usize, row: usize) {
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
pub(crate) fn rows_of(runs: &[Run]) -> Vec<(usize, usize)> {
    // Sized first: a flat map gives no length, and growing by doubling copies it over.
    let mut rows = Vec::with_capacity(runs.iter().map(|r| r.rows).sum());
    for r in runs {
        rows.extend((r.start..r.start + r.rows).map(|row| (r.layer, row)));
    }
    rows
}

/// Each key's newest version across `layers` (each key-sorted, each key once), in key order,
/// as runs of rows: a k-way merge through a tournament tree of the layers' next keys, with
/// the comparison made for the layers' kind of keys (no dispatch per comparison).
pub(crate) fn newest_per_key(layers: &[Layer]) -> Vec<Run> {
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

    use arrow::array::{ArrayRef, AsArray, Int64Array};
    use arrow::datatypes::DataType;
    use arrow::row::{RowConverter, SortField};

    use super::*;
    use crate::clean_merge::integer_keys;

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
    }
}
