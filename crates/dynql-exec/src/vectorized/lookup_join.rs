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
//! arrays on both sides, encoded as Arrow rows (doubles made canonical first, so that values
//! YT holds equal encode equally), matched through a hash index of the foreign rows, and the
//! output is gathered with `take`; the rows it gives stay in the order of their left rows.

use std::collections::HashMap;
use std::fmt;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, PoisonError};

use arrow::array::{Array, ArrayRef, AsArray, UInt32Array};
use arrow::compute::take;
use arrow::datatypes::{DataType, Field, Float64Type, Schema, SchemaRef};
use arrow::record_batch::RecordBatch;
use arrow::row::{Row, RowConverter, SortField};
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
use dynql_ql::texpr::TypedExpr;
use dynql_storage::files::FileTable;
use dynql_storage::scan::batch_weight;
use dynql_storage::{KeyRange, Prefetch, Snapshot, Timestamp};

use super::budget::Budget;
use super::evaluate::{evaluate, Batch};
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
    whole: Arc<OnceCell<Arc<RecordBatch>>>,
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
    whole: Arc<OnceCell<Arc<RecordBatch>>>,
    /// The key ranges the partition's last batch read, and the rows they gave.
    last: Arc<std::sync::Mutex<Option<(Vec<KeyRange>, Arc<RecordBatch>)>>>,
}

impl Lookup {
    async fn join(&self, batch: RecordBatch) -> Result<RecordBatch> {
        let step = &self.steps[self.step];
        let opts = self.context.opts;
        let foreign_types = &self.joined[self.left.len()..];
        let self_keys = evaluate_all(&step.join.self_keys, &batch, &self.left, opts)?;
        let foreign: Arc<RecordBatch> = match join_ranges(&step.join, &step.schema, &self_keys)? {
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
        let (mut left_rows, mut foreign_rows) =
            match_rows(&self_keys, &foreign_keys, step.join.left_outer)?;
        let passed = self.context.output[self.step]
            .admit(left_rows.len() as u64)
            .ok_or(Error::LimitExceeded { what: "output" })?;
        left_rows.truncate(passed as usize);
        foreign_rows.truncate(passed as usize);
        let left_rows = UInt32Array::from(left_rows);
        let foreign_rows = UInt32Array::from(foreign_rows);
        let width = self.left.len();
        // The scan may give byte strings as views; the joined schema has them as `Binary`.
        let columns = self
            .columns
            .iter()
            .zip(self.schema.fields())
            .map(|(&c, field)| {
                let taken = match c < width {
                    true => take(batch.column(c), &left_rows, None)?,
                    false => take(foreign.column(c - width), &foreign_rows, None)?,
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
            &arrow::record_batch::RecordBatchOptions::new().with_row_count(Some(left_rows.len())),
        )?)
    }

    /// Reads the foreign rows of `ranges`, counting them as read.
    async fn read(&self, ranges: Option<&[KeyRange]>, types: &[ValueType]) -> Result<RecordBatch> {
        let step = &self.steps[self.step];
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
        .map(|e| evaluate(e, input, opts))
        .collect::<dynql_ql::Result<Vec<_>>>()?)
}

/// The pairs of rows whose equation values are equal (nulls equal nulls, -0.0 equals 0.0,
/// NaN equals NaN, as YT's values compare), left rows in order, each with every match in
/// foreign order, or with none (a null foreign index) when unmatched in a LEFT join.
fn match_rows(
    left: &[ArrayRef],
    foreign: &[ArrayRef],
    left_outer: bool,
) -> Result<(Vec<u32>, Vec<Option<u32>>)> {
    let rows = left.first().map_or(0, |a| a.len());
    let canonical = |a: &[ArrayRef]| a.iter().map(canonical).collect::<Result<Vec<_>>>();
    let (left, foreign) = (canonical(left)?, canonical(foreign)?);
    let fields = left
        .iter()
        .map(|a| SortField::new(a.data_type().clone()))
        .collect();
    let converter = RowConverter::new(fields)?;
    let left = converter.convert_columns(&left)?;
    let foreign = converter.convert_columns(&foreign)?;
    // Foreign rows by key, each key's rows in foreign order.
    let mut index: HashMap<Row<'_>, Vec<u32>, foldhash::fast::FixedState> =
        HashMap::with_capacity_and_hasher(foreign.num_rows(), Default::default());
    for (i, key) in foreign.iter().enumerate() {
        index.entry(key).or_default().push(i as u32);
    }
    let mut left_rows = Vec::with_capacity(rows);
    let mut foreign_rows = Vec::with_capacity(rows);
    for (i, key) in left.iter().enumerate() {
        match index.get(&key) {
            Some(matches) => {
                for &m in matches {
                    left_rows.push(i as u32);
                    foreign_rows.push(Some(m));
                }
            }
            None if left_outer => {
                left_rows.push(i as u32);
                foreign_rows.push(None);
            }
            None => {}
        }
    }
    Ok((left_rows, foreign_rows))
}

/// Doubles with -0.0 as 0.0 and every NaN as one NaN, so that equal values (as YT compares
/// them) encode equally; byte strings as `Binary` (the evaluator gives `Binary` or
/// `BinaryView`, and both sides must encode alike); other arrays as they are.
fn canonical(a: &ArrayRef) -> Result<ArrayRef> {
    if let Some(d) = a.as_primitive_opt::<Float64Type>() {
        return Ok(Arc::new(d.unary::<_, Float64Type>(|v| match v {
            v if v.is_nan() => f64::NAN,
            v if v == 0.0 => 0.0,
            v => v,
        })));
    }
    Ok(match a.data_type() {
        DataType::BinaryView => arrow::compute::cast(a, &DataType::Binary)?,
        _ => a.clone(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use arrow::array::{BinaryArray, Float64Array, Int64Array};

    fn pairs(left: &[ArrayRef], foreign: &[ArrayRef], outer: bool) -> Vec<(u32, Option<u32>)> {
        let (l, f) = match_rows(left, foreign, outer).unwrap();
        l.into_iter().zip(f).collect()
    }

    #[test]
    fn equal_values_match_as_yt_compares_them() {
        // -0.0 is 0.0, NaN is NaN, null is null.
        let left: ArrayRef = Arc::new(Float64Array::from(vec![
            Some(0.0),
            Some(f64::NAN),
            None,
            Some(1.5),
        ]));
        let foreign: ArrayRef = Arc::new(Float64Array::from(vec![
            Some(-0.0),
            None,
            Some(-f64::NAN),
            Some(2.5),
        ]));
        assert_eq!(
            pairs(&[left], &[foreign], false),
            [(0, Some(0)), (1, Some(2)), (2, Some(1))]
        );
    }

    #[test]
    fn strings_match_whether_binary_or_views() {
        let left: ArrayRef = Arc::new(arrow::array::BinaryViewArray::from_iter([
            Some(b"a".as_slice()),
            None,
        ]));
        let foreign: ArrayRef = Arc::new(BinaryArray::from_iter([None, Some(b"a".as_slice())]));
        assert_eq!(
            pairs(&[left], &[foreign], false),
            [(0, Some(1)), (1, Some(0))]
        );
    }

    #[test]
    fn every_match_in_foreign_order_and_left_rows_in_order() {
        let left: Vec<ArrayRef> = vec![
            Arc::new(Int64Array::from(vec![2, 1, 3])),
            Arc::new(BinaryArray::from_iter_values([b"b", b"a", b"c"])),
        ];
        let foreign: Vec<ArrayRef> = vec![
            Arc::new(Int64Array::from(vec![1, 2, 1, 2])),
            Arc::new(BinaryArray::from_iter_values([b"a", b"b", b"a", b"x"])),
        ];
        assert_eq!(
            pairs(&left, &foreign, false),
            [(0, Some(1)), (1, Some(0)), (1, Some(2))]
        );
        // LEFT: the unmatched row once, with no foreign row.
        assert_eq!(
            pairs(&left, &foreign, true),
            [(0, Some(1)), (1, Some(0)), (1, Some(2)), (2, None)]
        );
    }
}
