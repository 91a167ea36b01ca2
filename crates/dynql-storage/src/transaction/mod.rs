//! Tablet transactions across processes: a transaction is a folder of the store
//! (the files are described in [`slot`]), so any process can stage writes into it. Reads
//! inside see the start timestamp (not the transaction's own writes, as in YT). `commit`
//! gathers the staged actions, checks them for row-lock conflicts against commits made after
//! the start ([`crate::conflict`]) and appends them as one log record naming the transaction,
//! which makes a second commit of the same transaction impossible. A transaction whose
//! deadline passed without a ping is aborted.
//!
//! **Sealing.** Every slot is created with `PutMode::Create` at one past the highest slot (or
//! acknowledgement) listed, so slots are numbered without gaps and two writers never share
//! one. A commit first *seals* the transaction by creating the next slot with a seal, then
//! reads exactly the slots below it. A write that races the commit either got its slot first
//! (and is in the commit) or collides with the seal or finds it when it lists (and fails with
//! [`Error::TransactionSealed`]): the commit holds exactly the writes that were acknowledged.
//!
//! **Invariants** (each relied on above):
//! 1. A slot number is never reused while writers may race: a finished transaction keeps its
//!    slots and seal (only its metadata goes); garbage collection removes the folder after the
//!    store's grace period. (Deleting committed slots let a writer that listed an empty folder
//!    create slot 1 again after the commit, acknowledged and never read.)
//! 2. Slot `n` is created only when `n - 1` exists, so when a seal is created at `s`, slots
//!    `1..s` all exist, and none can appear below it later.
//! 3. A writer acknowledges its write only after it has created `acked-<n>` and seen the
//!    transaction still live or sealed above `n`; a folder collected under a stalled writer
//!    fails its write instead.
//! 4. Every slot carries a checksum, and its acknowledgement the same one: a damaged slot, or a
//!    deleted acknowledged one (the newest included), fails the commit with
//!    [`Error::Corrupt`] and leaves the store unchanged.

pub(crate) mod slot;
mod staging;

use std::collections::HashMap;
use std::sync::Mutex;

use object_store::path::Path as ObjectPath;
use object_store::{ObjectStoreExt, PutPayload};
use serde::{Deserialize, Serialize};

use crate::conflict::{check_conflicts, chunks_after, MissingChunks};
use crate::error::{Error, Result};
use crate::kernel::timestamp::Timestamp;
use crate::log::Action;
use crate::store::Store;
use slot::{meta_path, Seal};

/// How many times a commit re-fetches chunks flushed while it was being checked.
const MAX_CHUNK_REFETCHES: usize = 8;

/// What a transaction records about itself.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct TransactionInfo {
    pub id: String,
    /// Reads see the state as of this timestamp; conflicts are checked after it.
    pub start_timestamp: Timestamp,
    pub timeout_ms: u64,
    /// Unix milliseconds after which the transaction is expired unless pinged.
    pub deadline_unix_ms: u64,
}

/// How many times staging or sealing retries after losing a slot to another writer.
const MAX_SLOT_ATTEMPTS: usize = 64;

fn sealed_error(id: &str, seal: Seal) -> Error {
    Error::TransactionSealed {
        id: id.to_string(),
        state: match seal {
            Seal::Commit => "being committed",
            Seal::Abort => "aborted",
        },
    }
}

fn valid_id(id: &str) -> Result<()> {
    if id.is_empty() || !id.chars().all(|c| c.is_ascii_alphanumeric() || c == '-') {
        return Err(Error::NoSuchTransaction { id: id.to_string() });
    }
    Ok(())
}

impl Serialize for Timestamp {
    fn serialize<S: serde::Serializer>(&self, s: S) -> std::result::Result<S::Ok, S::Error> {
        s.serialize_u64(self.0)
    }
}

impl<'de> Deserialize<'de> for Timestamp {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> std::result::Result<Timestamp, D::Error> {
        u64::deserialize(d).map(Timestamp)
    }
}

impl Store {
    /// Starts a transaction that expires `timeout_ms` after its last ping.
    pub async fn start_transaction(&self, timeout_ms: u64) -> Result<TransactionInfo> {
        // The snapshot is the last commit this handle sees (after a refresh), not a fresh
        // clock reading: a commit whose timestamp was drawn just before a clock-based start
        // could become visible only after the transaction read, and a conflict check that
        // looks for commits after the start would then miss it (a lost update). Every commit
        // not in this snapshot has a larger timestamp, so the check sees it.
        let start_timestamp = self.last_committed_timestamp().await?;
        let info = TransactionInfo {
            id: self.fresh.id(),
            start_timestamp,
            timeout_ms,
            deadline_unix_ms: self.fresh.now_ms().saturating_add(timeout_ms),
        };
        self.put_meta(&info).await?;
        Ok(info)
    }

    async fn put_meta(&self, info: &TransactionInfo) -> Result<()> {
        let bytes = serde_json::to_vec(info).map_err(|e| Error::Invalid(e.to_string()))?;
        self.objects
            .put(&meta_path(&info.id), PutPayload::from(bytes))
            .await?;
        Ok(())
    }

    /// The live transaction `id`.
    ///
    /// # Errors
    /// [`Error::NoSuchTransaction`] when it is unknown, finished, or expired (an expired
    /// transaction is aborted on the way).
    pub async fn transaction(&self, id: &str) -> Result<TransactionInfo> {
        valid_id(id)?;
        let info = self
            .read_meta(id)
            .await?
            .ok_or_else(|| Error::NoSuchTransaction { id: id.into() })?;
        if self.fresh.now_ms() > info.deadline_unix_ms {
            self.abort_transaction(id).await?;
            return Err(Error::NoSuchTransaction { id: id.into() });
        }
        Ok(info)
    }

    /// The transaction's metadata, if it is there.
    async fn read_meta(&self, id: &str) -> Result<Option<TransactionInfo>> {
        self.read_json(&meta_path(id)).await
    }

    /// A JSON object of the transaction folder; `None` when it is not there.
    async fn read_json<T: serde::de::DeserializeOwned>(
        &self,
        location: &ObjectPath,
    ) -> Result<Option<T>> {
        let bytes = match self.objects.get(location).await {
            Ok(r) => r.bytes().await?,
            Err(object_store::Error::NotFound { .. }) => return Ok(None),
            Err(e) => return Err(e.into()),
        };
        serde_json::from_slice(&bytes)
            .map(Some)
            .map_err(|e| Error::Corrupt {
                path: location.to_string(),
                message: e.to_string(),
            })
    }

    /// Extends the transaction's deadline by its timeout.
    pub async fn ping_transaction(&self, id: &str) -> Result<()> {
        let mut info = self.transaction(id).await?;
        info.deadline_unix_ms = self.fresh.now_ms().saturating_add(info.timeout_ms);
        self.put_meta(&info).await
    }

    /// Commits the transaction: all staged actions in one log record, or a conflict error
    /// (after which the transaction is aborted).
    ///
    /// Once the commit has started, further writes to the transaction fail; the record holds
    /// exactly the writes that were acknowledged (see the module docs).
    ///
    /// # Errors
    /// [`Error::Corrupt`] when a staged write is damaged or missing: nothing is committed.
    pub async fn commit_transaction(&self, id: &str) -> Result<Timestamp> {
        let info = self.transaction(id).await?;
        let seal = self.seal(id, Seal::Commit).await?;
        let result = match self.read_staged(id, seal).await {
            Ok(actions) => {
                self.commit_checked(id, info.start_timestamp, &actions)
                    .await
            }
            Err(e) => Err(e),
        };
        match &result {
            // A transient failure keeps the sealed transaction: commit-tx may be retried.
            Err(Error::ObjectStore(_)) => {}
            // Finished either way; failing to drop the metadata after a commit must not
            // report the committed transaction as failed (the log forbids a second commit).
            _ => {
                let _ = self.finish(id).await;
            }
        }
        result
    }

    /// Commits `actions` as transaction `id` after checking them for conflicts with commits
    /// after `start`. Versions flushed since `start` are in chunks, which the check needs
    /// decoded: they are fetched first, and again if a flush slips in before the commit.
    async fn commit_checked(
        &self,
        id: &str,
        start: Timestamp,
        actions: &[Action],
    ) -> Result<Timestamp> {
        for _ in 0..MAX_CHUNK_REFETCHES {
            let state = self.refresh().await?;
            let mut recent = HashMap::new();
            for action in actions {
                let path = match action {
                    Action::WriteRows { path, .. } | Action::LockRows { path, .. } => path,
                    _ => continue,
                };
                if let Some((entry, data)) = state.tables.get(path) {
                    let needed: Vec<_> = chunks_after(data, start)
                        .filter(|c| !recent.contains_key(&c.path))
                        .collect();
                    let runs = self.chunk_runs(&entry.schema, &needed).await?;
                    for (c, run) in needed.iter().zip(runs) {
                        recent.insert(c.path.clone(), run);
                    }
                }
            }
            let missing = Mutex::new(false);
            let result = self
                .commit_as(Some(id), |state| {
                    if state.committed_transactions.contains(id) {
                        return Err(Error::NoSuchTransaction { id: id.into() });
                    }
                    let checked = check_conflicts(state, start, actions, &recent)?;
                    *missing.lock().unwrap_or_else(|p| p.into_inner()) = checked.is_err();
                    match checked {
                        Ok(()) => Ok(actions.to_vec()),
                        Err(MissingChunks) => Ok(vec![]),
                    }
                })
                .await;
            if !*missing.lock().unwrap_or_else(|p| p.into_inner()) {
                return result;
            }
        }
        Err(Error::Contended(format!(
            "commit of transaction {id} kept racing with flushes; retry"
        )))
    }

    /// Aborts the transaction: its staged actions are dropped, and later writes to it fail.
    ///
    /// # Errors
    /// [`Error::TransactionSealed`] when its commit has started (commit it again to finish);
    /// an expired transaction can always be aborted.
    pub async fn abort_transaction(&self, id: &str) -> Result<()> {
        valid_id(id)?;
        match self.seal(id, Seal::Abort).await {
            Ok(_) => self.finish(id).await,
            Err(Error::TransactionSealed { .. }) if self.expired(id).await? => {
                self.finish(id).await
            }
            Err(e) => Err(e),
        }
    }

    /// Whether the transaction's deadline has passed (or its metadata is gone).
    async fn expired(&self, id: &str) -> Result<bool> {
        Ok(match self.read_meta(id).await? {
            Some(info) => self.fresh.now_ms() > info.deadline_unix_ms,
            None => true,
        })
    }

    /// Ends the transaction: its metadata goes, its slots and seal stay until garbage
    /// collection (invariant 1 of the module docs).
    async fn finish(&self, id: &str) -> Result<()> {
        match self.objects.delete(&meta_path(id)).await {
            Ok(()) | Err(object_store::Error::NotFound { .. }) => Ok(()),
            Err(e) => Err(e.into()),
        }
    }

    /// The oldest start timestamp of a transaction that is live (not expired, not finished):
    /// compaction keeps every version committed after it (see
    /// [`crate::kernel::retention::compact_versions`]).
    pub(crate) async fn oldest_live_transaction_start(&self) -> Result<Option<Timestamp>> {
        let listing = self
            .objects
            .list_with_delimiter(Some(&ObjectPath::from(slot::TX_DIR)))
            .await?;
        let mut oldest: Option<Timestamp> = None;
        for folder in listing.common_prefixes {
            let Some(id) = folder.filename() else {
                continue;
            };
            if let Some(info) = self.read_meta(id).await? {
                if self.fresh.now_ms() <= info.deadline_unix_ms {
                    oldest =
                        Some(oldest.map_or(info.start_timestamp, |o| o.min(info.start_timestamp)));
                }
            }
        }
        Ok(oldest)
    }

    /// Deletes the folders of transactions that finished or expired more than the store's
    /// grace period ago (seals included: no writer can still be racing them).
    pub(crate) async fn collect_transactions(&self) -> Result<()> {
        let listing = self
            .objects
            .list_with_delimiter(Some(&ObjectPath::from(slot::TX_DIR)))
            .await?;
        let now = self.fresh.now_ms();
        for folder in listing.common_prefixes {
            let Some(id) = folder.filename() else {
                continue;
            };
            let objects = crate::io::objects::list_all(self.objects.as_ref(), &folder).await?;
            let newest = objects
                .iter()
                .map(|o| o.last_modified.timestamp_millis().max(0) as u64)
                .max()
                .unwrap_or(0);
            let finished_at = match self.read_meta(id).await? {
                Some(info) => info.deadline_unix_ms.max(newest),
                None => newest,
            };
            if finished_at.saturating_add(self.gc_grace_ms) < now {
                for o in objects {
                    match self.objects.delete(&o.location).await {
                        Ok(()) | Err(object_store::Error::NotFound { .. }) => {}
                        Err(e) => return Err(e.into()),
                    }
                }
            }
        }
        Ok(())
    }
}
