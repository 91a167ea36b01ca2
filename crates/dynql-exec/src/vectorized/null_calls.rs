//! `if_null` and `coalesce` over arrays (issue 41): each row takes its first argument that is
//! not null (null when all are), as the row evaluator does, picked by validity
//! ([`super::pick`]) rather than value by value. The strings it keeps are charged to the
//! batch's budget, as the row path charges the values it returns.

use arrow::array::{new_null_array, Array, ArrayRef, AsArray};
use arrow::datatypes::DataType;

use dynql_core::arrow_convert::arrow_type;
use dynql_core::ValueType;
use dynql_ql::eval::EvalOptions;
use dynql_ql::functions::ScalarFunction;
use dynql_ql::texpr::TypedExpr;
use dynql_ql::Result;

use super::evaluate::{arrow_error, evaluate, Batch};
use super::pick::pick;

/// Whether `f(args)` runs here: `if_null` and `coalesce` whose arguments all have the result's
/// type (or are null literals).
pub(super) fn applies(f: ScalarFunction, e: &TypedExpr, args: &[TypedExpr]) -> bool {
    matches!(f, ScalarFunction::IfNull | ScalarFunction::Coalesce)
        && !args.is_empty()
        && e.ty != ValueType::Null
        && args.iter().all(|a| a.ty == e.ty || a.ty == ValueType::Null)
}

/// The first non-null argument of each row (see [`applies`]).
pub(super) fn first_not_null(
    e: &TypedExpr,
    args: &[TypedExpr],
    input: Batch<'_>,
    opts: EvalOptions,
) -> Result<ArrayRef> {
    let target = arrow_type(e.ty);
    let mut result: Option<ArrayRef> = None;
    // Every argument is evaluated on every row, as the row evaluator evaluates a call's
    // arguments before the call: one that fails, fails the query wherever it is.
    for a in args {
        let next = as_type(evaluate(a, input, opts)?, &target)?;
        result = Some(match result {
            None => next,
            Some(r) => match r.logical_nulls() {
                Some(valid) => pick(valid.inner(), &r, &next)?,
                None => r,
            },
        });
    }
    let result = result.unwrap_or_else(|| new_null_array(&target, input.rows));
    if let Some(strings) = result.as_binary_opt::<i32>() {
        let bytes = strings.value_offsets().last().copied().unwrap_or(0)
            - strings.value_offsets().first().copied().unwrap_or(0);
        input.budget.charge(bytes.max(0) as u64)?;
    }
    Ok(result)
}

/// `array` as `target` (strings come as `Binary` or `BinaryView`, a null literal as `Null`).
fn as_type(array: ArrayRef, target: &DataType) -> Result<ArrayRef> {
    if array.data_type() == target {
        return Ok(array);
    }
    arrow::compute::cast(&array, target).map_err(arrow_error)
}

#[cfg(test)]
mod tests {
    use super::super::kernel_tests::{agree, column};
    use super::*;
    use dynql_core::Value;
    use dynql_ql::ast::BinaryOp;
    use dynql_ql::texpr::TExpr;
    use proptest::prelude::*;

    fn call(f: ScalarFunction, ty: ValueType, args: Vec<TypedExpr>) -> TypedExpr {
        TypedExpr::new(TExpr::Call(f, args), ty)
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(64))]
        /// Invariant: the kernel gives what the row evaluator gives, row by row, for every
        /// type, with literals and null literals, and a failing argument fails both.
        #[test]
        fn if_null_and_coalesce_agree_with_the_row_evaluator(
            rows in proptest::collection::vec(
                (
                    proptest::option::of(-3i64..3),
                    proptest::option::of(-3i64..3),
                    proptest::option::of(proptest::collection::vec(any::<u8>(), 0..4)),
                    proptest::option::of(proptest::collection::vec(any::<u8>(), 0..4)),
                ),
                0..30,
            ),
        ) {
            let rows: Vec<Vec<Value>> = rows
                .into_iter()
                .map(|(a, b, s, t)| {
                    vec![
                        a.map_or(Value::Null, Value::Int64),
                        b.map_or(Value::Null, Value::Int64),
                        s.map_or(Value::Null, Value::String),
                        t.map_or(Value::Null, Value::String),
                    ]
                })
                .collect();
            let (i, s) = (ValueType::Int64, ValueType::String);
            let types = [i, i, s, s];
            let int = |v: i64| TypedExpr::literal(Value::Int64(v), i);
            let null = |ty| TypedExpr::literal(Value::Null, ty);
            let text = TypedExpr::literal(Value::String(b"d".to_vec()), s);
            // 10 / b fails where b is 0.
            let divide = TypedExpr::new(
                TExpr::Binary(BinaryOp::Divide, Box::new(int(10)), Box::new(column(1, i))),
                i,
            );
            use ScalarFunction as S;
            let cases = vec![
                call(S::IfNull, i, vec![column(0, i), column(1, i)]),
                call(S::IfNull, i, vec![column(0, i), int(7)]),
                call(S::IfNull, i, vec![null(i), column(1, i)]),
                call(S::IfNull, s, vec![column(2, s), column(3, s)]),
                call(S::IfNull, s, vec![column(2, s), text.clone()]),
                call(S::Coalesce, i, vec![column(0, i), column(1, i), int(9)]),
                call(S::Coalesce, s, vec![null(s), column(3, s), column(2, s)]),
                call(S::Coalesce, s, vec![column(2, s)]),
                call(S::IfNull, i, vec![column(0, i), divide]),
            ];
            for e in cases {
                let TExpr::Call(f, args) = &e.kind else { unreachable!() };
                prop_assert!(applies(*f, &e, args), "{:?}", e);
                agree(&e, &types, &rows, EvalOptions::default());
            }
        }
    }
}
