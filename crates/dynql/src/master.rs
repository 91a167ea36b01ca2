//! Master transactions, node locks and the objects `#ID` names (`yt start-tx`, `lock`,
//! `get '#ID/@'`), over `dynql_storage::cypress`.

use dynql_core::Yson;
use dynql_storage::cypress::locks::{Lock, LockMode};
use dynql_storage::cypress::transactions::Entry;
use dynql_storage::cypress::{iso8601, LockOptions, NodeInfo, Object, TakenLock};
use dynql_storage::Timestamp;

use crate::database::{Database, DEFAULT_TRANSACTION_TIMEOUT_MS};
use crate::error::{Error, Result};

/// Options of [`Database::start_master_transaction`].
#[derive(Debug, Clone)]
pub struct MasterTransactionOptions {
    /// The transaction to nest it in.
    pub parent: Option<String>,
    /// Milliseconds without a ping after which it aborts (at most an hour).
    pub timeout_ms: u64,
    /// A description (`title`).
    pub title: Option<String>,
}

impl Default for MasterTransactionOptions {
    fn default() -> Self {
        MasterTransactionOptions {
            parent: None,
            timeout_ms: DEFAULT_TRANSACTION_TIMEOUT_MS,
            title: None,
        }
    }
}

fn text(s: &str) -> Yson {
    Yson::String(s.as_bytes().to_vec())
}

fn ids<'a>(ids: impl IntoIterator<Item = &'a String>) -> Yson {
    let mut list: Vec<&String> = ids.into_iter().collect();
    list.sort();
    list.dedup();
    Yson::List(list.into_iter().map(|i| text(i)).collect())
}

/// The id YT gives "no transaction" (a topmost transaction's `parent_id`).
const NULL_ID: &str = "0-0-0-0";

impl Database {
    /// Starts a master transaction (seed 004): nodes it creates, changes or removes are its
    /// own until it commits; it nests in `parent`; it aborts when not pinged within its
    /// timeout. Returns its id.
    ///
    /// # Example
    /// ```
    /// # tokio::runtime::Runtime::new().unwrap().block_on(async {
    /// use dynql::{Database, MasterTransactionOptions, Yson};
    /// let db = Database::open("memory://").unwrap();
    /// let tx = db.start_master_transaction(MasterTransactionOptions::default()).await.unwrap();
    /// db.set_in("//tmp/config", &Yson::Int64(1), false, Some(&tx)).await.unwrap();
    /// assert!(!db.exists("//tmp/config").await.unwrap());
    /// db.commit_transaction(&tx).await.unwrap();
    /// assert_eq!(db.get("//tmp/config").await.unwrap(), Yson::Int64(1));
    /// # });
    /// ```
    pub async fn start_master_transaction(
        &self,
        options: MasterTransactionOptions,
    ) -> Result<String> {
        if let Some(parent) = &options.parent {
            self.master_transaction_id(parent).await?;
        }
        let tx = self
            .store
            .start_master_transaction(options.parent.as_deref(), options.timeout_ms, options.title)
            .await?;
        Ok(tx.id)
    }

    /// Checks that `id` names a live master transaction, with YT's message for a tablet one.
    pub(crate) async fn master_transaction_id(&self, id: &str) -> Result<()> {
        if self.store.is_master_transaction(id).await? {
            return Ok(());
        }
        if self.store.transaction(id).await.is_ok() {
            return Err(Error::Invalid(format!(
                "{id} is not a valid master transaction id: it is a tablet transaction, which writes rows of dynamic tables only; start a master one with start-tx (--type master)"
            )));
        }
        Err(dynql_storage::Error::NoSuchTransaction { id: id.into() }.into())
    }

    /// Pings a transaction of either kind.
    pub async fn ping_transaction(&self, id: &str) -> Result<()> {
        if self.store.is_master_transaction(id).await? {
            return Ok(self.store.ping_master_transaction(id).await?);
        }
        self.transaction(id).await?.ping().await
    }

    /// Commits a transaction of either kind: a tablet one returns its commit timestamp.
    pub async fn commit_transaction(&self, id: &str) -> Result<Option<Timestamp>> {
        if self.store.is_master_transaction(id).await? {
            self.store.commit_master_transaction(id).await?;
            return Ok(None);
        }
        Ok(Some(self.transaction(id).await?.commit().await?))
    }

    /// Aborts a transaction of either kind (a master one with its nested ones).
    pub async fn abort_transaction(&self, id: &str) -> Result<()> {
        if self.store.is_master_transaction(id).await? {
            return Ok(self.store.abort_master_transaction(id).await?);
        }
        self.transaction(id).await?.abort().await
    }

    /// Takes a lock on the node at `path` in master transaction `tx` (`yt lock`): `mode` is
    /// snapshot, shared or exclusive.
    ///
    /// # Errors
    /// A bad mode; no such transaction or node; a conflicting lock (unless waitable).
    pub async fn lock(
        &self,
        path: &str,
        tx: &str,
        mode: &str,
        options: LockOptions,
    ) -> Result<TakenLock> {
        let mode = LockMode::parse(mode).ok_or_else(|| {
            Error::Invalid(format!(
                "Invalid lock mode {mode:?}: expected snapshot, shared or exclusive"
            ))
        })?;
        self.master_transaction_id(tx).await?;
        Ok(self.store.lock_node(path, tx, mode, options).await?)
    }

    /// Releases `tx`'s explicit locks on the node at `path` (`yt unlock`).
    pub async fn unlock(&self, path: &str, tx: &str) -> Result<()> {
        self.master_transaction_id(tx).await?;
        Ok(self.store.unlock_node(path, tx).await?)
    }

    /// `get '#ID'`, `get '#ID/@'`, `get '#ID/@NAME'`, `get '#ID/inner/path'`: a transaction,
    /// a lock or a node by id (a node under a snapshot lock of `tx` is its locked version).
    pub async fn get_object(&self, path: &str, tx: Option<&str>) -> Result<Yson> {
        let rest = path.strip_prefix('#').unwrap_or(path);
        let (id, rest) = rest.split_once('/').map_or((rest, ""), |(i, r)| (i, r));
        let no_such =
            || Error::Invalid(format!("Error resolving path {path}: no such object {id}"));
        let object = self.store.object(id, tx).await?.ok_or_else(no_such)?;
        let attribute = rest.strip_prefix('@');
        let attributes = match &object {
            Object::Transaction {
                transaction,
                nested,
                locks,
            } => transaction_attributes(transaction, nested, locks),
            Object::Lock(lock) => lock_attributes(lock),
            Object::Node {
                path: node_path,
                snapshot,
            } => {
                return self
                    .get_node_object(id, node_path.as_deref(), snapshot, rest, tx)
                    .await;
            }
        };
        match attribute {
            None if rest.is_empty() => Ok(Yson::Entity),
            None => Err(no_such()),
            Some("") => Ok(attributes),
            Some(name) => attributes.get(name).cloned().ok_or_else(|| {
                Error::NoSuchAttribute(format!("Attribute {name:?} of {path} is not found"))
            }),
        }
    }

    /// A node object by id: its locked version under a snapshot lock, else the node at its
    /// path now.
    async fn get_node_object(
        &self,
        id: &str,
        path: Option<&str>,
        snapshot: &Option<Entry>,
        rest: &str,
        tx: Option<&str>,
    ) -> Result<Yson> {
        if let Some(entry) = snapshot {
            let info = match entry {
                Entry::Node(n) => NodeInfo::Node(n.clone()),
                Entry::Table(t) => NodeInfo::Table(t.clone()),
            };
            if let Some(name) = rest.strip_prefix('@') {
                let name = (!name.is_empty()).then_some(name);
                return match &info {
                    NodeInfo::Table(t) => match name {
                        Some(n) => {
                            Ok(crate::attributes::custom_attribute(t, n).ok_or_else(|| {
                                Error::NoSuchAttribute(format!(
                                    "Attribute {n:?} of #{id} is not found"
                                ))
                            })?)
                        }
                        None => Ok(Yson::Map(
                            t.custom_attributes
                                .iter()
                                .map(|(k, v)| {
                                    (
                                        k.clone().into_bytes(),
                                        dynql_storage::cypress::parse_value(v),
                                    )
                                })
                                .collect(),
                        )),
                    },
                    _ => Database::node_attribute(&format!("#{id}"), &info, name, 0),
                };
            }
            if let Entry::Node(n) = entry {
                if let Some(value) = n.value() {
                    let keys: Vec<&str> = rest.split('/').filter(|k| !k.is_empty()).collect();
                    return dynql_storage::cypress::plan::inside(&value, &keys)
                        .cloned()
                        .ok_or_else(|| {
                            Error::Invalid(format!(
                                "Error resolving path #{id}/{rest}: no such key"
                            ))
                        });
                }
            }
        }
        let Some(path) = path else {
            return Err(Error::Invalid(format!(
                "Error resolving path #{id}: no such object"
            )));
        };
        match rest.strip_prefix('@') {
            Some(name) => {
                let name = (!name.is_empty()).then_some(name);
                self.get_attribute_in(path, name, tx).await
            }
            None if rest.is_empty() => self.get_in(path, tx).await,
            None => self.get_in(&format!("{path}/{rest}"), tx).await,
        }
    }
}

/// A transaction's attributes as `get '#TX/@'` shows them.
fn transaction_attributes(
    t: &dynql_storage::cypress::transactions::MasterTransaction,
    nested: &[String],
    locks: &[Lock],
) -> Yson {
    let mut map = vec![
        (b"id".to_vec(), text(&t.id)),
        (
            b"type".to_vec(),
            text(match t.parent_id {
                Some(_) => "nested_transaction",
                None => "transaction",
            }),
        ),
        (b"state".to_vec(), text("active")),
        (
            b"parent_id".to_vec(),
            text(t.parent_id.as_deref().unwrap_or(NULL_ID)),
        ),
        (b"start_time".to_vec(), text(&iso8601(t.start_time))),
        (b"timeout".to_vec(), Yson::Int64(t.timeout_ms as i64)),
        (b"last_ping_time".to_vec(), text(&iso8601(t.last_ping_time))),
    ];
    if let Some(title) = &t.title {
        map.push((b"title".to_vec(), text(title)));
    }
    let acquired = || {
        locks
            .iter()
            .filter(|l| l.state == dynql_storage::cypress::locks::LockState::Acquired)
    };
    let branched: Vec<String> = t
        .changes
        .values()
        .filter_map(|c| c.id())
        .map(str::to_string)
        .chain(acquired().map(|l| l.node_id.clone()))
        .collect();
    map.extend([
        (b"nested_transaction_ids".to_vec(), ids(nested)),
        (b"staged_object_ids".to_vec(), Yson::List(vec![])),
        (b"branched_node_ids".to_vec(), ids(&branched)),
        (
            b"locked_node_ids".to_vec(),
            ids(acquired().map(|l| &l.node_id)),
        ),
        (b"lock_ids".to_vec(), ids(locks.iter().map(|l| &l.id))),
        (b"resource_usage".to_vec(), Yson::Map(vec![])),
    ]);
    Yson::Map(map)
}

/// A lock's attributes as `get '#LOCK/@'` shows them.
fn lock_attributes(l: &Lock) -> Yson {
    let mut map = vec![
        (b"id".to_vec(), text(&l.id)),
        (b"type".to_vec(), text("lock")),
        (b"state".to_vec(), text(l.state.name())),
        (b"transaction_id".to_vec(), text(&l.transaction_id)),
        (b"mode".to_vec(), text(l.mode.name())),
        (b"node_id".to_vec(), text(&l.node_id)),
    ];
    if let Some(k) = &l.child_key {
        map.push((b"child_key".to_vec(), text(k)));
    }
    if let Some(k) = &l.attribute_key {
        map.push((b"attribute_key".to_vec(), text(k)));
    }
    Yson::Map(map)
}
