//! Builtin functions: the registry (name -> function, case-insensitive), their YT v1
//! signatures, and the evaluation of scalar functions.
//!
//! Signatures use one type variable `T` per function: parameters marked [`Param::T`] share it
//! (constrained by their domain), [`Param::Fixed`] parameters take any type of their set.

use dynql_core::farm_hash::{farm_hash, HashInput};
use dynql_core::{Value, ValueType};

use crate::error::{Error, Result};
use crate::regex_functions::PreparedRegex;
use crate::types::TypeSet;
use crate::value_limits;

/// A parameter of a function signature.
#[derive(Debug, Clone, Copy)]
pub enum Param {
    /// Bound to the signature's type variable, which must lie in this domain.
    T(TypeSet),
    /// Any one type of this set, chosen independently.
    Fixed(TypeSet),
}

/// A function signature: fixed parameters, an optional repeated tail, a result.
#[derive(Debug, Clone)]
pub struct Signature {
    pub params: Vec<Param>,
    pub repeated: Option<Param>,
    pub result: Param,
}

impl Signature {
    fn new(params: Vec<Param>, result: Param) -> Signature {
        Signature {
            params,
            repeated: None,
            result,
        }
    }

    fn variadic(params: Vec<Param>, repeated: Param, result: Param) -> Signature {
        Signature {
            params,
            repeated: Some(repeated),
            result,
        }
    }

    /// The parameter of argument `i`, if the function takes that many arguments.
    pub fn param(&self, i: usize) -> Option<Param> {
        self.params.get(i).copied().or(if i >= self.params.len() {
            self.repeated
        } else {
            None
        })
    }

    /// Whether `n` arguments are accepted.
    pub fn accepts(&self, n: usize) -> bool {
        if self.repeated.is_some() {
            n >= self.params.len()
        } else {
            n == self.params.len()
        }
    }
}

/// Calendar units of `timestamp_floor_*`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FloorUnit {
    Hour,
    Day,
    Week,
    Month,
    Quarter,
    Year,
}

/// Unary double functions.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MathFn {
    Acos,
    Asin,
    Cos,
    Sin,
    Tan,
    Cot,
    Atan,
    Cbrt,
    Exp,
    Ln,
    Log10,
    Log2,
    Sqrt,
    Degrees,
    Radians,
}

/// Double -> int64 rounding functions.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RoundFn {
    Ceil,
    Floor,
    Round,
    Trunc,
    Even,
    Sign,
}

/// Scalar builtins.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ScalarFunction {
    If,
    IfNull,
    Coalesce,
    IsPrefix,
    IsSubstr,
    Lower,
    Length,
    Concat,
    FarmHash,
    NumericToString,
    ParseInt64,
    ParseUint64,
    ParseDouble,
    RegexFullMatch,
    RegexPartialMatch,
    RegexReplaceFirst,
    RegexReplaceAll,
    RegexExtract,
    RegexEscape,
    FormatTimestamp,
    TimestampFloor(FloorUnit),
    FormatGuid,
    CastInt64,
    CastUint64,
    CastDouble,
    CastBoolean,
    CastString,
    IsNan,
    IsFinite,
    IsInf,
    Greatest,
    Abs,
    Math(MathFn),
    Round(RoundFn),
    Atan2,
    Pow,
    Log,
    Signbit,
    BitCount,
    Factorial,
    Gcd,
    Lcm,
    Xor,
    Sleep,
    IsValidUtf8,
    ToValidUtf8,
    ToAny,
    /// `try_get_<type>` (false) or `get_<type>` (true) with the result type.
    GetByPath(ValueType, bool),
    ListContains,
    YsonLength,
    AnyToYsonString,
    YsonStringToAny,
    MakeList,
    MakeMap,
    MakeEntity,
}

/// Aggregate builtins (only with GROUP BY).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AggregateFunction {
    Sum,
    Min,
    Max,
    Avg,
    Cardinality,
    Argmin,
    Argmax,
    First,
}

/// A function found by name.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Function {
    Scalar(ScalarFunction),
    Aggregate(AggregateFunction),
}

/// Functions of the YT reference that dynql does not provide yet; they get an explicit error
/// instead of "unknown function".
pub const NOT_YET_SUPPORTED: &[&str] = &[
    "list_has_intersection",
    "split",
    "make_ngrams",
    "array_agg",
    "dict_sum",
    "xdelta",
    "uniq",
    "format_timestamp_tz",
    "format_timestamp_localtime",
    "bigb_hash",
    "cardinality_state",
    "cardinality_merge",
    "cardinality_merge_state",
];

/// The names [`lookup`] knows, scalar functions first, then aggregates, for listing and
/// completion. A test keeps it equal to the names `lookup` matches.
pub const NAMES: &[&str] = &[
    "if",
    "if_null",
    "coalesce",
    "is_prefix",
    "is_substr",
    "lower",
    "length",
    "concat",
    "farm_hash",
    "numeric_to_string",
    "parse_int64",
    "parse_uint64",
    "parse_double",
    "regex_full_match",
    "regex_partial_match",
    "regex_replace_first",
    "regex_replace_all",
    "regex_extract",
    "regex_escape",
    "format_timestamp",
    "timestamp_floor_hour",
    "timestamp_floor_day",
    "timestamp_floor_week",
    "timestamp_floor_month",
    "timestamp_floor_quarter",
    "timestamp_floor_year",
    "format_guid",
    "int64",
    "uint64",
    "double",
    "boolean",
    "string",
    "is_nan",
    "is_finite",
    "is_inf",
    "greatest",
    "abs",
    "acos",
    "asin",
    "cos",
    "sin",
    "tan",
    "cot",
    "atan",
    "cbrt",
    "exp",
    "ln",
    "log10",
    "log2",
    "sqrt",
    "degrees",
    "radians",
    "ceil",
    "floor",
    "round",
    "trunc",
    "even",
    "sign",
    "atan2",
    "pow",
    "log",
    "signbit",
    "bit_count",
    "factorial",
    "gcd",
    "lcm",
    "xor",
    "sleep",
    "is_valid_utf8",
    "to_valid_utf8",
    "to_any",
    "try_get_int64",
    "try_get_uint64",
    "try_get_double",
    "try_get_boolean",
    "try_get_string",
    "try_get_any",
    "get_int64",
    "get_uint64",
    "get_double",
    "get_boolean",
    "get_string",
    "get_any",
    "list_contains",
    "yson_length",
    "any_to_yson_string",
    "yson_string_to_any",
    "make_list",
    "make_map",
    "make_entity",
    "sum",
    "min",
    "max",
    "avg",
    "cardinality",
    "argmin",
    "argmax",
    "first",
];

/// Looks a function up by name (case-insensitive).
pub fn lookup(name: &str) -> Option<Function> {
    use ScalarFunction as S;
    let lower = name.to_ascii_lowercase();
    let f = match lower.as_str() {
        "if" => S::If,
        "if_null" => S::IfNull,
        "coalesce" => S::Coalesce,
        "is_prefix" => S::IsPrefix,
        "is_substr" => S::IsSubstr,
        "lower" => S::Lower,
        "length" => S::Length,
        "concat" => S::Concat,
        "farm_hash" => S::FarmHash,
        "numeric_to_string" => S::NumericToString,
        "parse_int64" => S::ParseInt64,
        "parse_uint64" => S::ParseUint64,
        "parse_double" => S::ParseDouble,
        "regex_full_match" => S::RegexFullMatch,
        "regex_partial_match" => S::RegexPartialMatch,
        "regex_replace_first" => S::RegexReplaceFirst,
        "regex_replace_all" => S::RegexReplaceAll,
        "regex_extract" => S::RegexExtract,
        "regex_escape" => S::RegexEscape,
        "format_timestamp" => S::FormatTimestamp,
        "timestamp_floor_hour" => S::TimestampFloor(FloorUnit::Hour),
        "timestamp_floor_day" => S::TimestampFloor(FloorUnit::Day),
        "timestamp_floor_week" => S::TimestampFloor(FloorUnit::Week),
        "timestamp_floor_month" => S::TimestampFloor(FloorUnit::Month),
        "timestamp_floor_quarter" => S::TimestampFloor(FloorUnit::Quarter),
        "timestamp_floor_year" => S::TimestampFloor(FloorUnit::Year),
        "format_guid" => S::FormatGuid,
        "int64" => S::CastInt64,
        "uint64" => S::CastUint64,
        "double" => S::CastDouble,
        "boolean" => S::CastBoolean,
        "string" => S::CastString,
        "is_nan" => S::IsNan,
        "is_finite" => S::IsFinite,
        "is_inf" => S::IsInf,
        "greatest" => S::Greatest,
        "abs" => S::Abs,
        "acos" => S::Math(MathFn::Acos),
        "asin" => S::Math(MathFn::Asin),
        "cos" => S::Math(MathFn::Cos),
        "sin" => S::Math(MathFn::Sin),
        "tan" => S::Math(MathFn::Tan),
        "cot" => S::Math(MathFn::Cot),
        "atan" => S::Math(MathFn::Atan),
        "cbrt" => S::Math(MathFn::Cbrt),
        "exp" => S::Math(MathFn::Exp),
        "ln" => S::Math(MathFn::Ln),
        "log10" => S::Math(MathFn::Log10),
        "log2" => S::Math(MathFn::Log2),
        "sqrt" => S::Math(MathFn::Sqrt),
        "degrees" => S::Math(MathFn::Degrees),
        "radians" => S::Math(MathFn::Radians),
        "ceil" => S::Round(RoundFn::Ceil),
        "floor" => S::Round(RoundFn::Floor),
        "round" => S::Round(RoundFn::Round),
        "trunc" => S::Round(RoundFn::Trunc),
        "even" => S::Round(RoundFn::Even),
        "sign" => S::Round(RoundFn::Sign),
        "atan2" => S::Atan2,
        "pow" => S::Pow,
        "log" => S::Log,
        "signbit" => S::Signbit,
        "bit_count" => S::BitCount,
        "factorial" => S::Factorial,
        "gcd" => S::Gcd,
        "lcm" => S::Lcm,
        "xor" => S::Xor,
        "sleep" => S::Sleep,
        "is_valid_utf8" => S::IsValidUtf8,
        "to_valid_utf8" => S::ToValidUtf8,
        "to_any" => S::ToAny,
        "try_get_int64" => S::GetByPath(ValueType::Int64, false),
        "try_get_uint64" => S::GetByPath(ValueType::Uint64, false),
        "try_get_double" => S::GetByPath(ValueType::Double, false),
        "try_get_boolean" => S::GetByPath(ValueType::Boolean, false),
        "try_get_string" => S::GetByPath(ValueType::String, false),
        "try_get_any" => S::GetByPath(ValueType::Any, false),
        "get_int64" => S::GetByPath(ValueType::Int64, true),
        "get_uint64" => S::GetByPath(ValueType::Uint64, true),
        "get_double" => S::GetByPath(ValueType::Double, true),
        "get_boolean" => S::GetByPath(ValueType::Boolean, true),
        "get_string" => S::GetByPath(ValueType::String, true),
        "get_any" => S::GetByPath(ValueType::Any, true),
        "list_contains" => S::ListContains,
        "yson_length" => S::YsonLength,
        "any_to_yson_string" => S::AnyToYsonString,
        "yson_string_to_any" => S::YsonStringToAny,
        "make_list" => S::MakeList,
        "make_map" => S::MakeMap,
        "make_entity" => S::MakeEntity,
        _ => {
            let a = match lower.as_str() {
                "sum" => AggregateFunction::Sum,
                "min" => AggregateFunction::Min,
                "max" => AggregateFunction::Max,
                "avg" => AggregateFunction::Avg,
                "cardinality" => AggregateFunction::Cardinality,
                "argmin" => AggregateFunction::Argmin,
                "argmax" => AggregateFunction::Argmax,
                "first" => AggregateFunction::First,
                _ => return None,
            };
            return Some(Function::Aggregate(a));
        }
    };
    Some(Function::Scalar(f))
}

const COMPARABLE: TypeSet = TypeSet::SCALAR;

impl ScalarFunction {
    /// The YT v1 signature.
    pub fn signature(self) -> Signature {
        use Param::{Fixed, T};
        use ScalarFunction as S;
        let s = TypeSet::STRING;
        let b = TypeSet::BOOLEAN;
        let i = TypeSet::INT64;
        let u = TypeSet::UINT64;
        let d = TypeSet::DOUBLE;
        let num = TypeSet::NUMERIC;
        let castable = TypeSet::NUMERIC.union(TypeSet::ANY);
        match self {
            S::If => Signature::new(
                vec![Fixed(b), T(TypeSet::ALL), T(TypeSet::ALL)],
                T(TypeSet::ALL),
            ),
            S::IfNull => Signature::new(vec![T(TypeSet::ALL), T(TypeSet::ALL)], T(TypeSet::ALL)),
            S::Coalesce => Signature::variadic(vec![], T(TypeSet::ALL), T(TypeSet::ALL)),
            S::IsPrefix | S::IsSubstr => Signature::new(vec![Fixed(s), Fixed(s)], Fixed(b)),
            S::Lower | S::RegexEscape | S::ToValidUtf8 => Signature::new(vec![Fixed(s)], Fixed(s)),
            S::Length => Signature::new(vec![Fixed(s)], Fixed(i)),
            S::IsValidUtf8 => Signature::new(vec![Fixed(s)], Fixed(b)),
            S::Concat => Signature::new(vec![Fixed(s), Fixed(s)], Fixed(s)),
            S::FarmHash => {
                Signature::variadic(vec![], Fixed(TypeSet::INTEGER.union(b).union(s)), Fixed(u))
            }
            S::NumericToString => Signature::new(vec![Fixed(num)], Fixed(s)),
            S::ParseInt64 => Signature::new(vec![Fixed(s)], Fixed(i)),
            S::ParseUint64 => Signature::new(vec![Fixed(s)], Fixed(u)),
            S::ParseDouble => Signature::new(vec![Fixed(s)], Fixed(d)),
            S::RegexFullMatch | S::RegexPartialMatch => {
                Signature::new(vec![Fixed(s), Fixed(s)], Fixed(b))
            }
            S::RegexReplaceFirst | S::RegexReplaceAll | S::RegexExtract => {
                Signature::new(vec![Fixed(s), Fixed(s), Fixed(s)], Fixed(s))
            }
            S::FormatTimestamp => Signature::new(vec![Fixed(i), Fixed(s)], Fixed(s)),
            S::TimestampFloor(_) => Signature::new(vec![Fixed(i)], Fixed(i)),
            S::FormatGuid => Signature::new(vec![Fixed(u), Fixed(u)], Fixed(s)),
            S::CastInt64 => Signature::new(vec![Fixed(castable)], Fixed(i)),
            S::CastUint64 => Signature::new(vec![Fixed(castable)], Fixed(u)),
            S::CastDouble => Signature::new(vec![Fixed(castable)], Fixed(d)),
            S::CastBoolean => Signature::new(
                vec![Fixed(TypeSet::INTEGER.union(b).union(TypeSet::ANY))],
                Fixed(b),
            ),
            S::CastString => Signature::new(vec![Fixed(s.union(TypeSet::ANY))], Fixed(s)),
            S::IsNan | S::IsFinite | S::IsInf | S::Signbit => {
                Signature::new(vec![Fixed(d)], Fixed(b))
            }
            S::Greatest => Signature::variadic(vec![T(COMPARABLE)], T(COMPARABLE), T(COMPARABLE)),
            S::Abs => Signature::new(vec![T(num)], T(num)),
            S::Math(_) => Signature::new(vec![Fixed(d)], Fixed(d)),
            S::Round(_) => Signature::new(vec![Fixed(d)], Fixed(i)),
            S::Atan2 | S::Pow | S::Log => Signature::new(vec![Fixed(d), Fixed(d)], Fixed(d)),
            S::BitCount => Signature::new(vec![Fixed(u)], Fixed(i)),
            S::Factorial => Signature::new(vec![Fixed(u)], Fixed(u)),
            S::Gcd | S::Lcm | S::Xor => Signature::new(vec![Fixed(u), Fixed(u)], Fixed(u)),
            S::Sleep => Signature::new(vec![Fixed(i)], Fixed(i)),
            S::ToAny => Signature::new(vec![Fixed(TypeSet::ALL)], Fixed(TypeSet::ANY)),
            S::GetByPath(t, _) => {
                Signature::new(vec![Fixed(TypeSet::ANY), Fixed(s)], Fixed(TypeSet::of(t)))
            }
            S::ListContains => {
                Signature::new(vec![Fixed(TypeSet::ANY), Fixed(TypeSet::ALL)], Fixed(b))
            }
            S::YsonLength => Signature::new(vec![Fixed(TypeSet::ANY)], Fixed(i)),
            S::AnyToYsonString => Signature::new(vec![Fixed(TypeSet::ANY)], Fixed(s)),
            S::YsonStringToAny => Signature::new(vec![Fixed(s)], Fixed(TypeSet::ANY)),
            S::MakeList | S::MakeMap => {
                Signature::variadic(vec![], Fixed(TypeSet::ALL), Fixed(TypeSet::ANY))
            }
            S::MakeEntity => Signature::new(vec![], Fixed(TypeSet::ANY)),
        }
    }

    /// False for functions with side effects (never constant-folded).
    pub fn is_pure(self) -> bool {
        !matches!(self, ScalarFunction::Sleep)
    }

    /// Functions that see null arguments themselves; all others return null when any argument
    /// is null.
    pub fn handles_nulls(self) -> bool {
        use ScalarFunction as S;
        matches!(
            self,
            S::If
                | S::IfNull
                | S::Coalesce
                | S::FarmHash
                | S::Greatest
                | S::IsNan
                | S::ToAny
                | S::MakeList
                | S::MakeMap
                | S::MakeEntity
                | S::RegexFullMatch
                | S::RegexPartialMatch
        )
    }
}

impl AggregateFunction {
    /// The YT signature.
    pub fn signature(self) -> Signature {
        use Param::{Fixed, T};
        match self {
            AggregateFunction::Sum => {
                Signature::new(vec![T(TypeSet::NUMERIC)], T(TypeSet::NUMERIC))
            }
            AggregateFunction::Min | AggregateFunction::Max => {
                Signature::new(vec![T(COMPARABLE)], T(COMPARABLE))
            }
            AggregateFunction::Avg => {
                Signature::new(vec![Fixed(TypeSet::NUMERIC)], Fixed(TypeSet::DOUBLE))
            }
            AggregateFunction::Cardinality => {
                Signature::new(vec![Fixed(COMPARABLE)], Fixed(TypeSet::UINT64))
            }
            AggregateFunction::Argmin | AggregateFunction::Argmax => {
                Signature::new(vec![T(TypeSet::ALL), Fixed(COMPARABLE)], T(TypeSet::ALL))
            }
            AggregateFunction::First => Signature::new(vec![T(TypeSet::ALL)], T(TypeSet::ALL)),
        }
    }

    /// The function's name.
    pub fn name(self) -> &'static str {
        match self {
            AggregateFunction::Sum => "sum",
            AggregateFunction::Min => "min",
            AggregateFunction::Max => "max",
            AggregateFunction::Avg => "avg",
            AggregateFunction::Cardinality => "cardinality",
            AggregateFunction::Argmin => "argmin",
            AggregateFunction::Argmax => "argmax",
            AggregateFunction::First => "first",
        }
    }
}

fn runtime(msg: impl Into<String>) -> Error {
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

/// Compiles an RE2-style pattern (UTF-8 mode, as YT uses RE2).
pub fn compile_regex(pattern: &[u8]) -> Result<regex::bytes::Regex> {
    let text = std::str::from_utf8(pattern)
        .map_err(|_| runtime("Error parsing regular expression: pattern is not valid UTF-8"))?;
    regex::bytes::Regex::new(text)
        .map_err(|e| runtime(format!("Error parsing regular expression {text:?}: {e}")))
}

/// RE2::QuoteMeta: escapes every byte but `[A-Za-z0-9_]` and UTF-8 bytes >= 0x80; NUL -> `\x00`.
fn regex_escape(s: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(s.len() * 2);
    for &c in s {
        if c.is_ascii_alphanumeric() || c == b'_' || c >= 0x80 {
            out.push(c);
        } else if c == 0 {
            out.extend_from_slice(b"\\x00");
        } else {
            out.push(b'\\');
            out.push(c);
        }
    }
    out
}

fn format_double(v: f64) -> String {
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
fn parse_scalar(s: &[u8], target: ValueType) -> Result<Value> {
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

fn timestamp_floor(t: i64, unit: FloorUnit) -> Result<i64> {
    use chrono::{Datelike, NaiveDate, TimeZone, Utc};
    let dt = Utc
        .timestamp_opt(t, 0)
        .single()
        .ok_or_else(|| runtime(format!("Timestamp {t} is out of range")))?;
    let date = dt.date_naive();
    let start_of = |d: NaiveDate| d.and_hms_opt(0, 0, 0).map(|x| x.and_utc().timestamp());
    let floored = match unit {
        FloorUnit::Hour => Some(t.div_euclid(3600) * 3600),
        FloorUnit::Day => Some(t.div_euclid(86400) * 86400),
        FloorUnit::Week => {
            let days_from_monday = date.weekday().num_days_from_monday() as i64;
            Some(t.div_euclid(86400) * 86400 - days_from_monday * 86400)
        }
        FloorUnit::Month => {
            NaiveDate::from_ymd_opt(date.year(), date.month(), 1).and_then(start_of)
        }
        FloorUnit::Quarter => {
            NaiveDate::from_ymd_opt(date.year(), (date.month() - 1) / 3 * 3 + 1, 1)
                .and_then(start_of)
        }
        FloorUnit::Year => NaiveDate::from_ymd_opt(date.year(), 1, 1).and_then(start_of),
    };
    floored.ok_or_else(|| runtime(format!("Timestamp {t} is out of range")))
}

/// The longest `format_timestamp` format accepted.
pub const MAX_TIMESTAMP_FORMAT_LENGTH: usize = 30;

fn format_timestamp(t: i64, fmt: &[u8]) -> Result<Vec<u8>> {
    use chrono::format::{Item, StrftimeItems};
    use chrono::{TimeZone, Utc};
    // YT's bounds: years 1..=9999, and a short format.
    if t < -62_135_596_800 {
        return Err(runtime(format!(
            "Timestamp is smaller than minimal value: {t}"
        )));
    }
    if t > 253_402_300_799 {
        return Err(runtime(format!(
            "Timestamp is greater than maximal value: {t}"
        )));
    }
    if fmt.len() > MAX_TIMESTAMP_FORMAT_LENGTH {
        return Err(runtime(format!(
            "Format string is too long: {} bytes, at most {MAX_TIMESTAMP_FORMAT_LENGTH}",
            fmt.len()
        )));
    }
    let fmt =
        std::str::from_utf8(fmt).map_err(|_| runtime("Timestamp format is not valid UTF-8"))?;
    let items: Vec<Item> = StrftimeItems::new(fmt).collect();
    if items.iter().any(|i| matches!(i, Item::Error)) {
        return Err(runtime(format!("Invalid timestamp format {fmt:?}")));
    }
    let dt = Utc
        .timestamp_opt(t, 0)
        .single()
        .ok_or_else(|| runtime(format!("Timestamp {t} is out of range")))?;
    Ok(dt
        .format_with_items(items.into_iter())
        .to_string()
        .into_bytes())
}

fn cast_from_any(v: &Value, target: ValueType) -> Result<Value> {
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

fn double_to_int(x: f64, target: ValueType) -> Result<Value> {
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
        S::Math(m) => {
            let x = double_arg(a(0));
            Value::Double(match m {
                MathFn::Acos => x.acos(),
                MathFn::Asin => x.asin(),
                MathFn::Cos => x.cos(),
                MathFn::Sin => x.sin(),
                MathFn::Tan => x.tan(),
                MathFn::Cot => 1.0 / x.tan(),
                MathFn::Atan => x.atan(),
                MathFn::Cbrt => x.cbrt(),
                MathFn::Exp => x.exp(),
                MathFn::Ln => x.ln(),
                MathFn::Log10 => x.log10(),
                MathFn::Log2 => x.log2(),
                MathFn::Sqrt => x.sqrt(),
                MathFn::Degrees => x.to_degrees(),
                MathFn::Radians => x.to_radians(),
            })
        }
        S::Round(r) => {
            let x = double_arg(a(0));
            let y = match r {
                RoundFn::Ceil => x.ceil(),
                RoundFn::Floor => x.floor(),
                RoundFn::Round => x.round(),
                RoundFn::Trunc => x.trunc(),
                RoundFn::Even => x.round_ties_even(),
                RoundFn::Sign => {
                    if x > 0.0 {
                        1.0
                    } else if x < 0.0 {
                        -1.0
                    } else {
                        0.0
                    }
                }
            };
            double_to_int(y, ValueType::Int64)?
        }
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
        S::ToAny => match a(0) {
            Value::Any(y) => Value::Any(y.clone()),
            other => {
                // A string's YSON text is at least the string and its two quotes.
                value_limits::check_string_length(value_limits::value_bytes(other).saturating_add(2))?;
                let text = dynql_core::yson::to_text(&other.to_yson()).into_bytes();
                value_limits::check_string_length(text.len())?;
                Value::Any(text)
            }
        },
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

fn gcd(mut a: u64, mut b: u64) -> u64 {
    while b != 0 {
        let t = a % b;
        a = b;
        b = t;
    }
    a
}

#[cfg(test)]
mod tests {
    use super::*;

    fn s(x: &str) -> Value {
        Value::string(x)
    }

    #[test]
    fn names_are_the_names_lookup_knows() {
        for name in NAMES {
            assert!(lookup(name).is_some(), "{name} is listed but not found");
        }
        // The other direction: every name the match in `lookup` spells is listed.
        let source = include_str!("functions.rs");
        let start = source.find("pub fn lookup(").expect("lookup in the source");
        let end = start + source[start..].find("\n}\n").expect("end of lookup");
        let matched: Vec<&str> = source[start..end]
            .lines()
            .filter_map(|l| {
                l.trim()
                    .strip_prefix('"')?
                    .split_once("\" =>")
                    .map(|(n, _)| n)
            })
            .collect();
        assert_eq!(matched.len(), NAMES.len());
        for name in matched {
            assert!(NAMES.contains(&name), "{name} is missing from NAMES");
        }
    }

    #[test]
    fn timestamps_floor_in_utc_with_monday_weeks() {
        let t = 1446325284;
        let f = |u| timestamp_floor(t, u).unwrap();
        assert_eq!(f(FloorUnit::Hour), 1446325200);
        assert_eq!(f(FloorUnit::Day), 1446249600);
        assert_eq!(f(FloorUnit::Week), 1445817600);
        assert_eq!(f(FloorUnit::Month), 1443657600);
        assert_eq!(f(FloorUnit::Year), 1420070400);
        assert_eq!(
            format_timestamp(t, b"%Y-%m-%dT%H:%M:%S").unwrap(),
            b"2015-10-31T21:01:24".to_vec()
        );
        assert!(format_timestamp(t, b"%Q").is_err());
    }

    #[test]
    fn regex_functions_use_re2_rewrites() {
        let r = call_scalar(
            ScalarFunction::RegexReplaceAll,
            &[s("([0-9]+)"), s("a12b3"), s("<\\1>")],
            ValueType::String,
        )
        .unwrap();
        assert_eq!(r, s("a<12>b<3>"));
        assert_eq!(regex_escape(b"a.b*c"), b"a\\.b\\*c".to_vec());
        let r = call_scalar(
            ScalarFunction::RegexExtract,
            &[s("([a-z]+)([0-9]+)"), s("..abc123"), s("\\2-\\1")],
            ValueType::String,
        )
        .unwrap();
        assert_eq!(r, s("123-abc"));
    }

    #[test]
    fn regex_predicates_are_false_on_null_and_rewrites_stay_null() {
        use ScalarFunction as S;
        let b = ValueType::Boolean;
        for f in [S::RegexFullMatch, S::RegexPartialMatch] {
            for args in [[s("a.*"), Value::Null], [Value::Null, s("abc")]] {
                assert_eq!(call_scalar(f, &args, b).unwrap(), Value::Boolean(false));
            }
            assert_eq!(
                call_scalar(f, &[s("a.*"), s("abc")], b).unwrap(),
                Value::Boolean(true)
            );
        }
        for f in [S::RegexReplaceFirst, S::RegexReplaceAll, S::RegexExtract] {
            let args = [s("a"), Value::Null, s("b")];
            assert_eq!(
                call_scalar(f, &args, ValueType::String).unwrap(),
                Value::Null
            );
        }
        let escaped = call_scalar(S::RegexEscape, &[Value::Null], ValueType::String);
        assert_eq!(escaped.unwrap(), Value::Null);
    }

    #[test]
    fn nulls_propagate_except_where_handled() {
        assert_eq!(
            call_scalar(ScalarFunction::Lower, &[Value::Null], ValueType::String).unwrap(),
            Value::Null
        );
        assert_eq!(
            call_scalar(ScalarFunction::FarmHash, &[Value::Null], ValueType::Uint64).unwrap(),
            Value::Uint64(3315701238936582721)
        );
        assert!(call_scalar(
            ScalarFunction::Greatest,
            &[Value::Int64(1), Value::Null],
            ValueType::Int64
        )
        .is_err());
        assert!(
            call_scalar(ScalarFunction::ParseInt64, &[s("x1")], ValueType::Int64)
                .unwrap_err()
                .to_string()
                .contains("Cannot convert value")
        );
    }
}
