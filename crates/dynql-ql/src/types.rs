//! YT v1 type inference: every sub-expression has a *set* of feasible types; literals are
//! polymorphic (`1` fits int64, uint64 and double), columns have exactly one type, operators
//! intersect their operands' sets with their own domain, and the first remaining type in the
//! order int64, uint64, double, boolean, string, any is chosen (reference §4.2).

use dynql_core::ValueType;

use crate::error::{Error, Result};

const ORDER: [ValueType; 6] = [
    ValueType::Int64,
    ValueType::Uint64,
    ValueType::Double,
    ValueType::Boolean,
    ValueType::String,
    ValueType::Any,
];

fn bit(t: ValueType) -> u8 {
    match t {
        ValueType::Int64 => 1,
        ValueType::Uint64 => 2,
        ValueType::Double => 4,
        ValueType::Boolean => 8,
        ValueType::String => 16,
        ValueType::Any => 32,
        ValueType::Null => 0,
    }
}

/// A set of feasible types.
///
/// `weak` marks a set that only null literals constrain: such a set must narrow to one type
/// before a type is chosen, otherwise type inference fails (`is_null(null)`, a bare `null`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TypeSet {
    bits: u8,
    weak: bool,
}

impl TypeSet {
    pub const EMPTY: TypeSet = TypeSet {
        bits: 0,
        weak: false,
    };
    pub const INT64: TypeSet = TypeSet {
        bits: 1,
        weak: false,
    };
    pub const UINT64: TypeSet = TypeSet {
        bits: 2,
        weak: false,
    };
    pub const DOUBLE: TypeSet = TypeSet {
        bits: 4,
        weak: false,
    };
    pub const BOOLEAN: TypeSet = TypeSet {
        bits: 8,
        weak: false,
    };
    pub const STRING: TypeSet = TypeSet {
        bits: 16,
        weak: false,
    };
    pub const ANY: TypeSet = TypeSet {
        bits: 32,
        weak: false,
    };
    /// int64, uint64, double.
    pub const NUMERIC: TypeSet = TypeSet {
        bits: 7,
        weak: false,
    };
    /// int64, uint64.
    pub const INTEGER: TypeSet = TypeSet {
        bits: 3,
        weak: false,
    };
    /// Every scalar type (no `any`).
    pub const SCALAR: TypeSet = TypeSet {
        bits: 31,
        weak: false,
    };
    /// Every type.
    pub const ALL: TypeSet = TypeSet {
        bits: 63,
        weak: false,
    };
    /// The type set of the `null` literal.
    pub const NULL: TypeSet = TypeSet {
        bits: 63,
        weak: true,
    };

    /// The set holding exactly `t`.
    pub fn of(t: ValueType) -> TypeSet {
        TypeSet {
            bits: bit(t),
            weak: false,
        }
    }

    /// Union of two strong sets.
    pub fn union(self, other: TypeSet) -> TypeSet {
        TypeSet {
            bits: self.bits | other.bits,
            weak: self.weak && other.weak,
        }
    }

    /// Types feasible for both.
    pub fn intersect(self, other: TypeSet) -> TypeSet {
        TypeSet {
            bits: self.bits & other.bits,
            weak: self.weak && other.weak,
        }
    }

    /// Narrows to the types of `domain` (an operator's or parameter's own domain), keeping
    /// weakness: a domain is not a constraint coming from a value.
    pub fn restrict(self, domain: TypeSet) -> TypeSet {
        TypeSet {
            bits: self.bits & domain.bits,
            weak: self.weak,
        }
    }

    pub fn is_empty(self) -> bool {
        self.bits == 0
    }

    pub fn is_weak(self) -> bool {
        self.weak
    }

    pub fn contains(self, t: ValueType) -> bool {
        self.bits & bit(t) != 0
    }

    /// The first type of the set in YT's preference order.
    pub fn first(self) -> Option<ValueType> {
        ORDER.into_iter().find(|t| self.contains(t.to_owned()))
    }

    /// Chooses the type of an expression whose type nothing else constrains.
    ///
    /// # Errors
    /// `Type inference failed` for a set that only null literals constrain and that holds
    /// more than one type; a type mismatch for an empty set.
    pub fn pick(self, what: &str) -> Result<ValueType> {
        if self.weak && self.bits.count_ones() > 1 {
            return Err(Error::invalid_query(format!(
                "Type inference failed for {what}: the type of null cannot be inferred"
            )));
        }
        self.first()
            .ok_or_else(|| Error::invalid_query(format!("Type mismatch in expression {what}")))
    }

    /// Human-readable list, e.g. `int64 | uint64`.
    pub fn describe(self) -> String {
        let names: Vec<_> = ORDER
            .iter()
            .filter(|t| self.contains(**t))
            .map(|t| t.name())
            .collect();
        if names.is_empty() {
            "nothing".into()
        } else {
            names.join(" | ")
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn literals_adapt_and_null_must_narrow() {
        let int_lit = TypeSet::NUMERIC;
        assert_eq!(
            int_lit.intersect(TypeSet::UINT64).first(),
            Some(ValueType::Uint64)
        );
        assert!(TypeSet::NULL.pick("null").is_err());
        assert_eq!(
            TypeSet::NULL.intersect(TypeSet::STRING).pick("x").unwrap(),
            ValueType::String
        );
        assert!(!TypeSet::NULL.intersect(TypeSet::INT64).is_weak());
        assert!(TypeSet::NULL.intersect(TypeSet::NULL).is_weak());
        assert_eq!(
            TypeSet::NULL.intersect(int_lit).pick("x").unwrap(),
            ValueType::Int64
        );
        assert!(TypeSet::INT64.intersect(TypeSet::UINT64).is_empty());
    }
}
