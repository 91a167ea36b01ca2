//! How a scan's tablets are shared out among DataFusion partitions.

/// `tablets` (index, weight; in key order) shared out among at most `most` partitions: one
/// tablet each where there are no more tablets than that, else the heaviest tablet first to
/// the lightest partition (longest processing time first: the heaviest partition weighs at
/// most 4/3 of the best share's), each partition's tablets in key order.
///
/// As many partitions as the session runs at once, not one per tablet: a partition's scan
/// holds a few decoded row groups and batches ahead, so more partitions than cores only hold
/// more at a time. Not runs of neighbouring tablets, though each would then be in key order:
/// DataFusion merges partitions that declare an order in that order, so a partition whose
/// keys all come after another's would wait for it (an aggregate grouped by a key prefix ran
/// a third slower so). A partition of several tablets declares no order.
pub(crate) fn tablet_groups(tablets: &[(usize, u64)], most: usize) -> Vec<Vec<usize>> {
    let most = most.max(1);
    if tablets.len() <= most {
        return tablets.iter().map(|&(t, _)| vec![t]).collect();
    }
    let mut heaviest_first: Vec<(usize, u64)> = tablets.to_vec();
    heaviest_first.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(&b.0)));
    let mut groups: Vec<(u64, Vec<usize>)> = vec![(0, Vec::new()); most];
    for (t, w) in heaviest_first {
        let lightest = groups
            .iter_mut()
            .min_by_key(|(load, _)| *load)
            .expect("at least one partition");
        lightest.0 = lightest.0.saturating_add(w);
        lightest.1.push(t);
    }
    groups
        .into_iter()
        .map(|(_, mut group)| {
            group.sort_unstable();
            group
        })
        .filter(|group| !group.is_empty())
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The heaviest partition of the best share of `weights` among `most` partitions, by
    /// trying every share.
    fn best(weights: &[u64], most: usize) -> u64 {
        fn share(weights: &[u64], loads: &mut Vec<u64>) -> u64 {
            let Some((&w, rest)) = weights.split_first() else {
                return loads.iter().copied().max().unwrap_or(0);
            };
            let mut least = u64::MAX;
            for p in 0..loads.len() {
                loads[p] += w;
                least = least.min(share(rest, loads));
                loads[p] -= w;
            }
            least
        }
        share(weights, &mut vec![0; most])
    }

    proptest::proptest! {
        /// Every tablet once, in at most `most` partitions, each in key order, the heaviest
        /// within 4/3 of the best share's.
        #[test]
        fn every_tablet_once_and_the_load_near_the_best(
            weights in proptest::collection::vec(0u64..1000, 0..8),
            most in 0usize..4,
        ) {
            let tablets: Vec<(usize, u64)> =
                weights.iter().enumerate().map(|(i, &w)| (i * 2, w)).collect();
            let groups = tablet_groups(&tablets, most);
            let mut all: Vec<usize> = groups.iter().flatten().copied().collect();
            all.sort_unstable();
            let order: Vec<usize> = tablets.iter().map(|&(t, _)| t).collect();
            proptest::prop_assert_eq!(all, order);
            proptest::prop_assert!(groups.len() <= most.max(1));
            proptest::prop_assert!(groups.iter().all(|g| !g.is_empty() && g.windows(2).all(|w| w[0] < w[1])));
            let heaviest = groups
                .iter()
                .map(|g| g.iter().map(|t| weights[t / 2]).sum::<u64>())
                .max()
                .unwrap_or(0);
            let best = best(&weights, most.max(1));
            proptest::prop_assert!(3 * heaviest <= 4 * best, "{} against the best {}", heaviest, best);
        }
    }

    /// Eight equal tablets on two partitions: four each; a single partition reads them all
    /// in key order.
    #[test]
    fn equal_tablets_share_evenly() {
        let tablets: Vec<(usize, u64)> = (0..8).map(|t| (t, 100)).collect();
        let groups = tablet_groups(&tablets, 2);
        assert_eq!(groups.len(), 2);
        assert!(groups.iter().all(|g| g.len() == 4));
        assert_eq!(tablet_groups(&tablets, 1), vec![(0..8).collect::<Vec<_>>()]);
        assert_eq!(tablet_groups(&tablets, 16).len(), 8);
    }
}
