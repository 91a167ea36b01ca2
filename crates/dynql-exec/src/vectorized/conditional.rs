//! Evaluation on some rows only, as the row evaluator's lazy forms need: the right side of
//! AND/OR where the left side leaves a row undecided, `if(c, a, b)`, whose `a` is
//! evaluated only where `c` is true and `b` only where it is false (so `if(x = 0, 0, 1 / x)`
//! never divides by zero), and searched CASE, whose each WHEN is evaluated only on the rows no
//! earlier WHEN took and each THEN only on the rows its WHEN took. A branch that cannot fail
//! runs over the whole batch instead, which is cheaper than gathering the rows.

use std::sync::Arc;

use arrow::array::{new_null_array, Array, ArrayRef, AsArray, BooleanArray, UInt32Array};
use arrow::buffer::{BooleanBuffer, NullBuffer};
use arrow::datatypes::DataType;

use dynql_core::arrow_convert::arrow_type;
use dynql_core::ValueType;
use dynql_ql::eval::EvalOptions;
use dynql_ql::texpr::TypedExpr;
use dynql_ql::Result;

use super::evaluate::{arrow_error, evaluate, infallible, Batch};
use super::pick::pick;

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
    // Back to one value per input row: null where the row was not evaluated (a null index).
    let mut indices = vec![0u32; input.rows];
    for (k, i) in rows.set_indices().enumerate() {
        indices[i] = k as u32;
    }
    let indices = UInt32Array::new(indices.into(), Some(NullBuffer::new(rows.clone())));
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
    // Whole words at a time: true and valid, false and valid.
    let values = condition.values();
    let (then_rows, else_rows) = match condition.nulls() {
        Some(valid) => (values & valid.inner(), &!values & valid.inner()),
        None => (values.clone(), !values),
    };
    let target = arrow_type(e.ty);
    let then = branch_on(&args[1], &then_rows, &target, input, opts)?;
    let otherwise = branch_on(&args[2], &else_rows, &target, input, opts)?;
    let picked = pick(&then_rows, &then, &otherwise)?;
    if condition.null_count() == 0 {
        return Ok(picked);
    }
    // Null where the condition is null (the branch picked there ran on every row).
    let unknown = arrow::compute::is_null(condition).map_err(arrow_error)?;
    Ok(Arc::new(
        arrow::compute::nullif(&picked, &unknown).map_err(arrow_error)?,
    ))
}

/// Whether a searched CASE of type `ty` runs here: boolean WHENs (a WHEN typed `null` keeps
/// the row path) and a result with an Arrow encoding that `zip` can pick from.
pub(super) fn case_applies(ty: ValueType, whens: &[(TypedExpr, TypedExpr)]) -> bool {
    ty != ValueType::Null && whens.iter().all(|(w, _)| w.ty == ValueType::Boolean)
}

/// `CASE WHEN c1 THEN r1 … [ELSE o] END` over every row (see [`case_applies`]): each WHEN
/// evaluated on the rows no earlier WHEN took (true, not null, takes a row), each THEN on
/// the rows its WHEN took, ELSE on the rest; null where nothing took a row and there is no
/// ELSE. The strings picked are charged to the budget, as the row path charges each CASE
/// result, before the result array is built.
pub(super) fn case(
    e: &TypedExpr,
    whens: &[(TypedExpr, TypedExpr)],
    otherwise: Option<&TypedExpr>,
    input: Batch<'_>,
    opts: EvalOptions,
) -> Result<ArrayRef> {
    let target = arrow_type(e.ty);
    let mut remaining = BooleanBuffer::new_set(input.rows);
    let mut branches: Vec<(BooleanBuffer, ArrayRef)> = Vec::with_capacity(whens.len());
    for (condition, result) in whens {
        if remaining.count_set_bits() == 0 {
            break;
        }
        let c = evaluate_on(condition, &remaining, input, opts)?;
        let Some(c) = c.as_boolean_opt() else {
            return Err(arrow_error(arrow::error::ArrowError::InvalidArgumentError(
                format!("CASE condition evaluated to {}", c.data_type()),
            )));
        };
        // Taken: still undecided and true (a null or false condition leaves the row).
        let truth = match c.nulls() {
            Some(n) => c.values() & n.inner(),
            None => c.values().clone(),
        };
        let taken = &remaining & &truth;
        remaining = &remaining & &!&truth;
        if taken.count_set_bits() == 0 {
            continue;
        }
        let value = branch_on(result, &taken, &target, input, opts)?;
        charge_picked(&value, &taken, input)?;
        branches.push((taken, value));
    }
    let mut picked = match otherwise {
        Some(o) if remaining.count_set_bits() > 0 => {
            let value = branch_on(o, &remaining, &target, input, opts)?;
            charge_picked(&value, &remaining, input)?;
            value
        }
        _ => new_null_array(&target, input.rows),
    };
    // The branches' rows are disjoint, so the order of picking does not matter.
    for (taken, value) in branches {
        picked = pick(&taken, &value, &picked)?;
    }
    Ok(picked)
}

/// A branch of `if` or CASE evaluated on the `rows` it decides (see [`evaluate_on`]), in the
/// result's encoding `target`: `zip` picks from arrays of one type, and strings may come as
/// views.
fn branch_on(
    branch: &TypedExpr,
    rows: &BooleanBuffer,
    target: &DataType,
    input: Batch<'_>,
    opts: EvalOptions,
) -> Result<ArrayRef> {
    let a = evaluate_on(branch, rows, input, opts)?;
    if a.data_type() == target {
        Ok(a)
    } else {
        arrow::compute::cast(&a, target).map_err(arrow_error)
    }
}

/// Charges the bytes of the strings of `a` on the `rows` a result keeps.
pub(super) fn charge_picked(a: &ArrayRef, rows: &BooleanBuffer, input: Batch<'_>) -> Result<()> {
    let Some(s) = a.as_binary_opt::<i32>() else {
        return Ok(());
    };
    let bytes: u64 = rows
        .set_indices()
        .filter(|&i| s.is_valid(i))
        .map(|i| s.value(i).len() as u64)
        .sum();
    if bytes > 0 {
        input.budget.charge(bytes)?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::super::kernel_tests::{agree, column};
    use super::*;
    use dynql_core::{Value, ValueType};
    use dynql_ql::ast::BinaryOp;
    use dynql_ql::functions::ScalarFunction;
    use dynql_ql::texpr::TExpr;
    use proptest::prelude::*;

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

    fn case_of(whens: Vec<(TypedExpr, TypedExpr)>, otherwise: Option<TypedExpr>) -> TypedExpr {
        let ty = whens[0].1.ty;
        TypedExpr::new(
            TExpr::Case {
                whens,
                otherwise: otherwise.map(Box::new),
            },
            ty,
        )
    }

    /// CASE forms over x (int64, c0) and s (string, c1): WHENs and THENs that fail (divide
    /// by zero) on rows an earlier WHEN took, null and constant WHENs, no ELSE.
    fn cases() -> Vec<TypedExpr> {
        use ValueType::{Boolean as B, Int64 as I, String as S};
        let (x, s) = (column(0, I), column(1, S));
        let cmp = |op, l: TypedExpr, r: TypedExpr| binary(op, l, r, B);
        let div = |l: TypedExpr, r: TypedExpr| binary(BinaryOp::Divide, l, r, I);
        let is_zero = cmp(BinaryOp::Eq, x.clone(), int(0));
        let null_bool = TypedExpr::literal(Value::Null, B);
        let text = |t: &str| TypedExpr::literal(Value::string(t), S);
        let concat = TypedExpr::new(
            TExpr::Call(ScalarFunction::Concat, vec![s.clone(), text("!")]),
            S,
        );
        vec![
            // The second WHEN divides only where x != 0 (or x is null: null / ... is null).
            case_of(
                vec![
                    (is_zero.clone(), int(0)),
                    (
                        cmp(BinaryOp::Greater, div(int(10), x.clone()), int(1)),
                        x.clone(),
                    ),
                ],
                Some(div(int(100), x.clone())),
            ),
            // A THEN that would fail where its WHEN is false.
            case_of(
                vec![
                    (
                        cmp(BinaryOp::NotEq, x.clone(), int(0)),
                        div(int(7), x.clone()),
                    ),
                    (TypedExpr::literal(Value::Boolean(true), B), int(-1)),
                ],
                Some(div(int(1), int(0))),
            ),
            // A branch that fails on a row it takes fails the whole.
            case_of(
                vec![(
                    cmp(BinaryOp::Less, x.clone(), int(2)),
                    div(int(3), x.clone()),
                )],
                None,
            ),
            // Null conditions, no ELSE: null where nothing takes a row.
            case_of(
                vec![
                    (null_bool.clone(), int(5)),
                    (cmp(BinaryOp::Greater, x.clone(), int(1)), x.clone()),
                ],
                None,
            ),
            // Strings: columns, computed and literal branches, a null branch.
            case_of(
                vec![
                    (cmp(BinaryOp::Greater, x.clone(), int(0)), s.clone()),
                    (is_zero, concat),
                    (
                        TypedExpr::new(TExpr::IsNull(Box::new(x.clone())), B),
                        TypedExpr::literal(Value::Null, S),
                    ),
                ],
                Some(text("else")),
            ),
            // A WHEN never reached (every row taken before it) may fail anywhere.
            case_of(
                vec![
                    (TypedExpr::literal(Value::Boolean(true), B), x.clone()),
                    (cmp(BinaryOp::Greater, div(int(1), int(0)), int(0)), int(1)),
                ],
                None,
            ),
            case_of(vec![(null_bool, s)], Some(text("z"))),
        ]
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(128))]
        /// Invariant: CASE gives what the row evaluator gives row by row, errors included,
        /// and never fails for a branch on rows it does not take.
        #[test]
        fn case_agrees_with_the_row_evaluator(
            rows in proptest::collection::vec(
                (
                    proptest::option::weighted(0.85, -3i64..4),
                    proptest::option::weighted(0.8, "[a-c]{0,3}"),
                ),
                0..24,
            ),
        ) {
            let rows: Vec<Vec<Value>> = rows
                .into_iter()
                .map(|(x, s)| {
                    vec![x.map_or(Value::Null, Value::Int64), s.map_or(Value::Null, Value::string)]
                })
                .collect();
            for e in cases() {
                let TExpr::Case { whens, .. } = &e.kind else { unreachable!() };
                prop_assert!(case_applies(e.ty, whens));
                agree(&e, &TYPES, &rows, EvalOptions::default());
            }
        }
    }

    #[test]
    fn case_kernel_skips_failing_branches_on_untaken_rows() {
        // Called directly, so this is the kernel's answer, not the fallback's.
        let rows: Vec<Vec<Value>> = [Some(0), Some(5), None, Some(-2)]
            .iter()
            .map(|x| vec![x.map_or(Value::Null, Value::Int64), Value::Null])
            .collect();
        let types = TYPES;
        let columns: Vec<ArrayRef> = (0..2)
            .map(|c| {
                let values: Vec<Value> = rows.iter().map(|r| r[c].clone()).collect();
                super::super::evaluate::to_array(types[c], &values).unwrap()
            })
            .collect();
        let budget = super::super::budget::Budget::new(u64::MAX, rows.len());
        let input = Batch {
            columns: &columns,
            types: &types,
            rows: rows.len(),
            budget: &budget,
        };
        let e = &cases()[0];
        let TExpr::Case { whens, otherwise } = &e.kind else {
            unreachable!()
        };
        let got = case(
            e,
            whens,
            otherwise.as_deref(),
            input,
            EvalOptions::default(),
        )
        .unwrap();
        let got: Vec<Option<i64>> = got
            .as_primitive::<arrow::datatypes::Int64Type>()
            .iter()
            .collect();
        // x = 0 takes the first branch; 10 / 5 > 1 the second; null x falls to ELSE (null);
        // 10 / -2 > 1 is false, so ELSE: 100 / -2.
        assert_eq!(got, [Some(0), Some(5), None, Some(-50)]);
    }
}
