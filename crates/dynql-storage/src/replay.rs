//! Replay: applying log records to the replayed [`State`].
//!
//! Every action was validated against the state just before its record when it was committed
//! (`crate::validate`), so each one applies. One that does not (its table missing or
//! replaced, a tablet that does not exist), a record that fails its checksum, or a chunk a
//! logged write names that is missing or damaged, damages the tables it touches and nothing
//! else (see `docs/design/0002-commit-log.md`, "Damage").

use std::collections::{BTreeSet, HashMap};

use crate::conflict::decode_key;
use crate::conflict::{all_groups, LockDelta};
use crate::cypress::transactions::committed_node_mut as node_mut;
use crate::kernel::catalog::{set_attribute, TableEntry};
use crate::kernel::chunk_ref::ChunkRef;
use crate::kernel::mvcc::RowDelta;
use crate::kernel::retention::compact_versions;
use crate::kernel::timestamp::Timestamp;
use crate::log::{self, Action, CommitRecord};
use crate::state::{KeyOrd, State, TableData};

/// Per table id, the newest timestamp up to which a flush or compaction among `records`
/// moved the dynamic store into chunks: replaying a write of that table at or before it would
/// only put versions in memory for that record to drop again, so replay skips it (and its
/// chunk is not fetched). Opening a store after a bulk load then costs the log, not the rows.
pub(crate) fn flushed_later(records: &[&CommitRecord]) -> HashMap<String, u64> {
    let mut flushed: HashMap<String, u64> = HashMap::new();
    for r in records {
        for a in &r.actions {
            let (table_id, up_to) = match a {
                Action::Flush {
                    table_id, up_to, ..
                } => (table_id, *up_to),
                Action::Compact {
                    table_id,
                    up_to: Some(up_to),
                    ..
                } => (table_id, *up_to),
                _ => continue,
            };
            let e = flushed.entry(table_id.clone()).or_insert(0);
            *e = (*e).max(up_to);
        }
    }
    // A copy takes the source's dynamic store as it is at the copy: replay must keep it.
    for r in records {
        for a in &r.actions {
            if let Action::CopyTable { table_id, .. } = a {
                flushed.remove(table_id);
            }
        }
    }
    flushed
}

pub(crate) fn is_flushed(flushed: &HashMap<String, u64>, table_id: &str, timestamp: u64) -> bool {
    flushed
        .get(table_id)
        .is_some_and(|up_to| timestamp <= *up_to)
}

/// Applies a record to the replayed state.
///
/// Every action was validated against the state just before its record when it was committed
/// ([`crate::validate`]), so each one applies; an action that does not (its table missing or
/// replaced, a tablet that does not exist) is an error naming the record and the action, never
/// something skipped.
///
/// Such an action damages its table alone ([`State::mark_damaged`]): the table's state after
/// it is unknown, so its later actions are not applied and reading or writing it fails with
/// [`crate::Error::Damaged`], while every other table replays on.
pub(crate) fn apply(
    state: &mut State,
    record: &CommitRecord,
    chunks: &HashMap<String, std::result::Result<bytes::Bytes, String>>,
    flushed: &HashMap<String, u64>,
) {
    if let Some(lost) = &record.lost {
        // A placeholder for a lost record: the same damage the gap made, now on record.
        state.mark_lost(
            record.seq,
            &log::record_path(record.seq).to_string(),
            &lost.problem,
            lost.tables.as_deref(),
            true,
        );
    }
    for (n, action) in record.actions.iter().enumerate() {
        let (path, table_id) = log::action_table(action);
        let frozen = state
            .tables
            .get(path)
            .is_some_and(|(e, d)| e.id == table_id && d.damage.is_some() && !d.damage_by_loss);
        if frozen {
            // Its state is unknown: only a removal still applies.
            if matches!(action, Action::RemoveTable { .. }) {
                state.tables.remove(path);
            }
            continue;
        }
        if let Err(why) = apply_action(state, record, action, chunks, flushed) {
            let reason = format!(
                "action #{n} ({}) of log record {} ({}) does not apply: {why}",
                action_summary(action),
                record.seq,
                log::record_path(record.seq)
            );
            state.mark_damaged(Some(&[(path.to_string(), table_id.to_string())]), &reason);
        }
    }
    if let Some(id) = &record.transaction_id {
        state.committed_transactions.insert(id.clone());
    }
    state.seq = record.seq;
    state.last_timestamp = state.last_timestamp.max(Timestamp(record.timestamp));
    state.last_record = Some(record.summary());
}

/// Replays a record that is lost: missing (`d` is `None`) or unreadable. What it may have
/// touched is damaged by loss ([`State::mark_lost`]): the tables its intact header names, or
/// else those the next record remembers of it (`next`), or else every table.
pub(crate) fn apply_lost(
    state: &mut State,
    seq: u64,
    path: &str,
    d: Option<&log::DamagedRecord>,
    next: Option<&log::RecordSummary>,
) {
    let header = d.and_then(|d| d.header.as_ref());
    let known = next.filter(|p| p.seq == seq).and_then(|p| p.tables.clone());
    let tables = header.map(|h| h.tables.clone()).or(known);
    let problem = match d {
        Some(d) => format!("is damaged: {}", d.message),
        None => "is missing".to_string(),
    };
    state.mark_lost(seq, path, &problem, tables.as_deref(), false);
    if let Some(h) = header {
        if let Some(id) = &h.transaction_id {
            state.committed_transactions.insert(id.clone());
        }
        state.last_timestamp = state.last_timestamp.max(Timestamp(h.timestamp));
        if let Some(lost) = state.lost.get_mut(&seq) {
            lost.timestamp = h.timestamp;
            lost.transaction_id = h.transaction_id.clone();
        }
    }
    state.last_record = Some(log::RecordSummary { seq, tables });
    state.seq = seq;
}

/// A bulk write's chunk as the table holds it after the commit at `timestamp`: every version
/// has that timestamp, and the row groups its writer found clean are clean from then on.
fn bulk_chunk(
    chunk: &crate::kernel::chunk_ref::ChunkRef,
    timestamp: u64,
) -> crate::kernel::chunk_ref::ChunkRef {
    use crate::kernel::chunk_ref::Cleanliness;
    let mut chunk = chunk.clone();
    chunk.commit_timestamp = Some(timestamp);
    chunk.min_timestamp = timestamp;
    chunk.max_timestamp = timestamp;
    for g in &mut chunk.row_groups {
        if let Cleanliness::Since(_) = g.clean {
            g.clean = Cleanliness::Since(timestamp);
        }
    }
    chunk
}

/// What an action does, for error messages: its name and table.
pub(crate) fn action_summary(action: &Action) -> String {
    let (name, path) = match action {
        Action::CreateTable { path, .. } => ("create_table", path),
        Action::RemoveTable { path, .. } => ("remove_table", path),
        Action::CopyTable { source, .. } => ("copy_table", source),
        Action::WriteRows { path, .. } => ("write_rows", path),
        Action::Flush { path, .. } => ("flush", path),
        Action::BulkInsert { path, .. } => ("bulk_insert", path),
        Action::Compact { path, .. } => ("compact", path),
        Action::CompactChunks { path, .. } => ("compact_chunks", path),
        Action::TrimRows { path, .. } => ("trim_rows", path),
        Action::ReshardQueues { path, .. } => ("reshard", path),
        Action::AlterTable { path, .. } => ("alter_table", path),
        Action::SetAttribute { path, .. } => ("set_attribute", path),
        Action::SetTabletState { path, .. } => ("set_tablet_state", path),
        Action::Reshard { path, .. } => ("reshard", path),
        Action::LockRows { path, .. } => ("lock_rows", path),
        Action::CreateNode { path, .. } => ("create_node", path),
        Action::SetNode { path, .. } => ("set_node", path),
        Action::RemoveNode { path, .. } => ("remove_node", path),
        Action::SetCustomAttribute { path, .. } => ("set_custom_attribute", path),
        Action::WriteStaticTable { path, .. } => ("write_table", path),
        Action::StartMasterTransaction { transaction } => ("start_tx", &transaction.id),
        Action::PingMasterTransaction { id, .. } => ("ping_tx", id),
        Action::CommitMasterTransaction { id } => ("commit_tx", id),
        Action::AbortMasterTransaction { id, .. } => ("abort_tx", id),
        Action::StageChanges { transaction_id, .. } => ("stage_changes", transaction_id),
        Action::StageDeltas { transaction_id, .. } => ("stage_deltas", transaction_id),
        Action::TakeLock { lock } => ("lock", &lock.path),
        Action::Unlock { transaction_id, .. } => ("unlock", transaction_id),
        Action::AcceptLoss { path, .. } => ("accept_loss", path),
    };
    format!("{name} {path}")
}

/// The table an action names, which must be there with the action's id.
fn target<'a>(
    state: &'a mut State,
    path: &str,
    table_id: &str,
) -> std::result::Result<&'a mut (TableEntry, TableData), String> {
    match state.tables.get_mut(path) {
        Some(t) if t.0.id == table_id => Ok(t),
        Some(_) => Err(format!(
            "{path} is another table than the one the action names (id {table_id})"
        )),
        None => Err(format!("there is no table {path} (id {table_id})")),
    }
}

/// Applies one action; `Err` says why it does not apply.
fn apply_action(
    state: &mut State,
    record: &CommitRecord,
    action: &Action,
    chunks: &HashMap<String, std::result::Result<bytes::Bytes, String>>,
    flushed: &HashMap<String, u64>,
) -> std::result::Result<(), String> {
    let ts = Timestamp(record.timestamp);
    match action {
        Action::AcceptLoss { path, table_id, .. } => {
            let (_, data) = target(state, path, table_id)?;
            if data.damage.is_some() && !data.damage_by_loss {
                return Err(format!(
                    "{path} is damaged by an action that does not apply, not only by lost records"
                ));
            }
            data.damage = None;
            data.damage_by_loss = false;
        }
        Action::CreateNode { path, node } => {
            if state.tables.contains_key(path) || state.nodes.contains_key(path) {
                return Err(format!("{path} already exists"));
            }
            state.nodes.insert(path.clone(), node.clone());
        }
        Action::SetNode { path, node } => {
            *node_mut(state, path, &node.id)? = node.clone();
        }
        Action::StartMasterTransaction { transaction } => {
            crate::cypress::transactions::start(state, transaction)?
        }
        Action::PingMasterTransaction { id, time } => {
            crate::cypress::transactions::ping(state, id, *time)?
        }
        Action::CommitMasterTransaction { id } => crate::cypress::transactions::commit(state, id)?,
        Action::AbortMasterTransaction { id, .. } => {
            crate::cypress::transactions::abort(state, id)?
        }
        Action::StageChanges {
            transaction_id,
            changes,
        } => crate::cypress::transactions::stage_legacy(state, transaction_id, changes)?,
        Action::StageDeltas {
            transaction_id,
            changes,
        } => crate::cypress::transactions::stage(state, transaction_id, changes)?,
        Action::TakeLock { lock } => crate::cypress::locks::take(state, lock)?,
        Action::Unlock {
            transaction_id,
            node_id,
        } => crate::cypress::locks::unlock(state, transaction_id, node_id)?,
        Action::WriteStaticTable {
            path,
            table_id,
            append,
            chunks,
        } => crate::static_table::replay_write(state, path, table_id, *append, chunks)?,
        Action::RemoveNode { path, node_id } => match state.nodes.get(path) {
            Some(n) if n.id == *node_id => {
                state.nodes.remove(path);
            }
            _ => return Err(format!("there is no node {path} (id {node_id})")),
        },
        Action::SetCustomAttribute {
            path,
            node_id,
            name,
            value,
        } => {
            let is_node = state.nodes.get(path).is_some_and(|n| n.id == *node_id)
                || crate::cypress::builtin(path).is_some_and(|n| n.id == *node_id);
            let attributes = if is_node {
                &mut node_mut(state, path, node_id)?.attributes
            } else {
                &mut target(state, path, node_id)?.0.custom_attributes
            };
            match value {
                Some(v) => attributes.insert(name.clone(), v.clone()),
                None => attributes.remove(name),
            };
        }
        Action::CreateTable { path, entry } => {
            if state.tables.contains_key(path) || state.nodes.contains_key(path) {
                return Err(format!("{path} already exists"));
            }
            let data = TableData::empty_for(entry);
            state.tables.insert(path.clone(), (entry.clone(), data));
        }
        Action::CopyTable {
            source,
            table_id,
            destination,
            new_id,
            keep_source,
        } => {
            let (entry, data) = target(state, source, table_id)?.clone();
            if state.tables.contains_key(destination) || state.nodes.contains_key(destination) {
                return Err(format!("{destination} already exists"));
            }
            let entry = if *keep_source {
                TableEntry {
                    id: new_id.clone(),
                    ..entry
                }
            } else {
                state.tables.remove(source);
                entry
            };
            state.tables.insert(destination.clone(), (entry, data));
        }
        Action::TrimRows {
            path,
            table_id,
            tablet_index,
            trimmed_row_count,
        } => {
            let (_, data) = target(state, path, table_id)?;
            crate::queue::trim(data, *tablet_index, *trimmed_row_count)?;
        }
        Action::RemoveTable { path, table_id } => {
            target(state, path, table_id)?;
            state.tables.remove(path);
        }
        Action::WriteRows {
            path,
            table_id,
            kind,
            aggregate,
            rows,
            chunk,
            ..
        } => {
            let (entry, data) = target(state, path, table_id)?;
            let key_count = entry.schema.key_column_count();
            if key_count > 0 && is_flushed(flushed, table_id, record.timestamp) {
                return Ok(());
            }
            if key_count == 0 {
                for text in rows {
                    let (tablet, values) =
                        crate::queue::decode_row(entry, text).map_err(|e| e.to_string())?;
                    crate::queue::append(entry, data, tablet, values, ts)?;
                }
                return Ok(());
            }
            if let Some(c) = chunk {
                let bytes = chunks
                    .get(c)
                    .cloned()
                    .ok_or_else(|| format!("its chunk {c} was not fetched"))??;
                let batches = crate::chunk::decode_chunk(c, bytes).map_err(|e| e.to_string())?;
                for batch in batches {
                    let versions = crate::chunk::decode_versions(c, &entry.schema, &batch)
                        .map_err(|e| e.to_string())?;
                    for d in versions {
                        data.push_version(
                            key_count,
                            RowDelta {
                                timestamp: ts,
                                kind: *kind,
                                aggregate: *aggregate,
                                ..d
                            },
                        );
                    }
                }
            }
            for text in rows {
                let values = log::decode_row(&entry.schema, text).map_err(|e| e.to_string())?;
                data.push_version(
                    key_count,
                    RowDelta {
                        timestamp: ts,
                        kind: *kind,
                        values,
                        aggregate: *aggregate,
                    },
                );
            }
        }
        Action::ReshardQueues {
            path,
            table_id,
            first,
            last,
            tablet_count,
            trimmed_row_counts,
        } => {
            let (entry, data) = target(state, path, table_id)?;
            if first > last || *last >= data.queues.len() || *tablet_count == 0 {
                return Err(format!(
                    "it reshards tablets {first}..={last} into {tablet_count}, but the table has {} tablets",
                    data.queues.len()
                ));
            }
            crate::queue::reshard(data, *first, *last, *tablet_count, trimmed_row_counts);
            entry.tablet_count = data.queues.len();
        }
        Action::AlterTable {
            path,
            table_id,
            schema,
            dynamic,
        } => {
            let (entry, data) = target(state, path, table_id)?;
            if let Some(schema) = schema {
                if entry.schema.is_sorted() {
                    // The chunks come in the new layout with this record; the dynamic store
                    // moves to it here.
                    crate::schema_change::column_map(path, &entry.schema, schema)
                        .map_err(|e| e.to_string())?
                        .apply(data);
                } else {
                    let added = schema
                        .columns()
                        .len()
                        .saturating_sub(entry.schema.columns().len());
                    crate::queue::widen(data, added);
                }
                entry.schema = schema.clone();
            }
            if let Some(dynamic) = dynamic {
                if *dynamic && !entry.dynamic {
                    crate::queue::forget_trimming(data);
                    // A static table's rows come with this record as a bulk insert of
                    // versioned chunks (`Store::alter_table`): its static chunks are done.
                    entry.static_chunks.clear();
                }
                entry.dynamic = *dynamic;
            }
        }
        Action::SetAttribute {
            path,
            table_id,
            name,
            value,
        } => {
            let (entry, _) = target(state, path, table_id)?;
            set_attribute(entry, name, value).map_err(|e| e.to_string())?;
        }
        Action::SetTabletState {
            path,
            table_id,
            state: new_state,
        } => {
            let (entry, _) = target(state, path, table_id)?;
            entry.tablet_state = *new_state;
        }
        Action::Reshard {
            path,
            table_id,
            tablet_count,
            pivot_keys,
        } => {
            let (entry, _) = target(state, path, table_id)?;
            entry.tablet_count = *tablet_count;
            entry.pivot_keys = pivot_keys.clone();
        }
        Action::Flush {
            path,
            table_id,
            chunks,
            up_to,
        } => {
            let (_, data) = target(state, path, table_id)?;
            data.forget_flushed(Timestamp(*up_to));
            data.chunks.extend(chunks.iter().cloned());
        }
        Action::BulkInsert {
            path,
            table_id,
            chunks,
        } => {
            let (_, data) = target(state, path, table_id)?;
            data.chunks
                .extend(chunks.iter().map(|c| bulk_chunk(c, record.timestamp)));
        }
        Action::Compact {
            path,
            table_id,
            now,
            up_to,
            horizon,
            chunks,
            replaces,
        } => {
            let (entry, data) = target(state, path, table_id)?;
            let now = Timestamp(*now);
            data.last_compaction = data.last_compaction.max(now);
            match up_to {
                // The compacted chunk replaces the named chunks and the dynamic store up
                // to `up_to`; it is older than everything that remains.
                Some(up_to) => {
                    data.chunks.retain(|c| !replaces.contains(&c.path));
                    data.chunks.splice(0..0, chunks.iter().cloned());
                    data.forget_flushed(Timestamp(*up_to));
                }
                // Records of stores written before chunked compaction: retention applied
                // to the dynamic store in place.
                None => {
                    let keys: Vec<KeyOrd> = data.sorted.keys().cloned().collect();
                    let horizon = Timestamp(horizon.unwrap_or(u64::MAX));
                    for k in keys {
                        let compacted = data.sorted.get(&k).map(|d| {
                            compact_versions(&entry.schema, &entry.retention, d, now, horizon)
                        });
                        match compacted {
                            Some(v) if !v.is_empty() => {
                                data.sorted.insert(k, v);
                            }
                            _ => {
                                data.sorted.remove(&k);
                            }
                        }
                    }
                }
            }
            match horizon {
                // Locks at or before the horizon are older than every transaction that was
                // live: no conflict check can need them any more.
                Some(horizon) => {
                    data.compaction_horizon = data.compaction_horizon.max(Timestamp(*horizon));
                    data.locks.retain(|_, ls| {
                        ls.retain(|l| l.timestamp.0 > *horizon);
                        !ls.is_empty()
                    });
                }
                // Older records: locks older than the retention window went.
                None => {
                    let horizon = crate::kernel::retention::timestamp_ms(now)
                        .saturating_sub(entry.retention.min_data_ttl);
                    data.locks.retain(|_, ls| {
                        ls.retain(|l| {
                            crate::kernel::retention::timestamp_ms(l.timestamp) >= horizon
                        });
                        !ls.is_empty()
                    });
                }
            }
        }
        Action::CompactChunks {
            path,
            table_id,
            horizon,
            chunks,
            replaces,
            ..
        } => {
            let (_, data) = target(state, path, table_id)?;
            let named = |c: &ChunkRef| replaces.contains(&c.path);
            let present = data.chunks.iter().filter(|c| named(c)).count();
            if present != replaces.len() {
                return Err(format!(
                    "{} of the {} chunks the compaction replaces are not in the table",
                    replaces.len() - present,
                    replaces.len()
                ));
            }
            // In place of the newest replaced chunk: every chunk before it that shares keys
            // with the replaced ones is older than all of them (the policy chose so).
            let newest = data.chunks.iter().rposition(named).unwrap_or(0);
            let at = data.chunks[..newest].iter().filter(|c| !named(c)).count();
            data.chunks.retain(|c| !named(c));
            data.chunks.splice(at..at, chunks.iter().cloned());
            data.compaction_horizon = data.compaction_horizon.max(Timestamp(*horizon));
        }
        Action::LockRows {
            path,
            table_id,
            mode,
            groups,
            keys,
        } => {
            let (entry, data) = target(state, path, table_id)?;
            let groups: BTreeSet<String> = if groups.is_empty() {
                all_groups(&entry.schema)
            } else {
                groups.iter().cloned().collect()
            };
            for text in keys {
                let key = decode_key(&entry.schema, text).map_err(|e| e.to_string())?;
                data.locks.entry(KeyOrd(key)).or_default().push(LockDelta {
                    timestamp: ts,
                    mode: *mode,
                    groups: groups.clone(),
                });
            }
        }
    }
    Ok(())
}
