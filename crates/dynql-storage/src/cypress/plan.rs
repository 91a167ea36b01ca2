//! Planning changes to the tree: each function checks one change against a replayed state
//! and returns the log actions that make it, or why it cannot be made. They are pure (state
//! in, actions out), so the commit loop reruns them against the state it appends to, and a
//! change that raced another one is refused instead of logged.

use std::collections::BTreeMap;

use dynql_core::Yson;

use super::tree::Tree;
use super::{child_path, parent, validate, Node, NodeKind, NodeView, ROOT};
use crate::clock::Fresh;
use crate::error::{Error, Result};
use crate::log::Action;

fn invalid<T>(message: String) -> Result<T> {
    Err(Error::Invalid(message))
}

/// A new node of `kind` with custom `attributes`, its id and creation time from `fresh`.
pub fn new_node(kind: NodeKind, attributes: BTreeMap<String, String>, fresh: &Fresh) -> Node {
    Node {
        id: fresh.id(),
        kind,
        attributes,
        creation_time: fresh.now_ms(),
    }
}

/// The actions that create the missing parents of `path` (with `recursive`), after checking
/// that its nearest existing ancestor is a map node.
///
/// # Errors
/// A missing parent without `recursive`; an ancestor that is not a map node.
pub(crate) fn parents(
    tree: &Tree,
    path: &str,
    recursive: bool,
    fresh: &Fresh,
) -> Result<Vec<Action>> {
    let mut missing = Vec::new();
    let mut at = parent(path).unwrap_or(ROOT);
    if super::SYSTEM_DIRECTORIES.contains(&at) {
        return invalid(format!(
            "Cannot create {path}: {at} lists the system's objects, it holds no nodes"
        ));
    }
    loop {
        match tree.node(at) {
            Some(view) if view.is_map() => break,
            Some(view) => {
                return invalid(format!(
                    "Cannot create {path}: {at} is a {}, not a map_node",
                    view.type_name()
                ))
            }
            None if recursive => {
                missing.push(at);
                at = parent(at).unwrap_or(ROOT);
            }
            None => {
                return invalid(format!(
                    "Cannot create {path}: node {at} does not exist; create it first, or pass -r (--recursive) to create the missing parents"
                ))
            }
        }
    }
    Ok(missing
        .into_iter()
        .rev()
        .map(|p| Action::CreateNode {
            path: p.to_string(),
            node: new_node(NodeKind::MapNode, BTreeMap::new(), fresh),
        })
        .collect())
}

/// Checks that a node of type `type_name` can be created at `path`: returns `None` when
/// `ignore_existing` and a node of that type is there already (nothing to do), else the
/// actions that create its parents.
///
/// # Errors
/// A bad path; a node already there (of another type, or without `ignore_existing`); see
/// [`parents`].
pub(crate) fn new_path(
    tree: &Tree,
    path: &str,
    type_name: &str,
    recursive: bool,
    ignore_existing: bool,
    fresh: &Fresh,
) -> Result<Option<Vec<Action>>> {
    crate::validate_path(path)?;
    if let Some(view) = tree.node(path) {
        if ignore_existing && view.type_name() == type_name {
            return Ok(None);
        }
        let message = match view {
            _ if ignore_existing => format!(
                "Node {path} already exists and has type {}, not {type_name}",
                view.type_name()
            ),
            NodeView::Table(_) => format!("Cannot create table {path}: node already exists"),
            _ => format!("Cannot create {path}: node already exists"),
        };
        return Err(Error::AlreadyExists {
            path: path.into(),
            message,
        });
    }
    if tree.resolve(path).is_ok() {
        return invalid(format!(
            "Cannot create {path}: it is inside the value of a document or list node (set it instead)"
        ));
    }
    parents(tree, path, recursive, fresh).map(Some)
}

/// `create map_node|document PATH`: a document's value is `value` (`#` if not given).
pub(crate) fn create(
    tree: &Tree,
    path: &str,
    kind: &NodeKind,
    attributes: &BTreeMap<String, String>,
    recursive: bool,
    ignore_existing: bool,
    fresh: &Fresh,
) -> Result<Vec<Action>> {
    let node = new_node(kind.clone(), attributes.clone(), fresh);
    let Some(mut actions) = new_path(
        tree,
        path,
        node.type_name(),
        recursive,
        ignore_existing,
        fresh,
    )?
    else {
        return Ok(vec![]);
    };
    actions.push(Action::CreateNode {
        path: path.into(),
        node,
    });
    Ok(actions)
}

/// The value of `value` at `keys` (map keys, list indexes).
pub fn inside<'a>(value: &'a Yson, keys: &[&str]) -> Option<&'a Yson> {
    let mut at = value;
    for key in keys {
        at = match unattributed(at) {
            Yson::Map(entries) => entries
                .iter()
                .find(|(k, _)| k.as_slice() == key.as_bytes())
                .map(|(_, v)| v)?,
            Yson::List(items) => items.get(list_index(key, items.len())?)?,
            _ => return None,
        };
    }
    Some(at)
}

fn unattributed(value: &Yson) -> &Yson {
    match value {
        Yson::Attributed { value, .. } => value,
        other => other,
    }
}

/// A list index as YPath writes it: `0`, `1`, ... or `-1` for the last item.
fn list_index(key: &str, len: usize) -> Option<usize> {
    match key.strip_prefix('-') {
        Some(back) => len.checked_sub(back.parse::<usize>().ok()?),
        None => key.parse().ok(),
    }
}

/// Sets (or with `None` removes) the value at `keys` inside `value`: a map key is added or
/// replaced, a list item replaced (`end` appends).
pub(crate) fn set_inside(
    value: &mut Yson,
    keys: &[&str],
    new: Option<Yson>,
) -> std::result::Result<(), String> {
    let Some((last, init)) = keys.split_last() else {
        return Err("no key".into());
    };
    let mut at = value;
    for key in init {
        if let Yson::Attributed { value, .. } = at {
            at = value;
        }
        at = match at {
            Yson::Map(entries) => entries
                .iter_mut()
                .find(|(k, _)| k.as_slice() == key.as_bytes())
                .map(|(_, v)| v)
                .ok_or_else(|| format!("it has no key {key:?}"))?,
            Yson::List(items) => {
                let i = list_index(key, items.len())
                    .filter(|i| *i < items.len())
                    .ok_or_else(|| format!("it has no item {key}"))?;
                &mut items[i]
            }
            _ => return Err(format!("{key:?} is inside a scalar")),
        };
    }
    if let Yson::Attributed { value, .. } = at {
        at = value;
    }
    match (at, new) {
        (Yson::Map(entries), new) => {
            let found = entries
                .iter()
                .position(|(k, _)| k.as_slice() == last.as_bytes());
            match (found, new) {
                (Some(i), Some(v)) => entries[i].1 = v,
                (None, Some(v)) => entries.push((last.as_bytes().to_vec(), v)),
                (Some(i), None) => {
                    entries.remove(i);
                }
                (None, None) => return Err(format!("it has no key {last:?}")),
            }
        }
        (Yson::List(items), new) => {
            if *last == "end" {
                match new {
                    Some(v) => items.push(v),
                    None => return Err("\"end\" names no item to remove".into()),
                }
                return Ok(());
            }
            let i = list_index(last, items.len())
                .filter(|i| *i < items.len())
                .ok_or_else(|| format!("it has no item {last}"))?;
            match new {
                Some(v) => items[i] = v,
                None => {
                    items.remove(i);
                }
            }
        }
        _ => return Err(format!("{last:?} is inside a scalar")),
    }
    Ok(())
}

/// YSON text of a value, as nodes and attributes store it.
pub fn text(value: &Yson) -> String {
    dynql_core::yson::to_text(value)
}

/// The actions that create the nodes of `value` at `path`: a map becomes a map node with a
/// child per key, anything else a scalar node; `<a=1>v` sets attributes.
fn build(path: &str, value: &Yson, actions: &mut Vec<Action>, fresh: &Fresh) {
    let (attributes, value) = match value {
        Yson::Attributed { attributes, value } => (
            attributes
                .iter()
                .map(|(k, v)| (String::from_utf8_lossy(k).into_owned(), text(v)))
                .collect(),
            &**value,
        ),
        other => (BTreeMap::new(), other),
    };
    match value {
        Yson::Map(entries) => {
            actions.push(Action::CreateNode {
                path: path.into(),
                node: new_node(NodeKind::MapNode, attributes, fresh),
            });
            for (k, v) in entries {
                build(
                    &child_path(path, &String::from_utf8_lossy(k)),
                    v,
                    actions,
                    fresh,
                );
            }
        }
        other => actions.push(Action::CreateNode {
            path: path.into(),
            node: new_node(NodeKind::Scalar { value: text(other) }, attributes, fresh),
        }),
    }
}

/// Checks the keys of a value `set` at `path`: each a valid node name, and each node a map
/// would make within the path limits ([`crate::MAX_PATH_DEPTH`], [`crate::MAX_PATH_BYTES`]).
fn check_keys(path: &str, value: &Yson) -> Result<()> {
    match unattributed(value) {
        Yson::Map(entries) => {
            for (k, v) in entries {
                let name = String::from_utf8_lossy(k);
                crate::validate_path(&format!("//{name}")).map_err(|_| {
                    Error::Invalid(format!(
                        "Invalid key {}: a node name cannot be empty, contain / or YPath's special characters",
                        dynql_core::error::shown(&name)
                    ))
                })?;
                let child = child_path(path, &name);
                crate::validate_path(&child)?;
                check_keys(&child, v)?;
            }
            Ok(())
        }
        _ => Ok(()),
    }
}

/// `set PATH VALUE`: a document's value (or a part of it, by a path inside) changes in
/// place; a scalar node takes the new value; a map node's children are replaced by the
/// value's keys; a missing node is made from the value (a map becomes a map node).
pub(crate) fn set(
    tree: &Tree,
    path: &str,
    value: &Yson,
    recursive: bool,
    fresh: &Fresh,
) -> Result<Vec<Action>> {
    validate(path)?;
    check_keys(path, value)?;
    let (at, view, inner) = match tree.resolve(path) {
        Ok(found) => found,
        Err(Error::NoSuchNode { .. }) => {
            let mut actions = parents(tree, path, recursive, fresh)?;
            build(path, value, &mut actions, fresh);
            return Ok(actions);
        }
        Err(e) => return Err(e),
    };
    let node = match view {
        NodeView::Table(_) => {
            return invalid(format!(
                "Cannot set {path}: it is a table (write its rows with insert-rows or write-table)"
            ))
        }
        NodeView::Node(node) => Some(node),
        NodeView::ImplicitMap => None,
    };
    match node.map(|n| (&n.kind, n)) {
        // A document changes in place; so does a list node's item (by index).
        Some((NodeKind::Document { value: current }, node))
        | Some((NodeKind::Scalar { value: current }, node))
            if matches!(node.kind, NodeKind::Document { .. }) || !inner.is_empty() =>
        {
            let mut document = super::parse_value(current);
            if inner.is_empty() {
                document = value.clone();
            } else {
                set_inside(&mut document, &inner, Some(value.clone()))
                    .map_err(|why| Error::Invalid(format!("Cannot set {path}: {why}")))?;
            }
            Ok(vec![Action::SetNode {
                path: at.into(),
                node: node.with_value(&document),
            }])
        }
        Some((NodeKind::Scalar { .. }, node)) if !matches!(unattributed(value), Yson::Map(_)) => {
            Ok(vec![Action::SetNode {
                path: at.into(),
                node: Node {
                    kind: NodeKind::Scalar {
                        value: text(unattributed(value)),
                    },
                    ..node.clone()
                },
            }])
        }
        _ if matches!(unattributed(value), Yson::Map(_)) && view.is_map() => {
            // The map node stays (with its id and attributes); its children are replaced.
            let mut actions = remove_below(tree, path)?;
            if let Yson::Map(entries) = unattributed(value) {
                for (k, v) in entries {
                    build(
                        &child_path(path, &String::from_utf8_lossy(k)),
                        v,
                        &mut actions,
                        fresh,
                    );
                }
            }
            Ok(actions)
        }
        _ => {
            // A node of another kind replaces this one.
            let mut actions = remove(tree, path, true, false)?;
            build(path, value, &mut actions, fresh);
            Ok(actions)
        }
    }
}

/// The actions that remove everything below `path`: tables, then explicit nodes deepest
/// first.
fn remove_below(tree: &Tree, path: &str) -> Result<Vec<Action>> {
    let (nodes, tables) = tree.descendants(path);
    let mut actions = Vec::new();
    for (table, table_id) in tables {
        actions.push(Action::RemoveTable {
            path: table,
            table_id,
        });
    }
    for (p, node) in nodes.into_iter().rev() {
        actions.push(Action::RemoveNode {
            path: p,
            node_id: node.id,
        });
    }
    Ok(actions)
}

/// `remove PATH [-r] [-f]`: a table, a node with everything below it (a map node that has
/// children needs `recursive`), or a part of a document.
pub(crate) fn remove(tree: &Tree, path: &str, recursive: bool, force: bool) -> Result<Vec<Action>> {
    validate(path)?;
    if super::builtin(path).is_some() {
        return invalid(format!("Cannot remove {path}: it is a builtin node"));
    }
    let (at, view, inner) = match tree.resolve(path) {
        Ok(found) => found,
        Err(Error::NoSuchNode { .. }) if force => return Ok(vec![]),
        Err(e) => return Err(e),
    };
    match view {
        NodeView::Table(entry) => Ok(vec![Action::RemoveTable {
            path: path.into(),
            table_id: entry.id.clone(),
        }]),
        NodeView::Node(node) if !inner.is_empty() => {
            let mut document = node.value().unwrap_or(Yson::Entity);
            set_inside(&mut document, &inner, None)
                .map_err(|why| Error::Invalid(format!("Cannot remove {path}: {why}")))?;
            Ok(vec![Action::SetNode {
                path: at.into(),
                node: node.with_value(&document),
            }])
        }
        view => {
            if view.is_map() && !recursive && !tree.children(path).is_empty() {
                return invalid(format!(
                    "Cannot remove non-empty composite node {path}; pass -r (--recursive) to remove it with everything below it"
                ));
            }
            let mut actions = remove_below(tree, path)?;
            if let NodeView::Node(node) = view {
                actions.push(Action::RemoveNode {
                    path: path.into(),
                    node_id: node.id.clone(),
                });
            }
            Ok(actions)
        }
    }
}

/// `copy` (`keep_source`) or `move` of a node with everything below it to `destination`.
/// A copy's nodes and tables get new ids; a move keeps them. With `force` a node at the
/// destination is replaced.
pub(crate) fn copy(
    tree: &Tree,
    source: &str,
    destination: &str,
    keep_source: bool,
    recursive: bool,
    force: bool,
    fresh: &Fresh,
) -> Result<Vec<Action>> {
    validate(source)?;
    crate::validate_path(destination)?;
    let verb = if keep_source { "copy" } else { "move" };
    if source == ROOT || (!keep_source && super::builtin(source).is_some()) {
        return invalid(format!("Cannot {verb} {source}: it is a builtin node"));
    }
    if destination == source || destination.starts_with(&format!("{source}/")) {
        return invalid(format!(
            "Cannot {verb} {source} to {destination}: a node cannot be copied or moved into itself"
        ));
    }
    let view = tree
        .node(source)
        .ok_or_else(|| match tree.resolve(source) {
            Ok(_) => Error::Invalid(format!(
                "Cannot {verb} {source}: it is inside a document (get it and set it instead)"
            )),
            Err(e) => e,
        })?;
    let mut actions = match tree.node(destination) {
        Some(_) if force => remove(tree, destination, true, false)?,
        Some(_) => {
            return Err(Error::AlreadyExists {
                path: destination.into(),
                message: format!(
                "Cannot {verb} to {destination}: node already exists (pass --force to replace it)"
            ),
            })
        }
        None => parents(tree, destination, recursive, fresh)?,
    };
    let moved = |p: &str| format!("{destination}{}", &p[source.len()..]);
    let renewed = |node: &Node| {
        if keep_source {
            Node {
                id: fresh.id(),
                creation_time: fresh.now_ms(),
                ..node.clone()
            }
        } else {
            node.clone()
        }
    };
    let (nodes, tables) = tree.descendants(source);
    // A damaged table is not copied: its state is unknown.
    for t in std::iter::once(source).chain(tables.iter().map(|(p, _)| p.as_str())) {
        if tree.state.tables.contains_key(t) {
            tree.state.table_data(t)?;
        }
    }
    match view {
        NodeView::Table(entry) => {
            return Ok(actions
                .into_iter()
                .chain([copy_table(
                    source,
                    &entry.id,
                    destination,
                    keep_source,
                    fresh,
                )])
                .collect())
        }
        NodeView::Node(node) => actions.push(Action::CreateNode {
            path: destination.into(),
            node: renewed(node),
        }),
        NodeView::ImplicitMap => actions.push(Action::CreateNode {
            path: destination.into(),
            node: new_node(NodeKind::MapNode, BTreeMap::new(), fresh),
        }),
    }
    for (p, node) in &nodes {
        actions.push(Action::CreateNode {
            path: moved(p),
            node: renewed(node),
        });
    }
    for (t, table_id) in &tables {
        actions.push(copy_table(t, table_id, &moved(t), keep_source, fresh));
    }
    if !keep_source {
        for (p, node) in nodes.iter().rev() {
            actions.push(Action::RemoveNode {
                path: p.clone(),
                node_id: node.id.clone(),
            });
        }
        if let NodeView::Node(node) = view {
            actions.push(Action::RemoveNode {
                path: source.into(),
                node_id: node.id.clone(),
            });
        }
    }
    Ok(actions)
}

fn copy_table(
    source: &str,
    table_id: &str,
    destination: &str,
    keep_source: bool,
    fresh: &Fresh,
) -> Action {
    Action::CopyTable {
        source: source.into(),
        table_id: table_id.into(),
        destination: destination.into(),
        new_id: fresh.id(),
        keep_source,
    }
}

/// `set PATH/@NAME VALUE` (`None`: `remove PATH/@NAME`) of a custom attribute; `NAME` may go
/// inside the attribute's value (`@a/b/0`). An implicit directory becomes a node to carry it.
///
/// # Errors
/// No such node; a system attribute; a path inside the value that is not there.
pub(crate) fn set_attribute(
    tree: &Tree,
    path: &str,
    name: &str,
    value: Option<&Yson>,
    fresh: &Fresh,
) -> Result<Vec<Action>> {
    validate(path)?;
    let (attribute, inner) = match name.split_once('/') {
        Some((a, rest)) => (a, rest.split('/').collect::<Vec<_>>()),
        None => (name, vec![]),
    };
    if attribute.is_empty() {
        return invalid(format!("Invalid attribute name {name:?}"));
    }
    if super::SYSTEM_ATTRIBUTES.contains(&attribute) {
        return invalid(format!(
            "Builtin attribute {attribute:?} of {path} cannot be {}",
            if value.is_some() { "set" } else { "removed" }
        ));
    }
    let view = tree
        .node(path)
        .ok_or_else(|| Error::NoSuchNode { path: path.into() })?;
    let (node_id, current) = match view {
        NodeView::Table(entry) => (entry.id.clone(), entry.custom_attributes.get(attribute)),
        NodeView::Node(node) => (node.id.clone(), node.attributes.get(attribute)),
        NodeView::ImplicitMap => (String::new(), None),
    };
    let new = match (current, inner.is_empty(), value) {
        (_, true, value) => value.map(text),
        (None, false, _) => {
            return invalid(format!("Attribute {attribute:?} of {path} is not found"))
        }
        (Some(current), false, value) => {
            let mut whole = super::parse_value(current);
            set_inside(&mut whole, &inner, value.cloned()).map_err(|why| {
                Error::Invalid(format!("Cannot set attribute {name:?} of {path}: {why}"))
            })?;
            Some(text(&whole))
        }
    };
    if new.is_none() && current.is_none() {
        return invalid(format!("Attribute {attribute:?} of {path} is not found"));
    }
    let mut actions = Vec::new();
    let node_id = match view {
        NodeView::ImplicitMap => {
            let node = new_node(NodeKind::MapNode, BTreeMap::new(), fresh);
            let id = node.id.clone();
            actions.push(Action::CreateNode {
                path: path.into(),
                node,
            });
            id
        }
        _ => node_id,
    };
    actions.push(Action::SetCustomAttribute {
        path: path.into(),
        node_id,
        name: attribute.into(),
        value: new,
    });
    Ok(actions)
}
