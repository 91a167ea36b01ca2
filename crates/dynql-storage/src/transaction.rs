//! Tablet transactions across processes: a transaction is a folder of the store,
//!
//! ```text
//! <root>/_tx/<id>/meta.json                  start timestamp, timeout, deadline
//! <root>/_tx/<id>/staged-<slot:020>.json     one file per staged write or lock call, slots 1, 2, …
//! <root>/_tx/<id>/staged-<last+1:020>.json   the seal: the commit (or abort) has started
//! ```
//!
//! so any process can stage writes into it. Reads inside see the start timestamp (not the
//! transaction's own writes, as in YT). `commit` gathers the staged actions, checks them for
//! row-lock conflicts against commits made after the start ([`crate::conflict`]) and appends
//! them as one log record naming the transaction, which makes a second commit of the same
//! transaction impossible. A transaction whose deadline passed without a ping is aborted.
//!
//! **Sealing.** Every slot is created with `PutMode::Create` at one past the highest slot
//! listed, so slots are numbered without gaps, and two writers never share one. A commit
//! first *seals* the transaction by creating the next slot with a seal, then reads exactly the
//! slots below it. A write that races the commit either got its slot first (and is in the
//! commit) or collides with the seal or finds it when it lists (and fails with
//! [`Error::TransactionSealed`]): the commit holds exactly the writes that were acknowledged.
//! The seal outlives the commit's cleanup, so a late writer still finds it; garbage collection
//! removes it an hour later with the rest of the folder.

use std::collections::HashMap;
use std::sync::Mutex;

use object_store::path::Path as ObjectPath;
use object_store::{ObjectStoreExt, PutMode, PutOptions, PutPayload};
use serde::{Deserialize, Serialize};

use crate::error::{Error, Result};
use crate::log::Action;
use crate::store::{check_conflicts, chunks_after, fresh_id, MissingChunks, Store};
use crate::timestamp::Timestamp;

const TX_DIR: &str = "_tx";

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

/// One slot of a transaction folder: a staged call, or the seal.
#[derive(Debug, Default, Serialize, Deserialize)]
struct Slot {
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    actions: Vec<Action>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    seal: Option<Seal>,
}

/// What a seal starts.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
enum Seal {
    Commit,
    Abort,
}

fn slot_path(id: &str, slot: u64) -> ObjectPath {
    ObjectPath::from(format!("{TX_DIR}/{id}/staged-{slot:020}.json"))
}

fn slot_number(location: &ObjectPath) -> Option<u64> {
    location
        .filename()?
        .strip_prefix("staged-")?
        .strip_suffix(".json")?
        .parse()
        .ok()
}

fn sealed_error(id: &str, seal: Seal) -> Error {
    Error::TransactionSealed {
        id: id.to_string(),
        state: match seal {
            Seal::Commit => "being committed",
            Seal::Abort => "aborted",
        },
    }
}

fn now_ms() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_millis() as u64)
        .unwrap_or(0)
}

fn meta_path(id: &str) -> ObjectPath {
    ObjectPath::from(format!("{TX_DIR}/{id}/meta.json"))
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
            id: fresh_id(),
            start_timestamp,
            timeout_ms,
            deadline_unix_ms: now_ms().saturating_add(timeout_ms),
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
        if now_ms() > info.deadline_unix_ms {
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
        info.deadline_unix_ms = now_ms().saturating_add(info.timeout_ms);
        self.put_meta(&info).await
    }

    /// The slots of a transaction folder, in slot order.
    async fn slots(&self, id: &str) -> Result<Vec<(u64, ObjectPath)>> {
        let prefix = ObjectPath::from(format!("{TX_DIR}/{id}"));
        let metas = crate::objects::list_all(self.objects.as_ref(), &prefix).await?;
        let mut slots: Vec<(u64, ObjectPath)> = metas
            .into_iter()
            .filter_map(|m| slot_number(&m.location).map(|n| (n, m.location)))
            .collect();
        slots.sort_by_key(|(n, _)| *n);
        Ok(slots)
    }

    /// Reads one slot; `None` when it is gone (a cleanup raced the listing).
    async fn read_slot(&self, location: &ObjectPath) -> Result<Option<Slot>> {
        self.read_json(location).await
    }

    /// Creates `slot` in the next free position of the folder; fails with
    /// [`Error::TransactionSealed`] once the folder is sealed. Returns the position.
    async fn put_slot(&self, id: &str, slot: &Slot) -> Result<std::result::Result<u64, Seal>> {
        let bytes = serde_json::to_vec(slot).map_err(|e| Error::Invalid(e.to_string()))?;
        for _ in 0..MAX_SLOT_ATTEMPTS {
            let slots = self.slots(id).await?;
            let next = match slots.last() {
                None => 1,
                Some((n, location)) => match self.read_slot(location).await? {
                    None => continue,
                    Some(Slot {
                        seal: Some(seal), ..
                    }) => return Ok(Err(seal)),
                    Some(_) => n + 1,
                },
            };
            let opts = PutOptions {
                mode: PutMode::Create,
                ..Default::default()
            };
            match self
                .objects
                .put_opts(&slot_path(id, next), PutPayload::from(bytes.clone()), opts)
                .await
            {
                Ok(_) => return Ok(Ok(next)),
                Err(object_store::Error::AlreadyExists { .. }) => continue,
                Err(e) => return Err(e.into()),
            }
        }
        Err(Error::Invalid(format!(
            "transaction {id}: lost the race for a staging slot {MAX_SLOT_ATTEMPTS} times; retry"
        )))
    }

    /// Stages actions (row writes, locks) in the transaction; nothing is visible until commit.
    ///
    /// # Errors
    /// [`Error::TransactionSealed`] once the transaction's commit (or abort) has started: the
    /// write is then not part of the transaction.
    pub(crate) async fn stage(&self, id: &str, actions: Vec<Action>) -> Result<()> {
        self.transaction(id).await?;
        match self
            .put_slot(
                id,
                &Slot {
                    actions,
                    seal: None,
                },
            )
            .await?
        {
            Ok(_) => Ok(()),
            Err(seal) => Err(sealed_error(id, seal)),
        }
    }

    /// Seals the transaction for `seal`; returns the seal's slot. Sealing for a commit again
    /// (a retried commit) finds the earlier seal.
    async fn seal(&self, id: &str, seal: Seal) -> Result<u64> {
        let slot = Slot {
            actions: vec![],
            seal: Some(seal),
        };
        match self.put_slot(id, &slot).await? {
            Ok(n) => Ok(n),
            Err(existing) if existing == seal => {
                let slots = self.slots(id).await?;
                slots.last().map(|(n, _)| *n).ok_or_else(|| Error::Corrupt {
                    path: format!("{TX_DIR}/{id}"),
                    message: "the seal of the transaction disappeared".into(),
                })
            }
            Err(existing) => Err(sealed_error(id, existing)),
        }
    }

    /// Commits the transaction: all staged actions in one log record, or a conflict error
    /// (after which the transaction is aborted).
    ///
    /// Once the commit has started, further writes to the transaction fail; the record holds
    /// exactly the writes that were acknowledged (see the module docs).
    pub async fn commit_transaction(&self, id: &str) -> Result<Timestamp> {
        let info = self.transaction(id).await?;
        let seal = self.seal(id, Seal::Commit).await?;
        let slots = self.slots(id).await?;
        let mut actions = Vec::new();
        // Slots are numbered without gaps: one missing below the seal was deleted by hand or
        // lost, and committing without it would drop an acknowledged write.
        let missing = |slot: u64| {
            Error::Corrupt {
            path: slot_path(id, slot).to_string(),
            message: format!(
                "staged write {slot} of transaction {id} is missing; the transaction cannot be committed"
            ),
        }
        };
        let mut expect = 1;
        for (n, location) in slots.iter().filter(|(n, _)| *n < seal) {
            if *n != expect {
                return Err(missing(expect));
            }
            let slot = self
                .read_slot(location)
                .await?
                .ok_or_else(|| missing(expect))?;
            actions.extend(slot.actions);
            expect += 1;
        }
        if expect != seal {
            return Err(missing(expect));
        }
        let result = self
            .commit_checked(id, info.start_timestamp, &actions)
            .await;
        match &result {
            // A transient failure keeps the sealed transaction: commit-tx may be retried.
            Err(Error::ObjectStore(_)) => {}
            // The staged files are garbage either way; failing to delete them after a
            // commit must not report the committed transaction as failed (the log forbids
            // a second commit).
            _ => {
                let _ = self.discard(id, Some(seal)).await;
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
        Err(Error::Invalid(format!(
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
            Ok(seal) => self.discard(id, Some(seal)).await,
            Err(Error::TransactionSealed { .. }) if self.expired(id).await? => {
                self.discard(id, None).await
            }
            Err(e) => Err(e),
        }
    }

    /// Whether the transaction's deadline has passed (or its metadata is gone).
    async fn expired(&self, id: &str) -> Result<bool> {
        Ok(match self.read_meta(id).await? {
            Some(info) => now_ms() > info.deadline_unix_ms,
            None => true,
        })
    }

    /// Deletes the transaction's metadata and staged slots, keeping the seal at `keep`.
    async fn discard(&self, id: &str, keep: Option<u64>) -> Result<()> {
        let prefix = ObjectPath::from(format!("{TX_DIR}/{id}"));
        let metas = crate::objects::list_all(self.objects.as_ref(), &prefix).await?;
        for meta in metas {
            if keep.is_some() && slot_number(&meta.location) == keep {
                continue;
            }
            match self.objects.delete(&meta.location).await {
                Ok(()) | Err(object_store::Error::NotFound { .. }) => {}
                Err(e) => return Err(e.into()),
            }
        }
        Ok(())
    }

    /// The oldest start timestamp of a transaction that is live (not expired, not finished):
    /// compaction keeps every version committed after it (see
    /// [`crate::compaction::compact_versions`]).
    pub(crate) async fn oldest_live_transaction_start(&self) -> Result<Option<Timestamp>> {
        let listing = self
            .objects
            .list_with_delimiter(Some(&ObjectPath::from(TX_DIR)))
            .await?;
        let mut oldest: Option<Timestamp> = None;
        for folder in listing.common_prefixes {
            let Some(id) = folder.filename() else {
                continue;
            };
            if let Some(info) = self.read_meta(id).await? {
                if now_ms() <= info.deadline_unix_ms {
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
            .list_with_delimiter(Some(&ObjectPath::from(TX_DIR)))
            .await?;
        let now = now_ms();
        for folder in listing.common_prefixes {
            let Some(id) = folder.filename() else {
                continue;
            };
            let objects = crate::objects::list_all(self.objects.as_ref(), &folder).await?;
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
