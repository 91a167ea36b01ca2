//! TTL on a column (YDB's `TTL = Interval("P1D") ON created_at`, seed 002): a row whose TTL
//! column holds a time `v` expires once the read time passes `v` plus the interval.
//!
//! Expiry is decided at every read against the read's timestamp (its unix time; "latest"
//! reads use the current time), so reads never return a row past its TTL, whether or not it
//! is still stored, and a time-travel read sees the rows live at its timestamp. A null TTL
//! value never expires. Full compactions remove expired rows for good: a row expired at the
//! compaction's time gets a tombstone at that time, which retention then treats like any
//! delete (so time-travel reads inside `min_data_ttl` stay exact). An update of the row
//! written after that tombstone starts a new row, as after YDB's background deletion.
//!
//! The column is a `date` (days), `datetime` (seconds), `timestamp` (microseconds), or an
//! unsigned integer counting `SECONDS` (the default), `MILLISECONDS`, `MICROSECONDS` or
//! `NANOSECONDS` since the epoch (`... ON col AS MILLISECONDS`).

use std::fmt;

use arrow::array::{Array, ArrayRef, BooleanArray, UInt64Array};
use arrow::record_batch::RecordBatch;
use serde::{Deserialize, Serialize};

use dynql_core::types::LogicalType;
use dynql_core::{TableSchema, Value};

use crate::error::{Error, Result};
use crate::kernel::mvcc::{resolve_versions, RowDelta, WriteKind};
use crate::kernel::timestamp::{Timestamp, COUNTER_BITS};

const NANOS_PER_SECOND: u128 = 1_000_000_000;

/// The unit of an integer TTL column (`AS SECONDS`, ...).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum TtlUnit {
    Seconds,
    Milliseconds,
    Microseconds,
    Nanoseconds,
}

impl TtlUnit {
    fn parse(word: &str) -> Option<TtlUnit> {
        Some(match word.to_ascii_uppercase().as_str() {
            "SECONDS" => TtlUnit::Seconds,
            "MILLISECONDS" => TtlUnit::Milliseconds,
            "MICROSECONDS" => TtlUnit::Microseconds,
            "NANOSECONDS" => TtlUnit::Nanoseconds,
            _ => return None,
        })
    }

    fn name(self) -> &'static str {
        match self {
            TtlUnit::Seconds => "SECONDS",
            TtlUnit::Milliseconds => "MILLISECONDS",
            TtlUnit::Microseconds => "MICROSECONDS",
            TtlUnit::Nanoseconds => "NANOSECONDS",
        }
    }

    fn nanos(self) -> u128 {
        match self {
            TtlUnit::Seconds => NANOS_PER_SECOND,
            TtlUnit::Milliseconds => 1_000_000,
            TtlUnit::Microseconds => 1_000,
            TtlUnit::Nanoseconds => 1,
        }
    }
}

/// A table's TTL: rows expire `interval` after the time in `column`.
///
/// ```
/// use dynql_core::TableSchema;
/// use dynql_storage::ttl::ColumnTtl;
/// let schema = TableSchema::parse(
///     "[{name=k; type=int64; sort_order=ascending}; {name=created_at; type=timestamp}]",
/// ).unwrap();
/// let ttl = ColumnTtl::parse("Interval(\"PT36H\") ON created_at", &schema).unwrap();
/// assert_eq!(ttl.interval_nanos(), 36 * 3600 * 1_000_000_000);
/// assert_eq!(ttl.to_string(), "Interval(\"PT36H\") ON created_at");
/// assert!(ColumnTtl::parse("Interval(\"P1M\") ON created_at", &schema).is_err());
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ColumnTtl {
    /// The interval as written (ISO 8601, upper case), e.g. `P1D`.
    interval: String,
    /// Its length.
    interval_nanos: u64,
    /// The column holding each row's time.
    column: String,
    /// The unit of an integer column (`None` for date, datetime and timestamp columns).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    unit: Option<TtlUnit>,
}

impl ColumnTtl {
    /// Parses `Interval("<ISO 8601 duration>") ON <column> [AS <unit>]` against `schema`:
    /// the column must exist and hold a date, datetime, timestamp or unsigned integer; a
    /// unit is for integer columns only (default `SECONDS`).
    pub fn parse(text: &str, schema: &TableSchema) -> Result<ColumnTtl> {
        let invalid = |why: String| {
            Error::Invalid(format!(
                "TTL {text:?}: {why} (expected Interval(\"P1D\") ON <column> [AS SECONDS|MILLISECONDS|MICROSECONDS|NANOSECONDS])"
            ))
        };
        let rest = text.trim();
        let rest = strip_keyword(rest, "Interval")
            .ok_or_else(|| invalid("it must start with Interval(".into()))?;
        let rest = rest
            .trim_start()
            .strip_prefix('(')
            .ok_or_else(|| invalid("it must start with Interval(".into()))?
            .trim_start();
        let quote = rest
            .chars()
            .next()
            .filter(|c| *c == '"' || *c == '\'')
            .ok_or_else(|| invalid("the interval must be a quoted literal".into()))?;
        let rest = &rest[1..];
        let end = rest
            .find(quote)
            .ok_or_else(|| invalid("the interval literal is not closed".into()))?;
        let interval = rest[..end].trim().to_ascii_uppercase();
        let interval_nanos = parse_duration(&interval).map_err(invalid)?;
        let rest = rest[end + 1..]
            .trim_start()
            .strip_prefix(')')
            .ok_or_else(|| invalid("Interval(...) is not closed".into()))?;
        let rest = strip_keyword(rest.trim_start(), "ON")
            .ok_or_else(|| invalid("ON <column> must follow the interval".into()))?;
        let mut words = rest.split_whitespace();
        let column = words
            .next()
            .map(|c| c.trim_matches('`').to_string())
            .ok_or_else(|| invalid("ON <column> must follow the interval".into()))?;
        let unit = match (words.next(), words.next(), words.next()) {
            (None, ..) => None,
            (Some(as_), Some(unit), None) if as_.eq_ignore_ascii_case("AS") => {
                Some(TtlUnit::parse(unit).ok_or_else(|| {
                    invalid(format!(
                        "unknown unit {unit:?}: SECONDS, MILLISECONDS, MICROSECONDS or NANOSECONDS"
                    ))
                })?)
            }
            _ => return Err(invalid("unexpected words after the column".into())),
        };
        let Some(c) = schema.column(&column) else {
            return Err(invalid(format!("the table has no column {column:?}")));
        };
        let unit = match c.logical_type {
            LogicalType::Date | LogicalType::Datetime | LogicalType::Timestamp => {
                if unit.is_some() {
                    return Err(invalid(format!(
                        "AS <unit> is for integer columns; {column:?} is a {}",
                        c.logical_type.name()
                    )));
                }
                None
            }
            LogicalType::Uint32 | LogicalType::Uint64 => Some(unit.unwrap_or(TtlUnit::Seconds)),
            other => {
                return Err(invalid(format!(
                    "column {column:?} is a {}; a TTL column is a date, datetime, timestamp, uint32 or uint64",
                    other.name()
                )))
            }
        };
        Ok(ColumnTtl {
            interval,
            interval_nanos,
            column,
            unit,
        })
    }

    /// The interval's length in nanoseconds.
    pub fn interval_nanos(&self) -> u64 {
        self.interval_nanos
    }

    /// The TTL column's name.
    pub fn column(&self) -> &str {
        &self.column
    }

    /// Nanoseconds one unit of the column's values lasts.
    fn unit_nanos(&self, schema: &TableSchema) -> u128 {
        match (
            self.unit,
            schema.column(&self.column).map(|c| c.logical_type),
        ) {
            (Some(unit), _) => unit.nanos(),
            (None, Some(LogicalType::Date)) => 86_400 * NANOS_PER_SECOND,
            (None, Some(LogicalType::Datetime)) => NANOS_PER_SECOND,
            _ => 1_000, // timestamp: microseconds
        }
    }

    /// The first timestamp at which a resolved row (table schema order) is expired; `None`
    /// when it never is (a null value) or only beyond every timestamp.
    fn expiry(&self, schema: &TableSchema, row: &[Value]) -> Option<Timestamp> {
        let value = match row.get(schema.column_index(&self.column)?)? {
            Value::Uint64(v) => u128::from(*v),
            Value::Int64(v) => u128::from(u64::try_from(*v).ok()?),
            _ => return None,
        };
        // Expired once the read is after value + interval: from one nanosecond later.
        let nanos = value * self.unit_nanos(schema) + u128::from(self.interval_nanos) + 1;
        let seconds = u64::try_from(nanos / NANOS_PER_SECOND).ok()?;
        if seconds >= Timestamp::MAX.unix_seconds() {
            return None;
        }
        let counter = (nanos % NANOS_PER_SECOND) as u64;
        Some(Timestamp((seconds << COUNTER_BITS) | counter))
    }

    /// What a read at `read` keeps: rows whose TTL value is null or at least the returned
    /// cut's `min_live`. `None` when the column is gone from `schema`.
    pub(crate) fn cut(&self, schema: &TableSchema, read: Timestamp) -> Option<TtlCut> {
        let column = schema.column_index(&self.column)?;
        debug_assert!(
            !read.is_latest(),
            "the caller resolves a latest read to a time"
        );
        let read_nanos = read_nanos(read);
        let interval = u128::from(self.interval_nanos);
        // Live while value * unit + interval >= read: value >= ceil((read - interval) / unit).
        let min_live = if read_nanos <= interval {
            0
        } else {
            let unit = self.unit_nanos(schema);
            u64::try_from((read_nanos - interval).div_ceil(unit)).unwrap_or(u64::MAX)
        };
        Some(TtlCut { column, min_live })
    }
}

impl fmt::Display for ColumnTtl {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Interval(\"{}\") ON {}", self.interval, self.column)?;
        if let Some(unit) = self.unit {
            write!(f, " AS {}", unit.name())?;
        }
        Ok(())
    }
}

/// The unix time of a timestamp in nanoseconds: its seconds, and its counter (the
/// nanoseconds of the second for a timestamp taken from the clock).
fn read_nanos(t: Timestamp) -> u128 {
    let counter = t.0 & ((1 << COUNTER_BITS) - 1);
    u128::from(t.unix_seconds()) * NANOS_PER_SECOND + u128::from(counter.min(999_999_999))
}

/// `text` after a leading keyword (any case) that ends at a word boundary.
fn strip_keyword<'a>(text: &'a str, keyword: &str) -> Option<&'a str> {
    let head = text.get(..keyword.len())?;
    let rest = &text[keyword.len()..];
    (head.eq_ignore_ascii_case(keyword)
        && !rest.starts_with(|c: char| c.is_ascii_alphanumeric() || c == '_'))
    .then_some(rest)
}

/// The length of an ISO 8601 duration without months and years (YQL's `Interval`):
/// `P[nW][nD][T[nH][nM][n[.f]S]]`, in nanoseconds.
fn parse_duration(text: &str) -> std::result::Result<u64, String> {
    let bad = || format!("{text:?} is not an ISO 8601 duration such as P1D, PT12H or P1DT30M");
    let body = text.strip_prefix('P').ok_or_else(|| {
        if text.starts_with('-') {
            "the interval must not be negative".to_string()
        } else {
            bad()
        }
    })?;
    if body.is_empty() || body.ends_with('T') {
        return Err(bad());
    }
    let mut total: u128 = 0;
    let mut in_time = false;
    let mut number = String::new();
    let mut last_rank = 0;
    for ch in body.chars() {
        match ch {
            '0'..='9' | '.' => number.push(ch),
            'T' if !in_time && number.is_empty() => in_time = true,
            unit => {
                // Ranks keep the parts in order and each at most once.
                let (rank, seconds): (u32, u128) = match (in_time, unit) {
                    (false, 'W') => (1, 7 * 86_400),
                    (false, 'D') => (2, 86_400),
                    (true, 'H') => (3, 3_600),
                    (true, 'M') => (4, 60),
                    (true, 'S') => (5, 1),
                    (false, 'Y' | 'M') => {
                        return Err(format!(
                            "{text:?}: years and months have no fixed length; use days (P30D)"
                        ))
                    }
                    _ => return Err(bad()),
                };
                if number.is_empty() || rank <= last_rank {
                    return Err(bad());
                }
                last_rank = rank;
                let nanos = match number.split_once('.') {
                    Some((whole, fraction)) if unit == 'S' => {
                        if fraction.is_empty() || fraction.len() > 9 || whole.is_empty() {
                            return Err(bad());
                        }
                        let whole: u128 = whole.parse().map_err(|_| bad())?;
                        let fraction: u128 =
                            format!("{fraction:0<9}").parse().map_err(|_| bad())?;
                        whole * NANOS_PER_SECOND + fraction
                    }
                    Some(_) => return Err(bad()),
                    None => {
                        let n: u128 = number.parse().map_err(|_| bad())?;
                        n.checked_mul(seconds * NANOS_PER_SECOND)
                            .ok_or_else(|| format!("{text:?} is too long"))?
                    }
                };
                total = total
                    .checked_add(nanos)
                    .ok_or_else(|| format!("{text:?} is too long"))?;
                number.clear();
            }
        }
    }
    if !number.is_empty() {
        return Err(bad());
    }
    u64::try_from(total).map_err(|_| format!("{text:?} is too long"))
}

/// A TTL as of one read: the column (index in the table schema) and the smallest value that
/// is still live.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct TtlCut {
    pub(crate) column: usize,
    pub(crate) min_live: u64,
}

impl TtlCut {
    /// Whether a TTL value is live (null never expires).
    pub(crate) fn keeps(&self, value: &Value) -> bool {
        match value {
            Value::Uint64(v) => *v >= self.min_live,
            Value::Int64(v) => u64::try_from(*v).is_ok_and(|v| v >= self.min_live),
            _ => true,
        }
    }

    /// Whether a resolved row (table schema order) is live.
    pub(crate) fn keeps_row(&self, row: &[Value]) -> bool {
        row.get(self.column).is_none_or(|v| self.keeps(v))
    }

    /// Which values of a TTL column's array are live; `None` when all are.
    pub(crate) fn live(&self, array: &ArrayRef) -> Result<Option<BooleanArray>> {
        if self.min_live == 0 {
            return Ok(None);
        }
        let cast;
        let values = match array.as_any().downcast_ref::<UInt64Array>() {
            Some(v) => v,
            None => {
                cast = arrow::compute::cast(array, &arrow::datatypes::DataType::UInt64)?;
                cast.as_any()
                    .downcast_ref::<UInt64Array>()
                    .expect("cast to UInt64")
            }
        };
        if values.null_count() == 0 && values.values().iter().all(|v| *v >= self.min_live) {
            return Ok(None);
        }
        Ok(Some(
            values
                .iter()
                .map(|v| Some(v.is_none_or(|v| v >= self.min_live)))
                .collect(),
        ))
    }
}

/// A scan's TTL: the cut, and where the TTL column sits in the scan's pieces.
#[derive(Debug, Clone)]
pub(crate) struct ScanTtl {
    pub(crate) cut: TtlCut,
    /// The columns pieces are built of: the projection, and the TTL column after it when
    /// the projection lacks it.
    pub(crate) columns: Vec<usize>,
    /// Whether the TTL column was added (and is dropped once expired rows are).
    added: bool,
}

impl ScanTtl {
    /// The TTL of a scan of `projection` (table column indices) at `read`.
    pub(crate) fn new(
        ttl: Option<&ColumnTtl>,
        schema: &TableSchema,
        projection: &[usize],
        read: Timestamp,
    ) -> Option<ScanTtl> {
        let cut = ttl?.cut(schema, read)?;
        let added = !projection.contains(&cut.column);
        let mut columns = projection.to_vec();
        if added {
            columns.push(cut.column);
        }
        Some(ScanTtl {
            cut,
            columns,
            added,
        })
    }

    /// A batch of [`ScanTtl::columns`] without its expired rows, in the projection's columns.
    pub(crate) fn apply(&self, batch: RecordBatch) -> Result<RecordBatch> {
        let at = self
            .columns
            .iter()
            .position(|&c| c == self.cut.column)
            .expect("the TTL column is scanned");
        let batch = match self.cut.live(batch.column(at))? {
            Some(live) => arrow::compute::filter_record_batch(&batch, &live)?,
            None => batch,
        };
        if self.added {
            Ok(batch.project(&(0..at).collect::<Vec<_>>())?)
        } else {
            Ok(batch)
        }
    }
}

/// A full compaction's TTL step for one row's history (commit order). A row expired by `now`
/// gets a tombstone at the moment it expired (or just after its last version, if later):
/// reads from then on hide the row anyway, so the tombstone changes no read, and retention
/// then folds and drops the row's versions as for any delete. Returns the tombstone's time,
/// the row's compaction horizon from then on (nothing later is conflict evidence).
///
/// Nothing is added when a version is after `horizon` (a live transaction's conflict
/// evidence, kept as written) or when the tombstone would not come before `live`, the start
/// of the oldest transaction that may still commit (it could write the row and must not see
/// a conflict that no commit made).
pub(crate) fn expire(
    schema: &TableSchema,
    ttl: &ColumnTtl,
    history: &mut Vec<RowDelta>,
    now: Timestamp,
    horizon: Timestamp,
    live: Option<Timestamp>,
) -> Option<Timestamp> {
    let last = history.last()?.timestamp;
    if last > horizon {
        return None;
    }
    let row = resolve_versions(schema, history, last)?;
    let tombstone = ttl.expiry(schema, &row)?.max(Timestamp(last.0 + 1));
    if tombstone >= now || live.is_some_and(|start| tombstone >= start) {
        return None;
    }
    let key_count = schema.key_column_count();
    let values = (0..schema.columns().len())
        .map(|i| (i < key_count).then(|| row[i].clone()))
        .collect();
    history.push(RowDelta {
        timestamp: tombstone,
        kind: WriteKind::Delete,
        values,
        aggregate: false,
    });
    Some(tombstone)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn schema() -> TableSchema {
        TableSchema::parse(
            "[{name=k; type=int64; sort_order=ascending}; {name=d; type=date}; {name=dt; type=datetime}; \
             {name=ts; type=timestamp}; {name=n; type=uint64}; {name=s; type=string}; {name=i; type=int64}]",
        )
        .unwrap()
    }

    #[test]
    fn durations_parse_to_nanoseconds() {
        let s = 1_000_000_000u64;
        assert_eq!(parse_duration("P1D"), Ok(86_400 * s));
        assert_eq!(parse_duration("P2W"), Ok(14 * 86_400 * s));
        assert_eq!(parse_duration("PT0S"), Ok(0));
        assert_eq!(parse_duration("P1DT2H3M4S"), Ok((86_400 + 7_384) * s));
        assert_eq!(parse_duration("PT1.5S"), Ok(s + s / 2));
        assert_eq!(parse_duration("PT90M"), Ok(5_400 * s));
        for bad in [
            "", "P", "PT", "1D", "P1H", "PT1D", "P1DT", "P1D2D", "PT1.5M", "P1.5D", "P1DX",
        ] {
            assert!(parse_duration(bad).is_err(), "{bad:?} must be refused");
        }
        assert!(parse_duration("P1M").unwrap_err().contains("months"));
        assert!(parse_duration("-P1D").unwrap_err().contains("negative"));
        assert!(parse_duration("P999999999999999D")
            .unwrap_err()
            .contains("too long"));
    }

    #[test]
    fn expressions_parse_against_the_schema_and_print_back() {
        let s = schema();
        for (text, shown) in [
            ("Interval(\"P1D\") ON d", "Interval(\"P1D\") ON d"),
            ("interval('pt1h') on `dt`", "Interval(\"PT1H\") ON dt"),
            (
                "Interval(\"P1D\") ON n",
                "Interval(\"P1D\") ON n AS SECONDS",
            ),
            (
                "Interval(\"P1D\") ON n as milliseconds",
                "Interval(\"P1D\") ON n AS MILLISECONDS",
            ),
        ] {
            assert_eq!(ColumnTtl::parse(text, &s).unwrap().to_string(), shown);
        }
        for (text, why) in [
            ("Interval(\"P1D\") ON missing", "no column"),
            ("Interval(\"P1D\") ON s", "is a string"),
            ("Interval(\"P1D\") ON i", "is a int64"),
            ("Interval(\"P1D\") ON ts AS SECONDS", "for integer columns"),
            ("Interval(\"P1D\") ON n AS HOURS", "unknown unit"),
            ("Interval(\"P1D\")", "ON <column>"),
            ("Interval(P1D) ON d", "quoted"),
            ("P1D ON d", "Interval("),
            ("Interval(\"P1D\") ON d extra", "unexpected"),
        ] {
            let e = ColumnTtl::parse(text, &s).unwrap_err().to_string();
            assert!(e.contains(why), "{text}: {e}");
        }
    }

    #[test]
    fn rows_expire_strictly_after_their_time_plus_the_interval() {
        let s = schema();
        let at = |secs: u64| Timestamp::from_unix_seconds(secs);
        let day = 86_400;
        // A datetime column, TTL one hour: a row of time 1000 lives until 4600 inclusive.
        let ttl = ColumnTtl::parse("Interval(\"PT1H\") ON dt", &s).unwrap();
        assert_eq!(ttl.cut(&s, at(4600)).unwrap().min_live, 1000);
        let cut = ttl.cut(&s, at(4601)).unwrap();
        assert!(!cut.keeps(&Value::Uint64(1000)) && cut.keeps(&Value::Uint64(1001)));
        assert!(cut.keeps(&Value::Null));
        // A date column: day 10 lives through day 11 with P1D.
        let ttl = ColumnTtl::parse("Interval(\"P1D\") ON d", &s).unwrap();
        assert!(ttl.cut(&s, at(11 * day)).unwrap().keeps(&Value::Uint64(10)));
        assert!(!ttl
            .cut(&s, at(11 * day + 1))
            .unwrap()
            .keeps(&Value::Uint64(10)));
        // Microseconds of a timestamp column, and a read before the interval has passed.
        let ttl = ColumnTtl::parse("Interval(\"PT1S\") ON ts", &s).unwrap();
        assert_eq!(ttl.cut(&s, at(5)).unwrap().min_live, 4_000_000);
        assert_eq!(ttl.cut(&s, at(1)).unwrap().min_live, 0);
        let ttl = ColumnTtl::parse("Interval(\"PT0S\") ON n AS MILLISECONDS", &s).unwrap();
        assert_eq!(ttl.cut(&s, at(7)).unwrap().min_live, 7_000);
    }

    #[test]
    fn masks_agree_with_the_row_check() {
        let s = schema();
        let ttl = ColumnTtl::parse("Interval(\"PT10S\") ON n", &s).unwrap();
        let cut = ttl.cut(&s, Timestamp::from_unix_seconds(100)).unwrap();
        let values = vec![Some(89), None, Some(90), Some(200), Some(0)];
        let array: ArrayRef = std::sync::Arc::new(UInt64Array::from(values.clone()));
        let mask = cut.live(&array).unwrap().unwrap();
        for (i, v) in values.iter().enumerate() {
            let value = v.map_or(Value::Null, Value::Uint64);
            assert_eq!(mask.value(i), cut.keeps(&value), "{v:?}");
        }
        let all_live: ArrayRef = std::sync::Arc::new(UInt64Array::from(vec![90, 91]));
        assert_eq!(cut.live(&all_live).unwrap(), None);
    }

    proptest::proptest! {
        /// A full compaction (TTL step, then retention) never changes what a read at or
        /// after its time returns, TTL applied.
        #[test]
        fn compaction_keeps_reads_from_its_time_on(
            ops in proptest::collection::vec((0u8..3, proptest::option::of(0u64..120), proptest::option::of(0i64..3)), 1..8),
            gaps in proptest::collection::vec(0u64..20, 8),
            max_versions in 1u64..3,
            min_ttl_seconds in 0u64..40,
        ) {
            use crate::kernel::retention::{compact_versions, Retention};
            let s = schema();
            let ttl = ColumnTtl::parse("Interval(\"PT10S\") ON n", &s).unwrap();
            let mut second = 0;
            let history: Vec<RowDelta> = ops
                .iter()
                .enumerate()
                .map(|(i, (kind, n, i64_value))| {
                    second += gaps[i] + 1;
                    let kind = match kind {
                        0 => WriteKind::Overwrite,
                        1 => WriteKind::Update,
                        _ => WriteKind::Delete,
                    };
                    let values = (0..7)
                        .map(|c| match c {
                            0 => Some(Value::Int64(1)),
                            4 if kind != WriteKind::Delete => Some(n.map_or(Value::Null, Value::Uint64)),
                            6 => i64_value.map(Value::Int64),
                            _ if kind == WriteKind::Overwrite => Some(Value::Null),
                            _ => None,
                        })
                        .collect();
                    RowDelta { timestamp: Timestamp::from_unix_seconds(second), kind, values, aggregate: false }
                })
                .collect();
            let now = Timestamp::from_unix_seconds(second + 5);
            let retention = Retention {
                min_data_versions: 1,
                max_data_versions: max_versions,
                min_data_ttl: min_ttl_seconds * 1000,
                max_data_ttl: min_ttl_seconds * 1000,
            };
            let horizon = Timestamp::from_unix_seconds(second);
            let mut buried = history.clone();
            let row_horizon = expire(&s, &ttl, &mut buried, now, horizon, None).map_or(horizon, |t| t.max(horizon));
            let out = compact_versions(&s, &retention, &buried, now, row_horizon);
            if buried.len() > history.len() && min_ttl_seconds == 0 && max_versions == 1 {
                proptest::prop_assert!(out.is_empty(), "an expired row goes: {:?}", out);
            }
            // Reads from the tombstone on never change; from now on neither do reads whose
            // versions retention kept.
            let first = buried.last().map_or(second, |d| d.timestamp.unix_seconds());
            for later in [0, 1, 7, 60, 200] {
                let at = Timestamp::from_unix_seconds(first.max(second + 5) + later);
                let cut = ttl.cut(&s, at).unwrap();
                let read = |versions: &[RowDelta]| {
                    resolve_versions(&s, versions, at).filter(|r| cut.keeps_row(r))
                };
                proptest::prop_assert_eq!(read(&out), read(&history), "at now + {}s", later);
            }
        }
    }

    #[test]
    fn compaction_buries_expired_rows_only() {
        let s = schema();
        let ttl = ColumnTtl::parse("Interval(\"PT10S\") ON n", &s).unwrap();
        let version = |t: u64, n: u64| RowDelta {
            timestamp: Timestamp::from_unix_seconds(t),
            kind: WriteKind::Overwrite,
            values: (0..7)
                .map(|i| match i {
                    0 => Some(Value::Int64(1)),
                    4 => Some(Value::Uint64(n)),
                    _ => Some(Value::Null),
                })
                .collect(),
            aggregate: false,
        };
        let now = Timestamp::from_unix_seconds(100);
        // Written at 50 with n=45: expired from 55 and a nanosecond on.
        let mut expired = vec![version(50, 45)];
        let at = expire(&s, &ttl, &mut expired, now, Timestamp::MAX, None).unwrap();
        assert_eq!(at, Timestamp((55 << COUNTER_BITS) | 1));
        assert_eq!(expired.len(), 2);
        assert_eq!(expired[1].kind, WriteKind::Delete);
        assert_eq!(resolve_versions(&s, &expired, now), None);
        assert!(resolve_versions(&s, &expired, Timestamp::from_unix_seconds(55)).is_some());
        // Expired before it was written: the tombstone follows the version.
        let mut late = vec![version(50, 10)];
        let at = expire(&s, &ttl, &mut late, now, Timestamp::MAX, None).unwrap();
        assert_eq!(at, Timestamp(Timestamp::from_unix_seconds(50).0 + 1));
        let seconds = Timestamp::from_unix_seconds;
        for (mut live, horizon, oldest) in [
            (vec![version(50, 95)], Timestamp::MAX, None),
            // A version after the horizon (a live transaction's evidence): kept as written.
            (vec![version(50, 45)], seconds(49), None),
            // A transaction started before the row expired may still write it.
            (vec![version(50, 45)], Timestamp::MAX, Some(seconds(55))),
            // A version at or after now.
            (vec![version(100, 45)], Timestamp::MAX, None),
        ] {
            assert_eq!(expire(&s, &ttl, &mut live, now, horizon, oldest), None);
            assert_eq!(live.len(), 1);
        }
    }
}
