//! Reading a table whole (`read-table`), as a master transaction sees it: a static table's
//! chunks in row order, or a dynamic table's rows at a timestamp. A snapshot lock the
//! transaction (or an ancestor) holds on the table pins both: the chunk list it saw, and the
//! timestamp it was taken at.

use arrow::record_batch::RecordBatch;
use object_store::path::Path as ObjectPath;
use object_store::ObjectStoreExt;

use super::has_dynamic_rows;
use crate::cypress::locks::LockMode;
use crate::cypress::transactions::Entry;
use crate::cypress::{NodeView, Tree};
use crate::error::{Error, Result};
use crate::kernel::catalog::TableEntry;
use crate::kernel::static_rows::StaticChunk;
use crate::kernel::timestamp::Timestamp;
use crate::state::State;
use crate::store::Store;

/// How a table's rows are read ([`Store::table_for_read`]).
#[derive(Debug, Clone)]
pub enum TableRead {
    /// A static table's rows: its chunks in row order ([`Store::read_static_chunk`]).
    Static {
        entry: TableEntry,
        chunks: Vec<StaticChunk>,
    },
    /// A dynamic table's rows (or those a table made static kept) at `timestamp`: the
    /// latest, or a snapshot lock's. `path` is where the table is now.
    Versioned {
        path: String,
        entry: TableEntry,
        timestamp: Timestamp,
    },
}

impl TableRead {
    /// The table read.
    pub fn entry(&self) -> &TableEntry {
        match self {
            TableRead::Static { entry, .. } | TableRead::Versioned { entry, .. } => entry,
        }
    }
}

/// The snapshot lock `tx` or an ancestor holds on table `id`: its version, timestamp and
/// the path it was taken at.
fn snapshot<'a>(
    state: &'a State,
    tx: Option<&str>,
    id: &str,
) -> Option<(&'a TableEntry, u64, &'a str)> {
    let tx = tx?;
    let master = &state.master;
    master
        .locks
        .values()
        .filter(|l| l.node_id == id && l.mode == LockMode::Snapshot)
        .find(|l| master.is_self_or_ancestor(&l.transaction_id, Some(tx)))
        .and_then(|l| match (&l.snapshot, l.timestamp) {
            (Some(Entry::Table(t)), Some(ts)) => Some((t, ts, l.path.as_str())),
            _ => None,
        })
}

/// The read of `entry` (as `tree` sees it at `path`, if it is there), at `timestamp`.
fn plan_read(
    tree: &Tree,
    path: Option<&str>,
    entry: &TableEntry,
    chunks: Vec<StaticChunk>,
    timestamp: Timestamp,
) -> Result<TableRead> {
    let committed = tree
        .state
        .tables
        .iter()
        .find(|(_, (e, _))| e.id == entry.id);
    match committed {
        Some((at, (e, data))) if e.dynamic || has_dynamic_rows(data) => Ok(TableRead::Versioned {
            path: at.clone(),
            entry: e.clone(),
            timestamp,
        }),
        None if entry.dynamic && path.is_none() => Err(Error::Invalid(format!(
            "The rows of dynamic table #{} are gone: it was removed after the snapshot lock was taken (dynql keeps the rows of static tables only for snapshot locks)",
            entry.id
        ))),
        _ => Ok(TableRead::Static {
            entry: entry.clone(),
            chunks,
        }),
    }
}

impl Store {
    /// What reading the table at `path` (or `#ID`) in master transaction `tx` (or outside)
    /// reads.
    ///
    /// # Errors
    /// No such table or transaction; a dynamic table a snapshot lock holds that was removed.
    pub async fn table_for_read(&self, path: &str, tx: Option<&str>) -> Result<TableRead> {
        let path = crate::cypress::normalize(path);
        self.read_tree(tx, |tree| {
            let state = tree.state;
            if let Some(id) = path.strip_prefix('#') {
                if let Some((entry, ts, _)) = snapshot(state, tx, id) {
                    let chunks = entry.static_chunks.clone();
                    return plan_read(tree, None, entry, chunks, Timestamp(ts));
                }
                let Some(at) = tree.path_of(id) else {
                    return Err(Error::NoSuchNode { path: path.into() });
                };
                return self.plan_path_read(tree, &at, tx);
            }
            crate::cypress::validate(path)?;
            self.plan_path_read(tree, path, tx)
        })
        .await
    }

    fn plan_path_read(&self, tree: &Tree, path: &str, tx: Option<&str>) -> Result<TableRead> {
        let entry = match tree.node(path) {
            Some(NodeView::Table(t)) => t,
            Some(other) => {
                return Err(Error::Invalid(format!(
                    "Cannot read {path}: it is a {}, not a table",
                    other.type_name()
                )))
            }
            None => return Err(Error::NoSuchTable { path: path.into() }),
        };
        if let Some((snapshot, ts, locked_at)) = snapshot(tree.state, tx, &entry.id) {
            // At the locked path the tree shows the kept version with the transaction's own
            // changes over it; a node moved elsewhere shows the kept version alone.
            let (entry, chunks) = match locked_at == path {
                true => (entry, tree.static_chunks(path)),
                false => (snapshot, snapshot.static_chunks.clone()),
            };
            return plan_read(tree, Some(path), entry, chunks, Timestamp(ts));
        }
        plan_read(
            tree,
            Some(path),
            entry,
            tree.static_chunks(path),
            Timestamp::MAX,
        )
    }

    /// The rows of one chunk of a static table, verified against its checksum.
    ///
    /// # Errors
    /// The chunk is missing or damaged; the object store failing.
    pub async fn read_static_chunk(&self, chunk: &StaticChunk) -> Result<Vec<RecordBatch>> {
        let location = ObjectPath::from(chunk.path.as_str());
        let bytes = match self.objects.get(&location).await {
            Ok(got) => got.bytes().await?,
            Err(object_store::Error::NotFound { .. }) => {
                return Err(Error::Corrupt {
                    path: chunk.path.clone(),
                    message: "the chunk file is missing".into(),
                })
            }
            Err(e) => return Err(e.into()),
        };
        crate::kernel::checksum::verify_chunk(&chunk.path, &bytes, &chunk.checksum)?;
        crate::chunk::decode_chunk(&chunk.path, bytes)
    }
}
