//! The tables a query reads: dynamic tables of the store, and Parquet files
//! ([`FileTable`]) named by `[file:LOCATION]` or by a `--table NAME=LOCATION` mapping.

use std::collections::BTreeMap;
use std::sync::Arc;

use dynql_core::TableSchema;
use dynql_ql::Catalog;
use dynql_storage::files::FileTable;
use dynql_storage::{KeyRange, ScanStatistics, Snapshot, Store, TableEntry, Timestamp};

use crate::error::{Error, Result};

/// The prefix of a table path that names Parquet files directly: `[file:./dump/*.parquet]`.
pub const FILE_PREFIX: &str = "file:";

/// Parquet files a query may read besides the store's tables.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct FileTables {
    /// Table names mapped to file locations (`--table //logs=./exports/*.parquet`).
    pub tables: Vec<(String, String)>,
    /// Key columns for file tables whose files declare none, or to override what they
    /// declare: for the table of that name (a mapping's name or `file:LOCATION`), or for
    /// every file table (`None`).
    pub keys: Vec<(Option<String>, Vec<String>)>,
}

impl FileTables {
    /// The location of `path` when it names files: a mapping, or `file:LOCATION`.
    pub(crate) fn location<'a>(&'a self, path: &'a str) -> Option<&'a str> {
        self.tables
            .iter()
            .find(|(name, _)| name == path)
            .map(|(_, location)| location.as_str())
            .or_else(|| path.strip_prefix(FILE_PREFIX))
    }

    /// The key given for the file table `path`, if any.
    pub(crate) fn key(&self, path: &str) -> Option<&[String]> {
        self.keys
            .iter()
            .find(|(name, _)| name.as_deref() == Some(path))
            .or_else(|| self.keys.iter().find(|(name, _)| name.is_none()))
            .map(|(_, key)| key.as_slice())
    }
}

/// The tables of one query, with their schemas, and the store snapshot they were read
/// from (the vectorised pipeline reads every dynamic table from it).
pub(crate) struct Tables {
    pub(crate) snapshot: Snapshot,
    pub(crate) store: BTreeMap<String, TableEntry>,
    pub(crate) files: BTreeMap<String, Arc<FileTable>>,
}

impl Tables {
    /// The store's tables and the file tables among `paths` (opened: listed, footers read).
    pub(crate) async fn load(
        store: &Store,
        paths: &[String],
        files: &FileTables,
    ) -> Result<Tables> {
        let snapshot = store.snapshot().await?;
        let tables = snapshot.tables();
        let mut opened = BTreeMap::new();
        for path in paths {
            if opened.contains_key(path) {
                continue;
            }
            let Some(location) = files.location(path) else {
                continue;
            };
            if tables.contains_key(path) {
                return Err(Error::Storage(dynql_storage::Error::Invalid(format!(
                    "{path} names both a dynamic table and Parquet files ({location}); map the files to another name"
                ))));
            }
            let table = FileTable::open(location, files.key(path)).await?;
            opened.insert(path.clone(), Arc::new(table));
        }
        Ok(Tables {
            snapshot,
            store: tables,
            files: opened,
        })
    }

    /// How to read the table at `path`.
    pub(crate) fn source<'a>(&'a self, store: &'a Store, path: &'a str) -> Result<Source<'a>> {
        if let Some(f) = self.files.get(path) {
            return Ok(Source::Files(f));
        }
        if self.store.contains_key(path) {
            return Ok(Source::Store { store, path });
        }
        Err(Error::Storage(dynql_storage::Error::NoSuchTable {
            path: path.into(),
        }))
    }
}

impl Catalog for Tables {
    fn table_schema(&self, path: &str) -> Option<TableSchema> {
        if let Some(f) = self.files.get(path) {
            return Some(f.schema().clone());
        }
        // Ordered tables are queried through their virtual key ($tablet_index, $row_index).
        self.store.get(path).map(|e| e.schema.query_schema())
    }

    fn refused_columns(&self, path: &str) -> Vec<(String, String)> {
        self.files
            .get(path)
            .map(|f| f.refused_columns().to_vec())
            .unwrap_or_default()
    }
}

/// A table to read: a dynamic table at a timestamp, or Parquet files.
pub(crate) enum Source<'a> {
    Store { store: &'a Store, path: &'a str },
    Files(&'a FileTable),
}

impl Source<'_> {
    /// What a scan of `ranges` would read, without reading it.
    pub(crate) async fn explain(
        &self,
        ranges: Option<&[KeyRange]>,
        timestamp: Timestamp,
    ) -> Result<ScanStatistics> {
        match self {
            Source::Store { store, path } => {
                Ok(store.explain_scan(path, ranges, timestamp).await?)
            }
            Source::Files(f) => Ok(f.explain(ranges)),
        }
    }
}
