//! The plan of a pruned scan: which tablets a scan of key ranges meets (the spans between
//! the pivot keys), and which chunks and row groups of theirs, by the key bounds each chunk
//! records ([`crate::kernel::chunk_ref::ChunkRef::row_groups`]). Pure: it reads the replayed state only;
//! the scan itself ([`crate::scan`]) decodes what the plan selects.

use crate::error::Result;
use crate::kernel::catalog::TableEntry;
use crate::kernel::key_range::{KeyBound, KeyRange};
use crate::kernel::timestamp::Timestamp;
use crate::scan::ScanStatistics;
use crate::state::TableData;

/// The key ranges of the table's tablets, from its pivot keys.
pub fn tablet_ranges(entry: &TableEntry) -> Vec<KeyRange> {
    let pivots = &entry.pivot_keys;
    if pivots.is_empty() {
        return vec![KeyRange::all()];
    }
    (0..pivots.len())
        .map(|i| KeyRange {
            lower: KeyBound::new(pivots[i].0.clone(), false),
            upper: pivots
                .get(i + 1)
                .map(|p| KeyBound::new(p.0.clone(), false))
                .unwrap_or_else(KeyBound::max),
        })
        .collect()
}

/// Which tablets, chunks and row groups a scan of `ranges` needs.
#[derive(Debug)]
pub(crate) struct ScanPlan {
    /// Per selected tablet: its index and the ranges clipped to it.
    pub(crate) tablets: Vec<(usize, Vec<KeyRange>)>,
    /// Per selected chunk (index into the table's chunk list, in list order): the row groups.
    pub(crate) row_groups: Vec<(usize, Vec<usize>)>,
    /// Per selected tablet (as `tablets`): the versions of the selected row groups whose
    /// first key lies in it, what reading it costs, about.
    pub(crate) tablet_versions: Vec<u64>,
    pub(crate) statistics: ScanStatistics,
}

/// The plan of a scan of normalised `ranges` (see [`normalize_ranges`]) as of `timestamp`.
pub(crate) fn plan_scan(
    entry: &TableEntry,
    data: &TableData,
    ranges: &[KeyRange],
    timestamp: Timestamp,
) -> Result<ScanPlan> {
    debug_assert!(ranges
        .windows(2)
        .all(|w| w[0].upper.compare(&w[1].lower).is_lt()));
    let tablets = tablet_ranges(entry);
    let mut selected_tablets = Vec::new();
    for (i, t) in tablets.iter().enumerate() {
        // Sorted, disjoint ranges: those that meet the tablet are one run.
        let lo = ranges.partition_point(|r| r.upper.compare(&t.lower).is_le());
        let hi = ranges.partition_point(|r| r.lower.compare(&t.upper).is_lt());
        let clipped: Vec<KeyRange> = ranges[lo..hi.max(lo)]
            .iter()
            .filter_map(|r| r.intersect(t))
            .collect();
        if !clipped.is_empty() {
            selected_tablets.push((i, clipped));
        }
    }
    // Still sorted and disjoint: tablets are.
    let clipped: Vec<&KeyRange> = selected_tablets.iter().flat_map(|(_, r)| r).collect();
    let mut row_groups = Vec::new();
    let mut tablet_versions = vec![0u64; selected_tablets.len()];
    let mut selected_row_groups = 0;
    let mut total_row_groups = 0;
    for (ci, c) in data.chunks.iter().enumerate() {
        total_row_groups += c.row_group_count();
        if c.min_timestamp > timestamp.0 {
            continue;
        }
        // The run of ranges that meet the chunk's keys (most ranges of a long IN list lie
        // in other chunks, other tablets').
        let lo = clipped.partition_point(|r| !r.upper.is_after(&c.min_key));
        let hi = clipped.partition_point(|r| !r.lower.is_after(&c.max_key));
        let meeting = &clipped[lo..hi.max(lo)];
        if meeting.is_empty() {
            continue;
        }
        // Row groups are in key order: per range, binary-search the first one it meets.
        let count = c.row_group_count();
        let mut needed = std::collections::BTreeSet::new();
        for r in meeting {
            let (mut lo, mut hi) = (0, count);
            while lo < hi {
                let mid = lo + (hi - lo) / 2;
                if r.lower.is_after(c.row_group_bound(mid).1) {
                    lo = mid + 1;
                } else {
                    hi = mid;
                }
            }
            for g in lo..count {
                let (min, max) = c.row_group_bound(g);
                if !r.upper.is_after(min) {
                    break;
                }
                if r.meets_keys(min, max) {
                    needed.insert(g);
                }
            }
        }
        let needed: Vec<usize> = needed.into_iter().collect();
        for &g in &needed {
            // The selected tablet holding the row group's first key, or the first one past
            // it (a row group that starts before the ranges).
            let min = c.row_group_bound(g).0;
            let at = selected_tablets
                .partition_point(|(_, r)| !r.last().is_some_and(|r| r.upper.is_after(min)));
            let rows = match c.row_groups.get(g) {
                Some(group) => group.rows,
                None => c.rows,
            };
            if let Some(versions) =
                tablet_versions.get_mut(at.min(selected_tablets.len().saturating_sub(1)))
            {
                *versions += rows;
            }
        }
        if !needed.is_empty() {
            selected_row_groups += needed.len();
            row_groups.push((ci, needed));
        }
    }
    let statistics = ScanStatistics {
        tablets: (selected_tablets.len(), tablets.len()),
        chunks: (row_groups.len(), data.chunks.len()),
        row_groups: (selected_row_groups, total_row_groups),
        rows_read: 0,
        data_weight: 0,
        rows_decoded: 0,
        chunks_skipped_by_key_filter: 0,
    };
    Ok(ScanPlan {
        tablets: selected_tablets,
        row_groups,
        tablet_versions,
        statistics,
    })
}
