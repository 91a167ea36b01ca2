//! The scan of a dynamic table inside a DataFusion plan: [`ScanTable`] (a `TableProvider`
//! over one planned [`TableScan`]) and [`TabletScanExec`], whose partitions stream the
//! selected tablets batch by batch ([`TableScan::stream`]), so memory holds a few batches
//! per partition, not the table. Only the projected columns leave the scan; YT's input row
//! limit is counted across all partitions as batches pass.

use std::fmt;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use arrow::datatypes::{DataType, Field, Schema, SchemaRef};
use arrow::record_batch::{RecordBatch, RecordBatchOptions};
use async_trait::async_trait;
use datafusion::catalog::Session;
use datafusion::common::tree_node::TreeNodeRecursion;
use datafusion::datasource::{TableProvider, TableType};
use datafusion::error::{DataFusionError, Result as DfResult};
use datafusion::execution::{SendableRecordBatchStream, TaskContext};
use datafusion::logical_expr::Expr;
use datafusion::physical_expr::{EquivalenceProperties, PhysicalExpr};
use datafusion::physical_plan::execution_plan::{Boundedness, EmissionType};
use datafusion::physical_plan::stream::RecordBatchStreamAdapter;
use datafusion::physical_plan::{
    DisplayAs, DisplayFormatType, ExecutionPlan, Partitioning, PlanProperties,
};
use futures::StreamExt;

use dynql_core::arrow_convert::arrow_type;
use dynql_core::ValueType;
use dynql_storage::{ScanStatistics, TableScan};

/// Rows per batch where the scan resolves versions row by row (clean row groups pass in
/// their own slices).
const BATCH_ROWS: usize = 8192;

/// A row limit of YT's (input rows, or the rows of one join), counted across the partitions
/// of one query. Past it a query fails, or (`truncate`, where the rows come in scan order)
/// keeps the rows up to it, as YT does without `fail_on_incomplete_result`.
#[derive(Debug)]
pub(crate) struct InputLimit {
    limit: u64,
    truncate: bool,
    read: AtomicU64,
    exceeded: AtomicBool,
}

impl InputLimit {
    pub(crate) fn new(limit: u64, truncate: bool) -> InputLimit {
        InputLimit {
            limit,
            truncate,
            read: AtomicU64::new(0),
            exceeded: AtomicBool::new(false),
        }
    }

    /// Counts `rows` more and gives how many of them pass: all of them within the limit;
    /// past it `None` (the query fails), or when truncating the ones up to the limit.
    pub(crate) fn admit(&self, rows: u64) -> Option<u64> {
        if !self.truncate {
            let read = self.read.fetch_add(rows, Ordering::Relaxed) + rows;
            if read > self.limit {
                self.exceeded.store(true, Ordering::Relaxed);
                return None;
            }
            return Some(rows);
        }
        let mut before = self.read.load(Ordering::Relaxed);
        loop {
            let after = before.saturating_add(rows).min(self.limit).max(before);
            match self.read.compare_exchange_weak(
                before,
                after,
                Ordering::Relaxed,
                Ordering::Relaxed,
            ) {
                Ok(_) => {
                    let passed = after - before;
                    if passed < rows {
                        self.exceeded.store(true, Ordering::Relaxed);
                    }
                    return Some(passed);
                }
                Err(now) => before = now,
            }
        }
    }

    /// Rows read so far (those within the limit, when truncating).
    pub(crate) fn read(&self) -> u64 {
        self.read.load(Ordering::Relaxed)
    }

    /// Whether rows went past the limit (failing the query, or cut when truncating).
    pub(crate) fn exceeded(&self) -> bool {
        self.exceeded.load(Ordering::Relaxed)
    }
}

/// What the streams of one query read, summed once they end.
pub(crate) type ScanReads = Arc<Mutex<Vec<Arc<Mutex<Option<ScanStatistics>>>>>>;

/// What the streams of a query read, summed.
pub(crate) fn streamed(reads: &ScanReads, rows_read: u64) -> ScanStatistics {
    let mut total = ScanStatistics {
        rows_read,
        ..ScanStatistics::default()
    };
    for read in reads.lock().unwrap_or_else(|p| p.into_inner()).iter() {
        if let Some(s) = *read.lock().unwrap_or_else(|p| p.into_inner()) {
            total.data_weight += s.data_weight;
            total.rows_decoded += s.rows_decoded;
            total.tablets.0 = total.tablets.0.max(s.tablets.0);
            total.tablets.1 = s.tablets.1;
            total.chunks.0 += s.chunks.0;
            total.chunks.1 = s.chunks.1;
            total.row_groups.0 += s.row_groups.0;
            total.row_groups.1 = s.row_groups.1;
        }
    }
    total
}

/// The column types of a table as the scan gives them: `c0`.. in the wire types' Arrow
/// types, byte strings as views.
pub(crate) fn scan_schema(types: &[ValueType]) -> SchemaRef {
    Arc::new(Schema::new(
        types
            .iter()
            .enumerate()
            .map(|(i, t)| {
                let data_type = match t {
                    ValueType::String | ValueType::Any => DataType::BinaryView,
                    t => arrow_type(*t),
                };
                Field::new(format!("c{i}"), data_type, true)
            })
            .collect::<Vec<_>>(),
    ))
}

/// A planned scan as a DataFusion table.
pub(crate) struct ScanTable {
    scan: TableScan,
    schema: SchemaRef,
    /// One partition reading the tablets in key order (for results that depend on it).
    in_key_order: bool,
    limit: Arc<InputLimit>,
    reads: ScanReads,
}

impl ScanTable {
    pub(crate) fn new(
        scan: TableScan,
        types: &[ValueType],
        in_key_order: bool,
        limit: Arc<InputLimit>,
        reads: ScanReads,
    ) -> ScanTable {
        ScanTable {
            scan,
            schema: scan_schema(types),
            in_key_order,
            limit,
            reads,
        }
    }
}

impl fmt::Debug for ScanTable {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ScanTable")
            .field("scan", &self.scan)
            .finish()
    }
}

#[async_trait]
impl TableProvider for ScanTable {
    fn schema(&self) -> SchemaRef {
        self.schema.clone()
    }

    fn table_type(&self) -> TableType {
        TableType::Base
    }

    async fn scan(
        &self,
        _state: &dyn Session,
        projection: Option<&Vec<usize>>,
        _filters: &[Expr],
        _limit: Option<usize>,
    ) -> DfResult<Arc<dyn ExecutionPlan>> {
        let projection = projection
            .cloned()
            .unwrap_or_else(|| (0..self.schema.fields().len()).collect());
        let schema = Arc::new(self.schema.project(&projection)?);
        Ok(Arc::new(TabletScanExec::new(
            self.scan.clone(),
            self.in_key_order,
            projection,
            schema,
            self.limit.clone(),
            self.reads.clone(),
        )))
    }
}

/// Streams the tablets of a [`TableScan`]: one partition per tablet (or one for all, in key
/// order), the projected columns only.
#[derive(Debug)]
pub(crate) struct TabletScanExec {
    scan: TableScan,
    partitions: Vec<Vec<usize>>,
    projection: Vec<usize>,
    schema: SchemaRef,
    properties: Arc<PlanProperties>,
    limit: Arc<InputLimit>,
    reads: ScanReads,
}

impl TabletScanExec {
    /// Streams `scan`'s tablets (one partition each, or one in key order for
    /// `in_key_order`), giving the scan-layout `columns` as `schema`'s fields (cast to
    /// their types: a string column shown as text fails on a value that is not UTF-8).
    pub(crate) fn new(
        scan: TableScan,
        in_key_order: bool,
        columns: Vec<usize>,
        schema: SchemaRef,
        limit: Arc<InputLimit>,
        reads: ScanReads,
    ) -> TabletScanExec {
        let tablets = scan.tablets().to_vec();
        let partitions: Vec<Vec<usize>> = if in_key_order || tablets.len() <= 1 {
            vec![tablets]
        } else {
            tablets.into_iter().map(|t| vec![t]).collect()
        };
        let properties = PlanProperties::new(
            EquivalenceProperties::new(schema.clone()),
            Partitioning::UnknownPartitioning(partitions.len()),
            EmissionType::Incremental,
            Boundedness::Bounded,
        );
        TabletScanExec {
            scan,
            partitions,
            projection: columns,
            schema,
            properties: Arc::new(properties),
            limit,
            reads,
        }
    }
}

impl DisplayAs for TabletScanExec {
    fn fmt_as(&self, _t: DisplayFormatType, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let planned = self.scan.planned();
        let columns = self.scan.entry().schema.query_schema();
        let names: Vec<&str> = self
            .projection
            .iter()
            .filter_map(|&i| columns.columns().get(i).map(|c| c.name.as_str()))
            .collect();
        write!(
            f,
            "TabletScanExec: table={}, ranges={}, tablets={}/{}, chunks={}/{}, row_groups={}/{}, columns=[{}]",
            self.scan.path(),
            self.scan.ranges().len(),
            planned.tablets.0,
            planned.tablets.1,
            planned.chunks.0,
            planned.chunks.1,
            planned.row_groups.0,
            planned.row_groups.1,
            names.join(", ")
        )
    }
}

impl ExecutionPlan for TabletScanExec {
    fn name(&self) -> &str {
        "TabletScanExec"
    }

    fn properties(&self) -> &Arc<PlanProperties> {
        &self.properties
    }

    fn children(&self) -> Vec<&Arc<dyn ExecutionPlan>> {
        vec![]
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
        if children.is_empty() {
            Ok(self)
        } else {
            Err(DataFusionError::Internal(
                "TabletScanExec has no children".into(),
            ))
        }
    }

    fn execute(
        &self,
        partition: usize,
        _context: Arc<TaskContext>,
    ) -> DfResult<SendableRecordBatchStream> {
        let tablets = self.partitions.get(partition).cloned().ok_or_else(|| {
            DataFusionError::Internal(format!("TabletScanExec has no partition {partition}"))
        })?;
        let stream = self.scan.stream(tablets, true, BATCH_ROWS);
        self.reads
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .push(stream.statistics());
        let schema = self.schema.clone();
        let projection = self.projection.clone();
        let limit = self.limit.clone();
        let out = schema.clone();
        let table = self.scan.path().to_string();
        // Past a truncating limit the stream ends with the rows up to it.
        let batches = stream.scan(false, move |cut, batch| {
            if *cut {
                return futures::future::ready(None);
            }
            let batch = batch
                .map_err(|e| DataFusionError::External(Box::new(e)))
                .and_then(|batch| {
                    let rows = batch.num_rows() as u64;
                    let passed = limit.admit(rows).ok_or_else(|| {
                        DataFusionError::External(Box::new(crate::Error::LimitExceeded {
                            what: "input",
                        }))
                    })?;
                    if passed < rows {
                        *cut = true;
                    }
                    project(&batch.slice(0, passed as usize), &projection, &out, &table)
                });
            futures::future::ready(Some(batch))
        });
        Ok(Box::pin(RecordBatchStreamAdapter::new(schema, batches)))
    }
}

/// The projected columns of a scanned batch of `table`, in the scan schema's types.
fn project(
    batch: &RecordBatch,
    projection: &[usize],
    schema: &SchemaRef,
    table: &str,
) -> DfResult<RecordBatch> {
    let columns = projection
        .iter()
        .zip(schema.fields())
        .map(|(&i, f)| {
            let c = batch.column(i);
            if c.data_type() == f.data_type() {
                Ok(c.clone())
            } else {
                let options = arrow::compute::CastOptions {
                    safe: false,
                    ..Default::default()
                };
                arrow::compute::cast_with_options(c, f.data_type(), &options).map_err(|e| {
                    if matches!(f.data_type(), DataType::Utf8 | DataType::Utf8View) {
                        DataFusionError::Execution(format!(
                            "column {} of {table} holds a value that is not UTF-8 text ({e}); SQL reads string columns as text, YT QL (select-rows) reads them as bytes",
                            f.name()
                        ))
                    } else {
                        DataFusionError::from(e)
                    }
                })
            }
        })
        .collect::<DfResult<Vec<_>>>()?;
    Ok(RecordBatch::try_new_with_options(
        schema.clone(),
        columns,
        &RecordBatchOptions::new().with_row_count(Some(batch.num_rows())),
    )?)
}
