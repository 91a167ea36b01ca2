//! Queries of a [`Database`]: YT QL (`select_rows`, `select_stream`, `explain_query`,
//! `explain_analyze_query`) and one-shot SQL, run in the database's engine.

use dynql_exec::SelectOptions;
use dynql_storage::Timestamp;

use crate::error::Result;
use crate::results::{SelectResult, SelectStream};
use crate::Database;

impl Database {
    /// Runs a YT QL query and collects its rows ([`Database::select_stream`] hands them on
    /// as they are computed). Read them with [`SelectResult::iter`] and [`crate::Row::get`],
    /// or into structs with [`SelectResult::deserialize`].
    ///
    /// # Example
    /// ```
    /// # tokio::runtime::Runtime::new().unwrap().block_on(async {
    /// let db = dynql::Database::open("memory://")?;
    /// db.create_table_from_text("//t", "{dynamic=%true; schema=[{name=k;type=int64;sort_order=ascending};{name=v;type=string}]}")
    ///     .await?;
    /// db.insert_json_rows("//t", &[serde_json::json!({"k": 1, "v": "a"}), serde_json::json!({"k": 2, "v": "a"})])
    ///     .await?;
    /// let options = dynql::SelectOptions::default();
    /// let result = db.select_rows("v, sum(k) as total from [//t] group by v", &options).await?;
    /// assert_eq!(result.row(0).unwrap().get::<i64>("total")?, 3);
    /// # Ok::<(), dynql::Error>(()) }).unwrap();
    /// ```
    pub async fn select_rows(&self, query: &str, options: &SelectOptions) -> Result<SelectResult> {
        self.select_stream(query, options)
            .await?
            .into_result()
            .await
    }

    /// Starts a YT QL query, giving its rows as a stream of Arrow record batches as they are
    /// computed (see [`SelectStream`]). Dropping the stream cancels the query.
    ///
    /// # Example
    /// ```
    /// # tokio::runtime::Runtime::new().unwrap().block_on(async {
    /// use dynql::arrow::array::AsArray;
    /// use dynql::{Database, SelectOptions};
    /// use futures::TryStreamExt;
    /// let db = Database::open("memory://")?;
    /// db.create_table_from_text(
    ///     "//t",
    ///     "{dynamic=%true; schema=[{name=k;type=int64;sort_order=ascending};{name=v;type=utf8}]}",
    /// )
    /// .await?;
    /// db.insert_json_rows("//t", &[serde_json::json!({"k": 1, "v": "one"})]).await?;
    /// let stream = db.select_stream("v from [//t]", &SelectOptions::default()).await?;
    /// let batches: Vec<_> = stream.try_collect().await?;
    /// assert_eq!(batches[0].column(0).as_string::<i32>().value(0), "one");
    /// # Ok::<(), dynql::Error>(()) }).unwrap();
    /// ```
    pub async fn select_stream(
        &self,
        query: &str,
        options: &SelectOptions,
    ) -> Result<SelectStream> {
        let stream = self
            .engine
            .select_stream(&self.store, query, options)
            .await?;
        Ok(SelectStream::new(stream, options.binary_strings))
    }

    /// Runs one statement of standard SQL (DataFusion's dialect) over the same tables as
    /// [`Database::select_rows`]: dynamic tables by path as quoted identifiers, and Parquet
    /// files by `"file:LOCATION"` or by a name mapped in `files`. Dynamic tables are read at
    /// `timestamp`.
    ///
    /// # Example
    /// ```
    /// # tokio::runtime::Runtime::new().unwrap().block_on(async {
    /// use dynql::{Database, FileTables, Timestamp, Value};
    /// let db = Database::open("memory://").unwrap();
    /// db.create_table_from_text(
    ///     "//t",
    ///     "{dynamic=%true; schema=[{name=k; type=int64; sort_order=ascending}; {name=v; type=string}]}",
    /// )
    /// .await
    /// .unwrap();
    /// db.insert_json_rows("//t", &[serde_json::json!({"k": 1, "v": "a"}), serde_json::json!({"k": 2, "v": "b"})])
    ///     .await
    ///     .unwrap();
    /// let r = db
    ///     .sql(r#"SELECT count(*) AS n FROM "//t" WHERE k > 1"#, &FileTables::default(), Timestamp::SYNC_LAST_COMMITTED)
    ///     .await
    ///     .unwrap();
    /// assert_eq!(r.rows, vec![vec![Value::Int64(1)]]);
    /// # });
    /// ```
    pub async fn sql(
        &self,
        query: &str,
        files: &dynql_exec::FileTables,
        timestamp: Timestamp,
    ) -> Result<SelectResult> {
        let result =
            dynql_exec::sql::run_sql_in(&self.engine, &self.store, query, files, timestamp, false)
                .await?;
        Ok(SelectResult::from(result))
    }

    /// [`Database::sql`], also running statements that write files (`COPY … TO 'file'`,
    /// `INSERT INTO` an external table). [`Database::sql`] refuses them: an application
    /// passing user text to it cannot be made to write files.
    pub async fn sql_allowing_writes(
        &self,
        query: &str,
        files: &dynql_exec::FileTables,
        timestamp: Timestamp,
    ) -> Result<SelectResult> {
        let result =
            dynql_exec::sql::run_sql_in(&self.engine, &self.store, query, files, timestamp, true)
                .await?;
        Ok(SelectResult::from(result))
    }

    /// Infers the key ranges a query reads from its main table and reports what a scan of
    /// them selects (tablets, chunks, row groups), without running it.
    ///
    /// # Example
    /// ```
    /// # tokio::runtime::Runtime::new().unwrap().block_on(async {
    /// use dynql::{Database, SelectOptions};
    /// let db = Database::open("memory://").unwrap();
    /// db.create_table_from_text(
    ///     "//t",
    ///     "{dynamic=%true; schema=[{name=k; type=int64; sort_order=ascending}; {name=v; type=string}]}",
    /// )
    /// .await
    /// .unwrap();
    /// let e = db.explain_query("* from [//t] where k = 5", &SelectOptions::default()).await.unwrap();
    /// assert_eq!(e.ranges[0].to_string(), "[5]..[5,MAX]");
    /// # });
    /// ```
    pub async fn explain_query(
        &self,
        query: &str,
        options: &SelectOptions,
    ) -> Result<dynql_exec::Explanation> {
        Ok(self
            .engine
            .explain_query(&self.store, query, options)
            .await?)
    }

    /// Runs `query` to its end (counting its rows, not keeping them) and explains it as
    /// [`Database::explain_query`] does, with the physical plans that ran annotated with their
    /// operators' metrics and what the run read ([`dynql_exec::Analysis`]): EXPLAIN ANALYZE.
    ///
    /// # Example
    /// ```
    /// # tokio::runtime::Runtime::new().unwrap().block_on(async {
    /// use dynql::{Database, SelectOptions};
    /// let db = Database::open("memory://")?;
    /// db.create_table_from_text(
    ///     "//t",
    ///     "{dynamic=%true; schema=[{name=k;type=int64;sort_order=ascending};{name=v;type=int64}]}",
    /// )
    /// .await?;
    /// db.insert_json_rows("//t", &[serde_json::json!({"k": 1, "v": 2})]).await?;
    /// let e = db.explain_analyze_query("v from [//t]", &SelectOptions::default()).await?;
    /// assert_eq!(e.analysis.unwrap().result_rows, 1);
    /// assert!(e.plan.unwrap().contains("output_rows=1"));
    /// # Ok::<(), dynql::Error>(())
    /// # }).unwrap();
    /// ```
    pub async fn explain_analyze_query(
        &self,
        query: &str,
        options: &SelectOptions,
    ) -> Result<dynql_exec::Explanation> {
        Ok(self
            .engine
            .explain_analyze_query(&self.store, query, options)
            .await?)
    }
}
