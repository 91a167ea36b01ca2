//! What the kernels' tests share: value strategies with edge values for property tests,
//! and [`agree`], which evaluates an expression over arrays and row by row with the row
//! evaluator (the oracle) and checks that both give the same values or the same error.

use arrow::array::ArrayRef;
use arrow::datatypes::DataType;
use dynql_core::arrow_convert::array_value;
use dynql_core::{Value, ValueType};
use dynql_ql::ast::BinaryOp;
use dynql_ql::eval::{evaluate as evaluate_row, EvalOptions};
use dynql_ql::texpr::{TExpr, TypedExpr};
use proptest::prelude::*;

use super::budget::Budget;
use super::evaluate::{evaluate, to_array, Batch};
use dynql_ql::Result;

/// Doubles for the kernels' property tests: NaN, the infinities, both zeros, values
/// near the int64 and uint64 bounds (where casts and roundings fail), small values and
/// any bit pattern.
pub(crate) fn edge_doubles() -> impl Strategy<Value = f64> {
    prop_oneof![
        Just(f64::NAN),
        Just(f64::INFINITY),
        Just(f64::NEG_INFINITY),
        Just(-0.0),
        Just(0.0),
        Just(0.5),
        Just(-0.5),
        Just(1.0),
        Just(-1.0),
        Just(-2.5),
        Just(9.223372036854776e18),
        Just(-9.223372036854776e18),
        Just(-9.223372036854775e18),
        Just(1.8446744073709552e19),
        -1e3f64..1e3,
        any::<f64>(),
    ]
}

/// The columns of the rows [`rows`] draws: one of each type the kernels take.
pub(crate) const TYPES: [ValueType; 5] = [
    ValueType::Int64,
    ValueType::Uint64,
    ValueType::Double,
    ValueType::Boolean,
    ValueType::String,
];

/// The small domain [`value_of`] draws from, edge values included: each property test
/// (IN lists, TRANSFORM, tuple BETWEEN) picks one so that its rows hit its lists, keys or
/// bounds. Within a type, each listed value (and the range) is as likely as the others.
pub(crate) struct Domain {
    /// Int64 values drawn beside `int64`.
    pub(crate) int64_edges: &'static [i64],
    pub(crate) int64: std::ops::Range<i64>,
    /// Uint64 values drawn beside `u64::MAX`.
    pub(crate) uint64: std::ops::Range<u64>,
    pub(crate) doubles: &'static [f64],
    /// Whether one double in nine is an [`edge_doubles`] rather than one of `doubles`.
    pub(crate) with_edge_doubles: bool,
    pub(crate) strings: &'static [&'static [u8]],
    /// How many values are drawn for each null.
    pub(crate) values_per_null: u32,
}

/// A value of `ty` from `domain`, now and then null.
pub(crate) fn value_of(ty: ValueType, domain: &Domain) -> BoxedStrategy<Value> {
    use proptest::strategy::Union;
    let value = match ty {
        ValueType::Int64 => Union::new(
            domain
                .int64_edges
                .iter()
                .map(|&x| Just(x).boxed())
                .chain(std::iter::once(domain.int64.clone().boxed())),
        )
        .prop_map(Value::Int64)
        .boxed(),
        ValueType::Uint64 => prop_oneof![Just(u64::MAX), domain.uint64.clone()]
            .prop_map(Value::Uint64)
            .boxed(),
        ValueType::Double => {
            let listed = Union::new(domain.doubles.iter().map(|&x| Just(x)));
            let doubles = if domain.with_edge_doubles {
                prop_oneof![8 => listed, 1 => edge_doubles()].boxed()
            } else {
                listed.boxed()
            };
            doubles.prop_map(Value::Double).boxed()
        }
        ValueType::Boolean => any::<bool>().prop_map(Value::Boolean).boxed(),
        _ => Union::new(domain.strings.iter().map(|s| Just(s.to_vec())))
            .prop_map(Value::String)
            .boxed(),
    };
    prop_oneof![1 => Just(Value::Null), domain.values_per_null => value].boxed()
}

/// Up to 29 rows of [`TYPES`], their values from `domain`.
pub(crate) fn rows(domain: &Domain) -> impl Strategy<Value = Vec<Vec<Value>>> {
    let row: Vec<BoxedStrategy<Value>> = TYPES.iter().map(|t| value_of(*t, domain)).collect();
    proptest::collection::vec(row, 0..30)
}

/// YT's comparison operators.
pub(crate) const COMPARISONS: [BinaryOp; 6] = [
    BinaryOp::Eq,
    BinaryOp::NotEq,
    BinaryOp::Less,
    BinaryOp::LessOrEq,
    BinaryOp::Greater,
    BinaryOp::GreaterOrEq,
];

pub(crate) fn column(i: usize, ty: ValueType) -> TypedExpr {
    TypedExpr::new(TExpr::Column(i), ty)
}

/// `rows` (one column per value, of `types`) as arrays.
pub(crate) fn columns_of(types: &[ValueType], rows: &[Vec<Value>]) -> Vec<ArrayRef> {
    types
        .iter()
        .enumerate()
        .map(|(c, t)| to_array(*t, &rows.iter().map(|r| r[c].clone()).collect::<Vec<_>>()))
        .collect::<Result<_>>()
        .unwrap()
}

/// `e` evaluated over `rows` with `budget`.
pub(crate) fn evaluate_with(
    e: &TypedExpr,
    types: &[ValueType],
    rows: &[Vec<Value>],
    budget: &Budget,
) -> Result<ArrayRef> {
    let columns = columns_of(types, rows);
    let batch = Batch {
        columns: &columns,
        types,
        rows: rows.len(),
        budget,
    };
    evaluate(e, batch, EvalOptions::default())
}

/// Evaluates `e` both ways over `rows` (one column per value) and checks they agree, with
/// byte strings both as `Binary` and as views (as a query's scan gives them).
pub(crate) fn agree(e: &TypedExpr, types: &[ValueType], rows: &[Vec<Value>], opts: EvalOptions) {
    let by_row: Result<Vec<Value>> = rows.iter().map(|r| evaluate_row(e, r, opts)).collect();
    let binary = columns_of(types, rows);
    let views: Vec<ArrayRef> = binary
        .iter()
        .map(|c| match c.data_type() {
            DataType::Binary => arrow::compute::cast(c, &DataType::BinaryView).unwrap(),
            _ => c.clone(),
        })
        .collect();
    for columns in [binary, views] {
        let budget = Budget::new(u64::MAX, rows.len());
        let batch = Batch {
            columns: &columns,
            types,
            rows: rows.len(),
            budget: &budget,
        };
        let vectorised = evaluate(e, batch, opts);
        match (vectorised, &by_row) {
            (Ok(a), Ok(b)) => {
                let got: Vec<Value> = (0..rows.len())
                    .map(|i| array_value(a.as_ref(), e.ty, i))
                    .collect();
                assert_eq!(&got, b, "{e:?} over {columns:?}");
            }
            (Err(a), Err(b)) => assert_eq!(a.to_string(), b.to_string()),
            (a, b) => panic!("{e:?} over {columns:?}: vectorised {a:?}, row by row {b:?}"),
        }
    }
}
