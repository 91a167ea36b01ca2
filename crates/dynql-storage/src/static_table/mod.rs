//! Static tables (seed 004; design note 0010, "Static tables"): tables created without
//! `dynamic=%true`. Their rows have no versions: `write-table` replaces them (taking an
//! exclusive lock) or appends to them (`<append=%true>`, a shared lock), `read-table` reads
//! them in row order. The rows are a list of immutable chunks in row order, each a Parquet
//! file of the table's columns; the list is part of the table's catalog entry
//! ([`TableEntry::static_chunks`]), so a master transaction branches it with the rest of the
//! node, and a copy shares the chunks.
//!
//! Inside a master transaction a write is staged in the transaction's version of the table:
//! [`StagedRows::Overwritten`] (the version's chunk list is the whole table) or
//! [`StagedRows::Appended`] (the chunks go after the rows of the version it branched from).
//! Appends of unrelated transactions (shared locks) therefore all land, in commit order.
//!
//! Invariants:
//! * a committed entry's `static_chunks` are all its rows and its `staged_rows` is `None`;
//! * the rows of a sorted static table are in strictly increasing key order (its schema says
//!   `unique_keys=%true`), across chunks too: every write and every commit checks it;
//! * a chunk named by a committed entry, a transaction's version or a snapshot lock is never
//!   collected ([`chunk_paths`]).

mod read;
mod write;

use std::cmp::Ordering;

use serde::{Deserialize, Serialize};

use dynql_core::value::compare_rows;
use dynql_core::{TableSchema, Value};

use crate::checksum::ChunkChecksum;
use crate::chunk::key_serde;
use crate::cypress::transactions::Entry;
use crate::store::{State, TableData, TableEntry};

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

/// How a master transaction's version of a static table's rows differs from the version it
/// branched from.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum StagedRows {
    /// Written over (or created in the transaction): the version's `static_chunks` are all
    /// its rows.
    Overwritten,
    /// These chunks follow the rows of the version it branched from.
    Appended(Vec<StaticChunk>),
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
            crate::chunk::key_text(first)
        )),
        Ordering::Greater => Err(format!(
            "Sort order violation: key {} follows key {}",
            crate::chunk::key_text(first),
            crate::chunk::key_text(before)
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

/// A nested transaction's version of a table merged into its parent's (`parent`: the
/// parent's own version, if it has one): the child's attributes, and rows that combine both
/// deltas.
pub(crate) fn merge_nested(parent: Option<&Entry>, child: Entry) -> Entry {
    let Entry::Table(mut child) = child else {
        return child;
    };
    let Some(Entry::Table(parent)) = parent else {
        return Entry::Table(child);
    };
    if parent.id != child.id {
        return Entry::Table(child);
    }
    match child.staged_rows.take() {
        Some(StagedRows::Overwritten) => child.staged_rows = Some(StagedRows::Overwritten),
        None => {
            child.static_chunks = parent.static_chunks.clone();
            child.staged_rows = parent.staged_rows.clone();
        }
        Some(StagedRows::Appended(appended)) => {
            child.static_chunks = parent.static_chunks.clone();
            child.staged_rows = match parent.staged_rows.clone() {
                None => Some(StagedRows::Appended(appended)),
                Some(StagedRows::Appended(mut before)) => {
                    before.extend(appended);
                    Some(StagedRows::Appended(before))
                }
                Some(StagedRows::Overwritten) => {
                    child.static_chunks.extend(appended);
                    Some(StagedRows::Overwritten)
                }
            };
        }
    }
    Entry::Table(child)
}

/// A topmost transaction's version of a table applied to the committed entry of the same
/// table.
///
/// # Errors
/// Appended rows of a sorted table that no longer follow the committed ones (another
/// transaction appended meanwhile).
pub(crate) fn apply_committed(
    committed: &mut TableEntry,
    version: &TableEntry,
    path: &str,
) -> Result<(), String> {
    match &version.staged_rows {
        None => {}
        Some(StagedRows::Overwritten) => committed.static_chunks = version.static_chunks.clone(),
        Some(StagedRows::Appended(appended)) => {
            if let Some(first) = appended.iter().find(|c| c.rows > 0) {
                check_follows(
                    &committed.schema,
                    last_key(&committed.static_chunks),
                    &first.first_key,
                )
                .map_err(|e| format!("Cannot append to {path}: {e}"))?;
            }
            committed.static_chunks.extend(appended.iter().cloned());
        }
    }
    Ok(())
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

/// The chunk files an entry names (its rows, staged ones included).
pub(crate) fn chunk_paths(entry: &TableEntry) -> impl Iterator<Item = &str> {
    let staged = match &entry.staged_rows {
        Some(StagedRows::Appended(chunks)) => chunks.as_slice(),
        _ => &[],
    };
    entry
        .static_chunks
        .iter()
        .chain(staged)
        .map(|c| c.path.as_str())
}

/// The chunk files the master transactions' versions and snapshot locks name.
pub(crate) fn master_chunk_paths(master: &crate::cypress::transactions::Master) -> Vec<String> {
    let versions = master
        .transactions
        .values()
        .flat_map(|t| t.changes.values().flatten());
    let snapshots = master.locks.values().filter_map(|l| l.snapshot.as_ref());
    versions
        .chain(snapshots)
        .filter_map(|e| match e {
            Entry::Table(t) => Some(t),
            Entry::Node(_) => None,
        })
        .flat_map(chunk_paths)
        .map(str::to_string)
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

    fn table(chunks: Vec<StaticChunk>, staged: Option<StagedRows>) -> TableEntry {
        let schema = TableSchema::parse("[{name=k;type=int64;sort_order=ascending}]").unwrap();
        let mut entry = crate::store::TableEntry::new_static("t1", schema);
        entry.static_chunks = chunks;
        entry.staged_rows = staged;
        entry
    }

    fn names(e: &TableEntry) -> Vec<&str> {
        chunk_paths(e).collect()
    }

    #[test]
    fn a_nested_append_follows_the_parents_rows() {
        let parent = Entry::Table(table(
            vec![],
            Some(StagedRows::Appended(vec![chunk("a", 1, 1)])),
        ));
        let child = Entry::Table(table(
            vec![],
            Some(StagedRows::Appended(vec![chunk("b", 2, 2)])),
        ));
        let Entry::Table(merged) = merge_nested(Some(&parent), child) else {
            panic!("a table")
        };
        assert_eq!(names(&merged), ["a", "b"]);
        assert!(matches!(merged.staged_rows, Some(StagedRows::Appended(_))));
    }

    #[test]
    fn a_nested_overwrite_replaces_and_an_attribute_change_keeps_the_parents_rows() {
        let parent = Entry::Table(table(vec![chunk("a", 1, 1)], Some(StagedRows::Overwritten)));
        let over = Entry::Table(table(vec![chunk("c", 5, 5)], Some(StagedRows::Overwritten)));
        let Entry::Table(merged) = merge_nested(Some(&parent), over) else {
            panic!("a table")
        };
        assert_eq!(names(&merged), ["c"]);
        let attribute_only = Entry::Table(table(vec![chunk("stale", 0, 0)], None));
        let Entry::Table(merged) = merge_nested(Some(&parent), attribute_only) else {
            panic!("a table")
        };
        assert_eq!(names(&merged), ["a"]);
        assert_eq!(merged.staged_rows, Some(StagedRows::Overwritten));
    }

    #[test]
    fn a_commit_appends_after_the_committed_rows_in_key_order_only() {
        let mut committed = table(vec![chunk("a", 1, 3)], None);
        let later = table(vec![], Some(StagedRows::Appended(vec![chunk("b", 4, 9)])));
        apply_committed(&mut committed, &later, "//t").unwrap();
        assert_eq!(names(&committed), ["a", "b"]);
        let earlier = table(vec![], Some(StagedRows::Appended(vec![chunk("c", 2, 2)])));
        let error = apply_committed(&mut committed, &earlier, "//t").unwrap_err();
        assert!(error.contains("Sort order violation"), "{error}");
        let same = table(vec![], Some(StagedRows::Appended(vec![chunk("d", 9, 10)])));
        let error = apply_committed(&mut committed, &same, "//t").unwrap_err();
        assert!(error.contains("Duplicate key"), "{error}");
        assert_eq!(names(&committed), ["a", "b"]);
    }
}
