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
//! complete or absent. The two newest checkpoints are kept; older ones, the log records they
//! cover, and chunks nothing names (after the store's grace period) are deleted.

use object_store::path::Path as ObjectPath;
use object_store::{ObjectStore, ObjectStoreExt, PutMode, PutOptions, PutPayload};
use serde::{Deserialize, Serialize};
use std::collections::{BTreeSet, HashSet};

use crate::chunk::{
    decode_chunk, decode_versions, key_from_text, key_text, new_chunk_path, write_versioned_chunk,
    ChunkRef,
};
use crate::conflict::{LockDelta, LockMode};
use crate::error::{Error, Result};
use crate::mvcc::{RowDelta, WriteKind};
use crate::store::{KeyOrd, State, Store, TableData, TableEntry};
use crate::timestamp::Timestamp;
use dynql_core::Value;

pub(crate) const CHECKPOINT_DIR: &str = "_checkpoints";

/// A checkpoint compacts a table deeper than this many layers of chunks (the most chunks a
/// read of one key may merge, [`crate::compaction_policy::depth`]; not the number of chunks:
/// a large table is many chunks, one layer).
pub const AUTO_COMPACTION_CHUNKS: usize = 8;

#[derive(Debug, Serialize, Deserialize)]
struct Manifest {
    seq: u64,
    last_timestamp: u64,
    committed_transactions: Vec<String>,
    tables: Vec<TableCheckpoint>,
}

#[derive(Debug, Serialize, Deserialize)]
struct TableCheckpoint {
    path: String,
    entry: TableEntry,
    /// The tail chunk: versions still in the dynamic store (all rows of an ordered table).
    chunk: Option<String>,
    /// How to verify the tail chunk.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    chunk_checksum: Option<crate::checksum::ChunkChecksum>,
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
    let metas = crate::objects::list_all(objects, &prefix).await?;
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
        crate::checksum::unframe(location.as_ref(), &bytes)?
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
    let mut named = Vec::new();
    for t in manifest.tables {
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

/// Loads the newest checkpoint that is intact, if any: a damaged newest checkpoint (its
/// manifest or its tail chunks) falls back to the one before it, whose log records garbage
/// collection keeps. Only when every checkpoint is damaged is the error returned.
pub(crate) async fn load_latest(objects: &dyn ObjectStore) -> Result<Option<State>> {
    let mut first_error = None;
    for (seq, location) in manifests(objects).await? {
        match load(objects, seq, &location).await {
            Ok(state) => return Ok(Some(state)),
            // The object store itself failing is not damage: no fallback.
            Err(e @ Error::ObjectStore(_)) if !is_not_found(&e) => return Err(e),
            Err(e) => {
                first_error.get_or_insert(e);
            }
        }
    }
    match first_error {
        Some(e) => Err(e),
        None => Ok(None),
    }
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
        committed_transactions: manifest
            .committed_transactions
            .into_iter()
            .collect::<HashSet<_>>(),
        notes: Vec::new(),
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
                crate::checksum::verify_chunk(chunk, &bytes, c)?;
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
    Ok(state)
}

impl Store {
    /// Writes a checkpoint of the current state and deletes checkpoints older than the
    /// previous one. Returns its log position.
    ///
    /// # Errors
    /// The store has damage ([`Store::check`]): no checkpoint is written then, so the log
    /// keeps every record the damage may be repaired from.
    pub async fn checkpoint(&self) -> Result<u64> {
        if self.refresh().await?.has_damage() {
            return Err(Error::Invalid(
                "no checkpoint while the store has damage: run `dynql check`".into(),
            ));
        }
        self.flush_tables(None).await?;
        let state = self.refresh().await?;
        let now = Timestamp::now();
        let crowded: Vec<String> = state
            .tables
            .iter()
            .filter(|(_, (e, d))| {
                crate::compaction_policy::depth(&crate::scan::tablet_ranges(e), &d.chunks)
                    > AUTO_COMPACTION_CHUNKS
                    || crate::compaction::periodic_compaction_due(e, d, now)
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
                new_chunk_path(&entry.id, "tail"),
                &entry.schema,
                &refs,
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
        };
        let body = serde_json::to_vec(&manifest).map_err(|e| Error::Invalid(e.to_string()))?;
        let bytes = crate::checksum::frame(&body);
        let opts = PutOptions {
            mode: PutMode::Create,
            ..Default::default()
        };
        match self
            .objects
            .put_opts(&manifest_path(state.seq), PutPayload::from(bytes), opts)
            .await
        {
            Ok(_) | Err(object_store::Error::AlreadyExists { .. }) => {}
            Err(e) => return Err(e.into()),
        }
        self.collect_garbage().await?;
        self.collect_transactions().await?;
        Ok(state.seq)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::TableOptions;
    use dynql_core::{TableSchema, Value};

    fn schema() -> TableSchema {
        TableSchema::parse("[{name=k;type=int64;sort_order=ascending};{name=v;type=string};{name=n;type=int64;aggregate=sum}]").unwrap()
    }

    #[tokio::test]
    async fn reopening_from_a_checkpoint_and_the_log_tail_gives_the_same_state() {
        let dir = tempfile::tempdir().unwrap();
        let url = format!("file://{}", dir.path().display());
        let s = Store::open(&url).unwrap();
        s.create_table("//t", schema(), TableOptions::default())
            .await
            .unwrap();
        let ordered = TableSchema::parse("[{name=a;type=string}]").unwrap();
        s.create_table("//q", ordered, TableOptions::default())
            .await
            .unwrap();
        let row = |k: i64, v: Option<&[u8]>, n: Option<i64>| {
            vec![
                Some(Value::Int64(k)),
                v.map(|v| Value::String(v.to_vec())),
                n.map(Value::Int64),
            ]
        };
        let t1 = s
            .write_rows(
                "//t",
                WriteKind::Overwrite,
                false,
                vec![row(1, Some(b"\xff\x00"), Some(1)), row(2, Some(b"b"), None)],
            )
            .await
            .unwrap();
        s.write_rows("//t", WriteKind::Update, true, vec![row(1, None, Some(5))])
            .await
            .unwrap();
        s.write_rows(
            "//t",
            WriteKind::Delete,
            false,
            vec![vec![Some(Value::Int64(2)), None, None]],
        )
        .await
        .unwrap();
        s.append_rows("//q", vec![(None, vec![Some(Value::string("x"))])])
            .await
            .unwrap();
        s.append_rows(
            "//q",
            vec![
                (Some(0), vec![Some(Value::string("y"))]),
                (Some(0), vec![Some(Value::string("z"))]),
            ],
        )
        .await
        .unwrap();
        s.trim_rows("//q", 0, 1).await.unwrap();
        let tx = s.start_transaction(60_000).await.unwrap();
        s.lock_rows_in(
            &tx.id,
            "//t",
            LockMode::Exclusive,
            vec![],
            vec![vec![Value::Int64(1)]],
        )
        .await
        .unwrap();
        s.commit_transaction(&tx.id).await.unwrap();
        let seq = s.checkpoint().await.unwrap();
        assert!(seq > 0);
        s.write_rows(
            "//t",
            WriteKind::Overwrite,
            false,
            vec![row(3, Some(b"c"), None)],
        )
        .await
        .unwrap();

        let reopened = Store::open(&url).unwrap();
        for path in ["//t", "//q"] {
            for ts in [t1, Timestamp::MAX] {
                assert_eq!(
                    reopened.read_rows(path, ts).await.unwrap(),
                    s.read_rows(path, ts).await.unwrap(),
                    "{path} at {ts}"
                );
            }
        }
        assert_eq!(
            reopened.queue_tablets("//q").await.unwrap(),
            s.queue_tablets("//q").await.unwrap()
        );
        assert_eq!(
            reopened
                .read_rows("//q", Timestamp::MAX)
                .await
                .unwrap()
                .len(),
            2
        );
        let state = reopened.refresh().await.unwrap();
        assert!(state.committed_transactions.contains(&tx.id));
        assert_eq!(state.tables["//t"].1.locks.len(), 1);
    }

    #[tokio::test]
    async fn old_checkpoints_and_their_chunks_are_collected() {
        let dir = tempfile::tempdir().unwrap();
        let url = format!("file://{}", dir.path().display());
        let s = Store::open(&url).unwrap().with_gc_grace_ms(0);
        // Chunks counted here are the checkpoints' alone.
        let options = TableOptions {
            enable_compaction_and_partitioning: Some(false),
            ..TableOptions::default()
        };
        s.create_table("//t", schema(), options).await.unwrap();
        let write_and_checkpoint = |i: i64| {
            let s = s.clone();
            async move {
                s.write_rows(
                    "//t",
                    WriteKind::Overwrite,
                    false,
                    vec![vec![Some(Value::Int64(i)), None, None]],
                )
                .await
                .unwrap();
                s.checkpoint().await.unwrap();
            }
        };
        for i in 0..4 {
            write_and_checkpoint(i).await;
        }
        let count = |d: &str| walk(&dir.path().join(d));
        assert_eq!(count("_checkpoints"), 2);
        // One flush chunk per checkpoint, all live.
        assert_eq!(count("tables"), 4);
        s.compact("//t").await.unwrap();
        for i in 4..6 {
            write_and_checkpoint(i).await;
        }
        // The four flushed chunks were replaced by the compacted one; once no kept checkpoint
        // or log record names them they are gone.
        assert_eq!(count("_checkpoints"), 2);
        assert_eq!(count("tables"), 3);
        assert_eq!(
            Store::open(&url)
                .unwrap()
                .read_rows("//t", Timestamp::MAX)
                .await
                .unwrap()
                .len(),
            6
        );
    }

    fn walk(p: &std::path::Path) -> usize {
        std::fs::read_dir(p)
            .map(|rd| {
                rd.flatten()
                    .map(|e| {
                        if e.path().is_dir() {
                            walk(&e.path())
                        } else {
                            1
                        }
                    })
                    .sum()
            })
            .unwrap_or(0)
    }

    #[tokio::test]
    async fn a_reader_behind_a_collected_log_reloads_the_checkpoint() {
        let dir = tempfile::tempdir().unwrap();
        let url = format!("file://{}", dir.path().display());
        let writer = Store::open(&url).unwrap();
        writer
            .create_table("//t", schema(), TableOptions::default())
            .await
            .unwrap();
        let reader = Store::open(&url).unwrap();
        assert_eq!(
            reader.read_rows("//t", Timestamp::MAX).await.unwrap().len(),
            0
        );
        for i in 0..5 {
            writer
                .write_rows(
                    "//t",
                    WriteKind::Overwrite,
                    false,
                    vec![vec![Some(Value::Int64(i)), None, None]],
                )
                .await
                .unwrap();
            writer.checkpoint().await.unwrap();
        }
        assert_eq!(
            reader.read_rows("//t", Timestamp::MAX).await.unwrap().len(),
            5
        );
    }

    #[tokio::test]
    async fn the_last_compaction_survives_a_checkpoint_and_paces_auto_compaction_period() {
        let dir = tempfile::tempdir().unwrap();
        let url = format!("file://{}", dir.path().display());
        let s = Store::open(&url).unwrap();
        let options = TableOptions {
            auto_compaction_period: Some(3_600_000),
            ..TableOptions::default()
        };
        s.create_table("//t", schema(), options).await.unwrap();
        s.write_rows(
            "//t",
            WriteKind::Overwrite,
            false,
            vec![vec![Some(Value::Int64(1)), None, None]],
        )
        .await
        .unwrap();
        let due = |s: &Store| {
            let s = s.clone();
            async move {
                let state = s.refresh().await.unwrap();
                let (e, d) = &state.tables["//t"];
                (
                    crate::compaction::periodic_compaction_due(e, d, Timestamp::now()),
                    d.last_compaction,
                )
            }
        };
        // Never compacted, with data: due.
        assert!(due(&s).await.0);
        s.compact("//t").await.unwrap();
        let (is_due, last) = due(&s).await;
        assert!(!is_due && last > Timestamp::MIN);
        // A checkpoint, then a store opened from it (the log before it collected), keep it.
        s.checkpoint().await.unwrap();
        let reopened = Store::open(&url).unwrap();
        assert_eq!(due(&reopened).await, (false, last));
    }

    #[tokio::test]
    async fn checkpoints_compact_crowded_tables() {
        let s = Store::open("memory://").unwrap();
        let schema =
            TableSchema::parse("[{name=k;type=int64;sort_order=ascending};{name=v;type=int64}]")
                .unwrap();
        let options = TableOptions {
            retention: crate::compaction::Retention {
                min_data_ttl: 0,
                max_data_ttl: 0,
                ..Default::default()
            },
            // The checkpoints' rule alone.
            enable_compaction_and_partitioning: Some(false),
            ..TableOptions::default()
        };
        s.create_table("//t", schema.clone(), options.clone())
            .await
            .unwrap();
        // Every checkpoint flushes the new layer into a chunk; the one that finds more than
        // AUTO_COMPACTION_CHUNKS chunks compacts them into one.
        for layer in 0..=AUTO_COMPACTION_CHUNKS as i64 {
            let rows = (0..50)
                .map(|k| vec![Some(Value::Int64(k)), Some(Value::Int64(layer))])
                .collect();
            s.write_rows("//t", WriteKind::Overwrite, false, rows)
                .await
                .unwrap();
            s.checkpoint().await.unwrap();
            let chunks = s.refresh().await.unwrap().tables["//t"].1.chunks.len();
            if layer < AUTO_COMPACTION_CHUNKS as i64 {
                assert_eq!(chunks, layer as usize + 1);
                assert_eq!(
                    s.version_count("//t").await.unwrap(),
                    50 * (layer as usize + 1)
                );
            } else {
                assert_eq!(chunks, 1);
            }
        }
        assert_eq!(s.version_count("//t").await.unwrap(), 50);
        // Chunks of keys that do not overlap are one layer, however many: left as they are.
        s.create_table("//wide", schema.clone(), options.clone())
            .await
            .unwrap();
        for layer in 0..=AUTO_COMPACTION_CHUNKS as i64 + 2 {
            let rows = (layer * 100..layer * 100 + 50)
                .map(|k| vec![Some(Value::Int64(k)), Some(Value::Int64(layer))])
                .collect();
            s.write_rows("//wide", WriteKind::Overwrite, false, rows)
                .await
                .unwrap();
            s.checkpoint().await.unwrap();
        }
        let wide = s.refresh().await.unwrap().tables["//wide"].1.chunks.len();
        assert_eq!(wide, AUTO_COMPACTION_CHUNKS + 3);
        let last = AUTO_COMPACTION_CHUNKS as i64;
        assert!(s
            .read_rows("//t", Timestamp::MAX)
            .await
            .unwrap()
            .iter()
            .all(|r| r[1] == Value::Int64(last)));
    }

    #[tokio::test]
    async fn checkpoints_trim_expired_rows_of_ordered_tables() {
        let s = Store::open("memory://").unwrap();
        let queue = TableSchema::parse("[{name=a;type=int64}]").unwrap();
        let options = |min_data_versions| TableOptions {
            retention: crate::compaction::Retention {
                min_data_versions,
                max_data_versions: min_data_versions,
                min_data_ttl: 0,
                max_data_ttl: 0,
            },
            ..TableOptions::default()
        };
        s.create_table("//expiring", queue.clone(), options(0))
            .await
            .unwrap();
        s.create_table("//kept", queue, options(1)).await.unwrap();
        for path in ["//expiring", "//kept"] {
            s.append_rows(path, vec![(None, vec![Some(Value::Int64(1))])])
                .await
                .unwrap();
        }
        s.checkpoint().await.unwrap();
        // min_data_versions = 0 with both ttls 0: the row may go; min_data_versions > 0 keeps
        // everything.
        assert!(s
            .read_rows("//expiring", Timestamp::MAX)
            .await
            .unwrap()
            .is_empty());
        assert_eq!(
            s.queue_tablets("//expiring").await.unwrap()[0].trimmed_row_count,
            1
        );
        assert_eq!(
            s.read_rows("//kept", Timestamp::MAX).await.unwrap().len(),
            1
        );
    }

    #[tokio::test]
    async fn a_corrupt_chunk_is_a_clear_error_and_the_log_is_untouched() {
        let dir = tempfile::tempdir().unwrap();
        let url = format!("file://{}", dir.path().display());
        let s = Store::open(&url).unwrap();
        s.create_table("//t", schema(), TableOptions::default())
            .await
            .unwrap();
        s.write_rows(
            "//t",
            WriteKind::Overwrite,
            false,
            vec![vec![Some(Value::Int64(1)), None, None]],
        )
        .await
        .unwrap();
        s.checkpoint().await.unwrap();
        let tables = dir.path().join("tables");
        let table_dir = std::fs::read_dir(&tables)
            .unwrap()
            .next()
            .unwrap()
            .unwrap()
            .path();
        let chunk = std::fs::read_dir(&table_dir)
            .unwrap()
            .next()
            .unwrap()
            .unwrap()
            .path();
        std::fs::write(&chunk, b"PAR1 not really parquet").unwrap();
        let err = Store::open(&url)
            .unwrap()
            .read_rows("//t", Timestamp::MAX)
            .await
            .unwrap_err();
        assert!(matches!(err, Error::Corrupt { .. }), "{err}");
        assert!(
            err.to_string().contains(".parquet"),
            "the error names the chunk: {err}"
        );
        // The log still holds every commit (create, write, flush).
        assert_eq!(
            std::fs::read_dir(dir.path().join("_log")).unwrap().count(),
            3
        );
    }

    #[tokio::test]
    async fn manifests_written_before_checksums_still_load() {
        let dir = tempfile::tempdir().unwrap();
        let url = format!("file://{}", dir.path().display());
        let s = Store::open(&url).unwrap();
        s.create_table("//t", schema(), TableOptions::default())
            .await
            .unwrap();
        let seq = s.checkpoint().await.unwrap();
        let path = dir
            .path()
            .join("_checkpoints")
            .join(format!("{seq:020}.json"));
        let framed = std::fs::read(&path).unwrap();
        let body = &framed[framed.iter().position(|b| *b == b'\n').unwrap() + 1..];
        std::fs::write(&path, body).unwrap();
        assert!(Store::open(&url).unwrap().table("//t").await.is_ok());
    }

    #[tokio::test]
    async fn a_corrupt_checkpoint_is_a_clear_error() {
        let dir = tempfile::tempdir().unwrap();
        let url = format!("file://{}", dir.path().display());
        let s = Store::open(&url).unwrap();
        s.create_table("//t", schema(), TableOptions::default())
            .await
            .unwrap();
        let seq = s.checkpoint().await.unwrap();
        std::fs::write(
            dir.path()
                .join("_checkpoints")
                .join(format!("{seq:020}.json")),
            b"[",
        )
        .unwrap();
        let err = Store::open(&url).unwrap().tables().await.unwrap_err();
        assert!(matches!(err, Error::Corrupt { .. }), "{err}");
    }
}
