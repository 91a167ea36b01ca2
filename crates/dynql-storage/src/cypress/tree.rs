//! The tree as one transaction sees it: the committed nodes and tables, overlaid with the
//! changes of each of its master transactions from the topmost down (seed 004's branched
//! versions: a transaction reads its own version of a node, else its parent's, ..., else the
//! committed one). Without a transaction it is the committed tree.

use std::collections::BTreeSet;

use dynql_core::Yson;

use super::transactions::{Changes, Entry};
use super::{
    builtin, child_path, parent, prefix_of, system_children, Node, NodeKind, NodeView, ROOT,
};
use crate::error::{Error, Result};
use crate::static_table::{StagedRows, StaticChunk};
use crate::store::State;

/// The tree seen by a transaction (or none).
#[derive(Clone)]
pub struct Tree<'a> {
    pub(crate) state: &'a State,
    /// The changes of the transaction and its ancestors, the transaction's own first.
    overlays: Vec<&'a Changes>,
}

impl<'a> Tree<'a> {
    /// The committed tree.
    pub(crate) fn committed(state: &'a State) -> Tree<'a> {
        Tree {
            state,
            overlays: vec![],
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
        let mut overlays = Vec::new();
        for tx in state.master.ancestry(id)? {
            overlays.push(&tx.changes);
        }
        Ok(Tree { state, overlays })
    }

    /// What the overlays say of `path`: `Some(None)` removed, `Some(Some(e))` changed.
    fn overlaid(&self, path: &str) -> Option<Option<&'a Entry>> {
        self.overlays
            .iter()
            .find_map(|o| o.get(path))
            .map(Option::as_ref)
    }

    /// The transaction's own version of `path` (not its ancestors'): `Some(None)` removed.
    pub(crate) fn own_version(&self, path: &str) -> Option<Option<&'a Entry>> {
        self.overlays.first()?.get(path).map(Option::as_ref)
    }

    /// The node at `path`, if there is one.
    pub fn node(&self, path: &str) -> Option<NodeView<'a>> {
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
    fn paths_below(&self, path: &str) -> BTreeSet<&'a str> {
        let prefix = prefix_of(path);
        let mut paths: BTreeSet<&'a str> = self
            .state
            .nodes
            .range(prefix.clone()..)
            .take_while(|(k, _)| k.starts_with(&prefix))
            .map(|(k, _)| k.as_str())
            .collect();
        paths.extend(self.state.tables.paths_under(&prefix).map(String::as_str));
        for o in self.overlays.iter().rev() {
            for (k, _) in o
                .range(prefix.clone()..)
                .take_while(|(k, _)| k.starts_with(&prefix))
            {
                paths.insert(k.as_str());
            }
        }
        paths.retain(|p| !matches!(self.overlaid(p), Some(None)));
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
    pub fn resolve<'p>(&self, path: &'p str) -> Result<(&'p str, NodeView<'a>, Vec<&'p str>)> {
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

    /// The entry at `path` as a transaction's change records it.
    /// The rows of the static table at `path` as the tree sees them: its chunks in row
    /// order (a transaction's appends after the rows of the version it branched from).
    pub fn static_chunks(&self, path: &str) -> Vec<StaticChunk> {
        self.static_chunks_from(path, 0)
    }

    fn static_chunks_from(&self, path: &str, level: usize) -> Vec<StaticChunk> {
        for (i, overlay) in self.overlays.iter().enumerate().skip(level) {
            let table = match overlay.get(path) {
                None => continue,
                Some(Some(Entry::Table(t))) => t,
                Some(_) => return vec![],
            };
            match &table.staged_rows {
                None => continue,
                Some(StagedRows::Overwritten) => return table.static_chunks.clone(),
                Some(StagedRows::Appended(appended)) => {
                    let mut chunks = self.static_chunks_from(path, i + 1);
                    chunks.extend(appended.iter().cloned());
                    return chunks;
                }
            }
        }
        self.state
            .tables
            .get(path)
            .map(|(entry, _)| entry.static_chunks.clone())
            .unwrap_or_default()
    }

    /// The entry at `path` with a static table's rows resolved: what a snapshot or a copy
    /// of it holds (all its rows, nothing staged).
    pub(crate) fn resolved_entry(&self, path: &str) -> Option<Entry> {
        match self.entry(path)? {
            Entry::Table(mut t) => {
                t.static_chunks = self.static_chunks(path);
                t.staged_rows = None;
                Some(Entry::Table(t))
            }
            node => Some(node),
        }
    }

    pub(crate) fn entry(&self, path: &str) -> Option<Entry> {
        match self.node(path)? {
            NodeView::Node(n) => Some(Entry::Node(n.clone())),
            NodeView::Table(t) => Some(Entry::Table(t.clone())),
            NodeView::ImplicitMap => None,
        }
    }
}
