//! DataFusion's dynamic filters as a scan's row group filter: the threshold a top-k sort
//! (`ORDER BY … LIMIT`) pushes into [`super::table_scan::TabletScanExec`] grows tighter as
//! rows come, and a clean row group whose statistics show no row can pass it is not decoded.
//!
//! The filters are read by an interpreter of the few shapes a threshold takes (comparisons of
//! a column with a literal under AND, OR, IS NULL); anything else may match. A double column
//! counts only where its writer recorded it holds no NaN (statistics leave NaN out, and YT
//! fails an ORDER BY that meets one). Lowering offers the filters to the scan only where
//! skipping rows cannot change the result: nothing evaluated on a skipped row could fail, and
//! the input row limit cannot be reached ([`super::input`]).

use std::cmp::Ordering;
use std::collections::BTreeSet;
use std::fmt;
use std::sync::Arc;

use datafusion::logical_expr::Operator;
use datafusion::physical_expr::expressions::{
    BinaryExpr, Column, IsNotNullExpr, IsNullExpr, Literal,
};
use datafusion::physical_expr::utils::collect_columns;
use datafusion::physical_expr::{PhysicalExpr, ScalarFunctionExpr};
use datafusion::physical_expr_common::physical_expr::snapshot_physical_expr;
use datafusion::scalar::ScalarValue;

use dynql_core::Value;
use dynql_ql::ast::BinaryOp;
use dynql_storage::{ColumnStatistics, RowGroupFilter};

use super::udf::YtExpression;

/// Filters over a scan's output columns (column `i` is table column `projection[i]`), asked
/// of each clean row group before it is decoded.
pub(crate) struct PushedFilters {
    filters: Vec<Arc<dyn PhysicalExpr>>,
    projection: Vec<usize>,
    /// The table columns the filters read, ascending.
    columns: Vec<usize>,
}

impl PushedFilters {
    pub(crate) fn new(filters: Vec<Arc<dyn PhysicalExpr>>, projection: Vec<usize>) -> Self {
        let columns: BTreeSet<usize> = filters
            .iter()
            .flat_map(collect_columns)
            .filter_map(|c| projection.get(c.index()).copied())
            .collect();
        PushedFilters {
            filters,
            projection,
            columns: columns.into_iter().collect(),
        }
    }
}

impl fmt::Debug for PushedFilters {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("PushedFilters")
            .field("filters", &self.filters.len())
            .field("columns", &self.columns)
            .finish()
    }
}

impl RowGroupFilter for PushedFilters {
    fn columns(&self) -> &[usize] {
        &self.columns
    }

    fn may_match(&self, statistics: &[ColumnStatistics]) -> bool {
        let of_output = |i: usize| -> Option<&ColumnStatistics> {
            let column = *self.projection.get(i)?;
            let at = self.columns.binary_search(&column).ok()?;
            statistics.get(at)
        };
        self.filters.iter().all(|f| {
            // The filter as it stands now (a dynamic filter's current threshold).
            match snapshot_physical_expr(f.clone()) {
                Ok(current) => may_be_true(&current, &of_output),
                Err(_) => true,
            }
        })
    }
}

/// Whether `expr` may be true for some row of a row group whose output columns have these
/// statistics (`false` only when no row can make it true).
fn may_be_true<'a>(
    expr: &Arc<dyn PhysicalExpr>,
    statistics: &impl Fn(usize) -> Option<&'a ColumnStatistics>,
) -> bool {
    if let Some(b) = expr.downcast_ref::<BinaryExpr>() {
        let (l, r) = (b.left(), b.right());
        return match b.op() {
            Operator::And => may_be_true(l, statistics) && may_be_true(r, statistics),
            Operator::Or => may_be_true(l, statistics) || may_be_true(r, statistics),
            op => match (
                bounded(l, statistics),
                literal(r),
                bounded(r, statistics),
                literal(l),
            ) {
                (Some(s), Some(v), _, _) => may_compare(s, *op, v),
                (_, _, Some(s), Some(v)) => match op.swap() {
                    Some(op) => may_compare(s, op, v),
                    None => true,
                },
                _ => true,
            },
        };
    }
    if let Some(e) = expr.downcast_ref::<IsNullExpr>() {
        return match bounded(e.arg(), statistics) {
            Some(s) => s.nulls.is_none_or(|n| n > 0),
            None => true,
        };
    }
    if let Some(e) = expr.downcast_ref::<IsNotNullExpr>() {
        return match bounded(e.arg(), statistics) {
            Some(s) => s.nulls.is_none_or(|n| n < s.rows),
            None => true,
        };
    }
    match literal(expr) {
        Some(ScalarValue::Boolean(b)) => b.unwrap_or(false),
        _ => true,
    }
}

/// The statistics that bound the values of `expr`: a column's, or a column's as an ORDER BY
/// key (which keeps its order; -0.0 becomes 0.0, within the same bounds). A double column
/// that may hold a NaN has none (NaN is outside its bounds).
fn bounded<'a>(
    expr: &Arc<dyn PhysicalExpr>,
    statistics: &impl Fn(usize) -> Option<&'a ColumnStatistics>,
) -> Option<&'a ColumnStatistics> {
    let column = match expr.downcast_ref::<ScalarFunctionExpr>() {
        Some(f) => {
            let key = f.fun().inner().downcast_ref::<YtExpression>()?;
            if !key.is_double_order_key() {
                return None;
            }
            f.args().first()?.downcast_ref::<Column>()?
        }
        None => expr.downcast_ref::<Column>()?,
    };
    statistics(column.index()).filter(|s| !s.may_hold_nan)
}

fn literal(expr: &Arc<dyn PhysicalExpr>) -> Option<&ScalarValue> {
    expr.downcast_ref::<Literal>().map(Literal::value)
}

/// Whether some row with values in `s` may make `value op literal` true (a null on either
/// side never does).
fn may_compare(s: &ColumnStatistics, op: Operator, literal: &ScalarValue) -> bool {
    let Some(literal) = value_of(literal) else {
        // A type this reading does not know.
        return !literal.is_null();
    };
    if s.nulls == Some(s.rows) {
        // No value to compare.
        return false;
    }
    let op = match op {
        Operator::Lt => BinaryOp::Less,
        Operator::LtEq => BinaryOp::LessOrEq,
        Operator::Gt => BinaryOp::Greater,
        Operator::GtEq => BinaryOp::GreaterOrEq,
        Operator::Eq => BinaryOp::Eq,
        Operator::NotEq => BinaryOp::NotEq,
        _ => return true,
    };
    bounds_may_satisfy(s, op, &literal)
}

/// Whether a non-null value within the bounds of `s` may make `value op literal` true (true
/// where the bounds are unknown or of another type; `op` a comparison).
pub(super) fn bounds_may_satisfy(s: &ColumnStatistics, op: BinaryOp, literal: &Value) -> bool {
    let (Some(min), Some(max)) = (&s.min, &s.max) else {
        return true;
    };
    let (Some(low), Some(high)) = (compare(min, literal), compare(max, literal)) else {
        return true;
    };
    match op {
        BinaryOp::Less => low == Ordering::Less,
        BinaryOp::LessOrEq => low != Ordering::Greater,
        BinaryOp::Greater => high == Ordering::Greater,
        BinaryOp::GreaterOrEq => high != Ordering::Less,
        BinaryOp::Eq => low != Ordering::Greater && high != Ordering::Less,
        BinaryOp::NotEq => !(low == Ordering::Equal && high == Ordering::Equal),
        _ => true,
    }
}

/// A literal as a value of the column types statistics come in (`None` for a null or
/// another type).
fn value_of(v: &ScalarValue) -> Option<Value> {
    Some(match v {
        ScalarValue::Int64(Some(x)) => Value::Int64(*x),
        ScalarValue::UInt64(Some(x)) => Value::Uint64(*x),
        ScalarValue::Float64(Some(x)) => Value::Double(*x),
        ScalarValue::Boolean(Some(x)) => Value::Boolean(*x),
        ScalarValue::Binary(Some(x))
        | ScalarValue::BinaryView(Some(x))
        | ScalarValue::LargeBinary(Some(x)) => Value::String(x.clone()),
        ScalarValue::Utf8(Some(x))
        | ScalarValue::Utf8View(Some(x))
        | ScalarValue::LargeUtf8(Some(x)) => Value::String(x.as_bytes().to_vec()),
        _ => return None,
    })
}

/// `a` against `b` where both are of one type (`None` otherwise, or for a NaN). Doubles
/// compare as numbers (-0.0 equal to 0.0, as the filter's comparisons do), byte strings
/// byte-wise.
fn compare(a: &Value, b: &Value) -> Option<Ordering> {
    match (a, b) {
        (Value::Int64(x), Value::Int64(y)) => Some(x.cmp(y)),
        (Value::Uint64(x), Value::Uint64(y)) => Some(x.cmp(y)),
        (Value::Double(x), Value::Double(y)) => x.partial_cmp(y),
        (Value::Boolean(x), Value::Boolean(y)) => Some(x.cmp(y)),
        (Value::String(x), Value::String(y)) => Some(x.cmp(y)),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use arrow::datatypes::{DataType, Field, Schema};
    use datafusion::physical_expr::expressions::{col, is_not_null, is_null, lit};
    use dynql_core::ValueType;

    /// The column types the interpreter reads statistics of.
    const READ_TYPES: [ValueType; 5] = [
        ValueType::Int64,
        ValueType::Uint64,
        ValueType::Double,
        ValueType::Boolean,
        ValueType::String,
    ];

    fn stats(min: Value, max: Value, nulls: u64, rows: u64) -> ColumnStatistics {
        ColumnStatistics {
            min: Some(min),
            max: Some(max),
            nulls: Some(nulls),
            rows,
            may_hold_nan: false,
        }
    }

    fn binary(
        l: Arc<dyn PhysicalExpr>,
        op: Operator,
        r: Arc<dyn PhysicalExpr>,
    ) -> Arc<dyn PhysicalExpr> {
        Arc::new(BinaryExpr::new(l, op, r))
    }

    #[test]
    fn comparisons_with_a_literal_are_decided_by_the_bounds() {
        let schema = Schema::new(vec![
            Field::new("a", DataType::Int64, true),
            Field::new("b", DataType::Float64, true),
        ]);
        let a = col("a", &schema).unwrap();
        let b = col("b", &schema).unwrap();
        let s = [
            stats(Value::Int64(10), Value::Int64(20), 0, 100),
            stats(Value::Double(-0.0), Value::Double(5.0), 3, 100),
        ];
        let at = |i: usize| s.get(i);
        let check = |e: Arc<dyn PhysicalExpr>| may_be_true(&e, &at);
        assert!(!check(binary(a.clone(), Operator::Lt, lit(10i64))));
        assert!(check(binary(a.clone(), Operator::LtEq, lit(10i64))));
        assert!(!check(binary(a.clone(), Operator::Gt, lit(20i64))));
        assert!(check(binary(lit(21i64), Operator::Gt, a.clone())));
        assert!(!check(binary(lit(9i64), Operator::Eq, a.clone())));
        // -0.0 is 0.0.
        assert!(!check(binary(b.clone(), Operator::Lt, lit(0.0f64))));
        assert!(check(binary(b.clone(), Operator::LtEq, lit(0.0f64))));
        // A top-k threshold: `b < 0 OR (b = 0 AND a < 10)`, nulls first.
        let threshold = |v: f64, w: i64| {
            binary(
                binary(
                    is_null(b.clone()).unwrap(),
                    Operator::Or,
                    binary(b.clone(), Operator::Lt, lit(v)),
                ),
                Operator::Or,
                binary(
                    binary(b.clone(), Operator::Eq, lit(v)),
                    Operator::And,
                    binary(a.clone(), Operator::Lt, lit(w)),
                ),
            )
        };
        // Nulls come first and there are some.
        assert!(check(threshold(0.0, 10)));
        let no_nulls = [
            s[0].clone(),
            stats(Value::Double(0.0), Value::Double(5.0), 0, 100),
        ];
        let at = |i: usize| no_nulls.get(i);
        assert!(!may_be_true(&threshold(0.0, 10), &at));
        assert!(may_be_true(&threshold(0.0, 11), &at));
        assert!(may_be_true(&threshold(0.5, 0), &at));
        assert!(!may_be_true(&is_null(b.clone()).unwrap(), &at));
        assert!(may_be_true(&is_not_null(b.clone()).unwrap(), &at));
        // Null literals compare to nothing; other shapes may match.
        assert!(!may_be_true(
            &binary(a.clone(), Operator::Lt, lit(ScalarValue::Int64(None))),
            &at
        ));
        assert!(may_be_true(
            &binary(a.clone(), Operator::Lt, b.clone()),
            &at
        ));
        assert!(!may_be_true(&lit(false), &at));
    }

    #[test]
    fn a_column_that_may_hold_nan_or_has_no_bounds_rules_nothing_out() {
        let schema = Schema::new(vec![Field::new("b", DataType::Float64, true)]);
        let b = col("b", &schema).unwrap();
        let below = binary(b.clone(), Operator::Lt, lit(0.0f64));
        let above = binary(b, Operator::Gt, lit(9.0f64));
        let mut s = stats(Value::Double(1.0), Value::Double(5.0), 0, 10);
        assert!(!may_be_true(&below, &|_| Some(&s)));
        assert!(!may_be_true(&above, &|_| Some(&s)));
        s.may_hold_nan = true;
        // NaN sorts last in Arrow's order: `b > 9` holds for it.
        assert!(may_be_true(&above, &|_| Some(&s)));
        for ty in READ_TYPES {
            let unknown = ColumnStatistics::unknown(10, ty);
            assert!(may_be_true(&below, &|_| Some(&unknown)));
        }
        // Every value null: no comparison holds.
        let nulls = ColumnStatistics {
            min: None,
            max: None,
            nulls: Some(10),
            rows: 10,
            may_hold_nan: false,
        };
        assert!(!may_be_true(&below, &|_| Some(&nulls)));
    }

    /// A top-k threshold as DataFusion builds it (`sort.rs`): for keys `a`, `b` with
    /// threshold values `va`, `vb`, `a ≺ va OR (a = va AND b ≺ vb)`, `≺` being `<` ascending
    /// and `>` descending, with nulls first `IS NULL OR` before each comparison.
    fn threshold(
        keys: &[(Arc<dyn PhysicalExpr>, bool, bool)],
        values: &[Option<i64>],
    ) -> Arc<dyn PhysicalExpr> {
        let mut filters: Vec<Arc<dyn PhysicalExpr>> = Vec::new();
        let mut equal: Option<Arc<dyn PhysicalExpr>> = None;
        for ((key, descending, nulls_first), value) in keys.iter().zip(values) {
            let op = if *descending {
                Operator::Gt
            } else {
                Operator::Lt
            };
            let value = lit(ScalarValue::Int64(*value));
            let comparison = binary(key.clone(), op, value.clone());
            let with_null = if *nulls_first {
                binary(is_null(key.clone()).unwrap(), Operator::Or, comparison)
            } else {
                comparison
            };
            let eq = binary(key.clone(), Operator::Eq, value);
            match equal.take() {
                None => {
                    filters.push(with_null);
                    equal = Some(eq);
                }
                Some(p) => {
                    filters.push(binary(p.clone(), Operator::And, with_null));
                    equal = Some(binary(p, Operator::And, eq));
                }
            }
        }
        filters
            .into_iter()
            .reduce(|a, b| binary(a, Operator::Or, b))
            .unwrap()
    }

    fn statistics_of(values: &[Option<i64>]) -> ColumnStatistics {
        let present = values.iter().flatten();
        ColumnStatistics {
            min: present.clone().min().map(|&v| Value::Int64(v)),
            max: present.max().map(|&v| Value::Int64(v)),
            nulls: Some(values.iter().filter(|v| v.is_none()).count() as u64),
            rows: values.len() as u64,
            may_hold_nan: false,
        }
    }

    proptest::proptest! {
        /// A row group the interpreter rules out has no row the filter (evaluated by
        /// DataFusion on the rows themselves) lets through.
        #[test]
        fn a_ruled_out_row_group_has_no_row_the_threshold_passes(
            rows in proptest::collection::vec(
                (proptest::option::weighted(0.8, -20i64..20), proptest::option::weighted(0.8, -20i64..20)),
                1..40,
            ),
            orders in proptest::collection::vec((proptest::bool::ANY, proptest::bool::ANY), 2),
            values in proptest::collection::vec(proptest::option::weighted(0.9, -25i64..25), 2),
        ) {
            use arrow::array::{Array, AsArray, Int64Array};
            use arrow::record_batch::RecordBatch;
            let schema = Arc::new(Schema::new(vec![
                Field::new("a", DataType::Int64, true),
                Field::new("b", DataType::Int64, true),
            ]));
            let a: Vec<Option<i64>> = rows.iter().map(|r| r.0).collect();
            let b: Vec<Option<i64>> = rows.iter().map(|r| r.1).collect();
            let batch = RecordBatch::try_new(
                schema.clone(),
                vec![Arc::new(Int64Array::from(a.clone())), Arc::new(Int64Array::from(b.clone()))],
            )
            .unwrap();
            let keys = [
                (col("a", &schema).unwrap(), orders[0].0, orders[0].1),
                (col("b", &schema).unwrap(), orders[1].0, orders[1].1),
            ];
            let filter = threshold(&keys, &values);
            let passed = filter.evaluate(&batch).unwrap().into_array(batch.num_rows()).unwrap();
            let passed = passed.as_boolean();
            let some_row_passes = (0..passed.len()).any(|i| passed.is_valid(i) && passed.value(i));
            let s = [statistics_of(&a), statistics_of(&b)];
            let filters = PushedFilters::new(vec![filter], vec![0, 1]);
            proptest::prop_assert_eq!(filters.columns(), &[0, 1]);
            if some_row_passes {
                proptest::prop_assert!(filters.may_match(&s));
            }
        }
    }
}
