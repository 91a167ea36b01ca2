//! Tablet scans read for a reader the row order does not matter to: [`AnyRowOrderRule`]
//! asks a tablet scan below a hash aggregation for its rows in any order
//! ([`TableScan::with_rows_in_any_order`](dynql_storage::TableScan::with_rows_in_any_order)).
//!
//! Why: a table of several layers of overlapping chunks not yet compacted (each flush a
//! layer over the whole key range) is read by a merge by key of the layers' row groups.
//! Gathering each key's newest version into key order picks every projected value row by
//! row from the layer it lives in, and expands every dictionary the chunk cache keeps, so a
//! `GROUP BY category` over 8 layers took 5x DuckDB's time on the same rows (issue 41). In
//! any order, each layer's newest versions go on as a batch of their own, columns as the
//! cache holds them (a slice, or a filter where a newer layer overwrites some keys).
//!
//! Only where nothing can tell: the scan is one whose result does not depend on scan order
//! (a query planned without `in_key_order`: its tablets are read in parallel anyway), and
//! between it and a hash aggregation (no ordered input mode, no ORDER BY inside an
//! aggregate) there are only operators that handle each row on its own (filters,
//! projections). The scan then declares no key order: nothing above the aggregation saw it.

use std::sync::Arc;

use datafusion::common::tree_node::{Transformed, TransformedResult, TreeNode};
use datafusion::config::ConfigOptions;
use datafusion::error::Result as DfResult;
use datafusion::physical_optimizer::PhysicalOptimizerRule;
use datafusion::physical_plan::aggregates::{AggregateExec, AggregateMode};
use datafusion::physical_plan::coop::CooperativeExec;
use datafusion::physical_plan::execution_plan::{ChildrenPropertiesMode, ReplaceChildrenOptions};
use datafusion::physical_plan::filter::FilterExec;
use datafusion::physical_plan::projection::ProjectionExec;
use datafusion::physical_plan::{ExecutionPlan, InputOrderMode};

use super::dictionary_filter::DictionaryFilterExec;
use super::dictionary_groups::DictionaryGroupsExec;
use super::table_scan::TabletScanExec;

/// Asks the tablet scans below hash aggregations for their rows in any order (see the
/// module docs). Runs after [`super::dictionary_groups::DictionaryGroupsRule`], whose
/// aggregation it also reads under.
#[derive(Debug, Default)]
pub(crate) struct AnyRowOrderRule;

impl PhysicalOptimizerRule for AnyRowOrderRule {
    fn optimize(
        &self,
        plan: Arc<dyn ExecutionPlan>,
        _config: &ConfigOptions,
    ) -> DfResult<Arc<dyn ExecutionPlan>> {
        plan.transform_down(|node| {
            if !ignores_input_order(&node) {
                return Ok(Transformed::no(node));
            }
            let input = match node.children()[..] {
                [input] => in_any_order(input)?,
                _ => None,
            };
            match input {
                Some(input) => {
                    let recompute = ReplaceChildrenOptions::new(ChildrenPropertiesMode::Recompute);
                    Ok(Transformed::yes(
                        node.clone().replace_children(vec![input], recompute)?,
                    ))
                }
                None => Ok(Transformed::no(node)),
            }
        })
        .data()
    }

    fn name(&self) -> &str {
        "dynql_any_row_order"
    }

    fn schema_check(&self) -> bool {
        true
    }
}

/// Whether `node`'s result is the same whatever the order of its input's rows: a hash
/// aggregation (partial or whole, not one reading a sorted input), with no aggregate that
/// orders its input; or a [`DictionaryGroupsExec`] (a partial hash aggregation).
fn ignores_input_order(node: &Arc<dyn ExecutionPlan>) -> bool {
    if node.downcast_ref::<DictionaryGroupsExec>().is_some() {
        return true;
    }
    let Some(aggregate) = node.downcast_ref::<AggregateExec>() else {
        return false;
    };
    matches!(
        aggregate.mode(),
        AggregateMode::Partial | AggregateMode::Single | AggregateMode::SinglePartitioned
    ) && *aggregate.input_order_mode() == InputOrderMode::Linear
        && aggregate
            .aggr_expr()
            .iter()
            .all(|a| a.order_bys().is_empty())
}

/// `plan` giving its rows in any order: a tablet scan that may
/// ([`TabletScanExec::in_any_row_order`]), under operators that handle each row on its own.
/// `None` where there is none such.
fn in_any_order(plan: &Arc<dyn ExecutionPlan>) -> DfResult<Option<Arc<dyn ExecutionPlan>>> {
    if let Some(scan) = plan.downcast_ref::<TabletScanExec>() {
        return Ok(scan
            .in_any_row_order()
            .map(|s| Arc::new(s) as Arc<dyn ExecutionPlan>));
    }
    let row_by_row = plan.downcast_ref::<CooperativeExec>().is_some()
        || plan.downcast_ref::<FilterExec>().is_some()
        || plan.downcast_ref::<ProjectionExec>().is_some()
        || plan.downcast_ref::<DictionaryFilterExec>().is_some();
    let children = plan.children();
    let [input] = children[..] else {
        return Ok(None);
    };
    if !row_by_row {
        return Ok(None);
    }
    let Some(input) = in_any_order(input)? else {
        return Ok(None);
    };
    let recompute = ReplaceChildrenOptions::new(ChildrenPropertiesMode::Recompute);
    plan.clone()
        .replace_children(vec![input], recompute)
        .map(Some)
}
