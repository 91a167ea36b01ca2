//! YT's joins as plan operators. YT joins before WHERE, so the main table joined with the
//! tables of the JOIN clauses is one DataFusion table, [`JoinedTable`]: the main table's
//! scan under one [`LookupJoinExec`] per JOIN. Each batch of rows joined so far asks the
//! next table only for the keys its rows name: the foreign columns its equations fix, set to
//! the batch's distinct values, go through range inference (computed key columns give
//! enumerated ranges), so a join reads the foreign table at those keys and memory holds a
//! batch's matches, not the table. When inference fixes no key prefix (a join without an
//! index, `allow_join_without_index`, or values it cannot enumerate) the foreign table is
//! read whole, once per query. Lookups are counted per batch: a foreign row two batches ask
//! for is read (and counted in `rows_read`) twice, as in YT's batched joins.
//!
//! Within a batch the join runs row by row over the equation values; the rows it gives stay
//! in the order of their left rows.

use std::collections::HashMap;
use std::fmt;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use arrow::datatypes::{Field, Schema, SchemaRef};
use arrow::record_batch::RecordBatch;
use async_trait::async_trait;
use datafusion::catalog::Session;
use datafusion::common::tree_node::TreeNodeRecursion;
use datafusion::datasource::{TableProvider, TableType};
use datafusion::error::{DataFusionError, Result as DfResult};
use datafusion::execution::{SendableRecordBatchStream, TaskContext};
use datafusion::logical_expr::Expr;
use datafusion::physical_expr::{EquivalenceProperties, PhysicalExpr};
use datafusion::physical_plan::metrics::{
    BaselineMetrics, ExecutionPlanMetricsSet, MetricsSet, RecordOutput,
};
use datafusion::physical_plan::stream::RecordBatchStreamAdapter;
use datafusion::physical_plan::{
    DisplayAs, DisplayFormatType, ExecutionPlan, ExecutionPlanProperties, PlanProperties,
};
use futures::StreamExt;
use tokio::sync::OnceCell;

use dynql_core::arrow_convert::{arrow_type, batch_to_rows, rows_to_batch};
use dynql_core::{TableSchema, Value, ValueType};
use dynql_ql::eval::{evaluate, evaluate_predicate, EvalOptions};
use dynql_ql::plan::JoinPlan;
use dynql_ql::texpr::TypedExpr;
use dynql_storage::files::FileTable;
use dynql_storage::scan::row_weight;
use dynql_storage::{KeyRange, Prefetch, Snapshot, Timestamp};

use super::scan_reads::InputLimit;
use crate::error::{Error, Result};
use crate::scan::{join_ranges, join_reads_by_key};

/// Rows per batch of a foreign table's scan.
const FOREIGN_BATCH_ROWS: usize = 8192;

/// The table a JOIN reads.
#[derive(Debug, Clone)]
pub(crate) enum Foreign {
    /// A dynamic table, read from the query's snapshot.
    Store { snapshot: Snapshot, path: String },
    /// Parquet files.
    Files(Arc<FileTable>),
}

impl Foreign {
    fn name(&self) -> &str {
        match self {
            Foreign::Store { path, .. } => path,
            Foreign::Files(f) => f.location(),
        }
    }

    /// The rows with keys in `ranges` (all when `None`), each `types.len()` values.
    async fn rows(
        &self,
        ranges: Option<&[KeyRange]>,
        timestamp: Timestamp,
        types: &[ValueType],
    ) -> Result<Vec<Vec<Value>>> {
        match self {
            Foreign::Store { snapshot, path } => {
                let scan = snapshot.plan_table_scan(path, ranges, timestamp)?;
                // The rows of a few key prefixes: read inline, without a task.
                let mut stream = scan.stream(
                    scan.tablets().to_vec(),
                    None,
                    false,
                    FOREIGN_BATCH_ROWS,
                    Prefetch::Inline,
                )?;
                let mut rows = Vec::new();
                while let Some(batch) = stream.next().await {
                    rows.extend(batch_to_rows(&batch?, types));
                }
                Ok(rows)
            }
            Foreign::Files(f) => Ok(f.scan_rows(ranges).await?.0),
        }
    }
}

/// One JOIN clause: its plan, the table it reads and that table's (query) schema.
#[derive(Debug)]
pub(crate) struct JoinStep {
    pub(crate) join: JoinPlan,
    pub(crate) foreign: Foreign,
    pub(crate) schema: TableSchema,
}

/// What the joins of one query share: options, the output row limit on the rows of each
/// join (YT cuts each join's rows there), and what the lookups read.
#[derive(Debug)]
pub(crate) struct JoinContext {
    pub(crate) opts: EvalOptions,
    pub(crate) timestamp: Timestamp,
    /// One per JOIN clause.
    pub(crate) output: Vec<InputLimit>,
    pub(crate) rows_read: AtomicU64,
    pub(crate) data_weight: AtomicU64,
}

/// The main table joined with the JOIN clauses' tables, columns `c0`.. over the joined row.
pub(crate) struct JoinedTable {
    main: Arc<dyn TableProvider>,
    steps: Arc<Vec<JoinStep>>,
    /// The YT types of the joined row, main table first.
    types: Vec<ValueType>,
    schema: SchemaRef,
    context: Arc<JoinContext>,
}

impl JoinedTable {
    /// `main` (columns `c0`.. of the types its plan gives) joined by `steps`.
    pub(crate) fn new(
        main: Arc<dyn TableProvider>,
        main_types: &[ValueType],
        steps: Vec<JoinStep>,
        context: Arc<JoinContext>,
    ) -> JoinedTable {
        let mut types = main_types.to_vec();
        for step in &steps {
            types.extend(step.schema.columns().iter().map(|c| c.wire_type()));
        }
        JoinedTable {
            main,
            steps: Arc::new(steps),
            schema: joined_schema(&types),
            types,
            context,
        }
    }
}

/// Columns `c0`.. in their wire types' Arrow types.
fn joined_schema(types: &[ValueType]) -> SchemaRef {
    Arc::new(Schema::new(
        types
            .iter()
            .enumerate()
            .map(|(i, t)| Field::new(format!("c{i}"), arrow_type(*t), true))
            .collect::<Vec<_>>(),
    ))
}

impl fmt::Debug for JoinedTable {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("JoinedTable")
            .field("steps", &self.steps)
            .finish()
    }
}

#[async_trait]
impl TableProvider for JoinedTable {
    fn schema(&self) -> SchemaRef {
        self.schema.clone()
    }

    fn table_type(&self) -> TableType {
        TableType::Base
    }

    async fn scan(
        &self,
        state: &dyn Session,
        projection: Option<&Vec<usize>>,
        _filters: &[Expr],
        _limit: Option<usize>,
    ) -> DfResult<Arc<dyn ExecutionPlan>> {
        // The equations may read any column joined so far: every one is kept until the last
        // join, which gives only the projected columns.
        let mut plan = self.main.scan(state, None, &[], None).await?;
        let mut width = plan.schema().fields().len();
        for step in 0..self.steps.len() {
            let left = self.types[..width].to_vec();
            width += self.steps[step].schema.columns().len();
            let last = step + 1 == self.steps.len();
            let columns: Vec<usize> = match projection {
                Some(p) if last => p.clone(),
                _ => (0..width).collect(),
            };
            plan = Arc::new(LookupJoinExec::new(
                plan,
                self.steps.clone(),
                step,
                left,
                self.types[..width].to_vec(),
                columns,
                self.context.clone(),
            ));
        }
        Ok(plan)
    }
}

/// Joins each batch of its input with the rows of one foreign table that match it (see the
/// module notes), keeping the input's partitions and order.
#[derive(Debug)]
pub(crate) struct LookupJoinExec {
    input: Arc<dyn ExecutionPlan>,
    steps: Arc<Vec<JoinStep>>,
    step: usize,
    /// The YT types of the input rows and of the joined rows.
    left: Vec<ValueType>,
    joined: Vec<ValueType>,
    /// The joined columns given, in order.
    columns: Vec<usize>,
    schema: SchemaRef,
    properties: Arc<PlanProperties>,
    context: Arc<JoinContext>,
    /// The whole foreign table, read once, when the equations fix no key prefix.
    whole: Arc<OnceCell<Arc<Vec<Vec<Value>>>>>,
    metrics: ExecutionPlanMetricsSet,
}

impl LookupJoinExec {
    fn new(
        input: Arc<dyn ExecutionPlan>,
        steps: Arc<Vec<JoinStep>>,
        step: usize,
        left: Vec<ValueType>,
        joined: Vec<ValueType>,
        columns: Vec<usize>,
        context: Arc<JoinContext>,
    ) -> LookupJoinExec {
        let full = joined_schema(&joined);
        let schema = Arc::new(Schema::new(
            columns
                .iter()
                .map(|&c| full.field(c).clone())
                .collect::<Vec<_>>(),
        ));
        let properties = PlanProperties::new(
            EquivalenceProperties::new(schema.clone()),
            input.output_partitioning().clone(),
            input.pipeline_behavior(),
            input.boundedness(),
        );
        LookupJoinExec {
            input,
            steps,
            step,
            left,
            joined,
            columns,
            schema,
            properties: Arc::new(properties),
            context,
            whole: Arc::default(),
            metrics: ExecutionPlanMetricsSet::new(),
        }
    }
}

impl DisplayAs for LookupJoinExec {
    fn fmt_as(&self, _t: DisplayFormatType, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let step = &self.steps[self.step];
        let lookup = if join_reads_by_key(&step.join, &step.schema) {
            "key prefixes"
        } else {
            "whole table"
        };
        write!(
            f,
            "LookupJoinExec: table={}, {}, expected reads={}",
            step.foreign.name(),
            if step.join.left_outer {
                "left"
            } else {
                "inner"
            },
            lookup
        )
    }
}

/// The part of a join that runs per batch, owned by the batch's future.
#[derive(Clone)]
struct Lookup {
    steps: Arc<Vec<JoinStep>>,
    step: usize,
    left: Arc<Vec<ValueType>>,
    joined: Arc<Vec<ValueType>>,
    columns: Arc<Vec<usize>>,
    schema: SchemaRef,
    context: Arc<JoinContext>,
    whole: Arc<OnceCell<Arc<Vec<Vec<Value>>>>>,
}

impl Lookup {
    async fn join(&self, batch: RecordBatch) -> Result<RecordBatch> {
        let step = &self.steps[self.step];
        let opts = self.context.opts;
        let rows = batch_to_rows(&batch, &self.left);
        let foreign_types: Vec<ValueType> = self.joined[self.left.len()..].to_vec();
        let foreign: Arc<Vec<Vec<Value>>> =
            match join_ranges(&step.join, &step.schema, &rows, opts)? {
                Some(ranges) if ranges.is_empty() => Arc::default(),
                Some(ranges) => Arc::new(self.read(Some(&ranges), &foreign_types).await?),
                None => self
                    .whole
                    .get_or_try_init(|| async {
                        Ok::<_, Error>(Arc::new(self.read(None, &foreign_types).await?))
                    })
                    .await?
                    .clone(),
            };
        let mut joined = join_rows(&step.join, rows, &foreign, foreign_types.len(), opts)?;
        let passed = self.context.output[self.step]
            .admit(joined.len() as u64)
            .ok_or(Error::LimitExceeded { what: "output" })?;
        joined.truncate(passed as usize);
        let projected: Vec<Vec<Value>> = joined
            .into_iter()
            .map(|r| self.columns.iter().map(|&c| r[c].clone()).collect())
            .collect();
        Ok(rows_to_batch(&self.schema, &projected).map_err(DataFusionError::from)?)
    }

    /// Reads the foreign rows of `ranges`, counting them as read.
    async fn read(
        &self,
        ranges: Option<&[KeyRange]>,
        types: &[ValueType],
    ) -> Result<Vec<Vec<Value>>> {
        let step = &self.steps[self.step];
        let rows = step
            .foreign
            .rows(ranges, self.context.timestamp, types)
            .await?;
        let weight: u64 = rows.iter().map(|r| row_weight(r)).sum();
        self.context
            .rows_read
            .fetch_add(rows.len() as u64, Ordering::Relaxed);
        self.context
            .data_weight
            .fetch_add(weight, Ordering::Relaxed);
        Ok(rows)
    }
}

impl ExecutionPlan for LookupJoinExec {
    fn name(&self) -> &str {
        "LookupJoinExec"
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
            .map_err(|_| DataFusionError::Internal("LookupJoinExec has one child".into()))?;
        Ok(Arc::new(LookupJoinExec::new(
            input,
            self.steps.clone(),
            self.step,
            self.left.clone(),
            self.joined.clone(),
            self.columns.clone(),
            self.context.clone(),
        )))
    }

    fn execute(
        &self,
        partition: usize,
        context: Arc<TaskContext>,
    ) -> DfResult<SendableRecordBatchStream> {
        let input = self.input.execute(partition, context)?;
        let lookup = Lookup {
            steps: self.steps.clone(),
            step: self.step,
            left: Arc::new(self.left.clone()),
            joined: Arc::new(self.joined.clone()),
            columns: Arc::new(self.columns.clone()),
            schema: self.schema.clone(),
            context: self.context.clone(),
            whole: self.whole.clone(),
        };
        // Shared by the batches' futures: a dropped copy would mark the operator done.
        let baseline = Arc::new(BaselineMetrics::new(&self.metrics, partition));
        let batches = input.then(move |batch| {
            let (lookup, baseline) = (lookup.clone(), baseline.clone());
            async move {
                let batch = batch?;
                // Reading the foreign rows included.
                let timer = baseline.elapsed_compute().timer();
                let joined = lookup.join(batch).await;
                timer.done();
                joined
                    .map(|b| b.record_output(&baseline))
                    .map_err(|e| DataFusionError::External(Box::new(e)))
            }
        });
        Ok(Box::pin(RecordBatchStreamAdapter::new(
            self.schema.clone(),
            batches,
        )))
    }
}

/// `join`'s equation values of `row`.
fn equation_values(exprs: &[TypedExpr], row: &[Value], opts: EvalOptions) -> Result<Vec<Value>> {
    Ok(exprs
        .iter()
        .map(|e| evaluate(e, row, opts))
        .collect::<dynql_ql::Result<Vec<_>>>()?)
}

/// The rows of `rows` joined with those of `foreign` (rows of a table `foreign_width`
/// columns wide) by `join`'s equations, in the order of `rows`: each row with every match,
/// or with nulls when unmatched in a LEFT join. Equal values match, nulls included.
fn join_rows(
    join: &JoinPlan,
    rows: Vec<Vec<Value>>,
    foreign: &[Vec<Value>],
    foreign_width: usize,
    opts: EvalOptions,
) -> Result<Vec<Vec<Value>>> {
    let mut index: HashMap<Vec<Value>, Vec<&Vec<Value>>> = HashMap::new();
    for f in foreign {
        if let Some(p) = &join.foreign_predicate {
            if !evaluate_predicate(p, f, opts)? {
                continue;
            }
        }
        let key = equation_values(&join.foreign_keys, f, opts)?;
        index.entry(key).or_default().push(f);
    }
    let mut out = Vec::with_capacity(rows.len());
    for r in rows {
        let key = equation_values(&join.self_keys, &r, opts)?;
        match index.get(&key) {
            Some(matches) => {
                for m in matches {
                    let mut joined = r.clone();
                    joined.extend(m.iter().cloned());
                    out.push(joined);
                }
            }
            None if join.left_outer => {
                let mut joined = r;
                joined.extend(std::iter::repeat_n(Value::Null, foreign_width));
                out.push(joined);
            }
            None => {}
        }
    }
    Ok(out)
}
