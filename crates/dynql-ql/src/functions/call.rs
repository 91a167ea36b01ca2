//! The evaluation of scalar functions on evaluated arguments.

use dynql_core::farm_hash::{farm_hash, HashInput};
use dynql_core::{Value, ValueType};

use super::casts::{cast_from_any, double_to_int, format_double, parse_scalar};
use super::patterns::regex_escape;
use super::time::{format_timestamp, timestamp_floor};
use super::{gcd, ScalarFunction};
use crate::error::{Error, Result};
use crate::regex_functions::PreparedRegex;
use crate::value_limits;

/// Evaluates a scalar function on already-evaluated arguments (all but the lazy `if`).
pub fn call_scalar(f: ScalarFunction, args: &[Value], result_type: ValueType) -> Result<Value> {
    use ScalarFunction as S;
    if !f.handles_nulls() && args.iter().any(Value::is_null) {
        return Ok(Value::Null);
    }
    let a = |i: usize| &args[i];
    Ok(match f {
        S::If => match a(0) {
            Value::Boolean(true) => a(1).clone(),
            Value::Boolean(false) => a(2).clone(),
            _ => Value::Null,
        },
        S::IfNull => {
            if a(0).is_null() {
                a(1).clone()
            } else {
                a(0).clone()
            }
        }
        S::Coalesce => args.iter().find(|v| !v.is_null()).cloned().unwrap_or(Value::Null),
        S::IsPrefix => Value::Boolean(str_arg(a(1)).starts_with(str_arg(a(0)))),
        S::IsSubstr => {
            let (n, h) = (str_arg(a(0)), str_arg(a(1)));
            Value::Boolean(n.is_empty() || h.windows(n.len()).any(|w| w == n))
        }
        S::Lower => Value::String(match std::str::from_utf8(str_arg(a(0))) {
            Ok(text) => text.to_lowercase().into_bytes(),
            Err(_) => str_arg(a(0)).to_ascii_lowercase(),
        }),
        S::Length => Value::Int64(str_arg(a(0)).len() as i64),
        S::Concat => Value::String(value_limits::concat(&[str_arg(a(0)), str_arg(a(1))])?),
        S::FarmHash => {
            let inputs: Vec<HashInput> = args
                .iter()
                .map(|v| match v {
                    Value::Null => Ok(HashInput::Null),
                    Value::Int64(x) => Ok(HashInput::Int64(*x)),
                    Value::Uint64(x) => Ok(HashInput::Uint64(*x)),
                    Value::Double(x) => Ok(HashInput::Double(*x)),
                    Value::Boolean(x) => Ok(HashInput::Boolean(*x)),
                    Value::String(x) => Ok(HashInput::String(x)),
                    Value::Any(_) => Err(runtime(
                        "Cannot hash values of type any; only scalar types are allowed for key columns",
                    )),
                })
                .collect::<Result<_>>()?;
            Value::Uint64(farm_hash(&inputs))
        }
        S::NumericToString => Value::String(
            match a(0) {
                Value::Int64(x) => x.to_string(),
                Value::Uint64(x) => format!("{x}u"),
                Value::Double(x) => format_double(*x),
                _ => String::new(),
            }
            .into_bytes(),
        ),
        S::ParseInt64 => parse_scalar(str_arg(a(0)), ValueType::Int64)?,
        S::ParseUint64 => parse_scalar(str_arg(a(0)), ValueType::Uint64)?,
        S::ParseDouble => parse_scalar(str_arg(a(0)), ValueType::Double)?,
        // YT's regex predicates answer false, not null, when the pattern or the text is null.
        S::RegexFullMatch | S::RegexPartialMatch if args.iter().any(Value::is_null) => {
            Value::Boolean(false)
        }
        S::RegexFullMatch | S::RegexPartialMatch => {
            let re = PreparedRegex::new(f, str_arg(a(0)), b"")?;
            Value::Boolean(re.is_match(str_arg(a(1))))
        }
        S::RegexReplaceFirst | S::RegexReplaceAll | S::RegexExtract => {
            let re = PreparedRegex::new(f, str_arg(a(0)), str_arg(a(2)))?;
            re.rewrite(str_arg(a(1)))?.map_or(Value::Null, Value::String)
        }
        S::RegexEscape => Value::String(regex_escape(str_arg(a(0)))),
        S::FormatTimestamp => Value::String(format_timestamp(int_arg(a(0)), str_arg(a(1)))?),
        S::TimestampFloor(unit) => Value::Int64(timestamp_floor(int_arg(a(0)), unit)?),
        S::FormatGuid => {
            let (x, y) = (uint_arg(a(0)), uint_arg(a(1)));
            Value::String(
                format!("{:x}-{:x}-{:x}-{:x}", x >> 32, x & 0xffff_ffff, y >> 32, y & 0xffff_ffff)
                    .into_bytes(),
            )
        }
        S::CastInt64 => match a(0) {
            Value::Int64(x) => Value::Int64(*x),
            Value::Uint64(x) => Value::Int64(*x as i64),
            Value::Double(x) => double_to_int(*x, ValueType::Int64)?,
            v @ Value::Any(_) => cast_from_any(v, ValueType::Int64)?,
            _ => Value::Null,
        },
        S::CastUint64 => match a(0) {
            Value::Int64(x) => Value::Uint64(*x as u64),
            Value::Uint64(x) => Value::Uint64(*x),
            Value::Double(x) => double_to_int(*x, ValueType::Uint64)?,
            v @ Value::Any(_) => cast_from_any(v, ValueType::Uint64)?,
            _ => Value::Null,
        },
        S::CastDouble => match a(0) {
            Value::Any(_) => cast_from_any(a(0), ValueType::Double)?,
            v => Value::Double(double_arg(v)),
        },
        S::CastBoolean => match a(0) {
            Value::Int64(x) => Value::Boolean(*x != 0),
            Value::Uint64(x) => Value::Boolean(*x != 0),
            Value::Boolean(x) => Value::Boolean(*x),
            v @ Value::Any(_) => cast_from_any(v, ValueType::Boolean)?,
            _ => Value::Null,
        },
        S::CastString => match a(0) {
            Value::String(s) => Value::String(s.clone()),
            v @ Value::Any(_) => cast_from_any(v, ValueType::String)?,
            _ => Value::Null,
        },
        S::IsNan => Value::Boolean(matches!(a(0), Value::Double(x) if x.is_nan())),
        S::IsFinite => match a(0) {
            Value::Double(x) => Value::Boolean(x.is_finite()),
            _ => Value::Null,
        },
        S::IsInf => match a(0) {
            Value::Double(x) => Value::Boolean(x.is_infinite()),
            _ => Value::Null,
        },
        S::Greatest => {
            if args.iter().any(Value::is_null) {
                return Err(runtime("Function \"greatest\" does not accept null arguments"));
            }
            args.iter().max_by(|x, y| dynql_core::compare_values(x, y)).cloned().unwrap_or(Value::Null)
        }
        S::Abs => match a(0) {
            Value::Int64(x) => Value::Int64(x.wrapping_abs()),
            Value::Double(x) => Value::Double(x.abs()),
            v => v.clone(),
        },
        S::Math(m) => Value::Double(m.apply(double_arg(a(0)))),
        S::Round(r) => double_to_int(r.apply(double_arg(a(0))), ValueType::Int64)?,
        S::Atan2 => Value::Double(double_arg(a(0)).atan2(double_arg(a(1)))),
        S::Pow => Value::Double(double_arg(a(0)).powf(double_arg(a(1)))),
        S::Log => Value::Double(double_arg(a(1)).log(double_arg(a(0)))),
        S::Signbit => Value::Boolean(double_arg(a(0)).is_sign_negative()),
        S::BitCount => Value::Int64(uint_arg(a(0)).count_ones() as i64),
        S::Factorial => {
            let n = uint_arg(a(0));
            if n > 20 {
                return Err(runtime(format!("Factorial of {n} does not fit uint64")));
            }
            Value::Uint64((1..=n).product())
        }
        S::Gcd => Value::Uint64(gcd(uint_arg(a(0)), uint_arg(a(1)))),
        S::Lcm => {
            let (x, y) = (uint_arg(a(0)), uint_arg(a(1)));
            let g = gcd(x, y);
            Value::Uint64(x.checked_div(g).map_or(0, |q| q.wrapping_mul(y)))
        }
        S::Xor => Value::Uint64(uint_arg(a(0)) ^ uint_arg(a(1))),
        S::Sleep => {
            let ms = int_arg(a(0)).clamp(1, 1000) as u64;
            std::thread::sleep(std::time::Duration::from_millis(ms));
            Value::Int64(0)
        }
        S::IsValidUtf8 => Value::Boolean(std::str::from_utf8(str_arg(a(0))).is_ok()),
        S::ToValidUtf8 => Value::String(String::from_utf8_lossy(str_arg(a(0))).into_owned().into_bytes()),
        S::ToAny => crate::ypath::to_any(a(0))?,
        S::GetByPath(t, strict) => crate::ypath::get_by_path(a(0), a(1), t, strict)?,
        S::ListContains => crate::ypath::list_contains(a(0), a(1))?,
        S::YsonLength => crate::ypath::yson_length(a(0))?,
        S::AnyToYsonString => crate::ypath::any_to_yson_string(a(0))?,
        S::YsonStringToAny => crate::ypath::yson_string_to_any(a(0))?,
        S::MakeList => crate::ypath::make_list(args)?,
        S::MakeMap => crate::ypath::make_map(args)?,
        S::MakeEntity => Value::Any(b"#".to_vec()),
    })
    .and_then(|v| value_limits::check_result(f, coerce_result(v, result_type)))
}

/// Functions whose result type is the type variable may compute in a wider type; keep the
/// declared result type.
fn coerce_result(v: Value, t: ValueType) -> Value {
    match (v, t) {
        (Value::Int64(x), ValueType::Uint64) => Value::Uint64(x as u64),
        (Value::Uint64(x), ValueType::Int64) => Value::Int64(x as i64),
        (v, _) => v,
    }
}

pub(super) fn runtime(msg: impl Into<String>) -> Error {
    Error::Runtime(msg.into())
}

fn str_arg(v: &Value) -> &[u8] {
    match v {
        Value::String(s) | Value::Any(s) => s,
        _ => b"",
    }
}

fn int_arg(v: &Value) -> i64 {
    match v {
        Value::Int64(x) => *x,
        Value::Uint64(x) => *x as i64,
        _ => 0,
    }
}

fn uint_arg(v: &Value) -> u64 {
    match v {
        Value::Uint64(x) => *x,
        Value::Int64(x) => *x as u64,
        _ => 0,
    }
}

fn double_arg(v: &Value) -> f64 {
    match v {
        Value::Double(x) => *x,
        Value::Int64(x) => *x as f64,
        Value::Uint64(x) => *x as f64,
        _ => 0.0,
    }
}
