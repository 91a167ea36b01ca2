//! [`Database`]: the embedded engine — create tables, write rows, run YT QL.

use arrow::record_batch::RecordBatch;

use dynql_core::row::row_from_yson;
use dynql_core::{TableSchema, Value, Yson};
use dynql_ql::ComputedColumns;
use dynql_storage::{CacheAdmission, RowValues, Store, StoreOptions, Timestamp, WriteKind};

use crate::error::{Error, Result};
use crate::results::LookupResult;
use crate::transaction::Transaction;

/// An open dynql store.
///
/// ```
/// # tokio::runtime::Runtime::new().unwrap().block_on(async {
/// use dynql::{Database, SelectOptions};
/// let db = Database::open("memory://")?;
/// db.create_table_from_text("//t", r#"{dynamic=%true; schema=[{name=k;type=int64;sort_order=ascending};{name=v;type=string}]}"#).await?;
/// db.insert_json_rows("//t", &[serde_json::json!({"k": 1, "v": "one"})]).await?;
/// let result = db.select_rows("v from [//t] where k = 1", &SelectOptions::default()).await?;
/// assert_eq!(result.rows[0][0], dynql::Value::string("one"));
/// # Ok::<(), dynql::Error>(()) }).unwrap();
/// ```
#[derive(Clone)]
pub struct Database {
    pub(crate) store: Store,
    /// DataFusion's runtime and sessions for this database's queries.
    pub(crate) engine: dynql_exec::Engine,
}

impl Database {
    /// Opens (or creates) the store at `url`: `file://DIR`, a bare directory, or `memory://`.
    pub fn open(url: &str) -> Result<Database> {
        Ok(Database {
            store: Store::open(url)?,
            engine: dynql_exec::Engine::new(None)?,
        })
    }

    /// Opens the store at `url` (as [`Database::open`]) with `options`: whether a local
    /// store's writes are on disk before they are acknowledged ([`Durability`], default
    /// `fsync`), and the file system they go through.
    ///
    /// # Example
    /// ```
    /// use dynql::{Database, Durability, StoreOptions};
    /// let dir = tempfile::tempdir().unwrap();
    /// let options = StoreOptions { durability: Durability::None, ..StoreOptions::default() };
    /// let db = Database::open_with(&format!("file://{}", dir.path().display()), options)?;
    /// # Ok::<(), dynql::Error>(())
    /// ```
    pub fn open_with(url: &str, options: StoreOptions) -> Result<Database> {
        Ok(Database {
            store: Store::open_with(url, options)?,
            engine: dynql_exec::Engine::new(None)?,
        })
    }

    /// Opens the store at `url` (as [`Database::open`]) keeping at most `bytes` of decoded
    /// row groups for later reads (see [`Store::with_chunk_cache_bytes`]).
    pub fn open_with_chunk_cache(url: &str, bytes: usize) -> Result<Database> {
        Ok(Database {
            store: Store::open(url)?.with_chunk_cache_bytes(bytes),
            engine: dynql_exec::Engine::new(None)?,
        })
    }

    /// This database keeping at most `bytes` of decoded row groups for later reads, letting
    /// them in as `admission` says (see [`Store::with_chunk_cache`]): a program that runs
    /// one query and exits wants [`CacheAdmission::SecondRead`].
    ///
    /// # Example
    /// ```
    /// use dynql::{CacheAdmission, Database};
    /// let db = Database::open("memory://")?.with_chunk_cache(16 << 20, CacheAdmission::SecondRead);
    /// # Ok::<(), dynql::Error>(())
    /// ```
    pub fn with_chunk_cache(mut self, bytes: usize, admission: CacheAdmission) -> Database {
        self.store = self.store.with_chunk_cache(bytes, admission);
        self
    }

    /// This database, its queries' operators (YT QL and SQL) holding at most `bytes` of
    /// memory together: sorts, aggregations and joins past it spill to temporary files
    /// where DataFusion can, and fail with a resources-exhausted error where it cannot. The
    /// limit does not cover the chunk cache, whose budget is set apart
    /// ([`Database::open_with_chunk_cache`]).
    ///
    /// # Example
    /// ```
    /// let db = dynql::Database::open("memory://")?.with_memory_limit(512 << 20)?;
    /// assert_eq!(db.memory_limit(), Some(512 << 20));
    /// # Ok::<(), dynql::Error>(())
    /// ```
    ///
    /// # Errors
    /// A limit of 0 bytes.
    pub fn with_memory_limit(mut self, bytes: usize) -> Result<Database> {
        self.engine = dynql_exec::Engine::new(Some(bytes))?;
        Ok(self)
    }

    /// This database reading the time from `clock` instead of the wall clock: commit
    /// timestamps, TTL's and compaction's "now", transaction deadlines (see
    /// [`Store::with_clock`]). A test of a TTL or a timeout moves a [`crate::ManualClock`]
    /// instead of sleeping.
    ///
    /// # Example
    /// ```
    /// use std::sync::Arc;
    /// use dynql::{Database, ManualClock, SeededIds};
    /// let clock = Arc::new(ManualClock::new(1_900_000_000_000_000_000));
    /// let db = Database::open("memory://")?
    ///     .with_clock(clock.clone())
    ///     .with_ids(Arc::new(SeededIds::new(1)));
    /// # tokio::runtime::Runtime::new().unwrap().block_on(async {
    /// let ts = db.generate_timestamp().await?;
    /// assert_eq!(ts.unix_seconds(), 1_900_000_000);
    /// # Ok::<(), dynql::Error>(()) }).unwrap();
    /// # Ok::<(), dynql::Error>(())
    /// ```
    pub fn with_clock(mut self, clock: std::sync::Arc<dyn crate::Clock>) -> Database {
        self.store = self.store.with_clock(clock);
        self
    }

    /// This database making its ids (tables, chunks, nodes, locks, transactions) with `ids`
    /// (see [`Store::with_ids`]): [`crate::SeededIds`] make a run repeatable.
    pub fn with_ids(mut self, ids: std::sync::Arc<dyn crate::IdGenerator>) -> Database {
        self.store = self.store.with_ids(ids);
        self
    }

    /// The memory limit of the queries' operators, if any ([`Database::with_memory_limit`]).
    pub fn memory_limit(&self) -> Option<usize> {
        self.engine.memory_limit()
    }

    /// Whether a store was ever written at `url` (see [`Store::was_written`]): opening one
    /// that was not creates it, which a command that only reads should not do.
    ///
    /// ```
    /// assert!(!dynql::Database::was_written("file:///nonexistent/dynql-store"));
    /// ```
    pub fn was_written(url: &str) -> bool {
        Store::was_written(url)
    }

    /// The underlying store.
    pub fn store(&self) -> &Store {
        &self.store
    }

    /// Creates a table from `yt create table --attributes` text (YSON or JSON map with
    /// `dynamic`, `schema`, optional `tablet_count` or `pivot_keys`).
    pub async fn create_table_from_text(&self, path: &str, attributes: &str) -> Result<()> {
        self.create_table(path, &crate::parse_document(attributes)?)
            .await
    }

    /// Creates a table from an attribute map.
    ///
    /// # Errors
    /// A missing or invalid schema, `dynamic` not true, bad tablet attributes, an invalid
    /// computed column, an existing table.
    pub async fn create_table(&self, path: &str, attributes: &Yson) -> Result<()> {
        let (schema, options) = crate::table_attributes::table_definition(attributes)?;
        self.store.create_table(path, schema, options).await?;
        Ok(())
    }

    /// Inserts rows (maps of column name to value) in overwrite mode: a row replaces the row
    /// with the same key; columns not given become null. Computed key columns are evaluated.
    ///
    /// # Example
    /// ```
    /// # tokio::runtime::Runtime::new().unwrap().block_on(async {
    /// let db = dynql::Database::open("memory://")?;
    /// db.create_table_from_text("//t", "{dynamic=%true; schema=[{name=k;type=int64;sort_order=ascending};{name=v;type=string}]}")
    ///     .await?;
    /// let rows = [dynql::yson::parse(b"{k=1; v=one}").unwrap(), dynql::yson::parse(b"{k=2}").unwrap()];
    /// db.insert_rows("//t", &rows).await?;
    /// assert_eq!(db.select_rows("* from [//t]", &Default::default()).await?.rows.len(), 2);
    /// # Ok::<(), dynql::Error>(()) }).unwrap();
    /// ```
    ///
    /// # Errors
    /// Unknown columns, wrong types, a missing key or required column, a computed column
    /// written; nothing is written then.
    pub async fn insert_rows(&self, path: &str, rows: &[Yson]) -> Result<()> {
        self.insert_rows_with(path, rows, WriteOptions::default())
            .await
            .map(|_| ())
    }

    /// Inserts rows with explicit [`WriteOptions`] (update mode, aggregation) and returns the
    /// commit timestamp.
    ///
    /// Update mode changes only the columns a row names (others keep their value);
    /// `aggregate` folds the values of aggregating columns (`aggregate=sum|min|max|first`)
    /// into the stored ones instead of replacing them.
    ///
    /// # Example
    /// ```
    /// # tokio::runtime::Runtime::new().unwrap().block_on(async {
    /// let db = dynql::Database::open("memory://")?;
    /// db.create_table_from_text("//t", "{dynamic=%true; schema=[{name=k;type=int64;sort_order=ascending};{name=v;type=string}]}")
    ///     .await?;
    /// db.insert_rows("//t", &[dynql::yson::parse(b"{k=1; v=one}").unwrap()]).await?;
    /// // Update mode: a row without `v` keeps the stored `v`.
    /// let update = dynql::WriteOptions { update: true, ..Default::default() };
    /// let ts = db.insert_rows_with("//t", &[dynql::yson::parse(b"{k=1}").unwrap()], update).await?;
    /// assert!(ts <= db.generate_timestamp().await?);
    /// let result = db.select_rows("v from [//t]", &Default::default()).await?;
    /// assert_eq!(result.row(0).unwrap().get::<String>("v")?, "one");
    /// # Ok::<(), dynql::Error>(()) }).unwrap();
    /// ```
    pub async fn insert_rows_with(
        &self,
        path: &str,
        rows: &[Yson],
        options: WriteOptions,
    ) -> Result<Timestamp> {
        if !options.update
            && !options.aggregate
            && rows.len() >= dynql_storage::store::LARGE_WRITE_ROWS
            && self.store.table(path).await?.schema.is_sorted()
        {
            // Many whole rows of a sorted table: a bulk write, so that they land as the
            // table's sorted chunks (as an import's do) rather than in the dynamic store
            // every open replays, converted straight to columns. Rows that are not plainly
            // valid, or have a null key (which bulk writes do not take), go the row path.
            let mut bulk = self.store.start_bulk_write(path).await?;
            let computed = ComputedColumns::compile(&bulk.table().schema)?;
            if let Some(batches) =
                crate::insert_columns::yson_rows_to_batches(bulk.table(), &computed, rows)
            {
                self.store.stage_bulk_batches(&mut bulk, &batches).await?;
                return Ok(self.store.commit_bulk_write(bulk).await?);
            }
        }
        let (kind, full, tablets) = self.prepare_insert(path, rows, options).await?;
        let schema = self.store.table(path).await?.schema;
        if !schema.is_sorted() {
            let rows = tablets.into_iter().zip(full).collect();
            return Ok(self.store.append_rows(path, rows).await?);
        }
        let key_count = schema.key_column_count();
        let null_key = |r: &RowValues| {
            r[..key_count]
                .iter()
                .any(|v| matches!(v, Some(Value::Null)))
        };
        if kind == WriteKind::Overwrite
            && !options.aggregate
            && full.len() >= dynql_storage::store::LARGE_WRITE_ROWS
            && !full.iter().any(null_key)
        {
            // Many whole rows: a bulk write, so that they land as the table's sorted chunks
            // (as an import's do) rather than in the dynamic store every open replays. (Bulk
            // writes take non-null keys; rows with a null key, which YT allows, go the
            // dynamic store's way with the rest of their write.)
            let mut bulk = self.store.start_bulk_write(path).await?;
            self.store.stage_bulk_rows(&mut bulk, full).await?;
            return Ok(self.store.commit_bulk_write(bulk).await?);
        }
        Ok(self
            .store
            .write_rows(path, kind, options.aggregate, full)
            .await?)
    }

    /// Checks rows and converts them to schema order with computed columns filled.
    pub(crate) async fn prepare_insert(
        &self,
        path: &str,
        rows: &[Yson],
        options: WriteOptions,
    ) -> Result<(WriteKind, Vec<RowValues>, Vec<Option<usize>>)> {
        let entry = self.store.table(path).await?;
        let schema = &entry.schema;
        if !schema.is_sorted() && options.update {
            return Err(Error::Unsupported(format!(
                "update mode is not supported for ordered table {path}: ordered tables are queues"
            )));
        }
        let computed = ComputedColumns::compile(schema)?;
        let mut tablets = Vec::with_capacity(rows.len());
        let ttl_column = schema.column_index(dynql_core::schema::TTL_COLUMN);
        let mut full = Vec::with_capacity(rows.len());
        for (n, node) in rows.iter().enumerate() {
            let input = row_from_yson(schema, node).map_err(|e| row_error(n, e.into()))?;
            tablets.push(input.tablet_index.map(|t| t.max(0) as usize));
            if let Some(t) = input.tablet_index {
                if t < 0 || t as usize >= entry.tablet_count {
                    return Err(row_error(
                        n,
                        Error::Invalid(format!(
                            "Invalid $tablet_index {t}: the table has {} tablets",
                            entry.tablet_count
                        )),
                    ));
                }
            }
            let mut row: Vec<Option<Value>> = Vec::with_capacity(input.values.len());
            for (value, column) in input.values.into_iter().zip(schema.columns()) {
                match value {
                    Some(v) => row.push(Some(v)),
                    None if column.is_key() && !column.is_computed() => {
                        return Err(row_error(
                            n,
                            Error::Invalid(format!("Missing key column {:?}", column.name)),
                        ))
                    }
                    None if column.required => {
                        return Err(row_error(
                            n,
                            Error::Invalid(format!("Missing required column {:?}", column.name)),
                        ))
                    }
                    // Overwrite mode writes null; update mode leaves the column alone.
                    None if column.is_computed() || !options.update => row.push(Some(Value::Null)),
                    None => row.push(None),
                }
            }
            if !computed.is_empty() {
                let mut filled: Vec<Value> = row
                    .iter()
                    .map(|v| v.clone().unwrap_or(Value::Null))
                    .collect();
                computed
                    .fill(schema, &mut filled)
                    .map_err(|e| row_error(n, e.into()))?;
                for (i, c) in schema.columns().iter().enumerate() {
                    if c.is_computed() {
                        row[i] = Some(filled[i].clone());
                    }
                }
            }
            if let Some(i) = ttl_column {
                if let Some(Value::Uint64(t)) = &row[i] {
                    entry
                        .retention
                        .check_row_ttl(*t)
                        .map_err(|m| row_error(n, Error::Invalid(m)))?;
                }
            }
            full.push(row);
        }
        let kind = if options.update {
            WriteKind::Update
        } else {
            WriteKind::Overwrite
        };
        Ok((kind, full, tablets))
    }

    /// Inserts rows given as JSON objects (see [`Database::insert_rows`]).
    pub async fn insert_json_rows(&self, path: &str, rows: &[serde_json::Value]) -> Result<()> {
        let rows: Vec<Yson> = rows.iter().map(Yson::from_json).collect();
        self.insert_rows(path, &rows).await
    }

    /// Inserts the rows of a record batch whose fields are named like the table's columns.
    ///
    /// # Example
    /// ```
    /// use std::sync::Arc;
    /// use dynql::arrow::array::{Int64Array, StringArray};
    /// use dynql::arrow::record_batch::RecordBatch;
    /// # tokio::runtime::Runtime::new().unwrap().block_on(async {
    /// let db = dynql::Database::open("memory://")?;
    /// db.create_table_from_text("//t", "{dynamic=%true; schema=[{name=k;type=int64;sort_order=ascending};{name=v;type=string}]}")
    ///     .await?;
    /// let batch = RecordBatch::try_from_iter([
    ///     ("k", Arc::new(Int64Array::from(vec![1, 2])) as _),
    ///     ("v", Arc::new(StringArray::from(vec!["one", "two"])) as _),
    /// ])
    /// .unwrap();
    /// db.insert_batch("//t", &batch).await?;
    /// assert_eq!(db.select_rows("k from [//t]", &Default::default()).await?.rows.len(), 2);
    /// # Ok::<(), dynql::Error>(()) }).unwrap();
    /// ```
    pub async fn insert_batch(&self, path: &str, batch: &RecordBatch) -> Result<()> {
        let entry = self.store.table(path).await?;
        let mut rows = vec![Vec::new(); batch.num_rows()];
        for (i, field) in batch.schema().fields().iter().enumerate() {
            let column = entry.schema.column(field.name()).ok_or_else(|| {
                Error::Invalid(format!(
                    "No such column {} in table schema",
                    dynql_core::error::shown(field.name())
                ))
            })?;
            let array = batch.column(i);
            for (r, row) in rows.iter_mut().enumerate() {
                let v =
                    dynql_core::arrow_convert::array_value(array.as_ref(), column.wire_type(), r);
                row.push((field.name().as_bytes().to_vec(), v.to_yson()));
            }
        }
        let rows: Vec<Yson> = rows.into_iter().map(Yson::Map).collect();
        self.insert_rows(path, &rows).await
    }

    /// Deletes rows by key (maps holding the non-computed key columns); a key without a row
    /// is no error.
    ///
    /// # Example
    /// ```
    /// # tokio::runtime::Runtime::new().unwrap().block_on(async {
    /// let db = dynql::Database::open("memory://")?;
    /// db.create_table_from_text("//t", "{dynamic=%true; schema=[{name=k;type=int64;sort_order=ascending};{name=v;type=string}]}")
    ///     .await?;
    /// db.insert_json_rows("//t", &[serde_json::json!({"k": 1}), serde_json::json!({"k": 2})]).await?;
    /// db.delete_rows("//t", &[dynql::yson::parse(b"{k=1}").unwrap()]).await?;
    /// let keys: Vec<(i64,)> = db.select_rows("k from [//t]", &Default::default()).await?.deserialize()?;
    /// assert_eq!(keys, vec![(2,)]);
    /// # Ok::<(), dynql::Error>(()) }).unwrap();
    /// ```
    pub async fn delete_rows(&self, path: &str, keys: &[Yson]) -> Result<()> {
        let keys = self.prepare_delete(path, keys).await?;
        self.store
            .write_rows(path, WriteKind::Delete, false, keys)
            .await?;
        Ok(())
    }

    pub(crate) async fn prepare_delete(&self, path: &str, keys: &[Yson]) -> Result<Vec<RowValues>> {
        let entry = self.store.table(path).await?;
        if !entry.schema.is_sorted() {
            return Err(Error::Unsupported(format!(
                "delete_rows is not supported for ordered table {path}: ordered tables are queues (use trim_rows)"
            )));
        }
        let width = entry.schema.columns().len();
        Ok(self
            .prepare_keys(path, keys)
            .await?
            .into_iter()
            .map(|key| {
                let mut row: RowValues = key.into_iter().map(Some).collect();
                row.resize(width, None);
                row
            })
            .collect())
    }

    /// Looks rows up by key without the query planner; results follow the request order.
    ///
    /// Keys are maps of the non-computed key columns. Missing rows are skipped unless
    /// `keep_missing_rows`, which yields `None` in their place.
    ///
    /// # Example
    /// ```
    /// # tokio::runtime::Runtime::new().unwrap().block_on(async {
    /// let db = dynql::Database::open("memory://")?;
    /// db.create_table_from_text("//t", "{dynamic=%true; schema=[{name=k;type=int64;sort_order=ascending};{name=v;type=string}]}")
    ///     .await?;
    /// db.insert_json_rows("//t", &[serde_json::json!({"k": 1, "v": "one"})]).await?;
    /// let keys = [dynql::yson::parse(b"{k=1}").unwrap(), dynql::yson::parse(b"{k=9}").unwrap()];
    /// let found = db.lookup_rows("//t", &keys, &dynql::LookupOptions::default()).await?;
    /// assert_eq!(found.rows.len(), 1); // k=9 has no row
    /// assert_eq!(found.iter().next().flatten().unwrap().get::<String>("v")?, "one");
    /// # Ok::<(), dynql::Error>(()) }).unwrap();
    /// ```
    pub async fn lookup_rows(
        &self,
        path: &str,
        keys: &[Yson],
        options: &LookupOptions,
    ) -> Result<LookupResult> {
        let entry = self.store.table(path).await?;
        let schema = &entry.schema;
        if !schema.is_sorted() {
            return Err(Error::Invalid(format!(
                "lookup_rows needs a sorted table; {path} has no key columns"
            )));
        }
        let lookup = self.prepare_keys(path, keys).await?;
        let positions: Vec<usize> = match &options.column_names {
            None => (0..schema.columns().len()).collect(),
            Some(names) => names
                .iter()
                .map(|n| {
                    schema.column_index(n).ok_or_else(|| {
                        Error::Invalid(format!(
                            "No such column {} in table schema",
                            dynql_core::error::shown(n)
                        ))
                    })
                })
                .collect::<Result<_>>()?,
        };
        let (found, statistics) = self
            .store
            .lookup_rows_with(path, &lookup, options.timestamp, options.use_lookup_cache)
            .await?;
        let rows = found
            .into_iter()
            .filter(|r| r.is_some() || options.keep_missing_rows)
            .map(|r| r.map(|r| positions.iter().map(|&i| r[i].clone()).collect()))
            .collect();
        let columns = positions
            .iter()
            .map(|&i| {
                (
                    schema.columns()[i].name.clone(),
                    schema.columns()[i].wire_type(),
                )
            })
            .collect();
        Ok(LookupResult {
            columns,
            rows,
            statistics,
        })
    }

    /// Full keys (computed key columns filled) from maps of the non-computed key columns.
    pub(crate) async fn prepare_keys(&self, path: &str, keys: &[Yson]) -> Result<Vec<Vec<Value>>> {
        let entry = self.store.table(path).await?;
        let schema = &entry.schema;
        let key_count = schema.key_column_count();
        if key_count == 0 {
            return Err(Error::Invalid(format!("{path} has no key columns")));
        }
        let computed = ComputedColumns::compile(schema)?;
        let mut lookup = Vec::with_capacity(keys.len());
        for (n, node) in keys.iter().enumerate() {
            let input = row_from_yson(schema, node).map_err(|e| row_error(n, e.into()))?;
            let mut row = Vec::with_capacity(schema.columns().len());
            for (i, (value, column)) in input.values.into_iter().zip(schema.columns()).enumerate() {
                match value {
                    Some(_) if i >= key_count => {
                        return Err(row_error(
                            n,
                            Error::Invalid(format!("Column {:?} is not a key column", column.name)),
                        ))
                    }
                    Some(v) => row.push(v),
                    None if i >= key_count || column.is_computed() => row.push(Value::Null),
                    None => {
                        return Err(row_error(
                            n,
                            Error::Invalid(format!("Missing key column {:?}", column.name)),
                        ))
                    }
                }
            }
            computed
                .fill(schema, &mut row)
                .map_err(|e| row_error(n, e.into()))?;
            row.truncate(key_count);
            lookup.push(row);
        }
        Ok(lookup)
    }

    /// A fresh timestamp, later than every commit so far (`yt generate-timestamp`).
    pub async fn generate_timestamp(&self) -> Result<Timestamp> {
        Ok(self.store.generate_timestamp().await?)
    }

    /// Compacts a table now, dropping the versions its retention settings allow; returns the
    /// number of stored versions before and after. A table with `auto_partitioning_by_size`
    /// first flushes and splits and merges its tablets by size
    /// ([`dynql_storage::partitioning`]).
    pub async fn compact(&self, path: &str) -> Result<(usize, usize)> {
        Ok(self.store.compact(path).await?)
    }

    /// Flushes a sorted table's recent writes (its dynamic store) into a new key-sorted chunk,
    /// as every checkpoint does; returns whether there was anything to flush. Reads are the
    /// same before and after.
    pub async fn flush(&self, path: &str) -> Result<bool> {
        Ok(!self.store.flush_table(path).await?.is_empty())
    }

    /// Removes the first `trimmed_row_count` rows of tablet `tablet_index` of an ordered table
    /// (absolute: a count at or below the current one changes nothing); row numbering is
    /// preserved. Not transactional, as in YT.
    pub async fn trim_rows(
        &self,
        path: &str,
        tablet_index: usize,
        trimmed_row_count: u64,
    ) -> Result<()> {
        Ok(self
            .store
            .trim_rows(path, tablet_index, trimmed_row_count)
            .await?)
    }

    /// `alter-table`: a compatible new schema (see [`dynql_storage::Store::alter_table`])
    /// and/or the dynamic flag; the table must be unmounted.
    pub async fn alter_table(
        &self,
        path: &str,
        schema: Option<&Yson>,
        dynamic: Option<bool>,
    ) -> Result<()> {
        let schema = schema.map(TableSchema::from_yson).transpose()?;
        if let Some(s) = &schema {
            ComputedColumns::compile(s)?;
        }
        Ok(self.store.alter_table(path, schema, dynamic).await?)
    }

    /// Mounts, unmounts, remounts, freezes or unfreezes a table (`mount-table` …); synchronous.
    pub async fn set_tablet_state(
        &self,
        path: &str,
        command: dynql_storage::TabletCommand,
    ) -> Result<()> {
        Ok(self.store.set_tablet_state(path, command).await?)
    }

    /// Copies a table (or a directory with everything below it) to a new path (`yt copy`):
    /// a copied table has the source's rows and history.
    pub async fn copy(&self, source: &str, destination: &str) -> Result<()> {
        self.copy_node(source, destination, crate::CopyOptions::default())
            .await
    }

    /// Moves a table (or a directory with everything below it) to a new path (`yt move`).
    pub async fn move_table(&self, source: &str, destination: &str) -> Result<()> {
        self.move_node(source, destination, crate::CopyOptions::default())
            .await
    }

    /// Removes a table (or an empty directory, a document); see [`Database::remove_node`].
    pub async fn remove(&self, path: &str) -> Result<()> {
        self.remove_node(path, false, false, None).await
    }

    /// Verifies every file the store references and reports what is damaged and which
    /// tables it affects (`dynql check`); costs a full read of the store.
    pub async fn check(&self) -> Result<dynql_storage::CheckReport> {
        Ok(self.store.check().await?)
    }

    /// Repairs what can be repaired without losing data (`dynql check --repair`): damaged
    /// checkpoints set aside, lost log records recorded as such; the tables named in
    /// `accept_loss`, damaged only by lost records, become readable without those records'
    /// changes. Returns what was done and the check of the store afterwards.
    pub async fn repair(&self, accept_loss: &[String]) -> Result<dynql_storage::RepairReport> {
        Ok(self.store.repair(accept_loss).await?)
    }

    /// Whether a node (or a value inside a document) exists at `path` (`yt exists`).
    pub async fn exists(&self, path: &str) -> Result<bool> {
        self.exists_in(path, None).await
    }

    /// Names of the children of a directory (`yt list`), sorted.
    pub async fn list(&self, path: &str) -> Result<Vec<String>> {
        self.list_in(path, None).await
    }
}

/// YT's default transaction timeout.
pub const DEFAULT_TRANSACTION_TIMEOUT_MS: u64 = 15_000;

impl Database {
    /// Starts a tablet transaction with YT's default timeout (15 s without a ping).
    ///
    /// # Example
    /// ```
    /// # tokio::runtime::Runtime::new().unwrap().block_on(async {
    /// let db = dynql::Database::open("memory://")?;
    /// db.create_table_from_text("//t", "{dynamic=%true; schema=[{name=k;type=int64;sort_order=ascending};{name=v;type=string}]}")
    ///     .await?;
    /// let tx = db.start_transaction().await?;
    /// tx.insert_rows("//t", &[dynql::yson::parse(b"{k=1}").unwrap()], Default::default()).await?;
    /// // Not seen until the commit.
    /// assert!(db.select_rows("k from [//t]", &Default::default()).await?.rows.is_empty());
    /// tx.commit().await?;
    /// assert_eq!(db.select_rows("k from [//t]", &Default::default()).await?.rows.len(), 1);
    /// # Ok::<(), dynql::Error>(()) }).unwrap();
    /// ```
    pub async fn start_transaction(&self) -> Result<Transaction> {
        self.start_transaction_with_timeout(DEFAULT_TRANSACTION_TIMEOUT_MS)
            .await
    }

    /// Starts a tablet transaction that expires `timeout_ms` after its last ping.
    pub async fn start_transaction_with_timeout(&self, timeout_ms: u64) -> Result<Transaction> {
        let info = self.store.start_transaction(timeout_ms).await?;
        Ok(Transaction::new(
            self.clone(),
            info.id,
            info.start_timestamp,
        ))
    }

    /// Attaches to a live transaction started elsewhere (another process).
    pub async fn transaction(&self, id: &str) -> Result<Transaction> {
        if self.store.is_master_transaction(id).await? {
            return Err(Error::Invalid(format!(
                "{id} is not a valid tablet transaction id: it is a master transaction; rows of dynamic tables are written in tablet transactions (start-tx --type tablet)"
            )));
        }
        let info = self.store.transaction(id).await?;
        Ok(Transaction::new(
            self.clone(),
            info.id,
            info.start_timestamp,
        ))
    }
}

/// How `insert_rows` writes.
#[derive(Debug, Clone, Copy, Default)]
pub struct WriteOptions {
    /// Update mode: columns a row does not name keep their value.
    pub update: bool,
    /// Fold aggregating columns into the stored values.
    pub aggregate: bool,
}

/// Options of `lookup_rows`.
#[derive(Debug, Clone)]
pub struct LookupOptions {
    /// The snapshot to read (default: the latest commit).
    pub timestamp: Timestamp,
    /// Columns to return (default: all).
    pub column_names: Option<Vec<String>>,
    /// Return `None` for keys without a row instead of skipping them.
    pub keep_missing_rows: bool,
    /// Use the table's lookup row cache (`mount_config/lookup_cache_rows_ratio`); `None`:
    /// as the table's `mount_config/enable_lookup_cache_by_default` says. Only lookups at the
    /// latest timestamp use it.
    pub use_lookup_cache: Option<bool>,
}

impl Default for LookupOptions {
    fn default() -> LookupOptions {
        LookupOptions {
            timestamp: Timestamp::SYNC_LAST_COMMITTED,
            column_names: None,
            keep_missing_rows: false,
            use_lookup_cache: None,
        }
    }
}

fn row_error(n: usize, e: Error) -> Error {
    Error::Invalid(format!("Row #{n}: {e}"))
}
