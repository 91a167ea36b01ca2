//! Checkpoints: the replayed state as of a log position, so that opening a store reads the
//! latest checkpoint and only the log records after it.
//!
//! ```text
//! <root>/_checkpoints/<seq:020>.json                catalog, transactions, locks, chunk lists
//! <root>/tables/<table-id>/<kind>-<ms>-<id>.parquet  versioned chunks (see [`crate::chunk`])
//! ```
//!
//! A checkpoint first flushes the dynamic store of every sorted table (one commit of
//! [`Action::Flush`](crate::log::Action)) and compacts tables deeper than
//! [`AUTO_COMPACTION_CHUNKS`] layers of chunks (and ordered tables whose retention may trim
//! rows); the manifest then lists each table's chunks plus a *tail* chunk for what is still in memory (writes that raced the flush, ordered tables). The
//! manifest is created with `PutMode::Create` after its chunks, so a checkpoint is either
//! complete or absent, and it is read back whole before garbage collection runs. The two
//! newest checkpoints that read back are kept; older ones, the log records they cover, and
//! chunks nothing names (after the store's grace period) are deleted. Opening falls back from
//! a damaged checkpoint to an older one, or to the log from record 1 ([`load_latest`]).

use object_store::path::Path as ObjectPath;
use object_store::{ObjectStore, ObjectStoreExt, PutMode, PutOptions, PutPayload};
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, BTreeSet, HashSet};

use crate::chunk::{decode_chunk, decode_versions, new_chunk_path, write_versioned_chunk};
use crate::conflict::{LockDelta, LockMode};
use crate::error::{Error, Result};
use crate::kernel::catalog::TableEntry;
use crate::kernel::chunk_ref::{key_from_text, key_text, ChunkRef};
use crate::kernel::mvcc::{RowDelta, WriteKind};
use crate::kernel::timestamp::Timestamp;
use crate::state::{KeyOrd, State, TableData};
use crate::store::Store;
use dynql_core::Value;

pub(crate) const CHECKPOINT_DIR: &str = "_checkpoints";

/// A checkpoint compacts a table deeper than this many layers of chunks (the most chunks a
/// read of one key may merge, [`crate::kernel::compaction_policy::depth`]; not the number of chunks:
/// a large table is many chunks, one layer).
pub const AUTO_COMPACTION_CHUNKS: usize = 8;

#[derive(Debug, Serialize, Deserialize)]
struct Manifest {
    seq: u64,
    last_timestamp: u64,
    committed_transactions: Vec<String>,
    tables: Vec<TableCheckpoint>,
    /// The nodes of the tree that are not tables ([`crate::cypress`]).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    nodes: BTreeMap<String, crate::cypress::Node>,
    /// Master transactions and node locks.
    #[serde(
        default,
        skip_serializing_if = "crate::cypress::transactions::Master::is_empty"
    )]
    master: crate::cypress::transactions::Master,
    /// What record `seq` touched, for the `previous` of the record after it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    last_record: Option<crate::log::RecordSummary>,
}

#[derive(Debug, Serialize, Deserialize)]
struct TableCheckpoint {
    path: String,
    entry: TableEntry,
    /// The tail chunk: versions still in the dynamic store (all rows of an ordered table).
    chunk: Option<String>,
    /// How to verify the tail chunk.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    chunk_checksum: Option<crate::kernel::checksum::ChunkChecksum>,
    /// The table's key-sorted chunks, oldest first.
    #[serde(default)]
    chunks: Vec<ChunkRef>,
    locks: Vec<LockRecord>,
    /// The tablets of an ordered table; their stored rows are in the tail chunk, tablet by
    /// tablet.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    queues: Vec<QueueRecord>,
    /// See `TableData::compaction_horizon`.
    #[serde(default)]
    compaction_horizon: u64,
    /// See `TableData::last_compaction`.
    #[serde(default)]
    last_compaction: u64,
}

#[derive(Debug, Serialize, Deserialize)]
struct QueueRecord {
    trimmed: u64,
    first_stored: u64,
    rows: u64,
    cumulative_weight: i64,
}

#[derive(Debug, Serialize, Deserialize)]
struct LockRecord {
    key: String,
    timestamp: u64,
    mode: LockMode,
    groups: Vec<String>,
}

fn manifest_path(seq: u64) -> ObjectPath {
    ObjectPath::from(format!("{CHECKPOINT_DIR}/{seq:020}.json"))
}

/// The checkpoint manifests in the store, newest first.
async fn manifests(objects: &dyn ObjectStore) -> Result<Vec<(u64, ObjectPath)>> {
    let prefix = ObjectPath::from(CHECKPOINT_DIR);
    let metas = crate::io::objects::list_all(objects, &prefix).await?;
    let mut found: Vec<(u64, ObjectPath)> = metas
        .iter()
        .filter_map(|m| {
            let name = m.location.filename()?;
            name.strip_suffix(".json")?
                .parse::<u64>()
                .ok()
                .map(|seq| (seq, m.location.clone()))
        })
        .collect();
    found.sort_by_key(|(seq, _)| std::cmp::Reverse(*seq));
    Ok(found)
}

/// Reads and verifies a manifest.
async fn read_manifest(objects: &dyn ObjectStore, location: &ObjectPath) -> Result<Manifest> {
    let bytes = objects.get(location).await?.bytes().await?;
    // Manifests written before checksums start with `{`; a framed one starts with a hex digit,
    // which no single flipped bit turns into `{`.
    let body = if bytes.first() == Some(&b'{') {
        &bytes[..]
    } else {
        crate::kernel::checksum::unframe(location.as_ref(), &bytes)?
    };
    serde_json::from_slice(body).map_err(|e| Error::Corrupt {
        path: location.to_string(),
        message: e.to_string(),
    })
}

/// The chunks the manifest at `location` names (the tables' chunks and tail chunks).
pub(crate) async fn manifest_chunks(
    objects: &dyn ObjectStore,
    location: &ObjectPath,
) -> Result<Vec<String>> {
    let manifest = read_manifest(objects, location).await?;
    let mut named = crate::static_table::master_chunk_paths(&manifest.master);
    for t in manifest.tables {
        named.extend(crate::static_table::chunk_paths(&t.entry).map(str::to_string));
        named.extend(t.chunk);
        named.extend(t.chunks.into_iter().map(|c| c.path));
    }
    Ok(named)
}

/// The checkpoint manifests (and their tail chunks) that fail to load: (path, problem).
pub(crate) async fn damaged_checkpoints(
    objects: &dyn ObjectStore,
) -> Result<Vec<(String, String)>> {
    let mut out = Vec::new();
    for (seq, location) in manifests(objects).await? {
        match load(objects, seq, &location).await {
            Ok(_) => {}
            Err(e @ Error::ObjectStore(_)) if !is_not_found(&e) => return Err(e),
            Err(e) => out.push((location.to_string(), e.to_string())),
        }
    }
    Ok(out)
}

/// Checks that checkpoint `seq` (manifest at `location`) loads: manifest and tail chunks.
pub(crate) async fn verify(
    objects: &dyn ObjectStore,
    seq: u64,
    location: &ObjectPath,
) -> Result<()> {
    load(objects, seq, location).await.map(|_| ())
}

/// The position of the newest checkpoint manifest there is (intact or not).
pub(crate) async fn newest_manifest_seq(objects: &dyn ObjectStore) -> Result<Option<u64>> {
    Ok(manifests(objects).await?.first().map(|(seq, _)| *seq))
}

/// Where opening the store starts: the newest checkpoint that is intact (a damaged newer
/// one falls back to the one before it, whose log records garbage collection keeps), or
/// `None`: replay the log from its first record, when there is no checkpoint or when every
/// checkpoint is damaged but the log is all there (record 1 exists: collection deletes
/// records oldest first, only once two checkpoints were verified).
///
/// # Errors
/// Every checkpoint is damaged and the log no longer starts at record 1: the error names
/// the damaged manifests (restoring one of them from a copy opens the store).
pub(crate) async fn load_latest(objects: &dyn ObjectStore) -> Result<Option<State>> {
    let mut problems = Vec::new();
    for (seq, location) in manifests(objects).await? {
        match load(objects, seq, &location).await {
            Ok(state) => return Ok(Some(state)),
            // The object store itself failing is not damage: no fallback.
            Err(e @ Error::ObjectStore(_)) if !is_not_found(&e) => return Err(e),
            Err(e) => problems.push(format!("{location}: {e}")),
        }
    }
    if problems.is_empty() {
        return Ok(None);
    }
    match objects.head(&crate::log::record_path(1)).await {
        Ok(_) => Ok(None),
        Err(object_store::Error::NotFound { .. }) => Err(Error::Corrupt {
            path: CHECKPOINT_DIR.into(),
            message: format!(
                "every checkpoint is damaged and the log no longer starts at record 1, so the store cannot be opened; restore one of these files from a copy of the store: {}",
                problems.join("; ")
            ),
        }),
        Err(e) => Err(e.into()),
    }
}

/// The newest intact checkpoint at or below log position `seq`, `None` when there is none
/// (replay from record 1, if it is still there).
///
/// # Errors
/// The object store fails.
pub(crate) async fn load_at_or_below(objects: &dyn ObjectStore, seq: u64) -> Result<Option<State>> {
    for (at, location) in manifests(objects).await? {
        if at > seq {
            continue;
        }
        match load(objects, at, &location).await {
            Ok(state) => return Ok(Some(state)),
            Err(e @ Error::ObjectStore(_)) if !is_not_found(&e) => return Err(e),
            // A damaged one: an older one may do.
            Err(_) => continue,
        }
    }
    Ok(None)
}

pub(crate) fn is_not_found(e: &Error) -> bool {
    matches!(e, Error::ObjectStore(object_store::Error::NotFound { .. }))
}

/// Loads checkpoint `seq` from its manifest at `location`.
async fn load(objects: &dyn ObjectStore, seq: u64, location: &ObjectPath) -> Result<State> {
    let corrupt = |m: String| Error::Corrupt {
        path: location.to_string(),
        message: m,
    };
    let manifest = read_manifest(objects, location).await?;
    if manifest.seq != seq {
        return Err(corrupt(format!("manifest names sequence {}", manifest.seq)));
    }
    let mut state = State {
        seq: manifest.seq,
        last_timestamp: Timestamp(manifest.last_timestamp),
        tables: Default::default(),
        nodes: manifest.nodes,
        master: manifest.master,
        committed_transactions: manifest
            .committed_transactions
            .into_iter()
            .collect::<HashSet<_>>(),
        notes: Vec::new(),
        last_record: manifest.last_record,
        lost: BTreeMap::new(),
    };
    for t in manifest.tables {
        let schema = t.entry.schema.clone();
        let key_count = schema.key_column_count();
        let mut data = TableData {
            chunks: t.chunks,
            compaction_horizon: Timestamp(t.compaction_horizon),
            last_compaction: Timestamp(t.last_compaction),
            ..TableData::default()
        };
        let mut stored = Vec::new();
        if let Some(chunk) = &t.chunk {
            let bytes = objects
                .get(&ObjectPath::from(chunk.as_str()))
                .await?
                .bytes()
                .await?;
            if let Some(c) = &t.chunk_checksum {
                crate::kernel::checksum::verify_chunk(chunk, &bytes, c)?;
            }
            for batch in decode_chunk(chunk, bytes)? {
                stored.extend(decode_versions(chunk, &schema, &batch)?);
            }
        }
        if key_count > 0 {
            for d in stored {
                data.push_version(key_count, d);
            }
        } else {
            // Split the tail rows back into their tablets.
            let mut rows = stored.into_iter();
            for q in &t.queues {
                let queue_rows = rows
                    .by_ref()
                    .take(q.rows as usize)
                    .map(|d| {
                        let row = d
                            .values
                            .into_iter()
                            .map(|v| v.unwrap_or(Value::Null))
                            .collect();
                        (d.timestamp, row)
                    })
                    .collect::<Vec<_>>();
                if queue_rows.len() as u64 != q.rows {
                    return Err(corrupt(format!(
                        "checkpoint of {} lists more queued rows than its tail chunk holds",
                        t.path
                    )));
                }
                data.queues.push(crate::queue::Queue {
                    trimmed: q.trimmed,
                    first_stored: q.first_stored,
                    rows: queue_rows,
                    cumulative_weight: q.cumulative_weight,
                });
            }
        }
        for l in t.locks {
            let key = key_from_text(location.as_ref(), &l.key)?;
            data.locks.entry(KeyOrd(key)).or_default().push(LockDelta {
                timestamp: Timestamp(l.timestamp),
                mode: l.mode,
                groups: l.groups.into_iter().collect::<BTreeSet<_>>(),
            });
        }
        state.tables.insert(t.path, (t.entry, data));
    }
    // Transactions checkpointed before per-key changes hold whole versions.
    crate::cypress::transactions::upgrade_legacy(&mut state).map_err(corrupt)?;
    Ok(state)
}

impl Store {
    /// Writes a checkpoint of the current state and deletes checkpoints older than the
    /// previous one. Returns its log position.
    ///
    /// # Errors
    /// The store has damage ([`Store::check`]): no checkpoint is written then, so the log
    /// keeps every record the damage may be repaired from.
    #[tracing::instrument(level = "debug", skip_all)]
    pub async fn checkpoint(&self) -> Result<u64> {
        if self.refresh().await?.has_damage() {
            return Err(Error::Invalid(
                "no checkpoint while the store has damage: run `dynql check`".into(),
            ));
        }
        self.flush_tables(None).await?;
        let state = self.refresh().await?;
        let now = self.fresh.now();
        let crowded: Vec<String> = state
            .tables
            .iter()
            .filter(|(_, (e, d))| {
                crate::kernel::compaction_policy::depth(&crate::scan_plan::tablet_ranges(e), &d.chunks)
                    > AUTO_COMPACTION_CHUNKS
                    || crate::compact::periodic_compaction_due(e, d, now)
                    // Ordered tables whose retention allows deleting rows: compaction trims
                    // the expired commits (it rewrites nothing).
                    || (!e.schema.is_sorted()
                        && e.retention.min_data_versions == 0
                        && d.queues.iter().any(|q| !q.rows.is_empty()))
            })
            .map(|(p, _)| p.clone())
            .collect();
        // Tables that partition by size split and merge here too (a compaction does it first).
        let partitioned: Vec<String> = state
            .tables
            .iter()
            .filter(|(p, (e, _))| e.auto_partitioning.by_size && !crowded.contains(p))
            .map(|(p, _)| p.clone())
            .collect();
        for path in partitioned {
            self.partition_by_size(&path).await?;
        }
        for path in crowded {
            self.compact(&path).await?;
        }
        let state = self.refresh().await?;
        if state.seq == 0 {
            return Ok(0);
        }
        let mut tables = Vec::with_capacity(state.tables.len());
        for (path, (entry, data)) in &state.tables {
            let deltas: Vec<RowDelta> = if entry.schema.is_sorted() {
                data.sorted.values().flatten().cloned().collect()
            } else {
                data.queues
                    .iter()
                    .flat_map(|q| &q.rows)
                    .map(|(ts, r)| RowDelta {
                        timestamp: *ts,
                        kind: WriteKind::Overwrite,
                        values: r.iter().cloned().map(Some).collect(),
                        aggregate: false,
                    })
                    .collect()
            };
            let queues = data
                .queues
                .iter()
                .map(|q| QueueRecord {
                    trimmed: q.trimmed,
                    first_stored: q.first_stored,
                    rows: q.rows.len() as u64,
                    cumulative_weight: q.cumulative_weight,
                })
                .collect();
            let refs: Vec<&RowDelta> = deltas.iter().collect();
            let chunk = write_versioned_chunk(
                self.objects.as_ref(),
                new_chunk_path(&entry.id, "tail", &self.fresh),
                &entry.schema,
                &refs,
                // The dynamic store's image is read back whole, never looked up in.
                Vec::new(),
                entry.compression_codec,
            )
            .await?;
            let (chunk, chunk_checksum) = match chunk {
                Some(c) => (Some(c.path), c.checksum),
                None => (None, None),
            };
            let locks = data
                .locks
                .iter()
                .flat_map(|(k, ls)| {
                    ls.iter().map(move |l| LockRecord {
                        key: key_text(&k.0),
                        timestamp: l.timestamp.0,
                        mode: l.mode,
                        groups: l.groups.iter().cloned().collect(),
                    })
                })
                .collect();
            tables.push(TableCheckpoint {
                path: path.clone(),
                entry: entry.clone(),
                chunk,
                chunk_checksum,
                chunks: data.chunks.clone(),
                locks,
                queues,
                compaction_horizon: data.compaction_horizon.0,
                last_compaction: data.last_compaction.0,
            });
        }
        let manifest = Manifest {
            seq: state.seq,
            last_timestamp: state.last_timestamp.0,
            committed_transactions: state.committed_transactions.iter().cloned().collect(),
            tables,
            nodes: state.nodes.clone(),
            master: state.master.clone(),
            last_record: state.last_record.clone(),
        };
        let body = serde_json::to_vec(&manifest).map_err(|e| Error::Invalid(e.to_string()))?;
        let bytes = crate::kernel::checksum::frame(&body);
        let opts = PutOptions {
            mode: PutMode::Create,
            ..Default::default()
        };
        let location = manifest_path(state.seq);
        match self
            .objects
            .put_opts(&location, PutPayload::from(bytes), opts)
            .await
        {
            Ok(_) | Err(object_store::Error::AlreadyExists { .. }) => {}
            Err(e) => return Err(e.into()),
        }
        // Nothing the older checkpoints need is collected until this one reads back whole
        // (manifest and tail chunks): a damaged write must not cost the store its fallback.
        if let Err(e) = load(self.objects.as_ref(), state.seq, &location).await {
            return Err(match e {
                Error::ObjectStore(e) if !matches!(e, object_store::Error::NotFound { .. }) => {
                    e.into()
                }
                e => Error::Corrupt {
                    path: location.to_string(),
                    message: format!(
                        "the checkpoint just written does not read back ({e}); older checkpoints and the log are kept"
                    ),
                },
            });
        }
        self.collect_garbage().await?;
        self.collect_transactions().await?;
        Ok(state.seq)
    }
}

#[cfg(test)]
mod tests;
