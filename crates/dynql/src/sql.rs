//! SQL sessions: several statements, and what they create, over the database's tables.

use dynql_storage::Store;

pub use dynql_exec::sql::SqlOptions;

use crate::{Database, Error, SelectResult};

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
            session: dynql_exec::sql::SqlSession::new(),
        }
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
