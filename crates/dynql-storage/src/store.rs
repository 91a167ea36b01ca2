//! The store: tables on an object store (`file://DIR`, `memory://`, `s3://`), changed only by
//! appending commit records to the [log](crate::log).
//!
//! ```text
//! <root>/_log/<seq:020>.json     one record per commit: catalog changes and row deltas
//! <root>/_checkpoints/…          the replayed state as of a log position (crate::io::checkpoint)
//! <root>/tables/<id>/…parquet    key-sorted chunks of versions (crate::chunk)
//! ```
//!
//! Opening the store loads the newest checkpoint and replays the log after it: the catalog
//! and, per table, the list of its chunks plus the *dynamic store* — versions not yet flushed,
//! by key. A commit reads the log tail, validates its actions against that state, and creates
//! the next record with `PutMode::Create`; losing the race to another writer means refresh and
//! retry, so concurrent writers never lose a commit. Reads merge chunks and the dynamic store
//! and resolve versions at a timestamp ([`mvcc`](crate::kernel::mvcc)), which gives time travel;
//! flush and compaction (`flush.rs`) move versions into chunks.
//!
//! The store in its parts: this file holds the handle ([`Store`]: opening, settings); the
//! catalog of tables, attributes and paths is `catalog.rs`; the replayed view (`State`,
//! `TableData`) is `state.rs`, and catching up with the log is `replay.rs`; appending a commit
//! (and retrying a lost race) is `commit.rs`; row writes and locks are `write.rs`, bulk writes
//! `bulk.rs`; conflict checks are `conflict.rs` (pure: state and decoded chunks in, a verdict
//! out).

use std::sync::{Arc, Mutex};

use object_store::local::LocalFileSystem;
use object_store::memory::InMemory;
use object_store::ObjectStore;

use dynql_core::Value;

use crate::clock::{Clock, Fresh, IdGenerator};
use crate::error::{Error, Result};
use crate::io::cache_entries::CacheAdmission;
use crate::io::chunk_cache::ChunkCache;
use crate::io::disk::{Disk, Durability, DurableWrites, OsDisk};
use crate::io::log_store::{LogStore, ObjectLogStore};
use crate::state::State;

/// Writes of at least this many rows (outside transactions) go straight to a chunk.
pub const LARGE_WRITE_ROWS: usize = 10_000;

/// A checkpoint is written after every this many commits.
pub const CHECKPOINT_INTERVAL: u64 = 64;

/// How many times a commit retries after losing the race for a sequence number.
pub(crate) const MAX_COMMIT_ATTEMPTS: usize = 64;

/// A row write: values in schema order (`None` = not written; computed columns filled).
pub type RowValues = Vec<Option<Value>>;

/// A dynql store on an object store.
#[derive(Clone)]
pub struct Store {
    pub(crate) objects: Arc<dyn ObjectStore>,
    url: String,
    pub(crate) state: Arc<Mutex<Arc<State>>>,
    pub(crate) cache: Arc<ChunkCache>,
    /// Rows lookups resolved ([`crate::io::lookup_cache`]).
    pub(crate) lookup_cache: Arc<crate::io::lookup_cache::LookupCache>,
    /// Decoded key filters of chunks ([`crate::key_filter`]).
    pub(crate) key_filters: Arc<crate::key_filter::KeyFilterCache>,
    /// How long garbage collection spares a chunk nothing references (it may be in flight).
    pub(crate) gc_grace_ms: u64,
    /// The commit log ([`crate::io::log_store`]): over `objects`, unless a test put its own.
    pub(crate) log: Arc<dyn LogStore>,
    /// See [`Store::with_page_windows`].
    pub(crate) page_windows: bool,
    /// Where the store's timestamps, times and ids come from ([`crate::clock`]).
    pub(crate) fresh: Fresh,
}

/// Default of [`Store::with_gc_grace_ms`]: one hour.
pub const GC_GRACE_MS: u64 = 3_600_000;

/// How a store is opened ([`Store::open_with`]): settings of this handle, not of the data.
#[derive(Clone, Debug, Default)]
pub struct StoreOptions {
    /// Whether a local store's writes are on disk before they are acknowledged (default:
    /// they are). `s3://` stores rely on the service; `memory://` has no disk.
    pub durability: Durability,
    /// The file system a local store writes through: the operating system's unless a test
    /// puts a model of a disk here (the crash simulation).
    pub disk: Option<Arc<dyn Disk>>,
}

impl Store {
    /// Opens the store at `url`: `file://DIR` (created if missing), a bare directory, or
    /// `memory://`, with the default [`StoreOptions`] (writes durable).
    ///
    /// # Errors
    /// [`Error::InvalidUrl`] for other schemes or an unusable directory.
    pub fn open(url: &str) -> Result<Store> {
        Store::open_with(url, StoreOptions::default())
    }

    /// Opens the store at `url` (as [`Store::open`]) with `options`.
    ///
    /// # Errors
    /// [`Error::InvalidUrl`] for other schemes or an unusable directory.
    pub fn open_with(url: &str, options: StoreOptions) -> Result<Store> {
        let bad = |m: &str| Error::InvalidUrl {
            url: url.to_string(),
            message: m.to_string(),
        };
        let local = |dir: &str| -> Result<Arc<dyn ObjectStore>> {
            let writes = DurableWrites {
                disk: options.disk.clone().unwrap_or_else(|| Arc::new(OsDisk)),
                durability: options.durability,
            };
            // A new store's directory is durable in its parent before anything is written
            // into it.
            writes
                .create_dirs(std::path::Path::new(dir))
                .map_err(|e| bad(&format!("cannot create directory: {e}")))?;
            Ok(Arc::new(crate::io::local_files::LocalFiles::with_disk(
                LocalFileSystem::new_with_prefix(dir).map_err(|e| bad(&e.to_string()))?,
                writes.disk,
                writes.durability,
            )))
        };
        if url.trim().is_empty() {
            return Err(bad(
                "the store URL is empty; use file://DIR, a directory, memory:// or s3://BUCKET/PREFIX",
            ));
        }
        let objects: Arc<dyn ObjectStore> = if let Some(dir) = url.strip_prefix("file://") {
            if dir.is_empty() {
                return Err(bad("file:// needs a directory, e.g. file://./dynql-data"));
            }
            local(dir)?
        } else if url.starts_with("memory://") {
            Arc::new(InMemory::new())
        } else if let Some(rest) = url.strip_prefix("s3://") {
            // s3://bucket[/prefix], configured from the usual AWS_* environment variables
            // (AWS_ENDPOINT and AWS_ALLOW_HTTP for S3-compatible servers).
            let (bucket, prefix) = rest.split_once('/').unwrap_or((rest, ""));
            if bucket.is_empty() {
                return Err(bad("s3:// needs a bucket, e.g. s3://bucket/prefix"));
            }
            let s3 = object_store::aws::AmazonS3Builder::from_env()
                .with_bucket_name(bucket)
                .build()
                .map_err(|e| bad(&e.to_string()))?;
            let prefix = prefix.trim_matches('/');
            if prefix.is_empty() {
                Arc::new(s3)
            } else {
                Arc::new(object_store::prefix::PrefixStore::new(s3, prefix))
            }
        } else if url.contains("://") {
            return Err(bad("supported schemes are file://, memory:// and s3://"));
        } else {
            local(url)?
        };
        let mut store = Store::from_object_store(objects, url);
        let dir = url.strip_prefix("file://").unwrap_or(url);
        if !url.contains("://") || url.starts_with("file://") {
            let root = std::fs::canonicalize(dir).ok();
            store.log = Arc::new(ObjectLogStore::new(store.objects.clone(), root));
        }
        Ok(store)
    }

    /// Whether a store was ever written at `url`: for a local directory, whether it holds a
    /// log or checkpoints (a missing or empty directory holds none, and opening it would
    /// create one). Other stores are taken to exist: `memory://` is always new and empty,
    /// and an S3 prefix is not asked.
    pub fn was_written(url: &str) -> bool {
        let dir = match url.strip_prefix("file://") {
            Some(dir) => dir,
            None if !url.contains("://") => url,
            None => return true,
        };
        let dir = std::path::Path::new(dir);
        dir.join(crate::log::LOG_DIR).exists()
            || dir.join(crate::io::checkpoint::CHECKPOINT_DIR).exists()
    }

    /// A store over an existing object store (tests wrap one to inject faults).
    pub fn from_object_store(objects: Arc<dyn ObjectStore>, url: &str) -> Store {
        Store {
            log: Arc::new(ObjectLogStore::new(objects.clone(), None)),
            objects,
            url: url.to_string(),
            state: Arc::new(Mutex::new(Arc::new(State::default()))),
            cache: Arc::new(ChunkCache::default()),
            lookup_cache: Arc::default(),
            key_filters: Arc::default(),
            gc_grace_ms: GC_GRACE_MS,
            page_windows: true,
            fresh: Fresh::default(),
        }
    }

    /// This store reading the time from `clock` instead of the wall clock (see
    /// [`crate::clock`]): commit timestamps, TTL's and compaction's "now", transaction
    /// deadlines.
    pub fn with_clock(mut self, clock: Arc<dyn Clock>) -> Store {
        self.fresh = self.fresh.with_clock(clock);
        self
    }

    /// This store making its ids (tables, chunks, nodes, locks, transactions) with `ids`.
    pub fn with_ids(mut self, ids: Arc<dyn IdGenerator>) -> Store {
        self.fresh = self.fresh.with_ids(ids);
        self
    }

    /// The store's clock and id generator.
    pub fn fresh(&self) -> &Fresh {
        &self.fresh
    }

    /// This store with its commit log in `log` instead of its object store's `log/` files:
    /// for tests that fail, delay or count a log's appends and reads (a store's log and its
    /// chunks are otherwise in one place).
    pub fn with_log_store(mut self, log: Arc<dyn LogStore>) -> Store {
        self.log = log;
        self
    }

    /// Whether narrow scans read only the pages of a row group that the page index selects
    /// (default `true`). Off, they read whole row groups: for comparison benchmarks and for
    /// diagnosing a suspect page index.
    pub fn with_page_windows(mut self, on: bool) -> Store {
        self.page_windows = on;
        self
    }

    /// Sets how many bytes of decoded chunks and row groups the store keeps for later reads
    /// (default 2 GiB; 0 keeps none). A session that
    /// queries the same tables again wants them kept; a one-shot command, which reads each row
    /// group once, wants little kept, so that its memory stays bounded by what it streams.
    pub fn with_chunk_cache_bytes(mut self, bytes: usize) -> Store {
        self.cache = Arc::new(ChunkCache::with_budget(bytes));
        self
    }

    /// Keeps at most `bytes` of decoded chunks and row groups for later reads, letting them
    /// in as `admission` says: [`CacheAdmission::SecondRead`] for one command, which keeps
    /// only what it reads twice (a join's lookups), not the row groups of a single pass.
    pub fn with_chunk_cache(mut self, bytes: usize, admission: CacheAdmission) -> Store {
        self.cache = Arc::new(ChunkCache::admitting(bytes, admission));
        self
    }

    /// Sets how long garbage collection spares an unreferenced chunk (default
    /// [`GC_GRACE_MS`]): a chunk is written before the commit that names it, so a younger one
    /// may belong to a commit in flight. Tests use 0.
    pub fn with_gc_grace_ms(mut self, ms: u64) -> Store {
        self.gc_grace_ms = ms;
        self
    }

    /// The URL the store was opened with.
    pub fn url(&self) -> &str {
        &self.url
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kernel::catalog::{validate_path, TableOptions};
    use crate::kernel::mvcc::WriteKind;
    use crate::kernel::pivots::validate_tablets;
    use crate::kernel::timestamp::Timestamp;
    use dynql_core::TableSchema;

    fn schema() -> TableSchema {
        TableSchema::parse("[{name=k;type=int64;sort_order=ascending};{name=v;type=string}]")
            .unwrap()
    }

    fn row(k: i64, v: &str) -> Vec<Value> {
        vec![Value::Int64(k), Value::string(v)]
    }

    fn write(r: Vec<Value>) -> RowValues {
        r.into_iter().map(Some).collect()
    }

    /// A reader's pinned state and the state after the next commit share every table the
    /// commit did not write: replay copies what it changes, not the store.
    #[tokio::test]
    async fn a_commit_copies_only_the_tables_it_writes_while_a_state_is_pinned() {
        let store = Store::open("memory://").unwrap();
        for t in ["//a", "//b"] {
            store
                .create_table(t, schema(), TableOptions::default())
                .await
                .unwrap();
            store
                .write_rows(t, WriteKind::Overwrite, false, vec![write(row(1, "x"))])
                .await
                .unwrap();
        }
        let pinned = store.snapshot().await.unwrap();
        let before = store.refresh().await.unwrap();
        store
            .write_rows("//b", WriteKind::Overwrite, false, vec![write(row(2, "y"))])
            .await
            .unwrap();
        let after = store.refresh().await.unwrap();
        assert!(!Arc::ptr_eq(&before, &after));
        assert!(before.tables.shares("//a", &after.tables));
        assert!(!before.tables.shares("//b", &after.tables));
        // The pinned state still holds what it pinned.
        assert_eq!(before.tables["//b"].1.sorted.len(), 1);
        assert_eq!(after.tables["//b"].1.sorted.len(), 2);
        drop(pinned);
    }

    #[tokio::test]
    async fn upserts_replace_by_key_deletes_hide_and_old_timestamps_stay_readable() {
        let store = Store::open("memory://").unwrap();
        store
            .create_table("//t", schema(), TableOptions::default())
            .await
            .unwrap();
        let t1 = store
            .write_rows(
                "//t",
                WriteKind::Overwrite,
                false,
                vec![write(row(2, "b")), write(row(1, "a"))],
            )
            .await
            .unwrap();
        let t2 = store
            .write_rows("//t", WriteKind::Overwrite, false, vec![write(row(2, "B"))])
            .await
            .unwrap();
        let t3 = store
            .write_rows(
                "//t",
                WriteKind::Delete,
                false,
                vec![vec![Some(Value::Int64(1)), None]],
            )
            .await
            .unwrap();
        assert!(t1 < t2 && t2 < t3);
        assert_eq!(
            store
                .read_rows("//t", Timestamp::SYNC_LAST_COMMITTED)
                .await
                .unwrap(),
            vec![row(2, "B")]
        );
        assert_eq!(
            store.read_rows("//t", t2).await.unwrap(),
            vec![row(1, "a"), row(2, "B")]
        );
        assert_eq!(
            store.read_rows("//t", t1).await.unwrap(),
            vec![row(1, "a"), row(2, "b")]
        );
        let found = store
            .lookup_rows("//t", &[vec![Value::Int64(2)], vec![Value::Int64(1)]], t1)
            .await
            .unwrap();
        assert_eq!(found, vec![Some(row(2, "b")), Some(row(1, "a"))]);
    }

    #[tokio::test]
    async fn persists_across_reopen_of_a_directory() {
        let dir = tempfile::tempdir().unwrap();
        let url = format!("file://{}", dir.path().display());
        let store = Store::open(&url).unwrap();
        let recursive = TableOptions {
            recursive: true,
            ..TableOptions::default()
        };
        store
            .create_table("//a/t", schema(), recursive)
            .await
            .unwrap();
        store
            .write_rows(
                "//a/t",
                WriteKind::Overwrite,
                false,
                vec![write(row(1, "x"))],
            )
            .await
            .unwrap();
        let again = Store::open(&url).unwrap();
        assert_eq!(
            again.read_rows("//a/t", Timestamp::MAX).await.unwrap(),
            vec![row(1, "x")]
        );
        assert!(matches!(
            again
                .create_table("//a/t", schema(), TableOptions::default())
                .await,
            Err(Error::AlreadyExists { .. })
        ));
        again.remove_table("//a/t").await.unwrap();
        assert!(matches!(
            store.table("//a/t").await,
            Err(Error::NoSuchTable { .. })
        ));
    }

    #[tokio::test]
    async fn concurrent_writers_lose_no_commit() {
        let dir = tempfile::tempdir().unwrap();
        let url = format!("file://{}", dir.path().display());
        Store::open(&url)
            .unwrap()
            .create_table("//t", schema(), TableOptions::default())
            .await
            .unwrap();
        let mut tasks = Vec::new();
        for w in 0..4 {
            let url = url.clone();
            tasks.push(tokio::spawn(async move {
                // Each writer has its own Store, as separate processes would.
                let store = Store::open(&url).unwrap();
                for i in 0..10 {
                    store
                        .write_rows(
                            "//t",
                            WriteKind::Overwrite,
                            false,
                            vec![write(row(w * 100 + i, "x"))],
                        )
                        .await
                        .unwrap();
                }
            }));
        }
        for t in tasks {
            t.await.unwrap();
        }
        let rows = Store::open(&url)
            .unwrap()
            .read_rows("//t", Timestamp::MAX)
            .await
            .unwrap();
        assert_eq!(rows.len(), 40);
    }

    #[tokio::test]
    async fn large_writes_go_to_a_chunk_and_replay_like_inline_ones() {
        let dir = tempfile::tempdir().unwrap();
        let url = format!("file://{}", dir.path().display());
        let store = Store::open(&url).unwrap();
        store
            .create_table("//t", schema(), TableOptions::default())
            .await
            .unwrap();
        let n = LARGE_WRITE_ROWS as i64 + 5;
        let rows: Vec<RowValues> = (0..n)
            .map(|k| write(row(n - 1 - k, &format!("v{k}"))))
            .collect();
        let t1 = store
            .write_rows("//t", WriteKind::Overwrite, false, rows)
            .await
            .unwrap();
        store
            .write_rows(
                "//t",
                WriteKind::Update,
                false,
                vec![write(row(3, "inline"))],
            )
            .await
            .unwrap();
        let record =
            std::fs::read_to_string(dir.path().join("_log").join(format!("{:020}.json", 2)))
                .unwrap();
        assert!(
            record.contains("\"chunk\":\"tables/"),
            "the large write is not in a chunk: {}",
            &record[..200.min(record.len())]
        );
        assert!(record.len() < 1000, "rows were inlined anyway");
        for s in [Store::open(&url).unwrap(), store.clone()] {
            let all = s.read_rows("//t", Timestamp::MAX).await.unwrap();
            assert_eq!(all.len(), n as usize);
            assert_eq!(all[3], row(3, "inline"));
            assert_eq!(
                s.read_rows("//t", t1).await.unwrap()[3],
                row(3, &format!("v{}", n - 4))
            );
        }
        // A checkpoint keeps the data; its GC keeps the write chunk a remaining record names.
        store.checkpoint().await.unwrap();
        store.checkpoint().await.unwrap();
        assert_eq!(
            Store::open(&url)
                .unwrap()
                .read_rows("//t", Timestamp::MAX)
                .await
                .unwrap()
                .len(),
            n as usize
        );
    }

    #[tokio::test]
    async fn a_corrupt_record_is_a_clear_error() {
        let dir = tempfile::tempdir().unwrap();
        let url = format!("file://{}", dir.path().display());
        let store = Store::open(&url).unwrap();
        store
            .create_table("//t", schema(), TableOptions::default())
            .await
            .unwrap();
        std::fs::write(
            dir.path().join("_log").join(format!("{:020}.json", 2)),
            b"{not json",
        )
        .unwrap();
        // Nothing says which tables the record touched: every table is damaged, and says
        // which record to look at; the catalog itself still lists them.
        let reopened = Store::open(&url).unwrap();
        assert_eq!(reopened.tables().await.unwrap().len(), 1);
        let err = reopened.read_rows("//t", Timestamp::MAX).await.unwrap_err();
        assert!(matches!(err, Error::Damaged { .. }), "{err}");
        assert!(err.to_string().contains("log record 2"), "{err}");
    }

    #[test]
    fn validates_pivots_and_paths() {
        let s = schema();
        let bad = |p: Vec<Vec<Value>>| {
            validate_tablets(
                &s,
                &TableOptions {
                    pivot_keys: Some(p),
                    ..TableOptions::default()
                },
            )
            .is_err()
        };
        assert!(bad(vec![vec![Value::Int64(1)]]));
        assert!(bad(vec![
            vec![],
            vec![Value::Int64(5)],
            vec![Value::Int64(5)]
        ]));
        assert!(bad(vec![vec![], vec![Value::string("x")]]));
        assert!(!bad(vec![
            vec![],
            vec![Value::Int64(5)],
            vec![Value::Int64(7)]
        ]));
        let both = |n| {
            validate_tablets(
                &s,
                &TableOptions {
                    pivot_keys: Some(vec![vec![], vec![Value::Int64(5)]]),
                    tablet_count: Some(n),
                    ..TableOptions::default()
                },
            )
        };
        assert!(both(2).is_ok());
        assert!(both(3).is_err());
        assert!(validate_path("//t").is_ok());
        assert!(validate_path("//home/user-1/t_2.v3").is_ok());
        for bad in [
            "/t",
            "//t/",
            "//a//b",
            "//a/@schema",
            "//a]b",
            "//a[b",
            "//a\nb",
            "//a/../b",
            "//a/./b",
            "//..",
            "//a&",
            "//a*b",
            "//a{b}",
            "//a<b>",
            "//a\\b",
            "//a\tb",
        ] {
            assert!(validate_path(bad).is_err(), "{bad:?} was accepted");
        }
    }
}
