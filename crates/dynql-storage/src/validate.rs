//! Commit-time validation: the checks every commit re-runs against the state it commits on.
//!
//! A write is prepared against one replayed state (rows checked, chunks written) and
//! committed against a later one: between the two, another process may have removed the
//! table, resharded it, frozen or unmounted it, or changed its schema. The commit loop
//! ([`Store::append_commit`](crate::store::Store)) rebuilds its actions from the state it is
//! about to append to, and these functions are what that rebuild checks, so a record in the
//! log always applies to the state before it (replay treats one that does not as damage,
//! never as something to skip).
//!
//! Invariant (checked by `tests/races.rs`): a write that is acknowledged is in the log and
//! applies; a write that does not apply is refused with an error and leaves no record.

use dynql_core::TableSchema;

use crate::error::{Error, Result};
use crate::store::{State, TableData, TableEntry};

/// Checks that written rows are full rows of `schema` (schema order) with every key column.
pub(crate) fn row_shapes(
    schema: &TableSchema,
    path: &str,
    rows: &[crate::store::RowValues],
) -> Result<()> {
    let key_count = schema.key_column_count();
    for (n, r) in rows.iter().enumerate() {
        if r.len() != schema.columns().len() {
            return Err(Error::Invalid(format!(
                "row #{n} for {path} has {} values",
                r.len()
            )));
        }
        if r[..key_count].iter().any(Option::is_none) {
            return Err(Error::Invalid(format!(
                "row #{n} for {path} misses a key column"
            )));
        }
    }
    Ok(())
}

/// The table a prepared action names, as it is in `state`: it must still be the same table
/// (same id at the same path), not one removed or replaced since.
pub(crate) fn same_table<'a>(
    state: &'a State,
    path: &str,
    table_id: &str,
) -> Result<&'a (TableEntry, TableData)> {
    match state.table_data(path)? {
        table if table.0.id == table_id => Ok(table),
        _ => Err(Error::NoSuchTable { path: path.into() }),
    }
}

/// Checks that a write prepared against `prepared` schema can commit on `state`: the table
/// still exists, accepts writes (mounted, dynamic), and has the schema the rows were checked
/// against.
pub(crate) fn writable_table<'a>(
    state: &'a State,
    path: &str,
    table_id: &str,
    prepared: &TableSchema,
) -> Result<&'a (TableEntry, TableData)> {
    let table = same_table(state, path, table_id)?;
    crate::tablets::check_writable(&table.0, path)?;
    if table.0.schema != *prepared {
        return Err(schema_changed(path));
    }
    Ok(table)
}

/// The error of a write whose table changed its schema after the write was prepared.
pub(crate) fn schema_changed(path: &str) -> Error {
    Error::Invalid(format!(
        "Cannot write to table {path}: its schema changed while the write was being committed; the write was not applied, retry it"
    ))
}

/// Checks an append to an ordered table: `added[t]` is the data weight it adds to tablet
/// `t`. Every tablet written must exist now (a reshard may have removed it since the rows
/// were assigned), and no tablet may grow past `max_ordered_tablet_data_weight`.
pub(crate) fn check_append(
    entry: &TableEntry,
    data: &TableData,
    path: &str,
    added: &[u64],
) -> Result<()> {
    for (t, extra) in added.iter().enumerate().filter(|(_, w)| **w > 0) {
        let Some(queue) = data.queues.get(t).filter(|_| t < entry.tablet_count) else {
            return Err(Error::Invalid(format!(
                "Cannot append to tablet {t} of {path}: the table has {} tablets now (it was resharded while the write was being committed); the write was not applied",
                entry.tablet_count
            )));
        };
        if let Some(limit) = entry.max_ordered_tablet_data_weight {
            let current = queue.readable_weight();
            if current + extra > limit {
                return Err(Error::Invalid(format!(
                    "Tablet {t} of {path} would hold {} bytes of data, over its max_ordered_tablet_data_weight {limit}; trim rows first",
                    current + extra
                )));
            }
        }
    }
    Ok(())
}

/// The data weight a logged append adds to each tablet (see [`crate::queue::encode_row`]),
/// decoding the rows against the table's current schema: rows that no longer decode were
/// written for a schema the table does not have any more.
pub(crate) fn logged_append_weights(
    entry: &TableEntry,
    path: &str,
    rows: &[String],
) -> Result<Vec<u64>> {
    let mut added = vec![0u64; entry.tablet_count];
    for text in rows {
        let (tablet, values) =
            crate::queue::decode_row(entry, text).map_err(|_| schema_changed(path))?;
        if tablet >= added.len() {
            added.resize(tablet + 1, 0);
        }
        added[tablet] += crate::queue::append_weight(&entry.schema, &values);
    }
    Ok(added)
}
