//! When a sorted table compacts on its own: size-tiered minor compaction per tablet.
//!
//! A read of a key merges the chunks of its tablet that may hold it. Chunks whose keys rise
//! without overlapping, one after another in the chunk list (a bulk write's or a
//! compaction's chunks of a tablet, cut every million rows), make one *layer*: a key is in at
//! most one of them. The number of layers meeting a tablet (its *depth*, [`depth`]) is its
//! read amplification; the number of chunks is not (a 100M-row import leaves a dozen chunks
//! per tablet, all one layer, already read-optimal). Each commit that adds chunks to a
//! table (a flush, a bulk write) asks [`choose`] whether one of its tablets should compact,
//! in the process that made the commit: the shell and a library user's long-lived
//! [`Store`](crate::Store) as much as a one-shot command.
//!
//! The rule, per tablet, over the layers that meet it, newest first:
//!
//! * **Tiers.** Take the newest layer, then each next older one while it holds at most
//!   [`SIZE_RATIO`] times the versions of all the newer ones taken. When that gathers at least
//!   [`MIN_MERGE_CHUNKS`] layers, their chunks merge. Small flushes so merge with each other,
//!   and a large layer is rewritten only when what lies on top of it has grown comparable to
//!   it: each version is rewritten about `log(table size / flush size)` times, not once per
//!   flush.
//! * **Depth cap.** A tablet deeper than [`MAX_OVERLAPPING_CHUNKS`] layers merges all of them,
//!   whatever their sizes.
//!
//! The deepest tablet's choice is taken, then widened to a *suffix over its keys*: every chunk
//! at least as new as the oldest one chosen that shares keys with the choice joins it (a chunk
//! that spans several tablets, from before a reshard, brings its neighbours in). What is left
//! out is then older than everything chosen or meets none of its keys, so the merged chunks
//! can take the place of the newest chosen one and reads see the same versions in the same
//! order (see [`Action::CompactChunks`](crate::log::Action)).
//!
//! Retention applies on the way as far as a partial history allows
//! ([`compact_recent_versions`](crate::kernel::retention::compact_recent_versions)); a full
//! compaction (`compact`, and checkpoints for tables deeper than
//! [`AUTO_COMPACTION_CHUNKS`](crate::io::checkpoint::AUTO_COMPACTION_CHUNKS)) also drops what only
//! a whole history can tell. `mount_config/enable_compaction_and_partitioning=%false` turns
//! the policy off for a table, as in YT.

use std::cmp::Ordering;

use dynql_core::{compare_rows, Value};

use crate::kernel::chunk_ref::ChunkRef;
use crate::kernel::key_range::KeyRange;

/// A tier merges once it gathers this many layers (YT's `min_compaction_store_count`).
pub const MIN_MERGE_CHUNKS: usize = 3;

/// A tablet deeper than this many layers merges them all.
pub const MAX_OVERLAPPING_CHUNKS: usize = 8;

/// A layer joins the tier above it while it holds at most this many times the versions of
/// the tier.
pub const SIZE_RATIO: u64 = 2;

/// Whether the chunk's keys meet `range`.
fn meets(range: &KeyRange, chunk: &ChunkRef) -> bool {
    range.upper.is_after(&chunk.min_key) && !range.lower.is_after(&chunk.max_key)
}

/// Whether two chunks' key spans share a key.
fn share_keys(a: (&[Value], &[Value]), b: &ChunkRef) -> bool {
    compare_rows(a.0, &b.max_key) != Ordering::Greater
        && compare_rows(&b.min_key, a.1) != Ordering::Greater
}

/// The chunks meeting `tablet` (indices into `chunks`, oldest first) in *layers*: a layer is
/// a sequence of consecutive chunks whose keys rise without overlapping (a bulk write's or a
/// compaction's chunks of a tablet, cut every [`BULK_CHUNK_ROWS`](crate::bulk::BULK_CHUNK_ROWS)
/// rows; flushes of disjoint keys), so a read of one key meets at most one chunk of it.
/// The number of layers is the tablet's read amplification, its *depth*.
fn layers(tablet: &KeyRange, chunks: &[ChunkRef]) -> Vec<Vec<usize>> {
    let mut layers: Vec<Vec<usize>> = Vec::new();
    for i in (0..chunks.len()).filter(|&i| meets(tablet, &chunks[i])) {
        let continues = layers.last().is_some_and(|layer| {
            let last = &chunks[*layer.last().expect("layers are not empty")];
            compare_rows(&last.max_key, &chunks[i].min_key) == Ordering::Less
        });
        match layers.last_mut() {
            Some(layer) if continues => layer.push(i),
            _ => layers.push(vec![i]),
        }
    }
    layers
}

/// The depth of the deepest tablet: the most chunks a read of one key may have to merge
/// (see [`layers`]).
pub fn depth(tablets: &[KeyRange], chunks: &[ChunkRef]) -> usize {
    tablets
        .iter()
        .map(|t| layers(t, chunks).len())
        .max()
        .unwrap_or(0)
}

/// The chunks one tablet would merge (indices into `chunks`, oldest first), if any, and how
/// many layers they make.
fn tablet_choice(tablet: &KeyRange, chunks: &[ChunkRef]) -> Option<(usize, Vec<usize>)> {
    let layers = layers(tablet, chunks);
    if layers.len() > MAX_OVERLAPPING_CHUNKS {
        return Some((layers.len(), layers.concat()));
    }
    let rows = |layer: &[usize]| layer.iter().map(|&i| chunks[i].rows).sum::<u64>();
    let mut tier = 0;
    let mut versions = 0u64;
    for layer in layers.iter().rev() {
        if tier > 0 && rows(layer) > SIZE_RATIO.saturating_mul(versions) {
            break;
        }
        tier += 1;
        versions = versions.saturating_add(rows(layer));
    }
    (tier >= MIN_MERGE_CHUNKS).then(|| (tier, layers[layers.len() - tier..].concat()))
}

/// The chunks of a sorted table with tablets `tablets` that should merge now (indices into
/// `chunks`, oldest first), or `None`. See the module docs.
pub fn choose(tablets: &[KeyRange], chunks: &[ChunkRef]) -> Option<Vec<usize>> {
    let (_, mut chosen) = tablets
        .iter()
        .filter_map(|t| tablet_choice(t, chunks))
        .max_by_key(|(layers, _)| *layers)?;
    // Widen to a suffix over the chosen keys (a fixed point: each chunk taken may widen the
    // keys).
    let oldest = chosen[0];
    let mut span = (
        chunks[oldest].min_key.clone(),
        chunks[oldest].max_key.clone(),
    );
    loop {
        for &i in &chosen {
            let c = &chunks[i];
            if compare_rows(&c.min_key, &span.0) == Ordering::Less {
                span.0 = c.min_key.clone();
            }
            if compare_rows(&c.max_key, &span.1) == Ordering::Greater {
                span.1 = c.max_key.clone();
            }
        }
        let widened: Vec<usize> = (oldest..chunks.len())
            .filter(|&i| chosen.contains(&i) || share_keys((&span.0, &span.1), &chunks[i]))
            .collect();
        if widened.len() == chosen.len() {
            return Some(chosen);
        }
        chosen = widened;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kernel::key_range::KeyBound;

    fn chunk(rows: u64, lo: i64, hi: i64) -> ChunkRef {
        ChunkRef {
            path: format!("c{rows}-{lo}-{hi}"),
            rows,
            min_key: vec![Value::Int64(lo)],
            max_key: vec![Value::Int64(hi)],
            min_timestamp: 0,
            max_timestamp: 0,
            bytes: 0,
            row_groups: vec![],
            checksum: None,
            commit_timestamp: None,
            key_filter: None,
        }
    }

    fn tablets(pivots: &[i64]) -> Vec<KeyRange> {
        let mut bounds = vec![KeyBound::new(vec![], false)];
        bounds.extend(
            pivots
                .iter()
                .map(|p| KeyBound::new(vec![Value::Int64(*p)], false)),
        );
        (0..bounds.len())
            .map(|i| KeyRange {
                lower: bounds[i].clone(),
                upper: bounds.get(i + 1).cloned().unwrap_or_else(KeyBound::max),
            })
            .collect()
    }

    /// One step of the property below.
    #[derive(Debug, Clone)]
    enum Op {
        Overwrite(i64, i64),
        Delete(i64),
        /// An aggregate delta: builds on the version below it.
        Add(i64, i64),
        Flush,
    }

    fn op() -> impl proptest::strategy::Strategy<Value = Op> {
        use proptest::prelude::*;
        prop_oneof![
            (0i64..40, 0i64..100).prop_map(|(k, v)| Op::Overwrite(k, v)),
            (0i64..40).prop_map(Op::Delete),
            (0i64..40, 0i64..100).prop_map(|(k, v)| Op::Add(k, v)),
            Just(Op::Flush),
            Just(Op::Flush),
        ]
    }

    /// The rows read at the end, the table's greatest depth ever and its depth at the end.
    async fn run(ops: &[Op], policy: bool) -> (Vec<Vec<Value>>, usize, usize) {
        use crate::kernel::catalog::TableOptions;
        use crate::kernel::mvcc::WriteKind;
        use crate::kernel::retention::Retention;
        use crate::store::Store;
        let store = Store::open("memory://").unwrap();
        let schema = dynql_core::TableSchema::parse(
            "[{name=k;type=int64;sort_order=ascending};{name=v;type=int64};{name=s;type=int64;aggregate=sum}]",
        )
        .unwrap();
        let options = TableOptions {
            pivot_keys: Some(vec![vec![], vec![Value::Int64(20)]]),
            // Retention drops whatever it may: the policy must still keep every read.
            retention: Retention {
                min_data_versions: 1,
                max_data_versions: 1,
                min_data_ttl: 0,
                max_data_ttl: 0,
            },
            enable_compaction_and_partitioning: Some(policy),
            ..TableOptions::default()
        };
        store.create_table("//t", schema, options).await.unwrap();
        let mut deepest = 0;
        for op in ops {
            let k = |k: &i64| Some(Value::Int64(*k));
            match op {
                Op::Overwrite(key, v) => store
                    .write_rows(
                        "//t",
                        WriteKind::Overwrite,
                        false,
                        vec![vec![k(key), k(v), k(v)]],
                    )
                    .await
                    .map(|_| ()),
                Op::Delete(key) => store
                    .write_rows(
                        "//t",
                        WriteKind::Delete,
                        false,
                        vec![vec![k(key), None, None]],
                    )
                    .await
                    .map(|_| ()),
                Op::Add(key, v) => store
                    .write_rows(
                        "//t",
                        WriteKind::Update,
                        true,
                        vec![vec![k(key), None, k(v)]],
                    )
                    .await
                    .map(|_| ()),
                Op::Flush => store.flush_table("//t").await.map(|_| ()),
            }
            .unwrap();
            let state = store.refresh().await.unwrap();
            let (entry, data) = state.table_data("//t").unwrap();
            deepest = deepest.max(depth(&crate::scan_plan::tablet_ranges(entry), &data.chunks));
        }
        let rows = store
            .read_rows("//t", crate::kernel::timestamp::Timestamp::MAX)
            .await
            .unwrap();
        let state = store.refresh().await.unwrap();
        let (entry, data) = state.table_data("//t").unwrap();
        let depth_now = depth(&crate::scan_plan::tablet_ranges(entry), &data.chunks);
        (rows, deepest, depth_now)
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(32))]
        /// Whatever the writes and flushes, a table that compacts on its own reads exactly as
        /// one that never does, and no tablet is ever met by more than
        /// MAX_OVERLAPPING_CHUNKS chunks.
        #[test]
        fn the_policy_never_changes_a_read_and_bounds_depth(
            ops in proptest::collection::vec(op(), 1..80),
        ) {
            let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
            let (with_policy, deepest, _) = rt.block_on(run(&ops, true));
            let (without, _, _) = rt.block_on(run(&ops, false));
            proptest::prop_assert_eq!(with_policy, without);
            proptest::prop_assert!(deepest <= MAX_OVERLAPPING_CHUNKS, "depth {}", deepest);
        }
    }

    /// The benchmark's shape: eight flushes of the same keys leave at most two layers per
    /// tablet.
    #[tokio::test]
    async fn eight_flushes_of_the_same_keys_leave_few_chunks() {
        let ops: Vec<Op> = (0..8)
            .flat_map(|layer| {
                (0..40)
                    .map(move |k| Op::Overwrite(k, layer))
                    .chain(std::iter::once(Op::Flush))
            })
            .collect();
        let (rows, _, depth) = run(&ops, true).await;
        assert!(depth <= 2, "depth {depth}");
        assert_eq!(rows.len(), 40);
        assert!(rows.iter().all(|r| r[1] == Value::Int64(7)));
    }

    #[test]
    fn small_flushes_merge_once_a_tier_fills_and_a_large_base_waits() {
        let one = tablets(&[]);
        let mut chunks = vec![chunk(1_000_000, 0, 999)];
        for n in 1..MIN_MERGE_CHUNKS as u64 {
            chunks.push(chunk(1000 + n, 0, 999));
        }
        assert_eq!(choose(&one, &chunks), None, "one flush short of a tier");
        chunks.push(chunk(1000, 0, 999));
        assert_eq!(
            choose(&one, &chunks),
            Some((1..=MIN_MERGE_CHUNKS).collect())
        );
        // A base comparable to the tier on top of it joins.
        let mut chunks = vec![chunk(3000, 0, 999)];
        for _ in 1..MIN_MERGE_CHUNKS {
            chunks.push(chunk(1000, 0, 999));
        }
        assert_eq!(choose(&one, &chunks), Some((0..MIN_MERGE_CHUNKS).collect()));
    }

    #[test]
    fn chunks_whose_keys_rise_without_overlap_are_one_layer() {
        let one = tablets(&[]);
        // A large import: a dozen chunks of a million rows, one after another in key order.
        let mut chunks: Vec<ChunkRef> = (0..12)
            .map(|i| chunk(1_000_000, i * 100, i * 100 + 99))
            .collect();
        assert_eq!(depth(&one, &chunks), 1);
        assert_eq!(choose(&one, &chunks), None);
        // Flushes over its keys are layers of their own; a tier of them merges without it.
        for _ in 0..MIN_MERGE_CHUNKS {
            chunks.push(chunk(10, 0, 1199));
        }
        assert_eq!(depth(&one, &chunks), 1 + MIN_MERGE_CHUNKS);
        assert_eq!(
            choose(&one, &chunks),
            Some((12..12 + MIN_MERGE_CHUNKS).collect())
        );
        // A chunk that overlaps the one before it starts a new layer, even among disjoint ones.
        let chunks = vec![
            chunk(5, 0, 9),
            chunk(5, 20, 29),
            chunk(5, 25, 40),
            chunk(5, 50, 60),
        ];
        assert_eq!(depth(&one, &chunks), 2);
        // Past the cap, every layer merges, all chunks of each.
        let mut chunks: Vec<ChunkRef> = (0..3).map(|i| chunk(1000, i * 10, i * 10 + 9)).collect();
        for i in 0..MAX_OVERLAPPING_CHUNKS as u64 {
            chunks.push(chunk(10u64.pow(9 - i as u32), 0, 29));
        }
        assert_eq!(depth(&one, &chunks), 1 + MAX_OVERLAPPING_CHUNKS);
        assert_eq!(choose(&one, &chunks), Some((0..chunks.len()).collect()));
    }

    #[test]
    fn a_deep_tablet_merges_whatever_the_sizes() {
        let one = tablets(&[]);
        // Each chunk ten times the next newer: never a tier.
        let chunks: Vec<ChunkRef> = (0..=MAX_OVERLAPPING_CHUNKS as u32)
            .map(|i| chunk(10u64.pow(10 - i), 0, 9))
            .collect();
        assert_eq!(
            choose(&one, &chunks[..MAX_OVERLAPPING_CHUNKS]),
            None,
            "at the cap"
        );
        assert_eq!(
            choose(&one, &chunks),
            Some((0..=MAX_OVERLAPPING_CHUNKS).collect())
        );
    }

    #[test]
    fn tablets_count_their_own_chunks_and_the_choice_covers_the_keys_it_meets() {
        // Two tablets split at 100: the left one has five flushes, the right one two.
        let two = tablets(&[100]);
        let mut chunks = vec![chunk(1000, 100, 199), chunk(1000, 120, 150)];
        for _ in 0..5 {
            chunks.push(chunk(10, 0, 99));
        }
        assert_eq!(choose(&two, &chunks), Some(vec![2, 3, 4, 5, 6]));
        // A newer chunk straddling the pivot (from before a reshard) meets the left tablet's
        // keys: it joins, and with it the newer right chunk it shares keys with, but not the
        // older ones on the right.
        let mut chunks = vec![chunk(1000, 100, 199)];
        for _ in 0..4 {
            chunks.push(chunk(10, 0, 99));
        }
        chunks.insert(2, chunk(10, 50, 150));
        chunks.push(chunk(10, 140, 160));
        let chosen = choose(&two, &chunks).unwrap();
        assert_eq!(chosen, vec![1, 2, 3, 4, 5, 6]);
        assert!(!chosen.contains(&0));
    }
}
