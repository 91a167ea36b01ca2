//! Runs a bound YT QL query: scan (key ranges pruned), joins, WHERE, GROUP BY with totals and
//! HAVING, ORDER BY, OFFSET/LIMIT, projection; with YT's row limits.
//!
//! ```text
//! scan main (key ranges from WHERE) ─▶ lookup joins (key prefixes from the rows) ─▶ WHERE ─▶ group/aggregate ─▶ HAVING ─▶ ORDER BY ─▶ OFFSET/LIMIT ─▶ project
//!                                           └─ totals (before or after HAVING) ─────────────────────▶ appended
//! ```

use std::collections::HashMap;

use dynql_core::{compare_values, Value, ValueType, Yson};
use dynql_ql::aggregate::AggregateState;
use dynql_ql::ast::TotalsMode;
use dynql_ql::binder::query_tables;
use dynql_ql::eval::{evaluate, evaluate_predicate, EvalOptions};
use dynql_ql::plan::{JoinPlan, QueryPlan};
use dynql_ql::texpr::{TExpr, TypedExpr};
use dynql_ql::{bind_query, BindOptions};
use dynql_storage::{ScanStatistics, Store, Timestamp};

use dynql_storage::scan::row_weight;

use crate::error::{Error, Result};
use crate::scan::{join_ranges, main_table_ranges, storage_ranges, Explanation};
use crate::source::{FileTables, Source, Tables};

/// YT's default `input_row_limit` and `output_row_limit`.
pub const DEFAULT_ROW_LIMIT: u64 = 1_000_000;

/// Options of `select_rows`, with YT's defaults.
#[derive(Debug, Clone)]
pub struct SelectOptions {
    pub input_row_limit: u64,
    pub output_row_limit: u64,
    pub fail_on_incomplete_result: bool,
    pub allow_join_without_index: bool,
    pub use_canonical_null_relations: bool,
    /// Parallelism cap; must be positive.
    pub max_subqueries: Option<u64>,
    /// The `placeholder_values` map.
    pub placeholder_values: Option<Yson>,
    /// The snapshot to read (default: the latest commit).
    pub timestamp: Timestamp,
    /// Bounds the key ranges inferred from WHERE (YT default 200000); exceeding it only
    /// widens the ranges.
    pub range_expansion_limit: u64,
    /// When false, a query whose WHERE fixes no prefix of the key fails instead of reading
    /// the whole table.
    pub allow_full_scan: bool,
    /// Parquet files the query may read as tables (`[file:LOCATION]` needs no mapping).
    pub files: FileTables,
}

impl Default for SelectOptions {
    fn default() -> SelectOptions {
        SelectOptions {
            input_row_limit: DEFAULT_ROW_LIMIT,
            output_row_limit: DEFAULT_ROW_LIMIT,
            fail_on_incomplete_result: true,
            allow_join_without_index: false,
            use_canonical_null_relations: false,
            max_subqueries: None,
            placeholder_values: None,
            timestamp: Timestamp::SYNC_LAST_COMMITTED,
            range_expansion_limit: dynql_ql::ranges::DEFAULT_RANGE_EXPANSION_LIMIT,
            allow_full_scan: true,
            files: FileTables::default(),
        }
    }
}

/// Execution statistics (`--print-statistics`).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Statistics {
    /// Rows read from all tables (the main table's key ranges, joined tables' lookups).
    pub rows_read: u64,
    /// Their data weight (YT's measure: one byte per row plus each value's size).
    pub data_weight_read: u64,
    pub rows_written: u64,
    pub incomplete_input: bool,
    pub incomplete_output: bool,
    /// What the main table's scan selected (tablets, chunks, row groups).
    pub scan: ScanStatistics,
}

/// A query result: columns (name, type) and rows in output order.
#[derive(Debug, Clone)]
pub struct QueryResult {
    pub columns: Vec<(String, ValueType)>,
    pub rows: Vec<Vec<Value>>,
    pub statistics: Statistics,
}

/// The largest `range_expansion_limit` accepted: inference may generate that many key
/// ranges, a few hundred bytes each, so the cap bounds its memory (hundreds of MB at most).
pub const MAX_RANGE_EXPANSION_LIMIT: u64 = 1_000_000;

/// Rejects option values that would make a query do unbounded work, before any is done.
fn check_options(options: &SelectOptions) -> Result<()> {
    if options.max_subqueries == Some(0) {
        return Err(Error::InvalidOption {
            name: "max_subqueries",
            message: "must be positive".into(),
        });
    }
    if options.range_expansion_limit > MAX_RANGE_EXPANSION_LIMIT {
        return Err(Error::InvalidOption {
            name: "range_expansion_limit",
            message: format!(
                "is {}, above the largest accepted value {MAX_RANGE_EXPANSION_LIMIT}",
                options.range_expansion_limit
            ),
        });
    }
    Ok(())
}

/// Parses, binds and runs `query` against `store`.
///
/// # Errors
/// Query errors (syntax, binding, evaluation), storage errors, and
/// [`Error::LimitExceeded`] when a row limit is hit with `fail_on_incomplete_result`.
pub async fn select_rows(
    store: &Store,
    query: &str,
    options: &SelectOptions,
) -> Result<QueryResult> {
    select_rows_with(store, query, options, Pipeline::Vectorized).await
}

/// Which pipeline runs a query: the two must give the same results (a differential test
/// compares them) until the row pipeline is retired.
#[doc(hidden)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Pipeline {
    /// DataFusion over Arrow batches where the query is lowered, rows otherwise.
    Vectorized,
    /// Row by row.
    Rows,
}

/// [`select_rows`] through the given pipeline.
#[doc(hidden)]
pub async fn select_rows_with(
    store: &Store,
    query: &str,
    options: &SelectOptions,
    pipeline: Pipeline,
) -> Result<QueryResult> {
    check_options(options)?;
    let (catalog, plan) = bind(store, query, options).await?;
    for source in &plan.sources {
        if let Some(entry) = catalog.store.get(&source.path) {
            dynql_storage::tablets::check_readable(entry, &source.path)?;
        }
    }
    let inferred = main_table_ranges(
        &plan,
        options.range_expansion_limit,
        options.allow_full_scan,
    )?;
    let opts = EvalOptions {
        canonical_null_relations: options.use_canonical_null_relations,
    };
    let main = catalog.source(store, &plan.sources[0].path)?;
    if reads_in_key_order_up_to_limit(&plan) {
        let (rows, stats) = scan_until_limit(&main, &plan, &inferred, options, opts).await?;
        return execute(&plan, rows, stats, options);
    }
    if pipeline == Pipeline::Vectorized {
        let ranges = storage_ranges(&inferred);
        return crate::vectorized::lower::run(&catalog, &plan, &ranges, options).await;
    }
    let (mut rows, scan) = main
        .rows(Some(&storage_ranges(&inferred)), options.timestamp)
        .await?;
    let mut stats = Statistics {
        scan,
        ..Statistics::default()
    };
    if rows.len() as u64 > options.input_row_limit {
        if options.fail_on_incomplete_result {
            return Err(Error::LimitExceeded { what: "input" });
        }
        stats.incomplete_input = true;
        rows.truncate(options.input_row_limit as usize);
    }
    stats.rows_read = rows.len() as u64;
    stats.data_weight_read = rows.iter().map(|r| row_weight(r)).sum();
    for join in &plan.joins {
        let source = &plan.sources[join.source];
        let ranges = join_ranges(join, &source.schema, &rows, opts)?;
        let (foreign, _) = catalog
            .source(store, &source.path)?
            .rows(ranges.as_deref(), options.timestamp)
            .await?;
        stats.rows_read += foreign.len() as u64;
        stats.data_weight_read += foreign.iter().map(|r| row_weight(r)).sum::<u64>();
        let width = source.schema.columns().len();
        rows = run_join(join, rows, foreign, width, opts, options, &mut stats)?;
    }
    execute(&plan, rows, stats, options)
}

/// Parses and binds `query`, infers the main table's key ranges, and reports them with what
/// a scan of them would read (`explain-query`). Nothing is read.
///
/// # Errors
/// As [`select_rows`] before execution (syntax, binding, range inference, the full-scan guard).
pub async fn explain_query(
    store: &Store,
    query: &str,
    options: &SelectOptions,
) -> Result<Explanation> {
    check_options(options)?;
    let (catalog, plan) = bind(store, query, options).await?;
    let ranges = main_table_ranges(
        &plan,
        options.range_expansion_limit,
        options.allow_full_scan,
    )?;
    let main = catalog.source(store, &plan.sources[0].path)?;
    let scanned = storage_ranges(&ranges);
    let read = main.explain(Some(&scanned), options.timestamp).await?;
    let plan = if reads_in_key_order_up_to_limit(&plan) {
        Some(
            "KeyOrderScan: rows in key order until OFFSET + LIMIT pass WHERE (row pipeline)"
                .to_string(),
        )
    } else {
        Some(crate::vectorized::lower::explain(&catalog, &plan, &scanned, options).await?)
    };
    Ok(Explanation { ranges, read, plan })
}

/// The query's tables (file tables opened) and its bound plan.
async fn bind(store: &Store, query: &str, options: &SelectOptions) -> Result<(Tables, QueryPlan)> {
    let paths = query_tables(query, options.placeholder_values.as_ref())?;
    let catalog = Tables::load(store, &paths, &options.files).await?;
    let bind = BindOptions {
        allow_join_without_index: options.allow_join_without_index,
        canonical_null_relations: options.use_canonical_null_relations,
    };
    let plan = bind_query(query, options.placeholder_values.as_ref(), &catalog, bind)?;
    Ok((catalog, plan))
}

/// Whether the query only needs the first rows that pass WHERE in key order (`OFFSET +
/// LIMIT` of them, and never more than one past the output row limit): no joins, no
/// grouping, and no ORDER BY or one by a prefix of the key in ascending order. Then the scan
/// stops there instead of reading every range; the result (or the limit error) is the one a
/// full read would give.
fn reads_in_key_order_up_to_limit(plan: &QueryPlan) -> bool {
    let schema = &plan.sources[0].schema;
    plan.joins.is_empty()
        && plan.group.is_none()
        && (plan.limit.is_some() || plan.order_by.is_empty())
        && schema.is_sorted()
        && plan.order_by.len() <= schema.key_column_count()
        && plan
            .order_by
            .iter()
            .enumerate()
            .all(|(i, (e, desc))| !desc && matches!(e.kind, TExpr::Column(c) if c == i))
}

/// Scans the main table in key order, keeping rows that pass WHERE, until `OFFSET + LIMIT`
/// of them are found (see [`reads_in_key_order_up_to_limit`]).
async fn scan_until_limit(
    main: &Source<'_>,
    plan: &QueryPlan,
    inferred: &[dynql_ql::ranges::KeyRange],
    options: &SelectOptions,
    opts: EvalOptions,
) -> Result<(Vec<Vec<Value>>, Statistics)> {
    // One row past the output limit is enough to know the result is incomplete.
    let output = plan
        .limit
        .unwrap_or(u64::MAX)
        .min(options.output_row_limit.saturating_add(1));
    let wanted = plan.offset.saturating_add(output);
    let mut rows = Vec::new();
    let mut stats = Statistics::default();
    let mut stopped: Option<Error> = None;
    let mut read = 0u64;
    let scan = main
        .visit(
            Some(&storage_ranges(inferred)),
            options.timestamp,
            &mut |row| {
                if read >= options.input_row_limit {
                    if options.fail_on_incomplete_result {
                        stopped = Some(Error::LimitExceeded { what: "input" });
                    } else {
                        stats.incomplete_input = true;
                    }
                    return Ok(false);
                }
                read += 1;
                stats.data_weight_read += row_weight(&row);
                let keep = match &plan.where_clause {
                    Some(w) => match evaluate_predicate(w, &row, opts) {
                        Ok(k) => k,
                        Err(e) => {
                            stopped = Some(e.into());
                            return Ok(false);
                        }
                    },
                    None => true,
                };
                if keep {
                    rows.push(row);
                }
                Ok((rows.len() as u64) < wanted)
            },
        )
        .await?;
    if let Some(e) = stopped {
        return Err(e);
    }
    stats.rows_read = read;
    stats.scan = scan;
    Ok((rows, stats))
}

/// Runs the rest of a bound plan (WHERE onwards) over the joined rows read for it.
pub fn execute(
    plan: &QueryPlan,
    mut rows: Vec<Vec<Value>>,
    mut stats: Statistics,
    options: &SelectOptions,
) -> Result<QueryResult> {
    let opts = EvalOptions {
        canonical_null_relations: options.use_canonical_null_relations,
    };

    // WHERE (already applied by a scan that stopped at the limit, and harmless to repeat).
    if let Some(w) = &plan.where_clause {
        let mut kept = Vec::with_capacity(rows.len());
        for r in rows {
            if evaluate_predicate(w, &r, opts)? {
                kept.push(r);
            }
        }
        rows = kept;
    }

    // GROUP BY.
    let mut totals_row = None;
    if let Some(group) = &plan.group {
        let mut index: HashMap<Vec<Value>, usize> = HashMap::new();
        let group_cap = match (plan.limit, plan.order_by.is_empty()) {
            (Some(limit), true) => Some(plan.offset.saturating_add(limit)),
            _ => None,
        };
        let mut groups: Vec<(Vec<Value>, Vec<AggregateState>)> = Vec::new();
        for r in &rows {
            let key = group
                .keys
                .iter()
                .map(|k| evaluate(k, r, opts))
                .collect::<dynql_ql::Result<Vec<_>>>()?;
            if group.totals != TotalsMode::None && key.iter().any(Value::is_null) {
                return Err(Error::Query(dynql_ql::Error::Runtime(
                    "Null values are forbidden in group key when WITH TOTALS is used".into(),
                )));
            }
            let slot = match index.get(&key) {
                Some(&i) => i,
                // LIMIT without ORDER BY takes the first groups in scan order: rows of later
                // groups are not read, and so not in the totals either (YT).
                None if group_cap.is_some_and(|cap| groups.len() as u64 >= cap) => continue,
                None => {
                    if groups.len() as u64 >= options.output_row_limit {
                        if options.fail_on_incomplete_result {
                            return Err(Error::LimitExceeded { what: "output" });
                        }
                        stats.incomplete_output = true;
                        continue;
                    }
                    index.insert(key.clone(), groups.len());
                    groups.push((
                        key,
                        group
                            .aggregates
                            .iter()
                            .map(|a| AggregateState::new(a.function))
                            .collect(),
                    ));
                    groups.len() - 1
                }
            };
            let states = &mut groups[slot].1;
            for (state, call) in states.iter_mut().zip(&group.aggregates) {
                let args = call
                    .args
                    .iter()
                    .map(|a| evaluate(a, r, opts))
                    .collect::<dynql_ql::Result<Vec<_>>>()?;
                state.update(&args)?;
            }
        }
        let finish = |key: &[Value], states: &[AggregateState]| -> Vec<Value> {
            let mut row = key.to_vec();
            row.extend(states.iter().map(|s| s.finish()));
            row
        };
        let mut totals: Option<Vec<AggregateState>> = None;
        let mut add_to_totals = |states: &[AggregateState]| -> Result<()> {
            match &mut totals {
                None => totals = Some(states.to_vec()),
                Some(t) => {
                    for (a, b) in t.iter_mut().zip(states) {
                        a.merge(b)?;
                    }
                }
            }
            Ok(())
        };
        let mut grouped = Vec::with_capacity(groups.len());
        for (key, states) in &groups {
            let row = finish(key, states);
            if group.totals == TotalsMode::BeforeHaving {
                add_to_totals(states)?;
            }
            let keep = match &group.having {
                Some(h) => evaluate_predicate(h, &row, opts)?,
                None => true,
            };
            if keep {
                if group.totals == TotalsMode::AfterHaving {
                    add_to_totals(states)?;
                }
                grouped.push(row);
            }
        }
        if let Some(t) = totals {
            totals_row = Some(finish(&vec![Value::Null; group.keys.len()], &t));
        }
        rows = grouped;
    }

    finish(plan, rows, totals_row, stats, options)
}

/// The part of a plan after grouping: ORDER BY, OFFSET, LIMIT, the totals row, projection and
/// the output row limit, over `rows` (grouped rows when the plan groups).
pub(crate) fn finish(
    plan: &QueryPlan,
    mut rows: Vec<Vec<Value>>,
    totals_row: Option<Vec<Value>>,
    mut stats: Statistics,
    options: &SelectOptions,
) -> Result<QueryResult> {
    let opts = EvalOptions {
        canonical_null_relations: options.use_canonical_null_relations,
    };
    // ORDER BY, OFFSET, LIMIT.
    if !plan.order_by.is_empty() {
        let mut keyed = Vec::with_capacity(rows.len());
        for r in rows {
            let k = plan
                .order_by
                .iter()
                .map(|(e, _)| evaluate(e, &r, opts))
                .collect::<dynql_ql::Result<Vec<_>>>()?;
            keyed.push((k, r));
        }
        if keyed.iter().any(|(k, _)| {
            k.iter()
                .any(|v| matches!(v, Value::Double(d) if d.is_nan()))
        }) {
            return Err(Error::Query(dynql_ql::Error::Runtime(
                "Comparison with NaN in ORDER BY".into(),
            )));
        }
        keyed.sort_by(|(a, _), (b, _)| {
            for ((x, y), (_, desc)) in a.iter().zip(b).zip(&plan.order_by) {
                let o = compare_values(x, y);
                if o != std::cmp::Ordering::Equal {
                    return if *desc { o.reverse() } else { o };
                }
            }
            std::cmp::Ordering::Equal
        });
        rows = keyed.into_iter().map(|(_, r)| r).collect();
    }
    let offset = plan.offset.min(rows.len() as u64) as usize;
    rows.drain(..offset);
    if let Some(limit) = plan.limit {
        rows.truncate(limit.min(rows.len() as u64) as usize);
    }
    rows.extend(totals_row);

    // Projection.
    let mut out = Vec::with_capacity(rows.len());
    for r in &rows {
        out.push(
            plan.projections
                .iter()
                .map(|p| evaluate(&p.expr, r, opts))
                .collect::<dynql_ql::Result<Vec<_>>>()?,
        );
    }
    if out.len() as u64 > options.output_row_limit {
        if options.fail_on_incomplete_result {
            return Err(Error::LimitExceeded { what: "output" });
        }
        stats.incomplete_output = true;
        out.truncate(options.output_row_limit as usize);
    }
    stats.rows_written = out.len() as u64;
    Ok(QueryResult {
        columns: plan
            .projections
            .iter()
            .map(|p| (p.name.clone(), p.expr.ty))
            .collect(),
        rows: out,
        statistics: stats,
    })
}

fn eval_all(exprs: &[TypedExpr], row: &[Value], opts: EvalOptions) -> Result<Vec<Value>> {
    Ok(exprs
        .iter()
        .map(|e| evaluate(e, row, opts))
        .collect::<dynql_ql::Result<Vec<_>>>()?)
}

/// A lookup join: the foreign rows passing the join predicate, indexed by their equation
/// values; every row looks its own equation values up. Past the output row limit the
/// joined rows are cut there (or the query fails with `fail_on_incomplete_result`).
fn run_join(
    join: &JoinPlan,
    rows: Vec<Vec<Value>>,
    foreign: Vec<Vec<Value>>,
    foreign_width: usize,
    opts: EvalOptions,
    options: &SelectOptions,
    stats: &mut Statistics,
) -> Result<Vec<Vec<Value>>> {
    let mut out = join_rows(join, rows, &foreign, foreign_width, opts)?;
    if out.len() as u64 > options.output_row_limit {
        if options.fail_on_incomplete_result {
            return Err(Error::LimitExceeded { what: "output" });
        }
        stats.incomplete_output = true;
        out.truncate(options.output_row_limit as usize);
    }
    Ok(out)
}

/// The rows of `rows` joined with those of `foreign` (rows of a table `foreign_width`
/// columns wide) by `join`'s equations, in the order of `rows`: each row with every match,
/// or with nulls when unmatched in a LEFT join. Equal values match, nulls included.
pub(crate) fn join_rows(
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
        let key = eval_all(&join.foreign_keys, f, opts)?;
        index.entry(key).or_default().push(f);
    }
    let mut out = Vec::with_capacity(rows.len());
    for r in rows {
        let key = eval_all(&join.self_keys, &r, opts)?;
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
