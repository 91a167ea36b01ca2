//! Constraint trie → constraint rows (spec B.2) → key ranges (spec B.3).
//!
//! A *constraint row* holds one interval per key column. Expanding every interval of every
//! column can yield too many rows, so only the longest key prefix whose full expansion stays
//! below the limit is expanded; the next column keeps the hull of its intervals and deeper
//! columns become unconstrained. That only ever widens ranges.

use dynql_core::Value;

use super::bound::{Interval, KeyBoundValue};
use super::constraints::Trie;
use super::range::{KeyBound, KeyRange};
use crate::error::Result;

/// Number of constraint rows obtained by expanding every interval of columns `0..=width`
/// (deeper columns count once). Saturates.
pub(crate) fn estimate_expansion(trie: &Trie, width: usize) -> u64 {
    match trie {
        Trie::Empty => 0,
        Trie::Universal => 1,
        Trie::Column { column, .. } if *column > width => 1,
        Trie::Column { branches, .. } => branches.iter().fold(0u64, |sum, b| {
            sum.saturating_add(estimate_expansion(&b.next, width))
        }),
    }
}

/// How many leading key columns to expand: the first `w` whose expansion up to column `w`
/// reaches `limit`, or `key_count` if none does.
pub(crate) fn key_width(trie: &Trie, key_count: usize, limit: u64) -> usize {
    (0..key_count)
        .find(|&w| estimate_expansion(trie, w) >= limit)
        .unwrap_or(key_count)
}

/// Calls `f` with every constraint row of `trie` in key order: columns before `width`
/// expanded interval by interval, column `width` as the hull of its intervals.
pub(crate) fn for_each_row(
    trie: &Trie,
    key_count: usize,
    width: usize,
    f: &mut dyn FnMut(&[Interval]) -> Result<()>,
) -> Result<()> {
    let mut row = vec![Interval::universal(); key_count];
    walk(trie, width, &mut row, f)
}

fn walk(
    trie: &Trie,
    width: usize,
    row: &mut [Interval],
    f: &mut dyn FnMut(&[Interval]) -> Result<()>,
) -> Result<()> {
    match trie {
        Trie::Empty => Ok(()),
        Trie::Universal => f(row),
        Trie::Column { column, branches } => {
            let column = *column;
            if column > width {
                return f(row);
            }
            if column == width {
                let (Some(first), Some(last)) = (branches.first(), branches.last()) else {
                    return Ok(());
                };
                let hull = Interval::new(first.interval.lower.clone(), last.interval.upper.clone());
                let saved = std::mem::replace(&mut row[column], hull);
                let r = f(row);
                row[column] = saved;
                return r;
            }
            for b in branches {
                let saved = std::mem::replace(&mut row[column], b.interval.clone());
                let r = walk(&b.next, width, row, f);
                row[column] = saved;
                r?;
            }
            Ok(())
        }
    }
}

/// The key range of keys starting with `prefix` whose next column lies in that column's
/// interval of `row` (later columns are ignored). With a full-width prefix: every key equal
/// to it.
pub(crate) fn prefix_range(prefix: &[Value], row: &[Interval]) -> KeyRange {
    let Some(next) = row.get(prefix.len()) else {
        return KeyRange {
            lower: KeyBound::new(prefix.to_vec(), false),
            upper: KeyBound::new(prefix.to_vec(), true),
        };
    };
    // A bound of the next column's interval: before or after its value; the sentinels fix
    // nothing more than the prefix (MIN before every extension of it, MAX after).
    let bound = |value: &KeyBoundValue, after: bool| match value {
        KeyBoundValue::Min => KeyBound::new(prefix.to_vec(), false),
        KeyBoundValue::Max => KeyBound::new(prefix.to_vec(), true),
        KeyBoundValue::Value(v) => {
            let mut values = prefix.to_vec();
            values.push(v.clone());
            KeyBound::new(values, after)
        }
    };
    KeyRange {
        lower: bound(&next.lower.value, next.lower.after),
        upper: bound(&next.upper.value, next.upper.after),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ranges::bound::Bound;
    use crate::ranges::constraints::{intersect, unite};
    use std::rc::Rc;

    fn eq(column: usize, x: i64) -> Rc<Trie> {
        Trie::interval(column, Interval::exact(Value::Int64(x)))
    }

    fn any_of(column: usize, xs: &[i64]) -> Rc<Trie> {
        xs.iter()
            .fold(Trie::empty(), |t, &x| unite(&t, &eq(column, x)))
    }

    /// The leading exact values of a constraint row.
    fn exact_prefix(row: &[Interval]) -> Vec<Value> {
        row.iter().map_while(|i| i.exact_value().cloned()).collect()
    }

    fn rows(trie: &Trie, key_count: usize, width: usize) -> Vec<Vec<Interval>> {
        let mut out = Vec::new();
        for_each_row(trie, key_count, width, &mut |r| {
            out.push(r.to_vec());
            Ok(())
        })
        .unwrap();
        out
    }

    #[test]
    fn expansion_counts_intervals_up_to_the_width() {
        // k in (1,2,3) and l in (1,2): 3 rows on k, 6 on (k, l).
        let t = intersect(&any_of(0, &[1, 2, 3]), &any_of(1, &[1, 2]));
        assert_eq!(estimate_expansion(&t, 0), 3);
        assert_eq!(estimate_expansion(&t, 1), 6);
        assert_eq!(estimate_expansion(&t, 2), 6);
        assert_eq!(key_width(&t, 3, 1000), 3);
        assert_eq!(
            key_width(&t, 3, 6),
            1,
            "expansion must stay strictly below the limit"
        );
        assert_eq!(key_width(&t, 3, 4), 1);
        assert_eq!(key_width(&t, 3, 3), 0);
        assert_eq!(key_width(&t, 3, 7), 3);
    }

    #[test]
    fn rows_take_the_hull_at_the_width() {
        let t = intersect(&any_of(0, &[1, 2, 3]), &any_of(1, &[5, 9]));
        assert_eq!(rows(&t, 2, 2).len(), 6);
        let coarse = rows(&t, 2, 1);
        assert_eq!(coarse.len(), 3);
        assert_eq!(
            coarse[0][1],
            Interval::new(
                Bound::before(Value::Int64(5)),
                Bound::after(Value::Int64(9))
            )
        );
        let coarsest = rows(&t, 2, 0);
        assert_eq!(coarsest.len(), 1);
        assert_eq!(coarsest[0][1], Interval::universal());
        assert_eq!(
            rows(&Trie::Universal, 2, 0),
            vec![vec![Interval::universal(); 2]]
        );
        assert!(rows(&Trie::Empty, 2, 0).is_empty());
    }

    #[test]
    fn prefix_range_follows_the_light_rules() {
        let gt40 = Interval::new(
            Bound::after(Value::Int64(40)),
            Bound::before(Value::Int64(50)),
        );
        let row = vec![
            Interval::exact(Value::Int64(50)),
            gt40,
            Interval::universal(),
        ];
        let r = prefix_range(&exact_prefix(&row), &row);
        assert_eq!(r.to_string(), "[50,40,MAX]..[50,50]");
        let all = vec![
            Interval::exact(Value::Int64(1)),
            Interval::exact(Value::Int64(2)),
        ];
        assert_eq!(
            prefix_range(&exact_prefix(&all), &all).to_string(),
            "[1,2]..[1,2,MAX]"
        );
        let none = vec![Interval::universal()];
        assert_eq!(
            prefix_range(&exact_prefix(&none), &none).to_string(),
            "<>..[MAX]"
        );
    }
}
