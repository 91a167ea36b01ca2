//! YT's grouping where it depends on scan order, as a plan operator: [`FirstGroupsExec`]
//! sits between WHERE and the aggregation, reads its one input partition in key order, and
//! admits the rows of the groups in the order they first appear:
//!
//! - LIMIT without ORDER BY keeps the first `OFFSET + LIMIT` groups; the rows of later
//!   groups are not aggregated (nor counted in the totals);
//! - past the output row limit a new group fails the query (`fail_on_incomplete_result`) or
//!   is dropped, the result marked incomplete;
//! - WITH TOTALS forbids a null in any group key, of every row that reaches grouping;
//! - each row gets its group's ordinal (column [`ORDINAL`]), so that the totals merge the
//!   groups' states in the order they first appeared.
//!
//! [`PlanTable`] reads a physical plan built this way back as a DataFusion table, so the
//! aggregation above it is planned by DataFusion as usual.

use std::collections::HashMap;
use std::fmt;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

use arrow::array::{Array, ArrayRef, BooleanArray, UInt64Array};
use arrow::compute::filter_record_batch;
use arrow::datatypes::{DataType, Field, Schema, SchemaRef};
use arrow::record_batch::RecordBatch;
use arrow::row::{RowConverter, SortField};
use async_trait::async_trait;
use datafusion::catalog::Session;
use datafusion::common::tree_node::TreeNodeRecursion;
use datafusion::datasource::{TableProvider, TableType};
use datafusion::error::{DataFusionError, Result as DfResult};
use datafusion::execution::{SendableRecordBatchStream, TaskContext};
use datafusion::logical_expr::Expr;
use datafusion::physical_expr::expressions::Column as ColumnExpr;
use datafusion::physical_expr::{EquivalenceProperties, PhysicalExpr};
use datafusion::physical_plan::metrics::{
    BaselineMetrics, ExecutionPlanMetricsSet, MetricsSet, RecordOutput,
};
use datafusion::physical_plan::projection::ProjectionExec;
use datafusion::physical_plan::stream::RecordBatchStreamAdapter;
use datafusion::physical_plan::{
    DisplayAs, DisplayFormatType, ExecutionPlan, ExecutionPlanProperties, Partitioning,
    PlanProperties,
};
use futures::StreamExt;

use super::group_limit::NULL_KEY_WITH_TOTALS;
use crate::error::Error;

/// The name of the group ordinal column [`FirstGroupsExec`] appends.
pub(crate) const ORDINAL: &str = "o";

/// What [`FirstGroupsExec`] admits.
#[derive(Debug, Clone)]
pub(crate) struct Admission {
    /// Input columns of the group key.
    pub(crate) keys: Vec<usize>,
    /// At most this many groups, the later ones dropped silently (LIMIT without ORDER BY).
    pub(crate) cap: Option<u64>,
    /// YT's output row limit on groups.
    pub(crate) output_limit: u64,
    /// Past the output row limit: drop the new groups (and mark the result incomplete)
    /// instead of failing.
    pub(crate) truncate: bool,
    /// WITH TOTALS: a null in a group key fails the query.
    pub(crate) forbid_null_keys: bool,
}

/// Admits the rows of the first groups in scan order (see the module notes) and appends
/// each row's group ordinal as column [`ORDINAL`].
#[derive(Debug)]
pub(crate) struct FirstGroupsExec {
    input: Arc<dyn ExecutionPlan>,
    admission: Admission,
    schema: SchemaRef,
    properties: Arc<PlanProperties>,
    /// Set when a group was dropped for the output row limit.
    incomplete: Arc<AtomicBool>,
    metrics: ExecutionPlanMetricsSet,
}

impl FirstGroupsExec {
    /// Over `input` (one partition, in scan order).
    pub(crate) fn new(
        input: Arc<dyn ExecutionPlan>,
        admission: Admission,
        incomplete: Arc<AtomicBool>,
    ) -> FirstGroupsExec {
        let mut fields: Vec<Field> = input
            .schema()
            .fields()
            .iter()
            .map(|f| f.as_ref().clone())
            .collect();
        fields.push(Field::new(ORDINAL, DataType::UInt64, false));
        let schema = Arc::new(Schema::new(fields));
        let properties = PlanProperties::new(
            EquivalenceProperties::new(schema.clone()),
            Partitioning::UnknownPartitioning(1),
            input.pipeline_behavior(),
            input.boundedness(),
        );
        FirstGroupsExec {
            input,
            admission,
            schema,
            properties: Arc::new(properties),
            incomplete,
            metrics: ExecutionPlanMetricsSet::new(),
        }
    }
}

impl DisplayAs for FirstGroupsExec {
    fn fmt_as(&self, _t: DisplayFormatType, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let a = &self.admission;
        write!(f, "FirstGroupsExec: keys={:?}", a.keys)?;
        if let Some(cap) = a.cap {
            write!(f, ", groups={cap}")?;
        }
        write!(f, ", output_row_limit={}", a.output_limit)?;
        if a.forbid_null_keys {
            write!(f, ", totals")?;
        }
        Ok(())
    }
}

/// The groups seen so far, by key (in Arrow's row format), with their ordinals.
struct Groups {
    admission: Admission,
    converter: RowConverter,
    /// Looked up once per row: foldhash, not SipHash (no untrusted keys to defend from).
    seen: HashMap<Vec<u8>, u64, foldhash::fast::FixedState>,
    incomplete: Arc<AtomicBool>,
}

impl Groups {
    /// The rows of `batch` whose groups are admitted, with their ordinals.
    fn admit(&mut self, batch: RecordBatch, schema: &SchemaRef) -> DfResult<RecordBatch> {
        let keys: Vec<ArrayRef> = self
            .admission
            .keys
            .iter()
            .map(|&k| batch.column(k).clone())
            .collect();
        if self.admission.forbid_null_keys && keys.iter().any(|k| k.null_count() > 0) {
            return Err(DataFusionError::External(Box::new(Error::Query(
                dynql_ql::Error::Runtime(NULL_KEY_WITH_TOTALS.into()),
            ))));
        }
        let rows = self.converter.convert_columns(&keys)?;
        let mut keep = Vec::with_capacity(batch.num_rows());
        let mut ordinals = Vec::with_capacity(batch.num_rows());
        for row in rows.iter() {
            let next = self.seen.len() as u64;
            let ordinal = match self.seen.get(row.as_ref()) {
                Some(&o) => Some(o),
                None if self.admission.cap.is_some_and(|cap| next >= cap) => None,
                None if next >= self.admission.output_limit => {
                    if !self.admission.truncate {
                        return Err(DataFusionError::External(Box::new(Error::LimitExceeded {
                            what: "output",
                        })));
                    }
                    self.incomplete.store(true, Ordering::Relaxed);
                    None
                }
                None => {
                    self.seen.insert(row.as_ref().to_vec(), next);
                    Some(next)
                }
            };
            keep.push(ordinal.is_some());
            ordinals.extend(ordinal);
        }
        let kept = filter_record_batch(&batch, &BooleanArray::from(keep))?;
        let mut columns = kept.columns().to_vec();
        columns.push(Arc::new(UInt64Array::from(ordinals)));
        Ok(RecordBatch::try_new(schema.clone(), columns)?)
    }
}

impl ExecutionPlan for FirstGroupsExec {
    fn name(&self) -> &str {
        "FirstGroupsExec"
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
            .map_err(|_| DataFusionError::Internal("FirstGroupsExec has one child".into()))?;
        Ok(Arc::new(FirstGroupsExec::new(
            input,
            self.admission.clone(),
            self.incomplete.clone(),
        )))
    }

    fn execute(
        &self,
        partition: usize,
        context: Arc<TaskContext>,
    ) -> DfResult<SendableRecordBatchStream> {
        if partition != 0 || self.input.output_partitioning().partition_count() != 1 {
            return Err(DataFusionError::Internal(
                "FirstGroupsExec reads one partition in scan order".into(),
            ));
        }
        let input = self.input.execute(0, context)?;
        let input_schema = self.input.schema();
        let fields = self
            .admission
            .keys
            .iter()
            .map(|&k| SortField::new(input_schema.field(k).data_type().clone()))
            .collect();
        let groups = Groups {
            admission: self.admission.clone(),
            converter: RowConverter::new(fields)?,
            seen: HashMap::default(),
            incomplete: self.incomplete.clone(),
        };
        let groups = Arc::new(Mutex::new(groups));
        let schema = self.schema.clone();
        let baseline = BaselineMetrics::new(&self.metrics, partition);
        let batches = input.map(move |batch| {
            let batch = batch?;
            let timer = baseline.elapsed_compute().timer();
            let admitted = groups
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .admit(batch, &schema);
            timer.done();
            admitted.map(|b| b.record_output(&baseline))
        });
        Ok(Box::pin(RecordBatchStreamAdapter::new(
            self.schema.clone(),
            batches,
        )))
    }
}

/// A physical plan read as a table (once: its streams are not restarted).
#[derive(Debug)]
pub(crate) struct PlanTable {
    plan: Arc<dyn ExecutionPlan>,
}

impl PlanTable {
    pub(crate) fn new(plan: Arc<dyn ExecutionPlan>) -> PlanTable {
        PlanTable { plan }
    }
}

#[async_trait]
impl TableProvider for PlanTable {
    fn schema(&self) -> SchemaRef {
        self.plan.schema()
    }

    fn table_type(&self) -> TableType {
        TableType::Temporary
    }

    async fn scan(
        &self,
        _state: &dyn Session,
        projection: Option<&Vec<usize>>,
        _filters: &[Expr],
        _limit: Option<usize>,
    ) -> DfResult<Arc<dyn ExecutionPlan>> {
        let schema = self.plan.schema();
        let whole = |p: &Vec<usize>| p.iter().copied().eq(0..schema.fields().len());
        match projection {
            Some(p) if !whole(p) => {
                let exprs = p
                    .iter()
                    .map(|&c| {
                        let name = schema.field(c).name().clone();
                        let e: Arc<dyn PhysicalExpr> = Arc::new(ColumnExpr::new(&name, c));
                        (e, name)
                    })
                    .collect::<Vec<_>>();
                Ok(Arc::new(ProjectionExec::try_new(exprs, self.plan.clone())?))
            }
            _ => Ok(self.plan.clone()),
        }
    }
}
