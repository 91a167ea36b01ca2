//! Math functions over arrays (issue 41): the unary double functions (`sqrt`, `ln`, `sin`, …),
//! the roundings to `int64` (`floor`, `ceil`, `round`, `trunc`, `round_half_even`, `sign`),
//! `atan2`, `pow`, `log`, `signbit`, `bit_count`, `gcd`, `lcm`, `xor` and `greatest` of
//! numbers or booleans, with the row evaluator's semantics: null gives null (`greatest` fails
//! on one), IEEE results as Rust's `f64` gives them (NaN in, NaN out), a rounding outside
//! `int64` is an error, `lcm` wraps, `greatest` orders NaN last and keeps the later of equal
//! values (-0.0 and 0.0).
//!
//! Where a rounding fails, the row evaluator is asked for that value, so the error is its
//! own, word for word.

use std::cmp::Ordering;
use std::sync::Arc;

use arrow::array::{Array, ArrayRef, AsArray, BooleanArray, PrimitiveArray};
use arrow::buffer::{BooleanBuffer, NullBuffer};
use arrow::datatypes::{ArrowPrimitiveType, Float64Type, Int64Type, UInt64Type};

use dynql_core::value::compare_doubles;
use dynql_core::{Value, ValueType};
use dynql_ql::eval::EvalOptions;
use dynql_ql::functions::{call_scalar, gcd, MathFn, RoundFn, ScalarFunction};
use dynql_ql::texpr::TypedExpr;
use dynql_ql::Result;

use super::evaluate::{arrow_error, evaluate, runtime, Batch};

/// Whether `f(args)` runs here: the functions above over arguments of their declared types
/// (`greatest`: all of the result's type, a number or boolean).
pub(super) fn applies(f: ScalarFunction, e: &TypedExpr, args: &[TypedExpr]) -> bool {
    use ScalarFunction as S;
    use ValueType::{Boolean, Double, Int64, Uint64};
    let all = |ty: ValueType, n: usize| args.len() == n && args.iter().all(|a| a.ty == ty);
    match f {
        S::Math(_) | S::Round(_) | S::Signbit => all(Double, 1),
        S::Atan2 | S::Pow | S::Log => all(Double, 2),
        S::BitCount => all(Uint64, 1),
        S::Gcd | S::Lcm | S::Xor => all(Uint64, 2),
        S::Greatest => {
            matches!(e.ty, Int64 | Uint64 | Double | Boolean) && !args.is_empty() && {
                args.iter().all(|a| a.ty == e.ty)
            }
        }
        _ => false,
    }
}

/// `f(args)` over every row of `input` (see [`applies`]).
pub(super) fn math_call(
    f: ScalarFunction,
    e: &TypedExpr,
    args: &[TypedExpr],
    input: Batch<'_>,
    opts: EvalOptions,
) -> Result<ArrayRef> {
    use ScalarFunction as S;
    let arrays = args
        .iter()
        .map(|a| evaluate(a, input, opts))
        .collect::<Result<Vec<_>>>()?;
    let a = &arrays[0];
    Ok(match f {
        S::Math(m) => math_kernel(m, a),
        S::Round(r) => {
            let d = a.as_primitive::<Float64Type>();
            if every_value_in_int64(d) {
                return Ok(round_to_int64(r, d));
            }
            let round = |x: f64| r.apply(x);
            // Where the rounded value is outside int64 (or NaN), the row evaluator fails.
            let fits = |x: f64| INT64_RANGE.contains(&round(x));
            if let Some(i) = (0..d.len()).find(|&i| d.is_valid(i) && !fits(d.value(i))) {
                call_scalar(f, &[Value::Double(d.value(i))], e.ty)?;
            }
            map::<Float64Type, Int64Type>(a, |x| round(x) as i64)
        }
        S::Atan2 => binary::<Float64Type>(a, &arrays[1], f64::atan2)?,
        S::Pow => binary::<Float64Type>(a, &arrays[1], f64::powf)?,
        // log(base, x)
        S::Log => binary::<Float64Type>(a, &arrays[1], |base, x| x.log(base))?,
        S::Signbit => {
            let d = a.as_primitive::<Float64Type>();
            let values = BooleanBuffer::collect_bool(d.len(), |i| d.value(i).is_sign_negative());
            Arc::new(BooleanArray::new(values, d.logical_nulls()))
        }
        S::BitCount => map::<UInt64Type, Int64Type>(a, |x| i64::from(x.count_ones())),
        S::Gcd => binary::<UInt64Type>(a, &arrays[1], gcd)?,
        S::Lcm => binary::<UInt64Type>(a, &arrays[1], |x, y| {
            x.checked_div(gcd(x, y)).map_or(0, |q| q.wrapping_mul(y))
        })?,
        S::Xor => binary::<UInt64Type>(a, &arrays[1], |x, y| x ^ y)?,
        S::Greatest => greatest(e.ty, &arrays)?,
        _ => unreachable!("math_call of {f:?}: `applies` admits these forms only"),
    })
}

/// `m` of each value, the function chosen once per batch so that each loop inlines its own
/// (`sqrt` is one instruction).
fn math_kernel(m: MathFn, a: &ArrayRef) -> ArrayRef {
    macro_rules! each {
        ($($f:ident),*) => {
            match m {
                $(MathFn::$f => map::<Float64Type, Float64Type>(a, |x| MathFn::$f.apply(x)),)*
            }
        };
    }
    each!(Acos, Asin, Cos, Sin, Tan, Cot, Atan, Cbrt, Exp, Ln, Log10, Log2, Sqrt, Degrees, Radians)
}

/// The doubles [-2^63, 2^63): those whose every rounding is an int64 (NaN is outside).
const INT64_RANGE: std::ops::Range<f64> = -9.223372036854776e18..9.223372036854776e18;

/// Whether every valid value of `d` is in [`INT64_RANGE`] (branch-free without nulls).
fn every_value_in_int64(d: &PrimitiveArray<Float64Type>) -> bool {
    let inside = |x: f64| (x >= INT64_RANGE.start) & (x < INT64_RANGE.end);
    match d.nulls() {
        None => d.values().iter().fold(true, |all, &x| all & inside(x)),
        Some(nulls) => (0..d.len()).all(|i| nulls.is_null(i) || inside(d.value(i))),
    }
}

/// `r` of each value of `d`, all in [`INT64_RANGE`]: the floor, ceiling and roundings are
/// whole-number arithmetic on the truncation (`x as i64`, exact here) rather than a call into
/// the C library per value, which is what `f64::floor` is on baseline x86-64 (no `roundsd`).
/// The sign of a zero is lost in int64 anyway. Slots under nulls may hold any double: the
/// casts saturate and the arithmetic wraps, so they cannot fail.
fn round_to_int64(r: RoundFn, d: &PrimitiveArray<Float64Type>) -> ArrayRef {
    fn kernel(d: &PrimitiveArray<Float64Type>, f: impl Fn(f64) -> i64) -> ArrayRef {
        Arc::new(d.unary::<_, Int64Type>(f))
    }
    match r {
        RoundFn::Trunc => kernel(d, |x| x as i64),
        RoundFn::Floor => kernel(d, |x| {
            let t = x as i64;
            t.wrapping_sub(i64::from(t as f64 > x))
        }),
        RoundFn::Ceil => kernel(d, |x| {
            let t = x as i64;
            t.wrapping_add(i64::from((t as f64) < x))
        }),
        // Halves away from zero; `x - t` is exact, the fraction of a double being one.
        RoundFn::Round => kernel(d, |x| {
            let t = x as i64;
            let fraction = x - t as f64;
            t.wrapping_add(i64::from(fraction >= 0.5))
                .wrapping_sub(i64::from(fraction <= -0.5))
        }),
        RoundFn::Even => kernel(d, |x| RoundFn::Even.apply(x) as i64),
        RoundFn::Sign => kernel(d, |x| RoundFn::Sign.apply(x) as i64),
    }
}

/// `f` of each value (null where the value is null).
fn map<I: ArrowPrimitiveType, O: ArrowPrimitiveType>(
    a: &ArrayRef,
    f: impl Fn(I::Native) -> O::Native,
) -> ArrayRef {
    Arc::new(a.as_primitive::<I>().unary::<_, O>(f))
}

/// `f` of each row's two values (null where either is null).
fn binary<T: ArrowPrimitiveType>(
    a: &ArrayRef,
    b: &ArrayRef,
    f: impl Fn(T::Native, T::Native) -> T::Native,
) -> Result<ArrayRef> {
    let out: PrimitiveArray<T> =
        arrow::compute::binary(a.as_primitive::<T>(), b.as_primitive::<T>(), f)
            .map_err(arrow_error)?;
    Ok(Arc::new(out))
}

/// The greatest argument of each row in YT's value order, the last of equal ones (as the row
/// evaluator's `max_by` keeps it); a null argument anywhere fails.
fn greatest(ty: ValueType, arrays: &[ArrayRef]) -> Result<ArrayRef> {
    if arrays.iter().any(|a| a.logical_null_count() > 0) {
        return Err(runtime(
            "Function \"greatest\" does not accept null arguments",
        ));
    }
    Ok(match ty {
        ValueType::Int64 => fold::<Int64Type>(arrays, |x, y| x.cmp(&y)),
        ValueType::Uint64 => fold::<UInt64Type>(arrays, |x, y| x.cmp(&y)),
        ValueType::Double => fold::<Float64Type>(arrays, compare_doubles),
        _ => {
            // Booleans: the greatest is true where any argument is.
            let mut values = arrays[0].as_boolean().values().clone();
            for a in &arrays[1..] {
                values = &values | a.as_boolean().values();
            }
            Arc::new(BooleanArray::new(values, None))
        }
    })
}

fn fold<T: ArrowPrimitiveType>(
    arrays: &[ArrayRef],
    order: impl Fn(T::Native, T::Native) -> Ordering,
) -> ArrayRef {
    let mut values: Vec<T::Native> = arrays[0].as_primitive::<T>().values().to_vec();
    for a in &arrays[1..] {
        let next = a.as_primitive::<T>().values();
        for (v, n) in values.iter_mut().zip(next.iter()) {
            if order(*v, *n) != Ordering::Greater {
                *v = *n;
            }
        }
    }
    Arc::new(PrimitiveArray::<T>::new(values.into(), None::<NullBuffer>))
}

#[cfg(test)]
mod tests {
    use super::super::kernel_tests::{agree, column, edge_doubles as doubles};
    use super::*;
    use dynql_ql::texpr::TExpr;
    use proptest::prelude::*;

    fn uints() -> impl Strategy<Value = u64> {
        prop_oneof![Just(0u64), Just(1), Just(u64::MAX), 0u64..50, any::<u64>()]
    }

    const MATH: [MathFn; 15] = [
        MathFn::Acos,
        MathFn::Asin,
        MathFn::Cos,
        MathFn::Sin,
        MathFn::Tan,
        MathFn::Cot,
        MathFn::Atan,
        MathFn::Cbrt,
        MathFn::Exp,
        MathFn::Ln,
        MathFn::Log10,
        MathFn::Log2,
        MathFn::Sqrt,
        MathFn::Degrees,
        MathFn::Radians,
    ];

    const ROUND: [RoundFn; 6] = [
        RoundFn::Ceil,
        RoundFn::Floor,
        RoundFn::Round,
        RoundFn::Trunc,
        RoundFn::Even,
        RoundFn::Sign,
    ];

    /// Every function over the columns of its types (d0 d1 u2 u3 i4 i5 b6 b7) and literals.
    fn cases() -> Vec<TypedExpr> {
        use ScalarFunction as S;
        use ValueType::{Boolean, Double, Int64, Uint64};
        let call = |f: S, args: Vec<TypedExpr>, ty| TypedExpr::new(TExpr::Call(f, args), ty);
        let (d, u) = (|i| column(i, Double), |i| column(i, Uint64));
        let two = TypedExpr::literal(Value::Double(2.0), Double);
        let mut cases = Vec::new();
        for m in MATH {
            cases.push(call(S::Math(m), vec![d(0)], Double));
        }
        for r in ROUND {
            cases.push(call(S::Round(r), vec![d(0)], Int64));
        }
        for f in [S::Atan2, S::Pow, S::Log] {
            cases.push(call(f, vec![d(0), d(1)], Double));
            cases.push(call(f, vec![two.clone(), d(1)], Double));
            cases.push(call(f, vec![d(0), two.clone()], Double));
        }
        cases.push(call(S::Signbit, vec![d(0)], Boolean));
        cases.push(call(S::BitCount, vec![u(2)], Int64));
        for f in [S::Gcd, S::Lcm, S::Xor] {
            cases.push(call(f, vec![u(2), u(3)], Uint64));
        }
        for (ty, c) in [(Double, 0), (Uint64, 2), (Int64, 4), (Boolean, 6)] {
            let (x, y) = (column(c, ty), column(c + 1, ty));
            cases.push(call(S::Greatest, vec![x.clone()], ty));
            cases.push(call(S::Greatest, vec![x.clone(), y.clone()], ty));
            cases.push(call(S::Greatest, vec![y, x.clone(), x], ty));
        }
        cases
    }

    /// Each rounding of `values` by the whole-number kernel, against the row function's.
    fn roundings_agree(values: &[f64]) {
        let d = PrimitiveArray::<Float64Type>::from(values.to_vec());
        assert!(every_value_in_int64(&d));
        for r in ROUND {
            let got = round_to_int64(r, &d);
            let got = got.as_primitive::<Int64Type>();
            for (i, &x) in values.iter().enumerate() {
                assert_eq!(got.value(i), r.apply(x) as i64, "{r:?}({x:e})");
            }
        }
    }

    #[test]
    fn whole_number_roundings_agree_at_halves_and_bounds() {
        let mut values = vec![
            0.0,
            -0.0,
            0.49999999999999994,
            -0.49999999999999994,
            4503599627370495.5,
            -4503599627370495.5,
            4503599627370496.0,
            9007199254740993.0,
            -9.223372036854776e18,
            9.223372036854775e18,
            f64::MIN_POSITIVE,
            -f64::MIN_POSITIVE,
        ];
        for n in -5..=5 {
            let n = f64::from(n);
            for x in [n, n + 0.5, n - 0.5, n + 1e-9, n - 1e-9, n + 0.25, n - 0.75] {
                values.push(x);
            }
        }
        roundings_agree(&values);
        // Out of range, NaN included, the batch goes to the row path.
        for x in [
            f64::NAN,
            f64::INFINITY,
            9.223372036854776e18,
            -1.8446744073709552e19,
        ] {
            assert!(!every_value_in_int64(&PrimitiveArray::from(vec![1.0, x])));
        }
        // A null slot's value (here -inf, which would wrap below i64::MIN) does not count.
        let nulled = PrimitiveArray::<Float64Type>::new(
            vec![1.5, f64::NEG_INFINITY].into(),
            Some(NullBuffer::from(vec![true, false])),
        );
        assert!(every_value_in_int64(&nulled));
        for r in ROUND {
            let got = round_to_int64(r, &nulled);
            assert!(got.is_null(1));
            assert_eq!(
                got.as_primitive::<Int64Type>().value(0),
                r.apply(1.5) as i64
            );
        }
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(256))]
        /// Invariant: the whole-number roundings are the row function's over int64's range.
        #[test]
        fn whole_number_roundings_agree_over_int64s_range(
            values in proptest::collection::vec(
                prop_oneof![
                    -9.223372036854775e18f64..9.223372036854775e18,
                    -1e6f64..1e6,
                    (-1000i32..1000).prop_map(|n| f64::from(n) / 2.0),
                ],
                1..64,
            ),
        ) {
            roundings_agree(&values);
        }
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(128))]
        /// Invariant: each kernel gives what the row evaluator gives, row by row: NaN, ±0,
        /// infinities, roundings out of range and nulls (an error for `greatest`) included.
        #[test]
        fn every_math_kernel_agrees_with_the_row_evaluator(
            rows in proptest::collection::vec(
                (
                    proptest::option::weighted(0.9, doubles()),
                    proptest::option::weighted(0.9, doubles()),
                    proptest::option::weighted(0.9, uints()),
                    proptest::option::weighted(0.9, uints()),
                    proptest::option::weighted(0.95, prop_oneof![Just(i64::MIN), -2i64..2]),
                    proptest::option::weighted(0.95, prop_oneof![Just(i64::MAX), -2i64..2]),
                    proptest::option::weighted(0.95, any::<bool>()),
                    proptest::option::weighted(0.95, any::<bool>()),
                ),
                0..20,
            ),
        ) {
            let rows: Vec<Vec<Value>> = rows
                .into_iter()
                .map(|(d0, d1, u2, u3, i4, i5, b6, b7)| {
                    vec![
                        d0.map_or(Value::Null, Value::Double),
                        d1.map_or(Value::Null, Value::Double),
                        u2.map_or(Value::Null, Value::Uint64),
                        u3.map_or(Value::Null, Value::Uint64),
                        i4.map_or(Value::Null, Value::Int64),
                        i5.map_or(Value::Null, Value::Int64),
                        b6.map_or(Value::Null, Value::Boolean),
                        b7.map_or(Value::Null, Value::Boolean),
                    ]
                })
                .collect();
            use ValueType::{Boolean, Double, Int64, Uint64};
            let types = [Double, Double, Uint64, Uint64, Int64, Int64, Boolean, Boolean];
            for e in cases() {
                let TExpr::Call(f, args) = &e.kind else { unreachable!() };
                prop_assert!(applies(*f, &e, args), "{:?}", e);
                agree(&e, &types, &rows, EvalOptions::default());
            }
        }
    }
}
