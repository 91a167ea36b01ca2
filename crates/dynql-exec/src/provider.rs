//! DataFusion [`TableProvider`]s: [`StoreTable`] over a table of the store,
//! [`FileTableProvider`] over Parquet files read as a table.

use std::fmt;
use std::sync::{Arc, Mutex};

use async_trait::async_trait;
use datafusion::arrow::datatypes::SchemaRef;
use datafusion::catalog::Session;
use datafusion::datasource::memory::MemorySourceConfig;
use datafusion::datasource::{TableProvider, TableType};
use datafusion::error::{DataFusionError, Result as DfResult};
use datafusion::logical_expr::Expr;
use datafusion::physical_plan::ExecutionPlan;

use dynql_core::arrow_convert::table_arrow_schema;
use dynql_storage::files::FileTable;
use dynql_storage::{KeyRange, ScanStatistics, Store, TableEntry, Timestamp};

/// Batches grouped into one partition per tablet (at least one partition).
pub(crate) fn partitions_by_tablet(
    batches: Vec<(usize, datafusion::arrow::record_batch::RecordBatch)>,
) -> Vec<Vec<datafusion::arrow::record_batch::RecordBatch>> {
    let mut partitions: Vec<Vec<_>> = Vec::new();
    let mut current = None;
    for (tablet, b) in batches {
        if current != Some(tablet) {
            partitions.push(Vec::new());
            current = Some(tablet);
        }
        if let Some(p) = partitions.last_mut() {
            p.push(b);
        }
    }
    if partitions.is_empty() {
        partitions.push(Vec::new());
    }
    partitions
}

/// A dynamic table as a DataFusion table read at one timestamp: one partition per tablet, rows in key
/// order within each (sorted tables) or append order (ordered tables), compacted data passed through
/// column-wise ([`Store::scan_batches`]). With key ranges, the scan reads only the tablets,
/// chunks and row groups that meet them.
pub struct StoreTable {
    store: Store,
    path: String,
    entry: TableEntry,
    timestamp: Timestamp,
    schema: SchemaRef,
    ranges: Option<Vec<KeyRange>>,
    statistics: Arc<Mutex<ScanStatistics>>,
    /// Whether string columns are shown as UTF-8 text (see [`StoreTable::with_text_strings`]).
    text: bool,
}

impl StoreTable {
    /// A provider for `entry` (as read from `store`'s catalog), reading at `timestamp`.
    pub fn new(
        store: Store,
        path: impl Into<String>,
        entry: TableEntry,
        timestamp: Timestamp,
    ) -> StoreTable {
        let schema = table_arrow_schema(&entry.schema);
        StoreTable {
            store,
            path: path.into(),
            entry,
            timestamp,
            schema,
            ranges: None,
            statistics: Arc::default(),
            text: false,
        }
    }

    /// Shows `string`/`utf8` columns as UTF-8 text (`Utf8`) instead of bytes, for SQL's
    /// string functions; a value that is not valid UTF-8 then fails the scan.
    pub fn with_text_strings(mut self) -> StoreTable {
        self.schema = text_schema(&self.schema);
        self.text = true;
        self
    }

    /// Reads only keys in `ranges` (sorted tables).
    pub fn with_ranges(mut self, ranges: Vec<KeyRange>) -> StoreTable {
        self.ranges = Some(ranges);
        self
    }

    /// What the last scan read.
    pub fn statistics(&self) -> ScanStatistics {
        *self.statistics.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// The catalog entry the provider reads.
    pub fn entry(&self) -> &TableEntry {
        &self.entry
    }
}

impl fmt::Debug for StoreTable {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("StoreTable")
            .field("path", &self.path)
            .field("timestamp", &self.timestamp)
            .finish()
    }
}

#[async_trait]
impl TableProvider for StoreTable {
    fn schema(&self) -> SchemaRef {
        self.schema.clone()
    }

    fn table_type(&self) -> TableType {
        TableType::Base
    }

    async fn scan(
        &self,
        _state: &dyn Session,
        projection: Option<&Vec<usize>>,
        _filters: &[Expr],
        _limit: Option<usize>,
    ) -> DfResult<Arc<dyn ExecutionPlan>> {
        let (batches, statistics) = self
            .store
            .scan_batches_as(&self.path, self.ranges.as_deref(), self.timestamp, false)
            .await
            .map_err(|e| DataFusionError::External(Box::new(e)))?;
        *self.statistics.lock().unwrap_or_else(|p| p.into_inner()) = statistics;
        let batches = if self.text {
            batches
                .into_iter()
                .map(|(t, b)| Ok((t, cast_batch(&b, &self.schema, &self.path)?)))
                .collect::<DfResult<Vec<_>>>()?
        } else {
            batches
        };
        let partitions = partitions_by_tablet(batches);
        let exec = MemorySourceConfig::try_new_exec(
            &partitions,
            self.schema.clone(),
            projection.cloned(),
        )?;
        Ok(exec)
    }
}

/// Parquet files as a DataFusion table (see [`FileTable`]): columns as the table's schema
/// types them (strings as `Binary`), one partition.
pub struct FileTableProvider {
    table: FileTable,
    schema: SchemaRef,
}

impl FileTableProvider {
    /// A provider over opened files; `string`/`utf8` columns are UTF-8 text (`Utf8`), as
    /// with [`StoreTable::with_text_strings`].
    pub fn new(table: FileTable) -> FileTableProvider {
        let schema = text_schema(&table_arrow_schema(table.schema()));
        FileTableProvider { table, schema }
    }
}

impl fmt::Debug for FileTableProvider {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("FileTableProvider")
            .field("location", &self.table.location())
            .finish()
    }
}

#[async_trait]
impl TableProvider for FileTableProvider {
    fn schema(&self) -> SchemaRef {
        self.schema.clone()
    }

    fn table_type(&self) -> TableType {
        TableType::Base
    }

    async fn scan(
        &self,
        _state: &dyn Session,
        projection: Option<&Vec<usize>>,
        _filters: &[Expr],
        _limit: Option<usize>,
    ) -> DfResult<Arc<dyn ExecutionPlan>> {
        // Only the projected columns are read from the files.
        let batches = self
            .table
            .scan_columns(projection.map(|p| p.as_slice()))
            .await
            .map_err(|e| DataFusionError::External(Box::new(e)))?;
        let schema = match projection {
            Some(p) => Arc::new(self.schema.project(p)?),
            None => self.schema.clone(),
        };
        let batches = batches
            .iter()
            .map(|b| cast_batch(b, &schema, self.table.location()))
            .collect::<DfResult<Vec<_>>>()?;
        let exec = MemorySourceConfig::try_new_exec(&[batches], schema, None)?;
        Ok(exec)
    }
}

/// `schema` with the fields of YT type `string` or `utf8` as `Utf8` (`any` stays bytes).
fn text_schema(schema: &SchemaRef) -> SchemaRef {
    use datafusion::arrow::datatypes::{DataType, Field, Schema};
    let fields: Vec<Field> = schema
        .fields()
        .iter()
        .map(|f| {
            let yt = f.metadata().get(dynql_core::arrow_convert::YT_TYPE_KEY);
            let text = matches!(yt.map(String::as_str), Some("string" | "utf8"));
            if text && f.data_type() == &DataType::Binary {
                Field::clone(f).with_data_type(DataType::Utf8)
            } else {
                Field::clone(f)
            }
        })
        .collect();
    Arc::new(Schema::new_with_metadata(fields, schema.metadata().clone()))
}

/// `batch` cast to `schema` (bytes to text): a value that is not UTF-8 is an error naming
/// the column and the table.
fn cast_batch(
    batch: &datafusion::arrow::record_batch::RecordBatch,
    schema: &SchemaRef,
    table: &str,
) -> DfResult<datafusion::arrow::record_batch::RecordBatch> {
    use datafusion::arrow::compute::{cast_with_options, CastOptions};
    let options = CastOptions {
        safe: false,
        ..CastOptions::default()
    };
    let columns = batch
        .columns()
        .iter()
        .zip(schema.fields())
        .map(|(c, f)| {
            if c.data_type() == f.data_type() {
                return Ok(c.clone());
            }
            cast_with_options(c, f.data_type(), &options).map_err(|e| {
                DataFusionError::Execution(format!(
                    "column {} of {table} holds a value that is not UTF-8 text ({e}); SQL reads string columns as text, YT QL (select-rows) reads them as bytes",
                    f.name()
                ))
            })
        })
        .collect::<DfResult<Vec<_>>>()?;
    Ok(
        datafusion::arrow::record_batch::RecordBatch::try_new_with_options(
            schema.clone(),
            columns,
            &datafusion::arrow::record_batch::RecordBatchOptions::new()
                .with_row_count(Some(batch.num_rows())),
        )?,
    )
}
