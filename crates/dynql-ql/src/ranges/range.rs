//! Key ranges: what a scan reads. Sorting, merging, the canonical JSON form and the key width
//! the full-scan guard looks at.

use std::fmt;

use dynql_core::Value;

use super::bound::KeyBoundValue;

/// The keys `k` with `lower <= k < upper`: the lower bound row is inclusive, the upper bound
/// row exclusive.
///
/// Bound rows compare value by value ([`KeyBoundValue`] order), a row that is a prefix of
/// another sorting first. So `[50] .. [50, MAX]` holds every key starting with 50, and
/// `[] .. [MAX]` every key.
///
/// ```
/// use dynql_core::Value;
/// use dynql_ql::ranges::{KeyBoundValue, KeyRange};
///
/// let fifty = KeyRange {
///     lower: vec![KeyBoundValue::Value(Value::Int64(50))],
///     upper: vec![KeyBoundValue::Value(Value::Int64(50)), KeyBoundValue::Max],
/// };
/// assert!(fifty.contains(&[Value::Int64(50), Value::Null]));
/// assert!(!fifty.contains(&[Value::Int64(51), Value::Null]));
/// assert_eq!(fifty.to_string(), "[50]..[50,MAX]");
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KeyRange {
    /// Inclusive lower bound row.
    pub lower: Vec<KeyBoundValue>,
    /// Exclusive upper bound row.
    pub upper: Vec<KeyBoundValue>,
}

impl KeyRange {
    /// The range of every key: `[] .. [MAX]`.
    pub fn full() -> KeyRange {
        KeyRange {
            lower: vec![],
            upper: vec![KeyBoundValue::Max],
        }
    }

    /// True when `key` (a full key, in key column order) lies inside.
    pub fn contains(&self, key: &[Value]) -> bool {
        let key: Vec<KeyBoundValue> = key.iter().cloned().map(KeyBoundValue::Value).collect();
        self.lower <= key && key < self.upper
    }

    /// True when no key lies inside.
    pub fn is_empty(&self) -> bool {
        self.lower >= self.upper
    }

    /// The canonical JSON form: `{"lower": [...], "upper": [...]}`, values as JSON (uint64 as
    /// numbers, null as null), the sentinels as `{"$max": true}` and `{"$min": true}`.
    ///
    /// ```
    /// # use dynql_ql::ranges::KeyRange;
    /// assert_eq!(
    ///     KeyRange::full().to_json(),
    ///     serde_json::json!({"lower": [], "upper": [{"$max": true}]})
    /// );
    /// ```
    pub fn to_json(&self) -> serde_json::Value {
        let row = |r: &[KeyBoundValue]| r.iter().map(KeyBoundValue::to_json).collect::<Vec<_>>();
        serde_json::json!({"lower": row(&self.lower), "upper": row(&self.upper)})
    }
}

/// The spec's notation: `[50,40,MAX]..[50,50]`, `<>` for the empty row, `NULL`, `5u` for
/// uint64, strings quoted.
impl fmt::Display for KeyRange {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write_row(f, &self.lower)?;
        f.write_str("..")?;
        write_row(f, &self.upper)
    }
}

fn write_row(f: &mut fmt::Formatter<'_>, row: &[KeyBoundValue]) -> fmt::Result {
    if row.is_empty() {
        return f.write_str("<>");
    }
    f.write_str("[")?;
    for (i, v) in row.iter().enumerate() {
        if i > 0 {
            f.write_str(",")?;
        }
        match v {
            KeyBoundValue::Min => f.write_str("MIN")?,
            KeyBoundValue::Max => f.write_str("MAX")?,
            KeyBoundValue::Value(Value::Null) => f.write_str("NULL")?,
            KeyBoundValue::Value(Value::Uint64(x)) => write!(f, "{x}u")?,
            KeyBoundValue::Value(Value::String(s)) => {
                write!(f, "{:?}", String::from_utf8_lossy(s))?
            }
            KeyBoundValue::Value(v) => write!(f, "{}", v.to_json())?,
        }
    }
    f.write_str("]")
}

/// Sorts ranges and merges those that overlap or touch; drops empty ones.
pub(crate) fn merge_ranges(mut ranges: Vec<KeyRange>) -> Vec<KeyRange> {
    ranges.retain(|r| !r.is_empty());
    ranges.sort_by(|a, b| a.lower.cmp(&b.lower).then_with(|| a.upper.cmp(&b.upper)));
    let mut out: Vec<KeyRange> = Vec::with_capacity(ranges.len());
    for r in ranges {
        match out.last_mut() {
            Some(last) if r.lower <= last.upper => {
                if r.upper > last.upper {
                    last.upper = r.upper;
                }
            }
            _ => out.push(r),
        }
    }
    out
}

/// The key width the full-scan guard checks: the smallest number of leading non-sentinel
/// values over every lower and upper bound row. `0` means some range is unbounded on the
/// first key column (e.g. `k > 10` gives upper `[MAX]`), which counts as a full scan.
/// With no ranges nothing is read, so the width is `usize::MAX`.
///
/// ```
/// # use dynql_core::Value;
/// # use dynql_ql::ranges::{used_key_width, KeyBoundValue, KeyRange};
/// let v = |x| KeyBoundValue::Value(Value::Int64(x));
/// let point = KeyRange { lower: vec![v(1), v(2)], upper: vec![v(1), v(2), KeyBoundValue::Max] };
/// assert_eq!(used_key_width(&[point]), 2);
/// assert_eq!(used_key_width(&[KeyRange::full()]), 0);
/// ```
pub fn used_key_width(ranges: &[KeyRange]) -> usize {
    let width = |row: &[KeyBoundValue]| {
        row.iter()
            .take_while(|v| matches!(v, KeyBoundValue::Value(_)))
            .count()
    };
    ranges
        .iter()
        .map(|r| width(&r.lower).min(width(&r.upper)))
        .min()
        .unwrap_or(usize::MAX)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn v(x: i64) -> KeyBoundValue {
        KeyBoundValue::Value(Value::Int64(x))
    }

    fn range(lower: Vec<KeyBoundValue>, upper: Vec<KeyBoundValue>) -> KeyRange {
        KeyRange { lower, upper }
    }

    #[test]
    fn merging_sorts_and_joins_touching_and_overlapping_ranges() {
        let max = KeyBoundValue::Max;
        let merged = merge_ranges(vec![
            range(vec![v(5)], vec![v(6)]),
            range(vec![v(1)], vec![v(2), max.clone()]),
            range(vec![v(2), max.clone()], vec![v(3)]),
            range(vec![v(2)], vec![v(2), v(7)]),
            range(vec![v(9)], vec![v(9)]),
        ]);
        assert_eq!(
            merged,
            vec![range(vec![v(1)], vec![v(3)]), range(vec![v(5)], vec![v(6)])]
        );
    }

    #[test]
    fn contains_respects_inclusive_lower_and_exclusive_upper() {
        let max = KeyBoundValue::Max;
        let r = range(vec![v(50), v(40), max.clone()], vec![v(50), v(50)]);
        assert!(!r.contains(&[Value::Int64(50), Value::Int64(40)]));
        assert!(r.contains(&[Value::Int64(50), Value::Int64(41)]));
        assert!(!r.contains(&[Value::Int64(50), Value::Int64(50)]));
        assert!(KeyRange::full().contains(&[Value::Null, Value::Null]));
    }

    #[test]
    fn canonical_json_uses_sentinel_objects() {
        let r = range(
            vec![
                KeyBoundValue::Value(Value::Uint64(2)),
                KeyBoundValue::Value(Value::Null),
            ],
            vec![
                KeyBoundValue::Value(Value::string("a")),
                KeyBoundValue::Max,
                KeyBoundValue::Min,
            ],
        );
        assert_eq!(
            r.to_json(),
            serde_json::json!({"lower": [2, null], "upper": ["a", {"$max": true}, {"$min": true}]})
        );
        assert_eq!(r.to_string(), "[2u,NULL]..[\"a\",MAX,MIN]");
    }

    #[test]
    fn used_key_width_takes_the_narrowest_bound() {
        let max = KeyBoundValue::Max;
        let ranges = [
            range(vec![v(1), v(2)], vec![v(1), v(2), max.clone()]),
            range(vec![v(3)], vec![v(3), max]),
        ];
        assert_eq!(used_key_width(&ranges), 1);
        assert_eq!(used_key_width(&[]), usize::MAX);
    }
}
