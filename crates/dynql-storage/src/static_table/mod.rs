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
//! [`RowsDelta`]: crate::kernel::static_rows::RowsDelta
//! [`RowsDelta::Overwritten`]: crate::kernel::static_rows::RowsDelta::Overwritten
//! [`RowsDelta::Appended`]: crate::kernel::static_rows::RowsDelta::Appended
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

use crate::cypress::transactions::{Entry, Master};
use crate::kernel::catalog::TableEntry;
use crate::kernel::static_rows::{StagedRows, StaticChunk};
use crate::state::{State, TableData};

pub use read::TableRead;
pub use write::{StaticWrite, CHUNK_ROWS};

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
