//! YT's output row limit on groups, as a plan operator: YT counts the groups a query makes
//! before HAVING drops any, and a query with more groups than `output_row_limit` fails
//! (`fail_on_incomplete_result`) or, in a parallel run, is run again in scan order, where
//! [`super::first_groups`] keeps the first groups (see [`super::results`]).
//!
//! [`GroupLimitExec`] sits on the aggregation's output and holds its groups until the last
//! one is counted: no group reaches HAVING, ORDER BY or the projection above it (so no row
//! reaches the reader) before the count is known to be within the limit. The groups are at
//! most `output_row_limit` (YT's default is a million), and a grouped query's rows stay one
//! DataFusion plan, aggregation to projection.

use std::fmt;
use std::sync::Arc;

use arrow::record_batch::RecordBatch;
use datafusion::common::tree_node::TreeNodeRecursion;
use datafusion::error::{DataFusionError, Result as DfResult};
use datafusion::execution::{SendableRecordBatchStream, TaskContext};
use datafusion::physical_expr::{EquivalenceProperties, PhysicalExpr};
use datafusion::physical_plan::coalesce_partitions::CoalescePartitionsExec;
use datafusion::physical_plan::metrics::{
    BaselineMetrics, ExecutionPlanMetricsSet, MetricsSet, RecordOutput,
};
use datafusion::physical_plan::stream::RecordBatchStreamAdapter;
use datafusion::physical_plan::{
    DisplayAs, DisplayFormatType, ExecutionPlan, ExecutionPlanProperties, Partitioning,
    PlanProperties,
};
use futures::{StreamExt, TryStreamExt};

use crate::error::Error;

/// Passes on the groups of its input, once all are counted and they are at most `limit`;
/// more fail with [`Error::LimitExceeded`] for the output.
///
/// With `null_free_keys` (WITH TOTALS aggregated in parallel, where no
/// [`super::first_groups::FirstGroupsExec`] sees the rows), a group within the limit whose
/// key has a null fails the query as YT does. Past the limit the limit's error comes first:
/// a run in scan order then decides between the two, as YT's row order would.
#[derive(Debug)]
pub(crate) struct GroupLimitExec {
    input: Arc<dyn ExecutionPlan>,
    limit: u64,
    /// The first this many columns are the group key, where a null fails the query.
    null_free_keys: usize,
    properties: Arc<PlanProperties>,
    metrics: ExecutionPlanMetricsSet,
}

impl GroupLimitExec {
    /// Over `input` (its partitions merged into one); `null_free_keys` leading key columns
    /// must hold no null (0: no check).
    pub(crate) fn new(
        input: Arc<dyn ExecutionPlan>,
        limit: u64,
        null_free_keys: usize,
    ) -> GroupLimitExec {
        let (input, properties) = one_partition(input);
        GroupLimitExec {
            input,
            limit,
            null_free_keys,
            properties,
            metrics: ExecutionPlanMetricsSet::new(),
        }
    }
}

/// `input` with its partitions merged into one, and the properties of an operator that
/// gives that one partition's rows in no declared order: what the operators that hold
/// every group before passing any on ([`GroupLimitExec`], [`super::totals::TotalsExec`])
/// are built on.
pub(crate) fn one_partition(
    input: Arc<dyn ExecutionPlan>,
) -> (Arc<dyn ExecutionPlan>, Arc<PlanProperties>) {
    let input: Arc<dyn ExecutionPlan> = match input.output_partitioning().partition_count() {
        1 => input,
        _ => Arc::new(CoalescePartitionsExec::new(input)),
    };
    let properties = PlanProperties::new(
        EquivalenceProperties::new(input.schema()),
        Partitioning::UnknownPartitioning(1),
        input.pipeline_behavior(),
        input.boundedness(),
    );
    (input, Arc::new(properties))
}

/// The stream of an operator that holds every batch of its one `input` partition, runs
/// `check` over them all (its error ends the stream before any row is passed on), and then
/// passes them on unchanged, counted in `baseline`.
pub(crate) fn held_then_passed(
    input: SendableRecordBatchStream,
    baseline: BaselineMetrics,
    check: impl FnOnce(&[RecordBatch]) -> DfResult<()> + Send + 'static,
) -> SendableRecordBatchStream {
    let schema = input.schema();
    let held = futures::stream::once(async move {
        let batches: Vec<RecordBatch> = input.try_collect().await?;
        check(&batches)?;
        Ok::<_, DataFusionError>(futures::stream::iter(batches.into_iter().map(Ok)))
    })
    .try_flatten()
    .map(move |batch| batch.map(|b| b.record_output(&baseline)));
    Box::pin(RecordBatchStreamAdapter::new(schema, held))
}

/// Fails with YT's error where a group's key (its first `keys` columns) has a null.
fn forbid_null_keys(groups: &[RecordBatch], keys: usize) -> DfResult<()> {
    let null_key = groups
        .iter()
        .any(|b| b.columns()[..keys].iter().any(|c| c.null_count() > 0));
    if null_key {
        return Err(DataFusionError::External(Box::new(Error::Query(
            dynql_ql::Error::Runtime(NULL_KEY_WITH_TOTALS.into()),
        ))));
    }
    Ok(())
}

/// YT's error for a null in a group key of a query WITH TOTALS.
pub(crate) const NULL_KEY_WITH_TOTALS: &str =
    "Null values are forbidden in group key when WITH TOTALS is used";

impl DisplayAs for GroupLimitExec {
    fn fmt_as(&self, _t: DisplayFormatType, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "GroupLimitExec: output_row_limit={}", self.limit)?;
        if self.null_free_keys > 0 {
            write!(f, ", null_free_keys={}", self.null_free_keys)?;
        }
        Ok(())
    }
}

impl ExecutionPlan for GroupLimitExec {
    fn name(&self) -> &str {
        "GroupLimitExec"
    }

    fn properties(&self) -> &Arc<PlanProperties> {
        &self.properties
    }

    fn children(&self) -> Vec<&Arc<dyn ExecutionPlan>> {
        vec![&self.input]
    }

    fn metrics(&self) -> Option<MetricsSet> {
        Some(self.metrics.clone_inner())
    }

    fn apply_expressions(
        &self,
        _f: &mut dyn FnMut(&Arc<dyn PhysicalExpr>) -> DfResult<TreeNodeRecursion>,
    ) -> DfResult<TreeNodeRecursion> {
        Ok(TreeNodeRecursion::Continue)
    }

    fn with_new_children(
        self: Arc<Self>,
        children: Vec<Arc<dyn ExecutionPlan>>,
    ) -> DfResult<Arc<dyn ExecutionPlan>> {
        let [input] = <[_; 1]>::try_from(children)
            .map_err(|_| DataFusionError::Internal("GroupLimitExec has one child".into()))?;
        Ok(Arc::new(GroupLimitExec::new(
            input,
            self.limit,
            self.null_free_keys,
        )))
    }

    fn execute(
        &self,
        partition: usize,
        context: Arc<TaskContext>,
    ) -> DfResult<SendableRecordBatchStream> {
        if partition != 0 {
            return Err(DataFusionError::Internal(
                "GroupLimitExec has one partition".into(),
            ));
        }
        let input = self.input.execute(0, context)?;
        let (limit, keys) = (self.limit, self.null_free_keys);
        let baseline = BaselineMetrics::new(&self.metrics, partition);
        Ok(held_then_passed(input, baseline, move |groups| {
            let count: usize = groups.iter().map(RecordBatch::num_rows).sum();
            if count as u64 > limit {
                return Err(DataFusionError::External(Box::new(Error::LimitExceeded {
                    what: "output",
                })));
            }
            forbid_null_keys(groups, keys)
        }))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use arrow::array::Int64Array;
    use arrow::datatypes::{DataType, Field, Schema};
    use datafusion::datasource::memory::MemorySourceConfig;

    fn groups(partitions: &[&[i64]]) -> Arc<dyn ExecutionPlan> {
        let partitions: Vec<Vec<Option<i64>>> = partitions
            .iter()
            .map(|rows| rows.iter().copied().map(Some).collect())
            .collect();
        groups_with_nulls(&partitions)
    }

    fn groups_with_nulls(partitions: &[Vec<Option<i64>>]) -> Arc<dyn ExecutionPlan> {
        let schema = Arc::new(Schema::new(vec![Field::new("g0", DataType::Int64, true)]));
        let partitions: Vec<Vec<RecordBatch>> = partitions
            .iter()
            .map(|rows| {
                vec![RecordBatch::try_new(
                    schema.clone(),
                    vec![Arc::new(Int64Array::from(rows.clone()))],
                )
                .unwrap()]
            })
            .collect();
        MemorySourceConfig::try_new_exec(&partitions, schema, None).unwrap()
    }

    async fn run(plan: GroupLimitExec) -> DfResult<Vec<i64>> {
        let batches: Vec<RecordBatch> = plan
            .execute(0, Arc::new(TaskContext::default()))?
            .try_collect()
            .await?;
        let mut rows: Vec<i64> = batches
            .iter()
            .flat_map(|b| {
                b.column(0)
                    .as_any()
                    .downcast_ref::<Int64Array>()
                    .unwrap()
                    .values()
                    .to_vec()
            })
            .collect();
        rows.sort_unstable();
        Ok(rows)
    }

    #[tokio::test]
    async fn groups_within_the_limit_pass_and_more_fail_counted_over_every_partition() {
        let plan = GroupLimitExec::new(groups(&[&[1, 2], &[3]]), 3, 0);
        assert_eq!(plan.properties().partitioning.partition_count(), 1);
        assert_eq!(run(plan).await.unwrap(), vec![1, 2, 3]);
        // Two partitions each within the limit, together past it.
        let e = run(GroupLimitExec::new(groups(&[&[1, 2], &[3]]), 2, 0))
            .await
            .unwrap_err();
        assert!(matches!(
            crate::vectorized::lower::query_error(e),
            Error::LimitExceeded { what: "output" }
        ),);
    }

    #[tokio::test]
    async fn a_null_group_key_fails_only_where_asked_and_within_the_limit() {
        let with_null = || groups_with_nulls(&[vec![Some(1)], vec![None, Some(2)]]);
        // No check asked: the null group passes.
        assert_eq!(
            run(GroupLimitExec::new(with_null(), 3, 0))
                .await
                .unwrap()
                .len(),
            3
        );
        // Asked (WITH TOTALS in parallel): YT's error.
        let e = run(GroupLimitExec::new(with_null(), 3, 1))
            .await
            .unwrap_err();
        match crate::vectorized::lower::query_error(e) {
            Error::Query(q) => assert!(q.to_string().contains(NULL_KEY_WITH_TOTALS), "{q}"),
            other => panic!("expected the null key error, got {other:?}"),
        }
        // Past the limit, the limit's error comes first (a run in scan order decides).
        let e = run(GroupLimitExec::new(with_null(), 2, 1))
            .await
            .unwrap_err();
        assert!(matches!(
            crate::vectorized::lower::query_error(e),
            Error::LimitExceeded { what: "output" }
        ));
    }
}
