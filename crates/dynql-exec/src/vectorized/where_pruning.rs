//! A YT QL WHERE clause as a scan's row group filter: a clean row group of a sorted table
//! whose column statistics show that no row can pass the WHERE is not decoded, whichever
//! columns the clause filters (not only the key, which key ranges already cut).
//!
//! The clause is read in YT's semantics: null is the least value, so `v < 5` and `v != 5`
//! hold for a null `v` and a row group with nulls may pass them. Comparisons of a column
//! with a literal, BETWEEN and IN over one column, IS NULL, AND and OR are read; anything
//! else may be true. Skipping rows must not change the result, so lowering asks for this
//! filter only where the clause cannot fail on a row ([`skippable`]) except by comparing a
//! double column's NaN — and a row group whose writer did not record that column free of
//! NaN is always read, so that the error YT raises is raised here too.

use std::collections::BTreeSet;

use dynql_core::{Value, ValueType};
use dynql_ql::ast::{BinaryOp, UnaryOp};
use dynql_ql::texpr::{TExpr, TypedExpr};
use dynql_storage::{ColumnStatistics, RowGroupFilter};

use super::evaluate::infallible;
use super::row_group_pruning::bounds_may_satisfy;

/// A WHERE clause over a sorted table's columns (column `i` of the clause is table column
/// `i`), asked of each clean row group before it is decoded.
#[derive(Debug)]
pub(crate) struct WhereFilter {
    clause: TypedExpr,
    /// The table columns the clause reads, ascending.
    columns: Vec<usize>,
    /// Those of them that are doubles: a NaN there would fail the clause in YT.
    doubles: Vec<usize>,
}

impl WhereFilter {
    /// The filter of `clause`, or `None` where it reads no column statistics can bound.
    pub(crate) fn new(clause: &TypedExpr) -> Option<WhereFilter> {
        let mut read = Vec::new();
        clause.referenced_columns(&mut read);
        let columns: Vec<usize> = read
            .iter()
            .copied()
            .collect::<BTreeSet<_>>()
            .into_iter()
            .collect();
        if columns.is_empty() {
            return None;
        }
        let mut doubles = BTreeSet::new();
        double_columns(clause, &mut doubles);
        Some(WhereFilter {
            clause: clause.clone(),
            columns,
            doubles: doubles.into_iter().collect(),
        })
    }
}

impl RowGroupFilter for WhereFilter {
    fn columns(&self) -> &[usize] {
        &self.columns
    }

    fn may_match(&self, statistics: &[ColumnStatistics]) -> bool {
        let of = |c: usize| -> Option<&ColumnStatistics> {
            statistics.get(self.columns.binary_search(&c).ok()?)
        };
        // A NaN would fail the clause: the row group is read so that it does.
        if self
            .doubles
            .iter()
            .any(|&c| of(c).is_none_or(|s| s.may_hold_nan))
        {
            return true;
        }
        may_be_true(&self.clause, &of)
    }
}

/// Whether skipping rows that cannot pass `clause` leaves the result as YT gives it:
/// evaluating it cannot fail on a row, except by comparing a double column with a NaN in it
/// (which [`WhereFilter`] never skips).
pub(crate) fn skippable(clause: &TypedExpr) -> bool {
    match &clause.kind {
        TExpr::Binary(BinaryOp::And | BinaryOp::Or, l, r) => skippable(l) && skippable(r),
        TExpr::Binary(op, l, r) if op.is_comparison() => match l.ty {
            ValueType::Double => plain(l) && plain(r),
            _ => infallible(clause),
        },
        TExpr::IsNull(x) => skippable(x),
        TExpr::In { operands, .. } | TExpr::Between { operands, .. } => {
            operands.iter().all(|o| match o.ty {
                ValueType::Double => plain(o),
                ValueType::Any => false,
                _ => infallible(o),
            })
        }
        _ => infallible(clause),
    }
}

/// A column, or a literal that is not NaN: compared, it fails only on a column's NaN.
fn plain(e: &TypedExpr) -> bool {
    match &e.kind {
        TExpr::Column(_) => true,
        TExpr::Literal(Value::Double(x)) => !x.is_nan(),
        TExpr::Literal(_) => true,
        _ => false,
    }
}

/// The double columns `e` compares.
fn double_columns(e: &TypedExpr, out: &mut BTreeSet<usize>) {
    if let TExpr::Column(c) = e.kind {
        if e.ty == ValueType::Double {
            out.insert(c);
        }
    }
    for child in e.children() {
        double_columns(child, out);
    }
}

/// Whether `e` may be true for some row of a row group with these column statistics
/// (`false` only when no row can make it true).
fn may_be_true<'a>(
    e: &TypedExpr,
    statistics: &impl Fn(usize) -> Option<&'a ColumnStatistics>,
) -> bool {
    match &e.kind {
        TExpr::Binary(BinaryOp::And, l, r) => {
            may_be_true(l, statistics) && may_be_true(r, statistics)
        }
        TExpr::Binary(BinaryOp::Or, l, r) => {
            may_be_true(l, statistics) || may_be_true(r, statistics)
        }
        TExpr::Binary(op, l, r) if op.is_comparison() => match (&l.kind, &r.kind) {
            (TExpr::Column(c), TExpr::Literal(v)) => {
                statistics(*c).is_none_or(|s| may_compare(s, *op, v))
            }
            (TExpr::Literal(v), TExpr::Column(c)) => {
                statistics(*c).is_none_or(|s| may_compare(s, swapped(*op), v))
            }
            _ => true,
        },
        TExpr::IsNull(x) => match x.kind {
            TExpr::Column(c) => statistics(c).is_none_or(|s| s.nulls.is_none_or(|n| n > 0)),
            _ => true,
        },
        TExpr::Unary(UnaryOp::Not, x) => match x.kind {
            // NOT IS NULL: some value is not null.
            TExpr::IsNull(ref y) => match y.kind {
                TExpr::Column(c) => {
                    statistics(c).is_none_or(|s| s.nulls.is_none_or(|n| n < s.rows))
                }
                _ => true,
            },
            _ => true,
        },
        TExpr::In {
            operands,
            set,
            negated: false,
        } => match operands.as_slice() {
            [TypedExpr {
                kind: TExpr::Column(c),
                ..
            }] => statistics(*c).is_none_or(|s| {
                set.iter()
                    .any(|t| t.first().is_none_or(|v| may_compare(s, BinaryOp::Eq, v)))
            }),
            _ => true,
        },
        TExpr::Between { operands, ranges } => match operands.as_slice() {
            [TypedExpr {
                kind: TExpr::Column(c),
                ..
            }] => statistics(*c).is_none_or(|s| {
                ranges
                    .iter()
                    .any(|(lower, upper)| may_be_between(s, lower.first(), upper.first()))
            }),
            _ => true,
        },
        TExpr::Literal(Value::Boolean(b)) => *b,
        TExpr::Literal(Value::Null) => false,
        _ => true,
    }
}

/// Whether some row with values in `s` may lie between `lower` and `upper` (inclusive;
/// `None`: unbounded) in YT's order, where null is less than any value: a null lies there
/// only without a lower bound.
fn may_be_between(s: &ColumnStatistics, lower: Option<&Value>, upper: Option<&Value>) -> bool {
    if [lower, upper]
        .into_iter()
        .flatten()
        .any(|v| matches!(v, Value::Null))
    {
        // A null bound: left to the evaluator.
        return true;
    }
    let nulls = s.nulls.is_none_or(|n| n > 0);
    if nulls && lower.is_none() {
        return true;
    }
    s.nulls != Some(s.rows)
        && lower.is_none_or(|v| bounds_may_satisfy(s, BinaryOp::GreaterOrEq, v))
        && upper.is_none_or(|v| bounds_may_satisfy(s, BinaryOp::LessOrEq, v))
}

/// `op` with its operands swapped (`5 < v` is `v > 5`).
fn swapped(op: BinaryOp) -> BinaryOp {
    match op {
        BinaryOp::Less => BinaryOp::Greater,
        BinaryOp::LessOrEq => BinaryOp::GreaterOrEq,
        BinaryOp::Greater => BinaryOp::Less,
        BinaryOp::GreaterOrEq => BinaryOp::LessOrEq,
        op => op,
    }
}

/// Whether some row with values in `s` may make `value op literal` true in YT's order,
/// where null is less than any value.
fn may_compare(s: &ColumnStatistics, op: BinaryOp, literal: &Value) -> bool {
    if matches!(literal, Value::Null) {
        // Null against null, or every value above it: left to the evaluator.
        return true;
    }
    let nulls = s.nulls.is_none_or(|n| n > 0);
    // A null is less than the literal.
    let null_passes = matches!(op, BinaryOp::Less | BinaryOp::LessOrEq | BinaryOp::NotEq);
    if nulls && null_passes {
        return true;
    }
    if s.nulls == Some(s.rows) {
        // Nulls only, and they fail the comparison.
        return false;
    }
    bounds_may_satisfy(s, op, literal)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::cmp::Ordering;
    use std::collections::HashSet;
    use std::sync::Arc;

    use proptest::prelude::*;

    fn column(c: usize, ty: ValueType) -> TypedExpr {
        TypedExpr::new(TExpr::Column(c), ty)
    }

    fn literal(v: Value) -> TypedExpr {
        let ty = v.value_type();
        TypedExpr::literal(v, ty)
    }

    fn binary(op: BinaryOp, l: TypedExpr, r: TypedExpr) -> TypedExpr {
        TypedExpr::new(
            TExpr::Binary(op, Box::new(l), Box::new(r)),
            ValueType::Boolean,
        )
    }

    /// The statistics a row group of `values` (of column 0) would have.
    fn statistics_of(values: &[Option<i64>]) -> ColumnStatistics {
        let present: Vec<i64> = values.iter().flatten().copied().collect();
        ColumnStatistics {
            min: present.iter().min().map(|&v| Value::Int64(v)),
            max: present.iter().max().map(|&v| Value::Int64(v)),
            nulls: Some(values.iter().filter(|v| v.is_none()).count() as u64),
            rows: values.len() as u64,
            may_hold_nan: false,
        }
    }

    /// YT's value of `v op x` for one row: null is the least value.
    fn holds(v: Option<i64>, op: BinaryOp, x: i64) -> bool {
        let ord = match v {
            None => Ordering::Less,
            Some(v) => v.cmp(&x),
        };
        match op {
            BinaryOp::Less => ord.is_lt(),
            BinaryOp::LessOrEq => ord.is_le(),
            BinaryOp::Greater => ord.is_gt(),
            BinaryOp::GreaterOrEq => ord.is_ge(),
            BinaryOp::Eq => ord.is_eq(),
            BinaryOp::NotEq => ord.is_ne(),
            _ => unreachable!("not a comparison"),
        }
    }

    const COMPARISONS: [BinaryOp; 6] = [
        BinaryOp::Less,
        BinaryOp::LessOrEq,
        BinaryOp::Greater,
        BinaryOp::GreaterOrEq,
        BinaryOp::Eq,
        BinaryOp::NotEq,
    ];

    proptest! {
        /// Never rules out a row group that holds a row the clause passes (the model: the
        /// clause evaluated on each row), for comparisons either way round, BETWEEN and IN.
        #[test]
        fn never_skips_a_row_group_with_a_passing_row(
            values in proptest::collection::vec(proptest::option::of(-20i64..20), 1..12),
            op in 0usize..6,
            x in -25i64..25,
            y in -25i64..25,
            set in proptest::collection::vec(-25i64..25, 0..4),
        ) {
            let op = COMPARISONS[op];
            let s = [statistics_of(&values)];
            let at = |c: usize| s.get(c);
            let c = column(0, ValueType::Int64);
            let lit = |v: i64| literal(Value::Int64(v));

            let left = binary(op, c.clone(), lit(x));
            let passes = values.iter().any(|v| holds(*v, op, x));
            prop_assert!(!passes || may_be_true(&left, &at));

            let right = binary(op, lit(x), c.clone());
            let passes = values.iter().any(|v| holds(*v, swapped(op), x));
            prop_assert!(!passes || may_be_true(&right, &at));

            let between = TypedExpr::new(
                TExpr::Between {
                    operands: vec![c.clone()],
                    ranges: vec![(vec![Value::Int64(x)], vec![Value::Int64(y)])],
                },
                ValueType::Boolean,
            );
            let passes = values.iter().any(|v| v.is_some_and(|v| x <= v && v <= y));
            prop_assert!(!passes || may_be_true(&between, &at));

            let members: HashSet<Vec<Value>> =
                set.iter().map(|v| vec![Value::Int64(*v)]).collect();
            let within = TypedExpr::new(
                TExpr::In { operands: vec![c.clone()], set: Arc::new(members), negated: false },
                ValueType::Boolean,
            );
            let passes = values.iter().any(|v| v.is_some_and(|v| set.contains(&v)));
            prop_assert!(!passes || may_be_true(&within, &at));

            let both = binary(BinaryOp::And, left.clone(), right.clone());
            let passes = values.iter().any(|v| holds(*v, op, x) && holds(*v, swapped(op), x));
            prop_assert!(!passes || may_be_true(&both, &at));
        }
    }

    #[test]
    fn bounds_rule_out_row_groups_and_nulls_count_as_least() {
        let s = [statistics_of(&[Some(10), None, Some(20)])];
        let at = |c: usize| s.get(c);
        let c = column(0, ValueType::Int64);
        let check = |op, x| may_be_true(&binary(op, c.clone(), literal(Value::Int64(x))), &at);
        assert!(!check(BinaryOp::Eq, 5));
        assert!(check(BinaryOp::Eq, 15));
        assert!(!check(BinaryOp::Greater, 20));
        assert!(!check(BinaryOp::GreaterOrEq, 21));
        // The null is less than 5.
        assert!(check(BinaryOp::Less, 5));
        let no_nulls = [statistics_of(&[Some(10), Some(20)])];
        let at = |c: usize| no_nulls.get(c);
        assert!(!may_be_true(
            &binary(BinaryOp::Less, c.clone(), literal(Value::Int64(5))),
            &at
        ));
    }

    #[test]
    fn a_double_column_that_may_hold_nan_is_always_read() {
        let clause = binary(
            BinaryOp::Greater,
            column(0, ValueType::Double),
            literal(Value::Double(100.0)),
        );
        assert!(skippable(&clause));
        let filter = WhereFilter::new(&clause).unwrap();
        let mut s = ColumnStatistics {
            min: Some(Value::Double(0.0)),
            max: Some(Value::Double(1.0)),
            nulls: Some(0),
            rows: 10,
            may_hold_nan: false,
        };
        assert!(!filter.may_match(std::slice::from_ref(&s)));
        s.may_hold_nan = true;
        assert!(filter.may_match(&[s]));
    }

    #[test]
    fn a_clause_that_can_fail_is_not_skippable() {
        // `1 / v = 2` fails on a zero: every row must be evaluated.
        let divide = TypedExpr::new(
            TExpr::Binary(
                BinaryOp::Divide,
                Box::new(literal(Value::Int64(1))),
                Box::new(column(0, ValueType::Int64)),
            ),
            ValueType::Int64,
        );
        let clause = binary(BinaryOp::Eq, divide, literal(Value::Int64(2)));
        assert!(!skippable(&clause));
        let both = binary(
            BinaryOp::And,
            binary(
                BinaryOp::Eq,
                column(1, ValueType::Int64),
                literal(Value::Int64(2)),
            ),
            clause,
        );
        assert!(!skippable(&both));
    }
}
