//! Numeric functions over arrays (issue 41): the casts between `int64`, `uint64`, `double`
//! and `boolean`, `abs`, `is_nan`, `is_finite` and `is_inf`, with the row evaluator's
//! semantics: integer casts reinterpret the 64 bits (`uint64(-1)` is 2^64-1), a double out of
//! the target's range is an error (YT 25.2 and later), `abs` wraps (`abs(i64::MIN)` stays
//! itself), `is_nan(null)` is false while the others give null for null.
//!
//! Where a value fails, the row evaluator is asked for that value, so the error is its own,
//! word for word.

use std::sync::Arc;

use arrow::array::{Array, ArrayRef, AsArray, BooleanArray, PrimitiveArray};
use arrow::buffer::BooleanBuffer;
use arrow::datatypes::{ArrowPrimitiveType, Float64Type, Int64Type, UInt64Type};

use dynql_core::{Value, ValueType};
use dynql_ql::eval::EvalOptions;
use dynql_ql::functions::{call_scalar, ScalarFunction};
use dynql_ql::texpr::TypedExpr;
use dynql_ql::Result;

use super::evaluate::{evaluate, Batch};

/// Whether `f(args)` runs here: the functions above over one numeric argument (or a boolean
/// one, for the cast to `boolean`).
pub(super) fn applies(f: ScalarFunction, args: &[TypedExpr]) -> bool {
    use ScalarFunction as S;
    use ValueType::{Boolean, Double, Int64, Uint64};
    let [a] = args else {
        return false;
    };
    match f {
        S::CastInt64 | S::CastUint64 | S::CastDouble | S::Abs | S::IsNan => {
            matches!(a.ty, Int64 | Uint64 | Double)
        }
        S::CastBoolean => matches!(a.ty, Int64 | Uint64 | Boolean),
        S::IsFinite | S::IsInf => a.ty == Double,
        _ => false,
    }
}

/// `f(arg)` over every row of `input` (see [`applies`]).
pub(super) fn numeric_call(
    f: ScalarFunction,
    e: &TypedExpr,
    arg: &TypedExpr,
    input: Batch<'_>,
    opts: EvalOptions,
) -> Result<ArrayRef> {
    use ScalarFunction as S;
    use ValueType::{Boolean, Double, Int64, Uint64};
    let a = evaluate(arg, input, opts)?;
    // The row evaluator's answer (its error, where there is one) for the value of row `i`.
    let by_row = |i: usize| -> Result<Value> {
        let v = dynql_core::arrow_convert::array_value(a.as_ref(), arg.ty, i);
        call_scalar(f, &[v], e.ty)
    };
    Ok(match (f, arg.ty) {
        (S::CastInt64, Int64) | (S::CastUint64, Uint64) | (S::CastDouble, Double) => a,
        (S::CastInt64, Uint64) => map::<UInt64Type, Int64Type>(&a, |x| x as i64),
        (S::CastUint64, Int64) => map::<Int64Type, UInt64Type>(&a, |x| x as u64),
        (S::CastDouble, Int64) => map::<Int64Type, Float64Type>(&a, |x| x as f64),
        (S::CastDouble, Uint64) => map::<UInt64Type, Float64Type>(&a, |x| x as f64),
        (S::CastInt64, Double) => {
            let d = a.as_primitive::<Float64Type>();
            if let Some(i) = failing(d, |x| {
                (-9.223372036854776e18..9.223372036854776e18).contains(&x)
            }) {
                by_row(i)?;
            }
            map::<Float64Type, Int64Type>(&a, |x| x as i64)
        }
        (S::CastUint64, Double) => {
            let d = a.as_primitive::<Float64Type>();
            if let Some(i) = failing(d, |x| {
                !(x.is_nan() || x <= -1.0 || x >= 1.8446744073709552e19)
            }) {
                by_row(i)?;
            }
            map::<Float64Type, UInt64Type>(&a, |x| x as u64)
        }
        (S::CastBoolean, Boolean) => a,
        (S::CastBoolean, Int64) => predicate::<Int64Type>(&a, |x| x != 0),
        (S::CastBoolean, Uint64) => predicate::<UInt64Type>(&a, |x| x != 0),
        (S::Abs, Int64) => map::<Int64Type, Int64Type>(&a, i64::wrapping_abs),
        (S::Abs, Double) => map::<Float64Type, Float64Type>(&a, f64::abs),
        (S::Abs, Uint64) => a,
        (S::IsNan, Double) => {
            let d = a.as_primitive::<Float64Type>();
            // Null is not NaN: false, not null.
            let values =
                BooleanBuffer::collect_bool(d.len(), |i| d.is_valid(i) && d.value(i).is_nan());
            Arc::new(BooleanArray::new(values, None))
        }
        (S::IsNan, _) => Arc::new(BooleanArray::new(BooleanBuffer::new_unset(a.len()), None)),
        (S::IsFinite, Double) => predicate::<Float64Type>(&a, f64::is_finite),
        (S::IsInf, Double) => predicate::<Float64Type>(&a, f64::is_infinite),
        _ => unreachable!("numeric_call of {f:?}: `applies` admits these forms only"),
    })
}

/// The first valid row whose value is not `ok`.
fn failing(a: &PrimitiveArray<Float64Type>, ok: impl Fn(f64) -> bool) -> Option<usize> {
    (0..a.len()).find(|&i| a.is_valid(i) && !ok(a.value(i)))
}

/// `f` of each value (null where the value is null).
fn map<I: ArrowPrimitiveType, O: ArrowPrimitiveType>(
    a: &ArrayRef,
    f: impl Fn(I::Native) -> O::Native,
) -> ArrayRef {
    Arc::new(a.as_primitive::<I>().unary::<_, O>(f))
}

/// The boolean `f` of each value (null where the value is null).
fn predicate<T: ArrowPrimitiveType>(a: &ArrayRef, f: impl Fn(T::Native) -> bool) -> ArrayRef {
    let p = a.as_primitive::<T>();
    let values = BooleanBuffer::collect_bool(p.len(), |i| f(p.value(i)));
    Arc::new(BooleanArray::new(values, p.logical_nulls()))
}

#[cfg(test)]
mod tests {
    use super::super::kernel_tests::{agree, column, edge_doubles as doubles};
    use super::*;
    use dynql_ql::texpr::TExpr;
    use proptest::prelude::*;

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(96))]
        /// Invariant: each kernel gives what the row evaluator gives, row by row, errors
        /// (a double out of range) included.
        #[test]
        fn every_numeric_kernel_agrees_with_the_row_evaluator(
            rows in proptest::collection::vec(
                (
                    proptest::option::of(prop_oneof![Just(i64::MIN), Just(-1i64), any::<i64>()]),
                    proptest::option::of(prop_oneof![Just(u64::MAX), Just(0u64), any::<u64>()]),
                    proptest::option::of(doubles()),
                    proptest::option::of(any::<bool>()),
                ),
                0..30,
            ),
        ) {
            let rows: Vec<Vec<Value>> = rows
                .into_iter()
                .map(|(i, u, d, b)| {
                    vec![
                        i.map_or(Value::Null, Value::Int64),
                        u.map_or(Value::Null, Value::Uint64),
                        d.map_or(Value::Null, Value::Double),
                        b.map_or(Value::Null, Value::Boolean),
                    ]
                })
                .collect();
            use ValueType::{Boolean, Double, Int64, Uint64};
            let types = [Int64, Uint64, Double, Boolean];
            use ScalarFunction as S;
            let result = |f: S, t: ValueType| match f {
                S::CastInt64 => Int64,
                S::CastUint64 => Uint64,
                S::CastDouble => Double,
                S::CastBoolean | S::IsNan | S::IsFinite | S::IsInf => Boolean,
                _ => t,
            };
            let mut tried = 0;
            for f in [
                S::CastInt64, S::CastUint64, S::CastDouble, S::CastBoolean,
                S::Abs, S::IsNan, S::IsFinite, S::IsInf,
            ] {
                for (c, t) in types.iter().enumerate() {
                    let args = vec![column(c, *t)];
                    if !applies(f, &args) {
                        continue;
                    }
                    tried += 1;
                    let e = TypedExpr::new(TExpr::Call(f, args), result(f, *t));
                    agree(&e, &types, &rows, EvalOptions::default());
                }
            }
            prop_assert_eq!(tried, 20);
        }
    }
}
