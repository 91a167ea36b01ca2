//! The YT signatures and names of the builtin functions.

use super::{AggregateFunction, Param, ScalarFunction, Signature};
use crate::types::TypeSet;

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
