//! Conversions over arrays (issue 41): `parse_int64`, `parse_uint64`, `parse_double`,
//! `numeric_to_string`, the casts from `any` (and `string(s)` of a string), `format_guid`,
//! `is_valid_utf8`, `to_valid_utf8` and `factorial`, with the row evaluator's semantics: null
//! gives null, texts and `any` values are YSON scalars converted as the casts do, doubles print
//! as YT prints them (`1.`, `nan`, `-inf`), invalid UTF-8 becomes U+FFFD, and every string
//! built is checked against the string limit and charged to the batch's budget before the
//! array is built.
//!
//! Only the values that convert are converted here; for any other (a text that is no number,
//! a double out of the target's range, `factorial(21)`) the row evaluator's `call_scalar` is
//! asked, so that its answer and its error are the row path's, word for word.

use std::io::Write;
use std::sync::Arc;

use arrow::array::{
    Array, ArrayRef, AsArray, BinaryBuilder, BooleanArray, BooleanBuilder, PrimitiveArray,
};
use arrow::buffer::BooleanBuffer;
use arrow::datatypes::{ArrowPrimitiveType, Float64Type, Int64Type, UInt64Type};

use dynql_core::{Value, ValueType, Yson};
use dynql_ql::eval::EvalOptions;
use dynql_ql::functions::{call_scalar, ScalarFunction};
use dynql_ql::texpr::TypedExpr;
use dynql_ql::value_limits::check_string_length;
use dynql_ql::Result;

use super::evaluate::{evaluate, Batch};
use super::string_calls::Strings;

/// Whether `f(args)` runs here: the functions above over arguments of their declared types
/// (the casts between numbers and booleans are [`super::numeric_calls`]').
pub(super) fn applies(f: ScalarFunction, args: &[TypedExpr]) -> bool {
    use ScalarFunction as S;
    use ValueType::{Any, Double, Int64, String, Uint64};
    match (f, args) {
        (S::ParseInt64 | S::ParseUint64 | S::ParseDouble, [a]) => a.ty == String,
        (S::IsValidUtf8 | S::ToValidUtf8, [a]) => a.ty == String,
        (S::NumericToString, [a]) => matches!(a.ty, Int64 | Uint64 | Double),
        (S::CastInt64 | S::CastUint64 | S::CastDouble | S::CastBoolean, [a]) => a.ty == Any,
        (S::CastString, [a]) => matches!(a.ty, String | Any),
        (S::FormatGuid, [a, b]) => a.ty == Uint64 && b.ty == Uint64,
        (S::Factorial, [a]) => a.ty == Uint64,
        _ => false,
    }
}

/// `f(args)` over every row of `input` (see [`applies`]); `e` is the call.
pub(super) fn conversion_call(
    f: ScalarFunction,
    e: &TypedExpr,
    args: &[TypedExpr],
    input: Batch<'_>,
    opts: EvalOptions,
) -> Result<ArrayRef> {
    use ScalarFunction as S;
    let rows = input.rows;
    // The row evaluator's answer for one byte-string argument (of `args[0]`'s type).
    let by_row = |b: &[u8]| {
        let v = if args[0].ty == ValueType::Any {
            Value::Any(b.to_vec())
        } else {
            Value::String(b.to_vec())
        };
        call_scalar(f, &[v], e.ty)
    };
    match f {
        S::NumericToString => {
            let a = evaluate(&args[0], input, opts)?;
            numeric_to_string(args[0].ty, &a, input)
        }
        S::FormatGuid => {
            let (a, b) = (
                evaluate(&args[0], input, opts)?,
                evaluate(&args[1], input, opts)?,
            );
            let (x, y) = (
                a.as_primitive::<UInt64Type>(),
                b.as_primitive::<UInt64Type>(),
            );
            build_strings(rows, input, true, |i, out| {
                if x.is_null(i) || y.is_null(i) {
                    return Ok(false);
                }
                let (x, y) = (x.value(i), y.value(i));
                let (p, q) = (x >> 32, x & 0xffff_ffff);
                let (r, s) = (y >> 32, y & 0xffff_ffff);
                // Writing into a Vec cannot fail.
                let _ = write!(out, "{p:x}-{q:x}-{r:x}-{s:x}");
                Ok(true)
            })
        }
        S::Factorial => {
            let a = evaluate(&args[0], input, opts)?;
            let n = a.as_primitive::<UInt64Type>();
            if let Some(i) = (0..rows).find(|&i| n.is_valid(i) && n.value(i) > 20) {
                call_scalar(f, &[Value::Uint64(n.value(i))], e.ty)?;
            }
            let table: Vec<u64> = (0..=20u64).map(|k| (1..=k).product()).collect();
            Ok(Arc::new(n.unary::<_, UInt64Type>(|k| {
                table.get(k as usize).copied().unwrap_or(0)
            })))
        }
        _ => {
            let s = Strings::of(&args[0], input, opts)?;
            match f {
                S::IsValidUtf8 => {
                    let values = BooleanBuffer::collect_bool(rows, |i| {
                        s.get(i).is_some_and(|b| std::str::from_utf8(b).is_ok())
                    });
                    Ok(Arc::new(BooleanArray::new(values, s.nulls(rows))))
                }
                S::ToValidUtf8 => build_strings(rows, input, true, |i, out| {
                    let Some(b) = s.get(i) else {
                        return Ok(false);
                    };
                    out.extend_from_slice(String::from_utf8_lossy(b).as_bytes());
                    Ok(true)
                }),
                // The string inside passes through unchecked, as a column's value does.
                S::CastString => build_strings(rows, input, false, |i, out| {
                    let Some(b) = s.get(i) else {
                        return Ok(false);
                    };
                    if args[0].ty == ValueType::String {
                        out.extend_from_slice(b);
                        return Ok(true);
                    }
                    match dynql_core::yson::parse(b) {
                        Ok(Yson::String(text)) => out.extend_from_slice(&text),
                        Ok(Yson::Entity) => return Ok(false),
                        _ => match by_row(b)? {
                            Value::String(text) => out.extend_from_slice(&text),
                            _ => return Ok(false),
                        },
                    }
                    Ok(true)
                }),
                S::CastBoolean => {
                    let mut out = BooleanBuilder::with_capacity(rows);
                    for i in 0..rows {
                        let v = match s.get(i) {
                            None => None,
                            Some(b) => match dynql_core::yson::parse(b) {
                                Ok(Yson::Boolean(x)) => Some(x),
                                Ok(Yson::Entity) => None,
                                _ => match by_row(b)? {
                                    Value::Boolean(x) => Some(x),
                                    _ => None,
                                },
                            },
                        };
                        out.append_option(v);
                    }
                    Ok(Arc::new(out.finish()))
                }
                S::ParseInt64 | S::CastInt64 => {
                    let any = f == S::CastInt64;
                    numbers::<Int64Type>(
                        rows,
                        &s,
                        &by_row,
                        |y| scalar_to_int64(y, any),
                        |v| match v {
                            Value::Int64(x) => Some(x),
                            _ => None,
                        },
                    )
                }
                S::ParseUint64 | S::CastUint64 => {
                    let any = f == S::CastUint64;
                    numbers::<UInt64Type>(
                        rows,
                        &s,
                        &by_row,
                        |y| scalar_to_uint64(y, any),
                        |v| match v {
                            Value::Uint64(x) => Some(x),
                            _ => None,
                        },
                    )
                }
                S::ParseDouble | S::CastDouble => {
                    numbers::<Float64Type>(rows, &s, &by_row, scalar_to_double, |v| match v {
                        Value::Double(x) => Some(x),
                        _ => None,
                    })
                }
                _ => unreachable!("conversion_call of {f:?}: `applies` admits these forms only"),
            }
        }
    }
}

/// What a parsed YSON scalar converts to: `Some(None)` null (`#`, for the casts from `any`),
/// `None` when the row evaluator must answer (an error, or a form not handled here).
type Converted<T> = Option<Option<T>>;

/// `parse_int64` (or the cast from `any`, which truncates doubles without a range check).
fn scalar_to_int64(y: Yson, any: bool) -> Converted<i64> {
    match y {
        Yson::Int64(x) => Some(Some(x)),
        Yson::Uint64(x) => Some(Some(x as i64)),
        Yson::Double(x) if any => Some(Some(x as i64)),
        // The row path's range check for parsed doubles (it fails outside int64).
        Yson::Double(x) if (-9.223372036854776e18..9.223372036854776e18).contains(&x) => {
            Some(Some(x as i64))
        }
        Yson::Entity if any => Some(None),
        _ => None,
    }
}

fn scalar_to_uint64(y: Yson, any: bool) -> Converted<u64> {
    match y {
        Yson::Int64(x) => Some(Some(x as u64)),
        Yson::Uint64(x) => Some(Some(x)),
        Yson::Double(x) if any => Some(Some(x as u64)),
        Yson::Double(x) if !(x.is_nan() || x <= -1.0 || x >= 1.8446744073709552e19) => {
            Some(Some(x as u64))
        }
        Yson::Entity if any => Some(None),
        _ => None,
    }
}

/// `parse_double` or the cast from `any` (`#` is no number to parse: the row path fails).
fn scalar_to_double(y: Yson) -> Converted<f64> {
    match y {
        Yson::Int64(x) => Some(Some(x as f64)),
        Yson::Uint64(x) => Some(Some(x as f64)),
        Yson::Double(x) => Some(Some(x)),
        _ => None,
    }
}

/// Each row's text (or `any` value) parsed as a YSON scalar and converted by `convert`, the
/// row evaluator answering where it does not (`native` reads its answer).
fn numbers<T: ArrowPrimitiveType>(
    rows: usize,
    s: &Strings,
    by_row: &dyn Fn(&[u8]) -> Result<Value>,
    convert: impl Fn(Yson) -> Converted<T::Native>,
    native: impl Fn(Value) -> Option<T::Native>,
) -> Result<ArrayRef> {
    let mut out: Vec<Option<T::Native>> = Vec::with_capacity(rows);
    for i in 0..rows {
        let v = match s.get(i) {
            None => None,
            Some(b) => match dynql_core::yson::parse(b).ok().and_then(&convert) {
                Some(v) => v,
                None => native(by_row(b)?),
            },
        };
        out.push(v);
    }
    Ok(Arc::new(out.into_iter().collect::<PrimitiveArray<T>>()))
}

/// `numeric_to_string` of each value: integers in decimal (`u` after unsigned ones), doubles
/// as YT prints them.
fn numeric_to_string(ty: ValueType, a: &ArrayRef, input: Batch<'_>) -> Result<ArrayRef> {
    build_strings(input.rows, input, true, |i, out| {
        if a.is_null(i) {
            return Ok(false);
        }
        // Writing into a Vec cannot fail.
        let _ = match ty {
            ValueType::Int64 => write!(out, "{}", a.as_primitive::<Int64Type>().value(i)),
            ValueType::Uint64 => write!(out, "{}u", a.as_primitive::<UInt64Type>().value(i)),
            _ => {
                let x = a.as_primitive::<Float64Type>().value(i);
                if x.is_nan() {
                    write!(out, "nan")
                } else if x.is_infinite() {
                    write!(out, "{}", if x > 0.0 { "inf" } else { "-inf" })
                } else {
                    let start = out.len();
                    let r = write!(out, "{x}");
                    // Integral values end in "." as YT prints them.
                    if !out[start..].iter().any(|&c| c == b'.' || c == b'e') {
                        out.push(b'.');
                    }
                    r
                }
            }
        };
        Ok(true)
    })
}

/// A string array of what `f(i, buffer)` writes for every row (false: null), each value
/// checked against the string limit (where `check`) and charged to the budget before it is
/// kept.
fn build_strings(
    rows: usize,
    input: Batch<'_>,
    check: bool,
    mut f: impl FnMut(usize, &mut Vec<u8>) -> Result<bool>,
) -> Result<ArrayRef> {
    let mut builder = BinaryBuilder::with_capacity(rows, 0);
    let mut buffer = Vec::new();
    for i in 0..rows {
        buffer.clear();
        if f(i, &mut buffer)? {
            if check {
                check_string_length(buffer.len())?;
            }
            input.budget.charge(buffer.len() as u64)?;
            builder.append_value(&buffer);
        } else {
            builder.append_null();
        }
    }
    Ok(Arc::new(builder.finish()))
}

#[cfg(test)]
mod tests {
    use super::super::budget::Budget;
    use super::super::kernel_tests::{agree, column, edge_doubles, evaluate_with};
    use super::*;
    use dynql_ql::texpr::TExpr;
    use proptest::prelude::*;

    /// Texts that parse as numbers (in and out of range), other YSON and no YSON at all.
    fn texts() -> impl Strategy<Value = Vec<u8>> {
        let known = proptest::sample::select(vec![
            "0",
            "-17",
            "9223372036854775807",
            "-9223372036854775808",
            "9223372036854775808",
            "18446744073709551615u",
            "5u",
            "1.5",
            "-0.5",
            "1e300",
            "-1e19",
            "%nan",
            "%inf",
            "%-inf",
            "1.",
            " 3 ",
            "#",
            "%true",
            "\"7\"",
            "\"x\"",
            "[1;2]",
            "{a=1}",
            "<a=1>2",
            "abc",
            "",
            "0x10",
            "1 2",
            "}{",
        ])
        .prop_map(|t| t.as_bytes().to_vec());
        prop_oneof![
            8 => known,
            1 => "[0-9a-z.%#\"u-]{0,6}".prop_map(String::into_bytes),
            1 => proptest::collection::vec(any::<u8>(), 0..6),
        ]
    }

    fn uints() -> impl Strategy<Value = u64> {
        prop_oneof![0u64..22, Just(u64::MAX), any::<u64>()]
    }

    /// Every function over the columns of its types: c0 string, c1 any, c2 int64, c3 uint64
    /// (small, for factorial), c4 double, c5 uint64.
    fn cases() -> Vec<TypedExpr> {
        use ScalarFunction as S;
        use ValueType::{Any, Boolean, Double, Int64, String, Uint64};
        let call = |f: S, args: Vec<TypedExpr>, ty| TypedExpr::new(TExpr::Call(f, args), ty);
        let (s, a) = (column(0, String), column(1, Any));
        let mut cases = vec![
            call(S::ParseInt64, vec![s.clone()], Int64),
            call(S::ParseUint64, vec![s.clone()], Uint64),
            call(S::ParseDouble, vec![s.clone()], Double),
            call(S::IsValidUtf8, vec![s.clone()], Boolean),
            call(S::ToValidUtf8, vec![s.clone()], String),
            call(S::CastString, vec![s.clone()], String),
            call(S::CastInt64, vec![a.clone()], Int64),
            call(S::CastUint64, vec![a.clone()], Uint64),
            call(S::CastDouble, vec![a.clone()], Double),
            call(S::CastBoolean, vec![a.clone()], Boolean),
            call(S::CastString, vec![a], String),
            call(
                S::FormatGuid,
                vec![column(3, Uint64), column(5, Uint64)],
                String,
            ),
            call(S::Factorial, vec![column(3, Uint64)], Uint64),
            // A literal text is read once, as a constant.
            call(
                S::ParseInt64,
                vec![TypedExpr::literal(Value::string("12"), String)],
                Int64,
            ),
        ];
        for (c, ty) in [(2, Int64), (3, Uint64), (4, Double)] {
            cases.push(call(S::NumericToString, vec![column(c, ty)], String));
        }
        cases
    }

    const TYPES: [ValueType; 6] = [
        ValueType::String,
        ValueType::Any,
        ValueType::Int64,
        ValueType::Uint64,
        ValueType::Double,
        ValueType::Uint64,
    ];

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(128))]
        /// Invariant: each kernel gives what the row evaluator gives, row by row: nulls,
        /// texts that are no numbers or out of range (the row path's errors), `#`, invalid
        /// UTF-8, doubles' printing and factorials that do not fit.
        #[test]
        fn every_conversion_kernel_agrees_with_the_row_evaluator(
            rows in proptest::collection::vec(
                (
                    proptest::option::weighted(0.9, texts()),
                    proptest::option::weighted(0.9, texts()),
                    proptest::option::weighted(0.9, prop_oneof![Just(i64::MIN), any::<i64>()]),
                    proptest::option::weighted(0.9, uints()),
                    proptest::option::weighted(0.9, edge_doubles()),
                    proptest::option::weighted(0.9, any::<u64>()),
                ),
                0..16,
            ),
        ) {
            let rows: Vec<Vec<Value>> = rows
                .into_iter()
                .map(|(s, a, i, u, d, g)| {
                    vec![
                        s.map_or(Value::Null, Value::String),
                        a.map_or(Value::Null, Value::Any),
                        i.map_or(Value::Null, Value::Int64),
                        u.map_or(Value::Null, Value::Uint64),
                        d.map_or(Value::Null, Value::Double),
                        g.map_or(Value::Null, Value::Uint64),
                    ]
                })
                .collect();
            for e in cases() {
                let TExpr::Call(f, args) = &e.kind else { unreachable!() };
                prop_assert!(applies(*f, args), "{:?}", e);
                agree(&e, &TYPES, &rows, EvalOptions::default());
            }
        }
    }

    #[test]
    fn built_strings_are_charged_and_failures_are_the_row_paths() {
        let s = ValueType::String;
        let rows: Vec<Vec<Value>> = [b"ok".to_vec(), vec![b'a', 0xff], b"12".to_vec()]
            .into_iter()
            .map(|b| vec![Value::String(b)])
            .collect();
        let call = |f, ty| TypedExpr::new(TExpr::Call(f, vec![column(0, s)]), ty);
        let budget = Budget::new(u64::MAX, rows.len());
        let e = call(ScalarFunction::ToValidUtf8, s);
        let TExpr::Call(f, args) = &e.kind else {
            unreachable!()
        };
        assert!(applies(*f, args));
        evaluate_with(&e, &[s], &rows, &budget).unwrap();
        // "ok", "a" and U+FFFD (3 bytes), "12".
        assert_eq!(budget.used(), 2 + 4 + 2);
        let e = call(ScalarFunction::ParseInt64, ValueType::Int64);
        let err = evaluate_with(&e, &[s], &rows, &budget).unwrap_err();
        assert_eq!(err.to_string(), "Cannot convert value \"ok\" to int64");
        let budget = Budget::new(3, rows.len());
        let e = call(ScalarFunction::ToValidUtf8, s);
        assert!(evaluate_with(&e, &[s], &rows, &budget).is_err());
    }
}
