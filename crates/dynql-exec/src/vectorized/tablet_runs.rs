//! How a scan's tablets are shared out among DataFusion partitions.

/// `tablets` (index, weight; in key order) cut into at most `most` runs of neighbours whose
/// heaviest run is as light as such a cut allows: a partition each. As many partitions as the
/// session runs at once, not one per tablet: a partition's scan holds a few decoded row
/// groups and batches ahead, so more partitions than cores only hold more at a time. Runs of
/// neighbours keep each partition in key order.
pub(crate) fn tablet_runs(tablets: &[(usize, u64)], most: usize) -> Vec<Vec<usize>> {
    let most = most.max(1);
    if tablets.len() <= most {
        return tablets.iter().map(|&(t, _)| vec![t]).collect();
    }
    // The runs a greedy cut under `limit` gives (each as long as the limit lets it be).
    let cut = |limit: u64| {
        let mut runs: Vec<Vec<usize>> = Vec::new();
        let mut weight = 0u64;
        for &(t, w) in tablets {
            match runs.last_mut() {
                Some(run) if weight.saturating_add(w) <= limit => {
                    run.push(t);
                    weight += w;
                }
                _ => {
                    runs.push(vec![t]);
                    weight = w;
                }
            }
        }
        runs
    };
    // The least limit whose greedy cut needs at most `most` runs (binary search: a greater
    // limit never needs more runs).
    let (mut lo, mut hi) = (
        tablets.iter().map(|&(_, w)| w).max().unwrap_or(0),
        tablets
            .iter()
            .fold(0u64, |sum, &(_, w)| sum.saturating_add(w)),
    );
    while lo < hi {
        let mid = lo + (hi - lo) / 2;
        if cut(mid).len() <= most {
            hi = mid;
        } else {
            lo = mid + 1;
        }
    }
    cut(lo)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The heaviest run of the best cut of `weights` into at most `most` runs of
    /// neighbours, by trying every cut.
    fn best(weights: &[u64], most: usize) -> u64 {
        if weights.is_empty() {
            return 0;
        }
        if most == 1 {
            return weights.iter().sum();
        }
        (1..=weights.len())
            .map(|first| {
                let head: u64 = weights[..first].iter().sum();
                head.max(best(&weights[first..], most - 1))
            })
            .min()
            .unwrap()
    }

    proptest::proptest! {
        /// Every tablet once, in order, in at most `most` runs, the heaviest as light as
        /// the best cut's.
        #[test]
        fn runs_keep_the_order_and_are_as_even_as_a_cut_allows(
            weights in proptest::collection::vec(0u64..1000, 0..9),
            most in 0usize..5,
        ) {
            let tablets: Vec<(usize, u64)> =
                weights.iter().enumerate().map(|(i, &w)| (i * 2, w)).collect();
            let runs = tablet_runs(&tablets, most);
            let flat: Vec<usize> = runs.iter().flatten().copied().collect();
            let order: Vec<usize> = tablets.iter().map(|&(t, _)| t).collect();
            proptest::prop_assert_eq!(flat, order);
            proptest::prop_assert!(runs.len() <= most.max(1));
            proptest::prop_assert!(runs.iter().all(|r| !r.is_empty()));
            let heaviest = runs
                .iter()
                .map(|r| r.iter().map(|t| weights[t / 2]).sum::<u64>())
                .max()
                .unwrap_or(0);
            if tablets.len() > most.max(1) {
                proptest::prop_assert_eq!(heaviest, best(&weights, most.max(1)));
            }
        }
    }

    /// Eight equal tablets on two partitions: two runs of four.
    #[test]
    fn equal_tablets_split_evenly() {
        let tablets: Vec<(usize, u64)> = (0..8).map(|t| (t, 100)).collect();
        assert_eq!(
            tablet_runs(&tablets, 2),
            vec![vec![0, 1, 2, 3], vec![4, 5, 6, 7]]
        );
        assert_eq!(tablet_runs(&tablets, 16).len(), 8);
    }
}
