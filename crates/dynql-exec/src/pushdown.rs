//! Key ranges from SQL filters. DataFusion pushes a query's conjuncts into the scan of a
//! dynamic table; those that mean the same in YT QL (comparisons, `IN`, `BETWEEN`, `AND`,
//! `OR` of a column and literals of its type) are translated into typed YT QL expressions
//! and go through range inference ([`infer_key_ranges`]), computed key columns included.
//!
//! The invariant is range inference's own: every row the filters accept lies in a returned
//! range. What is not understood constrains nothing, and DataFusion still applies every
//! filter above the scan (the pushdown is inexact), so the ranges only decide what is read.
//! SQL drops rows where a comparison is null; YT QL orders null below every value, so a
//! translated comparison accepts at least the rows SQL does.

use std::collections::HashSet;
use std::sync::Arc;

use datafusion::arrow::datatypes::DataType;
use datafusion::common::ScalarValue;
use datafusion::logical_expr::{Between, BinaryExpr, Expr, Operator};

use dynql_core::{TableSchema, Value, ValueType};
use dynql_ql::ast::BinaryOp;
use dynql_ql::ranges::{infer_key_ranges, RangeOptions};
use dynql_ql::texpr::{TExpr, TypedExpr};
use dynql_storage::KeyRange;

/// The key ranges of the sorted table `schema` that hold every row `filters` (a
/// conjunction over the table's columns, named as in `schema`) accept; all keys when the
/// filters fix none, or when inference fails (a computed key column that cannot be
/// enumerated: reading everything is still right).
pub(crate) fn key_ranges(filters: &[Expr], schema: &TableSchema) -> Vec<KeyRange> {
    let all = || vec![KeyRange::all()];
    if !schema.is_sorted() {
        return all();
    }
    let predicate = filters
        .iter()
        .filter_map(|f| translate(f, schema))
        .reduce(|a, b| binary(BinaryOp::And, a, b));
    let Some(predicate) = predicate else {
        return all();
    };
    match infer_key_ranges(schema, Some(&predicate), &RangeOptions::default()) {
        Ok(inferred) => inferred,
        Err(_) => all(),
    }
}

fn binary(op: BinaryOp, left: TypedExpr, right: TypedExpr) -> TypedExpr {
    TypedExpr::new(
        TExpr::Binary(op, Box::new(left), Box::new(right)),
        ValueType::Boolean,
    )
}

/// `e` as a YT QL predicate that accepts at least the rows `e` accepts, or `None`.
fn translate(e: &Expr, schema: &TableSchema) -> Option<TypedExpr> {
    match e {
        Expr::BinaryExpr(BinaryExpr { left, op, right }) => match op {
            // An unknown side of AND constrains nothing; of OR, everything.
            Operator::And => match (translate(left, schema), translate(right, schema)) {
                (Some(l), Some(r)) => Some(binary(BinaryOp::And, l, r)),
                (one, other) => one.or(other),
            },
            Operator::Or => Some(binary(
                BinaryOp::Or,
                translate(left, schema)?,
                translate(right, schema)?,
            )),
            _ => comparison(left, *op, right, schema),
        },
        Expr::InList(list) if !list.negated => {
            let (column, ty, sql_type) = column(&list.expr, schema)?;
            let set = list
                .list
                .iter()
                .map(|item| Some(vec![literal(item, ty, &sql_type)?]))
                .collect::<Option<HashSet<_>>>()?;
            Some(TypedExpr::new(
                TExpr::In {
                    operands: vec![column],
                    set: Arc::new(set),
                    negated: false,
                },
                ValueType::Boolean,
            ))
        }
        Expr::Between(Between {
            expr,
            negated: false,
            low,
            high,
        }) => {
            let (column, ty, sql_type) = column(expr, schema)?;
            let range = (
                vec![literal(low, ty, &sql_type)?],
                vec![literal(high, ty, &sql_type)?],
            );
            Some(TypedExpr::new(
                TExpr::Between {
                    operands: vec![column],
                    ranges: vec![range],
                },
                ValueType::Boolean,
            ))
        }
        _ => None,
    }
}

/// `column op literal` (either way round).
fn comparison(left: &Expr, op: Operator, right: &Expr, schema: &TableSchema) -> Option<TypedExpr> {
    let op = match op {
        Operator::Eq => BinaryOp::Eq,
        Operator::Lt => BinaryOp::Less,
        Operator::LtEq => BinaryOp::LessOrEq,
        Operator::Gt => BinaryOp::Greater,
        Operator::GtEq => BinaryOp::GreaterOrEq,
        _ => return None,
    };
    let (column_side, literal_side, op) = match column(left, schema) {
        Some(c) => (c, right, op),
        None => {
            let flipped = match op {
                BinaryOp::Less => BinaryOp::Greater,
                BinaryOp::LessOrEq => BinaryOp::GreaterOrEq,
                BinaryOp::Greater => BinaryOp::Less,
                BinaryOp::GreaterOrEq => BinaryOp::LessOrEq,
                other => other,
            };
            (column(right, schema)?, left, flipped)
        }
    };
    let (column, ty, sql_type) = column_side;
    let value = literal(literal_side, ty, &sql_type)?;
    Some(binary(op, column, TypedExpr::literal(value, ty)))
}

/// A column of the table whose type orders the same in SQL and YT QL (not doubles: NaN).
fn column(e: &Expr, schema: &TableSchema) -> Option<(TypedExpr, ValueType, DataType)> {
    let Expr::Column(c) = e else {
        return None;
    };
    let index = schema.columns().iter().position(|s| s.name == c.name)?;
    let ty = schema.columns()[index].wire_type();
    // The column's type in SQL: temporal columns are dates and timestamps there.
    let sql_type = crate::provider::temporal_type(schema.columns()[index].logical_type.name())
        .unwrap_or(DataType::Null);
    matches!(
        ty,
        ValueType::Int64 | ValueType::Uint64 | ValueType::Boolean | ValueType::String
    )
    .then(|| (TypedExpr::new(TExpr::Column(index), ty), ty, sql_type))
}

/// A non-null literal of the column type `ty` (integers of narrower types widened).
fn literal(e: &Expr, ty: ValueType, sql_type: &DataType) -> Option<Value> {
    let Expr::Literal(v, _) = e else {
        return None;
    };
    // A temporal literal counts only in the column's own type (unit and all).
    let temporal = matches!(
        v.data_type(),
        DataType::Date32 | DataType::Timestamp(..) | DataType::Duration(_)
    );
    if temporal && &v.data_type() != sql_type {
        return None;
    }
    let int = |v: &ScalarValue| -> Option<i128> {
        Some(match v {
            ScalarValue::Int8(Some(x)) => i128::from(*x),
            ScalarValue::Int16(Some(x)) => i128::from(*x),
            ScalarValue::Int32(Some(x)) => i128::from(*x),
            ScalarValue::Int64(Some(x)) => i128::from(*x),
            ScalarValue::UInt8(Some(x)) => i128::from(*x),
            ScalarValue::UInt16(Some(x)) => i128::from(*x),
            ScalarValue::UInt32(Some(x)) => i128::from(*x),
            ScalarValue::UInt64(Some(x)) => i128::from(*x),
            // A temporal column's literal (coerced to the column's own SQL type, so in its
            // unit): the integer YT stores.
            ScalarValue::Date32(Some(x)) => i128::from(*x),
            ScalarValue::TimestampSecond(Some(x), _)
            | ScalarValue::TimestampMicrosecond(Some(x), _)
            | ScalarValue::DurationMicrosecond(Some(x)) => i128::from(*x),
            _ => return None,
        })
    };
    match ty {
        ValueType::Int64 => i64::try_from(int(v)?).ok().map(Value::Int64),
        ValueType::Uint64 => u64::try_from(int(v)?).ok().map(Value::Uint64),
        ValueType::Boolean => match v {
            ScalarValue::Boolean(Some(b)) => Some(Value::Boolean(*b)),
            _ => None,
        },
        ValueType::String => match v {
            ScalarValue::Utf8(Some(s))
            | ScalarValue::LargeUtf8(Some(s))
            | ScalarValue::Utf8View(Some(s)) => Some(Value::string(s.as_bytes())),
            ScalarValue::Binary(Some(b))
            | ScalarValue::LargeBinary(Some(b))
            | ScalarValue::BinaryView(Some(b)) => Some(Value::String(b.clone())),
            _ => None,
        },
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use datafusion::prelude::{col, lit};

    fn schema() -> TableSchema {
        TableSchema::parse(
            "[{name=h;type=uint64;sort_order=ascending;expression=\"farm_hash(k) % 4\"};{name=k;type=int64;sort_order=ascending};{name=s;type=string;sort_order=ascending};{name=v;type=double}]",
        )
        .unwrap()
    }

    fn ranges(filters: &[Expr]) -> Vec<String> {
        key_ranges(filters, &schema())
            .iter()
            .map(|r| format!("{r:?}"))
            .collect()
    }

    fn key(r: &KeyRange) -> String {
        format!("{r:?}")
    }

    #[test]
    fn no_key_filter_reads_everything() {
        let all = vec![key(&KeyRange::all())];
        assert_eq!(ranges(&[]), all);
        assert_eq!(ranges(&[col("v").gt(lit(0.5))]), all);
        // A double key would not translate either; NOT IN and != constrain nothing.
        assert_eq!(ranges(&[col("k").not_eq(lit(5i64))]), all);
        assert_eq!(ranges(&[col("k").in_list(vec![lit(1i64)], true)]), all);
        // OR with an unknown side constrains nothing.
        assert_eq!(
            ranges(&[col("k").eq(lit(1i64)).or(col("v").gt(lit(1.0)))]),
            all
        );
        // A null literal fixes nothing (SQL drops every row, the filter above does that).
        assert_eq!(ranges(&[col("k").eq(lit(ScalarValue::Int64(None)))]), all);
    }

    #[test]
    fn a_fixed_key_gives_one_point_through_the_computed_column() {
        let one = ranges(&[col("k").eq(lit(7i64))]);
        assert_eq!(one.len(), 1, "{one:?}");
        // Either way round, and with an unknown conjunct beside it.
        assert_eq!(ranges(&[lit(7i64).eq(col("k"))]), one);
        assert_eq!(
            ranges(&[col("k").eq(lit(7i64)).and(col("v").gt(lit(1.0)))]),
            one
        );
        assert_eq!(
            ranges(&[col("k").eq(lit(7i32)), col("v").lt(lit(2.0))]),
            one
        );
        // Every row with k = 7 lies in the range (whatever its hash), no row with k = 8 does.
        let r = &key_ranges(&[col("k").eq(lit(7i64))], &schema())[0];
        let row = |h: u64, k: i64| [Value::Uint64(h), Value::Int64(k), Value::string("x")];
        assert!((0..4).any(|h| r.contains(&row(h, 7))), "{r:?}");
        assert!(!(0..4).any(|h| r.contains(&row(h, 8))), "{r:?}");
    }

    #[test]
    fn in_lists_and_between_enumerate_the_computed_column() {
        let two = key_ranges(
            &[col("k").in_list(vec![lit(1i64), lit(2i64)], false)],
            &schema(),
        );
        assert!((1..=2).contains(&two.len()), "{two:?}");
        let between = key_ranges(&[col("k").between(lit(10i64), lit(12i64))], &schema());
        // h takes at most 4 values; the ranges are narrower than everything.
        assert!(!between.is_empty() && between.len() <= 4, "{between:?}");
        assert_ne!(between, vec![KeyRange::all()]);
    }
}
