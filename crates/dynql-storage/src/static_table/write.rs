//! Writing a static table: rows are encoded into chunks as they come (a new chunk every
//! [`CHUNK_ROWS`] rows), each uploaded when full, and all of them are named by one log
//! record at the end (or staged in the master transaction). Nothing is visible before that
//! record; chunks of a write that never commits are collected as garbage.

use arrow::datatypes::SchemaRef;

use dynql_core::arrow_convert::{rows_to_batch, table_arrow_schema};
use dynql_core::Value;

use super::{check_writable, has_dynamic_rows};
use crate::chunk::{new_chunk_path, put_encoded, ChunkEncoder};
use crate::cypress::{NodeView, Tree};
use crate::error::{Error, Result};
use crate::kernel::catalog::TableEntry;
use crate::kernel::static_rows::{check_follows, last_key, StaticChunk};
use crate::log::Action;
use crate::store::Store;

/// Rows per chunk of a static table.
pub const CHUNK_ROWS: usize = 1 << 20;

/// Rows encoded at a time.
const BATCH_ROWS: usize = 64 * 1024;

/// A write of a static table in progress ([`Store::start_static_write`]).
pub struct StaticWrite {
    path: String,
    transaction: Option<String>,
    append: bool,
    entry: TableEntry,
    arrow: SchemaRef,
    /// The key of the last row written, or of the table's last row when appending.
    last_key: Option<Vec<Value>>,
    pending: Vec<Vec<Value>>,
    current: Option<OpenChunk>,
    chunks: Vec<StaticChunk>,
    rows: u64,
}

/// The chunk being filled.
struct OpenChunk {
    encoder: ChunkEncoder,
    rows: u64,
    data_weight: u64,
    first_key: Vec<Value>,
    last_key: Vec<Value>,
}

impl StaticWrite {
    /// The table being written.
    pub fn table(&self) -> &TableEntry {
        &self.entry
    }

    /// Rows written so far.
    pub fn rows(&self) -> u64 {
        self.rows
    }
}

/// The log action that makes `chunks` the rows (or, with `append`, more rows) of the table
/// `table_id` at `path`, checked against the tree it is logged after.
fn plan_write(
    tree: &Tree,
    path: &str,
    table_id: &str,
    append: bool,
    chunks: &[StaticChunk],
) -> Result<Vec<Action>> {
    let entry = match tree.node(path) {
        Some(NodeView::Table(t)) if t.id == table_id => t,
        Some(NodeView::Table(_)) | None => {
            return Err(Error::Invalid(format!(
                "Table {path} was removed or replaced while it was being written"
            )))
        }
        Some(_) => return Err(Error::NoSuchTable { path: path.into() }),
    };
    let dynamic_rows = tree
        .state
        .tables
        .get(path)
        .is_some_and(|(e, data)| e.id == table_id && has_dynamic_rows(data));
    check_writable(entry, path, dynamic_rows).map_err(Error::Invalid)?;
    if append {
        if let Some(first) = chunks.iter().find(|c| c.rows > 0) {
            let existing = tree.static_chunks(path);
            check_follows(&entry.schema, last_key(&existing), &first.first_key)
                .map_err(|e| Error::Invalid(format!("Cannot append to {path}: {e}")))?;
        }
    }
    Ok(vec![Action::WriteStaticTable {
        path: path.into(),
        table_id: table_id.into(),
        append,
        chunks: chunks.to_vec(),
    }])
}

impl Store {
    /// Starts writing the static table at `path`, in master transaction `tx` or outside:
    /// over its rows, or after them with `append`. Rows go in with
    /// [`Store::write_static_rows`]; [`Store::commit_static_write`] makes them the table's.
    ///
    /// # Errors
    /// No such table or transaction; a dynamic table; a lock that keeps the write out (an
    /// overwrite needs an exclusive lock, an append a shared one).
    pub async fn start_static_write(
        &self,
        path: &str,
        tx: Option<&str>,
        append: bool,
    ) -> Result<StaticWrite> {
        let path = crate::cypress::normalize(path);
        let state = self.refresh().await?;
        // Planned now (and dropped) so that a lock conflict shows before any upload.
        let table = std::sync::Mutex::new(None);
        crate::cypress::change::actions(&state, tx, &self.fresh, &|tree: &Tree| {
            let Some(NodeView::Table(entry)) = tree.node(path) else {
                return Err(Error::NoSuchTable { path: path.into() });
            };
            let last = tree.static_chunks(path);
            *table.lock().expect("not poisoned") =
                Some((entry.clone(), last_key(&last).map(<[Value]>::to_vec)));
            plan_write(tree, path, &entry.id, append, &[])
        })?;
        let (entry, last_key) = table
            .into_inner()
            .expect("not poisoned")
            .ok_or_else(|| Error::NoSuchTable { path: path.into() })?;
        Ok(StaticWrite {
            path: path.into(),
            transaction: tx.map(str::to_string),
            append,
            arrow: table_arrow_schema(&entry.schema),
            last_key: if append { last_key } else { None },
            entry,
            pending: Vec::new(),
            current: None,
            chunks: Vec::new(),
            rows: 0,
        })
    }

    /// Writes rows (values of every column, in schema order) into `write`. A sorted table's
    /// rows must come in strictly increasing key order.
    ///
    /// # Errors
    /// A row of the wrong width or type; a key out of order; the object store failing.
    pub async fn write_static_rows(
        &self,
        write: &mut StaticWrite,
        rows: Vec<Vec<Value>>,
    ) -> Result<()> {
        let schema = write.entry.schema.clone();
        let schema = &schema;
        let key_count = schema.key_column_count();
        for row in rows {
            if row.len() != schema.columns().len() {
                return Err(Error::Invalid(format!(
                    "Row #{}: {} values for {} columns",
                    write.rows,
                    row.len(),
                    schema.columns().len()
                )));
            }
            let named = schema.columns().iter().map(|c| c.name.as_str());
            dynql_core::limits::check_row(named.zip(&row))
                .map_err(|e| Error::Invalid(format!("Row #{}: {e}", write.rows)))?;
            if key_count > 0 {
                let key = &row[..key_count];
                if let Some(before) = &write.last_key {
                    check_follows(schema, Some(before), key)
                        .map_err(|e| Error::Invalid(format!("Row #{}: {e}", write.rows)))?;
                }
                write.last_key = Some(key.to_vec());
            }
            write.rows += 1;
            write.pending.push(row);
            if write.pending.len() >= BATCH_ROWS {
                self.encode_pending(write).await?;
            }
        }
        Ok(())
    }

    /// Encodes the buffered rows into the open chunk, closing it when full.
    async fn encode_pending(&self, write: &mut StaticWrite) -> Result<()> {
        let key_count = write.entry.schema.key_column_count();
        let mut rows = std::mem::take(&mut write.pending);
        while !rows.is_empty() {
            let open = match &mut write.current {
                Some(open) => open,
                None => write.current.insert(OpenChunk {
                    encoder: ChunkEncoder::new(&write.arrow, write.entry.compression_codec)?,
                    rows: 0,
                    data_weight: 0,
                    first_key: rows[0][..key_count].to_vec(),
                    last_key: vec![],
                }),
            };
            let room = CHUNK_ROWS - open.rows as usize;
            let rest = rows.split_off(room.min(rows.len()));
            let batch = rows_to_batch(&write.arrow, &rows)
                .map_err(|e| Error::Invalid(format!("Cannot write {}: {e}", write.path)))?;
            open.encoder.write(&batch)?;
            open.rows += rows.len() as u64;
            open.data_weight += rows.iter().map(|r| crate::scan::row_weight(r)).sum::<u64>();
            open.last_key = rows[rows.len() - 1][..key_count].to_vec();
            if open.rows as usize >= CHUNK_ROWS {
                self.close_chunk(write).await?;
            }
            rows = rest;
        }
        Ok(())
    }

    /// Uploads the open chunk.
    async fn close_chunk(&self, write: &mut StaticWrite) -> Result<()> {
        let Some(open) = write.current.take() else {
            return Ok(());
        };
        let (bytes, checksum) = open.encoder.finish()?;
        let path = new_chunk_path(&write.entry.id, "static", &self.fresh);
        let size = bytes.len() as u64;
        put_encoded(self.objects.as_ref(), &path, bytes).await?;
        write.chunks.push(StaticChunk {
            path,
            rows: open.rows,
            bytes: size,
            data_weight: open.data_weight,
            first_key: open.first_key,
            last_key: open.last_key,
            checksum,
        });
        Ok(())
    }

    /// Makes the written rows the table's (or, in a master transaction, stages them there):
    /// one log record. Returns the number of rows written.
    ///
    /// # Errors
    /// The table was removed or replaced meanwhile; appended rows no longer follow rows
    /// another writer appended first; a lock conflict.
    pub async fn commit_static_write(&self, mut write: StaticWrite) -> Result<u64> {
        self.encode_pending(&mut write).await?;
        self.close_chunk(&mut write).await?;
        let StaticWrite {
            path,
            transaction,
            append,
            entry,
            chunks,
            rows,
            ..
        } = write;
        self.change_tree(transaction.as_deref(), |tree| {
            plan_write(tree, &path, &entry.id, append, &chunks)
        })
        .await?;
        Ok(rows)
    }
}
