//! Comparisons over Arrow arrays with YT's semantics: null the least value (or SQL-style null
//! results with canonical null relations), NaN a comparison error, -0.0 equal to 0.0, byte
//! strings in any encoding; and BETWEEN as comparisons in YT's value order.

use std::cmp::Ordering;
use std::sync::Arc;

use arrow::array::{Array, ArrayRef, AsArray, BooleanArray};
use arrow::buffer::{BooleanBuffer, NullBuffer};
use arrow::compute::kernels::cmp;
use arrow::datatypes::{DataType, Float64Type};

use dynql_core::{Value, ValueType};
use dynql_ql::ast::BinaryOp;
use dynql_ql::eval::EvalOptions;
use dynql_ql::texpr::{TExpr, TypedExpr};
use dynql_ql::Result;

use super::evaluate::{arrow_error, evaluate, row_by_row, runtime, Batch};

/// `x BETWEEN` bounds of at most one value each, as the row evaluator compares the operand
/// with them: in YT's value order (null the least; never a null result, whatever the null
/// relations), failing on a NaN operand. Evaluated as comparisons of the evaluated operand
/// with the bounds, ANDed per range and ORed across ranges.
pub(super) fn between(
    x: &TypedExpr,
    ranges: &[(Vec<Value>, Vec<Value>)],
    input: Batch<'_>,
    opts: EvalOptions,
) -> Result<ArrayRef> {
    let operand = [evaluate(x, input, opts)?];
    let types = [x.ty];
    let column = TypedExpr::new(TExpr::Column(0), x.ty);
    let compare = |op: BinaryOp, bound: &[Value]| {
        bound.first().map(|v| {
            let bound = TypedExpr::new(TExpr::Literal(v.clone()), x.ty);
            TypedExpr::new(
                TExpr::Binary(op, Box::new(column.clone()), Box::new(bound)),
                ValueType::Boolean,
            )
        })
    };
    let join = |op: BinaryOp, parts: Vec<TypedExpr>, empty: bool| {
        parts
            .into_iter()
            .reduce(|l, r| {
                TypedExpr::new(
                    TExpr::Binary(op, Box::new(l), Box::new(r)),
                    ValueType::Boolean,
                )
            })
            .unwrap_or_else(|| {
                TypedExpr::new(TExpr::Literal(Value::Boolean(empty)), ValueType::Boolean)
            })
    };
    let inside = ranges
        .iter()
        .map(|(lo, hi)| {
            let sides = [
                compare(BinaryOp::GreaterOrEq, lo),
                compare(BinaryOp::LessOrEq, hi),
            ];
            join(BinaryOp::And, sides.into_iter().flatten().collect(), true)
        })
        .collect();
    let inside = join(BinaryOp::Or, inside, false);
    let evaluated = Batch {
        columns: &operand,
        types: &types,
        rows: input.rows,
    };
    if x.ty == ValueType::Double && has_nan(&operand[0], None) {
        return Err(runtime("Cannot compare NaN values"));
    }
    let yt_order = EvalOptions {
        canonical_null_relations: false,
    };
    evaluate(&inside, evaluated, yt_order)
}

/// Both arrays in one byte-string encoding (`BinaryView` if either is).
fn same_encoding(a: ArrayRef, b: ArrayRef) -> Result<(ArrayRef, ArrayRef)> {
    if a.data_type() == b.data_type() {
        return Ok((a, b));
    }
    let to = if a.data_type() == &DataType::BinaryView || b.data_type() == &DataType::BinaryView {
        DataType::BinaryView
    } else {
        DataType::Binary
    };
    let cast = |x: ArrayRef| -> Result<ArrayRef> {
        if x.data_type() == &to {
            Ok(x)
        } else {
            arrow::compute::cast(&x, &to).map_err(arrow_error)
        }
    };
    Ok((cast(a)?, cast(b)?))
}

/// Whether some row holds a NaN (where `rows` says to look, all rows when `None`).
fn has_nan(a: &ArrayRef, rows: Option<&NullBuffer>) -> bool {
    let a = a.as_primitive::<Float64Type>();
    // Most batches hold no NaN in any slot: one branch-free pass over the values (which the
    // compiler vectorises) decides them; only a batch with one looks at which rows count.
    if !a.values().iter().fold(false, |seen, v| seen | v.is_nan()) {
        return false;
    }
    (0..a.len()).any(|i| a.is_valid(i) && rows.is_none_or(|r| r.is_valid(i)) && a.value(i).is_nan())
}

pub(super) fn comparison(
    op: BinaryOp,
    e: &TypedExpr,
    l: &TypedExpr,
    r: &TypedExpr,
    input: Batch<'_>,
    opts: EvalOptions,
) -> Result<ArrayRef> {
    let ty = l.ty;
    if ty != r.ty
        || !matches!(
            ty,
            ValueType::Int64
                | ValueType::Uint64
                | ValueType::Double
                | ValueType::Boolean
                | ValueType::String
        )
    {
        return row_by_row(e, input, opts);
    }
    let a = evaluate(l, input, opts)?;
    let b = evaluate(r, input, opts)?;
    let both = NullBuffer::union(a.logical_nulls().as_ref(), b.logical_nulls().as_ref());
    if ty == ValueType::Double {
        // Canonical null relations give null without comparing, so only rows with two
        // values can fail there.
        let look = if opts.canonical_null_relations {
            both.as_ref()
        } else {
            None
        };
        if has_nan(&a, look) || has_nan(&b, look) {
            return Err(runtime("Cannot compare NaN values"));
        }
    }
    let result: BooleanArray = if ty == ValueType::Double {
        let values = double_comparison(
            op,
            a.as_primitive::<Float64Type>().values(),
            b.as_primitive::<Float64Type>().values(),
        );
        BooleanArray::new(values, both.clone())
    } else {
        let (a, b) = if ty == ValueType::String {
            same_encoding(a.clone(), b.clone())?
        } else {
            (a.clone(), b.clone())
        };
        let kernel = match op {
            BinaryOp::Eq => cmp::eq,
            BinaryOp::NotEq => cmp::neq,
            BinaryOp::Less => cmp::lt,
            BinaryOp::LessOrEq => cmp::lt_eq,
            BinaryOp::Greater => cmp::gt,
            _ => cmp::gt_eq,
        };
        kernel(&a, &b).map_err(arrow_error)?
    };
    if opts.canonical_null_relations || result.null_count() == 0 {
        return Ok(Arc::new(result));
    }
    // Null is the least value: decide the rows with a null operand by which sides are null.
    let test = ordering_test(op);
    let values = BooleanBuffer::collect_bool(input.rows, |i| {
        if result.is_valid(i) {
            return result.value(i);
        }
        test(b.is_null(i).cmp(&a.is_null(i)))
    });
    Ok(Arc::new(BooleanArray::new(values, None)))
}

/// Whether an ordering of two operands satisfies a comparison operator.
/// Doubles compared as YT does where neither is NaN (the caller has failed on those; a null
/// slot's result is replaced): IEEE's operators, with -0.0 equal to 0.0, in one loop per
/// operator that the compiler can vectorise.
fn double_comparison(op: BinaryOp, x: &[f64], y: &[f64]) -> BooleanBuffer {
    let n = x.len().min(y.len());
    let (x, y) = (&x[..n], &y[..n]);
    match op {
        BinaryOp::Eq => BooleanBuffer::collect_bool(n, |i| x[i] == y[i]),
        BinaryOp::NotEq => BooleanBuffer::collect_bool(n, |i| x[i] != y[i]),
        BinaryOp::Less => BooleanBuffer::collect_bool(n, |i| x[i] < y[i]),
        BinaryOp::LessOrEq => BooleanBuffer::collect_bool(n, |i| x[i] <= y[i]),
        BinaryOp::Greater => BooleanBuffer::collect_bool(n, |i| x[i] > y[i]),
        _ => BooleanBuffer::collect_bool(n, |i| x[i] >= y[i]),
    }
}

fn ordering_test(op: BinaryOp) -> fn(Ordering) -> bool {
    match op {
        BinaryOp::Eq => |o| o == Ordering::Equal,
        BinaryOp::NotEq => |o| o != Ordering::Equal,
        BinaryOp::Less => |o| o == Ordering::Less,
        BinaryOp::LessOrEq => |o| o != Ordering::Greater,
        BinaryOp::Greater => |o| o == Ordering::Greater,
        _ => |o| o != Ordering::Less,
    }
}
