//! [`StoreTable`]: a DataFusion [`TableProvider`] over a table of the store.

use std::fmt;
use std::sync::Arc;

use async_trait::async_trait;
use datafusion::arrow::datatypes::SchemaRef;
use datafusion::catalog::Session;
use datafusion::datasource::memory::MemorySourceConfig;
use datafusion::datasource::{TableProvider, TableType};
use datafusion::error::{DataFusionError, Result as DfResult};
use datafusion::logical_expr::Expr;
use datafusion::physical_plan::ExecutionPlan;

use dynql_core::arrow_convert::table_arrow_schema;
use dynql_storage::{Store, TableEntry, Timestamp};

/// A dynamic table as a DataFusion table read at one timestamp: one partition, rows in key
/// order (sorted tables) or append order (ordered tables).
pub struct StoreTable {
    store: Store,
    path: String,
    entry: TableEntry,
    timestamp: Timestamp,
    schema: SchemaRef,
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
        }
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
        let batches = self
            .store
            .read_table(&self.path, self.timestamp)
            .await
            .map_err(|e| DataFusionError::External(Box::new(e)))?;
        let exec =
            MemorySourceConfig::try_new_exec(&[batches], self.schema.clone(), projection.cloned())?;
        Ok(exec)
    }
}
