//! The replayed view of the log: every table's catalog entry and data (the dynamic store of
//! versions not yet flushed, the chunk list, locks, queues), as of a log position.

use std::collections::{BTreeMap, BTreeSet, HashSet};
use std::sync::Arc;

use dynql_core::{compare_rows, TableSchema, Value};

use crate::chunk::ChunkRef;
use crate::conflict::{check_key, Claim, LockDelta};
use crate::error::{Error, Result};
use crate::mvcc::RowDelta;
use crate::store::*;
use crate::timestamp::Timestamp;

/// One table's data: versioned deltas by key (sorted) or appended rows (ordered).
#[derive(Debug, Clone, Default)]
pub(crate) struct TableData {
    /// The dynamic store: versions not yet flushed to a chunk, by key, in commit order.
    pub(crate) sorted: BTreeMap<KeyOrd, Vec<RowDelta>>,
    /// Key-sorted chunks holding older versions, oldest first: every version in a chunk is
    /// older than every version in a later chunk and in the dynamic store.
    pub(crate) chunks: Vec<ChunkRef>,
    pub(crate) locks: BTreeMap<KeyOrd, Vec<LockDelta>>,
    /// The tablets of an ordered table.
    pub(crate) queues: Vec<crate::queue::Queue>,
    /// The newest compaction horizon applied (see [`Action::Compact`]): a transaction that
    /// started before it may have lost the evidence of a conflict, so its commit is refused.
    pub(crate) compaction_horizon: Timestamp,
    /// Why the table's state is unknown (a log record it depends on does not apply or cannot
    /// be read, a chunk a logged write names is damaged): reads and writes of it fail with
    /// [`Error::Damaged`], later actions on it are not applied, and it can be removed.
    pub(crate) damage: Option<Arc<str>>,
}

impl TableData {
    /// Adds one version of a sorted table to its key's history.
    pub(crate) fn push_version(&mut self, key_count: usize, delta: RowDelta) {
        let key = delta.values[..key_count]
            .iter()
            .map(|v| v.clone().unwrap_or(Value::Null))
            .collect();
        self.sorted.entry(KeyOrd(key)).or_default().push(delta);
    }

    /// Whether nothing committed after `start` conflicts with `claim` on key `k`; `flushed`
    /// are the key's versions from chunks newer than `start`.
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn key_is_free(
        &self,
        schema: &TableSchema,
        start: Timestamp,
        claim: Claim,
        groups: &BTreeSet<String>,
        k: &KeyOrd,
        flushed: &[RowDelta],
    ) -> bool {
        let memory = self.sorted.get(k).map(Vec::as_slice).unwrap_or(&[]);
        let locks = self.locks.get(k).map(Vec::as_slice).unwrap_or(&[]);
        check_key(schema, start, claim, groups, memory, locks)
            && check_key(schema, start, claim, groups, flushed, &[])
    }

    /// Number of stored versions (chunks and dynamic store).
    pub(crate) fn version_count(&self) -> usize {
        self.chunks.iter().map(|c| c.rows as usize).sum::<usize>()
            + self.sorted.values().map(Vec::len).sum::<usize>()
            + self.queues.iter().map(|q| q.rows.len()).sum::<usize>()
    }

    /// Drops the dynamic store's versions up to `up_to` (they are now in a chunk).
    pub(crate) fn forget_flushed(&mut self, up_to: Timestamp) {
        self.sorted.retain(|_, versions| {
            versions.retain(|d| d.timestamp > up_to);
            !versions.is_empty()
        });
    }
}

/// The replayed log.
#[derive(Debug, Clone, Default)]
pub(crate) struct State {
    pub(crate) seq: u64,
    pub(crate) last_timestamp: Timestamp,
    pub(crate) tables: BTreeMap<String, (TableEntry, TableData)>,
    pub(crate) committed_transactions: HashSet<String>,
    /// Damage found while replaying that no current table carries (an action for a table
    /// that is not there): reported by [`Store::check`], harmless to the tables there are.
    pub(crate) notes: Vec<String>,
}

impl State {
    /// The table at `path` for reading or writing its rows.
    ///
    /// # Errors
    /// [`Error::NoSuchTable`], or [`Error::Damaged`] when its state is unknown.
    pub(crate) fn table_data(&self, path: &str) -> Result<&(TableEntry, TableData)> {
        let table = self
            .tables
            .get(path)
            .ok_or_else(|| Error::NoSuchTable { path: path.into() })?;
        if let Some(reason) = &table.1.damage {
            return Err(Error::Damaged {
                path: path.into(),
                reason: reason.to_string(),
            });
        }
        Ok(table)
    }

    /// Whether replay found damage anywhere.
    pub(crate) fn has_damage(&self) -> bool {
        !self.notes.is_empty() || self.tables.values().any(|(_, d)| d.damage.is_some())
    }

    /// Marks the tables a record names as damaged: by (path, id) when known, every table
    /// when the record is unreadable even as to which tables it touches.
    pub(crate) fn mark_damaged(&mut self, tables: Option<&[(String, String)]>, reason: &str) {
        let reason: Arc<str> = Arc::from(reason);
        match tables {
            Some(tables) => {
                for (path, id) in tables {
                    match self.tables.get_mut(path).filter(|(e, _)| e.id == *id) {
                        Some((_, data)) => {
                            data.damage.get_or_insert_with(|| reason.clone());
                        }
                        None => self.notes.push(format!("{path} (id {id}): {reason}")),
                    }
                }
            }
            None => {
                for (_, data) in self.tables.values_mut() {
                    data.damage.get_or_insert_with(|| reason.clone());
                }
                self.notes.push(reason.to_string());
            }
        }
    }
}

/// A key in YT order, for the in-memory merge of a write.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct KeyOrd(pub(crate) Vec<Value>);

impl PartialOrd for KeyOrd {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for KeyOrd {
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        compare_rows(&self.0, &other.0)
    }
}
