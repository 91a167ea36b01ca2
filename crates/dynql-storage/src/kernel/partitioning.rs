//! Auto-partitioning by size (YDB's `AUTO_PARTITIONING_*` settings, design note 0008): a
//! sorted table's tablets split at their median key when their chunks outgrow the partition
//! size, and adjacent small tablets merge, within the table's minimum and maximum counts.
//!
//! A tablet's size is the bytes of the chunk row groups whose smallest key falls in it (a
//! chunk's bytes spread over its row groups by their rows); its median key is the smallest
//! key of the row group at which, in key order, half of those bytes lie before. Both come
//! from the catalog alone: planning reads no data. Versions still in the dynamic store are
//! not counted until they are flushed.
//!
//! A change is one [`Action::Reshard`](crate::log::Action) committed only if the pivot keys
//! are still those it was planned from, so it is atomic and crash-safe like any commit.
//! Resharding never moves data (scans select chunks by their key bounds; chunks written
//! before a split straddle the new pivot until compaction rewrites them per tablet), so a
//! split or merge never changes a query's result.
//!
//! Invariants of a plan (checked by the tests): pivot keys stay strictly increasing with the
//! first one empty; a split pivot lies strictly inside its tablet; a tablet is split or
//! merged, not both, in one round; the count never rises above the maximum through splits
//! nor falls below the minimum through merges.

use std::cmp::Ordering;

use dynql_core::{compare_rows, Value};
use serde::{Deserialize, Serialize};

use crate::error::{Error, Result};
use crate::kernel::catalog::AttributeValue;
use crate::kernel::chunk_ref::ChunkRef;
use crate::kernel::key_range::PivotKey;

/// YDB's default `AUTO_PARTITIONING_PARTITION_SIZE_MB`.
pub const DEFAULT_PARTITION_SIZE_MB: u64 = 2000;
/// YDB's default `AUTO_PARTITIONING_MIN_PARTITIONS_COUNT`.
pub const DEFAULT_MIN_PARTITIONS: u64 = 1;
/// YDB's default `AUTO_PARTITIONING_MAX_PARTITIONS_COUNT`.
pub const DEFAULT_MAX_PARTITIONS: u64 = 50;

/// Adjacent tablets merge when together they hold less than this fraction (1/`MERGE_BELOW`)
/// of the partition size: the halves of a split (each about half the size) never merge back.
pub const MERGE_BELOW: u64 = 4;

/// The attributes, as `create` and `set` take them.
pub const ATTRIBUTES: &[&str] = &[
    "auto_partitioning_by_size",
    "auto_partitioning_partition_size_mb",
    "auto_partitioning_min_partitions_count",
    "auto_partitioning_max_partitions_count",
];

/// A table's auto-partitioning settings.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct AutoPartitioning {
    /// `auto_partitioning_by_size`: off unless asked for (YT tables keep their tablets).
    pub by_size: bool,
    /// `auto_partitioning_partition_size_mb`: a tablet above it splits.
    pub partition_size_mb: u64,
    /// `auto_partitioning_min_partitions_count`: merging stops here.
    pub min_partitions_count: u64,
    /// `auto_partitioning_max_partitions_count`: splitting stops here.
    pub max_partitions_count: u64,
}

impl Default for AutoPartitioning {
    fn default() -> Self {
        AutoPartitioning {
            by_size: false,
            partition_size_mb: DEFAULT_PARTITION_SIZE_MB,
            min_partitions_count: DEFAULT_MIN_PARTITIONS,
            max_partitions_count: DEFAULT_MAX_PARTITIONS,
        }
    }
}

impl AutoPartitioning {
    /// Whether every setting has its default (the catalog then leaves them out).
    pub fn is_default(&self) -> bool {
        *self == AutoPartitioning::default()
    }

    /// The partition size in bytes.
    pub fn partition_size_bytes(&self) -> u64 {
        self.partition_size_mb.saturating_mul(1 << 20)
    }

    /// Sets attribute `name` (one of [`ATTRIBUTES`]); `Ok(false)` when `name` is not one of
    /// them. `auto_partitioning_by_size` takes `%true`/`%false` or YDB's `ENABLED`/`DISABLED`;
    /// the others a positive integer, with the minimum count at most the maximum.
    ///
    /// # Errors
    /// A value of the wrong kind, zero, or a minimum above the maximum.
    pub fn set(&mut self, name: &str, value: &AttributeValue) -> Result<bool> {
        let positive = || match value {
            AttributeValue::Number(n) if *n > 0 => Ok(*n),
            _ => Err(Error::Invalid(format!(
                "Attribute {name:?} must be a positive integer"
            ))),
        };
        let mut next = *self;
        match name {
            "auto_partitioning_by_size" => {
                next.by_size = match value {
                    AttributeValue::Boolean(b) => *b,
                    AttributeValue::Text(t) if t.eq_ignore_ascii_case("enabled") => true,
                    AttributeValue::Text(t) if t.eq_ignore_ascii_case("disabled") => false,
                    _ => {
                        return Err(Error::Invalid(format!(
                            "Attribute {name:?} must be %true or %false (or ENABLED or DISABLED)"
                        )))
                    }
                }
            }
            "auto_partitioning_partition_size_mb" => next.partition_size_mb = positive()?,
            "auto_partitioning_min_partitions_count" => next.min_partitions_count = positive()?,
            "auto_partitioning_max_partitions_count" => next.max_partitions_count = positive()?,
            _ => return Ok(false),
        }
        if next.min_partitions_count > next.max_partitions_count {
            return Err(Error::Invalid(format!(
                "auto_partitioning_min_partitions_count ({}) must not exceed auto_partitioning_max_partitions_count ({})",
                next.min_partitions_count, next.max_partitions_count
            )));
        }
        crate::kernel::pivots::check_tablet_count(
            "auto_partitioning_max_partitions_count",
            next.max_partitions_count.min(usize::MAX as u64) as usize,
        )?;
        *self = next;
        Ok(true)
    }
}

/// A part of a chunk whose keys are known: a row group, or a whole chunk written without
/// row-group bounds.
#[derive(Debug, Clone)]
struct Piece<'a> {
    min_key: &'a [Value],
    bytes: u64,
}

fn pieces(chunks: &[ChunkRef]) -> Vec<Piece<'_>> {
    let mut out = Vec::new();
    for chunk in chunks {
        if chunk.row_groups.is_empty() || chunk.rows == 0 {
            out.push(Piece {
                min_key: &chunk.min_key,
                bytes: chunk.bytes,
            });
            continue;
        }
        for group in &chunk.row_groups {
            out.push(Piece {
                min_key: &group.min_key,
                bytes: (chunk.bytes as u128 * group.rows as u128 / chunk.rows as u128) as u64,
            });
        }
    }
    out
}

/// The tablet (index into `pivots`) holding `key`: the last pivot not above it.
fn tablet_of(pivots: &[PivotKey], key: &[Value]) -> usize {
    pivots
        .partition_point(|p| compare_rows(&p.0, key) != Ordering::Greater)
        .saturating_sub(1)
}

/// The bytes of each tablet's chunks (by row group, see the module docs).
pub fn tablet_bytes(pivots: &[PivotKey], chunks: &[ChunkRef]) -> Vec<u64> {
    let mut bytes = vec![0u64; pivots.len().max(1)];
    if pivots.is_empty() {
        bytes[0] = chunks.iter().map(|c| c.bytes).sum();
        return bytes;
    }
    for piece in pieces(chunks) {
        bytes[tablet_of(pivots, piece.min_key)] += piece.bytes;
    }
    bytes
}

/// Pivot keys cutting the chunks into `count` tablets of about equal bytes, from the row
/// groups' key bounds alone (`reshard-table --tablet-count N --enable-slicing`): `[]` first,
/// strictly increasing, fewer when the row groups offer fewer distinct keys to cut at.
pub fn slice_pivots(chunks: &[ChunkRef], count: usize) -> Vec<Vec<Value>> {
    let mut all = pieces(chunks);
    all.sort_by(|a, b| compare_rows(a.min_key, b.min_key));
    let total: u64 = all.iter().map(|p| p.bytes).sum();
    let mut pivots: Vec<Vec<Value>> = vec![vec![]];
    let mut before = 0u64;
    let mut next = 1;
    for piece in &all {
        // Cut before this piece when the bytes before it reach the next share.
        while next < count
            && total > 0
            && before as u128 * count as u128 >= total as u128 * next as u128
        {
            if pivots
                .last()
                .is_some_and(|p| compare_rows(p, piece.min_key) == Ordering::Less)
            {
                pivots.push(piece.min_key.to_vec());
            }
            next += 1;
        }
        before += piece.bytes;
    }
    pivots
}

/// What one round of auto-partitioning changes.
#[derive(Debug, Clone, PartialEq)]
pub struct Repartition {
    /// The new pivot keys.
    pub pivots: Vec<PivotKey>,
    /// Tablets (indices before the change) split, with the pivot each gained.
    pub splits: Vec<(usize, PivotKey)>,
    /// Tablets (indices before the change) merged into the tablet before them.
    pub merges: Vec<usize>,
}

/// The median key of tablet `t`: the smallest key of the piece at which half of the
/// tablet's bytes lie before it, strictly inside the tablet; `None` if no piece starts
/// strictly inside it (one huge key range, or a single row group).
fn median_key(pivots: &[PivotKey], pieces: &[Piece<'_>], t: usize) -> Option<Vec<Value>> {
    let lower = &pivots[t].0;
    let upper = pivots.get(t + 1).map(|p| p.0.as_slice());
    let mut mine: Vec<&Piece<'_>> = pieces
        .iter()
        .filter(|p| tablet_of(pivots, p.min_key) == t)
        .collect();
    mine.sort_by(|a, b| compare_rows(a.min_key, b.min_key));
    let total: u64 = mine.iter().map(|p| p.bytes).sum();
    let inside = |key: &[Value]| {
        compare_rows(key, lower) == Ordering::Greater
            && upper.is_none_or(|u| compare_rows(key, u) == Ordering::Less)
    };
    // The candidate whose bytes before it are closest to half.
    let mut before = 0u64;
    let mut best: Option<(u64, &[Value])> = None;
    for piece in &mine {
        // Some bytes must lie before the pivot, or one side would be empty.
        if before > 0 && inside(piece.min_key) {
            let distance = before.abs_diff(total / 2);
            if best.is_none_or(|(d, _)| distance < d) {
                best = Some((distance, piece.min_key));
            }
        }
        before += piece.bytes;
    }
    best.map(|(_, key)| key.to_vec())
}

/// One round of splits and merges for a table with `pivots` and `chunks` under `settings`,
/// with a tablet splitting above `limit` bytes; `None` when nothing changes.
pub fn plan(
    pivots: &[PivotKey],
    chunks: &[ChunkRef],
    settings: &AutoPartitioning,
    limit: u64,
) -> Option<Repartition> {
    if pivots.is_empty() {
        return None;
    }
    let bytes = tablet_bytes(pivots, chunks);
    let all = pieces(chunks);
    let mut count = pivots.len() as u64;
    let mut splits: Vec<(usize, PivotKey)> = Vec::new();
    // Largest first, so the count cap keeps the splits that matter most.
    let mut order: Vec<usize> = (0..pivots.len()).filter(|&t| bytes[t] > limit).collect();
    order.sort_by_key(|&t| std::cmp::Reverse(bytes[t]));
    for t in order {
        if count >= settings.max_partitions_count {
            break;
        }
        if let Some(key) = median_key(pivots, &all, t) {
            splits.push((t, PivotKey(key)));
            count += 1;
        }
    }
    let split: Vec<usize> = splits.iter().map(|(t, _)| *t).collect();
    let mut merges = Vec::new();
    let mut t = 1;
    while t < pivots.len() {
        let pair = bytes[t - 1] + bytes[t];
        let touched = split.contains(&(t - 1)) || split.contains(&t) || merges.contains(&(t - 1));
        if !touched && count > settings.min_partitions_count && pair < limit / MERGE_BELOW {
            merges.push(t);
            count -= 1;
            t += 2;
        } else {
            t += 1;
        }
    }
    if splits.is_empty() && merges.is_empty() {
        return None;
    }
    let mut next = Vec::with_capacity(count as usize);
    for (t, pivot) in pivots.iter().enumerate() {
        if !merges.contains(&t) {
            next.push(pivot.clone());
        }
        if let Some((_, key)) = splits.iter().find(|(s, _)| *s == t) {
            next.push(key.clone());
        }
    }
    splits.sort_by_key(|(t, _)| *t);
    Some(Repartition {
        pivots: next,
        splits,
        merges,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kernel::chunk_ref::RowGroupRef;

    fn key(k: i64) -> Vec<Value> {
        vec![Value::Int64(k)]
    }

    fn pivots(keys: &[i64]) -> Vec<PivotKey> {
        let mut out = vec![PivotKey(vec![])];
        out.extend(keys.iter().map(|k| PivotKey(key(*k))));
        out
    }

    /// A chunk over keys `lo..hi` in row groups of `step` keys, `bytes_per_key` each.
    fn chunk(lo: i64, hi: i64, step: i64, bytes_per_key: u64) -> ChunkRef {
        let row_groups: Vec<RowGroupRef> = (lo..hi)
            .step_by(step as usize)
            .map(|s| RowGroupRef {
                rows: (step.min(hi - s)) as u64,
                min_key: key(s),
                max_key: key((s + step).min(hi) - 1),
                clean: Default::default(),
                nan_columns: None,
            })
            .collect();
        ChunkRef {
            path: format!("c{lo}-{hi}"),
            rows: (hi - lo) as u64,
            min_key: key(lo),
            max_key: key(hi - 1),
            min_timestamp: 0,
            max_timestamp: 0,
            bytes: (hi - lo) as u64 * bytes_per_key,
            row_groups,
            checksum: None,
            commit_timestamp: None,
            key_filter: None,
        }
    }

    fn enabled(min: u64, max: u64) -> AutoPartitioning {
        AutoPartitioning {
            by_size: true,
            partition_size_mb: 1,
            min_partitions_count: min,
            max_partitions_count: max,
        }
    }

    #[test]
    fn a_large_tablet_splits_at_its_median_key() {
        let chunks = [chunk(0, 1000, 10, 10)];
        let plan = plan_of(&pivots(&[]), &chunks, &enabled(1, 50), 5_000).unwrap();
        assert_eq!(plan.pivots, pivots(&[500]));
        assert_eq!(plan.splits, vec![(0, PivotKey(key(500)))]);
        assert!(plan.merges.is_empty());
        // Skewed bytes: the median follows the bytes, not the keys.
        let chunks = [chunk(0, 100, 10, 90), chunk(100, 1000, 10, 1)];
        let plan = plan_of(&pivots(&[]), &chunks, &enabled(1, 50), 5_000).unwrap();
        assert_eq!(plan.pivots, pivots(&[50]));
    }

    #[test]
    fn splits_stay_inside_their_tablet_and_respect_the_maximum() {
        let chunks = [chunk(0, 1000, 10, 10)];
        // Two tablets over 5,000 bytes each; room for one more tablet only.
        let plan = plan_of(&pivots(&[500]), &chunks, &enabled(1, 3), 4_000).unwrap();
        assert_eq!(plan.splits.len(), 1);
        assert_eq!(plan.pivots.len(), 3);
        let (t, pivot) = &plan.splits[0];
        let lower = if *t == 0 { i64::MIN } else { 500 };
        let upper = if *t == 0 { 500 } else { i64::MAX };
        let Value::Int64(p) = pivot.0[0] else {
            panic!()
        };
        assert!(lower < p && p < upper, "{p} outside tablet {t}");
        // At the maximum nothing splits.
        assert_eq!(
            plan_of(&pivots(&[500]), &chunks, &enabled(1, 2), 4_000),
            None
        );
        // A tablet of one row group has no key to split at.
        let one = [chunk(0, 10, 10, 1_000)];
        assert_eq!(plan_of(&pivots(&[]), &one, &enabled(1, 50), 5_000), None);
    }

    fn plan_of(
        p: &[PivotKey],
        c: &[ChunkRef],
        s: &AutoPartitioning,
        limit: u64,
    ) -> Option<Repartition> {
        plan(p, c, s, limit)
    }

    #[test]
    fn small_neighbours_merge_down_to_the_minimum() {
        let chunks = [chunk(0, 400, 10, 1)];
        // Four tablets of 100 bytes, partition size 10,000: pairs merge, one round at a time.
        let plan = plan_of(&pivots(&[100, 200, 300]), &chunks, &enabled(1, 50), 10_000).unwrap();
        assert_eq!(plan.merges, vec![1, 3]);
        assert_eq!(plan.pivots, pivots(&[200]));
        // The minimum stops merging.
        let plan = plan_of(&pivots(&[100, 200, 300]), &chunks, &enabled(3, 50), 10_000).unwrap();
        assert_eq!(plan.merges, vec![1]);
        assert_eq!(
            plan_of(&pivots(&[100, 200, 300]), &chunks, &enabled(4, 50), 10_000),
            None
        );
        // The halves of a split are too large to merge back.
        let halves = [chunk(0, 1000, 10, 10)];
        assert_eq!(
            plan_of(&pivots(&[500]), &halves, &enabled(1, 50), 6_000),
            None
        );
    }

    #[test]
    fn slices_cut_equal_bytes_at_row_group_keys() {
        let chunks = [chunk(0, 1000, 10, 10)];
        assert_eq!(
            slice_pivots(&chunks, 4),
            vec![vec![], key(250), key(500), key(750)]
        );
        // Fewer distinct keys than tablets: as many as there are.
        let one = [chunk(0, 20, 10, 10)];
        assert_eq!(slice_pivots(&one, 8), vec![vec![], key(10)]);
        assert_eq!(slice_pivots(&[], 8), vec![Vec::<Value>::new()]);
    }

    #[test]
    fn bytes_count_row_groups_in_the_tablet_of_their_smallest_key() {
        let chunks = [chunk(0, 100, 10, 3), chunk(50, 150, 50, 1)];
        assert_eq!(
            tablet_bytes(&pivots(&[60]), &chunks),
            vec![180 + 50, 120 + 50]
        );
        assert_eq!(tablet_bytes(&[], &chunks), vec![400]);
    }

    #[test]
    fn settings_take_yt_and_ydb_spellings_and_refuse_nonsense() {
        let mut s = AutoPartitioning::default();
        assert!(s
            .set(
                "auto_partitioning_by_size",
                &AttributeValue::Text("ENABLED".into())
            )
            .unwrap());
        assert!(s.by_size);
        s.set("auto_partitioning_by_size", &AttributeValue::Boolean(false))
            .unwrap();
        assert!(!s.by_size);
        s.set(
            "auto_partitioning_partition_size_mb",
            &AttributeValue::Number(64),
        )
        .unwrap();
        assert_eq!(s.partition_size_bytes(), 64 << 20);
        assert!(!s
            .set("max_data_versions", &AttributeValue::Number(1))
            .unwrap());
        for (name, value) in [
            (
                "auto_partitioning_partition_size_mb",
                AttributeValue::Number(0),
            ),
            (
                "auto_partitioning_by_size",
                AttributeValue::Text("maybe".into()),
            ),
            (
                "auto_partitioning_min_partitions_count",
                AttributeValue::Number(51),
            ),
            (
                "auto_partitioning_max_partitions_count",
                AttributeValue::Number(100_000),
            ),
        ] {
            let before = s;
            assert!(s.set(name, &value).is_err(), "{name}");
            assert_eq!(s, before, "a refused value changed the settings");
        }
    }
}
