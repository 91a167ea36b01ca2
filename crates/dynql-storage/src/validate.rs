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
use crate::kernel::catalog::TableEntry;
use crate::state::{State, TableData};

/// The write validator every row written by key passes (insert, import, bulk writes, the
/// storage API alike): a row of `kind` for the table `entry` at `path` must be
///
/// * a full row of the schema (one value or `None` per column, schema order) with every key
///   column given (a null key is a key: it sorts first, as in YT);
/// * typed as its columns: each value of the column's wire type (any value in an `any`
///   column) and within its logical type (`int8` range, valid `utf8`, ...);
/// * without null in a `required` column, nor, when the row overwrites, a required column
///   left out (an update leaves out what it does not change; a delete names keys only);
/// * without NaN in a double key column ([`nan_key`]);
/// * within YT's sizes: no value over 16 MiB, no row weighing over 16 MiB
///   ([`dynql_core::limits::check_row`]);
/// * with a `$ttl` of at least the table's `min_data_ttl` ([`Retention::check_row_ttl`]).
///
/// Callers above (the CLI, `Database`, import) check first to word their errors for their
/// input (a row number, a file line); this check is the one the store relies on: a value it
/// lets through is one replay can apply, so a bad row never reaches the log.
///
/// [`Retention::check_row_ttl`]: crate::kernel::retention::Retention::check_row_ttl
pub(crate) fn rows(
    entry: &TableEntry,
    path: &str,
    kind: crate::kernel::mvcc::WriteKind,
    rows: &[crate::store::RowValues],
) -> Result<()> {
    for (n, r) in rows.iter().enumerate() {
        row(entry, kind, r).map_err(|fault| fault.of_row(path, n))?;
    }
    Ok(())
}

/// What is wrong with one row of a write: the column to blame, where one is, and what.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct RowFault {
    pub(crate) column: Option<String>,
    pub(crate) message: String,
}

impl RowFault {
    pub(crate) fn of_column(column: &str, message: String) -> RowFault {
        RowFault {
            column: Some(column.to_string()),
            message,
        }
    }

    /// The fault as the error of row `n` of a write to `path`.
    pub(crate) fn of_row(self, path: &str, n: usize) -> Error {
        Error::InvalidRow {
            path: path.into(),
            row: n as u64,
            column: self.column,
            message: self.message,
        }
    }
}

/// One row of [`rows`]; `Err` says what is wrong with it.
pub(crate) fn row(
    entry: &TableEntry,
    kind: crate::kernel::mvcc::WriteKind,
    row: &crate::store::RowValues,
) -> std::result::Result<(), RowFault> {
    use crate::kernel::mvcc::WriteKind;
    use dynql_core::{Value, ValueType};
    let schema = &entry.schema;
    let columns = schema.columns();
    if row.len() != columns.len() {
        return Err(RowFault {
            column: None,
            message: format!("{} values for {} columns", row.len(), columns.len()),
        });
    }
    let key_count = schema.key_column_count();
    for (c, (value, column)) in row.iter().zip(columns).enumerate() {
        let key = c < key_count;
        if kind == WriteKind::Delete && !key {
            continue;
        }
        let name = &column.name;
        match value {
            None if key => {
                return Err(RowFault::of_column(
                    name,
                    format!("missing key column {name:?}"),
                ))
            }
            None if column.required && kind == WriteKind::Overwrite => {
                return Err(RowFault::of_column(
                    name,
                    format!("missing required column {name:?}"),
                ))
            }
            None => {}
            Some(Value::Null) if column.required => {
                return Err(RowFault::of_column(
                    name,
                    format!("column {name:?} is required and cannot be null"),
                ))
            }
            Some(Value::Null) => {}
            Some(Value::Double(d)) if key && d.is_nan() => return Err(nan_key(name)),
            Some(v) => {
                let wire = column.wire_type();
                if wire != ValueType::Any && v.value_type() != wire {
                    return Err(RowFault::of_column(
                        name,
                        format!(
                            "column {name:?} of type {} cannot hold a {} value",
                            column.logical_type,
                            v.value_type().name()
                        ),
                    ));
                }
                dynql_core::row::check_logical_type(column, v)
                    .map_err(|e| RowFault::of_column(name, e.to_string()))?;
            }
        }
    }
    let written = row.iter().zip(columns);
    dynql_core::limits::check_row(
        written.filter_map(|(v, c)| v.as_ref().map(|v| (c.name.as_str(), v))),
    )
    .map_err(|message| RowFault {
        column: None,
        message,
    })?;
    if let Some(c) = schema.column_index(dynql_core::schema::TTL_COLUMN) {
        if let Some(Value::Uint64(t)) = &row[c] {
            entry
                .retention
                .check_row_ttl(*t)
                .map_err(|m| RowFault::of_column(dynql_core::schema::TTL_COLUMN, m))?;
        }
    }
    Ok(())
}

/// A NaN in a double key column: refused, as YT's dynamic tables refuse it, rather than
/// stored where every query comparing the key would fail on it.
pub(crate) fn nan_key(column: &str) -> RowFault {
    RowFault::of_column(
        column,
        format!("key column {column:?} cannot be NaN: a key of type double must be a number"),
    )
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

#[cfg(test)]
mod write_validator_tests {
    use dynql_core::{TableSchema, Value};

    use crate::kernel::catalog::TableOptions;
    use crate::kernel::mvcc::WriteKind;
    use crate::kernel::retention::Retention;
    use crate::kernel::timestamp::Timestamp;
    use crate::store::Store;

    /// Rows replay could not apply are refused before the log, with what is wrong: the
    /// table is neither changed nor damaged (a string in an int64 column used to commit
    /// and damage the table for good).
    #[tokio::test]
    async fn rows_replay_could_not_apply_never_reach_the_log() {
        let store = Store::open("memory://").unwrap();
        let schema = TableSchema::parse(
            "[{name=k;type=int64;sort_order=ascending};{name=v;type=int8;required=%true};{name=s;type=utf8};{name=\"$ttl\";type=uint64}]",
        )
        .unwrap();
        let options = TableOptions {
            retention: Retention {
                min_data_ttl: 1000,
                max_data_ttl: 2000,
                ..Retention::default()
            },
            ..TableOptions::default()
        };
        store.create_table("//t", schema, options).await.unwrap();
        let int = |v: i64| Some(Value::Int64(v));
        let good = vec![int(1), int(5), Some(Value::string("a")), None];
        let cases: Vec<(WriteKind, Vec<Option<Value>>, &str)> = vec![
            (
                WriteKind::Overwrite,
                vec![int(1), Some(Value::string("x")), None, None],
                "column \"v\" of type int8 cannot hold a string value",
            ),
            (
                WriteKind::Overwrite,
                vec![int(1), int(300), None, None],
                "out of range for type int8",
            ),
            (
                WriteKind::Overwrite,
                vec![int(1), Some(Value::Null), None, None],
                "column \"v\" is required and cannot be null",
            ),
            (
                WriteKind::Overwrite,
                vec![int(1), None, None, None],
                "missing required column \"v\"",
            ),
            (
                WriteKind::Overwrite,
                vec![None, int(1), None, None],
                "missing key column \"k\"",
            ),
            (
                WriteKind::Overwrite,
                vec![int(1), int(1), Some(Value::String(vec![0xff])), None],
                "not valid UTF-8",
            ),
            (
                WriteKind::Overwrite,
                vec![int(1), int(1), None, Some(Value::Uint64(10))],
                "$ttl 10 is below the table's min_data_ttl 1000",
            ),
            (
                WriteKind::Overwrite,
                vec![int(1), int(1), None],
                "3 values for 4 columns",
            ),
        ];
        for (kind, bad, why) in cases {
            let err = store
                .write_rows("//t", kind, false, vec![good.clone(), bad])
                .await
                .unwrap_err()
                .to_string();
            assert!(err.contains("row #1 for //t") && err.contains(why), "{err}");
            let mut bulk = store.start_bulk_write("//t").await.unwrap();
            let bad_bulk = vec![int(2), Some(Value::string("x")), None, None];
            let err = store
                .stage_bulk_rows(&mut bulk, vec![bad_bulk])
                .await
                .unwrap_err()
                .to_string();
            assert!(err.contains("cannot hold a string value"), "{err}");
        }
        assert!(store
            .read_rows("//t", Timestamp::MAX)
            .await
            .unwrap()
            .is_empty());
        // What the validator lets through: an update leaves a required column out, a delete
        // names keys only, a null key is a key.
        store
            .write_rows("//t", WriteKind::Overwrite, false, vec![good.clone()])
            .await
            .unwrap();
        store
            .write_rows(
                "//t",
                WriteKind::Update,
                false,
                vec![vec![int(1), None, Some(Value::string("b")), None]],
            )
            .await
            .unwrap();
        store
            .write_rows(
                "//t",
                WriteKind::Overwrite,
                false,
                vec![vec![Some(Value::Null), int(7), None, None]],
            )
            .await
            .unwrap();
        store
            .write_rows(
                "//t",
                WriteKind::Delete,
                false,
                vec![vec![Some(Value::Null), None, None, None]],
            )
            .await
            .unwrap();
        let rows = store.read_rows("//t", Timestamp::MAX).await.unwrap();
        assert_eq!(
            rows,
            vec![vec![
                Value::Int64(1),
                Value::Int64(5),
                Value::string("b"),
                Value::Null
            ]]
        );
    }
}
