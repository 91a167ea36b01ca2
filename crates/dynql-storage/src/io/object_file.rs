//! Ranged reads of a chunk file for Parquet's async reader ([`ObjectFile`]), each byte
//! verified against the chunk's checksum before it is handed out.

use std::sync::Arc;

use bytes::Bytes;
use futures::future::{BoxFuture, FutureExt};
use object_store::path::Path as ObjectPath;
use object_store::ObjectStore;
use parquet::arrow::arrow_reader::ArrowReaderOptions;
use parquet::arrow::async_reader::AsyncFileReader;
use parquet::errors::ParquetError;
use parquet::file::metadata::{ParquetMetaData, ParquetMetaDataReader};

use crate::error::Error;
use crate::kernel::checksum::ChunkChecksum;

/// Ranged reads of one chunk file, for Parquet's async reader, verified against the chunk's
/// checksum when it has one (see [`crate::kernel::checksum`]): bytes of the tail come from the whole
/// tail, fetched once and verified; bytes of the data region are fetched in whole blocks and
/// each block is verified before any of it is returned.
pub(crate) struct ObjectFile {
    pub(crate) objects: Arc<dyn ObjectStore>,
    pub(crate) path: ObjectPath,
    pub(crate) size: u64,
    /// How to verify what is read; `None` for files that carry no checksum (chunks written
    /// before checksums, Parquet files that are not the store's).
    pub(crate) checksum: Option<ChunkChecksum>,
    /// The verified tail, once fetched.
    pub(crate) tail: Option<Bytes>,
    /// The hashes of the data blocks, from the verified footer.
    pub(crate) blocks: Option<Arc<Vec<u64>>>,
    /// The whole file, verified, when its table is kept in memory ([`crate::io::in_memory`]):
    /// reads are slices of it.
    pub(crate) pinned: Option<Bytes>,
}

impl ObjectFile {
    /// An unverified reader (a file that is not one of the store's chunks).
    pub(crate) fn unverified(objects: Arc<dyn ObjectStore>, path: ObjectPath, size: u64) -> Self {
        ObjectFile {
            objects,
            path,
            size,
            checksum: None,
            tail: None,
            blocks: None,
            pinned: None,
        }
    }

    /// `range` of the pinned file, if there is one.
    fn pinned_slice(&self, range: &std::ops::Range<u64>) -> Option<parquet::errors::Result<Bytes>> {
        let file = self.pinned.as_ref()?;
        Some(
            if range.start <= range.end && range.end <= file.len() as u64 {
                Ok(file.slice(range.start as usize..range.end as usize))
            } else {
                Err(self.corrupt(format!(
                    "a read of bytes {range:?} past the end of the file ({} bytes)",
                    file.len()
                )))
            },
        )
    }

    fn corrupt(&self, message: String) -> ParquetError {
        ParquetError::External(Box::new(Error::Corrupt {
            path: self.path.to_string(),
            message,
        }))
    }

    /// The verified tail.
    async fn tail(&mut self, c: ChunkChecksum) -> parquet::errors::Result<Bytes> {
        if let Some(t) = &self.tail {
            return Ok(t.clone());
        }
        if c.data_end > self.size {
            return Err(self.corrupt(format!(
                "the file has {} bytes, fewer than its data region of {}",
                self.size, c.data_end
            )));
        }
        let tail = self.fetch(c.data_end..self.size).await?;
        crate::kernel::checksum::verify_tail(self.path.as_ref(), &tail, &c)
            .map_err(|e| ParquetError::External(Box::new(e)))?;
        self.tail = Some(tail.clone());
        Ok(tail)
    }

    /// The block hashes, from the verified footer.
    async fn blocks(&mut self, c: ChunkChecksum) -> parquet::errors::Result<Arc<Vec<u64>>> {
        if let Some(b) = &self.blocks {
            return Ok(b.clone());
        }
        let tail = self.tail(c).await?;
        let metadata = ParquetMetaDataReader::new().parse_and_finish(&tail)?;
        let hashes =
            crate::kernel::checksum::footer_block_hashes(self.path.as_ref(), &metadata, &c)
                .map_err(|e| ParquetError::External(Box::new(e)))?;
        let hashes = Arc::new(hashes);
        self.blocks = Some(hashes.clone());
        Ok(hashes)
    }

    /// The whole blocks covering `range` of the data region.
    fn aligned(c: ChunkChecksum, range: &std::ops::Range<u64>) -> std::ops::Range<u64> {
        let block = crate::kernel::checksum::BLOCK_BYTES;
        (range.start / block * block)..(range.end.div_ceil(block) * block).min(c.data_end)
    }

    /// Bytes `range` of the file as stored. Asked as one of a list of ranges: the ranged read
    /// every store implements, and the one a local store makes in place (crate::io::local_files).
    async fn fetch(&self, range: std::ops::Range<u64>) -> parquet::errors::Result<Bytes> {
        let mut fetched = self
            .objects
            .get_ranges(&self.path, std::slice::from_ref(&range))
            .await
            .map_err(external)?;
        fetched
            .pop()
            .ok_or_else(|| self.corrupt(format!("the store gave nothing for bytes {range:?}")))
    }

    /// Reads `range`, verified.
    async fn read(&mut self, range: std::ops::Range<u64>) -> parquet::errors::Result<Bytes> {
        if let Some(slice) = self.pinned_slice(&range) {
            return slice;
        }
        let Some(c) = self.checksum else {
            return self.fetch(range).await;
        };
        if range.end > self.size || range.start > range.end {
            return Err(self.corrupt(format!(
                "a read of bytes {range:?} past the end of the file ({} bytes)",
                self.size
            )));
        }
        if range.start >= c.data_end {
            let tail = self.tail(c).await?;
            let (a, b) = (range.start - c.data_end, range.end - c.data_end);
            return Ok(tail.slice(a as usize..b as usize));
        }
        if range.end > c.data_end {
            let head = Box::pin(self.read(range.start..c.data_end)).await?;
            let tail = Box::pin(self.read(c.data_end..range.end)).await?;
            let mut joined = Vec::with_capacity(head.len() + tail.len());
            joined.extend_from_slice(&head);
            joined.extend_from_slice(&tail);
            return Ok(Bytes::from(joined));
        }
        let blocks = self.blocks(c).await?;
        let aligned = Self::aligned(c, &range);
        let bytes = self.fetch(aligned.clone()).await?;
        self.verified_slice(&blocks, aligned, bytes, range)
    }

    /// Verifies the blocks of `aligned` (fetched as `bytes`) and returns `range` of them.
    fn verified_slice(
        &self,
        blocks: &[u64],
        aligned: std::ops::Range<u64>,
        bytes: Bytes,
        range: std::ops::Range<u64>,
    ) -> parquet::errors::Result<Bytes> {
        let first = aligned.start / crate::kernel::checksum::BLOCK_BYTES;
        crate::kernel::checksum::verify_blocks(self.path.as_ref(), first, &bytes, blocks)
            .map_err(|e| ParquetError::External(Box::new(e)))?;
        let (a, b) = (range.start - aligned.start, range.end - aligned.start);
        Ok(bytes.slice(a as usize..b as usize))
    }
}

fn external(e: object_store::Error) -> ParquetError {
    ParquetError::External(Box::new(e))
}

impl AsyncFileReader for ObjectFile {
    fn get_bytes(
        &mut self,
        range: std::ops::Range<u64>,
    ) -> BoxFuture<'_, parquet::errors::Result<Bytes>> {
        async move { self.read(range).await }.boxed()
    }

    fn get_byte_ranges(
        &mut self,
        ranges: Vec<std::ops::Range<u64>>,
    ) -> BoxFuture<'_, parquet::errors::Result<Vec<Bytes>>> {
        async move {
            if self.pinned.is_some() {
                return ranges
                    .iter()
                    .map(|r| self.pinned_slice(r).expect("pinned"))
                    .collect();
            }
            let Some(c) = self.checksum else {
                return self
                    .objects
                    .get_ranges(&self.path, &ranges)
                    .await
                    .map_err(external);
            };
            // Ranges inside the data region go out together (the store may coalesce them),
            // widened to whole blocks; the rest one by one.
            if ranges
                .iter()
                .all(|r| r.end <= c.data_end && r.start <= r.end)
            {
                let blocks = self.blocks(c).await?;
                let aligned: Vec<_> = ranges.iter().map(|r| Self::aligned(c, r)).collect();
                let fetched = self
                    .objects
                    .get_ranges(&self.path, &aligned)
                    .await
                    .map_err(external)?;
                return ranges
                    .into_iter()
                    .zip(aligned)
                    .zip(fetched)
                    .map(|((r, a), bytes)| self.verified_slice(&blocks, a, bytes, r))
                    .collect();
            }
            let mut out = Vec::with_capacity(ranges.len());
            for r in ranges {
                out.push(self.read(r).await?);
            }
            Ok(out)
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
