//! Flush and compaction: the two ways versions move into chunks.
//!
//! * **Flush** writes a sorted table's dynamic store as one new key-sorted chunk and commits
//!   [`Action::Flush`]: on replay, the dynamic store forgets the versions up to the flush's
//!   timestamp and the chunk joins the table's chunk list.
//! * **Compaction** runs the [version merge](crate::kernel::merge) over every chunk and the dynamic
//!   store, applies retention ([`compact_versions`]) to each key's history, writes one chunk
//!   and commits [`Action::Compact`], which swaps it in for what it replaces.
//!
//! Both write their chunk before the commit and commit only if the table's chunk list is still
//! the one they read (otherwise their chunk would duplicate or miss versions): the loser
//! deletes its chunk and retries (compaction) or leaves the versions for the next flush.
//! Versions committed meanwhile are newer than the flush timestamp and stay in the dynamic
//! store, because commit timestamps grow with the log.

use std::sync::Mutex;

use object_store::path::Path as ObjectPath;
use object_store::{ObjectStore, ObjectStoreExt};

use crate::chunk::{new_chunk_path, write_versioned_chunk};
use crate::compact::Compacted;
use crate::error::{Error, Result};
use crate::kernel::catalog::TableEntry;
use crate::kernel::chunk_ref::{version_key, ChunkRef};
use crate::kernel::mvcc::RowDelta;
use crate::kernel::timestamp::Timestamp;
use crate::log::Action;
use crate::scan_plan::tablet_ranges;
use crate::state::State;
use crate::store::Store;

/// How many times compaction retries when a flush or another compaction wins the race.
const COMPACTION_ATTEMPTS: usize = 8;

/// The pause before retry `attempt` (from 0) of a compaction that lost the race: doubling
/// from 2 ms (about half a second over every attempt), so a burst of flushes from other
/// writers can pass instead of winning every round.
fn compaction_backoff(attempt: usize) -> std::time::Duration {
    std::time::Duration::from_millis(2 << attempt.min(10))
}

/// The chunk paths of a table in `state`, if it still exists with id `table_id`.
fn chunk_list(state: &State, path: &str, table_id: &str) -> Option<Vec<String>> {
    let (entry, data) = state.tables.get(path)?;
    (entry.id == table_id).then(|| data.chunks.iter().map(|c| c.path.clone()).collect())
}

/// Writes key-sorted versions as one chunk per tablet that has any (chunks never straddle a
/// pivot key, so a scan can skip whole tablets).
pub(crate) async fn write_tablet_chunks(
    store: &Store,
    entry: &TableEntry,
    kind: &str,
    versions: &[&RowDelta],
) -> Result<Vec<ChunkRef>> {
    let key_count = entry.schema.key_column_count();
    let tablets = tablet_ranges(entry);
    let mut out = Vec::new();
    let mut rest = versions;
    let filters = entry.chunk_writer.filters(key_count);
    for (i, tablet) in tablets.iter().enumerate() {
        let end = if i + 1 == tablets.len() {
            rest.len()
        } else {
            rest.partition_point(|d| tablet.upper.is_after(&version_key(d, key_count)))
        };
        let (part, tail) = rest.split_at(end);
        rest = tail;
        let path = new_chunk_path(&entry.id, kind, &store.fresh);
        if let Some(c) = write_versioned_chunk(
            store.objects.as_ref(),
            path,
            &entry.schema,
            part,
            filters.clone(),
            entry.compression_codec,
        )
        .await?
        {
            out.push(c);
        }
    }
    Ok(out)
}

/// Deletes chunks that no commit names; failures only leave garbage for the collector.
pub(crate) async fn discard(objects: &dyn ObjectStore, chunks: &[String]) {
    for c in chunks {
        let _ = objects.delete(&ObjectPath::from(c.as_str())).await;
    }
}

impl Store {
    /// Flushes the dynamic store of the sorted table at `path` into new chunks, one per
    /// tablet with versions. Returns them: none when there was nothing to flush (or a
    /// concurrent flush took it).
    pub async fn flush_table(&self, path: &str) -> Result<Vec<ChunkRef>> {
        self.table(path).await?;
        Ok(self
            .flush_tables(Some(path))
            .await?
            .into_iter()
            .flat_map(|(_, c)| c)
            .collect())
    }

    /// Flushes every sorted table (or only `only`) whose dynamic store holds versions, in one
    /// commit. Returns the committed chunks by table path.
    #[tracing::instrument(level = "debug", skip_all, fields(only))]
    pub(crate) async fn flush_tables(
        &self,
        only: Option<&str>,
    ) -> Result<Vec<(String, Vec<ChunkRef>)>> {
        let state = self.refresh().await?;
        let up_to = state.last_timestamp;
        struct Written {
            path: String,
            table_id: String,
            chunks_before: Vec<String>,
            chunks: Vec<ChunkRef>,
        }
        let mut written = Vec::new();
        for (path, (entry, data)) in &state.tables {
            if only.is_some_and(|p| p != path)
                || !entry.schema.is_sorted()
                || data.sorted.is_empty()
                || data.damage.is_some()
            {
                continue;
            }
            let versions: Vec<&RowDelta> = data.sorted.values().flatten().collect();
            let chunks = write_tablet_chunks(self, entry, "flush", &versions).await?;
            if !chunks.is_empty() {
                written.push(Written {
                    path: path.clone(),
                    table_id: entry.id.clone(),
                    chunks_before: data.chunks.iter().map(|c| c.path.clone()).collect(),
                    chunks,
                });
            }
        }
        if written.is_empty() {
            return Ok(vec![]);
        }
        // The actions of the build that was committed (the closure may run several times).
        let last_build: Mutex<Vec<usize>> = Mutex::new(vec![]);
        self.append_commit(None, |state| {
            let mut chosen = Vec::new();
            let mut actions = Vec::new();
            for (i, w) in written.iter().enumerate() {
                if chunk_list(state, &w.path, &w.table_id).as_ref() == Some(&w.chunks_before) {
                    chosen.push(i);
                    actions.push(Action::Flush {
                        path: w.path.clone(),
                        table_id: w.table_id.clone(),
                        chunks: w.chunks.clone(),
                        up_to: up_to.0,
                    });
                }
            }
            *last_build.lock().unwrap_or_else(|p| p.into_inner()) = chosen;
            Ok(actions)
        })
        .await?;
        let chosen = last_build.into_inner().unwrap_or_else(|p| p.into_inner());
        let lost: Vec<String> = written
            .iter()
            .enumerate()
            .filter(|(i, _)| !chosen.contains(i))
            .flat_map(|(_, w)| w.chunks.iter().map(|c| c.path.clone()))
            .collect();
        discard(self.objects.as_ref(), &lost).await;
        let committed: Vec<(String, Vec<ChunkRef>)> = written
            .into_iter()
            .enumerate()
            .filter(|(i, _)| chosen.contains(i))
            .map(|(_, w)| (w.path, w.chunks))
            .collect();
        for (path, _) in &committed {
            self.compact_after_commit(path).await;
        }
        Ok(committed)
    }

    /// The horizon of a compaction of the commits up to `up_to`: the oldest start of a live
    /// transaction, if earlier (versions after it are that transaction's conflict evidence),
    /// and the oldest timestamp a snapshot lock on a table reads at (the rows it sees stay).
    async fn compaction_horizon(&self, state: &State, up_to: Timestamp) -> Result<Timestamp> {
        let snapshots = state.master.snapshot_timestamps().min().map(Timestamp);
        Ok([self.oldest_live_transaction_start().await?, snapshots]
            .into_iter()
            .flatten()
            .fold(up_to, Timestamp::min))
    }

    /// Runs the automatic compaction policy ([`crate::kernel::compaction_policy`]) on the sorted
    /// table at `path` once: merges the chunks it chooses, if any, and returns whether it did.
    /// A table whose chunk list changed meanwhile under the choice is left for the next run.
    #[tracing::instrument(level = "debug", skip(self))]
    pub async fn compact_by_policy(&self, path: &str) -> Result<bool> {
        let state = self.refresh().await?;
        let (entry, data) = state.table_data(path)?;
        if !entry.schema.is_sorted() || !entry.enable_compaction_and_partitioning {
            return Ok(false);
        }
        let Some(chosen) =
            crate::kernel::compaction_policy::choose(&tablet_ranges(entry), &data.chunks)
        else {
            return Ok(false);
        };
        let chosen: Vec<&ChunkRef> = chosen.iter().map(|&i| &data.chunks[i]).collect();
        let replaces: Vec<String> = chosen.iter().map(|c| c.path.clone()).collect();
        let now = self.fresh.now();
        let horizon = self
            .compaction_horizon(&state, state.last_timestamp)
            .await?;
        let chunks = self
            .write_compacted_chunks(entry, &Compacted::Recent(chosen), now, horizon)
            .await?;
        let written: Vec<String> = chunks.iter().map(|c| c.path.clone()).collect();
        let table_id = entry.id.clone();
        let fresh = Mutex::new(false);
        let committed = self
            .append_commit(None, |state| {
                let current = chunk_list(state, path, &table_id)
                    .ok_or_else(|| Error::NoSuchTable { path: path.into() })?;
                let all_there = replaces.iter().all(|r| current.contains(r));
                *fresh.lock().unwrap_or_else(|p| p.into_inner()) = all_there;
                if !all_there {
                    return Ok(vec![]);
                }
                Ok(vec![Action::CompactChunks {
                    path: path.into(),
                    table_id: table_id.clone(),
                    now: now.0,
                    horizon: horizon.0,
                    chunks: chunks.clone(),
                    replaces: replaces.clone(),
                }])
            })
            .await;
        let fresh = *fresh.lock().unwrap_or_else(|p| p.into_inner());
        match committed {
            Ok(_) if fresh => Ok(true),
            Ok(_) => {
                discard(self.objects.as_ref(), &written).await;
                Ok(false)
            }
            Err(e) => {
                // A failed append may still have landed (a lost acknowledgement): the chunks
                // stay for the garbage collector unless the table is gone.
                if matches!(e, Error::NoSuchTable { .. }) {
                    discard(self.objects.as_ref(), &written).await;
                }
                Err(e)
            }
        }
    }

    /// The automatic compaction policy after a commit added chunks to `path`: runs until it
    /// chooses nothing (each run lowers some tablet's depth). Its failures are not the
    /// commit's: they are dropped, and the next commit that adds chunks tries again.
    pub(crate) async fn compact_after_commit(&self, path: &str) {
        // Tablets split and merge first, so that what the policy merges is written per tablet
        // of the new pivots. A failure is not the commit's: the next one tries again.
        if self
            .table(path)
            .await
            .is_ok_and(|e| e.enable_compaction_and_partitioning)
        {
            let _ = self.partition_by_size(path).await;
            // `auto_compaction_period`: a full compaction once the last one is that old.
            if let Ok(state) = self.refresh().await {
                let due = state.tables.get(path).is_some_and(|(e, d)| {
                    crate::compact::periodic_compaction_due(e, d, self.fresh.now())
                });
                if due {
                    // Boxed: a compaction may flush, and a flush compacts after its commit.
                    let _ = Box::pin(self.compact(path)).await;
                    return;
                }
            }
        }
        for _ in 0..COMPACTION_ATTEMPTS {
            match self.compact_by_policy(path).await {
                Ok(true) => continue,
                Ok(false) | Err(_) => return,
            }
        }
    }

    /// Compacts a table now: merges its chunks and dynamic store into one chunk, dropping the
    /// versions its retention allows (see [`crate::kernel::retention`]). Returns the number of
    /// versions before and after.
    #[tracing::instrument(level = "debug", skip(self))]
    pub async fn compact(&self, path: &str) -> Result<(usize, usize)> {
        // On demand, tablets split and merge by size first (if the table asks for it), over
        // everything written (so the dynamic store is flushed first), and the compacted chunks
        // are cut at the new pivots.
        if self.table(path).await?.auto_partitioning.by_size {
            self.flush_table(path).await?;
            self.partition_by_size(path).await?;
        }
        for attempt in 0..COMPACTION_ATTEMPTS {
            if attempt > 0 {
                tokio::time::sleep(compaction_backoff(attempt - 1)).await;
            }
            let state = self.refresh().await?;
            let (entry, data) = state.table_data(path)?;
            let before = data.version_count();
            let now = self.fresh.now();
            let up_to = state.last_timestamp;
            let horizon = self.compaction_horizon(&state, up_to).await?;
            let schema = &entry.schema;
            let chunks = if schema.is_sorted() {
                self.write_compacted_chunks(entry, &Compacted::Whole(data), now, horizon)
                    .await?
            } else {
                Vec::new()
            };
            let written: Vec<String> = chunks.iter().map(|c| c.path.clone()).collect();
            let replaces: Vec<String> = data.chunks.iter().map(|c| c.path.clone()).collect();
            let table_id = entry.id.clone();
            let sorted = schema.is_sorted();
            let stale = Mutex::new(false);
            // Not `commit`: compaction also runs from inside `checkpoint`.
            let committed = self
                .append_commit(None, |state| {
                    let current = chunk_list(state, path, &table_id)
                        .ok_or_else(|| Error::NoSuchTable { path: path.into() })?;
                    let fresh = current == replaces;
                    *stale.lock().unwrap_or_else(|p| p.into_inner()) = !fresh;
                    if !fresh {
                        return Ok(vec![]);
                    }
                    let mut actions = vec![Action::Compact {
                        path: path.into(),
                        table_id: table_id.clone(),
                        now: now.0,
                        up_to: sorted.then_some(up_to.0),
                        horizon: Some(horizon.0),
                        chunks: chunks.clone(),
                        replaces: replaces.clone(),
                    }];
                    if let Some((entry, data)) = state.tables.get(path).filter(|_| !sorted) {
                        actions.extend(crate::queue::expired_trims(path, entry, data, now));
                    }
                    Ok(actions)
                })
                .await;
            let stale = *stale.lock().unwrap_or_else(|p| p.into_inner());
            match committed {
                Ok(_) if !stale => {
                    // What compaction dropped may let tablets merge (or what it kept, split).
                    if entry.auto_partitioning.by_size {
                        self.partition_by_size(path).await?;
                    }
                    let state = self.refresh().await?;
                    let after = state
                        .tables
                        .get(path)
                        .map(|(_, d)| d.version_count())
                        .unwrap_or(0);
                    return Ok((before, after));
                }
                Ok(_) => discard(self.objects.as_ref(), &written).await,
                Err(e) => {
                    if matches!(e, Error::NoSuchTable { .. }) {
                        discard(self.objects.as_ref(), &written).await;
                    }
                    return Err(e);
                }
            }
        }
        Err(Error::Contended(format!(
            "compaction of {path} lost the race to concurrent flushes {COMPACTION_ATTEMPTS} times; retry"
        )))
    }
}
