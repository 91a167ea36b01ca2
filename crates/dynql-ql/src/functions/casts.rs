//! Conversions between value types: doubles as text, text and `any` values parsed as
//! scalars, doubles to integers with YT's range checks.

use dynql_core::{Value, ValueType};

use super::call::runtime;
use crate::error::Result;

pub(super) fn format_double(v: f64) -> String {
    if v.is_nan() {
        return "nan".into();
    }
    if v.is_infinite() {
        return if v > 0.0 { "inf".into() } else { "-inf".into() };
    }
    // Shortest round-trip text, with a trailing "." for integral values as YT prints them.
    let s = format!("{v}");
    if s.contains('.') || s.contains('e') {
        s
    } else {
        format!("{s}.")
    }
}

/// `parse_int64` and friends: the text is a YSON scalar (`1`, `1u`, `1.0`) converted to the
/// target type as the casts do.
pub(super) fn parse_scalar(s: &[u8], target: ValueType) -> Result<Value> {
    use dynql_core::Yson;
    let bad = || {
        runtime(format!(
            "Cannot convert value {:?} to {target}",
            String::from_utf8_lossy(s)
        ))
    };
    let v = match dynql_core::yson::parse(s).map_err(|_| bad())? {
        Yson::Int64(x) => Value::Int64(x),
        Yson::Uint64(x) => Value::Uint64(x),
        Yson::Double(x) => Value::Double(x),
        _ => return Err(bad()),
    };
    match (target, v) {
        (ValueType::Int64, Value::Int64(x)) => Ok(Value::Int64(x)),
        (ValueType::Int64, Value::Uint64(x)) => Ok(Value::Int64(x as i64)),
        (ValueType::Uint64, Value::Int64(x)) => Ok(Value::Uint64(x as u64)),
        (ValueType::Uint64, Value::Uint64(x)) => Ok(Value::Uint64(x)),
        (ValueType::Double, Value::Int64(x)) => Ok(Value::Double(x as f64)),
        (ValueType::Double, Value::Uint64(x)) => Ok(Value::Double(x as f64)),
        (ValueType::Double, Value::Double(x)) => Ok(Value::Double(x)),
        (t, Value::Double(x)) => double_to_int(x, t),
        _ => Err(bad()),
    }
}

pub(super) fn cast_from_any(v: &Value, target: ValueType) -> Result<Value> {
    let yson = v.to_yson();
    use dynql_core::Yson;
    let bad = || runtime(format!("Cannot convert value {v} of type any to {target}"));
    Ok(match (target, yson) {
        (_, Yson::Entity) => Value::Null,
        (ValueType::Int64, Yson::Int64(x)) => Value::Int64(x),
        (ValueType::Int64, Yson::Uint64(x)) => Value::Int64(x as i64),
        (ValueType::Int64, Yson::Double(x)) => Value::Int64(x as i64),
        (ValueType::Uint64, Yson::Int64(x)) => Value::Uint64(x as u64),
        (ValueType::Uint64, Yson::Uint64(x)) => Value::Uint64(x),
        (ValueType::Uint64, Yson::Double(x)) => Value::Uint64(x as u64),
        (ValueType::Double, Yson::Int64(x)) => Value::Double(x as f64),
        (ValueType::Double, Yson::Uint64(x)) => Value::Double(x as f64),
        (ValueType::Double, Yson::Double(x)) => Value::Double(x),
        (ValueType::Boolean, Yson::Boolean(x)) => Value::Boolean(x),
        (ValueType::String, Yson::String(x)) => Value::String(x),
        _ => return Err(bad()),
    })
}

pub(super) fn double_to_int(x: f64, target: ValueType) -> Result<Value> {
    // Since YT 25.2 a double outside the target range is an error.
    match target {
        ValueType::Int64 => {
            if !(-9.223372036854776e18..9.223372036854776e18).contains(&x) {
                Err(runtime(format!(
                    "Double value {x} is out of range for int64"
                )))
            } else {
                Ok(Value::Int64(x as i64))
            }
        }
        _ => {
            if x.is_nan() || x <= -1.0 || x >= 1.8446744073709552e19 {
                Err(runtime(format!(
                    "Double value {x} is out of range for uint64"
                )))
            } else {
                Ok(Value::Uint64(x as u64))
            }
        }
    }
}
