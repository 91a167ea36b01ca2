//! Tablets of sorted tables: pivot keys (tablet *i* holds keys from pivot *i*, inclusive, to
//! pivot *i+1*, exclusive; the first pivot is `[]`), chosen at creation or by
//! [`Store::reshard_table`].
//!
//! Resharding only changes the catalog: chunks written before it may straddle new pivots, and
//! scans select chunks by their key bounds, not by tablet, so results never change. Flush and
//! compaction write chunks per tablet of the pivots current at the time.

use dynql_core::{TableSchema, ValueType};

use crate::error::{Error, Result};
use crate::kernel::catalog::TableEntry;
pub use crate::kernel::tablet_state::{TabletCommand, TabletState};
use crate::log::Action;
use crate::store::Store;

mod pivots;

pub use crate::kernel::pivots::{check_pivots, uniform_pivots, Reshard, MAX_TABLET_COUNT};

/// Checks that `path` (in `state`) accepts writes.
pub(crate) fn check_writable(entry: &TableEntry, path: &str) -> Result<()> {
    if !entry.dynamic {
        return Err(Error::wrong_state(
            path,
            "static",
            format!(
                "Cannot write to table {path}: it is static (alter-table --dynamic true first)"
            ),
        ));
    }
    match entry.tablet_state {
        TabletState::Mounted => Ok(()),
        TabletState::Frozen => Err(Error::wrong_state(
            path,
            "frozen",
            format!("Cannot write to table {path}: its tablets are frozen (unfreeze-table first)"),
        )),
        TabletState::Unmounted => Err(Error::wrong_state(
            path,
            "unmounted",
            format!("Cannot write to table {path}: it is not mounted (mount-table first)"),
        )),
    }
}

/// Checks that `path` can be read.
pub fn check_readable(entry: &TableEntry, path: &str) -> Result<()> {
    if !entry.dynamic {
        return Err(Error::wrong_state(
            path,
            "static",
            format!("Cannot read table {path} with select_rows: it is static, not dynamic"),
        ));
    }
    if entry.tablet_state == TabletState::Unmounted {
        return Err(Error::wrong_state(
            path,
            "unmounted",
            format!("Cannot read table {path}: it is not mounted (mount-table first)"),
        ));
    }
    Ok(())
}

/// A schema change `alter-table` accepts. Ordered tables: the old columns unchanged and
/// first, new columns nullable, not key, not computed, not aggregating (or the system columns
/// `$timestamp` and `$cumulative_data_weight`). Sorted tables: see [`crate::schema_change`].
fn check_compatible(path: &str, old: &TableSchema, new: &TableSchema) -> Result<()> {
    if old.is_sorted() {
        return crate::schema_change::column_map(path, old, new).map(|_| ());
    }
    let incompatible = |why: String| {
        Err(Error::Invalid(format!(
            "Cannot alter table {path}: the new schema is incompatible: {why}"
        )))
    };
    if new.columns().len() < old.columns().len() {
        return incompatible("columns cannot be removed".into());
    }
    for (o, n) in old.columns().iter().zip(new.columns()) {
        if o != n {
            return incompatible(format!("column {:?} changed", o.name));
        }
    }
    for c in &new.columns()[old.columns().len()..] {
        if c.is_key() || c.required || c.is_computed() || c.aggregate.is_some() {
            return incompatible(format!(
                "new column {:?} must be a nullable non-key column",
                c.name
            ));
        }
        // `$timestamp` and `$cumulative_data_weight` may be added (null in the rows before;
        // the running weight goes on from what the tablet held, as the seed says).
        let system_type = match c.name.as_str() {
            "$timestamp" => Some(ValueType::Uint64),
            "$cumulative_data_weight" => Some(ValueType::Int64),
            _ => None,
        };
        if c.name.starts_with('$') && system_type != Some(c.wire_type()) {
            return incompatible(format!(
                "system column {:?} cannot be added to an existing table (only $timestamp of type uint64 and $cumulative_data_weight of type int64 can)",
                c.name
            ));
        }
    }
    Ok(())
}

impl Store {
    /// `alter-table`: a compatible new schema (an ordered table may gain nullable columns at
    /// the end) and/or converting a table to static (`dynamic = false`) and back. Needs an
    /// unmounted table. An ordered table made static and dynamic again loses its trimming:
    /// rows still stored become readable again, numbered from 0, as YT warns.
    ///
    /// A sorted table's schema change that adds columns rewrites its chunks in the new
    /// layout first ([`crate::schema_change`]).
    ///
    /// # Errors
    /// A mounted table; an incompatible schema (changed or removed columns, new key or required
    /// columns).
    pub async fn alter_table(
        &self,
        path: &str,
        schema: Option<TableSchema>,
        dynamic: Option<bool>,
    ) -> Result<()> {
        let unmounted = |entry: &TableEntry| {
            if entry.tablet_state != TabletState::Unmounted {
                let state = entry.tablet_state.name();
                return Err(Error::wrong_state(
                    path,
                    state,
                    format!("Cannot alter table {path} since it is {state}: unmount-table first"),
                ));
            }
            Ok(())
        };
        // The chunks a change of layout replaces, and their rewrites.
        let mut rewritten: Option<(Vec<String>, Vec<crate::kernel::chunk_ref::ChunkRef>)> = None;
        // A static sorted table with rows becoming dynamic (YT's bulk-load path): its rows as
        // versioned chunks, and the static chunks they were read from.
        let mut converted: Option<(Vec<String>, Vec<crate::kernel::chunk_ref::ChunkRef>)> = None;
        if dynamic == Some(true) {
            let state = self.refresh().await?;
            let (entry, _) = state.table_data(path)?;
            if !entry.dynamic && !entry.static_chunks.is_empty() {
                if schema.is_some() {
                    return Err(Error::Invalid(format!(
                        "Cannot alter table {path}: make it dynamic first, then change its schema"
                    )));
                }
                converted = Some(self.convert_static_rows(path, entry).await?);
            }
        }
        if let Some(new) = &schema {
            let state = self.refresh().await?;
            let (entry, data) = state.table_data(path)?;
            unmounted(entry)?;
            if entry.schema.is_sorted() {
                let map = crate::schema_change::column_map(path, &entry.schema, new)?;
                if map.changes_layout() {
                    let chunks = self.rewrite_chunks(entry, new, &map, &data.chunks).await?;
                    let replaces = data.chunks.iter().map(|c| c.path.clone()).collect();
                    rewritten = Some((replaces, chunks));
                }
            }
        }
        self.commit(|state| {
            let (entry, data) = state.table_data(path)?;
            unmounted(entry)?;
            if let Some(new) = &schema {
                check_compatible(path, &entry.schema, new)?;
            }
            if schema.is_none() && dynamic.is_none_or(|d| d == entry.dynamic) {
                return Ok(vec![]);
            }
            let static_paths: Vec<&String> = entry.static_chunks.iter().map(|c| &c.path).collect();
            let mut actions = vec![Action::AlterTable {
                path: path.into(),
                table_id: entry.id.clone(),
                schema: schema.clone(),
                dynamic,
            }];
            match &converted {
                Some((read, chunks)) if !entry.dynamic => {
                    if !static_paths.iter().copied().eq(read.iter()) {
                        return Err(Error::Contended(format!(
                            "Cannot alter table {path}: its rows changed while they were converted; try again"
                        )));
                    }
                    if !chunks.is_empty() {
                        actions.push(Action::BulkInsert {
                            path: path.into(),
                            table_id: entry.id.clone(),
                            chunks: chunks.clone(),
                        });
                    }
                }
                _ if !static_paths.is_empty() => {
                    // Its chunks hold unversioned rows in the schema they were written with.
                    return Err(Error::Unsupported(format!(
                        "Cannot alter static table {path}: it has rows written by write-table; dynql alters them only to make the table dynamic (alter-table --dynamic true, sorted tables)"
                    )));
                }
                _ => {}
            }
            if let Some((replaces, chunks)) = &rewritten {
                if !data.chunks.iter().map(|c| &c.path).eq(replaces.iter()) {
                    return Err(Error::Contended(format!(
                        "Cannot alter table {path}: its chunks changed while they were rewritten; try again"
                    )));
                }
                if !replaces.is_empty() {
                    actions.push(Action::CompactChunks {
                        path: path.into(),
                        table_id: entry.id.clone(),
                        now: self.fresh.now().0,
                        horizon: 0,
                        chunks: chunks.clone(),
                        replaces: replaces.clone(),
                    });
                }
            }
            Ok(actions)
        })
        .await?;
        Ok(())
    }

    /// Writes the rows of the static sorted table `entry` as the versioned chunks of a bulk
    /// insert (every row one overwrite, stamped with the commit's timestamp); returns the
    /// static chunks read and the chunks written.
    ///
    /// # Errors
    /// An ordered (unsorted) table; damaged chunks; the store failing.
    async fn convert_static_rows(
        &self,
        path: &str,
        entry: &TableEntry,
    ) -> Result<(Vec<String>, Vec<crate::kernel::chunk_ref::ChunkRef>)> {
        if !entry.schema.is_sorted() {
            return Err(Error::Unsupported(format!(
                "Cannot make static table {path} dynamic: it is not sorted, and dynql's ordered dynamic tables keep their rows in tablets of their own log (write them with insert-rows instead)"
            )));
        }
        let mut bulk = self.start_conversion(path, entry);
        for chunk in &entry.static_chunks {
            let batches = self.read_static_chunk(chunk).await?;
            self.stage_bulk_batches(&mut bulk, &batches).await?;
        }
        self.write_bulk_rows(&mut bulk, &mut |_| {}).await?;
        let read = entry.static_chunks.iter().map(|c| c.path.clone()).collect();
        Ok((read, bulk.take_chunks()))
    }

    /// Mounts, unmounts, remounts, freezes or unfreezes a table's tablets (synchronously).
    ///
    /// # Errors
    /// No such table; freezing a table that is not mounted, unfreezing one that is not frozen,
    /// remounting an unmounted one.
    pub async fn set_tablet_state(&self, path: &str, command: TabletCommand) -> Result<()> {
        self.commit(|state| {
            let (entry, _) = state.table_data(path)?;
            let current = entry.tablet_state;
            if !entry.dynamic && !matches!(command, TabletCommand::Unmount) {
                return Err(Error::wrong_state(
                    path,
                    "static",
                    format!("Cannot mount static table {path}: only dynamic tables have tablets (alter-table --dynamic true first)"),
                ));
            }
            let next = match (command, current) {
                (TabletCommand::Mount, _) | (TabletCommand::Unfreeze, TabletState::Frozen) => {
                    TabletState::Mounted
                }
                (TabletCommand::Unmount, _) => TabletState::Unmounted,
                (TabletCommand::Freeze, TabletState::Mounted | TabletState::Frozen) => {
                    TabletState::Frozen
                }
                (TabletCommand::Remount, TabletState::Mounted | TabletState::Frozen) => current,
                (TabletCommand::Unfreeze, TabletState::Mounted) => TabletState::Mounted,
                (command, current) => {
                    let verb = match command {
                        TabletCommand::Freeze => "freeze",
                        TabletCommand::Unfreeze => "unfreeze",
                        _ => "remount",
                    };
                    let state = current.name();
                    return Err(Error::wrong_state(
                        path,
                        state,
                        format!("Cannot {verb} table {path} since it is {state}"),
                    ));
                }
            };
            if next == current {
                return Ok(vec![]);
            }
            Ok(vec![Action::SetTabletState {
                path: path.into(),
                table_id: entry.id.clone(),
                state: next,
            }])
        })
        .await?;
        Ok(())
    }
}
