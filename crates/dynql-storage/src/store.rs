//! The store: tables on an object store (`file://DIR`, `memory://`, `s3://`), changed only by
//! appending commit records to the [log](crate::log).
//!
//! ```text
//! <root>/_log/<seq:020>.json     one record per commit: catalog changes and row deltas
//! <root>/_checkpoints/…          the replayed state as of a log position (crate::checkpoint)
//! <root>/tables/<id>/…parquet    key-sorted chunks of versions (crate::chunk)
//! ```
//!
//! Opening the store loads the newest checkpoint and replays the log after it: the catalog
//! and, per table, the list of its chunks plus the *dynamic store* — versions not yet flushed,
//! by key. A commit reads the log tail, validates its actions against that state, and creates
//! the next record with `PutMode::Create`; losing the race to another writer means refresh and
//! retry, so concurrent writers never lose a commit. Reads merge chunks and the dynamic store
//! and resolve versions at a timestamp ([`mvcc`](crate::mvcc)), which gives time travel;
//! flush and compaction (`flush.rs`) move versions into chunks.

use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet};
use std::sync::atomic::{AtomicU64, Ordering as AtomicOrdering};
use std::sync::{Arc, Mutex};

use object_store::local::LocalFileSystem;
use object_store::memory::InMemory;
use object_store::path::Path as ObjectPath;
use object_store::{ObjectStore, ObjectStoreExt, PutPayload};
use serde::{Deserialize, Serialize};

use dynql_core::{compare_rows, TableSchema, Value, Yson};

use crate::chunk::ChunkRef;
use crate::chunk_cache::ChunkCache;
use crate::conflict::{all_groups, check_key, write_groups, Claim, LockDelta, LockMode};
use crate::error::{Error, Result};
use crate::log::{self, Action, Append, CommitRecord};
use crate::mvcc::{RowDelta, WriteKind};
use crate::tablets::validate_tablets;
use crate::timestamp::Timestamp;

/// Writes of at least this many rows (outside transactions) go straight to a chunk.
pub const LARGE_WRITE_ROWS: usize = 10_000;

/// A checkpoint is written after every this many commits.
pub const CHECKPOINT_INTERVAL: u64 = 64;

/// How many times a commit retries after losing the race for a sequence number.
const MAX_COMMIT_ATTEMPTS: usize = 64;

/// Attributes given when a table is created, beyond its schema.
#[derive(Debug, Clone, Default)]
pub struct TableOptions {
    /// Number of tablets (`tablet_count`).
    pub tablet_count: Option<usize>,
    /// Pivot keys (`pivot_keys`), first one empty.
    pub pivot_keys: Option<Vec<Vec<Value>>>,
    /// Version retention (`min_data_versions`, `max_data_versions`, `min_data_ttl`,
    /// `max_data_ttl`).
    pub retention: crate::compaction::Retention,
    /// First row index of each tablet of an ordered table (`trimmed_row_counts`; needs
    /// `tablet_count` of the same length).
    pub trimmed_row_counts: Option<Vec<u64>>,
    /// `commit_ordering` (`weak` or `strong`).
    pub commit_ordering: Option<String>,
    /// `mount_config/max_ordered_tablet_data_weight`: most data weight a tablet of an ordered
    /// table may hold.
    pub max_ordered_tablet_data_weight: Option<u64>,
}

/// What the catalog records of a table.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct TableEntry {
    pub id: String,
    pub schema: TableSchema,
    pub tablet_count: usize,
    /// Pivot keys as text YSON lists, one per tablet (sorted tables).
    #[serde(default)]
    pub pivot_keys: Vec<String>,
    /// Version retention applied by compaction.
    #[serde(default)]
    pub retention: crate::compaction::Retention,
    /// Initial trimmed row counts of an ordered table's tablets (from `trimmed_row_counts`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub trimmed_row_counts: Vec<u64>,
    /// Mounted (default: tables are created mounted), frozen or unmounted.
    #[serde(default)]
    pub tablet_state: crate::tablets::TabletState,
    /// `commit_ordering`: `weak` (default) or `strong`; with one totally ordered log both
    /// append rows in commit order.
    #[serde(default = "weak")]
    pub commit_ordering: String,
    /// `mount_config/max_ordered_tablet_data_weight`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_ordered_tablet_data_weight: Option<u64>,
    /// False after `alter-table --dynamic false`: the table is static, and neither
    /// `select_rows` nor writes accept it.
    #[serde(default = "yes")]
    pub dynamic: bool,
}

fn weak() -> String {
    "weak".into()
}

fn yes() -> bool {
    true
}

/// One table's data: versioned deltas by key (sorted) or appended rows (ordered).
#[derive(Debug, Clone, Default)]
pub(crate) struct TableData {
    /// The dynamic store: versions not yet flushed to a chunk, by key, in commit order.
    pub(crate) sorted: BTreeMap<KeyOrd, Vec<RowDelta>>,
    /// Key-sorted chunks holding older versions, oldest first: every version in a chunk is
    /// older than every version in a later chunk and in the dynamic store.
    pub(crate) chunks: Vec<ChunkRef>,
    pub(crate) locks: BTreeMap<KeyOrd, Vec<LockDelta>>,
    /// The tablets of an ordered table.
    pub(crate) queues: Vec<crate::queue::Queue>,
    /// The newest compaction horizon applied (see [`Action::Compact`]): a transaction that
    /// started before it may have lost the evidence of a conflict, so its commit is refused.
    pub(crate) compaction_horizon: Timestamp,
    /// Why the table's state is unknown (a log record it depends on does not apply or cannot
    /// be read, a chunk a logged write names is damaged): reads and writes of it fail with
    /// [`Error::Damaged`], later actions on it are not applied, and it can be removed.
    pub(crate) damage: Option<Arc<str>>,
}

impl TableData {
    /// Adds one version of a sorted table to its key's history.
    pub(crate) fn push_version(&mut self, key_count: usize, delta: RowDelta) {
        let key = delta.values[..key_count]
            .iter()
            .map(|v| v.clone().unwrap_or(Value::Null))
            .collect();
        self.sorted.entry(KeyOrd(key)).or_default().push(delta);
    }

    /// Whether nothing committed after `start` conflicts with `claim` on key `k`; `flushed`
    /// are the key's versions from chunks newer than `start`.
    #[allow(clippy::too_many_arguments)]
    fn key_is_free(
        &self,
        schema: &TableSchema,
        start: Timestamp,
        claim: Claim,
        groups: &BTreeSet<String>,
        k: &KeyOrd,
        flushed: &[RowDelta],
    ) -> bool {
        let memory = self.sorted.get(k).map(Vec::as_slice).unwrap_or(&[]);
        let locks = self.locks.get(k).map(Vec::as_slice).unwrap_or(&[]);
        check_key(schema, start, claim, groups, memory, locks)
            && check_key(schema, start, claim, groups, flushed, &[])
    }

    /// Number of stored versions (chunks and dynamic store).
    pub(crate) fn version_count(&self) -> usize {
        self.chunks.iter().map(|c| c.rows as usize).sum::<usize>()
            + self.sorted.values().map(Vec::len).sum::<usize>()
            + self.queues.iter().map(|q| q.rows.len()).sum::<usize>()
    }

    /// Drops the dynamic store's versions up to `up_to` (they are now in a chunk).
    pub(crate) fn forget_flushed(&mut self, up_to: Timestamp) {
        self.sorted.retain(|_, versions| {
            versions.retain(|d| d.timestamp > up_to);
            !versions.is_empty()
        });
    }
}

/// The replayed log.
#[derive(Debug, Clone, Default)]
pub(crate) struct State {
    pub(crate) seq: u64,
    pub(crate) last_timestamp: Timestamp,
    pub(crate) tables: BTreeMap<String, (TableEntry, TableData)>,
    pub(crate) committed_transactions: HashSet<String>,
    /// Damage found while replaying that no current table carries (an action for a table
    /// that is not there): reported by [`Store::check`], harmless to the tables there are.
    pub(crate) notes: Vec<String>,
}

impl State {
    /// The table at `path` for reading or writing its rows.
    ///
    /// # Errors
    /// [`Error::NoSuchTable`], or [`Error::Damaged`] when its state is unknown.
    pub(crate) fn table_data(&self, path: &str) -> Result<&(TableEntry, TableData)> {
        let table = self
            .tables
            .get(path)
            .ok_or_else(|| Error::NoSuchTable { path: path.into() })?;
        if let Some(reason) = &table.1.damage {
            return Err(Error::Damaged {
                path: path.into(),
                reason: reason.to_string(),
            });
        }
        Ok(table)
    }

    /// Whether replay found damage anywhere.
    pub(crate) fn has_damage(&self) -> bool {
        !self.notes.is_empty() || self.tables.values().any(|(_, d)| d.damage.is_some())
    }

    /// Marks the tables a record names as damaged: by (path, id) when known, every table
    /// when the record is unreadable even as to which tables it touches.
    pub(crate) fn mark_damaged(&mut self, tables: Option<&[(String, String)]>, reason: &str) {
        let reason: Arc<str> = Arc::from(reason);
        match tables {
            Some(tables) => {
                for (path, id) in tables {
                    match self.tables.get_mut(path).filter(|(e, _)| e.id == *id) {
                        Some((_, data)) => {
                            data.damage.get_or_insert_with(|| reason.clone());
                        }
                        None => self.notes.push(format!("{path} (id {id}): {reason}")),
                    }
                }
            }
            None => {
                for (_, data) in self.tables.values_mut() {
                    data.damage.get_or_insert_with(|| reason.clone());
                }
                self.notes.push(reason.to_string());
            }
        }
    }
}

/// The value of a writable attribute (`set PATH/@NAME`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum AttributeValue {
    Number(u64),
    Text(String),
}

/// Attributes `set` can change: the retention settings, `commit_ordering` and
/// `mount_config/max_ordered_tablet_data_weight`.
pub const WRITABLE_ATTRIBUTES: &[&str] = &[
    "min_data_versions",
    "max_data_versions",
    "min_data_ttl",
    "max_data_ttl",
    "commit_ordering",
    "mount_config/max_ordered_tablet_data_weight",
];

/// Applies a writable attribute to a catalog entry, checking it (the same check runs when
/// the change is made and when it is replayed).
pub(crate) fn set_attribute(
    entry: &mut TableEntry,
    name: &str,
    value: &AttributeValue,
) -> Result<()> {
    let number = || match value {
        AttributeValue::Number(n) => Ok(*n),
        AttributeValue::Text(t) => Err(Error::Invalid(format!(
            "Attribute {name:?} must be a non-negative integer, not {t:?}"
        ))),
    };
    let mut next = entry.clone();
    match name {
        "min_data_versions" => next.retention.min_data_versions = number()?,
        "max_data_versions" => next.retention.max_data_versions = number()?,
        "min_data_ttl" => next.retention.min_data_ttl = number()?,
        "max_data_ttl" => next.retention.max_data_ttl = number()?,
        "mount_config/max_ordered_tablet_data_weight" => {
            next.max_ordered_tablet_data_weight = Some(number()?)
        }
        "commit_ordering" => match value {
            AttributeValue::Text(t) if t == "weak" || t == "strong" => {
                next.commit_ordering = t.clone()
            }
            _ => {
                return Err(Error::Invalid(
                    "Attribute \"commit_ordering\" must be weak or strong".into(),
                ))
            }
        },
        other => {
            return Err(Error::Invalid(format!(
                "Attribute {other:?} cannot be set (writable: {})",
                WRITABLE_ATTRIBUTES.join(", ")
            )))
        }
    }
    let r = next.retention;
    if r.min_data_versions > r.max_data_versions || r.min_data_ttl > r.max_data_ttl {
        return Err(Error::Invalid(
            "min_data_versions must not exceed max_data_versions, nor min_data_ttl max_data_ttl"
                .into(),
        ));
    }
    *entry = next;
    Ok(())
}

/// Checks that a table can be created at `path`: nothing is there, and no table is a parent.
fn check_new_path(state: &State, path: &str) -> Result<()> {
    if state.tables.contains_key(path) {
        return Err(Error::AlreadyExists { path: path.into() });
    }
    if let Some(prefix) = state
        .tables
        .keys()
        .find(|p| path.starts_with(&format!("{p}/")))
    {
        return Err(Error::Invalid(format!(
            "Cannot create {path}: {prefix} is a table, not a directory"
        )));
    }
    Ok(())
}

/// A row write: values in schema order (`None` = not written; computed columns filled).
pub type RowValues = Vec<Option<Value>>;

/// A dynql store on an object store.
#[derive(Clone)]
pub struct Store {
    pub(crate) objects: Arc<dyn ObjectStore>,
    url: String,
    state: Arc<Mutex<Arc<State>>>,
    pub(crate) cache: Arc<ChunkCache>,
    /// How long garbage collection spares a chunk nothing references (it may be in flight).
    pub(crate) gc_grace_ms: u64,
    /// The directory of a `file://` store: the freshness check stats log records directly
    /// (the object store would hop to a blocking thread for each).
    local_root: Option<std::path::PathBuf>,
    /// See [`Store::with_page_windows`].
    pub(crate) page_windows: bool,
}

/// Default of [`Store::with_gc_grace_ms`]: one hour.
pub const GC_GRACE_MS: u64 = 3_600_000;

static NEXT_ID: AtomicU64 = AtomicU64::new(0);

pub(crate) fn fresh_id() -> String {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_nanos())
        .unwrap_or(0);
    format!(
        "{nanos:x}-{:x}-{:x}",
        std::process::id(),
        NEXT_ID.fetch_add(1, AtomicOrdering::Relaxed)
    )
}

/// Characters with a meaning in YPath (attributes, ranges, column selectors, escapes): a
/// table name holding one could be created but never addressed.
const YPATH_SPECIAL: &[char] = &['@', '&', '*', '[', ']', '{', '}', '<', '>', '\\'];

/// Checks a Cypress-style table path (`//a/b`): absolute, components not empty, not `.` or
/// `..`, without control characters or YPath's special characters.
pub fn validate_path(path: &str) -> Result<()> {
    let invalid = |why: String| {
        Err(Error::Invalid(format!(
            "Invalid path {path:?}: {why}; expected an absolute path such as //home/user/table"
        )))
    };
    if !path.starts_with("//") || path.len() < 3 || path.ends_with('/') {
        return invalid("it must start with // and not end with /".into());
    }
    for component in path[2..].split('/') {
        if component.is_empty() {
            return invalid("it has an empty component".into());
        }
        if component == "." || component == ".." {
            return invalid(format!(
                "{component:?} is not a name (paths are not relative)"
            ));
        }
        if let Some(c) = component
            .chars()
            .find(|c| c.is_control() || YPATH_SPECIAL.contains(c))
        {
            return invalid(format!(
                "{c:?} cannot be part of a name (YPath gives it a meaning)"
            ));
        }
    }
    Ok(())
}

impl Store {
    /// Opens the store at `url`: `file://DIR` (created if missing), a bare directory, or
    /// `memory://`.
    ///
    /// # Errors
    /// [`Error::InvalidUrl`] for other schemes or an unusable directory.
    pub fn open(url: &str) -> Result<Store> {
        let bad = |m: &str| Error::InvalidUrl {
            url: url.to_string(),
            message: m.to_string(),
        };
        let local = |dir: &str| -> Result<Arc<dyn ObjectStore>> {
            std::fs::create_dir_all(dir)
                .map_err(|e| bad(&format!("cannot create directory: {e}")))?;
            Ok(Arc::new(
                LocalFileSystem::new_with_prefix(dir).map_err(|e| bad(&e.to_string()))?,
            ))
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
            store.local_root = std::fs::canonicalize(dir).ok();
        }
        Ok(store)
    }

    /// A store over an existing object store (tests wrap one to inject faults).
    pub fn from_object_store(objects: Arc<dyn ObjectStore>, url: &str) -> Store {
        Store {
            objects,
            url: url.to_string(),
            state: Arc::new(Mutex::new(Arc::new(State::default()))),
            cache: Arc::new(ChunkCache::default()),
            gc_grace_ms: GC_GRACE_MS,
            local_root: None,
            page_windows: true,
        }
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

    /// Sets how long garbage collection spares an unreferenced chunk (default
    /// [`GC_GRACE_MS`]): a chunk is written before the commit that names it, so a younger one
    /// may belong to a commit in flight. Tests use 0.
    pub fn with_gc_grace_ms(mut self, ms: u64) -> Store {
        self.gc_grace_ms = ms;
        self
    }

    /// Sets a writable attribute (see [`WRITABLE_ATTRIBUTES`]); takes effect for the
    /// following reads, writes and compactions (no remount needed).
    ///
    /// # Errors
    /// No such table, an attribute that cannot be set, or a value of the wrong kind.
    pub async fn set_attribute(&self, path: &str, name: &str, value: AttributeValue) -> Result<()> {
        self.commit(|state| {
            // A damaged table takes no change but its removal (replay would not apply one).
            let (entry, _) = state.table_data(path)?;
            set_attribute(&mut entry.clone(), name, &value)?;
            Ok(vec![Action::SetAttribute {
                path: path.into(),
                table_id: entry.id.clone(),
                name: name.into(),
                value: value.clone(),
            }])
        })
        .await?;
        Ok(())
    }

    /// The URL the store was opened with.
    pub fn url(&self) -> &str {
        &self.url
    }

    fn current(&self) -> Arc<State> {
        match self.state.lock() {
            Ok(s) => s.clone(),
            Err(poisoned) => poisoned.into_inner().clone(),
        }
    }

    /// Reads commits made since the last refresh (by this or any other process).
    pub(crate) async fn refresh(&self) -> Result<Arc<State>> {
        let mut current = self.current();
        if current.seq == 0 {
            if let Some(state) = crate::checkpoint::load_latest(self.objects.as_ref()).await? {
                let mut guard = match self.state.lock() {
                    Ok(g) => g,
                    Err(poisoned) => poisoned.into_inner(),
                };
                if guard.seq < state.seq {
                    *guard = Arc::new(state);
                }
                current = guard.clone();
            }
        }
        if current.seq > 0 && self.is_current(current.seq).await? {
            return Ok(current);
        }
        let records = match log::read_after(self.objects.as_ref(), current.seq).await {
            Err(Error::LogTruncated { expected, first }) => {
                // This reader fell behind a collected part of the log: start again from the
                // newest checkpoint, which must cover the collected records.
                let state = crate::checkpoint::load_latest(self.objects.as_ref()).await?;
                match state {
                    Some(state) if state.seq + 1 >= first => {
                        let mut guard = match self.state.lock() {
                            Ok(g) => g,
                            Err(poisoned) => poisoned.into_inner(),
                        };
                        *guard = Arc::new(state);
                        current = guard.clone();
                    }
                    _ => {
                        return Err(Error::Corrupt {
                            path: log::LOG_DIR.into(),
                            message: format!("commit log starts at record {first} but record {expected} is needed and no checkpoint covers it"),
                        })
                    }
                }
                log::read_after(self.objects.as_ref(), current.seq).await?
            }
            other => other?,
        };
        if records.is_empty() {
            return Ok(current);
        }
        let intact: Vec<&CommitRecord> = records
            .iter()
            .filter_map(|e| match e {
                log::LogEntry::Record(r) => Some(r),
                log::LogEntry::Damaged(_) => None,
            })
            .collect();
        let flushed = crate::replay::flushed_later(&intact);
        // Fetch the chunks of large writes before taking the lock (no I/O under it).
        let mut chunks = HashMap::new();
        for r in &intact {
            for a in &r.actions {
                if let Action::WriteRows {
                    chunk: Some(c),
                    chunk_checksum,
                    table_id,
                    ..
                } = a
                {
                    if crate::replay::is_flushed(&flushed, table_id, r.timestamp) {
                        continue;
                    }
                    let fetched = self.fetch_logged_chunk(c, chunk_checksum.as_ref()).await?;
                    chunks.insert(c.clone(), fetched);
                }
            }
        }
        let mut guard = match self.state.lock() {
            Ok(g) => g,
            Err(poisoned) => poisoned.into_inner(),
        };
        let state = Arc::make_mut(&mut guard);
        for entry in records {
            match entry {
                log::LogEntry::Record(r) if r.seq == state.seq + 1 => {
                    crate::replay::apply(state, &r, &chunks, &flushed)
                }
                log::LogEntry::Damaged(d) if d.seq == state.seq + 1 => {
                    crate::replay::apply_damaged(state, &d)
                }
                _ => {}
            }
        }
        Ok(guard.clone())
    }

    /// The bytes of a chunk a logged write names, or why they cannot be used (missing,
    /// damaged): that damages the table the write belongs to, not the whole store. Other
    /// failures (the object store is unreachable) fail the caller.
    async fn fetch_logged_chunk(
        &self,
        chunk: &str,
        checksum: Option<&crate::checksum::ChunkChecksum>,
    ) -> Result<std::result::Result<bytes::Bytes, String>> {
        let got = match self.objects.get(&ObjectPath::from(chunk)).await {
            Ok(g) => g.bytes().await,
            Err(e) => Err(e),
        };
        match got {
            Ok(bytes) => Ok(match checksum {
                Some(c) => crate::checksum::verify_chunk(chunk, &bytes, c)
                    .map(|()| bytes)
                    .map_err(|e| e.to_string()),
                None => Ok(bytes),
            }),
            Err(object_store::Error::NotFound { .. }) => {
                Ok(Err(format!("its chunk {chunk} is missing")))
            }
            Err(e) => Err(e.into()),
        }
    }

    /// Whether record `seq` is the newest, checked without listing the log: record `seq + 1`
    /// does not exist and record `seq` still does (garbage collection deletes records oldest
    /// first, so then nothing after `seq` was collected either).
    async fn is_current(&self, seq: u64) -> Result<bool> {
        if let Some(root) = &self.local_root {
            // Some(true/false) when known; an I/O error other than "not found" means "list".
            let exists =
                |seq: u64| match std::fs::metadata(root.join(log::record_path(seq).as_ref())) {
                    Ok(_) => Some(true),
                    Err(e) if e.kind() == std::io::ErrorKind::NotFound => Some(false),
                    Err(_) => None,
                };
            return Ok(exists(seq + 1) == Some(false) && exists(seq) == Some(true));
        }
        let exists = |seq: u64| async move {
            match self.objects.head(&log::record_path(seq)).await {
                Ok(_) => Ok(true),
                Err(object_store::Error::NotFound { .. }) => Ok(false),
                Err(e) => Err(Error::from(e)),
            }
        };
        Ok(!exists(seq + 1).await? && exists(seq).await?)
    }

    /// Validates and appends one commit built from the current state, retrying when another
    /// writer wins the sequence number. Returns the commit timestamp.
    pub(crate) async fn commit(
        &self,
        build: impl Fn(&State) -> Result<Vec<Action>>,
    ) -> Result<Timestamp> {
        self.commit_as(None, build).await
    }

    pub(crate) async fn commit_as(
        &self,
        transaction_id: Option<&str>,
        build: impl Fn(&State) -> Result<Vec<Action>>,
    ) -> Result<Timestamp> {
        let (timestamp, seq) = self.append_commit(transaction_id, build).await?;
        if seq.is_some_and(|seq| seq % CHECKPOINT_INTERVAL == 0) {
            // A checkpoint only speeds up opening; the log stays the truth, so a failed one
            // is retried at the next interval.
            let _ = self.checkpoint().await;
        }
        Ok(timestamp)
    }

    /// The commit loop without the checkpoint trigger: returns the commit timestamp and the
    /// record's position (`None` when there was nothing to commit).
    pub(crate) async fn append_commit(
        &self,
        transaction_id: Option<&str>,
        build: impl Fn(&State) -> Result<Vec<Action>>,
    ) -> Result<(Timestamp, Option<u64>)> {
        for _ in 0..MAX_COMMIT_ATTEMPTS {
            let state = self.refresh().await?;
            let actions = build(&state)?;
            if actions.is_empty() {
                return Ok((state.last_timestamp, None));
            }
            let timestamp = Timestamp::next_after(state.last_timestamp);
            let record = CommitRecord {
                seq: state.seq + 1,
                timestamp: timestamp.0,
                transaction_id: transaction_id.map(str::to_string),
                actions,
            };
            match log::append(self.objects.as_ref(), &record).await? {
                Append::Committed => {
                    self.refresh().await?;
                    return Ok((timestamp, Some(record.seq)));
                }
                Append::LostRace => continue,
            }
        }
        Err(Error::Invalid(format!(
            "commit failed: lost the race for the next log record {MAX_COMMIT_ATTEMPTS} times; retry"
        )))
    }

    /// The timestamp of the latest commit.
    pub async fn last_committed_timestamp(&self) -> Result<Timestamp> {
        Ok(self.refresh().await?.last_timestamp)
    }

    /// A fresh timestamp after every commit so far (`generate-timestamp`).
    pub async fn generate_timestamp(&self) -> Result<Timestamp> {
        Ok(Timestamp::next_after(
            self.last_committed_timestamp().await?,
        ))
    }

    /// The catalog entry of a table.
    pub async fn table(&self, path: &str) -> Result<TableEntry> {
        let state = self.refresh().await?;
        state
            .tables
            .get(path)
            .map(|(e, _)| e.clone())
            .ok_or_else(|| Error::NoSuchTable { path: path.into() })
    }

    /// All table entries by path.
    pub async fn tables(&self) -> Result<BTreeMap<String, TableEntry>> {
        let state = self.refresh().await?;
        Ok(state
            .tables
            .iter()
            .map(|(p, (e, _))| (p.clone(), e.clone()))
            .collect())
    }

    /// Creates a table.
    ///
    /// # Errors
    /// A bad path, an existing node, or invalid `tablet_count`/`pivot_keys`.
    pub async fn create_table(
        &self,
        path: &str,
        schema: TableSchema,
        options: TableOptions,
    ) -> Result<()> {
        validate_path(path)?;
        let (tablet_count, pivot_keys) = validate_tablets(&schema, &options)?;
        let trimmed_row_counts = match &options.trimmed_row_counts {
            None => vec![],
            Some(_) if schema.is_sorted() => {
                return Err(Error::Invalid(
                    "\"trimmed_row_counts\" can only be set for ordered tables".into(),
                ))
            }
            Some(counts) if options.tablet_count != Some(counts.len()) => {
                return Err(Error::Invalid(format!(
                    "\"trimmed_row_counts\" has {} values: \"tablet_count\" must be given and equal to it",
                    counts.len()
                )))
            }
            Some(counts) => counts.clone(),
        };
        let retention = options.retention;
        if retention.min_data_versions > retention.max_data_versions
            || retention.min_data_ttl > retention.max_data_ttl
        {
            return Err(Error::Invalid(
                "min_data_versions must not exceed max_data_versions, nor min_data_ttl max_data_ttl".into(),
            ));
        }
        let entry = TableEntry {
            id: fresh_id(),
            schema,
            tablet_count,
            pivot_keys,
            retention,
            trimmed_row_counts,
            tablet_state: crate::tablets::TabletState::Mounted,
            commit_ordering: match options.commit_ordering.as_deref() {
                None | Some("weak") => "weak".into(),
                Some("strong") => "strong".into(),
                Some(other) => {
                    return Err(Error::Invalid(format!(
                        "Invalid \"commit_ordering\" {other:?}: expected weak or strong"
                    )))
                }
            },
            max_ordered_tablet_data_weight: options.max_ordered_tablet_data_weight,
            dynamic: true,
        };
        self.commit(|state| {
            check_new_path(state, path)?;
            Ok(vec![Action::CreateTable {
                path: path.into(),
                entry: entry.clone(),
            }])
        })
        .await?;
        Ok(())
    }

    /// Removes a table.
    pub async fn remove_table(&self, path: &str) -> Result<()> {
        self.commit(|state| {
            let (entry, _) = state
                .tables
                .get(path)
                .ok_or_else(|| Error::NoSuchTable { path: path.into() })?;
            Ok(vec![Action::RemoveTable {
                path: path.into(),
                table_id: entry.id.clone(),
            }])
        })
        .await?;
        Ok(())
    }

    /// Copies (`keep_source`) or moves a table to `destination` (a new path). A copy is a
    /// new table with the source's rows and history as of the commit; it shares the source's
    /// chunks, which are immutable.
    ///
    /// # Errors
    /// No source table, an existing destination, or a destination under a table.
    pub async fn copy_table(
        &self,
        source: &str,
        destination: &str,
        keep_source: bool,
    ) -> Result<()> {
        validate_path(destination)?;
        let new_id = fresh_id();
        self.commit(|state| {
            let (entry, _) = state.table_data(source)?;
            check_new_path(state, destination)?;
            Ok(vec![Action::CopyTable {
                source: source.into(),
                table_id: entry.id.clone(),
                destination: destination.into(),
                new_id: new_id.clone(),
                keep_source,
            }])
        })
        .await?;
        Ok(())
    }

    /// Writes rows in one commit and returns its timestamp.
    ///
    /// Sorted tables: every row carries its full key; `Overwrite` replaces the row, `Update`
    /// changes the written columns, `Delete` takes keys only. Ordered tables: rows are appended
    /// (`Overwrite` only).
    pub async fn write_rows(
        &self,
        path: &str,
        kind: WriteKind,
        aggregate: bool,
        rows: Vec<RowValues>,
    ) -> Result<Timestamp> {
        if rows.is_empty() {
            return self.last_committed_timestamp().await;
        }
        let (action, schema) = self
            .prepare_write(path, kind, aggregate, &rows, true)
            .await?;
        let Action::WriteRows { table_id, .. } = &action else {
            return Err(Error::Invalid(
                "internal error (a bug): prepare_write made no write".into(),
            ));
        };
        let id = table_id.clone();
        // Re-checked against the state the record is appended to (see crate::validate).
        self.commit(|state| {
            crate::validate::writable_table(state, path, &id, &schema)?;
            Ok(vec![action.clone()])
        })
        .await
    }

    /// Stages a write in transaction `tx` (see [`Store::write_rows`]); it becomes visible when
    /// the transaction commits.
    pub async fn write_rows_in(
        &self,
        tx: &str,
        path: &str,
        kind: WriteKind,
        aggregate: bool,
        rows: Vec<RowValues>,
    ) -> Result<()> {
        if rows.is_empty() {
            return Ok(());
        }
        let (action, _) = self
            .prepare_write(path, kind, aggregate, &rows, false)
            .await?;
        self.stage(tx, vec![action]).await
    }

    /// Stages row locks in transaction `tx`; `keys` hold the values of every key column.
    /// Empty `groups` lock every lock group of the rows.
    pub async fn lock_rows_in(
        &self,
        tx: &str,
        path: &str,
        mode: LockMode,
        groups: Vec<String>,
        keys: Vec<Vec<Value>>,
    ) -> Result<()> {
        let entry = self.table(path).await?;
        crate::tablets::check_writable(&entry, path)?;
        let schema = &entry.schema;
        let key_count = schema.key_column_count();
        if key_count == 0 {
            return Err(Error::Invalid(format!(
                "lock_rows needs a sorted table; {path} is ordered"
            )));
        }
        let known: BTreeSet<String> = all_groups(schema);
        for g in &groups {
            if !known.contains(g) {
                return Err(Error::Invalid(format!(
                    "Table {path} has no lock group {g:?}"
                )));
            }
        }
        let mut encoded = Vec::with_capacity(keys.len());
        for (n, k) in keys.into_iter().enumerate() {
            if k.len() != key_count {
                return Err(Error::Invalid(format!(
                    "key #{n} for {path} must have {key_count} values"
                )));
            }
            let mut values: RowValues = k.into_iter().map(Some).collect();
            values.resize(schema.columns().len(), None);
            encoded.push(log::encode_row(schema, &values));
        }
        self.stage(
            tx,
            vec![Action::LockRows {
                path: path.into(),
                table_id: entry.id,
                mode,
                groups,
                keys: encoded,
            }],
        )
        .await
    }

    /// `large`: the write may go to a chunk (not inside transactions, whose conflict check
    /// reads the keys from the record). Returns the action and the schema it was checked
    /// against, which the commit re-checks.
    pub(crate) async fn prepare_write(
        &self,
        path: &str,
        kind: WriteKind,
        aggregate: bool,
        rows: &[RowValues],
        large: bool,
    ) -> Result<(Action, TableSchema)> {
        let entry = self.table(path).await?;
        crate::tablets::check_writable(&entry, path)?;
        let schema = &entry.schema;
        let key_count = schema.key_column_count();
        if key_count == 0 {
            return Err(Error::Invalid(format!(
                "{} is not supported for ordered table {path}: ordered tables are queues (append rows, trim them)",
                match kind {
                    WriteKind::Delete => "delete_rows",
                    WriteKind::Update => "update mode",
                    WriteKind::Overwrite => "writing by key",
                }
            )));
        }
        crate::validate::row_shapes(schema, path, rows)?;
        if large && rows.len() >= LARGE_WRITE_ROWS {
            // Large writes go straight to a versioned chunk; the record only names it.
            let deltas: Vec<RowDelta> = rows
                .iter()
                .map(|r| RowDelta {
                    timestamp: Timestamp::MIN,
                    kind,
                    values: r.clone(),
                    aggregate,
                })
                .collect();
            let refs: Vec<&RowDelta> = deltas.iter().collect();
            let batch = crate::chunk::encode_versions(schema, &refs)?;
            let (bytes, checksum) = crate::chunk::encode_chunk(&batch.schema(), &[batch])?;
            let chunk = crate::chunk::new_chunk_path(&entry.id, "write");
            self.objects
                .put(&ObjectPath::from(chunk.as_str()), PutPayload::from(bytes))
                .await?;
            return Ok((
                Action::WriteRows {
                    path: path.into(),
                    table_id: entry.id.clone(),
                    kind,
                    aggregate,
                    rows: vec![],
                    chunk: Some(chunk),
                    chunk_checksum: Some(checksum),
                },
                entry.schema,
            ));
        }
        Ok((
            Action::WriteRows {
                path: path.into(),
                table_id: entry.id.clone(),
                kind,
                aggregate,
                rows: rows.iter().map(|r| log::encode_row(schema, r)).collect(),
                chunk: None,
                chunk_checksum: None,
            },
            entry.schema.clone(),
        ))
    }
}

pub(crate) fn decode_key(schema: &TableSchema, text: &str) -> Result<Vec<Value>> {
    let values = log::decode_row(schema, text)?;
    Ok(values[..schema.key_column_count()]
        .iter()
        .map(|v| v.clone().unwrap_or(Value::Null))
        .collect())
}

/// The chunks of `data` holding versions committed after `start`: a conflict check must see
/// them ([`check_conflicts`] gets them decoded, by path).
pub(crate) fn chunks_after(data: &TableData, start: Timestamp) -> impl Iterator<Item = &ChunkRef> {
    data.chunks
        .iter()
        .filter(move |c| c.max_timestamp > start.0)
}

/// A key's versions in decoded chunks (each key-sorted), oldest chunk first.
fn flushed_versions(
    runs: &[&Arc<Vec<RowDelta>>],
    key: &[Value],
    key_count: usize,
) -> Vec<RowDelta> {
    let mut out = Vec::new();
    for run in runs {
        let lo =
            run.partition_point(|d| crate::chunk::compare_version_key(d, key, key_count).is_lt());
        let hi =
            run.partition_point(|d| !crate::chunk::compare_version_key(d, key, key_count).is_gt());
        out.extend_from_slice(&run[lo..hi]);
    }
    out
}

/// Outcome of [`check_conflicts`] when a chunk it needs was not supplied (a flush happened
/// since the caller looked): fetch the chunks again and retry.
pub(crate) struct MissingChunks;

/// Checks a transaction's actions against commits made after `start` (see [`crate::conflict`]).
/// `recent` holds the decoded chunks named by [`chunks_after`] for the touched tables.
pub(crate) fn check_conflicts(
    state: &State,
    start: Timestamp,
    actions: &[Action],
    recent: &HashMap<String, Arc<Vec<RowDelta>>>,
) -> Result<std::result::Result<(), MissingChunks>> {
    let runs_of = |data: &TableData| -> Option<Vec<&Arc<Vec<RowDelta>>>> {
        chunks_after(data, start)
            .map(|c| recent.get(&c.path))
            .collect()
    };
    let conflict = |path: &str, key: &[Value]| Error::Conflict {
        path: path.to_string(),
        key: dynql_core::yson::to_text(&Yson::List(key.iter().map(Value::to_yson).collect())),
    };
    for action in actions {
        match action {
            Action::WriteRows {
                path,
                table_id,
                kind,
                aggregate,
                rows,
                ..
            } => {
                let (entry, data) = crate::validate::same_table(state, path, table_id)?;
                crate::tablets::check_writable(entry, path)?;
                if !entry.schema.is_sorted() {
                    // Appends to ordered tables never conflict, but their tablets must still
                    // exist and have room.
                    let added = crate::validate::logged_append_weights(entry, path, rows)?;
                    crate::validate::check_append(entry, data, path, &added)?;
                    continue;
                }
                check_not_compacted(data, path, start)?;
                let Some(runs) = runs_of(data) else {
                    return Ok(Err(MissingChunks));
                };
                let key_count = entry.schema.key_column_count();
                for text in rows {
                    // Staged rows were checked against the schema of their time; they must
                    // still be valid rows of the table.
                    let values = log::decode_row(&entry.schema, text)
                        .map_err(|_| crate::validate::schema_changed(path))?;
                    let key = decode_key(&entry.schema, text)?;
                    let probe = RowDelta {
                        timestamp: start,
                        kind: *kind,
                        values,
                        aggregate: *aggregate,
                    };
                    let groups = write_groups(&entry.schema, &probe);
                    let flushed = flushed_versions(&runs, &key, key_count);
                    let k = KeyOrd(key);
                    if !data.key_is_free(&entry.schema, start, Claim::Write, &groups, &k, &flushed)
                    {
                        return Err(conflict(path, &k.0));
                    }
                }
            }
            Action::LockRows {
                path,
                table_id,
                mode,
                groups,
                keys,
            } => {
                let (entry, data) = crate::validate::same_table(state, path, table_id)?;
                crate::tablets::check_writable(entry, path)?;
                check_not_compacted(data, path, start)?;
                let groups: BTreeSet<String> = if groups.is_empty() {
                    all_groups(&entry.schema)
                } else {
                    groups.iter().cloned().collect()
                };
                let Some(runs) = runs_of(data) else {
                    return Ok(Err(MissingChunks));
                };
                let key_count = entry.schema.key_column_count();
                for text in keys {
                    let k = KeyOrd(decode_key(&entry.schema, text)?);
                    let flushed = flushed_versions(&runs, &k.0, key_count);
                    let claim = Claim::Lock(*mode);
                    if !data.key_is_free(&entry.schema, start, claim, &groups, &k, &flushed) {
                        return Err(conflict(path, &k.0));
                    }
                }
            }
            Action::CreateTable { .. }
            | Action::RemoveTable { .. }
            | Action::CopyTable { .. }
            | Action::Compact { .. }
            | Action::Flush { .. }
            | Action::BulkInsert { .. }
            | Action::Reshard { .. }
            | Action::SetTabletState { .. }
            | Action::SetAttribute { .. }
            | Action::AlterTable { .. }
            | Action::ReshardQueues { .. }
            | Action::TrimRows { .. } => {}
        }
    }
    Ok(Ok(()))
}

/// Refuses a transaction that started before the newest compaction horizon of a table it
/// writes or locks: versions committed between its start and the horizon may be gone, so a
/// conflict could go unseen.
fn check_not_compacted(data: &TableData, path: &str, start: Timestamp) -> Result<()> {
    if data.compaction_horizon > start {
        return Err(Error::CompactedSinceStart { path: path.into() });
    }
    Ok(())
}

/// A key in YT order, for the in-memory merge of a write.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct KeyOrd(pub(crate) Vec<Value>);

impl PartialOrd for KeyOrd {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for KeyOrd {
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        compare_rows(&self.0, &other.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
        store
            .create_table("//a/t", schema(), TableOptions::default())
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
