//! A bound YT QL query lowered onto a DataFusion logical plan and run over Arrow batches.
//!
//! ```text
//! scan (key ranges) ─▶ Filter(WHERE) ─▶ Aggregate(keys, aggregates) ─▶ Filter(HAVING) ─▶ Sort ─▶ Limit ─▶ Projection
//! ```
//!
//! Expressions become [`YtExpression`] calls over the columns they read (column references
//! and literals stay DataFusion's own); `sum`/`min`/`max`/`avg` of the types where
//! DataFusion's built-ins agree with YT use them, the other aggregates [`YtAggregate`].
//! Columns are named by position (`c0`.. for the table, `g0`../`a0`.. for group keys and
//! aggregates), as the bound plan refers to them.
//!
//! JOINs come first, as YT joins before WHERE: the scanned table is the main table joined
//! by lookup joins ([`JoinedTable`]).
//!
//! Where YT's result depends on scan order (no ORDER BY and no grouping, or `first`), the
//! plan runs as one partition in key order. The grouped rows are counted before HAVING, as
//! YT applies the output row limit to them.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use arrow::datatypes::{DataType, Field, Schema, SchemaRef};
use arrow::record_batch::RecordBatch;
use datafusion::common::Column;
use datafusion::dataframe::DataFrame;
use datafusion::datasource::{MemTable, TableProvider};
use datafusion::error::DataFusionError;
use datafusion::functions_aggregate::expr_fn::{avg, max, min, sum};
use datafusion::logical_expr::{lit, AggregateUDF, Expr, ScalarUDF};
use datafusion::prelude::{SessionConfig, SessionContext};

use dynql_core::arrow_convert::{arrow_type, batch_to_rows};
use dynql_core::ValueType;
use dynql_ql::ast::TotalsMode;
use dynql_ql::eval::EvalOptions;
use dynql_ql::functions::AggregateFunction;
use dynql_ql::plan::{AggregateCall, QueryPlan};
use dynql_ql::texpr::{TExpr, TypedExpr};
use dynql_storage::{KeyRange, ScanStatistics};

use super::lookup_join::{Foreign, JoinContext, JoinStep, JoinedTable};
use super::table_scan::{streamed, InputLimit, ScanReads, ScanTable};
use super::udf::{scalar, Check, YtAggregate, YtExpression};
use crate::error::{Error, Result};
use crate::select::{QueryResult, SelectOptions, Statistics};
use crate::source::{Source, Tables};

/// Whether the vectorised pipeline runs `plan` (the row pipeline runs the rest for now):
/// no WITH TOTALS, and no LIMIT of groups without ORDER BY (YT keeps the first groups in
/// scan order there).
pub(crate) fn lowerable(plan: &QueryPlan) -> bool {
    plan.group.as_ref().is_none_or(|g| {
        g.totals == TotalsMode::None && !(plan.limit.is_some() && plan.order_by.is_empty())
    })
}

/// Whether the result depends on the order rows are scanned in.
fn needs_scan_order(plan: &QueryPlan) -> bool {
    match &plan.group {
        None => plan.order_by.is_empty(),
        Some(g) => g
            .aggregates
            .iter()
            .any(|a| a.function == AggregateFunction::First),
    }
}

/// The dynql error behind a DataFusion error (raised by a YT function or the scan), or the
/// DataFusion error itself.
pub(crate) fn query_error(e: DataFusionError) -> Error {
    match e {
        DataFusionError::External(cause) => from_cause(cause),
        DataFusionError::Context(_, inner) => query_error(*inner),
        DataFusionError::ArrowError(arrow, backtrace) => match *arrow {
            arrow::error::ArrowError::ExternalError(cause) => from_cause(cause),
            other => Error::DataFusion(DataFusionError::ArrowError(Box::new(other), backtrace)),
        },
        other => {
            // Shared or collected errors: the query error can still be found by reference.
            let mut cause: Option<&(dyn std::error::Error + 'static)> = Some(&other);
            while let Some(c) = cause {
                if let Some(q) = c.downcast_ref::<dynql_ql::Error>() {
                    return Error::Query(q.clone());
                }
                cause = c.source();
            }
            Error::DataFusion(other)
        }
    }
}

fn from_cause(cause: Box<dyn std::error::Error + Send + Sync>) -> Error {
    let cause = match cause.downcast::<dynql_ql::Error>() {
        Ok(q) => return Error::Query(*q),
        Err(c) => c,
    };
    let cause = match cause.downcast::<dynql_storage::Error>() {
        Ok(s) => return Error::Storage(*s),
        Err(c) => c,
    };
    let cause = match cause.downcast::<Error>() {
        Ok(e) => return *e,
        Err(c) => c,
    };
    match cause.downcast::<DataFusionError>() {
        Ok(e) => query_error(*e),
        Err(c) => Error::DataFusion(DataFusionError::External(c)),
    }
}

/// Column names and YT types of the rows at one step of the plan.
type Layout = Vec<(String, ValueType)>;

fn column(name: &str) -> Expr {
    Expr::Column(Column::new_unqualified(name))
}

/// `e` over `layout` as a DataFusion expression.
fn lower(e: &TypedExpr, layout: &Layout, opts: EvalOptions, check: Check) -> Result<Expr> {
    if check == Check::None {
        match &e.kind {
            TExpr::Column(i) => return Ok(column(&layout[*i].0)),
            TExpr::Literal(v) => return Ok(lit(scalar(v, e.ty)?)),
            _ => {}
        }
    }
    let mut read = Vec::new();
    e.referenced_columns(&mut read);
    read.sort_unstable();
    let mut expr = e.clone();
    expr.remap_columns(&|c| read.iter().position(|&r| r == c).unwrap_or(c));
    let types = read.iter().map(|&c| layout[c].1).collect();
    let udf = ScalarUDF::from(YtExpression::new(expr, types, opts, check));
    Ok(udf.call(read.iter().map(|&c| column(&layout[c].0)).collect()))
}

/// An aggregate call: DataFusion's built-in where it computes exactly what YT does (nulls
/// skipped, null for no values, wrapping integer sums, averages as doubles), ours otherwise.
fn aggregate(call: &AggregateCall, layout: &Layout, opts: EvalOptions) -> Result<Expr> {
    let args = call
        .args
        .iter()
        .map(|a| lower(a, layout, opts, Check::None))
        .collect::<Result<Vec<_>>>()?;
    let ty = call.args.first().map(|a| a.ty);
    let numeric = matches!(
        ty,
        Some(ValueType::Int64 | ValueType::Uint64 | ValueType::Double)
    );
    let ordered = numeric || matches!(ty, Some(ValueType::Boolean | ValueType::String));
    let first = || args[0].clone();
    Ok(match call.function {
        AggregateFunction::Sum if numeric => sum(first()),
        AggregateFunction::Avg if numeric => avg(first()),
        AggregateFunction::Min if ordered => min(first()),
        AggregateFunction::Max if ordered => max(first()),
        f => {
            let types = call.args.iter().map(|a| a.ty).collect();
            AggregateUDF::from(YtAggregate::new(f, types, call.ty)).call(args)
        }
    })
}

/// The table's batches as a DataFusion table: columns `c0`.. in their wire types' Arrow
/// encodings (byte strings may stay views), one partition per tablet, or one in key order.
fn input_table(
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
/// the main table and of the joined row, whether it needs scan order, and a session
/// configured for it.
struct Setup {
    opts: EvalOptions,
    types: Vec<ValueType>,
    joined: Vec<ValueType>,
    ordered: bool,
    ctx: SessionContext,
}

impl Setup {
    fn new(plan: &QueryPlan, options: &SelectOptions) -> Setup {
        let wire = |schema: &dynql_core::TableSchema| -> Vec<ValueType> {
            schema.columns().iter().map(|c| c.wire_type()).collect()
        };
        let types = wire(&plan.sources[0].schema);
        let mut joined = types.clone();
        for join in &plan.joins {
            joined.extend(wire(&plan.sources[join.source].schema));
        }
        let ordered = needs_scan_order(plan);
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
            ctx: SessionContext::new_with_config(config),
        }
    }

    /// The rows the plan reads: the main table (dynamic tables stream from the query's
    /// snapshot; Parquet file tables are read whole, for now, and only when `read`) under
    /// one lookup join per JOIN clause. `None` when a file table is past the input row limit
    /// without `fail_on_incomplete_result` (the row pipeline then truncates as YT does).
    async fn input(
        &self,
        tables: &Tables,
        plan: &QueryPlan,
        ranges: &[KeyRange],
        options: &SelectOptions,
        read: bool,
    ) -> Result<Option<Input>> {
        let limit = Arc::new(InputLimit::new(options.input_row_limit));
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
                    let (batches, scan) = source
                        .viewed_batches(Some(ranges), options.timestamp)
                        .await?;
                    if scan.rows_read > options.input_row_limit {
                        if options.fail_on_incomplete_result {
                            return Err(Error::LimitExceeded { what: "input" });
                        }
                        return Ok(None);
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
            output: Arc::new(InputLimit::new(options.output_row_limit)),
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
struct Input {
    table: Arc<dyn TableProvider>,
    /// What a file table's whole read read.
    read_whole: Option<ScanStatistics>,
    limit: Arc<InputLimit>,
    reads: ScanReads,
    joins: Arc<JoinContext>,
}

impl Input {
    /// Whether a row limit was passed, as the error YT gives for it.
    fn exceeded(&self) -> Option<Error> {
        if self.limit.exceeded() {
            Some(Error::LimitExceeded { what: "input" })
        } else if self.joins.output.exceeded() {
            Some(Error::LimitExceeded { what: "output" })
        } else {
            None
        }
    }
}

/// The main table's columns as the plan names them (`c0`..).
fn table_layout(types: &[ValueType]) -> Layout {
    types
        .iter()
        .enumerate()
        .map(|(i, t)| (format!("c{i}"), *t))
        .collect()
}

/// Runs `plan` (accepted by [`lowerable`]) over the main table's `ranges`. `None` when a row
/// limit is exceeded without `fail_on_incomplete_result`: the row pipeline then truncates as
/// YT does.
pub(crate) async fn run(
    tables: &Tables,
    plan: &QueryPlan,
    ranges: &[KeyRange],
    options: &SelectOptions,
) -> Result<Option<QueryResult>> {
    let setup = Setup::new(plan, options);
    let Some(input) = setup.input(tables, plan, ranges, options, true).await? else {
        return Ok(None);
    };
    let Setup {
        opts, joined, ctx, ..
    } = setup;
    let mut df = ctx.read_table(input.table.clone())?;
    let mut layout = table_layout(&joined);
    if let Some(w) = &plan.where_clause {
        df = df.filter(lower(w, &layout, opts, Check::None)?)?;
    }
    if let Some(group) = &plan.group {
        let (grouped, keys, aggregates) = grouping(group, &layout, opts)?;
        df = df.aggregate(keys, aggregates)?;
        // The groups are counted before HAVING: YT's output limit applies to them.
        let schema: SchemaRef = Arc::new(df.schema().as_arrow().clone());
        let Some(groups) = collect(df, &input, options).await? else {
            return Ok(None);
        };
        let count: usize = groups.iter().map(RecordBatch::num_rows).sum();
        if count as u64 > options.output_row_limit {
            if options.fail_on_incomplete_result {
                return Err(Error::LimitExceeded { what: "output" });
            }
            return Ok(None);
        }
        df = ctx.read_table(Arc::new(MemTable::try_new(schema, vec![groups])?))?;
        layout = grouped;
        if let Some(h) = &group.having {
            df = df.filter(lower(h, &layout, opts, Check::None)?)?;
        }
    }
    df = order_and_limit(df, plan, &layout, opts)?;
    let projections = projections(plan, &layout, opts)?;
    let Some(batches) = collect(df.select(projections)?, &input, options).await? else {
        return Ok(None);
    };
    let out_types: Vec<ValueType> = plan.projections.iter().map(|p| p.expr.ty).collect();
    let mut rows = Vec::new();
    for b in &batches {
        rows.extend(batch_to_rows(&in_wire_types(b, &out_types)?, &out_types));
    }
    if rows.len() as u64 > options.output_row_limit {
        if options.fail_on_incomplete_result {
            return Err(Error::LimitExceeded { what: "output" });
        }
        return Ok(None);
    }
    let scan = match input.read_whole {
        Some(scan) => scan,
        None => streamed(&input.reads, input.limit.read()),
    };
    let statistics = Statistics {
        rows_read: scan.rows_read + input.joins.rows_read.load(Ordering::Relaxed),
        data_weight_read: scan.data_weight + input.joins.data_weight.load(Ordering::Relaxed),
        rows_written: rows.len() as u64,
        scan,
        ..Statistics::default()
    };
    Ok(Some(QueryResult {
        columns: plan
            .projections
            .iter()
            .map(|p| (p.name.clone(), p.expr.ty))
            .collect(),
        rows,
        statistics,
    }))
}

/// The physical plan DataFusion would run for `plan` (accepted by [`lowerable`]), as
/// indented text; nothing is read. Grouped queries show the whole pipeline in one plan (the
/// run counts the groups between aggregation and HAVING).
pub(crate) async fn explain(
    tables: &Tables,
    plan: &QueryPlan,
    ranges: &[KeyRange],
    options: &SelectOptions,
) -> Result<String> {
    let setup = Setup::new(plan, options);
    let input = setup
        .input(tables, plan, ranges, options, false)
        .await?
        .ok_or_else(|| DataFusionError::Internal("explaining reads nothing".into()))?;
    let Setup {
        opts, joined, ctx, ..
    } = setup;
    let mut df = ctx.read_table(input.table)?;
    let mut layout = table_layout(&joined);
    if let Some(w) = &plan.where_clause {
        df = df.filter(lower(w, &layout, opts, Check::None)?)?;
    }
    if let Some(group) = &plan.group {
        let (grouped, keys, aggregates) = grouping(group, &layout, opts)?;
        df = df.aggregate(keys, aggregates)?;
        layout = grouped;
        if let Some(h) = &group.having {
            df = df.filter(lower(h, &layout, opts, Check::None)?)?;
        }
    }
    df = order_and_limit(df, plan, &layout, opts)?;
    let physical = df
        .select(projections(plan, &layout, opts)?)?
        .create_physical_plan()
        .await?;
    let text = datafusion::physical_plan::displayable(physical.as_ref())
        .indent(true)
        .to_string();
    Ok(text)
}

/// The group keys (`g0`..) and aggregates (`a0`..) as DataFusion expressions, and the layout
/// of the grouped rows.
fn grouping(
    group: &dynql_ql::plan::GroupPlan,
    layout: &Layout,
    opts: EvalOptions,
) -> Result<(Layout, Vec<Expr>, Vec<Expr>)> {
    let mut keys = Vec::new();
    let mut grouped: Layout = Vec::new();
    for (i, k) in group.keys.iter().enumerate() {
        keys.push(lower(k, layout, opts, Check::None)?.alias(format!("g{i}")));
        grouped.push((format!("g{i}"), k.ty));
    }
    let mut aggregates = Vec::new();
    for (i, a) in group.aggregates.iter().enumerate() {
        aggregates.push(aggregate(a, layout, opts)?.alias(format!("a{i}")));
        grouped.push((format!("a{i}"), a.ty));
    }
    Ok((grouped, keys, aggregates))
}

/// The output columns (`p0`..).
fn projections(plan: &QueryPlan, layout: &Layout, opts: EvalOptions) -> Result<Vec<Expr>> {
    plan.projections
        .iter()
        .enumerate()
        .map(|(i, p)| Ok(lower(&p.expr, layout, opts, Check::None)?.alias(format!("p{i}"))))
        .collect()
}

/// Runs `df` to its batches. A scan past the input row limit (or joins past the output
/// row limit) fails the query with `fail_on_incomplete_result`, and otherwise gives `None`
/// (the row pipeline truncates).
async fn collect(
    df: DataFrame,
    input: &Input,
    options: &SelectOptions,
) -> Result<Option<Vec<RecordBatch>>> {
    match df.collect().await {
        Ok(batches) => Ok(Some(batches)),
        Err(e) => match input.exceeded() {
            Some(_) if !options.fail_on_incomplete_result => Ok(None),
            Some(limit) => Err(limit),
            None => Err(query_error(e)),
        },
    }
}

/// ORDER BY in YT's value order (null first ascending, last descending; a NaN key fails),
/// then OFFSET and LIMIT.
fn order_and_limit(
    mut df: DataFrame,
    plan: &QueryPlan,
    layout: &Layout,
    opts: EvalOptions,
) -> Result<DataFrame> {
    if !plan.order_by.is_empty() {
        let keys = plan
            .order_by
            .iter()
            .map(|(e, descending)| {
                let check = if e.ty == ValueType::Double {
                    Check::NoNanToOrder
                } else {
                    Check::None
                };
                Ok(lower(e, layout, opts, check)?.sort(!descending, !descending))
            })
            .collect::<Result<Vec<_>>>()?;
        df = df.sort(keys)?;
    }
    if plan.offset > 0 || plan.limit.is_some() {
        let offset = usize::try_from(plan.offset).unwrap_or(usize::MAX);
        let limit = plan.limit.map(|l| usize::try_from(l).unwrap_or(usize::MAX));
        df = df.limit(offset, limit)?;
    }
    Ok(df)
}

/// `batch` with each column in its YT type's Arrow type (DataFusion may return views or
/// wider types).
fn in_wire_types(batch: &RecordBatch, types: &[ValueType]) -> Result<RecordBatch> {
    let columns = batch
        .columns()
        .iter()
        .zip(types)
        .map(|(c, t)| {
            let to = arrow_type(*t);
            if c.data_type() == &to || to == DataType::Null {
                Ok(c.clone())
            } else {
                arrow::compute::cast(c, &to)
            }
        })
        .collect::<std::result::Result<Vec<_>, _>>()
        .map_err(DataFusionError::from)?;
    let fields: Vec<Field> = columns
        .iter()
        .enumerate()
        .map(|(i, c)| Field::new(format!("p{i}"), c.data_type().clone(), true))
        .collect();
    Ok(RecordBatch::try_new_with_options(
        Arc::new(Schema::new(fields)),
        columns,
        &arrow::record_batch::RecordBatchOptions::new().with_row_count(Some(batch.num_rows())),
    )
    .map_err(DataFusionError::from)?)
}
