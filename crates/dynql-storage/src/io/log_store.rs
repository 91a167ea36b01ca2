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
/// [`LogStore::is_current`] says `true` only if record `seq` exists and `seq + 1` does not;
/// [`LogStore::set_aside_torn`] moves a record only while it is torn and the newest.
#[async_trait::async_trait]
pub trait LogStore: Send + Sync + std::fmt::Debug {
    /// Creates record `record.seq`; never overwrites.
    async fn append(&self, record: &CommitRecord) -> Result<Append>;

    /// The records after `after_seq`, in order (see [`read_after`] for the errors).
    async fn read_after(&self, after_seq: u64, leading_gap: bool) -> Result<Vec<LogEntry>>;

    /// Whether record `seq` is the newest, checked without listing the log.
    async fn is_current(&self, seq: u64) -> Result<bool>;

    /// Moves record `seq` out of the log when it is torn and the newest (see
    /// [`set_aside_torn`]).
    async fn set_aside_torn(&self, seq: u64) -> Result<SetAside>;
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

    async fn set_aside_torn(&self, seq: u64) -> Result<SetAside> {
        set_aside_torn(self.objects.as_ref(), seq).await
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

/// What [`set_aside_torn`] did with a record.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SetAside {
    /// Renamed to this path, which the listing skips: its number is free again.
    Moved(String),
    /// Left alone: it is no longer there or no longer torn (another process set it aside,
    /// and may have committed at its number since). Read the log again.
    Changed,
    /// Left alone: a record follows it, or one that was set aside does (so it had a
    /// successor once). It stays damage.
    Followed,
    /// Left alone: its new name (this path) is taken, so another process is setting it
    /// aside, or died doing so.
    Busy(String),
    /// Left alone: the object store cannot rename without risking an overwrite (an S3
    /// bucket without conditional copies). It stays damage, for every process alike.
    Unsupported,
}

/// Sets record `seq` aside when it is torn ([`crate::log::is_torn`]) and no record follows
/// it: renames it to `<seq>.json.<version>.torn` beside the log, which the listing skips, so
/// the next commit takes its number and the bytes stay for inspection.
///
/// Why this drops no commit: writers acknowledge a commit only once its record is durable,
/// and a record another live process is writing is never seen half-written (a `file://`
/// store writes a staging file and hard-links it into place; S3 and memory puts are
/// atomic). So a torn record is what a crash left of a commit nobody was told of, and no
/// commit can have followed it without a file after it in the log: a record, or a later
/// record set aside (then this one had a successor once and is not a tear but damage).
/// That is checked after the record is read.
///
/// Why two processes opening the store at once do no harm: the new name comes from the
/// torn file's version (e_tag, modification time, size), the same for both, and the rename
/// creates it only if absent. One of them moves the file; the other finds the name taken
/// ([`SetAside::Busy`]) or the record gone or whole ([`SetAside::Changed`]), and so never
/// renames a record that took the number in the meantime.
///
/// # Errors
/// Failures of the object store.
pub async fn set_aside_torn(store: &dyn ObjectStore, seq: u64) -> Result<SetAside> {
    let path = record_path(seq);
    let found = match store.get(&path).await {
        Ok(found) => found,
        Err(object_store::Error::NotFound { .. }) => return Ok(SetAside::Changed),
        Err(e) => return Err(e.into()),
    };
    let meta = found.meta.clone();
    let bytes = found.bytes().await?;
    if !matches!(decode_record(path.as_ref(), seq, &bytes), LogEntry::Damaged(d) if d.torn) {
        return Ok(SetAside::Changed);
    }
    // Every name in the log after this record's, set-aside records included.
    let later: Vec<_> = match store
        .list_with_offset(Some(&ObjectPath::from(LOG_DIR)), &path)
        .try_collect()
        .await
    {
        Ok(later) => later,
        // A file vanished under the listing (collected, or set aside by another process).
        Err(object_store::Error::NotFound { .. }) => return Ok(SetAside::Changed),
        Err(e) => return Err(e.into()),
    };
    let numbered = |name: &str| name.get(..20).and_then(|n| n.parse::<u64>().ok());
    if later
        .iter()
        .filter_map(|m| m.location.filename().and_then(numbered))
        .any(|s| s > seq)
    {
        return Ok(SetAside::Followed);
    }
    let version = format!(
        "{} {}.{:09} {}",
        meta.e_tag.as_deref().unwrap_or_default(),
        meta.last_modified.timestamp(),
        meta.last_modified.timestamp_subsec_nanos(),
        meta.size
    );
    let to = ObjectPath::from(format!(
        "{path}.{:016x}.torn",
        crate::kernel::checksum::hash(version.as_bytes())
    ));
    match store.rename_if_not_exists(&path, &to).await {
        Ok(()) => Ok(SetAside::Moved(to.to_string())),
        Err(object_store::Error::AlreadyExists { .. }) => Ok(SetAside::Busy(to.to_string())),
        Err(object_store::Error::NotFound { .. }) => Ok(SetAside::Changed),
        Err(
            object_store::Error::NotSupported { .. } | object_store::Error::NotImplemented { .. },
        ) => Ok(SetAside::Unsupported),
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

        async fn set_aside_torn(&self, seq: u64) -> Result<SetAside> {
            if self.fail_appends.load(Ordering::SeqCst) {
                return Err(injected());
            }
            self.inner.set_aside_torn(seq).await
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

    fn empty_record(seq: u64) -> CommitRecord {
        CommitRecord {
            seq,
            timestamp: seq,
            transaction_id: None,
            actions: vec![],
            previous: None,
            lost: None,
        }
    }

    /// Record `seq` cut short, as a crash leaves it.
    async fn put_torn(objects: &InMemory, seq: u64) {
        let bytes = encode_record(&empty_record(seq)).unwrap();
        let cut = bytes[..bytes.len() - 5].to_vec();
        objects.put(&record_path(seq), cut.into()).await.unwrap();
    }

    /// A torn record is moved once, by one of two processes trying at once, and only while
    /// nothing follows it: neither a record nor a later record set aside.
    #[tokio::test]
    async fn a_torn_record_is_set_aside_once_and_only_while_newest() {
        let objects = InMemory::new();
        append(&objects, &empty_record(1)).await.unwrap();
        put_torn(&objects, 2).await;
        let (a, b) = tokio::join!(set_aside_torn(&objects, 2), set_aside_torn(&objects, 2));
        let moved: Vec<_> = [a.unwrap(), b.unwrap()]
            .into_iter()
            .filter(|s| matches!(s, SetAside::Moved(_)))
            .collect();
        assert_eq!(moved.len(), 1, "{moved:?}");
        let entries = read_after(&objects, 0, false).await.unwrap();
        assert_eq!(entries.len(), 1, "the listing skips the set-aside file");
        // The number is free; a whole record there is never moved.
        assert_eq!(
            append(&objects, &empty_record(2)).await.unwrap(),
            Append::Committed
        );
        assert_eq!(
            set_aside_torn(&objects, 2).await.unwrap(),
            SetAside::Changed
        );
        // A torn record with a successor, or with a successor set aside, stays.
        put_torn(&objects, 3).await;
        append(&objects, &empty_record(4)).await.unwrap();
        assert_eq!(
            set_aside_torn(&objects, 3).await.unwrap(),
            SetAside::Followed
        );
        objects.delete(&record_path(4)).await.unwrap();
        put_torn(&objects, 4).await;
        assert!(matches!(
            set_aside_torn(&objects, 4).await.unwrap(),
            SetAside::Moved(_)
        ));
        assert_eq!(
            set_aside_torn(&objects, 3).await.unwrap(),
            SetAside::Followed
        );
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
