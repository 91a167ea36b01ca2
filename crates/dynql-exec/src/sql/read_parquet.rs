//! `read_parquet('dump/*.parquet')`, DuckDB's table function, over dynql's file tables.
//!
//! DataFusion calls table functions while it plans, synchronously, and opening files (listing
//! them, reading their footers) is asynchronous. So planning is tried, and each location the
//! function is asked for and has not opened is noted and makes planning fail; the session
//! opens the noted locations and plans again. Each attempt opens at least one new location,
//! so a statement plans at most once more than it names locations.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use datafusion::catalog::{TableFunctionArgs, TableFunctionImpl, TableProvider};
use datafusion::common::{plan_err, DataFusionError, ScalarValue};
use datafusion::logical_expr::Expr;

use crate::provider::FileTableProvider;

/// The SQL name of the function.
pub(super) const NAME: &str = "read_parquet";

/// The files of one statement's `read_parquet` calls, by location.
#[derive(Debug, Default)]
pub(super) struct ReadParquet {
    opened: Mutex<HashMap<String, Arc<FileTableProvider>>>,
    /// Locations asked for while planning and not opened yet.
    wanted: Mutex<Vec<String>>,
}

impl ReadParquet {
    /// The locations planning asked for that are not opened, emptied.
    pub(super) fn take_wanted(&self) -> Vec<String> {
        std::mem::take(&mut *self.wanted.lock().unwrap_or_else(|e| e.into_inner()))
    }

    /// Makes `location` available to the next planning.
    pub(super) fn insert(&self, location: String, table: Arc<FileTableProvider>) {
        self.opened
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .insert(location, table);
    }

    /// Forgets every opened location (files are listed afresh by each statement) and returns
    /// the tables that were opened.
    pub(super) fn clear(&self) -> Vec<Arc<FileTableProvider>> {
        self.take_wanted();
        let mut opened = self.opened.lock().unwrap_or_else(|e| e.into_inner());
        opened.drain().map(|(_, t)| t).collect()
    }
}

impl TableFunctionImpl for ReadParquet {
    fn call_with_args(
        &self,
        args: TableFunctionArgs,
    ) -> datafusion::error::Result<Arc<dyn TableProvider>> {
        let location = match args.exprs() {
            [Expr::Literal(
                ScalarValue::Utf8(Some(s))
                | ScalarValue::LargeUtf8(Some(s))
                | ScalarValue::Utf8View(Some(s)),
                _,
            )] => s,
            _ => {
                return plan_err!(
                    "{NAME} takes one location, a string: {NAME}('dump/*.parquet') (a path, glob, directory, file:// or s3:// URL)"
                )
            }
        };
        if let Some(table) = self
            .opened
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .get(location)
        {
            return Ok(table.clone());
        }
        self.wanted
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .push(location.clone());
        // Never seen by users: the session opens the location and plans again.
        Err(DataFusionError::Plan(format!(
            "{NAME}: {location} is not opened yet"
        )))
    }
}
