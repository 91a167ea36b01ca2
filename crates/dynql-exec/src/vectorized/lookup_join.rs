//! YT's joins as plan operators. YT joins before WHERE, so the main table joined with the
//! tables of the JOIN clauses is one DataFusion table, [`JoinedTable`]: the main table's
//! scan under one [`LookupJoinExec`] per JOIN. Each batch of rows joined so far asks the
//! next table only for the keys its rows name: the foreign columns its equations fix, set to
//! the batch's distinct values, go through range inference (computed key columns give
//! enumerated ranges), so a join reads the foreign table at those keys and memory holds a
//! batch's matches, not the table. When inference fixes no key prefix (a join without an
//! index, `allow_join_without_index`, or values it cannot enumerate) the foreign table is
//! read whole, once per query. Lookups are counted per batch: a foreign row two batches ask
//! for is read (and counted in `rows_read`) twice, as in YT's batched joins. A batch that
//! asks for the same keys as the batch before it (a join on a column of few values) reuses
//! that batch's foreign rows, read from the same snapshot, and counts them again.
//!
//! Within a batch the join runs over Arrow arrays: the equation values are evaluated as
//! arrays on both sides, each left row hashed once to the id of its distinct tuple, the
//! foreign rows matched to those tuples ([`super::join_keys`]), and the output gathered with
//! `take`; the rows it gives stay in the order of their left rows.
//!
//! The main table's scan reads only the columns the query and the equations use; the other
//! columns of the joined row are absent from the operators' layout (their positions shift).
//! Byte strings keep the layout the scan gives them (views).

use std::fmt;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, PoisonError};

use arrow::array::{ArrayRef, AsArray, UInt32Array};
use arrow::compute::take;
use arrow::datatypes::{DataType, Field, Schema, SchemaRef};
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

use dynql_core::arrow_convert::arrow_type;
use dynql_core::{TableSchema, ValueType};
use dynql_ql::eval::EvalOptions;
use dynql_ql::plan::JoinPlan;
use dynql_ql::texpr::{TExpr, TypedExpr};
use dynql_storage::files::FileTable;
use dynql_storage::scan::batch_weight;
use dynql_storage::{KeyRange, Prefetch, Snapshot, Timestamp};

use super::budget::Budget;
use super::dictionary_groups::scan_giving_dictionaries;
use super::evaluate::{evaluate, Batch};
use super::join_keys::LeftKeys;
use super::scan_reads::InputLimit;
use crate::error::{Error, Result};
use crate::scan::{join_ranges, join_reads_by_key};
use crate::select::MAX_BATCH_STRING_BYTES;

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

    /// The rows with keys in `ranges` (all when `None`) as one batch, each column in its
    /// YT type's Arrow type (`types`).
    async fn batch(
        &self,
        ranges: Option<&[KeyRange]>,
        timestamp: Timestamp,
        types: &[ValueType],
    ) -> Result<RecordBatch> {
        let schema = joined_schema(types);
        let mut stream = match self {
            Foreign::Store { snapshot, path } => {
                let scan = snapshot.plan_table_scan(path, ranges, timestamp)?;
                // The rows of a few key prefixes: read inline, without a task.
                scan.stream(
                    scan.tablets().to_vec(),
                    None,
                    false,
                    FOREIGN_BATCH_ROWS,
                    Prefetch::Inline,
                )?
            }
            Foreign::Files(f) => f.stream(ranges.map(<[KeyRange]>::to_vec), false),
        };
        let mut batches = Vec::new();
        while let Some(batch) = stream.next().await {
            batches.push(in_types(&batch?, &schema)?);
        }
        Ok(arrow::compute::concat_batches(&schema, &batches)?)
    }
}

/// `batch`'s columns cast to `schema`'s types (a `utf8` column comes as `Utf8`, the
/// evaluator reads text as `Binary`).
fn in_types(batch: &RecordBatch, schema: &SchemaRef) -> Result<RecordBatch> {
    let columns = batch
        .columns()
        .iter()
        .zip(schema.fields())
        .map(|(c, f)| match c.data_type() == f.data_type() {
            true => Ok(c.clone()),
            false => arrow::compute::cast(c, f.data_type()),
        })
        .collect::<std::result::Result<Vec<_>, _>>()?;
    Ok(RecordBatch::try_new_with_options(
        schema.clone(),
        columns,
        &arrow::record_batch::RecordBatchOptions::new().with_row_count(Some(batch.num_rows())),
    )?)
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
        // The main table's columns as its scan gives them (byte strings as views), the
        // joined tables' in their wire types' Arrow types.
        let main_schema = main.schema();
        let joined = joined_schema(&types);
        let fields: Vec<Field> = joined
            .fields()
            .iter()
            .enumerate()
            .map(|(i, f)| match main_schema.fields().get(i) {
                Some(m) => f.as_ref().clone().with_data_type(m.data_type().clone()),
                None => f.as_ref().clone(),
            })
            .collect();
        JoinedTable {
            main,
            steps: Arc::new(steps),
            schema: Arc::new(Schema::new(fields)),
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
        // The main table's columns the query or an equation reads; the others are not
        // scanned, and the joined row's layout leaves them out.
        let main_width = self.main.schema().fields().len();
        let mut used: Vec<usize> = match projection {
            Some(p) => p.clone(),
            None => (0..self.types.len()).collect(),
        };
        for step in self.steps.iter() {
            step.join
                .self_keys
                .iter()
                .for_each(|k| k.referenced_columns(&mut used));
        }
        let mut scanned: Vec<usize> = used.into_iter().filter(|&c| c < main_width).collect();
        scanned.sort_unstable();
        scanned.dedup();
        let kept = scanned.len();
        let position = |c: usize| match c.checked_sub(main_width) {
            // A joined table's column, after the scanned ones.
            Some(joined) => kept + joined,
            // Every main column a position is asked of is scanned.
            None => scanned.partition_point(|&s| s < c),
        };
        let layout: Vec<usize> = scanned
            .iter()
            .copied()
            .chain(main_width..self.types.len())
            .collect();
        let types: Vec<ValueType> = layout.iter().map(|&c| self.types[c]).collect();
        let fields: Vec<Field> = layout
            .iter()
            .map(|&c| self.schema.field(c).clone())
            .collect();
        // The equations may read any column joined so far: every one is kept until the last
        // join, which gives only the projected columns.
        let mut plan = self.main.scan(state, Some(&scanned), &[], None).await?;
        // The first join's equation on one string column of the main table reads it as the
        // scan's dictionaries: its keys are then interned once per distinct value.
        if let Some(first) = self.steps.first() {
            if let [key] = first.join.self_keys.as_slice() {
                if let (TExpr::Column(c), ValueType::String) = (&key.kind, key.ty) {
                    if *c < main_width {
                        if let Some(scan) = scan_giving_dictionaries(&plan, position(*c)) {
                            plan = scan;
                        }
                    }
                }
            }
        }
        let mut width = kept;
        for step in 0..self.steps.len() {
            let left = types[..width].to_vec();
            width += self.steps[step].schema.columns().len();
            let last = step + 1 == self.steps.len();
            let columns: Vec<usize> = match projection {
                Some(p) if last => p.iter().map(|&c| position(c)).collect(),
                _ => (0..width).collect(),
            };
            let mut self_keys = self.steps[step].join.self_keys.clone();
            self_keys
                .iter_mut()
                .for_each(|k| k.remap_columns(&position));
            plan = Arc::new(LookupJoinExec::new(
                plan,
                Layout {
                    steps: self.steps.clone(),
                    step,
                    self_keys: Arc::new(self_keys),
                    left,
                    joined: types[..width].to_vec(),
                    fields: fields[..width].to_vec(),
                    columns,
                },
                self.context.clone(),
            ));
        }
        Ok(plan)
    }
}

/// One join's place in the joined row's layout (see the module notes).
#[derive(Debug, Clone)]
struct Layout {
    steps: Arc<Vec<JoinStep>>,
    step: usize,
    /// The step's equation sides over the input rows, at their positions in the layout.
    self_keys: Arc<Vec<TypedExpr>>,
    /// The YT types of the input rows and of the joined rows.
    left: Vec<ValueType>,
    joined: Vec<ValueType>,
    /// The fields of the joined rows.
    fields: Vec<Field>,
    /// The joined columns given, in order.
    columns: Vec<usize>,
}

/// Joins each batch of its input with the rows of one foreign table that match it (see the
/// module notes), keeping the input's partitions and order.
#[derive(Debug)]
pub(crate) struct LookupJoinExec {
    input: Arc<dyn ExecutionPlan>,
    layout: Layout,
    schema: SchemaRef,
    properties: Arc<PlanProperties>,
    context: Arc<JoinContext>,
    /// The whole foreign table, read once, when the equations fix no key prefix.
    whole: Arc<OnceCell<Arc<RecordBatch>>>,
    metrics: ExecutionPlanMetricsSet,
}

impl LookupJoinExec {
    fn new(
        input: Arc<dyn ExecutionPlan>,
        layout: Layout,
        context: Arc<JoinContext>,
    ) -> LookupJoinExec {
        let schema = Arc::new(Schema::new(
            layout
                .columns
                .iter()
                .map(|&c| layout.fields[c].clone())
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
            layout,
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
        let step = &self.layout.steps[self.layout.step];
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
    layout: Arc<Layout>,
    schema: SchemaRef,
    context: Arc<JoinContext>,
    whole: Arc<OnceCell<Arc<RecordBatch>>>,
    /// The key ranges the partition's last batch read, and the rows they gave.
    last: Arc<std::sync::Mutex<Option<(Vec<KeyRange>, Arc<RecordBatch>)>>>,
}

impl Lookup {
    async fn join(&self, batch: RecordBatch) -> Result<RecordBatch> {
        let layout = &self.layout;
        let step = &layout.steps[layout.step];
        let opts = self.context.opts;
        let foreign_types = &layout.joined[layout.left.len()..];
        let self_keys = evaluate_all(&layout.self_keys, &batch, &layout.left, opts)?;
        let ids = LeftKeys::new(&self_keys)?;
        let distinct = ids.distinct(&self_keys)?;
        let each: Vec<u32> = (0..ids.firsts().len() as u32).collect();
        let ranges = join_ranges(&step.join, &step.schema, &distinct, &each)?;
        let foreign: Arc<RecordBatch> = match ranges {
            Some(ranges) if ranges.is_empty() => {
                Arc::new(RecordBatch::new_empty(joined_schema(foreign_types)))
            }
            Some(ranges) => self.read_ranges(ranges, foreign_types).await?,
            None => self
                .whole
                .get_or_try_init(|| async {
                    Ok::<_, Error>(Arc::new(self.read(None, foreign_types).await?))
                })
                .await?
                .clone(),
        };
        let (foreign, foreign_keys) = foreign_side(&step.join, &foreign, foreign_types, opts)?;
        let matches = ids.match_distinct(&distinct, &foreign_keys, step.join.left_outer)?;
        let passed = self.context.output[layout.step]
            .admit(matches.len() as u64)
            .ok_or(Error::LimitExceeded { what: "output" })? as usize;
        let foreign_rows = matches.foreign.slice(0, passed);
        // `None`: every left row once, in order, so the left columns are kept as they are.
        let left_rows = matches.left.map(|mut rows| {
            rows.truncate(passed);
            UInt32Array::from(rows)
        });
        let width = layout.left.len();
        let columns = layout
            .columns
            .iter()
            .zip(self.schema.fields())
            .map(|(&c, field)| {
                let taken = match (c < width, &left_rows) {
                    (true, None) => batch.column(c).slice(0, passed),
                    (true, Some(rows)) => take(batch.column(c), rows, None)?,
                    (false, _) => take(foreign.column(c - width), &foreign_rows, None)?,
                };
                match taken.data_type() == field.data_type() {
                    true => Ok(taken),
                    false => arrow::compute::cast(&taken, field.data_type()),
                }
            })
            .collect::<std::result::Result<Vec<_>, _>>()?;
        Ok(RecordBatch::try_new_with_options(
            self.schema.clone(),
            columns,
            &arrow::record_batch::RecordBatchOptions::new().with_row_count(Some(passed)),
        )?)
    }

    /// Reads the foreign rows of `ranges`, counting them as read.
    async fn read(&self, ranges: Option<&[KeyRange]>, types: &[ValueType]) -> Result<RecordBatch> {
        let step = &self.layout.steps[self.layout.step];
        let batch = step
            .foreign
            .batch(ranges, self.context.timestamp, types)
            .await?;
        self.count_read(&batch);
        Ok(batch)
    }

    /// The foreign rows of `ranges`, counted as read: those of the last batch when it asked
    /// for the same ranges (the snapshot is pinned, so they are the same rows), else read.
    async fn read_ranges(
        &self,
        ranges: Vec<KeyRange>,
        types: &[ValueType],
    ) -> Result<Arc<RecordBatch>> {
        let reused = {
            let last = self.last.lock().unwrap_or_else(PoisonError::into_inner);
            match &*last {
                Some((read, rows)) if *read == ranges => Some(rows.clone()),
                _ => None,
            }
        };
        if let Some(rows) = reused {
            self.count_read(&rows);
            return Ok(rows);
        }
        let rows = Arc::new(self.read(Some(&ranges), types).await?);
        *self.last.lock().unwrap_or_else(PoisonError::into_inner) = Some((ranges, rows.clone()));
        Ok(rows)
    }

    fn count_read(&self, batch: &RecordBatch) {
        self.context
            .rows_read
            .fetch_add(batch.num_rows() as u64, Ordering::Relaxed);
        self.context
            .data_weight
            .fetch_add(batch_weight(batch), Ordering::Relaxed);
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
            self.layout.clone(),
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
            layout: Arc::new(self.layout.clone()),
            schema: self.schema.clone(),
            context: self.context.clone(),
            whole: self.whole.clone(),
            last: Arc::default(),
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

/// The foreign rows that pass the join's predicate (as the row evaluator reads it: null is
/// false) and their equation values, evaluated over the passing rows only.
fn foreign_side(
    join: &JoinPlan,
    foreign: &RecordBatch,
    types: &[ValueType],
    opts: EvalOptions,
) -> Result<(RecordBatch, Vec<ArrayRef>)> {
    let passing = match &join.foreign_predicate {
        Some(p) => {
            // One expression, one array.
            let mask = evaluate_all(std::slice::from_ref(p), foreign, types, opts)?.remove(0);
            arrow::compute::filter_record_batch(foreign, mask.as_boolean())?
        }
        None => foreign.clone(),
    };
    let keys = evaluate_all(&join.foreign_keys, &passing, types, opts)?;
    Ok((passing, keys))
}

/// `exprs` evaluated over `batch` (columns of `types`), with one string budget.
fn evaluate_all(
    exprs: &[TypedExpr],
    batch: &RecordBatch,
    types: &[ValueType],
    opts: EvalOptions,
) -> Result<Vec<ArrayRef>> {
    let budget = Budget::new(MAX_BATCH_STRING_BYTES, batch.num_rows());
    let input = Batch {
        columns: batch.columns(),
        types,
        rows: batch.num_rows(),
        budget: &budget,
    };
    Ok(exprs
        .iter()
        .map(|e| match &e.kind {
            // A column the scan gives as a dictionary (see `JoinedTable::scan`) stays one:
            // the keys are interned through it.
            TExpr::Column(c)
                if matches!(batch.column(*c).data_type(), DataType::Dictionary(..)) =>
            {
                Ok(batch.column(*c).clone())
            }
            _ => evaluate(e, input, opts),
        })
        .collect::<dynql_ql::Result<Vec<_>>>()?)
}
