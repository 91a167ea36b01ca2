//! The scan of a dynamic table inside a DataFusion plan: [`ScanTable`] (a `TableProvider`
//! over one planned [`TableScan`]) and [`TabletScanExec`], whose partitions stream the
//! selected tablets batch by batch ([`TableScan::stream`]), so memory holds a few batches
//! per partition, not the table. Only the projected columns leave the scan; YT's input row
//! limit is counted across all partitions as batches pass.

use std::fmt;
use std::sync::atomic::Ordering;
use std::sync::Arc;

use arrow::compute::SortOptions;
use arrow::datatypes::{DataType, Field, Schema, SchemaRef};
use async_trait::async_trait;
use datafusion::catalog::Session;
use datafusion::common::stats::Precision;
use datafusion::common::tree_node::TreeNodeRecursion;
use datafusion::common::Statistics as DfStatistics;
use datafusion::config::ConfigOptions;
use datafusion::datasource::{TableProvider, TableType};
use datafusion::error::{DataFusionError, Result as DfResult};
use datafusion::execution::{SendableRecordBatchStream, TaskContext};
use datafusion::logical_expr::Expr;
use datafusion::physical_expr::expressions::Column as ColumnExpr;
use datafusion::physical_expr::expressions::DynamicFilterPhysicalExpr;
use datafusion::physical_expr::{EquivalenceProperties, PhysicalExpr, PhysicalSortExpr};
use datafusion::physical_plan::execution_plan::{Boundedness, EmissionType};
use datafusion::physical_plan::filter_pushdown::{
    ChildPushdownResult, FilterPushdownPhase, FilterPushdownPropagation, PushedDown,
};
use datafusion::physical_plan::metrics::{ExecutionPlanMetricsSet, MetricsSet, RecordOutput};
use datafusion::physical_plan::statistics::StatisticsArgs;
use datafusion::physical_plan::stream::RecordBatchStreamAdapter;
use datafusion::physical_plan::{
    DisplayAs, DisplayFormatType, ExecutionPlan, Partitioning, PlanProperties,
};
use futures::StreamExt;

use dynql_core::arrow_convert::arrow_type;
use dynql_core::ValueType;
use dynql_storage::files::FileTable;
use dynql_storage::scan::batch_weight;
use dynql_storage::{
    AllOf, KeyRange, Prefetch, RowGroupFilter, ScanStatistics, ScanStream, TableScan,
};

use super::row_group_pruning::PushedFilters;
pub(crate) use super::scan_output::byte_string_dictionary;
use super::scan_output::{project, within_thresholds};
use super::scan_reads::{InputLimit, ScanMetrics, ScanReads};

/// Rows per batch where the scan resolves versions row by row (clean row groups pass in
/// their own slices).
const BATCH_ROWS: usize = 8192;

/// What a scan reads: the tablets of a planned [`TableScan`], or a Parquet file table at
/// key ranges (one partition, in key order).
#[derive(Clone)]
// One per scan, so the size of its largest variant costs nothing worth a box.
#[allow(clippy::large_enum_variant)]
pub(crate) enum ScanSource {
    Tablets(TableScan),
    Files {
        table: Arc<FileTable>,
        ranges: Vec<KeyRange>,
    },
}

impl fmt::Debug for ScanSource {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ScanSource::Tablets(scan) => scan.fmt(f),
            ScanSource::Files { table, .. } => write!(f, "Files({})", table.location()),
        }
    }
}

impl ScanSource {
    /// The partitions of a scan: the tablets shared out among at most `most` partitions, of
    /// about equal weight (see [`super::tablet_groups::tablet_groups`]); or one for all in key
    /// order.
    fn partitions(&self, in_key_order: bool, most: usize) -> Vec<Vec<usize>> {
        match self {
            ScanSource::Tablets(scan) => {
                let tablets = scan.tablets().to_vec();
                if in_key_order || tablets.len() <= 1 {
                    vec![tablets]
                } else {
                    super::tablet_groups::tablet_groups(&scan.tablet_weights(), most)
                }
            }
            ScanSource::Files { .. } => vec![vec![0]],
        }
    }

    /// A stream of the rows of `tablets` (one of [`ScanSource::partitions`]), of the
    /// `projection` columns only; byte strings as views, or where `dictionaries`, as
    /// dictionaries where the chunk cache keeps them so ([`TableScan::with_dictionaries`]);
    /// rows in key order, or where `any_order` as [`TableScan::with_rows_in_any_order`] gives.
    #[allow(clippy::too_many_arguments)]
    fn stream(
        &self,
        tablets: Vec<usize>,
        projection: &[usize],
        prefetch: Prefetch,
        pushed: &[Arc<dyn PhysicalExpr>],
        filter: Option<&Arc<dyn RowGroupFilter>>,
        fetch: Option<usize>,
        dictionaries: bool,
        any_order: bool,
    ) -> crate::Result<ScanStream> {
        Ok(match self {
            ScanSource::Tablets(scan) => {
                // Small slices go on together, but never past the rows a LIMIT needs.
                let gathered = fetch.unwrap_or(usize::MAX).min(BATCH_ROWS);
                let mut scan = scan.clone().with_gathered_slices(gathered);
                if dictionaries {
                    scan = scan.with_dictionaries();
                }
                if any_order {
                    scan = scan.with_rows_in_any_order();
                }
                let mut filters: Vec<Arc<dyn RowGroupFilter>> =
                    filter.into_iter().cloned().collect();
                if !pushed.is_empty() {
                    filters.push(Arc::new(PushedFilters::new(
                        pushed.to_vec(),
                        projection.to_vec(),
                    )));
                }
                match filters.len() {
                    0 => {}
                    1 => scan = scan.with_row_group_filter(filters.remove(0)),
                    _ => scan = scan.with_row_group_filter(Arc::new(AllOf::new(filters))),
                }
                scan.stream(
                    tablets,
                    Some(projection.to_vec()),
                    true,
                    BATCH_ROWS,
                    prefetch,
                )?
            }
            // Only the projected columns (and the key) are read from the files, of the row
            // groups the filter leaves.
            ScanSource::Files { table, ranges } => table.stream_filtered(
                Some(ranges.clone()),
                true,
                Some(projection.to_vec()),
                filter.cloned(),
            ),
        })
    }

    /// Whether the scan reads little ([`TableScan::is_small`]; file tables never are).
    pub(crate) fn is_small(&self) -> bool {
        match self {
            ScanSource::Tablets(scan) => scan.is_small(),
            ScanSource::Files { .. } => false,
        }
    }

    /// The table's name in the plan.
    fn name(&self) -> &str {
        match self {
            ScanSource::Tablets(scan) => scan.path(),
            ScanSource::Files { table, .. } => table.location(),
        }
    }

    /// The table's columns, in scan order.
    fn columns(&self) -> Vec<String> {
        let schema = match self {
            ScanSource::Tablets(scan) => scan.entry().schema.query_schema(),
            ScanSource::Files { table, .. } => table.schema().clone(),
        };
        schema.columns().iter().map(|c| c.name.clone()).collect()
    }

    /// What the scan plans to read.
    fn planned(&self) -> (usize, ScanStatistics) {
        match self {
            ScanSource::Tablets(scan) => (scan.ranges().len(), scan.planned()),
            ScanSource::Files { table, ranges } => (ranges.len(), table.explain(Some(ranges))),
        }
    }
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

/// DataFusion's projection of a table's columns (all of them when `None`) and the schema of
/// what it keeps.
pub(crate) fn projected(
    schema: &SchemaRef,
    projection: Option<&Vec<usize>>,
) -> DfResult<(Vec<usize>, SchemaRef)> {
    let projection = projection
        .cloned()
        .unwrap_or_else(|| (0..schema.fields().len()).collect());
    let kept = Arc::new(schema.project(&projection)?);
    Ok((projection, kept))
}

/// A planned scan as a DataFusion table.
pub(crate) struct ScanTable {
    scan: ScanSource,
    schema: SchemaRef,
    /// One partition reading the tablets in key order (for results that depend on it).
    in_key_order: bool,
    /// Whether the scan may skip row groups by the filters DataFusion pushes into it
    /// ([`TabletScanExec::prunes_row_groups`]).
    prunes_row_groups: bool,
    /// Rules clean row groups out by their statistics (a WHERE clause's bounds).
    filter: Option<Arc<dyn RowGroupFilter>>,
    limit: Arc<InputLimit>,
    reads: ScanReads,
}

impl ScanTable {
    pub(crate) fn new(
        scan: ScanSource,
        types: &[ValueType],
        in_key_order: bool,
        prunes_row_groups: bool,
        limit: Arc<InputLimit>,
        reads: ScanReads,
    ) -> ScanTable {
        ScanTable {
            scan,
            schema: scan_schema(types),
            in_key_order,
            prunes_row_groups,
            filter: None,
            limit,
            reads,
        }
    }

    /// This table, whose scans skip the clean row groups (of a file table: any) `filter`
    /// rules out by their table columns' statistics.
    pub(crate) fn with_row_group_filter(mut self, filter: Arc<dyn RowGroupFilter>) -> ScanTable {
        self.filter = Some(filter);
        self
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
        state: &dyn Session,
        projection: Option<&Vec<usize>>,
        _filters: &[Expr],
        limit: Option<usize>,
    ) -> DfResult<Arc<dyn ExecutionPlan>> {
        let (projection, schema) = projected(&self.schema, projection)?;
        let mut exec = TabletScanExec::new(
            self.scan.clone(),
            self.in_key_order,
            state.config().target_partitions(),
            projection,
            schema,
            self.limit.clone(),
            self.reads.clone(),
        );
        // A LIMIT in key order stops the read after its first rows.
        if self.in_key_order && limit.is_some() {
            exec.prefetch = Prefetch::Inline;
        }
        exec.prunes_row_groups = self.prunes_row_groups;
        exec.filter = self.filter.clone();
        exec.fetch = limit;
        Ok(Arc::new(exec))
    }
}

/// Streams the tablets of a [`TableScan`] (shared out among partitions, or in one for all in
/// key order) or a file table's rows in key order, the projected columns only.
#[derive(Debug, Clone)]
pub(crate) struct TabletScanExec {
    scan: ScanSource,
    in_key_order: bool,
    partitions: Vec<Vec<usize>>,
    prefetch: Prefetch,
    projection: Vec<usize>,
    schema: SchemaRef,
    properties: Arc<PlanProperties>,
    limit: Arc<InputLimit>,
    reads: ScanReads,
    /// Whether DataFusion's dynamic filters (a top-k threshold) may rule out clean row
    /// groups of the scan: only where skipping rows cannot change the result (see
    /// [`super::row_group_pruning`]).
    prunes_row_groups: bool,
    /// The dynamic filters pushed in, over the projected columns.
    pushed: Vec<Arc<dyn PhysicalExpr>>,
    /// Rules clean row groups out by their statistics, over the table's columns.
    filter: Option<Arc<dyn RowGroupFilter>>,
    /// At most the rows wanted of the scan (a LIMIT), if known.
    fetch: Option<usize>,
    /// Whether the query's result does not depend on the order of the scan's rows (it was
    /// planned without `in_key_order`), so that a reader the order does not matter to may
    /// take them in any order ([`TabletScanExec::in_any_row_order`]).
    order_free: bool,
    /// Whether the rows come in any order ([`TableScan::with_rows_in_any_order`]).
    any_order: bool,
    metrics: ExecutionPlanMetricsSet,
}

impl TabletScanExec {
    /// Streams `scan` (its tablets shared out among at most `partitions` partitions, see
    /// [`super::tablet_groups::tablet_groups`], or in one in key order for `in_key_order`),
    /// giving the scan-layout `columns` as `schema`'s fields (cast to
    /// their types: a string column shown as text fails on a value that is not UTF-8).
    pub(crate) fn new(
        scan: ScanSource,
        in_key_order: bool,
        partitions: usize,
        columns: Vec<usize>,
        schema: SchemaRef,
        limit: Arc<InputLimit>,
        reads: ScanReads,
    ) -> TabletScanExec {
        let partitions = scan.partitions(in_key_order, partitions);
        let properties = scan_properties(&scan, &partitions, &columns, &schema, &limit, false);
        // A small read is read inline; a large one gets a task per partition, reading a
        // batch ahead (which overlaps the object store's latency with the query's work).
        let prefetch = if scan.is_small() {
            Prefetch::Inline
        } else {
            Prefetch::Task
        };
        TabletScanExec {
            in_key_order: in_key_order || partitions.len() == 1,
            prefetch,
            scan,
            partitions,
            projection: columns,
            schema,
            properties: Arc::new(properties),
            limit,
            reads,
            prunes_row_groups: false,
            pushed: Vec::new(),
            filter: None,
            fetch: None,
            order_free: !in_key_order,
            any_order: false,
            metrics: ExecutionPlanMetricsSet::new(),
        }
    }
}

/// The properties of a scan of `columns` (as `schema`) in `partitions`: its partitions, and
/// the key order of each, as far as DataFusion may rely on it (none where the rows come in
/// `any_order`).
fn scan_properties(
    scan: &ScanSource,
    partitions: &[Vec<usize>],
    columns: &[usize],
    schema: &SchemaRef,
    limit: &InputLimit,
    any_order: bool,
) -> PlanProperties {
    // DataFusion may end a read in the declared order early (a LIMIT over it, a sort
    // it no longer needs), but YT sorts what ORDER BY asks unless it is a key prefix
    // (`reads_in_key_order`, planned without DataFusion's help), reading every row up
    // to the input row limit: the order is declared only where no limit can be met.
    // A partition of several tablets (not neighbours) is in key order only when it is the
    // only one (all tablets, in key order).
    let in_order = partitions.len() == 1 || partitions.iter().all(|p| p.len() <= 1);
    let ordering = match key_ordering(scan, columns, schema)
        .filter(|_| in_order && !any_order && scan_cannot_pass(scan, limit))
    {
        Some(ordering) => EquivalenceProperties::new_with_orderings(schema.clone(), [ordering]),
        None => EquivalenceProperties::new(schema.clone()),
    };
    PlanProperties::new(
        ordering,
        Partitioning::UnknownPartitioning(partitions.len()),
        EmissionType::Incremental,
        Boundedness::Bounded,
    )
}

impl TabletScanExec {
    /// This scan giving its output columns `columns` (byte strings, `BinaryView`) as
    /// dictionaries ([`byte_string_dictionary`]): a clean row group's column the chunk
    /// cache keeps as a dictionary of few values is handed on as it is, any other batch as
    /// a dictionary of its own rows. For a reader that works once per distinct value (a
    /// grouping by the column), which then skips expanding the dictionary and finding the
    /// group of every row. `None` where a column is not a byte string, or the scan holds
    /// filters over its output (pushed top-k thresholds) that expect views.
    pub(crate) fn with_dictionary_columns(&self, columns: &[usize]) -> Option<TabletScanExec> {
        if !self.pushed.is_empty()
            || columns.iter().any(|&c| {
                self.schema.fields().get(c).map(|f| f.data_type()) != Some(&DataType::BinaryView)
            })
        {
            return None;
        }
        let fields: Vec<Field> = self
            .schema
            .fields()
            .iter()
            .enumerate()
            .map(|(c, f)| {
                if columns.contains(&c) {
                    Field::clone(f).with_data_type(byte_string_dictionary())
                } else {
                    Field::clone(f)
                }
            })
            .collect();
        let schema = Arc::new(Schema::new_with_metadata(
            fields,
            self.schema.metadata().clone(),
        ));
        let properties = scan_properties(
            &self.scan,
            &self.partitions,
            &self.projection,
            &schema,
            &self.limit,
            self.any_order,
        );
        let mut exec = self.clone();
        exec.schema = schema;
        exec.properties = Arc::new(properties);
        exec.metrics = ExecutionPlanMetricsSet::new();
        Some(exec)
    }

    /// This scan giving its rows in any order ([`TableScan::with_rows_in_any_order`]), and
    /// declaring no key order: for a reader the order does not matter to (see
    /// [`super::any_row_order`]). `None` where the query's result depends on the scan's
    /// order, or for a file table (read in key order, nothing to save).
    pub(crate) fn in_any_row_order(&self) -> Option<TabletScanExec> {
        if !self.order_free || self.any_order || !matches!(self.scan, ScanSource::Tablets(_)) {
            return None;
        }
        let properties = scan_properties(
            &self.scan,
            &self.partitions,
            &self.projection,
            &self.schema,
            &self.limit,
            true,
        );
        let mut exec = self.clone();
        exec.any_order = true;
        exec.properties = Arc::new(properties);
        exec.metrics = ExecutionPlanMetricsSet::new();
        Some(exec)
    }

    /// Whether the scan gives some column as a dictionary.
    fn gives_dictionaries(&self) -> bool {
        self.schema
            .fields()
            .iter()
            .any(|f| matches!(f.data_type(), DataType::Dictionary(..)))
    }

    /// This scan, skipping the clean row groups (of a file table: any) `filter` rules out
    /// by their statistics (over the table's columns).
    pub(crate) fn with_row_group_filter(mut self, filter: Arc<dyn RowGroupFilter>) -> Self {
        self.filter = Some(filter);
        self
    }
}

impl DisplayAs for TabletScanExec {
    fn fmt_as(&self, _t: DisplayFormatType, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let (ranges, planned) = self.scan.planned();
        let columns = self.scan.columns();
        let names: Vec<&str> = self
            .projection
            .iter()
            .filter_map(|&i| columns.get(i).map(String::as_str))
            .collect();
        write!(
            f,
            "TabletScanExec: table={}, ranges={ranges}, tablets={}/{}, chunks={}/{}, row_groups={}/{}, columns=[{}]",
            self.scan.name(),
            planned.tablets.0,
            planned.tablets.1,
            planned.chunks.0,
            planned.chunks.1,
            planned.row_groups.0,
            planned.row_groups.1,
            names.join(", ")
        )?;
        if self.in_key_order {
            write!(f, ", in key order")?;
        }
        if self.any_order {
            write!(f, ", rows in any order")?;
        }
        if self.filter.is_some() {
            write!(f, ", prunes row groups by filter")?;
        }
        if !self.pushed.is_empty() {
            write!(f, ", prunes row groups and rows by top-k threshold")?;
        }
        Ok(())
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

    fn metrics(&self) -> Option<MetricsSet> {
        Some(self.metrics.clone_inner())
    }

    /// At most how many rows the scan gives (the planned row groups' versions and the
    /// dynamic store's keys), for the whole scan or its one partition: an estimate, since
    /// versions merge and WHERE's pruning skips.
    fn statistics_from_inputs(
        &self,
        _input_stats: &[Arc<DfStatistics>],
        args: &StatisticsArgs,
    ) -> DfResult<Arc<DfStatistics>> {
        let mut statistics = DfStatistics::new_unknown(&self.schema);
        if let ScanSource::Tablets(scan) = &self.scan {
            let most = scan.most_rows();
            if most != u64::MAX && (args.partition().is_none() || self.partitions.len() == 1) {
                statistics.num_rows = Precision::Inexact(most as usize);
            }
        }
        Ok(Arc::new(statistics))
    }

    fn apply_expressions(
        &self,
        f: &mut dyn FnMut(&Arc<dyn PhysicalExpr>) -> DfResult<TreeNodeRecursion>,
    ) -> DfResult<TreeNodeRecursion> {
        for filter in &self.pushed {
            if f(filter)? == TreeNodeRecursion::Stop {
                return Ok(TreeNodeRecursion::Stop);
            }
        }
        Ok(TreeNodeRecursion::Continue)
    }

    /// Keeps the dynamic filters pushed in (top-k thresholds) to skip row groups by their
    /// statistics and to drop the rows of a batch they rule out; the filters stay where they
    /// are too (the sort's own threshold moves between a batch's rows).
    fn handle_child_pushdown_result(
        &self,
        phase: FilterPushdownPhase,
        child_pushdown_result: ChildPushdownResult,
        _config: &ConfigOptions,
    ) -> DfResult<FilterPushdownPropagation<Arc<dyn ExecutionPlan>>> {
        let filters = child_pushdown_result.parent_filters;
        let unsupported = vec![PushedDown::No; filters.len()];
        let dynamic: Vec<Arc<dyn PhysicalExpr>> = filters
            .into_iter()
            .map(|f| f.filter)
            .filter(|f| f.downcast_ref::<DynamicFilterPhysicalExpr>().is_some())
            .collect();
        if !self.prunes_row_groups
            || phase != FilterPushdownPhase::Post
            || dynamic.is_empty()
            || !matches!(self.scan, ScanSource::Tablets(_))
        {
            return Ok(FilterPushdownPropagation::with_parent_pushdown_result(
                unsupported,
            ));
        }
        let mut exec = self.clone();
        exec.pushed.extend(dynamic);
        Ok(FilterPushdownPropagation {
            filters: unsupported,
            updated_node: Some(Arc::new(exec)),
        })
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
        let failed = |e: crate::Error| DataFusionError::External(Box::new(e));
        let stream = self
            .scan
            .stream(
                tablets,
                &self.projection,
                self.prefetch,
                &self.pushed,
                self.filter.as_ref(),
                self.fetch,
                self.gives_dictionaries(),
                self.any_order,
            )
            .map_err(failed)?;
        let metrics = Arc::new(ScanMetrics::new(&self.metrics, partition));
        self.reads
            .streams
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .push((stream.read(), metrics.clone()));
        let reads = self.reads.clone();
        let schema = self.schema.clone();
        // The scan's batches hold the projected columns, in order.
        let projection: Vec<usize> = (0..self.projection.len()).collect();
        let limit = self.limit.clone();
        let out = schema.clone();
        let table = self.scan.name().to_string();
        let pushed = self.pushed.clone();
        let span = tracing::debug_span!("scan", table = %table, partition);
        // Rows past the input limit end the stream (or fail it) only when more are asked
        // for: the rows up to the limit go first. The state is the stream still to read
        // (none after an error or the end) and whether rows were left over.
        let batches = futures::stream::unfold((Some(stream), false), move |(stream, over)| {
            let (limit, projection, out, table, reads, metrics, pushed) = (
                limit.clone(),
                projection.clone(),
                out.clone(),
                table.clone(),
                reads.clone(),
                metrics.clone(),
                pushed.clone(),
            );
            let span = span.clone();
            tracing::Instrument::instrument(
                async move {
                    let mut stream = stream?;
                    let overflow = || match limit.overflow() {
                        Ok(()) => None,
                        Err(e) => Some((Err(failed(e)), (None, false))),
                    };
                    if over {
                        return overflow();
                    }
                    // Waiting for a batch: decoding it, when the scan is read inline.
                    let timer = metrics.baseline.elapsed_compute().timer();
                    let next = stream.next().await;
                    timer.done();
                    let Some(next) = next else {
                        // Read to its end: what it read is known now (EXPLAIN ANALYZE in SQL
                        // shows the metrics before the query's statistics are gathered).
                        if let Some(read) = stream.read().finished().await {
                            metrics.add(&read);
                            tracing::debug!(
                                rows_decoded = read.rows_decoded,
                                row_groups_read = read.row_groups.0,
                                chunks_read = read.chunks.0,
                                "scan finished"
                            );
                        }
                        metrics.baseline.done();
                        return None;
                    };
                    let batch = match next {
                        Ok(batch) => batch,
                        Err(e) => return Some((Err(failed(e.into())), (None, false))),
                    };
                    let rows = batch.num_rows() as u64;
                    let passed = limit.take(rows);
                    if passed == 0 && rows > 0 {
                        return overflow();
                    }
                    // The stream weighs whole batches; a cut one is weighed here.
                    let batch = batch.slice(0, passed as usize);
                    let weight = if passed == rows {
                        stream.last_weight()
                    } else {
                        batch_weight(&batch)
                    };
                    reads.data_weight.fetch_add(weight, Ordering::Relaxed);
                    metrics.data_weight.add(weight as usize);
                    let projected = project(&batch, &projection, &out, &table)
                        .and_then(|b| within_thresholds(b, &pushed))
                        .map(|b| b.record_output(&metrics.baseline));
                    Some((projected, (Some(stream), passed < rows)))
                },
                span,
            )
        });
        Ok(Box::pin(RecordBatchStreamAdapter::new(schema, batches)))
    }
}

/// Whether `scan` gives at most `limit`'s rows, so that no early end of it can hide YT's
/// input row limit.
fn scan_cannot_pass(scan: &ScanSource, limit: &InputLimit) -> bool {
    match scan {
        ScanSource::Tablets(scan) => scan.most_rows() <= limit.limit(),
        ScanSource::Files { .. } => limit.limit() == u64::MAX,
    }
}

/// The order every partition of a scan gives its rows in, as far as DataFusion may rely on
/// it: the longest prefix of a sorted table's key whose columns are projected (`columns`,
/// named as in `schema`), ascending, nulls first (YT's null is the least value). Each
/// partition is a tablet, or the tablets in key order, read range by range in key order. A
/// double key ends the prefix (Arrow's order puts -0.0 before 0.0 and NaN last), and so does
/// a YSON (`any`) key, whose order is YT's and not its bytes'.
fn key_ordering(
    scan: &ScanSource,
    columns: &[usize],
    schema: &SchemaRef,
) -> Option<Vec<PhysicalSortExpr>> {
    let ScanSource::Tablets(scan) = scan else {
        return None;
    };
    let table = scan.entry().schema.query_schema();
    if !table.is_sorted() {
        return None;
    }
    let ascending = SortOptions {
        descending: false,
        nulls_first: true,
    };
    let mut ordering = Vec::new();
    for (k, key) in table.columns()[..table.key_column_count()]
        .iter()
        .enumerate()
    {
        let ordered = matches!(
            key.wire_type(),
            ValueType::Int64 | ValueType::Uint64 | ValueType::Boolean | ValueType::String
        );
        let Some(at) = columns.iter().position(|&c| c == k).filter(|_| ordered) else {
            break;
        };
        let column = ColumnExpr::new(schema.field(at).name(), at);
        ordering.push(PhysicalSortExpr::new(Arc::new(column), ascending));
    }
    (!ordering.is_empty()).then_some(ordering)
}
