//! Evaluation on some rows only, as the row evaluator's lazy forms need: the right side of
//! AND/OR where the left side leaves a row undecided, and `if(c, a, b)`, whose `a` is
//! evaluated only where `c` is true and `b` only where it is false (so `if(x = 0, 0, 1 / x)`
//! never divides by zero). A branch that cannot fail runs over the whole batch instead, which
//! is cheaper than gathering the rows.

use std::sync::Arc;

use arrow::array::{new_null_array, Array, ArrayRef, AsArray, BooleanArray, UInt32Array};
use arrow::buffer::BooleanBuffer;
use arrow::datatypes::DataType;

use dynql_core::arrow_convert::arrow_type;
use dynql_ql::eval::EvalOptions;
use dynql_ql::texpr::TypedExpr;
use dynql_ql::Result;

use super::evaluate::{arrow_error, evaluate, infallible, Batch};

/// `e` evaluated on the rows of `input` where `rows` is set: one value per input row, null
/// where it is not set (or any value, where `e` cannot fail and ran on every row).
pub(super) fn evaluate_on(
    e: &TypedExpr,
    rows: &BooleanBuffer,
    input: Batch<'_>,
    opts: EvalOptions,
) -> Result<ArrayRef> {
    let needed = rows.count_set_bits();
    if needed == input.rows || infallible(e) {
        return evaluate(e, input, opts);
    }
    if needed == 0 {
        return Ok(new_null_array(&arrow_type(e.ty), input.rows));
    }
    let mask = BooleanArray::new(rows.clone(), None);
    let mut read = Vec::new();
    e.referenced_columns(&mut read);
    let columns: Vec<ArrayRef> = (0..input.columns.len())
        .map(|c| {
            if read.contains(&c) {
                arrow::compute::filter(input.columns[c].as_ref(), &mask).map_err(arrow_error)
            } else {
                Ok(new_null_array(&DataType::Null, needed))
            }
        })
        .collect::<Result<_>>()?;
    let subset = Batch {
        columns: &columns,
        types: input.types,
        rows: needed,
        budget: input.budget,
    };
    let evaluated = evaluate(e, subset, opts)?;
    // Back to one value per input row: null where the row was not evaluated.
    let mut next = 0u32;
    let indices: UInt32Array = (0..input.rows)
        .map(|i| {
            rows.value(i).then(|| {
                next += 1;
                next - 1
            })
        })
        .collect();
    arrow::compute::take(evaluated.as_ref(), &indices, None).map_err(arrow_error)
}

/// `if(condition, then, otherwise)` over every row: `then` where the condition is true,
/// `otherwise` where it is false, null where it is null; each branch evaluated only on its
/// rows (see the module docs).
pub(super) fn if_call(
    e: &TypedExpr,
    args: &[TypedExpr],
    input: Batch<'_>,
    opts: EvalOptions,
) -> Result<ArrayRef> {
    let condition = evaluate(&args[0], input, opts)?;
    let condition = condition.as_boolean();
    let taken = |want: bool| {
        BooleanBuffer::collect_bool(input.rows, |i| {
            condition.is_valid(i) && condition.value(i) == want
        })
    };
    let (then_rows, else_rows) = (taken(true), taken(false));
    let target = arrow_type(e.ty);
    // Both branches in the result's encoding (strings may come as views).
    let in_target = |a: ArrayRef| -> Result<ArrayRef> {
        if a.data_type() == &target {
            Ok(a)
        } else {
            arrow::compute::cast(&a, &target).map_err(arrow_error)
        }
    };
    let then = in_target(evaluate_on(&args[1], &then_rows, input, opts)?)?;
    let otherwise = in_target(evaluate_on(&args[2], &else_rows, input, opts)?)?;
    let pick = BooleanArray::new(then_rows, None);
    let picked =
        arrow::compute::kernels::zip::zip(&pick, &then, &otherwise).map_err(arrow_error)?;
    if condition.null_count() == 0 {
        return Ok(picked);
    }
    // Null where the condition is null (the branch picked there ran on every row).
    let unknown = arrow::compute::is_null(condition).map_err(arrow_error)?;
    Ok(Arc::new(
        arrow::compute::nullif(&picked, &unknown).map_err(arrow_error)?,
    ))
}

#[cfg(test)]
mod tests {
    use super::super::evaluate::tests::{agree, column};
    use super::*;
    use dynql_core::{Value, ValueType};
    use dynql_ql::ast::BinaryOp;
    use dynql_ql::functions::ScalarFunction;
    use dynql_ql::texpr::TExpr;

    fn if_of(c: TypedExpr, a: TypedExpr, b: TypedExpr) -> TypedExpr {
        let ty = a.ty;
        TypedExpr::new(TExpr::Call(ScalarFunction::If, vec![c, a, b]), ty)
    }

    fn binary(op: BinaryOp, l: TypedExpr, r: TypedExpr, ty: ValueType) -> TypedExpr {
        TypedExpr::new(TExpr::Binary(op, Box::new(l), Box::new(r)), ty)
    }

    fn int(v: i64) -> TypedExpr {
        TypedExpr::literal(Value::Int64(v), ValueType::Int64)
    }

    fn rows() -> Vec<Vec<Value>> {
        (-3i64..6)
            .map(|x| {
                vec![
                    if x == 4 { Value::Null } else { Value::Int64(x) },
                    match x % 3 {
                        0 => Value::Null,
                        1 => Value::String(format!("s{x}").into_bytes()),
                        _ => Value::String(vec![0xff, x as u8]),
                    },
                ]
            })
            .collect()
    }

    const TYPES: [ValueType; 2] = [ValueType::Int64, ValueType::String];

    #[test]
    fn if_takes_each_branch_on_its_rows_only_as_the_row_evaluator() {
        let (x, s) = (column(0, ValueType::Int64), column(1, ValueType::String));
        let is_zero = binary(BinaryOp::Eq, x.clone(), int(0), ValueType::Boolean);
        let positive = binary(BinaryOp::Greater, x.clone(), int(0), ValueType::Boolean);
        let cases = vec![
            // The division never runs where x = 0; a null x gives a null condition.
            if_of(
                is_zero.clone(),
                int(0),
                binary(BinaryOp::Divide, int(100), x.clone(), ValueType::Int64),
            ),
            // The failing branch on the other side.
            if_of(
                binary(BinaryOp::NotEq, x.clone(), int(0), ValueType::Boolean),
                binary(BinaryOp::Divide, int(100), x.clone(), ValueType::Int64),
                int(-1),
            ),
            // Strings, a null branch, nested ifs.
            if_of(
                positive.clone(),
                s.clone(),
                TypedExpr::literal(Value::Null, ValueType::String),
            ),
            if_of(
                positive.clone(),
                if_of(is_zero.clone(), int(1), x.clone()),
                binary(BinaryOp::Minus, int(0), x.clone(), ValueType::Int64),
            ),
            // A branch that fails on a row it is taken on fails the whole, as row by row.
            if_of(
                positive,
                int(1),
                binary(BinaryOp::Divide, int(1), x.clone(), ValueType::Int64),
            ),
            // Constant conditions.
            if_of(
                TypedExpr::literal(Value::Boolean(true), ValueType::Boolean),
                x.clone(),
                binary(BinaryOp::Divide, int(1), int(0), ValueType::Int64),
            ),
            if_of(
                TypedExpr::literal(Value::Null, ValueType::Boolean),
                x.clone(),
                int(7),
            ),
        ];
        for e in &cases {
            agree(e, &TYPES, &rows(), EvalOptions::default());
        }
    }
}
