//! Pivot keys of sorted tables: the pivots a new table gets (`tablet_count`/`pivot_keys`),
//! their checks, uniform pivots, and how a reshard is asked for ([`Reshard`]).

use dynql_core::{compare_rows, LogicalType, TableSchema, Value, ValueType};

use crate::error::{Error, Result};
use crate::kernel::catalog::TableOptions;
use crate::kernel::key_range::PivotKey;

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
pub(crate) fn check_count(count: usize) -> Result<()> {
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
