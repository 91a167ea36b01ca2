//! Node paths in log records, written relative to a parent (issue 38, design note 0010).
//!
//! In memory every node action names its node by full path. Written out that way, one
//! command touching a chain of nodes (`create map_node -r` of many levels, the removal or
//! copy of a deep subtree, the same inside a master transaction) repeats each ancestor's path
//! in every action below it, so the record grows with the square of the depth. In a record,
//! a node path may instead be `#<id>/<name>`: the child `name` of the node with id `id`, as
//! YPath addresses a node by id. The id must belong to a node whose path the same record
//! states (in either form), so a record decodes on its own, without the tree it applies to.
//!
//! [`relative`] writes a path so when its parent is such a node; [`resolve`] turns a decoded
//! record's paths back into full paths. Invariants:
//! * `resolve(relative(actions)) == actions` for every list of actions (a proptest checks it);
//! * an id is used as a parent only when every node action of the record that carries it
//!   names the same path (a move's id names two), so its path is unambiguous;
//! * a relative path is strictly longer than its parent's, so resolving always terminates.
//!
//! Records written before this have only full paths and decode unchanged: a stored full path
//! starts with `/`, never with `#`.

use std::borrow::Cow;
use std::collections::HashMap;

use crate::cypress::transactions::Change;
use crate::cypress::{child_path, parent};
use crate::log::Action;

/// The actions as a record writes them: node paths whose parent's path the record states
/// are written relative to that parent's id; other actions are borrowed unchanged.
pub(crate) fn relative(actions: &[Action]) -> Vec<Cow<'_, Action>> {
    let anchors = anchors(actions.iter().flat_map(node_paths));
    let shorten = |path: &str| shortened(&anchors, path);
    actions
        .iter()
        .map(|action| match action {
            Action::CreateNode { path, node } => match shorten(path) {
                Some(path) => Cow::Owned(Action::CreateNode {
                    path,
                    node: node.clone(),
                }),
                None => Cow::Borrowed(action),
            },
            Action::SetNode { path, node } => match shorten(path) {
                Some(path) => Cow::Owned(Action::SetNode {
                    path,
                    node: node.clone(),
                }),
                None => Cow::Borrowed(action),
            },
            Action::RemoveNode { path, node_id } => match shorten(path) {
                Some(path) => Cow::Owned(Action::RemoveNode {
                    path,
                    node_id: node_id.clone(),
                }),
                None => Cow::Borrowed(action),
            },
            Action::SetCustomAttribute {
                path,
                node_id,
                name,
                value,
            } => match shorten(path) {
                Some(path) => Cow::Owned(Action::SetCustomAttribute {
                    path,
                    node_id: node_id.clone(),
                    name: name.clone(),
                    value: value.clone(),
                }),
                None => Cow::Borrowed(action),
            },
            Action::TakeLock { lock } => match shorten(&lock.path) {
                Some(path) => Cow::Owned(Action::TakeLock {
                    lock: crate::cypress::locks::Lock {
                        path,
                        ..lock.clone()
                    },
                }),
                None => Cow::Borrowed(action),
            },
            Action::StageDeltas {
                transaction_id,
                changes,
            } if changes.iter().any(|(p, _)| shorten(p).is_some()) => {
                Cow::Owned(Action::StageDeltas {
                    transaction_id: transaction_id.clone(),
                    changes: changes
                        .iter()
                        .map(|(p, c)| (shorten(p).unwrap_or_else(|| p.clone()), c.clone()))
                        .collect(),
                })
            }
            _ => Cow::Borrowed(action),
        })
        .collect()
}

/// Path -> an id that names only that path among `entries` (path, id).
fn anchors<'a>(
    entries: impl Iterator<Item = (&'a str, Option<&'a str>)>,
) -> HashMap<&'a str, &'a str> {
    let mut ids: HashMap<&str, Option<&str>> = HashMap::new();
    for (path, id) in entries {
        // An id with a `/` (a lock's `implicit:PATH` on an implicit directory) cannot be
        // told from the name after it: never a parent.
        if let Some(id) = id.filter(|id| !id.contains('/')) {
            ids.entry(id)
                .and_modify(|p| {
                    if *p != Some(path) {
                        *p = None;
                    }
                })
                .or_insert(Some(path));
        }
    }
    let mut anchors = HashMap::new();
    for (id, path) in ids {
        if let Some(path) = path {
            anchors.entry(path).or_insert(id);
        }
    }
    anchors
}

/// `path` as `#<id>/<name>` when its parent has an anchor.
fn shortened(anchors: &HashMap<&str, &str>, path: &str) -> Option<String> {
    let parent = parent(path)?;
    let id = anchors.get(parent)?;
    let name = path.get(parent.len() + 1..).filter(|n| !n.contains('/'))?;
    Some(format!("#{id}/{name}"))
}

/// Paths an item names, each with the id of what is at the path when the item says it.
type PathsWithIds<'a> = Vec<(&'a str, Option<&'a str>)>;

/// Turns the relative node paths of a decoded record back into full paths.
///
/// # Errors
/// A path relative to an id no node action of the record names (the record is damaged, or
/// was written by a newer version).
pub(crate) fn resolve(actions: &mut [Action]) -> Result<(), String> {
    resolve_with(actions, node_paths, node_paths_mut)
}

/// [`resolve`] over any items that name paths (`paths`, with ids) and let them be rewritten
/// (`paths_mut`, in the same order).
fn resolve_with<T>(
    items: &mut [T],
    paths: for<'a> fn(&'a T) -> PathsWithIds<'a>,
    paths_mut: fn(&mut T) -> Vec<&mut String>,
) -> Result<(), String> {
    // Each pass resolves the paths whose parent's path is known; a chain of d levels takes
    // at most d passes, and every pass resolves at least one path or ends the loop.
    loop {
        let mut known: HashMap<String, String> = HashMap::new();
        let mut pending = 0usize;
        for (path, id) in items.iter().flat_map(paths) {
            match id {
                Some(id) if !path.starts_with('#') => {
                    known
                        .entry(id.to_string())
                        .or_insert_with(|| path.to_string());
                }
                _ if path.starts_with('#') => pending += 1,
                _ => {}
            }
        }
        if pending == 0 {
            return Ok(());
        }
        let mut resolved = 0usize;
        let mut unknown = None;
        for path in items.iter_mut().flat_map(paths_mut) {
            let Some((id, name)) = path.strip_prefix('#').and_then(|p| p.split_once('/')) else {
                continue;
            };
            match known.get(id) {
                Some(parent) => {
                    *path = child_path(parent, name);
                    resolved += 1;
                }
                None => unknown = Some(id.to_string()),
            }
        }
        if resolved == 0 {
            return Err(format!(
                "the record names a node by the id of its parent, #{}, which no node of the record has",
                unknown.unwrap_or_default()
            ));
        }
    }
}

/// Serde for the (path, id) lists a record's header and summaries keep of what it touched:
/// written with the same relative paths as the actions.
pub(crate) mod touched {
    use serde::{Deserialize, Deserializer, Serialize, Serializer};

    type Touched = Vec<(String, String)>;

    fn written(list: &[(String, String)]) -> Touched {
        let anchors = super::anchors(list.iter().map(|(p, id)| (p.as_str(), Some(id.as_str()))));
        list.iter()
            .map(|(p, id)| {
                (
                    super::shortened(&anchors, p).unwrap_or_else(|| p.clone()),
                    id.clone(),
                )
            })
            .collect()
    }

    fn read(mut list: Touched) -> Result<Touched, String> {
        super::resolve_with(
            &mut list,
            |(p, id)| vec![(p.as_str(), Some(id.as_str()))],
            |(p, _)| vec![p],
        )?;
        Ok(list)
    }

    pub(crate) fn serialize<S: Serializer>(list: &Touched, s: S) -> Result<S::Ok, S::Error> {
        written(list).serialize(s)
    }

    pub(crate) fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Touched, D::Error> {
        read(Touched::deserialize(d)?).map_err(serde::de::Error::custom)
    }

    /// The same for an optional list.
    pub(crate) mod option {
        use super::*;

        pub(crate) fn serialize<S: Serializer>(
            list: &Option<Touched>,
            s: S,
        ) -> Result<S::Ok, S::Error> {
            list.as_deref().map(written).serialize(s)
        }

        pub(crate) fn deserialize<'de, D: Deserializer<'de>>(
            d: D,
        ) -> Result<Option<Touched>, D::Error> {
            Option::<Touched>::deserialize(d)?
                .map(read)
                .transpose()
                .map_err(serde::de::Error::custom)
        }
    }
}

/// The node paths an action names, each with the id of the node (or table) at the path when
/// the action says it.
fn node_paths(action: &Action) -> PathsWithIds<'_> {
    match action {
        Action::CreateNode { path, node } | Action::SetNode { path, node } => {
            vec![(path, Some(&node.id))]
        }
        Action::RemoveNode { path, node_id } | Action::SetCustomAttribute { path, node_id, .. } => {
            vec![(path, Some(node_id))]
        }
        Action::TakeLock { lock } => vec![(&lock.path, Some(&lock.node_id))],
        Action::StageDeltas { changes, .. } => changes
            .iter()
            .map(|(path, change)| {
                let id = match change {
                    Change::Created(entry) => Some(entry.id()),
                    Change::Modified(delta) => Some(delta.id.as_str()),
                    Change::Removed => None,
                };
                (path.as_str(), id)
            })
            .collect(),
        _ => vec![],
    }
}

/// The node paths of an action, to rewrite.
fn node_paths_mut(action: &mut Action) -> Vec<&mut String> {
    match action {
        Action::CreateNode { path, .. }
        | Action::SetNode { path, .. }
        | Action::RemoveNode { path, .. }
        | Action::SetCustomAttribute { path, .. } => vec![path],
        Action::TakeLock { lock } => vec![&mut lock.path],
        Action::StageDeltas { changes, .. } => changes.iter_mut().map(|(p, _)| p).collect(),
        _ => vec![],
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use proptest::prelude::*;

    use super::*;
    use crate::cypress::transactions::{Entry, NodeDelta};
    use crate::cypress::{Node, NodeKind};

    fn node(id: &str) -> Node {
        Node {
            id: id.into(),
            kind: NodeKind::MapNode,
            attributes: BTreeMap::new(),
            creation_time: 1,
        }
    }

    fn create(path: &str, id: &str) -> Action {
        Action::CreateNode {
            path: path.into(),
            node: node(id),
        }
    }

    fn remove(path: &str, id: &str) -> Action {
        Action::RemoveNode {
            path: path.into(),
            node_id: id.into(),
        }
    }

    fn written(actions: &[Action]) -> Vec<Action> {
        relative(actions).into_iter().map(Cow::into_owned).collect()
    }

    fn paths(actions: &[Action]) -> Vec<String> {
        actions
            .iter()
            .flat_map(node_paths)
            .map(|(p, _)| p.to_string())
            .collect()
    }

    fn round_trip(actions: &[Action]) -> Vec<Action> {
        let json = serde_json::to_string(&relative(actions)).unwrap();
        let mut decoded: Vec<Action> = serde_json::from_str(&json).unwrap();
        resolve(&mut decoded).unwrap();
        decoded
    }

    #[test]
    fn a_chain_of_creations_names_only_the_first_path_in_full() {
        let actions = vec![
            create("//a", "1"),
            create("//a/b", "2"),
            create("//a/b/c", "3"),
        ];
        assert_eq!(paths(&written(&actions)), ["//a", "#1/b", "#2/c"]);
        assert_eq!(paths(&round_trip(&actions)), paths(&actions));
    }

    #[test]
    fn removals_children_first_resolve_against_a_later_parent() {
        let actions = vec![
            remove("//a/b/c", "3"),
            remove("//a/b", "2"),
            remove("//a", "1"),
        ];
        assert_eq!(paths(&written(&actions)), ["#2/c", "#1/b", "//a"]);
        assert_eq!(paths(&round_trip(&actions)), paths(&actions));
    }

    #[test]
    fn an_id_naming_two_paths_is_never_a_parent() {
        // A move: the node keeps its id at its new path.
        let actions = vec![remove("//a", "1"), create("//b", "1"), create("//b/c", "2")];
        assert_eq!(paths(&written(&actions)), ["//a", "//b", "//b/c"]);
    }

    #[test]
    fn staged_changes_are_relative_too() {
        let actions = vec![Action::StageDeltas {
            transaction_id: "t".into(),
            changes: vec![
                ("//a".into(), Change::Created(Entry::Node(node("1")))),
                ("//a/b".into(), Change::Created(Entry::Node(node("2")))),
                ("//a/b/c".into(), Change::Removed),
                (
                    "//a/d".into(),
                    Change::Modified(NodeDelta {
                        id: "4".into(),
                        ..NodeDelta::default()
                    }),
                ),
            ],
        }];
        assert_eq!(paths(&written(&actions)), ["//a", "#1/b", "#2/c", "#1/d"]);
        assert_eq!(paths(&round_trip(&actions)), paths(&actions));
    }

    #[test]
    fn an_id_holding_a_slash_is_never_a_parent() {
        // A lock on an implicit directory names it `implicit:PATH`.
        let lock = |path: &str, node_id: &str| Action::SetCustomAttribute {
            path: path.into(),
            node_id: node_id.into(),
            name: "a".into(),
            value: None,
        };
        let actions = vec![lock("//a", "implicit://a"), create("//a/b", "2")];
        assert_eq!(paths(&written(&actions)), ["//a", "//a/b"]);
        assert_eq!(paths(&round_trip(&actions)), paths(&actions));
    }

    #[test]
    fn an_unknown_parent_id_is_a_damaged_record() {
        let mut actions = vec![create("#9/b", "2")];
        let err = resolve(&mut actions).unwrap_err();
        assert!(err.contains("#9"), "{err}");
    }

    /// A random tree's nodes: each one's parent is an earlier one (or the root).
    fn tree_actions() -> impl Strategy<Value = Vec<Action>> {
        prop::collection::vec((any::<prop::sample::Index>(), 0..4u8, any::<bool>()), 1..40)
            .prop_map(|specs| {
                let mut paths: Vec<String> = Vec::new();
                let mut actions = Vec::new();
                for (i, (parent, kind, reuse_id)) in specs.into_iter().enumerate() {
                    let parent = if paths.is_empty() || i % 5 == 0 {
                        "/".to_string()
                    } else {
                        paths[parent.index(paths.len())].clone()
                    };
                    let path = child_path(&parent, &format!("n{i}"));
                    // Some ids repeat (a move) to exercise ambiguous ids.
                    let id = if reuse_id && i > 0 {
                        (i - 1).to_string()
                    } else {
                        i.to_string()
                    };
                    actions.push(match kind {
                        0 => create(&path, &id),
                        1 => remove(&path, &id),
                        2 => Action::SetCustomAttribute {
                            path: path.clone(),
                            node_id: id,
                            name: "a".into(),
                            value: Some("1".into()),
                        },
                        _ => Action::StageDeltas {
                            transaction_id: "t".into(),
                            changes: vec![(path.clone(), Change::Created(Entry::Node(node(&id))))],
                        },
                    });
                    paths.push(path);
                }
                actions
            })
    }

    proptest! {
        #[test]
        fn resolving_what_was_written_gives_the_actions_back(
            actions in tree_actions(),
            reversed in any::<bool>(),
        ) {
            let mut actions = actions;
            if reversed {
                actions.reverse();
            }
            prop_assert_eq!(paths(&round_trip(&actions)), paths(&actions));
            // Nothing else changes.
            let json = |a: &[Action]| serde_json::to_string(a).unwrap();
            prop_assert_eq!(json(&round_trip(&actions)), json(&actions));
        }
    }
}
