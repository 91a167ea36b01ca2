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
        }
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
    /// A provider over opened files.
    pub fn new(table: FileTable) -> FileTableProvider {
        let schema = table_arrow_schema(table.schema());
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
        let exec = MemorySourceConfig::try_new_exec(&[batches], schema, None)?;
        Ok(exec)
    }
}
