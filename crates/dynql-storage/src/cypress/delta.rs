//! What a master transaction changed at one path (design note 0010, "Versions"): the node
//! removed, a node it put there (whole), or the keys it changed of the node below: its value,
//! custom attributes one by one (a removal is a tombstone, the node below may still hold the
//! key) and a static table's rows. Children are paths of their own, so a map node's children
//! change at their paths, never in the map node's change.
//!
//! One merge, [`Change::then`], serves staging (an operation's change onto the transaction's
//! own), replay, and a nested commit (the child's change onto the parent's). Reads compose
//! the committed node with the chain's changes ([`Change::version`]); a topmost commit
//! applies each key to the committed node ([`super::transactions::apply_changes`]). So two
//! transactions changing different keys of one node (shared locks with different keys) both
//! land, whatever the order of their commits.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use super::transactions::Entry;
use super::{Node, NodeKind};
use crate::kernel::catalog::TableEntry;
use crate::kernel::static_rows::{RowsDelta, StagedRows, StaticChunk};

/// What a transaction changed at one path.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Change {
    /// Nothing is at the path: the node below was removed (or one made here removed again).
    Removed,
    /// A node or table the transaction made, copied or moved here: its whole version. Nobody
    /// else can change it while the transaction lives (an exclusive lock, or a path only the
    /// transaction sees).
    Created(Entry),
    /// Keys of the node below (the one the parent or the committed tree has) changed.
    Modified(NodeDelta),
}

/// The keys a transaction changed of a node it did not make.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct NodeDelta {
    /// The node's id: a delta applies to this node only.
    pub id: String,
    /// A new value (`set` of a document or scalar node).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub value: Option<NodeKind>,
    /// Custom attributes set (`Some`, YSON text) or removed (`None`).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub attributes: BTreeMap<String, Option<String>>,
    /// A static table's rows written over or appended to.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rows: Option<RowsDelta>,
}

impl Change {
    /// The id of the node the change leaves at its path (`None`: removed).
    pub fn id(&self) -> Option<&str> {
        match self {
            Change::Removed => None,
            Change::Created(e) => Some(e.id()),
            Change::Modified(d) => Some(&d.id),
        }
    }

    /// `lower` (the change already at `path`, if any) followed by `upper`.
    ///
    /// # Errors
    /// `upper` changes a node `lower` removed or replaced by another (locks make this
    /// unreachable; a change or commit that would do it is refused).
    pub(crate) fn then(path: &str, lower: Option<Change>, upper: Change) -> Result<Change, String> {
        let upper = match upper {
            Change::Modified(u) => u,
            removed_or_created => return Ok(removed_or_created),
        };
        match lower {
            None => Ok(Change::Modified(upper)),
            Some(Change::Removed) => Err(format!("{path} (node {}) was removed", upper.id)),
            Some(Change::Created(mut entry)) => {
                upper.apply(&mut entry, path, false)?;
                Ok(Change::Created(entry))
            }
            Some(Change::Modified(lower)) if lower.id != upper.id => Err(format!(
                "{path} (node {}) was replaced by node {}",
                upper.id, lower.id
            )),
            Some(Change::Modified(lower)) => Ok(Change::Modified(lower.then(upper))),
        }
    }

    /// The version of `path` a reader sees: the change over `below` (the version under it).
    /// A delta that does not apply (no node below, or another one: locks make this
    /// unreachable) leaves `below` as it is.
    pub(crate) fn version(&self, path: &str, below: Option<Entry>) -> Option<Entry> {
        match self {
            Change::Removed => None,
            Change::Created(entry) => Some(entry.clone()),
            Change::Modified(delta) => below.map(|mut entry| {
                // `apply` checks before it changes anything: on an error `entry` is `below`.
                let _ = delta.apply(&mut entry, path, false);
                entry
            }),
        }
    }

    /// The change a whole version logged before per-key changes stands for (`below`: the
    /// version under it, as the parent sees it now): the keys in which it differs from
    /// `below`, or the whole version when it is another node.
    pub(crate) fn from_legacy(below: Option<&Entry>, version: Option<Entry>) -> Change {
        let Some(version) = version else {
            return Change::Removed;
        };
        match (below, version) {
            (Some(Entry::Node(b)), Entry::Node(v)) if b.id == v.id => Change::Modified(NodeDelta {
                value: (b.kind != v.kind).then(|| v.kind.clone()),
                attributes: attribute_changes(&b.attributes, &v.attributes),
                ..NodeDelta::new(&v.id)
            }),
            (Some(Entry::Table(b)), Entry::Table(v)) if b.id == v.id => {
                let rows = match &v.staged_rows {
                    None => None,
                    Some(StagedRows::Overwritten) => {
                        Some(RowsDelta::Overwritten(v.static_chunks.clone()))
                    }
                    Some(StagedRows::Appended(chunks)) => Some(RowsDelta::Appended(chunks.clone())),
                };
                Change::Modified(NodeDelta {
                    attributes: attribute_changes(&b.custom_attributes, &v.custom_attributes),
                    rows,
                    ..NodeDelta::new(&v.id)
                })
            }
            (_, Entry::Table(mut v)) => {
                // All its rows in its chunk list, as every entry made now has them.
                if let Some(StagedRows::Appended(chunks)) = v.staged_rows.take() {
                    v.static_chunks.extend(chunks);
                }
                Change::Created(Entry::Table(v))
            }
            (_, node) => Change::Created(node),
        }
    }

    /// The chunks the change names (a static table's rows).
    pub(crate) fn static_chunks(&self) -> Box<dyn Iterator<Item = &StaticChunk> + '_> {
        match self {
            Change::Created(Entry::Table(t)) => Box::new(crate::static_table::entry_chunks(t)),
            Change::Modified(NodeDelta {
                rows: Some(rows), ..
            }) => Box::new(rows.chunks().iter()),
            _ => Box::new(std::iter::empty()),
        }
    }

    /// The chunk files the change names (a static table's rows).
    pub(crate) fn chunk_paths(&self) -> impl Iterator<Item = &str> {
        self.static_chunks().map(|c| c.path.as_str())
    }
}

/// The attribute changes that turn `below` into `version`.
fn attribute_changes(
    below: &BTreeMap<String, String>,
    version: &BTreeMap<String, String>,
) -> BTreeMap<String, Option<String>> {
    let mut out: BTreeMap<String, Option<String>> = version
        .iter()
        .filter(|(k, v)| below.get(*k) != Some(*v))
        .map(|(k, v)| (k.clone(), Some(v.clone())))
        .collect();
    for k in below.keys().filter(|k| !version.contains_key(*k)) {
        out.insert(k.clone(), None);
    }
    out
}

impl NodeDelta {
    /// A delta of node `id` that changes nothing yet.
    pub(crate) fn new(id: &str) -> NodeDelta {
        NodeDelta {
            id: id.into(),
            ..NodeDelta::default()
        }
    }

    /// `self` followed by `upper` (of the same node): the newer value, the attribute changes
    /// of both (the newer one of a key wins, a removal stays a tombstone), the rows of both.
    fn then(mut self, upper: NodeDelta) -> NodeDelta {
        self.value = upper.value.or(self.value);
        self.attributes.extend(upper.attributes);
        self.rows = match (self.rows, upper.rows) {
            (Some(lower), Some(upper)) => Some(lower.then(upper)),
            (lower, upper) => upper.or(lower),
        };
        self
    }

    /// Applies the delta to `entry`, the node at `path` it changes. With `check` (a commit),
    /// appended rows must follow the rows there. Everything is checked before anything
    /// changes, so on an error `entry` is as it was.
    ///
    /// # Errors
    /// `entry` is another node; a value for a table or a map node; rows for a node that is
    /// not a table; appended rows that do not follow (with `check`).
    pub(crate) fn apply(&self, entry: &mut Entry, path: &str, check: bool) -> Result<(), String> {
        match entry {
            Entry::Node(node) => self.apply_to_node(node, path),
            Entry::Table(table) => self.apply_to_table(table, path, check),
        }
    }

    fn check_id(&self, id: &str, path: &str) -> Result<(), String> {
        match id == self.id {
            true => Ok(()),
            false => Err(format!(
                "{path} is node {id}, not node {} the change is of",
                self.id
            )),
        }
    }

    /// Applies the delta to the node at `path` that is not a table (see [`NodeDelta::apply`]).
    pub(crate) fn apply_to_node(&self, node: &mut Node, path: &str) -> Result<(), String> {
        self.check_id(&node.id, path)?;
        if self.rows.is_some() {
            return Err(format!("{path} is not a table: it has no rows"));
        }
        if let Some(kind) = &self.value {
            if node.kind == NodeKind::MapNode || *kind == NodeKind::MapNode {
                return Err(format!("{path} is a map node: its value is its children"));
            }
            node.kind = kind.clone();
        }
        apply_attributes(&mut node.attributes, &self.attributes);
        Ok(())
    }

    /// Applies the delta to the entry of the table at `path` (see [`NodeDelta::apply`]).
    pub(crate) fn apply_to_table(
        &self,
        table: &mut TableEntry,
        path: &str,
        check: bool,
    ) -> Result<(), String> {
        self.check_id(&table.id, path)?;
        if self.value.is_some() {
            return Err(format!("{path} is a table: it has no value"));
        }
        if let Some(rows) = &self.rows {
            rows.apply(table, path, check)?;
        }
        apply_attributes(&mut table.custom_attributes, &self.attributes);
        Ok(())
    }
}

fn apply_attributes(to: &mut BTreeMap<String, String>, changes: &BTreeMap<String, Option<String>>) {
    for (name, value) in changes {
        match value {
            Some(v) => to.insert(name.clone(), v.clone()),
            None => to.remove(name),
        };
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn node(id: &str, attributes: &[(&str, &str)]) -> Entry {
        Entry::Node(Node {
            id: id.into(),
            kind: NodeKind::Scalar { value: "1".into() },
            attributes: attributes
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect(),
            creation_time: 0,
        })
    }

    fn attribute(id: &str, name: &str, value: Option<&str>) -> Change {
        Change::Modified(NodeDelta {
            attributes: [(name.to_string(), value.map(str::to_string))].into(),
            ..NodeDelta::new(id)
        })
    }

    fn attributes(entry: Option<Entry>) -> Vec<(String, String)> {
        match entry {
            Some(Entry::Node(n)) => n.attributes.into_iter().collect(),
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn deltas_of_one_node_combine_key_by_key_and_keep_tombstones() {
        let p = attribute("n", "p", Some("1"));
        let merged = Change::then("//n", Some(p), attribute("n", "q", None)).unwrap();
        let below = node("n", &[("q", "0"), ("r", "2")]);
        let version = merged.version("//n", Some(below));
        let expected = [("p", "1"), ("r", "2")].map(|(k, v)| (k.to_string(), v.to_string()));
        assert_eq!(attributes(version), expected);
        // A value change carries no attributes: those below stay.
        let value = Change::Modified(NodeDelta {
            value: Some(NodeKind::Scalar { value: "7".into() }),
            ..NodeDelta::new("n")
        });
        let merged = Change::then("//n", Some(merged), value).unwrap();
        let Some(Entry::Node(n)) = merged.version("//n", Some(node("n", &[("r", "2")]))) else {
            panic!("a node")
        };
        assert_eq!(n.kind, NodeKind::Scalar { value: "7".into() });
        assert_eq!(n.attributes.len(), 2);
    }

    #[test]
    fn a_delta_applies_to_a_created_node_and_never_to_a_removed_or_other_one() {
        let created = Change::Created(node("n", &[]));
        let merged = Change::then("//n", Some(created), attribute("n", "p", Some("1"))).unwrap();
        assert!(matches!(&merged, Change::Created(_)));
        assert_eq!(attributes(merged.version("//n", None)).len(), 1);
        let error = Change::then("//n", Some(Change::Removed), attribute("n", "p", None));
        assert!(error.unwrap_err().contains("was removed"));
        let other = attribute("m", "p", Some("1"));
        let error = Change::then("//n", Some(other), attribute("n", "p", None));
        assert!(error.unwrap_err().contains("replaced"));
        let error = Change::then(
            "//n",
            Some(Change::Created(node("m", &[]))),
            attribute("n", "p", None),
        );
        assert!(error.is_err());
        // A read of a delta whose node is not below shows what is below.
        let version = attribute("n", "p", Some("1")).version("//n", Some(node("m", &[])));
        assert!(attributes(version).is_empty());
        // Anything over a delta replaces it.
        let removed = Change::then("//n", Some(attribute("n", "p", None)), Change::Removed);
        assert!(matches!(removed, Ok(Change::Removed)));
    }
}
