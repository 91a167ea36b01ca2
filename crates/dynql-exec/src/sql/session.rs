//! A SQL session: statements run one after another, and what they create (tables made with
//! `CREATE TABLE … AS`, views, external tables, settings) lives as long as the session.
//!
//! Dynamic tables and mapped file tables are not part of the session: each statement opens the
//! ones it names, reads them from one fresh snapshot, and lets them go when it ends, so the
//! next statement sees what was written since.

use crate::engine::Engine;
use std::sync::Arc;

use arrow::record_batch::RecordBatch;
use datafusion::catalog::TableProvider;
use datafusion::common::tree_node::TreeNodeRecursion;
use datafusion::common::TableReference;
use datafusion::datasource::{source_as_provider, MemTable};
use datafusion::execution::context::SessionContext;
use datafusion::logical_expr::{DdlStatement, LogicalPlan, Statement};
use datafusion::physical_plan::{ExecutionPlan, SendableRecordBatchStream};
use datafusion::sql::parser::{DFParserBuilder, Statement as SqlStatement};
use dynql_storage::files::FileTable;
use dynql_storage::Store;
use futures::TryStreamExt;

use super::copy;
use super::files::{self, FileFormatKind, FileSource};
use super::from_first;
use super::read_files::{self, OpenedSources, ReadFiles};
use super::result::query_result;
use super::SqlOptions;
use crate::error::{Error, Result};
use crate::provider::{FileTableProvider, StoreTable};
use crate::select::{QueryResult, Statistics};

/// Statements run in order, sharing the tables, views and settings they create.
///
/// # Example
/// ```
/// # tokio::runtime::Runtime::new().unwrap().block_on(async {
/// use dynql_exec::sql::{SqlOptions, SqlSession};
/// let store = dynql_storage::Store::open("memory://").unwrap();
/// let mut session = SqlSession::new();
/// let outcome = session
///     .run(&store, "CREATE TABLE t AS SELECT 1 AS a; SELECT a + 1 AS b FROM t", &SqlOptions::default())
///     .await;
/// assert!(outcome.error.is_none());
/// assert_eq!(outcome.results.len(), 1); // CREATE TABLE returns no rows
/// assert_eq!(outcome.results[0].rows, vec![vec![dynql_core::Value::Int64(2)]]);
/// # });
/// ```
pub struct SqlSession {
    ctx: SessionContext,
    /// The files the statement's `read_parquet`/`read_csv` calls opened.
    sources: Arc<OpenedSources>,
    /// The tables the running statement registered: let go when it ends, or before the next
    /// statement when it was dropped unfinished (cancelled).
    registered: Vec<TableReference>,
}

impl std::fmt::Debug for SqlSession {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SqlSession")
            .field("session_id", &self.ctx.session_id())
            .finish()
    }
}

impl Default for SqlSession {
    fn default() -> Self {
        SqlSession::new()
    }
}

/// What a run of statements gave.
#[derive(Debug)]
pub struct SqlOutcome {
    /// The results of the statements that ran and return rows, in order: queries, `EXPLAIN`,
    /// `COPY` and `INSERT` (a count). `CREATE`, `DROP` and `SET` return none.
    pub results: Vec<QueryResult>,
    /// The error that stopped the run, with the number of its statement (from 1); the
    /// statements after it did not run.
    pub error: Option<(usize, Error)>,
    /// How many statements the text held (0 when it did not parse).
    pub statements: usize,
}

impl SqlSession {
    /// A session with nothing in it, in the process's shared engine.
    pub fn new() -> SqlSession {
        SqlSession::with_engine(&Engine::shared())
    }

    /// A session with nothing in it over `engine`'s runtime (its memory pool and the disk
    /// manager operators spill to).
    pub fn with_engine(engine: &Engine) -> SqlSession {
        let ctx = SessionContext::new_with_config_rt(engine.session_config(), engine.runtime());
        let sources = Arc::new(OpenedSources::default());
        for (name, format) in read_files::FUNCTIONS {
            ctx.register_udtf(
                name,
                Arc::new(ReadFiles {
                    name,
                    format,
                    sources: sources.clone(),
                }),
            );
        }
        SqlSession {
            ctx,
            sources,
            registered: Vec::new(),
        }
    }

    /// Runs the `;`-separated statements of `sql` in order, stopping at the first error.
    pub async fn run(&mut self, store: &Store, sql: &str, options: &SqlOptions) -> SqlOutcome {
        let mut outcome = SqlOutcome {
            results: Vec::new(),
            error: None,
            statements: 0,
        };
        let statements = match self.parse(sql) {
            Ok(statements) => statements,
            Err(e) => {
                outcome.error = Some((1, e));
                return outcome;
            }
        };
        outcome.statements = statements.len();
        for (i, statement) in statements.into_iter().enumerate() {
            match self.run_statement(store, statement, options).await {
                Ok(Some(result)) => outcome.results.push(result),
                Ok(None) => {}
                Err(e) => {
                    outcome.error = Some((i + 1, e));
                    break;
                }
            }
        }
        outcome
    }

    /// Runs the `;`-separated statements of `sql` in order and streams the last one's rows
    /// as DataFusion computes them, typed as DataFusion types them (the statements before
    /// it run to their end first; their results are not kept). Dropping the stream cancels
    /// the statement.
    ///
    /// # Errors
    /// The first statement's error, or the last one's planning error; errors while the
    /// last statement runs come through the stream.
    pub async fn stream(
        &mut self,
        store: &Store,
        sql: &str,
        options: &SqlOptions,
    ) -> Result<SendableRecordBatchStream> {
        let mut statements = self.parse(sql)?;
        let Some(last) = statements.pop() else {
            return Err(invalid("No SQL statement was given".to_string()));
        };
        for statement in statements {
            self.run_statement(store, statement, options).await?;
        }
        self.let_tables_go();
        let mut opened = Opened::default();
        let result = self.start(store, last, options, &mut opened).await;
        // The running plan holds the tables it reads: the session may let them go.
        self.let_tables_go();
        match result? {
            Started::Running(stream, _) => Ok(stream),
            Started::Done(batches) => {
                let batches = batches.unwrap_or_default();
                let schema = match batches.first() {
                    Some(b) => b.schema(),
                    None => Arc::new(arrow::datatypes::Schema::empty()),
                };
                Ok(Box::pin(
                    datafusion::physical_plan::stream::RecordBatchStreamAdapter::new(
                        schema,
                        futures::stream::iter(batches.into_iter().map(Ok)),
                    ),
                ))
            }
        }
    }

    fn parse(&self, sql: &str) -> Result<Vec<SqlStatement>> {
        let state = self.ctx.state();
        let options = state.config().options();
        let dialect =
            datafusion::sql::sqlparser::dialect::dialect_from_str(options.sql_parser.dialect)
                .unwrap_or_else(|| {
                    Box::new(datafusion::sql::sqlparser::dialect::GenericDialect {})
                });
        let parse = |sql: &str| {
            DFParserBuilder::new(sql)
                .with_dialect(dialect.as_ref())
                .with_recursion_limit(options.sql_parser.recursion_limit.get())
                .build()?
                .parse_statements()
        };
        let mut statements = match parse(sql) {
            Ok(statements) => statements,
            // DuckDB's spellings DataFusion's parser stops at, tried only on a text that does
            // not parse as it is: `COPY … TO 'f' (FORMAT parquet, …)` is DataFusion's
            // `… OPTIONS (…)`, and `FROM t WHERE …` is `SELECT * FROM t WHERE …`.
            Err(e) => {
                let copy = copy::with_options_keyword(sql);
                let text = copy.as_deref().unwrap_or(sql);
                let rewritten = from_first::with_select_star(text, dialect.as_ref()).or(copy);
                match rewritten {
                    Some(rewritten) => parse(&rewritten).map_err(|_| e)?,
                    None => return Err(e.into()),
                }
            }
        };
        if statements.is_empty() {
            return Err(invalid("No SQL statement was given".to_string()));
        }
        // `FROM t` and `FROM t LIMIT 1` parse without a projection: DuckDB's `*`.
        for statement in &mut statements {
            from_first::select_every_column(statement);
        }
        Ok(statements.into())
    }

    /// Runs one statement with the tables it names opened for it alone.
    async fn run_statement(
        &mut self,
        store: &Store,
        statement: SqlStatement,
        options: &SqlOptions,
    ) -> Result<Option<QueryResult>> {
        self.let_tables_go();
        let mut opened = Opened::default();
        let result = self
            .plan_and_run(store, statement, options, &mut opened)
            .await;
        self.let_tables_go();
        let batches = match result? {
            Some(batches) => batches,
            None => return Ok(None),
        };
        // Chunks and row groups read of all tables, `[read, total]`.
        let mut statistics = Statistics::default();
        let add = |to: &mut (usize, usize), from: (usize, usize)| {
            to.0 += from.0;
            to.1 += from.1;
        };
        let mut scans = Vec::new();
        for table in &opened.dynamic {
            scans.push(table.statistics().await);
        }
        for table in &opened.files {
            scans.push(table.statistics().await);
        }
        for read in scans {
            statistics.rows_read += read.rows_read;
            statistics.data_weight_read += read.data_weight;
            add(&mut statistics.scan.chunks, read.chunks);
            add(&mut statistics.scan.row_groups, read.row_groups);
        }
        if let Some(read) = opened.file_scans.take() {
            statistics.rows_read += read.rows_read;
            statistics.data_weight_read += read.data_weight_read;
            add(&mut statistics.scan.chunks, read.scan.chunks);
            add(&mut statistics.scan.row_groups, read.scan.row_groups);
        }
        query_result(&batches, statistics).map(Some)
    }

    /// Lets go of the tables the last statement opened: the next one opens them afresh.
    fn let_tables_go(&mut self) {
        for reference in self.registered.drain(..) {
            let _ = self.ctx.deregister_table(reference);
        }
        self.sources.clear();
    }

    async fn plan_and_run(
        &mut self,
        store: &Store,
        statement: SqlStatement,
        options: &SqlOptions,
        opened: &mut Opened,
    ) -> Result<Option<Vec<RecordBatch>>> {
        match self.start(store, statement, options, opened).await? {
            Started::Done(batches) => Ok(batches),
            Started::Running(stream, physical) => {
                let batches: Vec<RecordBatch> = stream.try_collect().await?;
                opened.file_scans = files::file_scan_statistics(&physical);
                Ok(Some(batches))
            }
        }
    }

    /// The physical plan of `plan` and the stream of its running.
    async fn execute(
        &self,
        plan: LogicalPlan,
    ) -> Result<(Arc<dyn ExecutionPlan>, SendableRecordBatchStream)> {
        let physical = self
            .ctx
            .execute_logical_plan(plan)
            .await?
            .create_physical_plan()
            .await?;
        let stream =
            datafusion::physical_plan::execute_stream(physical.clone(), self.ctx.task_ctx())?;
        Ok((physical, stream))
    }

    /// Plans `statement` and starts it: `COPY … TO` a Parquet file runs to its end (dynql's
    /// writer writes the file) and gives its count; other statements give their stream.
    async fn start(
        &mut self,
        store: &Store,
        statement: SqlStatement,
        options: &SqlOptions,
        opened: &mut Opened,
    ) -> Result<Started> {
        // `COPY … TO 'x.parquet'`: the query runs here, dynql's writer writes the file.
        if let Some(copy) = copy::parquet_copy(&statement) {
            let copy = copy?;
            if !options.allow_writes {
                return Err(invalid(format!("Not allowed: {WRITES}")));
            }
            let plan = self
                .plan(store, copy.source.clone(), options, opened)
                .await?;
            let (physical, stream) = self.execute(plan).await?;
            let rows = copy.write(stream).await?;
            opened.file_scans = files::file_scan_statistics(&physical);
            let count = RecordBatch::try_from_iter([(
                "count",
                Arc::new(arrow::array::UInt64Array::from(vec![rows])) as arrow::array::ArrayRef,
            )])
            .map_err(datafusion::error::DataFusionError::from)?;
            return Ok(Started::Done(Some(vec![count])));
        }
        let plan = self.plan(store, statement, options, opened).await?;
        let returns_rows = !matches!(
            plan,
            LogicalPlan::Ddl(_)
                | LogicalPlan::Statement(
                    Statement::SetVariable(_)
                        | Statement::ResetVariable(_)
                        | Statement::Prepare(_)
                        | Statement::Deallocate(_)
                )
        );
        let (physical, stream) = self.execute(plan).await?;
        if !returns_rows {
            // DDL and settings ran while planning; their (empty) plan has nothing to give.
            let _: Vec<RecordBatch> = stream.try_collect().await?;
            return Ok(Started::Done(None));
        }
        Ok(Started::Running(stream, physical))
    }

    /// Opens the tables `statement` names and plans it; refuses what it may not do.
    async fn plan(
        &mut self,
        store: &Store,
        mut statement: SqlStatement,
        options: &SqlOptions,
        opened: &mut Opened,
    ) -> Result<LogicalPlan> {
        if let SqlStatement::Statement(ast) = &mut statement {
            read_files::normalize_named_arguments(ast).map_err(invalid)?;
        }
        let state = self.ctx.state();
        let references = state.resolve_table_references(&statement)?;
        // Every dynamic table of the statement is read from one snapshot.
        store.settle_read_timestamp(options.timestamp).await?;
        let snapshot = store.snapshot().await?;
        let tables = snapshot.tables();
        let files = &options.files;
        for reference in references {
            // Only bare names can be paths or file locations (`"//t"`, `"file:…"`).
            if reference.schema().is_some() {
                continue;
            }
            let name = reference.table();
            if self.ctx.table_exist(reference.clone())? {
                continue;
            }
            // DuckDB's `FROM 'x.parquet'` (a name ending in .parquet, .csv or .tsv, globs
            // included) reads files too, unless a dynamic table has that name.
            let location = files
                .location(name)
                .or_else(|| super::file_path(name).filter(|_| !tables.contains_key(name)));
            if let Some(location) = location {
                if tables.contains_key(name) {
                    return Err(Error::Storage(dynql_storage::Error::Invalid(format!(
                        "{name} names both a dynamic table and files ({location}); map the files to another name"
                    ))));
                }
                // A key given for files makes them a sorted table (checked as YT QL reads
                // it); other files are read by DataFusion's readers, typed as they are.
                let provider: Arc<dyn TableProvider> = match files.key(name) {
                    Some(key) => {
                        let table = FileTable::open(location, Some(key)).await?;
                        let provider = Arc::new(FileTableProvider::new(table));
                        opened.files.push(provider.clone());
                        provider
                    }
                    None => {
                        let format =
                            FileFormatKind::of_name(location).unwrap_or(FileFormatKind::Parquet);
                        files::open(&state, &FileSource::new(location, format)).await?
                    }
                };
                self.ctx.register_table(reference.clone(), provider)?;
                self.registered.push(reference);
            } else if let Some(entry) = tables.get(name) {
                dynql_storage::tablets::check_readable(entry, name)?;
                let provider = Arc::new(
                    StoreTable::new(snapshot.clone(), name, entry.clone(), options.timestamp)
                        .with_text_strings(),
                );
                opened.dynamic.push(provider.clone());
                self.ctx.register_table(reference.clone(), provider)?;
                self.registered.push(reference);
            }
        }
        let plan = loop {
            let planned = self.ctx.state().statement_to_plan(statement.clone()).await;
            let wanted = self.sources.take_wanted();
            match planned {
                Ok(plan) => break plan,
                Err(e) if wanted.is_empty() => return Err(e.into()),
                Err(_) => {
                    for source in wanted {
                        let table = files::open(&state, &source).await?;
                        self.sources.insert(source, table);
                    }
                }
            }
        };
        check_statement(&plan, options, opened, &self.registered)?;
        Ok(plan)
    }
}

/// A started statement.
enum Started {
    /// It ran to its end (`COPY`, DDL, settings): its batches, if it gives rows.
    Done(Option<Vec<RecordBatch>>),
    /// It runs: its rows, and its plan (for what its scans read once it ends).
    Running(SendableRecordBatchStream, Arc<dyn ExecutionPlan>),
}

/// The tables one statement opened.
#[derive(Default)]
struct Opened {
    dynamic: Vec<Arc<StoreTable>>,
    /// Sorted file tables (a key was given), read by dynql's scan.
    files: Vec<Arc<FileTableProvider>>,
    /// What DataFusion's file scans read, once the plan ran.
    file_scans: Option<Statistics>,
}

fn invalid(message: String) -> Error {
    Error::Query(dynql_ql::Error::invalid_query(message))
}

/// Refuses what a statement may not do: write files unless allowed, write or drop dynamic
/// tables (SQL reads them; `insert-rows`, `remove` write), make a view of a dynamic table
/// (it would read the snapshot of its creation forever), transactions, catalogs, functions.
fn check_statement(
    plan: &LogicalPlan,
    options: &SqlOptions,
    opened: &Opened,
    registered: &[TableReference],
) -> Result<()> {
    let mut refusal = None;
    plan.apply_with_subqueries(|node| {
        refusal = refusal_of(node, options, opened, registered);
        Ok(if refusal.is_some() {
            TreeNodeRecursion::Stop
        } else {
            TreeNodeRecursion::Continue
        })
    })?;
    match refusal {
        Some(message) => Err(invalid(message)),
        None => Ok(()),
    }
}

/// Why a statement that writes files was refused.
const WRITES: &str = "statements that write files (COPY … TO, INSERT INTO an external table) need --allow-writes (library: SqlOptions::allow_writes)";

fn refusal_of(
    node: &LogicalPlan,
    options: &SqlOptions,
    opened: &Opened,
    registered: &[TableReference],
) -> Option<String> {
    let dynamic = |name: &TableReference| name.table().starts_with("//");
    match node {
        LogicalPlan::Copy(_) if !options.allow_writes => Some(format!("Not allowed: {WRITES}")),
        LogicalPlan::Dml(dml) => {
            let target: Option<Arc<dyn TableProvider>> = source_as_provider(&dml.target).ok();
            let target = target.as_deref();
            if target.is_some_and(|t| t.is::<MemTable>()) {
                None
            } else if target.is_some_and(|t| t.is::<StoreTable>()) {
                Some(format!(
                    "SQL reads dynamic tables and cannot write {}: write rows with insert-rows or delete-rows",
                    dml.table_name
                ))
            } else if target.is_some_and(|t| t.is::<FileTableProvider>())
                || registered.contains(&dml.table_name)
            {
                Some(format!(
                    "{} is a file table, read only: write files with COPY … TO",
                    dml.table_name
                ))
            } else if options.allow_writes {
                None
            } else {
                Some(format!("Not allowed: {WRITES}"))
            }
        }
        LogicalPlan::Ddl(ddl) => match ddl {
            DdlStatement::CreateMemoryTable(c) if dynamic(&c.name) => Some(format!(
                "CREATE TABLE makes a table of this SQL session, which cannot take the path {}: create dynamic tables with `create table`",
                c.name
            )),
            DdlStatement::CreateExternalTable(c) if dynamic(&c.name) => Some(format!(
                "CREATE EXTERNAL TABLE makes a table of this SQL session, which cannot take the path {}",
                c.name
            )),
            DdlStatement::CreateExternalTable(c) if c.file_type.eq_ignore_ascii_case("parquet") => {
                Some(format!(
                    "Parquet files are read with FROM '{0}' or read_parquet('{0}'); to name them, CREATE VIEW {1} AS SELECT * FROM read_parquet('{0}')",
                    c.locations.join("', '"), c.name
                ))
            }
            DdlStatement::CreateView(c) if dynamic(&c.name) => Some(format!(
                "CREATE VIEW makes a view of this SQL session, which cannot take the path {}",
                c.name
            )),
            DdlStatement::CreateView(c) if !opened.dynamic.is_empty() => Some(format!(
                "A view of a dynamic table would read it as it is now, forever: query the table each time, or copy it with CREATE TABLE {} AS SELECT …",
                c.name
            )),
            DdlStatement::DropTable(d) if dynamic(&d.name) || registered.contains(&d.name) => Some(format!(
                "DROP TABLE drops tables of this SQL session; {} is not one (remove a dynamic table with `remove`)",
                d.name
            )),
            DdlStatement::CreateMemoryTable(_)
            | DdlStatement::CreateExternalTable(_)
            | DdlStatement::CreateView(_)
            | DdlStatement::DropTable(_)
            | DdlStatement::DropView(_) => None,
            other => Some(format!(
                "{} is not supported in dynql's SQL: tables, views and settings are",
                other.name()
            )),
        },
        LogicalPlan::Statement(Statement::TransactionStart(_) | Statement::TransactionEnd(_)) => {
            Some("SQL has no transactions here: each statement reads one snapshot; write rows in a transaction with start-tx and insert-rows --tx".to_string())
        }
        _ => None,
    }
}
