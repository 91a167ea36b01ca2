//! SQL sessions: several statements, and what they create, over the database's tables.

use std::pin::Pin;
use std::task::{Context, Poll};

use arrow::datatypes::SchemaRef;
use arrow::record_batch::RecordBatch;
use datafusion::physical_plan::SendableRecordBatchStream;
use dynql_storage::Store;
use futures::{Stream, StreamExt};

pub use dynql_exec::sql::SqlOptions;

use crate::{Database, Error, Result, SelectResult};

/// A SQL session over a database: `;`-separated statements run in order, and the tables
/// (`CREATE TABLE … AS SELECT`), views and settings they create last as long as the
/// session. Each statement reads dynamic tables from a fresh snapshot.
///
/// # Example
/// ```
/// # tokio::runtime::Runtime::new().unwrap().block_on(async {
/// use dynql::{Database, SqlOptions, Value};
/// let db = Database::open("memory://").unwrap();
/// let mut session = db.sql_session();
/// let options = SqlOptions::default();
/// let outcome = session.run("CREATE TABLE t AS SELECT 41 AS a", &options).await;
/// assert!(outcome.error.is_none() && outcome.results.is_empty());
/// let outcome = session.run("SELECT a + 1 AS b FROM t", &options).await;
/// assert_eq!(outcome.results[0].rows, vec![vec![Value::Int64(42)]]);
/// # });
/// ```
pub struct SqlSession {
    store: Store,
    session: dynql_exec::sql::SqlSession,
}

/// What a run of SQL statements gave.
#[derive(Debug)]
pub struct SqlOutcome {
    /// The results of the statements that ran and return rows, in order (queries,
    /// `EXPLAIN`, and a count for `COPY` and `INSERT`; `CREATE`, `DROP` and `SET` return none).
    pub results: Vec<SelectResult>,
    /// The error that stopped the run, with the number of its statement (from 1); the
    /// statements after it did not run.
    pub error: Option<(usize, Error)>,
    /// How many statements the text held (0 when it did not parse).
    pub statements: usize,
}

impl std::fmt::Debug for SqlSession {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.session.fmt(f)
    }
}

impl Database {
    /// A new SQL session over this database's tables.
    pub fn sql_session(&self) -> SqlSession {
        SqlSession {
            store: self.store.clone(),
            session: dynql_exec::sql::SqlSession::with_engine(&self.engine),
        }
    }

    /// Runs SQL (DataFusion's dialect; `;`-separated statements run in order) and streams the
    /// last statement's rows as Arrow batches while they are computed, typed as DataFusion
    /// types them: file columns as the files have them (decimals, timestamps, lists…),
    /// dynamic tables' `string`/`utf8` columns as text. As [`Database::select_stream`] for
    /// YT QL. Dropping the stream cancels the statement.
    ///
    /// # Example
    /// ```
    /// # tokio::runtime::Runtime::new().unwrap().block_on(async {
    /// use dynql::{futures::TryStreamExt, Database, SqlOptions};
    /// use dynql::arrow::array::AsArray;
    /// use dynql::arrow::datatypes::Int64Type;
    /// let db = Database::open("memory://").unwrap();
    /// let stream = db
    ///     .sql_stream("SELECT * FROM (VALUES (1), (2), (3)) AS t(n) WHERE n > 1", &SqlOptions::default())
    ///     .await
    ///     .unwrap();
    /// let batches: Vec<_> = stream.try_collect().await.unwrap();
    /// let n: i64 = batches.iter().map(|b| b.column(0).as_primitive::<Int64Type>().len() as i64).sum();
    /// assert_eq!(n, 2);
    /// # });
    /// ```
    ///
    /// # Errors
    /// SQL errors (parse, planning), storage and file errors of the statements before the
    /// last and of the last one's planning; errors while it runs come through the stream.
    pub async fn sql_stream(&self, sql: &str, options: &SqlOptions) -> Result<SqlStream> {
        let mut session = dynql_exec::sql::SqlSession::with_engine(&self.engine);
        let inner = session.stream(&self.store, sql, options).await?;
        Ok(SqlStream { inner })
    }
}

/// The rows of a SQL statement as Arrow record batches, computed as the stream is read
/// ([`Database::sql_stream`]). Every batch has [`SqlStream::schema`].
pub struct SqlStream {
    inner: SendableRecordBatchStream,
}

impl std::fmt::Debug for SqlStream {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SqlStream")
            .field("schema", &self.inner.schema())
            .finish()
    }
}

impl SqlStream {
    /// The Arrow schema of every batch.
    pub fn schema(&self) -> SchemaRef {
        self.inner.schema()
    }
}

impl Stream for SqlStream {
    type Item = Result<RecordBatch>;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        self.inner
            .poll_next_unpin(cx)
            .map(|item| item.map(|r| r.map_err(|e| Error::from(dynql_exec::Error::from(e)))))
    }
}

impl SqlSession {
    /// Runs the `;`-separated statements of `sql`, stopping at the first error.
    pub async fn run(&mut self, sql: &str, options: &SqlOptions) -> SqlOutcome {
        let outcome = self.session.run(&self.store, sql, options).await;
        SqlOutcome {
            results: outcome
                .results
                .into_iter()
                .map(SelectResult::from)
                .collect(),
            error: outcome.error.map(|(n, e)| (n, Error::from(e))),
            statements: outcome.statements,
        }
    }
}
