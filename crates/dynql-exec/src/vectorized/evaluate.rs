//! Typed expressions evaluated over Arrow arrays, with exactly the semantics of the row
//! evaluator ([`dynql_ql::eval`]): wrapping integer arithmetic, YT's division errors, null as
//! the minimum in comparisons (SQL-style null results with canonical null relations), NaN
//! comparison errors, Kleene AND/OR whose right side is evaluated only on the rows the left
//! side leaves undecided (so `x != 0 and 1 / x > 0` never divides by zero), and -0.0 equal
//! to 0.0.
//!
//! The hot forms (columns, literals, comparisons and single-column BETWEEN ([`super::compare`]),
//! arithmetic (integers: [`super::integer_arithmetic`]), AND/OR/NOT, IS NULL, compiled LIKE, `is_prefix`, IN with a literal list
//! ([`super::in_list`]), `if` ([`super::conditional`]), regex functions of a literal pattern
//! ([`super::regex_calls`]), the string functions `is_substr`, `is_prefix`, `lower`,
//! `length`, `concat` ([`super::string_calls`]), `if_null` and `coalesce`
//! ([`super::null_calls`]), numeric casts, `abs`, `is_nan`, `is_finite`, `is_inf`
//! ([`super::numeric_calls`]), the timestamp floors and `format_timestamp` of a literal
//! format ([`super::timestamp_calls`]), the math functions ([`super::math_calls`]), searched
//! CASE ([`super::conditional`]), TRANSFORM ([`super::transform`]), tuple BETWEEN
//! ([`super::between`]), the parses, casts from `any` and other conversions
//! ([`super::conversion_calls`]), the YSON functions, `greatest` of strings and `regex_escape`
//! ([`super::yson_calls`])) run as array kernels. Every other form is evaluated row by row
//! with the row evaluator itself over the batch, and scalar functions row by row on their
//! vectorised arguments ([`super::calls`]): slower, never different.
//!
//! Literals stay single values where they meet a column (comparisons, function arguments);
//! only a literal that is itself a result becomes a column of copies. The strings an
//! evaluation computes are charged to the batch's [`Budget`] before they are kept.

use std::sync::Arc;

use arrow::array::{
    new_null_array, Array, ArrayRef, AsArray, BinaryArray, BooleanArray, Float64Array, Int64Array,
    PrimitiveArray, UInt64Array,
};
use arrow::buffer::BooleanBuffer;
use arrow::compute::kernels::boolean as kleene;
use arrow::datatypes::{ArrowPrimitiveType, DataType, Float64Type, Int64Type, UInt64Type};

use dynql_core::arrow_convert::{array_value, arrow_type, values_to_array};

use super::between as tuple_between;
use super::budget::Budget;
use super::byte_kernels::{bytes_predicate, starts_with};
use super::calls::{call, farm_hash_call, hashable};
use super::compare::{between, comparison};
use super::conditional::{case, case_applies, evaluate_on, if_call};
use super::conversion_calls;
use super::in_list;
use super::integer_arithmetic::{integer_op, integer_op_by_literal};
use super::math_calls;
use super::null_calls;
use super::numeric_calls;
use super::regex_calls;
use super::string_calls;
use super::timestamp_calls;
use super::transform;
use super::yson_calls;
use dynql_core::{Value, ValueType};
use dynql_ql::ast::{BinaryOp, UnaryOp};
use dynql_ql::eval::{evaluate_metered, EvalOptions};
use dynql_ql::functions::ScalarFunction;
use dynql_ql::texpr::{TExpr, TypedExpr};
use dynql_ql::value_limits::value_bytes;
use dynql_ql::{Error, Result};

/// The input of an evaluation: the arrays of one batch with their YT types, each array in
/// its type's Arrow encoding ([`arrow_type`], or `BinaryView` for byte strings). Columns an
/// expression does not read may be placeholders of any type.
#[derive(Clone, Copy)]
pub(crate) struct Batch<'a> {
    pub columns: &'a [ArrayRef],
    pub types: &'a [ValueType],
    pub rows: usize,
    /// What the expression may still compute over the batch (shared by the subsets of rows
    /// that AND/OR evaluate their right side on).
    pub budget: &'a Budget,
}

pub(super) fn runtime(message: impl Into<String>) -> Error {
    Error::Runtime(message.into())
}

pub(super) fn arrow_error(e: arrow::error::ArrowError) -> Error {
    runtime(e.to_string())
}

/// Evaluates `e` over every row of `input`; the array has `input.rows` values. String results
/// may come as `Binary` or `BinaryView`.
///
/// # Errors
/// The runtime errors the row evaluator gives for some row of the batch.
pub(crate) fn evaluate(e: &TypedExpr, input: Batch<'_>, opts: EvalOptions) -> Result<ArrayRef> {
    match &e.kind {
        TExpr::Literal(v) => literal(v, e.ty, input),
        TExpr::Column(i) => Ok(input.columns[*i].clone()),
        TExpr::IsNull(x) => {
            let a = evaluate(x, input, opts)?;
            Ok(Arc::new(arrow::compute::is_null(&a).map_err(arrow_error)?))
        }
        TExpr::Unary(op, x) => unary(*op, e, x, input, opts),
        TExpr::Binary(BinaryOp::And, l, r) => logical(true, l, r, input, opts),
        TExpr::Binary(BinaryOp::Or, l, r) => logical(false, l, r, input, opts),
        TExpr::Binary(op, l, r) if op.is_comparison() => comparison(*op, e, l, r, input, opts),
        TExpr::Binary(op, l, r) => arithmetic(*op, e, l, r, input, opts),
        TExpr::Like {
            operand,
            compiled: Some(re),
            negated,
            ..
        } => {
            let s = evaluate(operand, input, opts)?;
            Ok(bytes_predicate(&s, |b| re.is_match(b) != *negated))
        }
        TExpr::In {
            operands,
            set,
            negated,
        } if in_list::applies(operands) => in_list::in_list(operands, set, *negated, input, opts),
        // One column compared with bounds of its own type (or null) as comparisons; any other
        // BETWEEN in YT's value order, tuple by tuple.
        TExpr::Between { operands, ranges }
            if operands.len() == 1
                && ranges.iter().all(|(l, h)| {
                    l.len() <= 1
                        && h.len() <= 1
                        && l.iter()
                            .chain(h)
                            .all(|v| v.is_null() || v.value_type() == operands[0].ty)
                }) =>
        {
            between(&operands[0], ranges, input, opts)
        }
        TExpr::Between { operands, ranges } if tuple_between::applies(operands) => {
            tuple_between::tuple_between(operands, ranges, input, opts)
        }
        TExpr::Call(ScalarFunction::IsPrefix, args) if args[0].as_literal().is_some() => {
            let Some(Value::String(prefix)) = args[0].as_literal() else {
                return Ok(new_null_array(&DataType::Boolean, input.rows));
            };
            let s = evaluate(&args[1], input, opts)?;
            Ok(starts_with(&s, prefix))
        }
        TExpr::Call(ScalarFunction::FarmHash, args) if args.iter().all(|a| hashable(a.ty)) => {
            farm_hash_call(args, input, opts)
        }
        TExpr::Call(f, args) if regex_calls::applies(*f, args) => {
            regex_calls::regex_call(*f, args, input, opts)
        }
        TExpr::Call(f, args) if numeric_calls::applies(*f, args) => {
            numeric_calls::numeric_call(*f, e, &args[0], input, opts)
        }
        TExpr::Call(f, args) if conversion_calls::applies(*f, args) => {
            conversion_calls::conversion_call(*f, e, args, input, opts)
        }
        TExpr::Call(f, args) if null_calls::applies(*f, e, args) => {
            null_calls::first_not_null(e, args, input, opts)
        }
        TExpr::Call(f, args) if string_calls::applies(*f, args) => {
            string_calls::string_call(*f, args, input, opts)
        }
        TExpr::Call(f, args) if timestamp_calls::applies(*f, args) => {
            timestamp_calls::timestamp_call(*f, e, args, input, opts)
        }
        TExpr::Call(f, args) if math_calls::applies(*f, e, args) => {
            math_calls::math_call(*f, e, args, input, opts)
        }
        TExpr::Call(f, args) if yson_calls::applies(*f, e, args) => {
            yson_calls::yson_call(*f, e, args, input, opts)
        }
        TExpr::Call(ScalarFunction::If, args) if args.len() == 3 => if_call(e, args, input, opts),
        TExpr::Call(f, args) if *f != ScalarFunction::If => call(*f, e, args, input, opts),
        TExpr::Case { whens, otherwise } if case_applies(e.ty, whens) => {
            case(e, whens, otherwise.as_deref(), input, opts)
        }
        TExpr::Transform {
            operands,
            map,
            default,
        } if transform::applies(e.ty, operands) => {
            transform::transform(e, operands, map, default.as_deref(), input, opts)
        }
        _ => row_by_row(e, input, opts),
    }
}

/// A literal as the column of the batch's rows, charged to its budget before it is built.
fn literal(v: &Value, ty: ValueType, input: Batch<'_>) -> Result<ArrayRef> {
    let bytes = (value_bytes(v) as u64).saturating_mul(input.rows as u64);
    if bytes > 0 {
        input.budget.charge(bytes)?;
    }
    Ok(literal_array(v, ty, input.rows))
}

/// An array of `rows` copies of a literal (uncharged: for a few rows, or once charged).
pub(super) fn literal_array(v: &Value, ty: ValueType, rows: usize) -> ArrayRef {
    match v {
        Value::Int64(x) => Arc::new(Int64Array::from_value(*x, rows)),
        Value::Uint64(x) => Arc::new(UInt64Array::from_value(*x, rows)),
        Value::Double(x) => Arc::new(Float64Array::from_value(*x, rows)),
        Value::Boolean(x) => Arc::new(BooleanArray::new(
            if *x {
                BooleanBuffer::new_set(rows)
            } else {
                BooleanBuffer::new_unset(rows)
            },
            None,
        )),
        Value::String(b) | Value::Any(b) => Arc::new(BinaryArray::from_iter_values(
            std::iter::repeat_n(b.as_slice(), rows),
        )),
        Value::Null => new_null_array(&arrow_type(ty), rows),
    }
}

/// Values of one type as an array.
pub(super) fn to_array(ty: ValueType, values: &[Value]) -> Result<ArrayRef> {
    let refs: Vec<&Value> = values.iter().collect();
    values_to_array(ty, &refs).map_err(arrow_error)
}

/// `e` evaluated by the row evaluator on each row of the batch (the exact fallback), every
/// string it computes charged to the budget, intermediate ones included.
pub(super) fn row_by_row(e: &TypedExpr, input: Batch<'_>, opts: EvalOptions) -> Result<ArrayRef> {
    let mut read = Vec::new();
    e.referenced_columns(&mut read);
    let mut row = vec![Value::Null; input.columns.len()];
    let mut out = Vec::with_capacity(input.rows);
    let mut meter = |v: &Value| input.budget.charge_value(v);
    // The meter sees the result when a function or `||` computes it; any other result (a
    // column's or literal's value chosen by CASE or IF) is charged here, as it is kept too.
    let result_metered = match &e.kind {
        TExpr::Call(f, _) => *f != ScalarFunction::If,
        TExpr::Binary(op, _, _) => !matches!(op, BinaryOp::And | BinaryOp::Or),
        _ => false,
    };
    for i in 0..input.rows {
        for &c in &read {
            row[c] = array_value(input.columns[c].as_ref(), input.types[c], i);
        }
        let v = evaluate_metered(e, &row, opts, &mut meter)?;
        if !result_metered {
            input.budget.charge_value(&v)?;
        }
        out.push(v);
    }
    to_array(e.ty, &out)
}

fn unary(
    op: UnaryOp,
    e: &TypedExpr,
    x: &TypedExpr,
    input: Batch<'_>,
    opts: EvalOptions,
) -> Result<ArrayRef> {
    let a = evaluate(x, input, opts)?;
    Ok(match (op, x.ty) {
        (UnaryOp::Plus, _) => a,
        (UnaryOp::Not, ValueType::Boolean) => {
            Arc::new(arrow::compute::not(a.as_boolean()).map_err(arrow_error)?)
        }
        (UnaryOp::Minus, ValueType::Int64) => map::<Int64Type>(&a, i64::wrapping_neg),
        (UnaryOp::Minus, ValueType::Uint64) => map::<UInt64Type>(&a, u64::wrapping_neg),
        (UnaryOp::Minus, ValueType::Double) => map::<Float64Type>(&a, |v| -v),
        (UnaryOp::BitNot, ValueType::Int64) => map::<Int64Type>(&a, |v| !v),
        (UnaryOp::BitNot, ValueType::Uint64) => map::<UInt64Type>(&a, |v| !v),
        _ => return row_by_row(e, input, opts),
    })
}

fn map<T: ArrowPrimitiveType>(a: &ArrayRef, f: impl Fn(T::Native) -> T::Native) -> ArrayRef {
    let a: PrimitiveArray<T> = a.as_primitive::<T>().unary(f);
    Arc::new(a)
}

/// True when evaluating `e` cannot fail, so that it may run on rows whose result AND/OR
/// ignores (conservative: false for anything that divides, converts or compares doubles).
pub(super) fn infallible(e: &TypedExpr) -> bool {
    let children = || e.children().into_iter().all(infallible);
    match &e.kind {
        TExpr::Literal(_) | TExpr::Column(_) => true,
        TExpr::IsNull(_) => children(),
        // Only a NaN operand fails the lookup (`any` is left out, as everywhere here).
        TExpr::In { operands, .. } => {
            operands
                .iter()
                .all(|o| !matches!(o.ty, ValueType::Double | ValueType::Any))
                && children()
        }
        TExpr::Unary(_, x) => x.ty != ValueType::Any && children(),
        TExpr::Binary(op, l, r) => {
            let safe_op = match op {
                BinaryOp::And | BinaryOp::Or => true,
                BinaryOp::Divide | BinaryOp::Modulo => l.ty == r.ty && safe_divisor(r),
                op if op.is_comparison() => !matches!(l.ty, ValueType::Double | ValueType::Any),
                BinaryOp::Concat => false,
                _ => matches!(l.ty, ValueType::Int64 | ValueType::Uint64),
            };
            safe_op && children()
        }
        TExpr::Like {
            compiled: Some(_),
            operand,
            ..
        } => infallible(operand),
        TExpr::Call(ScalarFunction::IsPrefix, args) => args.iter().all(infallible),
        _ => false,
    }
}

/// Whether integer division or modulo by `divisor` cannot fail: a literal that is neither 0
/// nor -1 (`INT_MIN / -1` fails, as in YT).
fn safe_divisor(divisor: &TypedExpr) -> bool {
    match &divisor.kind {
        TExpr::Literal(Value::Int64(d)) => *d != 0 && *d != -1,
        TExpr::Literal(Value::Uint64(d)) => *d != 0,
        _ => false,
    }
}

/// Kleene AND (`and`) or OR over two boolean expressions; the right one is evaluated only
/// on the rows the left one does not decide (false for AND, true for OR), as the row
/// evaluator does, unless it cannot fail.
fn logical(
    and: bool,
    l: &TypedExpr,
    r: &TypedExpr,
    input: Batch<'_>,
    opts: EvalOptions,
) -> Result<ArrayRef> {
    let left = evaluate(l, input, opts)?;
    let left = left.as_boolean();
    // Undecided: null, or true for AND (false for OR); a word of rows at a time.
    let open = if and {
        left.values().clone()
    } else {
        !left.values()
    };
    let undecided = match left.nulls() {
        Some(valid) => &open | &!valid.inner(),
        None => open,
    };
    let right = evaluate_on(r, &undecided, input, opts)?;
    let right = right.as_boolean();
    let result = if and {
        kleene::and_kleene(left, right)
    } else {
        kleene::or_kleene(left, right)
    };
    Ok(Arc::new(result.map_err(arrow_error)?))
}

fn arithmetic(
    op: BinaryOp,
    e: &TypedExpr,
    l: &TypedExpr,
    r: &TypedExpr,
    input: Batch<'_>,
    opts: EvalOptions,
) -> Result<ArrayRef> {
    use BinaryOp::*;
    let integer = matches!(
        op,
        Plus | Minus | Multiply | Divide | Modulo | BitAnd | BitOr | LeftShift | RightShift
    );
    match (l.ty, r.ty) {
        (ValueType::Int64, ValueType::Int64) if integer => {
            let a = evaluate(l, input, opts)?;
            if let TExpr::Literal(Value::Int64(q)) = &r.kind {
                return integer_op_by_literal::<Int64Type>(op, &a, *q, Some(i64::MIN), |y| {
                    y as u32
                });
            }
            let b = evaluate(r, input, opts)?;
            integer_op::<Int64Type>(op, &a, &b, Some(i64::MIN), |y| y as u32)
        }
        (ValueType::Uint64, ValueType::Uint64) if integer => {
            let a = evaluate(l, input, opts)?;
            if let TExpr::Literal(Value::Uint64(q)) = &r.kind {
                return integer_op_by_literal::<UInt64Type>(op, &a, *q, None, |y| y as u32);
            }
            let b = evaluate(r, input, opts)?;
            integer_op::<UInt64Type>(op, &a, &b, None, |y| y as u32)
        }
        (ValueType::Double, ValueType::Double)
            if matches!(op, Plus | Minus | Multiply | Divide) =>
        {
            let a = evaluate(l, input, opts)?;
            let a = a.as_primitive::<Float64Type>();
            // One loop per operator, so that each inlines its instruction (a function
            // pointer would be a call per row).
            macro_rules! each_operator {
                ($kernel:ident) => {
                    match op {
                        Plus => $kernel!(|x: f64, y: f64| x + y),
                        Minus => $kernel!(|x: f64, y: f64| x - y),
                        Multiply => $kernel!(|x: f64, y: f64| x * y),
                        _ => $kernel!(|x: f64, y: f64| x / y),
                    }
                };
            }
            // By a literal (`amount / 3.0`): over the left array alone.
            if let TExpr::Literal(Value::Double(q)) = &r.kind {
                let q = *q;
                macro_rules! by_literal {
                    ($f:expr) => {{
                        let f = $f;
                        a.unary::<_, Float64Type>(|x| f(x, q))
                    }};
                }
                return Ok(Arc::new(each_operator!(by_literal)));
            }
            let b = evaluate(r, input, opts)?;
            let b = b.as_primitive::<Float64Type>();
            macro_rules! by_column {
                ($f:expr) => {
                    arrow::compute::binary::<_, _, _, Float64Type>(a, b, $f)
                };
            }
            let out: Float64Array = each_operator!(by_column).map_err(arrow_error)?;
            Ok(Arc::new(out))
        }
        _ => row_by_row(e, input, opts),
    }
}

#[cfg(test)]
mod tests {
    use super::super::kernel_tests::{agree, column, evaluate_with, COMPARISONS};
    use super::*;

    fn binary(op: BinaryOp, l: TypedExpr, r: TypedExpr, ty: ValueType) -> TypedExpr {
        TypedExpr::new(TExpr::Binary(op, Box::new(l), Box::new(r)), ty)
    }

    #[test]
    fn comparisons_order_null_first_and_zeroes_equal() {
        let i = ValueType::Int64;
        let rows: Vec<Vec<Value>> = [
            (None, None),
            (None, Some(1)),
            (Some(1), None),
            (Some(2), Some(1)),
        ]
        .iter()
        .map(|(a, b)| {
            vec![
                a.map_or(Value::Null, Value::Int64),
                b.map_or(Value::Null, Value::Int64),
            ]
        })
        .collect();
        for op in COMPARISONS {
            let e = binary(op, column(0, i), column(1, i), ValueType::Boolean);
            agree(&e, &[i, i], &rows, EvalOptions::default());
            let canonical = EvalOptions {
                canonical_null_relations: true,
            };
            agree(&e, &[i, i], &rows, canonical);
        }
        let d = ValueType::Double;
        let e = binary(BinaryOp::Eq, column(0, d), column(1, d), ValueType::Boolean);
        agree(
            &e,
            &[d, d],
            &[vec![Value::Double(-0.0), Value::Double(0.0)]],
            EvalOptions::default(),
        );
        agree(
            &e,
            &[d, d],
            &[vec![Value::Double(f64::NAN), Value::Null]],
            EvalOptions::default(),
        );
    }

    #[test]
    fn between_orders_null_least_and_fails_on_nan() {
        let between = |ty: ValueType, ranges: Vec<(Vec<Value>, Vec<Value>)>| {
            TypedExpr::new(
                TExpr::Between {
                    operands: vec![column(0, ty)],
                    ranges,
                },
                ValueType::Boolean,
            )
        };
        let canonical = EvalOptions {
            canonical_null_relations: true,
        };
        let i = ValueType::Int64;
        let ints: Vec<Vec<Value>> = [None, Some(-3), Some(0), Some(4), Some(9)]
            .iter()
            .map(|v| vec![v.map_or(Value::Null, Value::Int64)])
            .collect();
        let (n, v) = (Value::Null, Value::Int64);
        for ranges in [
            vec![(vec![v(-3)], vec![v(4)])],
            vec![(vec![n.clone()], vec![v(0)])],
            vec![(vec![], vec![v(0)]), (vec![v(9)], vec![])],
            vec![(vec![v(5)], vec![v(1)])],
            vec![(vec![], vec![])],
            vec![],
        ] {
            for opts in [EvalOptions::default(), canonical] {
                agree(&between(i, ranges.clone()), &[i], &ints, opts);
            }
        }
        let s = ValueType::String;
        let strings: Vec<Vec<Value>> = [None, Some("a"), Some("ab"), Some("b")]
            .iter()
            .map(|v| vec![v.map_or(Value::Null, |x| Value::String(x.into()))])
            .collect();
        let text = |x: &str| Value::String(x.into());
        let e = between(s, vec![(vec![text("a")], vec![text("ab")])]);
        agree(&e, &[s], &strings, EvalOptions::default());
        let d = ValueType::Double;
        let e = between(
            d,
            vec![(vec![Value::Double(-0.0)], vec![Value::Double(1.5)])],
        );
        let doubles = vec![
            vec![Value::Double(0.0)],
            vec![Value::Null],
            vec![Value::Double(2.0)],
        ];
        agree(&e, &[d], &doubles, EvalOptions::default());
        agree(&e, &[d], &[vec![Value::Double(f64::NAN)]], canonical);
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(128))]
        /// Invariant: double arithmetic of two columns, and of a column by a literal, is the
        /// row evaluator's (NaN, infinities, both zeros and nulls included).
        #[test]
        fn double_arithmetic_agrees_with_the_row_evaluator(
            rows in proptest::collection::vec(
                (
                    proptest::option::weighted(0.9, super::super::kernel_tests::edge_doubles()),
                    proptest::option::weighted(0.9, super::super::kernel_tests::edge_doubles()),
                ),
                0..24,
            ),
            q in super::super::kernel_tests::edge_doubles(),
        ) {
            let d = ValueType::Double;
            let rows: Vec<Vec<Value>> = rows
                .into_iter()
                .map(|(x, y)| {
                    vec![x.map_or(Value::Null, Value::Double), y.map_or(Value::Null, Value::Double)]
                })
                .collect();
            let literal = TypedExpr::literal(Value::Double(q), d);
            for op in [BinaryOp::Plus, BinaryOp::Minus, BinaryOp::Multiply, BinaryOp::Divide] {
                for (l, r) in [(column(0, d), column(1, d)), (column(0, d), literal.clone())] {
                    agree(&binary(op, l, r, d), &[d, d], &rows, EvalOptions::default());
                }
            }
        }
    }

    #[test]
    fn division_errors_and_wrapping_match_the_row_evaluator() {
        let i = ValueType::Int64;
        let rows = vec![
            vec![Value::Int64(i64::MAX), Value::Int64(1)],
            vec![Value::Int64(-17), Value::Int64(5)],
            vec![Value::Null, Value::Int64(0)],
        ];
        for op in [
            BinaryOp::Plus,
            BinaryOp::Modulo,
            BinaryOp::Divide,
            BinaryOp::LeftShift,
        ] {
            agree(
                &binary(op, column(0, i), column(1, i), i),
                &[i, i],
                &rows,
                EvalOptions::default(),
            );
        }
        let zero = vec![vec![Value::Int64(1), Value::Int64(0)]];
        agree(
            &binary(BinaryOp::Divide, column(0, i), column(1, i), i),
            &[i, i],
            &zero,
            EvalOptions::default(),
        );
        let min = vec![vec![Value::Int64(i64::MIN), Value::Int64(-1)]];
        agree(
            &binary(BinaryOp::Modulo, column(0, i), column(1, i), i),
            &[i, i],
            &min,
            EvalOptions::default(),
        );
    }

    #[test]
    fn and_does_not_evaluate_its_right_side_where_the_left_is_false() {
        let i = ValueType::Int64;
        let b = ValueType::Boolean;
        // x != 0 and 10 / x > 1
        let nonzero = binary(
            BinaryOp::NotEq,
            column(0, i),
            TypedExpr::literal(Value::Int64(0), i),
            b,
        );
        let quotient = binary(
            BinaryOp::Greater,
            binary(
                BinaryOp::Divide,
                TypedExpr::literal(Value::Int64(10), i),
                column(0, i),
                i,
            ),
            TypedExpr::literal(Value::Int64(1), i),
            b,
        );
        let e = binary(BinaryOp::And, nonzero, quotient, b);
        let rows: Vec<Vec<Value>> = [0, 5, 20, 0, 2]
            .iter()
            .map(|x| vec![Value::Int64(*x)])
            .collect();
        agree(&e, &[i], &rows, EvalOptions::default());
        let mut with_null = rows.clone();
        with_null.push(vec![Value::Null]);
        agree(&e, &[i], &with_null, EvalOptions::default());
    }

    #[test]
    fn like_matches_characters_on_both_paths() {
        use dynql_ql::ast::LikeKind;
        use dynql_ql::eval::compile_like;
        let s = ValueType::String;
        let rows: Vec<Vec<Value>> = ["é", "ab", "日本", "ÉTÉ", "été"]
            .iter()
            .map(|t| vec![Value::string(*t), Value::string("_")])
            .chain([vec![Value::Null, Value::string("_")]])
            .collect();
        let like = |pattern: TypedExpr, kind, negated| {
            let compiled = match pattern.as_literal() {
                Some(Value::String(p)) => Some(Arc::new(compile_like(p, None, kind).unwrap())),
                _ => None,
            };
            TypedExpr::new(
                TExpr::Like {
                    operand: Box::new(column(0, s)),
                    pattern: Box::new(pattern),
                    escape: None,
                    kind,
                    negated,
                    compiled,
                },
                ValueType::Boolean,
            )
        };
        let budget = Budget::new(u64::MAX, rows.len());
        let got = |e: &TypedExpr| {
            let a = evaluate_with(e, &[s, s], &rows, &budget).unwrap();
            (0..rows.len())
                .map(|i| array_value(a.as_ref(), ValueType::Boolean, i))
                .collect::<Vec<_>>()
        };
        let (t, f, n) = (Value::Boolean(true), Value::Boolean(false), Value::Null);
        // `_` is one character, whether the pattern is a literal (compiled) or a column.
        for pattern in [TypedExpr::literal(Value::string("_"), s), column(1, s)] {
            let e = like(pattern, LikeKind::Like, false);
            agree(&e, &[s, s], &rows, EvalOptions::default());
            assert_eq!(
                got(&e),
                [
                    t.clone(),
                    f.clone(),
                    f.clone(),
                    f.clone(),
                    f.clone(),
                    n.clone()
                ]
            );
        }
        let e = like(
            TypedExpr::literal(Value::string("été"), s),
            LikeKind::Ilike,
            true,
        );
        agree(&e, &[s, s], &rows, EvalOptions::default());
        assert_eq!(got(&e), [t.clone(), t.clone(), t.clone(), f.clone(), f, n]);
    }
}
