//! Tablets of sorted tables: pivot keys (tablet *i* holds keys from pivot *i*, inclusive, to
//! pivot *i+1*, exclusive; the first pivot is `[]`), chosen at creation or by
//! [`Store::reshard_table`].
//!
//! Resharding only changes the catalog: chunks written before it may straddle new pivots, and
//! scans select chunks by their key bounds, not by tablet, so results never change. Flush and
//! compaction write chunks per tablet of the pivots current at the time.

use dynql_core::{compare_rows, LogicalType, TableSchema, Value, ValueType};

use crate::error::{Error, Result};
use crate::key_range::PivotKey;
use crate::log::Action;
use crate::store::{Store, TableEntry, TableOptions};
use crate::timestamp::Timestamp;

/// The state of a table's tablets (`@tablet_state`). Tables are created mounted (YT creates
/// them unmounted; `mount-table` is accepted and needed by nothing here).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum TabletState {
    #[default]
    Mounted,
    /// Readable, not writable (`freeze-table`).
    Frozen,
    /// Neither readable nor writable; required for `reshard-table` and `alter-table`.
    Unmounted,
}

impl TabletState {
    /// YT's name of the state.
    pub fn name(self) -> &'static str {
        match self {
            TabletState::Mounted => "mounted",
            TabletState::Frozen => "frozen",
            TabletState::Unmounted => "unmounted",
        }
    }
}

/// A tablet-state command.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TabletCommand {
    Mount,
    Unmount,
    Remount,
    Freeze,
    Unfreeze,
}

/// Checks that `path` (in `state`) accepts writes.
pub(crate) fn check_writable(entry: &TableEntry, path: &str) -> Result<()> {
    if !entry.dynamic {
        return Err(Error::Invalid(format!(
            "Cannot write to table {path}: it is static (alter-table --dynamic true first)"
        )));
    }
    match entry.tablet_state {
        TabletState::Mounted => Ok(()),
        TabletState::Frozen => Err(Error::Invalid(format!(
            "Cannot write to table {path}: its tablets are frozen (unfreeze-table first)"
        ))),
        TabletState::Unmounted => Err(Error::Invalid(format!(
            "Cannot write to table {path}: it is not mounted (mount-table first)"
        ))),
    }
}

/// Checks that `path` can be read.
pub fn check_readable(entry: &TableEntry, path: &str) -> Result<()> {
    if !entry.dynamic {
        return Err(Error::Invalid(format!(
            "Cannot read table {path} with select_rows: it is static, not dynamic"
        )));
    }
    if entry.tablet_state == TabletState::Unmounted {
        return Err(Error::Invalid(format!(
            "Cannot read table {path}: it is not mounted (mount-table first)"
        )));
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

/// How to reshard a table.
#[derive(Debug, Clone, PartialEq)]
pub enum Reshard {
    /// Exactly these pivot keys (the first must be `[]`).
    Pivots(Vec<Vec<Value>>),
    /// This many tablets: `uniform` splits the first key column's integer range evenly (as
    /// `yt reshard-table --uniform`); otherwise pivots are picked from the data so tablets hold
    /// similar row counts (fewer tablets when there are fewer distinct keys, as YT does for
    /// small tables; an empty table with an integer first key column is split uniformly).
    TabletCount { count: usize, uniform: bool },
    /// This many tablets of about equal size, the pivots cut at row-group keys from the
    /// chunks' statistics, reading no data (`--enable-slicing`); fewer when the statistics
    /// offer fewer keys. A table whose rows are all unflushed is sliced by its keys, as
    /// `TabletCount` does.
    Sliced { count: usize },
    /// Ordered tables: replace tablets `first..=last` (default: all) with `tablet_count`
    /// tablets. Growing keeps the existing tablets and adds empty ones after them, starting at
    /// `trimmed_row_counts` (one per new tablet, default 0); shrinking appends the rows of the
    /// removed tablets to the last kept one, and is refused when a removed tablet has trimmed
    /// rows (they could become readable again).
    Queues {
        tablet_count: usize,
        first: Option<usize>,
        last: Option<usize>,
        trimmed_row_counts: Vec<u64>,
    },
}

/// Pivot keys in the catalog's form.
pub(crate) fn pivot_keys(pivots: &[Vec<Value>]) -> Vec<PivotKey> {
    pivots.iter().cloned().map(PivotKey).collect()
}

/// `count` tablets splitting the first key column's range evenly: `[]`, `[2^64/k]`,
/// `[2*2^64/k]`, … for uint64 (as YT's `--uniform`); the same steps from `i64::MIN` for
/// int64.
///
/// ```
/// use dynql_core::{TableSchema, Value};
/// let schema = TableSchema::parse("[{name=h;type=uint64;sort_order=ascending};{name=v;type=string}]").unwrap();
/// let pivots = dynql_storage::tablets::uniform_pivots(&schema, 4).unwrap();
/// assert_eq!(pivots[1], vec![Value::Uint64(1 << 62)]);
/// ```
pub fn uniform_pivots(schema: &TableSchema, count: usize) -> Result<Vec<Vec<Value>>> {
    let Some(first) = schema.key_columns().first() else {
        return Err(Error::Invalid("uniform pivots need a sorted table".into()));
    };
    if count == 0 {
        return Err(Error::Invalid("\"tablet_count\" must be positive".into()));
    }
    // The range of the column's own type (YDB's UNIFORM_PARTITIONS on Uint32 splits the
    // 32-bit range; splitting the 64-bit range would put every key in tablet 0).
    let (min, max): (i128, i128) = match first.logical_type {
        LogicalType::Int8 => (i8::MIN.into(), i8::MAX.into()),
        LogicalType::Int16 => (i16::MIN.into(), i16::MAX.into()),
        LogicalType::Int32 => (i32::MIN.into(), i32::MAX.into()),
        LogicalType::Int64 => (i64::MIN.into(), i64::MAX.into()),
        LogicalType::Uint8 => (0, u8::MAX.into()),
        LogicalType::Uint16 => (0, u16::MAX.into()),
        LogicalType::Uint32 => (0, u32::MAX.into()),
        LogicalType::Uint64 => (0, u64::MAX.into()),
        // YT's ranges of its date types.
        LogicalType::Date => (0, 49_672),
        LogicalType::Datetime => (0, 4_102_444_799),
        LogicalType::Timestamp => (0, 4_102_444_799_999_999),
        LogicalType::Interval => (-4_102_444_799_999_999, 4_102_444_799_999_999),
        other => {
            return Err(Error::Invalid(format!(
                "Uniform pivots need an integer first key column; {:?} is {other}: give pivot keys instead",
                first.name
            )))
        }
    };
    let values = max - min + 1;
    if count as i128 > values {
        return Err(Error::Invalid(format!(
            "Cannot split {:?} uniformly into {count} tablets: its type {} has {values} values",
            first.name, first.logical_type
        )));
    }
    let value = |i: usize| {
        let v = min + (i as i128 * values) / count as i128;
        match first.wire_type() {
            ValueType::Uint64 => Value::Uint64(v as u64),
            _ => Value::Int64(v as i64),
        }
    };
    let mut pivots = vec![vec![]];
    for i in 1..count {
        pivots.push(vec![value(i)]);
    }
    Ok(pivots)
}

/// Checks pivot keys: the first empty, each a prefix of the key with the key columns' types,
/// strictly increasing.
pub fn check_pivots(schema: &TableSchema, pivots: &[Vec<Value>]) -> Result<()> {
    let key_count = schema.key_column_count();
    if key_count == 0 {
        return Err(Error::Invalid(
            "\"pivot_keys\" can only be set for sorted tables".into(),
        ));
    }
    if pivots.first().map(|p| !p.is_empty()).unwrap_or(true) {
        return Err(Error::Invalid(
            "The first pivot key must be empty ([])".into(),
        ));
    }
    for (i, p) in pivots.iter().enumerate() {
        if p.len() > key_count {
            return Err(Error::Invalid(format!(
                "Pivot key #{i} has {} values but the table has {key_count} key columns",
                p.len()
            )));
        }
        for (v, c) in p.iter().zip(schema.key_columns()) {
            if !v.is_null() && v.value_type() != c.wire_type() {
                return Err(Error::Invalid(format!(
                    "Pivot key #{i}: value {v} does not match type {} of key column {:?}",
                    c.wire_type(),
                    c.name
                )));
            }
        }
        if i > 0 && compare_rows(&pivots[i - 1], p) != std::cmp::Ordering::Less {
            return Err(Error::Invalid(format!(
                "Pivot keys must be strictly increasing: #{} >= #{i}",
                i - 1
            )));
        }
    }
    Ok(())
}

/// The most tablets a table may have. Every tablet costs catalog space in every log record and
/// checkpoint that carries the table and work at every open, so a count from a typo
/// (`tablet_count=10000000`) is refused before anything is written.
pub const MAX_TABLET_COUNT: usize = 10_000;

/// Checks the tablet count a reshard asks for: positive and within the limit.
fn check_count(count: usize) -> Result<()> {
    check_tablet_count("\"tablet_count\"", count)?;
    if count == 0 {
        return Err(Error::Invalid("\"tablet_count\" must be positive".into()));
    }
    Ok(())
}

/// Refuses a tablet count above [`MAX_TABLET_COUNT`]; `what` names the attribute or argument.
pub(crate) fn check_tablet_count(what: &str, count: usize) -> Result<()> {
    if count > MAX_TABLET_COUNT {
        return Err(Error::Invalid(format!(
            "{what} is {count}, above the limit of {MAX_TABLET_COUNT} tablets per table"
        )));
    }
    Ok(())
}

/// Validates `tablet_count`/`pivot_keys` of a new table and returns the tablet count and
/// pivot keys. A sorted table created with `tablet_count` alone gets uniform pivots
/// over its first key column, which must then be an integer.
pub(crate) fn validate_tablets(
    schema: &TableSchema,
    options: &TableOptions,
) -> Result<(usize, Vec<PivotKey>)> {
    let key_count = schema.key_column_count();
    if let Some(n) = options.tablet_count {
        check_tablet_count("\"tablet_count\"", n)?;
    }
    if let Some(p) = &options.pivot_keys {
        check_tablet_count("The number of \"pivot_keys\"", p.len())?;
    }
    match (&options.pivot_keys, options.tablet_count) {
        (Some(pivots), Some(n)) if pivots.len() != n => Err(Error::Invalid(format!(
            "\"tablet_count\" ({n}) does not match the number of \"pivot_keys\" ({})",
            pivots.len()
        ))),
        (Some(pivots), _) => {
            check_pivots(schema, pivots)?;
            Ok((pivots.len(), pivot_keys(pivots)))
        }
        (None, Some(n)) => {
            if n == 0 {
                return Err(Error::Invalid("\"tablet_count\" must be positive".into()));
            }
            if key_count == 0 {
                return Ok((n, vec![]));
            }
            let pivots = uniform_pivots(schema, n)?;
            Ok((pivots.len(), pivot_keys(&pivots)))
        }
        (None, None) => Ok((
            1,
            if key_count > 0 {
                vec![PivotKey(vec![])]
            } else {
                vec![]
            },
        )),
    }
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
                return Err(Error::Invalid(format!(
                    "Cannot alter table {path} since it is {}: unmount-table first",
                    entry.tablet_state.name()
                )));
            }
            Ok(())
        };
        // The chunks a change of layout replaces, and their rewrites.
        let mut rewritten: Option<(Vec<String>, Vec<crate::chunk::ChunkRef>)> = None;
        // A static sorted table with rows becoming dynamic (YT's bulk-load path): its rows as
        // versioned chunks, and the static chunks they were read from.
        let mut converted: Option<(Vec<String>, Vec<crate::chunk::ChunkRef>)> = None;
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
                        return Err(Error::Invalid(format!(
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
                    return Err(Error::Invalid(format!(
                        "Cannot alter static table {path}: it has rows written by write-table; dynql alters them only to make the table dynamic (alter-table --dynamic true, sorted tables)"
                    )));
                }
                _ => {}
            }
            if let Some((replaces, chunks)) = &rewritten {
                if !data.chunks.iter().map(|c| &c.path).eq(replaces.iter()) {
                    return Err(Error::Invalid(format!(
                        "Cannot alter table {path}: its chunks changed while they were rewritten; try again"
                    )));
                }
                if !replaces.is_empty() {
                    actions.push(Action::CompactChunks {
                        path: path.into(),
                        table_id: entry.id.clone(),
                        now: Timestamp::now().0,
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
    ) -> Result<(Vec<String>, Vec<crate::chunk::ChunkRef>)> {
        if !entry.schema.is_sorted() {
            return Err(Error::Invalid(format!(
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

    async fn reshard_queues(
        &self,
        path: &str,
        entry: &TableEntry,
        reshard: Reshard,
    ) -> Result<usize> {
        let (tablet_count, first, last, trimmed_row_counts) = match reshard {
            Reshard::Queues {
                tablet_count,
                first,
                last,
                trimmed_row_counts,
            } => (tablet_count, first, last, trimmed_row_counts),
            Reshard::TabletCount { count, uniform: false } => (count, None, None, vec![]),
            _ => {
                return Err(Error::Invalid(format!(
                    "{path} is an ordered table: reshard it by tablet count only (no pivot keys, no --uniform)"
                )))
            }
        };
        let current = entry.tablet_count;
        let first = first.unwrap_or(0);
        let last = last.unwrap_or(current.saturating_sub(1));
        if tablet_count == 0 {
            return Err(Error::Invalid("\"tablet_count\" must be positive".into()));
        }
        if first > last || last >= current {
            return Err(Error::Invalid(format!(
                "Invalid tablet range {first}..{last}: {path} has {current} tablets"
            )));
        }
        let span = last - first + 1;
        let new = tablet_count.saturating_sub(span);
        if !trimmed_row_counts.is_empty() && trimmed_row_counts.len() != new {
            return Err(Error::Invalid(format!(
                "--trimmed-row-counts has {} values but the reshard creates {new} tablets",
                trimmed_row_counts.len()
            )));
        }
        check_tablet_count("\"tablet_count\"", tablet_count)?;
        let result = current - span + tablet_count;
        check_tablet_count("The resulting number of tablets", result)?;
        let table_id = entry.id.clone();
        self.commit(|state| {
            let (e, data) = crate::validate::same_table(state, path, &table_id)?;
            if e.tablet_state != TabletState::Unmounted {
                return Err(Error::Invalid(format!(
                    "Cannot reshard table {path} since it is {}: unmount-table first",
                    e.tablet_state.name()
                )));
            }
            if tablet_count < span {
                for t in first + tablet_count..=last {
                    if data.queues.get(t).is_some_and(|q| q.trimmed > 0) {
                        return Err(Error::Invalid(format!(
                            "Cannot reshard {path}: tablet {t} would be removed but has trimmed rows, which could become readable again"
                        )));
                    }
                }
            }
            Ok(vec![Action::ReshardQueues {
                path: path.into(),
                table_id: table_id.clone(),
                first,
                last,
                tablet_count,
                trimmed_row_counts: if trimmed_row_counts.is_empty() {
                    vec![0; new]
                } else {
                    trimmed_row_counts.clone()
                },
            }])
        })
        .await?;
        Ok(result)
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
                return Err(Error::Invalid(format!(
                    "Cannot mount static table {path}: only dynamic tables have tablets (alter-table --dynamic true first)"
                )));
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
                    return Err(Error::Invalid(format!(
                        "Cannot {} table {path} since it is {}",
                        match command {
                            TabletCommand::Freeze => "freeze",
                            TabletCommand::Unfreeze => "unfreeze",
                            _ => "remount",
                        },
                        current.name()
                    )))
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

    /// Pivots for `count` tablets of similar row counts, from the keys of the data (fewer
    /// tablets when there are fewer distinct keys, as YT does for small tables); an empty
    /// table with an integer first key column is split uniformly.
    async fn pivots_from_keys(
        &self,
        path: &str,
        schema: &TableSchema,
        count: usize,
    ) -> Result<Vec<Vec<Value>>> {
        let integer_first = matches!(
            schema.key_columns()[0].wire_type(),
            ValueType::Int64 | ValueType::Uint64
        );
        let (tablets, _) = self.scan_ranges(path, None, Timestamp::MAX).await?;
        let key_count = schema.key_column_count();
        let keys: Vec<Vec<Value>> = tablets
            .into_iter()
            .flat_map(|t| t.rows)
            .map(|mut r| {
                r.truncate(key_count);
                r
            })
            .collect();
        if keys.is_empty() && integer_first {
            return uniform_pivots(schema, count);
        }
        let mut pivots: Vec<Vec<Value>> = vec![vec![]];
        for i in 1..count {
            if let Some(k) = keys[i * keys.len() / count..].first() {
                if pivots
                    .last()
                    .is_none_or(|p| compare_rows(p, k) == std::cmp::Ordering::Less)
                {
                    pivots.push(k.clone());
                }
            }
        }
        Ok(pivots)
    }

    /// Changes a table's tablets. Returns the new tablet count.
    ///
    /// # Errors
    /// Invalid pivots, `uniform` over a non-integer first key column, an ordered table
    /// (resharding queues is not supported yet).
    pub async fn reshard_table(&self, path: &str, reshard: Reshard) -> Result<usize> {
        let entry = self.table(path).await?;
        let schema = &entry.schema;
        if entry.tablet_state != TabletState::Unmounted {
            return Err(Error::Invalid(format!(
                "Cannot reshard table {path} since it is {}: unmount-table first",
                entry.tablet_state.name()
            )));
        }
        if !schema.is_sorted() {
            return self.reshard_queues(path, &entry, reshard).await;
        }
        let pivots = match reshard {
            Reshard::Queues { .. } => {
                return Err(Error::Invalid(format!(
                    "{path} is a sorted table: give pivot keys or a tablet count (--first-tablet-index, --last-tablet-index and --trimmed-row-counts are for ordered tables)"
                )))
            }
            Reshard::Pivots(p) => {
                check_tablet_count("The number of pivot keys", p.len())?;
                check_pivots(schema, &p)?;
                p
            }
            Reshard::TabletCount { count, uniform } => {
                check_count(count)?;
                if uniform {
                    uniform_pivots(schema, count)?
                } else {
                    self.pivots_from_keys(path, schema, count).await?
                }
            }
            Reshard::Sliced { count } => {
                check_count(count)?;
                let chunks = self.chunks(path).await?;
                if chunks.is_empty() {
                    self.pivots_from_keys(path, schema, count).await?
                } else {
                    crate::partitioning::slice_pivots(&chunks, count)
                }
            }
        };
        let typed = pivot_keys(&pivots);
        let tablet_count = pivots.len();
        self.commit(|state| {
            let (current, _) = crate::validate::same_table(state, path, &entry.id)?;
            // Checked again here: a mount that won the race would let writes land in
            // tablets this reshard is about to move.
            if current.tablet_state != TabletState::Unmounted {
                return Err(Error::Invalid(format!(
                    "Cannot reshard table {path} since it is {}: unmount-table first",
                    current.tablet_state.name()
                )));
            }
            Ok(vec![Action::Reshard {
                path: path.into(),
                table_id: current.id.clone(),
                tablet_count,
                pivot_keys: typed.clone(),
            }])
        })
        .await?;
        Ok(tablet_count)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tablet_counts_above_the_limit_are_refused_before_any_work() {
        let int = TableSchema::parse("[{name=k;type=int64;sort_order=ascending}]").unwrap();
        let with = |tablet_count| TableOptions {
            tablet_count: Some(tablet_count),
            ..TableOptions::default()
        };
        assert!(validate_tablets(&int, &with(MAX_TABLET_COUNT)).is_ok());
        let err = validate_tablets(&int, &with(10_000_000)).unwrap_err();
        assert!(
            err.to_string().contains("above the limit of 10000 tablets"),
            "{err}"
        );
        let queue = TableSchema::parse("[{name=a;type=int64}]").unwrap();
        assert!(validate_tablets(&queue, &with(MAX_TABLET_COUNT + 1)).is_err());
    }

    #[tokio::test]
    async fn reshards_above_the_limit_are_refused() {
        let s = Store::open("memory://").unwrap();
        let int = TableSchema::parse("[{name=k;type=int64;sort_order=ascending}]").unwrap();
        s.create_table("//t", int, TableOptions::default())
            .await
            .unwrap();
        s.create_table(
            "//q",
            TableSchema::parse("[{name=a;type=int64}]").unwrap(),
            TableOptions::default(),
        )
        .await
        .unwrap();
        for t in ["//t", "//q"] {
            s.set_tablet_state(t, TabletCommand::Unmount).await.unwrap();
            let err = s
                .reshard_table(
                    t,
                    Reshard::TabletCount {
                        count: 10_000_000,
                        uniform: false,
                    },
                )
                .await
                .unwrap_err();
            assert!(err.to_string().contains("above the limit"), "{t}: {err}");
        }
        let pivots: Vec<Vec<Value>> = std::iter::once(vec![])
            .chain((1..=MAX_TABLET_COUNT as i64).map(|i| vec![Value::Int64(i)]))
            .collect();
        let err = s
            .reshard_table("//t", Reshard::Pivots(pivots))
            .await
            .unwrap_err();
        assert!(err.to_string().contains("pivot keys"), "{err}");
    }

    #[test]
    fn uniform_pivots_split_the_integer_range() {
        let int = TableSchema::parse("[{name=k;type=int64;sort_order=ascending}]").unwrap();
        assert_eq!(
            uniform_pivots(&int, 2).unwrap(),
            vec![vec![], vec![Value::Int64(0)]]
        );
        let text = TableSchema::parse("[{name=k;type=string;sort_order=ascending}]").unwrap();
        assert!(uniform_pivots(&text, 2)
            .unwrap_err()
            .to_string()
            .contains("integer first key column"));
        let uint = TableSchema::parse("[{name=k;type=uint64;sort_order=ascending}]").unwrap();
        let p = uniform_pivots(&uint, 3).unwrap();
        assert_eq!(p.len(), 3);
        assert_eq!(p[1], vec![Value::Uint64(((1u128 << 64) / 3) as u64)]);
    }

    /// Issue 39: a narrow key splits its own type's range (every key used to land in tablet 0).
    #[test]
    fn uniform_pivots_follow_the_key_type() {
        let schema = |t: &str| {
            TableSchema::parse(&format!("[{{name=k;type={t};sort_order=ascending}}]")).unwrap()
        };
        assert_eq!(
            uniform_pivots(&schema("uint32"), 4).unwrap(),
            vec![
                vec![],
                vec![Value::Uint64(1 << 30)],
                vec![Value::Uint64(2 << 30)],
                vec![Value::Uint64(3 << 30)]
            ]
        );
        assert_eq!(
            uniform_pivots(&schema("int32"), 2).unwrap(),
            vec![vec![], vec![Value::Int64(0)]]
        );
        assert_eq!(
            uniform_pivots(&schema("int8"), 4).unwrap(),
            vec![
                vec![],
                vec![Value::Int64(-64)],
                vec![Value::Int64(0)],
                vec![Value::Int64(64)]
            ]
        );
        assert_eq!(
            uniform_pivots(&schema("uint16"), 2).unwrap(),
            vec![vec![], vec![Value::Uint64(1 << 15)]]
        );
        assert!(uniform_pivots(&schema("uint8"), 257)
            .unwrap_err()
            .to_string()
            .contains("has 256 values"));
        assert_eq!(uniform_pivots(&schema("uint8"), 256).unwrap().len(), 256);
    }
}
