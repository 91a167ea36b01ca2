//! Node locks (seed 004): snapshot, shared (optionally on one child key or one attribute
//! key) and exclusive, taken by master transactions explicitly (`lock`) or implied by the
//! changes they make; a change made outside transactions checks the same rules and holds
//! no lock after.
//!
//! Compatibility, for transaction T asking for a lock on node N (an *other* transaction is
//! one that is neither T nor an ancestor of T):
//!
//! | asked \ held            | snapshot by T or ancestor | exclusive by other | shared by other       |
//! |-------------------------|---------------------------|--------------------|-----------------------|
//! | snapshot                | ok (again: no effect)     | ok                 | ok                    |
//! | shared                  | refused                   | refused            | refused on the same child or attribute key, else ok |
//! | exclusive               | refused                   | refused            | refused               |
//!
//! Only acquired locks count. A waitable lock that cannot be acquired waits (`pending`), and
//! whenever locks end, pending ones are granted in the order they were asked for; one that
//! still cannot be acquired holds back the later ones on its node. A snapshot lock never
//! waits: nothing conflicts with it.
//!
//! A snapshot lock fixes the node, not the path: the transaction (and those nested in it)
//! reads the locked version wherever the node's path still leads to that node
//! ([`super::tree::Tree::of`]). The version kept is the node as the transaction's parent saw
//! it when the lock was acquired; the transaction's own changes compose over it, so changes
//! made before the lock are not lost and none are counted twice.
//!
//! The first read of a static table in a transaction takes a *read snapshot* (a snapshot
//! lock with `read` set; YT takes its snapshot at the first read, which makes reads of static
//! tables in a transaction serializable). Unlike an explicit snapshot lock it does not keep
//! the transaction from changing the table afterwards: its changes compose over the
//! snapshot.

use std::collections::HashSet;

use serde::{Deserialize, Serialize};

use super::transactions::{Entry, Master};
use super::tree::Tree;
use super::{parent, NodeView};
use crate::log::Action;
use crate::state::State;

/// A lock mode.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum LockMode {
    Snapshot,
    Shared,
    Exclusive,
}

impl LockMode {
    /// `snapshot`, `shared` or `exclusive`.
    pub fn parse(text: &str) -> Option<LockMode> {
        match text {
            "snapshot" => Some(LockMode::Snapshot),
            "shared" => Some(LockMode::Shared),
            "exclusive" => Some(LockMode::Exclusive),
            _ => None,
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            LockMode::Snapshot => "snapshot",
            LockMode::Shared => "shared",
            LockMode::Exclusive => "exclusive",
        }
    }
}

/// Whether a lock is held or waits.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum LockState {
    Pending,
    Acquired,
}

impl LockState {
    pub fn name(self) -> &'static str {
        match self {
            LockState::Pending => "pending",
            LockState::Acquired => "acquired",
        }
    }
}

/// A lock on a node.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Lock {
    pub id: String,
    pub transaction_id: String,
    pub node_id: String,
    /// Where the node was when the lock was asked for.
    pub path: String,
    pub mode: LockMode,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub child_key: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub attribute_key: Option<String>,
    pub state: LockState,
    /// Taken by `lock` (`unlock` removes it), not implied by a change.
    pub explicit: bool,
    /// A read snapshot: taken by the transaction's first read of a static table; it does
    /// not keep the transaction (or those nested in it) from changing the table.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub read: bool,
    /// The order locks were asked for in.
    pub seq: u64,
    /// A snapshot lock's version of the node, as its transaction saw it when acquired.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub snapshot: Option<Entry>,
    /// A snapshot lock on a table: the timestamp its rows are read at.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timestamp: Option<u64>,
}

/// A lock asked for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Request {
    pub node_id: String,
    pub path: String,
    pub mode: LockMode,
    pub child_key: Option<String>,
    pub attribute_key: Option<String>,
}

/// The acquired lock that keeps transaction `tx` (`None`: a change outside transactions)
/// from taking `request`, if any.
pub fn conflict<'a>(master: &'a Master, tx: Option<&str>, request: &Request) -> Option<&'a Lock> {
    if request.mode == LockMode::Snapshot {
        return None;
    }
    let same = |a: &Option<String>, b: &Option<String>| a.is_some() && a == b;
    master
        .locks
        .values()
        .filter(|l| l.state == LockState::Acquired && l.node_id == request.node_id)
        .find(|l| {
            if master.is_self_or_ancestor(&l.transaction_id, tx) {
                return l.mode == LockMode::Snapshot && !l.read;
            }
            match (l.mode, request.mode) {
                (LockMode::Snapshot, _) => false,
                (LockMode::Exclusive, _) | (LockMode::Shared, LockMode::Exclusive) => true,
                _ => {
                    same(&l.child_key, &request.child_key)
                        || same(&l.attribute_key, &request.attribute_key)
                }
            }
        })
}

/// Why a lock cannot be taken, as YT words it.
pub fn conflict_message(request: &Request, held: &Lock, tx: Option<&str>) -> String {
    let keys = match (&request.child_key, &request.attribute_key) {
        (Some(k), _) => format!(" with child key {k:?}"),
        (_, Some(k)) => format!(" with attribute key {k:?}"),
        _ => String::new(),
    };
    if held.mode == LockMode::Snapshot {
        return format!(
            "Cannot take {:?} lock for node {}{keys} since \"snapshot\" lock is already taken by transaction {}",
            request.mode.name(),
            request.path,
            held.transaction_id
        );
    }
    let by = match tx {
        Some(_) => "concurrent transaction",
        None => "transaction",
    };
    format!(
        "Cannot take {:?} lock for node {}{keys} since {:?} lock is taken by {by} {}",
        request.mode.name(),
        request.path,
        held.mode.name(),
        held.transaction_id
    )
}

/// The id a lock names a node by: its id, or for a directory implied by the paths below it
/// (stores written before directories were nodes), its path.
pub fn node_id(view: &NodeView, path: &str) -> String {
    match view {
        NodeView::Node(n) => n.id.clone(),
        NodeView::Table(t) => t.id.clone(),
        NodeView::ImplicitMap => format!("implicit:{path}"),
    }
}

/// The locks a change implies (seed 004): creating or removing a node takes a shared lock
/// on its parent with the child's name as the key and an exclusive one on the node;
/// changing a node's value an exclusive one; setting an attribute a shared one with the
/// attribute's name as the key.
pub fn implied(tree: &Tree, actions: &[Action]) -> Vec<Request> {
    let mut out: Vec<Request> = Vec::new();
    let on = |path: &str, id: String, mode, child_key: Option<String>, attribute_key| Request {
        node_id: id,
        path: path.to_string(),
        mode,
        child_key,
        attribute_key,
    };
    let parent_lock = |path: &str| {
        let up = parent(path)?;
        let view = tree.node(up)?;
        let name = path.rsplit('/').next().unwrap_or_default().to_string();
        Some(on(
            up,
            node_id(&view, up),
            LockMode::Shared,
            Some(name),
            None,
        ))
    };
    for action in actions {
        let (path, id, mode, attribute) = match action {
            Action::CreateNode { path, node } => (path, node.id.clone(), LockMode::Exclusive, None),
            Action::CreateTable { path, entry } => {
                (path, entry.id.clone(), LockMode::Exclusive, None)
            }
            Action::SetNode { path, node } => (path, node.id.clone(), LockMode::Exclusive, None),
            Action::RemoveNode { path, node_id } => {
                (path, node_id.clone(), LockMode::Exclusive, None)
            }
            Action::RemoveTable { path, table_id } => {
                (path, table_id.clone(), LockMode::Exclusive, None)
            }
            Action::SetCustomAttribute {
                path,
                node_id,
                name,
                ..
            } => (path, node_id.clone(), LockMode::Shared, Some(name.clone())),
            // Appending takes a shared lock (appends of several transactions all land),
            // writing over an exclusive one.
            Action::WriteStaticTable {
                path,
                table_id,
                append,
                ..
            } => {
                let mode = match append {
                    true => LockMode::Shared,
                    false => LockMode::Exclusive,
                };
                (path, table_id.clone(), mode, None)
            }
            Action::CopyTable {
                source,
                table_id,
                destination,
                new_id,
                keep_source,
            } => {
                let (source_mode, id) = match keep_source {
                    true => (LockMode::Snapshot, new_id.clone()),
                    false => (LockMode::Exclusive, table_id.clone()),
                };
                out.push(on(source, table_id.clone(), source_mode, None, None));
                out.extend(parent_lock(destination));
                out.push(on(destination, id, LockMode::Exclusive, None, None));
                continue;
            }
            _ => continue,
        };
        if matches!(
            action,
            Action::CreateNode { .. }
                | Action::CreateTable { .. }
                | Action::RemoveNode { .. }
                | Action::RemoveTable { .. }
        ) {
            out.extend(parent_lock(path));
        }
        out.push(on(path, id, mode, None, attribute));
    }
    let mut seen = HashSet::new();
    out.retain(|r| {
        seen.insert((
            r.node_id.clone(),
            r.mode,
            r.child_key.clone(),
            r.attribute_key.clone(),
        ))
    });
    out
}

/// Whether `tx` already holds a lock that covers `request` (the same node, mode and keys,
/// or exclusive), so that taking it again adds nothing.
pub fn already_held(master: &Master, tx: &str, request: &Request) -> bool {
    master.locks.values().any(|l| {
        l.transaction_id == tx
            && l.state == LockState::Acquired
            && l.node_id == request.node_id
            && (l.mode == LockMode::Exclusive && request.mode != LockMode::Snapshot
                || l.mode == request.mode
                    && l.child_key == request.child_key
                    && l.attribute_key == request.attribute_key)
    })
}

/// Grants pending locks that can now be acquired, in the order they were asked for; one
/// that cannot holds back the later ones on its node.
pub(crate) fn grant_pending(state: &mut State) {
    let mut pending: Vec<(u64, String)> = state
        .master
        .locks
        .values()
        .filter(|l| l.state == LockState::Pending)
        .map(|l| (l.seq, l.id.clone()))
        .collect();
    pending.sort();
    let mut blocked = HashSet::new();
    for (_, id) in pending {
        let lock = state.master.locks[&id].clone();
        if blocked.contains(&lock.node_id) {
            continue;
        }
        let request = Request {
            node_id: lock.node_id.clone(),
            path: lock.path.clone(),
            mode: lock.mode,
            child_key: lock.child_key.clone(),
            attribute_key: lock.attribute_key.clone(),
        };
        if conflict(&state.master, Some(&lock.transaction_id), &request).is_some() {
            blocked.insert(lock.node_id.clone());
            continue;
        }
        let (snapshot, timestamp) = match lock.mode {
            LockMode::Snapshot => {
                let path = Tree::of(state, Some(&lock.transaction_id))
                    .ok()
                    .and_then(|tree| tree.path_of(&lock.node_id));
                path.map_or((None, None), |p| {
                    snapshot_of(state, &lock.transaction_id, &p)
                })
            }
            _ => (None, None),
        };
        let held = state.master.locks.get_mut(&id).expect("listed");
        held.state = LockState::Acquired;
        held.snapshot = snapshot;
        held.timestamp = timestamp;
    }
}

/// What a snapshot lock acquired now holds: the node's version as `tx`'s parent (or the
/// committed tree) sees it, below `tx`'s own changes, which compose over it; and for a
/// table the timestamp its rows are read at (dynamic tables: compaction keeps the versions
/// this timestamp sees).
fn snapshot_of(state: &State, tx: &str, path: &str) -> (Option<Entry>, Option<u64>) {
    let parent = state
        .master
        .transactions
        .get(tx)
        .and_then(|t| t.parent_id.as_deref());
    let snapshot = Tree::of(state, parent)
        .ok()
        .and_then(|tree| tree.entry(path));
    let timestamp = matches!(snapshot, Some(Entry::Table(_))).then_some(state.last_timestamp.0);
    (snapshot, timestamp)
}

/// Replays a lock: a pending one waits its turn.
pub(crate) fn take(state: &mut State, lock: &Lock) -> std::result::Result<(), String> {
    if !state.master.transactions.contains_key(&lock.transaction_id) {
        return Err(format!("transaction {} is not live", lock.transaction_id));
    }
    let mut lock = lock.clone();
    if lock.state == LockState::Acquired && lock.mode == LockMode::Snapshot {
        // An explicit snapshot lock where the transaction holds a read snapshot keeps the
        // read snapshot's version (the transaction has read it) and replaces it.
        let read = state.master.locks.values().find(|l| {
            l.read && l.transaction_id == lock.transaction_id && l.node_id == lock.node_id
        });
        match read {
            Some(read) if !lock.read => {
                (lock.snapshot, lock.timestamp) = (read.snapshot.clone(), read.timestamp);
                let id = read.id.clone();
                state.master.locks.remove(&id);
            }
            _ => {
                (lock.snapshot, lock.timestamp) =
                    snapshot_of(state, &lock.transaction_id, &lock.path)
            }
        }
    }
    state.master.next_lock_seq = state.master.next_lock_seq.max(lock.seq + 1);
    state.master.locks.insert(lock.id.clone(), lock);
    grant_pending(state);
    Ok(())
}

/// Replays `unlock`: the transaction's explicit locks on the node end, acquired or pending.
pub(crate) fn unlock(
    state: &mut State,
    tx: &str,
    node_id: &str,
) -> std::result::Result<(), String> {
    state
        .master
        .locks
        .retain(|_, l| !(l.transaction_id == tx && l.node_id == node_id && l.explicit));
    grant_pending(state);
    Ok(())
}
