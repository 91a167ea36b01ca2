//! A `file://` store's objects: object_store's [`LocalFileSystem`] for everything, but ranged
//! reads ([`ObjectStore::get_ranges`], which the chunk reader uses for every read) are made
//! on the calling task, not handed to tokio's blocking pool.
//!
//! Why: a scan reads a few column ranges per row group, hundreds of reads per query. Handed
//! to the blocking pool, each read wakes a pool thread (up to a dozen of them for one query,
//! each with its own allocator heap holding the buffers it filled) and then the task that
//! waits for it: measured on a 10M-row scan, some 2,500 context switches and a larger peak
//! memory than the work needs. A read of a local file is a copy out of the page cache, shorter
//! than the hand-off. The cost: a read that misses the page cache holds a runtime worker while
//! the disk answers, as a database reading its own files synchronously does.

use std::fmt;
use std::io::ErrorKind;
use std::ops::Range;
use std::os::unix::fs::FileExt;
use std::sync::Arc;

use async_trait::async_trait;
use bytes::Bytes;
use futures::stream::BoxStream;
use object_store::local::LocalFileSystem;
use object_store::path::Path;
use object_store::{
    CopyOptions, GetOptions, GetResult, ListResult, MultipartUpload, ObjectMeta, ObjectStore,
    PutMultipartOptions, PutOptions, PutPayload, PutResult, RenameOptions,
};

/// The objects of a local directory ([`LocalFileSystem`]) with ranged reads made in place.
#[derive(Debug)]
pub(crate) struct LocalFiles {
    inner: Arc<LocalFileSystem>,
}

impl LocalFiles {
    pub(crate) fn new(inner: LocalFileSystem) -> LocalFiles {
        LocalFiles {
            inner: Arc::new(inner),
        }
    }
}

impl fmt::Display for LocalFiles {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(&self.inner, f)
    }
}

/// The error object_store gives for a failed local read of `path`.
fn read_error(path: &std::path::Path, source: std::io::Error) -> object_store::Error {
    if source.kind() == ErrorKind::NotFound {
        return object_store::Error::NotFound {
            path: path.display().to_string(),
            source: Box::new(source),
        };
    }
    refused(path, source.to_string())
}

/// The error of a read of `path` refused for `reason`.
fn refused(path: &std::path::Path, reason: String) -> object_store::Error {
    object_store::Error::Generic {
        store: "LocalFileSystem",
        source: format!("cannot read {}: {reason}", path.display()).into(),
    }
}

/// Bytes `range` of `file` (at `path`): all of them, or an error naming the range when the
/// file ends first.
fn read_range(
    file: &std::fs::File,
    path: &std::path::Path,
    range: Range<u64>,
) -> object_store::Result<Bytes> {
    if range.start > range.end {
        return Err(refused(path, format!("bytes {range:?} is not a range")));
    }
    let mut buf = vec![0u8; (range.end - range.start) as usize];
    match file.read_exact_at(&mut buf, range.start) {
        Ok(()) => Ok(Bytes::from(buf)),
        Err(e) if e.kind() == ErrorKind::UnexpectedEof => Err(refused(
            path,
            format!("bytes {range:?} go past the end of the file"),
        )),
        Err(e) => Err(read_error(path, e)),
    }
}

#[async_trait]
impl ObjectStore for LocalFiles {
    async fn put_opts(
        &self,
        location: &Path,
        payload: PutPayload,
        opts: PutOptions,
    ) -> object_store::Result<PutResult> {
        self.inner.put_opts(location, payload, opts).await
    }

    async fn put_multipart_opts(
        &self,
        location: &Path,
        opts: PutMultipartOptions,
    ) -> object_store::Result<Box<dyn MultipartUpload>> {
        self.inner.put_multipart_opts(location, opts).await
    }

    async fn get_opts(
        &self,
        location: &Path,
        options: GetOptions,
    ) -> object_store::Result<GetResult> {
        self.inner.get_opts(location, options).await
    }

    async fn get_ranges(
        &self,
        location: &Path,
        ranges: &[Range<u64>],
    ) -> object_store::Result<Vec<Bytes>> {
        let path = self.inner.path_to_filesystem(location)?;
        let file = std::fs::File::open(&path).map_err(|e| read_error(&path, e))?;
        ranges
            .iter()
            .map(|r| read_range(&file, &path, r.clone()))
            .collect()
    }

    fn delete_stream(
        &self,
        locations: BoxStream<'static, object_store::Result<Path>>,
    ) -> BoxStream<'static, object_store::Result<Path>> {
        self.inner.delete_stream(locations)
    }

    fn list(&self, prefix: Option<&Path>) -> BoxStream<'static, object_store::Result<ObjectMeta>> {
        self.inner.list(prefix)
    }

    fn list_with_offset(
        &self,
        prefix: Option<&Path>,
        offset: &Path,
    ) -> BoxStream<'static, object_store::Result<ObjectMeta>> {
        self.inner.list_with_offset(prefix, offset)
    }

    async fn list_with_delimiter(&self, prefix: Option<&Path>) -> object_store::Result<ListResult> {
        self.inner.list_with_delimiter(prefix).await
    }

    async fn copy_opts(
        &self,
        from: &Path,
        to: &Path,
        options: CopyOptions,
    ) -> object_store::Result<()> {
        self.inner.copy_opts(from, to, options).await
    }

    async fn rename_opts(
        &self,
        from: &Path,
        to: &Path,
        options: RenameOptions,
    ) -> object_store::Result<()> {
        self.inner.rename_opts(from, to, options).await
    }
}

#[cfg(test)]
mod tests {
    use object_store::ObjectStoreExt;

    use super::*;

    /// Ranged reads give the bytes LocalFileSystem gives, and its errors: a missing file is
    /// NotFound, a range past the end is refused.
    #[tokio::test]
    async fn ranged_reads_match_the_file_system_store() {
        let dir = tempfile::tempdir().unwrap();
        let files = LocalFiles::new(LocalFileSystem::new_with_prefix(dir.path()).unwrap());
        let path = Path::from("t/chunk.parquet");
        let data: Vec<u8> = (0..10_000u32).map(|i| (i % 251) as u8).collect();
        files.put(&path, data.clone().into()).await.unwrap();
        let ranges = [0..10, 9_990..10_000, 100..100, 4_000..7_001];
        let got = files.get_ranges(&path, &ranges).await.unwrap();
        let expected = files.inner.get_ranges(&path, &ranges).await.unwrap();
        assert_eq!(got, expected);
        for (r, bytes) in ranges.iter().zip(&got) {
            assert_eq!(&bytes[..], &data[r.start as usize..r.end as usize]);
        }
        let past = files.get_ranges(&path, &[9_000..10_001]).await.unwrap_err();
        assert!(past.to_string().contains("past the end"), "{past}");
        let missing = files
            .get_ranges(&Path::from("t/gone.parquet"), &[0..1])
            .await
            .unwrap_err();
        assert!(
            matches!(missing, object_store::Error::NotFound { .. }),
            "{missing}"
        );
        // Everything else is LocalFileSystem's own: a listing, a rename, a whole read.
        files
            .rename(&path, &Path::from("t/moved.parquet"))
            .await
            .unwrap();
        let listed: Vec<ObjectMeta> = futures::TryStreamExt::try_collect(files.list(None))
            .await
            .unwrap();
        assert_eq!(listed.len(), 1);
        assert_eq!(listed[0].location, Path::from("t/moved.parquet"));
        let whole = files
            .get(&Path::from("t/moved.parquet"))
            .await
            .unwrap()
            .bytes()
            .await
            .unwrap();
        assert_eq!(&whole[..], &data[..]);
    }
}
