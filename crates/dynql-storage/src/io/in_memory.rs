//! `in_memory_mode` (YT's table attribute): a long-lived process (the shell, a library
//! `Database`) keeps a table's chunks in memory.
//!
//! - `compressed`: every chunk file of the table, verified once against its checksum, is held
//!   whole; reads slice it instead of asking the object store.
//! - `uncompressed`: the files as with `compressed`, and every row group decoded into row
//!   versions, held outside the chunk cache's budget (never evicted).
//!
//! The held set follows the table: each read of an in-memory table first brings it up to date
//! with the table's chunk list (loading new chunks, dropping replaced ones), so after a flush or
//! compaction the next read loads what they wrote. Setting the mode back to `none` drops it at
//! the next read. Memory is the table's compressed size (and, uncompressed, its decoded size):
//! as in YT, the user chooses tables that fit.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use bytes::Bytes;
use object_store::path::Path as ObjectPath;
use object_store::{ObjectStore, ObjectStoreExt};

use crate::error::Result;
use crate::kernel::catalog::TableEntry;
use crate::kernel::chunk_ref::ChunkRef;
pub use crate::kernel::in_memory_mode::InMemoryMode;
use crate::kernel::mvcc::RowDelta;
use crate::state::TableData;
use crate::store::Store;

#[derive(Debug, Default)]
struct Held {
    files: HashMap<String, Bytes>,
    row_groups: HashMap<(String, usize), Arc<Vec<RowDelta>>>,
    /// Per table id: its mode and chunk paths when last brought up to date.
    tables: HashMap<String, (InMemoryMode, Vec<String>)>,
}

/// The chunk files and row groups held for in-memory tables.
#[derive(Debug, Default)]
pub(crate) struct InMemoryChunks {
    held: Mutex<Held>,
}

impl InMemoryChunks {
    fn lock(&self) -> std::sync::MutexGuard<'_, Held> {
        self.held.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The whole file of chunk `path`, if held.
    pub(crate) fn file(&self, path: &str) -> Option<Bytes> {
        self.lock().files.get(path).cloned()
    }

    /// The versions of row group `index` of chunk `path`, if held.
    pub(crate) fn row_group(&self, path: &str, index: usize) -> Option<Arc<Vec<RowDelta>>> {
        self.lock()
            .row_groups
            .get(&(path.to_string(), index))
            .cloned()
    }

    /// Bytes of chunk files held (for tests and `@tablets`).
    pub(crate) fn file_bytes(&self, paths: &[String]) -> u64 {
        let held = self.lock();
        paths
            .iter()
            .filter_map(|p| held.files.get(p))
            .map(|b| b.len() as u64)
            .sum()
    }
}

/// The whole file of `chunk`, verified against its checksum.
pub(crate) async fn fetch_verified(objects: &dyn ObjectStore, chunk: &ChunkRef) -> Result<Bytes> {
    let bytes = objects
        .get(&ObjectPath::from(chunk.path.as_str()))
        .await?
        .bytes()
        .await?;
    if let Some(c) = &chunk.checksum {
        crate::kernel::checksum::verify_chunk(&chunk.path, &bytes, c)?;
    }
    Ok(bytes)
}

impl Store {
    /// Brings what is held of a table up to date with its mode and chunk list: a no-op for
    /// tables never in memory and for held tables whose chunks did not change.
    pub(crate) async fn keep_in_memory(&self, entry: &TableEntry, data: &TableData) -> Result<()> {
        let mode = entry.in_memory_mode;
        let paths: Vec<String> = match mode {
            InMemoryMode::None => Vec::new(),
            _ => data.chunks.iter().map(|c| c.path.clone()).collect(),
        };
        let in_memory = &self.cache.in_memory;
        match in_memory.lock().tables.get(&entry.id) {
            Some((m, held)) if *m == mode && *held == paths => return Ok(()),
            None if mode.is_none() => return Ok(()),
            _ => {}
        }
        for chunk in &data.chunks {
            if mode.is_none() || in_memory.file(&chunk.path).is_some() {
                continue;
            }
            let bytes = fetch_verified(self.objects.as_ref(), chunk).await?;
            in_memory.lock().files.insert(chunk.path.clone(), bytes);
        }
        if mode == InMemoryMode::Uncompressed {
            for chunk in &data.chunks {
                for g in 0..chunk.row_group_count() {
                    if in_memory.row_group(&chunk.path, g).is_some() {
                        continue;
                    }
                    let versions = self
                        .cache
                        .row_group(&self.objects, &entry.schema, chunk, g, None)
                        .await?;
                    in_memory
                        .lock()
                        .row_groups
                        .insert((chunk.path.clone(), g), versions);
                }
            }
        }
        let mut held = in_memory.lock();
        let before = held.tables.remove(&entry.id);
        // Drop what the table no longer holds, unless another in-memory table shares it (a
        // copy shares its source's chunks).
        let kept_elsewhere: std::collections::HashSet<String> = held
            .tables
            .values()
            .flat_map(|(_, p)| p.iter().cloned())
            .collect();
        for old in before.map(|(_, p)| p).unwrap_or_default() {
            let decoded_still = mode == InMemoryMode::Uncompressed && paths.contains(&old);
            if !kept_elsewhere.contains(&old) && !decoded_still {
                held.row_groups.retain(|(p, _), _| *p != old);
            }
            if !paths.contains(&old) && !kept_elsewhere.contains(&old) {
                held.files.remove(&old);
            }
        }
        if mode != InMemoryMode::Uncompressed {
            let drop: Vec<String> = paths
                .iter()
                .filter(|p| !kept_elsewhere.contains(*p))
                .cloned()
                .collect();
            held.row_groups.retain(|(p, _), _| !drop.contains(p));
        }
        if !mode.is_none() {
            held.tables.insert(entry.id.clone(), (mode, paths));
        }
        Ok(())
    }

    /// Bytes of a table's chunk files held in memory now ([`crate::io::in_memory`]).
    pub async fn in_memory_bytes(&self, path: &str) -> Result<u64> {
        let state = self.refresh().await?;
        let (_, data) = state.table_data(path)?;
        let paths: Vec<String> = data.chunks.iter().map(|c| c.path.clone()).collect();
        Ok(self.cache.in_memory.file_bytes(&paths))
    }
}
