//! What a lowered plan reads: the main table (a streaming scan of a dynamic table's tablets
//! or of a file table) under its lookup joins, with the counters of what was read and of YT's row
//! limits, and the DataFusion session the plan runs in.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use datafusion::datasource::TableProvider;
use datafusion::prelude::SessionContext;

use dynql_core::ValueType;
use dynql_ql::eval::EvalOptions;
use dynql_ql::plan::QueryPlan;
use dynql_storage::KeyRange;

use super::evaluate::infallible;
use super::lookup_join::{Foreign, JoinContext, JoinStep, JoinedTable};
use super::lower::{groups_in_scan_order, needs_scan_order, reads_in_key_order, Layout};
use super::scan_reads::{streamed, InputLimit, ScanReads};
use super::stages::Stages;
use super::table_scan::{ScanSource, ScanTable};
use super::where_pruning::{skippable, WhereFilter};
use crate::engine::Engine;
use crate::error::{Error, Result};
use crate::select::{SelectOptions, Statistics};
use crate::source::Tables;

/// Whether the rows of `plan` that a top-k threshold rules out may go unread (see
/// [`super::row_group_pruning`]): an ungrouped, unjoined ORDER BY … LIMIT whose WHERE and
/// ORDER BY cannot fail on a row (YT evaluates them on every row; a double key's NaN is
/// known from its writer's record). The caller also checks the input row limit cannot be
/// reached, as YT counts every row.
fn skipping_rows_is_safe(plan: &QueryPlan) -> bool {
    plan.joins.is_empty()
        && plan.group.is_none()
        && plan.limit.is_some()
        && !plan.order_by.is_empty()
        && plan.where_clause.as_ref().is_none_or(infallible)
        && plan.order_by.iter().all(|(e, _)| infallible(e))
}

/// The filter that skips the clean row groups no row of which can pass the WHERE of `plan`
/// (see [`super::where_pruning`]), for a table whose columns are the clause's (a sorted
/// table, or files: `plain`) and which holds at most `most_rows`: where the clause cannot
/// fail on a skipped row, no join reads the rows, and the input row limit (which counts
/// every row YT reads) cannot be reached.
fn where_filter(
    plan: &QueryPlan,
    plain: bool,
    most_rows: u64,
    options: &SelectOptions,
) -> Option<WhereFilter> {
    let clause = plan.where_clause.as_ref()?;
    if !plain || !plan.joins.is_empty() || !skippable(clause) || most_rows > options.input_row_limit
    {
        return None;
    }
    WhereFilter::new(clause)
}

/// What running and explaining a plan share: the evaluation options, the column types of
/// the main table and of the joined row, whether it runs in scan order (and so cuts rows at
/// YT's row limits without `fail_on_incomplete_result`), and a session configured for it.
pub(super) struct Setup {
    pub(super) opts: EvalOptions,
    pub(super) types: Vec<ValueType>,
    pub(super) joined: Vec<ValueType>,
    /// One partition, in key order.
    pub(super) ordered: bool,
    /// Row limits cut the rows in scan order instead of failing the query.
    pub(super) truncate: bool,
    /// `fail_on_incomplete_result`.
    pub(super) fail: bool,
    /// A second run, in scan order, of a query a parallel run could not decide: grouped, it
    /// meets the output row limit at each new group, as YT does.
    pub(super) rerun: bool,
    /// The physical plans the run executes.
    pub(super) stages: Stages,
    pub(super) ctx: SessionContext,
    /// The runtime and sessions the run plans in.
    pub(super) engine: Engine,
}

impl Setup {
    /// For `plan`, in scan order where its result depends on it or `in_scan_order`.
    pub(super) fn new(
        engine: &Engine,
        plan: &QueryPlan,
        options: &SelectOptions,
        in_scan_order: bool,
    ) -> Setup {
        let wire = |schema: &dynql_core::TableSchema| -> Vec<ValueType> {
            schema.columns().iter().map(|c| c.wire_type()).collect()
        };
        let types = wire(&plan.sources[0].schema);
        let mut joined = types.clone();
        for join in &plan.joins {
            joined.extend(wire(&plan.sources[join.source].schema));
        }
        let ordered = in_scan_order
            || needs_scan_order(plan)
            || groups_in_scan_order(plan)
            || reads_in_key_order(plan);
        Setup {
            opts: EvalOptions {
                canonical_null_relations: options.use_canonical_null_relations,
            },
            types,
            joined,
            ordered,
            truncate: ordered && !options.fail_on_incomplete_result,
            fail: options.fail_on_incomplete_result,
            rerun: in_scan_order,
            stages: Stages::default(),
            ctx: engine.session(ordered),
            engine: engine.clone(),
        }
    }

    /// The rows the plan reads: the main table (a dynamic table streamed from the query's
    /// snapshot, or Parquet files streamed in key order) under one lookup join per JOIN
    /// clause.
    pub(super) async fn input(
        &mut self,
        tables: &Tables,
        plan: &QueryPlan,
        ranges: &[KeyRange],
        options: &SelectOptions,
    ) -> Result<Input> {
        let limit = Arc::new(InputLimit::new(options.input_row_limit, self.truncate));
        let reads: ScanReads = Arc::default();
        let path = &plan.sources[0].path;
        let source = match tables.files.get(path) {
            None => {
                let scan =
                    tables
                        .snapshot
                        .plan_table_scan(path, Some(ranges), options.timestamp)?;
                ScanSource::Tablets(match &options.progress {
                    Some(progress) => scan.with_progress(progress.clone()),
                    None => scan,
                })
            }
            Some(files) => ScanSource::Files {
                table: files.clone(),
                ranges: ranges.to_vec(),
            },
        };
        if source.is_small() {
            // A small read runs in one partition: repartitioning its few batches across
            // cores costs more (tasks, channels) than the work it would share.
            self.ctx = self.engine.session(true);
        }
        let prunes = match &source {
            ScanSource::Tablets(scan) => {
                skipping_rows_is_safe(plan) && scan.most_rows() <= options.input_row_limit
            }
            ScanSource::Files { .. } => false,
        };
        let where_filter = match &source {
            ScanSource::Tablets(scan) => {
                let sorted = plan.sources[0].schema.is_sorted();
                where_filter(plan, sorted, scan.most_rows(), options)
            }
            // A file's rows are single versions: any file table, sorted or not.
            ScanSource::Files { table, .. } => where_filter(plan, true, table.row_count(), options),
        };
        let mut main = ScanTable::new(
            source,
            &self.types,
            self.ordered,
            prunes,
            limit.clone(),
            reads.clone(),
        );
        if let Some(filter) = where_filter {
            main = main.with_row_group_filter(Arc::new(filter));
        }
        let main: Arc<dyn TableProvider> = Arc::new(main);
        let joins = Arc::new(JoinContext {
            opts: self.opts,
            timestamp: options.timestamp,
            output: plan
                .joins
                .iter()
                .map(|_| InputLimit::new(options.output_row_limit, self.truncate))
                .collect(),
            rows_read: AtomicU64::new(0),
            data_weight: AtomicU64::new(0),
        });
        let table = if plan.joins.is_empty() {
            main
        } else {
            let steps = plan
                .joins
                .iter()
                .map(|join| {
                    let source = &plan.sources[join.source];
                    let foreign = match tables.files.get(&source.path) {
                        Some(files) => Foreign::Files(files.clone()),
                        None => Foreign::Store {
                            snapshot: tables.snapshot.clone(),
                            path: source.path.clone(),
                        },
                    };
                    JoinStep {
                        join: join.clone(),
                        foreign,
                        schema: source.schema.clone(),
                    }
                })
                .collect();
            Arc::new(JoinedTable::new(main, &self.types, steps, joins.clone()))
        };
        Ok(Input {
            table,
            limit,
            reads,
            joins,
        })
    }
}

/// The table a plan reads and the counters of what it read.
pub(super) struct Input {
    pub(super) table: Arc<dyn TableProvider>,
    pub(super) limit: Arc<InputLimit>,
    pub(super) reads: ScanReads,
    pub(super) joins: Arc<JoinContext>,
}

impl Input {
    /// Whether a row limit was passed, as the error YT gives for it.
    pub(super) fn exceeded(&self) -> Option<Error> {
        if self.limit.exceeded() {
            Some(Error::LimitExceeded { what: "input" })
        } else if self.joins.output.iter().any(InputLimit::exceeded) {
            Some(Error::LimitExceeded { what: "output" })
        } else {
            None
        }
    }

    /// What the plan read: the main table's scan and the joins' lookups. Call it once the
    /// plan has run: it waits for the scan's reading tasks to end.
    pub(super) async fn statistics(&self) -> Statistics {
        let scan = streamed(&self.reads, self.limit.read()).await;
        Statistics {
            rows_read: scan.rows_read + self.joins.rows_read.load(Ordering::Relaxed),
            data_weight_read: scan.data_weight + self.joins.data_weight.load(Ordering::Relaxed),
            incomplete_input: self.limit.exceeded(),
            incomplete_output: self.joins.output.iter().any(InputLimit::exceeded),
            scan,
            ..Statistics::default()
        }
    }
}

/// The main table's columns as the plan names them (`c0`..).
pub(super) fn table_layout(types: &[ValueType]) -> Layout {
    types
        .iter()
        .enumerate()
        .map(|(i, t)| (format!("c{i}"), *t))
        .collect()
}
