//! The store: tables on an object store (`file://DIR`, `memory://`), a JSON catalog naming
//! each table's schema, attributes and chunks.
//!
//! ```text
//! <root>/catalog.json                         tables by path: schema, attributes, chunk list
//! <root>/tables/<table-id>/<chunk-id>.parquet immutable chunks
//! ```
//!
//! A write encodes a new chunk first and then replaces `catalog.json` (a local-file put is a
//! rename, so readers see the old or the new catalog, never a mix); chunks the new catalog no
//! longer names are deleted afterwards. This first storage rewrites a sorted table's rows into
//! one chunk per write; the versioned commit log of DESIGN.md replaces it.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU64, Ordering as AtomicOrdering};
use std::sync::Arc;

use arrow::record_batch::RecordBatch;
use object_store::local::LocalFileSystem;
use object_store::memory::InMemory;
use object_store::path::Path as ObjectPath;
use object_store::{ObjectStore, ObjectStoreExt, PutPayload};
use serde::{Deserialize, Serialize};

use dynql_core::arrow_convert::{batch_to_rows, rows_to_batch, table_arrow_schema};
use dynql_core::{compare_rows, TableSchema, Value, Yson};

use crate::chunk::{decode_chunk, encode_chunk};
use crate::error::{Error, Result};

const CATALOG: &str = "catalog.json";

/// Attributes given when a table is created, beyond its schema.
#[derive(Debug, Clone, Default)]
pub struct TableOptions {
    /// Number of tablets (`tablet_count`).
    pub tablet_count: Option<usize>,
    /// Pivot keys (`pivot_keys`), first one empty.
    pub pivot_keys: Option<Vec<Vec<Value>>>,
}

/// A reference to one chunk.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct ChunkRef {
    pub path: String,
    pub row_count: u64,
}

/// What the catalog records of a table.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct TableEntry {
    pub id: String,
    pub schema: TableSchema,
    pub tablet_count: usize,
    /// Pivot keys as text YSON lists, one per tablet (sorted tables).
    #[serde(default)]
    pub pivot_keys: Vec<String>,
    pub chunks: Vec<ChunkRef>,
    pub row_count: u64,
}

#[derive(Debug, Default, Serialize, Deserialize)]
struct Catalog {
    tables: BTreeMap<String, TableEntry>,
}

/// A dynql store on an object store.
#[derive(Clone)]
pub struct Store {
    objects: Arc<dyn ObjectStore>,
    url: String,
}

static NEXT_ID: AtomicU64 = AtomicU64::new(0);

fn fresh_id() -> String {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_nanos())
        .unwrap_or(0);
    format!(
        "{nanos:x}-{:x}-{:x}",
        std::process::id(),
        NEXT_ID.fetch_add(1, AtomicOrdering::Relaxed)
    )
}

/// Checks a Cypress-style table path (`//a/b`).
pub fn validate_path(path: &str) -> Result<()> {
    if !path.starts_with("//")
        || path.len() < 3
        || path.ends_with('/')
        || path[2..].split('/').any(str::is_empty)
    {
        return Err(Error::Invalid(format!(
            "Invalid path {path:?}: expected an absolute path such as //home/user/table"
        )));
    }
    Ok(())
}

impl Store {
    /// Opens the store at `url`: `file://DIR` (created if missing) or `memory://`.
    ///
    /// # Errors
    /// [`Error::InvalidUrl`] for other schemes or an unusable directory.
    pub fn open(url: &str) -> Result<Store> {
        let bad = |m: &str| Error::InvalidUrl {
            url: url.to_string(),
            message: m.to_string(),
        };
        let objects: Arc<dyn ObjectStore> = if let Some(dir) = url.strip_prefix("file://") {
            if dir.is_empty() {
                return Err(bad("file:// needs a directory, e.g. file://./dynql-data"));
            }
            std::fs::create_dir_all(dir)
                .map_err(|e| bad(&format!("cannot create directory: {e}")))?;
            Arc::new(LocalFileSystem::new_with_prefix(dir).map_err(|e| bad(&e.to_string()))?)
        } else if url == "memory://" || url.starts_with("memory://") {
            Arc::new(InMemory::new())
        } else if url.contains("://") {
            return Err(bad("supported schemes are file:// and memory:// (s3:// comes with the durable storage)"));
        } else {
            // A bare directory.
            std::fs::create_dir_all(url)
                .map_err(|e| bad(&format!("cannot create directory: {e}")))?;
            Arc::new(LocalFileSystem::new_with_prefix(url).map_err(|e| bad(&e.to_string()))?)
        };
        Ok(Store {
            objects,
            url: url.to_string(),
        })
    }

    /// The URL the store was opened with.
    pub fn url(&self) -> &str {
        &self.url
    }

    async fn load_catalog(&self) -> Result<Catalog> {
        match self.objects.get(&ObjectPath::from(CATALOG)).await {
            Ok(r) => {
                let bytes = r.bytes().await?;
                serde_json::from_slice(&bytes).map_err(|e| Error::Corrupt {
                    path: CATALOG.into(),
                    message: e.to_string(),
                })
            }
            Err(object_store::Error::NotFound { .. }) => Ok(Catalog::default()),
            Err(e) => Err(e.into()),
        }
    }

    async fn save_catalog(&self, catalog: &Catalog) -> Result<()> {
        let bytes =
            serde_json::to_vec_pretty(catalog).map_err(|e| Error::Invalid(e.to_string()))?;
        self.objects
            .put(&ObjectPath::from(CATALOG), PutPayload::from(bytes))
            .await?;
        Ok(())
    }

    /// The catalog entry of a table.
    pub async fn table(&self, path: &str) -> Result<TableEntry> {
        self.load_catalog()
            .await?
            .tables
            .get(path)
            .cloned()
            .ok_or_else(|| Error::NoSuchTable { path: path.into() })
    }

    /// All table entries by path.
    pub async fn tables(&self) -> Result<BTreeMap<String, TableEntry>> {
        Ok(self.load_catalog().await?.tables)
    }

    /// Creates a table.
    ///
    /// # Errors
    /// A bad path, an existing node, or invalid `tablet_count`/`pivot_keys`.
    pub async fn create_table(
        &self,
        path: &str,
        schema: TableSchema,
        options: TableOptions,
    ) -> Result<()> {
        validate_path(path)?;
        let mut catalog = self.load_catalog().await?;
        if catalog.tables.contains_key(path) {
            return Err(Error::AlreadyExists { path: path.into() });
        }
        if let Some(prefix) = catalog
            .tables
            .keys()
            .find(|p| path.starts_with(&format!("{p}/")))
        {
            return Err(Error::Invalid(format!(
                "Cannot create {path}: {prefix} is a table, not a directory"
            )));
        }
        let (tablet_count, pivot_keys) = validate_tablets(&schema, &options)?;
        catalog.tables.insert(
            path.to_string(),
            TableEntry {
                id: fresh_id(),
                schema,
                tablet_count,
                pivot_keys,
                chunks: vec![],
                row_count: 0,
            },
        );
        self.save_catalog(&catalog).await
    }

    /// Removes a table and its chunks.
    pub async fn remove_table(&self, path: &str) -> Result<()> {
        let mut catalog = self.load_catalog().await?;
        let entry = catalog
            .tables
            .remove(path)
            .ok_or_else(|| Error::NoSuchTable { path: path.into() })?;
        self.save_catalog(&catalog).await?;
        self.delete_chunks(&entry.chunks).await;
        Ok(())
    }

    async fn delete_chunks(&self, chunks: &[ChunkRef]) {
        for c in chunks {
            // Unreferenced chunks are garbage; failing to delete one loses nothing.
            let _ = self
                .objects
                .delete(&ObjectPath::from(c.path.as_str()))
                .await;
        }
    }

    /// Reads every row of a table as record batches in its arrow schema (key order for
    /// sorted tables, insertion order for ordered ones).
    pub async fn read_table(&self, entry: &TableEntry) -> Result<Vec<RecordBatch>> {
        let mut out = Vec::new();
        for c in &entry.chunks {
            let bytes = self
                .objects
                .get(&ObjectPath::from(c.path.as_str()))
                .await?
                .bytes()
                .await?;
            out.extend(decode_chunk(&c.path, bytes)?);
        }
        Ok(out)
    }

    async fn read_rows(&self, entry: &TableEntry) -> Result<Vec<Vec<Value>>> {
        let types: Vec<_> = entry
            .schema
            .columns()
            .iter()
            .map(|c| c.wire_type())
            .collect();
        let mut rows = Vec::new();
        for b in self.read_table(entry).await? {
            rows.extend(batch_to_rows(&b, &types));
        }
        Ok(rows)
    }

    /// Applies upserts (full rows in schema order) and deletes (key prefixes) to a table.
    ///
    /// Sorted tables: a row replaces the row with the same key; later rows of one call win.
    /// Ordered tables: rows are appended; deletes are refused.
    pub async fn write_rows(
        &self,
        path: &str,
        upserts: Vec<Vec<Value>>,
        deletes: Vec<Vec<Value>>,
    ) -> Result<()> {
        let mut catalog = self.load_catalog().await?;
        let entry = catalog
            .tables
            .get(path)
            .cloned()
            .ok_or_else(|| Error::NoSuchTable { path: path.into() })?;
        let schema = &entry.schema;
        let width = schema.columns().len();
        if upserts.iter().any(|r| r.len() != width) {
            return Err(Error::Invalid(format!(
                "rows for {path} must have {width} values"
            )));
        }
        let arrow_schema = table_arrow_schema(schema);
        let key_count = schema.key_column_count();
        let (new_chunks, old_chunks, row_count) = if key_count == 0 {
            if !deletes.is_empty() {
                return Err(Error::Invalid(format!(
                    "delete_rows is not supported for ordered table {path}: ordered tables are queues (use trim_rows)"
                )));
            }
            if upserts.is_empty() {
                return Ok(());
            }
            let batch = rows_to_batch(&arrow_schema, &upserts)?;
            let chunk = self
                .put_chunk(&entry, &arrow_schema, &[batch], upserts.len())
                .await?;
            let mut chunks = entry.chunks.clone();
            chunks.push(chunk);
            (chunks, vec![], entry.row_count + upserts.len() as u64)
        } else {
            let mut rows: BTreeMap<KeyOrd, Vec<Value>> = BTreeMap::new();
            for r in self.read_rows(&entry).await? {
                rows.insert(KeyOrd(r[..key_count].to_vec()), r);
            }
            // Writes apply in request order: deletes after upserts of the same call would be
            // surprising, so YT's rule (one request = one kind) is kept by the callers.
            for r in upserts {
                rows.insert(KeyOrd(r[..key_count].to_vec()), r);
            }
            for k in deletes {
                rows.remove(&KeyOrd(k));
            }
            let all: Vec<Vec<Value>> = rows.into_values().collect();
            let mut chunks = Vec::new();
            if !all.is_empty() {
                let batches = all
                    .chunks(64 * 1024)
                    .map(|part| rows_to_batch(&arrow_schema, part))
                    .collect::<std::result::Result<Vec<_>, _>>()?;
                chunks.push(
                    self.put_chunk(&entry, &arrow_schema, &batches, all.len())
                        .await?,
                );
            }
            (chunks, entry.chunks.clone(), all.len() as u64)
        };
        let e = catalog
            .tables
            .get_mut(path)
            .ok_or_else(|| Error::NoSuchTable { path: path.into() })?;
        e.chunks = new_chunks;
        e.row_count = row_count;
        self.save_catalog(&catalog).await?;
        self.delete_chunks(&old_chunks).await;
        Ok(())
    }

    async fn put_chunk(
        &self,
        entry: &TableEntry,
        schema: &arrow::datatypes::SchemaRef,
        batches: &[RecordBatch],
        rows: usize,
    ) -> Result<ChunkRef> {
        let data = encode_chunk(schema, batches)?;
        let path = format!("tables/{}/{}.parquet", entry.id, fresh_id());
        self.objects
            .put(&ObjectPath::from(path.as_str()), PutPayload::from(data))
            .await?;
        Ok(ChunkRef {
            path,
            row_count: rows as u64,
        })
    }
}

/// A key in YT order, for the in-memory merge of a write.
#[derive(Debug, Clone, PartialEq, Eq)]
struct KeyOrd(Vec<Value>);

impl PartialOrd for KeyOrd {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for KeyOrd {
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        compare_rows(&self.0, &other.0)
    }
}

/// Validates `tablet_count`/`pivot_keys` and returns the tablet count and pivot keys as text.
fn validate_tablets(schema: &TableSchema, options: &TableOptions) -> Result<(usize, Vec<String>)> {
    let key_count = schema.key_column_count();
    match (&options.pivot_keys, options.tablet_count) {
        (Some(pivots), Some(n)) if pivots.len() != n => Err(Error::Invalid(format!(
            "\"tablet_count\" ({n}) does not match the number of \"pivot_keys\" ({})",
            pivots.len()
        ))),
        (Some(pivots), _) => {
            if key_count == 0 {
                return Err(Error::Invalid(
                    "\"pivot_keys\" can only be set for sorted tables".into(),
                ));
            }
            if pivots.first().map(|p| !p.is_empty()).unwrap_or(true) {
                return Err(Error::Invalid(
                    "The first pivot key must be empty ([])".into(),
                ));
            }
            for (i, p) in pivots.iter().enumerate() {
                if p.len() > key_count {
                    return Err(Error::Invalid(format!(
                        "Pivot key #{i} has {} values but the table has {key_count} key columns",
                        p.len()
                    )));
                }
                for (v, c) in p.iter().zip(schema.key_columns()) {
                    if !v.is_null() && v.value_type() != c.wire_type() {
                        return Err(Error::Invalid(format!(
                            "Pivot key #{i}: value {v} does not match type {} of key column {:?}",
                            c.wire_type(),
                            c.name
                        )));
                    }
                }
                if i > 0 && compare_rows(&pivots[i - 1], p) != std::cmp::Ordering::Less {
                    return Err(Error::Invalid(format!(
                        "Pivot keys must be strictly increasing: #{} >= #{i}",
                        i - 1
                    )));
                }
            }
            let text = pivots
                .iter()
                .map(|p| {
                    dynql_core::yson::to_text(&Yson::List(p.iter().map(Value::to_yson).collect()))
                })
                .collect();
            Ok((pivots.len(), text))
        }
        (None, Some(n)) => {
            if n == 0 {
                return Err(Error::Invalid("\"tablet_count\" must be positive".into()));
            }
            Ok((n, vec![]))
        }
        (None, None) => Ok((
            1,
            if key_count > 0 {
                vec!["[]".into()]
            } else {
                vec![]
            },
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn schema() -> TableSchema {
        TableSchema::parse("[{name=k;type=int64;sort_order=ascending};{name=v;type=string}]")
            .unwrap()
    }

    fn row(k: i64, v: &str) -> Vec<Value> {
        vec![Value::Int64(k), Value::string(v)]
    }

    #[tokio::test]
    async fn upserts_replace_by_key_and_deletes_remove() {
        let store = Store::open("memory://").unwrap();
        store
            .create_table("//t", schema(), TableOptions::default())
            .await
            .unwrap();
        store
            .write_rows("//t", vec![row(2, "b"), row(1, "a")], vec![])
            .await
            .unwrap();
        store
            .write_rows("//t", vec![row(2, "B")], vec![vec![Value::Int64(1)]])
            .await
            .unwrap();
        let entry = store.table("//t").await.unwrap();
        assert_eq!(store.read_rows(&entry).await.unwrap(), vec![row(2, "B")]);
        assert_eq!(entry.row_count, 1);
    }

    #[tokio::test]
    async fn persists_across_reopen_of_a_directory() {
        let dir = tempfile::tempdir().unwrap();
        let url = format!("file://{}", dir.path().display());
        let store = Store::open(&url).unwrap();
        store
            .create_table("//a/t", schema(), TableOptions::default())
            .await
            .unwrap();
        store
            .write_rows("//a/t", vec![row(1, "x")], vec![])
            .await
            .unwrap();
        let again = Store::open(&url).unwrap();
        let entry = again.table("//a/t").await.unwrap();
        assert_eq!(again.read_rows(&entry).await.unwrap(), vec![row(1, "x")]);
        assert!(matches!(
            again
                .create_table("//a/t", schema(), TableOptions::default())
                .await,
            Err(Error::AlreadyExists { .. })
        ));
        again.remove_table("//a/t").await.unwrap();
        assert!(matches!(
            again.table("//a/t").await,
            Err(Error::NoSuchTable { .. })
        ));
    }

    #[test]
    fn validates_pivots_and_paths() {
        let s = schema();
        let bad = |p: Vec<Vec<Value>>| {
            validate_tablets(
                &s,
                &TableOptions {
                    pivot_keys: Some(p),
                    tablet_count: None,
                },
            )
            .is_err()
        };
        assert!(bad(vec![vec![Value::Int64(1)]]));
        assert!(bad(vec![
            vec![],
            vec![Value::Int64(5)],
            vec![Value::Int64(5)]
        ]));
        assert!(bad(vec![vec![], vec![Value::string("x")]]));
        assert!(!bad(vec![
            vec![],
            vec![Value::Int64(5)],
            vec![Value::Int64(7)]
        ]));
        let both = |n| {
            validate_tablets(
                &s,
                &TableOptions {
                    pivot_keys: Some(vec![vec![], vec![Value::Int64(5)]]),
                    tablet_count: Some(n),
                },
            )
        };
        assert!(both(2).is_ok());
        assert!(both(3).is_err());
        assert!(validate_path("//t").is_ok());
        assert!(validate_path("/t").is_err());
        assert!(validate_path("//t/").is_err());
    }
}
