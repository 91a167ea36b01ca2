//! A cache of decoded chunks and row groups, shared by the clones of a
//! [`Store`](crate::Store).
//!
//! Chunks are immutable, so a decoded unit is valid for as long as it is cached; eviction is
//! least-recently-used by version count. Whole chunks serve merges over a whole table
//! (compaction, full reads, lookups); single row groups serve pruned scans, which read them
//! with ranged requests after the file's footer.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use arrow::record_batch::RecordBatch;
use bytes::Bytes;
use futures::future::{BoxFuture, FutureExt};
use futures::TryStreamExt;
use object_store::path::Path as ObjectPath;
use object_store::{ObjectStore, ObjectStoreExt};
use parquet::arrow::arrow_reader::{ArrowReaderMetadata, ArrowReaderOptions};
use parquet::arrow::async_reader::{AsyncFileReader, ParquetRecordBatchStreamBuilder};
use parquet::errors::ParquetError;
use parquet::file::metadata::{ParquetMetaData, ParquetMetaDataReader};

use dynql_core::TableSchema;

use crate::chunk::{check_key_order, decode_versioned_chunk, decode_versions, ChunkRef};
use crate::error::{Error, Result};
use crate::mvcc::RowDelta;

/// Versions kept decoded at most (a soft limit: a single larger unit is still cached).
pub const CHUNK_CACHE_VERSIONS: usize = 4_000_000;

/// Footers kept parsed at most.
const CACHED_FOOTERS: usize = 4096;

/// The unit index of a whole chunk.
const WHOLE: usize = usize::MAX;

type Unit = (String, usize);

#[derive(Default)]
struct Entries {
    units: HashMap<Unit, (Arc<Vec<RowDelta>>, u64)>,
    footers: HashMap<String, ArrowReaderMetadata>,
    versions: usize,
    tick: u64,
}

/// Ranged reads of one chunk file, for Parquet's async reader.
struct ObjectFile {
    objects: Arc<dyn ObjectStore>,
    path: ObjectPath,
    size: u64,
}

fn external(e: object_store::Error) -> ParquetError {
    ParquetError::External(Box::new(e))
}

impl AsyncFileReader for ObjectFile {
    fn get_bytes(
        &mut self,
        range: std::ops::Range<u64>,
    ) -> BoxFuture<'_, parquet::errors::Result<Bytes>> {
        async move {
            self.objects
                .get_range(&self.path, range)
                .await
                .map_err(external)
        }
        .boxed()
    }

    fn get_byte_ranges(
        &mut self,
        ranges: Vec<std::ops::Range<u64>>,
    ) -> BoxFuture<'_, parquet::errors::Result<Vec<Bytes>>> {
        async move {
            self.objects
                .get_ranges(&self.path, &ranges)
                .await
                .map_err(external)
        }
        .boxed()
    }

    fn get_metadata<'a>(
        &'a mut self,
        options: Option<&'a ArrowReaderOptions>,
    ) -> BoxFuture<'a, parquet::errors::Result<Arc<ParquetMetaData>>> {
        async move {
            let size = self.size;
            let metadata = ParquetMetaDataReader::new()
                .with_arrow_reader_options(options)
                .load_and_finish(self, size)
                .await?;
            Ok(Arc::new(metadata))
        }
        .boxed()
    }
}

/// Decoded chunks and row groups by object path.
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

    fn get(&self, unit: &Unit) -> Option<Arc<Vec<RowDelta>>> {
        let mut e = self.lock();
        e.tick += 1;
        let tick = e.tick;
        e.units.get_mut(unit).map(|(v, used)| {
            *used = tick;
            v.clone()
        })
    }

    fn insert(&self, unit: Unit, versions: Arc<Vec<RowDelta>>) {
        let mut e = self.lock();
        while e.versions + versions.len() > CHUNK_CACHE_VERSIONS && !e.units.is_empty() {
            let oldest = e
                .units
                .iter()
                .min_by_key(|(_, (_, used))| *used)
                .map(|(u, _)| u.clone());
            if let Some(u) = oldest {
                if let Some((v, _)) = e.units.remove(&u) {
                    e.versions -= v.len();
                }
            }
        }
        e.tick += 1;
        let tick = e.tick;
        e.versions += versions.len();
        if let Some((old, _)) = e.units.insert(unit, (versions, tick)) {
            e.versions -= old.len();
        }
    }

    /// Every version of `chunk`, fetched and decoded on a miss.
    pub(crate) async fn versions(
        &self,
        objects: &dyn ObjectStore,
        schema: &TableSchema,
        chunk: &ChunkRef,
    ) -> Result<Arc<Vec<RowDelta>>> {
        let unit = (chunk.path.clone(), WHOLE);
        if let Some(v) = self.get(&unit) {
            return Ok(v);
        }
        let bytes = objects
            .get(&ObjectPath::from(chunk.path.as_str()))
            .await?
            .bytes()
            .await?;
        let versions = Arc::new(decode_versioned_chunk(&chunk.path, schema, bytes)?);
        self.insert(unit, versions.clone());
        Ok(versions)
    }

    /// The versions of row group `index` of `chunk` (the whole chunk when it records no row
    /// groups), read with ranged requests on a miss.
    pub(crate) async fn row_group(
        &self,
        objects: &Arc<dyn ObjectStore>,
        schema: &TableSchema,
        chunk: &ChunkRef,
        index: usize,
    ) -> Result<Arc<Vec<RowDelta>>> {
        if chunk.row_groups.is_empty() {
            return self.versions(objects.as_ref(), schema, chunk).await;
        }
        let unit = (chunk.path.clone(), index);
        if let Some(v) = self.get(&unit) {
            return Ok(v);
        }
        let corrupt = |e: parquet::errors::ParquetError| Error::Corrupt {
            path: chunk.path.clone(),
            message: e.to_string(),
        };
        let path = ObjectPath::from(chunk.path.as_str());
        let size = match chunk.bytes {
            0 => objects.head(&path).await?.size,
            n => n,
        };
        let mut reader = ObjectFile {
            objects: objects.clone(),
            path,
            size,
        };
        let cached_footer = self.lock().footers.get(&chunk.path).cloned();
        let footer = match cached_footer {
            Some(f) => f,
            None => {
                let f = ArrowReaderMetadata::load_async(&mut reader, ArrowReaderOptions::new())
                    .await
                    .map_err(corrupt)?;
                let mut e = self.lock();
                if e.footers.len() >= CACHED_FOOTERS {
                    e.footers.clear();
                }
                e.footers.insert(chunk.path.clone(), f.clone());
                f
            }
        };
        if index >= footer.metadata().num_row_groups() {
            return Err(Error::Corrupt {
                path: chunk.path.clone(),
                message: format!(
                    "row group {index} is missing: the file has {}",
                    footer.metadata().num_row_groups()
                ),
            });
        }
        let stream = ParquetRecordBatchStreamBuilder::new_with_metadata(reader, footer)
            .with_row_groups(vec![index])
            .with_batch_size(8192)
            .build()
            .map_err(corrupt)?;
        let batches: Vec<RecordBatch> = stream.try_collect().await.map_err(corrupt)?;
        let mut versions = Vec::new();
        for b in &batches {
            versions.extend(decode_versions(&chunk.path, schema, b)?);
        }
        check_key_order(&chunk.path, schema, &versions)?;
        let versions = Arc::new(versions);
        self.insert(unit, versions.clone());
        Ok(versions)
    }
}
