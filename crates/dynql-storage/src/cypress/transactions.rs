//! Master transactions (seed 004): long-lived, nested, each with its branched versions of
//! the nodes it changed and the locks it holds. All of it is state replayed from the log:
//! starting, pinging, staging changes, taking locks, committing and aborting are log actions
//! ([`crate::log::Action`]), so every process sees the same transactions and locks.
//!
//! * A transaction's `changes` are what it changed, per path ([`Change`]): removed, put there
//!   whole, or keys of the node below changed (value, attributes one by one, a static table's
//!   rows). It reads the committed tree with its ancestors' changes and its own composed over
//!   it ([`super::tree::Tree`]), so it sees what others committed to keys it did not change.
//! * Commit merges the changes key by key into the parent's (or, for a topmost transaction,
//!   into the committed tree), never a whole copy of a node, and hands the shared and
//!   exclusive locks to the parent; snapshot locks end. A transaction with live nested ones
//!   cannot commit.
//! * Abort drops the changes and locks of the transaction and of all its descendants.
//! * A transaction whose `last_ping_time + timeout` passed is expired: it counts as aborted
//!   at once, and the next change to the tree logs its abort.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

pub use super::delta::{Change, NodeDelta};
use super::locks::Lock;
use super::tree::Tree;
use super::Node;
use crate::error::{Error, Result};
use crate::kernel::catalog::TableEntry;
use crate::kernel::static_rows::StagedRows;
use crate::state::{State, TableData};

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
    /// The node's (or table's) id.
    pub fn id(&self) -> &str {
        match self {
            Entry::Node(n) => &n.id,
            Entry::Table(t) => &t.id,
        }
    }
}

/// What a transaction changed, by path.
pub type Changes = BTreeMap<String, Change>;

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
    /// What it changed (`deltas` in checkpoints).
    #[serde(rename = "deltas", default, skip_serializing_if = "BTreeMap::is_empty")]
    pub changes: Changes,
    /// Whole versions of nodes, as checkpoints written before per-key changes hold them
    /// (`changes`: path to the version, `None` removed); read only, and turned into
    /// `changes` when the checkpoint loads ([`upgrade_legacy`]).
    #[serde(rename = "changes", default, skip_serializing)]
    pub(crate) legacy_versions: BTreeMap<String, Option<Entry>>,
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

/// Replays staged changes: each merges into the transaction's change of its path.
pub(crate) fn stage(
    state: &mut State,
    id: &str,
    changes: &[(String, Change)],
) -> std::result::Result<(), String> {
    let tx = live(state, id)?;
    // Merged apart first, so that a change that does not merge leaves the others unstaged.
    let mut merged = Changes::new();
    for (path, change) in changes {
        let lower = match merged.remove(path) {
            Some(c) => Some(c),
            None => tx.changes.get(path).cloned(),
        };
        merged.insert(path.clone(), Change::then(path, lower, change.clone())?);
    }
    tx.changes.extend(merged);
    Ok(())
}

/// Replays a `stage_changes` record of a log written before per-key changes: whole versions
/// of nodes, each turned into the keys in which it differs from what the transaction's
/// parent (or the committed tree) has now. A version is the transaction's whole change of
/// its path (a table's appended rows are all it appended), so it replaces the change there.
pub(crate) fn stage_legacy(
    state: &mut State,
    id: &str,
    versions: &[(String, Option<Entry>)],
) -> std::result::Result<(), String> {
    let parent = live(state, id)?.parent_id.clone();
    let changes: Vec<(String, Change)> = {
        let below = Tree::of(state, parent.as_deref()).map_err(|e| e.to_string())?;
        versions
            .iter()
            .map(|(path, v)| {
                let change = Change::from_legacy(below.entry(path).as_ref(), v.clone());
                (path.clone(), change)
            })
            .collect()
    };
    live(state, id)?.changes.extend(changes);
    Ok(())
}

/// Turns the whole versions of transactions loaded from a checkpoint written before per-key
/// changes into changes, parents first (a version differs from what its parent sees).
pub(crate) fn upgrade_legacy(state: &mut State) -> std::result::Result<(), String> {
    let mut legacy: Vec<(usize, String)> = state
        .master
        .transactions
        .values()
        .filter(|t| !t.legacy_versions.is_empty())
        .map(|t| {
            (
                state.master.ancestry(&t.id).map_or(0, |a| a.len()),
                t.id.clone(),
            )
        })
        .collect();
    legacy.sort();
    for (_, id) in legacy {
        let versions = std::mem::take(&mut live(state, &id)?.legacy_versions);
        stage_legacy(state, &id, &versions.into_iter().collect::<Vec<_>>())?;
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
            check_nested_appends(state, parent, &tx.changes)?;
            let p = live(state, parent)?;
            let mut merged = Changes::new();
            for (path, change) in tx.changes {
                let lower = p.changes.get(&path).cloned();
                merged.insert(path.clone(), Change::then(&path, lower, change)?);
            }
            p.changes.extend(merged);
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

/// Checks that the rows a nested transaction appended to sorted static tables still follow
/// the rows its parent sees: the parent may have appended since.
fn check_nested_appends(
    state: &State,
    parent: &str,
    changes: &Changes,
) -> std::result::Result<(), String> {
    let tree = Tree::of(state, Some(parent)).map_err(|e| e.to_string())?;
    for (path, change) in changes {
        if let Change::Modified(NodeDelta {
            rows: Some(rows), ..
        }) = change
        {
            if let Some(super::NodeView::Table(table)) = tree.node(path) {
                rows.check_follows(&table.schema, &table.static_chunks, path)?;
            }
        }
    }
    Ok(())
}

/// Applies a topmost transaction's changes to the committed tree: removals deepest first,
/// then the new and changed nodes shallowest first. The transaction's locks kept everyone
/// else from what it changed, so what is there is what it saw or what it replaced.
///
/// A node it put there goes in whole (a new table with empty data, unless it is the table
/// already there: moved away and back). A node it changed gets each changed key, and nothing
/// else: keys others changed meanwhile stay, and so does what operations on a table's rows
/// changed of its entry (schema, tablets, settings).
///
/// # Errors
/// A change of a node that is not there (locks make this unreachable); rows appended to a
/// sorted static table that no longer follow its committed rows.
pub(crate) fn apply_changes(
    state: &mut State,
    changes: &Changes,
) -> std::result::Result<(), String> {
    for (path, change) in changes.iter().rev() {
        if let Change::Removed = change {
            state.nodes.remove(path);
            state.tables.remove(path);
        }
    }
    for (path, change) in changes {
        match change {
            Change::Removed => {}
            Change::Created(Entry::Node(n)) => {
                state.tables.remove(path);
                state.nodes.insert(path.clone(), n.clone());
            }
            Change::Created(Entry::Table(t)) => {
                state.nodes.remove(path);
                match state.tables.get_mut(path) {
                    Some((entry, _)) if entry.id == t.id => {
                        entry.custom_attributes = t.custom_attributes.clone();
                        entry.static_chunks = t.static_chunks.clone();
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
            Change::Modified(delta) => match state.tables.get_mut(path) {
                Some((entry, _)) => delta.apply_to_table(entry, path, true)?,
                None => delta.apply_to_node(committed_node_mut(state, path, &delta.id)?, path)?,
            },
        }
    }
    Ok(())
}

/// The committed node at `path` with id `id`, to change; a builtin one joins `state.nodes`
/// first.
pub(crate) fn committed_node_mut<'a>(
    state: &'a mut State,
    path: &str,
    id: &str,
) -> std::result::Result<&'a mut Node, String> {
    if !state.nodes.contains_key(path) {
        if let Some(b) = super::builtin(path) {
            state.nodes.insert(path.to_string(), b.clone());
        }
    }
    match state.nodes.get_mut(path) {
        Some(n) if n.id == id => Ok(n),
        _ => Err(format!("there is no node {path} (id {id})")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kernel::checksum::ChunkChecksum;
    use crate::kernel::static_rows::{RowsDelta, StaticChunk};
    use crate::log::Action;

    fn chunk(name: &str) -> StaticChunk {
        StaticChunk {
            path: name.into(),
            rows: 1,
            bytes: 1,
            data_weight: 1,
            first_key: vec![],
            last_key: vec![],
            checksum: ChunkChecksum {
                data_end: 0,
                tail: 0,
            },
        }
    }

    /// A committed map node `//tmp/n` with `@a`, a static table `//tmp/t` with one chunk,
    /// and a live transaction `t1` with `t2` nested in it.
    fn state() -> State {
        let mut state = State::default();
        let node = serde_json::json!({
            "id": "n1", "kind": "map_node", "attributes": {"a": "1"}, "creation_time": 0
        });
        let node = serde_json::from_value(node).unwrap();
        state.nodes.insert("//tmp/n".into(), node);
        let schema = dynql_core::TableSchema::parse("[{name=k;type=int64}]").unwrap();
        let mut table = TableEntry::new_static("t-id", schema);
        table.static_chunks = vec![chunk("c1")];
        let data = TableData::empty_for(&table);
        state.tables.insert("//tmp/t".into(), (table, data));
        for (id, parent) in [("t1", None), ("t2", Some("t1"))] {
            let tx = serde_json::json!({
                "id": id, "parent_id": parent, "timeout_ms": 1000, "start_time": 0,
                "last_ping_time": 0
            });
            start(&mut state, &serde_json::from_value(tx).unwrap()).unwrap();
        }
        state
    }

    /// The versions an old `stage_changes` record of `t1` holds: `@p` added to the node,
    /// a chunk appended to the table (its entry still lists the rows it branched from).
    fn legacy_versions(state: &State) -> serde_json::Value {
        let mut table = state.tables.get("//tmp/t").unwrap().0.clone();
        table.staged_rows = Some(StagedRows::Appended(vec![chunk("c2")]));
        serde_json::json!([
            ["//tmp/n", {"node": {
                "id": "n1", "kind": "map_node", "attributes": {"a": "1", "p": "2"},
                "creation_time": 0
            }}],
            ["//tmp/t", {"table": serde_json::to_value(table).unwrap()}],
        ])
    }

    /// What `t1` must have staged after the legacy versions.
    fn check_t1(state: &State) {
        let changes = &state.master.transactions["t1"].changes;
        let Change::Modified(node) = &changes["//tmp/n"] else {
            panic!("{changes:?}")
        };
        let p = BTreeMap::from([("p".to_string(), Some("2".to_string()))]);
        assert_eq!(node.attributes, p);
        assert!(node.value.is_none() && node.rows.is_none());
        let Change::Modified(table) = &changes["//tmp/t"] else {
            panic!("{changes:?}")
        };
        assert_eq!(table.rows, Some(RowsDelta::Appended(vec![chunk("c2")])));
        assert!(table.attributes.is_empty());
        let tree = Tree::of(state, Some("t1")).unwrap();
        assert_eq!(tree.static_chunks("//tmp/t"), [chunk("c1"), chunk("c2")]);
        let Some(Entry::Node(n)) = tree.entry("//tmp/n") else {
            panic!("a node")
        };
        assert_eq!(n.attributes.len(), 2);
    }

    #[test]
    fn legacy_stage_changes_records_replay_as_per_key_changes() {
        let mut state = state();
        let record = serde_json::json!({
            "action": "stage_changes", "transaction_id": "t1", "changes": legacy_versions(&state)
        });
        let Action::StageChanges {
            transaction_id,
            changes,
        } = serde_json::from_value(record).unwrap()
        else {
            panic!("a stage_changes action")
        };
        stage_legacy(&mut state, &transaction_id, &changes).unwrap();
        check_t1(&state);
        // A version is the transaction's whole change: replaying it again counts no append
        // twice.
        stage_legacy(&mut state, &transaction_id, &changes).unwrap();
        check_t1(&state);
        commit(&mut state, "t2").unwrap();
        commit(&mut state, "t1").unwrap();
        let table = &state.tables.get("//tmp/t").unwrap().0;
        assert_eq!(table.static_chunks, [chunk("c1"), chunk("c2")]);
        assert_eq!(state.nodes["//tmp/n"].attributes.len(), 2);
    }

    #[test]
    fn legacy_checkpointed_versions_upgrade_parents_first() {
        let mut state = state();
        let versions: BTreeMap<String, Option<Entry>> =
            serde_json::from_value::<Vec<(String, Option<Entry>)>>(legacy_versions(&state))
                .unwrap()
                .into_iter()
                .collect();
        // The nested transaction's version adds `@q` to its parent's.
        let nested = serde_json::json!({"//tmp/n": {"node": {
            "id": "n1", "kind": "map_node", "attributes": {"a": "1", "p": "2", "q": "3"},
            "creation_time": 0
        }}});
        for (id, changes) in [
            ("t2", nested),
            ("t1", serde_json::to_value(&versions).unwrap()),
        ] {
            let mut tx = serde_json::to_value(&state.master.transactions[id]).unwrap();
            tx["changes"] = changes;
            let tx: MasterTransaction = serde_json::from_value(tx).unwrap();
            assert!(tx.changes.is_empty() && !tx.legacy_versions.is_empty());
            state.master.transactions.insert(id.into(), tx);
        }
        upgrade_legacy(&mut state).unwrap();
        check_t1(&state);
        let Change::Modified(q) = &state.master.transactions["t2"].changes["//tmp/n"] else {
            panic!("a delta")
        };
        let expected = BTreeMap::from([("q".to_string(), Some("3".to_string()))]);
        assert_eq!(q.attributes, expected);
        // Written back, a transaction holds per-key changes only.
        let written = serde_json::to_value(&state.master.transactions["t1"]).unwrap();
        assert!(written.get("changes").is_none() && written.get("deltas").is_some());
    }
}
