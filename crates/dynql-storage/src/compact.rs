//! Streaming compaction of a sorted table, tablet by tablet: a k-way merge of the tablet's
//! chunks (each read a row group at a time) and its dynamic-store versions, retention applied
//! to each key's history as it comes ([`compact_versions`]), the kept versions written as
//! chunks as they come.
//!
//! ```text
//! tablet i: chunk 1 ─ row group ▶┐
//!           chunk 2 ─ row group ▶├─ merge by key ─▶ compact_versions ─▶ VersionChunkWriter
//!           dynamic store ──────▶┘   (commit order)                      (row group by row group,
//!                                                                          a chunk per BULK_CHUNK_ROWS)
//! ```
//!
//! Memory: one decoded row group per chunk of the tablet, one output row group and one
//! chunk's encoding; not the table. Row groups are read with ranged requests and are not
//! cached (a compaction reads everything once).

use arrow::array::{Array, UInt64Array};
use dynql_core::TableSchema;

use crate::bulk::BULK_CHUNK_ROWS;
use crate::chunk::{encode_versions, new_chunk_path, ChunkEncoder, ROW_GROUP_ROWS};
use crate::compact_source::{copies_clean_groups, in_range, ChunkSource, CleanGroup, Head};
use crate::error::Result;
use crate::kernel::catalog::TableEntry;
use crate::kernel::chunk_ref::{
    clean_since, compare_version_keys, nan_columns, version_key, ChunkRef, Cleanliness, RowGroupRef,
};
use crate::kernel::mvcc::RowDelta;
use crate::kernel::retention::{compact_recent_versions, compact_versions};
use crate::kernel::timestamp::Timestamp;
use crate::scan_plan::tablet_ranges;
use crate::state::TableData;
use crate::store::Store;

/// Whether `auto_compaction_period` asks for a full compaction of the table at `now`: its last
/// full compaction (ever, for a table never compacted) is at least the period old, and it has
/// stored data.
pub(crate) fn periodic_compaction_due(
    entry: &crate::kernel::catalog::TableEntry,
    data: &crate::state::TableData,
    now: Timestamp,
) -> bool {
    entry.auto_compaction_period.is_some_and(|period| {
        crate::kernel::retention::timestamp_ms(now)
            .saturating_sub(crate::kernel::retention::timestamp_ms(data.last_compaction))
            >= period
            && (!data.chunks.is_empty()
                || !data.sorted.is_empty()
                || data.queues.iter().any(|q| !q.rows.is_empty()))
    })
}

/// Versions written as one chunk, a row group at a time (see the module docs).
pub(crate) struct VersionChunkWriter {
    path: String,
    schema: TableSchema,
    encoder: ChunkEncoder,
    pending: Vec<RowDelta>,
    rows: u64,
    row_groups: Vec<RowGroupRef>,
    min_key: Vec<dynql_core::Value>,
    max_key: Vec<dynql_core::Value>,
    min_timestamp: u64,
    max_timestamp: u64,
    key_filter: Option<crate::key_filter::KeyFilterBuilder>,
}

impl VersionChunkWriter {
    pub(crate) fn new(
        path: String,
        schema: &TableSchema,
        key_filters: Vec<(usize, u8)>,
        codec: crate::kernel::codec::CompressionCodec,
    ) -> Result<VersionChunkWriter> {
        Ok(VersionChunkWriter {
            key_filter: crate::key_filter::KeyFilterBuilder::new(key_filters),
            path,
            schema: schema.clone(),
            encoder: ChunkEncoder::for_table(schema, &[], 0, codec)?,
            pending: Vec::with_capacity(ROW_GROUP_ROWS),
            rows: 0,
            row_groups: Vec::new(),
            min_key: Vec::new(),
            max_key: Vec::new(),
            min_timestamp: u64::MAX,
            max_timestamp: 0,
        })
    }

    /// Versions written or pending.
    fn rows(&self) -> u64 {
        self.rows + self.pending.len() as u64
    }

    pub(crate) fn push(&mut self, version: RowDelta) -> Result<()> {
        self.pending.push(version);
        if self.pending.len() == ROW_GROUP_ROWS {
            self.write_row_group()?;
        }
        Ok(())
    }

    /// Encodes the pending versions as the chunk's next row group (the encoder cuts one
    /// every ROW_GROUP_ROWS rows: exactly these).
    fn write_row_group(&mut self) -> Result<()> {
        let (Some(first), Some(last)) = (self.pending.first(), self.pending.last()) else {
            return Ok(());
        };
        let key_count = self.schema.key_column_count();
        let refs: Vec<&RowDelta> = self.pending.iter().collect();
        let group = RowGroupRef {
            rows: refs.len() as u64,
            min_key: version_key(first, key_count),
            max_key: version_key(last, key_count),
            clean: match clean_since(&self.schema, &refs) {
                Some(t) => Cleanliness::Since(t),
                None => Cleanliness::Dirty,
            },
            nan_columns: Some(nan_columns(&self.schema, &refs)),
        };
        if self.rows == 0 {
            self.min_key = group.min_key.clone();
        }
        self.max_key = group.max_key.clone();
        for d in &self.pending {
            self.min_timestamp = self.min_timestamp.min(d.timestamp.0);
            self.max_timestamp = self.max_timestamp.max(d.timestamp.0);
        }
        if let Some(filter) = &mut self.key_filter {
            for d in &refs {
                filter.add(&version_key(d, key_count));
            }
            filter.finish_group();
        }
        self.encoder.write(&encode_versions(&self.schema, &refs)?)?;
        self.rows += refs.len() as u64;
        self.row_groups.push(group);
        self.pending.clear();
        Ok(())
    }

    /// Writes a clean row group as the chunk's next row group, as it is (versions pending
    /// before it become a row group of their own).
    pub(crate) fn push_clean(&mut self, clean: CleanGroup) -> Result<()> {
        self.write_row_group()?;
        self.encoder.end_row_group()?;
        let CleanGroup { batch, group } = clean;
        let width = self.schema.columns().len();
        if let Some(timestamps) = batch.column(width).as_any().downcast_ref::<UInt64Array>() {
            let (min, max) = (
                arrow::compute::min(timestamps),
                arrow::compute::max(timestamps),
            );
            self.min_timestamp = self.min_timestamp.min(min.unwrap_or(u64::MAX));
            self.max_timestamp = self.max_timestamp.max(max.unwrap_or(0));
        }
        if let Some(filter) = &mut self.key_filter {
            let key_count = self.schema.key_column_count();
            let types: Vec<_> = self.schema.columns()[..key_count]
                .iter()
                .map(|c| c.wire_type())
                .collect();
            for r in 0..batch.num_rows() {
                let key: Vec<dynql_core::Value> = (0..key_count)
                    .map(|c| {
                        dynql_core::arrow_convert::array_value(
                            batch.column(c).as_ref(),
                            types[c],
                            r,
                        )
                    })
                    .collect();
                filter.add(&key);
            }
            filter.finish_group();
        }
        if self.rows == 0 {
            self.min_key = group.min_key.clone();
        }
        self.max_key = group.max_key.clone();
        self.encoder.write(&batch)?;
        self.encoder.end_row_group()?;
        self.rows += group.rows;
        self.row_groups.push(group);
        Ok(())
    }

    /// Uploads the chunk; `None` when it holds no version.
    pub(crate) async fn finish(mut self, store: &Store) -> Result<Option<ChunkRef>> {
        self.write_row_group()?;
        if self.rows == 0 {
            return Ok(None);
        }
        let (bytes, checksum) = self.encoder.finish()?;
        let size = bytes.len() as u64;
        let key_filter = match self.key_filter {
            Some(filter) => Some(filter.upload(store.objects.as_ref(), &self.path).await?),
            None => None,
        };
        crate::chunk::put_encoded(store.objects.as_ref(), &self.path, bytes).await?;
        Ok(Some(ChunkRef {
            path: self.path,
            rows: self.rows,
            min_key: self.min_key,
            max_key: self.max_key,
            min_timestamp: self.min_timestamp,
            max_timestamp: self.max_timestamp,
            bytes: size,
            row_groups: self.row_groups,
            checksum: Some(checksum),
            commit_timestamp: None,
            key_filter,
        }))
    }
}

/// What a compaction merges.
pub(crate) enum Compacted<'a> {
    /// Every chunk and the dynamic store of a table: each key's whole history.
    Whole(&'a TableData),
    /// The newest chunks over their keys ([`crate::kernel::compaction_policy`]): each key's recent
    /// history, older versions possibly elsewhere.
    Recent(Vec<&'a ChunkRef>),
}

impl Store {
    /// Compacts `what` of the sorted table `entry` at `now`, keeping versions after `horizon`
    /// as written: writes the kept versions as new chunks, tablet by tablet, and returns them
    /// (nothing is committed here).
    #[tracing::instrument(level = "debug", skip_all, fields(table = %entry.id))]
    pub(crate) async fn write_compacted_chunks(
        &self,
        entry: &TableEntry,
        what: &Compacted<'_>,
        now: Timestamp,
        horizon: Timestamp,
    ) -> Result<Vec<ChunkRef>> {
        let (chunks, dynamic_store): (Vec<&ChunkRef>, _) = match what {
            Compacted::Whole(data) => (data.chunks.iter().collect(), Some(&data.sorted)),
            Compacted::Recent(chunks) => (chunks.clone(), None),
        };
        let schema = &entry.schema;
        let key_count = schema.key_column_count();
        // TTL tombstones must come before every transaction that may still commit.
        let live = match (&entry.ttl, what) {
            (Some(_), Compacted::Whole(_)) => self.oldest_live_transaction_start().await?,
            _ => None,
        };
        let copy_clean = copies_clean_groups(schema, &entry.retention, entry.ttl.is_some());
        let mut out = Vec::new();
        let written = |out: &Vec<ChunkRef>| out.iter().map(|c| c.path.clone()).collect::<Vec<_>>();
        let result = async {
            for range in &tablet_ranges(entry) {
                let mut sources: Vec<ChunkSource<'_>> = chunks
                    .iter()
                    .copied()
                    .filter(|c| {
                        range.upper.is_after(&c.min_key) && !range.lower.is_after(&c.max_key)
                    })
                    .map(|c| ChunkSource::new(c, range, copy_clean))
                    .collect();
                // The dynamic store's keys of this tablet, newest source last.
                // (Collected: no closure may live across the awaits below, or the future
                // is not `Send`.)
                let memory: Vec<&Vec<RowDelta>> = dynamic_store
                    .iter()
                    .flat_map(|m| m.values())
                    .filter(|v| in_range(range, &version_key(&v[0], key_count)))
                    .collect();
                let mut memory = memory.into_iter();
                let mut heads: Vec<Option<Head>> = Vec::with_capacity(sources.len() + 1);
                for s in &mut sources {
                    heads.push(s.next_head(self, schema).await?);
                }
                heads.push(memory.next().cloned().map(Head::Key));
                let memory_slot = heads.len() - 1;
                let mut writer: Option<VersionChunkWriter> = None;
                let new_writer = || {
                    VersionChunkWriter::new(
                        new_chunk_path(&entry.id, "compact", &self.fresh),
                        schema,
                        entry.chunk_writer.filters(schema.key_column_count()),
                        entry.compression_codec,
                    )
                };
                loop {
                    let mut smallest: Option<usize> = None;
                    for (i, h) in heads.iter().enumerate() {
                        let Some(h) = h else { continue };
                        if smallest.is_none_or(|s| {
                            h.cmp_heads(heads[s].as_ref().expect("a head"), key_count)
                                .is_lt()
                        }) {
                            smallest = Some(i);
                        }
                    }
                    let Some(smallest) = smallest else { break };
                    if let Some(Head::Group(group)) = &heads[smallest] {
                        // A clean row group no other source has keys among is copied; else
                        // it is merged key by key like the rest.
                        let alone = heads.iter().enumerate().all(|(i, h)| {
                            i == smallest
                                || h.as_ref()
                                    .is_none_or(|h| h.starts_after(&group.group.max_key, key_count))
                        });
                        let Some(Head::Group(group)) = heads[smallest].take() else {
                            unreachable!("matched above")
                        };
                        if alone {
                            let w = match &mut writer {
                                Some(w) => w,
                                None => writer.insert(new_writer()?),
                            };
                            w.push_clean(group)?;
                            if w.rows() >= BULK_CHUNK_ROWS as u64 {
                                let full = writer.take().expect("just used");
                                out.extend(full.finish(self).await?);
                            }
                        } else {
                            sources[smallest].decode(group, schema)?;
                        }
                        heads[smallest] = sources[smallest].next_head(self, schema).await?;
                        continue;
                    }
                    let Some(Head::Key(first)) = &heads[smallest] else {
                        unreachable!("a key head")
                    };
                    let key = first[0].clone();
                    let mut history = Vec::new();
                    for i in 0..heads.len() {
                        // A clean group starting at this key is merged key by key.
                        if let Some(h @ Head::Group(_)) = &heads[i] {
                            if !h.starts_after(&version_key(&key, key_count), key_count) {
                                let Some(Head::Group(g)) = heads[i].take() else {
                                    unreachable!("matched above")
                                };
                                sources[i].decode(g, schema)?;
                                heads[i] = sources[i].next_head(self, schema).await?;
                            }
                        }
                        let same = match &heads[i] {
                            Some(Head::Key(h)) => {
                                compare_version_keys(&h[0], &key, key_count).is_eq()
                            }
                            _ => false,
                        };
                        if !same {
                            continue;
                        }
                        let Some(Head::Key(versions)) = heads[i].take() else {
                            unreachable!("checked")
                        };
                        history.extend(versions);
                        heads[i] = if i == memory_slot {
                            memory.next().cloned().map(Head::Key)
                        } else {
                            sources[i].next_head(self, schema).await?
                        };
                    }
                    crate::kernel::mvcc::put_in_commit_order(&mut history);
                    let kept = match what {
                        Compacted::Whole(_) => {
                            // An expired row's tombstone (at its expiry) is no conflict
                            // evidence: the row's horizon moves up to it.
                            let horizon = entry
                                .ttl
                                .as_ref()
                                .and_then(|ttl| {
                                    crate::kernel::ttl::expire(
                                        schema,
                                        ttl,
                                        &mut history,
                                        now,
                                        horizon,
                                        live,
                                    )
                                })
                                .map_or(horizon, |t| t.max(horizon));
                            compact_versions(schema, &entry.retention, &history, now, horizon)
                        }
                        Compacted::Recent(_) => compact_recent_versions(
                            schema,
                            &entry.retention,
                            &history,
                            now,
                            horizon,
                        ),
                    };
                    if kept.is_empty() {
                        continue;
                    }
                    let w = match &mut writer {
                        Some(w) => w,
                        None => writer.insert(new_writer()?),
                    };
                    for d in kept {
                        w.push(d)?;
                    }
                    // Chunks end between keys: a key's versions stay in one chunk.
                    if w.rows() >= BULK_CHUNK_ROWS as u64 {
                        let full = writer.take().expect("just used");
                        out.extend(full.finish(self).await?);
                    }
                }
                if let Some(w) = writer {
                    out.extend(w.finish(self).await?);
                }
            }
            Ok(())
        }
        .await;
        if let Err(e) = result {
            crate::flush::discard(self.objects.as_ref(), &written(&out)).await;
            return Err(e);
        }
        Ok(out)
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use dynql_core::Value;

    use super::*;
    use crate::kernel::catalog::TableOptions;
    use crate::kernel::mvcc::WriteKind;
    use crate::kernel::retention::Retention;
    use crate::store::{RowValues, LARGE_WRITE_ROWS};
    use crate::tablets::{Reshard, TabletCommand};
    use crate::test_tables::{create_key_value_table, key_value_row, key_value_schema};

    fn row(k: i64, v: i64) -> RowValues {
        key_value_row(k, v)
    }

    /// Three versions of every key in one chunk (so keys straddle its row groups), resharded
    /// so that the chunk straddles a pivot, newer versions in the dynamic store: compaction
    /// keeps what reads at the last commit see, two versions per key at most, in chunks that
    /// each lie in one tablet.
    #[tokio::test]
    async fn compaction_streams_tablet_by_tablet_and_keeps_what_reads_see() {
        let store = Store::open("memory://").unwrap();
        let schema = key_value_schema();
        let options = TableOptions {
            retention: Retention {
                min_data_versions: 2,
                max_data_versions: 2,
                min_data_ttl: 0,
                max_data_ttl: 0,
            },
            ..TableOptions::default()
        };
        store.create_table("//t", schema, options).await.unwrap();
        let n = LARGE_WRITE_ROWS as i64;
        let mut last_layer = Timestamp::MIN;
        for layer in 0..3 {
            let rows = (0..n).map(|k| row(k, layer)).collect();
            last_layer = store
                .write_rows("//t", WriteKind::Overwrite, false, rows)
                .await
                .unwrap();
        }
        store.flush_table("//t").await.unwrap();
        let state = store.refresh().await.unwrap();
        let (_, data) = state.table_data("//t").unwrap();
        assert_eq!(data.chunks.len(), 1);
        assert!(data.chunks[0].row_groups.len() > 1);
        store
            .set_tablet_state("//t", TabletCommand::Unmount)
            .await
            .unwrap();
        store
            .reshard_table(
                "//t",
                Reshard::Pivots(vec![vec![], vec![Value::Int64(n / 2 + 1)]]),
            )
            .await
            .unwrap();
        store
            .set_tablet_state("//t", TabletCommand::Mount)
            .await
            .unwrap();
        store
            .write_rows(
                "//t",
                WriteKind::Overwrite,
                false,
                vec![row(1, 100), row(n - 1, 100)],
            )
            .await
            .unwrap();
        store
            .write_rows(
                "//t",
                WriteKind::Delete,
                false,
                vec![vec![Some(Value::Int64(2)), None]],
            )
            .await
            .unwrap();
        let before = store
            .read_rows("//t", Timestamp::SYNC_LAST_COMMITTED)
            .await
            .unwrap();
        let then = store.read_rows("//t", last_layer).await.unwrap();
        let (versions_before, versions_after) = store.compact("//t").await.unwrap();
        // The second newest version of every key is kept: a read at the last layer too.
        assert_eq!(store.read_rows("//t", last_layer).await.unwrap(), then);
        assert_eq!(versions_before, 3 * n as usize + 3);
        // The newest two versions of each key (of key 2: its last write and the tombstone).
        assert_eq!(versions_after, 2 * n as usize);
        let after = store
            .read_rows("//t", Timestamp::SYNC_LAST_COMMITTED)
            .await
            .unwrap();
        assert_eq!(after, before);
        assert_eq!(after[1], vec![Value::Int64(1), Value::Int64(100)]);
        let state = store.refresh().await.unwrap();
        let (_, data) = state.table_data("//t").unwrap();
        assert!(data.sorted.is_empty());
        assert_eq!(data.chunks.len(), 2, "one chunk per tablet");
        let pivot = Value::Int64(n / 2 + 1);
        for c in &data.chunks {
            assert_eq!(c.min_key[0] >= pivot, c.max_key[0] >= pivot, "{c:?}");
            let rows: u64 = c.row_groups.iter().map(|g| g.rows).sum();
            assert_eq!(rows, c.rows);
        }
    }

    /// Clean row groups that no other source has keys among are copied whole (their row
    /// groups keep their bounds, even a short last one); a group that meets a newer version
    /// in the dynamic store is merged key by key. Reads are the same before and after.
    #[tokio::test]
    async fn clean_row_groups_are_copied_unless_another_source_has_keys_among_theirs() {
        let store = Store::open("memory://").unwrap();
        create_key_value_table(&store, "//t").await;
        let group = ROW_GROUP_ROWS as i64;
        let n = 2 * group + 100;
        // Two flushed chunks over disjoint keys, three row groups each (the last of 100 rows).
        let first = store
            .write_rows(
                "//t",
                WriteKind::Overwrite,
                false,
                (0..n).map(|k| row(k, k)).collect(),
            )
            .await
            .unwrap();
        store.flush_table("//t").await.unwrap();
        let second = store
            .write_rows(
                "//t",
                WriteKind::Overwrite,
                false,
                (n..2 * n).map(|k| row(k, k)).collect(),
            )
            .await
            .unwrap();
        store.flush_table("//t").await.unwrap();
        let before_update = store
            .read_rows("//t", Timestamp::SYNC_LAST_COMMITTED)
            .await
            .unwrap();
        // A newer version of a key inside the second chunk's second row group.
        let updated = n + group + 5;
        store
            .write_rows("//t", WriteKind::Overwrite, false, vec![row(updated, -1)])
            .await
            .unwrap();
        let latest = store
            .read_rows("//t", Timestamp::SYNC_LAST_COMMITTED)
            .await
            .unwrap();
        let at_first = store.read_rows("//t", first).await.unwrap();
        let state = store.refresh().await.unwrap();
        let (_, data) = state.table_data("//t").unwrap();
        assert_eq!(data.chunks.len(), 2);

        let (versions_before, versions_after) = store.compact("//t").await.unwrap();
        assert_eq!(
            (versions_before, versions_after),
            (2 * n as usize + 1, 2 * n as usize + 1)
        );
        assert_eq!(
            store
                .read_rows("//t", Timestamp::SYNC_LAST_COMMITTED)
                .await
                .unwrap(),
            latest
        );
        assert_eq!(store.read_rows("//t", first).await.unwrap(), at_first);
        assert_eq!(store.read_rows("//t", second).await.unwrap(), before_update);
        let state = store.refresh().await.unwrap();
        let (_, data) = state.table_data("//t").unwrap();
        assert_eq!(data.chunks.len(), 1);
        let chunk = &data.chunks[0];
        let sizes: Vec<u64> = chunk.row_groups.iter().map(|g| g.rows).collect();
        let g = group as u64;
        // Copied: the first chunk's three groups and the second's first and last; merged:
        // the second's middle group and the new version (one row group each, cut where the
        // copied group begins).
        assert_eq!(sizes, vec![g, g, 100, g, g, 1, 100]);
        assert_eq!(chunk.row_groups[3].clean, Cleanliness::Since(second.0));
        assert_eq!(chunk.row_groups[4].clean, Cleanliness::Dirty);
        assert_eq!(chunk.min_timestamp, first.0);
        // Compacting again changes nothing a read sees.
        store.compact("//t").await.unwrap();
        assert_eq!(
            store
                .read_rows("//t", Timestamp::SYNC_LAST_COMMITTED)
                .await
                .unwrap(),
            latest
        );
    }

    /// A bulk write's chunks carry no timestamps of their own (they are stamped at commit):
    /// their copied row groups get the commit timestamp, so a read before the commit still
    /// sees nothing.
    #[tokio::test]
    async fn copied_bulk_row_groups_keep_their_commit_timestamp() {
        use arrow::array::{ArrayRef, Int64Array};
        let store = Store::open("memory://").unwrap();
        let schema = key_value_schema();
        store
            .create_table("//t", schema.clone(), TableOptions::default())
            .await
            .unwrap();
        let earlier = store
            .write_rows("//t", WriteKind::Overwrite, false, vec![row(-1, -1)])
            .await
            .unwrap();
        let n = 2 * ROW_GROUP_ROWS as i64 + 7;
        let mut bulk = store.start_bulk_write("//t").await.unwrap();
        let keys: Vec<i64> = (0..n).collect();
        let columns: Vec<ArrayRef> = vec![
            Arc::new(Int64Array::from(keys.clone())),
            Arc::new(Int64Array::from(keys)),
        ];
        let batch = arrow::record_batch::RecordBatch::try_new(
            dynql_core::arrow_convert::table_arrow_schema(&schema),
            columns,
        )
        .unwrap();
        store.stage_bulk_batch(&mut bulk, &batch).await.unwrap();
        store.write_bulk_rows(&mut bulk, &mut |_| {}).await.unwrap();
        let committed = store.commit_bulk_write(bulk).await.unwrap();
        let latest = store
            .read_rows("//t", Timestamp::SYNC_LAST_COMMITTED)
            .await
            .unwrap();
        assert_eq!(latest.len(), n as usize + 1);
        store.compact("//t").await.unwrap();
        assert_eq!(
            store
                .read_rows("//t", Timestamp::SYNC_LAST_COMMITTED)
                .await
                .unwrap(),
            latest
        );
        assert_eq!(
            store.read_rows("//t", earlier).await.unwrap(),
            vec![vec![Value::Int64(-1), Value::Int64(-1)]]
        );
        let state = store.refresh().await.unwrap();
        let (_, data) = state.table_data("//t").unwrap();
        let chunk = &data.chunks[0];
        let sizes: Vec<u64> = chunk.row_groups.iter().map(|g| g.rows).collect();
        // The flushed row, then the bulk chunk's groups as they were.
        let g = ROW_GROUP_ROWS as u64;
        assert_eq!(sizes, vec![1, g, g, 7]);
        assert_eq!(chunk.max_timestamp, committed.0);
        assert!(chunk.row_groups[1..]
            .iter()
            .all(|g| g.clean == Cleanliness::Since(committed.0)));
    }
}
