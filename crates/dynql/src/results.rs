//! What queries and lookups give: collected results, and the stream of a running query.

use std::pin::Pin;
use std::task::{Context, Poll};

use arrow::datatypes::SchemaRef;
use arrow::record_batch::RecordBatch;
use futures::{Stream, StreamExt};

use dynql_core::arrow_convert::{arrow_field, rows_to_batch};
use dynql_core::{Value, ValueType};
use dynql_exec::{QueryResult, QueryStream, Statistics};

use crate::error::{Error, Result};

/// The result of `lookup_rows`: one entry per requested key that is returned.
#[derive(Debug, Clone)]
pub struct LookupResult {
    pub columns: Vec<(String, ValueType)>,
    pub rows: Vec<Option<Vec<Value>>>,
    /// Keys looked up, and the rows the lookup row cache gave and did not.
    pub statistics: dynql_storage::LookupStatistics,
}

/// The result of `select_rows`.
#[derive(Debug, Clone)]
pub struct SelectResult {
    /// Result columns: name and type, in output order.
    pub columns: Vec<(String, ValueType)>,
    /// Rows, values in column order.
    pub rows: Vec<Vec<Value>>,
    /// Execution statistics.
    pub statistics: dynql_exec::Statistics,
}

impl From<QueryResult> for SelectResult {
    fn from(r: QueryResult) -> SelectResult {
        SelectResult {
            columns: r.columns,
            rows: r.rows,
            statistics: r.statistics,
        }
    }
}

impl SelectResult {
    /// The rows as one Arrow record batch: `string` columns are `Utf8` where every value
    /// is UTF-8 and `Binary` otherwise, `any` columns `Binary` (YSON).
    ///
    /// # Example
    /// ```
    /// # tokio::runtime::Runtime::new().unwrap().block_on(async {
    /// use dynql::arrow::datatypes::DataType;
    /// use dynql::{Database, SelectOptions};
    /// let db = Database::open("memory://")?;
    /// db.create_table_from_text("//t", "{dynamic=%true; schema=[{name=k;type=int64;sort_order=ascending};{name=v;type=string}]}").await?;
    /// db.insert_json_rows("//t", &[serde_json::json!({"k": 1, "v": "one"})]).await?;
    /// let result = db.select_rows("k, v from [//t]", &SelectOptions::default()).await?;
    /// let batch = result.to_record_batch()?;
    /// assert_eq!(batch.schema().field(1).data_type(), &DataType::Utf8);
    /// # Ok::<(), dynql::Error>(()) }).unwrap();
    /// ```
    pub fn to_record_batch(&self) -> Result<RecordBatch> {
        let fields: Vec<_> = self
            .columns
            .iter()
            .map(|(n, t)| arrow_field(n, *t, t.name()))
            .collect();
        let schema = std::sync::Arc::new(arrow::datatypes::Schema::new(fields));
        let batch =
            rows_to_batch(&schema, &self.rows).map_err(|e| Error::Invalid(e.to_string()))?;
        self.with_text(batch)
    }

    /// `batch` with its `string` columns as `Utf8`, those whose values are all UTF-8.
    fn with_text(&self, batch: RecordBatch) -> Result<RecordBatch> {
        let candidates = crate::text::text_columns(&batch.schema(), false);
        let mut columns = batch.columns().to_vec();
        let mut text = Vec::new();
        for c in candidates {
            if let Ok(array) = crate::text::binary_as_text(&columns[c]) {
                columns[c] = array;
                text.push(c);
            }
        }
        let schema = crate::text::text_schema(&batch.schema(), &text);
        RecordBatch::try_new(schema, columns).map_err(|e| Error::Invalid(e.to_string()))
    }

    /// The rows as JSON objects (keys in column order), as `yt select-rows --format json`.
    pub fn to_json_rows(&self) -> Vec<serde_json::Value> {
        self.rows
            .iter()
            .map(|r| {
                let mut m = serde_json::Map::new();
                for ((name, _), v) in self.columns.iter().zip(r) {
                    m.insert(name.clone(), v.to_json());
                }
                serde_json::Value::Object(m)
            })
            .collect()
    }
}

/// The rows of a running YT QL query ([`Database::select_stream`](crate::Database::select_stream)),
/// as Arrow record batches in YT's order.
///
/// Each batch has [`SelectStream::schema`]: a field per output column of its wire type's
/// Arrow type (`int64` as `Int64`, `string` and `utf8` as `Utf8`, `any` as `Binary` YSON),
/// the YT type in the field metadata under `yt:type`. A `string` value that is not UTF-8
/// fails the stream, naming its column: with [`SelectOptions::binary_strings`](crate::SelectOptions)
/// `string` columns are `Binary` and hold any bytes. Rows are computed as the
/// stream is read, so an error (an evaluation error, a row limit passed with
/// `fail_on_incomplete_result`) can come after some batches: then the query failed, and the
/// batches before the error are not its result. Dropping the stream cancels the query.
pub struct SelectStream {
    inner: QueryStream,
    /// The schema handed out, and the `string` columns it turns into text.
    schema: SchemaRef,
    text: Vec<usize>,
}

impl std::fmt::Debug for SelectStream {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.inner.fmt(f)
    }
}

impl SelectStream {
    /// The stream of `inner`, its `string` columns as text unless `binary_strings`.
    pub(crate) fn new(inner: QueryStream, binary_strings: bool) -> SelectStream {
        let schema = inner.schema();
        let text = crate::text::text_columns(&schema, binary_strings);
        SelectStream {
            schema: crate::text::text_schema(&schema, &text),
            inner,
            text,
        }
    }

    /// Result columns: name and YT wire type, in output order.
    pub fn columns(&self) -> &[(String, ValueType)] {
        self.inner.columns()
    }

    /// The Arrow schema of every batch.
    pub fn schema(&self) -> SchemaRef {
        self.schema.clone()
    }

    /// Execution statistics, once the stream has ended without an error.
    pub fn statistics(&self) -> Option<Statistics> {
        self.inner.statistics()
    }

    /// The next batch's rows as values, `None` at the end.
    ///
    /// # Errors
    /// As the stream: the query's error, after which it has ended.
    pub async fn next_rows(&mut self) -> Option<Result<Vec<Vec<Value>>>> {
        let batch = self.inner.next().await?;
        Some(batch.map(|b| self.inner.rows(&b)).map_err(Error::from))
    }

    /// Reads the rest of the stream into a [`SelectResult`].
    ///
    /// # Errors
    /// The first error the stream gives.
    pub async fn into_result(self) -> Result<SelectResult> {
        Ok(SelectResult::from(self.inner.into_result().await?))
    }
}

impl Stream for SelectStream {
    type Item = Result<RecordBatch>;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        let this = &mut *self;
        this.inner.poll_next_unpin(cx).map(|item| {
            item.map(|r| {
                let batch = r.map_err(Error::from)?;
                if this.text.is_empty() {
                    return Ok(batch);
                }
                crate::text::batch_as_text(&batch, &this.schema, &this.text)
                    .map_err(crate::text::NotUtf8::into_error)
            })
        })
    }
}
