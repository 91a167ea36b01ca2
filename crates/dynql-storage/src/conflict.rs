//! Row-lock conflict checking, pure: (what a transaction wrote and locked, its start
//! timestamp, the versions committed since) -> ok or a conflict.
//!
//! Rules (per key and lock group; a column's group is its `lock` attribute, else the default
//! group; an overwrite or a delete touches every group, an update the groups it names):
//! * a write, an `exclusive` lock or a `shared_strong` lock conflicts with a write or an
//!   exclusive lock committed after the transaction started;
//! * a `shared_weak` lock conflicts only with an exclusive lock committed after it started.
//!
//! Writes of different lock groups of one row do not conflict, as in YT.

use std::collections::{BTreeSet, HashMap};
use std::sync::Arc;

use dynql_core::{TableSchema, Value, Yson};
use serde::{Deserialize, Serialize};

use crate::error::{Error, Result};
use crate::kernel::chunk_ref::ChunkRef;
use crate::kernel::mvcc::{RowDelta, WriteKind};
use crate::kernel::timestamp::Timestamp;
use crate::log::{self, Action};
use crate::state::{KeyOrd, State, TableData};

/// Lock modes of `lock_rows`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum LockMode {
    Exclusive,
    SharedWeak,
    SharedStrong,
}

impl LockMode {
    /// Parses `exclusive`, `shared_weak`, `shared_strong`.
    pub fn parse(s: &str) -> Option<LockMode> {
        match s {
            "exclusive" => Some(LockMode::Exclusive),
            "shared_weak" => Some(LockMode::SharedWeak),
            "shared_strong" | "shared" => Some(LockMode::SharedStrong),
            _ => None,
        }
    }
}

/// A committed lock on one key.
#[derive(Debug, Clone, PartialEq)]
pub struct LockDelta {
    pub timestamp: Timestamp,
    pub mode: LockMode,
    pub groups: BTreeSet<String>,
}

/// The lock group of every non-key column.
pub fn all_groups(schema: &TableSchema) -> BTreeSet<String> {
    schema
        .columns()
        .iter()
        .filter(|c| !c.is_key())
        .map(group_of)
        .collect()
}

fn group_of(c: &dynql_core::ColumnSchema) -> String {
    c.lock.clone().unwrap_or_else(|| "<default>".to_string())
}

/// The lock groups a write touches.
pub fn write_groups(schema: &TableSchema, delta: &RowDelta) -> BTreeSet<String> {
    match delta.kind {
        WriteKind::Overwrite | WriteKind::Delete => all_groups(schema),
        WriteKind::Update => schema
            .columns()
            .iter()
            .zip(&delta.values)
            .filter(|(c, v)| !c.is_key() && v.is_some())
            .map(|(c, _)| group_of(c))
            .collect(),
    }
}

/// What a transaction holds on one key.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Claim {
    Write,
    Lock(LockMode),
}

/// Checks one key: `committed_writes` and `committed_locks` are every version of the key.
pub fn check_key(
    schema: &TableSchema,
    start: Timestamp,
    claim: Claim,
    groups: &BTreeSet<String>,
    committed_writes: &[RowDelta],
    committed_locks: &[LockDelta],
) -> bool {
    let later_writes = committed_writes.iter().filter(|d| d.timestamp > start);
    let later_exclusive = committed_locks
        .iter()
        .filter(|l| l.timestamp > start && l.mode == LockMode::Exclusive);
    let overlaps = |g: &BTreeSet<String>| !g.is_disjoint(groups);
    match claim {
        Claim::Lock(LockMode::SharedWeak) => !later_exclusive.clone().any(|l| overlaps(&l.groups)),
        Claim::Write | Claim::Lock(_) => {
            !later_writes
                .clone()
                .any(|d| overlaps(&write_groups(schema, d)))
                && !later_exclusive.clone().any(|l| overlaps(&l.groups))
        }
    }
}

pub(crate) fn decode_key(schema: &TableSchema, text: &str) -> Result<Vec<Value>> {
    let values = log::decode_row(schema, text)?;
    Ok(values[..schema.key_column_count()]
        .iter()
        .map(|v| v.clone().unwrap_or(Value::Null))
        .collect())
}

/// The chunks of `data` holding versions committed after `start`: a conflict check must see
/// them ([`check_conflicts`] gets them decoded, by path).
pub(crate) fn chunks_after(data: &TableData, start: Timestamp) -> impl Iterator<Item = &ChunkRef> {
    data.chunks
        .iter()
        .filter(move |c| c.max_timestamp > start.0)
}

/// A key's versions in decoded chunks (each key-sorted), oldest chunk first.
fn flushed_versions(
    runs: &[&Arc<Vec<RowDelta>>],
    key: &[Value],
    key_count: usize,
) -> Vec<RowDelta> {
    let mut out = Vec::new();
    for run in runs {
        let lo = run.partition_point(|d| {
            crate::kernel::chunk_ref::compare_version_key(d, key, key_count).is_lt()
        });
        let hi = run.partition_point(|d| {
            !crate::kernel::chunk_ref::compare_version_key(d, key, key_count).is_gt()
        });
        out.extend_from_slice(&run[lo..hi]);
    }
    out
}

/// Outcome of [`check_conflicts`] when a chunk it needs was not supplied (a flush happened
/// since the caller looked): fetch the chunks again and retry.
pub(crate) struct MissingChunks;

/// Checks a transaction's actions against commits made after `start` (see [`crate::conflict`]).
/// `recent` holds the decoded chunks named by [`chunks_after`] for the touched tables.
pub(crate) fn check_conflicts(
    state: &State,
    start: Timestamp,
    actions: &[Action],
    recent: &HashMap<String, Arc<Vec<RowDelta>>>,
) -> Result<std::result::Result<(), MissingChunks>> {
    let runs_of = |data: &TableData| -> Option<Vec<&Arc<Vec<RowDelta>>>> {
        chunks_after(data, start)
            .map(|c| recent.get(&c.path))
            .collect()
    };
    let conflict = |path: &str, key: &[Value]| Error::Conflict {
        path: path.to_string(),
        key: dynql_core::yson::to_text(&Yson::List(key.iter().map(Value::to_yson).collect())),
    };
    for action in actions {
        match action {
            Action::WriteRows {
                path,
                table_id,
                kind,
                aggregate,
                rows,
                ..
            } => {
                let (entry, data) = crate::validate::same_table(state, path, table_id)?;
                crate::tablets::check_writable(entry, path)?;
                if !entry.schema.is_sorted() {
                    // Appends to ordered tables never conflict, but their tablets must still
                    // exist and have room.
                    let added = crate::validate::logged_append_weights(entry, path, rows)?;
                    crate::validate::check_append(entry, data, path, &added)?;
                    continue;
                }
                check_not_compacted(data, path, start)?;
                let Some(runs) = runs_of(data) else {
                    return Ok(Err(MissingChunks));
                };
                let key_count = entry.schema.key_column_count();
                for text in rows {
                    // Staged rows were checked against the schema of their time; they must
                    // still be valid rows of the table.
                    let values = log::decode_row(&entry.schema, text)
                        .map_err(|_| crate::validate::schema_changed(path))?;
                    let key = decode_key(&entry.schema, text)?;
                    let probe = RowDelta {
                        timestamp: start,
                        kind: *kind,
                        values,
                        aggregate: *aggregate,
                    };
                    let groups = write_groups(&entry.schema, &probe);
                    let flushed = flushed_versions(&runs, &key, key_count);
                    let k = KeyOrd(key);
                    if !data.key_is_free(&entry.schema, start, Claim::Write, &groups, &k, &flushed)
                    {
                        return Err(conflict(path, &k.0));
                    }
                }
            }
            Action::LockRows {
                path,
                table_id,
                mode,
                groups,
                keys,
            } => {
                let (entry, data) = crate::validate::same_table(state, path, table_id)?;
                crate::tablets::check_writable(entry, path)?;
                check_not_compacted(data, path, start)?;
                let groups: BTreeSet<String> = if groups.is_empty() {
                    all_groups(&entry.schema)
                } else {
                    groups.iter().cloned().collect()
                };
                let Some(runs) = runs_of(data) else {
                    return Ok(Err(MissingChunks));
                };
                let key_count = entry.schema.key_column_count();
                for text in keys {
                    let k = KeyOrd(decode_key(&entry.schema, text)?);
                    let flushed = flushed_versions(&runs, &k.0, key_count);
                    let claim = Claim::Lock(*mode);
                    if !data.key_is_free(&entry.schema, start, claim, &groups, &k, &flushed) {
                        return Err(conflict(path, &k.0));
                    }
                }
            }
            Action::CreateTable { .. }
            | Action::RemoveTable { .. }
            | Action::CopyTable { .. }
            | Action::Compact { .. }
            | Action::CompactChunks { .. }
            | Action::Flush { .. }
            | Action::BulkInsert { .. }
            | Action::Reshard { .. }
            | Action::SetTabletState { .. }
            | Action::SetAttribute { .. }
            | Action::AlterTable { .. }
            | Action::ReshardQueues { .. }
            | Action::TrimRows { .. }
            | Action::CreateNode { .. }
            | Action::SetNode { .. }
            | Action::RemoveNode { .. }
            | Action::SetCustomAttribute { .. }
            | Action::WriteStaticTable { .. }
            | Action::StartMasterTransaction { .. }
            | Action::PingMasterTransaction { .. }
            | Action::CommitMasterTransaction { .. }
            | Action::AbortMasterTransaction { .. }
            | Action::StageChanges { .. }
            | Action::StageDeltas { .. }
            | Action::TakeLock { .. }
            | Action::Unlock { .. }
            | Action::AcceptLoss { .. } => {}
        }
    }
    Ok(Ok(()))
}

/// Refuses a transaction that started before the newest compaction horizon of a table it
/// writes or locks: versions committed between its start and the horizon may be gone, so a
/// conflict could go unseen.
fn check_not_compacted(data: &TableData, path: &str, start: Timestamp) -> Result<()> {
    if data.compaction_horizon > start {
        return Err(Error::CompactedSinceStart { path: path.into() });
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use dynql_core::Value;

    fn schema() -> TableSchema {
        TableSchema::parse("[{name=k;type=int64;sort_order=ascending};{name=a;type=int64};{name=b;type=int64;lock=lb}]").unwrap()
    }

    fn write(ts: u64, kind: WriteKind, a: bool, b: bool) -> RowDelta {
        let v = |w: bool| if w { Some(Value::Int64(1)) } else { None };
        RowDelta {
            timestamp: Timestamp(ts),
            kind,
            values: vec![Some(Value::Int64(1)), v(a), v(b)],
            aggregate: false,
        }
    }

    fn lock(ts: u64, mode: LockMode, groups: &[&str]) -> LockDelta {
        LockDelta {
            timestamp: Timestamp(ts),
            mode,
            groups: groups.iter().map(|g| g.to_string()).collect(),
        }
    }

    fn groups(g: &[&str]) -> BTreeSet<String> {
        g.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn scenario_table() {
        let s = schema();
        let start = Timestamp(10);
        let cases: Vec<(
            &str,
            Claim,
            BTreeSet<String>,
            Vec<RowDelta>,
            Vec<LockDelta>,
            bool,
        )> = vec![
            (
                "write after a write committed before start",
                Claim::Write,
                all_groups(&s),
                vec![write(5, WriteKind::Overwrite, true, true)],
                vec![],
                true,
            ),
            (
                "write after a later overwrite",
                Claim::Write,
                all_groups(&s),
                vec![write(11, WriteKind::Overwrite, true, true)],
                vec![],
                false,
            ),
            (
                "write after a later delete",
                Claim::Write,
                groups(&["<default>"]),
                vec![write(11, WriteKind::Delete, false, false)],
                vec![],
                false,
            ),
            (
                "different lock groups do not conflict",
                Claim::Write,
                groups(&["lb"]),
                vec![write(11, WriteKind::Update, true, false)],
                vec![],
                true,
            ),
            (
                "same lock group conflicts",
                Claim::Write,
                groups(&["lb"]),
                vec![write(11, WriteKind::Update, false, true)],
                vec![],
                false,
            ),
            (
                "shared_strong lock vs later write",
                Claim::Lock(LockMode::SharedStrong),
                all_groups(&s),
                vec![write(12, WriteKind::Update, true, false)],
                vec![],
                false,
            ),
            (
                "shared_weak lock ignores later writes",
                Claim::Lock(LockMode::SharedWeak),
                all_groups(&s),
                vec![write(12, WriteKind::Overwrite, true, true)],
                vec![],
                true,
            ),
            (
                "shared_weak lock vs later exclusive lock",
                Claim::Lock(LockMode::SharedWeak),
                all_groups(&s),
                vec![],
                vec![lock(12, LockMode::Exclusive, &["<default>"])],
                false,
            ),
            (
                "write vs later shared lock",
                Claim::Write,
                all_groups(&s),
                vec![],
                vec![lock(12, LockMode::SharedStrong, &["<default>"])],
                true,
            ),
            (
                "exclusive vs later exclusive",
                Claim::Lock(LockMode::Exclusive),
                groups(&["lb"]),
                vec![],
                vec![lock(12, LockMode::Exclusive, &["lb"])],
                false,
            ),
        ];
        for (name, claim, g, writes, locks, ok) in cases {
            assert_eq!(
                check_key(&s, start, claim, &g, &writes, &locks),
                ok,
                "{name}"
            );
        }
    }
}
