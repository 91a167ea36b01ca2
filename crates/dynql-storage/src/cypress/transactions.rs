//! Master transactions (seed 004): long-lived, nested, each with its branched versions of
//! the nodes it changed and the locks it holds. All of it is state replayed from the log:
//! starting, pinging, staging changes, taking locks, committing and aborting are log actions
//! ([`crate::log::Action`]), so every process sees the same transactions and locks.
//!
//! * A transaction's `changes` are its versions of nodes: path to the new entry, or `None`
//!   for removed. It reads through them, then its parent's, ..., then the committed tree
//!   ([`super::tree::Tree`]).
//! * Commit merges the changes into the parent's (or, for a topmost transaction, into the
//!   committed tree) and hands the shared and exclusive locks to the parent; snapshot locks
//!   end. A transaction with live nested ones cannot commit.
//! * Abort drops the changes and locks of the transaction and of all its descendants.
//! * A transaction whose `last_ping_time + timeout` passed is expired: it counts as aborted
//!   at once, and the next change to the tree logs its abort.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use super::locks::Lock;
use super::Node;
use crate::error::{Error, Result};
use crate::static_table::StagedRows;
use crate::store::{State, TableData, TableEntry};

/// The most a master transaction's timeout can be (YT's default limit, one hour); a longer
/// one is cut to it.
pub const MAX_TIMEOUT_MS: u64 = 3_600_000;

/// A node version a transaction records: a node or a table's catalog entry.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Entry {
    Node(Node),
    Table(TableEntry),
}

impl Entry {
    pub fn id(&self) -> &str {
        match self {
            Entry::Node(n) => &n.id,
            Entry::Table(t) => &t.id,
        }
    }
}

/// A transaction's versions of nodes: path to the entry (`None`: removed).
pub type Changes = BTreeMap<String, Option<Entry>>;

/// A live master transaction.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct MasterTransaction {
    pub id: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub parent_id: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    pub timeout_ms: u64,
    /// Unix milliseconds.
    pub start_time: u64,
    /// Unix milliseconds.
    pub last_ping_time: u64,
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub changes: Changes,
}

impl MasterTransaction {
    /// When it expires unless pinged (Unix milliseconds).
    pub fn deadline(&self) -> u64 {
        self.last_ping_time.saturating_add(self.timeout_ms)
    }
}

/// The master transactions and node locks of a store.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct Master {
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub transactions: BTreeMap<String, MasterTransaction>,
    /// By lock id.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub locks: BTreeMap<String, Lock>,
    /// The order of the next lock (waitable locks are granted in this order).
    #[serde(default)]
    pub next_lock_seq: u64,
}

impl Master {
    pub fn is_empty(&self) -> bool {
        self.transactions.is_empty() && self.locks.is_empty()
    }

    /// The timestamps snapshot locks on tables read their rows at.
    pub fn snapshot_timestamps(&self) -> impl Iterator<Item = u64> + '_ {
        self.locks.values().filter_map(|l| l.timestamp)
    }

    /// The transaction and its ancestors, itself first.
    ///
    /// # Errors
    /// [`Error::NoSuchTransaction`] when `id` is not a live master transaction.
    pub fn ancestry(&self, id: &str) -> Result<Vec<&MasterTransaction>> {
        let mut chain = Vec::new();
        let mut at = Some(id);
        while let Some(id) = at {
            let tx = self
                .transactions
                .get(id)
                .ok_or_else(|| Error::NoSuchTransaction { id: id.into() })?;
            chain.push(tx);
            at = tx.parent_id.as_deref();
        }
        Ok(chain)
    }

    /// Whether `ancestor` is `id` or one of its ancestors.
    pub fn is_self_or_ancestor(&self, ancestor: &str, id: Option<&str>) -> bool {
        let mut at = id;
        while let Some(t) = at {
            if t == ancestor {
                return true;
            }
            at = self
                .transactions
                .get(t)
                .and_then(|tx| tx.parent_id.as_deref());
        }
        false
    }

    /// The live transactions nested in `id` (direct children), by id.
    pub fn nested(&self, id: &str) -> Vec<String> {
        self.transactions
            .values()
            .filter(|t| t.parent_id.as_deref() == Some(id))
            .map(|t| t.id.clone())
            .collect()
    }

    /// The transactions whose deadline is before `now_ms`, topmost ones first.
    pub fn expired(&self, now_ms: u64) -> Vec<String> {
        let mut out: Vec<&MasterTransaction> = self
            .transactions
            .values()
            .filter(|t| t.deadline() < now_ms)
            .collect();
        out.sort_by_key(|t| self.ancestry(&t.id).map_or(0, |a| a.len()));
        out.into_iter().map(|t| t.id.clone()).collect()
    }

    /// Whether `id` is live at `now_ms`: started, not finished, and neither it nor an
    /// ancestor past its deadline.
    pub fn is_live(&self, id: &str, now_ms: u64) -> bool {
        self.ancestry(id)
            .is_ok_and(|chain| chain.iter().all(|t| t.deadline() >= now_ms))
    }
}

/// Replays the start of a transaction.
pub(crate) fn start(state: &mut State, tx: &MasterTransaction) -> std::result::Result<(), String> {
    if let Some(parent) = &tx.parent_id {
        if !state.master.transactions.contains_key(parent) {
            return Err(format!("parent transaction {parent} is not live"));
        }
    }
    if state.master.transactions.contains_key(&tx.id) {
        return Err(format!("transaction {} already exists", tx.id));
    }
    state.master.transactions.insert(tx.id.clone(), tx.clone());
    Ok(())
}

fn live<'a>(
    state: &'a mut State,
    id: &str,
) -> std::result::Result<&'a mut MasterTransaction, String> {
    state
        .master
        .transactions
        .get_mut(id)
        .ok_or_else(|| format!("transaction {id} is not live"))
}

/// Replays a ping.
pub(crate) fn ping(state: &mut State, id: &str, time: u64) -> std::result::Result<(), String> {
    let tx = live(state, id)?;
    tx.last_ping_time = tx.last_ping_time.max(time);
    Ok(())
}

/// Replays staged changes.
pub(crate) fn stage(
    state: &mut State,
    id: &str,
    changes: &[(String, Option<Entry>)],
) -> std::result::Result<(), String> {
    let tx = live(state, id)?;
    for (path, entry) in changes {
        tx.changes.insert(path.clone(), entry.clone());
    }
    Ok(())
}

/// Replays an abort: the transaction, its descendants, their changes and locks go.
pub(crate) fn abort(state: &mut State, id: &str) -> std::result::Result<(), String> {
    if !state.master.transactions.contains_key(id) {
        return Err(format!("transaction {id} is not live"));
    }
    let mut gone = vec![id.to_string()];
    let mut i = 0;
    while i < gone.len() {
        let nested = state.master.nested(&gone[i]);
        gone.extend(nested);
        i += 1;
    }
    for t in &gone {
        state.master.transactions.remove(t);
    }
    state
        .master
        .locks
        .retain(|_, l| !gone.contains(&l.transaction_id));
    super::locks::grant_pending(state);
    Ok(())
}

/// Replays a commit: changes merge into the parent's or into the committed tree; shared and
/// exclusive locks pass to the parent, the others end.
pub(crate) fn commit(state: &mut State, id: &str) -> std::result::Result<(), String> {
    let tx = live(state, id)?.clone();
    if !state.master.nested(id).is_empty() {
        return Err(format!("transaction {id} has live nested transactions"));
    }
    state.master.transactions.remove(id);
    match &tx.parent_id {
        Some(parent) => {
            let p = live(state, parent)?;
            for (path, entry) in tx.changes {
                let own = p.changes.get(&path).and_then(Option::as_ref);
                let merged = entry.map(|e| crate::static_table::merge_nested(own, e));
                p.changes.insert(path, merged);
            }
            use super::locks::{LockMode, LockState};
            state.master.locks.retain(|_, l| {
                l.transaction_id != id
                    || (l.mode != LockMode::Snapshot && l.state == LockState::Acquired)
            });
            for lock in state.master.locks.values_mut() {
                if lock.transaction_id == id {
                    lock.transaction_id = parent.clone();
                }
            }
        }
        None => {
            apply_changes(state, &tx.changes)?;
            state.master.locks.retain(|_, l| l.transaction_id != id);
        }
    }
    // Locks the transaction left pending end with it.
    state.master.locks.retain(|_, l| l.transaction_id != id);
    super::locks::grant_pending(state);
    Ok(())
}

/// Applies a topmost transaction's changes to the committed tree: removals deepest first,
/// then the new and changed entries shallowest first. The transaction's locks kept everyone
/// else from these paths, so what is there is what it saw or what it replaced.
///
/// A table the transaction did not create keeps its committed entry (its schema, tablets and
/// settings may have changed since, by operations on its rows): only the custom attributes
/// and a static table's written rows, all a transaction changes of an existing table, are
/// taken from the transaction's version.
///
/// # Errors
/// Rows appended to a sorted static table that no longer follow its committed rows.
pub(crate) fn apply_changes(
    state: &mut State,
    changes: &Changes,
) -> std::result::Result<(), String> {
    for (path, entry) in changes.iter().rev() {
        if entry.is_none() {
            state.nodes.remove(path);
            state.tables.remove(path);
        }
    }
    for (path, entry) in changes {
        match entry {
            None => {}
            Some(Entry::Node(n)) => {
                state.tables.remove(path);
                state.nodes.insert(path.clone(), n.clone());
            }
            Some(Entry::Table(t)) => {
                state.nodes.remove(path);
                match state.tables.get_mut(path) {
                    Some((entry, _)) if entry.id == t.id => {
                        entry.custom_attributes = t.custom_attributes.clone();
                        crate::static_table::apply_committed(entry, t, path)?;
                    }
                    _ => {
                        let mut entry = t.clone();
                        if let Some(StagedRows::Appended(chunks)) = entry.staged_rows.take() {
                            entry.static_chunks.extend(chunks);
                        }
                        let data = TableData::empty_for(&entry);
                        state.tables.insert(path.clone(), (entry, data));
                    }
                }
            }
        }
    }
    Ok(())
}
