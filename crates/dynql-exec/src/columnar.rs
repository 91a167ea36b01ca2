//! GROUP BY at columnar speed: when a query's grouping and aggregates mean the same in YT QL
//! and in DataFusion, the main table is scanned as Arrow batches
//! ([`Store::scan_batches`]) and DataFusion's hash aggregation computes the groups; HAVING,
//! ORDER BY, LIMIT and the projection then run as for any grouped query.
//!
//! The subset (checked by [`groups_in_datafusion`]): no joins, no WHERE, no totals, no LIMIT
//! without ORDER BY (YT keeps the first groups in scan order there), group keys that are
//! columns or literals, and `sum`/`min`/`max`/`avg` of a column or a numeric literal. For
//! these, both sides ignore nulls, group nulls together, wrap integer sums, and average as
//! doubles. Everything else runs through the row pipeline.

use std::sync::Arc;

use datafusion::common::Column;
use datafusion::datasource::MemTable;
use datafusion::functions_aggregate::expr_fn::{avg, max, min, sum};
use datafusion::logical_expr::{lit, Expr};
use datafusion::prelude::SessionContext;
use datafusion::scalar::ScalarValue;

use dynql_core::arrow_convert::{arrow_type, batch_to_rows, table_arrow_schema};
use dynql_core::{Value, ValueType};
use dynql_ql::ast::TotalsMode;
use dynql_ql::functions::AggregateFunction;
use dynql_ql::plan::QueryPlan;
use dynql_ql::texpr::{TExpr, TypedExpr};
use dynql_storage::KeyRange;

use crate::error::{Error, Result};
use crate::select::{finish, QueryResult, SelectOptions, Statistics};

/// Whether the plan's grouping is in the subset DataFusion computes exactly as YT.
pub(crate) fn groups_in_datafusion(plan: &QueryPlan) -> bool {
    let Some(group) = &plan.group else {
        return false;
    };
    let simple = |e: &TypedExpr| match &e.kind {
        TExpr::Column(_) => true,
        TExpr::Literal(v) => !v.is_null(),
        _ => false,
    };
    let numeric = |e: &TypedExpr| {
        matches!(
            e.ty,
            ValueType::Int64 | ValueType::Uint64 | ValueType::Double
        )
    };
    plan.joins.is_empty()
        && plan.where_clause.is_none()
        && group.totals == TotalsMode::None
        && !(plan.limit.is_some() && plan.order_by.is_empty())
        && group.keys.iter().all(simple)
        && group.aggregates.iter().all(|a| {
            a.args.len() == 1
                && simple(&a.args[0])
                && match a.function {
                    AggregateFunction::Sum | AggregateFunction::Avg => numeric(&a.args[0]),
                    AggregateFunction::Min | AggregateFunction::Max => {
                        !matches!(a.args[0].kind, TExpr::Literal(_))
                    }
                    _ => false,
                }
        })
}

fn views(schema: &arrow::datatypes::Schema) -> arrow::datatypes::SchemaRef {
    use arrow::datatypes::{DataType, Field};
    Arc::new(arrow::datatypes::Schema::new(
        schema
            .fields()
            .iter()
            .map(|f| {
                let f = Field::clone(f);
                if f.data_type() == &DataType::Binary {
                    f.with_data_type(DataType::BinaryView)
                } else {
                    f
                }
            })
            .collect::<Vec<_>>(),
    ))
}

fn literal(v: &Value) -> Option<Expr> {
    Some(lit(match v {
        Value::Int64(i) => ScalarValue::Int64(Some(*i)),
        Value::Uint64(u) => ScalarValue::UInt64(Some(*u)),
        Value::Double(d) => ScalarValue::Float64(Some(*d)),
        Value::Boolean(b) => ScalarValue::Boolean(Some(*b)),
        Value::String(s) => ScalarValue::Binary(Some(s.clone())),
        Value::Null | Value::Any(_) => return None,
    }))
}

/// Runs a plan accepted by [`groups_in_datafusion`]. `None` when the input is over the input
/// row limit without `fail_on_incomplete_result` (the row pipeline truncates it as YT does).
pub(crate) async fn group_in_datafusion(
    main: &crate::source::Source<'_>,
    plan: &QueryPlan,
    ranges: &[KeyRange],
    options: &SelectOptions,
) -> Result<Option<QueryResult>> {
    let source = &plan.sources[0];
    let Some(group) = &plan.group else {
        return Ok(None);
    };
    let (batches, scan) = main.viewed_batches(Some(ranges), options.timestamp).await?;
    if scan.rows_read > options.input_row_limit {
        if options.fail_on_incomplete_result {
            return Err(Error::LimitExceeded { what: "input" });
        }
        return Ok(None);
    }
    // Byte strings come as views (see Store::scan_batches_as).
    let schema = views(&table_arrow_schema(&source.schema));
    let names: Vec<String> = schema.fields().iter().map(|f| f.name().clone()).collect();
    let expr = |e: &TypedExpr| -> Result<Expr> {
        match &e.kind {
            TExpr::Column(i) => Ok(Expr::Column(Column::new_unqualified(names[*i].clone()))),
            TExpr::Literal(v) => literal(v).ok_or_else(|| {
                Error::Query(dynql_ql::Error::Runtime("unsupported literal".into()))
            }),
            _ => Err(Error::Query(dynql_ql::Error::Runtime(
                "unsupported expression".into(),
            ))),
        }
    };
    let keys: Vec<Expr> = group
        .keys
        .iter()
        .enumerate()
        .map(|(i, k)| Ok(expr(k)?.alias(format!("__key{i}"))))
        .collect::<Result<_>>()?;
    let aggregates: Vec<Expr> = group
        .aggregates
        .iter()
        .enumerate()
        .map(|(i, a)| {
            let arg = expr(&a.args[0])?;
            let call = match a.function {
                AggregateFunction::Sum => sum(arg),
                AggregateFunction::Min => min(arg),
                AggregateFunction::Max => max(arg),
                _ => avg(arg),
            };
            Ok(call.alias(format!("__aggregate{i}")))
        })
        .collect::<Result<_>>()?;
    // One partition, tablets in key order: DataFusion splits the aggregation across cores
    // itself, and measured faster this way than with a partition per tablet or per core.
    let batches: Vec<_> = batches.into_iter().map(|(_, b)| b).collect();
    let partitions = vec![batches];
    let table = MemTable::try_new(schema, partitions)?;
    let ctx = SessionContext::new();
    let grouped = ctx
        .read_table(Arc::new(table))?
        .aggregate(keys, aggregates)?
        .collect()
        .await?;
    let types: Vec<ValueType> = group
        .keys
        .iter()
        .map(|k| k.ty)
        .chain(group.aggregates.iter().map(|a| a.ty))
        .collect();
    let mut rows = Vec::new();
    for batch in &grouped {
        // DataFusion may widen or re-encode types (e.g. sums); cast back to dynql's.
        let columns = batch
            .columns()
            .iter()
            .zip(&types)
            .map(|(c, t)| arrow::compute::cast(c, &arrow_type(*t)))
            .collect::<std::result::Result<Vec<_>, _>>()
            .map_err(datafusion::error::DataFusionError::from)?;
        let fields: Vec<arrow::datatypes::Field> = types
            .iter()
            .enumerate()
            .map(|(i, t)| arrow::datatypes::Field::new(format!("c{i}"), arrow_type(*t), true))
            .collect();
        let cast = arrow::record_batch::RecordBatch::try_new(
            Arc::new(arrow::datatypes::Schema::new(fields)),
            columns,
        )
        .map_err(datafusion::error::DataFusionError::from)?;
        rows.extend(batch_to_rows(&cast, &types));
    }
    // HAVING, as the row pipeline applies it.
    let opts = dynql_ql::eval::EvalOptions {
        canonical_null_relations: options.use_canonical_null_relations,
    };
    if let Some(h) = &group.having {
        let mut kept = Vec::with_capacity(rows.len());
        for r in rows {
            if dynql_ql::eval::evaluate_predicate(h, &r, opts)? {
                kept.push(r);
            }
        }
        rows = kept;
    }
    if rows.len() as u64 > options.output_row_limit {
        if options.fail_on_incomplete_result {
            return Err(Error::LimitExceeded { what: "output" });
        }
        return Ok(None);
    }
    let stats = Statistics {
        rows_read: scan.rows_read,
        data_weight_read: scan.data_weight,
        scan,
        ..Statistics::default()
    };
    Ok(Some(finish(plan, rows, None, stats, options)?))
}
