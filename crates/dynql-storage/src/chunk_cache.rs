//! A cache of decoded chunks, shared by the clones of a [`Store`](crate::Store).
//!
//! Chunks are immutable, so a decoded chunk is valid for as long as it is cached; eviction is
//! least-recently-used by version count.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use object_store::path::Path as ObjectPath;
use object_store::{ObjectStore, ObjectStoreExt};

use dynql_core::TableSchema;

use crate::chunk::{decode_versioned_chunk, ChunkRef};
use crate::error::Result;
use crate::mvcc::RowDelta;

/// Versions kept decoded at most (a soft limit: a single larger chunk is still cached).
pub const CHUNK_CACHE_VERSIONS: usize = 4_000_000;

#[derive(Default)]
struct Entries {
    chunks: HashMap<String, (Arc<Vec<RowDelta>>, u64)>,
    versions: usize,
    tick: u64,
}

/// Decoded chunks by object path.
#[derive(Default)]
pub(crate) struct ChunkCache {
    entries: Mutex<Entries>,
}

impl ChunkCache {
    fn lock(&self) -> std::sync::MutexGuard<'_, Entries> {
        match self.entries.lock() {
            Ok(g) => g,
            Err(poisoned) => poisoned.into_inner(),
        }
    }

    /// The versions of `chunk`, fetched and decoded on a miss.
    pub(crate) async fn versions(
        &self,
        objects: &dyn ObjectStore,
        schema: &TableSchema,
        chunk: &ChunkRef,
    ) -> Result<Arc<Vec<RowDelta>>> {
        {
            let mut e = self.lock();
            e.tick += 1;
            let tick = e.tick;
            if let Some((v, used)) = e.chunks.get_mut(&chunk.path) {
                *used = tick;
                return Ok(v.clone());
            }
        }
        let bytes = objects
            .get(&ObjectPath::from(chunk.path.as_str()))
            .await?
            .bytes()
            .await?;
        let versions = Arc::new(decode_versioned_chunk(&chunk.path, schema, bytes)?);
        let mut e = self.lock();
        while e.versions + versions.len() > CHUNK_CACHE_VERSIONS && !e.chunks.is_empty() {
            let oldest = e
                .chunks
                .iter()
                .min_by_key(|(_, (_, used))| *used)
                .map(|(p, _)| p.clone());
            if let Some(p) = oldest {
                if let Some((v, _)) = e.chunks.remove(&p) {
                    e.versions -= v.len();
                }
            }
        }
        e.tick += 1;
        let tick = e.tick;
        e.versions += versions.len();
        if let Some((old, _)) = e
            .chunks
            .insert(chunk.path.clone(), (versions.clone(), tick))
        {
            e.versions -= old.len();
        }
        Ok(versions)
    }
}
