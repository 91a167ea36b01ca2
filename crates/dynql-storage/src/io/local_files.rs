//! A `file://` store's objects: object_store's [`LocalFileSystem`] for reads and listings, but
//! ranged reads ([`ObjectStore::get_ranges`], which the chunk reader uses for every read) are
//! made on the calling task, not handed to tokio's blocking pool; and every write (puts,
//! copies, renames, deletes) goes through a [`Disk`] and is on disk when it returns, as the
//! store's [`Durability`] says ([`crate::io::disk`]; object_store's `LocalFileSystem` syncs
//! nothing).
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
use std::path::PathBuf;
use std::sync::Arc;

use async_trait::async_trait;
use bytes::Bytes;
use futures::stream::BoxStream;
use futures::StreamExt;
use object_store::local::LocalFileSystem;
use object_store::path::Path;
use object_store::{
    CopyMode, CopyOptions, GetOptions, GetResult, ListResult, MultipartUpload, ObjectMeta,
    ObjectStore, PutMode, PutMultipartOptions, PutOptions, PutPayload, PutResult, RenameOptions,
    RenameTargetMode, UploadPart,
};

use crate::io::disk::{Disk, Durability, DurableWrites, OsDisk};

/// The objects of a local directory ([`LocalFileSystem`]) with ranged reads made in place and
/// writes made durable.
#[derive(Debug)]
pub(crate) struct LocalFiles {
    inner: Arc<LocalFileSystem>,
    writes: DurableWrites,
}

impl LocalFiles {
    /// The files under `inner`'s directory, written durably through the operating system.
    pub(crate) fn new(inner: LocalFileSystem) -> LocalFiles {
        LocalFiles::with_disk(inner, Arc::new(OsDisk), Durability::Fsync)
    }

    /// The files under `inner`'s directory, written through `disk` with `durability`.
    pub(crate) fn with_disk(
        inner: LocalFileSystem,
        disk: Arc<dyn Disk>,
        durability: Durability,
    ) -> LocalFiles {
        LocalFiles {
            inner: Arc::new(inner),
            writes: DurableWrites { disk, durability },
        }
    }

    fn file(&self, location: &Path) -> object_store::Result<PathBuf> {
        self.inner.path_to_filesystem(location)
    }
}

/// Runs `f` on tokio's blocking pool when there is a runtime (a sync blocks for milliseconds,
/// which must not stall a runtime worker), else in place.
async fn blocking<T: Send + 'static>(
    f: impl FnOnce() -> object_store::Result<T> + Send + 'static,
) -> object_store::Result<T> {
    match tokio::runtime::Handle::try_current() {
        Ok(runtime) => {
            runtime
                .spawn_blocking(f)
                .await
                .map_err(|e| object_store::Error::Generic {
                    store: "LocalFileSystem",
                    source: Box::new(e),
                })?
        }
        Err(_) => f(),
    }
}

/// The error object_store gives for a failed write of `path`.
fn write_error(path: &std::path::Path, source: std::io::Error) -> object_store::Error {
    match source.kind() {
        ErrorKind::AlreadyExists => object_store::Error::AlreadyExists {
            path: path.display().to_string(),
            source: Box::new(source),
        },
        ErrorKind::NotFound => object_store::Error::NotFound {
            path: path.display().to_string(),
            source: Box::new(source),
        },
        _ => object_store::Error::Generic {
            store: "LocalFileSystem",
            source: format!("cannot write {}: {source}", path.display()).into(),
        },
    }
}

/// The entity tag LocalFileSystem gives the file at `path` (inode, modification time, size).
fn e_tag(path: &std::path::Path) -> Option<String> {
    use std::os::unix::fs::MetadataExt;
    let m = std::fs::metadata(path).ok()?;
    let mtime = m
        .modified()
        .ok()
        .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
        .unwrap_or_default()
        .as_micros();
    Some(format!("{:x}-{mtime:x}-{:x}", m.ino(), m.len()))
}

/// Puts `bytes` at `path` as `mode` says: staged (and synced) first, then linked into place
/// (`Create`: never replacing a file) or renamed over it (`Overwrite`), then its directory
/// synced.
fn put_file(
    writes: &DurableWrites,
    path: &std::path::Path,
    bytes: &[Bytes],
    create: bool,
) -> std::io::Result<()> {
    let staged = writes.stage(path, bytes)?;
    let placed = if create {
        writes.disk.hard_link(&staged, path).and_then(|()| {
            // The staging name is not needed any more; a leftover one is invisible.
            let _ = writes.disk.remove_file(&staged);
            Ok(())
        })
    } else {
        writes.disk.rename(&staged, path)
    };
    if let Err(e) = placed {
        let _ = writes.disk.remove_file(&staged);
        return Err(e);
    }
    writes.sync_parent(path)
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
        let create = match opts.mode {
            PutMode::Create => true,
            PutMode::Overwrite => false,
            PutMode::Update(_) => {
                return Err(object_store::Error::NotImplemented {
                    operation: "`put_opts` with mode `PutMode::Update`".into(),
                    implementer: self.to_string(),
                })
            }
        };
        if !opts.attributes.is_empty() {
            return Err(object_store::Error::NotImplemented {
                operation: "`put_opts` with `opts.attributes` specified".into(),
                implementer: self.to_string(),
            });
        }
        let path = self.file(location)?;
        let writes = self.writes.clone();
        let bytes: Vec<Bytes> = payload.iter().cloned().collect();
        blocking(move || {
            put_file(&writes, &path, &bytes, create).map_err(|e| write_error(&path, e))?;
            Ok(PutResult {
                e_tag: e_tag(&path),
                version: None,
            })
        })
        .await
    }

    async fn put_multipart_opts(
        &self,
        location: &Path,
        opts: PutMultipartOptions,
    ) -> object_store::Result<Box<dyn MultipartUpload>> {
        if !opts.attributes.is_empty() {
            return Err(object_store::Error::NotImplemented {
                operation: "`put_multipart_opts` with `opts.attributes` specified".into(),
                implementer: self.to_string(),
            });
        }
        Ok(Box::new(Upload {
            path: self.file(location)?,
            writes: self.writes.clone(),
            parts: Vec::new(),
        }))
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

    /// Deletes are not synced: a delete the disk loses leaves an object nothing names, which
    /// the next garbage collection deletes again.
    fn delete_stream(
        &self,
        locations: BoxStream<'static, object_store::Result<Path>>,
    ) -> BoxStream<'static, object_store::Result<Path>> {
        let inner = self.inner.clone();
        let disk = self.writes.disk.clone();
        locations
            .map(move |location| {
                let inner = inner.clone();
                let disk = disk.clone();
                async move {
                    let location = location?;
                    let path = inner.path_to_filesystem(&location)?;
                    blocking(move || {
                        disk.remove_file(&path).map_err(|e| write_error(&path, e))?;
                        Ok(location)
                    })
                    .await
                }
            })
            .buffered(10)
            .boxed()
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

    /// A copy is a second name of the same file (its bytes are as durable as the source's),
    /// made durable in its directory.
    async fn copy_opts(
        &self,
        from: &Path,
        to: &Path,
        options: CopyOptions,
    ) -> object_store::Result<()> {
        let (from, to) = (self.file(from)?, self.file(to)?);
        let writes = self.writes.clone();
        let create = options.mode == CopyMode::Create;
        blocking(move || {
            link_or_replace(&writes, &from, &to, create).map_err(|e| write_error(&to, e))
        })
        .await
    }

    async fn rename_opts(
        &self,
        from: &Path,
        to: &Path,
        options: RenameOptions,
    ) -> object_store::Result<()> {
        let (from, to) = (self.file(from)?, self.file(to)?);
        let writes = self.writes.clone();
        let create = options.target_mode == RenameTargetMode::Create;
        blocking(move || {
            let moved = if create {
                link_or_replace(&writes, &from, &to, true)
                    .and_then(|()| writes.disk.remove_file(&from))
            } else {
                retry_in_new_dirs(&writes, &to, || writes.disk.rename(&from, &to))
            };
            moved
                .and_then(|()| writes.sync_parent(&from))
                .and_then(|()| writes.sync_parent(&to))
                .map_err(|e| write_error(&to, e))
        })
        .await
    }
}

/// Runs `op`, and once more after creating `to`'s directory if that was missing.
fn retry_in_new_dirs(
    writes: &DurableWrites,
    to: &std::path::Path,
    op: impl Fn() -> std::io::Result<()>,
) -> std::io::Result<()> {
    match op() {
        Err(e) if e.kind() == ErrorKind::NotFound => match to.parent() {
            Some(dir) if !dir.exists() => {
                writes.create_dirs(dir)?;
                op()
            }
            _ => Err(e),
        },
        done => done,
    }
}

/// Gives `from` the name `to`: only if `to` is free (`create`), or replacing it (linked to a
/// staging name first, then renamed over it, so `to` is never absent); then syncs `to`'s
/// directory.
fn link_or_replace(
    writes: &DurableWrites,
    from: &std::path::Path,
    to: &std::path::Path,
    create: bool,
) -> std::io::Result<()> {
    if create {
        retry_in_new_dirs(writes, to, || writes.disk.hard_link(from, to))?;
    } else {
        let mut n = 1u64;
        loop {
            let mut staged = to.as_os_str().to_owned();
            staged.push(format!("#{n}"));
            let staged = PathBuf::from(staged);
            match retry_in_new_dirs(writes, to, || writes.disk.hard_link(from, &staged)) {
                Ok(()) => {
                    if let Err(e) = writes.disk.rename(&staged, to) {
                        let _ = writes.disk.remove_file(&staged);
                        return Err(e);
                    }
                    break;
                }
                Err(e) if e.kind() == ErrorKind::AlreadyExists => n += 1,
                Err(e) => return Err(e),
            }
        }
    }
    writes.sync_parent(to)
}

/// A multipart upload to a local file: its parts are held until it completes, then put as one
/// durable file (nothing in dynql uploads in parts; large files are put whole).
#[derive(Debug)]
struct Upload {
    path: PathBuf,
    writes: DurableWrites,
    parts: Vec<Bytes>,
}

#[async_trait]
impl MultipartUpload for Upload {
    fn put_part(&mut self, data: PutPayload) -> UploadPart {
        self.parts.extend(data.iter().cloned());
        Box::pin(async { Ok(()) })
    }

    async fn complete(&mut self) -> object_store::Result<PutResult> {
        let (path, writes) = (self.path.clone(), self.writes.clone());
        let parts = std::mem::take(&mut self.parts);
        blocking(move || {
            put_file(&writes, &path, &parts, false).map_err(|e| write_error(&path, e))?;
            Ok(PutResult {
                e_tag: e_tag(&path),
                version: None,
            })
        })
        .await
    }

    async fn abort(&mut self) -> object_store::Result<()> {
        self.parts.clear();
        Ok(())
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
