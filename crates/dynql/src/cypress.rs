//! The tree of nodes (`yt create`, `get`, `set`, `list`, `exists`, `remove`, `copy`,
//! `move`) and the attributes of nodes that are not tables (see `dynql_storage::cypress`).

use std::collections::BTreeMap;

use dynql_core::Yson;
use dynql_storage::cypress::{iso8601, NodeInfo, NodeKind};

use crate::database::Database;
use crate::error::{Error, Result};

/// Options of [`Database::create`] (`yt create -r -i --tx`).
#[derive(Debug, Clone, Default)]
pub struct CreateOptions {
    /// Create missing parent directories; without it the parent must exist.
    pub recursive: bool,
    /// A node of the same type already there is not an error (and is left as it is).
    pub ignore_existing: bool,
    /// The master transaction to create it in.
    pub transaction: Option<String>,
}

/// Options of [`Database::copy_node`] and [`Database::move_node`].
#[derive(Debug, Clone, Default)]
pub struct CopyOptions {
    /// Create missing parent directories of the destination.
    pub recursive: bool,
    /// Replace a node at the destination.
    pub force: bool,
    /// The master transaction to copy or move in.
    pub transaction: Option<String>,
}

/// Node types [`Database::create`] makes.
pub const NODE_TYPES: &[&str] = &["table", "map_node", "document"];

fn text(s: &str) -> Yson {
    Yson::String(s.as_bytes().to_vec())
}

/// Attribute maps as nodes store them: name to YSON text.
fn attribute_texts(entries: &[(Vec<u8>, Yson)]) -> BTreeMap<String, String> {
    entries
        .iter()
        .map(|(k, v)| {
            (
                String::from_utf8_lossy(k).into_owned(),
                dynql_core::yson::to_text(v),
            )
        })
        .collect()
}

impl Database {
    /// Creates a node (`yt create TYPE PATH --attributes`): a `table` (the attributes as
    /// [`Database::create_table`] takes them), a `map_node` (a directory) or a `document`
    /// (attribute `value` is its value, `#` if not given). Other attributes are custom ones.
    ///
    /// # Example
    /// ```
    /// # tokio::runtime::Runtime::new().unwrap().block_on(async {
    /// use dynql::{CreateOptions, Database, Yson};
    /// let db = Database::open("memory://").unwrap();
    /// let recursive = CreateOptions { recursive: true, ..CreateOptions::default() };
    /// db.create("map_node", "//home/me/configs", None, recursive).await.unwrap();
    /// let value = dynql::parse_document("{value={retries=3}}").unwrap();
    /// db.create("document", "//home/me/configs/app", Some(&value), CreateOptions::default())
    ///     .await.unwrap();
    /// assert_eq!(db.get("//home/me/configs/app/retries").await.unwrap(), Yson::Int64(3));
    /// assert_eq!(db.list("//home/me").await.unwrap(), vec!["configs".to_string()]);
    /// # });
    /// ```
    ///
    /// # Errors
    /// An unknown type; a bad path; a node already there; a missing parent without
    /// `recursive`; invalid table attributes.
    pub async fn create(
        &self,
        node_type: &str,
        path: &str,
        attributes: Option<&Yson>,
        options: CreateOptions,
    ) -> Result<()> {
        self.check_master(options.transaction.as_deref()).await?;
        let entries = match attributes.map(crate::table_attributes::unwrap_attributes) {
            None => vec![],
            Some(Yson::Map(entries)) => entries.clone(),
            Some(_) => return Err(Error::Invalid("Attributes must be a map".into())),
        };
        let kind = match node_type {
            "table" => {
                let Some(attributes) = attributes else {
                    return Err(Error::Invalid(
                        "create table needs attributes: a schema (and dynamic=%true for a dynamic table)".into(),
                    ));
                };
                let (schema, mut table) = crate::table_attributes::table_definition(attributes)?;
                table.recursive = options.recursive;
                table.ignore_existing = options.ignore_existing;
                table.transaction = options.transaction.clone();
                return Ok(self.store.create_table(path, schema, table).await?);
            }
            "map_node" => NodeKind::MapNode,
            "document" => NodeKind::Document {
                value: dynql_core::yson::to_text(
                    entries
                        .iter()
                        .find(|(k, _)| k == b"value")
                        .map_or(&Yson::Entity, |(_, v)| v),
                ),
            },
            other => {
                return Err(Error::Invalid(format!(
                    "Cannot create a node of type {other:?}: dynql creates {}",
                    NODE_TYPES.join(", ")
                )))
            }
        };
        let custom: Vec<_> = entries
            .into_iter()
            .filter(|(k, _)| !(node_type == "document" && k == b"value"))
            .collect();
        for (k, _) in &custom {
            let name = String::from_utf8_lossy(k);
            if dynql_storage::cypress::SYSTEM_ATTRIBUTES.contains(&name.as_ref()) {
                return Err(Error::Invalid(format!(
                    "Builtin attribute {name:?} cannot be set"
                )));
            }
        }
        Ok(self
            .store
            .create_node(
                path,
                kind,
                attribute_texts(&custom),
                options.recursive,
                options.ignore_existing,
                options.transaction.as_deref(),
            )
            .await?)
    }

    /// The value at `path` as `yt get` prints it: a directory is the map of its children's
    /// values, a table `#`, a document its value (a path inside it, the part there).
    pub async fn get(&self, path: &str) -> Result<Yson> {
        self.get_in(path, None).await
    }

    /// [`Database::get`] as master transaction `tx` sees the tree.
    pub async fn get_in(&self, path: &str, tx: Option<&str>) -> Result<Yson> {
        self.check_master(tx).await?;
        Ok(self.store.get_node(path, tx).await?)
    }

    /// `yt set PATH VALUE`: changes a document (or a part of it, by a path inside), replaces
    /// a scalar node's value or a directory's children, or makes nodes of the value at a new
    /// path (a map becomes a directory); `recursive` creates missing parents.
    ///
    /// # Example
    /// ```
    /// # tokio::runtime::Runtime::new().unwrap().block_on(async {
    /// use dynql::Yson;
    /// let db = dynql::Database::open("memory://")?;
    /// let config = dynql::parse_document("{retries=3; hosts=[a;b]}")?;
    /// db.set("//home/app/config", &config, true).await?;
    /// assert_eq!(db.get("//home/app/config/retries").await?, Yson::Int64(3));
    /// assert!(db.exists("//home/app/config/hosts").await?);
    /// db.remove_node("//home/app", true, false, None).await?;
    /// assert!(!db.exists("//home/app").await?);
    /// # Ok::<(), dynql::Error>(()) }).unwrap();
    /// ```
    pub async fn set(&self, path: &str, value: &Yson, recursive: bool) -> Result<()> {
        self.set_in(path, value, recursive, None).await
    }

    /// [`Database::set`] in master transaction `tx`.
    pub async fn set_in(
        &self,
        path: &str,
        value: &Yson,
        recursive: bool,
        tx: Option<&str>,
    ) -> Result<()> {
        self.check_master(tx).await?;
        Ok(self.store.set_node(path, value, recursive, tx).await?)
    }

    /// Removes a node (`yt remove`) in master transaction `tx` or outside: a directory that
    /// is not empty needs `recursive` and goes with everything below it; `force` makes a
    /// missing node no error.
    pub async fn remove_node(
        &self,
        path: &str,
        recursive: bool,
        force: bool,
        tx: Option<&str>,
    ) -> Result<()> {
        self.check_master(tx).await?;
        Ok(self.store.remove_node(path, recursive, force, tx).await?)
    }

    /// Copies a node with everything below it (`yt copy`); copied tables share the
    /// source's chunks.
    pub async fn copy_node(
        &self,
        source: &str,
        destination: &str,
        options: CopyOptions,
    ) -> Result<()> {
        self.copy_or_move(source, destination, true, options).await
    }

    /// Moves a node with everything below it (`yt move`); ids stay.
    pub async fn move_node(
        &self,
        source: &str,
        destination: &str,
        options: CopyOptions,
    ) -> Result<()> {
        self.copy_or_move(source, destination, false, options).await
    }

    async fn copy_or_move(
        &self,
        source: &str,
        destination: &str,
        keep_source: bool,
        options: CopyOptions,
    ) -> Result<()> {
        let tx = options.transaction.as_deref();
        self.check_master(tx).await?;
        let (recursive, force) = (options.recursive, options.force);
        Ok(self
            .store
            .copy_node(source, destination, keep_source, recursive, force, tx)
            .await?)
    }

    /// Whether a node (or a value inside a document) exists at `path`, as `tx` sees it;
    /// `PATH/@NAME` asks whether the node has that attribute (`PATH/@`: whether the node
    /// exists), as `yt exists` does.
    ///
    /// # Errors
    /// A malformed path; no such transaction.
    pub async fn exists_in(&self, path: &str, tx: Option<&str>) -> Result<bool> {
        self.check_master(tx).await?;
        let Some((node, attribute)) = path.split_once("/@") else {
            return Ok(self.store.node_exists(path, tx).await?);
        };
        if !self.store.node_exists(node, tx).await? {
            return Ok(false);
        }
        if attribute.is_empty() {
            return Ok(true);
        }
        match self.get_attribute_in(node, Some(attribute), tx).await {
            Ok(_) => Ok(true),
            Err(Error::NoSuchAttribute(_)) => Ok(false),
            Err(e) => Err(e),
        }
    }

    /// The names of the children of a directory, as `tx` sees it.
    pub async fn list_in(&self, path: &str, tx: Option<&str>) -> Result<Vec<String>> {
        self.check_master(tx).await?;
        Ok(self.store.list_node(path, tx).await?)
    }

    /// Checks that `tx`, if given, is a live master transaction.
    pub(crate) async fn check_master(&self, tx: Option<&str>) -> Result<()> {
        match tx {
            Some(id) => self.master_transaction_id(id).await,
            None => Ok(()),
        }
    }

    /// The attributes of a node that is not a table (`get PATH/@NAME`; `None`: all of them).
    pub(crate) fn node_attribute(
        path: &str,
        node: &NodeInfo,
        name: Option<&str>,
        children: usize,
    ) -> Result<Yson> {
        let mut all: Vec<(Vec<u8>, Yson)> = Vec::new();
        if let NodeInfo::Node(n) = node {
            all.push((b"id".to_vec(), text(&n.id)));
        }
        all.push((b"type".to_vec(), text(node.type_name())));
        if node.type_name() == "map_node" {
            all.push((b"child_count".to_vec(), Yson::Int64(children as i64)));
        }
        if let NodeInfo::Node(n) = node {
            all.push((b"creation_time".to_vec(), text(&iso8601(n.creation_time))));
        }
        for (k, v) in node.custom_attributes() {
            all.push((k.into_bytes(), dynql_storage::cypress::parse_value(&v)));
        }
        let Some(name) = name else {
            return Ok(Yson::Map(all));
        };
        let mut parts = name.split('/');
        let first = parts.next().unwrap_or_default();
        let rest: Vec<&str> = parts.collect();
        let found = all
            .iter()
            .find(|(k, _)| k == first.as_bytes())
            .and_then(|(_, v)| dynql_storage::cypress::plan::inside(v, &rest));
        found.cloned().ok_or_else(|| {
            Error::NoSuchAttribute(format!(
                "Attribute {name:?} of {path} is not found (it has {})",
                all.iter()
                    .map(|(k, _)| String::from_utf8_lossy(k).into_owned())
                    .collect::<Vec<_>>()
                    .join(", ")
            ))
        })
    }
}
