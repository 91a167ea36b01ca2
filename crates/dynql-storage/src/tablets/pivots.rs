//! Pivot keys and resharding of [`crate::tablets`]: the pivots a new table gets
//! (`tablet_count`/`pivot_keys`), their checks, uniform and data-driven pivots, and
//! [`Store::reshard_table`] for sorted and ordered tables.

use dynql_core::{compare_rows, LogicalType, TableSchema, Value, ValueType};

use super::TabletState;
use crate::catalog::{TableEntry, TableOptions};
use crate::error::{Error, Result};
use crate::kernel::key_range::PivotKey;
use crate::kernel::timestamp::Timestamp;
use crate::log::Action;
use crate::store::Store;

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
        // The keys at even steps through the rows, read without holding the table.
        let (rows, keys) = self.keys_at_even_steps(path, Timestamp::MAX, count).await?;
        if rows == 0 && integer_first {
            return uniform_pivots(schema, count);
        }
        let mut pivots: Vec<Vec<Value>> = vec![vec![]];
        for k in keys {
            if pivots
                .last()
                .is_none_or(|p| compare_rows(p, &k) == std::cmp::Ordering::Less)
            {
                pivots.push(k);
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
    use crate::tablets::TabletCommand;

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
