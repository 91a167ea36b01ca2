//! Scalar function calls over a batch: the arguments evaluated as arrays, the function
//! applied row by row with the row evaluator's `call_scalar`, every string it computes charged
//! to the batch's [`super::budget::Budget`] before the result array is built; and `farm_hash`
//! reading its arguments straight from the arrays.
//!
//! A literal argument is read once, not copied into a column per row: a 300 KB literal in
//! `is_substr('<literal>', s)` over a batch of 8,192 rows would otherwise be 2.4 GB.

use std::sync::Arc;

use arrow::array::{Array, ArrayRef, AsArray, UInt64Array};
use arrow::datatypes::{Float64Type, Int64Type, UInt64Type};

use dynql_core::arrow_convert::array_value;
use dynql_core::farm_hash::{farm_hash, HashInput};
use dynql_core::{Value, ValueType};
use dynql_ql::eval::EvalOptions;
use dynql_ql::functions::{call_scalar, ScalarFunction};
use dynql_ql::texpr::TypedExpr;
use dynql_ql::Result;

use super::evaluate::{evaluate, literal_array, runtime, to_array, Batch};

/// An argument over a batch: a column of values, or one value for every row.
enum Argument {
    Column(ArrayRef),
    /// A literal as a one-row array (read as the row evaluator would read it from a column).
    Constant(ArrayRef),
}

impl Argument {
    fn of(a: &TypedExpr, input: Batch<'_>, opts: EvalOptions) -> Result<Argument> {
        Ok(match a.as_literal() {
            Some(v) => Argument::Constant(literal_array(v, a.ty, 1)),
            None => Argument::Column(evaluate(a, input, opts)?),
        })
    }

    /// The array and the index in it of `row`'s value.
    fn at(&self, row: usize) -> (&dyn Array, usize) {
        match self {
            Argument::Column(a) => (a.as_ref(), row),
            Argument::Constant(a) => (a.as_ref(), 0),
        }
    }
}

/// `f(args)` (not the lazy `if`) over every row of `input`; `e` is the call.
pub(super) fn call(
    f: ScalarFunction,
    e: &TypedExpr,
    args: &[TypedExpr],
    input: Batch<'_>,
    opts: EvalOptions,
) -> Result<ArrayRef> {
    let arguments = args
        .iter()
        .map(|a| Argument::of(a, input, opts))
        .collect::<Result<Vec<_>>>()?;
    // Constants are read once; columns are read into their slot on every row.
    let mut values: Vec<Value> = arguments
        .iter()
        .zip(args)
        .map(|(a, arg)| match a {
            Argument::Constant(c) => array_value(c.as_ref(), arg.ty, 0),
            Argument::Column(_) => Value::Null,
        })
        .collect();
    let mut out = Vec::with_capacity(input.rows);
    for row in 0..input.rows {
        for ((a, arg), slot) in arguments.iter().zip(args).zip(values.iter_mut()) {
            if let Argument::Column(c) = a {
                *slot = array_value(c.as_ref(), arg.ty, row);
            }
        }
        let v = call_scalar(f, &values, e.ty)?;
        input.budget.charge_value(&v)?;
        out.push(v);
    }
    to_array(e.ty, &out)
}

/// Whether `farm_hash` reads values of type `t` from arrays directly (`any` is refused by the
/// row path, with its error).
pub(super) fn hashable(t: ValueType) -> bool {
    !matches!(t, ValueType::Any)
}

/// `farm_hash(args)` of each row, its values read in place: the row path's hash inputs
/// without a value per cell.
pub(super) fn farm_hash_call(
    args: &[TypedExpr],
    input: Batch<'_>,
    opts: EvalOptions,
) -> Result<ArrayRef> {
    let arguments = args
        .iter()
        .map(|a| Argument::of(a, input, opts))
        .collect::<Result<Vec<_>>>()?;
    let mut inputs: Vec<HashInput> = Vec::with_capacity(arguments.len());
    let mut out = Vec::with_capacity(input.rows);
    for row in 0..input.rows {
        inputs.clear();
        for (argument, arg) in arguments.iter().zip(args) {
            let (a, i) = argument.at(row);
            inputs.push(if a.is_null(i) {
                HashInput::Null
            } else {
                match arg.ty {
                    ValueType::Int64 => HashInput::Int64(a.as_primitive::<Int64Type>().value(i)),
                    ValueType::Uint64 => HashInput::Uint64(a.as_primitive::<UInt64Type>().value(i)),
                    ValueType::Double => {
                        HashInput::Double(a.as_primitive::<Float64Type>().value(i))
                    }
                    ValueType::Boolean => HashInput::Boolean(a.as_boolean().value(i)),
                    ValueType::String => match a.as_binary_opt::<i32>() {
                        Some(b) => HashInput::String(b.value(i)),
                        None => HashInput::String(a.as_binary_view().value(i)),
                    },
                    ValueType::Null => HashInput::Null,
                    ValueType::Any => return row_error_any(),
                }
            });
        }
        out.push(farm_hash(&inputs));
    }
    Ok(Arc::new(UInt64Array::from(out)))
}

/// The row path's error for hashing `any` (which `hashable` keeps from the array path).
fn row_error_any<T>() -> Result<T> {
    Err(runtime(
        "Cannot hash values of type any; only scalar types are allowed for key columns",
    ))
}

#[cfg(test)]
mod tests {
    use super::super::budget::Budget;
    use super::super::kernel_tests::{agree, column, evaluate_with};
    use super::*;
    use dynql_ql::texpr::TExpr;

    fn call_of(f: ScalarFunction, args: Vec<TypedExpr>, ty: ValueType) -> TypedExpr {
        TypedExpr::new(TExpr::Call(f, args), ty)
    }

    #[test]
    fn literal_arguments_are_not_copied_per_row() {
        let s = ValueType::String;
        // 64 MiB if copied per row; the row evaluator the results are checked against does
        // copy it, so not longer.
        let long = Value::String(vec![b'n'; 16 << 10]);
        let rows: Vec<Vec<Value>> = (0..4096)
            .map(|i| match i % 3 {
                0 => vec![Value::Null],
                1 => vec![Value::String(vec![b'n'; 20 << 10])],
                _ => vec![Value::string("no")],
            })
            .collect();
        let substr = call_of(
            ScalarFunction::IsSubstr,
            vec![TypedExpr::literal(long.clone(), s), column(0, s)],
            ValueType::Boolean,
        );
        let hash = call_of(
            ScalarFunction::FarmHash,
            vec![TypedExpr::literal(long, s), column(0, s)],
            ValueType::Uint64,
        );
        for e in [&substr, &hash] {
            agree(e, &[s], &rows, EvalOptions::default());
            // A budget of 1 byte: nothing is charged, as no string is computed.
            let budget = Budget::new(1, rows.len());
            evaluate_with(e, &[s], &rows, &budget).unwrap();
            assert_eq!(budget.used(), 0);
        }
    }

    #[test]
    fn regex_predicates_over_null_strings_are_false() {
        let s = ValueType::String;
        let b = ValueType::Boolean;
        let rows: Vec<Vec<Value>> = vec![
            vec![Value::string("abc"), Value::string("a.*")],
            vec![Value::Null, Value::string("a.*")],
            vec![Value::string("abc"), Value::Null],
        ];
        let pattern = TypedExpr::literal(Value::string("b"), s);
        let null = TypedExpr::literal(Value::Null, s);
        for f in [
            ScalarFunction::RegexFullMatch,
            ScalarFunction::RegexPartialMatch,
        ] {
            for args in [
                vec![column(1, s), column(0, s)],
                vec![pattern.clone(), column(0, s)],
                vec![null.clone(), column(0, s)],
            ] {
                let e = call_of(f, args, b);
                agree(&e, &[s, s], &rows, EvalOptions::default());
                let budget = Budget::new(u64::MAX, rows.len());
                let got = evaluate_with(&e, &[s, s], &rows, &budget).unwrap();
                assert_eq!(got.null_count(), 0, "{f:?}");
            }
        }
        // The rewriting functions keep null for a null text.
        let e = call_of(
            ScalarFunction::RegexReplaceAll,
            vec![
                pattern,
                column(0, s),
                TypedExpr::literal(Value::string("x"), s),
            ],
            s,
        );
        agree(&e, &[s, s], &rows, EvalOptions::default());
        let budget = Budget::new(u64::MAX, rows.len());
        let got = evaluate_with(&e, &[s, s], &rows, &budget).unwrap();
        assert_eq!(got.null_count(), 1);
    }

    #[test]
    fn a_batch_budget_fails_before_the_array_is_built() {
        let s = ValueType::String;
        let rows: Vec<Vec<Value>> = (0..100).map(|_| vec![Value::string("c")]).collect();
        let kib = TypedExpr::literal(Value::String(vec![b'k'; 1024]), s);
        let e = call_of(ScalarFunction::Concat, vec![column(0, s), kib.clone()], s);
        let budget = Budget::new(50_000, rows.len());
        let err = evaluate_with(&e, &[s], &rows, &budget)
            .unwrap_err()
            .to_string();
        assert!(err.contains("batch of 100 rows"), "{err}");
        assert!(err.contains("(limit 50000)"), "{err}");
        assert!(budget.used() <= 50_000);
        // The same call within a budget that fits charges exactly its results.
        let budget = Budget::new(200_000, rows.len());
        evaluate_with(&e, &[s], &rows, &budget).unwrap();
        assert_eq!(budget.used(), 100 * 1025);
        // A projected literal is a column of copies: charged before it is built.
        let budget = Budget::new(50_000, rows.len());
        let err = evaluate_with(&kib, &[s], &rows, &budget)
            .unwrap_err()
            .to_string();
        assert!(err.contains("(limit 50000)"), "{err}");
        assert_eq!(budget.used(), 0);
        // So are the values IF chooses (it goes through the row evaluator), which its result
        // keeps as well.
        let b = ValueType::Boolean;
        let rows: Vec<Vec<Value>> = (0..100)
            .map(|_| vec![Value::string("c"), Value::Boolean(true)])
            .collect();
        let e = call_of(ScalarFunction::If, vec![column(1, b), kib, column(0, s)], s);
        agree(&e, &[s, b], &rows, EvalOptions::default());
        let budget = Budget::new(50_000, rows.len());
        let err = evaluate_with(&e, &[s, b], &rows, &budget)
            .unwrap_err()
            .to_string();
        assert!(err.contains("(limit 50000)"), "{err}");
    }

    #[test]
    fn intermediate_strings_count_against_the_budget() {
        // concat(a, a) doubled 12 times over c0: the tree computes 12 levels, each as many
        // bytes as the result, and the budget sees every one of them.
        let s = ValueType::String;
        let mut e = column(0, s);
        for _ in 0..12 {
            e = call_of(ScalarFunction::Concat, vec![e.clone(), e], s);
        }
        let rows: Vec<Vec<Value>> = (0..3).map(|_| vec![Value::string("ab")]).collect();
        agree(&e, &[s], &rows, EvalOptions::default());
        let result = 3 * 2 * 4096u64;
        let budget = Budget::new(u64::MAX, rows.len());
        evaluate_with(&e, &[s], &rows, &budget).unwrap();
        assert_eq!(budget.used(), 12 * result);
        // `||` goes through the row evaluator, whose intermediate values count as well.
        let mut e = column(0, s);
        for _ in 0..12 {
            e = TypedExpr::new(
                TExpr::Binary(
                    dynql_ql::ast::BinaryOp::Concat,
                    Box::new(e.clone()),
                    Box::new(e),
                ),
                s,
            );
        }
        agree(&e, &[s], &rows, EvalOptions::default());
        let budget = Budget::new(u64::MAX, rows.len());
        evaluate_with(&e, &[s], &rows, &budget).unwrap();
        assert_eq!(budget.used(), 12 * result);
        // So a budget of twice the result fails long before the tree is computed.
        let budget = Budget::new(2 * result, rows.len());
        assert!(evaluate_with(&e, &[s], &rows, &budget).is_err());
    }
}
