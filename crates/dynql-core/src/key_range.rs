//! Key ranges: what a scan reads. One type for the whole engine: range inference produces
//! [`KeyRange`]s, the storage layer reads them, `explain-query` prints them.
//!
//! A bound is a position between keys: a key prefix, and with `after` the position just past
//! every key that starts with the prefix (YT's trailing `MAX` sentinel). So `[50] .. [50,MAX]`
//! holds every key whose first column is 50, and `<> .. [MAX]` every key.

use std::cmp::Ordering;
use std::fmt;

use crate::value::{compare_rows, compare_values, Value};

/// One end of a key range: a key prefix, and with `after` the position just after every key
/// that starts with the prefix.
///
/// ```
/// use dynql_core::{KeyBound, Value};
/// // [50] .. [50, MAX] holds every key whose first column is 50.
/// let lower = KeyBound::new(vec![Value::Int64(50)], false);
/// let upper = KeyBound::new(vec![Value::Int64(50)], true);
/// let key = [Value::Int64(50), Value::Int64(7)];
/// assert!(!lower.is_after(&key) && upper.is_after(&key));
/// ```
#[derive(Debug, Clone, PartialEq)]
pub struct KeyBound {
    /// The leading key values the bound fixes.
    pub prefix: Vec<Value>,
    /// Just after every key starting with `prefix` rather than just before.
    pub after: bool,
}

impl KeyBound {
    /// The bound before (`after = false`) or after every key starting with `prefix`.
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

    /// Total order of bounds as positions between keys:
    /// `<> < [1] < [1,5] < [1,5,MAX] < [1,MAX] < [2] < [MAX]`.
    pub fn compare(&self, other: &KeyBound) -> Ordering {
        for (x, y) in self.prefix.iter().zip(&other.prefix) {
            let o = compare_values(x, y);
            if o != Ordering::Equal {
                return o;
            }
        }
        // One prefix extends the other: the shorter bound lies before (or, with `after`, past)
        // every key extending it.
        let shorter = |b: &KeyBound| {
            if b.after {
                Ordering::Greater
            } else {
                Ordering::Less
            }
        };
        match self.prefix.len().cmp(&other.prefix.len()) {
            Ordering::Less => shorter(self),
            Ordering::Greater => shorter(other).reverse(),
            Ordering::Equal => self.after.cmp(&other.after),
        }
    }

    /// The canonical JSON form: the prefix values, then `{"$max": true}` when `after`.
    pub fn to_json(&self) -> serde_json::Value {
        let mut row: Vec<serde_json::Value> = self.prefix.iter().map(Value::to_json).collect();
        if self.after {
            row.push(serde_json::json!({"$max": true}));
        }
        serde_json::Value::Array(row)
    }
}

/// The spec's notation: `[50,40,MAX]`, `<>` for the empty row, `NULL`, `5u` for uint64,
/// strings quoted.
impl fmt::Display for KeyBound {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.prefix.is_empty() && !self.after {
            return f.write_str("<>");
        }
        f.write_str("[")?;
        for (i, v) in self.prefix.iter().enumerate() {
            if i > 0 {
                f.write_str(",")?;
            }
            match v {
                Value::Null => f.write_str("NULL")?,
                Value::Uint64(x) => write!(f, "{x}u")?,
                Value::String(s) => write!(f, "{:?}", String::from_utf8_lossy(s))?,
                v => write!(f, "{}", v.to_json())?,
            }
        }
        if self.after {
            f.write_str(if self.prefix.is_empty() {
                "MAX"
            } else {
                ",MAX"
            })?;
        }
        f.write_str("]")
    }
}

/// The keys from `lower` (inclusive) to `upper` (exclusive).
///
/// ```
/// use dynql_core::{KeyBound, KeyRange, Value};
///
/// let fifty = KeyRange {
///     lower: KeyBound::new(vec![Value::Int64(50)], false),
///     upper: KeyBound::new(vec![Value::Int64(50)], true),
/// };
/// assert!(fifty.contains(&[Value::Int64(50), Value::Null]));
/// assert!(!fifty.contains(&[Value::Int64(51), Value::Null]));
/// assert_eq!(fifty.to_string(), "[50]..[50,MAX]");
/// assert_eq!(
///     fifty.to_json(),
///     serde_json::json!({"lower": [50], "upper": [50, {"$max": true}]})
/// );
/// ```
#[derive(Debug, Clone, PartialEq)]
pub struct KeyRange {
    /// Inclusive lower bound.
    pub lower: KeyBound,
    /// Exclusive upper bound.
    pub upper: KeyBound,
}

impl KeyRange {
    /// Every key: `<> .. [MAX]`.
    pub fn all() -> KeyRange {
        KeyRange {
            lower: KeyBound::min(),
            upper: KeyBound::max(),
        }
    }

    /// Whether no key lies in the range.
    pub fn is_empty(&self) -> bool {
        self.lower.compare(&self.upper).is_ge()
    }

    /// Whether `key` (a full key, in key column order) lies in the range.
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

    /// The canonical JSON form `{"lower": [...], "upper": [...]}` (spec, "Canonical range
    /// format"): values as JSON (uint64 as numbers, null as null), MAX as `{"$max": true}`.
    pub fn to_json(&self) -> serde_json::Value {
        serde_json::json!({"lower": self.lower.to_json(), "upper": self.upper.to_json()})
    }
}

/// `lower..upper` in the spec's notation: `[50,40,MAX]..[50,50]`.
impl fmt::Display for KeyRange {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}..{}", self.lower, self.upper)
    }
}

/// Sorts ranges and merges overlapping or touching ones, dropping empty ones, so that a scan
/// yields each row once and in key order.
pub fn normalize_ranges(mut ranges: Vec<KeyRange>) -> Vec<KeyRange> {
    ranges.retain(|r| !r.is_empty());
    ranges.sort_by(|a, b| {
        a.lower
            .compare(&b.lower)
            .then_with(|| a.upper.compare(&b.upper))
    });
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

    fn r(lower: KeyBound, upper: KeyBound) -> KeyRange {
        KeyRange { lower, upper }
    }

    #[test]
    fn bounds_order_as_positions_between_keys() {
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
        let range = r(b(&[50, 40], true), b(&[50, 50], false));
        let key = |a: i64, c: i64| [Value::Int64(a), Value::Int64(c)];
        assert!(!range.contains(&key(50, 40)));
        assert!(range.contains(&key(50, 41)));
        assert!(!range.contains(&key(50, 50)));
        assert!(range.meets_keys(&key(1, 1), &key(50, 41)));
        assert!(!range.meets_keys(&key(50, 50), &key(60, 0)));
        assert!(KeyRange::all().contains(&[Value::Null, Value::Null]));
        let merged = normalize_ranges(vec![
            r(b(&[5], false), b(&[6], false)),
            r(b(&[1], false), b(&[5], false)),
            r(b(&[9], false), b(&[8], false)),
        ]);
        assert_eq!(merged, vec![r(b(&[1], false), b(&[6], false))]);
        assert!(r(b(&[9], false), b(&[8], false)).is_empty());
    }

    #[test]
    fn notation_and_json_use_the_spec_forms() {
        let range = r(
            KeyBound::new(vec![Value::Uint64(2), Value::Null], false),
            KeyBound::new(vec![Value::string("a")], true),
        );
        assert_eq!(range.to_string(), "[2u,NULL]..[\"a\",MAX]");
        assert_eq!(
            range.to_json(),
            serde_json::json!({"lower": [2, null], "upper": ["a", {"$max": true}]})
        );
        assert_eq!(KeyRange::all().to_string(), "<>..[MAX]");
        assert_eq!(
            KeyRange::all().to_json(),
            serde_json::json!({"lower": [], "upper": [{"$max": true}]})
        );
    }
}
