//! The tree of nodes and master transactions, blocking (`yt create`, `get`, `set`, `list`,
//! `exists`, `remove`, `copy`, `move`, attributes, `start-tx --type master`).

use dynql_core::Yson;

use super::Database;
use crate::cypress::{CopyOptions, CreateOptions};
use crate::error::Result;
use crate::master::MasterTransactionOptions;

impl Database {
    /// [`crate::Database::create`]: a `table`, `map_node` or `document`.
    ///
    /// # Example
    /// ```
    /// use dynql::{blocking::Database, CreateOptions, Yson};
    /// let db = Database::open("memory://")?;
    /// let recursive = CreateOptions { recursive: true, ..CreateOptions::default() };
    /// db.create("map_node", "//home/me", None, recursive)?;
    /// db.set("//home/me/limit", &Yson::Int64(10), false)?;
    /// assert_eq!(db.get("//home/me/limit")?, Yson::Int64(10));
    /// assert!(db.exists("//home/me/limit")?);
    /// assert_eq!(db.list("//home/me")?, vec!["limit".to_string()]);
    /// db.remove("//home/me/limit")?;
    /// assert!(!db.exists("//home/me/limit")?);
    /// # Ok::<(), dynql::Error>(())
    /// ```
    pub fn create(
        &self,
        node_type: &str,
        path: &str,
        attributes: Option<&Yson>,
        options: CreateOptions,
    ) -> Result<()> {
        self.runtime
            .run(self.db.create(node_type, path, attributes, options))
    }

    /// [`crate::Database::get`].
    pub fn get(&self, path: &str) -> Result<Yson> {
        self.runtime.run(self.db.get(path))
    }

    /// [`crate::Database::get_in`]: as master transaction `tx` sees the tree.
    pub fn get_in(&self, path: &str, tx: Option<&str>) -> Result<Yson> {
        self.runtime.run(self.db.get_in(path, tx))
    }

    /// [`crate::Database::set`].
    pub fn set(&self, path: &str, value: &Yson, recursive: bool) -> Result<()> {
        self.runtime.run(self.db.set(path, value, recursive))
    }

    /// [`crate::Database::set_in`]: in master transaction `tx`.
    pub fn set_in(
        &self,
        path: &str,
        value: &Yson,
        recursive: bool,
        tx: Option<&str>,
    ) -> Result<()> {
        self.runtime.run(self.db.set_in(path, value, recursive, tx))
    }

    /// [`crate::Database::exists`].
    pub fn exists(&self, path: &str) -> Result<bool> {
        self.runtime.run(self.db.exists(path))
    }

    /// [`crate::Database::list`].
    pub fn list(&self, path: &str) -> Result<Vec<String>> {
        self.runtime.run(self.db.list(path))
    }

    /// [`crate::Database::remove`].
    pub fn remove(&self, path: &str) -> Result<()> {
        self.runtime.run(self.db.remove(path))
    }

    /// [`crate::Database::remove_node`]: `recursive`, `force`, in master transaction `tx`.
    pub fn remove_node(
        &self,
        path: &str,
        recursive: bool,
        force: bool,
        tx: Option<&str>,
    ) -> Result<()> {
        self.runtime
            .run(self.db.remove_node(path, recursive, force, tx))
    }

    /// [`crate::Database::copy_node`].
    pub fn copy_node(&self, source: &str, destination: &str, options: CopyOptions) -> Result<()> {
        self.runtime
            .run(self.db.copy_node(source, destination, options))
    }

    /// [`crate::Database::move_node`].
    pub fn move_node(&self, source: &str, destination: &str, options: CopyOptions) -> Result<()> {
        self.runtime
            .run(self.db.move_node(source, destination, options))
    }

    /// [`crate::Database::get_attribute`]; `None`: every attribute.
    pub fn get_attribute(&self, path: &str, name: Option<&str>) -> Result<Yson> {
        self.runtime.run(self.db.get_attribute(path, name))
    }

    /// [`crate::Database::set_attribute`].
    pub fn set_attribute(&self, path: &str, name: &str, value: &Yson) -> Result<()> {
        self.runtime.run(self.db.set_attribute(path, name, value))
    }

    /// [`crate::Database::remove_attribute`].
    pub fn remove_attribute(&self, path: &str, name: &str) -> Result<()> {
        self.runtime.run(self.db.remove_attribute(path, name))
    }

    /// [`crate::Database::start_master_transaction`]: returns its id.
    pub fn start_master_transaction(&self, options: MasterTransactionOptions) -> Result<String> {
        self.runtime.run(self.db.start_master_transaction(options))
    }

    /// [`crate::Database::ping_transaction`]: a master or tablet transaction.
    pub fn ping_transaction(&self, id: &str) -> Result<()> {
        self.runtime.run(self.db.ping_transaction(id))
    }

    /// [`crate::Database::commit_transaction`]: a master or tablet transaction; the commit
    /// timestamp of a tablet one.
    pub fn commit_transaction(&self, id: &str) -> Result<Option<dynql_storage::Timestamp>> {
        self.runtime.run(self.db.commit_transaction(id))
    }

    /// [`crate::Database::abort_transaction`].
    pub fn abort_transaction(&self, id: &str) -> Result<()> {
        self.runtime.run(self.db.abort_transaction(id))
    }
}
