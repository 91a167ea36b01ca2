//! Key bound values (real values between the `Min` and `Max` sentinels) and the bounds of the
//! intervals that constrain one key column.

use dynql_core::Value;

/// One value of a key bound row: a real key value, or a sentinel below (`Min`) or above
/// (`Max`) every value.
///
/// The order is YT's: `Min` < every value (null first, then by type and value, see
/// [`dynql_core::compare_values`]) < `Max`. Only inference works with it: its ranges come
/// out as [`dynql_core::KeyRange`]s.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) enum KeyBoundValue {
    /// Below every value.
    Min,
    /// A real key value.
    Value(Value),
    /// Above every value; after a prefix it means "just after every key with this prefix".
    Max,
}

/// One end of an interval of a key column's values.
///
/// Bounds compare by `(value, after)`, so `after` places the bound just after `value`. A lower
/// bound with `after = false` includes `value` and with `after = true` excludes it; an upper
/// bound with `after = true` includes `value` and with `after = false` excludes it.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) struct Bound {
    pub value: KeyBoundValue,
    pub after: bool,
}

impl Bound {
    /// The lowest bound: before every value.
    pub fn min() -> Bound {
        Bound {
            value: KeyBoundValue::Min,
            after: false,
        }
    }

    /// The highest bound: after every value.
    pub fn max() -> Bound {
        Bound {
            value: KeyBoundValue::Max,
            after: false,
        }
    }

    /// Just before `v`.
    pub fn before(v: Value) -> Bound {
        Bound {
            value: KeyBoundValue::Value(v),
            after: false,
        }
    }

    /// Just after `v`.
    pub fn after(v: Value) -> Bound {
        Bound {
            value: KeyBoundValue::Value(v),
            after: true,
        }
    }
}

/// The values of one key column between `lower` and `upper` (see [`Bound`] for inclusiveness).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Interval {
    pub lower: Bound,
    pub upper: Bound,
}

impl Interval {
    pub fn new(lower: Bound, upper: Bound) -> Interval {
        Interval { lower, upper }
    }

    /// Every value.
    pub fn universal() -> Interval {
        Interval::new(Bound::min(), Bound::max())
    }

    /// Exactly `v`.
    pub fn exact(v: Value) -> Interval {
        Interval::new(Bound::before(v.clone()), Bound::after(v))
    }

    /// True when no value lies inside. Null is the smallest value, so an interval that ends
    /// before null (`c < null`) is empty too.
    pub fn is_empty(&self) -> bool {
        self.lower >= self.upper || self.upper <= Bound::before(Value::Null)
    }

    pub fn is_universal(&self) -> bool {
        self.lower == Bound::min() && self.upper == Bound::max()
    }

    /// The single value of an exact interval (`[v, v]`).
    pub fn exact_value(&self) -> Option<&Value> {
        match (&self.lower, &self.upper) {
            (
                Bound {
                    value: KeyBoundValue::Value(lo),
                    after: false,
                },
                Bound {
                    value: KeyBoundValue::Value(hi),
                    after: true,
                },
            ) if lo == hi => Some(lo),
            _ => None,
        }
    }

    /// True when `v` lies inside.
    pub fn contains(&self, v: &Value) -> bool {
        self.lower <= Bound::before(v.clone()) && Bound::after(v.clone()) <= self.upper
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn v(x: i64) -> KeyBoundValue {
        KeyBoundValue::Value(Value::Int64(x))
    }

    #[test]
    fn key_bound_values_order_sentinels_around_yt_order() {
        let mut values = vec![
            KeyBoundValue::Max,
            KeyBoundValue::Value(Value::string("a")),
            v(3),
            KeyBoundValue::Value(Value::Uint64(0)),
            KeyBoundValue::Value(Value::Boolean(false)),
            KeyBoundValue::Value(Value::Double(-1.5)),
            KeyBoundValue::Value(Value::Null),
            v(-7),
            KeyBoundValue::Min,
        ];
        values.sort();
        assert_eq!(
            values,
            vec![
                KeyBoundValue::Min,
                KeyBoundValue::Value(Value::Null),
                v(-7),
                v(3),
                KeyBoundValue::Value(Value::Uint64(0)),
                KeyBoundValue::Value(Value::Double(-1.5)),
                KeyBoundValue::Value(Value::Boolean(false)),
                KeyBoundValue::Value(Value::string("a")),
                KeyBoundValue::Max,
            ]
        );
    }

    #[test]
    fn bound_rows_compare_with_prefix_first() {
        // `[50] < [50, 3] < [50, MAX] < [51]`: a prefix sorts before its extensions.
        let a = vec![v(50)];
        let b = vec![v(50), v(3)];
        let c = vec![v(50), KeyBoundValue::Max];
        let d = vec![v(51)];
        assert!(a < b && b < c && c < d);
    }

    #[test]
    fn bounds_place_after_just_past_the_value() {
        assert!(Bound::before(Value::Int64(5)) < Bound::after(Value::Int64(5)));
        assert!(Bound::after(Value::Int64(5)) < Bound::before(Value::Int64(6)));
        assert!(Bound::min() < Bound::before(Value::Null));
        assert!(Bound::after(Value::string("zz")) < Bound::max());
    }

    #[test]
    fn intervals_know_exact_empty_and_membership() {
        let five = Interval::exact(Value::Int64(5));
        assert_eq!(five.exact_value(), Some(&Value::Int64(5)));
        assert!(five.contains(&Value::Int64(5)));
        assert!(!five.contains(&Value::Int64(6)));
        let below_null = Interval::new(Bound::min(), Bound::before(Value::Null));
        assert!(below_null.is_empty(), "c < null holds for no value");
        let up_to_null = Interval::new(Bound::min(), Bound::after(Value::Null));
        assert!(!up_to_null.is_empty());
        assert!(up_to_null.contains(&Value::Null));
        assert!(!up_to_null.contains(&Value::Int64(i64::MIN)));
        let open = Interval::new(
            Bound::after(Value::Int64(1)),
            Bound::before(Value::Int64(2)),
        );
        assert!(!open.is_empty(), "bounds are not integer-aware");
        assert!(Interval::new(
            Bound::before(Value::Int64(3)),
            Bound::after(Value::Int64(2))
        )
        .is_empty());
        assert!(Interval::universal().is_universal());
        assert_eq!(Interval::universal().exact_value(), None);
    }
}
