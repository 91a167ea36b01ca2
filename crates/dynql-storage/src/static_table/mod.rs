//! Static tables (seed 004; design note 0010, "Static tables"): tables created without
//! `dynamic=%true`. Their rows have no versions: `write-table` replaces them (taking an
//! exclusive lock) or appends to them (`<append=%true>`, a shared lock), `read-table` reads
//! them in row order. The rows are a list of immutable chunks in row order, each a Parquet
//! file of the table's columns; the list is part of the table's catalog entry
//! ([`TableEntry::static_chunks`]), and a copy shares the chunks.
//!
//! Inside a master transaction a write is staged as the rows part of the transaction's
//! change of the table ([`crate::cypress::delta::NodeDelta::rows`], a [`RowsDelta`]):
//! [`RowsDelta::Overwritten`] (these chunks are all the rows) or [`RowsDelta::Appended`] (the
//! chunks go after the rows below). Appends of unrelated transactions (shared locks)
//! therefore all land, in commit order.
//!
//! Invariants:
//! * a committed entry's `static_chunks` are all its rows and its `staged_rows` is `None`
//!   (only versions logged before per-key changes carry one, see [`StagedRows`]);
//! * the rows of a sorted static table are in strictly increasing key order (its schema says
//!   `unique_keys=%true`), across chunks too: every write and every commit checks it;
//! * a chunk named by a committed entry, a transaction's change or a snapshot lock is never
//!   collected ([`chunk_paths`], [`master_chunk_paths`]).

mod read;
mod write;

use std::cmp::Ordering;

use serde::{Deserialize, Serialize};

use dynql_core::value::compare_rows;
use dynql_core::{TableSchema, Value};

use crate::catalog::TableEntry;
use crate::cypress::transactions::{Entry, Master};
use crate::kernel::checksum::ChunkChecksum;
use crate::kernel::chunk_ref::key_serde;
use crate::state::{State, TableData};

pub use read::TableRead;
pub use write::{StaticWrite, CHUNK_ROWS};

/// One chunk of a static table's rows.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StaticChunk {
    /// Object path of the Parquet file.
    pub path: String,
    pub rows: u64,
    /// Size of the file in bytes.
    pub bytes: u64,
    /// YT's data weight of the rows.
    pub data_weight: u64,
    /// The key of the first and of the last row (sorted tables; empty otherwise).
    #[serde(with = "key_serde", default, skip_serializing_if = "Vec::is_empty")]
    pub first_key: Vec<Value>,
    #[serde(with = "key_serde", default, skip_serializing_if = "Vec::is_empty")]
    pub last_key: Vec<Value>,
    pub checksum: ChunkChecksum,
}

/// How a master transaction's version of a static table's rows differed from the version it
/// branched from, in the whole versions logged before transactions staged per-key changes
/// (`stage_changes` records, `changes` of checkpointed transactions). Read, never written:
/// [`crate::cypress::delta::Change::from_legacy`] turns it into a [`RowsDelta`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum StagedRows {
    /// Written over (or created in the transaction): the version's `static_chunks` are all
    /// its rows.
    Overwritten,
    /// These chunks follow the rows of the version it branched from.
    Appended(Vec<StaticChunk>),
}

/// What a master transaction did to a static table's rows.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RowsDelta {
    /// Written over: these chunks are all the rows.
    Overwritten(Vec<StaticChunk>),
    /// These chunks follow the rows below (the parent's or the committed ones).
    Appended(Vec<StaticChunk>),
}

impl RowsDelta {
    /// `self` followed by `upper`: an overwrite wins, appends concatenate.
    pub(crate) fn then(self, upper: RowsDelta) -> RowsDelta {
        match (self, upper) {
            (_, over @ RowsDelta::Overwritten(_)) => over,
            (RowsDelta::Overwritten(mut rows), RowsDelta::Appended(more)) => {
                rows.extend(more);
                RowsDelta::Overwritten(rows)
            }
            (RowsDelta::Appended(mut rows), RowsDelta::Appended(more)) => {
                rows.extend(more);
                RowsDelta::Appended(rows)
            }
        }
    }

    /// The chunks the delta names.
    pub(crate) fn chunks(&self) -> &[StaticChunk] {
        match self {
            RowsDelta::Overwritten(chunks) | RowsDelta::Appended(chunks) => chunks,
        }
    }

    /// Checks that appended rows follow `rows` (a sorted table's keys strictly increase);
    /// an overwrite follows anything.
    ///
    /// # Errors
    /// The first appended key does not follow the last of `rows`.
    pub(crate) fn check_follows(
        &self,
        schema: &TableSchema,
        rows: &[StaticChunk],
        path: &str,
    ) -> Result<(), String> {
        let RowsDelta::Appended(appended) = self else {
            return Ok(());
        };
        match appended.iter().find(|c| c.rows > 0) {
            Some(first) => check_follows(schema, last_key(rows), &first.first_key)
                .map_err(|e| format!("Cannot append to {path}: {e}")),
            None => Ok(()),
        }
    }

    /// Applies the delta to `entry`'s rows; with `check` (a commit), appended rows must
    /// follow the rows there, else nothing changes.
    ///
    /// # Errors
    /// See [`RowsDelta::check_follows`].
    pub(crate) fn apply(
        &self,
        entry: &mut TableEntry,
        path: &str,
        check: bool,
    ) -> Result<(), String> {
        if check {
            self.check_follows(&entry.schema, &entry.static_chunks, path)?;
        }
        match self {
            RowsDelta::Overwritten(chunks) => entry.static_chunks = chunks.clone(),
            RowsDelta::Appended(chunks) => entry.static_chunks.extend(chunks.iter().cloned()),
        }
        Ok(())
    }
}

/// Whether a table is one `write-table` may write: static, and holding no rows of the
/// dynamic table it was (`alter-table --dynamic false` keeps them, versioned).
pub(crate) fn check_writable(
    entry: &TableEntry,
    path: &str,
    dynamic_rows: bool,
) -> Result<(), String> {
    if entry.dynamic {
        return Err(format!(
            "Cannot write table {path} with write-table: it is a dynamic table (write its rows with insert-rows)"
        ));
    }
    if dynamic_rows {
        return Err(format!(
            "Cannot write table {path} with write-table: it holds the rows of the dynamic table it was; dynql writes only tables created static"
        ));
    }
    Ok(())
}

/// Whether a table's data holds rows of a dynamic table (versions, queued rows).
pub(crate) fn has_dynamic_rows(data: &TableData) -> bool {
    !data.chunks.is_empty()
        || !data.sorted.is_empty()
        || data.queues.iter().any(|q| q.row_count() > 0)
}

/// Checks that rows with keys `first..last` may follow a table whose last key is `before`
/// (sorted tables: strictly increasing keys).
pub(crate) fn check_follows(
    schema: &TableSchema,
    before: Option<&[Value]>,
    first: &[Value],
) -> Result<(), String> {
    let Some(before) = before else {
        return Ok(());
    };
    if !schema.is_sorted() {
        return Ok(());
    }
    match compare_rows(before, first) {
        Ordering::Less => Ok(()),
        Ordering::Equal => Err(format!(
            "Duplicate key {}: the table's keys are unique",
            crate::kernel::chunk_ref::key_text(first)
        )),
        Ordering::Greater => Err(format!(
            "Sort order violation: key {} follows key {}",
            crate::kernel::chunk_ref::key_text(first),
            crate::kernel::chunk_ref::key_text(before)
        )),
    }
}

/// The last key of a list of chunks, if any.
pub(crate) fn last_key(chunks: &[StaticChunk]) -> Option<&[Value]> {
    chunks
        .iter()
        .rev()
        .find(|c| c.rows > 0)
        .map(|c| c.last_key.as_slice())
}

/// Replays a write of a static table outside transactions.
pub(crate) fn replay_write(
    state: &mut State,
    path: &str,
    table_id: &str,
    append: bool,
    chunks: &[StaticChunk],
) -> Result<(), String> {
    match state.tables.get_mut(path) {
        Some((entry, _)) if entry.id == table_id => {
            if !append {
                entry.static_chunks.clear();
            }
            entry.static_chunks.extend(chunks.iter().cloned());
            Ok(())
        }
        _ => Err(format!("there is no table {path} (id {table_id})")),
    }
}

/// The chunks an entry names (its rows, and those a legacy version staged).
pub(crate) fn entry_chunks(entry: &TableEntry) -> impl Iterator<Item = &StaticChunk> {
    let staged = match &entry.staged_rows {
        Some(StagedRows::Appended(chunks)) => chunks.as_slice(),
        _ => &[],
    };
    entry.static_chunks.iter().chain(staged)
}

/// The chunk files an entry names (its rows, and those a legacy version staged).
pub(crate) fn chunk_paths(entry: &TableEntry) -> impl Iterator<Item = &str> {
    entry_chunks(entry).map(|c| c.path.as_str())
}

/// The chunks the master transactions' changes (legacy versions included) and snapshot
/// locks name, each with what names it (`//t in transaction ID`, `//t under snapshot lock
/// ID`): rows only they hold, which `dynql check` verifies like the committed ones.
pub(crate) fn master_chunks(master: &Master) -> Vec<(&StaticChunk, String)> {
    let mut out = Vec::new();
    for t in master.transactions.values() {
        for (path, change) in &t.changes {
            let holder = format!("{path} in transaction {}", t.id);
            out.extend(change.static_chunks().map(|c| (c, holder.clone())));
        }
        for (path, version) in &t.legacy_versions {
            if let Some(Entry::Table(table)) = version {
                let holder = format!("{path} in transaction {}", t.id);
                out.extend(entry_chunks(table).map(|c| (c, holder.clone())));
            }
        }
    }
    for lock in master.locks.values() {
        if let Some(Entry::Table(table)) = &lock.snapshot {
            let holder = format!("{} under snapshot lock {}", lock.path, lock.id);
            out.extend(entry_chunks(table).map(|c| (c, holder.clone())));
        }
    }
    out
}

/// The chunk files the master transactions' changes (legacy versions included) and snapshot
/// locks name.
pub(crate) fn master_chunk_paths(master: &Master) -> Vec<String> {
    master_chunks(master)
        .into_iter()
        .map(|(c, _)| c.path.clone())
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn chunk(name: &str, first: i64, last: i64) -> StaticChunk {
        StaticChunk {
            path: name.into(),
            rows: 1,
            bytes: 1,
            data_weight: 1,
            first_key: vec![Value::Int64(first)],
            last_key: vec![Value::Int64(last)],
            checksum: ChunkChecksum {
                data_end: 0,
                tail: 0,
            },
        }
    }

    fn table(chunks: Vec<StaticChunk>) -> TableEntry {
        let schema = TableSchema::parse("[{name=k;type=int64;sort_order=ascending}]").unwrap();
        let mut entry = crate::catalog::TableEntry::new_static("t1", schema);
        entry.static_chunks = chunks;
        entry
    }

    fn names(chunks: &[StaticChunk]) -> Vec<&str> {
        chunks.iter().map(|c| c.path.as_str()).collect()
    }

    #[test]
    fn nested_appends_concatenate_and_an_overwrite_wins() {
        let parent = RowsDelta::Appended(vec![chunk("a", 1, 1)]);
        let merged = parent.then(RowsDelta::Appended(vec![chunk("b", 2, 2)]));
        assert_eq!(names(merged.chunks()), ["a", "b"]);
        assert!(matches!(merged, RowsDelta::Appended(_)));
        let over = RowsDelta::Overwritten(vec![chunk("a", 1, 1)]);
        let merged = over
            .clone()
            .then(RowsDelta::Appended(vec![chunk("b", 2, 2)]));
        assert_eq!(
            merged,
            RowsDelta::Overwritten(vec![chunk("a", 1, 1), chunk("b", 2, 2)])
        );
        let merged = merged.then(RowsDelta::Overwritten(vec![chunk("c", 5, 5)]));
        assert_eq!(merged, RowsDelta::Overwritten(vec![chunk("c", 5, 5)]));
    }

    #[test]
    fn a_commit_appends_after_the_committed_rows_in_key_order_only() {
        let mut committed = table(vec![chunk("a", 1, 3)]);
        let later = RowsDelta::Appended(vec![chunk("b", 4, 9)]);
        later.apply(&mut committed, "//t", true).unwrap();
        assert_eq!(names(&committed.static_chunks), ["a", "b"]);
        let earlier = RowsDelta::Appended(vec![chunk("c", 2, 2)]);
        let error = earlier.apply(&mut committed, "//t", true).unwrap_err();
        assert!(error.contains("Sort order violation"), "{error}");
        let same = RowsDelta::Appended(vec![chunk("d", 9, 10)]);
        let error = same.apply(&mut committed, "//t", true).unwrap_err();
        assert!(error.contains("Duplicate key"), "{error}");
        assert_eq!(names(&committed.static_chunks), ["a", "b"]);
        // An overwrite replaces whatever is there.
        RowsDelta::Overwritten(vec![chunk("e", 0, 0)])
            .apply(&mut committed, "//t", true)
            .unwrap();
        assert_eq!(names(&committed.static_chunks), ["e"]);
    }
}
