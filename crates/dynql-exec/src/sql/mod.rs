//! Standard SQL (DataFusion's dialect) over the same tables as YT QL: the store's dynamic
//! tables by path (`SELECT * FROM "//home/t"`) and files (`FROM 'dump/*.parquet'`,
//! `FROM 'in.csv'`, `read_parquet(['a.parquet', 'b.parquet'], union_by_name => true)`,
//! `read_csv('in/*.csv')`, `FROM "file:./dump/*.parquet"`, or a name mapped with
//! [`FileTables`]).
//!
//! Only the tables a statement names are opened. Dynamic tables are read at one timestamp
//! from one snapshot through [`StoreTable`](crate::provider::StoreTable), streamed tablet by
//! tablet, with the key ranges the filters fix pushed into the scan; their `string` columns
//! are UTF-8 text to SQL (its string functions need it), and a value that is not UTF-8 fails
//! the statement. Files are read by DataFusion's Parquet and CSV readers (`files`): typed as
//! the files have them, row groups and pages pruned by statistics on any filtered column.
//! Files given a key (`--key`) are a sorted table instead, read in key order through
//! [`FileTableProvider`](crate::provider::FileTableProvider) as YT QL reads them.
//!
//! DuckDB's FROM-first `FROM t WHERE …` reads every column, as `SELECT * FROM t WHERE …`
//! (`from_first`).
//!
//! Several `;`-separated statements run in a [`SqlSession`], where `CREATE TABLE … AS SELECT`,
//! views and `SET` last until the session ends. SQL only reads dynamic tables.

mod copy;
mod files;
mod from_first;
mod read_files;
mod result;
mod session;

pub use session::{SqlOutcome, SqlSession};

use crate::engine::Engine;
use dynql_storage::{Store, Timestamp};

use crate::error::Result;
use crate::select::QueryResult;
use crate::source::FileTables;

/// What SQL statements may read and do.
#[derive(Debug, Clone)]
pub struct SqlOptions {
    /// Names mapped to Parquet files, and their keys.
    pub files: FileTables,
    /// The timestamp dynamic tables are read at.
    pub timestamp: Timestamp,
    /// Whether statements may write files (`COPY … TO 'file'`, `INSERT INTO` an external
    /// table). Off by default: an application passing user text cannot be made to write files.
    pub allow_writes: bool,
}

impl Default for SqlOptions {
    fn default() -> Self {
        SqlOptions {
            files: FileTables::default(),
            timestamp: Timestamp::SYNC_LAST_COMMITTED,
            allow_writes: false,
        }
    }
}

/// Runs SQL statements (DataFusion's dialect) over the store's tables read at `timestamp`
/// and the Parquet files of `files` (and any `"file:LOCATION"` it names), in a session of
/// their own, and returns the last result (no rows if no statement returns any).
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
/// The statements may only read: statements that write files (`COPY … TO`, `INSERT INTO` an
/// external table) are refused; see [`run_sql_allowing_writes`].
pub async fn run_sql(
    store: &Store,
    sql: &str,
    files: &FileTables,
    timestamp: Timestamp,
) -> Result<QueryResult> {
    run_sql_in(&Engine::shared(), store, sql, files, timestamp, false).await
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
    run_sql_in(&Engine::shared(), store, sql, files, timestamp, true).await
}

/// Runs `sql` in a session of its own over `engine`'s runtime (its memory limit); the last
/// result, or the first error. Statements that write files run only with `allow_writes`.
///
/// # Errors
/// As [`run_sql`].
pub async fn run_sql_in(
    engine: &Engine,
    store: &Store,
    sql: &str,
    files: &FileTables,
    timestamp: Timestamp,
    allow_writes: bool,
) -> Result<QueryResult> {
    let options = SqlOptions {
        files: files.clone(),
        timestamp,
        allow_writes,
    };
    let outcome = SqlSession::with_engine(engine)
        .run(store, sql, &options)
        .await;
    if let Some((_, e)) = outcome.error {
        return Err(e);
    }
    Ok(outcome.results.into_iter().next_back().unwrap_or_default())
}

/// A table name that is a file path as DuckDB users write one (`'dump/*.parquet'`,
/// `'in.csv'`).
fn file_path(name: &str) -> Option<&str> {
    (!name.starts_with("//") && files::FileFormatKind::of_name(name).is_some()).then_some(name)
}
