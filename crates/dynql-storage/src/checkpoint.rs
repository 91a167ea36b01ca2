//! Checkpoints: the replayed state as of a log position, so that opening a store reads the
//! latest checkpoint and only the log records after it.
//!
//! ```text
//! <root>/_checkpoints/<seq:020>.json          catalog, committed transactions, locks, chunk per table
//! <root>/tables/<table-id>/<seq>-<id>.parquet versioned rows of one table as of <seq>
//! ```
//!
//! A versioned chunk holds the schema columns plus `$timestamp` (commit timestamp), `$kind`
//! (0 overwrite, 1 update, 2 delete), `$aggregate` and `$written` (one bit per column: YT tells
//! "not written" from null), sorted by key then timestamp. The manifest is created with
//! `PutMode::Create` after its chunks, so a checkpoint is either complete or absent. The two
//! newest checkpoints are kept; older ones and the chunks only they name are deleted.

use std::collections::{BTreeMap, BTreeSet, HashSet};
use std::sync::Arc;

use arrow::array::{Array, BinaryArray, BooleanArray, UInt64Array, UInt8Array};
use arrow::datatypes::{DataType, Field, Schema, SchemaRef};
use arrow::record_batch::RecordBatch;
use futures::TryStreamExt;
use object_store::path::Path as ObjectPath;
use object_store::{ObjectStore, ObjectStoreExt, PutMode, PutOptions, PutPayload};
use serde::{Deserialize, Serialize};

use dynql_core::arrow_convert::{array_value, table_arrow_schema, values_to_array};
use dynql_core::{TableSchema, Value, Yson};

use crate::chunk::{decode_chunk, encode_chunk};
use crate::conflict::{LockDelta, LockMode};
use crate::error::{Error, Result};
use crate::mvcc::{RowDelta, WriteKind};
use crate::store::{fresh_id, KeyOrd, State, Store, TableData, TableEntry};
use crate::timestamp::Timestamp;

const CHECKPOINT_DIR: &str = "_checkpoints";

/// Tables with fewer stored versions are not compacted automatically.
pub const AUTO_COMPACTION_MIN_VERSIONS: usize = 1024;

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
    /// The versioned chunk, absent for an empty table.
    chunk: Option<String>,
    locks: Vec<LockRecord>,
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

fn kind_code(k: WriteKind) -> u8 {
    match k {
        WriteKind::Overwrite => 0,
        WriteKind::Update => 1,
        WriteKind::Delete => 2,
    }
}

fn versioned_schema(schema: &TableSchema) -> SchemaRef {
    let mut fields: Vec<Field> = table_arrow_schema(schema)
        .fields()
        .iter()
        .map(|f| f.as_ref().clone())
        .collect();
    fields.push(Field::new("$timestamp", DataType::UInt64, false));
    fields.push(Field::new("$kind", DataType::UInt8, false));
    fields.push(Field::new("$aggregate", DataType::Boolean, false));
    fields.push(Field::new("$written", DataType::Binary, false));
    Arc::new(Schema::new(fields))
}

/// Encodes versioned rows (key order, then commit order) as one record batch.
pub(crate) fn encode_versions(schema: &TableSchema, deltas: &[&RowDelta]) -> Result<RecordBatch> {
    let width = schema.columns().len();
    let mut columns = Vec::with_capacity(width + 4);
    for (i, c) in schema.columns().iter().enumerate() {
        let values: Vec<Value> = deltas
            .iter()
            .map(|d| d.values[i].clone().unwrap_or(Value::Null))
            .collect();
        let refs: Vec<&Value> = values.iter().collect();
        columns.push(values_to_array(c.wire_type(), &refs)?);
    }
    columns.push(Arc::new(UInt64Array::from_iter_values(
        deltas.iter().map(|d| d.timestamp.0),
    )) as _);
    columns.push(Arc::new(UInt8Array::from_iter_values(
        deltas.iter().map(|d| kind_code(d.kind)),
    )) as _);
    columns.push(Arc::new(BooleanArray::from(
        deltas.iter().map(|d| d.aggregate).collect::<Vec<_>>(),
    )) as _);
    let bitmaps: Vec<Vec<u8>> = deltas
        .iter()
        .map(|d| {
            let mut bits = vec![0u8; width.div_ceil(8)];
            for (i, v) in d.values.iter().enumerate() {
                if v.is_some() {
                    bits[i / 8] |= 1 << (i % 8);
                }
            }
            bits
        })
        .collect();
    columns.push(Arc::new(BinaryArray::from_iter_values(bitmaps.iter())) as _);
    Ok(RecordBatch::try_new(versioned_schema(schema), columns)?)
}

pub(crate) fn decode_versions(
    path: &str,
    schema: &TableSchema,
    batch: &RecordBatch,
) -> Result<Vec<RowDelta>> {
    let corrupt = |m: &str| Error::Corrupt {
        path: path.to_string(),
        message: m.to_string(),
    };
    let width = schema.columns().len();
    if batch.num_columns() != width + 4 {
        return Err(corrupt(
            "versioned chunk has an unexpected number of columns",
        ));
    }
    let ts = batch
        .column(width)
        .as_any()
        .downcast_ref::<UInt64Array>()
        .ok_or_else(|| corrupt("bad $timestamp"))?;
    let kinds = batch
        .column(width + 1)
        .as_any()
        .downcast_ref::<UInt8Array>()
        .ok_or_else(|| corrupt("bad $kind"))?;
    let aggs = batch
        .column(width + 2)
        .as_any()
        .downcast_ref::<BooleanArray>()
        .ok_or_else(|| corrupt("bad $aggregate"))?;
    let written = batch
        .column(width + 3)
        .as_any()
        .downcast_ref::<BinaryArray>()
        .ok_or_else(|| corrupt("bad $written"))?;
    let mut out = Vec::with_capacity(batch.num_rows());
    for r in 0..batch.num_rows() {
        let bits = written.value(r);
        let kind = match kinds.value(r) {
            0 => WriteKind::Overwrite,
            1 => WriteKind::Update,
            2 => WriteKind::Delete,
            _ => return Err(corrupt("bad $kind value")),
        };
        let values = schema
            .columns()
            .iter()
            .enumerate()
            .map(|(i, c)| {
                let set = bits.get(i / 8).is_some_and(|b| b & (1 << (i % 8)) != 0);
                set.then(|| array_value(batch.column(i).as_ref(), c.wire_type(), r))
            })
            .collect();
        out.push(RowDelta {
            timestamp: Timestamp(ts.value(r)),
            kind,
            values,
            aggregate: aggs.value(r) && !aggs.is_null(r),
        });
    }
    Ok(out)
}

fn key_text(key: &[Value]) -> String {
    dynql_core::yson::to_text(&Yson::List(key.iter().map(Value::to_yson).collect()))
}

fn key_from_text(path: &str, text: &str) -> Result<Vec<Value>> {
    let corrupt = |m: String| Error::Corrupt {
        path: path.to_string(),
        message: m,
    };
    match dynql_core::yson::parse(text.as_bytes()).map_err(|e| corrupt(e.to_string()))? {
        Yson::List(items) => Ok(items
            .iter()
            .map(|y| match y {
                Yson::Entity => Value::Null,
                Yson::Int64(v) => Value::Int64(*v),
                Yson::Uint64(v) => Value::Uint64(*v),
                Yson::Double(v) => Value::Double(*v),
                Yson::Boolean(v) => Value::Boolean(*v),
                Yson::String(v) => Value::String(v.clone()),
                other => Value::Any(dynql_core::yson::to_text(other).into_bytes()),
            })
            .collect()),
        _ => Err(corrupt("a lock key is not a list".into())),
    }
}

/// Loads the newest checkpoint, if any.
pub(crate) async fn load_latest(objects: &dyn ObjectStore) -> Result<Option<State>> {
    let prefix = ObjectPath::from(CHECKPOINT_DIR);
    let metas: Vec<_> = objects.list(Some(&prefix)).try_collect().await?;
    let newest = metas
        .iter()
        .filter_map(|m| {
            let name = m.location.filename()?;
            name.strip_suffix(".json")?
                .parse::<u64>()
                .ok()
                .map(|seq| (seq, m.location.clone()))
        })
        .max_by_key(|(seq, _)| *seq);
    let Some((seq, location)) = newest else {
        return Ok(None);
    };
    let corrupt = |m: String| Error::Corrupt {
        path: location.to_string(),
        message: m,
    };
    let bytes = objects.get(&location).await?.bytes().await?;
    let manifest: Manifest = serde_json::from_slice(&bytes).map_err(|e| corrupt(e.to_string()))?;
    if manifest.seq != seq {
        return Err(corrupt(format!("manifest names sequence {}", manifest.seq)));
    }
    let mut state = State {
        seq: manifest.seq,
        last_timestamp: Timestamp(manifest.last_timestamp),
        tables: BTreeMap::new(),
        committed_transactions: manifest
            .committed_transactions
            .into_iter()
            .collect::<HashSet<_>>(),
    };
    for t in manifest.tables {
        let schema = t.entry.schema.clone();
        let key_count = schema.key_column_count();
        let mut data = TableData::default();
        if let Some(chunk) = &t.chunk {
            let bytes = objects
                .get(&ObjectPath::from(chunk.as_str()))
                .await?
                .bytes()
                .await?;
            for batch in decode_chunk(chunk, bytes)? {
                for d in decode_versions(chunk, &schema, &batch)? {
                    data.push_version(key_count, d);
                }
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
    Ok(Some(state))
}

impl Store {
    /// Writes a checkpoint of the current state and deletes checkpoints older than the
    /// previous one. Returns its log position.
    pub async fn checkpoint(&self) -> Result<u64> {
        // Automatic compaction: a table holding more than twice as many versions as keys
        // (and enough of them to matter) is compacted before it is checkpointed.
        let state = self.refresh().await?;
        let crowded: Vec<String> = state
            .tables
            .iter()
            .filter(|(_, (_, d))| {
                let versions: usize = d.sorted.values().map(Vec::len).sum();
                versions >= AUTO_COMPACTION_MIN_VERSIONS && versions > 2 * d.sorted.len()
            })
            .map(|(p, _)| p.clone())
            .collect();
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
                data.ordered
                    .iter()
                    .map(|(ts, r)| RowDelta {
                        timestamp: *ts,
                        kind: WriteKind::Overwrite,
                        values: r.iter().cloned().map(Some).collect(),
                        aggregate: false,
                    })
                    .collect()
            };
            let chunk = if deltas.is_empty() {
                None
            } else {
                let refs: Vec<&RowDelta> = deltas.iter().collect();
                let batch = encode_versions(&entry.schema, &refs)?;
                let bytes = encode_chunk(&batch.schema(), &[batch])?;
                let chunk_path = format!(
                    "tables/{}/{:020}-{}.parquet",
                    entry.id,
                    state.seq,
                    fresh_id()
                );
                self.objects
                    .put(
                        &ObjectPath::from(chunk_path.as_str()),
                        PutPayload::from(bytes),
                    )
                    .await?;
                Some(chunk_path)
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
                locks,
            });
        }
        let manifest = Manifest {
            seq: state.seq,
            last_timestamp: state.last_timestamp.0,
            committed_transactions: state.committed_transactions.iter().cloned().collect(),
            tables,
        };
        let bytes = serde_json::to_vec(&manifest).map_err(|e| Error::Invalid(e.to_string()))?;
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
        Ok(state.seq)
    }

    /// Deletes checkpoints older than the two newest, and chunks no kept checkpoint names.
    async fn collect_garbage(&self) -> Result<()> {
        let prefix = ObjectPath::from(CHECKPOINT_DIR);
        let metas: Vec<_> = self.objects.list(Some(&prefix)).try_collect().await?;
        let mut seqs: Vec<(u64, ObjectPath)> = metas
            .iter()
            .filter_map(|m| {
                let seq = m
                    .location
                    .filename()?
                    .strip_suffix(".json")?
                    .parse::<u64>()
                    .ok()?;
                Some((seq, m.location.clone()))
            })
            .collect();
        seqs.sort_by_key(|(s, _)| std::cmp::Reverse(*s));
        let mut referenced = HashSet::new();
        for (_, location) in seqs.iter().take(2) {
            let bytes = self.objects.get(location).await?.bytes().await?;
            let manifest: Manifest =
                serde_json::from_slice(&bytes).map_err(|e| Error::Corrupt {
                    path: location.to_string(),
                    message: e.to_string(),
                })?;
            referenced.extend(manifest.tables.into_iter().filter_map(|t| t.chunk));
        }
        for (_, location) in seqs.iter().skip(2) {
            self.objects.delete(location).await?;
        }
        // Log records covered by the older kept checkpoint are no longer needed to open the
        // store; a reader still behind them reloads a checkpoint.
        if let Some((oldest_kept, _)) = seqs.get(1) {
            let records: Vec<_> = self
                .objects
                .list(Some(&ObjectPath::from(crate::log::LOG_DIR)))
                .try_collect()
                .await?;
            for r in records {
                let seq = r
                    .location
                    .filename()
                    .and_then(|f| f.strip_suffix(".json"))
                    .and_then(|s| s.parse::<u64>().ok());
                if seq.is_some_and(|s| s <= *oldest_kept) {
                    self.objects.delete(&r.location).await?;
                }
            }
        }
        // Write chunks (large writes) are needed while a remaining log record names them; an
        // unnamed one is an abandoned or in-flight write, deleted after a grace period.
        let mut named_by_log = HashSet::new();
        let records: Vec<_> = self
            .objects
            .list(Some(&ObjectPath::from(crate::log::LOG_DIR)))
            .try_collect()
            .await?;
        for r in records {
            let bytes = match self.objects.get(&r.location).await {
                Ok(g) => g.bytes().await?,
                Err(object_store::Error::NotFound { .. }) => continue,
                Err(e) => return Err(e.into()),
            };
            if let Ok(record) = serde_json::from_slice::<crate::log::CommitRecord>(&bytes) {
                for a in record.actions {
                    if let crate::log::Action::WriteRows { chunk: Some(c), .. } = a {
                        named_by_log.insert(c);
                    }
                }
            }
        }
        let chunks: Vec<_> = self
            .objects
            .list(Some(&ObjectPath::from("tables")))
            .try_collect()
            .await?;
        let grace_ms = 3_600_000;
        let now_ms = crate::compaction::timestamp_ms(Timestamp::now());
        for c in chunks {
            let name = c.location.filename().unwrap_or_default();
            if let Some(rest) = name.strip_prefix("write-") {
                let written_ms = rest
                    .split('-')
                    .next()
                    .and_then(|s| s.parse::<u64>().ok())
                    .unwrap_or(u64::MAX);
                if !named_by_log.contains(c.location.as_ref())
                    && written_ms.saturating_add(grace_ms) < now_ms
                {
                    self.objects.delete(&c.location).await?;
                }
                continue;
            }
            if !referenced.contains(c.location.as_ref()) {
                // Only chunks older than the kept checkpoints: a chunk being written for a new
                // checkpoint is named after a seq above them.
                let name = c.location.filename().unwrap_or_default();
                let chunk_seq = name
                    .split('-')
                    .next()
                    .and_then(|s| s.parse::<u64>().ok())
                    .unwrap_or(u64::MAX);
                if seqs
                    .get(1)
                    .is_some_and(|(oldest_kept, _)| chunk_seq < *oldest_kept)
                {
                    self.objects.delete(&c.location).await?;
                }
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::TableOptions;

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
        s.write_rows(
            "//q",
            WriteKind::Overwrite,
            false,
            vec![vec![Some(Value::string("x"))]],
        )
        .await
        .unwrap();
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
        let state = reopened.refresh().await.unwrap();
        assert!(state.committed_transactions.contains(&tx.id));
        assert_eq!(state.tables["//t"].1.locks.len(), 1);
    }

    #[tokio::test]
    async fn old_checkpoints_and_their_chunks_are_collected() {
        let dir = tempfile::tempdir().unwrap();
        let url = format!("file://{}", dir.path().display());
        let s = Store::open(&url).unwrap();
        s.create_table("//t", schema(), TableOptions::default())
            .await
            .unwrap();
        for i in 0..4 {
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
        let count = |d: &str| walk(&dir.path().join(d));
        assert_eq!(count("_checkpoints"), 2);
        assert_eq!(count("tables"), 2);
        assert_eq!(
            Store::open(&url)
                .unwrap()
                .read_rows("//t", Timestamp::MAX)
                .await
                .unwrap()
                .len(),
            4
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
            ..TableOptions::default()
        };
        s.create_table("//t", schema, options).await.unwrap();
        for layer in 0..3 {
            let rows = (0..400)
                .map(|k| vec![Some(Value::Int64(k)), Some(Value::Int64(layer))])
                .collect();
            s.write_rows("//t", WriteKind::Overwrite, false, rows)
                .await
                .unwrap();
        }
        assert_eq!(s.version_count("//t").await.unwrap(), 1200);
        s.checkpoint().await.unwrap();
        assert_eq!(s.version_count("//t").await.unwrap(), 400);
        assert!(s
            .read_rows("//t", Timestamp::MAX)
            .await
            .unwrap()
            .iter()
            .all(|r| r[1] == Value::Int64(2)));
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
        // The log still holds every commit.
        assert_eq!(
            std::fs::read_dir(dir.path().join("_log")).unwrap().count(),
            2
        );
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
