//! Reads of a table at a timestamp: the [version merge](crate::kernel::merge) of its chunks and its
//! dynamic store, resolved key by key.

use std::sync::Arc;

use arrow::record_batch::RecordBatch;

use dynql_core::arrow_convert::{rows_to_batch, table_arrow_schema};
use dynql_core::{TableSchema, Value};

use crate::error::{Error, Result};
use crate::kernel::chunk_ref::{compare_version_key, ChunkRef};
use crate::kernel::merge::{KeyGroup, KeyGroups, VersionMerge};
use crate::kernel::mvcc::{resolve_versions, RowDelta};
use crate::kernel::timestamp::Timestamp;
use crate::key_filter::prefix_hash;
use crate::state::KeyOrd;
use crate::store::Store;

/// What a lookup did: keys asked for, and (with the lookup row cache) how many rows came from
/// it and how many were resolved from the table.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct LookupStatistics {
    pub rows_looked_up: u64,
    pub cache_hits: u64,
    pub cache_misses: u64,
    /// Chunks a key's lookup skipped because their key filters ruled the key out (one per
    /// key and chunk).
    pub chunks_skipped_by_key_filter: u64,
}

impl Store {
    /// The decoded versions of `chunks` (from the cache or the object store), in order.
    pub(crate) async fn chunk_runs(
        &self,
        schema: &TableSchema,
        chunks: &[&ChunkRef],
    ) -> Result<Vec<Arc<Vec<RowDelta>>>> {
        let mut runs = Vec::new();
        for c in chunks {
            runs.push(
                self.cache
                    .versions(self.objects.as_ref(), schema, c)
                    .await?,
            );
        }
        Ok(runs)
    }

    /// The chunks of a table (sorted tables; ordered tables keep rows in the log until issue 5's
    /// queue chunks).
    pub async fn chunks(&self, path: &str) -> Result<Vec<ChunkRef>> {
        let state = self.refresh().await?;
        let (_, data) = state.table_data(path)?;
        Ok(data.chunks.clone())
    }

    /// The number of stored row versions of a table.
    pub async fn version_count(&self, path: &str) -> Result<usize> {
        let state = self.refresh().await?;
        let (_, data) = state.table_data(path)?;
        Ok(data.version_count())
    }

    /// The rows of a table as of `timestamp`: key order for sorted tables, append order for
    /// ordered ones. Sentinel timestamps read the latest state.
    pub async fn read_rows(&self, path: &str, timestamp: Timestamp) -> Result<Vec<Vec<Value>>> {
        self.settle_read_timestamp(timestamp).await?;
        let state = self.refresh().await?;
        let (entry, data) = state.table_data(path)?;
        let schema = &entry.schema;
        if !schema.is_sorted() {
            // Readable rows of every tablet, tablet by tablet, data columns only.
            return Ok(data
                .queues
                .iter()
                .flat_map(|q| {
                    let skip = q.trimmed.saturating_sub(q.first_stored) as usize;
                    q.rows.iter().skip(skip)
                })
                .filter(|(t, _)| *t <= timestamp)
                .map(|(_, r)| r.clone())
                .collect());
        }
        self.keep_in_memory(entry, data).await?;
        let key_count = schema.key_column_count();
        // Chunks whose oldest version is newer than the read see nothing.
        let visible: Vec<&ChunkRef> = data
            .chunks
            .iter()
            .filter(|c| c.min_timestamp <= timestamp.0)
            .collect();
        let runs = self.chunk_runs(schema, &visible).await?;
        let mut sources: Vec<Box<dyn Iterator<Item = KeyGroup<'_>> + Send + '_>> = runs
            .iter()
            .map(|r| Box::new(KeyGroups::new(r, key_count)) as _)
            .collect();
        sources.push(Box::new(data.sorted.values().map(Vec::as_slice)));
        let ttl = entry
            .ttl
            .as_ref()
            .and_then(|t| t.cut(schema, self.fresh.resolve_latest(timestamp)));
        Ok(VersionMerge::new(key_count, sources)
            .filter_map(|history| resolve_versions(schema, &history, timestamp))
            .filter(|row| ttl.is_none_or(|t| t.keeps_row(row)))
            .collect())
    }

    /// [`Store::read_rows`] as record batches in the table's Arrow schema.
    pub async fn read_table(&self, path: &str, timestamp: Timestamp) -> Result<Vec<RecordBatch>> {
        let entry = self.table(path).await?;
        let rows = self.read_rows(path, timestamp).await?;
        let schema = table_arrow_schema(&entry.schema);
        rows.chunks(64 * 1024)
            .map(|part| rows_to_batch(&schema, part).map_err(Error::from))
            .collect()
    }

    /// Looks full keys up (values of all key columns in key order); `None` for a missing row.
    /// Only chunks whose key and timestamp bounds admit a key are searched for it. Never
    /// uses the lookup row cache (see [`Store::lookup_rows_with`]).
    pub async fn lookup_rows(
        &self,
        path: &str,
        keys: &[Vec<Value>],
        timestamp: Timestamp,
    ) -> Result<Vec<Option<Vec<Value>>>> {
        Ok(self
            .lookup_rows_with(path, keys, timestamp, Some(false))
            .await?
            .0)
    }

    /// [`Store::lookup_rows`] through the table's lookup row cache ([`crate::io::lookup_cache`])
    /// when `use_cache` says so (`None`: the table's `enable_lookup_cache_by_default`), the
    /// table has a `lookup_cache_rows_ratio` and the read is at the latest timestamp. Returns
    /// the rows and how many came from the cache.
    pub async fn lookup_rows_with(
        &self,
        path: &str,
        keys: &[Vec<Value>],
        timestamp: Timestamp,
        use_cache: Option<bool>,
    ) -> Result<(Vec<Option<Vec<Value>>>, LookupStatistics)> {
        self.settle_read_timestamp(timestamp).await?;
        let state = self.refresh().await?;
        let (entry, data) = state.table_data(path)?;
        crate::tablets::check_readable(entry, path)?;
        if !entry.schema.is_sorted() {
            return Err(Error::Invalid(format!(
                "lookup_rows needs a sorted table; {path} is ordered"
            )));
        }
        self.keep_in_memory(entry, data).await?;
        let cached = timestamp.is_latest()
            && (entry.lookup_cache_rows_ratio > 0.0 || entry.lookup_cache_rows_per_tablet > 0)
            && use_cache.unwrap_or(entry.enable_lookup_cache_by_default);
        let mut statistics = LookupStatistics {
            rows_looked_up: keys.len() as u64,
            ..LookupStatistics::default()
        };
        // Expiry depends on the read's time: it is applied to rows found and cached alike.
        let ttl = entry
            .ttl
            .as_ref()
            .and_then(|t| t.cut(&entry.schema, self.fresh.resolve_latest(timestamp)));
        let live = |row: Option<Vec<Value>>| row.filter(|r| ttl.is_none_or(|t| t.keeps_row(r)));
        if !cached {
            let rows = self
                .lookup_in(entry, data, keys, timestamp, &mut statistics)
                .await?;
            return Ok((rows.into_iter().map(live).collect(), statistics));
        }
        // What cached rows were resolved from: the chunks, and the rows' layout (a schema
        // change may add columns without a chunk to rewrite).
        let chunks: Vec<String> = data
            .chunks
            .iter()
            .map(|c| c.path.clone())
            .chain([format!("columns:{}", entry.schema.columns().len())])
            .collect();
        // The table's size without walking its dynamic store on every lookup: chunk versions
        // plus the keys in memory.
        let stored = data.chunks.iter().map(|c| c.rows).sum::<u64>() + data.sorted.len() as u64;
        // The larger room of the two settings (YT's deprecated per-tablet row count stays
        // honoured beside the ratio).
        let per_tablets = (entry.lookup_cache_rows_per_tablet as usize)
            .saturating_mul(crate::scan_plan::tablet_ranges(entry).len().max(1));
        let capacity = ((entry.lookup_cache_rows_ratio * stored as f64) as usize).max(per_tablets);
        let hits = self
            .lookup_cache
            .get(&entry.id, &chunks, capacity, keys, |k| {
                data.sorted
                    .get(k)
                    .and_then(|v| v.last())
                    .map(|d| d.timestamp)
            });
        let missed: Vec<Vec<Value>> = keys
            .iter()
            .zip(&hits)
            .filter(|(_, h)| h.is_none())
            .map(|(k, _)| k.clone())
            .collect();
        statistics.cache_hits = (keys.len() - missed.len()) as u64;
        statistics.cache_misses = missed.len() as u64;
        let found = self
            .lookup_in(entry, data, &missed, timestamp, &mut statistics)
            .await?;
        // Resolved at the latest timestamp of this state: the row as of its last commit.
        self.lookup_cache.put(
            &entry.id,
            &chunks,
            state.last_timestamp,
            missed.into_iter().zip(found.iter().cloned()),
        );
        let mut found = found.into_iter();
        let rows = hits
            .into_iter()
            .map(|hit| match hit {
                Some(row) => live(row),
                None => live(found.next().flatten()),
            })
            .collect();
        Ok((rows, statistics))
    }

    /// The rows of `keys` in a table's chunks and dynamic store, resolved at `timestamp`.
    /// Per key, only the row groups whose key bounds admit it are read, and with
    /// `enable_key_filter_for_lookup` only those whose key filter does not rule it out
    /// ([`crate::key_filter`]); chunks so skipped are counted in `statistics`.
    async fn lookup_in(
        &self,
        entry: &crate::kernel::catalog::TableEntry,
        data: &crate::state::TableData,
        keys: &[Vec<Value>],
        timestamp: Timestamp,
        statistics: &mut LookupStatistics,
    ) -> Result<Vec<Option<Vec<Value>>>> {
        let schema = &entry.schema;
        let key_count = schema.key_column_count();
        let filtered = |c: &ChunkRef| {
            entry.enable_key_filter_for_lookup
                && c.key_filter
                    .as_ref()
                    .is_some_and(|f| f.lengths.contains(&key_count))
        };
        // Each chunk's filter, fetched when a key first needs it and kept for the others.
        let mut filters: Vec<Option<Option<Arc<crate::key_filter::ChunkKeyFilter>>>> =
            vec![None; data.chunks.len()];
        let mut out = Vec::with_capacity(keys.len());
        let mut groups: Vec<usize> = Vec::new();
        for key in keys {
            let mut history: Vec<RowDelta> = Vec::new();
            let mut hash = None;
            for (i, c) in data.chunks.iter().enumerate() {
                if !c.may_contain(key, timestamp.0) {
                    continue;
                }
                groups.clear();
                groups.extend(c.row_groups_admitting(key));
                if filters[i].is_none() {
                    filters[i] = Some(match filtered(c) {
                        true => self.key_filter(c).await?,
                        false => None,
                    });
                }
                if let Some(Some(filter)) = &filters[i] {
                    let h = *hash.get_or_insert_with(|| prefix_hash(key, key_count));
                    groups.retain(|&g| filter.may_contain(g, key_count, h));
                    if groups.is_empty() {
                        statistics.chunks_skipped_by_key_filter += 1;
                        continue;
                    }
                }
                for &g in &groups {
                    let run = self
                        .cache
                        .row_group(&self.objects, schema, c, g, None)
                        .await?;
                    let lo =
                        run.partition_point(|d| compare_version_key(d, key, key_count).is_lt());
                    let hi =
                        run.partition_point(|d| !compare_version_key(d, key, key_count).is_gt());
                    history.extend_from_slice(&run[lo..hi]);
                }
            }
            if let Some(memory) = data.sorted.get(&KeyOrd(key.clone())) {
                history.extend_from_slice(memory);
            }
            out.push(resolve_versions(schema, &history, timestamp));
        }
        Ok(out)
    }
}
