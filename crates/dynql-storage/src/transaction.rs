//! Tablet transactions across processes: a transaction is a folder of the store,
//!
//! ```text
//! <root>/_tx/<id>/meta.json              start timestamp, timeout, deadline
//! <root>/_tx/<id>/staged-<unique>.json   one file per staged write or lock call
//! ```
//!
//! so any process can stage writes into it. Reads inside see the start timestamp (not the
//! transaction's own writes, as in YT). `commit` gathers the staged actions, checks them for
//! row-lock conflicts against commits made after the start ([`crate::conflict`]) and appends
//! them as one log record naming the transaction, which makes a second commit of the same
//! transaction impossible. A transaction whose deadline passed without a ping is aborted.

use std::collections::HashMap;
use std::sync::Mutex;

use futures::TryStreamExt;
use object_store::path::Path as ObjectPath;
use object_store::{ObjectStoreExt, PutPayload};
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

#[derive(Debug, Serialize, Deserialize)]
struct Staged {
    actions: Vec<Action>,
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
        let bytes = match self.objects.get(&meta_path(id)).await {
            Ok(r) => r.bytes().await?,
            Err(object_store::Error::NotFound { .. }) => {
                return Err(Error::NoSuchTransaction { id: id.into() })
            }
            Err(e) => return Err(e.into()),
        };
        let info: TransactionInfo = serde_json::from_slice(&bytes).map_err(|e| Error::Corrupt {
            path: meta_path(id).to_string(),
            message: e.to_string(),
        })?;
        if now_ms() > info.deadline_unix_ms {
            self.abort_transaction(id).await?;
            return Err(Error::NoSuchTransaction { id: id.into() });
        }
        Ok(info)
    }

    /// Extends the transaction's deadline by its timeout.
    pub async fn ping_transaction(&self, id: &str) -> Result<()> {
        let mut info = self.transaction(id).await?;
        info.deadline_unix_ms = now_ms().saturating_add(info.timeout_ms);
        self.put_meta(&info).await
    }

    /// Stages actions (row writes, locks) in the transaction; nothing is visible until commit.
    pub(crate) async fn stage(&self, id: &str, actions: Vec<Action>) -> Result<()> {
        self.transaction(id).await?;
        let bytes =
            serde_json::to_vec(&Staged { actions }).map_err(|e| Error::Invalid(e.to_string()))?;
        let path = ObjectPath::from(format!("{TX_DIR}/{id}/staged-{}.json", fresh_id()));
        self.objects.put(&path, PutPayload::from(bytes)).await?;
        Ok(())
    }

    /// Commits the transaction: all staged actions in one log record, or a conflict error
    /// (after which the transaction is aborted).
    pub async fn commit_transaction(&self, id: &str) -> Result<Timestamp> {
        let info = self.transaction(id).await?;
        let prefix = ObjectPath::from(format!("{TX_DIR}/{id}"));
        let mut metas: Vec<_> = self.objects.list(Some(&prefix)).try_collect().await?;
        metas.sort_by(|a, b| a.location.cmp(&b.location));
        let mut actions = Vec::new();
        for meta in &metas {
            if !meta
                .location
                .filename()
                .is_some_and(|f| f.starts_with("staged-"))
            {
                continue;
            }
            let bytes = self.objects.get(&meta.location).await?.bytes().await?;
            let staged: Staged = serde_json::from_slice(&bytes).map_err(|e| Error::Corrupt {
                path: meta.location.to_string(),
                message: e.to_string(),
            })?;
            actions.extend(staged.actions);
        }
        let result = self
            .commit_checked(id, info.start_timestamp, &actions)
            .await;
        // The staged files are garbage either way; failing to delete them after a commit must
        // not report the committed transaction as failed (the log forbids a second commit).
        let cleanup = self.abort_transaction(id).await;
        let ts = result?;
        let _ = cleanup;
        Ok(ts)
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

    /// Aborts the transaction: its staged actions are dropped.
    pub async fn abort_transaction(&self, id: &str) -> Result<()> {
        valid_id(id)?;
        let prefix = ObjectPath::from(format!("{TX_DIR}/{id}"));
        let metas: Vec<_> = self.objects.list(Some(&prefix)).try_collect().await?;
        for meta in metas {
            match self.objects.delete(&meta.location).await {
                Ok(()) | Err(object_store::Error::NotFound { .. }) => {}
                Err(e) => return Err(e.into()),
            }
        }
        Ok(())
    }
}
