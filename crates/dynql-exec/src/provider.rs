//! DataFusion [`TableProvider`]s: [`StoreTable`] over a table of the store,
//! [`FileTableProvider`] over Parquet files read as a table.

use std::fmt;
use std::sync::Arc;

use async_trait::async_trait;
use datafusion::arrow::datatypes::SchemaRef;
use datafusion::catalog::Session;
use datafusion::common::DFSchema;
use datafusion::datasource::{TableProvider, TableType};
use datafusion::error::{DataFusionError, Result as DfResult};
use datafusion::logical_expr::{Expr, TableProviderFilterPushDown};
use datafusion::physical_plan::ExecutionPlan;

use dynql_core::arrow_convert::table_arrow_schema;
use dynql_storage::files::FileTable;
use dynql_storage::{ScanStatistics, Snapshot, TableEntry, Timestamp};

use crate::vectorized::row_group_pruning::PushedFilters;
use crate::vectorized::scan_reads::{streamed, InputLimit, ScanReads};
use crate::vectorized::table_scan::{projected, ScanSource, TabletScanExec};

/// A dynamic table as a DataFusion table, read at one timestamp from one pinned
/// [`Snapshot`]: the scan (`TabletScanExec`) streams the tablets, one partition each, a few
/// batches at a time, and reads only the tablets, chunks and row groups that meet the key
/// ranges the pushed-down filters fix (through YT QL's range inference, computed key
/// columns included).
/// Filters stay above the scan: the ranges only decide what is read.
pub struct StoreTable {
    snapshot: Snapshot,
    path: String,
    entry: TableEntry,
    timestamp: Timestamp,
    schema: SchemaRef,
    read: Arc<InputLimit>,
    reads: ScanReads,
}

impl StoreTable {
    /// A provider for the table at `path` of `snapshot` (its catalog entry `entry`), reading
    /// at `timestamp`. Byte strings are `BinaryView`; `date`, `datetime`, `timestamp` and
    /// `interval` columns are Arrow's `Date32`, `Timestamp(Second, UTC)`,
    /// `Timestamp(Microsecond, UTC)` and `Duration(Microsecond)` (YT's units: days, seconds
    /// and microseconds since the epoch, microseconds).
    pub fn new(
        snapshot: Snapshot,
        path: impl Into<String>,
        entry: TableEntry,
        timestamp: Timestamp,
    ) -> StoreTable {
        let schema = temporal_schema(&string_schema(&table_arrow_schema(&entry.schema), false));
        StoreTable {
            snapshot,
            path: path.into(),
            entry,
            timestamp,
            schema,
            read: Arc::new(InputLimit::new(u64::MAX, false)),
            reads: ScanReads::default(),
        }
    }

    /// Shows `string`/`utf8` columns as UTF-8 text (`Utf8View`) instead of bytes, for SQL's
    /// string functions; a value that is not valid UTF-8 then fails the scan.
    pub fn with_text_strings(mut self) -> StoreTable {
        self.schema = string_schema(&self.schema, true);
        self
    }

    /// What the scans of this table read, once the plan that reads it has run (or been
    /// dropped): waits for its streams' reading tasks to end.
    pub async fn statistics(&self) -> ScanStatistics {
        streamed(&self.reads, self.read.read()).await
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

    fn supports_filters_pushdown(
        &self,
        filters: &[&Expr],
    ) -> DfResult<Vec<TableProviderFilterPushDown>> {
        Ok(vec![TableProviderFilterPushDown::Inexact; filters.len()])
    }

    async fn scan(
        &self,
        state: &dyn Session,
        projection: Option<&Vec<usize>>,
        filters: &[Expr],
        _limit: Option<usize>,
    ) -> DfResult<Arc<dyn ExecutionPlan>> {
        let ranges = crate::pushdown::key_ranges(filters, &self.entry.schema);
        let scan = self
            .snapshot
            .plan_table_scan(&self.path, Some(&ranges), self.timestamp)
            .map_err(|e| DataFusionError::External(Box::new(e)))?;
        // Ordered tables lead the scanned rows with `$tablet_index`, `$row_index`.
        let offset =
            self.entry.schema.query_schema().columns().len() - self.entry.schema.columns().len();
        let (projection, schema) = projected(&self.schema, projection)?;
        let columns = projection.iter().map(|i| i + offset).collect();
        let mut exec = TabletScanExec::new(
            ScanSource::Tablets(scan),
            false,
            state.config().target_partitions(),
            columns,
            schema,
            self.read.clone(),
            self.reads.clone(),
        );
        // Filters on any column skip the clean row groups their statistics rule out (the
        // key's ranges are cut above); the filters still run on the rows read.
        if offset == 0 && !filters.is_empty() {
            let table = DFSchema::try_from(self.schema.as_ref().clone())?;
            let physical = filters
                .iter()
                .map(|f| state.create_physical_expr(f.clone(), &table))
                .collect::<DfResult<Vec<_>>>()?;
            let columns = (0..self.schema.fields().len()).collect();
            exec = exec.with_row_group_filter(Arc::new(PushedFilters::new(physical, columns)));
        }
        Ok(Arc::new(exec))
    }
}

/// Parquet files as a DataFusion table (see [`FileTable`]): streamed in key order, one
/// partition, through the same scan as dynamic tables (`TabletScanExec`), reading only the
/// row groups and pages that meet the key ranges the pushed-down filters fix (for files with
/// key columns). `string`/`utf8` columns are UTF-8 text (`Utf8View`), as with
/// [`StoreTable::with_text_strings`].
pub struct FileTableProvider {
    table: Arc<FileTable>,
    schema: SchemaRef,
    read: Arc<InputLimit>,
    reads: ScanReads,
}

impl FileTableProvider {
    /// A provider over opened files.
    pub fn new(table: FileTable) -> FileTableProvider {
        let schema = string_schema(&table_arrow_schema(table.schema()), true);
        FileTableProvider {
            table: Arc::new(table),
            schema,
            read: Arc::new(InputLimit::new(u64::MAX, false)),
            reads: ScanReads::default(),
        }
    }

    /// What the scans of this table read, once the plan that reads it has run (or been
    /// dropped).
    pub async fn statistics(&self) -> ScanStatistics {
        streamed(&self.reads, self.read.read()).await
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

    fn supports_filters_pushdown(
        &self,
        filters: &[&Expr],
    ) -> DfResult<Vec<TableProviderFilterPushDown>> {
        Ok(vec![TableProviderFilterPushDown::Inexact; filters.len()])
    }

    async fn scan(
        &self,
        _state: &dyn Session,
        projection: Option<&Vec<usize>>,
        filters: &[Expr],
        _limit: Option<usize>,
    ) -> DfResult<Arc<dyn ExecutionPlan>> {
        let ranges = crate::pushdown::key_ranges(filters, self.table.schema());
        let (projection, schema) = projected(&self.schema, projection)?;
        Ok(Arc::new(TabletScanExec::new(
            ScanSource::Files {
                table: self.table.clone(),
                ranges,
            },
            true,
            1,
            projection,
            schema,
            self.read.clone(),
            self.reads.clone(),
        )))
    }
}

/// `schema` with the fields of YT type `string` or `utf8` as `Utf8View` when `text`, and
/// byte strings (`any`, and strings when not `text`) as `BinaryView`.
/// The SQL type of a column of YT's temporal type `yt_type` (see [`StoreTable::new`]), if it
/// is one.
pub(crate) fn temporal_type(yt_type: &str) -> Option<datafusion::arrow::datatypes::DataType> {
    use datafusion::arrow::datatypes::{DataType, TimeUnit};
    Some(match yt_type {
        "date" => DataType::Date32,
        "datetime" => DataType::Timestamp(TimeUnit::Second, Some("UTC".into())),
        "timestamp" => DataType::Timestamp(TimeUnit::Microsecond, Some("UTC".into())),
        "interval" => DataType::Duration(TimeUnit::Microsecond),
        _ => return None,
    })
}

/// `schema` with YT's temporal columns typed as SQL's dates, timestamps and durations (the
/// scan casts the stored integers: [`crate::vectorized::scan_output::project`]).
fn temporal_schema(schema: &SchemaRef) -> SchemaRef {
    use datafusion::arrow::datatypes::{Field, Schema};
    let fields: Vec<Field> = schema
        .fields()
        .iter()
        .map(|f| {
            let yt = f.metadata().get(dynql_core::arrow_convert::YT_TYPE_KEY);
            match yt.and_then(|t| temporal_type(t)) {
                Some(t) => Field::clone(f).with_data_type(t),
                None => Field::clone(f),
            }
        })
        .collect();
    Arc::new(Schema::new_with_metadata(fields, schema.metadata().clone()))
}

fn string_schema(schema: &SchemaRef, text: bool) -> SchemaRef {
    use datafusion::arrow::datatypes::{DataType, Field, Schema};
    let fields: Vec<Field> = schema
        .fields()
        .iter()
        .map(|f| {
            let yt = f.metadata().get(dynql_core::arrow_convert::YT_TYPE_KEY);
            let string = matches!(yt.map(String::as_str), Some("string" | "utf8"));
            let bytes = matches!(f.data_type(), DataType::Binary | DataType::BinaryView);
            match () {
                _ if bytes && string && text => Field::clone(f).with_data_type(DataType::Utf8View),
                _ if bytes => Field::clone(f).with_data_type(DataType::BinaryView),
                _ => Field::clone(f),
            }
        })
        .collect();
    Arc::new(Schema::new_with_metadata(fields, schema.metadata().clone()))
}
