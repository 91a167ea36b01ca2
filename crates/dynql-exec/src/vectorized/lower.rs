//! A bound YT QL query lowered onto a DataFusion logical plan and run over Arrow batches.
//!
//! ```text
//! scan (key ranges) ─▶ Filter(WHERE) ─▶ Aggregate(keys, aggregates) ─▶ GroupLimitExec ─▶ Filter(HAVING) ─▶ Sort ─▶ Limit ─▶ Projection
//! ```
//!
//! Expressions become [`YtExpression`] calls over the columns they read (column references
//! and literals stay DataFusion's own); `sum`/`min`/`max`/`avg` of the types where
//! DataFusion's built-ins agree with YT use them, the other aggregates [`YtAggregate`].
//! Columns are named by position (`c0`.. for the table, `g0`../`a0`.. for group keys and
//! aggregates), as the bound plan refers to them.
//!
//! JOINs come first, as YT joins before WHERE: the scanned table is the main table joined
//! by lookup joins ([`super::lookup_join::JoinedTable`]).
//!
//! Where YT's result depends on scan order (no ORDER BY and no grouping, `first`, WITH
//! TOTALS, LIMIT of groups without ORDER BY), the plan runs as one partition in key order;
//! grouping that keeps the first groups goes through [`FirstGroupsExec`]. The grouped rows
//! are counted before HAVING, as YT applies the output row limit to them
//! ([`GroupLimitExec`]). WITH TOTALS aggregates each group's state too (as DataFusion's own
//! aggregates where the state is a value, or a sum and count; encoded otherwise), merged into
//! the totals row by a [`TotalsExec`] before or after HAVING. Every query is one plan.
//!
//! YT's row limits: with `fail_on_incomplete_result` passing one fails the query. Without
//! it YT keeps the rows up to the limit in scan order: a run in scan order cuts them there
//! (and marks the result incomplete); a parallel run that passes a limit is repeated in
//! scan order.

use std::sync::atomic::AtomicBool;
use std::sync::Arc;

use arrow::array::ArrayRef;
use arrow::datatypes::{DataType, Field, Schema};
use arrow::record_batch::RecordBatch;
use datafusion::common::Column;
use datafusion::dataframe::DataFrame;
use datafusion::error::DataFusionError;
use datafusion::functions_aggregate::expr_fn::{avg, count, max, min, sum};
use datafusion::logical_expr::{cast, lit, AggregateUDF, Expr, ScalarUDF};
use datafusion::physical_plan::{execute_stream, SendableRecordBatchStream};

use dynql_core::arrow_convert::arrow_type;
use dynql_core::{Value, ValueType};
use dynql_ql::ast::TotalsMode;
use dynql_ql::eval::EvalOptions;
use dynql_ql::functions::AggregateFunction;
use dynql_ql::plan::{AggregateCall, GroupPlan, QueryPlan};
use dynql_ql::texpr::{TExpr, TypedExpr};
use dynql_storage::KeyRange;

use super::first_groups::{Admission, FirstGroupsExec, PlanTable, ORDINAL};
use super::group_limit::GroupLimitExec;
use super::input::{table_layout, Setup};
use super::key_order::key_order_plan;
use super::results::{Limits, Results};
use super::totals::{StateColumns, Totals, TotalsExec, TotalsSlot};
use super::udf::{scalar, Check, YtAggregate, YtExpression};
use crate::engine::Engine;
use crate::error::{Error, Result};
use crate::select::{QueryStream, SelectOptions};
use crate::source::Tables;

/// Whether the result depends on the order rows are scanned in.
pub(super) fn needs_scan_order(plan: &QueryPlan) -> bool {
    match &plan.group {
        None => plan.order_by.is_empty(),
        Some(g) => g
            .aggregates
            .iter()
            .any(|a| a.function == AggregateFunction::First),
    }
}

/// Whether the rows are wanted in key order (no joins, no grouping, no ORDER BY or one by a
/// prefix of the key ascending): then the plan reads the tablets in key order without
/// sorting, and stops reading once OFFSET + LIMIT rows pass WHERE, or one past the output
/// row limit.
pub(super) fn reads_in_key_order(plan: &QueryPlan) -> bool {
    plan.joins.is_empty()
        && plan.group.is_none()
        && plan.sources[0].schema.is_sorted()
        && ordered_by_key_prefix(plan)
}

/// Whether ORDER BY (if any) is by a prefix of the main table's key, ascending: the order
/// rows are scanned in when read in key order.
fn ordered_by_key_prefix(plan: &QueryPlan) -> bool {
    plan.order_by.len() <= plan.sources[0].schema.key_column_count()
        && plan
            .order_by
            .iter()
            .enumerate()
            .all(|(i, (e, desc))| !desc && matches!(e.kind, TExpr::Column(c) if c == i))
}

/// Whether grouping keeps groups in the order they first appear: LIMIT without ORDER BY
/// (the first groups are kept), or WITH TOTALS of a `first` aggregate (the totals take the
/// first group's). Other totals merge states whose result does not depend on the order, so
/// their groups are aggregated in parallel.
pub(super) fn groups_in_scan_order(plan: &QueryPlan) -> bool {
    plan.group.as_ref().is_some_and(|g| {
        (plan.limit.is_some() && plan.order_by.is_empty())
            || (g.totals != TotalsMode::None
                && g.aggregates
                    .iter()
                    .any(|a| a.function == AggregateFunction::First))
    })
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
pub(super) type Layout = Vec<(String, ValueType)>;

fn column(name: &str) -> Expr {
    Expr::Column(Column::new_unqualified(name))
}

/// `e` over `layout` as a DataFusion expression.
pub(super) fn lower(
    e: &TypedExpr,
    layout: &Layout,
    opts: EvalOptions,
    check: Check,
) -> Result<Expr> {
    if check == Check::None {
        match &e.kind {
            TExpr::Column(i) => return Ok(column(&layout[*i].0)),
            // Strings are left to `YtExpression`, which charges their copy per row to the
            // batch's budget first: DataFusion would copy them without a limit (and panic
            // once a Binary column's offsets overflow).
            TExpr::Literal(v) if !matches!(v, Value::String(_) | Value::Any(_)) => {
                return Ok(lit(scalar(v, e.ty)?))
            }
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
    let numeric = numeric_argument(call);
    let ordered = numeric || matches!(ty, Some(ValueType::Boolean | ValueType::String));
    let first = || args[0].clone();
    Ok(match call.function {
        AggregateFunction::Sum if numeric => sum(first()),
        AggregateFunction::Avg if native_average(call) => avg(first()),
        AggregateFunction::Min if ordered => min(first()),
        AggregateFunction::Max if ordered => max(first()),
        f => {
            let types = call.args.iter().map(|a| a.ty).collect();
            AggregateUDF::from(YtAggregate::new(f, types, call.ty)).call(args)
        }
    })
}

/// Runs `plan` over the main table's `ranges`, giving its result as it is computed.
pub(crate) async fn run(
    engine: &Engine,
    tables: &Tables,
    plan: &QueryPlan,
    ranges: &[KeyRange],
    options: &SelectOptions,
) -> Result<QueryStream> {
    let first = async {
        let mut results = run_once(engine, tables, plan, ranges, options, false).await?;
        // A grouped run is drained first (its groups are held until counted anyway): an
        // error in it may lie in a row YT never evaluates, see below.
        if results.streams() && plan.group.is_none() {
            return Ok(Some(QueryStream::new(plan, results)));
        }
        // Without `fail_on_incomplete_result` a parallel run keeps its rows until it knows
        // no row limit is passed (they are at most one past the output row limit).
        Ok(results.drain().await?.map(|(batches, statistics)| {
            QueryStream::collected(
                plan,
                results.schema(),
                batches,
                statistics,
                results.stages(),
            )
        }))
    };
    match first.await {
        Ok(Some(stream)) => return Ok(stream),
        Ok(None) => {}
        // A parallel grouped run evaluates the aggregates' arguments on every row, but YT
        // meets the output row limit at a new group before it evaluates the group's row
        // (dropping it, or failing with the limit): an error there may lie in a row YT never
        // evaluates, so the run in scan order (YT's own) decides.
        Err(Error::Query(_)) if plan.group.is_some() => {}
        Err(e) => return Err(e),
    }
    // A row limit was passed without `fail_on_incomplete_result`: YT keeps the rows up to
    // it in scan order, so the query runs again in scan order, cutting there.
    let results = run_once(engine, tables, plan, ranges, options, true).await?;
    Ok(QueryStream::new(plan, results))
}

/// One run of `plan` (in scan order with `in_scan_order`), up to the stream of its projected
/// rows: one DataFusion plan, whose row limits [`Results`] applies as its rows come.
async fn run_once(
    engine: &Engine,
    tables: &Tables,
    plan: &QueryPlan,
    ranges: &[KeyRange],
    options: &SelectOptions,
    in_scan_order: bool,
) -> Result<Results> {
    let mut setup = Setup::new(engine, plan, options, in_scan_order);
    let input = setup.input(tables, plan, ranges, options).await?;
    let limits = Limits {
        output_row_limit: options.output_row_limit,
        fail: setup.fail,
        truncate: setup.truncate,
    };
    // Set when groups or rows were cut at the output row limit.
    let cut = Arc::new(AtomicBool::new(false));
    if setup.ordered && reads_in_key_order(plan) {
        let (physical, column_map) =
            key_order_plan(plan, &setup, &input, ranges, options.output_row_limit).await?;
        let task = setup.engine.one_partition().1.clone();
        setup.stages.record(&physical);
        let rows = execute_stream(physical, task).map_err(query_error)?;
        let stages = setup.stages.clone();
        let results = Results::new(plan, rows, None, input, limits, cut, stages);
        return Ok(results.with_column_map(column_map));
    }
    let (opts, ctx) = (setup.opts, &setup.ctx);
    let mut df = ctx.read_table(input.table.clone())?;
    let mut layout = table_layout(&setup.joined);
    if let Some(w) = &plan.where_clause {
        df = df.filter(lower(w, &layout, opts, Check::None)?)?;
    }
    let mut totals = None;
    if let Some(group) = &plan.group {
        let (groups, grouped, slot) =
            grouped_rows(df, plan, group, &layout, &setup, options, &cut).await?;
        (df, layout, totals) = (groups, grouped, slot);
    }
    df = order_and_limit(df, plan, &layout, &setup, options.output_row_limit)?;
    let projections = projections(plan, &layout, opts)?;
    let rows = execute(df.select(projections)?, &setup)
        .await
        .map_err(query_error)?;
    let stages = setup.stages.clone();
    Ok(Results::new(plan, rows, totals, input, limits, cut, stages))
}

/// The physical plan DataFusion would run for `plan`, as indented text; nothing is read.
pub(crate) async fn explain(
    engine: &Engine,
    tables: &Tables,
    plan: &QueryPlan,
    ranges: &[KeyRange],
    options: &SelectOptions,
) -> Result<String> {
    let mut setup = Setup::new(engine, plan, options, false);
    // Nothing is read: the plan is built, not run.
    let input = setup.input(tables, plan, ranges, options).await?;
    if setup.ordered && reads_in_key_order(plan) {
        let (physical, _) =
            key_order_plan(plan, &setup, &input, ranges, options.output_row_limit).await?;
        return Ok(datafusion::physical_plan::displayable(physical.as_ref())
            .indent(true)
            .to_string());
    }
    let opts = setup.opts;
    let mut df = setup.ctx.read_table(input.table.clone())?;
    let mut layout = table_layout(&setup.joined);
    if let Some(w) = &plan.where_clause {
        df = df.filter(lower(w, &layout, opts, Check::None)?)?;
    }
    if let Some(group) = &plan.group {
        let cut = Arc::new(AtomicBool::new(false));
        (df, layout, _) = grouped_rows(df, plan, group, &layout, &setup, options, &cut).await?;
    }
    df = order_and_limit(df, plan, &layout, &setup, options.output_row_limit)?;
    df = df.select(projections(plan, &layout, opts)?)?;
    let physical = df.create_physical_plan().await?;
    let text = datafusion::physical_plan::displayable(physical.as_ref())
        .indent(true)
        .to_string();
    Ok(text)
}

/// Grouping up to the aggregation: the groups (`g0`.., then `a0`.. values, or for WITH
/// TOTALS `s0`.. states) and the layout of the grouped rows (`g0`.., `a0`..). Where groups
/// are kept in the order they first appear, or cut at the output row limit in scan order,
/// the rows pass [`FirstGroupsExec`] on their way to the aggregation, and the groups carry
/// their ordinal ([`ORDINAL`]; the flag returned says so).
async fn aggregate_groups(
    mut df: DataFrame,
    plan: &QueryPlan,
    group: &GroupPlan,
    layout: &Layout,
    setup: &Setup,
    options: &SelectOptions,
    cut: &Arc<AtomicBool>,
) -> Result<(DataFrame, Layout, Aggregated)> {
    let opts = setup.opts;
    let states = group.totals != TotalsMode::None;
    let first_seen = setup.truncate || setup.rerun || groups_in_scan_order(plan);
    let keys: Vec<Expr> = if first_seen {
        // The columns the aggregates read, by their names: the rest are not scanned.
        let mut read = Vec::new();
        for a in &group.aggregates {
            for arg in &a.args {
                arg.referenced_columns(&mut read);
            }
        }
        read.sort_unstable();
        read.dedup();
        let mut columns: Vec<Expr> = read.iter().map(|&c| column(&layout[c].0)).collect();
        for (i, k) in group.keys.iter().enumerate() {
            columns.push(lower(k, layout, opts, Check::None)?.alias(format!("k{i}")));
        }
        let input = df.select(columns)?.create_physical_plan().await?;
        let admission = Admission {
            keys: (read.len()..read.len() + group.keys.len()).collect(),
            cap: match (plan.limit, plan.order_by.is_empty()) {
                (Some(limit), true) => Some(plan.offset.saturating_add(limit)),
                _ => None,
            },
            output_limit: options.output_row_limit,
            truncate: setup.truncate,
            forbid_null_keys: states,
        };
        let admitted = FirstGroupsExec::new(input, admission, cut.clone());
        df = setup
            .ctx
            .read_table(Arc::new(PlanTable::new(Arc::new(admitted))))?;
        (0..group.keys.len())
            .map(|i| column(&format!("k{i}")).alias(format!("g{i}")))
            .collect()
    } else {
        group
            .keys
            .iter()
            .enumerate()
            .map(|(i, k)| Ok(lower(k, layout, opts, Check::None)?.alias(format!("g{i}"))))
            .collect::<Result<_>>()?
    };
    let mut grouped: Layout = group
        .keys
        .iter()
        .enumerate()
        .map(|(i, k)| (format!("g{i}"), k.ty))
        .collect();
    let mut aggregates = Vec::new();
    let mut state_columns = Vec::new();
    for (i, a) in group.aggregates.iter().enumerate() {
        let state = StateColumns::of(a.function, native_average(a));
        match state {
            StateColumns::Encoded if states => {
                // The value for the group's row, the state for the totals.
                aggregates.push(aggregate(a, layout, opts)?.alias(format!("a{i}")));
                let args = a
                    .args
                    .iter()
                    .map(|e| lower(e, layout, opts, Check::None))
                    .collect::<Result<Vec<_>>>()?;
                let types = a.args.iter().map(|e| e.ty).collect();
                aggregates.push(
                    AggregateUDF::from(YtAggregate::states(a.function, types))
                        .call(args)
                        .alias(format!("s{i}")),
                );
            }
            StateColumns::Average if states => {
                aggregates.push(aggregate(a, layout, opts)?.alias(format!("a{i}")));
                // YT's average state: the values' sum as a double, and their count.
                let value = lower(&a.args[0], layout, opts, Check::None)?;
                aggregates
                    .push(sum(cast(value.clone(), DataType::Float64)).alias(format!("s{i}_sum")));
                aggregates.push(count(value).alias(format!("s{i}_count")));
            }
            _ => aggregates.push(aggregate(a, layout, opts)?.alias(format!("a{i}"))),
        }
        state_columns.push(state);
        grouped.push((format!("a{i}"), a.ty));
    }
    if first_seen {
        aggregates.push(min(column(ORDINAL)).alias(ORDINAL));
    }
    let aggregated = Aggregated {
        state_columns: if states { state_columns } else { Vec::new() },
        first_seen,
    };
    Ok((df.aggregate(keys, aggregates)?, grouped, aggregated))
}

/// The grouped rows of `plan` (named by the returned layout: `g0`.., `a0`..), as one plan:
/// the aggregation, the groups counted against the output row limit, HAVING, and for WITH
/// TOTALS a [`TotalsExec`] before or after HAVING, whose slot holds the projected totals row
/// once the groups are in.
async fn grouped_rows(
    df: DataFrame,
    plan: &QueryPlan,
    group: &GroupPlan,
    layout: &Layout,
    setup: &Setup,
    options: &SelectOptions,
    cut: &Arc<AtomicBool>,
) -> Result<(DataFrame, Layout, Option<TotalsSlot>)> {
    let opts = setup.opts;
    let (
        aggregated,
        grouped,
        Aggregated {
            state_columns,
            first_seen,
        },
    ) = aggregate_groups(df, plan, group, layout, setup, options, cut).await?;
    // WITH TOTALS forbids null keys; without first groups no operator has seen the rows.
    let null_free_keys = match group.totals {
        TotalsMode::None => 0,
        _ if first_seen => 0,
        _ => group.keys.len(),
    };
    let mut df =
        counted_groups(aggregated, setup, options.output_row_limit, null_free_keys).await?;
    let totals = (group.totals != TotalsMode::None).then(|| {
        let totals = Totals {
            keys: group.keys.iter().map(|k| k.ty).collect(),
            aggregates: state_columns
                .iter()
                .copied()
                .zip(group.aggregates.iter().map(|a| a.ty))
                .collect(),
            projections: plan.projections.iter().map(|p| p.expr.clone()).collect(),
            by_ordinal: first_seen,
            opts,
        };
        (Arc::new(totals), TotalsSlot::default())
    });
    if let (Some(totals), TotalsMode::BeforeHaving) = (&totals, group.totals) {
        df = with_totals(df, totals, setup).await?;
    }
    if let Some(h) = &group.having {
        df = df.filter(lower(h, &grouped, opts, Check::None)?)?;
    }
    if let (Some(totals), TotalsMode::AfterHaving) = (&totals, group.totals) {
        df = with_totals(df, totals, setup).await?;
    }
    // The first groups come in the order they appeared.
    if first_seen && plan.order_by.is_empty() {
        df = df.sort(vec![column(ORDINAL).sort(true, false)])?;
    }
    Ok((df, grouped, totals.map(|(_, slot)| slot)))
}

/// `groups` under a [`TotalsExec`] that merges their totals into `slot`.
async fn with_totals(
    groups: DataFrame,
    (totals, slot): &(Arc<Totals>, TotalsSlot),
    setup: &Setup,
) -> Result<DataFrame> {
    let groups = groups.create_physical_plan().await?;
    let exec = TotalsExec::new(groups, totals.clone(), slot.clone());
    Ok(setup
        .ctx
        .read_table(Arc::new(PlanTable::new(Arc::new(exec))))?)
}

/// The groups `aggregated` gives, under a [`GroupLimitExec`] that counts them (YT applies
/// its output row limit to the groups before HAVING) and fails on a null in the first
/// `null_free_keys` columns, as a table the rest of the plan reads.
async fn counted_groups(
    aggregated: DataFrame,
    setup: &Setup,
    output_row_limit: u64,
    null_free_keys: usize,
) -> Result<DataFrame> {
    let groups = aggregated.create_physical_plan().await?;
    let counted = GroupLimitExec::new(groups, output_row_limit, null_free_keys);
    Ok(setup
        .ctx
        .read_table(Arc::new(PlanTable::new(Arc::new(counted))))?)
}

/// What [`aggregate_groups`] computed besides the groups' columns.
struct Aggregated {
    /// With WITH TOTALS, how each aggregate's state is read from its columns.
    state_columns: Vec<StateColumns>,
    /// Whether the groups carry the ordinal they first appeared at.
    first_seen: bool,
}

/// Whether `call`'s first argument is a number: then DataFusion's `sum` and `avg` compute
/// what YT's do (see [`aggregate`]).
fn numeric_argument(call: &AggregateCall) -> bool {
    matches!(
        call.args.first().map(|a| a.ty),
        Some(ValueType::Int64 | ValueType::Uint64 | ValueType::Double)
    )
}

/// Whether `call` is an average DataFusion's own `avg` computes (see [`aggregate`]).
fn native_average(call: &AggregateCall) -> bool {
    call.function == AggregateFunction::Avg && numeric_argument(call)
}

/// The output columns (`p0`..).
pub(super) fn projections(
    plan: &QueryPlan,
    layout: &Layout,
    opts: EvalOptions,
) -> Result<Vec<Expr>> {
    plan.projections
        .iter()
        .enumerate()
        .map(|(i, p)| Ok(lower(&p.expr, layout, opts, Check::None)?.alias(format!("p{i}"))))
        .collect()
}

/// Plans `df` and starts it, noting the plan among the run's stages.
async fn execute(
    df: DataFrame,
    setup: &Setup,
) -> datafusion::error::Result<SendableRecordBatchStream> {
    let task = Arc::new(df.task_ctx());
    let physical = df.create_physical_plan().await?;
    if tracing::enabled!(tracing::Level::DEBUG) {
        // The whole plan on one log line, root first, operators separated by ` | `.
        let plan = datafusion::physical_plan::displayable(physical.as_ref())
            .indent(true)
            .to_string();
        let plan: Vec<&str> = plan.lines().map(str::trim).collect();
        tracing::debug!(plan = %plan.join(" | "), "physical plan");
    }
    setup.stages.record(&physical);
    execute_stream(physical, task)
}

/// ORDER BY in YT's value order (null first ascending, last descending; a NaN key fails),
/// then OFFSET and LIMIT.
fn order_and_limit(
    mut df: DataFrame,
    plan: &QueryPlan,
    layout: &Layout,
    setup: &Setup,
    output_row_limit: u64,
) -> Result<DataFrame> {
    let opts = setup.opts;
    // Rows read in key order by an ungrouped, unjoined plan are already in the order of a
    // key prefix.
    let sorted = setup.ordered && reads_in_key_order(plan);
    if !plan.order_by.is_empty() && !sorted {
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
    if let Some((skip, fetch)) = offset_and_fetch(plan, output_row_limit) {
        df = df.limit(skip, fetch)?;
    }
    Ok(df)
}

/// The rows to skip and to keep after ORDER BY, if any are to be skipped or cut: OFFSET,
/// and LIMIT or one row past the output row limit (enough to know the result is
/// incomplete).
pub(super) fn offset_and_fetch(
    plan: &QueryPlan,
    output_row_limit: u64,
) -> Option<(usize, Option<usize>)> {
    let fetch = plan
        .limit
        .unwrap_or(u64::MAX)
        .min(output_row_limit.saturating_add(1));
    // DataFusion's limits are signed: larger values mean no limit (no table holds that many
    // rows), and an offset that large skips every row.
    let signed = |n: u64| usize::try_from(n.min(i64::MAX as u64)).unwrap_or(usize::MAX);
    let fetch = (fetch < i64::MAX as u64).then(|| signed(fetch));
    (plan.offset > 0 || fetch.is_some()).then(|| (signed(plan.offset), fetch))
}

/// The columns of `batch`, each in its YT type's Arrow type (DataFusion may return views or
/// wider types).
pub(super) fn wire_columns(batch: &RecordBatch, types: &[ValueType]) -> Result<Vec<ArrayRef>> {
    Ok(batch
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
        .map_err(DataFusionError::from)?)
}

/// `batch` with each column in its YT type's Arrow type (see [`wire_columns`]).
pub(super) fn in_wire_types(batch: &RecordBatch, types: &[ValueType]) -> Result<RecordBatch> {
    let columns = wire_columns(batch, types)?;
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
