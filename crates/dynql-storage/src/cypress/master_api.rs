//! Master transactions and node locks as a [`Store`] offers them: start, ping, commit,
//! abort, lock, unlock, and the objects `#ID` names.

use super::change::reap_expired;
use super::locks::{conflict, conflict_message, node_id, Lock, LockMode, LockState, Request};
use super::normalize;
use super::transactions::{Change, Entry, MasterTransaction, MAX_TIMEOUT_MS};
use super::tree::Tree;
use crate::error::{Error, Result};
use crate::log::Action;
use crate::state::State;
use crate::store::Store;

/// What `#ID` names.
#[derive(Debug, Clone)]
pub enum Object {
    /// A live master transaction, with the ids of its live nested transactions and its locks.
    Transaction {
        transaction: MasterTransaction,
        nested: Vec<String>,
        locks: Vec<Lock>,
    },
    Lock(Lock),
    /// A node, at `path` in the tree the asking transaction sees; `snapshot` is its version
    /// under a snapshot lock the transaction (or an ancestor) holds.
    Node {
        path: Option<String>,
        snapshot: Option<Entry>,
    },
}

/// A lock as [`Store::lock_node`] took it.
#[derive(Debug, Clone)]
pub struct TakenLock {
    pub lock_id: String,
    pub node_id: String,
    pub state: LockState,
}

/// Options of [`Store::lock_node`].
#[derive(Debug, Clone, Default)]
pub struct LockOptions {
    pub child_key: Option<String>,
    pub attribute_key: Option<String>,
    /// Wait in the node's queue (`pending`) instead of failing when the lock cannot be taken.
    pub waitable: bool,
}

/// Whether a transaction's changes change the node at `path`: the node itself (its value,
/// its attributes, its rows) or the set of its children.
fn branch_changed(changes: &super::transactions::Changes, path: &str) -> bool {
    let prefix = super::prefix_of(path);
    changes.contains_key(path)
        || changes
            .range(prefix.clone()..)
            .take_while(|(p, _)| p.starts_with(&prefix))
            .any(|(p, change)| {
                !p[prefix.len()..].contains('/')
                    && matches!(change, Change::Created(_) | Change::Removed)
            })
}

fn live<'a>(state: &'a State, id: &str) -> Result<&'a MasterTransaction> {
    state
        .master
        .transactions
        .get(id)
        .ok_or_else(|| Error::NoSuchTransaction { id: id.into() })
}

impl Store {
    /// Starts a master transaction, nested in `parent` if given. A timeout above an hour is
    /// cut to an hour (YT's limit).
    ///
    /// # Errors
    /// A parent that is not a live master transaction.
    pub async fn start_master_transaction(
        &self,
        parent: Option<&str>,
        timeout_ms: u64,
        title: Option<String>,
    ) -> Result<MasterTransaction> {
        let now = self.fresh.now_ms();
        let transaction = MasterTransaction {
            id: self.fresh.id(),
            parent_id: parent.map(str::to_string),
            title,
            timeout_ms: timeout_ms.min(MAX_TIMEOUT_MS),
            start_time: now,
            last_ping_time: now,
            changes: Default::default(),
            legacy_versions: Default::default(),
        };
        self.commit(|state| {
            let (state, mut actions) = reap_expired(state, self.fresh.now_ms())?;
            if let Some(p) = parent {
                live(&state, p)?;
            }
            actions.push(Action::StartMasterTransaction {
                transaction: transaction.clone(),
            });
            Ok(actions)
        })
        .await?;
        Ok(transaction)
    }

    /// Moves a master transaction's deadline to `timeout` from now.
    pub async fn ping_master_transaction(&self, id: &str) -> Result<()> {
        self.commit(|state| {
            let (state, mut actions) = reap_expired(state, self.fresh.now_ms())?;
            live(&state, id)?;
            actions.push(Action::PingMasterTransaction {
                id: id.into(),
                time: self.fresh.now_ms(),
            });
            Ok(actions)
        })
        .await?;
        Ok(())
    }

    /// Commits a master transaction: its changes become its parent's (or everyone's).
    ///
    /// # Errors
    /// No such live transaction; live nested transactions (commit them first).
    pub async fn commit_master_transaction(&self, id: &str) -> Result<()> {
        self.commit(|state| {
            let (state, mut actions) = reap_expired(state, self.fresh.now_ms())?;
            live(&state, id)?;
            let nested = state.master.nested(id);
            if !nested.is_empty() {
                return Err(Error::Invalid(format!(
                    "Cannot commit transaction {id} since it has {} active nested transaction(s): {}; commit or abort them first",
                    nested.len(),
                    nested.join(", ")
                )));
            }
            // The changes must still apply (locks keep them applicable; this is the proof).
            let mut after = state.into_owned();
            super::transactions::commit(&mut after, id).map_err(|why| {
                Error::Invalid(format!("Cannot commit transaction {id}: {why}"))
            })?;
            actions.push(Action::CommitMasterTransaction { id: id.into() });
            Ok(actions)
        })
        .await?;
        Ok(())
    }

    /// Aborts a master transaction and every transaction nested in it.
    pub async fn abort_master_transaction(&self, id: &str) -> Result<()> {
        self.commit(|state| {
            let (state, mut actions) = reap_expired(state, self.fresh.now_ms())?;
            live(&state, id)?;
            actions.push(Action::AbortMasterTransaction {
                id: id.into(),
                expired: false,
            });
            Ok(actions)
        })
        .await?;
        Ok(())
    }

    /// Whether `id` is a live master transaction.
    pub async fn is_master_transaction(&self, id: &str) -> Result<bool> {
        let state = self.refresh().await?;
        Ok(state.master.is_live(id, self.fresh.now_ms()))
    }

    /// Takes a lock on the node at `path` in master transaction `tx`.
    ///
    /// # Errors
    /// No such transaction or node; keys with a mode other than shared; a conflicting lock
    /// (unless `waitable`: the lock is then pending).
    pub async fn lock_node(
        &self,
        path: &str,
        tx: &str,
        mode: LockMode,
        options: LockOptions,
    ) -> Result<TakenLock> {
        let path = normalize(path);
        super::validate(path)?;
        if mode != LockMode::Shared
            && (options.child_key.is_some() || options.attribute_key.is_some())
        {
            return Err(Error::Invalid(
                "Only shared locks can have a child key or an attribute key".into(),
            ));
        }
        let lock_id = self.fresh.id();
        let taken = std::sync::Mutex::new(None);
        self.commit(|state| {
            let (state, mut actions) = reap_expired(state, self.fresh.now_ms())?;
            live(&state, tx)?;
            let tree = Tree::of(&state, Some(tx))?;
            let view = tree
                .node(path)
                .ok_or_else(|| Error::NoSuchNode { path: path.into() })?;
            let request = Request {
                node_id: node_id(&view, path),
                path: path.into(),
                mode,
                child_key: options.child_key.clone(),
                attribute_key: options.attribute_key.clone(),
            };
            let master = &state.master;
            if mode == LockMode::Snapshot {
                // Taken again: no effect. (A read snapshot becomes this lock: see `take`.)
                if let Some(held) = master.locks.values().find(|l| {
                    l.transaction_id == tx
                        && l.node_id == request.node_id
                        && l.mode == mode
                        && !l.read
                }) {
                    *taken.lock().expect("not poisoned") = Some(TakenLock {
                        lock_id: held.id.clone(),
                        node_id: held.node_id.clone(),
                        state: held.state,
                    });
                    return Ok(actions);
                }
            }
            let queued = master
                .locks
                .values()
                .any(|l| l.node_id == request.node_id && l.state == LockState::Pending);
            // A waitable lock queues behind the pending ones on the node.
            let blocker = conflict(master, Some(tx), &request);
            let lock_state = match blocker {
                // Nothing conflicts with a snapshot lock: it never waits.
                _ if mode == LockMode::Snapshot => LockState::Acquired,
                None if !(options.waitable && queued) => LockState::Acquired,
                _ if options.waitable => LockState::Pending,
                Some(held) => {
                    return Err(Error::LockConflict(conflict_message(
                        &request,
                        held,
                        Some(tx),
                    )))
                }
                None => LockState::Acquired,
            };
            *taken.lock().expect("not poisoned") = Some(TakenLock {
                lock_id: lock_id.clone(),
                node_id: request.node_id.clone(),
                state: lock_state,
            });
            actions.push(Action::TakeLock {
                lock: Lock {
                    id: lock_id.clone(),
                    transaction_id: tx.into(),
                    node_id: request.node_id,
                    path: path.into(),
                    mode,
                    child_key: request.child_key,
                    attribute_key: request.attribute_key,
                    state: lock_state,
                    explicit: true,
                    read: false,
                    seq: master.next_lock_seq,
                    snapshot: None,
                    timestamp: None,
                },
            });
            Ok(actions)
        })
        .await?;
        let taken = taken.into_inner().expect("not poisoned");
        taken.ok_or_else(|| Error::Invalid("the lock was not taken".into()))
    }

    /// Releases transaction `tx`'s explicit locks on the node at `path`, acquired or
    /// pending.
    ///
    /// # Errors
    /// No such transaction or node; the transaction changed the node, its attributes or its
    /// children (its branched version has changes, so its locks must stay until the
    /// transaction ends), unless its only explicit locks on it are snapshot locks (seed 004:
    /// those can always be released).
    pub async fn unlock_node(&self, path: &str, tx: &str) -> Result<()> {
        let path = normalize(path);
        super::validate(path)?;
        self.commit(|state| {
            let (state, mut actions) = reap_expired(state, self.fresh.now_ms())?;
            let transaction = live(&state, tx)?;
            let tree = Tree::of(&state, Some(tx))?;
            let view = tree
                .node(path)
                .ok_or_else(|| Error::NoSuchNode { path: path.into() })?;
            let id = node_id(&view, path);
            let explicit: Vec<&Lock> = state
                .master
                .locks
                .values()
                .filter(|l| l.transaction_id == tx && l.node_id == id && l.explicit)
                .collect();
            let only_snapshots =
                !explicit.is_empty() && explicit.iter().all(|l| l.mode == LockMode::Snapshot);
            if !only_snapshots && branch_changed(&transaction.changes, path) {
                return Err(Error::Invalid(format!(
                    "Cannot unlock node {path} in transaction {tx}: its branched version has changes (the transaction changed the node, its attributes or its children); its locks end with the transaction"
                )));
            }
            if !explicit.is_empty() {
                actions.push(Action::Unlock {
                    transaction_id: tx.into(),
                    node_id: id,
                });
            }
            Ok(actions)
        })
        .await?;
        Ok(())
    }

    /// Takes a read snapshot of the static table at `path` for master transaction `tx`,
    /// unless it (or an ancestor) already holds a snapshot of it: later reads in `tx` see
    /// the rows they see now, whatever others commit (YT's serializable reads of static
    /// tables). A table `tx` put there itself needs none.
    ///
    /// # Errors
    /// No such transaction.
    pub async fn take_read_snapshot(&self, path: &str, tx: &str) -> Result<()> {
        let path = normalize(path);
        super::validate(path)?;
        let lock_id = self.fresh.id();
        self.commit(|state| {
            let (state, mut actions) = reap_expired(state, self.fresh.now_ms())?;
            let transaction = live(&state, tx)?;
            let tree = Tree::of(&state, Some(tx))?;
            let Some(super::NodeView::Table(table)) = tree.node(path) else {
                return Ok(actions);
            };
            let master = &state.master;
            let held = master.locks.values().any(|l| {
                l.node_id == table.id
                    && l.mode == LockMode::Snapshot
                    && master.is_self_or_ancestor(&l.transaction_id, Some(tx))
            });
            let below = Tree::of(&state, transaction.parent_id.as_deref())?;
            let others_see_it = matches!(
                below.node(path),
                Some(super::NodeView::Table(t)) if t.id == table.id
            );
            if table.dynamic || held || !others_see_it {
                return Ok(actions);
            }
            actions.push(Action::TakeLock {
                lock: Lock {
                    id: lock_id.clone(),
                    transaction_id: tx.into(),
                    node_id: table.id.clone(),
                    path: path.into(),
                    mode: LockMode::Snapshot,
                    child_key: None,
                    attribute_key: None,
                    state: LockState::Acquired,
                    explicit: false,
                    read: true,
                    seq: master.next_lock_seq,
                    snapshot: None,
                    timestamp: None,
                },
            });
            Ok(actions)
        })
        .await?;
        Ok(())
    }

    /// The object `#id` names, as transaction `tx` (or none) sees it.
    pub async fn object(&self, id: &str, tx: Option<&str>) -> Result<Option<Object>> {
        let state = self.refresh().await?;
        let now = self.fresh.now_ms();
        let master = &state.master;
        if let Some(t) = master
            .transactions
            .get(id)
            .filter(|_| master.is_live(id, now))
        {
            return Ok(Some(Object::Transaction {
                transaction: t.clone(),
                nested: master.nested(id),
                locks: master
                    .locks
                    .values()
                    .filter(|l| l.transaction_id == id)
                    .cloned()
                    .collect(),
            }));
        }
        if let Some(l) = master
            .locks
            .get(id)
            .filter(|l| master.is_live(&l.transaction_id, now))
        {
            return Ok(Some(Object::Lock(l.clone())));
        }
        if tx.is_some_and(|t| !master.is_live(t, now)) {
            return Err(Error::NoSuchTransaction {
                id: tx.unwrap_or_default().into(),
            });
        }
        let tree = Tree::of(&state, tx)?;
        let lock = master
            .locks
            .values()
            .filter(|l| l.node_id == id && l.mode == LockMode::Snapshot)
            .find(|l| master.is_self_or_ancestor(&l.transaction_id, tx));
        let path = tree.path_of(id);
        // Where the locked path still leads to the node, the tree shows the kept version
        // with the transaction's own changes over it.
        let snapshot = lock.and_then(|l| match &path {
            Some(p) if *p == l.path => tree.entry(p).or_else(|| l.snapshot.clone()),
            _ => l.snapshot.clone(),
        });
        if path.is_none() && snapshot.is_none() {
            return Ok(None);
        }
        Ok(Some(Object::Node { path, snapshot }))
    }

    /// The live master transactions.
    pub async fn master_transactions(&self) -> Result<Vec<MasterTransaction>> {
        let state = self.refresh().await?;
        let now = self.fresh.now_ms();
        Ok(state
            .master
            .transactions
            .values()
            .filter(|t| state.master.is_live(&t.id, now))
            .cloned()
            .collect())
    }
}
