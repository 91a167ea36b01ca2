//! Making a change to the tree, inside a master transaction or outside: the change is
//! planned against the tree the transaction sees ([`super::plan`]), the locks it implies are
//! checked against the locks held ([`super::locks`]), and then
//!
//! * outside a transaction, its actions are logged as they are (and it holds no lock after);
//! * inside transaction T, its actions become per-path changes ([`Change`]: removed, created
//!   whole, or the keys of a node it changed) staged as T's, and the implied locks are taken
//!   by T. Only making an implied directory a node of its own (to carry an attribute) is
//!   logged as it is: it changes nothing anyone sees.
//!
//! Transactions found expired are aborted first, in the same log record.

use std::borrow::Cow;

use super::locks::{already_held, conflict, conflict_message, implied, Lock, LockState};
use super::transactions::{Change, Changes, Entry, NodeDelta};
use super::tree::Tree;
use super::{NodeKind, NodeView};
use crate::clock::Fresh;
use crate::error::{Error, Result};
use crate::kernel::static_rows::RowsDelta;
use crate::log::Action;
use crate::state::State;
use crate::static_table::has_dynamic_rows;
use crate::store::Store;

/// The state with the transactions expired at `now_ms` aborted, and the actions that abort
/// them.
pub(crate) fn reap_expired(state: &State, now_ms: u64) -> Result<(Cow<'_, State>, Vec<Action>)> {
    let expired = state.master.expired(now_ms);
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
/// transactions), after the aborts of the transactions expired by `fresh`'s clock; the
/// locks it takes get ids from `fresh`.
///
/// # Errors
/// No such transaction; the plan's error; a lock conflict.
pub(crate) fn actions(
    state: &State,
    tx: Option<&str>,
    fresh: &Fresh,
    plan: &dyn Fn(&Tree) -> Result<Vec<Action>>,
) -> Result<Vec<Action>> {
    let (state, mut actions) = reap_expired(state, fresh.now_ms())?;
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
    let mut staged = Changes::new();
    for action in planned {
        if let Some(committed) = stage(&tree, &mut staged, action)? {
            actions.push(committed);
        }
    }
    // Replay merges each into T's change of its path: it must merge, or the record would
    // not apply (locks make a failure unreachable).
    let own = state
        .master
        .transactions
        .get(tx)
        .map(|t| &t.changes)
        .ok_or_else(|| Error::NoSuchTransaction { id: tx.into() })?;
    for (path, change) in &staged {
        Change::then(path, own.get(path).cloned(), change.clone()).map_err(|why| {
            Error::Invalid(format!("Cannot change {path} in transaction {tx}: {why}"))
        })?;
    }
    if !staged.is_empty() {
        actions.push(Action::StageDeltas {
            transaction_id: tx.into(),
            changes: staged.into_iter().collect(),
        });
    }
    let mut seq = state.master.next_lock_seq;
    for r in requests {
        if already_held(&state.master, tx, &r) || r.node_id.starts_with("implicit:") {
            continue;
        }
        actions.push(Action::TakeLock {
            lock: Lock {
                id: fresh.id(),
                transaction_id: tx.into(),
                node_id: r.node_id,
                path: r.path,
                mode: r.mode,
                child_key: r.child_key,
                attribute_key: r.attribute_key,
                state: LockState::Acquired,
                explicit: false,
                read: false,
                seq,
                snapshot: None,
                timestamp: None,
            },
        });
        seq += 1;
    }
    Ok(actions)
}

/// Merges `change` into the change staged at `path`.
fn put(staged: &mut Changes, path: String, change: Change) -> Result<Option<Action>> {
    let merged = Change::then(&path, staged.remove(&path), change).map_err(Error::Invalid)?;
    staged.insert(path, merged);
    Ok(None)
}

/// Turns one planned action into the change it makes, merged into `staged`; returns the
/// action itself when it is to be logged as it is.
fn stage(tree: &Tree, staged: &mut Changes, action: Action) -> Result<Option<Action>> {
    match action {
        Action::CreateNode { ref path, ref node }
            if node.kind == NodeKind::MapNode
                && matches!(tree.node(path), Some(NodeView::ImplicitMap))
                && !staged.contains_key(path) =>
        {
            Ok(Some(action))
        }
        Action::CreateNode { path, node } => put(staged, path, Change::Created(Entry::Node(node))),
        // Only the value: the attributes the planned node carries are the ones T saw.
        Action::SetNode { path, node } => {
            let delta = NodeDelta {
                value: Some(node.kind),
                ..NodeDelta::new(&node.id)
            };
            put(staged, path, Change::Modified(delta))
        }
        Action::CreateTable { path, entry } => {
            put(staged, path, Change::Created(Entry::Table(entry)))
        }
        Action::WriteStaticTable {
            path,
            table_id,
            append,
            chunks,
        } => {
            let rows = match append {
                true => RowsDelta::Appended(chunks),
                false => RowsDelta::Overwritten(chunks),
            };
            let delta = NodeDelta {
                rows: Some(rows),
                ..NodeDelta::new(&table_id)
            };
            put(staged, path, Change::Modified(delta))
        }
        Action::RemoveNode { path, .. } | Action::RemoveTable { path, .. } => {
            put(staged, path, Change::Removed)
        }
        Action::SetCustomAttribute {
            path,
            node_id,
            name,
            value,
        } => {
            let delta = NodeDelta {
                attributes: [(name, value)].into(),
                ..NodeDelta::new(&node_id)
            };
            put(staged, path, Change::Modified(delta))
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
            let Some(Entry::Table(mut table)) = tree.entry(&source) else {
                return Err(Error::NoSuchTable { path: source });
            };
            if table.dynamic || dynamic_rows {
                return Err(Error::Unsupported(format!(
                    "Cannot copy or move dynamic table {source} inside a master transaction: dynql branches only static tables; copy or move it outside transactions"
                )));
            }
            table.id = if keep_source { new_id } else { table_id };
            put(staged, destination, Change::Created(Entry::Table(table)))?;
            if !keep_source {
                put(staged, source, Change::Removed)?;
            }
            Ok(None)
        }
        other => Err(Error::Unsupported(format!(
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
        self.commit(|state| actions(state, tx, &self.fresh, &plan))
            .await?;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cypress::transactions::MasterTransaction;
    use crate::kernel::catalog::TableEntry;
    use crate::state::TableData;

    /// An attribute set in a transaction on a directory only a table's path implies (stores
    /// written before directories were nodes): the directory becomes a node, logged as it is,
    /// and the attribute is the transaction's change of that node.
    #[test]
    fn an_attribute_of_an_implicit_directory_is_staged_on_the_node_it_becomes() {
        let mut state = State::default();
        let schema = dynql_core::TableSchema::parse("[{name=k;type=int64}]").unwrap();
        let table = TableEntry::new_static("t-id", schema);
        let data = TableData::empty_for(&table);
        state.tables.insert("//x/t".into(), (table, data));
        let tx = MasterTransaction {
            id: "tx".into(),
            parent_id: None,
            title: None,
            timeout_ms: 600_000,
            start_time: 0,
            last_ping_time: 0,
            changes: Default::default(),
            legacy_versions: Default::default(),
        };
        super::super::transactions::start(&mut state, &tx).unwrap();
        let value = dynql_core::Yson::Int64(1);
        let fresh = Fresh::new(
            std::sync::Arc::new(crate::clock::ManualClock::new(0)),
            std::sync::Arc::new(crate::clock::SeededIds::new(1)),
        );
        let planned = actions(&state, Some("tx"), &fresh, &|tree| {
            super::super::plan::set_attribute(tree, "//x", "p", Some(&value), &fresh)
        })
        .unwrap();
        let [Action::CreateNode { path, node }, Action::StageDeltas { changes, .. }, ..] =
            planned.as_slice()
        else {
            panic!("{planned:?}")
        };
        assert_eq!(path, "//x");
        let [(staged_path, Change::Modified(delta))] = changes.as_slice() else {
            panic!("{changes:?}")
        };
        assert_eq!(
            (staged_path.as_str(), delta.id.as_str()),
            ("//x", node.id.as_str())
        );
        // Replayed and committed, the node carries the attribute.
        state.nodes.insert(path.clone(), node.clone());
        super::super::transactions::stage(&mut state, "tx", changes).unwrap();
        super::super::transactions::commit(&mut state, "tx").unwrap();
        assert_eq!(state.nodes["//x"].attributes["p"], "1");
    }
}
