//! Making a change to the tree, inside a master transaction or outside: the change is
//! planned against the tree the transaction sees ([`super::plan`]), the locks it implies are
//! checked against the locks held ([`super::locks`]), and then
//!
//! * outside a transaction, its actions are logged as they are (and it holds no lock after);
//! * inside transaction T, its node versions are staged as T's changes and the implied locks
//!   are taken by T. Only making an implied directory a node of its own (to carry an
//!   attribute) is logged as it is: it changes nothing anyone sees.
//!
//! Transactions found expired are aborted first, in the same log record.

use std::borrow::Cow;

use super::locks::{already_held, conflict, conflict_message, implied, Lock, LockState};
use super::transactions::{Changes, Entry};
use super::tree::Tree;
use super::{now_ms, NodeKind, NodeView};
use crate::error::{Error, Result};
use crate::log::Action;
use crate::static_table::{has_dynamic_rows, StagedRows};
use crate::store::{fresh_id, State, Store};

/// The state with expired transactions aborted, and the actions that abort them.
pub(crate) fn reap_expired(state: &State) -> Result<(Cow<'_, State>, Vec<Action>)> {
    let expired = state.master.expired(now_ms());
    if expired.is_empty() {
        return Ok((Cow::Borrowed(state), vec![]));
    }
    let mut next = state.clone();
    let mut actions = Vec::new();
    for id in expired {
        // A descendant of one aborted before is gone already.
        if next.master.transactions.contains_key(&id) {
            super::transactions::abort(&mut next, &id).map_err(Error::Invalid)?;
            actions.push(Action::AbortMasterTransaction { id, expired: true });
        }
    }
    Ok((Cow::Owned(next), actions))
}

/// The actions of a change planned by `plan` in transaction `tx` (`None`: outside
/// transactions), after the expired transactions' aborts.
///
/// # Errors
/// No such transaction; the plan's error; a lock conflict.
pub(crate) fn actions(
    state: &State,
    tx: Option<&str>,
    plan: &dyn Fn(&Tree) -> Result<Vec<Action>>,
) -> Result<Vec<Action>> {
    let (state, mut actions) = reap_expired(state)?;
    let tree = Tree::of(&state, tx)?;
    let planned = plan(&tree)?;
    let requests = implied(&tree, &planned);
    for r in &requests {
        if let Some(held) = conflict(&state.master, tx, r) {
            return Err(Error::LockConflict(conflict_message(r, held, tx)));
        }
    }
    let Some(tx) = tx else {
        actions.extend(planned);
        return Ok(actions);
    };
    let mut changes = Changes::new();
    for action in planned {
        if let Some(committed) = stage(&tree, &mut changes, action)? {
            actions.push(committed);
        }
    }
    if !changes.is_empty() {
        actions.push(Action::StageChanges {
            transaction_id: tx.into(),
            changes: changes.into_iter().collect(),
        });
    }
    let mut seq = state.master.next_lock_seq;
    for r in requests {
        if already_held(&state.master, tx, &r) || r.node_id.starts_with("implicit:") {
            continue;
        }
        actions.push(Action::TakeLock {
            lock: Lock {
                id: fresh_id(),
                transaction_id: tx.into(),
                node_id: r.node_id,
                path: r.path,
                mode: r.mode,
                child_key: r.child_key,
                attribute_key: r.attribute_key,
                state: LockState::Acquired,
                explicit: false,
                seq,
                snapshot: None,
                timestamp: None,
            },
        });
        seq += 1;
    }
    Ok(actions)
}

/// Turns one planned action into a version staged in `changes`; returns the action itself
/// when it is to be logged as it is.
fn stage(tree: &Tree, changes: &mut Changes, action: Action) -> Result<Option<Action>> {
    // The transaction's own version of a node, else one branched from its parent's: a
    // static table's staged rows belong to the version that staged them.
    let current = |changes: &Changes, path: &str| match changes.get(path) {
        Some(entry) => entry.clone(),
        None => match tree.own_version(path) {
            Some(own) => own.cloned(),
            None => tree.entry(path).map(|e| match e {
                Entry::Table(mut t) => {
                    t.staged_rows = None;
                    Entry::Table(t)
                }
                node => node,
            }),
        },
    };
    match action {
        Action::CreateNode { ref path, ref node }
            if node.kind == NodeKind::MapNode
                && matches!(tree.node(path), Some(NodeView::ImplicitMap))
                && !changes.contains_key(path) =>
        {
            Ok(Some(action))
        }
        Action::CreateNode { path, node } | Action::SetNode { path, node } => {
            changes.insert(path, Some(Entry::Node(node)));
            Ok(None)
        }
        Action::CreateTable { path, mut entry } => {
            // Its rows are all in this version.
            entry.staged_rows = Some(StagedRows::Overwritten);
            changes.insert(path, Some(Entry::Table(entry)));
            Ok(None)
        }
        Action::WriteStaticTable {
            path,
            append,
            chunks,
            ..
        } => {
            let Some(Entry::Table(mut table)) = current(changes, &path) else {
                return Err(Error::NoSuchTable { path });
            };
            table.staged_rows = Some(match (append, table.staged_rows.take()) {
                (false, _) => {
                    table.static_chunks = chunks;
                    StagedRows::Overwritten
                }
                (true, Some(StagedRows::Overwritten)) => {
                    table.static_chunks.extend(chunks);
                    StagedRows::Overwritten
                }
                (true, Some(StagedRows::Appended(mut before))) => {
                    before.extend(chunks);
                    StagedRows::Appended(before)
                }
                (true, None) => StagedRows::Appended(chunks),
            });
            changes.insert(path, Some(Entry::Table(table)));
            Ok(None)
        }
        Action::RemoveNode { path, .. } | Action::RemoveTable { path, .. } => {
            changes.insert(path, None);
            Ok(None)
        }
        Action::SetCustomAttribute {
            path, name, value, ..
        } => {
            let mut entry =
                current(changes, &path).ok_or_else(|| Error::NoSuchNode { path: path.clone() })?;
            let attributes = match &mut entry {
                Entry::Node(n) => &mut n.attributes,
                Entry::Table(t) => &mut t.custom_attributes,
            };
            match value {
                Some(v) => attributes.insert(name, v),
                None => attributes.remove(&name),
            };
            changes.insert(path, Some(entry));
            Ok(None)
        }
        Action::CopyTable {
            source,
            table_id,
            destination,
            new_id,
            keep_source,
        } => {
            // A static table's copy is its entry (the chunks are shared and immutable); a
            // dynamic table's rows live outside the tree and are not branched.
            let dynamic_rows = tree
                .state
                .tables
                .get(&source)
                .is_some_and(|(e, data)| e.id == table_id && has_dynamic_rows(data));
            let Some(Entry::Table(mut table)) = tree.resolved_entry(&source) else {
                return Err(Error::NoSuchTable { path: source });
            };
            if table.dynamic || dynamic_rows {
                return Err(Error::Invalid(format!(
                    "Cannot copy or move dynamic table {source} inside a master transaction: dynql branches only static tables; copy or move it outside transactions"
                )));
            }
            table.id = if keep_source { new_id } else { table_id };
            table.staged_rows = Some(StagedRows::Overwritten);
            changes.insert(destination, Some(Entry::Table(table)));
            if !keep_source {
                changes.insert(source, None);
            }
            Ok(None)
        }
        other => Err(Error::Invalid(format!(
            "{} cannot be done inside a master transaction",
            crate::replay::action_summary(&other)
        ))),
    }
}

impl Store {
    /// Commits a change to the tree planned by `plan`, in transaction `tx` or outside.
    pub(crate) async fn change_tree(
        &self,
        tx: Option<&str>,
        plan: impl Fn(&Tree) -> Result<Vec<Action>>,
    ) -> Result<()> {
        self.commit(|state| actions(state, tx, &plan)).await?;
        Ok(())
    }
}
