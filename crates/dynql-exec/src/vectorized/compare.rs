//! Comparisons over Arrow arrays with YT's semantics: null the least value (or SQL-style null
//! results with canonical null relations), NaN a comparison error, -0.0 equal to 0.0, byte
//! strings in any encoding; and BETWEEN as comparisons in YT's value order.
//!
//! A string literal on one side is compared as one Arrow scalar, never copied per row (a
//! 300 KB literal over a batch of 8,192 rows would be 2.4 GB).

use std::cmp::Ordering;
use std::sync::Arc;

use arrow::array::{Array, ArrayRef, AsArray, BinaryArray, BinaryViewArray, BooleanArray, Datum};
use arrow::buffer::{BooleanBuffer, NullBuffer};
use arrow::compute::kernels::cmp;
use arrow::datatypes::{DataType, Float64Type};

use dynql_core::{Value, ValueType};
use dynql_ql::ast::BinaryOp;
use dynql_ql::eval::EvalOptions;
use dynql_ql::texpr::{TExpr, TypedExpr};
use dynql_ql::Result;

use super::byte_kernels::{inline_view, views_equal};
use super::evaluate::{arrow_error, evaluate, literal_array, row_by_row, runtime, Batch};

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
        budget: input.budget,
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
    if ty == ValueType::String {
        if let Some(Value::String(literal)) = r.as_literal() {
            return string_with_literal(op, l, literal, false, input, opts);
        }
        if let Some(Value::String(literal)) = l.as_literal() {
            return string_with_literal(op, r, literal, true, input, opts);
        }
    }
    if let Some(literal) = r.as_literal().filter(|v| is_value_of(v, ty)) {
        return value_with_literal(op, l, literal, false, input, opts);
    }
    if let Some(literal) = l.as_literal().filter(|v| is_value_of(v, ty)) {
        return value_with_literal(op, r, literal, true, input, opts);
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
        kernel(op)(&a, &b).map_err(arrow_error)?
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

/// Arrow's comparison kernel of a comparison operator.
fn kernel(
    op: BinaryOp,
) -> fn(&dyn Datum, &dyn Datum) -> std::result::Result<BooleanArray, arrow::error::ArrowError> {
    match op {
        BinaryOp::Eq => cmp::eq,
        BinaryOp::NotEq => cmp::neq,
        BinaryOp::Less => cmp::lt,
        BinaryOp::LessOrEq => cmp::lt_eq,
        BinaryOp::Greater => cmp::gt,
        _ => cmp::gt_eq,
    }
}

/// `x op literal` (`literal op x` when `literal_left`) for strings, the literal an Arrow scalar
/// in `x`'s encoding.
fn string_with_literal(
    op: BinaryOp,
    x: &TypedExpr,
    literal: &[u8],
    literal_left: bool,
    input: Batch<'_>,
    opts: EvalOptions,
) -> Result<ArrayRef> {
    let a = evaluate(x, input, opts)?;
    let a = match a.data_type() {
        DataType::Binary | DataType::BinaryView => a,
        _ => arrow::compute::cast(&a, &DataType::Binary).map_err(arrow_error)?,
    };
    let one: ArrayRef = if a.data_type() == &DataType::BinaryView {
        Arc::new(BinaryViewArray::from_iter_values([literal]))
    } else {
        Arc::new(BinaryArray::from_iter_values([literal]))
    };
    let scalar = arrow::array::Scalar::new(one);
    let k = kernel(op);
    let short = inline_view(literal).filter(|_| a.data_type() == &DataType::BinaryView);
    let result = match (op, short) {
        // Equality with a short literal: one comparison of views per row.
        (BinaryOp::Eq | BinaryOp::NotEq, Some(view)) => {
            let views = a.as_binary_view();
            let equal = views_equal(views, view);
            let values = match op {
                BinaryOp::Eq => equal,
                _ => !&equal,
            };
            BooleanArray::new(values, views.logical_nulls())
        }
        _ if literal_left => k(&scalar, &a).map_err(arrow_error)?,
        _ => k(&a, &scalar).map_err(arrow_error)?,
    };
    // A null `x` is the least value: below the literal on the right, above it on the left.
    let null_side = if literal_left {
        Ordering::Greater
    } else {
        Ordering::Less
    };
    Ok(with_null_as_least(result, op, null_side, opts))
}

/// Whether `v` is a non-null number or boolean of type `ty`.
fn is_value_of(v: &Value, ty: ValueType) -> bool {
    matches!(
        (v, ty),
        (Value::Int64(_), ValueType::Int64)
            | (Value::Uint64(_), ValueType::Uint64)
            | (Value::Double(_), ValueType::Double)
            | (Value::Boolean(_), ValueType::Boolean)
    )
}

/// `x op literal` (`literal op x` when `literal_left`) for a non-null number or boolean
/// literal ([`is_value_of`]): the literal compared as one value, never as a column of copies
/// (`id % 7 = 3` built a column of 3s for every batch, a fifth of a filtered count's page
/// faults). Same semantics as [`comparison`]: a NaN on either side of a row that counts fails,
/// -0.0 equals 0.0, and a null `x` is the least value unless null relations are canonical.
fn value_with_literal(
    op: BinaryOp,
    x: &TypedExpr,
    literal: &Value,
    literal_left: bool,
    input: Batch<'_>,
    opts: EvalOptions,
) -> Result<ArrayRef> {
    // `literal op x` is `x op' literal`.
    let op = if literal_left { op.mirrored() } else { op };
    let a = evaluate(x, input, opts)?;
    let nulls = a.logical_nulls();
    let result = match literal {
        Value::Double(y) => {
            // With canonical null relations only rows where `x` has a value are compared.
            let look = if opts.canonical_null_relations {
                nulls.as_ref()
            } else {
                None
            };
            let some_row_counts = look.map_or(!a.is_empty(), |n| n.null_count() < n.len());
            if (y.is_nan() && some_row_counts) || has_nan(&a, look) {
                return Err(runtime("Cannot compare NaN values"));
            }
            let values = double_with_literal(op, a.as_primitive::<Float64Type>().values(), *y);
            BooleanArray::new(values, nulls)
        }
        _ => {
            let one = literal_array(literal, x.ty, 1);
            kernel(op)(&a, &arrow::array::Scalar::new(one)).map_err(arrow_error)?
        }
    };
    // `x` is on the left now: a null `x` is below the literal.
    Ok(with_null_as_least(result, op, Ordering::Less, opts))
}

/// `result` of a comparison of a column with a literal, where only the column can be null:
/// as it is under canonical null relations (null stays null), otherwise each null slot
/// replaced by whether `null_side` (the column's null against the literal: null is the least
/// value) satisfies `op`.
fn with_null_as_least(
    result: BooleanArray,
    op: BinaryOp,
    null_side: Ordering,
    opts: EvalOptions,
) -> ArrayRef {
    if opts.canonical_null_relations || result.null_count() == 0 {
        return Arc::new(result);
    }
    let null_is = ordering_test(op)(null_side);
    let values = BooleanBuffer::collect_bool(result.len(), |i| {
        if result.is_valid(i) {
            result.value(i)
        } else {
            null_is
        }
    });
    Arc::new(BooleanArray::new(values, None))
}

/// [`double_comparison`] of `x` with one value `y`.
fn double_with_literal(op: BinaryOp, x: &[f64], y: f64) -> BooleanBuffer {
    let n = x.len();
    match op {
        BinaryOp::Eq => BooleanBuffer::collect_bool(n, |i| x[i] == y),
        BinaryOp::NotEq => BooleanBuffer::collect_bool(n, |i| x[i] != y),
        BinaryOp::Less => BooleanBuffer::collect_bool(n, |i| x[i] < y),
        BinaryOp::LessOrEq => BooleanBuffer::collect_bool(n, |i| x[i] <= y),
        BinaryOp::Greater => BooleanBuffer::collect_bool(n, |i| x[i] > y),
        _ => BooleanBuffer::collect_bool(n, |i| x[i] >= y),
    }
}

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

/// Whether an ordering of two operands satisfies a comparison operator.
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

#[cfg(test)]
mod tests {
    use super::super::budget::Budget;
    use super::super::kernel_tests::{agree, column, evaluate_with, COMPARISONS};
    use super::*;

    /// `column 0 op literal` and `literal op column 0` over string `rows`, each checked
    /// against the row evaluator with and without canonical null relations.
    fn both_ways_agree(op: BinaryOp, literal: &Value, rows: &[Vec<Value>]) -> [TypedExpr; 2] {
        both_ways_agree_as(ValueType::String, op, literal, rows)
    }

    /// [`both_ways_agree`] for a column and a literal of type `s`.
    fn both_ways_agree_as(
        s: ValueType,
        op: BinaryOp,
        literal: &Value,
        rows: &[Vec<Value>],
    ) -> [TypedExpr; 2] {
        let literal = || TypedExpr::literal(literal.clone(), s);
        let canonical = EvalOptions {
            canonical_null_relations: true,
        };
        [(column(0, s), literal()), (literal(), column(0, s))].map(|(l, r)| {
            let e = TypedExpr::new(
                TExpr::Binary(op, Box::new(l), Box::new(r)),
                ValueType::Boolean,
            );
            for opts in [EvalOptions::default(), canonical] {
                agree(&e, &[s], rows, opts);
            }
            e
        })
    }

    #[test]
    fn string_literals_are_compared_without_a_copy_per_row() {
        let s = ValueType::String;
        // Long enough that a copy per row would show (64 MiB), short enough that the row
        // evaluator, which the results are checked against, copies it quickly.
        let long = vec![b'l'; 16 << 10];
        let mut longer = long.clone();
        longer.push(b'!');
        // Equal, longer, shorter and null values: few long ones, so the column stays small.
        let rows: Vec<Vec<Value>> = (0..4096)
            .map(|i| {
                vec![match i % 512 {
                    0 => Value::String(long.clone()),
                    1 => Value::String(longer.clone()),
                    2 => Value::String(long[..1000].to_vec()),
                    i if i % 3 == 0 => Value::Null,
                    _ => Value::string("m"),
                }]
            })
            .collect();
        let literal = Value::String(long.clone());
        for op in COMPARISONS {
            for e in both_ways_agree(op, &literal, &rows) {
                // Nothing is charged: the literal is not copied.
                let budget = Budget::new(1, rows.len());
                evaluate_with(&e, &[s], &rows, &budget).unwrap();
                assert_eq!(budget.used(), 0);
            }
        }
        // BETWEEN compares with its bounds the same way.
        let e = TypedExpr::new(
            TExpr::Between {
                operands: vec![column(0, s)],
                ranges: vec![(vec![Value::string("a")], vec![Value::String(long.clone())])],
            },
            ValueType::Boolean,
        );
        agree(&e, &[s], &rows, EvalOptions::default());
        let budget = Budget::new(1, rows.len());
        evaluate_with(&e, &[s], &rows, &budget).unwrap();
        assert_eq!(budget.used(), 0);
    }

    #[test]
    fn number_and_boolean_literals_compare_as_one_value_as_the_row_evaluator_says() {
        let ops = COMPARISONS;
        let one = |v: Value| vec![v];
        let cases: Vec<(ValueType, Vec<Vec<Value>>, Vec<Value>)> = vec![
            (
                ValueType::Int64,
                [i64::MIN, -1, 0, 3, 7, i64::MAX]
                    .map(|v| one(Value::Int64(v)))
                    .into_iter()
                    .chain([one(Value::Null)])
                    .collect(),
                [i64::MIN, 0, 3, i64::MAX].map(Value::Int64).to_vec(),
            ),
            (
                ValueType::Uint64,
                [0, 1, 3, u64::MAX]
                    .map(|v| one(Value::Uint64(v)))
                    .into_iter()
                    .chain([one(Value::Null)])
                    .collect(),
                [0, 3, u64::MAX].map(Value::Uint64).to_vec(),
            ),
            (
                ValueType::Double,
                [-1.5, -0.0, 0.0, 2.5, f64::INFINITY, f64::NEG_INFINITY]
                    .map(|v| one(Value::Double(v)))
                    .into_iter()
                    .chain([one(Value::Null)])
                    .collect(),
                [0.0, -0.0, 2.5, f64::INFINITY, f64::NAN]
                    .map(Value::Double)
                    .to_vec(),
            ),
            (
                ValueType::Boolean,
                vec![
                    one(Value::Boolean(true)),
                    one(Value::Null),
                    one(Value::Boolean(false)),
                ],
                vec![Value::Boolean(false), Value::Boolean(true)],
            ),
        ];
        for (ty, rows, literals) in &cases {
            for literal in literals {
                for op in ops {
                    for e in both_ways_agree_as(*ty, op, literal, rows) {
                        if !matches!(literal, Value::Double(v) if v.is_nan()) {
                            // Nothing is charged: the literal is not copied per row.
                            let budget = Budget::new(1, rows.len());
                            evaluate_with(&e, &[*ty], rows, &budget).unwrap();
                            assert_eq!(budget.used(), 0);
                        }
                    }
                }
            }
        }
        // A NaN value fails against a literal, and a NaN literal against null rows only where
        // null rows are compared (not with canonical null relations).
        let nan_rows = vec![one(Value::Double(1.0)), one(Value::Double(f64::NAN))];
        let null_rows = vec![one(Value::Null), one(Value::Null)];
        for op in ops {
            both_ways_agree_as(ValueType::Double, op, &Value::Double(0.0), &nan_rows);
            both_ways_agree_as(ValueType::Double, op, &Value::Double(f64::NAN), &null_rows);
        }
    }

    #[test]
    fn short_literals_equal_views_as_the_row_evaluator_says() {
        let rows: Vec<Vec<Value>> = ["", "a", "alpha", "alphabet soup!", "alpha\0", "beta"]
            .iter()
            .map(|v| vec![Value::string(*v)])
            .chain([vec![Value::Null]])
            .collect();
        for literal in ["alpha", "", "alphabet soup!"] {
            for op in [BinaryOp::Eq, BinaryOp::NotEq] {
                both_ways_agree(op, &Value::string(literal), &rows);
            }
        }
    }

    #[test]
    fn a_literal_compares_with_a_column_of_string_views() {
        let views: ArrayRef = Arc::new(BinaryViewArray::from(vec![
            Some(b"b".as_slice()),
            None,
            Some(b"a long string past the view's inline twelve bytes".as_slice()),
        ]));
        let budget = Budget::new(0, 3);
        let input = Batch {
            columns: &[views],
            types: &[ValueType::String],
            rows: 3,
            budget: &budget,
        };
        let e = TypedExpr::new(
            TExpr::Binary(
                BinaryOp::Greater,
                Box::new(column(0, ValueType::String)),
                Box::new(TypedExpr::literal(Value::string("a"), ValueType::String)),
            ),
            ValueType::Boolean,
        );
        let got = evaluate(&e, input, EvalOptions::default()).unwrap();
        let got: Vec<Option<bool>> = got.as_boolean().iter().collect();
        assert_eq!(got, [Some(true), Some(false), Some(true)]);
    }
}
