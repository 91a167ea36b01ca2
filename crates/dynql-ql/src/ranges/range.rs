//! Key ranges as inference produces them: the engine's [`KeyRange`] (from `dynql-core`), built
//! from constraint rows, merged, and the key width the full-scan guard looks at.

pub use dynql_core::key_range::{normalize_ranges, KeyBound, KeyRange};

/// The key width the full-scan guard checks: the smallest number of leading key values fixed
/// by any lower or upper bound. `0` means some range is unbounded on the first key column
/// (e.g. `k > 10` gives upper `[MAX]`), which counts as a full scan. With no ranges nothing
/// is read, so the width is `usize::MAX`.
///
/// ```
/// # use dynql_core::{KeyBound, KeyRange, Value};
/// # use dynql_ql::ranges::used_key_width;
/// let key = vec![Value::Int64(1), Value::Int64(2)];
/// let point = KeyRange { lower: KeyBound::new(key.clone(), false), upper: KeyBound::new(key, true) };
/// assert_eq!(used_key_width(&[point]), 2);
/// assert_eq!(used_key_width(&[KeyRange::all()]), 0);
/// ```
pub fn used_key_width(ranges: &[KeyRange]) -> usize {
    ranges
        .iter()
        .map(|r| r.lower.prefix.len().min(r.upper.prefix.len()))
        .min()
        .unwrap_or(usize::MAX)
}

#[cfg(test)]
mod tests {
    use super::*;
    use dynql_core::Value;

    fn b(values: &[i64], after: bool) -> KeyBound {
        KeyBound::new(values.iter().map(|v| Value::Int64(*v)).collect(), after)
    }

    #[test]
    fn used_key_width_takes_the_narrowest_bound() {
        let ranges = [
            KeyRange {
                lower: b(&[1, 2], false),
                upper: b(&[1, 2], true),
            },
            KeyRange {
                lower: b(&[3], false),
                upper: b(&[3], true),
            },
        ];
        assert_eq!(used_key_width(&ranges), 1);
        assert_eq!(used_key_width(&[KeyRange::all()]), 0);
        assert_eq!(used_key_width(&[]), usize::MAX);
    }
}
