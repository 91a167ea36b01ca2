//! The tree as one transaction sees it: the committed nodes and tables with the changes of
//! its master transactions composed over them, the topmost transaction's first (seed 004's
//! branched versions: a transaction reads its own change of a node over its parent's, ...,
//! over the committed node; a change holds only the keys it changed, so keys others
//! committed meanwhile show through). A snapshot lock of one of them puts the version it
//! keeps under that transaction's changes (see [`super::locks`]). Without a transaction it
//! is the committed tree.

use std::borrow::Cow;
use std::collections::{BTreeMap, BTreeSet};
use std::ops::Bound;

use dynql_core::Yson;

use super::locks::{Lock, LockMode, LockState};
use super::transactions::{Change, Entry};
use super::{
    builtin, child_path, parent, prefix_of, system_children, Node, NodeKind, NodeView, ROOT,
};
use crate::error::{Error, Result};
use crate::kernel::static_rows::StaticChunk;
use crate::state::State;

/// The tree seen by a transaction (or none).
#[derive(Clone)]
pub struct Tree<'a> {
    pub(crate) state: &'a State,
    /// The version of every path the transaction or an ancestor changed (`None`: nothing is
    /// there). A node one of them put there is borrowed; one they changed is composed.
    versions: BTreeMap<&'a str, Option<Cow<'a, Entry>>>,
}

impl<'a> Tree<'a> {
    /// The committed tree.
    pub(crate) fn committed(state: &'a State) -> Tree<'a> {
        Tree {
            state,
            versions: BTreeMap::new(),
        }
    }

    /// The tree `transaction` sees.
    ///
    /// # Errors
    /// [`Error::NoSuchTransaction`] when it is not a live master transaction.
    pub(crate) fn of(state: &'a State, transaction: Option<&'a str>) -> Result<Tree<'a>> {
        let Some(id) = transaction else {
            return Ok(Tree::committed(state));
        };
        let mut versions: BTreeMap<&'a str, Option<Cow<'a, Entry>>> = BTreeMap::new();
        for tx in state.master.ancestry(id)?.into_iter().rev() {
            // The versions its snapshot locks keep, where the path still leads to the
            // locked node; its own changes compose over them.
            for lock in state.master.locks.values() {
                let Some(kept) = snapshot_kept(lock, &tx.id) else {
                    continue;
                };
                let now = match versions.get(lock.path.as_str()) {
                    Some(version) => version.as_deref().map(Entry::id),
                    None => committed_id(state, &lock.path),
                };
                if now == Some(kept.id()) {
                    versions.insert(lock.path.as_str(), Some(Cow::Borrowed(kept)));
                }
            }
            for (path, change) in &tx.changes {
                let version = match change {
                    Change::Removed => None,
                    Change::Created(entry) => Some(Cow::Borrowed(entry)),
                    Change::Modified(_) => {
                        let below = match versions.remove(path.as_str()) {
                            Some(version) => version.map(Cow::into_owned),
                            None => committed_entry(state, path),
                        };
                        change.version(path, below).map(Cow::Owned)
                    }
                };
                versions.insert(path.as_str(), version);
            }
        }
        Ok(Tree { state, versions })
    }

    /// What the transactions' changes make of `path`: `Some(None)` removed, `Some(Some(e))`
    /// changed, `None` unchanged.
    fn overlaid(&self, path: &str) -> Option<Option<&Entry>> {
        self.versions.get(path).map(Option::as_deref)
    }

    /// The node at `path`, if there is one.
    pub fn node(&self, path: &str) -> Option<NodeView<'_>> {
        match self.overlaid(path) {
            Some(Some(Entry::Node(n))) => return Some(NodeView::Node(n)),
            Some(Some(Entry::Table(t))) => return Some(NodeView::Table(t)),
            Some(None) => return None,
            None => {}
        }
        if let Some(n) = self.state.nodes.get(path) {
            return Some(NodeView::Node(n));
        }
        if let Some((entry, _)) = self.state.tables.get(path) {
            return Some(NodeView::Table(entry));
        }
        if let Some(n) = builtin(path) {
            return Some(NodeView::Node(n));
        }
        if self.has_descendants(path) {
            return Some(NodeView::ImplicitMap);
        }
        None
    }

    /// Every path with a node below `path` (not itself), sorted: explicit nodes and tables.
    fn paths_below(&self, path: &str) -> BTreeSet<&str> {
        let prefix = prefix_of(path);
        let mut paths: BTreeSet<&str> = self
            .state
            .nodes
            .range(prefix.clone()..)
            .take_while(|(k, _)| k.starts_with(&prefix))
            .map(|(k, _)| k.as_str())
            .collect();
        paths.extend(self.state.tables.paths_under(&prefix).map(String::as_str));
        let changed = self
            .versions
            .range::<str, _>((Bound::Included(prefix.as_str()), Bound::Unbounded))
            .take_while(|(k, _)| k.starts_with(&prefix));
        for (k, version) in changed {
            match version {
                Some(_) => paths.insert(*k),
                None => paths.remove(*k),
            };
        }
        paths
    }

    fn has_descendants(&self, path: &str) -> bool {
        !self.paths_below(path).is_empty()
    }

    /// The names of the children of the map node at `path`.
    pub fn children(&self, path: &str) -> BTreeSet<String> {
        if let Some(names) = system_children(self.state, path) {
            return names;
        }
        let prefix = prefix_of(path);
        let names: BTreeSet<String> = self
            .paths_below(path)
            .into_iter()
            .chain(super::BUILTIN_DIRECTORIES.iter().copied())
            .filter_map(|p| p.strip_prefix(prefix.as_str()))
            .filter_map(|rest| rest.split('/').next())
            .filter(|n| !n.is_empty())
            .map(str::to_string)
            .collect();
        // paths_below drops removed paths: every name left is a child that exists.
        names
    }

    /// Every explicit node and table below `path` (not itself), by path.
    pub(crate) fn descendants(&self, path: &str) -> (Vec<(String, Node)>, Vec<(String, String)>) {
        let mut nodes = Vec::new();
        let mut tables = Vec::new();
        for p in self.paths_below(path) {
            match self.node(p) {
                Some(NodeView::Node(n)) => nodes.push((p.to_string(), n.clone())),
                Some(NodeView::Table(t)) => tables.push((p.to_string(), t.id.clone())),
                _ => {}
            }
        }
        (nodes, tables)
    }

    /// Resolves `path` to a node and, for a path into a document, the keys inside its value.
    ///
    /// # Errors
    /// [`Error::NoSuchNode`] when nothing is there.
    pub fn resolve<'p>(&self, path: &'p str) -> Result<(&'p str, NodeView<'_>, Vec<&'p str>)> {
        if let Some(view) = self.node(path) {
            return Ok((path, view, vec![]));
        }
        let mut at = path;
        while let Some(up) = parent(at) {
            if let Some(view) = self.node(up) {
                // Inside a value: a document's, or a list node's items.
                if let NodeView::Node(Node {
                    kind: NodeKind::Document { .. } | NodeKind::Scalar { .. },
                    ..
                }) = view
                {
                    let inner = path[prefix_of(up).len()..].split('/').collect();
                    return Ok((up, view, inner));
                }
                break;
            }
            at = up;
        }
        Err(Error::NoSuchNode { path: path.into() })
    }

    /// Whether `path` names a node, or a part of a document's value (without building the
    /// value of what is below it, as [`Tree::value`] would).
    pub fn exists(&self, path: &str) -> bool {
        if system_children(self.state, path).is_some() {
            return true;
        }
        match self.resolve(path) {
            Ok((_, _, inner)) if inner.is_empty() => true,
            Ok((_, NodeView::Node(n), inner)) => n
                .value()
                .is_some_and(|v| super::plan::inside(&v, &inner).is_some()),
            _ => false,
        }
    }

    /// The value `get PATH` prints: a map node is the map of its children's values, a table
    /// `#` (YT prints opaque nodes so), a document or scalar its value.
    ///
    /// The recursion follows the tree's depth, which paths bound ([`crate::MAX_PATH_DEPTH`]);
    /// a deeper tree (made before the bound) is refused rather than followed.
    pub fn value(&self, path: &str) -> Result<Yson> {
        if path.bytes().filter(|b| *b == b'/').count() > crate::MAX_PATH_DEPTH + 1 {
            return Err(Error::Invalid(format!(
                "Cannot get {}: the tree below it is deeper than {} levels",
                dynql_core::error::shown(path),
                crate::MAX_PATH_DEPTH
            )));
        }
        if let Some(ids) = system_children(self.state, path) {
            // The system's objects print as entities, as YT prints opaque nodes.
            return Ok(Yson::Map(
                ids.into_iter()
                    .map(|id| (id.into_bytes(), Yson::Entity))
                    .collect(),
            ));
        }
        let (node_path, view, inner) = self.resolve(path)?;
        match view {
            NodeView::Table(_) => Ok(Yson::Entity),
            NodeView::ImplicitMap
            | NodeView::Node(Node {
                kind: NodeKind::MapNode,
                ..
            }) => {
                let mut map = Vec::new();
                for name in self.children(node_path) {
                    let value = self.value(&child_path(node_path, &name))?;
                    map.push((name.into_bytes(), value));
                }
                Ok(Yson::Map(map))
            }
            NodeView::Node(n) => {
                let value = n.value().unwrap_or(Yson::Entity);
                super::plan::inside(&value, &inner)
                    .cloned()
                    .ok_or_else(|| Error::NoSuchNode { path: path.into() })
            }
        }
    }

    /// The path of the node with id `id` in this tree.
    pub fn path_of(&self, id: &str) -> Option<String> {
        let mut found = None;
        for p in self.paths_below(ROOT) {
            let matches = match self.node(p) {
                Some(NodeView::Node(n)) => n.id == id,
                Some(NodeView::Table(t)) => t.id == id,
                _ => false,
            };
            if matches {
                found = Some(p.to_string());
            }
        }
        found.or_else(|| {
            super::BUILTIN_DIRECTORIES
                .iter()
                .chain([&ROOT])
                .find(|p| builtin(p).is_some_and(|n| n.id == id))
                .map(|p| p.to_string())
        })
    }

    /// The rows of the static table at `path` as the tree sees them: its chunks in row
    /// order (a transaction's appends after the rows below them).
    pub fn static_chunks(&self, path: &str) -> Vec<StaticChunk> {
        match self.node(path) {
            Some(NodeView::Table(t)) => t.static_chunks.clone(),
            _ => vec![],
        }
    }

    /// The node or table at `path` as the tree sees it (a static table with all its rows):
    /// what a snapshot or a copy of it holds. `None` for an implicit directory.
    pub(crate) fn entry(&self, path: &str) -> Option<Entry> {
        match self.node(path)? {
            NodeView::Node(n) => Some(Entry::Node(n.clone())),
            NodeView::Table(t) => Some(Entry::Table(t.clone())),
            NodeView::ImplicitMap => None,
        }
    }
}

/// The version an acquired snapshot lock of transaction `tx` keeps.
fn snapshot_kept<'l>(lock: &'l Lock, tx: &str) -> Option<&'l Entry> {
    let taken = lock.transaction_id == tx
        && lock.mode == LockMode::Snapshot
        && lock.state == LockState::Acquired;
    lock.snapshot.as_ref().filter(|_| taken)
}

/// The id of the committed node or table at `path`.
fn committed_id<'s>(state: &'s State, path: &str) -> Option<&'s str> {
    if let Some(n) = state.nodes.get(path) {
        return Some(&n.id);
    }
    if let Some((entry, _)) = state.tables.get(path) {
        return Some(&entry.id);
    }
    builtin(path).map(|n| n.id.as_str())
}

/// The committed node or table at `path` (a builtin directory included).
fn committed_entry(state: &State, path: &str) -> Option<Entry> {
    if let Some(n) = state.nodes.get(path) {
        return Some(Entry::Node(n.clone()));
    }
    if let Some((entry, _)) = state.tables.get(path) {
        return Some(Entry::Table(entry.clone()));
    }
    builtin(path).map(|n| Entry::Node(n.clone()))
}
