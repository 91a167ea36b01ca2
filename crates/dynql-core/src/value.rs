//! Values and YT's total order over them.
//!
//! YT compares values first by type, in the order null < int64 < uint64 < double < boolean <
//! string < any, then by value; strings bytewise. This order is used for keys, `ORDER BY`,
//! `min`/`max` and (outside canonical null mode) for the comparison operators of YT QL.

use std::cmp::Ordering;
use std::fmt;
use std::hash::{Hash, Hasher};

use crate::types::ValueType;
use crate::yson::Yson;

/// One YT value of any wire type.
///
/// `String` is a byte string and round-trips arbitrary bytes. `Any` holds a YSON document in
/// canonical text form.
#[derive(Debug, Clone)]
pub enum Value {
    Null,
    Int64(i64),
    Uint64(u64),
    Double(f64),
    Boolean(bool),
    String(Vec<u8>),
    Any(Vec<u8>),
}

impl Value {
    /// The wire type of this value (`Null` for null).
    pub fn value_type(&self) -> ValueType {
        match self {
            Value::Null => ValueType::Null,
            Value::Int64(_) => ValueType::Int64,
            Value::Uint64(_) => ValueType::Uint64,
            Value::Double(_) => ValueType::Double,
            Value::Boolean(_) => ValueType::Boolean,
            Value::String(_) => ValueType::String,
            Value::Any(_) => ValueType::Any,
        }
    }

    /// True for null.
    pub fn is_null(&self) -> bool {
        matches!(self, Value::Null)
    }

    /// A string value from text.
    pub fn string(s: impl Into<Vec<u8>>) -> Value {
        Value::String(s.into())
    }

    /// The value as a YSON node (`Any` values are parsed back into their document).
    pub fn to_yson(&self) -> Yson {
        match self {
            Value::Null => Yson::Entity,
            Value::Int64(v) => Yson::Int64(*v),
            Value::Uint64(v) => Yson::Uint64(*v),
            Value::Double(v) => Yson::Double(*v),
            Value::Boolean(v) => Yson::Boolean(*v),
            Value::String(v) => Yson::String(v.clone()),
            // Any values are validated when written, so a parse failure means a bug upstream;
            // keep the bytes visible rather than losing them.
            Value::Any(v) => crate::yson::parse(v).unwrap_or_else(|_| Yson::String(v.clone())),
        }
    }

    /// The value as JSON, as YT's json format prints it: uint64 as a plain number, byte
    /// strings that are not UTF-8 mapped byte by byte to U+0000..U+00FF, `any` as its JSON form.
    pub fn to_json(&self) -> serde_json::Value {
        match self {
            Value::Null => serde_json::Value::Null,
            Value::Int64(v) => serde_json::Value::from(*v),
            Value::Uint64(v) => serde_json::Value::from(*v),
            Value::Double(v) => match serde_json::Number::from_f64(*v) {
                Some(n) => serde_json::Value::Number(n),
                None => serde_json::Value::String(double_special_name(*v).to_string()),
            },
            Value::Boolean(v) => serde_json::Value::Bool(*v),
            Value::String(v) => serde_json::Value::String(bytes_to_json_string(v)),
            Value::Any(_) => self.to_yson().to_json(),
        }
    }
}

fn double_special_name(v: f64) -> &'static str {
    if v.is_nan() {
        "nan"
    } else if v > 0.0 {
        "inf"
    } else {
        "-inf"
    }
}

/// Renders a byte string for JSON: UTF-8 text as is, other bytes one code point per byte.
pub fn bytes_to_json_string(bytes: &[u8]) -> String {
    match std::str::from_utf8(bytes) {
        Ok(s) => s.to_string(),
        Err(_) => bytes.iter().map(|&b| b as char).collect(),
    }
}

/// YT's total order of values: by type (null first), then by value.
///
/// Doubles compare numerically with NaN after every other double, so that the order is total
/// (query evaluation rejects NaN comparisons before they get here).
pub fn compare_values(a: &Value, b: &Value) -> Ordering {
    match (a, b) {
        (Value::Null, Value::Null) => Ordering::Equal,
        (Value::Int64(x), Value::Int64(y)) => x.cmp(y),
        (Value::Uint64(x), Value::Uint64(y)) => x.cmp(y),
        (Value::Double(x), Value::Double(y)) => compare_doubles(*x, *y),
        (Value::Boolean(x), Value::Boolean(y)) => x.cmp(y),
        (Value::String(x), Value::String(y)) => x.cmp(y),
        (Value::Any(x), Value::Any(y)) => x.cmp(y),
        _ => a.value_type().cmp(&b.value_type()),
    }
}

/// Numeric order of doubles with NaN last (and -0.0 equal to 0.0).
pub fn compare_doubles(x: f64, y: f64) -> Ordering {
    match x.partial_cmp(&y) {
        Some(o) => o,
        None => x.is_nan().cmp(&y.is_nan()),
    }
}

/// Compares two rows (or key prefixes) value by value in YT order; a shorter row that is a
/// prefix of the other sorts first.
pub fn compare_rows(a: &[Value], b: &[Value]) -> Ordering {
    for (x, y) in a.iter().zip(b) {
        let o = compare_values(x, y);
        if o != Ordering::Equal {
            return o;
        }
    }
    a.len().cmp(&b.len())
}

impl PartialEq for Value {
    fn eq(&self, other: &Self) -> bool {
        compare_values(self, other) == Ordering::Equal
    }
}

impl Eq for Value {}

impl PartialOrd for Value {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for Value {
    fn cmp(&self, other: &Self) -> Ordering {
        compare_values(self, other)
    }
}

impl Hash for Value {
    fn hash<H: Hasher>(&self, state: &mut H) {
        std::mem::discriminant(self).hash(state);
        match self {
            Value::Null => {}
            Value::Int64(v) => v.hash(state),
            Value::Uint64(v) => v.hash(state),
            // Equal doubles must hash equally: 0.0 == -0.0, and all NaNs compare equal.
            Value::Double(v) => {
                let v = if *v == 0.0 { 0.0 } else { *v };
                if v.is_nan() {
                    u64::MAX.hash(state)
                } else {
                    v.to_bits().hash(state)
                }
            }
            Value::Boolean(v) => v.hash(state),
            Value::String(v) | Value::Any(v) => v.hash(state),
        }
    }
}

impl fmt::Display for Value {
    /// Text YSON of the value (`#`, `1`, `2u`, `"s"`, `%true`).
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Value::Any(v) => f.write_str(&String::from_utf8_lossy(v)),
            other => f.write_str(&crate::yson::to_text(&other.to_yson())),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn arb_value() -> impl Strategy<Value = Value> {
        prop_oneof![
            Just(Value::Null),
            any::<i64>().prop_map(Value::Int64),
            any::<u64>().prop_map(Value::Uint64),
            any::<f64>().prop_map(Value::Double),
            any::<bool>().prop_map(Value::Boolean),
            proptest::collection::vec(any::<u8>(), 0..4).prop_map(Value::String),
        ]
    }

    #[test]
    fn null_is_the_minimum_and_types_order_before_values() {
        let ordered = [
            Value::Null,
            Value::Int64(i64::MAX),
            Value::Uint64(0),
            Value::Double(-1.0),
            Value::Boolean(false),
            Value::Boolean(true),
            Value::string(""),
            Value::string("a"),
        ];
        for w in ordered.windows(2) {
            assert_eq!(
                compare_values(&w[0], &w[1]),
                Ordering::Less,
                "{:?} < {:?}",
                w[0],
                w[1]
            );
        }
    }

    #[test]
    fn strings_compare_bytewise() {
        assert!(Value::String(vec![0x7f]) < Value::String(vec![0x80]));
        assert!(Value::string("ab") < Value::string("abc"));
    }

    proptest! {
        #[test]
        fn order_is_total_and_consistent(a in arb_value(), b in arb_value(), c in arb_value()) {
            let ab = compare_values(&a, &b);
            prop_assert_eq!(ab.reverse(), compare_values(&b, &a));
            if ab != Ordering::Greater && compare_values(&b, &c) != Ordering::Greater {
                prop_assert_ne!(compare_values(&a, &c), Ordering::Greater);
            }
        }

        #[test]
        fn equal_values_hash_equally(a in arb_value(), b in arb_value()) {
            use std::collections::hash_map::DefaultHasher;
            if a == b {
                let mut ha = DefaultHasher::new();
                let mut hb = DefaultHasher::new();
                a.hash(&mut ha);
                b.hash(&mut hb);
                prop_assert_eq!(ha.finish(), hb.finish());
            }
        }
    }
}
