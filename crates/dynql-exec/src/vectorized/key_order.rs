//! Reads in key order (no grouping, no joins, no ORDER BY or one by a key prefix ascending),
//! planned directly as a physical plan:
//!
//! ```text
//! TabletScanExec (one partition in key order, the columns the query reads)
//!   ─▶ FilterExec(WHERE, fetch) ─▶ GlobalLimitExec(OFFSET, LIMIT) ─▶ ProjectionExec
//! ```
//!
//! (no ProjectionExec when the outputs are the scanned columns in order, as for `*`).
//!
//! These are the point reads, IN lists, key ranges and LIMITs in key order: their whole run
//! takes a fraction of a millisecond, of which DataFusion's logical optimiser, physical
//! planner and physical optimiser took half, with nothing to improve in a plan of this shape
//! (the scan reads only the inferred key ranges and the columns read, and the limit stops
//! it). The expressions are the same as on the general path ([`super::lower`]).

use std::collections::HashMap;
use std::sync::Arc;

use datafusion::common::DFSchema;
use datafusion::logical_expr::execution_props::ExecutionProps;
use datafusion::logical_expr::physical_planning_context::PhysicalPlanningContext;
use datafusion::logical_expr::Expr;
use datafusion::physical_expr::expressions::Column;
use datafusion::physical_expr::{create_physical_expr, PhysicalExpr};
use datafusion::physical_plan::filter::FilterExecBuilder;
use datafusion::physical_plan::limit::GlobalLimitExec;
use datafusion::physical_plan::projection::ProjectionExec;
use datafusion::physical_plan::ExecutionPlan;

use dynql_core::{Value, ValueType};
use dynql_ql::eval::EvalOptions;
use dynql_ql::plan::QueryPlan;
use dynql_ql::texpr::TypedExpr;
use dynql_storage::KeyRange;

use super::input::{table_layout, Input, Setup};
use super::lower::{lower, offset_and_fetch, projections, query_error};
use super::udf::Check;
use crate::error::Result;

/// The physical plan of `query`, a read in key order (see
/// [`super::lower::reads_in_key_order`]) run in one partition (`setup.ordered`), and where
/// each result column is among the plan's outputs when that is not one for one: outputs
/// equal to an earlier one are computed once ([`Results::with_column_map`]).
///
/// [`Results::with_column_map`]: super::results::Results::with_column_map
pub(super) async fn key_order_plan(
    query: &QueryPlan,
    setup: &Setup,
    input: &Input,
    ranges: &[KeyRange],
    output_row_limit: u64,
) -> Result<(Arc<dyn ExecutionPlan>, Option<Vec<usize>>)> {
    let layout = table_layout(&setup.joined);
    let mut read = Vec::new();
    if let Some(w) = &query.where_clause {
        w.referenced_columns(&mut read);
    }
    for p in &query.projections {
        p.expr.referenced_columns(&mut read);
    }
    read.sort_unstable();
    let state = &setup.engine.one_partition().0;
    let limit = offset_and_fetch(query, output_row_limit);
    // The rows the scan is asked for at most (a hint: the filter may drop some).
    let wanted = limit.and_then(|(skip, fetch)| fetch.map(|f| skip.saturating_add(f)));
    let scan = input
        .table
        .scan(state, Some(&read), &[], wanted)
        .await
        .map_err(query_error)?;
    let schema = DFSchema::try_from(scan.schema().as_ref().clone())?;
    let props = ExecutionProps::new();
    let physical = |e: &Expr| -> Result<Arc<dyn PhysicalExpr>> {
        create_physical_expr(e, &schema, &props, &PhysicalPlanningContext::default())
            .map_err(query_error)
    };
    let mut plan = scan;
    let filtered = query
        .where_clause
        .as_ref()
        .filter(|w| !implied_by_ranges(w, ranges, &setup.types, setup.opts));
    if let Some(w) = filtered {
        let predicate = physical(&lower(w, &layout, setup.opts, Check::None)?)?;
        // The filter gathers the rows it keeps into full batches: told how many are
        // wanted, it stops pulling batches from the scan once it has them.
        plan = Arc::new(
            FilterExecBuilder::new(predicate, plan)
                .with_fetch(wanted)
                .build()?,
        );
    }
    if let Some((skip, fetch)) = limit {
        plan = Arc::new(GlobalLimitExec::new(plan, skip, fetch));
    }
    // Each distinct output once: DataFusion's projection relates every output to every
    // other it equals (each copy of a sorted column is another ordering of the rows), which
    // is quadratic in their number (`k as c0, …, k as c99999`); copies are taken from the
    // one computed.
    let mut distinct: Vec<Expr> = Vec::new();
    let mut first: HashMap<Expr, usize> = HashMap::new();
    let mut column_map = Vec::with_capacity(query.projections.len());
    for e in projections(query, &layout, setup.opts)? {
        let e = e.unalias();
        let earlier = match e.is_volatile() {
            true => None,
            false => first.get(&e).copied(),
        };
        column_map.push(earlier.unwrap_or_else(|| {
            first.insert(e.clone(), distinct.len());
            distinct.push(e);
            distinct.len() - 1
        }));
    }
    let one_for_one = distinct.len() == column_map.len();
    let column_map = (!one_for_one).then_some(column_map);
    let outputs = distinct
        .iter()
        .enumerate()
        .map(|(i, e)| Ok((physical(e)?, format!("p{i}"))))
        .collect::<Result<Vec<_>>>()?;
    // Results are taken by position: outputs that are the scanned columns in scan order (as
    // `*` is) need no projection, whose planning costs a tenth of a point read.
    let width = plan.schema().fields().len();
    let scanned = |(i, (e, _)): (usize, &(Arc<dyn PhysicalExpr>, String))| {
        e.downcast_ref::<Column>().is_some_and(|c| c.index() == i)
    };
    if outputs.len() == width && outputs.iter().enumerate().all(scanned) {
        return Ok((plan, column_map));
    }
    Ok((
        Arc::new(ProjectionExec::try_new(outputs, plan)?),
        column_map,
    ))
}

/// Whether every row in `ranges` satisfies `predicate`, so that the scan alone filters
/// (as for `id = 42`, or `k in (1, 2, 3)`, on a key whose computed columns the ranges
/// hold): every range is one key prefix (from the prefix to just after every key extending
/// it), the predicate reads no column past that prefix, and it is true for the prefix's
/// values. Then it is true for every row of the range, which holds the same values there.
/// Only for columns whose equal values are the same value (not doubles: -0.0 equals 0.0,
/// yet `1 / x` tells them apart), of the column's type.
fn implied_by_ranges(
    predicate: &TypedExpr,
    ranges: &[KeyRange],
    types: &[ValueType],
    opts: EvalOptions,
) -> bool {
    let mut read = Vec::new();
    predicate.referenced_columns(&mut read);
    ranges.iter().all(|r| {
        let prefix = &r.lower.prefix;
        let point = !r.lower.after && r.upper.after && r.upper.prefix == *prefix;
        let same_values = prefix.iter().zip(types).all(|(v, &ty)| {
            v.is_null() || (v.value_type() == ty && ty != ValueType::Double && ty != ValueType::Any)
        });
        point
            && same_values
            && read.iter().all(|&c| c < prefix.len())
            && matches!(
                dynql_ql::eval::evaluate(predicate, prefix, opts),
                Ok(Value::Boolean(true))
            )
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use dynql_ql::ast::BinaryOp;
    use dynql_ql::texpr::TExpr;
    use dynql_storage::KeyBound;

    fn column(i: usize, ty: ValueType) -> TypedExpr {
        TypedExpr::new(TExpr::Column(i), ty)
    }

    fn literal(v: Value) -> TypedExpr {
        let ty = v.value_type();
        TypedExpr::new(TExpr::Literal(v), ty)
    }

    fn binary(op: BinaryOp, l: TypedExpr, r: TypedExpr) -> TypedExpr {
        TypedExpr::new(
            TExpr::Binary(op, Box::new(l), Box::new(r)),
            ValueType::Boolean,
        )
    }

    fn point(prefix: Vec<Value>) -> KeyRange {
        KeyRange {
            lower: KeyBound::new(prefix.clone(), false),
            upper: KeyBound::new(prefix, true),
        }
    }

    #[test]
    fn only_point_ranges_whose_prefix_satisfies_where_make_the_filter_redundant() {
        let types = [ValueType::Int64, ValueType::Int64, ValueType::Double];
        let opts = EvalOptions::default();
        let implied =
            |w: &TypedExpr, ranges: &[KeyRange]| implied_by_ranges(w, ranges, &types, opts);
        let k_is = |v: i64| {
            binary(
                BinaryOp::Eq,
                column(0, ValueType::Int64),
                literal(Value::Int64(v)),
            )
        };
        // `k = 5` over the point [5], and over none at all.
        assert!(implied(&k_is(5), &[point(vec![Value::Int64(5)])]));
        assert!(implied(&k_is(5), &[]));
        // The prefix does not satisfy it, or is not a point, or is not the column's type.
        assert!(!implied(&k_is(5), &[point(vec![Value::Int64(6)])]));
        let range = KeyRange {
            lower: KeyBound::new(vec![Value::Int64(5)], false),
            upper: KeyBound::new(vec![Value::Int64(9)], true),
        };
        assert!(!implied(&k_is(5), &[range]));
        assert!(!implied(&k_is(5), &[point(vec![Value::Uint64(5)])]));
        // WHERE reads a column past the prefix.
        let second = binary(
            BinaryOp::And,
            k_is(5),
            binary(
                BinaryOp::Greater,
                column(1, ValueType::Int64),
                literal(Value::Int64(0)),
            ),
        );
        assert!(!implied(&second, &[point(vec![Value::Int64(5)])]));
        assert!(implied(
            &second,
            &[point(vec![Value::Int64(5), Value::Int64(1)])]
        ));
        // Evaluating WHERE on the prefix fails: the filter stays to fail the query.
        let divides = binary(
            BinaryOp::Greater,
            TypedExpr::new(
                TExpr::Binary(
                    BinaryOp::Divide,
                    Box::new(literal(Value::Int64(1))),
                    Box::new(column(0, ValueType::Int64)),
                ),
                ValueType::Int64,
            ),
            literal(Value::Int64(-5)),
        );
        assert!(!implied(&divides, &[point(vec![Value::Int64(0)])]));
        // A double key column never counts (-0.0 and 0.0 are one key).
        let double_types = [ValueType::Double];
        let d_is_zero = binary(
            BinaryOp::Eq,
            column(0, ValueType::Double),
            literal(Value::Double(0.0)),
        );
        assert!(!implied_by_ranges(
            &d_is_zero,
            &[point(vec![Value::Double(0.0)])],
            &double_types,
            opts
        ));
    }
}
