//! Builtin functions: the registry (name -> function, case-insensitive), their YT v1
//! signatures, and the evaluation of scalar functions.
//!
//! Signatures use one type variable `T` per function: parameters marked [`Param::T`] share it
//! (constrained by their domain), [`Param::Fixed`] parameters take any type of their set.

use dynql_core::ValueType;

use crate::types::TypeSet;

mod call;
mod casts;
mod patterns;
mod signatures;
#[cfg(test)]
mod tests;
mod time;

pub use call::call_scalar;
pub use patterns::{compile_regex, regex_escape};
pub use time::{TimestampFormat, MAX_TIMESTAMP_FORMAT_LENGTH};

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

impl MathFn {
    /// The function of `x` (YT's, which is the C library's).
    #[inline]
    pub fn apply(self, x: f64) -> f64 {
        match self {
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
        }
    }
}

impl RoundFn {
    /// `x` rounded to an integral double (the int64 range is checked by the caller).
    #[inline]
    pub fn apply(self, x: f64) -> f64 {
        match self {
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
        }
    }
}

/// The greatest common divisor (`gcd(0, 0)` is 0), as YT's `gcd`.
pub fn gcd(mut a: u64, mut b: u64) -> u64 {
    while b != 0 {
        (a, b) = (b, a % b);
    }
    a
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
