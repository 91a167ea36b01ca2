//! String functions over arrays (issue 41): `is_substr`, `is_prefix` (of a column; a literal
//! prefix is `byte_kernels::starts_with`), `lower`, `length` and `concat`, with the row
//! evaluator's semantics: a null argument gives null, strings are bytes (`lower` lowers UTF-8
//! text as Unicode and other bytes as ASCII), a computed string longer than
//! [`MAX_STRING_VALUE_LENGTH`](dynql_ql::value_limits::MAX_STRING_VALUE_LENGTH) is an error,
//! and every string built is charged to the batch's budget before the array is built.
//!
//! A literal argument is read once; a literal needle of `is_substr` is searched with a
//! substring searcher built once per batch, not per row.

use std::sync::Arc;

use arrow::array::{
    Array, ArrayRef, AsArray, BinaryArray, BinaryBuilder, BinaryViewArray, BooleanArray, Int64Array,
};
use arrow::buffer::{BooleanBuffer, NullBuffer};
use arrow::datatypes::DataType;

use dynql_core::{Value, ValueType};
use dynql_ql::eval::EvalOptions;
use dynql_ql::functions::ScalarFunction;
use dynql_ql::texpr::TypedExpr;
use dynql_ql::value_limits::check_string_length;
use dynql_ql::Result;

use super::evaluate::{arrow_error, evaluate, Batch};

/// Whether `f(args)` runs here: the string functions, over arguments typed `string`.
pub(super) fn applies(f: ScalarFunction, args: &[TypedExpr]) -> bool {
    use ScalarFunction as S;
    let arity = match f {
        S::Lower | S::Length => 1,
        S::IsSubstr | S::IsPrefix | S::Concat => 2,
        _ => return false,
    };
    args.len() == arity && args.iter().all(|a| a.ty == ValueType::String)
}

/// `f(args)` over every row of `input` (see [`applies`]).
pub(super) fn string_call(
    f: ScalarFunction,
    args: &[TypedExpr],
    input: Batch<'_>,
    opts: EvalOptions,
) -> Result<ArrayRef> {
    use ScalarFunction as S;
    let strings = args
        .iter()
        .map(|a| Strings::of(a, input, opts))
        .collect::<Result<Vec<_>>>()?;
    let rows = input.rows;
    Ok(match f {
        S::Length => {
            let s = &strings[0];
            let values: Vec<i64> = (0..rows)
                .map(|i| s.get(i).map_or(0, |b| b.len() as i64))
                .collect();
            Arc::new(Int64Array::new(values.into(), s.nulls(rows)))
        }
        S::IsSubstr => {
            let (needle, haystack) = (&strings[0], &strings[1]);
            let nulls =
                NullBuffer::union(needle.nulls(rows).as_ref(), haystack.nulls(rows).as_ref());
            let values = match needle {
                Strings::Constant(Some(n)) => {
                    let finder = memchr::memmem::Finder::new(n);
                    BooleanBuffer::collect_bool(rows, |i| {
                        haystack.get(i).is_some_and(|h| finder.find(h).is_some())
                    })
                }
                _ => {
                    BooleanBuffer::collect_bool(rows, |i| match (needle.get(i), haystack.get(i)) {
                        (Some(n), Some(h)) => memchr::memmem::find(h, n).is_some(),
                        _ => false,
                    })
                }
            };
            Arc::new(BooleanArray::new(values, nulls))
        }
        S::IsPrefix => {
            let (prefix, s) = (&strings[0], &strings[1]);
            let nulls = NullBuffer::union(prefix.nulls(rows).as_ref(), s.nulls(rows).as_ref());
            let values = BooleanBuffer::collect_bool(rows, |i| match (prefix.get(i), s.get(i)) {
                (Some(p), Some(s)) => s.starts_with(p),
                _ => false,
            });
            Arc::new(BooleanArray::new(values, nulls))
        }
        S::Lower => build_strings(rows, input, |i| {
            Ok(strings[0].get(i).map(|b| match std::str::from_utf8(b) {
                Ok(text) => text.to_lowercase().into_bytes(),
                Err(_) => b.to_ascii_lowercase(),
            }))
        })?,
        S::Concat => build_strings(rows, input, |i| {
            match (strings[0].get(i), strings[1].get(i)) {
                (Some(a), Some(b)) => {
                    check_string_length(a.len().saturating_add(b.len()))?;
                    Ok(Some([a, b].concat()))
                }
                _ => Ok(None),
            }
        })?,
        _ => unreachable!("string_call of {f:?}: `applies` admits the string functions only"),
    })
}

/// A string array of `f(i)` for every row (`None`: null), each value checked against the
/// string limit and charged to the budget as it is made.
fn build_strings(
    rows: usize,
    input: Batch<'_>,
    f: impl Fn(usize) -> Result<Option<Vec<u8>>>,
) -> Result<ArrayRef> {
    let mut builder = BinaryBuilder::with_capacity(rows, 0);
    for i in 0..rows {
        match f(i)? {
            Some(v) => {
                check_string_length(v.len())?;
                input.budget.charge(v.len() as u64)?;
                builder.append_value(&v);
            }
            None => builder.append_null(),
        }
    }
    Ok(Arc::new(builder.finish()))
}

/// A string argument over a batch: a column (as it came, `Binary` or `BinaryView`), or one
/// literal for every row.
pub(super) enum Strings {
    Binary(BinaryArray),
    View(BinaryViewArray),
    Constant(Option<Vec<u8>>),
}

impl Strings {
    pub(super) fn of(a: &TypedExpr, input: Batch<'_>, opts: EvalOptions) -> Result<Strings> {
        match a.as_literal() {
            Some(Value::String(b)) => return Ok(Strings::Constant(Some(b.clone()))),
            Some(Value::Null) => return Ok(Strings::Constant(None)),
            _ => {}
        }
        let array = evaluate(a, input, opts)?;
        Ok(match array.data_type() {
            DataType::BinaryView => Strings::View(array.as_binary_view().clone()),
            DataType::Binary => Strings::Binary(array.as_binary::<i32>().clone()),
            DataType::Null => Strings::Constant(None),
            // Other encodings (foreign files): as bytes.
            _ => {
                let binary =
                    arrow::compute::cast(&array, &DataType::Binary).map_err(arrow_error)?;
                Strings::Binary(binary.as_binary::<i32>().clone())
            }
        })
    }

    /// Row `i`'s value (`None`: null).
    pub(super) fn get(&self, i: usize) -> Option<&[u8]> {
        match self {
            Strings::Binary(a) => (!a.is_null(i)).then(|| a.value(i)),
            Strings::View(a) => (!a.is_null(i)).then(|| a.value(i)),
            Strings::Constant(v) => v.as_deref(),
        }
    }

    /// The nulls of `rows` rows of it.
    pub(super) fn nulls(&self, rows: usize) -> Option<NullBuffer> {
        match self {
            Strings::Binary(a) => a.logical_nulls(),
            Strings::View(a) => a.logical_nulls(),
            Strings::Constant(Some(_)) => None,
            Strings::Constant(None) => Some(NullBuffer::new_null(rows)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::kernel_tests::{agree, column};
    use super::*;
    use dynql_ql::texpr::TExpr;
    use proptest::prelude::*;

    fn call(f: ScalarFunction, args: Vec<TypedExpr>) -> TypedExpr {
        let ty = match f {
            ScalarFunction::Length => ValueType::Int64,
            ScalarFunction::IsSubstr | ScalarFunction::IsPrefix => ValueType::Boolean,
            _ => ValueType::String,
        };
        TypedExpr::new(TExpr::Call(f, args), ty)
    }

    fn text(s: &[u8]) -> TypedExpr {
        TypedExpr::literal(Value::String(s.to_vec()), ValueType::String)
    }

    fn null() -> TypedExpr {
        TypedExpr::literal(Value::Null, ValueType::String)
    }

    /// Every string function, over two string columns and literals (null, empty, bytes that
    /// are not UTF-8).
    fn cases() -> Vec<TypedExpr> {
        use ScalarFunction as S;
        let c = |i| column(i, ValueType::String);
        let mut cases = Vec::new();
        for f in [S::IsSubstr, S::IsPrefix, S::Concat] {
            cases.push(call(f, vec![c(0), c(1)]));
            cases.push(call(f, vec![c(1), c(0)]));
            for l in [text(b"b"), text(b""), text(b"\xffa"), text(b"AB"), null()] {
                cases.push(call(f, vec![l.clone(), c(0)]));
                cases.push(call(f, vec![c(0), l]));
            }
        }
        for f in [S::Lower, S::Length] {
            cases.push(call(f, vec![c(0)]));
            cases.push(call(f, vec![text("ÀB\u{130}".as_bytes())]));
            cases.push(call(f, vec![null()]));
        }
        cases
    }

    fn strings() -> impl Strategy<Value = Option<Vec<u8>>> {
        proptest::option::of(prop_oneof![
            proptest::collection::vec(prop_oneof![Just(b'a'), Just(b'b'), Just(b'A')], 0..6),
            proptest::collection::vec(any::<u8>(), 0..20),
            Just("ÀÉ\u{130}b".as_bytes().to_vec()),
        ])
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(64))]
        /// Invariant: each kernel gives what the row evaluator gives, row by row, errors
        /// included.
        #[test]
        fn every_string_kernel_agrees_with_the_row_evaluator(
            rows in proptest::collection::vec((strings(), strings()), 0..40),
        ) {
            let rows: Vec<Vec<Value>> = rows
                .into_iter()
                .map(|(a, b)| {
                    vec![
                        a.map_or(Value::Null, Value::String),
                        b.map_or(Value::Null, Value::String),
                    ]
                })
                .collect();
            let types = [ValueType::String, ValueType::String];
            for e in cases() {
                let TExpr::Call(f, args) = &e.kind else { unreachable!() };
                prop_assert!(applies(*f, args), "{:?}", e);
                agree(&e, &types, &rows, EvalOptions::default());
            }
        }
    }

    #[test]
    fn a_concat_past_the_string_limit_is_the_row_evaluators_error() {
        let half = vec![b'x'; dynql_ql::value_limits::MAX_STRING_VALUE_LENGTH / 2 + 1];
        let rows = vec![vec![Value::String(half.clone()), Value::String(half)]];
        let e = call(
            ScalarFunction::Concat,
            vec![column(0, ValueType::String), column(1, ValueType::String)],
        );
        agree(
            &e,
            &[ValueType::String, ValueType::String],
            &rows,
            EvalOptions::default(),
        );
    }
}
