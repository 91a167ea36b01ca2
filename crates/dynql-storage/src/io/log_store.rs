//! The commit log's I/O: the [`LogStore`] trait a store commits and replays through, and its
//! implementation over an object store ([`ObjectLogStore`]): a record appended with
//! `PutMode::Create` (so that exactly one writer wins each sequence number), and the records
//! after a sequence number read back in order, with gaps and damage reported rather than
//! skipped. What a record holds and how it is encoded is [`crate::log`]'s; this module only
//! moves bytes. Tests put a [`LogStore`] of their own under a store
//! ([`crate::Store::with_log_store`]) to fail or delay its appends and reads.

use std::path::PathBuf;
use std::sync::Arc;

use futures::TryStreamExt;
use object_store::path::Path as ObjectPath;
use object_store::{ObjectStore, ObjectStoreExt, PutMode, PutOptions, PutPayload};

use crate::error::{Error, Result};
use crate::log::{decode_record, encode_record, record_path, CommitRecord, LogEntry, LOG_DIR};

/// Where a store's commit log lives: the three operations commits and replays need.
///
/// Invariants an implementation keeps: [`LogStore::append`] creates record `seq` only if no
/// record `seq` exists (one writer wins each number, [`Append::LostRace`] for the others);
/// [`LogStore::read_after`] returns records in sequence order, reporting damage and gaps
/// ([`LogEntry::Damaged`], [`LogEntry::Missing`]) rather than skipping them;
/// [`LogStore::is_current`] says `true` only if record `seq` exists and `seq + 1` does not.
#[async_trait::async_trait]
pub trait LogStore: Send + Sync + std::fmt::Debug {
    /// Creates record `record.seq`; never overwrites.
    async fn append(&self, record: &CommitRecord) -> Result<Append>;

    /// The records after `after_seq`, in order (see [`read_after`] for the errors).
    async fn read_after(&self, after_seq: u64, leading_gap: bool) -> Result<Vec<LogEntry>>;

    /// Whether record `seq` is the newest, checked without listing the log.
    async fn is_current(&self, seq: u64) -> Result<bool>;
}

/// The commit log as files under `log/` of an object store. A `file://` store's freshness
/// check stats the two record files directly (the object store would hop to a blocking
/// thread for each).
#[derive(Debug, Clone)]
pub struct ObjectLogStore {
    objects: Arc<dyn ObjectStore>,
    local_root: Option<PathBuf>,
}

impl ObjectLogStore {
    /// The log of `objects`; `local_root` is its directory where it is a local one.
    pub fn new(objects: Arc<dyn ObjectStore>, local_root: Option<PathBuf>) -> ObjectLogStore {
        ObjectLogStore {
            objects,
            local_root,
        }
    }
}

#[async_trait::async_trait]
impl LogStore for ObjectLogStore {
    async fn append(&self, record: &CommitRecord) -> Result<Append> {
        append(self.objects.as_ref(), record).await
    }

    async fn read_after(&self, after_seq: u64, leading_gap: bool) -> Result<Vec<LogEntry>> {
        read_after(self.objects.as_ref(), after_seq, leading_gap).await
    }

    /// Record `seq + 1` does not exist and record `seq` still does (garbage collection
    /// deletes records oldest first, so then nothing after `seq` was collected either).
    async fn is_current(&self, seq: u64) -> Result<bool> {
        if let Some(root) = &self.local_root {
            // Some(true/false) when known; an I/O error other than "not found" means "list".
            let exists = |seq: u64| match std::fs::metadata(root.join(record_path(seq).as_ref())) {
                Ok(_) => Some(true),
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => Some(false),
                Err(_) => None,
            };
            return Ok(exists(seq + 1) == Some(false) && exists(seq) == Some(true));
        }
        let exists = |seq: u64| async move {
            match self.objects.head(&record_path(seq)).await {
                Ok(_) => Ok(true),
                Err(object_store::Error::NotFound { .. }) => Ok(false),
                Err(e) => Err(Error::from(e)),
            }
        };
        Ok(!exists(seq + 1).await? && exists(seq).await?)
    }
}

/// Outcome of trying to append a record.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Append {
    Committed,
    /// Another writer created this sequence number first.
    LostRace,
}

/// Creates record `record.seq`; never overwrites.
pub async fn append(store: &dyn ObjectStore, record: &CommitRecord) -> Result<Append> {
    let bytes = encode_record(record)?;
    let opts = PutOptions {
        mode: PutMode::Create,
        ..Default::default()
    };
    match store
        .put_opts(&record_path(record.seq), PutPayload::from(bytes), opts)
        .await
    {
        Ok(_) => Ok(Append::Committed),
        Err(object_store::Error::AlreadyExists { .. }) => Ok(Append::LostRace),
        Err(e) => Err(e.into()),
    }
}

/// How many times [`read_after`] lists the log when records vanish under the listing.
const LIST_ATTEMPTS: usize = 4;

/// The longest run of missing records read as lost records; a longer jump in the numbering
/// is not a loss of a few files but a stray file name, and is refused.
const MAX_LOST_RECORDS: u64 = 10_000;

/// Reads the records after `after_seq`, in order; a record that fails its checksum or does
/// not decode is returned as [`LogEntry::Damaged`], one absent below a later record as
/// [`LogEntry::Missing`] (the caller decides whether it was lost or collected).
///
/// # Errors
/// [`Error::LogTruncated`] when the first record needed is absent (it may have been
/// collected after a newer checkpoint) unless `leading_gap` says to report it as missing;
/// [`Error::Corrupt`] for a jump of more than [`MAX_LOST_RECORDS`].
pub async fn read_after(
    store: &dyn ObjectStore,
    after_seq: u64,
    leading_gap: bool,
) -> Result<Vec<LogEntry>> {
    let prefix = ObjectPath::from(LOG_DIR);
    let offset = record_path(after_seq);
    // A record collected while the listing runs can fail it (a local listing stats each
    // file it finds): list again, the collection being over by then.
    let mut attempt = 0;
    let mut metas: Vec<_> = loop {
        attempt += 1;
        match store
            .list_with_offset(Some(&prefix), &offset)
            .try_collect()
            .await
        {
            Err(object_store::Error::NotFound { .. }) if attempt < LIST_ATTEMPTS => continue,
            listed => break listed?,
        }
    };
    metas.sort_by(|a, b| a.location.cmp(&b.location));
    let mut out = Vec::with_capacity(metas.len());
    let mut expect = after_seq + 1;
    for meta in metas {
        let name = meta.location.filename().unwrap_or_default().to_string();
        let Some(seq) = name
            .strip_suffix(".json")
            .and_then(|s| s.parse::<u64>().ok())
        else {
            continue; // not a record (a writer's temporary file)
        };
        if seq < expect {
            continue;
        }
        if seq > expect {
            // Records up to a checkpoint may have been collected: the caller reloads the
            // checkpoint when this is the first record it reads.
            if out.is_empty() && !leading_gap {
                return Err(Error::LogTruncated {
                    expected: expect,
                    first: seq,
                });
            }
            if seq - expect > MAX_LOST_RECORDS {
                return Err(Error::Corrupt {
                    path: meta.location.to_string(),
                    message: format!(
                        "commit log jumps from record {} to {seq}: more than {MAX_LOST_RECORDS} records cannot have been lost; is this file a record?",
                        expect - 1
                    ),
                });
            }
            for lost in expect..seq {
                // The listing may have raced the lost record's creation: look again.
                match store.get(&record_path(lost)).await {
                    Ok(found) => {
                        let bytes = found.bytes().await?;
                        out.push(decode_record(record_path(lost).as_ref(), lost, &bytes));
                    }
                    Err(object_store::Error::NotFound { .. }) => out.push(LogEntry::Missing {
                        seq: lost,
                        path: record_path(lost).to_string(),
                    }),
                    Err(e) => return Err(e.into()),
                }
            }
            expect = seq;
        }
        let bytes = match store.get(&meta.location).await {
            Ok(found) => found.bytes().await?,
            // Collected between the listing and this read (a newer checkpoint covers it):
            // as if the listing had started after it. What was read before it stands; the
            // next read finds the log truncated and reloads the checkpoint.
            Err(object_store::Error::NotFound { .. }) if out.is_empty() => {
                return Err(Error::LogTruncated {
                    expected: expect,
                    first: seq + 1,
                })
            }
            Err(object_store::Error::NotFound { .. }) => return Ok(out),
            Err(e) => return Err(e.into()),
        };
        out.push(decode_record(meta.location.as_ref(), seq, &bytes));
        expect += 1;
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

    use dynql_core::Value;
    use object_store::memory::InMemory;

    use super::*;
    use crate::kernel::mvcc::WriteKind;
    use crate::kernel::timestamp::Timestamp;
    use crate::store::Store;
    use crate::test_tables::{create_key_value_table, key_value_row};

    /// The object-store log, with appends and reads that fail while told to, and counted.
    #[derive(Debug)]
    struct FailingLog {
        inner: ObjectLogStore,
        fail_appends: AtomicBool,
        fail_reads: AtomicBool,
        appends: AtomicUsize,
    }

    fn injected() -> Error {
        object_store::Error::Generic {
            store: "test log",
            source: "injected failure".into(),
        }
        .into()
    }

    #[async_trait::async_trait]
    impl LogStore for FailingLog {
        async fn append(&self, record: &CommitRecord) -> Result<Append> {
            if self.fail_appends.load(Ordering::SeqCst) {
                return Err(injected());
            }
            self.appends.fetch_add(1, Ordering::SeqCst);
            self.inner.append(record).await
        }

        async fn read_after(&self, after_seq: u64, leading_gap: bool) -> Result<Vec<LogEntry>> {
            if self.fail_reads.load(Ordering::SeqCst) {
                return Err(injected());
            }
            self.inner.read_after(after_seq, leading_gap).await
        }

        async fn is_current(&self, seq: u64) -> Result<bool> {
            if self.fail_reads.load(Ordering::SeqCst) {
                return Err(injected());
            }
            self.inner.is_current(seq).await
        }
    }

    /// Overwrites row `(k, v)` of `//t`.
    async fn write(store: &Store, k: i64, v: i64) -> Result<Timestamp> {
        let rows = vec![key_value_row(k, v)];
        store
            .write_rows("//t", WriteKind::Overwrite, false, rows)
            .await
    }

    /// The rows of `//t` at the last commit.
    async fn latest(store: &Store) -> Vec<Vec<Value>> {
        store
            .read_rows("//t", Timestamp::SYNC_LAST_COMMITTED)
            .await
            .unwrap()
    }

    /// A store commits and replays through its `LogStore` only: a failed append fails the
    /// write and changes nothing a reader sees; a failed read fails the refresh with the
    /// log's error; once the faults clear, a second store over the same objects and log
    /// replays exactly what was committed.
    #[tokio::test]
    async fn a_store_commits_and_replays_through_its_log_store() {
        let objects: Arc<dyn ObjectStore> = Arc::new(InMemory::new());
        let log = Arc::new(FailingLog {
            inner: ObjectLogStore::new(objects.clone(), None),
            fail_appends: AtomicBool::new(false),
            fail_reads: AtomicBool::new(false),
            appends: AtomicUsize::new(0),
        });
        let store =
            Store::from_object_store(objects.clone(), "memory://").with_log_store(log.clone());
        create_key_value_table(&store, "//t").await;
        write(&store, 1, 10).await.unwrap();
        let committed = log.appends.load(Ordering::SeqCst);
        assert!(committed >= 2, "the table and the row were appended");

        log.fail_appends.store(true, Ordering::SeqCst);
        let err = write(&store, 2, 20).await.unwrap_err();
        assert!(err.to_string().contains("injected failure"), "{err}");
        log.fail_appends.store(false, Ordering::SeqCst);
        assert_eq!(log.appends.load(Ordering::SeqCst), committed);
        assert_eq!(
            latest(&store).await,
            vec![vec![Value::Int64(1), Value::Int64(10)]]
        );

        // A second store (another process) over the same objects and log.
        let other = Store::from_object_store(objects, "memory://").with_log_store(log.clone());
        log.fail_reads.store(true, Ordering::SeqCst);
        let err = other.refresh().await.unwrap_err();
        assert!(err.to_string().contains("injected failure"), "{err}");
        log.fail_reads.store(false, Ordering::SeqCst);
        assert_eq!(
            latest(&other).await,
            vec![vec![Value::Int64(1), Value::Int64(10)]]
        );
    }
}
