//! [`SelectBatches`]: the record batches of a running query, as an iterator.

use std::sync::Arc;

use arrow::datatypes::SchemaRef;
use arrow::record_batch::RecordBatch;
use dynql_core::ValueType;
use dynql_exec::Statistics;
use futures::StreamExt;

use super::runtime::Runtime;
use crate::error::Result;
use crate::results::{SelectResult, SelectStream};

/// The rows of a running YT QL query as Arrow record batches, computed as the iterator is
/// read ([`Database::select_batches`](super::Database::select_batches), the blocking
/// [`SelectStream`]). Dropping it cancels the query.
///
/// An error ends the iteration: the query failed, and the batches before it are not its
/// result.
///
/// # Example
/// ```
/// use dynql::blocking::Database;
/// let db = Database::open("memory://")?;
/// db.create_table_from_text("//t", "{dynamic=%true; schema=[{name=k;type=int64;sort_order=ascending}]}")?;
/// db.insert_json_rows("//t", &[serde_json::json!({"k": 1}), serde_json::json!({"k": 2})])?;
/// let batches = db.select_batches("k from [//t]", &Default::default())?;
/// assert_eq!(batches.schema().field(0).name(), "k");
/// let rows: usize = batches.map(|b| b.map(|b| b.num_rows())).sum::<dynql::Result<usize>>()?;
/// assert_eq!(rows, 2);
/// # Ok::<(), dynql::Error>(())
/// ```
pub struct SelectBatches {
    /// `None` once the stream has ended (or failed), so that it is not polled again.
    stream: Option<SelectStream>,
    statistics: Option<Statistics>,
    /// The iterator gave the query's error.
    failed: bool,
    schema: SchemaRef,
    columns: Vec<(String, ValueType)>,
    // Declared last: the stream is dropped (cancelling the query) before the runtime.
    runtime: Arc<Runtime>,
}

impl std::fmt::Debug for SelectBatches {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SelectBatches")
            .field("columns", &self.columns)
            .field("ended", &self.stream.is_none())
            .finish()
    }
}

impl SelectBatches {
    pub(super) fn new(stream: SelectStream, runtime: Arc<Runtime>) -> SelectBatches {
        SelectBatches {
            schema: stream.schema(),
            columns: stream.columns().to_vec(),
            stream: Some(stream),
            statistics: None,
            failed: false,
            runtime,
        }
    }

    /// The Arrow schema of every batch (see [`SelectStream::schema`]).
    pub fn schema(&self) -> SchemaRef {
        self.schema.clone()
    }

    /// Result columns: name and YT wire type, in output order.
    pub fn columns(&self) -> &[(String, ValueType)] {
        &self.columns
    }

    /// Execution statistics, once the iterator has ended without an error.
    pub fn statistics(&self) -> Option<Statistics> {
        self.statistics.clone()
    }

    /// Reads the batches not yet read into a [`SelectResult`] (none when the iterator has
    /// ended).
    ///
    /// # Errors
    /// The first error the query gives; the query failed before (the iterator gave its
    /// error).
    pub fn into_result(mut self) -> Result<SelectResult> {
        match self.stream.take() {
            Some(stream) => self.runtime.run(stream.into_result()),
            None if self.failed => Err(crate::Error::Invalid(
                "The query failed: the iterator gave its error, so it has no result".into(),
            )),
            None => Ok(SelectResult {
                columns: self.columns.clone(),
                rows: Vec::new(),
                statistics: self.statistics.clone().unwrap_or_default(),
            }),
        }
    }
}

impl Iterator for SelectBatches {
    type Item = Result<RecordBatch>;

    fn next(&mut self) -> Option<Result<RecordBatch>> {
        let stream = self.stream.as_mut()?;
        let item = match self.runtime.run(async { Ok(stream.next().await) }) {
            Ok(item) => item,
            Err(e) => Some(Err(e)),
        };
        match &item {
            Some(Ok(_)) => {}
            None => {
                self.statistics = stream.statistics();
                self.stream = None;
            }
            Some(Err(_)) => {
                self.failed = true;
                self.stream = None;
            }
        }
        item
    }
}
