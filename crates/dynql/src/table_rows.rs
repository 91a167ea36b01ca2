//! `write-table` and `read-table`: whole-table writes of static tables and whole-table reads
//! of any table, in a master transaction or outside (design note 0010, "Static tables").

use dynql_core::arrow_convert::batch_to_rows;
use dynql_core::row::row_from_yson;
use dynql_core::{TableSchema, Value, ValueType, Yson};
use dynql_ql::ComputedColumns;
use dynql_storage::static_table::TableRead;

use crate::database::Database;
use crate::error::{Error, Result};
use crate::ypath::RichPath;

/// Options of [`Database::write_table`].
#[derive(Debug, Clone, Default)]
pub struct WriteTableOptions {
    /// Add the rows after the table's (`<append=%true>` in the path says so too).
    pub append: bool,
    /// The master transaction to write in: the rows appear to others when it commits.
    pub transaction: Option<String>,
}

/// Options of [`Database::read_table`].
#[derive(Debug, Clone, Default)]
pub struct ReadTableOptions {
    /// The master transaction to read in (its staged rows, its snapshot locks).
    pub transaction: Option<String>,
}

/// Rows [`Database::read_table`] read.
#[derive(Debug, Clone)]
pub struct TableRows {
    /// Name and type of each column, in output order.
    pub columns: Vec<(String, ValueType)>,
    pub rows: Vec<Vec<Value>>,
}

/// A row given to `write-table` in schema order: missing columns null, computed ones
/// computed.
fn static_row(
    schema: &TableSchema,
    computed: &ComputedColumns,
    n: u64,
    node: &Yson,
) -> Result<Vec<Value>> {
    let at = |e: Error| Error::Invalid(format!("Row #{n}: {e}"));
    let input = row_from_yson(schema, node).map_err(|e| at(e.into()))?;
    if input.tablet_index.is_some() {
        return Err(at(Error::Invalid(
            "$tablet_index is for ordered dynamic tables; this table is static".into(),
        )));
    }
    let mut row = Vec::with_capacity(input.values.len());
    for (value, column) in input.values.into_iter().zip(schema.columns()) {
        match value {
            Some(v) => row.push(v),
            None if column.required && !column.is_computed() => {
                return Err(at(Error::Invalid(format!(
                    "Missing required column {:?}",
                    column.name
                ))))
            }
            None => row.push(Value::Null),
        }
    }
    if !computed.is_empty() {
        computed.fill(schema, &mut row).map_err(|e| at(e.into()))?;
    }
    Ok(row)
}

/// A `write-table` in progress ([`Database::start_write_table`]): rows go in a part at a
/// time, and become the table's at [`TableWriter::commit`].
pub struct TableWriter {
    db: Database,
    write: dynql_storage::static_table::StaticWrite,
    computed: ComputedColumns,
}

impl TableWriter {
    /// The schema rows are written in.
    pub fn schema(&self) -> &TableSchema {
        &self.write.table().schema
    }

    /// Writes rows (YSON maps), numbered in errors from the first row of the whole write.
    ///
    /// # Errors
    /// A row that does not fit the schema or breaks the key order.
    pub async fn write(&mut self, rows: &[Yson]) -> Result<()> {
        let schema = self.write.table().schema.clone();
        let first = self.write.rows();
        let values = rows
            .iter()
            .enumerate()
            .map(|(i, node)| static_row(&schema, &self.computed, first + i as u64, node))
            .collect::<Result<Vec<_>>>()?;
        Ok(self
            .db
            .store
            .write_static_rows(&mut self.write, values)
            .await?)
    }

    /// Makes the written rows the table's (or stages them in the transaction); returns how
    /// many there were.
    ///
    /// # Errors
    /// The table was removed or replaced meanwhile; appended rows no longer follow rows
    /// another writer appended first; a lock conflict.
    pub async fn commit(self) -> Result<u64> {
        Ok(self.db.store.commit_static_write(self.write).await?)
    }
}

impl Database {
    /// Starts writing the static table at `path` (see [`Database::write_table`]); the rows
    /// go in with [`TableWriter::write`], a part at a time, so a large input is never held
    /// whole.
    ///
    /// # Errors
    /// A path with a column selector or range; no such table or transaction; a dynamic
    /// table; a lock that keeps the write out.
    pub async fn start_write_table(
        &self,
        path: &str,
        options: WriteTableOptions,
    ) -> Result<TableWriter> {
        let rich = RichPath::parse(path)?;
        if rich.columns.is_some()
            || rich.lower_row_index.is_some()
            || rich.upper_row_index.is_some()
        {
            return Err(Error::Invalid(format!(
                "Cannot write {path}: a written path takes no column selector or range"
            )));
        }
        let tx = options.transaction.as_deref();
        self.check_master(tx).await?;
        let append = options.append || rich.append;
        let write = self
            .store
            .start_static_write(&rich.path, tx, append)
            .await?;
        let computed = ComputedColumns::compile(&write.table().schema)?;
        Ok(TableWriter {
            db: self.clone(),
            write,
            computed,
        })
    }

    /// Writes the static table at `path` (a rich path: `<append=%true>//t` appends) with
    /// `rows` (YSON maps): over its rows (an exclusive lock in a transaction) or after them
    /// with `append` (a shared one, so that appends of several transactions all land).
    /// A sorted table's rows must come in strictly increasing key order, after its last
    /// row when appending. Returns the number of rows written.
    ///
    /// ```
    /// # tokio::runtime::Runtime::new().unwrap().block_on(async {
    /// use dynql::{Database, ReadTableOptions, Value, WriteTableOptions};
    /// let db = Database::open("memory://")?;
    /// db.create_table_from_text("//t", "{schema=[{name=a;type=int64}]}").await?;
    /// let rows = [dynql::yson::parse(b"{a=1}").unwrap(), dynql::yson::parse(b"{a=2}").unwrap()];
    /// db.write_table("//t", &rows, WriteTableOptions::default()).await?;
    /// db.write_table("<append=%true>//t", &rows[..1], WriteTableOptions::default()).await?;
    /// let read = db.read_table("//t[#1:]", ReadTableOptions::default()).await?;
    /// assert_eq!(read.rows, vec![vec![Value::Int64(2)], vec![Value::Int64(1)]]);
    /// # Ok::<(), dynql::Error>(()) }).unwrap();
    /// ```
    ///
    /// # Errors
    /// A path with a column selector or range; no such table; a dynamic table; a row that
    /// does not fit the schema or breaks the key order; a lock conflict.
    pub async fn write_table(
        &self,
        path: &str,
        rows: &[Yson],
        options: WriteTableOptions,
    ) -> Result<u64> {
        let mut writer = self.start_write_table(path, options).await?;
        for part in rows.chunks(64 * 1024) {
            writer.write(part).await?;
        }
        writer.commit().await
    }

    /// Reads the rows of the table at `path` (a rich path: `//t{a,b}[#10:#20]` selects
    /// columns and a row index range; `#ID` names a node by id), as the transaction sees
    /// it: a static table's rows in row order, a dynamic table's at the latest timestamp.
    /// A snapshot lock the transaction holds on the table reads the rows as they were when
    /// it was taken, after others changed or removed the table. The first read of a static
    /// table in a transaction takes such a snapshot itself (YT's serializable reads of
    /// static tables), without keeping the transaction from writing the table after.
    ///
    /// # Errors
    /// No such table, transaction or column; a damaged chunk.
    pub async fn read_table(&self, path: &str, options: ReadTableOptions) -> Result<TableRows> {
        let rich = RichPath::parse(path)?;
        let tx = options.transaction.as_deref();
        self.check_master(tx).await?;
        if let Some(tx) = tx.filter(|_| !rich.path.starts_with('#')) {
            // The first read in a transaction pins what later ones read (serializable).
            self.store.take_read_snapshot(&rich.path, tx).await?;
        }
        let read = self.store.table_for_read(&rich.path, tx).await?;
        let schema = read.entry().schema.clone();
        let types: Vec<ValueType> = schema.columns().iter().map(|c| c.wire_type()).collect();
        let lower = rich.lower_row_index.unwrap_or(0);
        let upper = rich.upper_row_index.unwrap_or(u64::MAX).max(lower);
        let mut rows = Vec::new();
        match read {
            TableRead::Static { chunks, .. } => {
                let mut first = 0u64;
                for chunk in &chunks {
                    let end = first + chunk.rows;
                    if end > lower && first < upper {
                        let mut at = first;
                        for batch in self.store.read_static_chunk(chunk).await? {
                            for row in batch_to_rows(&batch, &types) {
                                if (lower..upper).contains(&at) {
                                    rows.push(row);
                                }
                                at += 1;
                            }
                        }
                    }
                    first = end;
                }
            }
            TableRead::Versioned {
                path, timestamp, ..
            } => {
                let all = self.store.read_rows(&path, timestamp).await?;
                let end = (upper.min(all.len() as u64)) as usize;
                let start = (lower as usize).min(end);
                rows.extend(all.into_iter().take(end).skip(start));
            }
        }
        let all: Vec<(String, ValueType)> = schema
            .columns()
            .iter()
            .map(|c| (c.name.clone(), c.wire_type()))
            .collect();
        let Some(names) = rich.columns else {
            return Ok(TableRows { columns: all, rows });
        };
        let picked = names
            .iter()
            .map(|n| {
                schema.column_index(n).ok_or_else(|| {
                    Error::Invalid(format!(
                        "No such column {} in the schema of {}",
                        dynql_core::error::shown(n),
                        rich.path
                    ))
                })
            })
            .collect::<Result<Vec<usize>>>()?;
        Ok(TableRows {
            columns: picked.iter().map(|&i| all[i].clone()).collect(),
            rows: rows
                .into_iter()
                .map(|r| picked.iter().map(|&i| r[i].clone()).collect())
                .collect(),
        })
    }
}
