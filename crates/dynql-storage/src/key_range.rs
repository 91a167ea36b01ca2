//! Key ranges: the bounds a scan reads between ([`KeyBound`], [`KeyRange`]), ordered as
//! positions between keys, and their normal form (sorted, merged).

use std::cmp::Ordering;

use dynql_core::{compare_rows, compare_values, Value};
use serde::{Deserialize, Serialize};

/// A tablet's pivot key: the smallest key the tablet may hold (the first tablet's is empty,
/// below every key). Stored as a text YSON list, as YT prints it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(transparent)]
pub struct PivotKey(#[serde(with = "crate::chunk::key_serde")] pub Vec<Value>);

/// One end of a key range: a key prefix, and with `after` the position just after every key
/// that starts with the prefix (YT's trailing `<Max>` sentinel).
///
/// ```
/// use dynql_storage::KeyBound;
/// use dynql_core::Value;
/// // [50] .. [50, MAX] holds every key whose first column is 50.
/// let lower = KeyBound::new(vec![Value::Int64(50)], false);
/// let upper = KeyBound::new(vec![Value::Int64(50)], true);
/// let key = [Value::Int64(50), Value::Int64(7)];
/// assert!(!lower.is_after(&key) && upper.is_after(&key));
/// ```
#[derive(Debug, Clone, PartialEq)]
pub struct KeyBound {
    pub prefix: Vec<Value>,
    pub after: bool,
}

impl KeyBound {
    pub fn new(prefix: Vec<Value>, after: bool) -> KeyBound {
        KeyBound { prefix, after }
    }

    /// The bound before every key (`<>`).
    pub fn min() -> KeyBound {
        KeyBound::new(vec![], false)
    }

    /// The bound after every key (`[MAX]`).
    pub fn max() -> KeyBound {
        KeyBound::new(vec![], true)
    }

    /// Whether the bound lies after `key` (a full key): `key < self`.
    pub fn is_after(&self, key: &[Value]) -> bool {
        let n = self.prefix.len().min(key.len());
        match compare_rows(&key[..n], &self.prefix[..n]) {
            Ordering::Less => true,
            Ordering::Greater => false,
            // `key` starts with the prefix (or is shorter than it).
            Ordering::Equal => key.len() < self.prefix.len() || self.after,
        }
    }

    /// Total order of bounds as positions between keys.
    pub fn compare(&self, other: &KeyBound) -> Ordering {
        for (x, y) in self.prefix.iter().zip(&other.prefix) {
            let o = compare_values(x, y);
            if o != Ordering::Equal {
                return o;
            }
        }
        let position = |b: &KeyBound, longer: bool| match (b.after, longer) {
            // `b` is a prefix of the other bound: before or after all keys extending it.
            (true, true) => Ordering::Greater,
            (false, true) => Ordering::Less,
            _ => Ordering::Equal,
        };
        match self.prefix.len().cmp(&other.prefix.len()) {
            Ordering::Less => position(self, true),
            Ordering::Greater => position(other, true).reverse(),
            Ordering::Equal => self.after.cmp(&other.after),
        }
    }
}

/// Keys from `lower` (inclusive) to `upper` (exclusive).
#[derive(Debug, Clone, PartialEq)]
pub struct KeyRange {
    pub lower: KeyBound,
    pub upper: KeyBound,
}

impl KeyRange {
    /// Every key.
    pub fn all() -> KeyRange {
        KeyRange {
            lower: KeyBound::min(),
            upper: KeyBound::max(),
        }
    }

    /// Whether `key` lies in the range.
    pub fn contains(&self, key: &[Value]) -> bool {
        !self.lower.is_after(key) && self.upper.is_after(key)
    }

    /// Whether some key between `min` and `max` (inclusive, full keys) may lie in the range.
    pub fn meets_keys(&self, min: &[Value], max: &[Value]) -> bool {
        !self.lower.is_after(max) && self.upper.is_after(min)
    }

    /// The part of the range inside `other`, if not empty.
    pub fn intersect(&self, other: &KeyRange) -> Option<KeyRange> {
        let (lower, upper) = self.common_bounds(other);
        lower.compare(upper).is_lt().then(|| KeyRange {
            lower: lower.clone(),
            upper: upper.clone(),
        })
    }

    /// Whether the two ranges share a key ([`KeyRange::intersect`] without building it).
    pub fn overlaps(&self, other: &KeyRange) -> bool {
        let (lower, upper) = self.common_bounds(other);
        lower.compare(upper).is_lt()
    }

    /// The greater lower bound and the lesser upper bound.
    fn common_bounds<'a>(&'a self, other: &'a KeyRange) -> (&'a KeyBound, &'a KeyBound) {
        let lower = if self.lower.compare(&other.lower).is_ge() {
            &self.lower
        } else {
            &other.lower
        };
        let upper = if self.upper.compare(&other.upper).is_le() {
            &self.upper
        } else {
            &other.upper
        };
        (lower, upper)
    }
}

/// Sorts ranges and merges overlapping or touching ones, so that a scan yields each row once
/// and in key order.
pub fn normalize_ranges(mut ranges: Vec<KeyRange>) -> Vec<KeyRange> {
    ranges.retain(|r| r.lower.compare(&r.upper).is_lt());
    ranges.sort_by(|a, b| a.lower.compare(&b.lower));
    let mut out: Vec<KeyRange> = Vec::with_capacity(ranges.len());
    for r in ranges {
        match out.last_mut() {
            Some(last) if r.lower.compare(&last.upper).is_le() => {
                if r.upper.compare(&last.upper).is_gt() {
                    last.upper = r.upper;
                }
            }
            _ => out.push(r),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn b(values: &[i64], after: bool) -> KeyBound {
        KeyBound::new(values.iter().map(|v| Value::Int64(*v)).collect(), after)
    }

    #[test]
    fn bounds_order_as_positions_between_keys() {
        // <> < [1] < [1,5] < [1,5,MAX] < [1,MAX] < [2] < [MAX]
        let order = [
            KeyBound::min(),
            b(&[1], false),
            b(&[1, 5], false),
            b(&[1, 5], true),
            b(&[1], true),
            b(&[2], false),
            KeyBound::max(),
        ];
        for (i, x) in order.iter().enumerate() {
            for (j, y) in order.iter().enumerate() {
                assert_eq!(x.compare(y), i.cmp(&j), "{x:?} vs {y:?}");
            }
        }
    }

    #[test]
    fn ranges_contain_keys_and_merge() {
        let r = KeyRange {
            lower: b(&[50, 40], true),
            upper: b(&[50, 50], false),
        };
        let key = |a: i64, c: i64| [Value::Int64(a), Value::Int64(c)];
        assert!(!r.contains(&key(50, 40)));
        assert!(r.contains(&key(50, 41)));
        assert!(!r.contains(&key(50, 50)));
        assert!(r.meets_keys(&key(1, 1), &key(50, 41)));
        assert!(!r.meets_keys(&key(50, 50), &key(60, 0)));
        let merged = normalize_ranges(vec![
            KeyRange {
                lower: b(&[5], false),
                upper: b(&[6], false),
            },
            KeyRange {
                lower: b(&[1], false),
                upper: b(&[5], false),
            },
            KeyRange {
                lower: b(&[9], false),
                upper: b(&[8], false),
            },
        ]);
        assert_eq!(
            merged,
            vec![KeyRange {
                lower: b(&[1], false),
                upper: b(&[6], false)
            }]
        );
    }
}
