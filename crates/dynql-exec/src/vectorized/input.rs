//! What a lowered plan reads: the main table (a streaming tablet scan, or a file table's
//! batches) under its lookup joins, with the counters of what was read and of YT's row
//! limits, and the DataFusion session the plan runs in.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use arrow::datatypes::{DataType, Field, Schema, SchemaRef};
use arrow::record_batch::RecordBatch;
use datafusion::datasource::{MemTable, TableProvider};
use datafusion::error::DataFusionError;
use datafusion::prelude::{SessionConfig, SessionContext};

use dynql_core::arrow_convert::{arrow_type, batch_to_rows};
use dynql_core::ValueType;
use dynql_ql::eval::EvalOptions;
use dynql_ql::plan::QueryPlan;
use dynql_storage::scan::row_weight;
use dynql_storage::{KeyRange, ScanStatistics};

use super::lookup_join::{Foreign, JoinContext, JoinStep, JoinedTable};
use super::lower::{groups_in_scan_order, needs_scan_order, Layout};
use super::table_scan::{streamed, InputLimit, ScanReads, ScanTable};
use crate::error::{Error, Result};
use crate::select::{SelectOptions, Statistics};
use crate::source::{Source, Tables};

/// The table's batches as a DataFusion table: columns `c0`.. in their wire types' Arrow
/// encodings (byte strings may stay views), one partition per tablet, or one in key order.
pub(super) fn input_table(
    batches: Vec<(usize, RecordBatch)>,
    types: &[ValueType],
    one_partition: bool,
) -> Result<MemTable> {
    let view = |b: &RecordBatch, i: usize| b.column(i).data_type() == &DataType::BinaryView;
    let fields: Vec<Field> = types
        .iter()
        .enumerate()
        .map(|(i, t)| {
            let data_type = match batches.first() {
                Some((_, b)) if view(b, i) => DataType::BinaryView,
                _ => arrow_type(*t),
            };
            Field::new(format!("c{i}"), data_type, true)
        })
        .collect();
    let schema: SchemaRef = Arc::new(Schema::new(fields));
    let mut partitions: Vec<Vec<RecordBatch>> = Vec::new();
    let mut current = None;
    for (tablet, b) in batches {
        let columns = b
            .columns()
            .iter()
            .zip(schema.fields())
            .map(|(c, f)| {
                if c.data_type() == f.data_type() {
                    Ok(c.clone())
                } else {
                    arrow::compute::cast(c, f.data_type())
                }
            })
            .collect::<std::result::Result<Vec<_>, _>>()
            .map_err(DataFusionError::from)?;
        let b = RecordBatch::try_new(schema.clone(), columns).map_err(DataFusionError::from)?;
        if partitions.is_empty() || (!one_partition && current != Some(tablet)) {
            partitions.push(Vec::new());
        }
        current = Some(tablet);
        if let Some(p) = partitions.last_mut() {
            p.push(b);
        }
    }
    if partitions.is_empty() {
        partitions.push(Vec::new());
    }
    Ok(MemTable::try_new(schema, partitions)?)
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
    pub(super) ctx: SessionContext,
}

impl Setup {
    /// For `plan`, in scan order where its result depends on it or `in_scan_order`.
    pub(super) fn new(plan: &QueryPlan, options: &SelectOptions, in_scan_order: bool) -> Setup {
        let wire = |schema: &dynql_core::TableSchema| -> Vec<ValueType> {
            schema.columns().iter().map(|c| c.wire_type()).collect()
        };
        let types = wire(&plan.sources[0].schema);
        let mut joined = types.clone();
        for join in &plan.joins {
            joined.extend(wire(&plan.sources[join.source].schema));
        }
        let ordered = in_scan_order || needs_scan_order(plan) || groups_in_scan_order(plan);
        let mut config = SessionConfig::new();
        if ordered {
            config = config.with_target_partitions(1);
        }
        Setup {
            opts: EvalOptions {
                canonical_null_relations: options.use_canonical_null_relations,
            },
            types,
            joined,
            ordered,
            truncate: ordered && !options.fail_on_incomplete_result,
            fail: options.fail_on_incomplete_result,
            ctx: SessionContext::new_with_config(config),
        }
    }

    /// The rows the plan reads: the main table (dynamic tables stream from the query's
    /// snapshot; Parquet file tables are read whole, for now, and only when `read`) under
    /// one lookup join per JOIN clause. `None` when a file table is past the input row limit
    /// without `fail_on_incomplete_result` and the rows are not in scan order.
    pub(super) async fn input(
        &self,
        tables: &Tables,
        plan: &QueryPlan,
        ranges: &[KeyRange],
        options: &SelectOptions,
        read: bool,
    ) -> Result<Option<Input>> {
        let limit = Arc::new(InputLimit::new(options.input_row_limit, self.truncate));
        let reads: ScanReads = Arc::default();
        let path = &plan.sources[0].path;
        let (main, read_whole): (Arc<dyn TableProvider>, Option<ScanStatistics>) =
            match tables.files.get(path) {
                None => {
                    let scan =
                        tables
                            .snapshot
                            .plan_table_scan(path, Some(ranges), options.timestamp)?;
                    let table = ScanTable::new(
                        scan,
                        &self.types,
                        self.ordered,
                        limit.clone(),
                        reads.clone(),
                    );
                    (Arc::new(table), None)
                }
                Some(_) if !read => (
                    Arc::new(input_table(Vec::new(), &self.types, self.ordered)?),
                    None,
                ),
                Some(files) => {
                    let source = Source::Files(files);
                    let (mut batches, mut scan) = source
                        .viewed_batches(Some(ranges), options.timestamp)
                        .await?;
                    if scan.rows_read > options.input_row_limit {
                        if options.fail_on_incomplete_result {
                            return Err(Error::LimitExceeded { what: "input" });
                        }
                        if !self.truncate {
                            return Ok(None);
                        }
                        let kept = limit.admit(scan.rows_read).unwrap_or(0);
                        batches = first_rows(batches, kept as usize);
                        scan.rows_read = kept;
                        scan.data_weight = batches
                            .iter()
                            .flat_map(|(_, b)| batch_to_rows(b, &self.types))
                            .map(|r| row_weight(&r))
                            .sum();
                    }
                    (
                        Arc::new(input_table(batches, &self.types, self.ordered)?),
                        Some(scan),
                    )
                }
            };
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
        Ok(Some(Input {
            table,
            read_whole,
            limit,
            reads,
            joins,
        }))
    }
}

/// The table a plan reads and the counters of what it read.
pub(super) struct Input {
    pub(super) table: Arc<dyn TableProvider>,
    /// What a file table's whole read read.
    pub(super) read_whole: Option<ScanStatistics>,
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

    /// What the plan read: the main table's scan (or file read) and the joins' lookups.
    pub(super) fn statistics(&self) -> Statistics {
        let scan = match self.read_whole {
            Some(scan) => scan,
            None => streamed(&self.reads, self.limit.read()),
        };
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

/// The first `rows` rows of `batches`.
fn first_rows(batches: Vec<(usize, RecordBatch)>, rows: usize) -> Vec<(usize, RecordBatch)> {
    let mut left = rows;
    let mut out = Vec::new();
    for (tablet, b) in batches {
        if left == 0 {
            break;
        }
        let n = b.num_rows().min(left);
        left -= n;
        out.push((tablet, b.slice(0, n)));
    }
    out
}

/// The main table's columns as the plan names them (`c0`..).
pub(super) fn table_layout(types: &[ValueType]) -> Layout {
    types
        .iter()
        .enumerate()
        .map(|(i, t)| (format!("c{i}"), *t))
        .collect()
}
