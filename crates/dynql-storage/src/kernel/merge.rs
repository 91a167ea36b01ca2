//! The version merge: one pass over several key-sorted runs of versions (chunks, oldest first,
//! then the dynamic store) that yields, key by key, every version of that key in commit order.
//! Sources are mostly in commit order already, but not always: a bulk write's chunk
//! ([`crate::bulk`]) holds versions newer than the dynamic store's older writes, so a key's
//! versions from several sources are put in timestamp order (stably: versions of one commit
//! keep their order).
//!
//! Reads resolve each yielded history at their timestamp
//! ([`resolve_versions`](crate::kernel::mvcc::resolve_versions)); compaction applies retention to it
//! and writes the result as one chunk. Invariant (checked by a property test): the merge of
//! any split of a history into runs equals the history sorted by key, stably.

use std::borrow::Cow;
use std::cmp::Ordering;

use crate::kernel::chunk_ref::compare_version_keys;
use crate::kernel::mvcc::RowDelta;

/// The versions of one key in one source, in commit order.
pub(crate) type KeyGroup<'a> = &'a [RowDelta];

/// Groups a key-sorted run of versions by key.
pub(crate) struct KeyGroups<'a> {
    versions: &'a [RowDelta],
    key_count: usize,
}

impl<'a> KeyGroups<'a> {
    pub(crate) fn new(versions: &'a [RowDelta], key_count: usize) -> KeyGroups<'a> {
        KeyGroups {
            versions,
            key_count,
        }
    }
}

impl<'a> Iterator for KeyGroups<'a> {
    type Item = KeyGroup<'a>;

    fn next(&mut self) -> Option<KeyGroup<'a>> {
        let first = self.versions.first()?;
        let len = self
            .versions
            .iter()
            .position(|d| compare_version_keys(first, d, self.key_count) != Ordering::Equal)
            .unwrap_or(self.versions.len());
        let (group, rest) = self.versions.split_at(len);
        self.versions = rest;
        Some(group)
    }
}

/// Merges sources of key groups (each in key order; sources listed oldest first) into one
/// history per key.
pub(crate) struct VersionMerge<'a> {
    key_count: usize,
    sources: Vec<Box<dyn Iterator<Item = KeyGroup<'a>> + Send + 'a>>,
    heads: Vec<Option<KeyGroup<'a>>>,
}

impl<'a> VersionMerge<'a> {
    pub(crate) fn new(
        key_count: usize,
        mut sources: Vec<Box<dyn Iterator<Item = KeyGroup<'a>> + Send + 'a>>,
    ) -> VersionMerge<'a> {
        let heads = sources.iter_mut().map(|s| s.next()).collect();
        VersionMerge {
            key_count,
            sources,
            heads,
        }
    }
}

impl<'a> Iterator for VersionMerge<'a> {
    type Item = Cow<'a, [RowDelta]>;

    fn next(&mut self) -> Option<Cow<'a, [RowDelta]>> {
        // Few sources (a handful of chunks and the dynamic store): a linear scan for the
        // smallest key beats a heap.
        let mut smallest: Option<&RowDelta> = None;
        for g in self.heads.iter().flatten() {
            if smallest.is_none_or(|s| compare_version_keys(&g[0], s, self.key_count).is_lt()) {
                smallest = Some(&g[0]);
            }
        }
        let smallest = smallest?;
        let mut taken: Vec<usize> = Vec::new();
        for (i, g) in self.heads.iter().enumerate() {
            if let Some(g) = g {
                if compare_version_keys(&g[0], smallest, self.key_count).is_eq() {
                    taken.push(i);
                }
            }
        }
        let history = if let [only] = taken[..] {
            Cow::Borrowed(self.heads[only].take().unwrap_or_default())
        } else {
            let mut all = Vec::new();
            for &i in &taken {
                all.extend_from_slice(self.heads[i].take().unwrap_or_default());
            }
            crate::kernel::mvcc::put_in_commit_order(&mut all);
            Cow::Owned(all)
        };
        for i in taken {
            self.heads[i] = self.sources[i].next();
        }
        Some(history)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kernel::mvcc::WriteKind;
    use crate::kernel::timestamp::Timestamp;
    use dynql_core::Value;
    use proptest::prelude::*;

    fn delta(k: i64, ts: u64) -> RowDelta {
        RowDelta {
            timestamp: Timestamp(ts),
            kind: WriteKind::Overwrite,
            values: vec![Some(Value::Int64(k)), Some(Value::Int64(ts as i64))],
            aggregate: false,
        }
    }

    proptest! {
        /// A history (commit order) split into time-ordered runs, each sorted by key: the merge
        /// yields each key's versions in commit order, keys ascending.
        #[test]
        fn merge_equals_stable_sort(keys in proptest::collection::vec(0i64..8, 0..40), cuts in proptest::collection::vec(0usize..40, 0..4)) {
            let history: Vec<RowDelta> = keys.iter().enumerate().map(|(t, k)| delta(*k, t as u64)).collect();
            let mut bounds: Vec<usize> = cuts.into_iter().map(|c| c.min(history.len())).collect();
            bounds.push(0);
            bounds.push(history.len());
            bounds.sort();
            let runs: Vec<Vec<RowDelta>> = bounds.windows(2).map(|w| {
                let mut run = history[w[0]..w[1]].to_vec();
                run.sort_by(|a, b| compare_version_keys(a, b, 1));
                run
            }).collect();
            let merge = |runs: &[&Vec<RowDelta>]| -> Vec<RowDelta> {
                let sources = runs.iter().map(|r| Box::new(KeyGroups::new(r, 1)) as Box<dyn Iterator<Item = KeyGroup<'_>> + Send>).collect();
                VersionMerge::new(1, sources).flat_map(|h| h.into_owned()).collect()
            };
            let mut expected = history.clone();
            expected.sort_by(|a, b| compare_version_keys(a, b, 1));
            let mut in_order: Vec<&Vec<RowDelta>> = runs.iter().collect();
            prop_assert_eq!(&merge(&in_order), &expected);
            // Runs out of commit order (a bulk write's chunk after the dynamic store's older
            // versions) still give each key's versions in commit order.
            in_order.reverse();
            prop_assert_eq!(&merge(&in_order), &expected);
        }
    }
}
