//! The tree operations of a [`Store`]: each plans its change ([`super::plan`]) inside the
//! commit loop, so it is checked against the state it is logged after.

use std::collections::BTreeMap;

use dynql_core::Yson;

use super::{normalize, plan, Node, NodeKind, NodeView, Tree};
use crate::error::{Error, Result};
use crate::kernel::catalog::TableEntry;
use crate::store::Store;

/// A node as [`Store::node`] describes it.
#[derive(Debug, Clone)]
pub enum NodeInfo {
    /// The root, a builtin directory, or a directory implied by the paths below it.
    ImplicitMap,
    Node(Node),
    Table(TableEntry),
}

impl NodeInfo {
    /// YT's type name (`map_node`, `document`, `table`, `int64_node`, ...).
    pub fn type_name(&self) -> &'static str {
        match self {
            NodeInfo::ImplicitMap => "map_node",
            NodeInfo::Node(n) => n.type_name(),
            NodeInfo::Table(_) => "table",
        }
    }

    /// The custom attributes (name to YSON text).
    pub fn custom_attributes(&self) -> BTreeMap<String, String> {
        match self {
            NodeInfo::ImplicitMap => BTreeMap::new(),
            NodeInfo::Node(n) => n.attributes.clone(),
            NodeInfo::Table(t) => t.custom_attributes.clone(),
        }
    }
}

impl Store {
    /// The node at `path` (`/` is the root) as transaction `tx` (or none) sees it, `None` if
    /// there is none. A path inside a document is not a node: [`Store::get_node`] reads it.
    pub async fn node_in(&self, path: &str, tx: Option<&str>) -> Result<Option<NodeInfo>> {
        let state = self.refresh().await?;
        let (state, _) = super::change::reap_expired(&state, self.fresh.now_ms())?;
        let tree = Tree::of(&state, tx)?;
        Ok(tree.node(normalize(path)).map(|view| match view {
            NodeView::ImplicitMap => NodeInfo::ImplicitMap,
            NodeView::Node(n) => NodeInfo::Node(n.clone()),
            NodeView::Table(t) => NodeInfo::Table(t.clone()),
        }))
    }

    /// [`Store::node_in`] outside transactions.
    pub async fn node(&self, path: &str) -> Result<Option<NodeInfo>> {
        self.node_in(path, None).await
    }

    /// Runs `read` on the tree `tx` sees (checking that it is live).
    pub(crate) async fn read_tree<T>(
        &self,
        tx: Option<&str>,
        read: impl FnOnce(&Tree) -> Result<T>,
    ) -> Result<T> {
        let state = self.refresh().await?;
        let (state, _) = super::change::reap_expired(&state, self.fresh.now_ms())?;
        if let Some(id) = tx {
            if !state.master.transactions.contains_key(id) {
                return Err(Error::NoSuchTransaction { id: id.into() });
            }
        }
        read(&Tree::of(&state, tx)?)
    }

    /// Whether `path` names a node or a value inside a document (`yt exists`).
    pub async fn node_exists(&self, path: &str, tx: Option<&str>) -> Result<bool> {
        let path = normalize(path);
        super::validate(path)?;
        self.read_tree(tx, |tree| Ok(tree.exists(path))).await
    }

    /// The value `yt get PATH` prints: a map node is the map of its children's values, a
    /// table `#`, a document or scalar node its value; a path inside a document its part.
    ///
    /// # Errors
    /// [`Error::NoSuchNode`].
    pub async fn get_node(&self, path: &str, tx: Option<&str>) -> Result<Yson> {
        let path = normalize(path);
        super::validate(path)?;
        self.read_tree(tx, |tree| tree.value(path)).await
    }

    /// The names of the children of a map node (or the keys of a map inside a document).
    ///
    /// # Errors
    /// No such node; a node that is not a map.
    pub async fn list_node(&self, path: &str, tx: Option<&str>) -> Result<Vec<String>> {
        let path = normalize(path);
        super::validate(path)?;
        self.read_tree(tx, |tree| {
            let (_, view, _) = tree.resolve(path)?;
            if view.is_map() {
                return Ok(tree.children(path).into_iter().collect());
            }
            match tree.value(path)? {
                Yson::Map(entries) => Ok(entries
                    .into_iter()
                    .map(|(k, _)| String::from_utf8_lossy(&k).into_owned())
                    .collect()),
                _ => Err(Error::Invalid(format!(
                    "Cannot list {path}: it is a {}, not a map_node",
                    view.type_name()
                ))),
            }
        })
        .await
    }

    /// Creates a `map_node` or a `document` (`yt create TYPE PATH`), in master transaction
    /// `tx` or outside: a missing parent is created with `recursive` and an error without;
    /// with `ignore_existing` a node of the same type already there is left as it is.
    ///
    /// # Errors
    /// A bad path; a node already there; a missing parent; a parent that is not a map node;
    /// a lock conflict.
    pub async fn create_node(
        &self,
        path: &str,
        kind: NodeKind,
        attributes: BTreeMap<String, String>,
        recursive: bool,
        ignore_existing: bool,
        tx: Option<&str>,
    ) -> Result<()> {
        self.change_tree(tx, |tree| {
            plan::create(
                tree,
                path,
                &kind,
                &attributes,
                recursive,
                ignore_existing,
                &self.fresh,
            )
        })
        .await
    }

    /// `yt set PATH VALUE` (see [`plan::set`]).
    pub async fn set_node(
        &self,
        path: &str,
        value: &Yson,
        recursive: bool,
        tx: Option<&str>,
    ) -> Result<()> {
        let path = normalize(path);
        self.change_tree(tx, |tree| {
            plan::set(tree, path, value, recursive, &self.fresh)
        })
        .await
    }

    /// `yt remove PATH` (see [`plan::remove`]).
    pub async fn remove_node(
        &self,
        path: &str,
        recursive: bool,
        force: bool,
        tx: Option<&str>,
    ) -> Result<()> {
        let path = normalize(path);
        self.change_tree(tx, |tree| plan::remove(tree, path, recursive, force))
            .await
    }

    /// `yt copy` (`keep_source`) or `yt move` of a node with everything below it.
    #[allow(clippy::too_many_arguments)]
    pub async fn copy_node(
        &self,
        source: &str,
        destination: &str,
        keep_source: bool,
        recursive: bool,
        force: bool,
        tx: Option<&str>,
    ) -> Result<()> {
        let source = normalize(source);
        self.change_tree(tx, |tree| {
            plan::copy(
                tree,
                source,
                destination,
                keep_source,
                recursive,
                force,
                &self.fresh,
            )
        })
        .await
    }

    /// Sets (`Some`) or removes (`None`) a custom attribute of any node, tables included
    /// (`yt set PATH/@NAME`); `name` may reach inside the value (`a/b`).
    pub async fn set_custom_attribute(
        &self,
        path: &str,
        name: &str,
        value: Option<&Yson>,
        tx: Option<&str>,
    ) -> Result<()> {
        let path = normalize(path);
        self.change_tree(tx, |tree| {
            plan::set_attribute(tree, path, name, value, &self.fresh)
        })
        .await
    }
}
