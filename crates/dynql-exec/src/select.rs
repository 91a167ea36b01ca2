//! `select_rows` and `explain-query`: a YT QL query parsed and bound over one snapshot of
//! the store, its main table's key ranges inferred from WHERE, then run as a DataFusion plan
//! (scan (key ranges pruned) ─▶ lookup joins ─▶ WHERE ─▶ group/aggregate ─▶ HAVING ─▶ ORDER
//! BY ─▶ OFFSET/LIMIT ─▶ project; see the `vectorized::lower` module) with YT's row limits.

use std::sync::{Arc, Mutex};

use arrow::datatypes::SchemaRef;
use arrow::record_batch::RecordBatch;
use futures::stream::BoxStream;
use futures::{Stream, StreamExt};

use dynql_core::arrow_convert::batch_to_rows;
use dynql_core::{Value, ValueType, Yson};
use dynql_ql::binder::query_tables;
use dynql_ql::plan::QueryPlan;
use dynql_ql::{bind_query, BindOptions};
use dynql_storage::progress::ReadProgress;
use dynql_storage::{ScanStatistics, Store, Timestamp};

use crate::engine::Engine;
use crate::error::{Error, Result};
use crate::scan::{main_table_ranges, Analysis, Explanation};
use crate::source::{FileTables, Tables};
use crate::vectorized::results::Results;
use crate::vectorized::stages::Stages;

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
    /// Hand `string` columns out of `select_stream` as Arrow `Binary` rather than `Utf8`:
    /// for byte strings that are not UTF-8, which fail a text column.
    pub binary_strings: bool,
    /// Counts the rows and row groups the main table's scan reads, as it reads them, with
    /// its plan's totals (for a progress display; a Parquet file table counts nothing).
    pub progress: Option<Arc<ReadProgress>>,
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
            binary_strings: false,
            progress: None,
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
#[derive(Debug, Clone, Default)]
pub struct QueryResult {
    pub columns: Vec<(String, ValueType)>,
    pub rows: Vec<Vec<Value>>,
    pub statistics: Statistics,
}

/// A running query's result: its columns, and its rows as a stream of Arrow record batches
/// in the order YT gives them.
///
/// Each batch has [`QueryStream::schema`]: a field per output column, of its wire type's
/// Arrow type (`string` and `any` as `Binary`, `utf8` table columns as `Utf8`), with the YT
/// type in the field metadata (`yt:type`). Rows are computed as the stream is read: an
/// error (an evaluation error, a row limit passed with `fail_on_incomplete_result`) can
/// come after some batches, and then the batches before it are not the query's result.
/// Dropping the stream cancels the query. [`QueryStream::into_result`] collects it.
pub struct QueryStream {
    columns: Vec<(String, ValueType)>,
    schema: SchemaRef,
    batches: BoxStream<'static, Result<RecordBatch>>,
    statistics: Arc<Mutex<Option<Statistics>>>,
    stages: Stages,
}

impl std::fmt::Debug for QueryStream {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("QueryStream")
            .field("columns", &self.columns)
            .finish_non_exhaustive()
    }
}

impl QueryStream {
    /// The stream of a run that hands its rows on as they come.
    pub(crate) fn new(plan: &QueryPlan, results: Results) -> QueryStream {
        let statistics = Arc::new(Mutex::new(None));
        QueryStream {
            columns: output_columns(plan),
            schema: results.schema(),
            stages: results.stages(),
            batches: results.into_stream(statistics.clone()),
            statistics,
        }
    }

    /// The stream of a run that has ended.
    pub(crate) fn collected(
        plan: &QueryPlan,
        schema: SchemaRef,
        batches: Vec<RecordBatch>,
        statistics: Statistics,
        stages: Stages,
    ) -> QueryStream {
        QueryStream {
            columns: output_columns(plan),
            schema,
            batches: futures::stream::iter(batches.into_iter().map(Ok)).boxed(),
            statistics: Arc::new(Mutex::new(Some(statistics))),
            stages,
        }
    }

    /// The result's columns: name and YT wire type, in output order.
    pub fn columns(&self) -> &[(String, ValueType)] {
        &self.columns
    }

    /// The Arrow schema of every batch.
    pub fn schema(&self) -> SchemaRef {
        self.schema.clone()
    }

    /// What the query read and wrote; `None` until the stream has ended without an error.
    pub fn statistics(&self) -> Option<Statistics> {
        self.statistics
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clone()
    }

    /// A batch's rows as values of the result's column types.
    pub fn rows(&self, batch: &RecordBatch) -> Vec<Vec<Value>> {
        let types: Vec<ValueType> = self.columns.iter().map(|(_, t)| *t).collect();
        batch_to_rows(batch, &types)
    }

    /// Reads the whole stream into a [`QueryResult`].
    ///
    /// # Errors
    /// The first error the stream gives.
    pub async fn into_result(mut self) -> Result<QueryResult> {
        let mut rows = Vec::new();
        while let Some(batch) = self.batches.next().await {
            rows.extend(self.rows(&batch?));
        }
        let statistics = self.statistics().unwrap_or_default();
        Ok(QueryResult {
            columns: self.columns,
            rows,
            statistics,
        })
    }
}

impl Stream for QueryStream {
    type Item = Result<RecordBatch>;

    fn poll_next(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<Option<Self::Item>> {
        self.batches.poll_next_unpin(cx)
    }
}

fn output_columns(plan: &QueryPlan) -> Vec<(String, ValueType)> {
    plan.projections
        .iter()
        .map(|p| (p.name.clone(), p.expr.ty))
        .collect()
}

/// The largest `range_expansion_limit` accepted: inference may generate that many key
/// ranges, a few hundred bytes each, so the cap bounds its memory (hundreds of MB at most).
pub const MAX_RANGE_EXPANSION_LIMIT: u64 = 1_000_000;

/// The most bytes of strings one expression computes over one batch (at most 8,192 rows),
/// intermediate values included: 256 MiB. Checked as the values are computed, before their
/// array is built; far below the 2 GiB an Arrow `Binary` array holds.
pub const MAX_BATCH_STRING_BYTES: u64 = 256 * 1024 * 1024;

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

/// Parses, binds and runs `query` against `store`: the bound plan is lowered onto a
/// DataFusion plan over a streaming scan of the main table's inferred key ranges (see
/// the `vectorized::lower` module).
///
/// # Errors
/// Query errors (syntax, binding, evaluation), storage errors, and
/// [`Error::LimitExceeded`] when a row limit is hit with `fail_on_incomplete_result`.
pub async fn select_rows(
    store: &Store,
    query: &str,
    options: &SelectOptions,
) -> Result<QueryResult> {
    select_stream(store, query, options)
        .await?
        .into_result()
        .await
}

/// Parses, binds and starts `query` against `store`, as [`select_rows`], giving its rows
/// as they are computed.
///
/// # Errors
/// Errors found before the first row (syntax, binding, range inference, planning, and for
/// grouped queries the grouping); later ones come through the stream.
pub async fn select_stream(
    store: &Store,
    query: &str,
    options: &SelectOptions,
) -> Result<QueryStream> {
    select_stream_in(&Engine::shared(), store, query, options).await
}

#[tracing::instrument(level = "debug", skip_all, fields(query))]
pub(crate) async fn select_stream_in(
    engine: &Engine,
    store: &Store,
    query: &str,
    options: &SelectOptions,
) -> Result<QueryStream> {
    use tracing::Instrument;
    check_options(options)?;
    let (catalog, plan) = bind(store, query, options)
        .instrument(tracing::debug_span!("bind"))
        .await?;
    let ranges = tracing::debug_span!("key_ranges")
        .in_scope(|| readable_ranges(&catalog, &plan, options))?;
    tracing::debug!(key_ranges = ranges.len(), "inferred");
    crate::vectorized::lower::run(engine, &catalog, &plan, &ranges, options)
        .instrument(tracing::debug_span!("plan"))
        .await
}

/// The main table's key ranges for `plan`, once every table it reads is known readable.
fn readable_ranges(
    catalog: &Tables,
    plan: &QueryPlan,
    options: &SelectOptions,
) -> Result<Vec<dynql_storage::KeyRange>> {
    for source in &plan.sources {
        if let Some(entry) = catalog.store.get(&source.path) {
            dynql_storage::tablets::check_readable(entry, &source.path)?;
        }
    }
    main_table_ranges(plan, options.range_expansion_limit, options.allow_full_scan)
}

/// Runs `query` to its end as [`select_rows`] does (its rows are counted, not kept) and
/// reports what [`explain_query`] does, with the physical plans that ran annotated with the
/// metrics of their operators (rows, batches, time, and for the scan the rows decoded, row
/// groups and chunks read and data weight) and what the run read
/// (`explain-query --analyze`).
///
/// # Errors
/// As [`select_rows`].
pub async fn explain_analyze_query(
    store: &Store,
    query: &str,
    options: &SelectOptions,
) -> Result<Explanation> {
    explain_analyze_query_in(&Engine::shared(), store, query, options).await
}

pub(crate) async fn explain_analyze_query_in(
    engine: &Engine,
    store: &Store,
    query: &str,
    options: &SelectOptions,
) -> Result<Explanation> {
    check_options(options)?;
    let started = std::time::Instant::now();
    let (catalog, plan) = bind(store, query, options).await?;
    let ranges = readable_ranges(&catalog, &plan, options)?;
    let main = catalog.source(store, &plan.sources[0].path)?;
    let read = main.explain(Some(&ranges), options.timestamp).await?;
    let mut stream =
        crate::vectorized::lower::run(engine, &catalog, &plan, &ranges, options).await?;
    let mut result_rows = 0u64;
    while let Some(batch) = stream.next().await {
        result_rows += batch?.num_rows() as u64;
    }
    let analysis = Analysis {
        result_rows,
        statistics: stream.statistics().unwrap_or_default(),
        elapsed: started.elapsed(),
    };
    Ok(Explanation {
        ranges,
        read,
        plan: Some(stream.stages.render()),
        analysis: Some(analysis),
    })
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
    explain_query_in(&Engine::shared(), store, query, options).await
}

pub(crate) async fn explain_query_in(
    engine: &Engine,
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
    let read = main.explain(Some(&ranges), options.timestamp).await?;
    let plan =
        Some(crate::vectorized::lower::explain(engine, &catalog, &plan, &ranges, options).await?);
    Ok(Explanation {
        ranges,
        read,
        plan,
        analysis: None,
    })
}

/// The query's tables (file tables opened) and its bound plan.
async fn bind(store: &Store, query: &str, options: &SelectOptions) -> Result<(Tables, QueryPlan)> {
    let paths = query_tables(query, options.placeholder_values.as_ref())?;
    store.settle_read_timestamp(options.timestamp).await?;
    let catalog = Tables::load(store, &paths, &options.files).await?;
    let bind = BindOptions {
        allow_join_without_index: options.allow_join_without_index,
        canonical_null_relations: options.use_canonical_null_relations,
    };
    let plan = bind_query(query, options.placeholder_values.as_ref(), &catalog, bind)?;
    Ok((catalog, plan))
}
