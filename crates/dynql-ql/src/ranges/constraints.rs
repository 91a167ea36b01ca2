//! The constraint trie (spec B.1): what a predicate says about the key columns.
//!
//! A node constrains one key column with sorted, disjoint intervals; each interval carries the
//! constraint on strictly later columns for the keys inside it. Columns without a node are
//! unconstrained. AND is [`intersect`], OR is [`unite`].
//!
//! ```text
//!   k = 50 and l != 50      k: [50,50] ──▶ l: [MIN,50) ──▶ ∗
//!                                            (50,MAX) ──▶ ∗
//! ```

use std::rc::Rc;

use super::bound::{Bound, Interval};

/// A constraint on key columns from some column onwards.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Trie {
    /// No key satisfies it.
    Empty,
    /// Every key satisfies it.
    Universal,
    /// Keys whose column `column` lies in one of `branches` (sorted, disjoint, non-empty) and
    /// that satisfy that branch's `next`.
    Column {
        column: usize,
        branches: Vec<Branch>,
    },
}

/// One interval of a [`Trie::Column`] node and the constraint on later columns inside it.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Branch {
    pub interval: Interval,
    pub next: Rc<Trie>,
}

impl Branch {
    pub fn new(interval: Interval, next: Rc<Trie>) -> Branch {
        Branch { interval, next }
    }
}

impl Trie {
    pub fn empty() -> Rc<Trie> {
        Rc::new(Trie::Empty)
    }

    pub fn universal() -> Rc<Trie> {
        Rc::new(Trie::Universal)
    }

    /// A node on `column` from sorted, disjoint `branches`; drops branches that hold no key
    /// and simplifies to `Empty` or `Universal` where the node says nothing more.
    pub fn column(column: usize, branches: Vec<Branch>) -> Rc<Trie> {
        let branches: Vec<Branch> = branches
            .into_iter()
            .filter(|b| !b.interval.is_empty() && *b.next != Trie::Empty)
            .collect();
        debug_assert!(
            branches
                .windows(2)
                .all(|w| w[0].interval.upper <= w[1].interval.lower),
            "branches of a trie node must be sorted and disjoint"
        );
        match branches.as_slice() {
            [] => Trie::empty(),
            [only] if only.interval.is_universal() && *only.next == Trie::Universal => {
                Trie::universal()
            }
            _ => Rc::new(Trie::Column { column, branches }),
        }
    }

    /// A node with a single interval and no constraint on later columns.
    pub fn interval(column: usize, interval: Interval) -> Rc<Trie> {
        Trie::column(column, vec![Branch::new(interval, Trie::universal())])
    }
}

/// The keys satisfying both `a` and `b`.
pub(crate) fn intersect(a: &Rc<Trie>, b: &Rc<Trie>) -> Rc<Trie> {
    match (&**a, &**b) {
        (Trie::Empty, _) | (_, Trie::Empty) => Trie::empty(),
        (Trie::Universal, _) => b.clone(),
        (_, Trie::Universal) => a.clone(),
        (
            Trie::Column {
                column: ca,
                branches: ba,
            },
            Trie::Column {
                column: cb,
                branches: bb,
            },
        ) => {
            if ca < cb {
                return descend(*ca, ba, b);
            }
            if cb < ca {
                return descend(*cb, bb, a);
            }
            let (mut i, mut j) = (0, 0);
            let mut out = Vec::new();
            while i < ba.len() && j < bb.len() {
                let (x, y) = (&ba[i], &bb[j]);
                let overlap = Interval::new(
                    x.interval.lower.clone().max(y.interval.lower.clone()),
                    x.interval.upper.clone().min(y.interval.upper.clone()),
                );
                if !overlap.is_empty() {
                    out.push(Branch::new(overlap, intersect(&x.next, &y.next)));
                }
                match x.interval.upper.cmp(&y.interval.upper) {
                    std::cmp::Ordering::Less => i += 1,
                    std::cmp::Ordering::Greater => j += 1,
                    std::cmp::Ordering::Equal => {
                        i += 1;
                        j += 1;
                    }
                }
            }
            Trie::column(*ca, out)
        }
    }
}

/// `other` is universal on `column`, so it constrains only what lies below each branch.
fn descend(column: usize, branches: &[Branch], other: &Rc<Trie>) -> Rc<Trie> {
    let out = branches
        .iter()
        .map(|b| Branch::new(b.interval.clone(), intersect(&b.next, other)))
        .collect();
    Trie::column(column, out)
}

/// The keys satisfying `a` or `b`.
///
/// Where intervals of the two sides overlap, the overlap carries the union of both
/// continuations; the rest keeps its own. The result is split at every interval end of either
/// side and nowhere else, so it stays sorted and disjoint.
pub(crate) fn unite(a: &Rc<Trie>, b: &Rc<Trie>) -> Rc<Trie> {
    match (&**a, &**b) {
        (Trie::Universal, _) | (_, Trie::Universal) => Trie::universal(),
        (Trie::Empty, _) => b.clone(),
        (_, Trie::Empty) => a.clone(),
        (
            Trie::Column {
                column: ca,
                branches: ba,
            },
            Trie::Column {
                column: cb,
                branches: bb,
            },
        ) => {
            if ca < cb {
                return unite_same_column(
                    *ca,
                    ba,
                    &[Branch::new(Interval::universal(), b.clone())],
                );
            }
            if cb < ca {
                return unite_same_column(
                    *cb,
                    &[Branch::new(Interval::universal(), a.clone())],
                    bb,
                );
            }
            unite_same_column(*ca, ba, bb)
        }
    }
}

fn unite_same_column(column: usize, a: &[Branch], b: &[Branch]) -> Rc<Trie> {
    let mut points: Vec<&Bound> = a
        .iter()
        .chain(b)
        .flat_map(|br| [&br.interval.lower, &br.interval.upper])
        .collect();
    points.sort();
    points.dedup();
    let (mut i, mut j) = (0, 0);
    let mut out = Vec::new();
    for w in points.windows(2) {
        let (from, to) = (w[0], w[1]);
        while i < a.len() && a[i].interval.upper <= *from {
            i += 1;
        }
        while j < b.len() && b[j].interval.upper <= *from {
            j += 1;
        }
        // Every interval end is a point, so an interval reaching into the segment covers it.
        let in_a = a.get(i).filter(|br| br.interval.lower <= *from);
        let in_b = b.get(j).filter(|br| br.interval.lower <= *from);
        let next = match (in_a, in_b) {
            (Some(x), Some(y)) => unite(&x.next, &y.next),
            (Some(x), None) => x.next.clone(),
            (None, Some(y)) => y.next.clone(),
            (None, None) => continue,
        };
        out.push(Branch::new(Interval::new(from.clone(), to.clone()), next));
    }
    Trie::column(column, out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use dynql_core::Value;

    fn int(x: i64) -> Value {
        Value::Int64(x)
    }

    /// `lo <= c < hi` on `column`.
    fn half_open(column: usize, lo: i64, hi: i64) -> Rc<Trie> {
        Trie::interval(
            column,
            Interval::new(Bound::before(int(lo)), Bound::before(int(hi))),
        )
    }

    fn eq(column: usize, x: i64) -> Rc<Trie> {
        Trie::interval(column, Interval::exact(int(x)))
    }

    fn intervals(t: &Trie) -> Vec<Interval> {
        match t {
            Trie::Column { branches, .. } => branches.iter().map(|b| b.interval.clone()).collect(),
            other => panic!("not a node: {other:?}"),
        }
    }

    #[test]
    fn intersecting_contradictions_is_empty() {
        let ge90 = Trie::interval(0, Interval::new(Bound::before(int(90)), Bound::max()));
        let lt10 = Trie::interval(0, Interval::new(Bound::min(), Bound::before(int(10))));
        assert_eq!(*intersect(&ge90, &lt10), Trie::Empty);
        assert_eq!(*intersect(&eq(0, 1), &Trie::empty()), Trie::Empty);
        // An empty continuation removes its branch.
        let k_and_l_empty = intersect(&eq(0, 1), &intersect(&eq(1, 2), &eq(1, 3)));
        assert_eq!(*k_and_l_empty, Trie::Empty);
    }

    #[test]
    fn intersecting_different_columns_nests_the_later_one() {
        let t = intersect(&eq(1, 7), &eq(0, 50));
        let Trie::Column { column, branches } = &*t else {
            panic!("{t:?}")
        };
        assert_eq!(*column, 0);
        assert_eq!(branches.len(), 1);
        assert_eq!(branches[0].next, eq(1, 7));
    }

    #[test]
    fn intersecting_same_column_keeps_pairwise_overlaps() {
        let a = unite(&half_open(0, 0, 10), &half_open(0, 20, 30));
        let b = half_open(0, 5, 25);
        assert_eq!(
            intervals(&intersect(&a, &b)),
            vec![
                Interval::new(Bound::before(int(5)), Bound::before(int(10))),
                Interval::new(Bound::before(int(20)), Bound::before(int(25))),
            ]
        );
    }

    #[test]
    fn uniting_splits_overlaps_and_unites_their_continuations() {
        // (k in [0,10) and l = 1) or (k in [5,20) and l = 2)
        let a = intersect(&half_open(0, 0, 10), &eq(1, 1));
        let b = intersect(&half_open(0, 5, 20), &eq(1, 2));
        let t = unite(&a, &b);
        let Trie::Column { branches, .. } = &*t else {
            panic!("{t:?}")
        };
        let got: Vec<(Interval, Rc<Trie>)> = branches
            .iter()
            .map(|b| (b.interval.clone(), b.next.clone()))
            .collect();
        assert_eq!(
            got,
            vec![
                (
                    Interval::new(Bound::before(int(0)), Bound::before(int(5))),
                    eq(1, 1)
                ),
                (
                    Interval::new(Bound::before(int(5)), Bound::before(int(10))),
                    unite(&eq(1, 1), &eq(1, 2))
                ),
                (
                    Interval::new(Bound::before(int(10)), Bound::before(int(20))),
                    eq(1, 2)
                ),
            ]
        );
        assert_eq!(intervals(&unite(&eq(1, 1), &eq(1, 2))).len(), 2);
    }

    #[test]
    fn uniting_with_an_earlier_column_treats_the_other_side_as_universal_there() {
        // k = 1 or l = 2: every k may hold l = 2; k = 1 holds anything.
        let t = unite(&eq(0, 1), &eq(1, 2));
        let Trie::Column { column, branches } = &*t else {
            panic!("{t:?}")
        };
        assert_eq!(*column, 0);
        let nexts: Vec<&Trie> = branches.iter().map(|b| &*b.next).collect();
        assert_eq!(nexts, vec![&*eq(1, 2), &Trie::Universal, &*eq(1, 2)]);
        assert_eq!(branches[1].interval, Interval::exact(int(1)));
    }

    #[test]
    fn uniting_complements_is_universal() {
        let le5 = Trie::interval(0, Interval::new(Bound::min(), Bound::after(int(5))));
        let gt5 = Trie::interval(0, Interval::new(Bound::after(int(5)), Bound::max()));
        // Two touching pieces stay two branches (they may carry different continuations).
        assert_eq!(intervals(&unite(&le5, &gt5)).len(), 2);
        assert_eq!(*unite(&le5, &Trie::universal()), Trie::Universal);
        assert_eq!(unite(&le5, &Trie::empty()), le5);
        let whole = Trie::interval(0, Interval::universal());
        assert_eq!(*whole, Trie::Universal);
    }
}
