//! The replayed view of the log: every table's catalog entry and data (the dynamic store of
//! versions not yet flushed, the chunk list, locks, queues), as of a log position.

use std::collections::{BTreeMap, BTreeSet, HashSet};
use std::sync::Arc;

use dynql_core::{compare_rows, TableSchema, Value};

use crate::conflict::{check_key, Claim, LockDelta};
use crate::error::{Error, Result};
use crate::kernel::catalog::TableEntry;
use crate::kernel::chunk_ref::ChunkRef;
use crate::kernel::mvcc::RowDelta;
use crate::kernel::timestamp::Timestamp;

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
    /// When the last full compaction ran (its `now`): `auto_compaction_period` counts from it.
    pub(crate) last_compaction: Timestamp,
    /// Why the table's state is unknown (a log record it depends on does not apply or cannot
    /// be read, a chunk a logged write names is damaged): reads and writes of it fail with
    /// [`Error::Damaged`], and it can be removed.
    pub(crate) damage: Option<Arc<str>>,
    /// Whether the damage comes only from lost records (missing or unreadable): later
    /// actions still apply, so the state is every acknowledged change but the lost ones', and
    /// `dynql check --repair --accept-loss` can make it readable. Damage from an action that
    /// does not apply freezes the table instead: later actions are not applied.
    pub(crate) damage_by_loss: bool,
}

impl TableData {
    /// The data of a new table: nothing, and the empty tablets of an ordered one.
    pub(crate) fn empty_for(entry: &TableEntry) -> TableData {
        TableData {
            queues: if entry.schema.is_sorted() {
                vec![]
            } else {
                crate::queue::new_queues(entry)
            },
            ..TableData::default()
        }
    }

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

/// The tables of a [`State`], each behind its own `Arc`: a state pinned by a reader
/// ([`Store::snapshot`](crate::Store), a scan) is shared with the replay that applies the
/// next records, and applying them copies the map and the tables they change, not every
/// table's data (`Arc::make_mut` on the state, then on each table written).
#[derive(Debug, Clone, Default)]
pub(crate) struct Tables(BTreeMap<String, Arc<(TableEntry, TableData)>>);

impl Tables {
    pub(crate) fn get(&self, path: &str) -> Option<&(TableEntry, TableData)> {
        self.0.get(path).map(|t| &**t)
    }

    /// The table at `path` to change: copied first if a pinned state shares it.
    pub(crate) fn get_mut(&mut self, path: &str) -> Option<&mut (TableEntry, TableData)> {
        self.0.get_mut(path).map(Arc::make_mut)
    }

    pub(crate) fn contains_key(&self, path: &str) -> bool {
        self.0.contains_key(path)
    }

    pub(crate) fn insert(&mut self, path: String, table: (TableEntry, TableData)) {
        self.0.insert(path, Arc::new(table));
    }

    pub(crate) fn remove(&mut self, path: &str) -> Option<(TableEntry, TableData)> {
        self.0.remove(path).map(Arc::unwrap_or_clone)
    }

    pub(crate) fn len(&self) -> usize {
        self.0.len()
    }

    /// The paths that start with `prefix`, in order.
    pub(crate) fn paths_under<'a>(
        &'a self,
        prefix: &str,
    ) -> impl Iterator<Item = &'a String> + use<'a> {
        let owned = prefix.to_string();
        self.0
            .range::<str, _>((
                std::ops::Bound::Included(prefix),
                std::ops::Bound::Unbounded,
            ))
            .map(|(k, _)| k)
            .take_while(move |k| k.starts_with(owned.as_str()))
    }

    pub(crate) fn iter(&self) -> impl Iterator<Item = (&String, &(TableEntry, TableData))> {
        self.into_iter()
    }

    pub(crate) fn values(&self) -> impl Iterator<Item = &(TableEntry, TableData)> {
        self.0.values().map(|t| &**t)
    }

    /// Whether `other` holds the very same data for `path` (not a copy).
    #[cfg(test)]
    pub(crate) fn shares(&self, path: &str, other: &Tables) -> bool {
        match (self.0.get(path), other.0.get(path)) {
            (Some(a), Some(b)) => Arc::ptr_eq(a, b),
            _ => false,
        }
    }

    /// Every table to change (each copied first if shared).
    pub(crate) fn values_mut(&mut self) -> impl Iterator<Item = &mut (TableEntry, TableData)> {
        self.0.values_mut().map(Arc::make_mut)
    }
}

type Table = (TableEntry, TableData);

fn unshared<'a>((path, table): (&'a String, &'a Arc<Table>)) -> (&'a String, &'a Table) {
    (path, &**table)
}

impl<'a> IntoIterator for &'a Tables {
    type Item = (&'a String, &'a Table);
    type IntoIter = std::iter::Map<
        std::collections::btree_map::Iter<'a, String, Arc<Table>>,
        fn((&'a String, &'a Arc<Table>)) -> (&'a String, &'a Table),
    >;

    fn into_iter(self) -> Self::IntoIter {
        self.0.iter().map(unshared)
    }
}

impl std::ops::Index<&str> for Tables {
    type Output = (TableEntry, TableData);

    fn index(&self, path: &str) -> &Self::Output {
        self.get(path).expect("no such table")
    }
}

/// The replayed log.
#[derive(Debug, Clone, Default)]
pub(crate) struct State {
    pub(crate) seq: u64,
    pub(crate) last_timestamp: Timestamp,
    pub(crate) tables: Tables,
    /// The nodes of the tree that are not tables, by path ([`crate::cypress`]).
    pub(crate) nodes: BTreeMap<String, crate::cypress::Node>,
    /// Master transactions and node locks ([`crate::cypress::transactions`]).
    pub(crate) master: crate::cypress::transactions::Master,
    pub(crate) committed_transactions: HashSet<String>,
    /// Damage found while replaying that no current table carries (an action for a table
    /// that is not there): reported by [`Store::check`](crate::Store::check), harmless to
    /// the tables there are.
    pub(crate) notes: Vec<String>,
    /// What the newest record applied touched (for the next record's `previous`).
    pub(crate) last_record: Option<crate::log::RecordSummary>,
    /// Records found lost (missing or unreadable) since the newest checkpoint, by position.
    pub(crate) lost: BTreeMap<u64, LostRecordState>,
}

/// A record replay could not read, and what it damaged.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct LostRecordState {
    /// The record file's path.
    pub(crate) path: String,
    /// Missing, or why it does not decode.
    pub(crate) problem: String,
    /// What it may have touched (`None`: anything).
    pub(crate) tables: Option<Vec<(String, String)>>,
    /// Whether a placeholder record stands in its place (`dynql check --repair`).
    pub(crate) placeholder: bool,
    /// Its commit timestamp and transaction, when an intact header of it says (else 0 and
    /// none: a placeholder changes no row, so its timestamp orders nothing).
    pub(crate) timestamp: u64,
    pub(crate) transaction_id: Option<String>,
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

    /// Whether replay found damage anywhere (a lost record without a placeholder counts even
    /// when it damaged no current table: a checkpoint would hide it).
    pub(crate) fn has_damage(&self) -> bool {
        !self.notes.is_empty()
            || self.tables.values().any(|(_, d)| d.damage.is_some())
            || self.lost.values().any(|l| !l.placeholder)
    }

    /// Replays a lost record `seq` (its file `path` missing or unreadable: `problem`): the
    /// tables it may have touched are damaged by loss (every table when `tables` is `None`),
    /// and nodes or master transactions it may have touched are noted.
    pub(crate) fn mark_lost(
        &mut self,
        seq: u64,
        path: &str,
        problem: &str,
        tables: Option<&[(String, String)]>,
        placeholder: bool,
    ) {
        let reason: Arc<str> = Arc::from(format!(
            "log record {seq} ({path}) {problem}{}",
            match tables {
                Some(_) => ", and it touched this table",
                None => ", and nothing says which tables it touched",
            }
        ));
        let damage = |data: &mut TableData| {
            if data.damage.is_none() {
                data.damage = Some(reason.clone());
                data.damage_by_loss = true;
            }
        };
        match tables {
            Some(tables) => {
                for (table_path, id) in tables {
                    match self.tables.get_mut(table_path).filter(|(e, _)| e.id == *id) {
                        Some((_, data)) => damage(data),
                        // A node, a master transaction, or a table that is gone (or that the
                        // lost record created): said by `check`.
                        None if !placeholder => self.notes.push(format!(
                            "{table_path} (id {id}) may have been changed by {reason}"
                        )),
                        None => {}
                    }
                }
            }
            None => {
                for (_, data) in self.tables.values_mut() {
                    damage(data);
                }
            }
        }
        self.lost.insert(
            seq,
            LostRecordState {
                path: path.to_string(),
                problem: problem.to_string(),
                tables: tables.map(<[_]>::to_vec),
                placeholder,
                timestamp: 0,
                transaction_id: None,
            },
        );
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
                            // Frozen from here: what follows may depend on what did not apply.
                            data.damage_by_loss = false;
                        }
                        None => self.notes.push(format!("{path} (id {id}): {reason}")),
                    }
                }
            }
            None => {
                for (_, data) in self.tables.values_mut() {
                    data.damage.get_or_insert_with(|| reason.clone());
                    data.damage_by_loss = false;
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
