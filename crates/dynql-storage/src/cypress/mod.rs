//! Cypress: the tree of nodes the store's tables live in (design note 0010).
//!
//! A path names a node: the root `/`, a `map_node` (a directory), a `document` (one YSON
//! value, whose inside `get` and `set` reach by path), a scalar or list node made by `set`
//! (`int64_node`, `string_node`, `list_node`, ...), or a table. Every node has attributes:
//! its system ones (`id`, `type`, ...) and custom ones any `set PATH/@NAME` adds.
//!
//! The tree is two maps of the replayed [`State`]: the tables by path (`state.tables`) and
//! every other node by path (`state.nodes`). Some map nodes are in neither and exist all the
//! same: the root, the builtin directories [`BUILTIN_DIRECTORIES`], and, in stores written
//! before directories were nodes, a directory a table's path implies. Such an *implicit*
//! directory becomes a node of its own when something is recorded on it (an attribute).
//!
//! Invariants (checked by [`plan`] before a change is logged, so that replay applies it):
//! * the parent of every node is a map node (explicit or implicit): nothing lives under a
//!   table, a document or a scalar;
//! * a path holds at most one node: a table path is never in `nodes` and vice versa;
//! * a node keeps its id while it lives: `move` keeps it, `copy` makes a new one.

pub(crate) mod change;
pub mod delta;
pub mod locks;
mod master_api;
pub mod plan;
mod store_api;
pub mod transactions;
pub mod tree;

use std::collections::{BTreeMap, BTreeSet};

use serde::{Deserialize, Serialize};

use dynql_core::Yson;

use crate::error::Result;
use crate::kernel::catalog::TableEntry;
use crate::state::State;
pub use tree::Tree;

pub use master_api::{LockOptions, Object, TakenLock};
pub use store_api::NodeInfo;

/// Directories every store has (YT's `//tmp`, `//home`, `//sys` and the system's
/// directories of transactions and locks).
pub const BUILTIN_DIRECTORIES: &[&str] = &[
    "//tmp",
    "//home",
    "//sys",
    "//sys/transactions",
    "//sys/topmost_transactions",
    "//sys/locks",
];

/// The root path.
pub const ROOT: &str = "/";

/// Attributes the system keeps on every node: `set` refuses them.
pub const SYSTEM_ATTRIBUTES: &[&str] = &[
    "id",
    "type",
    "path",
    "key",
    "parent_id",
    "creation_time",
    "modification_time",
    "child_count",
    "value",
    "revision",
    "locks",
    "lock_count",
    "lock_mode",
];

/// A node that is not a table, as the log and checkpoints record it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Node {
    pub id: String,
    pub kind: NodeKind,
    /// Custom attributes: name to YSON text.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub attributes: BTreeMap<String, String>,
    /// Unix milliseconds.
    pub creation_time: u64,
}

/// What a node is.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum NodeKind {
    /// A directory: its children are the nodes one level below its path.
    MapNode,
    /// `create document`: one YSON value (text), changed in place by `set PATH/inner/key`.
    Document { value: String },
    /// A scalar or list node that `set` made for a value (`int64_node`, `list_node`, ...);
    /// `set` replaces it whole.
    Scalar { value: String },
}

impl Node {
    /// YT's type name of the node.
    pub fn type_name(&self) -> &'static str {
        match &self.kind {
            NodeKind::MapNode => "map_node",
            NodeKind::Document { .. } => "document",
            NodeKind::Scalar { value } => scalar_type(&parse_value(value)),
        }
    }

    /// The node with a new value, of the same kind (a document or a scalar node).
    pub fn with_value(&self, value: &Yson) -> Node {
        let value = plan::text(value);
        let kind = match self.kind {
            NodeKind::Document { .. } => NodeKind::Document { value },
            _ => NodeKind::Scalar { value },
        };
        Node {
            kind,
            ..self.clone()
        }
    }

    /// The value of a document or scalar node.
    pub fn value(&self) -> Option<Yson> {
        match &self.kind {
            NodeKind::MapNode => None,
            NodeKind::Document { value } | NodeKind::Scalar { value } => Some(parse_value(value)),
        }
    }
}

/// The node type `set` makes for a value that is not a map.
pub(crate) fn scalar_type(value: &Yson) -> &'static str {
    match value {
        Yson::Int64(_) => "int64_node",
        Yson::Uint64(_) => "uint64_node",
        Yson::Double(_) => "double_node",
        Yson::Boolean(_) => "boolean_node",
        Yson::String(_) => "string_node",
        Yson::List(_) => "list_node",
        Yson::Map(_) => "map_node",
        Yson::Entity => "entity",
        Yson::Attributed { value, .. } => scalar_type(value),
    }
}

/// A stored YSON value; the log holds only text the store wrote, so it parses (an entity
/// stands in if it ever does not).
pub fn parse_value(text: &str) -> Yson {
    dynql_core::yson::parse(text.as_bytes()).unwrap_or(Yson::Entity)
}

/// A node as a path resolves to it.
#[derive(Debug, Clone, Copy)]
pub enum NodeView<'a> {
    /// The root, a builtin directory, or a directory the paths below it imply.
    ImplicitMap,
    /// A node of `state.nodes`.
    Node(&'a Node),
    Table(&'a TableEntry),
}

impl NodeView<'_> {
    pub fn type_name(&self) -> &'static str {
        match self {
            NodeView::ImplicitMap => "map_node",
            NodeView::Node(n) => n.type_name(),
            NodeView::Table(_) => "table",
        }
    }

    /// Whether children may live under it.
    pub fn is_map(&self) -> bool {
        self.type_name() == "map_node"
    }
}

/// The parent path of `path` (`/` for a top-level node), `None` for the root.
pub fn parent(path: &str) -> Option<&str> {
    if path == ROOT {
        return None;
    }
    let cut = path.rfind('/')?;
    Some(if cut <= 1 { ROOT } else { &path[..cut] })
}

/// `path/name` (`//name` under the root).
pub fn child_path(path: &str, name: &str) -> String {
    if path == ROOT {
        format!("//{name}")
    } else {
        format!("{path}/{name}")
    }
}

/// The prefix every path under `path` starts with.
pub(crate) fn prefix_of(path: &str) -> String {
    if path == ROOT {
        "//".to_string()
    } else {
        format!("{path}/")
    }
}

/// The root written as YT users do: `/`, or `//` which some tools print.
pub fn normalize(path: &str) -> &str {
    if path == "//" {
        ROOT
    } else {
        path
    }
}

/// Checks a node path: the root, or a valid absolute path ([`crate::validate_path`]).
pub fn validate(path: &str) -> Result<()> {
    if path == ROOT {
        return Ok(());
    }
    crate::validate_path(path)
}

/// Builtin map nodes: the root and [`BUILTIN_DIRECTORIES`], with fixed ids. A builtin that
/// carries attributes is in `state.nodes` like any node (with the same id).
pub fn builtin(path: &str) -> Option<&'static Node> {
    static NODES: std::sync::LazyLock<BTreeMap<&'static str, Node>> =
        std::sync::LazyLock::new(|| {
            std::iter::once(ROOT)
                .chain(BUILTIN_DIRECTORIES.iter().copied())
                .enumerate()
                .map(|(i, p)| {
                    let node = Node {
                        id: format!("0-0-0-{i:x}"),
                        kind: NodeKind::MapNode,
                        attributes: BTreeMap::new(),
                        creation_time: 0,
                    };
                    (p, node)
                })
                .collect()
        });
    NODES.get(path)
}

/// The directories of the system's objects: their children are ids, and nothing can be
/// created in them.
pub const SYSTEM_DIRECTORIES: &[&str] = &[
    "//sys/transactions",
    "//sys/topmost_transactions",
    "//sys/locks",
];

/// The children of a system directory (ids), `None` for other paths. Every transaction
/// of `state` is listed: a reader reaps the expired ones first
/// ([`change::reap_expired`], with the store's clock), so a tree never reads the clock.
pub(crate) fn system_children(state: &State, path: &str) -> Option<BTreeSet<String>> {
    let master = &state.master;
    Some(match path {
        "//sys/transactions" => master.transactions.keys().cloned().collect(),
        "//sys/topmost_transactions" => master
            .transactions
            .values()
            .filter(|t| t.parent_id.is_none())
            .map(|t| t.id.clone())
            .collect(),
        "//sys/locks" => master.locks.keys().cloned().collect(),
        _ => return None,
    })
}

/// A time as YT prints it (`2026-11-26T22:19:34.123000Z`), from Unix milliseconds.
pub fn iso8601(unix_ms: u64) -> String {
    let days = (unix_ms / 86_400_000) as i64;
    let ms_of_day = unix_ms % 86_400_000;
    // Civil date from days since 1970-01-01 (H. Hinnant's algorithm).
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    format!(
        "{year:04}-{month:02}-{day:02}T{:02}:{:02}:{:02}.{:03}000Z",
        ms_of_day / 3_600_000,
        ms_of_day / 60_000 % 60,
        ms_of_day / 1000 % 60,
        ms_of_day % 1000
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn times_print_as_yt_prints_them() {
        assert_eq!(iso8601(0), "1970-01-01T00:00:00.000000Z");
        assert_eq!(iso8601(951_782_400_000), "2000-02-29T00:00:00.000000Z");
        assert_eq!(iso8601(1_795_731_574_123), "2026-11-26T22:19:34.123000Z");
    }

    #[test]
    fn parents_and_children_of_paths() {
        assert_eq!(parent("/"), None);
        assert_eq!(parent("//a"), Some("/"));
        assert_eq!(parent("//a/b"), Some("//a"));
        assert_eq!(child_path("/", "a"), "//a");
        assert_eq!(child_path("//a", "b"), "//a/b");
        assert_eq!(normalize("//"), "/");
    }
}
