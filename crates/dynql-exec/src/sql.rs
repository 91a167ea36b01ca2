//! Standard SQL (DataFusion's dialect) over the same tables as YT QL: the store's dynamic
//! tables by path (`SELECT * FROM "//home/t"`) and Parquet files (`FROM "file:./dump/*.parquet"`,
//! or a name mapped with [`FileTables`]).
//!
//! Only the tables a statement names are opened. Dynamic tables are read at one timestamp
//! from one snapshot through [`StoreTable`], streamed tablet by tablet, with the key ranges
//! the filters fix pushed into the scan; files through [`FileTableProvider`], streamed in key
//! order through the same scan, pruned by the same ranges. String columns are UTF-8 text
//! to SQL (its string functions need it); a value that is not UTF-8 fails the statement.

use std::sync::Arc;

use arrow::array::ArrayRef;
use arrow::datatypes::{DataType, Field, Schema};
use arrow::record_batch::RecordBatch;
use datafusion::execution::context::SessionContext;
use datafusion::prelude::DataFrame;
use dynql_core::arrow_convert::{arrow_type, batch_to_rows, value_type_of_field};
use dynql_core::ValueType;
use dynql_storage::files::FileTable;
use dynql_storage::{Store, Timestamp};

use crate::error::{Error, Result};
use crate::provider::{FileTableProvider, StoreTable};
use crate::select::{QueryResult, Statistics};
use crate::source::FileTables;

/// Runs one SQL statement (DataFusion's dialect) over the store's tables read at `timestamp`
/// and the Parquet files of `files` (and any `"file:LOCATION"` it names).
///
/// # Example
/// ```
/// # tokio::runtime::Runtime::new().unwrap().block_on(async {
/// use dynql_exec::{sql::run_sql, FileTables};
/// let store = dynql_storage::Store::open("memory://").unwrap();
/// let r = run_sql(&store, "SELECT 1 + 1 AS two", &FileTables::default(),
///     dynql_storage::Timestamp::SYNC_LAST_COMMITTED).await.unwrap();
/// assert_eq!(r.rows, vec![vec![dynql_core::Value::Int64(2)]]);
/// # });
/// ```
///
/// # Errors
/// SQL errors (parse, planning, execution) as DataFusion reports them, storage errors, and
/// file errors of the named Parquet files.
///
/// The statement may only read: DDL, session statements and statements that write files
/// (`COPY … TO`, `INSERT INTO` an external table) are refused; see [`run_sql_allowing_writes`].
pub async fn run_sql(
    store: &Store,
    sql: &str,
    files: &FileTables,
    timestamp: Timestamp,
) -> Result<QueryResult> {
    run(store, sql, files, timestamp, false).await
}

/// [`run_sql`], also allowing statements that write files (`COPY … TO 'file'`, `INSERT INTO`
/// an external table): only for callers that mean to let the SQL text write where it says.
///
/// # Errors
/// As [`run_sql`].
pub async fn run_sql_allowing_writes(
    store: &Store,
    sql: &str,
    files: &FileTables,
    timestamp: Timestamp,
) -> Result<QueryResult> {
    run(store, sql, files, timestamp, true).await
}

async fn run(
    store: &Store,
    sql: &str,
    files: &FileTables,
    timestamp: Timestamp,
    allow_writes: bool,
) -> Result<QueryResult> {
    let ctx = SessionContext::new();
    let state = ctx.state();
    let statement = state.sql_to_statement(sql, &state.config().options().sql_parser.dialect)?;
    let references = state.resolve_table_references(&statement)?;
    // Every dynamic table of the statement is read from one snapshot.
    let snapshot = store.snapshot().await?;
    let tables = snapshot.tables();
    let mut scanned = Vec::new();
    let mut read_files = Vec::new();
    for reference in references {
        // Only bare names can be paths or file locations (`"//t"`, `"file:…"`).
        if reference.schema().is_some() {
            continue;
        }
        let name = reference.table();
        if ctx.table_exist(reference.clone())? {
            continue;
        }
        // DuckDB's `FROM 'x.parquet'` (a name ending in .parquet, globs included) reads files
        // too, unless a dynamic table has that name.
        let location = files
            .location(name)
            .or_else(|| parquet_path(name).filter(|_| !tables.contains_key(name)));
        if let Some(location) = location {
            if tables.contains_key(name) {
                return Err(Error::Storage(dynql_storage::Error::Invalid(format!(
                    "{name} names both a dynamic table and Parquet files ({location}); map the files to another name"
                ))));
            }
            let table = FileTable::open(location, files.key(name)).await?;
            let provider = Arc::new(FileTableProvider::new(table));
            read_files.push(provider.clone());
            ctx.register_table(reference.clone(), provider)?;
        } else if let Some(entry) = tables.get(name) {
            dynql_storage::tablets::check_readable(entry, name)?;
            let provider = Arc::new(
                StoreTable::new(snapshot.clone(), name, entry.clone(), timestamp)
                    .with_text_strings(),
            );
            scanned.push(provider.clone());
            ctx.register_table(reference.clone(), provider)?;
        }
    }
    let plan = state.statement_to_plan(statement).await?;
    // DDL and session statements mean nothing in a one-statement session; writing files is
    // the caller's choice, never the SQL text's.
    datafusion::execution::context::SQLOptions::new()
        .with_allow_ddl(false)
        .with_allow_statements(false)
        .with_allow_dml(allow_writes)
        .verify_plan(&plan)
        .map_err(|e| {
            Error::Query(dynql_ql::Error::invalid_query(format!(
                "Only statements that read can run here ({e}); statements that write files (COPY … TO, INSERT INTO) need --allow-writes (library: Database::sql_allowing_writes)"
            )))
        })?;
    let batches = DataFrame::new(state, plan).collect().await?;
    let (columns, rows) = if let Some(first) = batches.first() {
        let schema = first.schema();
        let columns = result_columns(&schema);
        let mut rows = Vec::new();
        for b in &batches {
            let types: Vec<ValueType> = columns.iter().map(|(_, t)| *t).collect();
            rows.extend(batch_to_rows(&as_wire_types(b, &types)?, &types));
        }
        (columns, rows)
    } else {
        (Vec::new(), Vec::new())
    };
    let mut reads = Vec::new();
    for table in &scanned {
        reads.push(table.statistics().await);
    }
    for table in &read_files {
        reads.push(table.statistics().await);
    }
    let mut statistics = Statistics::default();
    for read in reads {
        statistics.rows_read += read.rows_read;
        statistics.data_weight_read += read.data_weight;
    }
    statistics.rows_written = rows.len() as u64;
    Ok(QueryResult {
        columns,
        rows,
        statistics,
    })
}

/// Names and YT wire types of a result: types without a YT equivalent (dates, decimals,
/// lists) are shown as text.
fn result_columns(schema: &Schema) -> Vec<(String, ValueType)> {
    schema
        .fields()
        .iter()
        .map(|f| {
            let t = match f.data_type() {
                DataType::Utf8View | DataType::BinaryView => ValueType::String,
                _ => value_type_of_field(&Field::new(f.name(), f.data_type().clone(), true))
                    .unwrap_or(ValueType::String),
            };
            (f.name().clone(), t)
        })
        .collect()
}

/// `batch` with each column cast to the Arrow type of its wire type (text first where the
/// type has no YT equivalent).
fn as_wire_types(batch: &RecordBatch, types: &[ValueType]) -> Result<RecordBatch> {
    let mut fields = Vec::with_capacity(types.len());
    let mut columns: Vec<ArrayRef> = Vec::with_capacity(types.len());
    for ((field, column), t) in batch
        .schema()
        .fields()
        .iter()
        .zip(batch.columns())
        .zip(types)
    {
        let target = arrow_type(*t);
        let mut column = column.clone();
        if *t == ValueType::String
            && !matches!(
                column.data_type(),
                DataType::Utf8 | DataType::LargeUtf8 | DataType::Binary | DataType::LargeBinary
            )
        {
            column = arrow::compute::cast(&column, &DataType::Utf8)
                .map_err(datafusion::error::DataFusionError::from)?;
        }
        if column.data_type() != &target {
            column = arrow::compute::cast(&column, &target)
                .map_err(datafusion::error::DataFusionError::from)?;
        }
        fields.push(Field::new(field.name(), target, true));
        columns.push(column);
    }
    Ok(RecordBatch::try_new(Arc::new(Schema::new(fields)), columns)
        .map_err(datafusion::error::DataFusionError::from)?)
}

/// A table name that is a Parquet path as DuckDB users write one (`'dump/*.parquet'`).
fn parquet_path(name: &str) -> Option<&str> {
    (!name.starts_with("//") && name.to_ascii_lowercase().ends_with(".parquet")).then_some(name)
}
