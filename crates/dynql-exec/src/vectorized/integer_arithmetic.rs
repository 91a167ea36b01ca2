//! Integer arithmetic over arrays with YT's semantics: `+`, `-`, `*` and the shifts wrap;
//! `/` and `%` truncate and fail, as YT does, on the first row with values that divides by
//! zero (or `INT_MIN` by -1, for int64).
//!
//! A literal right side (`id % 7`, `ts / 1000`) stays one value: its checks are made once
//! for the batch, not per row, and the operation runs over the left array alone, with no
//! branch per row. Division by a literal in `2..2^32` of a batch whose values all fit in 32
//! bits (an OR over the values tells) multiplies by a precomputed reciprocal
//! ([`SmallDivisor`]) instead of a hardware division per row, which costs ten times more.

use std::sync::Arc;

use arrow::array::{new_null_array, Array, ArrayRef, AsArray, PrimitiveArray};
use arrow::datatypes::ArrowPrimitiveType;

use dynql_ql::ast::BinaryOp;
use dynql_ql::Result;

use super::evaluate::{arrow_error, runtime};

/// The integer operations the kernels need, for `i64` and `u64`.
pub(super) trait Integer:
    Copy + PartialEq + std::ops::BitAnd<Output = Self> + std::ops::BitOr<Output = Self>
{
    const ZERO: Self;
    /// -1, for signed types; unsigned types use their maximum, which no check compares
    /// with `INT_MIN` (they have none).
    const MINUS_ONE: Self;
    fn wrapping_add(self, o: Self) -> Self;
    fn wrapping_sub(self, o: Self) -> Self;
    fn wrapping_mul(self, o: Self) -> Self;
    /// Division that never fails but on a zero divisor (`INT_MIN / -1` wraps).
    fn wrapping_div(self, o: Self) -> Self;
    fn wrapping_rem(self, o: Self) -> Self;
    fn checked_div(self, o: Self) -> Option<Self>;
    fn checked_rem(self, o: Self) -> Option<Self>;
    fn wrapping_shl(self, n: u32) -> Self;
    fn wrapping_shr(self, n: u32) -> Self;
    /// The value's 64 bits (a negative int64 is above every 32-bit value).
    fn to_bits(self) -> u64;
    fn from_bits(bits: u64) -> Self;
}

macro_rules! integer {
    ($t:ty, $minus_one:expr) => {
        impl Integer for $t {
            const ZERO: Self = 0;
            const MINUS_ONE: Self = $minus_one;
            fn wrapping_add(self, o: Self) -> Self {
                <$t>::wrapping_add(self, o)
            }
            fn wrapping_sub(self, o: Self) -> Self {
                <$t>::wrapping_sub(self, o)
            }
            fn wrapping_mul(self, o: Self) -> Self {
                <$t>::wrapping_mul(self, o)
            }
            fn wrapping_div(self, o: Self) -> Self {
                <$t>::wrapping_div(self, o)
            }
            fn wrapping_rem(self, o: Self) -> Self {
                <$t>::wrapping_rem(self, o)
            }
            fn checked_div(self, o: Self) -> Option<Self> {
                <$t>::checked_div(self, o)
            }
            fn checked_rem(self, o: Self) -> Option<Self> {
                <$t>::checked_rem(self, o)
            }
            fn wrapping_shl(self, n: u32) -> Self {
                <$t>::wrapping_shl(self, n)
            }
            fn wrapping_shr(self, n: u32) -> Self {
                <$t>::wrapping_shr(self, n)
            }
            fn to_bits(self) -> u64 {
                self as u64
            }
            fn from_bits(bits: u64) -> Self {
                bits as $t
            }
        }
    };
}
integer!(i64, -1);
integer!(u64, u64::MAX);

/// `op` of two integer arrays, row by row. `min`: the type's `INT_MIN` (signed types);
/// `shift`: a shift count as the shifts take it.
pub(super) fn integer_op<T>(
    op: BinaryOp,
    a: &ArrayRef,
    b: &ArrayRef,
    min: Option<T::Native>,
    shift: fn(T::Native) -> u32,
) -> Result<ArrayRef>
where
    T: ArrowPrimitiveType,
    T::Native: Integer,
{
    use BinaryOp::*;
    let (x, y) = (a.as_primitive::<T>(), b.as_primitive::<T>());
    if matches!(op, Divide | Modulo) {
        // Only a zero or -1 divisor in any slot (null slots hold arbitrary numbers) calls for
        // the row-by-row check, which finds the first failing row as YT does.
        let signed = min.is_some();
        let suspect = y.values().iter().fold(false, |seen, &q| {
            seen | (q == T::Native::ZERO) | (signed & (q == T::Native::MINUS_ONE))
        });
        if suspect {
            check_divisions(x, y, min)?;
        }
    }
    let binary = |f: fn(T::Native, T::Native) -> T::Native| {
        arrow::compute::binary::<T, T, _, T>(x, y, f).map_err(arrow_error)
    };
    let out: PrimitiveArray<T> = match op {
        Plus => binary(|p, q| p.wrapping_add(q))?,
        Minus => binary(|p, q| p.wrapping_sub(q))?,
        Multiply => binary(|p, q| p.wrapping_mul(q))?,
        // Checked above for the rows with values; null rows hold arbitrary numbers.
        Divide => binary(|p, q| p.checked_div(q).unwrap_or(T::Native::ZERO))?,
        Modulo => binary(|p, q| p.checked_rem(q).unwrap_or(T::Native::ZERO))?,
        BitAnd => binary(|p, q| p & q)?,
        BitOr => binary(|p, q| p | q)?,
        LeftShift => {
            arrow::compute::binary(x, y, |p, q| p.wrapping_shl(shift(q))).map_err(arrow_error)?
        }
        _ => arrow::compute::binary(x, y, |p, q| p.wrapping_shr(shift(q))).map_err(arrow_error)?,
    };
    Ok(Arc::new(out))
}

/// YT's division errors, row by row: the first row with values that divides by zero, or
/// `INT_MIN` by -1.
fn check_divisions<T>(
    x: &PrimitiveArray<T>,
    y: &PrimitiveArray<T>,
    min: Option<T::Native>,
) -> Result<()>
where
    T: ArrowPrimitiveType,
    T::Native: Integer,
{
    for i in 0..x.len() {
        if x.is_null(i) || y.is_null(i) {
            continue;
        }
        let (p, q) = (x.value(i), y.value(i));
        if q == T::Native::ZERO {
            return Err(runtime("Division by zero"));
        }
        if Some(p) == min && q == T::Native::MINUS_ONE {
            return Err(runtime("Division of INT_MIN by -1"));
        }
    }
    Ok(())
}

/// `op` of an integer array and a non-null literal `q` (see the module docs).
pub(super) fn integer_op_by_literal<T>(
    op: BinaryOp,
    a: &ArrayRef,
    q: T::Native,
    min: Option<T::Native>,
    shift: fn(T::Native) -> u32,
) -> Result<ArrayRef>
where
    T: ArrowPrimitiveType,
    T::Native: Integer,
{
    use BinaryOp::*;
    let x = a.as_primitive::<T>();
    if matches!(op, Divide | Modulo) {
        let with_values = x.null_count() < x.len();
        if q == T::Native::ZERO {
            if with_values {
                return Err(runtime("Division by zero"));
            }
            return Ok(new_null_array(x.data_type(), x.len()));
        }
        if let Some(min) = min.filter(|_| q == T::Native::MINUS_ONE) {
            let valid_min = match x.nulls() {
                None => x.values().iter().any(|&p| p == min),
                Some(nulls) => nulls.valid_indices().any(|i| x.value(i) == min),
            };
            if valid_min {
                return Err(runtime("Division of INT_MIN by -1"));
            }
        }
        if let Some(divisor) = SmallDivisor::of(q.to_bits()) {
            let small = x.values().iter().fold(0u64, |bits, &p| bits | p.to_bits()) >> 32 == 0;
            if small {
                let out: PrimitiveArray<T> = if op == Divide {
                    x.unary(|p| T::Native::from_bits(divisor.quotient(p.to_bits() as u32)))
                } else {
                    x.unary(|p| T::Native::from_bits(divisor.remainder(p.to_bits() as u32)))
                };
                return Ok(Arc::new(out));
            }
        }
    }
    let out: PrimitiveArray<T> = match op {
        Plus => x.unary(|p| p.wrapping_add(q)),
        Minus => x.unary(|p| p.wrapping_sub(q)),
        Multiply => x.unary(|p| p.wrapping_mul(q)),
        // `q` is not zero here; `INT_MIN / -1` of a null slot wraps.
        Divide => x.unary(|p| p.wrapping_div(q)),
        Modulo => x.unary(|p| p.wrapping_rem(q)),
        BitAnd => x.unary(|p| p & q),
        BitOr => x.unary(|p| p | q),
        LeftShift => {
            let n = shift(q);
            x.unary(|p| p.wrapping_shl(n))
        }
        _ => {
            let n = shift(q);
            x.unary(|p| p.wrapping_shr(n))
        }
    };
    Ok(Arc::new(out))
}

/// A divisor `d` in `2..2^32` with its reciprocal `ceil(2^64 / d)`: the quotient and the
/// remainder of any 32-bit value by `d` are then two multiplications, exactly (Lemire,
/// Kaser and Kurz, "Faster remainder by direct computation", 2019).
#[derive(Clone, Copy, Debug)]
struct SmallDivisor {
    d: u64,
    reciprocal: u64,
}

impl SmallDivisor {
    fn of(d: u64) -> Option<Self> {
        (2..=u64::from(u32::MAX)).contains(&d).then(|| Self {
            d,
            reciprocal: u64::MAX / d + 1,
        })
    }

    #[inline]
    fn quotient(self, n: u32) -> u64 {
        ((u128::from(self.reciprocal) * u128::from(n)) >> 64) as u64
    }

    #[inline]
    fn remainder(self, n: u32) -> u64 {
        let fraction = self.reciprocal.wrapping_mul(u64::from(n));
        ((u128::from(fraction) * u128::from(self.d)) >> 64) as u64
    }
}

#[cfg(test)]
mod tests {
    use super::super::kernel_tests::{agree, column};
    use super::*;
    use dynql_core::{Value, ValueType};
    use dynql_ql::eval::EvalOptions;
    use dynql_ql::texpr::{TExpr, TypedExpr};
    use proptest::prelude::*;

    #[test]
    fn a_small_divisor_divides_every_edge_value_exactly() {
        let divisors = [
            2u64,
            3,
            7,
            10,
            641,
            1 << 16,
            (1 << 16) + 1,
            (1 << 31) - 1,
            1 << 31,
            (1 << 31) + 1,
            u64::from(u32::MAX) - 1,
            u64::from(u32::MAX),
        ];
        for d in divisors {
            let divisor = SmallDivisor::of(d).unwrap();
            let edges = [0, 1, d - 1, d, d + 1, 2 * d - 1, 2 * d];
            let values = edges
                .into_iter()
                .chain([u64::from(u32::MAX), u64::from(u32::MAX) - 1, 1 << 31])
                .chain((0..2000u64).map(|i| i.wrapping_mul(2_654_435_761) % (1 << 32)))
                .filter(|&n| n <= u64::from(u32::MAX));
            for n in values {
                assert_eq!(divisor.quotient(n as u32), n / d, "{n} / {d}");
                assert_eq!(divisor.remainder(n as u32), n % d, "{n} % {d}");
            }
        }
        assert!(SmallDivisor::of(0).is_none());
        assert!(SmallDivisor::of(1).is_none());
        assert!(SmallDivisor::of(1 << 32).is_none());
    }

    fn by_literal(op: BinaryOp, ty: ValueType, q: Value) -> TypedExpr {
        let literal = TypedExpr::literal(q, ty);
        TypedExpr::new(
            TExpr::Binary(op, Box::new(column(0, ty)), Box::new(literal)),
            ty,
        )
    }

    const OPS: [BinaryOp; 9] = [
        BinaryOp::Plus,
        BinaryOp::Minus,
        BinaryOp::Multiply,
        BinaryOp::Divide,
        BinaryOp::Modulo,
        BinaryOp::BitAnd,
        BinaryOp::BitOr,
        BinaryOp::LeftShift,
        BinaryOp::RightShift,
    ];

    fn int64s() -> impl Strategy<Value = Value> {
        prop_oneof![
            1 => Just(Value::Null),
            1 => Just(Value::Int64(i64::MIN)),
            1 => Just(Value::Int64(i64::MAX)),
            1 => Just(Value::Int64(i64::from(u32::MAX))),
            1 => Just(Value::Int64(1 << 32)),
            1 => (-100i64..100).prop_map(Value::Int64),
            6 => (0..i64::from(u32::MAX)).prop_map(Value::Int64),
            1 => any::<i64>().prop_map(Value::Int64),
        ]
    }

    fn int64_divisors() -> impl Strategy<Value = i64> {
        prop_oneof![
            Just(0),
            Just(-1),
            Just(1),
            Just(2),
            Just(7),
            Just(-7),
            Just(i64::MIN),
            Just(i64::MAX),
            Just(i64::from(u32::MAX)),
            Just(1 << 32),
            0..70i64,
            any::<i64>(),
        ]
    }

    fn uint64s() -> impl Strategy<Value = Value> {
        prop_oneof![
            1 => Just(Value::Null),
            1 => Just(Value::Uint64(u64::MAX)),
            1 => Just(Value::Uint64(u64::from(u32::MAX))),
            1 => Just(Value::Uint64(1 << 32)),
            6 => (0..u64::from(u32::MAX)).prop_map(Value::Uint64),
            1 => any::<u64>().prop_map(Value::Uint64),
        ]
    }

    fn uint64_divisors() -> impl Strategy<Value = u64> {
        prop_oneof![
            Just(0),
            Just(1),
            Just(2),
            Just(7),
            Just(u64::MAX),
            Just(u64::from(u32::MAX)),
            Just(1 << 32),
            0..70u64,
            any::<u64>(),
        ]
    }

    proptest! {
        /// Every operation by an int64 literal agrees with the row evaluator, errors
        /// included, whether the batch's values fit in 32 bits (the reciprocal) or not.
        #[test]
        fn int64_by_a_literal_agrees_with_the_row_evaluator(
            values in proptest::collection::vec(int64s(), 0..80),
            q in int64_divisors(),
            nulls_only in any::<bool>(),
        ) {
            let i = ValueType::Int64;
            let rows: Vec<Vec<Value>> = values
                .into_iter()
                .map(|v| vec![if nulls_only { Value::Null } else { v }])
                .collect();
            for op in OPS {
                agree(&by_literal(op, i, Value::Int64(q)), &[i], &rows, EvalOptions::default());
            }
        }

        #[test]
        fn uint64_by_a_literal_agrees_with_the_row_evaluator(
            values in proptest::collection::vec(uint64s(), 0..80),
            q in uint64_divisors(),
        ) {
            let u = ValueType::Uint64;
            let rows: Vec<Vec<Value>> = values.into_iter().map(|v| vec![v]).collect();
            for op in OPS {
                agree(&by_literal(op, u, Value::Uint64(q)), &[u], &rows, EvalOptions::default());
            }
        }

        /// Two columns: the divisor check runs row by row only where a slot holds 0 or -1,
        /// and still finds YT's first failing row.
        #[test]
        fn int64_columns_agree_with_the_row_evaluator(
            rows in proptest::collection::vec(
                (int64s(), prop_oneof![Just(Value::Null), int64_divisors().prop_map(Value::Int64)]),
                0..40,
            ),
        ) {
            let i = ValueType::Int64;
            let rows: Vec<Vec<Value>> = rows.into_iter().map(|(a, b)| vec![a, b]).collect();
            for op in OPS {
                let e = TypedExpr::new(
                    TExpr::Binary(op, Box::new(column(0, i)), Box::new(column(1, i))),
                    i,
                );
                agree(&e, &[i, i], &rows, EvalOptions::default());
            }
        }
    }
}
